/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-postfix-lifecycle.c - extbodyd's reload and stop behind a real
 * Postfix (a private instance on 127.0.0.1, tests/postfix/pf-peer.sh, with
 * milter_default_action = tempfail), with mail in flight: messages whose
 * reference waits at a gate of the test's HTTP server (httpd.py /hold) are
 * in the milter's end-of-message callback while the signal comes.
 *
 *   SIGHUP    messages in flight finish with the configuration they began
 *             with (fetch = on: both references resolved), messages after it
 *             get the new one (fetch = off: the data: reference only); a
 *             configuration that does not load (a bad value, a key set
 *             twice) is logged and the old one stays; a hundred messages under a storm of SIGHUPs all arrive.
 *   SIGTERM   the socket goes at once, a message sent meanwhile is deferred
 *             (451), the messages in flight finish and are delivered, then
 *             the daemon exits 0 and removes its PID file; the deferred
 *             message, sent again to a daemon started again, is delivered.
 *             Messages held past milter_stop_timeout are cut off: deferred,
 *             and delivered once sent again.
 *
 * Every message the test sends is delivered exactly once in the end, and
 * every delivered message carries the milter's X-Extbody field: nothing lost,
 * nothing passed unfiltered. Needs root (Postfix refuses otherwise): skipped
 * (exit 77) when not root or when Postfix is not installed. Every process it
 * starts is registered with the watchdog (test-server.h). */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>
#include "test-server.h"
#include "mta-dir.h"
#include "mta-milter.h"
#include "mta-maildir.h"
#include "mta-postfix.h"
#include "mta-smtp.h"

static char *dir;
static char *pfdir;
static char *maildir_new;
static char *conf;          /* the milter's configuration file */
static char *sock;          /* its unix socket */
static char *pidfile;
static guint smtp_port;
static guint http_port;
static TestServer *httpd;

static MtaMilter *milter;
static guint n_started;
/* every message sent, by Message-ID: how it must arrive ("2 of 2", ...) */
static GHashTable *expected;

static void
write_conf (const char *text)
{
  g_assert_true (g_file_set_contents (conf, text, -1, NULL));
}

static char *
milter_log (void)
{
  return mta_milter_log (milter);
}

/* Wait (at most 60 s) until the milter's log holds @needle @n times. */
static gboolean
log_wait (const char *needle, guint n)
{
  return mta_milter_log_wait (milter, needle, n);
}

static void
milter_start (const char *const *extra)
{
  g_assert_null (milter);
  g_autofree char *log = g_strdup_printf ("%s/milter-%u.log", dir, ++n_started);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  const char *base[] = { "-P", pidfile, "--allow-network", "127.0.0.1/32", "-o", "fetch_timeout=50",
                         "-o", "message_deadline=55",
                         /* Postfix's smtpd (user postfix) connects to a socket
                          * made by root: every local user may */
                         "-o", "milter_umask=000" };
  for (guint i = 0; i < G_N_ELEMENTS (base); i++)
    g_ptr_array_add (argv, (char *) base[i]);
  for (guint i = 0; extra && extra[i]; i++)
    g_ptr_array_add (argv, (char *) extra[i]);
  g_ptr_array_add (argv, NULL);
  milter = mta_milter_start (sock, conf, log, (const char *const *) argv->pdata);
}

static void
milter_signal (int sig)
{
  mta_milter_signal (milter, sig);
}

/* Wait for the milter to end. Returns: its exit status (-1: killed). */
static int
milter_wait (void)
{
  int status = mta_milter_wait (milter, TRUE);
  g_clear_pointer (&milter, mta_milter_free);
  return status;
}

/* A message with Message-ID <@id@test.example>, an http reference to @path
 * on the test server and a data: one. */
static char *
message (const char *id, const char *path)
{
  return mta_smtp_message_http_data (id, http_port, path);
}

/* Start sending @msg (id @id) to Postfix; send_end tells how it went. */
static GSubprocess *
send_start (const char *id, const char *msg)
{
  g_autofree char *file = g_strdup_printf ("%s/%s.eml", dir, id);
  g_assert_true (g_file_set_contents (file, msg, -1, NULL));
  g_autofree char *send = mta_postfix_script ("send.py");
  g_autofree char *port = g_strdup_printf ("%u", smtp_port);
  g_autoptr (GError) error = NULL;
  GSubprocess *p = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE,
                                     &error, "python3", send, port, file, NULL);
  g_assert_no_error (error);
  return p;
}

