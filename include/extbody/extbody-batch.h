/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody-batch.h - mailboxes: batch runs over mbox and Maildir.
 *
 * Part of libextbody's public API; include <extbody/extbody.h>, which
 * includes every header of the API. */
#pragma once
#include <extbody/extbody-base.h>
#include <extbody/extbody-config.h>
#include <extbody/extbody-fetch.h>
#include <extbody/extbody-store.h>
#include <extbody/extbody-plan.h>

G_BEGIN_DECLS

/**
 * SECTION:extbody-batch
 * @title: Mailboxes and statistics
 * @short_description: mailboxes: batch runs over mbox and Maildir
 * @include: extbody/extbody.h
 */

/* ---- batch and statistics ------------------------------------------------
 *
 * EbConfig, EbFetcher, EbPlan, EbRewriteFlags and EbReason are
 * declared in their own sections (configuration, fetcher, rewrite, reasons).
 */

/* EbStats: thread-safe counters that an administrator and a front end share: messages
 * scanned, messages skipped, messages changed, references, references
 * resolved, references left alone by reason, bytes of input, and the fetches
 * made for those messages (by outcome, bytes, cache hits, a latency
 * histogram). They only grow: one EbStats for a process's lifetime gives the
 * counters Prometheus expects (eb_metrics_write_prometheus()), across reloads.
 */
typedef struct _EbStats EbStats;

/**
 * eb_stats_new:
 *
 * Returns: (transfer full): counters, all zero.
 */
EXTBODY_API EbStats *eb_stats_new (void);

/**
 * eb_stats_free:
 * @stats: (nullable) (transfer full): the counters
 */
EXTBODY_API void eb_stats_free (EbStats *stats);

/**
 * eb_stats_add_result:
 * @stats: the counters
 * @result: (nullable): what eb_rewrite_plan() decided for one message; %NULL
 *   for a message that could not be read
 *
 * Counts one scanned message: its references, those resolved and those left
 * by reason. A message not even parsed (too large) counts its own reason once.
 * Safe to call from several threads.
 */
EXTBODY_API void eb_stats_add_result (EbStats *stats, const EbPlan *result);

/**
 * eb_stats_add_skipped:
 * @stats: the counters
 *
 * Counts one mailbox entry skipped (not a message, hard-linked, gone).
 */
EXTBODY_API void eb_stats_add_skipped (EbStats *stats);

/**
 * eb_stats_add_changed:
 * @stats: the counters
 * @n: messages
 *
 * Counts @n messages changed (or that would change, in a dry run).
 */
EXTBODY_API void eb_stats_add_changed (EbStats *stats, guint64 n);

/**
 * eb_stats_add_bytes:
 * @stats: the counters
 * @n: bytes
 *
 * Counts @n bytes of input.
 */
EXTBODY_API void eb_stats_add_bytes (EbStats *stats, guint64 n);

/**
 * eb_stats_get_messages:
 * @stats: the counters
 *
 * Returns: the messages scanned (skipped entries not included).
 */
EXTBODY_API guint64 eb_stats_get_messages (EbStats *stats);

/**
 * eb_stats_get_skipped:
 * @stats: the counters
 *
 * Returns: the mailbox entries skipped.
 */
EXTBODY_API guint64 eb_stats_get_skipped (EbStats *stats);

/**
 * eb_stats_get_changed:
 * @stats: the counters
 *
 * Returns: the messages changed.
 */
EXTBODY_API guint64 eb_stats_get_changed (EbStats *stats);

/**
 * eb_stats_get_references:
 * @stats: the counters
 *
 * Returns: the external-body references found.
 */
EXTBODY_API guint64 eb_stats_get_references (EbStats *stats);

/**
 * eb_stats_get_resolved:
 * @stats: the counters
 *
 * Returns: the references resolved.
 */
EXTBODY_API guint64 eb_stats_get_resolved (EbStats *stats);

/**
 * eb_stats_get_parts:
 * @stats: the counters
 *
 * Returns: the parts eb_externalize_plan() found to take out (its candidates).
 */
EXTBODY_API guint64 eb_stats_get_parts (EbStats *stats);

