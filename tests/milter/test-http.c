/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-http.c - extbodyd's HTTP listener (http_socket), against the real
 * daemon: each answer of POST /rewrite and /inspect is what the command
 * writes for the same message and configuration; GET /metrics counts them;
 * the limits (max_message_size, http_timeout, http_max_connections) and the
 * errors; and one listener on TCP loopback. Issue 28's door under load: 200
 * messages from 10 sessions at once, the same with the daemon reloaded 4
 * times across requests half-sent, a client gone in the middle of its body
 * (logged, the next request served, /metrics read by prometheus_client), and
 * the daemon killed in the middle of a message (no answer at all; extbodyc
 * passes the message through as it came). Issue 39's hostile clients: heads
 * whose framing is ambiguous refused (400) whatever the chunk sizes, chunked
 * bodies and pipelined requests, a client dribbling its head or body cut off
 * after http_request_timeout (408), a flood of slow connections from nobody
 * held to http_max_peer_connections while another user's messages resolve,
 * /externalize and /metrics refused to nobody until the configuration names
 * it, and four 16 MiB messages at once spooled (the daemon's VmHWM read from
 * /proc). Requests are written by hand. */
#include <errno.h>
#include <signal.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>

#include "mta-dir.h"
#include "mta-doors.h"
#include "mta-milter.h"
#include "test-server.h"

/* the test configuration's limits */
#define TEST_MAX_MESSAGE_SIZE 200000
#define TEST_HTTP_TIMEOUT     2
#define TEST_HTTP_REQUEST_TIMEOUT 4
#define TEST_HTTP_MAX_CONNS   2

static char      *dir;      /* the test's directory */
static char      *conf;     /* its configuration, the daemon's and the command's */
static char      *http_sock;
static MtaMilter *milter;
static guint      n_rewrites;   /* messages the daemon planned: its extbody_messages_total */

typedef struct {
  guint       status;
  GHashTable *fields;   /* lower-case name -> value */
  GBytes     *body;
} Response;

static void
response_free (Response *r)
{
  g_hash_table_unref (r->fields);
  g_bytes_unref (r->body);
  g_free (r);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Response, response_free)

static GSocketConnection *
connect_to (GSocketAddress *addr)
{
  g_autoptr (GSocketClient) client = g_socket_client_new ();
  g_socket_client_set_timeout (client, 30);
  g_autoptr (GError) error = NULL;
  GSocketConnection *c = g_socket_client_connect (client, G_SOCKET_CONNECTABLE (addr), NULL, &error);
  g_assert_no_error (error);
  return c;
}

static GSocketConnection *
connect_unix (void)
{
  g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (http_sock);
  return connect_to (addr);
}

static void
send_bytes (GSocketConnection *c, const void *data, gsize len)
{
  g_autoptr (GError) error = NULL;
  GOutputStream *out = g_io_stream_get_output_stream (G_IO_STREAM (c));
  g_output_stream_write_all (out, data, len, NULL, NULL, &error);
  g_assert_no_error (error);
}

/* Everything until the server closes the connection (the requests say
 * Connection: close). */
static GBytes *
read_to_end (GSocketConnection *c)
{
  GInputStream *in = g_io_stream_get_input_stream (G_IO_STREAM (c));
  GByteArray *all = g_byte_array_new ();
  char buf[65536];
  for (;;) {
    g_autoptr (GError) error = NULL;
    gssize n = g_input_stream_read (in, buf, sizeof buf, NULL, &error);
    /* never a reset: an answer given before the request's end is followed
     * by the daemon reading the rest (daemon-linger.c) */
    g_assert_no_error (error);
    if (n == 0)
      break;
    g_byte_array_append (all, (guint8 *) buf, (guint) n);
  }
  return g_byte_array_free_to_bytes (all);
}

static Response *
parse_response (GBytes *raw)
{
  gsize len = 0;
  const char *data = g_bytes_get_data (raw, &len);
  const char *end = data ? g_strstr_len (data, (gssize) len, "\r\n\r\n") : NULL;
  g_assert_nonnull (end);
  g_autofree char *head = g_strndup (data, (gsize) (end - data));
  g_auto (GStrv) lines = g_strsplit (head, "\r\n", -1);
  Response *r = g_new0 (Response, 1);
  g_assert_true (g_str_has_prefix (lines[0], "HTTP/1.1 "));
  r->status = (guint) g_ascii_strtoull (lines[0] + 9, NULL, 10);
  r->fields = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  for (guint i = 1; lines[i]; i++) {
    const char *colon = strchr (lines[i], ':');
    g_assert_nonnull (colon);
    g_hash_table_insert (r->fields, g_ascii_strdown (lines[i], colon - lines[i]),
                         g_strstrip (g_strdup (colon + 1)));
  }
  gsize off = (gsize) (end + 4 - data);
  r->body = g_bytes_new_from_bytes (raw, off, len - off);
  const char *cl = g_hash_table_lookup (r->fields, "content-length");
  if (cl)
    g_assert_cmpuint (g_ascii_strtoull (cl, NULL, 10), ==, len - off);
  return r;
}

/* @method @path with @body (NULL: none, and no Content-Length) over @c. */
static Response *
request_on (GSocketConnection *c, const char *method, const char *path, GBytes *body)
{
  g_autofree char *head = body
    ? g_strdup_printf ("%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                       "Content-Type: message/rfc822\r\nContent-Length: %" G_GSIZE_FORMAT "\r\n\r\n",
                       method, path, g_bytes_get_size (body))
    : g_strdup_printf ("%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", method, path);
  send_bytes (c, head, strlen (head));
  if (body && g_bytes_get_size (body)) {
    /* an answer given at once (404, 413, 503) ends the connection before the
     * body is taken: the answer is read all the same */
    GOutputStream *out = g_io_stream_get_output_stream (G_IO_STREAM (c));
    g_output_stream_write_all (out, g_bytes_get_data (body, NULL), g_bytes_get_size (body), NULL, NULL, NULL);
  }
  g_autoptr (GBytes) raw = read_to_end (c);
  return parse_response (raw);
}

static Response *
request (const char *method, const char *path, GBytes *body)
{
  g_autoptr (GSocketConnection) c = connect_unix ();
  return request_on (c, method, path, body);
}

/* What `extbody ARGS...` writes, with @input (a file) as its standard input
 * when given. */
static GBytes *
run_command (const char *input, const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (char *) g_getenv ("EXTBODY"));
  for (guint i = 0; args[i]; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                                                 | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
  if (input)
    g_subprocess_launcher_set_stdin_file_path (l, input);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, &error);
  g_assert_no_error (error);
  GBytes *out = NULL;
  g_subprocess_communicate (p, NULL, NULL, &out, NULL, &error);
  g_assert_no_error (error);
  return out;
}

/* The messages: data/samples/ and the corpus of tests/, and one written
 * here whose header carries trace fields a sender forged. */
static GPtrArray *
message_files (void)
{
  GPtrArray *files = g_ptr_array_new_with_free_func (g_free);
  const char *dirs[] = { g_getenv ("EXTBODY_DATADIR"), NULL };
  g_autofree char *samples = g_build_filename (dirs[0], "samples", NULL);
  g_autofree char *corpus = g_test_build_filename (G_TEST_DIST, "corpus", NULL);
  const char *where[] = { samples, corpus };
  for (guint d = 0; d < G_N_ELEMENTS (where); d++) {
    g_autoptr (GDir) gd = g_dir_open (where[d], 0, NULL);
    g_assert_nonnull (gd);
    const char *name;
    while ((name = g_dir_read_name (gd)))
      if (g_str_has_suffix (name, ".eml"))
        g_ptr_array_add (files, g_build_filename (where[d], name, NULL));
  }
  g_autofree char *forged = g_build_filename (dir, "forged.eml", NULL);
  const char *text =
    "From: a@example.org\r\nTo: b@example.net\r\nSubject: forged\r\n"
    "X-Extbody-Resolved: 1 reference (forged)\r\nX-Extbody: forged\r\n"
    "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n"
    "--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
    " URL=\"data:text/plain;base64,aGVsbG8gd29ybGQK\"\r\n\r\n"
    "Content-Type: text/plain\r\n\r\n\r\n--b--\r\n";
  g_assert_true (g_file_set_contents (forged, text, -1, NULL));
  g_ptr_array_add (files, g_steal_pointer (&forged));
  g_assert_cmpuint (files->len, >=, 10);
  return files;
}

static guint
count_lines (GBytes *b)
{
  gsize len = 0;
  const char *d = g_bytes_get_data (b, &len);
  guint n = 0;
  for (gsize i = 0; i < len; i++)
    n += d[i] == '\n';
  return n;
}

/* POST /rewrite answers the bytes of `extbody rewrite --filter`, with the
 * Extbody-* fields; POST /inspect the lines of `extbody inspect --json -`. */
static void
test_rewrite_and_inspect (void)
{
  g_autoptr (GPtrArray) files = message_files ();
  guint changed = 0;
  for (guint i = 0; i < files->len; i++) {
    const char *file = files->pdata[i];
    g_test_message ("%s", file);
    g_autoptr (GMappedFile) mf = g_mapped_file_new (file, FALSE, NULL);
    g_assert_nonnull (mf);
    g_autoptr (GBytes) msg = g_mapped_file_get_bytes (mf);
    g_autoptr (GBytes) want = run_command (NULL, (const char *[]) { "rewrite", "--filter", "-c", conf, file, NULL });
    g_autoptr (Response) r = request ("POST", "/rewrite", msg);
    n_rewrites++;
    g_assert_cmpuint (r->status, ==, 200);
    g_assert_cmpstr (g_hash_table_lookup (r->fields, "content-type"), ==, "message/rfc822");
    g_assert_true (g_bytes_equal (r->body, want));
    gboolean differs = !g_bytes_equal (want, msg);
    changed += differs;
    g_assert_cmpstr (g_hash_table_lookup (r->fields, "extbody-changed"), ==, differs ? "yes" : "no");

    g_autoptr (GBytes) json = run_command (file, (const char *[]) { "inspect", "--json", "-c", conf, "-", NULL });
    g_autoptr (Response) ri = request ("POST", "/inspect", msg);
    g_assert_cmpuint (ri->status, ==, 200);
    g_assert_cmpstr (g_hash_table_lookup (ri->fields, "content-type"), ==, "application/json");
    g_assert_true (g_bytes_equal (ri->body, json));

    /* every reference inspect lists is one rewrite counts; fetch = off, so
     * only data: URLs resolve, and a resolved one changes the message */
    guint refs = (guint) g_ascii_strtoull (g_hash_table_lookup (r->fields, "extbody-references"), NULL, 10);
    guint resolved = (guint) g_ascii_strtoull (g_hash_table_lookup (r->fields, "extbody-resolved"), NULL, 10);
    g_assert_cmpuint (refs, ==, count_lines (json));
    g_assert_cmpuint (resolved, <=, refs);
    if (resolved)
      g_assert_true (differs);
  }
  g_assert_cmpuint (changed, >=, 2);   /* the samples' data: references and the forged fields */
  g_assert_cmpuint (mta_milter_log_count (milter, "http: POST /rewrite 200"), ==, files->len);
}

/* POST /rewrite?stored answers what `extbody rewrite` (without --filter)
 * writes, as `extbody rewrite --maildir` does for a stored message: the
 * trace fields a message came with kept, no X-Extbody field added, and a
 * changed message's Content-Length fields removed. */
