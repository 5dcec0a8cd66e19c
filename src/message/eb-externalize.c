/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-externalize.c - select, store, refer (see eb-externalize.h). */
#include "eb-externalize.h"
#include "eb-config.h"
#include "eb-digest.h"
#include "eb-error.h"
#include "eb-extref.h"
#include "eb-header.h"
#include "eb-message.h"
#include "eb-plan-private.h"
#include "eb-seal.h"
#include "eb-store.h"
#include "eb-transfer.h"
#include "eb-urlparam.h"
#include <string.h>

/* RFC 2017 section 3.1: the URL parameter in quoted words of at most 40. */
#define EB_URL_WORD 40

gboolean
eb_externalize_type_matches (const char *const *patterns, const char *type)
{
  const char *slash = type ? strchr (type, '/') : NULL;
  if (!patterns || !slash)
    return FALSE;
  gsize tl = (gsize) (slash - type);
  for (guint i = 0; patterns[i]; i++) {
    const char *p = patterns[i];
    const char *ps = strchr (p, '/');
    if (!ps)
      continue;
    gsize pl = (gsize) (ps - p);
    gboolean any_type = pl == 1 && p[0] == '*';
    if (!any_type && (pl != tl || g_ascii_strncasecmp (p, type, tl) != 0))
      continue;
    if (strcmp (ps + 1, "*") == 0 || g_ascii_strcasecmp (ps + 1, slash + 1) == 0)
      return TRUE;
  }
  return FALSE;
}

char *
eb_externalize_format_date (GDateTime *t)
{
  static const char *const days[] = { "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun" };
  static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
  g_autoptr (GDateTime) u = g_date_time_to_utc (t);
  return g_strdup_printf ("%s, %02d %s %04d %02d:%02d:%02d +0000",
                          days[g_date_time_get_day_of_week (u) - 1], g_date_time_get_day_of_month (u),
                          months[g_date_time_get_month (u) - 1], g_date_time_get_year (u),
                          g_date_time_get_hour (u), g_date_time_get_minute (u),
                          g_date_time_get_second (u));
}

/* @s made fit for one line of text: valid UTF-8, no control characters (C0,
 * DEL, C1, and the line and paragraph separators), at most 200 characters. */
static char *
printable_name (const char *s)
{
  g_autofree char *valid = g_utf8_make_valid (s, -1);
  GString *out = g_string_new (NULL);
  guint n = 0;
  for (const char *p = valid; *p && n < 200; p = g_utf8_next_char (p)) {
    gunichar c = g_utf8_get_char (p);
    if (c < 0x20 || (c >= 0x7f && c < 0xa0) || c == 0x2028 || c == 0x2029)
      continue;
    g_string_append_unichar (out, c);
    n++;
  }
  return g_string_free (out, FALSE);
}

char *
eb_externalize_fallback_text (const char *filename, const char *type, guint64 size,
                              const char *url, const char *sha256, const char *until)
{
  GString *t = g_string_new (NULL);
  g_autofree char *name = filename ? printable_name (filename) : NULL;
  if (name && *name)
    g_string_append_printf (t, "The attachment \"%s\" was taken out of this message and stored\n"
                               "on a server. Download it here:\n\n", name);
  else
    g_string_append (t, "An attachment was taken out of this message and stored on a\n"
                        "server. Download it here:\n\n");
  g_string_append_printf (t, "  %s\n\n", url);
  if (name && *name)
    g_string_append_printf (t, "File name: %s\n", name);
  g_string_append_printf (t, "Type:      %s\n", type);
  g_string_append_printf (t, "Size:      %" G_GUINT64_FORMAT " bytes\n", size);
  if (sha256)
    g_string_append_printf (t, "SHA-256:   %s\n", sha256);
  if (until)
    g_string_append_printf (t, "Kept until: %s\n", until);
  return g_string_free (t, FALSE);
}

/* ---- one candidate --------------------------------------------------------- */

typedef struct {
  const char    *buf;
  gsize          len;
  const char    *eol;
  const EbConfig *config;
  EbStore       *store;
  EbExternalizeFlags flags;
  GHashTable    *urls;       /* object name -> URL: a part twice in one message is put once */
  char          *until;      /* (nullable) the expiration date */
  const EbPlan  *plan;       /* the plan made: its removals */
} Ctx;

