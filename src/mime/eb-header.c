/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-header.c - raw header blocks, read byte for byte (see eb-header.h). */
#include "eb-header.h"
#include <string.h>

/* One past the end of the line that starts at @p (its LF included), or @limit. */
static gsize
line_end (const char *buf, gsize p, gsize limit)
{
  const char *nl = memchr (buf + p, '\n', limit - p);
  return nl ? (gsize) (nl - buf) + 1 : limit;
}

/* TRUE when the line at @p is empty: "\n" or "\r\n". */
static gboolean
is_blank_line (const char *buf, gsize p, gsize limit)
{
  if (p < limit && buf[p] == '\n')
    return TRUE;
  return p + 1 < limit && buf[p] == '\r' && buf[p + 1] == '\n';
}

/* Length of a field name at @p ended by ':' (RFC 5322 ftext, with trailing WSP
 * before the colon tolerated as GMime does), or 0 when the line is no field. */
static gsize
field_name (const char *buf, gsize p, gsize limit, gsize *colon)
{
  gsize q = p;
  while (q < limit) {
    guchar c = (guchar) buf[q];
    if (c == ':')
      break;
    if (c <= 32 || c >= 127)
      break;
    q++;
  }
  gsize name_end = q;
  if (name_end == p)
    return 0;
  while (q < limit && (buf[q] == ' ' || buf[q] == '\t'))
    q++;
  if (q >= limit || buf[q] != ':')
    return 0;
  *colon = q;
  return name_end - p;
}

/* The scans of a watched header block, per thread (eb_header_block_watch). */
static _Thread_local const char *watched_at;
static _Thread_local guint watched_scans;

void
eb_header_block_watch (const char *at)
{
  watched_at = at;
  watched_scans = 0;
}

guint
eb_header_block_watched_scans (void)
{
  return watched_scans;
}

EbHeaderBlock *
eb_header_block_scan (const char *buf, gsize start, gsize limit)
{
  if (G_UNLIKELY (watched_at) && buf + start == watched_at)
    watched_scans++;
  EbHeaderBlock *block = g_new0 (EbHeaderBlock, 1);
  block->fields = g_array_new (FALSE, FALSE, sizeof (EbHeaderField));
  block->start = start;

  gsize p = start;
  while (p < limit) {
    if (is_blank_line (buf, p, limit)) {
      block->end = p;
      block->body = line_end (buf, p, limit);
      block->blank = TRUE;
      return block;
    }
    gsize colon = 0;
    gsize nlen = field_name (buf, p, limit, &colon);
    if (nlen == 0)
      break;
    EbHeaderField f = { .start = p, .name_len = nlen, .value = colon + 1 };
    gsize e = line_end (buf, p, limit);
    while (e < limit && (buf[e] == ' ' || buf[e] == '\t'))
      e = line_end (buf, e, limit);
    f.end = e;
    f.value_end = e;
    if (f.value_end > f.value && buf[f.value_end - 1] == '\n') {
      f.value_end--;
      if (f.value_end > f.value && buf[f.value_end - 1] == '\r')
        f.value_end--;
    }
    g_array_append_val (block->fields, f);
    p = e;
  }
  block->end = p;
  block->body = p;
  block->blank = FALSE;
  return block;
}

void
eb_header_block_free (EbHeaderBlock *block)
{
  if (!block)
    return;
  g_array_unref (block->fields);
  g_free (block);
}

EbHeaderBlock *
eb_header_block_within (const EbHeaderBlock *known, gsize limit)
{
  if (known->body > limit)
    return NULL;
  EbHeaderBlock *block = g_memdup2 (known, sizeof *known);
  block->fields = g_array_copy (known->fields);
  return block;
}

gboolean
eb_header_field_is (const EbHeaderField *f, const char *buf, const char *name)
{
  gsize n = strlen (name);
  return f->name_len == n && g_ascii_strncasecmp (buf + f->start, name, n) == 0;
}

