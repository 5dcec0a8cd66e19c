/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-resolve.c - decisions and replacement headers (see eb-resolve.h). */
#include "eb-resolve.h"
#include "eb-digest.h"
#include "eb-dataurl.h"
#include "eb-urlparam.h"
#include "eb-gmime.h"
#include "eb-error.h"
#include "eb-nntp.h"
#include "eb-ftp.h"
#include "eb-scheme.h"
#include <string.h>

static EbResolution *
leave (EbResolution *res, EbReason reason, char *detail /* (transfer full) */)
{
  res->reason = reason;
  res->detail = detail;
  return res;
}

static gboolean
block_has (const EbHeaderBlock *block, const char *buf, const char *base, gsize name_len)
{
  for (guint i = 0; i < block->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (block->fields, EbHeaderField, i);
    if (f->name_len == name_len && g_ascii_strncasecmp (buf + f->start, base, name_len) == 0)
      return TRUE;
  }
  return FALSE;
}

/* Equal, in a time that does not depend on where they differ (@b is a
 * digest keyed with the site's secret). */
static gboolean
same_hex (const char *a, const char *b, gsize n)
{
  guint8 d = 0;
  for (gsize i = 0; i < n; i++)
    d |= (guint8) (a[i] ^ b[i]);
  return d == 0;
}

/* Is @f the Content-ID extbody externalize gives a part that had none,
 * <name@host> naming @data by the object's name (RFC 2046 5.2.3 wants one in
 * every reference): its SHA-256, or its HMAC-SHA256 keyed with this
 * configuration's externalize_key (@key; NULL or empty: none)? The restored
 * part goes without it, as it came. *@digest caches the data's SHA-256
 * (hex). */
static gboolean
generated_content_id (const EbHeaderField *f, const char *buf, GBytes *data, const char *key,
                      char **digest)
{
  if (!eb_header_field_is (f, buf, "Content-ID"))
    return FALSE;
  g_autofree char *v = eb_header_field_unfold (f, buf);
  g_strstrip (v);
  if (strlen (v) < 67 || v[0] != '<' || v[65] != '@')
    return FALSE;
  for (guint i = 1; i < 65; i++)
    if (!g_ascii_isdigit (v[i]) && !(v[i] >= 'a' && v[i] <= 'f'))
      return FALSE;
  if (!*digest)
    *digest = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, data);
  if (strncmp (v + 1, *digest, 64) == 0)
    return TRUE;
  if (!key || !*key)
    return FALSE;
  gsize dlen = 0;
  const guint8 *d = g_bytes_get_data (data, &dlen);
  g_autofree char *mac = NULL;
  eb_digest_hmac_sha256_md5 ((const guint8 *) key, strlen (key), d, dlen, &mac, NULL, NULL);
  return same_hex (v + 1, mac, 64);
}

/* A content field of a fallback alternative that is not the part's: the
 * alternative's own type and encoding, and those externalize writes into the
 * phantom header (the inner header has the part's) or drops. */
static gboolean
alt_own_field (const EbHeaderField *f, const char *buf)
{
  static const char *const own[] = { "Content-Type", "Content-Transfer-Encoding", "Content-ID",
                                     "Content-Description", "Content-Disposition", "Content-MD5",
                                     "Content-Length" };
  for (guint i = 0; i < G_N_ELEMENTS (own); i++)
    if (eb_header_field_is (f, buf, own[i]))
      return TRUE;
  return FALSE;
}

/* Multipart or message data goes out as 7bit lines or not at all: it may not hold
 * a line that would end an enclosing multipart. */
static gboolean
composite_safe (const guint8 *d, gsize len, GPtrArray *bounds)
{
  gsize col = 0;
  for (gsize i = 0; i < len; i++) {
    guint8 c = d[i];
    if (col == 0 && c == '-' && i + 1 < len && d[i + 1] == '-') {
      for (guint b = 0; b < bounds->len; b++) {
        const char *bd = g_ptr_array_index (bounds, b);
        gsize bl = strlen (bd);
        if (len - i - 2 >= bl && memcmp (d + i + 2, bd, bl) == 0)
          return FALSE;
      }
    }
    if (c == '\n') {
      col = 0;
      continue;
    }
    if (c == 0 || c >= 128 || (c == '\r' && !(i + 1 < len && d[i + 1] == '\n')))
      return FALSE;
    if (c != '\r' && ++col > 998)
      return FALSE;
  }
  return TRUE;
}

