/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-digest.c - SHA-256, HMAC-SHA256 and MD5 in one pass (see eb-digest.h). */
#include "eb-digest.h"
#include <string.h>
#ifdef EB_HAVE_LIBCRYPTO
#include <openssl/evp.h>
#endif

/* Each digest takes this much before the other: small enough that the block
 * is still in the cache when the second digest reads it. */
#define EB_DIGEST_BLOCK (32 * 1024)

/* One digest being taken: libcrypto's when it could start one (a FIPS build
 * may refuse MD5), GLib's otherwise. */
typedef struct {
#ifdef EB_HAVE_LIBCRYPTO
  EVP_MD_CTX *evp;
#endif
  GChecksum  *glib;
} Md;

static void
md_init (Md *m, GChecksumType type)
{
  memset (m, 0, sizeof *m);
#ifdef EB_HAVE_LIBCRYPTO
  m->evp = EVP_MD_CTX_new ();
  if (m->evp && EVP_DigestInit_ex (m->evp, type == G_CHECKSUM_MD5 ? EVP_md5 () : EVP_sha256 (),
                                   NULL) == 1)
    return;
  EVP_MD_CTX_free (m->evp);
  m->evp = NULL;
#endif
  m->glib = g_checksum_new (type);
}

static void
md_update (Md *m, const guint8 *p, gsize len)
{
#ifdef EB_HAVE_LIBCRYPTO
  if (m->evp) {
    if (len && EVP_DigestUpdate (m->evp, p, len) != 1)
      g_error ("libcrypto: a digest update failed");
    return;
  }
#endif
  for (gsize off = 0; off < len; off += G_MAXSSIZE)
    g_checksum_update (m->glib, p + off, (gssize) MIN (len - off, (gsize) G_MAXSSIZE));
}

/* The digest into @out (64 bytes of room); its length. Frees what @m holds. */
static gsize
md_final (Md *m, guint8 *out)
{
  gsize n = 64;
#ifdef EB_HAVE_LIBCRYPTO
  if (m->evp) {
    unsigned int en = 0;
    if (EVP_DigestFinal_ex (m->evp, out, &en) != 1)
      g_error ("libcrypto: a digest failed");
    EVP_MD_CTX_free (m->evp);
    m->evp = NULL;
    return en;
  }
#endif
  g_checksum_get_digest (m->glib, out, &n);
  g_clear_pointer (&m->glib, g_checksum_free);
  return n;
}

static void
md_clear (Md *m)
{
#ifdef EB_HAVE_LIBCRYPTO
  g_clear_pointer (&m->evp, EVP_MD_CTX_free);
#endif
  g_clear_pointer (&m->glib, g_checksum_free);
}

const char *
eb_digest_backend (void)
{
  Md m;
  md_init (&m, G_CHECKSUM_SHA256);
  const char *name = m.glib ? "glib" : "libcrypto";
  md_clear (&m);
  return name;
}

static char *
hex_of (const guint8 *d, gsize n)
{
  static const char digits[] = "0123456789abcdef";
  char *s = g_malloc (2 * n + 1);
  for (gsize i = 0; i < n; i++) {
    s[2 * i] = digits[d[i] >> 4];
    s[2 * i + 1] = digits[d[i] & 15];
  }
  s[2 * n] = '\0';
  return s;
}

/* SHA-256's block: RFC 2104's B. */
#define EB_HMAC_BLOCK 64

/* A SHA-256 or, keyed, an HMAC-SHA256 (RFC 2104):
 *   HMAC (K, m) = H ((K0 ^ opad) || H ((K0 ^ ipad) || m))
 * with K0 the key padded with zeros to B bytes (its digest first when it is
 * longer), ipad = 0x36 and opad = 0x5c repeated. @inner takes the bytes;
 * @outer, started with K0 ^ opad, takes the inner digest at the end. */
typedef struct {
  Md       inner, outer;
  gboolean keyed;
} Mac;

static void
mac_init (Mac *m, const guint8 *key, gsize key_len)
{
  memset (m, 0, sizeof *m);
  md_init (&m->inner, G_CHECKSUM_SHA256);
  if (!key)
    return;
  m->keyed = TRUE;
  guint8 k0[EB_HMAC_BLOCK] = { 0 }, pad[EB_HMAC_BLOCK];
  if (key_len > EB_HMAC_BLOCK) {
    Md h;
    md_init (&h, G_CHECKSUM_SHA256);
    md_update (&h, key, key_len);
    md_final (&h, k0);
  } else if (key_len) {
    memcpy (k0, key, key_len);
  }
  for (guint i = 0; i < EB_HMAC_BLOCK; i++)
    pad[i] = k0[i] ^ 0x36;
  md_update (&m->inner, pad, EB_HMAC_BLOCK);
  md_init (&m->outer, G_CHECKSUM_SHA256);
  for (guint i = 0; i < EB_HMAC_BLOCK; i++)
    pad[i] = k0[i] ^ 0x5c;
  md_update (&m->outer, pad, EB_HMAC_BLOCK);
  explicit_bzero (k0, sizeof k0);
  explicit_bzero (pad, sizeof pad);
}

