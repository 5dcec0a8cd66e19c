/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-server.h - the tests' servers on 127.0.0.1 (tests/servers/NAME.py) as
 * child processes. A server prints one "NAME <port>" line for each port it
 * listens on, then serves until its standard input closes (which also happens
 * when the test dies) or --lifetime seconds pass; it also gets SIGTERM when
 * the test dies (PR_SET_PDEATHSIG) and the watchdog below kills it: no test
 * leaves one running. */
#pragma once
#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct {
  GSubprocess *proc;
  guint        watchdog;   /* its kill command's test_watchdog_add id */
  guint        port;       /* the first port announced */
  guint        ports[4];   /* every port announced, in order */
} TestServer;

/* Start tests/servers/@script under Debian's python3 (/usr/bin/python3, where
 * pyftpdlib is; python3 from PATH without it) with the NULL-terminated @args
 * (nullable) and --lifetime 600, and read the announcement lines whose
 * prefixes @announce lists (NULL: one "PORT " line). @quiet: the server's
 * standard error goes nowhere (pyftpdlib logs every command there).
 * Returns: (transfer full) (nullable): NULL with @error when the server could
 * not start or did not announce its ports. */
TestServer *test_server_start (const char *script, const char *const *args,
                               const char *const *announce, gboolean quiet, GError **error);

/* Close the server's standard input and wait for it to end. */
void test_server_stop (TestServer *server);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TestServer, test_server_stop)

/* A TCP port on 127.0.0.1 that is free now (bound, read back, closed). */
guint test_free_port (void);

/* Does the socket listening on 127.0.0.1:@port belong to process @pid (one of
 * its open files)? A server that comes up on a port is only the test's own
 * when this holds: another process of a parallel test may hold the port. */
gboolean test_port_owned_by (guint port, GPid pid);

/* The exit status by which a server's start script says its port was taken
 * (EADDRINUSE) before it could bind it, and how many ports are tried. */
#define TEST_PORT_TAKEN 75
#define TEST_PORT_ATTEMPTS 5

/* Run the shell command @cmd with "{PORT}" replaced by a free port (in
 * *@port), again with another port when it exits TEST_PORT_TAKEN, at most
 * TEST_PORT_ATTEMPTS times; any other failure fails the test with its output.
 * *@out (nullable) gets the successful run's standard output.
 * Returns: (transfer full): the command as run. */
char *test_sh_on_free_port (const char *cmd, guint *port, char **out);

/* @crlf with every CR LF made LF. Returns: (transfer full). */
char *test_crlf_to_lf (const char *crlf);

/* A message delivered by the MTA under test without what it put on top: the
 * text after its first Received field (and that field's continuation lines). */
const char *test_after_received (const char *text);

/* Run @cmd with /bin/sh -c; @out (nullable) gets its standard output.
 * Returns: the exit status, or -1 when it did not exit (a signal). */
int test_sh (const char *cmd, char **out);

/* A copy of the file @src in @dir, named @name (NULL: @src's own name), mode
 * @mode, for a program that runs as another user (Postfix's pipe(8) and
 * Dovecot's Sieve as nobody, Exim as its own user), who may not read the
 * checkout (a clone under root's 0700 home). A built program that needs
 * libextbody.so.2 gets the library copied beside it too: the build tree's
 * RPATH is $ORIGIN. Returns: (transfer full): the copy's path. */
char *test_copy_for_everyone (const char *src, const char *dir, const char *name, int mode);

/* GET @path from http://127.0.0.1:@port directly (HTTP/1.0, not through
 * extbody): the number its body starts with (httpd.py's /hits, /peak). */
gint64 test_http_get_number (guint port, const char *path);

/* A private redis-server (Debian's /usr/bin/redis-server) on a free
 * 127.0.0.1 port, with a configuration of its own under a temporary
 * directory: no persistence (save "", appendonly no), no system files. It
 * dies with the test (PR_SET_PDEATHSIG, and the watchdog kills it). */
typedef struct {
  GSubprocess *proc;       /* NULL while stopped */
  guint        watchdog;
  guint        port;
  char        *dir;        /* its configuration and working directory */
} TestRedis;

/* The server the tests run: EXTBODY_TEST_REDIS_SERVER (ctest sets it to
 * /usr/bin/valkey-server for test-redis-valkey), else Debian's
 * /usr/bin/redis-server. Valkey speaks the same protocol and reads the same
 * configuration lines. */
const char *test_redis_server (void);
/* NULL when that server is not installed (the caller skips). Returns once
 * it answers PING. */
TestRedis *test_redis_start (void);
/* Kill it (SIGKILL: a crash, as far as extbody can tell); test_redis_restart
 * starts it again on the same port, empty. */
/* Does the Redis at @host:@port answer a PING within a second? */
gboolean test_redis_answers_at (const char *host, guint port);
void test_redis_kill (TestRedis *redis);
void test_redis_restart (TestRedis *redis);
/* Send @sig (SIGSTOP, SIGCONT) to it. */
void test_redis_signal (TestRedis *redis, int sig);
/* Stop it and remove its directory. */
void test_redis_stop (TestRedis *redis);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TestRedis, test_redis_stop)
/* Run one command (hiredis's redisCommand format) on a fresh connection;
 * returns the reply as text: a string or status as it is, an integer in
 * decimal, nil as "(nil)", an error as "ERR: ...", an array as its elements
 * joined by "\n". Asserts that Redis answered. */
