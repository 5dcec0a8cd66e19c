/* eb-mailbox.c - mbox and Maildir (see eb-mailbox.h). */
#include "eb-mailbox.h"
#include "eb-error.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static gboolean
is_from_line (const char *buf, gsize len, gsize p)
{
  return len - p >= 5 && memcmp (buf + p, "From ", 5) == 0;
}

static GArray *
split (const char *buf, gsize len, gboolean release)
{
  const gsize chunk = 16 << 20;
  gsize page = (gsize) sysconf (_SC_PAGESIZE), released = 0;
  GArray *msgs = g_array_new (FALSE, FALSE, sizeof (EbMboxMsg));
  gsize p = 0;
  gboolean prev_blank = TRUE;   /* the start of the file counts as after a blank line */
  EbMboxMsg cur = { 0 };
  gboolean open = FALSE;
  while (p < len) {
    const char *nl = memchr (buf + p, '\n', len - p);
    gsize e = nl ? (gsize) (nl - buf) + 1 : len;
    if (prev_blank && is_from_line (buf, len, p)) {
      if (open) {
        cur.end = p;
        g_array_append_val (msgs, cur);
      }
      cur.from = p;
      cur.start = e;
      open = TRUE;
    }
    gsize content = e - p - (nl ? 1 : 0);
    prev_blank = content == 0 || (content == 1 && buf[p] == '\r');
    p = e;
    if (release && p - released >= chunk) {
      gsize z = (p - 4096) / page * page;   /* keep the line being looked at */
      if (z > released)
        madvise ((void *) (buf + released), z - released, MADV_DONTNEED);
      released = z;
    }
  }
  if (open) {
    cur.end = len;
    g_array_append_val (msgs, cur);
  }
  return msgs;
}

GArray *
eb_mbox_split (const char *buf, gsize len)
{
  return split (buf, len, FALSE);
}

GArray *
eb_mbox_split_mapped (const char *buf, gsize len)
{
  return split (buf, len, TRUE);
}

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

/* ---- files removed when a signal stops the process --------------------- */

#define CLEANUP_SLOTS 8
static char cleanup_paths[CLEANUP_SLOTS][4096];
static volatile sig_atomic_t cleanup_used[CLEANUP_SLOTS];
static GMutex cleanup_lock;

int
eb_cleanup_add (const char *path)
{
  if (strlen (path) >= sizeof cleanup_paths[0])
    return -1;
  int slot = -1;
  g_mutex_lock (&cleanup_lock);
  for (int i = 0; i < CLEANUP_SLOTS && slot < 0; i++)
    if (!cleanup_used[i]) {
      strcpy (cleanup_paths[i], path);
      cleanup_used[i] = 1;   /* only now does the handler look at the path */
      slot = i;
    }
  g_mutex_unlock (&cleanup_lock);
  return slot;
}

void
eb_cleanup_remove (int slot)
{
  if (slot < 0 || slot >= CLEANUP_SLOTS)
    return;
  g_mutex_lock (&cleanup_lock);
  cleanup_used[slot] = 0;
  g_mutex_unlock (&cleanup_lock);
}

void
eb_cleanup_run (void)
{
  for (int i = 0; i < CLEANUP_SLOTS; i++)
    if (cleanup_used[i])
      unlink (cleanup_paths[i]);
}

void
eb_mbox_remove_stale (const char *path)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *prefix = g_strdup_printf (".%s.extbody-", base);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name (d)))
    if (g_str_has_prefix (n, prefix) && strlen (n) == strlen (prefix) + 6) {
      g_autofree char *p = g_build_filename (dir, n, NULL);
      struct stat st;
      if (lstat (p, &st) == 0 && S_ISREG (st.st_mode))
        unlink (p);
    }
}

struct _EbMboxLock {
  char *dotlock;
  int   fd;
  int   cleanup;
};

EbMboxLock *
eb_mbox_lock (const char *path, int fd, guint timeout_s, GError **error)
{
  g_autofree char *dot = g_strconcat (path, ".lock", NULL);
  int cleanup = -1;
  gint64 end = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;
  for (;;) {
    int lfd = open (dot, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (lfd >= 0) {
      g_autofree char *pid = g_strdup_printf ("%ld\n", (long) getpid ());
      if (write (lfd, pid, strlen (pid)) < 0) {
        /* the lock still stands; its content only helps find stale ones */
      }
      close (lfd);
      cleanup = eb_cleanup_add (dot);
      break;
    }
    if (errno != EEXIST) {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
                   "cannot create the lock file %s: %s", dot, g_strerror (errno));
      return NULL;
    }
    /* stale: its process is gone */
    g_autofree char *content = NULL;
    if (g_file_get_contents (dot, &content, NULL, NULL)) {
      long pid = atol (content);
      if (pid > 0 && kill ((pid_t) pid, 0) != 0 && errno == ESRCH) {
        unlink (dot);
        continue;
      }
    }
    if (g_get_monotonic_time () > end) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_AGAIN, "%s is locked (%s)", path, dot);
      return NULL;
    }
    g_usleep (100000);
  }
  /* the fcntl lock within the same time (F_SETLKW would wait for ever) */
  struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
  while (fcntl (fd, F_SETLK, &fl) != 0) {
    int e = errno;
    if ((e == EACCES || e == EAGAIN || e == EINTR) && g_get_monotonic_time () <= end) {
      g_usleep (100000);
      continue;
    }
    unlink (dot);
    eb_cleanup_remove (cleanup);
    if (e == EACCES || e == EAGAIN)
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_AGAIN, "%s is locked (fcntl) by another program", path);
    else
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot lock %s: %s", path,
                   g_strerror (e));
    return NULL;
  }
  EbMboxLock *l = g_new0 (EbMboxLock, 1);
  l->dotlock = g_steal_pointer (&dot);
  l->fd = fd;
  l->cleanup = cleanup;
  return l;
}

