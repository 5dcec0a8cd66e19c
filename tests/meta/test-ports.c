/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-ports.c - the tests' port helpers (tests/servers/test-server.c), which
 * parallel tests (ctest -j) depend on (issue 25: test_free_port handed on a
 * number it had closed, and one test was once given the same port twice):
 *   - test_free_port never gives one process the same port twice;
 *   - test_port_owned_by says whose listener a port is: this process's, not
 *     another's (a server that "came up" on a port another test holds is not
 *     the test's own);
 *   - test_sh_on_free_port starts again on another port when the start script
 *     says its port was taken (exit TEST_PORT_TAKEN), and fails on anything
 *     else. */
#include <glib.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <string.h>
#include <unistd.h>
#include "test-server.h"

static void
test_no_duplicates (void)
{
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < 300; i++) {
    guint p = test_free_port ();
    g_assert_cmpuint (p, >, 0);
    g_assert_false (g_hash_table_contains (seen, GUINT_TO_POINTER (p)));
    g_hash_table_add (seen, GUINT_TO_POINTER (p));
  }
}

static void
test_owned_by (void)
{
  int s = socket (AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t l = sizeof a;
  g_assert_cmpint (bind (s, (struct sockaddr *) &a, sizeof a), ==, 0);
  g_assert_cmpint (getsockname (s, (struct sockaddr *) &a, &l), ==, 0);
  guint port = ntohs (a.sin_port);
  /* bound, not listening: nobody's listener yet */
  g_assert_false (test_port_owned_by (port, getpid ()));
  g_assert_cmpint (listen (s, 4), ==, 0);
  g_assert_true (test_port_owned_by (port, getpid ()));
  g_assert_false (test_port_owned_by (port, getppid ()));
  close (s);
  g_assert_false (test_port_owned_by (port, getpid ()));
}

static void
test_retry_when_taken (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbody-ports-XXXXXX", NULL);
  g_autofree char *count = g_build_filename (dir, "count", NULL);
  /* taken twice, then up: prints the port it was given */
  g_autofree char *cmd = g_strdup_printf (
    "n=$(cat '%s' 2>/dev/null || echo 0); echo $((n+1)) > '%s'; "
    "[ $n -ge 2 ] || exit %d; echo up on {PORT}", count, count, TEST_PORT_TAKEN);
  guint port = 0;
  g_autofree char *out = NULL;
  g_autofree char *ran = test_sh_on_free_port (cmd, &port, &out);
  g_autofree char *want = g_strdup_printf ("up on %u\n", port);
  g_assert_cmpstr (out, ==, want);
  g_autofree char *port_text = g_strdup_printf ("%u", port);
  g_assert_nonnull (strstr (ran, port_text));   /* the command as run names the port */
  g_autofree char *n = NULL;
  g_assert_true (g_file_get_contents (count, &n, NULL, NULL));
  g_assert_cmpstr (n, ==, "3\n");
  g_unlink (count);
  g_rmdir (dir);
}

/* Any other failure is the test's failure, at once, with the output. */
static void
test_other_failure_fails (void)
{
  if (g_test_subprocess ()) {
    guint port = 0;
    g_free (test_sh_on_free_port ("echo broken on {PORT}; exit 3", &port, NULL));
    return;
  }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*exit 3*broken on*");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/ports/no-duplicates", test_no_duplicates);
  g_test_add_func ("/ports/owned-by", test_owned_by);
  g_test_add_func ("/ports/retry-when-taken", test_retry_when_taken);
  g_test_add_func ("/ports/other-failure-fails", test_other_failure_fails);
  return g_test_run ();
}