/* Is @f one of the fields the phantom header keeps as written? */
static gboolean
phantom_field (const EbHeaderField *f, const char *buf)
{
  return eb_header_field_is (f, buf, "Content-Type") || eb_header_field_is (f, buf, "Content-ID")
         || eb_header_field_is (f, buf, "Content-Description")
         || eb_header_field_is (f, buf, "Content-Disposition");
}

/* Fields the reference drops: its own encoding and checksum replace them, a
 * length no longer holds, and the trace of an earlier resolution (the part
 * was fetched from a URL) no longer describes it: a part restored by extbody
 * rewrite and externalized again is referred to exactly as the first time. */
static gboolean
dropped_field (const EbHeaderField *f, const char *buf)
{
  return eb_header_field_is (f, buf, "Content-Transfer-Encoding")
         || eb_header_field_is (f, buf, "Content-MD5")
         || eb_header_field_is (f, buf, "Content-Length")
         || eb_header_field_is (f, buf, EB_TRACE_FIELD);
}

/* The Content-Type field of the reference, @eol after each line. */
static void
append_reference_type (GString *out, const char *url, guint64 size, const char *until,
                       const char *eol)
{
  g_autofree char *urlparam = eb_urlparam_format (url, EB_URL_WORD, EB_FOLD_LINES, eol);
  g_string_append_printf (out, "Content-Type: message/external-body; access-type=URL;%s", eol);
  g_string_append_printf (out, "\tsize=%" G_GUINT64_FORMAT ";%s", size, eol);
  if (until)
    g_string_append_printf (out, "\texpiration=\"%s\";%s", until, eol);
  g_string_append_printf (out, "\t%s%s", urlparam, eol);
}

/* A boundary for the fallback, from the object's @name: in none of @texts,
 * and neither a prefix of an enclosing boundary nor one of them a prefix of it
 * (a delimiter line must belong to exactly one multipart). */
static char *
fresh_boundary (const char *name, const EbRef *ref, GString *const *texts, guint ntexts)
{
  for (guint k = 0;; k++) {
    /* after the first, each starts with its own number, so that no enclosing
     * boundary is a prefix of them all */
    g_autofree char *b = k == 0 ? g_strdup_printf ("=_extbody_%.24s", name)
                                : g_strdup_printf ("%u=_extbody_%.24s", k, name);
    gsize bl = strlen (b);
    gboolean ok = TRUE;
    for (guint i = 0; ok && i < ntexts; i++)
      ok = !memmem (texts[i]->str, texts[i]->len, b, bl);
    for (guint i = 0; ok && i < ref->boundaries->len; i++) {
      const char *o = g_ptr_array_index (ref->boundaries, i);
      ok = !g_str_has_prefix (b, o) && !g_str_has_prefix (o, b);
    }
    if (ok)
      return g_steal_pointer (&b);
  }
}

/* RFC 2046 5.2.3: the encapsulated header of every message/external-body
 * MUST include a Content-ID, by which the data is referenced (and cached). A
 * part without one gets one naming its bytes where they are stored:
 * <name@host of @url>, the object's name (its SHA-256, or with externalize_key
 * its HMAC-SHA256: never a plain digest the URL does not already show), the
 * same for the same bytes in the same store. */
static char *
content_id_for (const char *name, const char *url)
{
  g_autoptr (GUri) u = g_uri_parse (url, G_URI_FLAGS_ENCODED, NULL);
  const char *host = u ? g_uri_get_host (u) : NULL;
  if (!host || !*host || strpbrk (host, "[]\\ \t\r\n<>\""))
    host = "extbody.invalid";
  return g_strdup_printf (strchr (host, ':') ? "<%s@[%s]>" : "<%s@%s>", name, host);
}

/* The replacement of @leaf, stored at @url under @name: the new header block
 * (@head) and what follows it (@rest). @sha256: what the fallback text shows,
 * NULL for nothing (the name is keyed: the plain SHA-256 stays out of the
 * message). */
