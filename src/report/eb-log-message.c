/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-log-message.c - the log records of one message: a line for the message
 * and one for each reference (rewrite) or part (externalize), read from its
 * plan through accessors; and the message's Message-ID for them (the
 * contract is in the public header, eb_log_message).
 * The records are written by eb-log, which knows nothing of plans. */
#include "eb-log.h"
#include "eb-header.h"
#include "eb-rewrite.h"
#include <syslog.h>

/* Is the detail of a reference left for @reason one the log may carry? What
 * the fetch said (the curl error with the host and port, the HTTP status, the
 * policy's words), never a local file's path nor what names a URL's path or
 * query (would-fetch carries the URL). */
static gboolean
detail_loggable (EbReason reason, EbActionKind action)
{
  if (action == EB_ACTION_LOCAL_FILE)
    return FALSE;
  switch (reason) {
  case EB_REASON_FETCH_FAILED: case EB_REASON_HTTP_STATUS: case EB_REASON_TIMED_OUT:
  case EB_REASON_REFUSED_ADDRESS: case EB_REASON_REFUSED_DOMAIN: case EB_REASON_RATE_LIMITED:
  case EB_REASON_TOO_MANY_REDIRECTS: case EB_REASON_INSECURE_REDIRECT: case EB_REASON_TYPE_MISMATCH:
  case EB_REASON_CHECKSUM: case EB_REASON_PART_TOO_LARGE: case EB_REASON_MESSAGE_BUDGET:
  case EB_REASON_CTE_INVALID: case EB_REASON_CTE_UNKNOWN: case EB_REASON_SIZE_PARAM:
  case EB_REASON_EXPIRED:
    return TRUE;
  default:
    return FALSE;
  }
}

/* Everything the record reads from a reference of @r, in one place. */
static void
reference_pairs (const EbPlan *r, guint i, EbLogPairs *p)
{
  EbActionKind action = eb_plan_get_ref_action (r, i);
  eb_log_pairs_add_uint (p, "ref", i + 1);
  eb_log_pairs_add (p, "part", eb_plan_get_ref_path (r, i));
  eb_log_pairs_add (p, "access_type", eb_plan_get_ref_access_type (r, i));
  /* the URL as written, or the one made for a fetch (anon-ftp); never a
   * local file's path, never more than scheme and host */
  const char *url = eb_plan_get_ref_url (r, i);
  if (!url && action == EB_ACTION_FETCH)
    url = eb_plan_get_ref_target (r, i);
  g_autofree char *scheme = NULL, *host = NULL;
  eb_log_url_origin (url, &scheme, &host);
  const char *site = eb_plan_get_ref_site (r, i);
  if (!host && !url && site)
    host = g_ascii_strdown (site, -1);
  eb_log_pairs_add (p, "scheme", scheme);
  eb_log_pairs_add (p, "host", host);
  EbReason reason = eb_plan_get_ref_outcome (r, i);
  eb_log_pairs_add (p, "outcome", reason == EB_REASON_RESOLVED ? "resolved" : "left");
  if (reason != EB_REASON_RESOLVED)
    eb_log_pairs_add (p, "reason", eb_reason_token (reason));
  /* why, in the fetch's own words: the curl error, the HTTP status */
  if (reason != EB_REASON_RESOLVED && detail_loggable (reason, action))
    eb_log_pairs_add (p, "detail", eb_plan_get_ref_outcome_detail (r, i));
  GBytes *data = eb_plan_get_ref_data (r, i);
  if (reason == EB_REASON_RESOLVED) {
    eb_log_pairs_add (p, "type", eb_plan_get_ref_type (r, i));
    if (data)
      eb_log_pairs_add_uint (p, "bytes", g_bytes_get_size (data));
  }
}

/* A part of an externalize plan (eb_externalize_plan): where it is, what
 * it is, and whether it went to the store (with the store's host, never the
 * URL) or why it stays. */
