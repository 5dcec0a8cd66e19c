/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-linger.c - the close of a connection whose client is still sending
 * (a lingering close, as Apache's lingering_close and nginx's
 * lingering_close do it).
 *
 * A door that answers before it has read everything its client sends (a
 * refusal past a share, "-" to a message that begins once the daemon is
 * stopping, an HTTP error before the request's body) must not close the
 * socket with those bytes unread: the kernel then resets the connection
 * (on a unix socket the client's next read fails with ECONNRESET, on TCP an
 * RST may destroy the answer before it is read), and the client never reads
 * the answer. Dovecot 2.4.1's LMTP process panics on that reset ("output
 * stream ... is missing error handling") and drops every message of its
 * session. So the answer is written, the socket's sending half shut, and
 * the connection given to the door's lingerer: one thread that reads and
 * drops what still comes until the client closes its end, and then closes.
 *
 * Each wait is bounded: a lingering connection is closed at once when the
 * client is idle for the door's idle timeout (http_timeout,
 * dovecot_timeout), when it has lingered the door's request timeout
 * (http_request_timeout, dovecot_request_timeout), or when it has sent
 * max_message_size more bytes; at most the door's max_connections linger at
 * once, and a further one is closed at once. */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib-unix.h>

#include "daemon.h"

/* a full lingerer reads at most this many buffers (64 KiB each) of each
 * connection it holds to find those whose clients have ended */
#define LINGER_SWEEP_READS 16

typedef struct {
  guint64 id;         /* which one: an fd number may be closed and reused meanwhile */
  int     fd;
  gint64  idle_end;   /* monotonic, microseconds */
  gint64  end;
  guint64 left;       /* bytes it may still send */
} Lingering;

struct _DaemonLinger {
  char    *door;
  guint    max;
  gint64   idle_us;
  gint64   total_us;
  GMutex   lock;       /* guards what follows */
  GArray  *fds;        /* of Lingering */
  guint64  next_id;
  gboolean ending;
  int      wake[2];
  GThread *thread;
};

static void
linger_wake (DaemonLinger *l)
{
  if (l->wake[1] >= 0 && write (l->wake[1], "x", 1) < 0 && errno != EAGAIN)
    log_line (LOG_WARNING, "%s: cannot wake the lingerer: %s", l->door, g_strerror (errno));
}

/* Reads and drops what @g's client sent, at most @reads times (0: until
 * nothing is left to read): FALSE once it is to be closed (its end, an
 * error, or past its bytes). */
