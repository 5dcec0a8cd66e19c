/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-fetch-transfer.c - one URL through libcurl: setup, callbacks, the bytes
 * against the message's budget, redirects, and how it ends (see eb-fetch-shared.h). */
#include "eb-fetch-shared.h"
#include "eb-ftp.h"
#include "eb-gopher.h"
#include "eb-scheme.h"
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>

gboolean
eb_fetch_transfer_cancelled (const Transfer *t)
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
void
eb_fetch_transfer_release (Transfer *t)
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

void
eb_fetch_transfer_queue (Transfer *t)
{
  t->queued = TRUE;
  g_queue_insert_sorted (t->round->later, t, index_cmp, NULL);
}

/* Take @u's bytes for an earlier reference: a resolved body is dropped, a
 * fetch under way stopped (its callbacks abort it); either starts again. */
static void
transfer_evict (Transfer *u)
{
  eb_fetch_transfer_release (u);
  if (u->result) {
    g_clear_pointer (&u->result, eb_fetch_result_free);
    eb_fetch_transfer_queue (u);
  } else {
    u->evicted = TRUE;
  }
}

/* Done with, as far as this round goes: a result, or left to the caller. */
gboolean
eb_fetch_transfer_final (const Transfer *t)
{
  return t->result || t->deferred || t->remote;
}

/* Room for @need more bytes of @t's body (see Round). */
Admission
eb_fetch_transfer_admit (Round *round, Transfer *t, guint64 need)
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
    if (!eb_fetch_transfer_final (u)) {
      pending = TRUE;
      going += u->held;
    }
  }
  return pending && !t->restarted && round->held - going + need <= round->limit ? WAIT : REFUSE;
}

char *
eb_fetch_transfer_budget_detail (const Round *round)
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
    Admission a = eb_fetch_transfer_admit (t->round, t, want - t->held);
    if (a != ADMIT) {
      t->waits = a == WAIT;
      transfer_fail (t, EB_REASON_MESSAGE_BUDGET, eb_fetch_transfer_budget_detail (t->round));
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

/* a transfer coding other than chunked: refused by extbody at the header's
 * end (curl 7.88), or by curl itself as the field arrives (8.x, before
 * header_cb sees it, so its name is not known then) */
#define TE_NOT_ASKED "the response has a Transfer-Encoding that was not asked for"

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
     * eb_fetch_transfer_setup) or in its 150 reply "(N bytes)" */
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
                     g_strdup_printf (TE_NOT_ASKED " (%.60s)", t->transfer_coding));
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
  if (eb_fetch_transfer_cancelled (t)) {
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

void
eb_fetch_transfer_setup (Transfer *t)
{
  const EbConfig *c = t->f->config;
  CURL *e = t->easy;
  curl_easy_reset (e);
  eb_fetch_transfer_release (t);
  t->sized = FALSE;
  t->header_bytes = 0;
  t->announced = -1;
  g_autofree char *name = eb_fetch_url_scheme (t->url);
  const EbScheme *scheme = eb_scheme_lookup (name);
  t->is_http = scheme && scheme->http;
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
     * (eb_fetch_transfer_done). SIZE is asked for by hand ("*": its failure is no
     * error) when the file name is plain. */
    curl_easy_setopt (e, CURLOPT_IGNORE_CONTENT_LENGTH, 1L);
    g_clear_pointer (&t->prequote, curl_slist_free_all);
    g_autofree char *cmd = scheme && scheme->rules == EB_SCHEME_RULES_FTP ? eb_ftp_size_command (t->url) : NULL;
    if (cmd) {
      t->prequote = curl_slist_append (NULL, cmd);
      curl_easy_setopt (e, CURLOPT_PREQUOTE, t->prequote);
    }
  }
  t->errbuf[0] = '\0';
}

/* curl's code for a value that outgrew its limit: CURLE_OUT_OF_MEMORY up to
 * curl 8.5 (Debian 12's 7.88), CURLE_TOO_LARGE from 8.6 (Debian 13's 8.14) */