gboolean
eb_header_field_is_content (const EbHeaderField *f, const char *buf)
{
  return f->name_len > 8 && g_ascii_strncasecmp (buf + f->start, "Content-", 8) == 0;
}

gint
eb_header_block_find (const EbHeaderBlock *block, const char *buf, const char *name)
{
  for (guint i = 0; i < block->fields->len; i++)
    if (eb_header_field_is (&g_array_index (block->fields, EbHeaderField, i), buf, name))
      return (gint) i;
  return -1;
}

char *
eb_header_field_unfold (const EbHeaderField *f, const char *buf)
{
  GString *s = g_string_sized_new (f->value_end - f->value);
  for (gsize p = f->value; p < f->value_end; p++) {
    char c = buf[p];
    if (c == '\r' || c == '\n')
      continue;
    g_string_append_c (s, c);
  }
  return g_strstrip (g_string_free (s, FALSE));
}

const char *
eb_header_eol_at (const char *buf, gsize len, gsize pos)
{
  const char *nl = pos < len ? memchr (buf + pos, '\n', len - pos) : NULL;
  if (nl && nl > buf + pos && nl[-1] == '\r')
    return "\r\n";
  if (nl && nl == buf + pos && pos > 0 && buf[pos - 1] == '\r')
    return "\r\n";
  return "\n";
}

char *
eb_header_quote (const char *s)
{
  GString *q = g_string_new ("\"");
  for (const char *p = s; p && *p; p++) {
    if ((guchar) *p < 0x20 || *p == 0x7f)
      continue;
    if (*p == '"' || *p == '\\')
      g_string_append_c (q, '\\');
    g_string_append_c (q, *p);
  }
  g_string_append_c (q, '"');
  return g_string_free (q, FALSE);
}

char *
eb_header_get_value (const char *buf, gsize len, const char *name)
{
  g_return_val_if_fail (buf != NULL || len == 0, NULL);
  g_return_val_if_fail (name != NULL, NULL);
  g_autoptr (EbHeaderBlock) blk = eb_header_block_scan (buf, 0, len);
  gint i = eb_header_block_find (blk, buf, name);
  return i >= 0 ? eb_header_field_unfold (&g_array_index (blk->fields, EbHeaderField, i), buf) : NULL;
}

void
eb_header_field_append (GString *out, const char *buf, const EbHeaderField *f, const char *eol)
{
  gsize p = f->start;
  while (p < f->value_end) {
    const char *nl = memchr (buf + p, '\n', f->value_end - p);
    gsize e = nl ? (gsize) (nl - buf) : f->value_end;
    gsize le = (e > p && buf[e - 1] == '\r') ? e - 1 : e;
    g_string_append_len (out, buf + p, (gssize) (le - p));
    g_string_append (out, eol);
    p = nl ? e + 1 : f->value_end;
  }
  if (f->value_end == f->start)
    g_string_append (out, eol);
}

void
eb_header_find_lines (const char *buf, gsize start, gsize len, const char *name, GArray *out)
{
  if (G_UNLIKELY (watched_at) && buf + start == watched_at)
    watched_scans++;
  gsize nl_len = strlen (name);
  gsize p = start;
  while (p < len) {
    const char *nl = memchr (buf + p, '\n', len - p);
    gsize e = nl ? (gsize) (nl - buf) + 1 : len;
    if (e - p <= 2 && (buf[p] == '\n' || (buf[p] == '\r' && e - p == 2)))
      break;   /* the end of the header */
    if (e - p > nl_len && g_ascii_strncasecmp (buf + p, name, nl_len) == 0 && buf[p + nl_len] == ':') {
      while (e < len && (buf[e] == ' ' || buf[e] == '\t')) {   /* and its continuation lines */
        const char *n2 = memchr (buf + e, '\n', len - e);
        e = n2 ? (gsize) (n2 - buf) + 1 : len;
      }
      EbHeaderField f = { .start = p, .name_len = nl_len, .value = p + nl_len + 1, .value_end = e,
                          .end = e };
      g_array_append_val (out, f);
    }
    p = e;
  }
}
