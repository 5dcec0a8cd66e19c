/* test-command.c - the extbody command end to end: options, exit codes, the
 * one-line errors, rewrite on the bundled samples, inspect --json, data-url,
 * config, and bad input that must flow through unchanged. */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <sysexits.h>
#include "run-command.h"

static char *
sample (const char *name)
{
  return g_build_filename (g_getenv ("EXTBODY_DATADIR"), "samples", name, NULL);
}

static void
test_help_version (void)
{
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "--help");
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *out = bytes_str (r.out);
  g_assert_nonnull (strstr (out, "rewrite"));
  g_assert_nonnull (strstr (out, "inspect"));
  g_assert_nonnull (strstr (out, "data-url"));

  g_auto (CmdResult) v = { 0 };
  RUN (&v, NULL, "--version");
  g_assert_cmpint (v.status, ==, 0);
  g_autofree char *vout = bytes_str (v.out);
  g_assert_true (g_str_has_prefix (vout, "extbody " EXTBODY_VERSION_FOR_TESTS));

  const char *cmds[] = { "rewrite", "inspect", "data-url", "config" };
  for (guint i = 0; i < G_N_ELEMENTS (cmds); i++) {
    g_auto (CmdResult) h = { 0 };
    RUN (&h, NULL, cmds[i], "--help");
    g_assert_cmpint (h.status, ==, 0);
    g_autofree char *hout = bytes_str (h.out);
    g_assert_nonnull (strstr (hout, cmds[i]));
  }
}

/* Each usage or input problem: its sysexits code and exactly one line. */
static void
test_errors (void)
{
  struct { const char *args[4]; int status; const char *text; } cases[] = {
    { { NULL }, EX_USAGE, "Usage" },
    { { "frobnicate" }, EX_USAGE, "unknown command \"frobnicate\"" },
    { { "rewrite", "--bogus" }, EX_USAGE, "Unknown option" },
    { { "rewrite", "a", "b" }, EX_USAGE, "at most one FILE" },
    { { "rewrite", "/nonexistent/message.eml" }, EX_NOINPUT, "cannot open /nonexistent/message.eml" },
    { { "rewrite", "/" }, EX_NOINPUT, "cannot read /" },
    { { "inspect" }, EX_USAGE, "needs a FILE, --mbox FILE or --maildir DIR" },
    { { "inspect", "/nonexistent" }, EX_NOINPUT, "cannot open /nonexistent" },
    { { "data-url" }, EX_USAGE, "exactly one URL" },
    { { "data-url", "data:text/plain" }, EX_DATAERR, "comma" },
    { { "data-url", "http://example.com/" }, EX_DATAERR, "data" },
    { { "config", "-c", "/nonexistent.conf" }, EX_CONFIG, "/nonexistent.conf" },
    { { "config", "-o", "max_parts=many" }, EX_CONFIG, "max_parts" },
    { { "config", "-o", "no_such_key=1" }, EX_CONFIG, "no_such_key" },
    { { "config", "-o", "max_parts" }, EX_USAGE, "KEY=VALUE" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_auto (CmdResult) r = { 0 };
    const char *args[5] = { cases[i].args[0], cases[i].args[1], cases[i].args[2], cases[i].args[3], NULL };
    run_extbody (&r, NULL, args);
    g_autofree char *err = bytes_str (r.err);
    g_test_message ("case %u: status %d, stderr: %s", i, r.status, err);
    g_assert_cmpint (r.status, ==, cases[i].status);
    g_assert_nonnull (strstr (err, cases[i].text));
    if (cases[i].status != EX_USAGE || i > 0)
      g_assert_cmpuint (n_lines (r.err), ==, 1);
  }
}

static void
test_empty_input (void)
{
  g_auto (CmdResult) r = { 0 };
  g_autoptr (GBytes) empty = g_bytes_new_static ("", 0);
  RUN (&r, empty, "rewrite");
  g_assert_cmpint (r.status, ==, EX_DATAERR);
  g_assert_cmpuint (n_lines (r.err), ==, 1);
  g_assert_cmpuint (g_bytes_get_size (r.out), ==, 0);
}

static void
test_write_error (void)
{
  if (!g_file_test ("/dev/full", G_FILE_TEST_EXISTS)) {
    g_test_skip ("no /dev/full");
    return;
  }
  g_autofree char *plain = sample ("plain.eml");
  g_autofree char *cmd = g_strdup_printf ("'%s' rewrite '%s' > /dev/full", extbody_path (), plain);
  int status = 0;
  g_autofree char *err = NULL;
  g_autoptr (GError) error = NULL;
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", cmd, NULL }, NULL, 0, NULL, NULL, NULL,
                &err, &status, &error);
  g_assert_no_error (error);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, EX_IOERR);
  g_assert_nonnull (strstr (err, "cannot write"));
}

