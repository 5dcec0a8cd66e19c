/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-plan.c - one message, one plan (eb-plan, eb-message).
 *
 *   /plan/read-once/milter     the steps a milter takes for one message (plan
 *                              with the trace fields stripped, Message-ID for
 *                              the log, the log lines, the new body, the header
 *                              edits, the filter field) read the message
 *                              header once and the reference's header once
 *   /plan/read-once/write      the same for a whole message written (the
 *                              command, a mailbox: its Content-Length
 *                              removed as well)
 *   /plan/read-once/root/milter, /plan/read-once/root/write
 *                              the same for a message whose body is the
 *                              reference: its header is the reference's
 *                              header too, read once for both
 *   /plan/content-length       a mailbox's pass: Content-Length goes with a
 *                              change, as a plan range, and only then
 *   /plan/content-length/broken-header
 *                              past a line that is no field (where RFC 5322
 *                              ends the header) a mail reader still takes
 *                              Content-Length as the header's: it goes too
 *   /plan/content-length/as-a-reader
 *                              the lines a line-based mailbox reader takes
 *                              for the header's Content-Length
 *                              (eb_header_find_lines from the first line),
 *                              found from the header's one reading
 *   /plan/trace-only           the trace fields removed from a message with
 *                              nothing to resolve: the plan changes it alone
 *   /plan/borrowed             the plan keeps no copy of the message: its
 *                              From_ line and bytes are the caller's
 */
#include <gio/gio.h>
#include "eb-gmime.h"
#include <string.h>
#include "eb-plan-private.h"
#include "eb-rewrite.h"
#include "eb-header.h"
#include "eb-log.h"

/* The message header's fields before its Content-Type (a forged X-Extbody,
 * a Content-Length), and a reference to data: text. */
#define HEAD_FIELDS \
  "From: a@example.org\r\n" \
  "X-Extbody: resolved 1 of 1 external-body reference\r\n" \
  "Message-ID: <one@example.org>\r\n" \
  "Content-Length: 999\r\n" \
  "Subject: one plan\r\n" \
  "MIME-Version: 1.0\r\n"
#define REF_PART \
  "Content-Type: message/external-body; access-type=URL;\r\n" \
  " URL=\"data:text/plain,hello\"\r\n" \
  "\r\n" \
  "Content-Type: text/plain\r\n" \
  "\r\n"

static const char msg_tmpl[] =
  HEAD_FIELDS
  "Content-Type: multipart/mixed; boundary=\"b1\"\r\n"
  "\r\n"
  "--b1\r\n"
  "Content-Type: text/plain\r\n"
  "\r\n"
  "words\r\n"
  "--b1\r\n"
  REF_PART
  "--b1--\r\n";

/* A message whose body is the reference. */
static const char root_tmpl[] = HEAD_FIELDS REF_PART;

static gsize
offset_of (const char *msg, const char *needle)
{
  const char *p = strstr (msg, needle);
  g_assert_nonnull (p);
  return (gsize) (p - msg);
}

static GBytes *
written (const EbPlan *plan, gboolean body_only)
{
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr (GError) error = NULL;
  gboolean ok = body_only ? eb_plan_write_body (plan, out, &error) : eb_plan_write (plan, out, &error);
  g_assert_no_error (error);
  g_assert_true (ok);
  g_output_stream_close (out, NULL, NULL);
  return g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
}

/* How many times the steps read the header at @at of @msg (the header
 * scans, eb_header_block_watch). A milter's steps find @n_edits header edits,
 * the last the forged X-Extbody deleted. */
static guint
reads_of (const char *msg, gsize at, gboolean milter, guint n_edits)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  eb_header_block_watch (msg + at);
  g_autoptr (EbPlan) plan = eb_rewrite_plan (msg, strlen (msg), config, NULL,
                                             milter ? EB_REWRITE_STRIP_TRACE
                                                    : EB_REWRITE_DROP_CONTENT_LENGTH);
  g_assert_cmpuint (eb_plan_get_n_resolved (plan), ==, 1);
  g_autofree char *mid = eb_plan_get_message_id (plan);
  g_assert_cmpstr (mid, ==, "<one@example.org>");
  eb_log_message ("Q1", mid, plan);
  g_autoptr (GBytes) out = written (plan, milter);
  g_assert_cmpuint (g_bytes_get_size (out), >, 0);
  if (milter) {
    g_autoptr (GPtrArray) edits = eb_plan_header_edits (plan);
    g_assert_cmpuint (edits->len, ==, n_edits);
    const EbHeaderEdit *last = edits->pdata[edits->len - 1];
    g_assert_cmpint (eb_header_edit_get_kind (last), ==, EB_HEADER_DELETE);
    g_assert_cmpstr (eb_header_edit_get_name (last), ==, EB_FILTER_FIELD);
    g_autofree char *field = eb_plan_filter_field_value (plan);
    g_assert_cmpstr (field, ==, " resolved 1 of 1 external-body reference");
  }
  guint n = eb_header_block_watched_scans ();
  eb_header_block_watch (NULL);
  return n;
}

