/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-hostile-fetch.c - the hostile-input suite's fetch faults: servers on
 * 127.0.0.1 that misbehave at the protocol level (tests/servers/faultd.py:
 * connections reset or closed early, stalls and trickles, replies that are not
 * HTTP or not well-formed, broken chunked coding, headers without end, content
 * encodings not asked for, redirects to refused places, FTP replies and data
 * connections gone wrong), plus the faults of tests/servers/httpd.py that the
 * fetching tests exercise through the command. Each case is one reference in a
 * message rewritten in-process with a real fetcher, and states its safe
 * outcome: the reference left with a stated reason and the message unchanged
 * byte for byte, or resolved with exactly the server's data - always within a
 * bound of the time limits, never a crash or a hang. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <gmime/gmime.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "eb-fetch.h"
#include "eb-plan-private.h"
#include "test-server.h"

/* the suite's time limits: every stall must end within these plus a margin */
#define FETCH_TIMEOUT   "2"
#define LOW_SPEED_TIME  "1"
#define MARGIN_SECONDS  3.0
#define MAX_PART_BYTES  "100000"

typedef enum { HTTP, FTP, CLOSED, HTTPD, HTTPS_ON_HTTP, HTTP_BY_NAME } Server;

typedef struct {
  const char *name;
  Server      server;
  const char *path;      /* after http://127.0.0.1:PORT or ftp://127.0.0.1:PORT */
  const char *type;      /* the inner header's Content-Type */
  EbReason    reason;    /* EB_REASON_RESOLVED: resolved with @body */
  const char *body;      /* resolved: the data that must appear in the output */
  const char *detail;    /* left: a substring of the reason's detail, or NULL */
} Fault;

#define TEXT "text/plain"
#define BODY "hello from the fault server\n"
#define FTP_BODY "hello from the fault ftp server\n"

