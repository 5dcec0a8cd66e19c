/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-roundtrip.c - externalize, then resolve, a generated mailbox (issue 20).
 *
 * gen-corpus.py --seed 1 --count 200 makes the mbox (--ext-fraction 0: no
 * external-body of its own, so that every reference the rewrite resolves is
 * one externalize wrote, and the original is what the rewrite must give
 * back); a directory store is served by a private nginx on 127.0.0.1;
 * roundtrip.py runs `extbody externalize --mbox` (externalize_min_size = 20K),
 * a second externalize (nothing changes), `extbody rewrite --mbox --fetch` and
 * compares every message with the standard library's email package: same
 * structure, same headers apart from the restored parts', same decoded bytes,
 * and the messages with nothing externalized byte-identical. Once plain, once
 * with --fallback (the reference inside a multipart/alternative). Skipped
 * (exit 77) without nginx or /usr/bin/python3. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include "test-server.h"

static char *dir;
static char *corpus;

static void
roundtrip (gboolean fallback)
{
  g_autofree char *work = g_build_filename (dir, fallback ? "fallback" : "plain", NULL);
  g_autofree char *store = g_build_filename (work, "store", NULL);
  g_assert_cmpint (g_mkdir_with_parents (store, 0755), ==, 0);
  g_autoptr (TestNginx) nginx = test_nginx_start (store);
  g_assert_nonnull (nginx);
  g_autofree char *script = g_test_build_filename (G_TEST_DIST, "integration", "roundtrip.py", NULL);
  g_autofree char *cmd = g_strdup_printf (
    "/usr/bin/python3 '%s' --extbody '%s' --corpus '%s' --work '%s' --store '%s' "
    "--base-url http://127.0.0.1:%u/%s 2>&1",
    script, g_getenv ("EXTBODY"), corpus, work, store, nginx->port, fallback ? " --fallback" : "");
  g_autofree char *out = NULL;
  int rc = test_sh (cmd, &out);
  g_test_message ("%s", out ? out : "");
  g_assert_cmpint (rc, ==, 0);
  g_assert_nonnull (strstr (out, "with parts externalized"));
}

static void
test_plain (void)
{
  roundtrip (FALSE);
}

static void
test_fallback (void)
{
  roundtrip (TRUE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (!g_getenv ("EXTBODY"))
    test_skip_all ("EXTBODY is not set (run through ctest)");
  if (!g_file_test ("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE))
    test_skip_all ("/usr/bin/python3 is not installed");
  if (!g_file_test ("/usr/sbin/nginx", G_FILE_TEST_IS_EXECUTABLE))
    test_skip_all ("nginx is not installed (apt-get install nginx-light)");
  dir = g_dir_make_tmp ("extbody-roundtrip-XXXXXX", NULL);
  g_assert_nonnull (dir);
  g_chmod (dir, 0755);
  g_autofree char *rm_dir = g_strdup_printf ("rm -rf '%s'", dir);
  guint wd_dir = test_watchdog_add (rm_dir);
  corpus = g_build_filename (dir, "corpus.mbox", NULL);
  g_autofree char *gen = g_test_build_filename (G_TEST_DIST, "bench", "gen-corpus.py", NULL);
  g_autofree char *cmd = g_strdup_printf ("/usr/bin/python3 '%s' --seed 1 --count 200 --ext-fraction 0 "
                                          "--out '%s' -q", gen, corpus);
  g_assert_cmpint (test_sh (cmd, NULL), ==, 0);

  g_test_add_func ("/roundtrip/mbox", test_plain);
  g_test_add_func ("/roundtrip/mbox-fallback", test_fallback);
  int rc = g_test_run ();
  test_sh (rm_dir, NULL);
  test_watchdog_remove (wd_dir);
  g_free (corpus);
  g_free (dir);
  return rc;
}
