/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-buffer.c - EbBuffer: bytes appended come back as they were, whatever
 * the room it started with and however often it grew; the GBytes made from it
 * owns the mapping. */
#include <string.h>
#include "eb-buffer.h"

static void
fill (guint8 *d, gsize n, guint seed)
{
  for (gsize i = 0; i < n; i++)
    d[i] = (guint8) ((i * 131 + seed) >> 3);
}

static void
check_appends (gsize reserve, gsize total, gsize step)
{
  g_autofree guint8 *want = g_malloc (total + 1);
  fill (want, total, (guint) (reserve + step));
  EbBuffer *b = eb_buffer_new (reserve);
  g_assert_nonnull (b);
  for (gsize p = 0; p < total; p += step)
    g_assert_true (eb_buffer_append (b, want + p, MIN (step, total - p)));
  g_assert_cmpuint (eb_buffer_get_size (b), ==, total);
  g_autoptr (GBytes) bytes = eb_buffer_free_to_bytes (b);
  gsize n = 0;
  const guint8 *got = g_bytes_get_data (bytes, &n);
  g_assert_cmpuint (n, ==, total);
  g_assert_true (total == 0 || memcmp (got, want, total) == 0);
}

static void
test_appends (void)
{
  /* unknown size: grows from its first room, many times */
  check_appends (0, 0, 1);
  check_appends (0, 1, 1);
  check_appends (0, 100000, 7);
  check_appends (0, 5 << 20, 16384);
  check_appends (0, 3 << 20, 3 << 20);   /* one append far past the room */
  /* the size announced: no growth; more than announced: grows */
  check_appends (4096, 4096, 1000);
  check_appends (3584 * 1024, 3584 * 1024, 16384);
  check_appends (10, 200000, 999);
}

static void
test_bytes_outlive (void)
{
  EbBuffer *b = eb_buffer_new (0);
  g_assert_true (eb_buffer_append (b, "hello", 5));
  GBytes *bytes = eb_buffer_free_to_bytes (b);
  GBytes *ref = g_bytes_ref (bytes);
  g_bytes_unref (bytes);
  g_assert_cmpmem (g_bytes_get_data (ref, NULL), g_bytes_get_size (ref), "hello", 5);
  g_bytes_unref (ref);   /* unmapped here (valgrind, test-valgrind: no leak) */
}

static void
test_free (void)
{
  eb_buffer_free (NULL);
  EbBuffer *b = eb_buffer_new (1 << 20);
  g_assert_true (eb_buffer_append (b, "x", 1));
  eb_buffer_free (b);
  g_autoptr (EbBuffer) c = eb_buffer_new (0);
  g_assert_cmpuint (eb_buffer_get_size (c), ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/buffer/appends", test_appends);
  g_test_add_func ("/buffer/bytes-outlive-buffer", test_bytes_outlive);
  g_test_add_func ("/buffer/free", test_free);
  return g_test_run ();
}
