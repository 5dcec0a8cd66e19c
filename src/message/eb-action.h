/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-action.h - what becomes of one reference (leave, fetch, read a local
 * file, decode a data: URL), as eb_resolve_decide() (eb-resolve.h) decides it.
 * EbActionKind is public (extbody.h).
 */
#pragma once
#include <glib.h>
#include <extbody/extbody.h>

G_BEGIN_DECLS

/* What becomes of one reference: decided once, from the reference and the
 * configuration alone (no I/O). The fetcher executes FETCH actions, the local
 * reader LOCAL_FILE ones; eb_resolve() builds the new part from the data. */

typedef struct {
  EbActionKind kind;
  EbReason     reason;   /* LEAVE: why; otherwise RESOLVED */
  char        *detail;   /* LEAVE: (nullable) one line */
  char        *target;   /* FETCH: the URL; LOCAL_FILE: the path; otherwise NULL */
} EbAction;

void eb_action_free (EbAction *action);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbAction, eb_action_free)

G_END_DECLS
