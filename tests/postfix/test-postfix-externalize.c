/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-postfix-externalize.c - extbodyd in externalize mode
 * (milter_mode = externalize) behind a real Postfix (a private instance on
 * 127.0.0.1, tests/postfix/pf-peer.sh), with a directory store served by a
 * private nginx on 127.0.0.1 (test_nginx_start):
 *
 *   - a message with a 5 MB attachment (random bytes, application/pdf,
 *     base64) is delivered as a message/external-body reference: URL in
 *     quoted words of at most 40 characters, size, a phantom header with the
 *     part's type and a Content-MD5 of its bytes, no 5 MB body; the object is
 *     in the store once, named by the SHA-256 of its bytes; `extbody rewrite
 *     --fetch` of the delivered file restores the attachment (same type, same
 *     decoded bytes, read with /usr/bin/python3's email package);
 *   - with the store unwritable (the milter runs as nobody, the store
 *     directory is root's) the message is delivered with its attachment
 *     unchanged, byte for byte as sent;
 *   - a slow store (tests/servers/slowdav.py answers each PUT over 6 s),
 *     within externalize_store_timeout but beyond the listener's
 *     milter_content_timeout (3 s): the store's transfers call smfi_progress
 *     about once a second, so Postfix keeps waiting and the message arrives
 *     externalized (without those calls Postfix gives up after 3 s and
 *     milter_default_action = tempfail refuses it with a 451);
 *   - externalize_fallback = on with a WebDAV store on a private Apache
 *     (test_apache_start: mod_dav, basic authentication, the credentials
 *     only in the milter's configuration file, mode 0600): the part becomes
 *     a multipart/alternative of a text/plain part with the link and the
 *     reference, the object is PUT into Apache's collection, and `extbody
 *     rewrite --fetch` puts the original part back alone (same tree, type
 *     and decoded bytes as sent);
 *   - the order of milters against a DKIM signer (Debian's OpenDKIM, a
 *     private instance on a unix socket here, signing for test.example with
 *     a key opendkim-genkey made, relaxed/simple, no DNS): with
 *     smtpd_milters = extbody (externalize), opendkim the signature's body
 *     hash (bh=) is the hash of the delivered, externalized body and the
 *     signature verifies (tests/postfix/dkim-check.py: dkimpy with the
 *     public key handed over, and the body hash computed on its own); listed
 *     the other way round, opendkim signs the body as sent (bh= is the hash
 *     of the original body) and the delivered message fails verification.
 *     Postfix's cleanup hands the message to each milter in turn from the
 *     queue file, after the edits of the ones before it are applied
 *     (milter_message () in src/milter/milter.c, milter8_message () reading
 *     the queue file from the start, SMFIR_REPLBODY applied through
 *     cleanup_repl_body ()).
 *
 * One Postfix instance, one listener per milter (master.cf services with
 * -o smtpd_milters=..., one milter process per configuration).
 * Needs root (Postfix refuses otherwise), Postfix, nginx and /usr/bin/python3:
 * skipped (exit 77) without them; without apache2, htpasswd or mod_dav_fs
 * the WebDAV case is left out; without opendkim, opendkim-genkey
 * (opendkim-tools) or python3-dkim the DKIM cases are skipped. Every server and Postfix instance it starts
 * is registered with the watchdog (test-server.h). */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test-server.h"
#include "mta-dir.h"
#include "mta-dkim.h"
#include "mta-milter.h"
#include "mta-maildir.h"
#include "mta-postfix.h"

#define ATTACHMENT_SIZE (5 * 1024 * 1024)

static char *dir;          /* everything lives here */
static char *pfdir;        /* the Postfix instance */
static char *store;        /* the directory store nginx serves */
static char *maildir_new;
static guint smtp_port;    /* the milter with the directory store */
static guint slow_port;    /* the milter with the slow store, milter_content_timeout = 3s */
static guint dav_port;     /* the milter with Apache's WebDAV store and externalize_fallback */
static guint dkim_port;    /* smtpd_milters = extbody (externalize), opendkim */
static guint dkim_wrong_port; /* smtpd_milters = opendkim, extbody (externalize) */
static char *dkim_key_txt; /* opendkim-genkey's SELECTOR.txt; NULL: no DKIM cases */
static const char *dkim_missing;
static TestNginx *nginx;
static TestServer *slowdav;
static TestApache *apache;

/* Send @msg to Postfix's listener on @port: send.py's exit status (75: a
 * temporary failure, what a milter that timed out gives). */
static int
send_to (guint port, const char *msg)
{
  g_autofree char *file = g_build_filename (dir, "msg.eml", NULL);
  return mta_postfix_send (NULL, pfdir, port, file, msg);
}

static int
send_file (const char *msg)
{
  return send_to (smtp_port, msg);
}

/* The path of the delivered file holding @needle, waiting up to @seconds. */
static char *
delivered (const char *needle, int seconds)
{
  char *path = NULL;
  g_free (mta_maildir_delivered (maildir_new, needle, seconds, &path));
  return path;
}


/* @n random bytes from @seed. */
static GBytes *
random_bytes (guint32 seed, gsize n)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (seed);
  guint8 *b = g_malloc (n);
  for (gsize i = 0; i < n; i += 4) {
    guint32 v = g_rand_int (r);
    memcpy (b + i, &v, MIN ((gsize) 4, n - i));
  }
  /* a PDF's magic, so that the bytes look the part */
  memcpy (b, "%PDF-1.7\n", 9);
  return g_bytes_new_take (b, n);
}

/* A message with a short text part and @data as an attachment of @type
 * named @name in base64 (76-character lines), CRLF line ends. */
static char *
message_with_file (const char *message_id, GBytes *data, const char *type, const char *name)
{
  gsize n = 0;
  const guint8 *p = g_bytes_get_data (data, &n);
  g_autofree char *b64 = g_base64_encode (p, n);
  GString *m = g_string_new (NULL);
  g_string_append_printf (m,
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: the report\r\n"
    "Message-ID: <%s>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=\"=-b\"\r\n\r\n"
    "--=-b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThe report is attached.\r\n"
    "--=-b\r\nContent-Type: %s; name=\"%s\"\r\n"
    "Content-Disposition: attachment; filename=\"%s\"\r\n"
    "Content-Transfer-Encoding: base64\r\n\r\n", message_id, type, name, name);
  gsize len = strlen (b64);
  for (gsize i = 0; i < len; i += 76) {
    g_string_append_len (m, b64 + i, (gssize) MIN ((gsize) 76, len - i));
    g_string_append (m, "\r\n");
  }
  g_string_append (m, "--=-b--\r\n");
  return g_string_free (m, FALSE);
}

static char *
message_with_attachment (const char *message_id, GBytes *data)
{
  return message_with_file (message_id, data, "application/pdf", "report.pdf");
}

static char *
digest_hex (GChecksumType type, GBytes *data)
{
  return g_compute_checksum_for_bytes (type, data);
}

static char *
md5_base64 (GBytes *data)
{
  g_autoptr (GChecksum) c = g_checksum_new (G_CHECKSUM_MD5);
  gsize n = 0;
  const guint8 *p = g_bytes_get_data (data, &n);
  g_checksum_update (c, p, (gssize) n);
  guint8 d[16];
  gsize dl = sizeof d;
  g_checksum_get_digest (c, d, &dl);
  return g_base64_encode (d, dl);
}

/* mime-check.py MODE FILE's output (asserting it ran). */
static char *
mime_check (const char *mode, const char *file)
{
  g_autofree char *py = mta_postfix_script ("mime-check.py");
  g_autofree char *cmd = g_strdup_printf ("/usr/bin/python3 '%s' %s '%s'", py, mode, file);
  char *out = NULL;
  g_assert_cmpint (test_sh (cmd, &out), ==, 0);
  g_assert_nonnull (out);
  return out;
}

/* The names of the files in the store. */
static GPtrArray *
store_objects (void)
{
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GDir) d = g_dir_open (store, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name (d)))
    g_ptr_array_add (names, g_strdup (n));
  return names;
}

static void
test_externalized (void)
{
  g_autoptr (GBytes) data = random_bytes (20, ATTACHMENT_SIZE);
  g_autofree char *sha = digest_hex (G_CHECKSUM_SHA256, data);
  g_autofree char *md5 = md5_base64 (data);
  g_autofree char *m = message_with_attachment ("ext-1@test.example", data);
  g_autofree char *sent = g_build_filename (dir, "sent-1.eml", NULL);
  g_assert_true (g_file_set_contents (sent, m, -1, NULL));
  g_assert_cmpint (send_file (m), ==, 0);
  g_autofree char *path = delivered ("<ext-1@test.example>", 60);
  g_assert_nonnull (path);
  g_autofree char *got = NULL;
  gsize got_len = 0;
  g_assert_true (g_file_get_contents (path, &got, &got_len, NULL));
  g_test_message ("delivered (%" G_GSIZE_FORMAT " bytes):\n%.4000s", got_len, got);

  /* a reference, not the 5 MB */
  g_assert_cmpuint (got_len, <, 64 * 1024);
  g_assert_nonnull (strstr (got, "message/external-body"));
  g_assert_nonnull (strstr (got, "\nX-Extbody: externalized 1 of "));
  g_assert_nonnull (strstr (got, "\n\nThe report is attached.\n"));
  g_autofree char *ref = mime_check ("reference", path);
  g_test_message ("%s", ref);
  g_autofree char *access = mta_postfix_value_of (ref, "access-type");
  g_autofree char *url = mta_postfix_value_of (ref, "url");
  g_autofree char *size = mta_postfix_value_of (ref, "size");
  g_autofree char *maxword = mta_postfix_value_of (ref, "maxword");
  g_autofree char *type = mta_postfix_value_of (ref, "type");
  g_autofree char *ref_md5 = mta_postfix_value_of (ref, "md5");
  g_assert_nonnull (access);
  g_assert_cmpint (g_ascii_strcasecmp (access, "url"), ==, 0);
  g_autofree char *want_url = g_strdup_printf ("http://127.0.0.1:%u/%s", nginx->port, sha);
  g_assert_cmpstr (url, ==, want_url);
  g_assert_cmpstr (size, ==, "5242880");
  g_assert_nonnull (maxword);
  g_assert_cmpint (atoi (maxword), >, 0);
  g_assert_cmpint (atoi (maxword), <=, 40);
  g_assert_cmpstr (type, ==, "application/pdf");
  g_assert_cmpstr (ref_md5, ==, md5);

  /* the object, once, named by its digest, holding the bytes */
  g_autoptr (GPtrArray) objects = store_objects ();
  g_assert_cmpuint (objects->len, ==, 1);
  g_assert_cmpstr (objects->pdata[0], ==, sha);
  g_autofree char *obj_path = g_build_filename (store, sha, NULL);
  g_autofree char *obj = NULL;
  gsize obj_len = 0;
  g_assert_true (g_file_get_contents (obj_path, &obj, &obj_len, NULL));
  g_assert_cmpuint (obj_len, ==, ATTACHMENT_SIZE);
  g_assert_true (memcmp (obj, g_bytes_get_data (data, NULL), obj_len) == 0);

  /* resolved back through nginx: the same parts, the same bytes */
  g_autofree char *conf = g_build_filename (dir, "rewrite.conf", NULL);
  g_assert_true (g_file_set_contents (conf, "", -1, NULL));
  g_autofree char *restored = g_build_filename (dir, "restored.eml", NULL);
  g_autofree char *cmd = g_strdup_printf ("'%s' rewrite -c '%s' --fetch --allow-network 127.0.0.1/32 '%s' > '%s'",
                                          g_getenv ("EXTBODY"), conf, path, restored);
  g_assert_cmpint (test_sh (cmd, NULL), ==, 0);
  g_autofree char *want = mime_check ("leaves", sent);
  g_autofree char *back = mime_check ("leaves", restored);
  g_test_message ("sent:\n%srestored:\n%s", want, back);
  g_autofree char *pdf = g_strdup_printf ("application/pdf %s %d\n", sha, ATTACHMENT_SIZE);
  g_assert_nonnull (strstr (want, pdf));
  g_assert_cmpstr (back, ==, want);
}

/* The store refuses (the milter runs as nobody; the store is root's, 0755):
 * the part stays exactly as it was. */
static void
test_store_unwritable (void)
{
  g_assert_cmpint (chown (store, 0, 0), ==, 0);
  g_assert_cmpint (g_chmod (store, 0755), ==, 0);
  g_autoptr (GBytes) data = random_bytes (21, ATTACHMENT_SIZE);
  g_autofree char *m = message_with_attachment ("ext-2@test.example", data);
  g_assert_cmpint (send_file (m), ==, 0);
  g_autofree char *path = delivered ("<ext-2@test.example>", 60);
  g_assert_nonnull (path);
  g_autofree char *got = NULL;
  g_assert_true (g_file_get_contents (path, &got, NULL, NULL));
  g_autofree char *want = test_crlf_to_lf (m);
  g_assert_true (strcmp (test_after_received (got), want) == 0);
  g_autoptr (GPtrArray) objects = store_objects ();
  g_assert_cmpuint (objects->len, ==, 1);   /* the first test's only */
}

/* The store answers its PUT slowly (slowdav.py trickles the answer over
 * 6 s), within externalize_store_timeout (30 s) but beyond Postfix's
 * milter_content_timeout on this listener (3 s): the milter keeps telling
 * Postfix it is working (smfi_progress from the store's transfers), so the
 * message is not given up and arrives externalized. Without those calls
 * Postfix drops the milter after 3 s and milter_default_action = tempfail
 * refuses the message. */
static void
test_slow_store (void)
{
  g_autoptr (GBytes) data = random_bytes (22, 300 * 1024);
  g_autofree char *sha = digest_hex (G_CHECKSUM_SHA256, data);
  g_autofree char *m = message_with_attachment ("ext-3@test.example", data);
  g_assert_cmpint (send_to (slow_port, m), ==, 0);
  g_autofree char *path = delivered ("<ext-3@test.example>", 60);
  g_assert_nonnull (path);
  g_autofree char *got = NULL;
  gsize got_len = 0;
  g_assert_true (g_file_get_contents (path, &got, &got_len, NULL));
  g_test_message ("delivered (%" G_GSIZE_FORMAT " bytes):\n%.3000s", got_len, got);
  g_assert_cmpuint (got_len, <, 64 * 1024);
  g_assert_nonnull (strstr (got, "\nX-Extbody: externalized 1 of "));
  g_autofree char *ref = mime_check ("reference", path);
  g_autofree char *url = mta_postfix_value_of (ref, "url");
  g_autofree char *want_url = g_strdup_printf ("http://127.0.0.1:%u/store/%s", slowdav->port, sha);
  g_assert_cmpstr (url, ==, want_url);
  /* the slow PUT was answered, once */
  g_assert_cmpint (test_http_get_number (slowdav->port, "/puts"), ==, 1);
}

/* milter_mode = externalize with externalize_fallback = on and a WebDAV
 * store on a private Apache (mod_dav, basic authentication; the user name
 * and password only in the milter's configuration file, mode 0600): the
 * attachment arrives as a multipart/alternative of a text/plain part with
 * the link and the message/external-body reference; the object is in
 * Apache's collection; `extbody rewrite --fetch` of the delivered file puts
 * the original part back alone (the same tree as sent, the same type, the
 * same decoded bytes). */
static void
test_fallback_webdav (void)
{
  g_autoptr (GBytes) data = random_bytes (23, 300 * 1024);
  g_autofree char *sha = digest_hex (G_CHECKSUM_SHA256, data);
  g_autofree char *m = message_with_file ("ext-4@test.example", data, "application/octet-stream",
                                          "data.bin");
  g_autofree char *sent = g_build_filename (dir, "sent-4.eml", NULL);
  g_assert_true (g_file_set_contents (sent, m, -1, NULL));
  g_assert_cmpint (send_to (dav_port, m), ==, 0);
  g_autofree char *path = delivered ("<ext-4@test.example>", 60);
  g_assert_nonnull (path);
  g_autofree char *got = NULL;
  gsize got_len = 0;
  g_assert_true (g_file_get_contents (path, &got, &got_len, NULL));
  g_test_message ("delivered (%" G_GSIZE_FORMAT " bytes):\n%.4000s", got_len, got);
  g_assert_cmpuint (got_len, <, 64 * 1024);
  g_assert_nonnull (strstr (got, "\nX-Extbody: externalized 1 of "));
  g_assert_null (strstr (got, TEST_DAV_PASSWORD));

  /* the fallback's shape */
  g_autofree char *tree = mime_check ("tree", path);
  g_test_message ("tree:\n%s", tree);
  g_assert_cmpstr (tree, ==,
                   "multipart/mixed\n"
                   "  text/plain\n"
                   "  multipart/alternative\n"
                   "    text/plain\n"
                   "    message/external-body\n");
  g_autofree char *dav_url = test_apache_dav_url (apache, "dav");
  g_autofree char *want_url = g_strconcat (dav_url, sha, NULL);
  /* the link in the text part, the URL in the reference */
  g_assert_nonnull (strstr (got, want_url));
  g_autofree char *ref = mime_check ("reference", path);
  g_autofree char *url = mta_postfix_value_of (ref, "url");
  g_autofree char *type = mta_postfix_value_of (ref, "type");
  g_assert_cmpstr (url, ==, want_url);
  g_assert_cmpstr (type, ==, "application/octet-stream");

  /* the object, written by an authenticated PUT */
  g_autofree char *obj_path = g_build_filename (apache->dir, "dav", sha, NULL);
  g_autofree char *obj = NULL;
  gsize obj_len = 0;
  g_assert_true (g_file_get_contents (obj_path, &obj, &obj_len, NULL));
  g_assert_cmpmem (obj, obj_len, g_bytes_get_data (data, NULL), g_bytes_get_size (data));
  g_autofree char *access_path = g_build_filename (apache->dir, "access.log", NULL);
  g_autofree char *access = NULL;
  g_assert_true (g_file_get_contents (access_path, &access, NULL, NULL));
  g_autofree char *put = g_strdup_printf ("PUT /dav/%s 201\n", sha);
  g_assert_nonnull (strstr (access, put));

  /* resolved back through Apache: the original part alone */
  g_autofree char *conf = g_build_filename (dir, "rewrite.conf", NULL);
  g_assert_true (g_file_set_contents (conf, "", -1, NULL));
  g_autofree char *restored = g_build_filename (dir, "restored-4.eml", NULL);
  g_autofree char *cmd = g_strdup_printf ("'%s' rewrite -c '%s' --fetch --allow-network 127.0.0.1/32 '%s' > '%s'",
                                          g_getenv ("EXTBODY"), conf, path, restored);
  g_assert_cmpint (test_sh (cmd, NULL), ==, 0);
  g_autofree char *want_tree = mime_check ("tree", sent);
  g_autofree char *back_tree = mime_check ("tree", restored);
  g_assert_cmpstr (back_tree, ==, want_tree);
  g_autofree char *want = mime_check ("leaves", sent);
  g_autofree char *back = mime_check ("leaves", restored);
  g_test_message ("sent:\n%srestored:\n%s", want, back);
  g_autofree char *leaf = g_strdup_printf ("application/octet-stream %s %d\n", sha, 300 * 1024);
  g_assert_nonnull (strstr (want, leaf));
  g_assert_cmpstr (back, ==, want);
}

/* A message whose body is @data alone (application/pdf in base64, no
 * multipart): externalized, its own Content-Type and
 * Content-Transfer-Encoding are changed (header edits). */
static char *
message_single_part (const char *message_id, GBytes *data)
{
  gsize n = 0;
  const guint8 *p = g_bytes_get_data (data, &n);
  g_autofree char *b64 = g_base64_encode (p, n);
  GString *m = g_string_new (NULL);
  g_string_append_printf (m,
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: the data\r\n"
    "Message-ID: <%s>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: application/pdf; name=\"data.pdf\"\r\n"
    "Content-Transfer-Encoding: base64\r\n\r\n", message_id);
  gsize len = strlen (b64);
  for (gsize i = 0; i < len; i += 76) {
    g_string_append_len (m, b64 + i, (gssize) MIN ((gsize) 76, len - i));
    g_string_append (m, "\r\n");
  }
  return g_string_free (m, FALSE);
}

/* Send a message with 300 KB of data to @port (extbody externalizing from
 * 100K, and opendkim, in the listener's order): an attachment of a
 * multipart/mixed, or with @single_part the message's body itself. Checks
 * what was delivered: externalized, signed by opendkim for test.example;
 * returns dkim-check.py's output. */
static char *
send_signed (guint port, guint32 seed, const char *message_id, gboolean single_part)
{
  g_autoptr (GBytes) data = random_bytes (seed, 300 * 1024);
  g_autofree char *m = single_part ? message_single_part (message_id, data)
                                   : message_with_attachment (message_id, data);
  g_autofree char *sent = g_strdup_printf ("%s/sent-%s.eml", dir, message_id);
  g_assert_true (g_file_set_contents (sent, m, -1, NULL));
  g_assert_cmpint (send_to (port, m), ==, 0);
  g_autofree char *needle = g_strdup_printf ("<%s>", message_id);
  g_autofree char *path = delivered (needle, 60);
  g_assert_nonnull (path);
  g_autofree char *got = NULL;
  gsize got_len = 0;
  g_assert_true (g_file_get_contents (path, &got, &got_len, NULL));
  g_test_message ("delivered (%" G_GSIZE_FORMAT " bytes):\n%.3000s", got_len, got);
  /* externalized, and signed */
  g_assert_cmpuint (got_len, <, 64 * 1024);
  g_assert_nonnull (strstr (got, "\nX-Extbody: externalized 1 of "));
  g_autofree char *tree = mime_check ("tree", path);
  g_assert_cmpstr (tree, ==, single_part ? "message/external-body\n"
                                         : "multipart/mixed\n  text/plain\n  message/external-body\n");
  g_assert_nonnull (strstr (got, "\nDKIM-Signature: "));
  char *out = mta_dkim_check (path, dkim_key_txt, sent);
  g_assert_nonnull (strstr (out, "d=test.example s=sel c=relaxed/simple\n"));
  return out;
}

/* smtpd_milters = extbody (externalize), then opendkim: opendkim sees the
 * message as extbody left it - the new body, the X-Extbody field it added
 * and, for a single-part message, the Content-Type and
 * Content-Transfer-Encoding it changed (all signed here) - so it signs
 * what is delivered. */
static void
test_dkim_after_externalize (void)
{
  if (!dkim_key_txt) {
    g_test_skip (dkim_missing);
    return;
  }
  for (int single = 0; single <= 1; single++) {
    g_autofree char *id = g_strdup_printf ("ext-5-%d@test.example", single);
    g_autofree char *out = send_signed (dkim_port, 24 + (guint32) single, id, single);
    g_autofree char *h = mta_postfix_value_of (out, "h");
    g_assert_nonnull (h);
    g_assert_nonnull (strstr (h, "content-type"));
    g_assert_nonnull (strstr (h, "x-extbody"));
    /* the single part's Content-Transfer-Encoding: base64, which extbody
     * deleted, was not there for opendkim to sign */
    if (single)
      g_assert_null (strstr (h, "content-transfer-encoding"));
    mta_dkim_assert_body_signed (out, TRUE);
  }
}

/* The other order, opendkim first: it signs the body as sent, which
 * extbody then replaces; the delivered message's signature is broken
 * (bh= is the hash of the original body). What not to configure. */
static void
test_dkim_before_externalize (void)
{
  if (!dkim_key_txt) {
    g_test_skip (dkim_missing);
    return;
  }
  g_autofree char *out = send_signed (dkim_wrong_port, 26, "ext-6@test.example", FALSE);
  mta_dkim_assert_body_signed (out, FALSE);
}

/* Start extbodyd as nobody on the socket @run/@name.sock with the
 * configuration @conf_text, written to a root-only file. */
static MtaMilter *
milter_start (const char *name, const char *run, const char *conf_text)
{
  g_autofree char *sock = g_strdup_printf ("%s/%s.sock", run, name);
  g_autofree char *conf = g_strdup_printf ("%s/%s.conf", dir, name);
  g_assert_true (g_file_set_contents (conf, conf_text, -1, NULL));
  g_assert_cmpint (g_chmod (conf, 0600), ==, 0);
  g_autofree char *log = g_strdup_printf ("%s/%s.log", dir, name);
  return mta_milter_start (sock, conf, log, (const char *const[]) { "-u", "nobody", NULL });
}

/* Stop it (SIGTERM), show its log, which never holds the store's password;
 * its exit status. */
static int
milter_stop (MtaMilter *m)
{
  int status = mta_milter_stop (m, TRUE);
  g_assert_cmpint (status, >=, 0);
  g_autofree char *log = mta_milter_log (m);
  g_assert_null (strstr (log, TEST_DAV_PASSWORD));
  mta_milter_free (m);
  return status;
}

/* A private OpenDKIM signing for test.example with a fresh key (selector
 * sel, relaxed/simple, the MIME fields and X-Extbody signed too) on the unix
 * socket @run/dkim.sock, as root; NULL (dkim_missing says why) without
 * opendkim, opendkim-genkey or python3-dkim. Sets dkim_key_txt. */
static MtaDkim *
dkim_start (const char *run)
{
  dkim_missing = mta_dkim_missing ();
  if (dkim_missing)
    return NULL;
  g_autofree char *dk = g_build_filename (dir, "dkim", NULL);
  dkim_key_txt = mta_dkim_genkey (dk);
  g_autofree char *keytable = g_build_filename (dk, "KeyTable", NULL);
  g_autofree char *kt = g_strdup_printf ("sel._domainkey.test.example test.example:sel:%s/sel.private\n", dk);
  g_assert_true (g_file_set_contents (keytable, kt, -1, NULL));
  g_autofree char *signingtable = g_build_filename (dk, "SigningTable", NULL);
  g_assert_true (g_file_set_contents (signingtable, "*@test.example sel._domainkey.test.example\n", -1, NULL));
  /* RequireSafeKeys no: the key is under /tmp (world-writable), a path
   * OpenDKIM refuses to load a key from (each message a 451 at the end of
   * its header otherwise) */
  g_autofree char *conf_text = g_strdup_printf (
    "Mode s\nKeyTable file:%s\nSigningTable refile:%s\n"
    "Canonicalization relaxed/simple\nInternalHosts 127.0.0.1\nRequireSafeKeys no\n"
    "SignHeaders From,To,Subject,Message-ID,MIME-Version,Content-Type,"
    "Content-Transfer-Encoding,X-Extbody\n",
    keytable, signingtable);
  g_autofree char *sock = g_strdup_printf ("%s/dkim.sock", run);
  return mta_dkim_start (dk, sock, conf_text);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  mta_postfix_require ("EXTBODYD", "EXTBODY", NULL);
  if (!g_file_test ("/usr/sbin/nginx", G_FILE_TEST_IS_EXECUTABLE))
    test_skip_all ("nginx is not installed (apt-get install nginx-light)");
  if (!g_file_test ("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE))
    test_skip_all ("/usr/bin/python3 is not installed");
  struct passwd *pw = getpwnam ("nobody");
  if (!pw)
    test_skip_all ("no user nobody to run the milter as");
  /* a copy: the next getpwnam () overwrites what it points to */
  uid_t nobody_uid = pw->pw_uid;
  gid_t nobody_gid = pw->pw_gid;
  guint wd_dir = 0;
  dir = mta_dir_make ("pfx", &wd_dir);
  pfdir = g_build_filename (dir, "pf", NULL);
  maildir_new = mta_postfix_maildir_new (pfdir);
  store = g_build_filename (dir, "store", NULL);
  g_assert_cmpint (g_mkdir (store, 0755), ==, 0);
  /* the milter runs as nobody: the store is its own until the failure test */
  g_assert_cmpint (chown (store, nobody_uid, nobody_gid), ==, 0);
  nginx = test_nginx_start (store);
  g_assert_nonnull (nginx);

  /* the store slowdav.py keeps in memory, answering each PUT over 6 s */
  g_autoptr (GError) error = NULL;
  slowdav = test_server_start ("slowdav.py", (const char *const[]) { "--put-seconds", "6", NULL },
                               NULL, FALSE, &error);
  g_assert_no_error (error);
  /* Apache's WebDAV collection (basic authentication to write), as www-data */
  if (test_apache_available ()) {
    g_autofree char *adir = g_build_filename (dir, "apache", NULL);
    g_assert_cmpint (g_mkdir (adir, 0755), ==, 0);
    apache = test_apache_start (adir, getpwnam ("www-data") ? "www-data" : NULL, NULL);
    g_assert_nonnull (apache);
  } else {
    g_printerr ("# apache2, htpasswd or mod_dav_fs missing: the WebDAV case is left out\n");
  }

  /* the sockets' directory is nobody's, so that the milters remove them at the stop */
  g_autofree char *run = g_build_filename (dir, "run", NULL);
  g_assert_cmpint (g_mkdir (run, 0755), ==, 0);
  g_assert_cmpint (chown (run, nobody_uid, nobody_gid), ==, 0);
  g_autofree char *conf_out = g_strdup_printf (
    "milter_umask = 000\nmilter_mode = externalize\nexternalize_store = %s\n"
    "externalize_base_url = http://127.0.0.1:%u\n", store, nginx->port);
  MtaMilter *m_out = milter_start ("milter-out", run, conf_out);
  g_autofree char *conf_slow = g_strdup_printf (
    "milter_umask = 000\nmilter_mode = externalize\nexternalize_min_size = 100K\n"
    "externalize_store = http://127.0.0.1:%u/store/\nexternalize_store_timeout = 30\n",
    slowdav->port);
  MtaMilter *m_slow = milter_start ("milter-slow", run, conf_slow);
  MtaMilter *m_dav = NULL;
  if (apache) {
    g_autofree char *dav = test_apache_dav_url (apache, "dav");
    g_autofree char *conf_dav = g_strdup_printf (
      "milter_umask = 000\nmilter_mode = externalize\nexternalize_min_size = 100K\n"
      "externalize_fallback = on\nexternalize_store = %s\n"
      "externalize_store_user = " TEST_DAV_USER "\nexternalize_store_password = " TEST_DAV_PASSWORD "\n",
      dav);
    m_dav = milter_start ("milter-dav", run, conf_dav);
  }
  /* OpenDKIM, and an extbodyd of its own (own store, from 100K) to
   * list before or after it */
  MtaDkim *opendkim = dkim_start (run);
  MtaMilter *m_dk = NULL;
  if (opendkim) {
    g_autofree char *store_dk = g_build_filename (dir, "store-dk", NULL);
    g_assert_cmpint (g_mkdir (store_dk, 0755), ==, 0);
    g_assert_cmpint (chown (store_dk, nobody_uid, nobody_gid), ==, 0);
    g_autofree char *conf_dk = g_strdup_printf (
      "milter_umask = 000\nmilter_mode = externalize\nexternalize_min_size = 100K\n"
      "externalize_store = %s\nexternalize_base_url = http://127.0.0.1:%u/dk\n",
      store_dk, nginx->port);
    m_dk = milter_start ("milter-dk", run, conf_dk);
  }

  /* test_free_port never gives one process a port twice (it once did: two
   * listeners on one port, the message filtered by the other's milters) */
  slow_port = test_free_port ();
  dav_port = test_free_port ();
  dkim_port = test_free_port ();
  dkim_wrong_port = test_free_port ();
  g_autofree char *peer = mta_postfix_script ("pf-peer.sh");
  g_autofree char *up = g_strdup_printf ("sh '%s' up '%s' {PORT} 'unix:%s/milter-out.sock' tempfail",
                                         peer, pfdir, run);
  g_autofree char *stop = g_strdup_printf ("postfix -c '%s/etc' stop", pfdir);
  guint wd_pf = test_watchdog_add (stop);
  g_free (test_sh_on_free_port (up, &smtp_port, NULL));
  /* a 5 MB attachment in base64, and a little room; one listener more per
   * milter, the slow store's with a content timeout shorter than its PUT */
  g_autofree char *size = g_strdup_printf ("sh '%s' set '%s' message_size_limit=20000000 milter_content_timeout=60s",
                                           peer, pfdir);
  g_assert_cmpint (test_sh (size, NULL), ==, 0);
  g_autofree char *services = g_strdup_printf (
    "sh '%s' service '%s' "
    "'127.0.0.1:%u inet n - n - - smtpd -o smtpd_milters=unix:%s/milter-slow.sock -o milter_content_timeout=3s' "
    "'127.0.0.1:%u inet n - n - - smtpd -o smtpd_milters=unix:%s/milter-dav.sock'",
    peer, pfdir, slow_port, run, dav_port, run);
  if (opendkim) {
    /* the two orders: extbody then the signer, the signer then extbody */
    g_autofree char *with_dkim = g_strdup_printf (
      "%s "
      "'127.0.0.1:%u inet n - n - - smtpd -o smtpd_milters=unix:%s/milter-dk.sock,unix:%s/dkim.sock' "
      "'127.0.0.1:%u inet n - n - - smtpd -o smtpd_milters=unix:%s/dkim.sock,unix:%s/milter-dk.sock'",
      services, dkim_port, run, run, dkim_wrong_port, run, run);
    g_free (services);
    services = g_steal_pointer (&with_dkim);
  }
  g_assert_cmpint (test_sh (services, NULL), ==, 0);
  mta_postfix_wait_listening (pfdir, slow_port);
  mta_postfix_wait_listening (pfdir, dav_port);
  if (opendkim) {
    mta_postfix_wait_listening (pfdir, dkim_port);
    mta_postfix_wait_listening (pfdir, dkim_wrong_port);
  }

  g_test_add_func ("/postfix-externalize/1-attachment-becomes-reference", test_externalized);
  g_test_add_func ("/postfix-externalize/2-store-unwritable-message-unchanged", test_store_unwritable);
  g_test_add_func ("/postfix-externalize/3-slow-store-progress", test_slow_store);
  if (apache)
    g_test_add_func ("/postfix-externalize/4-fallback-webdav-basic-auth", test_fallback_webdav);
  g_test_add_func ("/postfix-externalize/5-dkim-signer-after-externalize", test_dkim_after_externalize);
  g_test_add_func ("/postfix-externalize/6-dkim-signer-before-externalize-breaks", test_dkim_before_externalize);
  int rc = g_test_run ();

  mta_postfix_down (pfdir, wd_pf);
  int milter_status = milter_stop (m_out);
  milter_status |= milter_stop (m_slow);
  if (m_dav)
    milter_status |= milter_stop (m_dav);
  if (m_dk)
    milter_status |= milter_stop (m_dk);
  if (opendkim)
    mta_dkim_stop (opendkim, FALSE);
  g_clear_pointer (&dkim_key_txt, g_free);
  g_clear_pointer (&slowdav, test_server_stop);
  g_clear_pointer (&apache, test_apache_stop);
  g_clear_pointer (&nginx, test_nginx_stop);
  mta_dir_remove (dir, wd_dir);
  if (milter_status != 0) {
    g_printerr ("the milter exited %d\n", milter_status);
    return 1;
  }
  return rc;
}