static const Fault faults[] = {
  /* the connection ends early */
  { "http/close-before-status", HTTP, "/close-before-status", TEXT, EB_REASON_FETCH_FAILED },
  { "http/close-mid-status", HTTP, "/close-mid-status", TEXT, EB_REASON_FETCH_FAILED },
  { "http/close-mid-headers", HTTP, "/close-mid-headers", TEXT, EB_REASON_FETCH_FAILED, .detail = "inside the response header" },
  { "http/reset-before-status", HTTP, "/reset-before-status", TEXT, EB_REASON_FETCH_FAILED },
  { "http/reset-mid-body", HTTP, "/reset-mid-body", TEXT, EB_REASON_FETCH_FAILED },
  { "http/body-shorter-than-content-length", HTTP, "/short-body", TEXT, EB_REASON_FETCH_FAILED },
  { "http/connection-refused", CLOSED, "/ok", TEXT, EB_REASON_FETCH_FAILED },
  /* nothing, or too little, comes */
  { "http/stall-before-status", HTTP, "/stall-before-status", TEXT, EB_REASON_TIMED_OUT },
  { "http/stall-mid-headers", HTTP, "/stall-mid-headers", TEXT, EB_REASON_TIMED_OUT },
  { "http/stall-mid-body", HTTP, "/stall-mid-body", TEXT, EB_REASON_TIMED_OUT },
  { "http/trickle", HTTP, "/trickle", TEXT, EB_REASON_TIMED_OUT },
  /* the reply is not HTTP, or not well-formed HTTP */
  { "http/not-http", HTTP, "/not-http", TEXT, EB_REASON_FETCH_FAILED },
  { "http/http-0.9", HTTP, "/http09", TEXT, EB_REASON_FETCH_FAILED },
  { "http/status-999", HTTP, "/status-999", TEXT, EB_REASON_HTTP_STATUS },
  { "http/nul-in-header", HTTP, "/nul-in-header", TEXT, EB_REASON_FETCH_FAILED },
  { "http/header-without-colon", HTTP, "/header-without-colon", TEXT, EB_REASON_FETCH_FAILED },
  { "http/content-length-negative", HTTP, "/content-length-negative", TEXT, EB_REASON_FETCH_FAILED },
  { "http/content-length-huge", HTTP, "/content-length-huge", TEXT, EB_REASON_PART_TOO_LARGE },
  { "http/content-length-twice", HTTP, "/content-length-twice", TEXT, EB_REASON_FETCH_FAILED, .detail = "Content-Length fields that differ" },
  { "http/content-length-gigabytes", HTTP, "/content-length-announces-gigabytes", TEXT, EB_REASON_PART_TOO_LARGE },
  /* chunked transfer coding gone wrong */
  { "http/chunk-size-garbage", HTTP, "/chunk-size-garbage", TEXT, EB_REASON_FETCH_FAILED },
  { "http/chunk-size-huge", HTTP, "/chunk-size-huge", TEXT, EB_REASON_FETCH_FAILED },
  { "http/chunked-unterminated", HTTP, "/chunked-unterminated", TEXT, EB_REASON_FETCH_FAILED },
  { "http/chunked-endless", HTTP, "/chunked-endless", TEXT, EB_REASON_PART_TOO_LARGE },
  { "http/transfer-encoding-unknown", HTTP, "/transfer-encoding-unknown", TEXT, EB_REASON_FETCH_FAILED },
  /* headers without end */
  { "http/header-line-endless", HTTP, "/header-line-endless", TEXT, EB_REASON_FETCH_FAILED, .detail = "header line too long" },
  { "http/headers-endless", HTTP, "/headers-endless", TEXT, EB_REASON_FETCH_FAILED, .detail = "header" },
  { "http/100-continue-endless", HTTP, "/continue-endless", TEXT, EB_REASON_FETCH_FAILED, .detail = "header" },
  /* content not asked for, or not as announced */
  { "http/content-encoding-not-asked-for", HTTP, "/content-encoding-gzip", TEXT, EB_REASON_FETCH_FAILED, .detail = "Content-Encoding" },
  { "http/content-type-wrong", HTTP, "/content-type-wrong", TEXT, EB_REASON_TYPE_MISMATCH },
  { "http/content-type-garbage", HTTP, "/content-type-garbage", TEXT, EB_REASON_TYPE_MISMATCH },
  { "http/https-to-a-plain-server", HTTPS_ON_HTTP, "/ok", TEXT, EB_REASON_FETCH_FAILED },
  /* redirects gone wrong */
  { "http/redirect-without-location", HTTP, "/redirect-without-location", TEXT, EB_REASON_HTTP_STATUS },
  { "http/redirect-empty-location", HTTP, "/redirect-empty-location", TEXT, EB_REASON_HTTP_STATUS },
  { "http/redirect-to-itself", HTTP, "/redirect-to-itself", TEXT, EB_REASON_TOO_MANY_REDIRECTS },
  { "http/redirect-to-a-refused-address", HTTP, "/redirect-to-loopback-alias", TEXT, EB_REASON_REFUSED_ADDRESS },
  { "http/redirect-to-metadata", HTTP, "/redirect-to-metadata", TEXT, EB_REASON_REFUSED_ADDRESS },
  { "http/redirect-to-data", HTTP, "/redirect-to-data", TEXT, EB_REASON_SCHEME_DISABLED },
  { "http/redirect-to-gopher", HTTP, "/redirect-to-gopher", TEXT, EB_REASON_SCHEME_DISABLED },
  { "http/redirect-with-credentials", HTTP, "/redirect-with-credentials", TEXT, EB_REASON_CREDENTIALS },
  { "http/redirect-location-garbage", HTTP, "/redirect-location-garbage", TEXT, EB_REASON_FETCH_FAILED },
  { "http/control", HTTP, "/ok", TEXT, EB_REASON_RESOLVED, BODY },
  /* a host name, looked up on extbody's own thread (/etc/hosts) */
  { "http/host-name", HTTP_BY_NAME, "/ok", TEXT, EB_REASON_RESOLVED, BODY },
  /* only a 200 carries the whole body */
  { "http/204-no-content", HTTP, "/status-204", TEXT, EB_REASON_HTTP_STATUS, .detail = "HTTP 204" },
  { "http/206-unrequested-partial", HTTP, "/partial-206", TEXT, EB_REASON_HTTP_STATUS, .detail = "HTTP 206" },
  { "http/203-other-2xx", HTTP, "/status-203", TEXT, EB_REASON_HTTP_STATUS, .detail = "HTTP 203" },
  /* a transfer coding not asked for is refused, as a content coding is */
  { "http/transfer-encoding-gzip", HTTP, "/transfer-encoding-gzip", TEXT, EB_REASON_FETCH_FAILED, .detail = "a Transfer-Encoding that was not asked for" },
  /* the fetching issue's server faults (tests/servers/httpd.py) */
  { "httpd/404", HTTPD, "/status/404", TEXT, EB_REASON_HTTP_STATUS },
  { "httpd/500", HTTPD, "/status/500", TEXT, EB_REASON_HTTP_STATUS },
  { "httpd/slow", HTTPD, "/slow?ms=6000", TEXT, EB_REASON_TIMED_OUT },
  { "httpd/stalled", HTTPD, "/stall", TEXT, EB_REASON_TIMED_OUT },
  { "httpd/body-shorter", HTTPD, "/short", TEXT, EB_REASON_FETCH_FAILED },
  { "httpd/body-longer", HTTPD, "/long", TEXT, EB_REASON_RESOLVED, "\nxxxxx\n" },
  { "httpd/content-type-missing", HTTPD, "/type?b=typeless", TEXT, EB_REASON_RESOLVED, "typeless" },
  { "httpd/content-type-wrong", HTTPD, "/type?t=text/html&b=x", TEXT, EB_REASON_TYPE_MISMATCH },
  { "httpd/redirect-chain", HTTPD, "/chain/4", TEXT, EB_REASON_TOO_MANY_REDIRECTS },
  { "httpd/redirect-loop", HTTPD, "/loop", TEXT, EB_REASON_TOO_MANY_REDIRECTS },
  { "httpd/over-the-byte-limit", HTTPD, "/big?n=100001", "application/octet-stream", EB_REASON_PART_TOO_LARGE },
  /* FTP: the first directory is the fault */
  { "ftp/control", FTP, "/ok/f.txt", TEXT, EB_REASON_RESOLVED, FTP_BODY },
  { "ftp/close-after-cwd", FTP, "/close-after-cwd/f.txt", TEXT, EB_REASON_FETCH_FAILED },
  { "ftp/garbage-reply", FTP, "/garbage-after-cwd/f.txt", TEXT, EB_REASON_TIMED_OUT },
  { "ftp/reply-endless", FTP, "/reply-endless/f.txt", TEXT, EB_REASON_FETCH_FAILED },
  { "ftp/missing-directory", FTP, "/missing-directory/f.txt", TEXT, EB_REASON_FETCH_FAILED },
  { "ftp/missing-file", FTP, "/missing-file/f.txt", TEXT, EB_REASON_FETCH_FAILED },
  { "ftp/pasv-names-metadata", FTP, "/pasv-to-metadata/f.txt", TEXT, EB_REASON_RESOLVED, FTP_BODY },
  { "ftp/size-huge", FTP, "/size-huge/f.txt", TEXT, EB_REASON_PART_TOO_LARGE },
  { "ftp/size-garbage", FTP, "/size-garbage/f.txt", TEXT, EB_REASON_RESOLVED, FTP_BODY },
  /* a length that disagrees with the one announced is not used (curl would
   * read only the SIZE announced and drop the rest), and max_part_bytes applies
   * to what actually comes */
  { "ftp/size-smaller-than-data", FTP, "/size-small/f.txt", TEXT, EB_REASON_FETCH_FAILED, .detail = "announced 5 bytes and sent 24" },
  { "ftp/size-10-sends-2mib", FTP, "/size-10-sends-2mib/f.txt", TEXT, EB_REASON_PART_TOO_LARGE, .detail = "more than " MAX_PART_BYTES " bytes" },
  { "ftp/150-announces-less", FTP, "/announce-in-150/f.txt", TEXT, EB_REASON_FETCH_FAILED, .detail = "announced 10 bytes and sent 24" },
  { "ftp/stall-after-150", FTP, "/stall-after-150/f.txt", TEXT, EB_REASON_TIMED_OUT },
  { "ftp/data-reset", FTP, "/data-reset/f.txt", TEXT, EB_REASON_FETCH_FAILED },
  { "ftp/data-over-limit", FTP, "/data-over-limit/f.txt", "application/octet-stream", EB_REASON_PART_TOO_LARGE },
  { "ftp/data-stall", FTP, "/data-stall/f.txt", TEXT, EB_REASON_TIMED_OUT },
  { "ftp/no-226", FTP, "/no-226/f.txt", TEXT, EB_REASON_TIMED_OUT },
};

