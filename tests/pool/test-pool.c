/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-pool.c - a pool of three extbodyd daemons behind HAProxy, each on a
 * host of its own, with Debian's parts end to end (issue 41).
 *
 * The network (tests/pool/pool-net.sh, all on this machine): a bridge in the
 * root namespace with 198.18.N.1 (RFC 2544's benchmarking range), where the
 * origin HTTP server (tests/servers/httpd.py, which counts the requests each
 * URL gets) and Redis (Valkey where ctest names it) listen; three network
 * namespaces 198.18.N.11, .12, .13, one extbodyd each in the foreground (its
 * HTTP door and its milter on the ports the shipped haproxy.cfg's server
 * lines name, 8080 and 8891; drain_delay = 5; the shared Redis; a log file of
 * its own); and the MTA's namespace 198.18.N.2: HAProxy, from the shipped
 * filters/daemon/haproxy.cfg with this network's addresses put in (checked
 * by haproxy -c), extbodyc and, for the milter, a private Postfix
 * (tests/postfix/pf-peer.sh). The test itself runs in the MTA's namespace:
 * what it sends comes from there. Every message references a URL of the
 * origin and a data: URL; each answer is compared byte for byte with the
 * reference message's, sent to one daemon at the start and checked by hand.
 *
 *   1-spread-and-once  150 messages through extbodyc and HAProxy, 6 at once,
 *                      15 URLs: every message resolved, each daemon served
 *                      some, each message served by one daemon, each URL
 *                      fetched once by the whole pool (Redis's shared cache
 *                      and coalescing).
 *   2-drain            SIGTERM to a daemon with a request in flight mid-burst:
 *                      HAProxy shows it DOWN in both backends while it
 *                      still serves (its log has no "SIGTERM: stopping"
 *                      yet); it exits 0; every message resolved, each URL
 *                      fetched once.
 *   3-kill             SIGKILL to a daemon with requests in flight: every
 *                      message comes out whole and resolved, HAProxy (or
 *                      extbodyc, --tries) having sent it again.
 *   4-kill-without-balancer
 *                      the same with extbodyc -s naming the three daemons:
 *                      each request in flight on the killed daemon is done by
 *                      another on a later try, as extbodyc says.
 *   5-valkey           Redis killed mid-burst and started again: every
 *                      message resolved meanwhile, HAProxy keeps every
 *                      daemon UP (redis_required is off), each daemon logs
 *                      Redis down once and back once, and afterwards a new
 *                      URL asked of all three at once is fetched once.
 *   8-at-rest         the at-rest rewriter beside the pool: `extbody rewrite
 *                      --mbox` in the MTA's namespace, with the pool's Redis
 *                      (redis_server, redis_prefix): a URL the pool fetched
 *                      is not fetched again, one it fetches first is not
 *                      fetched again by the pool; every reference resolved.
 *   6-milter-shipped-default, 7-milter-tempfail
 *                      Postfix's smtpd_milters names HAProxy's milter front
 *                      end, with the default_action of the shipped
 *                      postfix-main.cf (accept), then with extbodyd(8)
 *                      POOL's tempfail; a daemon SIGKILLed mid-burst of SMTP
 *                      sessions, the client trying a 4xx again as an MTA
 *                      would: every message delivered exactly once, resolved
 *                      but, with accept only, those Postfix passed as they
 *                      came (each with its warning in Postfix's log); what
 *                      Postfix did is shown.
 *   9-pipe-client      Postfix's after-queue content filter, pipe(8) running
 *                      filters/pipe/extbody-pipe-client as nobody, its
 *                      extbodyc reaching HAProxy (--tries 3); a daemon
 *                      SIGKILLed with the pipe's requests in flight: every
 *                      message delivered once, resolved, and extbodyc's log
 *                      has no fallback.
 *
 * Needs root (namespaces, Postfix), HAProxy, redis-server (or Valkey),
 * iproute2 and Postfix: skipped (exit 77) without them; CI has them all
 * (tests/quickstart.sh test). Every process, namespace and the bridge go at
 * the end and, through the watchdog (test-server.h), when the test dies; a
 * start first removes what crashed runs left (pool-net.sh sweep). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include "test-server.h"
#include "mta-dir.h"
#include "mta-postfix.h"

#define N_DAEMONS 3
#define N_CLIENTS 6          /* extbodyc processes, SMTP sessions at once */
#define N_SPREAD 150
#define N_SPREAD_URLS 15
#define N_DRAIN 120          /* each its own URL, 300 ms each */
#define N_KILL 60
#define N_VALKEY 60
#define N_VALKEY_URLS 20     /* each referenced 3 times */
#define N_MILTER 60
#define N_PIPE 60
/* longer than HAProxy's check interval times its fall count (the shipped
 * haproxy.cfg's 1 s and 2), with room: extbodyd(8), POOL */
#define DRAIN_DELAY 5
#define TRIES 3              /* extbodyc --tries */

static char *dir;
static char *prefix;          /* ebpPID: the bridge, and its namespaces' names */
static char *net_script;      /* tests/pool/pool-net.sh */
static guint net;             /* 198.18.net.0/24 */
static char *bridge_addr;     /* 198.18.net.1: the origin and Redis */
static char *mta_addr;        /* 198.18.net.2: HAProxy, extbodyc, Postfix */
static int ns_root = -1, ns_mta = -1;

typedef struct {
  GSubprocess *proc;        /* NULL: not running */
  guint        wd;
  int          ns;
  char        *addr;
  char        *conf;
  char        *log;
} Daemon;
static Daemon daemons[N_DAEMONS];
static guint daemon_http_port, daemon_milter_port;   /* from the HAProxy template */

static TestServer *httpd;
static guint http_port;

typedef struct {
  GSubprocess *proc;
  guint        wd;
  guint        port;
  char        *conf;
} Redis;
static Redis redis;

static GSubprocess *haproxy;
static guint wd_haproxy;
static char *haproxy_sock, *haproxy_log, *haproxy_template;
static char *be_http, *be_milter;     /* the backends' names */
static guint haproxy_http_port, haproxy_milter_port;

static char *ref_text, *ref_id, *ref_sha, *ref_path;   /* the reference message's answer */

/* ---- namespaces --------------------------------------------------------------- */

static int
ns_open (const char *path)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    g_error ("%s: %s", path, g_strerror (errno));
  return fd;
}

/* The calling thread into the network namespace @fd (the threads it starts
 * later, and the processes it forks, are there too). */
static void
ns_enter (int fd)
{
  if (setns (fd, CLONE_NEWNET) != 0)
    g_error ("setns: %s", g_strerror (errno));
}

/* In the child: the network namespace GPOINTER_TO_INT (@data), and death with
 * the test. */
static void
child_in_ns (gpointer data)
{
  if (setns (GPOINTER_TO_INT (data), CLONE_NEWNET) != 0)
    _exit (127);
  prctl (PR_SET_PDEATHSIG, SIGKILL);
}

/* Start @argv in the namespace @ns, its standard output and error appended to
 * @log (NULL: discarded), registered with the watchdog (*@wd). */
static GSubprocess *
spawn_in (int ns, const char *const *argv, const char *log, guint *wd)
{
  g_autoptr (GSubprocessLauncher) l =
    g_subprocess_launcher_new (log ? G_SUBPROCESS_FLAGS_NONE
                                   : G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
  if (log) {
    int fd = open (log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    g_assert_cmpint (fd, >=, 0);
    g_subprocess_launcher_take_stdout_fd (l, dup (fd));
    g_subprocess_launcher_take_stderr_fd (l, fd);
  }
  g_subprocess_launcher_set_child_setup (l, child_in_ns, GINT_TO_POINTER (ns), NULL);
  g_autoptr (GError) error = NULL;
  GSubprocess *p = g_subprocess_launcher_spawnv (l, argv, &error);
  g_assert_no_error (error);
  g_autofree char *kill_cmd = g_strdup_printf ("kill -CONT %s; kill -KILL %s", g_subprocess_get_identifier (p),
                                               g_subprocess_get_identifier (p));
  *wd = test_watchdog_add (kill_cmd);
  return p;
}

/* Wait for @p to end and remove its watchdog. Returns: its exit status, -1
 * when a signal ended it. */
static int
reap (GSubprocess **p, guint *wd)
{
  g_subprocess_wait (*p, NULL, NULL);
  int status = g_subprocess_get_if_exited (*p) ? g_subprocess_get_exit_status (*p) : -1;
  g_clear_object (p);
  test_watchdog_remove (*wd);
  *wd = 0;
  return status;
}

static char *
file_text (const char *path)
{
  char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, NULL))
    return g_strdup ("");
  return text;
}

static guint
count_in (const char *text, const char *needle)
{
  guint n = 0;
  for (const char *p = text; (p = strstr (p, needle)); p += strlen (needle))
    n++;
  return n;
}

/* ---- plain TCP and HTTP from the calling thread's namespace ------------------------ */

static int
tcp_connect (const char *addr, guint port, int timeout_s)
{
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_assert_cmpint (fd, >=, 0);
  struct timeval tv = { timeout_s, 0 };
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
  g_assert_cmpint (inet_pton (AF_INET, addr, &sa.sin_addr), ==, 1);
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) != 0) {
    close (fd);
    return -1;
  }
  return fd;
}

