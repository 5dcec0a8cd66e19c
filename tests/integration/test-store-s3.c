/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-store-s3.c - the S3 store (externalize_store_auth = aws-sigv4) against
 * a real S3-compatible server on 127.0.0.1: s3rver from npm
 * (@20minutes/s3rver 4.0.2, which checks AWS Signature Version 4 and runs on
 * Debian 12's node 18; the original s3rver 3.7.1 accepts any V4 signature and
 * could prove nothing, and the fork's 5.0.0 needs node 24), installed by
 * tests/quickstart.sh into /opt/extbody-test-s3rver (EXTBODY_TEST_S3RVER
 * names another directory). Skipped (77, which fails the run) without node or
 * that install; the test never touches the network.
 *
 * Put, read back and dedup (the second put sends no PUT: the server's object
 * file is untouched); a wrong secret or access key is refused with 403 and
 * the message says so; a missing bucket is an error; an object of the right
 * name and size holding other bytes is replaced and verified; the stored
 * object is what a resolver fetches (anonymous GET, rewrite --fetch);
 * extbody externalize with this store round-trips through rewrite --fetch;
 * with externalize_key the object is put, read back and found again under its
 * HMAC-SHA256 name (s3rver checks the form of x-amz-content-sha256, not that
 * it is the payload's: test-store's sigv4-keyed-payload-hash checks that the
 * PUT still carries the plain SHA-256 of the bytes). */
#include <glib/gstdio.h>
#include <gio/gio.h>
#include <gmime/gmime.h>
#include <string.h>
#include <sys/stat.h>
#include "run-command.h"
#include "test-server.h"
#include "eb-config.h"
#include "eb-error.h"
#include "eb-store.h"

#define BUCKET "mail"
#define KEY_ID "S3RVER"     /* s3rver's built-in account */
#define SECRET "S3RVER"

static GSubprocess *s3rver;
static guint s3rver_watchdog;
static guint s3_port;
static char *s3_dir;       /* the server's data directory */
static char *tmp_dir;      /* configuration files, messages */

/* Started with the module's API rather than its command line (the package
 * ships no bin/ script): one "S3RVER <port>" line once it listens on a port
 * of its own choosing; it ends when its standard input closes. */
static const char launcher[] =
  "const S3rver = require (process.argv[1]);\n"
  "new S3rver ({ address: '127.0.0.1', port: 0, directory: process.argv[2], silent: true,\n"
  "              vhostBuckets: false, configureBuckets: [{ name: '" BUCKET "', configs: [] }] })\n"
  "  .run ().then (({ port }) => console.log ('S3RVER ' + port),\n"
  "                (e) => { console.error (e.message); process.exit (2); });\n"
  "process.stdin.on ('end', () => process.exit (0));\n"
  "process.stdin.resume ();\n";

static void
start_s3rver (const char *node, const char *module)
{
  g_autoptr (GError) error = NULL;
  s3_dir = g_dir_make_tmp ("extbody-s3rver-XXXXXX", &error);
  g_assert_no_error (error);
  s3rver = g_subprocess_new (G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error,
                             node, "-e", launcher, module, s3_dir, NULL);
  g_assert_no_error (error);
  g_autofree char *kill = g_strdup_printf ("kill %s", g_subprocess_get_identifier (s3rver));
  s3rver_watchdog = test_watchdog_add (kill);
  g_autoptr (GDataInputStream) in = g_data_input_stream_new (g_subprocess_get_stdout_pipe (s3rver));
  g_autofree char *line = g_data_input_stream_read_line (in, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (line);
  g_assert_true (g_str_has_prefix (line, "S3RVER "));
  s3_port = (guint) atoi (line + strlen ("S3RVER "));
  g_assert_cmpuint (s3_port, >, 0);
}

static void
stop_s3rver (void)
{
  g_autoptr (GError) error = NULL;
  g_output_stream_close (g_subprocess_get_stdin_pipe (s3rver), NULL, NULL);
  g_subprocess_wait (s3rver, NULL, &error);
  g_assert_no_error (error);
  test_watchdog_remove (s3rver_watchdog);
  g_clear_object (&s3rver);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s' '%s'", s3_dir, tmp_dir);
  g_assert_cmpint (test_sh (rm, NULL), ==, 0);
}

static char *
bucket_url (const char *bucket)
{
  return g_strdup_printf ("http://127.0.0.1:%u/%s", s3_port, bucket);
}

static EbConfig *
s3_config (const char *bucket, const char *key_id, const char *secret)
{
  g_autofree char *store = bucket_url (bucket);
  EbConfig *c = eb_config_new ();
  g_assert_true (eb_config_set (c, "externalize_store", store, NULL));
  g_assert_true (eb_config_set (c, "externalize_store_auth", "aws-sigv4", NULL));
  g_assert_true (eb_config_set (c, "externalize_store_region", "us-east-1", NULL));
  g_assert_true (eb_config_set (c, "externalize_store_user", key_id, NULL));
  g_assert_true (eb_config_set (c, "externalize_store_password", secret, NULL));
  g_assert_true (eb_config_set (c, "externalize_store_timeout", "30", NULL));
  return c;
}

static EbStore *
s3_store (const char *bucket, const char *key_id, const char *secret)
{
  g_autoptr (EbConfig) c = s3_config (bucket, key_id, secret);
  g_autoptr (GError) error = NULL;
  EbStore *s = eb_store_new (c, &error);
  g_assert_no_error (error);
  return s;
}

/* @n bytes that differ with @seed. */
static GBytes *
data_of (gsize n, guint32 seed)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (seed);
  guint8 *p = g_malloc (n);
  for (gsize i = 0; i < n; i++)
    p[i] = (guint8) g_rand_int (r);
  return g_bytes_new_take (p, n);
}

static char *
object_path (const char *hex)
{
  return g_strdup_printf ("%s/%s/%s._S3rver_object", s3_dir, BUCKET, hex);
}

static GBytes *
object_bytes (const char *hex)
{
  g_autofree char *path = object_path (hex);
  g_autofree char *buf = NULL;
  gsize len = 0;
  if (!g_file_get_contents (path, &buf, &len, NULL))
    return NULL;
  return g_bytes_new (buf, len);
}

/* What an anonymous GET of @url returns (as a resolver fetches it). */
static GBytes *
anonymous_get (const char *url)
{
  g_autofree char *cmd = g_strdup_printf ("curl -sf --noproxy '*' '%s'", url);
  g_autofree char *out = NULL;
  g_assert_cmpint (test_sh (cmd, &out), ==, 0);
  gsize n = strlen (out);   /* test_sh gives text: the callers store text */
  return g_bytes_new (out, n);
}

/* ---- the store ------------------------------------------------------------ */

static void
test_put_dedup (void)
{
  g_autoptr (EbStore) store = s3_store (BUCKET, KEY_ID, SECRET);
  g_autoptr (GBytes) data = data_of (300 * 1024, 1);
  g_autofree char *hex = eb_store_sha256_hex (data);
  g_autoptr (GError) error = NULL;
  EbStoreOutcome outcome = EB_STORE_PRESENT;
  g_autofree char *url = eb_store_put_full (store, data, hex, &outcome, &error);
  g_assert_no_error (error);
  g_assert_cmpint (outcome, ==, EB_STORE_WRITTEN);
  g_autofree char *bucket = bucket_url (BUCKET);
  g_autofree char *want = g_strdup_printf ("%s/%s", bucket, hex);
  g_assert_cmpstr (url, ==, want);
  g_autoptr (GBytes) stored = object_bytes (hex);
  g_assert_nonnull (stored);
  g_assert_true (g_bytes_equal (stored, data));
  /* stored with the media type the store sends */
  g_autofree char *meta_path = g_strdup_printf ("%s/%s/%s._S3rver_metadata.json", s3_dir, BUCKET, hex);
  g_autofree char *meta = NULL;
  g_assert_true (g_file_get_contents (meta_path, &meta, NULL, NULL));
  g_assert_nonnull (strstr (meta, "application/octet-stream"));

  /* the same bytes again: found, read back, nothing written */
  g_autofree char *path = object_path (hex);
  struct stat before, after;
  g_assert_cmpint (g_stat (path, &before), ==, 0);
  outcome = EB_STORE_WRITTEN;
  g_autofree char *url2 = eb_store_put_full (store, data, NULL, &outcome, &error);
  g_assert_no_error (error);
  g_assert_cmpint (outcome, ==, EB_STORE_PRESENT);
  g_assert_cmpstr (url2, ==, url);
  g_assert_cmpint (g_stat (path, &after), ==, 0);
  g_assert_cmpint (before.st_ino, ==, after.st_ino);
  g_assert_cmpint (before.st_mtim.tv_sec, ==, after.st_mtim.tv_sec);
  g_assert_cmpint (before.st_mtim.tv_nsec, ==, after.st_mtim.tv_nsec);

  /* the public API, thread-safe entry point: same URL */
  g_autofree char *url3 = eb_store_put (store, data, hex, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (url3, ==, url);
}

/* externalize_key: the object under its HMAC-SHA256 name (GLib's), read
 * back and found again by it (no second write), served to anyone. */
static void
test_put_keyed (void)
{
  const char *key = "s3-store-key-0123456789abcdef0123456789";
  g_autoptr (EbConfig) c = s3_config (BUCKET, KEY_ID, SECRET);
  g_assert_true (eb_config_set (c, "externalize_key", key, NULL));
  g_autoptr (GError) error = NULL;
  g_autoptr (EbStore) store = eb_store_new (c, &error);
  g_assert_no_error (error);
  g_autoptr (GBytes) data = data_of (200 * 1024, 40);
  g_autoptr (GBytes) k = g_bytes_new_static (key, strlen (key));
  g_autofree char *name = g_compute_hmac_for_bytes (G_CHECKSUM_SHA256, k, data);
  g_autofree char *hex = eb_store_sha256_hex (data);
  EbStoreOutcome outcome = EB_STORE_PRESENT;
  g_autofree char *url = eb_store_put_full (store, data, hex, &outcome, &error);
  g_assert_no_error (error);
  g_assert_cmpint (outcome, ==, EB_STORE_WRITTEN);
  g_autofree char *bucket = bucket_url (BUCKET);
  g_autofree char *want = g_strdup_printf ("%s/%s", bucket, name);
  g_assert_cmpstr (url, ==, want);
  g_autoptr (GBytes) stored = object_bytes (name);
  g_assert_nonnull (stored);
  g_assert_true (g_bytes_equal (stored, data));
  g_autoptr (GBytes) none = object_bytes (hex);
  g_assert_null (none);
  g_autofree char *path = object_path (name);
  struct stat before, after;
  g_assert_cmpint (g_stat (path, &before), ==, 0);
  g_autofree char *url2 = eb_store_put_full (store, data, NULL, &outcome, &error);
  g_assert_no_error (error);
  g_assert_cmpint (outcome, ==, EB_STORE_PRESENT);
  g_assert_cmpstr (url2, ==, url);
  g_assert_cmpint (g_stat (path, &after), ==, 0);
  g_assert_cmpint (before.st_ino, ==, after.st_ino);
  g_assert_cmpint (before.st_mtim.tv_nsec, ==, after.st_mtim.tv_nsec);
}

static void
test_resolver_reads_it (void)
{
  /* what a resolver does: an unsigned GET of the URL (s3rver serves objects
   * to anyone, as a public-read bucket does) */
  g_autoptr (EbStore) store = s3_store (BUCKET, KEY_ID, SECRET);
  const char *text = "The stored object, fetched back without any credential.\n";
  g_autoptr (GBytes) data = g_bytes_new_static (text, strlen (text));
  g_autoptr (GError) error = NULL;
  g_autofree char *url = eb_store_put (store, data, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (GBytes) got = anonymous_get (url);
  g_assert_true (g_bytes_equal (got, data));
}

static void
assert_refused (EbStore *store, const char *status, const char *code, const char *hint)
{
  g_autoptr (GBytes) data = data_of (4096, 7);
  g_autofree char *hex = eb_store_sha256_hex (data);
  g_autoptr (GError) error = NULL;
  g_autofree char *url = eb_store_put (store, data, NULL, &error);
  g_assert_null (url);
  g_assert_error (error, EB_ERROR, EB_ERROR_IO);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, status));
  g_assert_nonnull (strstr (error->message, code));
  if (hint)
    g_assert_nonnull (strstr (error->message, hint));
  g_assert_null (strstr (error->message, SECRET "x"));
  g_autoptr (GBytes) stored = object_bytes (hex);
  g_assert_null (stored);
}

static void
test_wrong_secret (void)
{
  g_autoptr (EbStore) store = s3_store (BUCKET, KEY_ID, SECRET "x");
  assert_refused (store, "HTTP 403", "SignatureDoesNotMatch", "externalize_store_password");
}

static void
test_wrong_key_id (void)
{
  g_autoptr (EbStore) store = s3_store (BUCKET, "NOSUCHKEY", SECRET);
  assert_refused (store, "HTTP 403", "InvalidAccessKeyId", "externalize_store_user");
}

static void
test_no_bucket (void)
{
  g_autoptr (EbStore) store = s3_store ("nosuchbucket", KEY_ID, SECRET);
  assert_refused (store, "HTTP 404", "NoSuchBucket", NULL);
}

static void
test_other_bytes_replaced (void)
{
  /* an object under the right name and of the right size but holding other
   * bytes (written behind the store's back, signed with curl): the store
   * writes it again and verifies what it reads back */
  g_autoptr (GBytes) data = data_of (50000, 11);
  g_autoptr (GBytes) other = data_of (50000, 12);
  g_autofree char *hex = eb_store_sha256_hex (data);
  g_autofree char *file = g_build_filename (tmp_dir, "other", NULL);
  g_assert_true (g_file_set_contents (file, g_bytes_get_data (other, NULL), 50000, NULL));
  g_autofree char *bucket = bucket_url (BUCKET);
  g_autofree char *cmd = g_strdup_printf (
    "curl -sf --noproxy '*' --aws-sigv4 aws:amz:us-east-1:s3 --user " KEY_ID ":" SECRET
    " -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' -T '%s' '%s/%s'", file, bucket, hex);
  g_assert_cmpint (test_sh (cmd, NULL), ==, 0);
  g_autoptr (GBytes) before = object_bytes (hex);
  g_assert_true (g_bytes_equal (before, other));

  g_autoptr (EbStore) store = s3_store (BUCKET, KEY_ID, SECRET);
  g_autoptr (GError) error = NULL;
  EbStoreOutcome outcome = EB_STORE_PRESENT;
  g_autofree char *url = eb_store_put_full (store, data, hex, &outcome, &error);
  g_assert_no_error (error);
  g_assert_nonnull (url);
  g_assert_cmpint (outcome, ==, EB_STORE_WRITTEN);
  g_autoptr (GBytes) after = object_bytes (hex);
  g_assert_true (g_bytes_equal (after, data));
}

static void
test_config (void)
{
  g_autoptr (GError) error = NULL;
  /* a directory store cannot be signed for */
  g_autoptr (EbConfig) c = eb_config_new ();
  g_assert_true (eb_config_set (c, "externalize_store", tmp_dir, NULL));
  g_assert_true (eb_config_set (c, "externalize_base_url", "http://127.0.0.1/x", NULL));
  g_assert_true (eb_config_set (c, "externalize_store_auth", "aws-sigv4", NULL));
  g_assert_null (eb_store_new (c, &error));
  g_assert_error (error, EB_ERROR, EB_ERROR_CONFIG);
  g_assert_nonnull (strstr (error->message, "aws-sigv4"));
  g_clear_error (&error);
  /* no bucket in the URL */
  g_autoptr (EbConfig) c2 = s3_config ("", KEY_ID, SECRET);
  g_assert_null (eb_store_new (c2, &error));
  g_assert_error (error, EB_ERROR, EB_ERROR_CONFIG);
  g_assert_nonnull (strstr (error->message, "names no bucket"));
  g_clear_error (&error);
  /* no secret */
  g_autoptr (EbConfig) c3 = s3_config (BUCKET, KEY_ID, "");
  g_assert_null (eb_store_new (c3, &error));
  g_assert_error (error, EB_ERROR, EB_ERROR_CONFIG);
  g_assert_nonnull (strstr (error->message, "secret access key"));
  g_clear_error (&error);
  /* the keys' own checks */
  g_autoptr (EbConfig) c4 = eb_config_new ();
  g_assert_false (eb_config_set (c4, "externalize_store_auth", "aws", NULL));
  g_assert_false (eb_config_set (c4, "externalize_store_region", "us:east", NULL));
  g_assert_false (eb_config_set (c4, "externalize_store_region", "", NULL));
  g_assert_true (eb_config_set (c4, "externalize_store_region", "eu-central-1", NULL));
  /* the secret never from the command line */
  g_assert_false (eb_config_apply_option (c4, "externalize_store_password=" SECRET, &error));
  g_clear_error (&error);
}

/* ---- through the command -------------------------------------------------- */

static char *
bytes_text (GBytes *b)
{
  return g_strndup (g_bytes_get_data (b, NULL), g_bytes_get_size (b));
}

/* The decoded content of the first leaf of @msg whose type is
 * application/@type; NULL when there is none. (GMime 3.2 has no autoptr
 * cleanups: explicit unrefs.) */
static GBytes *
part_content (GBytes *msg, const char *type)
{
  GMimeStream *stream = g_mime_stream_mem_new_with_buffer (g_bytes_get_data (msg, NULL),
                                                           g_bytes_get_size (msg));
  GMimeParser *parser = g_mime_parser_new_with_stream (stream);
  GMimeMessage *m = g_mime_parser_construct_message (parser, NULL);
  g_object_unref (parser);
  g_object_unref (stream);
  g_assert_nonnull (m);
  GBytes *found = NULL;
  GMimePartIter *it = g_mime_part_iter_new (GMIME_OBJECT (m));
  do {
    GMimeObject *o = g_mime_part_iter_get_current (it);
    if (o && GMIME_IS_PART (o)
        && g_mime_content_type_is_type (g_mime_object_get_content_type (o), "application", type)) {
      GMimeDataWrapper *w = g_mime_part_get_content (GMIME_PART (o));
      GMimeStream *out = g_mime_stream_mem_new ();
      g_mime_data_wrapper_write_to_stream (w, out);
      GByteArray *a = g_mime_stream_mem_get_byte_array (GMIME_STREAM_MEM (out));
      found = g_bytes_new (a->data, a->len);
      g_object_unref (out);
      break;
    }
  } while (g_mime_part_iter_next (it));
  g_mime_part_iter_free (it);
  g_object_unref (m);
  return found;
}

static GBytes *
message_with (GBytes *attachment)
{
  g_autofree char *b64 = g_base64_encode (g_bytes_get_data (attachment, NULL), g_bytes_get_size (attachment));
  g_autoptr (GString) m = g_string_new (
    "From: a@example.org\nTo: b@example.org\nSubject: s3\nMIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: text/plain\n\nsee the attachment\n"
    "--b\nContent-Type: application/octet-stream; name=blob.bin\n"
    "Content-Disposition: attachment; filename=blob.bin\nContent-Transfer-Encoding: base64\n\n");
  for (const char *p = b64; *p; p += MIN (strlen (p), 76)) {
    g_string_append_len (m, p, (gssize) MIN (strlen (p), 76));
    g_string_append_c (m, '\n');
  }
  g_string_append (m, "--b--\n");
  gsize n = m->len;
  return g_bytes_new_take (g_string_free (g_steal_pointer (&m), FALSE), n);
}

static char *
write_conf (const char *name, const char *text)
{
  char *path = g_build_filename (tmp_dir, name, NULL);
  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  g_assert_cmpint (g_chmod (path, 0600), ==, 0);
  return path;
}

/* A reference to an object in the bucket, written the way externalize writes
 * one, resolves through rewrite --fetch. */
static void
test_rewrite_fetches_it (void)
{
  g_autoptr (EbStore) store = s3_store (BUCKET, KEY_ID, SECRET);
  g_autoptr (GBytes) data = data_of (20000, 21);
  g_autoptr (GError) error = NULL;
  g_autofree char *url = eb_store_put (store, data, NULL, &error);
  g_assert_no_error (error);
  g_autofree char *m = g_strdup_printf (
    "From: a@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: text/plain\n\nsee below\n"
    "--b\nContent-Type: message/external-body; access-type=URL; size=20000;\n URL=\"%s\"\n\n"
    "Content-Type: application/x-blob\nContent-Transfer-Encoding: binary\n\n"
    "--b--\n", url);
  g_autoptr (GBytes) msg = g_bytes_new (m, strlen (m));
  g_autofree char *conf = write_conf ("empty.conf", "");
  g_auto (CmdResult) r = { 0 };
  RUN (&r, msg, "rewrite", "--report", "-c", conf, "--fetch", "--allow-network", "127.0.0.1/32");
  g_autofree char *err = bytes_text (r.err);
  g_test_message ("%s", err);
  g_assert_cmpint (r.status, ==, 0);
  g_autoptr (GBytes) got = part_content (r.out, "x-blob");
  g_assert_nonnull (got);
  g_assert_true (g_bytes_equal (got, data));
}

/* extbody externalize with this store, then rewrite --fetch: the attachment
 * comes back byte for byte. */
static void
test_externalize_round_trip (void)
{
  g_autofree char *store_url = bucket_url (BUCKET);
  g_autofree char *text = g_strdup_printf (
    "externalize_store = %s\nexternalize_store_auth = aws-sigv4\n"
    "externalize_store_user = " KEY_ID "\nexternalize_store_password = " SECRET "\n"
    "externalize_min_size = 10K\n", store_url);
  g_autofree char *conf = write_conf ("s3.conf", text);
  g_autoptr (GBytes) attachment = data_of (64 * 1024, 31);
  g_autoptr (GBytes) msg = message_with (attachment);
  /* the command must be there: a build without it fails here, never skips */
  g_auto (CmdResult) probe = { 0 };
  RUN (&probe, NULL, "externalize", "--help");
  g_assert_cmpint (probe.status, ==, 0);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, msg, "externalize", "-c", conf);
  g_autofree char *err = bytes_text (r.err);
  g_test_message ("externalize: %s", err);
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *out = bytes_text (r.out);
  g_assert_nonnull (strstr (out, "message/external-body"));
  g_autoptr (GBytes) left = part_content (r.out, "octet-stream");
  g_assert_null (left);
  g_autofree char *hex = eb_store_sha256_hex (attachment);
  g_autoptr (GBytes) stored = object_bytes (hex);
  g_assert_nonnull (stored);
  g_assert_true (g_bytes_equal (stored, attachment));

  g_autofree char *empty = write_conf ("empty.conf", "");
  g_auto (CmdResult) back = { 0 };
  RUN (&back, r.out, "rewrite", "--report", "-c", empty, "--fetch", "--allow-network", "127.0.0.1/32");
  g_assert_cmpint (back.status, ==, 0);
  g_autoptr (GBytes) got = part_content (back.out, "octet-stream");
  g_assert_nonnull (got);
  g_assert_true (g_bytes_equal (got, attachment));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_mime_init ();
  g_autofree char *node = g_find_program_in_path ("node");
  if (!node)
    test_skip_all ("node is not installed (Debian's nodejs)");
  g_autofree char *version = NULL;
  g_autofree char *cmd = g_strdup_printf ("'%s' --version", node);
  /* @20minutes/s3rver 4.0.2 runs on Debian 12's node 18 (its package says
   * 20, an advice npm only warns about) */
  if (test_sh (cmd, &version) != 0 || !version || version[0] != 'v' || atoi (version + 1) < 18)
    test_skip_all ("s3rver needs node 18 or newer (Debian 12's nodejs)");
  const char *root = g_getenv ("EXTBODY_TEST_S3RVER");
  g_autofree char *module = g_build_filename (root && *root ? root : "/opt/extbody-test-s3rver",
                                              "node_modules", "@20minutes", "s3rver", "lib",
                                              "s3rver.js", NULL);
  if (!g_file_test (module, G_FILE_TEST_IS_REGULAR))
    test_skip_all ("s3rver is not installed in /opt/extbody-test-s3rver (tests/quickstart.sh test installs it with npm ci)");
  g_autofree char *curl = g_find_program_in_path ("curl");
  if (!curl)
    test_skip_all ("curl is not installed");
  g_autoptr (GError) error = NULL;
  tmp_dir = g_dir_make_tmp ("extbody-s3-XXXXXX", &error);
  g_assert_no_error (error);
  start_s3rver (node, module);
  g_test_add_func ("/s3/put-dedup", test_put_dedup);
  g_test_add_func ("/s3/put-keyed", test_put_keyed);
  g_test_add_func ("/s3/resolver-reads-it", test_resolver_reads_it);
  g_test_add_func ("/s3/wrong-secret", test_wrong_secret);
  g_test_add_func ("/s3/wrong-key-id", test_wrong_key_id);
  g_test_add_func ("/s3/no-bucket", test_no_bucket);
  g_test_add_func ("/s3/other-bytes-replaced", test_other_bytes_replaced);
  g_test_add_func ("/s3/config", test_config);
  g_test_add_func ("/s3/rewrite-fetches-it", test_rewrite_fetches_it);
  g_test_add_func ("/s3/externalize-round-trip", test_externalize_round_trip);
  int rc = g_test_run ();
  stop_s3rver ();
  g_clear_pointer (&s3_dir, g_free);
  g_clear_pointer (&tmp_dir, g_free);
  g_mime_shutdown ();
  return rc;
}
