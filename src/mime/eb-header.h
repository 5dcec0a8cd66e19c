/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-header.h - raw header blocks, read byte for byte.
 *
 * Pure. extbody never re-serializes mail: it copies header fields as they were
 * written. This module finds the fields of a header block (RFC 5322 section 2.2:
 * a field is a line "name:" plus its continuation lines that start with SP or
 * HTAB), where each one starts and ends, and where the block ends. LF and CRLF
 * line endings are both accepted, mixed too.
 */
#pragma once
#include <extbody/extbody.h>

G_BEGIN_DECLS

typedef struct {
  gsize start;       /* first byte of the field name */
  gsize name_len;    /* length of the name (before the colon, trailing WSP excluded) */
  gsize value;       /* first byte after the colon */
  gsize value_end;   /* end of the value: before the final line break */
  gsize end;         /* one past the final line break of the field (or limit) */
} EbHeaderField;

typedef struct {
  GArray  *fields;   /* (element-type EbHeaderField) */
  gsize    start;    /* where scanning started */
  gsize    end;      /* end of the last field line (start of the blank line, or of
                        the first line that is not a field, or the limit) */
  gsize    body;     /* first byte after the blank line; == end when none */
  gboolean blank;    /* a blank line ended the block */
} EbHeaderBlock;

/* Scan the header block of @buf that starts at @start and may not pass @limit.
 * Lines that are neither fields nor continuations end the block (blank == FALSE).
 * Returns: (transfer full): never NULL. */
EbHeaderBlock *eb_header_block_scan (const char *buf, gsize start, gsize limit);
void eb_header_block_free (EbHeaderBlock *block);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbHeaderBlock, eb_header_block_free)

/* The block eb_header_block_scan (buf, @known->start, @limit) gives, taken
 * from @known, a scan from the same start up to a limit past @limit: a copy
 * of it when its body starts at or before @limit (every line it read lies
 * before @limit, and ended it the same way), else NULL: then only a scan
 * tells. Returns: (transfer full) (nullable). */
EbHeaderBlock *eb_header_block_within (const EbHeaderBlock *known, gsize limit);

/* Count, on this thread, the scans of the header block that starts at @at
 * (NULL: none), from zero: eb_header_block_scan's and eb_header_find_lines'
 * from @at. How the tests see that a message's header is read once however
 * many steps use it. */
void eb_header_block_watch (const char *at);
guint eb_header_block_watched_scans (void);

/* The fields named @name (ASCII case-insensitive, the colon right after it)
 * of the header of @buf as a line-based mailbox reader finds them, from the
 * line that starts at @start: every line up to the first empty line that
 * starts with "@name:", with its continuation lines, appended to @out
 * (element-type EbHeaderField: start and end set), whether or not the lines
 * before it are fields. RFC 5322 ends a header at its first line that is not
 * a field (eb_header_block_scan); a mail reader that trusts Content-Length
 * reads on to the blank line, and so must whoever takes such a field away. */
void eb_header_find_lines (const char *buf, gsize start, gsize len, const char *name, GArray *out);

/* Index of the first field named @name (ASCII case-insensitive), or -1. */
gint eb_header_block_find (const EbHeaderBlock *block, const char *buf, const char *name);

/* TRUE when field @f's name equals @name, ASCII case-insensitively. */
gboolean eb_header_field_is (const EbHeaderField *f, const char *buf, const char *name);

/* TRUE when field @f's name starts with "Content-", ASCII case-insensitively. */
gboolean eb_header_field_is_content (const EbHeaderField *f, const char *buf);

/* The unfolded value of @f with surrounding white space trimmed (folds removed,
 * the white space after them kept). Returns: (transfer full). */
char *eb_header_field_unfold (const EbHeaderField *f, const char *buf);

/* Append the raw field @f of @buf (name, colon, value and its folds) to @out,
 * its line breaks made @eol and one after it. */
void eb_header_field_append (GString *out, const char *buf, const EbHeaderField *f,
                             const char *eol);

/* A quoted-string for a header parameter value: "..." with '"' and '\\'
 * escaped and control characters dropped. Returns: (transfer full). */
char *eb_header_quote (const char *s);

/* The line ending used by the line that contains @pos ("\r\n" or "\n"); "\n"
 * when no line ending follows. */
const char *eb_header_eol_at (const char *buf, gsize len, gsize pos);

/* eb_header_get_value (the unfolded value of a field of the message header)
 * is public (extbody.h). */

G_END_DECLS
