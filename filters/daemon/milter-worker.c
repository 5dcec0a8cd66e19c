/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* milter-worker.c - the worker kick: callbacks that wait on fetches and rewrites */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gio/gio.h>

#include <extbody/extbody.h>

#include "daemon.h"

/* ---- blocking callbacks and libmilter's worker pool ----------------------------
 *
 * Debian's libmilter runs callbacks on a pool of worker threads
 * (_FFR_WORKERS_POOL, two at the start). A session with a command to read is
 * handed to an idle worker by a signal, and a new worker is started only when
 * no worker is idle; the count of idle workers drops only once a signalled
 * worker wakes up. When several sessions become ready at once, they are all
 * handed to the one idle worker: the rest wait, marked ready, until some worker
 * finishes its callback. While end-of-message callbacks wait on slow URLs (up
 * to message_deadline), messages were answered two at a time and new
 * connections were not even negotiated with.
 *
 * The remedy is to let the pool start a worker whenever a callback waits: while
 * one does, a thread of ours connects to the daemon's own listening socket every
 * KICK_INTERVAL_MS and closes the connection at once. With no worker idle,
 * libmilter starts one for that connection; it finds the end of the stream, and
 * then serves every session that was left waiting, as workers do. A kick when
 * a worker is idle costs that worker a read of the end of a stream. */
#define KICK_INTERVAL_MS 20

GMutex   milter_worker_kick_lock;
GCond    milter_worker_kick_cond;
static guint    kick_waiting;     /* callbacks waiting on a rewrite */
gboolean milter_worker_kick_stop;
GThread *milter_worker_kick_thread;
GMutex   milter_worker_kick_addr_lock;   /* the address changes when the daemon stops */
struct sockaddr_storage milter_worker_kick_addr;
socklen_t milter_worker_kick_addr_len;   /* 0: no address to kick */
static guint64  kick_count;       /* connections made, for the log */

/* Connect to @addr and close the connection at once. */
void
milter_worker_kick_to (const struct sockaddr_storage *addr, socklen_t addr_len)
{
  if (!addr_len)
    return;
  int fd = socket (addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return;
  if (connect (fd, (const struct sockaddr *) addr, addr_len) != 0 && errno == EINPROGRESS) {
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    poll (&p, 1, 100);
  }
  close (fd);
}

void
milter_worker_kick_once (void)
{
  g_mutex_lock (&milter_worker_kick_addr_lock);
  struct sockaddr_storage addr = milter_worker_kick_addr;
  socklen_t addr_len = milter_worker_kick_addr_len;
  g_mutex_unlock (&milter_worker_kick_addr_lock);
  milter_worker_kick_to (&addr, addr_len);
  kick_count++;
}

gpointer
milter_worker_kick_run (gpointer data)
{
  g_mutex_lock (&milter_worker_kick_lock);
  while (!milter_worker_kick_stop) {
    if (kick_waiting == 0) {
      g_cond_wait (&milter_worker_kick_cond, &milter_worker_kick_lock);
      continue;
    }
    g_mutex_unlock (&milter_worker_kick_lock);
    milter_worker_kick_once ();
    g_usleep (KICK_INTERVAL_MS * 1000);
    g_mutex_lock (&milter_worker_kick_lock);
  }
  g_mutex_unlock (&milter_worker_kick_lock);
  return NULL;
}

static void
kick_enter (void)
{
  g_mutex_lock (&milter_worker_kick_lock);
  if (kick_waiting++ == 0)
    g_cond_signal (&milter_worker_kick_cond);
  g_mutex_unlock (&milter_worker_kick_lock);
}

static void
kick_leave (void)
{
  g_mutex_lock (&milter_worker_kick_lock);
  kick_waiting--;
  g_mutex_unlock (&milter_worker_kick_lock);
}

/* The address of the daemon's own listening socket (@fd), as a client
 * connects to it: a wildcard address becomes the loopback one, a relative
 * unix path an absolute one (the daemon changes to / when it detaches); an
 * abstract unix address is taken as it is. */
void
milter_worker_kick_set_address (int fd)
{
  struct sockaddr_storage ss;
  socklen_t l = sizeof ss;
  if (getsockname (fd, (struct sockaddr *) &ss, &l) != 0)
    return;
  if (ss.ss_family == AF_INET) {
    struct sockaddr_in *in = (struct sockaddr_in *) &ss;
    if (in->sin_addr.s_addr == htonl (INADDR_ANY))
      in->sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  } else if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;
    if (IN6_IS_ADDR_UNSPECIFIED (&in6->sin6_addr))
      in6->sin6_addr = in6addr_loopback;
  } else if (ss.ss_family == AF_UNIX) {
    struct sockaddr_un *un = (struct sockaddr_un *) &ss;
    if (l <= offsetof (struct sockaddr_un, sun_path))
      return;
    if (un->sun_path[0] == '\0') {
      /* abstract: as it is, length included */
    } else if (un->sun_path[0] != '/') {
      g_autofree char *cwd = g_get_current_dir ();
      g_autofree char *abs = g_build_filename (cwd, un->sun_path, NULL);
      if (strlen (abs) >= sizeof un->sun_path)
        return;
      memcpy (un->sun_path, abs, strlen (abs) + 1);
      l = sizeof *un;
    } else {
      l = sizeof *un;
    }
  } else {
    return;
  }
  g_mutex_lock (&milter_worker_kick_addr_lock);
  milter_worker_kick_addr = ss;
  milter_worker_kick_addr_len = l;
  g_mutex_unlock (&milter_worker_kick_addr_lock);
}

