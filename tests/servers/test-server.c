/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-server.c - the tests' loopback servers as child processes (see
 * test-server.h). */
#include "test-server.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <glib/gstdio.h>

void
test_skip_all (const char *reason)
{
  g_print ("SKIP: %s\n", reason);
  fflush (stdout);
  /* _exit: no atexit handlers, so LeakSanitizer does not report what the
   * skipping test still held (it is a skip, reported as one, not a leak) */
  _exit (77);
}

/* ---- the watchdog ------------------------------------------------------- */

/* Reads "+ID COMMAND" and "-ID" lines until its standard input closes, then
 * runs the commands still registered, newest first. It ignores the signals a
 * terminal or ctest sends the test's process group. */
static const char watchdog_script[] =
  "trap '' HUP INT TERM PIPE\n"
  "f=$(mktemp) || exit 1\n"
  "while IFS= read -r l; do printf '%s\\n' \"$l\" >> \"$f\"; done\n"
  "awk '/^-/ { gone[substr($1, 2)] = 1; next }\n"
  "     /^\\+/ { id = substr($1, 2); c = $0; sub(/^[^ ]* /, \"\", c); ids[++n] = id; cmd[id] = c }\n"
  "     END { for (i = n; i > 0; i--) if (!(ids[i] in gone)) print cmd[ids[i]] }' \"$f\" > \"$f.sh\"\n"
  "sh \"$f.sh\" >/dev/null 2>&1 </dev/null\n"
  "rm -f \"$f\" \"$f.sh\"\n";

static int watchdog_fd = -1;
static guint watchdog_next = 1;

static void
watchdog_child_setup (gpointer data)
{
  (void) data;
  setsid ();
}

static void
watchdog_write (const char *line)
{
  if (watchdog_fd < 0) {
    char *argv[] = { "/bin/sh", "-c", (char *) watchdog_script, NULL };
    g_autoptr (GError) error = NULL;
    /* stdout and stderr are the test's: whoever reads the test's output to its
     * end (ctest, the meta-test) also waits for the watchdog's clean-up */
    g_assert_true (g_spawn_async_with_pipes (NULL, argv, NULL, G_SPAWN_DEFAULT, watchdog_child_setup, NULL,
                                             NULL, &watchdog_fd, NULL, NULL, &error));
    g_assert_no_error (error);
  }
  gsize len = strlen (line), done = 0;
  while (done < len) {
    ssize_t w = write (watchdog_fd, line + done, len - done);
    if (w < 0 && errno == EINTR)
      continue;
    g_assert_cmpint (w, >, 0);
    done += (gsize) w;
  }
}

guint
test_watchdog_add (const char *shell_command)
{
  g_assert_null (strchr (shell_command, '\n'));
  guint id = watchdog_next++;
  g_autofree char *line = g_strdup_printf ("+%u %s\n", id, shell_command);
  watchdog_write (line);
  return id;
}

void
test_watchdog_remove (guint id)
{
  if (id == 0 || watchdog_fd < 0)
    return;
  g_autofree char *line = g_strdup_printf ("-%u\n", id);
  watchdog_write (line);
}

void
test_abort_point (const char *where, const char *info)
{
  const char *want = g_getenv ("EXTBODY_TEST_ABORT_AFTER_START");
  if (!want || strcmp (want, where) != 0)
    return;
  printf ("ABORT %s: %s\n", where, info);
  fflush (stdout);
  abort ();
}

/* ---- the servers -------------------------------------------------------- */

static void
server_child_setup (gpointer data)
{
  (void) data;
  /* the test died: so does the server (GSubprocess forks from this thread) */
  prctl (PR_SET_PDEATHSIG, SIGTERM);
}

