/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-exim.c - extbody as an Exim 4 transport_filter (filters/exim/), end to
 * end through a real private Exim on 127.0.0.1 (tests/exim/exim-peer.sh:
 * Debian's exim4-daemon-light unpacked, its own configuration, spool and log
 * directories under a temporary directory, delivering to Maildirs), the filter
 * the wrapper filters/exim/extbody-exim:
 *
 * - data: and http references (a loopback test server, fetching on) arrive
 *   resolved, with extbody's record logged under Exim's message id, in a
 *   Maildir and in an mbox (Exim writes the From_ line outside the filter);
 * - a message with nothing to resolve arrives byte for byte as sent, apart
 *   from the fields Exim puts on top (Return-path, Envelope-to, Delivery-date,
 *   Received); forged X-Extbody fields are removed;
 * - a reference that stalls arrives unchanged once extbody's message_deadline
 *   passes, long before Exim's transport_filter_timeout;
 * - 200 messages from 10 concurrent SMTP sessions arrive, each exactly once;
 * - a failing extbody never loses the message: with the default
 *   (--on-error accept) it is delivered as it came, with --on-error tempfail
 *   Exim defers it, keeps it in its queue and delivers it (resolved) once
 *   extbody works again; both for a configuration error and for an extbody
 *   stopped after the wrapper's -t seconds;
 * - the daemon's door (issue 28): transport_filter = extbodyc against a
 *   private extbodyd's http_socket (tests/lib/mta-milter.h): a data:
 *   reference arrives as `extbody rewrite --filter` writes it, 200 messages
 *   from 10 sessions each once and resolved, and with the daemon stopped the
 *   message arrives as it came (extbodyc's fallback, its line in its -l file
 *   and not in the message); 200 messages from 10 sessions with the daemon
 *   reloaded 4 times while they come, each once and resolved; and the
 *   daemon killed while a message's reference is being fetched: that
 *   message arrives once, exactly as it came.
 *
 * Needs root (the private mount namespace with Exim's user, and Exim's own
 * privilege handling) and the unpacked Exim ($EXTBODY_TEST_EXIM, default
 * /opt/extbody-test-exim/usr/sbin/exim4, which tests/quickstart.sh provides):
 * skipped (exit 77) without them. Everything it starts is registered with the
 * watchdog (test-server.h), so a failed assertion leaves nothing running. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>
#include "test-server.h"
#include "mta-dir.h"
#include "mta-maildir.h"
#include "mta-milter.h"
#include "mta-smtp.h"

#define FILTER_LIMIT 8   /* the wrapper's -t: above message_deadline (4), below transport_filter_timeout */

static char *dir;          /* everything lives here */
static char *peer;         /* tests/exim/exim-peer.sh */
static guint smtp_port;
static TestServer *httpd;
static guint http_port;
static MtaMilter *daemon_;  /* the daemon extbodyc talks to (NULL: none) */
static char *daemon_conf;

static char *
script (const char *name)
{
  return g_test_build_filename (G_TEST_DIST, "exim", name, NULL);
}

/* strstr that fails the test when @needle is not there (noreturn, so the
 * compiler knows the result is never NULL). */
