/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-stats.c - counters over many messages (see eb-stats.h). */
#include <stdlib.h>
#include <string.h>
#include "eb-stats.h"

struct _EbStats {
  GMutex          lock;
  EbStatsSnapshot c;   /* the counters */
};

const double eb_stats_buckets[EB_STATS_N_BUCKETS] = {
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
};

/* under the lock */
static void
count_fetch (EbStatsSnapshot *c, const EbFetchRecord *f)
{
  if (f->cache_hit) {
    c->cache_hits++;
    return;
  }
  if (!f->network)
    return;
  if ((guint) f->outcome < EB_REASON_N)
    c->fetches[f->outcome]++;
  c->fetched_bytes += f->bytes;
  gint64 us = MAX (f->elapsed, 0);
  c->latency_us += (guint64) us;
  guint b = 0;
  while (b < EB_STATS_N_BUCKETS && (double) us > eb_stats_buckets[b] * G_USEC_PER_SEC)
    b++;
  c->latency[b]++;
}

void
eb_stats_add_fetch (EbStats *stats, const EbFetchRecord *fetch)
{
  g_return_if_fail (stats != NULL && fetch != NULL);
  g_mutex_lock (&stats->lock);
  count_fetch (&stats->c, fetch);
  g_mutex_unlock (&stats->lock);
}

void
eb_stats_snapshot (EbStats *stats, EbStatsSnapshot *out)
{
  g_return_if_fail (stats != NULL && out != NULL);
  g_mutex_lock (&stats->lock);
  *out = stats->c;
  g_mutex_unlock (&stats->lock);
}

EbStats *
eb_stats_new (void)
{
  EbStats *s = g_new0 (EbStats, 1);
  g_mutex_init (&s->lock);
  return s;
}

void
eb_stats_free (EbStats *stats)
{
  if (!stats)
    return;
  g_mutex_clear (&stats->lock);
  g_free (stats);
}

void
eb_stats_add_result (EbStats *stats, const EbPlan *r)
{
  g_return_if_fail (stats != NULL);
  g_mutex_lock (&stats->lock);
  EbStatsSnapshot *c = &stats->c;
  c->messages++;
  EbReason reason = r ? eb_plan_get_reason (r) : EB_REASON_RESOLVED;
  if (r && !eb_plan_get_parsed (r) && reason != EB_REASON_RESOLVED
      && reason < EB_REASON_N)
    c->left[reason]++;   /* not even parsed: too large */
  gboolean externalized = r && eb_plan_get_externalized (r);
  guint n = r ? eb_plan_get_n_refs (r) : 0;
  for (guint i = 0; i < n; i++) {
    EbReason rr = eb_plan_get_ref_reason (r, i);
    if (externalized) {
      /* a part to externalize: stored, or left with its reason */
      c->parts++;
      if (rr == EB_REASON_RESOLVED) {
        const char *size = eb_plan_get_ref_declared_size (r, i);
        c->externalized++;
        c->externalized_bytes += size ? g_ascii_strtoull (size, NULL, 10) : 0;
        continue;
      }
    } else {
      c->references++;
      if (rr == EB_REASON_RESOLVED) {
        c->resolved++;
        continue;
      }
    }
    if (rr < EB_REASON_N)
      c->left[rr]++;
  }
  guint nf = r ? eb_plan_get_n_fetches (r) : 0;
  for (guint i = 0; i < nf; i++)
    count_fetch (c, eb_plan_get_fetch (r, i));
  g_mutex_unlock (&stats->lock);
}

#define ADDER(name, field, type)                   \
  void name (EbStats *stats, type n)               \
  {                                                \
    g_return_if_fail (stats != NULL);              \
    g_mutex_lock (&stats->lock);                   \
    stats->c.field += n;                           \
    g_mutex_unlock (&stats->lock);                 \
  }
ADDER (eb_stats_add_changed, changed, guint64)
ADDER (eb_stats_add_bytes, bytes, guint64)

void
eb_stats_add_skipped (EbStats *stats)
{
  g_return_if_fail (stats != NULL);
  g_mutex_lock (&stats->lock);
  stats->c.skipped++;
  g_mutex_unlock (&stats->lock);
}

#define GETTER(name, field)                        \
  guint64 name (EbStats *stats)                    \
  {                                                \
    g_return_val_if_fail (stats != NULL, 0);       \
    g_mutex_lock (&stats->lock);                   \
    guint64 v = stats->c.field;                    \
    g_mutex_unlock (&stats->lock);                 \
    return v;                                      \
  }
