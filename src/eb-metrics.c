/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-metrics.c - the Prometheus text exposition of the counters (see
 * eb-metrics.h). */
#include "eb-metrics.h"
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

static void
counter (GString *out, const char *name, const char *help, guint64 value)
{
  head (out, name, "counter", help);
  g_string_append_printf (out, "%s %" G_GUINT64_FORMAT "\n", name, value);
}

/* One sample with one label. */
static void
labelled (GString *out, const char *name, const char *label, const char *value, guint64 n)
{
  g_string_append_printf (out, "%s{%s=\"", name, label);
  eb_metrics_escape_label (out, value);
  g_string_append_printf (out, "\"} %" G_GUINT64_FORMAT "\n", n);
}

char *
eb_metrics_format (const EbStatsSnapshot *s)
{
  GString *out = g_string_new (NULL);
  counter (out, "extbody_messages_total", "Messages scanned.", s->messages);
  counter (out, "extbody_skipped_total",
           "Mailbox entries skipped: not messages extbody reads (a Maildir's stray files, links).",
           s->skipped);
  counter (out, "extbody_messages_changed_total",
           "Messages changed (in a dry run: that would change).", s->changed);
  counter (out, "extbody_input_bytes_total", "Bytes of the messages scanned.", s->bytes);
  counter (out, "extbody_references_total", "message/external-body references found.",
           s->references);
  counter (out, "extbody_references_resolved_total", "References resolved into ordinary parts.",
           s->resolved);

  counter (out, "extbody_externalize_parts_total",
           "Parts extbody externalize (or extbody-milter with milter_mode = externalize) would store.",
           s->parts);
  counter (out, "extbody_externalized_parts_total",
           "Parts stored and replaced by a message/external-body reference.", s->externalized);
  counter (out, "extbody_externalized_bytes_total", "Decoded bytes of the parts externalized.",
           s->externalized_bytes);

  head (out, "extbody_left_total", "counter",
        "References (or parts to externalize) left alone, by reason token (extbody(1)); a message "
        "above max_message_size, never parsed, counts once as message-too-large.");
  for (guint r = 0; r < EB_REASON_N; r++)
    if (r != EB_REASON_RESOLVED)
      labelled (out, "extbody_left_total", "reason", eb_reason_token ((EbReason) r), s->left[r]);

  head (out, "extbody_fetches_total", "counter",
        "URLs fetched over the network (redirects and a retry included in one), by outcome: "
        "resolved, or the reason token of the failure.");
  for (guint r = 0; r < EB_REASON_N; r++)
    if (r == EB_REASON_RESOLVED || s->fetches[r])
      labelled (out, "extbody_fetches_total", "outcome", eb_reason_token ((EbReason) r), s->fetches[r]);
  counter (out, "extbody_fetched_bytes_total",
           "Body bytes that arrived over the network, fetches stopped at a limit included.",
           s->fetched_bytes);
  counter (out, "extbody_fetch_cache_hits_total",
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
    g_string_append_printf (out, "%s_bucket{le=\"%s\"} %" G_GUINT64_FORMAT "\n", h, le, cumulative);
  }
  char sum[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd (sum, sizeof sum, "%.6f", (double) s->latency_us / G_USEC_PER_SEC);
  g_string_append_printf (out, "%s_sum %s\n", h, sum);
  g_string_append_printf (out, "%s_count %" G_GUINT64_FORMAT "\n", h, cumulative);
  return g_string_free (out, FALSE);
}

char *
eb_stats_format_prometheus (EbStats *stats)
{
  g_return_val_if_fail (stats != NULL, NULL);
  EbStatsSnapshot s;
  eb_stats_snapshot (stats, &s);
  return eb_metrics_format (&s);
}

gboolean
eb_stats_write_prometheus (EbStats *stats, const char *path, GError **error)
{
  g_return_val_if_fail (stats != NULL, FALSE);
  g_return_val_if_fail (path != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  g_autofree char *text = eb_stats_format_prometheus (stats);
  /* GLib writes PATH.XXXXXX beside PATH (not *.prom: the collector skips
   * it), fsyncs it, renames it over PATH, and removes it on failure */
  return g_file_set_contents_full (path, text, -1,
                                   G_FILE_SET_CONTENTS_CONSISTENT | G_FILE_SET_CONTENTS_DURABLE,
                                   0644, error);
}
