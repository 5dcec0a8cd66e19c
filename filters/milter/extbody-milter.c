/* extbody-milter - resolve message/external-body references inside the MTA
 * (libmilter content filter for Postfix and Sendmail).
 *
 * Per connection: a Conn in the private data pointer; per message: the message
 * collected as headers (rebuilt "Name:value" lines, CRLF) and body chunks, in
 * memory up to milter_spill_size, then spooled to an unlinked temporary file.
 * At end of message the library (eb_rewrite_plan) resolves the references and
 * fetches what is to be fetched; when something was resolved, the header edits
 * the library gives (eb_rewrite_header_edits: no re-parse, no diff here) are
 * sent with smfi_chgheader/smfi_addheader, one trace field X-Extbody is added,
 * and the body the library writes (eb_rewrite_write_body) replaces the old one
 * in one unbroken run of smfi_replacebody calls. Nothing changed: no modification at all. A failure
 * inside accepts the message unchanged (on_error = accept) or tempfails it.
 * Every modification is checked to fit in a milter packet before the first is
 * sent (a message is changed whole or not at all); a refusal once they have
 * begun tempfails. X-Extbody and X-Extbody-Resolved fields that arrive in the
 * top-level header are deleted (strip_trace_fields). A message whose top-level
 * Content-Type cannot hold an external-body is accepted at end of header,
 * without its body and without a MIME parse, unless it carries such fields:
 * then its body is skipped and the fields are deleted at end of message.
 * While a message waits on its fetches, a kick thread keeps libmilter's worker
 * pool from leaving other sessions unserved (see kick_run), and the fetches
 * are cancelled when the MTA has closed the connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sysexits.h>
#include <syslog.h>
#include <unistd.h>

#include <curl/curl.h>
#include <gio/gio.h>
#include <gmime/gmime.h>
#include <libmilter/mfapi.h>

#include "eb-config.h"
#include "eb-error.h"
#include "eb-fetch.h"
#include "eb-header.h"
#include "eb-params.h"
#include "eb-rewrite.h"
#include "eb-stats.h"

static EbConfig  *config;     /* read-only once smfi_main runs */
static EbFetcher *fetcher;    /* locked inside */
static EbStats   *stats;      /* every message planned, for the summary at exit */
static gboolean   to_stderr = TRUE;

static void G_GNUC_PRINTF (2, 3)
log_line (int prio, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  if (to_stderr)
    fprintf (stderr, "extbody-milter: %s\n", msg);
  else
    syslog (prio, "%s", msg);
}

typedef struct {
  GByteArray *mem;
  int         fd;           /* spill file, or -1 */
  guint64     size;
  gboolean    failed;       /* writing the spill file failed */
  gboolean    cannot_hold;  /* the top-level type is neither multipart nor message */
  guint       n_trace[2];   /* incoming fields named as trace_names (strip_trace_fields) */
  gboolean    strip_only;   /* nothing to resolve: only the trace fields to remove */
} Msg;

/* the trace fields a sender can forge: removed from the top-level header
 * when strip_trace_fields is on */
static const char *const trace_names[] = { "X-Extbody", "X-Extbody-Resolved" };

static gboolean
msg_has_trace (const Msg *m)
{
  return m->n_trace[0] || m->n_trace[1];
}

typedef struct {
  Msg     *msg;
  gboolean read_only;   /* the MTA did not offer every change a rewrite needs */
  gboolean can_skip;    /* the MTA takes SMFIS_SKIP from the body callback */
} Conn;

static void
msg_free (Msg *m)
{
  if (!m)
    return;
  if (m->mem)
    g_byte_array_unref (m->mem);
  if (m->fd >= 0)
    close (m->fd);
  g_free (m);
}

static void
msg_append (Msg *m, const void *p, gsize n)
{
  m->size += n;
  if (m->failed)
    return;
  if (m->fd < 0 && m->mem->len + n > config->milter_spill_size) {
    g_autofree char *path = NULL;
    m->fd = g_file_open_tmp ("extbody-milter-XXXXXX", &path, NULL);
    if (m->fd < 0) {
      m->failed = TRUE;
      return;
    }
    unlink (path);   /* the open descriptor keeps it; nothing is left behind */
    if (write (m->fd, m->mem->data, m->mem->len) != (ssize_t) m->mem->len)
      m->failed = TRUE;
    g_byte_array_set_size (m->mem, 0);
  }
  if (m->fd >= 0) {
    if (write (m->fd, p, n) != (ssize_t) n)
      m->failed = TRUE;
  } else {
    g_byte_array_append (m->mem, p, (guint) n);
  }
}

