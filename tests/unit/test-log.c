/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-log.c - the log: key=value pairs and their escaping, what of a URL is
 * logged (scheme and host, never more), the per-message record and its
 * journal fields (through a writer of the test's own), the start line, and
 * the writer eb_log_init installs (standard error, in a subprocess). */
#include <string.h>
#include <syslog.h>
#include <unistd.h>
#include "eb-gmime.h"
#include "eb-log.h"
#include <glib/gstdio.h>
#include "eb-config.h"
#include "eb-externalize.h"
#include "eb-plan-private.h"

/* ---- a writer that keeps every record's fields ---------------------------- */

static GPtrArray *records;   /* (element-type GHashTable): field name -> value */

static GLogWriterOutput
capture_writer (GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
  GHashTable *h = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  for (gsize i = 0; i < n; i++) {
    gsize len = fields[i].length < 0 ? strlen (fields[i].value) : (gsize) fields[i].length;
    g_hash_table_insert (h, g_strdup (fields[i].key), g_strndup (fields[i].value, len));
  }
  g_ptr_array_add (records, h);
  return G_LOG_WRITER_HANDLED;
}

static const char *
field (guint record, const char *name)
{
  g_assert_cmpuint (record, <, records->len);
  return g_hash_table_lookup (g_ptr_array_index (records, record), name);
}

/* ---- pairs ---------------------------------------------------------------- */

static void
test_pair (void)
{
  static const struct {
    const char *value, *out;
  } cases[] = {
    { "ABC123", "k=ABC123" },
    { "<x@example.org>", "k=<x@example.org>" },
    { "files.example.org", "k=files.example.org" },
    { "", "k=\"\"" },
    { "two words", "k=\"two words\"" },
    { "a=b", "k=\"a=b\"" },
    { "say \"hi\"", "k=\"say \\\"hi\\\"\"" },
    { "back\\slash", "k=\"back\\\\slash\"" },
    { "line\nbreak\r\ttab", "k=\"line\\nbreak\\r\\ttab\"" },
    { "esc\x1b" "del\x7f" "nul?\x01", "k=\"esc\\x1bdel\\x7fnul?\\x01\"" },
    /* UTF-8 is kept (quoted); bytes that are not UTF-8 are escaped */
    { "caf\xc3\xa9", "k=\"caf\xc3\xa9\"" },
    { "bad\xff", "k=\"bad\\xff\"" },
    { "cut\xc3", "k=\"cut\\xc3\"" },
    { "\xed\xa0\x80", "k=\"\\xed\\xa0\\x80\"" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (GString) line = g_string_new (NULL);
    eb_log_append_pair (line, "k", cases[i].value);
    g_test_message ("case %u", i);
    g_assert_cmpstr (line->str, ==, cases[i].out);
  }
  /* pairs are separated by one space */
  g_autoptr (GString) line = g_string_new (NULL);
  eb_log_append_pair (line, "a", "1");
  eb_log_append_pair (line, "b", "x y");
  g_assert_cmpstr (line->str, ==, "a=1 b=\"x y\"");
  /* a long value is cut at 256 bytes */
  g_autofree char *longv = g_strnfill (1000, 'x');
  g_autoptr (GString) l2 = g_string_new (NULL);
  eb_log_append_pair (l2, "k", longv);
  g_autofree char *want = g_strdup_printf ("k=\"%.*s...\"", 256, longv);
  g_assert_cmpstr (l2->str, ==, want);
  /* a line is one line whatever the value */
  g_autoptr (GString) l3 = g_string_new (NULL);
  eb_log_append_pair (l3, "k", "a\nInjected: line\r\n");
  g_assert_null (strchr (l3->str, '\n'));
  g_assert_null (strchr (l3->str, '\r'));
}

/* ---- URLs ------------------------------------------------------------------ */

static void
test_url_origin (void)
{
  static const struct {
    const char *url, *scheme, *host;
  } cases[] = {
    { "https://files.example.org/reports/2026.pdf?token=s3cr3t", "https", "files.example.org" },
    { "HTTP://Files.EXAMPLE.org/A", "http", "files.example.org" },
    /* user information, a port, a query or a fragment: only the host */
    { "https://user:pa55@files.example.org/x", "https", "files.example.org" },
    { "https://user:p@ss@files.example.org:8443/x", "https", "files.example.org" },
    { "https://files.example.org:8443", "https", "files.example.org" },
    { "https://files.example.org?t=1", "https", "files.example.org" },
    { "https://files.example.org#t=1", "https", "files.example.org" },
    { "ftp://anonymous:me%40x@ftp.example.org/pub/f", "ftp", "ftp.example.org" },
    /* IPv6 and IPv4 literals */
    { "http://[2001:db8::1]:8080/x", "http", "[2001:db8::1]" },
    { "http://u@[2001:DB8::A]/", "http", "[2001:db8::a]" },
    { "http://[::ffff:192.0.2.1]", "http", "[::ffff:192.0.2.1]" },
    { "http://192.0.2.1:80/", "http", "192.0.2.1" },
    { "http://[2001:db8::1/x", "http", NULL },
    /* what WHATWG URL parsers take as the host of a special scheme */
    { "http:\\\\files.example.org\\x", "http", "files.example.org" },
    { "http:///files.example.org/x", "http", "files.example.org" },
    { "  https://files.example.org/  ", "https", "files.example.org" },
    /* data: and other URLs without an authority: the scheme only */
    { "data:text/plain;base64,SGVsbG8=", "data", NULL },
    { "DATA:,secret", "data", NULL },
    { "mailto:someone@example.org", "mailto", NULL },
    { "gopher://gopher.example.org:70/1", "gopher", "gopher.example.org" },
    { "x-custom://h.example/", "x-custom", "h.example" },
    /* no host */
    { "http://", "http", NULL },
    { "http://?q", "http", NULL },
    { "https://user@/x", "https", NULL },
    /* not a URL: nothing */
    { "files.example.org/x", NULL, NULL },
    { "/local/path", NULL, NULL },
    { "1http://x/", NULL, NULL },
    { "://x/", NULL, NULL },
    { "", NULL, NULL },
    { "   ", NULL, NULL },
    { NULL, NULL, NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *scheme = NULL, *host = NULL;
    eb_log_url_origin (cases[i].url, &scheme, &host);
    g_test_message ("case %u: %s", i, cases[i].url ? cases[i].url : "(null)");
    g_assert_cmpstr (scheme, ==, cases[i].scheme);
    g_assert_cmpstr (host, ==, cases[i].host);
  }
}

/* ---- the per-message record ------------------------------------------------ */

#define MSG \
  "Message-ID:\n <a b\"c@example.org>\n" \
  "MIME-Version: 1.0\n" \
  "X-Extbody: forged\n" \
  "Content-Type: multipart/mixed; boundary=b\n\n" \
  "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,hello%0A\"\n\n" \
  "Content-Type: text/plain\n\n" \
  "--b\nContent-Type: message/external-body; access-type=URL;\n" \
  " URL=\"https://user:s3cr3t@Files.Example.org:8443/f?token=s3cr3t\"\n\n" \
  "Content-Type: text/plain\n\n" \
  "--b\nContent-Type: multipart/mixed; boundary=c\n\n" \
  "--c\nContent-Type: message/external-body; access-type=anon-ftp; site=FTP.example.org;\n" \
  " directory=pub; name=secret-file.txt\n\n" \
  "Content-Type: text/plain\n\n" \
  "--c\nContent-Type: message/external-body; access-type=local-file; name=/home/u/private.txt;\n" \
  " site=Host.example.org\n\n" \
  "Content-Type: text/plain\n\n" \
  "--c--\n" \
  "--b--\n"

static void
test_record (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  const char *buf = MSG;
  gsize len = strlen (buf);
  g_autoptr (EbPlan) r = eb_rewrite_plan (buf, len, config, NULL,
                                                   EB_REWRITE_STRIP_TRACE | EB_REWRITE_FILTER_FIELD);
  g_assert_cmpuint (r->scan->refs->len, ==, 4);
  g_autofree char *mid = eb_plan_get_message_id (r);
  g_assert_cmpstr (mid, ==, "<a b\"c@example.org>");
  g_ptr_array_set_size (records, 0);
  eb_log_message ("4XyZ1ab", mid, r);
  g_assert_cmpuint (records->len, ==, 5);
  for (guint i = 0; i < records->len; i++)
    g_test_message ("%s", field (i, "MESSAGE"));

  /* the lines */
  g_assert_cmpstr (field (0, "MESSAGE"), ==,
                   "queue_id=4XyZ1ab msgid=\"<a b\\\"c@example.org>\" references=4 resolved=1 "
                   "changed=yes trace_removed=1");
  g_assert_cmpstr (field (1, "MESSAGE"), ==,
                   "queue_id=4XyZ1ab msgid=\"<a b\\\"c@example.org>\" ref=1 part=1 access_type=url "
                   "scheme=data outcome=resolved type=text/plain bytes=6");
  g_assert_cmpstr (field (2, "MESSAGE"), ==,
                   "queue_id=4XyZ1ab msgid=\"<a b\\\"c@example.org>\" ref=2 part=2 access_type=url "
                   "scheme=https host=files.example.org outcome=left reason=fetch-off");
  g_assert_cmpstr (field (3, "MESSAGE"), ==,
                   "queue_id=4XyZ1ab msgid=\"<a b\\\"c@example.org>\" ref=3 part=3.1 access_type=anon-ftp "
                   "host=ftp.example.org outcome=left reason=fetch-off");
  g_assert_cmpstr (field (4, "MESSAGE"), ==,
                   "queue_id=4XyZ1ab msgid=\"<a b\\\"c@example.org>\" ref=4 part=3.2 access_type=local-file "
                   "host=host.example.org outcome=left reason=param-missing");
  /* never the URL, its user information, its path or its query; never a
   * file's name */
  for (guint i = 0; i < records->len; i++) {
    g_assert_null (strstr (field (i, "MESSAGE"), "s3cr3t"));
    g_assert_null (strstr (field (i, "MESSAGE"), "8443"));
    g_assert_null (strstr (field (i, "MESSAGE"), "secret-file"));
    g_assert_null (strstr (field (i, "MESSAGE"), "private"));
    g_assert_null (strstr (field (i, "MESSAGE"), "hello"));
    g_assert_cmpstr (field (i, "PRIORITY"), ==, "6");
  }

  /* the journal's fields: the same pairs, values unquoted */
  g_assert_cmpstr (field (0, "EXTBODY_QUEUE_ID"), ==, "4XyZ1ab");
  g_assert_cmpstr (field (0, "EXTBODY_MSGID"), ==, "<a b\"c@example.org>");
  g_assert_cmpstr (field (0, "EXTBODY_REFERENCES"), ==, "4");
  g_assert_cmpstr (field (0, "EXTBODY_RESOLVED"), ==, "1");
  g_assert_cmpstr (field (0, "EXTBODY_CHANGED"), ==, "yes");
  g_assert_cmpstr (field (0, "EXTBODY_TRACE_REMOVED"), ==, "1");
  g_assert_null (field (0, "EXTBODY_PART"));
  g_assert_cmpstr (field (2, "EXTBODY_QUEUE_ID"), ==, "4XyZ1ab");
  g_assert_cmpstr (field (2, "EXTBODY_REF"), ==, "2");
  g_assert_cmpstr (field (2, "EXTBODY_PART"), ==, "2");
  g_assert_cmpstr (field (2, "EXTBODY_ACCESS_TYPE"), ==, "url");
  g_assert_cmpstr (field (2, "EXTBODY_SCHEME"), ==, "https");
  g_assert_cmpstr (field (2, "EXTBODY_HOST"), ==, "files.example.org");
  g_assert_cmpstr (field (2, "EXTBODY_OUTCOME"), ==, "left");
  g_assert_cmpstr (field (2, "EXTBODY_REASON"), ==, "fetch-off");
  g_assert_cmpstr (field (1, "EXTBODY_OUTCOME"), ==, "resolved");
  g_assert_null (field (1, "EXTBODY_REASON"));
  g_assert_null (field (1, "EXTBODY_HOST"));
  g_assert_cmpstr (field (1, "EXTBODY_TYPE"), ==, "text/plain");
  g_assert_cmpstr (field (1, "EXTBODY_BYTES"), ==, "6");
  g_assert_cmpstr (field (3, "EXTBODY_PART"), ==, "3.1");

  /* no queue id, no Message-ID: the pairs are left out */
  g_ptr_array_set_size (records, 0);
  eb_log_message (NULL, NULL, r);
  g_assert_cmpuint (records->len, ==, 5);
  g_assert_cmpstr (field (0, "MESSAGE"), ==, "references=4 resolved=1 changed=yes trace_removed=1");
  g_assert_null (field (0, "EXTBODY_QUEUE_ID"));
  g_assert_null (field (0, "EXTBODY_MSGID"));
}

/* A message left alone as a whole is logged with its reason; a message with
 * nothing to say is not logged at all. */
static void
test_record_message_only (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  config->max_message_size = 200;   /* below what a key allows: this message is larger */
  const char *buf = MSG;
  gsize len = strlen (buf);
  g_autoptr (EbPlan) big = eb_rewrite_plan (buf, len, config, NULL, EB_REWRITE_DEFAULT);
  g_ptr_array_set_size (records, 0);
  eb_log_message ("Q1", "<m@x>", big);
  g_assert_cmpuint (records->len, ==, 1);
  g_assert_cmpstr (field (0, "MESSAGE"), ==,
                   "queue_id=Q1 msgid=<m@x> references=0 resolved=0 changed=no reason=message-too-large");
  g_assert_cmpstr (field (0, "EXTBODY_REASON"), ==, "message-too-large");

  const char *plain = "From: a@example.org\nMessage-ID: <p@x>\n\nno references\n";
  g_autoptr (EbPlan) none = eb_rewrite_plan (plain, strlen (plain), config, NULL,
                                                      EB_REWRITE_STRIP_TRACE);
  g_ptr_array_set_size (records, 0);
  eb_log_message ("Q2", "<p@x>", none);
  g_assert_cmpuint (records->len, ==, 0);
}

static void
test_message_id (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  static const struct {
    const char *msg, *id;
  } cases[] = {
    { "Message-ID: <a@b>\n\nbody\n", "<a@b>" },
    { "Subject: x\r\nmessage-id:   <a@b>  \r\n\r\n", "<a@b>" },
    { "From x@y Mon Jan  1 00:00:00 2024\nMessage-Id: <from-line@b>\n\n", "<from-line@b>" },
    { "Message-ID:\n\t<folded@b>\n\n", "<folded@b>" },
    { "Subject: no id\n\nMessage-ID: <in-body@b>\n", NULL },
    { "Message-ID:\n\n", NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    gsize len = strlen (cases[i].msg);
    g_autoptr (EbPlan) r = eb_rewrite_plan (cases[i].msg, len, config, NULL, EB_REWRITE_DEFAULT);
    g_autofree char *id = eb_plan_get_message_id (r);
    g_test_message ("case %u", i);
    g_assert_cmpstr (id, ==, cases[i].id);
  }
}

static void
test_start (void)
{
  g_ptr_array_set_size (records, 0);
  eb_log_start ("socket", "unix:/run/extbody/milter.sock", "user", NULL, "fetch", "off", NULL);
  g_assert_cmpuint (records->len, ==, 1);
  const char *m = field (0, "MESSAGE");
  g_test_message ("%s", m);
  g_autofree char *head = g_strdup_printf ("event=start version=%s gmime=%u.%u.%u glib=%u.%u.%u libcurl=",
                                           EXTBODY_VERSION_FOR_TESTS, gmime_major_version,
                                           gmime_minor_version, gmime_micro_version, glib_major_version,
                                           glib_minor_version, glib_micro_version);
  g_assert_true (g_str_has_prefix (m, head));
  g_assert_true (g_str_has_suffix (m, " socket=unix:/run/extbody/milter.sock fetch=off"));
  g_assert_null (strstr (m, "user="));
  g_assert_cmpstr (field (0, "EXTBODY_EVENT"), ==, "start");
  g_assert_cmpstr (field (0, "EXTBODY_VERSION"), ==, EXTBODY_VERSION_FOR_TESTS);
  g_assert_cmpstr (field (0, "EXTBODY_SOCKET"), ==, "unix:/run/extbody/milter.sock");
  g_assert_nonnull (field (0, "EXTBODY_LIBCURL"));
  g_assert_cmpuint (strlen (field (0, "EXTBODY_LIBCURL")), >, 0);
  g_autofree char *v = eb_log_versions ();
  g_assert_true (g_str_has_prefix (m + strlen ("event=start "), v));

  /* a line of text at a syslog priority */
  g_ptr_array_set_size (records, 0);
  eb_log (LOG_ERR, "cannot %s", "spool");
  g_assert_cmpuint (records->len, ==, 1);
  g_assert_cmpstr (field (0, "MESSAGE"), ==, "cannot spool");
  g_assert_cmpstr (field (0, "PRIORITY"), ==, "3");
}

/* ---- the installed writer ---------------------------------------------------- */

static void
test_stderr_writer (void)
{
  if (g_test_subprocess ()) {
    g_log_set_always_fatal (G_LOG_FATAL_MASK);
    eb_log_init ("test-ident", EB_LOG_STDERR);
    eb_log (LOG_ERR, "one %d", 1);
    g_log ("GMime", G_LOG_LEVEL_WARNING, "a warning of GMime's");
    g_log (NULL, G_LOG_LEVEL_CRITICAL, "a critical of the library's");
    g_debug ("not shown without G_MESSAGES_DEBUG");
    eb_log (LOG_DEBUG, "nor this");
    eb_log (LOG_INFO, "two\nlines");
    /* switched: the new ident */
    eb_log_init ("other", EB_LOG_STDERR);
    eb_log (LOG_INFO, "three");
    return;
  }
  if (g_log_writer_is_journald (STDERR_FILENO)) {
    g_test_skip ("standard error is the journal");
    return;
  }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stderr_unmatched ("*not shown*");
  g_test_trap_assert_stderr_unmatched ("*nor this*");
  g_test_trap_assert_stderr ("test-ident: one 1\n"
                             "test-ident: GMime: a warning of GMime's\n"
                             "test-ident: a critical of the library's\n"
                             "test-ident: two\nlines\n"
                             "other: three\n");
}

/* An externalize plan's lines (event=externalize): the message line, then one
 * per candidate part - externalized (the store's scheme and host, never the
 * URL, and the SHA-256 of the stored bytes) or left with its reason and the
 * store's error. */
static void
test_record_externalize (void)
{
  g_autofree char *dir = g_dir_make_tmp ("eb-log-store-XXXXXX", NULL);
  g_autoptr (EbConfig) config = eb_config_new ();
  g_assert_true (eb_config_set (config, "externalize_store", dir, NULL));
  g_assert_true (eb_config_set (config, "externalize_base_url", "https://Files.example.org:8443/secret-path", NULL));
  g_assert_true (eb_config_set (config, "externalize_min_size", "100", NULL));
  g_autoptr (GError) e = NULL;
  g_autoptr (EbStore) store = eb_store_new (config, &e);
  g_assert_no_error (e);
  GString *att = g_string_new (NULL);
  for (guint i = 0; i < 10; i++)
    g_string_append (att, "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAx\n");
  g_autofree char *msg = g_strdup_printf (
    "Message-ID: <ext@example.org>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: text/plain\n\nhello\n"
    "--b\nContent-Type: application/pdf; name=secret-name.pdf\nContent-Transfer-Encoding: base64\n\n%s"
    "--b--\n", att->str);
  g_string_free (att, TRUE);
  gsize len = strlen (msg);
  g_autoptr (EbPlan) r = eb_externalize_plan (msg, len, config, store, 0);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 1);
  g_autofree char *hex = g_compute_checksum_for_string (
    G_CHECKSUM_SHA256, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01"
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01"
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01"
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01"
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz01", -1);
  g_ptr_array_set_size (records, 0);
  eb_log_message ("Q1", "<ext@example.org>", r);
  g_assert_cmpuint (records->len, ==, 2);
  g_assert_cmpstr (field (0, "MESSAGE"), ==,
                   "event=externalize queue_id=Q1 msgid=<ext@example.org> parts=1 externalized=1 changed=yes");
  g_autofree char *want = g_strdup_printf (
    "event=externalize queue_id=Q1 msgid=<ext@example.org> part=2 type=application/pdf bytes=540 "
    "outcome=externalized scheme=https host=files.example.org sha256=%s", hex);
  g_assert_cmpstr (field (1, "MESSAGE"), ==, want);
  g_assert_cmpstr (field (1, "EXTBODY_OUTCOME"), ==, "externalized");

  /* the store gone: the part stays, its line says why */
  g_autofree char *obj = g_build_filename (dir, hex, NULL);
  g_assert_cmpint (g_unlink (obj), ==, 0);
  g_assert_cmpint (g_rmdir (dir), ==, 0);
  g_autoptr (EbPlan) r2 = eb_externalize_plan (msg, len, config, store, 0);
  g_ptr_array_set_size (records, 0);
  eb_log_message ("Q2", NULL, r2);
  g_assert_cmpuint (records->len, ==, 2);
  g_assert_cmpstr (field (0, "MESSAGE"), ==, "event=externalize queue_id=Q2 parts=1 externalized=0 changed=no");
  g_assert_true (g_str_has_prefix (field (1, "MESSAGE"),
                                   "event=externalize queue_id=Q2 part=2 type=application/pdf bytes=540 "
                                   "outcome=left reason=store-failed detail="));
  for (guint i = 0; i < records->len; i++) {
    g_assert_null (strstr (field (i, "MESSAGE"), "secret"));
    g_assert_null (strstr (field (i, "MESSAGE"), "8443"));
  }

  /* nothing to take out: no line */
  g_ptr_array_set_size (records, 0);
  g_autoptr (EbPlan) r3 = eb_externalize_plan ("Subject: x\n\nhi\n", 15, config, store, 0);
  eb_log_message ("Q3", NULL, r3);
  g_assert_cmpuint (records->len, ==, 0);
}

static void
test_parse_target (void)
{
  EbLogTarget t = EB_LOG_SYSLOG;
  g_assert_true (eb_log_parse_target ("stderr", &t));
  g_assert_cmpint (t, ==, EB_LOG_STDERR);
  g_assert_true (eb_log_parse_target ("syslog", &t));
  g_assert_cmpint (t, ==, EB_LOG_SYSLOG);
  g_assert_false (eb_log_parse_target ("journal", &t));
  g_assert_false (eb_log_parse_target ("", &t));
  g_assert_false (eb_log_parse_target (NULL, &t));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_mime_init ();
  records = g_ptr_array_new_with_free_func ((GDestroyNotify) g_hash_table_unref);
  /* the subprocess installs eb-log's own writer: a writer is set once */
  if (!g_test_subprocess ())
    g_log_set_writer_func (capture_writer, NULL, NULL);
  g_test_add_func ("/log/pair", test_pair);
  g_test_add_func ("/log/url-origin", test_url_origin);
  g_test_add_func ("/log/record", test_record);
  g_test_add_func ("/log/record/message-only", test_record_message_only);
  g_test_add_func ("/log/record/externalize", test_record_externalize);
  g_test_add_func ("/log/message-id", test_message_id);
  g_test_add_func ("/log/start", test_start);
  g_test_add_func ("/log/parse-target", test_parse_target);
  g_test_add_func ("/log/stderr-writer", test_stderr_writer);
  int r = g_test_run ();
  g_ptr_array_unref (records);
  g_mime_shutdown ();
  return r;
}