TestServer *
test_server_start (const char *script, const char *const *args, const char *const *announce,
                   gboolean quiet, GError **error)
{
  static const char *const port_only[] = { "PORT ", NULL };
  if (!announce)
    announce = port_only;
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "servers", script, NULL);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, g_file_test ("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE)
                           ? "/usr/bin/python3" : "python3");
  g_ptr_array_add (argv, path);
  for (guint i = 0; args && args[i]; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, "--lifetime");
  g_ptr_array_add (argv, "600");
  g_ptr_array_add (argv, NULL);

  GSubprocessFlags flags = G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE;
  if (quiet)
    flags |= G_SUBPROCESS_FLAGS_STDERR_SILENCE;
  TestServer *s = g_new0 (TestServer, 1);
  g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (flags);
  g_subprocess_launcher_set_child_setup (launcher, server_child_setup, NULL, NULL);
  s->proc = g_subprocess_launcher_spawnv (launcher, (const char *const *) argv->pdata, error);
  if (!s->proc) {
    g_free (s);
    return NULL;
  }
  g_autofree char *kill_cmd = g_strdup_printf ("kill -KILL %s", g_subprocess_get_identifier (s->proc));
  s->watchdog = test_watchdog_add (kill_cmd);
  g_autoptr (GDataInputStream) in = g_data_input_stream_new (g_subprocess_get_stdout_pipe (s->proc));
  for (guint i = 0; announce[i]; i++) {
    g_assert_cmpuint (i, <, G_N_ELEMENTS (s->ports));
    g_autofree char *line = g_data_input_stream_read_line (in, NULL, NULL, error);
    if (!line || !g_str_has_prefix (line, announce[i]) || atoi (line + strlen (announce[i])) <= 0) {
      if (error && !*error)
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s did not announce its %s port",
                     script, announce[i]);
      test_server_stop (s);
      return NULL;
    }
    s->ports[i] = (guint) atoi (line + strlen (announce[i]));
  }
  s->port = s->ports[0];
  g_autofree char *info = g_strdup_printf ("pid=%s port=%u", g_subprocess_get_identifier (s->proc), s->port);
  test_abort_point ("server", info);
  return s;
}

void
test_server_stop (TestServer *server)
{
  if (!server)
    return;
  g_output_stream_close (g_subprocess_get_stdin_pipe (server->proc), NULL, NULL);
  g_subprocess_wait (server->proc, NULL, NULL);
  test_watchdog_remove (server->watchdog);
  g_object_unref (server->proc);
  g_free (server);
}

gint64
test_http_get_number (guint port, const char *path)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GSocketClient) client = g_socket_client_new ();
  /* straight to the test server: no proxy from the environment, and a server
   * that stops answering fails the test instead of holding it */
  g_socket_client_set_enable_proxy (client, FALSE);
  g_socket_client_set_timeout (client, 10);
  g_autoptr (GSocketConnection) c = g_socket_client_connect_to_host (client, "127.0.0.1", port, NULL, &error);
  g_assert_no_error (error);
  g_autofree char *req = g_strdup_printf ("GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
  GOutputStream *os = g_io_stream_get_output_stream (G_IO_STREAM (c));
  g_assert_true (g_output_stream_write_all (os, req, strlen (req), NULL, NULL, &error));
  g_autoptr (GString) resp = g_string_new (NULL);
  char buf[4096];
  gssize got;
  while ((got = g_input_stream_read (g_io_stream_get_input_stream (G_IO_STREAM (c)), buf, sizeof buf,
                                     NULL, &error)) > 0)
    g_string_append_len (resp, buf, got);
  g_assert_no_error (error);
  const char *body = strstr (resp->str, "\r\n\r\n");
  g_assert_nonnull (body);
  return g_ascii_strtoll (body + 4, NULL, 10);
}

/* ---- a private redis-server ---------------------------------------------- */

