/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-fetch.c - libcurl multi fetching under the fetch policy (see eb-fetch.h):
 * the public API and the fetch round (see eb-fetch-shared.h for the other files). */
#include "eb-fetch.h"
#include "eb-fetch-shared.h"
#include "eb-error.h"
#include "eb-list.h"
#include "eb-nntp.h"
#include "eb-scheme.h"
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Was libcurl built with @scheme (the schemes libcurl does not fetch: extbody
 * reads those itself)? */
static gboolean
curl_has_protocol (const EbScheme *scheme)
{
  if (scheme->by != EB_SCHEME_CURL)
    return TRUE;
  const curl_version_info_data *v = curl_version_info (CURLVERSION_NOW);
  for (guint i = 0; v->protocols && v->protocols[i]; i++)
    if (g_ascii_strcasecmp (v->protocols[i], scheme->name) == 0)
      return TRUE;
  return FALSE;
}

EbFetcher *
eb_fetcher_new (const EbConfig *config, GError **error)
{
  g_autoptr (EbPolicy) policy = eb_policy_new ();
  /* parsed and checked when the configuration was loaded */
  const GPtrArray *allow = eb_config_get_allow_networks (config);
  const GPtrArray *deny = eb_config_get_deny_networks (config);
  const GArray *ports = eb_config_get_ports (config);
  g_autoptr (GError) local = NULL;
  for (guint i = 0; i < allow->len; i++)
    eb_policy_add_allow (policy, g_ptr_array_index (allow, i));
  for (guint i = 0; i < deny->len; i++)
    eb_policy_add_deny (policy, g_ptr_array_index (deny, i));
  eb_policy_set_allowed_ports (policy, (const guint16 *) ports->data, ports->len);
  if (!eb_policy_add_host_addresses (policy, &local))
    g_clear_error (&local);   /* no interface list: loopback and private are refused anyway */

  /* parsed and checked when the configuration was loaded */
  g_auto (GStrv) named = eb_list_domains (eb_config_get_allow_schemes (config));
  g_autoptr (GPtrArray) fetched = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) curl_schemes = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; named[i]; i++) {
    const EbScheme *s = eb_scheme_lookup (named[i]);
    if (!s || !s->allowable) {
      g_autofree char *can = eb_scheme_list_allowable (" and ");
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "allow_schemes: \"%s\" cannot be fetched (%s can)",
                   named[i], can);
      return NULL;
    }
    if (!curl_has_protocol (s)) {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG,
                   "allow_schemes: \"%s\" cannot be fetched: libcurl %s was built without it",
                   named[i], curl_version_info (CURLVERSION_NOW)->version);
      return NULL;
    }
    /* a local file (file:) is read by extbody itself (eb_fetch_local_file),
     * never by libcurl, and never reached by a redirect */
    if (eb_scheme_is_fetched (s))
      g_ptr_array_add (fetched, g_strdup (named[i]));
    /* news and nntp: extbody's own client (eb-nntp.c), never libcurl's */
    if (s->by == EB_SCHEME_CURL)
      g_ptr_array_add (curl_schemes, g_strdup (named[i]));
  }
  g_ptr_array_add (fetched, NULL);
  g_ptr_array_add (curl_schemes, NULL);
  g_auto (GStrv) schemes = (GStrv) g_ptr_array_steal (fetched, NULL);
  g_auto (GStrv) for_curl = (GStrv) g_ptr_array_steal (curl_schemes, NULL);
  EbFetcher *f = g_new0 (EbFetcher, 1);
  f->config = eb_config_copy (config);
  f->policy = g_steal_pointer (&policy);
  f->schemes = g_steal_pointer (&schemes);
  f->protocols = g_strjoinv (",", for_curl);
  f->allow_domains = g_strdupv ((GStrv) eb_config_get_allow_domains (config));
  f->deny_domains = g_strdupv ((GStrv) eb_config_get_deny_domains (config));
  g_mutex_init (&f->lock);
  f->cache = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) eb_fetch_cache_entry_free);
  g_queue_init (&f->cache_order);
  f->rate = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  f->inflight = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_cond_init (&f->done);
  f->redis = eb_redis_new (config);
  return f;
}

void
eb_fetcher_free (EbFetcher *f)
{
  if (!f)
    return;
  eb_config_free (f->config);
  eb_policy_unref (f->policy);
  g_strfreev (f->schemes);
  g_free (f->protocols);
  g_strfreev (f->allow_domains);
  g_strfreev (f->deny_domains);
  g_mutex_clear (&f->lock);
  g_hash_table_unref (f->cache);
  g_queue_clear_full (&f->cache_order, g_free);
  g_hash_table_unref (f->rate);
  g_hash_table_unref (f->inflight);
  g_cond_clear (&f->done);
  eb_redis_free (f->redis);
  g_free (f);
}

