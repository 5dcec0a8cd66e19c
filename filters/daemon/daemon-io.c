/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-io.c - reading and writing a connection of the daemon's HTTP and
 * Dovecot doors within its limits. Every wait is a poll () bounded twice:
 * by the idle time (http_timeout, dovecot_timeout: nothing moved for that
 * long) and by the deadline of what is under way (http_request_timeout,
 * dovecot_request_timeout: a client that sends a byte now and then still
 * meets it). The socket is non-blocking: a read or a write never waits
 * outside poll. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"

void
daemon_io_init (DaemonIo *io, int fd, guint idle_s)
{
  io->fd = fd;
  io->idle_ms = (int) MIN (idle_s, (guint) (G_MAXINT / 1000)) * 1000;
  io->deadline = 0;
  int fl = fcntl (fd, F_GETFL);
  if (fl >= 0)
    fcntl (fd, F_SETFL, fl | O_NONBLOCK);
}

void
daemon_io_deadline (DaemonIo *io, guint seconds)
{
  io->deadline = seconds ? g_get_monotonic_time () + (gint64) seconds * G_USEC_PER_SEC : 0;
}

/* Wait for @events within the limits: TRUE when ready, else FALSE with
 * *@end. */
static gboolean
wait_for (DaemonIo *io, short events, DaemonIoEnd *end)
{
  for (;;) {
    int ms = io->idle_ms;
    gboolean late_first = FALSE;
    if (io->deadline) {
      gint64 left = (io->deadline - g_get_monotonic_time () + 999) / 1000;
      if (left <= 0) {
        *end = DAEMON_IO_LATE;
        return FALSE;
      }
      if (left < ms) {
        ms = (int) left;
        late_first = TRUE;
      }
    }
    struct pollfd p = { .fd = io->fd, .events = events };
    int r = poll (&p, 1, ms);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      *end = DAEMON_IO_ERROR;
      return FALSE;
    }
    if (r == 0) {
      *end = late_first ? DAEMON_IO_LATE : DAEMON_IO_IDLE;
      return FALSE;
    }
    return TRUE;
  }
}

/* Has the deadline passed? Checked before every read and write too: a
 * client that always has bytes ready never makes the daemon wait. */
static gboolean
late (const DaemonIo *io, DaemonIoEnd *end)
{
  if (!io->deadline || g_get_monotonic_time () < io->deadline)
    return FALSE;
  *end = DAEMON_IO_LATE;
  return TRUE;
}

gsize
daemon_io_read (DaemonIo *io, void *buf, gsize len, DaemonIoEnd *end)
{
  for (;;) {
    if (late (io, end))
      return 0;
    ssize_t n = recv (io->fd, buf, len, 0);
    if (n > 0) {
      *end = DAEMON_IO_OK;
      return (gsize) n;
    }
    if (n == 0) {
      *end = DAEMON_IO_EOF;
      return 0;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      *end = errno == ECONNRESET ? DAEMON_IO_EOF : DAEMON_IO_ERROR;
      return 0;
    }
    if (!wait_for (io, POLLIN, end))
      return 0;
  }
}

gboolean
daemon_io_write (DaemonIo *io, const void *data, gsize len, DaemonIoEnd *end)
{
  const char *p = data;
  *end = DAEMON_IO_OK;
  while (len) {
    if (late (io, end))
      return FALSE;
    ssize_t n = send (io->fd, p, len, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      len -= (gsize) n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      *end = errno == EPIPE || errno == ECONNRESET ? DAEMON_IO_EOF : DAEMON_IO_ERROR;
      return FALSE;
    }
    if (!wait_for (io, POLLOUT, end))
      return FALSE;
  }
  return TRUE;
}

gboolean
daemon_io_write_file (DaemonIo *io, int fd, guint64 len, DaemonIoEnd *end)
{
  char buf[65536];
  guint64 off = 0;
  *end = DAEMON_IO_OK;
  while (off < len) {
    ssize_t n = pread (fd, buf, (size_t) MIN ((guint64) sizeof buf, len - off), (off_t) off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      *end = DAEMON_IO_ERROR;
      return FALSE;
    }
    if (!daemon_io_write (io, buf, (gsize) n, end))
      return FALSE;
    off += (guint64) n;
  }
  return TRUE;
}

void
daemon_io_write_now (int fd, const char *text)
{
  gsize len = strlen (text);
  ssize_t n = send (fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  (void) n;   /* a refusal the socket does not take is a close alone */
}
