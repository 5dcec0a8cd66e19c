/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-inspect.h - describe references for people (an aligned table) and for
 * programs (one JSON object per reference per line). Field names are documented
 * in extbody(1). */
#pragma once
#include <glib.h>
#include "eb-rewrite.h"

G_BEGIN_DECLS

/* eb_inspect_printable, eb_inspect_json and eb_inspect_report_line are public
 * (extbody.h); EbTable is in eb-table.h. */

/* The word the table and JSON show for what is done with a reference of
 * @reason: "fetch", "resolve" or "leave". */
const char *eb_inspect_action (EbReason reason);

/* What the table and the report line show for reference @i of @result: its
 * URL, or its access-type parameters, made printable and cut to @max.
 * Returns: (transfer full). */
char *eb_inspect_target (const EbPlan *result, guint i, gsize max);

G_END_DECLS
