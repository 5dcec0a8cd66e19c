/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-rewrite.h - one message in, one message out; never re-serialized.
 *
 * The pre-check (no "external-body" anywhere: copy out untouched, no parse), the
 * size limit, the GMime parse and walk (eb-message), a decision per reference
 * (eb-resolve), and the splice: every byte outside a replaced entity is copied
 * from the input verbatim; each replaced entity is written as its new header and
 * its data encoded for transport. A message in which nothing is resolved is
 * written byte for byte as it came in.
 */
#pragma once
#include <gio/gio.h>
#include "eb-config.h"
#include "eb-message.h"
#include "eb-resolve.h"
#include "eb-fetch.h"
#include "eb-header-edit.h"

G_BEGIN_DECLS

/* EbRewriteFlags, EB_FILTER_FIELD, EbRewriteResult (opaque) and its accessors,
 * and the planners and writers are public (extbody.h); EbHeaderEdit, what
 * eb_rewrite_header_edits() returns, is in eb-header-edit.h. */

/* The fields of a result are private (eb-rewrite-private.h): every module but
 * its two producers, eb-rewrite and eb-externalize, reads a result through
 * the public accessors and those below. */

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

/* What the reporters (statistics, batch, log) read of a result besides the
 * public accessors (extbody.h); no module outside the message layer reads
 * the fields above. */

/* Made by eb_externalize_plan: the references are the candidate parts. */
gboolean eb_rewrite_result_get_externalized (const EbRewriteResult *result);

/* The size as the reference or part states it (its size parameter, as
 * written), or NULL. @i below eb_rewrite_result_get_n_refs(). */
const char *eb_rewrite_result_get_ref_declared_size (const EbRewriteResult *result, guint i);

/* The bytes of the leading mbox From_ line the result was planned past. */
gsize eb_rewrite_result_get_from_line_len (const EbRewriteResult *result);

/* Reference @i (below eb_rewrite_result_get_n_refs()) as the log reads it:
 * its site parameter; its outcome (the resolution's reason, else the
 * decision's, else why the walk left it); the particulars of that outcome
 * (the resolution's when it is the outcome, else the decision's); and what
 * the resolution holds whatever its reason: the type, the data (transfer
 * none) and the digest, each (nullable). */
const char *eb_rewrite_result_get_ref_site (const EbRewriteResult *result, guint i);
EbReason eb_rewrite_result_get_ref_outcome (const EbRewriteResult *result, guint i);
const char *eb_rewrite_result_get_ref_outcome_detail (const EbRewriteResult *result, guint i);
const char *eb_rewrite_result_get_ref_type (const EbRewriteResult *result, guint i);
GBytes *eb_rewrite_result_get_ref_data (const EbRewriteResult *result, guint i);
const char *eb_rewrite_result_get_ref_digest (const EbRewriteResult *result, guint i);

/* A parameter of reference @i as written (site, directory, name, mode, server,
 * subject, expiration, size, permission, inner_type), or NULL. */
const char *eb_rewrite_result_get_ref_param (const EbRewriteResult *result, guint i,
                                             const char *name);

/* With the fallback shape (the whole multipart/alternative replaced): the
 * alternative's part path ("" for the body of the message); else NULL. */
const char *eb_rewrite_result_get_ref_replaced_path (const EbRewriteResult *result, guint i);

/* What the fetcher did for this message, one record per URL asked for. */
guint eb_rewrite_result_get_n_fetches (const EbRewriteResult *result);
const EbFetchRecord *eb_rewrite_result_get_fetch (const EbRewriteResult *result, guint i);

/* The length of a leading mbox From_ line ("From sender date", as mail readers
 * save single messages and pipe(8) with flags=F passes them), line break
 * included, or 0. */
gsize eb_rewrite_from_line_len (const char *buf, gsize len);

/* What eb_rewrite_plan() returns for @buf when the pre-check finds no
 * "external-body" in it and @flags has no EB_REWRITE_STRIP_TRACE, without
 * looking at the message again: the caller (the mbox split, which looks for
 * it in the same pass) has made sure of it. */
EbRewriteResult *eb_rewrite_plan_unmatched (const char *buf, gsize len);

G_END_DECLS
