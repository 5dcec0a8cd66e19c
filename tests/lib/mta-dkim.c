/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-dkim.c - a private OpenDKIM for the tests behind a real MTA
 * (mta-dkim.h). */
#include "mta-dkim.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include "mta-postfix.h"
#include "test-server.h"

const char *
mta_dkim_missing (void)
{
  if (!g_file_test ("/usr/sbin/opendkim", G_FILE_TEST_IS_EXECUTABLE)
      || !g_file_test ("/usr/sbin/opendkim-genkey", G_FILE_TEST_IS_EXECUTABLE))
    return "opendkim or opendkim-genkey is not installed (apt-get install opendkim opendkim-tools)";
  if (!g_file_test ("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE)
      || test_sh ("/usr/bin/python3 -c 'import dkim'", NULL) != 0)
    return "/usr/bin/python3 with python3-dkim is not installed (apt-get install python3-dkim)";
  return NULL;
}

char *
mta_dkim_genkey (const char *dir)
{
  g_assert_cmpint (g_mkdir (dir, 0700), ==, 0);
  g_autofree char *genkey = g_strdup_printf ("opendkim-genkey -b 2048 -d test.example -s sel -D '%s'", dir);
  g_assert_cmpint (test_sh (genkey, NULL), ==, 0);
  return g_build_filename (dir, "sel.txt", NULL);
}

MtaDkim *
mta_dkim_start (const char *dir, const char *sock, const char *conf_text)
{
  g_autofree char *conf = g_build_filename (dir, "opendkim.conf", NULL);
  g_autofree char *text = g_strdup_printf ("Syslog no\nBackground no\nSocket local:%s\nUMask 000\n"
                                           "PidFile %s/opendkim.pid\n%s", sock, dir, conf_text);
  g_assert_true (g_file_set_contents (conf, text, -1, NULL));
  MtaDkim *d = g_new0 (MtaDkim, 1);
  d->log = g_build_filename (dir, "opendkim.log", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
  g_subprocess_launcher_set_stderr_file_path (launcher, d->log);
  d->proc = g_subprocess_launcher_spawn (launcher, &error, "/usr/sbin/opendkim", "-f", "-x", conf, NULL);
  g_assert_no_error (error);
  g_autofree char *kill_cmd = g_strdup_printf ("kill -KILL %s", g_subprocess_get_identifier (d->proc));
  d->watchdog = test_watchdog_add (kill_cmd);
  for (int i = 0; i < 250 && !g_file_test (sock, G_FILE_TEST_EXISTS); i++)
    g_usleep (20000);
  if (!g_file_test (sock, G_FILE_TEST_EXISTS)) {
    g_autofree char *log = NULL;
    g_file_get_contents (d->log, &log, NULL, NULL);
    g_error ("opendkim did not start: %s", log ? log : "");
  }
  return d;
}

void
mta_dkim_stop (MtaDkim *d, gboolean show_log)
{
  g_subprocess_send_signal (d->proc, SIGTERM);
  g_subprocess_wait (d->proc, NULL, NULL);
  g_object_unref (d->proc);
  test_watchdog_remove (d->watchdog);
  if (show_log) {
    g_autofree char *log = NULL;
    g_file_get_contents (d->log, &log, NULL, NULL);
    g_test_message ("%s:\n%s", d->log, log ? log : "");
  }
  g_free (d->log);
  g_free (d);
}

char *
mta_dkim_check (const char *path, const char *key_txt, const char *sent)
{
  g_autofree char *py = mta_postfix_script ("dkim-check.py");
  g_autofree char *cmd = g_strdup_printf ("/usr/bin/python3 '%s' '%s' '%s' '%s'", py, path, key_txt, sent);
  char *out = NULL;
  g_assert_cmpint (test_sh (cmd, &out), ==, 0);
  g_assert_nonnull (out);
  g_test_message ("dkim-check.py:\n%s", out);
  return out;
}

void
mta_dkim_assert_body_signed (const char *out, gboolean delivered)
{
  g_autofree char *bh = mta_postfix_value_of (out, "bh");
  g_autofree char *delivered_hash = mta_postfix_value_of (out, "body-hash");
  g_autofree char *sent_hash = mta_postfix_value_of (out, "body-hash-other");
  g_assert_nonnull (bh);
  g_assert_cmpstr (bh, ==, delivered ? delivered_hash : sent_hash);
  g_assert_cmpstr (bh, !=, delivered ? sent_hash : delivered_hash);
  g_assert_nonnull (strstr (out, delivered ? "\nverify=ok\n" : "\nverify=fail\n"));
}