guint
test_free_port (void)
{
  /* never the same port twice in one process: two servers of one test were
   * once given the same number (the first not yet listening) */
  static GMutex lock;
  static GHashTable *handed;
  g_mutex_lock (&lock);
  if (!handed)
    handed = g_hash_table_new (NULL, NULL);
  guint port = 0;
  for (guint tries = 0; tries < 1000 && !port; tries++) {
    int s = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    socklen_t l = sizeof a;
    g_assert_cmpint (bind (s, (struct sockaddr *) &a, sizeof a), ==, 0);
    g_assert_cmpint (getsockname (s, (struct sockaddr *) &a, &l), ==, 0);
    close (s);
    guint p = ntohs (a.sin_port);
    if (!g_hash_table_contains (handed, GUINT_TO_POINTER (p))) {
      g_hash_table_add (handed, GUINT_TO_POINTER (p));
      port = p;
    }
  }
  g_mutex_unlock (&lock);
  g_assert_cmpuint (port, !=, 0);
  return port;
}

/* The inode of the socket listening on 127.0.0.1:@port (/proc/net/tcp), or 0. */
static guint64
listener_inode (guint port)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents ("/proc/net/tcp", &text, NULL, NULL))
    return 0;
  g_autofree char *want = g_strdup_printf ("0100007F:%04X", port);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (guint i = 1; lines[i]; i++) {
    g_auto (GStrv) f = g_strsplit_set (g_strstrip (lines[i]), " ", -1);
    /* the fields, empty ones (runs of spaces) left out */
    g_autoptr (GPtrArray) v = g_ptr_array_new ();
    for (guint k = 0; f[k]; k++)
      if (*f[k])
        g_ptr_array_add (v, f[k]);
    if (v->len > 9 && strcmp (v->pdata[1], want) == 0 && strcmp (v->pdata[3], "0A") == 0)
      return g_ascii_strtoull (v->pdata[9], NULL, 10);
  }
  return 0;
}

gboolean
test_port_owned_by (guint port, GPid pid)
{
  guint64 inode = listener_inode (port);
  if (!inode || pid <= 0)
    return FALSE;
  g_autofree char *want = g_strdup_printf ("socket:[%" G_GUINT64_FORMAT "]", inode);
  g_autofree char *fddir = g_strdup_printf ("/proc/%d/fd", (int) pid);
  g_autoptr (GDir) d = g_dir_open (fddir, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name (d))) {
    g_autofree char *p = g_build_filename (fddir, n, NULL);
    g_autofree char *target = g_file_read_link (p, NULL);
    if (target && strcmp (target, want) == 0)
      return TRUE;
  }
  return FALSE;
}

char *
test_sh_on_free_port (const char *cmd, guint *port, char **out)
{
  g_autofree char *last = NULL;
  for (guint attempt = 0; attempt < TEST_PORT_ATTEMPTS; attempt++) {
    *port = test_free_port ();
    g_autofree char *p = g_strdup_printf ("%u", *port);
    g_auto (GStrv) parts = g_strsplit (cmd, "{PORT}", -1);
    g_autofree char *c = g_strjoinv (p, parts);
    g_free (last);
    last = NULL;
    int status = test_sh (c, &last);
    if (status == 0) {
      if (out)
        *out = g_steal_pointer (&last);
      return g_steal_pointer (&c);
    }
    if (status != TEST_PORT_TAKEN)
      g_error ("%s: exit %d\n%s", c, status, last ? last : "");
    g_printerr ("# port %u was taken before the server bound it; again with another\n", *port);
  }
  g_error ("%s: no free port after %u attempts (each taken before the server bound it):\n%s", cmd,
           TEST_PORT_ATTEMPTS, last ? last : "");
}

/* Wait until @proc listens on 127.0.0.1:@port itself (never another process
 * that holds the same port), or has ended. TRUE when it listens; FALSE when it
 * ended and @log (nullable) says the port was in use (try another); any
 * other end, or no listener within @seconds, fails the test with @log. */
