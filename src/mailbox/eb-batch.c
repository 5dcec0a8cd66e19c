/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-batch.c - every message of a mailbox (see eb-batch.h).
 *
 * One pool serves every source and mode: a source makes item i (an mbox slice,
 * a Maildir file to map), a worker maps and plans it, and the calling thread
 * consumes the items strictly in order - writing an mbox's new bytes or its
 * original ones, replacing a Maildir message, calling the message callback -
 * and frees each before the next is handed out.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eb-batch.h"
#include "eb-header.h"
#include "eb-cleanup.h"
#include "eb-maildir.h"
#include "eb-mbox.h"
#include "eb-replace.h"

G_DEFINE_QUARK (eb-batch-error-quark, eb_batch_error)

struct _EbBatch {
  const EbConfig     *config;
  EbFetcher          *fetcher;
  EbBatchMode         mode;
  guint               jobs;
  gboolean            recursive;
  char               *backup;
  EbRewriteFlags      flags;
  EbStore            *store;       /* non-NULL: externalize instead of resolve */
  EbExternalizeFlags  ext_flags;
  EbBatchProgressFunc progress;
  gpointer            progress_data;
  EbBatchMessageFunc  message;
  gpointer            message_data;
  EbBatchNoticeFunc   notice;
  gpointer            notice_data;
  EbBatchWorkHook     hook;
  gpointer            hook_data;
  EbStats            *stats;
  gboolean            complete;
  /* the run */
  const char         *scan_buf;  /* the mbox being split by the workers */
  gsize               scan_len;
  int                 scan_fd;   /* its file, read by the split (-1: the mapping is) */
  GMutex              lock;
  GCond               cond;     /* signalled when the awaited task is done */
  gconstpointer       awaited;  /* the task the calling thread waits for */
  guint               done;
  guint64             bytes_done;
  gboolean            mbox;     /* the messages are written into an mbox */
  int                 worst;    /* the worst EbBatchError so far (as its rank), or -1 */
  char               *worst_msg;
};

/* What the workers are given: a message, or a stretch of an mbox to split. */
typedef enum { TASK_MESSAGE, TASK_SCAN } TaskKind;

typedef struct {
  TaskKind         kind;
  guint            number;      /* from 1 */
  const char      *buf;         /* the message (mbox: a slice; Maildir: mapped by the worker) */
  gsize            len;
  char            *path;        /* a Maildir message file, or NULL */
  gint64           offset;      /* an mbox message's From_ line, or -1 */
  const char      *skipped;     /* why a Maildir entry is not processed, or NULL */
  GMappedFile     *map;
  EbPlan *result;      /* kept for the message callback */
  char            *message_id;
  GBytes          *out;         /* the rewritten message when changed */
  gboolean         changed;     /* it changes (or would) */
  gboolean         unreadable;  /* a Maildir file that could not be read */
  gboolean         failed;      /* writing it in memory failed */
  gboolean         unmatched;   /* no "external-body" in it: planned by the consumer */
  gboolean         finished;    /* set under the batch lock when planned */
} Item;

/* A stretch [from, to) of an mbox: its pages are brought in and the From_
 * lines that start messages there found, ahead of the messages that need
 * them, so that the split runs on the workers too. */
typedef struct {
  TaskKind  kind;
  gsize     from, to;
  GArray   *seps;       /* (element-type gsize) */
  GArray   *hits;       /* (element-type gsize) where "external-body" starts, or NULL */
  gboolean  finished;   /* set under the batch lock */
} Scan;

#define SCAN_CHUNK (2 << 20)
#define SCAN_AHEAD 8
/* The new mbox is written by a thread of its own (one writer: two would
 * only queue for the file's lock), unchanged messages copied a stretch of at
 * least COPY_MIN bytes at a time (or up to the next changed message), and at
 * most PENDING_MAX bytes of changed messages waiting for it. */
#define COPY_MIN (4 << 20)
#define PENDING_MAX (16 << 20)
/* Messages the split found no "external-body" in take no worker: besides the
 * window of messages being planned, up to RING_SPREAD times as many such
 * messages wait for their turn, together at most SPAN_MAX bytes of the mbox. */
#define RING_SPREAD 8
#define SPAN_MAX (8 << 20)

static void
item_free (Item *it)
{
  if (!it)
    return;
  g_clear_pointer (&it->result, eb_plan_free);
  g_clear_pointer (&it->out, g_bytes_unref);
  g_clear_pointer (&it->map, g_mapped_file_unref);
  g_free (it->message_id);
  g_free (it->path);
  g_free (it);
}

void
eb_batch_set_store (EbBatch *batch, EbStore *store, EbExternalizeFlags flags)
{
  g_return_if_fail (batch != NULL);
  batch->store = store;
  batch->ext_flags = flags;
}

EbBatch *
eb_batch_new (const EbConfig *config, EbFetcher *fetcher, EbBatchMode mode)
{
  g_return_val_if_fail (config != NULL, NULL);
  EbBatch *b = g_new0 (EbBatch, 1);
  b->config = config;
  b->fetcher = fetcher;
  b->mode = mode;
  b->jobs = 1;
  b->stats = eb_stats_new ();
  b->worst = -1;
  g_mutex_init (&b->lock);
  g_cond_init (&b->cond);
  return b;
}

void
eb_batch_free (EbBatch *batch)
{
  if (!batch)
    return;
  eb_stats_free (batch->stats);
  g_free (batch->backup);
  g_free (batch->worst_msg);
  g_mutex_clear (&batch->lock);
  g_cond_clear (&batch->cond);
  g_free (batch);
}

