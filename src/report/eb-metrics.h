/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-metrics.h - the counters of an EbStats in the Prometheus text exposition
 * format (version 0.0.4), for the node_exporter textfile collector, and the
 * atomic write of that file. eb_metrics_format_prometheus() and
 * eb_metrics_write_prometheus() are public (extbody.h, "batch and statistics").
 *
 * The text is pure (a snapshot in, a string out); the write is the only I/O:
 * a temporary file beside the target, fsync, rename, so a scrape never reads
 * half a file.
 */
#pragma once
#include <glib.h>
#include "eb-stats.h"

G_BEGIN_DECLS

/* Append @value to @out escaped as a label value: backslash, double quote
 * and line feed become \\, \" and \n. */
void eb_metrics_escape_label (GString *out, const char *value);

/* Append @text to @out escaped as a HELP text: backslash and line feed
 * become \\ and \n. */
void eb_metrics_escape_help (GString *out, const char *text);

/* The exposition text of @snapshot. Returns: (transfer full). */
char *eb_metrics_format (const EbStatsSnapshot *snapshot);

/* The same, every sample with the label writer="@writer" first (NULL: none,
 * as eb_metrics_format), so that two files in one textfile directory never
 * hold the same series. Returns: (transfer full). */
char *eb_metrics_format_for (const EbStatsSnapshot *snapshot, const char *writer);

/* The counters of @text, as eb_metrics_format_for (@writer) writes them
 * (every sample must carry that writer label, or none when @writer is NULL).
 * Pure. Returns: FALSE, with the 1-based line in @bad_line, when a line is
 * not such a sample. */
gboolean eb_metrics_parse (const char *text, const char *writer, EbStatsSnapshot *out, guint *bad_line);

/* Add every counter of @s to @to. */
void eb_metrics_snapshot_add (EbStatsSnapshot *to, const EbStatsSnapshot *s);

/* Write @text to @path atomically (PATH.XXXXXX, fsync, rename), mode 0644
 * whatever the process's umask. */
gboolean eb_metrics_write_file (const char *path, const char *text, GError **error);

/* The mailbox runs' file (mailbox_metrics_file): under an exclusive lock on
 * PATH.lock (waited for up to @lock_timeout seconds), read @path's counters
 * (none when it does not exist), add @stats' and write the sum back with the
 * label writer="@writer": the counters only grow, however many runs there
 * are, one after the other or at once. A file that is not such counters is
 * left as it is, and is an error. */
gboolean eb_metrics_accumulate (EbStats *stats, const char *path, const char *writer, guint lock_timeout,
                                GError **error);

G_END_DECLS