static gboolean
wait_listening (GSubprocess *proc, guint port, const char *what, const char *log, guint seconds)
{
  for (guint i = 0; i < seconds * 40; i++) {
    const char *id = g_subprocess_get_identifier (proc);
    if (id && test_port_owned_by (port, (GPid) atoi (id)))
      return TRUE;
    if (!id)
      break;   /* it ended */
    g_usleep (25000);
  }
  g_autofree char *text = NULL;
  if (log)
    g_file_get_contents (log, &text, NULL, NULL);
  if (!g_subprocess_get_identifier (proc) && text && strstr (text, "in use")) {
    g_printerr ("# %s: port %u was taken before it bound it; again with another\n", what, port);
    return FALSE;
  }
  g_error ("%s did not listen on 127.0.0.1:%u: %s", what, port, text ? text : "(no log)");
}

int
test_sh (const char *cmd, char **out)
{
  int status = 0;
  g_autoptr (GError) error = NULL;
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", (char *) cmd, NULL }, NULL, 0, NULL, NULL,
                out, NULL, &status, &error);
  g_assert_no_error (error);
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

gboolean
test_redis_answers_at (const char *host, guint port)
{
  struct timeval tv = { 1, 0 };
  redisContext *c = redisConnectWithTimeout (host, (int) port, tv);
  gboolean ok = FALSE;
  if (c && !c->err) {
    redisSetTimeout (c, tv);
    redisReply *r = redisCommand (c, "PING");
    ok = r && r->type == REDIS_REPLY_STATUS;
    if (r)
      freeReplyObject (r);
  }
  if (c)
    redisFree (c);
  return ok;
}

const char *
test_redis_server (void)
{
  const char *e = g_getenv ("EXTBODY_TEST_REDIS_SERVER");
  return e && *e ? e : "/usr/bin/redis-server";
}

