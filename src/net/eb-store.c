/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-store.c - the directory and WebDAV stores of externalize (see eb-store.h). */
#include "eb-store.h"
#include "eb-config.h"
#include "eb-digest.h"
#include "eb-error.h"
#include "eb-fetch.h"
#include "eb-scheme.h"
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- names and digests --------------------------------------------------- */

gboolean
eb_store_hex_is_valid (const char *hex)
{
  if (!hex || strlen (hex) != 64)
    return FALSE;
  for (const char *c = hex; *c; c++)
    if (!g_ascii_isdigit (*c) && !(*c >= 'a' && *c <= 'f'))
      return FALSE;
  return TRUE;
}

char *
eb_store_join_url (const char *base, const char *hex)
{
  gsize n = strlen (base);
  return g_strconcat (base, n && base[n - 1] == '/' ? "" : "/", hex, NULL);
}

char *
eb_store_sha256_hex (GBytes *data)
{
  gsize len = 0;
  const guint8 *p = g_bytes_get_data (data, &len);
  return eb_digest_sha256_hex (p, len);
}

void
eb_store_digest (const EbStore *store, const guint8 *p, gsize len, char **name_hex,
                 char **sha256_hex, char **md5_base64)
{
  g_return_if_fail (store != NULL && name_hex != NULL);
  eb_digest_hmac_sha256_md5 ((const guint8 *) store->key, store->key ? strlen (store->key) : 0, p,
                             len, name_hex, sha256_hex, md5_base64);
}

/* A digest of bytes read back, piece by piece, to compare with their name. */
static EbDigest *
name_sum_new (const EbStore *store)
{
  return eb_digest_new_hmac ((const guint8 *) store->key, store->key ? strlen (store->key) : 0);
}

/* What a name is the digest of, for messages. */
static const char *
name_kind (const EbStore *store)
{
  return store->key ? "HMAC-SHA256" : "SHA-256";
}

/* ---- the store ----------------------------------------------------------- */

static char *
with_slash (const char *s)
{
  return g_str_has_suffix (s, "/") ? g_strdup (s) : g_strconcat (s, "/", NULL);
}

/* externalize_store_auth = aws-sigv4: the store is an S3 bucket's URL in
 * path style, signed with the access key ID and secret. */
static gboolean
s3_configure (EbStore *store, const EbConfig *config, GError **error)
{
  if (store->kind != EB_STORE_WEBDAV) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG,
                 "externalize_store_auth = aws-sigv4 needs an http(s) URL of a bucket in externalize_store, not %s",
                 store->location);
    return FALSE;
  }
  g_autoptr (GUri) uri = g_uri_parse (store->location, G_URI_FLAGS_NONE, NULL);
  const char *path = uri ? g_uri_get_path (uri) : "";
  while (*path == '/')
    path++;
  if (!*path) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG,
                 "externalize_store: %s names no bucket (aws-sigv4 takes http(s)://HOST[:PORT]/BUCKET)",
                 store->location);
    return FALSE;
  }
  if (!store->user || !store->password || !*store->password) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG,
                 "externalize_store_auth = aws-sigv4 needs externalize_store_user (the access key ID) and externalize_store_password (the secret access key)");
    return FALSE;
  }
  const char *region = config->externalize_store_region && *config->externalize_store_region
    ? config->externalize_store_region : "us-east-1";
  store->aws_sigv4 = g_strdup_printf ("aws:amz:%s:s3", region);
  return TRUE;
}

