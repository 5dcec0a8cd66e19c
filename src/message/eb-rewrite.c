/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-rewrite.c - plan and splice (see eb-rewrite.h). */
#include "eb-rewrite-private.h"
#include <string.h>

void
eb_rewrite_result_free (EbRewriteResult *result)
{
  if (!result)
    return;
  eb_message_scan_free (result->scan);
  if (result->removed)
    g_array_unref (result->removed);
  if (result->resolutions)
    g_ptr_array_unref (result->resolutions);
  if (result->actions)
    g_ptr_array_unref (result->actions);
  if (result->fetches)
    g_array_unref (result->fetches);
  g_free (result);
}

gsize
eb_rewrite_from_line_len (const char *buf, gsize len)
{
  if (len < 5 || memcmp (buf, "From ", 5) != 0)
    return 0;
  const char *nl = memchr (buf, '\n', len);
  gsize end = nl ? (gsize) (nl - buf) + 1 : len;
  /* "From :" is a header field (obsolete white space before the colon) */
  gsize p = 5;
  while (p < end && (buf[p] == ' ' || buf[p] == '\t'))
    p++;
  if (p < end && buf[p] == ':')
    return 0;
  return end;
}

static EbRewriteResult *
result_new (const char *buf, gsize len)
{
  EbRewriteResult *r = g_new0 (EbRewriteResult, 1);
  r->reason = EB_REASON_RESOLVED;
  r->resolutions = g_ptr_array_new_with_free_func ((GDestroyNotify) eb_resolution_free);
  r->actions = g_ptr_array_new_with_free_func ((GDestroyNotify) eb_action_free);
  r->skip = eb_rewrite_from_line_len (buf, len);
  r->removed = g_array_new (FALSE, FALSE, sizeof (EbRange));
  r->fetches = g_array_new (FALSE, TRUE, sizeof (EbFetchRecord));
  return r;
}

EbRewriteResult *
eb_rewrite_plan_unmatched (const char *buf, gsize len)
{
  return result_new (buf, len);
}

/* The room max_message_bytes leaves for reference @i's local file: less the
 * data resolved before it (@budget) and the fetched bodies still held for the
 * references after it (each body once), so that what the message holds stays
 * within it. */
static guint64
local_room (const EbConfig *config, GPtrArray *fetched, guint i, guint64 budget)
{
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
  guint64 held = budget;
  for (guint j = i + 1; j < fetched->len; j++) {
    const EbFetchResult *f = g_ptr_array_index (fetched, j);
    if (f && f->body && !g_hash_table_contains (seen, f->body)) {
      g_hash_table_add (seen, f->body);
      held += g_bytes_get_size (f->body);
    }
  }
  return held < config->max_message_bytes ? config->max_message_bytes - held : 0;
}

/* With EB_REWRITE_STRIP_TRACE: the message header's trace fields (and the
 * filter's own field), as ranges to remove. */
static void
plan_trace_removal (EbRewriteResult *r, const char *buf, gsize len, const EbConfig *config)
{
  g_autoptr (EbHeaderBlock) top = eb_header_block_scan (buf, 0, MIN (len, config->max_message_size));
  for (guint i = 0; i < top->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (top->fields, EbHeaderField, i);
    if (eb_header_field_is (f, buf, EB_FILTER_FIELD) || eb_header_field_is (f, buf, EB_TRACE_FIELD)) {
      EbRange rg = { f->start, f->end };
      g_array_append_val (r->removed, rg);
    }
  }
}

/* The fetches of every reference to fetch, all at once: one slot per
 * reference (NULL for those not fetched); what the fetcher did is recorded
 * for the statistics. */
