/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-daemon.h - a private extbodyd for the tests behind a real MTA:
 * started on a unix socket of the test's own ($EXTBODYD, which ctest
 * sets), its standard error in a log file (or discarded), registered with the
 * watchdog (test-server.h) so that a test that dies leaves none running;
 * signalled, waited for, its log read and searched. The doors the
 * configuration (or @extra) does not name, http_socket and
 * dovecot_filter_socket, are not opened (their defaults are the system's).
 *
 * Texts returned are newly allocated (g_free).
 */
#pragma once

#include <gio/gio.h>

typedef struct {
  GSubprocess *proc;       /* NULL once it ended (mta_milter_wait) */
  char        *sock;       /* its unix socket */
  char        *log;        /* its standard error; NULL: discarded */
  guint        watchdog;
} MtaMilter;

/* Start $EXTBODYD -p unix:@sock -c @conf and the further arguments
 * @extra (NULL-terminated; NULL for none), its standard error written to
 * @log (NULL: discarded). Waits (up to 60 s) until its socket exists and,
 * with a log, until the log holds its start record ("event=start "); fails
 * the test (g_error, with its log) when it does not. */
MtaMilter *mta_milter_start (const char *sock, const char *conf, const char *log, const char *const *extra);

/* Send it the signal @sig. */
void mta_milter_signal (MtaMilter *m, int sig);

/* Wait until it ends and remove its watchdog; with @show_log its log is shown
 * (g_test_message). Returns: its exit status, -1 when a signal ended it. */
int mta_milter_wait (MtaMilter *m, gboolean show_log);

/* SIGTERM, then mta_milter_wait(). */
int mta_milter_stop (MtaMilter *m, gboolean show_log);

/* Stop *@m (mta_milter_stop(), its log not shown), fail the test unless it
 * exited 0, free it and set *@m to NULL. */
void mta_milter_stopped (MtaMilter **m);

/* Wait until *@m ends (mta_milter_wait(), its log not shown), fail the test
 * unless a signal ended it (a SIGKILL of the test's, or of a script's it ran),
 * free it and set *@m to NULL. */
void mta_milter_killed (MtaMilter **m);

/* Free @m, stopping it first (SIGTERM, its log not shown) when it still runs. */
void mta_milter_free (MtaMilter *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (MtaMilter, mta_milter_free)

/* Its log as it is now; "" when there is none. */
char *mta_milter_log (const MtaMilter *m);

/* How many times @needle occurs in its log. */
guint mta_milter_log_count (const MtaMilter *m, const char *needle);

/* Wait (at most 60 s) until its log holds @needle @n times; shows the log
 * (g_test_message) when it does not. */
gboolean mta_milter_log_wait (const MtaMilter *m, const char *needle, guint n);

/* Reloads under load: @n times SIGHUP @m, the k-th once its log holds k *
 * @step more lines with @progress (one a message it answered) than when this
 * was called; each reload awaited ("SIGHUP: reloaded configuration" once more
 * in its log). With @n * @step below the messages of the load, every reload
 * comes while messages remain. Fails the test (its log shown) when the
 * progress or a reload does not come within 60 s. */
void mta_milter_reload_under (MtaMilter *m, const char *progress, guint step, guint n);

/* Wait (at most 60 s) until a request waits at the gate @gate of the
 * loopback HTTP test server (httpd.py) at @port: a fetch of the daemon's in
 * flight, held there (/hold?gate=@gate) until the test opens the gate. */
gboolean mta_milter_held_wait (guint port, const char *gate);

/* What `$EXTBODY rewrite -c @conf` writes for @msg (with @filter, `extbody
 * rewrite --filter`, reading it on standard input), @msg written to the file
 * @file first: what the daemon, with the same configuration, must make of
 * it; its line ends LF, as the MTAs deliver it. Fails the test unless the
 * command exits 0. */
char *mta_milter_rewrite (const char *conf, const char *file, const char *msg, gboolean filter);