typedef struct {
  SMFICTX *ctx;
  gint     cancelled;   /* the MTA is gone: the fetches stop */
} Waiting;

/* About once a second while fetches run: tell the MTA the message is being
 * worked on (its timeout restarts); when that cannot be written, the MTA has
 * closed the connection and the fetches are cancelled. */
static void
progress_cb (gpointer data)
{
  Waiting *w = data;
  if (smfi_progress (w->ctx) != MI_SUCCESS)
    g_atomic_int_set (&w->cancelled, 1);
}

/* The MTA's queue id, for the log line. */
static char *
queue_id_cb (gpointer data)
{
  Waiting *w = data;
  return g_strdup (smfi_getsymval (w->ctx, "i"));
}

/* After the fetches: the MTA gone leaves nobody to answer. */
static gboolean
gone_cb (gpointer data)
{
  Waiting *w = data;
  return g_atomic_int_get (&w->cancelled) != 0;
}

/* Plan the message (a message in transit whose body alone is written,
 * daemon-job.c: milter_mode = externalize takes its parts to the store, a
 * failure leaving the part as it was; either way the library removes the
 * trace fields the message came with, this site's sealed record staying,
 * and gives the header edits and whether the X-Extbody field is due) and,
 * when something was resolved, write its new body to *@out: memory, or an
 * unlinked temporary file (*@out_fd, else -1; sent from its mapping) when
 * the message was spilled or the data resolved into it passes
 * milter_spill_size, so that memory follows neither. Counted and logged.
 * The fetches are cancelled when the MTA closes the connection: FALSE, with
 * G_IO_ERROR_CANCELLED. */
gboolean
milter_worker_rewrite (SMFICTX *ctx, const Gen *gen, const Msg *m, const char *buf, gsize len,
                       GOutputStream **out, int *out_fd, EbPlan **result, GError **error)
{
  Waiting w = { ctx, 0 };
  DaemonJob job = { .gen = gen, .profile = EB_PROFILE_TRANSIT_BODY, .externalize = gen->store != NULL,
                    .buf = buf, .len = len, .spooled = m->spool.fd >= 0, .queue_id = queue_id_cb,
                    .progress = progress_cb, .progress_data = &w, .cancelled = &w.cancelled, .gone = gone_cb };
  DaemonJobOutput o;
  kick_enter ();
  gboolean ok = daemon_job_run (&job, &o, error);
  kick_leave ();
  if (!ok) {
    daemon_job_output_clear (&o);
    if (g_error_matches (*error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
      g_clear_error (error);
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "the MTA closed the connection: the fetches were cancelled");
    }
    return FALSE;
  }
  *result = o.plan;
  *out = o.out ? o.out : g_memory_output_stream_new_resizable ();
  *out_fd = o.out_fd;
  return TRUE;
}
