/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-replace.c - replacing a file crash-safely (see eb-replace.h). */
#include "eb-replace.h"
#include "eb-cleanup.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

gboolean
eb_replace_fsync_dir (const char *path, GError **error)
{
  g_autofree char *dir = g_path_get_dirname (path);
  int d = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0 || fsync (d) != 0) {
    int e = errno;
    if (d >= 0)
      close (d);
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot sync %s: %s", dir,
                 g_strerror (e));
    return FALSE;
  }
  close (d);
  return TRUE;
}

#define XATTR_LIST_MAX_BYTES 65536   /* the kernel's own limit (XATTR_LIST_MAX) */
#define XATTR_VALUE_MAX_BYTES 65536  /* and per value (XATTR_SIZE_MAX) */

/* Copy the user.* extended attributes of @from to @to. Where the file system
 * has none (ENOTSUP) there is nothing to copy; any other failure is returned. */
static gboolean
copy_xattrs (int from, int to, int *err)
{
  g_autofree char *names = g_malloc (XATTR_LIST_MAX_BYTES);
  ssize_t n = flistxattr (from, names, XATTR_LIST_MAX_BYTES);
  if (n < 0) {
    if (errno == ENOTSUP)
      return TRUE;
    *err = errno;
    return FALSE;
  }
  g_autofree char *value = g_malloc (XATTR_VALUE_MAX_BYTES);
  for (const char *name = names; name < names + n; name += strlen (name) + 1) {
    if (!g_str_has_prefix (name, "user."))
      continue;
    ssize_t v = fgetxattr (from, name, value, XATTR_VALUE_MAX_BYTES);
    if (v < 0 || fsetxattr (to, name, value, (size_t) v, 0) != 0) {
      if (errno == ENOTSUP || errno == ENODATA)   /* the target cannot hold it; gone meanwhile */
        continue;
      *err = errno;
      return FALSE;
    }
  }
  return TRUE;
}

gboolean
eb_replace_copy_attributes (int from, int to, GError **error)
{
  struct stat st;
  int e = 0;
  if (fstat (from, &st) != 0)
    e = errno;
  else if (fchown (to, st.st_uid, st.st_gid) != 0 && geteuid () == 0)
    e = errno;   /* not root: a file of our own, and it stays ours */
  else if (fchmod (to, st.st_mode & 07777) != 0)
    e = errno;
  else
    copy_xattrs (from, to, &e);
  if (e) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e),
                 "cannot copy owner, mode and attributes: %s", g_strerror (e));
    return FALSE;
  }
  return TRUE;
}

gboolean
eb_replace_file (const char *path, int old_fd, const char *backup, EbWriteFunc write_fn,
                 gpointer data, GError **error)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *tmpl = g_strdup_printf ("%s/.%s.extbody-XXXXXX", dir, base);
  int fd = g_mkstemp_full (tmpl, O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
                 "cannot create a file beside %s: %s", path, g_strerror (errno));
    return FALSE;
  }
  int cleanup = eb_cleanup_add (tmpl);
  struct stat before;
  gboolean have_before = fstat (old_fd, &before) == 0;
  gboolean changed = TRUE;
  gboolean ok = write_fn (fd, data, &changed, error);
  if (ok && !changed) {
    close (fd);
    unlink (tmpl);
    eb_cleanup_remove (cleanup);
    return TRUE;
  }
  if (ok && fsync (fd) != 0) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno), "cannot sync %s: %s", tmpl,
                 g_strerror (errno));
    ok = FALSE;
  }
  if (ok && !eb_replace_copy_attributes (old_fd, fd, error)) {
    g_prefix_error (error, "%s from %s: ", tmpl, path);
    ok = FALSE;
  }
  if (close (fd) != 0 && ok) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno), "cannot write %s: %s", tmpl,
                 g_strerror (errno));
    ok = FALSE;
  }
  /* A writer that does not lock (or a file put in its place) changed the
   * mailbox while the new one was written: renaming now would lose what it
   * wrote. The check and the rename are not atomic; locking writers never
   * get here. */
  struct stat now, named;
  if (ok && have_before
      && (fstat (old_fd, &now) != 0 || stat (path, &named) != 0
          || now.st_size != before.st_size || now.st_mtim.tv_sec != before.st_mtim.tv_sec
          || now.st_mtim.tv_nsec != before.st_mtim.tv_nsec
          || named.st_dev != before.st_dev || named.st_ino != before.st_ino)) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_AGAIN,
                 "%s changed during the run without taking the lock", path);
    ok = FALSE;
  }
  if (ok && backup) {
    unlink (backup);
    if (link (path, backup) != 0) {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
                   "cannot keep the backup %s: %s", backup, g_strerror (errno));
      ok = FALSE;
    }
  }
  if (ok && rename (tmpl, path) != 0) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno), "cannot rename %s to %s: %s",
                 tmpl, path, g_strerror (errno));
    ok = FALSE;
  }
  if (!ok)
    unlink (tmpl);
  eb_cleanup_remove (cleanup);
  return ok && eb_replace_fsync_dir (path, error);
}
