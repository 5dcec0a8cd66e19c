/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-opensmtpd.c - extbody-smtpd-filter (filters/opensmtpd/) behind a real
 * OpenSMTPD 6.8 (Debian's opensmtpd 6.8.0p2, unpacked: it conflicts with
 * postfix), end to end on 127.0.0.1 through tests/opensmtpd/opensmtpd-peer.sh
 * (a private smtpd.conf: listen with filter "extbody" proc-exec the filter,
 * relay everything to sink.py, which keeps each message as a file), the
 * filter talking to a private extbodyd's HTTP listener
 * (tests/lib/mta-milter.h):
 *
 * - a message with a data: reference arrives resolved: X-Extbody added, the
 *   part replaced, the body exactly what `extbody rewrite` makes of it, the
 *   daemon's record under the smtpd session's id;
 * - a message with nothing to resolve, dots at line starts included, arrives
 *   byte for byte as sent (below the Received field smtpd puts on top);
 * - a message over the filter's -x arrives as it came, its reference left;
 * - 100 messages from 10 concurrent SMTP sessions (tests/exim/send.py --burst)
 *   arrive, each exactly once, each resolved;
 * - the daemon stopped: a message arrives as it came (not lost), the filter's
 *   line in smtpd's log; a daemon that accepts the connection and never
 *   answers: the message arrives as it came once the filter's -t passes;
 *   the daemon started again: resolved again, the same filter process.
 *
 * Privilege: root (smtpd must start as root; it runs in a private mount and
 * UTS namespace with its users added to a private /etc/passwd, see
 * opensmtpd-peer.sh). smtpd runs the filter as its user opensmtpd, so the
 * filter is copied into a directory of the test's own that everyone can read,
 * and the daemon's socket is made with milter_umask 000. Skipped (exit 77)
 * without root, without unshare, or without the unpacked OpenSMTPD
 * ($EXTBODY_TEST_OPENSMTPD, default /opt/extbody-test-opensmtpd/usr/sbin/smtpd,
 * which tests/quickstart.sh provides). Everything it starts is registered
 * with the watchdog (test-server.h). */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "test-server.h"
#include "mta-dir.h"
#include "mta-maildir.h"
#include "mta-milter.h"
#include "mta-smtp.h"

#define FILTER_TIMEOUT 3     /* the filter's -t */
#define FILTER_MAX 100000    /* the filter's -x */

static char *dir;
static char *peer;
static guint smtp_port;
static MtaMilter *daemon_;
static char *daemon_conf, *daemon_sock, *daemon_log, *http_sock;
static GSubprocess *sink;

static char *
script (const char *name)
{
  return g_test_build_filename (G_TEST_DIST, "opensmtpd", name, NULL);
}

static char *
mail_new (void)
{
  return g_build_filename (dir, "sink", "new", NULL);
}

static char *
read_text (const char *rel)
{
  g_autofree char *p = g_build_filename (dir, rel, NULL);
  char *text = NULL;
  if (!g_file_get_contents (p, &text, NULL, NULL))
    return g_strdup ("");
  return text;
}

/* A delivered message without smtpd's Received field (its first field, with
 * its continuation lines). */
static const char *
after_received (const char *text)
{
  g_assert_true (g_str_has_prefix (text, "Received: from [127.0.0.1] (mta.test.example [127.0.0.1])\n"));
  const char *p = text;
  do {
    p = strchr (p, '\n') + 1;
  } while (*p == ' ' || *p == '\t');
  return p;
}

static void
daemon_start (void)
{
  g_autofree char *set = g_strdup_printf ("http_socket=unix:%s", http_sock);
  daemon_ = mta_milter_start (daemon_sock, daemon_conf, daemon_log,
                              (const char *const[]) { "-o", set, NULL });
  for (int t = 0; t < 60 * 50 && !g_file_test (http_sock, G_FILE_TEST_EXISTS); t++)
    g_usleep (20000);
}

/* One message to smtpd; whether it was accepted. */
static int
send_msg (const char *msg)
{
  g_autofree char *file = g_build_filename (dir, "msg.eml", NULL);
  return mta_smtp_send (smtp_port, file, msg, "root@test.example");
}

static char *
delivered (const char *id, int seconds)
{
  g_autofree char *new = mail_new ();
  g_autofree char *needle = g_strdup_printf ("<%s@test.example>", id);
  char *text = mta_maildir_delivered (new, needle, seconds, NULL);
  if (!text) {
    g_autofree char *log = read_text ("smtpd/smtpd.log");
    g_autofree char *dlog = daemon_ ? mta_milter_log (daemon_) : g_strdup ("");
    g_error ("not delivered: %s\nsmtpd.log (end):\n%s\ndaemon log:\n%s", needle,
             strlen (log) > 6000 ? log + strlen (log) - 6000 : log, dlog);
  }
  return text;
}

