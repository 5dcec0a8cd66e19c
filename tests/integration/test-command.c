/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-command.c - the extbody command end to end: options, exit codes, the
 * one-line errors, rewrite on the bundled samples, inspect --json, data-url,
 * config, and bad input that must flow through unchanged. */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <sysexits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
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
  struct { const char *args[5]; int status; const char *text; } cases[] = {
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
    /* typed keys: checked as the runtime reads them, the key named */
    { { "config", "-o", "allow_networks=10.0.0.0/33" }, EX_CONFIG, "allow_networks: item 1 of the list" },
    { { "config", "--allow-network", "banana" }, EX_CONFIG, "--allow-network banana" },
    { { "config", "-o", "allow_schemes=telnet" }, EX_CONFIG, "allow_schemes: \"telnet\"" },
    { { "config", "-o", "milter_socket=bogus" }, EX_CONFIG, "milter_socket: \"bogus\"" },
    { { "config", "-o", "milter_socket=inet:99999@127.0.0.1" }, EX_CONFIG, "milter_socket:" },
    { { "config", "-o", "deny_domains=*.example.com" }, EX_CONFIG, "deny_domains: \"*.example.com\": write example.com" },
    { { "config", "-o", "allow_ports=80,,443" }, EX_CONFIG, "allow_ports: item 2 of the list is empty" },
    { { "config", "--check", "-o", "local_file_dirs=spool" }, EX_CONFIG, "local_file_dirs: \"spool\" is not an absolute path" },
    { { "rewrite", "-o", "allow_networks=10.0.0.0/33" }, EX_CONFIG, "allow_networks" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_auto (CmdResult) r = { 0 };
    const char *args[6] = { cases[i].args[0], cases[i].args[1], cases[i].args[2], cases[i].args[3],
                            cases[i].args[4], NULL };
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
  g_assert_true (g_str_has_prefix (tout, "PART  ACCESS    URL / PARAMETERS"));
  g_assert_cmpuint (n_lines (t.out), ==, 7);
  /* it fits an 80-column terminal, URLs shortened */
  g_auto (GStrv) tl = g_strsplit (tout, "\n", -1);
  for (guint i = 0; tl[i]; i++)
    g_assert_cmpint (g_utf8_strlen (tl[i], -1), <=, 80);
  g_assert_nonnull (strstr (tout, "http://www.example.com/r...al-report.pdf  leave    fetch-off\n"));

  /* a message over max_message_size is not read (issue 38): never "no
   * external-body references" about it, alone or beside one that was read */
  g_auto (CmdResult) big = { 0 };
  RUN (&big, NULL, "inspect", "-o", "fetch=off", "-o", "max_message_size=1K", refs);
  g_assert_cmpint (big.status, ==, 0);
  g_autofree char *bout = bytes_str (big.out);
  g_assert_cmpstr (bout, ==, "no external-body references found; 1 message not inspected: larger than "
                             "max_message_size (1024 bytes; -o max_message_size=SIZE to look)\n");
  g_autofree char *berr = bytes_str (big.err);
  g_assert_nonnull (strstr (berr, "message left unchanged: message larger than max_message_size"));
  g_autofree char *plain = sample ("plain.eml");   /* under 1 KiB, no reference */
  g_auto (CmdResult) two = { 0 };
  RUN (&two, NULL, "inspect", "-o", "fetch=off", "-o", "max_message_size=1K", plain, refs);
  g_autofree char *tout2 = bytes_str (two.out);
  g_assert_cmpstr (tout2, ==, "no external-body references found; 1 message not inspected: larger than "
                              "max_message_size (1024 bytes; -o max_message_size=SIZE to look)\n");
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
  /* a file's bad value is named with the file and the key */
  g_file_set_contents (tmp, "[extbody]\ndeny_networks = 10.0.0.0/8, 300.1.2.3\n", -1, NULL);
  g_auto (CmdResult) bad2 = { 0 };
  RUN (&bad2, NULL, "config", "--check", "-c", tmp);
  g_assert_cmpint (bad2.status, ==, EX_CONFIG);
  g_autofree char *err2 = bytes_str (bad2.err);
  g_assert_nonnull (strstr (err2, "extbody-test-bad.conf: deny_networks: item 2 of the list"));
  g_assert_cmpuint (n_lines (bad2.err), ==, 1);
  /* --check: silent when valid */
  g_auto (CmdResult) ok = { 0 };
  RUN (&ok, NULL, "config", "--check", "-c", example);
  g_assert_cmpint (ok.status, ==, 0);
  g_assert_cmpuint (g_bytes_get_size (ok.out) + g_bytes_get_size (ok.err), ==, 0);

  /* a key set twice: the administrator's line above, the old shipped default
   * further down. An error naming both lines (78), from --check, from the
   * commands that read mail, never the last line silently in force */
  g_file_set_contents (tmp, "[extbody]\nfetch = on\nallow_domains = files.example.org\n\n"
                            "# Fetch http, https and ftp URLs (on), or not (off).\nfetch = off\n", -1, NULL);
  g_autofree char *twice = g_strdup_printf ("extbody: %s:6: fetch is set a second time (first at %s:2): "
                                            "set each key once\n", tmp, tmp);
  g_auto (CmdResult) dup = { 0 };
  RUN (&dup, NULL, "config", "--check", "-c", tmp);
  g_assert_cmpint (dup.status, ==, EX_CONFIG);
  g_autofree char *dup_err = bytes_str (dup.err);
  g_assert_cmpstr (dup_err, ==, twice);
  g_assert_cmpuint (g_bytes_get_size (dup.out), ==, 0);
  g_auto (CmdResult) dup2 = { 0 };
  RUN (&dup2, NULL, "rewrite", "-c", tmp, example);
  g_assert_cmpint (dup2.status, ==, EX_CONFIG);
  g_autofree char *dup2_err = bytes_str (dup2.err);
  g_assert_cmpstr (dup2_err, ==, twice);
  g_assert_cmpuint (g_bytes_get_size (dup2.out), ==, 0);
  /* -o still overrides the file on purpose */
  g_file_set_contents (tmp, "[extbody]\nfetch = on\nmax_parts = 5\n", -1, NULL);
  g_auto (CmdResult) over = { 0 };
  RUN (&over, NULL, "config", "-c", tmp, "-o", "max_parts=7", "-o", "fetch=off");
  g_assert_cmpint (over.status, ==, 0);
  g_autofree char *over_out = bytes_str (over.out);
  g_assert_nonnull (strstr (over_out, "\nmax_parts = 7\n"));
  g_assert_nonnull (strstr (over_out, "\nfetch = off\n"));
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

#define FROM_LINE "From alice@example.org Tue Nov 24 10:00:00 2026\n"
#define FROM_MSG FROM_LINE \
  "From: alice@example.org\nSubject: saved by a mail reader\nMIME-Version: 1.0\n" \
  "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nsee below\n" \
  "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,hello%20from%20data\"\n\n" \
  "Content-Type: text/plain\n\n\n--b--\n"

/* A FILE is always one message, written to standard output, even when it
 * starts with a From_ line as saved messages do; the file is never changed. */
static void
test_from_line_message (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbody-cmd-XXXXXX", NULL);
  g_autofree char *file = g_build_filename (dir, "saved.eml", NULL);
  g_assert_true (g_file_set_contents (file, FROM_MSG, -1, NULL));
  GStatBuf before;
  g_assert_cmpint (g_stat (file, &before), ==, 0);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "--report", file);
  g_autofree char *out = bytes_str (r.out);
  g_autofree char *err = bytes_str (r.err);
  g_test_message ("%s", err);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_true (g_str_has_prefix (out, FROM_LINE "From: alice@example.org\n"));
  g_assert_nonnull (strstr (out, "\n\nhello from data\n--b--\n"));
  g_assert_null (strstr (out, "external-body"));
  g_assert_nonnull (strstr (err, "extbody: part 2: access-type=url data:,hello%20from%20data: resolved (text/plain, 15 bytes, 7bit)"));
  g_autofree char *after = NULL;
  g_assert_true (g_file_get_contents (file, &after, NULL, NULL));
  g_assert_cmpstr (after, ==, FROM_MSG);
  GStatBuf st;
  g_assert_cmpint (g_stat (file, &st), ==, 0);
  g_assert_cmpint (st.st_ino, ==, before.st_ino);
  g_assert_cmpint (st.st_mtime, ==, before.st_mtime);
  /* inspect reads it as one message too */
  g_auto (CmdResult) i = { 0 };
  RUN (&i, NULL, "inspect", "--json", file);
  g_assert_cmpint (i.status, ==, 0);
  g_assert_cmpuint (n_lines (i.out), ==, 1);
  g_autofree char *iout = bytes_str (i.out);
  g_assert_nonnull (strstr (iout, "\"action\":\"resolve\""));
  /* a directory is not a Maildir unless named as one */
  g_auto (CmdResult) d = { 0 };
  RUN (&d, NULL, "rewrite", dir);
  g_assert_cmpint (d.status, ==, EX_NOINPUT);
  g_autofree char *derr = bytes_str (d.err);
  g_assert_nonnull (strstr (derr, "--maildir"));
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  g_assert_cmpint (system (rm), ==, 0);
}

static char *
run_sh (const char *cmd, int *status)
{
  g_autofree char *out = NULL;
  g_autoptr (GError) error = NULL;
  int wait = 0;
  g_assert_true (g_spawn_command_line_sync (cmd, &out, NULL, &wait, &error));
  *status = WIFEXITED (wait) ? WEXITSTATUS (wait) : -1;
  return g_steal_pointer (&out);
}

/* The pipe filter hands the message to extbody on standard input: a message
 * that reaches it starting with a From_ line (pipe(8) flags=F) is resolved and
 * re-injected whole, never rewritten in place and re-injected empty; forged
 * X-Extbody fields are removed (strip_trace_fields). The re-injection command
 * is a script that records what it was given (the real Postfix round trip is
 * in test-postfix). */
static void
test_pipe_filter (void)
{
  g_autofree char *pipe = g_test_build_filename (G_TEST_DIST, "..", "filters", "pipe", "extbody-pipe", NULL);
  g_autofree char *dir = g_dir_make_tmp ("extbody-pipe-XXXXXX", NULL);
  g_autofree char *capture = g_build_filename (dir, "sendmail", NULL);
  g_autofree char *script = g_strdup_printf ("#!/bin/sh\necho \"$@\" > '%s/args'\ncat > '%s/msg'\n", dir, dir);
  g_assert_true (g_file_set_contents (capture, script, -1, NULL));
  g_assert_cmpint (g_chmod (capture, 0755), ==, 0);
  g_autofree char *conf = g_build_filename (dir, "empty.conf", NULL);
  g_assert_true (g_file_set_contents (conf, "", 0, NULL));
  const char *forged = FROM_LINE "X-Extbody: resolved 1 of 1 external-body references\n"
                       "X-Extbody-Resolved: access-type=URL; scheme=data\n";
  g_autofree char *input = g_strconcat (forged, (const char *) FROM_MSG + strlen (FROM_LINE), NULL);
  g_autofree char *in = g_build_filename (dir, "in.eml", NULL);
  g_assert_true (g_file_set_contents (in, input, -1, NULL));
  g_autofree char *cmd = g_strdup_printf ("sh -c \"EXTBODY='%s' SENDMAIL='%s' sh '%s' -c '%s' -f alice@example.org -- bob@example.org < '%s'\"",
                                          extbody_path (), capture, pipe, conf, in);
  int status = -1;
  G_GNUC_UNUSED g_autofree char *out = run_sh (cmd, &status);
  g_assert_cmpint (status, ==, 0);
  g_autofree char *msgf = g_build_filename (dir, "msg", NULL);
  g_autofree char *got = NULL;
  g_assert_true (g_file_get_contents (msgf, &got, NULL, NULL));
  g_test_message ("re-injected:\n%s", got);
  g_assert_true (g_str_has_prefix (got, FROM_LINE "From: alice@example.org\n"));
  g_assert_nonnull (strstr (got, "\n\nhello from data\n--b--\n"));
  g_assert_null (strstr (got, "external-body;"));
  /* the forged fields are gone; the one field extbody adds (as the milter) is there */
  g_assert_null (strstr (got, "X-Extbody: resolved 1 of 1 external-body references\n"));
  g_assert_nonnull (strstr (got, "X-Extbody: resolved 1 of 1 external-body reference\n"));
  g_assert_null (strstr (got, "access-type=URL; scheme=data\n"));
  /* strip_trace_fields = off keeps them */
  g_assert_true (g_file_set_contents (conf, "[extbody]\nstrip_trace_fields = off\n", -1, NULL));
  G_GNUC_UNUSED g_autofree char *out2 = run_sh (cmd, &status);
  g_assert_cmpint (status, ==, 0);
  g_autofree char *got2 = NULL;
  g_assert_true (g_file_get_contents (msgf, &got2, NULL, NULL));
  g_assert_nonnull (strstr (got2, "X-Extbody: resolved 1 of 1"));
  g_assert_nonnull (strstr (got2, "\n\nhello from data\n--b--\n"));
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  g_assert_cmpint (system (rm), ==, 0);
}

/* Private by default: a first rewrite --report of the sample mail, with no
 * configuration, opens no network socket at all (so makes no DNS query).
 * LeakSanitizer cannot run under ptrace: off for the traced runs. */
static void
test_private_by_default (void)
{
  g_autofree char *strace = g_find_program_in_path ("strace");
  if (!strace) {
    g_test_skip ("no strace");
    return;
  }
  g_autofree char *dir = g_dir_make_tmp ("extbody-private-XXXXXX", NULL);
  g_autofree char *conf = g_build_filename (dir, "empty.conf", NULL);
  g_assert_true (g_file_set_contents (conf, "", 0, NULL));
  g_autofree char *trace = g_build_filename (dir, "trace", NULL);
  g_autofree char *refs = sample ("references.eml");
  g_autofree char *cmd = g_strdup_printf ("env ASAN_OPTIONS=detect_leaks=0 strace -f -qq -o '%s' -e trace=socket,connect,sendto,sendmsg '%s' rewrite -c '%s' --report '%s'",
                                          trace, extbody_path (), conf, refs);
  int status = -1;
  g_autofree char *out = run_sh (cmd, &status);
  g_assert_cmpint (status, ==, 0);
  g_assert_nonnull (strstr (out, "X-Extbody-Resolved"));
  g_autofree char *t = NULL;
  g_assert_true (g_file_get_contents (trace, &t, NULL, NULL));
  g_test_message ("trace:\n%s", t);
  g_assert_null (strstr (t, "AF_INET"));
  g_assert_null (strstr (t, "AF_INET6"));
  g_assert_null (strstr (t, "htons(53)"));
  /* --fetch does try (the samples name example.com): the check above can fail */
  g_autofree char *cmd2 = g_strdup_printf ("env ASAN_OPTIONS=detect_leaks=0 strace -f -qq -o '%s' -e trace=socket,connect '%s' rewrite -c '%s' --fetch -o connect_timeout=1 -o message_deadline=2 '%s'",
                                           trace, extbody_path (), conf, refs);
  G_GNUC_UNUSED g_autofree char *out2 = run_sh (cmd2, &status);
  g_autofree char *t2 = NULL;
  g_assert_true (g_file_get_contents (trace, &t2, NULL, NULL));
  g_assert_nonnull (strstr (t2, "socket("));
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  g_assert_cmpint (system (rm), ==, 0);
}

/* A mailbox run's summary names, beside a reason a key decides, the key. */
static void
test_summary_hints (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbody-sum-XXXXXX", NULL);
  g_autofree char *box = g_build_filename (dir, "box", NULL);
  const char *m =
    "From a@example.org Tue Nov 24 10:00:00 2026\n"
    "Subject: one\nMIME-Version: 1.0\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"http://files.example.org/a.pdf\"\n\n"
    "Content-Type: application/pdf\n\n\n"
    "From b@example.org Tue Nov 24 10:00:01 2026\n"
    "Subject: two\nMIME-Version: 1.0\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\n"
    "Content-Type: text/plain\n\n";
  g_assert_true (g_file_set_contents (box, m, -1, NULL));
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-o", "max_part_bytes=1M", "--dry-run", "--mbox", box);
  g_autofree char *err = bytes_str (r.err);
  g_test_message ("%s", err);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_nonnull (strstr (err, "2 messages scanned, 2 references, 1 resolved, 1 messages would change; "
                                 "left: fetch-off 1 (fetch = on)\n"));
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  g_assert_cmpint (system (rm), ==, 0);
}

/* inspect walks a Maildir as rewrite does: a FIFO in cur/ is skipped, not
 * waited on. */
static void
test_inspect_maildir_fifo (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbody-md-XXXXXX", NULL);
  for (guint i = 0; i < 3; i++) {
    g_autofree char *sub = g_build_filename (dir, (const char *[]) { "cur", "new", "tmp" }[i], NULL);
    g_assert_cmpint (g_mkdir (sub, 0700), ==, 0);
  }
  g_autofree char *fifo = g_build_filename (dir, "cur", "1.fifo:2,", NULL);
  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  g_autofree char *msg = g_build_filename (dir, "cur", "2.msg:2,S", NULL);
  g_assert_true (g_file_set_contents (msg, (const char *) FROM_MSG + strlen (FROM_LINE), -1, NULL));
  g_autofree char *cmd = g_strdup_printf ("timeout 20 '%s' inspect --json --maildir '%s'", extbody_path (), dir);
  int status = -1;
  g_autofree char *out = run_sh (cmd, &status);
  g_assert_cmpint (status, ==, 0);   /* 124 would be the timeout */
  g_assert_nonnull (strstr (out, "\"action\":\"resolve\""));
  /* a Maildir directory given as FILE is read as one too (a directory is no message) */
  g_autofree char *cmd2 = g_strdup_printf ("timeout 20 '%s' inspect --json '%s'", extbody_path (), dir);
  g_autofree char *out2 = run_sh (cmd2, &status);
  g_assert_cmpint (status, ==, 0);
  g_assert_nonnull (strstr (out2, "\"action\":\"resolve\""));
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  g_assert_cmpint (system (rm), ==, 0);
}

/* A Maildir extbody cannot use: one line naming what is missing or not
 * permitted, with the system's words, exit 66 (issue 26: "not a Maildir" for
 * one it may not read, "tmp or cur ... (a symbolic link?)" for one without
 * tmp/). Permission is tested as a user without CAP_DAC_OVERRIDE would meet
 * it: root drops the capability (setpriv), others meet it as they are. */
static void
test_maildir_problems (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbody-md-XXXXXX", NULL);
  g_autofree char *md = g_build_filename (dir, "Maildir", NULL);
  for (guint i = 0; i < 2; i++) {
    g_autofree char *d = g_build_filename (md, i ? "new" : "cur", NULL);
    g_assert_cmpint (g_mkdir_with_parents (d, 0700), ==, 0);
  }
  g_autofree char *msg = g_build_filename (md, "new", "1.a.host", NULL);
  g_assert_true (g_file_set_contents (msg, "MIME-Version: 1.0\nContent-Type: message/external-body; "
                                           "access-type=URL; URL=\"data:,x\"\n\nContent-Type: text/plain\n\n",
                                      -1, NULL));
  g_autofree char *no_tmp = g_strdup_printf ("%s: not a Maildir: no tmp/ (a Maildir has cur/, new/ and tmp/)", md);
  const char *const cmds[][3] = { { "rewrite", "--maildir", md }, { "inspect", "--maildir", md },
                                  { "inspect", md, NULL } };
  for (guint i = 0; i < G_N_ELEMENTS (cmds); i++) {
    g_auto (CmdResult) r = { 0 };
    if (cmds[i][2])
      RUN (&r, NULL, cmds[i][0], cmds[i][1], cmds[i][2]);
    else
      RUN (&r, NULL, cmds[i][0], cmds[i][1]);
    g_autofree char *err = bytes_str (r.err);
    g_test_message ("%s %s: %s", cmds[i][0], cmds[i][1], err);
    g_assert_cmpint (r.status, ==, EX_NOINPUT);
    g_assert_nonnull (strstr (err, no_tmp));
  }
  g_autofree char *data = NULL;
  g_assert_true (g_file_get_contents (msg, &data, NULL, NULL));
  g_assert_nonnull (strstr (data, "external-body"));   /* as it was */

  /* not permitted: the Maildir itself, then its cur/ */
  g_autofree char *tmp = g_build_filename (md, "tmp", NULL);
  g_assert_cmpint (g_mkdir (tmp, 0700), ==, 0);
  g_autofree char *cur = g_build_filename (md, "cur", NULL);
  const char *drop = geteuid () == 0 ? "setpriv --bounding-set=-dac_override,-dac_read_search -- " : "";
  for (guint k = 0; k < 2; k++) {
    const char *locked = k ? cur : md;
    g_assert_cmpint (g_chmod (locked, 0), ==, 0);
    const char *subs[] = { "inspect --maildir", "inspect", "rewrite --maildir" };
    for (guint i = 0; i < G_N_ELEMENTS (subs); i++) {
      g_autofree char *cmd = g_strdup_printf ("sh -c \"%s'%s' %s '%s' 2>&1 >/dev/null\"", drop, extbody_path (),
                                              subs[i], md);
      int status = 0;
      g_autofree char *out = run_sh (cmd, &status);
      g_test_message ("%s: %d %s", cmd, status, out);
      g_autofree char *want = g_strdup_printf ("cannot open %s: Permission denied", locked);
      g_assert_cmpint (status, ==, EX_NOINPUT);
      g_assert_nonnull (strstr (out, want));
      g_assert_null (strstr (out, "not a Maildir"));
    }
    g_assert_cmpint (g_chmod (locked, 0700), ==, 0);
  }
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  g_assert_cmpint (system (rm), ==, 0);
}

/* Every wrapper answers --help (and -h) on standard output, exit 0, nothing
 * on standard error (issue 26: extbody-exim printed nothing, it wrote only to
 * syslog) - what an administrator types first. */
static void
test_wrappers_help (void)
{
  const char *const wrappers[][2] = {
    { "exim", "extbody-exim" }, { "pipe", "extbody-pipe" }, { "dovecot", "extbody-sieve-filter" },
    { "dovecot", "extbody-imap-rewrite" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (wrappers); i++)
    for (guint h = 0; h < 2; h++) {
      g_autofree char *w = g_test_build_filename (G_TEST_DIST, "..", "filters", wrappers[i][0], wrappers[i][1], NULL);
      g_autofree char *out = NULL, *err = NULL;
      int wait = 0;
      g_autoptr (GError) error = NULL;
      g_assert_true (g_spawn_sync (NULL, (char *[]) { w, h ? "-h" : "--help", NULL }, NULL, G_SPAWN_DEFAULT,
                                   NULL, NULL, &out, &err, &wait, &error));
      g_assert_no_error (error);
      g_test_message ("%s %s: %s", wrappers[i][1], h ? "-h" : "--help", out);
      g_assert_true (g_spawn_check_wait_status (wait, NULL));
      g_autofree char *want = g_strdup_printf ("usage: %s ", wrappers[i][1]);
      g_assert_true (g_str_has_prefix (out, want));
      g_assert_cmpstr (err, ==, "");
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
  g_test_add_func ("/command/from-line-message", test_from_line_message);
  g_test_add_func ("/command/pipe-filter", test_pipe_filter);
  g_test_add_func ("/command/private-by-default", test_private_by_default);
  g_test_add_func ("/command/inspect-maildir-fifo", test_inspect_maildir_fifo);
  g_test_add_func ("/command/summary-hints", test_summary_hints);
  g_test_add_func ("/command/maildir-problems", test_maildir_problems);
  g_test_add_func ("/command/wrappers-help", test_wrappers_help);
  return g_test_run ();
}
