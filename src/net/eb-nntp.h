/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-nntp.h - news: and nntp: URLs (RFC 1738 3.6, 3.7) fetched by a small,
 * strict NNTP client (RFC 3977): one connection per article, under the fetch
 * policy (the address connected to checked as libcurl's are, allow_domains,
 * the ports, the rate limit per host, the deadline, the byte limits).
 *
 * news:<message-id> (written without the angle brackets, RFC 1738) is asked
 * of the server nntp_server names (ARTICLE <message-id>);
 * nntp://HOST[:PORT]/GROUP/NUMBER of HOST (GROUP, then ARTICLE NUMBER).
 * news:GROUP, news:* and nntp://HOST/GROUP name no article: not-document
 * (eb_nntp_classify). The article comes back whole, its data block
 * dot-unstuffed, its lines ended by CR LF as on the wire, typed
 * message/rfc822 (the inner header's type governs).
 *
 * The response reader (EbNntpReader) is a pure function of the bytes fed to
 * it, so that it can be fuzzed (tests/fuzz/fuzz-nntp.c): a status line of at
 * most 512 bytes (RFC 3977 3.1), then, when asked for, a data block whose
 * lines are at most nntp_max_line_bytes long and whose dot-unstuffed bytes
 * are at most the limit given, ended by a line holding a single ".".
 */
#pragma once
#include <glib.h>
#include "eb-reason.h"
#include "eb-fetch-result.h"

G_BEGIN_DECLS

typedef struct _EbNntpReader EbNntpReader;

typedef enum {
  EB_NNTP_MORE,     /* every byte fed was used; feed more */
  EB_NNTP_STATUS,   /* a status line is complete (eb_nntp_reader_code, _text) */
  EB_NNTP_END,      /* the data block is complete (eb_nntp_reader_steal_block) */
  EB_NNTP_FAILED,   /* malformed, or over a limit (eb_nntp_reader_failure) */
} EbNntpStep;

/* A reader expecting a status line; data block lines of at most @max_line
 * bytes (CR LF not counted), at most @max_bytes of data. Returns: (transfer full). */
EbNntpReader *eb_nntp_reader_new (gsize max_line, guint64 max_bytes);
void eb_nntp_reader_free (EbNntpReader *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbNntpReader, eb_nntp_reader_free)

/* What comes next is a data block (after a 220 to ARTICLE). */
void eb_nntp_reader_want_block (EbNntpReader *r);

/* Feed @len bytes; *@used gets how many were used (the rest belongs to what
 * follows the event). Once FAILED, it stays so. */
EbNntpStep eb_nntp_reader_feed (EbNntpReader *r, const char *data, gsize len, gsize *used);

/* The last status line's code (100 to 599) and its text (printable ASCII,
 * at most 200 bytes). */
guint eb_nntp_reader_code (const EbNntpReader *r);
const char *eb_nntp_reader_text (const EbNntpReader *r);

/* The data block read, dot-unstuffed. Returns: (transfer full). */
GBytes *eb_nntp_reader_steal_block (EbNntpReader *r);

/* Why it failed (fetch-failed, part-too-large), and how (*@detail, borrowed). */
EbReason eb_nntp_reader_failure (const EbNntpReader *r, const char **detail);

/* Is @url a news: or nntp: URL? */
gboolean eb_nntp_is_url (const char *url);

/* What a news: or nntp: URL names: EB_REASON_RESOLVED for an article,
 * not-document (a group, all groups, a group without an article number) or
 * url-invalid (what no article can be: a message-id with white space or
 * brackets inside, more than 250 bytes; a bad escape; a number that is not
 * one) with *@detail. */
EbReason eb_nntp_classify (const char *url, char **detail);

G_END_DECLS