static guint
copies (const char *id)
{
  g_autofree char *new = mail_new ();
  g_autofree char *needle = g_strdup_printf ("<%s@test.example>", id);
  return mta_maildir_copies (new, needle, NULL);
}

static char *
data_message (const char *id)
{
  return g_strdup_printf (
    "From: a@test.example\r\nTo: root@test.example\r\nSubject: data ref\r\n"
    "Date: Fri, 27 Nov 2026 10:00:00 +0000\r\n"
    "Message-ID: <%s@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nintro\r\n"
    ".a line with a leading dot\r\n..and one with two\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
    "\tURL=\"data:text/plain,Hello%%2C%%20\r\n\tOpenSMTPD!%%0A\"\r\n\r\nContent-Type: text/plain\r\n\r\n--b--\r\n", id);
}

/* smtpd's id of the session whose message @text is: the daemon's queue_id
 * is the filter's session id, which smtpd's log pairs with the message id of
 * the Received field ("with ESMTP id ...") */
static void
check_resolved (const char *id, const char *msg)
{
  g_autofree char *got = delivered (id, 30);
  g_assert_nonnull (strstr (got, "\n\nHello, OpenSMTPD!\n"));
  /* the body exactly what `extbody rewrite` makes of the message */
  g_autofree char *rw_file = g_build_filename (dir, "rw.eml", NULL);
  g_autofree char *want = mta_milter_rewrite (daemon_conf, rw_file, msg, FALSE);
  mta_maildir_assert_resolved (got, after_received (got), mta_maildir_body (want));
  g_assert_cmpuint (copies (id), ==, 1);
  g_autofree char *rec = g_strdup_printf ("msgid=<%s@test.example> references=1 resolved=1 changed=yes", id);
  g_assert_true (mta_milter_log_wait (daemon_, rec, 1));
}

/* smtpd runs the filter, once, as its own user (opensmtpd), not root */
static void
test_filter_user (void)
{
  g_autofree char *cmd = g_strdup_printf ("ps -e -o uid=,comm=,args= | grep '%s/run/[e]xtbody-smtpd-filter'", dir);
  g_autofree char *outp = NULL;
  g_assert_cmpint (test_sh (cmd, &outp), ==, 0);
  g_test_message ("%s", outp);
  g_auto (GStrv) lines = g_strsplit (g_strstrip (outp), "\n", -1);
  guint filters = 0;
  for (guint i = 0; lines[i]; i++) {
    g_assert_cmpint (atoi (lines[i]), !=, 0);
    if (strstr (lines[i], " extbody-smtpd-f"))
      filters++;
  }
  g_assert_cmpuint (filters, ==, 1);
}

static void
test_data_reference (void)
{
  g_autofree char *msg = data_message ("data-1");
  g_assert_cmpint (send_msg (msg), ==, 0);
  check_resolved ("data-1", msg);
}

/* The message as sent, below smtpd's Received field. */
static void
check_as_it_came (const char *id, const char *msg)
{
  g_autofree char *got = delivered (id, 30);
  g_autofree char *want = test_crlf_to_lf (msg);
  g_assert_cmpstr (after_received (got), ==, want);
  g_assert_cmpuint (copies (id), ==, 1);
}

static void
test_unchanged (void)
{
  const char *msg =
    "From: a@test.example\r\nTo: root@test.example\r\nSubject: plain\r\n"
    "Date: Fri, 27 Nov 2026 10:00:00 +0000\r\nMessage-ID: <plain-1@test.example>\r\n"
    "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"x y\"\r\n\r\n"
    "preamble\r\n--x y\r\nContent-Type: text/plain; charset=utf-8\r\n"
    "Content-Transfer-Encoding: 8bit\r\n\r\n"
    ".one dot\r\n..two dots\r\n. \r\na|bar|line\r\ntrailing space \r\n\tleading tab\r\nr\xc3\xa9sum\xc3\xa9\r\n\r\n\r\n"
    "--x y\r\nContent-Type: message/external-body; access-type=local-file; name=\"/etc/motd\"\r\n\r\n"
    "Content-Type: text/plain\r\n\r\n--x y--\r\nepilogue\r\n";
  g_assert_cmpint (send_msg (msg), ==, 0);
  check_as_it_came ("plain-1", msg);
  g_assert_true (mta_milter_log_wait (daemon_, "msgid=<plain-1@test.example> references=1 resolved=0 changed=no", 1));
}