/* Nothing of the message is needed any more but the trace field counts. */
static void
msg_strip_only (Msg *m)
{
  m->strip_only = TRUE;
  g_byte_array_set_size (m->mem, 0);
  if (m->fd >= 0) {
    close (m->fd);
    m->fd = -1;
  }
}

static Conn *
conn_of (SMFICTX *ctx)
{
  Conn *c = smfi_getpriv (ctx);
  if (!c) {
    c = g_new0 (Conn, 1);
    smfi_setpriv (ctx, c);
  }
  return c;
}

static void
msg_done (SMFICTX *ctx)
{
  Conn *c = smfi_getpriv (ctx);
  if (c) {
    msg_free (c->msg);
    c->msg = NULL;
  }
}

static const char *
queue_id (SMFICTX *ctx)
{
  const char *id = smfi_getsymval (ctx, "i");
  return id ? id : "NOQUEUE";
}

static sfsistat
on_error_status (void)
{
  return strcmp (config->on_error, "tempfail") == 0 ? SMFIS_TEMPFAIL : SMFIS_ACCEPT;
}

/* ---- callbacks ------------------------------------------------------------ */

static sfsistat
cb_negotiate (SMFICTX *ctx, unsigned long f0, unsigned long f1, unsigned long f2,
              unsigned long f3, unsigned long *pf0, unsigned long *pf1, unsigned long *pf2,
              unsigned long *pf3)
{
  const unsigned long actions = SMFIF_CHGBODY | SMFIF_CHGHDRS | SMFIF_ADDHDRS;
  if ((f0 & actions) != actions) {
    log_line (LOG_ERR, "the MTA does not offer body and header changes; every message passes unchanged");
    /* what it does offer (adding a header, say) must not be used either: a
     * message is changed whole or not at all */
    conn_of (ctx)->read_only = TRUE;
    return SMFIS_ALL_OPTS;
  }
  *pf0 = actions;
  unsigned long steps = SMFIP_NOCONNECT | SMFIP_NOHELO | SMFIP_NORCPT | SMFIP_NOUNKNOWN
                        | SMFIP_NODATA;
  *pf1 = (steps & f1) | (f1 & (SMFIP_HDR_LEADSPC | SMFIP_SKIP));
  conn_of (ctx)->can_skip = (f1 & SMFIP_SKIP) != 0;
  *pf2 = 0;
  *pf3 = 0;
  return SMFIS_CONTINUE;
}

static sfsistat
cb_envfrom (SMFICTX *ctx, char **argv)
{
  Conn *c = conn_of (ctx);
  msg_free (c->msg);
  c->msg = NULL;
  if (c->read_only)
    return SMFIS_ACCEPT;
  c->msg = g_new0 (Msg, 1);
  c->msg->mem = g_byte_array_new ();
  c->msg->fd = -1;
  return SMFIS_CONTINUE;
}

static sfsistat
cb_header (SMFICTX *ctx, char *name, char *value)
{
  Conn *c = conn_of (ctx);
  if (!c->msg)
    return SMFIS_CONTINUE;
  if (config->strip_trace_fields)
    for (guint i = 0; i < G_N_ELEMENTS (trace_names); i++)
      if (g_ascii_strcasecmp (name, trace_names[i]) == 0)
        c->msg->n_trace[i]++;
  msg_append (c->msg, name, strlen (name));
  msg_append (c->msg, ":", 1);
  /* without SMFIP_HDR_LEADSPC the space after the colon was taken off */
  if (*value != ' ' && *value != '\t')
    msg_append (c->msg, " ", 1);
  for (const char *p = value; *p; p++) {
    if (*p == '\n' && (p == value || p[-1] != '\r'))
      msg_append (c->msg, "\r", 1);
    msg_append (c->msg, p, 1);
  }
  msg_append (c->msg, "\r\n", 2);
  if (g_ascii_strcasecmp (name, "Content-Type") == 0) {
    g_autoptr (EbParams) params = eb_params_parse_only (value, strlen (value), (const char *const[]) { NULL });
    const char *media = eb_params_get_media_type (params);
    if (media && !g_str_has_prefix (media, "multipart/") && !g_str_has_prefix (media, "message/"))
      c->msg->cannot_hold = TRUE;
  }
  return SMFIS_CONTINUE;
}

static sfsistat
cb_eoh (SMFICTX *ctx)
{
  Conn *c = conn_of (ctx);
  if (!c->msg)
    return SMFIS_CONTINUE;
  /* only multipart and message bodies can hold an external-body (a missing
   * Content-Type means text/plain) */
  gboolean cannot = c->msg->cannot_hold;
  g_autoptr (EbHeaderBlock) blk = NULL;
  if (!cannot && c->msg->fd < 0) {
    blk = eb_header_block_scan ((const char *) c->msg->mem->data, 0, c->msg->mem->len);
    if (eb_header_block_find (blk, (const char *) c->msg->mem->data, "Content-Type") < 0)
      cannot = TRUE;
  }
  if (cannot && msg_has_trace (c->msg)) {
    /* no reference, but forged trace fields to remove at the end */
    msg_strip_only (c->msg);
    return SMFIS_CONTINUE;
  }
  if (cannot) {
    msg_done (ctx);
    return SMFIS_ACCEPT;
  }
  msg_append (c->msg, "\r\n", 2);
  return SMFIS_CONTINUE;
}

