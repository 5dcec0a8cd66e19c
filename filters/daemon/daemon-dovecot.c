/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-dovecot.c - the daemon's listener for Dovecot's program-client protocol (dovecot_filter_socket)
 *
 * Pigeonhole's Sieve filter command (vnd.dovecot.filter) with
 * sieve_filter_socket_dir connects to a unix socket named after the program
 * instead of running the program: Dovecot's LMTP then filters each message
 * through the warm engine, with no process per message. The protocol, as
 * Dovecot 2.3's lib-program-client speaks it on a unix socket
 * (program-client-remote.c: program_client_remote_connected,
 * program_client_istream_parse_result, program_client_remote_close_output):
 *
 *   client: "VERSION\tscript\t4\t0\n"
 *           "env_NAME=VALUE\n"...        (tab-escaped: USER, HOME, SENDER, ...)
 *           "-\n"                        (a reply is wanted; "noreply\n" if not)
 *           ARGUMENT "\n"...             (tab-escaped, the script's arguments)
 *           "\n"
 *           the message, then shutdown (SHUT_WR): the end of the input
 *   server: the filtered message, then "+\n" (success: it replaces the
 *           message) or "-\n" (failure: the message stays as it came), and
 *           closes the connection. No dot-encoding on a unix socket.
 *
 * The message is planned as `extbody rewrite --filter` plans it, with the
 * configuration generation in force when its header came; a failure of any
 * kind (a message past max_message_size, a plan that fails, a message that
 * begins once the daemon is stopping) is answered "-\n" alone. The arguments and the environment are
 * read and left unused: the daemon's configuration applies.
 *
 * One thread per connection, at most dovecot_max_connections at once: past
 * it a connection waits in the socket's backlog until one ends. A client idle
 * for dovecot_timeout seconds is cut off. The socket is bound at start,
 * before privileges are dropped; the threads start once the daemon has
 * detached. At the stop the socket goes (Pigeonhole then falls back to
 * sieve_filter_bin_dir, or keeps the message) and the connections in flight
 * get milter_stop_timeout to finish, as the milter's messages do.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib-unix.h>

#include <extbody/extbody.h>

#include "daemon.h"

/* the protocol's header (version, environment, arguments) is read up to
 * this many bytes; Pigeonhole's is far shorter */
#define DC_MAX_HEADER (64 * 1024)

static int    dc_fd = -1;            /* the listening socket */
static DaemonSocket dc_unix;          /* its file, removed at the stop */
static guint  dc_max;                /* dovecot_max_connections at start */
static guint  dc_timeout;            /* dovecot_timeout at start */
static int    dc_wake[2] = { -1, -1 };   /* ends the accept thread's wait */
static GThread *dc_accept_thread;
static GMutex dc_lock;               /* guards what follows */
static GCond  dc_cond;
static guint  dc_conns;              /* connections being served */
static GSList *dc_open;              /* their descriptors, cut at the stop */
static gint   dc_stopping;           /* set at the stop: new connections get "-" */
static gint   dc_cancel;             /* set when the drain is over: fetches stop */

/* One connection, from its accept to its close. */
typedef struct {
  int         fd;
  Gen        *gen;
  GByteArray *in;         /* the header, then the message */
  gsize       header;     /* the header's bytes at the start of @in */
  guint64     n_in;       /* message bytes that came */
  gsize       n_out;      /* message bytes written */
  gboolean    too_large;
  const char *why;        /* why the answer was "-", or NULL */
} DcConn;

/* ---- the socket -------------------------------------------------------------- */

/* Bind and listen on dovecot_filter_socket (nothing when it is empty), as
 * root when the daemon starts as root; its file is given to @user (-u).
 * Returns: FALSE with @error when it cannot. */
gboolean
daemon_dovecot_open (const EbConfig *config, const char *user, GError **error)
{
  const char *path = eb_config_get_string (config, "dovecot_filter_socket");
  if (!path || !*path)
    return TRUE;
  int fd = daemon_listen_unix (&dc_unix, "dovecot_filter_socket", path, config, user, error);
  if (fd < 0)
    return FALSE;
  dc_fd = fd;
  dc_max = (guint) eb_config_get_uint64 (config, "dovecot_max_connections");
  dc_timeout = (guint) eb_config_get_uint64 (config, "dovecot_timeout");
  return TRUE;
}

/* ---- one connection ----------------------------------------------------------- */

static gboolean
dc_write_all (int fd, const char *data, gsize len)
{
  while (len) {
    ssize_t n = send (fd, data, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return FALSE;
    data += n;
    len -= (gsize) n;
  }
  return TRUE;
}

/* Reads the header: up to its empty line, checked. FALSE (c->why set) when
 * the client is gone, too slow, or speaks another protocol. */
static gboolean
dc_read_header (DcConn *c)
{
  char buf[4096];
  const char *end = NULL;
  while (!end) {
    ssize_t n = recv (c->fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      c->why = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? "cut off after dovecot_timeout"
               : "the client went away before the message";
      return FALSE;
    }
    g_byte_array_append (c->in, (const guint8 *) buf, (guint) n);
    end = g_strstr_len ((const char *) c->in->data, (gssize) c->in->len, "\n\n");
    if (!end && c->in->len > DC_MAX_HEADER) {
      c->why = "the protocol's header is too long";
      return FALSE;
    }
  }
  c->header = (gsize) (end - (const char *) c->in->data) + 2;
  /* VERSION, then the lines up to "-" (a reply wanted) or "noreply" */
  g_autofree char *head = g_strndup ((const char *) c->in->data, c->header);
  g_auto (GStrv) lines = g_strsplit (head, "\n", -1);
  if (!g_str_has_prefix (lines[0], "VERSION\tscript\t4\t")) {
    c->why = "not Dovecot's script protocol version 4";
    return FALSE;
  }
  for (guint i = 1; lines[i] && *lines[i]; i++) {
    if (strcmp (lines[i], "-") == 0)
      return TRUE;
    if (strcmp (lines[i], "noreply") == 0) {
      c->why = "the client wants no reply (noreply): nothing to filter";
      return FALSE;
    }
  }
  c->why = "no \"-\" line in the protocol's header";
  return FALSE;
}

/* Reads the message to the end of the input, keeping at most
 * max_message_size bytes (past it the rest is read and dropped). */
static gboolean
dc_read_message (DcConn *c)
{
  guint64 max = eb_config_get_uint64 (c->gen->config, "max_message_size");
  g_byte_array_remove_range (c->in, 0, (guint) c->header);
  c->n_in = c->in->len;
  char buf[65536];
  for (;;) {
    c->too_large = c->n_in > max;
    if (c->too_large && c->in->len)
      g_byte_array_set_size (c->in, 0);
    ssize_t n = recv (c->fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 0)
      return TRUE;
    if (n < 0) {
      c->why = errno == EAGAIN || errno == EWOULDBLOCK ? "cut off after dovecot_timeout" : "the client went away";
      return FALSE;
    }
    c->n_in += (guint64) n;
    if (!c->too_large && c->n_in <= max)
      g_byte_array_append (c->in, (const guint8 *) buf, (guint) n);
  }
}

/* Plans the message as `extbody rewrite --filter` does and writes the
 * result and "+"; FALSE (c->why set) when nothing was written. */
static gboolean
dc_filter (DcConn *c)
{
  const EbConfig *config = c->gen->config;
  EbRewriteFlags flags = EB_REWRITE_FILTER_FIELD;
  if (eb_config_get_boolean (config, "strip_trace_fields"))
    flags |= EB_REWRITE_STRIP_TRACE;
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr (EbPlan) plan = NULL;
  g_autoptr (GError) error = NULL;
  eb_fetch_set_thread_cancel (&dc_cancel);
  gboolean ok = eb_rewrite ((const char *) c->in->data, c->in->len, config, c->gen->fetcher, flags, out, &plan, &error);
  eb_fetch_set_thread_cancel (NULL);
  if (!ok || !g_output_stream_close (out, NULL, &error)) {
    log_line (LOG_WARNING, "dovecot: cannot write the message: %s", error ? error->message : "unknown error");
    c->why = "the plan failed";
    return FALSE;
  }
  eb_stats_add_result (daemon_main_stats, plan);
  eb_stats_add_bytes (daemon_main_stats, c->in->len);
  if (eb_plan_get_changed (plan))
    eb_stats_add_changed (daemon_main_stats, 1);
  if (eb_plan_get_n_refs (plan) || eb_plan_get_reason (plan) != EB_REASON_RESOLVED) {
    g_autofree char *mid = eb_plan_get_message_id (plan);
    eb_log_message (NULL, mid, plan);
  }
  GMemoryOutputStream *mem = G_MEMORY_OUTPUT_STREAM (out);
  gsize n = g_memory_output_stream_get_data_size (mem);
  if (!dc_write_all (c->fd, g_memory_output_stream_get_data (mem), n) || !dc_write_all (c->fd, "+\n", 2)) {
    c->why = "the client went away before the answer";
    return FALSE;
  }
  c->n_out = n;
  return TRUE;
}

/* The whole exchange on one connection, and its line in the log. */
static void
dc_serve (DcConn *c)
{
  struct timeval tv = { .tv_sec = dc_timeout };
  setsockopt (c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt (c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  gboolean ok = dc_read_header (c);
  /* a message whose header came before the stop is finished, as the
   * milter's; one that begins once stopping is set is not */
  if (ok && g_atomic_int_get (&dc_stopping)) {
    c->why = "stopping";
    ok = FALSE;
  }
  if (ok) {
    c->gen = daemon_generation_get ();
    ok = dc_read_message (c);
  }
  if (ok && c->too_large) {
    c->why = "larger than max_message_size";
    ok = FALSE;
  } else if (ok && c->in->len == 0) {
    c->why = "empty, not a message";
    ok = FALSE;
  }
  if (ok)
    ok = dc_filter (c);
  if (!ok)
    dc_write_all (c->fd, "-\n", 2);   /* to a client gone away: nobody reads it */
  if (ok)
    log_line (LOG_INFO, "dovecot: filter +, %" G_GUINT64_FORMAT " bytes in, %" G_GSIZE_FORMAT " bytes out",
              c->n_in, c->n_out);
  else
    log_line (LOG_INFO, "dovecot: filter -, %" G_GUINT64_FORMAT " bytes in: %s; the message stays as it came",
              c->n_in, c->why);
}

static gpointer
dc_run (gpointer data)
{
  DcConn *c = data;
  c->in = g_byte_array_new ();
  dc_serve (c);
  g_mutex_lock (&dc_lock);
  dc_open = g_slist_remove (dc_open, GINT_TO_POINTER (c->fd));
  close (c->fd);
  dc_conns--;
  g_cond_broadcast (&dc_cond);
  g_mutex_unlock (&dc_lock);
  if (c->gen)
    daemon_generation_unref (c->gen);
  g_byte_array_unref (c->in);
  g_free (c);
  return NULL;
}

/* ---- the listener ------------------------------------------------------------- */

/* Waits for a free place (dovecot_max_connections) and a connection; FALSE
 * once the listener is told to end. */
static gboolean
dc_accept_one (void)
{
  g_mutex_lock (&dc_lock);
  while (dc_conns >= dc_max && !g_atomic_int_get (&dc_stopping))
    g_cond_wait (&dc_cond, &dc_lock);
  g_mutex_unlock (&dc_lock);
  struct pollfd p[2] = { { .fd = dc_fd, .events = POLLIN }, { .fd = dc_wake[0], .events = POLLIN } };
  if (g_atomic_int_get (&dc_stopping))
    return FALSE;
  if (poll (p, 2, -1) < 0)
    return errno == EINTR;
  if (p[1].revents)
    return FALSE;
  int fd = accept4 (dc_fd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0)
    return TRUE;
  DcConn *c = g_new0 (DcConn, 1);
  c->fd = fd;
  g_mutex_lock (&dc_lock);
  dc_conns++;
  dc_open = g_slist_prepend (dc_open, GINT_TO_POINTER (fd));
  g_mutex_unlock (&dc_lock);
  g_autoptr (GError) error = NULL;
  GThread *t = g_thread_try_new ("dovecot", dc_run, c, &error);
  if (t) {
    g_thread_unref (t);
    return TRUE;
  }
  log_line (LOG_WARNING, "dovecot: cannot start a thread: %s; the message stays as it came", error->message);
  dc_write_all (fd, "-\n", 2);
  g_mutex_lock (&dc_lock);
  dc_open = g_slist_remove (dc_open, GINT_TO_POINTER (fd));
  dc_conns--;
  g_mutex_unlock (&dc_lock);
  close (fd);
  g_free (c);
  return TRUE;
}

static gpointer
dc_accept_run (gpointer data)
{
  (void) data;
  while (dc_accept_one ())
    ;
  return NULL;
}

/* Serve the socket daemon_dovecot_open bound (nothing when none), on threads
 * that take none of the signals (the caller blocks them). */
gboolean
daemon_dovecot_start (const EbConfig *config, GError **error)
{
  (void) config;
  if (dc_fd < 0)
    return TRUE;
  if (!g_unix_open_pipe (dc_wake, FD_CLOEXEC, error))
    return FALSE;
  dc_accept_thread = g_thread_try_new ("dovecot-accept", dc_accept_run, NULL, error);
  return dc_accept_thread != NULL;
}

/* Take no connection any more: the accept thread ends, the socket's file
 * goes (when it is still ours); a message on a connection already open is
 * answered "-". */
void
daemon_dovecot_quiesce (void)
{
  g_atomic_int_set (&dc_stopping, 1);
  g_mutex_lock (&dc_lock);
  g_cond_broadcast (&dc_cond);
  g_mutex_unlock (&dc_lock);
  if (dc_wake[1] >= 0 && write (dc_wake[1], "x", 1) < 0)
    log_line (LOG_WARNING, "dovecot: cannot wake the listener: %s", g_strerror (errno));
  if (dc_accept_thread)
    g_thread_join (dc_accept_thread);
  dc_accept_thread = NULL;
  if (dc_fd >= 0)
    close (dc_fd);
  dc_fd = -1;
  daemon_listen_remove (&dc_unix);
}

/* Connections being served. */
guint
daemon_dovecot_in_flight (void)
{
  g_mutex_lock (&dc_lock);
  guint n = dc_conns;
  g_mutex_unlock (&dc_lock);
  return n;
}

/* The end: fetches in flight are cut off, every connection shut down, and
 * their threads waited for. Safe to call twice. */
void
daemon_dovecot_stop (void)
{
  daemon_dovecot_quiesce ();
  g_atomic_int_set (&dc_cancel, 1);
  g_mutex_lock (&dc_lock);
  for (GSList *l = dc_open; l; l = l->next)
    shutdown (GPOINTER_TO_INT (l->data), SHUT_RDWR);
  while (dc_conns > 0)
    g_cond_wait (&dc_cond, &dc_lock);
  g_mutex_unlock (&dc_lock);
  for (int i = 0; i < 2; i++) {
    if (dc_wake[i] >= 0)
      close (dc_wake[i]);
    dc_wake[i] = -1;
  }
}