static gboolean
write_all (int fd, const char *data, gsize len)
{
  while (len > 0) {
    ssize_t w = write (fd, data, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return FALSE;
    data += w;
    len -= (gsize) w;
  }
  return TRUE;
}

/* Everything @fd sends until it closes (or times out). */
static GString *
read_all (int fd)
{
  GString *s = g_string_new (NULL);
  char buf[8192];
  for (;;) {
    ssize_t r = read (fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    g_string_append_len (s, buf, r);
  }
  return s;
}

/* GET http://@addr:@port@path (HTTP/1.1, Connection: close). Returns: the
 * body (NULL when nothing answered), the status in *@status. */
static char *
http_get (const char *addr, guint port, const char *path, guint *status)
{
  *status = 0;
  int fd = tcp_connect (addr, port, 10);
  if (fd < 0)
    return NULL;
  g_autofree char *req = g_strdup_printf ("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr);
  gboolean sent = write_all (fd, req, strlen (req));
  g_autoptr (GString) resp = read_all (fd);
  close (fd);
  const char *body = strstr (resp->str, "\r\n\r\n");
  if (!sent || !body || !g_str_has_prefix (resp->str, "HTTP/1."))
    return NULL;
  *status = (guint) atoi (resp->str + 9);
  return g_strdup (body + 4);
}

/* The requests the origin got, by target (path and query). */
static GHashTable *
origin_counts (void)
{
  guint status = 0;
  g_autofree char *body = http_get (bridge_addr, http_port, "/counts", &status);
  g_assert_cmpuint (status, ==, 200);
  GHashTable *counts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_auto (GStrv) lines = g_strsplit (body, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    const char *sp = strchr (lines[i], ' ');
    if (sp)
      g_hash_table_insert (counts, g_strdup (sp + 1), GUINT_TO_POINTER ((guint) atoi (lines[i])));
  }
  return counts;
}

static guint
origin_count (GHashTable *counts, const char *target)
{
  return GPOINTER_TO_UINT (g_hash_table_lookup (counts, target));
}

/* ---- Redis (or Valkey) on the bridge ------------------------------------------- */

static gboolean
redis_answers (void)
{
  return test_redis_answers_at (bridge_addr, redis.port);
}

static void
redis_spawn (void)
{
  const char *argv[] = { test_redis_server (), redis.conf, NULL };
  redis.proc = spawn_in (ns_root, argv, NULL, &redis.wd);
  for (guint i = 0; i < 300 && !redis_answers (); i++)
    g_usleep (50000);
  if (!redis_answers ())
    g_error ("%s did not answer on %s:%u", test_redis_server (), bridge_addr, redis.port);
}

static void
redis_kill (void)
{
  g_subprocess_force_exit (redis.proc);
  reap (&redis.proc, &redis.wd);
}

/* A port free on the bridge's address (the calling thread in the root
 * namespace). */
static guint
bridge_free_port (void)
{
  int s = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = { .sin_family = AF_INET };
  g_assert_cmpint (inet_pton (AF_INET, bridge_addr, &a.sin_addr), ==, 1);
  socklen_t l = sizeof a;
  g_assert_cmpint (bind (s, (struct sockaddr *) &a, sizeof a), ==, 0);
  g_assert_cmpint (getsockname (s, (struct sockaddr *) &a, &l), ==, 0);
  close (s);
  return ntohs (a.sin_port);
}

/* ---- the daemons ---------------------------------------------------------------- */

static char *
daemon_log (guint k)
{
  return file_text (daemons[k].log);
}

static guint
daemon_log_count (guint k, const char *needle)
{
  g_autofree char *text = daemon_log (k);
  return count_in (text, needle);
}

/* Wait (at most @seconds) until daemon @k's log holds @needle @n times. */
static gboolean
daemon_log_wait (guint k, const char *needle, guint n, double seconds)
{
  gint64 end = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC);
  while (daemon_log_count (k, needle) < n) {
    if (g_get_monotonic_time () > end) {
      g_autofree char *text = daemon_log (k);
      g_test_message ("daemon %u's log, waiting for %u times \"%s\":\n%s", k + 1, n, needle, text);
      return FALSE;
    }
    g_usleep (20000);
  }
  return TRUE;
}

/* GET /healthz of daemon @k, straight (not through HAProxy): its status;
 * its body in *@body (nullable). */
static guint
daemon_health_body (guint k, char **body)
{
  guint status = 0;
  char *text = http_get (daemons[k].addr, daemon_http_port, "/healthz", &status);
  if (body)
    *body = text ? text : g_strdup ("");
  else
    g_free (text);
  return status;
}

static guint
daemon_health (guint k)
{
  return daemon_health_body (k, NULL);
}

static void
daemon_start (guint k)
{
  Daemon *d = &daemons[k];
  g_assert_null (d->proc);
  guint starts = daemon_log_count (k, "event=start ");
  const char *argv[] = { g_getenv ("EXTBODYD"), "-c", d->conf, NULL };
  d->proc = spawn_in (d->ns, argv, d->log, &d->wd);
  g_assert_true (daemon_log_wait (k, "event=start ", starts + 1, 60));
  gint64 end = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  while (daemon_health (k) != 200 && g_get_monotonic_time () < end)
    g_usleep (20000);
  g_assert_cmpuint (daemon_health (k), ==, 200);
}

/* Wait for daemon @k to end. Returns: its exit status, -1 for a signal. */
static int
daemon_reap (guint k)
{
  return reap (&daemons[k].proc, &daemons[k].wd);
}

/* The daemons whose log says they handled message @id. */
static guint
served_by (const char *id, guint *which)
{
  g_autofree char *needle = g_strdup_printf ("msgid=<%s@test.example> references=", id);
  guint n = 0;
  for (guint k = 0; k < N_DAEMONS; k++)
    if (daemon_log_count (k, needle) > 0) {
      n++;
      if (which)
        *which = k;
    }
  return n;
}

/* ---- HAProxy -------------------------------------------------------------------- */

/* One command on its stats socket; its answer. */
static char *
haproxy_cmd (const char *cmd)
{
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  g_assert_cmpuint (strlen (haproxy_sock), <, sizeof sa.sun_path);
  strcpy (sa.sun_path, haproxy_sock);
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) != 0) {
    close (fd);
    return NULL;
  }
  struct timeval tv = { 10, 0 };
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  g_autofree char *line = g_strdup_printf ("%s\n", cmd);
  write_all (fd, line, strlen (line));
  GString *s = read_all (fd);
  close (fd);
  return g_string_free (s, FALSE);
}

typedef struct {
  char    status[32];   /* UP, DOWN, "UP 1/2", MAINT, ... */
  char    check[32];    /* the last check's status (L7OK, L7STS, L4CON, ...) */
  guint64 scur;         /* sessions now */
  guint64 stot;         /* sessions in all */
  guint64 wretr;        /* retries */
  guint64 wredis;       /* redispatches */
} Stat;

/* The row of show stat for @backend's @server ("BACKEND": the backend's
 * own). */
static gboolean
haproxy_stat (const char *backend, const char *server, Stat *st)
{
  memset (st, 0, sizeof *st);
  g_autofree char *csv = haproxy_cmd ("show stat");
  if (!csv || !g_str_has_prefix (csv, "# "))
    return FALSE;
  g_auto (GStrv) lines = g_strsplit (csv, "\n", -1);
  g_auto (GStrv) head = g_strsplit (lines[0] + 2, ",", -1);
  int c_status = -1, c_check = -1, c_scur = -1, c_stot = -1, c_wretr = -1, c_wredis = -1;
  for (int i = 0; head[i]; i++) {
    if (!strcmp (head[i], "status"))
      c_status = i;
    else if (!strcmp (head[i], "check_status"))
      c_check = i;
    else if (!strcmp (head[i], "scur"))
      c_scur = i;
    else if (!strcmp (head[i], "stot"))
      c_stot = i;
    else if (!strcmp (head[i], "wretr"))
      c_wretr = i;
    else if (!strcmp (head[i], "wredis"))
      c_wredis = i;
  }
  g_assert_true (c_status >= 0 && c_check >= 0 && c_scur >= 0 && c_stot >= 0 && c_wretr >= 0 && c_wredis >= 0);
  for (guint i = 1; lines[i]; i++) {
    g_auto (GStrv) f = g_strsplit (lines[i], ",", -1);
    if (g_strv_length (f) <= (guint) MAX (MAX (c_status, c_check), MAX (c_wretr, c_wredis)) || strcmp (f[0], backend)
        || strcmp (f[1], server))
      continue;
    g_strlcpy (st->status, f[c_status], sizeof st->status);
    g_strlcpy (st->check, f[c_check], sizeof st->check);
    st->scur = g_ascii_strtoull (f[c_scur], NULL, 10);
    st->stot = g_ascii_strtoull (f[c_stot], NULL, 10);
    st->wretr = g_ascii_strtoull (f[c_wretr], NULL, 10);
    st->wredis = g_ascii_strtoull (f[c_wredis], NULL, 10);
    return TRUE;
  }
  return FALSE;
}

static gboolean
server_is (const char *backend, guint k, const char *state)
{
  g_autofree char *name = g_strdup_printf ("d%u", k + 1);
  Stat st;
  return haproxy_stat (backend, name, &st) && strcmp (st.status, state) == 0;
}

/* Wait (at most @seconds) until daemon @k is @state ("UP", "DOWN") in both
 * backends. */
static gboolean
server_wait (guint k, const char *state, double seconds)
{
  gint64 end = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC);
  while (!(server_is (be_http, k, state) && server_is (be_milter, k, state))) {
    if (g_get_monotonic_time () > end) {
      g_autofree char *stat = haproxy_cmd ("show stat");
      g_test_message ("d%u is not %s in HAProxy:\n%s", k + 1, state, stat ? stat : "(no answer)");
      return FALSE;
    }
    g_usleep (20000);
  }
  return TRUE;
}

/* The words of @line, without the empty ones runs of blanks give. */
static char **
words (const char *line)
{
  g_auto (GStrv) all = g_strsplit_set (line, " \t", -1);
  GPtrArray *w = g_ptr_array_new ();
  for (guint i = 0; all[i]; i++)
    if (*all[i])
      g_ptr_array_add (w, g_strdup (all[i]));
  g_ptr_array_add (w, NULL);
  return (char **) g_ptr_array_free (w, FALSE);
}

/* The rendered configuration: which backend is the HTTP door's (mode http)
 * and which the milter's (mode tcp), the daemons' ports (their server
 * lines'), and HAProxy's ports (the bind of the frontend or listen section
 * that leads to each). */
