/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-maildir.c - Maildir: listing, mapping and crash-safe rewriting (see eb-maildir.h). */
#include "eb-maildir.h"
#include "eb-cleanup.h"
#include "eb-replace.h"
#include <extbody/extbody.h>    /* eb_maildir_sniff, eb_maildir_problem: public */
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

GMappedFile *
eb_maildir_map_entry (const char *path, const char **skipped)
{
  *skipped = NULL;
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  int e = errno;
  struct stat st;
  if ((fd < 0 && e == ELOOP) || (fd >= 0 && (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode))))
    *skipped = "not a regular file";
  else if (fd < 0 && e == ENOENT)   /* a mail reader moved or deleted it meanwhile */
    *skipped = "gone since the folder was listed";
  GMappedFile *map = fd >= 0 && !*skipped ? g_mapped_file_new_from_fd (fd, FALSE, NULL) : NULL;
  if (fd >= 0)
    close (fd);
  return map;
}

gboolean
eb_maildir_sniff (const char *path)
{
  const char *subs[] = { "cur", "new", "tmp" };
  for (guint i = 0; i < 3; i++) {
    g_autofree char *d = g_build_filename (path, subs[i], NULL);
    if (!g_file_test (d, G_FILE_TEST_IS_DIR))
      return FALSE;
  }
  return TRUE;
}

