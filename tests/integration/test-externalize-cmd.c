/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-externalize-cmd.c - `extbody externalize`, end to end: exit codes,
 * standard output and standard error, with a directory store in a temporary
 * directory (and a WebDAV store nobody answers for the store failure); with
 * externalize_key, the names checked against openssl's HMAC and the round
 * trip through `extbody rewrite --fetch` from a private nginx. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include "run-command.h"
#include "test-server.h"

typedef struct {
  char *dir;     /* the test's directory */
  char *store;   /* dir/store */
  char *opt_store, *opt_base;
} Fx;

static void
fx_setup (Fx *f, gconstpointer d G_GNUC_UNUSED)
{
  f->dir = g_dir_make_tmp ("eb-ext-cmd-XXXXXX", NULL);
  f->store = g_build_filename (f->dir, "store", NULL);
  g_assert_cmpint (g_mkdir (f->store, 0755), ==, 0);
  f->opt_store = g_strdup_printf ("externalize_store=%s", f->store);
  f->opt_base = g_strdup ("externalize_base_url=http://127.0.0.1:8080/objects");
}

static void
fx_teardown (Fx *f, gconstpointer d G_GNUC_UNUSED)
{
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", f->dir);
  g_assert_cmpint (system (cmd), ==, 0);
  g_free (f->dir);
  g_free (f->store);
  g_free (f->opt_store);
  g_free (f->opt_base);
}

/* The 3000 bytes of message (@seed)'s attachment. */
static void
attachment (guint seed, guint8 d[3000])
{
  for (guint i = 0; i < 3000; i++)
    d[i] = (guint8) (i * 37 + seed);
}

/* A message with a 3000-byte base64 attachment and a text body. */
static char *
message (guint seed)
{
  guint8 d[3000];
  attachment (seed, d);
  g_autofree char *b = g_base64_encode (d, sizeof d);
  GString *s = g_string_new ("From: a@example.org\nTo: b@example.org\nSubject: att\nMIME-Version: 1.0\n"
                             "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nhi\n"
                             "--b\nContent-Type: application/pdf; name=r.pdf\nContent-Transfer-Encoding: base64\n\n");
  for (gsize i = 0, n = strlen (b); i < n; i += 76) {
    g_string_append_len (s, b + i, (gssize) MIN (76, n - i));
    g_string_append_c (s, '\n');
  }
  g_string_append (s, "--b--\n");
  return g_string_free (s, FALSE);
}

static guint
objects (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;
  while (d && g_dir_read_name (d))
    n++;
  return n;
}

static void
test_no_store (Fx *f, gconstpointer d G_GNUC_UNUSED)
{
  g_autofree char *conf = g_build_filename (f->dir, "empty.conf", NULL);
  g_assert_true (g_file_set_contents (conf, "# nothing set\n", -1, NULL));
  g_autofree char *m = message (1);
  g_autoptr (GBytes) in = g_bytes_new (m, strlen (m));
  g_auto (CmdResult) r = { 0 };
  RUN (&r, in, "externalize", "-c", conf);
  g_assert_cmpint (r.status, ==, 78);
  g_assert_cmpuint (g_bytes_get_size (r.out), ==, 0);
  g_autofree char *err = bytes_str (r.err);
  g_assert_nonnull (strstr (err, "externalize_store"));
  g_assert_cmpuint (n_lines (r.err), ==, 1);
}

static void
test_usage (Fx *f, gconstpointer d G_GNUC_UNUSED)
{
  g_auto (CmdResult) a = { 0 }, b = { 0 }, c = { 0 };
  RUN (&a, NULL, "externalize", "-o", f->opt_store, "-o", f->opt_base, "x", "y");
  g_assert_cmpint (a.status, ==, 64);
  RUN (&b, NULL, "externalize", "-o", f->opt_store, "-o", f->opt_base, "--backup", ".bak", "x");
  g_assert_cmpint (b.status, ==, 64);
  RUN (&c, NULL, "externalize", "-o", f->opt_store, "-o", f->opt_base, "/nonexistent/message");
  g_assert_cmpint (c.status, ==, 66);
}