/**
 * eb_stats_get_externalized:
 * @stats: the counters
 *
 * Returns: the parts stored and replaced by references.
 */
EXTBODY_API guint64 eb_stats_get_externalized (EbStats *stats);

/**
 * eb_stats_get_externalized_bytes:
 * @stats: the counters
 *
 * Returns: the decoded bytes of the parts stored and replaced.
 */
EXTBODY_API guint64 eb_stats_get_externalized_bytes (EbStats *stats);

/**
 * eb_stats_get_bytes:
 * @stats: the counters
 *
 * Returns: the bytes of input counted.
 */
EXTBODY_API guint64 eb_stats_get_bytes (EbStats *stats);

/**
 * eb_stats_get_left:
 * @stats: the counters
 * @reason: why: anything but %EB_REASON_RESOLVED
 *
 * Returns: the references (or whole messages not parsed) left alone for @reason.
 */
EXTBODY_API guint64 eb_stats_get_left (EbStats *stats, EbReason reason);

/**
 * eb_stats_format_summary:
 * @stats: the counters
 * @dry_run: say "would change" instead of "changed"
 *
 * One line (no newline) such as "12 messages scanned, 3 references, 1
 * resolved, 1 messages changed; left: fetch-off 2 (fetch = on)": the
 * references left by reason, most first (ties by token), each followed by the
 * configuration key that decides it where there is one.
 *
 * Returns: (transfer full): the line.
 */
EXTBODY_API char *eb_stats_format_summary (EbStats *stats, gboolean dry_run);

/**
 * eb_stats_get_fetches:
 * @stats: the counters
 * @outcome: %EB_REASON_RESOLVED for the fetches that brought data back, else
 *   why a fetch gave none
 *
 * Fetches are counted by eb_stats_add_result() from the messages' results:
 * one for each URL fetched from the network (a name lookup or a connection
 * made), redirects and a retry included in it; a URL taken from the fetcher's
 * cache is a cache hit instead, and one refused before any network use
 * (policy, rate limit) is counted among the references left only.
 *
 * Returns: the fetches that ended with @outcome.
 */
EXTBODY_API guint64 eb_stats_get_fetches (EbStats *stats, EbReason outcome);

/**
 * eb_stats_get_fetched_bytes:
 * @stats: the counters
 *
 * Returns: the body bytes that arrived over the network, for every fetch
 * (those stopped at a limit included).
 */
EXTBODY_API guint64 eb_stats_get_fetched_bytes (EbStats *stats);

/**
 * eb_stats_get_cache_hits:
 * @stats: the counters
 *
 * Returns: the URLs taken from the fetcher's cache (an earlier message's
 * fetch, or an earlier reference of the same message) instead of fetched.
 */
EXTBODY_API guint64 eb_stats_get_cache_hits (EbStats *stats);

/**
 * eb_metrics_format_prometheus:
 * @stats: the counters
 *
 * The counters in the Prometheus text exposition format (version 0.0.4), as
 * the node_exporter textfile collector reads them: a HELP and a TYPE line for
 * each metric; counters named with _total (extbody_messages_total,
 * extbody_skipped_total, extbody_messages_changed_total,
 * extbody_input_bytes_total, extbody_references_total,
 * extbody_references_resolved_total, extbody_left_total with a reason label
 * for every reason token, extbody_fetches_total with an outcome label,
 * extbody_fetched_bytes_total, extbody_fetch_cache_hits_total); and the
 * histogram extbody_fetch_duration_seconds (fixed buckets from 5 ms to 120 s,
 * _bucket{le=...}, _sum, _count). Label values are escaped as the format
 * says. A consistent snapshot: taken under the counters' lock.
 *
 * Returns: (transfer full): the text, ending with a newline.
 */
EXTBODY_API char *eb_metrics_format_prometheus (EbStats *stats);