static const char *
must_find (const char *haystack, const char *needle)
{
  const char *p = strstr (haystack, needle);
  if (!p)
    g_error ("\"%s\" not found in:\n%s", needle, haystack);
  return p;
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

/* Whether the file @rel comes to hold @needle within @seconds. */
static gboolean
wait_log (const char *rel, const char *needle, int seconds)
{
  for (int t = 0; t < seconds * 20; t++) {
    g_autofree char *text = read_text (rel);
    if (strstr (text, needle))
      return TRUE;
    g_usleep (50000);
  }
  return FALSE;
}

/* An extbody configuration file of the instance (extbody, broken or
 * broken-defer), readable by Exim's user; read again for every message. */
static void
write_conf (const char *name, const char *text)
{
  g_autofree char *base = g_strdup_printf ("%s.conf", name);
  g_autofree char *p = g_build_filename (dir, base, NULL);
  g_autofree char *tmp = g_strdup_printf ("%s.new", p);
  g_assert_true (g_file_set_contents (tmp, text, -1, NULL));
  g_assert_cmpint (g_chmod (tmp, 0644), ==, 0);
  g_assert_cmpint (g_rename (tmp, p), ==, 0);
}

static int
send_to (const char *rcpt, const char *msg)
{
  g_autofree char *file = g_build_filename (dir, "msg.eml", NULL);
  return mta_smtp_send (smtp_port, file, msg, rcpt);
}

/* The new/ directory of the Maildir mail/@box. */
static char *
box_new (const char *box)
{
  return g_build_filename (dir, "mail", box, "Maildir", "new", NULL);
}

/* How many messages in mail/@box/Maildir/new hold @needle. */
static guint
count_in (const char *box, const char *needle)
{
  g_autofree char *new = box_new (box);
  return mta_maildir_copies (new, needle, NULL);
}

/* The message in @box holding @needle, waiting up to @seconds. */
static char *
delivered (const char *box, const char *needle, int seconds)
{
  g_autofree char *new = box_new (box);
  char *text = mta_maildir_delivered (new, needle, seconds, NULL);
  if (text)
    return text;
  g_autofree char *log = read_text ("log/mainlog");
  g_autofree char *xlog = read_text ("log/extbody.log");
  g_test_message ("not delivered to %s: %s\nmainlog:\n%s\nextbody.log:\n%s", box, needle, log, xlog);
  return NULL;
}

/* The delivered message without the fields Exim puts on top: Return-path,
 * Envelope-to and Delivery-date (the transport's *_add options), then its
 * Received field with its continuation lines. */
static const char *
after_trace (const char *text)
{
  g_assert_true (g_str_has_prefix (text, "Return-path: <a@test.example>\nEnvelope-to: "));
  const char *p = strstr (text, "\nReceived: from [127.0.0.1]\n");
  g_assert_nonnull (p);
  g_assert_nonnull (strstr (text, "\nDelivery-date: "));
  g_assert_true (strstr (text, "\nDelivery-date: ") < p);
  p++;
  do {
    p = strchr (p, '\n') + 1;
  } while (*p == ' ' || *p == '\t');
  return p;
}

/* the unpacked Exim's version (4.96 on Debian 12, 4.98 on Debian 13), read
 * from exim -bV in main */
static guint exim_major, exim_minor;

/* Exim's id of the message whose Received field is in @text: in the form of
 * the Exim that ran, which the log record must give whole: up to 4.96 16
 * characters (6-6-2: time, pid, fraction), from 4.97 23 (6-11-4: the pid
 * part grew for 64-bit pids) */
static char *
exim_id (const char *text)
{
  const char *p = strstr (text, "\n\tid ");
  g_assert_nonnull (p);
  p += 5;
  char *id = g_strndup (p, strcspn (p, "\n"));
  gboolean new_ids = exim_major > 4 || (exim_major == 4 && exim_minor >= 97);
  g_autofree char *pattern = g_strdup (new_ids ? "^[0-9A-Za-z]{6}-[0-9A-Za-z]{11}-[0-9A-Za-z]{4}$"
                                               : "^[0-9A-Za-z]{6}-[0-9A-Za-z]{6}-[0-9A-Za-z]{2}$");
  if (!g_regex_match_simple (pattern, id, 0, 0))
    g_error ("Exim %u.%u's message id %s is not of the form %s", exim_major, exim_minor, id, pattern);
  return id;
}


static char *
data_message (const char *id)
{
  return g_strdup_printf (
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: data ref\r\n"
    "Message-ID: <%s@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nintro\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
    "\tURL=\"data:text/plain,Hello%%2C%%20\r\n\tExim!%%0A\"\r\n\r\nContent-Type: text/plain\r\n\r\n--b--\r\n", id);
}

static char *
stall_message (const char *id)
{
  return g_strdup_printf (
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: stalled\r\n"
    "Message-ID: <%s@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
    "\tURL=\"http://127.0.0.1:%u/stall\"\r\n\r\nContent-Type: text/plain\r\n\r\n--b--\r\n", id, http_port);
}

static void
test_data_reference (void)
{
  g_autofree char *m = data_message ("data-1");
  g_assert_cmpint (send_to ("b@test.example", m), ==, 0);
  g_autofree char *got = delivered ("extbody", "<data-1@test.example>", 30);
  g_assert_nonnull (got);
  g_test_message ("%s", got);
  g_assert_nonnull (strstr (got, "\n\nHello, Exim!\n"));
  g_assert_nonnull (strstr (got, "\nX-Extbody: resolved 1 of 1 external-body reference\n"));
  g_assert_null (strstr (got, "external-body;"));
  g_assert_nonnull (strstr (got, "--b\nContent-Type: text/plain\n\nintro\n--b\n"));
  /* the record, under Exim's message id ($message_exim_id through -q) */
  g_autofree char *id = exim_id (got);
  g_autofree char *want = g_strdup_printf ("queue_id=%s msgid=<data-1@test.example> references=1 resolved=1 changed=yes\n", id);
  g_autofree char *xlog = read_text ("log/extbody.log");
  g_assert_nonnull (strstr (xlog, want));
  /* Exim logs the delivery after the file is in place */
  g_autofree char *line = g_strdup_printf ("%s => b <b@test.example> R=extbody T=extbody_maildir", id);
  g_assert_true (wait_log ("log/mainlog", line, 30));
}

/* issue 25: a person's multipart/alternative of their own words and a
 * reference: the reference is replaced, the words stay. */
static void
test_person_words (void)
{
  const char *m =
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: words and a reference\r\n"
    "Message-ID: <person-1@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/alternative; boundary=\"zz\"\r\n\r\n"
    "--zz\r\nContent-Type: text/plain\r\n\r\nThe words a person wrote.\r\n"
    "--zz\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,hello%20world\"\r\n"
    "\r\nContent-Type: text/plain\r\n\r\n--zz--\r\n";
  g_assert_cmpint (send_to ("b@test.example", m), ==, 0);
  g_autofree char *got = delivered ("extbody", "<person-1@test.example>", 30);
  g_assert_nonnull (got);
  g_assert_nonnull (strstr (got, "\n--zz\nContent-Type: text/plain\n\nThe words a person wrote.\n--zz\n"));
  g_assert_nonnull (strstr (got, "\n\nhello world"));
  g_assert_nonnull (strstr (got, "Content-Type: multipart/alternative; boundary=\"zz\"\n"));
  g_assert_null (strstr (got, "external-body;"));
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
  gint64 hits = test_http_get_number (http_port, "/hits");
  g_assert_cmpint (send_to ("b@test.example", m), ==, 0);
  g_autofree char *got = delivered ("extbody", "<http-1@test.example>", 30);
  g_assert_nonnull (got);
  g_assert_nonnull (strstr (got, "\n\nhello from the test server\n"));
  g_assert_nonnull (strstr (got, "\nX-Extbody: resolved 1 of 1 external-body reference\n"));
  /* fetched once (and the /hits request itself) */
  g_assert_cmpint (test_http_get_number (http_port, "/hits"), ==, hits + 2);
}

static void
test_unchanged (void)
{
  const char *m =
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: nothing to resolve\r\n"
    "Message-ID: <plain-1@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/alternative;\r\n  boundary=\"odd  folding\"\r\n\r\n"
    "--odd  folding\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
    "caf\xc3\xa9   \r\n.leading dot\r\n--odd  folding--\r\n";
  g_assert_cmpint (send_to ("b@test.example", m), ==, 0);
  g_autofree char *got = delivered ("extbody", "<plain-1@test.example>", 30);
  g_assert_nonnull (got);
  g_autofree char *want = test_crlf_to_lf (m);
  g_assert_cmpstr (after_trace (got), ==, want);
  /* and the same as Exim delivers it without the filter */
  g_assert_cmpint (send_to ("plain@test.example", m), ==, 0);
  g_autofree char *plain = delivered ("plain", "<plain-1@test.example>", 30);
  g_assert_nonnull (plain);
  g_assert_cmpstr (after_trace (plain), ==, after_trace (got));
}

/* Forged trace fields are removed (--filter, strip_trace_fields); the rest of
 * a message without references stays byte for byte as sent. */
static void
test_forged_trace (void)
{
  const char *forged = "x-extbody: resolved 9 of 9 external-body references\r\n"
                       "X-EXTBODY-Resolved: data:,forged;\r\n\tfolded\r\n";
  const char *plain = "From: a@test.example\r\nTo: b@test.example\r\nSubject: forged trace\r\n"
                      "Message-ID: <forged-1@test.example>\r\nContent-Type: text/plain\r\n\r\nhello\r\n";
  g_autofree char *m = g_strconcat (forged, plain, NULL);
  g_assert_cmpint (send_to ("b@test.example", m), ==, 0);
  g_autofree char *got = delivered ("extbody", "<forged-1@test.example>", 30);
  g_assert_nonnull (got);
  g_autofree char *want = test_crlf_to_lf (plain);
  g_assert_cmpstr (after_trace (got), ==, want);
}

static void
test_stalled (void)
{
  g_autofree char *m = stall_message ("stall-1");
  gint64 t0 = g_get_monotonic_time ();
  g_assert_cmpint (send_to ("b@test.example", m), ==, 0);
  g_autofree char *got = delivered ("extbody", "<stall-1@test.example>", 60);
  g_assert_nonnull (got);
  gint64 took = g_get_monotonic_time () - t0;
  g_test_message ("stalled reference delivered after %.1f s", took / 1e6);
  /* extbody gave up at its deadline: before the server's 30 s stall ended,
   * and so long before Exim's transport_filter_timeout (300 s) */
  g_assert_cmpint (took, <, 30 * G_USEC_PER_SEC);
  g_autofree char *want = test_crlf_to_lf (m);
  g_assert_cmpstr (after_trace (got), ==, want);
  g_autofree char *xlog = read_text ("log/extbody.log");
  g_assert_nonnull (strstr (xlog, "msgid=<stall-1@test.example> ref=1 part=1 access_type=url scheme=http host=127.0.0.1 outcome=left"));
  g_assert_null (strstr (xlog, "stopped after"));
}

/* send.py sending 200 messages from 10 concurrent SMTP sessions to @rcpt,
 * not waited for. */
static GSubprocess *
burst_start (const char *rcpt)
{
  return mta_smtp_burst_start ("exim", smtp_port, 200, 10, rcpt);
}

/* The 200 of burst_start @sender arrive in mail/@box, each exactly once, each
 * resolved; Exim's queue is empty after. */
static void
burst_check (GSubprocess *sender, const char *box)
{
  mta_smtp_burst_sent (sender, 200);
  g_autofree char *new = box_new (box);
  mta_maildir_burst_wait (new, 200, 120, mta_maildir_resolved_1_of_1);
  /* and nothing left in Exim's queue */
  g_autofree char *bp = g_strdup_printf ("sh '%s' exim '%s' -bpc", peer, dir);
  g_autofree char *queued = NULL;
  g_assert_cmpint (test_sh (bp, &queued), ==, 0);
  g_assert_cmpint (atoi (queued), ==, 0);
}

/* 200 messages from 10 concurrent SMTP sessions to @rcpt arrive in mail/@box,
 * each exactly once, each resolved; Exim's queue is empty after. */
static void
burst_to (const char *rcpt, const char *box)
{
  g_autoptr (GSubprocess) p = burst_start (rcpt);
  burst_check (p, box);
}

/* Remove the burst messages burst_check counted from mail/@box, so that the
 * next burst to it is counted alone. */
static void
burst_clear (const char *box)
{
  g_autofree char *new = box_new (box);
  mta_maildir_burst_clear (new);
}

static void
test_burst (void)
{
  burst_to ("b@test.example", "extbody");
}

/* Exim's mbox delivery (appendfile file =, Debian's mail_spool transport):
 * Exim writes the From_ line itself, outside the filter; the message after
 * it is resolved, and a second message is appended after the first. */
static void
test_mbox (void)
{
  g_autofree char *m1 = data_message ("mbox-1");
  g_autofree char *m2 = data_message ("mbox-2");
  g_assert_cmpint (send_to ("mbox@test.example", m1), ==, 0);
  g_assert_cmpint (send_to ("mbox@test.example", m2), ==, 0);
  g_autofree char *mbox = NULL;
  for (int t = 0; t < 30 * 20; t++) {
    g_free (mbox);
    mbox = read_text ("mail/mbox/mbox");
    if (strstr (mbox, "<mbox-2@test.example>") && strstr (mbox, "<mbox-1@test.example>"))
      break;
    g_usleep (50000);
  }
  g_test_message ("%s", mbox);
  g_assert_true (g_str_has_prefix (mbox, "From a@test.example "));
  const char *second = must_find (mbox, "\n\nFrom a@test.example ");
  g_assert_null (strstr (second + 2, "\nFrom a@test.example "));
  g_assert_null (strstr (mbox, "external-body;"));
  g_autofree char *first = g_strndup (mbox, (gsize) (second - mbox));
  g_assert_nonnull (strstr (first, "\n\nHello, Exim!\n"));
  g_assert_nonnull (strstr (first, "\nX-Extbody: resolved 1 of 1 external-body reference\n"));
  g_assert_nonnull (strstr (second, "\n\nHello, Exim!\n"));
  g_assert_nonnull (strstr (second, "\nX-Extbody: resolved 1 of 1 external-body reference\n"));
}

/* The default: extbody fails (here, a configuration it refuses: exit 78), and
 * the message is delivered as it came, with a line that says why. */
static void
test_failure_accept (void)
{
  write_conf ("broken", "[extbody]\nno_such_key = 1\n");
  g_autofree char *m = data_message ("broken-1");
  g_assert_cmpint (send_to ("broken@test.example", m), ==, 0);
  g_autofree char *got = delivered ("broken", "<broken-1@test.example>", 30);
  g_assert_nonnull (got);
  g_autofree char *want = test_crlf_to_lf (m);
  g_assert_cmpstr (after_trace (got), ==, want);
  g_autofree char *id = exim_id (got);
  g_autofree char *note = g_strdup_printf ("queue_id=%s extbody rewrite failed with status 78 "
                                           "(extbody: %s/broken.conf: unknown key \"no_such_key\"); "
                                           "delivering the message as it came\n", id, dir);
  g_autofree char *xlog = read_text ("log/extbody.log");
  g_assert_nonnull (strstr (xlog, note));
}

/* Every line of Exim's main log about message @id that contains @what. */
static guint
mainlog_count (const char *id, const char *what)
{
  g_autofree char *log = read_text ("log/mainlog");
  g_auto (GStrv) lines = g_strsplit (log, "\n", -1);
  guint n = 0;
  for (char **l = lines; *l; l++)
    if (strstr (*l, id) && strstr (*l, what))
      n++;
  return n;
}

/* Exim's id of the message @msgid it received (its "<=" line). */
static char *
received_id (const char *msgid)
{
  g_autofree char *log = read_text ("log/mainlog");
  g_autofree char *tail = g_strdup_printf (" id=%s", msgid);
  g_auto (GStrv) lines = g_strsplit (log, "\n", -1);
  for (char **l = lines; *l; l++)
    if (strstr (*l, " <= ") && g_str_has_suffix (*l, tail)) {
      /* "DATE TIME ID <= ..." */
      g_auto (GStrv) f = g_strsplit (*l, " ", 4);
      return g_strdup (f[2]);
    }
  return NULL;
}

/* --on-error tempfail: the wrapper exits 75, Exim defers the delivery and keeps
 * the message in its queue (tried again every second here); once extbody
 * works again it is delivered, resolved, exactly once. */
static void
test_failure_tempfail (void)
{
  write_conf ("broken-defer", "[extbody]\nno_such_key = 1\n");
  g_autofree char *m = data_message ("defer-1");
  g_assert_cmpint (send_to ("broken-defer@test.example", m), ==, 0);
  g_autofree char *id = NULL;
  for (int t = 0; t < 30 * 20; t++) {
    g_clear_pointer (&id, g_free);
    id = received_id ("defer-1@test.example");
    if (id && mainlog_count (id, "transport filter process failed (75)") >= 2)
      break;
    g_usleep (50000);
  }
  g_assert_nonnull (id);
  g_assert_cmpuint (mainlog_count (id, "== broken-defer@test.example R=broken_defer T=extbody_broken_defer defer (-24): "
                                       "transport filter process failed (75)"), >=, 2);
  g_assert_cmpuint (count_in ("broken-defer", "<defer-1@test.example>"), ==, 0);
  g_autofree char *bp = g_strdup_printf ("sh '%s' exim '%s' -bp", peer, dir);
  g_autofree char *queue = NULL;
  g_assert_cmpint (test_sh (bp, &queue), ==, 0);
  g_assert_nonnull (strstr (queue, id));
  g_autofree char *xlog = read_text ("log/extbody.log");
  g_autofree char *note = g_strdup_printf ("queue_id=%s extbody rewrite failed with status 78", id);
  g_assert_nonnull (strstr (xlog, note));
  g_assert_nonnull (strstr (xlog, "; deferring\n"));

  write_conf ("broken-defer", "[extbody]\n");
  g_autofree char *got = delivered ("broken-defer", "<defer-1@test.example>", 30);
  g_assert_nonnull (got);
  g_assert_nonnull (strstr (got, "\n\nHello, Exim!\n"));
  g_autofree char *done = g_strdup_printf ("%s Completed", id);
  g_assert_true (wait_log ("log/mainlog", done, 30));
  g_assert_cmpuint (count_in ("broken-defer", "<defer-1@test.example>"), ==, 1);
}

/* extbody configured with a deadline past the wrapper's -t: the wrapper stops
 * it after -t seconds; by default the message is delivered as it came, with
 * --on-error tempfail it is deferred until extbody ends in time. */
static void
test_failure_stopped (void)
{
  g_autofree char *slow = g_strdup_printf ("[extbody]\nfetch = on\nallow_networks = 127.0.0.1/32\n"
                                           "fetch_timeout = 60\nmessage_deadline = 60\n");
  write_conf ("broken", slow);
  write_conf ("broken-defer", slow);
  g_autofree char *m = stall_message ("stopped-1");
  g_autofree char *m2 = stall_message ("stopped-2");
  g_assert_cmpint (send_to ("broken@test.example", m), ==, 0);
  g_assert_cmpint (send_to ("broken-defer@test.example", m2), ==, 0);

  g_autofree char *got = delivered ("broken", "<stopped-1@test.example>", 60);
  g_assert_nonnull (got);
  g_autofree char *want = test_crlf_to_lf (m);
  g_assert_cmpstr (after_trace (got), ==, want);
  g_autofree char *id = exim_id (got);
  g_autofree char *note = g_strdup_printf ("queue_id=%s extbody rewrite failed with status 124 (stopped after %d s); "
                                           "delivering the message as it came\n", id, FILTER_LIMIT);
  g_autofree char *xlog = read_text ("log/extbody.log");
  g_assert_nonnull (strstr (xlog, note));

  /* the deferred one: stopped at least once, then given a deadline that ends in time */
  g_autofree char *id2 = NULL;
  for (int t = 0; t < 60 * 20; t++) {
    g_clear_pointer (&id2, g_free);
    id2 = received_id ("stopped-2@test.example");
    if (id2 && mainlog_count (id2, "transport filter process failed (75)") >= 1)
      break;
    g_usleep (50000);
  }
  g_assert_nonnull (id2);
  g_assert_cmpuint (mainlog_count (id2, "transport filter process failed (75)"), >=, 1);
  g_free (xlog);
  xlog = read_text ("log/extbody.log");
  g_autofree char *note2 = g_strdup_printf ("queue_id=%s extbody rewrite failed with status 124 (stopped after %d s); "
                                            "deferring\n", id2, FILTER_LIMIT);
  g_assert_nonnull (strstr (xlog, note2));
  g_assert_cmpuint (count_in ("broken-defer", "<stopped-2@test.example>"), ==, 0);
  g_autofree char *quick = g_strdup_printf ("[extbody]\nfetch = on\nallow_networks = 127.0.0.1/32\n"
                                            "fetch_timeout = 2\nmessage_deadline = 3\n");
  write_conf ("broken-defer", quick);
  g_autofree char *got2 = delivered ("broken-defer", "<stopped-2@test.example>", 60);
  g_assert_nonnull (got2);
  g_autofree char *want2 = test_crlf_to_lf (m2);
  g_assert_cmpstr (after_trace (got2), ==, want2);
  g_assert_cmpuint (count_in ("broken-defer", "<stopped-2@test.example>"), ==, 1);
}

/* The lines filters/exim/README.md gives (exim4-extbody.conf) are a valid
 * Exim configuration: the transports with the filter and the timeout, and
 * the router. */
static void
test_config_lines (void)
{
  g_autofree char *lines = g_test_build_filename (G_TEST_DIST, "..", "filters", "exim", "exim4-extbody.conf", NULL);
  g_autofree char *cmd = g_strdup_printf ("sh '%s' check '%s' '%s' 2>&1", peer, dir, lines);
  g_autofree char *out = NULL;
  int rc = test_sh (cmd, &out);
  g_test_message ("%s", out);
  g_assert_cmpint (rc, ==, 0);
  /* twice: both transports */
  const char *filter = "transport_filter = /usr/bin/extbodyc -s unix:/run/extbody/http.sock -l syslog -t 150 -q $message_exim_id\n"
                       "transport_filter_timeout = 5m\n";
  const char *p = must_find (out, filter);
  g_assert_nonnull (strstr (p + 1, filter));
  g_assert_nonnull (strstr (out, "transport = extbody_maildir_home\n"));
  g_assert_nonnull (strstr (out, "check_local_user\n"));
}

/* ---- the daemon's door: transport_filter = extbodyc ---------------------- */

/* What `extbody rewrite --filter` writes for @msg (LF line ends, as Exim
 * hands it to a filter), with the daemon's configuration. */
static char *
rewrite_filter (const char *msg)
{
  g_autofree char *file = g_build_filename (dir, "want.eml", NULL);
  return mta_milter_rewrite (daemon_conf, file, msg, TRUE);
}

static gboolean
have_client (void)
{
  if (daemon_conf)
    return TRUE;
  g_test_skip ("EXTBODYC or EXTBODYD is not set");
  return FALSE;
}

static void
test_client_data_reference (void)
{
  if (!have_client ())
    return;
  g_assert_nonnull (daemon_);
  g_autofree char *m = data_message ("client-1");
  g_assert_cmpint (send_to ("client@test.example", m), ==, 0);
  g_autofree char *got = delivered ("client", "<client-1@test.example>", 30);
  g_assert_nonnull (got);
  g_test_message ("%s", got);
  g_assert_nonnull (strstr (got, "\n\nHello, Exim!\n"));
  g_assert_nonnull (strstr (got, "\nX-Extbody: resolved 1 of 1 external-body reference\n"));
  /* exactly what extbody rewrite --filter makes of the message as sent:
   * header and body, under the fields Exim puts on top */
  g_autofree char *lf = test_crlf_to_lf (m);
  g_autofree char *want = rewrite_filter (lf);
  g_assert_cmpstr (after_trace (got), ==, want);
  g_assert_cmpstr (strstr (after_trace (got), "\n\n"), ==, strstr (want, "\n\n"));
  /* the daemon did it: its count of rewrites (GET /metrics is not needed:
   * the client's log holds no fallback line) */
  g_autofree char *clog = read_text ("log/extbodyc.log");
  g_assert_cmpstr (clog, ==, "");
  /* and a message with nothing to resolve arrives byte for byte */
  const char *plain = "From: a@test.example\r\nTo: b@test.example\r\nSubject: plain through the client\r\n"
                      "Message-ID: <client-plain-1@test.example>\r\nContent-Type: text/plain\r\n\r\n"
                      "caf\xc3\xa9   \r\n.leading dot\r\n";
  g_assert_cmpint (send_to ("client@test.example", plain), ==, 0);
  g_autofree char *got2 = delivered ("client", "<client-plain-1@test.example>", 30);
  g_assert_nonnull (got2);
  g_autofree char *want2 = test_crlf_to_lf (plain);
  g_assert_cmpstr (after_trace (got2), ==, want2);
}

static void
test_client_burst (void)
{
  if (!have_client ())
    return;
  burst_to ("client@test.example", "client");
  g_autofree char *clog = read_text ("log/extbodyc.log");
  g_assert_cmpstr (clog, ==, "");
}

/* The daemon stopped: extbodyc cannot connect and the message is delivered
 * as it came, its one line in its log file (never in the message). */
static void
test_client_daemon_down (void)
{
  if (!have_client ())
    return;
  mta_milter_stopped (&daemon_);
  g_autofree char *m = data_message ("client-down-1");
  g_assert_cmpint (send_to ("client@test.example", m), ==, 0);
  g_autofree char *got = delivered ("client", "<client-down-1@test.example>", 30);
  g_assert_nonnull (got);
  g_autofree char *want = test_crlf_to_lf (m);
  g_assert_cmpstr (after_trace (got), ==, want);
  g_assert_null (strstr (got, "extbodyc"));
  g_autofree char *clog = read_text ("log/extbodyc.log");
  g_test_message ("%s", clog);
  g_assert_nonnull (strstr (clog, "; message passed through unchanged\n"));
  g_autofree char *sock = g_build_filename (dir, "http.sock", NULL);
  g_assert_nonnull (strstr (clog, sock));
}

/* 200 messages from 10 sessions through extbodyc with the daemon reloaded
 * (SIGHUP) 4 times while they come, after each 40 it answered: each arrives
 * once, resolved (none passed through as it came: extbodyc logged no
 * fallback). */
static void
test_client_burst_reloaded (void)
{
  if (!have_client ())
    return;
  burst_clear ("client");
  guint reloads = mta_milter_log_count (daemon_, "SIGHUP: reloaded configuration");
  g_autoptr (GSubprocess) p = burst_start ("client@test.example");
  mta_milter_reload_under (daemon_, "http: POST /rewrite 200", 40, 4);
  burst_check (p, "client");
  g_assert_cmpuint (mta_milter_log_count (daemon_, "SIGHUP: reloaded configuration"), ==, reloads + 4);
  g_autofree char *clog = read_text ("log/extbodyc.log");
  g_assert_cmpstr (clog, ==, "");
}

/* The daemon killed (SIGKILL) in the middle of a message: its reference is
 * being fetched (held at the loopback test server's gate) when the daemon
 * dies; extbodyc reads the end of the connection without an answer and
 * writes the message exactly as it came (its default, --on-error accept):
 * delivered once, never a part of an answer. */
static void
test_client_killed_mid_message (void)
{
  if (!have_client ())
    return;
  g_assert_null (daemon_);   /* 9c stopped it */
  g_autofree char *kconf = g_build_filename (dir, "daemon-fetch.conf", NULL);
  g_autofree char *ktext = g_strdup_printf ("[extbody]\nfetch = on\nallow_networks = 127.0.0.1/32\n"
                                            "fetch_timeout = 60\nmessage_deadline = 60\nmilter_umask = 000\n"
                                            "http_socket = unix:%s/http.sock\n", dir);
  g_assert_true (g_file_set_contents (kconf, ktext, -1, NULL));
  g_autofree char *msock = g_build_filename (dir, "milter-2.sock", NULL);
  g_autofree char *mlog = g_build_filename (dir, "log", "daemon-2.log", NULL);
  daemon_ = mta_milter_start (msock, kconf, mlog, NULL);
  g_autofree char *m = g_strdup_printf (
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: held\r\n"
    "Message-ID: <client-kill-1@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
    "\tURL=\"http://127.0.0.1:%u/hold?gate=exim-kill&n=1\"\r\n\r\nContent-Type: text/plain\r\n\r\n--b--\r\n", http_port);
  g_autofree char *file = g_build_filename (dir, "held.eml", NULL);
  g_assert_true (g_file_set_contents (file, m, -1, NULL));
  g_autofree char *send = script ("send.py");
  g_autofree char *port = g_strdup_printf ("%u", smtp_port);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE, &error, "python3", send, port, file,
                                                "client@test.example", NULL);
  g_assert_no_error (error);
  g_assert_true (mta_milter_held_wait (http_port, "exim-kill"));
  mta_milter_signal (daemon_, SIGKILL);
  mta_milter_killed (&daemon_);
  g_assert_true (g_subprocess_wait_check (p, NULL, NULL));
  g_autofree char *got = delivered ("client", "<client-kill-1@test.example>", 60);
  g_assert_nonnull (got);
  g_autofree char *want = test_crlf_to_lf (m);
  g_assert_cmpstr (after_trace (got), ==, want);
  g_autofree char *clog = read_text ("log/extbodyc.log");
  g_test_message ("%s", clog);
  g_assert_nonnull (strstr (clog, "the connection closed without an answer; message passed through unchanged\n"));
  g_autofree char *id = exim_id (got);
  g_autofree char *done = g_strdup_printf ("%s Completed", id);
  g_assert_true (wait_log ("log/mainlog", done, 30));
  g_assert_cmpuint (count_in ("client", "<client-kill-1@test.example>"), ==, 1);
  g_assert_cmpint (test_http_get_number (http_port, "/open?gate=exim-kill"), ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  const char *exim = g_getenv ("EXTBODY_TEST_EXIM");
  if (!exim || !*exim)
    exim = "/opt/extbody-test-exim/usr/sbin/exim4";
  if (geteuid () != 0)
    test_skip_all ("needs root (a private mount namespace with Exim's user; Exim's privilege handling)");
  if (!g_file_test (exim, G_FILE_TEST_IS_EXECUTABLE))
    test_skip_all ("no unpacked Exim (EXTBODY_TEST_EXIM, default /opt/extbody-test-exim/usr/sbin/exim4: "
                   "sh tests/quickstart.sh test unpacks Debian's exim4-daemon-light there)");
  if (!g_getenv ("EXTBODY"))
    test_skip_all ("EXTBODY is not set (run through ctest)");
  g_setenv ("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", FALSE);
  g_setenv ("EXIM", exim, TRUE);
  if (test_sh ("unshare --mount --propagation private true >/dev/null 2>&1", NULL) != 0)
    test_skip_all ("unshare --mount does not work here (Exim's user lives in a private /etc/passwd)");
  /* it runs when it gets as far as its version, or as looking up its user
   * (Debian-exim, which exim-peer.sh provides in the namespace) */
  g_autofree char *check = g_strdup_printf ("'%s' -bV 2>&1 | grep -q -e '^Exim version' -e 'failed to find uid'", exim);
  if (test_sh (check, NULL) != 0)
    test_skip_all ("the unpacked Exim does not run (its libraries: sh tests/quickstart.sh test installs them)");
  {
    /* its version from the Debian changelog of the package it was unpacked
     * from (exim -bV stops before it outside exim-peer.sh's namespace) */
    g_autofree char *bv = NULL;
    g_autofree char *prefix = g_path_get_dirname (exim);   /* ROOT/usr/sbin */
    g_autofree char *cmd = g_strdup_printf ("zcat '%s/../share/doc/exim4-base/changelog.Debian.gz' | "
                                            "sed -n '1s/^exim4 (\\([0-9]*\\)\\.\\([0-9]*\\).*/\\1 \\2/p'",
                                            prefix);
    test_sh (cmd, &bv);
    if (!bv || sscanf (bv, "%u %u", &exim_major, &exim_minor) != 2)
      g_error ("no version of Exim in %s/../share/doc/exim4-base/changelog.Debian.gz", prefix);
    g_test_message ("Exim %u.%u (message ids of %d characters)", exim_major, exim_minor,
                    exim_major == 4 && exim_minor < 97 ? 16 : 23);
  }

  /* whatever way this program ends, the watchdog removes the directory last */
  guint wd_dir = 0;
  dir = mta_dir_make ("exim", &wd_dir);
  peer = script ("exim-peer.sh");
  g_autoptr (GError) error = NULL;

  httpd = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);
  http_port = httpd->port;

  /* Exim runs the filter as its own user, who may not reach the checkout
   * (root's 0700 home) nor the build tree: the wrapper and extbody are copied
   * into a directory of the test's own that everyone can read */
  g_autofree char *run = mta_dir_public (dir, "run");
  g_autofree char *wrapper_src = g_test_build_filename (G_TEST_DIST, "..", "filters", "exim", "extbody-exim", NULL);
  g_autofree char *wrapper = test_copy_for_everyone (wrapper_src, run, NULL, 0755);
  g_autofree char *extbody = test_copy_for_everyone (g_getenv ("EXTBODY"), run, NULL, 0755);
  g_autofree char *conf = g_strdup_printf ("[extbody]\nfetch = on\nallow_networks = 127.0.0.1/32\n"
                                           "fetch_timeout = 2\nmessage_deadline = 4\n");
  write_conf ("extbody", conf);

  /* the daemon's door: extbodyc, copied for Exim's user, against a private
   * daemon whose http_socket is in this directory (mode 0777: milter_umask
   * 000, since Exim's user is in none of root's groups). Every delivery
   * runs as that one user, so, as filters/exim/README.md tells such a site,
   * http_max_peer_connections is twice http_max_connections (16): the
   * bursts' 10 sessions are never refused past one user's share */
  if (g_getenv ("EXTBODYC") && g_getenv ("EXTBODYD")) {
    g_autofree char *client = test_copy_for_everyone (g_getenv ("EXTBODYC"), run, NULL, 0755);
    g_setenv ("EXTBODYC", client, TRUE);
    daemon_conf = g_build_filename (dir, "daemon.conf", NULL);
    g_autofree char *dtext = g_strdup_printf ("[extbody]\nfetch = off\nmilter_umask = 000\nhttp_socket = unix:%s/http.sock\n"
                                              "http_max_peer_connections = 32\n", dir);
    g_assert_true (g_file_set_contents (daemon_conf, dtext, -1, NULL));
    g_autofree char *msock = g_build_filename (dir, "milter.sock", NULL);
    g_autofree char *mlog = g_build_filename (dir, "log", "daemon.log", NULL);
    g_autofree char *logdir = g_build_filename (dir, "log", NULL);
    g_mkdir_with_parents (logdir, 0755);
    daemon_ = mta_milter_start (msock, daemon_conf, mlog, NULL);
  } else
    g_unsetenv ("EXTBODYC");

  g_autofree char *up = g_strdup_printf ("sh '%s' up '%s' {PORT} '%s' '%s' %d", peer, dir, wrapper, extbody,
                                         FILTER_LIMIT);
  g_autofree char *down = g_strdup_printf ("sh '%s' down '%s'", peer, dir);
  guint wd_exim = test_watchdog_add (down);
  g_free (test_sh_on_free_port (up, &smtp_port, NULL));
  {
    g_autofree char *pid = read_text ("exim.pid");
    g_autofree char *info = g_strdup_printf ("exim=%d httpd=%s smtp=%u http=%u", atoi (pid),
                                             g_subprocess_get_identifier (httpd->proc), smtp_port, http_port);
    test_abort_point ("exim", info);
  }

  g_test_add_func ("/exim/0-configuration-lines", test_config_lines);
  g_test_add_func ("/exim/1-data-reference", test_data_reference);
  g_test_add_func ("/exim/1b-person-words-kept", test_person_words);
  g_test_add_func ("/exim/2-http-reference", test_http_reference);
  g_test_add_func ("/exim/3-no-reference-byte-identical", test_unchanged);
  g_test_add_func ("/exim/3b-forged-trace-fields-removed", test_forged_trace);
  g_test_add_func ("/exim/4-stalled-reference", test_stalled);
  g_test_add_func ("/exim/5-200-messages-10-sessions", test_burst);
  g_test_add_func ("/exim/5b-mbox", test_mbox);
  g_test_add_func ("/exim/6-failure-delivered-as-it-came", test_failure_accept);
  g_test_add_func ("/exim/7-failure-deferred", test_failure_tempfail);
  g_test_add_func ("/exim/8-stopped-after-limit", test_failure_stopped);
  g_test_add_func ("/exim/9-client-data-reference", test_client_data_reference);
  g_test_add_func ("/exim/9b-client-200-messages-10-sessions", test_client_burst);
  g_test_add_func ("/exim/9b2-client-200-messages-4-reloads", test_client_burst_reloaded);
  g_test_add_func ("/exim/9c-client-daemon-down", test_client_daemon_down);
  g_test_add_func ("/exim/9d-client-daemon-killed-mid-message", test_client_killed_mid_message);
  int rc = g_test_run ();

  test_sh (down, NULL);
  test_watchdog_remove (wd_exim);
  g_clear_pointer (&daemon_, mta_milter_free);
  g_free (daemon_conf);
  g_clear_pointer (&httpd, test_server_stop);
  mta_dir_remove (dir, wd_dir);
  g_free (peer);
  g_free (dir);
  return rc;
}
