/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-metrics.c - the Prometheus text exposition of the counters (see
 * eb-metrics.h). */
#include "eb-metrics.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>

void
eb_metrics_escape_label (GString *out, const char *value)
{
  for (const char *p = value; *p; p++) {
    if (*p == '\\')
      g_string_append (out, "\\\\");
    else if (*p == '"')
      g_string_append (out, "\\\"");
    else if (*p == '\n')
      g_string_append (out, "\\n");
    else
      g_string_append_c (out, *p);
  }
}

void
eb_metrics_escape_help (GString *out, const char *text)
{
  for (const char *p = text; *p; p++) {
    if (*p == '\\')
      g_string_append (out, "\\\\");
    else if (*p == '\n')
      g_string_append (out, "\\n");
    else
      g_string_append_c (out, *p);
  }
}

static void
head (GString *out, const char *name, const char *type, const char *help)
{
  g_string_append_printf (out, "# HELP %s ", name);
  eb_metrics_escape_help (out, help);
  g_string_append_printf (out, "\n# TYPE %s %s\n", name, type);
}

/* The text being formatted, and the writer's own label (writer="VALUE"),
 * which goes before a sample's other labels, or none. */
typedef struct {
  GString    *out;
  const char *writer;   /* NULL: no writer label (extbodyd's file) */
} Fmt;

/* "name{" with the writer label, ready for more labels (@more) or closed. */
static void
sample_open (Fmt *f, const char *name, gboolean more)
{
  g_string_append (f->out, name);
  if (f->writer) {
    g_string_append (f->out, "{writer=\"");
    eb_metrics_escape_label (f->out, f->writer);
    g_string_append (f->out, more ? "\"," : "\"}");
  } else if (more) {
    g_string_append_c (f->out, '{');
  }
}

static void
counter (Fmt *f, const char *name, const char *help, guint64 value)
{
  head (f->out, name, "counter", help);
  sample_open (f, name, FALSE);
  g_string_append_printf (f->out, " %" G_GUINT64_FORMAT "\n", value);
}

/* One sample with one label. */
static void
labelled (Fmt *f, const char *name, const char *label, const char *value, guint64 n)
{
  sample_open (f, name, TRUE);
  g_string_append_printf (f->out, "%s=\"", label);
  eb_metrics_escape_label (f->out, value);
  g_string_append_printf (f->out, "\"} %" G_GUINT64_FORMAT "\n", n);
}

char *
eb_metrics_format (const EbStatsSnapshot *s)
{
  return eb_metrics_format_for (s, NULL);
}