static GPtrArray *
fetch_all (EbRewriteResult *r, EbFetcher *fetcher, const EbConfig *config, EbRewriteFlags flags)
{
  guint nrefs = r->scan->refs->len;
  GPtrArray *fetched = g_ptr_array_new_with_free_func ((GDestroyNotify) eb_fetch_result_free);
  g_ptr_array_set_size (fetched, (gint) nrefs);
  g_autoptr (GPtrArray) urls = g_ptr_array_new ();
  g_autoptr (GArray) which = g_array_new (FALSE, FALSE, sizeof (guint));
  for (guint i = 0; i < nrefs; i++) {
    const EbAction *a = g_ptr_array_index (r->actions, i);
    if (a->kind == EB_ACTION_FETCH && fetcher && !(flags & EB_REWRITE_NO_FETCH)) {
      g_ptr_array_add (urls, a->target);
      g_array_append_val (which, i);
    }
  }
  if (!urls->len)
    return fetched;
  g_autoptr (GPtrArray) got = eb_fetcher_fetch_all (fetcher, (const char *const *) urls->pdata,
                                                    urls->len, config->max_part_bytes);
  for (guint k = 0; k < got->len; k++) {
    const EbFetchResult *f = got->pdata[k];
    EbFetchRecord rec = {
      .outcome = f->reason, .cache_hit = f->from_cache, .network = !f->from_cache && f->network,
      .bytes = f->received, .elapsed = f->elapsed,
    };
    if (rec.cache_hit || rec.network)
      g_array_append_val (r->fetches, rec);
    g_ptr_array_index (fetched, g_array_index (which, guint, k)) = g_steal_pointer (&got->pdata[k]);
  }
  return fetched;
}

/* Each new part built, in order, a local file read when its turn comes;
 * @fetched's slots are emptied as they are used. */
static void
resolve_each (EbRewriteResult *r, const char *buf, gsize len, const EbConfig *config,
              GPtrArray *fetched)
{
  guint64 budget = 0;
  for (guint i = 0; i < r->scan->refs->len; i++) {
    EbRef *ref = g_ptr_array_index (r->scan->refs, i);
    /* the body of the message itself (or the fallback alternative that is):
     * its new header is built from the message header, less the fields removed */
    EbHeaderBlock *own = eb_extref_replaced_start (ref) != 0 || !eb_extref_replaced_is_root (ref) ? NULL
                         : ref->alt ? ref->alt_outer : ref->outer;
    for (guint k = r->removed->len && own ? own->fields->len : 0; k-- > 0;) {
      const EbHeaderField *f = &g_array_index (own->fields, EbHeaderField, k);
      if (eb_header_field_is (f, buf, EB_FILTER_FIELD) || eb_header_field_is (f, buf, EB_TRACE_FIELD))
        g_array_remove_index (own->fields, k);
    }
    const EbAction *a = g_ptr_array_index (r->actions, i);
    if (a->kind == EB_ACTION_LOCAL_FILE)
      g_ptr_array_index (fetched, i) = eb_fetch_local_file (a->target, config->local_file_dirs,
                                                            config->max_part_bytes,
                                                            local_room (config, fetched, i, budget));
    EbResolution *res = eb_resolve (ref, a, buf, len, r->scan->eol, config, g_ptr_array_index (fetched, i),
                                    &budget);
    /* the resolution keeps what it uses: a body not used goes now */
    g_clear_pointer (&g_ptr_array_index (fetched, i), eb_fetch_result_free);
    if (res->reason == EB_REASON_RESOLVED)
      r->n_resolved++;
    g_ptr_array_add (r->resolutions, res);
  }
}

/* Replaced ranges never overlap (an external-body's content is not walked, a
 * fallback alternative holds only its reference), but a bug here must not
 * cost mail: check, and change nothing if they do. */
static void
check_no_overlap (EbRewriteResult *r)
{
  gsize last_end = 0;
  for (guint i = 0; i < r->scan->refs->len; i++) {
    const EbRef *ref = g_ptr_array_index (r->scan->refs, i);
    const EbResolution *res = g_ptr_array_index (r->resolutions, i);
    if (res->reason != EB_REASON_RESOLVED)
      continue;
    if (eb_extref_replaced_start (ref) < last_end) {
      g_critical ("overlapping replacement ranges at part %s; message left unchanged", ref->path);
      r->n_resolved = 0;
      break;
    }
    last_end = eb_extref_replaced_end (ref);
  }
}