static sfsistat
cb_body (SMFICTX *ctx, unsigned char *chunk, size_t len)
{
  Conn *c = conn_of (ctx);
  if (!c->msg)
    return SMFIS_CONTINUE;
  if (c->msg->strip_only)
    return c->can_skip ? SMFIS_SKIP : SMFIS_CONTINUE;
  msg_append (c->msg, chunk, len);
  if (c->msg->size > config->max_message_size) {
    log_line (LOG_INFO, "%s: message larger than max_message_size: passed unchanged%s", queue_id (ctx),
              msg_has_trace (c->msg) ? " but for the trace fields it arrived with" : "");
    if (msg_has_trace (c->msg)) {
      msg_strip_only (c->msg);
      return c->can_skip ? SMFIS_SKIP : SMFIS_CONTINUE;
    }
    msg_done (ctx);
    return SMFIS_ACCEPT;
  }
  return SMFIS_CONTINUE;
}

/* ---- blocking callbacks and libmilter's worker pool ----------------------------
 *
 * Debian's libmilter runs callbacks on a pool of worker threads
 * (_FFR_WORKERS_POOL, two at the start). A session with a command to read is
 * handed to an idle worker by a signal, and a new worker is started only when
 * no worker is idle; the count of idle workers drops only once a signalled
 * worker wakes up. When several sessions become ready at once, they are all
 * handed to the one idle worker: the rest wait, marked ready, until some worker
 * finishes its callback. While end-of-message callbacks wait on slow URLs (up
 * to message_deadline), messages were answered two at a time and new
 * connections were not even negotiated with.
 *
 * The remedy is to let the pool start a worker whenever a callback waits: while
 * one does, a thread of ours connects to the daemon's own listening socket every
 * KICK_INTERVAL_MS and closes the connection at once. With no worker idle,
 * libmilter starts one for that connection; it finds the end of the stream, and
 * then serves every session that was left waiting, as workers do. A kick when
 * a worker is idle costs that worker a read of the end of a stream. */
#define KICK_INTERVAL_MS 20

static GMutex   kick_lock;
static GCond    kick_cond;
static guint    kick_waiting;     /* callbacks waiting on a rewrite */
static gboolean kick_stop;
static GThread *kick_thread;
static struct sockaddr_storage kick_addr;
static socklen_t kick_addr_len;   /* 0: no address to kick */
static guint64  kick_count;       /* connections made, for the log */

static void
kick_once (void)
{
  int fd = socket (kick_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return;
  if (connect (fd, (struct sockaddr *) &kick_addr, kick_addr_len) != 0 && errno == EINPROGRESS) {
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    poll (&p, 1, 100);
  }
  close (fd);
  kick_count++;
}

static gpointer
kick_run (gpointer data)
{
  g_mutex_lock (&kick_lock);
  while (!kick_stop) {
    if (kick_waiting == 0) {
      g_cond_wait (&kick_cond, &kick_lock);
      continue;
    }
    g_mutex_unlock (&kick_lock);
    kick_once ();
    g_usleep (KICK_INTERVAL_MS * 1000);
    g_mutex_lock (&kick_lock);
  }
  g_mutex_unlock (&kick_lock);
  return NULL;
}

static void
kick_enter (void)
{
  g_mutex_lock (&kick_lock);
  if (kick_waiting++ == 0)
    g_cond_signal (&kick_cond);
  g_mutex_unlock (&kick_lock);
}

static void
kick_leave (void)
{
  g_mutex_lock (&kick_lock);
  kick_waiting--;
  g_mutex_unlock (&kick_lock);
}

/* The address of the daemon's own listening socket (@fd), as a client
 * connects to it: a wildcard address becomes the loopback one, a relative
 * unix path an absolute one (the daemon changes to / when it detaches). */
static void
kick_set_address (int fd)
{
  struct sockaddr_storage ss;
  socklen_t l = sizeof ss;
  if (getsockname (fd, (struct sockaddr *) &ss, &l) != 0)
    return;
  if (ss.ss_family == AF_INET) {
    struct sockaddr_in *in = (struct sockaddr_in *) &ss;
    if (in->sin_addr.s_addr == htonl (INADDR_ANY))
      in->sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  } else if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;
    if (IN6_IS_ADDR_UNSPECIFIED (&in6->sin6_addr))
      in6->sin6_addr = in6addr_loopback;
  } else if (ss.ss_family == AF_UNIX) {
    struct sockaddr_un *un = (struct sockaddr_un *) &ss;
    if (l <= offsetof (struct sockaddr_un, sun_path) || un->sun_path[0] == '\0')
      return;
    if (un->sun_path[0] != '/') {
      g_autofree char *cwd = g_get_current_dir ();
      g_autofree char *abs = g_build_filename (cwd, un->sun_path, NULL);
      if (strlen (abs) >= sizeof un->sun_path)
        return;
      memcpy (un->sun_path, abs, strlen (abs) + 1);
    }
    l = sizeof *un;
  } else {
    return;
  }
  kick_addr = ss;
  kick_addr_len = l;
}

