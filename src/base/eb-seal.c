/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-seal.c - the site's seal on its X-Extbody records (see eb-seal.h). */
#include "eb-seal.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#define SEAL_CONTEXT "extbody-seal-1\n"
#define SEAL_MARK "; seal="

/* The keys read (EbConfig's trace_key, trace_key_read) are filled under this
 * lock: several threads plan messages with one configuration. */
static GMutex key_lock;
static gboolean key_said;   /* the one line a process says about its key */

char *
eb_seal_canonical (const char *s, gssize len)
{
  gsize n = len < 0 ? strlen (s) : (gsize) len;
  GString *out = g_string_sized_new (n);
  gboolean space = FALSE;
  for (gsize i = 0; i < n; i++) {
    char c = s[i];
    if (c == '\r' || c == '\n')
      continue;
    if (c == ' ' || c == '\t') {
      space = TRUE;
      continue;
    }
    if (space && out->len)
      g_string_append_c (out, ' ');
    space = FALSE;
    g_string_append_c (out, c);
  }
  return g_string_free (out, FALSE);
}

GBytes *
eb_seal_read_key (const char *path, GError **error)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "trace_key_file: %s: %s", path,
                 g_strerror (e));
    return NULL;
  }
  struct stat st;
  const char *why = NULL;
  if (fstat (fd, &st) != 0)
    why = g_strerror (errno);
  else if (!S_ISREG (st.st_mode))
    why = "not a regular file";
  else if (st.st_mode & (S_IROTH | S_IWOTH))
    why = "readable or writable by every user, who could then seal records of this site "
          "(chmod 0640, owner root, group of the daemon's user)";
  else if (st.st_size < EB_SEAL_KEY_MIN || st.st_size > EB_SEAL_KEY_MAX)
    why = "not a key: it must hold 32 to 4096 bytes (make one with: "
          "head -c 32 /dev/urandom > FILE)";
  guint8 *key = why ? NULL : g_malloc ((gsize) st.st_size);
  gsize got = 0;
  while (key && got < (gsize) st.st_size) {
    ssize_t r = read (fd, key + got, (gsize) st.st_size - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      why = r < 0 ? g_strerror (errno) : "shorter than its size";
      break;
    }
    got += (gsize) r;
  }
  close (fd);
  if (why) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "trace_key_file: %s: %s", path, why);
    g_free (key);
    return NULL;
  }
  return g_bytes_new_take (key, got);
}

GBytes *
eb_seal_key (const EbConfig *config)
{
  g_return_val_if_fail (config != NULL, NULL);
  if (!config->trace_key_file || !*config->trace_key_file)
    return NULL;
  /* the configuration is shared and otherwise read-only: the key it keeps
   * is a cache, filled once under the lock */
  EbConfig *c = (EbConfig *) config;
  g_mutex_lock (&key_lock);
  if (!c->trace_key_read) {
    g_autoptr (GError) error = NULL;
    c->trace_key_read = TRUE;
    c->trace_key = eb_seal_read_key (c->trace_key_file, &error);
    if (!c->trace_key && !key_said) {
      key_said = TRUE;
      eb_log (LOG_DEBUG, "%s: X-Extbody records are neither sealed nor trusted by this process "
              "(only the daemon's doors need the key)", error->message);
    }
  }
  GBytes *key = c->trace_key ? g_bytes_ref (c->trace_key) : NULL;
  g_mutex_unlock (&key_lock);
  return key;
}

gboolean
eb_seal_key_check (const EbConfig *config, GError **error)
{
  g_return_val_if_fail (config != NULL, FALSE);
  if (!config->trace_key_file || !*config->trace_key_file)
    return TRUE;
  GBytes *key = eb_seal_read_key (config->trace_key_file, error);
  if (!key)
    return FALSE;
  /* the key read is the one kept, unless one is kept already */
  EbConfig *c = (EbConfig *) config;
  g_mutex_lock (&key_lock);
  if (!c->trace_key) {
    c->trace_key_read = TRUE;
    c->trace_key = g_steal_pointer (&key);
  }
  g_mutex_unlock (&key_lock);
  g_clear_pointer (&key, g_bytes_unref);
  return TRUE;
}

