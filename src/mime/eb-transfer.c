/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-transfer.c - transfer encodings (see eb-transfer.h). */
#include "eb-transfer.h"
#include "eb-dataurl.h"
#include "eb-error.h"
#include <string.h>

EbCte
eb_transfer_parse_cte (const char *value)
{
  if (!value)
    return EB_CTE_IDENTITY;
  g_autofree char *v = g_strstrip (g_strdup (value));
  /* a trailing comment, e.g. "7bit (plain)", is tolerated */
  char *paren = strchr (v, '(');
  if (paren) {
    *paren = '\0';
    g_strstrip (v);
  }
  if (!*v || !g_ascii_strcasecmp (v, "7bit") || !g_ascii_strcasecmp (v, "8bit")
      || !g_ascii_strcasecmp (v, "binary"))
    return EB_CTE_IDENTITY;
  if (!g_ascii_strcasecmp (v, "base64"))
    return EB_CTE_BASE64;
  if (!g_ascii_strcasecmp (v, "quoted-printable"))
    return EB_CTE_QP;
  return EB_CTE_UNKNOWN;
}

static int
hexval (guchar c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

static GBytes *
qp_decode (const guint8 *in, gsize len, GError **error)
{
  guint8 *out = g_malloc (len + 1);
  gsize o = 0;
  gsize i = 0;
  while (i < len) {
    /* one line: [i, eol) plus its line break */
    const guint8 *nl = memchr (in + i, '\n', len - i);
    gsize eol = nl ? (gsize) (nl - in) : len;
    gsize brk = eol;
    if (nl && eol > i && in[eol - 1] == '\r')
      brk = eol - 1;
    /* transport may add trailing white space: it is not data (RFC 2045 6.7 (3)) */
    gsize end = brk;
    while (end > i && (in[end - 1] == ' ' || in[end - 1] == '\t'))
      end--;
    gboolean soft = FALSE;
    for (gsize p = i; p < end; p++) {
      if (in[p] != '=') {
        out[o++] = in[p];
        continue;
      }
      if (p + 1 == end) {
        soft = TRUE;
        break;
      }
      int h = hexval (in[p + 1]);
      int l = p + 2 < end ? hexval (in[p + 2]) : -1;
      if (h < 0 || l < 0) {
        g_free (out);
        g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
                     "invalid quoted-printable escape at offset %" G_GSIZE_FORMAT, p);
        return NULL;
      }
      out[o++] = (guint8) (h << 4 | l);
      p += 2;
    }
    if (nl && !soft) {
      if (brk != eol)
        out[o++] = '\r';
      out[o++] = '\n';
    }
    i = nl ? eol + 1 : len;
  }
  return g_bytes_new_take (g_realloc (out, o ? o : 1), o);
}

GBytes *
eb_transfer_decode (EbCte cte, GBytes *data, GError **error)
{
  gsize len = 0;
  const guint8 *in = g_bytes_get_data (data, &len);
  switch (cte) {
  case EB_CTE_IDENTITY:
    return g_bytes_ref (data);
  case EB_CTE_BASE64: {
    GBytes *b = eb_data_url_forgiving_base64_decode ((const char *) in, len);
    if (!b)
      g_set_error_literal (error, EB_ERROR, EB_ERROR_SYNTAX, "invalid base64");
    return b;
  }
  case EB_CTE_QP:
    return qp_decode (in, len, error);
  case EB_CTE_UNKNOWN:
  default:
    g_set_error_literal (error, EB_ERROR, EB_ERROR_SYNTAX, "unknown transfer encoding");
    return NULL;
  }
}

/* Does @d start with ">From ", ">>From ", ...? In an mbox such a line is
 * mboxrd-quoted: a reader takes one ">" off. */
static gboolean
mboxrd_quoted_from (const guint8 *d, gsize len)
{
  gsize q = 0;
  while (q < len && d[q] == '>')
    q++;
  return q > 0 && len - q >= 5 && memcmp (d + q, "From ", 5) == 0;
}

