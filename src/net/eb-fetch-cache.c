/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-fetch-cache.c - results kept for cache_ttl: this process's cache and the
 * pool's shared cache in Redis (see eb-fetch-shared.h). */
#include "eb-fetch-shared.h"
#include <string.h>
#include <arpa/inet.h>

void
eb_fetch_cache_entry_free (CacheEntry *e)
{
  eb_fetch_result_free (e->result);
  g_free (e);
}

EbFetchResult *
eb_fetch_cache_get (EbFetcher *f, const char *url)
{
  if (!f->config->cache_ttl || !f->config->cache_entries)
    return NULL;
  EbFetchResult *r = NULL;
  g_mutex_lock (&f->lock);
  CacheEntry *e = g_hash_table_lookup (f->cache, url);
  if (e && g_get_monotonic_time () - e->at <= (gint64) f->config->cache_ttl * G_USEC_PER_SEC) {
    r = eb_fetch_result_copy (e->result);
    r->from_cache = TRUE;
  }
  g_mutex_unlock (&f->lock);
  return r;
}

void
eb_fetch_cache_put (EbFetcher *f, const char *url, const EbFetchResult *r)
{
  if (!f->config->cache_ttl || !f->config->cache_entries)
    return;
  g_mutex_lock (&f->lock);
  if (!g_hash_table_contains (f->cache, url))
    g_queue_push_tail (&f->cache_order, g_strdup (url));
  CacheEntry *e = g_new0 (CacheEntry, 1);
  e->result = eb_fetch_result_copy (r);
  e->at = g_get_monotonic_time ();
  g_hash_table_insert (f->cache, g_strdup (url), e);
  while (g_hash_table_size (f->cache) > f->config->cache_entries) {
    char *old = g_queue_pop_head (&f->cache_order);
    g_hash_table_remove (f->cache, old);
    g_free (old);
  }
  g_mutex_unlock (&f->lock);
}

/* ---- the pool's shared cache in Redis ------------------------------------- */

/* An entry: a GVariant of SHARED_TYPE, read back only when it is in normal
 * form (GVariant's check for untrusted data) and every field is one a fresh
 * fetch could have given. Keys: PREFIX "c:" SHA256(URL asked for) for the
 * entry, PREFIX "l:" SHA256(URL) for the lock of the instance fetching it. */
#define SHARED_VERSION 1
#define SHARED_TYPE "(uuayayayayayxay)"   /* version, reason, detail, content type, final URL,
                                            * address, sha256 of the body (hex), stored at (µs since
                                            * the epoch), body */

static char *
shared_key (EbFetcher *f, const char *kind, const char *url)
{
  g_autofree char *h = g_compute_checksum_for_string (G_CHECKSUM_SHA256, url, -1);
  g_autofree char *name = g_strconcat (kind, h, NULL);
  return eb_redis_key (f->redis, name);
}

gboolean
eb_fetch_cache_shared_on (EbFetcher *f)
{
  return f->redis && f->config->cache_ttl && f->config->cache_entries;
}

static GBytes *
shared_encode (const EbFetchResult *r, const char *address)
{
  g_autofree char *sha = r->body ? g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, r->body) : NULL;
  gsize n = r->body ? g_bytes_get_size (r->body) : 0;
  GVariant *body = g_variant_new_fixed_array (G_VARIANT_TYPE_BYTE, r->body ? g_bytes_get_data (r->body, NULL) : "",
                                              n, 1);
  g_autoptr (GVariant) v = g_variant_ref_sink (
    g_variant_new ("(uu^ay^ay^ay^ay^ayx@ay)", (guint32) SHARED_VERSION, (guint32) r->reason,
                   r->detail ? r->detail : "", r->content_type ? r->content_type : "",
                   r->final_url ? r->final_url : "", address ? address : "", sha ? sha : "",
                   g_get_real_time (), body));
  return g_variant_get_data_as_bytes (v);
}

static gboolean
printable (const char *s, gsize most)
{
  gsize n = strlen (s);
  if (n > most)
    return FALSE;
  for (gsize i = 0; i < n; i++)
    if ((guchar) s[i] < 0x20 || s[i] == 0x7f)
      return FALSE;
  return TRUE;
}

/* Is the connection a fresh fetch made to @address, for @final_url, one the
 * policy allows? */
