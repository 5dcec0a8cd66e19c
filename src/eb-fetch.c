/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-fetch.c - libcurl multi fetching under the fetch policy (see eb-fetch.h). */
#include "eb-fetch.h"
#include "eb-buffer.h"
#include "eb-error.h"
#include "eb-policy.h"
#include "eb-redis.h"
#include <curl/curl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <netdb.h>
#include <arpa/inet.h>

struct _EbFetcher {
  EbConfig   *config;
  EbPolicy   *policy;
  GStrv       schemes;         /* lowercase */
  char       *protocols;       /* for CURLOPT_PROTOCOLS_STR */
  GStrv       allow_domains;
  GStrv       deny_domains;
  GMutex      lock;            /* cache and rate */
  GHashTable *cache;           /* url -> CacheEntry */
  GQueue      cache_order;     /* urls, oldest first */
  GHashTable *rate;            /* host -> Bucket */
  GHashTable *inflight;        /* url being fetched by some thread (under lock) */
  GCond       done;            /* signalled when an in-flight fetch ends */
  EbRedis    *redis;           /* (nullable) the pool's shared cache and limits */
};

typedef struct {
  EbFetchResult *result;
  gint64         at;
} CacheEntry;

static void
cache_entry_free (CacheEntry *e)
{
  eb_fetch_result_free (e->result);
  g_free (e);
}

void
eb_fetch_result_free (EbFetchResult *r)
{
  if (!r)
    return;
  g_free (r->detail);
  if (r->body)
    g_bytes_unref (r->body);
  g_free (r->content_type);
  g_free (r->final_url);
  g_free (r);
}

EbFetchResult *
eb_fetch_result_copy (const EbFetchResult *r)
{
  EbFetchResult *c = g_new0 (EbFetchResult, 1);
  c->reason = r->reason;
  c->detail = g_strdup (r->detail);
  c->body = r->body ? g_bytes_ref (r->body) : NULL;
  c->content_type = g_strdup (r->content_type);
  c->final_url = g_strdup (r->final_url);
  c->from_cache = r->from_cache;
  c->network = r->network;
  c->received = r->received;
  c->elapsed = r->elapsed;
  return c;
}

/* A list key's items (eb_config_split_list: the one list syntax, already
 * checked when the configuration loaded), lowercased when @lower; a domain is
 * kept without a leading or trailing dot. */
static GStrv
split_list (const char *text, gboolean lower)
{
  g_autoptr (GPtrArray) items = eb_config_split_list (text, NULL);
  GStrvBuilder *b = g_strv_builder_new ();
  for (guint i = 0; items && i < items->len; i++) {
    const char *item = g_ptr_array_index (items, i);
    g_autofree char *v = lower ? g_ascii_strdown (item, -1) : g_strdup (item);
    char *s = v;
    while (*s == '.')
      s++;
    gsize l = strlen (s);
    while (l && s[l - 1] == '.')
      s[--l] = '\0';
    if (*s)
      g_strv_builder_add (b, s);
  }
  GStrv out = g_strv_builder_end (b);
  g_strv_builder_unref (b);
  return out;
}

EbFetcher *
eb_fetcher_new (const EbConfig *config, GError **error)
{
  g_autoptr (EbPolicy) policy = eb_policy_new ();
  /* parsed and checked when the configuration was loaded */
  const GPtrArray *allow = eb_config_get_networks (config, "allow_networks");
  const GPtrArray *deny = eb_config_get_networks (config, "deny_networks");
  const GArray *ports = eb_config_get_ports (config);
  g_autoptr (GError) local = NULL;
  for (guint i = 0; i < allow->len; i++)
    eb_policy_add_allow (policy, g_ptr_array_index (allow, i));
  for (guint i = 0; i < deny->len; i++)
    eb_policy_add_deny (policy, g_ptr_array_index (deny, i));
  eb_policy_set_allowed_ports (policy, (const guint16 *) ports->data, ports->len);
  if (!eb_policy_add_host_addresses (policy, &local))
    g_clear_error (&local);   /* no interface list: loopback and private are refused anyway */

  g_auto (GStrv) schemes = split_list (config->allow_schemes, TRUE);
  for (guint i = 0; schemes[i]; i++) {
    if (strcmp (schemes[i], "http") && strcmp (schemes[i], "https") && strcmp (schemes[i], "ftp")) {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG,
                   "allow_schemes: \"%s\" cannot be fetched (http, https and ftp can)", schemes[i]);
      return NULL;
    }
  }
  EbFetcher *f = g_new0 (EbFetcher, 1);
  f->config = eb_config_copy (config);
  f->policy = g_steal_pointer (&policy);
  f->schemes = g_steal_pointer (&schemes);
  f->protocols = g_strjoinv (",", f->schemes);
  f->allow_domains = split_list (config->allow_domains, TRUE);
  f->deny_domains = split_list (config->deny_domains, TRUE);
  g_mutex_init (&f->lock);
  f->cache = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) cache_entry_free);
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

static char *
scheme_of (const char *url)
{
  const char *c = strchr (url, ':');
  if (!c || c == url)
    return NULL;
  for (const char *p = url; p < c; p++)
    if (!g_ascii_isalnum (*p) && *p != '+' && *p != '-' && *p != '.')
      return NULL;
  return g_ascii_strdown (url, c - url);
}

gboolean
eb_fetcher_scheme_allowed (const EbFetcher *f, const char *url)
{
  if (!f->config->fetch)
    return FALSE;
  g_autofree char *s = scheme_of (url);
  return s && g_strv_contains ((const char *const *) f->schemes, s);
}

static gboolean
domain_in (GStrv list, const char *host)
{
  gsize hl = strlen (host);
  for (guint i = 0; list[i]; i++) {
    gsize dl = strlen (list[i]);
    if (hl == dl && strcmp (host, list[i]) == 0)
      return TRUE;
    if (hl > dl && host[hl - dl - 1] == '.' && strcmp (host + hl - dl, list[i]) == 0)
      return TRUE;
  }
  return FALSE;
}

/* The checks a URL must pass before it is fetched, and again for every redirect
 * target. Returns RESOLVED, or the reason with *detail set. @host gets the
 * lowercase host. */
