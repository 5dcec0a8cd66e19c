/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-milter.c - extbodyd through the milter protocol, driven by
 * miltertest (Debian's miltertest) with the Lua scripts beside this file. The
 * daemon is started by the test on a unix socket in a temporary directory. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>
#include <sys/wait.h>
#include "test-server.h"

typedef struct {
  GSubprocess *proc;
  char        *dir;
  char        *sock;   /* unix:PATH */
  guint        watchdog;
} Milter;

/* The daemon with @extra options and, if @tmpdir is set, TMPDIR=@tmpdir (where
 * it spools a large message). */
/* The daemons here are the milter alone: the doors whose defaults are the
 * system's (under /run/extbody) stay shut. */
#define DOORS_OFF "http_socket =\ndovecot_filter_socket =\n"

static Milter *
milter_start_in (const char *const *extra, const char *tmpdir)
{
  Milter *m = g_new0 (Milter, 1);
  m->dir = g_dir_make_tmp ("extbodyd-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (m->dir, "milter.sock", NULL);
  m->sock = g_strdup_printf ("unix:%s", path);
  g_autofree char *conf = g_build_filename (m->dir, "empty.conf", NULL);
  g_file_set_contents (conf, DOORS_OFF, -1, NULL);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) g_getenv ("EXTBODYD"));
  g_ptr_array_add (argv, "-p");
  g_ptr_array_add (argv, m->sock);
  g_ptr_array_add (argv, "-c");
  g_ptr_array_add (argv, conf);
  for (guint i = 0; extra && extra[i]; i++)
    g_ptr_array_add (argv, (gpointer) extra[i]);
  g_ptr_array_add (argv, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDERR_SILENCE);
  if (tmpdir)
    g_subprocess_launcher_setenv (l, "TMPDIR", tmpdir, TRUE);
  m->proc = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, &error);
  g_assert_no_error (error);
  /* a test that fails leaves neither the daemon nor its directory */
  g_autofree char *kill_cmd = g_strdup_printf ("kill -KILL %s; rm -rf '%s'", g_subprocess_get_identifier (m->proc),
                                               m->dir);
  m->watchdog = test_watchdog_add (kill_cmd);
  for (int i = 0; i < 200 && !g_file_test (path, G_FILE_TEST_EXISTS); i++)
    g_usleep (20000);
  g_assert_true (g_file_test (path, G_FILE_TEST_EXISTS));
  /* created under milter_umask (007): the daemon's user and group connect,
   * nobody else */
  GStatBuf st;
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0770);
  return m;
}

static Milter *
milter_start (const char *const *extra)
{
  return milter_start_in (extra, NULL);
}

static void
milter_stop (Milter *m)
{
  g_subprocess_send_signal (m->proc, SIGTERM);
  g_subprocess_wait (m->proc, NULL, NULL);
  test_watchdog_remove (m->watchdog);
  g_object_unref (m->proc);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", m->dir);
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", rm, NULL }, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL);
  g_free (m->dir);
  g_free (m->sock);
  g_free (m);
}

/* (nullable) one more -D NAME=VALUE for the scripts run_script runs */
static const char *script_define;

static void
run_script (Milter *m, const char *script)
{
  g_autofree char *dir = g_test_build_filename (G_TEST_DIST, "milter", NULL);
  g_autofree char *file = g_build_filename (dir, script, NULL);
  g_autofree char *dsock = g_strdup_printf ("sock=%s", m->sock);
  g_autofree char *dlib = g_strdup_printf ("lib=%s", dir);
  g_autofree char *out = NULL, *err = NULL;
  int status = 0;
  g_autoptr (GError) error = NULL;
  char *argv[] = { "miltertest", "-D", dsock, "-D", dlib, "-s", file, NULL, NULL, NULL };
  if (script_define) {
    argv[7] = "-D";
    argv[8] = (char *) script_define;
  }
  g_spawn_sync (NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err, &status, &error);
  g_assert_no_error (error);
  g_test_message ("%s: %s%s", script, out, err);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_nonnull (strstr (out, "PASS"));
}

static Milter *milter;

static void
test_script (gconstpointer data)
{
  run_script (milter, data);
}

static void
test_too_large (void)
{
  Milter *small = milter_start ((const char *[]) { "-o", "max_message_size=2k", NULL });
  run_script (small, "too-large.lua");
  milter_stop (small);
}

/* A stop or a reload sent the moment the daemon's socket appears (as an
 * init system may, and as a test does) is the daemon's own: a SIGTERM ends
 * it with 0 (never killed by the signal's default action before its
 * handler is in place, never 70 because libmilter's own signal thread took
 * the signal and closed the milter's door unasked), and so does a SIGTERM
 * after a SIGHUP that came as early. Each round once with each. */
static void
test_signals_at_start (void)
{
  for (guint i = 0; i < 30; i++) {
    g_autofree char *dir = g_dir_make_tmp ("extbodyd-sig-XXXXXX", NULL);
    g_autofree char *path = g_build_filename (dir, "milter.sock", NULL);
    g_autofree char *spec = g_strdup_printf ("unix:%s", path);
    g_autofree char *conf = g_build_filename (dir, "empty.conf", NULL);
    g_assert_true (g_file_set_contents (conf, DOORS_OFF, -1, NULL));
    g_autoptr (GError) error = NULL;
    g_autoptr (GSubprocess) p = g_subprocess_new (G_SUBPROCESS_FLAGS_STDERR_SILENCE, &error, g_getenv ("EXTBODYD"),
                                                  "-p", spec, "-c", conf, NULL);
    g_assert_no_error (error);
    for (int t = 0; t < 50000 && !g_file_test (path, G_FILE_TEST_EXISTS); t++)
      g_usleep (200);
    g_assert_true (g_file_test (path, G_FILE_TEST_EXISTS));
    if (i % 2) {
      g_subprocess_send_signal (p, SIGHUP);
      g_usleep (50000);
    }
    g_subprocess_send_signal (p, SIGTERM);
    g_assert_true (g_subprocess_wait (p, NULL, NULL));
    if (!g_subprocess_get_if_exited (p))
      g_error ("round %u: extbodyd killed by signal %d", i, g_subprocess_get_term_sig (p));
    g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 0);
    if (g_file_test (path, G_FILE_TEST_EXISTS))
      g_error ("round %u: extbodyd left %s behind", i, path);
    g_unlink (conf);
    g_rmdir (dir);
  }
}