typedef struct {
  SMFICTX *ctx;
  gint     cancelled;   /* the MTA is gone: the fetches stop */
} Waiting;

/* About once a second while fetches run: tell the MTA the message is being
 * worked on (its timeout restarts); when that cannot be written, the MTA has
 * closed the connection and the fetches are cancelled. */
static void
progress_cb (gpointer data)
{
  Waiting *w = data;
  if (smfi_progress (w->ctx) != MI_SUCCESS)
    g_atomic_int_set (&w->cancelled, 1);
}

static gboolean
rewrite_waiting (SMFICTX *ctx, const char *buf, gsize len, GOutputStream *out,
                 EbRewriteResult **result, GError **error)
{
  Waiting w = { ctx, 0 };
  kick_enter ();
  eb_fetch_set_thread_progress (progress_cb, &w);
  eb_fetch_set_thread_cancel (&w.cancelled);
  /* the library removes the trace fields the message came with and gives the
   * header edits; only the body is written here */
  *result = eb_rewrite_plan (buf, len, config, fetcher,
                             config->strip_trace_fields ? EB_REWRITE_STRIP_TRACE : EB_REWRITE_DEFAULT);
  gboolean ok = !(*result)->n_resolved || eb_rewrite_write_body (*result, buf, len, out, error);
  eb_fetch_set_thread_cancel (NULL);
  eb_fetch_set_thread_progress (NULL, NULL);
  kick_leave ();
  if (ok && g_atomic_int_get (&w.cancelled)) {
    g_clear_pointer (result, eb_rewrite_result_free);
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                 "the MTA closed the connection: the fetches were cancelled");
    return FALSE;
  }
  return ok;
}

/* One header modification: index 0 adds the field, a NULL value deletes the
 * @index-th field of that name. */
typedef struct {
  char *name;
  int   index;
  char *value;
} Mod;

static void
mod_free (Mod *x)
{
  g_free (x->name);
  g_free (x->value);
  g_free (x);
}

static void
mods_add (GPtrArray *mods, const char *name, int index, const char *value)
{
  Mod *x = g_new0 (Mod, 1);
  x->name = g_strdup (name);
  x->index = index;
  x->value = g_strdup (value);
  g_ptr_array_add (mods, x);
}

/* Deleting every trace field the message came with, the last of a name first
 * so that the indices stay valid. */
static void
mods_strip_trace (GPtrArray *mods, const Msg *m)
{
  for (guint i = 0; i < G_N_ELEMENTS (trace_names); i++)
    for (guint k = m->n_trace[i]; k > 0; k--)
      mods_add (mods, trace_names[i], (int) k, NULL);
}

/* The library's header edits as milter modifications. */
static void
mods_from_edits (GPtrArray *mods, GPtrArray *edits)
{
  for (guint i = 0; i < edits->len; i++) {
    const EbHeaderEdit *e = g_ptr_array_index (edits, i);
    mods_add (mods, e->name, e->kind == EB_HEADER_ADD ? 0 : (int) e->index,
              e->kind == EB_HEADER_DELETE ? NULL : e->value);
  }
}

/* libmilter refuses a packet whose data is over MILTER_CHUNK_SIZE (65535
 * bytes): a header change is the index (4 bytes), the name and the value, each
 * with its NUL (a deletion sends an empty value). The body is split into
 * packets by smfi_replacebody itself. Returns: the first modification that
 * cannot be sent, or NULL when all can. */
#define MILTER_PACKET_MAX 65535
static const Mod *
mods_misfit (GPtrArray *mods)
{
  for (guint i = 0; i < mods->len; i++) {
    const Mod *x = mods->pdata[i];
    gsize n = (x->index ? 4 : 0) + strlen (x->name) + 1 + (x->value ? strlen (x->value) : 0) + 1;
    if (n > MILTER_PACKET_MAX || strlen (x->name) == 0)
      return x;
  }
  return NULL;
}