EbFetcherShared
eb_fetcher_check_shared (EbFetcher *f)
{
  if (!f->redis)
    return EB_FETCHER_SHARED_NONE;
  const char *argv[] = { "PING" };
  g_autoptr (redisReply) reply = eb_redis_command (f->redis, 1, argv, NULL);
  return reply && reply->type != REDIS_REPLY_ERROR ? EB_FETCHER_SHARED_UP : EB_FETCHER_SHARED_DOWN;
}

gboolean
eb_fetcher_scheme_allowed (const EbFetcher *f, const char *url)
{
  return eb_fetch_url_scheme_allowed (f, url);
}

typedef struct {
  EbFetchProgressFunc func;
  gpointer            data;
} Progress;

static GPrivate progress_key = G_PRIVATE_INIT (g_free);
static GPrivate cancel_key;

void
eb_fetch_set_thread_cancel (const gint *flag)
{
  g_private_set (&cancel_key, (gpointer) flag);
}

void
eb_fetch_set_thread_progress (EbFetchProgressFunc func, gpointer data)
{
  Progress *p = g_new0 (Progress, 1);
  p->func = func;
  p->data = data;
  g_private_replace (&progress_key, func ? p : NULL);
  if (!func)
    g_free (p);
}

gboolean
eb_fetch_thread_cancelled (void)
{
  const gint *flag = g_private_get (&cancel_key);
  return flag && g_atomic_int_get (flag);
}

void
eb_fetch_thread_progress (gint64 *last)
{
  Progress *progress = g_private_get (&progress_key);
  gint64 now = g_get_monotonic_time ();
  if (progress && now - *last > G_USEC_PER_SEC) {
    progress->func (progress->data);
    *last = g_get_monotonic_time ();
  }
}

/* Every outcome but a rate limit or the message's own limits (its budget, its
 * deadline) is remembered: a dead URL that many messages reference is not
 * tried again for each. */
static void
remember (EbFetcher *f, Transfer *t)
{
  EbReason r = t->result->reason;
  if (t->begun) {
    /* for the statistics (eb_stats_add_result) */
    t->result->network = TRUE;
    t->result->received = t->received;
    t->result->elapsed = g_get_monotonic_time () - t->begun;
  }
  /* outcomes of this message's own limits, or of its cancellation, say
   * nothing about the URL; every other one is remembered: a dead URL that
   * many messages reference is not tried again for each */
  if (r == EB_REASON_RATE_LIMITED || r == EB_REASON_MESSAGE_BUDGET || eb_fetch_transfer_cancelled (t)
      || (r == EB_REASON_TIMED_OUT && g_get_monotonic_time () >= t->deadline)) {
    eb_fetch_cache_shared_store (f, t, FALSE);
    return;
  }
  eb_fetch_cache_put (f, t->asked, t->result);
  eb_fetch_cache_shared_store (f, t, TRUE);
}

/* @t has a result from a cache (this process's or the pool's): a body in it
 * is held like a fetched one (Round). */
static void
transfer_take (Transfer *t)
{
  gsize size = t->result->body ? g_bytes_get_size (t->result->body) : 0;
  if (size == 0 || t->result->reason != EB_REASON_RESOLVED)
    return;
  Admission a = eb_fetch_transfer_admit (t->round, t, size);
  if (a == ADMIT)
    return;
  g_clear_pointer (&t->result, eb_fetch_result_free);
  if (a == WAIT)
    eb_fetch_transfer_queue (t);
  else
    eb_fetch_transfer_end (t, EB_REASON_MESSAGE_BUDGET, eb_fetch_transfer_budget_detail (t->round));
}

/* Start @t again (from Round.later) now that every earlier reference is done:
 * from the cache when it has it; refused at once when the size an earlier
 * attempt announced cannot fit beside the earlier bodies; fetched otherwise.
 * Returns: TRUE when it is fetched (it runs). */