EbStore *
eb_store_new (const EbConfig *config, GError **error)
{
  g_return_val_if_fail (config != NULL, NULL);
  const char *where = config->externalize_store;
  if (!where || !*where) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG,
                 "externalize_store is not set: name a directory or a WebDAV URL to store parts in");
    return NULL;
  }
  g_autoptr (EbStore) store = g_new0 (EbStore, 1);
  store->timeout = config->externalize_store_timeout ? config->externalize_store_timeout : 60;
  if (config->externalize_key && *config->externalize_key) {
    /* the configuration checks it; a caller of eb_config_set may not have */
    if (strlen (config->externalize_key) < EB_EXTERNALIZE_KEY_MIN) {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG,
                   "externalize_key: too short: at least %d bytes (make one with openssl rand -hex 32)",
                   EB_EXTERNALIZE_KEY_MIN);
      return NULL;
    }
    store->key = g_strdup (config->externalize_key);
  }
  if (config->ca_file && *config->ca_file)
    store->ca_file = g_strdup (config->ca_file);
  if (g_path_is_absolute (where)) {
    struct stat st;
    store->kind = EB_STORE_DIRECTORY;
    if (g_stat (where, &st) != 0) {
      int e = errno;
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "externalize_store: %s: %s", where, g_strerror (e));
      return NULL;
    }
    if (!S_ISDIR (st.st_mode)) {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "externalize_store: %s is not a directory", where);
      return NULL;
    }
    if (!config->externalize_base_url || !*config->externalize_base_url) {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG,
                   "externalize_base_url is not set: a directory store needs the URL its web server serves %s under",
                   where);
      return NULL;
    }
    /* "/srv/store/" and "/srv/store" are the same directory */
    gsize n = strlen (where);
    while (n > 1 && where[n - 1] == '/')
      n--;
    store->location = g_strndup (where, n);
  } else {
    g_autofree char *scheme = g_uri_parse_scheme (where);
    const EbScheme *row = eb_scheme_lookup (scheme);
    if (!row || !row->http) {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG,
                   "externalize_store: \"%s\" is neither an absolute directory nor an http(s) URL", where);
      return NULL;
    }
    store->kind = EB_STORE_WEBDAV;
    store->location = with_slash (where);
    if (config->externalize_store_user && *config->externalize_store_user) {
      store->user = g_strdup (config->externalize_store_user);
      store->password = g_strdup (config->externalize_store_password ? config->externalize_store_password : "");
    }
  }
  if (g_strcmp0 (config->externalize_store_auth, "aws-sigv4") == 0
      && !s3_configure (store, config, error))
    return NULL;
  const char *base = config->externalize_base_url && *config->externalize_base_url
    ? config->externalize_base_url : store->location;
  store->base_url = with_slash (base);
  return g_steal_pointer (&store);
}

void
eb_store_free (EbStore *store)
{
  if (!store)
    return;
  g_free (store->location);
  g_free (store->base_url);
  g_free (store->user);
  if (store->password) {
    memset (store->password, 0, strlen (store->password));
    g_free (store->password);
  }
  if (store->key) {
    explicit_bzero (store->key, strlen (store->key));
    g_free (store->key);
  }
  g_free (store->ca_file);
  g_free (store->aws_sigv4);
  g_free (store);
}

/* ---- directory ----------------------------------------------------------- */

/* What reading an object gave: whether it is there (a regular file), how many
 * bytes it holds (at most @limit are read) and their digest. */
typedef struct {
  gboolean present;
  guint64  size;       /* bytes read, at most the limit */
  char    *name;       /* the store's name of the bytes read (eb_store_digest) */
} ObjectState;

