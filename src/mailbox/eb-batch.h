/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-batch.h - every message of a mailbox through one ordered, bounded pool
 * (the public part is in <extbody/extbody.h>, "batch and statistics").
 *
 * The pool: the calling thread hands messages to GThreadPool workers in input
 * order, at most a window of them in flight (eb_batch_window), waits for the
 * oldest, consumes it (writes it, or its original bytes, calls the message
 * callback) and frees it before the next is handed out, so memory follows the
 * window and not the mailbox. A mapped mbox gives its pages back as the run
 * passes them. An mbox's split (read with pread(), a piece at a time, on the
 * workers) also looks for "external-body" as the pre-check does: a message
 * without it takes no worker and is never mapped, its plan made by the
 * calling thread in its turn (not with EB_REWRITE_NO_PRECHECK or
 * EB_REWRITE_STRIP_TRACE, a progress callback or a work hook). With a store
 * (externalize), an mbox's message shorter than externalize_min_size is
 * planned so too, unparsed (not with EB_REWRITE_NO_PRECHECK, eb_batch_set_flags).
 */
#pragma once
#include "eb-config.h"
#include "eb-fetch.h"
#include "eb-reason.h"
#include "eb-rewrite.h"
#include "eb-stats.h"
#include <extbody/extbody.h>

G_BEGIN_DECLS

/* The most messages in flight at once with @jobs workers. */
guint eb_batch_window (guint jobs);

/* For tests: called on the worker thread before message @number (from 1) is
 * planned. */
typedef void (*EbBatchWorkHook) (guint number, gpointer data);
void eb_batch_set_work_hook (EbBatch *batch, EbBatchWorkHook hook, gpointer data);


G_END_DECLS
