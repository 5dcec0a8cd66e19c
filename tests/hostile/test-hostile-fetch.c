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
#include <gmime/gmime.h>
#include <string.h>
#include <stdlib.h>
#include "eb-fetch.h"
#include "eb-rewrite.h"
#include "test-server.h"

/* the suite's time limits: every stall must end within these plus a margin */
#define FETCH_TIMEOUT   "2"
#define LOW_SPEED_TIME  "1"
#define MARGIN_SECONDS  3.0
#define MAX_PART_BYTES  "100000"

typedef enum { HTTP, FTP, CLOSED, HTTPD, HTTPS_ON_HTTP } Server;

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
  /* only a 200 carries the whole body */
  { "http/204-no-content", HTTP, "/status-204", TEXT, EB_REASON_HTTP_STATUS, .detail = "HTTP 204" },
  { "http/206-unrequested-partial", HTTP, "/partial-206", TEXT, EB_REASON_HTTP_STATUS, .detail = "HTTP 206" },
  { "http/203-other-2xx", HTTP, "/status-203", TEXT, EB_REASON_HTTP_STATUS, .detail = "HTTP 203" },
  /* a transfer coding not asked for is refused, as a content coding is */
  { "http/transfer-encoding-gzip", HTTP, "/transfer-encoding-gzip", TEXT, EB_REASON_FETCH_FAILED, .detail = "Transfer-Encoding gzip" },
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
  g_autoptr (EbRewriteResult) r = NULL;
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

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_mime_init ();
  for (guint i = 0; i < G_N_ELEMENTS (faults); i++) {
    g_autofree char *p = g_strdup_printf ("/hostile/fetch-faults/%s", faults[i].name);
    g_test_add_data_func (p, &faults[i], run_fault);
  }
  int status = g_test_run ();
  g_clear_pointer (&faultd, test_server_stop);
  g_clear_pointer (&httpd, test_server_stop);
  return status;
}
