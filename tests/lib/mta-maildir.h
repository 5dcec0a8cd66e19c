/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-maildir.h - what a test behind a real MTA (a private Postfix or Exim)
 * finds in the Maildir its instance delivers to: the messages of its new/
 * directory @maildir_new holding a text (a Message-ID, mostly).
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