void
eb_batch_set_mode (EbBatch *batch, EbBatchMode mode)
{
  g_return_if_fail (batch != NULL);
  batch->mode = mode;
}

void
eb_batch_set_jobs (EbBatch *batch, guint jobs)
{
  g_return_if_fail (batch != NULL);
  batch->jobs = CLAMP (jobs, 1, 1024);
}

void
eb_batch_set_recursive (EbBatch *batch, gboolean recursive)
{
  g_return_if_fail (batch != NULL);
  batch->recursive = recursive;
}

void
eb_batch_set_backup (EbBatch *batch, const char *path)
{
  g_return_if_fail (batch != NULL);
  g_free (batch->backup);
  batch->backup = g_strdup (path);
}

void
eb_batch_set_flags (EbBatch *batch, EbRewriteFlags flags)
{
  g_return_if_fail (batch != NULL);
  batch->flags = flags;
}

void
eb_batch_set_progress_func (EbBatch *batch, EbBatchProgressFunc func, gpointer user_data)
{
  g_return_if_fail (batch != NULL);
  batch->progress = func;
  batch->progress_data = user_data;
}

void
eb_batch_set_message_func (EbBatch *batch, EbBatchMessageFunc func, gpointer user_data)
{
  g_return_if_fail (batch != NULL);
  batch->message = func;
  batch->message_data = user_data;
}

void
eb_batch_set_notice_func (EbBatch *batch, EbBatchNoticeFunc func, gpointer user_data)
{
  g_return_if_fail (batch != NULL);
  batch->notice = func;
  batch->notice_data = user_data;
}

void
eb_batch_set_work_hook (EbBatch *batch, EbBatchWorkHook hook, gpointer data)
{
  g_return_if_fail (batch != NULL);
  batch->hook = hook;
  batch->hook_data = data;
}

gboolean
eb_batch_get_complete (EbBatch *batch)
{
  g_return_val_if_fail (batch != NULL, FALSE);
  return batch->complete;
}

EbStats *
eb_batch_get_stats (EbBatch *batch)
{
  g_return_val_if_fail (batch != NULL, NULL);
  return batch->stats;
}

guint
eb_batch_window (guint jobs)
{
  return MAX (4 * MAX (jobs, 1), 16);
}

/* ---- notices and the run's status ------------------------------------------ */

static void G_GNUC_PRINTF (2, 3)
notice (EbBatch *b, const char *fmt, ...)
{
  if (!b->notice)
    return;
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *line = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  b->notice (line, b->notice_data);
}

/* Ranked as their sysexits(3) statuses are: the worst is the highest. */
static int
rank (EbBatchError code)
{
  switch (code) {
  case EB_BATCH_ERROR_DATAERR:   return 65;
  case EB_BATCH_ERROR_NOINPUT:   return 66;
  case EB_BATCH_ERROR_CANTCREAT: return 73;
  case EB_BATCH_ERROR_IOERR:     return 74;
  case EB_BATCH_ERROR_TEMPFAIL:  return 75;
  }
  return 70;
}

static EbBatchError
unrank (int r)
{
  for (EbBatchError c = EB_BATCH_ERROR_NOINPUT; c <= EB_BATCH_ERROR_TEMPFAIL; c++)
    if (rank (c) == r)
      return c;
  return EB_BATCH_ERROR_IOERR;
}

/* The run's status becomes @code (@at_least: only when that is worse); the
 * line @msg (nullable: none) is told. */
static void
fail (EbBatch *b, EbBatchError code, gboolean at_least, const char *msg)
{
  if (msg && b->notice)
    b->notice (msg, b->notice_data);
  if (!at_least || rank (code) > b->worst) {
    b->worst = rank (code);
    g_free (b->worst_msg);
    b->worst_msg = g_strdup (msg ? msg : "a message could not be written in memory");
  }
}

static void G_GNUC_PRINTF (4, 5)
failv (EbBatch *b, EbBatchError code, gboolean at_least, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  fail (b, code, at_least, msg);
}
#define failf(b, code, ...) failv ((b), (code), TRUE, __VA_ARGS__)

static void
run_start (EbBatch *b)
{
  b->complete = FALSE;
  b->worst = -1;
  g_clear_pointer (&b->worst_msg, g_free);
}

static gboolean
run_end (EbBatch *b, GError **error)
{
  if (b->worst < 0)
    return TRUE;
  g_set_error_literal (error, EB_BATCH_ERROR, unrank (b->worst), b->worst_msg);
  return FALSE;
}

/* ---- the pool -------------------------------------------------------------- */

/* Plan @it and, when it changes and is to be written, write the new message in
 * memory; count it. */