/* The bundled samples: what the quick start shows. */
static void
test_samples (void)
{
  g_autofree char *plain = sample ("plain.eml");
  g_autoptr (GBytes) plain_in = file_bytes (plain);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-o", "fetch=off", "--report", plain);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_true (g_bytes_equal (r.out, plain_in));
  g_assert_cmpuint (g_bytes_get_size (r.err), ==, 0);

  /* the same through standard input */
  g_auto (CmdResult) s = { 0 };
  RUN (&s, plain_in, "rewrite");
  g_assert_cmpint (s.status, ==, 0);
  g_assert_true (g_bytes_equal (s.out, plain_in));

  g_autofree char *refs = sample ("references.eml");
  g_auto (CmdResult) w = { 0 };
  RUN (&w, NULL, "rewrite", "-o", "fetch=off", "--report", refs);
  g_assert_cmpint (w.status, ==, 0);
  g_autofree char *err = bytes_str (w.err);
  g_autofree char *out = bytes_str (w.out);
  g_test_message ("%s", err);
  const char *want[] = {
    "extbody: part 2: access-type=url data:image/png;base64,",
    "resolved (image/png, ",
    "extbody: part 3: access-type=url data:text/plain;charset=us-ascii,Minutes",
    "resolved (text/plain, 85 bytes, 7bit)",
    "extbody: part 4: access-type=url data:application/pdf;base64,JVBERi0xLjQK: left: type-mismatch: content type disagrees (data: URL is application/pdf, inner header says image/jpeg)",
    "extbody: part 5: access-type=url http://www.example.com/reports/2026/annual-report.pdf: left: fetch-off: fetching is off (fetch = off) (scheme \"http\")",
    "extbody: part 6: access-type=anon-ftp site=ftp.example.com directory=pub/minutes name=2026-11.txt mode=ascii: left: fetch-off: fetching is off (fetch = off) (access-type=anon-ftp)",
    "extbody: part 7.2: access-type=url data:,name%2Camount%0Aalice%2C10%0Abob%2C20%0A: resolved (text/csv, 28 bytes, 7bit)",
  };
  for (guint i = 0; i < G_N_ELEMENTS (want); i++)
    g_assert_nonnull (strstr (err, want[i]));
  g_assert_cmpuint (n_lines (w.err), ==, 6);
  g_assert_nonnull (strstr (out, "Content-ID: <logo@example.org>\nContent-Disposition: attachment; filename=\"logo.png\"\nContent-Transfer-Encoding: base64\nX-Extbody-Resolved: access-type=URL; scheme=data; type=\"image/png\";\n\tsize="));
  g_assert_nonnull (strstr (out, "1. Budget approved.\n2. Next meeting: 2026-12-04.\n"));
  g_assert_nonnull (strstr (out, "name,amount\nalice,10\nbob,20\n"));
  /* the parts left alone are there byte for byte */
  g_autoptr (GBytes) refs_in = file_bytes (refs);
  g_autofree char *in = bytes_str (refs_in);
  const char *kept = strstr (in, "--=_outer_boundary\nContent-Type: message/external-body; access-type=URL;\n\tURL=\"data:application/pdf");
  g_assert_nonnull (kept);
  g_autofree char *kept_span = g_strndup (kept, (gsize) (strstr (in, "--=_outer_boundary\nContent-Type: message/rfc822") - kept));
  g_assert_nonnull (strstr (out, kept_span));

  /* CRLF, top-level external-body: merged, all CRLF */
  g_autofree char *top = sample ("toplevel-crlf.eml");
  g_auto (CmdResult) t = { 0 };
  RUN (&t, NULL, "rewrite", "-o", "fetch=off", top);
  g_assert_cmpint (t.status, ==, 0);
  g_autofree char *tout = bytes_str (t.out);
  g_assert_true (g_str_has_prefix (tout, "From: Releases <releases@example.org>\r\n"));
  g_assert_nonnull (strstr (tout, "MIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\nContent-ID: <notes@example.org>\r\nContent-Description: release notes\r\nContent-Transfer-Encoding: 7bit\r\n"));
  g_assert_true (g_str_has_suffix (tout, "\r\n\r\n<!DOCTYPE html>\r\n<html><body><h1>Release notes</h1><p>Version 2.0 is out.</p></body></html>\r\n"));
  g_assert_null (strstr (tout, "external-body"));
}