static void
test_rewrite_stored (void)
{
  g_autoptr (GPtrArray) files = message_files ();
  guint changed = 0;
  for (guint i = 0; i < files->len; i++) {
    const char *file = files->pdata[i];
    g_test_message ("%s", file);
    g_autoptr (GMappedFile) mf = g_mapped_file_new (file, FALSE, NULL);
    g_assert_nonnull (mf);
    g_autoptr (GBytes) msg = g_mapped_file_get_bytes (mf);
    g_autoptr (GBytes) want = run_command (NULL, (const char *[]) { "rewrite", "-c", conf, file, NULL });
    g_autoptr (Response) r = request ("POST", "/rewrite?stored", msg);
    n_rewrites++;
    g_assert_cmpuint (r->status, ==, 200);
    g_assert_true (g_bytes_equal (r->body, want));
    gboolean differs = !g_bytes_equal (want, msg);
    changed += differs;
    g_assert_cmpstr (g_hash_table_lookup (r->fields, "extbody-changed"), ==, differs ? "yes" : "no");
    if (g_str_has_suffix (file, "forged.eml")) {
      g_assert_true (differs);
      g_assert_nonnull (g_strstr_len (g_bytes_get_data (r->body, NULL), (gssize) g_bytes_get_size (r->body),
                                      "X-Extbody: forged"));
    }
  }
  g_assert_cmpuint (changed, >=, 2);
  /* a changed message loses its Content-Length field, an unchanged one keeps it */
  const char *with_cl =
    "From: a@example.org\r\nSubject: cl\r\nContent-Length: 12\r\n"
    "MIME-Version: 1.0\r\nContent-Type: message/external-body; access-type=URL;\r\n"
    " URL=\"data:,hello\"\r\n\r\nContent-Type: text/plain\r\n\r\n";
  g_autoptr (GBytes) m1 = g_bytes_new_static (with_cl, strlen (with_cl));
  g_autoptr (Response) r1 = request ("POST", "/rewrite?stored", m1);
  n_rewrites++;
  g_assert_cmpuint (r1->status, ==, 200);
  g_assert_cmpstr (g_hash_table_lookup (r1->fields, "extbody-changed"), ==, "yes");
  g_assert_null (g_strstr_len (g_bytes_get_data (r1->body, NULL), (gssize) g_bytes_get_size (r1->body), "Content-Length"));
  const char *plain = "From: a@example.org\r\nSubject: cl\r\nContent-Length: 6\r\n\r\nhello\r\n";
  g_autoptr (GBytes) m2 = g_bytes_new_static (plain, strlen (plain));
  g_autoptr (Response) r2 = request ("POST", "/rewrite?stored", m2);
  n_rewrites++;
  g_assert_cmpuint (r2->status, ==, 200);
  g_assert_true (g_bytes_equal (r2->body, m2));
}

static guint64
metric (GBytes *text, const char *name)
{
  g_autofree char *s = g_strndup (g_bytes_get_data (text, NULL), g_bytes_get_size (text));
  g_autofree char *needle = g_strdup_printf ("\n%s ", name);
  const char *at = strstr (s, needle);
  g_assert_nonnull (at);
  return g_ascii_strtoull (at + strlen (needle), NULL, 10);
}

/* GET /metrics: the daemon's counters, the HTTP messages among them. */
static void
test_metrics (void)
{
  g_autoptr (Response) r = request ("GET", "/metrics", NULL);
  g_assert_cmpuint (r->status, ==, 200);
  g_assert_cmpstr (g_hash_table_lookup (r->fields, "content-type"), ==, "text/plain; version=0.0.4");
  g_assert_cmpuint (metric (r->body, "extbody_messages_total"), ==, n_rewrites);
}

static void
assert_error (Response *r, guint status)
{
  g_assert_cmpuint (r->status, ==, status);
  g_assert_cmpstr (g_hash_table_lookup (r->fields, "content-type"), ==, "text/plain");
  gsize len = 0;
  const char *d = g_bytes_get_data (r->body, &len);
  g_assert_cmpuint (len, >, 1);
  g_assert_true (d[len - 1] == '\n' && !memchr (d, '\n', len - 1));
}

/* 404, 405, 411, and /externalize without a store: 503. */
static void
test_errors (void)
{
  g_autoptr (GBytes) msg = g_bytes_new_static ("Subject: x\r\n\r\nbody\r\n", 20);
  g_autoptr (Response) r404 = request ("GET", "/nothing", NULL);
  assert_error (r404, 404);
  g_autoptr (Response) r404p = request ("POST", "/nothing", msg);
  assert_error (r404p, 404);
  g_autoptr (Response) r405 = request ("GET", "/rewrite", NULL);
  assert_error (r405, 405);
  g_autoptr (Response) r405m = request ("POST", "/metrics", msg);
  assert_error (r405m, 405);
  g_autoptr (Response) r411 = request ("POST", "/rewrite", NULL);
  assert_error (r411, 411);
  g_autoptr (Response) r503 = request ("POST", "/externalize", msg);
  assert_error (r503, 503);
  g_autofree char *line = g_strndup (g_bytes_get_data (r503->body, NULL), g_bytes_get_size (r503->body));
  g_assert_cmpstr (line, ==, "no externalize_store configured\n");
}

/* An answer given before the request's body is read (404 here) is read
 * whole, and the connection then ends cleanly: the daemon reads and drops
 * the body the client had sent before it closes (a close with unread bytes
 * resets the connection, and a client may lose the answer). */
static void
test_answer_before_body (void)
{
  for (guint i = 0; i < 5; i++) {
    g_autoptr (GSocketConnection) c = connect_unix ();
    gsize n = 64 * 1024;
    g_autoptr (GString) req = g_string_new (NULL);
    g_string_append_printf (req, "POST /nothing HTTP/1.1\r\nHost: localhost\r\nContent-Length: %" G_GSIZE_FORMAT
                            "\r\n\r\n", n);
    for (gsize k = 0; k < n; k++)
      g_string_append_c (req, 'a');
    send_bytes (c, req->str, req->len);
    g_autoptr (GBytes) raw = read_to_end (c);
    g_autoptr (Response) r = parse_response (raw);
    assert_error (r, 404);
  }
}

/* A Content-Length above max_message_size is answered 413 at once: the
 * body is never sent. */
static void
test_too_large (void)
{
  g_autoptr (GSocketConnection) c = connect_unix ();
  g_autofree char *head = g_strdup_printf ("POST /rewrite HTTP/1.1\r\nHost: localhost\r\n"
                                           "Content-Length: %d\r\n\r\n", TEST_MAX_MESSAGE_SIZE + 1);
  send_bytes (c, head, strlen (head));
  g_autoptr (GBytes) raw = read_to_end (c);
  g_autoptr (Response) r = parse_response (raw);
  assert_error (r, 413);
}

/* A client that sends half its body and stops is cut off after
 * http_timeout, answered 408; the daemon answers the next request. */
static void
test_slow_client (void)
{
  g_autoptr (GSocketConnection) c = connect_unix ();
  const char *head = "POST /rewrite HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\nSubject: half\r\n";
  send_bytes (c, head, strlen (head));
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (GBytes) raw = read_to_end (c);
  double waited = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  g_autoptr (Response) r408 = parse_response (raw);
  assert_error (r408, 408);
  g_assert_cmpstr (g_hash_table_lookup (r408->fields, "connection"), ==, "close");
  g_assert_cmpfloat (waited, >=, TEST_HTTP_TIMEOUT - 0.5);
  g_assert_cmpfloat (waited, <, TEST_HTTP_TIMEOUT + 5);
  g_assert_true (mta_milter_log_wait (milter, "cut off after http_timeout", 1));
  g_autoptr (Response) r = request ("GET", "/metrics", NULL);
  g_assert_cmpuint (r->status, ==, 200);
}

/* Past http_max_connections a new connection's request is answered 503;
 * once they close, requests are served again. */
static void
test_max_connections (void)
{
  GSocketConnection *held[TEST_HTTP_MAX_CONNS];
  const char *half = "POST /rewrite HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\nSubject: held\r\n";
  for (guint i = 0; i < TEST_HTTP_MAX_CONNS; i++) {
    held[i] = connect_unix ();
    send_bytes (held[i], half, strlen (half));
  }
  g_usleep (300000);   /* the daemon has taken them */
  g_autoptr (Response) r = request ("GET", "/metrics", NULL);
  assert_error (r, 503);
  for (guint i = 0; i < TEST_HTTP_MAX_CONNS; i++) {
    g_io_stream_close (G_IO_STREAM (held[i]), NULL, NULL);
    g_object_unref (held[i]);
  }
  Response *again = NULL;
  for (int t = 0; t < 50; t++) {
    again = request ("GET", "/metrics", NULL);
    if (again->status == 200)
      break;
    g_clear_pointer (&again, response_free);
    g_usleep (100000);
  }
  g_assert_nonnull (again);
  response_free (again);
}

/* http_socket takes loopback only: another address is a configuration
 * error, with the key named. */
static void
test_check_address (void)
{
  const char *argv[] = { g_getenv ("EXTBODYD"), "-n", "-c", conf, "-o", "http_socket=inet:8080@0.0.0.0", NULL };
  g_autoptr (GSubprocess) p = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDERR_PIPE, NULL);
  g_assert_nonnull (p);
  g_autofree char *err = NULL;
  g_subprocess_communicate_utf8 (p, NULL, NULL, NULL, &err, NULL);
  g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 78);
  g_assert_nonnull (strstr (err, "http_socket"));
  g_assert_nonnull (strstr (err, "loopback"));
  g_assert_nonnull (strstr (err, "http_allow_networks"));
  /* with the networks named, the address is fine; a name is not an address */
  const char *argv2[] = { g_getenv ("EXTBODYD"), "-n", "-c", conf, "-o", "http_socket=inet:8080@0.0.0.0",
                          "-o", "http_allow_networks=192.0.2.0/24", NULL };
  g_autoptr (GSubprocess) p2 = g_subprocess_newv (argv2, G_SUBPROCESS_FLAGS_STDERR_SILENCE, NULL);
  g_assert_true (g_subprocess_wait (p2, NULL, NULL));
  g_assert_cmpint (g_subprocess_get_exit_status (p2), ==, 0);
  const char *argv3[] = { g_getenv ("EXTBODYD"), "-n", "-c", conf, "-o", "http_socket=inet:8080@localhost", NULL };
  g_autoptr (GSubprocess) p3 = g_subprocess_newv (argv3, G_SUBPROCESS_FLAGS_STDERR_SILENCE, NULL);
  g_assert_true (g_subprocess_wait (p3, NULL, NULL));
  g_assert_cmpint (g_subprocess_get_exit_status (p3), ==, 78);
}

/* http_socket on every address with http_allow_networks: a client from a
 * listed network is served, one from another address of the machine is
 * refused (closed unanswered, a line in the log), loopback always served.
 * In a network namespace of its own, where 10.9.9.9 and 10.8.8.8 are this
 * machine's (on its loopback interface, but no loopback addresses), so the
 * clients come from them. */
static void
test_allow_networks (void)
{
  g_autofree char *unshare = g_find_program_in_path ("unshare");
  g_autofree char *ip = g_find_program_in_path ("ip");
  g_autofree char *curl = g_find_program_in_path ("curl");
  if (!unshare || !ip || !curl || geteuid () != 0) {
    g_test_skip ("needs root, unshare, ip and curl for a private network namespace");
    return;
  }
  g_autofree char *nconf = g_build_filename (dir, "nets.conf", NULL);
  g_autofree char *nlog = g_build_filename (dir, "nets.log", NULL);
  g_assert_true (g_file_set_contents (nconf, "[extbody]\nfetch = off\nhttp_socket = inet:8025@0.0.0.0\n"
                                      "http_allow_networks = 10.9.9.0/24\ndovecot_filter_socket =\n"
                                      "http_metrics_clients = 10.9.9.0/24, 127.0.0.1/32\n", -1, NULL));
  g_autofree char *script = g_strdup_printf (
    "set -u; ip link set lo up && ip addr add 10.9.9.9/32 dev lo && ip addr add 10.8.8.8/32 dev lo || exit 70\n"
    "'%s' -c '%s' -p unix:'%s'/nets-milter.sock 2>'%s' & pid=$!\n"
    "i=0; while [ $i -lt 300 ] && ! grep -q 'event=start ' '%s'; do sleep 0.05; i=$((i+1)); done\n"
    "get () { curl -s -o /dev/null -w '%%{http_code}' --max-time 10 --interface \"$1\" http://$1:8025/metrics; }\n"
    "echo \"allowed $(get 10.9.9.9)\"; echo \"other $(get 10.8.8.8)\"; echo \"loopback $(get 127.0.0.1)\"\n"
    "kill $pid; wait $pid\n",
    g_getenv ("EXTBODYD"), nconf, dir, nlog, nlog);
  g_autofree char *out = NULL;
  int status = 0;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_sync (NULL, (char *[]) { unshare, "--net", "/bin/sh", "-c", script, NULL }, NULL, 0,
                               NULL, NULL, &out, NULL, &status, &error));
  g_assert_no_error (error);
  g_autofree char *log = NULL;
  g_file_get_contents (nlog, &log, NULL, NULL);
  g_test_message ("%s\n%s", out, log ? log : "");
  g_assert_nonnull (strstr (out, "allowed 200\n"));
  g_assert_nonnull (strstr (out, "other 000\n"));   /* closed, unanswered */
  g_assert_nonnull (strstr (out, "loopback 200\n"));
  g_assert_nonnull (strstr (log, "http: a client from 10.8.8.8 refused: not loopback, not in http_allow_networks"));
}