static gboolean
code_is_too_large (CURLcode code)
{
#if LIBCURL_VERSION_NUM >= 0x080600
  if (code == CURLE_TOO_LARGE)
    return TRUE;
#endif
  return code == CURLE_OUT_OF_MEMORY;
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
  } else if (is_http && !t->header_ended && code_is_too_large (code)) {
    /* curl's own limit on one header line (100 KB) */
    r->reason = EB_REASON_FETCH_FAILED;
    r->detail = g_strdup ("response header line too long");
  } else if (is_http && !t->header_ended && code == CURLE_BAD_CONTENT_ENCODING) {
    /* no coding is asked for (no Accept-Encoding, no TE), so the only one
     * curl refuses in the header is a Transfer-Encoding it was not asked for */
    r->reason = EB_REASON_FETCH_FAILED;
    r->detail = t->transfer_coding ? g_strdup_printf (TE_NOT_ASKED " (%.60s)", t->transfer_coding)
                                   : g_strdup (TE_NOT_ASKED);
  } else if (code == CURLE_FILESIZE_EXCEEDED) {
    /* max_bytes, which curl enforces itself: before the body when the size
     * was announced above it (every release), and from curl 8.4 also while
     * a body of no announced size streams past it, before write_cb sees the
     * bytes (the reason is the same, the detail says which) */
    curl_off_t cl = -1;
    curl_easy_getinfo (t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    gboolean announced = (cl >= 0 && (guint64) cl > t->max_bytes)
                         || (t->announced >= 0 && (guint64) t->announced > t->max_bytes);
    r->reason = EB_REASON_PART_TOO_LARGE;
    r->detail = announced ? g_strdup_printf ("announced size above %" G_GUINT64_FORMAT " bytes", t->max_bytes)
                          : g_strdup_printf ("more than %" G_GUINT64_FORMAT " bytes", t->max_bytes);
  } else {
    r->reason = EB_REASON_FETCH_FAILED;
    r->detail = g_strdup (t->errbuf[0] ? t->errbuf : curl_easy_strerror (code));
  }
}

/* An HTTP 3xx answer to a URL of @scheme: TRUE when @t now follows it (its
 * URL moved on, a slot reserved), FALSE with @r saying why not. */