static TestServer *faultd, *httpd;
static guint http_port, ftp_port, closed_port, httpd_port;

static void
servers_start (void)
{
  if (faultd)
    return;
  g_autoptr (GError) error = NULL;
  faultd = test_server_start ("faultd.py", NULL, (const char *[]) { "HTTP ", "FTP ", "CLOSED ", NULL },
                              FALSE, &error);
  g_assert_no_error (error);
  http_port = faultd->ports[0];
  ftp_port = faultd->ports[1];
  closed_port = faultd->ports[2];
  httpd = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);
  httpd_port = httpd->port;
}

static char *
url_of (const Fault *f)
{
  switch (f->server) {
  case HTTP:          return g_strdup_printf ("http://127.0.0.1:%u%s", http_port, f->path);
  case HTTPS_ON_HTTP: return g_strdup_printf ("https://127.0.0.1:%u%s", http_port, f->path);
  case HTTP_BY_NAME:  return g_strdup_printf ("http://localhost:%u%s", http_port, f->path);
  case CLOSED:        return g_strdup_printf ("http://127.0.0.1:%u%s", closed_port, f->path);
  case HTTPD:         return g_strdup_printf ("http://127.0.0.1:%u%s", httpd_port, f->path);
  case FTP:           return g_strdup_printf ("ftp://127.0.0.1:%u%s", ftp_port, f->path);
  }
  g_assert_not_reached ();
}

