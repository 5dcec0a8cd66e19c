/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-inspect.h - describe references for people (an aligned table) and for
 * programs (one JSON object per reference per line). Field names are documented
 * in extbody(1). */
#pragma once
#include <glib.h>
#include "eb-rewrite.h"

G_BEGIN_DECLS

/* eb_inspect_printable, eb_inspect_json, eb_inspect_report_line and EbTable
 * (opaque: eb_table_new, _add, _finish, _free) are public (extbody.h). */

G_END_DECLS
