/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-dkim.h - a private OpenDKIM for the tests behind a real MTA (Debian's
 * opendkim, in the foreground on a unix socket of the test's own, no DNS: a
 * key opendkim-genkey makes for test.example, selector sel), registered with
 * the watchdog (test-server.h) so that a test that dies leaves none running;
 * and the check of a delivered message's signature
 * (tests/postfix/dkim-check.py, dkimpy with the public key handed over).
 *
 * Paths and texts returned are newly allocated (g_free).
 */
#pragma once

#include <gio/gio.h>

typedef struct {
  GSubprocess *proc;
  char        *log;        /* its standard error */
  guint        watchdog;
} MtaDkim;

/* NULL when OpenDKIM can run here and its signatures be checked
 * (/usr/sbin/opendkim, /usr/sbin/opendkim-genkey and /usr/bin/python3 with
 * python3-dkim); else why not, with the packages to install. */
const char *mta_dkim_missing (void);

/* Make the directory @dir (0700) and, in it, a 2048-bit key for test.example,
 * selector sel (opendkim-genkey: @dir/sel.private, @dir/sel.txt). Returns:
 * the path of sel.txt, the public key as a DNS zone line. */
char *mta_dkim_genkey (const char *dir);

/* Start opendkim on the unix socket @sock with the configuration file
 * @dir/opendkim.conf: Syslog no, Background no, Socket local:@sock, UMask 000,
 * PidFile @dir/opendkim.pid, then @conf_text (its Mode, its keys and the
 * rest); its standard error in @dir/opendkim.log. Waits (up to 5 s) for the
 * socket; fails the test (g_error, with the log) when it does not appear. */
MtaDkim *mta_dkim_start (const char *dir, const char *sock, const char *conf_text);

/* Stop it (SIGTERM), wait, remove its watchdog; with @show_log its log is
 * shown (g_test_message). Frees @d. */
void mta_dkim_stop (MtaDkim *d, gboolean show_log);

/* dkim-check.py's output (KEY=VALUE lines, mta_postfix_value_of()) for the
 * delivered message in the file @path, the public key @key_txt
 * (mta_dkim_genkey()) and the message as sent in the file @sent, whose body
 * it hashes the same way; asserts it ran, shows the output. */
char *mta_dkim_check (const char *path, const char *key_txt, const char *sent);

/* dkim-check.py's output @out (mta_dkim_check()) says which body the
 * signature covers: with @delivered, the body as delivered (its bh= is the
 * delivered body's hash, not the one of the body as sent, and the signature
 * verifies: verify=ok); without, the body as sent (bh= the sent body's hash,
 * not the delivered one's, and verify=fail: the body was changed after it
 * was signed). Fails the test otherwise. */
void mta_dkim_assert_body_signed (const char *out, gboolean delivered);