static void
haproxy_read_config (const char *cfg)
{
  g_autofree char *text = file_text (cfg);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  g_autoptr (GHashTable) fe_to_be = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr (GHashTable) fe_port = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  char *kind = NULL, *name = NULL, *mode = NULL, *default_mode = NULL;
  guint server_port = 0;
  for (guint i = 0;; i++) {
    g_auto (GStrv) w = lines[i] ? words (lines[i]) : NULL;
    gboolean section = !lines[i] || (w[0] && (!strcmp (w[0], "global") || !strcmp (w[0], "defaults")
                                               || !strcmp (w[0], "frontend") || !strcmp (w[0], "backend")
                                               || !strcmp (w[0], "listen")));
    if (section && name && server_port) {
      const char *m = mode ? mode : default_mode;
      gboolean http = m && !strcmp (m, "http");
      if (http) {
        g_free (be_http);
        be_http = g_strdup (name);
        daemon_http_port = server_port;
      } else {
        g_free (be_milter);
        be_milter = g_strdup (name);
        daemon_milter_port = server_port;
      }
    }
    if (section) {
      if (kind && !strcmp (kind, "defaults") && mode) {
        g_free (default_mode);
        default_mode = g_strdup (mode);
      }
      g_clear_pointer (&kind, g_free);
      g_clear_pointer (&name, g_free);
      g_clear_pointer (&mode, g_free);
      server_port = 0;
      if (!lines[i])
        break;
      kind = g_strdup (w[0]);
      name = w[1] ? g_strdup (w[1]) : NULL;
      if (name && !strcmp (kind, "listen"))
        g_hash_table_insert (fe_to_be, g_strdup (name), g_strdup (name));
      continue;
    }
    if (!w[0] || !w[1])
      continue;
    if (!strcmp (w[0], "mode")) {
      g_free (mode);
      mode = g_strdup (w[1]);
    } else if (!strcmp (w[0], "server") && w[2] && strrchr (w[2], ':')) {
      server_port = (guint) atoi (strrchr (w[2], ':') + 1);
    } else if (!strcmp (w[0], "bind") && name && strrchr (w[1], ':')) {
      g_hash_table_insert (fe_port, g_strdup (name), GUINT_TO_POINTER ((guint) atoi (strrchr (w[1], ':') + 1)));
    } else if (!strcmp (w[0], "default_backend") && name) {
      g_hash_table_insert (fe_to_be, g_strdup (name), g_strdup (w[1]));
    }
  }
  g_free (default_mode);
  g_assert_nonnull (be_http);
  g_assert_nonnull (be_milter);
  GHashTableIter it;
  gpointer fe, be;
  g_hash_table_iter_init (&it, fe_to_be);
  while (g_hash_table_iter_next (&it, &fe, &be)) {
    guint port = GPOINTER_TO_UINT (g_hash_table_lookup (fe_port, fe));
    if (!strcmp (be, be_http))
      haproxy_http_port = port;
    else if (!strcmp (be, be_milter))
      haproxy_milter_port = port;
  }
  g_assert_cmpuint (haproxy_http_port, !=, 0);
  g_assert_cmpuint (haproxy_milter_port, !=, 0);
  g_assert_cmpuint (daemon_http_port, !=, 0);
  g_assert_cmpuint (daemon_milter_port, !=, 0);
}

/* The shipped filters/daemon/haproxy.cfg with this network's addresses,
 * checked by haproxy -c, then HAProxy in the MTA's namespace; returns once
 * every daemon is UP in both backends. */
static void
haproxy_start (void)
{
  g_autofree char *cfg = g_build_filename (dir, "haproxy.cfg", NULL);
  g_autofree char *render = g_strdup_printf ("sh '%s' haproxy-cfg '%s' %s '%s' %s %s %s > '%s'", net_script,
                                             haproxy_template, mta_addr, dir, daemons[0].addr, daemons[1].addr,
                                             daemons[2].addr, cfg);
  g_assert_cmpint (test_sh (render, NULL), ==, 0);
  g_autofree char *check = g_strdup_printf ("haproxy -c -f '%s' 2>&1", cfg);
  g_autofree char *out = NULL;
  int st = test_sh (check, &out);
  g_test_message ("haproxy -c -f haproxy.cfg (from %s): %d %s", haproxy_template, st, out ? out : "");
  g_assert_cmpint (st, ==, 0);
  haproxy_read_config (cfg);
  const char *argv[] = { "haproxy", "-db", "-f", cfg, NULL };
  haproxy = spawn_in (ns_mta, argv, haproxy_log, &wd_haproxy);
  for (guint k = 0; k < N_DAEMONS; k++)
    g_assert_true (server_wait (k, "UP", 60));
}

/* ---- messages -------------------------------------------------------------------- */

/* A message (CRLF) with the Subject @id, the Message-ID <@id@test.example>
 * and two references: http://ORIGIN@path, then a data: URL whose text is
 * "data @id". */
static char *
message (const char *id, const char *path)
{
  return g_strdup_printf ("From: a@test.example\r\nTo: b@test.example\r\nSubject: %s\r\n"
                          "Message-ID: <%s@test.example>\r\nMIME-Version: 1.0\r\n"
                          "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
                          "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
                          "\tURL=\"http://%s:%u%s\"\r\n\r\nContent-Type: text/plain\r\n\r\n"
                          "--b\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,data%%20%s\"\r\n\r\n"
                          "Content-Type: text/plain\r\n\r\n--b--\r\n",
                          id, id, bridge_addr, http_port, path, id);
}

static char *
sha256_of_data (const char *id)
{
  g_autofree char *text = g_strdup_printf ("data %s", id);
  return g_compute_checksum_for_string (G_CHECKSUM_SHA256, text, -1);
}

/* The path of an origin URL that answers httpd.py's /text after @ms ms,
 * with u= the 7 characters @format makes: every URL of the test has the
 * same length, so that the daemon's X-Extbody-Resolved field, which
 * carries the URL, folds each at the same places. */
static char * G_GNUC_PRINTF (2, 3)
url_path (guint ms, const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  g_autofree char *u = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_assert_cmpuint (strlen (u), ==, 7);
  g_assert_cmpuint (ms, <, 1000);
  return g_strdup_printf ("/slow?ms=%03u&u=%s", ms, u);
}

/* What the pool must answer for message @id referencing @path: the
 * reference message's answer with its id, its data: part's digest and
 * its URL (the same length, folded at the same places) replaced. */
static char *
expected_answer (const char *id, const char *path)
{
  g_assert_cmpuint (strlen (id), ==, strlen (ref_id));
  g_assert_cmpuint (strlen (path), ==, strlen (ref_path));
  g_autofree char *sha = sha256_of_data (id);
  g_auto (GStrv) a = g_strsplit (ref_text, ref_id, -1);
  g_autofree char *t = g_strjoinv (id, a);
  g_auto (GStrv) b = g_strsplit (t, ref_sha, -1);
  char *want = g_strjoinv (sha, b);
  /* the URL in X-Extbody-Resolved: URL="...", folded */
  g_autofree char *url = g_strdup_printf ("http://%s:%u%s", bridge_addr, http_port, path);
  char *p = strstr (want, "URL=\"");
  g_assert_nonnull (p);
  p += 5;
  const char *u = url;
  for (; *p && *p != '"'; p++)
    if (!strchr ("\r\n\t ", *p))
      *p = *u++;
  g_assert_cmpint (*u, ==, '\0');
  return want;
}

/* ---- extbodyc, several at once ------------------------------------------------------- */

typedef struct {
  char  *id;
  char  *path;       /* the http reference's */
  char  *target;     /* extbodyc's -s */
  int    status;     /* extbodyc's exit status; -2: not run yet */
  char  *in, *out, *err;
} Job;

typedef struct {
  GPtrArray *jobs;
  gint       next;
  gint       done;
  GThread   *threads[N_CLIENTS];
} Burst;

static void
job_free (Job *j)
{
  g_free (j->id);
  g_free (j->path);
  g_free (j->target);
  g_free (j->in);
  g_free (j->out);
  g_free (j->err);
  g_free (j);
}

static Burst *
burst_new (void)
{
  Burst *b = g_new0 (Burst, 1);
  b->jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) job_free);
  return b;
}

static void
burst_free (Burst *b)
{
  g_ptr_array_unref (b->jobs);
  g_free (b);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Burst, burst_free)

static char *
haproxy_target (void)
{
  return g_strdup_printf ("inet:%u@%s", haproxy_http_port, mta_addr);
}

static char *
daemon_target (guint k)
{
  return g_strdup_printf ("inet:%u@%s", daemon_http_port, daemons[k].addr);
}

/* Add message @id, referencing the origin's @path, sent to @target (NULL:
 * HAProxy). */
static Job *
burst_add (Burst *b, const char *id, const char *path, const char *target)
{
  Job *j = g_new0 (Job, 1);
  j->id = g_strdup (id);
  j->path = g_strdup (path);
  j->target = target ? g_strdup (target) : haproxy_target ();
  j->status = -2;
  j->in = g_strdup_printf ("%s/msg/%s.eml", dir, id);
  j->out = g_strdup_printf ("%s/out/%s.eml", dir, id);
  j->err = g_strdup_printf ("%s/out/%s.err", dir, id);
  g_autofree char *msg = message (id, path);
  g_assert_true (g_file_set_contents (j->in, msg, -1, NULL));
  g_ptr_array_add (b->jobs, j);
  return j;
}

/* Run extbodyc for @j (from the calling thread's namespace: the MTA's). */
static void
job_run (Job *j)
{
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
  g_subprocess_launcher_set_stdin_file_path (l, j->in);
  g_subprocess_launcher_set_stdout_file_path (l, j->out);
  g_subprocess_launcher_set_stderr_file_path (l, j->err);
  g_autofree char *tries = g_strdup_printf ("%u", TRIES);
  const char *argv[] = { g_getenv ("EXTBODYC"), "-s", j->target, "-t", "60", "--tries", tries, NULL };
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = g_subprocess_launcher_spawnv (l, argv, &error);
  g_assert_no_error (error);
  g_subprocess_wait (p, NULL, NULL);
  j->status = g_subprocess_get_if_exited (p) ? g_subprocess_get_exit_status (p) : -1;
}

static gpointer
burst_worker (gpointer data)
{
  Burst *b = data;
  for (;;) {
    gint i = g_atomic_int_add (&b->next, 1);
    if (i >= (gint) b->jobs->len)
      break;
    job_run (b->jobs->pdata[i]);
    g_atomic_int_inc (&b->done);
  }
  return NULL;
}

static void
burst_start (Burst *b)
{
  for (guint t = 0; t < N_CLIENTS; t++)
    b->threads[t] = g_thread_new ("extbodyc", burst_worker, b);
}