static guint16
free_port (void)
{
  int fd = socket (AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t l = sizeof a;
  g_assert_cmpint (bind (fd, (struct sockaddr *) &a, sizeof a), ==, 0);
  g_assert_cmpint (getsockname (fd, (struct sockaddr *) &a, &l), ==, 0);
  close (fd);
  return ntohs (a.sin_port);
}

/* The listener on inet:PORT@127.0.0.1; GET /metrics there only once
 * http_metrics_clients names loopback. */
static void
test_tcp (void)
{
  guint16 port = free_port ();
  g_autofree char *tconf = g_build_filename (dir, "tcp.conf", NULL);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = off\nhttp_socket = inet:%u@127.0.0.1\n", port);
  g_assert_true (g_file_set_contents (tconf, text, -1, NULL));
  g_autofree char *sock = g_build_filename (dir, "tcp-milter.sock", NULL);
  g_autofree char *log = g_build_filename (dir, "tcp.log", NULL);
  g_autoptr (MtaMilter) m = mta_milter_start (sock, tconf, log, NULL);
  g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr (GSocketAddress) addr = g_inet_socket_address_new (lo, port);
  g_autofree char *sample = g_build_filename (g_getenv ("EXTBODY_DATADIR"), "samples", "references.eml", NULL);
  g_autoptr (GMappedFile) mf = g_mapped_file_new (sample, FALSE, NULL);
  g_autoptr (GBytes) msg = g_mapped_file_get_bytes (mf);
  g_autoptr (GBytes) want = run_command (NULL, (const char *[]) { "rewrite", "--filter", "-c", tconf, sample, NULL });
  g_autoptr (GSocketConnection) c = connect_to (addr);
  g_autoptr (Response) r = request_on (c, "POST", "/rewrite", msg);
  g_assert_cmpuint (r->status, ==, 200);
  g_assert_true (g_bytes_equal (r->body, want));
  /* the counters: over TCP a client is its address, and loopback is every
   * local user's: refused until http_metrics_clients names it */
  g_autoptr (GSocketConnection) c2 = connect_to (addr);
  g_autoptr (Response) r403 = request_on (c2, "GET", "/metrics", NULL);
  assert_error (r403, 403);
  g_autofree char *named = g_strconcat (text, "http_metrics_clients = 127.0.0.0/8\n", NULL);
  g_assert_true (g_file_set_contents (tconf, named, -1, NULL));
  mta_milter_signal (m, SIGHUP);
  g_assert_true (mta_milter_log_wait (m, "SIGHUP: reloaded configuration", 1));
  g_autoptr (GSocketConnection) c3 = connect_to (addr);
  g_autoptr (Response) rm = request_on (c3, "GET", "/metrics", NULL);
  g_assert_cmpuint (rm->status, ==, 200);
  g_assert_cmpuint (metric (rm->body, "extbody_messages_total"), ==, 1);
  g_assert_cmpint (mta_milter_stop (m, TRUE), ==, 0);
}

/* SIGHUP: a request that begins afterwards takes the new configuration. */
static void
test_reload (void)
{
  g_autofree char *forged = g_build_filename (dir, "forged.eml", NULL);
  g_autoptr (GMappedFile) mf = g_mapped_file_new (forged, FALSE, NULL);
  g_autoptr (GBytes) msg = g_mapped_file_get_bytes (mf);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (conf, &text, NULL, NULL));
  g_autofree char *off = g_strconcat (text, "strip_trace_fields = off\n", NULL);
  g_assert_true (g_file_set_contents (conf, off, -1, NULL));
  g_autoptr (GBytes) want = run_command (NULL, (const char *[]) { "rewrite", "--filter", "-c", conf, forged, NULL });
  mta_milter_signal (milter, SIGHUP);
  g_assert_true (mta_milter_log_wait (milter, "SIGHUP: reloaded configuration", 1));
  g_autoptr (Response) r = request ("POST", "/rewrite", msg);
  n_rewrites++;
  g_assert_cmpuint (r->status, ==, 200);
  g_assert_true (g_bytes_equal (r->body, want));
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (r->body, NULL), (gssize) g_bytes_get_size (r->body),
                                  "X-Extbody: forged"));
  g_assert_true (g_file_set_contents (conf, text, -1, NULL));
  mta_milter_signal (milter, SIGHUP);
  g_assert_true (mta_milter_log_wait (milter, "SIGHUP: reloaded configuration", 2));
}

/* A client that goes away while its message's fetches wait: they are
 * cancelled within about a second, not left to fetch_timeout (60 s here),
 * and the daemon serves on. The URL's server (a listening socket nobody
 * accepts on) takes the connection and never answers. */
static void
test_client_gone (void)
{
  g_autoptr (GSocket) srv = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
  g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr (GSocketAddress) any = g_inet_socket_address_new (lo, 0);
  g_assert_true (g_socket_bind (srv, any, TRUE, NULL));
  g_assert_true (g_socket_listen (srv, NULL));
  g_autoptr (GSocketAddress) bound = g_socket_get_local_address (srv, NULL);
  guint port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));

  g_autofree char *gone_conf = g_build_filename (dir, "gone.conf", NULL);
  g_autofree char *gone_sock = g_build_filename (dir, "gone-http.sock", NULL);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = on\nallow_schemes = http\nallow_ports = %u\n"
                                           "fetch_timeout = 60\nmessage_deadline = 90\nhttp_socket = unix:%s\n",
                                           port, gone_sock);
  g_assert_true (g_file_set_contents (gone_conf, text, -1, NULL));
  g_autofree char *msock = g_build_filename (dir, "gone-milter.sock", NULL);
  g_autofree char *log = g_build_filename (dir, "gone.log", NULL);
  const char *extra[] = { "--allow-network", "127.0.0.1/32", NULL };
  g_autoptr (MtaMilter) d = mta_milter_start (msock, gone_conf, log, extra);

  g_autofree char *msg = g_strdup_printf ("From: a@extbody-test.example\r\nSubject: gone\r\nMIME-Version: 1.0\r\n"
                                          "Content-Type: message/external-body; access-type=URL;\r\n"
                                          " URL=\"http://127.0.0.1:%u/x\"\r\n\r\nContent-Type: text/plain\r\n\r\n", port);
  g_autofree char *req = g_strdup_printf ("POST /rewrite HTTP/1.1\r\nHost: localhost\r\nContent-Length: %" G_GSIZE_FORMAT
                                          "\r\n\r\n%s", strlen (msg), msg);
  g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (gone_sock);
  GSocketConnection *c = connect_to (addr);
  send_bytes (c, req, strlen (req));
  g_usleep (1500000);   /* the fetch is waiting for its answer */
  gint64 t0 = g_get_monotonic_time ();
  g_io_stream_close (G_IO_STREAM (c), NULL, NULL);
  g_object_unref (c);
  g_assert_true (mta_milter_log_wait (d, "the client closed the connection: the fetches were cancelled", 1));
  double took = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  g_test_message ("cancelled %.1f s after the client went", took);
  g_assert_cmpfloat (took, <, 15);
  /* and it serves on */
  GSocketConnection *c2 = connect_to (addr);
  const char *plain = "Subject: plain\r\n\r\nbody\r\n";
  g_autofree char *req2 = g_strdup_printf ("POST /rewrite HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                                           "Content-Length: %" G_GSIZE_FORMAT "\r\n\r\n%s", strlen (plain), plain);
  send_bytes (c2, req2, strlen (req2));
  g_autoptr (GBytes) raw = read_to_end (c2);
  g_object_unref (c2);
  g_autoptr (Response) r = parse_response (raw);
  g_assert_cmpuint (r->status, ==, 200);
  g_assert_cmpint (mta_milter_stop (d, FALSE), ==, 0);
}

/* SIGTERM: the listener takes no connection any more, and a request in
 * flight is answered in full before the daemon exits. */
static void
test_drain (void)
{
  g_autofree char *dconf = g_build_filename (dir, "drain.conf", NULL);
  g_autofree char *dsock = g_build_filename (dir, "drain-http.sock", NULL);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = off\nhttp_socket = unix:%s\nhttp_timeout = 30\n"
                                           "milter_stop_timeout = 30\n", dsock);
  g_assert_true (g_file_set_contents (dconf, text, -1, NULL));
  g_autofree char *sock = g_build_filename (dir, "drain-milter.sock", NULL);
  g_autofree char *log = g_build_filename (dir, "drain.log", NULL);
  g_autoptr (MtaMilter) m = mta_milter_start (sock, dconf, log, NULL);
  g_autofree char *sample = g_build_filename (g_getenv ("EXTBODY_DATADIR"), "samples", "references.eml", NULL);
  g_autoptr (GMappedFile) mf = g_mapped_file_new (sample, FALSE, NULL);
  gsize len = g_mapped_file_get_length (mf);
  const char *data = g_mapped_file_get_contents (mf);
  g_autoptr (GBytes) want = run_command (NULL, (const char *[]) { "rewrite", "--filter", "-c", dconf, sample, NULL });
  g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (dsock);
  g_autoptr (GSocketConnection) c = connect_to (addr);
  g_autofree char *head = g_strdup_printf ("POST /rewrite HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                                           "Content-Length: %" G_GSIZE_FORMAT "\r\n\r\n", len);
  send_bytes (c, head, strlen (head));
  send_bytes (c, data, len / 2);
  g_usleep (300000);
  mta_milter_signal (m, SIGTERM);
  g_assert_true (mta_milter_log_wait (m, "1 HTTP request in flight", 1));
  /* the socket goes right after that line: awaited, not raced */
  for (int t = 0; t < 10 * 50 && g_file_test (dsock, G_FILE_TEST_EXISTS); t++)
    g_usleep (20000);
  g_assert_false (g_file_test (dsock, G_FILE_TEST_EXISTS));
  send_bytes (c, data + len / 2, len - len / 2);
  g_autoptr (GBytes) raw = read_to_end (c);
  g_autoptr (Response) r = parse_response (raw);
  g_assert_cmpuint (r->status, ==, 200);
  g_assert_true (g_bytes_equal (r->body, want));
  g_assert_cmpint (mta_milter_wait (m, TRUE), ==, 0);
}

/* The body of @r as a string. */
static char *
body_text (const Response *r)
{
  return g_strndup (g_bytes_get_data (r->body, NULL), g_bytes_get_size (r->body));
}

/* GET @path on the unix socket @sock. */
static Response *
get_on (const char *sock, const char *path)
{
  g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (sock);
  g_autoptr (GSocketConnection) c = connect_to (addr);
  return request_on (c, "GET", path, NULL);
}

/* GET /healthz: 200 "ok" while the daemon takes work; HEAD the same with no
 * body; POST 405. A reload that fails makes it 503 (the daemon is out of step
 * with its file) until one succeeds; each change is logged once, not each
 * probe. */
static void
test_health (void)
{
  g_autoptr (Response) ok = request ("GET", "/healthz", NULL);
  g_assert_cmpuint (ok->status, ==, 200);
  g_autofree char *ok_text = body_text (ok);
  g_assert_cmpstr (ok_text, ==, "ok\nredis: none\n");
  g_assert_cmpstr (g_hash_table_lookup (ok->fields, "content-type"), ==, "text/plain");
  g_autoptr (GSocketConnection) hc = connect_unix ();
  const char *head = "HEAD /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  send_bytes (hc, head, strlen (head));
  g_autoptr (GBytes) raw = read_to_end (hc);
  g_autofree char *rawt = g_strndup (g_bytes_get_data (raw, NULL), g_bytes_get_size (raw));
  g_assert_true (g_str_has_prefix (rawt, "HTTP/1.1 200 "));
  g_assert_true (g_str_has_suffix (rawt, "\r\n\r\n"));   /* the head alone */
  g_autoptr (GBytes) one = g_bytes_new_static ("x", 1);
  g_autoptr (Response) post = request ("POST", "/healthz", one);
  assert_error (post, 405);
  g_assert_cmpstr (g_hash_table_lookup (post->fields, "allow"), ==, "GET, HEAD");

  /* a reload that fails, then one that succeeds */
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (conf, &text, NULL, NULL));
  g_autofree char *bad = g_strconcat (text, "no_such_key_at_all = 1\n", NULL);
  g_assert_true (g_file_set_contents (conf, bad, -1, NULL));
  guint failed = mta_milter_log_count (milter, "SIGHUP: reload failed");
  guint reloaded = mta_milter_log_count (milter, "SIGHUP: reloaded configuration");
  mta_milter_signal (milter, SIGHUP);
  g_assert_true (mta_milter_log_wait (milter, "SIGHUP: reload failed", failed + 1));
  for (int i = 0; i < 3; i++) {
    g_autoptr (Response) down = request ("GET", "/healthz", NULL);
    g_assert_cmpuint (down->status, ==, 503);
    g_autofree char *why = body_text (down);
    g_assert_true (g_str_has_prefix (why, "the reload at "));
    g_assert_nonnull (strstr (why, "no_such_key_at_all"));
    g_assert_true (g_str_has_suffix (why, "\nredis: none\n"));
  }
  /* the old configuration still serves */
  g_autoptr (GBytes) msg = g_bytes_new_static ("Subject: x\r\n\r\nbody\r\n", 20);
  g_autoptr (Response) served = request ("POST", "/rewrite", msg);
  n_rewrites++;
  g_assert_cmpuint (served->status, ==, 200);
  g_assert_true (g_file_set_contents (conf, text, -1, NULL));
  mta_milter_signal (milter, SIGHUP);
  g_assert_true (mta_milter_log_wait (milter, "SIGHUP: reloaded configuration", reloaded + 1));
  g_autoptr (Response) back = request ("GET", "/healthz", NULL);
  g_assert_cmpuint (back->status, ==, 200);
  g_assert_cmpuint (mta_milter_log_count (milter, "http: /healthz answers 503 now: the reload at "), ==, 1);
  g_assert_true (mta_milter_log_wait (milter, "http: /healthz answers 200 now", 1));
  g_assert_cmpuint (mta_milter_log_count (milter, "GET /healthz"), ==, 0);
}

