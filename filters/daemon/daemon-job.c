/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-job.c - one message's work, the same on every door: planned with
 * the flags of its profile (eb_profile_rewrite_flags: in transit, the
 * milter's body-only transit, at rest), its fetches under the door's cancel
 * hooks, written where its size says (memory, or a spool file of its own),
 * added to the daemon's counts and logged. A door reads the message, makes
 * a DaemonJob, calls daemon_job_run and sends what it gives in its own
 * protocol; nothing of a message's planning is a door's own. */
#include <errno.h>
#include <unistd.h>

#include "daemon.h"

/* Plan @job's message under its hooks. */
static EbPlan *
job_plan (const DaemonJob *job)
{
  const Gen *gen = job->gen;
  if (job->progress)
    eb_fetch_set_thread_progress (job->progress, job->progress_data);
  if (job->cancelled)
    eb_fetch_set_thread_cancel (job->cancelled);
  EbPlan *plan;
  if (job->externalize)
    plan = eb_externalize_plan (job->buf, job->len, gen->config, gen->store,
                                eb_profile_externalize_flags (job->profile, gen->config));
  else
    plan = eb_rewrite_plan (job->buf, job->len, gen->config, gen->fetcher,
                            eb_profile_rewrite_flags (job->profile, gen->config));
  eb_fetch_set_thread_cancel (NULL);
  eb_fetch_set_thread_progress (NULL, NULL);
  return plan;
}

/* Write what @job's profile writes of @o->plan: the new body (the milter's
 * transit), or the new message whole; nothing when it does not change, the
 * door then sends what it read. The stream is a spool file of its own when
 * the message was spooled, or when it and what its references bring pass
 * milter_spill_size. */
static gboolean
job_write (const DaemonJob *job, DaemonJobOutput *o, GError **error)
{
  gboolean body = job->profile == EB_PROFILE_TRANSIT_BODY;
  if (body ? eb_plan_get_n_resolved (o->plan) == 0 : !eb_plan_get_changed (o->plan))
    return TRUE;
  guint64 grows = 0;
  for (guint i = 0; i < eb_plan_get_n_refs (o->plan); i++)
    grows += eb_plan_get_ref_size (o->plan, i);
  o->out = daemon_spool_output (job->len + grows, job->gen->keys.milter_spill_size, job->spooled, &o->out_fd);
  if (!(body ? eb_plan_write_body (o->plan, o->out, error) : eb_plan_write (o->plan, o->out, error)))
    return FALSE;
  o->out_len = o->out_fd >= 0 ? (guint64) lseek (o->out_fd, 0, SEEK_CUR)
                              : g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (o->out));
  return TRUE;
}

gboolean
daemon_job_run (const DaemonJob *job, DaemonJobOutput *o, GError **error)
{
  *o = (DaemonJobOutput) { .out_fd = -1 };
  o->plan = job_plan (job);
  if (job->gone && job->gone (job->progress_data)) {
    /* nobody to answer: not counted as a message */
    g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                         "the client closed the connection: the fetches were cancelled");
    return FALSE;
  }
  if (!job_write (job, o, error))
    return FALSE;
  eb_stats_add_result (daemon_main_stats, o->plan);
  eb_stats_add_bytes (daemon_main_stats, job->len);
  /* the milter's change counts once the MTA has taken it (milter-session.c) */
  if (job->profile != EB_PROFILE_TRANSIT_BODY && eb_plan_get_changed (o->plan))
    eb_stats_add_changed (daemon_main_stats, 1);
  if (eb_plan_get_n_refs (o->plan) || eb_plan_get_reason (o->plan) != EB_REASON_RESOLVED) {
    /* one key=value line for the message, one per reference (host, never the URL) */
    g_autofree char *mid = eb_plan_get_message_id (o->plan);
    g_autofree char *qid = job->queue_id ? job->queue_id (job->progress_data) : NULL;
    eb_log_message (qid, mid, o->plan);
  }
  return TRUE;
}

void
daemon_job_output_clear (DaemonJobOutput *o)
{
  g_clear_pointer (&o->plan, eb_plan_free);
  if (o->out) {
    /* unbuffered: closing it closes its file */
    g_output_stream_close (o->out, NULL, NULL);
    g_clear_object (&o->out);
  }
  o->out_fd = -1;
  o->out_len = 0;
}