static gboolean
redis_spawn (TestRedis *r)
{
  g_autofree char *conf = g_build_filename (r->dir, "redis.conf", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
  g_subprocess_launcher_set_child_setup (launcher, server_child_setup, NULL, NULL);
  r->proc = g_subprocess_launcher_spawn (launcher, &error, test_redis_server (), conf, NULL);
  g_assert_no_error (error);
  g_autofree char *kill_cmd = g_strdup_printf ("kill -CONT %s; kill -KILL %s",
                                               g_subprocess_get_identifier (r->proc),
                                               g_subprocess_get_identifier (r->proc));
  r->watchdog = test_watchdog_add (kill_cmd);
  /* it listens within a second or two, on its own port (never another
   * process's); FALSE: the port was taken before it bound it */
  g_autofree char *log = g_build_filename (r->dir, "redis.log", NULL);
  if (!wait_listening (r->proc, r->port, test_redis_server (), log, 10)) {
    g_subprocess_wait (r->proc, NULL, NULL);
    test_watchdog_remove (r->watchdog);
    g_clear_object (&r->proc);
    return FALSE;
  }
  for (guint i = 0; i < 200 && !test_redis_answers_at ("127.0.0.1", r->port); i++)
    g_usleep (50000);
  g_assert_true (test_redis_answers_at ("127.0.0.1", r->port));
  return TRUE;
}

TestRedis *
test_redis_start (void)
{
  if (!g_file_test (test_redis_server (), G_FILE_TEST_IS_EXECUTABLE))
    return NULL;
  TestRedis *r = g_new0 (TestRedis, 1);
  r->dir = g_dir_make_tmp ("extbody-redis-XXXXXX", NULL);
  g_assert_nonnull (r->dir);
  g_autofree char *conf = g_build_filename (r->dir, "redis.conf", NULL);
  for (guint attempt = 0;; attempt++) {
    g_assert_cmpuint (attempt, <, TEST_PORT_ATTEMPTS);
    r->port = test_free_port ();
    g_autofree char *text = g_strdup_printf ("port %u\nbind 127.0.0.1\nprotected-mode no\n"
                                             "save \"\"\nappendonly no\ndaemonize no\n"
                                             "dir %s\nlogfile %s/redis.log\nloglevel warning\n",
                                             r->port, r->dir, r->dir);
    g_assert_true (g_file_set_contents (conf, text, -1, NULL));
    if (redis_spawn (r))
      return r;
  }
}

void
test_redis_kill (TestRedis *r)
{
  if (!r->proc)
    return;
  g_subprocess_send_signal (r->proc, SIGCONT);
  g_subprocess_force_exit (r->proc);
  g_subprocess_wait (r->proc, NULL, NULL);
  test_watchdog_remove (r->watchdog);
  g_clear_object (&r->proc);
}

void
test_redis_restart (TestRedis *r)
{
  test_redis_kill (r);
  g_assert_true (redis_spawn (r));   /* its own port again: a client reconnects to it */
}

void
test_redis_signal (TestRedis *r, int sig)
{
  g_assert_nonnull (r->proc);
  g_subprocess_send_signal (r->proc, sig);
  /* kill() returns before a process running on another core has stopped:
   * wait until it has (state T), or has run again after SIGCONT, so that
   * the next request meets the state the test asked for */
  g_autofree char *stat_path = g_strdup_printf ("/proc/%s/stat", g_subprocess_get_identifier (r->proc));
  for (int i = 0; i < 400 && (sig == SIGSTOP || sig == SIGCONT); i++) {
    g_autofree char *stat = NULL;
    if (!g_file_get_contents (stat_path, &stat, NULL, NULL))
      break;
    const char *paren = strrchr (stat, ')');
    gboolean stopped = paren && paren[1] == ' ' && (paren[2] == 'T' || paren[2] == 't');
    if (stopped == (sig == SIGSTOP))
      break;
    g_usleep (5000);
  }
}

void
test_redis_stop (TestRedis *r)
{
  if (!r)
    return;
  test_redis_kill (r);
  g_autofree char *conf = g_build_filename (r->dir, "redis.conf", NULL);
  g_autofree char *log = g_build_filename (r->dir, "redis.log", NULL);
  g_unlink (conf);
  g_unlink (log);
  g_rmdir (r->dir);
  g_free (r->dir);
  g_free (r);
}

static void
reply_text (GString *s, const redisReply *reply)
{
  switch (reply->type) {
  case REDIS_REPLY_STRING:
  case REDIS_REPLY_STATUS:
    g_string_append_len (s, reply->str, (gssize) reply->len);
    break;
  case REDIS_REPLY_ERROR:
    g_string_append_printf (s, "ERR: %s", reply->str);
    break;
  case REDIS_REPLY_INTEGER:
    g_string_append_printf (s, "%lld", reply->integer);
    break;
  case REDIS_REPLY_NIL:
    g_string_append (s, "(nil)");
    break;
  case REDIS_REPLY_ARRAY:
    for (size_t i = 0; i < reply->elements; i++) {
      if (i)
        g_string_append_c (s, '\n');
      reply_text (s, reply->element[i]);
    }
    break;
  default:
    break;
  }
}

char *
test_redis_command (TestRedis *r, const char *format, ...)
{
  struct timeval tv = { 10, 0 };
  redisContext *c = redisConnectWithTimeout ("127.0.0.1", (int) r->port, tv);
  g_assert_nonnull (c);
  g_assert_cmpint (c->err, ==, 0);
  redisSetTimeout (c, tv);
  va_list ap;
  va_start (ap, format);
  redisReply *reply = redisvCommand (c, format, ap);
  va_end (ap);
  g_assert_nonnull (reply);
  GString *s = g_string_new (NULL);
  reply_text (s, reply);
  freeReplyObject (reply);
  redisFree (c);
  return g_string_free (s, FALSE);
}

/* ---- a private nginx ------------------------------------------------------ */


TestNginx *
test_nginx_start (const char *root)
{
  return test_nginx_start_with (root, "");
}

TestNginx *
test_nginx_start_with (const char *root, const char *location)
{
  if (!g_file_test ("/usr/sbin/nginx", G_FILE_TEST_IS_EXECUTABLE))
    return NULL;
  TestNginx *n = g_new0 (TestNginx, 1);
  n->dir = g_dir_make_tmp ("extbody-nginx-XXXXXX", NULL);
  g_assert_nonnull (n->dir);
  g_autofree char *conf = g_build_filename (n->dir, "nginx.conf", NULL);
  g_autofree char *errlog = g_build_filename (n->dir, "error.log", NULL);
  for (guint attempt = 0;; attempt++) {
    g_assert_cmpuint (attempt, <, TEST_PORT_ATTEMPTS);
    n->port = test_free_port ();
    g_autofree char *text = g_strdup_printf (
      "daemon off;\nmaster_process off;\nworker_processes 1;\npid %s/nginx.pid;\n"
      "error_log %s/error.log warn;\nevents { worker_connections 256; }\n"
      "http {\n  access_log off;\n  types { }\n  default_type application/octet-stream;\n"
      "  client_body_temp_path %s/body;\n  proxy_temp_path %s/proxy;\n  fastcgi_temp_path %s/fastcgi;\n"
      "  uwsgi_temp_path %s/uwsgi;\n  scgi_temp_path %s/scgi;\n"
      "  server {\n    listen 127.0.0.1:%u;\n    root %s;\n    location / { %s }\n  }\n}\n",
      n->dir, n->dir, n->dir, n->dir, n->dir, n->dir, n->dir, n->port, root, location);
    g_assert_true (g_file_set_contents (conf, text, -1, NULL));
    g_autoptr (GError) error = NULL;
    g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE);
    g_subprocess_launcher_set_child_setup (launcher, server_child_setup, NULL, NULL);
    n->proc = g_subprocess_launcher_spawn (launcher, &error, "/usr/sbin/nginx", "-p", n->dir, "-c", conf,
                                           "-e", errlog, NULL);
    g_assert_no_error (error);
    g_autofree char *kill_cmd = g_strdup_printf ("kill -KILL %s", g_subprocess_get_identifier (n->proc));
    n->watchdog = test_watchdog_add (kill_cmd);
    /* listening itself (master_process off: the process started holds it) */
    if (wait_listening (n->proc, n->port, "nginx", errlog, 10))
      return n;
    g_subprocess_wait (n->proc, NULL, NULL);
    test_watchdog_remove (n->watchdog);
    g_clear_object (&n->proc);
    g_unlink (errlog);
  }
}