char *
eb_metrics_format_for (const EbStatsSnapshot *s, const char *writer)
{
  Fmt fmt = { g_string_new (NULL), writer }, *f = &fmt;
  GString *out = fmt.out;
  counter (f, "extbody_messages_total", "Messages scanned.", s->messages);
  counter (f, "extbody_skipped_total",
           "Mailbox entries skipped: not messages extbody reads (a Maildir's stray files, links).",
           s->skipped);
  counter (f, "extbody_messages_changed_total",
           "Messages changed (in a dry run: that would change).", s->changed);
  counter (f, "extbody_input_bytes_total", "Bytes of the messages scanned.", s->bytes);
  counter (f, "extbody_references_total", "message/external-body references found.",
           s->references);
  counter (f, "extbody_references_resolved_total", "References resolved into ordinary parts.",
           s->resolved);

  counter (f, "extbody_externalize_parts_total",
           "Parts extbody externalize (or extbodyd with milter_mode = externalize) would store.",
           s->parts);
  counter (f, "extbody_externalized_parts_total",
           "Parts stored and replaced by a message/external-body reference.", s->externalized);
  counter (f, "extbody_externalized_bytes_total", "Decoded bytes of the parts externalized.",
           s->externalized_bytes);

  head (out, "extbody_left_total", "counter",
        "References (or parts to externalize) left alone, by reason token (extbody(1)); a message "
        "above max_message_size, never parsed, counts once as message-too-large.");
  for (guint r = 0; r < EB_REASON_N; r++)
    if (r != EB_REASON_RESOLVED)
      labelled (f, "extbody_left_total", "reason", eb_reason_token ((EbReason) r), s->left[r]);

  head (out, "extbody_fetches_total", "counter",
        "URLs fetched over the network (redirects and a retry included in one), by outcome: "
        "resolved, or the reason token of the failure.");
  for (guint r = 0; r < EB_REASON_N; r++)
    if (r == EB_REASON_RESOLVED || s->fetches[r])
      labelled (f, "extbody_fetches_total", "outcome", eb_reason_token ((EbReason) r), s->fetches[r]);
  counter (f, "extbody_fetched_bytes_total",
           "Body bytes that arrived over the network, fetches stopped at a limit included.",
           s->fetched_bytes);
  counter (f, "extbody_fetch_cache_hits_total",
           "URLs taken from the fetch cache (cache_ttl) instead of fetched.", s->cache_hits);

  const char *h = "extbody_fetch_duration_seconds";
  head (out, h, "histogram",
        "Seconds from a fetch's start (after its rate-limit turn; name lookup included) to its outcome.");
  guint64 cumulative = 0;
  for (guint b = 0; b <= EB_STATS_N_BUCKETS; b++) {
    char le[G_ASCII_DTOSTR_BUF_SIZE];
    cumulative += s->latency[b];
    if (b < EB_STATS_N_BUCKETS)
      g_ascii_formatd (le, sizeof le, "%g", eb_stats_buckets[b]);
    else
      g_strlcpy (le, "+Inf", sizeof le);
    g_autofree char *bucket = g_strconcat (h, "_bucket", NULL);
    sample_open (f, bucket, TRUE);
    g_string_append_printf (out, "le=\"%s\"} %" G_GUINT64_FORMAT "\n", le, cumulative);
  }
  char sum[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd (sum, sizeof sum, "%.6f", (double) s->latency_us / G_USEC_PER_SEC);
  g_autofree char *sum_name = g_strconcat (h, "_sum", NULL);
  g_autofree char *count_name = g_strconcat (h, "_count", NULL);
  sample_open (f, sum_name, FALSE);
  g_string_append_printf (out, " %s\n", sum);
  sample_open (f, count_name, FALSE);
  g_string_append_printf (out, " %" G_GUINT64_FORMAT "\n", cumulative);
  return g_string_free (out, FALSE);
}

char *
eb_metrics_format_prometheus (EbStats *stats)
{
  g_return_val_if_fail (stats != NULL, NULL);
  EbStatsSnapshot s;
  eb_stats_snapshot (stats, &s);
  return eb_metrics_format (&s);
}

/* ---- reading the text back (the mailbox runs' file) ---------------------- */

/* The labels of a sample, "k=\"v\",k2=\"v2\"", as a table (values unescaped).
 * FALSE: not the exposition format. */
static gboolean
parse_labels (const char *p, const char *end, GHashTable *labels)
{
  while (p < end) {
    const char *eq = memchr (p, '=', (gsize) (end - p));
    if (!eq || eq + 1 >= end || eq[1] != '"')
      return FALSE;
    g_autofree char *key = g_strndup (p, (gsize) (eq - p));
    GString *v = g_string_new (NULL);
    const char *q = eq + 2;
    for (; q < end && *q != '"'; q++) {
      if (*q == '\\' && q + 1 < end) {
        q++;
        g_string_append_c (v, *q == 'n' ? '\n' : *q);
      } else {
        g_string_append_c (v, *q);
      }
    }
    if (q >= end) {
      g_string_free (v, TRUE);
      return FALSE;
    }
    g_hash_table_replace (labels, g_steal_pointer (&key), g_string_free (v, FALSE));
    p = q + 1;
    if (p < end && *p == ',')
      p++;
  }
  return TRUE;
}

static gboolean
reason_of (const char *token, guint *out)
{
  for (guint r = 0; token && r < EB_REASON_N; r++)
    if (strcmp (token, eb_reason_token ((EbReason) r)) == 0) {
      *out = r;
      return TRUE;
    }
  return FALSE;
}

gboolean
eb_metrics_parse (const char *text, const char *writer, EbStatsSnapshot *out, guint *bad_line)
{
  memset (out, 0, sizeof *out);
  guint64 cumulative[EB_STATS_N_BUCKETS + 1] = { 0 };
  char le_names[EB_STATS_N_BUCKETS][G_ASCII_DTOSTR_BUF_SIZE];
  for (guint b = 0; b < EB_STATS_N_BUCKETS; b++)
    g_ascii_formatd (le_names[b], sizeof le_names[b], "%g", eb_stats_buckets[b]);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    const char *l = lines[i];
    if (!*l || *l == '#')
      continue;
    *bad_line = i + 1;
    const char *sp = strrchr (l, ' ');
    if (!sp)
      return FALSE;
    const char *brace = memchr (l, '{', (gsize) (sp - l));
    g_autofree char *name = g_strndup (l, (gsize) ((brace ? brace : sp) - l));
    g_autoptr (GHashTable) labels = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
    if (brace) {
      const char *close = sp - 1;
      if (close <= brace || *close != '}' || !parse_labels (brace + 1, close, labels))
        return FALSE;
    }
    /* every sample is this writer's, or the file is not its own */
    if (g_strcmp0 (g_hash_table_lookup (labels, "writer"), writer) != 0)
      return FALSE;
    const char *value = sp + 1;
    char *endp = NULL;
    if (strcmp (name, "extbody_fetch_duration_seconds_sum") == 0) {
      double sum = g_ascii_strtod (value, &endp);
      if (endp == value || *endp || sum < 0)
        return FALSE;
      out->latency_us = (guint64) (sum * G_USEC_PER_SEC + 0.5);
      continue;
    }
    guint64 n = g_ascii_strtoull (value, &endp, 10);
    if (!g_ascii_isdigit (*value) || *endp)
      return FALSE;
    const char *reason = g_hash_table_lookup (labels, "reason");
    const char *outcome = g_hash_table_lookup (labels, "outcome");
    const char *le = g_hash_table_lookup (labels, "le");
    guint r = 0;
    if (strcmp (name, "extbody_messages_total") == 0) out->messages = n;
    else if (strcmp (name, "extbody_skipped_total") == 0) out->skipped = n;
    else if (strcmp (name, "extbody_messages_changed_total") == 0) out->changed = n;
    else if (strcmp (name, "extbody_input_bytes_total") == 0) out->bytes = n;
    else if (strcmp (name, "extbody_references_total") == 0) out->references = n;
    else if (strcmp (name, "extbody_references_resolved_total") == 0) out->resolved = n;
    else if (strcmp (name, "extbody_externalize_parts_total") == 0) out->parts = n;
    else if (strcmp (name, "extbody_externalized_parts_total") == 0) out->externalized = n;
    else if (strcmp (name, "extbody_externalized_bytes_total") == 0) out->externalized_bytes = n;
    else if (strcmp (name, "extbody_fetched_bytes_total") == 0) out->fetched_bytes = n;
    else if (strcmp (name, "extbody_fetch_cache_hits_total") == 0) out->cache_hits = n;
    else if (strcmp (name, "extbody_left_total") == 0 && reason_of (reason, &r)) out->left[r] = n;
    else if (strcmp (name, "extbody_fetches_total") == 0 && reason_of (outcome, &r)) out->fetches[r] = n;
    else if (strcmp (name, "extbody_fetch_duration_seconds_bucket") == 0 && le) {
      guint b = 0;
      while (b < EB_STATS_N_BUCKETS && strcmp (le, le_names[b]) != 0)
        b++;
      if (b == EB_STATS_N_BUCKETS && strcmp (le, "+Inf") != 0)
        return FALSE;
      cumulative[b] = n;
    } else if (strcmp (name, "extbody_fetch_duration_seconds_count") != 0) {
      return FALSE;   /* a metric extbody does not write */
    }
  }
  /* the histogram's buckets are cumulative in the text */
  for (guint b = 0; b <= EB_STATS_N_BUCKETS; b++) {
    guint64 below = b ? cumulative[b - 1] : 0;
    if (cumulative[b] < below)
      return FALSE;
    out->latency[b] = cumulative[b] - below;
  }
  *bad_line = 0;
  return TRUE;
}