static EbReason
check_url (EbFetcher *f, const char *url, char **detail, char **host_out)
{
  CURLU *u = curl_url ();
  char *scheme = NULL, *user = NULL, *pass = NULL, *host = NULL;
  EbReason r = EB_REASON_RESOLVED;
  /* the scheme first: a URL of a scheme not enabled is refused for that, even
   * when curl could not parse it (data:,x has no host) */
  g_autofree char *given = scheme_of (url);
  if (given && !eb_fetcher_scheme_allowed (f, url)) {
    r = EB_REASON_SCHEME_DISABLED;
    *detail = g_strdup_printf ("scheme \"%.40s\"", given);
    goto out;
  }
  if (curl_url_set (u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
    r = EB_REASON_FETCH_FAILED;
    *detail = g_strdup ("malformed URL");
    goto out;
  }
  curl_url_get (u, CURLUPART_SCHEME, &scheme, 0);
  if (!scheme || !eb_fetcher_scheme_allowed (f, url)) {
    r = EB_REASON_SCHEME_DISABLED;
    *detail = g_strdup_printf ("scheme \"%s\"", scheme ? scheme : "");
    goto out;
  }
  if (strcmp (scheme, "ftp") == 0) {
    char *path = NULL;
    curl_url_get (u, CURLUPART_PATH, &path, 0);
    gsize pl = path ? strlen (path) : 0;
    gboolean listing = pl >= 7 && g_ascii_strcasecmp (path + pl - 7, ";type=d") == 0;
    curl_free (path);
    if (listing) {
      r = EB_REASON_FETCH_FAILED;
      *detail = g_strdup ("an ftp directory listing (;type=d) is not a body");
      goto out;
    }
  }
  curl_url_get (u, CURLUPART_USER, &user, 0);
  curl_url_get (u, CURLUPART_PASSWORD, &pass, 0);
  if ((user || pass) && !f->config->allow_credentials) {
    r = EB_REASON_CREDENTIALS;
    *detail = g_strdup ("the URL carries a user name or password");
    goto out;
  }
  if (curl_url_get (u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host || !*host) {
    r = EB_REASON_FETCH_FAILED;
    *detail = g_strdup ("URL without a host");
    goto out;
  }
  {
    g_autofree char *h = g_ascii_strdown (host, -1);
    gsize hl = strlen (h);
    while (hl && h[hl - 1] == '.')
      h[--hl] = '\0';
    if (domain_in (f->deny_domains, h) || (f->allow_domains[0] && !domain_in (f->allow_domains, h))) {
      r = EB_REASON_REFUSED_DOMAIN;
      *detail = g_strdup_printf ("host %.100s", h);
      goto out;
    }
    if (host_out)
      *host_out = g_steal_pointer (&h);
  }
out:
  curl_free (scheme);
  curl_free (user);
  curl_free (pass);
  curl_free (host);
  curl_url_cleanup (u);
  return r;
}

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

/* Returns: TRUE when Redis decided (*start set as rate_reserve returns it). */
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

static gint64
rate_reserve (EbFetcher *f, const char *host, gint64 deadline)
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

static EbFetchResult *
cache_get (EbFetcher *f, const char *url)
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

static void
cache_put (EbFetcher *f, const char *url, const EbFetchResult *r)
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

/* ---- name lookups that a deadline can abandon ------------------------------- */

/* libcurl's threaded resolver cannot be interrupted: a DNS server that never
 * answers holds a transfer for glibc's retries whatever the time limits say.
 * So extbody looks names up itself, on a thread of its own that it abandons
 * when connect_timeout or the message deadline comes first, and hands the
 * addresses to curl (CURLOPT_RESOLVE); the policy still checks each address
 * curl connects to. An abandoned thread ends when getaddrinfo() returns. */
/* Lookup threads alive in the process at most (abandoned ones included, until
 * getaddrinfo returns): a DNS outage under a flood of mail cannot pile threads
 * up. A transfer waits for a free one within its deadline. */
#define EB_FETCH_MAX_LOOKUPS 64
static gint live_lookups;

typedef struct {
  gint   ref;
  char  *host;
  gint   done;      /* atomic: addrs or error is set */
  char  *addrs;     /* "a,b,[v6]" for CURLOPT_RESOLVE */
  char  *error;
} Lookup;

static void
lookup_unref (Lookup *l)
{
  if (!l || !g_atomic_int_dec_and_test (&l->ref))
    return;
  g_free (l->host);
  g_free (l->addrs);
  g_free (l->error);
  g_free (l);
}

static gpointer
lookup_thread (gpointer data)
{
  Lookup *l = data;
  struct addrinfo hints = { 0 }, *res = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo (l->host, NULL, &hints, &res);
  if (rc != 0) {
    l->error = g_strdup_printf ("host %.100s: %s", l->host, gai_strerror (rc));
  } else {
    GString *s = g_string_new (NULL);
    guint n = 0;
    for (struct addrinfo *a = res; a && n < 16; a = a->ai_next) {
      char text[INET6_ADDRSTRLEN];
      const void *bin = a->ai_family == AF_INET ? (const void *) &((struct sockaddr_in *) a->ai_addr)->sin_addr
                      : a->ai_family == AF_INET6 ? (const void *) &((struct sockaddr_in6 *) a->ai_addr)->sin6_addr
                      : NULL;
      if (!bin || !inet_ntop (a->ai_family, bin, text, sizeof text))
        continue;
      g_autofree char *item = a->ai_family == AF_INET6 ? g_strdup_printf ("[%s]", text) : g_strdup (text);
      if (strstr (s->str, item))
        continue;
      g_string_append_printf (s, "%s%s", n++ ? "," : "", item);
    }
    freeaddrinfo (res);
    if (n)
      l->addrs = g_string_free (s, FALSE);
    else {
      g_string_free (s, TRUE);
      l->error = g_strdup_printf ("host %.100s: no address", l->host);
    }
  }
  g_atomic_int_set (&l->done, 1);
  lookup_unref (l);
  g_atomic_int_add (&live_lookups, -1);
  return NULL;
}

/* Start looking @host up; NULL when no thread could be made. */
static Lookup *
lookup_start (const char *host)
{
  Lookup *l = g_new0 (Lookup, 1);
  l->ref = 2;       /* the thread's and the caller's */
  l->host = g_strdup (host);
  g_atomic_int_inc (&live_lookups);
  GThread *th = g_thread_try_new ("eb-lookup", lookup_thread, l, NULL);
  if (!th) {
    g_atomic_int_add (&live_lookups, -1);
    g_free (l->host);
    g_free (l);
    return NULL;
  }
  g_thread_unref (th);
  return l;
}

/* ---- one transfer ---------------------------------------------------------- */

/* What all transfers of one message share: the deadline and the bytes held.
 *
 * Every body the message holds is counted against max_message_bytes: the
 * bytes received (or, once a response announces its size, the whole size,
 * reserved up front) of each fetch under way, and the size of each body
 * resolved, from the network or from a cache. The bodies live in mappings of
 * their own (eb-buffer.h), so the memory they take is what is counted. When a
 * body needs room that is not there, the references earlier in the message
 * come first, as if they were read one after another: the later ones holding
 * bytes give them up, latest first (a fetch under way is stopped, a resolved
 * body dropped; either is started again later); if the room is still not
 * there, the body waits for the earlier fetches under way to end (stopped,
 * started again once every earlier reference is done), or, when the earlier
 * ones done leave no room for it, it is refused (message-budget). A
 * reference started again once every earlier one is done can be neither
 * displaced nor made to wait: each is started at most twice. */
typedef struct {
  gint64     deadline;  /* monotonic µs, for the whole message */
  guint64    held;      /* bytes of bodies held or reserved, every round's */
  guint64    limit;     /* max_message_bytes */
  GPtrArray *order;     /* (element-type Transfer) (nullable): this round's transfers, in
                         * the message's order (first occurrences) */
  GQueue    *later;     /* (element-type Transfer): those to start again, in that order */
} Round;

typedef enum {
  STATE_IDLE,          /* not started, or done */
  STATE_WAITING,       /* for its rate-limit slot (start_at) */
  STATE_LOOKUP,        /* for its name lookup */
  STATE_CURL,          /* in the multi handle */
} TransferState;

typedef struct {
  /* what it fetches, for which message */
  EbFetcher   *f;
  char        *url;          /* current: the first URL, then each redirect target */
  char        *asked;        /* the URL asked for: the cache key */
  guint        redirects;
  guint        index;        /* in Round.order */
  Round       *round;
  gint64       deadline;     /* monotonic µs, for the whole message */
  guint64      max_bytes;
  const gint  *cancel;       /* (nullable) the thread's cancel flag */
  /* its way through the round: rate-limit slot, name lookup, curl */
  TransferState state;
  gint64       start_at;     /* its rate-limit slot */
  gint64       begun;        /* monotonic µs it left its rate-limit wait, or 0 */
  Lookup      *lookup;
  gint64       lookup_deadline;
  long         lookup_port;
  struct curl_slist *resolve;
  struct curl_slist *prequote;
  CURL        *easy;
  gint64       fetch_deadline;
  /* the bytes counted against the message budget */
  EbBuffer    *body;         /* the current response's body, when it is kept */
  guint64      held;         /* bytes counted for it in Round.held */
  gboolean     sized;        /* the current response's body was looked at (expect, discard) */
  guint64      expect;       /* the size the current response announced (kept), or 0 */
  gint64       known;        /* the size an earlier attempt announced, or -1 */
  gboolean     discard;      /* the current response's body is never used (not a 200) */
  guint64      discarded;    /* bytes of it */
  guint64      received;     /* body bytes that arrived */
  /* the current response */
  guint64      header_bytes;
  gboolean     is_http;      /* the current URL is http or https */
  gint64       announced;    /* ftp: the size the server announced (SIZE, 150), else -1 */
  /* the current HTTP response's header (a 1xx or a redirect starts another) */
  gboolean     header_ended; /* its blank line arrived */
  char        *content_length;    /* its Content-Length value, trimmed */
  gboolean     length_conflict;   /* two Content-Length fields that differ */
  char        *content_encoding;  /* a Content-Encoding other than identity */
  char        *transfer_coding;   /* a Transfer-Encoding coding other than chunked */
  /* its place among other references, threads and instances */
  gboolean     claimed;      /* this call holds the URL in the in-flight table */
  gboolean     deferred;     /* another thread is fetching it */
  gboolean     remote;       /* another instance is fetching it: wait in Redis */
  char        *lock_token;   /* (nullable) this call holds the URL's lock in Redis */
  gboolean     waits;        /* stopped for earlier fetches still under way: start again */
  gboolean     evicted;      /* its bytes went to an earlier reference: start again */
  gboolean     queued;       /* in Round.later */
  gboolean     restarted;    /* started again: every earlier reference was done */
  /* how it ended */
  EbReason     fail;         /* set by a callback that aborted */
  char        *fail_detail;
  char         errbuf[CURL_ERROR_SIZE];
  EbFetchResult *result;     /* when done */
  char        *address;      /* the address the body came from (CURLINFO_PRIMARY_IP) */
} Transfer;

static gboolean
transfer_cancelled (const Transfer *t)
{
  return t->cancel && g_atomic_int_get (t->cancel);
}

static void
transfer_fail (Transfer *t, EbReason r, char *detail)
{
  if (t->fail == EB_REASON_RESOLVED) {
    t->fail = r;
    t->fail_detail = detail;
  } else {
    g_free (detail);
  }
}

static curl_socket_t
opensocket_cb (void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
  Transfer *t = clientp;
  char *why = NULL;
  if (eb_policy_check (t->f->policy, &addr->addr, &why) != EB_POLICY_ALLOWED) {
    transfer_fail (t, EB_REASON_REFUSED_ADDRESS, why);
    return CURL_SOCKET_BAD;
  }
  g_free (why);
  return socket (addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
}

/* Give back what @t holds to the message's budget, and drop its body. */
static void
transfer_release (Transfer *t)
{
  t->round->held -= MIN (t->round->held, t->held);
  t->held = 0;
  g_clear_pointer (&t->body, eb_buffer_free);
}

static gint
index_cmp (gconstpointer a, gconstpointer b, gpointer data)
{
  const Transfer *x = a, *y = b;
  return x->index < y->index ? -1 : x->index > y->index;
}

static void
transfer_queue (Transfer *t)
{
  t->queued = TRUE;
  g_queue_insert_sorted (t->round->later, t, index_cmp, NULL);
}

/* Take @u's bytes for an earlier reference: a resolved body is dropped, a
 * fetch under way stopped (its callbacks abort it); either starts again. */
static void
transfer_evict (Transfer *u)
{
  transfer_release (u);
  if (u->result) {
    g_clear_pointer (&u->result, eb_fetch_result_free);
    transfer_queue (u);
  } else {
    u->evicted = TRUE;
  }
}

/* Done with, as far as this round goes: a result, or left to the caller. */
static gboolean
transfer_final (const Transfer *t)
{
  return t->result || t->deferred || t->remote;
}

typedef enum {
  ADMIT,     /* counted: go on */
  WAIT,      /* earlier fetches under way hold the room: start again after them */
  REFUSE,    /* the earlier references done leave no room: message-budget */
} Admission;

/* Room for @need more bytes of @t's body (see Round). */
static Admission
round_admit (Round *round, Transfer *t, guint64 need)
{
  GPtrArray *order = round->order;
  for (guint k = order->len; k > t->index + 1 && round->held + need > round->limit;) {
    Transfer *u = g_ptr_array_index (order, --k);
    if (u->held)
      transfer_evict (u);
  }
  if (round->held + need <= round->limit) {
    round->held += need;
    t->held += need;
    return ADMIT;
  }
  /* what is held now is @t's and earlier references': the bytes of those
   * still under way may yet go */
  guint64 going = 0;
  gboolean pending = FALSE;
  for (guint k = 0; k < t->index; k++) {
    Transfer *u = g_ptr_array_index (order, k);
    if (!transfer_final (u)) {
      pending = TRUE;
      going += u->held;
    }
  }
  return pending && !t->restarted && round->held - going + need <= round->limit ? WAIT : REFUSE;
}

static char *
budget_detail (const Round *round)
{
  return g_strdup_printf ("the message's fetched data would pass %" G_GUINT64_FORMAT " bytes", round->limit);
}

/* The first bytes of the current response's body: is it kept, and what size
 * does it announce (reserved at once)? */
static void
transfer_size (Transfer *t)
{
  t->sized = TRUE;
  t->expect = 0;
  t->discard = FALSE;
  t->discarded = 0;
  if (t->is_http) {
    long status = 0;
    curl_easy_getinfo (t->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
      /* a redirect's or an error's body: never used */
      t->discard = TRUE;
      return;
    }
    const char *v = t->content_length;
    if (v && *v && !t->length_conflict && strspn (v, "0123456789") == strlen (v) && strlen (v) < 20)
      t->expect = g_ascii_strtoull (v, NULL, 10);
  } else if (t->announced >= 0) {
    t->expect = (guint64) t->announced;
  }
  if (t->expect)
    t->known = (gint64) t->expect;
}

static size_t
write_cb (char *ptr, size_t size, size_t nmemb, void *userdata)
{
  Transfer *t = userdata;
  gsize n = size * nmemb;
  t->received += n;
  if (t->evicted)
    return 0;
  if (!t->sized)
    transfer_size (t);
  if (t->discard) {
    t->discarded += n;
    if (t->discarded > t->max_bytes) {
      transfer_fail (t, EB_REASON_PART_TOO_LARGE,
                     g_strdup_printf ("more than %" G_GUINT64_FORMAT " bytes", t->max_bytes));
      return 0;
    }
    return n;
  }
  gsize len = t->body ? eb_buffer_get_size (t->body) : 0;
  if (len + n > t->max_bytes || t->expect > t->max_bytes) {
    transfer_fail (t, EB_REASON_PART_TOO_LARGE,
                   len + n > t->max_bytes
                   ? g_strdup_printf ("more than %" G_GUINT64_FORMAT " bytes", t->max_bytes)
                   : g_strdup_printf ("announced size above %" G_GUINT64_FORMAT " bytes", t->max_bytes));
    return 0;
  }
  /* The message's bodies together stay within max_message_bytes (Round) */
  guint64 want = MAX ((guint64) len + n, t->expect);
  if (want > t->held) {
    Admission a = round_admit (t->round, t, want - t->held);
    if (a != ADMIT) {
      t->waits = a == WAIT;
      transfer_fail (t, EB_REASON_MESSAGE_BUDGET, budget_detail (t->round));
      return 0;
    }
  }
  if (!t->body)
    t->body = eb_buffer_new (t->expect);
  if (!t->body || !eb_buffer_append (t->body, ptr, n)) {
    transfer_fail (t, EB_REASON_FETCH_FAILED, g_strdup ("no memory for the body"));
    return 0;
  }
  return n;
}

/* The value of header line @line if its field name is @name (trimmed, a
 * copy), else NULL. */
static char *
field_value (const char *line, gsize n, const char *name)
{
  gsize nl = strlen (name);
  if (n <= nl || g_ascii_strncasecmp (line, name, nl) != 0 || line[nl] != ':')
    return NULL;
  return g_strstrip (g_strndup (line + nl + 1, n - nl - 1));
}

static size_t
header_cb (char *ptr, size_t size, size_t nmemb, void *userdata)
{
  Transfer *t = userdata;
  gsize n = size * nmemb;
  t->header_bytes += n;
  if (t->header_bytes > t->f->config->max_header_bytes) {
    transfer_fail (t, EB_REASON_FETCH_FAILED, g_strdup ("response header too large"));
    return 0;
  }
  if (!t->is_http) {
    /* ftp: the size the server announces, by SIZE (asked for in
     * transfer_setup) or in its 150 reply "(N bytes)" */
    g_autofree char *line = g_strndup (ptr, n);
    const char *num = NULL;
    if (g_str_has_prefix (line, "213 "))
      num = line + 4;
    else if (g_str_has_prefix (line, "150 ") && (num = strrchr (line, '(')))
      num = g_str_has_suffix (g_strchomp (line), " bytes)") ? num + 1 : NULL;
    guint64 v;
    char *end = NULL;
    if (num && g_ascii_isdigit (*num) && (v = g_ascii_strtoull (num, &end, 10), end != num)
        && (*end == '\0' || *end == ' ' || *end == '\r' || *end == '\n') && v < G_MAXINT64) {
      t->announced = (gint64) v;
      if (v > t->max_bytes) {
        transfer_fail (t, EB_REASON_PART_TOO_LARGE,
                       g_strdup_printf ("announced size above %" G_GUINT64_FORMAT " bytes", t->max_bytes));
        return 0;
      }
    }
    return n;
  }
  /* Only what curl does not check itself: that the header ended (curl takes a
   * connection closed inside it for an empty response), that Content-Length
   * fields agree (RFC 9110 section 8.6), and that no content coding we never
   * asked for (no Accept-Encoding is sent) was applied. */
  if (n >= 5 && g_ascii_strncasecmp (ptr, "HTTP/", 5) == 0) {
    t->header_ended = FALSE;
    t->sized = FALSE;
    t->length_conflict = FALSE;
    g_clear_pointer (&t->content_length, g_free);
    g_clear_pointer (&t->content_encoding, g_free);
    g_clear_pointer (&t->transfer_coding, g_free);
  } else if ((n == 2 && ptr[0] == '\r' && ptr[1] == '\n') || (n == 1 && ptr[0] == '\n')) {
    t->header_ended = TRUE;
    /* a transfer coding never asked for (libcurl would undo gzip or deflate):
     * refused before any of its data is decoded */
    if (t->transfer_coding) {
      transfer_fail (t, EB_REASON_FETCH_FAILED,
                     g_strdup_printf ("the response has Transfer-Encoding %.60s, which was not asked for",
                                      t->transfer_coding));
      return 0;
    }
  } else {
    char *v;
    if ((v = field_value (ptr, n, "Content-Length"))) {
      if (t->content_length && strcmp (t->content_length, v) != 0)
        t->length_conflict = TRUE;
      g_free (t->content_length);
      t->content_length = v;
    } else if ((v = field_value (ptr, n, "Transfer-Encoding"))) {
      g_auto (GStrv) codings = g_strsplit (v, ",", -1);
      for (guint i = 0; codings[i]; i++) {
        g_strstrip (codings[i]);
        if (*codings[i] && g_ascii_strcasecmp (codings[i], "chunked") != 0
            && g_ascii_strcasecmp (codings[i], "identity") != 0 && !t->transfer_coding)
          t->transfer_coding = g_strdup (codings[i]);
      }
      g_free (v);
    } else if ((v = field_value (ptr, n, "Content-Encoding"))) {
      if (*v && g_ascii_strcasecmp (v, "identity") != 0) {
        g_free (t->content_encoding);
        t->content_encoding = v;
      } else {
        g_free (v);
      }
    }
  }
  return n;
}

static int
xferinfo_cb (void *clientp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
             curl_off_t ulnow)
{
  Transfer *t = clientp;
  gint64 now = g_get_monotonic_time ();
  if (t->evicted)
    return 1;   /* its bytes went to an earlier reference */
  if (transfer_cancelled (t)) {
    transfer_fail (t, EB_REASON_TIMED_OUT, g_strdup ("cancelled"));
    return 1;
  }
  if (now > t->deadline) {
    transfer_fail (t, EB_REASON_TIMED_OUT, g_strdup ("message deadline passed"));
    return 1;
  }
  if (now > t->fetch_deadline) {
    transfer_fail (t, EB_REASON_TIMED_OUT, g_strdup ("fetch_timeout passed"));
    return 1;
  }
  return 0;
}

static void
transfer_setup (Transfer *t)
{
  const EbConfig *c = t->f->config;
  CURL *e = t->easy;
  curl_easy_reset (e);
  transfer_release (t);
  t->sized = FALSE;
  t->header_bytes = 0;
  t->announced = -1;
  g_autofree char *scheme = scheme_of (t->url);
  t->is_http = scheme && (!strcmp (scheme, "http") || !strcmp (scheme, "https"));
  t->header_ended = FALSE;
  t->length_conflict = FALSE;
  g_clear_pointer (&t->content_length, g_free);
  g_clear_pointer (&t->content_encoding, g_free);
  g_clear_pointer (&t->transfer_coding, g_free);
  curl_easy_setopt (e, CURLOPT_URL, t->url);
  curl_easy_setopt (e, CURLOPT_PRIVATE, t);
  curl_easy_setopt (e, CURLOPT_PROTOCOLS_STR, t->f->protocols);
  curl_easy_setopt (e, CURLOPT_REDIR_PROTOCOLS_STR, t->f->protocols);
  curl_easy_setopt (e, CURLOPT_FOLLOWLOCATION, 0L);   /* extbody follows, checking each */
  curl_easy_setopt (e, CURLOPT_OPENSOCKETFUNCTION, opensocket_cb);
  curl_easy_setopt (e, CURLOPT_OPENSOCKETDATA, t);
  curl_easy_setopt (e, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt (e, CURLOPT_WRITEDATA, t);
  curl_easy_setopt (e, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt (e, CURLOPT_HEADERDATA, t);
  curl_easy_setopt (e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt (e, CURLOPT_XFERINFOFUNCTION, xferinfo_cb);
  curl_easy_setopt (e, CURLOPT_XFERINFODATA, t);
  curl_easy_setopt (e, CURLOPT_ERRORBUFFER, t->errbuf);
  curl_easy_setopt (e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt (e, CURLOPT_CONNECTTIMEOUT_MS, (long) c->connect_timeout * 1000);
  curl_easy_setopt (e, CURLOPT_TIMEOUT_MS, (long) c->fetch_timeout * 1000);
  curl_easy_setopt (e, CURLOPT_LOW_SPEED_LIMIT, (long) c->low_speed_limit);
  curl_easy_setopt (e, CURLOPT_LOW_SPEED_TIME, (long) c->low_speed_time);
  curl_easy_setopt (e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) t->max_bytes);
  curl_easy_setopt (e, CURLOPT_USERAGENT, "extbody/" EXTBODY_VERSION);
  curl_easy_setopt (e, CURLOPT_PROXY, c->proxy);          /* "" : none, environment ignored */
  curl_easy_setopt (e, CURLOPT_NETRC, (long) CURL_NETRC_IGNORED);
  curl_easy_setopt (e, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt (e, CURLOPT_SSL_VERIFYHOST, 2L);
  if (c->ca_file && *c->ca_file)
    curl_easy_setopt (e, CURLOPT_CAINFO, c->ca_file);
  curl_easy_setopt (e, CURLOPT_FTP_FILEMETHOD, (long) CURLFTPMETHOD_MULTICWD);
  curl_easy_setopt (e, CURLOPT_FTP_USE_EPSV, 1L);
  /* curl waits for an FTP server's replies (the final 226 above all) in calls
   * that block and run no progress callback: bound them by fetch_timeout too */
  curl_easy_setopt (e, CURLOPT_SERVER_RESPONSE_TIMEOUT, (long) c->fetch_timeout);
  if (!t->is_http) {
    /* curl reads an ftp file only as far as SIZE announced and drops the
     * rest: it reads to the end here, and extbody compares the two
     * (transfer_done). SIZE is asked for by hand ("*": its failure is no
     * error) when the file name is plain. */
    curl_easy_setopt (e, CURLOPT_IGNORE_CONTENT_LENGTH, 1L);
    g_clear_pointer (&t->prequote, curl_slist_free_all);
    const char *slash = strrchr (t->url, '/');
    if (slash && slash[1] && strspn (slash + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                             "0123456789._-+~") == strlen (slash + 1)) {
      g_autofree char *cmd = g_strdup_printf ("*SIZE %s", slash + 1);
      t->prequote = curl_slist_append (NULL, cmd);
      curl_easy_setopt (e, CURLOPT_PREQUOTE, t->prequote);
    }
  }
  t->errbuf[0] = '\0';
}

/* A transfer that curl ended with an error: @r says why. */
static void
transfer_failed (Transfer *t, CURLcode code, gboolean is_http, EbFetchResult *r)
{
  if (t->fail != EB_REASON_RESOLVED) {
    r->reason = t->fail;
    r->detail = g_steal_pointer (&t->fail_detail);
  } else if (code == CURLE_OPERATION_TIMEDOUT) {
    r->reason = EB_REASON_TIMED_OUT;
    r->detail = g_strdup (t->errbuf[0] ? t->errbuf : curl_easy_strerror (code));
  } else if (code == CURLE_OUT_OF_MEMORY && is_http && !t->header_ended) {
    /* curl's own limit on one header line (100 KB) reports itself so */
    r->reason = EB_REASON_FETCH_FAILED;
    r->detail = g_strdup ("response header line too long");
  } else if (code == CURLE_FILESIZE_EXCEEDED) {
    r->reason = EB_REASON_PART_TOO_LARGE;
    r->detail = g_strdup_printf ("announced size above %" G_GUINT64_FORMAT " bytes", t->max_bytes);
  } else {
    r->reason = EB_REASON_FETCH_FAILED;
    r->detail = g_strdup (t->errbuf[0] ? t->errbuf : curl_easy_strerror (code));
  }
}

/* An HTTP 3xx answer: TRUE when @t now follows it (its URL moved on, a slot
 * reserved), FALSE with @r saying why not. */
static gboolean
transfer_redirect (Transfer *t, long status, const char *scheme, EbFetchResult *r)
{
  char *loc = NULL;
  curl_easy_getinfo (t->easy, CURLINFO_REDIRECT_URL, &loc);
  if (!loc) {
    r->reason = EB_REASON_HTTP_STATUS;
    r->detail = g_strdup_printf ("HTTP %ld without a Location", status);
    return FALSE;
  }
  if (t->redirects >= t->f->config->max_redirects) {
    r->reason = EB_REASON_TOO_MANY_REDIRECTS;
    r->detail = g_strdup_printf ("more than %u redirects", t->f->config->max_redirects);
    return FALSE;
  }
  g_autofree char *detail = NULL;
  g_autofree char *host = NULL;
  g_autofree char *to = scheme_of (loc);
  EbReason why = check_url (t->f, loc, &detail, &host);
  gint64 start = 0;
  if (why == EB_REASON_RESOLVED && g_strcmp0 (scheme, "https") == 0 && g_strcmp0 (to, "https") != 0) {
    /* what came over TLS is not given up for a plain connection */
    why = EB_REASON_INSECURE_REDIRECT;
    detail = g_strdup_printf ("https redirected to %.20s, which would drop TLS", to ? to : "?");
  }
  if (why == EB_REASON_RESOLVED && (start = rate_reserve (t->f, host, t->deadline)) < 0) {
    why = EB_REASON_RATE_LIMITED;
    detail = g_strdup_printf ("host %.100s: no slot before the message deadline", host);
  }
  if (why != EB_REASON_RESOLVED) {
    r->reason = why;
    r->detail = g_strdup_printf ("in redirect: %s", detail ? detail : "");
    return FALSE;
  }
  g_free (t->url);
  t->url = g_strdup (loc);
  t->redirects++;
  t->start_at = start;
  return TRUE;
}

/* A complete answer that is still not used (a status other than 200, a body
 * shorter than announced, a malformed header): TRUE with @r saying why. */
static gboolean
transfer_refused (Transfer *t, long status, gboolean is_http, gsize len, EbFetchResult *r)
{
  if (is_http && (status < 200 || status >= 300)) {
    r->reason = EB_REASON_HTTP_STATUS;
    r->detail = g_strdup_printf ("HTTP %ld", status);
  } else if (is_http && status != 200) {
    /* 204 has no body, 206 a piece of one: only a 200 carries the whole */
    r->reason = EB_REASON_HTTP_STATUS;
    r->detail = g_strdup_printf ("HTTP %ld: only a 200 with the whole body is used", status);
  } else if (!is_http && t->announced >= 0 && (guint64) t->announced != len) {
    r->reason = EB_REASON_FETCH_FAILED;
    r->detail = g_strdup_printf ("the server announced %" G_GINT64_FORMAT " bytes and sent %" G_GSIZE_FORMAT,
                                 t->announced, len);
  } else if (is_http && !t->header_ended) {
    r->reason = EB_REASON_FETCH_FAILED;
    r->detail = g_strdup ("the connection closed inside the response header");
  } else if (is_http && t->length_conflict) {
    r->reason = EB_REASON_FETCH_FAILED;
    r->detail = g_strdup ("the response has Content-Length fields that differ");
  } else if (is_http && t->content_encoding) {
    r->reason = EB_REASON_FETCH_FAILED;
    r->detail = g_strdup_printf ("the response has Content-Encoding %.60s, which was not asked for",
                                 t->content_encoding);
  } else {
    return FALSE;
  }
  return TRUE;
}

/* A body received whole: @r takes it, with its type and the address it came
 * from. */
static void
transfer_succeeded (Transfer *t, gsize len, EbFetchResult *r)
{
  r->reason = EB_REASON_RESOLVED;
  /* one copy: the buffer's mapping becomes the result's (and the cache's);
   * what was reserved beyond it goes back */
  r->body = t->body ? eb_buffer_free_to_bytes (g_steal_pointer (&t->body)) : g_bytes_new (NULL, 0);
  t->round->held -= MIN (t->round->held, t->held - MIN (t->held, len));
  t->held = MIN (t->held, len);
  char *ct = NULL;
  curl_easy_getinfo (t->easy, CURLINFO_CONTENT_TYPE, &ct);
  r->content_type = g_strdup (ct);
  char *ip = NULL;
  curl_easy_getinfo (t->easy, CURLINFO_PRIMARY_IP, &ip);
  g_free (t->address);
  t->address = g_strdup (ip);
}

/* A finished transfer: a result, or a redirect to follow (returns TRUE). */
static gboolean
transfer_done (Transfer *t, CURLcode code)
{
  EbFetchResult *r = g_new0 (EbFetchResult, 1);
  long status = 0;
  gsize len = t->body ? eb_buffer_get_size (t->body) : 0;
  curl_easy_getinfo (t->easy, CURLINFO_RESPONSE_CODE, &status);
  g_autofree char *scheme = scheme_of (t->url);
  gboolean is_http = scheme && (!strcmp (scheme, "http") || !strcmp (scheme, "https"));

  if (code != CURLE_OK) {
    transfer_failed (t, code, is_http, r);
  } else if (is_http && status >= 300 && status < 400) {
    if (transfer_redirect (t, status, scheme, r)) {
      eb_fetch_result_free (r);
      return TRUE;
    }
  } else if (!transfer_refused (t, status, is_http, len, r)) {
    transfer_succeeded (t, len, r);
  }
  r->final_url = g_strdup (t->url);
  t->result = r;
  return FALSE;
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

/* The host and port to look up for @url, when it names a host rather than an
 * address; FALSE otherwise. */
static gboolean
needs_lookup (const char *url, char **host, long *port)
{
  CURLU *u = curl_url ();
  char *h = NULL, *p = NULL;
  gboolean need = FALSE;
  unsigned flags = 0;
#ifdef CURLU_PUNYCODE
  flags |= CURLU_PUNYCODE;
#endif
  if (curl_url_set (u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK
      && curl_url_get (u, CURLUPART_HOST, &h, flags) == CURLUE_OK && h && *h && h[0] != '['
      && !g_hostname_is_ip_address (h)
      && curl_url_get (u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) == CURLUE_OK && p) {
    *host = g_strdup (h);
    *port = strtol (p, NULL, 10);
    need = TRUE;
  }
  curl_free (h);
  curl_free (p);
  curl_url_cleanup (u);
  return need;
}

static void
transfer_end (Transfer *t, EbReason reason, char *detail)
{
  t->result = g_new0 (EbFetchResult, 1);
  t->result->reason = reason;
  t->result->detail = detail;
  t->result->final_url = g_strdup (t->url);
  t->state = STATE_IDLE;
  transfer_release (t);
}

/* Move @t on as far as it can go now: from its rate-limit slot to its name
 * lookup, from its lookup to curl. */
static void
transfer_advance (Transfer *t, CURLM *multi)
{
  gint64 now = g_get_monotonic_time ();
  if (t->state == STATE_WAITING) {
    if (now < t->start_at)
      return;
    /* fetch_timeout runs from here: the wait for a rate-limit turn is the
     * message deadline's business */
    if (t->redirects == 0)
      t->fetch_deadline = now + (gint64) t->f->config->fetch_timeout * G_USEC_PER_SEC;
    if (!t->begun)
      t->begun = now;
    g_autofree char *host = NULL;
    long port = 0;
    g_clear_pointer (&t->resolve, curl_slist_free_all);
    /* through a proxy, the proxy looks the host up */
    const char *proxy = t->f->config->proxy;
    if (!(proxy && *proxy) && needs_lookup (t->url, &host, &port)) {
      if (g_atomic_int_get (&live_lookups) >= EB_FETCH_MAX_LOOKUPS) {
        if (now >= t->deadline)
          transfer_end (t, EB_REASON_TIMED_OUT,
                        g_strdup ("message deadline passed waiting for a name lookup thread"));
        return;
      }
      g_clear_pointer (&t->lookup, lookup_unref);
      t->lookup = lookup_start (host);
      if (!t->lookup) {
        transfer_end (t, EB_REASON_FETCH_FAILED, g_strdup ("no thread for the name lookup"));
        return;
      }
      t->lookup_deadline = MIN (t->deadline, now + (gint64) t->f->config->connect_timeout * G_USEC_PER_SEC);
      t->lookup_port = port;
      t->state = STATE_LOOKUP;
    } else {
      t->state = STATE_CURL;
      curl_multi_add_handle (multi, t->easy);
      return;
    }
  }
  if (t->state == STATE_LOOKUP) {
    if (g_atomic_int_get (&t->lookup->done)) {
      if (t->lookup->error) {
        transfer_end (t, EB_REASON_FETCH_FAILED, g_strdup (t->lookup->error));
      } else {
        g_autofree char *entry = g_strdup_printf ("%s:%ld:%s", t->lookup->host, t->lookup_port,
                                                  t->lookup->addrs);
        t->resolve = curl_slist_append (NULL, entry);
        curl_easy_setopt (t->easy, CURLOPT_RESOLVE, t->resolve);
        t->state = STATE_CURL;
        curl_multi_add_handle (multi, t->easy);
      }
      g_clear_pointer (&t->lookup, lookup_unref);
    } else if (now >= t->lookup_deadline) {
      /* the thread is left to end on its own */
      transfer_end (t, EB_REASON_TIMED_OUT,
                    g_strdup_printf ("host %.100s: no answer to the name lookup before %s", t->lookup->host,
                                     t->lookup_deadline == t->deadline ? "the message deadline"
                                                                       : "connect_timeout"));
      g_clear_pointer (&t->lookup, lookup_unref);
    }
  }
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

static gboolean
shared_on (EbFetcher *f)
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
  if (check_url (f, r->final_url, &why, NULL) != EB_REASON_RESOLVED
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

typedef enum {
  SHARED_MISS,     /* fetch it (no Redis, junk, or not waited for) */
  SHARED_HIT,      /* *result set */
  SHARED_OWN,      /* fetch it: this call holds the lock (t->lock_token) */
  SHARED_WAIT,     /* another instance holds the lock */
  SHARED_STALE,    /* a lock without expiry, or longer than a message: not an instance's */
} SharedOutcome;

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
static SharedOutcome
shared_lookup (EbFetcher *f, Transfer *t, gboolean lock)
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
static void
shared_store (EbFetcher *f, Transfer *t, gboolean keep)
{
  if (!shared_on (f) || (!keep && !t->lock_token))
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
static EbFetchResult *
shared_wait (EbFetcher *f, const char *url, gint64 deadline, guint64 max_bytes)
{
  g_autofree char *entry = shared_key (f, "c:", url);
  g_autofree char *lk = shared_key (f, "l:", url);
  const char *argv[] = { entry, lk };
  gint64 reserve = MIN ((gint64) f->config->fetch_timeout, (gint64) f->config->message_deadline / 2) * G_USEC_PER_SEC;
  gint64 until = deadline - reserve;
  gulong pause = 5000;
  const gint *cancel = g_private_get (&cancel_key);
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
  if (r == EB_REASON_RATE_LIMITED || r == EB_REASON_MESSAGE_BUDGET || transfer_cancelled (t)
      || (r == EB_REASON_TIMED_OUT && g_get_monotonic_time () >= t->deadline)) {
    shared_store (f, t, FALSE);
    return;
  }
  cache_put (f, t->asked, t->result);
  shared_store (f, t, TRUE);
}

/* @t has a result from a cache (this process's or the pool's): a body in it
 * is held like a fetched one (Round). */
static void
transfer_take (Transfer *t)
{
  gsize size = t->result->body ? g_bytes_get_size (t->result->body) : 0;
  if (size == 0 || t->result->reason != EB_REASON_RESOLVED)
    return;
  Admission a = round_admit (t->round, t, size);
  if (a == ADMIT)
    return;
  g_clear_pointer (&t->result, eb_fetch_result_free);
  if (a == WAIT)
    transfer_queue (t);
  else
    transfer_end (t, EB_REASON_MESSAGE_BUDGET, budget_detail (t->round));
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
  if ((t->result = cache_get (f, t->asked))) {
    transfer_take (t);
    return FALSE;
  }
  if (t->known >= 0) {
    guint64 after = 0;   /* held by @t and later references, which it may displace */
    for (guint k = t->index; k < round->order->len; k++)
      after += ((Transfer *) g_ptr_array_index (round->order, k))->held;
    if (round->held - after + (guint64) t->known > round->limit) {
      transfer_end (t, EB_REASON_MESSAGE_BUDGET, budget_detail (round));
      return FALSE;
    }
  }
  g_autofree char *detail = NULL;
  g_autofree char *host = NULL;
  check_url (f, t->url, &detail, &host);
  if (g_get_monotonic_time () >= round->deadline) {
    transfer_end (t, EB_REASON_TIMED_OUT, g_strdup ("message deadline passed"));
  } else if (!host || (t->start_at = rate_reserve (f, host, round->deadline)) < 0) {
    transfer_end (t, EB_REASON_RATE_LIMITED,
                  g_strdup_printf ("host %.100s: no slot before the message deadline", host ? host : ""));
  } else {
    if (!t->easy)
      t->easy = curl_easy_init ();
    t->fetch_deadline = g_get_monotonic_time () + (gint64) f->config->fetch_timeout * G_USEC_PER_SEC;
    transfer_setup (t);
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
  t->result = cache_get (f, url);
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
  EbReason why = check_url (f, url, &detail, &host);
  /* the pool's cache, and its lock, once the URL may be fetched at all */
  if (why == EB_REASON_RESOLVED && shared_on (f)) {
    SharedOutcome o = shared_lookup (f, t, defer && t->claimed && remote);
    if (o == SHARED_HIT) {
      cache_put (f, url, t->result);
      transfer_take (t);
      return;
    }
    if (o == SHARED_WAIT && defer && t->claimed && remote) {
      t->remote = TRUE;
      g_ptr_array_add (remote, g_strdup (url));
      return;
    }
  }
  if (why == EB_REASON_RESOLVED && (t->start_at = rate_reserve (f, host, round->deadline)) < 0) {
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
      ready = transfer_final (g_ptr_array_index (round->order, k));
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
    if (transfer_final (t) || t->queued)
      continue;
    if (g_get_monotonic_time () >= round->deadline) {
      transfer_end (t, EB_REASON_TIMED_OUT, g_strdup ("message deadline passed"));
      continue;
    }
    t->easy = curl_easy_init ();
    t->fetch_deadline = g_get_monotonic_time () + (gint64) f->config->fetch_timeout * G_USEC_PER_SEC;
    transfer_setup (t);
    t->state = STATE_WAITING;
    (*running)++;
  }
}

/* Those started and waiting (for their slot, their address) move on; one that
 * ends there is remembered. */
static void
round_advance (EbFetcher *f, Round *round, guint next, CURLM *multi, guint *running)
{
  for (guint i = 0; i < next; i++) {
    Transfer *t = g_ptr_array_index (round->order, i);
    if (t->state != STATE_WAITING && t->state != STATE_LOOKUP)
      continue;
    transfer_advance (t, multi);
    if (t->result) {
      (*running)--;
      remember (f, t);
    }
  }
}

/* The transfers @multi reports done: queued again behind an earlier
 * reference, sent on to a redirect's target, or ended with their result. */
static void
round_collect (EbFetcher *f, CURLM *multi, guint *running)
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
      transfer_release (t);
      transfer_queue (t);
      continue;
    }
    if (transfer_done (t, code)) {
      t->fail = EB_REASON_RESOLVED;
      g_clear_pointer (&t->fail_detail, g_free);
      transfer_setup (t);
      t->state = STATE_WAITING;
      transfer_advance (t, multi);
      if (t->result) {
        (*running)--;
        remember (f, t);
      }
    } else {
      t->state = STATE_IDLE;
      (*running)--;
      if (t->result->reason != EB_REASON_RESOLVED)
        transfer_release (t);
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
  guint next = 0, running = 0;
  for (;;) {
    round_restart_later (f, round, next, &running);
    round_start_next (f, round, &next, &running);
    if (running == 0 && g_queue_is_empty (round->later) && next >= round->order->len)
      break;
    round_advance (f, round, next, multi, &running);
    int still = 0;
    curl_multi_perform (multi, &still);
    round_collect (f, multi, &running);
    if (running)
      curl_multi_poll (multi, NULL, 0, 100, NULL);
    if (progress && g_get_monotonic_time () - last_progress > G_USEC_PER_SEC) {
      progress->func (progress->data);
      last_progress = g_get_monotonic_time ();
    }
  }
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
    shared_store (f, t, FALSE);
  if (t->easy)
    curl_easy_cleanup (t->easy);
  eb_buffer_free (t->body);
  lookup_unref (t->lookup);
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

EbFetchResult *
eb_fetch_local_file (const char *path, const char *dirs, guint64 max_bytes, guint64 room)
{
  EbFetchResult *r = g_new0 (EbFetchResult, 1);
  r->final_url = g_strdup (path);
  g_autoptr (GPtrArray) dir_items = eb_config_split_list (dirs, NULL);
  if (!dir_items)
    dir_items = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (dir_items, NULL);
  char **list = (char **) dir_items->pdata;
  char real[PATH_MAX];
  if (!g_path_is_absolute (path) || !realpath (path, real)) {
    r->reason = EB_REASON_REFUSED_PATH;
    r->detail = g_strdup_printf ("%.200s: %s", path,
                                 g_path_is_absolute (path) ? g_strerror (errno) : "not an absolute path");
    return r;
  }
  gboolean inside = FALSE;
  for (guint i = 0; list[i] && !inside; i++) {
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
    r->detail = budget_detail (round);
    r->final_url = g_strdup (url);
    return r;
  }
  round->held += size;
  g_hash_table_add (counted, (gpointer) url);
  return r;
}

GPtrArray *
eb_fetcher_fetch_all (EbFetcher *f, const char *const *urls, guint n, guint64 max_bytes)
{
  /* one deadline and one budget for all the message's rounds */
  Round round = {
    .deadline = g_get_monotonic_time () + (gint64) f->config->message_deadline * G_USEC_PER_SEC,
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
      r = shared_wait (f, urls[i], round.deadline, max_bytes);
      if (r)
        cache_put (f, urls[i], r);
    } else {
      r = cache_get (f, urls[i]);
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
    EbFetchResult *r = late ? NULL : cache_get (f, urls[i]);
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
