/* test-postfix-externalize.c - extbody-milter in externalize mode
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
 *     unchanged, byte for byte as sent.
 *
 * Needs root (Postfix refuses otherwise), Postfix, nginx and /usr/bin/python3:
 * skipped (exit 77) without them. Every server and Postfix instance it starts
 * is registered with the watchdog (test-server.h). */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test-server.h"

#define ATTACHMENT_SIZE (5 * 1024 * 1024)

static char *dir;          /* everything lives here */
static char *pfdir;        /* the Postfix instance */
static char *store;        /* the directory store nginx serves */
static char *maildir_new;
static guint smtp_port;
static TestNginx *nginx;

static char *
script (const char *name)
{
  return g_test_build_filename (G_TEST_DIST, "postfix", name, NULL);
}

static int
send_file (const char *msg)
{
  g_autofree char *file = g_build_filename (dir, "msg.eml", NULL);
  g_assert_true (g_file_set_contents (file, msg, -1, NULL));
  g_autofree char *send = script ("send.py");
  g_autofree char *cmd = g_strdup_printf ("python3 '%s' %u '%s' >/dev/null 2>&1", send, smtp_port, file);
  return test_sh (cmd, NULL);
}

/* The path of the delivered file holding @needle, waiting up to @seconds. */
static char *
delivered (const char *needle, int seconds)
{
  for (int t = 0; t < seconds * 20; t++) {
    g_autoptr (GDir) d = g_dir_open (maildir_new, 0, NULL);
    const char *n;
    while (d && (n = g_dir_read_name (d))) {
      char *p = g_build_filename (maildir_new, n, NULL);
      g_autofree char *text = NULL;
      if (g_file_get_contents (p, &text, NULL, NULL) && strstr (text, needle))
        return p;
      g_free (p);
    }
    g_usleep (50000);
  }
  return NULL;
}

/* The delivered message without the fields Postfix puts on top. */
static const char *
after_trace (const char *text)
{
  const char *p = strstr (text, "\nReceived: ");
  g_assert_nonnull (p);
  p++;
  do {
    p = strchr (p, '\n') + 1;
  } while (*p == ' ' || *p == '\t');
  return p;
}

static char *
lf (const char *crlf)
{
  GString *s = g_string_new (NULL);
  for (const char *p = crlf; *p; p++)
    if (!(*p == '\r' && p[1] == '\n'))
      g_string_append_c (s, *p);
  return g_string_free (s, FALSE);
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

/* A message with a short text part and @data as an application/pdf
 * attachment in base64 (76-character lines), CRLF line ends. */
static char *
message_with_attachment (const char *message_id, GBytes *data)
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
    "--=-b\r\nContent-Type: application/pdf; name=\"report.pdf\"\r\n"
    "Content-Disposition: attachment; filename=\"report.pdf\"\r\n"
    "Content-Transfer-Encoding: base64\r\n\r\n", message_id);
  gsize len = strlen (b64);
  for (gsize i = 0; i < len; i += 76) {
    g_string_append_len (m, b64 + i, (gssize) MIN ((gsize) 76, len - i));
    g_string_append (m, "\r\n");
  }
  g_string_append (m, "--=-b--\r\n");
  return g_string_free (m, FALSE);
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
  g_autofree char *py = script ("mime-check.py");
  g_autofree char *cmd = g_strdup_printf ("/usr/bin/python3 '%s' %s '%s'", py, mode, file);
  char *out = NULL;
  g_assert_cmpint (test_sh (cmd, &out), ==, 0);
  g_assert_nonnull (out);
  return out;
}