/* Returns: 0 accepted, 75 deferred (a 4xx reply), else a failure. */
static int
send_end (GSubprocess *p)
{
  g_autoptr (GError) error = NULL;
  g_subprocess_wait (p, NULL, &error);
  g_assert_no_error (error);
  int status = g_subprocess_get_if_exited (p) ? g_subprocess_get_exit_status (p) : -1;
  g_object_unref (p);
  return status;
}

static int
send_now (const char *id, const char *msg)
{
  return send_end (send_start (id, msg));
}

static void
expect (const char *id, const char *resolved)
{
  g_hash_table_insert (expected, g_strdup_printf ("<%s@test.example>", id), g_strdup (resolved));
}

/* The delivered copies of <@id@test.example>, waiting (at most 60 s) for one
 * when @wait. Returns: (transfer full): the first, or NULL; @n: how many. */
static char *
delivered (const char *id, gboolean wait, guint *n)
{
  g_autofree char *mid = g_strdup_printf ("Message-ID: <%s@test.example>\n", id);
  for (int t = 0; t < 60 * 20; t++) {
    char *first = NULL;
    *n = mta_maildir_copies (maildir_new, mid, &first);
    if (first || !wait)
      return first;
    g_usleep (50000);
  }
  return NULL;
}

/* <@id@test.example> arrived once, filtered, with @resolved ("2 of 2") in
 * its X-Extbody field. */
static void
assert_delivered (const char *id, const char *resolved)
{
  guint n = 0;
  g_autofree char *got = delivered (id, TRUE, &n);
  if (!got)
    g_test_message ("%s: not delivered", id);
  g_assert_nonnull (got);
  g_autofree char *field = g_strdup_printf ("\nX-Extbody: resolved %s external-body reference", resolved);
  if (!strstr (got, field))
    g_test_message ("%s:\n%s", id, got);
  g_assert_nonnull (strstr (got, field));
  g_assert_cmpuint (n, ==, 1);
}

static guint
held (const char *gate)
{
  g_autofree char *path = g_strdup_printf ("/held?gate=%s", gate);
  return (guint) test_http_get_number (http_port, path);
}

/* Wait (at most 60 s) until @n requests wait at @gate: @n messages are in
 * the milter's end of message, fetching. */
static void
wait_held (const char *gate, guint n)
{
  for (int t = 0; t < 60 * 50 && held (gate) < n; t++)
    g_usleep (20000);
  g_assert_cmpuint (held (gate), ==, n);
}

static void
open_gate (const char *gate)
{
  g_autofree char *path = g_strdup_printf ("/open?gate=%s", gate);
  test_http_get_number (http_port, path);
}

#define N_IN_FLIGHT 4

static const char *conf_a = "[extbody]\nfetch = on\n";
static const char *conf_b = "[extbody]\nfetch = off\n";

/* SIGHUP with N_IN_FLIGHT messages fetching: they finish under the old
 * configuration (fetch = on), a message after the reload gets the new one
 * (fetch = off). */
static void
test_reload_in_flight (void)
{
  GSubprocess *senders[N_IN_FLIGHT];
  for (guint i = 0; i < N_IN_FLIGHT; i++) {
    g_autofree char *id = g_strdup_printf ("reload-%u", i);
    g_autofree char *path = g_strdup_printf ("/hold?gate=reload&n=%u", i);
    g_autofree char *m = message (id, path);
    senders[i] = send_start (id, m);
    expect (id, "2 of 2");
  }
  wait_held ("reload", N_IN_FLIGHT);

  write_conf (conf_b);
  milter_signal (SIGHUP);
  g_assert_true (log_wait ("SIGHUP: reloaded configuration from ", 1));
  g_assert_true (log_wait ("(fetch = off)", 1));

  /* with the others still in flight: the new configuration */
  g_autofree char *m = message ("after-reload", "/text");
  g_assert_cmpint (send_now ("after-reload", m), ==, 0);
  expect ("after-reload", "1 of 2");
  assert_delivered ("after-reload", "1 of 2");
  g_assert_cmpuint (held ("reload"), ==, N_IN_FLIGHT);

  open_gate ("reload");
  for (guint i = 0; i < N_IN_FLIGHT; i++) {
    g_assert_cmpint (send_end (senders[i]), ==, 0);
    g_autofree char *id = g_strdup_printf ("reload-%u", i);
    assert_delivered (id, "2 of 2");
    guint n = 0;
    g_autofree char *got = delivered (id, FALSE, &n);
    g_autofree char *body = g_strdup_printf ("\n\nheld %u\n", i);
    g_assert_nonnull (strstr (got, body));
  }
  g_test_message ("reload: %u messages in flight, all delivered with the configuration they began with",
                  N_IN_FLIGHT);
}

