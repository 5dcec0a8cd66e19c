/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-store.c - where externalized parts go (src/net/eb-store.h), against real
 * servers on 127.0.0.1.
 *
 *   directory  put, dedup (a second put writes nothing: same inode, its
 *              mtime), a corrupt object replaced, threads putting the same
 *              objects at once, an unwritable directory,
 *              a full file system (a 64k tmpfs) leaving no temporary file,
 *              the directory served by a real nginx and the URL fetched
 *   WebDAV     a real Apache (mod_dav, mod_dav_fs, mod_auth_basic) of its own
 *              (test_apache_start, tests/servers/test-server.h, with collections
 *              of this test added)
 *              under a temporary directory: put and dedup (no second PUT in
 *              the access log), a corrupt object replaced, a wrong password
 *              (401), a store that refuses (403, <Limit PUT>), one that fills
 *              up (413 from LimitRequestBody, 507 from a tmpfs under the DAV
 *              directory), one that never answers (externalize_store_timeout
 *              = 2), one that returns other bytes than were written (GET
 *              rewritten to another directory): each an error and no URL
 *   externalize_key  objects named by HMAC-SHA256 (GLib's GHmac as the
 *              reference), found again and verified by that name in a
 *              directory and a WebDAV store; other bytes read back refused
 *
 * Run as root, the program runs itself again inside a mount namespace of its
 * own (unshare --mount) so that it can mount the small tmpfs file systems
 * and a read-only bind mount; without one those cases are skipped. The
 * servers run as www-data when root (their directories are made readable for
 * it). Without nginx, or without apache2 and htpasswd, their cases are
 * skipped (the whole program exits 77 only when nothing could run). */
#include "eb-config.h"
#include "eb-store.h"
#include "test-server.h"
#include <curl/curl.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <pwd.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define INSIDE_ENV "EXTBODY_TEST_STORE_NAMESPACE"

static char *top;               /* the temporary directory of everything */
static gboolean in_namespace;   /* mounts may be made */
static char *daemon_user;       /* "www-data" when root, else NULL */
static char *nginx_bin;

/* ---- helpers --------------------------------------------------------------- */

static GBytes *
make_bytes (gsize n, guint32 seed)
{
  g_autoptr (GRand) r = g_rand_new_with_seed (seed);
  guint8 *p = g_malloc (n ? n : 1);
  for (gsize i = 0; i < n; i++)
    p[i] = (guint8) g_rand_int_range (r, 0, 256);
  return g_bytes_new_take (p, n);
}

static char *
subdir (const char *name)
{
  g_autofree char *d = g_build_filename (top, name, NULL);
  g_assert_cmpint (g_mkdir_with_parents (d, 0755), ==, 0);
  g_assert_cmpint (g_chmod (d, 0755), ==, 0);
  return g_steal_pointer (&d);
}

/* Hand @path to the daemon's user (its directories it writes into). */
static void
give_to_daemon (const char *path)
{
  if (!daemon_user)
    return;
  struct passwd *pw = getpwnam (daemon_user);
  g_assert_nonnull (pw);
  g_assert_cmpint (chown (path, pw->pw_uid, pw->pw_gid), ==, 0);
}

static void
sh_ok (const char *cmd)
{
  g_autofree char *out = NULL;
  int st = test_sh (cmd, &out);
  if (st != 0)
    g_error ("\"%s\" failed (%d): %s", cmd, st, out ? out : "");
}

static guint
count_entries (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_assert_nonnull (d);
  guint n = 0;
  while (g_dir_read_name (d))
    n++;
  return n;
}

static void
assert_file_is (const char *path, GBytes *want)
{
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr (GError) e = NULL;
  g_assert_true (g_file_get_contents (path, &text, &len, &e));
  g_assert_no_error (e);
  gsize wlen = 0;
  const void *w = g_bytes_get_data (want, &wlen);
  g_assert_cmpmem (text, len, w, wlen);
}

static EbConfig *
store_config (const char *store, const char *base_url)
{
  EbConfig *c = eb_config_new ();
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_config_set (c, "externalize_store", store, &e));
  if (base_url)
    g_assert_true (eb_config_set (c, "externalize_base_url", base_url, &e));
  g_assert_no_error (e);
  return c;
}

static EbStore *
new_store (EbConfig *c)
{
  g_autoptr (GError) e = NULL;
  EbStore *s = eb_store_new (c, &e);
  g_assert_no_error (e);
  g_assert_nonnull (s);
  return s;
}

/* GET @url with libcurl (no extbody code): the body, or NULL; @status the
 * HTTP status. */
static size_t
collect (char *p, size_t size, size_t n, void *user)
{
  g_byte_array_append (user, (const guint8 *) p, (guint) (size * n));
  return size * n;
}

static GBytes *
http_get (const char *url, long *status)
{
  CURL *e = curl_easy_init ();
  GByteArray *body = g_byte_array_new ();
  curl_easy_setopt (e, CURLOPT_URL, url);
  curl_easy_setopt (e, CURLOPT_PROXY, "");
  curl_easy_setopt (e, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt (e, CURLOPT_WRITEDATA, body);
  CURLcode rc = curl_easy_perform (e);
  *status = 0;
  curl_easy_getinfo (e, CURLINFO_RESPONSE_CODE, status);
  curl_easy_cleanup (e);
  if (rc != CURLE_OK) {
    g_byte_array_unref (body);
    return NULL;
  }
  return g_byte_array_free_to_bytes (body);
}

/* ---- daemons --------------------------------------------------------------- */

typedef struct {
  GSubprocess *proc;
  guint        watchdog;
  guint        port;
  char        *log;      /* its error log, shown when it does not start */
} Daemon;

static void
own_group (gpointer data G_GNUC_UNUSED)
{
  setsid ();
}

/* Start @argv (its own process group, so that the watchdog's kill reaches
 * its workers too) and wait until 127.0.0.1:@port accepts a connection. */
static Daemon *
daemon_start (const char *const *argv, guint port, const char *log)
{
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDIN_PIPE);
  g_subprocess_launcher_set_child_setup (l, own_group, NULL, NULL);
  g_autoptr (GError) e = NULL;
  Daemon *d = g_new0 (Daemon, 1);
  d->proc = g_subprocess_launcher_spawnv (l, argv, &e);
  g_assert_no_error (e);
  d->port = port;
  d->log = g_strdup (log);
  g_autofree char *cmd = g_strdup_printf ("kill -KILL -%s 2>/dev/null",
                                          g_subprocess_get_identifier (d->proc));
  d->watchdog = test_watchdog_add (cmd);
  g_autoptr (GSocketClient) client = g_socket_client_new ();
  for (;;) {
    g_autoptr (GSocketConnection) conn =
      g_socket_client_connect_to_host (client, "127.0.0.1", (guint16) port, NULL, NULL);
    if (conn)
      break;
    if (!g_subprocess_get_identifier (d->proc)) {
      /* the daemon ended before it listened: show why */
      g_autofree char *text = NULL;
      g_file_get_contents (log, &text, NULL, NULL);
      g_error ("%s did not start: %s", argv[0], text ? text : "(no log)");
    }
    g_usleep (50 * 1000);
  }
  return d;
}

