/* extbody - resolve message/external-body references in mail.
 *
 *   extbody rewrite [-c FILE] [-o KEY=VALUE] [--report] [FILE]
 *   extbody inspect [-c FILE] [-o KEY=VALUE] [--json] FILE...
 *   extbody data-url [--json] [--type] URL|-
 *   extbody config [-c FILE] [-o KEY=VALUE] [--defaults]
 *
 * Exit codes follow sysexits(3); see extbody(1).
 */
#include <gio/gio.h>
#include <gio/gunixoutputstream.h>
#include <gmime/gmime.h>
#include <curl/curl.h>
#include <json-glib/json-glib.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "eb-config.h"
#include "eb-dataurl.h"
#include "eb-error.h"
#include "eb-fetch.h"
#include "eb-inspect.h"
#include "eb-mailbox.h"
#include "eb-header.h"
#include "eb-log.h"
#include "eb-rewrite.h"

static const char *prog = "extbody";

static void G_GNUC_PRINTF (1, 2)
die_line (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  fprintf (stderr, "%s: %s\n", prog, msg);
}

/* All of @path ("-" or NULL: standard input). A regular file is mapped, not
 * copied; anything else is read to its end. Errors: G_FILE_ERROR. */
static GBytes *
read_all (const char *path, GError **error)
{
  int fd = 0;
  gboolean is_stdin = !path || strcmp (path, "-") == 0;
  const char *name = is_stdin ? "standard input" : path;
  if (!is_stdin) {
    fd = open (path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot open %s: %s",
                   path, g_strerror (e));
      return NULL;
    }
  }
  struct stat st;
  if (fstat (fd, &st) == 0 && S_ISREG (st.st_mode) && st.st_size > 0) {
    g_autoptr (GError) local = NULL;
    GMappedFile *mf = g_mapped_file_new_from_fd (fd, FALSE, &local);
    if (mf) {
      GBytes *b = g_mapped_file_get_bytes (mf);
      g_mapped_file_unref (mf);
      if (!is_stdin)
        close (fd);
      return b;
    }
  }
  GByteArray *a = g_byte_array_sized_new (65536);
  for (;;) {
    if (a->len > G_MAXUINT - 65536) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC, "%s: input larger than 4 GiB", name);
      g_byte_array_unref (a);
      if (!is_stdin)
        close (fd);
      return NULL;
    }
    gsize room = MAX ((gsize) 65536, (gsize) a->len);
    room = MIN (room, (gsize) (G_MAXUINT - a->len));
    guint old = a->len;
    g_byte_array_set_size (a, old + (guint) room);
    ssize_t n = read (fd, a->data + old, room);
    int e = errno;
    g_byte_array_set_size (a, old + (guint) MAX (n, 0));
    if (n < 0 && e == EINTR)
      continue;
    if (n < 0) {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot read %s: %s", name,
                   g_strerror (e));
      g_byte_array_unref (a);
      if (!is_stdin)
        close (fd);
      return NULL;
    }
    if (n == 0)
      break;
  }
  if (!is_stdin)
    close (fd);
  return g_byte_array_free_to_bytes (a);
}

static int
exit_for_read_error (const GError *e)
{
  if (e->domain == G_FILE_ERROR
      && (e->code == G_FILE_ERROR_NOENT || e->code == G_FILE_ERROR_ACCES
          || e->code == G_FILE_ERROR_ISDIR || e->code == G_FILE_ERROR_NOTDIR
          || e->code == G_FILE_ERROR_PERM))
    return EX_NOINPUT;
  return EX_IOERR;
}

/* Options every subcommand that reads mail shares. */
static char *opt_config = NULL;
static char **opt_set = NULL;
static char **opt_allow_network = NULL;
static gboolean opt_no_precheck = FALSE;
static gboolean opt_fetch = FALSE;

static GOptionEntry config_entries[] = {
  { "config", 'c', 0, G_OPTION_ARG_FILENAME, &opt_config,
    "Configuration file (default " EB_CONFIG_DEFAULT_PATH "; absent is fine)", "FILE" },
  { "set", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &opt_set,
    "Override one configuration key (repeatable)", "KEY=VALUE" },
  { "allow-network", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_allow_network,
    "Add a CIDR block to allow_networks (repeatable)", "CIDR" },
  { "fetch", 0, 0, G_OPTION_ARG_NONE, &opt_fetch,
    "Fetch http, https and ftp references (fetch = on; off by default: a fetch tells the URL's owner)", NULL },
  { NULL }
};

static EbConfig *
load_config (int *status)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GError) error = NULL;
  const char *path = opt_config ? opt_config : EB_CONFIG_DEFAULT_PATH;
  if (!eb_config_load_file (config, path, opt_config == NULL, &error)) {
    die_line ("%s", error->message);
    *status = EX_CONFIG;
    return NULL;
  }
  for (guint i = 0; opt_set && opt_set[i]; i++) {
    if (!eb_config_apply_option (config, opt_set[i], &error)) {
      die_line ("%s", error->message);
      *status = g_error_matches (error, EB_ERROR, EB_ERROR_SYNTAX) ? EX_USAGE : EX_CONFIG;
      return NULL;
    }
  }
  if (!eb_config_add_networks (config, (const char *const *) opt_allow_network, &error)) {
    die_line ("%s", error->message);
    *status = EX_CONFIG;
    return NULL;
  }
  if (opt_fetch)
    config->fetch = TRUE;
  return g_steal_pointer (&config);
}

/* The fetcher for @config, or NULL when fetching is off; *status set on error. */
static EbFetcher *
make_fetcher (const EbConfig *config, int *status)
{
  if (!config->fetch)
    return NULL;
  g_autoptr (GError) error = NULL;
  EbFetcher *f = eb_fetcher_new (config, &error);
  if (!f) {
    die_line ("%s", error->message);
    *status = EX_CONFIG;
  }
  return f;
}

static GOptionContext *
new_context (const char *params, const char *summary, GOptionEntry *entries, gboolean with_config)
{
  GOptionContext *ctx = g_option_context_new (params);
  g_option_context_set_summary (ctx, summary);
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (with_config) {
    GOptionGroup *g = g_option_group_new ("config", "Configuration options:",
                                          "Show configuration options", NULL, NULL);
    g_option_group_add_entries (g, config_entries);
    g_option_context_add_group (ctx, g);
  }
  return ctx;
}

static gboolean
parse_options (GOptionContext *ctx, int *argc, char ***argv, int *status)
{
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, argc, argv, &error)) {
    die_line ("%s (try --help)", error->message);
    *status = EX_USAGE;
    return FALSE;
  }
  return TRUE;
}


/* ---- mailboxes ----------------------------------------------------------- */