static gboolean
transfer_restart (EbFetcher *f, Transfer *t)
{
  Round *round = t->round;
  t->restarted = TRUE;
  t->queued = FALSE;
  t->waits = FALSE;
  t->evicted = FALSE;
  t->fail = EB_REASON_RESOLVED;
  g_clear_pointer (&t->fail_detail, g_free);
  g_free (t->url);
  t->url = g_strdup (t->asked);
  t->redirects = 0;
  if ((t->result = eb_fetch_cache_get (f, t->asked))) {
    transfer_take (t);
    return FALSE;
  }
  if (t->known >= 0) {
    guint64 after = 0;   /* held by @t and later references, which it may displace */
    for (guint k = t->index; k < round->order->len; k++)
      after += ((Transfer *) g_ptr_array_index (round->order, k))->held;
    if (round->held - after + (guint64) t->known > round->limit) {
      eb_fetch_transfer_end (t, EB_REASON_MESSAGE_BUDGET, eb_fetch_transfer_budget_detail (round));
      return FALSE;
    }
  }
  g_autofree char *detail = NULL;
  g_autofree char *host = NULL;
  eb_fetch_url_check (f, t->url, &detail, &host);
  if (g_get_monotonic_time () >= round->deadline) {
    eb_fetch_transfer_end (t, EB_REASON_TIMED_OUT, g_strdup ("message deadline passed"));
  } else if (!host || (t->start_at = eb_fetch_rate_reserve (f, host, round->deadline)) < 0) {
    eb_fetch_transfer_end (t, EB_REASON_RATE_LIMITED,
                  g_strdup_printf ("host %.100s: no slot before the message deadline", host ? host : ""));
  } else {
    if (!t->easy)
      t->easy = curl_easy_init ();
    t->fetch_deadline = g_get_monotonic_time () + (gint64) f->config->fetch_timeout * G_USEC_PER_SEC;
    eb_fetch_transfer_setup (t);
    t->state = STATE_WAITING;
    return TRUE;
  }
  return FALSE;
}

/* Planning one distinct URL of a round: its Transfer, added to @round's order
 * and @index; settled at once from the cache (this process's or the pool's),
 * deferred to the thread or instance already fetching it, refused by policy or
 * rate limit, or left to start. */
static void
round_plan (EbFetcher *f, Round *round, GHashTable *index, const char *url, guint64 max_bytes,
            gboolean defer, GPtrArray *remote)
{
  GPtrArray *transfers = round->order;
  Transfer *t = g_new0 (Transfer, 1);
  t->f = f;
  t->url = g_strdup (url);
  t->asked = g_strdup (url);
  t->max_bytes = max_bytes;
  t->deadline = round->deadline;
  t->round = round;
  t->cancel = g_private_get (&cancel_key);
  t->known = -1;
  t->index = transfers->len;
  g_hash_table_insert (index, (gpointer) url, t);
  g_ptr_array_add (transfers, t);
  t->result = eb_fetch_cache_get (f, url);
  if (t->result) {
    transfer_take (t);
    return;
  }
  /* another thread fetching the same URL: deferred, so a URL many messages
   * reference is fetched once */
  if (defer && f->config->cache_ttl && f->config->cache_entries) {
    g_mutex_lock (&f->lock);
    gboolean busy = g_hash_table_contains (f->inflight, url);
    if (!busy) {
      g_hash_table_add (f->inflight, g_strdup (url));
      t->claimed = TRUE;
    }
    g_mutex_unlock (&f->lock);
    if (busy) {
      t->deferred = TRUE;
      return;
    }
  }
  g_autofree char *detail = NULL;
  g_autofree char *host = NULL;
  EbReason why = eb_fetch_url_check (f, url, &detail, &host);
  /* the pool's cache, and its lock, once the URL may be fetched at all */
  if (why == EB_REASON_RESOLVED && eb_fetch_cache_shared_on (f)) {
    SharedOutcome o = eb_fetch_cache_shared_lookup (f, t, defer && t->claimed && remote);
    if (o == SHARED_HIT) {
      eb_fetch_cache_put (f, url, t->result);
      transfer_take (t);
      return;
    }
    if (o == SHARED_WAIT && defer && t->claimed && remote) {
      t->remote = TRUE;
      g_ptr_array_add (remote, g_strdup (url));
      return;
    }
  }
  if (why == EB_REASON_RESOLVED && (t->start_at = eb_fetch_rate_reserve (f, host, round->deadline)) < 0) {
    why = EB_REASON_RATE_LIMITED;
    detail = g_strdup_printf ("host %.100s: no slot before the message deadline", host);
  }
  if (why != EB_REASON_RESOLVED) {
    t->result = g_new0 (EbFetchResult, 1);
    t->result->reason = why;
    t->result->detail = g_steal_pointer (&detail);
  }
}

/* Those stopped or dropped for earlier references start again, in the
 * message's order, each once every earlier reference is done; @next is the
 * first of @round's transfers not yet started. */
