/* test-milter.c - extbody-milter through the milter protocol, driven by
 * miltertest (Debian's miltertest) with the Lua scripts beside this file. The
 * daemon is started by the test on a unix socket in a temporary directory. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  GSubprocess *proc;
  char        *dir;
  char        *sock;   /* unix:PATH */
} Milter;

static Milter *
milter_start (const char *const *extra)
{
  Milter *m = g_new0 (Milter, 1);
  m->dir = g_dir_make_tmp ("extbody-milter-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (m->dir, "milter.sock", NULL);
  m->sock = g_strdup_printf ("unix:%s", path);
  g_autofree char *conf = g_build_filename (m->dir, "empty.conf", NULL);
  g_file_set_contents (conf, "", 0, NULL);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) g_getenv ("EXTBODY_MILTER"));
  g_ptr_array_add (argv, "-p");
  g_ptr_array_add (argv, m->sock);
  g_ptr_array_add (argv, "-c");
  g_ptr_array_add (argv, conf);
  for (guint i = 0; extra && extra[i]; i++)
    g_ptr_array_add (argv, (gpointer) extra[i]);
  g_ptr_array_add (argv, NULL);
  g_autoptr (GError) error = NULL;
  m->proc = g_subprocess_newv ((const char *const *) argv->pdata, G_SUBPROCESS_FLAGS_STDERR_SILENCE, &error);
  g_assert_no_error (error);
  for (int i = 0; i < 200 && !g_file_test (path, G_FILE_TEST_EXISTS); i++)
    g_usleep (20000);
  g_assert_true (g_file_test (path, G_FILE_TEST_EXISTS));
  /* created so that the MTA's user can connect */
  GStatBuf st;
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0777);
  return m;
}

static void
milter_stop (Milter *m)
{
  g_subprocess_send_signal (m->proc, SIGTERM);
  g_subprocess_wait (m->proc, NULL, NULL);
  g_object_unref (m->proc);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", m->dir);
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", rm, NULL }, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL);
  g_free (m->dir);
  g_free (m->sock);
  g_free (m);
}

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
  g_spawn_sync (NULL, (char *[]) { "miltertest", "-D", dsock, "-D", dlib, "-s", file, NULL }, NULL,
                G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err, &status, &error);
  g_assert_no_error (error);
  g_test_message ("%s: %s%s", script, out, err);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_nonnull (strstr (out, "PASS"));
}

static Milter *milter;

static void
test_unavailable (void)
{
  g_test_skip ("miltertest or extbody-milter not available");
}

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

/* A message larger than milter_spill_size goes through the spool file. */
static void
test_spill (void)
{
  Milter *m = milter_start ((const char *[]) { "-o", "fetch=off", "-o", "milter_spill_size=64", NULL });
  run_script (m, "data-reference.lua");
  run_script (m, "top-level.lua");
  milter_stop (m);
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

/* -d detaches, writes the PID file and keeps serving. */
static void
test_daemon (void)
{
  g_autofree char *d = g_dir_make_tmp ("extbody-milter-d-XXXXXX", NULL);
  g_autofree char *pidfile = g_build_filename (d, "milter.pid", NULL);
  g_autofree char *path = g_build_filename (d, "milter.sock", NULL);
  g_autofree char *spec = g_strdup_printf ("unix:%s", path);
  g_autofree char *conf = g_build_filename (d, "empty.conf", NULL);
  g_file_set_contents (conf, "", 0, NULL);
  int status = 0;
  g_autoptr (GError) error = NULL;
  g_spawn_sync (NULL, (char *[]) { (char *) g_getenv ("EXTBODY_MILTER"), "-d", "-P", pidfile, "-p", spec,
                                   "-c", conf, "-o", "fetch=off", NULL },
                NULL, 0, NULL, NULL, NULL, NULL, &status, &error);
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));   /* the parent returns at once */
  for (int i = 0; i < 200 && !g_file_test (pidfile, G_FILE_TEST_EXISTS); i++)
    g_usleep (20000);
  g_autofree char *pid = NULL;
  g_assert_true (g_file_get_contents (pidfile, &pid, NULL, NULL));
  pid_t p = (pid_t) atoi (pid);
  g_assert_cmpint (kill (p, 0), ==, 0);
  Milter fake = { NULL, d, spec };
  run_script (&fake, "no-reference.lua");
  kill (p, SIGTERM);
  for (int i = 0; i < 400 && kill (p, 0) == 0; i++)
    g_usleep (25000);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", d);
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", rm, NULL }, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_autofree char *mt = g_find_program_in_path ("miltertest");
  if (!mt || !g_getenv ("EXTBODY_MILTER")) {
    g_test_add_func ("/milter/unavailable", test_unavailable);
    return g_test_run ();
  }
  milter = milter_start ((const char *[]) { "-o", "fetch=off", NULL });
  g_test_add_data_func ("/milter/no-reference", "no-reference.lua", test_script);
  g_test_add_data_func ("/milter/data-reference", "data-reference.lua", test_script);
  g_test_add_data_func ("/milter/top-level", "top-level.lua", test_script);
  g_test_add_data_func ("/milter/abort", "abort.lua", test_script);
  g_test_add_func ("/milter/too-large", test_too_large);
  g_test_add_func ("/milter/spill-to-file", test_spill);
  g_test_add_func ("/milter/user", test_user);
  g_test_add_func ("/milter/daemon-pidfile", test_daemon);
  int rc = g_test_run ();
  milter_stop (milter);
  return rc;
}
