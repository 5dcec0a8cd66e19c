/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-inspect.c - what inspect prints: printable text, JSON lines (parsed back
 * with json-glib), report lines and the 80-column table. */
#include <string.h>
#include <json-glib/json-glib.h>
#include "eb-gmime.h"
#include "eb-inspect.h"
#include "eb-plan-private.h"

static void
test_printable (void)
{
  static const struct {
    const char *in;
    gsize max;
    const char *out;
  } cases[] = {
    { NULL, 0, "-" },
    { "", 0, "" },
    { "plain text", 0, "plain text" },
    { "a\tb\nc\r", 0, "a\\x09b\\x0ac\\x0d" },
    { "back\\slash", 0, "back\\x5cslash" },
    { "del\x7f" "esc\x1b", 0, "del\\x7fesc\\x1b" },
    { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xa7", 0, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xa7" },
    { "bad \xff byte", 0, "bad \\xff byte" },
    { "cut \xc3", 0, "cut \\xc3" },
    { "overlong \xc0\xaf", 0, "overlong \\xc0\\xaf" },
    { "surrogate \xed\xa0\x80", 0, "surrogate \\xed\\xa0\\x80" },
    { "\xe2\x82", 0, "\\xe2\\x82" },
    /* the cut: at @max bytes of output, then "...[N bytes]" with the input's length */
    { "abcdefghij", 4, "abcd...[10 bytes]" },
    { "abcdefghij", 10, "abcdefghij" },
    { "abcdefghij", 9, "abcdefghi...[10 bytes]" },
    { "abcdefghij", 0, "abcdefghij" },
    { "\n\n\n", 4, "\\x0a...[3 bytes]" },
    { "\xc3\xa9\xc3\xa9", 1, "...[4 bytes]" },
    { "\xc3\xa9\xc3\xa9", 2, "\xc3\xa9...[4 bytes]" },
    { "a\nb", 3, "a...[3 bytes]" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *got = eb_inspect_printable (cases[i].in, cases[i].max);
    g_test_message ("case %u", i);
    g_assert_cmpstr (got, ==, cases[i].out);
    g_assert_true (g_utf8_validate (got, -1, NULL));
  }
}

/* ---- results to describe ------------------------------------------------- */

typedef struct {
  char            *msg;
  EbPlan *result;
} Plan;

static void
plan_clear (Plan *p)
{
  g_clear_pointer (&p->result, eb_plan_free);
  g_clear_pointer (&p->msg, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Plan, plan_clear)

#define REFS_MESSAGE(url3) \
  "From: a@example.org\n" \
  "MIME-Version: 1.0\n" \
  "Content-Type: multipart/mixed; boundary=b\n" \
  "\n" \
  "--b\n" \
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,Hello\"\n" \
  "\n" \
  "Content-Type: text/plain\n" \
  "\n" \
  "\n--b\n" \
  "Content-Type: message/external-body; access-type=URL; URL=\"http://h.example/x\";\n" \
  "\texpiration=\"Thu, 01 Jan 2037 00:00:00 +0000\"; size=5\n" \
  "\n" \
  "Content-Type: text/plain\n" \
  "\n" \
  "\n--b\n" \
  "Content-Type: message/external-body; access-type=anon-ftp; site=\"ftp.example.org\";\n" \
  "\tdirectory=\"pub\"; name=\"f\\\\ile\"; mode=image\n" \
  "\n" \
  "Content-Type: application/octet-stream\n" \
  "\n" \
  "\n--b\n" \
  "Content-Type: message/external-body; access-type=URL; URL=\"" url3 "\"\n" \
  "\n" \
  "Content-Type: text/plain\n" \
  "\n" \
  "\n--b--\n"

static void
plan (Plan *p, const char *msg, gboolean fetch)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  if (fetch)
    g_assert_true (eb_config_set (config, "fetch", "on", NULL));
  p->msg = g_strdup (msg);
  p->result = eb_rewrite_plan (p->msg, strlen (p->msg), config, NULL, EB_REWRITE_DEFAULT);
  g_assert_nonnull (p->result->scan);
}

static const char *LONG_URL =
  "http://www.example.org/a/very/long/path/with/many/levels/that/will/never/fit/in/"
  "the/column/of/a/table/that/is/eighty/characters/wide/and/still/goes/on/file.txt";

/* The members of @json in order, checked against @names. */
static void
assert_members (const char *json, const char *const *names)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_assert_true (json_parser_load_from_data (parser, json, -1, &error));
  g_assert_no_error (error);
  JsonObject *o = json_node_get_object (json_parser_get_root (parser));
  g_assert_cmpuint (json_object_get_size (o), ==, g_strv_length ((char **) names));
  /* the order as written */
  const char *at = json;
  for (guint i = 0; names[i]; i++) {
    g_autofree char *key = g_strdup_printf ("\"%s\":", names[i]);
    const char *k = strstr (at, key);
    g_test_message ("member %s", names[i]);
    g_assert_nonnull (k);
    at = k + strlen (key);
    g_assert_true (json_object_has_member (o, names[i]));
  }
}