static void
test_one_message (Fx *f, gconstpointer d G_GNUC_UNUSED)
{
  g_autofree char *m = message (2);
  g_autoptr (GBytes) in = g_bytes_new (m, strlen (m));
  g_auto (CmdResult) r = { 0 };
  RUN (&r, in, "externalize", "-o", f->opt_store, "-o", f->opt_base, "-o", "externalize_min_size=1k",
       "--report", "--filter");
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *out = bytes_str (r.out);
  g_autofree char *err = bytes_str (r.err);
  g_assert_true (g_str_has_prefix (out, "From: a@example.org\nTo: b@example.org\nSubject: att\n"));
  g_assert_nonnull (strstr (out, "\nX-Extbody: externalized 1 of 1 part\n"));
  g_assert_nonnull (strstr (out, "Content-Type: message/external-body; access-type=URL;\n"));
  g_assert_nonnull (strstr (out, "\nContent-Type: application/pdf; name=r.pdf\n"
                                 "Content-Transfer-Encoding: binary\nContent-MD5: "));
  g_assert_cmpuint (n_lines (r.err), ==, 1);
  g_assert_true (g_str_has_prefix (err, "extbody: part 2 application/pdf 3000 bytes: externalized "
                                        "http://127.0.0.1:8080/objects/"));
  g_assert_cmpuint (objects (f->store), ==, 1);

  /* the output again: nothing more to take out, written as it came */
  g_auto (CmdResult) r2 = { 0 };
  RUN (&r2, r.out, "externalize", "-o", f->opt_store, "-o", f->opt_base, "-o", "externalize_min_size=1k");
  g_assert_cmpint (r2.status, ==, 0);
  g_assert_true (g_bytes_equal (r2.out, r.out));
  g_assert_cmpuint (g_bytes_get_size (r2.err), ==, 0);

  /* below externalize_min_size (default 1M): byte for byte */
  g_auto (CmdResult) r3 = { 0 };
  RUN (&r3, in, "externalize", "-o", f->opt_store, "-o", f->opt_base);
  g_assert_cmpint (r3.status, ==, 0);
  g_assert_true (g_bytes_equal (r3.out, in));
}

/* A WebDAV store on a port nobody listens on: the part stays, one line on
 * standard error, exit 0, the message byte for byte. */
static void
test_store_fails (Fx *f, gconstpointer d G_GNUC_UNUSED)
{
  g_autofree char *m = message (3);
  g_autoptr (GBytes) in = g_bytes_new (m, strlen (m));
  g_auto (CmdResult) r = { 0 };
  RUN (&r, in, "externalize", "-o", "externalize_store=http://127.0.0.1:1/dav/", "-o",
       "externalize_min_size=1k", "-o", "externalize_store_timeout=5");
  g_assert_cmpint (r.status, ==, 0);
  g_assert_true (g_bytes_equal (r.out, in));
  g_autofree char *err = bytes_str (r.err);
  g_assert_cmpuint (n_lines (r.err), ==, 1);
  g_assert_nonnull (strstr (err, "part 2 application/pdf 3000 bytes: left: store-failed: "));
  (void) f;
}