static void
run_fault (gconstpointer data)
{
  const Fault *f = data;
  servers_start ();
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GError) error = NULL;
  const char *settings[] = {
    "fetch", "on",
    "allow_networks", "127.0.0.1/32",
    "fetch_timeout", FETCH_TIMEOUT,
    "connect_timeout", FETCH_TIMEOUT,
    "low_speed_time", LOW_SPEED_TIME,
    "max_part_bytes", MAX_PART_BYTES,
    "cache_ttl", "0",
    NULL };
  for (guint i = 0; settings[i]; i += 2) {
    g_assert_true (eb_config_set (config, settings[i], settings[i + 1], &error));
    g_assert_no_error (error);
  }
  g_autoptr (EbFetcher) fetcher = eb_fetcher_new (config, &error);
  g_assert_no_error (error);

  g_autofree char *url = url_of (f);
  g_autofree char *m = g_strdup_printf ("From: a@example.org\nMIME-Version: 1.0\n"
                                        "Content-Type: multipart/mixed; boundary=b\n\n"
                                        "--b\nContent-Type: text/plain\n\nbefore\n"
                                        "--b\nContent-Type: message/external-body; access-type=URL;\n"
                                        " URL=\"%s\"\n\nContent-Type: %s\n\n"
                                        "--b\nContent-Type: text/plain\n\nafter\n--b--\n", url, f->type);
  gsize len = strlen (m);

  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr (EbPlan) r = NULL;
  g_assert_true (eb_rewrite (m, len, config, fetcher, EB_REWRITE_DEFAULT, out, &r, &error));
  g_assert_no_error (error);
  double secs = (g_get_monotonic_time () - t0) / 1e6;
  g_output_stream_close (out, NULL, NULL);
  gsize n = g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (out));
  g_autofree char *o = g_strndup (g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (out)), n);

  g_assert_nonnull (r->scan);
  g_assert_cmpuint (r->scan->refs->len, ==, 1);
  const EbResolution *res = g_ptr_array_index (r->resolutions, 0);
  g_test_message ("%s: %s -> %s (%s) in %.2f s", f->name, url, eb_reason_token (res->reason),
                  res->detail ? res->detail : "", secs);
  g_assert_cmpstr (eb_reason_token (res->reason), ==, eb_reason_token (f->reason));
  /* no fault holds a message past the time limits */
  g_assert_cmpfloat (secs, <, atof (FETCH_TIMEOUT) + MARGIN_SECONDS);
  if (f->reason == EB_REASON_RESOLVED) {
    g_assert_true (r->changed);
    g_assert_nonnull (strstr (o, f->body));
    g_assert_true (g_str_has_prefix (o, "From: a@example.org\n"));
    g_assert_true (g_str_has_suffix (o, "--b\nContent-Type: text/plain\n\nafter\n--b--\n"));
    g_assert_null (strstr (o, "message/external-body"));
  } else {
    g_assert_false (r->changed);
    g_assert_cmpuint (n, ==, len);
    g_assert_true (memcmp (o, m, len) == 0);
    if (f->detail)
      g_assert_nonnull (strstr (res->detail ? res->detail : "", f->detail));
  }
}

/* ---- the message's limits: deadline, budget, rate, redirects, lookups ------ */