EbRewriteResult *
eb_rewrite_plan (const char *buf0, gsize len0, const EbConfig *config, EbFetcher *fetcher,
                 EbRewriteFlags flags)
{
  EbRewriteResult *r = result_new (buf0, len0);
  const char *buf = buf0 + r->skip;
  gsize len = len0 - r->skip;
  if (flags & EB_REWRITE_STRIP_TRACE)
    plan_trace_removal (r, buf, len, config);
  if (r->removed->len)
    r->changed = TRUE;

  if (!(flags & EB_REWRITE_NO_PRECHECK) && !eb_message_may_hold_external_body (buf, len))
    return r;
  if (len > config->max_message_size) {
    r->reason = EB_REASON_MESSAGE_TOO_LARGE;
    return r;
  }

  r->parsed = TRUE;
  r->scan = eb_message_scan (buf, len, config);
  if (r->scan->reason != EB_REASON_RESOLVED)
    r->reason = r->scan->reason;

  /* One decision per reference; then the fetches, all at once; then each
   * new part is built, a local file read when its turn comes. */
  for (guint i = 0; i < r->scan->refs->len; i++)
    g_ptr_array_add (r->actions, eb_resolve_decide (g_ptr_array_index (r->scan->refs, i), config));
  g_autoptr (GPtrArray) fetched = fetch_all (r, fetcher, config, flags);
  resolve_each (r, buf, len, config, fetched);
  check_no_overlap (r);
  r->changed = r->n_resolved > 0 || r->removed->len > 0;
  r->filter_field = (flags & EB_REWRITE_FILTER_FIELD) && r->n_resolved > 0;
  return r;
}

/* The first resolved reference, or NULL. */
static const EbRef *
first_resolved (const EbRewriteResult *r)
{
  for (guint i = 0; r->scan && i < r->scan->refs->len; i++)
    if (((const EbResolution *) g_ptr_array_index (r->resolutions, i))->reason == EB_REASON_RESOLVED)
      return g_ptr_array_index (r->scan->refs, i);
  return NULL;
}

/* A resolved reference that is the body of the message itself, or the
 * fallback alternative that is (its new header replaces the message header),
 * or NULL. */
static const EbResolution *
root_resolution (const EbRewriteResult *r)
{
  const EbRef *first = first_resolved (r);
  if (!first || !eb_extref_replaced_is_root (first) || eb_extref_replaced_start (first) != 0)
    return NULL;
  for (guint i = 0; i < r->scan->refs->len; i++)
    if (g_ptr_array_index (r->scan->refs, i) == first)
      return g_ptr_array_index (r->resolutions, i);
  return NULL;
}

/* Write @len bytes of new unencoded body text, mboxrd-quoted: a line "From ",
 * ">From ", ">>From " ... gets one more ">", which mboxrd readers (mutt,
 * Dovecot, Python's mailbox) take off again. */
static gboolean
write_mboxrd_quoted (GOutputStream *out, const char *d, gsize len, GError **error)
{
  gsize p = 0, flushed = 0;
  while (p < len) {
    gsize q = p;
    while (q < len && d[q] == '>')
      q++;
    if (len - q >= 5 && memcmp (d + q, "From ", 5) == 0) {
      if (!g_output_stream_write_all (out, d + flushed, p - flushed, NULL, NULL, error)
          || !g_output_stream_write_all (out, ">", 1, NULL, NULL, error))
        return FALSE;
      flushed = p;
    }
    const char *nl = memchr (d + p, '\n', len - p);
    p = nl ? (gsize) (nl - d) + 1 : len;
  }
  return g_output_stream_write_all (out, d + flushed, len - flushed, NULL, NULL, error);
}

