/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-header-edit.c - one edit of a message header (see eb-header-edit.h). */
#include "eb-header-edit.h"

void
eb_header_edit_free (EbHeaderEdit *edit)
{
  if (!edit)
    return;
  g_free (edit->name);
  g_free (edit->value);
  g_free (edit);
}

EbHeaderEditKind
eb_header_edit_get_kind (const EbHeaderEdit *edit)
{
  g_return_val_if_fail (edit != NULL, EB_HEADER_ADD);
  return edit->kind;
}

const char *
eb_header_edit_get_name (const EbHeaderEdit *edit)
{
  g_return_val_if_fail (edit != NULL, NULL);
  return edit->name;
}

guint
eb_header_edit_get_index (const EbHeaderEdit *edit)
{
  g_return_val_if_fail (edit != NULL, 0);
  return edit->kind == EB_HEADER_ADD ? 0 : edit->index;
}

const char *
eb_header_edit_get_value (const EbHeaderEdit *edit)
{
  g_return_val_if_fail (edit != NULL, NULL);
  return edit->kind == EB_HEADER_DELETE ? NULL : edit->value;
}