static void
round_restart_later (EbFetcher *f, Round *round, guint next, guint *running)
{
  while (*running < f->config->max_concurrent_fetches && !g_queue_is_empty (round->later)) {
    Transfer *t = g_queue_peek_head (round->later);
    gboolean ready = TRUE;
    for (guint k = 0; k < t->index && ready; k++)
      ready = eb_fetch_transfer_final (g_ptr_array_index (round->order, k));
    /* (with nothing else running or left to start, every earlier one is done) */
    if (!ready && !(*running == 0 && next >= round->order->len))
      break;
    g_queue_pop_head (round->later);
    if (transfer_restart (f, t))
      (*running)++;
  }
}

/* Transfers start, in the message's order, up to the limit on concurrent
 * fetches. */
static void
round_start_next (EbFetcher *f, Round *round, guint *next, guint *running)
{
  while (*running < f->config->max_concurrent_fetches && *next < round->order->len) {
    Transfer *t = g_ptr_array_index (round->order, (*next)++);
    if (eb_fetch_transfer_final (t) || t->queued)
      continue;
    if (g_get_monotonic_time () >= round->deadline) {
      eb_fetch_transfer_end (t, EB_REASON_TIMED_OUT, g_strdup ("message deadline passed"));
      continue;
    }
    t->easy = curl_easy_init ();
    t->fetch_deadline = g_get_monotonic_time () + (gint64) f->config->fetch_timeout * G_USEC_PER_SEC;
    eb_fetch_transfer_setup (t);
    t->state = STATE_WAITING;
    (*running)++;
  }
}

/* Those started and waiting (for their slot, their address) move on; one that
 * ends there is remembered. */
static void
round_advance (EbFetcher *f, Round *round, guint next, CURLM *multi, LookupWaker *waker, guint *running)
{
  for (guint i = 0; i < next; i++) {
    Transfer *t = g_ptr_array_index (round->order, i);
    if (t->state != STATE_WAITING && t->state != STATE_LOOKUP)
      continue;
    eb_fetch_transfer_advance (t, multi, waker);
    if (t->result) {
      (*running)--;
      remember (f, t);
    }
  }
}

/* The transfers @multi reports done: queued again behind an earlier
 * reference, sent on to a redirect's target, or ended with their result. */
static void
round_collect (EbFetcher *f, CURLM *multi, LookupWaker *waker, guint *running)
{
  CURLMsg *msg;
  int left = 0;
  while ((msg = curl_multi_info_read (multi, &left))) {
    if (msg->msg != CURLMSG_DONE)
      continue;
    Transfer *t = NULL;
    curl_easy_getinfo (msg->easy_handle, CURLINFO_PRIVATE, (char **) &t);
    CURLcode code = msg->data.result;
    curl_multi_remove_handle (multi, t->easy);
    if (t->waits || t->evicted) {
      /* stopped for an earlier reference: started again after it */
      t->state = STATE_IDLE;
      (*running)--;
      eb_fetch_transfer_release (t);
      eb_fetch_transfer_queue (t);
      continue;
    }
    if (eb_fetch_transfer_done (t, code)) {
      t->fail = EB_REASON_RESOLVED;
      g_clear_pointer (&t->fail_detail, g_free);
      eb_fetch_transfer_setup (t);
      t->state = STATE_WAITING;
      eb_fetch_transfer_advance (t, multi, waker);
      if (t->result) {
        (*running)--;
        remember (f, t);
      }
    } else {
      t->state = STATE_IDLE;
      (*running)--;
      if (t->result->reason != EB_REASON_RESOLVED)
        eb_fetch_transfer_release (t);
      remember (f, t);
    }
  }
}

/* Driving @round's transfers through one multi handle until each has its
 * result, calling the thread's progress function about once a second from
 * @last_progress on. */
static void
round_drive (EbFetcher *f, Round *round, gint64 last_progress)
{
  Progress *progress = g_private_get (&progress_key);
  CURLM *multi = curl_multi_init ();
  /* a name lookup that ends wakes the poll below (curl_multi_wakeup) */
  LookupWaker *waker = eb_fetch_lookup_waker_new (multi);
  guint next = 0, running = 0;
  for (;;) {
    round_restart_later (f, round, next, &running);
    round_start_next (f, round, &next, &running);
    if (running == 0 && g_queue_is_empty (round->later) && next >= round->order->len)
      break;
    round_advance (f, round, next, multi, waker, &running);
    int still = 0;
    curl_multi_perform (multi, &still);
    round_collect (f, multi, waker, &running);
    if (running)
      curl_multi_poll (multi, NULL, 0, 100, NULL);
    if (progress && g_get_monotonic_time () - last_progress > G_USEC_PER_SEC) {
      progress->func (progress->data);
      last_progress = g_get_monotonic_time ();
    }
  }
  eb_fetch_lookup_waker_close (waker);
  curl_multi_cleanup (multi);
}

