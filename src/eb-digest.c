/* eb-digest.c - SHA-256 and MD5 in one pass (see eb-digest.h). */
#include "eb-digest.h"
#ifdef EB_HAVE_LIBCRYPTO
#include <openssl/evp.h>
#endif

/* Each digest takes this much before the other: small enough that the block
 * is still in the cache when the second digest reads it. */
#define EB_DIGEST_BLOCK (32 * 1024)

#ifdef EB_HAVE_LIBCRYPTO

struct _EbSha256 {
  EVP_MD_CTX *ctx;
};

/* A digest context started for @md; aborts on failure (only out of memory). */
static EVP_MD_CTX *
md_new (const EVP_MD *md)
{
  EVP_MD_CTX *ctx = EVP_MD_CTX_new ();
  if (!ctx || EVP_DigestInit_ex (ctx, md, NULL) != 1)
    g_error ("libcrypto: cannot start a digest");
  return ctx;
}

static void
md_update (EVP_MD_CTX *ctx, const void *p, gsize len)
{
  if (len && EVP_DigestUpdate (ctx, p, len) != 1)
    g_error ("libcrypto: cannot update a digest");
}

/* The digest into @out (room for EVP_MAX_MD_SIZE); its length. */
static guint
md_final (EVP_MD_CTX *ctx, guint8 *out)
{
  unsigned int n = 0;
  if (EVP_DigestFinal_ex (ctx, out, &n) != 1)
    g_error ("libcrypto: cannot finish a digest");
  return n;
}

const char *
eb_digest_backend (void)
{
  return "libcrypto";
}

#else

struct _EbSha256 {
  GChecksum *ctx;
};

const char *
eb_digest_backend (void)
{
  return "glib";
}

#endif

static char *
hex_of (const guint8 *d, guint n)
{
  static const char digits[] = "0123456789abcdef";
  char *s = g_malloc (2 * n + 1);
  for (guint i = 0; i < n; i++) {
    s[2 * i] = digits[d[i] >> 4];
    s[2 * i + 1] = digits[d[i] & 15];
  }
  s[2 * n] = '\0';
  return s;
}

EbSha256 *
eb_sha256_new (void)
{
  EbSha256 *s = g_new0 (EbSha256, 1);
#ifdef EB_HAVE_LIBCRYPTO
  s->ctx = md_new (EVP_sha256 ());
#else
  s->ctx = g_checksum_new (G_CHECKSUM_SHA256);
#endif
  return s;
}

void
eb_sha256_update (EbSha256 *s, const void *p, gsize len)
{
  g_return_if_fail (s != NULL);
#ifdef EB_HAVE_LIBCRYPTO
  md_update (s->ctx, p, len);
#else
  for (gsize off = 0; off < len; off += G_MAXSSIZE)
    g_checksum_update (s->ctx, (const guchar *) p + off, (gssize) MIN (len - off, (gsize) G_MAXSSIZE));
#endif
}

char *
eb_sha256_finish_hex (EbSha256 *s)
{
  g_return_val_if_fail (s != NULL, NULL);
  guint8 d[64];
#ifdef EB_HAVE_LIBCRYPTO
  guint n = md_final (s->ctx, d);
#else
  gsize n = sizeof d;
  g_checksum_get_digest (s->ctx, d, &n);
#endif
  return hex_of (d, (guint) n);
}

void
eb_sha256_free (EbSha256 *s)
{
  if (!s)
    return;
#ifdef EB_HAVE_LIBCRYPTO
  EVP_MD_CTX_free (s->ctx);
#else
  g_checksum_free (s->ctx);
#endif
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
  g_return_if_fail (sha256_hex != NULL);
  g_autoptr (EbSha256) sha = eb_sha256_new ();
  guint8 d[64];
#ifdef EB_HAVE_LIBCRYPTO
  EVP_MD_CTX *md5 = md5_base64 ? md_new (EVP_md5 ()) : NULL;
#else
  g_autoptr (GChecksum) md5 = md5_base64 ? g_checksum_new (G_CHECKSUM_MD5) : NULL;
#endif
  for (gsize off = 0; off < len; off += EB_DIGEST_BLOCK) {
    gsize n = MIN (len - off, (gsize) EB_DIGEST_BLOCK);
    eb_sha256_update (sha, p + off, n);
    if (md5)
#ifdef EB_HAVE_LIBCRYPTO
      md_update (md5, p + off, n);
#else
      g_checksum_update (md5, p + off, (gssize) n);
#endif
  }
  *sha256_hex = eb_sha256_finish_hex (sha);
  if (md5_base64) {
#ifdef EB_HAVE_LIBCRYPTO
    guint dl = md_final (md5, d);
    EVP_MD_CTX_free (md5);
#else
    gsize dl = sizeof d;
    g_checksum_get_digest (md5, d, &dl);
#endif
    *md5_base64 = g_base64_encode (d, dl);
  }
}
