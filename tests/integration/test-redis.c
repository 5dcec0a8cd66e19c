/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-redis.c - the pool's shared cache, coalescing and rate limits through a
 * real redis-server the test starts on loopback (no persistence), with
 * tests/servers/httpd.py counting the requests each URL gets: two fetchers
 * (two instances, as far as their local caches go) share one Redis; faults:
 * Redis killed mid-run and restarted, paused with SIGSTOP, answering
 * garbage, keys holding junk or forged entries, a lock never released. */
#include <glib/gstdio.h>
#include <gio/gio.h>
#include <signal.h>
#include <string.h>
#include <syslog.h>
#include "run-command.h"
#include "test-server.h"
#include "eb-config.h"
#include "eb-fetch.h"
#include "eb-reason.h"
#include "eb-redis.h"

static TestServer *srv;
static TestRedis *redis;

static char *
url (const char *path)
{
  return g_strdup_printf ("http://127.0.0.1:%u%s", srv->port, path);
}

/* How many requests httpd.py got for @target (path and query). */
static int
count (const char *target)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GSocketClient) client = g_socket_client_new ();
  g_socket_client_set_enable_proxy (client, FALSE);
  g_socket_client_set_timeout (client, 10);
  g_autoptr (GSocketConnection) c = g_socket_client_connect_to_host (client, "127.0.0.1", srv->port, NULL, &error);
  g_assert_no_error (error);
  const char *req = "GET /counts HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  g_assert_true (g_output_stream_write_all (g_io_stream_get_output_stream (G_IO_STREAM (c)), req, strlen (req),
                                            NULL, NULL, &error));
  g_autoptr (GString) resp = g_string_new (NULL);
  char buf[4096];
  gssize got;
  while ((got = g_input_stream_read (g_io_stream_get_input_stream (G_IO_STREAM (c)), buf, sizeof buf, NULL,
                                     &error)) > 0)
    g_string_append_len (resp, buf, got);
  const char *body = strstr (resp->str, "\r\n\r\n");
  g_assert_nonnull (body);
  g_auto (GStrv) lines = g_strsplit (body + 4, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    const char *sp = strchr (lines[i], ' ');
    if (sp && strcmp (sp + 1, target) == 0)
      return atoi (lines[i]);
  }
  return 0;
}

static EbConfig *
pool_config (gboolean shared)
{
  EbConfig *c = eb_config_new ();
  g_assert_true (eb_config_set (c, "fetch", "on", NULL));
  g_assert_true (eb_config_set (c, "allow_networks", "127.0.0.1/32", NULL));
  g_assert_true (eb_config_set (c, "deny_domains", "evil.example", NULL));
  g_assert_true (eb_config_set (c, "message_deadline", "20", NULL));
  g_assert_true (eb_config_set (c, "fetch_timeout", "5", NULL));
  if (shared) {
    g_autofree char *server = g_strdup_printf ("127.0.0.1:%u", redis->port);
    g_assert_true (eb_config_set (c, "redis_server", server, NULL));
    /* generous: a loaded machine must not make Redis look down here */
    g_assert_true (eb_config_set (c, "redis_timeout", "2000", NULL));
  }
  return c;
}

static EbFetcher *
fetcher (const EbConfig *c)
{
  g_autoptr (GError) error = NULL;
  EbFetcher *f = eb_fetcher_new (c, &error);
  g_assert_no_error (error);
  return f;
}

static EbFetchResult *
fetch_one (EbFetcher *f, const char *u)
{
  const char *urls[] = { u };
  g_autoptr (GPtrArray) r = eb_fetcher_fetch_all (f, urls, 1, 1 << 20);
  return eb_fetch_result_copy (g_ptr_array_index (r, 0));
}

/* ---- log capture: "down" and "back" lines ---------------------------------- */

static GMutex log_lock;
static guint log_down, log_back;

static GLogWriterOutput
writer (GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
  for (gsize i = 0; i < n; i++)
    if (strcmp (fields[i].key, "MESSAGE") == 0) {
      const char *m = fields[i].value;
      g_mutex_lock (&log_lock);
      if (strstr (m, "Redis") && strstr (m, "is down"))
        log_down++;
      if (strstr (m, "Redis") && strstr (m, "is back:"))
        log_back++;
      g_mutex_unlock (&log_lock);
    }
  return g_log_writer_default (level, fields, n, data);
}