typedef struct {
  const char *buf;        /* the message */
  gsize       len;
  char       *label;      /* file name, or mbox offset */
  GBytes     *out;        /* the rewritten message when changed */
  guint       n_refs, n_resolved;
  GHashTable *left;       /* token -> count (shared, locked) */
  gboolean    failed;
  const char *skipped;    /* why a Maildir entry is not processed, or NULL */
  gboolean    finished;   /* set (under the batch lock) when processed */
  GMappedFile *map;       /* a Maildir file, mapped by the worker */
  gboolean    changed;    /* kept after the output is written and freed */
} Item;

typedef struct {
  const EbConfig *config;
  EbFetcher      *fetcher;
  GMutex          lock;
  GCond           cond;   /* signalled when an item is done */
  guint           done;
  guint64         bytes_done;
  GHashTable     *left;   /* reason token -> count */
  gboolean        mbox;   /* the messages are written into an mbox */
} Batch;

/* @msg without its top-level Content-Length: field (and its continuation
 * lines). Some mbox writers give the body length there; after a rewrite it
 * would be wrong, and readers that believe it would cut the message or glue
 * the next one on. It is removed rather than updated: what the old value
 * counted (with or without the blank separator line, LF or CRLF) depends on
 * the program that wrote it, and readers that find none split at From_ lines.
 * Returns: (transfer full): @msg itself when it has none. */
static GBytes *
drop_content_length (GBytes *msg)
{
  gsize len = 0;
  const char *d = g_bytes_get_data (msg, &len);
  GByteArray *a = NULL;   /* made at the first such field: one pass, however many */
  gsize p = 0, kept = 0;
  while (p < len) {
    const char *nl = memchr (d + p, '\n', len - p);
    gsize e = nl ? (gsize) (nl - d) + 1 : len;
    if (e - p <= 2 && (d[p] == '\n' || (d[p] == '\r' && e - p == 2)))
      break;   /* the end of the header */
    if (e - p >= 15 && g_ascii_strncasecmp (d + p, "Content-Length:", 15) == 0) {
      while (e < len && (d[e] == ' ' || d[e] == '\t')) {   /* and its continuation lines */
        const char *n2 = memchr (d + e, '\n', len - e);
        e = n2 ? (gsize) (n2 - d) + 1 : len;
      }
      if (!a)
        a = g_byte_array_sized_new ((guint) MIN (len, G_MAXUINT));
      g_byte_array_append (a, (const guint8 *) d + kept, (guint) (p - kept));
      kept = e;
    }
    p = e;
  }
  if (!a)
    return g_bytes_ref (msg);
  g_byte_array_append (a, (const guint8 *) d + kept, (guint) (len - kept));
  return g_byte_array_free_to_bytes (a);
}

/* Plan @it and, when it changes, write the new message in memory; count the
 * references left by reason. */
static void
plan_item (Item *it, Batch *b)
{
  /* plan first: only a message that changes is written out (in memory) */
  g_autoptr (EbRewriteResult) r = eb_rewrite_plan (it->buf, it->len, b->config, b->fetcher,
                                                   EB_REWRITE_DEFAULT);
  it->n_refs = r->scan ? r->scan->refs->len : 0;
  it->n_resolved = r->n_resolved;
  if (r->changed) {
    g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
    if (b->mbox ? eb_rewrite_write_mboxrd (r, it->buf, it->len, out, NULL)
                : eb_rewrite_write (r, it->buf, it->len, out, NULL)) {
      g_output_stream_close (out, NULL, NULL);
      g_autoptr (GBytes) full = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
      it->out = drop_content_length (full);
    } else {
      it->failed = TRUE;
    }
  }
  g_mutex_lock (&b->lock);
  if (!r->scan && r->reason != EB_REASON_RESOLVED) {   /* not even parsed: too large */
    const char *t = eb_reason_token (r->reason);
    g_hash_table_insert (b->left, (gpointer) t,
                         GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (b->left, t)) + 1));
  }
  for (guint i = 0; r && r->scan && i < r->scan->refs->len; i++) {
    const EbResolution *res = g_ptr_array_index (r->resolutions, i);
    if (res->reason != EB_REASON_RESOLVED) {
      const char *t = eb_reason_token (res->reason);
      g_hash_table_insert (b->left, (gpointer) t,
                           GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (b->left, t)) + 1));
    }
  }
  g_mutex_unlock (&b->lock);
}

static void
batch_work (gpointer data, gpointer user)
{
  Item *it = data;
  Batch *b = user;
  if (!it->buf && !it->skipped) {   /* a Maildir file: mapped here, released by the writer */
    it->map = eb_maildir_map_entry (it->label, &it->skipped);
    struct stat st;
    if (it->map && lstat (it->label, &st) == 0 && st.st_nlink > 1) {
      /* another name for the same file: replacing this one would leave the
       * other holding the old message, and silently split the two */
      it->skipped = "hard-linked (a second name would keep the old message)";
      g_clear_pointer (&it->map, g_mapped_file_unref);
    }
    it->buf = it->map ? g_mapped_file_get_contents (it->map) : NULL;
    it->len = it->map ? g_mapped_file_get_length (it->map) : 0;
    if (!it->map && !it->skipped)
      it->failed = TRUE;
    if (!it->buf)
      it->buf = "";
  }
  if (!it->skipped)
    plan_item (it, b);
  g_mutex_lock (&b->lock);
  it->changed = it->out != NULL;
  it->finished = TRUE;
  b->done++;
  b->bytes_done += it->len;
  g_cond_broadcast (&b->cond);
  g_mutex_unlock (&b->lock);
}

static void
progress_line (Batch *b, guint total, guint64 total_bytes, gint64 t0, gboolean final)
{
  g_mutex_lock (&b->lock);
  guint done = b->done;
  guint64 bytes = b->bytes_done;
  g_mutex_unlock (&b->lock);
  double secs = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  double rate = secs > 0 ? done / secs : 0;
  double left = rate > 0 ? (total - done) / rate : 0;
  int width = 24, fill = total ? (int) ((guint64) width * done / total) : width;
  fprintf (stderr, "\r[%.*s%*s] %u/%u messages, %.1f/%.1f MB, %.0f msg/s, %.0f s left ",
           fill, "########################", width - fill, "", done, total, bytes / 1e6,
           total_bytes / 1e6, rate, left);
  if (final)
    fputc ('\n', stderr);
  fflush (stderr);
}

static gint
cmp_left (gconstpointer a, gconstpointer b, gpointer counts)
{
  const char *x = *(const char *const *) a, *y = *(const char *const *) b;
  guint cx = GPOINTER_TO_UINT (g_hash_table_lookup (counts, x));
  guint cy = GPOINTER_TO_UINT (g_hash_table_lookup (counts, y));
  return cx != cy ? (cx > cy ? -1 : 1) : strcmp (x, y);
}

