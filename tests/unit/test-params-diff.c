/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-params-diff: the differential check of issue 16 (tests/fuzz/fuzz-paramsdiff.c)
 * run by ctest: the current parameter parser and URL reassembly against the old
 * ones (tests/fuzz/params-old.c) over the committed fuzz seeds and regression
 * inputs of the params and urlparam targets, generated long URLs in every
 * folding form, and seeded mutations of all of them. Any difference traps. */
#include <glib.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);

static GPtrArray *inputs;   /* (element-type GBytes) */

static void
load_dir (const char *sub)
{
  g_autofree char *dir = g_test_build_filename (G_TEST_DIST, "fuzz", sub, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GDir) d = g_dir_open (dir, 0, &error);
  g_assert_no_error (error);
  const char *n;
  while ((n = g_dir_read_name (d))) {
    g_autofree char *path = g_build_filename (dir, n, NULL);
    gchar *data = NULL;
    gsize len = 0;
    if (n[0] == '.' || !g_file_test (path, G_FILE_TEST_IS_REGULAR))
      continue;
    g_assert_true (g_file_get_contents (path, &data, &len, NULL));
    g_ptr_array_add (inputs, g_bytes_new_take (data, len));
  }
}

/* An exact-size copy, so that ASan sees a read past the end. */
static void
run_one (const guint8 *data, gsize len)
{
  guint8 *copy = g_malloc (len ? len : 1);
  memcpy (copy, data, len);
  LLVMFuzzerTestOneInput (copy, len);
  g_free (copy);
}

static void
add_generated (void)
{
  static const char *const seps[] = { " ", "\t", "\r\n\t", "\n ", "\r\n ", "" };
  for (guint s = 0; s < G_N_ELEMENTS (seps); s++) {
    for (guint form = 0; form < 4; form++) {
      GString *g = g_string_new (" message/external-body; access-type=URL;\r\n\t");
      if (form == 0)
        g_string_append (g, "URL=\"data:text/plain;base64,");
      for (guint i = 0; i < 300; i++) {
        if (form == 1)
          g_string_append_printf (g, "%sURL*%u=\"", i ? ";\r\n " : "", i);
        else if (form == 2)
          g_string_append_printf (g, "%sURL*%u*=%s", i ? ";\r\n " : "", i, i ? "" : "utf-8''");
        else if (form == 3)
          g_string_append_printf (g, "%surl*%u%s=\"", i ? "; " : "", 299 - i, i % 3 ? "" : "");
        g_string_append (g, form == 2 ? "QUJD%20REVG%2fR0hJ%C3%A9" : "QUJDREVGR0hJ\\\"S0xN\\\\T1BR=?x?");
        if (form == 1 || form == 3)
          g_string_append_c (g, '"');
        else if (form == 0)
          g_string_append (g, seps[s]);
      }
      if (form == 0)
        g_string_append_c (g, '"');
      g_string_append (g, "; name=\"a b\"; size=12 (comment \\) (nested)) ; x");
      g_ptr_array_add (inputs, g_string_free_to_bytes (g));
    }
  }
}

static const char specials[] = " \t\r\n\"\\%;=*'()<>?:/0URLurl";

static void
test_diff (void)
{
  inputs = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  load_dir ("seeds/params");
  load_dir ("seeds/urlparam");
  load_dir ("regressions/params");
  load_dir ("regressions/urlparam");
  add_generated ();
  g_assert_cmpuint (inputs->len, >, 100);
  GRand *r = g_rand_new_with_seed (16);
  guint mutations = g_test_slow () ? 400 : 40;
  guint64 runs = 0;
  for (guint i = 0; i < inputs->len; i++) {
    gsize len = 0;
    const guint8 *d = g_bytes_get_data (inputs->pdata[i], &len);
    run_one (d, len);
    runs++;
    for (guint m = 0; m < mutations; m++) {
      GString *b = g_string_new_len ((const char *) d, (gssize) len);
      guint k = 1 + g_rand_int_range (r, 0, 4);
      for (guint j = 0; j < k; j++) {
        guint pos = b->len ? (guint) g_rand_int_range (r, 0, (gint32) b->len) : 0;
        guint8 c = (guint8) specials[g_rand_int_range (r, 0, sizeof specials - 1)];
        switch (g_rand_int_range (r, 0, 5)) {
        case 0:   /* overwrite with a special */
          if (b->len)
            b->str[pos] = (char) c;
          break;
        case 1:   /* insert a special */
          g_string_insert_c (b, (gssize) pos, (char) c);
          break;
        case 2: { /* delete a run */
          gsize n = (gsize) g_rand_int_range (r, 1, 9);
          if (b->len)
            g_string_erase (b, (gssize) pos, (gssize) MIN (b->len - pos, n));
          break;
        }
        case 3: { /* splice in a piece of another input */
          gsize ol = 0;
          const guint8 *od = g_bytes_get_data (inputs->pdata[g_rand_int_range (r, 0, (gint32) inputs->len)], &ol);
          if (ol) {
            guint from = (guint) g_rand_int_range (r, 0, (gint32) ol);
            guint n = (guint) g_rand_int_range (r, 1, 64);
            n = MIN ((guint) (ol - from), n);
            g_string_insert_len (b, (gssize) pos, (const char *) od + from, (gssize) n);
          }
          break;
        }
        default:  /* any byte */
          if (b->len)
            b->str[pos] = (char) g_rand_int_range (r, 0, 256);
          break;
        }
      }
      run_one ((const guint8 *) b->str, b->len);
      g_string_free (b, TRUE);
      runs++;
    }
  }
  g_test_message ("%" G_GUINT64_FORMAT " inputs compared", runs);
  g_rand_free (r);
  g_ptr_array_unref (inputs);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/params-diff/old-vs-new", test_diff);
  return g_test_run ();
}