void
test_nginx_stop (TestNginx *n)
{
  if (!n)
    return;
  g_subprocess_send_signal (n->proc, SIGTERM);
  g_subprocess_wait (n->proc, NULL, NULL);
  test_watchdog_remove (n->watchdog);
  g_clear_object (&n->proc);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", n->dir);
  test_sh (rm, NULL);
  g_free (n->dir);
  g_free (n);
}

/* ---- a private Apache with mod_dav ---------------------------------------- */

#define APACHE_MODULES "/usr/lib/apache2/modules"

static char *
apache_binary (void)
{
  char *bin = g_find_program_in_path ("apache2");
  if (!bin && g_file_test ("/usr/sbin/apache2", G_FILE_TEST_IS_EXECUTABLE))
    bin = g_strdup ("/usr/sbin/apache2");
  return bin;
}

static char *
htpasswd_binary (void)
{
  char *bin = g_find_program_in_path ("htpasswd");
  if (!bin && g_file_test ("/usr/bin/htpasswd", G_FILE_TEST_IS_EXECUTABLE))
    bin = g_strdup ("/usr/bin/htpasswd");
  return bin;
}

gboolean
test_apache_available (void)
{
  g_autofree char *bin = apache_binary ();
  g_autofree char *htpasswd = htpasswd_binary ();
  return bin && htpasswd && g_file_test (APACHE_MODULES "/mod_dav_fs.so", G_FILE_TEST_EXISTS);
}

static void
apache_child_setup (gpointer data)
{
  (void) data;
  /* a process group of its own, so that the watchdog's kill reaches its
   * workers too; the test died: so does Apache */
  setsid ();
  prctl (PR_SET_PDEATHSIG, SIGTERM);
}

