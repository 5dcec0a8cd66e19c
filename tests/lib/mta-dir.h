/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-dir.h - the directory a test behind a real MTA keeps everything in
 * (its MTA's spool and configuration, the daemon's socket and log, the
 * messages it sends): made fresh, readable by everyone (an MTA reads and runs
 * things there as its own users), removed by the watchdog (test-server.h)
 * should the test die, and removed at its end; and the directories in it that
 * an MTA's own user runs programs from.
 *
 * Paths returned are newly allocated (g_free).
 */
#pragma once

#include <glib.h>

/* Make the directory "extbody-@name-XXXXXX" in g_get_tmp_dir(), mode 0755,
 * and a watchdog that removes it (rm -rf) should the test die, stored in
 * @watchdog; fails the test when it cannot be made. Returns: its path. */
char *mta_dir_make (const char *name, guint *watchdog);

/* Remove @dir (rm -rf), then its @watchdog (mta_dir_make()). */
void mta_dir_remove (const char *dir, guint watchdog);

/* Make the directory @dir/@name (it must not exist yet), mode 0755 whatever
 * the umask: for the copies (test_copy_for_everyone()) of what an MTA runs as
 * its own user, who may not reach the checkout nor the build tree (root's
 * 0700 home). Fails the test when it cannot be made. Returns: its path. */
char *mta_dir_public (const char *dir, const char *name);
