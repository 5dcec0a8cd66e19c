/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-rewrite.h - a rewrite's plan: one message in, one plan out.
 *
 * The pre-check (no "external-body" anywhere: nothing to do, no parse), the
 * size limit, the message's walk (eb-message), a decision per reference
 * (eb-resolve), the fetches, all at once, and each new part built. The plan
 * (eb-plan) is written by its own writers: every byte outside a replaced
 * entity is copied from the input verbatim, and a message in which nothing
 * is resolved is written byte for byte as it came in.
 */
#pragma once
#include <gio/gio.h>
#include "eb-config.h"
#include "eb-message.h"
#include "eb-plan.h"
#include "eb-fetch.h"

G_BEGIN_DECLS

/* EbRewriteFlags, EB_FILTER_FIELD, eb_rewrite_plan() and eb_rewrite() are
 * public (extbody-plan.h); the plan they make is eb-plan's. */

/* What eb_rewrite_plan() returns for @buf when the pre-check finds no
 * "external-body" in it and @flags has no EB_REWRITE_STRIP_TRACE, without
 * looking at the message again: the caller (the mbox split, which looks for
 * it in the same pass) has made sure of it. */
EbPlan *eb_rewrite_plan_unmatched (const char *buf, gsize len);

G_END_DECLS
