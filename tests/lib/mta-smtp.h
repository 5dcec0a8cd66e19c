/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-smtp.h - bursts of mail into a real MTA's SMTP listener on 127.0.0.1:
 * the send.py of tests/exim/ (one SMTP session a thread, a recipient of the
 * caller's) or of tests/postfix/ (one session a message, b@test.example)
 * with --burst N K: N messages from K concurrent sessions, message I with the
 * Message-ID <burst-I@test.example> and a data: reference whose text is
 * "burst I" (mta_maildir_burst_wait() waits for them in a Maildir).
 */
#pragma once

#include <gio/gio.h>

/* Start tests/@script_dir/send.py (@script_dir: "exim" or "postfix") sending
 * @n messages from @sessions concurrent sessions to 127.0.0.1:@port, to
 * @rcpt (NULL: the script's default, b@test.example; only exim's takes one);
 * its output piped, not waited for (mta_smtp_burst_sent()). */
GSubprocess *mta_smtp_burst_start (const char *script_dir, guint port, guint n, guint sessions, const char *rcpt);

/* Wait until the burst @sender ends; fails the test unless it exited 0 and
 * reported all @n messages accepted. */
void mta_smtp_burst_sent (GSubprocess *sender, guint n);

/* mta_smtp_burst_start(), then mta_smtp_burst_sent(): @n messages sent and
 * accepted. */
void mta_smtp_burst (const char *script_dir, guint port, guint n, guint sessions, const char *rcpt);