static void
batch_summary (Batch *b, GPtrArray *items, gboolean dry_run)
{
  guint refs = 0, resolved = 0, changed = 0, skipped = 0;
  for (guint i = 0; i < items->len; i++) {
    Item *it = g_ptr_array_index (items, i);
    skipped += it->skipped != NULL;
    refs += it->n_refs;
    resolved += it->n_resolved;
    changed += it->changed;
  }
  /* left by reason, most first; where a configuration key decides, its name */
  static const struct { const char *token, *hint; } hints[] = {
    { "rate-limited", "raise max_requests_per_host" }, { "fetch-off", "fetch = on" },
    { "local-file-dirs", "set local_file_dirs" }, { "message-budget", "raise max_message_bytes" },
    { "part-too-large", "raise max_part_bytes" }, { "size-too-large", "raise max_part_bytes" },
    { "too-many-refs", "raise max_references" }, { "too-deep", "raise max_nesting_depth" },
    { "too-many-parts", "raise max_parts" }, { "message-too-large", "raise max_message_size" },
    { "timed-out", "raise fetch_timeout or message_deadline" },
  };
  g_autoptr (GPtrArray) keys = g_ptr_array_new ();
  GHashTableIter hi;
  gpointer k0;
  g_hash_table_iter_init (&hi, b->left);
  while (g_hash_table_iter_next (&hi, &k0, NULL))
    g_ptr_array_add (keys, k0);
  g_ptr_array_sort_with_data (keys, cmp_left, b->left);
  GString *left = g_string_new (NULL);
  for (guint i = 0; i < keys->len; i++) {
    const char *k = g_ptr_array_index (keys, i);
    g_string_append_printf (left, "%s%s %u", left->len ? ", " : "", k,
                            GPOINTER_TO_UINT (g_hash_table_lookup (b->left, k)));
    for (guint h = 0; h < G_N_ELEMENTS (hints); h++)
      if (strcmp (hints[h].token, k) == 0)
        g_string_append_printf (left, " (%s)", hints[h].hint);
  }
  g_autofree char *skips = skipped ? g_strdup_printf (" (%u entries skipped)", skipped) : g_strdup ("");
  fprintf (stderr, "%s: %u messages scanned%s, %u references, %u resolved, %u messages %s%s%s\n", prog,
           items->len - skipped, skips, refs, resolved, changed, dry_run ? "would change" : "changed",
           left->len ? "; left: " : "", left->str);
  g_string_free (left, TRUE);
}

static void
item_free (Item *it)
{
  if (it->map)
    g_mapped_file_unref (it->map);
  g_free (it->label);
  if (it->out)
    g_bytes_unref (it->out);
  g_free (it);
}

static gboolean
write_all_fd (int fd, const void *p, gsize n, GError **error)
{
  const char *c = p;
  while (n) {
    ssize_t w = write (fd, c, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      int e = w < 0 ? errno : ENOSPC;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot write: %s", g_strerror (e));
      return FALSE;
    }
    c += w;
    n -= (gsize) w;
  }
  return TRUE;
}

/* Copy @n bytes at @off of @in_fd to @out_fd in the kernel (copy_file_range),
 * falling back to write() from the mapping @buf. */
static gboolean
copy_range (int in_fd, const char *buf, gsize off, gsize n, int out_fd, GError **error)
{
  loff_t o = (loff_t) off;
  while (n > 0) {
    ssize_t c = copy_file_range (in_fd, &o, out_fd, NULL, n, 0);
    if (c < 0 && errno == EINTR)
      continue;
    if (c <= 0)
      return write_all_fd (out_fd, buf + o, n, error);
    n -= (gsize) c;
  }
  return TRUE;
}

typedef struct {
  const char *buf;
  gsize       len;
  int         in_fd;
  GArray     *msgs;
  GPtrArray  *items;
  Batch      *batch;
  guint       jobs;
  gboolean    progress;
  gboolean    dry_run;
} MboxRun;

/* Give back the pages of [from, to) of the mapped mailbox: once a stretch is
 * written, it is not needed again, and memory stays flat however large the
 * mailbox. */
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
static gboolean
write_eols_after (int fd, const char *orig, gsize orig_len, const char *out, gsize out_len,
                  GError **error)
{
  gboolean crlf = FALSE, out_crlf = FALSE;
  guint want = MIN (trailing_eols (orig, orig_len, &crlf), 2);   /* a line end, a blank line */
  guint have = trailing_eols (out, out_len, &out_crlf);
  for (; have < want; have++)
    if (!write_all_fd (fd, crlf ? "\r\n" : "\n", crlf ? 2 : 1, error))
      return FALSE;
  return TRUE;
}

/* Process the messages in order through the worker threads, at most a window
 * of them in flight, and write each one (or its original bytes) as soon as it
 * is the next; in a dry run nothing is written. */
static gboolean
mbox_stream (int fd, gpointer data, gboolean *changed, GError **error)
{
  MboxRun *w = data;
  Batch *b = w->batch;
  guint n = w->items->len, window = MAX (4 * w->jobs, 16);
  guint pushed = 0, next = 0;
  gsize prev = 0;      /* bytes of the input written (or passed) so far */
  gboolean any = FALSE, ok = TRUE;
  guint64 total_bytes = w->len;
  gint64 t0 = g_get_monotonic_time (), last = t0;
  GThreadPool *pool = g_thread_pool_new (batch_work, b, (gint) w->jobs, TRUE, NULL);
  while (next < n) {
    while (pushed < n && pushed - next < window)
      g_thread_pool_push (pool, g_ptr_array_index (w->items, pushed++), NULL);
    Item *it = g_ptr_array_index (w->items, next);
    g_mutex_lock (&b->lock);
    while (!it->finished)
      g_cond_wait_until (&b->cond, &b->lock, g_get_monotonic_time () + 200 * G_TIME_SPAN_MILLISECOND);
    g_mutex_unlock (&b->lock);
    const EbMboxMsg *m = &g_array_index (w->msgs, EbMboxMsg, next);
    if (it->out) {
      any = TRUE;
      if (ok && fd >= 0) {
        gsize len = 0;
        const char *d = g_bytes_get_data (it->out, &len);
        ok = copy_range (w->in_fd, w->buf, prev, m->start - prev, fd, error)
             && write_all_fd (fd, d, len, error)
             && write_eols_after (fd, w->buf + m->start, m->end - m->start, d, len, error);
      }
      prev = m->end;
      g_clear_pointer (&it->out, g_bytes_unref);
    } else if (ok && fd >= 0 && m->end - prev > (8 << 20)) {
      ok = copy_range (w->in_fd, w->buf, prev, m->end - prev, fd, error);
      prev = m->end;
    }
    release_pages (w->buf, 0, MIN (prev, m->start));
    next++;
    if (w->progress && g_get_monotonic_time () - last > 200000) {
      progress_line (b, n, total_bytes, t0, FALSE);
      last = g_get_monotonic_time ();
    }
  }
  g_thread_pool_free (pool, FALSE, TRUE);
  if (ok && fd >= 0)
    ok = copy_range (w->in_fd, w->buf, prev, w->len - prev, fd, error);
  if (w->progress)
    progress_line (b, n, total_bytes, t0, TRUE);
  *changed = any;
  return ok;
}

