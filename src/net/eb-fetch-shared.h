/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-fetch-shared.h - what the files of the fetcher share; not installed, not
 * for use outside them.
 *
 * The fetcher (eb-fetch.h) is cut by concept:
 *   eb-fetch.c           the public API (fetchers, a thread's cancel flag and
 *                        progress, local files) and the fetch round: plan,
 *                        drive, results;
 *   eb-fetch-transfer.c  one URL through libcurl: its easy handle, callbacks
 *                        (header, body, progress, open-socket: the policy's
 *                        check of every address), its bytes against the
 *                        message's budget, redirects, and how it ends;
 *   eb-fetch-url.c       the checks every URL passes (scheme, credentials,
 *                        domain), again for every redirect target;
 *   eb-fetch-lookup.c    host name lookups on threads of extbody's own, which
 *                        a deadline can abandon;
 *   eb-fetch-cache.c     results kept for cache_ttl: this process's cache and
 *                        the pool's shared cache in Redis, with the lock of the
 *                        instance fetching a URL;
 *   eb-fetch-rate.c      the rate limit per host: a token bucket, in Redis for
 *                        the pool when it is there, in this process otherwise;
 *   eb-fetch-result.c    EbFetchResult (eb-fetch-result.h);
 *   eb-nntp.c            news: and nntp: URLs, which libcurl does not speak:
 *                        an NNTP client of extbody's own on a socket libcurl
 *                        connects (eb-nntp.h);
 *   eb-ftp.c, eb-gopher.c  what ftp and gopher URLs need beyond libcurl
 *                        (eb-ftp.h, eb-gopher.h), pure functions the url and
 *                        transfer files call for the schemes whose row
 *                        (base/eb-scheme.h) names their rules.
 * Calls go one way only: eb-fetch.c calls the others; eb-fetch-transfer.c
 * calls the url, lookup, rate and result files and eb-ftp.c, eb-gopher.c;
 * eb-fetch-cache.c the url and result files; none of them calls back into
 * eb-fetch.c or includes eb-fetch.h.
 *
 * The structures below are the fetcher's state (EbFetcher: configuration,
 * policy, cache, rate buckets, in-flight table; its lock covers the cache, the
 * rate buckets and the in-flight table), one message's round (Round: deadline
 * and byte budget) and one URL's transfer (Transfer), each owned by the code
 * of its own file and read by the others. A function here is called from
 * another file of the fetcher; its name says which file holds it. Everything
 * runs on the calling thread, except name lookups (their own threads, which
 * touch only their Lookup).
 */
#pragma once
#include <glib.h>
#include <curl/curl.h>
#include "eb-config.h"
#include "eb-fetch-result.h"
#include "eb-buffer.h"
#include "eb-policy.h"
#include "eb-redis.h"

G_BEGIN_DECLS

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

/* An entry of this process's cache (eb-fetch-cache.c). */
typedef struct {
  EbFetchResult *result;
  gint64         at;
} CacheEntry;

/* A name lookup under way or done, shared by its thread and the transfer
 * waiting for it (eb-fetch-lookup.c). */
/* The fetch loop a lookup wakes when it ends (curl_multi_wakeup), so that the
 * transfer moves on at once rather than at the loop's next tick: shared by
 * the loop and its lookups, for the loop may end before an abandoned lookup
 * does (then @multi is NULL). */
typedef struct {
  gint    ref;
  GMutex  lock;
  CURLM  *multi;   /* under @lock; NULL once the loop ended */
} LookupWaker;

typedef struct {
  gint         ref;
  char        *host;
  gint         done;      /* atomic: addrs or error is set */
  char        *addrs;     /* "a,b,[v6]" for CURLOPT_RESOLVE */
  char        *error;
  LookupWaker *waker;     /* a reference, or NULL */
} Lookup;

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

/* What eb_fetch_transfer_admit() decides about bytes of a body. */
typedef enum {
  ADMIT,     /* counted: go on */
  WAIT,      /* earlier fetches under way hold the room: start again after them */
  REFUSE,    /* the earlier references done leave no room: message-budget */
} Admission;

/* What eb_fetch_cache_shared_lookup() found in the pool's shared cache. */
typedef enum {
  SHARED_MISS,     /* fetch it (no Redis, junk, or not waited for) */
  SHARED_HIT,      /* *result set */
  SHARED_OWN,      /* fetch it: this call holds the lock (t->lock_token) */
  SHARED_WAIT,     /* another instance holds the lock */
  SHARED_STALE,    /* a lock without expiry, or longer than a message: not an instance's */
} SharedOutcome;

/* eb-fetch-url.c */
char *eb_fetch_url_scheme (const char *url);
gboolean eb_fetch_url_scheme_allowed (const EbFetcher *f, const char *url);
gboolean eb_fetch_url_host_allowed (const EbFetcher *f, const char *host);
EbReason eb_fetch_url_check (EbFetcher *f, const char *url, char **detail, char **host_out);

/* eb-fetch-transfer.c */
gboolean eb_fetch_transfer_cancelled (const Transfer *t);
void eb_fetch_transfer_end (Transfer *t, EbReason reason, char *detail);
void eb_fetch_transfer_setup (Transfer *t);
void eb_fetch_transfer_queue (Transfer *t);
Admission eb_fetch_transfer_admit (Round *round, Transfer *t, guint64 need);
char *eb_fetch_transfer_budget_detail (const Round *round);
void eb_fetch_transfer_advance (Transfer *t, CURLM *multi, LookupWaker *waker);
gboolean eb_fetch_transfer_done (Transfer *t, CURLcode code);
gboolean eb_fetch_transfer_final (const Transfer *t);
void eb_fetch_transfer_release (Transfer *t);

/* eb-fetch-lookup.c */
Lookup *eb_fetch_lookup_start (const char *host, LookupWaker *waker);
LookupWaker *eb_fetch_lookup_waker_new (CURLM *multi);
void eb_fetch_lookup_waker_close (LookupWaker *w);
void eb_fetch_lookup_unref (Lookup *l);
gboolean eb_fetch_lookup_needed (const char *url, char **host, long *port);
gboolean eb_fetch_lookup_threads_full (void);

/* eb-fetch-cache.c */
void eb_fetch_cache_entry_free (CacheEntry *e);
EbFetchResult *eb_fetch_cache_get (EbFetcher *f, const char *url);
void eb_fetch_cache_put (EbFetcher *f, const char *url, const EbFetchResult *r);
gboolean eb_fetch_cache_shared_on (EbFetcher *f);
SharedOutcome eb_fetch_cache_shared_lookup (EbFetcher *f, Transfer *t, gboolean lock);
void eb_fetch_cache_shared_store (EbFetcher *f, Transfer *t, gboolean keep);
EbFetchResult *eb_fetch_cache_shared_wait (EbFetcher *f, const char *url, gint64 deadline, guint64 max_bytes,
                                           const gint *cancel);

/* eb-nntp.c: news: and nntp: URLs, one article each, on the calling thread,
 * within @max_bytes and the monotonic @deadline, until *@cancel (nullable);
 * @progress (the thread's hook, eb_fetch_thread_progress) is called while it
 * waits */
EbFetchResult *eb_nntp_fetch (EbFetcher *f, const char *url, guint64 max_bytes, gint64 deadline,
                              const gint *cancel, void (*progress) (gint64 *last));

/* eb-fetch-rate.c */
gint64 eb_fetch_rate_reserve (EbFetcher *f, const char *host, gint64 deadline);

G_END_DECLS