/* redis_required: /healthz answers 503 while Redis does not answer (a port
 * nobody listens on); without it, 200 and "redis: down". */
static void
test_health_redis (void)
{
  g_autoptr (GSocket) s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
  g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr (GSocketAddress) any = g_inet_socket_address_new (lo, 0);
  g_assert_true (g_socket_bind (s, any, TRUE, NULL));
  g_autoptr (GSocketAddress) bound = g_socket_get_local_address (s, NULL);
  guint port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
  g_socket_close (s, NULL);   /* bound, then closed: nobody listens there */
  for (int required = 0; required < 2; required++) {
    g_autofree char *name = g_strdup_printf ("redis%d", required);
    g_autofree char *rconf = g_strdup_printf ("%s/%s.conf", dir, name);
    g_autofree char *rsock = g_strdup_printf ("%s/%s-http.sock", dir, name);
    g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = on\nallow_schemes = http\n"
                                             "redis_server = 127.0.0.1:%u\nredis_required = %s\n"
                                             "http_socket = unix:%s\n", port, required ? "on" : "off", rsock);
    g_assert_true (g_file_set_contents (rconf, text, -1, NULL));
    g_autofree char *msock = g_strdup_printf ("%s/%s-milter.sock", dir, name);
    g_autofree char *log = g_strdup_printf ("%s/%s.log", dir, name);
    g_autoptr (MtaMilter) d = mta_milter_start (msock, rconf, log, NULL);
    g_autoptr (Response) r = get_on (rsock, "/healthz");
    g_autofree char *body = body_text (r);
    if (required) {
      g_assert_cmpuint (r->status, ==, 503);
      g_assert_cmpstr (body, ==, "Redis does not answer (redis_required = on)\nredis: down\n");
    } else {
      g_assert_cmpuint (r->status, ==, 200);
      g_assert_cmpstr (body, ==, "ok\nredis: down\n");
    }
    g_assert_cmpint (mta_milter_stop (d, FALSE), ==, 0);
  }
}

/* drain_delay: at SIGTERM the daemon serves on for that long while /healthz
 * answers 503, then closes its doors as before and exits 0; a second
 * SIGTERM ends the wait at once. */
static void
test_drain_delay (void)
{
  for (int twice = 0; twice < 2; twice++) {
    g_autofree char *name = g_strdup_printf ("delay%d", twice);
    g_autofree char *dconf = g_strdup_printf ("%s/%s.conf", dir, name);
    g_autofree char *dsock = g_strdup_printf ("%s/%s-http.sock", dir, name);
    guint delay = twice ? 120 : 3;
    g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = off\nhttp_socket = unix:%s\ndrain_delay = %u\n",
                                             dsock, delay);
    g_assert_true (g_file_set_contents (dconf, text, -1, NULL));
    g_autofree char *msock = g_strdup_printf ("%s/%s-milter.sock", dir, name);
    g_autofree char *log = g_strdup_printf ("%s/%s.log", dir, name);
    g_autoptr (MtaMilter) d = mta_milter_start (msock, dconf, log, NULL);
    g_autoptr (Response) before = get_on (dsock, "/healthz");
    g_assert_cmpuint (before->status, ==, 200);
    gint64 t0 = g_get_monotonic_time ();
    mta_milter_signal (d, SIGTERM);
    g_assert_true (mta_milter_log_wait (d, "SIGTERM: draining: serving", 1));
    g_autoptr (Response) during = get_on (dsock, "/healthz");
    g_assert_cmpuint (during->status, ==, 503);
    g_autofree char *why = body_text (during);
    g_assert_cmpstr (why, ==, "draining: stopping after drain_delay\nredis: none\n");
    /* and it still serves */
    g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (dsock);
    g_autoptr (GSocketConnection) c = connect_to (addr);
    g_autoptr (GBytes) msg = g_bytes_new_static ("Subject: x\r\n\r\nbody\r\n", 20);
    g_autoptr (Response) served = request_on (c, "POST", "/rewrite", msg);
    g_assert_cmpuint (served->status, ==, 200);
    g_assert_true (g_file_test (dsock, G_FILE_TEST_EXISTS));
    if (twice) {
      mta_milter_signal (d, SIGTERM);
      g_assert_true (mta_milter_log_wait (d, "SIGTERM again: the drain ends now", 1));
    }
    g_assert_cmpint (mta_milter_wait (d, FALSE), ==, 0);
    double took = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
    g_test_message ("drain_delay %u: stopped %.1f s after SIGTERM", delay, took);
    if (twice)
      g_assert_cmpfloat (took, <, 60);
    else
      g_assert_cmpfloat (took, >=, delay - 0.1);
    g_assert_false (g_file_test (dsock, G_FILE_TEST_EXISTS));
  }
}

/* extbodyc, the client the other front ends run, against this daemon: it
 * writes what `extbody rewrite --filter` writes, and the message as it came
 * when the daemon cannot be reached (a socket nobody listens on). */
static void
test_client (void)
{
  const char *client = g_getenv ("EXTBODYC");
  g_assert_nonnull (client);
  g_autofree char *spec = g_strdup_printf ("unix:%s", http_sock);
  g_autofree char *nobody = g_strdup_printf ("unix:%s/nobody.sock", dir);
  g_autoptr (GPtrArray) files = message_files ();
  for (guint i = 0; i < files->len; i++) {
    const char *file = files->pdata[i];
    g_test_message ("%s", file);
    g_autoptr (GBytes) want = run_command (NULL, (const char *[]) { "rewrite", "--filter", "-c", conf, file, NULL });
    for (int down = 0; down < 2; down++) {
      g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                                                     | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
      g_subprocess_launcher_set_stdin_file_path (l, file);
      g_autoptr (GError) error = NULL;
      /* -q: the queue id in the daemon's lines about the message */
      g_autofree char *qid = g_strdup_printf ("Q%uT", i);
      g_autoptr (GSubprocess) p = g_subprocess_launcher_spawn (l, &error, client, "-s", down ? nobody : spec,
                                                               "-t", "30", "-q", qid, NULL);
      g_assert_no_error (error);
      g_autoptr (GBytes) out = NULL;
      g_subprocess_communicate (p, NULL, NULL, &out, NULL, &error);
      g_assert_no_error (error);
      g_assert_true (g_subprocess_get_if_exited (p));
      g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 0);
      if (!down) {
        g_assert_true (g_bytes_equal (out, want));
        /* the samples' references.eml has references: its lines carry the id */
        if (g_str_has_suffix (file, "/references.eml")) {
          g_autofree char *tagged = g_strdup_printf ("queue_id=%s ", qid);
          g_assert_true (mta_milter_log_wait (milter, tagged, 1));
        }
      } else {
        g_autoptr (GMappedFile) mf = g_mapped_file_new (file, FALSE, NULL);
        g_autoptr (GBytes) msg = g_mapped_file_get_bytes (mf);
        g_assert_true (g_bytes_equal (out, msg));
      }
    }
    n_rewrites++;
  }
}

/* ---- issue 28's doors: under load, reloaded, killed, left half-sent ------ */

#define N_MESSAGES 200
#define N_SESSIONS 10
#define N_RELOADS  4

/* A message with one data: reference to "burst @i". */
static GBytes *
burst_message (guint i)
{
  char *text = g_strdup_printf ("From: a@example.org\r\nTo: b@example.net\r\nSubject: burst %u\r\n"
                                "Message-ID: <burst-%u@test.example>\r\nMIME-Version: 1.0\r\n"
                                "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
                                "Content-Type: message/external-body; access-type=URL; URL=\"data:,burst%%20%u\"\r\n\r\n"
                                "Content-Type: text/plain\r\n\r\n--b--\r\n", i, i, i);
  return g_bytes_new_take (text, strlen (text));
}

typedef struct {
  const char *sock;
  guint       first;
  guint       reloads;    /* the run's reloads: requests held across each */
  guint      *ok;         /* per message: answers that were right */
} Session;

static GMutex phase_lock;
static GCond  phase_cond;
static guint  phase_holding;   /* sessions with a request half-sent, all phases */
static guint  phase_reloaded;  /* reloads done */

/* One session: its share of the messages one after another on connections
 * of their own, each answered 200 with its own message resolved. With
 * reloads, its requests number 2, 7, 12 ... are held half-sent until the
 * daemon has reloaded: a request that began under one configuration ends
 * under the next. */
static gpointer
session_run (gpointer data)
{
  Session *s = data;
  g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (s->sock);
  guint k = 0;
  for (guint i = s->first; i < N_MESSAGES; i += N_SESSIONS, k++) {
    g_autoptr (GBytes) msg = burst_message (i);
    g_autoptr (GSocketConnection) c = connect_to (addr);
    gsize len = g_bytes_get_size (msg);
    const char *data = g_bytes_get_data (msg, NULL);
    g_autofree char *head = g_strdup_printf ("POST /rewrite HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                                             "Content-Type: message/rfc822\r\nContent-Length: %" G_GSIZE_FORMAT "\r\n\r\n",
                                             len);
    send_bytes (c, head, strlen (head));
    gsize sent = 0;
    guint phase = k / 5;
    if (k % 5 == 2 && phase < s->reloads) {
      sent = len / 2;
      send_bytes (c, data, sent);
      g_mutex_lock (&phase_lock);
      phase_holding++;
      g_cond_broadcast (&phase_cond);
      while (phase_reloaded <= phase)
        g_cond_wait (&phase_cond, &phase_lock);
      g_mutex_unlock (&phase_lock);
    }
    send_bytes (c, data + sent, len - sent);
    g_autoptr (GBytes) raw = read_to_end (c);
    g_autoptr (Response) r = parse_response (raw);
    g_autofree char *body = g_strndup (g_bytes_get_data (r->body, NULL), g_bytes_get_size (r->body));
    g_autofree char *mine = g_strdup_printf ("\r\n\r\nburst %u", i);
    g_autofree char *id = g_strdup_printf ("<burst-%u@test.example>", i);
    if (r->status == 200 && strstr (body, mine) && strstr (body, id)
        && strstr (body, "\nX-Extbody: resolved 1 of 1 external-body reference\r\n")
        && !strstr (body, "external-body;"))
      g_atomic_int_inc ((gint *) &s->ok[i]);
    else
      g_test_message ("burst %u: %u\n%s", i, r->status, body);
  }
  return NULL;
}

/* 200 messages from 10 sessions at once against a daemon of default limits,
 * with @reloads times SIGHUP while they run, each when every session has a
 * request half-sent: every message answered once, 200, resolved. */