/**
 * eb_metrics_write_prometheus:
 * @stats: the counters
 * @path: the file, usually NAME.prom in node_exporter's
 *   --collector.textfile.directory
 * @error: (nullable): where a failure goes
 *
 * Writes eb_metrics_format_prometheus() to @path atomically: into a temporary
 * file in the same directory (whose name does not end in .prom), flushed to
 * disk (fsync), then renamed over @path, mode 0644 whatever the umask, so that a reader sees the
 * old file or the new one, never a part of one. On failure @path is as it was
 * and no temporary file is left.
 *
 * Returns: %TRUE when written; %FALSE with @error (G_FILE_ERROR) set.
 */
EXTBODY_API gboolean eb_metrics_write_prometheus (EbStats *stats, const char *path, GError **error);

/**
 * eb_metrics_add_to_prometheus:
 * @stats: the counters of one run
 * @path: the file, NAME.prom in node_exporter's --collector.textfile.directory,
 *   of this writer alone
 * @writer: the value of the label writer="..." every sample of @path carries,
 *   so that its series differ from those of another writer's file in the same
 *   directory
 * @lock_timeout: the most seconds to wait for another run's lock
 * @error: (nullable): where a failure goes
 *
 * Adds @stats to the counters @path holds and writes the sums back, as
 * eb_metrics_write_prometheus() writes (atomically, mode 0644), under an
 * exclusive lock on @path with ".lock" appended: the counters of runs that
 * each start from zero only ever grow in @path, whether the runs come one
 * after the other or at once, as Prometheus expects of a counter. A missing
 * @path counts from zero; a @path that is not such counters of @writer is left
 * as it is and is an error (%G_FILE_ERROR_INVAL, naming the line).
 *
 * Returns: %TRUE when written; %FALSE with @error (G_FILE_ERROR) set.
 */
EXTBODY_API gboolean eb_metrics_add_to_prometheus (EbStats *stats, const char *path, const char *writer,
                                                 guint lock_timeout, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbStats, eb_stats_free)

/* EbBatch: what rewrite and inspect over mailboxes share: messages taken from an mbox
 * or a Maildir, planned by a bounded pool of worker threads with at most a
 * window of messages in flight, and handed back in input order on the calling
 * thread, their memory given back as the run goes. In %EB_BATCH_REWRITE mode
 * an mbox is locked and replaced crash-safely (mboxrd quoting, stale
 * Content-Length fields dropped, its framing kept) and each changed Maildir
 * message delivered anew; %EB_BATCH_DRY_RUN and %EB_BATCH_INSPECT change
 * nothing.
 */
typedef struct _EbBatch EbBatch;

/**
 * EbBatchMode:
 * @EB_BATCH_REWRITE: plan each message and write the changed ones back
 * @EB_BATCH_DRY_RUN: plan and count as a rewrite would; write nothing
 * @EB_BATCH_INSPECT: plan each message to describe it; write nothing, lock
 *   nothing, and take Maildir entries as they are (no hard-link check)
 */
typedef enum {
  EB_BATCH_REWRITE,
  EB_BATCH_DRY_RUN,
  EB_BATCH_INSPECT,
} EbBatchMode;

/**
 * EB_BATCH_ERROR:
 *
 * The error domain of a batch run. Its message is the line already handed
 * to the notice callback.
 */
#define EB_BATCH_ERROR (eb_batch_error_quark ())

/**
 * eb_batch_error_quark:
 *
 * The quark of %EB_BATCH_ERROR.
 *
 * Returns: the error domain.
 */
EXTBODY_API GQuark eb_batch_error_quark (void);

/**
 * EbBatchError:
 * @EB_BATCH_ERROR_NOINPUT: the mailbox cannot be opened, or is not one
 * @EB_BATCH_ERROR_DATAERR: the file is not an mbox
 * @EB_BATCH_ERROR_CANTCREAT: the mailbox cannot be replaced (not writable,
 *   hard-linked, no lock file can be made beside it)
 * @EB_BATCH_ERROR_IOERR: reading or writing failed
 * @EB_BATCH_ERROR_TEMPFAIL: locked by another, or changed by another
 *   meanwhile: run again
 *
 * Codes for the failures a caller acts on, one per sysexits(3) status.
 */