static JsonObject *
parse_object (JsonParser *parser, const char *json)
{
  g_assert_null (strchr (json, '\n'));
  g_assert_true (json_parser_load_from_data (parser, json, -1, NULL));
  return json_node_get_object (json_parser_get_root (parser));
}

static void
test_json (void)
{
  g_auto (Plan) p = { 0 };
  g_autofree char *msg = g_strdup_printf (REFS_MESSAGE ("%s"), LONG_URL);
  plan (&p, msg, FALSE);
  g_assert_cmpuint (p.result->scan->refs->len, ==, 4);

  /* resolved */
  g_autofree char *j0 = eb_inspect_json ("msg.eml", -1, NULL, p.result, 0);
  static const char *const resolved[] = {
    "source", "part", "access_type", "url", "url_length", "name", "site", "directory", "mode",
    "server", "subject", "expiration", "size", "permission", "inner_type", "action", "reason",
    "reason_text", "detail", "new_type", "data_size", "sha256", "encoding", NULL };
  assert_members (j0, resolved);
  g_autoptr (JsonParser) p0 = json_parser_new ();
  JsonObject *o0 = parse_object (p0, j0);
  g_assert_cmpstr (json_object_get_string_member (o0, "source"), ==, "msg.eml");
  g_assert_cmpstr (json_object_get_string_member (o0, "part"), ==, "1");
  g_assert_cmpstr (json_object_get_string_member (o0, "access_type"), ==, "url");
  g_assert_cmpstr (json_object_get_string_member (o0, "url"), ==, "data:,Hello");
  g_assert_cmpint (json_object_get_int_member (o0, "url_length"), ==, 11);
  g_assert_true (json_object_get_null_member (o0, "name"));
  g_assert_true (json_object_get_null_member (o0, "expiration"));
  g_assert_cmpstr (json_object_get_string_member (o0, "inner_type"), ==, "text/plain");
  g_assert_cmpstr (json_object_get_string_member (o0, "action"), ==, "resolve");
  g_assert_cmpstr (json_object_get_string_member (o0, "reason"), ==, "resolved");
  g_assert_cmpstr (json_object_get_string_member (o0, "reason_text"), ==, "resolved");
  g_assert_true (json_object_get_null_member (o0, "detail"));
  g_assert_cmpstr (json_object_get_string_member (o0, "new_type"), ==, "text/plain");
  g_assert_cmpint (json_object_get_int_member (o0, "data_size"), ==, 5);
  g_autofree char *sha = g_compute_checksum_for_string (G_CHECKSUM_SHA256, "Hello", 5);
  g_assert_cmpstr (json_object_get_string_member (o0, "sha256"), ==, sha);
  g_assert_cmpstr (json_object_get_string_member (o0, "encoding"), ==, "7bit");

  /* left, in a mailbox */
  g_autofree char *j1 = eb_inspect_json ("box", 4242, "<m@x>", p.result, 1);
  static const char *const left[] = {
    "source", "mbox_offset", "message_id", "part", "access_type", "url", "url_length", "name",
    "site", "directory", "mode", "server", "subject", "expiration", "size", "permission",
    "inner_type", "action", "reason", "reason_text", "detail", NULL };
  assert_members (j1, left);
  g_autoptr (JsonParser) p1 = json_parser_new ();
  JsonObject *o1 = parse_object (p1, j1);
  g_assert_cmpint (json_object_get_int_member (o1, "mbox_offset"), ==, 4242);
  g_assert_cmpstr (json_object_get_string_member (o1, "message_id"), ==, "<m@x>");
  g_assert_cmpstr (json_object_get_string_member (o1, "part"), ==, "2");
  g_assert_cmpstr (json_object_get_string_member (o1, "url"), ==, "http://h.example/x");
  g_assert_cmpint (json_object_get_int_member (o1, "url_length"), ==, 18);
  g_assert_cmpstr (json_object_get_string_member (o1, "expiration"), ==, "Thu, 01 Jan 2037 00:00:00 +0000");
  g_assert_cmpstr (json_object_get_string_member (o1, "size"), ==, "5");
  g_assert_cmpstr (json_object_get_string_member (o1, "action"), ==, "leave");
  g_assert_cmpstr (json_object_get_string_member (o1, "reason"), ==, "fetch-off");
  g_assert_cmpstr (json_object_get_string_member (o1, "reason_text"), ==, "fetching is off (fetch = off)");
  g_assert_cmpstr (json_object_get_string_member (o1, "detail"), ==, "scheme \"http\"");

  /* no source, anon-ftp parameters, no URL */
  g_autofree char *j2 = eb_inspect_json (NULL, -1, NULL, p.result, 2);
  static const char *const ftp[] = {
    "part", "access_type", "url", "name", "site", "directory", "mode", "server", "subject",
    "expiration", "size", "permission", "inner_type", "action", "reason", "reason_text",
    "detail", NULL };
  assert_members (j2, ftp);
  g_autoptr (JsonParser) p2 = json_parser_new ();
  JsonObject *o2 = parse_object (p2, j2);
  g_assert_true (json_object_get_null_member (o2, "url"));
  g_assert_cmpstr (json_object_get_string_member (o2, "name"), ==, "f\\ile");
  g_assert_cmpstr (json_object_get_string_member (o2, "site"), ==, "ftp.example.org");
  g_assert_cmpstr (json_object_get_string_member (o2, "directory"), ==, "pub");
  g_assert_cmpstr (json_object_get_string_member (o2, "mode"), ==, "image");
  g_assert_cmpstr (json_object_get_string_member (o2, "inner_type"), ==, "application/octet-stream");

  /* would-fetch: action "fetch" */
  g_auto (Plan) pf = { 0 };
  plan (&pf, msg, TRUE);
  g_autofree char *j3 = eb_inspect_json ("m", -1, NULL, pf.result, 1);
  g_autoptr (JsonParser) p3 = json_parser_new ();
  JsonObject *o3 = parse_object (p3, j3);
  g_assert_cmpstr (json_object_get_string_member (o3, "action"), ==, "fetch");
  g_assert_cmpstr (json_object_get_string_member (o3, "reason"), ==, "would-fetch");
  g_assert_cmpstr (json_object_get_string_member (o3, "detail"), ==, "http://h.example/x");
}

