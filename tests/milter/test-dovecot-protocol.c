/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-dovecot-protocol.c - extbodyd's listener for Dovecot's
 * program-client protocol (dovecot_filter_socket) against the real daemon,
 * the client's bytes written by hand as Dovecot 2.3 writes them
 * (tests/dovecot/test-dovecot-socket.c goes through a real Dovecot): the
 * answer is what `extbody rewrite --filter` writes and "+\n"; a message past
 * max_message_size, another protocol and an idle client (dovecot_timeout)
 * get "-\n" alone; past dovecot_max_connections a connection waits for one
 * to end; at the stop the socket goes at once and a message in flight is
 * finished. Issue 39: a client that sends a byte now and then is cut off
 * after dovecot_request_timeout ("-"); a flood of slow connections from one
 * local user (nobody) holds at most dovecot_max_peer_connections while
 * another user's deliveries are served as usual; and four 16 MiB messages
 * at once are spooled (the daemon's VmHWM read from /proc). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "mta-dir.h"
#include "mta-doors.h"
#include "mta-milter.h"
#include "test-server.h"

#define TEST_MAX_MESSAGE_SIZE 4000
#define TEST_TIMEOUT 1
#define TEST_REQUEST_TIMEOUT 3
#define HEADER "VERSION\tscript\t4\t0\nenv_USER=u\nenv_SENDER=s@example.org\n-\n-c\n/ignored\n\n"
#define CRLF "\r\n"
#define REF_MSG                                                                                   \
  "From: a@example.org" CRLF "Message-ID: <p@test.example>" CRLF "MIME-Version: 1.0" CRLF        \
  "X-Extbody: forged" CRLF                                                                       \
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,hello\"" CRLF CRLF          \
  "Content-Type: text/plain" CRLF CRLF

static char      *dir, *conf, *dsock;
static MtaMilter *milter;

static int
dc_connect (void)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  g_strlcpy (sa.sun_path, dsock, sizeof sa.sun_path);
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  g_assert_cmpint (fd, >=, 0);
  g_assert_cmpint (connect (fd, (struct sockaddr *) &sa, sizeof sa), ==, 0);
  return fd;
}

static void
dc_send (int fd, const char *data, gsize len)
{
  while (len) {
    ssize_t n = send (fd, data, len, MSG_NOSIGNAL);
    g_assert_cmpint (n, >, 0);
    data += n;
    len -= (gsize) n;
  }
}

static char *
dc_read_all (int fd)
{
  GString *s = g_string_new (NULL);
  char buf[4096];
  ssize_t n;
  while ((n = recv (fd, buf, sizeof buf, 0)) > 0)
    g_string_append_len (s, buf, n);
  close (fd);
  return g_string_free (s, FALSE);
}

/* One exchange: @head, @msg, the end of the input; the whole answer. */
static char *
exchange (const char *head, const char *msg)
{
  int fd = dc_connect ();
  dc_send (fd, head, strlen (head));
  dc_send (fd, msg, strlen (msg));
  shutdown (fd, SHUT_WR);
  return dc_read_all (fd);
}

static char *
rewrite_filter (const char *msg)
{
  g_autofree char *file = g_build_filename (dir, "cmd.eml", NULL);
  g_assert_true (g_file_set_contents (file, msg, -1, NULL));
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                                                 | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
  g_subprocess_launcher_set_stdin_file_path (l, file);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = g_subprocess_launcher_spawn (l, &error, g_getenv ("EXTBODY"), "rewrite", "--filter",
                                                           "-c", conf, NULL);
  g_assert_no_error (error);
  char *out = NULL;
  g_subprocess_communicate_utf8 (p, NULL, NULL, &out, NULL, &error);
  g_assert_no_error (error);
  return out;
}

static void
test_filtered (void)
{
  g_autofree char *got = exchange (HEADER, REF_MSG);
  g_autofree char *want = rewrite_filter (REF_MSG);
  g_assert_nonnull (strstr (want, CRLF CRLF "hello"));
  g_autofree char *want_plus = g_strconcat (want, "+\n", NULL);
  g_assert_cmpstr (got, ==, want_plus);
  /* header and message in separate pieces, the header cut inside a line */
  int fd = dc_connect ();
  dc_send (fd, HEADER, 10);
  g_usleep (100000);
  dc_send (fd, &HEADER[10], strlen (HEADER) - 10);
  g_usleep (100000);
  dc_send (fd, REF_MSG, strlen (REF_MSG));
  shutdown (fd, SHUT_WR);
  g_autofree char *again = dc_read_all (fd);
  g_assert_cmpstr (again, ==, want_plus);
}