/* A configuration that does not load (a bad value, a key set twice): logged,
 * naming the key (and both lines); the old one stays in force and the daemon
 * serves on. */
static void
test_reload_bad (void)
{
  write_conf ("[extbody]\nfetch = on\nallow_networks = 10.0.0.0/33\n");
  milter_signal (SIGHUP);
  g_assert_true (log_wait ("SIGHUP: reload failed: ", 1));
  g_autofree char *log = milter_log ();
  const char *line = strstr (log, "SIGHUP: reload failed: ");
  g_assert_nonnull (strstr (line, "allow_networks"));
  g_assert_nonnull (strstr (line, "keeping the old configuration"));
  g_autofree char *m = message ("after-bad-reload", "/text");
  g_assert_cmpint (send_now ("after-bad-reload", m), ==, 0);
  expect ("after-bad-reload", "1 of 2");
  assert_delivered ("after-bad-reload", "1 of 2");

  /* a key set twice (an administrator's line, the old shipped default
   * further down): refused the same way, in one line naming both lines; the
   * old configuration (fetch = off) stays, not the last line's fetch = on */
  write_conf ("[extbody]\nfetch = off\nmax_parts = 5000\n\n# Fetch http, https and ftp URLs.\nfetch = on\n");
  milter_signal (SIGHUP);
  g_assert_true (log_wait ("SIGHUP: reload failed: ", 2));
  g_autofree char *log2 = milter_log ();
  const char *line2 = strstr (strstr (log2, "SIGHUP: reload failed: ") + 1, "SIGHUP: reload failed: ");
  g_autofree char *want = g_strdup_printf ("SIGHUP: reload failed: %s:6: fetch is set a second time (first at %s:2): "
                                           "set each key once; keeping the old configuration\n", conf, conf);
  g_test_message ("%s", line2);
  g_assert_true (g_str_has_prefix (line2, want));
  g_autofree char *m2 = message ("after-twice-reload", "/text");
  g_assert_cmpint (send_now ("after-twice-reload", m2), ==, 0);
  expect ("after-twice-reload", "1 of 2");
  assert_delivered ("after-twice-reload", "1 of 2");
}

static void
burst_done (GObject *source, GAsyncResult *res, gpointer data)
{
  g_subprocess_wait_finish (G_SUBPROCESS (source), res, NULL);
  *(gboolean *) data = TRUE;
}

/* 100 messages from 10 sessions under a storm of SIGHUPs: every one arrives,
 * filtered, and the daemon is still up (libmilter never took a SIGHUP for a
 * stop). */
static void
test_reload_storm (void)
{
  write_conf (conf_a);
  GSubprocess *burst = mta_smtp_burst_start ("postfix", smtp_port, 100, 10, NULL);
  guint hups = 0;
  gboolean done = FALSE;
  g_subprocess_wait_async (burst, NULL, burst_done, &done);
  while (!done) {
    milter_signal (SIGHUP);
    hups++;
    g_usleep (20000);
    while (g_main_context_iteration (NULL, FALSE))
      ;
  }
  mta_smtp_burst_sent (burst, 100);
  g_object_unref (burst);
  for (guint i = 0; i < 100; i++) {
    g_autofree char *id = g_strdup_printf ("burst-%u", i);
    assert_delivered (id, "1 of 1");
    expect (id, "1 of 1");
  }
  g_assert_true (log_wait ("SIGHUP: reloaded configuration from ", 2));
  g_autofree char *log = milter_log ();
  g_assert_null (strstr (log, "stopp"));
  g_test_message ("reload storm: %u SIGHUPs, 100 messages delivered filtered", hups);
}