/* The data of @res encoded for transport; with @mboxrd, a body written
 * unencoded (7bit) is mboxrd-quoted. */
static gboolean
write_data (const EbResolution *res, const char *eol, gboolean mboxrd, GOutputStream *out,
            GError **error)
{
  gsize dlen = 0;
  const guint8 *d = g_bytes_get_data (res->data, &dlen);
  if (!mboxrd || res->encoding != EB_OUT_7BIT)
    return eb_transfer_write (res->encoding, d, dlen, eol, out, error);
  g_autoptr (GOutputStream) body = g_memory_output_stream_new_resizable ();
  if (!eb_transfer_write (res->encoding, d, dlen, eol, body, error)
      || !g_output_stream_close (body, NULL, error))
    return FALSE;
  GMemoryOutputStream *m = G_MEMORY_OUTPUT_STREAM (body);
  return write_mboxrd_quoted (out, g_memory_output_stream_get_data (m),
                              g_memory_output_stream_get_data_size (m), error);
}

char *
eb_rewrite_filter_field_value (const EbRewriteResult *r)
{
  guint n = r->scan ? r->scan->refs->len : 0;
  if (r->externalized)
    return g_strdup_printf (" externalized %u of %u part%s", r->n_resolved, n, n == 1 ? "" : "s");
  return g_strdup_printf (" resolved %u of %u external-body reference%s", r->n_resolved, n,
                          n == 1 ? "" : "s");
}

/* Write the X-Extbody field of @r in the line ending @eol. */
static gboolean
write_filter_field (const EbRewriteResult *r, const char *eol, GOutputStream *out, GError **error)
{
  g_autofree char *value = eb_rewrite_filter_field_value (r);
  g_autofree char *line = g_strconcat (EB_FILTER_FIELD ":", value, eol, NULL);
  return g_output_stream_write_all (out, line, strlen (line), NULL, NULL, error);
}

/* Write the new header @h (blank line included) with the X-Extbody field
 * before its blank line. */
static gboolean
write_header_with_field (const EbRewriteResult *r, const GString *h, const char *eol,
                         GOutputStream *out, GError **error)
{
  gsize el = strlen (eol);
  gsize at = h->len >= el && memcmp (h->str + h->len - el, eol, el) == 0 ? h->len - el : h->len;
  return g_output_stream_write_all (out, h->str, at, NULL, NULL, error)
         && write_filter_field (r, eol, out, error)
         && g_output_stream_write_all (out, h->str + at, h->len - at, NULL, NULL, error);
}

/* Write buf[@from, @to) of the message; with @field_at inside it (not
 * G_MAXSIZE), the X-Extbody field is written there, and @field_at becomes
 * G_MAXSIZE. */
static gboolean
write_verbatim (const EbRewriteResult *r, const char *buf, gsize from, gsize to, gsize *field_at,
                GOutputStream *out, GError **error)
{
  if (*field_at < from || *field_at > to)
    return g_output_stream_write_all (out, buf + from, to - from, NULL, NULL, error);
  gsize at = *field_at;
  *field_at = G_MAXSIZE;
  /* a header that ends without a line break (no body at all) gets one first */
  gboolean need_eol = at > 0 && buf[at - 1] != '\n';
  return g_output_stream_write_all (out, buf + from, at - from, NULL, NULL, error)
         && (!need_eol || g_output_stream_write_all (out, r->scan->eol, strlen (r->scan->eol),
                                                     NULL, NULL, error))
         && write_filter_field (r, r->scan->eol, out, error)
         && g_output_stream_write_all (out, buf + at, to - at, NULL, NULL, error);
}

/* Splice the new message (with @body_only: only what follows its header and
 * the blank line; with @mboxrd: new unencoded bodies mboxrd-quoted) to @out. */