typedef enum { BOX_NONE, BOX_MBOX, BOX_MAILDIR } BoxKind;

/* rewrite (or, with @dry_run, only plan) every message of a mailbox. */
static int
rewrite_mailbox (const char *path, BoxKind kind, const EbConfig *config, EbFetcher *fetcher,
                 gboolean recursive, gboolean dry_run, const char *backup, guint jobs)
{
  Batch b = { config, fetcher };
  b.mbox = kind == BOX_MBOX;
  g_mutex_init (&b.lock);
  g_cond_init (&b.cond);
  b.left = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr (GPtrArray) items = g_ptr_array_new_with_free_func ((GDestroyNotify) item_free);
  gboolean progress = isatty (STDERR_FILENO);
  int status = 0;
  g_autoptr (GError) error = NULL;

  if (kind == BOX_MBOX) {
    /* not through a symbolic link: the rename would replace the link, not the
     * mailbox; and never a FIFO or a device (O_NONBLOCK: open does not wait) */
    int fd = open (path, (dry_run ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
      int e = errno;
      struct stat lst;
      if (e == ELOOP) {
        die_line ("cannot open %s: a symbolic link, not followed (name the mailbox itself)", path);
      } else if ((e == EACCES || e == EPERM || e == EROFS || e == ETXTBSY) && lstat (path, &lst) == 0
                 && S_ISREG (lst.st_mode)) {
        /* there, but not writable (permissions, read-only file system,
         * immutable): it cannot be replaced - sysexits' "cannot create" */
        die_line ("cannot write %s: %s (the mailbox is unchanged)", path, g_strerror (e));
        return EX_CANTCREAT;
      } else {
        die_line ("cannot open %s: %s", path, g_strerror (e));
      }
      return EX_NOINPUT;
    }
    struct stat st;
    if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode)) {
      die_line ("cannot open %s: not a regular file", path);
      close (fd);
      return EX_NOINPUT;
    }
    if (st.st_nlink > 1) {
      /* renaming the new mbox over this name would leave the other names
       * holding the old one: the link silently broken */
      die_line ("skipped %s: hard-linked (%lu names; the others would keep the old mailbox); "
                "the mailbox is unchanged", path, (unsigned long) st.st_nlink);
      close (fd);
      return EX_CANTCREAT;
    }
    EbMboxLock *lock = dry_run ? NULL : eb_mbox_lock (path, fd, config->lock_timeout, &error);
    if (!dry_run && !lock) {
      die_line ("%s (the mailbox is unchanged)", error->message);
      close (fd);
      /* a lock file that cannot be created beside it: neither could the new mbox */
      return g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_ACCES)
             || g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_PERM)
             || g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_ROFS) ? EX_CANTCREAT : EX_TEMPFAIL;
    }
    if (lock)
      eb_mbox_remove_stale (path);
    g_autoptr (GMappedFile) mf = g_mapped_file_new_from_fd (fd, FALSE, &error);
    if (!mf) {
      die_line ("cannot read %s: %s", path, error->message);
      eb_mbox_unlock (lock);
      close (fd);
      return EX_IOERR;
    }
    const char *buf = g_mapped_file_get_contents (mf);
    gsize len = g_mapped_file_get_length (mf);
    if (len > 0 && (len < 5 || memcmp (buf, "From ", 5) != 0)) {
      die_line ("%s: not an mbox (it does not start with a From_ line); unchanged", path);
      eb_mbox_unlock (lock);
      close (fd);
      return EX_DATAERR;
    }
    g_autoptr (GArray) msgs = buf ? eb_mbox_split_mapped (buf, len) : eb_mbox_split ("", 0);
    if (buf)
      release_pages (buf, 0, len);   /* what the split touched last comes back on demand */
    for (guint i = 0; i < msgs->len; i++) {
      const EbMboxMsg *m = &g_array_index (msgs, EbMboxMsg, i);
      Item *it = g_new0 (Item, 1);
      it->buf = buf + m->start;
      it->len = m->end - m->start;
      it->label = g_strdup_printf ("%s@%" G_GSIZE_FORMAT, path, m->from);
      g_ptr_array_add (items, it);
    }
    MboxRun w = { buf ? buf : "", len, fd, msgs, items, &b, MAX (jobs, 1), progress, dry_run };
    if (dry_run) {
      gboolean changed = FALSE;
      mbox_stream (-1, &w, &changed, NULL);
    } else if (!eb_replace_file (path, fd, backup, mbox_stream, &w, &error)) {
      if (g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_AGAIN)) {
        die_line ("%s (the mailbox is as that writer left it; run again)", error->message);
        status = EX_TEMPFAIL;
      } else {
        die_line ("%s: %s (the mailbox is unchanged)", path, error->message);
        /* its directory not writable, a read-only file system: cannot create */
        status = g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_ACCES)
                 || g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_PERM)
                 || g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_ROFS) ? EX_CANTCREAT : EX_IOERR;
      }
      for (guint i = 0; i < items->len; i++)   /* for the summary: nothing was */
        ((Item *) g_ptr_array_index (items, i))->changed = FALSE;
    }
    eb_mbox_unlock (lock);
    close (fd);
  } else {
    g_autoptr (GPtrArray) dirs_skipped = g_ptr_array_new_with_free_func (g_free);
    g_autoptr (GPtrArray) files = eb_maildir_list_full (path, recursive, dirs_skipped, &error);
    if (!files) {
      die_line ("%s", error->message);
      return EX_NOINPUT;
    }
    for (guint i = 0; i < dirs_skipped->len; i++) {   /* "PATH: why", reported in order */
      const char *line = g_ptr_array_index (dirs_skipped, i);
      const char *sep = g_strrstr (line, ": ");
      Item *it = g_new0 (Item, 1);
      it->label = g_strndup (line, (gsize) (sep - line));
      it->skipped = g_intern_string (sep + 2);
      g_ptr_array_add (items, it);
    }
    for (guint i = 0; i < files->len; i++) {
      Item *it = g_new0 (Item, 1);
      it->label = g_strdup (g_ptr_array_index (files, i));
      g_ptr_array_add (items, it);
    }
    /* in order through the workers, a window at a time; each changed message is
     * replaced as soon as it is done, and its memory given back */
    guint n = items->len, window = MAX (4 * MAX (jobs, 1), 16), pushed = 0;
    GThreadPool *pool = g_thread_pool_new (batch_work, &b, (gint) MAX (jobs, 1), TRUE, NULL);
    gint64 t0 = g_get_monotonic_time (), last = t0;
    guint64 total_bytes = 0;
    for (guint next = 0; next < n; next++) {
      while (pushed < n && pushed - next < window)
        g_thread_pool_push (pool, g_ptr_array_index (items, pushed++), NULL);
      Item *it = g_ptr_array_index (items, next);
      g_mutex_lock (&b.lock);
      while (!it->finished)
        g_cond_wait_until (&b.cond, &b.lock, g_get_monotonic_time () + 200 * G_TIME_SPAN_MILLISECOND);
      g_mutex_unlock (&b.lock);
      if (it->failed && !it->map) {
        die_line ("cannot read %s", it->label);
        status = EX_IOERR;
      }
      if (it->skipped)
        die_line ("skipped %s: %s", it->label, it->skipped);
      total_bytes += it->len;
      if (it->out && !dry_run) {
        gsize len = 0;
        const char *d = g_bytes_get_data (it->out, &len);
        g_autofree char *np = NULL;
        g_autoptr (GError) e = NULL;
        if (!eb_maildir_replace (it->label, d, len, &np, &e)) {
          it->changed = FALSE;
          if (g_error_matches (e, G_FILE_ERROR, G_FILE_ERROR_AGAIN)) {
            die_line ("%s (left as the mail reader left it; run again)", e->message);
            status = MAX (status, EX_TEMPFAIL);
          } else {
            die_line ("%s (the message is unchanged)", e->message);
            status = EX_IOERR;
          }
        }
      }
      g_clear_pointer (&it->out, g_bytes_unref);
      g_clear_pointer (&it->map, g_mapped_file_unref);
      it->buf = NULL;
      if (progress && g_get_monotonic_time () - last > 200000) {
        progress_line (&b, n, 0, t0, FALSE);
        last = g_get_monotonic_time ();
      }
    }
    g_thread_pool_free (pool, FALSE, TRUE);
    if (progress)
      progress_line (&b, n, total_bytes, t0, TRUE);
  }
  batch_summary (&b, items, dry_run);
  for (guint i = 0; i < items->len; i++)
    if (((Item *) g_ptr_array_index (items, i))->failed)
      status = MAX (status, EX_IOERR);
  g_hash_table_unref (b.left);
  g_mutex_clear (&b.lock);
  g_cond_clear (&b.cond);
  return status;
}

