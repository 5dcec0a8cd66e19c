/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-plan-private.h - the fields of a plan.
 *
 * Seen by the plan's own module (eb-plan, eb-plan-write), by the two modules
 * that make a plan, eb-rewrite (eb_rewrite_plan) and eb-externalize
 * (eb_externalize_plan), and by the unit tests. Every other module (the log,
 * the statistics, inspect, batch, the front ends) reads a plan through its
 * accessors (extbody-plan.h, eb-plan.h).
 */
#pragma once
#include "eb-plan.h"

G_BEGIN_DECLS

typedef struct {
  gsize start, end;   /* bytes [start, end) */
} EbRange;

struct _EbPlan {
  EbMessage     *message;      /* the one reading of the message: its bytes (borrowed),
                                  its From_ line, its header; every offset below is
                                  from message->buf, the byte after the From_ line */
  gboolean       parsed;       /* a MIME parse was done */
  EbReason       reason;       /* RESOLVED, or why the whole message was left alone */
  EbMessageScan *scan;         /* (nullable) when parsed: the references (rewrite:
                                  the message's own walk) or candidate parts
                                  (externalize: own_scan) */
  EbMessageScan *own_scan;     /* (nullable) a scan the plan made and owns */
  GPtrArray     *actions;      /* (element-type EbAction) the decision for each of scan->refs */
  GPtrArray     *resolutions;  /* (element-type EbResolution) one per scan->refs */
  guint          n_resolved;
  GArray        *removed;      /* (element-type EbRange) the fields of the message
                                  header to remove, in order: the trace fields
                                  (EB_REWRITE_STRIP_TRACE, EB_EXTERNALIZE_STRIP_TRACE)
                                  and Content-Length (EB_REWRITE_DROP_CONTENT_LENGTH,
                                  when the message changes otherwise) */
  guint          n_trace;      /* of which trace fields (the rest are Content-Length) */
  gboolean       changed;      /* the output differs from the input */
  gboolean       filter_field; /* with EB_REWRITE_FILTER_FIELD and something
                                  resolved: eb_plan_write() adds the field */
  GArray        *fetches;      /* (element-type EbFetchRecord) what the fetcher did
                                  for this message, for the statistics */
  gboolean       externalized; /* made by eb_externalize_plan: refs are the candidate
                                  parts, n_resolved those externalized */
  GBytes        *seal_key;     /* (nullable) the site's key (trace_key_file, eb-seal.h):
                                  the filter field written is sealed with it */
  gboolean       sealed;       /* left alone for this site's sealed record
                                  (EB_REASON_SEALED_RECORD) */
};

/* A plan of the @len bytes at @buf (borrowed) that changes nothing yet. */
EbPlan *eb_plan_new (const char *buf, gsize len);

/* Is field @f of the message header (@buf) one to remove? */
typedef gboolean (*EbPlanFieldTest) (const EbHeaderField *f, const char *buf, gconstpointer data);

/* Add to @plan's removals the fields of the message header that @is_removed
 * (with @data) picks, kept in order; returns how many were added. */
guint eb_plan_remove_fields (EbPlan *plan, EbPlanFieldTest is_removed, gconstpointer data);

/* Add @n ranges (in order) to @plan's removals, kept in order, one per start;
 * returns how many were new. */
guint eb_plan_remove_ranges (EbPlan *plan, const EbRange *ranges, guint n);

/* Add the lines named @name of the message header as a mailbox reader finds
 * them (eb_header_find_lines: up to the blank line, whether or not the lines
 * before are fields), read from the message header's one reading as far as
 * it goes; returns how many were new. */
guint eb_plan_remove_lines (EbPlan *plan, const char *name);

/* An X-Extbody field of the message header whose seal verifies: this site's
 * record (eb_plan_sealed_records). */
typedef struct {
  gsize    start;      /* where the field starts */
  gboolean resolve;    /* a rewrite's record: "resolved DONE of OF ..." */
  guint    done, of;
} EbSealedRecord;

/* The X-Extbody fields of @plan's message header whose seal verifies with
 * @plan's seal_key, in order; none without a key. Returns: (transfer full)
 * (element-type EbSealedRecord). */
GArray *eb_plan_sealed_records (EbPlan *plan);

/* Add to @plan's removals the trace fields of the message header (X-Extbody,
 * X-Extbody-Resolved: a sender can forge them) but the X-Extbody fields of
 * @kept (element-type EbSealedRecord; nullable: none) and, with
 * @keep_resolved_fields, every X-Extbody-Resolved; returns how many were
 * added. */
guint eb_plan_remove_trace (EbPlan *plan, const GArray *kept, gboolean keep_resolved_fields);

/* What @plan changes, its removals and resolutions settled; returns @plan.
 * The removals stay only in a message that changes otherwise (something
 * resolved or a trace field removed): a Content-Length goes only from a
 * message whose length then no longer holds. With @filter_field
 * (EB_REWRITE_FILTER_FIELD, EB_EXTERNALIZE_FILTER_FIELD) the X-Extbody record
 * is due when something was resolved and, for a rewrite with the site's key,
 * in a message with references whatever was resolved; never in one left for
 * this site's sealed record. */
EbPlan *eb_plan_finish (EbPlan *plan, gboolean filter_field);

/* Is the field that starts at @start one of @plan's removals? */
gboolean eb_plan_removes (const EbPlan *plan, gsize start);

/* The first resolved reference, or NULL. */
const EbRef *eb_plan_first_resolved (const EbPlan *plan);

/* A resolved reference that is the body of the message itself, or the
 * fallback alternative that is (its new header replaces the message header):
 * its resolution; or NULL. */
const EbResolution *eb_plan_root_resolution (const EbPlan *plan);

G_END_DECLS
