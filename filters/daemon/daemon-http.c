/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-http.c - the daemon's HTTP/1.1 listener (http_socket): POST /rewrite, /inspect, /externalize, GET /metrics
 *
 * Exim, Postfix's pipe and scripts reach the warm engine through it (extbodyc)
 * instead of starting a process per message. Every local user may connect
 * (client_umask), so every byte a client sends is hostile input, and the door
 * is the daemon's own: an accept thread, a thread per connection, and the
 * HTTP/1.1 rules of extbodyc's own answer parser (filters/client/extbodyc-http.c,
 * compiled in), so that both ends frame a message by the same code and the
 * door behaves the same whatever the system's libraries. Until 0.2.0 it was
 * libmicrohttpd's, which left the framing, the time a request may take and
 * who holds the connections to the library and to its version: Debian 12's
 * 0.9.75 and Debian 13's 1.0.1 acted on a body whose length was ambiguous
 * (Content-Length with chunks, two lengths) in different ways, 0.9.75 answered
 * some refusals twice, neither bounds the time a header may take in all, and
 * neither knows who a unix socket's client is.
 *
 * A request is read thus, on its connection's thread:
 *
 *   - its head (ebc_http_parse_request), at most 64 KiB, from its first byte
 *     within http_request_timeout in all and http_timeout between two reads;
 *     a head that frames its body ambiguously, or is malformed, is answered
 *     400 (or 414, 417, 431, 501, 505) and the connection closed: the daemon
 *     never acts on bytes other than the body the framing gives;
 *   - its body, within the same http_request_timeout: Content-Length bytes
 *     (max_message_size bounds the length before a byte of it is read), or
 *     chunks (ebc_http_chunks, max_message_size bounding what they add up
 *     to), into a spool (daemon-spool.c): in memory up to
 *     milter_spill_size, past it in an unlinked file of its own, which the
 *     plan reads mapped and the answer, spooled the same way, is sent from;
 *   - its answer, written within http_request_timeout again; then the next
 *     request on the connection (keep-alive and pipelining: bytes past a
 *     body are the next request's), unless the request or the answer said
 *     Connection: close.
 *
 * Who may do what (daemon-peer.c): a unix socket's client is its user (the
 * kernel's credentials, SO_PEERCRED), an inet client its address. One peer
 * holds at most http_max_peer_connections connections (past it: 503 at once);
 * root, the daemon's own user and loopback addresses are not counted.
 * Rewriting and inspecting are open to every client; POST /externalize and
 * GET /metrics are for root, the daemon's user and the clients
 * http_externalize_clients and http_metrics_clients name (others: 403).
 *
 * http_max_connections bounds the requests being worked on: from a request's
 * head to the moment its answer is written out. The count drops before the
 * client can read a byte of the answer, so a client that sends its requests
 * one after the other never meets its own previous request still counted.
 * Twice as many connections may be open (idle between requests, or sending
 * one); past that, a new connection waits in the socket's backlog. The
 * socket is bound at start, before privileges are dropped; the threads start
 * once the daemon has detached. At the stop the listener takes no
 * connection any more and the requests in flight get milter_stop_timeout to
 * finish, as the milter's messages do; a request that begins meanwhile on a
 * connection already open is answered 503.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib-unix.h>

#include <extbody/extbody.h>

#include "extbodyc-http.h"
#include "daemon.h"

typedef enum { EP_NONE, EP_REWRITE, EP_INSPECT, EP_EXTERNALIZE, EP_METRICS, EP_HEALTH } Endpoint;

/* One connection, from its accept to its close, on a thread of its own. */
typedef struct {
  int         fd;
  DaemonPeer  peer;
  DaemonIo    io;
  GByteArray *in;        /* bytes read and not used yet: a head, a body's start, the next request */
  guint       requests;  /* heads read on it */
  gboolean    unread;    /* answered before its request's end: the close lingers */
} HttpConn;

/* One request, from its head to its answer. */
typedef struct {
  HttpConn      *c;
  Gen           *gen;        /* the configuration in force when its head came */
  EbcHttpRequest h;
  char          *head;       /* its head's bytes (h's offsets are into them) */
  char          *method, *path, *query;   /* the target split at '?' */
  Endpoint       ep;
  DaemonSpool    body;
  guint          status;     /* 0: not answered */
  guint64        out;        /* answer body bytes */
  gboolean       busy;       /* counted in http_busy: begun, not yet answered */
  gboolean       body_read;  /* its whole body was read (or it has none) */
  gboolean       close;      /* the connection ends after the answer */
  const char    *cut;        /* ended unanswered: why */
} HttpReq;

/* What an answer's body is: bytes in memory (g_malloc'd), a spool file, or
 * bytes borrowed (the request's own, for a message that does not change). */
typedef struct {
  char       *mem;
  guint64     len;
  int         fd;     /* -1: @mem, or @borrowed */
  const char *borrowed;
} HttpBody;

static int    http_fd = -1;        /* the listening socket */
static DaemonSocket http_unix;     /* a unix socket's file, removed at the stop */
static guint  http_max;            /* http_max_connections at start */
static guint  http_idle_s;         /* http_timeout at start */
static guint  http_request_s;      /* http_request_timeout at start */
static EbConfig *http_start_config; /* the configuration at start: http_allow_networks */
static DaemonPeerShare http_share; /* http_max_peer_connections */
static gboolean http_share_ready;
static int    http_wake[2] = { -1, -1 };   /* ends the accept thread's wait */
static GThread *http_accept_thread;
static DaemonLinger *http_linger;  /* closes what was answered before its end (daemon-linger.c) */
static GMutex http_lock;           /* guards what follows */
static GCond  http_cond;
static guint  http_conns;          /* connections open */
static GSList *http_open;          /* their descriptors, shut down at the stop */
static gint   http_busy;           /* requests begun and not answered yet */
static gint   http_in_flight;      /* requests between their head and their end */
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
static gboolean
daemon_http_open (const Gen *gen, const char *user, GError **error)
{
  const DaemonSettings *keys = &gen->keys;
  const char *spec = keys->http_socket;
  if (!spec || !*spec)
    return TRUE;
  int fd;
  if (g_str_has_prefix (spec, "unix:")) {
    if (daemon_listen_dir_missing ("http_socket", spec + 5))
      return TRUE;
    fd = daemon_listen_unix (&http_unix, "http_socket", spec + 5, keys, user, error);
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
  http_max = (guint) keys->http_max_connections;
  http_idle_s = (guint) keys->http_timeout;
  http_request_s = (guint) keys->http_request_timeout;
  daemon_peer_share_init (&http_share, (guint) keys->http_max_peer_connections);
  http_share_ready = TRUE;
  http_start_config = eb_config_copy (gen->config);
  return TRUE;
}

static gboolean
daemon_http_is_open (void)
{
  return http_fd >= 0;
}

/* A TCP client from neither loopback nor http_allow_networks is refused,
 * with a line in the log (a unix socket's clients pass). */
static gboolean
http_address_allowed (const struct sockaddr_storage *ss, socklen_t len)
{
  if (len < sizeof (sa_family_t) || (ss->ss_family != AF_INET && ss->ss_family != AF_INET6))
    return TRUE;
  g_autoptr (GSocketAddress) sa = g_socket_address_new_from_native ((gpointer) ss, len);
  GInetAddress *ia = sa && G_IS_INET_SOCKET_ADDRESS (sa) ? g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (sa)) : NULL;
  if ((ia && g_inet_address_get_is_loopback (ia))
      || daemon_keys_http_allows (http_start_config, (const struct sockaddr *) ss))
    return TRUE;
  g_autofree char *who = ia ? g_inet_address_to_string (ia) : g_strdup ("?");
  log_line (LOG_WARNING, "http: a client from %s refused: not loopback, not in http_allow_networks", who);
  return FALSE;
}

/* ---- answers ----------------------------------------------------------------- */

static const char *
reason_phrase (guint status)
{
  static const struct { guint status; const char *text; } phrases[] = {
    { 100, "Continue" }, { 200, "OK" }, { 400, "Bad Request" }, { 403, "Forbidden" }, { 404, "Not Found" },
    { 405, "Method Not Allowed" }, { 408, "Request Timeout" }, { 411, "Length Required" },
    { 413, "Content Too Large" }, { 414, "URI Too Long" }, { 417, "Expectation Failed" },
    { 431, "Request Header Fields Too Large" }, { 499, "Client Closed Request" },
    { 500, "Internal Server Error" }, { 501, "Not Implemented" }, { 503, "Service Unavailable" },
    { 505, "HTTP Version Not Supported" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (phrases); i++)
    if (phrases[i].status == status)
      return phrases[i].text;
  return "Unknown";
}

/* The Date field's value (RFC 9110 5.6.7), in English whatever the locale. */
static char *
http_date (void)
{
  static const char *const days[] = { "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun" };
  static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
  g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
  return g_strdup_printf ("%s, %02d %s %04d %02d:%02d:%02d GMT", days[g_date_time_get_day_of_week (now) - 1],
                          g_date_time_get_day_of_month (now), months[g_date_time_get_month (now) - 1],
                          g_date_time_get_year (now), g_date_time_get_hour (now),
                          g_date_time_get_minute (now), g_date_time_get_second (now));
}

/* @r is no longer worked on: answered, or ended unanswered. */
static void
req_idle (HttpReq *r)
{
  if (r->busy) {
    r->busy = FALSE;
    g_atomic_int_add (&http_busy, -1);
  }
}

/* Write the answer @status with @body (taken; its type @type) and @fields
 * (name, value pairs). A HEAD request gets the head alone. FALSE when the
 * client did not take it all (it is gone, or too slow: the connection ends). */
static gboolean
reply (HttpReq *r, guint status, const char *type, HttpBody *body, const char *const *fields)
{
  g_autofree char *date = http_date ();
  GString *h = g_string_new (NULL);
  g_string_append_printf (h, "HTTP/1.1 %u %s\r\nDate: %s\r\n", status, reason_phrase (status), date);
  if (r->close)
    g_string_append (h, "Connection: close\r\n");
  g_string_append_printf (h, "Content-Type: %s\r\n", type);
  for (guint i = 0; fields && fields[i]; i += 2)
    g_string_append_printf (h, "%s: %s\r\n", fields[i], fields[i + 1]);
  g_string_append_printf (h, "Content-Length: %" G_GUINT64_FORMAT "\r\n\r\n", body->len);
  r->status = status;
  r->out = body->len;
  req_idle (r);
  HttpConn *c = r->c;
  daemon_io_deadline (&c->io, http_request_s);
  DaemonIoEnd end;
  gboolean head_only = r->method && strcmp (r->method, "HEAD") == 0;
  gboolean ok = daemon_io_write (&c->io, h->str, h->len, &end);
  if (ok && !head_only)
    ok = body->fd >= 0 ? daemon_io_write_file (&c->io, body->fd, body->len, &end)
                       : daemon_io_write (&c->io, body->mem ? body->mem : body->borrowed, (gsize) body->len, &end);
  g_string_free (h, TRUE);
  g_clear_pointer (&body->mem, g_free);
  if (body->fd >= 0)
    close (body->fd);
  body->fd = -1;
  if (!ok)
    r->cut = end == DAEMON_IO_EOF || end == DAEMON_IO_ERROR ? "the client went away before its answer"
             : "its answer not read within http_timeout or http_request_timeout";
  return ok;
}

/* An error: one line of text. A request whose body is still to come ends
 * its connection (the body is not read). */
static gboolean G_GNUC_PRINTF (3, 4)
reply_error (HttpReq *r, guint status, const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  g_autofree char *line = g_strdup_vprintf (format, ap);
  va_end (ap);
  char *text = g_strconcat (line, "\n", NULL);
  HttpBody body = { text, strlen (text), -1 };
  if (!r->body_read)
    r->close = TRUE;
  const char *allow[] = { "Allow", r->ep == EP_METRICS || r->ep == EP_HEALTH ? "GET, HEAD" : "POST", NULL };
  return reply (r, status, "text/plain", &body, status == 405 ? allow : NULL);
}

/* The MTA's id of the message, as extbodyc -q sends it (Extbody-Queue-Id),
 * for the log line; NULL when absent or not 1 to 64 of letters, digits, '.',
 * '_' and '-' (anyone who can connect may send anything). */
static char *
queue_id_of (const HttpReq *r)
{
  gsize n = 0;
  const char *q = ebc_http_field (r->head, r->h.head_len, "Extbody-Queue-Id", &n);
  if (!q || n < 1 || n > 64)
    return NULL;
  for (gsize i = 0; i < n; i++)
    if (!g_ascii_isalnum (q[i]) && q[i] != '.' && q[i] != '_' && q[i] != '-')
      return NULL;
  return g_strndup (q, n);
}

/* While a request's fetches run: the drain's end, or the client gone (its
 * end of the connection read as closed, as nginx takes it: 499), stops them. */
typedef struct {
  int            fd;          /* the connection */
  gint           cancelled;
  const HttpReq *r;           /* the request (its Extbody-Queue-Id) */
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

/* Does the request's query (POST /rewrite?stored) name @name? */
static gboolean
has_arg (const HttpReq *r, const char *name)
{
  g_auto (GStrv) args = g_strsplit (r->query ? r->query : "", "&", -1);
  for (guint i = 0; args[i]; i++) {
    char *eq = strchr (args[i], '=');
    if (eq)
      *eq = '\0';
    if (strcmp (args[i], name) == 0)
      return TRUE;
  }
  return FALSE;
}

/* The hooks of a request's fetches: the client gone, and not the drain's
 * end, leaves nobody to answer. */
static char *
queue_id_cb (gpointer data)
{
  const Waiting *w = data;
  return queue_id_of (w->r);
}

static gboolean
gone_cb (gpointer data)
{
  Waiting *w = data;
  return g_atomic_int_get (&w->cancelled) && !g_atomic_int_get (&http_cancel);
}

/* POST /rewrite and /externalize: the bytes `extbody rewrite --filter` (or
 * `extbody externalize --filter`) writes for the message, a message in
 * transit (daemon-job.c), counted and logged as the milter's messages are.
 * POST /rewrite?stored: the bytes `extbody rewrite --maildir` writes for a
 * stored message instead (mail at rest, as extbody-imap-rewrite sends it):
 * its trace fields kept, no X-Extbody field added, and the Content-Length
 * fields of a changed message removed. A message that does not change is
 * answered with the bytes it came with; a new one from the job's memory,
 * or from its spool file when the message was spooled, or when it and what
 * its references bring pass milter_spill_size. A client that went away
 * while the fetches ran is answered 499, for the log. */
static gboolean
answer_rewrite (HttpReq *r, const char *buf, gsize len)
{
  /* the drain's end cuts the fetches off, as the milter's at its stop;
   * so does the client's going away */
  Waiting w = { r->c->fd, 0, r };
  DaemonJob job = { .gen = r->gen, .externalize = r->ep == EP_EXTERNALIZE, .buf = buf, .len = len,
                    .spooled = r->body.fd >= 0, .queue_id = queue_id_cb,
                    .progress = progress_cb, .progress_data = &w, .cancelled = &w.cancelled, .gone = gone_cb };
  job.profile = !job.externalize && has_arg (r, "stored") ? EB_PROFILE_AT_REST : EB_PROFILE_TRANSIT;
  DaemonJobOutput o;
  g_autoptr (GError) error = NULL;
  gboolean ok = daemon_job_run (&job, &o, &error);
  if (!ok && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
    /* nobody to answer: logged, not counted as a message */
    log_line (LOG_INFO, "http: POST %s: the client closed the connection: the fetches were cancelled", r->path);
    daemon_job_output_clear (&o);
    r->close = TRUE;
    return reply_error (r, 499, "the client closed the connection");
  }
  HttpBody body = { NULL, len, -1, buf };
  if (ok && o.out && o.out_fd >= 0) {
    /* the stream (unbuffered) closes the descriptor: the answer keeps a copy */
    body = (HttpBody) { NULL, o.out_len, dup (o.out_fd), NULL };
    ok = body.fd >= 0;
  } else if (ok && o.out) {
    ok = g_output_stream_close (o.out, NULL, &error);
    body = (HttpBody) { g_memory_output_stream_steal_data (G_MEMORY_OUTPUT_STREAM (o.out)), o.out_len, -1, NULL };
  }
  if (!ok) {
    daemon_job_output_clear (&o);
    if (body.fd >= 0)
      close (body.fd);
    g_free (body.mem);
    return reply_error (r, 500, "cannot write the message: %s", error ? error->message : g_strerror (errno));
  }
  g_autofree char *refs = g_strdup_printf ("%u", eb_plan_get_n_refs (o.plan));
  g_autofree char *resolved = g_strdup_printf ("%u", eb_plan_get_n_resolved (o.plan));
  const char *fields[] = {
    "Extbody-Changed", eb_plan_get_changed (o.plan) ? "yes" : "no",
    "Extbody-References", refs,
    "Extbody-Resolved", resolved,
    NULL
  };
  /* a new message needs the plan no more (it borrows the request's bytes) */
  daemon_job_output_clear (&o);
  return reply (r, 200, "message/rfc822", &body, fields);
}

/* POST /inspect: the lines `extbody inspect --json -` prints for the
 * message (nothing fetched, as inspect without --fetch). */
static gboolean
answer_inspect (HttpReq *r, const char *buf, gsize len)
{
  g_autoptr (EbPlan) plan = eb_rewrite_plan (buf, len, r->gen->config, r->gen->fetcher, EB_REWRITE_NO_FETCH);
  GString *s = g_string_new (NULL);
  guint n = eb_plan_get_n_refs (plan);
  for (guint i = 0; i < n; i++) {
    g_autofree char *line = eb_inspect_json ("-", -1, NULL, plan, i);
    g_string_append (s, line);
    g_string_append_c (s, '\n');
  }
  HttpBody body = { NULL, s->len, -1 };
  body.mem = g_string_free (s, FALSE);
  return reply (r, 200, "application/json", &body, NULL);
}

/* The whole body has come. */
static gboolean
answer_body (HttpReq *r)
{
  if (r->body.size == 0)
    return reply_error (r, 400, "empty body, not a message");
  g_autoptr (GError) error = NULL;
  gsize len = 0;
  const char *buf = daemon_spool_bytes (&r->body, &len, &error);
  if (!buf)
    return reply_error (r, 500, "%s", error->message);
  if (r->ep == EP_INSPECT)
    return answer_inspect (r, buf, len);
  return answer_rewrite (r, buf, len);
}

/* ---- reading a request --------------------------------------------------------- */

/* Could the head end within the bytes from @from on (an empty line)? The
 * head is parsed again only then, so that a client sending a byte at a time
 * costs no quadratic time. */
static gboolean
head_may_end (const GByteArray *in, gsize from)
{
  from = from > 2 ? from - 2 : 0;
  for (gsize i = from; i + 1 < in->len; i++)
    if (in->data[i] == '\n' && (in->data[i + 1] == '\n' || (in->data[i + 1] == '\r' && i + 2 < in->len
                                                             && in->data[i + 2] == '\n')))
      return TRUE;
  return FALSE;
}

/* Read more bytes into c->in, up to @max at once. */
static gsize
read_more (HttpConn *c, gsize max, DaemonIoEnd *end)
{
  guint old = c->in->len;
  g_byte_array_set_size (c->in, old + (guint) max);
  gsize n = daemon_io_read (&c->io, c->in->data + old, max, end);
  g_byte_array_set_size (c->in, old + (guint) n);
  return n;
}

typedef enum { HEAD_COMPLETE, HEAD_INVALID, HEAD_NONE, HEAD_CUT } HeadRead;

/* The next request's head, from the bytes there are and those that come:
 * COMPLETE or INVALID (@h says what), NONE when the connection ended or
 * idled out between requests, CUT when it ended inside a head (@why). Its
 * first byte starts http_request_timeout. */
static HeadRead
read_head (HttpConn *c, EbcHttpRequest *h, const char **why)
{
  DaemonIoEnd end = DAEMON_IO_OK;
  daemon_io_deadline (&c->io, 0);
  if (c->in->len == 0 && read_more (c, 65536, &end) == 0)
    return HEAD_NONE;
  daemon_io_deadline (&c->io, http_request_s);
  gboolean first = TRUE;
  gsize scanned = 0;
  for (;;) {
    if (first || head_may_end (c->in, scanned) || c->in->len >= EBC_HTTP_MAX_HEADER) {
      EbcHttpState s = ebc_http_parse_request ((const char *) c->in->data, c->in->len, h);
      if (s == EBC_HTTP_COMPLETE)
        return HEAD_COMPLETE;
      if (s == EBC_HTTP_INVALID)
        return HEAD_INVALID;
    }
    first = FALSE;
    scanned = c->in->len;
    if (read_more (c, 65536, &end) == 0)
      break;
  }
  *why = end == DAEMON_IO_LATE ? "its head did not come within http_request_timeout"
         : end == DAEMON_IO_IDLE ? "cut off after http_timeout inside its head"
         : "ended by the client inside its head";
  return HEAD_CUT;
}

/* Why a body stopped coming, for the log. */
static const char *
cut_reason (DaemonIoEnd end)
{
  switch (end) {
  case DAEMON_IO_LATE:
    return "cut off after http_request_timeout";
  case DAEMON_IO_IDLE:
    return "cut off after http_timeout";
  default:
    return g_atomic_int_get (&http_cancel) ? "cut off at the stop" : "ended by the client";
  }
}

/* A Content-Length body: its bytes already read, then the rest, never
 * past it (what follows is the next request's). */
static gboolean
read_length_body (HttpReq *r, DaemonIoEnd *end)
{
  HttpConn *c = r->c;
  guint64 need = r->h.length;
  gsize have = (gsize) MIN ((guint64) c->in->len, need);
  daemon_spool_append (&r->body, c->in->data, have);
  g_byte_array_remove_range (c->in, 0, (guint) have);
  need -= have;
  char buf[65536];
  while (need) {
    gsize n = daemon_io_read (&c->io, buf, (gsize) MIN ((guint64) sizeof buf, need), end);
    if (n == 0)
      return FALSE;
    daemon_spool_append (&r->body, buf, n);
    need -= n;
  }
  return TRUE;
}

/* A chunked body, as its chunks come (ebc_http_chunks); its data adds up
 * to max_message_size at most. FALSE with *@end, or with *@bad (and *@why)
 * when the chunks are malformed (400) or too many (413). */
static gboolean
read_chunked_body (HttpReq *r, guint64 max, DaemonIoEnd *end, guint *bad, const char **why)
{
  HttpConn *c = r->c;
  EbcHttpChunks ch = { 0 };
  for (;;) {
    gsize pos = 0;
    EbcHttpState s = EBC_HTTP_INCOMPLETE;
    for (;;) {
      gsize used, data, data_len;
      s = ebc_http_chunks (&ch, (const char *) c->in->data + pos, c->in->len - pos, FALSE, max, &used, &data,
                           &data_len, why);
      if (data_len)
        daemon_spool_append (&r->body, c->in->data + pos + data, data_len);
      pos += used;
      if (s != EBC_HTTP_INCOMPLETE || data_len == 0)
        break;
    }
    g_byte_array_remove_range (c->in, 0, (guint) pos);
    if (s == EBC_HTTP_COMPLETE)
      return TRUE;
    if (s == EBC_HTTP_INVALID) {
      *bad = strstr (*why, "over the limit") ? 413 : 400;
      return FALSE;
    }
    if (read_more (c, 65536, end) == 0)
      return FALSE;
  }
}

/* Read the request's body into r->body: TRUE when it is whole, else FALSE
 * once it has been answered (a malformed or too large body) or cut off. */
static gboolean
read_body (HttpReq *r)
{
  guint64 max = r->gen->keys.max_message_size;
  daemon_spool_init (&r->body, r->gen->keys.milter_spill_size);
  if (r->h.expect_continue && r->c->in->len == 0) {
    DaemonIoEnd end;
    daemon_io_write (&r->c->io, "HTTP/1.1 100 Continue\r\n\r\n", 25, &end);
  }
  DaemonIoEnd end = DAEMON_IO_OK;
  guint bad = 0;
  const char *why = NULL;
  gboolean ok = r->h.frame == EBC_HTTP_FRAME_CHUNKED ? read_chunked_body (r, max, &end, &bad, &why)
                                                     : read_length_body (r, &end);
  if (ok) {
    r->body_read = TRUE;
    return TRUE;
  }
  if (bad == 413)
    reply_error (r, 413, "message larger than max_message_size (%" G_GUINT64_FORMAT ")", max);
  else if (bad)
    reply_error (r, 400, "%s", why);
  else if (end == DAEMON_IO_LATE || end == DAEMON_IO_IDLE) {
    r->close = TRUE;
    reply_error (r, 408, "the body did not come within %s",
                 end == DAEMON_IO_LATE ? "http_request_timeout" : "http_timeout");
    r->cut = cut_reason (end);
  } else
    r->cut = cut_reason (end);
  return FALSE;
}

/* ---- one request ---------------------------------------------------------------- */

/* The endpoint of @path and whether @method goes with it (HEAD with GET). */
static Endpoint
endpoint_of (const char *path, const char *method, gboolean *method_ok)
{
  static const struct { const char *path; Endpoint ep; gboolean post; } eps[] = {
    { "/rewrite", EP_REWRITE, TRUE }, { "/inspect", EP_INSPECT, TRUE },
    { "/externalize", EP_EXTERNALIZE, TRUE }, { "/metrics", EP_METRICS, FALSE },
    { "/healthz", EP_HEALTH, FALSE },
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

/* May the client of @r use its endpoint? Storing and the counters are for
 * root, the daemon's user and the clients the keys name. */
static gboolean
allowed (HttpReq *r)
{
  const DaemonClients *who = r->ep == EP_EXTERNALIZE ? r->gen->externalize_clients
                             : r->ep == EP_METRICS ? r->gen->metrics_clients : NULL;
  if (r->ep != EP_EXTERNALIZE && r->ep != EP_METRICS)
    return TRUE;
  if (daemon_peer_is (&r->c->peer, who))
    return TRUE;
  const char *key = r->ep == EP_EXTERNALIZE ? "http_externalize_clients" : "http_metrics_clients";
  log_line (LOG_WARNING, "http: %s %s refused to %s: not root, not the daemon's user, not in %s", r->method,
            r->path, r->c->peer.name, key);
  reply_error (r, 403, "%s %s is for the clients %s names", r->method, r->path, key);
  return FALSE;
}

static gint http_health_last = 200;  /* the last answer of GET /healthz */

/* GET /healthz, for a load balancer or a probe: 200 while the daemon takes
 * work, 503 while it drains, when its last reload failed or when
 * redis_required is on and Redis does not answer; the first line says which,
 * the second how Redis stands. Answered to whoever may connect, before the
 * count of busy requests (a full daemon is still alive); logged when its
 * answer changes, not at each probe. */
static void
answer_health (HttpReq *r)
{
  EbFetcherShared redis = EB_FETCHER_SHARED_NONE;
  g_autofree char *why = g_atomic_int_get (&http_stopping) ? g_strdup ("stopping: the doors are closing")
                                                           : daemon_generation_health (&redis);
  guint status = why ? 503 : 200;
  char *text = g_strdup_printf ("%s\nredis: %s\n", why ? why : "ok",
                                redis == EB_FETCHER_SHARED_UP ? "up"
                                : redis == EB_FETCHER_SHARED_DOWN ? "down" : "none");
  if ((guint) g_atomic_int_exchange (&http_health_last, (gint) status) != status)
    log_line (status == 200 ? LOG_INFO : LOG_WARNING, "http: /healthz answers %u now%s%s", status,
              why ? ": " : "", why ? why : "");
  HttpBody body = { text, strlen (text), -1 };
  reply (r, status, "text/plain", &body, NULL);
}

/* The request's head has come: what needs no body is answered at once,
 * else its body is read and the message planned. */
static void
answer (HttpReq *r)
{
  r->body_read = r->h.frame == EBC_HTTP_FRAME_EOF || (r->h.frame == EBC_HTTP_FRAME_LENGTH && r->h.length == 0);
  gboolean method_ok = FALSE;
  r->ep = endpoint_of (r->path, r->method, &method_ok);
  if (r->ep == EP_HEALTH && method_ok) {
    answer_health (r);
    return;
  }
  if (g_atomic_int_get (&http_stopping)) {
    reply_error (r, 503, "stopping: try again later");
    return;
  }
  r->busy = TRUE;
  if ((guint) g_atomic_int_add (&http_busy, 1) + 1 > http_max) {
    reply_error (r, 503, "too many connections (http_max_connections = %u)", http_max);
    return;
  }
  if (r->ep == EP_NONE) {
    reply_error (r, 404, "no such path: POST /rewrite, /inspect, /externalize or GET /metrics, /healthz");
    return;
  }
  if (!method_ok) {
    reply_error (r, 405, "%s takes %s only", r->path, r->ep == EP_METRICS || r->ep == EP_HEALTH ? "GET" : "POST");
    return;
  }
  if (!allowed (r))
    return;
  if (r->ep == EP_METRICS) {
    char *text = eb_metrics_format_prometheus (daemon_main_stats);
    HttpBody body = { text, strlen (text), -1 };
    reply (r, 200, "text/plain; version=0.0.4", &body, NULL);
    return;
  }
  guint64 max = r->gen->keys.max_message_size;
  if (r->h.frame == EBC_HTTP_FRAME_EOF)
    reply_error (r, 411, "Content-Length required");
  else if (r->h.frame == EBC_HTTP_FRAME_LENGTH && r->h.length > max)
    reply_error (r, 413, "message of %llu bytes is larger than max_message_size (%" G_GUINT64_FORMAT ")",
                 r->h.length, max);
  else if (r->ep == EP_EXTERNALIZE && !r->gen->store)
    reply_error (r, 503, "no externalize_store configured");
  else if (read_body (r))
    answer_body (r);
}

/* The target split into its path and query; an absolute-form target
 * (http://host/path) names its path. */
static void
split_target (HttpReq *r, const char *buf)
{
  g_autofree char *target = g_strndup (buf + r->h.target, r->h.target_len);
  char *path = target;
  if (g_ascii_strncasecmp (path, "http://", 7) == 0 || g_ascii_strncasecmp (path, "https://", 8) == 0) {
    char *slash = strchr (strstr (path, "//") + 2, '/');
    path = slash ? slash : (char *) "/";
  }
  char *q = strchr (path, '?');
  r->query = q ? g_strdup (q + 1) : NULL;
  r->path = q ? g_strndup (path, (gsize) (q - path)) : g_strdup (path);
}

/* The request has ended, answered or cut off: one line in the log. */
static void
log_request (const HttpReq *r)
{
  if (r->ep == EP_HEALTH && r->status && !r->cut)
    return;   /* answer_health logs the changes */
  g_autofree char *path = g_strescape (r->path, NULL);
  if (strlen (path) > 200)
    path[200] = '\0';
  g_autofree char *method = g_strescape (r->method, NULL);
  if (r->status && !r->cut)
    log_line (LOG_INFO, "http: %s %s %u, %" G_GUINT64_FORMAT " bytes in, %" G_GUINT64_FORMAT " bytes out",
              method, path, r->status, r->body.size, r->out);
  else
    log_line (LOG_INFO, "http: %s %s %s, %" G_GUINT64_FORMAT " bytes in%s%s", method, path,
              r->cut ? r->cut : "ended", r->body.size, r->status ? ", answered " : "",
              r->status ? reason_phrase (r->status) : "");
}

/* A head refused: its status and reason, and the connection closed. */
static void
refuse_head (HttpConn *c, const EbcHttpRequest *h)
{
  HttpReq r = { .c = c, .close = TRUE, .body_read = TRUE };
  log_line (LOG_INFO, "http: a request from %s refused (%d): %s", c->peer.name, h->status, h->reason);
  reply_error (&r, (guint) h->status, "%s", h->reason);
}

/* Serve one request on @c: FALSE when the connection is to end. */
static gboolean
serve_one (HttpConn *c)
{
  EbcHttpRequest h;
  const char *why = NULL;
  HeadRead hr = read_head (c, &h, &why);
  if (hr == HEAD_NONE)
    return FALSE;
  if (hr == HEAD_CUT) {
    log_line (LOG_INFO, "http: a connection from %s ended: %s (%u bytes)", c->peer.name, why, c->in->len);
    if (strstr (why, "http_request_timeout")) {
      HttpReq r = { .c = c, .close = TRUE, .body_read = TRUE };
      reply_error (&r, 408, "the request's head did not come within http_request_timeout");
    }
    return FALSE;
  }
  if (hr == HEAD_INVALID) {
    refuse_head (c, &h);
    c->unread = TRUE;
    return FALSE;
  }
  c->requests++;
  HttpReq *r = g_new0 (HttpReq, 1);
  r->c = c;
  r->h = h;
  r->gen = daemon_generation_get ();
  r->head = g_strndup ((const char *) c->in->data, h.head_len);
  g_byte_array_remove_range (c->in, 0, (guint) h.head_len);
  r->method = g_strndup (r->head + h.method, h.method_len);
  split_target (r, r->head);
  r->close = h.close;
  r->body.fd = -1;
  g_atomic_int_inc (&http_in_flight);
  answer (r);
  log_request (r);
  gboolean keep = !r->close && !r->cut && r->status;
  c->unread = r->status && !r->cut && !r->body_read;
  req_idle (r);
  daemon_spool_clear (&r->body);
  daemon_generation_unref (r->gen);
  g_free (r->head);
  g_free (r->method);
  g_free (r->path);
  g_free (r->query);
  g_free (r);
  g_atomic_int_add (&http_in_flight, -1);
  return keep;
}

/* ---- connections ------------------------------------------------------------- */

static gpointer
conn_run (gpointer data)
{
  HttpConn *c = data;
  daemon_io_init (&c->io, c->fd, http_idle_s);
  c->in = g_byte_array_new ();
  while (serve_one (c))
    ;
  g_mutex_lock (&http_lock);
  http_open = g_slist_remove (http_open, GINT_TO_POINTER (c->fd));
  if (c->unread)
    daemon_linger_close (http_linger, c->fd, EBC_HTTP_MAX_HEADER);
  else {
    shutdown (c->fd, SHUT_WR);
    close (c->fd);
  }
  http_conns--;
  g_cond_broadcast (&http_cond);
  g_mutex_unlock (&http_lock);
  daemon_peer_share_leave (&http_share, &c->peer);
  g_byte_array_unref (c->in);
  g_free (c);
  return NULL;
}

/* A connection refused before a byte of it is read: a short answer if the
 * socket takes it at once, and the close. */
static void
refuse_connection (int fd, const char *line)
{
  g_autofree char *text = g_strdup_printf ("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
                                           "Content-Type: text/plain\r\nContent-Length: %" G_GSIZE_FORMAT
                                           "\r\n\r\n%s\n", strlen (line) + 1, line);
  daemon_io_write_now (fd, text);
  daemon_linger_close (http_linger, fd, EBC_HTTP_MAX_HEADER);
}

/* Waits for a place (twice http_max_connections) and a connection, and
 * gives it a thread; FALSE once the listener is told to end. */
static gboolean
accept_one (void)
{
  g_mutex_lock (&http_lock);
  while (http_conns >= 2 * http_max && !g_atomic_int_get (&http_stopping))
    g_cond_wait (&http_cond, &http_lock);
  g_mutex_unlock (&http_lock);
  struct pollfd p[2] = { { .fd = http_fd, .events = POLLIN }, { .fd = http_wake[0], .events = POLLIN } };
  if (g_atomic_int_get (&http_stopping))
    return FALSE;
  if (poll (p, 2, -1) < 0)
    return errno == EINTR;
  if (p[1].revents)
    return FALSE;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  int fd = accept4 (http_fd, (struct sockaddr *) &ss, &sl, SOCK_CLOEXEC);
  if (fd < 0)
    return TRUE;
  if (!http_address_allowed (&ss, sl)) {
    close (fd);
    return TRUE;
  }
  HttpConn *c = g_new0 (HttpConn, 1);
  c->fd = fd;
  daemon_peer_of (fd, &c->peer);
  if (!daemon_peer_share_enter (&http_share, &c->peer)) {
    log_line (LOG_WARNING, "http: a connection from %s refused: it holds http_max_peer_connections (%u) already",
              c->peer.name, http_share.limit);
    refuse_connection (fd, "too many connections from one client (http_max_peer_connections)");
    g_free (c);
    return TRUE;
  }
  g_mutex_lock (&http_lock);
  http_conns++;
  http_open = g_slist_prepend (http_open, GINT_TO_POINTER (fd));
  g_mutex_unlock (&http_lock);
  g_autoptr (GError) error = NULL;
  GThread *t = g_thread_try_new ("http", conn_run, c, &error);
  if (t) {
    g_thread_unref (t);
    return TRUE;
  }
  log_line (LOG_WARNING, "http: cannot start a thread: %s", error->message);
  g_mutex_lock (&http_lock);
  http_open = g_slist_remove (http_open, GINT_TO_POINTER (fd));
  http_conns--;
  g_mutex_unlock (&http_lock);
  daemon_peer_share_leave (&http_share, &c->peer);
  refuse_connection (fd, "cannot start a thread");
  g_free (c);
  return TRUE;
}

static gpointer
accept_run (gpointer data)
{
  (void) data;
  while (accept_one ())
    ;
  return NULL;
}

/* ---- lifecycle ---------------------------------------------------------------- */

/* Serve the socket daemon_http_open bound (nothing when none), on threads
 * that take none of the signals (the caller blocks them). */
static gboolean
daemon_http_start (const Gen *gen, GError **error)
{
  const DaemonSettings *keys = &gen->keys;
  if (http_fd < 0)
    return TRUE;
  if (!g_unix_open_pipe (http_wake, FD_CLOEXEC, error))
    return FALSE;
  http_linger = daemon_linger_new ("http", http_max, http_idle_s, http_request_s, error);
  if (!http_linger)
    return FALSE;
  http_accept_thread = g_thread_try_new ("http-accept", accept_run, NULL, error);
  if (!http_accept_thread) {
    g_prefix_error (error, "cannot start the HTTP listener on %s: ", keys->http_socket);
    return FALSE;
  }
  return TRUE;
}

/* Take no connection any more (a unix socket's file goes, when it is still
 * ours); requests on connections already open are answered 503. */
static void
daemon_http_quiesce (void)
{
  g_atomic_int_set (&http_stopping, 1);
  g_mutex_lock (&http_lock);
  g_cond_broadcast (&http_cond);
  g_mutex_unlock (&http_lock);
  if (http_wake[1] >= 0 && write (http_wake[1], "x", 1) < 0)
    log_line (LOG_WARNING, "http: cannot wake the listener: %s", g_strerror (errno));
  if (http_accept_thread)
    g_thread_join (http_accept_thread);
  http_accept_thread = NULL;
  if (http_fd >= 0)
    close (http_fd);
  http_fd = -1;
  daemon_listen_remove (&http_unix);
}

/* HTTP requests begun and not ended. */
static guint
daemon_http_in_flight (void)
{
  return (guint) g_atomic_int_get (&http_in_flight);
}

/* The end: fetches in flight are cut off, every connection shut down, and
 * their threads waited for. Safe to call twice. */
static void
daemon_http_stop (void)
{
  daemon_http_quiesce ();
  g_atomic_int_set (&http_cancel, 1);
  g_mutex_lock (&http_lock);
  for (GSList *l = http_open; l; l = l->next)
    shutdown (GPOINTER_TO_INT (l->data), SHUT_RDWR);
  while (http_conns > 0)
    g_cond_wait (&http_cond, &http_lock);
  g_mutex_unlock (&http_lock);
  for (int i = 0; i < 2; i++) {
    if (http_wake[i] >= 0)
      close (http_wake[i]);
    http_wake[i] = -1;
  }
  g_clear_pointer (&http_linger, daemon_linger_free);
  g_clear_pointer (&http_start_config, eb_config_free);
  if (http_share_ready)
    daemon_peer_share_clear (&http_share);
  http_share_ready = FALSE;
}

const DaemonDoor daemon_http_door = {
  .name = "http",
  .in_flight_what = "HTTP request",
  .socket_key = DAEMON_KEY_FIELD (http_socket),
  .start_keys = (const DaemonKeyField[]) { DAEMON_KEY_FIELD (http_max_connections), DAEMON_KEY_FIELD (http_timeout),
                                           DAEMON_KEY_FIELD (http_request_timeout),
                                           DAEMON_KEY_FIELD (http_max_peer_connections), { NULL, 0 } },
  .open = daemon_http_open,
  .start = daemon_http_start,
  .is_open = daemon_http_is_open,
  .quiesce = daemon_http_quiesce,
  .in_flight = daemon_http_in_flight,
  .stop = daemon_http_stop,
};
