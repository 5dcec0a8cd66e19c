/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-postfix.c - what the tests behind a private Postfix share
 * (mta-postfix.h). */
#include "mta-postfix.h"

#include <stdlib.h>
#include <string.h>
#include "test-server.h"

char *
mta_postfix_script (const char *name)
{
  return g_test_build_filename (G_TEST_DIST, "postfix", name, NULL);
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
mta_postfix_delivered (const char *maildir_new, const char *needle, int seconds, char **path)
{
  for (int t = 0; t < seconds * 20; t++) {
    g_autoptr (GDir) d = g_dir_open (maildir_new, 0, NULL);
    const char *n;
    while (d && (n = g_dir_read_name (d))) {
      g_autofree char *p = g_build_filename (maildir_new, n, NULL);
      char *text = NULL;
      if (g_file_get_contents (p, &text, NULL, NULL) && strstr (text, needle)) {
        if (path)
          *path = g_steal_pointer (&p);
        return text;
      }
      g_free (text);
    }
    g_usleep (50000);
  }
  return NULL;
}