/* Wait (at most 120 s) until @n messages of @b have had their answer. */
static void
burst_wait_done (Burst *b, guint n)
{
  for (int t = 0; t < 120 * 100 && (guint) g_atomic_int_get (&b->done) < n; t++)
    g_usleep (10000);
  g_assert_cmpuint ((guint) g_atomic_int_get (&b->done), >=, n);
}

static void
burst_join (Burst *b)
{
  for (guint t = 0; t < N_CLIENTS; t++)
    g_thread_join (b->threads[t]);
}

/* How many of @b's extbodyc said on standard error that a try on another
 * daemon did the message ("...; done by SOCKET on try N"); every line they
 * wrote is shown. */
static guint
burst_client_retries (Burst *b)
{
  guint n = 0;
  for (guint i = 0; i < b->jobs->len; i++) {
    Job *j = b->jobs->pdata[i];
    g_autofree char *err = file_text (j->err);
    if (*err)
      g_test_message ("%s: extbodyc said: %s", j->id, g_strchomp (err));
    if (strstr (err, "; done by ") && strstr (err, " on try "))
      n++;
  }
  return n;
}

/* Every message of @b came out whole: extbodyc exited 0 and wrote exactly the
 * bytes of its expected answer (resolved 2 of 2), no more, no fewer. */
static void
burst_check (Burst *b)
{
  for (guint i = 0; i < b->jobs->len; i++) {
    Job *j = b->jobs->pdata[i];
    g_autofree char *out = NULL;
    gsize len = 0;
    g_assert_true (g_file_get_contents (j->out, &out, &len, NULL));
    g_autofree char *want = expected_answer (j->id, j->path);
    if (j->status != 0 || len != strlen (want) || memcmp (out, want, len) != 0) {
      g_autofree char *err = file_text (j->err);
      g_test_message ("%s (to %s): extbodyc exit %d, %" G_GSIZE_FORMAT " bytes out, %" G_GSIZE_FORMAT
                      " expected; its standard error: %s\nits output:\n%s",
                      j->id, j->target, j->status, len, strlen (want), err, out);
    }
    g_assert_cmpint (j->status, ==, 0);
    g_assert_cmpuint (len, ==, strlen (want));
    g_assert_true (memcmp (out, want, len) == 0);
  }
}

/* Send one message to @target, at once: its answer checked. */
static void
send_one (const char *id, const char *path, const char *target)
{
  g_autoptr (Burst) b = burst_new ();
  job_run (burst_add (b, id, path, target));
  burst_check (b);
}

/* ---- the cases ------------------------------------------------------------------------ */

static void
test_spread_and_once (void)
{
  g_autoptr (Burst) b = burst_new ();
  for (guint i = 0; i < N_SPREAD; i++) {
    g_autofree char *id = g_strdup_printf ("sp-%04u", i);
    g_autofree char *path = url_path (200, "sp-%04u", i % N_SPREAD_URLS);
    burst_add (b, id, path, NULL);
  }
  gint64 t0 = g_get_monotonic_time ();
  burst_start (b);
  burst_join (b);
  double secs = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  burst_check (b);

  /* each message in the log of exactly one daemon, each daemon some */
  guint served[N_DAEMONS] = { 0 };
  for (guint i = 0; i < b->jobs->len; i++) {
    Job *j = b->jobs->pdata[i];
    guint k = 0;
    guint n = served_by (j->id, &k);
    if (n != 1)
      g_test_message ("%s was in the log of %u daemons", j->id, n);
    g_assert_cmpuint (n, ==, 1);
    served[k]++;
  }
  g_autoptr (GHashTable) counts = origin_counts ();
  guint fetches = 0;
  for (guint u = 0; u < N_SPREAD_URLS; u++) {
    g_autofree char *target = url_path (200, "sp-%04u", u);
    guint n = origin_count (counts, target);
    if (n != 1)
      g_test_message ("%s fetched %u times", target, n);
    g_assert_cmpuint (n, ==, 1);
    fetches += n;
  }
  g_test_message ("spread: %u messages, %u URLs through HAProxy, %u extbodyc at once, in %.1f s "
                  "(%.1f messages/s): all resolved byte for byte; served by d1 %u, d2 %u, d3 %u; "
                  "the origin saw %u requests",
                  N_SPREAD, N_SPREAD_URLS, N_CLIENTS, secs, N_SPREAD / secs, served[0], served[1], served[2], fetches);
  for (guint k = 0; k < N_DAEMONS; k++)
    g_assert_cmpuint (served[k], >, 0);
}

/* A burst of @n messages, each its own URL answered after 300 ms, through
 * HAProxy: started, and waited for until a quarter is done and daemon @k
 * has a request in flight (HAProxy's scur). */
static Burst *
burst_mid (const char *tag, guint n, guint k, guint64 *in_flight)
{
  Burst *b = burst_new ();
  for (guint i = 0; i < n; i++) {
    g_autofree char *id = g_strdup_printf ("%s-%04u", tag, i);
    g_autofree char *path = url_path (300, "%s", id);
    burst_add (b, id, path, NULL);
  }
  burst_start (b);
  burst_wait_done (b, n / 4);
  g_autofree char *name = g_strdup_printf ("d%u", k + 1);
  Stat st = { 0 };
  gint64 end = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  while (!(haproxy_stat (be_http, name, &st) && st.scur > 0) && g_get_monotonic_time () < end)
    g_usleep (5000);
  g_assert_cmpuint (st.scur, >, 0);
  *in_flight = st.scur;
  return b;
}

static void
test_drain (void)
{
  const guint k = 0;
  guint64 in_flight = 0;
  g_autoptr (Burst) b = burst_mid ("dr", N_DRAIN, k, &in_flight);
  guint at_term = (guint) g_atomic_int_get (&b->done);
  gint64 t0 = g_get_monotonic_time ();
  g_subprocess_send_signal (daemons[k].proc, SIGTERM);
  /* it says so at once: 503 and why */
  g_autofree char *why = NULL;
  guint health = 0;
  gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (health != 503 && g_get_monotonic_time () < end) {
    g_clear_pointer (&why, g_free);
    health = daemon_health_body (k, &why);
    if (health != 503)
      g_usleep (10000);
  }
  g_test_message ("drain: /healthz of d1 after SIGTERM: %u %s", health, why);
  g_assert_cmpuint (health, ==, 503);

  /* HAProxy takes it out while it still serves: when either backend first
   * shows it DOWN, its log has no "SIGTERM: stopping" yet */
  gboolean down_http = FALSE, down_milter = FALSE, stopping_at_down = FALSE;
  double at_http = 0, at_milter = 0;
  while (!(down_http && down_milter)) {
    double now = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
    gboolean stopping = daemon_log_count (k, "SIGTERM: stopping") > 0;
    if (!down_http && server_is (be_http, k, "DOWN")) {
      down_http = TRUE;
      at_http = now;
      stopping_at_down |= stopping;
    }
    if (!down_milter && server_is (be_milter, k, "DOWN")) {
      down_milter = TRUE;
      at_milter = now;
      stopping_at_down |= stopping;
    }
    if (now > 30)
      break;
    g_usleep (20000);
  }
  g_assert_true (down_http && down_milter);
  g_assert_true (daemon_log_wait (k, "SIGTERM: stopping", 1, 30));
  double at_stop = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  int status = daemon_reap (k);
  double at_exit = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  burst_join (b);
  g_autofree char *log = daemon_log (k);
  g_test_message ("drain: SIGTERM to d1 after %u of %u messages (%" G_GUINT64_FORMAT " in flight on it); HAProxy showed it DOWN after %.2f s (HTTP) "
                  "and %.2f s (milter), its doors closed at %.2f s (\"SIGTERM: stopping\" seen), it exited %d "
                  "at %.2f s",
                  at_term, N_DRAIN, in_flight, at_http, at_milter, at_stop, status, at_exit);
  g_assert_false (stopping_at_down);
  g_assert_cmpuint (count_in (log, "draining: serving"), ==, 1);
  g_assert_cmpint (status, ==, 0);
  burst_client_retries (b);
  burst_check (b);
  guint on_d1 = 0;
  g_autoptr (GHashTable) counts = origin_counts ();
  for (guint i = 0; i < b->jobs->len; i++) {
    Job *j = b->jobs->pdata[i];
    guint which = 0;
    guint n = served_by (j->id, &which);
    g_assert_cmpuint (n, >=, 1);
    if (n == 1 && which == k)
      on_d1++;
    g_autofree char *target = url_path (300, "%s", j->id);
    g_assert_cmpuint (origin_count (counts, target), ==, 1);
  }
  g_test_message ("drain: %u messages served by d1, every message resolved, every URL fetched once", on_d1);
  g_assert_cmpuint (on_d1, >, 0);

  daemon_start (k);
  g_assert_true (server_wait (k, "UP", 60));
}

static void
test_kill (void)
{
  const guint k = 1;
  Stat be0, be1;
  g_assert_true (haproxy_stat (be_http, "BACKEND", &be0));
  guint64 in_flight = 0;
  g_autoptr (Burst) b = burst_mid ("kl", N_KILL, k, &in_flight);
  guint at_kill = (guint) g_atomic_int_get (&b->done);
  g_subprocess_force_exit (daemons[k].proc);
  g_assert_cmpint (daemon_reap (k), ==, -1);
  g_assert_true (server_wait (k, "DOWN", 30));
  burst_join (b);
  g_assert_true (haproxy_stat (be_http, "BACKEND", &be1));
  guint client_retries = burst_client_retries (b);
  burst_check (b);
  guint64 retries = be1.wretr - be0.wretr, redispatches = be1.wredis - be0.wredis;
  g_test_message ("kill: SIGKILL to d2 after %u of %u messages with %" G_GUINT64_FORMAT " requests in flight on it: "
                  "HAProxy retried %" G_GUINT64_FORMAT " times, redispatched %" G_GUINT64_FORMAT "; %u extbodyc "
                  "said they tried again; every message whole and resolved, byte for byte",
                  at_kill, N_KILL, in_flight, retries, redispatches, client_retries);
  g_assert_cmpuint (retries + redispatches + client_retries, >=, 1);

  daemon_start (k);
  g_assert_true (server_wait (k, "UP", 60));
}