static gboolean
linger_drain (Lingering *g, gint64 now, gint64 idle_us, guint reads)
{
  char buf[65536];
  for (guint i = 0; !reads || i < reads;) {
    ssize_t n = recv (g->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      if ((guint64) n >= g->left)
        return FALSE;
      g->left -= (guint64) n;
      g->idle_end = now + idle_us;
      i++;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return TRUE;
}

/* The index of the connection @id in @l (locked), or -1 when it is gone. */
static int
linger_find (DaemonLinger *l, guint64 id)
{
  for (guint i = 0; i < l->fds->len; i++)
    if (g_array_index (l->fds, Lingering, i).id == id)
      return (int) i;
  return -1;
}

static void
linger_remove (DaemonLinger *l, guint i)
{
  close (g_array_index (l->fds, Lingering, i).fd);
  g_array_remove_index_fast (l->fds, i);
}

static gpointer
linger_run (gpointer data)
{
  DaemonLinger *l = data;
  g_autofree struct pollfd *p = NULL;
  g_autofree guint64 *ids = NULL;
  guint cap = 0;
  for (;;) {
    g_mutex_lock (&l->lock);
    if (l->ending) {
      g_mutex_unlock (&l->lock);
      return NULL;
    }
    guint n = l->fds->len;
    if (n + 1 > cap) {
      cap = n + 1;
      p = g_renew (struct pollfd, p, cap);
      ids = g_renew (guint64, ids, cap);
    }
    p[0] = (struct pollfd) { .fd = l->wake[0], .events = POLLIN };
    gint64 now = g_get_monotonic_time (), next = G_MAXINT64;
    for (guint i = 0; i < n; i++) {
      Lingering *g = &g_array_index (l->fds, Lingering, i);
      p[i + 1] = (struct pollfd) { .fd = g->fd, .events = POLLIN };
      ids[i] = g->id;
      next = MIN (next, MIN (g->idle_end, g->end));
    }
    g_mutex_unlock (&l->lock);
    int ms = next == G_MAXINT64 ? -1 : (int) CLAMP ((next - now + 999) / 1000, 0, G_MAXINT);
    if (poll (p, n + 1, ms) < 0 && errno != EINTR) {
      log_line (LOG_WARNING, "%s: the lingerer cannot wait: %s", l->door, g_strerror (errno));
      g_usleep (G_USEC_PER_SEC / 10);
    }
    if (p[0].revents) {
      char b[64];
      while (read (l->wake[0], b, sizeof b) > 0)
        ;
    }
    now = g_get_monotonic_time ();
    g_mutex_lock (&l->lock);
    /* what the poll saw, for the connections still here (a full
     * daemon_linger_close may have closed some meanwhile) */
    for (guint k = 0; k < n; k++) {
      int i = p[k + 1].revents ? linger_find (l, ids[k]) : -1;
      if (i >= 0 && !linger_drain (&g_array_index (l->fds, Lingering, i), now, l->idle_us, 0))
        linger_remove (l, (guint) i);
    }
    for (guint i = l->fds->len; i-- > 0;) {
      Lingering *g = &g_array_index (l->fds, Lingering, i);
      if (now >= g->idle_end || now >= g->end)
        linger_remove (l, i);
    }
    g_mutex_unlock (&l->lock);
  }
}

/* A lingerer for @door ("http", "dovecot"): at most @max connections at
 * once, each closed after @idle_s seconds with nothing from its client or
 * @total_s in all. NULL with @error when its thread cannot start. */
DaemonLinger *
daemon_linger_new (const char *door, guint max, guint idle_s, guint total_s, GError **error)
{
  DaemonLinger *l = g_new0 (DaemonLinger, 1);
  l->door = g_strdup (door);
  l->max = max;
  l->idle_us = (gint64) MAX (idle_s, 1) * G_USEC_PER_SEC;
  l->total_us = (gint64) MAX (total_s, 1) * G_USEC_PER_SEC;
  g_mutex_init (&l->lock);
  l->fds = g_array_new (FALSE, FALSE, sizeof (Lingering));
  l->wake[0] = l->wake[1] = -1;
  if (!g_unix_open_pipe (l->wake, FD_CLOEXEC, error) || !g_unix_set_fd_nonblocking (l->wake[0], TRUE, error)
      || !g_unix_set_fd_nonblocking (l->wake[1], TRUE, error)
      || !(l->thread = g_thread_try_new ("linger", linger_run, l, error))) {
    daemon_linger_free (l);
    return NULL;
  }
  return l;
}

/* The answer to @fd's client is written: its sending half is shut and the
 * socket is closed once the client has closed its own end (or a limit is
 * met; at once when @l is NULL or lingers its maximum already). The
 * client may send a head of @head_max bytes and a message of
 * max_message_size more. @fd is @l's from here on. */
void
daemon_linger_close (DaemonLinger *l, int fd, gsize head_max)
{
  shutdown (fd, SHUT_WR);
  if (l) {
    Gen *gen = daemon_generation_get ();
    guint64 max_bytes = gen->keys.max_message_size + head_max;
    daemon_generation_unref (gen);
    g_mutex_lock (&l->lock);
    gint64 now = g_get_monotonic_time ();
    /* full: those whose clients have ended since the lingerer last looked
     * go first (LINGER_SWEEP_READS reads each at most), so that only
     * clients still sending count */
    for (guint i = l->fds->len; l->fds->len >= l->max && i-- > 0;)
      if (!linger_drain (&g_array_index (l->fds, Lingering, i), now, l->idle_us, LINGER_SWEEP_READS))
        linger_remove (l, i);
    if (!l->ending && l->fds->len < l->max) {
      Lingering g = { ++l->next_id, fd, now + l->idle_us, now + l->total_us, max_bytes ? max_bytes : 1 };
      g_array_append_val (l->fds, g);
      g_mutex_unlock (&l->lock);
      linger_wake (l);
      return;
    }
    g_mutex_unlock (&l->lock);
  }
  close (fd);
}

/* The thread ends; every lingering connection is closed. */
void
daemon_linger_free (DaemonLinger *l)
{
  if (!l)
    return;
  g_mutex_lock (&l->lock);
  l->ending = TRUE;
  g_mutex_unlock (&l->lock);
  if (l->thread) {
    linger_wake (l);
    g_thread_join (l->thread);
  }
  while (l->fds->len)
    linger_remove (l, l->fds->len - 1);
  g_array_unref (l->fds);
  for (int i = 0; i < 2; i++)
    if (l->wake[i] >= 0)
      close (l->wake[i]);
  g_mutex_clear (&l->lock);
  g_free (l->door);
  g_free (l);
}