GETTER (eb_stats_get_messages, messages)
GETTER (eb_stats_get_skipped, skipped)
GETTER (eb_stats_get_changed, changed)
GETTER (eb_stats_get_references, references)
GETTER (eb_stats_get_resolved, resolved)
GETTER (eb_stats_get_bytes, bytes)
GETTER (eb_stats_get_parts, parts)
GETTER (eb_stats_get_externalized, externalized)
GETTER (eb_stats_get_externalized_bytes, externalized_bytes)
GETTER (eb_stats_get_fetched_bytes, fetched_bytes)
GETTER (eb_stats_get_cache_hits, cache_hits)

guint64
eb_stats_get_left (EbStats *stats, EbReason reason)
{
  g_return_val_if_fail (stats != NULL, 0);
  if ((guint) reason >= EB_REASON_N)
    return 0;
  g_mutex_lock (&stats->lock);
  guint64 v = stats->c.left[reason];
  g_mutex_unlock (&stats->lock);
  return v;
}

guint64
eb_stats_get_fetches (EbStats *stats, EbReason outcome)
{
  g_return_val_if_fail (stats != NULL, 0);
  if ((guint) outcome >= EB_REASON_N)
    return 0;
  g_mutex_lock (&stats->lock);
  guint64 v = stats->c.fetches[outcome];
  g_mutex_unlock (&stats->lock);
  return v;
}

/* Where a configuration key decides a reason, its name. */
static const struct {
  EbReason    reason;
  const char *hint;
} hints[] = {
  { EB_REASON_RATE_LIMITED,      "raise max_requests_per_host" },
  { EB_REASON_FETCH_OFF,         "fetch = on" },
  { EB_REASON_LOCAL_FILE_DIRS,   "set local_file_dirs" },
  { EB_REASON_MESSAGE_BUDGET,    "raise max_message_bytes" },
  { EB_REASON_PART_TOO_LARGE,    "raise max_part_bytes" },
  { EB_REASON_SIZE_PARAM,        "raise max_part_bytes" },
  { EB_REASON_TOO_MANY_REFS,     "raise max_references" },
  { EB_REASON_TOO_DEEP,          "raise max_nesting_depth" },
  { EB_REASON_TOO_MANY_PARTS,    "raise max_parts" },
  { EB_REASON_MESSAGE_TOO_LARGE, "raise max_message_size" },
  { EB_REASON_TIMED_OUT,         "raise fetch_timeout or message_deadline" },
};

typedef struct {
  EbReason reason;
  guint64  n;
} Left;

static int
cmp_left (const void *a, const void *b)
{
  const Left *x = a, *y = b;
  if (x->n != y->n)
    return x->n > y->n ? -1 : 1;
  return strcmp (eb_reason_token (x->reason), eb_reason_token (y->reason));
}

char *
eb_stats_format_summary (EbStats *stats, gboolean dry_run)
{
  g_return_val_if_fail (stats != NULL, NULL);
  EbStatsSnapshot s;
  eb_stats_snapshot (stats, &s);
  Left left[EB_REASON_N];
  guint n = 0;
  for (guint r = 0; r < EB_REASON_N; r++)
    if (r != EB_REASON_RESOLVED && s.left[r])
      left[n++] = (Left) { (EbReason) r, s.left[r] };
  qsort (left, n, sizeof *left, cmp_left);
  GString *out = g_string_new (NULL);
  g_string_append_printf (out, "%" G_GUINT64_FORMAT " messages scanned", s.messages);
  if (s.skipped)
    g_string_append_printf (out, " (%" G_GUINT64_FORMAT " entries skipped)", s.skipped);
  if (s.parts)
    g_string_append_printf (out, ", %" G_GUINT64_FORMAT " parts, %" G_GUINT64_FORMAT
                            " externalized (%" G_GUINT64_FORMAT " bytes)", s.parts, s.externalized,
                            s.externalized_bytes);
  if (!s.parts || s.references)
    g_string_append_printf (out, ", %" G_GUINT64_FORMAT " references, %" G_GUINT64_FORMAT " resolved",
                            s.references, s.resolved);
  g_string_append_printf (out, ", %" G_GUINT64_FORMAT " messages %s", s.changed,
                          dry_run ? "would change" : "changed");
  for (guint i = 0; i < n; i++) {
    g_string_append_printf (out, "%s%s %" G_GUINT64_FORMAT, i ? ", " : "; left: ",
                            eb_reason_token (left[i].reason), left[i].n);
    for (guint h = 0; h < G_N_ELEMENTS (hints); h++)
      if (hints[h].reason == left[i].reason)
        g_string_append_printf (out, " (%s)", hints[h].hint);
  }
  return g_string_free (out, FALSE);
}
