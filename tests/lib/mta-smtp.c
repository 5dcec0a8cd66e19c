/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-smtp.c - bursts of mail into a real MTA (mta-smtp.h). */
#include "mta-smtp.h"

#include <stdlib.h>
#include "test-server.h"

int
mta_smtp_send (guint port, const char *file, const char *msg, const char *rcpt)
{
  g_assert_true (g_file_set_contents (file, msg, -1, NULL));
  g_autofree char *send = g_test_build_filename (G_TEST_DIST, "exim", "send.py", NULL);
  g_autofree char *cmd = g_strdup_printf ("python3 '%s' %u '%s' '%s' >/dev/null", send, port, file, rcpt);
  return test_sh (cmd, NULL);
}

GSubprocess *
mta_smtp_burst_start (const char *script_dir, guint port, guint n, guint sessions, const char *rcpt)
{
  g_autofree char *send = g_test_build_filename (G_TEST_DIST, script_dir, "send.py", NULL);
  g_autofree char *p = g_strdup_printf ("%u", port);
  g_autofree char *count = g_strdup_printf ("%u", n);
  g_autofree char *k = g_strdup_printf ("%u", sessions);
  g_autoptr (GError) error = NULL;
  GSubprocess *sender = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error, "python3", send, p, "--burst", count,
                                          k, rcpt, NULL);
  g_assert_no_error (error);
  return sender;
}

void
mta_smtp_burst_sent (GSubprocess *sender, guint n)
{
  g_autofree char *out = NULL;
  g_assert_true (g_subprocess_communicate_utf8 (sender, NULL, NULL, &out, NULL, NULL));
  g_assert_true (g_subprocess_get_successful (sender));
  g_assert_nonnull (out);
  g_assert_cmpint (atoi (out), ==, (int) n);
}

void
mta_smtp_burst (const char *script_dir, guint port, guint n, guint sessions, const char *rcpt)
{
  g_autoptr (GSubprocess) sender = mta_smtp_burst_start (script_dir, port, n, sessions, rcpt);
  mta_smtp_burst_sent (sender, n);
}

char *
mta_smtp_message_http_data (const char *id, guint http_port, const char *path)
{
  return g_strdup_printf (
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: %s\r\n"
    "Message-ID: <%s@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
    "\tURL=\"http://127.0.0.1:%u%s\"\r\n\r\nContent-Type: text/plain\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,data%%20%s\"\r\n\r\n"
    "Content-Type: text/plain\r\n\r\n--b--\r\n", id, id, http_port, path, id);
}
