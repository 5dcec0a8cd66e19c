/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bench-base64.c - base64 decode speed of the data: URL path against GLib's
 * g_base64_decode on the same payload, measured in the same run.
 *
 *   bench-base64 [MB]   (default 100)
 *
 * Builds a base64 payload of MB megabytes from deterministic pseudo-random
 * bytes, then times (best of 5) g_base64_decode, eb_data_url_forgiving_base64_decode and
 * eb_data_url_process on "data:application/octet-stream;base64," + payload,
 * checking that all three give the same bytes. Not a test: nothing asserts a
 * speed. The requirement it measures: the data: URL route at no less than half
 * the speed of g_base64_decode.
 *
 * Built by CMake (target bench-base64), or by hand against a build tree:
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -o /tmp/bench-base64 tests/bench/bench-base64.c \
 *      -Isrc $(pkg-config --cflags glib-2.0 gmime-3.0) \
 *      /tmp/build-dataurl/src/libextbody.a \
 *      $(pkg-config --libs glib-2.0 gmime-3.0 json-glib-1.0)
 *   /tmp/bench-base64 100
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "eb-dataurl.h"

static double
now (void)
{
  return (double) g_get_monotonic_time () / 1e6;
}

int
main (int argc, char **argv)
{
  gsize mb = argc > 1 ? (gsize) atoi (argv[1]) : 100;
  gsize raw_len = mb * 1000 * 1000 / 4 * 3;
  guint8 *raw = g_malloc (raw_len);
  GRand *r = g_rand_new_with_seed (42);
  for (gsize i = 0; i < raw_len; i += 4) {
    guint32 v = g_rand_int (r);
    memcpy (raw + i, &v, MIN (4, raw_len - i));
  }
  g_rand_free (r);
  char *b64 = g_base64_encode (raw, raw_len);
  gsize b64_len = strlen (b64);
  const char *prefix = "data:application/octet-stream;base64,";
  gsize plen = strlen (prefix);
  char *url = g_malloc (plen + b64_len + 1);
  memcpy (url, prefix, plen);
  memcpy (url + plen, b64, b64_len + 1);

  double best_glib = 1e30, best_eb = 1e30, best_url = 1e30;
  for (int k = 0; k < 5; k++) {
    double t0 = now ();
    gsize out_len = 0;
    guchar *g = g_base64_decode (b64, &out_len);
    best_glib = MIN (best_glib, now () - t0);
    if (out_len != raw_len || memcmp (g, raw, raw_len) != 0)
      return 70;
    g_free (g);

    t0 = now ();
    GBytes *b = eb_data_url_forgiving_base64_decode (b64, b64_len);
    best_eb = MIN (best_eb, now () - t0);
    if (!b || g_bytes_get_size (b) != raw_len || memcmp (g_bytes_get_data (b, NULL), raw, raw_len))
      return 70;
    g_bytes_unref (b);

    t0 = now ();
    EbDataUrl *du = eb_data_url_process (url, (gssize) (plen + b64_len), NULL);
    best_url = MIN (best_url, now () - t0);
    if (!du || g_bytes_get_size (du->body) != raw_len
        || memcmp (g_bytes_get_data (du->body, NULL), raw, raw_len))
      return 70;
    eb_data_url_free (du);
  }
  double m = (double) b64_len / 1e6;
  printf ("payload %.1f MB of base64 (%.1f MB decoded)\n", m, raw_len / 1e6);
  printf ("g_base64_decode            %7.1f ms %8.1f MB/s\n", best_glib * 1e3, m / best_glib);
  printf ("eb_data_url_forgiving_base64_decode %7.1f ms %8.1f MB/s   ratio to GLib %.2f\n", best_eb * 1e3,
          m / best_eb, best_glib / best_eb);
  printf ("eb_data_url_process        %7.1f ms %8.1f MB/s   ratio to GLib %.2f\n", best_url * 1e3,
          m / best_url, best_glib / best_url);
  g_free (url);
  g_free (b64);
  g_free (raw);
  return 0;
}
