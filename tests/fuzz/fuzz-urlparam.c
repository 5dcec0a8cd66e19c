/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-urlparam: URL reassembly from any header value; and the property that
 * a URL split into 40-character words in any folding style reassembles to
 * itself (or, holding an RFC 2047 encoded-word, is refused as one). */
#include <string.h>
#include "eb-error.h"
#include "eb-urlparam.h"

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  char *url = eb_urlparam_reassemble ((const char *) data, size, NULL);
  g_free (url);
  if (size < 2)
    return 0;
  /* the rest as a URL of characters that survive reassembly unchanged */
  static const char ok[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%";
  GString *u = g_string_new (NULL);
  for (size_t i = 1; i < size; i++)
    g_string_append_c (u, ok[data[i] % (sizeof ok - 1)]);
  if (u->len) {
    EbFoldStyle style = (EbFoldStyle) (data[0] % 7);
    const char *eol = data[0] & 0x80 ? "\r\n" : "\n";
    char *param = eb_urlparam_format (u->str, 40, style, eol);
    char *raw = g_strconcat (" message/external-body; access-type=URL;", eol, "\t", param, NULL);
    GError *error = NULL;
    char *back = eb_urlparam_reassemble (raw, strlen (raw), &error);
    /* the one URL refused by design: one that holds an RFC 2047 encoded-word
     * (=?charset?Q?text?=), which is taken as a sender's encoding, never guessed at */
    gboolean encoded_word = !back && g_error_matches (error, EB_ERROR, EB_ERROR_ENCODED_WORD)
                            && strstr (u->str, "=?") && strstr (u->str, "?=");
    if (!encoded_word && (!back || strcmp (back, u->str) != 0))
      __builtin_trap ();
    g_clear_error (&error);
    g_free (back);
    g_free (raw);
    g_free (param);
  }
  g_string_free (u, TRUE);
  return 0;
}