char *
eb_maildir_problem (const char *path)
{
  int fd = open (path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return g_strdup_printf ("cannot open %s: %s", path, g_strerror (e));
  }
  const char *subs[] = { "cur", "new", "tmp" };
  g_autoptr (GString) missing = g_string_new (NULL);
  guint n_missing = 0;
  char *problem = NULL;
  for (guint i = 0; i < 3 && !problem; i++) {
    struct stat st;
    g_autofree char *d = g_build_filename (path, subs[i], NULL);
    if (fstatat (fd, subs[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
      int e = errno;
      if (e == ENOENT) {
        g_string_append_printf (missing, "%s%s/", n_missing ? ", " : "", subs[i]);
        n_missing++;
      } else {
        problem = g_strdup_printf ("%s: %s", d, g_strerror (e));
      }
    } else if (S_ISLNK (st.st_mode)) {
      continue;   /* never followed: the walk skips it with a line, a rewrite refuses it */
    } else if (!S_ISDIR (st.st_mode)) {
      problem = g_strdup_printf ("%s: not a directory", d);
    } else {
      int sfd = openat (fd, subs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sfd < 0) {
        int e = errno;
        problem = g_strdup_printf ("cannot open %s: %s", d, g_strerror (e));
      } else {
        close (sfd);
      }
    }
  }
  close (fd);
  if (!problem && n_missing)
    problem = g_strdup_printf ("%s: not a Maildir: no %s (a Maildir has cur/, new/ and tmp/)", path,
                               missing->str);
  return problem;
}

static gint
cmp_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* Open the directory @name under @dirfd, never through a symbolic link. */
static int
open_subdir (int dirfd, const char *name)
{
  return openat (dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* A symbolic link where a directory is expected: the reason it is skipped. */
static const char *
subdir_problem (int dirfd, const char *name, int *err)
{
  struct stat st;
  *err = 0;
  if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    *err = errno;
    return NULL;
  }
  if (S_ISLNK (st.st_mode))
    return "a symbolic link, not followed";
  if (!S_ISDIR (st.st_mode))
    return "not a directory";
  return NULL;
}

static void
add_skip (GPtrArray *skipped, const char *path, const char *why)
{
  if (skipped)
    g_ptr_array_add (skipped, g_strdup_printf ("%s: %s", path, why));
}

/* The messages of the Maildir open as @mdfd (named @dir). Its cur/, new/ and
 * tmp/ must be directories of their own, not symbolic links. */
static gboolean
list_one (int mdfd, const char *dir, GPtrArray *out, GPtrArray *skipped, GError **error)
{
  const char *subs[] = { "tmp", "new", "cur" };
  for (guint i = 0; i < 3; i++) {
    g_autofree char *d = g_build_filename (dir, subs[i], NULL);
    int e = 0;
    const char *why = subdir_problem (mdfd, subs[i], &e);
    if (why) {
      add_skip (skipped, d, why);
      continue;
    }
    if (i == 0)
      continue;   /* tmp/ only checked: a link there would write outside */
    int fd = e ? -1 : open_subdir (mdfd, subs[i]);
    DIR *dp = fd >= 0 ? fdopendir (fd) : NULL;
    if (!dp) {
      e = e ? e : errno;
      if (fd >= 0)
        close (fd);
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot open %s: %s", d,
                   g_strerror (e));
      return FALSE;
    }
    struct dirent *de;
    while ((de = readdir (dp)))
      if (de->d_name[0] != '.')
        g_ptr_array_add (out, g_build_filename (d, de->d_name, NULL));
    closedir (dp);
  }
  return TRUE;
}

GPtrArray *
eb_maildir_list_full (const char *dir, gboolean recursive, GPtrArray *skipped, GError **error)
{
  GPtrArray *out = g_ptr_array_new_with_free_func (g_free);
  /* the folder named may be reached through a symbolic link, as written */
  int mdfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (mdfd < 0) {
    int e = errno;
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot open %s: %s", dir,
                 g_strerror (e));
    g_ptr_array_unref (out);
    return NULL;
  }
  gboolean ok = list_one (mdfd, dir, out, skipped, error);
  if (ok && recursive) {
    int dup_fd = dup (mdfd);
    DIR *dp = dup_fd >= 0 ? fdopendir (dup_fd) : NULL;
    struct dirent *de;
    while (ok && dp && (de = readdir (dp))) {
      const char *n = de->d_name;
      if (n[0] != '.' || !strcmp (n, ".") || !strcmp (n, ".."))
        continue;
      g_autofree char *sub = g_build_filename (dir, n, NULL);
      int e = 0;
      const char *why = subdir_problem (mdfd, n, &e);
      if (why && strcmp (why, "not a directory") != 0) {
        add_skip (skipped, sub, why);   /* a folder elsewhere, maybe another user's */
        continue;
      }
      int sfd = why || e ? -1 : open_subdir (mdfd, n);
      struct stat st;
      if (sfd >= 0 && fstatat (sfd, "cur", &st, AT_SYMLINK_NOFOLLOW) == 0
          && fstatat (sfd, "new", &st, AT_SYMLINK_NOFOLLOW) == 0
          && fstatat (sfd, "tmp", &st, AT_SYMLINK_NOFOLLOW) == 0)
        ok = list_one (sfd, sub, out, skipped, error);
      if (sfd >= 0)
        close (sfd);
    }
    if (dp)
      closedir (dp);
    else if (dup_fd >= 0)
      close (dup_fd);
  }
  close (mdfd);
  if (!ok) {
    g_ptr_array_unref (out);
    return NULL;
  }
  g_ptr_array_sort (out, cmp_str);
  return out;
}

GPtrArray *
eb_maildir_list (const char *dir, gboolean recursive, GError **error)
{
  return eb_maildir_list_full (dir, recursive, NULL, error);
}

/* The size of a message with every line end counted as CRLF: Dovecot's
 * "virtual size", the ",W=" of a Maildir++ name. */
guint64
eb_maildir_virtual_size (const char *data, gsize len)
{
  guint64 n = len;
  for (const char *p = data, *end = data + len; (p = memchr (p, '\n', (gsize) (end - p))); p++)
    n += p == data || p[-1] != '\r';
  return n;
}

/* @rest (the part of a Maildir name after its base: ",S=N,W=M:2,FLAGS") with
 * ",S=" and ",W=" given the new sizes, where they are. Only the part before
 * the ":" info holds them. */
static char *
with_sizes (const char *rest, guint64 size, guint64 vsize)
{
  GString *o = g_string_new (NULL);
  const char *info = strchr (rest, ':');
  const char *p = rest, *stop = info ? info : rest + strlen (rest);
  while (p < stop) {
    if (*p == ',' && stop - p >= 3 && (p[1] == 'S' || p[1] == 'W') && p[2] == '=') {
      char key = p[1];
      p += 3;
      while (p < stop && g_ascii_isdigit (*p))
        p++;
      g_string_append_printf (o, ",%c=%" G_GUINT64_FORMAT, key, key == 'S' ? size : vsize);
      continue;
    }
    g_string_append_c (o, *p++);
  }
  g_string_append (o, stop);
  return g_string_free (o, FALSE);
}

/* A new unique base name (the Maildir convention: time.MusecPpidQn.host, the
 * host with "/" and ":" escaped). */
static char *
unique_base (void)
{
  static gint counter = 0;
  gint64 now = g_get_real_time ();
  char host[256] = "localhost";
  gethostname (host, sizeof host - 1);
  GString *h = g_string_new (NULL);
  for (const char *c = host; *c; c++)
    if (*c == '/')
      g_string_append (h, "\\057");
    else if (*c == ':')
      g_string_append (h, "\\072");
    else if (*c == ',')
      g_string_append (h, "\\054");
    else
      g_string_append_c (h, *c);
  char *b = g_strdup_printf ("%" G_GINT64_FORMAT ".M%06dP%ldQ%d.%s", now / G_USEC_PER_SEC,
                             (int) (now % G_USEC_PER_SEC), (long) getpid (),
                             g_atomic_int_add (&counter, 1), h->str);
  g_string_free (h, TRUE);
  return b;
}

gboolean
eb_maildir_replace (const char *path, const char *data, gsize len, char **new_path, GError **error)
{
  g_autofree char *sub = g_path_get_dirname (path);        /* .../cur or .../new */
  g_autofree char *md = g_path_get_dirname (sub);
  g_autofree char *name = g_path_get_basename (path);
  g_autofree char *base = unique_base ();
  g_autofree char *tmpdir = g_build_filename (md, "tmp", NULL);
  g_autofree char *tmp = g_build_filename (tmpdir, base, NULL);
  struct stat st;
  /* tmp/ and the message's own folder: directories of the Maildir, never
   * symbolic links to somewhere else */
  const char *dirs[] = { tmpdir, sub };
  for (guint i = 0; i < 2; i++) {
    if (lstat (dirs[i], &st) != 0) {
      int e = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s%s", dirs[i], g_strerror (e),
                   i == 0 && e == ENOENT ? " (a Maildir has cur/, new/ and tmp/: a message is written in tmp/ first)" : "");
      return FALSE;
    }
    if (!S_ISDIR (st.st_mode)) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR, "%s: %s", dirs[i],
                   S_ISLNK (st.st_mode) ? "a symbolic link, not followed (a directory of the Maildir's own is needed)"
                                        : "not a directory");
      return FALSE;
    }
  }
  int old = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (old < 0) {
    int e = errno;
    if (e == ENOENT) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_AGAIN,
                   "%s was moved or deleted during the run", path);
    } else {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot open %s: %s", path,
                   g_strerror (e));
    }
    return FALSE;
  }
  int fd = open (tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    int e = errno;
    close (old);
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot create %s: %s", tmp,
                 g_strerror (e));
    return FALSE;
  }
  int cleanup = eb_cleanup_add (tmp);
  gsize done = 0;
  int e = 0;
  while (done < len) {
    ssize_t n = write (fd, data + done, len - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      e = n < 0 ? errno : ENOSPC;
      break;
    }
    done += (gsize) n;
  }
  g_autoptr (GError) attr_error = NULL;
  if (!e && fsync (fd) != 0)
    e = errno;
  gboolean attrs = !e && eb_replace_copy_attributes (old, fd, &attr_error);
  close (old);
  if (!e && close (fd) != 0)
    e = errno;
  else if (e)
    close (fd);
  if (e || !attrs) {
    unlink (tmp);
    eb_cleanup_remove (cleanup);
    if (attr_error)
      g_set_error (error, G_FILE_ERROR, attr_error->code, "%s: %s", tmp, attr_error->message);
    else
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot write %s: %s", tmp,
                   g_strerror (e));
    return FALSE;
  }
  /* A mail reader moved (new/ to cur/, a flag changed) or deleted the message
   * while it was being resolved: delivering now would bring back a deleted
   * message or make a second copy of a moved one. The check and the delivery
   * are not atomic; Maildir has no lock to close that gap. */
  if (lstat (path, &st) != 0 || !S_ISREG (st.st_mode)) {
    unlink (tmp);
    eb_cleanup_remove (cleanup);
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_AGAIN,
                 "%s was moved or deleted during the run", path);
    return FALSE;
  }
  /* The new version is a new message (a new name, so an IMAP server gives it
   * a new UID and clients fetch it again), in the same folder with the same
   * flags; delivered first, the old one removed after: a crash between the
   * two leaves both, never neither. */
  const char *rest = name + strcspn (name, ",:");
  g_autofree char *newrest = with_sizes (rest, len, eb_maildir_virtual_size (data, len));
  g_autofree char *target = g_strconcat (sub, "/", base, newrest, NULL);
  if (link (tmp, target) != 0) {
    e = errno;
    unlink (tmp);
    eb_cleanup_remove (cleanup);
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot deliver %s as %s: %s",
                 tmp, target, g_strerror (e));
    return FALSE;
  }
  unlink (tmp);
  eb_cleanup_remove (cleanup);
  if (!eb_replace_fsync_dir (target, error))
    return FALSE;   /* the old one is still there: at worst both */
  if (unlink (path) != 0 && errno != ENOENT) {
    e = errno;
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e),
                 "delivered %s but cannot remove the old %s: %s", target, path, g_strerror (e));
    return FALSE;
  }
  *new_path = g_steal_pointer (&target);
  return eb_replace_fsync_dir (*new_path, error);
}