static gboolean
shared_address_allowed (EbFetcher *f, const char *address, const char *final_url)
{
  if (f->config->proxy && *f->config->proxy)
    return TRUE;   /* through a proxy, the address is the proxy's, checked at connect */
  CURLU *u = curl_url ();
  char *port = NULL;
  gboolean ok = curl_url_set (u, CURLUPART_URL, final_url, 0) == CURLUE_OK
                && curl_url_get (u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK && port;
  guint16 p = ok ? (guint16) atoi (port) : 0;
  curl_free (port);
  curl_url_cleanup (u);
  if (!ok)
    return FALSE;
  struct sockaddr_in in4 = { 0 };
  struct sockaddr_in6 in6 = { 0 };
  const struct sockaddr *sa = NULL;
  if (inet_pton (AF_INET, address, &in4.sin_addr) == 1) {
    in4.sin_family = AF_INET;
    in4.sin_port = htons (p);
    sa = (const struct sockaddr *) &in4;
  } else if (inet_pton (AF_INET6, address, &in6.sin6_addr) == 1) {
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons (p);
    sa = (const struct sockaddr *) &in6;
  } else {
    return FALSE;
  }
  return eb_policy_check (f->policy, sa, NULL) == EB_POLICY_ALLOWED;
}

/* An entry read from Redis for @url, checked as a fresh fetch would be.
 * Returns: (transfer full) (nullable): NULL for anything else (junk, another
 * version, expired for this instance's cache_ttl, a body whose sha256 differs,
 * larger than @max_bytes, from a URL or an address the policy refuses). The
 * checks against the reference (media type agreement, size, Content-MD5) are
 * eb-resolve's, on this result as on any. */
static EbFetchResult *
shared_decode (EbFetcher *f, const char *url, const char *data, gsize len, guint64 max_bytes)
{
  g_autoptr (GBytes) bytes = g_bytes_new (data, len);
  g_autoptr (GVariant) v = g_variant_ref_sink (g_variant_new_from_bytes (G_VARIANT_TYPE (SHARED_TYPE), bytes, FALSE));
  if (!g_variant_is_normal_form (v))
    return NULL;
  guint32 version = 0, reason = 0;
  const char *detail, *type, *final_url, *address, *sha;
  gint64 at = 0;
  g_autoptr (GVariant) body = NULL;
  g_variant_get (v, "(uu^&ay^&ay^&ay^&ay^&ayx@ay)", &version, &reason, &detail, &type, &final_url,
                 &address, &sha, &at, &body);
  gint64 now = g_get_real_time ();
  gsize n = 0;
  const guint8 *d = g_variant_get_fixed_array (body, &n, 1);
  if (version != SHARED_VERSION || reason >= EB_REASON_N || reason == EB_REASON_RATE_LIMITED
      || reason == EB_REASON_MESSAGE_BUDGET || at > now + 60 * G_USEC_PER_SEC
      || now - at > (gint64) f->config->cache_ttl * G_USEC_PER_SEC
      || !printable (detail, 1024) || !printable (type, 1024) || !printable (final_url, 8192))
    return NULL;
  g_autoptr (EbFetchResult) r = g_new0 (EbFetchResult, 1);
  r->reason = reason;
  r->detail = *detail ? g_strdup (detail) : NULL;
  r->final_url = g_strdup (*final_url ? final_url : url);
  r->from_cache = TRUE;
  if (reason != EB_REASON_RESOLVED)
    return n == 0 ? g_steal_pointer (&r) : NULL;
  /* data: what a fresh fetch would have accepted, byte for byte */
  if (n > max_bytes)
    return NULL;
  g_autoptr (GBytes) got = g_bytes_new (n ? d : NULL, n);
  g_autofree char *sum = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, got);
  if (strcmp (sum, sha) != 0)
    return NULL;
  g_autofree char *why = NULL;
  if (eb_fetch_url_check (f, r->final_url, &why, NULL) != EB_REASON_RESOLVED
      || !shared_address_allowed (f, address, r->final_url))
    return NULL;
  r->body = g_steal_pointer (&got);
  r->content_type = *type ? g_strdup (type) : NULL;
  return g_steal_pointer (&r);
}

/* One round trip: the entry when there is one; else the lock, taken with
 * @token for @ttl ms unless another instance holds it. Returns {1, entry},
 * {2} (the lock is @token's now), or {0, the lock's PTTL}. */
static EbRedisScript lookup_script = EB_REDIS_SCRIPT (
  "local v = redis.call('GET', KEYS[1])\n"
  "if v then return {1, v} end\n"
  "if ARGV[1] ~= '' and redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2} end\n"
  "return {0, redis.call('PTTL', KEYS[2])}\n");

/* Store the entry (unless empty) for ARGV[2] ms, and release the lock when it
 * is still @token's (compare and delete: one that expired and was taken by
 * another instance is left to it). */
static EbRedisScript store_script = EB_REDIS_SCRIPT (
  "if ARGV[1] ~= '' then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end\n"
  "if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end\n"
  "return 1\n");

