/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-stats.c - the counters a front end and an administrator share: what one
 * planned message adds, the summary line (left by reason, most first, ties by
 * token, with the configuration key that decides), counting from several
 * threads at once, the fetch counters, and their Prometheus text format
 * (every line, escaping, the atomic write: a reader never sees half a file). */
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "eb-gmime.h"
#include "eb-stats.h"
#include "eb-metrics.h"
#include "eb-plan-private.h"
#include <glib/gstdio.h>

/* A message with one reference of each of: resolved (data:), fetch-off
 * (http, fetching off), url-missing. */
static const char three_refs[] =
  "From: a@example.org\n"
  "Message-ID: <three@example.org>\n"
  "MIME-Version: 1.0\n"
  "Content-Type: multipart/mixed; boundary=\"b\"\n"
  "\n"
  "--b\n"
  "Content-Type: message/external-body; access-type=URL;\n"
  " URL=\"data:text/plain,hello%20world\"\n"
  "\n"
  "Content-Type: text/plain\n"
  "\n"
  "--b\n"
  "Content-Type: message/external-body; access-type=URL;\n"
  " URL=\"http://www.example.com/x.txt\"\n"
  "\n"
  "Content-Type: text/plain\n"
  "\n"
  "--b\n"
  "Content-Type: message/external-body; access-type=URL\n"
  "\n"
  "Content-Type: text/plain\n"
  "\n"
  "--b--\n";

static const char no_refs[] = "From: a@example.org\nSubject: plain\n\nhello\n";

static EbPlan *
plan (const char *msg, gsize len, const EbConfig *config)
{
  return eb_rewrite_plan (msg, len, config, NULL, EB_REWRITE_DEFAULT);
}

static void
test_add_result (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbStats) s = eb_stats_new ();
  g_assert_cmpuint (eb_stats_get_messages (s), ==, 0);
  g_autofree char *empty = eb_stats_format_summary (s, FALSE);
  g_assert_cmpstr (empty, ==, "0 messages scanned, 0 references, 0 resolved, 0 messages changed");

  g_autoptr (EbPlan) r = plan (three_refs, strlen (three_refs), config);
  eb_stats_add_result (s, r);
  g_assert_cmpuint (eb_stats_get_messages (s), ==, 1);
  g_assert_cmpuint (eb_stats_get_references (s), ==, 3);
  g_assert_cmpuint (eb_stats_get_resolved (s), ==, 1);
  g_assert_cmpuint (eb_stats_get_left (s, EB_REASON_FETCH_OFF), ==, 1);
  g_assert_cmpuint (eb_stats_get_left (s, EB_REASON_URL_MISSING), ==, 1);
  g_assert_cmpuint (eb_stats_get_left (s, EB_REASON_RESOLVED), ==, 0);
  g_assert_cmpuint (eb_stats_get_left (s, EB_REASON_N), ==, 0);   /* out of range: none */

  /* no references, and a message that could not be read: messages only */
  g_autoptr (EbPlan) plain = plan (no_refs, strlen (no_refs), config);
  eb_stats_add_result (s, plain);
  eb_stats_add_result (s, NULL);
  g_assert_cmpuint (eb_stats_get_messages (s), ==, 3);
  g_assert_cmpuint (eb_stats_get_references (s), ==, 3);

  /* above max_message_size: not parsed, its reason counted once */
  g_assert_true (eb_config_apply_option (config, "max_message_size=1024", NULL));
  g_autoptr (GString) big = g_string_new (three_refs);
  while (big->len <= 2048)
    g_string_append (big, "padding padding padding padding padding padding\n");
  g_autoptr (EbPlan) large = plan (big->str, big->len, config);
  g_assert_cmpint (large->reason, ==, EB_REASON_MESSAGE_TOO_LARGE);
  eb_stats_add_result (s, large);
  g_assert_cmpuint (eb_stats_get_messages (s), ==, 4);
  g_assert_cmpuint (eb_stats_get_references (s), ==, 3);
  g_assert_cmpuint (eb_stats_get_left (s, EB_REASON_MESSAGE_TOO_LARGE), ==, 1);

  eb_stats_add_skipped (s);
  eb_stats_add_changed (s, 2);
  eb_stats_add_bytes (s, 100);
  eb_stats_add_bytes (s, 23);
  g_assert_cmpuint (eb_stats_get_skipped (s), ==, 1);
  g_assert_cmpuint (eb_stats_get_changed (s), ==, 2);
  g_assert_cmpuint (eb_stats_get_bytes (s), ==, 123);
}