static void
plan_item (Item *it, EbBatch *b)
{
  g_autoptr (EbPlan) r = NULL;
  gboolean would = FALSE;
  if (b->store) {
    EbExternalizeFlags f = b->ext_flags;
    if (b->mode != EB_BATCH_REWRITE)
      f |= EB_EXTERNALIZE_NO_STORE;
    if (b->mbox)
      f |= EB_EXTERNALIZE_MBOXRD;   /* store what the reader sees, not the quoting */
    f |= eb_profile_externalize_flags (EB_PROFILE_AT_REST, b->config);
    r = eb_externalize_plan (it->buf, it->len, b->config, b->store, f);
    for (guint i = 0; i < eb_plan_get_n_refs (r); i++)
      would |= eb_plan_get_ref_reason (r, i) == EB_REASON_WOULD_EXTERNALIZE;
  } else {
    r = eb_rewrite_plan (it->buf, it->len, b->config, b->fetcher,
                         b->flags | eb_profile_rewrite_flags (EB_PROFILE_AT_REST, b->config));
  }
  eb_stats_add_result (b->stats, r);
  eb_stats_add_bytes (b->stats, it->len);
  gboolean changed = eb_plan_get_changed (r);
  if (changed && b->mode != EB_BATCH_INSPECT) {
    g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
    if (b->mbox ? eb_plan_write_mboxrd (r, out, NULL)
                : eb_plan_write (r, out, NULL)) {
      g_output_stream_close (out, NULL, NULL);
      it->out = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
      it->changed = TRUE;
    } else {
      it->failed = TRUE;
    }
  } else if (changed || (would && b->mode == EB_BATCH_DRY_RUN)) {
    it->changed = TRUE;
  }
  if (b->message) {
    if (eb_plan_get_n_refs (r))
      it->message_id = eb_plan_get_message_id (r);
    it->result = g_steal_pointer (&r);
  }
}

/* Can externalize find nothing in a message of @len bytes, without parsing
 * it? No part of it can reach externalize_min_size: a part's decoded bytes
 * are never more than its encoded ones (identity, base64, quoted-printable),
 * and those lie inside the message. Such a message is planned as one without
 * "external-body" is (plan_unmatched): it is left as it is, counts as a
 * message scanned, and has no part to report - as eb_externalize_plan would
 * find (a message above max_message_size is left to it: that is counted).
 * Not with EB_REWRITE_NO_PRECHECK (--no-precheck): every message is parsed. */
static gboolean
small_for_store (const EbBatch *b, gsize len)
{
  return b->store && !(b->flags & EB_REWRITE_NO_PRECHECK)
         && len < b->config->externalize_min_size && len <= b->config->max_message_size;
}

/* The plan of a message the split found no "external-body" in: what
 * plan_item() would find, on the calling thread, without reading it again. */
static void
plan_unmatched (Item *it, EbBatch *b)
{
  g_autoptr (EbPlan) r = eb_rewrite_plan_unmatched (it->buf, it->len);
  eb_stats_add_result (b->stats, r);
  eb_stats_add_bytes (b->stats, it->len);
  if (b->message)
    it->result = g_steal_pointer (&r);
  g_mutex_lock (&b->lock);
  b->done++;
  b->bytes_done += it->len;
  g_mutex_unlock (&b->lock);
}

typedef struct Run Run;
static void scan_work (Scan *sc, EbBatch *b);

/* Wait on the calling thread until the task @task has set *@finished. */
static void
await (EbBatch *b, gconstpointer task, const gboolean *finished)
{
  g_mutex_lock (&b->lock);
  b->awaited = task;
  while (!*finished)
    g_cond_wait (&b->cond, &b->lock);
  b->awaited = NULL;
  g_mutex_unlock (&b->lock);
}

static void
work (gpointer data, gpointer user)
{
  Item *it = data;
  EbBatch *b = user;
  if (it->kind == TASK_SCAN) {
    scan_work (data, b);
    return;
  }
  if (b->hook)
    b->hook (it->number, b->hook_data);
  if (it->path && !it->skipped) {   /* a Maildir file: mapped here, released by the consumer */
    it->map = eb_maildir_map_entry (it->path, &it->skipped);
    struct stat st;
    if (it->map && b->mode != EB_BATCH_INSPECT && lstat (it->path, &st) == 0 && st.st_nlink > 1) {
      /* another name for the same file: replacing this one would leave the
       * other holding the old message, and silently split the two */
      it->skipped = "hard-linked (a second name would keep the old message)";
      g_clear_pointer (&it->map, g_mapped_file_unref);
    }
    it->unreadable = !it->map && !it->skipped;
    it->buf = it->map ? g_mapped_file_get_contents (it->map) : NULL;
    it->len = it->map ? g_mapped_file_get_length (it->map) : 0;
    if (!it->buf)
      it->buf = "";
  }
  if (it->unreadable)
    eb_stats_add_result (b->stats, NULL);
  else if (!it->skipped)
    plan_item (it, b);
  g_mutex_lock (&b->lock);
  it->finished = TRUE;
  b->done++;
  b->bytes_done += it->len;
  if (b->awaited == it)   /* wake the calling thread only when it waits for this one */
    g_cond_signal (&b->cond);
  g_mutex_unlock (&b->lock);
}

