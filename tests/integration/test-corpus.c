/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-corpus.c - the real messages in tests/corpus/ (see SOURCES.md there):
 * for each one, `extbody rewrite --report` and `extbody inspect --json` against
 * the outcomes written down in tests/corpus/expected/, and byte identity of
 * every message in which nothing is resolved, with and without the pre-check.
 *
 * Fetching is off here: the corpus points at real hosts on the Internet, and
 * tests never leave this machine (fetching is tested against loopback servers).
 *
 * EXTBODY_REGENERATE=1 rewrites the expected files instead of checking them
 * (then read the diff: every line is a claim about a real message). */
#include "run-command.h"

static void
check_or_write (const char *path, GBytes *got)
{
  if (g_getenv ("EXTBODY_REGENERATE")) {
    g_autoptr (GError) e = NULL;
    g_file_set_contents (path, g_bytes_get_data (got, NULL), (gssize) g_bytes_get_size (got), &e);
    g_assert_no_error (e);
    return;
  }
  g_autoptr (GBytes) want = file_bytes (path);
  if (!g_bytes_equal (want, got)) {
    g_autofree char *w = bytes_str (want), *g = bytes_str (got);
    g_test_message ("%s differs:\n--- expected\n%s\n--- got\n%s", path, w, g);
  }
  g_assert_true (g_bytes_equal (want, got));
}

static void
test_message (gconstpointer data)
{
  const char *name = data;
  g_autofree char *dir = g_test_build_filename (G_TEST_DIST, "corpus", NULL);
  g_autofree char *file = g_build_filename (dir, name, NULL);
  g_autoptr (GBytes) input = file_bytes (file);

  g_auto (CmdResult) w = { 0 };
  run_extbody_in (&w, dir, NULL, (const char *const[]) { "rewrite", "-o", "fetch=off", "--report", name, NULL });
  g_assert_cmpint (w.status, ==, 0);
  g_autofree char *report = g_strdup_printf ("%s/expected/%s.report", dir, name);
  check_or_write (report, w.err);

  g_auto (CmdResult) np = { 0 };
  run_extbody_in (&np, dir, NULL, (const char *const[]) { "rewrite", "-o", "fetch=off", "--no-precheck", name, NULL });
  g_assert_true (g_bytes_equal (np.out, w.out));

  g_autofree char *outpath = g_strdup_printf ("%s/expected/%s.out", dir, name);
  if (g_bytes_equal (w.out, input)) {
    /* unchanged: there must be no .out file claiming otherwise */
    if (!g_getenv ("EXTBODY_REGENERATE"))
      g_assert_false (g_file_test (outpath, G_FILE_TEST_EXISTS));
  } else {
    check_or_write (outpath, w.out);
  }

  g_auto (CmdResult) i = { 0 };
  run_extbody_in (&i, dir, NULL, (const char *const[]) { "inspect", "-o", "fetch=off", "--json", name, NULL });
  g_assert_cmpint (i.status, ==, 0);
  g_autofree char *inspect = g_strdup_printf ("%s/expected/%s.inspect", dir, name);
  check_or_write (inspect, i.out);
}

static gint
cmp_names (gconstpointer a, gconstpointer b)
{
  return g_strcmp0 (*(char *const *) a, *(char *const *) b);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_autofree char *dir = g_test_build_filename (G_TEST_DIST, "corpus", NULL);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_assert_nonnull (d);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  const char *n;
  while ((n = g_dir_read_name (d)))
    if (g_str_has_suffix (n, ".eml") || g_str_has_suffix (n, ".mmdf"))
      g_ptr_array_add (names, g_strdup (n));
  g_ptr_array_sort (names, cmp_names);
  /* the corpus has 15 messages; a loader that finds none must not pass */
  g_assert_cmpuint (names->len, ==, 15);
  for (guint k = 0; k < names->len; k++) {
    g_autofree char *path = g_strdup_printf ("/corpus/%s", (char *) g_ptr_array_index (names, k));
    g_test_add_data_func (path, g_ptr_array_index (names, k), test_message);
  }
  return g_test_run ();
}