/* SIGTERM with N_IN_FLIGHT messages fetching. */
static void
test_stop_in_flight (void)
{
  write_conf (conf_a);
  milter_signal (SIGHUP);
  g_assert_true (log_wait ("SIGHUP: reloaded configuration from ", 3));
  GSubprocess *senders[N_IN_FLIGHT];
  for (guint i = 0; i < N_IN_FLIGHT; i++) {
    g_autofree char *id = g_strdup_printf ("stop-%u", i);
    g_autofree char *path = g_strdup_printf ("/hold?gate=stop&n=%u", i);
    g_autofree char *m = message (id, path);
    senders[i] = send_start (id, m);
    expect (id, "2 of 2");
  }
  wait_held ("stop", N_IN_FLIGHT);
  g_assert_true (g_file_test (pidfile, G_FILE_TEST_EXISTS));

  gint64 t0 = g_get_monotonic_time ();
  milter_signal (SIGTERM);
  g_autofree char *stopping = g_strdup_printf ("SIGTERM: stopping: %u messages in flight", N_IN_FLIGHT);
  g_assert_true (log_wait (stopping, 1));
  /* no connection is taken any more: the socket is gone at once */
  for (int t = 0; t < 60 * 50 && g_file_test (sock, G_FILE_TEST_EXISTS); t++)
    g_usleep (20000);
  g_assert_false (g_file_test (sock, G_FILE_TEST_EXISTS));
  /* a message sent now is deferred by Postfix (milter_default_action =
   * tempfail), not accepted unfiltered */
  g_autofree char *m = message ("during-stop", "/text");
  g_assert_cmpint (send_now ("during-stop", m), ==, 75);
  expect ("during-stop", "2 of 2");
  /* the messages in flight are still waited for */
  g_assert_cmpuint (held ("stop"), ==, N_IN_FLIGHT);
  g_assert_true (g_file_test (pidfile, G_FILE_TEST_EXISTS));

  open_gate ("stop");
  for (guint i = 0; i < N_IN_FLIGHT; i++)
    g_assert_cmpint (send_end (senders[i]), ==, 0);
  int status = milter_wait ();
  double secs = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  g_assert_cmpint (status, ==, 0);
  g_assert_false (g_file_test (pidfile, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (sock, G_FILE_TEST_EXISTS));
  for (guint i = 0; i < N_IN_FLIGHT; i++) {
    g_autofree char *id = g_strdup_printf ("stop-%u", i);
    assert_delivered (id, "2 of 2");
  }
  guint n = 0;
  g_autofree char *none = delivered ("during-stop", FALSE, &n);
  g_assert_null (none);

  /* started again, the deferred message is sent again (as its sender's MTA
   * would) and delivered, filtered */
  milter_start ((const char *[]) { "-o", "milter_stop_timeout=2", NULL });
  g_assert_cmpint (send_now ("during-stop", m), ==, 0);
  assert_delivered ("during-stop", "2 of 2");
  g_test_message ("stop: %u messages in flight delivered, 1 sent meanwhile deferred then delivered, "
                  "lost 0, exit 0 %.2f s after SIGTERM (the gate opened on the way)", N_IN_FLIGHT, secs);
}

/* SIGTERM with messages held past milter_stop_timeout (2 s): cut off, so
 * deferred by Postfix; sent again to a daemon started again, delivered. */
static void
test_stop_timeout (void)
{
  const guint n_cut = 2;
  GSubprocess *senders[2];
  for (guint i = 0; i < n_cut; i++) {
    g_autofree char *id = g_strdup_printf ("cut-%u", i);
    g_autofree char *path = g_strdup_printf ("/hold?gate=cut&n=%u", i);
    g_autofree char *m = message (id, path);
    senders[i] = send_start (id, m);
    expect (id, "2 of 2");
  }
  wait_held ("cut", n_cut);
  gint64 t0 = g_get_monotonic_time ();
  milter_signal (SIGTERM);
  int status = milter_wait ();
  double secs = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  g_assert_cmpint (status, ==, 0);
  g_assert_false (g_file_test (pidfile, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (sock, G_FILE_TEST_EXISTS));
  guint deferred = 0;
  for (guint i = 0; i < n_cut; i++) {
    int s = send_end (senders[i]);
    g_assert_cmpint (s, ==, 75);
    deferred++;
  }
  open_gate ("cut");
  milter_start (NULL);
  for (guint i = 0; i < n_cut; i++) {
    g_autofree char *id = g_strdup_printf ("cut-%u", i);
    guint n = 0;
    g_autofree char *none = delivered (id, FALSE, &n);
    g_assert_null (none);
    g_autofree char *path = g_strdup_printf ("/hold?gate=cut&n=%u", i);
    g_autofree char *m = message (id, path);
    g_assert_cmpint (send_now (id, m), ==, 0);
    assert_delivered (id, "2 of 2");
  }
  g_test_message ("stop past milter_stop_timeout=2: %u messages in flight cut off and deferred, "
                  "delivered once sent again; exit 0 %.2f s after SIGTERM", deferred, secs);
}

/* Over everything the test sent: each message delivered exactly once, and
 * no delivered message without the milter's field. */
static void
test_nothing_lost_nothing_unfiltered (void)
{
  guint lost = 0, unfiltered = 0, total = 0;
  g_autoptr (GDir) d = g_dir_open (maildir_new, 0, NULL);
  g_assert_nonnull (d);
  const char *name;
  while ((name = g_dir_read_name (d))) {
    g_autofree char *p = g_build_filename (maildir_new, name, NULL);
    g_autofree char *text = NULL;
    g_assert_true (g_file_get_contents (p, &text, NULL, NULL));
    total++;
    if (!strstr (text, "\nX-Extbody: resolved "))
      unfiltered++;
  }
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init (&it, expected);
  while (g_hash_table_iter_next (&it, &key, &value)) {
    g_autofree char *id = g_strndup ((const char *) key + 1, strlen (key) - strlen ("@test.example>") - 1);
    guint n = 0;
    G_GNUC_UNUSED g_autofree char *got = delivered (id, FALSE, &n);
    if (n != 1)
      lost++;
  }
  mta_maildir_assert_accounted (g_hash_table_size (expected), total, lost, unfiltered);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  mta_postfix_require ("EXTBODYD", NULL);
  guint wd_dir = 0;
  dir = mta_dir_make ("pflife", &wd_dir);
  pfdir = g_build_filename (dir, "pf", NULL);
  maildir_new = mta_postfix_maildir_new (pfdir);
  conf = g_build_filename (dir, "extbody.conf", NULL);
  sock = g_build_filename (dir, "milter.sock", NULL);
  pidfile = g_build_filename (dir, "milter.pid", NULL);
  expected = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr (GError) error = NULL;

  httpd = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);
  http_port = httpd->port;

  write_conf (conf_a);
  milter_start (NULL);

  g_autofree char *spec = g_strdup_printf ("unix:%s", sock);
  guint wd_pf = mta_postfix_up (pfdir, spec, "tempfail", &smtp_port);

  g_test_add_func ("/postfix-lifecycle/1-reload-with-messages-in-flight", test_reload_in_flight);
  g_test_add_func ("/postfix-lifecycle/2-reload-bad-configuration-keeps-the-old", test_reload_bad);
  g_test_add_func ("/postfix-lifecycle/3-reload-storm-under-load", test_reload_storm);
  g_test_add_func ("/postfix-lifecycle/4-stop-with-messages-in-flight", test_stop_in_flight);
  g_test_add_func ("/postfix-lifecycle/5-stop-past-milter-stop-timeout", test_stop_timeout);
  g_test_add_func ("/postfix-lifecycle/6-nothing-lost-nothing-unfiltered", test_nothing_lost_nothing_unfiltered);
  int rc = g_test_run ();

  mta_postfix_down (pfdir, wd_pf);
  if (milter) {
    milter_signal (SIGTERM);
    milter_wait ();
  }
  g_clear_pointer (&httpd, test_server_stop);
  g_hash_table_unref (expected);
  mta_dir_remove (dir, wd_dir);
  return rc;
}