void
eb_metrics_snapshot_add (EbStatsSnapshot *to, const EbStatsSnapshot *s)
{
  to->messages += s->messages;
  to->skipped += s->skipped;
  to->changed += s->changed;
  to->references += s->references;
  to->resolved += s->resolved;
  to->bytes += s->bytes;
  for (guint r = 0; r < EB_REASON_N; r++) {
    to->left[r] += s->left[r];
    to->fetches[r] += s->fetches[r];
  }
  to->fetched_bytes += s->fetched_bytes;
  to->cache_hits += s->cache_hits;
  for (guint b = 0; b <= EB_STATS_N_BUCKETS; b++)
    to->latency[b] += s->latency[b];
  to->latency_us += s->latency_us;
  to->parts += s->parts;
  to->externalized += s->externalized;
  to->externalized_bytes += s->externalized_bytes;
}

/* ---- writing -------------------------------------------------------------- */

gboolean
eb_metrics_write_file (const char *path, const char *text, GError **error)
{
  /* PATH.XXXXXX beside PATH (not *.prom: the collector skips it), mode 0644
   * whatever the umask (the unit's is 0007: counters are not secrets, and
   * node_exporter runs as another user), fsync, rename over PATH */
  g_autofree char *tmp = g_strconcat (path, ".XXXXXX", NULL);
  int fd = g_mkstemp_full (tmp, O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", path, g_strerror (e));
    return FALSE;
  }
  gsize len = strlen (text), done = 0;
  int e = 0;
  if (fchmod (fd, 0644) != 0)
    e = errno;
  while (!e && done < len) {
    ssize_t n = write (fd, text + done, len - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      e = errno;
    else
      done += (gsize) n;
  }
  if (!e && fsync (fd) != 0)
    e = errno;
  if (close (fd) != 0 && !e)
    e = errno;
  if (!e && rename (tmp, path) != 0)
    e = errno;
  if (e) {
    g_unlink (tmp);
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", path, g_strerror (e));
    return FALSE;
  }
  return TRUE;
}

gboolean
eb_metrics_write_prometheus (EbStats *stats, const char *path, GError **error)
{
  g_return_val_if_fail (stats != NULL, FALSE);
  g_return_val_if_fail (path != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  g_autofree char *text = eb_metrics_format_prometheus (stats);
  return eb_metrics_write_file (path, text, error);
}

/* eb_metrics_accumulate once the lock is held. */
static gboolean
accumulate_locked (EbStats *stats, const char *path, const char *writer, GError **error)
{
  EbStatsSnapshot total, run;
  g_autofree char *old = NULL;
  g_autoptr (GError) rerr = NULL;
  if (g_file_get_contents (path, &old, NULL, &rerr)) {
    guint bad = 0;
    if (!eb_metrics_parse (old, writer, &total, &bad)) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: line %u is not this writer's counters (writer=\"%s\"); left as it is (remove it to "
                   "count from zero)", path, bad, writer);
      return FALSE;
    }
  } else if (g_error_matches (rerr, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
    memset (&total, 0, sizeof total);
  } else {
    g_propagate_error (error, g_steal_pointer (&rerr));
    return FALSE;
  }
  eb_stats_snapshot (stats, &run);
  eb_metrics_snapshot_add (&total, &run);
  g_autofree char *text = eb_metrics_format_for (&total, writer);
  return eb_metrics_write_file (path, text, error);
}

gboolean
eb_metrics_accumulate (EbStats *stats, const char *path, const char *writer, guint lock_timeout,
                       GError **error)
{
  /* PATH.lock: PATH itself is replaced by each write, a lock on it would be
   * on the old file */
  g_autofree char *lock_path = g_strconcat (path, ".lock", NULL);
  int lfd = open (lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lfd < 0) {
    int e = errno;
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s", lock_path, g_strerror (e));
    return FALSE;
  }
  gint64 deadline = g_get_monotonic_time () + (gint64) lock_timeout * G_USEC_PER_SEC;
  while (flock (lfd, LOCK_EX | LOCK_NB) != 0) {
    if ((errno != EWOULDBLOCK && errno != EINTR) || g_get_monotonic_time () >= deadline) {
      int e = errno == EWOULDBLOCK ? EAGAIN : errno;
      close (lfd);
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e),
                   "%s: still locked by another run after lock_timeout (%u s)", lock_path, lock_timeout);
      return FALSE;
    }
    g_usleep (50 * 1000);
  }
  gboolean ok = accumulate_locked (stats, path, writer, error);
  close (lfd);   /* the lock goes with it */
  return ok;
}

gboolean
eb_metrics_add_to_prometheus (EbStats *stats, const char *path, const char *writer, guint lock_timeout,
                            GError **error)
{
  g_return_val_if_fail (stats != NULL, FALSE);
  g_return_val_if_fail (path != NULL, FALSE);
  g_return_val_if_fail (writer != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  return eb_metrics_accumulate (stats, path, writer, lock_timeout, error);
}