static void
test_summary (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbStats) s = eb_stats_new ();
  g_autoptr (EbPlan) r = plan (three_refs, strlen (three_refs), config);
  eb_stats_add_result (s, r);
  eb_stats_add_result (s, r);
  eb_stats_add_changed (s, 2);
  /* a tie (2 and 2): by token; "fetch-off" has its key */
  g_autofree char *line = eb_stats_format_summary (s, FALSE);
  g_assert_cmpstr (line, ==, "2 messages scanned, 6 references, 2 resolved, 2 messages changed; "
                             "left: fetch-off 2 (fetch = on), url-missing 2");
  /* most first, then a skipped entry and the dry run's words */
  g_assert_true (eb_config_apply_option (config, "max_message_size=1024", NULL));
  g_autoptr (GString) big = g_string_new (three_refs);
  while (big->len <= 2048)
    g_string_append (big, "padding padding padding padding padding padding\n");
  g_autoptr (EbPlan) large = plan (big->str, big->len, config);
  for (int i = 0; i < 3; i++)
    eb_stats_add_result (s, large);
  eb_stats_add_skipped (s);
  g_autofree char *dry = eb_stats_format_summary (s, TRUE);
  g_assert_cmpstr (dry, ==, "5 messages scanned (1 entries skipped), 6 references, 2 resolved, "
                            "2 messages would change; left: message-too-large 3 (raise "
                            "max_message_size), fetch-off 2 (fetch = on), url-missing 2");
}

typedef struct {
  EbStats               *stats;
  const EbPlan *result;
} Adder;

static gpointer
add_many (gpointer data)
{
  Adder *a = data;
  for (int i = 0; i < 2000; i++) {
    eb_stats_add_result (a->stats, a->result);
    eb_stats_add_bytes (a->stats, 3);
    eb_stats_add_changed (a->stats, 1);
  }
  return NULL;
}

static void
test_threads (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbStats) s = eb_stats_new ();
  g_autoptr (EbPlan) r = plan (three_refs, strlen (three_refs), config);
  Adder a = { s, r };
  GThread *t[4];
  for (guint i = 0; i < G_N_ELEMENTS (t); i++)
    t[i] = g_thread_new ("adder", add_many, &a);
  for (guint i = 0; i < G_N_ELEMENTS (t); i++)
    g_thread_join (t[i]);
  g_assert_cmpuint (eb_stats_get_messages (s), ==, 8000);
  g_assert_cmpuint (eb_stats_get_references (s), ==, 24000);
  g_assert_cmpuint (eb_stats_get_resolved (s), ==, 8000);
  g_assert_cmpuint (eb_stats_get_left (s, EB_REASON_FETCH_OFF), ==, 8000);
  g_assert_cmpuint (eb_stats_get_bytes (s), ==, 24000);
  g_assert_cmpuint (eb_stats_get_changed (s), ==, 8000);
}

/* Four fetches and what is not one: a cache hit; resolved, 1000 bytes in 3 ms;
 * a 404 of 12 bytes in 0.2 s; a time-out at 150 s (past the last bound: +Inf);
 * a URL refused before any network use (neither). */
static void
add_fetches (EbStats *s)
{
  const EbFetchRecord recs[] = {
    { .outcome = EB_REASON_RESOLVED, .cache_hit = TRUE },
    { .outcome = EB_REASON_RESOLVED, .network = TRUE, .bytes = 1000, .elapsed = 3000 },
    { .outcome = EB_REASON_HTTP_STATUS, .network = TRUE, .bytes = 12, .elapsed = 200000 },
    { .outcome = EB_REASON_TIMED_OUT, .network = TRUE, .bytes = 0, .elapsed = 150 * G_USEC_PER_SEC },
    { .outcome = EB_REASON_REFUSED_DOMAIN },
  };
  for (guint i = 0; i < G_N_ELEMENTS (recs); i++)
    eb_stats_add_fetch (s, &recs[i]);
}