/* One result per reference, in the message's order: a copy of its transfer's,
 * NULL for one deferred or left to another instance. */
static GPtrArray *
round_results (const char *const *urls, guint n, GHashTable *index)
{
  GPtrArray *results = g_ptr_array_new_with_free_func ((GDestroyNotify) eb_fetch_result_free);
  for (guint i = 0; i < n; i++) {
    Transfer *t = g_hash_table_lookup (index, urls[i]);
    if (t->deferred || t->remote) {
      g_ptr_array_add (results, NULL);
      continue;
    }
    EbFetchResult *r = eb_fetch_result_copy (t->result);
    if (i > 0 && !r->from_cache) {
      /* a second reference to the same URL in this message shares the fetch */
      for (guint j = 0; j < i; j++)
        if (strcmp (urls[j], urls[i]) == 0) {
          r->from_cache = TRUE;
          break;
        }
    }
    g_ptr_array_add (results, r);
  }
  return results;
}

/* The claims of @transfers on their URLs end (but for those another instance
 * is fetching), and the threads waiting on them wake. */
static void
round_release_claims (EbFetcher *f, GPtrArray *transfers)
{
  g_mutex_lock (&f->lock);
  for (guint i = 0; i < transfers->len; i++) {
    Transfer *t = g_ptr_array_index (transfers, i);
    if (t->claimed && !t->remote)
      g_hash_table_remove (f->inflight, t->asked);
  }
  g_cond_broadcast (&f->done);
  g_mutex_unlock (&f->lock);
}

/* A transfer done with: the pool's lock it still holds given back, then all
 * it owns freed. */
static void
transfer_free (EbFetcher *f, Transfer *t)
{
  /* a lock taken for a fetch that never started (rate limit, deadline) */
  if (t->lock_token)
    eb_fetch_cache_shared_store (f, t, FALSE);
  if (t->easy)
    curl_easy_cleanup (t->easy);
  eb_buffer_free (t->body);
  eb_fetch_lookup_unref (t->lookup);
  curl_slist_free_all (t->resolve);
  curl_slist_free_all (t->prequote);
  g_free (t->transfer_coding);
  eb_fetch_result_free (t->result);
  g_free (t->fail_detail);
  g_free (t->content_length);
  g_free (t->content_encoding);
  g_free (t->url);
  g_free (t->asked);
  g_free (t->address);
  g_free (t->lock_token);
  g_free (t);
}

/* One round: fetch @urls under @round's deadline and budget; with @defer, a URL
 * that another thread is fetching is not waited for here (waiting while holding
 * claims could deadlock): its result is left NULL for the caller. Likewise a
 * URL another instance of the pool is fetching (Redis holds its lock): its
 * result is left NULL, it is added to @remote, and this call keeps its claim
 * on it (the caller waits in Redis, then releases the claim), so that this
 * process's other threads wait for it here rather than fetch it. */
static GPtrArray *
fetch_round (EbFetcher *f, const char *const *urls, guint n, guint64 max_bytes, gboolean defer,
             Round *round, GPtrArray *remote)
{
  gint64 started = g_get_monotonic_time ();
  g_autoptr (GHashTable) index = g_hash_table_new (g_str_hash, g_str_equal);   /* url -> Transfer* */
  g_autoptr (GPtrArray) transfers = g_ptr_array_new ();
  GQueue later = G_QUEUE_INIT;   /* stopped or dropped for earlier references */
  round->order = transfers;
  round->later = &later;

  for (guint i = 0; i < n; i++)
    if (!g_hash_table_contains (index, urls[i]))
      round_plan (f, round, index, urls[i], max_bytes, defer, remote);
  round_drive (f, round, started);
  round->order = NULL;
  round->later = NULL;

  GPtrArray *results = round_results (urls, n, index);
  round_release_claims (f, transfers);
  for (guint i = 0; i < transfers->len; i++)
    transfer_free (f, g_ptr_array_index (transfers, i));
  return results;
}

static int
hex_value (char c)
{
  return g_ascii_isxdigit (c) ? g_ascii_xdigit_value (c) : -1;
}

/* One segment of a file URL's path, @n bytes at @s, percent-decoded onto
 * @out; FALSE with *@detail when it is no name a file may have here: a bad
 * escape, a NUL or a '/' once decoded (a %2F is one name's byte in RFC 1738,
 * never a separator), "." or "..". */
