/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-dataurl: the WHATWG data: URL processor and forgiving-base64 on any
 * input, with two properties from the standards:
 * - the URL parser removes every ASCII tab and newline from its input first
 *   (URL Standard, basic URL parser), so one inserted anywhere between two
 *   characters changes nothing: same failure, or same MIME type, body and flags;
 * - forgiving-base64 decode gives back what base64 encoding made of any bytes,
 *   with ASCII white space inserted and with the padding removed. */
#include <string.h>
#include "eb-dataurl.h"

static gboolean
same_result (const EbDataUrl *a, const EbDataUrl *b)
{
  if (!a || !b)
    return a == b;
  char *ta = eb_mime_type_serialize (a->mime_type);
  char *tb = eb_mime_type_serialize (b->mime_type);
  gboolean same = strcmp (ta, tb) == 0 && g_bytes_equal (a->body, b->body)
                  && a->base64 == b->base64 && a->type_given == b->type_given;
  g_free (ta);
  g_free (tb);
  return same;
}

/* @data with @c inserted at @at */
static char *
insert_at (const guint8 *data, size_t size, size_t at, char c)
{
  char *s = g_malloc (size + 1);
  memcpy (s, data, at);
  s[at] = c;
  memcpy (s + at + 1, data + at, size - at);
  return s;
}

static void
tab_or_newline_changes_nothing (const guint8 *data, size_t size, const EbDataUrl *du)
{
  if (size == 0)
    return;
  size_t at = ((size_t) data[size - 1] * 131u + size) % (size + 1);
  /* between two characters: not inside a UTF-8 sequence */
  if (at < size && (data[at] & 0xC0) == 0x80)
    return;
  char *s = insert_at (data, size, at, "\t\n\r"[data[0] % 3]);
  EbDataUrl *again = eb_data_url_process (s, (gssize) size + 1, NULL);
  if (!same_result (du, again))
    __builtin_trap ();
  eb_data_url_free (again);
  g_free (s);
}

static void
base64_round_trip (const guint8 *data, size_t size)
{
  if (size > 4096)
    return;
  char *enc = g_base64_encode (data, size);
  size_t n = strlen (enc);
  GBytes *back = eb_data_url_forgiving_base64_decode (enc, n);
  if (!back || g_bytes_get_size (back) != size
      || (size && memcmp (g_bytes_get_data (back, NULL), data, size) != 0))
    __builtin_trap ();
  g_bytes_unref (back);

  size_t at = size ? ((size_t) data[0] * 7u + size) % (n + 1) : 0;
  char *ws = insert_at ((const guint8 *) enc, n, at, " \t\n\f\r"[size % 5]);
  back = eb_data_url_forgiving_base64_decode (ws, n + 1);
  if (!back || g_bytes_get_size (back) != size
      || (size && memcmp (g_bytes_get_data (back, NULL), data, size) != 0))
    __builtin_trap ();
  g_bytes_unref (back);
  g_free (ws);

  size_t unpadded = n;
  while (unpadded && enc[unpadded - 1] == '=')
    unpadded--;
  back = eb_data_url_forgiving_base64_decode (enc, unpadded);
  if (!back || g_bytes_get_size (back) != size
      || (size && memcmp (g_bytes_get_data (back, NULL), data, size) != 0))
    __builtin_trap ();
  g_bytes_unref (back);
  g_free (enc);
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  EbDataUrl *du = eb_data_url_process ((const char *) data, (gssize) size, NULL);
  tab_or_newline_changes_nothing (data, size, du);
  eb_data_url_free (du);
  GBytes *b = eb_data_url_forgiving_base64_decode ((const char *) data, size);
  if (b)
    g_bytes_unref (b);
  base64_round_trip (data, size);
  return 0;
}