static void
test_read_once (gconstpointer data)
{
  gboolean milter = GPOINTER_TO_INT (data);
  g_assert_cmpuint (reads_of (msg_tmpl, 0, milter, 1), ==, 1);
  gsize ref = offset_of (msg_tmpl, "Content-Type: message/external-body");
  g_assert_cmpuint (reads_of (msg_tmpl, ref, milter, 1), ==, 1);
}

static void
test_read_once_root (gconstpointer data)
{
  gboolean milter = GPOINTER_TO_INT (data);
  /* the forged X-Extbody deleted, the new Content-Type, its
   * Content-Transfer-Encoding and X-Extbody-Resolved */
  g_assert_cmpuint (reads_of (root_tmpl, 0, milter, 4), ==, 1);
}

static void
test_content_length (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  gsize len = strlen (msg_tmpl);
  g_autoptr (EbPlan) plan = eb_rewrite_plan (msg_tmpl, len, config, NULL,
                                             EB_REWRITE_DROP_CONTENT_LENGTH);
  g_assert_cmpuint (eb_plan_get_n_removed (plan), ==, 1);
  g_autoptr (GBytes) out = written (plan, FALSE);
  g_autofree char *text = g_strndup (g_bytes_get_data (out, NULL), g_bytes_get_size (out));
  g_assert_null (strstr (text, "Content-Length"));
  /* what came before and after the field is as it was */
  g_assert_true (g_str_has_prefix (text, "From: a@example.org\r\nX-Extbody: resolved 1 of 1 "
                                          "external-body reference\r\nMessage-ID: <one@example.org>\r\n"
                                          "Subject: one plan\r\n"));
  g_assert_nonnull (strstr (text, "hello"));

  /* nothing resolved: the message, Content-Length included, byte for byte */
  g_autofree char *left = g_strdup (msg_tmpl);
  memcpy (strstr (left, "data:text/plain"), "nope:text/plain", 15);
  g_autoptr (EbPlan) p2 = eb_rewrite_plan (left, len, config, NULL, EB_REWRITE_DROP_CONTENT_LENGTH);
  g_assert_cmpuint (eb_plan_get_n_resolved (p2), ==, 0);
  g_assert_cmpuint (eb_plan_get_n_removed (p2), ==, 0);
  g_assert_false (eb_plan_get_changed (p2));
  g_autoptr (GBytes) same = written (p2, FALSE);
  g_assert_cmpmem (g_bytes_get_data (same, NULL), g_bytes_get_size (same), left, len);
}

static void
test_content_length_broken (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autofree char *m = g_strdup (msg_tmpl);
  /* a line with no colon before the Content-Length field */
  char *at = strstr (m, "Message-ID:");
  memcpy (at, "Message-ID ", 11);
  g_autoptr (EbPlan) plan = eb_rewrite_plan (m, strlen (m), config, NULL, EB_REWRITE_DROP_CONTENT_LENGTH);
  g_assert_cmpuint (eb_plan_get_n_resolved (plan), ==, 1);
  g_autoptr (GBytes) out = written (plan, FALSE);
  g_autofree char *text = g_strndup (g_bytes_get_data (out, NULL), g_bytes_get_size (out));
  g_assert_null (strstr (text, "Content-Length"));
  g_assert_nonnull (strstr (text, "Message-ID  <one@example.org>\r\nSubject: one plan\r\n"));
}