static void
on_stop_signal (int sig)
{
  eb_cleanup_run ();
  signal (sig, SIG_DFL);
  raise (sig);
}

/* ---- rewrite ---------------------------------------------------------- */

static int
cmd_rewrite (int argc, char **argv)
{
  gboolean report = FALSE, recursive = FALSE, dry_run = FALSE, filter = FALSE;
  char *mbox = NULL, *maildir = NULL, *backup = NULL;
  g_autofree char *log = NULL, *queue_id = NULL;
  int jobs = (int) g_get_num_processors ();
  GOptionEntry entries[] = {
    { "report", 0, 0, G_OPTION_ARG_NONE, &report,
      "Write one line per reference to standard error", NULL },
    { "mbox", 0, 0, G_OPTION_ARG_FILENAME, &mbox, "Rewrite the mbox FILE in place (locked, crash-safe)", "FILE" },
    { "maildir", 0, 0, G_OPTION_ARG_FILENAME, &maildir, "Rewrite the changed messages of the Maildir DIR", "DIR" },
    { "recursive", 'r', 0, G_OPTION_ARG_NONE, &recursive, "With a Maildir, its Maildir++ subfolders too", NULL },
    { "dry-run", 'n', 0, G_OPTION_ARG_NONE, &dry_run, "Report what would change; change nothing", NULL },
    { "backup", 0, 0, G_OPTION_ARG_STRING, &backup, "Keep the original mbox as FILE+SUFFIX", "SUFFIX" },
    { "jobs", 'j', 0, G_OPTION_ARG_INT, &jobs, "Messages processed at once (default: the number of cores)", "N" },
    { "filter", 0, 0, G_OPTION_ARG_NONE, &filter,
      "The message is mail in transit (extbody-pipe): with strip_trace_fields, remove the X-Extbody and X-Extbody-Resolved fields of its header; when something is resolved, add an X-Extbody field as the milter does", NULL },
    { "log", 0, 0, G_OPTION_ARG_STRING, &log,
      "Log the message and each reference as the milter does, to syslog (facility mail) or stderr (the journal when standard error is the journal)", "syslog|stderr" },
    { "queue-id", 0, 0, G_OPTION_ARG_STRING, &queue_id,
      "With --log: the MTA's queue id of the message, for the log", "ID" },
    { "no-precheck", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &opt_no_precheck,
      "Always do the MIME parse (for testing)", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = new_context ("[FILE]",
      "Resolve the external-body references of one message read from FILE (or standard\n"
      "input) and write the message to standard output. A message with nothing to\n"
      "resolve is written byte for byte as it was read; FILE itself is never changed,\n"
      "even when it starts with a \"From \" line. A mailbox is rewritten in place only\n"
      "when named with --mbox FILE or --maildir DIR.", entries, TRUE);
  int status = 0;
  if (!parse_options (ctx, &argc, &argv, &status))
    return status;
  if (argc > 2) {
    die_line ("rewrite takes at most one FILE (try --help)");
    return EX_USAGE;
  }
  g_autoptr (EbConfig) config = load_config (&status);
  if (!config)
    return status;
  g_autoptr (EbFetcher) fetcher = make_fetcher (config, &status);
  if (status)
    return status;

  const char *path = argc == 2 ? argv[1] : NULL;
  BoxKind kind = BOX_NONE;
  if (mbox || maildir) {
    if (path || (mbox && maildir)) {
      die_line ("give one FILE, --mbox FILE or --maildir DIR (try --help)");
      return EX_USAGE;
    }
    kind = mbox ? BOX_MBOX : BOX_MAILDIR;
    path = mbox ? mbox : maildir;
  }
  if (filter && kind != BOX_NONE) {
    die_line ("--filter goes with one message, not a mailbox (try --help)");
    return EX_USAGE;
  }
  EbLogTarget log_target = EB_LOG_STDERR;
  if (log && !eb_log_parse_target (log, &log_target)) {
    die_line ("--log takes syslog or stderr, not \"%s\" (try --help)", log);
    return EX_USAGE;
  }
  if ((log || queue_id) && kind != BOX_NONE) {
    die_line ("--%s goes with one message, not a mailbox (try --help)", log ? "log" : "queue-id");
    g_free (mbox);
    g_free (maildir);
    g_free (backup);
    return EX_USAGE;
  }
  if (log)
    eb_log_init (prog, log_target);
  if (kind == BOX_NONE && (backup || recursive || dry_run)) {
    die_line ("--%s goes with --mbox or --maildir (try --help)",
              backup ? "backup" : recursive ? "recursive" : "dry-run");
    return EX_USAGE;
  }
  if (kind != BOX_NONE) {
    if (backup && kind != BOX_MBOX) {
      die_line ("--backup goes with an mbox");
      return EX_USAGE;
    }
    g_autofree char *bk = backup ? g_strconcat (path, backup, NULL) : NULL;
    int rc = rewrite_mailbox (path, kind, config, fetcher, recursive, dry_run, bk,
                              (guint) CLAMP (jobs, 1, 256));
    g_free (mbox);
    g_free (maildir);
    g_free (backup);
    return rc;
  }
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) input = read_all (path, &error);
  if (!input) {
    die_line ("%s%s", error->message,
              g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_ISDIR)
                ? " (a Maildir is rewritten with --maildir DIR)" : "");
    return exit_for_read_error (error);
  }
  gsize in_len = 0;
  const char *in_buf = g_bytes_get_data (input, &in_len);
  if (in_len == 0) {
    die_line ("%s: empty input, not a message", path ? path : "standard input");
    return EX_DATAERR;
  }

  g_autoptr (GOutputStream) out = g_unix_output_stream_new (STDOUT_FILENO, FALSE);
  g_autoptr (EbRewriteResult) result = NULL;
  EbRewriteFlags flags = opt_no_precheck ? EB_REWRITE_NO_PRECHECK : EB_REWRITE_DEFAULT;
  if (filter && config->strip_trace_fields)
    flags |= EB_REWRITE_STRIP_TRACE;
  if (filter)
    flags |= EB_REWRITE_FILTER_FIELD;
  if (!eb_rewrite (in_buf, in_len, config, fetcher, flags, out, &result, &error)) {
    die_line ("cannot write the message: %s", error->message);
    return EX_IOERR;
  }
  if (log) {
    g_autofree char *mid = eb_log_message_id (result, in_buf, in_len);
    eb_log_message (queue_id, mid, result);
  }
  if (report) {
    if (result->reason != EB_REASON_RESOLVED)
      fprintf (stderr, "%s: message left unchanged: %s: %s\n", prog,
               eb_reason_token (result->reason), eb_reason_text (result->reason));
    for (guint i = 0; result->scan && i < result->scan->refs->len; i++) {
      g_autofree char *line = eb_inspect_report_line (result, i);
      fprintf (stderr, "%s: %s\n", prog, line);
    }
    if (result->removed && result->removed->len)
      fprintf (stderr, "%s: removed %u X-Extbody trace field%s that came with the message\n", prog,
               result->removed->len, result->removed->len == 1 ? "" : "s");
  }
  return 0;
}