static void
test_failures (void)
{
  g_autoptr (GString) large = g_string_new (REF_MSG);
  while (large->len <= TEST_MAX_MESSAGE_SIZE)
    g_string_append (large, "a line to pass max_message_size" CRLF);
  g_autofree char *a = exchange (HEADER, large->str);
  g_assert_cmpstr (a, ==, "-\n");
  /* (another version: answered at its header, the rest unread, so nothing
   * follows it here) */
  g_autofree char *b = exchange ("VERSION\tscript\t3\t0\n-\n\n", "");
  g_assert_cmpstr (b, ==, "-\n");
  g_autofree char *c = exchange (HEADER, "");
  g_assert_cmpstr (c, ==, "-\n");
  g_assert_true (mta_milter_log_wait (milter, "larger than max_message_size", 1));
}

/* A client that sends half a message and waits is cut off after
 * dovecot_timeout, answered "-". */
static void
test_idle (void)
{
  int fd = dc_connect ();
  dc_send (fd, HEADER "From: a", strlen (HEADER) + 7);
  gint64 t0 = g_get_monotonic_time ();
  g_autofree char *got = dc_read_all (fd);
  gint64 took = g_get_monotonic_time () - t0;
  g_assert_cmpstr (got, ==, "-\n");
  g_assert_cmpint (took, >=, (TEST_TIMEOUT * G_USEC_PER_SEC) * 9 / 10);
  g_assert_cmpint (took, <, (TEST_TIMEOUT + 5) * G_USEC_PER_SEC);
  g_assert_true (mta_milter_log_wait (milter, "cut off after dovecot_timeout", 1));
}

/* dovecot_max_connections = 1: a second client waits until the first ends,
 * then is served. */