static void
test_inspect_json (void)
{
  g_autofree char *refs = sample ("references.eml");
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "inspect", "-o", "fetch=off", "--json", refs);
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *out = bytes_str (r.out);
  g_auto (GStrv) lines = g_strsplit (g_strstrip (out), "\n", -1);
  g_assert_cmpuint (g_strv_length (lines), ==, 6);
  const char *parts[] = { "2", "3", "4", "5", "6", "7.2" };
  const char *actions[] = { "resolve", "resolve", "leave", "leave", "leave", "resolve" };
  const char *reasons[] = { "resolved", "resolved", "type-mismatch", "fetch-off", "fetch-off", "resolved" };
  for (guint i = 0; lines[i]; i++) {
    g_autoptr (JsonParser) p = json_parser_new ();
    g_autoptr (GError) error = NULL;
    json_parser_load_from_data (p, lines[i], -1, &error);
    g_assert_no_error (error);
    JsonObject *o = json_node_get_object (json_parser_get_root (p));
    g_assert_cmpstr (json_object_get_string_member (o, "part"), ==, parts[i]);
    g_assert_cmpstr (json_object_get_string_member (o, "action"), ==, actions[i]);
    g_assert_cmpstr (json_object_get_string_member (o, "reason"), ==, reasons[i]);
    g_assert_cmpstr (json_object_get_string_member (o, "source"), ==, refs);
  }
  g_assert_nonnull (strstr (lines[4], "\"site\":\"ftp.example.com\""));
  g_assert_nonnull (strstr (lines[4], "\"access_type\":\"anon-ftp\""));
  g_assert_nonnull (strstr (lines[3], "\"url\":\"http://www.example.com/reports/2026/annual-report.pdf\""));

  /* the table: a heading and one aligned row per reference */
  g_auto (CmdResult) t = { 0 };
  RUN (&t, NULL, "inspect", "-o", "fetch=off", refs);
  g_assert_cmpint (t.status, ==, 0);
  g_autofree char *tout = bytes_str (t.out);
  g_assert_true (g_str_has_prefix (tout, "PART  ACCESS-TYPE  URL / PARAMETERS"));
  g_assert_cmpuint (n_lines (t.out), ==, 7);
}

static void
test_data_url (void)
{
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "data-url", "--json", "data:text/plain;charset=UTF-8;base64,aGk=");
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *out = bytes_str (r.out);
  g_assert_cmpstr (out, ==, "{\"mime_type\":\"text/plain;charset=UTF-8\",\"body_base64\":\"aGk=\"}\n");

  g_auto (CmdResult) t = { 0 };
  RUN (&t, NULL, "data-url", "--type", "data:,x");
  g_autofree char *tout = bytes_str (t.out);
  g_assert_cmpstr (tout, ==, "text/plain;charset=US-ASCII\n");

  g_auto (CmdResult) b = { 0 };
  RUN (&b, NULL, "data-url", "data:,a%00b");
  g_assert_cmpint (b.status, ==, 0);
  g_assert_cmpmem (g_bytes_get_data (b.out, NULL), g_bytes_get_size (b.out), "a\0b", 3);

  /* from standard input, with a U+0000 in the URL itself */
  g_autoptr (GBytes) in = g_bytes_new_static ("data:,x\0y", 9);
  g_auto (CmdResult) s = { 0 };
  RUN (&s, in, "data-url", "--json", "-");
  g_assert_cmpint (s.status, ==, 0);
  g_autofree char *sout = bytes_str (s.out);
  g_assert_cmpstr (sout, ==, "{\"mime_type\":\"text/plain;charset=US-ASCII\",\"body_base64\":\"eAB5\"}\n");
}