struct Run {
  EbBatch     *b;
  const char  *path;
  guint        n;             /* messages, or 0 while unknown */
  Item      *(*make) (Run *run, guint i);   /* NULL: no more */
  void       (*consume) (Run *run, Item *it);
  guint64      total_bytes;   /* 0 while unknown */
  /* an mbox */
  const char  *buf;
  gsize        len;
  int          in_fd, out_fd;
  gsize        out_pos;       /* bytes of the new mbox handed to the writer */
  GThread     *writer;        /* writes the new mbox, in the order given */
  GAsyncQueue *jobs;          /* (element-type Job) for the writer */
  GMutex       wlock;
  GCond        wcond;         /* signalled when the writer is done with bytes */
  gsize        pending;       /* bytes of changed messages handed to it, not yet written */
  int          write_errno;   /* the writer's first error (read after it is joined) */
  GArray      *msgs;          /* split beforehand (for the progress), or NULL */
  EbMboxIter   iter;          /* counts the messages of a mailbox never read */
  /* else split by the workers as the run goes: */
  GThreadPool *pool;
  GQueue       scans;         /* (element-type Scan) pushed, in order, not yet taken */
  gsize        scan_pos;      /* where the next scan starts */
  GArray      *seps;          /* (element-type gsize) From_ lines found, from seps_head on */
  guint        seps_head;
  GArray      *hits;          /* (element-type gsize) "external-body" found, from hits_head on,
                                 or NULL: every message is planned by a worker */
  guint        hits_head;
  gsize        prev;          /* bytes of the input written (or passed) so far */
  gsize        released;      /* pages given back below this offset */
  gboolean     ok;
  gboolean     started;       /* the write function ran */
  gboolean     failed;        /* a message could not be written in memory */
  guint        changed;
  GError     **error;
  /* a Maildir */
  GPtrArray   *files;
  guint64      bytes_seen;
};

static void
progress (Run *r, gboolean final)
{
  EbBatch *b = r->b;
  if (!b->progress)
    return;
  g_mutex_lock (&b->lock);
  guint done = b->done;
  guint64 bytes = b->bytes_done;
  g_mutex_unlock (&b->lock);
  b->progress (done, r->n, bytes, final && !r->total_bytes ? r->bytes_seen : r->total_bytes,
               final, b->progress_data);
}

/* Every item of @r through the workers, in order, a window at a time. */
static void
run_pool (Run *r)
{
  EbBatch *b = r->b;
  guint window = eb_batch_window (b->jobs), pushed = 0, pooled = 0;
  guint ring_len = r->hits || b->store ? window * RING_SPREAD : window;
  guint64 span = 0;   /* bytes of the items made and not yet consumed */
  gboolean more = TRUE;
  g_autofree Item **ring = g_new0 (Item *, ring_len);
  b->done = 0;
  b->bytes_done = 0;
  GThreadPool *pool = g_thread_pool_new (work, b, (gint) b->jobs, TRUE, NULL);
  r->pool = pool;
  gint64 last = g_get_monotonic_time ();
  for (guint next = 0;; next++) {
    while (more && pushed - next < ring_len && pooled < window
           && (pushed == next || span < SPAN_MAX)) {
      Item *it = r->make (r, pushed);
      if (!it) {
        more = FALSE;
        break;
      }
      ring[pushed % ring_len] = it;
      span += it->len;
      if (!it->unmatched) {
        g_thread_pool_push (pool, it, NULL);
        pooled++;
      }
      pushed++;
    }
    if (next == pushed)
      break;
    Item *it = ring[next % ring_len];
    if (it->unmatched)
      plan_unmatched (it, b);
    else
      await (b, it, &it->finished);
    pooled -= !it->unmatched;
    span -= it->len;
    if (b->message && it->result)
      b->message (it->number, it->path ? it->path : r->path, it->offset, it->message_id,
                  it->result, b->message_data);
    r->consume (r, it);
    ring[next % ring_len] = NULL;
    item_free (it);
    if (b->progress && g_get_monotonic_time () - last > 200000) {
      progress (r, FALSE);
      last = g_get_monotonic_time ();
    }
  }
  g_thread_pool_free (pool, FALSE, TRUE);
  r->pool = NULL;
  r->n = pushed;
  progress (r, TRUE);
}

/* ---- mbox ------------------------------------------------------------------ */

static void
set_write_error (GError **error, int e)
{
  g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot write: %s", g_strerror (e));
}