typedef enum {
  EB_BATCH_ERROR_NOINPUT,
  EB_BATCH_ERROR_DATAERR,
  EB_BATCH_ERROR_CANTCREAT,
  EB_BATCH_ERROR_IOERR,
  EB_BATCH_ERROR_TEMPFAIL,
} EbBatchError;

/**
 * EbBatchProgressFunc:
 * @done: messages planned so far
 * @total: messages in the mailbox
 * @bytes_done: bytes of them
 * @total_bytes: bytes of the mailbox (0 while unknown)
 * @final: the last call of the run
 * @user_data: as given
 *
 * Called on the calling thread about five times a second, and once at the end.
 */
typedef void (*EbBatchProgressFunc) (guint done, guint total, guint64 bytes_done,
                                     guint64 total_bytes, gboolean final, gpointer user_data);

/**
 * EbBatchMessageFunc:
 * @number: the message's number in its mailbox, from 1 (a Maildir's skipped
 *   entries take their numbers too)
 * @source: the mbox, or the Maildir message file
 * @mbox_offset: the byte offset of its From_ line, or -1 in a Maildir
 * @message_id: (nullable): its Message-ID (looked up only when it has references)
 * @result: what was decided for it
 * @user_data: as given
 *
 * Called for every message planned, in input order, on the calling thread.
 */
typedef void (*EbBatchMessageFunc) (guint number, const char *source, gint64 mbox_offset,
                                    const char *message_id, const EbPlan *result,
                                    gpointer user_data);

/**
 * EbBatchNoticeFunc:
 * @line: one line for people (no newline), e.g. "skipped PATH: not a regular file"
 * @user_data: as given
 *
 * Called on the calling thread for each entry skipped, each message that
 * cannot be read or written, and each failure of the run, in order.
 */
typedef void (*EbBatchNoticeFunc) (const char *line, gpointer user_data);

/**
 * eb_batch_new:
 * @config: the configuration; kept (not copied) for the batch's lifetime
 * @fetcher: (nullable): the fetcher, kept likewise; %NULL: resolve data: URLs only
 * @mode: rewrite, dry run or inspect
 *
 * Returns: (transfer full): a batch with one job, not recursive, no backup.
 */
EXTBODY_API EbBatch *eb_batch_new (const EbConfig *config, EbFetcher *fetcher, EbBatchMode mode);

/**
 * eb_batch_free:
 * @batch: (nullable) (transfer full): the batch
 */
EXTBODY_API void eb_batch_free (EbBatch *batch);

/**
 * eb_batch_set_mode:
 * @batch: the batch
 * @mode: rewrite, dry run or inspect, for the runs that follow
 */
EXTBODY_API void eb_batch_set_mode (EbBatch *batch, EbBatchMode mode);

/**
 * eb_batch_set_jobs:
 * @batch: the batch
 * @jobs: messages planned at once (worker threads), at least 1
 */
EXTBODY_API void eb_batch_set_jobs (EbBatch *batch, guint jobs);

/**
 * eb_batch_set_recursive:
 * @batch: the batch
 * @recursive: with a Maildir, its Maildir++ subfolders too
 */
EXTBODY_API void eb_batch_set_recursive (EbBatch *batch, gboolean recursive);

/**
 * eb_batch_set_backup:
 * @batch: the batch
 * @path: (nullable): where the original mbox is kept (linked) when it is replaced
 */
EXTBODY_API void eb_batch_set_backup (EbBatch *batch, const char *path);

/**
 * eb_batch_set_flags:
 * @batch: the batch
 * @flags: the flags each message is planned with, e.g. %EB_REWRITE_NO_FETCH
 */
EXTBODY_API void eb_batch_set_flags (EbBatch *batch, EbRewriteFlags flags);

/**
 * eb_batch_set_progress_func:
 * @batch: the batch
 * @func: (nullable) (scope notified): called as the run goes
 * @user_data: for @func
 */
EXTBODY_API void eb_batch_set_progress_func (EbBatch *batch, EbBatchProgressFunc func,
                                             gpointer user_data);

/**
 * eb_batch_set_message_func:
 * @batch: the batch
 * @func: (nullable) (scope notified): called for every message, in order
 * @user_data: for @func
 */
