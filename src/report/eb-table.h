/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-table.h - the aligned table inspect prints for people: one row per
 * reference (PART, ACCESS, URL / PARAMETERS, ACTION, REASON, and SOURCE when
 * several messages are listed), fitted to an 80-column terminal. */
#pragma once
#include <glib.h>
#include "eb-rewrite.h"

G_BEGIN_DECLS

/* EbTable (opaque: eb_table_new, _add, _finish, _free) is public (extbody.h). */

G_END_DECLS