static char *
short_type (const char *t)
{
  return strlen (t) <= 100 ? g_strdup (t) : g_strdup_printf ("%.100s...", t);
}

static gboolean
is_data_url (const char *url)
{
  return url && eb_data_url_has_scheme (url, strlen (url));
}

/* "ascii" -> a, "image"/"binary"/"local8" -> i (RFC 2046 5.2.3.2, RFC 1738 3.2.2) */
static const char *
ftp_typecode (const char *mode)
{
  if (!mode)
    return NULL;
  if (!g_ascii_strcasecmp (mode, "ascii"))
    return "a";
  if (!g_ascii_strcasecmp (mode, "image") || !g_ascii_strcasecmp (mode, "binary")
      || !g_ascii_strncasecmp (mode, "local", 5))
    return "i";
  return NULL;
}

static char *
escape_segment (const char *s)
{
  return g_uri_escape_string (s, "!$&'()*+,=:@-._~", FALSE);
}

static EbAction *
act (EbActionKind kind, EbReason reason, char *detail /* (transfer full) */,
     char *target /* (transfer full) */)
{
  EbAction *a = g_new0 (EbAction, 1);
  a->kind = kind;
  a->reason = reason;
  a->detail = detail;
  a->target = target;
  return a;
}

static EbAction *
decide_leave (EbReason reason, char *detail)
{
  return act (EB_ACTION_LEAVE, reason, detail, NULL);
}

gboolean
eb_resolve_scheme_allowed (const EbConfig *config, const char *scheme)
{
  const char *const *list = eb_config_get_allow_schemes (config);
  for (guint i = 0; list && list[i]; i++)
    if (g_ascii_strcasecmp (list[i], scheme) == 0)
      return TRUE;
  return FALSE;
}

/* A reference to be fetched from @url (of @scheme, one fetched over the
 * network): fetching on, the scheme allowed, its server known, the announced
 * size within max_part_bytes. */
static EbAction *
decide_fetch (const EbRef *ref, const EbConfig *config, char *url /* (transfer full) */,
              const EbScheme *scheme, const char *what)
{
  if (!config->fetch) {
    g_free (url);
    return decide_leave (EB_REASON_FETCH_OFF, g_strdup (what));
  }
  if (!eb_resolve_scheme_allowed (config, scheme->name)) {
    g_free (url);
    return decide_leave (EB_REASON_SCHEME_DISABLED, g_strdup (what));
  }
  if (scheme->nntp_server && !(config->nntp_server && *config->nntp_server)) {
    g_free (url);
    return decide_leave (EB_REASON_SCHEME_DISABLED, g_strdup_printf ("%s: nntp_server is empty", what));
  }
  if (ref->size) {
    guint64 sz = g_ascii_strtoull (ref->size, NULL, 10);
    if (sz > config->max_part_bytes) {
      g_free (url);
      return decide_leave (EB_REASON_SIZE_PARAM, g_strdup_printf ("size=%" G_GUINT64_FORMAT, sz));
    }
  }
  return act (EB_ACTION_FETCH, EB_REASON_RESOLVED, NULL, url);
}

/* A file URL (RFC 1738 3.10): read as access-type=local-file reads, under
 * local_file_dirs, when allow_schemes names file; only file:///PATH and
 * file://localhost/PATH, the path percent-decoded segment by segment (see
 * eb_fetch_file_url_path). Fetching on or off does not matter: nothing goes
 * over the network. */