/* A config of the suite's settings plus @extra (key, value pairs). */
static EbConfig *
config_with (const char *const *extra)
{
  EbConfig *config = eb_config_new ();
  g_autoptr (GError) error = NULL;
  const char *base[] = { "fetch", "on", "allow_networks", "127.0.0.1/32", NULL };
  for (guint i = 0; base[i]; i += 2)
    g_assert_true (eb_config_set (config, base[i], base[i + 1], &error));
  for (guint i = 0; extra && extra[i]; i += 2) {
    g_assert_true (eb_config_set (config, extra[i], extra[i + 1], &error));
    g_assert_no_error (error);
  }
  return config;
}

/* A message with one text/plain reference to each of @urls. */
static char *
message_of (const char *const *urls, guint n)
{
  GString *m = g_string_new ("From: a@example.org\nMIME-Version: 1.0\n"
                             "Content-Type: multipart/mixed; boundary=b\n\n"
                             "--b\nContent-Type: text/plain\n\nbefore\n");
  for (guint i = 0; i < n; i++)
    g_string_append_printf (m, "--b\nContent-Type: message/external-body; access-type=URL;\n"
                               " URL=\"%s\"\n\nContent-Type: text/plain\n\n", urls[i]);
  g_string_append (m, "--b--\n");
  return g_string_free (m, FALSE);
}

/* Rewrite @m in-process; the time it took in *@secs. */
static EbPlan *
rewrite_timed (const char *m, const EbConfig *config, EbFetcher *fetcher, double *secs)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  EbPlan *r = NULL;
  gint64 t0 = g_get_monotonic_time ();
  g_assert_true (eb_rewrite (m, strlen (m), config, fetcher, EB_REWRITE_DEFAULT, out, &r, &error));
  g_assert_no_error (error);
  *secs = (g_get_monotonic_time () - t0) / 1e6;
  return r;
}

static guint
count_reason (const EbPlan *r, EbReason reason)
{
  guint n = 0;
  for (guint i = 0; i < r->resolutions->len; i++)
    n += ((const EbResolution *) g_ptr_array_index (r->resolutions, i))->reason == reason;
  return n;
}

/* Rate limits delay, they do not drop: with 20 requests a minute (a burst of
 * 20, then one each 3 s), a message of 21 references resolves them all when
 * its deadline leaves room for the 21st slot, and leaves exactly that one
 * rate-limited when it does not. */
static void
test_rate_waits (void)
{
  servers_start ();
  g_autoptr (GPtrArray) urls = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < 21; i++)
    g_ptr_array_add (urls, g_strdup_printf ("http://127.0.0.1:%u/type?b=ref%u", httpd_port, i));
  g_autofree char *m = message_of ((const char *const *) urls->pdata, urls->len);
  g_autoptr (GError) error = NULL;

  g_autoptr (EbConfig) roomy = config_with ((const char *[]) { "max_requests_per_host", "20",
                                                             "message_deadline", "10", "cache_ttl", "0", NULL });
  g_autoptr (EbFetcher) f1 = eb_fetcher_new (roomy, &error);
  g_assert_no_error (error);
  double secs = 0;
  g_autoptr (EbPlan) r1 = rewrite_timed (m, roomy, f1, &secs);
  g_test_message ("21 references, 20/min, deadline 10: %u resolved in %.2f s", r1->n_resolved, secs);
  g_assert_cmpuint (r1->n_resolved, ==, 21);
  g_assert_cmpuint (count_reason (r1, EB_REASON_RATE_LIMITED), ==, 0);
  g_assert_cmpfloat (secs, <, 10 + MARGIN_SECONDS);

  g_autoptr (EbConfig) tight = config_with ((const char *[]) { "max_requests_per_host", "20",
                                                             "message_deadline", "2", "cache_ttl", "0", NULL });
  g_autoptr (EbFetcher) f2 = eb_fetcher_new (tight, &error);
  g_assert_no_error (error);
  g_autoptr (EbPlan) r2 = rewrite_timed (m, tight, f2, &secs);
  g_test_message ("21 references, 20/min, deadline 2: %u resolved in %.2f s", r2->n_resolved, secs);
  g_assert_cmpuint (r2->n_resolved, ==, 20);
  g_assert_cmpuint (count_reason (r2, EB_REASON_RATE_LIMITED), ==, 1);
  g_assert_cmpfloat (secs, <, 2 + MARGIN_SECONDS);
}

/* One deadline per message, whatever happens inside: message B shares a URL
 * with message A, which another thread is fetching; A's other fetch evicts it
 * from the one-entry cache, so B must fetch it again itself - within B's own
 * deadline, not a fresh one. */
typedef struct {
  const char *m;
  EbConfig   *config;
  EbFetcher  *fetcher;
} Job;

