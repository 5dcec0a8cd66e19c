/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-rewrite.c - a rewrite's plan: a decision per reference, the fetches, the
 * new parts (see eb-rewrite.h). */
#include "eb-rewrite.h"
#include "eb-plan-private.h"
#include "eb-seal.h"
#include <string.h>

EbPlan *
eb_rewrite_plan_unmatched (const char *buf, gsize len)
{
  return eb_plan_new (buf, len);
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

/* How many references the message of @r holds now, for a sealed record to
 * be checked against; G_MAXUINT when the message is not read (its header
 * alone, or above max_message_size): then the seal alone counts. */
static guint
refs_now (EbPlan *r, const EbConfig *config, EbRewriteFlags flags)
{
  if ((flags & EB_REWRITE_HEADER_ONLY) || r->message->len > config->max_message_size)
    return G_MAXUINT;
  return eb_message_get_scan (r->message, config)->refs->len;
}

/* The trace fields a filter's pass removes (EB_REWRITE_STRIP_TRACE), this
 * site's sealed records (eb-seal.h) judged first. A record of a rewrite
 * whose count of references left ("resolved DONE of OF": OF - DONE) is the
 * message's says that a pass of this site has handled the message: TRUE,
 * every sealed record and X-Extbody-Resolved field stay, and only the
 * X-Extbody fields without a valid seal go. Otherwise a rewrite's sealed
 * record that does not fit the message goes too (stale, or copied from
 * another message with its Message-ID), and an externalize record stays. */
static gboolean
plan_trace (EbPlan *r, const EbConfig *config, EbRewriteFlags flags)
{
  g_autoptr (GArray) sealed = eb_plan_sealed_records (r);
  gboolean handled = FALSE;
  guint now = 0;
  gboolean counted = FALSE;
  for (guint i = 0; i < sealed->len && !handled; i++) {
    const EbSealedRecord *s = &g_array_index (sealed, EbSealedRecord, i);
    if (!s->resolve)
      continue;
    if (!counted) {
      now = refs_now (r, config, flags);
      counted = TRUE;
    }
    handled = now == G_MAXUINT || s->of - s->done == now;
  }
  for (guint i = sealed->len; !handled && i-- > 0;)
    if (g_array_index (sealed, EbSealedRecord, i).resolve)
      g_array_remove_index (sealed, i);
  r->n_trace = eb_plan_remove_trace (r, sealed, handled);
  return handled;
}

/* The fields of the message header @flags removes: with
 * EB_REWRITE_STRIP_TRACE the trace fields (TRUE when this site's sealed
 * record says the message was handled: plan_trace), with
 * EB_REWRITE_DROP_CONTENT_LENGTH Content-Length (dropped again by
 * eb_plan_finish when nothing else changes). */
static gboolean
plan_removals (EbPlan *r, const EbConfig *config, EbRewriteFlags flags)
{
  gboolean handled = (flags & EB_REWRITE_STRIP_TRACE) && plan_trace (r, config, flags);
  if (flags & EB_REWRITE_DROP_CONTENT_LENGTH)
    eb_plan_remove_lines (r, "Content-Length");
  return handled;
}

/* The fetches of every reference to fetch, all at once: one slot per
 * reference (NULL for those not fetched); what the fetcher did is recorded
 * for the statistics. */
static GPtrArray *
fetch_all (EbPlan *r, EbFetcher *fetcher, const EbConfig *config, EbRewriteFlags flags)
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
resolve_each (EbPlan *r, const char *buf, gsize len, const EbConfig *config,
              GPtrArray *fetched)
{
  guint64 budget = 0;
  for (guint i = 0; i < r->scan->refs->len; i++) {
    EbRef *ref = g_ptr_array_index (r->scan->refs, i);
    /* the body of the message itself (or the fallback alternative that is):
     * its new header is built from the message header, less the fields removed */
    EbHeaderBlock *own = eb_extref_replaced_start (ref) != 0 || !eb_extref_replaced_is_root (ref) ? NULL
                         : ref->alt ? ref->alt_outer : ref->outer;
    for (guint k = r->removed->len && own ? own->fields->len : 0; k-- > 0;)
      if (eb_plan_removes (r, g_array_index (own->fields, EbHeaderField, k).start))
        g_array_remove_index (own->fields, k);
    const EbAction *a = g_ptr_array_index (r->actions, i);
    if (a->kind == EB_ACTION_LOCAL_FILE)
      g_ptr_array_index (fetched, i) = eb_fetch_local_file (a->target, eb_config_get_local_file_dirs (config),
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
check_no_overlap (EbPlan *r)
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

EbPlan *
eb_rewrite_plan (const char *buf0, gsize len0, const EbConfig *config, EbFetcher *fetcher,
                 EbRewriteFlags flags)
{
  EbPlan *r = eb_plan_new (buf0, len0);
  const char *buf = r->message->buf;
  gsize len = r->message->len;
  const gboolean field = (flags & EB_REWRITE_FILTER_FIELD) != 0;
  if (flags & (EB_REWRITE_STRIP_TRACE | EB_REWRITE_FILTER_FIELD))
    r->seal_key = eb_seal_key (config);
  if (plan_removals (r, config, flags)) {
    r->reason = EB_REASON_SEALED_RECORD;
    r->sealed = TRUE;
    return eb_plan_finish (r, field);
  }
  if (flags & EB_REWRITE_HEADER_ONLY)
    return eb_plan_finish (r, field);

  if (!(flags & EB_REWRITE_NO_PRECHECK) && !eb_message_may_hold_external_body (buf, len))
    return eb_plan_finish (r, field);
  if (len > config->max_message_size) {
    r->reason = EB_REASON_MESSAGE_TOO_LARGE;
    return eb_plan_finish (r, field);
  }

  r->parsed = TRUE;
  r->scan = eb_message_get_scan (r->message, config);
  if (r->scan->reason != EB_REASON_RESOLVED)
    r->reason = r->scan->reason;

  /* One decision per reference; then the fetches, all at once; then each
   * new part is built, a local file read when its turn comes. */
  for (guint i = 0; i < r->scan->refs->len; i++)
    g_ptr_array_add (r->actions, eb_resolve_decide (g_ptr_array_index (r->scan->refs, i), config));
  g_autoptr (GPtrArray) fetched = fetch_all (r, fetcher, config, flags);
  resolve_each (r, buf, len, config, fetched);
  check_no_overlap (r);
  return eb_plan_finish (r, field);
}

gboolean
eb_rewrite (const char *buf, gsize len, const EbConfig *config, EbFetcher *fetcher,
            EbRewriteFlags flags, GOutputStream *out, EbPlan **result, GError **error)
{
  g_autoptr (EbPlan) r = eb_rewrite_plan (buf, len, config, fetcher, flags);
  gboolean ok = eb_plan_write (r, out, error);
  if (result)
    *result = g_steal_pointer (&r);
  return ok;
}