gboolean
eb_transfer_is_clean_7bit (const guint8 *data, gsize len)
{
  gsize col = 0;
  for (gsize i = 0; i < len; i++) {
    guint8 c = data[i];
    if (col == 0) {
      if (c == '-' && i + 1 < len && data[i + 1] == '-')
        return FALSE;
      if (c == 'F' && len - i >= 5 && memcmp (data + i, "From ", 5) == 0)
        return FALSE;
      if (c == '>' && mboxrd_quoted_from (data + i, len - i))
        return FALSE;   /* an mboxrd reader would unquote it */
    }
    if (c == '\n') {
      col = 0;
      continue;
    }
    if (c == 0 || c >= 128)
      return FALSE;
    if (c == '\r' && !(i + 1 < len && data[i + 1] == '\n'))
      return FALSE;
    if (c != '\r' && ++col > 998)
      return FALSE;
  }
  return TRUE;
}

EbOutEncoding
eb_transfer_choose (gboolean is_text, const guint8 *data, gsize len)
{
  if (!is_text)
    return EB_OUT_BASE64;
  return eb_transfer_is_clean_7bit (data, len) ? EB_OUT_7BIT : EB_OUT_QP;
}

const char *
eb_transfer_name (EbOutEncoding enc)
{
  switch (enc) {
  case EB_OUT_7BIT: return "7bit";
  case EB_OUT_QP: return "quoted-printable";
  case EB_OUT_BASE64: default: return "base64";
  }
}

/* A small write-behind buffer over a GOutputStream (or a counter when out is NULL). */
typedef struct {
  GOutputStream *out;
  guint8 buf[65536];
  gsize n;
  guint64 total;
  GError **error;
  gboolean failed;
} Sink;

static void
sink_flush (Sink *s)
{
  if (s->n && s->out && !s->failed)
    s->failed = !g_output_stream_write_all (s->out, s->buf, s->n, NULL, NULL, s->error);
  s->n = 0;
}

static inline void
sink_put (Sink *s, const void *p, gsize n)
{
  s->total += n;
  if (!s->out)
    return;
  if (s->n + n > sizeof s->buf) {
    sink_flush (s);
    if (n > sizeof s->buf) {
      if (!s->failed)
        s->failed = !g_output_stream_write_all (s->out, p, n, NULL, NULL, s->error);
      return;
    }
  }
  memcpy (s->buf + s->n, p, n);
  s->n += n;
}

static void
write_7bit (Sink *s, const guint8 *d, gsize len, const char *eol, gsize eol_len)
{
  gsize i = 0;
  while (i < len) {
    const guint8 *nl = memchr (d + i, '\n', len - i);
    if (!nl) {
      sink_put (s, d + i, len - i);
      break;
    }
    gsize e = (gsize) (nl - d);
    gsize le = (e > i && d[e - 1] == '\r') ? e - 1 : e;
    sink_put (s, d + i, le - i);
    sink_put (s, eol, eol_len);
    i = e + 1;
  }
}

static const char hexdig[] = "0123456789ABCDEF";