static gpointer
job_run (gpointer data)
{
  Job *j = data;
  double secs;
  EbPlan *r = rewrite_timed (j->m, j->config, j->fetcher, &secs);
  eb_plan_free (r);
  return NULL;
}

static void
test_one_deadline_per_message (void)
{
  servers_start ();
  g_autofree char *x = g_strdup_printf ("http://127.0.0.1:%u/slow?ms=2500", httpd_port);
  g_autofree char *y = g_strdup_printf ("http://127.0.0.1:%u/slow?ms=3500", httpd_port);
  g_autofree char *ma = message_of ((const char *[]) { x, y }, 2);
  g_autofree char *mb = message_of ((const char *[]) { x }, 1);
  g_autoptr (EbConfig) config = config_with ((const char *[]) { "message_deadline", "4", "cache_entries", "1",
                                                              "fetch_timeout", "30", NULL });
  g_autoptr (GError) error = NULL;
  g_autoptr (EbFetcher) fetcher = eb_fetcher_new (config, &error);
  g_assert_no_error (error);
  Job a = { ma, config, fetcher };
  (void) test_http_get_number (httpd_port, "/peak?reset=1");
  GThread *ta = g_thread_new ("message-a", job_run, &a);
  /* B starts while A's fetch of x is under way (x takes 2.5 s): once the
   * server has both of A's requests in progress, not after a guessed pause */
  gint64 until = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (test_http_get_number (httpd_port, "/peak") < 2) {
    if (g_get_monotonic_time () > until)
      g_error ("message A's two fetches were not under way within 10 s");
    g_usleep (10000);
  }
  double secs = 0;
  g_autoptr (EbPlan) rb = rewrite_timed (mb, config, fetcher, &secs);
  g_thread_join (ta);
  const EbResolution *res = g_ptr_array_index (rb->resolutions, 0);
  g_test_message ("message B: %s (%s) in %.2f s", eb_reason_token (res->reason),
                  res->detail ? res->detail : "", secs);
  g_assert_cmpfloat (secs, <, 4 + 1.5);
  g_assert_cmpstr (eb_reason_token (res->reason), ==, eb_reason_token (EB_REASON_TIMED_OUT));
}

/* https is never given up for plain http in a redirect: httpd.py with TLS (a
 * certificate made here, trusted through ca_file) redirects to the plain
 * httpd.py, which would serve the data. */
static void
test_https_no_downgrade (void)
{
  g_autofree char *openssl = g_find_program_in_path ("openssl");
  if (!openssl) {
    g_test_skip ("openssl not installed");
    return;
  }
  servers_start ();
  g_autofree char *dir = g_dir_make_tmp ("extbody-tls-XXXXXX", NULL);
  g_autofree char *cert = g_build_filename (dir, "cert.pem", NULL);
  g_autofree char *key = g_build_filename (dir, "key.pem", NULL);
  g_autofree char *cmd = g_strdup_printf (
    "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
    "-addext subjectAltName=IP:127.0.0.1 -keyout '%s' -out '%s' 2>/dev/null", key, cert);
  int status = 0;
  g_assert_true (g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", cmd, NULL }, NULL, 0, NULL, NULL,
                               NULL, NULL, &status, NULL));
  g_assert_cmpint (status, ==, 0);
  g_autoptr (GError) error = NULL;
  const char *args[] = { "--tls", cert, key, NULL };
  g_autoptr (TestServer) tls = test_server_start ("httpd.py", args, NULL, FALSE, &error);
  g_assert_no_error (error);
  g_autoptr (EbConfig) config = config_with ((const char *[]) { "ca_file", cert, NULL });
  g_autoptr (EbFetcher) fetcher = eb_fetcher_new (config, &error);
  g_assert_no_error (error);

  /* the control: https to https resolves */
  g_autofree char *same = g_strdup_printf ("https://127.0.0.1:%u/redirect?to=/type%%3Fb%%3Dover-tls", tls->port);
  g_autofree char *m1 = message_of ((const char *[]) { same }, 1);
  double secs;
  g_autoptr (EbPlan) r1 = rewrite_timed (m1, config, fetcher, &secs);
  g_assert_cmpuint (r1->n_resolved, ==, 1);

  g_autofree char *down = g_strdup_printf ("https://127.0.0.1:%u/redirect?to=http://127.0.0.1:%u/type%%3Fb%%3Dplain",
                                           tls->port, httpd_port);
  g_autofree char *m2 = message_of ((const char *[]) { down }, 1);
  g_autoptr (EbPlan) r2 = rewrite_timed (m2, config, fetcher, &secs);
  const EbResolution *res = g_ptr_array_index (r2->resolutions, 0);
  g_test_message ("https -> http: %s (%s)", eb_reason_token (res->reason), res->detail ? res->detail : "");
  g_assert_false (r2->changed);
  g_assert_cmpstr (eb_reason_token (res->reason), ==, eb_reason_token (EB_REASON_INSECURE_REDIRECT));
  g_assert_nonnull (strstr (res->detail, "drop TLS"));
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", rm, NULL }, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL);
}