static void
burst (guint reloads)
{
  g_autofree char *name = g_strdup_printf ("burst-%u", reloads);
  g_autofree char *bconf = g_strdup_printf ("%s/%s.conf", dir, name);
  g_autofree char *bsock = g_strdup_printf ("%s/%s-http.sock", dir, name);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = off\nhttp_socket = unix:%s\n", bsock);
  g_assert_true (g_file_set_contents (bconf, text, -1, NULL));
  g_autofree char *msock = g_strdup_printf ("%s/%s-milter.sock", dir, name);
  g_autofree char *log = g_strdup_printf ("%s/%s.log", dir, name);
  g_autoptr (MtaMilter) m = mta_milter_start (msock, bconf, log, NULL);
  guint ok[N_MESSAGES] = { 0 };
  Session s[N_SESSIONS];
  GThread *t[N_SESSIONS];
  phase_holding = phase_reloaded = 0;
  gint64 t0 = g_get_monotonic_time ();
  for (guint w = 0; w < N_SESSIONS; w++) {
    s[w] = (Session) { bsock, w, reloads, ok };
    t[w] = g_thread_new ("session", session_run, &s[w]);
  }
  for (guint p = 0; p < reloads; p++) {
    g_mutex_lock (&phase_lock);
    gint64 end = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
    while (phase_holding < (p + 1) * N_SESSIONS)
      g_assert_true (g_cond_wait_until (&phase_cond, &phase_lock, end));
    g_mutex_unlock (&phase_lock);
    mta_milter_signal (m, SIGHUP);
    g_assert_true (mta_milter_log_wait (m, "SIGHUP: reloaded configuration", p + 1));
    g_mutex_lock (&phase_lock);
    phase_reloaded++;
    g_cond_broadcast (&phase_cond);
    g_mutex_unlock (&phase_lock);
  }
  for (guint w = 0; w < N_SESSIONS; w++)
    g_thread_join (t[w]);
  g_test_message ("%d messages, %u reloads, %.1f s", N_MESSAGES, reloads,
                  (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC);
  for (guint i = 0; i < N_MESSAGES; i++)
    g_assert_cmpuint (ok[i], ==, 1);
  g_assert_cmpuint (mta_milter_log_count (m, "http: POST /rewrite 200"), ==, N_MESSAGES);
  g_assert_cmpuint (mta_milter_log_count (m, "SIGHUP: reloaded configuration"), ==, reloads);
  g_assert_cmpint (mta_milter_stop (m, FALSE), ==, 0);
}

static void
test_burst (void)
{
  burst (0);
}

/* SIGHUP under load: no request lost, none answered with the message as it
 * came (every reference resolved) while the configuration is reloaded, ten
 * requests half-sent across each reload. */
static void
test_burst_reloaded (void)
{
  burst (N_RELOADS);
}

/* A client that sends half the body its Content-Length declares and goes
 * away: the daemon logs the request as ended by the client, keeps serving
 * (the next request is answered in full), and GET /metrics is read by
 * Prometheus's own text parser (python3-prometheus-client), its count of
 * messages the one the daemon's answers gave. */
static void
test_vanished_mid_body (void)
{
  guint ended = mta_milter_log_count (milter, "ended by the client");
  g_autoptr (GBytes) msg = burst_message (1);
  {
    g_autoptr (GSocketConnection) c = connect_unix ();
    g_autofree char *head = g_strdup_printf ("POST /rewrite HTTP/1.1\r\nHost: localhost\r\n"
                                             "Content-Length: %" G_GSIZE_FORMAT "\r\n\r\n", g_bytes_get_size (msg));
    send_bytes (c, head, strlen (head));
    send_bytes (c, g_bytes_get_data (msg, NULL), g_bytes_get_size (msg) / 2);
    g_assert_true (g_io_stream_close (G_IO_STREAM (c), NULL, NULL));
  }
  /* logged ("... ended by the client", as the request it began) */
  g_assert_true (mta_milter_log_wait (milter, "ended by the client", ended + 1));
  g_autoptr (Response) r = request ("POST", "/rewrite", msg);
  n_rewrites++;
  g_assert_cmpuint (r->status, ==, 200);
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (r->body, NULL), (gssize) g_bytes_get_size (r->body),
                                  "\r\n\r\nburst 1"));

  g_autoptr (Response) rm = request ("GET", "/metrics", NULL);
  g_assert_cmpuint (rm->status, ==, 200);
  g_autofree char *file = g_build_filename (dir, "metrics.txt", NULL);
  g_assert_true (g_file_set_contents (file, g_bytes_get_data (rm->body, NULL), (gssize) g_bytes_get_size (rm->body), NULL));
  /* tests/integration/parse-metrics.py: the parser's reading, one line a
   * sample; a text it refuses exits non-zero */
  g_autofree char *parse = g_test_build_filename (G_TEST_DIST, "integration", "parse-metrics.py", NULL);
  g_autoptr (GSubprocess) p = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_MERGE, NULL,
                                                "/usr/bin/python3", parse, file, NULL);
  g_assert_nonnull (p);
  g_autofree char *out = NULL;
  g_assert_true (g_subprocess_communicate_utf8 (p, NULL, NULL, &out, NULL, NULL));
  g_test_message ("%s", out);
  g_assert_true (g_subprocess_get_successful (p));
  g_assert_nonnull (strstr (out, "# TYPE extbody_messages counter\n"));
  g_autofree char *want = g_strdup_printf ("\nextbody_messages_total{} %u.0\n", n_rewrites);
  g_assert_nonnull (strstr (out, want));
  g_assert_cmpuint (metric (rm->body, "extbody_messages_total"), ==, n_rewrites);
}

/* A daemon whose fetches go to the loopback test server, the message's one
 * reference held there (httpd.py's /hold?gate=@gate) until the daemon is
 * killed. */
static MtaMilter *
start_fetching (const char *name, char **http_socket)
{
  g_autofree char *kconf = g_strdup_printf ("%s/%s.conf", dir, name);
  *http_socket = g_strdup_printf ("%s/%s-http.sock", dir, name);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = on\nallow_networks = 127.0.0.1/32\n"
                                           "fetch_timeout = 60\nmessage_deadline = 60\nhttp_socket = unix:%s\n",
                                           *http_socket);
  g_assert_true (g_file_set_contents (kconf, text, -1, NULL));
  g_autofree char *msock = g_strdup_printf ("%s/%s-milter.sock", dir, name);
  g_autofree char *log = g_strdup_printf ("%s/%s.log", dir, name);
  return mta_milter_start (msock, kconf, log, NULL);
}

static GBytes *
held_message (guint port, const char *gate)
{
  char *text = g_strdup_printf ("From: a@example.org\r\nTo: b@example.net\r\nSubject: held\r\n"
                                "Message-ID: <%s@test.example>\r\nMIME-Version: 1.0\r\n"
                                "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
                                "Content-Type: message/external-body; access-type=URL;\r\n"
                                " URL=\"http://127.0.0.1:%u/hold?gate=%s&n=1\"\r\n\r\n"
                                "Content-Type: text/plain\r\n\r\n--b--\r\n", gate, port, gate);
  return g_bytes_new_take (text, strlen (text));
}

/* SIGKILL while a request is in flight (its reference being fetched): the
 * client gets no answer at all - never a status line, never part of a
 * message - and extbodyc, the client the MTAs run, writes the message
 * exactly as it came and exits 0. */
static void
test_killed_mid_message (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TestServer) httpd = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);

  /* by hand */
  g_autofree char *ksock = NULL;
  g_autoptr (MtaMilter) m = start_fetching ("killed", &ksock);
  g_autoptr (GBytes) msg = held_message (httpd->port, "http-kill");
  g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (ksock);
  g_autoptr (GSocketConnection) c = connect_to (addr);
  g_autofree char *head = g_strdup_printf ("POST /rewrite HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                                           "Content-Length: %" G_GSIZE_FORMAT "\r\n\r\n", g_bytes_get_size (msg));
  send_bytes (c, head, strlen (head));
  send_bytes (c, g_bytes_get_data (msg, NULL), g_bytes_get_size (msg));
  g_assert_true (mta_milter_held_wait (httpd->port, "http-kill"));
  mta_milter_signal (m, SIGKILL);
  g_assert_cmpint (mta_milter_wait (m, FALSE), ==, -1);
  g_autoptr (GBytes) raw = read_to_end (c);
  g_assert_cmpuint (g_bytes_get_size (raw), ==, 0);

  /* through extbodyc */
  const char *client = g_getenv ("EXTBODYC");
  g_assert_nonnull (client);
  g_autofree char *csock = NULL;
  g_autoptr (MtaMilter) m2 = start_fetching ("killed-client", &csock);
  g_autoptr (GBytes) msg2 = held_message (httpd->port, "client-kill");
  g_autofree char *file = g_build_filename (dir, "held.eml", NULL);
  g_assert_true (g_file_set_contents (file, g_bytes_get_data (msg2, NULL), (gssize) g_bytes_get_size (msg2), NULL));
  g_autofree char *spec = g_strdup_printf ("unix:%s", csock);
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                                                 | G_SUBPROCESS_FLAGS_STDERR_PIPE);
  g_subprocess_launcher_set_stdin_file_path (l, file);
  g_autoptr (GSubprocess) p = g_subprocess_launcher_spawn (l, &error, client, "-s", spec, "-t", "60", "-l", "stderr", NULL);
  g_assert_no_error (error);
  g_assert_true (mta_milter_held_wait (httpd->port, "client-kill"));
  mta_milter_signal (m2, SIGKILL);
  g_assert_cmpint (mta_milter_wait (m2, FALSE), ==, -1);
  g_autoptr (GBytes) out = NULL;
  g_autoptr (GBytes) err = NULL;
  g_subprocess_communicate (p, NULL, NULL, &out, &err, &error);
  g_assert_no_error (error);
  g_autofree char *etext = g_strndup (g_bytes_get_data (err, NULL), g_bytes_get_size (err));
  g_test_message ("extbodyc: %s", etext);
  g_assert_true (g_subprocess_get_if_exited (p));
  g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 0);
  g_assert_true (g_bytes_equal (out, msg2));
  g_assert_nonnull (strstr (etext, "; message passed through unchanged\n"));

  g_assert_cmpint (test_http_get_number (httpd->port, "/open?gate=http-kill"), ==, 0);
  g_assert_cmpint (test_http_get_number (httpd->port, "/open?gate=client-kill"), ==, 0);
}

/* ---- issue 39: the door trusts no client ----------------------------------- */

/* Write @len bytes of @req to the unix socket @sock and read what comes back
 * until the daemon closes the connection or @wait_ms pass in silence
 * (*@closed says which). */
static GBytes *
raw_exchange (const char *sock, const void *req, gsize len, int wait_ms, gboolean *closed)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  g_strlcpy (sa.sun_path, sock, sizeof sa.sun_path);
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  g_assert_cmpint (connect (fd, (struct sockaddr *) &sa, sizeof sa), ==, 0);
  const char *p = req;
  while (len) {
    ssize_t n = send (fd, p, len, MSG_NOSIGNAL);
    if (n <= 0)
      break;   /* the daemon closed early: what it said is read below */
    p += n;
    len -= (gsize) n;
  }
  GByteArray *all = g_byte_array_new ();
  *closed = FALSE;
  for (;;) {
    struct pollfd pf = { .fd = fd, .events = POLLIN };
    if (poll (&pf, 1, wait_ms) <= 0)
      break;
    char buf[65536];
    ssize_t n = recv (fd, buf, sizeof buf, 0);
    if (n <= 0) {
      *closed = TRUE;
      break;
    }
    g_byte_array_append (all, (guint8 *) buf, (guint) n);
  }
  close (fd);
  return g_byte_array_free_to_bytes (all);
}

/* The answers in @raw, one after the other, each framed by its
 * Content-Length. */
static GPtrArray *
parse_responses (GBytes *raw)
{
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) response_free);
  gsize len = 0, off = 0;
  const char *data = g_bytes_get_data (raw, &len);
  while (off < len) {
    const char *end = g_strstr_len (data + off, (gssize) (len - off), "\r\n\r\n");
    g_assert_nonnull (end);
    g_autofree char *head = g_strndup (data + off, (gsize) (end - data - off));
    const char *cl = strstr (head, "\r\nContent-Length: ");
    g_assert_nonnull (cl);
    gsize body = (gsize) g_ascii_strtoull (cl + 18, NULL, 10);
    gsize next = (gsize) (end + 4 - data) + body;
    g_assert_cmpuint (next, <=, len);
    g_autoptr (GBytes) one = g_bytes_new_from_bytes (raw, off, next - off);
    g_ptr_array_add (out, parse_response (one));
    off = next;
  }
  return out;
}

/* The message these cases send (a data: reference, so that its rewrite is
 * not the message itself) and what `extbody rewrite --filter` makes of it. */
static GBytes *
framing_message (GBytes **want)
{
  g_autoptr (GBytes) msg = burst_message (39);
  g_autofree char *file = g_build_filename (dir, "framing.eml", NULL);
  g_assert_true (g_file_set_contents (file, g_bytes_get_data (msg, NULL), (gssize) g_bytes_get_size (msg), NULL));
  *want = run_command (NULL, (const char *[]) { "rewrite", "--filter", "-c", conf, file, NULL });
  g_assert_false (g_bytes_equal (*want, msg));
  return g_steal_pointer (&msg);
}

