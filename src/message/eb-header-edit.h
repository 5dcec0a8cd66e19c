/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-header-edit.h - one edit of a message header, as a milter makes it: add a
 * field, change or delete the Nth field of a name. eb_plan_header_edits()
 * makes them; EbHeaderEdit (opaque), its accessors and eb_header_edit_free()
 * are public (extbody.h).
 */
#pragma once
#include <glib.h>
#include <extbody/extbody.h>

G_BEGIN_DECLS

struct _EbHeaderEdit {
  EbHeaderEditKind kind;
  char            *name;
  guint            index;   /* CHANGE, DELETE: 1-based among the fields of that name
                               in the message header as it came */
  char            *value;   /* CHANGE, ADD: the value after the colon, its folds as
                               "\n" and white space (as a milter passes values) */
};

G_END_DECLS