static SharedOutcome
shared_outcome (EbFetcher *f, const char *url, redisReply *reply, guint64 max_bytes, EbFetchResult **result)
{
  if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements < 1
      || reply->element[0]->type != REDIS_REPLY_INTEGER)
    return SHARED_MISS;
  long long kind = reply->element[0]->integer;
  if (kind == 1 && reply->elements == 2 && reply->element[1]->type == REDIS_REPLY_STRING) {
    *result = shared_decode (f, url, reply->element[1]->str, reply->element[1]->len, max_bytes);
    return *result ? SHARED_HIT : SHARED_MISS;
  }
  if (kind == 2)
    return SHARED_OWN;
  if (kind == 0 && reply->elements == 2 && reply->element[1]->type == REDIS_REPLY_INTEGER) {
    long long pttl = reply->element[1]->integer;
    if (pttl == -2)
      return SHARED_MISS;
    if (pttl < 0 || pttl > (long long) f->config->message_deadline * 1000)
      return SHARED_STALE;
    return SHARED_WAIT;
  }
  return SHARED_MISS;
}

/* Before fetching @t's URL: the pool's entry, or its lock (only when @lock:
 * the first round, which may wait). */
SharedOutcome
eb_fetch_cache_shared_lookup (EbFetcher *f, Transfer *t, gboolean lock)
{
  g_autofree char *entry = shared_key (f, "c:", t->asked);
  g_autofree char *lk = shared_key (f, "l:", t->asked);
  guint8 raw[16];
  for (guint i = 0; i < 4; i++)
    ((guint32 *) raw)[i] = g_random_int ();
  g_autofree char *token = lock ? g_compute_checksum_for_data (G_CHECKSUM_SHA1, raw, sizeof raw) : g_strdup ("");
  g_autofree char *ttl = g_strdup_printf ("%" G_GINT64_FORMAT,
                                          MAX ((t->deadline - g_get_monotonic_time ()) / 1000, 1));
  const char *argv[] = { entry, lk, token, ttl };
  g_autoptr (redisReply) reply = eb_redis_script (f->redis, &lookup_script, 2, 4, argv, NULL);
  SharedOutcome o = shared_outcome (f, t->asked, reply, t->max_bytes, &t->result);
  if (o == SHARED_OWN)
    t->lock_token = g_steal_pointer (&token);
  return o;
}

/* After @t's fetch: its result for the pool when @keep (and its body is
 * within redis_max_body), and its lock released. */
void
eb_fetch_cache_shared_store (EbFetcher *f, Transfer *t, gboolean keep)
{
  if (!eb_fetch_cache_shared_on (f) || (!keep && !t->lock_token))
    return;
  const EbFetchResult *r = t->result;
  if (!r || (r->body && g_bytes_get_size (r->body) > f->config->redis_max_body))
    keep = FALSE;
  if (!keep && !t->lock_token)
    return;
  g_autofree char *entry = shared_key (f, "c:", t->asked);
  g_autofree char *lk = shared_key (f, "l:", t->asked);
  g_autoptr (GBytes) value = keep ? shared_encode (r, t->address) : g_bytes_new (NULL, 0);
  g_autofree char *ttl = g_strdup_printf ("%u", f->config->cache_ttl * 1000);
  const char *argv[] = { entry, lk, g_bytes_get_data (value, NULL), ttl, t->lock_token ? t->lock_token : "-" };
  size_t lens[] = { strlen (entry), strlen (lk), g_bytes_get_size (value), strlen (ttl), strlen (argv[4]) };
  if (!argv[2])
    argv[2] = "";
  G_GNUC_UNUSED g_autoptr (redisReply) reply = eb_redis_script (f->redis, &store_script, 2, 5, argv, lens);
  g_clear_pointer (&t->lock_token, g_free);
}

static EbRedisScript wait_script = EB_REDIS_SCRIPT (
  "local v = redis.call('GET', KEYS[1])\n"
  "if v then return {1, v} end\n"
  "return {0, redis.call('PTTL', KEYS[2])}\n");

/* Wait for another instance's fetch of @url: its entry, until its lock goes
 * away or expires, or until only the time to fetch it here is left of the
 * message's deadline. Returns: (transfer full) (nullable): the result, or
 * NULL: fetch it here. */
EbFetchResult *
eb_fetch_cache_shared_wait (EbFetcher *f, const char *url, gint64 deadline, guint64 max_bytes,
                            const gint *cancel)
{
  g_autofree char *entry = shared_key (f, "c:", url);
  g_autofree char *lk = shared_key (f, "l:", url);
  const char *argv[] = { entry, lk };
  gint64 reserve = MIN ((gint64) f->config->fetch_timeout, (gint64) f->config->message_deadline / 2) * G_USEC_PER_SEC;
  gint64 until = deadline - reserve;
  gulong pause = 5000;
  for (;;) {
    g_autoptr (redisReply) reply = eb_redis_script (f->redis, &wait_script, 2, 2, argv, NULL);
    EbFetchResult *r = NULL;
    SharedOutcome o = shared_outcome (f, url, reply, max_bytes, &r);
    if (o == SHARED_HIT)
      return r;
    if (o != SHARED_WAIT || g_get_monotonic_time () + (gint64) pause >= until
        || (cancel && g_atomic_int_get (cancel)))
      return NULL;
    g_usleep (pause);
    pause = MIN (pause * 3 / 2, 100000);
  }
}