static void
build_replacement (Ctx *c, const EbLeaf *leaf, const EbHeaderBlock *blk, GBytes *data,
                   const char *name, const char *sha256, const char *md5, const char *url,
                   GString *head, GString *rest)
{
  const char *buf = c->buf, *eol = c->eol;
  gboolean fallback = (c->flags & EB_EXTERNALIZE_FALLBACK) || c->config->externalize_fallback;
  gboolean mime_version = FALSE;
  for (guint i = 0; i < blk->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (blk->fields, EbHeaderField, i);
    if (eb_header_field_is (f, buf, "MIME-Version"))
      mime_version = TRUE;
    if (!phantom_field (f, buf) && !dropped_field (f, buf)
        && !(leaf->ref->is_root && eb_plan_removes (c->plan, f->start)))
      eb_header_field_append (head, buf, f, eol);
  }
  if (leaf->ref->is_root && !mime_version)
    g_string_append_printf (head, "MIME-Version: 1.0%s", eol);

  /* the phantom header: the part's own content fields as written */
  g_autoptr (GString) phantom = g_string_new (NULL);
  gboolean has_type = FALSE, has_id = FALSE;
  for (guint i = 0; i < blk->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (blk->fields, EbHeaderField, i);
    if (phantom_field (f, buf))
      eb_header_field_append (phantom, buf, f, eol);
    has_type = has_type || eb_header_field_is (f, buf, "Content-Type");
    has_id = has_id || eb_header_field_is (f, buf, "Content-ID");
  }
  /* a part without Content-Type is text/plain; charset=us-ascii (RFC 2045
   * 5.2); the phantom says so, or a resolver would take the type the server
   * names instead */
  if (!has_type && strcmp (leaf->type, "text/plain") == 0)
    g_string_append_printf (phantom, "Content-Type: text/plain; charset=us-ascii%s", eol);
  else if (!has_type)
    g_string_append_printf (phantom, "Content-Type: %s%s", leaf->type, eol);
  g_string_append_printf (phantom, "Content-Transfer-Encoding: binary%sContent-MD5: %s%s", eol,
                          md5, eol);
  if (!has_id) {
    g_autofree char *cid = content_id_for (name, url);
    g_string_append_printf (phantom, "Content-ID: %s%s", cid, eol);
  }
  g_string_append (phantom, eol);

  guint64 size = g_bytes_get_size (data);
  if (!fallback) {
    append_reference_type (head, url, size, c->until, eol);
    g_string_append (head, eol);
    g_string_append_len (rest, phantom->str, (gssize) phantom->len);
    return;
  }

  /* multipart/alternative: a short text part with the link, then the reference */
  g_autofree char *text = eb_externalize_fallback_text (leaf->filename, leaf->type, size, url,
                                                        sha256, c->until);
  gsize tl = strlen (text);
  gboolean ascii = TRUE;
  for (gsize i = 0; i < tl && ascii; i++)
    ascii = (guchar) text[i] < 0x80;
  EbOutEncoding enc = eb_transfer_choose (TRUE, (const guint8 *) text, tl);
  g_autoptr (GOutputStream) os = g_memory_output_stream_new_resizable ();
  eb_transfer_write (enc, (const guint8 *) text, tl, eol, os, NULL);
  g_output_stream_close (os, NULL, NULL);
  GMemoryOutputStream *m = G_MEMORY_OUTPUT_STREAM (os);
  g_autoptr (GString) body = g_string_new_len (g_memory_output_stream_get_data (m),
                                               (gssize) g_memory_output_stream_get_data_size (m));
  g_autoptr (GString) ref = g_string_new (NULL);
  append_reference_type (ref, url, size, c->until, eol);
  GString *texts[] = { body, ref, phantom };
  g_autofree char *b = fresh_boundary (name, leaf->ref, texts, G_N_ELEMENTS (texts));

  /* the mark a resolver knows this alternative by (EB_FALLBACK_FIELD): the
   * boundary's form, and this field with the digest of the notice */
  g_autofree char *notice = eb_digest_notice_hex ((const guint8 *) text, tl);
  g_string_append_printf (head, "Content-Type: multipart/alternative; boundary=\"%s\"%s", b, eol);
  g_string_append_printf (head, "%s: notice-sha256=%s%s%s", EB_FALLBACK_FIELD, notice, eol, eol);
  g_string_append_printf (rest, "--%s%sContent-Type: text/plain; charset=%s%s"
                                "Content-Transfer-Encoding: %s%s%s",
                          b, eol, ascii ? "us-ascii" : "utf-8", eol, eb_transfer_name (enc), eol, eol);
  g_string_append_len (rest, body->str, (gssize) body->len);
  gsize el = strlen (eol);
  if (body->len < el || memcmp (body->str + body->len - el, eol, el) != 0)
    g_string_append (rest, eol);
  g_string_append_printf (rest, "--%s%s", b, eol);
  g_string_append_len (rest, ref->str, (gssize) ref->len);
  g_string_append (rest, eol);
  g_string_append_len (rest, phantom->str, (gssize) phantom->len);
  g_string_append_printf (rest, "%s--%s--", eol, b);
  if (leaf->ref->is_root && leaf->ref->end == c->len)
    g_string_append (rest, eol);
}

