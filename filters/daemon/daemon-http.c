/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-http.c - the daemon's HTTP/1.1 listener (http_socket): POST /rewrite, /inspect, /externalize, GET /metrics
 *
 * Exim, Postfix's pipe and scripts reach the warm engine through it (extbodyc)
 * instead of starting a process per message. libmicrohttpd serves each
 * connection on a thread of its own: a request's body is gathered in its
 * context (Req) up to its Content-Length, which max_message_size bounds
 * before a byte of the body is read, then planned on that thread with the
 * configuration generation in force when the request began. The socket is
 * bound here, at start, before privileges are dropped (libmicrohttpd cannot
 * bind a unix socket itself, and is handed the descriptor); the threads start
 * once the daemon has detached. At the stop the listener takes no connection
 * any more and the requests in flight get milter_stop_timeout to finish, as
 * the milter's messages do; a request that begins meanwhile on a connection
 * already open is answered 503.
 *
 * http_max_connections bounds the requests being worked on: from a request's
 * header to the moment its answer is queued. The count drops before the
 * client can read a byte of the answer, so a client that sends its requests
 * one after the other never meets its own previous connection still counted
 * (libmicrohttpd tells of a closed connection later, from its polling thread).
 * Idle connections are bounded by libmicrohttpd itself, at twice as many.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include <extbody/extbody.h>

#include "daemon.h"

typedef enum { EP_NONE, EP_REWRITE, EP_INSPECT, EP_EXTERNALIZE, EP_METRICS } Endpoint;

/* One request, from its header to its answer (libmicrohttpd's con_cls). */
typedef struct {
  Gen        *gen;        /* the configuration in force when it began */
  Endpoint    ep;
  char       *method, *path;   /* for the log */
  GByteArray *body;       /* NULL: no body is read (answered at once, or GET) */
  guint64     expected;   /* its Content-Length */
  guint64     in;         /* body bytes that came */
  guint       status;     /* 0: not answered yet */
  gsize       out;        /* response body bytes */
  gboolean    busy;       /* counted in http_busy: begun, not yet answered */
} Req;

static struct MHD_Daemon *http_daemon;
static int    http_fd = -1;        /* the listening socket until it is handed over or closed */
static DaemonSocket http_unix;     /* a unix socket's file, removed at the stop */
static guint  http_max;            /* http_max_connections at start */
static EbConfig *http_start_config; /* the configuration at start: http_allow_networks */
static gint   http_busy;           /* requests begun and not answered yet */
static gint   http_in_flight;      /* requests between their header and their end */
static gint   http_stopping;       /* set at the stop: new requests get 503 */
static gint   http_cancel;         /* set when the drain is over: fetches in flight stop */

/* ---- the socket -------------------------------------------------------------- */

/* The address of an inet: or inet6: http_socket (the configuration checked
 * it is an IP address written out). */
static GInetAddress *
inet_address_of (const char *spec)
{
  const char *at = strchr (spec, '@');
  g_autofree char *addr = g_strdup (at + 1);
  if (addr[0] == '[') {
    memmove (addr, addr + 1, strlen (addr));
    addr[strlen (addr) - 1] = '\0';
  }
  return g_inet_address_new_from_string (addr);
}

/* inet:PORT@ADDRESS or inet6:PORT@[ADDRESS]. */
static int
open_inet (const char *spec)
{
  gboolean v6 = g_str_has_prefix (spec, "inet6:");
  guint16 port = (guint16) g_ascii_strtoull (strchr (spec, ':') + 1, NULL, 10);
  g_autoptr (GInetAddress) ia = inet_address_of (spec);
  int fd = socket (v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || !ia)
    return -1;
  int one = 1;
  setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int r;
  if (v6) {
    setsockopt (fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons (port) };
    memcpy (&a.sin6_addr, g_inet_address_to_bytes (ia), sizeof a.sin6_addr);
    r = bind (fd, (struct sockaddr *) &a, sizeof a);
  } else {
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons (port) };
    memcpy (&a.sin_addr, g_inet_address_to_bytes (ia), sizeof a.sin_addr);
    r = bind (fd, (struct sockaddr *) &a, sizeof a);
  }
  if (r != 0) {
    int e = errno;
    close (fd);
    errno = e;
    return -1;
  }
  return fd;
}