/* Runs @scripts through a daemon with @extra options whose TMPDIR is a fresh
 * directory watched with inotify; how many spool files (extbodyd-*) the
 * daemon created there. Each one must also be gone again (unlinked). */
static guint
spool_files_created (const char *const *extra, const char *const *scripts)
{
  g_autofree char *spool = g_dir_make_tmp ("extbodyd-spool-XXXXXX", NULL);
  g_assert_nonnull (spool);
  int in = inotify_init1 (IN_NONBLOCK | IN_CLOEXEC);
  g_assert_cmpint (in, >=, 0);
  g_assert_cmpint (inotify_add_watch (in, spool, IN_CREATE | IN_DELETE), >=, 0);
  g_autofree char *rm_spool = g_strdup_printf ("rm -rf '%s'", spool);
  guint wd = test_watchdog_add (rm_spool);
  Milter *m = milter_start_in (extra, spool);
  for (guint i = 0; scripts[i]; i++)
    run_script (m, scripts[i]);
  milter_stop (m);   /* the daemon has ended: every event is queued */
  guint created = 0, deleted = 0;
  char buf[4096] __attribute__ ((aligned (__alignof__ (struct inotify_event))));
  ssize_t got;
  while ((got = read (in, buf, sizeof buf)) > 0) {
    for (char *p = buf; p < buf + got;) {
      struct inotify_event *e = (struct inotify_event *) p;
      if (e->len && g_str_has_prefix (e->name, "extbodyd-")) {
        if (e->mask & IN_CREATE)
          created++;
        if (e->mask & IN_DELETE)
          deleted++;
      }
      p += sizeof *e + e->len;
    }
  }
  g_assert_true (got < 0 && errno == EAGAIN);
  close (in);
  g_assert_cmpuint (deleted, ==, created);
  g_assert_cmpint (g_rmdir (spool), ==, 0);   /* and nothing left in it */
  test_watchdog_remove (wd);
  return created;
}

/* A message larger than milter_spill_size goes through the spool file: the
 * daemon creates (and unlinks) one in its TMPDIR for each such message, and
 * none for the same messages under the default limit. */
static void
test_spill (void)
{
  const char *const scripts[] = { "data-reference.lua", "top-level.lua", NULL };
  guint spilled = spool_files_created ((const char *[]) { "-o", "fetch=off", "-o", "milter_spill_size=64", NULL },
                                       scripts);
  g_test_message ("spool files with milter_spill_size=64: %u", spilled);
  /* each message spilled, and its new body written to a spill file of its own
   * and sent from there (memory does not follow the message) */
  g_assert_cmpuint (spilled, ==, 4);
  g_assert_cmpuint (spool_files_created ((const char *[]) { "-o", "fetch=off", NULL }, scripts), ==, 0);
}

/* A message smaller than milter_spill_size whose fetched data makes its new
 * body larger: the new body goes to a spill file of its own (what the
 * references bring is not held twice in memory); none when the data leaves it
 * smaller. The message is about 310 bytes, milter_spill_size 450, the data
 * 300 bytes, then 50 (httpd.py's /bin; miltertest itself crashes receiving a
 * replaced body of more than about 1 KB). */
static void
test_spill_fetched (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TestServer) httpd = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);
  const char *const scripts[] = { "fetched-reference.lua", NULL };
  const char *const extra[] = { "-o", "fetch=on", "--allow-network", "127.0.0.1/32", "-o", "milter_spill_size=450",
                                NULL };
  g_autofree char *big = g_strdup_printf ("url=http://127.0.0.1:%u/bin?n=300", httpd->port);
  script_define = big;
  guint spilled = spool_files_created (extra, scripts);
  g_test_message ("spool files, 300 bytes fetched into a message of about 310: %u", spilled);
  g_assert_cmpuint (spilled, ==, 1);
  g_autofree char *small = g_strdup_printf ("url=http://127.0.0.1:%u/bin?n=50", httpd->port);
  script_define = small;
  g_assert_cmpuint (spool_files_created (extra, scripts), ==, 0);
  script_define = NULL;
}