static gboolean
splice (const EbRewriteResult *r, const char *buf0, gsize len0, GOutputStream *out,
        gboolean body_only, gboolean mboxrd, GError **error)
{
  gboolean ok = TRUE;
  g_return_val_if_fail (r->skip <= len0, FALSE);
  const char *buf = buf0 + r->skip;
  gsize len = len0 - r->skip;
  gsize pos = 0;
  const EbResolution *root = root_resolution (r);
  /* where the X-Extbody field goes: the end of the message header (a resolved
   * message body: the end of its new header) */
  gsize field_at = G_MAXSIZE;
  if (body_only && !root) {
    g_autoptr (EbHeaderBlock) top = eb_header_block_scan (buf, 0, len);
    pos = top->body;
  } else if (!body_only) {
    ok = g_output_stream_write_all (out, buf0, r->skip, NULL, NULL, error);
    if (r->filter_field && r->scan && !root) {
      g_autoptr (EbHeaderBlock) top = eb_header_block_scan (buf, 0, len);
      field_at = top->end;
    }
  }
  /* the fields removed from the message header: they lie before every
   * reference, or inside the message's own (then rebuilt without them) */
  const EbRef *first = first_resolved (r);
  for (guint k = 0; ok && r->changed && r->removed && k < r->removed->len; k++) {
    const EbRange *rg = &g_array_index (r->removed, EbRange, k);
    if (rg->start < pos)
      continue;
    if (first && eb_extref_replaced_start (first) <= rg->start)
      break;
    ok = write_verbatim (r, buf, pos, rg->start, &field_at, out, error);
    pos = rg->end;
  }
  for (guint i = 0; ok && r->changed && r->scan && i < r->scan->refs->len; i++) {
    const EbRef *ref = g_ptr_array_index (r->scan->refs, i);
    const EbResolution *res = g_ptr_array_index (r->resolutions, i);
    if (res->reason != EB_REASON_RESOLVED)
      continue;
    ok = write_verbatim (r, buf, pos, eb_extref_replaced_start (ref), &field_at, out, error)
         && (res == root && body_only ? TRUE
             : res == root && r->filter_field
             ? write_header_with_field (r, eb_resolution_header (res), r->scan->eol, out, error)
             : g_output_stream_write_all (out, eb_resolution_header (res)->str,
                                          eb_resolution_header (res)->len, NULL, NULL, error))
         && write_data (res, r->scan->eol, mboxrd, out, error);
    pos = eb_extref_replaced_end (ref);
  }
  if (ok)
    ok = write_verbatim (r, buf, pos, len, &field_at, out, error);
  if (ok)
    ok = g_output_stream_flush (out, NULL, error);
  return ok;
}

gboolean
eb_rewrite_write (const EbRewriteResult *r, const char *buf0, gsize len0, GOutputStream *out,
                  GError **error)
{
  if (!r->changed) {
    gboolean ok = g_output_stream_write_all (out, buf0, len0, NULL, NULL, error);
    return ok && g_output_stream_flush (out, NULL, error);
  }
  return splice (r, buf0, len0, out, FALSE, FALSE, error);
}

gboolean
eb_rewrite_write_mboxrd (const EbRewriteResult *r, const char *buf0, gsize len0,
                         GOutputStream *out, GError **error)
{
  if (!r->changed)
    return eb_rewrite_write (r, buf0, len0, out, error);
  return splice (r, buf0, len0, out, FALSE, TRUE, error);
}

gboolean
eb_rewrite_write_body (const EbRewriteResult *r, const char *buf, gsize len, GOutputStream *out,
                       GError **error)
{
  return splice (r, buf, len, out, TRUE, FALSE, error);
}

typedef struct {
  char *name;
  char *value;   /* after the colon, line breaks as "\n" */
} Field;

static void
field_clear (Field *f)
{
  g_free (f->name);
  g_free (f->value);
}

/* The fields of the header block of @buf ending at @end, less those starting
 * at one of @removed. */
