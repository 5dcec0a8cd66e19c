/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-plan.c - one message's plan: made, read, freed (see eb-plan.h).
 *
 * The producers (eb-rewrite, eb-externalize) fill it; the writers are in
 * eb-plan-write.c; everything else reads it through the accessors below. */
#include "eb-plan-private.h"
#include "eb-seal.h"
#include <string.h>

void
eb_plan_free (EbPlan *result)
{
  if (!result)
    return;
  eb_message_scan_free (result->own_scan);
  eb_message_free (result->message);
  if (result->removed)
    g_array_unref (result->removed);
  if (result->resolutions)
    g_ptr_array_unref (result->resolutions);
  if (result->actions)
    g_ptr_array_unref (result->actions);
  if (result->fetches)
    g_array_unref (result->fetches);
  if (result->seal_key)
    g_bytes_unref (result->seal_key);
  g_free (result);
}

EbPlan *
eb_plan_new (const char *buf, gsize len)
{
  EbPlan *r = g_new0 (EbPlan, 1);
  r->message = eb_message_new (buf, len);
  r->reason = EB_REASON_RESOLVED;
  r->resolutions = g_ptr_array_new_with_free_func ((GDestroyNotify) eb_resolution_free);
  r->actions = g_ptr_array_new_with_free_func ((GDestroyNotify) eb_action_free);
  r->removed = g_array_new (FALSE, FALSE, sizeof (EbRange));
  r->fetches = g_array_new (FALSE, TRUE, sizeof (EbFetchRecord));
  return r;
}

guint
eb_plan_remove_ranges (EbPlan *plan, const EbRange *ranges, guint n)
{
  /* the removals so far and @ranges are both in order: merged, one range
   * per start */
  g_autoptr (GArray) merged = g_array_sized_new (FALSE, FALSE, sizeof (EbRange), plan->removed->len + n);
  guint a = 0, b = 0, added = 0;
  while (a < plan->removed->len || b < n) {
    const EbRange *x = a < plan->removed->len ? &g_array_index (plan->removed, EbRange, a) : NULL;
    const EbRange *y = b < n ? &ranges[b] : NULL;
    if (x && (!y || x->start <= y->start)) {
      if (y && y->start == x->start)
        b++;
      g_array_append_val (merged, *x);
      a++;
    } else {
      g_array_append_val (merged, *y);
      added++;
      b++;
    }
  }
  g_array_set_size (plan->removed, 0);
  g_array_append_vals (plan->removed, merged->data, merged->len);
  return added;
}

guint
eb_plan_remove_fields (EbPlan *plan, EbPlanFieldTest is_removed, gconstpointer data)
{
  const EbHeaderBlock *top = eb_message_get_top (plan->message);
  g_autoptr (GArray) ranges = g_array_new (FALSE, FALSE, sizeof (EbRange));
  for (guint i = 0; i < top->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (top->fields, EbHeaderField, i);
    if (is_removed (f, plan->message->buf, data)) {
      EbRange rg = { f->start, f->end };
      g_array_append_val (ranges, rg);
    }
  }
  return eb_plan_remove_ranges (plan, (const EbRange *) ranges->data, ranges->len);
}

guint
eb_plan_remove_lines (EbPlan *plan, const char *name)
{
  /* The message header's one reading (eb_message_get_top) holds every line
   * before its end: its fields "@name:" (the colon right after the name) are
   * the lines a mailbox reader takes. Past a line that is no field, where
   * that reading ends, the reader goes on to the blank line, and so do the
   * lines found from there. */
  const char *buf = plan->message->buf;
  const EbHeaderBlock *top = eb_message_get_top (plan->message);
  gsize n = strlen (name);
  g_autoptr (GArray) lines = g_array_new (FALSE, FALSE, sizeof (EbHeaderField));
  for (guint i = 0; i < top->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (top->fields, EbHeaderField, i);
    if (eb_header_field_is (f, buf, name) && buf[f->start + n] == ':')
      g_array_append_val (lines, *f);
  }
  if (!top->blank)
    eb_header_find_lines (buf, top->end, plan->message->len, name, lines);
  g_autoptr (GArray) ranges = g_array_sized_new (FALSE, FALSE, sizeof (EbRange), lines->len);
  for (guint i = 0; i < lines->len; i++) {
    const EbHeaderField *f = &g_array_index (lines, EbHeaderField, i);
    EbRange rg = { f->start, f->end };
    g_array_append_val (ranges, rg);
  }
  return eb_plan_remove_ranges (plan, (const EbRange *) ranges->data, ranges->len);
}