/* @pid has ended: no such process, or a zombie not yet reaped by init. */
static gboolean
process_gone (pid_t pid)
{
  if (kill (pid, 0) != 0)
    return errno == ESRCH;
  g_autofree char *path = g_strdup_printf ("/proc/%d/stat", (int) pid);
  g_autofree char *stat = NULL;
  if (!g_file_get_contents (path, &stat, NULL, NULL))
    return TRUE;
  const char *paren = strrchr (stat, ')');
  return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

/* Bound as root, then running as nobody: the socket is handed over and the
 * protocol still works. */
static void
test_user (void)
{
  if (geteuid () != 0) {
    g_test_skip ("needs root");
    return;
  }
  Milter *m = milter_start ((const char *[]) { "-o", "fetch=off", "-u", "nobody", NULL });
  g_chmod (m->dir, 0755);
  run_script (m, "data-reference.lua");
  const char *pid = g_subprocess_get_identifier (m->proc);
  g_autofree char *status_path = g_strdup_printf ("/proc/%s/status", pid);
  g_autofree char *status = NULL;
  g_assert_true (g_file_get_contents (status_path, &status, NULL, NULL));
  struct passwd *pw = getpwnam ("nobody");
  g_autofree char *uid = g_strdup_printf ("\nUid:\t%u\t%u\t%u", pw->pw_uid, pw->pw_uid, pw->pw_uid);
  g_assert_nonnull (strstr (status, uid));
  milter_stop (m);
}

/* -d detaches, writes the PID file and keeps serving; SIGTERM removes the
 * PID file and the socket. */
static void
test_daemon (void)
{
  g_autofree char *d = g_dir_make_tmp ("extbodyd-d-XXXXXX", NULL);
  g_autofree char *pidfile = g_build_filename (d, "milter.pid", NULL);
  g_autofree char *path = g_build_filename (d, "milter.sock", NULL);
  g_autofree char *spec = g_strdup_printf ("unix:%s", path);
  g_autofree char *conf = g_build_filename (d, "empty.conf", NULL);
  g_file_set_contents (conf, DOORS_OFF, -1, NULL);
  int status = 0;
  g_autoptr (GError) error = NULL;
  g_spawn_sync (NULL, (char *[]) { (char *) g_getenv ("EXTBODYD"), "-d", "-P", pidfile, "-p", spec,
                                   "-c", conf, "-o", "fetch=off", NULL },
                NULL, 0, NULL, NULL, NULL, NULL, &status, &error);
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));   /* the parent returns at once */
  for (int i = 0; i < 200 && !g_file_test (pidfile, G_FILE_TEST_EXISTS); i++)
    g_usleep (20000);
  g_autofree char *pid = NULL;
  g_assert_true (g_file_get_contents (pidfile, &pid, NULL, NULL));
  pid_t p = (pid_t) atoi (pid);
  g_assert_cmpint (p, >, 1);
  g_autofree char *kill_cmd = g_strdup_printf ("kill -KILL %d; rm -rf '%s'", (int) p, d);
  guint wd = test_watchdog_add (kill_cmd);
  g_assert_false (process_gone (p));
  /* the socket is made under milter_umask (007 by default): 0770, for the
   * daemon's user and group only */
  struct stat sst;
  g_assert_cmpint (lstat (path, &sst), ==, 0);
  g_assert_true (S_ISSOCK (sst.st_mode));
  g_assert_cmpint (sst.st_mode & 0777, ==, 0770);
  Milter fake = { NULL, d, spec, 0 };
  run_script (&fake, "no-reference.lua");
  g_assert_cmpint (kill (p, SIGTERM), ==, 0);
  /* it ends on SIGTERM, within libmilter's shutdown delay and a margin */
  for (int i = 0; i < 600 && !process_gone (p); i++)
    g_usleep (25000);
  g_assert_true (process_gone (p));
  /* and removes its PID file and its socket (the detached daemon's working
   * directory is /: the paths are the ones given) */
  g_assert_false (g_file_test (pidfile, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (path, G_FILE_TEST_EXISTS));
  test_watchdog_remove (wd);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", d);
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", rm, NULL }, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL);
}

/* -n checks the configuration as the daemon reads it (file, -o,
 * --allow-network, -p) and exits: silent and 0 when valid, one line naming
 * the key and 78 (or 64 for a malformed -o) when not (a key set twice in the
 * file: both its lines); nothing is bound. */
static void
test_check (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbodyd-check-XXXXXX", NULL);
  g_autofree char *conf = g_build_filename (dir, "c.conf", NULL);
  g_assert_true (g_file_set_contents (conf, "milter_socket = inet:8891@127.0.0.1\n", -1, NULL));
  g_autofree char *bad = g_build_filename (dir, "bad.conf", NULL);
  g_assert_true (g_file_set_contents (bad, "[extbody]\ndeny_domains = *.example.com\n", -1, NULL));
  /* milter_mode = externalize: the store is made as the daemon makes it */
  g_autofree char *ext_ok = g_build_filename (dir, "ext-ok.conf", NULL);
  g_autofree char *ext_ok_text = g_strdup_printf ("milter_mode = externalize\nexternalize_store = %s\n"
                                                  "externalize_base_url = https://parts.example.org/\n", dir);
  g_assert_true (g_file_set_contents (ext_ok, ext_ok_text, -1, NULL));
  g_autofree char *ext_gone = g_build_filename (dir, "ext-gone.conf", NULL);
  g_assert_true (g_file_set_contents (ext_gone, "milter_mode = externalize\nexternalize_store = /nonexistent/parts\n"
                                                "externalize_base_url = https://parts.example.org/\n", -1, NULL));
  g_autofree char *ext_nobase = g_build_filename (dir, "ext-nobase.conf", NULL);
  g_autofree char *ext_nobase_text = g_strdup_printf ("milter_mode = externalize\nexternalize_store = %s\n", dir);
  g_assert_true (g_file_set_contents (ext_nobase, ext_nobase_text, -1, NULL));
  /* a key set twice: both lines named, whatever the later one says */
  g_autofree char *twice = g_build_filename (dir, "twice.conf", NULL);
  g_assert_true (g_file_set_contents (twice, "[extbody]\nfetch = on\nmilter_socket = inet:8891@127.0.0.1\n"
                                             "\n#fetch = off\nfetch = off\n", -1, NULL));
  g_autofree char *twice_text = g_strdup_printf ("extbodyd: %s:6: fetch is set a second time (first at %s:2)",
                                                 twice, twice);
  struct { const char *args[4]; int status; const char *text; } cases[] = {
    { { "-c", conf, NULL }, 0, NULL },
    { { "-c", twice, NULL }, 78, twice_text },
    { { "-c", twice, "-o", "fetch=off" }, 78, twice_text },
    { { "-c", conf, "-o", "milter_socket=inet:8892@127.0.0.1" }, 0, NULL },   /* -o overrides the file */
    { { "-c", conf, "-p", "inet:99999@127.0.0.1" }, 78, "-p milter_socket: \"inet:99999@127.0.0.1\"" },
    { { "-c", conf, "-p", "bogus" }, 78, "milter_socket: \"bogus\"" },
    { { "-c", conf, "-o", "allow_networks=10.0.0.0/33" }, 78, "allow_networks: item 1 of the list" },
    { { "-c", conf, "--allow-network", "banana" }, 78, "--allow-network banana" },
    { { "-c", conf, "-o", "allow_schemes=telnet" }, 78, "allow_schemes: \"telnet\"" },
    { { "-c", conf, "-o", "max_parts" }, 64, "-o max_parts: expected KEY=VALUE" },
    { { "-c", conf, "-o", "milter_umask=0778" }, 78, "milter_umask: \"0778\" is not an octal mask" },
    { { "-c", conf, "-o", "milter_umask=1777" }, 78, "milter_umask: \"1777\" is not an octal mask" },
    { { "-c", conf, "-o", "milter_umask=027" }, 0, NULL },
    { { "-c", bad, NULL }, 78, "bad.conf: deny_domains: \"*.example.com\": write example.com" },
    { { "-c", conf, "-o", "milter_mode=externalize" }, 78, "milter_mode = externalize: externalize_store is not set" },
    { { "-c", conf, "-o", "milter_mode=both" }, 78, "milter_mode: \"both\" is not one of resolve|externalize" },
    { { "-c", ext_ok, NULL }, 0, NULL },
    { { "-c", ext_gone, NULL }, 78, "milter_mode = externalize: externalize_store: /nonexistent/parts: No such file or directory" },
    { { "-c", ext_nobase, NULL }, 78, "milter_mode = externalize: externalize_base_url is not set" },
    { { "-c", ext_ok, "-o", "milter_mode=resolve" }, 0, NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    const char *argv[] = { g_getenv ("EXTBODYD"), "-n", cases[i].args[0], cases[i].args[1],
                           cases[i].args[2], cases[i].args[3], NULL };
    g_autofree char *out = NULL, *err = NULL;
    int wait = 0;
    g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &wait, NULL));
    g_test_message ("case %u: %d %s", i, WEXITSTATUS (wait), err);
    g_assert_true (WIFEXITED (wait));
    g_assert_cmpint (WEXITSTATUS (wait), ==, cases[i].status);
    g_assert_cmpstr (out, ==, "");
    if (cases[i].text) {
      g_assert_nonnull (strstr (err, cases[i].text));
      guint lines = 0;
      for (const char *c = err; *c; c++)
        lines += *c == '\n';
      g_assert_cmpuint (lines, ==, 1);
    } else {
      g_assert_cmpstr (err, ==, "");
    }
  }
  g_unlink (conf);
  g_unlink (twice);
  g_unlink (bad);
  g_unlink (ext_ok);
  g_unlink (ext_gone);
  g_unlink (ext_nobase);
  g_rmdir (dir);

  /* --help names both modes and the three doors */
  const char *help[] = { g_getenv ("EXTBODYD"), "--help", NULL };
  g_autofree char *hout = NULL;
  int hwait = 0;
  g_assert_true (g_spawn_sync (NULL, (char **) help, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &hout, NULL,
                               &hwait, NULL));
  g_assert_true (WIFEXITED (hwait) && WEXITSTATUS (hwait) == 0);
  g_assert_nonnull (strstr (hout, "resolve message/external-body references"));
  g_assert_nonnull (strstr (hout, "http_socket"));
  g_assert_nonnull (strstr (hout, "dovecot_filter_socket"));
  g_assert_nonnull (strstr (hout, "milter_mode = externalize"));
}