static void
object_state_clear (ObjectState *s)
{
  g_clear_pointer (&s->name, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (ObjectState, object_state_clear)

/* Read @path (never through a symbolic link): absent, or not a regular file,
 * is present = FALSE. FALSE with @error only when it could not be read. */
static gboolean
dir_read_object (const EbStore *store, const char *path, guint64 limit, gint64 *last,
                 ObjectState *out, GError **error)
{
  int fd = open (path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT || e == ELOOP)
      return TRUE;
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: cannot open %s: %s", store->location,
                 path, g_strerror (e));
    return FALSE;
  }
  struct stat st;
  if (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode)) {
    close (fd);
    return TRUE;
  }
  g_autoptr (EbDigest) sum = name_sum_new (store);
  guint64 n = 0;
  guchar buf[65536];
  while (n < limit) {
    gsize want = (gsize) MIN ((guint64) sizeof buf, limit - n);
    ssize_t r = read (fd, buf, want);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int e = errno;
      close (fd);
      g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: cannot read %s: %s", store->location,
                   path, g_strerror (e));
      return FALSE;
    }
    if (r == 0)
      break;
    eb_digest_update (sum, buf, (gsize) r);
    n += (guint64) r;
    eb_fetch_thread_progress (last);   /* a slow disk: the MTA hears from the milter */
  }
  close (fd);
  out->present = TRUE;
  out->size = n;
  out->name = eb_digest_finish_hex (sum);
  return TRUE;
}

static gboolean
write_all (int fd, const guint8 *p, gsize len)
{
  while (len) {
    ssize_t w = write (fd, p, MIN (len, (gsize) G_MAXSSIZE));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (w == 0)
        errno = EIO;
      return FALSE;
    }
    p += w;
    len -= (gsize) w;
  }
  return TRUE;
}

/* Write @data to a temporary file in the directory and rename it to @path. */
static gboolean
dir_write_object (const EbStore *store, const char *path, const char *hex, GBytes *data,
                  GError **error)
{
  g_autofree char *tmp = g_strdup_printf ("%s/.%s.XXXXXX", store->location, hex);
  int fd = g_mkstemp_full (tmp, O_RDWR | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: cannot create a file there: %s",
                 store->location, g_strerror (e));
    return FALSE;
  }
  gsize len = 0;
  const guint8 *p = g_bytes_get_data (data, &len);
  const char *step = "write";
  gboolean ok = write_all (fd, p, len);
  if (ok) {
    step = "fsync";
    ok = fsync (fd) == 0;
  }
  if (ok) {
    step = "chmod";
    ok = fchmod (fd, 0644) == 0;
  }
  int e = ok ? 0 : errno;
  if (close (fd) != 0 && ok) {
    ok = FALSE;
    e = errno;
    step = "close";
  }
  if (ok) {
    step = "rename";
    ok = rename (tmp, path) == 0;
    e = ok ? 0 : errno;
  }
  if (!ok) {
    g_unlink (tmp);
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: cannot %s %s: %s", store->location,
                 step, g_str_equal (step, "rename") ? path : tmp, g_strerror (e));
    return FALSE;
  }
  /* the rename itself is durable once the directory is */
  int dfd = open (store->location, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || fsync (dfd) != 0) {
    e = errno;
    if (dfd >= 0)
      close (dfd);
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: cannot fsync the directory: %s",
                 store->location, g_strerror (e));
    return FALSE;
  }
  close (dfd);
  return TRUE;
}

static char *
dir_put (EbStore *store, GBytes *data, const char *hex, EbStoreOutcome *outcome, GError **error)
{
  g_autofree char *path = g_build_filename (store->location, hex, NULL);
  guint64 size = g_bytes_get_size (data);
  gint64 last = g_get_monotonic_time ();
  g_auto (ObjectState) before = { 0 };
  if (!dir_read_object (store, path, size + 1, &last, &before, error))
    return NULL;
  if (before.present && before.size == size && g_str_equal (before.name, hex)) {
    /* nothing written; its modification time renewed, so that expiring
     * objects by age (find -mtime) never removes one newer mail refers to. A
     * store that refuses (read-only) still holds the right bytes. */
    if (utimensat (AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW) != 0)
      g_debug ("store %s: cannot renew the time of %s: %s", store->location, path,
               g_strerror (errno));
    *outcome = EB_STORE_PRESENT;
    return eb_store_join_url (store->base_url, hex);
  }
  if (!dir_write_object (store, path, hex, data, error))
    return NULL;
  eb_fetch_thread_progress (&last);
  g_auto (ObjectState) after = { 0 };
  if (!dir_read_object (store, path, size + 1, &last, &after, error))
    return NULL;
  if (!after.present) {
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: %s is gone after it was written",
                 store->location, path);
    return NULL;
  }
  if (after.size != size) {
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: read back %s%" G_GUINT64_FORMAT " bytes of %s, expected %" G_GUINT64_FORMAT,
                 store->location, after.size > size ? "more than " : "", MIN (after.size, size),
                 hex, size);
    return NULL;
  }
  if (!g_str_equal (after.name, hex)) {
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: read back other bytes than written for %s (%s %s)",
                 store->location, hex, name_kind (store), after.name);
    return NULL;
  }
  *outcome = EB_STORE_WRITTEN;
  return eb_store_join_url (store->base_url, hex);
}