/* Make @path (a directory) @user's. */
static void
chown_to (const char *path, const char *user)
{
  if (!user)
    return;
  g_autofree char *cmd = g_strdup_printf ("chown '%s:%s' '%s'", user, user, path);
  g_assert_cmpint (test_sh (cmd, NULL), ==, 0);
}

TestApache *
test_apache_start (const char *dir, const char *user, const char *extra_conf)
{
  if (!test_apache_available ())
    return NULL;
  g_autofree char *bin = apache_binary ();
  g_autofree char *htpasswd = htpasswd_binary ();
  TestApache *a = g_new0 (TestApache, 1);
  a->dir = g_strdup (dir);
  const char *dirs[] = { "dav", "run" };
  for (guint i = 0; i < G_N_ELEMENTS (dirs); i++) {
    g_autofree char *p = g_build_filename (dir, dirs[i], NULL);
    g_assert_cmpint (g_mkdir_with_parents (p, 0755), ==, 0);
    chown_to (p, user);
  }
  g_autofree char *pw = g_strdup_printf ("'%s' -bc '%s/htpasswd' '%s' '%s' >/dev/null 2>&1 && chmod 0644 '%s/htpasswd'",
                                         htpasswd, dir, TEST_DAV_USER, TEST_DAV_PASSWORD, dir);
  g_assert_cmpint (test_sh (pw, NULL), ==, 0);
  g_autofree char *errlog = g_build_filename (dir, "error.log", NULL);
  g_autofree char *conf = g_build_filename (dir, "httpd.conf", NULL);
  for (guint attempt = 0;; attempt++) {
  g_assert_cmpuint (attempt, <, TEST_PORT_ATTEMPTS);
  a->port = test_free_port ();
  const char *m = APACHE_MODULES;
  g_autofree char *conf_text = g_strdup_printf (
    "ServerRoot %s\n"
    "ServerName 127.0.0.1\n"
    "Listen 127.0.0.1:%u\n"
    "PidFile %s/httpd.pid\n"
    "ErrorLog %s/error.log\n"
    "DefaultRuntimeDir %s/run\n"
    "LogFormat \"%%m %%U %%>s\" dav\n"
    "CustomLog %s/access.log dav\n"
    "%s%s%s%s%s%s"
    "LoadModule mpm_event_module %s/mod_mpm_event.so\n"
    "LoadModule authz_core_module %s/mod_authz_core.so\n"
    "LoadModule authn_core_module %s/mod_authn_core.so\n"
    "LoadModule authn_file_module %s/mod_authn_file.so\n"
    "LoadModule auth_basic_module %s/mod_auth_basic.so\n"
    "LoadModule authz_user_module %s/mod_authz_user.so\n"
    "LoadModule alias_module %s/mod_alias.so\n"
    "LoadModule rewrite_module %s/mod_rewrite.so\n"
    "LoadModule dav_module %s/mod_dav.so\n"
    "LoadModule dav_fs_module %s/mod_dav_fs.so\n"
    "DAVLockDB %s/run/davlock\n"
    "<Directory />\n  Require all denied\n</Directory>\n"
    /* the store: basic authentication */
    "Alias /dav %s/dav\n"
    /* as data/store-apache-dav.conf.example has it: reading is open */
    "<Directory %s/dav>\n  Dav On\n  AuthType Basic\n  AuthName store\n"
    "  AuthUserFile %s/htpasswd\n"
    "  <LimitExcept GET HEAD OPTIONS>\n    Require valid-user\n  </LimitExcept>\n"
    "  <Limit GET HEAD OPTIONS>\n    Require all granted\n  </Limit>\n</Directory>\n"
    "%s",
    dir, a->port, dir, dir, dir, dir,
    user ? "User " : "", user ? user : "", user ? "\n" : "",
    user ? "Group " : "", user ? user : "", user ? "\n" : "",
    m, m, m, m, m, m, m, m, m, m, dir,
    dir, dir, dir,
    extra_conf ? extra_conf : "");
  g_assert_true (g_file_set_contents (conf, conf_text, -1, NULL));
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDIN_PIPE);
  g_subprocess_launcher_set_child_setup (launcher, apache_child_setup, NULL, NULL);
  a->proc = g_subprocess_launcher_spawn (launcher, &error, bin, "-f", conf, "-DFOREGROUND", NULL);
  g_assert_no_error (error);
  g_autofree char *kill_cmd = g_strdup_printf ("kill -KILL -%s 2>/dev/null",
                                               g_subprocess_get_identifier (a->proc));
  a->watchdog = test_watchdog_add (kill_cmd);
  /* the parent, which stays in the foreground, holds the listening socket */
  if (wait_listening (a->proc, a->port, "apache2", errlog, 20))
    return a;
  g_subprocess_wait (a->proc, NULL, NULL);
  test_watchdog_remove (a->watchdog);
  g_clear_object (&a->proc);
  g_unlink (errlog);
  }
}

