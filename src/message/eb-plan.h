/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-plan.h - one message's plan: what rewrite and externalize both make.
 *
 * A plan holds its message (EbMessage: the bytes, borrowed, read once), every
 * replacement, every field of the message header to remove (trace fields,
 * Content-Length) and one record per reference or part. The writers
 * (eb_plan_write, eb_plan_write_mboxrd, eb_plan_write_body,
 * eb_plan_header_edits, eb_plan_filter_field_value) take the plan alone; the
 * log, the statistics, inspect, batch and the front ends read it through the
 * accessors (public: extbody-plan.h; the reporters' own: below). Its fields
 * are private (eb-plan-private.h) to it and its two producers.
 */
#pragma once
#include <gio/gio.h>
#include "eb-config.h"
#include "eb-message.h"
#include "eb-resolve.h"
#include "eb-header-edit.h"

G_BEGIN_DECLS

/* One URL the fetcher was asked for: taken from its cache (another message's
 * fetch, or an earlier reference of this one), or fetched with this outcome. */
typedef struct {
  EbReason outcome;     /* RESOLVED, or why the fetch gave no data */
  gboolean cache_hit;   /* served without a fetch of its own */
  gboolean network;     /* not a cache hit: a fetch that got past its rate-limit
                           wait (the others are counted among the left only) */
  guint64  bytes;       /* body bytes that arrived */
  gint64   elapsed;     /* µs */
} EbFetchRecord;

/* What the reporters (statistics, batch, log) read of a plan besides the
 * public accessors (extbody-plan.h). */

/* Made by eb_externalize_plan: the references are the candidate parts. */
gboolean eb_plan_get_externalized (const EbPlan *result);

/* The size as the reference or part states it (its size parameter, as
 * written), or NULL. @i below eb_plan_get_n_refs(). */
const char *eb_plan_get_ref_declared_size (const EbPlan *result, guint i);

/* The bytes of the leading mbox From_ line the result was planned past. */
gsize eb_plan_get_from_line_len (const EbPlan *result);

/* Reference @i (below eb_plan_get_n_refs()) as the log reads it:
 * its site parameter; its outcome (the resolution's reason, else the
 * decision's, else why the walk left it); the particulars of that outcome
 * (the resolution's when it is the outcome, else the decision's); and what
 * the resolution holds whatever its reason: the type, the data (transfer
 * none) and the digest, each (nullable). */
const char *eb_plan_get_ref_site (const EbPlan *result, guint i);
EbReason eb_plan_get_ref_outcome (const EbPlan *result, guint i);
const char *eb_plan_get_ref_outcome_detail (const EbPlan *result, guint i);
const char *eb_plan_get_ref_type (const EbPlan *result, guint i);
GBytes *eb_plan_get_ref_data (const EbPlan *result, guint i);
const char *eb_plan_get_ref_digest (const EbPlan *result, guint i);

/* A parameter of reference @i as written (site, directory, name, mode, server,
 * subject, expiration, size, permission, inner_type), or NULL. */
const char *eb_plan_get_ref_param (const EbPlan *result, guint i,
                                             const char *name);

/* With the fallback shape (the whole multipart/alternative replaced): the
 * alternative's part path ("" for the body of the message); else NULL. */
const char *eb_plan_get_ref_replaced_path (const EbPlan *result, guint i);

/* What the fetcher did for this message, one record per URL asked for. */
guint eb_plan_get_n_fetches (const EbPlan *result);
const EbFetchRecord *eb_plan_get_fetch (const EbPlan *result, guint i);

G_END_DECLS
