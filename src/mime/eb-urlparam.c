/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-urlparam.c - RFC 2017 section 3.1 URL reassembly and its reverse (see
 * eb-urlparam.h). */
#include "eb-urlparam.h"
#include "eb-error.h"
#include "eb-params.h"
#include <string.h>

/* An RFC 2047 encoded-word: =?charset?B|Q?text?= with no white space. The
 * candidates are found by memchr ('=' is rare in a URL but for base64 padding
 * and queries). */
static gboolean
has_encoded_word (const guint8 *d, gsize n)
{
  for (gsize i = 0; i + 1 < n; i++) {
    const guint8 *eq = memchr (d + i, '=', n - 1 - i);
    if (!eq)
      return FALSE;
    i = (gsize) (eq - d);
    if (d[i + 1] != '?')
      continue;
    gsize j = i + 2, cs = j;
    while (j < n && d[j] != '?' && d[j] > 0x20 && d[j] < 0x7F)
      j++;
    if (j == cs || j + 2 >= n || d[j] != '?')
      continue;
    guchar enc = g_ascii_toupper (d[j + 1]);
    if ((enc != 'B' && enc != 'Q') || d[j + 2] != '?')
      continue;
    j += 3;
    while (j < n && d[j] != '?' && d[j] > 0x20 && d[j] < 0x7F)
      j++;
    if (j + 1 < n && d[j] == '?' && d[j + 1] == '=')
      return TRUE;
  }
  return FALSE;
}

static const char hexu[] = "0123456789ABCDEF";

/* The octets RFC 2017 3.1 step 1 percent-encodes: SPACE, CTL, '"', '\\' and
 * 8-bit (0x00-0x20, 0x7F-0xFF); the row is the high nibble. */
static const guint8 must_encode[256] = {
  1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,  1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,
  1,0,1,0,0,0,0,0, 0,0,0,0,0,0,0,0,  0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,
  0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,  0,0,0,0,0,0,0,0, 0,0,0,0,1,0,0,0,
  0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,  0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,1,
  1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,  1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,
  1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,  1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,
  1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,  1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,
  1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,  1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,
};

/* How many octets of [d, d+n) must be percent-encoded: eight at a time while a
 * word holds none (no byte below 0x21, with its high bit set, 0x7F, '"' or
 * '\\'), the table for a word that does. */
static gsize
count_must_encode (const guint8 *d, gsize n)
{
  const guint64 ones = G_GUINT64_CONSTANT (0x0101010101010101);
  const guint64 highs = ones * 0x80;
#define HAS_ZERO(v) (((v) - ones) & ~(v) & highs)
  gsize need = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    guint64 w;
    memcpy (&w, d + i, 8);
    guint64 x7f = w ^ (ones * 0x7F), dq = w ^ (ones * '"'), bs = w ^ (ones * '\\');
    if (((w - ones * 0x21) & ~w & highs) == 0 && (w & highs) == 0 && HAS_ZERO (x7f) == 0
        && HAS_ZERO (dq) == 0 && HAS_ZERO (bs) == 0)
      continue;
    for (gsize j = i; j < i + 8; j++)
      need += must_encode[d[j]];
  }
#undef HAS_ZERO
  for (; i < n; i++)
    need += must_encode[d[i]];
  return need;
}

char *
eb_urlparam_reassemble (const char *raw, gsize len, GError **error)
{
  g_return_val_if_fail (raw != NULL || len == 0, NULL);
  static const char *const only[] = { "url", NULL };
  g_autoptr (EbParams) params = eb_params_parse_only (raw, len, only);
  return eb_urlparam_reassemble_params (params, error);
}

char *
eb_urlparam_reassemble_params (const EbParams *params, GError **error)
{
  g_return_val_if_fail (params != NULL, NULL);
  GBytes *octets = eb_params_get_octets (params, "url", TRUE, error);
  return octets ? eb_urlparam_reassemble_octets (octets, error) : NULL;
}

