/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-sendmail.c - extbodyd as a milter behind a real Sendmail 8.17
 * (Debian's sendmail-bin 8.17.1.9, unpacked: it conflicts with postfix),
 * end to end on 127.0.0.1 through tests/sendmail/sendmail-peer.sh: a minimal
 * .mc of the test's own, built into a .cf with m4 and Debian's sendmail-cf
 * macros, holding the INPUT_MAIL_FILTER line of filters/daemon/sendmail.mc as
 * shipped (only its socket replaced, and its flags in the second instance),
 * delivering root@test.example by a local mailer that writes files into
 * DIR/mail/new. Two instances share the daemon and that directory:
 * "shipped" with the shipped flags (F= empty: a milter that cannot be
 * reached lets the mail through unfiltered, as the Postfix lines'
 * milter_default_action = accept), "tempfail" with F=T.
 *
 * - a message with a data: reference arrives resolved: X-Extbody added, the
 *   part replaced, the body exactly what `extbody rewrite` makes of it, and
 *   the daemon's record under Sendmail's queue id; through both instances;
 * - a message with nothing to resolve arrives byte for byte as sent (below
 *   the Return-Path and Received fields Sendmail puts on top);
 * - 200 messages from 10 concurrent SMTP sessions (tests/exim/send.py --burst)
 *   arrive, each exactly once, each resolved;
 * - the daemon stopped: the shipped flags deliver the message as it came;
 *   F=T tempfails it. Sendmail opens the milter connection when the SMTP
 *   session starts, so with F=T and no daemon the 4xx comes at MAIL FROM
 *   ("451 4.3.2 Please try again later"), not at the end of data;
 * - the daemon killed (SIGKILL) between DATA's 354 and the end of data (the
 *   milter connection open, then broken): F=T answers the end of data with
 *   451 and keeps nothing; the shipped flags deliver the message as it came;
 * - the Debian package's socket layout (the daemon as another user, its
 *   socket 0770 in that user's 0750 directory) passes Sendmail's file
 *   safety checks: a third instance resolves through it.
 *
 * Privilege: run as root (Sendmail's daemon, as Debian starts it, without
 * RunAsUser; the local mailer runs as the recipient, root), in a private UTS
 * and mount namespace (a host name and /etc/hosts of its own, a resolv.conf
 * naming 127.0.0.1: nothing leaves the machine). The daemon runs as root
 * from the build tree, its milter socket in the test's directory.
 * Skipped (exit 77) without root, without unshare, or without the unpacked
 * Sendmail ($EXTBODY_TEST_SENDMAIL, default
 * /opt/extbody-test-sendmail/usr/libexec/sendmail/sendmail, which
 * tests/quickstart.sh provides). Everything it starts is registered with the
 * watchdog (test-server.h). */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test-server.h"
#include "mta-dir.h"
#include "mta-maildir.h"
#include "mta-milter.h"
#include "mta-smtp.h"

static char *dir;          /* everything lives here */
static char *peer;         /* tests/sendmail/sendmail-peer.sh */
static guint port_shipped; /* the instance with the shipped flags */
static guint port_tempfail;/* the instance with F=T */
static MtaMilter *daemon_;
static char *daemon_conf, *daemon_sock, *daemon_log;

static char *
script (const char *dirname, const char *name)
{
  return g_test_build_filename (G_TEST_DIST, dirname, name, NULL);
}

static char *
mail_new (void)
{
  return g_build_filename (dir, "mail", "new", NULL);
}

static void
daemon_start (void)
{
  daemon_ = mta_milter_start (daemon_sock, daemon_conf, daemon_log, NULL);
}

/* One transaction of @msg to @port by smtp-steps.py (with @kill_pid: the
 * daemon killed once DATA was answered): its line, "STEP CODE TEXT". */
static char *
send_steps (guint port, const char *msg, const char *kill_pid)
{
  g_autofree char *file = g_build_filename (dir, "msg.eml", NULL);
  g_assert_true (g_file_set_contents (file, msg, -1, NULL));
  g_autofree char *steps = script ("sendmail", "smtp-steps.py");
  g_autofree char *cmd = g_strdup_printf ("python3 '%s' %u '%s' %s", steps, port, file, kill_pid ? kill_pid : "");
  char *out = NULL;
  g_assert_cmpint (test_sh (cmd, &out), ==, 0);
  g_strchomp (out);
  g_test_message ("%s", out);
  return out;
}