/* Run the miltertest @scripts through a daemon of its own with configuration
 * @conf_text and the further arguments @extra (NULL-terminated, nullable),
 * stop it with SIGTERM, and return what it wrote on standard error (its log:
 * a daemon in the foreground logs there). The directory is @dir's. */
static char *
daemon_log_of (const char *dir, const char *conf_text, const char *const *extra,
               const char *const *scripts)
{
  g_autofree char *path = g_build_filename (dir, "milter.sock", NULL);
  g_autofree char *conf = g_build_filename (dir, "milter.conf", NULL);
  g_autofree char *text = g_strconcat (DOORS_OFF, conf_text, NULL);
  g_assert_true (g_file_set_contents (conf, text, -1, NULL));
  Milter m = { NULL, g_strdup (dir), g_strdup_printf ("unix:%s", path), 0 };
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  const char *const base[] = { g_getenv ("EXTBODYD"), "-p", m.sock, "-c", conf };
  for (guint i = 0; i < G_N_ELEMENTS (base); i++)
    g_ptr_array_add (argv, (gpointer) base[i]);
  for (guint i = 0; extra && extra[i]; i++)
    g_ptr_array_add (argv, (gpointer) extra[i]);
  g_ptr_array_add (argv, NULL);
  g_autoptr (GError) error = NULL;
  m.proc = g_subprocess_newv ((const char *const *) argv->pdata, G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
  g_assert_no_error (error);
  g_autofree char *kill_cmd = g_strdup_printf ("kill -KILL %s; rm -rf '%s'",
                                               g_subprocess_get_identifier (m.proc), dir);
  m.watchdog = test_watchdog_add (kill_cmd);
  for (int i = 0; i < 200 && !g_file_test (path, G_FILE_TEST_EXISTS); i++)
    g_usleep (20000);
  g_assert_true (g_file_test (path, G_FILE_TEST_EXISTS));
  for (guint i = 0; scripts[i]; i++)
    run_script (&m, scripts[i]);
  g_subprocess_send_signal (m.proc, SIGTERM);
  char *err = NULL;
  g_assert_true (g_subprocess_communicate_utf8 (m.proc, NULL, NULL, NULL, &err, &error));
  g_assert_no_error (error);
  g_subprocess_wait (m.proc, NULL, NULL);
  test_watchdog_remove (m.watchdog);
  g_test_message ("%s", err);
  g_object_unref (m.proc);
  g_free (m.dir);
  g_free (m.sock);
  return err;
}

/* When it stops, one line sums up every message it planned since it started;
 * with metrics_file, the same counters are left in the Prometheus text format,
 * read back with the reference parser (python3-prometheus-client) when there. */
static void
test_summary_at_exit (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbodyd-XXXXXX", NULL);
  g_autofree char *prom = g_build_filename (dir, "extbody.prom", NULL);
  g_autofree char *conf_text = g_strdup_printf ("metrics_file = %s\n", prom);
  g_autofree char *err = daemon_log_of (dir, conf_text, NULL,
                                        (const char *[]) { "data-reference.lua", "data-reference.lua", NULL });
  g_assert_nonnull (strstr (err, "extbodyd: exiting: 2 messages scanned, 2 references, "
                                 "2 resolved, 2 messages changed\n"));
  /* the file written at exit, parsed by the reference parser */
  g_assert_true (g_file_test (prom, G_FILE_TEST_IS_REGULAR));
  if (system ("/usr/bin/python3 -c 'import prometheus_client.parser' 2>/dev/null") == 0) {
    g_autofree char *script = g_test_build_filename (G_TEST_DIST, "integration", "parse-metrics.py", NULL);
    g_autofree char *parsed = NULL;
    int wait = 0;
    g_assert_true (g_spawn_sync (NULL, (char *[]) { "/usr/bin/python3", script, prom, NULL }, NULL,
                                 G_SPAWN_DEFAULT, NULL, NULL, &parsed, NULL, &wait, NULL));
    g_assert_true (g_spawn_check_wait_status (wait, NULL));
    g_test_message ("%s", parsed);
    g_assert_nonnull (strstr (parsed, "\nextbody_messages_total{} 2.0\n"));
    g_assert_nonnull (strstr (parsed, "\nextbody_references_total{} 2.0\n"));
    g_assert_nonnull (strstr (parsed, "\nextbody_references_resolved_total{} 2.0\n"));
    g_assert_nonnull (strstr (parsed, "\nextbody_messages_changed_total{} 2.0\n"));
    g_assert_nonnull (strstr (parsed, "\nextbody_left_total{reason=fetch-off} 0.0\n"));
  } else {
    g_test_message ("/usr/bin/python3 with prometheus_client missing: the file is not parsed");
  }
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", rm, NULL }, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL);
}

/* Issue 38: a door whose unix socket's directory does not exist is off, with
 * a line, and the others serve (started by hand with only milter_socket in
 * mind, the HTTP and Dovecot doors' /run/extbody missing); with no door open
 * it does not start (69); started as root without -u, it says so. */
static void
test_doors_off (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbodyd-doors-XXXXXX", NULL);
  g_autofree char *conf = g_build_filename (dir, "milter.conf", NULL);
  g_autofree char *text = g_strdup_printf ("http_socket = unix:%s/run/http.sock\n"
                                           "dovecot_filter_socket = %s/run/extbody\n", dir, dir);
  g_assert_true (g_file_set_contents (conf, text, -1, NULL));
  g_autofree char *path = g_build_filename (dir, "milter.sock", NULL);
  g_autofree char *spec = g_strdup_printf ("unix:%s", path);
  g_autoptr (GError) error = NULL;
  Milter m = { NULL, g_strdup (dir), g_strdup (spec), 0 };
  m.proc = g_subprocess_new (G_SUBPROCESS_FLAGS_STDERR_PIPE, &error, g_getenv ("EXTBODYD"), "-p", spec, "-c", conf,
                             "-o", "fetch=off", NULL);
  g_assert_no_error (error);
  g_autofree char *kill_cmd = g_strdup_printf ("kill -KILL %s; rm -rf '%s'", g_subprocess_get_identifier (m.proc), dir);
  m.watchdog = test_watchdog_add (kill_cmd);
  for (int i = 0; i < 200 && !g_file_test (path, G_FILE_TEST_EXISTS); i++)
    g_usleep (20000);
  g_assert_true (g_file_test (path, G_FILE_TEST_EXISTS));
  run_script (&m, "data-reference.lua");   /* the milter's door serves */
  g_subprocess_send_signal (m.proc, SIGTERM);
  g_autofree char *err = NULL;
  g_assert_true (g_subprocess_communicate_utf8 (m.proc, NULL, NULL, NULL, &err, &error));
  g_assert_no_error (error);
  g_subprocess_wait (m.proc, NULL, NULL);
  g_assert_true (g_subprocess_get_if_exited (m.proc));
  g_assert_cmpint (g_subprocess_get_exit_status (m.proc), ==, 0);
  test_watchdog_remove (m.watchdog);
  g_test_message ("%s", err);
  g_autofree char *http_off = g_strdup_printf ("extbodyd: http_socket %s/run/http.sock: its directory %s/run does not "
                                               "exist, so this door is off", dir, dir);
  g_autofree char *dc_off = g_strdup_printf ("extbodyd: dovecot_filter_socket %s/run/extbody: its directory %s/run "
                                             "does not exist, so this door is off", dir, dir);
  g_assert_nonnull (strstr (err, http_off));
  g_assert_nonnull (strstr (err, dc_off));
  if (geteuid () == 0)
    g_assert_nonnull (strstr (err, "extbodyd: running as root: no -u USER was given"));
  g_object_unref (m.proc);
  g_free (m.dir);
  g_free (m.sock);

  /* the milter's socket in a missing directory too: no door, no start */
  g_autofree char *gone = g_strdup_printf ("unix:%s/run/milter.sock", dir);
  g_autofree char *out = NULL, *err2 = NULL;
  int wait = 0;
  g_assert_true (g_spawn_sync (NULL, (char *[]) { (char *) g_getenv ("EXTBODYD"), "-p", gone, "-c", conf, NULL }, NULL,
                               G_SPAWN_DEFAULT, NULL, NULL, &out, &err2, &wait, &error));
  g_assert_no_error (error);
  g_test_message ("%s", err2);
  g_assert_true (WIFEXITED (wait));
  g_assert_cmpint (WEXITSTATUS (wait), ==, 69);
  g_autofree char *milter_off = g_strdup_printf ("extbodyd: milter_socket %s/run/milter.sock: its directory %s/run does "
                                                 "not exist, so this door is off", dir, dir);
  g_assert_nonnull (strstr (err2, milter_off));
  g_assert_nonnull (strstr (err2, "extbodyd: no door is open (the lines above say why): nothing to serve"));
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", rm, NULL }, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL);
}

/* A reference the milter could not fetch: its log line says why, in the
 * fetch's own words (the curl error naming the host and port), and never the
 * URL's path or query (issue 26). */
static void
test_log_detail (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbodyd-XXXXXX", NULL);
  g_autofree char *err = daemon_log_of (dir, "", (const char *[]) { "-o", "fetch=on", "--allow-network",
                                                                 "127.0.0.1/32", "-o", "allow_ports=1", NULL },
                                        (const char *[]) { "fetch-failed.lua", NULL });
  const char *line = strstr (err, "msgid=<refused@test.example> ref=1");
  g_assert_nonnull (line);
  g_autofree char *l = g_strndup (line, strcspn (line, "\n"));
  g_assert_nonnull (strstr (l, " scheme=http host=127.0.0.1 outcome=left reason=fetch-failed detail=\""));
  g_assert_nonnull (strstr (l, "127.0.0.1 port 1"));
  g_assert_null (strstr (err, "s3cr3t"));
  g_assert_null (strstr (err, "report.pdf"));
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", rm, NULL }, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL);
}

/* extbodyd --check-mta USER as @user with @spec (and MAIL_CONFIG=@mail_config
 * when set): the exit status, standard output in @out, standard error in @err. */
static int
check_mta (const char *spec, const char *user, const char *timeout, const char *mail_config,
           char **out, char **err)
{
  g_autofree char *conf = g_build_filename (milter->dir, "empty.conf", NULL);
  const char *argv[] = { g_getenv ("EXTBODYD"), "-c", conf, "-p", spec, "--check-mta", user,
                         "--check-timeout", timeout, NULL };
  g_auto (GStrv) env = g_get_environ ();
  if (mail_config)
    env = g_environ_setenv (env, "MAIL_CONFIG", mail_config, TRUE);
  int wait = 0;
  g_assert_true (g_spawn_sync (NULL, (char **) argv, env, G_SPAWN_DEFAULT, NULL, NULL, out, err, &wait, NULL));
  g_test_message ("--check-mta %s %s: %s%s", user, spec, *out, *err);
  g_assert_true (WIFEXITED (wait));
  /* always one line */
  const char *text = **out ? *out : *err;
  g_assert_nonnull (strchr (text, '\n'));
  g_assert_cmpstr (strchr (text, '\n') + 1, ==, "");
  return WEXITSTATUS (wait);
}

/* A server on a unix socket at @path that accepts one connection and writes
 * @greeting (NULL: says nothing and waits), in a thread. */
typedef struct { int lfd; const char *greeting; } Fake;

static gpointer
fake_run (gpointer data)
{
  Fake *f = data;
  int c = accept (f->lfd, NULL, NULL);
  if (c >= 0) {
    if (f->greeting)
      (void) !write (c, f->greeting, strlen (f->greeting));
    char buf[64];
    while (read (c, buf, sizeof buf) > 0)
      ;
    close (c);
  }
  return NULL;
}

static int
unix_listener (const char *path, gboolean listening)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  g_assert_cmpuint (strlen (path), <, sizeof sa.sun_path);
  memcpy (sa.sun_path, path, strlen (path) + 1);
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  g_assert_cmpint (fd, >=, 0);
  g_assert_cmpint (bind (fd, (struct sockaddr *) &sa, sizeof sa), ==, 0);
  if (listening)
    g_assert_cmpint (listen (fd, 4), ==, 0);
  return fd;
}

