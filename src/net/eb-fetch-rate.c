/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-fetch-rate.c - the rate limit per host, shared through Redis or local
 * (see eb-fetch-shared.h). */
#include "eb-fetch-shared.h"

/* The rate limit is a token bucket per host: max_requests_per_host requests
 * at once, then one each 60/max_requests_per_host seconds. A request over the
 * rate waits for its slot; only one whose slot would come after @deadline is
 * refused. */
typedef struct {
  double tokens;   /* may go below zero: slots already promised */
  gint64 at;       /* monotonic µs of the last refill */
} Bucket;

/* Reserve the next slot for a request to @host. Returns: the monotonic time
 * (µs) at which it may start (now when a token is free), or -1 when that would
 * be after @deadline (nothing reserved then). */
/* The same bucket in Redis, for the whole pool: the state is a hash (tokens,
 * at) under the host's key, the clock Redis's own (TIME), so that instances
 * on several hosts agree. ARGV: burst, tokens per µs, the longest wait in µs.
 * Returns the wait in µs (0: now), or -1 when it would be longer (nothing
 * reserved then). A key holding something else is an error reply: the caller
 * falls back to the local bucket. */
static EbRedisScript rate_script = EB_REDIS_SCRIPT (
  "local t = redis.call('TIME')\n"
  "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
  "local burst = tonumber(ARGV[1])\n"
  "local per_us = tonumber(ARGV[2])\n"
  "local v = redis.call('HMGET', KEYS[1], 'tokens', 'at')\n"
  "local tokens = tonumber(v[1]) or burst\n"
  "local at = tonumber(v[2]) or now\n"
  "if at > now then at = now end\n"
  "tokens = math.min(burst, tokens + (now - at) * per_us)\n"
  "local wait = 0\n"
  "if tokens < 1 then wait = math.ceil((1 - tokens) / per_us) end\n"
  "if wait > tonumber(ARGV[3]) then wait = -1 else tokens = tokens - 1 end\n"
  "redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%.0f', now))\n"
  "redis.call('PEXPIRE', KEYS[1], math.floor(120000 + math.max(wait, 0) / 1000))\n"
  "return wait\n");

/* Returns: TRUE when Redis decided (*start set as eb_fetch_rate_reserve returns it). */
static gboolean
rate_reserve_shared (EbFetcher *f, const char *host, gint64 now, gint64 deadline, gint64 *start)
{
  if (!f->redis)
    return FALSE;
  double burst = f->config->max_requests_per_host;
  g_autofree char *key_name = g_strconcat ("r:", host, NULL);
  g_autofree char *key = eb_redis_key (f->redis, key_name);
  g_autofree char *b = g_strdup_printf ("%u", f->config->max_requests_per_host);
  char per[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_dtostr (per, sizeof per, burst / (60.0 * G_USEC_PER_SEC));
  g_autofree char *most = g_strdup_printf ("%" G_GINT64_FORMAT, MAX (deadline - now, 0));
  const char *argv[] = { key, b, per, most };
  g_autoptr (redisReply) reply = eb_redis_script (f->redis, &rate_script, 1, 4, argv, NULL);
  if (!reply || reply->type != REDIS_REPLY_INTEGER)
    return FALSE;
  *start = reply->integer < 0 ? -1 : now + reply->integer;
  return TRUE;
}

gint64
eb_fetch_rate_reserve (EbFetcher *f, const char *host, gint64 deadline)
{
  gint64 now = g_get_monotonic_time ();
  gint64 shared = 0;
  if (rate_reserve_shared (f, host, now, deadline, &shared))
    return shared;
  double burst = f->config->max_requests_per_host;
  double per_us = burst / (60.0 * G_USEC_PER_SEC);
  g_mutex_lock (&f->lock);
  Bucket *b = g_hash_table_lookup (f->rate, host);
  if (!b) {
    b = g_new0 (Bucket, 1);
    b->tokens = burst;
    b->at = now;
    g_hash_table_insert (f->rate, g_strdup (host), b);
  }
  b->tokens = MIN (burst, b->tokens + (now - b->at) * per_us);
  b->at = now;
  gint64 start = now;
  if (b->tokens < 1.0)
    start = now + (gint64) ((1.0 - b->tokens) / per_us) + 1;
  if (start > deadline) {
    start = -1;
  } else {
    b->tokens -= 1.0;
  }
  g_mutex_unlock (&f->lock);
  return start;
}