/* A data: URL over 1024 bytes is cut in JSON, its length kept. */
static void
test_json_long_data (void)
{
  GString *url = g_string_new ("data:,");
  while (url->len < 3000)
    g_string_append (url, "abcdefghij");
  g_autofree char *msg = g_strdup_printf (REFS_MESSAGE ("%s"), url->str);
  g_auto (Plan) p = { 0 };
  plan (&p, msg, FALSE);
  g_autofree char *j = eb_inspect_json (NULL, -1, NULL, p.result, 3);
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *o = parse_object (parser, j);
  g_assert_cmpuint (strlen (json_object_get_string_member (o, "url")), ==, 1024);
  g_assert_true (g_str_has_prefix (url->str, json_object_get_string_member (o, "url")));
  g_assert_true (json_object_get_boolean_member (o, "url_truncated"));
  g_assert_cmpint (json_object_get_int_member (o, "url_length"), ==, (gint64) url->len);
  g_assert_cmpstr (json_object_get_string_member (o, "reason"), ==, "resolved");
  /* the same length of an http URL is not cut */
  g_string_overwrite (url, 0, "http://h/");
  g_autofree char *msg2 = g_strdup_printf (REFS_MESSAGE ("%s"), url->str);
  g_auto (Plan) p2 = { 0 };
  plan (&p2, msg2, FALSE);
  g_autofree char *j2 = eb_inspect_json (NULL, -1, NULL, p2.result, 3);
  g_autoptr (JsonParser) parser2 = json_parser_new ();
  JsonObject *o2 = parse_object (parser2, j2);
  g_assert_cmpstr (json_object_get_string_member (o2, "url"), ==, url->str);
  g_assert_false (json_object_has_member (o2, "url_truncated"));
  g_string_free (url, TRUE);
}

