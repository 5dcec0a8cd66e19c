/* eb-inspect.h - describe references for people (an aligned table) and for
 * programs (one JSON object per reference per line). Field names are documented
 * in extbody(1). */
#pragma once
#include <glib.h>
#include "eb-rewrite.h"

G_BEGIN_DECLS

/* Text that is safe to print on one line: control characters, backslash and
 * invalid UTF-8 escaped; cut to @max bytes (0: no cut) with "..." and the length. */
char *eb_inspect_printable (const char *s, gsize max);

/* One JSON object (no newline) for reference @i of @result in message @source
 * (nullable); in a mailbox, @mbox_offset (the From_ line's byte offset, or -1)
 * and @message_id (nullable) identify the message. Returns: (transfer full). */
char *eb_inspect_json (const char *source, gint64 mbox_offset, const char *message_id,
                       const EbRewriteResult *result, guint i);

/* A table under construction. */
typedef struct _EbTable EbTable;
EbTable *eb_table_new (gboolean with_source);
void eb_table_add (EbTable *table, const char *source, const EbRewriteResult *result, guint i);
/* Returns: (transfer full): the aligned table with a heading line. */
char *eb_table_finish (EbTable *table);
void eb_table_free (EbTable *table);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbTable, eb_table_free)

/* The --report line for reference @i (no newline). */
char *eb_inspect_report_line (const EbRewriteResult *result, guint i);

G_END_DECLS