GArray *
eb_plan_sealed_records (EbPlan *plan)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (EbSealedRecord));
  if (!plan->seal_key)
    return out;
  const char *buf = plan->message->buf;
  const EbHeaderBlock *top = eb_message_get_top (plan->message);
  g_autofree char *mid = NULL;
  gboolean mid_read = FALSE;
  for (guint i = 0; i < top->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (top->fields, EbHeaderField, i);
    if (!eb_header_field_is (f, buf, EB_FILTER_FIELD))
      continue;
    if (!mid_read) {
      mid = eb_message_get_field_value (plan->message, "Message-ID");
      mid_read = TRUE;
    }
    g_autofree char *value = g_strndup (buf + f->value, f->value_end - f->value);
    g_autofree char *record = NULL;
    if (!eb_seal_verify (plan->seal_key, value, mid, &record))
      continue;
    EbSealedRecord s = { .start = f->start };
    s.resolve = eb_seal_record_counts (record, &s.done, &s.of);
    g_array_append_val (out, s);
  }
  return out;
}

typedef struct {
  const GArray *kept;
  gboolean      keep_resolved_fields;
} TraceKept;

/* A trace field (the filter's own field, and the one on every resolved
 * part) that is not among those kept. */
static gboolean
is_trace_removed (const EbHeaderField *f, const char *buf, gconstpointer data)
{
  const TraceKept *k = data;
  if (eb_header_field_is (f, buf, EB_TRACE_FIELD))
    return !k->keep_resolved_fields;
  if (!eb_header_field_is (f, buf, EB_FILTER_FIELD))
    return FALSE;
  for (guint i = 0; k->kept && i < k->kept->len; i++)
    if (g_array_index (k->kept, EbSealedRecord, i).start == f->start)
      return FALSE;
  return TRUE;
}

guint
eb_plan_remove_trace (EbPlan *plan, const GArray *kept, gboolean keep_resolved_fields)
{
  TraceKept k = { kept, keep_resolved_fields };
  return eb_plan_remove_fields (plan, is_trace_removed, &k);
}

EbPlan *
eb_plan_finish (EbPlan *plan, gboolean filter_field)
{
  if (plan->n_resolved == 0 && plan->n_trace == 0)
    g_array_set_size (plan->removed, 0);
  /* with the site's key a rewrite's record is written whatever was resolved,
   * so that a later pass of the site does not fetch the references again; an
   * externalize record counts the parts externalized, and is due with one */
  gboolean record_due = plan->n_resolved > 0
                        || (!plan->externalized && plan->seal_key && plan->scan && plan->scan->refs->len > 0);
  plan->filter_field = filter_field && !plan->sealed && record_due;
  plan->changed = plan->n_resolved > 0 || plan->removed->len > 0 || plan->filter_field;
  return plan;
}

gboolean
eb_plan_removes (const EbPlan *plan, gsize start)
{
  for (guint k = 0; k < plan->removed->len; k++)
    if (g_array_index (plan->removed, EbRange, k).start == start)
      return TRUE;
  return FALSE;
}

char *
eb_plan_get_message_id (const EbPlan *plan)
{
  g_return_val_if_fail (plan != NULL, NULL);
  char *v = eb_message_get_field_value (plan->message, "Message-ID");
  if (v && !*v)
    g_clear_pointer (&v, g_free);
  return v;
}

/* The first resolved reference, or NULL. */
const EbRef *
eb_plan_first_resolved (const EbPlan *r)
{
  for (guint i = 0; r->scan && i < r->scan->refs->len; i++)
    if (((const EbResolution *) g_ptr_array_index (r->resolutions, i))->reason == EB_REASON_RESOLVED)
      return g_ptr_array_index (r->scan->refs, i);
  return NULL;
}

/* A resolved reference that is the body of the message itself, or the
 * fallback alternative that is (its new header replaces the message header),
 * or NULL. */
