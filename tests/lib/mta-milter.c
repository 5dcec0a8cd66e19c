/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-milter.c - a private extbodyd for the tests behind a real MTA
 * (mta-milter.h). */
#include "mta-milter.h"

#include <signal.h>
#include <string.h>
#include "test-server.h"

static gboolean
milter_ready (const MtaMilter *m)
{
  if (!g_file_test (m->sock, G_FILE_TEST_EXISTS))
    return FALSE;
  return !m->log || mta_milter_log_count (m, "event=start ") > 0;
}

MtaMilter *
mta_milter_start (const char *sock, const char *conf, const char *log, const char *const *extra)
{
  const char *milter = g_getenv ("EXTBODYD");
  g_assert_nonnull (milter);
  MtaMilter *m = g_new0 (MtaMilter, 1);
  m->sock = g_strdup (sock);
  m->log = g_strdup (log);
  g_autofree char *spec = g_strdup_printf ("unix:%s", sock);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  const char *base[] = { milter, "-p", spec, "-c", conf };
  for (guint i = 0; i < G_N_ELEMENTS (base); i++)
    g_ptr_array_add (argv, (char *) base[i]);
  for (guint i = 0; extra && extra[i]; i++)
    g_ptr_array_add (argv, (char *) extra[i]);
  /* the doors a test names are opened where it says; the others not at all
   * (their defaults are the system's, under /run/extbody) */
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (conf, &text, NULL, NULL));
  g_autofree char *joined = extra ? g_strjoinv (" ", (char **) extra) : g_strdup ("");
  g_autoptr (GPtrArray) owned = g_ptr_array_new_with_free_func (g_free);
  const char *doors[] = { "http_socket", "dovecot_filter_socket" };
  for (guint i = 0; i < G_N_ELEMENTS (doors); i++) {
    g_autofree char *set = g_strdup_printf ("%s=", doors[i]);
    g_autofree char *set_sp = g_strdup_printf ("\n%s ", doors[i]);
    g_autofree char *set_eq = g_strdup_printf ("\n%s=", doors[i]);
    g_autofree char *in_text = g_strconcat ("\n", text, NULL);
    if (!strstr (in_text, set_sp) && !strstr (in_text, set_eq) && !strstr (joined, set)) {
      g_ptr_array_add (argv, "-o");
      g_ptr_array_add (argv, set);
      g_ptr_array_add (owned, g_steal_pointer (&set));
    }
  }
  g_ptr_array_add (argv, NULL);
  g_autoptr (GSubprocessLauncher) l =
    g_subprocess_launcher_new (log ? G_SUBPROCESS_FLAGS_NONE : G_SUBPROCESS_FLAGS_STDERR_SILENCE);
  if (log)
    g_subprocess_launcher_set_stderr_file_path (l, log);
  g_autoptr (GError) error = NULL;
  m->proc = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, &error);
  g_assert_no_error (error);
  g_autofree char *kill_cmd = g_strdup_printf ("kill -KILL %s", g_subprocess_get_identifier (m->proc));
  m->watchdog = test_watchdog_add (kill_cmd);
  for (int t = 0; t < 60 * 50 && !milter_ready (m); t++)
    g_usleep (20000);
  if (!milter_ready (m)) {
    g_autofree char *text = mta_milter_log (m);
    g_error ("extbodyd did not start on %s: %s", sock, text);
  }
  return m;
}

void
mta_milter_signal (MtaMilter *m, int sig)
{
  g_subprocess_send_signal (m->proc, sig);
}

int
mta_milter_wait (MtaMilter *m, gboolean show_log)
{
  g_autoptr (GError) error = NULL;
  g_subprocess_wait (m->proc, NULL, &error);
  g_assert_no_error (error);
  test_watchdog_remove (m->watchdog);
  m->watchdog = 0;
  int status = g_subprocess_get_if_exited (m->proc) ? g_subprocess_get_exit_status (m->proc) : -1;
  g_clear_object (&m->proc);
  if (show_log && m->log) {
    g_autofree char *text = mta_milter_log (m);
    g_test_message ("milter log %s:\n%s", m->log, text);
  }
  return status;
}

int
mta_milter_stop (MtaMilter *m, gboolean show_log)
{
  mta_milter_signal (m, SIGTERM);
  return mta_milter_wait (m, show_log);
}

void
mta_milter_stopped (MtaMilter **m)
{
  g_assert_nonnull (*m);
  g_assert_cmpint (mta_milter_stop (*m, FALSE), ==, 0);
  g_clear_pointer (m, mta_milter_free);
}

void
mta_milter_killed (MtaMilter **m)
{
  g_assert_nonnull (*m);
  g_assert_cmpint (mta_milter_wait (*m, FALSE), ==, -1);
  g_clear_pointer (m, mta_milter_free);
}

void
mta_milter_free (MtaMilter *m)
{
  if (!m)
    return;
  if (m->proc)
    mta_milter_stop (m, FALSE);
  g_free (m->sock);
  g_free (m->log);
  g_free (m);
}

char *
mta_milter_log (const MtaMilter *m)
{
  char *text = NULL;
  if (m->log)
    g_file_get_contents (m->log, &text, NULL, NULL);
  return text ? text : g_strdup ("");
}

guint
mta_milter_log_count (const MtaMilter *m, const char *needle)
{
  g_autofree char *text = mta_milter_log (m);
  guint n = 0;
  for (const char *p = text; (p = strstr (p, needle)); p += strlen (needle))
    n++;
  return n;
}

gboolean
mta_milter_log_wait (const MtaMilter *m, const char *needle, guint n)
{
  for (int t = 0; t < 60 * 50; t++) {
    if (mta_milter_log_count (m, needle) >= n)
      return TRUE;
    g_usleep (20000);
  }
  g_autofree char *text = mta_milter_log (m);
  g_test_message ("milter log %s:\n%s", m->log ? m->log : "(none)", text);
  return FALSE;
}

#define RELOADED "SIGHUP: reloaded configuration"

void
mta_milter_reload_under (MtaMilter *m, const char *progress, guint step, guint n)
{
  guint base = mta_milter_log_count (m, progress);
  guint reloaded = mta_milter_log_count (m, RELOADED);
  for (guint k = 1; k <= n; k++) {
    g_assert_true (mta_milter_log_wait (m, progress, base + k * step));
    mta_milter_signal (m, SIGHUP);
    g_assert_true (mta_milter_log_wait (m, RELOADED, reloaded + k));
  }
}

gboolean
mta_milter_held_wait (guint port, const char *gate)
{
  g_autofree char *path = g_strdup_printf ("/held?gate=%s", gate);
  for (int t = 0; t < 60 * 50; t++) {
    if (test_http_get_number (port, path) >= 1)
      return TRUE;
    g_usleep (20000);
  }
  return FALSE;
}

char *
mta_milter_rewrite (const char *conf, const char *file, const char *msg, gboolean filter)
{
  g_assert_true (g_file_set_contents (file, msg, -1, NULL));
  g_autofree char *cmd = g_strdup_printf ("'%s' rewrite %s-c '%s' %s'%s'", g_getenv ("EXTBODY"),
                                          filter ? "--filter " : "", conf, filter ? "< " : "", file);
  g_autofree char *out = NULL;
  g_assert_cmpint (test_sh (cmd, &out), ==, 0);
  return test_crlf_to_lf (out);
}