static void
test_mbox (Fx *f, gconstpointer d G_GNUC_UNUSED)
{
  g_autofree char *m1 = message (4), *m2 = message (5);
  g_autofree char *box = g_build_filename (f->dir, "box", NULL);
  g_autofree char *text = g_strdup_printf ("From a@example.org Thu Jan  1 00:00:00 2026\n%s\n"
                                           "From a@example.org Thu Jan  1 00:00:01 2026\n%s\n"
                                           "From a@example.org Thu Jan  1 00:00:02 2026\n"
                                           "Subject: plain\n\nno attachment\n\n", m1, m2);
  g_assert_true (g_file_set_contents (box, text, -1, NULL));
  g_auto (CmdResult) n = { 0 };
  RUN (&n, NULL, "externalize", "-o", f->opt_store, "-o", f->opt_base, "-o", "externalize_min_size=1k",
       "--dry-run", "--mbox", box);
  g_assert_cmpint (n.status, ==, 0);
  g_autofree char *nerr = bytes_str (n.err);
  g_assert_nonnull (strstr (nerr, "3 messages scanned, 2 candidate parts, 0 externalized, 2 messages would change; left: would-externalize 2"));
  g_autoptr (GBytes) same = file_bytes (box);
  g_assert_cmpmem (g_bytes_get_data (same, NULL), g_bytes_get_size (same), text, strlen (text));
  g_assert_cmpuint (objects (f->store), ==, 0);

  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "externalize", "-o", f->opt_store, "-o", f->opt_base, "-o", "externalize_min_size=1k",
       "-j", "2", "--backup", ".orig", "--mbox", box);
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *err = bytes_str (r.err);
  g_assert_nonnull (strstr (err, "3 messages scanned, 2 candidate parts, 2 externalized, 2 messages changed"));
  g_autoptr (GBytes) after = file_bytes (box);
  g_autofree char *a = bytes_str (after);
  g_assert_nonnull (strstr (a, "message/external-body"));
  g_assert_nonnull (strstr (a, "\nSubject: plain\n\nno attachment\n"));
  g_assert_cmpuint (objects (f->store), ==, 2);
  g_autofree char *bk = g_strconcat (box, ".orig", NULL);
  g_autoptr (GBytes) orig = file_bytes (bk);
  g_assert_cmpmem (g_bytes_get_data (orig, NULL), g_bytes_get_size (orig), text, strlen (text));
}

/* externalize --mbox: a text attachment whose "From " lines the mailbox
 * quotes the mboxrd way is stored as its reader sees it (">From " back to
 * "From ", ">>From " to ">From "), not with the mailbox's quoting. */
static void
test_mbox_quoted (Fx *f, gconstpointer d G_GNUC_UNUSED)
{
  GString *quoted = g_string_new (NULL), *plain = g_string_new (NULL);
  for (guint i = 0; i < 100; i++) {
    g_string_append_printf (quoted, ">From line %u of the log\n>>From a quoted one\n", i);
    g_string_append_printf (plain, "From line %u of the log\n>From a quoted one\n", i);
  }
  g_autofree char *box = g_build_filename (f->dir, "box", NULL);
  g_autofree char *text = g_strdup_printf (
    "From a@example.org Thu Jan  1 00:00:00 2026\n"
    "From: a@example.org\nSubject: log\nMIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nsee the log\n"
    "--b\nContent-Type: text/plain; name=log.txt\nContent-Disposition: attachment; filename=log.txt\n\n"
    "%s--b--\n\n", quoted->str);
  g_assert_true (g_file_set_contents (box, text, -1, NULL));
  /* the last line break belongs to the boundary's delimiter line */
  g_string_truncate (plain, plain->len - 1);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "externalize", "-o", f->opt_store, "-o", f->opt_base, "-o", "externalize_min_size=1k",
       "--mbox", box);
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *err = bytes_str (r.err);
  g_assert_nonnull (strstr (err, "1 messages scanned, 1 candidate parts, 1 externalized, 1 messages changed"));
  g_assert_cmpuint (objects (f->store), ==, 1);
  g_autofree char *hex = g_compute_checksum_for_string (G_CHECKSUM_SHA256, plain->str, -1);
  g_autofree char *obj = g_build_filename (f->store, hex, NULL);
  g_autoptr (GBytes) stored = file_bytes (obj);
  g_assert_nonnull (stored);
  g_assert_cmpmem (g_bytes_get_data (stored, NULL), g_bytes_get_size (stored), plain->str, plain->len);
  g_autoptr (GBytes) after = file_bytes (box);
  g_autofree char *a = bytes_str (after);
  g_assert_nonnull (strstr (a, "Content-Type: message/external-body"));
  g_assert_null (strstr (a, "From line 1 "));
  g_string_free (quoted, TRUE);
  g_string_free (plain, TRUE);
}