/* Write @n bytes at @p to @fd at @off; 0 or the error number. */
static int
pwrite_all (int fd, const void *p, gsize n, gsize off)
{
  const char *c = p;
  while (n) {
    ssize_t w = pwrite (fd, c, n, (off_t) off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return w < 0 ? errno : ENOSPC;
    c += w;
    n -= (gsize) w;
    off += (gsize) w;
  }
  return 0;
}

/* Copy @n bytes at @in_off of @in_fd to @out_fd at @out_off in the kernel
 * (copy_file_range), falling back to pwrite() from the mapping @buf; 0 or the
 * error number. */
static int
copy_at (int in_fd, const char *buf, gsize in_off, gsize n, int out_fd, gsize out_off)
{
  loff_t io = (loff_t) in_off, oo = (loff_t) out_off;
  while (n > 0) {
    ssize_t c = copy_file_range (in_fd, &io, out_fd, &oo, n, 0);
    if (c < 0 && errno == EINTR)
      continue;
    if (c <= 0)
      return pwrite_all (out_fd, buf + io, n, (gsize) oo);
    n -= (gsize) c;
  }
  return 0;
}

/* What the writer is given: a stretch of the mbox to copy (@data NULL), bytes
 * to write, or (@end) nothing more. */
typedef struct {
  gsize     in_off, out_off, n;
  GBytes   *data;
  gboolean  end;
} Job;

static gpointer
writer_main (gpointer data)
{
  Run *r = data;
  for (;;) {
    Job *j = g_async_queue_pop (r->jobs);
    if (j->end) {
      g_free (j);
      break;
    }
    int e = 0;
    if (r->write_errno) {
      /* failed: nothing more is written, what waits is let go */
    } else if (j->data) {
      e = pwrite_all (r->out_fd, g_bytes_get_data (j->data, NULL), j->n, j->out_off);
    } else {
      e = copy_at (r->in_fd, r->buf, j->in_off, j->n, r->out_fd, j->out_off);
      /* copied only once a message changed: the mailbox is being replaced,
       * and the pages copied are not needed again (dropped now, not all at
       * once when the old file goes) */
      posix_fadvise (r->in_fd, (off_t) j->in_off, (off_t) j->n, POSIX_FADV_DONTNEED);
    }
    if (e && !r->write_errno)
      r->write_errno = e;
    if (j->data) {
      g_mutex_lock (&r->wlock);
      r->pending -= j->n;
      g_cond_signal (&r->wcond);
      g_mutex_unlock (&r->wlock);
      g_bytes_unref (j->data);
    }
    g_free (j);
  }
  return NULL;
}

static void
writer_start (Run *r)
{
  r->jobs = g_async_queue_new ();
  g_mutex_init (&r->wlock);
  g_cond_init (&r->wcond);
  r->writer = g_thread_new ("eb-mbox-writer", writer_main, r);
}

/* Wait for the writer to finish what it was given. FALSE (and @error) when
 * something could not be written. */
static gboolean
writer_finish (Run *r, GError **error)
{
  Job *j = g_new0 (Job, 1);
  j->end = TRUE;
  g_async_queue_push (r->jobs, j);
  g_thread_join (r->writer);
  r->writer = NULL;
  g_async_queue_unref (r->jobs);
  g_mutex_clear (&r->wlock);
  g_cond_clear (&r->wcond);
  if (r->write_errno) {
    set_write_error (error, r->write_errno);
    return FALSE;
  }
  return TRUE;
}

/* Append @bytes to the new mbox (the writer writes them; at most
 * PENDING_MAX bytes wait for it). */
static void
emit (Run *r, GBytes *bytes)
{
  gsize n = g_bytes_get_size (bytes);
  if (n == 0)
    return;
  g_mutex_lock (&r->wlock);
  while (r->pending > 0 && r->pending + n > PENDING_MAX)
    g_cond_wait (&r->wcond, &r->wlock);
  r->pending += n;
  g_mutex_unlock (&r->wlock);
  Job *j = g_new0 (Job, 1);
  *j = (Job) { 0, r->out_pos, n, g_bytes_ref (bytes), FALSE };
  g_async_queue_push (r->jobs, j);
  r->out_pos += n;
}

/* Append the @n bytes of the mbox at @off to the new one (the writer copies
 * them, in stretches). */
static void
emit_copy (Run *r, gsize off, gsize n)
{
  for (gsize done = 0; done < n;) {
    gsize k = n - done > 2 * COPY_MIN ? COPY_MIN : n - done;
    Job *j = g_new0 (Job, 1);
    *j = (Job) { off + done, r->out_pos + done, k, NULL, FALSE };
    g_async_queue_push (r->jobs, j);
    done += k;
  }
  r->out_pos += n;
}

/* Give back the pages of [from, to) of the mapped mailbox: once a stretch is
 * written (or passed), it is not needed again, and memory stays flat however
 * large the mailbox. */
static void
release_pages (const char *base, gsize from, gsize to)
{
  gsize page = (gsize) sysconf (_SC_PAGESIZE);
  gsize a = (from + page - 1) / page * page, z = to / page * page;
  if (z > a)
    madvise ((void *) (base + a), z - a, MADV_DONTNEED);
}

/* The line ends that close @d: how many ("\n" or "\r\n" each, a run of them
 * making blank lines) and whether the last is CRLF. */
static guint
trailing_eols (const char *d, gsize len, gboolean *crlf)
{
  guint n = 0;
  *crlf = FALSE;
  while (len > 0 && d[len - 1] == '\n') {
    len--;
    gboolean cr = len > 0 && d[len - 1] == '\r';
    if (n == 0)
      *crlf = cr;
    len -= cr;
    n++;
  }
  return n;
}

/* A rewritten message ends with at least the line ends its original ended with:
 * in an mbox the blank line before the next From_ line is part of the framing,
 * and a top-level body replaced by data without a final newline would glue the
 * next message onto this one. */
static void
write_eols_after (Run *r, const char *orig, gsize orig_len, const char *out, gsize out_len)
{
  static const char crlf_s[] = "\r\n", lf_s[] = "\n";
  gboolean crlf = FALSE, out_crlf = FALSE;
  guint want = MIN (trailing_eols (orig, orig_len, &crlf), 2);   /* a line end, a blank line */
  guint have = trailing_eols (out, out_len, &out_crlf);
  for (; have < want; have++) {
    g_autoptr (GBytes) eol = crlf ? g_bytes_new_static (crlf_s, 2) : g_bytes_new_static (lf_s, 1);
    emit (r, eol);
  }
}

/* Give back the pages below @to, a few megabytes at a time: each madvise in
 * a threaded process costs every core a TLB flush. */
static void
release_upto (Run *r, gsize to)
{
  if (!r->len || to < r->released + (4 << 20))
    return;
  release_pages (r->buf, r->released, to);
  gsize page = (gsize) sysconf (_SC_PAGESIZE);
  r->released = to / page * page;
}

static void
scan_work (Scan *sc, EbBatch *b)
{
  const char *buf = b->scan_buf;
  /* looking for "external-body" too, the split reads the file: the pages of
   * the messages without it are never mapped (no faults, nothing to give
   * back); a read that fails falls back to the mapping */
  if (sc->hits && b->scan_fd >= 0) {
    if (eb_mbox_read_separators_and_hits (b->scan_fd, b->scan_len, sc->from, sc->to, sc->seps,
                                          sc->hits))
      goto done;
    g_array_set_size (sc->seps, 0);
    g_array_set_size (sc->hits, 0);
  }
#ifdef MADV_POPULATE_READ
  {
    /* the pages in one call, not a fault every few (an old kernel: faults) */
    gsize page = (gsize) sysconf (_SC_PAGESIZE), a = sc->from / page * page;
    madvise ((void *) (buf + a), sc->to - a, MADV_POPULATE_READ);
  }
#endif
  if (sc->hits)
    eb_mbox_find_separators_and_hits (buf, b->scan_len, sc->from, sc->to, sc->seps, sc->hits);
  else
    eb_mbox_find_separators (buf, b->scan_len, sc->from, sc->to, sc->seps);
done:
  g_mutex_lock (&b->lock);
  sc->finished = TRUE;
  if (b->awaited == sc)
    g_cond_signal (&b->cond);
  g_mutex_unlock (&b->lock);
}

static void
scan_free (Scan *sc)
{
  g_array_unref (sc->seps);
  if (sc->hits)
    g_array_unref (sc->hits);
  g_free (sc);
}

/* Keep SCAN_AHEAD scans handed out ahead of the messages (with one job, done
 * here: the calling thread would otherwise only wait). */
static void
scan_fill (Run *r)
{
  while (r->scan_pos < r->len && g_queue_get_length (&r->scans) < SCAN_AHEAD) {
    Scan *sc = g_new0 (Scan, 1);
    sc->kind = TASK_SCAN;
    sc->from = r->scan_pos;
    sc->to = r->len - sc->from > SCAN_CHUNK ? sc->from + SCAN_CHUNK : r->len;
    sc->seps = g_array_new (FALSE, FALSE, sizeof (gsize));
    sc->hits = r->hits ? g_array_new (FALSE, FALSE, sizeof (gsize)) : NULL;
    r->scan_pos = sc->to;
    g_queue_push_tail (&r->scans, sc);
    if (r->b->jobs > 1)
      g_thread_pool_push (r->pool, sc, NULL);
    else   /* one worker: the split runs here, beside it */
      scan_work (sc, r->b);
  }
}

/* Take the From_ lines of the oldest scan (waiting for it). FALSE: none left. */
static gboolean
scan_take (Run *r)
{
  scan_fill (r);
  Scan *sc = g_queue_pop_head (&r->scans);
  if (!sc)
    return FALSE;
  await (r->b, sc, &sc->finished);
  if (r->seps_head > 1024) {
    g_array_remove_range (r->seps, 0, r->seps_head);
    r->seps_head = 0;
  }
  g_array_append_vals (r->seps, sc->seps->data, sc->seps->len);
  if (r->hits) {
    if (r->hits_head > 1024) {
      g_array_remove_range (r->hits, 0, r->hits_head);
      r->hits_head = 0;
    }
    g_array_append_vals (r->hits, sc->hits->data, sc->hits->len);
  }
  scan_free (sc);
  scan_fill (r);
  return TRUE;
}

static Item *
mbox_make (Run *r, guint i)
{
  EbMboxMsg next;
  const EbMboxMsg *m = &next;
  if (r->msgs) {
    if (i >= r->msgs->len)
      return NULL;
    m = &g_array_index (r->msgs, EbMboxMsg, i);
  } else {   /* the next From_ line and the one after it (or the end) */
    while (r->seps->len - r->seps_head < 2 && scan_take (r))
      ;
    if (r->seps->len == r->seps_head)
      return NULL;
    next.from = g_array_index (r->seps, gsize, r->seps_head);
    next.end = r->seps->len - r->seps_head > 1 ? g_array_index (r->seps, gsize, r->seps_head + 1)
                                                : r->len;
    r->seps_head++;
    const char *nl = memchr (r->buf + next.from, '\n', r->len - next.from);
    next.start = nl ? (gsize) (nl - r->buf) + 1 : r->len;
  }
  Item *it = g_new0 (Item, 1);
  it->number = i + 1;
  it->buf = r->buf + m->start;
  it->len = m->end - m->start;
  it->offset = (gint64) m->from;
  if (r->hits) {   /* every "external-body" before the message's end has been found */
    while (r->hits_head < r->hits->len && g_array_index (r->hits, gsize, r->hits_head) < m->start)
      r->hits_head++;
    it->unmatched = r->hits_head == r->hits->len
                    || g_array_index (r->hits, gsize, r->hits_head) >= m->end;
    it->finished = it->unmatched;
  } else if (small_for_store (r->b, it->len)) {
    it->unmatched = TRUE;
    it->finished = TRUE;
  }
  return it;
}

/* Write @it (or its original bytes, in large stretches) to the new mbox. */
static void
mbox_consume (Run *r, Item *it)
{
  const EbMboxMsg mm = { (gsize) it->offset, (gsize) (it->buf - r->buf),
                         (gsize) (it->buf - r->buf) + it->len };
  const EbMboxMsg *m = &mm;
  r->failed |= it->failed;   /* left as it was */
  r->changed += it->changed;
  if (r->out_fd < 0) {   /* nothing is written: what is passed is not needed again */
    release_upto (r, m->end);
    return;
  }
  if (it->out) {
    if (r->ok) {   /* the first change copies every message before it */
      gsize len = 0;
      const char *d = g_bytes_get_data (it->out, &len);
      emit_copy (r, r->prev, m->start - r->prev);
      emit (r, it->out);
      write_eols_after (r, r->buf + m->start, m->end - m->start, d, len);
    }
    r->prev = m->end;
  } else if (r->ok && r->changed && m->end - r->prev >= COPY_MIN) {
    /* nothing is copied before the first change: a mailbox in which nothing
     * changes is read, never written */
    emit_copy (r, r->prev, m->end - r->prev);
    r->prev = m->end;
  }
  /* (before the first change nothing waits for the mapping's pages) */
  release_upto (r, r->changed ? MIN (r->prev, m->start) : m->end);
}

/* The EbWriteFunc of eb_replace_file (@fd -1: write nothing). */
static gboolean
mbox_stream (int fd, gpointer data, gboolean *changed, GError **error)
{
  Run *r = data;
  r->out_fd = fd;
  r->error = error;
  r->started = TRUE;
  r->ok = TRUE;
  if (fd >= 0)
    writer_start (r);
  run_pool (r);
  if (fd >= 0) {
    if (r->ok)
      emit_copy (r, r->prev, r->len - r->prev);
    if (!writer_finish (r, r->ok ? error : NULL))
      r->ok = FALSE;
  }
  *changed = r->changed > 0;
  return r->ok;
}

static gboolean
is_cantcreat (const GError *e)
{
  return g_error_matches (e, G_FILE_ERROR, G_FILE_ERROR_ACCES)
         || g_error_matches (e, G_FILE_ERROR, G_FILE_ERROR_PERM)
         || g_error_matches (e, G_FILE_ERROR, G_FILE_ERROR_ROFS);
}

gboolean
eb_batch_run_mbox (EbBatch *b, const char *path, GError **error)
{
  g_return_val_if_fail (b != NULL && path != NULL, FALSE);
  run_start (b);
  gboolean writing = b->mode == EB_BATCH_REWRITE, inspect = b->mode == EB_BATCH_INSPECT;
  /* not through a symbolic link: the rename would replace the link, not the
   * mailbox; and never a FIFO or a device (O_NONBLOCK: open does not wait) */
  int fd = open (path, (writing ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    struct stat lst;
    if (e == ELOOP)
      failf (b, EB_BATCH_ERROR_NOINPUT,
             "cannot open %s: a symbolic link, not followed (name the mailbox itself)", path);
    else if (!inspect && (e == EACCES || e == EPERM || e == EROFS || e == ETXTBSY)
             && lstat (path, &lst) == 0 && S_ISREG (lst.st_mode))
      /* there, but not writable (permissions, read-only file system,
       * immutable): it cannot be replaced - sysexits' "cannot create" */
      failf (b, EB_BATCH_ERROR_CANTCREAT, "cannot write %s: %s (the mailbox is unchanged)", path,
             g_strerror (e));
    else
      failf (b, EB_BATCH_ERROR_NOINPUT, "cannot open %s: %s", path, g_strerror (e));
    return run_end (b, error);
  }
  struct stat st;
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode)) {
    failf (b, EB_BATCH_ERROR_NOINPUT, "cannot open %s: not a regular file", path);
    close (fd);
    return run_end (b, error);
  }
  if (!inspect && st.st_nlink > 1) {
    /* renaming the new mbox over this name would leave the other names
     * holding the old one: the link silently broken */
    failf (b, EB_BATCH_ERROR_CANTCREAT,
           "skipped %s: hard-linked (%lu names; the others would keep the old mailbox); "
           "the mailbox is unchanged", path, (unsigned long) st.st_nlink);
    close (fd);
    return run_end (b, error);
  }
  g_autoptr (GError) local = NULL;
  EbMboxLock *lock = writing ? eb_mbox_lock (path, fd, b->config->lock_timeout, &local) : NULL;
  if (writing && !lock) {
    /* a lock file that cannot be created beside it: neither could the new mbox */
    failf (b, is_cantcreat (local) ? EB_BATCH_ERROR_CANTCREAT : EB_BATCH_ERROR_TEMPFAIL,
           "%s (the mailbox is unchanged)", local->message);
    close (fd);
    return run_end (b, error);
  }
  if (lock)
    eb_mbox_remove_stale (path);
  g_autoptr (GMappedFile) mf = st.st_size > 0 ? g_mapped_file_new_from_fd (fd, FALSE, &local) : NULL;
  if (st.st_size > 0 && !mf) {
    failf (b, EB_BATCH_ERROR_IOERR, "cannot read %s: %s", path, local->message);
    eb_mbox_unlock (lock);
    close (fd);
    return run_end (b, error);
  }
  const char *buf = mf ? g_mapped_file_get_contents (mf) : NULL;
  gsize len = mf ? g_mapped_file_get_length (mf) : 0;
  if (!buf)
    len = 0;
  if (len > 0 && (len < 5 || memcmp (buf, "From ", 5) != 0)) {
    failf (b, EB_BATCH_ERROR_DATAERR, "%s: not an mbox (it does not start with a From_ line)%s",
           path, inspect ? "" : "; unchanged");
    eb_mbox_unlock (lock);
    close (fd);
    return run_end (b, error);
  }
  /* memory stays flat however large the mailbox: each message gives its pages
   * back once passed. The messages are found as the run goes (the split runs
   * beside the workers, each page read once) unless a progress bar needs
   * their number first. */
  g_autoptr (GArray) msgs = NULL;
  if (b->progress)
    msgs = len ? eb_mbox_split_mapped (buf, len) : eb_mbox_split ("", 0);
  Run r = { .b = b, .path = path, .n = msgs ? msgs->len : 0, .make = mbox_make,
            .consume = mbox_consume, .total_bytes = len, .buf = len ? buf : "", .len = len,
            .in_fd = fd, .out_fd = -1, .msgs = msgs };
  g_queue_init (&r.scans);
  r.seps = g_array_new (FALSE, FALSE, sizeof (gsize));
  /* the split looks for "external-body" too, as the pre-check would, and a
   * message without it takes no worker (not with a test's work hook, which
   * sees every message) */
  if (!msgs && !b->hook && !b->store && !(b->flags & (EB_REWRITE_NO_PRECHECK | EB_REWRITE_STRIP_TRACE)))
    r.hits = g_array_new (FALSE, FALSE, sizeof (gsize));
  b->scan_buf = r.buf;
  b->scan_len = len;
  b->scan_fd = fd;
  eb_mbox_iter_init (&r.iter, r.buf, len);
  b->mbox = TRUE;
  if (!writing) {
    gboolean changed = FALSE;
    mbox_stream (-1, &r, &changed, NULL);
    eb_stats_add_changed (b->stats, r.changed);
  } else if (!eb_replace_file (path, fd, b->backup, mbox_stream, &r, &local)) {
    if (g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_AGAIN))
      failf (b, EB_BATCH_ERROR_TEMPFAIL, "%s (the mailbox is as that writer left it; run again)",
             local->message);
    else
      /* its directory not writable, a read-only file system: cannot create */
      failf (b, is_cantcreat (local) ? EB_BATCH_ERROR_CANTCREAT : EB_BATCH_ERROR_IOERR,
             "%s: %s (the mailbox is unchanged)", path, local->message);
    /* nothing changed; a mailbox never read still counts its messages */
    EbMboxMsg m;
    while (!r.started && eb_mbox_iter_next (&r.iter, &m))
      eb_stats_add_result (b->stats, NULL);
  } else {
    eb_stats_add_changed (b->stats, r.changed);
  }
  if (r.failed)   /* told by no line, as ever; practically never */
    fail (b, EB_BATCH_ERROR_IOERR, TRUE, NULL);
  b->complete = TRUE;
  g_array_unref (r.seps);
  if (r.hits)
    g_array_unref (r.hits);
  b->scan_buf = NULL;
  eb_mbox_unlock (lock);
  close (fd);
  return run_end (b, error);
}