char *
eb_urlparam_reassemble_octets (GBytes *octets, GError **error)
{
  g_return_val_if_fail (octets != NULL, NULL);
  gsize n = 0;
  guint8 *d = g_bytes_unref_to_data (octets, &n);
  if (has_encoded_word (d, n)) {
    g_free (d);
    g_set_error_literal (error, EB_ERROR, EB_ERROR_ENCODED_WORD,
                         "URL parameter holds an RFC 2047 encoded-word");
    return NULL;
  }
  /* linear white space is already gone (eb_params_get_octets); what is left
   * and may not stand in a URL is counted for percent-encoding */
  gsize m = n;
  gsize need = count_must_encode (d, n) * 2;
  gsize s = 0, e = m;
  if (m >= 2 && d[0] == '<' && d[m - 1] == '>') {
    s = 1;
    e = m - 1;
    if (e - s >= 4 && g_ascii_strncasecmp ((char *) d + s, "URL:", 4) == 0)
      s += 4;
  }
  if (e == s) {
    g_free (d);
    g_set_error_literal (error, EB_ERROR, EB_ERROR_EMPTY, "URL parameter is empty");
    return NULL;
  }
  char *url;
  if (need == 0 && s == 0) {
    url = g_realloc (d, e + 1);
    url[e] = '\0';
    return url;
  }
  url = g_malloc (e - s + need + 1);
  gsize o = 0;
  for (gsize i = s; i < e; i++) {
    guint8 c = d[i];
    if (must_encode[c]) {
      url[o++] = '%';
      url[o++] = hexu[c >> 4];
      url[o++] = hexu[c & 15];
    } else {
      url[o++] = (char) c;
    }
  }
  url[o] = '\0';
  g_free (d);
  return url;
}

GPtrArray *
eb_urlparam_split (const char *url, guint max_word)
{
  g_return_val_if_fail (max_word > 0, NULL);
  GPtrArray *words = g_ptr_array_new_with_free_func (g_free);
  gsize n = strlen (url);
  for (gsize i = 0; i < n; i += max_word)
    g_ptr_array_add (words, g_strndup (url + i, MIN (max_word, n - i)));
  return words;
}

static void
append_quoted_word (GString *out, const char *w)
{
  for (const char *p = w; *p; p++) {
    if (*p == '"' || *p == '\\')
      g_string_append_c (out, '\\');
    g_string_append_c (out, *p);
  }
}

static gboolean
is_attribute_char (guchar c)
{
  return c > 0x20 && c < 0x7F && !strchr ("*'%()<>@,;:\\\"/[]?=", c);
}

char *
eb_urlparam_format (const char *url, guint max_word, EbFoldStyle style, const char *eol)
{
  g_return_val_if_fail (max_word >= 3, NULL);
  GString *out = g_string_new (NULL);
  if (style == EB_FOLD_RFC2231_EXT) {
    /* words of encoded text, never cut inside a %XX */
    GString *word = g_string_new (NULL);
    guint k = 0;
    for (const char *p = url;; p++) {
      char enc[4];
      gsize el = 0;
      if (*p) {
        guchar c = (guchar) *p;
        if (is_attribute_char (c)) {
          enc[el++] = (char) c;
        } else {
          enc[el++] = '%';
          enc[el++] = hexu[c >> 4];
          enc[el++] = hexu[c & 15];
        }
      }
      if (!*p || word->len + el > max_word) {
        if (k > 0)
          g_string_append_printf (out, ";%s\t", eol);
        g_string_append_printf (out, "URL*%u*=%s%s", k, k == 0 ? "us-ascii''" : "", word->str);
        k++;
        g_string_truncate (word, 0);
      }
      if (!*p)
        break;
      g_string_append_len (word, enc, (gssize) el);
    }
    g_string_free (word, TRUE);
    return g_string_free (out, FALSE);
  }

  g_autoptr (GPtrArray) words = eb_urlparam_split (url, style == EB_FOLD_NONE ? G_MAXUINT : max_word);
  if (words->len == 0)
    g_ptr_array_add (words, g_strdup (""));
  if (style == EB_FOLD_RFC2231) {
    for (guint i = 0; i < words->len; i++) {
      if (i > 0)
        g_string_append_printf (out, ";%s\t", eol);
      g_string_append_printf (out, "URL*%u=\"", i);
      append_quoted_word (out, g_ptr_array_index (words, i));
      g_string_append_c (out, '"');
    }
    return g_string_free (out, FALSE);
  }
  const char *sep = "";
  g_autofree char *lines = g_strconcat (eol, "\t", NULL);
  g_autofree char *lines_space = g_strconcat (eol, " ", NULL);
  switch (style) {
  case EB_FOLD_SPACE: sep = " "; break;
  case EB_FOLD_TAB: sep = "\t"; break;
  case EB_FOLD_LINES: sep = lines; break;
  case EB_FOLD_LINES_SPACE: sep = lines_space; break;
  default: break;
  }
  g_string_append (out, "URL=\"");
  for (guint i = 0; i < words->len; i++) {
    if (i > 0)
      g_string_append (out, sep);
    append_quoted_word (out, g_ptr_array_index (words, i));
  }
  g_string_append_c (out, '"');
  return g_string_free (out, FALSE);
}