static gboolean
file_segment (const char *s, gsize n, GString *out, char **detail)
{
  gsize start = out->len;
  for (gsize i = 0; i < n; i++) {
    char c = s[i];
    if (c == '%') {
      int hi = i + 2 < n ? hex_value (s[i + 1]) : -1;
      int lo = hi >= 0 ? hex_value (s[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        *detail = g_strdup ("a bad %-escape in the path");
        return FALSE;
      }
      c = (char) (hi * 16 + lo);
      i += 2;
      if (c == '\0' || c == '/') {
        *detail = g_strdup_printf ("the path holds an escaped %s", c ? "'/' (%2F)" : "NUL (%00)");
        return FALSE;
      }
    }
    g_string_append_c (out, c);
  }
  const char *seg = out->str + start;
  gsize sl = out->len - start;
  if ((sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.')) {
    *detail = g_strdup ("the path holds a \".\" or \"..\" segment");
    return FALSE;
  }
  return TRUE;
}

EbReason
eb_fetch_file_url_path (const char *url, char **path, char **detail)
{
  *path = NULL;
  if (g_ascii_strncasecmp (url, "file://", 7) != 0) {
    *detail = g_strdup ("a file URL must be file:///PATH or file://localhost/PATH");
    return EB_REASON_REFUSED_PATH;
  }
  const char *host = url + 7;
  const char *slash = strchr (host, '/');
  gsize hl = slash ? (gsize) (slash - host) : strlen (host);
  if (hl != 0 && !(hl == 9 && g_ascii_strncasecmp (host, "localhost", 9) == 0)) {
    *detail = g_strdup_printf ("host \"%.*s\"", (int) MIN (hl, 100), host);
    return EB_REASON_FILE_REMOTE_HOST;
  }
  if (!slash || !slash[1]) {
    *detail = g_strdup ("a file URL without a path");
    return EB_REASON_REFUSED_PATH;
  }
  if (strpbrk (slash, "?#")) {
    *detail = g_strdup ("a file URL with a query or a fragment");
    return EB_REASON_REFUSED_PATH;
  }
  g_autoptr (GString) out = g_string_new (NULL);
  for (const char *p = slash; *p == '/';) {
    const char *seg = p + 1;
    gsize n = strcspn (seg, "/");
    g_string_append_c (out, '/');
    if (!file_segment (seg, n, out, detail))
      return EB_REASON_REFUSED_PATH;
    if (out->len >= PATH_MAX) {
      *detail = g_strdup_printf ("a path of more than %d bytes", PATH_MAX - 1);
      return EB_REASON_REFUSED_PATH;
    }
    p = seg + n;
  }
  *path = g_string_free (g_steal_pointer (&out), FALSE);
  return EB_REASON_RESOLVED;
}

EbFetchResult *
eb_fetch_local_file (const char *path, const char *const *list, guint64 max_bytes, guint64 room)
{
  EbFetchResult *r = g_new0 (EbFetchResult, 1);
  r->final_url = g_strdup (path);
  char real[PATH_MAX];
  if (!g_path_is_absolute (path) || !realpath (path, real)) {
    r->reason = EB_REASON_REFUSED_PATH;
    r->detail = g_strdup_printf ("%.200s: %s", path,
                                 g_path_is_absolute (path) ? g_strerror (errno) : "not an absolute path");
    return r;
  }
  gboolean inside = FALSE;
  for (guint i = 0; list && list[i] && !inside; i++) {
    char rdir[PATH_MAX];
    if (!*list[i] || !realpath (list[i], rdir))
      continue;
    gsize dl = strlen (rdir);
    inside = strncmp (real, rdir, dl) == 0 && (real[dl] == '/' || (dl == 1 && rdir[0] == '/'));
  }
  if (!inside) {
    r->reason = EB_REASON_REFUSED_PATH;
    r->detail = g_strdup_printf ("%.200s is not inside local_file_dirs", real);
    return r;
  }
  /* the resolved path has no links left; O_NOFOLLOW refuses one swapped in since */
  int fd = open (real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat (fd, &st) != 0 || !S_ISREG (st.st_mode)) {
    r->reason = EB_REASON_REFUSED_PATH;
    r->detail = g_strdup_printf ("%.200s: %s", real, fd < 0 ? g_strerror (errno) : "not a regular file");
    if (fd >= 0)
      close (fd);
    return r;
  }
  if ((guint64) st.st_size > max_bytes) {
    close (fd);
    r->reason = EB_REASON_PART_TOO_LARGE;
    r->detail = g_strdup_printf ("%" G_GUINT64_FORMAT " bytes", (guint64) st.st_size);
    return r;
  }
  if ((guint64) st.st_size > room) {
    close (fd);
    r->reason = EB_REASON_MESSAGE_BUDGET;
    r->detail = g_strdup_printf ("%" G_GUINT64_FORMAT " bytes, %" G_GUINT64_FORMAT " left of max_message_bytes",
                                 (guint64) st.st_size, room);
    return r;
  }
  guint64 most = MIN (max_bytes, room);
  g_autoptr (EbBuffer) a = eb_buffer_new ((gsize) st.st_size);
  guint8 buf[65536];
  for (;;) {
    ssize_t n = read (fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || !a || eb_buffer_get_size (a) + (guint64) n > most || !eb_buffer_append (a, buf, (gsize) n)) {
      if (n != 0) {
        gboolean over = n > 0 && a && eb_buffer_get_size (a) + (guint64) n > most;
        r->reason = !over ? EB_REASON_FETCH_FAILED
                    : eb_buffer_get_size (a) + (guint64) n > max_bytes ? EB_REASON_PART_TOO_LARGE
                    : EB_REASON_MESSAGE_BUDGET;
        r->detail = g_strdup_printf ("%.200s: %s", real, n < 0 ? g_strerror (errno)
                                                     : !over ? "no memory for it" : "grew while read");
        close (fd);
        return r;
      }
      break;
    }
  }
  close (fd);
  r->reason = EB_REASON_RESOLVED;
  r->body = eb_buffer_free_to_bytes (g_steal_pointer (&a));
  return r;
}

/* @r, the result for @url of another thread's or instance's fetch, taken
 * after the first round: its body is held when there is room beside those of
 * the round (which it no longer displaces), else it is refused. @counted: the
 * URLs taken so far (a second reference shares the body). Returns: (transfer full). */
static EbFetchResult *
round_take_late (Round *round, EbFetchResult *r, const char *url, GHashTable *counted)
{
  gsize size = r->body && r->reason == EB_REASON_RESOLVED ? g_bytes_get_size (r->body) : 0;
  if (size == 0 || g_hash_table_contains (counted, url))
    return r;
  if (round->held + size > round->limit) {
    eb_fetch_result_free (r);
    r = g_new0 (EbFetchResult, 1);
    r->reason = EB_REASON_MESSAGE_BUDGET;
    r->detail = eb_fetch_transfer_budget_detail (round);
    r->final_url = g_strdup (url);
    return r;
  }
  round->held += size;
  g_hash_table_add (counted, (gpointer) url);
  return r;
}

static GPtrArray *fetch_all_curl (EbFetcher *f, const char *const *urls, guint n, guint64 max_bytes,
                                  gint64 deadline);

/* The news: and nntp: URLs of a message, after the others (libcurl's): one
 * after another on this thread, each within what the bodies already held
 * leave of max_message_bytes. */
GPtrArray *
eb_fetcher_fetch_all (EbFetcher *f, const char *const *urls, guint n, guint64 max_bytes)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) f->config->message_deadline * G_USEC_PER_SEC;
  g_autoptr (GPtrArray) others = g_ptr_array_new ();
  g_autoptr (GArray) where = g_array_new (FALSE, FALSE, sizeof (guint));
  for (guint i = 0; i < n; i++) {
    if (!eb_nntp_is_url (urls[i])) {
      g_ptr_array_add (others, (gpointer) urls[i]);
      g_array_append_val (where, i);
    }
  }
  if (others->len == n)
    return fetch_all_curl (f, urls, n, max_bytes, deadline);
  GPtrArray *results = g_ptr_array_new_full (n, (GDestroyNotify) eb_fetch_result_free);
  g_ptr_array_set_size (results, n);
  g_autoptr (GPtrArray) got = others->len ? fetch_all_curl (f, (const char *const *) others->pdata, others->len,
                                                            max_bytes, deadline)
                                          : g_ptr_array_new ();
  guint64 held = 0;
  for (guint k = 0; k < got->len; k++) {
    EbFetchResult *r = g_steal_pointer (&got->pdata[k]);
    gboolean first = TRUE;
    for (guint j = 0; j < k && first; j++)
      first = strcmp (others->pdata[j], others->pdata[k]) != 0;
    if (first && r && r->reason == EB_REASON_RESOLVED && r->body)
      held += g_bytes_get_size (r->body);
    g_ptr_array_index (results, g_array_index (where, guint, k)) = r;
  }
  guint64 limit = f->config->max_message_bytes;
  for (guint i = 0; i < n; i++) {
    if (!eb_nntp_is_url (urls[i]))
      continue;
    EbFetchResult *r = NULL;
    for (guint j = 0; j < i && !r; j++)
      if (strcmp (urls[j], urls[i]) == 0)
        r = eb_fetch_result_copy (g_ptr_array_index (results, j));
    if (!r) {
      guint64 room = limit > held ? limit - held : 0;
      r = eb_nntp_fetch (f, urls[i], MIN (max_bytes, room), deadline, g_private_get (&cancel_key),
                         eb_fetch_thread_progress);
      if (r->reason == EB_REASON_PART_TOO_LARGE && room < max_bytes) {
        r->reason = EB_REASON_MESSAGE_BUDGET;
        g_free (r->detail);
        r->detail = g_strdup_printf ("the message's fetched data would pass %" G_GUINT64_FORMAT " bytes", limit);
      }
      if (r->reason == EB_REASON_RESOLVED && r->body)
        held += g_bytes_get_size (r->body);
    }
    g_ptr_array_index (results, i) = r;
  }
  return results;
}