/* Send @mods and, when @body, the new body in one unbroken run. Every one was
 * checked to fit; the first refusal tempfails the message (the MTA may hold a
 * part of the changes, and the sender retries the whole message). */
static sfsistat
mods_send (SMFICTX *ctx, GPtrArray *mods, const char *body, gsize body_len, sfsistat status)
{
  guint i = 0;
  for (; i < mods->len; i++) {
    const Mod *x = mods->pdata[i];
    int r = x->index == 0 ? smfi_addheader (ctx, x->name, x->value)
                          : smfi_chgheader (ctx, x->name, x->index, x->value);
    if (r != MI_SUCCESS)
      break;
  }
  gboolean done = i == mods->len;
  for (gsize p = 0; done && body && p < body_len; p += 65536) {
    gsize k = MIN ((gsize) 65536, body_len - p);
    done = smfi_replacebody (ctx, (unsigned char *) body + p, (int) k) == MI_SUCCESS;
  }
  if (!done) {
    log_line (LOG_ERR, "%s: a modification could not be sent (%s %u of %u header changes%s): tempfail",
              queue_id (ctx), i < mods->len ? "at" : "after", MIN (i + 1, mods->len), mods->len,
              i < mods->len ? "" : ", in the body");
    return SMFIS_TEMPFAIL;
  }
  return status;
}

/* A message that is not rewritten: unchanged but for the trace fields it
 * came with, which are removed. */
static sfsistat
finish_unchanged (SMFICTX *ctx, const Msg *m, sfsistat status)
{
  if (!msg_has_trace (m) || (status != SMFIS_ACCEPT && status != SMFIS_CONTINUE))
    return status;
  g_autoptr (GPtrArray) mods = g_ptr_array_new_with_free_func ((GDestroyNotify) mod_free);
  mods_strip_trace (mods, m);
  log_line (LOG_INFO, "%s: %u trace field%s removed", queue_id (ctx), mods->len,
            mods->len == 1 ? "" : "s");
  return mods_send (ctx, mods, NULL, 0, status);
}

static sfsistat
cb_eom (SMFICTX *ctx)
{
  Conn *c = conn_of (ctx);
  Msg *m = c->msg;
  if (!m)
    return SMFIS_CONTINUE;
  sfsistat status = SMFIS_CONTINUE;
  g_autoptr (GMappedFile) mapped = NULL;
  const char *buf;
  gsize len;
  if (m->strip_only) {
    status = finish_unchanged (ctx, m, SMFIS_CONTINUE);
    msg_done (ctx);
    return status;
  }
  if (m->failed) {
    log_line (LOG_ERR, "%s: cannot spool the message: %s", queue_id (ctx), g_strerror (errno));
    status = finish_unchanged (ctx, m, on_error_status ());
    msg_done (ctx);
    return status;
  }
  if (m->fd >= 0) {
    g_autoptr (GError) e = NULL;
    mapped = g_mapped_file_new_from_fd (m->fd, FALSE, &e);
    if (!mapped) {
      log_line (LOG_ERR, "%s: cannot map the spooled message: %s", queue_id (ctx), e->message);
      status = finish_unchanged (ctx, m, on_error_status ());
      msg_done (ctx);
      return status;
    }
    buf = g_mapped_file_get_contents (mapped);
    len = g_mapped_file_get_length (mapped);
  } else {
    buf = (const char *) m->mem->data;
    len = m->mem->len;
  }

  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr (EbRewriteResult) result = NULL;
  g_autoptr (GError) error = NULL;
  gboolean ok = rewrite_waiting (ctx, buf, len, out, &result, &error);
  if (!ok) {
    log_line (LOG_ERR, "%s: %s", queue_id (ctx), error->message);
    status = finish_unchanged (ctx, m, on_error_status ());
    msg_done (ctx);
    return status;
  }
  eb_stats_add_result (stats, result);
  eb_stats_add_bytes (stats, len);

  guint n = result->scan ? result->scan->refs->len : 0;
  if (n || result->reason != EB_REASON_RESOLVED) {
    GString *left = g_string_new (NULL);
    for (guint i = 0; i < n; i++) {
      const EbResolution *r = g_ptr_array_index (result->resolutions, i);
      if (r->reason != EB_REASON_RESOLVED)
        g_string_append_printf (left, "%s%s", left->len ? ", " : "", eb_reason_token (r->reason));
    }
    if (result->reason != EB_REASON_RESOLVED)
      g_string_append_printf (left, "%smessage: %s", left->len ? ", " : "", eb_reason_token (result->reason));
    log_line (LOG_INFO, "%s: %u reference%s, %u resolved%s%s", queue_id (ctx), n, n == 1 ? "" : "s",
              result->n_resolved, left->len ? ", left: " : "", left->str);
    g_string_free (left, TRUE);
  }

  if (!result->n_resolved) {   /* unchanged, but for the trace fields it came with */
    status = finish_unchanged (ctx, m, SMFIS_CONTINUE);
    msg_done (ctx);
    return status;
  }
  g_output_stream_close (out, NULL, NULL);
  const char *o = g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (out));
  gsize olen = g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (out));
  g_autoptr (GPtrArray) mods = g_ptr_array_new_with_free_func ((GDestroyNotify) mod_free);
  g_autoptr (GPtrArray) edits = eb_rewrite_header_edits (result, buf, len);
  mods_from_edits (mods, edits);
  g_autofree char *trace = g_strdup_printf (" resolved %u of %u external-body reference%s",
                                            result->n_resolved, n, n == 1 ? "" : "s");
  mods_add (mods, "X-Extbody", 0, trace);
  /* every modification is known to fit before the first is sent: a message
   * is changed whole or not at all */
  const Mod *misfit = mods_misfit (mods);
  if (misfit) {
    gsize vlen = misfit->value ? strlen (misfit->value) : 0;
    log_line (LOG_ERR, "%s: the new %s field (%" G_GSIZE_FORMAT " bytes) does not fit in a milter packet "
              "(%d bytes at most): the message is not rewritten", queue_id (ctx), misfit->name,
              vlen, MILTER_PACKET_MAX);
    status = finish_unchanged (ctx, m, SMFIS_ACCEPT);
    msg_done (ctx);
    return status;
  }
  status = mods_send (ctx, mods, o, olen, SMFIS_CONTINUE);
  if (status == SMFIS_CONTINUE)
    eb_stats_add_changed (stats, 1);
  msg_done (ctx);
  return status;
}