/* Keep calling until Redis answers again (the pause after a failure is at
 * most 8 s): a try that waits, not a timed assertion. */
static void
until_up (EbRedis *r)
{
  for (guint i = 0; i < 400; i++) {
    const char *ping[] = { "PING" };
    g_autoptr (redisReply) reply = eb_redis_command (r, 1, ping, NULL);
    if (reply)
      return;
    g_usleep (50000);
  }
  g_assert_not_reached ();
}

/* ---- the module ------------------------------------------------------------ */

static void
test_module (void)
{
  g_autoptr (EbConfig) c = pool_config (TRUE);
  g_assert_true (eb_config_set (c, "redis_prefix", "t1:", NULL));
  g_autoptr (EbRedis) r = eb_redis_new (c);
  g_assert_nonnull (r);
  g_autofree char *key = eb_redis_key (r, "k");
  g_assert_cmpstr (key, ==, "t1:k");
  const char *set[] = { "SET", key, "v\0w" };
  size_t lens[] = { 3, strlen (key), 3 };
  g_autoptr (redisReply) a = eb_redis_command (r, 3, set, lens);
  g_assert_nonnull (a);
  g_autofree char *got = test_redis_command (redis, "GET t1:k");
  g_assert_cmpmem (got, 3, "v\0w", 3);

  /* a script: by EVALSHA, loaded again after SCRIPT FLUSH (NOSCRIPT) */
  static EbRedisScript echo = EB_REDIS_SCRIPT ("return ARGV[1] .. KEYS[1]");
  for (guint i = 0; i < 2; i++) {
    const char *argv[] = { "K", "v" };
    g_autoptr (redisReply) s = eb_redis_script (r, &echo, 1, 2, argv, NULL);
    g_assert_nonnull (s);
    g_assert_cmpint (s->type, ==, REDIS_REPLY_STRING);
    g_assert_cmpstr (s->str, ==, "vK");
    g_free (test_redis_command (redis, "SCRIPT FLUSH"));
  }

  /* an error reply is the caller's: Redis is not down for it */
  const char *bad[] = { "INCR", key };
  g_autoptr (redisReply) e = eb_redis_command (r, 2, bad, NULL);
  g_assert_nonnull (e);
  g_assert_cmpint (e->type, ==, REDIS_REPLY_ERROR);
  g_assert_true (eb_redis_is_up (r));

  /* killed: NULL, logged once however many calls; back: logged once */
  guint down0 = log_down, back0 = log_back;
  test_redis_kill (redis);
  for (guint i = 0; i < 5; i++) {
    const char *ping[] = { "PING" };
    g_autoptr (redisReply) p = eb_redis_command (r, 1, ping, NULL);
    g_assert_null (p);
  }
  g_assert_false (eb_redis_is_up (r));
  g_assert_cmpuint (log_down, ==, down0 + 1);
  test_redis_restart (redis);
  until_up (r);
  g_assert_true (eb_redis_is_up (r));
  g_assert_cmpuint (log_back, ==, back0 + 1);
  g_assert_cmpuint (log_down, ==, down0 + 1);

  /* paused (SIGSTOP): the command gives up after redis_timeout */
  test_redis_signal (redis, SIGSTOP);
  const char *ping[] = { "PING" };
  g_autoptr (redisReply) p = eb_redis_command (r, 1, ping, NULL);
  g_assert_null (p);
  g_assert_false (eb_redis_is_up (r));
  test_redis_signal (redis, SIGCONT);
  until_up (r);
  g_assert_cmpuint (log_down, ==, down0 + 2);
  g_assert_cmpuint (log_back, ==, back0 + 2);
  g_assert_cmpuint (eb_redis_requests (r), >, 5);
}

/* eb_fetcher_check_shared, a health check's question: NONE without
 * redis_server; UP while Redis answers; DOWN once it is killed (logged once
 * however often asked, and not asked again during the pause); UP again, and
 * "back" logged, once it is restarted. */
