/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-install.c - the public API is usable from outside: the build installed
 * into a temporary DESTDIR (cmake --install BUILD --prefix /usr/local), the
 * installed example (share/doc/extbody/examples) built there by the system
 * compiler with its Makefile and `pkg-config --cflags --libs extbody-2`
 * (PKG_CONFIG_PATH pointing into the DESTDIR), and run against the installed
 * library (LD_LIBRARY_PATH) on a message with data: URLs.
 *
 *   /install/files     the library (SONAME), headers and extbody-2.pc are
 *                      installed, and pkg-config reads the installed file
 *   /install/example   resolve-one built from the installed files resolves the
 *                      sample's data: URLs, runs on the installed library, and
 *                      writes what `extbody rewrite` writes
 *
 * $CMAKE is cmake, $EXTBODY_BUILD the build tree, $EXTBODY the command;
 * $EXTBODY_EXAMPLE_CFLAGS is added to the example's CFLAGS and LDFLAGS (the
 * sanitizer build's flags). Skipped (77) without cc, make or pkg-config. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <extbody/extbody-version.h>
#include "test-server.h"

static char *destdir;   /* the temporary DESTDIR */
static char *prefix;    /* destdir + /usr/local */

/* Run @argv in @cwd with @env; its standard output in @out (nullable), its
 * standard error in @err (nullable). Returns: the exit status, or -1 when it
 * did not exit normally. */
static int
run (const char *cwd, char **env, const char *const *argv, GBytes **out, char **err)
{
  g_autofree char *e = NULL;
  g_autoptr (GError) error = NULL;
  int status = 0;
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                                                 | G_SUBPROCESS_FLAGS_STDERR_PIPE);
  if (env)
    g_subprocess_launcher_set_environ (l, env);
  if (cwd)
    g_subprocess_launcher_set_cwd (l, cwd);
  g_autoptr (GSubprocess) p = g_subprocess_launcher_spawnv (l, argv, &error);
  g_assert_no_error (error);
  g_autoptr (GBytes) ob = NULL;
  g_autoptr (GBytes) eb = NULL;
  g_assert_true (g_subprocess_communicate (p, NULL, NULL, &ob, &eb, &error));
  g_assert_no_error (error);
  status = g_subprocess_get_if_exited (p) ? g_subprocess_get_exit_status (p) : -1;
  e = g_strndup (g_bytes_get_data (eb, NULL), g_bytes_get_size (eb));
  if (status != 0)
    g_test_message ("%s exited %d: %s", argv[0], status, e);
  if (out)
    *out = g_bytes_ref (ob);
  if (err)
    *err = g_steal_pointer (&e);
  return status;
}

static char **
example_env (void)
{
  char **env = g_get_environ ();
  g_autofree char *pc = g_build_filename (prefix, "lib", "pkgconfig", NULL);
  g_autofree char *lib = g_build_filename (prefix, "lib", NULL);
  env = g_environ_setenv (env, "PKG_CONFIG_PATH", pc, TRUE);
  env = g_environ_unsetenv (env, "PKG_CONFIG_LIBDIR");
  env = g_environ_unsetenv (env, "PKG_CONFIG_SYSROOT_DIR");
  env = g_environ_setenv (env, "LD_LIBRARY_PATH", lib, TRUE);
  return env;
}

/* The installed programs find their own library wherever the installation
 * lands (here: a DESTDIR, not the configured prefix), with no
 * LD_LIBRARY_PATH and no ldconfig run: their RPATH is relative to them. */
static void
test_programs_find_library (void)
{
  const char *progs[] = { "bin/extbody", "sbin/extbodyd" };
  for (guint i = 0; i < G_N_ELEMENTS (progs); i++) {
    g_autofree char *path = g_build_filename (prefix, progs[i], NULL);
    if (!g_file_test (path, G_FILE_TEST_IS_EXECUTABLE)) {
      g_test_message ("%s not installed (libmilter missing?)", progs[i]);
      continue;
    }
    char **env = g_get_environ ();
    env = g_environ_unsetenv (env, "LD_LIBRARY_PATH");
    const char *argv[] = { path, "--version", NULL };
    g_autoptr (GBytes) out = NULL;
    g_autofree char *err = NULL;
    int status = run (NULL, env, argv, &out, &err);
    g_strfreev (env);
    g_test_message ("%s --version: %d %s", progs[i], status, err ? err : "");
    g_assert_cmpint (status, ==, 0);
    gsize n = 0;
    const char *text = g_bytes_get_data (out, &n);
    g_autofree char *line = g_strndup (text, n);
    g_assert_nonnull (strstr (line, "GMime"));
  }
}