/* @msg as a chunked body of chunks of @size bytes (the last one shorter),
 * @ext after each size, and @trailer fields before the end. */
static GString *
chunked (GBytes *msg, gsize size, const char *ext, const char *trailer)
{
  gsize len = 0;
  const char *d = g_bytes_get_data (msg, &len);
  GString *s = g_string_new (NULL);
  for (gsize i = 0; i < len; i += size) {
    gsize n = MIN (size, len - i);
    g_string_append_printf (s, "%" G_GSIZE_MODIFIER "x%s\r\n", n, ext);
    g_string_append_len (s, d + i, (gssize) n);
    g_string_append (s, "\r\n");
  }
  g_string_append_printf (s, "0\r\n%s\r\n", trailer);
  return s;
}

/* @req is refused with @status and one line naming @reason, and the
 * connection closed: nothing is rewritten. */
static void
assert_refused (const char *what, GString *req, guint status, const char *reason)
{
  g_test_message ("%s", what);
  gboolean closed = FALSE;
  g_autoptr (GBytes) raw = raw_exchange (http_sock, req->str, req->len, 5000, &closed);
  g_assert_true (closed);
  g_autoptr (GPtrArray) rs = parse_responses (raw);
  g_assert_cmpuint (rs->len, ==, 1);
  Response *r = rs->pdata[0];
  assert_error (r, status);
  g_assert_cmpstr (g_hash_table_lookup (r->fields, "connection"), ==, "close");
  g_autofree char *line = g_strndup (g_bytes_get_data (r->body, NULL), g_bytes_get_size (r->body));
  g_assert_nonnull (strstr (line, reason));
}

/* RFC 9112 section 6.3: a request whose length is ambiguous is refused
 * (400) and its connection closed, whatever its chunk sizes; so are the other
 * heads the daemon cannot frame; a chunked body is framed by its chunks
 * whatever their sizes (extensions and trailer fields read and dropped); and
 * requests pipelined on one connection are answered in order. Written by
 * hand on raw sockets. */
static void
test_framing (void)
{
  g_autoptr (GBytes) want = NULL;
  g_autoptr (GBytes) msg = framing_message (&want);
  gsize len = g_bytes_get_size (msg);
  const char *post = "POST /rewrite HTTP/1.1\r\nHost: localhost\r\n";
  /* a length and chunks: 10 bytes by the length, the message by the chunks */
  for (gsize size = 5; size <= len; size = size == 5 ? len : len + 1) {
    g_autoptr (GString) body = chunked (msg, size, "", "");
    g_autoptr (GString) req = g_string_new (post);
    g_string_append_printf (req, "Content-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n%s", body->str);
    assert_refused ("Content-Length and chunked", req, 400, "both Content-Length and chunked");
  }
  g_autoptr (GString) two = g_string_new (post);
  g_string_append_printf (two, "Content-Length: 5\r\nContent-Length: %" G_GSIZE_FORMAT "\r\n\r\n", len);
  g_string_append_len (two, g_bytes_get_data (msg, NULL), (gssize) len);
  assert_refused ("two lengths that differ", two, 400, "Content-Length");
  const char *bad_lengths[] = { "1x", "+52", "52, 52", "" };
  for (guint i = 0; i < G_N_ELEMENTS (bad_lengths); i++) {
    g_autoptr (GString) req = g_string_new (post);
    g_string_append_printf (req, "Content-Length: %s\r\n\r\n", bad_lengths[i]);
    g_string_append_len (req, g_bytes_get_data (msg, NULL), (gssize) len);
    assert_refused (bad_lengths[i], req, 400, "Content-Length");
  }
  const struct { const char *head; guint status; const char *reason; } heads[] = {
    { "POST /rewrite HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "transfer coding" },
    { "POST /rewrite HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "chunked" },
    { "POST /rewrite HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0" },
    { "POST /rewrite HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 400, "Host" },
    { "POST /rewrite HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Length: 0\r\n\r\n", 400, "Host" },
    { "POST /rewrite HTTP/1.1\r\nHost: localhost\r\nContent-Length : 5\r\n\r\nhello", 400, "no field" },
    { "POST /rewrite HTTP/1.1\r\nHost: localhost\r\nX-Folded: a\r\n b\r\nContent-Length: 0\r\n\r\n", 400, "folded" },
    { "POST /rewrite HTTP/2.0\r\nHost: localhost\r\n\r\n", 505, "version" },
    { "POST /rewrite HTTP/1.1\r\nHost: localhost\r\nExpect: 200-ok\r\n\r\n", 417, "expectation" },
    { "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400, "no request line" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (heads); i++) {
    g_autoptr (GString) req = g_string_new (heads[i].head);
    assert_refused (heads[i].head, req, heads[i].status, heads[i].reason);
  }
  g_assert_true (mta_milter_log_wait (milter, "refused (400): both Content-Length and chunked", 2));
  /* chunks of any size, pipelined, with a length-framed request between
   * them and a GET at the end: each answered in its turn */
  g_autoptr (GString) pipe = g_string_new (NULL);
  const gsize sizes[] = { 1, 7, len - 1, len };
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++) {
    g_autoptr (GString) body = chunked (msg, sizes[i], i % 2 ? ";name=value" : "", i == 2 ? "X-Trailer: 1\r\n" : "");
    g_string_append_printf (pipe, "%sTransfer-Encoding: chunked\r\nContent-Type: message/rfc822\r\n\r\n%s", post,
                            body->str);
    g_string_append_printf (pipe, "%sContent-Length: %" G_GSIZE_FORMAT "\r\n\r\n", post, len);
    g_string_append_len (pipe, g_bytes_get_data (msg, NULL), (gssize) len);
  }
  g_string_append (pipe, "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
  gboolean closed = FALSE;
  g_autoptr (GBytes) raw = raw_exchange (http_sock, pipe->str, pipe->len, 10000, &closed);
  g_assert_true (closed);
  g_autoptr (GPtrArray) rs = parse_responses (raw);
  g_assert_cmpuint (rs->len, ==, 2 * G_N_ELEMENTS (sizes) + 1);
  for (guint i = 0; i + 1 < rs->len; i++) {
    Response *r = rs->pdata[i];
    g_assert_cmpuint (r->status, ==, 200);
    g_assert_true (g_bytes_equal (r->body, want));
    n_rewrites++;
  }
  g_assert_cmpuint (((Response *) rs->pdata[rs->len - 1])->status, ==, 200);
  g_assert_cmpuint (metric (((Response *) rs->pdata[rs->len - 1])->body, "extbody_messages_total"), ==, n_rewrites);
}

/* A client that keeps sending, a byte at a time and faster than
 * http_timeout, is cut off http_request_timeout after its first byte,
 * answered 408, whether it is in its head or in its body. */
static void
test_slow_request (void)
{
  const char *starts[] = {
    "POST /rewrite HTTP/1.1\r\nHost: localhost\r\nX-Slow: ",
    "POST /rewrite HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\nSubject: slow\r\n\r\n",
  };
  for (guint i = 0; i < G_N_ELEMENTS (starts); i++) {
    g_autoptr (GSocketConnection) c = connect_unix ();
    GSocket *sock = g_socket_connection_get_socket (c);
    gint64 t0 = g_get_monotonic_time ();
    send_bytes (c, starts[i], strlen (starts[i]));
    GByteArray *got = g_byte_array_new ();
    gboolean closed = FALSE;
    /* a byte every 0.3 s, for at most three times http_request_timeout */
    while (!closed && g_get_monotonic_time () - t0 < 3 * TEST_HTTP_REQUEST_TIMEOUT * G_USEC_PER_SEC) {
      g_socket_send (sock, "a", 1, NULL, NULL);
      if (g_socket_condition_timed_wait (sock, G_IO_IN, 300000, NULL, NULL)) {
        char buf[4096];
        gssize n = g_socket_receive (sock, buf, sizeof buf, NULL, NULL);
        if (n <= 0)
          closed = TRUE;
        else
          g_byte_array_append (got, (guint8 *) buf, (guint) n);
      }
    }
    double took = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
    g_autoptr (GBytes) raw = g_byte_array_free_to_bytes (got);
    g_test_message ("%s: %u bytes after %.1f s", i ? "body" : "head", (guint) g_bytes_get_size (raw), took);
    g_assert_true (closed);
    g_autoptr (Response) r = parse_response (raw);
    assert_error (r, 408);
    g_assert_cmpfloat (took, >=, TEST_HTTP_REQUEST_TIMEOUT - 0.5);
    g_assert_cmpfloat (took, <, TEST_HTTP_REQUEST_TIMEOUT + 3);
  }
  g_assert_true (mta_milter_log_wait (milter, "its head did not come within http_request_timeout", 1));
  g_assert_true (mta_milter_log_wait (milter, "cut off after http_request_timeout", 1));
}

/* extbodyc on @msg through @sock, as @user (NULL: as the test, root): its
 * output, and how long it took. */
static GBytes *
client_run (const char *sock, GBytes *msg, const char *user, double *took)
{
  g_autofree char *file = g_strdup_printf ("%s/client-%p.eml", dir, (void *) msg);
  g_assert_true (g_file_set_contents (file, g_bytes_get_data (msg, NULL), (gssize) g_bytes_get_size (msg), NULL));
  g_autofree char *spec = g_strdup_printf ("unix:%s", sock);
  /* another user may not reach the build tree */
  g_autofree char *client = user ? mta_doors_for_everyone (dir, g_getenv ("EXTBODYC")) : g_strdup (g_getenv ("EXTBODYC"));
  const char *argv[] = { client, "-s", spec, "-t", "20", "-l", "stderr", NULL };
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                                                 | G_SUBPROCESS_FLAGS_STDERR_MERGE);
  g_subprocess_launcher_set_stdin_file_path (l, file);
  g_autoptr (GError) error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (GPtrArray) a = g_ptr_array_new_with_free_func (g_free);
  if (user) {
    g_ptr_array_add (a, g_strdup ("setpriv"));
    g_ptr_array_add (a, g_strdup_printf ("--reuid=%s", user));
    g_ptr_array_add (a, g_strdup_printf ("--regid=%s", user));
    g_ptr_array_add (a, g_strdup ("--clear-groups"));
    g_ptr_array_add (a, g_strdup ("--"));
  }
  for (guint i = 0; argv[i]; i++)
    g_ptr_array_add (a, g_strdup (argv[i]));
  g_ptr_array_add (a, NULL);
  g_autoptr (GSubprocess) p = g_subprocess_launcher_spawnv (l, (const char *const *) a->pdata, &error);
  g_assert_no_error (error);
  GBytes *out = NULL;
  g_subprocess_communicate (p, NULL, NULL, &out, NULL, &error);
  g_assert_no_error (error);
  *took = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  g_unlink (file);
  return out;
}

/* A flood of slow connections from one local user (nobody, 40 connections,
 * each sending a byte of a head that never ends every 0.5 s) against a
 * daemon of default limits but for short timeouts: nobody holds at most
 * http_max_peer_connections of them (the rest answered 503 at once, those
 * held cut off, 408, after http_request_timeout), and meanwhile another
 * ordinary user's messages (uid 65533) through extbodyc are resolved, each
 * within the usual latency. */
static void
test_peer_flood (void)
{
  if (!mta_doors_can_switch_user ()) {
    g_test_skip ("needs root, setpriv and the user nobody");
    return;
  }
  g_autofree char *fconf = g_build_filename (dir, "flood.conf", NULL);
  g_autofree char *fsock = g_build_filename (dir, "flood-http.sock", NULL);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = off\nhttp_socket = unix:%s\nhttp_timeout = 2\n"
                                           "http_request_timeout = 6\n", fsock);
  g_assert_true (g_file_set_contents (fconf, text, -1, NULL));
  g_autofree char *msock = g_build_filename (dir, "flood-milter.sock", NULL);
  g_autofree char *log = g_build_filename (dir, "flood.log", NULL);
  g_autoptr (MtaMilter) m = mta_milter_start (msock, fconf, log, NULL);
  g_autoptr (GBytes) msg = burst_message (3939);
  double usual = 0;
  g_autoptr (GBytes) first = client_run (fsock, msg, "65533", &usual);
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (first, NULL), (gssize) g_bytes_get_size (first), "burst 3939"));
  g_autofree char *source = g_test_build_filename (G_TEST_DIST, "milter", "slow-clients.py", NULL);
  g_autofree char *script = mta_doors_for_everyone (dir, source);
  g_autoptr (GSubprocess) flood = mta_doors_spawn_as ("nobody", G_SUBPROCESS_FLAGS_STDOUT_PIPE, (const char *[]) {
    "/usr/bin/python3", script, "--socket", fsock, "--door", "http", "--connections", "40", "--interval", "0.5",
    "--duration", "9", NULL });
  g_usleep (1500000);   /* the flood has begun */
  for (guint i = 0; i < 8; i++) {
    double took = 0;
    g_autoptr (GBytes) out = client_run (fsock, msg, "65533", &took);
    g_autofree char *o = g_strndup (g_bytes_get_data (out, NULL), g_bytes_get_size (out));
    g_test_message ("message %u: %.2f s (alone: %.2f s)", i, took, usual);
    g_assert_nonnull (strstr (o, "\r\n\r\nburst 3939"));   /* resolved */
    g_assert_null (strstr (o, "extbodyc:"));
    g_assert_cmpfloat (took, <, usual + 2);
    g_usleep (500000);
  }
  g_autofree char *report = NULL;
  g_autoptr (GError) error = NULL;
  g_subprocess_communicate_utf8 (flood, NULL, NULL, &report, NULL, &error);
  g_assert_no_error (error);
  g_test_message ("nobody's flood: %s", report);
  g_assert_nonnull (strstr (report, "opened 40 refused-at-once 32 cut 8 open 0 "));
  g_assert_nonnull (strstr (report, "HTTP/1.1 503 Service Unavailable=32"));
  g_assert_nonnull (strstr (report, "HTTP/1.1 408 Request Timeout=8"));
  g_assert_cmpuint (mta_milter_log_count (m, "http: a connection from uid 65534 (nobody) refused: it holds "
                                             "http_max_peer_connections (8) already"), ==, 32);
  g_assert_cmpint (mta_milter_stop (m, FALSE), ==, 0);
}