/* ---- Maildir --------------------------------------------------------------- */

static Item *
maildir_make (Run *r, guint i)
{
  if (i >= r->files->len)
    return NULL;
  Item *it = g_new0 (Item, 1);
  it->number = i + 1;
  it->path = g_strdup (g_ptr_array_index (r->files, i));
  it->offset = -1;
  return it;
}

/* Replace @it's file when it changed; tell what could not be done. */
static void
maildir_consume (Run *r, Item *it)
{
  EbBatch *b = r->b;
  if (it->unreadable)
    failv (b, EB_BATCH_ERROR_IOERR, FALSE, "cannot read %s", it->path);
  if (it->skipped) {
    notice (b, "skipped %s: %s", it->path, it->skipped);
    eb_stats_add_skipped (b->stats);
  }
  r->bytes_seen += it->len;
  if (it->out && b->mode == EB_BATCH_REWRITE) {
    gsize len = 0;
    const char *d = g_bytes_get_data (it->out, &len);
    g_autofree char *np = NULL;
    g_autoptr (GError) e = NULL;
    if (!eb_maildir_replace (it->path, d, len, &np, &e)) {
      it->changed = FALSE;
      if (g_error_matches (e, G_FILE_ERROR, G_FILE_ERROR_AGAIN))
        failf (b, EB_BATCH_ERROR_TEMPFAIL, "%s (left as the mail reader left it; run again)",
               e->message);
      else
        failv (b, EB_BATCH_ERROR_IOERR, FALSE, "%s (the message is unchanged)", e->message);
    }
  }
  r->failed |= it->failed;
  if (it->changed)
    eb_stats_add_changed (b->stats, 1);
}