static void
test_fetches (void)
{
  g_autoptr (EbStats) s = eb_stats_new ();
  add_fetches (s);
  g_assert_cmpuint (eb_stats_get_cache_hits (s), ==, 1);
  g_assert_cmpuint (eb_stats_get_fetches (s, EB_REASON_RESOLVED), ==, 1);
  g_assert_cmpuint (eb_stats_get_fetches (s, EB_REASON_HTTP_STATUS), ==, 1);
  g_assert_cmpuint (eb_stats_get_fetches (s, EB_REASON_TIMED_OUT), ==, 1);
  g_assert_cmpuint (eb_stats_get_fetches (s, EB_REASON_REFUSED_DOMAIN), ==, 0);
  g_assert_cmpuint (eb_stats_get_fetches (s, EB_REASON_N), ==, 0);
  g_assert_cmpuint (eb_stats_get_fetched_bytes (s), ==, 1012);
  EbStatsSnapshot snap;
  eb_stats_snapshot (s, &snap);
  g_assert_cmpuint (snap.latency[0], ==, 1);                    /* 3 ms <= 0.005 */
  g_assert_cmpuint (snap.latency[5], ==, 1);                    /* 0.2 s <= 0.25 */
  g_assert_cmpuint (snap.latency[EB_STATS_N_BUCKETS], ==, 1);   /* 150 s: +Inf */
  g_assert_cmpuint (snap.latency_us, ==, 150203000);

  /* a result carries its fetches to eb_stats_add_result */
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbPlan) r = plan (three_refs, strlen (three_refs), config);
  g_assert_cmpuint (r->fetches->len, ==, 0);   /* fetching off: none */
  EbFetchRecord hit = { .outcome = EB_REASON_RESOLVED, .cache_hit = TRUE };
  g_array_append_val (r->fetches, hit);
  eb_stats_add_result (s, r);
  g_assert_cmpuint (eb_stats_get_cache_hits (s), ==, 2);
  g_assert_cmpuint (eb_stats_get_messages (s), ==, 1);
}

static void
test_escape (void)
{
  g_autoptr (GString) l = g_string_new (NULL);
  eb_metrics_escape_label (l, "a\\b\"c\nd=}");
  g_assert_cmpstr (l->str, ==, "a\\\\b\\\"c\\nd=}");
  g_autoptr (GString) h = g_string_new (NULL);
  eb_metrics_escape_help (h, "x\\y \"q\"\nz");
  g_assert_cmpstr (h->str, ==, "x\\\\y \"q\"\\nz");
}

static void
assert_has (const char *text, const char *want)
{
  if (!strstr (text, want))
    g_error ("missing:\n%s\nin:\n%s", want, text);
}

/* A plan of eb_externalize_plan counts parts, not references: with no store,
 * the attachment is a part that would be externalized, left as such. */
static void
test_externalize (void)
{
  GString *m = g_string_new ("From: a@example.org\nMIME-Version: 1.0\n"
                             "Content-Type: multipart/mixed; boundary=b\n\n--b\n"
                             "Content-Type: text/plain\n\nhi\n--b\n"
                             "Content-Type: application/pdf\nContent-Disposition: attachment\n\n");
  for (int i = 0; i < 40; i++)
    g_string_append (m, "0123456789012345678901234567890123456789012345678901234567890123\n");
  g_string_append (m, "--b--\n");
  g_autoptr (EbConfig) config = eb_config_new ();
  g_assert_true (eb_config_set (config, "externalize_min_size", "1k", NULL));
  g_autoptr (EbPlan) r = eb_externalize_plan (m->str, m->len, config, NULL, EB_EXTERNALIZE_DEFAULT);
  g_autoptr (EbStats) st = eb_stats_new ();
  eb_stats_add_result (st, r);
  EbStatsSnapshot s;
  eb_stats_snapshot (st, &s);
  g_assert_cmpuint (s.messages, ==, 1);
  g_assert_cmpuint (s.parts, ==, 1);
  g_assert_cmpuint (s.externalized, ==, 0);
  g_assert_cmpuint (s.references, ==, 0);
  g_assert_cmpuint (s.left[EB_REASON_WOULD_EXTERNALIZE], ==, 1);
  g_autofree char *sum = eb_stats_format_summary (st, TRUE);
  g_assert_cmpstr (sum, ==, "1 messages scanned, 1 parts, 0 externalized (0 bytes), 0 messages would change; "
                            "left: would-externalize 1");
  g_autofree char *t = eb_metrics_format (&s);
  g_assert_nonnull (strstr (t, "\nextbody_externalize_parts_total 1\n"));
  g_assert_nonnull (strstr (t, "\nextbody_externalized_parts_total 0\n"));
  g_string_free (m, TRUE);
}