static EbAction *
decide_file_url (const EbRef *ref, const EbConfig *config, const EbScheme *scheme, const char *what)
{
  char *detail = NULL;
  char *path = NULL;
  EbReason r = eb_fetch_file_url_path (ref->url, &path, &detail);
  if (r == EB_REASON_FILE_REMOTE_HOST)
    return decide_leave (r, detail);
  if (!eb_resolve_scheme_allowed (config, scheme->name)) {
    g_free (path);
    g_free (detail);
    return decide_leave (EB_REASON_SCHEME_DISABLED, g_strdup (what));
  }
  const char *const *dirs = eb_config_get_local_file_dirs (config);
  if (!dirs || !dirs[0]) {
    g_free (path);
    g_free (detail);
    return decide_leave (EB_REASON_LOCAL_FILE_DIRS, g_strdup (what));
  }
  if (r != EB_REASON_RESOLVED)
    return decide_leave (r, detail);
  if (ref->size) {
    guint64 sz = g_ascii_strtoull (ref->size, NULL, 10);
    if (sz > config->max_part_bytes) {
      g_free (path);
      return decide_leave (EB_REASON_SIZE_PARAM, g_strdup_printf ("size=%" G_GUINT64_FORMAT, sz));
    }
  }
  return act (EB_ACTION_LOCAL_FILE, EB_REASON_RESOLVED, NULL, path);
}

/* The RFC 1738 URL of @scheme (ftp) of an anon-ftp reference (RFC 2046
 * site, directory, name, mode). */
static char *
anon_ftp_url (const EbRef *ref, const EbScheme *scheme)
{
  GString *u = g_string_new (scheme->name);
  g_string_append (u, "://");
  g_autofree char *site = escape_segment (ref->site);
  g_string_append (u, site);
  g_string_append_c (u, '/');
  if (ref->directory && *ref->directory) {
    /* each directory level its own CWD; a leading '/' is an absolute path: %2F */
    const char *d = ref->directory;
    if (*d == '/')
      g_string_append (u, "%2F");
    g_auto (GStrv) segs = g_strsplit (d, "/", -1);
    for (guint i = 0; segs[i]; i++) {
      if (!*segs[i])
        continue;
      g_autofree char *e = escape_segment (segs[i]);
      g_string_append_printf (u, "%s/", e);
    }
  }
  g_autofree char *name = escape_segment (ref->name);
  g_string_append (u, name);
  const char *tc = ftp_typecode (ref->mode);
  if (tc)
    g_string_append_printf (u, ";type=%s", tc);
  return g_string_free (u, FALSE);
}