/* The requests daemon @k has read and not answered: its established
 * connections on the HTTP port that brought more than a health check's bytes
 * and took back less than an answer's (ss in its namespace). */
static guint
daemon_in_flight (guint k)
{
  g_autofree char *cmd = g_strdup_printf ("ip netns exec %s-h%u ss -Htin state established '( sport = :%u )'", prefix,
                                          k + 1, daemon_http_port);
  g_autofree char *out = NULL;
  if (test_sh (cmd, &out) != 0 || !out)
    return 0;
  guint n = 0;
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    const char *rcv = strstr (lines[i], "bytes_received:");
    const char *ack = strstr (lines[i], "bytes_acked:");
    guint64 received = rcv ? g_ascii_strtoull (rcv + strlen ("bytes_received:"), NULL, 10) : 0;
    guint64 acked = ack ? g_ascii_strtoull (ack + strlen ("bytes_acked:"), NULL, 10) : 0;
    if (received > 300 && acked < 300)
      n++;
  }
  return n;
}

/* No balancer: extbodyc -s with the three daemons, --tries 3; daemon 1
 * killed with requests in flight on it: each of them is tried again by its
 * extbodyc on another daemon, and comes out once, whole. */
static void
test_kill_without_balancer (void)
{
  const guint k = 0;
  g_autofree char *t0 = daemon_target (0);
  g_autofree char *t1 = daemon_target (1);
  g_autofree char *t2 = daemon_target (2);
  g_autofree char *list = g_strdup_printf ("%s,%s,%s", t0, t1, t2);
  g_autoptr (Burst) b = burst_new ();
  for (guint i = 0; i < N_KILL; i++) {
    g_autofree char *id = g_strdup_printf ("kn-%04u", i);
    g_autofree char *path = url_path (300, "%s", id);
    burst_add (b, id, path, list);
  }
  burst_start (b);
  burst_wait_done (b, N_KILL / 4);
  guint in_flight = 0;
  gint64 end = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  while (!(in_flight = daemon_in_flight (k)) && g_get_monotonic_time () < end)
    g_usleep (20000);
  g_assert_cmpuint (in_flight, >, 0);
  guint at_kill = (guint) g_atomic_int_get (&b->done);
  g_subprocess_force_exit (daemons[k].proc);
  g_assert_cmpint (daemon_reap (k), ==, -1);
  burst_join (b);
  guint client_retries = burst_client_retries (b);
  burst_check (b);
  g_test_message ("kill without balancer: extbodyc -s with the three daemons; SIGKILL to d1 after %u of %u messages "
                  "with %u requests in flight on it: %u extbodyc said another daemon did it on a later try; every "
                  "message whole and resolved, byte for byte",
                  at_kill, N_KILL, in_flight, client_retries);
  g_assert_cmpuint (client_retries, >=, in_flight);

  daemon_start (k);
  g_assert_true (server_wait (k, "UP", 60));
}

static void
test_valkey (void)
{
  g_autofree char *down_line = g_strdup_printf ("Redis %s:%u is down", bridge_addr, redis.port);
  g_autofree char *back_line = g_strdup_printf ("Redis %s:%u is back", bridge_addr, redis.port);
  guint downs[N_DAEMONS], backs[N_DAEMONS];
  for (guint k = 0; k < N_DAEMONS; k++) {
    downs[k] = daemon_log_count (k, down_line);
    backs[k] = daemon_log_count (k, back_line);
  }
  g_autoptr (Burst) b = burst_new ();
  for (guint i = 0; i < N_VALKEY; i++) {
    g_autofree char *id = g_strdup_printf ("rv-%04u", i);
    g_autofree char *path = url_path (100, "rv-%04u", i % N_VALKEY_URLS);
    burst_add (b, id, path, NULL);
  }
  burst_start (b);
  burst_wait_done (b, N_VALKEY / 4);
  redis_kill ();
  guint at_kill = (guint) g_atomic_int_get (&b->done);

  /* each daemon meets Redis down: a message straight to each that has not
   * said so yet */
  guint probes = 0;
  for (guint round = 0;; round++) {
    gboolean all = TRUE;
    for (guint k = 0; k < N_DAEMONS; k++) {
      if (daemon_log_count (k, down_line) > downs[k])
        continue;
      all = FALSE;
      g_autofree char *id = g_strdup_printf ("rd-%04u", probes++);
      g_autofree char *path = url_path (1, "%s", id);
      g_autofree char *target = daemon_target (k);
      send_one (id, path, target);
    }
    if (all)
      break;
    g_assert_cmpuint (round, <, 100);
    g_usleep (100000);
  }
  /* redis_required is off: Redis down takes no daemon out, and /healthz
   * says how Redis stands */
  for (guint k = 0; k < N_DAEMONS; k++) {
    g_assert_true (server_is (be_http, k, "UP"));
    g_autofree char *body = NULL;
    g_assert_cmpuint (daemon_health_body (k, &body), ==, 200);
    g_assert_cmpstr (body, ==, "ok\nredis: down\n");
  }
  burst_wait_done (b, 2 * N_VALKEY / 3);
  guint at_restart = (guint) g_atomic_int_get (&b->done);
  redis_spawn ();
  burst_join (b);
  burst_check (b);

  /* each daemon finds it back (it tries again once its pause has passed) */
  guint back_probes = 0;
  for (guint round = 0;; round++) {
    gboolean all = TRUE;
    for (guint k = 0; k < N_DAEMONS; k++) {
      if (daemon_log_count (k, back_line) > backs[k])
        continue;
      all = FALSE;
      g_autofree char *id = g_strdup_printf ("rb-%04u", back_probes++);
      g_autofree char *path = url_path (1, "%s", id);
      g_autofree char *target = daemon_target (k);
      send_one (id, path, target);
    }
    if (all)
      break;
    g_assert_cmpuint (round, <, 300);
    g_usleep (100000);
  }
  for (guint k = 0; k < N_DAEMONS; k++) {
    g_assert_cmpuint (daemon_log_count (k, down_line), ==, downs[k] + 1);
    g_assert_cmpuint (daemon_log_count (k, back_line), ==, backs[k] + 1);
    g_autofree char *body = NULL;
    g_assert_cmpuint (daemon_health_body (k, &body), ==, 200);
    g_assert_cmpstr (body, ==, "ok\nredis: up\n");
  }

  /* shared again: a new URL, two messages straight to each daemon at once,
   * fetched once */
  g_autofree char *after_path = url_path (300, "rv-next");
  g_autoptr (Burst) after = burst_new ();
  for (guint i = 0; i < 2 * N_DAEMONS; i++) {
    g_autofree char *id = g_strdup_printf ("ra-%04u", i);
    g_autofree char *target = daemon_target (i % N_DAEMONS);
    burst_add (after, id, after_path, target);
  }
  burst_start (after);
  burst_join (after);
  burst_check (after);
  for (guint i = 0; i < after->jobs->len; i++) {
    Job *j = after->jobs->pdata[i];
    guint which = N_DAEMONS;
    g_assert_cmpuint (served_by (j->id, &which), ==, 1);
    g_assert_cmpuint (which, ==, i % N_DAEMONS);
  }
  g_autoptr (GHashTable) counts = origin_counts ();
  guint hist[N_DAEMONS + 1] = { 0 };
  for (guint u = 0; u < N_VALKEY_URLS; u++) {
    g_autofree char *target = url_path (100, "rv-%04u", u);
    guint n = origin_count (counts, target);
    g_assert_cmpuint (n, >=, 1);
    g_assert_cmpuint (n, <=, N_DAEMONS);
    hist[n]++;
  }
  guint after_fetches = origin_count (counts, after_path);
  g_test_message ("valkey: %s killed after %u of %u messages, started again after %u: all resolved byte for byte; "
                  "%u probe messages until each daemon logged it down, %u until each logged it back; URLs fetched "
                  "once %u, twice %u, three times %u; afterwards a new URL asked of all three daemons fetched %u "
                  "times",
                  test_redis_server (), at_kill, N_VALKEY, at_restart, probes, back_probes, hist[1], hist[2], hist[3],
                  after_fetches);
  g_assert_cmpuint (after_fetches, ==, 1);
}

/* ---- SMTP into the private Postfix ------------------------------------------------------- */

static int
smtp_reply (FILE *in)
{
  char line[1024];
  for (;;) {
    if (!fgets (line, sizeof line, in) || strlen (line) < 4)
      return -1;
    if (line[3] != '-')
      return atoi (line);
  }
}

static int
smtp_command (int fd, FILE *in, const char *command)
{
  if (!write_all (fd, command, strlen (command)))
    return -1;
  return smtp_reply (in);
}

typedef struct {
  char  *id;
  char  *msg;
  GString *codes;   /* every try's outcome, "451 250" */
  int    code;      /* the last end-of-data reply */
} Mail;

typedef struct {
  GPtrArray *mails;
  gint       next, done;
  guint      port;
  GThread   *threads[N_CLIENTS];
} Smtp;

/* One SMTP session for @m's message. Returns: the reply to its end of data,
 * or the first other reply that was not the one expected, or -1 when the
 * connection broke. */
static int
smtp_try (guint port, Mail *m)
{
  int fd = tcp_connect ("127.0.0.1", port, 120);
  if (fd < 0)
    return -1;
  FILE *in = fdopen (dup (fd), "r");
  int code = smtp_reply (in);
  if (code == 220)
    code = smtp_command (fd, in, "HELO client.test.example\r\n");
  if (code == 250)
    code = smtp_command (fd, in, "MAIL FROM:<a@test.example>\r\n");
  if (code == 250)
    code = smtp_command (fd, in, "RCPT TO:<b@test.example>\r\n");
  if (code == 250)
    code = smtp_command (fd, in, "DATA\r\n");
  if (code == 354)
    code = write_all (fd, m->msg, strlen (m->msg)) ? smtp_command (fd, in, ".\r\n") : -1;
  if (code > 0)
    smtp_command (fd, in, "QUIT\r\n");
  fclose (in);
  close (fd);
  return code;
}