static void
test_format (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbStats) s = eb_stats_new ();
  g_autoptr (EbPlan) r = plan (three_refs, strlen (three_refs), config);
  eb_stats_add_result (s, r);
  eb_stats_add_changed (s, 1);
  eb_stats_add_bytes (s, strlen (three_refs));
  add_fetches (s);
  g_autofree char *t = eb_metrics_format_prometheus (s);
  assert_has (t, "# HELP extbody_messages_total Messages scanned.\n"
                 "# TYPE extbody_messages_total counter\n"
                 "extbody_messages_total 1\n");
  assert_has (t, "# TYPE extbody_messages_changed_total counter\nextbody_messages_changed_total 1\n");
  g_autofree char *bytes = g_strdup_printf ("\nextbody_input_bytes_total %zu\n", strlen (three_refs));
  assert_has (t, bytes);
  assert_has (t, "\nextbody_references_total 3\n");
  assert_has (t, "\nextbody_references_resolved_total 1\n");
  assert_has (t, "# TYPE extbody_left_total counter\n");
  /* every reason but resolved, zero or not */
  for (guint i = 0; i < EB_REASON_N; i++) {
    g_autofree char *line = g_strdup_printf ("\nextbody_left_total{reason=\"%s\"} %d\n",
                                             eb_reason_token ((EbReason) i),
                                             i == EB_REASON_FETCH_OFF || i == EB_REASON_URL_MISSING);
    if (i == EB_REASON_RESOLVED)
      g_assert_null (strstr (t, line));
    else
      assert_has (t, line);
  }
  /* fetches: resolved always, other outcomes once they happened */
  assert_has (t, "# TYPE extbody_fetches_total counter\n"
                 "extbody_fetches_total{outcome=\"resolved\"} 1\n");
  assert_has (t, "\nextbody_fetches_total{outcome=\"timed-out\"} 1\n");
  assert_has (t, "\nextbody_fetches_total{outcome=\"http-status\"} 1\n");
  g_assert_null (strstr (t, "outcome=\"refused-domain\""));
  assert_has (t, "\nextbody_fetched_bytes_total 1012\n");
  assert_has (t, "\nextbody_fetch_cache_hits_total 1\n");
  assert_has (t, "# TYPE extbody_fetch_duration_seconds histogram\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"0.005\"} 1\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"0.01\"} 1\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"0.025\"} 1\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"0.05\"} 1\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"0.1\"} 1\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"0.25\"} 2\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"0.5\"} 2\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"1\"} 2\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"2.5\"} 2\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"5\"} 2\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"10\"} 2\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"30\"} 2\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"60\"} 2\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"120\"} 2\n"
                 "extbody_fetch_duration_seconds_bucket{le=\"+Inf\"} 3\n"
                 "extbody_fetch_duration_seconds_sum 150.203000\n"
                 "extbody_fetch_duration_seconds_count 3\n");
  g_assert_true (g_str_has_suffix (t, "extbody_fetch_duration_seconds_count 3\n"));
  /* each metric: HELP, then TYPE, then its samples; every line one of these */
  g_auto (GStrv) lines = g_strsplit (t, "\n", -1);
  guint helps = 0, types = 0;
  for (guint i = 0; lines[i] && *lines[i]; i++) {
    if (g_str_has_prefix (lines[i], "# HELP ")) {
      helps++;
      g_assert_true (g_str_has_prefix (lines[i + 1], "# TYPE "));
    } else if (g_str_has_prefix (lines[i], "# TYPE ")) {
      types++;
    } else {
      g_assert_true (g_str_has_prefix (lines[i], "extbody_"));
      g_assert_nonnull (strchr (lines[i], ' '));
    }
  }
  g_assert_cmpuint (helps, ==, 14);
  g_assert_cmpuint (types, ==, 14);
}