/* Bind and listen on http_socket (nothing when it is empty), as root when
 * the daemon starts as root; a unix socket's file is given to @user (-u).
 * Returns: FALSE with @error when it cannot. */
gboolean
daemon_http_open (const EbConfig *config, const char *user, GError **error)
{
  const char *spec = eb_config_get_string (config, "http_socket");
  if (!spec || !*spec)
    return TRUE;
  int fd;
  if (g_str_has_prefix (spec, "unix:")) {
    fd = daemon_listen_unix (&http_unix, "http_socket", spec + 5, config, user, error);
    if (fd < 0)
      return FALSE;
  } else {
    fd = open_inet (spec);
    if (fd >= 0 && listen (fd, SOMAXCONN) != 0) {
      int e = errno;
      close (fd);
      errno = e;
      fd = -1;
    }
    if (fd < 0) {
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno), "cannot open http_socket %s: %s",
                   spec, g_strerror (errno));
      return FALSE;
    }
  }
  http_fd = fd;
  http_max = (guint) eb_config_get_uint64 (config, "http_max_connections");
  http_start_config = eb_config_copy (config);
  return TRUE;
}

/* A TCP client from neither loopback nor http_allow_networks is closed at
 * once, with a line in the log (a unix socket's clients pass). */
static enum MHD_Result
http_accept (void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
  if (!addr || addrlen < sizeof (sa_family_t) || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
    return MHD_YES;
  g_autoptr (GSocketAddress) sa = g_socket_address_new_from_native ((gpointer) addr, addrlen);
  GInetAddress *ia = sa && G_IS_INET_SOCKET_ADDRESS (sa) ? g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (sa)) : NULL;
  if ((ia && g_inet_address_get_is_loopback (ia))
      || eb_config_networks_contain (http_start_config, "http_allow_networks", addr))
    return MHD_YES;
  g_autofree char *who = ia ? g_inet_address_to_string (ia) : g_strdup ("?");
  log_line (LOG_WARNING, "http: a client from %s refused: not loopback, not in http_allow_networks", who);
  return MHD_NO;
}

/* ---- answers ----------------------------------------------------------------- */

static void
req_free (Req *r)
{
  daemon_generation_unref (r->gen);
  if (r->body)
    g_byte_array_unref (r->body);
  g_free (r->method);
  g_free (r->path);
  g_free (r);
}

/* @r is no longer worked on: answered, or ended unanswered. */
static void
req_idle (Req *r)
{
  if (r->busy) {
    r->busy = FALSE;
    g_atomic_int_add (&http_busy, -1);
  }
}

/* Queue @body (transfer full, g_malloc'd; NULL when @len is 0) with the
 * status @status and the type @type; @close ends the connection after it
 * (an answer given before the body was read). */