/* The value of "KEY=" in mime-check.py's output. */
static char *
value_of (const char *out, const char *key)
{
  g_autofree char *k = g_strdup_printf ("%s=", key);
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    if (g_str_has_prefix (lines[i], k))
      return g_strdup (lines[i] + strlen (k));
  return NULL;
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
  g_autofree char *access = value_of (ref, "access-type");
  g_autofree char *url = value_of (ref, "url");
  g_autofree char *size = value_of (ref, "size");
  g_autofree char *maxword = value_of (ref, "maxword");
  g_autofree char *type = value_of (ref, "type");
  g_autofree char *ref_md5 = value_of (ref, "md5");
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
  g_autofree char *want = lf (m);
  g_assert_true (strcmp (after_trace (got), want) == 0);
  g_autoptr (GPtrArray) objects = store_objects ();
  g_assert_cmpuint (objects->len, ==, 1);   /* the first test's only */
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_autofree char *postfix = g_find_program_in_path ("postfix");
  if (!postfix && g_file_test ("/usr/sbin/postfix", G_FILE_TEST_IS_EXECUTABLE))
    postfix = g_strdup ("/usr/sbin/postfix");
  if (geteuid () != 0)
    test_skip_all ("needs root (Postfix refuses to run otherwise)");
  if (!postfix)
    test_skip_all ("Postfix is not installed (apt-get install postfix)");
  if (!g_file_test ("/usr/sbin/nginx", G_FILE_TEST_IS_EXECUTABLE))
    test_skip_all ("nginx is not installed (apt-get install nginx-light)");
  if (!g_file_test ("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE))
    test_skip_all ("/usr/bin/python3 is not installed");
  if (!g_getenv ("EXTBODY_MILTER") || !g_getenv ("EXTBODY"))
    test_skip_all ("EXTBODY_MILTER and EXTBODY are not set (run through ctest)");
  struct passwd *nobody = getpwnam ("nobody");
  if (!nobody)
    test_skip_all ("no user nobody to run the milter as");
  g_setenv ("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", FALSE);
  dir = g_dir_make_tmp ("extbody-pfx-XXXXXX", NULL);
  g_assert_nonnull (dir);
  g_chmod (dir, 0755);
  g_autofree char *rm_dir = g_strdup_printf ("rm -rf '%s'", dir);
  guint wd_dir = test_watchdog_add (rm_dir);
  pfdir = g_build_filename (dir, "pf", NULL);
  maildir_new = g_build_filename (pfdir, "mail", "Maildir", "new", NULL);
  store = g_build_filename (dir, "store", NULL);
  g_assert_cmpint (g_mkdir (store, 0755), ==, 0);
  /* the milter runs as nobody: the store is its own until the failure test */
  g_assert_cmpint (chown (store, nobody->pw_uid, nobody->pw_gid), ==, 0);
  nginx = test_nginx_start (store);
  g_assert_nonnull (nginx);

  g_autoptr (GError) error = NULL;
  /* the socket's directory is nobody's, so that the milter removes it at the stop */
  g_autofree char *run = g_build_filename (dir, "run", NULL);
  g_assert_cmpint (g_mkdir (run, 0755), ==, 0);
  g_assert_cmpint (chown (run, nobody->pw_uid, nobody->pw_gid), ==, 0);
  g_autofree char *sock = g_build_filename (run, "milter-out.sock", NULL);
  g_autofree char *spec = g_strdup_printf ("unix:%s", sock);
  g_autofree char *conf = g_build_filename (dir, "milter.conf", NULL);
  g_autofree char *conf_text = g_strdup_printf (
    "milter_umask = 000\nmilter_mode = externalize\nexternalize_store = %s\n"
    "externalize_base_url = http://127.0.0.1:%u\n", store, nginx->port);
  g_assert_true (g_file_set_contents (conf, conf_text, -1, NULL));
  g_autofree char *milter_log = g_build_filename (dir, "milter.log", NULL);
  g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
  g_subprocess_launcher_set_stderr_file_path (launcher, milter_log);
  GSubprocess *milter = g_subprocess_launcher_spawn (launcher, &error, g_getenv ("EXTBODY_MILTER"),
                                                     "-p", spec, "-c", conf, "-u", "nobody", NULL);
  g_assert_no_error (error);
  g_autofree char *kill_milter = g_strdup_printf ("kill -KILL %s", g_subprocess_get_identifier (milter));
  guint wd_milter = test_watchdog_add (kill_milter);
  for (int i = 0; i < 250 && !g_file_test (sock, G_FILE_TEST_EXISTS); i++)
    g_usleep (20000);
  g_assert_true (g_file_test (sock, G_FILE_TEST_EXISTS));

  smtp_port = test_free_port ();
  g_autofree char *peer = script ("pf-peer.sh");
  g_autofree char *up = g_strdup_printf ("sh '%s' up '%s' %u '%s' tempfail", peer, pfdir, smtp_port, spec);
  g_autofree char *stop = g_strdup_printf ("postfix -c '%s/etc' stop", pfdir);
  guint wd_pf = test_watchdog_add (stop);
  g_assert_cmpint (test_sh (up, NULL), ==, 0);
  /* a 5 MB attachment in base64, and a little room */
  g_autofree char *size = g_strdup_printf ("sh '%s' set '%s' message_size_limit=20000000 milter_content_timeout=60s",
                                           peer, pfdir);
  g_assert_cmpint (test_sh (size, NULL), ==, 0);

  g_test_add_func ("/postfix-externalize/1-attachment-becomes-reference", test_externalized);
  g_test_add_func ("/postfix-externalize/2-store-unwritable-message-unchanged", test_store_unwritable);
  int rc = g_test_run ();

  g_autofree char *down = g_strdup_printf ("sh '%s' down '%s'", peer, pfdir);
  test_sh (down, NULL);
  test_watchdog_remove (wd_pf);
  g_subprocess_send_signal (milter, SIGTERM);
  g_subprocess_wait (milter, NULL, NULL);
  g_assert_true (g_subprocess_get_if_exited (milter));
  int milter_status = g_subprocess_get_exit_status (milter);
  g_object_unref (milter);
  test_watchdog_remove (wd_milter);
  g_autofree char *log = NULL;
  g_file_get_contents (milter_log, &log, NULL, NULL);
  g_test_message ("milter log:\n%s", log ? log : "");
  g_clear_pointer (&nginx, test_nginx_stop);
  test_sh (rm_dir, NULL);
  test_watchdog_remove (wd_dir);
  if (milter_status != 0) {
    g_printerr ("the milter exited %d\n", milter_status);
    return 1;
  }
  return rc;
}