typedef struct {
  const char *path;
  const char *a, *b;   /* the two texts the writer alternates */
  gint        stop;
  guint       reads;
} Reader;

static gpointer
read_many (gpointer data)
{
  Reader *r = data;
  while (!g_atomic_int_get (&r->stop)) {
    g_autofree char *got = NULL;
    g_autoptr (GError) e = NULL;
    g_assert_true (g_file_get_contents (r->path, &got, NULL, &e));
    /* the old file or the new one, whole: never empty, never a part */
    if (strcmp (got, r->a) != 0 && strcmp (got, r->b) != 0)
      g_error ("a reader saw %zu bytes that are neither text (%zu, %zu bytes)", strlen (got),
               strlen (r->a), strlen (r->b));
    r->reads++;
  }
  return NULL;
}

static void
test_write_atomic (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbody-metrics-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "extbody.prom", NULL);
  g_autoptr (EbStats) small = eb_stats_new ();
  g_autoptr (EbStats) large = eb_stats_new ();
  for (guint i = 0; i < 1000; i++)
    add_fetches (large);
  eb_stats_add_bytes (large, G_GUINT64_CONSTANT (123456789012345));
  g_autofree char *a = eb_metrics_format_prometheus (small);
  g_autofree char *b = eb_metrics_format_prometheus (large);
  g_assert_cmpuint (strlen (a), <, strlen (b));
  g_autoptr (GError) e = NULL;
  /* 0644 whatever the umask: the unit's is 0007, and node_exporter reads the
   * file as its own user (issue 26) */
  mode_t old_mask = umask (0077);
  g_assert_true (eb_metrics_write_prometheus (small, path, &e));
  umask (old_mask);
  g_assert_no_error (e);
  GStatBuf st;
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0644);

  Reader r = { path, a, b, 0, 0 };
  GThread *t = g_thread_new ("reader", read_many, &r);
  for (guint i = 0; i < 200; i++) {
    g_assert_true (eb_metrics_write_prometheus (i % 2 ? small : large, path, &e));
    g_assert_no_error (e);
  }
  g_atomic_int_set (&r.stop, 1);
  g_thread_join (t);
  g_test_message ("%u reads", r.reads);
  g_assert_cmpuint (r.reads, >, 0);
  g_autofree char *last = NULL;
  g_assert_true (g_file_get_contents (path, &last, NULL, NULL));
  g_assert_cmpstr (last, ==, a);   /* the 200th write, i = 199: small */

  /* no temporary left beside it */
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_assert_cmpstr (g_dir_read_name (d), ==, "extbody.prom");
  g_assert_null (g_dir_read_name (d));

  /* a directory that does not exist: an error, nothing made */
  g_autofree char *missing = g_build_filename (dir, "no", "extbody.prom", NULL);
  g_assert_false (eb_metrics_write_prometheus (small, missing, &e));
  g_assert_error (e, G_FILE_ERROR, G_FILE_ERROR_NOENT);
  g_clear_error (&e);
  /* a directory in the way: an error, the directory as it was */
  g_autofree char *in_way = g_build_filename (dir, "in-the-way.prom", NULL);
  g_assert_cmpint (g_mkdir (in_way, 0700), ==, 0);
  g_assert_false (eb_metrics_write_prometheus (small, in_way, &e));
  g_assert_nonnull (e);
  g_clear_error (&e);
  g_assert_true (g_file_test (in_way, G_FILE_TEST_IS_DIR));
  g_dir_rewind (d);
  guint n = 0;
  while (g_dir_read_name (d))
    n++;
  g_assert_cmpuint (n, ==, 2);   /* extbody.prom and the directory: no temporary */
  g_rmdir (in_way);
  g_unlink (path);
  g_rmdir (dir);
}

/* The mailbox runs' text reads back as it was written, with its writer
 * label on every sample, and a text of another writer (or of none) is
 * refused; eb_metrics_add_to_prometheus adds runs up (issue 26). */