static void
test_report_line (void)
{
  g_auto (Plan) p = { 0 };
  g_autofree char *msg = g_strdup_printf (REFS_MESSAGE ("%s"), LONG_URL);
  plan (&p, msg, FALSE);
  static const char *const want[] = {
    "part 1: access-type=url data:,Hello: resolved (text/plain, 5 bytes, 7bit)",
    "part 2: access-type=url http://h.example/x: left: fetch-off: fetching is off (fetch = off) "
      "(scheme \"http\")",
    "part 3: access-type=anon-ftp site=ftp.example.org directory=pub name=f\\x5cile mode=image: "
      "left: fetch-off: fetching is off (fetch = off) (access-type=anon-ftp)",
  };
  for (guint i = 0; i < G_N_ELEMENTS (want); i++) {
    g_autofree char *line = eb_inspect_report_line (p.result, i);
    g_assert_cmpstr (line, ==, want[i]);
  }
  /* a long URL is cut at 72 bytes */
  g_autofree char *line = eb_inspect_report_line (p.result, 3);
  g_autofree char *want3 = g_strdup_printf ("part 4: access-type=url %.72s...[%" G_GSIZE_FORMAT
                                            " bytes]: left: fetch-off: fetching is off (fetch = off) "
                                            "(scheme \"http\")", LONG_URL, strlen (LONG_URL));
  g_assert_cmpstr (line, ==, want3);
}

static void
assert_width (const char *table)
{
  g_auto (GStrv) lines = g_strsplit (table, "\n", -1);
  guint n = g_strv_length (lines);
  g_assert_cmpuint (n, >=, 2);
  g_assert_cmpstr (lines[n - 1], ==, "");   /* ends with a line break */
  for (guint i = 0; i + 1 < n; i++) {
    g_test_message ("%s", lines[i]);
    g_assert_true (g_utf8_validate (lines[i], -1, NULL));
    g_assert_cmpuint (g_utf8_strlen (lines[i], -1), <=, 80);
    g_assert_false (g_str_has_suffix (lines[i], " "));
  }
}

static void
test_table (void)
{
  g_auto (Plan) p = { 0 };
  g_autofree char *msg = g_strdup_printf (REFS_MESSAGE ("%s"), "http://h.example/short");
  plan (&p, msg, FALSE);
  g_autoptr (EbTable) t = eb_table_new (FALSE);
  for (guint i = 0; i < 4; i++)
    eb_table_add (t, "msg.eml", p.result, i);
  g_autofree char *out = eb_table_finish (t);
  assert_width (out);
  g_assert_cmpstr (out, ==,
    /* 4 + 2 + 8 + 2 + 44 + 2 + 7 + 2 + 9 = 80: the parameters of 3 (58
     * characters) shortened to 44, 27 before "..." and 14 after */
    "PART  ACCESS    URL / PARAMETERS                              ACTION   REASON\n"
    "1     url       data:,Hello                                   resolve  resolved\n"
    "2     url       http://h.example/x                            leave    fetch-off\n"
    "3     anon-ftp  site=ftp.example.org direct...ile mode=image  leave    fetch-off\n"
    "4     url       http://h.example/short                        leave    fetch-off\n");
}