const EbResolution *
eb_plan_root_resolution (const EbPlan *r)
{
  const EbRef *first = eb_plan_first_resolved (r);
  if (!first || !eb_extref_replaced_is_root (first) || eb_extref_replaced_start (first) != 0)
    return NULL;
  for (guint i = 0; i < r->scan->refs->len; i++)
    if (g_ptr_array_index (r->scan->refs, i) == first)
      return g_ptr_array_index (r->resolutions, i);
  return NULL;
}

char *
eb_plan_filter_field_value (const EbPlan *r)
{
  guint n = r->scan ? r->scan->refs->len : 0;
  g_autofree char *record = r->externalized
    ? g_strdup_printf (" externalized %u of %u part%s", r->n_resolved, n, n == 1 ? "" : "s")
    : g_strdup_printf (" resolved %u of %u external-body reference%s", r->n_resolved, n, n == 1 ? "" : "s");
  if (!r->seal_key)
    return g_steal_pointer (&record);
  /* the message's Message-ID: the written message keeps the field */
  g_autofree char *mid = eb_message_get_field_value (r->message, "Message-ID");
  g_autofree char *seal = eb_seal_make (r->seal_key, record, mid);
  return g_strconcat (record, "; seal=", seal, NULL);
}

gboolean
eb_plan_get_filter_field (const EbPlan *plan)
{
  g_return_val_if_fail (plan != NULL, FALSE);
  return plan->filter_field;
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

/* The fields of the header block @blk of @buf, less those starting at one of
 * @removed. */
static GArray *
fields_of (const EbHeaderBlock *blk, const char *buf, const GArray *removed)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (Field));
  g_array_set_clear_func (a, (GDestroyNotify) field_clear);
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
eb_plan_header_edits (const EbPlan *r)
{
  GPtrArray *edits = g_ptr_array_new_with_free_func ((GDestroyNotify) eb_header_edit_free);
  if (!r->changed)
    return edits;
  const char *buf = r->message->buf;
  const EbHeaderBlock *top = eb_message_get_top (r->message);
  g_autoptr (GArray) old = fields_of (top, buf, NULL);
  const EbResolution *root = eb_plan_root_resolution (r);
  g_autoptr (EbHeaderBlock) root_top = root ? eb_header_block_scan (eb_resolution_header (root)->str, 0,
                                                                     eb_resolution_header (root)->len)
                                             : NULL;
  g_autoptr (GArray) neu = root ? fields_of (root_top, eb_resolution_header (root)->str, NULL)
                                : fields_of (top, buf, r->removed);
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

/* ---- the public accessors (extbody.h) -------------------------------------- */

EbReason
eb_plan_get_reason (const EbPlan *result)
{
  g_return_val_if_fail (result != NULL, EB_REASON_RESOLVED);
  return result->reason;
}

gboolean
eb_plan_get_parsed (const EbPlan *result)
{
  g_return_val_if_fail (result != NULL, FALSE);
  return result->parsed;
}

gboolean
eb_plan_get_changed (const EbPlan *result)
{
  g_return_val_if_fail (result != NULL, FALSE);
  return result->changed;
}

guint
eb_plan_get_n_refs (const EbPlan *result)
{
  g_return_val_if_fail (result != NULL, 0);
  return result->scan ? result->scan->refs->len : 0;
}

guint
eb_plan_get_n_resolved (const EbPlan *result)
{
  g_return_val_if_fail (result != NULL, 0);
  return result->n_resolved;
}

guint
eb_plan_get_n_removed (const EbPlan *result)
{
  g_return_val_if_fail (result != NULL, 0);
  return result->removed ? result->removed->len : 0;
}

#define CHECK_REF(result, i, val) \
  g_return_val_if_fail ((result) != NULL && (i) < eb_plan_get_n_refs (result), val)

static const EbRef *
ref_at (const EbPlan *result, guint i)
{
  return g_ptr_array_index (result->scan->refs, i);
}

static const EbResolution *
res_at (const EbPlan *result, guint i)
{
  return g_ptr_array_index (result->resolutions, i);
}

static const EbAction *
action_at (const EbPlan *result, guint i)
{
  return result->actions && i < result->actions->len ? g_ptr_array_index (result->actions, i) : NULL;
}

EbReason
eb_plan_get_ref_reason (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, EB_REASON_RESOLVED);
  return res_at (result, i)->reason;
}