static gpointer
smtp_worker (gpointer data)
{
  Smtp *s = data;
  for (;;) {
    gint i = g_atomic_int_add (&s->next, 1);
    if (i >= (gint) s->mails->len)
      break;
    Mail *m = s->mails->pdata[i];
    /* as a client MTA: a temporary failure or a broken connection is tried
     * again, a little later */
    for (guint t = 0; t < 8; t++) {
      m->code = smtp_try (s->port, m);
      g_string_append_printf (m->codes, "%s%d", t ? " " : "", m->code);
      if (m->code == 250 || (m->code >= 500 && m->code < 600))
        break;
      g_usleep (500000);
    }
    g_atomic_int_inc (&s->done);
  }
  return NULL;
}

static void
mail_free (Mail *m)
{
  g_free (m->id);
  g_free (m->msg);
  g_string_free (m->codes, TRUE);
  g_free (m);
}

/* The default_action the shipped postfix-main.cf gives extbodyd's milter. */
static char *
shipped_default_action (void)
{
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "..", "filters", "daemon", "postfix-main.cf", NULL);
  g_autofree char *text = file_text (path);
  g_autoptr (GRegex) re = g_regex_new ("smtpd_milters = .*\\{ [^,}]*, default_action=([a-z]+) \\}", 0, 0, NULL);
  g_autoptr (GMatchInfo) mi = NULL;
  if (!g_regex_match (re, text, 0, &mi))
    g_error ("%s: no smtpd_milters line with default_action", path);
  return g_match_info_fetch (mi, 1);
}

/* Every delivered message, by id: its X-Extbody resolution ("2 of 2"; "-"
 * without an X-Extbody field), and in @copies how many copies came. */
static GHashTable *
scan_delivered (const char *maildir_new, GHashTable **copies, guint *total)
{
  GHashTable *got = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  *copies = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  *total = 0;
  g_autoptr (GDir) d = g_dir_open (maildir_new, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name (d))) {
    g_autofree char *p = g_build_filename (maildir_new, name, NULL);
    g_autofree char *text = file_text (p);
    (*total)++;
    const char *mid = strstr (text, "\nMessage-ID: <");
    g_assert_nonnull (mid);
    mid += strlen ("\nMessage-ID: <");
    g_autofree char *id = g_strndup (mid, strcspn (mid, "@"));
    const char *field = strstr (text, "\nX-Extbody: resolved ");
    char *resolved;
    if (field) {
      field += strlen ("\nX-Extbody: resolved ");
      const char *end = strstr (field, " external-body");
      resolved = end ? g_strndup (field, (gsize) (end - field)) : g_strdup ("?");
      /* resolved: the origin's text and the data: text are in it, no reference left */
      g_autofree char *data = g_strdup_printf ("\ndata %s\n", id);
      if (!strcmp (resolved, "2 of 2")
          && (count_in (text, "\nhello from the test server\n") != 1 || count_in (text, data) != 1
              || strstr (text, "message/external-body")))
        g_error ("%s: X-Extbody says resolved 2 of 2, the message is not:\n%s", id, text);
    } else {
      resolved = g_strdup ("-");
      /* unfiltered: the message as sent, both references in it */
      if (count_in (text, "Content-Type: message/external-body") != 2)
        g_error ("%s: neither resolved nor as sent:\n%s", id, text);
    }
    guint n = GPOINTER_TO_UINT (g_hash_table_lookup (*copies, id));
    g_hash_table_insert (*copies, g_strdup (id), GUINT_TO_POINTER (n + 1));
    g_hash_table_insert (got, g_steal_pointer (&id), resolved);
  }
  return got;
}

static guint
maildir_count (const char *maildir_new)
{
  guint n = 0;
  g_autoptr (GDir) d = g_dir_open (maildir_new, 0, NULL);
  while (d && g_dir_read_name (d))
    n++;
  return n;
}

/* Start @n messages "@tag-NNNN" into Postfix at @port, N_CLIENTS sessions at once. */
static void
smtp_burst_start (Smtp *s, guint port, const char *tag, guint n)
{
  *s = (Smtp) { .port = port };
  s->mails = g_ptr_array_new_with_free_func ((GDestroyNotify) mail_free);
  for (guint i = 0; i < n; i++) {
    Mail *m = g_new0 (Mail, 1);
    m->id = g_strdup_printf ("%s-%04u", tag, i);
    g_autofree char *path = url_path (300, "%s", m->id);
    m->msg = message (m->id, path);
    m->codes = g_string_new (NULL);
    g_ptr_array_add (s->mails, m);
  }
  for (guint t = 0; t < N_CLIENTS; t++)
    s->threads[t] = g_thread_new ("smtp", smtp_worker, s);
}

static void
smtp_burst_join (Smtp *s)
{
  for (guint t = 0; t < N_CLIENTS; t++)
    g_thread_join (s->threads[t]);
}

/* Wait (at most 30 s) until HAProxy's @backend has connections on daemon
 * @k; its row in *@st. */
static void
server_busy_wait (const char *backend, guint k, Stat *st)
{
  g_autofree char *name = g_strdup_printf ("d%u", k + 1);
  *st = (Stat) { 0 };
  gint64 end = g_get_monotonic_time () + 30 * G_USEC_PER_SEC;
  while (!(haproxy_stat (backend, name, st) && st->scur > 0) && g_get_monotonic_time () < end)
    g_usleep (5000);
  g_assert_cmpuint (st->scur, >, 0);
}

/* Wait (at most 120 s) for @n messages in @maildir_new, and a little more for
 * a copy too many; then scan_delivered(). */
static GHashTable *
delivered_wait (const char *maildir_new, guint n, GHashTable **copies, guint *total)
{
  for (int t = 0; t < 120 * 20 && maildir_count (maildir_new) < n; t++)
    g_usleep (50000);
  g_usleep (500000);
  return scan_delivered (maildir_new, copies, total);
}

/* The milter behind HAProxy, Postfix's default_action @action ("" for the
 * shipped postfix-main.cf's), daemon @k killed mid-burst. */
typedef struct {
  const char *action;
  const char *tag;
  guint       k;
} MilterCase;

static void
test_milter (gconstpointer data)
{
  const MilterCase *c = data;
  const guint k = c->k;
  g_autofree char *action = *c->action ? g_strdup (c->action) : shipped_default_action ();
  g_autofree char *pfdir = g_build_filename (dir, c->tag, NULL);
  g_autofree char *maildir_new = mta_postfix_maildir_new (pfdir);
  g_autofree char *milters = g_strdup_printf ("{ inet:%s:%u, default_action=%s }", mta_addr, haproxy_milter_port,
                                              action);
  guint smtp_port = 0;
  /* Postfix in the MTA's namespace: the test's thread is there */
  guint wd_pf = mta_postfix_up (pfdir, milters, action, &smtp_port);
  g_assert_cmpint (mta_postfix_set (pfdir, "milter_content_timeout=40s"), ==, 0);

  Smtp s;
  smtp_burst_start (&s, smtp_port, c->tag, N_MILTER);
  for (int t = 0; t < 120 * 100 && g_atomic_int_get (&s.done) < N_MILTER / 4; t++)
    g_usleep (10000);
  Stat st;
  server_busy_wait (be_milter, k, &st);
  guint at_kill = (guint) g_atomic_int_get (&s.done);
  g_subprocess_force_exit (daemons[k].proc);
  g_assert_cmpint (daemon_reap (k), ==, -1);
  smtp_burst_join (&s);

  /* every message accepted in the end */
  guint retried = 0;
  for (guint i = 0; i < s.mails->len; i++) {
    Mail *m = s.mails->pdata[i];
    if (strchr (m->codes->str, ' ')) {
      retried++;
      g_test_message ("milter: %s: the SMTP client's tries ended %s", m->id, m->codes->str);
    }
    g_assert_cmpint (m->code, ==, 250);
  }
  /* each delivered once */
  g_autoptr (GHashTable) copies = NULL;
  guint total = 0;
  g_autoptr (GHashTable) got = delivered_wait (maildir_new, N_MILTER, &copies, &total);
  guint unfiltered = 0;
  for (guint i = 0; i < s.mails->len; i++) {
    Mail *m = s.mails->pdata[i];
    const char *res = g_hash_table_lookup (got, m->id);
    guint n = GPOINTER_TO_UINT (g_hash_table_lookup (copies, m->id));
    if (n != 1 || !res || (strcmp (res, "2 of 2") && strcmp (res, "-")))
      g_test_message ("milter: %s: %u copies delivered, X-Extbody %s", m->id, n, res ? res : "(none)");
    g_assert_cmpuint (n, ==, 1);
    if (!strcmp (res, "-")) {
      unfiltered++;
      g_test_message ("milter: %s delivered as sent, without X-Extbody (SMTP %s)", m->id, m->codes->str);
    } else {
      g_assert_cmpstr (res, ==, "2 of 2");
    }
  }
  g_assert_cmpuint (total, ==, N_MILTER);

  /* what Postfix said about the milter */
  g_usleep (500000);   /* postlogd writes behind */
  g_autofree char *maillog_path = g_build_filename (pfdir, "log", "maillog", NULL);
  g_autofree char *maillog = file_text (maillog_path);
  g_auto (GStrv) lines = g_strsplit (maillog, "\n", -1);
  guint milter_lines = 0;
  for (guint i = 0; lines[i]; i++)
    if (strstr (lines[i], "milter") && (strstr (lines[i], "warning") || strstr (lines[i], "reject"))) {
      milter_lines++;
      g_test_message ("milter: Postfix: %s", lines[i]);
    }
  g_test_message ("milter: Postfix default_action=%s (%s); d%u SIGKILLed after %u of %u "
                  "messages with %" G_GUINT64_FORMAT " milter connections on it; %u messages needed another SMTP "
                  "try, %u delivered without X-Extbody, every message delivered once; %u lines of Postfix's log "
                  "about the milter",
                  action, *c->action ? "extbodyd(8), POOL" : "the shipped postfix-main.cf's", k + 1, at_kill, N_MILTER,
                  st.scur, retried, unfiltered, milter_lines);
  /* with tempfail, the message of each session the daemon held is tried
   * again by the client, and another daemon filters it */
  if (strcmp (action, "accept") != 0) {
    g_assert_cmpuint (unfiltered, ==, 0);
    g_assert_cmpuint (retried, >=, 1);
  }
  /* each message passed as sent is one Postfix warned about, and no more
   * than the sessions the killed daemon had */
  g_assert_cmpuint (unfiltered, <=, milter_lines);
  g_assert_cmpuint (unfiltered, <=, N_CLIENTS);
  g_ptr_array_unref (s.mails);
  mta_postfix_down (pfdir, wd_pf);

  daemon_start (k);
  g_assert_true (server_wait (k, "UP", 60));
}