static void
test_files (void)
{
  const char *must[] = {
    "lib/libextbody.so.2", "lib/libextbody.so", "include/extbody/extbody.h",
    "include/extbody/extbody-version.h", "lib/pkgconfig/extbody-2.pc",
    "share/doc/extbody/examples/resolve-one.c", "share/doc/extbody/examples/Makefile",
    "bin/extbodyc", "share/man/man1/extbodyc.1",
    "libexec/extbody-pipe", "libexec/extbody-pipe-client",
    "bin/extbody-imap-rewrite", "share/man/man1/extbody-imap-rewrite.1",
    "libexec/extbody/extbody-smtpd-filter", "share/man/man8/extbody-smtpd-filter.8",
  };
  for (guint i = 0; i < G_N_ELEMENTS (must); i++) {
    g_autofree char *p = g_build_filename (prefix, must[i], NULL);
    if (!g_file_test (p, G_FILE_TEST_EXISTS))
      g_error ("not installed: /usr/local/%s", must[i]);
  }
  /* the SONAME's link points at the library itself */
  g_autofree char *so1 = g_build_filename (prefix, "lib", "libextbody.so.2", NULL);
  g_assert_true (g_file_test (so1, G_FILE_TEST_IS_SYMLINK));
  g_autofree char *target = g_file_read_link (so1, NULL);
  g_assert_true (g_str_has_prefix (target, "libextbody.so."));
  /* the old path of extbody-imap-rewrite, for the cron jobs that name it:
   * a relative link to the command on PATH */
  g_autofree char *old_imap = g_build_filename (prefix, "libexec", "extbody", "extbody-imap-rewrite", NULL);
  g_assert_true (g_file_test (old_imap, G_FILE_TEST_IS_SYMLINK));
  g_autofree char *imap_target = g_file_read_link (old_imap, NULL);
  g_assert_cmpstr (imap_target, ==, "../../bin/extbody-imap-rewrite");
  g_assert_true (g_file_test (old_imap, G_FILE_TEST_IS_EXECUTABLE));

  g_auto (GStrv) env = example_env ();
  g_autofree char *err = NULL;
  g_autoptr (GBytes) out = NULL;
  const char *argv[] = { "pkg-config", "--modversion", "extbody-2", NULL };
  g_assert_cmpint (run (NULL, env, argv, &out, &err), ==, 0);
  g_autofree char *version = g_strstrip (g_strndup (g_bytes_get_data (out, NULL), g_bytes_get_size (out)));
  g_assert_cmpstr (version, ==, EXTBODY_VERSION_FOR_TESTS);
  g_autoptr (GBytes) cflags = NULL;
  const char *argv2[] = { "pkg-config", "--cflags", "extbody-2", NULL };
  g_assert_cmpint (run (NULL, env, argv2, &cflags, NULL), ==, 0);
  g_autofree char *cf = g_strndup (g_bytes_get_data (cflags, NULL), g_bytes_get_size (cflags));
  g_autofree char *inc = g_build_filename (prefix, "lib", "pkgconfig", "..", "..", "include", NULL);
  if (!strstr (cf, inc))
    g_error ("pkg-config --cflags extbody-2 does not name the installed headers (%s): %s", inc, cf);
}

static void
test_example (void)
{
  /* the example as installed, built in a directory of its own */
  g_autofree char *src = g_build_filename (prefix, "share", "doc", "extbody", "examples", NULL);
  g_autofree char *dir = g_build_filename (destdir, "example", NULL);
  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  const char *files[] = { "resolve-one.c", "Makefile" };
  for (guint i = 0; i < G_N_ELEMENTS (files); i++) {
    g_autofree char *from = g_build_filename (src, files[i], NULL);
    g_autofree char *to = g_build_filename (dir, files[i], NULL);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_assert_true (g_file_get_contents (from, &text, &len, NULL));
    g_assert_true (g_file_set_contents (to, text, (gssize) len, NULL));
  }
  g_auto (GStrv) env = example_env ();
  const char *extra = g_getenv ("EXTBODY_EXAMPLE_CFLAGS");
  g_autofree char *cflags = g_strdup_printf ("CFLAGS=-O1 -g -Wall -Wextra -Werror %s", extra ? extra : "");
  g_autofree char *ldflags = g_strdup_printf ("LDFLAGS=%s", extra ? extra : "");
  const char *make[] = { "make", "CC=cc", cflags, ldflags, NULL };
  g_autofree char *err = NULL;
  if (run (dir, env, make, NULL, &err) != 0)
    g_error ("the example does not build against the installed library: %s", err);

  /* run it against the installed library on the sample message */
  g_autofree char *exe = g_build_filename (dir, "resolve-one", NULL);
  g_autofree char *sample = g_build_filename (g_getenv ("EXTBODY_DATADIR"), "samples",
                                              "references.eml", NULL);
  const char *argv[] = { exe, sample, NULL };
  g_autoptr (GBytes) out = NULL;
  g_clear_pointer (&err, g_free);
  g_assert_cmpint (run (NULL, env, argv, &out, &err), ==, 0);
  g_test_message ("resolve-one: %s", err);
  g_autofree char *version_line = g_strdup_printf ("libextbody %s: 6 references, 3 resolved\n",
                                                   EXTBODY_VERSION_FOR_TESTS);
  g_assert_true (g_str_has_prefix (err, version_line));
  g_assert_nonnull (strstr (err, "part 2: data:image/png;base64,"));
  g_assert_nonnull (strstr (err, ": resolved (image/png, 79 bytes, base64)\n"));
  g_assert_nonnull (strstr (err, "part 5: http://www.example.com/reports/2026/annual-report.pdf: left: fetch-off"));

  /* the message it wrote is the one the command writes */
  const char *cmd[] = { g_getenv ("EXTBODY"), "rewrite", sample, NULL };
  g_autoptr (GBytes) want = NULL;
  g_assert_cmpint (run (NULL, NULL, cmd, &want, NULL), ==, 0);
  g_assert_true (g_bytes_equal (out, want));

  /* and the library it ran is the installed one: ldd resolves it there */
  const char *ldd[] = { "ldd", exe, NULL };
  g_autoptr (GBytes) deps = NULL;
  if (run (NULL, env, ldd, &deps, NULL) == 0) {
    g_autofree char *d = g_strndup (g_bytes_get_data (deps, NULL), g_bytes_get_size (deps));
    g_autofree char *lib = g_build_filename (prefix, "lib", "libextbody.so.2", NULL);
    g_autofree char *line = g_strdup_printf ("libextbody.so.2 => %s ", lib);
    if (!strstr (d, line))
      g_error ("resolve-one does not load the installed libextbody: %s", d);
  }
}