/* ---- WebDAV -------------------------------------------------------------- */

typedef struct {
  const guint8 *data;
  gsize         len, pos;
} Upload;

static size_t
upload_read (char *buf, size_t size, size_t nitems, void *user)
{
  Upload *u = user;
  gsize n = MIN (size * nitems, u->len - u->pos);
  if (n)
    memcpy (buf, u->data + u->pos, n);
  u->pos += n;
  return n;
}

typedef struct {
  EbDigest  *sum;
  guint64    n, limit;
  gboolean   over;      /* more than limit bytes came */
} Download;

static size_t
download_write (char *ptr, size_t size, size_t nmemb, void *user)
{
  Download *d = user;
  gsize n = size * nmemb;
  if (d->n + n > d->limit) {
    gsize keep = (gsize) (d->limit - d->n);
    eb_digest_update (d->sum, ptr, keep);
    d->n += keep;
    d->over = TRUE;
    return 0;   /* stops the transfer */
  }
  eb_digest_update (d->sum, ptr, n);
  d->n += n;
  return n;
}

static size_t
discard_write (char *ptr G_GNUC_UNUSED, size_t size, size_t nmemb, void *user G_GNUC_UNUSED)
{
  return size * nmemb;
}

typedef struct {
  CURL              *e;
  char               errbuf[CURL_ERROR_SIZE];
  struct curl_slist *headers;   /* of the request set up */
  gint64             last_progress;   /* the thread's progress hook last called */
  gboolean           cancelled;       /* the thread's cancel flag stopped a request */
} Dav;

/* libcurl's progress callback (about once a second at least, whether bytes
 * move or not): the thread's progress hook, rate-limited, so that a milter
 * waiting on a slow store keeps the MTA's timeout from running out; the
 * thread's cancel flag (the MTA is gone) ends the request. */
static int
dav_xferinfo (void *clientp, curl_off_t dltotal G_GNUC_UNUSED, curl_off_t dlnow G_GNUC_UNUSED,
              curl_off_t ultotal G_GNUC_UNUSED, curl_off_t ulnow G_GNUC_UNUSED)
{
  Dav *dav = clientp;
  if (eb_fetch_thread_cancelled ()) {
    dav->cancelled = TRUE;
    return 1;
  }
  eb_fetch_thread_progress (&dav->last_progress);
  return 0;
}

/* What went wrong with a request that got no HTTP answer. */
static const char *
dav_failure (const Dav *dav, CURLcode rc)
{
  if (dav->cancelled)
    return "cancelled";
  return dav->errbuf[0] ? dav->errbuf : curl_easy_strerror (rc);
}

/* The SHA-256 of no bytes: an S3 request's payload hash when it sends none. */
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static void
dav_header (Dav *dav, const char *line)
{
  dav->headers = curl_slist_append (dav->headers, line);
  curl_easy_setopt (dav->e, CURLOPT_HTTPHEADER, dav->headers);
}

/* Set up a request to @url; @payload_hex: the SHA-256 of the body a PUT
 * sends (S3 signs it), NULL for none. */
