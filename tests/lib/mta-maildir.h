/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-maildir.h - what a test behind a real MTA (a private Postfix, Exim,
 * Sendmail, or OpenSMTPD's sink) finds in the Maildir its instance delivers
 * to: the messages of its new/ directory @maildir_new holding a text (a
 * Message-ID, mostly), a burst of them (mta-smtp.h) each there exactly once,
 * and what a rewritten message must look like.
 *
 * Texts and paths returned are newly allocated (g_free).
 */
#pragma once

#include <glib.h>

/* The first file of @maildir_new whose text holds @needle, polling every 50 ms
 * for up to @seconds: its text, and its path in @path when not NULL; NULL when
 * none appeared. */
char *mta_maildir_delivered (const char *maildir_new, const char *needle, int seconds, char **path);

/* How many files of @maildir_new hold @needle, now; with @first, the text of
 * the first of them there (NULL when none). */
guint mta_maildir_copies (const char *maildir_new, const char *needle, char **first);

/* What follows the header's blank line in @text (a delivered message, LF line
 * ends); fails the test when there is no blank line. */
const char *mta_maildir_body (const char *text);

/* @text, a delivered message, was resolved and rewritten: below its MTA's
 * trace fields (@top, where they end in @text) its header ends with the field
 * "X-Extbody: resolved 1 of 1 external-body reference" the daemon adds, no
 * message/external-body is left in it, and its body is @want_body byte for
 * byte. Fails the test otherwise. */
void mta_maildir_assert_resolved (const char *text, const char *top, const char *want_body);

/* What is checked of each message of a burst besides its number and body:
 * @text, message @i; fails the test (g_assert) when it is not as it must be. */
typedef void (*MtaMaildirCheck) (const char *text, guint i);

/* The check of a burst resolved by the daemon: the field "X-Extbody: resolved
 * 1 of 1 external-body reference" in the header, no message/external-body
 * left. */
void mta_maildir_resolved_1_of_1 (const char *text, guint i);

/* Wait (polling every 50 ms, up to @seconds) until @maildir_new holds the
 * @n messages of a burst (Message-ID <burst-I@test.example>, I from 0 to
 * @n - 1), then fail the test unless each is there exactly once. Every burst
 * message read on the way must have a number below @n and the body "burst I"
 * (its data: reference resolved) and pass @check (NULL: no more), else the
 * test fails at once. */
void mta_maildir_burst_wait (const char *maildir_new, guint n, int seconds, MtaMaildirCheck check);

/* The end of a test that counted every message it sent through the daemon:
 * shows "sent @sent, delivered @delivered, lost @lost, unfiltered
 * @unfiltered" and fails the test unless as many were delivered as were sent,
 * none of them other than exactly once (@lost: how many were not) and none
 * without the daemon's X-Extbody field (@unfiltered): nothing lost, nothing
 * passed unfiltered. */
void mta_maildir_assert_accounted (guint sent, guint delivered, guint lost, guint unfiltered);

/* Remove the burst messages from @maildir_new, so that the next burst to it
 * is counted alone. */
void mta_maildir_burst_clear (const char *maildir_new);