/* Is @leaf eligible by what it is (before its size is known)? */
static gboolean
eligible (const EbLeaf *leaf, const EbConfig *config)
{
  if (!leaf->ref->located || leaf->sealed || leaf->in_related)
    return FALSE;
  if (g_str_has_prefix (leaf->type, "multipart/") || g_str_has_prefix (leaf->type, "message/"))
    return FALSE;
  if (g_str_has_prefix (leaf->type, "text/") && !leaf->attachment)
    return FALSE;
  return eb_externalize_type_matches (eb_config_get_externalize_types (config), leaf->type);
}

static EbResolution *
resolution_new (EbReason reason, char *detail /* (transfer full) */)
{
  EbResolution *res = g_new0 (EbResolution, 1);
  res->reason = reason;
  res->detail = detail;
  return res;
}

/* @p[0..@n) of an mbox message without its mboxrd quoting: each line that is
 * ">From ", ">>From "... loses one '>'. */
static GBytes *
mboxrd_unquote (const char *p, gsize n)
{
  GString *out = g_string_sized_new (n);
  gsize i = 0;
  while (i < n) {
    const char *nl = memchr (p + i, '\n', n - i);
    gsize e = nl ? (gsize) (nl - p) + 1 : n;
    gsize q = i;
    while (q < e && p[q] == '>')
      q++;
    gboolean quoted = q > i && e - q >= 5 && memcmp (p + q, "From ", 5) == 0;
    gsize from = quoted ? i + 1 : i;
    g_string_append_len (out, p + from, (gssize) (e - from));
    i = e;
  }
  return g_string_free_to_bytes (out);
}

/* Decide about @leaf and, when it is a candidate, add it to @r (taking its
 * ref). */
