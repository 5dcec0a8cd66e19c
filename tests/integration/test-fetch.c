/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-fetch.c - fetching through real servers that the test starts on
 * loopback (tests/servers/httpd.py; https with a certificate made for the test;
 * ftpd.py; gopherd.py, gophernicus; nntpd.py; leafnoded.py, leafnode):
 * normal files, types, statuses, redirects, limits, time-outs, refused addresses
 * in every textual form, a redirect from an allowed address to a refused one,
 * credentials, domains, rate limits, de-duplication, expiration, size and
 * Content-MD5. Every failure must leave the message exactly as it was. */
#include <json-glib/json-glib.h>
#include <glib/gstdio.h>
#include <unistd.h>
#include <stdlib.h>
#include "run-command.h"
#include "test-server.h"
#include "eb-config.h"
#include "eb-fetch.h"
#include "eb-reason.h"

/* httpd.py on @bind, with TLS when @cert and @key are given */
static TestServer *
server_start (const char *bind, const char *cert, const char *key)
{
  g_autoptr (GError) error = NULL;
  const char *args[] = { "--bind", bind, cert ? "--tls" : NULL, cert, key, NULL };
  TestServer *s = test_server_start ("httpd.py", args, NULL, FALSE, &error);
  g_assert_no_error (error);
  return s;
}

static char *empty_conf;   /* only fetch = on: no /etc/extbody/extbody.conf */
static TestServer *srv;    /* 127.0.0.1 */
static TestServer *srv2;   /* 127.0.0.2 */

/* A message with one reference to @url whose inner header is @inner. */
static GBytes *
message (const char *url, const char *params, const char *inner)
{
  g_autofree char *param = g_strdup_printf ("URL=\"%s\"", url);
  char *m = g_strdup_printf (
    "From: a@example.org\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: text/plain\r\n\r\nsee below\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;%s\r\n\t%s\r\n\r\n%s\r\n"
    "--b--\r\n", params ? params : "", param, inner);
  return g_bytes_new_take (m, strlen (m));
}

static char *
url (const char *path)
{
  return g_strdup_printf ("http://127.0.0.1:%u%s", srv->port, path);
}

/* Run rewrite on @msg with @extra options; check the report names @want, and
 * that a message left alone comes out byte for byte. */
static char *
rewrite (GBytes *msg, const char *want, const char *const *extra)
{
  g_autoptr (GPtrArray) args = g_ptr_array_new ();
  g_ptr_array_add (args, "rewrite");
  g_ptr_array_add (args, "--report");
  g_ptr_array_add (args, "-c");
  g_ptr_array_add (args, empty_conf);
  for (guint i = 0; extra && extra[i]; i++)
    g_ptr_array_add (args, (gpointer) extra[i]);
  g_ptr_array_add (args, NULL);
  g_auto (CmdResult) r = { 0 };
  run_extbody (&r, msg, (const char *const *) args->pdata);
  g_autofree char *err = bytes_str (r.err);
  g_test_message ("report: %s", err);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_nonnull (strstr (err, want));
  if (!strstr (want, "resolved"))
    g_assert_true (g_bytes_equal (r.out, msg));
  else
    g_assert_false (g_bytes_equal (r.out, msg));
  return bytes_str (r.out);
}

#define ALLOW "--fetch", "--allow-network", "127.0.0.1/32"

