/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-action.c - what becomes of one reference (see eb-action.h). */
#include "eb-action.h"

void
eb_action_free (EbAction *action)
{
  if (!action)
    return;
  g_free (action->detail);
  g_free (action->target);
  g_free (action);
}