static void
consider (Ctx *c, EbLeaf *leaf, EbPlan *r)
{
  if (!eligible (leaf, c->config))
    return;
  const char *buf = c->buf;
  EbRef *ref = leaf->ref;
  /* the header block the walk located the part with, kept in the ref */
  const EbHeaderBlock *blk = eb_extref_outer (ref, buf);
  /* one Content-Type and one Content-Transfer-Encoding at most: with two,
   * readers disagree about the part */
  const EbHeaderField *cte_field = NULL;
  guint n_ct = 0, n_cte = 0;
  for (guint i = 0; i < blk->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (blk->fields, EbHeaderField, i);
    n_ct += eb_header_field_is (f, buf, "Content-Type");
    if (eb_header_field_is (f, buf, "Content-Transfer-Encoding")) {
      n_cte++;
      cte_field = f;
    }
  }
  if (n_ct > 1 || n_cte > 1)
    return;
  g_autofree char *cte_value = cte_field ? eb_header_field_unfold (cte_field, buf) : NULL;
  EbCte cte = eb_transfer_parse_cte (cte_value);
  gsize raw_len = ref->end - ref->content_start;
  /* the decoded size can only be smaller than the raw one */
  if (raw_len < c->config->externalize_min_size)
    return;

  EbReason reason = EB_REASON_RESOLVED;
  char *detail = NULL;
  g_autoptr (GBytes) data = NULL;
  if (ref->walk_reason != EB_REASON_RESOLVED) {
    reason = ref->walk_reason;
  } else if (cte == EB_CTE_UNKNOWN) {
    reason = EB_REASON_CTE_UNKNOWN;
    detail = g_strdup_printf ("Content-Transfer-Encoding: %.60s", cte_value);
  } else {
    /* from an mbox: the part's bytes as the message's reader sees them */
    g_autoptr (GBytes) raw = (c->flags & EB_EXTERNALIZE_MBOXRD)
      ? mboxrd_unquote (buf + ref->content_start, raw_len)
      : g_bytes_new_static (buf + ref->content_start, raw_len);
    g_autoptr (GError) e = NULL;
    data = eb_transfer_decode (cte, raw, &e);
    if (!data) {
      reason = EB_REASON_CTE_INVALID;
      detail = g_strdup (e->message);
    } else if (g_bytes_get_size (data) < c->config->externalize_min_size) {
      return;   /* not a candidate */
    }
    /* identity: @data is the message's own bytes (no copy); nothing keeps
     * it beyond this call */
  }

  EbResolution *res = NULL;
  /* the store's name for the bytes, their SHA-256 and the reference's
   * Content-MD5, in one pass over them; a dry run (nothing stored) needs
   * none */
  g_autofree char *name = NULL, *sha = NULL, *md5 = NULL;
  gboolean storing = c->store && !(c->flags & EB_EXTERNALIZE_NO_STORE);
  if (data && reason == EB_REASON_RESOLVED && storing) {
    gsize dn = 0;
    const guint8 *d = g_bytes_get_data (data, &dn);
    eb_store_digest (c->store, d, dn, &name, &sha, &md5);
    /* text: the MD5 of its canonical form, CR LF line ends (RFC 1864), which
     * an LF mailbox's text part is not */
    char *canonical = g_str_has_prefix (leaf->type, "text/")
                      ? eb_digest_md5_canonical_text (d, dn) : NULL;
    if (canonical) {
      g_free (md5);
      md5 = canonical;
    }
  }
  if (reason != EB_REASON_RESOLVED) {
    res = resolution_new (reason, detail);
  } else if (!storing) {
    res = resolution_new (EB_REASON_WOULD_EXTERNALIZE, NULL);
  } else {
    const char *known = g_hash_table_lookup (c->urls, name);
    g_autofree char *url = known ? g_strdup (known) : NULL;
    g_autoptr (GError) e = NULL;
    if (!url)
      url = eb_store_put_digested (c->store, data, name, sha, NULL, &e);
    if (!url) {
      res = resolution_new (EB_REASON_STORE_FAILED,
                            g_strdup (e ? e->message : "the store gave no URL"));
    } else {
      g_hash_table_insert (c->urls, g_strdup (name), g_strdup (url));
      res = resolution_new (EB_REASON_RESOLVED, NULL);
      res->head = g_string_new (NULL);
      g_autoptr (GString) rest = g_string_new (NULL);
      build_replacement (c, leaf, blk, data, name, c->store->key ? NULL : sha, md5, url,
                         res->head, rest);
      res->data = g_string_free_to_bytes (g_steal_pointer (&rest));
      res->encoding = EB_OUT_7BIT;
      res->type = g_strdup (leaf->type);
      res->eol = g_strdup (c->eol);
      /* the SHA-256 of the stored bytes, not of the replacement, nor the
       * keyed name (the log's sha256=, which never holds the URL) */
      res->digest = g_strdup (sha);
      ref->url = g_steal_pointer (&url);
      ref->access_type = g_strdup ("url");
      r->n_resolved++;
    }
  }
  if (!res->type)
    res->type = g_strdup (leaf->type);
  if (data && !ref->size)
    ref->size = g_strdup_printf ("%" G_GSIZE_FORMAT, g_bytes_get_size (data));
  g_ptr_array_add (r->scan->refs, g_steal_pointer (&leaf->ref));
  g_ptr_array_add (r->resolutions, res);
}