/* over -x: passes as it came, its reference left, the daemon never asked */
static void
test_oversize (void)
{
  g_autoptr (GString) msg = g_string_new (NULL);
  g_autofree char *head = data_message ("big-1");
  const char *cut = strstr (head, "--b\r\nContent-Type: message/external-body");
  g_string_append_len (msg, head, cut - head);
  for (int i = 0; msg->len < FILTER_MAX + 10000; i++)
    g_string_append_printf (msg, "%s%d padding padding padding padding padding padding padding\r\n",
                            i % 7 ? "" : ".", i);
  g_string_append (msg, cut);
  g_assert_cmpint (send_msg (msg->str), ==, 0);
  check_as_it_came ("big-1", msg->str);
  g_assert_cmpuint (mta_milter_log_count (daemon_, "msgid=<big-1@test.example>"), ==, 0);
  g_autofree char *log = read_text ("smtpd/smtpd.log");
  g_assert_nonnull (strstr (log, "status=passed-as-it-came reason=\"a message over 100000 bytes (-x)\""));
}

static void
test_burst (void)
{
  mta_smtp_burst ("exim", smtp_port, 100, 10, "root@test.example");
  g_autofree char *new = mail_new ();
  mta_maildir_burst_wait (new, 100, 120, mta_maildir_resolved_1_of_1);
}

/* the daemon stopped: as it came; then a socket that never answers: as it
 * came after -t; then the daemon again: resolved, the same filter */
