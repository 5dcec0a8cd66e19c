/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* milter-session.c - the libmilter session callbacks and the per-message state */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <gio/gio.h>

#include <extbody/extbody.h>

#include "daemon.h"

/* Messages between MAIL FROM and their end (SIGTERM lets them finish), and
 * the stop: once set, a new message is refused with a temporary failure. */
gint milter_session_in_flight;
gint milter_session_stopping;
gint milter_session_refused;   /* messages refused while stopping, for the log */


/* the trace fields a sender can forge, named by the library: removed from
 * the top-level header when strip_trace_fields is on */
static const char *const trace_names[] = { EB_FILTER_FIELD, EB_TRACE_FIELD };

static gboolean
msg_has_trace (const Msg *m)
{
  return m->n_trace[0] || m->n_trace[1];
}

/* Every connection's context, until its close callback: libmilter closes the
 * sessions it still has when it stops without calling it. */
static GMutex conns_lock;
static GQueue conns = G_QUEUE_INIT;

static void
msg_free (Msg *m)
{
  if (!m)
    return;
  daemon_spool_clear (&m->spool);
  if (m->gen) {
    daemon_generation_unref (m->gen);
    g_atomic_int_add (&milter_session_in_flight, -1);
  }
  g_free (m);
}

/* The message's bytes: in memory up to milter_spill_size, then in a spill
 * file of their own (daemon-spool.c). */
static void
msg_append (Msg *m, const void *p, gsize n)
{
  daemon_spool_append (&m->spool, p, n);
}

/* Nothing of the message is needed any more but its header, whose trace
 * fields are judged at its end (eom_header_only). */
static void
msg_strip_only (Msg *m)
{
  m->strip_only = TRUE;
  daemon_spool_truncate (&m->spool, m->header_len);
}