static void
part_pairs (const EbPlan *r, guint i, EbLogPairs *p)
{
  EbReason reason = eb_plan_get_ref_outcome (r, i);
  eb_log_pairs_add (p, "part", eb_plan_get_ref_path (r, i));
  eb_log_pairs_add (p, "type", eb_plan_get_ref_type (r, i));
  eb_log_pairs_add (p, "bytes", eb_plan_get_ref_declared_size (r, i));
  eb_log_pairs_add (p, "outcome", reason == EB_REASON_RESOLVED ? "externalized" : "left");
  if (reason != EB_REASON_RESOLVED) {
    eb_log_pairs_add (p, "reason", eb_reason_token (reason));
    eb_log_pairs_add (p, "detail", eb_plan_get_ref_outcome_detail (r, i));
    return;
  }
  g_autofree char *scheme = NULL, *host = NULL;
  eb_log_url_origin (eb_plan_get_ref_url (r, i), &scheme, &host);
  eb_log_pairs_add (p, "scheme", scheme);
  eb_log_pairs_add (p, "host", host);
  eb_log_pairs_add (p, "sha256", eb_plan_get_ref_digest (r, i));
}

/* eb_log_message for a plan of eb_externalize_plan: event=externalize lines */
static void
log_externalize (const char *queue_id, const char *message_id, const EbPlan *result)
{
  guint n = eb_plan_get_n_refs (result);
  EbReason reason = eb_plan_get_reason (result);
  if (!n && reason == EB_REASON_RESOLVED)
    return;
  g_autoptr (EbLogPairs) msg = eb_log_pairs_new ();
  eb_log_pairs_add (msg, "event", "externalize");
  eb_log_pairs_add (msg, "queue_id", queue_id);
  eb_log_pairs_add (msg, "msgid", message_id);
  eb_log_pairs_add_uint (msg, "parts", n);
  eb_log_pairs_add_uint (msg, "externalized", eb_plan_get_n_resolved (result));
  eb_log_pairs_add (msg, "changed", eb_plan_get_changed (result) ? "yes" : "no");
  if (reason != EB_REASON_RESOLVED)
    eb_log_pairs_add (msg, "reason", eb_reason_token (reason));
  eb_log_emit (LOG_INFO, NULL, msg);
  for (guint i = 0; i < n; i++) {
    g_autoptr (EbLogPairs) p = eb_log_pairs_new ();
    eb_log_pairs_add (p, "event", "externalize");
    eb_log_pairs_add (p, "queue_id", queue_id);
    eb_log_pairs_add (p, "msgid", message_id);
    part_pairs (result, i, p);
    eb_log_emit (LOG_INFO, NULL, p);
  }
}

void
eb_log_message (const char *queue_id, const char *message_id, const EbPlan *result)
{
  g_return_if_fail (result != NULL);
  if (eb_plan_get_externalized (result)) {
    log_externalize (queue_id, message_id, result);
    return;
  }
  guint n = eb_plan_get_n_refs (result);
  guint removed = eb_plan_get_n_removed (result);
  EbReason reason = eb_plan_get_reason (result);
  if (!n && !removed && reason == EB_REASON_RESOLVED)
    return;
  g_autoptr (EbLogPairs) msg = eb_log_pairs_new ();
  eb_log_pairs_add (msg, "queue_id", queue_id);
  eb_log_pairs_add (msg, "msgid", message_id);
  eb_log_pairs_add_uint (msg, "references", n);
  eb_log_pairs_add_uint (msg, "resolved", eb_plan_get_n_resolved (result));
  eb_log_pairs_add (msg, "changed", eb_plan_get_changed (result) ? "yes" : "no");
  if (reason != EB_REASON_RESOLVED)
    eb_log_pairs_add (msg, "reason", eb_reason_token (reason));
  if (removed)
    eb_log_pairs_add_uint (msg, "trace_removed", removed);
  eb_log_emit (LOG_INFO, NULL, msg);
  for (guint i = 0; i < n; i++) {
    g_autoptr (EbLogPairs) p = eb_log_pairs_new ();
    eb_log_pairs_add (p, "queue_id", queue_id);
    eb_log_pairs_add (p, "msgid", message_id);
    reference_pairs (result, i, p);
    eb_log_emit (LOG_INFO, NULL, p);
  }
}