void
test_apache_stop (TestApache *a)
{
  if (!a)
    return;
  const char *pid = g_subprocess_get_identifier (a->proc);
  if (pid) {
    g_autofree char *cmd = g_strdup_printf ("kill -TERM -%s 2>/dev/null", pid);
    test_sh (cmd, NULL);
  }
  g_subprocess_wait (a->proc, NULL, NULL);
  test_watchdog_remove (a->watchdog);
  g_object_unref (a->proc);
  g_free (a->dir);
  g_free (a);
}

char *
test_apache_dav_url (const TestApache *a, const char *collection)
{
  return g_strdup_printf ("http://127.0.0.1:%u/%s/", a->port, collection);
}

char *
test_crlf_to_lf (const char *crlf)
{
  GString *s = g_string_new (NULL);
  for (const char *p = crlf; *p; p++)
    if (!(*p == '\r' && p[1] == '\n'))
      g_string_append_c (s, *p);
  return g_string_free (s, FALSE);
}

const char *
test_after_received (const char *text)
{
  const char *p = strstr (text, "\nReceived: ");
  g_assert_nonnull (p);
  p++;
  do {
    p = strchr (p, '\n') + 1;
  } while (*p == ' ' || *p == '\t');
  return p;
}

/* Copy @src to @dst with @mode (whole file: tests copy small programs). */
static void
copy_file (const char *src, const char *dst, int mode)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  g_autoptr (GError) error = NULL;
  g_file_get_contents (src, &data, &len, &error);
  g_assert_no_error (error);
  g_file_set_contents (dst, data, (gssize) len, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_chmod (dst, mode), ==, 0);
}

char *
test_copy_for_everyone (const char *src, const char *dir, const char *name, int mode)
{
  g_assert_nonnull (src);
  g_autofree char *base = name ? g_strdup (name) : g_path_get_basename (src);
  char *dst = g_build_filename (dir, base, NULL);
  copy_file (src, dst, mode);
  /* a program of the build tree linked against libextbody: its library
   * beside it, where its RPATH ($ORIGIN) looks first */
  g_autofree char *srcdir = g_path_get_dirname (src);
  g_autofree char *lib = g_build_filename (srcdir, "libextbody.so.2", NULL);
  g_autofree char *lib_dst = g_build_filename (dir, "libextbody.so.2", NULL);
  g_autofree char *head = NULL;
  gsize hl = 0;
  if (g_file_test (lib, G_FILE_TEST_EXISTS) && !g_file_test (lib_dst, G_FILE_TEST_EXISTS)
      && g_file_get_contents (src, &head, &hl, NULL) && hl > 4 && memcmp (head, "\177ELF", 4) == 0)
    copy_file (lib, lib_dst, 0644);
  return dst;
}

void
test_wait_until (gboolean (*done) (gpointer data), gpointer data, double seconds, const char *what)
{
  gint64 deadline = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC);
  while (!done (data)) {
    if (g_get_monotonic_time () >= deadline)
      g_error ("%s: not after %g s", what, seconds);
    g_usleep (5 * 1000);
  }
}
