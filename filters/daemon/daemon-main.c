/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-main.c - extbodyd's start-up and lifecycle: options, socket, daemon, signals, stop */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sysexits.h>
#include <syslog.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib-unix.h>
#include <libmilter/mfapi.h>

#include <extbody/extbody.h>

#include "daemon-keys.h"
#include "milter-check.h"
#include "daemon.h"

EbStats *daemon_main_stats;   /* every message planned, for the summary at exit */

/* ---- main ------------------------------------------------------------------ */

/* The file of a unix socket spec ("unix:PATH", "local:PATH" or a bare
 * "/PATH"), or NULL for an inet one. */
static const char *
unix_socket_path (const char *spec)
{
  if (g_str_has_prefix (spec, "unix:"))
    return spec + 5;
  if (g_str_has_prefix (spec, "local:"))
    return spec + 6;
  return spec[0] == '/' ? spec : NULL;
}

/* libmilter removes whatever socket is at the path before it binds its own:
 * a second daemon started by mistake would take the socket of a running one
 * and leave it serving nobody. A socket that answers is in use; one that
 * refuses is stale and may go. */
static gboolean
unix_socket_in_use (const char *path)
{
  struct stat st;
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (lstat (path, &st) != 0 || !S_ISSOCK (st.st_mode) || strlen (path) >= sizeof sa.sun_path)
    return FALSE;
  memcpy (sa.sun_path, path, strlen (path) + 1);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return FALSE;
  gboolean live = connect (fd, (struct sockaddr *) &sa, sizeof sa) == 0 || errno == EAGAIN;
  close (fd);
  return live;
}

/* libmilter offers no way to set TCP_NODELAY on the sockets it accepts; on
 * Linux an accepted socket inherits it from the listening one, which is found
 * among the open descriptors. */