gboolean
eb_batch_run_maildir (EbBatch *b, const char *path, GError **error)
{
  g_return_val_if_fail (b != NULL && path != NULL, FALSE);
  run_start (b);
  /* the Maildir named: cur/, new/ and tmp/ there and open to us, or one line
   * saying which is missing or not permitted */
  g_autofree char *problem = eb_maildir_problem (path);
  if (problem) {
    failf (b, EB_BATCH_ERROR_NOINPUT, "%s", problem);
    return run_end (b, error);
  }
  g_autoptr (GError) local = NULL;
  g_autoptr (GPtrArray) skips = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) files = eb_maildir_list_full (path, b->recursive, skips, &local);
  if (!files) {
    failf (b, EB_BATCH_ERROR_NOINPUT, "%s", local->message);
    return run_end (b, error);
  }
  for (guint i = 0; i < skips->len; i++) {   /* "PATH: why", in order */
    notice (b, "skipped %s", (char *) g_ptr_array_index (skips, i));
    eb_stats_add_skipped (b->stats);
  }
  Run r = { .b = b, .path = path, .n = files->len, .make = maildir_make,
            .consume = maildir_consume, .files = files, .ok = TRUE };
  b->mbox = FALSE;
  run_pool (&r);
  if (r.failed)   /* told by no line, as ever; practically never */
    fail (b, EB_BATCH_ERROR_IOERR, TRUE, NULL);
  b->complete = TRUE;
  return run_end (b, error);
}