EbPlan *
eb_externalize_plan (const char *buf0, gsize len0, const EbConfig *config, EbStore *store,
                     EbExternalizeFlags flags)
{
  g_return_val_if_fail (config != NULL, NULL);
  EbPlan *r = eb_plan_new (buf0, len0);
  r->externalized = TRUE;
  const char *buf = r->message->buf;
  gsize len = r->message->len;
  const gboolean field = (flags & EB_EXTERNALIZE_FILTER_FIELD) != 0;
  if (flags & (EB_EXTERNALIZE_STRIP_TRACE | EB_EXTERNALIZE_FILTER_FIELD))
    r->seal_key = eb_seal_key (config);
  if (flags & EB_EXTERNALIZE_STRIP_TRACE) {
    /* the trace fields, a sender's forgery, but the records this site
     * sealed (eb-seal.h): they stay, whatever they say */
    g_autoptr (GArray) sealed = eb_plan_sealed_records (r);
    r->n_trace = eb_plan_remove_trace (r, sealed, FALSE);
  }
  if (flags & EB_EXTERNALIZE_DROP_CONTENT_LENGTH)
    eb_plan_remove_lines (r, "Content-Length");
  if (len > config->max_message_size) {
    r->reason = EB_REASON_MESSAGE_TOO_LARGE;
    return eb_plan_finish (r, field);
  }
  r->parsed = TRUE;
  EbLeafScan *leaves = eb_message_get_leaves (r->message, config);
  r->scan = r->own_scan = g_new0 (EbMessageScan, 1);
  r->scan->refs = g_ptr_array_new_with_free_func ((GDestroyNotify) eb_extref_free);
  r->scan->n_parts = leaves->n_parts;
  r->scan->reason = leaves->reason;
  r->scan->eol = leaves->eol;
  if (leaves->reason != EB_REASON_RESOLVED) {
    r->reason = leaves->reason;
    return eb_plan_finish (r, field);
  }

  Ctx c = { buf, len, leaves->eol, config, store, flags, NULL, NULL, r };
  c.urls = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  if (config->externalize_retention) {
    g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
    g_autoptr (GDateTime) until = g_date_time_add_days (now, (gint) config->externalize_retention);
    c.until = eb_externalize_format_date (until);
  }
  for (guint i = 0; i < leaves->leaves->len; i++)
    consider (&c, g_ptr_array_index (leaves->leaves, i), r);
  /* the candidates' references are the plan's now; the rest goes */
  g_clear_pointer (&r->message->leaves, eb_message_leaf_scan_free);
  g_hash_table_unref (c.urls);
  g_free (c.until);

  /* Leaves never overlap; a bug here must not cost mail: check, and change
   * nothing if they do. */
  gsize last_end = 0;
  for (guint i = 0; i < r->scan->refs->len; i++) {
    const EbRef *ref = g_ptr_array_index (r->scan->refs, i);
    const EbResolution *res = g_ptr_array_index (r->resolutions, i);
    if (res->reason != EB_REASON_RESOLVED)
      continue;
    if (ref->block_start < last_end) {
      g_critical ("overlapping parts at %s; message left unchanged", ref->path);
      r->n_resolved = 0;
      break;
    }
    last_end = ref->end;
  }
  return eb_plan_finish (r, field);
}

char *
eb_externalize_report_line (const EbPlan *r, guint i)
{
  g_return_val_if_fail (r != NULL && r->scan && i < r->scan->refs->len, NULL);
  const EbRef *ref = g_ptr_array_index (r->scan->refs, i);
  const EbResolution *res = g_ptr_array_index (r->resolutions, i);
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "part %s %s %s bytes: ", ref->path, res->type ? res->type : "?",
                          ref->size ? ref->size : "?");
  if (res->reason == EB_REASON_RESOLVED)
    g_string_append_printf (s, "externalized %s", ref->url);
  else
    g_string_append_printf (s, "left: %s: %s", eb_reason_token (res->reason),
                            eb_reason_text (res->reason));
  if (res->detail) {
    g_autofree char *d = g_strdup (res->detail);
    g_strdelimit (d, "\r\n", ' ');
    g_string_append_printf (s, " (%s)", d);
  }
  return g_string_free (s, FALSE);
}
