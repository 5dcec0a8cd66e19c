/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-rewrite-private.h - the fields of a rewrite result.
 *
 * Seen by the two modules that make a result, eb-rewrite (eb_rewrite_plan)
 * and eb-externalize (eb_externalize_plan), and by the unit tests. Every
 * other module (the log, the statistics, inspect, batch, the front ends)
 * reads a result through its accessors (extbody.h, eb-rewrite.h).
 */
#pragma once
#include "eb-rewrite.h"

G_BEGIN_DECLS

typedef struct {
  gsize start, end;   /* bytes [start, end) */
} EbRange;

struct _EbRewriteResult {
  gsize          skip;         /* bytes of a leading mbox From_ line: kept as they
                                  are, not parsed; every offset in scan is from
                                  the byte after it */
  gboolean       parsed;       /* a MIME parse was done */
  EbReason       reason;       /* RESOLVED, or why the whole message was left alone */
  EbMessageScan *scan;         /* (nullable) when parsed */
  GPtrArray     *actions;      /* (element-type EbAction) the decision for each of scan->refs */
  GPtrArray     *resolutions;  /* (element-type EbResolution) one per scan->refs */
  guint          n_resolved;
  GArray        *removed;      /* (element-type EbRange) with EB_REWRITE_STRIP_TRACE:
                                  the message header's trace fields removed, in
                                  order (offsets as in scan) */
  gboolean       changed;      /* the output differs from the input */
  gboolean       filter_field; /* with EB_REWRITE_FILTER_FIELD and something
                                  resolved: eb_rewrite_write() adds the field */
  GArray        *fetches;      /* (element-type EbFetchRecord) what the fetcher did
                                  for this message, for the statistics */
  gboolean       externalized; /* made by eb_externalize_plan: refs are the candidate
                                  parts, n_resolved those externalized */
};

G_END_DECLS