/* --check-mta (issue 26): the MTA's user reaches the socket and negotiates, or
 * one line names what is wrong, with the sysexits status. */
static void
test_check_mta (void)
{
  struct passwd *me = getpwuid (geteuid ());
  g_assert_nonnull (me);
  g_autofree char *self = g_strdup (me->pw_name);
  g_autofree char *out = NULL, *err = NULL;
  /* the running daemon: OK, with what it negotiated */
  g_assert_cmpint (check_mta (milter->sock, self, "5", NULL, &out, &err), ==, 0);
  g_autofree char *ok = g_strdup_printf ("extbodyd: OK: %s connects to %s and negotiates milter protocol 6 "
                                         "(the milter asks to: add headers, change headers, replace the body)\n",
                                         self, milter->sock + 5);
  g_assert_cmpstr (out, ==, ok);
  g_assert_cmpstr (err, ==, "");

  g_autofree char *dir = g_dir_make_tmp ("extbody-check-mta-XXXXXX", NULL);
  /* no socket: the daemon is not running, or listens elsewhere */
  g_autofree char *gone = g_strdup_printf ("unix:%s/none.sock", dir);
  g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
  gint64 t0 = g_get_monotonic_time ();
  g_assert_cmpint (check_mta (gone, self, "1", NULL, &out, &err), ==, 69);
  /* it waited for a starting daemon's socket, up to --check-timeout */
  g_assert_cmpint (g_get_monotonic_time () - t0, >=, G_USEC_PER_SEC);
  g_assert_nonnull (strstr (err, "none.sock: no such socket (after 1 s): extbodyd is not running, "
                                 "or listens elsewhere (milter_socket)"));
  /* a socket left behind, nobody listening */
  g_autofree char *stale_path = g_build_filename (dir, "stale.sock", NULL);
  int stale = unix_listener (stale_path, FALSE);
  g_autofree char *stale_spec = g_strdup_printf ("unix:%s", stale_path);
  g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
  g_assert_cmpint (check_mta (stale_spec, self, "0", NULL, &out, &err), ==, 69);
  g_assert_nonnull (strstr (err, "Connection refused"));
  g_assert_nonnull (strstr (err, "extbodyd is not running"));
  close (stale);
  /* something else listens: an SMTP greeting is not a milter's answer */
  g_autofree char *smtp_path = g_build_filename (dir, "smtp.sock", NULL);
  Fake smtp = { unix_listener (smtp_path, TRUE), "220 mail.test.example ESMTP\r\n" };
  GThread *th = g_thread_new ("fake-smtp", fake_run, &smtp);
  g_autofree char *smtp_spec = g_strdup_printf ("unix:%s", smtp_path);
  g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
  g_assert_cmpint (check_mta (smtp_spec, self, "5", NULL, &out, &err), ==, 76);
  g_assert_nonnull (strstr (err, "but what answers is not a milter"));
  g_thread_join (th);
  close (smtp.lfd);
  /* a listener that never answers: the time-out, named */
  g_autofree char *mute_path = g_build_filename (dir, "mute.sock", NULL);
  Fake mute = { unix_listener (mute_path, TRUE), NULL };
  th = g_thread_new ("fake-mute", fake_run, &mute);
  g_autofree char *mute_spec = g_strdup_printf ("unix:%s", mute_path);
  g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
  g_assert_cmpint (check_mta (mute_spec, self, "1", NULL, &out, &err), ==, 75);
  g_assert_nonnull (strstr (err, "but no milter answered the negotiation within 1 s"));
  g_thread_join (th);
  close (mute.lfd);
  /* an unknown user */
  g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
  g_assert_cmpint (check_mta (milter->sock, "no-such-user-extbody", "1", NULL, &out, &err), ==, 67);
  g_assert_nonnull (strstr (err, "no user no-such-user-extbody on this system"));

  if (geteuid () != 0) {
    /* another user's check needs root */
    g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
    g_assert_cmpint (check_mta (milter->sock, "root", "1", NULL, &out, &err), ==, 77);
    g_assert_nonnull (strstr (err, "run the check as root"));
    g_test_message ("not root: the checks as another user are not run");
  } else if (getpwnam ("nobody")) {
    /* as nobody, through a directory of root's group only: which directory,
     * which group, and the command that lets it in */
    g_autofree char *locked = g_build_filename (dir, "locked", NULL);
    g_assert_cmpint (g_mkdir (locked, 0750), ==, 0);
    g_assert_cmpint (chmod (dir, 0755), ==, 0);
    g_autofree char *lsock = g_strdup_printf ("unix:%s/milter.sock", locked);
    g_autofree char *conf = g_build_filename (milter->dir, "empty.conf", NULL);
    g_autoptr (GSubprocess) p = g_subprocess_new (G_SUBPROCESS_FLAGS_STDERR_SILENCE, NULL, g_getenv ("EXTBODYD"),
                                                  "-c", conf, "-p", lsock, "-o", "milter_umask=000", NULL);
    g_assert_nonnull (p);
    g_autofree char *kill_cmd = g_strdup_printf ("kill -KILL %s", g_subprocess_get_identifier (p));
    guint wd = test_watchdog_add (kill_cmd);
    g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
    g_assert_cmpint (check_mta (lsock, "nobody", "5", NULL, &out, &err), ==, 77);
    struct group *gr = getgrgid (getegid ());
    g_autofree char *want = g_strdup_printf ("nobody may not connect to %s: %s is root:%s mode 0750 and nobody is not "
                                             "in the group %s: adduser nobody %s, then restart the mail server",
                                             lsock + 5, locked, gr->gr_name, gr->gr_name, gr->gr_name);
    g_assert_nonnull (strstr (err, want));
    /* the same directory open to all: nobody connects */
    g_assert_cmpint (chmod (locked, 0755), ==, 0);
    g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
    g_assert_cmpint (check_mta (lsock, "nobody", "5", NULL, &out, &err), ==, 0);
    g_assert_true (g_str_has_prefix (out, "extbodyd: OK: nobody connects to "));

    /* Postfix: its own settings must name the socket, each resolved as its
     * service resolves it (MAIL_CONFIG: a private configuration directory) */
    g_autofree char *postconf = g_find_program_in_path ("postconf");
    if (postconf && getpwnam ("postfix")) {
      g_autofree char *cfg = g_build_filename (dir, "postfix", NULL);
      g_autofree char *spool = g_build_filename (dir, "spool", NULL);
      g_autofree char *sdir = g_build_filename (spool, "extbody", NULL);
      g_assert_cmpint (g_mkdir_with_parents (cfg, 0755), ==, 0);
      g_assert_cmpint (g_mkdir_with_parents (sdir, 0755), ==, 0);
      g_autofree char *psock = g_strdup_printf ("unix:%s/extbody.sock", sdir);
      g_autoptr (GSubprocess) pp = g_subprocess_new (G_SUBPROCESS_FLAGS_STDERR_SILENCE, NULL,
                                                     g_getenv ("EXTBODYD"), "-c", conf, "-p", psock,
                                                     "-o", "milter_umask=000", NULL);
      g_autofree char *kill_pp = g_strdup_printf ("kill -KILL %s", g_subprocess_get_identifier (pp));
      guint wdp = test_watchdog_add (kill_pp);
      g_autofree char *master = g_build_filename (cfg, "master.cf", NULL);
      g_assert_true (g_file_set_contents (master, "smtp inet n - y - - smtpd\n"
                                                  "cleanup unix n - y - 0 cleanup\n", -1, NULL));
      g_autofree char *main_cf = g_build_filename (cfg, "main.cf", NULL);
      /* the old snippet's name: inside the chroot it is another file */
      g_autofree char *text = g_strdup_printf ("queue_directory = %s\ncompatibility_level = 3.6\n"
                                               "smtpd_milters = unix:/run/extbody/milter.sock\n"
                                               "non_smtpd_milters = $smtpd_milters\n", spool);
      g_assert_true (g_file_set_contents (main_cf, text, -1, NULL));
      g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
      g_assert_cmpint (check_mta (psock, "postfix", "5", cfg, &out, &err), ==, 78);
      g_autofree char *miss = g_strdup_printf ("Postfix's smtpd_milters = unix:/run/extbody/milter.sock (smtp/inet, "
                                               "chrooted in %s) reaches %s/run/extbody/milter.sock, but extbodyd "
                                               "listens on %s/extbody.sock: mail passes unfiltered; set smtpd_milters "
                                               "= unix:extbody/extbody.sock in main.cf", spool, spool, sdir);
      g_assert_nonnull (strstr (err, miss));
      /* the old name beside a neighbour: replaced in its place, the neighbour kept */
      g_free (text);
      text = g_strdup_printf ("queue_directory = %s\ncompatibility_level = 3.6\n"
                              "smtpd_milters = unix:opendkim/opendkim.sock, unix:/run/extbody/milter.sock\n", spool);
      g_assert_true (g_file_set_contents (main_cf, text, -1, NULL));
      g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
      g_assert_cmpint (check_mta (psock, "postfix", "5", cfg, &out, &err), ==, 78);
      g_assert_nonnull (strstr (err, "set smtpd_milters = unix:opendkim/opendkim.sock, unix:extbody/extbody.sock in main.cf"));
      /* a neighbour only (issue 38): extbodyd goes after it, it stays */
      g_free (text);
      text = g_strdup_printf ("queue_directory = %s\ncompatibility_level = 3.6\n"
                              "smtpd_milters = unix:opendkim/opendkim.sock\n", spool);
      g_assert_true (g_file_set_contents (main_cf, text, -1, NULL));
      g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
      g_assert_cmpint (check_mta (psock, "postfix", "5", cfg, &out, &err), ==, 78);
      g_assert_nonnull (strstr (err, "in smtpd_milters: mail received over SMTP passes unfiltered; set smtpd_milters "
                                     "= unix:opendkim/opendkim.sock, unix:extbody/extbody.sock in main.cf"));
      /* set twice, as appending a snippet to a main.cf with its own milters
       * did (issue 38): the neighbour of the first line gets no mail, and the
       * check says so even though the last line names the socket */
      g_free (text);
      text = g_strdup_printf ("queue_directory = %s\ncompatibility_level = 3.6\n"
                              "smtpd_milters = unix:opendkim/opendkim.sock\n# extbodyd\n"
                              "smtpd_milters = unix:extbody/extbody.sock\n", spool);
      g_assert_true (g_file_set_contents (main_cf, text, -1, NULL));
      g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
      g_assert_cmpint (check_mta (psock, "postfix", "5", cfg, &out, &err), ==, 78);
      g_autofree char *twice = g_strdup_printf ("%s sets smtpd_milters 2 times (lines 3, 5): Postfix uses the last, "
                                                "\"unix:extbody/extbody.sock\", and the milters of the others get no "
                                                "mail", main_cf);
      g_assert_nonnull (strstr (err, twice));
      /* none at all */
      g_free (text);
      text = g_strdup_printf ("queue_directory = %s\ncompatibility_level = 3.6\n", spool);
      g_assert_true (g_file_set_contents (main_cf, text, -1, NULL));
      g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
      g_assert_cmpint (check_mta (psock, "postfix", "5", cfg, &out, &err), ==, 78);
      g_assert_nonnull (strstr (err, "in smtpd_milters: mail received over SMTP passes unfiltered; set smtpd_milters "
                                     "= unix:extbody/extbody.sock in main.cf"));
      /* the packaged snippet's name: relative to the queue directory */
      g_free (text);
      text = g_strdup_printf ("queue_directory = %s\ncompatibility_level = 3.6\n"
                              "smtpd_milters = unix:extbody/extbody.sock\nnon_smtpd_milters = $smtpd_milters\n", spool);
      g_assert_true (g_file_set_contents (main_cf, text, -1, NULL));
      g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
      g_assert_cmpint (check_mta (psock, "postfix", "5", cfg, &out, &err), ==, 0);
      g_autofree char *pok = g_strdup_printf ("; Postfix's smtpd_milters (smtp/inet, chrooted in %s) names it as "
                                              "unix:extbody/extbody.sock\n", spool);
      g_assert_true (g_str_has_suffix (out, pok));
      /* a master.cf override on the service wins over main.cf */
      g_assert_true (g_file_set_contents (master, "smtp inet n - y - - smtpd\n  -o smtpd_milters=\n"
                                                  "submission inet n - y - - smtpd\n"
                                                  "  -o { smtpd_milters = { unix:/extbody/extbody.sock, "
                                                  "default_action = tempfail } }\n", -1, NULL));
      g_clear_pointer (&out, g_free); g_clear_pointer (&err, g_free);
      g_assert_cmpint (check_mta (psock, "postfix", "5", cfg, &out, &err), ==, 0);
      g_autofree char *sub = g_strdup_printf ("; Postfix's smtpd_milters (submission/inet, chrooted in %s) names it as "
                                              "unix:/extbody/extbody.sock\n", spool);
      g_assert_true (g_str_has_suffix (out, sub));
      g_subprocess_send_signal (pp, SIGTERM);
      g_subprocess_wait (pp, NULL, NULL);
      test_watchdog_remove (wdp);
    } else {
      g_test_message ("no postconf or no user postfix: Postfix's settings are not checked");
    }
    g_subprocess_send_signal (p, SIGTERM);
    g_subprocess_wait (p, NULL, NULL);
    test_watchdog_remove (wd);
  }
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", rm, NULL }, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_autofree char *mt = g_find_program_in_path ("miltertest");
  if (!mt)
    test_skip_all ("miltertest is not installed (apt-get install miltertest)");
  if (!g_getenv ("EXTBODYD"))
    test_skip_all ("EXTBODYD is not set (run through ctest)");
  milter = milter_start ((const char *[]) { "-o", "fetch=off", NULL });
  g_test_add_data_func ("/milter/no-reference", "no-reference.lua", test_script);
  g_test_add_data_func ("/milter/data-reference", "data-reference.lua", test_script);
  g_test_add_data_func ("/milter/top-level", "top-level.lua", test_script);
  g_test_add_data_func ("/milter/abort", "abort.lua", test_script);
  g_test_add_func ("/milter/too-large", test_too_large);
  g_test_add_func ("/milter/check-configuration", test_check);
  g_test_add_func ("/milter/spill-to-file", test_spill);
  g_test_add_func ("/milter/spill-fetched-body-to-file", test_spill_fetched);
  g_test_add_func ("/milter/user", test_user);
  g_test_add_func ("/milter/daemon-pidfile", test_daemon);
  g_test_add_func ("/milter/summary-at-exit", test_summary_at_exit);
  g_test_add_func ("/milter/log-detail", test_log_detail);
  g_test_add_func ("/milter/check-mta", test_check_mta);
  g_test_add_func ("/milter/doors-off", test_doors_off);
  g_test_add_func ("/milter/signals-at-start", test_signals_at_start);
  int rc = g_test_run ();
  milter_stop (milter);
  return rc;
}