static GArray *
fields_of (const char *buf, gsize end, const GArray *removed)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (Field));
  g_array_set_clear_func (a, (GDestroyNotify) field_clear);
  g_autoptr (EbHeaderBlock) blk = eb_header_block_scan (buf, 0, end);
  guint next = 0;   /* @removed and the fields are both in order: one pass */
  for (guint i = 0; i < blk->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (blk->fields, EbHeaderField, i);
    while (removed && next < removed->len && g_array_index (removed, EbRange, next).start < f->start)
      next++;
    if (removed && next < removed->len && g_array_index (removed, EbRange, next).start == f->start)
      continue;
    Field x = { g_strndup (buf + f->start, f->name_len), NULL };
    GString *v = g_string_new (NULL);
    for (gsize p = f->value; p < f->value_end; p++)
      if (buf[p] != '\r')
        g_string_append_c (v, buf[p]);
    x.value = g_string_free (v, FALSE);
    g_array_append_val (a, x);
  }
  return a;
}

static GPtrArray *
values_of (GArray *fields, const char *name)
{
  GPtrArray *v = g_ptr_array_new ();
  for (guint i = 0; i < fields->len; i++)
    if (g_ascii_strcasecmp (g_array_index (fields, Field, i).name, name) == 0)
      g_ptr_array_add (v, g_array_index (fields, Field, i).value);
  return v;
}

static void
add_edit (GPtrArray *edits, EbHeaderEditKind kind, const char *name, guint index, const char *value)
{
  EbHeaderEdit *e = g_new0 (EbHeaderEdit, 1);
  e->kind = kind;
  e->name = g_strdup (name);
  e->index = index;
  e->value = g_strdup (value);
  g_ptr_array_add (edits, e);
}

GPtrArray *
eb_rewrite_header_edits (const EbRewriteResult *r, const char *buf0, gsize len0)
{
  GPtrArray *edits = g_ptr_array_new_with_free_func ((GDestroyNotify) eb_header_edit_free);
  if (!r->changed)
    return edits;
  const char *buf = buf0 + r->skip;
  gsize len = len0 - r->skip;
  g_autoptr (EbHeaderBlock) top = eb_header_block_scan (buf, 0, len);
  g_autoptr (GArray) old = fields_of (buf, top->end, NULL);
  const EbResolution *root = root_resolution (r);
  g_autoptr (GArray) neu = root ? fields_of (eb_resolution_header (root)->str,
                                           eb_resolution_header (root)->len, NULL)
                                : fields_of (buf, top->end, r->removed);
  /* name by name: changed values in place, new ones added, missing ones
   * deleted (from the last, so that the indices stay valid) */
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr (GPtrArray) adds = g_ptr_array_new_with_free_func ((GDestroyNotify) eb_header_edit_free);
  g_autoptr (GPtrArray) dels = g_ptr_array_new_with_free_func ((GDestroyNotify) eb_header_edit_free);
  for (int pass = 0; pass < 2; pass++) {
    GArray *src = pass == 0 ? old : neu;
    for (guint i = 0; i < src->len; i++) {
      const char *name = g_array_index (src, Field, i).name;
      g_autofree char *key = g_ascii_strdown (name, -1);
      if (g_hash_table_contains (seen, key))
        continue;
      g_hash_table_add (seen, g_steal_pointer (&key));
      g_autoptr (GPtrArray) ov = values_of (old, name);
      g_autoptr (GPtrArray) nv = values_of (neu, name);
      guint common = MIN (ov->len, nv->len);
      for (guint k = 0; k < common; k++)
        if (strcmp (ov->pdata[k], nv->pdata[k]) != 0)
          add_edit (edits, EB_HEADER_CHANGE, name, k + 1, nv->pdata[k]);
      for (guint k = common; k < nv->len; k++)
        add_edit (adds, EB_HEADER_ADD, name, 0, nv->pdata[k]);
      for (guint k = ov->len; k > common; k--)
        add_edit (dels, EB_HEADER_DELETE, name, k, NULL);
    }
  }
  for (guint i = 0; i < adds->len; i++)
    g_ptr_array_add (edits, g_steal_pointer (&adds->pdata[i]));
  for (guint i = 0; i < dels->len; i++)
    g_ptr_array_add (edits, g_steal_pointer (&dels->pdata[i]));
  return edits;
}