/* The digest into @out (64 bytes of room); its length. Frees what @m holds. */
static gsize
mac_final (Mac *m, guint8 *out)
{
  gsize n = md_final (&m->inner, out);
  if (!m->keyed)
    return n;
  md_update (&m->outer, out, n);
  return md_final (&m->outer, out);
}

static void
mac_clear (Mac *m)
{
  md_clear (&m->inner);
  md_clear (&m->outer);
}

struct _EbDigest {
  Mac   mac;
  char *hex;   /* once finished */
};

EbDigest *
eb_digest_new_hmac (const guint8 *key, gsize key_len)
{
  EbDigest *s = g_new0 (EbDigest, 1);
  mac_init (&s->mac, key, key_len);
  return s;
}

EbDigest *
eb_digest_new (void)
{
  return eb_digest_new_hmac (NULL, 0);
}

void
eb_digest_update (EbDigest *s, const void *p, gsize len)
{
  g_return_if_fail (s != NULL && !s->hex);
  md_update (&s->mac.inner, p, len);
}

char *
eb_digest_finish_hex (EbDigest *s)
{
  g_return_val_if_fail (s != NULL, NULL);
  if (!s->hex) {
    guint8 d[64];
    gsize n = mac_final (&s->mac, d);
    s->hex = hex_of (d, n);
  }
  return g_strdup (s->hex);
}

void
eb_digest_free (EbDigest *s)
{
  if (!s)
    return;
  mac_clear (&s->mac);
  g_free (s->hex);
  g_free (s);
}

char *
eb_digest_sha256_hex (const guint8 *p, gsize len)
{
  char *hex = NULL;
  eb_digest_sha256_md5 (p, len, &hex, NULL);
  return hex;
}

void
eb_digest_sha256_md5 (const guint8 *p, gsize len, char **sha256_hex, char **md5_base64)
{
  eb_digest_hmac_sha256_md5 (NULL, 0, p, len, sha256_hex, NULL, md5_base64);
}

void
eb_digest_hmac_sha256_md5 (const guint8 *key, gsize key_len, const guint8 *p, gsize len,
                           char **hmac_hex, char **sha256_hex, char **md5_base64)
{
  g_return_if_fail (hmac_hex != NULL);
  Mac mac;
  Md sha = { 0 }, md5 = { 0 };
  gboolean plain = key && sha256_hex;   /* a SHA-256 besides the HMAC */
  mac_init (&mac, key, key_len);
  if (plain)
    md_init (&sha, G_CHECKSUM_SHA256);
  if (md5_base64)
    md_init (&md5, G_CHECKSUM_MD5);
  for (gsize off = 0; off < len; off += EB_DIGEST_BLOCK) {
    gsize n = MIN (len - off, (gsize) EB_DIGEST_BLOCK);
    md_update (&mac.inner, p + off, n);
    if (plain)
      md_update (&sha, p + off, n);
    if (md5_base64)
      md_update (&md5, p + off, n);
  }
  guint8 d[64];
  gsize n = mac_final (&mac, d);
  mac_clear (&mac);
  *hmac_hex = hex_of (d, n);
  if (sha256_hex) {
    if (plain) {
      n = md_final (&sha, d);
      *sha256_hex = hex_of (d, n);
    } else {
      *sha256_hex = g_strdup (*hmac_hex);
    }
  }
  if (md5_base64) {
    n = md_final (&md5, d);
    *md5_base64 = g_base64_encode (d, n);
  }
}

char *
eb_digest_md5_canonical_text (const guint8 *p, gsize len)
{
  /* any bare LF at all? (a CR LF pair is canonical already) */
  gboolean bare = FALSE;
  for (const guint8 *q = p; !bare && q && (q = memchr (q, '\n', len - (gsize) (q - p)));) {
    bare = q == p || q[-1] != '\r';
    q++;
  }
  if (!bare)
    return NULL;
  Md md5;
  md_init (&md5, G_CHECKSUM_MD5);
  gsize from = 0;
  for (gsize i = 0; i < len; i++) {
    if (p[i] != '\n' || (i > 0 && p[i - 1] == '\r'))
      continue;
    md_update (&md5, p + from, i - from);
    md_update (&md5, (const guint8 *) "\r\n", 2);
    from = i + 1;
  }
  md_update (&md5, p + from, len - from);
  guint8 d[64];
  gsize n = md_final (&md5, d);
  return g_base64_encode (d, n);
}

char *
eb_digest_notice_hex (const guint8 *p, gsize len)
{
  /* the line breaks at the end: LF, or CR LF */
  while (len > 0 && p[len - 1] == '\n') {
    len--;
    if (len > 0 && p[len - 1] == '\r')
      len--;
  }
  g_autoptr (EbDigest) s = eb_digest_new ();
  gsize from = 0;
  for (gsize i = 0; i + 1 < len; i++) {
    if (p[i] != '\r' || p[i + 1] != '\n')
      continue;
    eb_digest_update (s, p + from, i - from);   /* CR LF -> LF: the CR left out */
    from = i + 1;
  }
  eb_digest_update (s, p + from, len - from);
  return eb_digest_finish_hex (s);
}