static sfsistat
cb_abort (SMFICTX *ctx)
{
  msg_done (ctx);
  return SMFIS_CONTINUE;
}

static sfsistat
cb_close (SMFICTX *ctx)
{
  Conn *c = smfi_getpriv (ctx);
  if (c) {
    msg_free (c->msg);
    g_free (c);
    smfi_setpriv (ctx, NULL);
  }
  return SMFIS_CONTINUE;
}

static struct smfiDesc desc = {
  "extbody-milter", SMFI_VERSION,
  SMFIF_CHGBODY | SMFIF_CHGHDRS | SMFIF_ADDHDRS,
  NULL,            /* connect */
  NULL,            /* helo */
  cb_envfrom,
  NULL,            /* envrcpt */
  cb_header,
  cb_eoh,
  cb_body,
  cb_eom,
  cb_abort,
  cb_close,
  NULL,            /* unknown */
  NULL,            /* data */
  cb_negotiate,
};

/* ---- main ------------------------------------------------------------------ */

/* The file of a unix socket spec ("unix:PATH", "local:PATH" or a bare
 * "/PATH"), or NULL for an inet one. */
static const char *
unix_socket_path (const char *spec)
{
  if (g_str_has_prefix (spec, "unix:"))
    return spec + 5;
  if (g_str_has_prefix (spec, "local:"))
    return spec + 6;
  return spec[0] == '/' ? spec : NULL;
}

/* libmilter removes whatever socket is at the path before it binds its own:
 * a second daemon started by mistake would take the socket of a running one
 * and leave it serving nobody. A socket that answers is in use; one that
 * refuses is stale and may go. */
static gboolean
unix_socket_in_use (const char *path)
{
  struct stat st;
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (lstat (path, &st) != 0 || !S_ISSOCK (st.st_mode) || strlen (path) >= sizeof sa.sun_path)
    return FALSE;
  memcpy (sa.sun_path, path, strlen (path) + 1);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return FALSE;
  gboolean live = connect (fd, (struct sockaddr *) &sa, sizeof sa) == 0 || errno == EAGAIN;
  close (fd);
  return live;
}

/* libmilter offers no way to set TCP_NODELAY on the sockets it accepts; on
 * Linux an accepted socket inherits it from the listening one, which is found
 * among the open descriptors. */