/* curl as nobody: the status of @method @path (with @file as the body). */
static guint
status_as_nobody (const char *sock, const char *method, const char *path, const char *file)
{
  g_autofree char *url = g_strdup_printf ("http://localhost%s", path);
  g_autofree char *data = file ? g_strdup_printf ("@%s", file) : NULL;
  const char *argv[] = { "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20",
                         "--unix-socket", sock, "-X", method, url, file ? "--data-binary" : NULL, data, NULL };
  g_autoptr (GSubprocess) p = mta_doors_spawn_as ("nobody", G_SUBPROCESS_FLAGS_STDOUT_PIPE, argv);
  g_autofree char *out = NULL;
  g_autoptr (GError) error = NULL;
  g_subprocess_communicate_utf8 (p, NULL, NULL, &out, NULL, &error);
  g_assert_no_error (error);
  return (guint) g_ascii_strtoull (out, NULL, 10);
}

static guint
files_in (const char *path)
{
  g_autoptr (GDir) d = g_dir_open (path, 0, NULL);
  guint n = 0;
  while (d && g_dir_read_name (d))
    n++;
  return n;
}

/* A daemon of its own with milter_mode = externalize, its HTTP door on
 * DIR/NAME-http.sock and a directory store DIR/NAME-store (parts from 1K,
 * served under a base URL nobody answers), fetch off; *@conf, *@sock and
 * *@store its files. */
static MtaMilter *
start_externalizing (const char *name, char **conf, char **sock, char **store)
{
  *store = g_strdup_printf ("%s/%s-store", dir, name);
  g_assert_cmpint (g_mkdir (*store, 0755), ==, 0);
  *conf = g_strdup_printf ("%s/%s.conf", dir, name);
  *sock = g_strdup_printf ("%s/%s-http.sock", dir, name);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = off\nhttp_socket = unix:%s\nmilter_mode = externalize\n"
                                           "externalize_store = %s\nexternalize_base_url = http://127.0.0.1:9/\n"
                                           "externalize_min_size = 1K\n", *sock, *store);
  g_assert_true (g_file_set_contents (*conf, text, -1, NULL));
  g_autofree char *msock = g_strdup_printf ("%s/%s-milter.sock", dir, name);
  g_autofree char *log = g_strdup_printf ("%s/%s.log", dir, name);
  return mta_milter_start (msock, *conf, log, NULL);
}

/* Who may do what, by the credentials of a unix socket's client: with
 * milter_mode = externalize and a store, nobody (any local user) has
 * messages rewritten and inspected but may not store (403, the store left
 * empty) nor read the counters (403), which root may; once the
 * configuration names nobody (http_externalize_clients) and its group
 * (http_metrics_clients, @nogroup) and is reloaded, nobody may. A name that
 * is no user is a configuration error naming the key. */
static void
test_permissions (void)
{
  g_autofree char *curl = g_find_program_in_path ("curl");
  if (!mta_doors_can_switch_user () || !curl) {
    g_test_skip ("needs root, setpriv, curl and the user nobody");
    return;
  }
  g_autofree char *store = NULL, *pconf = NULL, *psock = NULL;
  g_autoptr (MtaMilter) m = start_externalizing ("perm", &pconf, &psock, &store);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (pconf, &text, NULL, NULL));
  g_autofree char *att = g_strnfill (20000, 'x');
  g_autofree char *mtext = g_strdup_printf ("From: a@example.org\r\nMIME-Version: 1.0\r\n"
                                            "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
                                            "Content-Type: text/plain\r\n\r\nsee\r\n--b\r\n"
                                            "Content-Type: application/octet-stream\r\n"
                                            "Content-Disposition: attachment; filename=x.bin\r\n\r\n%s\r\n--b--\r\n", att);
  g_autofree char *mfile = g_build_filename (dir, "perm.eml", NULL);
  g_assert_true (g_file_set_contents (mfile, mtext, -1, NULL));
  g_chmod (mfile, 0644);
  g_assert_cmpuint (status_as_nobody (psock, "POST", "/externalize", mfile), ==, 403);
  g_assert_cmpuint (files_in (store), ==, 0);
  g_assert_cmpuint (status_as_nobody (psock, "GET", "/metrics", NULL), ==, 403);
  g_assert_cmpuint (status_as_nobody (psock, "POST", "/rewrite", mfile), ==, 200);
  g_assert_cmpuint (status_as_nobody (psock, "POST", "/inspect", mfile), ==, 200);
  g_assert_true (mta_milter_log_wait (m, "http: POST /externalize refused to uid 65534 (nobody): not root, not "
                                         "the daemon's user, not in http_externalize_clients", 1));
  g_assert_true (mta_milter_log_wait (m, "http: GET /metrics refused to uid 65534 (nobody)", 1));
  /* root may */
  g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (psock);
  g_autoptr (GSocketConnection) c = connect_to (addr);
  g_autoptr (GBytes) mb = g_bytes_new (mtext, strlen (mtext));
  g_autoptr (Response) r = request_on (c, "POST", "/externalize", mb);
  g_assert_cmpuint (r->status, ==, 200);
  g_assert_cmpstr (g_hash_table_lookup (r->fields, "extbody-changed"), ==, "yes");
  g_assert_cmpuint (files_in (store), ==, 1);
  /* named, and reloaded */
  g_autofree char *named = g_strconcat (text, "http_externalize_clients = root, nobody\n"
                                        "http_metrics_clients = @nogroup\n", NULL);
  g_assert_true (g_file_set_contents (pconf, named, -1, NULL));
  mta_milter_signal (m, SIGHUP);
  g_assert_true (mta_milter_log_wait (m, "SIGHUP: reloaded configuration", 1));
  g_assert_cmpuint (status_as_nobody (psock, "POST", "/externalize", mfile), ==, 200);
  g_assert_cmpuint (status_as_nobody (psock, "GET", "/metrics", NULL), ==, 200);
  g_assert_cmpint (mta_milter_stop (m, FALSE), ==, 0);
  /* a user that does not exist */
  const char *argv[] = { g_getenv ("EXTBODYD"), "-n", "-c", pconf, "-o", "http_metrics_clients=extbody-no-such-user", NULL };
  g_autoptr (GSubprocess) p = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDERR_PIPE, NULL);
  g_autofree char *err = NULL;
  g_subprocess_communicate_utf8 (p, NULL, NULL, NULL, &err, NULL);
  g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 78);
  g_assert_nonnull (strstr (err, "http_metrics_clients"));
  g_assert_nonnull (strstr (err, "no such user"));
}

/* POST /externalize is a message in transit, as the milter's externalize
 * is: the trace fields the message came with go (strip_trace_fields, on by
 * default), the X-Extbody record of this pass is added, and the answer is
 * byte for byte what `extbody externalize --filter` writes with the same
 * configuration and store (the part's object named by its digest). */
static void
test_externalize_trace (void)
{
  g_autofree char *store = NULL, *tconf = NULL, *tsock = NULL;
  g_autoptr (MtaMilter) m = start_externalizing ("trace", &tconf, &tsock, &store);
  g_autofree char *att = g_strnfill (20000, 'y');
  g_autofree char *mtext = g_strdup_printf ("From: a@example.org\r\nMIME-Version: 1.0\r\n"
                                            "X-Extbody: externalized 5 of 5 parts (forged)\r\n"
                                            "X-Extbody-Resolved: access-type=URL; scheme=forged\r\n"
                                            "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
                                            "Content-Type: text/plain\r\n\r\nsee\r\n--b\r\n"
                                            "Content-Type: application/octet-stream\r\n"
                                            "Content-Disposition: attachment; filename=y.bin\r\n\r\n%s\r\n--b--\r\n", att);
  g_autofree char *mfile = g_build_filename (dir, "trace.eml", NULL);
  g_assert_true (g_file_set_contents (mfile, mtext, -1, NULL));
  g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (tsock);
  g_autoptr (GSocketConnection) c = connect_to (addr);
  g_autoptr (GBytes) mb = g_bytes_new (mtext, strlen (mtext));
  g_autoptr (Response) r = request_on (c, "POST", "/externalize", mb);
  g_assert_cmpuint (r->status, ==, 200);
  g_assert_cmpstr (g_hash_table_lookup (r->fields, "extbody-changed"), ==, "yes");
  gsize n = 0;
  const char *got = g_bytes_get_data (r->body, &n);
  g_autofree char *answer = g_strndup (got, n);
  g_assert_null (strstr (answer, "forged"));
  g_assert_nonnull (strstr (answer, "\r\nX-Extbody: externalized 1 of 1 part"));
  g_autoptr (GBytes) want = run_command (NULL, (const char *[]) { "externalize", "--filter", "-c", tconf, mfile, NULL });
  g_assert_true (g_bytes_equal (r->body, want));
  g_assert_cmpint (mta_milter_stop (m, FALSE), ==, 0);
}

/* Memory per message: large messages are spooled to files of their own
 * (milter_spill_size) and so are their answers, so that four 16 MiB
 * messages at once raise the daemon's peak memory (VmHWM, which counts the
 * spool files' pages while they are mapped) by about the messages
 * themselves, well below the three times them it was when all were in
 * memory: at most 1.6 times (the sanitizers' red zones and quarantine take
 * their share). */
static void
test_big_messages (void)
{
  g_autofree char *bconf = g_build_filename (dir, "big.conf", NULL);
  g_autofree char *bsock = g_build_filename (dir, "big-http.sock", NULL);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = off\nhttp_socket = unix:%s\n", bsock);
  g_assert_true (g_file_set_contents (bconf, text, -1, NULL));
  g_autofree char *msock = g_build_filename (dir, "big-milter.sock", NULL);
  g_autofree char *log = g_build_filename (dir, "big.log", NULL);
  g_autoptr (MtaMilter) m = mta_milter_start (msock, bconf, log, NULL);
  /* warm: the first message's allocations are the daemon's, not the size's */
  g_autoptr (GBytes) small = burst_message (1);
  double took;
  g_autoptr (GBytes) out = client_run (bsock, small, NULL, &took);
  g_assert_nonnull (out);
  double ratio = mta_doors_big_at_once (m, bsock, FALSE, 4, 16);
  g_assert_cmpfloat (ratio, <, 1.6);   /* 1.0 to 1.3 under the sanitizers; it was 3.0 */
  g_assert_cmpint (mta_milter_stop (m, FALSE), ==, 0);
}

/* The externalize round trip through the daemon leaves nothing: a message
 * whose whole body is the part, and a forwarded message that is, go through
 * POST /externalize with externalize_fallback = on (the reference inside a
 * multipart/alternative after a short text, marked with X-Extbody-Fallback),
 * then through a resolving daemon's POST /rewrite and Dovecot door, fetching
 * from the store (a private nginx): the part comes back in the alternative's
 * place, and the mark is gone from whichever header held it, top-level or
 * inside the forwarded message. */