/* The quick start's run (tests/quickstart.sh demo): the bundled sample's PDF
 * into a directory store, the object holding the part's decoded bytes under
 * their SHA-256, the reference as extbody(1) shows it, a second run unchanged. */
static void
test_sample (Fx *f, gconstpointer d G_GNUC_UNUSED)
{
  g_autofree char *path = g_build_filename (g_getenv ("EXTBODY_DATADIR"), "samples",
                                            "attachment.eml", NULL);
  g_autoptr (GBytes) in = file_bytes (path);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "externalize", "-o", f->opt_store,
       "-o", "externalize_base_url=https://files.example.org/objects",
       "-o", "externalize_min_size=32K", "-o", "externalize_retention=30", "--report", path);
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *err = bytes_str (r.err);
  g_autofree char *out = bytes_str (r.out);
  g_test_message ("%s", err);
  g_assert_cmpuint (n_lines (r.err), ==, 1);   /* the text body is no candidate */
  const char *hex = "be5cc2defc64b6b0fe645bf1b434f36b1bcbd70c6dbe971faf66f789986386c6";
  g_autofree char *line = g_strdup_printf ("extbody: part 2 application/pdf 65547 bytes: externalized "
                                           "https://files.example.org/objects/%s\n", hex);
  g_assert_cmpstr (err, ==, line);

  /* the object: the decoded bytes of the sample's base64 part */
  g_assert_cmpuint (objects (f->store), ==, 1);
  g_autofree char *obj = g_build_filename (f->store, hex, NULL);
  g_autoptr (GBytes) stored = file_bytes (obj);
  const char *src = g_bytes_get_data (in, NULL);
  const char *b64 = strstr (src, "\n\nJVBER");
  g_assert_nonnull (b64);
  const char *b64_end = strstr (b64 + 2, "\n\n");
  g_assert_nonnull (b64_end);
  g_autofree char *text = g_strndup (b64 + 2, (gsize) (b64_end - b64 - 2));
  gsize dlen = 0;
  g_autofree guchar *decoded = g_base64_decode (text, &dlen);
  g_autoptr (GBytes) want = g_bytes_new (decoded, dlen);
  g_assert_true (g_bytes_equal (stored, want));
  g_autofree char *sum = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, stored);
  g_assert_cmpstr (sum, ==, hex);
  struct stat st;
  g_assert_cmpint (g_stat (obj, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 07777, ==, 0644);

  /* the reference as extbody(1) shows it (the expiration aside) */
  const char *want_ref[] = {
    "\n--=-sample-attachment-1\nContent-Type: message/external-body; access-type=URL;\n\tsize=65547;\n\texpiration=\"",
    " +0000\";\n\tURL=\"https://files.example.org/objects/be5cc2\n\tdefc64b6b0fe645bf1b434f36b1bcbd70c6dbe97\n"
    "\t1faf66f789986386c6\"\n\nContent-Type: application/pdf; name=\"site-plan.pdf\"\n"
    "Content-Disposition: attachment; filename=\"site-plan.pdf\"\nContent-Description: Site plan, north wing\n"
    "Content-Transfer-Encoding: binary\nContent-MD5: 8QsrP5XLOhYJc0KQnaIwMQ==\n"
    /* RFC 2046 5.2.3: a Content-ID in every reference; the part had none */
    "Content-ID: <be5cc2defc64b6b0fe645bf1b434f36b1bcbd70c6dbe971faf66f789986386c6@files.example.org>\n"
    "\n\n--=-sample-attachment-1--\n",
  };
  for (guint i = 0; i < G_N_ELEMENTS (want_ref); i++)
    g_assert_nonnull (strstr (out, want_ref[i]));
  /* everything before the PDF's part is the sample's */
  const char *cut = strstr (src, "Content-Type: application/pdf");
  g_assert_nonnull (cut);
  g_assert_cmpint (strncmp (out, src, (gsize) (cut - src)), ==, 0);
  g_assert_true (g_str_has_prefix (out + (cut - src), "Content-Type: message/external-body"));

  /* a second run changes nothing and stores nothing new */
  g_auto (CmdResult) again = { 0 };
  RUN (&again, r.out, "externalize", "-o", f->opt_store,
       "-o", "externalize_base_url=https://files.example.org/objects", "-o", "externalize_min_size=32K");
  g_assert_cmpint (again.status, ==, 0);
  g_assert_true (g_bytes_equal (again.out, r.out));
  g_assert_cmpuint (g_bytes_get_size (again.err), ==, 0);
  g_assert_cmpuint (objects (f->store), ==, 1);
}