void
eb_mbox_unlock (EbMboxLock *l)
{
  if (!l)
    return;
  struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET };
  fcntl (l->fd, F_SETLK, &fl);
  unlink (l->dotlock);
  eb_cleanup_remove (l->cleanup);
  g_free (l->dotlock);
  g_free (l);
}

static gboolean
fsync_dir (const char *path, GError **error)
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
  struct stat st, before;
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
  if (ok && fstat (old_fd, &st) == 0) {
    if (fchmod (fd, st.st_mode & 07777) != 0 || (fchown (fd, st.st_uid, st.st_gid) != 0 && geteuid () == 0)) {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
                   "cannot give %s the mode and owner of %s: %s", tmpl, path, g_strerror (errno));
      ok = FALSE;
    }
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
  return ok && fsync_dir (path, error);
}

static gint
cmp_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

static gboolean
list_one (const char *dir, GPtrArray *out, GError **error)
{
  const char *subs[] = { "new", "cur" };
  for (guint i = 0; i < 2; i++) {
    g_autofree char *d = g_build_filename (dir, subs[i], NULL);
    g_autoptr (GDir) gd = g_dir_open (d, 0, error);
    if (!gd)
      return FALSE;
    const char *n;
    while ((n = g_dir_read_name (gd)))
      if (n[0] != '.')
        g_ptr_array_add (out, g_build_filename (d, n, NULL));
  }
  return TRUE;
}

GPtrArray *
eb_maildir_list (const char *dir, gboolean recursive, GError **error)
{
  GPtrArray *out = g_ptr_array_new_with_free_func (g_free);
  if (!list_one (dir, out, error)) {
    g_ptr_array_unref (out);
    return NULL;
  }
  if (recursive) {
    g_autoptr (GDir) gd = g_dir_open (dir, 0, NULL);
    const char *n;
    while (gd && (n = g_dir_read_name (gd))) {
      g_autofree char *sub = g_build_filename (dir, n, NULL);
      if (n[0] == '.' && strcmp (n, ".") && strcmp (n, "..") && eb_maildir_sniff (sub))
        if (!list_one (sub, out, error)) {
          g_ptr_array_unref (out);
          return NULL;
        }
    }
  }
  g_ptr_array_sort (out, cmp_str);
  return out;
}

/* @name with its ",S=N" replaced by @size (only when it has one). */
static char *
with_size (const char *name, gsize size)
{
  const char *s = strstr (name, ",S=");
  if (!s)
    return g_strdup (name);
  const char *e = s + 3;
  while (g_ascii_isdigit (*e))
    e++;
  return g_strdup_printf ("%.*s,S=%" G_GSIZE_FORMAT "%s", (int) (s - name), name, size, e);
}

gboolean
eb_maildir_replace (const char *path, const char *data, gsize len, char **new_path, GError **error)
{
  g_autofree char *sub = g_path_get_dirname (path);        /* .../cur or .../new */
  g_autofree char *md = g_path_get_dirname (sub);
  g_autofree char *name = g_path_get_basename (path);
  static gint counter = 0;
  g_autofree char *tmp = g_strdup_printf ("%s/tmp/%" G_GINT64_FORMAT ".M%dP%ld.extbody", md,
                                          g_get_real_time (), g_atomic_int_add (&counter, 1),
                                          (long) getpid ());
  int fd = open (tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno), "cannot create %s: %s", tmp,
                 g_strerror (errno));
    return FALSE;
  }
  int cleanup = eb_cleanup_add (tmp);
  gsize done = 0;
  while (done < len) {
    ssize_t n = write (fd, data + done, len - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = n < 0 ? errno : ENOSPC;
      close (fd);
      unlink (tmp);
      eb_cleanup_remove (cleanup);
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot write %s: %s", tmp,
                   g_strerror (e));
      return FALSE;
    }
    done += (gsize) n;
  }
  struct stat st;
  if (fsync (fd) != 0 || (stat (path, &st) == 0 && fchmod (fd, st.st_mode & 07777) != 0)
      || close (fd) != 0) {
    int e = errno;
    unlink (tmp);
    eb_cleanup_remove (cleanup);
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot write %s: %s", tmp,
                 g_strerror (e));
    return FALSE;
  }
  /* A mail reader moved (new/ to cur/, a flag changed) or deleted the message
   * while it was being resolved: renaming now would bring back a deleted
   * message or make a second copy of a moved one. The check and the rename
   * are not atomic; Maildir has no lock to close that gap. */
  if (lstat (path, &st) != 0 || !S_ISREG (st.st_mode)) {
    unlink (tmp);
    eb_cleanup_remove (cleanup);
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_AGAIN,
                 "%s was moved or deleted during the run", path);
    return FALSE;
  }
  /* over the old name: at every moment the message exists exactly once */
  if (rename (tmp, path) != 0) {
    int e = errno;
    unlink (tmp);
    eb_cleanup_remove (cleanup);
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot rename %s: %s", tmp,
                 g_strerror (e));
    return FALSE;
  }
  eb_cleanup_remove (cleanup);
  g_autofree char *newname = with_size (name, len);
  g_autofree char *target = g_build_filename (sub, newname, NULL);
  if (strcmp (newname, name) != 0 && rename (path, target) != 0) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno), "cannot rename %s: %s", path,
                 g_strerror (errno));
    return FALSE;
  }
  *new_path = g_steal_pointer (&target);
  return fsync_dir (*new_path, error);
}