char *test_redis_command (TestRedis *redis, const char *format, ...);

/* A private nginx (Debian's /usr/sbin/nginx) serving the directory @root
 * read-only on a free 127.0.0.1 port: its own configuration, logs and
 * temporary files under a directory of its own, one process (master_process
 * off, so it reads files whatever their owner), every file served as
 * application/octet-stream. It dies with the test (PR_SET_PDEATHSIG, and the
 * watchdog kills it). */
typedef struct {
  GSubprocess *proc;
  guint        watchdog;
  guint        port;
  char        *dir;        /* its configuration, logs and temporary files */
} TestNginx;

/* NULL when nginx is not installed (the caller skips). Returns once it
 * accepts connections. */
TestNginx *test_nginx_start (const char *root);
/* The same with @location, directives for its "location / { }" block (nginx
 * syntax, trusted). */
TestNginx *test_nginx_start_with (const char *root, const char *location);
/* Stop it and remove its directory (not @root). */
void test_nginx_stop (TestNginx *nginx);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TestNginx, test_nginx_stop)

/* A private Apache (Debian's apache2 with mod_dav, mod_dav_fs and
 * mod_auth_basic) on a free 127.0.0.1 port, everything of it under @dir:
 * configuration (httpd.conf), logs (error.log; access.log, one
 * "METHOD PATH STATUS" line a request), htpasswd, run/ and the WebDAV
 * collection /dav (@dir/dav), where reading (GET, HEAD, OPTIONS) is open
 * and everything else needs basic authentication as TEST_DAV_USER /
 * TEST_DAV_PASSWORD, as data/store-apache-dav.conf.example has it.
 * @extra_conf (nullable): configuration appended (the caller's collections;
 * mod_alias and mod_rewrite are loaded). @user (nullable): the User and
 * Group it runs as (www-data when the test is root), and the owner of
 * @dir/dav. A process group of its own; it dies with the test
 * (PR_SET_PDEATHSIG, and the watchdog kills the group). */
#define TEST_DAV_USER "alice"
#define TEST_DAV_PASSWORD "Pw-not-shown-4711"

typedef struct {
  GSubprocess *proc;
  guint        watchdog;
  guint        port;
  char        *dir;
} TestApache;

/* apache2, htpasswd and mod_dav_fs are installed. */
gboolean test_apache_available (void);
/* NULL when !test_apache_available () (the caller skips). Returns once it
 * accepts connections. */
TestApache *test_apache_start (const char *dir, const char *user, const char *extra_conf);
/* Stop it (SIGTERM to its group) and wait; @dir is left. */
void test_apache_stop (TestApache *apache);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TestApache, test_apache_stop)
/* http://127.0.0.1:PORT/@collection/ (transfer full). */
char *test_apache_dav_url (const TestApache *apache, const char *collection);

/* The whole program cannot run here (no root, no Postfix, no Node, ...): print
 * "SKIP: @reason" and exit 77, which ctest reports as skipped (every test has
 * SKIP_RETURN_CODE 77). Call it before g_test_run (): GLib's g_test_run exits
 * 0 when every case called g_test_skip, which ctest would count as passed. */
G_GNUC_NORETURN void test_skip_all (const char *reason);

/* Built with AddressSanitizer? Its quarantine keeps freed memory resident, so
 * a case that measures peak memory means nothing there: such a case is not
 * registered in that build (the normal build runs it), rather than skipped,
 * since a skip fails the run (tests/quickstart.sh). */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_UNDER_ASAN 1
#endif
#endif
#ifndef TEST_UNDER_ASAN
#define TEST_UNDER_ASAN 0
#endif

/* How much slower a build runs the test's own work: 3 under AddressSanitizer,
 * else 1. It scales a margin for that work, never a limit the code under test
 * enforces. */
#define test_time_scale() (TEST_UNDER_ASAN ? 3.0 : 1.0)

/* Poll @done (every 5 ms) until it says TRUE; past @seconds, fail the test
 * naming @what: a wait for an event, never a guessed pause, and never for
 * ever. */
void test_wait_until (gboolean (*done) (gpointer data), gpointer data, double seconds, const char *what);

/* The watchdog: a process of its own (own session, so a signal to the test's
 * process group spares it) that the test feeds over a pipe. When the pipe
 * closes - the test ended, failed an assertion, crashed or was killed - it runs,
 * newest first, every shell command still registered, so that whatever way a
 * test ends it leaves no server, Postfix instance or daemon behind.
 * test_watchdog_add returns an id for test_watchdog_remove (a clean teardown
 * that did the stopping itself). Servers from test_server_start are
 * registered already. */
guint test_watchdog_add (const char *shell_command);
void test_watchdog_remove (guint id);

/* For the meta-test tests/meta/test-teardown.c only: when the environment's
 * EXTBODY_TEST_ABORT_AFTER_START equals @where, print "ABORT @where: @info"
 * to standard output and abort () as a failed assertion would. test_server_start
 * calls it with "server" (@info "pid=PID port=PORT"). */
void test_abort_point (const char *where, const char *info);

G_END_DECLS