/* The mbox split leaves a message shorter than externalize_min_size unparsed
 * (no part of it can reach the size): the message just above it with a part of
 * exactly the minimum decoded size is still externalized, the short ones
 * before and after it are counted and left byte for byte. */
static void
test_mbox_min_size (Fx *f, gconstpointer d G_GNUC_UNUSED)
{
  g_autofree char *m = message (6);
  g_autofree char *box = g_build_filename (f->dir, "box", NULL);
  const char *tiny = "Subject: tiny\n\nshort\n\n";
  g_autofree char *text = g_strdup_printf ("From a@example.org Thu Jan  1 00:00:00 2026\n%s"
                                           "From a@example.org Thu Jan  1 00:00:01 2026\n%s\n"
                                           "From a@example.org Thu Jan  1 00:00:02 2026\n%s",
                                           tiny, m, tiny);
  for (guint j = 1; j <= 2; j++) {
    g_assert_true (g_file_set_contents (box, text, -1, NULL));
    g_auto (CmdResult) r = { 0 };
    g_autofree char *jobs = g_strdup_printf ("%u", j);
    /* the attachment's 3000 decoded bytes: exactly the minimum */
    RUN (&r, NULL, "externalize", "-o", f->opt_store, "-o", f->opt_base, "-o",
         "externalize_min_size=3000", "-j", jobs, "--mbox", box);
    g_assert_cmpint (r.status, ==, 0);
    g_autofree char *err = bytes_str (r.err);
    g_assert_nonnull (strstr (err, "3 messages scanned, 1 candidate parts, 1 externalized, 1 messages changed"));
    g_autoptr (GBytes) after = file_bytes (box);
    g_autofree char *a = bytes_str (after);
    g_assert_nonnull (strstr (a, "size=3000;"));
    g_assert_true (g_str_has_prefix (a, "From a@example.org Thu Jan  1 00:00:00 2026\nSubject: tiny\n\nshort\n\nFrom "));
    g_assert_true (g_str_has_suffix (a, "\nFrom a@example.org Thu Jan  1 00:00:02 2026\nSubject: tiny\n\nshort\n\n"));
    g_assert_cmpuint (objects (f->store), ==, 1);
  }
}

/* ---- externalize_key ----------------------------------------------------- */

/* 64 characters, as openssl rand -hex 32 makes them */
#define KEY "6b1f0c4e2d9a8b7c3e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5"

/* The HMAC-SHA256 of @len bytes at @p keyed with @key, by openssl(1), not by
 * extbody's code; NULL when openssl is not installed. */
static char *
openssl_hmac (const char *dir, const char *key, const guint8 *p, gsize len)
{
  if (!g_file_test ("/usr/bin/openssl", G_FILE_TEST_IS_EXECUTABLE))
    return NULL;
  g_autofree char *file = g_build_filename (dir, "hmac-input", NULL);
  g_assert_true (g_file_set_contents (file, (const char *) p, (gssize) len, NULL));
  g_autofree char *out = NULL;
  g_autofree char *cmd = g_strdup_printf ("/usr/bin/openssl dgst -sha256 -hmac '%s' -r '%s'", key, file);
  g_assert_true (g_spawn_command_line_sync (cmd, &out, NULL, NULL, NULL));
  g_unlink (file);
  g_assert_true (strlen (out) > 64 && out[64] == ' ');
  return g_strndup (out, 64);
}