static void
test_check_shared (void)
{
  g_autoptr (EbConfig) alone = pool_config (FALSE);
  g_autoptr (EbFetcher) x = fetcher (alone);
  g_assert_cmpint (eb_fetcher_check_shared (x), ==, EB_FETCHER_SHARED_NONE);
  g_autoptr (EbConfig) c = pool_config (TRUE);
  g_autoptr (EbFetcher) f = fetcher (c);
  g_assert_cmpint (eb_fetcher_check_shared (f), ==, EB_FETCHER_SHARED_UP);
  guint down0 = log_down, back0 = log_back;
  test_redis_kill (redis);
  gint64 t0 = g_get_monotonic_time ();
  for (guint i = 0; i < 20; i++)
    g_assert_cmpint (eb_fetcher_check_shared (f), ==, EB_FETCHER_SHARED_DOWN);
  /* the pause: twenty questions do not wait twenty redis_timeouts */
  g_assert_cmpint (g_get_monotonic_time () - t0, <, 2 * G_USEC_PER_SEC);
  g_assert_cmpuint (log_down, ==, down0 + 1);
  test_redis_restart (redis);
  EbFetcherShared st = EB_FETCHER_SHARED_DOWN;
  for (guint i = 0; i < 400 && st != EB_FETCHER_SHARED_UP; i++) {
    st = eb_fetcher_check_shared (f);
    if (st != EB_FETCHER_SHARED_UP)
      g_usleep (50000);
  }
  g_assert_cmpint (st, ==, EB_FETCHER_SHARED_UP);
  g_assert_cmpuint (log_back, ==, back0 + 1);
}

/* A "Redis" that answers garbage: down, not a crash. */
static gpointer
garbage_thread (gpointer data)
{
  GSocket *listener = data;
  for (guint i = 0; i < 1; i++) {   /* one connection: then Redis is down for a pause */
    g_autoptr (GSocket) s = g_socket_accept (listener, NULL, NULL);
    if (!s)
      break;
    char buf[256];
    g_socket_receive (s, buf, sizeof buf, NULL, NULL);
    const char junk[] = "%%% not RESP at all\r\n";
    g_socket_send (s, junk, sizeof junk - 1, NULL, NULL);
    g_socket_close (s, NULL);
  }
  return NULL;
}

static void
test_garbage (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GSocket) l = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, &error);
  g_assert_no_error (error);
  g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr (GSocketAddress) sa = g_inet_socket_address_new (lo, 0);
  g_assert_true (g_socket_bind (l, sa, TRUE, &error));
  g_assert_true (g_socket_listen (l, &error));
  g_autoptr (GSocketAddress) bound = g_socket_get_local_address (l, &error);
  guint port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
  GThread *th = g_thread_new ("garbage", garbage_thread, l);

  g_autoptr (EbConfig) c = pool_config (FALSE);
  g_autofree char *server = g_strdup_printf ("127.0.0.1:%u", port);
  g_assert_true (eb_config_set (c, "redis_server", server, NULL));
  g_autoptr (EbFetcher) f = fetcher (c);
  g_autofree char *u = url ("/type?t=text/plain&b=garbage");
  g_autoptr (EbFetchResult) r = fetch_one (f, u);
  g_assert_cmpint (r->reason, ==, EB_REASON_RESOLVED);
  g_assert_cmpint (count ("/type?t=text/plain&b=garbage"), ==, 1);
  g_socket_close (l, NULL);
  g_thread_join (th);
}

/* ---- the shared cache and coalescing --------------------------------------- */