/* ---- Postfix's pipe through extbodyc ------------------------------------------------------- */

/* Postfix's after-queue content filter as filters/pipe/README.md sets it up:
 * content_filter=extbody:dummy and a pipe(8) service running
 * extbody-pipe-client as nobody, its extbodyc reaching HAProxy's HTTP front
 * end (--tries 3), re-injecting through sendmail and pickup. Daemon @k is
 * SIGKILLed with requests of the pipe in flight: every message is delivered
 * once, resolved (HAProxy or extbodyc having sent it again), none passed
 * as it came. */
static void
test_pipe_client (void)
{
  const guint k = 1;
  g_autofree char *pfdir = g_build_filename (dir, "pp", NULL);
  g_autofree char *maildir_new = mta_postfix_maildir_new (pfdir);
  g_autofree char *run = mta_dir_public (dir, "pipe-client-run");
  g_autofree char *script_src = g_test_build_filename (G_TEST_DIST, "..", "filters", "pipe", "extbody-pipe-client", NULL);
  g_autofree char *script = test_copy_for_everyone (script_src, run, NULL, 0755);
  g_autofree char *client = test_copy_for_everyone (g_getenv ("EXTBODYC"), run, NULL, 0755);
  g_autofree char *clog = g_build_filename (run, "extbodyc.log", NULL);
  g_assert_true (g_file_set_contents (clog, "", 0, NULL));
  g_assert_cmpint (g_chmod (clog, 0666), ==, 0);
  guint smtp_port = 0;
  guint wd_pf = mta_postfix_up (pfdir, "", "accept", &smtp_port);
  g_autofree char *svc = g_strdup_printf ("extbody unix - n n - %u pipe flags=Rq user=nobody null_sender= "
                                          "argv=%s -C %s -s inet:%u@%s --tries %u -t 60 -l %s -q ${queue_id} "
                                          "-f ${sender} -- ${recipient}",
                                          N_CLIENTS, script, client, haproxy_http_port, mta_addr, TRIES, clog);
  mta_postfix_after_queue (pfdir, smtp_port, svc);

  Stat be0, be1;
  g_assert_true (haproxy_stat (be_http, "BACKEND", &be0));
  Smtp s;
  smtp_burst_start (&s, smtp_port, "pp", N_PIPE);
  /* mid-burst: a quarter delivered, and the pipe's requests on d2 */
  for (int t = 0; t < 120 * 100 && maildir_count (maildir_new) < N_PIPE / 4; t++)
    g_usleep (10000);
  g_assert_cmpuint (maildir_count (maildir_new), >=, N_PIPE / 4);
  Stat st;
  server_busy_wait (be_http, k, &st);
  guint at_kill = maildir_count (maildir_new);
  g_subprocess_force_exit (daemons[k].proc);
  g_assert_cmpint (daemon_reap (k), ==, -1);
  smtp_burst_join (&s);
  for (guint i = 0; i < s.mails->len; i++)
    g_assert_cmpint (((Mail *) s.mails->pdata[i])->code, ==, 250);

  /* each delivered once, resolved */
  g_autoptr (GHashTable) copies = NULL;
  guint total = 0;
  g_autoptr (GHashTable) got = delivered_wait (maildir_new, N_PIPE, &copies, &total);
  for (guint i = 0; i < s.mails->len; i++) {
    Mail *m = s.mails->pdata[i];
    const char *res = g_hash_table_lookup (got, m->id);
    guint n = GPOINTER_TO_UINT (g_hash_table_lookup (copies, m->id));
    if (n != 1 || !res || strcmp (res, "2 of 2"))
      g_test_message ("pipe: %s: %u copies delivered, X-Extbody %s", m->id, n, res ? res : "(none)");
    g_assert_cmpuint (n, ==, 1);
    g_assert_cmpstr (res, ==, "2 of 2");
  }
  g_assert_cmpuint (total, ==, N_PIPE);

  /* what extbodyc said (its -l file): tries on another daemon, never a fallback */
  g_autofree char *said = file_text (clog);
  g_auto (GStrv) lines = g_strsplit (said, "\n", -1);
  guint client_retries = 0;
  for (guint i = 0; lines[i]; i++) {
    if (!*lines[i])
      continue;
    g_test_message ("pipe: extbodyc said: %s", lines[i]);
    if (strstr (lines[i], "; done by ") && strstr (lines[i], " on try "))
      client_retries++;
    else
      g_error ("pipe: a line of extbodyc that is not a later try's success: %s", lines[i]);
  }
  g_assert_true (haproxy_stat (be_http, "BACKEND", &be1));
  guint64 retries = be1.wretr - be0.wretr, redispatches = be1.wredis - be0.wredis;
  g_test_message ("pipe: Postfix's content filter extbody-pipe-client, extbodyc -s HAProxy --tries %u; SIGKILL to d%u "
                  "after %u of %u messages delivered with %" G_GUINT64_FORMAT " requests on it: HAProxy retried %"
                  G_GUINT64_FORMAT " times, redispatched %" G_GUINT64_FORMAT "; %u extbodyc tried again; every "
                  "message delivered once, resolved",
                  TRIES, k + 1, at_kill, N_PIPE, st.scur, retries, redispatches, client_retries);
  g_assert_cmpuint (retries + redispatches + client_retries, >=, 1);
  g_ptr_array_unref (s.mails);
  mta_postfix_down (pfdir, wd_pf);

  daemon_start (k);
  g_assert_true (server_wait (k, "UP", 60));
}

/* ---- at rest ------------------------------------------------------------------------------ */

/* extbody rewrite --mbox in the MTA's namespace, sharing the pool's Redis
 * (the library's keys as the daemons have them): URLs the pool fetched come
 * from the shared cache, and what it fetches the pool then does not fetch
 * again. Every URL of the case is fetched once in all. */
static void
test_at_rest (void)
{
  /* the pool first: 5 URLs */
  g_autoptr (Burst) b = burst_new ();
  for (guint i = 0; i < 5; i++) {
    g_autofree char *id = g_strdup_printf ("ar-%04u", i);
    g_autofree char *path = url_path (100, "ar-%04u", i);
    burst_add (b, id, path, NULL);
  }
  burst_start (b);
  burst_join (b);
  burst_check (b);
  /* an mbox of 10: the pool's 5 URLs again, and 5 new ones */
  g_autofree char *mbox = g_build_filename (dir, "at-rest.mbox", NULL);
  GString *m = g_string_new (NULL);
  for (guint i = 0; i < 10; i++) {
    g_autofree char *id = g_strdup_printf ("rs-%04u", i);
    g_autofree char *path = url_path (100, "ar-%04u", i < 5 ? i : 10 + i);
    g_autofree char *msg = message (id, path);
    g_auto (GStrv) lines = g_strsplit (msg, "\r\n", -1);
    g_autofree char *lf = g_strjoinv ("\n", lines);
    g_string_append_printf (m, "From a@test.example Mon Dec  7 20:00:%02u 2026\n%s\n", i, lf);
  }
  g_assert_true (g_file_set_contents (mbox, m->str, (gssize) m->len, NULL));
  g_string_free (m, TRUE);
  g_autofree char *conf = g_build_filename (dir, "at-rest.conf", NULL);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = on\nallow_networks = %s/32\n"
                                           "max_requests_per_host = 100000\nredis_server = %s:%u\n"
                                           "redis_timeout = 1000\nredis_prefix = pool:\n",
                                           bridge_addr, bridge_addr, redis.port);
  g_assert_true (g_file_set_contents (conf, text, -1, NULL));
  g_autofree char *log = g_build_filename (dir, "at-rest.log", NULL);
  const char *argv[] = { g_getenv ("EXTBODY"), "rewrite", "-c", conf, "--report", "--mbox", mbox, NULL };
  guint wd = 0;
  GSubprocess *p = spawn_in (ns_mta, argv, log, &wd);
  g_assert_cmpint (reap (&p, &wd), ==, 0);
  g_autofree char *report = file_text (log);
  g_autofree char *after = file_text (mbox);
  g_test_message ("at rest: %s", report);
  /* 10 messages, 2 references each, all resolved */
  g_assert_cmpuint (count_in (report, "10 messages scanned, 20 references, 20 resolved, 10 messages changed"), ==, 1);
  g_assert_cmpuint (count_in (after, "Subject: rs-"), ==, 10);
  g_assert_cmpuint (count_in (after, "message/external-body"), ==, 0);
  g_assert_cmpuint (count_in (after, "data rs-"), ==, 10);
  /* then the pool: the rewriter's 5 new URLs */
  g_autoptr (Burst) b2 = burst_new ();
  for (guint i = 5; i < 10; i++) {
    g_autofree char *id = g_strdup_printf ("ap-%04u", i);
    g_autofree char *path = url_path (100, "ar-%04u", 10 + i);
    burst_add (b2, id, path, NULL);
  }
  burst_start (b2);
  burst_join (b2);
  burst_check (b2);
  g_autoptr (GHashTable) counts = origin_counts ();
  for (guint i = 0; i < 10; i++) {
    g_autofree char *target = url_path (100, "ar-%04u", i < 5 ? i : 10 + i);
    guint n = origin_count (counts, target);
    if (n != 1)
      g_test_message ("%s fetched %u times", target, n);
    g_assert_cmpuint (n, ==, 1);
  }
}

/* ---- the pool ------------------------------------------------------------------------------ */

