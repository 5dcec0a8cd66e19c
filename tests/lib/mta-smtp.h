/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-smtp.h - what the tests behind a real MTA send: a message with an
 * http and a data: reference, and bursts of mail into its SMTP listener on
 * 127.0.0.1:
 * the send.py of tests/exim/ (one SMTP session a thread, a recipient of the
 * caller's) or of tests/postfix/ (one session a message, b@test.example)
 * with --burst N K: N messages from K concurrent sessions, message I with the
 * Message-ID <burst-I@test.example> and a data: reference whose text is
 * "burst I" (mta_maildir_burst_wait() waits for them in a Maildir).
 *
 * Texts returned are newly allocated (g_free).
 */
#pragma once

#include <gio/gio.h>

/* A message (CRLF line ends) with the Subject @id, the Message-ID
 * <@id@test.example> and two references: first to http://127.0.0.1:@http_port@path (the
 * loopback test server, httpd.py), then a data: URL whose text is
 * "data @id", so that a message whose http reference is left alone still
 * shows the daemon's X-Extbody field ("resolved 1 of 2"). */
char *mta_smtp_message_http_data (const char *id, guint http_port, const char *path);

/* Send @msg, written to the file @file first, to 127.0.0.1:@port for @rcpt
 * in one SMTP transaction with tests/exim/send.py; its standard output
 * discarded, its standard error (why the transaction failed) shown.
 * Returns: its exit status (0: the message was accepted). */
int mta_smtp_send (guint port, const char *file, const char *msg, const char *rcpt);

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
