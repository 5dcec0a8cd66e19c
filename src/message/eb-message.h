/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-message.h - parse a message with GMime and find its external-body parts.
 *
 * GMime parses; extbody reads. The walk uses GMime's tree and its offsets (header
 * offsets, the bounds of persisted content streams) to find where each
 * message/external-body entity lies in the original bytes, then checks every
 * offset against those bytes: GMime 3.2.13 shortens a content end by one byte when
 * line endings are mixed, so the end is taken from the delimiter line that
 * follows. GMime never writes anything.
 *
 * The walk is iterative (no recursion) and bounded by max_nesting_depth and
 * max_parts; references past max_references are marked. A reference that is
 * the second and last part of a two-part multipart/alternative whose first is
 * text/plain, when that alternative bears the mark of externalize's fallback
 * (its boundary's form, EB_FALLBACK_FIELD and the notice it names as its text
 * part: only what extbody wrote, never a person's words beside a reference),
 * also gets that alternative's exact location (EbRef alt, checked against the
 * bytes like the rest).
 */
#pragma once
#include <glib.h>
#include "eb-config.h"
#include "eb-extref.h"
#include "eb-header.h"

G_BEGIN_DECLS

typedef struct {
  GPtrArray  *refs;     /* (element-type EbRef) in document order */
  guint       n_parts;  /* entities walked */
  EbReason    reason;   /* RESOLVED, or why the whole message is left alone */
  const char *eol;      /* the message's line ending: "\r\n" or "\n" */
} EbMessageScan;

/* Parse the @len bytes at @buf and collect every message/external-body entity.
 * The offsets in the result refer to @buf, which is not modified.
 * Returns: (transfer full): never NULL. */
EbMessageScan *eb_message_scan (const char *buf, gsize len, const EbConfig *config);
/* The same, GMime shown the bytes themselves instead of the shadow copy
 * eb_message_scan() makes (see eb-message.c): the same result, slower, and
 * costly on huge header fields; for the tests that say so. */
EbMessageScan *eb_message_scan_unshadowed (const char *buf, gsize len, const EbConfig *config);
void eb_message_scan_free (EbMessageScan *scan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbMessageScan, eb_message_scan_free)

/* The cheap pre-check: can @buf hold a message/external-body at all? FALSE only
 * when "external-body" (ASCII case-insensitive) appears nowhere in it, which no
 * message with such a part can avoid: a media type is a token and cannot be
 * encoded, folded or commented inside. */
gboolean eb_message_may_hold_external_body (const char *buf, gsize len);

/* Every leaf part of a message (externalize's walk): the same parse, shadow
 * and exact location as eb_message_scan(), bounded by max_parts (past it the
 * whole message is left: reason TOO_MANY_PARTS) and marked past
 * max_nesting_depth (the ref's walk_reason TOO_DEEP). A leaf is a part that is
 * neither a multipart nor a message/rfc822 (whose inner leaves are walked);
 * message/external-body parts are not reported. */
typedef struct {
  EbRef    *ref;          /* path, depth, is_root, boundaries, walk_reason and,
                             when located, block_start, content_start, end and
                             outer (the header block located with) */
  char     *type;         /* media type as GMime reads it, lowercase "type/subtype" */
  char     *parent_type;  /* (nullable) the enclosing multipart's type, lowercase;
                             NULL for the body of a message */
  gboolean  sealed;       /* inside (or itself) a signed or encrypted entity */
  gboolean  in_related;   /* somewhere under a multipart/related */
  gboolean  attachment;   /* Content-Disposition: attachment */
  char     *filename;     /* (nullable) the file name (Content-Disposition filename,
                             else Content-Type name), RFC 2231 / 2047 decoded */
  char     *cte;          /* (nullable) the Content-Transfer-Encoding, unfolded, as written */
} EbLeaf;

typedef struct _EbLeafScan {
  GPtrArray  *leaves;   /* (element-type EbLeaf) in document order */
  guint       n_parts;  /* entities walked */
  EbReason    reason;   /* RESOLVED, or why the whole message is left alone */
  const char *eol;      /* the message's line ending */
} EbLeafScan;

/* Returns: (transfer full): never NULL. */
EbLeafScan *eb_message_scan_leaves (const char *buf, gsize len, const EbConfig *config);
void eb_message_leaf_scan_free (EbLeafScan *scan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbLeafScan, eb_message_leaf_scan_free)

/* ---- EbMessage: the one reading of one message ---------------------------
 *
 * What every step of a plan reads of a message, read once: its bytes
 * (borrowed: they must outlive it), a leading mbox From_ line, the line
 * ending, the message header (scanned at its first use) and the GMime parse
 * and walk (made at their first use). Every offset below and in the walk is
 * from @buf, the byte after the From_ line. */
typedef struct {
  const char    *input;      /* the bytes as given, From_ line included */
  gsize          input_len;
  gsize          from_len;   /* the leading From_ line, line break included, or 0 */
  const char    *buf;        /* the message proper: input + from_len */
  gsize          len;
  EbHeaderBlock *top;        /* (nullable) the message header, once read */
  EbMessageScan *scan;       /* (nullable) the references, once walked */
  struct _EbLeafScan *leaves;  /* (nullable) the leaves, once walked */
} EbMessage;

/* The length of a leading mbox From_ line ("From sender date", as mail readers
 * save single messages and pipe(8) with flags=F passes them), line break
 * included, or 0. */
gsize eb_message_from_line_len (const char *buf, gsize len);

/* Returns: (transfer full): a reading of the @len bytes at @buf, which it
 * borrows; nothing is read yet but the From_ line. */
EbMessage *eb_message_new (const char *buf, gsize len);
void eb_message_free (EbMessage *message);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbMessage, eb_message_free)

/* The message header, scanned at the first call and kept. */
const EbHeaderBlock *eb_message_get_top (EbMessage *message);

/* The unfolded value of the first field @name of the message header
 * (ASCII case-insensitive), or NULL. Returns: (transfer full). */
char *eb_message_get_field_value (EbMessage *message, const char *name);

/* The references of the message (eb_message_scan), walked at the first call
 * and kept: the message owns the scan. */
EbMessageScan *eb_message_get_scan (EbMessage *message, const EbConfig *config);

/* Every leaf of the message (eb_message_scan_leaves, externalize's walk),
 * walked at the first call and kept: the message owns the scan. */
struct _EbLeafScan *eb_message_get_leaves (EbMessage *message, const EbConfig *config);

G_END_DECLS
