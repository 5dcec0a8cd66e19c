/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-replay.c - the fuzz targets as ordinary tests: a g_test main linked
 * with one fuzz-NAME.c, built by gcc in every build (normal and
 * EXTBODY_SANITIZE=ON), that runs the target's LLVMFuzzerTestOneInput over
 *   tests/fuzz/seeds/NAME/        the committed seed corpus (minimised from
 *                                 long fuzzing runs; refreshed by run-fuzz.sh)
 *   tests/fuzz/regressions/NAME/  every input a fuzzer ever crashed on
 * and, for the targets that read whole messages, tests/corpus/ and
 * data/samples/. A target reports a broken property with __builtin_trap, so a
 * regression kills this program and ctest reports it failed. */
#include <glib.h>
#include <string.h>

#ifndef FUZZ_NAME
#error "FUZZ_NAME must name the target"
#endif

int LLVMFuzzerTestOneInput (const guint8 *data, size_t size);
int LLVMFuzzerInitialize (int *argc, char ***argv) __attribute__ ((weak));

static gint
cmp_paths (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* Run every regular file under @dir (not recursive), in name order; how many. */
static guint
replay_dir (const char *dir, gboolean must_exist)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GDir) d = g_dir_open (dir, 0, &error);
  if (!d) {
    if (must_exist)
      g_assert_no_error (error);
    return 0;
  }
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  const char *n;
  while ((n = g_dir_read_name (d)))
    if (n[0] != '.')
      g_ptr_array_add (names, g_build_filename (dir, n, NULL));
  g_ptr_array_sort (names, cmp_paths);
  guint count = 0;
  for (guint i = 0; i < names->len; i++) {
    const char *path = names->pdata[i];
    if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
      continue;
    gchar *data = NULL;
    gsize len = 0;
    g_assert_true (g_file_get_contents (path, &data, &len, NULL));
    /* an exact-size copy, so that ASan sees a read past the end */
    guint8 *copy = g_malloc (len ? len : 1);
    memcpy (copy, data, len);
    g_free (data);
    if (g_test_verbose ())
      g_printerr ("  %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput (copy, len);
    g_free (copy);
    count++;
  }
  return count;
}

/* The target's own inputs, seeds and regressions together: a replay that finds
 * none fails (a moved or emptied directory must not pass as "nothing broke"). */
static void
test_seeds (void)
{
  g_autofree char *seeds = g_test_build_filename (G_TEST_DIST, "fuzz", "seeds", FUZZ_NAME, NULL);
  g_autofree char *regr = g_test_build_filename (G_TEST_DIST, "fuzz", "regressions", FUZZ_NAME, NULL);
  guint n = replay_dir (seeds, FALSE);
  guint r = replay_dir (regr, FALSE);
  g_test_message ("%u seed inputs, %u regression inputs", n, r);
  if (n + r == 0)
    g_printerr ("fuzz-replay-%s: no seed or regression input in %s or %s\n", FUZZ_NAME, seeds, regr);
  g_assert_cmpuint (n + r, >, 0);
  /* the committed seeds are part of every target */
  g_assert_cmpuint (n, >, 0);
}

static void
test_messages (void)
{
  g_autofree char *corpus = g_test_build_filename (G_TEST_DIST, "corpus", NULL);
  g_autofree char *samples = g_build_filename (g_getenv ("EXTBODY_DATADIR"), "samples", NULL);
  guint n = replay_dir (corpus, TRUE) + replay_dir (samples, TRUE);
  g_test_message ("%u messages", n);
  g_assert_cmpuint (n, >, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize (&argc, &argv);
  g_test_add_func ("/fuzz-replay/" FUZZ_NAME "/seeds-and-regressions", test_seeds);
  if (FUZZ_MESSAGES)
    g_test_add_func ("/fuzz-replay/" FUZZ_NAME "/messages", test_messages);
  return g_test_run ();
}
