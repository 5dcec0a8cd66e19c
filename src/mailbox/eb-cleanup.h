/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-cleanup.h - files removed when a signal stops the process.
 *
 * A fixed table of paths (the new mailbox being written, the dot-lock) that a
 * signal handler unlinks; adding and removing take a mutex, running does not.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* Files that must not outlive the process when a signal stops it: the new
 * mailbox being written and the dot-lock. eb_cleanup_add() returns a slot for
 * eb_cleanup_remove() (-1 when all are taken: the file is then not covered);
 * eb_cleanup_run() unlinks every covered file and is async-signal-safe, for a
 * SIGTERM, SIGINT or SIGHUP handler (public: extbody.h). */
int  eb_cleanup_add (const char *path);
void eb_cleanup_remove (int slot);
void eb_cleanup_run (void);

G_END_DECLS