/* ---- inspect ---------------------------------------------------------- */

static char *
message_id_of (const char *buf, gsize len)
{
  g_autoptr (EbHeaderBlock) blk = eb_header_block_scan (buf, 0, len);
  gint i = eb_header_block_find (blk, buf, "Message-ID");
  return i >= 0 ? eb_header_field_unfold (&g_array_index (blk->fields, EbHeaderField, i), buf) : NULL;
}

static void
inspect_one (const char *box, guint number, const char *source, gint64 offset, const char *buf,
             gsize len, const EbConfig *config, EbFetcher *fetcher, EbRewriteFlags flags,
             gboolean json, EbTable *table, guint *n)
{
  g_autoptr (EbRewriteResult) result = eb_rewrite_plan (buf, len, config, fetcher, flags);
  if (!result->scan || !result->scan->refs->len)
    return;
  g_autofree char *mid = message_id_of (buf, len);
  /* in the table, a mailbox's message by its number and Message-ID */
  g_autofree char *label = g_strdup_printf ("%s #%u %s", box, number, mid ? mid : "(no Message-ID)");
  for (guint i = 0; i < result->scan->refs->len; i++) {
    (*n)++;
    if (json) {
      g_autofree char *line = eb_inspect_json (source, offset, mid, result, i);
      printf ("%s\n", line);
    } else {
      eb_table_add (table, label, result, i);
    }
  }
}

/* Every message of the Maildir @path, walked as rewrite walks it: only regular
 * files, never through a symbolic link, never waiting on a FIFO. */
static guint
inspect_maildir (const char *path, const EbConfig *config, EbFetcher *fetcher,
                 EbRewriteFlags flags, gboolean recursive, gboolean json, EbTable *table,
                 int *status)
{
  guint n = 0;
  g_autoptr (GError) error = NULL;
  if (!eb_maildir_sniff (path)) {
    die_line ("%s: not a Maildir (no cur/, new/ and tmp/)", path);
    *status = MAX (*status, EX_NOINPUT);
    return 0;
  }
  g_autoptr (GPtrArray) skips = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) files = eb_maildir_list_full (path, recursive, skips, &error);
  if (!files) {
    die_line ("%s", error->message);
    *status = MAX (*status, EX_NOINPUT);
    return 0;
  }
  for (guint i = 0; i < skips->len; i++)
    die_line ("skipped %s", (char *) g_ptr_array_index (skips, i));
  for (guint i = 0; i < files->len; i++) {
    const char *file = g_ptr_array_index (files, i);
    const char *skipped = NULL;
    g_autoptr (GMappedFile) mf = eb_maildir_map_entry (file, &skipped);
    if (skipped) {
      die_line ("skipped %s: %s", file, skipped);
      continue;
    }
    if (!mf) {
      die_line ("cannot read %s", file);
      *status = MAX (*status, EX_IOERR);
      continue;
    }
    const char *buf = g_mapped_file_get_contents (mf);
    inspect_one (path, i + 1, file, -1, buf ? buf : "", g_mapped_file_get_length (mf), config,
                 fetcher, flags, json, table, &n);
  }
  return n;
}

/* Every message of the mbox @path: a regular file, not through a symbolic link. */
static guint
inspect_mbox (const char *path, const EbConfig *config, EbFetcher *fetcher,
              EbRewriteFlags flags, gboolean json, EbTable *table, int *status)
{
  guint n = 0;
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat (fd, &st) != 0 || !S_ISREG (st.st_mode)) {
    int e = errno;
    if (fd < 0 && e == ELOOP)
      die_line ("cannot open %s: a symbolic link, not followed (name the mailbox itself)", path);
    else if (fd < 0)
      die_line ("cannot open %s: %s", path, g_strerror (e));
    else
      die_line ("cannot open %s: not a regular file", path);
    if (fd >= 0)
      close (fd);
    *status = MAX (*status, EX_NOINPUT);
    return 0;
  }
  g_autoptr (GError) error = NULL;
  g_autoptr (GMappedFile) mf = st.st_size > 0 ? g_mapped_file_new_from_fd (fd, FALSE, &error) : NULL;
  close (fd);
  if (st.st_size > 0 && !mf) {
    die_line ("cannot read %s: %s", path, error->message);
    *status = MAX (*status, EX_IOERR);
    return 0;
  }
  const char *buf = mf ? g_mapped_file_get_contents (mf) : "";
  gsize len = mf ? g_mapped_file_get_length (mf) : 0;
  if (len > 0 && (len < 5 || memcmp (buf, "From ", 5) != 0)) {
    die_line ("%s: not an mbox (it does not start with a From_ line)", path);
    *status = MAX (*status, EX_DATAERR);
    return 0;
  }
  /* memory stays flat however large the mailbox: the split and each message
   * give their pages back once passed */
  g_autoptr (GArray) msgs = len ? eb_mbox_split_mapped (buf, len) : eb_mbox_split ("", 0);
  for (guint i = 0; i < msgs->len; i++) {
    const EbMboxMsg *m = &g_array_index (msgs, EbMboxMsg, i);
    inspect_one (path, i + 1, path, (gint64) m->from, buf + m->start, m->end - m->start, config,
                 fetcher, flags, json, table, &n);
    if (len)
      release_pages (buf, 0, m->end);
  }
  return n;
}

