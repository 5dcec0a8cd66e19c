/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-teardown.c - a test that dies leaves no server behind. Each case runs a
 * test program with EXTBODY_TEST_ABORT_AFTER_START set, so that it aborts (as
 * a failed assertion does) right after starting its servers, and then checks
 * that none of them is left: the process is gone and its port refuses.
 *   /teardown/server    this program again, as a child that starts httpd.py
 *                       through test_server_start (tests/servers/test-server.c)
 *   /teardown/postfix   test-postfix ($EXTBODY_TEST_POSTFIX) after its Postfix
 *                       instance, milter and httpd are up (root only)
 *   /teardown/sendmail  test-sendmail ($EXTBODY_TEST_SENDMAIL_PROGRAM) after its
 *                       two Sendmail instances and the daemon are up
 *   /teardown/opensmtpd test-opensmtpd ($EXTBODY_TEST_OPENSMTPD_PROGRAM) after
 *                       its smtpd, its sink and the daemon are up */
#include <gio/gio.h>
#include <gio/gunixinputstream.h>
#include <poll.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>
#include "test-server.h"

static char *self;

/* @pid has ended: no such process, or a zombie not yet reaped. */
static gboolean
process_gone (pid_t pid)
{
  if (kill (pid, 0) != 0)
    return errno == ESRCH;
  g_autofree char *path = g_strdup_printf ("/proc/%d/stat", (int) pid);
  g_autofree char *stat = NULL;
  if (!g_file_get_contents (path, &stat, NULL, NULL))
    return TRUE;
  const char *paren = strrchr (stat, ')');
  return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

static gboolean
port_refuses (guint port)
{
  int s = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons ((guint16) port),
                           .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  int rc = connect (s, (struct sockaddr *) &a, sizeof a);
  int err = errno;
  close (s);
  return rc != 0 && err == ECONNREFUSED;
}

/* Within a bound (the watchdog has run by the time the output ended; Postfix's
 * master may take a moment to exit after "postfix stop"). */
static void
assert_pid_gone (int pid)
{
  g_assert_cmpint (pid, >, 1);
  for (int i = 0; i < 600 && !process_gone (pid); i++)
    g_usleep (50000);
  g_assert_true (process_gone (pid));
}

static void
assert_port_closed (guint port)
{
  g_assert_cmpuint (port, >, 0);
  for (int i = 0; i < 600 && !port_refuses (port); i++)
    g_usleep (50000);
  g_assert_true (port_refuses (port));
}

static void
no_core (gpointer data)
{
  (void) data;
  struct rlimit r = { 0, 0 };
  setrlimit (RLIMIT_CORE, &r);
}

/* Run @argv with EXTBODY_TEST_ABORT_AFTER_START=@where; its standard output
 * up to its end (the watchdog holds it until its clean-up is done), or what
 * came within 120 s if something it started holds it open. *@status: the
 * wait status. */
static char *
run_aborting (const char *const *argv, const char *where, int *status)
{
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
  g_subprocess_launcher_setenv (l, "EXTBODY_TEST_ABORT_AFTER_START", where, TRUE);
  g_subprocess_launcher_set_child_setup (l, no_core, NULL, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = g_subprocess_launcher_spawnv (l, argv, &error);
  g_assert_no_error (error);
  int fd = g_unix_input_stream_get_fd (G_UNIX_INPUT_STREAM (g_subprocess_get_stdout_pipe (p)));
  GString *out = g_string_new (NULL);
  gint64 end = g_get_monotonic_time () + 120 * G_USEC_PER_SEC;
  gboolean eof = FALSE;
  while (!eof && g_get_monotonic_time () < end) {
    struct pollfd pfd = { fd, POLLIN, 0 };
    if (poll (&pfd, 1, 1000) <= 0)
      continue;
    char buf[4096];
    ssize_t got = read (fd, buf, sizeof buf);
    if (got > 0)
      g_string_append_len (out, buf, got);
    else if (got == 0 || errno != EINTR)
      eof = TRUE;
  }
  g_subprocess_wait (p, NULL, &error);
  g_assert_no_error (error);
  *status = g_subprocess_get_status (p);
  g_test_message ("output:\n%s%s", out->str, eof ? "" : "(still open after 120 s)\n");
  return g_string_free (out, FALSE);
}

static guint
field (const char *out, const char *name)
{
  g_autofree char *key = g_strdup_printf (" %s=", name);
  const char *p = strstr (out, key);
  g_assert_nonnull (p);
  return (guint) atoi (p + strlen (key));
}

static void
test_server (void)
{
  int status = 0;
  g_autofree char *out = run_aborting ((const char *[]) { self, "--child-server", NULL }, "server", &status);
  g_assert_true (WIFSIGNALED (status));
  g_assert_cmpint (WTERMSIG (status), ==, SIGABRT);
  const char *line = strstr (out, "ABORT server:");
  g_assert_nonnull (line);
  assert_pid_gone ((int) field (line, "pid"));
  assert_port_closed (field (line, "port"));
}

static void
test_postfix (void)
{
  const char *prog = g_getenv ("EXTBODY_TEST_POSTFIX");
  if (!prog) {
    g_test_skip ("EXTBODY_TEST_POSTFIX is not set (run through ctest)");
    return;
  }
  int status = 0;
  g_autofree char *out = run_aborting ((const char *[]) { prog, NULL }, "postfix", &status);
  if (WIFEXITED (status) && WEXITSTATUS (status) == 77) {
    g_test_skip ("test-postfix skips here");
    return;
  }
  g_assert_true (WIFSIGNALED (status));
  g_assert_cmpint (WTERMSIG (status), ==, SIGABRT);
  const char *line = strstr (out, "ABORT postfix:");
  g_assert_nonnull (line);
  assert_pid_gone ((int) field (line, "master"));
  assert_pid_gone ((int) field (line, "milter"));
  assert_pid_gone ((int) field (line, "httpd"));
  assert_port_closed (field (line, "smtp"));
  assert_port_closed (field (line, "http"));
}

/* @env names a test program that aborts at @where with "ABORT @where:" and
 * " NAME=PID" for each of @pids, " NAME=PORT" for each of @ports. */
static void
check_mta (const char *env, const char *where, const char *const *pids, const char *const *ports)
{
  const char *prog = g_getenv (env);
  if (!prog) {
    g_test_skip ("the test program is not named (run through ctest)");
    return;
  }
  int status = 0;
  g_autofree char *out = run_aborting ((const char *[]) { prog, NULL }, where, &status);
  if (WIFEXITED (status) && WEXITSTATUS (status) == 77) {
    g_test_skip ("the test program skips here");
    return;
  }
  g_assert_true (WIFSIGNALED (status));
  g_assert_cmpint (WTERMSIG (status), ==, SIGABRT);
  g_autofree char *head = g_strdup_printf ("ABORT %s:", where);
  const char *line = strstr (out, head);
  g_assert_nonnull (line);
  for (guint i = 0; pids[i]; i++)
    assert_pid_gone ((int) field (line, pids[i]));
  for (guint i = 0; ports[i]; i++)
    assert_port_closed (field (line, ports[i]));
}

static void
test_sendmail (void)
{
  check_mta ("EXTBODY_TEST_SENDMAIL_PROGRAM", "sendmail", (const char *[]) { "shipped", "tempfail", "milter", NULL },
             (const char *[]) { "smtp", "smtp2", NULL });
}

static void
test_opensmtpd (void)
{
  check_mta ("EXTBODY_TEST_OPENSMTPD_PROGRAM", "opensmtpd", (const char *[]) { "smtpd", "sink", "milter", NULL },
             (const char *[]) { "smtp", "sinkport", NULL });
}

int
main (int argc, char **argv)
{
  if (argc == 2 && strcmp (argv[1], "--child-server") == 0) {
    /* the child: start a server the usual way; test_server_start aborts */
    int one = 1;
    g_test_init (&one, &argv, NULL);
    g_autoptr (GError) error = NULL;
    g_autoptr (TestServer) s = test_server_start ("httpd.py", NULL, NULL, TRUE, &error);
    g_assert_no_error (error);
    g_printerr ("EXTBODY_TEST_ABORT_AFTER_START was not honoured (server on port %u)\n", s->port);
    return 1;
  }
  g_test_init (&argc, &argv, NULL);
  self = g_file_read_link ("/proc/self/exe", NULL);
  g_assert_nonnull (self);
  g_test_add_func ("/teardown/server", test_server);
  g_test_add_func ("/teardown/postfix", test_postfix);
  g_test_add_func ("/teardown/sendmail", test_sendmail);
  g_test_add_func ("/teardown/opensmtpd", test_opensmtpd);
  return g_test_run ();
}