static void
dav_setup (const EbStore *store, Dav *dav, const char *url, const char *payload_hex)
{
  CURL *e = dav->e;
  curl_easy_reset (e);
  g_clear_pointer (&dav->headers, curl_slist_free_all);
  dav->errbuf[0] = '\0';
  curl_easy_setopt (e, CURLOPT_URL, url);
  curl_easy_setopt (e, CURLOPT_ERRORBUFFER, dav->errbuf);
  curl_easy_setopt (e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt (e, CURLOPT_TIMEOUT, (long) store->timeout);
  curl_easy_setopt (e, CURLOPT_CONNECTTIMEOUT, (long) store->timeout);
  curl_easy_setopt (e, CURLOPT_PROXY, "");          /* none, whatever the environment says */
  curl_easy_setopt (e, CURLOPT_NOPROXY, "*");
  curl_easy_setopt (e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt (e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt (e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt (e, CURLOPT_USERAGENT, "extbody/" EXTBODY_VERSION);
  curl_easy_setopt (e, CURLOPT_WRITEFUNCTION, discard_write);
  curl_easy_setopt (e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt (e, CURLOPT_XFERINFOFUNCTION, dav_xferinfo);
  curl_easy_setopt (e, CURLOPT_XFERINFODATA, dav);
  if (store->ca_file)
    curl_easy_setopt (e, CURLOPT_CAINFO, store->ca_file);
  if (store->aws_sigv4) {
    /* libcurl signs the method, path, headers and this payload hash */
    g_autofree char *sha = g_strconcat ("x-amz-content-sha256: ",
                                        payload_hex ? payload_hex : EMPTY_SHA256, NULL);
    dav_header (dav, sha);
    curl_easy_setopt (e, CURLOPT_AWS_SIGV4, store->aws_sigv4);
    curl_easy_setopt (e, CURLOPT_USERNAME, store->user);
    curl_easy_setopt (e, CURLOPT_PASSWORD, store->password);
  } else if (store->user) {
    curl_easy_setopt (e, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
    curl_easy_setopt (e, CURLOPT_USERNAME, store->user);
    curl_easy_setopt (e, CURLOPT_PASSWORD, store->password);
  }
}

/* Perform the request set up; FALSE with the libcurl error (naming the
 * method and the object) when no HTTP answer came. */
static gboolean
dav_perform (const EbStore *store, Dav *dav, const char *method, const char *hex, long *status,
             GError **error)
{
  CURLcode rc = curl_easy_perform (dav->e);
  *status = 0;
  curl_easy_getinfo (dav->e, CURLINFO_RESPONSE_CODE, status);
  if (rc == CURLE_OK)
    return TRUE;
  g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: %s %s: %s", store->location, method, hex,
               dav_failure (dav, rc));
  return FALSE;
}

/* GET the object and compare it with @size and @hex; FALSE with @error when
 * the read-back failed or differs. */
static gboolean
dav_verify (const EbStore *store, Dav *dav, const char *url, const char *hex, guint64 size,
            GError **error)
{
  g_autoptr (EbDigest) sum = name_sum_new (store);
  Download d = { sum, 0, size + 1, FALSE };
  dav_setup (store, dav, url, NULL);
  curl_easy_setopt (dav->e, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt (dav->e, CURLOPT_WRITEFUNCTION, download_write);
  curl_easy_setopt (dav->e, CURLOPT_WRITEDATA, &d);
  curl_easy_setopt (dav->e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) (size + 1));
  long status = 0;
  CURLcode rc = curl_easy_perform (dav->e);
  curl_easy_getinfo (dav->e, CURLINFO_RESPONSE_CODE, &status);
  if (rc != CURLE_OK && !d.over && rc != CURLE_FILESIZE_EXCEEDED) {
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: GET %s (read back): %s", store->location,
                 hex, dav_failure (dav, rc));
    return FALSE;
  }
  if (status != 200) {
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: GET %s (read back): HTTP %ld",
                 store->location, hex, status);
    return FALSE;
  }
  if (d.over || rc == CURLE_FILESIZE_EXCEEDED || d.n > size) {
    g_set_error (error, EB_ERROR, EB_ERROR_IO,
                 "store %s: read back more than %" G_GUINT64_FORMAT " bytes of %s, expected %" G_GUINT64_FORMAT,
                 store->location, size, hex, size);
    return FALSE;
  }
  if (d.n != size) {
    g_set_error (error, EB_ERROR, EB_ERROR_IO,
                 "store %s: read back %" G_GUINT64_FORMAT " bytes of %s, expected %" G_GUINT64_FORMAT,
                 store->location, d.n, hex, size);
    return FALSE;
  }
  g_autofree char *got = eb_digest_finish_hex (sum);
  if (!g_str_equal (got, hex)) {
    g_set_error (error, EB_ERROR, EB_ERROR_IO,
                 "store %s: read back other bytes than written for %s (%s %s)",
                 store->location, hex, name_kind (store), got);
    return FALSE;
  }
  return TRUE;
}

/* The first 4 KiB of an error answer (S3 explains itself in XML). */
static size_t
answer_write (char *ptr, size_t size, size_t nmemb, void *user)
{
  GString *answer = user;
  gsize n = size * nmemb;
  if (answer->len < 4096)
    g_string_append_len (answer, ptr, (gssize) MIN (n, 4096 - answer->len));
  return n;
}

/* S3's error code in @xml (<Code>NoSuchBucket</Code>), if it is a plain
 * word; NULL otherwise (pure). */
static char *
s3_error_code (const char *xml)
{
  const char *p = strstr (xml, "<Code>");
  if (!p)
    return NULL;
  p += strlen ("<Code>");
  gsize n = 0;
  while (n < 64 && g_ascii_isalnum (p[n]))
    n++;
  if (n == 0 || strncmp (p + n, "</Code>", strlen ("</Code>")) != 0)
    return NULL;
  return g_strndup (p, n);
}

/* @hex: the object's name; @sha256_hex: the plain SHA-256 of @data, which an
 * S3 PUT signs (the same as @hex without externalize_key). */
static char *
dav_put (EbStore *store, GBytes *data, const char *hex, const char *sha256_hex,
         EbStoreOutcome *outcome, GError **error)
{
  Dav dav = { 0 };
  dav.last_progress = g_get_monotonic_time ();
  dav.e = curl_easy_init ();
  if (!dav.e) {
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: cannot make a libcurl handle", store->location);
    return NULL;
  }
  g_autofree char *url = eb_store_join_url (store->location, hex);
  gsize len = 0;
  const guint8 *p = g_bytes_get_data (data, &len);
  char *result = NULL;
  long status = 0;
  g_autoptr (GString) answer = g_string_new (NULL);

  /* already there? */
  dav_setup (store, &dav, url, NULL);
  curl_easy_setopt (dav.e, CURLOPT_NOBODY, 1L);
  if (!dav_perform (store, &dav, "HEAD", hex, &status, error))
    goto out;
  if (status == 401 || status == 407) {
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: HEAD %s: HTTP %ld (check externalize_store_user and externalize_store_password)",
                 store->location, hex, status);
    goto out;
  }
  if (status == 200) {
    curl_off_t cl = -1;
    curl_easy_getinfo (dav.e, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
    if (cl >= 0 && (guint64) cl == (guint64) len) {
      g_autoptr (GError) differs = NULL;
      if (dav_verify (store, &dav, url, hex, len, &differs)) {
        *outcome = EB_STORE_PRESENT;
        result = eb_store_join_url (store->base_url, hex);
        goto out;
      }
      /* an object of the right size with other bytes: written again below */
    }
  }

  Upload up = { p, len, 0 };
  dav_setup (store, &dav, url, sha256_hex);
  curl_easy_setopt (dav.e, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt (dav.e, CURLOPT_READFUNCTION, upload_read);
  curl_easy_setopt (dav.e, CURLOPT_READDATA, &up);
  curl_easy_setopt (dav.e, CURLOPT_INFILESIZE_LARGE, (curl_off_t) len);
  if (len < 1024 * 1024 && !store->aws_sigv4) {
    /* a small body goes at once, without waiting for "100 Continue"; not
     * for S3: libcurl 7.88 signs the header it then leaves out, and the
     * server refuses the signature (SignatureDoesNotMatch) */
    dav_header (&dav, "Expect:");
  }
  if (store->aws_sigv4) {
    dav_header (&dav, "Content-Type: application/octet-stream");
    curl_easy_setopt (dav.e, CURLOPT_WRITEFUNCTION, answer_write);
    curl_easy_setopt (dav.e, CURLOPT_WRITEDATA, answer);
  }
  if (!dav_perform (store, &dav, "PUT", hex, &status, error))
    goto out;
  if (status != 200 && status != 201 && status != 204) {
    g_autofree char *code = s3_error_code (answer->str);
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: PUT %s: HTTP %ld%s%s%s", store->location, hex,
                 status, code ? " " : "", code ? code : "",
                 status == 401 || (status == 403 && store->aws_sigv4)
                 ? (store->aws_sigv4 ? " (check externalize_store_user, externalize_store_password and externalize_store_region)"
                    : " (check externalize_store_user and externalize_store_password)")
                 : status == 413 ? " (the server refuses a body this large)"
                 : status == 507 ? " (the server has no room left)" : "");
    goto out;
  }
  if (!dav_verify (store, &dav, url, hex, len, error))
    goto out;
  *outcome = EB_STORE_WRITTEN;
  result = eb_store_join_url (store->base_url, hex);
out:
  curl_slist_free_all (dav.headers);
  curl_easy_cleanup (dav.e);
  return result;
}

/* ---- put ----------------------------------------------------------------- */

char *
eb_store_put_full (EbStore *store, GBytes *data, const char *sha256_hex, EbStoreOutcome *outcome,
                   GError **error)
{
  g_return_val_if_fail (store != NULL && data != NULL, NULL);
  EbStoreOutcome ignored;
  if (!outcome)
    outcome = &ignored;
  gsize len = 0;
  const guint8 *p = g_bytes_get_data (data, &len);
  g_autofree char *name = NULL, *hex = NULL;
  eb_store_digest (store, p, len, &name, &hex, NULL);
  if (sha256_hex && !g_str_equal (sha256_hex, hex)) {
    g_set_error (error, EB_ERROR, EB_ERROR_IO,
                 "store %s: the digest given (%.64s) is not the SHA-256 of the bytes (%s)",
                 store->location, sha256_hex, hex);
    return NULL;
  }
  return eb_store_put_digested (store, data, name, hex, outcome, error);
}

char *
eb_store_put_digested (EbStore *store, GBytes *data, const char *name_hex, const char *sha256_hex,
                       EbStoreOutcome *outcome, GError **error)
{
  g_return_val_if_fail (store != NULL && data != NULL && eb_store_hex_is_valid (name_hex)
                        && eb_store_hex_is_valid (sha256_hex), NULL);
  EbStoreOutcome ignored;
  if (!outcome)
    outcome = &ignored;
  if (eb_fetch_thread_cancelled ()) {
    g_set_error (error, EB_ERROR, EB_ERROR_IO, "store %s: cancelled", store->location);
    return NULL;
  }
  if (store->kind == EB_STORE_DIRECTORY)
    return dir_put (store, data, name_hex, outcome, error);
  return dav_put (store, data, name_hex, sha256_hex, outcome, error);
}

char *
eb_store_put (EbStore *store, GBytes *data, const char *sha256_hex, GError **error)
{
  return eb_store_put_full (store, data, sha256_hex, NULL, error);
}
