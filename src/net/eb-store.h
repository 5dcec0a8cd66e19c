/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-store.h - where externalized parts go: a directory or a WebDAV collection.
 *
 * An object is the decoded bytes of one part, named by the lowercase hex
 * SHA-256 of those bytes or, with externalize_key, by their HMAC-SHA256 keyed
 * with it (eb_store_digest): one name per content either way, so the same
 * attachment sent to many people is stored once; with the key nobody without
 * it can compute an object's name from a file. eb_store_put (public,
 * extbody.h) writes an object unless the store already holds exactly those
 * bytes, reads it back, checks its size and name (the digest of what was read
 * back), and only then returns the URL a resolver fetches it by
 * (externalize_base_url, a slash, the name). Any failure returns EB_ERROR_IO
 * with a one-line message naming the store (a directory, or the collection's
 * URL, never a credential) and the cause; the caller then leaves the part as
 * it was.
 *
 * Backends:
 *   directory  DIR/<hex>; an existing object with the right size and digest is
 *              kept as it is (nothing written); otherwise the bytes go to a
 *              temporary file in DIR (".<hex>.XXXXXX"), fsync, mode 0644,
 *              rename over DIR/<hex>, fsync DIR; a failure removes the
 *              temporary file.
 *   WebDAV     HEAD <store>/<hex>: 200 with the right Content-Length -> GET and
 *              check -> done; else PUT (200, 201 or 204 accepted), then GET and
 *              check. A libcurl easy handle of its own per call (never the
 *              fetcher's), basic authentication from the configuration,
 *              no proxy, no redirects, http and https only, each request
 *              bounded by externalize_store_timeout, at most size + 1 bytes
 *              read back.
 *   S3         (externalize_store_auth = aws-sigv4) the same requests on
 *              http(s)://HOST/BUCKET/<hex> (path style), signed by libcurl
 *              with AWS Signature Version 4 instead of basic authentication;
 *              every request carries x-amz-content-sha256 (the object's
 *              plain SHA-256 on PUT, whatever its name; that of the empty
 *              body otherwise), the PUT
 *              Content-Type application/octet-stream; an error names the
 *              status and S3's <Code> (SignatureDoesNotMatch, NoSuchBucket).
 *
 * Slow stores: the WebDAV and S3 requests call the calling thread's progress
 * hook (eb_fetch_set_thread_progress) about once a second while they run, and
 * the directory store between its steps and while it reads an object back,
 * so that a milter waiting on the store keeps telling the MTA it is busy
 * (smfi_progress); the thread's cancel flag (eb_fetch_set_thread_cancel: the
 * MTA has closed the connection) ends a request, and the put fails
 * ("cancelled"), leaving the part as it was.
 *
 * A store is immutable once made, so one store may be shared by threads.
 */
#pragma once
#include <extbody/extbody.h>

G_BEGIN_DECLS

typedef enum {
  EB_STORE_DIRECTORY,
  EB_STORE_WEBDAV,
} EbStoreKind;

struct _EbStore {
  EbStoreKind kind;
  char       *location;   /* the directory, or the collection's URL ending in '/' */
  char       *base_url;   /* objects' URLs start with this; ends in '/' */
  char       *user;       /* WebDAV basic auth; NULL: none */
  char       *password;
  char       *ca_file;    /* NULL: the system's CAs */
  guint       timeout;    /* seconds, each WebDAV request */
  char       *aws_sigv4;  /* externalize_store_auth = aws-sigv4: libcurl's
                             "aws:amz:REGION:s3" (user = access key ID,
                             password = secret); NULL: basic auth */
  char       *key;        /* externalize_key: names are HMAC-SHA256 keyed with
                             it; NULL: names are SHA-256. Never printed. */
};

/* What one put did (for statistics and tests). */
typedef enum {
  EB_STORE_WRITTEN,       /* the object was written and verified */
  EB_STORE_PRESENT,       /* the store already held exactly these bytes */
} EbStoreOutcome;

/* eb_store_put, saying whether the object was written or already there
 * (@outcome may be NULL). */
char *eb_store_put_full (EbStore *store, GBytes *data, const char *sha256_hex,
                         EbStoreOutcome *outcome, GError **error);

/* The name @store gives the @len bytes at @p (lowercase hex: their SHA-256,
 * or their HMAC-SHA256 keyed with externalize_key), and in the same pass,
 * when asked, their plain SHA-256 (hex; the name again without the key) and
 * MD5 (base64). All (transfer full). */
void eb_store_digest (const EbStore *store, const guint8 *p, gsize len, char **name_hex,
                      char **sha256_hex, char **md5_base64);

/* eb_store_put_full for a caller that has just taken the name and the
 * SHA-256 of @data itself (eb_store_digest: @name_hex and @sha256_hex, 64
 * lowercase hex digits each): they are not taken again before the put. What
 * is read back is verified all the same. */
char *eb_store_put_digested (EbStore *store, GBytes *data, const char *name_hex,
                             const char *sha256_hex, EbStoreOutcome *outcome, GError **error);

/* @base followed by @hex, with exactly one slash between them (pure). */
char *eb_store_join_url (const char *base, const char *hex);

/* TRUE when @hex is 64 lowercase hexadecimal digits (an object's name). */
gboolean eb_store_hex_is_valid (const char *hex);

/* The lowercase hex SHA-256 of @data, (transfer full). */
char *eb_store_sha256_hex (GBytes *data);

G_END_DECLS