static void
write_daemon_conf (guint k)
{
  Daemon *d = &daemons[k];
  g_autofree char *text = g_strdup_printf (
    "[extbody]\n"
    "fetch = on\n"
    "allow_networks = %s/32\n"
    "message_deadline = 20\n"
    "fetch_timeout = 20\n"
    /* the origin is one host: its default 60 a minute would pace the bursts */
    "max_requests_per_host = 100000\n"
    "redis_server = %s:%u\n"
    /* generous: a loaded machine must not make Redis look down when it is up */
    "redis_timeout = 1000\n"
    "redis_prefix = pool:\n"
    "http_socket = inet:%u@%s\n"
    "http_allow_networks = 198.18.0.0/15\n"
    /* every request comes from HAProxy's one address: its maxconn per
     * server (16) and the health checks; extbodyd(8), POOL */
    "http_max_peer_connections = 40\n"
    "milter_socket = inet:%u@%s\n"
    "dovecot_filter_socket =\n"
    "drain_delay = %u\n"
    "milter_stop_timeout = 20\n",
    bridge_addr, bridge_addr, redis.port, daemon_http_port, d->addr, daemon_milter_port, d->addr, DRAIN_DELAY);
  g_assert_true (g_file_set_contents (d->conf, text, -1, NULL));
  g_autofree char *check = g_strdup_printf ("'%s' -n -c '%s' 2>&1", g_getenv ("EXTBODYD"), d->conf);
  g_autofree char *out = NULL;
  if (test_sh (check, &out) != 0)
    g_error ("extbodyd -n: %s", out ? out : "");
}

/* The ports from the template's server lines, before HAProxy's own start:
 * the daemons must listen where HAProxy will look. */
static void
read_ports (void)
{
  g_autofree char *cfg = g_build_filename (dir, "haproxy-ports.cfg", NULL);
  g_autofree char *render = g_strdup_printf ("sh '%s' haproxy-cfg '%s' %s '%s' 192.0.2.1 > '%s'", net_script,
                                             haproxy_template, mta_addr, dir, cfg);
  g_assert_cmpint (test_sh (render, NULL), ==, 0);
  haproxy_read_config (cfg);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  mta_postfix_require ("EXTBODYD", "EXTBODYC", "EXTBODY", NULL);
  g_autofree char *haproxy_bin = g_find_program_in_path ("haproxy");
  if (!haproxy_bin)
    test_skip_all ("HAProxy is not installed (apt-get install haproxy)");
  g_autofree char *ip_bin = g_find_program_in_path ("ip");
  if (!ip_bin)
    test_skip_all ("ip is not installed (apt-get install iproute2)");
  if (!g_file_test (test_redis_server (), G_FILE_TEST_IS_EXECUTABLE))
    test_skip_all (g_strdup_printf ("%s is not installed (apt-get install redis-server)", test_redis_server ()));

  guint wd_dir = 0;
  dir = mta_dir_make ("pool", &wd_dir);   /* the watchdog starts here, in the root namespace */
  net_script = g_test_build_filename (G_TEST_DIST, "pool", "pool-net.sh", NULL);
  haproxy_template = g_test_build_filename (G_TEST_DIST, "..", "filters", "daemon", "haproxy.cfg", NULL);

  /* the network: what crashed runs left goes first */
  prefix = g_strdup_printf ("ebp%d", (int) getpid ());
  g_autofree char *sweep = g_strdup_printf ("sh '%s' sweep", net_script);
  test_sh (sweep, NULL);
  g_autofree char *down = g_strdup_printf ("sh '%s' down %s", net_script, prefix);
  guint wd_net = test_watchdog_add (down);
  g_autofree char *up = g_strdup_printf ("sh '%s' up %s", net_script, prefix);
  g_autofree char *n_text = NULL;
  g_assert_cmpint (test_sh (up, &n_text), ==, 0);
  net = (guint) atoi (n_text);
  g_assert_cmpuint (net, >=, 1);
  bridge_addr = g_strdup_printf ("198.18.%u.1", net);
  mta_addr = g_strdup_printf ("198.18.%u.2", net);
  ns_root = ns_open ("/proc/self/ns/net");
  g_autofree char *mta_path = g_strdup_printf ("/run/netns/%s-mta", prefix);
  ns_mta = ns_open (mta_path);
  g_autofree char *msg_dir = g_build_filename (dir, "msg", NULL);
  g_autofree char *out_dir = g_build_filename (dir, "out", NULL);
  g_assert_cmpint (g_mkdir (msg_dir, 0755), ==, 0);
  g_assert_cmpint (g_mkdir (out_dir, 0755), ==, 0);
  haproxy_sock = g_build_filename (dir, "haproxy.sock", NULL);
  haproxy_log = g_build_filename (dir, "haproxy.log", NULL);
  for (guint k = 0; k < N_DAEMONS; k++) {
    g_autofree char *path = g_strdup_printf ("/run/netns/%s-h%u", prefix, k + 1);
    daemons[k].ns = ns_open (path);
    daemons[k].addr = g_strdup_printf ("198.18.%u.%u", net, 11 + k);
    daemons[k].conf = g_strdup_printf ("%s/d%u.conf", dir, k + 1);
    daemons[k].log = g_strdup_printf ("%s/d%u.log", dir, k + 1);
  }

  /* the origin and Redis on the bridge, in the root namespace */
  g_autoptr (GError) error = NULL;
  const char *httpd_args[] = { "--bind", bridge_addr, NULL };
  /* quiet: a daemon killed mid-fetch makes it print a broken pipe */
  httpd = test_server_start ("httpd.py", httpd_args, NULL, TRUE, &error);
  g_assert_no_error (error);
  http_port = httpd->port;
  redis.port = bridge_free_port ();
  redis.conf = g_build_filename (dir, "redis.conf", NULL);
  g_autofree char *redis_text = g_strdup_printf ("port %u\nbind %s\nprotected-mode no\nsave \"\"\nappendonly no\n"
                                                 "daemonize no\ndir %s\nlogfile %s/redis.log\nloglevel notice\n",
                                                 redis.port, bridge_addr, dir, dir);
  g_assert_true (g_file_set_contents (redis.conf, redis_text, -1, NULL));
  redis_spawn ();

  /* from here on the test is the MTA's host */
  ns_enter (ns_mta);
  guint status = 0;
  g_free (http_get (bridge_addr, http_port, "/hits", &status));
  if (status != 200)
    g_error ("the MTA's namespace does not reach the origin at %s:%u over the bridge %s (is br_netfilter loaded "
             "with a FORWARD policy that drops?)", bridge_addr, http_port, prefix);

  read_ports ();
  for (guint k = 0; k < N_DAEMONS; k++)
    write_daemon_conf (k);
  for (guint k = 0; k < N_DAEMONS; k++)
    daemon_start (k);
  haproxy_start ();

  /* the answer every message must get, with its own id: one message straight
   * to d1, checked by hand */
  ref_id = g_strdup ("rf-0000");
  ref_sha = sha256_of_data (ref_id);
  {
    g_autoptr (Burst) b = burst_new ();
    g_autofree char *target = daemon_target (0);
    ref_path = url_path (0, "rf-path");
    Job *j = burst_add (b, ref_id, ref_path, target);
    job_run (j);
    g_assert_cmpint (j->status, ==, 0);
    ref_text = file_text (j->out);
    g_test_message ("the reference answer:\n%s", ref_text);
    g_assert_cmpuint (count_in (ref_text, "\r\nX-Extbody: resolved 2 of 2 external-body references\r\n"), ==, 1);
    g_assert_cmpuint (count_in (ref_text, "\r\n\r\nhello from the test server\r\n"), ==, 1);
    g_assert_cmpuint (count_in (ref_text, "\r\n\r\ndata rf-0000\r\n"), ==, 1);
    g_assert_cmpuint (count_in (ref_text, ref_sha), ==, 1);
    g_assert_cmpuint (count_in (ref_text, ref_id), ==, 3);   /* Subject, Message-ID, data: text */
    g_assert_null (strstr (ref_text, "external-body;"));
  }

  g_test_add_func ("/pool/1-spread-and-once", test_spread_and_once);
  g_test_add_func ("/pool/2-drain", test_drain);
  g_test_add_func ("/pool/3-kill", test_kill);
  g_test_add_func ("/pool/4-kill-without-balancer", test_kill_without_balancer);
  g_test_add_func ("/pool/5-valkey", test_valkey);
  g_test_add_func ("/pool/8-at-rest", test_at_rest);
  static const MilterCase shipped = { "", "ms", 2 }, tempfail = { "tempfail", "mt", 2 };
  g_test_add_data_func ("/pool/6-milter-shipped-default", &shipped, test_milter);
  g_test_add_data_func ("/pool/7-milter-tempfail", &tempfail, test_milter);
  g_test_add_func ("/pool/9-pipe-client", test_pipe_client);
  int rc = g_test_run ();

  g_subprocess_send_signal (haproxy, SIGTERM);
  reap (&haproxy, &wd_haproxy);
  /* a second SIGTERM ends a daemon's drain_delay (extbodyd(8), SIGNALS):
   * sent once its log says it drains, or the two could be one signal */
  guint draining[N_DAEMONS], ended[N_DAEMONS];
  for (guint k = 0; k < N_DAEMONS; k++)
    if (daemons[k].proc) {
      draining[k] = daemon_log_count (k, "SIGTERM: draining: ");
      ended[k] = daemon_log_count (k, "SIGTERM again: the drain ends now");
      g_subprocess_send_signal (daemons[k].proc, SIGTERM);
    }
  for (guint k = 0; k < N_DAEMONS; k++)
    if (daemons[k].proc) {
      if (!daemon_log_wait (k, "SIGTERM: draining: ", draining[k] + 1, 30))
        rc = 1;
      g_subprocess_send_signal (daemons[k].proc, SIGTERM);
    }
  for (guint k = 0; k < N_DAEMONS; k++) {
    if (!daemons[k].proc)
      continue;
    if (!daemon_log_wait (k, "SIGTERM again: the drain ends now", ended[k] + 1, 30))
      rc = 1;
    int st = daemon_reap (k);
    if (st != 0) {
      g_autofree char *log = daemon_log (k);
      g_printerr ("d%u exited %d; its log:\n%s", k + 1, st, log);
      rc = 1;
    }
  }
  redis_kill ();
  g_clear_pointer (&httpd, test_server_stop);
  ns_enter (ns_root);
  g_assert_cmpint (test_sh (down, NULL), ==, 0);
  test_watchdog_remove (wd_net);
  mta_dir_remove (dir, wd_dir);
  return rc;
}
