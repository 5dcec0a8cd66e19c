/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-metrics.h - the counters of an EbStats in the Prometheus text exposition
 * format (version 0.0.4), for the node_exporter textfile collector, and the
 * atomic write of that file. eb_stats_format_prometheus() and
 * eb_stats_write_prometheus() are public (extbody.h, "batch and statistics").
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

G_END_DECLS