static void
test_shared_cache (void)
{
  g_autoptr (EbConfig) c = pool_config (TRUE);
  g_autoptr (EbFetcher) a = fetcher (c);
  g_autoptr (EbFetcher) b = fetcher (c);
  g_autofree char *u = url ("/type?t=text/plain&b=shared");
  g_autoptr (EbFetchResult) ra = fetch_one (a, u);
  g_autoptr (EbFetchResult) rb = fetch_one (b, u);
  g_assert_cmpint (ra->reason, ==, EB_REASON_RESOLVED);
  g_assert_cmpint (rb->reason, ==, EB_REASON_RESOLVED);
  g_assert_false (ra->from_cache);
  g_assert_true (rb->from_cache);
  g_assert_true (g_bytes_equal (ra->body, rb->body));
  g_assert_cmpstr (rb->content_type, ==, "text/plain");
  g_assert_cmpint (count ("/type?t=text/plain&b=shared"), ==, 1);

  /* failures are shared too: a 404 is asked once */
  g_autofree char *gone = url ("/status/404");
  g_autoptr (EbFetchResult) fa = fetch_one (a, gone);
  g_autoptr (EbFetchResult) fb = fetch_one (b, gone);
  g_assert_cmpint (fa->reason, ==, EB_REASON_HTTP_STATUS);
  g_assert_cmpint (fb->reason, ==, EB_REASON_HTTP_STATUS);
  g_assert_cmpint (count ("/status/404"), ==, 1);

  /* above redis_max_body: stays local, each instance fetches it */
  g_assert_true (eb_config_set (c, "redis_max_body", "100", NULL));
  g_autoptr (EbFetcher) d = fetcher (c);
  g_autoptr (EbFetcher) e = fetcher (c);
  g_autofree char *big = url ("/bin?n=1000");
  G_GNUC_UNUSED g_autoptr (EbFetchResult) bd = fetch_one (d, big);
  g_autoptr (EbFetchResult) be = fetch_one (e, big);
  g_assert_cmpint (be->reason, ==, EB_REASON_RESOLVED);
  g_assert_cmpint (count ("/bin?n=1000"), ==, 2);

  /* without redis_server, nothing is shared */
  g_autoptr (EbConfig) alone = pool_config (FALSE);
  g_autoptr (EbFetcher) x = fetcher (alone);
  g_autoptr (EbFetchResult) rx = fetch_one (x, u);
  g_assert_false (rx->from_cache);
  g_assert_cmpint (count ("/type?t=text/plain&b=shared"), ==, 2);
}

typedef struct {
  EbFetcher     *f;
  const char    *url;
  EbFetchResult *result;
} Job;

static gpointer
job_thread (gpointer data)
{
  Job *j = data;
  j->result = fetch_one (j->f, j->url);
  return NULL;
}

/* Two instances, four threads each, one slow URL at once: fetched once. */
static void
test_coalescing (void)
{
  g_autoptr (EbConfig) c = pool_config (TRUE);
  g_autoptr (EbFetcher) a = fetcher (c);
  g_autoptr (EbFetcher) b = fetcher (c);
  g_autofree char *u = url ("/slow?ms=700");
  Job jobs[8];
  GThread *th[8];
  for (guint i = 0; i < 8; i++) {
    jobs[i] = (Job) { i % 2 ? b : a, u, NULL };
    th[i] = g_thread_new ("job", job_thread, &jobs[i]);
  }
  for (guint i = 0; i < 8; i++) {
    g_thread_join (th[i]);
    g_assert_cmpint (jobs[i].result->reason, ==, EB_REASON_RESOLVED);
    eb_fetch_result_free (jobs[i].result);
  }
  g_assert_cmpint (count ("/slow?ms=700"), ==, 1);
}

/* The rate holds for the pool: 3 a minute in all, not 3 per instance. */
static void
test_shared_rate (void)
{
  for (guint shared = 0; shared < 2; shared++) {
    g_autoptr (EbConfig) c = pool_config (shared);
    g_assert_true (eb_config_set (c, "max_requests_per_host", "3", NULL));
    g_assert_true (eb_config_set (c, "message_deadline", "2", NULL));
    g_assert_true (eb_config_set (c, "redis_prefix", shared ? "rate:" : "x:", NULL));
    g_autoptr (EbFetcher) a = fetcher (c);
    g_autoptr (EbFetcher) b = fetcher (c);
    guint resolved = 0, limited = 0;
    for (guint i = 0; i < 6; i++) {
      g_autofree char *path = g_strdup_printf ("/type?t=text/plain&b=rate%u-%u", shared, i);
      g_autofree char *u = url (path);
      g_autoptr (EbFetchResult) r = fetch_one (i < 3 ? a : b, u);
      resolved += r->reason == EB_REASON_RESOLVED;
      limited += r->reason == EB_REASON_RATE_LIMITED;
    }
    g_test_message ("shared=%u: %u resolved, %u rate-limited", shared, resolved, limited);
    g_assert_cmpuint (resolved, ==, shared ? 3 : 6);
    g_assert_cmpuint (limited, ==, shared ? 3 : 0);
  }
}

