/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-spool.c - a message's bytes, or an answer's, on every door of the
 * daemon: in memory up to milter_spill_size, past it in an unlinked file of
 * their own (the milter's messages, the HTTP listener's request bodies and
 * answers, the Dovecot listener's messages and answers), so that what the
 * daemon holds follows the connections it serves, not their messages' size.
 * A spilled message is read through a read-only mapping of its file (the
 * library plans from bytes); a spilled answer is sent from its file. */
#include <errno.h>
#include <unistd.h>

#include <gio/gunixoutputstream.h>
#include <glib/gstdio.h>

#include "daemon.h"

void
daemon_spool_init (DaemonSpool *s, guint64 spill)
{
  s->mem = g_byte_array_new ();
  s->fd = -1;
  s->size = 0;
  s->spill = spill;
  s->error = 0;
  s->map = NULL;
}

/* A file of our own, already unlinked: nothing is left behind whatever
 * happens to the process. -1 with errno. */
static int
spool_file (void)
{
  g_autofree char *path = NULL;
  int fd = g_file_open_tmp ("extbodyd-XXXXXX", &path, NULL);
  if (fd >= 0)
    g_unlink (path);
  else if (!errno)
    errno = EIO;
  return fd;
}

static gboolean
write_all (int fd, const guint8 *p, gsize n)
{
  while (n) {
    ssize_t w = write (fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return FALSE;
    p += w;
    n -= (gsize) w;
  }
  return TRUE;
}

gboolean
daemon_spool_append (DaemonSpool *s, const void *data, gsize len)
{
  s->size += len;
  if (s->error || !s->mem)
    return !s->error;
  if (s->fd < 0 && s->mem->len + len > s->spill) {
    s->fd = spool_file ();
    if (s->fd < 0 || !write_all (s->fd, s->mem->data, s->mem->len)) {
      s->error = errno ? errno : EIO;
      return FALSE;
    }
    /* the memory goes, not only its length */
    g_byte_array_unref (s->mem);
    s->mem = g_byte_array_new ();
  }
  if (s->fd >= 0) {
    if (!write_all (s->fd, data, len)) {
      s->error = errno ? errno : EIO;
      return FALSE;
    }
  } else {
    g_byte_array_append (s->mem, data, (guint) len);
  }
  return TRUE;
}

void
daemon_spool_drop (DaemonSpool *s)
{
  g_clear_pointer (&s->map, g_mapped_file_unref);
  g_clear_pointer (&s->mem, g_byte_array_unref);
  if (s->fd >= 0)
    close (s->fd);
  s->fd = -1;
}

void
daemon_spool_truncate (DaemonSpool *s, guint64 n)
{
  g_clear_pointer (&s->map, g_mapped_file_unref);
  if (s->error)
    return;
  if (s->fd >= 0) {
    if (ftruncate (s->fd, (off_t) n) != 0)
      s->error = errno ? errno : EIO;
    return;
  }
  if (s->mem && s->mem->len > n) {
    /* a copy of what stays: the memory of the rest goes, not only its length */
    GByteArray *kept = g_byte_array_sized_new ((guint) n);
    g_byte_array_append (kept, s->mem->data, (guint) n);
    g_byte_array_unref (s->mem);
    s->mem = kept;
  }
}

const char *
daemon_spool_bytes (DaemonSpool *s, gsize *len, GError **error)
{
  if (s->error) {
    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (s->error), "cannot spool the message: %s",
                 g_strerror (s->error));
    return NULL;
  }
  if (!s->mem && s->fd < 0) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "the message was dropped");
    return NULL;
  }
  if (s->fd < 0) {
    *len = s->mem->len;
    return (const char *) s->mem->data;
  }
  if (!s->map) {
    s->map = g_mapped_file_new_from_fd (s->fd, FALSE, error);
    if (!s->map) {
      g_prefix_error (error, "cannot map the spooled message: ");
      return NULL;
    }
  }
  *len = g_mapped_file_get_length (s->map);
  /* an empty file maps to NULL: the bytes of an empty message are "" */
  return *len ? g_mapped_file_get_contents (s->map) : "";
}

void
daemon_spool_clear (DaemonSpool *s)
{
  daemon_spool_drop (s);
  s->size = 0;
  s->error = 0;
}

GOutputStream *
daemon_spool_output (guint64 expect, guint64 spill, gboolean to_file, int *fd)
{
  *fd = -1;
  if (to_file || expect > spill) {
    int f = spool_file ();
    if (f >= 0) {
      *fd = f;
      return g_unix_output_stream_new (f, TRUE);   /* closed with the stream */
    }
  }
  return g_memory_output_stream_new_resizable ();
}
