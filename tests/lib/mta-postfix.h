/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-postfix.h - what the tests behind a private Postfix share: the scripts
 * of tests/postfix/, sending a message through an instance's SMTP listener,
 * its log, waiting for its master to listen again (what it delivered:
 * mta-maildir.h).
 *
 * Every function takes the instance's directory (its pf-peer.sh directory
 * @pfdir, holding log/maillog and spool/pid/master.pid) so a test may run
 * several instances. Paths and texts returned are newly allocated (g_free);
 * nothing here starts or stops an instance but mta_postfix_up() and
 * mta_postfix_down(), which run tests/postfix/pf-peer.sh.
 */
#pragma once

#include <glib.h>

/* Skip the whole program (exit 77, test_skip_all) unless it runs as root,
 * Postfix is installed and the environment variables named (@env and those
 * after it, NULL-terminated: EXTBODYD, EXTBODY, ..., which ctest sets) are
 * set; then PATH is the system's directories when it was not set. */
void mta_postfix_require (const char *env, ...) G_GNUC_NULL_TERMINATED;

/* The path of tests/postfix/@name (G_TEST_SRCDIR). */
char *mta_postfix_script (const char *name);

/* Start the instance @pfdir (pf-peer.sh up) on a free port, stored in @port,
 * with @milters as its smtpd_milters ("" for none) and @action as its
 * milter_default_action; a watchdog stops it should the test die. Returns the
 * watchdog, for mta_postfix_down(). */
guint mta_postfix_up (const char *pfdir, const char *milters, const char *action, guint *port);

/* Stop the instance @pfdir (pf-peer.sh down) and remove its @watchdog. */
void mta_postfix_down (const char *pfdir, guint watchdog);

/* The new/ directory of the Maildir the instance @pfdir delivers to
 * (@pfdir/mail/Maildir/new; mta-maildir.h reads it). */
char *mta_postfix_maildir_new (const char *pfdir);

/* Make the instance @pfdir filter after the queue through pipe(8), as
 * filters/pipe/README.md says: the master.cf services pickup and @service
 * (the pipe(8) service "extbody unix - n n - 10 pipe ... argv=..."), and
 * content_filter=extbody:dummy on its smtpd at 127.0.0.1:@port. The filter
 * re-injects with sendmail -G -i, which hands the message to postdrop; being
 * setgid, postdrop ignores MAIL_CONFIG unless the system's main.cf lists the
 * directory, so the instance gets a command_directory of its own with a plain
 * copy of postdrop and a world-writable sticky maildrop (as Postfix once had),
 * and the system's configuration stays untouched. Returns once its master
 * has read master.cf again (pf-peer.sh reload), so that the next message
 * meets the filter; fails the test when a step fails. */
void mta_postfix_after_queue (const char *pfdir, guint port, const char *service);

/* pf-peer.sh set: the main.cf line @setting ("name=value") in force in the
 * instance @pfdir, once its master has read it; pf-peer.sh's exit status. */
int mta_postfix_set (const char *pfdir, const char *setting);

/* Send the file @path to 127.0.0.1:@port with tests/postfix/send.py (through
 * @python, "python3" when NULL): its exit status (75: a temporary failure).
 * With @out, send.py's output (stdout and stderr) is returned there;
 * without, it is discarded. */
int mta_postfix_send_file (const char *python, guint port, const char *path, char **out);

/* Send a message to 127.0.0.1:@port through @python (mta_postfix_send_file):
 * @msg, written to the file @file first, or with @msg NULL the file as it
 * is. With @pfdir, send.py's output is shown (g_test_message) and, when it
 * failed, the tail of @pfdir's log (mta_postfix_log_tail); without, the output
 * is discarded. Returns: send.py's exit status (75: a temporary failure). */
int mta_postfix_send (const char *python, const char *pfdir, guint port, const char *file, const char *msg);

/* The last 12 lines of @pfdir's log/maillog, after waiting 0.5 s for postlogd,
 * which writes behind; never NULL. */
char *mta_postfix_log_tail (const char *pfdir);

/* Wait (up to 10 s) until the master of @pfdir (spool/pid/master.pid) itself
 * listens on 127.0.0.1:@port, never another process holding the port; fails
 * the test (g_error, with what ss shows there) when it does not. */
void mta_postfix_wait_listening (const char *pfdir, guint port);

/* The value of the line "@key=VALUE" in @out, the output of one of
 * tests/postfix's scripts (dkim-check.py, mime-check.py); NULL when there is
 * no such line. */
char *mta_postfix_value_of (const char *out, const char *key);