static gboolean
transfer_redirect (Transfer *t, long status, const EbScheme *scheme, EbFetchResult *r)
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
  g_autofree char *to = eb_fetch_url_scheme (loc);
  EbReason why = eb_fetch_url_check (t->f, loc, &detail, &host);
  gint64 start = 0;
  const EbScheme *next = eb_scheme_lookup (to);
  if (why == EB_REASON_RESOLVED && scheme->tls && !(next && next->tls)) {
    /* what came over TLS is not given up for a plain connection */
    why = EB_REASON_INSECURE_REDIRECT;
    detail = g_strdup_printf ("%s redirected to %.20s, which would drop TLS", scheme->name, to ? to : "?");
  }
  if (why == EB_REASON_RESOLVED && (start = eb_fetch_rate_reserve (t->f, host, t->deadline)) < 0) {
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

/* A complete answer to a URL of @scheme that is still not used (a status
 * other than 200, a body shorter than announced, a malformed header): TRUE
 * with @r saying why. */
static gboolean
transfer_refused (Transfer *t, long status, const EbScheme *scheme, gsize len, EbFetchResult *r)
{
  gboolean is_http = scheme && scheme->http;
  /* an ftp file sent in ASCII mode (eb_ftp_ascii) may differ from its size */
  gboolean size_binds = !(scheme && scheme->rules == EB_SCHEME_RULES_FTP && eb_ftp_ascii (t->url));
  if (is_http && (status < 200 || status >= 300)) {
    r->reason = EB_REASON_HTTP_STATUS;
    r->detail = g_strdup_printf ("HTTP %ld", status);
  } else if (is_http && status != 200) {
    /* 204 has no body, 206 a piece of one: only a 200 carries the whole */
    r->reason = EB_REASON_HTTP_STATUS;
    r->detail = g_strdup_printf ("HTTP %ld: only a 200 with the whole body is used", status);
  } else if (!is_http && t->announced >= 0 && (guint64) t->announced != len && size_binds) {
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
gboolean
eb_fetch_transfer_done (Transfer *t, CURLcode code)
{
  EbFetchResult *r = g_new0 (EbFetchResult, 1);
  long status = 0;
  gsize len = t->body ? eb_buffer_get_size (t->body) : 0;
  curl_easy_getinfo (t->easy, CURLINFO_RESPONSE_CODE, &status);
  g_autofree char *name = eb_fetch_url_scheme (t->url);
  const EbScheme *scheme = eb_scheme_lookup (name);
  gboolean is_http = scheme && scheme->http;

  if (code != CURLE_OK) {
    transfer_failed (t, code, is_http, r);
  } else if (is_http && status >= 300 && status < 400) {
    if (transfer_redirect (t, status, scheme, r)) {
      eb_fetch_result_free (r);
      return TRUE;
    }
  } else if (!transfer_refused (t, status, scheme, len, r)) {
    transfer_succeeded (t, len, r);
    if (scheme && scheme->rules == EB_SCHEME_RULES_GOPHER)
      eb_gopher_finish (t->url, r);
  }
  r->final_url = g_strdup (t->url);
  t->result = r;
  return FALSE;
}

void
eb_fetch_transfer_end (Transfer *t, EbReason reason, char *detail)
{
  t->result = g_new0 (EbFetchResult, 1);
  t->result->reason = reason;
  t->result->detail = detail;
  t->result->final_url = g_strdup (t->url);
  t->state = STATE_IDLE;
  eb_fetch_transfer_release (t);
}

/* Move @t on as far as it can go now: from its rate-limit slot to its name
 * lookup, from its lookup to curl. */
void
eb_fetch_transfer_advance (Transfer *t, CURLM *multi, LookupWaker *waker)
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
    if (!(proxy && *proxy) && eb_fetch_lookup_needed (t->url, &host, &port)) {
      if (eb_fetch_lookup_threads_full ()) {
        if (now >= t->deadline)
          eb_fetch_transfer_end (t, EB_REASON_TIMED_OUT,
                        g_strdup ("message deadline passed waiting for a name lookup thread"));
        return;
      }
      g_clear_pointer (&t->lookup, eb_fetch_lookup_unref);
      t->lookup = eb_fetch_lookup_start (host, waker);
      if (!t->lookup) {
        eb_fetch_transfer_end (t, EB_REASON_FETCH_FAILED, g_strdup ("no thread for the name lookup"));
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
        eb_fetch_transfer_end (t, EB_REASON_FETCH_FAILED, g_strdup (t->lookup->error));
      } else {
        g_autofree char *entry = g_strdup_printf ("%s:%ld:%s", t->lookup->host, t->lookup_port,
                                                  t->lookup->addrs);
        t->resolve = curl_slist_append (NULL, entry);
        curl_easy_setopt (t->easy, CURLOPT_RESOLVE, t->resolve);
        t->state = STATE_CURL;
        curl_multi_add_handle (multi, t->easy);
      }
      g_clear_pointer (&t->lookup, eb_fetch_lookup_unref);
    } else if (now >= t->lookup_deadline) {
      /* the thread is left to end on its own */
      eb_fetch_transfer_end (t, EB_REASON_TIMED_OUT,
                    g_strdup_printf ("host %.100s: no answer to the name lookup before %s", t->lookup->host,
                                     t->lookup_deadline == t->deadline ? "the message deadline"
                                                                       : "connect_timeout"));
      g_clear_pointer (&t->lookup, eb_fetch_lookup_unref);
    }
  }
}

