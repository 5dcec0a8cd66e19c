/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-listen.c - the unix sockets of the daemon's own doors (http_socket,
 * dovecot_filter_socket): bound at start, before privileges are dropped, and
 * removed at the stop only while the file is still the one bound (a daemon
 * started since keeps its own). libmilter makes the milter's socket itself.
 */
#include <errno.h>
#include <pwd.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <extbody/extbody.h>

#include "daemon.h"

int
daemon_listen_unix (DaemonSocket *s, const char *key, const char *path, const DaemonSettings *keys,
                    const char *user, GError **error)
{
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (strlen (path) >= sizeof sa.sun_path) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "%s %s: the path is too long", key, path);
    return -1;
  }
  memcpy (sa.sun_path, path, strlen (path) + 1);
  struct stat st;
  if (lstat (path, &st) == 0) {
    if (!S_ISSOCK (st.st_mode)) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_EXISTS, "%s %s exists and is not a socket (left alone)", key, path);
      return -1;
    }
    /* one a daemon answers on stays; one left by a daemon killed goes */
    int probe = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    gboolean live = probe >= 0 && (connect (probe, (struct sockaddr *) &sa, sizeof sa) == 0 || errno == EAGAIN);
    if (probe >= 0)
      close (probe);
    if (live) {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE, "%s %s is in use by a running daemon", key, path);
      return -1;
    }
    unlink (path);
  }
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int r = -1;
  if (fd >= 0) {
    mode_t mask = (mode_t) g_ascii_strtoull (keys->client_umask, NULL, 8);
    mode_t old = umask (mask & 0777);
    r = bind (fd, (struct sockaddr *) &sa, sizeof sa);
    umask (old);
  }
  if (fd < 0 || r != 0 || lstat (path, &s->st) != 0 || listen (fd, SOMAXCONN) != 0) {
    int e = errno;
    if (fd >= 0)
      close (fd);
    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (e), "cannot open %s %s: %s", key, path, g_strerror (e));
    return -1;
  }
  s->path = g_strdup (path);
  struct passwd *pw = user ? getpwnam (user) : NULL;
  if (pw && chown (path, pw->pw_uid, pw->pw_gid) != 0)
    log_line (LOG_WARNING, "cannot chown %s: %s", path, g_strerror (errno));
  return fd;
}

gboolean
daemon_listen_dir_missing (const char *key, const char *path)
{
  g_autofree char *dir = g_path_get_dirname (path);
  struct stat st;
  if (stat (dir, &st) == 0 && S_ISDIR (st.st_mode))
    return FALSE;
  log_line (LOG_WARNING, "%s %s: its directory %s does not exist, so this door is off (make the directory, "
            "or set %s to another socket, or to nothing to say so)", key, path, dir, key);
  return TRUE;
}

void
daemon_listen_remove (DaemonSocket *s)
{
  struct stat st;
  if (s->path && lstat (s->path, &st) == 0 && st.st_dev == s->st.st_dev && st.st_ino == s->st.st_ino
      && unlink (s->path) != 0)
    log_line (LOG_WARNING, "cannot remove %s: %s", s->path, g_strerror (errno));
  g_clear_pointer (&s->path, g_free);
}