static GPtrArray *
fetch_all_curl (EbFetcher *f, const char *const *urls, guint n, guint64 max_bytes, gint64 deadline)
{
  /* one deadline and one budget for all the message's rounds */
  Round round = {
    .deadline = deadline,
    .limit = f->config->max_message_bytes,
  };
  g_autoptr (GPtrArray) remote = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GHashTable) counted = g_hash_table_new (g_str_hash, g_str_equal);
  GPtrArray *results = fetch_round (f, urls, n, max_bytes, TRUE, &round, remote);
  g_autoptr (GPtrArray) again = g_ptr_array_new ();
  g_autoptr (GArray) where = g_array_new (FALSE, FALSE, sizeof (guint));
  /* first the URLs another instance is fetching: this call holds their claims */
  for (guint i = 0; i < n; i++) {
    if (g_ptr_array_index (results, i)
        || !g_ptr_array_find_with_equal_func (remote, urls[i], g_str_equal, NULL))
      continue;
    gboolean first = TRUE;
    for (guint j = 0; j < i && first; j++)
      first = strcmp (urls[j], urls[i]) != 0;
    EbFetchResult *r = NULL;
    if (first) {
      r = eb_fetch_cache_shared_wait (f, urls[i], round.deadline, max_bytes, g_private_get (&cancel_key));
      if (r)
        eb_fetch_cache_put (f, urls[i], r);
    } else {
      r = eb_fetch_cache_get (f, urls[i]);
    }
    if (r) {
      g_ptr_array_index (results, i) = round_take_late (&round, r, urls[i], counted);
    } else {
      g_ptr_array_add (again, (gpointer) urls[i]);
      g_array_append_val (where, i);
    }
  }
  for (guint i = 0; i < n; i++) {
    if (g_ptr_array_index (results, i)
        || g_ptr_array_find_with_equal_func (remote, urls[i], g_str_equal, NULL))
      continue;
    /* holding no claim now: wait for the other thread (until the deadline),
     * then take its result */
    gboolean late = FALSE;
    g_mutex_lock (&f->lock);
    while (!late && g_hash_table_contains (f->inflight, urls[i]))
      late = !g_cond_wait_until (&f->done, &f->lock, round.deadline);
    g_mutex_unlock (&f->lock);
    EbFetchResult *r = late ? NULL : eb_fetch_cache_get (f, urls[i]);
    if (late || g_get_monotonic_time () >= round.deadline) {
      eb_fetch_result_free (r);
      r = g_new0 (EbFetchResult, 1);
      r->reason = EB_REASON_TIMED_OUT;
      r->detail = g_strdup ("message deadline passed");
      r->final_url = g_strdup (urls[i]);
    }
    if (r) {
      g_ptr_array_index (results, i) = round_take_late (&round, r, urls[i], counted);
    } else {
      g_ptr_array_add (again, (gpointer) urls[i]);
      g_array_append_val (where, i);
    }
  }
  if (again->len) {
    g_autoptr (GPtrArray) got = fetch_round (f, (const char *const *) again->pdata, again->len,
                                             max_bytes, FALSE, &round, NULL);
    for (guint k = 0; k < got->len; k++)
      g_ptr_array_index (results, g_array_index (where, guint, k)) = g_steal_pointer (&got->pdata[k]);
  }
  if (remote->len) {
    g_mutex_lock (&f->lock);
    for (guint k = 0; k < remote->len; k++)
      g_hash_table_remove (f->inflight, remote->pdata[k]);
    g_cond_broadcast (&f->done);
    g_mutex_unlock (&f->lock);
  }
  return results;
}

