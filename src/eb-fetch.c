/* eb-fetch.c - libcurl multi fetching under the fetch policy (see eb-fetch.h). */
#include "eb-fetch.h"
#include "eb-error.h"
#include "eb-policy.h"
#include <curl/curl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

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
  GHashTable *rate;            /* host -> GArray of gint64 (µs, last minute) */
  GHashTable *inflight;        /* url being fetched by some thread (under lock) */
  GCond       done;            /* signalled when an in-flight fetch ends */
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
  return c;
}

static GStrv
split_list (const char *text, gboolean lower)
{
  g_auto (GStrv) parts = g_strsplit_set (text ? text : "", ", \t", -1);
  GStrvBuilder *b = g_strv_builder_new ();
  for (guint i = 0; parts[i]; i++) {
    if (!*parts[i])
      continue;
    g_autofree char *v = lower ? g_ascii_strdown (parts[i], -1) : g_strdup (parts[i]);
    /* a domain is written without a leading or trailing dot */
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
  g_autoptr (GPtrArray) allow = NULL, deny = NULL;
  g_autoptr (GArray) ports = NULL;
  g_autoptr (GError) local = NULL;
  if (!eb_policy_parse_cidr_list (config->allow_networks, &allow, &local)
      || !eb_policy_parse_cidr_list (config->deny_networks, &deny, &local)
      || !eb_policy_parse_port_list (config->allow_ports, &ports, &local)) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "fetch policy: %s", local->message);
    return NULL;
  }
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
  f->rate = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_array_unref);
  f->inflight = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_cond_init (&f->done);
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