/* @text without the lines of the field @name (its continuation lines too). */
static char *
without_field (const char *text, const char *name)
{
  GString *s = g_string_new (NULL);
  gboolean in = FALSE;
  for (const char *p = text; *p;) {
    const char *nl = strchr (p, '\n');
    gsize n = nl ? (gsize) (nl - p) + 1 : strlen (p);
    if (*p != ' ' && *p != '\t')
      in = g_ascii_strncasecmp (p, name, strlen (name)) == 0 && p[strlen (name)] == ':';
    if (!in)
      g_string_append_len (s, p, (gssize) n);
    p += n;
  }
  return g_string_free (s, FALSE);
}

/* The object names with externalize_key: HMAC-SHA256 of the decoded bytes
 * (openssl's), one object per content; the message shows no plain SHA-256 of
 * the part anywhere (URL, Content-ID, the fallback's text and boundary);
 * without the key the names are the SHA-256 as before. rewrite --fetch with
 * the same configuration restores the part as it does without a key, the
 * generated Content-ID left out; a configuration without the key does not
 * know <HMAC@host> for its own and leaves it in. */
static void
test_key_names (Fx *f, gconstpointer d G_GNUC_UNUSED)
{
  guint8 att[3000];
  attachment (7, att);
  g_autofree char *hmac = openssl_hmac (f->dir, KEY, att, sizeof att);
  if (!hmac) {
    g_test_skip ("openssl is not installed (apt-get install openssl)");
    return;
  }
  g_autoptr (TestNginx) nginx = test_nginx_start (f->store);
  if (!nginx) {
    g_test_skip ("nginx is not installed (apt-get install nginx-light)");
    return;
  }
  g_autofree char *sha = g_compute_checksum_for_data (G_CHECKSUM_SHA256, att, sizeof att);
  g_assert_cmpstr (hmac, !=, sha);
  g_autofree char *base = g_strdup_printf ("http://127.0.0.1:%u/", nginx->port);
  g_autofree char *keyed = g_build_filename (f->dir, "keyed.conf", NULL);
  g_autofree char *plain = g_build_filename (f->dir, "plain.conf", NULL);
  g_autofree char *common = g_strdup_printf ("externalize_store = %s\nexternalize_base_url = %s\n"
                                             "externalize_min_size = 1k\n", f->store, base);
  g_autofree char *keyed_text = g_strdup_printf ("%sexternalize_key = %s\n", common, KEY);
  g_assert_true (g_file_set_contents (keyed, keyed_text, -1, NULL));
  g_assert_true (g_file_set_contents (plain, common, -1, NULL));

  g_autofree char *m = message (7);
  g_autoptr (GBytes) in = g_bytes_new (m, strlen (m));
  g_auto (CmdResult) r = { 0 };
  RUN (&r, in, "externalize", "-c", keyed, "--report");
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *out = bytes_str (r.out);
  g_autofree char *err = bytes_str (r.err);
  g_autofree char *url = g_strconcat (base, hmac, NULL);
  g_autofree char *line = g_strdup_printf ("extbody: part 2 application/pdf 3000 bytes: externalized %s\n", url);
  g_assert_cmpstr (err, ==, line);
  g_assert_cmpuint (objects (f->store), ==, 1);
  g_autofree char *obj = g_build_filename (f->store, hmac, NULL);
  g_autoptr (GBytes) stored = file_bytes (obj);
  g_assert_nonnull (stored);
  g_assert_cmpmem (g_bytes_get_data (stored, NULL), g_bytes_get_size (stored), att, sizeof att);
  g_autofree char *cid = g_strdup_printf ("\nContent-ID: <%s@127.0.0.1>\n", hmac);
  g_assert_nonnull (strstr (out, cid));
  g_autofree char *sha24 = g_strndup (sha, 24);
  g_assert_null (strstr (out, sha24));
  g_assert_null (strstr (out, KEY));

  /* the fallback: the link, no SHA-256 of the part, a boundary from the name */
  g_auto (CmdResult) fb = { 0 };
  RUN (&fb, in, "externalize", "-c", keyed, "--fallback");
  g_assert_cmpint (fb.status, ==, 0);
  g_autofree char *fbout = bytes_str (fb.out);
  g_assert_nonnull (strstr (fbout, "multipart/alternative"));
  g_assert_nonnull (strstr (fbout, url));
  g_assert_nonnull (strstr (fbout, cid));
  g_assert_null (strstr (fbout, sha24));
  g_assert_null (strstr (fbout, "SHA-256"));
  g_assert_null (strstr (fbout, KEY));
  g_assert_cmpuint (objects (f->store), ==, 1);   /* the same object */

  /* two messages of a mailbox with the same attachment: still one object */
  g_autofree char *box = g_build_filename (f->dir, "box", NULL);
  g_autofree char *boxtext = g_strdup_printf ("From a@example.org Thu Jan  1 00:00:00 2026\n%s\n"
                                              "From a@example.org Thu Jan  1 00:00:01 2026\n%s\n", m, m);
  g_assert_true (g_file_set_contents (box, boxtext, -1, NULL));
  g_auto (CmdResult) mb = { 0 };
  RUN (&mb, NULL, "externalize", "-c", keyed, "--mbox", box);
  g_assert_cmpint (mb.status, ==, 0);
  g_autofree char *mberr = bytes_str (mb.err);
  g_assert_nonnull (strstr (mberr, "2 messages scanned, 2 candidate parts, 2 externalized, 2 messages changed"));
  g_assert_cmpuint (objects (f->store), ==, 1);

  /* without the key: today's name, the SHA-256 */
  g_auto (CmdResult) p = { 0 };
  RUN (&p, in, "externalize", "-c", plain, "--report");
  g_assert_cmpint (p.status, ==, 0);
  g_autofree char *perr = bytes_str (p.err);
  g_autofree char *pline = g_strdup_printf ("extbody: part 2 application/pdf 3000 bytes: externalized %s%s\n",
                                            base, sha);
  g_assert_cmpstr (perr, ==, pline);
  g_assert_cmpuint (objects (f->store), ==, 2);

  /* the round trip: rewrite --fetch from nginx, with the key, gives what it
   * gives without one (the trace field, which names the URL, aside): the
   * part's header without the generated Content-ID, its base64 as it was */
  g_auto (CmdResult) back = { 0 }, back_plain = { 0 }, back_nokey = { 0 };
  RUN (&back, r.out, "rewrite", "-c", keyed, "--fetch", "--allow-network", "127.0.0.1/32");
  RUN (&back_plain, p.out, "rewrite", "-c", plain, "--fetch", "--allow-network", "127.0.0.1/32");
  g_assert_cmpint (back.status, ==, 0);
  g_assert_cmpint (back_plain.status, ==, 0);
  g_autofree char *b1 = bytes_str (back.out), *b2 = bytes_str (back_plain.out);
  g_assert_null (strstr (b1, "message/external-body"));
  g_assert_null (strstr (b1, "Content-ID"));
  g_autofree char *t1 = without_field (b1, "X-Extbody-Resolved");
  g_autofree char *t2 = without_field (b2, "X-Extbody-Resolved");
  g_assert_cmpstr (t1, ==, t2);
  const char *b64 = strstr (m, "Content-Transfer-Encoding: base64\n\n");
  g_assert_nonnull (b64);
  g_autofree char *body = g_strndup (b64, strlen (b64) - strlen ("--b--\n"));
  g_assert_nonnull (strstr (t1, body));
  g_autofree char *trace = g_strdup_printf ("sha256=%s", sha);
  g_assert_nonnull (strstr (b1, trace));
  /* a configuration without the key restores the part, and keeps
   * <HMAC@host> as the sender's own Content-ID */
  RUN (&back_nokey, r.out, "rewrite", "-c", plain, "--fetch", "--allow-network", "127.0.0.1/32");
  g_assert_cmpint (back_nokey.status, ==, 0);
  g_autofree char *b3 = bytes_str (back_nokey.out);
  g_assert_null (strstr (b3, "message/external-body"));
  g_assert_nonnull (strstr (b3, cid));
}