static void
test_resolved (void)
{
  g_autofree char *u = url ("/text");
  g_autoptr (GBytes) m = message (u, NULL, "Content-Type: text/plain\r\nContent-ID: <t@x>\r\n");
  g_autofree char *out = rewrite (m, "resolved (text/plain, 27 bytes, 7bit)", (const char *[]) { ALLOW, NULL });
  g_assert_nonnull (strstr (out, "\r\n\r\nhello from the test server\r\n\r\n--b--\r\n"));
  g_autofree char *trace = g_strdup_printf ("X-Extbody-Resolved: access-type=URL;\r\n\tURL=\"http://127.0.0.1:%u/text\";", srv->port);
  g_assert_nonnull (strstr (out, trace));

  g_autofree char *b = url ("/bin?n=1000");
  g_autoptr (GBytes) m2 = message (b, NULL, "Content-Type: application/octet-stream\r\n");
  g_autofree char *out2 = rewrite (m2, "resolved (application/octet-stream, 1000 bytes, base64)",
                                   (const char *[]) { ALLOW, NULL });
  g_assert_nonnull (strstr (out2, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKiss"));
}

static void
test_types (void)
{
  g_autofree char *png = url ("/type?t=image/png");
  g_autoptr (GBytes) m = message (png, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o1 = rewrite (m, "left: type-mismatch: content type disagrees (server says image/png, inner header says text/plain)",
                                 (const char *[]) { ALLOW, NULL });
  G_GNUC_UNUSED g_autofree char *o2 = rewrite (m, "resolved (text/plain, 1 bytes", (const char *[]) { ALLOW, "-o", "content_type_mismatch=accept", NULL });
  g_autofree char *param = url ("/type?t=IMAGE/PNG;%20q=1");
  g_autoptr (GBytes) m3 = message (param, NULL, "Content-Type: image/png\r\n");
  G_GNUC_UNUSED g_autofree char *o3 = rewrite (m3, "resolved (image/png", (const char *[]) { ALLOW, NULL });
  g_autofree char *none = url ("/type");
  g_autoptr (GBytes) m4 = message (none, NULL, "Content-Type: image/gif\r\n");
  G_GNUC_UNUSED g_autofree char *o4 = rewrite (m4, "resolved (image/gif, 1 bytes, base64)", (const char *[]) { ALLOW, NULL });
  /* application/octet-stream from a server asserts nothing: the inner type governs */
  g_autofree char *octet = url ("/type?t=application/octet-stream");
  g_autoptr (GBytes) m5 = message (octet, NULL, "Content-Type: text/x-log\r\n");
  g_autofree char *o5 = rewrite (m5, "resolved (text/x-log, 1 bytes", (const char *[]) { ALLOW, NULL });
  g_assert_nonnull (strstr (o5, "Content-Type: text/x-log\r\n"));
  g_autofree char *octet2 = url ("/type?t=Application/Octet-Stream;%20name=x.log");
  g_autoptr (GBytes) m6 = message (octet2, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o6 = rewrite (m6, "resolved (text/plain, 1 bytes", (const char *[]) { ALLOW, NULL });
  /* with no inner type, it is the type written */
  g_autoptr (GBytes) m7 = message (octet, NULL, "Content-ID: <n@x>\r\n");
  G_GNUC_UNUSED g_autofree char *o7 = rewrite (m7, "resolved (application/octet-stream, 1 bytes", (const char *[]) { ALLOW, NULL });
  /* any other disagreement is still one */
  g_autofree char *js = url ("/type?t=application/javascript");
  g_autoptr (GBytes) m8 = message (js, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o8 = rewrite (m8, "left: type-mismatch", (const char *[]) { ALLOW, NULL });
}

static void
test_statuses_and_redirects (void)
{
  const struct { const char *path; const char *want; } cases[] = {
    { "/status/404", "left: http-status: server answered with a status other than 200 (HTTP 404)" },
    { "/status/500", "left: http-status: server answered with a status other than 200 (HTTP 500)" },
    { "/chain/3", "resolved (text/plain, 27 bytes" },
    { "/chain/4", "left: too-many-redirects" },
    { "/loop", "left: too-many-redirects" },
    { "/redirect?to=file:///etc/passwd", "left: scheme-disabled: scheme not enabled (in redirect: scheme \"file\")" },
    { "/redirect?to=http://user:pw@127.0.0.1/text", "left: credentials" },
    { "/short", "left: fetch-failed" },
    { "/long", "resolved (text/plain, 5 bytes" },
    { "/header-flood", "left: fetch-failed: fetch failed (response header too large)" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *u = url (cases[i].path);
    g_autoptr (GBytes) m = message (u, NULL, "Content-Type: text/plain\r\n");
    G_GNUC_UNUSED g_autofree char *o = rewrite (m, cases[i].want, (const char *[]) { ALLOW, NULL });
  }
}

static void
test_limits (void)
{
  g_autofree char *big = url ("/big?n=300000");
  g_autoptr (GBytes) m = message (big, NULL, "Content-Type: application/octet-stream\r\n");
  G_GNUC_UNUSED g_autofree char *o1 = rewrite (m, "left: part-too-large: data larger than max_part_bytes (more than 102400 bytes)",
                                 (const char *[]) { ALLOW, "-o", "max_part_bytes=100k", NULL });
  g_autofree char *ann = url ("/bin?n=300000");
  g_autoptr (GBytes) m2 = message (ann, NULL, "Content-Type: application/octet-stream\r\n");
  G_GNUC_UNUSED g_autofree char *o2 = rewrite (m2, "left: part-too-large", (const char *[]) { ALLOW, "-o", "max_part_bytes=100k", NULL });
  g_autofree char *stall = url ("/stall");
  g_autoptr (GBytes) m3 = message (stall, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o3 = rewrite (m3, "left: timed-out", (const char *[]) { ALLOW, "-o", "fetch_timeout=1", NULL });
  G_GNUC_UNUSED g_autofree char *o4 = rewrite (m3, "left: timed-out", (const char *[]) { ALLOW, "-o", "low_speed_time=1", "-o", "low_speed_limit=1000", NULL });
  g_autoptr (GBytes) m5 = message (big, "\r\n\tsize=999999999;", "Content-Type: application/octet-stream\r\n");
  G_GNUC_UNUSED g_autofree char *o5 = rewrite (m5, "left: size-too-large", (const char *[]) { ALLOW, NULL });
  g_autofree char *txt = url ("/text");
  /* RFC 2046 5.2.3.1: past its expiration the data is not guaranteed, not
   * forbidden: still there, it resolves; gone, the reason is expired */
  g_autoptr (GBytes) m6 = message (txt, "\r\n\texpiration=\"Fri, 14 Jun 1991 19:13:14 -0400\";", "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o6 = rewrite (m6, "resolved (text/plain, 27 bytes", (const char *[]) { ALLOW, NULL });
  g_autofree char *gone = url ("/status/404");
  g_autoptr (GBytes) m6b = message (gone, "\r\n\texpiration=\"Fri, 14 Jun 1991 19:13:14 -0400\";", "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o6b = rewrite (m6b, "left: expired: reference expired and its data is gone (expiration=Fri, 14 Jun 1991 19:13:14 -0400; http-status: ",
                                  (const char *[]) { ALLOW, NULL });
  /* not expired: the fetch's own reason */
  g_autoptr (GBytes) m6c = message (gone, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o6c = rewrite (m6c, "left: http-status", (const char *[]) { ALLOW, NULL });
  g_autoptr (GBytes) m7 = message (txt, "\r\n\texpiration=\"Fri, 14 Jun 2999 19:13:14 -0400\";", "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o7 = rewrite (m7, "resolved", (const char *[]) { ALLOW, NULL });
}

static void
test_checksum (void)
{
  g_autofree char *u = url ("/text");
  /* base64 (MD5 ("hello from the test server\n")) */
  g_autofree char *md5 = g_compute_checksum_for_string (G_CHECKSUM_MD5, "hello from the test server\n", -1);
  guint8 raw[16];
  for (int i = 0; i < 16; i++)
    raw[i] = (guint8) (g_ascii_xdigit_value (md5[2 * i]) << 4 | g_ascii_xdigit_value (md5[2 * i + 1]));
  g_autofree char *b64 = g_base64_encode (raw, 16);
  g_autofree char *good = g_strdup_printf ("Content-Type: text/plain\r\nContent-MD5: %s\r\n", b64);
  g_autoptr (GBytes) m = message (u, NULL, good);
  G_GNUC_UNUSED g_autofree char *o1 = rewrite (m, "resolved", (const char *[]) { ALLOW, NULL });
  g_autoptr (GBytes) m2 = message (u, NULL, "Content-Type: text/plain\r\nContent-MD5: AAAAAAAAAAAAAAAAAAAAAA==\r\n");
  G_GNUC_UNUSED g_autofree char *o2 = rewrite (m2, "left: checksum-mismatch", (const char *[]) { ALLOW, NULL });
}

/* Without allow_networks every loopback form is refused at connect time. */
static void
test_refused (void)
{
  const char *hosts[] = { "127.0.0.1", "localhost", "[::1]", "0x7f.1", "2130706433", "[::ffff:127.0.0.1]", "127.1", "017700000001" };
  for (guint i = 0; i < G_N_ELEMENTS (hosts); i++) {
    g_autofree char *u = g_strdup_printf ("http://%s:%u/text", hosts[i], srv->port);
    g_autoptr (GBytes) m = message (u, NULL, "Content-Type: text/plain\r\n");
    G_GNUC_UNUSED g_autofree char *o = rewrite (m, "left: refused-address: fetch policy refused the address (refused address", NULL);
  }
  /* on the default port too, and a port outside allow_ports under a global address is refused before anything */
  g_autoptr (GBytes) m = message ("http://127.0.0.1/text", NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o = rewrite (m, "left: refused-address", NULL);
  /* 127.0.0.2 allowed alone redirecting to 127.0.0.1: refused in the redirect */
  g_autofree char *to = g_strdup_printf ("http://127.0.0.1:%u/text", srv->port);
  g_autofree char *esc = g_uri_escape_string (to, NULL, TRUE);
  g_autofree char *u2 = g_strdup_printf ("http://127.0.0.2:%u/redirect?to=%s", srv2->port, esc);
  g_autoptr (GBytes) m2 = message (u2, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o2 = rewrite (m2, "left: refused-address: fetch policy refused the address (refused address 127.0.0.1",
                                 (const char *[]) { "--allow-network", "127.0.0.2/32", NULL });
  /* deny wins over allow */
  g_autofree char *u3 = url ("/text");
  g_autoptr (GBytes) m3 = message (u3, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o3 = rewrite (m3, "left: refused-address", (const char *[]) { ALLOW, "-o", "deny_networks=127.0.0.0/8", NULL });
}

static void
test_policy_other (void)
{
  g_autofree char *u = url ("/text");
  g_autoptr (GBytes) m = message (u, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o1 = rewrite (m, "left: fetch-off: fetching is off (fetch = off) (scheme \"http\")",
                                 (const char *[]) { "--allow-network", "127.0.0.1/32", "-o", "fetch=off", NULL });
  G_GNUC_UNUSED g_autofree char *o2 = rewrite (m, "left: scheme-disabled", (const char *[]) { ALLOW, "-o", "allow_schemes=https", NULL });
  g_autofree char *cred = g_strdup_printf ("http://u:p@127.0.0.1:%u/text", srv->port);
  g_autoptr (GBytes) m3 = message (cred, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o3 = rewrite (m3, "left: credentials", (const char *[]) { ALLOW, NULL });
  g_autoptr (GBytes) m4 = message ("file:///etc/passwd", NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o4 = rewrite (m4, "left: scheme-disabled", (const char *[]) { ALLOW, NULL });
  g_autofree char *lh = g_strdup_printf ("http://localhost:%u/text", srv->port);
  g_autoptr (GBytes) m5 = message (lh, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o5 = rewrite (m5, "left: refused-domain", (const char *[]) { ALLOW, "-o", "deny_domains=localhost", NULL });
  G_GNUC_UNUSED g_autofree char *o6 = rewrite (m5, "left: refused-domain", (const char *[]) { ALLOW, "-o", "allow_domains=example.org", NULL });
}

/* Three references to one URL and one to another: two requests; with one
 * request per host allowed, the second URL is rate-limited. */
static void
test_dedupe_and_rate (void)
{
  g_autofree char *a = url ("/slow?ms=50");
  g_autofree char *b = url ("/text");
  g_autofree char *m = g_strdup_printf (
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: message/external-body; access-type=URL; URL=\"%s\"\n\nContent-Type: text/plain\n\n"
    "--b\nContent-Type: message/external-body; access-type=URL; URL=\"%s\"\n\nContent-Type: text/plain\n\n"
    "--b\nContent-Type: message/external-body; access-type=URL; URL=\"%s\"\n\nContent-Type: text/plain\n\n"
    "--b\nContent-Type: message/external-body; access-type=URL; URL=\"%s\"\n\nContent-Type: text/plain\n\n"
    "--b--\n", a, a, a, b);
  g_autoptr (GBytes) msg = g_bytes_new (m, strlen (m));
  g_autofree char *hits = url ("/hits");
  g_auto (CmdResult) h0 = { 0 };
  g_autoptr (GBytes) hm = message (hits, NULL, "Content-Type: text/plain\r\n");
  RUN (&h0, hm, "rewrite", "-c", empty_conf, ALLOW);
  g_autofree char *before_out = bytes_str (h0.out);
  const char *hb = strstr (before_out, "\r\n\r\n--b--");
  g_assert_nonnull (hb);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, msg, "rewrite", "--report", "-c", empty_conf, ALLOW);
  g_autofree char *err = bytes_str (r.err);
  g_assert_cmpuint (n_lines (r.err), ==, 4);
  g_assert_nonnull (strstr (err, "part 4: access-type=url"));
  g_auto (CmdResult) h1 = { 0 };
  RUN (&h1, hm, "rewrite", "-c", empty_conf, ALLOW);
  /* hits counter: the body of the resolved /hits part, before and after */
  g_autofree char *after_out = bytes_str (h1.out);
  int before = 0, after = 0;
  const char *p = strstr (before_out, "7bit\r\nX-Extbody");
  g_assert_nonnull (p);
  p = strstr (p, "\r\n\r\n");
  before = atoi (p + 4);
  p = strstr (strstr (after_out, "7bit\r\nX-Extbody"), "\r\n\r\n");
  after = atoi (p + 4);
  /* the /hits request itself, plus exactly two fetches for the four references */
  g_assert_cmpint (after - before, ==, 3);
  g_assert_null (strstr (err, "left"));

  g_auto (CmdResult) rl = { 0 };
  /* one a minute: the second URL's slot comes after the 2 s deadline */
  RUN (&rl, msg, "rewrite", "--report", "-c", empty_conf, ALLOW, "-o", "max_requests_per_host=1",
       "-o", "message_deadline=2");
  g_autofree char *err2 = bytes_str (rl.err);
  g_test_message ("rate-limited run: %s", err2);
  g_assert_nonnull (strstr (err2, "part 4: access-type=url"));
  g_assert_nonnull (strstr (err2, "left: rate-limited"));
}

static void
test_inspect (void)
{
  g_autofree char *u = url ("/text");
  g_autoptr (GBytes) m = message (u, NULL, "Content-Type: text/plain\r\n");
  g_auto (CmdResult) r = { 0 };
  RUN (&r, m, "inspect", "--json", "-c", empty_conf, "-o", "fetch=on", "--allow-network", "127.0.0.1/32", "-");
  g_autofree char *out = bytes_str (r.out);
  g_assert_nonnull (strstr (out, "\"action\":\"fetch\",\"reason\":\"would-fetch\""));
  g_auto (CmdResult) r2 = { 0 };
  RUN (&r2, m, "inspect", "--json", "--fetch", "-c", empty_conf, ALLOW, "-");
  g_autofree char *out2 = bytes_str (r2.out);
  g_assert_nonnull (strstr (out2, "\"action\":\"resolve\",\"reason\":\"resolved\""));
}

/* https with a certificate made for the test, trusted through ca_file. */
static void
test_https (void)
{
  g_autofree char *openssl = g_find_program_in_path ("openssl");
  if (!openssl) {
    g_test_skip ("openssl not installed");
    return;
  }
  g_autofree char *dir = g_dir_make_tmp ("extbody-tls-XXXXXX", NULL);
  g_autofree char *cert = g_build_filename (dir, "cert.pem", NULL);
  g_autofree char *key = g_build_filename (dir, "key.pem", NULL);
  g_autofree char *wcert = g_build_filename (dir, "wrong.pem", NULL);
  g_autofree char *wkey = g_build_filename (dir, "wrongkey.pem", NULL);
  g_autofree char *cmd = g_strdup_printf (
    "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
    "-addext subjectAltName=IP:127.0.0.1 -keyout '%s' -out '%s' 2>/dev/null && "
    "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=wrong.example "
    "-addext subjectAltName=DNS:wrong.example -keyout '%s' -out '%s' 2>/dev/null",
    key, cert, wkey, wcert);
  int status = 0;
  g_assert_true (g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", cmd, NULL }, NULL, 0, NULL, NULL,
                               NULL, NULL, &status, NULL));
  g_assert_cmpint (status, ==, 0);
  TestServer *tls = server_start ("127.0.0.1", cert, key);
  g_autofree char *u = g_strdup_printf ("https://127.0.0.1:%u/text", tls->port);
  g_autoptr (GBytes) m = message (u, NULL, "Content-Type: text/plain\r\n");
  g_autofree char *ca = g_strdup_printf ("ca_file=%s", cert);
  G_GNUC_UNUSED g_autofree char *o1 = rewrite (m, "resolved (text/plain, 27 bytes", (const char *[]) { ALLOW, "-o", ca, NULL });
  G_GNUC_UNUSED g_autofree char *o2 = rewrite (m, "left: fetch-failed", (const char *[]) { ALLOW, NULL });
  test_server_stop (tls);
  /* a certificate for another name is refused even when its CA is trusted */
  TestServer *wrong = server_start ("127.0.0.1", wcert, wkey);
  g_autofree char *u2 = g_strdup_printf ("https://127.0.0.1:%u/text", wrong->port);
  g_autoptr (GBytes) m2 = message (u2, NULL, "Content-Type: text/plain\r\n");
  g_autofree char *wca = g_strdup_printf ("ca_file=%s", wcert);
  G_GNUC_UNUSED g_autofree char *o3 = rewrite (m2, "left: fetch-failed", (const char *[]) { ALLOW, "-o", wca, NULL });
  test_server_stop (wrong);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", rm, NULL }, NULL, 0, NULL, NULL, NULL, NULL,
                NULL, NULL);
}

/* ---- ftp ------------------------------------------------------------------ */

typedef struct {
  TestServer  *server;  /* (nullable) when it would not start */
  guint        port;
  char        *root;
  char        *log;
  gsize        seen;   /* bytes of the log already returned */
} Ftp;

static Ftp *
ftp_start (guint port)
{
  Ftp *f = g_new0 (Ftp, 1);
  f->root = g_dir_make_tmp ("extbody-ftp-XXXXXX", NULL);
  g_autofree char *pub = g_build_filename (f->root, "pub", NULL);
  g_mkdir (pub, 0755);
  g_autofree char *text = g_build_filename (pub, "text.txt", NULL);
  g_file_set_contents (text, "line one\nline two\n", -1, NULL);
  g_autofree char *bin = g_build_filename (pub, "bin.dat", NULL);
  g_file_set_contents (bin, "\x00\x01\x02\xff", 4, NULL);
  f->log = g_build_filename (f->root, "commands.log", NULL);
  g_autofree char *p = g_strdup_printf ("%u", port);
  /* pyftpdlib logs every command on standard error; without it (or port 21)
   * the server does not announce a port and the caller skips */
  f->server = test_server_start ("ftpd.py", (const char *[]) { f->root, "--port", p, "--log", f->log, NULL },
                                 NULL, TRUE, NULL);
  f->port = f->server ? f->server->port : 0;
  return f;
}

static void
ftp_stop (Ftp *f)
{
  g_clear_pointer (&f->server, test_server_stop);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", f->root);
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", rm, NULL }, NULL, 0, NULL, NULL, NULL, NULL,
                NULL, NULL);
  g_free (f->root);
  g_free (f->log);
  g_free (f);
}

/* The commands the server received since the last call, as one string. */
static char *
ftp_trace (Ftp *f)
{
  g_autofree char *all = NULL;
  gsize len = 0;
  g_file_get_contents (f->log, &all, &len, NULL);
  if (!all || len <= f->seen)
    return g_strdup ("");
  char *news = g_strndup (all + f->seen, len - f->seen);
  f->seen = len;
  return news;
}

static void
test_ftp (void)
{
  Ftp *f = ftp_start (0);
  if (!f || !f->port) {
    g_test_skip ("python3-pyftpdlib not available");
    if (f)
      ftp_stop (f);
    return;
  }
  g_free (ftp_trace (f));
  /* ;type=a: TYPE A, one CWD per path segment, RETR */
  g_autofree char *a = g_strdup_printf ("ftp://127.0.0.1:%u/pub/text.txt;type=a", f->port);
  g_autoptr (GBytes) ma = message (a, NULL, "Content-Type: text/plain\r\n");
  g_autofree char *oa = rewrite (ma, "resolved (text/plain, 18 bytes, 7bit)", (const char *[]) { ALLOW, NULL });
  g_assert_nonnull (strstr (oa, "\r\n\r\nline one\r\nline two\r\n"));
  g_autofree char *ta = ftp_trace (f);
  g_test_message ("trace: %s", ta);
  g_assert_nonnull (strstr (ta, "USER anonymous\n"));
  g_assert_nonnull (strstr (ta, "CWD pub\n"));
  g_assert_nonnull (strstr (ta, "TYPE A\n"));
  g_assert_nonnull (strstr (ta, "RETR text.txt\n"));
  /* ;type=i: TYPE I, binary data, the server names no type: the inner header governs */
  g_autofree char *i = g_strdup_printf ("ftp://127.0.0.1:%u/pub/bin.dat;type=i", f->port);
  g_autoptr (GBytes) mi = message (i, NULL, "Content-Type: application/x-thing\r\n");
  g_autofree char *oi = rewrite (mi, "resolved (application/x-thing, 4 bytes, base64)", (const char *[]) { ALLOW, NULL });
  g_assert_nonnull (strstr (oi, "AAEC/w=="));
  g_autofree char *ti = ftp_trace (f);
  g_assert_nonnull (strstr (ti, "TYPE I\n"));
  /* %2F: an absolute first CWD */
  g_autofree char *abs = g_strdup_printf ("ftp://127.0.0.1:%u/%%2Fpub/text.txt", f->port);
  g_autoptr (GBytes) mabs = message (abs, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *oabs = rewrite (mabs, "resolved", (const char *[]) { ALLOW, NULL });
  g_autofree char *tabs = ftp_trace (f);
  g_assert_nonnull (strstr (tabs, "CWD /\nCWD pub\n"));
  /* ;type=d is a listing, not a body: never fetched */
  g_autofree char *d = g_strdup_printf ("ftp://127.0.0.1:%u/pub;type=d", f->port);
  g_autoptr (GBytes) md = message (d, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *od = rewrite (md, "left: not-document: the URL names a listing, menu or search, not a document (an ftp directory listing (;type=d)", (const char *[]) { ALLOW, NULL });
  g_autofree char *td = ftp_trace (f);
  g_assert_cmpstr (td, ==, "");
  /* a path ending in '/' names a directory: never fetched either */
  g_autofree char *dir = g_strdup_printf ("ftp://127.0.0.1:%u/pub/", f->port);
  g_autoptr (GBytes) mdir = message (dir, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *odir = rewrite (mdir, "left: not-document: the URL names a listing, menu or search, not a document (an ftp URL naming a directory", (const char *[]) { ALLOW, NULL });
  g_autofree char *tdir = ftp_trace (f);
  g_assert_cmpstr (tdir, ==, "");
  /* ;type=A (any case) and an announced size: the ASCII transfer's bytes are used */
  g_autofree char *up = g_strdup_printf ("ftp://127.0.0.1:%u/pub/text.txt;TYPE=A", f->port);
  g_autoptr (GBytes) mup = message (up, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *oup = rewrite (mup, "resolved (text/plain, 18 bytes, 7bit)", (const char *[]) { ALLOW, NULL });
  g_autofree char *tup = ftp_trace (f);
  g_assert_nonnull (strstr (tup, "TYPE A\n"));
  /* not allowed: refused at connect, nothing reaches the server */
  G_GNUC_UNUSED g_autofree char *o5 = rewrite (ma, "left: refused-address", NULL);
  g_autofree char *t5 = ftp_trace (f);
  g_assert_cmpstr (t5, ==, "");
  /* a missing file */
  g_autofree char *miss = g_strdup_printf ("ftp://127.0.0.1:%u/pub/none.txt", f->port);
  g_autoptr (GBytes) mm = message (miss, NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *om = rewrite (mm, "left: fetch-failed", (const char *[]) { ALLOW, NULL });
  ftp_stop (f);
}

/* ---- gopher ----------------------------------------------------------------- */

/* Debian's gophernicus through tests/servers/gopherd.py, one process per
 * connection as inetd runs it; and the script's own misbehaving answers. */
static void
test_gopher (void)
{
  g_autofree char *root = g_dir_make_tmp ("extbody-gopher-XXXXXX", NULL);
  g_assert_cmpint (g_chmod (root, 0755), ==, 0);   /* gophernicus runs as nobody under root */
  g_autofree char *text = g_build_filename (root, "text.txt", NULL);
  g_assert_true (g_file_set_contents (text, "line one\n.dot line\nlast\n", -1, NULL));
  g_autofree char *bin = g_build_filename (root, "bin.dat", NULL);
  g_assert_true (g_file_set_contents (bin, "\x00\x01\x02\xff", 4, NULL));
  g_autofree char *gif = g_build_filename (root, "pic.gif", NULL);
  g_assert_true (g_file_set_contents (gif, "GIF89a\x01\x00\x01\x00", 10, NULL));
  for (const char *const *f = (const char *[]) { text, bin, gif, NULL }; *f; f++)
    g_assert_cmpint (g_chmod (*f, 0644), ==, 0);
  g_autoptr (GError) error = NULL;
  TestServer *g = test_server_start ("gopherd.py", (const char *[]) { root, NULL },
                                     (const char *[]) { "GOPHER ", "RAW ", NULL }, FALSE, &error);
  g_assert_no_error (error);
  guint gp = g->ports[0], raw = g->ports[1];
  if (!gp) {
    test_server_stop (g);
    g_test_skip ("gophernicus not installed");
    return;
  }
#define GOPHER ALLOW, "-o", "allow_schemes=gopher"
  /* type 0: text, as the server sends it (gophernicus: CR LF line ends) */
  g_autofree char *u0 = g_strdup_printf ("gopher://127.0.0.1:%u/0/text.txt", gp);
  g_autoptr (GBytes) m0 = message (u0, NULL, "Content-Type: text/plain\r\n");
  g_autofree char *o0 = rewrite (m0, "resolved (text/plain, 27 bytes, 7bit)", (const char *[]) { GOPHER, NULL });
  g_assert_nonnull (strstr (o0, "\r\n\r\nline one\r\n.dot line\r\nlast\r\n\r\n--b--"));
  g_autofree char *trace = g_strdup_printf ("X-Extbody-Resolved: access-type=URL;\r\n\tURL=\"gopher://127.0.0.1:%u/0/text.txt\";", gp);
  g_assert_nonnull (strstr (o0, trace));
  /* type 9: binary; I: an image; gopher names no type: the inner header governs */
  g_autofree char *u9 = g_strdup_printf ("gopher://127.0.0.1:%u/9/bin.dat", gp);
  g_autoptr (GBytes) m9 = message (u9, NULL, "Content-Type: application/x-thing\r\n");
  g_autofree char *o9 = rewrite (m9, "resolved (application/x-thing, 4 bytes, base64)", (const char *[]) { GOPHER, NULL });
  g_assert_nonnull (strstr (o9, "AAEC/w=="));
  g_autofree char *ui = g_strdup_printf ("gopher://127.0.0.1:%u/I/pic.gif", gp);
  g_autoptr (GBytes) mi = message (ui, NULL, "Content-Type: image/gif\r\n");
  G_GNUC_UNUSED g_autofree char *oi = rewrite (mi, "resolved (image/gif, 10 bytes, base64)", (const char *[]) { GOPHER, NULL });
  /* with no inner type: application/octet-stream */
  g_autoptr (GBytes) mn = message (u9, NULL, "Content-ID: <g@x>\r\n");
  G_GNUC_UNUSED g_autofree char *on = rewrite (mn, "resolved (application/octet-stream, 4 bytes", (const char *[]) { GOPHER, NULL });
  /* the policy: off by default, not in allow_schemes, the connected address */
  G_GNUC_UNUSED g_autofree char *off = rewrite (m0, "left: fetch-off", (const char *[]) { "-o", "fetch=off", "-o", "allow_schemes=gopher", NULL });
  G_GNUC_UNUSED g_autofree char *dis = rewrite (m0, "left: scheme-disabled", (const char *[]) { ALLOW, NULL });
  G_GNUC_UNUSED g_autofree char *adr = rewrite (m0, "left: refused-address", (const char *[]) { "--fetch", "-o", "allow_schemes=gopher", NULL });
  /* port 70 is not in the default allow_ports: outside allow_networks a
   * gopher server must have its port named */
  G_GNUC_UNUSED g_autofree char *pt = rewrite (m0, "left: refused-address", (const char *[]) { "--fetch", "-o", "allow_schemes=gopher", "-o", "allow_ports=70", NULL });
  /* menus, searches, telnet items: never fetched */
  struct { const char *path; const char *want; } left[] = {
    { "", "left: not-document: the URL names a listing, menu or search, not a document (gopher item type 1 is a menu)" },
    { "/", "left: not-document" },
    { "/1/", "left: not-document" },
    { "/7/search%09x", "left: not-document: the URL names a listing, menu or search, not a document (gopher item type 7 is a search)" },
    { "/8/host", "left: not-retrieval: the URL retrieves nothing (RFC 2017 section 3) (gopher item type 8 is a telnet session)" },
    { "/T/host", "left: not-retrieval" },
    { "/h/URL:http://example.org/", "left: not-document" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (left); i++) {
    g_autofree char *u = g_strdup_printf ("gopher://127.0.0.1:%u%s", raw, left[i].path);
    g_autoptr (GBytes) m = message (u, NULL, "Content-Type: text/plain\r\n");
    G_GNUC_UNUSED g_autofree char *o = rewrite (m, left[i].want, (const char *[]) { GOPHER, NULL });
  }
  /* RFC 1436's "." line ends a text item: removed; lines are not un-stuffed */
  g_autofree char *ud = g_strdup_printf ("gopher://127.0.0.1:%u/0/dot", raw);
  g_autoptr (GBytes) md = message (ud, NULL, "Content-Type: text/plain\r\n");
  g_autofree char *od = rewrite (md, "resolved (text/plain, 34 bytes, 7bit)", (const char *[]) { GOPHER, NULL });
  g_assert_nonnull (strstr (od, "\r\n\r\nfirst line\r\n..stuffed\r\nlast line\r\n\r\n--b--"));
  /* a binary item keeps a final "." line: it is data */
  g_autofree char *ud9 = g_strdup_printf ("gopher://127.0.0.1:%u/9/dot", raw);
  g_autoptr (GBytes) md9 = message (ud9, NULL, "Content-Type: application/octet-stream\r\n");
  G_GNUC_UNUSED g_autofree char *od9 = rewrite (md9, "resolved (application/octet-stream, 37 bytes", (const char *[]) { GOPHER, NULL });
  /* an error item instead of the document */
  g_autofree char *ue = g_strdup_printf ("gopher://127.0.0.1:%u/9/error", raw);
  g_autoptr (GBytes) me = message (ue, NULL, "Content-Type: application/octet-stream\r\n");
  G_GNUC_UNUSED g_autofree char *oe = rewrite (me, "left: fetch-failed: fetch failed (the gopher server answered with an error item: '/error' does not exist (no handler found))", (const char *[]) { GOPHER, NULL });
  /* bytes: no size is ever announced, the limit holds as they arrive */
  g_autofree char *ub = g_strdup_printf ("gopher://127.0.0.1:%u/9/big?3000000", raw);
  g_autoptr (GBytes) mb = message (ub, NULL, "Content-Type: application/octet-stream\r\n");
  G_GNUC_UNUSED g_autofree char *ob = rewrite (mb, "left: part-too-large: data larger than max_part_bytes (more than 1048576 bytes)", (const char *[]) { GOPHER, "-o", "max_part_bytes=1M", NULL });
  G_GNUC_UNUSED g_autofree char *ob2 = rewrite (mb, "left: message-budget", (const char *[]) { GOPHER, "-o", "max_message_bytes=1M", NULL });
  G_GNUC_UNUSED g_autofree char *ob3 = rewrite (mb, "resolved (application/octet-stream, 3000000 bytes", (const char *[]) { GOPHER, NULL });
  /* time: a server that trickles is cut at the deadline */
  g_autofree char *us = g_strdup_printf ("gopher://127.0.0.1:%u/9/slow", raw);
  g_autoptr (GBytes) ms = message (us, NULL, "Content-Type: application/octet-stream\r\n");
  gint64 t0 = g_get_monotonic_time ();
  G_GNUC_UNUSED g_autofree char *os = rewrite (ms, "left: timed-out", (const char *[]) { GOPHER, "-o", "message_deadline=2", NULL });
  g_assert_cmpint (g_get_monotonic_time () - t0, <, 10 * G_USEC_PER_SEC);
#undef GOPHER
  test_server_stop (g);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", root);
  g_assert_cmpint (system (rm), ==, 0);
}

/* ---- news and nntp ------------------------------------------------------------ */

#define ARTICLE "From: poster@example.org\r\nNewsgroups: misc.test\r\nSubject: an article\r\n" \
  "Message-ID: <art1@news.example.org>\r\n\r\nfirst line\r\n.a line with a dot\r\n..two dots\r\nend\r\n"

/* The server's command log without its QUIT lines, once it says @want, or
 * after 5 s (QUIT is sent, never waited for: the server may log it after
 * extbody is done, even after the next connection's first command). */
static char *
log_wait (const char *log, const char *want)
{
  GString *got = g_string_new (NULL);
  for (guint i = 0; i < 100; i++) {
    g_autofree char *all = NULL;
    g_file_get_contents (log, &all, NULL, NULL);
    g_string_truncate (got, 0);
    g_auto (GStrv) lines = g_strsplit (all ? all : "", "\n", -1);
    for (guint k = 0; lines[k]; k++)
      if (*lines[k] && strcmp (lines[k], "QUIT") != 0)
        g_string_append_printf (got, "%s\n", lines[k]);
    if (strcmp (got->str, want) == 0)
      break;
    g_usleep (50000);
  }
  return g_string_free (got, FALSE);
}

/* tests/servers/nntpd.py: articles from a spool, and hostile groups */
static void
test_nntp (void)
{
  g_autofree char *root = g_dir_make_tmp ("extbody-nntp-XXXXXX", NULL);
  g_autofree char *group = g_build_filename (root, "misc.test", NULL);
  g_assert_cmpint (g_mkdir (group, 0755), ==, 0);
  g_autofree char *a1 = g_build_filename (group, "1", NULL);
  g_assert_true (g_file_set_contents (a1, ARTICLE, -1, NULL));
  g_autofree char *log = g_build_filename (root, "commands.log", NULL);
  g_autoptr (GError) error = NULL;
  TestServer *s = test_server_start ("nntpd.py", (const char *[]) { root, "--log", log, NULL },
                                     (const char *[]) { "NNTP ", "BUSY ", NULL }, FALSE, &error);
  g_assert_no_error (error);
  guint np = s->ports[0], busy = s->ports[1];
  g_autofree char *server = g_strdup_printf ("nntp_server=127.0.0.1:%u", np);
#define NEWS ALLOW, "-o", "allow_schemes=news, nntp", "-o", server
  /* nntp://HOST:PORT/GROUP/NUMBER: GROUP, ARTICLE; the article whole, unstuffed */
  g_autofree char *u1 = g_strdup_printf ("nntp://127.0.0.1:%u/misc.test/1", np);
  g_autoptr (GBytes) m1 = message (u1, NULL, "Content-Type: message/rfc822\r\n");
  g_autofree char *want1 = g_strdup_printf ("resolved (message/rfc822, %zu bytes, 7bit)", strlen (ARTICLE));
  g_autofree char *o1 = rewrite (m1, want1, (const char *[]) { NEWS, NULL });
  g_assert_nonnull (strstr (o1, "\r\n\r\n" ARTICLE "\r\n--b--"));
  g_autofree char *l1 = log_wait (log, "GROUP misc.test\nARTICLE 1\n");
  g_assert_cmpstr (l1, ==, "GROUP misc.test\nARTICLE 1\n");
  /* news:MESSAGE-ID from nntp_server; with no inner type: message/rfc822 */
  g_autoptr (GBytes) m2 = message ("news:art1@news.example.org", NULL, "Content-ID: <n@x>\r\n");
  g_autofree char *o2 = rewrite (m2, want1, (const char *[]) { NEWS, NULL });
  g_assert_nonnull (strstr (o2, "Content-Type: message/rfc822\r\n"));
  /* the inner header's type governs: an article is no text/plain */
  g_autoptr (GBytes) m3 = message ("news:art1@news.example.org", NULL, "Content-Type: text/plain\r\n");
  G_GNUC_UNUSED g_autofree char *o3 = rewrite (m3, "left: type-mismatch", (const char *[]) { NEWS, NULL });
  /* refusals, before any connection */
  g_autoptr (GBytes) mg = message ("news:misc.test", NULL, "Content-Type: message/rfc822\r\n");
  G_GNUC_UNUSED g_autofree char *og = rewrite (mg, "left: not-document", (const char *[]) { NEWS, NULL });
  g_autoptr (GBytes) ma = message ("news:*", NULL, "Content-Type: message/rfc822\r\n");
  G_GNUC_UNUSED g_autofree char *oa = rewrite (ma, "left: not-document", (const char *[]) { NEWS, NULL });
  g_autofree char *ug = g_strdup_printf ("nntp://127.0.0.1:%u/misc.test", np);
  g_autoptr (GBytes) mng = message (ug, NULL, "Content-Type: message/rfc822\r\n");
  G_GNUC_UNUSED g_autofree char *ong = rewrite (mng, "left: not-document", (const char *[]) { NEWS, NULL });
  G_GNUC_UNUSED g_autofree char *od = rewrite (m2, "left: scheme-disabled", (const char *[]) { ALLOW, "-o", server, NULL });
  G_GNUC_UNUSED g_autofree char *ons = rewrite (m2, "left: scheme-disabled: scheme not enabled (scheme \"news\": nntp_server is empty)", (const char *[]) { ALLOW, "-o", "allow_schemes=news", NULL });
  G_GNUC_UNUSED g_autofree char *oad = rewrite (m1, "left: refused-address", (const char *[]) { "--fetch", "-o", "allow_schemes=nntp", NULL });
  G_GNUC_UNUSED g_autofree char *odm = rewrite (m1, "left: refused-domain", (const char *[]) { NEWS, "-o", "allow_domains=example.org", NULL });
  G_GNUC_UNUSED g_autofree char *opx = rewrite (m1, "left: fetch-failed: fetch failed (NNTP is never fetched through proxy", (const char *[]) { NEWS, "-o", "proxy=http://127.0.0.1:9/", NULL });
  const char *want2 = "GROUP misc.test\nARTICLE 1\nARTICLE <art1@news.example.org>\n"
                      "ARTICLE <art1@news.example.org>\n";
  g_autofree char *l2 = log_wait (log, want2);
  g_assert_cmpstr (l2, ==, want2);
  /* the server's refusals */
  struct { const char *path; const char *want; const char *const *opts; } cases[] = {
    { "/misc.test/9", "left: fetch-failed: fetch failed (NNTP 423 after ARTICLE: no such article number)", NULL },
    { "/no.such.group/1", "left: fetch-failed: fetch failed (NNTP 411 after GROUP: no such group)", NULL },
    { "/hostile.longline/1", "left: fetch-failed: fetch failed (NNTP: a data line longer than 65536 bytes)", NULL },
    { "/hostile.noterm/1", "left: fetch-failed: fetch failed (NNTP: the server closed the connection before the end of its answer)", NULL },
    { "/hostile.garbage/1", "left: fetch-failed: fetch failed (NNTP: a malformed status line)", NULL },
    { "/hostile.huge/1", "left: part-too-large: data larger than max_part_bytes (more than 1048576 bytes)",
      (const char *[]) { "-o", "max_part_bytes=1M", NULL } },
    { "/hostile.huge/1", "left: message-budget", (const char *[]) { "-o", "max_message_bytes=1M", NULL } },
    /* (an article is message/rfc822: accepted as the inner header's type) */
    { "/hostile.huge/1", "resolved (application/octet-stream, 3000014 bytes",
      (const char *[]) { "-o", "content_type_mismatch=accept", NULL } },
    { "/hostile.longline/1", "resolved (application/octet-stream, 100016 bytes",
      (const char *[]) { "-o", "nntp_max_line_bytes=100000", "-o", "content_type_mismatch=accept", NULL } },
    { "/hostile.stuffed/1", "resolved (application/octet-stream, 33 bytes",
      (const char *[]) { "-o", "content_type_mismatch=accept", NULL } },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *u = g_strdup_printf ("nntp://127.0.0.1:%u%s", np, cases[i].path);
    g_autoptr (GBytes) m = message (u, NULL, "Content-Type: application/octet-stream\r\n");
    g_autoptr (GPtrArray) args = g_ptr_array_new ();
    for (const char *const *a = (const char *[]) { NEWS, NULL }; *a; a++)
      g_ptr_array_add (args, (gpointer) *a);
    for (guint k = 0; cases[i].opts && cases[i].opts[k]; k++)
      g_ptr_array_add (args, (gpointer) cases[i].opts[k]);
    g_ptr_array_add (args, NULL);
    g_autofree char *o = rewrite (m, cases[i].want, (const char *const *) args->pdata);
    if (strstr (cases[i].path, "stuffed")) {
      const char *plain = "Subject: dots\r\n\r\n.\r\n..\r\n.x\r\nend\r\n";
      g_autofree char *b64 = g_base64_encode ((const guchar *) plain, strlen (plain));
      g_assert_nonnull (strstr (o, b64));
    }
  }
  g_autofree char *ub = g_strdup_printf ("nntp://127.0.0.1:%u/misc.test/1", busy);
  g_autoptr (GBytes) mb = message (ub, NULL, "Content-Type: message/rfc822\r\n");
  G_GNUC_UNUSED g_autofree char *ob = rewrite (mb, "left: fetch-failed: fetch failed (NNTP greeting 502: go away)", (const char *[]) { NEWS, NULL });
  g_autoptr (GBytes) mm = message ("news:none@news.example.org", NULL, "Content-Type: message/rfc822\r\n");
  G_GNUC_UNUSED g_autofree char *omm = rewrite (mm, "left: fetch-failed: fetch failed (NNTP 430 after ARTICLE: no such article)", (const char *[]) { NEWS, NULL });
  /* a server that trickles is cut at the deadline */
  g_autofree char *us = g_strdup_printf ("nntp://127.0.0.1:%u/hostile.slow/1", np);
  g_autoptr (GBytes) ms = message (us, NULL, "Content-Type: message/rfc822\r\n");
  gint64 t0 = g_get_monotonic_time ();
  G_GNUC_UNUSED g_autofree char *os = rewrite (ms, "left: timed-out: fetch timed out (NNTP: the deadline passed)", (const char *[]) { NEWS, "-o", "message_deadline=2", NULL });
  g_assert_cmpint (g_get_monotonic_time () - t0, <, 8 * G_USEC_PER_SEC);
  G_GNUC_UNUSED g_autofree char *os2 = rewrite (ms, "left: timed-out", (const char *[]) { NEWS, "-o", "fetch_timeout=2", NULL });
  g_assert_cmpint (g_get_monotonic_time () - t0, <, 14 * G_USEC_PER_SEC);
  /* a message with an http reference and a news one: both */
  g_autofree char *hu = url ("/text");
  g_autofree char *two = g_strdup_printf (
    "From: a@example.org\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n\tURL=\"news:art1@news.example.org\"\r\n\r\n"
    "Content-Type: message/rfc822\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n\tURL=\"%s\"\r\n\r\n"
    "Content-Type: text/plain\r\n\r\n--b--\r\n", hu);
  g_autoptr (GBytes) m2r = g_bytes_new (two, strlen (two));
  g_autofree char *o2r = rewrite (m2r, "/text: resolved (text/plain", (const char *[]) { NEWS, "-o", "allow_schemes=news, nntp, http", NULL });
  g_assert_nonnull (strstr (o2r, ARTICLE));
  g_assert_nonnull (strstr (o2r, "hello from the test server"));
#undef NEWS
  test_server_stop (s);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", root);
  g_assert_cmpint (system (rm), ==, 0);
}

/* Debian's leafnode (tests/servers/leafnoded.py: run per connection in a
 * mount namespace of its own over a spool built for the test) */
static void
test_nntp_leafnode (void)
{
  static const char art[] = "From: poster@example.org\nNewsgroups: local.test\nSubject: leafnode\n"
                            "Date: Fri, 27 Nov 2026 10:00:00 +0000\nPath: x\nMessage-ID: <leaf1@news.example.org>\n\n"
                            "first line\n.a line with a dot\n..two dots\nend\n";
  static const char art2[] = "From: poster@example.org\nNewsgroups: local.test\nSubject: two\n"
                             "Date: Fri, 27 Nov 2026 10:00:00 +0000\nPath: x\nMessage-ID: <leaf2@news.example.org>\n\nsecond\n";
  g_autofree char *root = g_dir_make_tmp ("extbody-leafnode-XXXXXX", NULL);
  g_autofree char *group = g_build_filename (root, "local.test", NULL);
  g_assert_cmpint (g_mkdir (group, 0755), ==, 0);
  g_autofree char *a1 = g_build_filename (group, "1", NULL);
  g_autofree char *a2 = g_build_filename (group, "2", NULL);
  g_assert_true (g_file_set_contents (a1, art, -1, NULL));
  g_assert_true (g_file_set_contents (a2, art2, -1, NULL));
  g_autoptr (GError) error = NULL;
  TestServer *s = test_server_start ("leafnoded.py", (const char *[]) { root, NULL },
                                     (const char *[]) { "NNTP ", NULL }, FALSE, &error);
  g_assert_no_error (error);
  guint np = s->ports[0];
  if (!np) {
    test_server_stop (s);
    g_test_skip ("leafnode needs root and the leafnode package");
    return;
  }
  g_autofree char *crlf = NULL;
  {
    g_auto (GStrv) lines = g_strsplit (art, "\n", -1);
    crlf = g_strjoinv ("\r\n", lines);
  }
  g_autofree char *want = g_strdup_printf ("resolved (message/rfc822, %zu bytes, 7bit)", strlen (crlf));
  g_autofree char *server = g_strdup_printf ("nntp_server=127.0.0.1:%u", np);
#define NEWS ALLOW, "-o", "allow_schemes=news, nntp", "-o", server
  g_autofree char *u1 = g_strdup_printf ("nntp://127.0.0.1:%u/local.test/1", np);
  g_autoptr (GBytes) m1 = message (u1, NULL, "Content-Type: message/rfc822\r\n");
  g_autofree char *o1 = rewrite (m1, want, (const char *[]) { NEWS, NULL });
  g_assert_nonnull (strstr (o1, crlf));
  g_autoptr (GBytes) m2 = message ("news:leaf1@news.example.org", NULL, "Content-Type: message/rfc822\r\n");
  g_autofree char *o2 = rewrite (m2, want, (const char *[]) { NEWS, NULL });
  g_assert_nonnull (strstr (o2, crlf));
  g_autoptr (GBytes) m3 = message ("news:none@news.example.org", NULL, "Content-Type: message/rfc822\r\n");
  G_GNUC_UNUSED g_autofree char *o3 = rewrite (m3, "left: fetch-failed: fetch failed (NNTP 430 after ARTICLE", (const char *[]) { NEWS, NULL });
  g_autofree char *u4 = g_strdup_printf ("nntp://127.0.0.1:%u/no.such.group/1", np);
  g_autoptr (GBytes) m4 = message (u4, NULL, "Content-Type: message/rfc822\r\n");
  G_GNUC_UNUSED g_autofree char *o4 = rewrite (m4, "left: fetch-failed: fetch failed (NNTP 411 after GROUP", (const char *[]) { NEWS, NULL });
  g_autofree char *u5 = g_strdup_printf ("nntp://127.0.0.1:%u/local.test/7", np);
  g_autoptr (GBytes) m5 = message (u5, NULL, "Content-Type: message/rfc822\r\n");
  G_GNUC_UNUSED g_autofree char *o5 = rewrite (m5, "left: fetch-failed: fetch failed (NNTP 430 after ARTICLE: No such article: 7)", (const char *[]) { NEWS, NULL });
  /* the article is over max_part_bytes */
  G_GNUC_UNUSED g_autofree char *o6 = rewrite (m1, "left: part-too-large", (const char *[]) { NEWS, "-o", "max_part_bytes=100", NULL });
#undef NEWS
  test_server_stop (s);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", root);
  g_assert_cmpint (system (rm), ==, 0);
}

/* access-type=anon-ftp becomes ftp://site/directory/name;type=...; it has no
 * port, so the server must be on 21 (tests run as root in CI; skipped else). */
static void
test_anon_ftp (void)
{
  Ftp *f = ftp_start (21);
  if (!f || !f->port) {
    g_test_skip ("cannot run an FTP server on 127.0.0.1:21 here");
    if (f)
      ftp_stop (f);
    return;
  }
  g_free (ftp_trace (f));
  const char *m =
    "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
    "Content-Type: message/external-body; access-type=anon-ftp;\r\n"
    "\tsite=\"127.0.0.1\"; directory=\"pub\"; name=\"bin.dat\"; mode=\"image\"\r\n\r\n"
    "Content-Type: application/octet-stream\r\n\r\n--b--\r\n";
  g_autoptr (GBytes) msg = g_bytes_new_static (m, strlen (m));
  g_autofree char *o = rewrite (msg, "resolved (application/octet-stream, 4 bytes, base64)", (const char *[]) { ALLOW, NULL });
  g_assert_nonnull (strstr (o, "X-Extbody-Resolved: access-type=anon-ftp;\r\n\tURL=\"ftp://127.0.0.1/pub/bin.dat;type=i\";"));
  g_autofree char *t = ftp_trace (f);
  g_assert_nonnull (strstr (t, "CWD pub\n"));
  g_assert_nonnull (strstr (t, "TYPE I\n"));
  g_assert_nonnull (strstr (t, "RETR bin.dat\n"));
  /* fetch = off: the same reference is only reported */
  G_GNUC_UNUSED g_autofree char *o2 = rewrite (msg, "left: fetch-off", (const char *[]) { "--allow-network", "127.0.0.1/32", "-o", "fetch=off", NULL });
  ftp_stop (f);
}

/* access-type=local-file: only inside local_file_dirs, no escape through ".."
 * or symbolic links, regular files only. */
static GBytes *
local_message (const char *name)
{
  char *m = g_strdup_printf (
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=local-file; name=\"%s\"\n\n"
    "Content-Type: text/plain\n\n--b--\n", name);
  return g_bytes_new_take (m, strlen (m));
}

static void
test_local_file (void)
{
  g_autofree char *top = g_dir_make_tmp ("extbody-local-XXXXXX", NULL);
  g_autofree char *dir = g_build_filename (top, "files", NULL);
  g_autofree char *sib = g_build_filename (top, "files-x", NULL);
  g_autofree char *sub = g_build_filename (dir, "sub", NULL);
  g_mkdir_with_parents (sub, 0755);
  g_mkdir (sib, 0755);
  g_autofree char *ok = g_build_filename (dir, "ok.txt", NULL);
  g_file_set_contents (ok, "local data\n", -1, NULL);
  g_autofree char *sibf = g_build_filename (sib, "f.txt", NULL);
  g_file_set_contents (sibf, "sibling\n", -1, NULL);
  g_autofree char *evil = g_build_filename (dir, "evil", NULL);
  g_assert_cmpint (symlink ("/etc/passwd", evil), ==, 0);
  g_autofree char *inner_link = g_build_filename (dir, "link-to-ok", NULL);
  g_assert_cmpint (symlink (ok, inner_link), ==, 0);
  g_autofree char *dots = g_strdup_printf ("%s/sub/../ok.txt", dir);
  g_autofree char *escape = g_strdup_printf ("%s/../files-x/f.txt", dir);
  g_autofree char *dirs = g_strdup_printf ("local_file_dirs=%s", dir);

  g_autoptr (GBytes) m1 = local_message (ok);
  G_GNUC_UNUSED g_autofree char *o0 = rewrite (m1, "left: local-file-dirs: local-file references not enabled (local_file_dirs is empty) (access-type=local-file)", NULL);
  g_autofree char *o1 = rewrite (m1, "resolved (text/plain, 11 bytes, 7bit)", (const char *[]) { "-o", dirs, NULL });
  g_autofree char *trace = g_strdup_printf ("X-Extbody-Resolved: access-type=local-file;\n\tname=\"%s\";", ok);
  g_assert_nonnull (strstr (o1, trace));
  g_assert_nonnull (strstr (o1, "\n\nlocal data\n"));
  const struct { const char *path; const char *want; } cases[] = {
    { dots, "resolved (text/plain, 11 bytes" },
    { inner_link, "resolved (text/plain, 11 bytes" },
    { evil, "left: refused-path" },
    { escape, "left: refused-path" },
    { sibf, "left: refused-path" },
    { sub, "left: refused-path" },
    { "ok.txt", "left: refused-path" },
    { "/etc/passwd", "left: refused-path" },
    { "/nonexistent/file", "left: refused-path" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (GBytes) m = local_message (cases[i].path);
    G_GNUC_UNUSED g_autofree char *o = rewrite (m, cases[i].want, (const char *[]) { "-o", dirs, NULL });
  }
  g_autofree char *small = g_strdup_printf ("max_part_bytes=5");
  G_GNUC_UNUSED g_autofree char *o2 = rewrite (m1, "left: part-too-large", (const char *[]) { "-o", dirs, "-o", small, NULL });
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", top);
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", rm, NULL }, NULL, 0, NULL, NULL, NULL, NULL,
                NULL, NULL);
}

/* The cache is shared by every message one fetcher handles: a second fetch of
 * the same URL within cache_ttl is not sent; with cache_ttl = 0 it is. */
static int
hits_now (void)
{
  g_autofree char *u = url ("/hits");
  g_autofree char *cmd = g_strdup_printf ("curl -s --noproxy '*' '%s'", u);
  g_autofree char *out = NULL;
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", cmd, NULL }, NULL, 0, NULL, NULL, &out, NULL,
                NULL, NULL);
  return out ? atoi (out) : -1;
}

static void
test_cache (void)
{
  g_autofree char *curl = g_find_program_in_path ("curl");
  if (!curl) {
    g_test_skip ("no curl command");
    return;
  }
  g_autoptr (EbConfig) config = eb_config_new ();
  g_assert_true (eb_config_set (config, "fetch", "on", NULL));
  g_assert_true (eb_config_set (config, "allow_networks", "127.0.0.1/32", NULL));
  g_autoptr (GError) error = NULL;
  g_autoptr (EbFetcher) f = eb_fetcher_new (config, &error);
  g_assert_no_error (error);
  g_autofree char *u = url ("/text");
  const char *urls[] = { u };
  int h0 = hits_now ();
  g_autoptr (GPtrArray) r1 = eb_fetcher_fetch_all (f, urls, 1, 1024);
  g_autoptr (GPtrArray) r2 = eb_fetcher_fetch_all (f, urls, 1, 1024);
  int h1 = hits_now ();
  EbFetchResult *a = g_ptr_array_index (r1, 0), *b = g_ptr_array_index (r2, 0);
  g_assert_cmpint (a->reason, ==, EB_REASON_RESOLVED);
  g_assert_false (a->from_cache);
  g_assert_true (b->from_cache);
  g_assert_true (g_bytes_equal (a->body, b->body));
  g_assert_cmpint (h1 - h0, ==, 2);   /* one fetch + one /hits */

  g_assert_true (eb_config_set (config, "cache_ttl", "0", NULL));
  g_autoptr (EbFetcher) g = eb_fetcher_new (config, &error);
  G_GNUC_UNUSED g_autoptr (GPtrArray) r3 = eb_fetcher_fetch_all (g, urls, 1, 1024);
  g_autoptr (GPtrArray) r4 = eb_fetcher_fetch_all (g, urls, 1, 1024);
  int h2 = hits_now ();
  g_assert_false (((EbFetchResult *) g_ptr_array_index (r4, 0))->from_cache);
  g_assert_cmpint (h2 - h1, ==, 3);
}

/* libcurl obeys proxy variables from the environment unless told not to: with
 * them set to a dead proxy, fetching still goes straight to the server. */
static void
test_env_proxy_ignored (void)
{
  g_autofree char *u = url ("/text");
  g_autoptr (GBytes) m = message (u, NULL, "Content-Type: text/plain\r\n");
  g_setenv ("http_proxy", "http://127.0.0.1:9", TRUE);
  g_setenv ("HTTPS_PROXY", "http://127.0.0.1:9", TRUE);
  g_setenv ("ALL_PROXY", "http://127.0.0.1:9", TRUE);
  G_GNUC_UNUSED g_autofree char *o = rewrite (m, "resolved", (const char *[]) { ALLOW, NULL });
  /* a configured proxy is used (and here, being dead, makes the fetch fail) */
  G_GNUC_UNUSED g_autofree char *o2 = rewrite (m, "left: refused-address", (const char *[]) { ALLOW, "-o", "proxy=http://127.0.0.9:9", NULL });
  g_unsetenv ("http_proxy");
  g_unsetenv ("HTTPS_PROXY");
  g_unsetenv ("ALL_PROXY");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_autofree char *conf_name = g_strdup_printf ("extbody-test-fetch-%d.conf", (int) getpid ());
  empty_conf = g_build_filename (g_get_tmp_dir (), conf_name, NULL);   /* one per run: runs side by side */
  /* fetching is off by default; these tests are about fetching */
  g_file_set_contents (empty_conf, "[extbody]\nfetch = on\n", -1, NULL);
  srv = server_start ("127.0.0.1", NULL, NULL);
  srv2 = server_start ("127.0.0.2", NULL, NULL);
  g_test_add_func ("/fetch/http/resolved", test_resolved);
  g_test_add_func ("/fetch/http/types", test_types);
  g_test_add_func ("/fetch/http/statuses-and-redirects", test_statuses_and_redirects);
  g_test_add_func ("/fetch/limits", test_limits);
  g_test_add_func ("/fetch/content-md5", test_checksum);
  g_test_add_func ("/fetch/policy/refused-addresses", test_refused);
  g_test_add_func ("/fetch/policy/other", test_policy_other);
  g_test_add_func ("/fetch/dedupe-and-rate", test_dedupe_and_rate);
  g_test_add_func ("/fetch/inspect", test_inspect);
  g_test_add_func ("/fetch/https", test_https);
  g_test_add_func ("/fetch/ftp/typecodes-and-paths", test_ftp);
  g_test_add_func ("/fetch/ftp/anon-ftp", test_anon_ftp);
  g_test_add_func ("/fetch/gopher", test_gopher);
  g_test_add_func ("/fetch/nntp", test_nntp);
  g_test_add_func ("/fetch/nntp-leafnode", test_nntp_leafnode);
  g_test_add_func ("/fetch/local-file", test_local_file);
  g_test_add_func ("/fetch/cache", test_cache);
  g_test_add_func ("/fetch/environment-proxy-ignored", test_env_proxy_ignored);
  int rc = g_test_run ();
  test_server_stop (srv);
  test_server_stop (srv2);
  g_unlink (empty_conf);
  g_free (empty_conf);
  return rc;
}
