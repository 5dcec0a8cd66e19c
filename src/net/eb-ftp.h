/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-ftp.h - what ftp URLs (RFC 1738 3.2) need beyond libcurl, which fetches
 * them: a directory is no document, the typecode is spelled as libcurl reads
 * it, the file's size is asked for by hand, and an ASCII transfer's size is
 * no promise. Pure functions of the URL; the fetcher and the decision
 * (eb-resolve) call them for the schemes whose row says EB_SCHEME_RULES_FTP
 * (eb-scheme.h).
 */
#pragma once
#include <glib.h>
#include "eb-reason.h"

G_BEGIN_DECLS

/* What the path of the ftp URL @url says: EB_REASON_RESOLVED, or
 * not-document with *@detail set for a directory (RFC 1738 3.2.2: ;type=d
 * asks for a listing; a path ending in '/', or none, names a directory). */
EbReason eb_ftp_classify (const char *url, char **detail);

/* @url, ending in ";TYPE=X" in any case (RFC 1738 3.2.2 literal strings are
 * case-insensitive), with ";type=" as libcurl looks for it; any other URL as
 * it is. Returns: (transfer full). */
char *eb_ftp_typecode_lower (const char *url);

/* The command that asks the server for the size of the file @url names
 * ("*SIZE NAME": its failure is no error), for CURLOPT_PREQUOTE, when the
 * file name is plain (letters, digits, "._-+~"); else NULL.
 * Returns: (transfer full) (nullable). */
char *eb_ftp_size_command (const char *url);

/* Is @url of typecode a (RFC 1738 3.2.2)? In ASCII mode the server may send
 * its text with other line ends than the size it announced counts (the
 * network form, CR LF): that size is no promise of the bytes sent. */
gboolean eb_ftp_ascii (const char *url);

G_END_DECLS