static int
cmd_inspect (int argc, char **argv)
{
  gboolean json = FALSE, recursive = FALSE;
  char **mboxes = NULL, **maildirs = NULL;
  GOptionEntry entries[] = {
    { "mbox", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &mboxes, "Every message of the mbox FILE (repeatable)", "FILE" },
    { "maildir", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &maildirs, "Every message of the Maildir DIR (repeatable)", "DIR" },
    { "recursive", 'r', 0, G_OPTION_ARG_NONE, &recursive, "With a Maildir, its Maildir++ subfolders too", NULL },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json,
      "One JSON object per reference per line (fields in extbody(1))", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = new_context ("[FILE...]",
      "List every message/external-body reference of each message FILE (\"-\": standard\n"
      "input; each FILE is one message), of every mbox named with --mbox and Maildir\n"
      "named with --maildir, of every access-type, and what rewrite would do with it.\n"
      "Nothing is changed.", entries, TRUE);
  int status = 0;
  if (!parse_options (ctx, &argc, &argv, &status))
    return status;
  g_auto (GStrv) mb = mboxes, md = maildirs;
  if (argc < 2 && !mb && !md) {
    die_line ("inspect needs a FILE, --mbox FILE or --maildir DIR (try --help)");
    return EX_USAGE;
  }
  g_autoptr (EbConfig) config = load_config (&status);
  if (!config)
    return status;
  /* --fetch: really fetch, to tell what rewrite would do */
  EbRewriteFlags flags = opt_no_precheck ? EB_REWRITE_NO_PRECHECK : EB_REWRITE_DEFAULT;
  if (!opt_fetch)
    flags |= EB_REWRITE_NO_FETCH;

  g_autoptr (EbFetcher) fetcher = make_fetcher (config, &status);
  if (status)
    return status;
  gboolean several = argc > 2 || mb || md
                     || (argc == 2 && g_file_test (argv[1], G_FILE_TEST_IS_DIR));
  g_autoptr (EbTable) table = eb_table_new (several);
  guint n_refs = 0;
  for (guint i = 0; mb && mb[i]; i++)
    n_refs += inspect_mbox (mb[i], config, fetcher, flags, json, table, &status);
  for (guint i = 0; md && md[i]; i++)
    n_refs += inspect_maildir (md[i], config, fetcher, flags, recursive, json, table, &status);
  for (int a = 1; a < argc; a++) {
    g_autoptr (GError) error = NULL;
    /* a directory is no message: a Maildir named without --maildir is read as
     * one (nothing is changed, and no content is sniffed) */
    if (strcmp (argv[a], "-") != 0 && g_file_test (argv[a], G_FILE_TEST_IS_DIR)
        && eb_maildir_sniff (argv[a])) {
      n_refs += inspect_maildir (argv[a], config, fetcher, flags, recursive, json, table, &status);
      continue;
    }
    g_autoptr (GBytes) input = read_all (argv[a], &error);
    if (!input) {
      die_line ("%s%s", error->message,
                g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_ISDIR)
                  ? " (a Maildir is inspected with --maildir DIR)" : "");
      status = MAX (status, exit_for_read_error (error));
      continue;
    }
    gsize in_len = 0;
    const char *in_buf = g_bytes_get_data (input, &in_len);
    g_autoptr (EbRewriteResult) result = eb_rewrite_plan (in_buf ? in_buf : "", in_len, config,
                                                          fetcher, flags);
    if (result->reason != EB_REASON_RESOLVED && (result->parsed || result->reason == EB_REASON_MESSAGE_TOO_LARGE))
      fprintf (stderr, "%s: %s: message left unchanged: %s\n", prog, argv[a],
               eb_reason_text (result->reason));
    for (guint i = 0; result->scan && i < result->scan->refs->len; i++) {
      n_refs++;
      if (json) {
        g_autofree char *line = eb_inspect_json (argv[a], -1, NULL, result, i);
        printf ("%s\n", line);
      } else {
        eb_table_add (table, argv[a], result, i);
      }
    }
  }
  if (!json) {
    if (n_refs) {
      g_autofree char *text = eb_table_finish (table);
      fputs (text, stdout);
    } else {
      printf ("no external-body references\n");
    }
  }
  if (fflush (stdout) != 0) {
    die_line ("cannot write: %s", g_strerror (errno));
    return EX_IOERR;
  }
  return status;
}

/* ---- data-url --------------------------------------------------------- */

static int
cmd_data_url (int argc, char **argv)
{
  gboolean json = FALSE, type = FALSE;
  GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json,
      "Print {\"mime_type\": ..., \"body_base64\": ...}", NULL },
    { "type", 0, 0, G_OPTION_ARG_NONE, &type, "Print the serialized MIME type instead of the body", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = new_context ("URL",
      "Run the WHATWG data: URL processor on URL (\"-\": read it from standard input,\n"
      "UTF-8, to end of file) and write the body to standard output.", entries, FALSE);
  int status = 0;
  if (!parse_options (ctx, &argc, &argv, &status))
    return status;
  if (argc != 2) {
    die_line ("data-url takes exactly one URL (try --help)");
    return EX_USAGE;
  }
  g_autoptr (GBytes) from_stdin = NULL;
  const char *url = argv[1];
  gsize url_len = strlen (url);
  if (strcmp (url, "-") == 0) {
    g_autoptr (GError) error = NULL;
    from_stdin = read_all (NULL, &error);
    if (!from_stdin) {
      die_line ("%s", error->message);
      return EX_IOERR;
    }
    url = g_bytes_get_data (from_stdin, &url_len);
    if (!eb_utf8_validate_with_nul (url, url_len)) {
      die_line ("standard input is not UTF-8");
      return EX_DATAERR;
    }
  }
  g_autoptr (GError) error = NULL;
  g_autoptr (EbDataUrl) du = eb_data_url_process (url ? url : "", (gssize) url_len, &error);
  if (!du) {
    die_line ("%s", error->message);
    return EX_DATAERR;
  }
  g_autofree char *ser = eb_mime_type_serialize (du->mime_type);
  gsize blen = 0;
  const guint8 *body = g_bytes_get_data (du->body, &blen);
  if (json) {
    g_autofree char *b64 = g_base64_encode (body, blen);
    g_autoptr (JsonBuilder) b = json_builder_new ();
    json_builder_begin_object (b);
    json_builder_set_member_name (b, "mime_type");
    json_builder_add_string_value (b, ser);
    json_builder_set_member_name (b, "body_base64");
    json_builder_add_string_value (b, b64);
    json_builder_end_object (b);
    g_autoptr (JsonGenerator) gen = json_generator_new ();
    g_autoptr (JsonNode) root = json_builder_get_root (b);
    json_generator_set_root (gen, root);
    g_autofree char *text = json_generator_to_data (gen, NULL);
    printf ("%s\n", text);
  } else if (type) {
    printf ("%s\n", ser);
  } else if (blen && fwrite (body, 1, blen, stdout) != blen) {
    die_line ("cannot write: %s", g_strerror (errno));
    return EX_IOERR;
  }
  if (fflush (stdout) != 0) {
    die_line ("cannot write: %s", g_strerror (errno));
    return EX_IOERR;
  }
  return 0;
}