static Conn *
conn_of (SMFICTX *ctx)
{
  Conn *c = smfi_getpriv (ctx);
  if (!c) {
    c = g_new0 (Conn, 1);
    c->link.data = c;
    g_mutex_lock (&conns_lock);
    g_queue_push_tail_link (&conns, &c->link);
    g_mutex_unlock (&conns_lock);
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
on_error_status (const Msg *m)
{
  return m->gen->tempfail ? SMFIS_TEMPFAIL : SMFIS_ACCEPT;
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
  /* counted first, then the stop looked at: the stop sets its flag, then
   * waits for the count, so a message is either waited for or refused */
  g_atomic_int_inc (&milter_session_in_flight);
  if (g_atomic_int_get (&milter_session_stopping)) {
    g_atomic_int_add (&milter_session_in_flight, -1);
    g_atomic_int_inc (&milter_session_refused);
    smfi_setreply (ctx, "451", "4.3.2", "extbodyd is stopping, try again later");
    return SMFIS_TEMPFAIL;
  }
  c->msg = g_new0 (Msg, 1);
  c->msg->gen = daemon_generation_get ();
  daemon_spool_init (&c->msg->spool, c->msg->gen->keys.milter_spill_size);
  return SMFIS_CONTINUE;
}

static sfsistat
cb_header (SMFICTX *ctx, char *name, char *value)
{
  Conn *c = conn_of (ctx);
  if (!c->msg)
    return SMFIS_CONTINUE;
  if (c->msg->gen->keys.strip_trace_fields)
    for (guint i = 0; i < G_N_ELEMENTS (trace_names); i++)
      if (g_ascii_strcasecmp (name, trace_names[i]) == 0)
        c->msg->n_trace[i]++;
  msg_append (c->msg, name, strlen (name));
  msg_append (c->msg, ":", 1);
  /* without SMFIP_HDR_LEADSPC the space after the colon was taken off */
  if (*value != ' ' && *value != '\t')
    msg_append (c->msg, " ", 1);
  /* the value in runs up to each bare LF, which becomes CR LF */
  const char *run = value;
  for (const char *p = value; *p; p++) {
    if (*p == '\n' && (p == value || p[-1] != '\r')) {
      msg_append (c->msg, run, (gsize) (p - run));
      msg_append (c->msg, "\r", 1);
      run = p;
    }
  }
  msg_append (c->msg, run, strlen (run));
  msg_append (c->msg, "\r\n", 2);
  if (g_ascii_strcasecmp (name, "Content-Type") == 0) {
    c->msg->has_type = TRUE;
    g_autofree char *media = eb_params_content_type_media_type (value);
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
  if (c->msg->gen->store)
    /* externalize: any message may have a part to store, the body of a
     * single-part one included */
    cannot = FALSE;
  else if (!cannot)
    /* the fields as they came (cb_header): the header is not read again */
    cannot = !c->msg->has_type;
  c->msg->header_len = c->msg->spool.size;
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
  if (c->msg->spool.size > c->msg->gen->keys.max_message_size) {
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
    mods_add (mods, eb_header_edit_get_name (e),
              eb_header_edit_get_kind (e) == EB_HEADER_ADD ? 0 : (int) eb_header_edit_get_index (e),
              eb_header_edit_get_value (e));
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

/* ---- end of message: named steps -------------------------------------------
 *
 * cb_eom runs the steps in order (input, rewrite, new body, modifications,
 * send); a step that ends the message early sets the status and returns
 * FALSE. The message is released at one place, cb_eom's end. */
typedef struct {
  SMFICTX         *ctx;
  Msg             *m;
  Gen             *gen;        /* the message's configuration, held to the end */
  sfsistat         status;
  const char      *buf;        /* the message (its spool's: memory, or its file mapped) */
  gsize            len;
  GOutputStream   *out;        /* the new body (body_stream) */
  int              out_fd;
  GMappedFile     *out_map;    /* the new body's spill file, mapped */
  EbPlan *result;
  const char      *body;       /* the new body */
  gsize            body_len;
  GPtrArray       *mods;       /* the header modifications to send */
} Eom;

static void
eom_clear (Eom *e)
{
  g_clear_pointer (&e->mods, g_ptr_array_unref);
  g_clear_pointer (&e->result, eb_plan_free);
  g_clear_pointer (&e->out_map, g_mapped_file_unref);
  g_clear_object (&e->out);
  g_clear_pointer (&e->gen, daemon_generation_unref);
}

/* The message is passed unchanged but for its trace fields, with @status. */
static gboolean
eom_unchanged (Eom *e, sfsistat status)
{
  e->status = finish_unchanged (e->ctx, e->m, status);
  return FALSE;
}

static gboolean eom_header_only (Eom *e);
static gboolean eom_edits_only (Eom *e);

/* The message as collected: in memory, or the spill file mapped. */
static gboolean
eom_input (Eom *e)
{
  Msg *m = e->m;
  if (m->strip_only)
    return eom_header_only (e);
  g_autoptr (GError) error = NULL;
  e->buf = daemon_spool_bytes (&m->spool, &e->len, &error);
  if (!e->buf) {
    log_line (LOG_ERR, "%s: %s", queue_id (e->ctx), error->message);
    return eom_unchanged (e, on_error_status (m));
  }
  return TRUE;
}

/* The plan and the new body (milter_worker_rewrite: daemon-job.c counts and
 * logs it); the new body goes to a spill file of its own when the message
 * or what its references bring is large. */
static gboolean
eom_rewrite (Eom *e)
{
  g_autoptr (GError) error = NULL;
  if (!milter_worker_rewrite (e->ctx, e->gen, e->m, e->buf, e->len, &e->out, &e->out_fd, &e->result, &error)) {
    log_line (LOG_ERR, "%s: %s", queue_id (e->ctx), error->message);
    return eom_unchanged (e, on_error_status (e->m));
  }
  if (!eb_plan_get_n_resolved (e->result))   /* the body as it came: the header's edits alone */
    return eom_edits_only (e);
  return TRUE;
}

/* The new body as bytes: the stream's memory, or its spill file mapped. */
static gboolean
eom_new_body (Eom *e)
{
  if (e->out_fd >= 0) {
    /* the mapping holds the file; the stream (unbuffered) closes the fd */
    g_autoptr (GError) error = NULL;
    e->out_map = g_mapped_file_new_from_fd (e->out_fd, FALSE, &error);
    g_output_stream_close (e->out, NULL, NULL);
    if (!e->out_map) {
      log_line (LOG_ERR, "%s: cannot map the new body's spill file: %s", queue_id (e->ctx), error->message);
      return eom_unchanged (e, on_error_status (e->m));
    }
    e->body = g_mapped_file_get_contents (e->out_map);
    e->body_len = g_mapped_file_get_length (e->out_map);
  } else {
    g_output_stream_close (e->out, NULL, NULL);
    e->body = g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (e->out));
    e->body_len = g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (e->out));
  }
  if (e->body_len == 0) {
    /* libmilter sends a new body as one or more packets of data and has no
     * way to say "empty": the old body would stay under the new header */
    log_line (LOG_ERR, "%s: the new body is empty, which the milter protocol cannot send: "
              "the message is not rewritten", queue_id (e->ctx));
    return eom_unchanged (e, SMFIS_ACCEPT);
  }
  return TRUE;
}

/* The header modifications, every one known to fit before the first is
 * sent: a message is changed whole or not at all. */
static gboolean
eom_mods (Eom *e)
{
  e->mods = g_ptr_array_new_with_free_func ((GDestroyNotify) mod_free);
  /* the plan's edits delete the trace fields the message came with */
  g_autoptr (GPtrArray) edits = eb_plan_header_edits (e->result);
  mods_from_edits (e->mods, edits);
  if (eb_plan_get_filter_field (e->result)) {
    g_autofree char *trace = eb_plan_filter_field_value (e->result);
    mods_add (e->mods, EB_FILTER_FIELD, 0, trace);
  }
  const Mod *misfit = mods_misfit (e->mods);
  if (misfit) {
    gsize vlen = misfit->value ? strlen (misfit->value) : 0;
    log_line (LOG_ERR, "%s: the new %s field (%" G_GSIZE_FORMAT " bytes) does not fit in a milter packet "
              "(%d bytes at most): the message is not rewritten", queue_id (e->ctx), misfit->name,
              vlen, MILTER_PACKET_MAX);
    return eom_unchanged (e, SMFIS_ACCEPT);
  }
  return TRUE;
}

/* A plan that left the body as it came: its header edits (the trace fields
 * it removes) and its X-Extbody field when due (a record this site seals
 * also when nothing was resolved), without a new body; nothing to send
 * leaves the message as it came. Ends the message. */
static gboolean
eom_edits_only (Eom *e)
{
  if (!eom_mods (e))
    return FALSE;
  guint removed = eb_plan_get_n_removed (e->result);
  if (removed)
    log_line (LOG_INFO, "%s: %u trace field%s removed", queue_id (e->ctx), removed, removed == 1 ? "" : "s");
  e->status = e->mods->len ? mods_send (e->ctx, e->mods, NULL, 0, SMFIS_CONTINUE) : SMFIS_CONTINUE;
  return FALSE;
}

/* Only the header was kept (strip_only: a message whose type cannot hold a
 * reference, or one past max_message_size, that came with trace fields):
 * the library judges them on the header alone (a record this site sealed
 * stays) and the others are deleted; when the header cannot be read, every
 * trace field the message came with is. Ends the message. */
static gboolean
eom_header_only (Eom *e)
{
  g_autoptr (GError) error = NULL;
  e->buf = daemon_spool_bytes (&e->m->spool, &e->len, &error);
  if (!e->buf) {
    log_line (LOG_ERR, "%s: %s", queue_id (e->ctx), error->message);
    return eom_unchanged (e, SMFIS_CONTINUE);
  }
  /* the trace fields alone: a message in transit's STRIP_TRACE, no record to add */
  EbRewriteFlags flags = EB_REWRITE_HEADER_ONLY
                         | (eb_profile_rewrite_flags (EB_PROFILE_TRANSIT_BODY, e->gen->config) & EB_REWRITE_STRIP_TRACE);
  e->result = eb_rewrite_plan (e->buf, e->len, e->gen->config, NULL, flags);
  return eom_edits_only (e);
}

/* The modifications and the new body, in one unbroken run. */
static void
eom_send (Eom *e)
{
  e->status = mods_send (e->ctx, e->mods, e->body, e->body_len, SMFIS_CONTINUE);
  if (e->status == SMFIS_CONTINUE)
    eb_stats_add_changed (daemon_main_stats, 1);
}

static sfsistat
cb_eom (SMFICTX *ctx)
{
  Conn *c = conn_of (ctx);
  if (!c->msg)
    return SMFIS_CONTINUE;
  /* the message's configuration outlives it (msg_done) to eom_clear, where
   * the rewrite result goes */
  Eom e = { .ctx = ctx, .m = c->msg, .gen = daemon_generation_ref (c->msg->gen), .status = SMFIS_CONTINUE, .out_fd = -1 };
  if (eom_input (&e) && eom_rewrite (&e) && eom_new_body (&e) && eom_mods (&e))
    eom_send (&e);
  /* the plan borrows the message's bytes: it goes first */
  eom_clear (&e);
  msg_done (ctx);
  return e.status;
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
    g_mutex_lock (&conns_lock);
    g_queue_unlink (&conns, &c->link);
    g_mutex_unlock (&conns_lock);
    g_free (c);
    smfi_setpriv (ctx, NULL);
  }
  return SMFIS_CONTINUE;
}

struct smfiDesc milter_session_desc = {
  "extbodyd", SMFI_VERSION,
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
