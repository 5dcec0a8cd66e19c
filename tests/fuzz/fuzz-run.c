/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-run.c - one libFuzzer target run for a bounded time, as a ctest test
 * of the fuzz build (-DEXTBODY_FUZZ=ON with clang):
 *
 *   fuzz-run PATH-TO-fuzz-NAME NAME
 *
 * The run starts from a fresh copy of the committed seeds (tests/fuzz/seeds/NAME),
 * the regression inputs (tests/fuzz/regressions/NAME) and, for the message
 * targets, the test messages; it uses the MIME/URL dictionary. It runs for
 * $EXTBODY_FUZZ_SECONDS (default 45). The test fails when the fuzzer finds a
 * crash, a leak, undefined behaviour, a time-out or a broken property: the
 * input is kept in fuzz-artifacts/ of the build directory, to be turned into a
 * regression test (copy it into tests/fuzz/regressions/NAME/). The number of
 * inputs executed is printed; a run that executed nothing fails too, and so
 * does one that finds neither seeds nor regression inputs (whatever messages). */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

static const char *binary, *name;

static guint
copy_dir (const char *from, const char *to, const char *suffix)
{
  g_autoptr (GDir) d = g_dir_open (from, 0, NULL);
  if (!d)
    return 0;
  guint n = 0;
  const char *e;
  while ((e = g_dir_read_name (d))) {
    if (e[0] == '.' || (suffix && !g_str_has_suffix (e, suffix)))
      continue;
    g_autofree char *src = g_build_filename (from, e, NULL);
    g_autofree char *dst = g_build_filename (to, e, NULL);
    g_autofree char *data = NULL;
    gsize len;
    if (!g_file_test (src, G_FILE_TEST_IS_REGULAR) || !g_file_get_contents (src, &data, &len, NULL))
      continue;
    g_assert_true (g_file_set_contents (dst, data, len, NULL));
    n++;
  }
  return n;
}

static void
rm_tree (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *e;
  while (d && (e = g_dir_read_name (d))) {
    g_autofree char *p = g_build_filename (dir, e, NULL);
    g_unlink (p);
  }
  g_rmdir (dir);
}

static void
test_run (void)
{
  const char *secs = g_getenv ("EXTBODY_FUZZ_SECONDS");
  if (!secs || !*secs)
    secs = "45";
  g_autoptr (GError) error = NULL;
  g_autofree char *corpus = g_dir_make_tmp ("extbody-fuzz-XXXXXX", &error);
  g_assert_no_error (error);

  g_autofree char *seeds = g_test_build_filename (G_TEST_DIST, "fuzz", "seeds", name, NULL);
  g_autofree char *regr = g_test_build_filename (G_TEST_DIST, "fuzz", "regressions", name, NULL);
  guint n = copy_dir (seeds, corpus, NULL) + copy_dir (regr, corpus, NULL);
  /* the test messages are extra inputs, never a stand-in for the target's own */
  if (n == 0) {
    g_printerr ("fuzz-%s: no seed or regression input in %s or %s\n", name, seeds, regr);
    rm_tree (corpus);
  }
  g_assert_cmpuint (n, >, 0);
  if (strcmp (name, "rewrite") == 0 || strcmp (name, "inspect") == 0
      || strcmp (name, "externalize") == 0) {
    g_autofree char *msgs = g_test_build_filename (G_TEST_DIST, "corpus", NULL);
    n += copy_dir (msgs, corpus, ".eml");
  }
  g_assert_cmpuint (n, >, 0);

  g_autofree char *dict = g_test_build_filename (G_TEST_DIST, "fuzz", "mime.dict", NULL);
  g_autofree char *cwd = g_get_current_dir ();
  g_autofree char *artifacts = g_build_filename (cwd, "fuzz-artifacts", NULL);
  g_mkdir_with_parents (artifacts, 0755);
  g_autofree char *a_time = g_strdup_printf ("-max_total_time=%s", secs);
  g_autofree char *a_dict = g_strdup_printf ("-dict=%s", dict);
  g_autofree char *a_art = g_strdup_printf ("-artifact_prefix=%s/%s-", artifacts, name);
  const char *argv[] = { binary, a_time, a_dict, a_art, "-print_final_stats=1", "-max_len=65536",
                         "-timeout=30", "-rss_limit_mb=2560", "-close_fd_mask=1", corpus, NULL };

  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDERR_PIPE);
  if (!g_getenv ("ASAN_OPTIONS"))
    g_subprocess_launcher_setenv (l, "ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1", TRUE);
  if (!g_getenv ("UBSAN_OPTIONS"))
    g_subprocess_launcher_setenv (l, "UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1", TRUE);
  g_autoptr (GSubprocess) p = g_subprocess_launcher_spawnv (l, argv, &error);
  g_assert_no_error (error);
  g_autofree char *log = NULL;
  g_subprocess_communicate_utf8 (p, NULL, NULL, NULL, &log, &error);
  g_assert_no_error (error);
  rm_tree (corpus);

  guint64 units = 0;
  const char *s = log ? strstr (log, "stat::number_of_executed_units:") : NULL;
  if (s)
    units = g_ascii_strtoull (s + strlen ("stat::number_of_executed_units:"), NULL, 10);
  gboolean ok = g_subprocess_get_if_exited (p) && g_subprocess_get_exit_status (p) == 0;
  if (!ok) {
    /* the tail of the fuzzer's output says what it found and where the input went */
    gsize len = log ? strlen (log) : 0;
    g_printerr ("%s", log ? log + (len > 6000 ? len - 6000 : 0) : "(no output)\n");
    g_printerr ("fuzz-%s failed: the input is in %s/ (copy it into tests/fuzz/regressions/%s/)\n",
                name, artifacts, name);
  }
  g_test_message ("fuzz-%s: %" G_GUINT64_FORMAT " inputs executed in %s s from %u seeds", name, units,
                  secs, n);
  g_assert_true (ok);
  g_assert_cmpuint (units, >, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (argc != 3) {
    g_printerr ("usage: fuzz-run PATH-TO-fuzz-NAME NAME\n");
    return 64;
  }
  binary = argv[1];
  name = argv[2];
  g_autofree char *path = g_strdup_printf ("/fuzz-run/%s", name);
  g_test_add_func (path, test_run);
  return g_test_run ();
}