/* The key is a secret: -o refuses it, a short one is refused naming the key
 * (exit 78, its value never shown), extbody config does not print it. */
static void
test_key_secret (Fx *f, gconstpointer d G_GNUC_UNUSED)
{
  g_autofree char *m = message (8);
  g_autoptr (GBytes) in = g_bytes_new (m, strlen (m));
  g_auto (CmdResult) o = { 0 };
  RUN (&o, in, "externalize", "-o", f->opt_store, "-o", f->opt_base, "-o", "externalize_key=" KEY);
  g_assert_cmpint (o.status, ==, 78);
  g_assert_cmpuint (g_bytes_get_size (o.out), ==, 0);
  g_autofree char *oerr = bytes_str (o.err);
  g_assert_nonnull (strstr (oerr, "externalize_key: only in the configuration file"));
  g_assert_null (strstr (oerr, KEY));
  g_assert_cmpuint (n_lines (o.err), ==, 1);

  g_autofree char *conf = g_build_filename (f->dir, "short.conf", NULL);
  g_autofree char *text = g_strdup_printf ("externalize_store = %s\nexternalize_base_url = http://x.example/\n"
                                           "externalize_key = s3cret-but-short-31-bytes-long!\n", f->store);
  g_assert_true (g_file_set_contents (conf, text, -1, NULL));
  const char *cmds[] = { "externalize", "config" };
  for (guint i = 0; i < G_N_ELEMENTS (cmds); i++) {
    g_auto (CmdResult) s = { 0 };
    RUN (&s, in, cmds[i], "-c", conf);
    g_assert_cmpint (s.status, ==, 78);
    g_assert_cmpuint (g_bytes_get_size (s.out), ==, 0);
    g_autofree char *serr = bytes_str (s.err);
    g_assert_nonnull (strstr (serr, "externalize_key: too short: 31 bytes, at least 32"));
    g_assert_null (strstr (serr, "s3cret"));
    g_assert_cmpuint (n_lines (s.err), ==, 1);
  }
  g_assert_cmpuint (objects (f->store), ==, 0);

  g_autofree char *good = g_strdup_printf ("externalize_store = %s\nexternalize_base_url = http://x.example/\n"
                                           "externalize_key = %s\n", f->store, KEY);
  g_assert_true (g_file_set_contents (conf, good, -1, NULL));
  g_auto (CmdResult) c = { 0 }, chk = { 0 };
  RUN (&c, NULL, "config", "-c", conf);
  g_assert_cmpint (c.status, ==, 0);
  g_autofree char *cout = bytes_str (c.out);
  g_assert_nonnull (strstr (cout, "\nexternalize_key = (set; not shown)\n"));
  g_assert_null (strstr (cout, KEY));
  g_assert_cmpuint (g_bytes_get_size (c.err), ==, 0);
  RUN (&chk, NULL, "config", "--check", "-c", conf);
  g_assert_cmpint (chk.status, ==, 0);
  g_assert_cmpuint (g_bytes_get_size (chk.out) + g_bytes_get_size (chk.err), ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
#define ADD(p, fn) g_test_add (p, Fx, NULL, fx_setup, fn, fx_teardown)
  ADD ("/externalize-cmd/no-store", test_no_store);
  ADD ("/externalize-cmd/usage", test_usage);
  ADD ("/externalize-cmd/one-message", test_one_message);
  ADD ("/externalize-cmd/store-fails", test_store_fails);
  ADD ("/externalize-cmd/mbox", test_mbox);
  ADD ("/externalize-cmd/mbox-quoted", test_mbox_quoted);
  ADD ("/externalize-cmd/sample", test_sample);
  ADD ("/externalize-cmd/mbox-min-size", test_mbox_min_size);
  ADD ("/externalize-cmd/key-names", test_key_names);
  ADD ("/externalize-cmd/key-secret", test_key_secret);
  return g_test_run ();
}