static char *
read_instance_file (const char *instance, const char *name)
{
  g_autofree char *p = g_build_filename (dir, instance, name, NULL);
  char *text = NULL;
  if (!g_file_get_contents (p, &text, NULL, NULL))
    return g_strdup ("");
  return text;
}

static char *
data_message (const char *id)
{
  return g_strdup_printf (
    "From: a@test.example\r\nTo: root@test.example\r\nSubject: data ref\r\n"
    "Date: Fri, 27 Nov 2026 10:00:00 +0000\r\n"
    "Message-ID: <%s@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nintro\r\n"
    ".a line with a leading dot\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
    "\tURL=\"data:text/plain,Hello%%2C%%20\r\n\tSendmail!%%0A\"\r\n\r\nContent-Type: text/plain\r\n\r\n--b--\r\n", id);
}

/* The delivered message holding <@id@test.example>, waited for. */
static char *
delivered (const char *id)
{
  g_autofree char *new = mail_new ();
  g_autofree char *needle = g_strdup_printf ("<%s@test.example>", id);
  char *text = mta_maildir_delivered (new, needle, 30, NULL);
  if (!text) {
    g_autofree char *log = daemon_ ? mta_milter_log (daemon_) : g_strdup ("");
    g_error ("not delivered: %s; daemon log:\n%s", needle, log);
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

static void
check_resolved (const char *id, const char *msg)
{
  g_autofree char *got = delivered (id);
  g_assert_true (g_str_has_prefix (got, "Return-Path: <a@test.example>\n"));
  g_assert_nonnull (strstr (got, "\n\nHello, Sendmail!\n"));
  /* the body exactly what `extbody rewrite` makes of the message */
  g_autofree char *rw_file = g_build_filename (dir, "rw.eml", NULL);
  g_autofree char *want = mta_milter_rewrite (daemon_conf, rw_file, msg, FALSE);
  mta_maildir_assert_resolved (got, test_after_received (got), mta_maildir_body (want));
  g_assert_cmpuint (copies (id), ==, 1);
  /* the daemon's record, under Sendmail's queue id (its Received field's) */
  const char *qid = strstr (got, " with ESMTP id ");
  g_assert_nonnull (qid);
  qid += strlen (" with ESMTP id ");
  g_autofree char *queue_id = g_strndup (qid, strcspn (qid, "\n;"));
  g_autofree char *rec = g_strdup_printf ("queue_id=%s msgid=<%s@test.example> references=1 resolved=1 changed=yes",
                                          queue_id, id);
  g_assert_true (mta_milter_log_wait (daemon_, rec, 1));
}

/* A message with a data: reference, <@id@test.example>, through the instance
 * at @port: accepted, and delivered resolved (check_resolved). */
static void
send_resolved (guint port, const char *id)
{
  g_autofree char *msg = data_message (id);
  g_autofree char *r = send_steps (port, msg, NULL);
  g_assert_true (g_str_has_prefix (r, "END 250 "));
  check_resolved (id, msg);
}

/* (a) resolved through the shipped line */
static void
test_data_reference (void)
{
  send_resolved (port_shipped, "data-1");
}

/* and through the F=T instance, with the daemon up */
static void
test_data_reference_tempfail_flags (void)
{
  send_resolved (port_tempfail, "data-2");
}

/* (b) nothing to resolve: byte for byte below Sendmail's trace fields */
static void
test_unchanged (void)
{
  const char *msg =
    "From: a@test.example\r\nTo: root@test.example\r\nSubject: plain\r\n"
    "Date: Fri, 27 Nov 2026 10:00:00 +0000\r\nMessage-ID: <plain-1@test.example>\r\n"
    "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"x y\"\r\n\r\n"
    "preamble\r\n--x y\r\nContent-Type: text/plain; charset=utf-8\r\n"
    "Content-Transfer-Encoding: 8bit\r\n\r\n"
    ".one dot\r\n..two dots\r\n.\r\ntrailing space \r\n\tleading tab\r\nr\xc3\xa9sum\xc3\xa9\r\n"
    "--x y\r\nContent-Type: message/external-body; access-type=local-file; name=\"/etc/motd\"\r\n\r\n"
    "Content-Type: text/plain\r\n\r\n--x y--\r\nepilogue\r\n";
  g_autofree char *r = send_steps (port_shipped, msg, NULL);
  g_assert_true (g_str_has_prefix (r, "END 250 "));
  g_autofree char *got = delivered ("plain-1");
  g_autofree char *want = test_crlf_to_lf (msg);
  g_assert_cmpstr (test_after_received (got), ==, want);
  g_assert_true (mta_milter_log_wait (daemon_, "msgid=<plain-1@test.example> references=1 resolved=0 changed=no", 1));
}

/* (d) 200 messages from 10 concurrent sessions, each once, each resolved */
static void
test_burst (void)
{
  mta_smtp_burst ("exim", port_shipped, 200, 10, "root@test.example");
  g_autofree char *new = mail_new ();
  mta_maildir_burst_wait (new, 200, 120, mta_maildir_resolved_1_of_1);
  g_assert_cmpuint (mta_milter_log_count (daemon_, "msgid=<burst-"), >=, 200);
}

/* How many messages (qf files) the instance's queue holds now. */
static guint
queued (const char *instance)
{
  g_autofree char *q = g_build_filename (dir, instance, "queue", NULL);
  g_autoptr (GDir) d = g_dir_open (q, 0, NULL);
  g_assert_nonnull (d);
  guint n = 0;
  const char *name;
  while ((name = g_dir_read_name (d)))
    if (g_str_has_prefix (name, "qf"))
      n++;
  return n;
}

/* (c) the daemon stopped: the shipped flags deliver the message as it came;
 * F=T refuses it with 451 at MAIL FROM (the milter connection is made when
 * the session starts) and keeps nothing */
static void
test_daemon_stopped (void)
{
  mta_milter_stopped (&daemon_);
  g_autofree char *msg = data_message ("down-1");
  g_autofree char *r = send_steps (port_shipped, msg, NULL);
  g_assert_true (g_str_has_prefix (r, "END 250 "));
  g_autofree char *got = delivered ("down-1");
  g_autofree char *want = test_crlf_to_lf (msg);
  g_assert_cmpstr (test_after_received (got), ==, want);

  g_autofree char *msg2 = data_message ("down-2");
  g_autofree char *r2 = send_steps (port_tempfail, msg2, NULL);
  g_assert_cmpstr (r2, ==, "MAIL 451 4.3.2 Please try again later");
  g_usleep (500000);
  g_assert_cmpuint (copies ("down-2"), ==, 0);
  g_assert_cmpuint (queued ("tempfail"), ==, 0);
  daemon_start ();
}

/* the daemon killed after DATA's 354: F=T answers the end of data with 451
 * and keeps nothing; the shipped flags deliver the message as it came */
static void
test_daemon_killed_mid_message (void)
{
  g_autofree char *msg = data_message ("killed-1");
  g_autofree char *r = send_steps (port_tempfail, msg, g_subprocess_get_identifier (daemon_->proc));
  g_assert_true (g_str_has_prefix (r, "END 451 "));
  mta_milter_killed (&daemon_);
  g_usleep (500000);
  g_assert_cmpuint (copies ("killed-1"), ==, 0);
  g_assert_cmpuint (queued ("tempfail"), ==, 0);

  daemon_start ();
  g_autofree char *msg2 = data_message ("killed-2");
  g_autofree char *r2 = send_steps (port_shipped, msg2, g_subprocess_get_identifier (daemon_->proc));
  g_assert_true (g_str_has_prefix (r2, "END 250 "));
  mta_milter_killed (&daemon_);
  g_autofree char *got = delivered ("killed-2");
  g_autofree char *want = test_crlf_to_lf (msg2);
  g_assert_cmpstr (test_after_received (got), ==, want);
  g_assert_cmpuint (copies ("killed-2"), ==, 1);
  daemon_start ();
}


/* The Debian package's layout: the daemon as a user of its own (here
 * nobody), its socket (mode 0770, the default milter_umask 007) in a
 * directory of that user's (mode 0750), as /var/spool/postfix/extbody is:
 * Sendmail's file safety checks accept it, and a third instance with the
 * shipped line resolves through it. */
static void
test_package_layout (void)
{
  /* Debian's base-passwd always has them */
  g_assert_cmpint (test_sh ("getent passwd nobody >/dev/null && getent group nogroup >/dev/null", NULL), ==, 0);
  g_autofree char *pkg = g_build_filename (dir, "pkg", NULL);
  g_assert_cmpint (g_mkdir (pkg, 0750), ==, 0);
  g_autofree char *run = mta_dir_public (dir, "pkg-run");
  g_autofree char *own = g_strdup_printf ("chown nobody:nogroup '%s' && chmod 0750 '%s'", pkg, pkg);
  g_assert_cmpint (test_sh (own, NULL), ==, 0);
  /* a copy of the daemon (and its library) that nobody can run: the build
   * tree may be under root's 0700 home */
  g_autofree char *copy = test_copy_for_everyone (g_getenv ("EXTBODYD"), run, NULL, 0755);
  g_autofree char *libdir = g_path_get_dirname (g_getenv ("EXTBODY"));
  g_autofree char *lib = g_build_filename (libdir, "libextbody.so.2", NULL);
  g_free (test_copy_for_everyone (lib, run, NULL, 0644));
  g_autofree char *conf = g_build_filename (run, "pkg.conf", NULL);
  g_assert_true (g_file_set_contents (conf, "[extbody]\nfetch = off\n", -1, NULL));
  g_chmod (conf, 0644);
  g_autofree char *sock = g_build_filename (pkg, "extbody.sock", NULL);
  g_autofree char *spec = g_strdup_printf ("unix:%s", sock);
  g_autofree char *log = g_build_filename (run, "pkg.log", NULL);
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
  g_subprocess_launcher_set_stderr_file_path (l, log);
  /* the build tree's RUNPATH names ../../src from the program: the copy
   * finds the library copied beside it through LD_LIBRARY_PATH */
  g_subprocess_launcher_setenv (l, "LD_LIBRARY_PATH", run, TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) d = g_subprocess_launcher_spawn (l, &error, "setpriv", "--reuid=nobody", "--regid=nogroup",
                                                           "--clear-groups", copy, "-p", spec, "-c", conf, "-o",
                                                           "http_socket=", "-o", "dovecot_filter_socket=", NULL);
  g_assert_no_error (error);
  g_autofree char *kill_d = g_strdup_printf ("kill -KILL %s", g_subprocess_get_identifier (d));
  guint wd = test_watchdog_add (kill_d);
  for (int t = 0; t < 60 * 50 && !g_file_test (sock, G_FILE_TEST_EXISTS); t++)
    g_usleep (20000);
  if (!g_file_test (sock, G_FILE_TEST_EXISTS)) {
    g_autofree char *text = NULL;
    g_file_get_contents (log, &text, NULL, NULL);
    g_error ("the daemon as nobody did not start: %s", text ? text : "");
  }
  GStatBuf st;
  g_assert_cmpint (g_stat (sock, &st), ==, 0);
  g_assert_cmpuint (st.st_mode & 0777, ==, 0770);
  g_assert_cmpuint (st.st_uid, !=, 0);

  g_autofree char *shipped = g_test_build_filename (G_TEST_DIST, "..", "filters", "daemon", "sendmail.mc", NULL);
  g_autofree char *up = g_strdup_printf ("sh '%s' up '%s' package {PORT} '%s' - '%s'", peer, dir, sock, shipped);
  g_autofree char *down = g_strdup_printf ("sh '%s' down '%s' package", peer, dir);
  guint wd_up = test_watchdog_add (down);
  guint port = 0;
  g_free (test_sh_on_free_port (up, &port, NULL));
  g_autofree char *start_log = read_instance_file ("package", "start.log");
  g_assert_null (strstr (start_log, "unsafe"));
  g_autofree char *msg = data_message ("pkg-1");
  g_autofree char *r = send_steps (port, msg, NULL);
  g_assert_true (g_str_has_prefix (r, "END 250 "));
  g_autofree char *got = delivered ("pkg-1");
  g_assert_nonnull (strstr (got, "\nX-Extbody: resolved 1 of 1 external-body reference\n"));
  g_assert_nonnull (strstr (got, "\n\nHello, Sendmail!\n"));
  test_sh (down, NULL);
  test_watchdog_remove (wd_up);
  g_subprocess_send_signal (d, SIGTERM);
  g_subprocess_wait (d, NULL, NULL);
  test_watchdog_remove (wd);
}

static void
instance_up (const char *name, const char *flags, guint *port)
{
  g_autofree char *shipped = g_test_build_filename (G_TEST_DIST, "..", "filters", "daemon", "sendmail.mc", NULL);
  g_autofree char *up = g_strdup_printf ("sh '%s' up '%s' %s {PORT} '%s' '%s' '%s'", peer, dir, name, daemon_sock,
                                         flags, shipped);
  g_free (test_sh_on_free_port (up, port, NULL));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  const char *sendmail = g_getenv ("EXTBODY_TEST_SENDMAIL");
  if (!sendmail || !*sendmail)
    sendmail = "/opt/extbody-test-sendmail/usr/libexec/sendmail/sendmail";
  if (geteuid () != 0)
    test_skip_all ("needs root (Sendmail's daemon, a private UTS and mount namespace)");
  if (!g_file_test (sendmail, G_FILE_TEST_IS_EXECUTABLE))
    test_skip_all ("no unpacked Sendmail (EXTBODY_TEST_SENDMAIL, default "
                   "/opt/extbody-test-sendmail/usr/libexec/sendmail/sendmail: "
                   "sh tests/quickstart.sh test unpacks Debian's sendmail-bin there)");
  if (!g_getenv ("EXTBODY") || !g_getenv ("EXTBODYD"))
    test_skip_all ("EXTBODY or EXTBODYD is not set (run through ctest)");
  g_setenv ("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", FALSE);
  g_setenv ("SENDMAIL", sendmail, TRUE);
  if (!g_getenv ("SENDMAIL_CF")) {
    /* .../usr/libexec/sendmail/sendmail -> .../usr/share/sendmail/cf */
    g_autofree char *d = g_path_get_dirname (sendmail);
    g_autofree char *cf = g_build_filename (d, "..", "..", "share", "sendmail", "cf", NULL);
    g_setenv ("SENDMAIL_CF", cf, TRUE);
  }
  if (test_sh ("unshare --uts --mount --propagation private true >/dev/null 2>&1", NULL) != 0)
    test_skip_all ("unshare --uts --mount does not work here (Sendmail's host name lives in a private namespace)");
  if (test_sh ("command -v m4 >/dev/null", NULL) != 0)
    test_skip_all ("no m4 (apt-get install m4) to build the Sendmail configuration");

  guint wd_dir = 0;
  dir = mta_dir_make ("sendmail", &wd_dir);
  peer = script ("sendmail", "sendmail-peer.sh");

  daemon_conf = g_build_filename (dir, "daemon.conf", NULL);
  g_assert_true (g_file_set_contents (daemon_conf, "[extbody]\nfetch = off\n", -1, NULL));
  daemon_sock = g_build_filename (dir, "milter.sock", NULL);
  daemon_log = g_build_filename (dir, "daemon.log", NULL);
  daemon_start ();

  g_autofree char *down_s = g_strdup_printf ("sh '%s' down '%s' shipped", peer, dir);
  g_autofree char *down_t = g_strdup_printf ("sh '%s' down '%s' tempfail", peer, dir);
  guint wd_s = test_watchdog_add (down_s);
  guint wd_t = test_watchdog_add (down_t);
  instance_up ("shipped", "-", &port_shipped);
  instance_up ("tempfail", "T", &port_tempfail);
  {
    g_autofree char *p1 = read_instance_file ("shipped", "sendmail.pid");
    g_autofree char *p2 = read_instance_file ("tempfail", "sendmail.pid");
    g_autofree char *info = g_strdup_printf ("shipped=%d tempfail=%d milter=%s smtp=%u smtp2=%u", atoi (p1), atoi (p2),
                                             g_subprocess_get_identifier (daemon_->proc), port_shipped, port_tempfail);
    test_abort_point ("sendmail", info);
  }

  g_test_add_func ("/sendmail/1-data-reference", test_data_reference);
  g_test_add_func ("/sendmail/1b-data-reference-F=T", test_data_reference_tempfail_flags);
  g_test_add_func ("/sendmail/2-no-reference-byte-identical", test_unchanged);
  g_test_add_func ("/sendmail/3-200-messages-10-sessions", test_burst);
  g_test_add_func ("/sendmail/4-daemon-stopped", test_daemon_stopped);
  g_test_add_func ("/sendmail/5-daemon-killed-mid-message", test_daemon_killed_mid_message);
  g_test_add_func ("/sendmail/6-package-socket-layout", test_package_layout);
  int rc = g_test_run ();

  test_sh (down_s, NULL);
  test_sh (down_t, NULL);
  test_watchdog_remove (wd_s);
  test_watchdog_remove (wd_t);
  g_clear_pointer (&daemon_, mta_milter_free);
  mta_dir_remove (dir, wd_dir);
  g_free (daemon_conf);
  g_free (daemon_sock);
  g_free (daemon_log);
  g_free (peer);
  g_free (dir);
  return rc;
}