EbAction *
eb_resolve_decide (const EbRef *ref, const EbConfig *config)
{
  if (ref->walk_reason != EB_REASON_RESOLVED)
    return decide_leave (ref->walk_reason, NULL);
  if (!ref->located || ref->read_reason != EB_REASON_RESOLVED)
    return decide_leave (ref->located ? ref->read_reason : EB_REASON_UNLOCATABLE,
                         g_strdup (ref->read_detail));
  if (ref->inner_type_bad)
    return decide_leave (EB_REASON_BAD_INNER_HEADER,
                         g_strdup ("inner Content-Type unreadable or repeated"));
  if (ref->inner_type && strcmp (ref->inner_type, "message/external-body") == 0)
    return decide_leave (EB_REASON_NESTED_REF, NULL);

  const char *at = ref->access_type ? ref->access_type : "";
  if (strcmp (at, "url") == 0) {
    if (is_data_url (ref->url))
      return act (EB_ACTION_DATA, EB_REASON_RESOLVED, NULL, NULL);
    const char *colon = strchr (ref->url, ':');
    gsize sl = colon ? (gsize) (colon - ref->url) : 0;
    g_autofree char *scheme = g_ascii_strdown (ref->url, (gssize) MIN (sl, 32));
    g_autofree char *what = g_strdup_printf ("scheme \"%s\"", sl ? scheme : "");
    /* what the URL itself says comes first, whatever the configuration */
    char *why = NULL;
    EbReason kind = sl ? eb_fetch_url_classify (ref->url, &why) : EB_REASON_RESOLVED;
    if (kind == EB_REASON_RESOLVED && sl)
      kind = eb_nntp_classify (ref->url, &why);
    if (kind != EB_REASON_RESOLVED)
      return decide_leave (kind, why);
    const EbScheme *row = sl ? eb_scheme_lookup (scheme) : NULL;
    if (row && row->by == EB_SCHEME_LOCAL_FILE)
      return decide_file_url (ref, config, row, what);
    if (!eb_scheme_is_fetched (row))
      return decide_leave (EB_REASON_SCHEME_DISABLED, g_steal_pointer (&what));
    /* RFC 1738 3.2.2's typecode as libcurl reads it */
    char *url = row->rules == EB_SCHEME_RULES_FTP ? eb_ftp_typecode_lower (ref->url) : g_strdup (ref->url);
    return decide_fetch (ref, config, url, row, what);
  }
  /* an anon-ftp reference is an ftp URL (RFC 2046 5.2.3.2): the row of the
   * scheme whose URLs its references are */
  const EbScheme *via = eb_scheme_for_access_type (at);
  if (via) {
    if (!ref->site || !ref->name)
      return decide_leave (EB_REASON_PARAM_MISSING,
                           g_strdup_printf ("access-type=%s without %s", at, ref->site ? "name" : "site"));
    g_autofree char *what = config->fetch ? g_strdup_printf ("access-type=%s: scheme \"%s\"", at, via->name)
                                          : g_strdup_printf ("access-type=%s", at);
    return decide_fetch (ref, config, anon_ftp_url (ref, via), via, what);
  }
  if (strcmp (at, "local-file") == 0) {
    if (!ref->name)
      return decide_leave (EB_REASON_PARAM_MISSING, g_strdup ("access-type=local-file without name"));
    const char *const *dirs = eb_config_get_local_file_dirs (config);
    if (!dirs || !dirs[0])
      return decide_leave (EB_REASON_LOCAL_FILE_DIRS, g_strdup ("access-type=local-file"));
    return act (EB_ACTION_LOCAL_FILE, EB_REASON_RESOLVED, NULL, g_strdup (ref->name));
  }
  g_autofree char *shown = g_strndup (at, 60);
  return decide_leave (EB_REASON_ACCESS_TYPE, g_strdup_printf ("access-type=%s", shown));
}

gboolean
eb_resolve_expired (const EbRef *ref)
{
  if (!ref->expiration)
    return FALSE;
  g_autoptr (GDateTime) exp = g_mime_utils_header_decode_date (ref->expiration);
  g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
  return exp && g_date_time_compare (exp, now) < 0;
}

/* Base64 of the MD5 of @data (RFC 1864). */
static char *
md5_base64 (GBytes *data)
{
  g_autoptr (GChecksum) c = g_checksum_new (G_CHECKSUM_MD5);
  gsize n = 0;
  const guint8 *d = g_bytes_get_data (data, &n);
  g_checksum_update (c, d, (gssize) n);
  guint8 digest[16];
  gsize dl = sizeof digest;
  g_checksum_get_digest (c, digest, &dl);
  return g_base64_encode (digest, dl);
}

/* The essence of a server's Content-Type (bytes, isomorphic-decoded), or NULL. */
static char *
server_essence (const char *ct)
{
  if (!ct)
    return NULL;
  g_autofree char *utf8 = g_convert (ct, -1, "UTF-8", "ISO-8859-1", NULL, NULL, NULL);
  if (!utf8)
    return NULL;
  g_autoptr (EbMimeType) mt = eb_mime_type_parse (utf8, -1);
  return mt ? eb_mime_type_get_essence (mt) : NULL;
}

gboolean
eb_resolve_scheme_fetchable (const char *scheme)
{
  return eb_scheme_is_fetched (eb_scheme_lookup (scheme));
}

/* What a retrieval gave, before the data is decoded and checked. */
typedef struct {
  GBytes *raw;          /* the retrieved data, before the inner CTE */
  char   *essence;      /* what the data says it is, if anything */
  char   *default_type; /* written when the inner header has no type */
  char   *source;       /* for the trace field */
} Retrieved;

