/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody-inspect.h - inspect: the report of a message's references.
 *
 * Part of libextbody's public API; include <extbody/extbody.h>, which
 * includes every header of the API. */
#pragma once
#include <extbody/extbody-base.h>
#include <extbody/extbody-plan.h>

G_BEGIN_DECLS

/**
 * SECTION:extbody-inspect
 * @title: Inspect
 * @short_description: inspect: the report of a message's references
 * @include: extbody/extbody.h
 */

/* ---- inspect ---------------------------------------------------------------- */

/**
 * eb_inspect_printable:
 * @s: (nullable): UTF-8 or not
 * @max: cut at this many bytes; 0: no cut
 *
 * Text that is safe to print on one line: control characters, backslash and
 * invalid UTF-8 escaped; cut to @max bytes with "..." and the length.
 *
 * Returns: (transfer full): the text; "-" for NULL.
 */
EXTBODY_API char *eb_inspect_printable (const char *s, gsize max);

/**
 * eb_inspect_json:
 * @source: (nullable): the message's file name
 * @mbox_offset: in an mbox, the byte offset of the message's From_ line; else -1
 * @message_id: (nullable): the message's Message-ID
 * @result: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * One JSON object (no newline) describing reference @i, with the field names
 * of `extbody inspect --json` (extbody(1)).
 *
 * Returns: (transfer full): the JSON text.
 */
EXTBODY_API char *eb_inspect_json (const char *source, gint64 mbox_offset, const char *message_id,
                                   const EbPlan *result, guint i);

/**
 * eb_inspect_report_line:
 * @result: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * The `extbody rewrite --report` line for reference @i (no newline), such as
 * "part 2: access-type=url data:...: resolved (image/png, 79 bytes, base64)".
 *
 * Returns: (transfer full): the line.
 */
EXTBODY_API char *eb_inspect_report_line (const EbPlan *result, guint i);

/**
 * EbTable:
 *
 * An aligned table of references, as `extbody inspect` prints it, under
 * construction. Opaque.
 */
typedef struct _EbTable EbTable;

/**
 * eb_table_new:
 * @with_source: the table has a column for the message's file name
 *
 * An empty table.
 *
 * Returns: (transfer full): the table.
 */
EXTBODY_API EbTable *eb_table_new (gboolean with_source);

/**
 * eb_table_add:
 * @table: a table
 * @source: (nullable): the message's file name, for the source column
 * @result: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * Add a row for reference @i.
 */
EXTBODY_API void eb_table_add (EbTable *table, const char *source, const EbPlan *result,
                               guint i);

/**
 * eb_table_finish:
 * @table: a table
 *
 * The aligned table, with a heading line.
 *
 * Returns: (transfer full): the text.
 */
EXTBODY_API char *eb_table_finish (EbTable *table);

/**
 * eb_table_free:
 * @table: (nullable) (transfer full): a table
 *
 * Free @table.
 */
EXTBODY_API void eb_table_free (EbTable *table);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbTable, eb_table_free)

G_END_DECLS