char *
eb_seal_make (GBytes *key, const char *record, const char *message_id)
{
  g_return_val_if_fail (key != NULL && record != NULL, NULL);
  g_autofree char *r = eb_seal_canonical (record, -1);
  g_autofree char *m = eb_seal_canonical (message_id ? message_id : "", -1);
  gsize klen = 0;
  const guint8 *k = g_bytes_get_data (key, &klen);
  g_autoptr (GHmac) h = g_hmac_new (G_CHECKSUM_SHA256, k, klen);
  g_hmac_update (h, (const guchar *) SEAL_CONTEXT, (gssize) strlen (SEAL_CONTEXT));
  g_hmac_update (h, (const guchar *) r, (gssize) strlen (r));
  g_hmac_update (h, (const guchar *) "\n", 1);
  g_hmac_update (h, (const guchar *) m, (gssize) strlen (m));
  guint8 digest[32];
  gsize dlen = sizeof digest;
  g_hmac_get_digest (h, digest, &dlen);
  /* 16 bytes: 24 characters of base64, the last two "==" */
  g_autofree char *b64 = g_base64_encode (digest, 16);
  g_assert (strlen (b64) == EB_SEAL_LEN + 2);
  b64[EB_SEAL_LEN] = '\0';
  g_strdelimit (b64, "+", '-');
  g_strdelimit (b64, "/", '_');
  return g_strndup (b64, EB_SEAL_LEN);
}

gboolean
eb_seal_verify (GBytes *key, const char *value, const char *message_id, char **record)
{
  g_return_val_if_fail (value != NULL, FALSE);
  if (!key)
    return FALSE;
  g_autofree char *v = eb_seal_canonical (value, -1);
  gsize n = strlen (v), mark = strlen (SEAL_MARK);
  if (n < mark + EB_SEAL_LEN || strncmp (v + n - EB_SEAL_LEN - mark, SEAL_MARK, mark) != 0)
    return FALSE;
  const char *seal = v + n - EB_SEAL_LEN;
  for (const char *p = seal; *p; p++)
    if (!g_ascii_isalnum (*p) && *p != '-' && *p != '_')
      return FALSE;
  /* white space before the mark is no part of the record */
  g_autofree char *rec = eb_seal_canonical (v, (gssize) (n - EB_SEAL_LEN - mark));
  g_autofree char *want = eb_seal_make (key, rec, message_id);
  /* every byte compared, whatever the first difference */
  guint diff = 0;
  for (guint i = 0; i < EB_SEAL_LEN; i++)
    diff |= (guint) (guchar) (want[i] ^ seal[i]);
  if (diff != 0)
    return FALSE;
  if (record)
    *record = g_steal_pointer (&rec);
  return TRUE;
}

/* A decimal number of at most 9 digits at *@p, which moves past it. */
static gboolean
number_at (const char **p, guint *out)
{
  guint v = 0, digits = 0;
  while (g_ascii_isdigit (**p) && digits < 9) {
    v = v * 10 + (guint) (**p - '0');
    (*p)++;
    digits++;
  }
  *out = v;
  return digits > 0 && !g_ascii_isdigit (**p);
}

gboolean
eb_seal_record_counts (const char *record, guint *done, guint *of)
{
  g_return_val_if_fail (record != NULL, FALSE);
  const char *p = record;
  guint n = 0, m = 0;
  if (!g_str_has_prefix (p, "resolved "))
    return FALSE;
  p += strlen ("resolved ");
  if (!number_at (&p, &n) || !g_str_has_prefix (p, " of "))
    return FALSE;
  p += strlen (" of ");
  if (!number_at (&p, &m) || n > m)
    return FALSE;
  if (strcmp (p, " external-body reference") != 0 && strcmp (p, " external-body references") != 0)
    return FALSE;
  if (done)
    *done = n;
  if (of)
    *of = m;
  return TRUE;
}