static void
set_nodelay_on_listener (void)
{
  for (int fd = 3; fd < 1024; fd++) {
    int type = 0, listening = 0;
    socklen_t l = sizeof type;
    if (getsockopt (fd, SOL_SOCKET, SO_TYPE, &type, &l) != 0 || type != SOCK_STREAM)
      continue;
    l = sizeof listening;
    if (getsockopt (fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l) != 0 || !listening)
      continue;
    struct sockaddr_storage ss;
    l = sizeof ss;
    if (getsockname (fd, (struct sockaddr *) &ss, &l) != 0
        || (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
      continue;
    int one = 1;
    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
}

/* The listening socket libmilter opened (it offers no way to ask for it). */
static int
find_listener (void)
{
  for (int fd = 3; fd < 1024; fd++) {
    int type = 0, listening = 0;
    socklen_t l = sizeof type;
    if (getsockopt (fd, SOL_SOCKET, SO_TYPE, &type, &l) != 0 || type != SOCK_STREAM)
      continue;
    l = sizeof listening;
    if (getsockopt (fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l) == 0 && listening)
      return fd;
  }
  return -1;
}

static int
drop_privileges (const char *user)
{
  struct passwd *pw = getpwnam (user);
  if (!pw) {
    log_line (LOG_ERR, "no such user: %s", user);
    return EX_NOUSER;
  }
  if (initgroups (pw->pw_name, pw->pw_gid) != 0 || setgid (pw->pw_gid) != 0
      || setuid (pw->pw_uid) != 0) {
    log_line (LOG_ERR, "cannot become %s: %s", user, g_strerror (errno));
    return EX_NOPERM;
  }
  return 0;
}

/* ---- signals and the lifecycle -----------------------------------------------
 *
 * libmilter's smfi_main blocks SIGHUP, SIGTERM and SIGINT and starts a thread
 * that waits for them and stops the milter on any of them (SIGHUP included):
 * the sessions it has are closed at once, messages in flight with them. So
 * smfi_main runs on a thread of its own, started with those signals blocked
 * (as is every other thread), and the process's main thread keeps them
 * unblocked with a handler that writes the signal's number into a pipe. Linux
 * hands a signal sent to the process to its main thread first when that
 * thread takes it, so libmilter's thread never sees one; the main thread
 * reads the pipe and acts:
 *
 *   SIGHUP   loads the configuration again, as at start (the file, -o,
 *            --allow-network, -p); when it loads, it is the configuration of
 *            the messages that begin from then on, and messages in flight
 *            finish with theirs; when it does not, the old one stays.
 *   SIGTERM, SIGINT
 *            stop taking connections: libmilter's listening descriptor is
 *            replaced by a listening socket nobody knows the address of, and a
 *            unix socket's file is removed. Messages in flight finish (at most
 *            milter_stop_timeout); a new message on a connection already open
 *            is refused with a temporary failure. Then smfi_stop, the PID file
 *            is removed, and the exit status is 0. A second SIGTERM or SIGINT
 *            stops without waiting further. */
static int sig_pipe[2] = { -1, -1 };
#define SIG_MILTER_ENDED 0xff   /* written when smfi_main returns */

static void
on_signal (int sig)
{
  int saved = errno;
  unsigned char b = (unsigned char) sig;
  if (write (sig_pipe[1], &b, 1) < 0) {
    /* the pipe is full: the signals already in it are read first */
  }
  errno = saved;
}

static void
signals_block (sigset_t *old)
{
  sigset_t set;
  sigemptyset (&set);
  sigaddset (&set, SIGTERM);
  sigaddset (&set, SIGINT);
  sigaddset (&set, SIGHUP);
  pthread_sigmask (SIG_BLOCK, &set, old);
}

/* A thread that never takes SIGHUP, SIGTERM or SIGINT. */
static GThread *
thread_new_blocked (const char *name, GThreadFunc func, gpointer data)
{
  sigset_t old;
  signals_block (&old);
  GThread *t = g_thread_new (name, func, data);
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  return t;
}

static gboolean
signals_install (void)
{
  if (!g_unix_open_pipe (sig_pipe, FD_CLOEXEC, NULL))
    return FALSE;
  fcntl (sig_pipe[1], F_SETFL, fcntl (sig_pipe[1], F_GETFL) | O_NONBLOCK);
  /* SA_NODEFER: the main thread never blocks them, not even in the handler
   * (reentrant: one write), so a second signal in that instant is not
   * libmilter's thread's to take (milter_run) */
  struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART | SA_NODEFER };
  sigemptyset (&sa.sa_mask);
  sigaction (SIGHUP, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGINT, &sa, NULL);
  return TRUE;
}

/* The next byte from the signal pipe, waiting at most @timeout_ms (-1:
 * forever). Returns: the signal (or SIG_MILTER_ENDED), 0 on time-out. */
static int
signal_next (int timeout_ms)
{
  for (;;) {
    struct pollfd p = { .fd = sig_pipe[0], .events = POLLIN };
    int r = poll (&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return 0;
    unsigned char b;
    ssize_t n = read (sig_pipe[0], &b, 1);
    if (n == 1)
      return b;
    if (n < 0 && errno != EINTR && errno != EAGAIN)
      return 0;
  }
}

static int milter_result = MI_SUCCESS;
/* the milter's door is off: its socket's directory does not exist
 * (daemon_listen_dir_missing), so libmilter is not started at all */
static gboolean milter_off;

/* libmilter's smfi_main starts a thread of its own that waits for SIGHUP,
 * SIGTERM and SIGINT by sigwait () and closes libmilter's door on any of
 * them: a reload or a stop taken there would end the milter's door at once,
 * unasked, with its messages and the other doors cut off (seen: a SIGTERM
 * that comes while that thread starts goes to it one time in twenty). Those
 * three signals are the main thread's alone (run_wait: the reload, the
 * graceful stop), so this sigwait, which the daemon's own symbols put in
 * place of the C library's for libmilter, never takes them: a wait for
 * nothing else lasts as long as the process; a wait for others waits for
 * those others only. */
int
sigwait (const sigset_t *set, int *sig)
{
  sigset_t rest = *set;
  sigdelset (&rest, SIGHUP);
  sigdelset (&rest, SIGTERM);
  sigdelset (&rest, SIGINT);
  if (sigisemptyset (&rest))
    for (;;)
      pause ();
  for (;;) {
    int s = sigwaitinfo (&rest, NULL);
    if (s > 0) {
      *sig = s;
      return 0;
    }
    if (errno != EINTR)
      return errno;
  }
}

static gpointer
milter_run (gpointer data)
{
  milter_result = smfi_main ();
  unsigned char b = SIG_MILTER_ENDED;
  if (write (sig_pipe[1], &b, 1) < 0) {
    /* the pipe is full: the main thread is reading it */
  }
  return NULL;
}

static gpointer
stop_run (gpointer data)
{
  smfi_stop ();
  return NULL;
}

static void
listener_replace (int lfd)
{
  struct sockaddr_storage ss;
  socklen_t l = sizeof ss;
  if (getsockname (lfd, (struct sockaddr *) &ss, &l) != 0)
    return;
  int fd = socket (ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return;
  gboolean bound = FALSE;
  if (ss.ss_family == AF_INET) {
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    bound = bind (fd, (struct sockaddr *) &a, sizeof a) == 0;
  } else if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = in6addr_loopback };
    bound = bind (fd, (struct sockaddr *) &a, sizeof a) == 0;
  } else if (ss.ss_family == AF_UNIX) {
    /* Linux: an abstract address of the kernel's choosing */
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    bound = bind (fd, (struct sockaddr *) &a, sizeof (sa_family_t)) == 0;
  }
  int keep = fcntl (lfd, F_DUPFD_CLOEXEC, 3);
  if (!bound || keep < 0 || listen (fd, 16) != 0 || dup3 (fd, lfd, O_CLOEXEC) < 0) {
    log_line (LOG_WARNING, "cannot stop listening (%s): new messages are refused", g_strerror (errno));
    close (fd);
    if (keep >= 0)
      close (keep);
    return;
  }
  close (fd);
  g_mutex_lock (&milter_worker_kick_addr_lock);
  struct sockaddr_storage old = milter_worker_kick_addr;
  socklen_t old_len = milter_worker_kick_addr_len;
  g_mutex_unlock (&milter_worker_kick_addr_lock);
  milter_worker_kick_set_address (lfd);
  milter_worker_kick_once ();
  milter_worker_kick_to (&old, old_len);
  close (keep);
}

/* Take no connection any more while libmilter serves the sessions it has:
 * its listening descriptor becomes (dup3) a listening socket on an address
 * nobody is told, non-blocking so that a wake-up left over from the old one
 * finds nothing to accept and libmilter carries on; the kicks go there from
 * then on. A wait for a connection that libmilter is in when the descriptor
 * changes stays on the old socket (Linux does not wake it when that socket
 * goes, and it would not wake for the new one before its 5 s are up): the
 * new socket is given a connection first, then the old one, still kept open
 * here, so that the wait ends and finds the new one ready. A unix socket's
 * file is removed when it is still the one bound at start. */
static void
listener_retire (Life *life)
{
  if (life->lfd >= 0)
    listener_replace (life->lfd);
  struct stat st;
  if (life->upath && lstat (life->upath, &st) == 0 && st.st_dev == life->sock_st.st_dev
      && st.st_ino == life->sock_st.st_ino && unlink (life->upath) != 0)
    log_line (LOG_WARNING, "cannot remove %s: %s", life->upath, g_strerror (errno));
}

static const char *
plural (guint n)
{
  return n == 1 ? "" : "s";
}

/* every door but the milter's: a new door is its file and a row here */
const DaemonDoor *const daemon_main_doors[] = { &daemon_http_door, &daemon_dovecot_door, NULL };

/* The work in flight on the doors. */
static guint
doors_in_flight (void)
{
  guint n = 0;
  for (const DaemonDoor *const *d = daemon_main_doors; *d; d++)
    n += (*d)->in_flight ();
  return n;
}

/* End every door (nothing for one already ended, or never opened). */
static void
doors_stop (void)
{
  for (const DaemonDoor *const *d = daemon_main_doors; *d; d++)
    (*d)->stop ();
}

/* The graceful stop, from the signal @signame to the end of smfi_main.
 * Returns: the exit status. */
static int
stop (Life *life, const char *signame)
{
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (Gen) gen = daemon_generation_get ();
  gint64 deadline = t0 + (gint64) gen->keys.milter_stop_timeout * G_USEC_PER_SEC;
  g_atomic_int_set (&milter_session_stopping, 1);
  guint n = (guint) g_atomic_int_get (&milter_session_in_flight);
  log_line (LOG_INFO, "%s: stopping: %u message%s in flight", signame, n, plural (n));
  for (const DaemonDoor *const *d = daemon_main_doors; *d; d++) {
    guint nd = (*d)->in_flight ();
    if (nd)
      log_line (LOG_INFO, "%s: stopping: %u %s%s in flight", signame, nd, (*d)->in_flight_what, plural (nd));
  }
  listener_retire (life);
  for (const DaemonDoor *const *d = daemon_main_doors; *d; d++)
    (*d)->quiesce ();
  gboolean milter_ended = FALSE, hurry = FALSE;
  while (!milter_ended && !hurry && (g_atomic_int_get (&milter_session_in_flight) > 0 || doors_in_flight () > 0)) {
    gint64 left = (deadline - g_get_monotonic_time ()) / 1000;
    if (left <= 0)
      break;
    int sig = signal_next ((int) MIN (left, 50));
    if (sig == SIG_MILTER_ENDED)
      milter_ended = TRUE;
    else if (sig == SIGTERM || sig == SIGINT) {
      n = (guint) g_atomic_int_get (&milter_session_in_flight);
      log_line (LOG_INFO, "%s again: stopping now: %u message%s in flight cut off",
                sig == SIGTERM ? "SIGTERM" : "SIGINT", n, plural (n));
      hurry = TRUE;
    } else if (sig == SIGHUP)
      log_line (LOG_INFO, "SIGHUP: stopping: the configuration is not reloaded");
  }
  n = (guint) g_atomic_int_get (&milter_session_in_flight);
  if (n && !hurry && !milter_ended)
    log_line (LOG_WARNING, "stopping: %u message%s still in flight after milter_stop_timeout (%u s) cut off",
              n, plural (n), (guint) gen->keys.milter_stop_timeout);
  for (const DaemonDoor *const *d = daemon_main_doors; *d; d++) {
    guint nd = (*d)->in_flight ();
    if (nd && !hurry && !milter_ended)
      log_line (LOG_WARNING, "stopping: %u %s%s still in flight after milter_stop_timeout (%u s) cut off", nd,
                (*d)->in_flight_what, plural (nd), (guint) gen->keys.milter_stop_timeout);
  }
  doors_stop ();
  if (!milter_ended && !milter_off) {
    /* libmilter's listener notices the stop when its wait for a connection
     * ends: a kick ends it */
    GThread *t = thread_new_blocked ("stop", stop_run, NULL);
    for (;;) {
      milter_worker_kick_once ();
      int sig = signal_next (20);
      if (sig == SIG_MILTER_ENDED)
        break;
      if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
        log_line (LOG_INFO, "%s: stopping already", sig == SIGHUP ? "SIGHUP" : sig == SIGTERM ? "SIGTERM" : "SIGINT");
    }
    g_thread_join (t);
  }
  if (life->pidfile && unlink (life->pidfile) != 0 && errno != ENOENT)
    log_line (LOG_WARNING, "cannot remove %s: %s", life->pidfile, g_strerror (errno));
  guint refused = (guint) g_atomic_int_get (&milter_session_refused);
  log_line (LOG_INFO, "stopped in %.1f s, %u new message%s refused with a temporary failure meanwhile",
            (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC, refused, plural (refused));
  return 0;
}

/* ---- metrics_file ------------------------------------------------------------
 *
 * The lifetime counters, written in the Prometheus text format to the
 * metrics_file of the configuration in force (a reload may change it): at
 * start, every metrics_interval seconds from the main thread's wait for
 * signals, and at exit. A failure is logged once until the next success or a
 * different failure, so a read-only directory does not fill the log. */
static char *metrics_failure;

static void
metrics_write (void)
{
  g_autoptr (Gen) gen = daemon_generation_get ();
  const char *path = gen->keys.metrics_file;
  if (!path || !*path)
    return;
  g_autoptr (GError) error = NULL;
  if (eb_metrics_write_prometheus (daemon_main_stats, path, &error)) {
    if (metrics_failure)
      log_line (LOG_INFO, "metrics_file %s written again", path);
    g_clear_pointer (&metrics_failure, g_free);
    return;
  }
  if (g_strcmp0 (metrics_failure, error->message) != 0)
    log_line (LOG_WARNING, "cannot write metrics_file: %s", error->message);
  g_free (metrics_failure);
  metrics_failure = g_strdup (error->message);
}

/* Milliseconds until the next write of metrics_file is due after @last (a
 * monotonic time), 0 when it is due now; -1: no metrics_file. */
static int
metrics_wait (gint64 last)
{
  g_autoptr (Gen) gen = daemon_generation_get ();
  const char *path = gen->keys.metrics_file;
  if (!path || !*path)
    return -1;
  gint64 due = last + (gint64) gen->keys.metrics_interval * G_USEC_PER_SEC;
  gint64 ms = (due - g_get_monotonic_time () + 999) / 1000;
  return (int) CLAMP (ms, 0, G_MAXINT);
}

/* The command line, and what run keeps for the lifetime (Life points into
 * its strings). */
typedef struct {
  char     *config, *socket, *user, *pidfile, *check_mta;
  gint      check_timeout;
  GStrv     set, allow;
  gboolean  daemon, version, no_nodelay, check, if_installed;
  char     *upath_abs;     /* Life.upath */
  char     *pidfile_abs;   /* Life.pidfile */
} Opts;

static void
opts_clear (Opts *o)
{
  g_free (o->config);
  g_free (o->socket);
  g_free (o->user);
  g_free (o->pidfile);
  g_free (o->check_mta);
  g_strfreev (o->set);
  g_strfreev (o->allow);
  g_free (o->upath_abs);
  g_free (o->pidfile_abs);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Opts, opts_clear)

/* Parse the command line into @o. Returns: -1 to go on, else the exit status
 * (--version answered, or a usage error). */
static int
run_parse_options (Opts *o, int argc, char **argv)
{
  GOptionEntry entries[] = {
    { "socket", 'p', 0, G_OPTION_ARG_STRING, &o->socket,
      "Socket: unix:PATH, inet:PORT@ADDRESS, inet6:PORT@ADDRESS (default: milter_socket)", "SPEC" },
    { "config", 'c', 0, G_OPTION_ARG_FILENAME, &o->config,
      "Configuration file (default " EB_CONFIG_DEFAULT_PATH "; absent is fine)", "FILE" },
    { "set", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &o->set, "Override a configuration key", "KEY=VALUE" },
    { "allow-network", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->allow, "Add a CIDR block to allow_networks", "CIDR" },
    { "user", 'u', 0, G_OPTION_ARG_STRING, &o->user, "Run as USER once the socket is bound", "USER" },
    { "daemon", 'd', 0, G_OPTION_ARG_NONE, &o->daemon, "Detach and log to syslog (default: foreground, stderr)", NULL },
    { "pidfile", 'P', 0, G_OPTION_ARG_FILENAME, &o->pidfile, "Write the PID here (removed at stop)", "FILE" },
    { "version", 'V', 0, G_OPTION_ARG_NONE, &o->version, "Show the version", NULL },
    { "check", 'n', 0, G_OPTION_ARG_NONE, &o->check,
      "Check the configuration (file, -o, --allow-network, -p) as the daemon reads it and exit: nothing printed when valid, one line naming the key and exit 78 when not", NULL },
    { "check-mta", 0, 0, G_OPTION_ARG_STRING, &o->check_mta,
      "Check that USER (the mail server's: postfix) reaches the daemon: connect to the configured socket as USER and negotiate the milter protocol; one line, OK or what is wrong (run as root)", "USER" },
    { "if-installed", 0, 0, G_OPTION_ARG_NONE, &o->if_installed,
      "With --check-mta: when USER does not exist (the mail server is not installed), say so and exit 0 (the unit's check after every start)", NULL },
    { "check-timeout", 0, 0, G_OPTION_ARG_INT, &o->check_timeout,
      "How long --check-mta waits for the socket to appear and answer (default 10)", "SECONDS" },
    { "no-nodelay", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &o->no_nodelay,
      "Leave Nagle's algorithm on for TCP (to measure what TCP_NODELAY saves)", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("");
  g_option_context_set_summary (ctx, "The extbody daemon: resolve message/external-body references in mail, as a milter\n"
                                     "for Postfix and Sendmail (milter_socket), over HTTP for extbodyc: Exim, Postfix's\n"
                                     "pipe, scripts (http_socket), and for Dovecot's Sieve filter (dovecot_filter_socket);\n"
                                     "with milter_mode = externalize, store the large parts of outgoing mail\n"
                                     "(externalize_store) and replace them with references instead.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    fprintf (stderr, "extbodyd: %s (try --help)\n", error->message);
    return EX_USAGE;
  }
  if (o->version) {
    g_autofree char *libs = eb_get_library_versions ();
    unsigned int mmaj = 0, mmin = 0, mpl = 0;
    smfi_version (&mmaj, &mmin, &mpl);
    printf ("extbodyd %s (libextbody %s, %s, libmilter %u.%u.%u)\n", EXTBODY_VERSION,
            eb_get_version_string (), libs, mmaj, mmin, mpl);
    return 0;
  }
  if (argc > 1) {
    fprintf (stderr, "extbodyd: unexpected argument \"%s\" (try --help)\n", argv[1]);
    return EX_USAGE;
  }
  return -1;
}

/* libmilter's part of run_open_socket: the milter's socket @sock (@upath when
 * a unix one), opened with the mode milter_umask gives. Returns: 0 or the
 * exit status. */
static int
run_open_milter (Life *life, Opts *o, const Gen *gen, const char *sock, const char *upath)
{
  if (smfi_setconn ((char *) sock) != MI_SUCCESS || smfi_register (milter_session_desc) != MI_SUCCESS) {
    fprintf (stderr, "extbodyd: cannot use socket %s\n", sock);
    return EX_USAGE;
  }
  struct stat st;
  if (upath && lstat (upath, &st) == 0 && !S_ISSOCK (st.st_mode)) {
    fprintf (stderr, "extbodyd: %s exists and is not a socket (left alone)\n", upath);
    return EX_UNAVAILABLE;
  }
  if (upath && unix_socket_in_use (upath)) {
    fprintf (stderr, "extbodyd: socket %s is in use by a running daemon\n", upath);
    return EX_UNAVAILABLE;
  }
  /* the socket's mode is 0777 less milter_umask: 0770 by default, for the
   * daemon's user and group (the MTA's user joins that group) */
  mode_t mask = (mode_t) g_ascii_strtoull (gen->keys.milter_umask, NULL, 8);
  mode_t old = umask (mask & 0777);
  int r = smfi_opensocket (TRUE);   /* removes a stale unix socket first */
  umask (old);
  if (r != MI_SUCCESS) {
    fprintf (stderr, "extbodyd: cannot open socket %s: %s\n", sock, g_strerror (errno));
    return EX_UNAVAILABLE;
  }
  if (upath && lstat (upath, &life->sock_st) == 0) {
    /* a relative path is removed at stop from where it was made (the
     * daemon changes to / when it detaches) */
    g_autofree char *cwd = g_get_current_dir ();
    o->upath_abs = g_canonicalize_filename (upath, cwd);
    life->upath = o->upath_abs;
  }
  if (!o->no_nodelay)
    set_nodelay_on_listener ();
  life->lfd = find_listener ();
  if (life->lfd >= 0)
    milter_worker_kick_set_address (life->lfd);
  return 0;
}

/* Open the doors: the milter's through libmilter (the mode from
 * milter_umask), recording in @life what is to be removed at stop, and the
 * HTTP and Dovecot listeners; a door whose unix socket's directory does not
 * exist is off with a line, and with none open the daemon does not start.
 * Returns: 0 or the exit status. */
static int
run_open_socket (Life *life, Opts *o, const Gen *gen)
{
  const char *sock = gen->keys.milter_socket;
  const char *upath = unix_socket_path (sock);
  milter_off = upath && daemon_listen_dir_missing ("milter_socket", upath);
  int status = milter_off ? 0 : run_open_milter (life, o, gen, sock, upath);
  if (status)
    return status;
  g_autoptr (GError) error = NULL;
  gboolean any_open = !milter_off;
  for (const DaemonDoor *const *d = daemon_main_doors; *d; d++) {
    if (!(*d)->open (gen, o->user, &error)) {
      fprintf (stderr, "extbodyd: %s\n", error->message);
      return EX_UNAVAILABLE;
    }
    any_open |= (*d)->is_open ();
  }
  if (!any_open) {
    fprintf (stderr, "extbodyd: no door is open (the lines above say why): nothing to serve\n");
    return EX_UNAVAILABLE;
  }
  if (o->user) {
    struct passwd *pw = getpwnam (o->user);
    if (pw && upath && !milter_off && chown (upath, pw->pw_uid, pw->pw_gid) != 0)
      fprintf (stderr, "extbodyd: cannot chown %s: %s\n", upath, g_strerror (errno));
    return drop_privileges (o->user);
  }
  if (geteuid () == 0)
    log_line (LOG_WARNING, "running as root: no -u USER was given (the unit runs the daemon as extbody; by hand, "
              "give -u extbody)");
  return 0;
}


/* Detach (--daemon) and write the pidfile. Returns: 0 or the exit status. */
static int
run_detach (Life *life, Opts *o)
{
  if (o->daemon) {
    if (daemon (0, 0) != 0) {
      fprintf (stderr, "extbodyd: cannot detach: %s\n", g_strerror (errno));
      return EX_OSERR;
    }
    eb_log_init ("extbodyd", EB_LOG_SYSLOG);
  }
  if (o->pidfile) {
    /* written after detaching, removed at stop (from / when detached) */
    g_autoptr (GError) error = NULL;
    g_autofree char *pid = g_strdup_printf ("%ld\n", (long) getpid ());
    if (!g_file_set_contents (o->pidfile, pid, -1, &error))
      log_line (LOG_ERR, "cannot write %s: %s", o->pidfile, error->message);
    else
      life->pidfile = o->pidfile_abs = g_canonicalize_filename (o->pidfile, NULL);
  }
  return 0;
}

/* drain_delay: told to stop, the daemon first goes on serving every door for
 * that long while GET /healthz answers 503, so that a load balancer takes
 * it out of its pool before its doors close. A second SIGTERM or SIGINT
 * ends the wait. Returns: 0, or SIG_MILTER_ENDED when libmilter stopped
 * meanwhile. */
static int
drain (const char *signame)
{
  g_autoptr (Gen) gen = daemon_generation_get ();
  daemon_generation_set_draining ();
  if (!gen->keys.drain_delay)
    return 0;
  log_line (LOG_INFO, "%s: draining: serving %u s more (drain_delay) while /healthz answers 503", signame,
            (guint) gen->keys.drain_delay);
  gint64 deadline = g_get_monotonic_time () + (gint64) gen->keys.drain_delay * G_USEC_PER_SEC;
  for (;;) {
    gint64 left = (deadline - g_get_monotonic_time ()) / 1000;
    if (left <= 0)
      return 0;
    int sig = signal_next ((int) MIN (left, 1000));
    if (sig == SIG_MILTER_ENDED)
      return sig;
    if (sig == SIGTERM || sig == SIGINT) {
      log_line (LOG_INFO, "%s again: the drain ends now", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      return 0;
    }
    if (sig == SIGHUP)
      log_line (LOG_INFO, "SIGHUP: draining: the configuration is not reloaded");
  }
}

/* The main thread's wait for signals (and metrics_file's writes) until the
 * stop. Returns: the exit status. */
static int
run_wait (Life *life)
{
  int exit_status = 0;
  metrics_write ();
  gint64 metrics_last = g_get_monotonic_time ();
  for (;;) {
    int wait = metrics_wait (metrics_last);
    int sig = wait == 0 ? 0 : signal_next (wait);
    if (sig == 0) {
      if (metrics_wait (metrics_last) == 0) {
        metrics_write ();
        metrics_last = g_get_monotonic_time ();
      }
    } else if (sig == SIGHUP) {
      daemon_generation_reload (life, "SIGHUP");
    } else if (sig == SIGTERM || sig == SIGINT) {
      const char *name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
      sig = drain (name);
      if (sig != SIG_MILTER_ENDED) {
        exit_status = stop (life, name);
        break;
      }
    }
    if (sig == SIG_MILTER_ENDED) {
      /* libmilter stopped on its own: an error, or a signal its thread took */
      log_line (LOG_ERR, "libmilter stopped (%s): exiting", milter_result == MI_SUCCESS ? "no error" : "an error");
      exit_status = EX_SOFTWARE;
      break;
    }
  }
  return exit_status;
}

/* Serve: the signals, the kick and libmilter's threads, the wait, and the
 * summary at exit. Returns: the exit status. */
static int
run_serve (Life *life, const Gen *first)
{
  const char *sock = first->keys.milter_socket;
  if (first->store)
    eb_log_start ("socket", sock, "mode", "externalize", NULL);
  else
    eb_log_start ("socket", sock, "fetch", first->keys.fetch ? "on" : "off", NULL);
  /* from here on, only this thread takes SIGHUP, SIGTERM and SIGINT */
  sigset_t unblocked;
  signals_block (&unblocked);
  daemon_main_stats = eb_stats_new ();
  g_autoptr (GError) error = NULL;
  for (const DaemonDoor *const *d = daemon_main_doors; *d; d++)
    if (!(*d)->start (first, &error)) {
      pthread_sigmask (SIG_SETMASK, &unblocked, NULL);
      log_line (LOG_ERR, "%s", error->message);
      return EX_UNAVAILABLE;
    }
  if (milter_worker_kick_addr_len)
    milter_worker_kick_thread = g_thread_new ("kick", milter_worker_kick_run, NULL);
  else if (!milter_off)
    log_line (LOG_WARNING, "cannot find the listening socket: a fetch that waits may hold up other sessions");
  GThread *milter = milter_off ? NULL : g_thread_new ("milter", milter_run, NULL);
  pthread_sigmask (SIG_SETMASK, &unblocked, NULL);

  int exit_status = run_wait (life);
  doors_stop ();   /* already stopped, unless libmilter ended on its own */
  if (milter)
    g_thread_join (milter);
  /* a stop that came before smfi_main had opened its listener makes it
   * bind the path anew on its way out (after listener_retire removed the
   * file): a socket there that nobody answers is removed */
  struct stat st;
  if (life->upath && lstat (life->upath, &st) == 0 && S_ISSOCK (st.st_mode) && !unix_socket_in_use (life->upath)
      && unlink (life->upath) != 0 && errno != ENOENT)
    log_line (LOG_WARNING, "cannot remove %s: %s", life->upath, g_strerror (errno));
  metrics_write ();
  g_clear_pointer (&metrics_failure, g_free);
  {
    g_autofree char *summary = eb_stats_format_summary (daemon_main_stats, FALSE);
    log_line (LOG_INFO, "exiting: %s", summary);
  }
  if (milter_worker_kick_thread) {
    g_mutex_lock (&milter_worker_kick_lock);
    milter_worker_kick_stop = TRUE;
    g_cond_signal (&milter_worker_kick_cond);
    g_mutex_unlock (&milter_worker_kick_lock);
    g_thread_join (milter_worker_kick_thread);
  }
  return exit_status;
}

/* main without the globals' release, so that every return leaves nothing
 * behind (LeakSanitizer runs over the daemon in the tests) */
static int
run (int argc, char **argv)
{
  g_auto (Opts) o = { .check_timeout = 10 };
  /* the keys only the daemon reads, beside the library's */
  g_autoptr (GError) keys_error = NULL;
  if (!daemon_keys_register (&keys_error)) {
    fprintf (stderr, "extbodyd: %s\n", keys_error->message);
    return EX_SOFTWARE;
  }
  int status = run_parse_options (&o, argc, argv);
  if (status >= 0)
    return status;

  Life life = {
    .args = { o.config, (const char *const *) o.set, (const char *const *) o.allow, o.socket },
    .lfd = -1,
  };
  eb_init ();   /* GMime and libcurl: before any thread */
  eb_log_init ("extbodyd", EB_LOG_STDERR);
  g_autoptr (GError) error = NULL;
  status = 0;
  Gen *first = daemon_generation_load (&life.args, &status, &error);
  if (!first) {
    fprintf (stderr, "extbodyd: %s\n", error->message);
    return status;
  }
  daemon_generation_install (first);
  if (o.check_mta) {
    if (o.check_timeout < 0 || o.check_timeout > 3600) {
      fprintf (stderr, "extbodyd: --check-timeout: %d is not from 0 to 3600 seconds\n", o.check_timeout);
      return EX_USAGE;
    }
    return milter_check_mta (first->keys.milter_socket, o.check_mta,
                             (guint) o.check_timeout, o.if_installed);
  }
  if (o.check)
    return 0;
  /* the signals are written to the pipe from before the first socket is
   * bound: a stop or a reload that comes while the daemon starts is taken
   * once it serves (run_wait), never the default action's death that
   * leaves the sockets behind */
  signal (SIGPIPE, SIG_IGN);
  if (!signals_install ()) {
    fprintf (stderr, "extbodyd: cannot make a pipe for the signals: %s\n", g_strerror (errno));
    return EX_OSERR;
  }
  /* first stays in force (held by gen_current) until the end of main */
  if ((status = run_open_socket (&life, &o, first)) != 0)
    return status;
  if ((status = run_detach (&life, &o)) != 0)
    return status;
  return run_serve (&life, first);
}

int
main (int argc, char **argv)
{
  int status = run (argc, argv);
  /* a start that failed past a door's open leaves no socket behind */
  doors_stop ();
  /* a message cut off at the stop may still hold the configuration */
  if (g_atomic_int_get (&milter_session_in_flight) == 0)
    daemon_generation_install (NULL);
  g_clear_pointer (&daemon_main_stats, eb_stats_free);
  return status;
}