/* One more request to @host in the last minute, if the limit allows. */
static gboolean
rate_take (EbFetcher *f, const char *host)
{
  gint64 now = g_get_monotonic_time ();
  g_mutex_lock (&f->lock);
  GArray *a = g_hash_table_lookup (f->rate, host);
  if (!a) {
    a = g_array_new (FALSE, FALSE, sizeof (gint64));
    g_hash_table_insert (f->rate, g_strdup (host), a);
  }
  guint keep = 0;
  while (keep < a->len && g_array_index (a, gint64, keep) < now - 60 * G_USEC_PER_SEC)
    keep++;
  g_array_remove_range (a, 0, keep);
  gboolean ok = a->len < f->config->max_requests_per_host;
  if (ok)
    g_array_append_val (a, now);
  g_mutex_unlock (&f->lock);
  return ok;
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

/* ---- one transfer ---------------------------------------------------------- */

typedef struct {
  EbFetcher   *f;
  CURL        *easy;
  char        *url;          /* current: the first URL, then each redirect target */
  char        *asked;        /* the URL asked for: the cache key */
  guint        redirects;
  GByteArray  *body;
  guint64      max_bytes;
  guint64      header_bytes;
  gboolean     is_http;      /* the current URL is http or https */
  /* the current HTTP response's header (a 1xx or a redirect starts another) */
  gboolean     header_ended; /* its blank line arrived */
  char        *content_length;    /* its Content-Length value, trimmed */
  gboolean     length_conflict;   /* two Content-Length fields that differ */
  char        *content_encoding;  /* a Content-Encoding other than identity */
  gint64       deadline;     /* monotonic µs, for the whole message */
  gint64       fetch_deadline;
  EbReason     fail;         /* set by a callback that aborted */
  char        *fail_detail;
  char         errbuf[CURL_ERROR_SIZE];
  EbFetchResult *result;     /* when done */
  gboolean     claimed;      /* this call holds the URL in the in-flight table */
  gboolean     deferred;     /* another thread is fetching it */
  const gint  *cancel;       /* (nullable) the thread's cancel flag */
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

static size_t
write_cb (char *ptr, size_t size, size_t nmemb, void *userdata)
{
  Transfer *t = userdata;
  gsize n = size * nmemb;
  if (t->body->len + n > t->max_bytes) {
    transfer_fail (t, EB_REASON_PART_TOO_LARGE,
                   g_strdup_printf ("more than %" G_GUINT64_FORMAT " bytes", t->max_bytes));
    return 0;
  }
  g_byte_array_append (t->body, (const guint8 *) ptr, (guint) n);
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
  if (!t->is_http)
    return n;
  /* Only what curl does not check itself: that the header ended (curl takes a
   * connection closed inside it for an empty response), that Content-Length
   * fields agree (RFC 9110 section 8.6), and that no content coding we never
   * asked for (no Accept-Encoding is sent) was applied. */
  if (n >= 5 && g_ascii_strncasecmp (ptr, "HTTP/", 5) == 0) {
    t->header_ended = FALSE;
    t->length_conflict = FALSE;
    g_clear_pointer (&t->content_length, g_free);
    g_clear_pointer (&t->content_encoding, g_free);
  } else if ((n == 2 && ptr[0] == '\r' && ptr[1] == '\n') || (n == 1 && ptr[0] == '\n')) {
    t->header_ended = TRUE;
  } else {
    char *v;
    if ((v = field_value (ptr, n, "Content-Length"))) {
      if (t->content_length && strcmp (t->content_length, v) != 0)
        t->length_conflict = TRUE;
      g_free (t->content_length);
      t->content_length = v;
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
  g_byte_array_set_size (t->body, 0);
  t->header_bytes = 0;
  g_autofree char *scheme = scheme_of (t->url);
  t->is_http = scheme && (!strcmp (scheme, "http") || !strcmp (scheme, "https"));
  t->header_ended = FALSE;
  t->length_conflict = FALSE;
  g_clear_pointer (&t->content_length, g_free);
  g_clear_pointer (&t->content_encoding, g_free);
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
  t->errbuf[0] = '\0';
}

/* A finished transfer: a result, or a redirect to follow (returns TRUE). */
static gboolean
transfer_done (Transfer *t, CURLcode code)
{
  EbFetchResult *r = g_new0 (EbFetchResult, 1);
  long status = 0;
  curl_easy_getinfo (t->easy, CURLINFO_RESPONSE_CODE, &status);
  g_autofree char *scheme = scheme_of (t->url);
  gboolean is_http = scheme && (!strcmp (scheme, "http") || !strcmp (scheme, "https"));

  if (code != CURLE_OK) {
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
  } else if (is_http && status >= 300 && status < 400) {
    char *loc = NULL;
    curl_easy_getinfo (t->easy, CURLINFO_REDIRECT_URL, &loc);
    if (!loc) {
      r->reason = EB_REASON_HTTP_STATUS;
      r->detail = g_strdup_printf ("HTTP %ld without a Location", status);
    } else if (t->redirects >= t->f->config->max_redirects) {
      r->reason = EB_REASON_TOO_MANY_REDIRECTS;
      r->detail = g_strdup_printf ("more than %u redirects", t->f->config->max_redirects);
    } else {
      g_autofree char *detail = NULL;
      g_autofree char *host = NULL;
      EbReason why = check_url (t->f, loc, &detail, &host);
      if (why == EB_REASON_RESOLVED && !rate_take (t->f, host)) {
        why = EB_REASON_RATE_LIMITED;
        detail = g_strdup_printf ("host %.100s", host);
      }
      if (why != EB_REASON_RESOLVED) {
        r->reason = why;
        r->detail = g_strdup_printf ("in redirect: %s", detail ? detail : "");
      } else {
        g_free (t->url);
        t->url = g_strdup (loc);
        t->redirects++;
        eb_fetch_result_free (r);
        return TRUE;
      }
    }
  } else if (is_http && (status < 200 || status >= 300)) {
    r->reason = EB_REASON_HTTP_STATUS;
    r->detail = g_strdup_printf ("HTTP %ld", status);
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
    r->reason = EB_REASON_RESOLVED;
    r->body = g_bytes_new (t->body->data, t->body->len);
    char *ct = NULL;
    curl_easy_getinfo (t->easy, CURLINFO_CONTENT_TYPE, &ct);
    r->content_type = g_strdup (ct);
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

/* One round: fetch @urls; with @defer, a URL that another thread is fetching is
 * not waited for here (waiting while holding claims could deadlock): its result
 * is left NULL for the caller. */
static GPtrArray *
fetch_round (EbFetcher *f, const char *const *urls, guint n, guint64 max_bytes, gboolean defer)
{
  Progress *progress = g_private_get (&progress_key);
  gint64 last_progress = g_get_monotonic_time ();
  GPtrArray *results = g_ptr_array_new_with_free_func ((GDestroyNotify) eb_fetch_result_free);
  g_autoptr (GHashTable) index = g_hash_table_new (g_str_hash, g_str_equal);   /* url -> Transfer* */
  g_autoptr (GPtrArray) transfers = g_ptr_array_new ();
  gint64 now = g_get_monotonic_time ();
  gint64 deadline = now + (gint64) f->config->message_deadline * G_USEC_PER_SEC;

  for (guint i = 0; i < n; i++) {
    if (g_hash_table_contains (index, urls[i]))
      continue;
    Transfer *t = g_new0 (Transfer, 1);
    t->f = f;
    t->url = g_strdup (urls[i]);
    t->asked = g_strdup (urls[i]);
    t->max_bytes = max_bytes;
    t->deadline = deadline;
    t->cancel = g_private_get (&cancel_key);
    g_hash_table_insert (index, (gpointer) urls[i], t);
    g_ptr_array_add (transfers, t);
    t->result = cache_get (f, urls[i]);
    if (t->result)
      continue;
    /* another thread fetching the same URL: deferred, so a URL many messages
     * reference is fetched once */
    if (defer && f->config->cache_ttl && f->config->cache_entries) {
      g_mutex_lock (&f->lock);
      gboolean busy = g_hash_table_contains (f->inflight, urls[i]);
      if (!busy) {
        g_hash_table_add (f->inflight, g_strdup (urls[i]));
        t->claimed = TRUE;
      }
      g_mutex_unlock (&f->lock);
      if (busy) {
        t->deferred = TRUE;
        continue;
      }
    }
    g_autofree char *detail = NULL;
    g_autofree char *host = NULL;
    EbReason why = check_url (f, urls[i], &detail, &host);
    if (why == EB_REASON_RESOLVED && !rate_take (f, host)) {
      why = EB_REASON_RATE_LIMITED;
      detail = g_strdup_printf ("host %.100s", host);
    }
    if (why != EB_REASON_RESOLVED) {
      t->result = g_new0 (EbFetchResult, 1);
      t->result->reason = why;
      t->result->detail = g_steal_pointer (&detail);
    }
  }

  CURLM *multi = curl_multi_init ();
  guint next = 0, running_handles = 0;
  for (;;) {
    /* start transfers up to the limit */
    while (running_handles < f->config->max_concurrent_fetches && next < transfers->len) {
      Transfer *t = g_ptr_array_index (transfers, next++);
      if (t->result || t->deferred)
        continue;
      t->easy = curl_easy_init ();
      t->body = g_byte_array_new ();
      t->fetch_deadline = g_get_monotonic_time () + (gint64) f->config->fetch_timeout * G_USEC_PER_SEC;
      transfer_setup (t);
      curl_multi_add_handle (multi, t->easy);
      running_handles++;
    }
    if (running_handles == 0)
      break;
    int still = 0;
    curl_multi_perform (multi, &still);
    CURLMsg *msg;
    int left = 0;
    while ((msg = curl_multi_info_read (multi, &left))) {
      if (msg->msg != CURLMSG_DONE)
        continue;
      Transfer *t = NULL;
      curl_easy_getinfo (msg->easy_handle, CURLINFO_PRIVATE, (char **) &t);
      CURLcode code = msg->data.result;
      curl_multi_remove_handle (multi, t->easy);
      if (transfer_done (t, code)) {
        t->fail = EB_REASON_RESOLVED;
        g_clear_pointer (&t->fail_detail, g_free);
        transfer_setup (t);
        curl_multi_add_handle (multi, t->easy);
      } else {
        running_handles--;
        /* every outcome but a rate limit is remembered: a dead URL that many
         * messages reference is not tried again for each */
        if (t->result->reason != EB_REASON_RATE_LIMITED && !transfer_cancelled (t))
          cache_put (f, t->asked, t->result);
      }
    }
    if (running_handles)
      curl_multi_poll (multi, NULL, 0, 100, NULL);
    if (progress && g_get_monotonic_time () - last_progress > G_USEC_PER_SEC) {
      progress->func (progress->data);
      last_progress = g_get_monotonic_time ();
    }
  }
  curl_multi_cleanup (multi);

  for (guint i = 0; i < n; i++) {
    Transfer *t = g_hash_table_lookup (index, urls[i]);
    if (t->deferred) {
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
  g_mutex_lock (&f->lock);
  for (guint i = 0; i < transfers->len; i++) {
    Transfer *t = g_ptr_array_index (transfers, i);
    if (t->claimed)
      g_hash_table_remove (f->inflight, t->asked);
  }
  g_cond_broadcast (&f->done);
  g_mutex_unlock (&f->lock);
  for (guint i = 0; i < transfers->len; i++) {
    Transfer *t = g_ptr_array_index (transfers, i);
    if (t->easy)
      curl_easy_cleanup (t->easy);
    if (t->body)
      g_byte_array_unref (t->body);
    eb_fetch_result_free (t->result);
    g_free (t->fail_detail);
    g_free (t->content_length);
    g_free (t->content_encoding);
    g_free (t->url);
    g_free (t->asked);
    g_free (t);
  }
  return results;
}

EbFetchResult *
eb_fetch_local_file (const char *path, const char *dirs, guint64 max_bytes)
{
  EbFetchResult *r = g_new0 (EbFetchResult, 1);
  r->final_url = g_strdup (path);
  g_auto (GStrv) list = g_strsplit_set (dirs ? dirs : "", ", \t", -1);
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
  GByteArray *a = g_byte_array_sized_new ((guint) st.st_size + 1);
  guint8 buf[65536];
  for (;;) {
    ssize_t n = read (fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || a->len + (guint64) n > max_bytes) {
      if (n != 0) {
        r->reason = n < 0 ? EB_REASON_FETCH_FAILED : EB_REASON_PART_TOO_LARGE;
        r->detail = g_strdup_printf ("%.200s: %s", real, n < 0 ? g_strerror (errno) : "grew while read");
        g_byte_array_unref (a);
        close (fd);
        return r;
      }
      break;
    }
    g_byte_array_append (a, buf, (guint) n);
  }
  close (fd);
  r->reason = EB_REASON_RESOLVED;
  r->body = g_byte_array_free_to_bytes (a);
  return r;
}

GPtrArray *
eb_fetcher_fetch_all (EbFetcher *f, const char *const *urls, guint n, guint64 max_bytes)
{
  GPtrArray *results = fetch_round (f, urls, n, max_bytes, TRUE);
  g_autoptr (GPtrArray) again = g_ptr_array_new ();
  g_autoptr (GArray) where = g_array_new (FALSE, FALSE, sizeof (guint));
  for (guint i = 0; i < n; i++) {
    if (g_ptr_array_index (results, i))
      continue;
    /* holding no claim now: wait for the other thread, then take its result */
    g_mutex_lock (&f->lock);
    while (g_hash_table_contains (f->inflight, urls[i]))
      g_cond_wait (&f->done, &f->lock);
    g_mutex_unlock (&f->lock);
    EbFetchResult *r = cache_get (f, urls[i]);
    if (r) {
      g_ptr_array_index (results, i) = r;
    } else {
      g_ptr_array_add (again, (gpointer) urls[i]);
      g_array_append_val (where, i);
    }
  }
  if (again->len) {
    g_autoptr (GPtrArray) got = fetch_round (f, (const char *const *) again->pdata, again->len,
                                             max_bytes, FALSE);
    for (guint k = 0; k < got->len; k++)
      g_ptr_array_index (results, g_array_index (where, guint, k)) = g_steal_pointer (&got->pdata[k]);
  }
  return results;
}