gboolean
eb_rewrite (const char *buf, gsize len, const EbConfig *config, EbFetcher *fetcher,
            EbRewriteFlags flags, GOutputStream *out, EbRewriteResult **result, GError **error)
{
  g_autoptr (EbRewriteResult) r = eb_rewrite_plan (buf, len, config, fetcher, flags);
  gboolean ok = eb_rewrite_write (r, buf, len, out, error);
  if (result)
    *result = g_steal_pointer (&r);
  return ok;
}

/* ---- the public accessors (extbody.h) -------------------------------------- */

EbReason
eb_rewrite_result_get_reason (const EbRewriteResult *result)
{
  g_return_val_if_fail (result != NULL, EB_REASON_RESOLVED);
  return result->reason;
}

gboolean
eb_rewrite_result_get_parsed (const EbRewriteResult *result)
{
  g_return_val_if_fail (result != NULL, FALSE);
  return result->parsed;
}

gboolean
eb_rewrite_result_get_changed (const EbRewriteResult *result)
{
  g_return_val_if_fail (result != NULL, FALSE);
  return result->changed;
}

guint
eb_rewrite_result_get_n_refs (const EbRewriteResult *result)
{
  g_return_val_if_fail (result != NULL, 0);
  return result->scan ? result->scan->refs->len : 0;
}

guint
eb_rewrite_result_get_n_resolved (const EbRewriteResult *result)
{
  g_return_val_if_fail (result != NULL, 0);
  return result->n_resolved;
}

guint
eb_rewrite_result_get_n_removed (const EbRewriteResult *result)
{
  g_return_val_if_fail (result != NULL, 0);
  return result->removed ? result->removed->len : 0;
}

#define CHECK_REF(result, i, val) \
  g_return_val_if_fail ((result) != NULL && (i) < eb_rewrite_result_get_n_refs (result), val)

static const EbRef *
ref_at (const EbRewriteResult *result, guint i)
{
  return g_ptr_array_index (result->scan->refs, i);
}

static const EbResolution *
res_at (const EbRewriteResult *result, guint i)
{
  return g_ptr_array_index (result->resolutions, i);
}

static const EbAction *
action_at (const EbRewriteResult *result, guint i)
{
  return result->actions && i < result->actions->len ? g_ptr_array_index (result->actions, i) : NULL;
}

EbReason
eb_rewrite_result_get_ref_reason (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, EB_REASON_RESOLVED);
  return res_at (result, i)->reason;
}

const char *
eb_rewrite_result_get_ref_detail (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  return res_at (result, i)->detail;
}

const char *
eb_rewrite_result_get_ref_path (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  return ref_at (result, i)->path;
}

const char *
eb_rewrite_result_get_ref_access_type (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  return ref_at (result, i)->access_type;
}

const char *
eb_rewrite_result_get_ref_url (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  return ref_at (result, i)->url;
}

EbActionKind
eb_rewrite_result_get_ref_action (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, EB_ACTION_LEAVE);
  const EbAction *a = action_at (result, i);
  return a ? a->kind : EB_ACTION_LEAVE;
}

const char *
eb_rewrite_result_get_ref_target (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbAction *a = action_at (result, i);
  return a ? a->target : NULL;
}

const char *
eb_rewrite_result_get_ref_content_type (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *r = res_at (result, i);
  return r->reason == EB_REASON_RESOLVED ? r->type : NULL;
}