const char *
eb_plan_get_ref_detail (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  return res_at (result, i)->detail;
}

const char *
eb_plan_get_ref_path (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  return ref_at (result, i)->path;
}

const char *
eb_plan_get_ref_access_type (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  return ref_at (result, i)->access_type;
}

const char *
eb_plan_get_ref_url (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  return ref_at (result, i)->url;
}

EbActionKind
eb_plan_get_ref_action (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, EB_ACTION_LEAVE);
  const EbAction *a = action_at (result, i);
  return a ? a->kind : EB_ACTION_LEAVE;
}

const char *
eb_plan_get_ref_target (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbAction *a = action_at (result, i);
  return a ? a->target : NULL;
}

const char *
eb_plan_get_ref_content_type (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *r = res_at (result, i);
  return r->reason == EB_REASON_RESOLVED ? r->type : NULL;
}

const char *
eb_plan_get_ref_encoding (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *r = res_at (result, i);
  return r->reason == EB_REASON_RESOLVED ? eb_transfer_name (r->encoding) : NULL;
}

guint64
eb_plan_get_ref_size (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, 0);
  const EbResolution *r = res_at (result, i);
  return r->reason == EB_REASON_RESOLVED && r->data ? g_bytes_get_size (r->data) : 0;
}

const char *
eb_plan_get_ref_sha256 (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *r = res_at (result, i);
  return r->reason == EB_REASON_RESOLVED ? eb_resolution_sha256 (r) : NULL;
}

gboolean
eb_plan_get_externalized (const EbPlan *result)
{
  g_return_val_if_fail (result != NULL, FALSE);
  return result->externalized;
}

const char *
eb_plan_get_ref_declared_size (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  return ref_at (result, i)->size;
}

guint
eb_plan_get_n_fetches (const EbPlan *result)
{
  g_return_val_if_fail (result != NULL, 0);
  return result->fetches ? result->fetches->len : 0;
}

const EbFetchRecord *
eb_plan_get_fetch (const EbPlan *result, guint i)
{
  g_return_val_if_fail (result != NULL && i < eb_plan_get_n_fetches (result), NULL);
  return &g_array_index (result->fetches, EbFetchRecord, i);
}

gsize
eb_plan_get_from_line_len (const EbPlan *result)
{
  g_return_val_if_fail (result != NULL, 0);
  return result->message->from_len;
}

/* The resolution of reference @i, if it has one yet. */
static const EbResolution *
res_or_null (const EbPlan *result, guint i)
{
  return i < result->resolutions->len ? g_ptr_array_index (result->resolutions, i) : NULL;
}

const char *
eb_plan_get_ref_site (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  return ref_at (result, i)->site;
}

EbReason
eb_plan_get_ref_outcome (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, EB_REASON_RESOLVED);
  const EbResolution *res = res_or_null (result, i);
  const EbAction *act = action_at (result, i);
  return res ? res->reason : act ? act->reason : ref_at (result, i)->walk_reason;
}

const char *
eb_plan_get_ref_outcome_detail (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *res = res_or_null (result, i);
  const EbAction *act = action_at (result, i);
  return res && res->reason == eb_plan_get_ref_outcome (result, i) ? res->detail
         : act ? act->detail : NULL;
}

const char *
eb_plan_get_ref_type (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *res = res_or_null (result, i);
  return res ? res->type : NULL;
}

GBytes *
eb_plan_get_ref_data (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *res = res_or_null (result, i);
  return res ? res->data : NULL;
}

const char *
eb_plan_get_ref_digest (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbResolution *res = res_or_null (result, i);
  return res ? res->digest : NULL;
}

const char *
eb_plan_get_ref_param (const EbPlan *result, guint i, const char *name)
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
eb_plan_get_ref_replaced_path (const EbPlan *result, guint i)
{
  CHECK_REF (result, i, NULL);
  const EbRef *ref = ref_at (result, i);
  return ref->alt ? ref->alt_path : NULL;
}