/* Memory follows what can be resolved: 16 references of 30 MiB each, with
 * max_part_bytes 4M and max_message_bytes 8M, rewritten by the command; its
 * peak RSS (wait4's ru_maxrss) stays below the same command's peak on the same
 * message without fetching plus max_message_bytes and 4 MiB (the bodies live in
 * mappings of their own: what is counted is what is held;
 * tests/integration/test-fetch-memory.c measures more shapes). */
static glong
peak_rss_kib (const char *conf, const char *msg_file, const char *const *extra)
{
  const char *exe = g_getenv ("EXTBODY");
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) exe);
  g_ptr_array_add (argv, "rewrite");
  g_ptr_array_add (argv, "-c");
  g_ptr_array_add (argv, (gpointer) conf);
  for (guint i = 0; extra[i]; i++)
    g_ptr_array_add (argv, (gpointer) extra[i]);
  g_ptr_array_add (argv, NULL);
  pid_t pid = fork ();
  g_assert_cmpint (pid, >=, 0);
  if (pid == 0) {
    int in = open (msg_file, O_RDONLY), out = open ("/dev/null", O_WRONLY);
    dup2 (in, 0);
    dup2 (out, 1);
    dup2 (out, 2);
    execv (exe, (char **) argv->pdata);
    _exit (127);
  }
  int status = 0;
  struct rusage ru;
  g_assert_cmpint (wait4 (pid, &status, 0, &ru), ==, pid);
  g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) != 127);
  return ru.ru_maxrss;
}

static void
test_memory_follows_budget (void)
{
  if (!g_getenv ("EXTBODY")) {
    g_test_skip ("EXTBODY (the command) not set");
    return;
  }
  servers_start ();
  g_autoptr (GPtrArray) urls = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < 16; i++)
    g_ptr_array_add (urls, g_strdup_printf ("http://127.0.0.1:%u/big?n=%u&i=%u", httpd_port, 30u << 20, i));
  g_autofree char *m = message_of ((const char *const *) urls->pdata, urls->len);
  g_autofree char *dir = g_dir_make_tmp ("extbody-mem-XXXXXX", NULL);
  g_autofree char *file = g_build_filename (dir, "m.eml", NULL);
  g_autofree char *conf = g_build_filename (dir, "extbody.conf", NULL);
  g_assert_true (g_file_set_contents (file, m, -1, NULL));
  g_assert_true (g_file_set_contents (conf, "", -1, NULL));
  const char *common[] = { "-o", "max_part_bytes=4M", "-o", "max_message_bytes=8M", "-o", "max_concurrent_fetches=16",
                           "-o", "fetch_timeout=60", "--allow-network", "127.0.0.1/32", NULL };
  g_autoptr (GPtrArray) off = g_ptr_array_new (), on = g_ptr_array_new ();
  for (guint i = 0; common[i]; i++) {
    g_ptr_array_add (off, (gpointer) common[i]);
    g_ptr_array_add (on, (gpointer) common[i]);
  }
  g_ptr_array_add (off, NULL);
  g_ptr_array_add (on, "--fetch");
  g_ptr_array_add (on, NULL);
  glong base = peak_rss_kib (conf, file, (const char *const *) off->pdata);
  glong peak = peak_rss_kib (conf, file, (const char *const *) on->pdata);
  g_test_message ("peak RSS: %ld KiB without fetching, %ld KiB fetching 16 x 30 MiB (bound %ld KiB)",
                  base, peak, base + 8 * 1024 + 4096);
  g_assert_cmpint (peak, <, base + 8 * 1024 + 4096);
  g_remove (file);
  g_remove (conf);
  g_rmdir (dir);
}

/* A name whose DNS server never answers: the message still ends at its
 * deadline. Runs in a mount and network namespace of its own (unshare -mn),
 * where /etc/resolv.conf names 127.0.0.1, on whose port 53 a UDP socket
 * listens and never answers: nothing leaves the machine. */