static void
test_daemon_down (void)
{
  mta_milter_stopped (&daemon_);
  g_autofree char *msg = data_message ("down-1");
  g_assert_cmpint (send_msg (msg), ==, 0);
  check_as_it_came ("down-1", msg);
  g_autofree char *log = read_text ("smtpd/smtpd.log");
  g_assert_nonnull (strstr (log, "status=passed-as-it-came"));
  g_assert_nonnull (strstr (log, "reason=\"cannot connect to unix:"));

  /* a listener that never answers */
  g_unlink (http_sock);
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un un = { .sun_family = AF_UNIX };
  g_strlcpy (un.sun_path, http_sock, sizeof un.sun_path);
  g_assert_cmpint (bind (fd, (struct sockaddr *) &un, sizeof un), ==, 0);
  g_chmod (http_sock, 0777);
  g_assert_cmpint (listen (fd, 16), ==, 0);
  g_autofree char *msg2 = data_message ("stall-1");
  gint64 t0 = g_get_monotonic_time ();
  g_assert_cmpint (send_msg (msg2), ==, 0);
  double took = (double) (g_get_monotonic_time () - t0) / 1e6;
  g_test_message ("accepted after %.1f s", took);
  g_assert_cmpfloat (took, >=, FILTER_TIMEOUT - 0.5);
  g_assert_cmpfloat (took, <, FILTER_TIMEOUT + 20);
  check_as_it_came ("stall-1", msg2);
  g_autofree char *log2 = read_text ("smtpd/smtpd.log");
  g_assert_nonnull (strstr (log2, "reason=\"no whole answer within 3 s (-t)\""));
  close (fd);
  g_unlink (http_sock);

  daemon_start ();
  g_autofree char *msg3 = data_message ("up-again-1");
  g_assert_cmpint (send_msg (msg3), ==, 0);
  check_resolved ("up-again-1", msg3);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  const char *smtpd = g_getenv ("EXTBODY_TEST_OPENSMTPD");
  if (!smtpd || !*smtpd)
    smtpd = "/opt/extbody-test-opensmtpd/usr/sbin/smtpd";
  if (geteuid () != 0)
    test_skip_all ("needs root (smtpd starts as root, in a private mount and UTS namespace)");
  if (!g_file_test (smtpd, G_FILE_TEST_IS_EXECUTABLE))
    test_skip_all ("no unpacked OpenSMTPD (EXTBODY_TEST_OPENSMTPD, default /opt/extbody-test-opensmtpd/usr/sbin/smtpd: "
                   "sh tests/quickstart.sh test unpacks Debian's opensmtpd there)");
  if (!g_getenv ("EXTBODY") || !g_getenv ("EXTBODYD") || !g_getenv ("EXTBODY_SMTPD_FILTER"))
    test_skip_all ("EXTBODY, EXTBODYD or EXTBODY_SMTPD_FILTER is not set (run through ctest)");
  g_setenv ("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", FALSE);
  g_setenv ("SMTPD", smtpd, TRUE);
  if (test_sh ("unshare --uts --mount --propagation private true >/dev/null 2>&1", NULL) != 0)
    test_skip_all ("unshare --uts --mount does not work here (smtpd's paths and users live in a private namespace)");

  guint wd_dir = 0;
  dir = mta_dir_make ("opensmtpd", &wd_dir);
  peer = script ("opensmtpd-peer.sh");

  daemon_conf = g_build_filename (dir, "daemon.conf", NULL);
  /* every session's message comes from smtpd's one user: as filters/README.md
   * says, http_max_peer_connections raised to twice http_max_connections (16),
   * or past 8 messages at their final "." at once the rest are answered 503
   * and go on as they came (seen with 10 sessions under AddressSanitizer) */
  g_assert_true (g_file_set_contents (daemon_conf, "[extbody]\nfetch = off\nmilter_umask = 000\n"
                                      "http_max_peer_connections = 32\n", -1, NULL));
  daemon_sock = g_build_filename (dir, "milter.sock", NULL);
  daemon_log = g_build_filename (dir, "daemon.log", NULL);
  http_sock = g_build_filename (dir, "http.sock", NULL);
  daemon_start ();

  /* the sink smtpd relays to */
  g_autofree char *sink_dir = g_build_filename (dir, "sink", NULL);
  g_autofree char *port_file = g_build_filename (dir, "sink.port", NULL);
  g_autofree char *sink_py = script ("sink.py");
  g_autoptr (GError) error = NULL;
  sink = g_subprocess_new (G_SUBPROCESS_FLAGS_NONE, &error, "python3", sink_py, port_file, sink_dir, NULL);
  g_assert_no_error (error);
  g_autofree char *kill_sink = g_strdup_printf ("kill -KILL %s", g_subprocess_get_identifier (sink));
  guint wd_sink = test_watchdog_add (kill_sink);
  for (int t = 0; t < 60 * 50 && !g_file_test (port_file, G_FILE_TEST_EXISTS); t++)
    g_usleep (20000);
  g_autofree char *sink_port = read_text ("sink.port");
  g_assert_cmpint (atoi (sink_port), >, 0);

  /* smtpd runs the filter as opensmtpd: a copy everyone can read */
  g_autofree char *run = mta_dir_public (dir, "run");
  g_autofree char *filter = test_copy_for_everyone (g_getenv ("EXTBODY_SMTPD_FILTER"), run, NULL, 0755);
  g_autofree char *filter_cmd = g_strdup_printf ("%s -v -s unix:%s -t %d -x %d", filter, http_sock, FILTER_TIMEOUT,
                                                 FILTER_MAX);
  g_autofree char *smtpd_dir = g_build_filename (dir, "smtpd", NULL);
  g_autofree char *up = g_strdup_printf ("sh '%s' up '%s' {PORT} %d '%s'", peer, smtpd_dir, atoi (sink_port), filter_cmd);
  g_autofree char *down = g_strdup_printf ("sh '%s' down '%s'", peer, smtpd_dir);
  guint wd_smtpd = test_watchdog_add (down);
  g_free (test_sh_on_free_port (up, &smtp_port, NULL));
  {
    g_autofree char *pid = read_text ("smtpd/smtpd.pid");
    g_autofree char *info = g_strdup_printf ("smtpd=%d sink=%s milter=%s smtp=%u sinkport=%d", atoi (pid),
                                             g_subprocess_get_identifier (sink),
                                             g_subprocess_get_identifier (daemon_->proc), smtp_port, atoi (sink_port));
    test_abort_point ("opensmtpd", info);
  }

  g_test_add_func ("/opensmtpd/0-filter-as-smtpd-user", test_filter_user);
  g_test_add_func ("/opensmtpd/1-data-reference", test_data_reference);
  g_test_add_func ("/opensmtpd/2-no-reference-byte-identical", test_unchanged);
  g_test_add_func ("/opensmtpd/3-over-max-size-as-it-came", test_oversize);
  g_test_add_func ("/opensmtpd/4-100-messages-10-sessions", test_burst);
  g_test_add_func ("/opensmtpd/5-daemon-down-as-it-came", test_daemon_down);
  int rc = g_test_run ();

  test_sh (down, NULL);
  test_watchdog_remove (wd_smtpd);
  g_subprocess_force_exit (sink);
  g_subprocess_wait (sink, NULL, NULL);
  g_clear_object (&sink);
  test_watchdog_remove (wd_sink);
  g_clear_pointer (&daemon_, mta_milter_free);
  mta_dir_remove (dir, wd_dir);
  g_free (daemon_conf);
  g_free (daemon_sock);
  g_free (daemon_log);
  g_free (http_sock);
  g_free (peer);
  g_free (dir);
  return rc;
}
