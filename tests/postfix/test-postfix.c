/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-postfix.c - extbodyd behind a real Postfix (a private instance on
 * 127.0.0.1 under a temporary directory, tests/postfix/pf-peer.sh), delivering
 * to a Maildir: data: and http references arrive resolved, mail without
 * references arrives byte for byte as sent, a reference that never answers
 * still arrives (unchanged) within the MTA's timeouts, 200 messages from 10
 * concurrent SMTP sessions each arrive exactly once, and with the milter
 * stopped milter_default_action applies. The after-queue filter through
 * pipe(8): extbody-pipe, and extbody-pipe-client (extbodyc against a private
 * daemon's http_socket: a data: reference arrives as `extbody rewrite
 * --filter` writes it, 200 messages from 10 sessions each once, the same
 * with the daemon reloaded 4 times while they come, with the daemon stopped
 * the message arrives as it came, and so it does, once, with the daemon
 * killed while that message's reference is being fetched). Needs root (Postfix refuses
 * otherwise): skipped (exit 77) when not root or when Postfix is not
 * installed. Every server and Postfix instance it starts is registered with
 * the watchdog (test-server.h), so a failed assertion leaves none running. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>
#include "test-server.h"
#include "mta-dir.h"
#include "mta-milter.h"
#include "mta-maildir.h"
#include "mta-postfix.h"
#include "mta-smtp.h"

static char *dir;          /* everything lives here */
static char *pfdir;        /* the Postfix instance */
static char *maildir_new;
static guint smtp_port;
static MtaMilter *milter;
static TestServer *httpd;
static guint http_port;

static int
send_file (const char *msg)
{
  g_autofree char *file = g_build_filename (dir, "msg.eml", NULL);
  return mta_postfix_send (NULL, NULL, smtp_port, file, msg);
}

/* The delivered file holding @needle, waiting up to @seconds. */
static char *
delivered (const char *needle, int seconds)
{
  return mta_maildir_delivered (maildir_new, needle, seconds, NULL);
}


static void
test_data_reference (void)
{
  const char *m =
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: data ref\r\n"
    "Message-ID: <data-1@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nintro\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
    "\tURL=\"data:text/plain,Hello%2C%20\r\n\tPostfix!%0A\"\r\n\r\nContent-Type: text/plain\r\n\r\n--b--\r\n";
  g_assert_cmpint (send_file (m), ==, 0);
  g_autofree char *got = delivered ("<data-1@test.example>", 30);
  g_assert_nonnull (got);
  g_test_message ("%s", got);
  g_assert_nonnull (strstr (got, "\n\nHello, Postfix!\n"));
  g_assert_nonnull (strstr (got, "X-Extbody: resolved 1 of 1 external-body reference\n"));
  g_assert_null (strstr (got, "external-body;"));
  g_assert_nonnull (strstr (got, "--b\nContent-Type: text/plain\n\nintro\n--b\n"));
}

/* issue 25: a person's multipart/alternative of their own words and a
 * reference. The reference is replaced, the words stay (the alternative is
 * not extbody's own fallback). */
#define PERSON_MSG(id)                                                                            \
  "From: a@test.example\r\nTo: b@test.example\r\nSubject: words and a reference\r\n"          \
  "Message-ID: <" id "@test.example>\r\nMIME-Version: 1.0\r\n"                                 \
  "Content-Type: multipart/alternative; boundary=\"zz\"\r\n\r\n"                              \
  "--zz\r\nContent-Type: text/plain\r\n\r\nThe words a person wrote.\r\n"                    \
  "--zz\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,hello%20world\"\r\n" \
  "\r\nContent-Type: text/plain\r\n\r\n--zz--\r\n"

static void
assert_person_words (const char *got)
{
  g_assert_nonnull (got);
  g_assert_nonnull (strstr (got, "\n--zz\nContent-Type: text/plain\n\nThe words a person wrote.\n--zz\n"));
  g_assert_nonnull (strstr (got, "\n\nhello world"));
  g_assert_nonnull (strstr (got, "Content-Type: multipart/alternative; boundary=\"zz\"\n"));
  g_assert_null (strstr (got, "external-body;"));
}

static void
test_person_words (void)
{
  g_assert_cmpint (send_file (PERSON_MSG ("person-1")), ==, 0);
  g_autofree char *got = delivered ("<person-1@test.example>", 30);
  assert_person_words (got);
  g_assert_nonnull (strstr (got, "X-Extbody: resolved 1 of 1 external-body reference\n"));
}

static void
test_http_reference (void)
{
  g_autofree char *m = g_strdup_printf (
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: http ref\r\n"
    "Message-ID: <http-1@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
    "\tURL=\"http://127.0.0.1:%u/text\"\r\n\r\nContent-Type: text/plain\r\n\r\n--b--\r\n", http_port);
  g_assert_cmpint (send_file (m), ==, 0);
  g_autofree char *got = delivered ("<http-1@test.example>", 30);
  g_assert_nonnull (got);
  g_assert_nonnull (strstr (got, "\n\nhello from the test server\n"));
}

static void
test_unchanged (void)
{
  const char *m =
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: nothing to resolve\r\n"
    "Message-ID: <plain-1@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/alternative;\r\n  boundary=\"odd  folding\"\r\n\r\n"
    "--odd  folding\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
    "caf\xc3\xa9   \r\n--odd  folding--\r\n";
  g_assert_cmpint (send_file (m), ==, 0);
  g_autofree char *got = delivered ("<plain-1@test.example>", 30);
  g_assert_nonnull (got);
  g_autofree char *want = test_crlf_to_lf (m);
  g_assert_cmpstr (test_after_received (got), ==, want);
}

/* Forged trace fields (any case, folded, twice) are removed by a real
 * Postfix on the milter's request, from a message without references (the
 * rest byte for byte as sent) and from one with a reference (one X-Extbody
 * of the milter's own left). */
static void
test_forged_trace (void)
{
  const char *forged = "x-extbody: resolved 9 of 9 external-body references\r\n"
                       "X-EXTBODY-Resolved: data:,forged;\r\n\tfolded\r\n"
                       "X-Extbody: forged\r\n";
  const char *plain = "From: a@test.example\r\nTo: b@test.example\r\nSubject: forged trace\r\n"
                      "Message-ID: <forged-1@test.example>\r\nContent-Type: text/plain\r\n\r\nhello\r\n";
  g_autofree char *m = g_strconcat (forged, plain, NULL);
  g_assert_cmpint (send_file (m), ==, 0);
  g_autofree char *got = delivered ("<forged-1@test.example>", 30);
  g_assert_nonnull (got);
  g_autofree char *want = test_crlf_to_lf (plain);
  g_assert_cmpstr (test_after_received (got), ==, want);

  const char *ref =
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: forged trace and a reference\r\n"
    "Message-ID: <forged-2@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,resolved\"\r\n\r\n"
    "Content-Type: text/plain\r\n\r\n--b--\r\n";
  g_autofree char *m2 = g_strconcat (forged, ref, NULL);
  g_assert_cmpint (send_file (m2), ==, 0);
  g_autofree char *got2 = delivered ("<forged-2@test.example>", 30);
  g_assert_nonnull (got2);
  g_test_message ("%s", got2);
  g_assert_nonnull (strstr (got2, "\n\nresolved\n"));
  g_assert_null (g_strstr_len (got2, -1, "forged;"));
  g_assert_null (strstr (got2, "9 of 9"));
  g_assert_null (strstr (got2, "X-Extbody: forged"));
  g_assert_null (strstr (got2, "X-EXTBODY"));
  /* in the top-level header, the milter's own field is the only one */
  const char *end = strstr (got2, "\n\n");
  g_assert_nonnull (end);
  g_autofree char *header = g_strndup (got2, (gsize) (end - got2 + 1));
  const char *x = strstr (header, "X-Extbody: resolved 1 of 1 external-body reference\n");
  g_assert_nonnull (x);
  g_assert_null (g_strstr_len (header, -1, "X-Extbody-"));
  g_assert_true (x == strstr (header, "X-Extbody"));
  g_assert_null (strstr (x + 1, "X-Extbody"));
}

static void
test_stalled (void)
{
  g_autofree char *m = g_strdup_printf (
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: stalled\r\n"
    "Message-ID: <stall-1@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
    "\tURL=\"http://127.0.0.1:%u/stall\"\r\n\r\nContent-Type: text/plain\r\n\r\n--b--\r\n", http_port);
  gint64 t0 = g_get_monotonic_time ();
  g_assert_cmpint (send_file (m), ==, 0);
  g_autofree char *got = delivered ("<stall-1@test.example>", 30);
  g_assert_nonnull (got);
  g_assert_cmpint (g_get_monotonic_time () - t0, <, 10 * G_USEC_PER_SEC);   /* milter_content_timeout */
  g_autofree char *want = test_crlf_to_lf (m);
  /* the reference is left as it was; only the trace field is not added */
  g_assert_cmpstr (test_after_received (got), ==, want);
}

static int burst_wait = 60;   /* seconds for the 200 to arrive */

/* send.py sending 200 messages from 10 concurrent SMTP sessions, not waited
 * for. */
static GSubprocess *
burst_start (void)
{
  return mta_smtp_burst_start ("postfix", smtp_port, 200, 10, NULL);
}

/* The 200 of burst_start @sender delivered, each exactly once, each resolved
 * (its body "burst I", the reference's data: URL decoded, and the daemon's
 * X-Extbody field). */
static void
burst_check (GSubprocess *sender)
{
  mta_smtp_burst_sent (sender, 200);
  mta_maildir_burst_wait (maildir_new, 200, burst_wait, mta_maildir_resolved_1_of_1);
}

static void
test_burst (void)
{
  g_autoptr (GSubprocess) p = burst_start ();
  burst_check (p);
}

/* Remove the burst messages burst_check counted, so that the next burst is
 * counted alone. */
static void
burst_clear (void)
{
  mta_maildir_burst_clear (maildir_new);
}

static void
test_milter_stopped (void)
{
  mta_milter_stopped (&milter);
  g_assert_cmpint (mta_postfix_set (pfdir, "milter_default_action=accept"), ==, 0);
  g_usleep (6 * G_USEC_PER_SEC);   /* libmilter's own shutdown delay */
  const char *m =
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: no milter\r\n"
    "Message-ID: <nomilter-1@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\r\n\r\n"
    "Content-Type: text/plain\r\n\r\n--b--\r\n";
  g_assert_cmpint (send_file (m), ==, 0);
  g_autofree char *got = delivered ("<nomilter-1@test.example>", 30);
  g_assert_nonnull (got);
  g_autofree char *want = test_crlf_to_lf (m);
  g_assert_cmpstr (test_after_received (got), ==, want);
}


/* The after-queue alternative: a second instance whose smtpd has
 * content_filter=extbody:dummy, a pipe(8) service running extbody-pipe as
 * nobody, re-injection through sendmail -G -i and pickup (not filtered again). */
static void
test_pipe (void)
{
  g_autofree char *pf2 = g_build_filename (dir, "pf2", NULL);
  guint port2 = 0;
  guint wd = mta_postfix_up (pf2, "", "accept", &port2);
  /* pipe(8) runs the filter as nobody, who may not reach the checkout (root's
   * 0700 home) nor the build tree: what it runs and reads is copied into a
   * directory of the test's own that everyone can read */
  g_autofree char *run = mta_dir_public (dir, "pipe-run");
  g_autofree char *pipe_src = g_test_build_filename (G_TEST_DIST, "..", "filters", "pipe", "extbody-pipe", NULL);
  g_autofree char *pipe = test_copy_for_everyone (pipe_src, run, NULL, 0755);
  g_autofree char *extbody = test_copy_for_everyone (g_getenv ("EXTBODY"), run, NULL, 0755);
  g_autofree char *conf = g_build_filename (run, "pipe.conf", NULL);
  g_assert_true (g_file_set_contents (conf, "[extbody]\nfetch = off\n", -1, NULL));
  g_chmod (conf, 0644);
  /* the copy stands alone (no library from the build tree) and nobody can run it */
  g_autofree char *check = g_strdup_printf (
    "setpriv --reuid=nobody --regid=nogroup --clear-groups -- '%s' --version >/dev/null && "
    "setpriv --reuid=nobody --regid=nogroup --clear-groups -- test -r '%s' -a -x '%s'",
    extbody, conf, pipe);
  g_assert_cmpint (test_sh (check, NULL), ==, 0);
  g_autofree char *ldd = g_strdup_printf ("ldd '%s'", extbody);
  g_autofree char *libs = NULL;
  test_sh (ldd, &libs);
  g_assert_nonnull (libs);
  g_assert_null (strstr (libs, g_getenv ("G_TEST_BUILDDIR") ? g_getenv ("G_TEST_BUILDDIR") : "/nonexistent/"));
  g_autofree char *svc = g_strdup_printf ("extbody unix - n n - 10 pipe flags=FRq user=nobody null_sender= "
                                          "argv=%s -c %s -e %s -q ${queue_id} -f ${sender} -- ${recipient}",
                                          pipe, conf, extbody);
  mta_postfix_after_queue (pf2, port2, svc);

  guint saved = smtp_port;
  g_autofree char *saved_new = maildir_new;
  smtp_port = port2;
  maildir_new = mta_postfix_maildir_new (pf2);
  const char *m =
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: through the pipe\r\n"
    "X-Extbody: resolved 5 of 5 external-body references (forged)\r\n"
    "Message-ID: <pipe-1@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,Hello%2C%20pipe!%0A\"\r\n\r\n"
    "Content-Type: text/plain\r\n\r\n--b--\r\n";
  g_assert_cmpint (send_file (m), ==, 0);
  g_autofree char *got = delivered ("<pipe-1@test.example>", 30);
  if (!got) {
    g_autofree char *log = NULL;
    g_autofree char *lp = g_build_filename (pf2, "log", "maillog", NULL);
    g_file_get_contents (lp, &log, NULL, NULL);
    g_test_message ("maillog:\n%s", log ? log : "(none)");
  }
  g_assert_nonnull (got);
  /* flags=F: the message reaches the filter starting with a From_ line; it is
   * one message on standard input, resolved and re-injected whole (it used to
   * be rewritten in place as an mbox, and an empty message re-injected) */
  g_assert_nonnull (strstr (got, "\n\nHello, pipe!\n"));
  g_assert_null (strstr (got, "external-body;"));
  g_assert_nonnull (strstr (got, "Subject: through the pipe\n"));
  g_test_message ("delivered through the pipe:\n%s", got);
  /* the forged trace field is gone (strip_trace_fields) */
  g_assert_null (strstr (got, "(forged)"));
  /* and the field extbody adds, as the milter does */
  g_assert_nonnull (strstr (got, "\nX-Extbody: resolved 1 of 1 external-body reference\n"));
  /* exactly one copy: re-injected mail is not filtered again */
  g_usleep (G_USEC_PER_SEC);
  g_assert_cmpuint (mta_maildir_copies (maildir_new, "<pipe-1@test.example>", NULL), ==, 1);
  /* a person's words beside a reference stay through the pipe too */
  g_assert_cmpint (send_file (PERSON_MSG ("pipe-person")), ==, 0);
  g_autofree char *person = delivered ("<pipe-person@test.example>", 30);
  assert_person_words (person);
  g_free (maildir_new);
  maildir_new = g_steal_pointer (&saved_new);
  smtp_port = saved;
  mta_postfix_down (pf2, wd);
}

/* extbody-pipe-client: a second instance whose smtpd has
 * content_filter=extbody:dummy and a pipe(8) service running the script as
 * nobody, extbodyc reaching a private daemon whose http_socket is in the
 * test's directory (mode 0777: milter_umask 000), re-injection through
 * sendmail -G -i and pickup. The cases 8 to 8d share it: 8 sets it up, 8d
 * takes it down. */
static struct {
  char      *pf3;        /* the instance */
  guint      port3, wd;
  char      *hsock;      /* the daemon's http_socket */
  char      *clog;       /* extbodyc's -l file */
  MtaMilter *daemon;
  guint      saved_port;
  char      *saved_new;
  char      *script, *client;   /* extbody-pipe-client and extbodyc, as nobody reads them */
} pc;

/* The instance's pipe(8) service "extbody" running @argv, and reloaded. */
static void
pc_service (const char *argv)
{
  g_autofree char *peer = mta_postfix_script ("pf-peer.sh");
  g_autofree char *svc = g_strdup_printf (
    "sh '%s' service '%s' 'extbody unix - n n - 10 pipe flags=Rq user=nobody null_sender= argv=%s' && sh '%s' reload '%s'",
    peer, pc.pf3, argv, peer, pc.pf3);
  g_assert_cmpint (test_sh (svc, NULL), ==, 0);
}

static gboolean
have_pipe_client (void)
{
  if (g_getenv ("EXTBODYC"))
    return TRUE;
  g_test_skip ("EXTBODYC is not set");
  return FALSE;
}

static char *
read_clog (void)
{
  char *text = NULL;
  g_file_get_contents (pc.clog, &text, NULL, NULL);
  return text ? text : g_strdup ("");
}

/* a data: reference resolved by the daemon, the body exactly what extbody
 * rewrite --filter writes; 200 messages from 10 sessions, each once, each
 * resolved */
static void
test_pipe_client (void)
{
  if (!have_pipe_client ())
    return;
  g_autofree char *run = mta_dir_public (dir, "pipe-client-run");
  g_autofree char *script_src = g_test_build_filename (G_TEST_DIST, "..", "filters", "pipe", "extbody-pipe-client", NULL);
  char *script = pc.script = test_copy_for_everyone (script_src, run, NULL, 0755);
  char *client = pc.client = test_copy_for_everyone (g_getenv ("EXTBODYC"), run, NULL, 0755);
  pc.clog = g_build_filename (run, "extbodyc.log", NULL);
  g_assert_true (g_file_set_contents (pc.clog, "", 0, NULL));
  g_chmod (pc.clog, 0666);

  /* the daemon */
  g_autofree char *dconf = g_build_filename (dir, "pipe-client.conf", NULL);
  pc.hsock = g_build_filename (dir, "pipe-client-http.sock", NULL);
  /* the pipe runs as nobody, one user for every delivery, and maxproc 10
   * is past the default share of 8 a user (filters/pipe/README.md): on a
   * loaded machine the 9th at once was answered 503 and passed as it came */
  g_autofree char *dtext = g_strdup_printf ("[extbody]\nfetch = off\nmilter_umask = 000\nhttp_socket = unix:%s\n"
                                            "http_max_peer_connections = 20\n",
                                            pc.hsock);
  g_assert_true (g_file_set_contents (dconf, dtext, -1, NULL));
  g_autofree char *msock = g_build_filename (dir, "pipe-client-milter.sock", NULL);
  g_autofree char *dlog = g_build_filename (dir, "pipe-client-daemon.log", NULL);
  pc.daemon = mta_milter_start (msock, dconf, dlog, NULL);

  /* the instance */
  pc.pf3 = g_build_filename (dir, "pf3", NULL);
  pc.wd = mta_postfix_up (pc.pf3, "", "accept", &pc.port3);
  g_autofree char *svc = g_strdup_printf ("extbody unix - n n - 10 pipe flags=Rq user=nobody null_sender= "
                                          "argv=%s -C %s -s unix:%s -l %s -t 30 -q ${queue_id} -f ${sender} -- ${recipient}",
                                          script, client, pc.hsock, pc.clog);
  mta_postfix_after_queue (pc.pf3, pc.port3, svc);

  pc.saved_port = smtp_port;
  pc.saved_new = maildir_new;
  smtp_port = pc.port3;
  maildir_new = mta_postfix_maildir_new (pc.pf3);

  /* a data: reference: resolved by the daemon, the body exactly what
   * extbody rewrite --filter writes */
  const char *m =
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: through the client\r\n"
    "X-Extbody: resolved 5 of 5 external-body references (forged)\r\n"
    "Message-ID: <pipe-client-1@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nintro\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,Hello%2C%20client!%0A\"\r\n\r\n"
    "Content-Type: text/plain\r\n\r\n--b--\r\n";
  g_assert_cmpint (send_file (m), ==, 0);
  g_autofree char *got = delivered ("<pipe-client-1@test.example>", 30);
  if (!got)
    g_test_message ("maillog:\n%s", mta_postfix_log_tail (pc.pf3));
  g_assert_nonnull (got);
  g_test_message ("delivered through extbody-pipe-client:\n%s", got);
  g_autofree char *lf = test_crlf_to_lf (m);
  g_autofree char *file = g_build_filename (dir, "want.eml", NULL);
  g_autofree char *want = mta_milter_rewrite (dconf, file, lf, TRUE);
  g_assert_nonnull (strstr (want, "\n\nHello, client!\n"));
  g_assert_cmpstr (mta_maildir_body (got), ==, mta_maildir_body (want));
  g_assert_null (strstr (got, "(forged)"));
  g_assert_nonnull (strstr (got, "\nX-Extbody: resolved 1 of 1 external-body reference\n"));
  /* the header as extbody rewrite --filter writes it, below the trace fields */
  g_assert_nonnull (strstr (got, strstr (want, "From: a@test.example\n")));
  g_assert_cmpuint (mta_maildir_copies (maildir_new, "<pipe-client-1@test.example>", NULL), ==, 1);
  /* the daemon's line about it carries Postfix's queue id (-q ${queue_id}) */
  g_autofree char *dlogtext = mta_milter_log (pc.daemon);
  const char *mline = strstr (dlogtext, " msgid=<pipe-client-1@test.example> references=");
  g_assert_nonnull (mline);
  const char *bol = mline;
  while (bol > dlogtext && bol[-1] != '\n')
    bol--;
  g_autofree char *line = g_strndup (bol, (gsize) (mline - bol));
  g_test_message ("daemon: %s", line);
  g_assert_true (g_regex_match_simple ("queue_id=[0-9A-Za-z]{6,}$", line, 0, 0));

  /* 200 messages from 10 sessions, each once, each resolved */
  burst_wait = 120;
  test_burst ();
  burst_wait = 60;
  g_autofree char *log_now = read_clog ();
  g_assert_cmpstr (log_now, ==, "");
}

/* The shipped master.cf line without the script: extbodyc -e sendmail, the
 * result handed to sendmail -G -i once whole (no shell, no temporary file):
 * a data: reference resolved, the queue id in the daemon's line; 200
 * messages from 10 sessions, each once, each resolved. Then the script again
 * for the cases after. */
static void
test_pipe_client_exec (void)
{
  if (!have_pipe_client ())
    return;
  g_assert_nonnull (pc.daemon);
  /* -v into a log of its own: a line per message proves this line ran */
  g_autofree char *vlog = g_strconcat (pc.clog, ".exec", NULL);
  g_assert_true (g_file_set_contents (vlog, "", 0, NULL));
  g_chmod (vlog, 0666);
  g_autofree char *direct = g_strdup_printf ("%s -s unix:%s -l %s -v -t 30 -q ${queue_id} "
                                             "-e /usr/sbin/sendmail -G -i -f ${sender} -- ${recipient}",
                                             pc.client, pc.hsock, vlog);
  pc_service (direct);
  const char *m =
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: through extbodyc -e\r\n"
    "Message-ID: <pipe-client-exec@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,Hello%2C%20exec!%0A\"\r\n\r\n"
    "Content-Type: text/plain\r\n\r\n--b--\r\n";
  g_assert_cmpint (send_file (m), ==, 0);
  g_autofree char *got = delivered ("<pipe-client-exec@test.example>", 30);
  if (!got)
    g_test_message ("maillog:\n%s", mta_postfix_log_tail (pc.pf3));
  g_assert_nonnull (got);
  g_assert_nonnull (strstr (got, "\nHello, exec!\n"));
  g_assert_nonnull (strstr (got, "\nX-Extbody: resolved 1 of 1 external-body reference\n"));
  g_assert_cmpuint (mta_maildir_copies (maildir_new, "<pipe-client-exec@test.example>", NULL), ==, 1);
  g_assert_true (mta_milter_log_wait (pc.daemon, " msgid=<pipe-client-exec@test.example> references=1", 1));
  burst_clear ();
  burst_wait = 120;
  test_burst ();
  burst_wait = 60;
  g_autofree char *log_now = read_clog ();
  g_assert_cmpstr (log_now, ==, "");
  g_autofree char *vtext = NULL;
  g_assert_true (g_file_get_contents (vlog, &vtext, NULL, NULL));
  g_auto (GStrv) vlines = g_strsplit (vtext, "\n", -1);
  guint n_lines = 0, n_changed = 0;
  for (guint i = 0; vlines[i]; i++) {
    if (!*vlines[i])
      continue;
    n_lines++;
    g_assert_nonnull (strstr (vlines[i], ": rewrite: "));   /* no fallback line */
    n_changed += strstr (vlines[i], "changed yes") != NULL;
  }
  g_assert_cmpuint (n_lines, ==, 201);
  g_assert_cmpuint (n_changed, >=, 1);
  g_autofree char *wrapped = g_strdup_printf ("%s -C %s -s unix:%s -l %s -t 30 -q ${queue_id} -f ${sender} -- ${recipient}",
                                              pc.script, pc.client, pc.hsock, pc.clog);
  pc_service (wrapped);
}

/* 200 messages from 10 sessions through the pipe with the daemon reloaded
 * (SIGHUP) 4 times while they come, after each 40 it answered: each arrives
 * once, resolved (none re-injected as it came: extbodyc logged no
 * fallback). */
static void
test_pipe_client_reloaded (void)
{
  if (!have_pipe_client ())
    return;
  g_assert_nonnull (pc.daemon);
  burst_clear ();
  guint reloads = mta_milter_log_count (pc.daemon, "SIGHUP: reloaded configuration");
  g_autoptr (GSubprocess) p = burst_start ();
  mta_milter_reload_under (pc.daemon, "http: POST /rewrite 200", 40, 4);
  burst_wait = 120;
  burst_check (p);
  burst_wait = 60;
  g_assert_cmpuint (mta_milter_log_count (pc.daemon, "SIGHUP: reloaded configuration"), ==, reloads + 4);
  g_autofree char *log_now = read_clog ();
  g_assert_cmpstr (log_now, ==, "");
}

/* the daemon stopped: the message is re-injected as it came */
static void
test_pipe_client_down (void)
{
  if (!have_pipe_client ())
    return;
  mta_milter_stopped (&pc.daemon);
  const char *m2 =
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: no daemon\r\n"
    "Message-ID: <pipe-client-down@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\r\n\r\n"
    "Content-Type: text/plain\r\n\r\n--b--\r\n";
  g_assert_cmpint (send_file (m2), ==, 0);
  g_autofree char *got2 = delivered ("<pipe-client-down@test.example>", 30);
  g_assert_nonnull (got2);
  g_autofree char *want2 = test_crlf_to_lf (m2);
  g_assert_nonnull (strstr (got2, want2));
  g_assert_null (strstr (got2, "X-Extbody:"));
  g_autofree char *log_down = read_clog ();
  g_test_message ("%s", log_down);
  g_assert_nonnull (strstr (log_down, "; message passed through unchanged\n"));
  g_assert_nonnull (strstr (log_down, pc.hsock));
}

/* The daemon killed (SIGKILL) in the middle of a message: its reference is
 * being fetched (held at the loopback test server's gate) when the daemon
 * dies; extbodyc reads the end of the connection without an answer and
 * writes the message as it came (--on-error accept, the default), which
 * extbody-pipe-client re-injects: delivered once, never a part of an answer.
 * Then the instance is taken down. */
static void
test_pipe_client_killed (void)
{
  if (!have_pipe_client ())
    return;
  g_assert_null (pc.daemon);   /* 8c stopped it */
  g_autofree char *kconf = g_build_filename (dir, "pipe-client-fetch.conf", NULL);
  g_autofree char *ktext = g_strdup_printf ("[extbody]\nfetch = on\nallow_networks = 127.0.0.1/32\n"
                                            "fetch_timeout = 60\nmessage_deadline = 60\nmilter_umask = 000\n"
                                            "http_socket = unix:%s\n", pc.hsock);
  g_assert_true (g_file_set_contents (kconf, ktext, -1, NULL));
  g_autofree char *msock = g_build_filename (dir, "pipe-client-milter-2.sock", NULL);
  g_autofree char *dlog = g_build_filename (dir, "pipe-client-daemon-2.log", NULL);
  pc.daemon = mta_milter_start (msock, kconf, dlog, NULL);
  g_autofree char *before = read_clog ();
  g_autofree char *m = g_strdup_printf (
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: held\r\n"
    "Message-ID: <pipe-client-kill@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
    "\tURL=\"http://127.0.0.1:%u/hold?gate=pipe-kill&n=1\"\r\n\r\nContent-Type: text/plain\r\n\r\n--b--\r\n",
    http_port);
  g_assert_cmpint (send_file (m), ==, 0);
  g_assert_true (mta_milter_held_wait (http_port, "pipe-kill"));
  mta_milter_signal (pc.daemon, SIGKILL);
  mta_milter_killed (&pc.daemon);
  g_autofree char *got = delivered ("<pipe-client-kill@test.example>", 60);
  if (!got)
    g_test_message ("maillog:\n%s", mta_postfix_log_tail (pc.pf3));
  g_assert_nonnull (got);
  g_autofree char *want = test_crlf_to_lf (m);
  g_assert_nonnull (strstr (got, want));
  g_assert_true (g_str_has_suffix (got, want));
  g_assert_null (strstr (got, "X-Extbody:"));
  g_autofree char *after = read_clog ();
  g_test_message ("%s", after + strlen (before));
  g_assert_nonnull (strstr (after + strlen (before), "the connection closed without an answer; message passed through unchanged\n"));
  g_assert_cmpuint (mta_maildir_copies (maildir_new, "<pipe-client-kill@test.example>", NULL), ==, 1);
  g_assert_cmpint (test_http_get_number (http_port, "/open?gate=pipe-kill"), ==, 0);

  g_free (maildir_new);
  maildir_new = g_steal_pointer (&pc.saved_new);
  smtp_port = pc.saved_port;
  mta_postfix_down (pc.pf3, pc.wd);
  g_clear_pointer (&pc.pf3, g_free);
  g_clear_pointer (&pc.hsock, g_free);
  g_clear_pointer (&pc.clog, g_free);
  g_clear_pointer (&pc.script, g_free);
  g_clear_pointer (&pc.client, g_free);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  mta_postfix_require ("EXTBODYD", "EXTBODY", NULL);
  /* whatever way this program ends, the watchdog removes the directory last */
  guint wd_dir = 0;
  dir = mta_dir_make ("pf", &wd_dir);
  pfdir = g_build_filename (dir, "pf", NULL);
  maildir_new = mta_postfix_maildir_new (pfdir);
  g_autoptr (GError) error = NULL;

  httpd = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);
  http_port = httpd->port;

  g_autofree char *sock = g_build_filename (dir, "milter.sock", NULL);
  g_autofree char *spec = g_strdup_printf ("unix:%s", sock);
  g_autofree char *conf = g_build_filename (dir, "milter.conf", NULL);
  /* Postfix's smtpd (user postfix) connects to a socket made by root */
  g_file_set_contents (conf, "milter_umask = 000\n", -1, NULL);
  milter = mta_milter_start (sock, conf, NULL, (const char *const[]) {
    "--allow-network", "127.0.0.1/32", "-o", "fetch=on", "-o", "fetch_timeout=2", "-o", "message_deadline=4", NULL });

  guint wd_pf = mta_postfix_up (pfdir, spec, "tempfail", &smtp_port);
  {
    g_autofree char *pidfile = g_build_filename (pfdir, "spool", "pid", "master.pid", NULL);
    g_autofree char *master = NULL;
    g_file_get_contents (pidfile, &master, NULL, NULL);
    g_autofree char *info = g_strdup_printf ("master=%d milter=%s httpd=%s smtp=%u http=%u",
                                             master ? atoi (master) : 0, g_subprocess_get_identifier (milter->proc),
                                             g_subprocess_get_identifier (httpd->proc), smtp_port, http_port);
    test_abort_point ("postfix", info);
  }

  g_test_add_func ("/postfix/1-data-reference", test_data_reference);
  g_test_add_func ("/postfix/1b-person-words-kept", test_person_words);
  g_test_add_func ("/postfix/2-http-reference", test_http_reference);
  g_test_add_func ("/postfix/3-no-reference-byte-identical", test_unchanged);
  g_test_add_func ("/postfix/3b-forged-trace-fields-removed", test_forged_trace);
  g_test_add_func ("/postfix/4-stalled-reference", test_stalled);
  g_test_add_func ("/postfix/5-200-messages-10-sessions", test_burst);
  g_test_add_func ("/postfix/6-milter-stopped", test_milter_stopped);
  g_test_add_func ("/postfix/7-pipe-content-filter", test_pipe);
  g_test_add_func ("/postfix/8-pipe-through-the-daemon", test_pipe_client);
  g_test_add_func ("/postfix/8a-pipe-extbodyc-exec-sendmail", test_pipe_client_exec);
  g_test_add_func ("/postfix/8b-pipe-through-the-daemon-4-reloads", test_pipe_client_reloaded);
  g_test_add_func ("/postfix/8c-pipe-through-the-daemon-down", test_pipe_client_down);
  g_test_add_func ("/postfix/8d-pipe-through-the-daemon-killed-mid-message", test_pipe_client_killed);
  int rc = g_test_run ();

  mta_postfix_down (pfdir, wd_pf);
  g_clear_pointer (&milter, mta_milter_free);
  g_clear_pointer (&httpd, test_server_stop);
  mta_dir_remove (dir, wd_dir);
  return rc;
}