static void
test_content_length_reader (void)
{
  static const char *const msgs[] = {
    "Content-Length: 1\nSubject: s\n\nbody",
    "content-length: 1\r\n\t2\r\nSubject: s\r\n\r\nContent-Length: 9\r\n",
    "Content-Length : 1\nContent-Length: 2\n\n",
    "Subject: s\nbroken line\nContent-Length: 3\n cont\n\nContent-Length: 4\n",
    " leading continuation\nContent-Length: 1\n\n",
    "Content-Length: 1",
    "Content-Length: 1\n\rX",
    "X: 1\r\n\rContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
    "Content-Lengthx: 1\nContent-Length:\nContent-Length\n",
    "From someone Thu Nov 26 10:00:00 2026\nContent-Length: 5\n\nbody\n",
    "",
  };
  for (guint i = 0; i < G_N_ELEMENTS (msgs); i++) {
    g_autoptr (EbPlan) plan = eb_plan_new (msgs[i], strlen (msgs[i]));
    guint added = eb_plan_remove_lines (plan, "Content-Length");
    g_autoptr (GArray) lines = g_array_new (FALSE, FALSE, sizeof (EbHeaderField));
    eb_header_find_lines (plan->message->buf, 0, plan->message->len, "Content-Length", lines);
    g_assert_cmpuint (added, ==, lines->len);
    g_assert_cmpuint (plan->removed->len, ==, lines->len);
    for (guint k = 0; k < lines->len; k++) {
      g_assert_cmpuint (g_array_index (plan->removed, EbRange, k).start, ==,
                        g_array_index (lines, EbHeaderField, k).start);
      g_assert_cmpuint (g_array_index (plan->removed, EbRange, k).end, ==,
                        g_array_index (lines, EbHeaderField, k).end);
    }
  }
}

static void
test_trace_only (void)
{
  static const char m[] = "From: a@example.org\n"
                          "X-Extbody-Resolved: forged\n"
                          "Content-Length: 6\n"
                          "Subject: s\n"
                          "\n"
                          "plain\n";
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbPlan) plan = eb_rewrite_plan (m, strlen (m), config, NULL,
                                             EB_REWRITE_STRIP_TRACE | EB_REWRITE_DROP_CONTENT_LENGTH);
  g_assert_false (eb_plan_get_parsed (plan));
  g_assert_true (eb_plan_get_changed (plan));
  /* the trace field and, the message changing, its length */
  g_assert_cmpuint (eb_plan_get_n_removed (plan), ==, 2);
  g_autoptr (GBytes) out = written (plan, FALSE);
  static const char want[] = "From: a@example.org\nSubject: s\n\nplain\n";
  g_assert_cmpmem (g_bytes_get_data (out, NULL), g_bytes_get_size (out), want, strlen (want));
  g_autoptr (GPtrArray) edits = eb_plan_header_edits (plan);
  g_assert_cmpuint (edits->len, ==, 2);
}

static void
test_borrowed (void)
{
  g_autofree char *m = g_strconcat ("From sender@example.org Thu Nov 26 10:00:00 2026\n",
                                    "Subject: s\n\nbody\n", NULL);
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbPlan) plan = eb_rewrite_plan (m, strlen (m), config, NULL, EB_REWRITE_DEFAULT);
  g_assert_true (plan->message->input == m);
  g_assert_true (plan->message->buf == m + eb_plan_get_from_line_len (plan));
  g_assert_cmpuint (eb_plan_get_from_line_len (plan), ==, strlen ("From sender@example.org Thu Nov 26 10:00:00 2026\n"));
  g_autoptr (GBytes) out = written (plan, FALSE);
  g_assert_cmpmem (g_bytes_get_data (out, NULL), g_bytes_get_size (out), m, strlen (m));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_mime_init ();
  g_test_add_data_func ("/plan/read-once/milter", GINT_TO_POINTER (TRUE), test_read_once);
  g_test_add_data_func ("/plan/read-once/write", GINT_TO_POINTER (FALSE), test_read_once);
  g_test_add_data_func ("/plan/read-once/root/milter", GINT_TO_POINTER (TRUE), test_read_once_root);
  g_test_add_data_func ("/plan/read-once/root/write", GINT_TO_POINTER (FALSE), test_read_once_root);
  g_test_add_func ("/plan/content-length", test_content_length);
  g_test_add_func ("/plan/content-length/broken-header", test_content_length_broken);
  g_test_add_func ("/plan/content-length/as-a-reader", test_content_length_reader);
  g_test_add_func ("/plan/trace-only", test_trace_only);
  g_test_add_func ("/plan/borrowed", test_borrowed);
  int rc = g_test_run ();
  g_mime_shutdown ();
  return rc;
}