static void
test_fallback_round_trip (void)
{
  g_autofree char *store = g_build_filename (dir, "rt-store", NULL);
  g_assert_cmpint (g_mkdir (store, 0755), ==, 0);
  g_autoptr (TestNginx) nginx = test_nginx_start (store);
  if (!nginx) {
    g_test_skip ("nginx is not installed");
    return;
  }
  g_autofree char *xconf = g_build_filename (dir, "rt-x.conf", NULL);
  g_autofree char *xsock = g_build_filename (dir, "rt-x-http.sock", NULL);
  g_autofree char *xtext = g_strdup_printf ("[extbody]\nfetch = off\nhttp_socket = unix:%s\nmilter_mode = externalize\n"
                                            "externalize_store = %s\nexternalize_base_url = http://127.0.0.1:%u/\n"
                                            "externalize_min_size = 1K\nexternalize_fallback = on\n", xsock, store,
                                            nginx->port);
  g_assert_true (g_file_set_contents (xconf, xtext, -1, NULL));
  g_autofree char *rconf = g_build_filename (dir, "rt-r.conf", NULL);
  g_autofree char *rsock = g_build_filename (dir, "rt-r-http.sock", NULL);
  g_autofree char *rdc = g_build_filename (dir, "rt-r-extbody", NULL);
  g_autofree char *rtext = g_strdup_printf ("[extbody]\nfetch = on\nallow_networks = 127.0.0.1/32\n"
                                            "http_socket = unix:%s\ndovecot_filter_socket = %s\n", rsock, rdc);
  g_assert_true (g_file_set_contents (rconf, rtext, -1, NULL));
  g_autofree char *xm = g_build_filename (dir, "rt-x-milter.sock", NULL);
  g_autofree char *rm = g_build_filename (dir, "rt-r-milter.sock", NULL);
  g_autofree char *xlog = g_build_filename (dir, "rt-x.log", NULL);
  g_autofree char *rlog = g_build_filename (dir, "rt-r.log", NULL);
  g_autoptr (MtaMilter) x = mta_milter_start (xm, xconf, xlog, NULL);
  g_autoptr (MtaMilter) r = mta_milter_start (rm, rconf, rlog, NULL);
  g_autofree char *data = g_strnfill (30000, 'r');
  g_autofree char *b64 = g_base64_encode ((const guchar *) data, strlen (data));
  GString *lines = g_string_new (NULL);
  for (gsize i = 0; i < strlen (b64); i += 76)
    g_string_append_printf (lines, "%.76s\r\n", b64 + i);
  g_autofree char *part = g_strdup_printf ("From: a@example.org\r\nSubject: whole\r\nMIME-Version: 1.0\r\n"
                                           "Content-Type: application/octet-stream; name=\"r.bin\"\r\n"
                                           "Content-Disposition: attachment; filename=\"r.bin\"\r\n"
                                           "Content-Transfer-Encoding: base64\r\n\r\n%s", lines->str);
  g_string_free (lines, TRUE);
  g_autofree char *fwd = g_strdup_printf ("From: c@example.org\r\nSubject: fwd\r\nMIME-Version: 1.0\r\n"
                                          "Content-Type: multipart/mixed; boundary=o\r\n\r\n--o\r\n"
                                          "Content-Type: text/plain\r\n\r\nsee below\r\n--o\r\n"
                                          "Content-Type: message/rfc822\r\n\r\n%s\r\n--o--\r\n", part);
  const char *msgs[] = { part, fwd };
  for (guint i = 0; i < G_N_ELEMENTS (msgs); i++) {
    g_autoptr (GBytes) in = g_bytes_new (msgs[i], strlen (msgs[i]));
    g_autoptr (GSocketAddress) xa = g_unix_socket_address_new (xsock);
    g_autoptr (GSocketConnection) xc = connect_to (xa);
    g_autoptr (Response) ext = request_on (xc, "POST", "/externalize", in);
    g_assert_cmpuint (ext->status, ==, 200);
    g_autofree char *etext = g_strndup (g_bytes_get_data (ext->body, NULL), g_bytes_get_size (ext->body));
    g_assert_nonnull (strstr (etext, "\r\nX-Extbody-Fallback: notice-sha256="));
    g_assert_nonnull (strstr (etext, "multipart/alternative"));
    g_autoptr (GSocketAddress) ra = g_unix_socket_address_new (rsock);
    g_autoptr (GSocketConnection) rc = connect_to (ra);
    g_autoptr (Response) back = request_on (rc, "POST", "/rewrite", ext->body);
    g_assert_cmpuint (back->status, ==, 200);
    g_assert_cmpstr (g_hash_table_lookup (back->fields, "extbody-resolved"), ==, "1");
    /* and through the Dovecot door */
    int fd = socket (AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    g_strlcpy (sa.sun_path, rdc, sizeof sa.sun_path);
    g_assert_cmpint (connect (fd, (struct sockaddr *) &sa, sizeof sa), ==, 0);
    g_autoptr (GString) dreq = g_string_new ("VERSION\tscript\t4\t0\n-\n\n");
    g_string_append_len (dreq, etext, (gssize) strlen (etext));
    g_assert_cmpint (send (fd, dreq->str, dreq->len, MSG_NOSIGNAL), ==, (gssize) dreq->len);
    shutdown (fd, SHUT_WR);
    GString *dout = g_string_new (NULL);
    char buf[65536];
    ssize_t n;
    while ((n = recv (fd, buf, sizeof buf, 0)) > 0)
      g_string_append_len (dout, buf, n);
    close (fd);
    g_autofree char *btext = g_strndup (g_bytes_get_data (back->body, NULL), g_bytes_get_size (back->body));
    g_assert_true (g_str_has_suffix (dout->str, "+\n"));
    g_string_truncate (dout, dout->len - 2);
    g_assert_cmpstr (dout->str, ==, btext);
    g_string_free (dout, TRUE);
    g_test_message ("%s", i ? "forwarded" : "whole body");
    g_assert_null (strstr (btext, "X-Extbody-Fallback"));
    g_assert_null (strstr (btext, "multipart/alternative"));
    g_assert_null (strstr (btext, "was taken out of this message"));
    g_assert_nonnull (strstr (btext, "\r\nContent-Type: application/octet-stream; name=\"r.bin\"\r\n"));
    g_assert_nonnull (strstr (btext, i ? "\r\nSubject: fwd\r\n" : "\r\nSubject: whole\r\n"));
  }
  g_assert_cmpint (mta_milter_stop (x, FALSE), ==, 0);
  g_assert_cmpint (mta_milter_stop (r, FALSE), ==, 0);
}

/* A client whose bytes are always there, chunks of one byte each behind a
 * long extension, faster than the daemon reads them and never ending: it is
 * cut off http_request_timeout after its first byte (408) too, though the
 * daemon never has to wait for it (max_message_size, 64 MiB here, is a
 * thousand times further). */
static void
test_endless_chunks (void)
{
  g_autofree char *econf = g_build_filename (dir, "endless.conf", NULL);
  g_autofree char *esock = g_build_filename (dir, "endless-http.sock", NULL);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = off\nhttp_socket = unix:%s\nhttp_request_timeout = 3\n",
                                           esock);
  g_assert_true (g_file_set_contents (econf, text, -1, NULL));
  g_autofree char *msock = g_build_filename (dir, "endless-milter.sock", NULL);
  g_autofree char *log = g_build_filename (dir, "endless.log", NULL);
  g_autoptr (MtaMilter) m = mta_milter_start (msock, econf, log, NULL);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  g_strlcpy (sa.sun_path, esock, sizeof sa.sun_path);
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  g_assert_cmpint (connect (fd, (struct sockaddr *) &sa, sizeof sa), ==, 0);
  const char *head = "POST /rewrite HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n";
  g_assert_cmpint (send (fd, head, strlen (head), MSG_NOSIGNAL), ==, (gssize) strlen (head));
  g_autofree char *ext = g_strnfill (1000, 'x');
  g_autofree char *chunk = g_strdup_printf ("1;%s\r\na\r\n", ext);
  GString *many = g_string_new (NULL);
  for (guint i = 0; i < 64; i++)
    g_string_append (many, chunk);
  gint64 t0 = g_get_monotonic_time ();
  guint64 sent = 0;
  while (g_get_monotonic_time () - t0 < 20 * G_USEC_PER_SEC) {
    ssize_t n = send (fd, many->str, many->len, MSG_NOSIGNAL);
    if (n <= 0)
      break;
    sent += (guint64) n;
  }
  double took = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  g_string_free (many, TRUE);
  char buf[4096];
  ssize_t n = recv (fd, buf, sizeof buf - 1, 0);
  close (fd);
  buf[MAX (n, 0)] = '\0';
  g_test_message ("%" G_GUINT64_FORMAT " bytes sent in %.1f s: %.40s", sent, took, buf);
  g_assert_true (g_str_has_prefix (buf, "HTTP/1.1 408 "));
  g_assert_cmpfloat (took, <, 3 + 3);
  g_assert_true (mta_milter_log_wait (m, "cut off after http_request_timeout", 1));
  g_assert_cmpint (mta_milter_stop (m, FALSE), ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (!g_getenv ("EXTBODYD") || !g_getenv ("EXTBODY"))
    test_skip_all ("EXTBODYD or EXTBODY is not set (run through ctest)");
  guint wd_dir = 0;
  dir = mta_dir_make ("http", &wd_dir);
  conf = g_build_filename (dir, "extbody.conf", NULL);
  http_sock = g_build_filename (dir, "http.sock", NULL);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = off\nhttp_socket = unix:%s\n"
                                           "max_message_size = %d\nhttp_timeout = %d\nhttp_max_connections = %d\n"
                                           "http_request_timeout = %d\n",
                                           http_sock, TEST_MAX_MESSAGE_SIZE, TEST_HTTP_TIMEOUT, TEST_HTTP_MAX_CONNS,
                                           TEST_HTTP_REQUEST_TIMEOUT);
  g_assert_true (g_file_set_contents (conf, text, -1, NULL));
  g_autofree char *sock = g_build_filename (dir, "milter.sock", NULL);
  g_autofree char *log = g_build_filename (dir, "milter.log", NULL);
  milter = mta_milter_start (sock, conf, log, NULL);
  g_test_add_func ("/http/rewrite-and-inspect", test_rewrite_and_inspect);
  g_test_add_func ("/http/rewrite-stored", test_rewrite_stored);
  g_test_add_func ("/http/client", test_client);
  g_test_add_func ("/http/metrics", test_metrics);
  g_test_add_func ("/http/errors", test_errors);
  g_test_add_func ("/http/answer-before-body", test_answer_before_body);
  g_test_add_func ("/http/too-large", test_too_large);
  g_test_add_func ("/http/slow-client", test_slow_client);
  g_test_add_func ("/http/max-connections", test_max_connections);
  g_test_add_func ("/http/check-address", test_check_address);
  g_test_add_func ("/http/tcp", test_tcp);
  g_test_add_func ("/http/allow-networks", test_allow_networks);
  g_test_add_func ("/http/reload", test_reload);
  g_test_add_func ("/http/client-gone", test_client_gone);
  g_test_add_func ("/http/drain", test_drain);
  g_test_add_func ("/http/health", test_health);
  g_test_add_func ("/http/health-redis", test_health_redis);
  g_test_add_func ("/http/drain-delay", test_drain_delay);
  g_test_add_func ("/http/vanished-mid-body", test_vanished_mid_body);
  g_test_add_func ("/http/200-messages-10-sessions", test_burst);
  g_test_add_func ("/http/200-messages-reloaded-4-times", test_burst_reloaded);
  g_test_add_func ("/http/killed-mid-message", test_killed_mid_message);
  g_test_add_func ("/http/framing", test_framing);
  g_test_add_func ("/http/slow-request", test_slow_request);
  g_test_add_func ("/http/endless-chunks", test_endless_chunks);
  g_test_add_func ("/http/peer-flood", test_peer_flood);
  g_test_add_func ("/http/permissions", test_permissions);
  g_test_add_func ("/http/externalize-strips-trace", test_externalize_trace);
  g_test_add_func ("/http/big-messages", test_big_messages);
  g_test_add_func ("/http/fallback-round-trip", test_fallback_round_trip);
  int rc = g_test_run ();
  g_assert_cmpint (mta_milter_stop (milter, TRUE), ==, 0);
  g_assert_false (g_file_test (http_sock, G_FILE_TEST_EXISTS));   /* removed at the stop */
  mta_milter_free (milter);
  mta_dir_remove (dir, wd_dir);
  return rc;
}