static enum MHD_Result
reply (struct MHD_Connection *conn, Req *r, guint status, const char *type, char *body, gsize len,
       gboolean close, const char *const *fields)
{
  struct MHD_Response *resp = MHD_create_response_from_buffer_with_free_callback (len, body, g_free);
  if (!resp) {
    g_free (body);
    return MHD_NO;
  }
  MHD_add_response_header (resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  for (guint i = 0; fields && fields[i]; i += 2)
    MHD_add_response_header (resp, fields[i], fields[i + 1]);
  if (close)
    MHD_add_response_header (resp, MHD_HTTP_HEADER_CONNECTION, "close");
  r->status = status;
  r->out = len;
  req_idle (r);
  enum MHD_Result ok = MHD_queue_response (conn, status, resp);
  MHD_destroy_response (resp);
  return ok;
}

/* An error: one line of text. */
static enum MHD_Result G_GNUC_PRINTF (4, 5)
reply_error (struct MHD_Connection *conn, Req *r, guint status, const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  g_autofree char *line = g_strdup_vprintf (format, ap);
  va_end (ap);
  char *body = g_strconcat (line, "\n", NULL);
  /* a body not read yet is not read at all */
  gboolean close = r->body && r->in < r->expected;
  const char *allow[] = { MHD_HTTP_HEADER_ALLOW, r->ep == EP_METRICS ? "GET" : "POST", NULL };
  return reply (conn, r, status, "text/plain", body, strlen (body), close || r->body == NULL,
                status == MHD_HTTP_METHOD_NOT_ALLOWED ? allow : NULL);
}

/* The MTA's id of the message, as extbodyc -q sends it (Extbody-Queue-Id),
 * for the log line; NULL when absent or not 1 to 64 of letters, digits, '.',
 * '_' and '-' (anyone who can connect may send anything). */
static const char *
queue_id_of (struct MHD_Connection *conn)
{
  const char *q = MHD_lookup_connection_value (conn, MHD_HEADER_KIND, "Extbody-Queue-Id");
  gsize n = q ? strlen (q) : 0;
  if (n < 1 || n > 64)
    return NULL;
  for (gsize i = 0; i < n; i++)
    if (!g_ascii_isalnum (q[i]) && q[i] != '.' && q[i] != '_' && q[i] != '-')
      return NULL;
  return q;
}

/* While a request's fetches run: the drain's end, or the client gone (its
 * end of the connection read as closed, as nginx takes it: 499), stops them. */
typedef struct {
  int  fd;          /* the connection */
  gint cancelled;
} Waiting;

/* About once a second while fetches run (eb_fetch_set_thread_progress). */
static void
progress_cb (gpointer data)
{
  Waiting *w = data;
  char c;
  if (g_atomic_int_get (&http_cancel)
      || (w->fd >= 0 && recv (w->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0))
    g_atomic_int_set (&w->cancelled, 1);
}

/* An argument of the request's query (POST /rewrite?stored), looked for. */
typedef struct {
  const char *name;
  gboolean    found;
} ArgWanted;

static enum MHD_Result
find_arg (void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
  (void) kind;
  (void) value;
  ArgWanted *want = cls;
  if (key && strcmp (key, want->name) == 0) {
    want->found = TRUE;
    return MHD_NO;
  }
  return MHD_YES;
}

static gboolean
has_arg (struct MHD_Connection *conn, const char *name)
{
  ArgWanted want = { name, FALSE };
  MHD_get_connection_values (conn, MHD_GET_ARGUMENT_KIND, find_arg, &want);
  return want.found;
}

/* POST /rewrite and /externalize: the bytes `extbody rewrite --filter` (or
 * `extbody externalize --filter`) writes for the message, counted and logged
 * as the milter's messages are. POST /rewrite?stored: the bytes `extbody
 * rewrite --maildir` writes for a stored message instead (mail at rest, as
 * extbody-imap-rewrite sends it): its trace fields kept, no X-Extbody field
 * added, and the Content-Length fields of a changed message removed. */
static enum MHD_Result
answer_rewrite (struct MHD_Connection *conn, Req *r)
{
  const EbConfig *config = r->gen->config;
  const char *buf = (const char *) r->body->data;
  gsize len = r->body->len;
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr (EbPlan) plan = NULL;
  g_autoptr (GError) error = NULL;
  gboolean ok;
  if (r->ep == EP_EXTERNALIZE) {
    plan = eb_externalize_plan (buf, len, config, r->gen->store, EB_EXTERNALIZE_FILTER_FIELD);
    ok = eb_plan_write (plan, out, &error);
  } else {
    EbRewriteFlags flags = EB_REWRITE_FILTER_FIELD;
    if (eb_config_get_boolean (config, "strip_trace_fields"))
      flags |= EB_REWRITE_STRIP_TRACE;
    if (has_arg (conn, "stored"))
      flags = EB_REWRITE_DROP_CONTENT_LENGTH;
    /* the drain's end cuts the fetches off, as the milter's at its stop;
     * so does the client's going away */
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info (conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    Waiting w = { ci ? ci->connect_fd : -1, 0 };
    eb_fetch_set_thread_progress (progress_cb, &w);
    eb_fetch_set_thread_cancel (&w.cancelled);
    ok = eb_rewrite (buf, len, config, r->gen->fetcher, flags, out, &plan, &error);
    eb_fetch_set_thread_cancel (NULL);
    eb_fetch_set_thread_progress (NULL, NULL);
    if (ok && g_atomic_int_get (&w.cancelled) && !g_atomic_int_get (&http_cancel)) {
      /* nobody to answer: logged, not counted as a message */
      log_line (LOG_INFO, "http: POST %s: the client closed the connection: the fetches were cancelled", r->path);
      return reply_error (conn, r, 499, "the client closed the connection");
    }
  }
  if (!ok || !g_output_stream_close (out, NULL, &error))
    return reply_error (conn, r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot write the message: %s", error->message);
  eb_stats_add_result (daemon_main_stats, plan);
  eb_stats_add_bytes (daemon_main_stats, len);
  if (eb_plan_get_changed (plan))
    eb_stats_add_changed (daemon_main_stats, 1);
  if (eb_plan_get_n_refs (plan) || eb_plan_get_reason (plan) != EB_REASON_RESOLVED) {
    g_autofree char *mid = eb_plan_get_message_id (plan);
    eb_log_message (queue_id_of (conn), mid, plan);
  }
  g_autofree char *refs = g_strdup_printf ("%u", eb_plan_get_n_refs (plan));
  g_autofree char *resolved = g_strdup_printf ("%u", eb_plan_get_n_resolved (plan));
  const char *fields[] = {
    "Extbody-Changed", eb_plan_get_changed (plan) ? "yes" : "no",
    "Extbody-References", refs,
    "Extbody-Resolved", resolved,
    NULL
  };
  GMemoryOutputStream *mem = G_MEMORY_OUTPUT_STREAM (out);
  gsize n = g_memory_output_stream_get_data_size (mem);
  char *data = g_memory_output_stream_steal_data (mem);
  return reply (conn, r, MHD_HTTP_OK, "message/rfc822", data, n, FALSE, fields);
}

/* POST /inspect: the lines `extbody inspect --json -` prints for the
 * message (nothing fetched, as inspect without --fetch). */
static enum MHD_Result
answer_inspect (struct MHD_Connection *conn, Req *r)
{
  g_autoptr (EbPlan) plan = eb_rewrite_plan ((const char *) r->body->data, r->body->len, r->gen->config,
                                             r->gen->fetcher, EB_REWRITE_NO_FETCH);
  GString *s = g_string_new (NULL);
  guint n = eb_plan_get_n_refs (plan);
  for (guint i = 0; i < n; i++) {
    g_autofree char *line = eb_inspect_json ("-", -1, NULL, plan, i);
    g_string_append (s, line);
    g_string_append_c (s, '\n');
  }
  gsize len = s->len;
  return reply (conn, r, MHD_HTTP_OK, "application/json", g_string_free (s, FALSE), len, FALSE, NULL);
}

/* The whole body has come. */
static enum MHD_Result
answer_body (struct MHD_Connection *conn, Req *r)
{
  if (r->body->len == 0)
    return reply_error (conn, r, MHD_HTTP_BAD_REQUEST, "empty body, not a message");
  if (r->ep == EP_INSPECT)
    return answer_inspect (conn, r);
  return answer_rewrite (conn, r);
}

/* The endpoint of @path and whether @method goes with it (HEAD with GET). */
static Endpoint
endpoint_of (const char *path, const char *method, gboolean *method_ok)
{
  static const struct { const char *path; Endpoint ep; gboolean post; } eps[] = {
    { "/rewrite", EP_REWRITE, TRUE }, { "/inspect", EP_INSPECT, TRUE },
    { "/externalize", EP_EXTERNALIZE, TRUE }, { "/metrics", EP_METRICS, FALSE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (eps); i++) {
    if (strcmp (path, eps[i].path) != 0)
      continue;
    *method_ok = eps[i].post ? strcmp (method, "POST") == 0
                             : strcmp (method, "GET") == 0 || strcmp (method, "HEAD") == 0;
    return eps[i].ep;
  }
  *method_ok = FALSE;
  return EP_NONE;
}

/* The request's header has come: answer at once what needs no body, else
 * get ready for the body. */
static enum MHD_Result
answer_header (struct MHD_Connection *conn, Req *r)
{
  if (g_atomic_int_get (&http_stopping))
    return reply_error (conn, r, MHD_HTTP_SERVICE_UNAVAILABLE, "stopping: try again later");
  r->busy = TRUE;
  if ((guint) g_atomic_int_add (&http_busy, 1) + 1 > http_max)
    return reply_error (conn, r, MHD_HTTP_SERVICE_UNAVAILABLE, "too many connections (http_max_connections = %u)", http_max);
  gboolean method_ok = FALSE;
  r->ep = endpoint_of (r->path, r->method, &method_ok);
  if (r->ep == EP_NONE)
    return reply_error (conn, r, MHD_HTTP_NOT_FOUND, "no such path: POST /rewrite, /inspect, /externalize or GET /metrics");
  if (!method_ok)
    return reply_error (conn, r, MHD_HTTP_METHOD_NOT_ALLOWED, "%s takes %s only", r->path,
                        r->ep == EP_METRICS ? "GET" : "POST");
  if (r->ep == EP_METRICS) {
    char *text = eb_metrics_format_prometheus (daemon_main_stats);
    return reply (conn, r, MHD_HTTP_OK, "text/plain; version=0.0.4", text, strlen (text), FALSE, NULL);
  }
  const char *cl = MHD_lookup_connection_value (conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (!cl)
    return reply_error (conn, r, MHD_HTTP_LENGTH_REQUIRED, "Content-Length required");
  guint64 n = 0;
  if (!g_ascii_string_to_unsigned (cl, 10, 0, G_MAXUINT64, &n, NULL))
    return reply_error (conn, r, MHD_HTTP_BAD_REQUEST, "Content-Length is not a number");
  guint64 max = eb_config_get_uint64 (r->gen->config, "max_message_size");
  if (n > max)
    return reply_error (conn, r, MHD_HTTP_CONTENT_TOO_LARGE, "message of %" G_GUINT64_FORMAT
                        " bytes is larger than max_message_size (%" G_GUINT64_FORMAT ")", n, max);
  if (r->ep == EP_EXTERNALIZE && !r->gen->store)
    return reply_error (conn, r, MHD_HTTP_SERVICE_UNAVAILABLE, "no externalize_store configured");
  /* grown as the body comes, never past its Content-Length: a client that
   * announces much and sends little holds no more than it sent */
  r->expected = n;
  r->body = g_byte_array_sized_new ((guint) MIN (n, 64 * 1024));
  return MHD_YES;
}

/* A connection's context (libmicrohttpd's socket_context): whether a request
 * began on it. libmicrohttpd reads what a client sent up to the end of its
 * input before it parses a byte of it: a client that sends a header and part
 * of a body and closes at once never becomes a request (no Req, nothing
 * logged by http_completed), so the connection's end says so. */
static void
http_connection (void *cls, struct MHD_Connection *conn, void **socket_context,
                 enum MHD_ConnectionNotificationCode toe)
{
  (void) cls;
  (void) conn;
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    *socket_context = g_new0 (gboolean, 1);
    return;
  }
  gboolean *requested = *socket_context;
  if (requested && !*requested)
    log_line (LOG_INFO, "http: connection ended by the client before a request was read");
  g_free (requested);
  *socket_context = NULL;
}

static enum MHD_Result
http_answer (void *cls, struct MHD_Connection *conn, const char *url, const char *method,
             const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
  Req *r = *con_cls;
  if (!r) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info (conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (ci && ci->socket_context)
      *(gboolean *) ci->socket_context = TRUE;
    r = g_new0 (Req, 1);
    r->gen = daemon_generation_get ();
    r->method = g_strdup (method);
    r->path = g_strdup (url);
    *con_cls = r;
    g_atomic_int_inc (&http_in_flight);
    return answer_header (conn, r);
  }
  if (*upload_data_size) {
    gsize n = *upload_data_size;
    r->in += n;
    /* libmicrohttpd holds the body to its Content-Length, which
     * max_message_size bounded */
    if (!r->status && r->body && r->body->len + n <= r->expected)
      g_byte_array_append (r->body, (const guint8 *) upload_data, (guint) n);
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (r->status || !r->body)
    return MHD_YES;
  return answer_body (conn, r);
}

/* The request has ended, answered or cut off: one line in the log. */
static void
http_completed (void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
  Req *r = *con_cls;
  if (!r)
    return;
  *con_cls = NULL;
  g_autofree char *path = g_strescape (r->path, NULL);
  if (strlen (path) > 200)
    path[200] = '\0';
  if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
    log_line (LOG_INFO, "http: %s %s %u, %" G_GUINT64_FORMAT " bytes in, %" G_GSIZE_FORMAT " bytes out",
              r->method, path, r->status, r->in, r->out);
  else
    log_line (LOG_INFO, "http: %s %s %s, %" G_GUINT64_FORMAT " bytes in", r->method, path,
              toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? "cut off after http_timeout"
              : toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ? "cut off at the stop"
              : "ended by the client", r->in);
  req_idle (r);
  req_free (r);
  g_atomic_int_add (&http_in_flight, -1);
}

static void
http_mhd_log (void *cls, const char *format, va_list ap)
{
  g_autofree char *line = g_strdup_vprintf (format, ap);
  g_strchomp (line);
  /* mostly about one connection (a client gone away): not a warning */
  log_line (LOG_INFO, "http: %s", line);
}

/* ---- lifecycle ---------------------------------------------------------------- */

/* Serve the socket daemon_http_open bound (nothing when none), on threads
 * that take none of the signals (the caller blocks them). */
gboolean
daemon_http_start (const EbConfig *config, GError **error)
{
  if (http_fd < 0)
    return TRUE;
  /* past http_max_connections as many connections again are let in, to be
   * told 503 or to wait idle (libmicrohttpd itself closes one past its limit
   * unanswered) */
  unsigned int limit = http_max * 2;
  unsigned int timeout = (unsigned int) eb_config_get_uint64 (config, "http_timeout");
  http_daemon = MHD_start_daemon (MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION
                                  | MHD_USE_ITC | MHD_USE_ERROR_LOG,
                                  0, http_accept, NULL, http_answer, NULL,
                                  MHD_OPTION_EXTERNAL_LOGGER, http_mhd_log, NULL,
                                  MHD_OPTION_LISTEN_SOCKET, http_fd,
                                  MHD_OPTION_CONNECTION_LIMIT, limit,
                                  MHD_OPTION_CONNECTION_TIMEOUT, timeout,
                                  MHD_OPTION_NOTIFY_COMPLETED, http_completed, NULL,
                                  MHD_OPTION_NOTIFY_CONNECTION, http_connection, NULL,
                                  MHD_OPTION_END);
  if (!http_daemon) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "cannot start the HTTP listener on %s",
                 eb_config_get_string (config, "http_socket"));
    return FALSE;
  }
  http_fd = -1;   /* libmicrohttpd's now */
  return TRUE;
}

/* Take no connection any more (a unix socket's file goes, when it is still
 * ours); requests on connections already open are answered 503. */
void
daemon_http_quiesce (void)
{
  g_atomic_int_set (&http_stopping, 1);
  int fd = http_daemon ? MHD_quiesce_daemon (http_daemon) : http_fd;
  if (fd >= 0)
    close (fd);
  http_fd = -1;
  daemon_listen_remove (&http_unix);
}

/* HTTP requests begun and not ended. */
guint
daemon_http_in_flight (void)
{
  return (guint) g_atomic_int_get (&http_in_flight);
}

/* The end: fetches in flight are cut off, every connection closed, every
 * thread joined. Safe to call twice. */
void
daemon_http_stop (void)
{
  daemon_http_quiesce ();
  g_atomic_int_set (&http_cancel, 1);
  if (http_daemon)
    MHD_stop_daemon (http_daemon);
  http_daemon = NULL;
  g_clear_pointer (&http_start_config, eb_config_free);
}
