/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-stats.h - counters over many messages (the public part is in
 * <extbody/extbody.h>, "batch and statistics").
 *
 * Counted under one lock, so workers of a batch and the milter's sessions
 * count into the same EbStats. A message not even parsed (above
 * max_message_size) counts its own reason once among those left, as the
 * summary always has.
 */
#pragma once
#include "eb-reason.h"
#include "eb-rewrite.h"
#include <extbody/extbody.h>

G_BEGIN_DECLS

/* The fetch latency histogram's upper bounds, in seconds (the last bucket,
 * +Inf, is implied): from a cached-nearby server to message_deadline's
 * default. */
#define EB_STATS_N_BUCKETS 14
extern const double eb_stats_buckets[EB_STATS_N_BUCKETS];

/* A consistent copy of the counters (eb_stats_snapshot). */
typedef struct {
  guint64 messages, skipped, changed, references, resolved, bytes;
  guint64 left[EB_REASON_N];
  guint64 fetches[EB_REASON_N];            /* by outcome */
  guint64 fetched_bytes, cache_hits;
  guint64 latency[EB_STATS_N_BUCKETS + 1]; /* per bucket (not cumulative); the last is +Inf */
  guint64 latency_us;                      /* the sum */
  /* plans of eb_externalize_plan (their parts are not references) */
  guint64 parts;                           /* candidate parts */
  guint64 externalized;                    /* stored and replaced */
  guint64 externalized_bytes;              /* their decoded bytes */
} EbStatsSnapshot;

void eb_stats_snapshot (EbStats *stats, EbStatsSnapshot *out);

/* Count one URL the fetcher was asked for (what eb_stats_add_result does for
 * each of a result's fetches). */
void eb_stats_add_fetch (EbStats *stats, const EbFetchRecord *fetch);

G_END_DECLS