const char *
eb_rewrite_result_get_ref_encoding (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *r = res_at (result, i);
  return r->reason == EB_REASON_RESOLVED ? eb_transfer_name (r->encoding) : NULL;
}

guint64
eb_rewrite_result_get_ref_size (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, 0);
  const EbResolution *r = res_at (result, i);
  return r->reason == EB_REASON_RESOLVED && r->data ? g_bytes_get_size (r->data) : 0;
}

const char *
eb_rewrite_result_get_ref_sha256 (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *r = res_at (result, i);
  return r->reason == EB_REASON_RESOLVED ? eb_resolution_sha256 (r) : NULL;
}

gboolean
eb_rewrite_result_get_externalized (const EbRewriteResult *result)
{
  g_return_val_if_fail (result != NULL, FALSE);
  return result->externalized;
}

const char *
eb_rewrite_result_get_ref_declared_size (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  return ref_at (result, i)->size;
}

guint
eb_rewrite_result_get_n_fetches (const EbRewriteResult *result)
{
  g_return_val_if_fail (result != NULL, 0);
  return result->fetches ? result->fetches->len : 0;
}

const EbFetchRecord *
eb_rewrite_result_get_fetch (const EbRewriteResult *result, guint i)
{
  g_return_val_if_fail (result != NULL && i < eb_rewrite_result_get_n_fetches (result), NULL);
  return &g_array_index (result->fetches, EbFetchRecord, i);
}

gsize
eb_rewrite_result_get_from_line_len (const EbRewriteResult *result)
{
  g_return_val_if_fail (result != NULL, 0);
  return result->skip;
}

/* The resolution of reference @i, if it has one yet. */
static const EbResolution *
res_or_null (const EbRewriteResult *result, guint i)
{
  return i < result->resolutions->len ? g_ptr_array_index (result->resolutions, i) : NULL;
}

const char *
eb_rewrite_result_get_ref_site (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  return ref_at (result, i)->site;
}

EbReason
eb_rewrite_result_get_ref_outcome (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, EB_REASON_RESOLVED);
  const EbResolution *res = res_or_null (result, i);
  const EbAction *act = action_at (result, i);
  return res ? res->reason : act ? act->reason : ref_at (result, i)->walk_reason;
}

const char *
eb_rewrite_result_get_ref_outcome_detail (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *res = res_or_null (result, i);
  const EbAction *act = action_at (result, i);
  return res && res->reason == eb_rewrite_result_get_ref_outcome (result, i) ? res->detail
         : act ? act->detail : NULL;
}

const char *
eb_rewrite_result_get_ref_type (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *res = res_or_null (result, i);
  return res ? res->type : NULL;
}

GBytes *
eb_rewrite_result_get_ref_data (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *res = res_or_null (result, i);
  return res ? res->data : NULL;
}

const char *
eb_rewrite_result_get_ref_digest (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *res = res_or_null (result, i);
  return res ? res->digest : NULL;
}

const char *
eb_rewrite_result_get_ref_param (const EbRewriteResult *result, guint i, const char *name)
{
  CHECK_REF (result, i, NULL);
  g_return_val_if_fail (name != NULL, NULL);
  const EbRef *ref = ref_at (result, i);
  const struct { const char *n; const char *v; } kv[] = {
    { "site", ref->site }, { "directory", ref->directory }, { "name", ref->name },
    { "mode", ref->mode }, { "server", ref->server }, { "subject", ref->subject },
    { "expiration", ref->expiration }, { "size", ref->size },
    { "permission", ref->permission }, { "inner_type", ref->inner_type },
  };
  for (guint k = 0; k < G_N_ELEMENTS (kv); k++)
    if (strcmp (kv[k].n, name) == 0)
      return kv[k].v;
  g_return_val_if_reached (NULL);
}

const char *
eb_rewrite_result_get_ref_replaced_path (const EbRewriteResult *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbRef *ref = ref_at (result, i);
  return ref->alt ? ref->alt_path : NULL;
}
