/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-digest.h - the digests externalize names and labels a part by.
 *
 * SHA-256 names an object in the store (lowercase hex) and checks what the
 * store gives back; with externalize_key the name is HMAC-SHA256 (RFC 2104)
 * keyed with it instead; MD5 is the reference's Content-MD5 (RFC 1864: base64
 * of the 16 bytes). All are taken of the same decoded bytes, so they are taken
 * in one pass over them, a cache-sized block at a time: the bytes come from
 * memory once, not once per digest.
 *
 * Built with libcrypto (OpenSSL, found by pkg-config: EB_HAVE_LIBCRYPTO) the
 * digests are OpenSSL's, which use the processor's SHA instructions where
 * there are some - several times faster than GLib's GChecksum, which is used
 * otherwise (and for a digest libcrypto refuses to start: MD5 under FIPS).
 * Either way the digests are the standard ones. The HMAC is RFC 2104's
 * construction over that same SHA-256 (two SHA-256 of the key's padded blocks
 * and the bytes), so it needs nothing libcrypto 1.1 and 3 or GLib do not all
 * have alike. Pure.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* The lowercase hex SHA-256 of @len bytes at @p (@p may be NULL when @len is
 * 0). Returns: (transfer full). */
char *eb_digest_sha256_hex (const guint8 *p, gsize len);

/* The SHA-256 (lowercase hex, into *@sha256_hex) and, with @md5_base64, the
 * MD5 (base64 of the digest, into *@md5_base64) of @len bytes at @p, in one
 * pass. Both (transfer full). */
void eb_digest_sha256_md5 (const guint8 *p, gsize len, char **sha256_hex, char **md5_base64);

/* With @key (@key_len bytes; a key longer than 64 bytes counts as its
 * SHA-256, RFC 2104 section 2): its HMAC-SHA256 of @len bytes at @p, lowercase
 * hex, into *@hmac_hex; and, in the same pass, with @sha256_hex the plain
 * SHA-256 (hex) and with @md5_base64 the MD5 (base64). Without @key (NULL)
 * *@hmac_hex is the plain SHA-256. All (transfer full). */
void eb_digest_hmac_sha256_md5 (const guint8 *key, gsize key_len, const guint8 *p, gsize len,
                                char **hmac_hex, char **sha256_hex, char **md5_base64);

/* RFC 1864 takes the MD5 of text in its canonical form, lines ending in CR LF
 * (RFC 2045 2.7). The base64 MD5 of @len bytes at @p with every LF that has no
 * CR before it counted as CR LF, or NULL when there is no such LF (then the
 * MD5 of the bytes as they are is the canonical one). Returns: (transfer full). */
char *eb_digest_md5_canonical_text (const guint8 *p, gsize len);

/* The digest that marks the text part of a fallback alternative as the
 * notice extbody wrote (EB_FALLBACK_FIELD): the lowercase hex SHA-256 of the
 * decoded text @p[0..@len) in a form transport does not change, every CR LF
 * taken as LF and the line breaks at its end left out. Returns: (transfer full). */
char *eb_digest_notice_hex (const guint8 *p, gsize len);

/* A SHA-256 taken piece by piece (bytes read back from a store). */
typedef struct _EbDigest EbDigest;
EbDigest *eb_digest_new (void);
/* The same for HMAC-SHA256 keyed with @key (@key_len bytes); without @key
 * (NULL) the plain SHA-256, as eb_digest_new. */
EbDigest *eb_digest_new_hmac (const guint8 *key, gsize key_len);
void      eb_digest_update (EbDigest *s, const void *p, gsize len);
/* The lowercase hex digest of everything given so far; no update after it
 * (asking again gives the same). Returns: (transfer full). */
char     *eb_digest_finish_hex (EbDigest *s);
void      eb_digest_free (EbDigest *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbDigest, eb_digest_free)

/* Where the SHA-256 comes from here: "libcrypto" or "glib". */
const char *eb_digest_backend (void);

G_END_DECLS