static void
retrieved_clear (Retrieved *got)
{
  g_clear_pointer (&got->raw, g_bytes_unref);
  g_clear_pointer (&got->essence, g_free);
  g_clear_pointer (&got->default_type, g_free);
  g_clear_pointer (&got->source, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Retrieved, retrieved_clear)

/* The data of a data: URL into @got; or @res left, and returned, when the
 * URL is invalid or its type disagrees with the inner header's. */
static EbResolution *
retrieve_data_url (EbResolution *res, const EbRef *ref, Retrieved *got)
{
  g_autoptr (GError) err = NULL;
  g_autoptr (EbDataUrl) du = eb_data_url_process (ref->url, (gssize) strlen (ref->url), &err);
  if (!du)
    return leave (res, EB_REASON_DATA_URL_INVALID, g_strdup (err->message));
  got->essence = eb_mime_type_get_essence (du->mime_type);
  if (du->type_given && ref->inner_type && strcmp (got->essence, ref->inner_type) != 0) {
    g_autofree char *a = short_type (got->essence);
    g_autofree char *b = short_type (ref->inner_type);
    return leave (res, EB_REASON_TYPE_MISMATCH,
                  g_strdup_printf ("data: URL is %s, inner header says %s", a, b));
  }
  got->default_type = eb_mime_type_serialize (du->mime_type);
  got->raw = g_bytes_ref (du->body);
  g_autofree char *st = short_type (got->essence);
  got->source = g_strdup_printf ("access-type=URL; scheme=data; type=\"%s\"", st);
  return NULL;
}

/* What the fetcher got (a URL, anon-ftp, a local file) into @got; or @res
 * left, and returned, when it got nothing or a type that disagrees. */
static EbResolution *
retrieve_fetched (EbResolution *res, const EbRef *ref, const EbAction *action,
                  const EbFetchResult *fetched, const EbConfig *config, const char *eol,
                  Retrieved *got)
{
  if (fetched->reason != EB_REASON_RESOLVED && eb_resolve_expired (ref))
    /* RFC 2046 5.2.3.1: past its expiration the data is no longer
     * guaranteed to exist; it was tried all the same, and is gone */
    return leave (res, EB_REASON_EXPIRED,
                  g_strdup_printf ("expiration=%.60s; %s: %s", ref->expiration,
                                   eb_reason_token (fetched->reason),
                                   fetched->detail ? fetched->detail : eb_reason_text (fetched->reason)));
  if (fetched->reason != EB_REASON_RESOLVED)
    return leave (res, fetched->reason, g_strdup (fetched->detail));
  got->essence = server_essence (fetched->content_type);
  g_autofree char *named = g_strstrip (g_strdup (fetched->content_type ? fetched->content_type : ""));
  if (!got->essence && *named && strcmp (config->content_type_mismatch, "accept") != 0)
    /* a type the server names but that is no MIME type does not agree */
    return leave (res, EB_REASON_TYPE_MISMATCH,
                  g_strdup ("the server's Content-Type is not a MIME type"));
  if (got->essence && strcmp (got->essence, "application/octet-stream") == 0 && ref->inner_type)
    /* what many servers say of any file they cannot name: no assertion,
     * the inner header's type governs as when the server names none */
    g_clear_pointer (&got->essence, g_free);
  if (got->essence && ref->inner_type && strcmp (got->essence, ref->inner_type) != 0
      && strcmp (config->content_type_mismatch, "accept") != 0) {
    g_autofree char *a = short_type (got->essence);
    g_autofree char *b = short_type (ref->inner_type);
    return leave (res, EB_REASON_TYPE_MISMATCH,
                  g_strdup_printf ("server says %s, inner header says %s", a, b));
  }
  got->default_type = g_strdup (got->essence ? got->essence : "application/octet-stream");
  got->raw = g_bytes_ref (fetched->body);
  if (action->kind == EB_ACTION_LOCAL_FILE && strcmp (ref->access_type, "url") != 0) {
    g_autofree char *name = eb_header_quote (fetched->final_url);
    got->source = g_strdup_printf ("access-type=local-file;%s\tname=%s", eol, name);
  } else {
    gboolean is_url = strcmp (ref->access_type, "url") == 0;
    /* a file URL's final_url is the path read: the trace names the URL */
    const char *shown = action->kind == EB_ACTION_LOCAL_FILE ? ref->url : fetched->final_url;
    g_autofree char *param = eb_urlparam_format (shown, 40, EB_FOLD_LINES, eol);
    got->source = g_strdup_printf ("access-type=%s;%s\t%s", is_url ? "URL" : ref->access_type,
                                   eol, param);
  }
  return NULL;
}

/* @raw decoded by the inner Content-Transfer-Encoding into *@out, within
 * the part and message limits (@budget: what the message holds already)
 * and agreeing with the inner Content-MD5; or @res left, and returned. */
static EbResolution *
decode_checked (EbResolution *res, const EbRef *ref, const char *buf, const EbConfig *config,
                GBytes *raw, guint64 budget, GBytes **out)
{
  g_autoptr (GError) err = NULL;
  EbCte cte = eb_transfer_parse_cte (ref->inner_cte);
  if (cte == EB_CTE_UNKNOWN)
    return leave (res, EB_REASON_CTE_UNKNOWN,
                  g_strdup_printf ("Content-Transfer-Encoding: %.60s", ref->inner_cte));
  if (g_bytes_get_size (raw) > config->max_part_bytes)
    return leave (res, EB_REASON_PART_TOO_LARGE,
                  g_strdup_printf ("%" G_GSIZE_FORMAT " bytes", g_bytes_get_size (raw)));
  g_autoptr (GBytes) data = eb_transfer_decode (cte, raw, &err);
  if (!data)
    return leave (res, EB_REASON_CTE_INVALID,
                  g_strdup_printf ("as %s: %s", ref->inner_cte, err->message));
  gsize dlen = 0;
  const guint8 *d = g_bytes_get_data (data, &dlen);
  if (dlen > config->max_part_bytes)
    return leave (res, EB_REASON_PART_TOO_LARGE,
                  g_strdup_printf ("%" G_GSIZE_FORMAT " bytes", dlen));
  if (budget + dlen > config->max_message_bytes)
    return leave (res, EB_REASON_MESSAGE_BUDGET,
                  g_strdup_printf ("%" G_GUINT64_FORMAT " + %" G_GSIZE_FORMAT " bytes", budget, dlen));
  gint md5 = eb_header_block_find (ref->inner, buf, "Content-MD5");
  if (md5 >= 0) {
    g_autofree char *want = eb_header_field_unfold (&g_array_index (ref->inner->fields,
                                                                    EbHeaderField, md5), buf);
    g_autofree char *got = md5_base64 (data);
    /* text: RFC 1864 digests its canonical form (CR LF line ends); the data
     * as stored may end its lines in LF alone */
    g_autofree char *canonical = strcmp (want, got) != 0 && ref->inner_type
                                 && g_str_has_prefix (ref->inner_type, "text/")
                                 ? eb_digest_md5_canonical_text (d, dlen) : NULL;
    if (canonical && strcmp (want, canonical) == 0) {
      g_free (got);
      got = g_steal_pointer (&canonical);
    }
    if (strcmp (want, got) != 0)
      return leave (res, EB_REASON_CHECKSUM,
                    g_strdup_printf ("Content-MD5 %.40s, data %s", want, got));
  }
  *out = g_steal_pointer (&data);
  return NULL;
}

/* The new header of the part that replaces @ref's entity (its data @data,
 * written as @enc); a generated Content-ID's digest goes to @res. */
static GString *
new_header (EbResolution *res, const EbRef *ref, const char *buf, const char *eol,
            const EbConfig *config, GBytes *data, const char *default_type, EbOutEncoding enc)
{
  GString *h = g_string_new (NULL);
  const EbHeaderBlock *outer = ref->outer;
  const EbHeaderBlock *inner = ref->inner;
  /* first the fields other than Content-* of the entity replaced: for the
   * body of a message, the message header (RFC 2046 5.2.3.7); for the
   * fallback shape, the multipart/alternative's own header, which the
   * restored part takes the place of */
  const EbHeaderBlock *top = ref->alt ? ref->alt_outer : ref->is_root ? outer : NULL;
  for (guint i = 0; top && i < top->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (top->fields, EbHeaderField, i);
    if (!eb_header_field_is_content (f, buf) && !(ref->alt && eb_header_field_is (f, buf, EB_FALLBACK_FIELD)))
      eb_header_field_append (h, buf, f, eol);
  }
  for (guint i = 0; i < inner->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (inner->fields, EbHeaderField, i);
    if (!eb_header_field_is (f, buf, "Content-Transfer-Encoding")
        && !generated_content_id (f, buf, data, config->externalize_key, &res->digest))
      eb_header_field_append (h, buf, f, eol);
  }
  if (!ref->inner_type)
    g_string_append_printf (h, "Content-Type: %s%s", default_type, eol);
  /* the fallback alternative holds the part's content fields that externalize
   * neither moves into the phantom header nor drops (Content-Location,
   * Content-Language...): they are the part's */
  for (guint i = 0; ref->alt && i < ref->alt_outer->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (ref->alt_outer->fields, EbHeaderField, i);
    if (!eb_header_field_is_content (f, buf) || alt_own_field (f, buf))
      continue;
    if (block_has (inner, buf, buf + f->start, f->name_len))
      continue;   /* the inner header wins */
    eb_header_field_append (h, buf, f, eol);
  }
  for (guint i = 0; i < outer->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (outer->fields, EbHeaderField, i);
    if (eb_header_field_is (f, buf, "Content-Type")
        || eb_header_field_is (f, buf, "Content-Transfer-Encoding"))
      continue;
    if (ref->is_root && !eb_header_field_is_content (f, buf))
      continue;   /* already copied above */
    if (block_has (inner, buf, buf + f->start, f->name_len))
      continue;   /* the inner header wins */
    eb_header_field_append (h, buf, f, eol);
  }
  g_string_append_printf (h, "Content-Transfer-Encoding: %s%s", eb_transfer_name (enc), eol);
  return h;
}

EbResolution *
eb_resolve (const EbRef *ref, const EbAction *action, const char *buf, gsize len, const char *eol,
            const EbConfig *config, const EbFetchResult *fetched, guint64 *budget)
{
  EbResolution *res = g_new0 (EbResolution, 1);

  if (action->kind == EB_ACTION_LEAVE)
    return leave (res, action->reason, g_strdup (action->detail));
  if (action->kind != EB_ACTION_DATA && !fetched)
    /* inspect without --fetch: the decision itself */
    return leave (res, EB_REASON_WOULD_FETCH, g_strdup_printf ("%.200s", action->target));

  g_auto (Retrieved) got = { 0 };
  EbResolution *left = action->kind == EB_ACTION_DATA
                       ? retrieve_data_url (res, ref, &got)
                       : retrieve_fetched (res, ref, action, fetched, config, eol, &got);
  if (left)
    return left;
  g_autoptr (GBytes) data = NULL;
  left = decode_checked (res, ref, buf, config, got.raw, *budget, &data);
  if (left)
    return left;
  gsize dlen = 0;
  const guint8 *d = g_bytes_get_data (data, &dlen);

  const char *type = ref->inner_type ? ref->inner_type
                                     : (got.essence ? got.essence : "application/octet-stream");
  gboolean composite = g_str_has_prefix (type, "multipart/") || g_str_has_prefix (type, "message/");
  EbOutEncoding enc;
  if (composite) {
    if (!composite_safe (d, dlen, ref->boundaries))
      return leave (res, EB_REASON_COMPOSITE_UNSAFE, g_strdup (type));
    enc = EB_OUT_7BIT;
  } else {
    enc = eb_transfer_choose (g_str_has_prefix (type, "text/"), d, dlen);
  }

  res->head = new_header (res, ref, buf, eol, config, data, got.default_type, enc);
  /* the trace field (size and SHA-256) when the header is first asked for */
  res->trace = g_steal_pointer (&got.source);
  res->eol = g_strdup (eol);

  *budget += dlen;
  res->reason = EB_REASON_RESOLVED;
  res->data = g_steal_pointer (&data);
  res->encoding = enc;
  res->type = g_strdup (type);
  (void) len;
  return res;
}
