/* test-stats.c - the counters a front end and an administrator share: what one
 * planned message adds, the summary line (left by reason, most first, ties by
 * token, with the configuration key that decides), and counting from several
 * threads at once. */
#include <string.h>
#include "eb-gmime.h"
#include "eb-stats.h"

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

static EbRewriteResult *
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

  g_autoptr (EbRewriteResult) r = plan (three_refs, strlen (three_refs), config);
  eb_stats_add_result (s, r);
  g_assert_cmpuint (eb_stats_get_messages (s), ==, 1);
  g_assert_cmpuint (eb_stats_get_references (s), ==, 3);
  g_assert_cmpuint (eb_stats_get_resolved (s), ==, 1);
  g_assert_cmpuint (eb_stats_get_left (s, EB_REASON_FETCH_OFF), ==, 1);
  g_assert_cmpuint (eb_stats_get_left (s, EB_REASON_URL_MISSING), ==, 1);
  g_assert_cmpuint (eb_stats_get_left (s, EB_REASON_RESOLVED), ==, 0);
  g_assert_cmpuint (eb_stats_get_left (s, EB_REASON_N), ==, 0);   /* out of range: none */

  /* no references, and a message that could not be read: messages only */
  g_autoptr (EbRewriteResult) plain = plan (no_refs, strlen (no_refs), config);
  eb_stats_add_result (s, plain);
  eb_stats_add_result (s, NULL);
  g_assert_cmpuint (eb_stats_get_messages (s), ==, 3);
  g_assert_cmpuint (eb_stats_get_references (s), ==, 3);

  /* above max_message_size: not parsed, its reason counted once */
  g_assert_true (eb_config_apply_option (config, "max_message_size=1024", NULL));
  g_autoptr (GString) big = g_string_new (three_refs);
  while (big->len <= 2048)
    g_string_append (big, "padding padding padding padding padding padding\n");
  g_autoptr (EbRewriteResult) large = plan (big->str, big->len, config);
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
  g_autoptr (EbRewriteResult) r = plan (three_refs, strlen (three_refs), config);
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
  g_autoptr (EbRewriteResult) large = plan (big->str, big->len, config);
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
  const EbRewriteResult *result;
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
  g_autoptr (EbRewriteResult) r = plan (three_refs, strlen (three_refs), config);
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

int
main (int argc, char **argv)
{
  g_mime_init ();
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/stats/add-result", test_add_result);
  g_test_add_func ("/stats/summary", test_summary);
  g_test_add_func ("/stats/threads", test_threads);
  int rc = g_test_run ();
  g_mime_shutdown ();
  return rc;
}