static void
set_nodelay_on_listener (void)
{
  for (int fd = 3; fd < 1024; fd++) {
    int type = 0, listening = 0;
    socklen_t l = sizeof type;
    if (getsockopt (fd, SOL_SOCKET, SO_TYPE, &type, &l) != 0 || type != SOCK_STREAM)
      continue;
    l = sizeof listening;
    if (getsockopt (fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l) != 0 || !listening)
      continue;
    struct sockaddr_storage ss;
    l = sizeof ss;
    if (getsockname (fd, (struct sockaddr *) &ss, &l) != 0
        || (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
      continue;
    int one = 1;
    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
}

/* The listening socket libmilter opened (it offers no way to ask for it). */
static int
find_listener (void)
{
  for (int fd = 3; fd < 1024; fd++) {
    int type = 0, listening = 0;
    socklen_t l = sizeof type;
    if (getsockopt (fd, SOL_SOCKET, SO_TYPE, &type, &l) != 0 || type != SOCK_STREAM)
      continue;
    l = sizeof listening;
    if (getsockopt (fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l) == 0 && listening)
      return fd;
  }
  return -1;
}

static int
drop_privileges (const char *user)
{
  struct passwd *pw = getpwnam (user);
  if (!pw) {
    log_line (LOG_ERR, "no such user: %s", user);
    return EX_NOUSER;
  }
  if (initgroups (pw->pw_name, pw->pw_gid) != 0 || setgid (pw->pw_gid) != 0
      || setuid (pw->pw_uid) != 0) {
    log_line (LOG_ERR, "cannot become %s: %s", user, g_strerror (errno));
    return EX_NOPERM;
  }
  return 0;
}

/* main without the globals' release, so that every return leaves nothing
 * behind (LeakSanitizer runs over the daemon in the tests) */
static int
run (int argc, char **argv)
{
  g_autofree char *opt_config = NULL, *opt_socket = NULL, *opt_user = NULL, *opt_pidfile = NULL;
  g_auto (GStrv) opt_set = NULL;
  g_auto (GStrv) opt_allow = NULL;
  gboolean opt_daemon = FALSE, opt_version = FALSE, opt_no_nodelay = FALSE, opt_check = FALSE;
  GOptionEntry entries[] = {
    { "socket", 'p', 0, G_OPTION_ARG_STRING, &opt_socket,
      "Socket: unix:PATH, inet:PORT@ADDRESS, inet6:PORT@ADDRESS (default: milter_socket)", "SPEC" },
    { "config", 'c', 0, G_OPTION_ARG_FILENAME, &opt_config,
      "Configuration file (default " EB_CONFIG_DEFAULT_PATH "; absent is fine)", "FILE" },
    { "set", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &opt_set, "Override a configuration key", "KEY=VALUE" },
    { "allow-network", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_allow, "Add a CIDR block to allow_networks", "CIDR" },
    { "user", 'u', 0, G_OPTION_ARG_STRING, &opt_user, "Run as USER once the socket is bound", "USER" },
    { "daemon", 'd', 0, G_OPTION_ARG_NONE, &opt_daemon, "Detach and log to syslog (default: foreground, stderr)", NULL },
    { "pidfile", 'P', 0, G_OPTION_ARG_FILENAME, &opt_pidfile, "With -d: write the PID here", "FILE" },
    { "version", 'V', 0, G_OPTION_ARG_NONE, &opt_version, "Show the version", NULL },
    { "check", 'n', 0, G_OPTION_ARG_NONE, &opt_check,
      "Check the configuration (file, -o, --allow-network, -p) as the daemon reads it and exit: nothing printed when valid, one line naming the key and exit 78 when not", NULL },
    { "no-nodelay", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &opt_no_nodelay,
      "Leave Nagle's algorithm on for TCP (to measure what TCP_NODELAY saves)", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("");
  g_option_context_set_summary (ctx, "Resolve message/external-body references in mail, as a milter for Postfix and Sendmail.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    fprintf (stderr, "extbody-milter: %s (try --help)\n", error->message);
    return EX_USAGE;
  }
  if (opt_version) {
    printf ("extbody-milter %s\n", EXTBODY_VERSION);
    return 0;
  }
  if (argc > 1) {
    fprintf (stderr, "extbody-milter: unexpected argument \"%s\" (try --help)\n", argv[1]);
    return EX_USAGE;
  }

  config = eb_config_new ();
  const char *path = opt_config ? opt_config : EB_CONFIG_DEFAULT_PATH;
  if (!eb_config_load_file (config, path, opt_config == NULL, &error)) {
    fprintf (stderr, "extbody-milter: %s\n", error->message);
    return EX_CONFIG;
  }
  /* -o and --allow-network as the command applies them (one library call) */
  for (guint i = 0; opt_set && opt_set[i]; i++) {
    if (!eb_config_apply_option (config, opt_set[i], &error)) {
      fprintf (stderr, "extbody-milter: %s\n", error->message);
      return g_error_matches (error, EB_ERROR, EB_ERROR_SYNTAX) ? EX_USAGE : EX_CONFIG;
    }
  }
  if (!eb_config_add_networks (config, (const char *const *) opt_allow, &error)) {
    fprintf (stderr, "extbody-milter: %s\n", error->message);
    return EX_CONFIG;
  }
  /* -p is a milter_socket: checked the same way */
  if (opt_socket && !eb_config_set (config, "milter_socket", opt_socket, &error)) {
    fprintf (stderr, "extbody-milter: -p %s\n", error->message);
    return EX_CONFIG;
  }

  g_mime_init ();
  curl_global_init (CURL_GLOBAL_DEFAULT);   /* before any thread */
  /* the fetch policy is built whether fetching is on or not: -n checks what
   * the daemon would use */
  g_autoptr (EbFetcher) checked = eb_fetcher_new (config, &error);
  if (!checked) {
    fprintf (stderr, "extbody-milter: %s\n", error->message);
    return EX_CONFIG;
  }
  if (opt_check)
    return 0;
  if (config->fetch)
    fetcher = g_steal_pointer (&checked);

  const char *sock = config->milter_socket;
  if (smfi_setconn ((char *) sock) != MI_SUCCESS || smfi_register (desc) != MI_SUCCESS) {
    fprintf (stderr, "extbody-milter: cannot use socket %s\n", sock);
    return EX_USAGE;
  }
  const char *upath = unix_socket_path (sock);
  struct stat st;
  if (upath && lstat (upath, &st) == 0 && !S_ISSOCK (st.st_mode)) {
    fprintf (stderr, "extbody-milter: %s exists and is not a socket (left alone)\n", upath);
    return EX_UNAVAILABLE;
  }
  if (upath && unix_socket_in_use (upath)) {
    fprintf (stderr, "extbody-milter: socket %s is in use by a running daemon\n", upath);
    return EX_UNAVAILABLE;
  }
  /* the MTA's user must be able to connect: a socket made under umask 022 is
   * refused by Postfix. Access is controlled by the socket's directory. */
  mode_t old = umask (0);
  int r = smfi_opensocket (TRUE);   /* removes a stale unix socket first */
  umask (old);
  if (r != MI_SUCCESS) {
    fprintf (stderr, "extbody-milter: cannot open socket %s: %s\n", sock, g_strerror (errno));
    return EX_UNAVAILABLE;
  }
  if (!opt_no_nodelay)
    set_nodelay_on_listener ();
  int lfd = find_listener ();
  if (lfd >= 0)
    kick_set_address (lfd);
  if (opt_user) {
    struct passwd *pw = getpwnam (opt_user);
    if (pw && upath && chown (upath, pw->pw_uid, pw->pw_gid) != 0)
      fprintf (stderr, "extbody-milter: cannot chown %s: %s\n", upath, g_strerror (errno));
    int s = drop_privileges (opt_user);
    if (s)
      return s;
  }
  if (opt_daemon) {
    if (daemon (0, 0) != 0) {
      fprintf (stderr, "extbody-milter: cannot detach: %s\n", g_strerror (errno));
      return EX_OSERR;
    }
    to_stderr = FALSE;
    openlog ("extbody-milter", LOG_PID, LOG_MAIL);
    if (opt_pidfile) {
      g_autofree char *pid = g_strdup_printf ("%ld\n", (long) getpid ());
      if (!g_file_set_contents (opt_pidfile, pid, -1, &error))
        log_line (LOG_ERR, "cannot write %s: %s", opt_pidfile, error->message);
    }
  }
  log_line (LOG_INFO, "listening on %s%s", sock, config->fetch ? "" : " (fetch = off)");
  signal (SIGPIPE, SIG_IGN);
  if (kick_addr_len) {
    /* libmilter takes SIGTERM, SIGINT and SIGHUP on a thread of its own that
     * waits for them with the signals blocked everywhere else */
    sigset_t set, old_set;
    sigemptyset (&set);
    sigaddset (&set, SIGTERM);
    sigaddset (&set, SIGINT);
    sigaddset (&set, SIGHUP);
    pthread_sigmask (SIG_BLOCK, &set, &old_set);
    kick_thread = g_thread_new ("kick", kick_run, NULL);
    pthread_sigmask (SIG_SETMASK, &old_set, NULL);
  } else
    log_line (LOG_WARNING, "cannot find the listening socket: a fetch that waits may hold up other sessions");
  stats = eb_stats_new ();
  r = smfi_main ();
  g_autofree char *summary = eb_stats_format_summary (stats, FALSE);
  log_line (LOG_INFO, "exiting: %s", summary);
  if (kick_thread) {
    g_mutex_lock (&kick_lock);
    kick_stop = TRUE;
    g_cond_signal (&kick_cond);
    g_mutex_unlock (&kick_lock);
    g_thread_join (kick_thread);
  }
  return r == MI_SUCCESS ? 0 : EX_SOFTWARE;
}

int
main (int argc, char **argv)
{
  int status = run (argc, argv);
  g_clear_pointer (&fetcher, eb_fetcher_free);
  g_clear_pointer (&config, eb_config_free);
  g_clear_pointer (&stats, eb_stats_free);
  return status;
}
