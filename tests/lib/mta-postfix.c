/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-postfix.c - what the tests behind a private Postfix share
 * (mta-postfix.h). */
#include "mta-postfix.h"

#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include "test-server.h"

void
mta_postfix_require (const char *env, ...)
{
  g_autofree char *postfix = g_find_program_in_path ("postfix");
  if (!postfix && g_file_test ("/usr/sbin/postfix", G_FILE_TEST_IS_EXECUTABLE))
    postfix = g_strdup ("/usr/sbin/postfix");
  if (geteuid () != 0)
    test_skip_all ("needs root (Postfix refuses to run otherwise)");
  if (!postfix)
    test_skip_all ("Postfix is not installed (apt-get install postfix)");
  va_list ap;
  va_start (ap, env);
  for (const char *name = env; name; name = va_arg (ap, const char *))
    if (!g_getenv (name)) {
      g_autofree char *why = g_strdup_printf ("%s is not set (run through ctest)", name);
      test_skip_all (why);
    }
  va_end (ap);
  g_setenv ("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", FALSE);
}

char *
mta_postfix_script (const char *name)
{
  return g_test_build_filename (G_TEST_DIST, "postfix", name, NULL);
}

char *
mta_postfix_maildir_new (const char *pfdir)
{
  return g_build_filename (pfdir, "mail", "Maildir", "new", NULL);
}

void
mta_postfix_after_queue (const char *pfdir, guint port, const char *service)
{
  g_autofree char *peer = mta_postfix_script ("pf-peer.sh");
  g_autofree char *svc = g_strdup_printf ("sh '%s' service '%s' 'pickup unix n - n 1 1 pickup' '%s'", peer, pfdir,
                                          service);
  g_assert_cmpint (test_sh (svc, NULL), ==, 0);
  g_autofree char *cmds = g_strdup_printf (
    "mkdir -p '%s/bin' && for f in /usr/sbin/post*; do ln -sf \"$f\" '%s/bin/'; done && "
    "rm -f '%s/bin/postdrop' && cp /usr/sbin/postdrop '%s/bin/postdrop' && chmod 755 '%s/bin/postdrop' && "
    "chmod 1733 '%s/spool/maildrop' && sh '%s' set '%s' command_directory='%s/bin'",
    pfdir, pfdir, pfdir, pfdir, pfdir, pfdir, peer, pfdir, pfdir);
  g_assert_cmpint (test_sh (cmds, NULL), ==, 0);
  /* a plain postfix reload returns before master has read master.cf: a
   * message sent right after it was once delivered unfiltered, on a loaded
   * machine */
  g_autofree char *filt = g_strdup_printf (
    "sed -i 's|^127.0.0.1:%u inet n - n - - smtpd$|127.0.0.1:%u inet n - n - - smtpd -o content_filter=extbody:dummy|' '%s/etc/master.cf' && "
    "sh '%s' reload '%s'",
    port, port, pfdir, peer, pfdir);
  g_assert_cmpint (test_sh (filt, NULL), ==, 0);
}

guint
mta_postfix_up (const char *pfdir, const char *milters, const char *action, guint *port)
{
  g_autofree char *peer = mta_postfix_script ("pf-peer.sh");
  g_autofree char *up = g_strdup_printf ("sh '%s' up '%s' {PORT} '%s' %s", peer, pfdir, milters, action);
  g_autofree char *stop = g_strdup_printf ("postfix -c '%s/etc' stop", pfdir);
  guint watchdog = test_watchdog_add (stop);
  g_free (test_sh_on_free_port (up, port, NULL));
  return watchdog;
}

void
mta_postfix_down (const char *pfdir, guint watchdog)
{
  g_autofree char *peer = mta_postfix_script ("pf-peer.sh");
  g_autofree char *down = g_strdup_printf ("sh '%s' down '%s'", peer, pfdir);
  test_sh (down, NULL);
  test_watchdog_remove (watchdog);
}

int
mta_postfix_set (const char *pfdir, const char *setting)
{
  g_autofree char *peer = mta_postfix_script ("pf-peer.sh");
  g_autofree char *cmd = g_strdup_printf ("sh '%s' set '%s' %s", peer, pfdir, setting);
  return test_sh (cmd, NULL);
}

int
mta_postfix_send_file (const char *python, guint port, const char *path, char **out)
{
  g_autofree char *send = mta_postfix_script ("send.py");
  g_autofree char *cmd = g_strdup_printf ("%s '%s' %u '%s' %s", python ? python : "python3", send, port,
                                          path, out ? "2>&1" : ">/dev/null 2>&1");
  return test_sh (cmd, out);
}

int
mta_postfix_send (const char *python, const char *pfdir, guint port, const char *file, const char *msg)
{
  if (msg)
    g_assert_true (g_file_set_contents (file, msg, -1, NULL));
  if (!pfdir)
    return mta_postfix_send_file (python, port, file, NULL);
  g_autofree char *out = NULL;
  int st = mta_postfix_send_file (python, port, file, &out);
  g_test_message ("send.py to %u: %d %s", port, st, out ? out : "");
  if (st != 0) {
    g_autofree char *log = mta_postfix_log_tail (pfdir);
    g_test_message ("Postfix's log:\n%s", log);
  }
  return st;
}

char *
mta_postfix_log_tail (const char *pfdir)
{
  g_usleep (500000);   /* postlogd writes behind */
  g_autofree char *tail = g_strdup_printf ("tail -n 12 '%s/log/maillog'", pfdir);
  char *log = NULL;
  test_sh (tail, &log);
  return log ? log : g_strdup ("");
}

void
mta_postfix_wait_listening (const char *pfdir, guint port)
{
  g_autofree char *pidfile = g_build_filename (pfdir, "spool", "pid", "master.pid", NULL);
  for (int i = 0; i < 200; i++) {
    g_autofree char *pid = NULL;
    if (g_file_get_contents (pidfile, &pid, NULL, NULL) && test_port_owned_by (port, (GPid) atoi (pid)))
      return;
    g_usleep (50000);
  }
  g_autofree char *ss = NULL;
  g_autofree char *cmd = g_strdup_printf ("ss -Hltnp 'sport = :%u'", port);
  test_sh (cmd, &ss);
  g_error ("this test's Postfix does not listen on 127.0.0.1:%u (%s)", port,
           ss && *ss ? ss : "nothing listens there");
}

char *
mta_postfix_value_of (const char *out, const char *key)
{
  g_autofree char *k = g_strdup_printf ("%s=", key);
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    if (g_str_has_prefix (lines[i], k))
      return g_strdup (lines[i] + strlen (k));
  return NULL;
}
