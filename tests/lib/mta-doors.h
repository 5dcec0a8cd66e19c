/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-doors.h - what the tests of extbodyd's HTTP and Dovecot doors do to
 * them as hostile or ordinary local users (issue 39): run a program as
 * another user (setpriv), send many large messages at once and measure the
 * daemon's peak memory from /proc. Used by milter/test-http and
 * milter/test-dovecot-protocol.
 *
 * Texts returned are newly allocated (g_free).
 */
#pragma once

#include <gio/gio.h>

#include "mta-milter.h"

/* Can this test run programs as other users: root, setpriv, the user nobody
 * and the group nogroup? */
gboolean mta_doors_can_switch_user (void);

/* Start @argv as @user (a name, or a number with no entry in the passwd
 * file: "65533"), its group the user's (nogroup for nobody, the same number
 * for a number), no supplementary groups, with @flags. Fails the test when
 * it cannot start. */
GSubprocess *mta_doors_spawn_as (const char *user, GSubprocessFlags flags, const char *const *argv);

/* A copy of the file @src (a script, a program of the build tree) that
 * another user can run, whatever the checkout's place (root's 0700 home):
 * in @dir/doors-public (made at the first call), mode 0755. */
char *mta_doors_for_everyone (const char *dir, const char *src);

/* The peak resident memory (VmHWM) of the running daemon @m, in KiB. */
guint64 mta_doors_peak_kib (const MtaMilter *m);

/* A message of about @mib MiB: a data: reference to "big @i" (so that its
 * plan parses and resolves it) and an attachment of random bytes, base64. */
GBytes *mta_doors_big_message (guint i, guint mib);

/* @n such messages of @mib MiB at once through the unix socket @sock of @m,
 * HTTP (POST /rewrite) or, with @dovecot, Dovecot's program-client protocol:
 * each answered whole (200, or "+") with its reference resolved. Returns how
 * much the daemon's peak memory (VmHWM) grew, as a multiple of the bytes the
 * messages hold together. */
double mta_doors_big_at_once (const MtaMilter *m, const char *sock, gboolean dovecot, guint n, guint mib);