static void
write_qp (Sink *s, const guint8 *d, gsize len, const char *eol, gsize eol_len)
{
  char line[80];
  gsize col = 0;
  gsize i = 0;
  while (i < len) {
    guint8 c = d[i];
    /* hard line break: LF or CRLF */
    if (c == '\n' || (c == '\r' && i + 1 < len && d[i + 1] == '\n')) {
      sink_put (s, line, col);
      sink_put (s, eol, eol_len);
      col = 0;
      i += c == '\r' ? 2 : 1;
      continue;
    }
    gboolean at_line_end = i + 1 == len || d[i + 1] == '\n'
                           || (d[i + 1] == '\r' && i + 2 < len && d[i + 2] == '\n');
    gboolean literal = (c >= 33 && c <= 126 && c != '=')
                       || ((c == ' ' || c == '\t') && !at_line_end);
    if (col == 0 && c == '-' && i + 1 < len && d[i + 1] == '-')
      literal = FALSE;   /* never a line that looks like a boundary */
    if (col == 0 && c == 'F' && len - i >= 5 && memcmp (d + i, "From ", 5) == 0)
      literal = FALSE;   /* never a line an mbox would quote */
    if (col == 0 && c == '>' && mboxrd_quoted_from (d + i, len - i))
      literal = FALSE;   /* nor one an mboxrd reader would unquote: "=3EFrom" */
    gsize need = literal ? 1 : 3;
    /* keep lines at most 76 columns: 75 + a soft break "=" */
    if (col + need > 75 && !(at_line_end && col + need <= 76)) {
      line[col++] = '=';
      sink_put (s, line, col);
      sink_put (s, eol, eol_len);
      col = 0;
    }
    if (literal) {
      line[col++] = (char) c;
    } else {
      line[col++] = '=';
      line[col++] = hexdig[c >> 4];
      line[col++] = hexdig[c & 15];
    }
    i++;
  }
  sink_put (s, line, col);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void
write_base64 (Sink *s, const guint8 *d, gsize len, const char *eol, gsize eol_len)
{
  char line[80];
  gsize i = 0;
  while (i + 57 <= len) {          /* 57 octets make one full 76-column line */
    char *o = line;
    for (gsize k = 0; k < 57; k += 3) {
      guint32 v = (guint32) d[i + k] << 16 | (guint32) d[i + k + 1] << 8 | d[i + k + 2];
      o[0] = b64[v >> 18];
      o[1] = b64[(v >> 12) & 63];
      o[2] = b64[(v >> 6) & 63];
      o[3] = b64[v & 63];
      o += 4;
    }
    memcpy (o, eol, eol_len);
    sink_put (s, line, 76 + eol_len);
    i += 57;
  }
  if (i < len) {
    char *o = line;
    while (i + 3 <= len) {
      guint32 v = (guint32) d[i] << 16 | (guint32) d[i + 1] << 8 | d[i + 2];
      *o++ = b64[v >> 18];
      *o++ = b64[(v >> 12) & 63];
      *o++ = b64[(v >> 6) & 63];
      *o++ = b64[v & 63];
      i += 3;
    }
    if (i < len) {
      guint32 v = (guint32) d[i] << 16 | (i + 1 < len ? (guint32) d[i + 1] << 8 : 0);
      *o++ = b64[v >> 18];
      *o++ = b64[(v >> 12) & 63];
      *o++ = i + 1 < len ? b64[(v >> 6) & 63] : '=';
      *o++ = '=';
    }
    memcpy (o, eol, eol_len);
    o += eol_len;
    sink_put (s, line, (gsize) (o - line));
  }
}

static gboolean
run (EbOutEncoding enc, const guint8 *data, gsize len, const char *eol, Sink *s)
{
  gsize eol_len = strlen (eol);
  switch (enc) {
  case EB_OUT_7BIT: write_7bit (s, data, len, eol, eol_len); break;
  case EB_OUT_QP: write_qp (s, data, len, eol, eol_len); break;
  case EB_OUT_BASE64: write_base64 (s, data, len, eol, eol_len); break;
  }
  sink_flush (s);
  return !s->failed;
}

gboolean
eb_transfer_write (EbOutEncoding enc, const guint8 *data, gsize len, const char *eol,
                   GOutputStream *out, GError **error)
{
  g_autofree Sink *s = g_new0 (Sink, 1);
  s->out = out;
  s->error = error;
  return run (enc, data, len, eol, s);
}

guint64
eb_transfer_encoded_length (EbOutEncoding enc, const guint8 *data, gsize len, const char *eol)
{
  g_autofree Sink *s = g_new0 (Sink, 1);
  run (enc, data, len, eol, s);
  return s->total;
}