static void
test_max_connections (void)
{
  int first = dc_connect ();
  dc_send (first, HEADER, strlen (HEADER));
  g_usleep (200000);
  int second = dc_connect ();
  dc_send (second, HEADER, strlen (HEADER));
  dc_send (second, REF_MSG, strlen (REF_MSG));
  shutdown (second, SHUT_WR);
  /* not served while the first holds the only place */
  struct timeval tv = { .tv_usec = 300000 };
  setsockopt (second, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char c;
  g_assert_cmpint (recv (second, &c, 1, MSG_PEEK), ==, -1);
  g_assert_true (errno == EAGAIN || errno == EWOULDBLOCK);
  tv.tv_usec = 0;
  tv.tv_sec = 10;
  setsockopt (second, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  dc_send (first, REF_MSG, strlen (REF_MSG));
  shutdown (first, SHUT_WR);
  g_autofree char *a = dc_read_all (first);
  g_autofree char *b = dc_read_all (second);
  g_assert_true (g_str_has_suffix (a, "+\n"));
  g_assert_cmpstr (a, ==, b);
}

/* A client that keeps sending, a byte every 0.3 s (faster than
 * dovecot_timeout), is cut off dovecot_request_timeout after it connected,
 * answered "-" (the message stays as it came). */
static void
test_slow_request (void)
{
  int fd = dc_connect ();
  gint64 t0 = g_get_monotonic_time ();
  dc_send (fd, HEADER "From: a", strlen (HEADER) + 7);
  GString *got = g_string_new (NULL);
  gboolean closed = FALSE;
  while (!closed && g_get_monotonic_time () - t0 < 3 * TEST_REQUEST_TIMEOUT * G_USEC_PER_SEC) {
    send (fd, "a", 1, MSG_NOSIGNAL);
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (poll (&p, 1, 300) > 0) {
      char buf[256];
      ssize_t n = recv (fd, buf, sizeof buf, 0);
      if (n <= 0)
        closed = TRUE;
      else
        g_string_append_len (got, buf, n);
    }
  }
  close (fd);
  double took = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  g_test_message ("answered \"%s\" after %.1f s", got->str, took);
  g_assert_true (closed);
  g_assert_cmpstr (got->str, ==, "-\n");
  g_string_free (got, TRUE);
  g_assert_cmpfloat (took, >=, TEST_REQUEST_TIMEOUT - 0.5);
  g_assert_cmpfloat (took, <, TEST_REQUEST_TIMEOUT + 3);
  g_assert_true (mta_milter_log_wait (milter, "cut off after dovecot_request_timeout", 1));
}

/* A client whose bytes are always there (a message past max_message_size
 * that never ends, sent as fast as the daemon reads it, which drops it): it
 * is cut off dovecot_request_timeout after it connected too, though the
 * daemon never has to wait for it. */
static void
test_endless_message (void)
{
  guint before = mta_milter_log_count (milter, "bytes in: cut off after dovecot_request_timeout");
  int fd = dc_connect ();
  dc_send (fd, HEADER, strlen (HEADER));
  char block[65536];
  memset (block, 'a', sizeof block);
  gint64 t0 = g_get_monotonic_time ();
  guint64 sent = 0;
  while (g_get_monotonic_time () - t0 < 20 * G_USEC_PER_SEC) {
    ssize_t n = send (fd, block, sizeof block, MSG_NOSIGNAL);
    if (n <= 0)
      break;
    sent += (guint64) n;
  }
  double took = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  g_autofree char *got = dc_read_all (fd);
  g_test_message ("%" G_GUINT64_FORMAT " bytes sent in %.1f s, answered \"%s\"", sent, took, got);
  g_assert_cmpfloat (took, <, TEST_REQUEST_TIMEOUT + 3);
  g_assert_true (mta_milter_log_wait (milter, "bytes in: cut off after dovecot_request_timeout", before + 1));
}

/* A delivery as @user through @sock, as Dovecot makes it: the answer, and
 * how long it took. */
static char *
deliver_as (const char *user, const char *sock, const char *msg, double *took)
{
  const char *py =
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX); s.settimeout(20); s.connect(sys.argv[1])\n"
    "s.sendall(b'VERSION\\tscript\\t4\\t0\\n-\\n\\n' + sys.argv[2].encode())\n"
    "s.shutdown(socket.SHUT_WR)\n"
    "out = b''\n"
    "while True:\n"
    "    d = s.recv(65536)\n"
    "    if not d: break\n"
    "    out += d\n"
    "sys.stdout.buffer.write(out)\n";
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (GSubprocess) p = mta_doors_spawn_as (user, G_SUBPROCESS_FLAGS_STDOUT_PIPE,
                                                  (const char *[]) { "/usr/bin/python3", "-c", py, sock, msg, NULL });
  char *out = NULL;
  g_autoptr (GError) error = NULL;
  g_subprocess_communicate_utf8 (p, NULL, NULL, &out, NULL, &error);
  g_assert_no_error (error);
  *took = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  return out;
}

/* A daemon of its own named @name, of default limits but for @extra. */
static MtaMilter *
own_daemon (const char *name, const char *extra, char **sock)
{
  g_autofree char *oconf = g_strdup_printf ("%s/%s.conf", dir, name);
  *sock = g_strdup_printf ("%s/%s-extbody", dir, name);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = off\ndovecot_filter_socket = %s\n%s", *sock, extra);
  g_assert_true (g_file_set_contents (oconf, text, -1, NULL));
  g_autofree char *msock = g_strdup_printf ("%s/%s-milter.sock", dir, name);
  g_autofree char *log = g_strdup_printf ("%s/%s.log", dir, name);
  return mta_milter_start (msock, oconf, log, NULL);
}

/* A flood of slow connections from one local user (nobody, 40 connections,
 * each sending a byte of a message that never ends every 0.5 s) against a
 * daemon of default limits but for short timeouts: nobody holds at most
 * dovecot_max_peer_connections of them (the rest answered "-" at once, those
 * held cut off after dovecot_request_timeout), and meanwhile another
 * ordinary user's deliveries (uid 65533) are filtered, each within the usual
 * latency. */
static void
test_peer_flood (void)
{
  if (!mta_doors_can_switch_user ()) {
    g_test_skip ("needs root, setpriv and the user nobody");
    return;
  }
  g_autofree char *fsock = NULL;
  g_autoptr (MtaMilter) m = own_daemon ("flood", "dovecot_timeout = 2\ndovecot_request_timeout = 6\n", &fsock);
  double usual = 0;
  g_autofree char *first = deliver_as ("65533", fsock, REF_MSG, &usual);
  g_assert_true (g_str_has_suffix (first, CRLF CRLF "hello+\n"));
  g_autofree char *source = g_test_build_filename (G_TEST_DIST, "milter", "slow-clients.py", NULL);
  g_autofree char *script = mta_doors_for_everyone (dir, source);
  g_autoptr (GSubprocess) flood = mta_doors_spawn_as ("nobody", G_SUBPROCESS_FLAGS_STDOUT_PIPE, (const char *[]) {
    "/usr/bin/python3", script, "--socket", fsock, "--door", "dovecot", "--connections", "40", "--interval", "0.5",
    "--duration", "9", NULL });
  g_usleep (1500000);   /* the flood has begun */
  for (guint i = 0; i < 8; i++) {
    double took = 0;
    g_autofree char *out = deliver_as ("65533", fsock, REF_MSG, &took);
    g_test_message ("delivery %u: %.2f s (alone: %.2f s)", i, took, usual);
    g_assert_cmpstr (out, ==, first);
    g_assert_cmpfloat (took, <, usual + 2);
    g_usleep (500000);
  }
  g_autofree char *report = NULL;
  g_autoptr (GError) error = NULL;
  g_subprocess_communicate_utf8 (flood, NULL, NULL, &report, NULL, &error);
  g_assert_no_error (error);
  g_test_message ("nobody's flood: %s", report);
  g_assert_nonnull (strstr (report, "opened 40 refused-at-once 32 cut 8 open 0 answers -=40"));
  g_assert_cmpuint (mta_milter_log_count (m, "dovecot: a connection from uid 65534 (nobody) refused: it holds "
                                             "dovecot_max_peer_connections (8) already"), ==, 32);
  g_assert_cmpuint (mta_milter_log_count (m, "cut off after dovecot_request_timeout"), ==, 8);
  g_assert_cmpint (mta_milter_stop (m, FALSE), ==, 0);
}

/* Memory per message: four 16 MiB messages at once raise the daemon's peak
 * memory (VmHWM, the spool files' pages counted while mapped) by about the
 * messages themselves, at most 1.6 times (the sanitizers take their share),
 * spooled as their answers are; it was three times them, all in memory. */
static void
test_big_messages (void)
{
  g_autofree char *bsock = NULL;
  g_autoptr (MtaMilter) m = own_daemon ("big", "", &bsock);
  double ratio = mta_doors_big_at_once (m, bsock, TRUE, 4, 16);
  g_assert_cmpfloat (ratio, <, 1.6);   /* 1.0 to 1.3 under the sanitizers; it was 3.0 */
  g_assert_cmpint (mta_milter_stop (m, FALSE), ==, 0);
}

/* SIGTERM while a message is on its way: the socket goes at once, the
 * message in flight is finished ("+"), and the daemon exits 0. */
static void
test_drain (void)
{
  int fd = dc_connect ();
  dc_send (fd, HEADER "From: a@example.org" CRLF, strlen (HEADER) + 21);
  g_usleep (200000);
  mta_milter_signal (milter, SIGTERM);
  g_assert_true (mta_milter_log_wait (milter, "1 Dovecot filter connection in flight", 1));
  for (int i = 0; i < 100 && g_file_test (dsock, G_FILE_TEST_EXISTS); i++)
    g_usleep (20000);
  g_assert_false (g_file_test (dsock, G_FILE_TEST_EXISTS));
  const char *rest = &REF_MSG[21];
  dc_send (fd, rest, strlen (rest));
  shutdown (fd, SHUT_WR);
  g_autofree char *got = dc_read_all (fd);
  g_autofree char *want = rewrite_filter (REF_MSG);
  g_autofree char *want_plus = g_strconcat (want, "+\n", NULL);
  g_assert_cmpstr (got, ==, want_plus);
  g_assert_cmpint (mta_milter_wait (milter, TRUE), ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (!g_getenv ("EXTBODYD") || !g_getenv ("EXTBODY"))
    test_skip_all ("EXTBODYD or EXTBODY is not set (run through ctest)");
  guint wd_dir = 0;
  dir = mta_dir_make ("dovecot-protocol", &wd_dir);
  conf = g_build_filename (dir, "extbody.conf", NULL);
  dsock = g_build_filename (dir, "extbody", NULL);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = off\ndovecot_filter_socket = %s\n"
                                           "max_message_size = %d\ndovecot_timeout = %d\n"
                                           "dovecot_max_connections = 1\ndovecot_request_timeout = %d\n",
                                           dsock, TEST_MAX_MESSAGE_SIZE, TEST_TIMEOUT, TEST_REQUEST_TIMEOUT);
  g_assert_true (g_file_set_contents (conf, text, -1, NULL));
  g_autofree char *sock = g_build_filename (dir, "milter.sock", NULL);
  g_autofree char *log = g_build_filename (dir, "milter.log", NULL);
  milter = mta_milter_start (sock, conf, log, NULL);
  g_test_add_func ("/dovecot-protocol/filtered", test_filtered);
  g_test_add_func ("/dovecot-protocol/failures", test_failures);
  g_test_add_func ("/dovecot-protocol/idle", test_idle);
  g_test_add_func ("/dovecot-protocol/max-connections", test_max_connections);
  g_test_add_func ("/dovecot-protocol/slow-request", test_slow_request);
  g_test_add_func ("/dovecot-protocol/endless-message", test_endless_message);
  g_test_add_func ("/dovecot-protocol/peer-flood", test_peer_flood);
  g_test_add_func ("/dovecot-protocol/big-messages", test_big_messages);
  g_test_add_func ("/dovecot-protocol/drain", test_drain);   /* the last: it stops the daemon */
  int rc = g_test_run ();
  if (milter->proc)
    g_assert_cmpint (mta_milter_stop (milter, TRUE), ==, 0);
  g_assert_false (g_file_test (dsock, G_FILE_TEST_EXISTS));   /* removed at the stop */
  mta_milter_free (milter);
  mta_dir_remove (dir, wd_dir);
  return rc;
}