static void
test_config (void)
{
  g_autofree char *example = g_build_filename (g_getenv ("EXTBODY_DATADIR"), "extbody.conf.example", NULL);
  g_auto (CmdResult) a = { 0 };
  RUN (&a, NULL, "config", "-c", example);
  g_auto (CmdResult) d = { 0 };
  RUN (&d, NULL, "config", "--defaults");
  g_assert_cmpint (a.status, ==, 0);
  g_assert_true (g_bytes_equal (a.out, d.out));

  g_auto (CmdResult) o = { 0 };
  RUN (&o, NULL, "config", "-c", example, "-o", "max_parts=7", "-o", "max_part_bytes=2k");
  g_autofree char *out = bytes_str (o.out);
  g_assert_nonnull (strstr (out, "max_parts = 7\n"));
  g_assert_nonnull (strstr (out, "max_part_bytes = 2048\n"));

  g_autofree char *tmp = g_build_filename (g_get_tmp_dir (), "extbody-test-bad.conf", NULL);
  g_file_set_contents (tmp, "[extbody]\nmax_partz = 3\n", -1, NULL);
  g_auto (CmdResult) bad = { 0 };
  RUN (&bad, NULL, "rewrite", "-c", tmp, example);
  g_assert_cmpint (bad.status, ==, EX_CONFIG);
  g_autofree char *err = bytes_str (bad.err);
  g_assert_nonnull (strstr (err, "unknown key \"max_partz\""));
  g_unlink (tmp);
}

/* Bad input flows on unchanged, with a reason in the report. */
static void
test_bad_input (void)
{
  struct { const char *msg; const char *report; } cases[] = {
    { "From: a\nContent-Type: multipart/mixed; boundary=x\n\n--x\nContent-Type: message/external-body; access-type=URL; URL=\"data:,a",
      NULL },
    { "From: a\nContent-Type: message/external-body; access-type=URL; URL=\"\"\n\nContent-Type: text/plain\n\n",
      "left: url-invalid" },
    { "From: a\nContent-Type: message/external-body; access-type=URL; URL=\" \n \t\"\n\nContent-Type: text/plain\n\n",
      "left: url-invalid" },
    { "From: a\nContent-Type: message/external-body; access-type=URL; URL=\"data:text/plain\"\n\nContent-Type: text/plain\n\n",
      "left: data-url-invalid: data: URL processor failed" },
    { "From: a\nContent-Type: message/external-body; access-type=URL; URL=\"data:;base64,!!!!\"\n\nContent-Type: text/plain\n\n",
      "left: data-url-invalid" },
    { "From: a\nContent-Type: message/external-body; access-type=URL; URL=data:,bare\n\nContent-Type: text/plain\n\n",
      "left: url-invalid" },
    { "From: a\nContent-Type: message/external-body; URL=\"data:,x\"\n\nContent-Type: text/plain\n\n",
      "left: no-access-type" },
    { "From: a\nContent-Type: multipart/mixed; boundary=x\n\nno boundaries\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\n",
      NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (GBytes) in = g_bytes_new_static (cases[i].msg, strlen (cases[i].msg));
    g_auto (CmdResult) r = { 0 };
    RUN (&r, in, "rewrite", "-o", "fetch=off", "--report");
    g_autofree char *err = bytes_str (r.err);
    g_test_message ("case %u: %s", i, err);
    g_assert_cmpint (r.status, ==, 0);
    g_assert_true (g_bytes_equal (r.out, in));
    if (cases[i].report) {
      g_assert_nonnull (strstr (err, cases[i].report));
      g_assert_cmpuint (n_lines (r.err), ==, 1);
    }
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/command/help-version", test_help_version);
  g_test_add_func ("/command/errors", test_errors);
  g_test_add_func ("/command/empty-input", test_empty_input);
  g_test_add_func ("/command/write-error", test_write_error);
  g_test_add_func ("/command/samples", test_samples);
  g_test_add_func ("/command/inspect-json", test_inspect_json);
  g_test_add_func ("/command/data-url", test_data_url);
  g_test_add_func ("/command/config", test_config);
  g_test_add_func ("/command/bad-input", test_bad_input);
  return g_test_run ();
}