EXTBODY_API void eb_batch_set_message_func (EbBatch *batch, EbBatchMessageFunc func,
                                            gpointer user_data);

/**
 * eb_batch_set_notice_func:
 * @batch: the batch
 * @func: (nullable) (scope notified): called for each line for people
 * @user_data: for @func
 */
EXTBODY_API void eb_batch_set_notice_func (EbBatch *batch, EbBatchNoticeFunc func,
                                           gpointer user_data);

/**
 * eb_batch_run_mbox:
 * @batch: the batch
 * @path: the mbox: a regular file, never through a symbolic link
 * @error: an %EB_BATCH_ERROR
 *
 * Every message of the mbox @path. In %EB_BATCH_REWRITE mode the mbox is
 * locked for the run and, when a message changed, replaced by the new one.
 *
 * Returns: %FALSE with @error when the run failed; the mailbox is then as it was.
 */
EXTBODY_API gboolean eb_batch_run_mbox (EbBatch *batch, const char *path, GError **error);

/**
 * eb_batch_run_maildir:
 * @batch: the batch
 * @path: the Maildir (cur/, new/ and tmp/)
 * @error: an %EB_BATCH_ERROR
 *
 * Every message of the Maildir @path. A message that cannot be read or
 * replaced is told to the notice callback and the run goes on; the error
 * returned at the end says the worst.
 *
 * Returns: %FALSE with @error when any message failed or the run could not start.
 */
EXTBODY_API gboolean eb_batch_run_maildir (EbBatch *batch, const char *path, GError **error);

/**
 * eb_batch_get_complete:
 * @batch: the batch
 *
 * Returns: whether the last run went through every message of its mailbox
 *   (so its statistics describe the mailbox), even when writing then failed.
 */
EXTBODY_API gboolean eb_batch_get_complete (EbBatch *batch);

/**
 * eb_batch_get_stats:
 * @batch: the batch
 *
 * The counters of every run of @batch so far.
 *
 * Returns: (transfer none): the counters.
 */
EXTBODY_API EbStats *eb_batch_get_stats (EbBatch *batch);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbBatch, eb_batch_free)

/**
 * eb_maildir_sniff:
 * @path: (type filename): a directory
 *
 * Whether @path is a Maildir: it holds the directories cur/, new/ and tmp/.
 * Nothing is read but their existence.
 *
 * Returns: TRUE when it is one.
 */
EXTBODY_API gboolean eb_maildir_sniff (const char *path);

/**
 * eb_maildir_problem:
 * @path: (type filename): a directory
 *
 * What keeps @path from being a Maildir extbody can read and rewrite, as one
 * line for an administrator: @path cannot be opened (with the system's
 * words), or which of cur/, new/ and tmp/ is missing, not a directory, or
 * cannot be opened. A symbolic link there is no problem here: it is never
 * followed (the Maildir walk skips it with a line of its own, and a rewrite
 * refuses to write through it).
 *
 * Returns: (transfer full) (nullable): the line, or %NULL when cur/, new/
 *   and tmp/ are there and can be opened.
 */
EXTBODY_API char *eb_maildir_problem (const char *path);

/**
 * eb_cleanup_run:
 *
 * Unlink every file a batch run in progress must not leave behind: the new
 * mbox being written beside the old one and the dot-lock. Async-signal-safe:
 * for a handler of SIGTERM, SIGINT or SIGHUP, which then lets the signal take
 * its default course. The mailbox itself stays as it was.
 */
EXTBODY_API void eb_cleanup_run (void);

/**
 * eb_batch_set_store:
 * @batch: the batch
 * @store: (nullable): kept (not copied) for the batch's lifetime; non-%NULL:
 *   every message is planned with eb_externalize_plan() (in a dry run with
 *   %EB_EXTERNALIZE_NO_STORE added), and the batch's rewrite flags are not used
 * @flags: the flags each message is externalized with
 */
EXTBODY_API void eb_batch_set_store (EbBatch *batch, EbStore *store, EbExternalizeFlags flags);

G_END_DECLS
