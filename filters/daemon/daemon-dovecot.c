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
 * it a connection waits in the socket's backlog until one ends. One user (the
 * client's credentials, daemon-peer.c) holds at most
 * dovecot_max_peer_connections of them: past it a new connection of theirs is
 * answered "-" at once (its message read and dropped before the close,
 * daemon-linger.c: Dovecot 2.4's LMTP panics on a reset connection), so that one local user's flood of slow connections
 * leaves the other deliveries their places (root and the daemon's own user
 * are not counted). A client idle for dovecot_timeout seconds is cut off, and
 * so is one that has not sent its header and message within
 * dovecot_request_timeout of its connection, however steadily it sends; the
 * answer must be read within as long again. The message is spooled
 * (daemon-spool.c): in memory up to milter_spill_size, past it in an unlinked
 * file of its own, mapped for the plan, and so is the answer, sent from its
 * file: the daemon's memory follows its connections, not their messages'
 * size. The socket is bound at start,
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
static guint  dc_request_timeout;    /* dovecot_request_timeout at start */
static DaemonPeerShare dc_share;     /* dovecot_max_peer_connections */
static gboolean dc_share_ready;
static int    dc_wake[2] = { -1, -1 };   /* ends the accept thread's wait */
static GThread *dc_accept_thread;
static DaemonLinger *dc_linger;      /* closes what was answered before its end (daemon-linger.c) */
static GMutex dc_lock;               /* guards what follows */
static GCond  dc_cond;
static guint  dc_conns;              /* connections being served */
static GSList *dc_open;              /* their descriptors, cut at the stop */
static gint   dc_stopping;           /* set at the stop: new connections get "-" */
static gint   dc_cancel;             /* set when the drain is over: fetches stop */

/* One connection, from its accept to its close. */
typedef struct {
  int         fd;
  DaemonPeer  peer;
  DaemonIo    io;
  Gen        *gen;
  GByteArray *in;         /* the protocol's header (and the message's first bytes) */
  gsize       header;     /* the header's bytes at the start of @in */
  DaemonSpool msg;        /* the message */
  guint64     n_in;       /* message bytes that came */
  guint64     n_out;      /* message bytes written */
  gboolean    too_large;
  gboolean    unread;     /* answered before the end of its input: the close lingers */
  const char *why;        /* why the answer was "-", or NULL */
} DcConn;

/* ---- the socket -------------------------------------------------------------- */

/* Bind and listen on dovecot_filter_socket (nothing when it is empty), as
 * root when the daemon starts as root; its file is given to @user (-u).
 * Returns: FALSE with @error when it cannot. */
static gboolean
daemon_dovecot_open (const Gen *gen, const char *user, GError **error)
{
  const DaemonSettings *keys = &gen->keys;
  const char *path = keys->dovecot_filter_socket;
  if (!path || !*path || daemon_listen_dir_missing ("dovecot_filter_socket", path))
    return TRUE;
  int fd = daemon_listen_unix (&dc_unix, "dovecot_filter_socket", path, keys, user, error);
  if (fd < 0)
    return FALSE;
  dc_fd = fd;
  dc_max = (guint) keys->dovecot_max_connections;
  dc_timeout = (guint) keys->dovecot_timeout;
  dc_request_timeout = (guint) keys->dovecot_request_timeout;
  daemon_peer_share_init (&dc_share, (guint) keys->dovecot_max_peer_connections);
  dc_share_ready = TRUE;
  return TRUE;
}

static gboolean
daemon_dovecot_is_open (void)
{
  return dc_fd >= 0;
}

/* ---- one connection ----------------------------------------------------------- */

static gboolean
dc_write_all (DcConn *c, const char *data, gsize len)
{
  DaemonIoEnd end;
  return daemon_io_write (&c->io, data, len, &end);
}

/* Why reading stopped short, for the log. */
static const char *
dc_cut (DaemonIoEnd end, const char *gone)
{
  return end == DAEMON_IO_LATE ? "cut off after dovecot_request_timeout"
         : end == DAEMON_IO_IDLE ? "cut off after dovecot_timeout" : gone;
}

/* Reads the header: up to its empty line, checked. FALSE (c->why set) when
 * the client is gone, too slow, or speaks another protocol. */
static gboolean
dc_read_header (DcConn *c)
{
  char buf[4096];
  const char *end = NULL;
  while (!end) {
    DaemonIoEnd e;
    gsize n = daemon_io_read (&c->io, buf, sizeof buf, &e);
    if (n == 0) {
      c->why = dc_cut (e, "the client went away before the message");
      return FALSE;
    }
    g_byte_array_append (c->in, (const guint8 *) buf, (guint) n);
    end = g_strstr_len ((const char *) c->in->data, (gssize) c->in->len, "\n\n");
    if (!end && c->in->len > DC_MAX_HEADER) {
      c->why = "the protocol's header is too long";
      c->unread = TRUE;
      return FALSE;
    }
  }
  c->header = (gsize) (end - (const char *) c->in->data) + 2;
  /* VERSION, then the lines up to "-" (a reply wanted) or "noreply" */
  g_autofree char *head = g_strndup ((const char *) c->in->data, c->header);
  g_auto (GStrv) lines = g_strsplit (head, "\n", -1);
  c->unread = TRUE;   /* until the message has been read to its end */
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

/* Reads the message to the end of the input into c->msg, keeping at most
 * max_message_size bytes (past it the rest is read and dropped). */
static gboolean
dc_read_message (DcConn *c)
{
  guint64 max = c->gen->keys.max_message_size;
  daemon_spool_init (&c->msg, c->gen->keys.milter_spill_size);
  daemon_spool_append (&c->msg, c->in->data + c->header, c->in->len - c->header);
  g_byte_array_set_size (c->in, 0);
  c->n_in = c->msg.size;
  char buf[65536];
  for (;;) {
    if (c->n_in > max && !c->too_large) {
      c->too_large = TRUE;
      daemon_spool_drop (&c->msg);
    }
    DaemonIoEnd e;
    gsize n = daemon_io_read (&c->io, buf, sizeof buf, &e);
    if (n == 0 && e == DAEMON_IO_EOF) {
      c->unread = FALSE;
      return TRUE;
    }
    if (n == 0) {
      c->why = dc_cut (e, "the client went away");
      c->unread = FALSE;
      return FALSE;
    }
    daemon_spool_append (&c->msg, buf, n);
    c->n_in = c->msg.size;
  }
}

/* Writes the answer, @len bytes of @buf or of the file @fd (when @fd >= 0),
 * and "+", within dovecot_request_timeout. */
static gboolean
dc_answer (DcConn *c, const char *buf, int fd, guint64 len)
{
  daemon_io_deadline (&c->io, dc_request_timeout);
  DaemonIoEnd e;
  gboolean ok = fd >= 0 ? daemon_io_write_file (&c->io, fd, len, &e) : daemon_io_write (&c->io, buf, (gsize) len, &e);
  if (!ok || !daemon_io_write (&c->io, "+\n", 2, &e)) {
    c->why = e == DAEMON_IO_EOF || e == DAEMON_IO_ERROR ? "the client went away before the answer"
             : "the answer not read within dovecot_timeout or dovecot_request_timeout";
    return FALSE;
  }
  c->n_out = len;
  return TRUE;
}

/* Plans the message as `extbody rewrite --filter` does (a message in
 * transit, daemon-job.c) and writes the result and "+"; FALSE (c->why set)
 * when nothing was written. A message that does not change is answered
 * with the bytes read; a new one comes from the job's memory or spool file. */
static gboolean
dc_filter (DcConn *c)
{
  g_autoptr (GError) error = NULL;
  gsize len = 0;
  const char *buf = daemon_spool_bytes (&c->msg, &len, &error);
  if (!buf) {
    log_line (LOG_WARNING, "dovecot: %s", error->message);
    c->why = "the message could not be spooled";
    return FALSE;
  }
  DaemonJob job = { .gen = c->gen, .profile = EB_PROFILE_TRANSIT, .buf = buf, .len = len,
                    .spooled = c->msg.fd >= 0, .cancelled = &dc_cancel };
  DaemonJobOutput o;
  if (!daemon_job_run (&job, &o, &error)) {
    log_line (LOG_WARNING, "dovecot: cannot write the message: %s", error ? error->message : "unknown error");
    c->why = "the plan failed";
    daemon_job_output_clear (&o);
    return FALSE;
  }
  /* the plan borrows the message's bytes; a new message needs them no more */
  g_clear_pointer (&o.plan, eb_plan_free);
  gboolean ok;
  if (o.out) {
    daemon_spool_drop (&c->msg);
    ok = dc_answer (c, o.out_fd >= 0 ? NULL : g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (o.out)),
                    o.out_fd, o.out_len);
  } else {
    ok = dc_answer (c, buf, -1, len);
  }
  daemon_job_output_clear (&o);
  return ok;
}

/* The whole exchange on one connection, and its line in the log. */
static void
dc_serve (DcConn *c)
{
  daemon_io_init (&c->io, c->fd, dc_timeout);
  daemon_io_deadline (&c->io, dc_request_timeout);
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
  } else if (ok && c->msg.size == 0) {
    c->why = "empty, not a message";
    ok = FALSE;
  }
  if (ok)
    ok = dc_filter (c);
  if (!ok) {
    daemon_io_deadline (&c->io, dc_request_timeout);
    dc_write_all (c, "-\n", 2);   /* to a client gone away: nobody reads it */
  }
  if (ok)
    log_line (LOG_INFO, "dovecot: filter +, %" G_GUINT64_FORMAT " bytes in, %" G_GUINT64_FORMAT " bytes out",
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
  c->msg.fd = -1;
  dc_serve (c);
  g_mutex_lock (&dc_lock);
  dc_open = g_slist_remove (dc_open, GINT_TO_POINTER (c->fd));
  if (c->unread)
    daemon_linger_close (dc_linger, c->fd, DC_MAX_HEADER);
  else
    close (c->fd);
  dc_conns--;
  g_cond_broadcast (&dc_cond);
  g_mutex_unlock (&dc_lock);
  daemon_peer_share_leave (&dc_share, &c->peer);
  if (c->gen)
    daemon_generation_unref (c->gen);
  daemon_spool_clear (&c->msg);
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
  daemon_peer_of (fd, &c->peer);
  if (!daemon_peer_share_enter (&dc_share, &c->peer)) {
    log_line (LOG_WARNING, "dovecot: a connection from %s refused: it holds dovecot_max_peer_connections (%u) already; "
              "the message stays as it came", c->peer.name, dc_share.limit);
    daemon_io_write_now (fd, "-\n");
    daemon_linger_close (dc_linger, fd, DC_MAX_HEADER);
    g_free (c);
    return TRUE;
  }
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
  daemon_io_write_now (fd, "-\n");
  g_mutex_lock (&dc_lock);
  dc_open = g_slist_remove (dc_open, GINT_TO_POINTER (fd));
  dc_conns--;
  g_mutex_unlock (&dc_lock);
  daemon_peer_share_leave (&dc_share, &c->peer);
  daemon_linger_close (dc_linger, fd, DC_MAX_HEADER);
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
static gboolean
daemon_dovecot_start (const Gen *gen, GError **error)
{
  (void) gen;
  if (dc_fd < 0)
    return TRUE;
  if (!g_unix_open_pipe (dc_wake, FD_CLOEXEC, error))
    return FALSE;
  dc_linger = daemon_linger_new ("dovecot", dc_max, dc_timeout, dc_request_timeout, error);
  if (!dc_linger)
    return FALSE;
  dc_accept_thread = g_thread_try_new ("dovecot-accept", dc_accept_run, NULL, error);
  return dc_accept_thread != NULL;
}

/* Take no connection any more: the accept thread ends, the socket's file
 * goes (when it is still ours); a message on a connection already open is
 * answered "-". */
static void
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
static guint
daemon_dovecot_in_flight (void)
{
  g_mutex_lock (&dc_lock);
  guint n = dc_conns;
  g_mutex_unlock (&dc_lock);
  return n;
}

/* The end: fetches in flight are cut off, every connection shut down, and
 * their threads waited for. Safe to call twice. */
static void
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
  g_clear_pointer (&dc_linger, daemon_linger_free);
  if (dc_share_ready)
    daemon_peer_share_clear (&dc_share);
  dc_share_ready = FALSE;
}

const DaemonDoor daemon_dovecot_door = {
  .name = "dovecot",
  .in_flight_what = "Dovecot filter connection",
  .socket_key = DAEMON_KEY_FIELD (dovecot_filter_socket),
  .start_keys = (const DaemonKeyField[]) { DAEMON_KEY_FIELD (dovecot_max_connections), DAEMON_KEY_FIELD (dovecot_timeout),
                                           DAEMON_KEY_FIELD (dovecot_request_timeout),
                                           DAEMON_KEY_FIELD (dovecot_max_peer_connections), { NULL, 0 } },
  .open = daemon_dovecot_open,
  .start = daemon_dovecot_start,
  .is_open = daemon_dovecot_is_open,
  .quiesce = daemon_dovecot_quiesce,
  .in_flight = daemon_dovecot_in_flight,
  .stop = daemon_dovecot_stop,
};