#define DNS_CHILD_ENV "EB_HOSTILE_DNS_CHILD"

static void
dns_child (void)
{
  int s = socket (AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons (53) };
  a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  if (s < 0 || bind (s, (struct sockaddr *) &a, sizeof a) != 0)
    exit (77);
  {   /* in a block: everything is freed before the exit */
    g_autoptr (EbConfig) config = config_with ((const char *[]) { "message_deadline", "2", "connect_timeout", "30",
                                                                "fetch_timeout", "30", NULL });
    g_autoptr (GError) error = NULL;
    g_autoptr (EbFetcher) fetcher = eb_fetcher_new (config, &error);
    g_assert_no_error (error);
    g_autofree char *m = message_of ((const char *[]) { "http://never-answered.example/x" }, 1);
    double secs;
    g_autoptr (EbPlan) r = rewrite_timed (m, config, fetcher, &secs);
    const EbResolution *res = g_ptr_array_index (r->resolutions, 0);
    g_print ("%s|%s|%.2f\n", eb_reason_token (res->reason), res->detail ? res->detail : "", secs);
  }
  exit (0);
}

static void
test_dns_deadline (void)
{
  g_autofree char *unshare = g_find_program_in_path ("unshare");
  g_autofree char *ip = g_find_program_in_path ("ip");
  int probe = -1;
  if (!unshare || !ip || geteuid () != 0
      || !g_spawn_sync (NULL, (char *[]) { unshare, "--mount", "--net", "/bin/true", NULL }, NULL,
                        G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL, NULL, &probe, NULL)
      || probe != 0) {
    g_test_skip ("needs root, unshare and ip for a private network namespace");
    return;
  }
  g_autofree char *dir = g_dir_make_tmp ("extbody-dns-XXXXXX", NULL);
  g_autofree char *conf = g_build_filename (dir, "resolv.conf", NULL);
  g_assert_true (g_file_set_contents (conf, "nameserver 127.0.0.1\noptions timeout:5 attempts:2\n", -1, NULL));
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *script = g_strdup_printf (
    "ip link set lo up && mount --bind '%s' /etc/resolv.conf || exit 77; "
    "exec env " DNS_CHILD_ENV "=1 '%s'", conf, self);
  g_autofree char *out = NULL, *err = NULL;
  int status = 0;
  g_assert_true (g_spawn_sync (NULL, (char *[]) { unshare, "--mount", "--net", "/bin/sh", "-c", script, NULL },
                               NULL, 0, NULL, NULL, &out, &err, &status, NULL));
  g_remove (conf);
  g_rmdir (dir);
  if (WIFEXITED (status) && WEXITSTATUS (status) == 77) {
    g_test_skip ("a private network namespace could not be made");
    return;
  }
  g_test_message ("child: %s %s", out, err);
  g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
  g_auto (GStrv) f = g_strsplit (g_strchomp (out), "|", 3);
  g_assert_cmpuint (g_strv_length (f), ==, 3);
  g_assert_cmpstr (f[0], ==, eb_reason_token (EB_REASON_TIMED_OUT));
  g_assert_cmpfloat (atof (f[2]), <, 2 + 1.0);
}

int
main (int argc, char **argv)
{
  g_mime_init ();
  if (g_getenv (DNS_CHILD_ENV))
    dns_child ();
  g_test_init (&argc, &argv, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (faults); i++) {
    g_autofree char *p = g_strdup_printf ("/hostile/fetch-faults/%s", faults[i].name);
    g_test_add_data_func (p, &faults[i], run_fault);
  }
  g_test_add_func ("/hostile/fetch-limits/rate-limits-wait", test_rate_waits);
  g_test_add_func ("/hostile/fetch-limits/one-deadline-per-message", test_one_deadline_per_message);
  g_test_add_func ("/hostile/fetch-limits/https-never-redirected-to-http", test_https_no_downgrade);
  /* AddressSanitizer keeps freed memory in quarantine: resident memory says
   * nothing about what the program holds; the normal build measures it */
  if (!TEST_UNDER_ASAN)
    g_test_add_func ("/hostile/fetch-limits/memory-follows-budget", test_memory_follows_budget);
  g_test_add_func ("/hostile/fetch-limits/dns-never-answers", test_dns_deadline);
  int status = g_test_run ();
  g_clear_pointer (&faultd, test_server_stop);
  g_clear_pointer (&httpd, test_server_stop);
  return status;
}