/* ---- config ----------------------------------------------------------- */

static int
cmd_config (int argc, char **argv)
{
  gboolean defaults = FALSE, check = FALSE;
  GOptionEntry entries[] = {
    { "defaults", 'd', 0, G_OPTION_ARG_NONE, &defaults, "Print the built-in defaults", NULL },
    { "check", 'n', 0, G_OPTION_ARG_NONE, &check,
      "Only check the configuration, as the runtime reads it: print nothing when it is valid, one line naming the key and exit 78 when not", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = new_context ("",
      "Check the configuration and print every key with the value in force.", entries, TRUE);
  int status = 0;
  if (!parse_options (ctx, &argc, &argv, &status))
    return status;
  if (argc != 1) {
    die_line ("config takes no arguments (try --help)");
    return EX_USAGE;
  }
  g_autoptr (EbConfig) config = defaults ? eb_config_new () : load_config (&status);
  if (!config)
    return status;
  /* what the runtime builds from it, whether fetching is on or not */
  g_autoptr (GError) error = NULL;
  g_autoptr (EbFetcher) fetcher = eb_fetcher_new (config, &error);
  if (!fetcher) {
    die_line ("%s", error->message);
    return EX_CONFIG;
  }
  if (check)
    return 0;
  g_autofree char *text = eb_config_dump (config);
  fputs (text, stdout);
  return 0;
}

/* ---- main ------------------------------------------------------------- */

static void
usage (FILE *to)
{
  fprintf (to,
    "Usage: extbody COMMAND [OPTION...] [ARG...]\n"
    "\n"
    "Resolve message/external-body references (RFC 2046, RFC 2017 access-type=URL)\n"
    "into ordinary MIME parts.\n"
    "\n"
    "Commands:\n"
    "  rewrite [FILE]          resolve the references of one message (FILE or stdin,\n"
    "                          never changed); write it to standard output\n"
    "  rewrite --mbox FILE     rewrite an mbox in place (locked, crash-safe)\n"
    "  rewrite --maildir DIR   rewrite the changed messages of a Maildir\n"
    "  inspect [FILE...] [--mbox FILE] [--maildir DIR]\n"
    "                          list every external-body reference and what rewrite\n"
    "                          would do with it; change nothing\n"
    "  data-url URL|-          run the WHATWG data: URL processor on URL\n"
    "  config [--check]        check the configuration and print the values in force\n"
    "\n"
    "Options of rewrite, inspect and config:\n"
    "  -c, --config=FILE       configuration file (default " EB_CONFIG_DEFAULT_PATH ")\n"
    "  -o, --set=KEY=VALUE     override one configuration key (repeatable)\n"
    "  --allow-network=CIDR    add a block to allow_networks (repeatable)\n"
    "  --fetch                 fetch http, https and ftp references (off by default:\n"
    "                          a fetch tells the URL's owner the mail was processed)\n"
    "\n"
    "Options:\n"
    "  -h, --help              show this help (COMMAND --help: the command's options)\n"
    "  -V, --version           show the version\n"
    "\n"
    "Lists in values are separated by commas, white space or both.\n"
    "\n"
    "Exit status: 0 done; 64 usage; 65 data error; 66 no input; 74 I/O error;\n"
    "75 temporary failure; 78 configuration error. See extbody(1).\n");
}

int
main (int argc, char **argv)
{
  if (argc < 2) {
    usage (stderr);
    return EX_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp (cmd, "-h") || !strcmp (cmd, "--help") || !strcmp (cmd, "help")) {
    usage (stdout);
    return 0;
  }
  if (!strcmp (cmd, "-V") || !strcmp (cmd, "--version")) {
    printf ("extbody %s (GMime %u.%u.%u, GLib %u.%u.%u, %s)\n", EXTBODY_VERSION,
            gmime_major_version, gmime_minor_version, gmime_micro_version,
            glib_major_version, glib_minor_version, glib_micro_version, curl_version ());
    return 0;
  }

  /* a write past RLIMIT_FSIZE must fail with EFBIG, not kill the process */
  signal (SIGXFSZ, SIG_IGN);
  /* stopped by a signal: no half-written mailbox or dot-lock stays behind */
  struct sigaction sa = { .sa_handler = on_stop_signal };
  sigemptyset (&sa.sa_mask);
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGHUP, &sa, NULL);
  signal (SIGPIPE, SIG_IGN);
  g_mime_init ();
  curl_global_init (CURL_GLOBAL_DEFAULT);
  /* the library's diagnostics (and GMime's) as "extbody: ..." on standard
   * error, or in the journal; rewrite --log can send them to syslog */
  eb_log_init (prog, EB_LOG_STDERR);
  int status;
  /* Each command sees argv from its own name on, so --help speaks of it. */
  g_autofree char *name = g_strdup_printf ("%s %s", prog, cmd);
  char **sub = argv + 1;
  int subc = argc - 1;
  g_set_prgname (name);
  if (!strcmp (cmd, "rewrite"))
    status = cmd_rewrite (subc, sub);
  else if (!strcmp (cmd, "inspect"))
    status = cmd_inspect (subc, sub);
  else if (!strcmp (cmd, "data-url"))
    status = cmd_data_url (subc, sub);
  else if (!strcmp (cmd, "config"))
    status = cmd_config (subc, sub);
  else {
    die_line ("unknown command \"%s\" (try --help)", cmd);
    status = EX_USAGE;
  }
  g_strfreev (opt_set);
  g_strfreev (opt_allow_network);
  g_free (opt_config);
  g_mime_shutdown ();
  curl_global_cleanup ();
  return status;
}