/* Long URLs are shortened in the middle; no line is wider than 80 characters. */
static void
test_table_long (void)
{
  g_auto (Plan) p = { 0 };
  g_autofree char *msg = g_strdup_printf (REFS_MESSAGE ("%s"), LONG_URL);
  plan (&p, msg, TRUE);
  g_autoptr (EbTable) t = eb_table_new (FALSE);
  eb_table_add (t, NULL, p.result, 3);
  g_autofree char *out = eb_table_finish (t);
  assert_width (out);
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  g_assert_true (g_str_has_prefix (lines[0], "PART  ACCESS  URL / PARAMETERS"));
  g_assert_true (g_str_has_suffix (lines[0], "ACTION  REASON"));
  g_assert_true (g_str_has_prefix (lines[1], "4     url     http://www.example.org/"));
  g_assert_true (g_str_has_suffix (lines[1], "/on/file.txt  fetch   would-fetch"));
  g_assert_cmpuint (strlen (lines[1]), ==, 80);
  /* the middle, cut: the start and the end of the URL around "..." */
  const char *cell = lines[1] + strlen ("4     url     ");
  const char *dots = strstr (cell, "...");
  g_assert_nonnull (dots);
  g_assert_cmpmem (cell, (gsize) (dots - cell), LONG_URL, (gsize) (dots - cell));
  const char *tail_end = strstr (dots, "  fetch");
  gsize tl = (gsize) (tail_end - dots - 3);
  g_assert_cmpuint (tl, >, 0);
  g_assert_cmpmem ((dots + 3), tl, (LONG_URL + strlen (LONG_URL) - tl), tl);
  /* two thirds before the cut, one third after */
  g_assert_cmpuint ((gsize) (dots - cell), >=, tl * 2 - 1);
}

/* Several sources: each message's rows after a "== SOURCE" line. */
static void
test_table_sources (void)
{
  g_auto (Plan) p = { 0 };
  g_autofree char *msg = g_strdup_printf (REFS_MESSAGE ("%s"), LONG_URL);
  plan (&p, msg, FALSE);
  GString *long_src = g_string_new ("mailbox \xc3\xbc" "ber #7 <");
  while (g_utf8_strlen (long_src->str, -1) < 150)
    g_string_append (long_src, "\xc3\xa9\xe2\x82\xac-id");
  g_string_append (long_src, "@example.org>");
  g_autoptr (EbTable) t = eb_table_new (TRUE);
  eb_table_add (t, "a.eml", p.result, 0);
  eb_table_add (t, "a.eml", p.result, 1);
  eb_table_add (t, "b.eml", p.result, 2);
  eb_table_add (t, long_src->str, p.result, 3);
  eb_table_add (t, "a.eml", p.result, 0);
  g_autofree char *out = eb_table_finish (t);
  assert_width (out);
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  g_assert_cmpuint (g_strv_length (lines), ==, 11);
  g_assert_true (g_str_has_prefix (lines[0], "PART  "));
  g_assert_cmpstr (lines[1], ==, "== a.eml");
  g_assert_true (g_str_has_prefix (lines[2], "1 "));
  g_assert_true (g_str_has_prefix (lines[3], "2 "));
  g_assert_cmpstr (lines[4], ==, "== b.eml");
  g_assert_true (g_str_has_prefix (lines[5], "3 "));
  /* the long source: 77 characters (not bytes) after "== ", shortened in the middle */
  g_assert_true (g_str_has_prefix (lines[6], "== mailbox \xc3\xbc" "ber #7 <"));
  /* shortened in the middle: the end of the Message-ID is kept */
  g_assert_true (g_str_has_suffix (lines[6], "-id@example.org>"));
  g_assert_nonnull (strstr (lines[6], "..."));
  g_assert_cmpuint (g_utf8_strlen (lines[6], -1), ==, 80);
  g_assert_true (g_str_has_prefix (lines[7], "4 "));
  /* a source that comes back gets its line again */
  g_assert_cmpstr (lines[8], ==, "== a.eml");
  g_assert_true (g_str_has_prefix (lines[9], "1 "));
  g_string_free (long_src, TRUE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_mime_init ();
  g_test_add_func ("/inspect/printable", test_printable);
  g_test_add_func ("/inspect/json", test_json);
  g_test_add_func ("/inspect/json/long-data", test_json_long_data);
  g_test_add_func ("/inspect/report-line", test_report_line);
  g_test_add_func ("/inspect/table", test_table);
  g_test_add_func ("/inspect/table/long", test_table_long);
  g_test_add_func ("/inspect/table/sources", test_table_sources);
  return g_test_run ();
}