static void
test_parse_and_add (void)
{
  g_autoptr (EbStats) s = eb_stats_new ();
  add_fetches (s);
  eb_stats_add_bytes (s, 4242);
  EbStatsSnapshot a, b;
  eb_stats_snapshot (s, &a);
  g_autofree char *t = eb_metrics_format_for (&a, "extbody");
  g_assert_nonnull (strstr (t, "\nextbody_messages_total{writer=\"extbody\"} "));
  g_assert_nonnull (strstr (t, "\nextbody_left_total{writer=\"extbody\",reason=\"fetch-off\"} 0\n"));
  g_assert_nonnull (strstr (t, "\nextbody_fetch_duration_seconds_bucket{writer=\"extbody\",le=\"+Inf\"} "));
  guint bad = 99;
  g_assert_true (eb_metrics_parse (t, "extbody", &b, &bad));
  g_assert_cmpuint (bad, ==, 0);
  g_autofree char *t2 = eb_metrics_format_for (&b, "extbody");
  g_assert_cmpstr (t2, ==, t);
  /* another writer's, or the daemon's (no label): refused, with the line */
  g_assert_false (eb_metrics_parse (t, "other", &b, &bad));
  g_assert_cmpuint (bad, >, 0);
  g_autofree char *daemon = eb_metrics_format (&a);
  g_assert_false (eb_metrics_parse (daemon, "extbody", &b, &bad));
  g_assert_true (eb_metrics_parse (daemon, NULL, &b, &bad));
  g_assert_false (eb_metrics_parse ("extbody_messages_total{writer=\"extbody\"} -1\n", "extbody", &b, &bad));
  g_assert_false (eb_metrics_parse ("something_else{writer=\"extbody\"} 1\n", "extbody", &b, &bad));

  g_autofree char *dir = g_dir_make_tmp ("extbody-metrics-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "runs.prom", NULL);
  g_autoptr (GError) e = NULL;
  for (guint i = 0; i < 3; i++) {
    g_assert_true (eb_metrics_add_to_prometheus (s, path, "extbody", 5, &e));
    g_assert_no_error (e);
  }
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  g_assert_true (eb_metrics_parse (text, "extbody", &b, &bad));
  g_assert_cmpuint (b.bytes, ==, 3 * a.bytes);
  g_assert_cmpuint (b.fetched_bytes, ==, 3 * a.fetched_bytes);
  g_assert_cmpuint (b.latency_us, ==, 3 * a.latency_us);
  for (guint r = 0; r < EB_REASON_N; r++)
    g_assert_cmpuint (b.fetches[r], ==, 3 * a.fetches[r]);
  /* another process holds the lock: the wait ends at the limit, the file as it was */
  g_autofree char *lock = g_strconcat (path, ".lock", NULL);
  int fd = open (lock, O_RDWR);
  g_assert_cmpint (fd, >=, 0);
  pid_t child = fork ();
  if (child == 0) {
    int cfd = open (lock, O_RDWR);
    _exit (cfd >= 0 && flock (cfd, LOCK_EX) == 0 && sleep (3) == 0 ? 0 : 1);
  }
  g_usleep (300 * 1000);
  gint64 t0 = g_get_monotonic_time ();
  g_assert_false (eb_metrics_add_to_prometheus (s, path, "extbody", 1, &e));
  g_assert_cmpint (g_get_monotonic_time () - t0, >=, G_USEC_PER_SEC);
  g_assert_nonnull (strstr (e->message, "still locked by another run after lock_timeout (1 s)"));
  g_clear_error (&e);
  int status = 0;
  waitpid (child, &status, 0);
  close (fd);
  g_autofree char *same = NULL;
  g_assert_true (g_file_get_contents (path, &same, NULL, NULL));
  g_assert_cmpstr (same, ==, text);
  g_unlink (lock);
  g_unlink (path);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_mime_init ();
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/stats/add-result", test_add_result);
  g_test_add_func ("/stats/summary", test_summary);
  g_test_add_func ("/stats/threads", test_threads);
  g_test_add_func ("/stats/fetches", test_fetches);
  g_test_add_func ("/stats/externalize", test_externalize);
  g_test_add_func ("/metrics/escape", test_escape);
  g_test_add_func ("/metrics/format", test_format);
  g_test_add_func ("/metrics/write-atomic", test_write_atomic);
  g_test_add_func ("/metrics/parse-and-add", test_parse_and_add);
  int rc = g_test_run ();
  g_mime_shutdown ();
  return rc;
}