/* ---- poisoned entries ------------------------------------------------------ */

static void
forge (const char *u, guint reason, const char *type, const char *final_url, const char *address,
       const char *body, const char *sha)
{
  g_autofree char *real_sha = g_compute_checksum_for_string (G_CHECKSUM_SHA256, body, -1);
  GVariant *b = g_variant_new_fixed_array (G_VARIANT_TYPE_BYTE, body, strlen (body), 1);
  g_autoptr (GVariant) v = g_variant_ref_sink (
    g_variant_new ("(uu^ay^ay^ay^ay^ayx@ay)", 1u, reason, "", type, final_url, address, sha ? sha : real_sha,
                   g_get_real_time (), b));
  g_autofree char *h = g_compute_checksum_for_string (G_CHECKSUM_SHA256, u, -1);
  g_autofree char *ok = test_redis_command (redis, "SET extbody:c:%s %b", h, g_variant_get_data (v),
                                            g_variant_get_size (v));
  g_assert_cmpstr (ok, ==, "OK");
}

static void
test_poison (void)
{
  g_autoptr (EbConfig) c = pool_config (TRUE);
  struct {
    const char *what;
    const char *final_url;   /* NULL: the URL */
    const char *address;
    const char *sha;         /* NULL: the body's */
    gboolean    junk;
  } cases[] = {
    { "junk bytes", NULL, "127.0.0.1", NULL, TRUE },
    { "an address the policy refuses", NULL, "10.1.2.3", NULL, FALSE },
    { "no address", NULL, "", NULL, FALSE },
    { "a body that is not its sha256", NULL, "127.0.0.1", "00", FALSE },
    { "a final URL on a denied domain", "http://evil.example/x", "127.0.0.1", NULL, FALSE },
    { "a final URL of a scheme not fetched", "file:///etc/passwd", "127.0.0.1", NULL, FALSE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_test_message ("poisoned: %s", cases[i].what);
    g_autofree char *path = g_strdup_printf ("/type?t=text/plain&b=poison%u", i);
    g_autofree char *u = url (path);
    if (cases[i].junk) {
      g_autofree char *h = g_compute_checksum_for_string (G_CHECKSUM_SHA256, u, -1);
      g_free (test_redis_command (redis, "SET extbody:c:%s %s", h, "EVIL junk"));
    } else {
      forge (u, EB_REASON_RESOLVED, "text/plain", cases[i].final_url ? cases[i].final_url : u,
             cases[i].address, "EVIL", cases[i].sha);
    }
    g_autoptr (EbFetcher) f = fetcher (c);
    g_autoptr (EbFetchResult) r = fetch_one (f, u);
    g_assert_cmpint (r->reason, ==, EB_REASON_RESOLVED);
    g_assert_false (r->from_cache);
    g_autofree char *want = g_strdup_printf ("poison%u", i);
    g_assert_cmpmem (g_bytes_get_data (r->body, NULL), g_bytes_get_size (r->body), want, strlen (want));
    g_assert_cmpint (count (path), ==, 1);
    /* and the entry was replaced by the real one */
    g_autoptr (EbFetcher) g = fetcher (c);
    g_autoptr (EbFetchResult) again = fetch_one (g, u);
    g_assert_true (again->from_cache);
    g_assert_true (g_bytes_equal (again->body, r->body));
    g_assert_cmpint (count (path), ==, 1);
  }

  /* a key of another type: a miss, fetched and not stored (WRONGTYPE) */
  g_autofree char *u = url ("/type?t=text/plain&b=hashkey");
  g_autofree char *h = g_compute_checksum_for_string (G_CHECKSUM_SHA256, u, -1);
  g_free (test_redis_command (redis, "HSET extbody:c:%s a b", h));
  g_autoptr (EbFetcher) f = fetcher (c);
  g_autoptr (EbFetchResult) r = fetch_one (f, u);
  g_assert_cmpint (r->reason, ==, EB_REASON_RESOLVED);
}

/* A well-formed entry with data the reference refuses: extbody leaves the
 * reference, as it would for the same data fetched (Content-MD5, type). */
static void
test_poison_reference (void)
{
  g_autofree char *u = url ("/text");
  g_autofree char *md5 = g_compute_checksum_for_string (G_CHECKSUM_MD5, "hello from the test server\n", -1);
  guint8 raw[16];
  for (int i = 0; i < 16; i++)
    raw[i] = (guint8) (g_ascii_xdigit_value (md5[2 * i]) << 4 | g_ascii_xdigit_value (md5[2 * i + 1]));
  g_autofree char *b64 = g_base64_encode (raw, 16);
  g_autofree char *m = g_strdup_printf (
    "From: a@example.org\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: text/plain\r\n\r\nsee below\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n\tURL=\"%s\"\r\n\r\n"
    "Content-Type: text/plain\r\nContent-MD5: %s\r\n\r\n--b--\r\n", u, b64);
  g_autoptr (GBytes) msg = g_bytes_new (m, strlen (m));
  g_autofree char *server = g_strdup_printf ("redis_server=127.0.0.1:%u", redis->port);
  g_autofree char *dir = g_dir_make_tmp ("extbody-redis-conf-XXXXXX", NULL);
  g_autofree char *conf = g_build_filename (dir, "empty.conf", NULL);
  g_assert_true (g_file_set_contents (conf, "", 0, NULL));
  const char *args[] = { "rewrite", "--report", "-c", conf, "--fetch", "--allow-network", "127.0.0.1/32",
                         "-o", server, NULL };
  struct { const char *type, *body, *want; } cases[] = {
    { "text/plain", "EVIL but valid\n", "checksum-mismatch" },
    { "image/png", "hello from the test server\n", "left" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    forge (u, EB_REASON_RESOLVED, cases[i].type, u, "127.0.0.1", cases[i].body, NULL);
    g_auto (CmdResult) r = { 0 };
    run_extbody (&r, msg, args);
    g_autofree char *err = g_strndup (g_bytes_get_data (r.err, NULL), g_bytes_get_size (r.err));
    g_test_message ("report: %s", err);
    g_assert_cmpint (r.status, ==, 0);
    g_assert_nonnull (strstr (err, cases[i].want));
    g_assert_true (g_bytes_equal (r.out, msg));   /* the message as it came */
  }
  g_assert_cmpint (count ("/text"), ==, 0);
  g_unlink (conf);
  g_rmdir (dir);
}

/* ---- faults ---------------------------------------------------------------- */

static void
test_faults (void)
{
  g_autoptr (EbConfig) c = pool_config (TRUE);
  g_autoptr (EbFetcher) a = fetcher (c);
  g_autoptr (EbFetcher) b = fetcher (c);

  /* a rate key of another type: the local bucket decides */
  g_free (test_redis_command (redis, "SET extbody:r:127.0.0.1 junk"));
  g_autofree char *u0 = url ("/type?t=text/plain&b=fault0");
  g_autoptr (EbFetchResult) r0 = fetch_one (a, u0);
  g_assert_cmpint (r0->reason, ==, EB_REASON_RESOLVED);
  g_free (test_redis_command (redis, "DEL extbody:r:127.0.0.1"));

  /* a lock never released, without expiry or longer than any message: not
   * an instance's; fetched at once */
  const char *stale[] = { "SET extbody:l:%s someone", "SET extbody:l:%s someone PX 3600000" };
  for (guint i = 0; i < G_N_ELEMENTS (stale); i++) {
    g_autofree char *path = g_strdup_printf ("/type?t=text/plain&b=stale%u", i);
    g_autofree char *u = url (path);
    g_autofree char *h = g_compute_checksum_for_string (G_CHECKSUM_SHA256, u, -1);
    g_free (test_redis_command (redis, stale[i], h));
    g_autoptr (EbFetchResult) r = fetch_one (b, u);
    g_assert_cmpint (r->reason, ==, EB_REASON_RESOLVED);
    g_assert_cmpint (count (path), ==, 1);
  }
  /* a lock whose owner died: waited for until it expires, then fetched here */
  {
    g_autofree char *u = url ("/type?t=text/plain&b=orphan");
    g_autofree char *h = g_compute_checksum_for_string (G_CHECKSUM_SHA256, u, -1);
    g_free (test_redis_command (redis, "SET extbody:l:%s dead-owner PX 1500", h));
    g_autoptr (EbFetchResult) r = fetch_one (b, u);
    g_assert_cmpint (r->reason, ==, EB_REASON_RESOLVED);
    g_assert_cmpint (count ("/type?t=text/plain&b=orphan"), ==, 1);
  }

  /* killed mid-run: mail flows on, on the local cache */
  test_redis_kill (redis);
  g_autofree char *u1 = url ("/type?t=text/plain&b=fault1");
  g_autoptr (EbFetchResult) r1 = fetch_one (a, u1);
  g_autoptr (EbFetchResult) r1b = fetch_one (a, u1);
  g_assert_cmpint (r1->reason, ==, EB_REASON_RESOLVED);
  g_assert_true (r1b->from_cache);
  /* restarted (empty): shared again once the pause is over */
  test_redis_restart (redis);
  g_autofree char *u2 = url ("/type?t=text/plain&b=fault2");
  for (guint i = 0; i < 400; i++) {
    g_autoptr (EbFetchResult) r = fetch_one (a, u2);
    g_assert_cmpint (r->reason, ==, EB_REASON_RESOLVED);
    g_autofree char *h = g_compute_checksum_for_string (G_CHECKSUM_SHA256, u2, -1);
    g_autofree char *n = test_redis_command (redis, "EXISTS extbody:c:%s", h);
    if (strcmp (n, "1") == 0)
      break;
    /* the local cache answers until its entry is gone: ask another URL */
    g_free (u2);
    u2 = g_strdup_printf ("http://127.0.0.1:%u/type?t=text/plain&b=fault2-%u", srv->port, i);
    g_usleep (50000);
  }
  g_autoptr (EbFetchResult) r2 = fetch_one (b, u2);
  g_assert_true (r2->from_cache);

  /* paused: each call gives up within redis_timeout, and mail flows on */
  test_redis_signal (redis, SIGSTOP);
  g_autofree char *u3 = url ("/type?t=text/plain&b=fault3");
  g_autoptr (EbFetchResult) r3 = fetch_one (b, u3);
  g_assert_cmpint (r3->reason, ==, EB_REASON_RESOLVED);
  g_autoptr (EbFetchResult) r3a = fetch_one (a, u3);
  g_assert_cmpint (r3a->reason, ==, EB_REASON_RESOLVED);
  test_redis_signal (redis, SIGCONT);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* Redis down is a warning in the log, expected here */
  g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
  g_log_set_writer_func (writer, NULL, NULL);
  redis = test_redis_start ();
  if (!redis)
    test_skip_all (g_strdup_printf ("no %s (apt-get install redis-server, or valkey-server for test-redis-valkey)",
                                    test_redis_server ()));
  {
    g_autofree char *cmd = g_strdup_printf ("'%s' --version", test_redis_server ());
    g_autofree char *version = NULL;
    test_sh (cmd, &version);
    g_test_message ("%s", version ? g_strstrip (version) : test_redis_server ());
  }
  g_autoptr (GError) error = NULL;
  const char *args[] = { "--bind", "127.0.0.1", NULL };
  srv = test_server_start ("httpd.py", args, NULL, FALSE, &error);
  g_assert_no_error (error);
  g_test_add_func ("/redis/module", test_module);
  g_test_add_func ("/redis/garbage", test_garbage);
  g_test_add_func ("/redis/check-shared", test_check_shared);
  g_test_add_func ("/redis/shared-cache", test_shared_cache);
  g_test_add_func ("/redis/coalescing", test_coalescing);
  g_test_add_func ("/redis/shared-rate", test_shared_rate);
  g_test_add_func ("/redis/poison", test_poison);
  g_test_add_func ("/redis/poison-reference", test_poison_reference);
  g_test_add_func ("/redis/faults", test_faults);
  int rc = g_test_run ();
  test_server_stop (srv);
  test_redis_stop (redis);
  return rc;
}