/* The configuration cmake --install puts in place when there is none: the
 * commented example as it is, setting no key (each one is commented out with
 * its default), which extbody config --check takes. */
static void
test_configuration (void)
{
  g_autofree char *conf = g_build_filename (destdir, EXTBODY_CONFIG_PATH, NULL);
  g_autofree char *example = g_build_filename (g_getenv ("EXTBODY_DATADIR"), "extbody.conf.example", NULL);
  g_autofree char *got = NULL, *want = NULL;
  g_assert_true (g_file_get_contents (conf, &got, NULL, NULL));
  g_assert_true (g_file_get_contents (example, &want, NULL, NULL));
  g_assert_cmpstr (got, ==, want);
  g_auto (GStrv) lines = g_strsplit (got, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    if (*lines[i] && *lines[i] != '#' && strcmp (lines[i], "[extbody]") != 0)
      g_error ("%s:%u sets a key: %s", conf, i + 1, lines[i]);
  const char *argv[] = { g_getenv ("EXTBODY"), "config", "--check", "-c", conf, NULL };
  g_autofree char *err = NULL;
  g_autoptr (GBytes) out = NULL;
  g_assert_cmpint (run (NULL, NULL, argv, &out, &err), ==, 0);
  g_assert_true (!err || !*err);   /* silent when valid */
  g_assert_cmpuint (g_bytes_get_size (out), ==, 0);
}

static gboolean
have (const char *program)
{
  g_autofree char *p = g_find_program_in_path (program);
  return p != NULL;
}

static void
remove_tree (const char *path)
{
  const char *argv[] = { "rm", "-rf", path, NULL };
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL, NULL);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  const char *cmake = g_getenv ("CMAKE");
  const char *build = g_getenv ("EXTBODY_BUILD");
  if (!cmake || !build || !g_getenv ("EXTBODY") || !g_getenv ("EXTBODY_DATADIR"))
    test_skip_all ("CMAKE, EXTBODY_BUILD, EXTBODY or EXTBODY_DATADIR is not set (run through ctest)");
  for (guint i = 0; i < 3; i++) {
    const char *need[] = { "cc", "make", "pkg-config" };
    if (!have (need[i])) {
      g_autofree char *why = g_strdup_printf ("%s is not installed", need[i]);
      test_skip_all (why);
    }
  }
  g_autoptr (GError) error = NULL;
  destdir = g_dir_make_tmp ("extbody-install-XXXXXX", &error);
  g_assert_no_error (error);
  prefix = g_build_filename (destdir, "usr", "local", NULL);

  /* cmake --install BUILD --prefix /usr/local, into DESTDIR */
  char **env = g_get_environ ();
  env = g_environ_setenv (env, "DESTDIR", destdir, TRUE);
  const char *install[] = { cmake, "--install", build, "--prefix", "/usr/local", NULL };
  g_autofree char *err = NULL;
  int status = run (NULL, env, install, NULL, &err);
  g_strfreev (env);
  if (status != 0)
    g_error ("cmake --install failed: %s", err);

  g_test_add_func ("/install/files", test_files);
  g_test_add_func ("/install/example", test_example);
  g_test_add_func ("/install/configuration", test_configuration);
  g_test_add_func ("/install/programs-find-their-library", test_programs_find_library);
  int r = g_test_run ();
  remove_tree (destdir);
  g_free (prefix);
  g_free (destdir);
  return r;
}