static void
daemon_stop (Daemon *d)
{
  if (!d)
    return;
  const char *pid = g_subprocess_get_identifier (d->proc);
  if (pid) {
    g_autofree char *cmd = g_strdup_printf ("kill -TERM -%s 2>/dev/null", pid);
    test_sh (cmd, NULL);
  }
  g_subprocess_wait (d->proc, NULL, NULL);
  test_watchdog_remove (d->watchdog);
  g_object_unref (d->proc);
  g_free (d->log);
  g_free (d);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Daemon, daemon_stop)

/* ---- directory ------------------------------------------------------------- */

static void
test_dir_put_dedup (void)
{
  g_autofree char *dir = subdir ("objects");
  g_autoptr (EbConfig) c = store_config (dir, "http://files.example/objects");
  g_autoptr (EbStore) s = new_store (c);
  g_autoptr (GBytes) data = make_bytes (200000, 1);
  g_autofree char *hex = eb_store_sha256_hex (data);
  g_autoptr (GError) e = NULL;
  EbStoreOutcome out = EB_STORE_PRESENT;
  g_autofree char *url = eb_store_put_full (s, data, hex, &out, &e);
  g_assert_no_error (e);
  g_autofree char *want = g_strconcat ("http://files.example/objects/", hex, NULL);
  g_assert_cmpstr (url, ==, want);
  g_assert_cmpint (out, ==, EB_STORE_WRITTEN);
  g_autofree char *path = g_build_filename (dir, hex, NULL);
  assert_file_is (path, data);
  struct stat a, b;
  g_assert_cmpint (g_stat (path, &a), ==, 0);
  g_assert_cmpint (a.st_mode & 07777, ==, 0644);
  g_assert_cmpuint (count_entries (dir), ==, 1);   /* no temporary file left */

  /* the same bytes again: nothing written (same inode), its modification
   * time renewed (expiry by age must not remove what newer mail refers to) */
  struct timespec old_times[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
  g_assert_cmpint (utimensat (AT_FDCWD, path, old_times, 0), ==, 0);
  gint64 before_put = g_get_real_time () / G_USEC_PER_SEC;
  g_autofree char *url2 = eb_store_put_full (s, data, NULL, &out, &e);
  g_assert_no_error (e);
  g_assert_cmpstr (url2, ==, want);
  g_assert_cmpint (out, ==, EB_STORE_PRESENT);
  g_assert_cmpint (g_stat (path, &b), ==, 0);
  g_assert_cmpuint (a.st_ino, ==, b.st_ino);
  g_assert_cmpint (b.st_mtim.tv_sec, >=, before_put);
  g_assert_cmpuint (count_entries (dir), ==, 1);

  /* the public entry point: the same URL; an empty part works too */
  g_autofree char *url3 = eb_store_put (s, data, hex, &e);
  g_assert_no_error (e);
  g_assert_cmpstr (url3, ==, want);
  g_autoptr (GBytes) empty = g_bytes_new (NULL, 0);
  g_autofree char *url4 = eb_store_put (s, empty, NULL, &e);
  g_assert_no_error (e);
  g_assert_true (g_str_has_suffix (url4, "/e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
}

static void
test_dir_corrupt_replaced (void)
{
  g_autofree char *dir = subdir ("corrupt");
  g_autoptr (EbConfig) c = store_config (dir, "http://files.example/c/");
  g_autoptr (EbStore) s = new_store (c);
  g_autoptr (GBytes) data = make_bytes (5000, 2);
  g_autofree char *hex = eb_store_sha256_hex (data);
  g_autofree char *path = g_build_filename (dir, hex, NULL);
  /* same size, other bytes; then a shorter one; then a symbolic link */
  g_autoptr (GBytes) other = make_bytes (5000, 3);
  const char *variants[] = { "same-size", "short", "symlink" };
  for (guint i = 0; i < G_N_ELEMENTS (variants); i++) {
    g_unlink (path);
    if (i == 0)
      g_assert_true (g_file_set_contents (path, g_bytes_get_data (other, NULL), 5000, NULL));
    else if (i == 1)
      g_assert_true (g_file_set_contents (path, g_bytes_get_data (data, NULL), 4999, NULL));
    else {
      g_autofree char *elsewhere = g_build_filename (top, "symlink-target", NULL);
      g_assert_true (g_file_set_contents (elsewhere, g_bytes_get_data (data, NULL), 5000, NULL));
      g_assert_cmpint (symlink (elsewhere, path), ==, 0);
    }
    g_autoptr (GError) e = NULL;
    EbStoreOutcome out = EB_STORE_PRESENT;
    g_autofree char *url = eb_store_put_full (s, data, hex, &out, &e);
    g_assert_no_error (e);
    g_assert_cmpint (out, ==, EB_STORE_WRITTEN);
    g_autofree char *want = g_strconcat ("http://files.example/c/", hex, NULL);
    g_assert_cmpstr (url, ==, want);
    g_assert_false (g_file_test (path, G_FILE_TEST_IS_SYMLINK));
    assert_file_is (path, data);
    g_assert_cmpuint (count_entries (dir), ==, 1);
  }
}

/* ---- externalize_key ----------------------------------------------------- */

#define STORE_KEY "store-key-0123456789abcdef0123456789abcdef"

static void
set_key (EbConfig *c)
{
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_config_set (c, "externalize_key", STORE_KEY, &e));
  g_assert_no_error (e);
}

/* The object's name with STORE_KEY, by GLib's HMAC (not extbody's). */
static char *
keyed_name (GBytes *data)
{
  g_autoptr (GBytes) k = g_bytes_new_static (STORE_KEY, strlen (STORE_KEY));
  return g_compute_hmac_for_bytes (G_CHECKSUM_SHA256, k, data);
}

/* A directory store with externalize_key: the object under its HMAC name
 * (nothing under its SHA-256), found again by it (same inode), an object of
 * that name with other bytes replaced; the SHA-256 given is still checked
 * against the bytes; a key too short for the configuration's check is
 * refused by the store too, without its value. */
static void
test_dir_keyed (void)
{
  g_autofree char *dir = subdir ("keyed");
  g_autoptr (EbConfig) c = store_config (dir, "http://files.example/k");
  set_key (c);
  g_autoptr (EbStore) s = new_store (c);
  g_autoptr (GBytes) data = make_bytes (100000, 30);
  g_autofree char *name = keyed_name (data);
  g_autofree char *hex = eb_store_sha256_hex (data);
  g_autoptr (GError) e = NULL;
  EbStoreOutcome out = EB_STORE_PRESENT;
  g_autofree char *url = eb_store_put_full (s, data, hex, &out, &e);
  g_assert_no_error (e);
  g_autofree char *want = g_strconcat ("http://files.example/k/", name, NULL);
  g_assert_cmpstr (url, ==, want);
  g_assert_cmpint (out, ==, EB_STORE_WRITTEN);
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autofree char *plain = g_build_filename (dir, hex, NULL);
  assert_file_is (path, data);
  g_assert_false (g_file_test (plain, G_FILE_TEST_EXISTS));
  g_assert_cmpuint (count_entries (dir), ==, 1);
  struct stat a, b;
  g_assert_cmpint (g_stat (path, &a), ==, 0);
  g_autofree char *url2 = eb_store_put_full (s, data, NULL, &out, &e);
  g_assert_no_error (e);
  g_assert_cmpstr (url2, ==, want);
  g_assert_cmpint (out, ==, EB_STORE_PRESENT);
  g_assert_cmpint (g_stat (path, &b), ==, 0);
  g_assert_cmpuint (a.st_ino, ==, b.st_ino);

  /* same size, other bytes, under the name: written again */
  g_autoptr (GBytes) other = make_bytes (100000, 31);
  g_assert_true (g_file_set_contents (path, g_bytes_get_data (other, NULL), 100000, NULL));
  g_autofree char *url3 = eb_store_put_full (s, data, hex, &out, &e);
  g_assert_no_error (e);
  g_assert_cmpstr (url3, ==, want);
  g_assert_cmpint (out, ==, EB_STORE_WRITTEN);
  assert_file_is (path, data);
  g_assert_cmpuint (count_entries (dir), ==, 1);

  /* the name is no SHA-256: given as one, the put is refused */
  g_autofree char *url4 = eb_store_put_full (s, data, name, &out, &e);
  g_assert_null (url4);
  g_assert_error (e, EB_ERROR, EB_ERROR_IO);
  g_assert_nonnull (strstr (e->message, "is not the SHA-256 of the bytes"));
  g_clear_error (&e);

  /* a key the configuration's check did not see (set in the structure) */
  g_free (c->externalize_key);
  c->externalize_key = g_strdup ("short-Key");
  g_assert_null (eb_store_new (c, &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
  g_assert_nonnull (strstr (e->message, "externalize_key: too short"));
  g_assert_null (strstr (e->message, "short-Key"));
}

/* Threads putting the same objects at once (batch workers, milter threads):
 * every put succeeds, each object is there once, no temporary file stays. */
typedef struct {
  EbStore *store;
  GBytes  *data[3];
  guint    failures;
} Race;

static gpointer
race_worker (gpointer user)
{
  Race *r = user;
  for (guint i = 0; i < 30; i++) {
    g_autoptr (GError) e = NULL;
    g_autofree char *url = eb_store_put (r->store, r->data[i % 3], NULL, &e);
    if (!url) {
      g_printerr ("put failed: %s\n", e->message);
      g_atomic_int_inc (&r->failures);
    }
  }
  return NULL;
}

static void
test_dir_threads (void)
{
  g_autofree char *dir = subdir ("threads");
  g_autoptr (EbConfig) c = store_config (dir, "http://files.example/r");
  g_autoptr (EbStore) s = new_store (c);
  Race r = { s, { make_bytes (70000, 30), make_bytes (1, 31), make_bytes (150000, 32) }, 0 };
  GThread *t[6];
  for (guint i = 0; i < G_N_ELEMENTS (t); i++)
    t[i] = g_thread_new ("put", race_worker, &r);
  for (guint i = 0; i < G_N_ELEMENTS (t); i++)
    g_thread_join (t[i]);
  g_assert_cmpuint (r.failures, ==, 0);
  g_assert_cmpuint (count_entries (dir), ==, 3);
  for (guint i = 0; i < 3; i++) {
    g_autofree char *hex = eb_store_sha256_hex (r.data[i]);
    g_autofree char *path = g_build_filename (dir, hex, NULL);
    assert_file_is (path, r.data[i]);
    g_bytes_unref (r.data[i]);
  }
}

static void
test_dir_unwritable (void)
{
  g_autofree char *dir = subdir ("unwritable");
  const char *cause;
  if (geteuid () == 0) {
    if (!in_namespace) {
      g_test_skip ("root writes anywhere, and no mount namespace for a read-only mount");
      return;
    }
    g_autofree char *cmd = g_strdup_printf ("mount --bind '%s' '%s' && mount -o remount,bind,ro '%s'",
                                            dir, dir, dir);
    sh_ok (cmd);
    cause = g_strerror (EROFS);
  } else {
    g_assert_cmpint (g_chmod (dir, 0555), ==, 0);
    cause = g_strerror (EACCES);
  }
  g_autoptr (EbConfig) c = store_config (dir, "http://files.example/u");
  g_autoptr (EbStore) s = new_store (c);
  g_autoptr (GBytes) data = make_bytes (1000, 4);
  g_autoptr (GError) e = NULL;
  g_autofree char *url = eb_store_put (s, data, NULL, &e);
  g_assert_null (url);
  g_assert_error (e, EB_ERROR, EB_ERROR_IO);
  g_test_message ("%s", e->message);
  g_assert_nonnull (strstr (e->message, dir));
  g_assert_nonnull (strstr (e->message, cause));
  g_assert_null (strchr (e->message, '\n'));
  g_assert_cmpuint (count_entries (dir), ==, 0);
  g_chmod (dir, 0755);
}

static void
test_dir_full (void)
{
  if (!in_namespace) {
    g_test_skip ("needs root and a mount namespace for a small tmpfs");
    return;
  }
  g_autofree char *dir = subdir ("tiny");
  g_autofree char *cmd = g_strdup_printf ("mount -t tmpfs -o size=64k,mode=0755 tmpfs '%s'", dir);
  sh_ok (cmd);
  g_autoptr (EbConfig) c = store_config (dir, "http://files.example/t");
  g_autoptr (EbStore) s = new_store (c);
  /* a small object fits; a large one does not */
  g_autoptr (GBytes) small = make_bytes (1000, 5);
  g_autoptr (GError) e = NULL;
  g_autofree char *ok = eb_store_put (s, small, NULL, &e);
  g_assert_no_error (e);
  g_assert_nonnull (ok);
  g_autoptr (GBytes) big = make_bytes (200000, 6);
  g_autofree char *url = eb_store_put (s, big, NULL, &e);
  g_assert_null (url);
  g_assert_error (e, EB_ERROR, EB_ERROR_IO);
  g_test_message ("%s", e->message);
  g_assert_nonnull (strstr (e->message, g_strerror (ENOSPC)));
  g_assert_nonnull (strstr (e->message, dir));
  g_assert_cmpuint (count_entries (dir), ==, 1);   /* the small one; no temporary file */
}

static void
test_dir_served_by_nginx (void)
{
  if (!nginx_bin) {
    g_test_skip ("nginx is not installed");
    return;
  }
  g_autofree char *ndir = subdir ("nginx");
  g_autofree char *objects = subdir ("served");
  guint port = test_free_port ();
  g_autofree char *log = g_build_filename (ndir, "error.log", NULL);
  /* the server block of data/store-nginx.conf.example itself, on a loopback
   * port without TLS and serving the test's directory */
  g_autofree char *example_path = g_build_filename (g_getenv ("EXTBODY_DATADIR"),
                                                    "store-nginx.conf.example", NULL);
  g_autofree char *example = NULL;
  g_assert_true (g_file_get_contents (example_path, &example, NULL, NULL));
  g_assert_nonnull (strstr (example, "    listen 443 ssl;\n"));
  g_assert_nonnull (strstr (example, "/srv/extbody/objects/$1;"));
  g_autofree char *listen = g_strdup_printf ("    listen 127.0.0.1:%u;\n", port);
  g_auto (GStrv) p1 = g_strsplit (example, "    listen 443 ssl;\n", -1);
  g_autofree char *e1 = g_strjoinv (listen, p1);
  g_auto (GStrv) p2 = g_strsplit (e1, "/srv/extbody/objects", -1);
  g_autofree char *site = g_strjoinv (objects, p2);
  g_autofree char *site_path = g_build_filename (ndir, "site.conf", NULL);
  g_assert_true (g_file_set_contents (site_path, site, -1, NULL));
  g_autofree char *conf_text = g_strdup_printf (
    "daemon off;\n"
    "%s%s%s"
    "worker_processes 1;\n"
    "pid %s/nginx.pid;\n"
    "error_log %s;\n"
    "events { worker_connections 16; }\n"
    "http {\n"
    "  access_log %s/access.log;\n"
    "  client_body_temp_path %s/body;\n"
    "  proxy_temp_path %s/proxy;\n"
    "  fastcgi_temp_path %s/fastcgi;\n"
    "  uwsgi_temp_path %s/uwsgi;\n"
    "  scgi_temp_path %s/scgi;\n"
    "  include %s;\n"
    "}\n",
    daemon_user ? "user " : "", daemon_user ? daemon_user : "", daemon_user ? ";\n" : "",
    ndir, log, ndir, ndir, ndir, ndir, ndir, ndir, site_path);
  g_autofree char *conf = g_build_filename (ndir, "nginx.conf", NULL);
  g_assert_true (g_file_set_contents (conf, conf_text, -1, NULL));
  g_autoptr (Daemon) d G_GNUC_UNUSED = daemon_start ((const char *const[]) { nginx_bin, "-e", log, "-p", ndir, "-c", conf, NULL },
                                       port, log);

  g_autofree char *base = g_strdup_printf ("http://127.0.0.1:%u/objects", port);
  g_autoptr (EbConfig) c = store_config (objects, base);
  g_autoptr (EbStore) s = new_store (c);
  g_autoptr (GBytes) data = make_bytes (300000, 7);
  g_autoptr (GError) e = NULL;
  g_autofree char *url = eb_store_put (s, data, NULL, &e);
  g_assert_no_error (e);
  long status = 0;
  g_autoptr (GBytes) got = http_get (url, &status);
  g_assert_cmpint (status, ==, 200);
  g_assert_nonnull (got);
  g_assert_true (g_bytes_equal (got, data));
  /* only object names are served: no listing, no other file */
  g_autofree char *stray = g_build_filename (objects, ".tmp-file", NULL);
  g_assert_true (g_file_set_contents (stray, "x", 1, NULL));
  g_assert_cmpint (g_chmod (stray, 0644), ==, 0);
  const char *others[] = { "", ".tmp-file" };
  for (guint i = 0; i < G_N_ELEMENTS (others); i++) {
    g_autofree char *u = g_strdup_printf ("%s/%s", base, others[i]);
    g_autoptr (GBytes) b G_GNUC_UNUSED = http_get (u, &status);
    g_assert_cmpint (status, ==, 404);
  }
}

/* ---- WebDAV (Apache) ------------------------------------------------------- */

#define DAV_USER TEST_DAV_USER
#define DAV_PASSWORD TEST_DAV_PASSWORD

static TestApache *apache;
static char *adir;          /* its directory */
static guint silent_port;   /* a listener that never answers */
static GSocket *silent;

/* The private Apache of test-server.h (its /dav collection needs basic
 * authentication to write) with collections of this test's own. */
static void
apache_start (void)
{
  adir = subdir ("apache");
  const char *dirs[] = { "ro", "small", "full", "liar", "other", "sigv4" };
  for (guint i = 0; i < G_N_ELEMENTS (dirs); i++) {
    g_autofree char *p = g_build_filename (adir, dirs[i], NULL);
    g_assert_cmpint (g_mkdir_with_parents (p, 0755), ==, 0);
    if (!g_str_equal (dirs[i], "other"))
      give_to_daemon (p);
  }
  if (in_namespace) {
    g_autofree char *cmd = g_strdup_printf ("mount -t tmpfs -o size=64k,mode=0777 tmpfs '%s/full'", adir);
    sh_ok (cmd);
  }
  g_autofree char *extra = g_strdup_printf (
    /* refuses every PUT */
    "Alias /ro %s/ro\n"
    "<Directory %s/ro>\n  Dav On\n  <Limit PUT>\n    Require all denied\n  </Limit>\n"
    "  <LimitExcept PUT>\n    Require all granted\n  </LimitExcept>\n</Directory>\n"
    /* takes 1024 bytes at most */
    "Alias /small %s/small\n"
    "<Directory %s/small>\n  Dav On\n  LimitRequestBody 1024\n  Require all granted\n</Directory>\n"
    /* a 64k tmpfs */
    "Alias /full %s/full\n"
    "<Directory %s/full>\n  Dav On\n  Require all granted\n</Directory>\n"
    /* PUT writes into liar/, GET and HEAD read other/ */
    "RewriteEngine On\n"
    "RewriteCond %%{REQUEST_METHOD} ^(GET|HEAD)$\n"
    "RewriteRule ^/liar/(.*)$ %s/other/$1 [L]\n"
    "Alias /liar %s/liar\n"
    "<Directory %s/liar>\n  Dav On\n  Require all granted\n</Directory>\n"
    "<Directory %s/other>\n  Require all granted\n</Directory>\n"
    /* open to anyone, Authorization ignored: an aws-sigv4 store's requests
     * go through, and their payload hash is logged */
    "Alias /sigv4 %s/sigv4\n"
    "<Directory %s/sigv4>\n  Dav On\n  Require all granted\n</Directory>\n"
    "LogFormat \"%%m %%U %%{x-amz-content-sha256}i\" sigv4\n"
    "CustomLog %s/sigv4.log sigv4\n",
    adir, adir,
    adir, adir,
    adir, adir,
    adir, adir, adir, adir,
    adir, adir, adir);
  apache = test_apache_start (adir, daemon_user, extra);
  g_assert_nonnull (apache);

  /* accepts connections (the kernel's backlog) and never reads or answers */
  g_autoptr (GError) e = NULL;
  silent = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, &e);
  g_assert_no_error (e);
  g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr (GSocketAddress) any = g_inet_socket_address_new (lo, 0);
  g_assert_true (g_socket_bind (silent, any, TRUE, &e));
  g_assert_true (g_socket_listen (silent, &e));
  g_autoptr (GSocketAddress) bound = g_socket_get_local_address (silent, &e);
  g_assert_no_error (e);
  silent_port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
}

static char *
dav_url (const char *collection)
{
  return test_apache_dav_url (apache, collection);
}

/* Lines "METHOD /collection/HEX STATUS" of Apache's access log. */
static guint
count_requests (const char *method, const char *collection, const char *hex)
{
  g_autofree char *path = g_build_filename (adir, "access.log", NULL);
  g_autofree char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, NULL))
    return 0;
  g_autofree char *prefix = g_strdup_printf ("%s /%s/%s ", method, collection, hex);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  guint n = 0;
  for (guint i = 0; lines[i]; i++)
    if (g_str_has_prefix (lines[i], prefix))
      n++;
  return n;
}

static EbConfig *
dav_config (const char *collection, const char *password)
{
  g_autofree char *url = dav_url (collection);
  EbConfig *c = store_config (url, NULL);
  if (password) {
    g_assert_true (eb_config_set (c, "externalize_store_user", DAV_USER, NULL));
    g_assert_true (eb_config_set (c, "externalize_store_password", password, NULL));
  }
  return c;
}

/* A put that must fail: no URL, EB_ERROR_IO, one line naming the store and
 * @cause, no password. */
static void
assert_put_fails (EbConfig *c, GBytes *data, const char *cause)
{
  g_autoptr (EbStore) s = new_store (c);
  g_autoptr (GError) e = NULL;
  g_autofree char *url = eb_store_put (s, data, NULL, &e);
  g_assert_null (url);
  g_assert_error (e, EB_ERROR, EB_ERROR_IO);
  g_test_message ("%s", e->message);
  g_assert_nonnull (strstr (e->message, eb_config_get_string (c, "externalize_store")));
  g_assert_nonnull (strstr (e->message, cause));
  g_assert_null (strstr (e->message, DAV_PASSWORD));
  g_assert_null (strchr (e->message, '\n'));
}

static void
test_dav_put_dedup (void)
{
  g_autoptr (EbConfig) c = dav_config ("dav", DAV_PASSWORD);
  g_autoptr (EbStore) s = new_store (c);
  g_autoptr (GBytes) data = make_bytes (300000, 10);
  g_autofree char *hex = eb_store_sha256_hex (data);
  g_autoptr (GError) e = NULL;
  EbStoreOutcome out = EB_STORE_PRESENT;
  g_autofree char *url = eb_store_put_full (s, data, hex, &out, &e);
  g_assert_no_error (e);
  g_autofree char *base = dav_url ("dav");
  g_autofree char *want = g_strconcat (base, hex, NULL);
  g_assert_cmpstr (url, ==, want);     /* no base URL: the store's own */
  g_assert_cmpint (out, ==, EB_STORE_WRITTEN);
  g_autofree char *path = g_strdup_printf ("%s/dav/%s", adir, hex);
  assert_file_is (path, data);
  g_assert_cmpuint (count_requests ("PUT", "dav", hex), ==, 1);
  /* a reader fetches it without credentials; the temporary names are not served */
  long status = 0;
  g_autoptr (GBytes) got = http_get (url, &status);
  g_assert_cmpint (status, ==, 200);
  g_assert_true (g_bytes_equal (got, data));

  /* again: HEAD and a verifying GET, no PUT */
  g_autofree char *url2 = eb_store_put_full (s, data, hex, &out, &e);
  g_assert_no_error (e);
  g_assert_cmpstr (url2, ==, want);
  g_assert_cmpint (out, ==, EB_STORE_PRESENT);
  g_assert_cmpuint (count_requests ("PUT", "dav", hex), ==, 1);
  g_assert_cmpuint (count_requests ("HEAD", "dav", hex), >=, 1);

  /* a base URL of its own is used for the URL, not for the store */
  g_assert_true (eb_config_set (c, "externalize_base_url", "https://cdn.example/x", NULL));
  g_autoptr (EbStore) s2 = new_store (c);
  g_autofree char *url3 = eb_store_put (s2, data, NULL, &e);
  g_assert_no_error (e);
  g_autofree char *want3 = g_strconcat ("https://cdn.example/x/", hex, NULL);
  g_assert_cmpstr (url3, ==, want3);
  g_assert_cmpuint (count_requests ("PUT", "dav", hex), ==, 1);

  /* the object changed behind the store's back (same size): written again */
  g_autoptr (GBytes) other = make_bytes (300000, 11);
  g_assert_true (g_file_set_contents (path, g_bytes_get_data (other, NULL), 300000, NULL));
  g_autofree char *url4 = eb_store_put_full (s, data, hex, &out, &e);
  g_assert_no_error (e);
  g_assert_cmpstr (url4, ==, want);
  g_assert_cmpint (out, ==, EB_STORE_WRITTEN);
  g_assert_cmpuint (count_requests ("PUT", "dav", hex), ==, 2);
  assert_file_is (path, data);
}

static void
test_dav_wrong_password (void)
{
  g_autoptr (EbConfig) c = dav_config ("dav", "not-" DAV_PASSWORD);
  g_autoptr (GBytes) data = make_bytes (2000, 12);
  assert_put_fails (c, data, "401");
  g_autoptr (EbConfig) none = dav_config ("dav", NULL);
  assert_put_fails (none, data, "401");
  g_autofree char *hex = eb_store_sha256_hex (data);
  g_autofree char *path = g_strdup_printf ("%s/dav/%s", adir, hex);
  g_assert_false (g_file_test (path, G_FILE_TEST_EXISTS));
}

static void
test_dav_refused (void)
{
  g_autoptr (EbConfig) c = dav_config ("ro", NULL);
  g_autoptr (GBytes) data = make_bytes (2000, 13);
  assert_put_fails (c, data, "PUT");
  assert_put_fails (c, data, "HTTP 403");
}

static void
test_dav_too_large (void)
{
  g_autoptr (EbConfig) c = dav_config ("small", NULL);
  g_autoptr (GBytes) data = make_bytes (5000, 14);
  assert_put_fails (c, data, "HTTP 413");
  /* a body under the limit goes in */
  g_autoptr (EbStore) s = new_store (c);
  g_autoptr (GBytes) small = make_bytes (1000, 15);
  g_autoptr (GError) e = NULL;
  g_autofree char *url = eb_store_put (s, small, NULL, &e);
  g_assert_no_error (e);
  g_assert_nonnull (url);
}

static void
test_dav_full (void)
{
  if (!in_namespace) {
    g_test_skip ("needs root and a mount namespace for a small tmpfs");
    return;
  }
  g_autoptr (EbConfig) c = dav_config ("full", NULL);
  g_autoptr (GBytes) data = make_bytes (200000, 16);
  assert_put_fails (c, data, "HTTP 507");
}

static void
test_dav_timeout (void)
{
  g_autofree char *url = g_strdup_printf ("http://127.0.0.1:%u/dav/", silent_port);
  g_autoptr (EbConfig) c = store_config (url, NULL);
  g_assert_true (eb_config_set (c, "externalize_store_timeout", "2", NULL));
  g_autoptr (GBytes) data = make_bytes (2000, 17);
  assert_put_fails (c, data, "timed out");
}

typedef struct {
  guint calls;
  gint  cancel;
} Hooks;

/* The thread's progress hook: counts, and cancels the thread's transfers. */
static void
progress_then_cancel (gpointer data)
{
  Hooks *h = data;
  h->calls++;
  g_atomic_int_set (&h->cancel, 1);
}

/* A store that never answers, within externalize_store_timeout (60 s): the
 * request calls the thread's progress hook (the milter's smfi_progress)
 * while it waits, and the thread's cancel flag (set by the hook here, as
 * the milter's is when the MTA is gone) ends it: "cancelled", no URL. Then
 * a set flag stops the next put before any request. */
static void
test_dav_progress_cancel (void)
{
  g_autofree char *url = g_strdup_printf ("http://127.0.0.1:%u/dav/", silent_port);
  g_autoptr (EbConfig) c = store_config (url, NULL);
  g_autoptr (GBytes) data = make_bytes (2000, 20);
  Hooks h = { 0, 0 };
  eb_fetch_set_thread_progress (progress_then_cancel, &h);
  eb_fetch_set_thread_cancel (&h.cancel);
  g_autofree char *hex = eb_store_sha256_hex (data);
  g_autofree char *cause = g_strdup_printf ("HEAD %s: cancelled", hex);
  assert_put_fails (c, data, cause);
  g_assert_cmpuint (h.calls, ==, 1);
  {
    g_autoptr (EbStore) s = new_store (c);
    g_autoptr (GError) e = NULL;
    g_autofree char *u = eb_store_put (s, data, NULL, &e);
    g_assert_null (u);
    g_assert_error (e, EB_ERROR, EB_ERROR_IO);
    g_assert_true (g_str_has_suffix (e->message, ": cancelled"));
  }
  /* the same with the directory store: nothing written */
  g_autofree char *dir = subdir ("cancelled");
  g_autoptr (EbConfig) dc = store_config (dir, "http://files.example/");
  assert_put_fails (dc, data, "cancelled");
  g_assert_cmpuint (count_entries (dir), ==, 0);
  eb_fetch_set_thread_cancel (NULL);
  eb_fetch_set_thread_progress (NULL, NULL);
  g_assert_cmpuint (h.calls, ==, 1);
}

/* A WebDAV store with externalize_key: PUT under the HMAC name, verified by
 * it, found again (no second PUT); other bytes read back are refused with the
 * keyed digest of what came back. */
static void
test_dav_keyed (void)
{
  g_autoptr (EbConfig) c = dav_config ("dav", DAV_PASSWORD);
  set_key (c);
  g_autoptr (EbStore) s = new_store (c);
  g_autoptr (GBytes) data = make_bytes (200000, 32);
  g_autofree char *name = keyed_name (data);
  g_autoptr (GError) e = NULL;
  EbStoreOutcome out = EB_STORE_PRESENT;
  g_autofree char *url = eb_store_put_full (s, data, NULL, &out, &e);
  g_assert_no_error (e);
  g_autofree char *base = dav_url ("dav");
  g_autofree char *want = g_strconcat (base, name, NULL);
  g_assert_cmpstr (url, ==, want);
  g_assert_cmpint (out, ==, EB_STORE_WRITTEN);
  g_autofree char *path = g_strdup_printf ("%s/dav/%s", adir, name);
  assert_file_is (path, data);
  g_assert_cmpuint (count_requests ("PUT", "dav", name), ==, 1);
  g_autofree char *url2 = eb_store_put_full (s, data, NULL, &out, &e);
  g_assert_no_error (e);
  g_assert_cmpstr (url2, ==, want);
  g_assert_cmpint (out, ==, EB_STORE_PRESENT);
  g_assert_cmpuint (count_requests ("PUT", "dav", name), ==, 1);

  g_autoptr (EbConfig) liar = dav_config ("liar", NULL);
  set_key (liar);
  g_autoptr (GBytes) small = make_bytes (3000, 33);
  g_autofree char *small_name = keyed_name (small);
  g_autofree char *other_path = g_strdup_printf ("%s/other/%s", adir, small_name);
  g_autoptr (GBytes) other = make_bytes (3000, 34);
  g_assert_true (g_file_set_contents (other_path, g_bytes_get_data (other, NULL), 3000, NULL));
  g_assert_cmpint (g_chmod (other_path, 0644), ==, 0);
  assert_put_fails (liar, small, "read back other bytes than written");
  g_autofree char *got = keyed_name (other);
  g_autofree char *says = g_strdup_printf ("(HMAC-SHA256 %s)", got);
  assert_put_fails (liar, small, says);
}

/* An aws-sigv4 store with externalize_key: the object goes under its HMAC
 * name, but the PUT's x-amz-content-sha256, which the signature covers and
 * S3 checks against the body, is the plain SHA-256 of the bytes (s3rver does
 * not check it: Apache logs it here). */
static void
test_sigv4_keyed_payload_hash (void)
{
  g_autoptr (EbConfig) c = dav_config ("sigv4", NULL);
  g_assert_true (eb_config_set (c, "externalize_store_auth", "aws-sigv4", NULL));
  g_assert_true (eb_config_set (c, "externalize_store_user", "AKIDEXAMPLE", NULL));
  g_assert_true (eb_config_set (c, "externalize_store_password", "sigv4-secret", NULL));
  set_key (c);
  g_autoptr (EbStore) s = new_store (c);
  g_autoptr (GBytes) data = make_bytes (20000, 35);
  g_autofree char *name = keyed_name (data);
  g_autofree char *hex = eb_store_sha256_hex (data);
  g_autoptr (GError) e = NULL;
  g_autofree char *url = eb_store_put (s, data, NULL, &e);
  g_assert_no_error (e);
  g_assert_true (g_str_has_suffix (url, name));
  g_autofree char *log_path = g_build_filename (adir, "sigv4.log", NULL);
  g_autofree char *log = NULL;
  g_assert_true (g_file_get_contents (log_path, &log, NULL, NULL));
  g_test_message ("%s", log);
  g_autofree char *put = g_strdup_printf ("PUT /sigv4/%s %s\n", name, hex);
  g_assert_nonnull (strstr (log, put));
}

static void
test_dav_wrong_bytes (void)
{
  g_autoptr (EbConfig) c = dav_config ("liar", NULL);
  g_autoptr (GBytes) data = make_bytes (3000, 18);
  g_autofree char *hex = eb_store_sha256_hex (data);
  g_autofree char *other_path = g_strdup_printf ("%s/other/%s", adir, hex);
  /* nothing to read back */
  assert_put_fails (c, data, "HTTP 404");
  /* other bytes of the same size */
  g_autoptr (GBytes) other = make_bytes (3000, 19);
  g_assert_true (g_file_set_contents (other_path, g_bytes_get_data (other, NULL), 3000, NULL));
  g_assert_cmpint (g_chmod (other_path, 0644), ==, 0);
  assert_put_fails (c, data, "read back other bytes");
  /* fewer, and more */
  g_assert_true (g_file_set_contents (other_path, g_bytes_get_data (data, NULL), 2999, NULL));
  assert_put_fails (c, data, "read back 2999 bytes");
  g_autoptr (GBytes) longer = make_bytes (10000, 20);
  g_assert_true (g_file_set_contents (other_path, g_bytes_get_data (longer, NULL), 10000, NULL));
  assert_put_fails (c, data, "read back more than 3000 bytes");
  /* the PUTs themselves went through */
  g_assert_cmpuint (count_requests ("PUT", "liar", hex), >=, 3);
}

/* ---- configuration --------------------------------------------------------- */

static void
test_new_errors (void)
{
  g_autoptr (GError) e = NULL;
  g_autoptr (EbConfig) unset = eb_config_new ();
  g_assert_null (eb_store_new (unset, &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
  g_assert_nonnull (strstr (e->message, "externalize_store"));
  g_clear_error (&e);

  g_autofree char *missing = g_build_filename (top, "no-such-dir", NULL);
  g_autoptr (EbConfig) c1 = store_config (missing, "http://x.example/");
  g_assert_null (eb_store_new (c1, &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
  g_assert_nonnull (strstr (e->message, missing));
  g_clear_error (&e);

  g_autofree char *file = g_build_filename (top, "a-file", NULL);
  g_assert_true (g_file_set_contents (file, "x", 1, NULL));
  g_autoptr (EbConfig) c2 = store_config (file, "http://x.example/");
  g_assert_null (eb_store_new (c2, &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
  g_assert_nonnull (strstr (e->message, "not a directory"));
  g_clear_error (&e);

  g_autoptr (EbConfig) c3 = store_config (top, NULL);
  g_assert_null (eb_store_new (c3, &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
  g_assert_nonnull (strstr (e->message, "externalize_base_url"));
  g_clear_error (&e);

  /* bad values never reach a store */
  g_autoptr (EbConfig) c = eb_config_new ();
  const char *bad_store[] = { "relative/dir", "ftp://h/dav", "http://u:p@h/dav", "http:///dav",
                              "http://h/dav?x=1" };
  for (guint i = 0; i < G_N_ELEMENTS (bad_store); i++) {
    g_assert_false (eb_config_set (c, "externalize_store", bad_store[i], &e));
    g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
    g_clear_error (&e);
  }
  const char *bad_base[] = { "/srv/x", "gopher://h/", "https://user@h/x", "http://h/x#f" };
  for (guint i = 0; i < G_N_ELEMENTS (bad_base); i++) {
    g_assert_false (eb_config_set (c, "externalize_base_url", bad_base[i], &e));
    g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
    g_clear_error (&e);
  }
  g_assert_true (eb_config_set (c, "externalize_base_url", "ftp://ftp.example/pub/x", &e));
  g_assert_no_error (e);

  /* a digest that is not the bytes' is refused before anything is written */
  g_autoptr (EbConfig) ok = store_config (top, "http://x.example/");
  g_autoptr (EbStore) s = new_store (ok);
  g_autoptr (GBytes) data = make_bytes (10, 21);
  g_autofree char *url = eb_store_put (s, data, "00", &e);
  g_assert_null (url);
  g_assert_error (e, EB_ERROR, EB_ERROR_IO);
}

static void
test_join_url (void)
{
  const char *hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  g_autofree char *a = eb_store_join_url ("http://h/x", hex);
  g_autofree char *b = eb_store_join_url ("http://h/x/", hex);
  g_autofree char *want = g_strconcat ("http://h/x/", hex, NULL);
  g_assert_cmpstr (a, ==, want);
  g_assert_cmpstr (b, ==, want);
  g_assert_true (eb_store_hex_is_valid (hex));
  g_assert_false (eb_store_hex_is_valid ("E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
  g_assert_false (eb_store_hex_is_valid ("../etc/passwd"));
  g_assert_false (eb_store_hex_is_valid (NULL));
}

/* ---- main ------------------------------------------------------------------ */

/* As root, run this program again in a mount namespace of its own. */
static void
maybe_enter_namespace (char **argv)
{
  if (geteuid () != 0 || g_getenv (INSIDE_ENV))
    return;
  g_autofree char *unshare = g_find_program_in_path ("unshare");
  int probe = -1;
  if (!unshare
      || !g_spawn_sync (NULL, (char *[]) { unshare, "--mount", "/bin/true", NULL }, NULL,
                        G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL, NULL, &probe, NULL)
      || !WIFEXITED (probe) || WEXITSTATUS (probe) != 0)
    return;
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  if (!self)
    return;
  g_setenv (INSIDE_ENV, "1", TRUE);
  g_autoptr (GPtrArray) args = g_ptr_array_new ();
  g_ptr_array_add (args, unshare);
  g_ptr_array_add (args, (char *) "--mount");
  g_ptr_array_add (args, (char *) "--propagation");
  g_ptr_array_add (args, (char *) "private");
  g_ptr_array_add (args, self);
  for (guint i = 1; argv[i]; i++)
    g_ptr_array_add (args, argv[i]);
  g_ptr_array_add (args, NULL);
  fflush (stdout);
  execv (unshare, (char **) args->pdata);
  g_printerr ("cannot run %s: %s\n", unshare, g_strerror (errno));
  exit (1);
}

static void
rm_rf (const char *path)
{
  g_autofree char *cmd = g_strdup_printf ("umount -R '%s'/*/* '%s'/* 2>/dev/null; rm -rf '%s'",
                                          path, path, path);
  test_sh (cmd, NULL);
}

int
main (int argc, char **argv)
{
  maybe_enter_namespace (argv);
  g_test_init (&argc, &argv, NULL);
  eb_init ();
  in_namespace = geteuid () == 0 && g_getenv (INSIDE_ENV) != NULL;
  if (geteuid () == 0 && getpwnam ("www-data"))
    daemon_user = g_strdup ("www-data");
  nginx_bin = g_find_program_in_path ("nginx");
  if (!nginx_bin && g_file_test ("/usr/sbin/nginx", G_FILE_TEST_IS_EXECUTABLE))
    nginx_bin = g_strdup ("/usr/sbin/nginx");

  g_autoptr (GError) e = NULL;
  top = g_dir_make_tmp ("extbody-store-XXXXXX", &e);
  g_assert_no_error (e);
  g_assert_cmpint (g_chmod (top, 0755), ==, 0);   /* the daemons' user reads under it */
  g_autofree char *cleanup = g_strdup_printf ("umount -R '%s'/*/* '%s'/* 2>/dev/null; rm -rf '%s'",
                                              top, top, top);
  guint cleanup_id = test_watchdog_add (cleanup);

  g_test_add_func ("/store/join-url", test_join_url);
  g_test_add_func ("/store/new-errors", test_new_errors);
  g_test_add_func ("/store/dir/put-dedup", test_dir_put_dedup);
  g_test_add_func ("/store/dir/corrupt-replaced", test_dir_corrupt_replaced);
  g_test_add_func ("/store/dir/keyed", test_dir_keyed);
  g_test_add_func ("/store/dir/threads", test_dir_threads);
  g_test_add_func ("/store/dir/unwritable", test_dir_unwritable);
  g_test_add_func ("/store/dir/full", test_dir_full);
  g_test_add_func ("/store/dir/served-by-nginx", test_dir_served_by_nginx);
  if (test_apache_available ()) {
    apache_start ();
    g_test_add_func ("/store/webdav/put-dedup", test_dav_put_dedup);
    g_test_add_func ("/store/webdav/wrong-password", test_dav_wrong_password);
    g_test_add_func ("/store/webdav/refused", test_dav_refused);
    g_test_add_func ("/store/webdav/too-large", test_dav_too_large);
    g_test_add_func ("/store/webdav/full", test_dav_full);
    g_test_add_func ("/store/webdav/timeout", test_dav_timeout);
    g_test_add_func ("/store/webdav/progress-cancel", test_dav_progress_cancel);
    g_test_add_func ("/store/webdav/wrong-bytes", test_dav_wrong_bytes);
    g_test_add_func ("/store/webdav/keyed", test_dav_keyed);
    g_test_add_func ("/store/webdav/sigv4-keyed-payload-hash", test_sigv4_keyed_payload_hash);
  } else {
    g_printerr ("# apache2, htpasswd or mod_dav_fs missing: the WebDAV cases are left out\n");
  }
  int rc = g_test_run ();
  g_clear_pointer (&apache, test_apache_stop);
  g_clear_object (&silent);
  rm_rf (top);
  test_watchdog_remove (cleanup_id);
  g_free (top);
  g_free (adir);
  g_free (daemon_user);
  g_free (nginx_bin);
  eb_shutdown ();
  return rc;
}
