/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-mbox.c - eb-mbox, eb-maildir, eb-replace and eb-cleanup in process: the
 * From_ line test (a table), mbox framing (both splitters, which must agree,
 * over a mapping large enough for the mapped one to give pages back), the
 * dot-lock and fcntl lock, the crash-safe replacement of a file, the Maildir
 * walk, the opening of a Maildir entry, the delivery of a rewritten Maildir
 * message, the virtual size and the copying of owner, mode and user.* extended
 * attributes. (The command over real mailboxes is
 * tests/integration/test-mailbox.c.) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <glib.h>
#include <glib/gstdio.h>
#include "eb-cleanup.h"
#include "eb-maildir.h"
#include "eb-mbox.h"
#include "eb-replace.h"

/* ---- helpers ------------------------------------------------------------- */

/* A fresh directory, removed with everything in it by tmpdir_free. */
static char *
tmpdir_new (void)
{
  g_autoptr (GError) e = NULL;
  char *d = g_dir_make_tmp ("extbody-test-mbox-XXXXXX", &e);
  g_assert_no_error (e);
  return d;
}

static void
rm_rf (const char *path)
{
  struct stat st;
  if (lstat (path, &st) != 0)
    return;
  if (S_ISDIR (st.st_mode)) {
    g_autoptr (GDir) d = g_dir_open (path, 0, NULL);
    const char *n;
    while (d && (n = g_dir_read_name (d))) {
      g_autofree char *p = g_build_filename (path, n, NULL);
      rm_rf (p);
    }
    g_rmdir (path);
  } else {
    g_unlink (path);
  }
}

static void
tmpdir_free (char *d)
{
  if (d)
    rm_rf (d);
  g_free (d);
}

typedef char TmpDir;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TmpDir, tmpdir_free)

static void
put (const char *path, const char *content)
{
  g_autoptr (GError) e = NULL;
  g_file_set_contents (path, content, -1, &e);
  g_assert_no_error (e);
}

static char *
get (const char *path)
{
  g_autoptr (GError) e = NULL;
  char *s = NULL;
  g_file_get_contents (path, &s, NULL, &e);
  g_assert_no_error (e);
  return s;
}

static gint
cmp_strp (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* The names in @dir, sorted, joined by " " ("" when empty). */
static char *
names_in (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_assert_nonnull (d);
  g_autoptr (GPtrArray) a = g_ptr_array_new_with_free_func (g_free);
  const char *n;
  while ((n = g_dir_read_name (d)))
    g_ptr_array_add (a, g_strdup (n));
  g_ptr_array_sort (a, cmp_strp);
  g_ptr_array_add (a, NULL);
  return g_strjoinv (" ", (char **) a->pdata);
}

/* ---- From_ lines ---------------------------------------------------------- */

static void
test_from_line_table (void)
{
  /* a sender of 994 bytes makes "From S Sat Jan  3 01:05:34 1996" exactly
   * 1024 bytes long, the longest a From_ line may be */
  g_autofree char *s994 = g_strnfill (994, 'a');
  g_autofree char *s995 = g_strnfill (995, 'a');
  g_autofree char *at_limit = g_strdup_printf ("From %s Sat Jan  3 01:05:34 1996\n", s994);
  g_autofree char *over_limit = g_strdup_printf ("From %s Sat Jan  3 01:05:34 1996\n", s995);
  g_assert_cmpuint (strlen (at_limit), ==, 1024 + 1);
  const struct {
    const char *line;
    gboolean    from;
  } cases[] = {
    /* real From_ lines: mutt, Postfix local(8), procmail, Dovecot, UUCP */
    { "From alice@example.com Sat Jan  3 01:05:34 1996\n", TRUE },
    { "From alice@example.com Sat Jan  3 01:05:34 1996", TRUE },          /* no newline */
    { "From alice@example.com Sat Jan  3 01:05:34 1996\r\n", TRUE },      /* CRLF */
    { "From alice@example.com Sat Jan 13 01:05:34 1996\n", TRUE },
    { "From alice@example.com Jan  3 01:05:34 1996\n", TRUE },            /* no weekday */
    { "From alice@example.com Sat Jan  3 01:05 1996\n", TRUE },           /* no seconds */
    { "From alice@example.com Sat Jan  3 01:05:34 +0100 1996\n", TRUE },  /* zone before the year */
    { "From alice@example.com Sat Jan  3 01:05:34 1996 +0100\n", TRUE },  /* zone after it */
    { "From alice@example.com Sat Jan  3 01:05:34 MET DST 1996\n", TRUE },
    { "From alice@example.com Sat Jan  3 01:05:34 96\n", TRUE },          /* two-digit year */
    { "From alice@example.com sat jan  3 01:05:34 1996\n", TRUE },        /* any case */
    { "From Sat Jan  3 01:05:34 1996\n", TRUE },                          /* no sender */
    { "From \"alice smith\"@example.com Sat Jan  3 01:05:34 1996\n", TRUE },
    { "From \"a \\\" b\"@example.com Sat Jan  3 01:05:34 1996\n", TRUE },
    { "From MAILER-DAEMON Fri Jul  8 12:08:34 2011\n", TRUE },
    { "From uucp Sat Jan  3 01:05:34 1996 remote from uunet\n", TRUE },
    { "From alice@example.com\tSat Jan  3 01:05:34 1996\n", TRUE },       /* a tab */
    { "From alice Sat Jan  3 01:05:34 1996\nFrom: not this line\n", TRUE },
    /* body text that starts "From " */
    { "From the desk of the editor\n", FALSE },
    { "From here on, Sat Jan  3 01:05:34 is when it began\n", FALSE },
    { "From alice@example.com\n", FALSE },                                 /* no date */
    { "From alice\nSat Jan  3 01:05:34 1996\n", FALSE },                  /* date on the next line */
    { "From alice Sat Foo  3 01:05:34 1996\n", FALSE },                   /* no month */
    { "From alice Sat Jan 123 01:05:34 1996\n", FALSE },                  /* a three-digit day */
    { "From alice Sat Jan  3 1:05:34 1996\n", FALSE },                    /* one-digit hour */
    { "From alice Sat Jan  3 01:05:3 1996\n", FALSE },                    /* one-digit second */
    { "From alice Sat Jan  3 01.05.34 1996\n", FALSE },
    { "From alice Sat Jan  3 01:05:34\n", FALSE },                        /* no year */
    { "From alice Sat Jan  3 01:05:34 19965\n", FALSE },                  /* a five-digit year */
    { "From alice Sat Jan  3 01:05:34 1996 and more words\n", FALSE },
    { "From uucp Sat Jan  3 01:05:34 1996 remote from\n", FALSE },        /* no host */
    { "From uucp Sat Jan  3 01:05:34 1996 remote from a b\n", FALSE },
    { "From a b c d e f g h i j k l m n o p q r s t Sat Jan  3 01:05:34 1996\n", FALSE },
    /* not "From " at all */
    { "from alice@example.com Sat Jan  3 01:05:34 1996\n", FALSE },
    { ">From alice@example.com Sat Jan  3 01:05:34 1996\n", FALSE },
    { " From alice@example.com Sat Jan  3 01:05:34 1996\n", FALSE },
    { "From:alice@example.com Sat Jan  3 01:05:34 1996\n", FALSE },
    { "From: alice@example.com\n", FALSE },
    { "From \n", FALSE },
    { "From ", FALSE },
    { "From", FALSE },
    { "", FALSE },
    /* the length limit */
    { at_limit, TRUE },
    { over_limit, FALSE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_test_message ("case %u: %.60s", i, cases[i].line);
    g_assert_cmpint (eb_mbox_is_from_line (cases[i].line, strlen (cases[i].line)), ==, cases[i].from);
  }
  /* only @len bytes are looked at */
  const char *l = "From alice Sat Jan  3 01:05:34 1996\n";
  g_assert_true (eb_mbox_is_from_line (l, strlen (l)));
  g_assert_false (eb_mbox_is_from_line (l, strlen ("From alice Sat Jan  3 01:05:34")));
  g_assert_false (eb_mbox_is_from_line (l, 4));
}

/* ---- framing ---------------------------------------------------------------- */

/* Split @buf both ways (the mapped one over a real read-only mapping of a
 * file holding @buf) and check they agree. Returns: (transfer full). */
static GArray *
split_both (const char *buf, gsize len)
{
  GArray *plain = eb_mbox_split (buf, len);
  g_autoptr (TmpDir) dir = tmpdir_new ();
  g_autofree char *path = g_build_filename (dir, "mbox", NULL);
  g_autoptr (GError) e = NULL;
  g_file_set_contents (path, buf, (gssize) len, &e);
  g_assert_no_error (e);
  g_autoptr (GMappedFile) map = g_mapped_file_new (path, FALSE, &e);
  g_assert_no_error (e);
  g_assert_cmpuint (g_mapped_file_get_length (map), ==, len);
  g_autoptr (GArray) mapped = eb_mbox_split_mapped (g_mapped_file_get_contents (map), len);
  g_assert_cmpuint (mapped->len, ==, plain->len);
  if (plain->len)
    g_assert_cmpmem (mapped->data, mapped->len * sizeof (EbMboxMsg), plain->data, plain->len * sizeof (EbMboxMsg));
  return plain;
}

#define FROM_A "From alice@example.com Sat Jan  3 01:05:34 1996"
#define FROM_B "From bob@example.com Sun Jan  4 11:00:00 1996"

static void
test_split_framing (void)
{
  static const struct {
    const char *name;
    const char *mbox;
    const char *msgs[4];   /* each message from its From_ line to its end, in order */
  } cases[] = {
    { "empty", "", { NULL } },
    { "not-an-mbox", "Subject: x\n\nbody\n", { NULL } },
    { "one", FROM_A "\nSubject: a\n\nbody\n", { FROM_A "\nSubject: a\n\nbody\n" } },
    { "two", FROM_A "\nSubject: a\n\nbody\n\n" FROM_B "\nSubject: b\n\nbody b\n",
      { FROM_A "\nSubject: a\n\nbody\n\n", FROM_B "\nSubject: b\n\nbody b\n" } },
    { "crlf", FROM_A "\r\nSubject: a\r\n\r\nbody\r\n\r\n" FROM_B "\r\nSubject: b\r\n\r\nb\r\n",
      { FROM_A "\r\nSubject: a\r\n\r\nbody\r\n\r\n", FROM_B "\r\nSubject: b\r\n\r\nb\r\n" } },
    { "no-trailing-newline", FROM_A "\nSubject: a\n\nbody", { FROM_A "\nSubject: a\n\nbody" } },
    { "last-from-line-without-newline", FROM_A "\n\nbody\n\n" FROM_B,
      { FROM_A "\n\nbody\n\n", FROM_B } },
    { "only-a-from-line", FROM_A "\n", { FROM_A "\n" } },
    { "empty-messages", FROM_A "\n\n" FROM_B "\n\n", { FROM_A "\n\n", FROM_B "\n\n" } },
    /* a From_ line not after a blank line is body text (mboxo without quoting) */
    { "from-without-blank-line", FROM_A "\n\nbody\n" FROM_B "\nmore\n",
      { FROM_A "\n\nbody\n" FROM_B "\nmore\n" } },
    /* "From " after a blank line that is not a From_ line is body text */
    { "from-in-body", FROM_A "\n\nhello\n\nFrom the desk of the editor\n",
      { FROM_A "\n\nhello\n\nFrom the desk of the editor\n" } },
    /* quoted, in either style */
    { "quoted-from", FROM_A "\n\nx\n\n>" FROM_B "\n>>" FROM_B "\n",
      { FROM_A "\n\nx\n\n>" FROM_B "\n>>" FROM_B "\n" } },
    /* a line of spaces is not blank; a lone CR line is (CRLF) */
    { "spaces-not-blank", FROM_A "\n\nx\n \n" FROM_B "\n", { FROM_A "\n\nx\n \n" FROM_B "\n" } },
    { "cr-line-is-blank", FROM_A "\n\nx\n\r\n" FROM_B "\n", { FROM_A "\n\nx\n\r\n", FROM_B "\n" } },
    /* the very first line only needs "From " */
    { "first-line-any-from", "From nobody\n\nx\n\n" FROM_B "\n", { "From nobody\n\nx\n\n", FROM_B "\n" } },
    { "blank-lines-between", FROM_A "\n\nx\n\n\n\n" FROM_B "\n\ny\n",
      { FROM_A "\n\nx\n\n\n\n", FROM_B "\n\ny\n" } },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_test_message ("case %s", cases[i].name);
    const char *buf = cases[i].mbox;
    gsize len = strlen (buf);
    g_autoptr (GArray) msgs = split_both (buf, len);
    guint want = 0;
    while (want < G_N_ELEMENTS (cases[i].msgs) && cases[i].msgs[want])
      want++;
    g_assert_cmpuint (msgs->len, ==, want);
    gsize off = 0;
    for (guint k = 0; k < want; k++) {
      const EbMboxMsg *m = &g_array_index (msgs, EbMboxMsg, k);
      const char *w = cases[i].msgs[k];
      const char *nl = strchr (w, '\n');
      gsize first = nl ? (gsize) (nl - w) + 1 : strlen (w);
      g_assert_cmpuint (m->from, ==, off);
      g_assert_cmpuint (m->start, ==, off + first);
      g_assert_cmpuint (m->end, ==, off + strlen (w));
      g_assert_cmpmem (buf + m->from, m->end - m->from, w, strlen (w));
      off += strlen (w);
    }
    g_assert_cmpuint (off, ==, want ? len : 0);
  }
}

/* A blank first line: the From_ line after it still starts the message (the
 * start of the file counts as after a blank line, and so does the blank
 * line); what comes before it belongs to no message. */
static void
test_split_leading_blank (void)
{
  const char *buf = "\n" FROM_A "\n\nx\n";
  g_autoptr (GArray) msgs = split_both (buf, strlen (buf));
  g_assert_cmpuint (msgs->len, ==, 1);
  g_assert_cmpuint (g_array_index (msgs, EbMboxMsg, 0).from, ==, 1);
  g_assert_cmpuint (g_array_index (msgs, EbMboxMsg, 0).end, ==, strlen (buf));
}

/* The resident size of the mapping that starts at @addr, from
 * /proc/self/smaps (-1 when it cannot be read). */
static gint64
mapping_rss_kib (const void *addr)
{
  g_autofree char *smaps = NULL;
  if (!g_file_get_contents ("/proc/self/smaps", &smaps, NULL, NULL))
    return -1;
  g_autofree char *start = g_strdup_printf ("%lx-", (unsigned long) (guintptr) addr);
  for (char *l = smaps; l && *l; l = strchr (l, '\n') ? strchr (l, '\n') + 1 : NULL) {
    if (!g_str_has_prefix (l, start))
      continue;
    for (char *r = strchr (l, '\n'); r && r[1]; r = strchr (r + 1, '\n'))
      if (g_str_has_prefix (r + 1, "Rss:"))
        return g_ascii_strtoll (r + 5, NULL, 10);
    return -1;
  }
  return -1;
}

/* Over 16 MiB the mapped splitter gives pages back as it goes: it must still
 * find exactly what the plain one finds, From_ lines across its release
 * points included, and the mapping must read the same afterwards. */
static void
test_split_mapped_large (void)
{
  GString *s = g_string_new (NULL);
  GRand *r = g_rand_new_with_seed (16);
  guint n = 0;
  while (s->len < (gsize) 40 << 20) {
    const char *eol = g_rand_int_range (r, 0, 8) == 0 ? "\r\n" : "\n";
    g_string_append_printf (s, "From sender%u@example.com Mon Feb %2d 10:%02d:%02d 2025%s", n,
                            g_rand_int_range (r, 1, 29), g_rand_int_range (r, 0, 60),
                            g_rand_int_range (r, 0, 60), eol);
    g_string_append_printf (s, "Subject: message %u%s%s", n, eol, eol);
    guint lines = (guint) g_rand_int_range (r, 0, 200);
    for (guint l = 0; l < lines; l++) {
      switch (g_rand_int_range (r, 0, 20)) {
      case 0:
        g_string_append_printf (s, "From the body, not a separator%s", eol);
        break;
      case 1:
        g_string_append_printf (s, ">From quoted Sat Jan  3 01:05:34 1996%s", eol);
        break;
      case 2:
        g_string_append (s, eol);
        break;
      default:
        for (guint k = (guint) g_rand_int_range (r, 1, 120); k > 0; k--)
          g_string_append_c (s, (char) ('a' + k % 26));
        g_string_append (s, eol);
      }
    }
    g_string_append (s, eol);
    n++;
  }
  g_rand_free (r);
  g_autoptr (TmpDir) dir = tmpdir_new ();
  g_autofree char *path = g_build_filename (dir, "mbox", NULL);
  g_autoptr (GError) e = NULL;
  g_file_set_contents (path, s->str, (gssize) s->len, &e);
  g_assert_no_error (e);
  g_autoptr (GArray) plain = eb_mbox_split (s->str, s->len);
  g_assert_cmpuint (plain->len, ==, n);
  g_autoptr (GMappedFile) map = g_mapped_file_new (path, FALSE, &e);
  g_assert_no_error (e);
  const char *m = g_mapped_file_get_contents (map);
  g_autoptr (GArray) mapped = eb_mbox_split_mapped (m, g_mapped_file_get_length (map));
  /* what was scanned was given back as it went: at most the last 16 MiB
   * chunk (and the page being looked at) is left resident, not 40 MiB */
  gint64 rss = mapping_rss_kib (m);
  g_test_message ("mapping resident after the mapped split: %" G_GINT64_FORMAT " KiB", rss);
  if (rss >= 0)
    g_assert_cmpint (rss, <=, 17 * 1024);
  g_assert_cmpuint (mapped->len, ==, plain->len);
  g_assert_cmpmem (mapped->data, mapped->len * sizeof (EbMboxMsg), plain->data, plain->len * sizeof (EbMboxMsg));
  g_assert_cmpmem (m, s->len, s->str, s->len);   /* the pages given back read the same */
  g_string_free (s, TRUE);
}

/* ---- the lock ---------------------------------------------------------------- */

/* A process that waits until its standard input (the pipe whose write end is
 * *@wfd) closes; with @fcntl_path it first takes a write lock on that file.
 * Returns its pid once it is ready. */
static pid_t
waiting_child (const char *fcntl_path, int *wfd)
{
  int go[2], ready[2];
  g_assert_cmpint (pipe (go), ==, 0);
  g_assert_cmpint (pipe (ready), ==, 0);
  pid_t pid = fork ();
  g_assert_cmpint (pid, >=, 0);
  if (pid == 0) {
    close (go[1]);
    close (ready[0]);
    if (fcntl_path) {
      int fd = open (fcntl_path, O_RDWR);
      struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
      if (fd < 0 || fcntl (fd, F_SETLK, &fl) != 0)
        _exit (1);
    }
    char c = 'r';
    if (write (ready[1], &c, 1) != 1)
      _exit (1);
    while (read (go[0], &c, 1) > 0) {
    }
    _exit (0);
  }
  close (go[0]);
  close (ready[1]);
  char c;
  g_assert_cmpint (read (ready[0], &c, 1), ==, 1);
  close (ready[0]);
  *wfd = go[1];
  return pid;
}

static void
end_child (pid_t pid, int wfd)
{
  close (wfd);
  int status = 0;
  g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
  g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
}

/* The pid of a process that has ended (and been reaped). */
static pid_t
dead_pid (void)
{
  pid_t pid = fork ();
  g_assert_cmpint (pid, >=, 0);
  if (pid == 0)
    _exit (0);
  g_assert_cmpint (waitpid (pid, NULL, 0), ==, pid);
  return pid;
}

/* Is a write lock held on @path by another process (F_GETLK from a child,
 * since a process never sees its own locks as conflicting)? */
static gboolean
fcntl_locked_elsewhere (const char *path)
{
  pid_t pid = fork ();
  g_assert_cmpint (pid, >=, 0);
  if (pid == 0) {
    int fd = open (path, O_RDWR);
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
    if (fd < 0 || fcntl (fd, F_GETLK, &fl) != 0)
      _exit (2);
    _exit (fl.l_type == F_UNLCK ? 0 : 1);
  }
  int status = 0;
  g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
  g_assert_true (WIFEXITED (status) && WEXITSTATUS (status) != 2);
  return WEXITSTATUS (status) == 1;
}

typedef struct {
  char *dir, *path, *dot;
  int   fd;
} LockFixture;

static void
lock_setup (LockFixture *f, gconstpointer data)
{
  (void) data;
  f->dir = tmpdir_new ();
  f->path = g_build_filename (f->dir, "mbox", NULL);
  f->dot = g_strconcat (f->path, ".lock", NULL);
  put (f->path, FROM_A "\n\nx\n");
  f->fd = open (f->path, O_RDWR | O_CLOEXEC);
  g_assert_cmpint (f->fd, >=, 0);
}

static void
lock_teardown (LockFixture *f, gconstpointer data)
{
  (void) data;
  close (f->fd);
  tmpdir_free (f->dir);
  g_free (f->path);
  g_free (f->dot);
}

static void
test_lock_takes_both (LockFixture *f, gconstpointer data)
{
  (void) data;
  g_assert_false (fcntl_locked_elsewhere (f->path));
  g_autoptr (GError) e = NULL;
  EbMboxLock *l = eb_mbox_lock (f->path, f->fd, 0, &e);
  g_assert_no_error (e);
  g_assert_nonnull (l);
  /* FILE.lock, holding our pid, made with O_EXCL: a second creator fails */
  g_autofree char *content = get (f->dot);
  g_autofree char *want = g_strdup_printf ("%ld\n", (long) getpid ());
  g_assert_cmpstr (content, ==, want);
  int again = open (f->dot, O_WRONLY | O_CREAT | O_EXCL, 0644);
  g_assert_cmpint (again, <, 0);
  g_assert_cmpint (errno, ==, EEXIST);
  g_assert_true (fcntl_locked_elsewhere (f->path));
  /* a second locker (the same pid, alive) times out */
  int fd2 = open (f->path, O_RDWR | O_CLOEXEC);
  EbMboxLock *l2 = eb_mbox_lock (f->path, fd2, 0, &e);
  g_assert_null (l2);
  g_assert_error (e, G_FILE_ERROR, G_FILE_ERROR_AGAIN);
  close (fd2);
  g_assert_true (g_file_test (f->dot, G_FILE_TEST_EXISTS));   /* not taken from its holder */
  eb_mbox_unlock (l);
  g_assert_false (g_file_test (f->dot, G_FILE_TEST_EXISTS));
  g_assert_false (fcntl_locked_elsewhere (f->path));
  g_autofree char *names = names_in (f->dir);
  g_assert_cmpstr (names, ==, "mbox");
}

static void
test_lock_stale_removed (LockFixture *f, gconstpointer data)
{
  (void) data;
  pid_t dead = dead_pid ();
  g_autofree char *stale = g_strdup_printf ("%ld\n", (long) dead);
  put (f->dot, stale);
  g_autoptr (GError) e = NULL;
  EbMboxLock *l = eb_mbox_lock (f->path, f->fd, 0, &e);
  g_assert_no_error (e);
  g_assert_nonnull (l);
  g_autofree char *content = get (f->dot);
  g_autofree char *want = g_strdup_printf ("%ld\n", (long) getpid ());
  g_assert_cmpstr (content, ==, want);
  eb_mbox_unlock (l);
  g_assert_false (g_file_test (f->dot, G_FILE_TEST_EXISTS));
}

static void
test_lock_live_holder_times_out (LockFixture *f, gconstpointer data)
{
  (void) data;
  int wfd;
  pid_t holder = waiting_child (NULL, &wfd);
  g_autofree char *held = g_strdup_printf ("%ld\n", (long) holder);
  put (f->dot, held);
  g_autoptr (GError) e = NULL;
  EbMboxLock *l = eb_mbox_lock (f->path, f->fd, 1, &e);   /* waits a second, then gives up */
  g_assert_null (l);
  g_assert_error (e, G_FILE_ERROR, G_FILE_ERROR_AGAIN);
  g_assert_nonnull (strstr (e->message, "locked"));
  g_autofree char *content = get (f->dot);
  g_assert_cmpstr (content, ==, held);   /* left to its holder */
  g_assert_false (fcntl_locked_elsewhere (f->path));
  /* the holder ends without removing it: now it is stale */
  end_child (holder, wfd);
  g_clear_error (&e);
  l = eb_mbox_lock (f->path, f->fd, 0, &e);
  g_assert_no_error (e);
  eb_mbox_unlock (l);
}

/* A lock file that names no pid (another tool's, or empty) is never taken for stale. */
static void
test_lock_without_pid_kept (LockFixture *f, gconstpointer data)
{
  (void) data;
  const char *contents[] = { "", "not a pid\n", "0\n", "-1\n" };
  for (guint i = 0; i < G_N_ELEMENTS (contents); i++) {
    put (f->dot, contents[i]);
    g_autoptr (GError) e = NULL;
    EbMboxLock *l = eb_mbox_lock (f->path, f->fd, 0, &e);
    g_assert_null (l);
    g_assert_error (e, G_FILE_ERROR, G_FILE_ERROR_AGAIN);
    g_autofree char *content = get (f->dot);
    g_assert_cmpstr (content, ==, contents[i]);
  }
}

/* Another program holds the fcntl lock: the dot-lock just made is removed again. */
static void
test_lock_fcntl_held (LockFixture *f, gconstpointer data)
{
  (void) data;
  int wfd;
  pid_t holder = waiting_child (f->path, &wfd);
  g_assert_true (fcntl_locked_elsewhere (f->path));
  g_autoptr (GError) e = NULL;
  EbMboxLock *l = eb_mbox_lock (f->path, f->fd, 0, &e);
  g_assert_null (l);
  g_assert_error (e, G_FILE_ERROR, G_FILE_ERROR_AGAIN);
  g_assert_nonnull (strstr (e->message, "fcntl"));
  g_assert_false (g_file_test (f->dot, G_FILE_TEST_EXISTS));
  end_child (holder, wfd);
  g_clear_error (&e);
  l = eb_mbox_lock (f->path, f->fd, 0, &e);
  g_assert_no_error (e);
  eb_mbox_unlock (l);
}

static void
test_lock_cannot_create (void)
{
  g_autoptr (TmpDir) dir = tmpdir_new ();
  g_autofree char *path = g_build_filename (dir, "missing", "mbox", NULL);
  g_autoptr (GError) e = NULL;
  int fd = open (dir, O_RDONLY | O_DIRECTORY);
  EbMboxLock *l = eb_mbox_lock (path, fd, 5, &e);   /* fails at once: no wait */
  close (fd);
  g_assert_null (l);
  g_assert_error (e, G_FILE_ERROR, G_FILE_ERROR_NOENT);
}

/* ---- eb_replace_file ------------------------------------------------------- */

typedef struct {
  const char *text;      /* written */
  gboolean    changed;
  gboolean    fail;      /* write part of it, then fail */
  const char *append_to; /* a path another writer appends to meanwhile */
} Writer;

static gboolean
write_text (int fd, gpointer data, gboolean *changed, GError **error)
{
  const Writer *w = data;
  gsize len = strlen (w->text);
  if (w->fail)
    len /= 2;
  g_assert_cmpint (write (fd, w->text, len), ==, (gssize) len);
  if (w->append_to) {
    int a = open (w->append_to, O_WRONLY | O_APPEND);
    g_assert_cmpint (a, >=, 0);
    g_assert_cmpint (write (a, "late\n", 5), ==, 5);
    close (a);
  }
  if (w->fail) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC, "no space left (test)");
    return FALSE;
  }
  *changed = w->changed;
  return TRUE;
}

typedef struct {
  char       *dir, *path;
  int         fd;
  struct stat before;
} ReplaceFixture;

static void
replace_setup (ReplaceFixture *f, gconstpointer data)
{
  (void) data;
  f->dir = tmpdir_new ();
  f->path = g_build_filename (f->dir, "mbox", NULL);
  put (f->path, "old content\n");
  g_assert_cmpint (chmod (f->path, 0640), ==, 0);
  if (geteuid () == 0)
    g_assert_cmpint (chown (f->path, 1234, 5678), ==, 0);
  /* a time in the past, so that any write would show */
  struct timespec t[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
  g_assert_cmpint (utimensat (AT_FDCWD, f->path, t, 0), ==, 0);
  f->fd = open (f->path, O_RDONLY | O_CLOEXEC);
  g_assert_cmpint (f->fd, >=, 0);
  g_assert_cmpint (stat (f->path, &f->before), ==, 0);
}

static void
replace_teardown (ReplaceFixture *f, gconstpointer data)
{
  (void) data;
  close (f->fd);
  tmpdir_free (f->dir);
  g_free (f->path);
}

/* @path is the file it was: same inode, times, size and content. */
static void
assert_untouched (ReplaceFixture *f, const char *content)
{
  struct stat st;
  g_assert_cmpint (stat (f->path, &st), ==, 0);
  g_assert_cmpuint (st.st_ino, ==, f->before.st_ino);
  g_assert_cmpint (st.st_mtim.tv_sec, ==, f->before.st_mtim.tv_sec);
  g_assert_cmpint (st.st_mtim.tv_nsec, ==, f->before.st_mtim.tv_nsec);
  g_assert_cmpint (st.st_ctim.tv_sec, ==, f->before.st_ctim.tv_sec);
  g_assert_cmpint (st.st_ctim.tv_nsec, ==, f->before.st_ctim.tv_nsec);
  g_assert_cmpuint (st.st_nlink, ==, 1);
  g_autofree char *now = get (f->path);
  g_assert_cmpstr (now, ==, content);
}

static void
test_replace_unchanged (ReplaceFixture *f, gconstpointer data)
{
  (void) data;
  Writer w = { "old content\n", FALSE };
  g_autofree char *backup = g_build_filename (f->dir, "mbox.bak", NULL);
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_replace_file (f->path, f->fd, backup, write_text, &w, &e));
  g_assert_no_error (e);
  assert_untouched (f, "old content\n");
  g_autofree char *names = names_in (f->dir);
  g_assert_cmpstr (names, ==, "mbox");   /* no backup, no temporary file */
}

static void
test_replace_changed (ReplaceFixture *f, gconstpointer data)
{
  (void) data;
  Writer w = { "new content\n", TRUE };
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_replace_file (f->path, f->fd, NULL, write_text, &w, &e));
  g_assert_no_error (e);
  g_autofree char *now = get (f->path);
  g_assert_cmpstr (now, ==, "new content\n");
  struct stat st;
  g_assert_cmpint (stat (f->path, &st), ==, 0);
  g_assert_cmpuint (st.st_ino, !=, f->before.st_ino);
  g_assert_cmpint (st.st_mode & 07777, ==, 0640);
  g_assert_cmpint (st.st_uid, ==, f->before.st_uid);
  g_assert_cmpint (st.st_gid, ==, f->before.st_gid);
  /* the old file, still open, is intact */
  char buf[64] = { 0 };
  g_assert_cmpint (pread (f->fd, buf, sizeof buf - 1, 0), ==, 12);
  g_assert_cmpstr (buf, ==, "old content\n");
  g_autofree char *names = names_in (f->dir);
  g_assert_cmpstr (names, ==, "mbox");
}

static void
test_replace_backup (ReplaceFixture *f, gconstpointer data)
{
  (void) data;
  g_autofree char *backup = g_build_filename (f->dir, "mbox.bak", NULL);
  put (backup, "an older backup\n");   /* replaced by the old file */
  Writer w = { "new content\n", TRUE };
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_replace_file (f->path, f->fd, backup, write_text, &w, &e));
  g_assert_no_error (e);
  struct stat st;
  g_assert_cmpint (stat (backup, &st), ==, 0);
  g_assert_cmpuint (st.st_ino, ==, f->before.st_ino);   /* a link to the old file, not a copy */
  g_autofree char *old = get (backup);
  g_assert_cmpstr (old, ==, "old content\n");
  g_autofree char *now = get (f->path);
  g_assert_cmpstr (now, ==, "new content\n");
  g_autofree char *names = names_in (f->dir);
  g_assert_cmpstr (names, ==, "mbox mbox.bak");
}

static void
test_replace_write_error (ReplaceFixture *f, gconstpointer data)
{
  (void) data;
  Writer w = { "new content that will not fit\n", TRUE, TRUE };
  g_autofree char *backup = g_build_filename (f->dir, "mbox.bak", NULL);
  g_autoptr (GError) e = NULL;
  g_assert_false (eb_replace_file (f->path, f->fd, backup, write_text, &w, &e));
  g_assert_error (e, G_FILE_ERROR, G_FILE_ERROR_NOSPC);
  assert_untouched (f, "old content\n");
  g_autofree char *names = names_in (f->dir);
  g_assert_cmpstr (names, ==, "mbox");
}

/* A writer that does not lock appended meanwhile: nothing renamed over it. */
static void
test_replace_changed_meanwhile (ReplaceFixture *f, gconstpointer data)
{
  (void) data;
  Writer w = { "new content\n", TRUE, FALSE, f->path };
  g_autoptr (GError) e = NULL;
  g_assert_false (eb_replace_file (f->path, f->fd, NULL, write_text, &w, &e));
  g_assert_error (e, G_FILE_ERROR, G_FILE_ERROR_AGAIN);
  struct stat st;
  g_assert_cmpint (stat (f->path, &st), ==, 0);
  g_assert_cmpuint (st.st_ino, ==, f->before.st_ino);
  g_autofree char *now = get (f->path);
  g_assert_cmpstr (now, ==, "old content\nlate\n");
  g_autofree char *names = names_in (f->dir);
  g_assert_cmpstr (names, ==, "mbox");
}

/* ---- Maildir --------------------------------------------------------------- */

static void
make_maildir (const char *md)
{
  const char *subs[] = { "cur", "new", "tmp" };
  g_assert_cmpint (g_mkdir_with_parents (md, 0700), ==, 0);
  for (guint i = 0; i < 3; i++) {
    g_autofree char *d = g_build_filename (md, subs[i], NULL);
    g_assert_cmpint (g_mkdir (d, 0700), ==, 0);
  }
}

static void
put_in (const char *dir, const char *name, const char *content)
{
  g_autofree char *p = g_build_filename (dir, name, NULL);
  put (p, content);
}

/* The paths of @a relative to @base, joined by " ". */
static char *
relative (GPtrArray *a, const char *base)
{
  GString *s = g_string_new (NULL);
  gsize n = strlen (base);
  for (guint i = 0; i < a->len; i++) {
    const char *p = g_ptr_array_index (a, i);
    g_assert_true (g_str_has_prefix (p, base) && p[n] == '/');
    g_string_append_printf (s, "%s%s", i ? " " : "", p + n + 1);
  }
  return g_string_free (s, FALSE);
}

static void
test_maildir_list (void)
{
  g_autoptr (TmpDir) dir = tmpdir_new ();
  g_autofree char *md = g_build_filename (dir, "Maildir", NULL);
  make_maildir (md);
  put_in (md, "cur/3.M1P1.h:2,S", "c");
  put_in (md, "cur/1.M1P1.h:2,", "a");
  put_in (md, "cur/.hidden", "x");
  put_in (md, "new/2.M1P1.h", "b");
  put_in (md, "tmp/0.M1P1.h", "being delivered");
  g_autofree char *sub = g_build_filename (md, ".Sent", NULL);
  make_maildir (sub);
  put_in (sub, "cur/5.M1P1.h:2,S", "e");
  put_in (sub, "new/4.M1P1.h", "d");
  put_in (md, ".not-a-folder", "a file");
  g_autofree char *nomd = g_build_filename (md, ".Half", NULL);   /* no new/ and tmp/: not a folder */
  g_assert_cmpint (g_mkdir_with_parents (nomd, 0700), ==, 0);
  g_autofree char *nomd_cur = g_build_filename (nomd, "cur", NULL);
  g_assert_cmpint (g_mkdir (nomd_cur, 0700), ==, 0);
  put_in (nomd_cur, "9.M1P1.h", "z");

  g_autoptr (GError) e = NULL;
  g_autoptr (GPtrArray) skipped = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) flat = eb_maildir_list_full (md, FALSE, skipped, &e);
  g_assert_no_error (e);
  g_autofree char *f = relative (flat, md);
  g_assert_cmpstr (f, ==, "cur/1.M1P1.h:2, cur/3.M1P1.h:2,S new/2.M1P1.h");
  g_assert_cmpuint (skipped->len, ==, 0);

  g_autoptr (GPtrArray) all = eb_maildir_list_full (md, TRUE, skipped, &e);
  g_assert_no_error (e);
  g_autofree char *a = relative (all, md);
  g_assert_cmpstr (a, ==, ".Sent/cur/5.M1P1.h:2,S .Sent/new/4.M1P1.h cur/1.M1P1.h:2, cur/3.M1P1.h:2,S new/2.M1P1.h");
  g_assert_cmpuint (skipped->len, ==, 0);

  /* the plain listing is the same walk */
  g_autoptr (GPtrArray) plain = eb_maildir_list (md, TRUE, &e);
  g_assert_no_error (e);
  g_autofree char *p = relative (plain, md);
  g_assert_cmpstr (p, ==, a);

  /* not a directory */
  g_autofree char *missing = g_build_filename (dir, "nothing", NULL);
  g_autoptr (GPtrArray) none = eb_maildir_list_full (missing, FALSE, skipped, &e);
  g_assert_null (none);
  g_assert_error (e, G_FILE_ERROR, G_FILE_ERROR_NOENT);
}

static void
test_maildir_list_symlinks (void)
{
  g_autoptr (TmpDir) dir = tmpdir_new ();
  g_autofree char *md = g_build_filename (dir, "Maildir", NULL);
  g_autofree char *elsewhere = g_build_filename (dir, "elsewhere", NULL);
  make_maildir (md);
  make_maildir (elsewhere);
  put_in (elsewhere, "cur/1.M1P1.h:2,", "not ours");
  put_in (md, "new/2.M1P1.h", "ours");
  /* cur/ is a link to another Maildir's cur/, .Other a link to a whole Maildir */
  g_autofree char *cur = g_build_filename (md, "cur", NULL);
  g_autofree char *ecur = g_build_filename (elsewhere, "cur", NULL);
  g_assert_cmpint (g_rmdir (cur), ==, 0);
  g_assert_cmpint (symlink (ecur, cur), ==, 0);
  g_autofree char *other = g_build_filename (md, ".Other", NULL);
  g_assert_cmpint (symlink (elsewhere, other), ==, 0);

  g_autoptr (GError) e = NULL;
  g_autoptr (GPtrArray) skipped = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) l = eb_maildir_list_full (md, TRUE, skipped, &e);
  g_assert_no_error (e);
  g_autofree char *got = relative (l, md);
  g_assert_cmpstr (got, ==, "new/2.M1P1.h");
  g_assert_cmpuint (skipped->len, ==, 2);
  g_autofree char *want_cur = g_strdup_printf ("%s: a symbolic link, not followed", cur);
  g_autofree char *want_other = g_strdup_printf ("%s: a symbolic link, not followed", other);
  gboolean saw_cur = FALSE, saw_other = FALSE;
  for (guint i = 0; i < skipped->len; i++) {
    saw_cur |= g_strcmp0 (skipped->pdata[i], want_cur) == 0;
    saw_other |= g_strcmp0 (skipped->pdata[i], want_other) == 0;
  }
  g_assert_true (saw_cur);
  g_assert_true (saw_other);

  /* the Maildir named may itself be reached through a link */
  g_autofree char *alias = g_build_filename (dir, "alias", NULL);
  g_assert_cmpint (symlink (elsewhere, alias), ==, 0);
  g_autoptr (GPtrArray) via = eb_maildir_list_full (alias, FALSE, NULL, &e);
  g_assert_no_error (e);
  g_autofree char *v = relative (via, alias);
  g_assert_cmpstr (v, ==, "cur/1.M1P1.h:2,");
}

static void
test_maildir_map_entry (void)
{
  g_autoptr (TmpDir) dir = tmpdir_new ();
  g_autofree char *reg = g_build_filename (dir, "regular", NULL);
  g_autofree char *empty = g_build_filename (dir, "empty", NULL);
  g_autofree char *fifo = g_build_filename (dir, "fifo", NULL);
  g_autofree char *link = g_build_filename (dir, "link", NULL);
  g_autofree char *sub = g_build_filename (dir, "subdir", NULL);
  g_autofree char *gone = g_build_filename (dir, "gone", NULL);
  put (reg, "Subject: x\n\nbody\n");
  put (empty, "");
  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  g_assert_cmpint (symlink (reg, link), ==, 0);
  g_assert_cmpint (g_mkdir (sub, 0700), ==, 0);

  const char *why = "unset";
  g_autoptr (GMappedFile) m = eb_maildir_map_entry (reg, &why);
  g_assert_nonnull (m);
  g_assert_null (why);
  g_assert_cmpmem (g_mapped_file_get_contents (m), g_mapped_file_get_length (m), "Subject: x\n\nbody\n", 17);

  why = "unset";
  g_autoptr (GMappedFile) me = eb_maildir_map_entry (empty, &why);
  g_assert_nonnull (me);
  g_assert_null (why);
  g_assert_cmpuint (g_mapped_file_get_length (me), ==, 0);

  /* a FIFO with no writer: refused at once, never waited on (a wait here
   * would hang the test until ctest's timeout fails it) */
  const struct {
    const char *path;
    const char *why;
  } refused[] = {
    { fifo, "not a regular file" },
    { link, "not a regular file" },
    { sub, "not a regular file" },
    { gone, "gone since the folder was listed" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (refused); i++) {
    why = NULL;
    GMappedFile *r = eb_maildir_map_entry (refused[i].path, &why);
    g_test_message ("%s", refused[i].path);
    g_assert_null (r);
    g_assert_cmpstr (why, ==, refused[i].why);
  }
}

/* Replace @name in @md/@sub holding @old by @data; returns the new name (in
 * the same folder). Checks: the old file gone, tmp/ empty, mode kept. */
static char *
replace_in (const char *md, const char *sub, const char *name, const char *old, const char *data)
{
  g_autofree char *folder = g_build_filename (md, sub, NULL);
  g_autofree char *path = g_build_filename (folder, name, NULL);
  put (path, old);
  g_assert_cmpint (chmod (path, 0604), ==, 0);
  g_autofree char *new_path = NULL;
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_maildir_replace (path, data, strlen (data), &new_path, &e));
  g_assert_no_error (e);
  g_assert_nonnull (new_path);
  g_autofree char *new_dir = g_path_get_dirname (new_path);
  g_assert_cmpstr (new_dir, ==, folder);
  g_assert_false (g_file_test (path, G_FILE_TEST_EXISTS));
  g_autofree char *content = get (new_path);
  g_assert_cmpstr (content, ==, data);
  struct stat st;
  g_assert_cmpint (lstat (new_path, &st), ==, 0);
  g_assert_true (S_ISREG (st.st_mode));
  g_assert_cmpint (st.st_mode & 07777, ==, 0604);
  g_assert_cmpuint (st.st_nlink, ==, 1);   /* the tmp/ name is gone */
  g_autofree char *tmp = g_build_filename (md, "tmp", NULL);
  g_autofree char *in_tmp = names_in (tmp);
  g_assert_cmpstr (in_tmp, ==, "");
  return g_path_get_basename (new_path);
}

static void
test_maildir_replace (void)
{
  g_autoptr (TmpDir) dir = tmpdir_new ();
  g_autofree char *md = g_build_filename (dir, "Maildir", NULL);
  make_maildir (md);
  /* "x\ny\nzz\n": 7 bytes, 10 with CRLF line ends */
  const char *old_name = "1700000000.M1P1Q1.host,S=10,W=12:2,RS";
  g_autofree char *n1 = replace_in (md, "cur", old_name, "aaaa\nbbbb\n", "x\ny\nzz\n");
  g_assert_true (g_str_has_suffix (n1, ",S=7,W=10:2,RS"));
  g_assert_false (g_str_has_prefix (n1, "1700000000.M1P1Q1.host"));   /* a new base: a new UID */
  g_assert_null (strchr (n1, '/'));
  g_autofree char *cur = g_build_filename (md, "cur", NULL);
  g_autofree char *in_cur = names_in (cur);
  g_assert_cmpstr (in_cur, ==, n1);

  /* the order of S= and W= kept, other fields kept, flags kept */
  g_autofree char *n2 = replace_in (md, "cur", "1.M2P2.host,W=99,X=1,S=88:2,FS", "old\n", "new\r\nnew\n");
  g_assert_true (g_str_has_suffix (n2, ",W=10,X=1,S=9:2,FS"));
  /* new/: no info, no sizes: none added */
  g_autofree char *n3 = replace_in (md, "new", "1.M3P3.host", "old\n", "new\n");
  g_assert_null (strchr (n3, ','));
  g_assert_null (strchr (n3, ':'));
  g_assert_cmpstr (n3, !=, "1.M3P3.host");
  /* a comma in the info part is flags, not sizes */
  g_autofree char *n4 = replace_in (md, "cur", "1.M4P4.host:2,S", "old\n", "new\n");
  g_assert_true (g_str_has_suffix (n4, ":2,S"));
  g_assert_null (strstr (n4, "S="));
  /* two deliveries in one second get two names */
  g_assert_cmpstr (n1, !=, n2);
  g_autofree char *b1 = g_strndup (n1, strcspn (n1, ",:"));
  g_autofree char *b4 = g_strndup (n4, strcspn (n4, ",:"));
  g_assert_cmpstr (b1, !=, b4);

  /* moved away meanwhile: nothing delivered */
  g_autofree char *missing = g_build_filename (md, "cur", "2.M5P5.host:2,S", NULL);
  g_autofree char *np = NULL;
  g_autoptr (GError) e = NULL;
  g_assert_false (eb_maildir_replace (missing, "x\n", 2, &np, &e));
  g_assert_error (e, G_FILE_ERROR, G_FILE_ERROR_AGAIN);
  g_assert_null (np);
  g_autofree char *in_cur2 = names_in (cur);
  g_autofree char *want = g_strdup_printf ("%s %s %s", n1, n2, n4);
  g_auto (GStrv) w = g_strsplit (want, " ", -1);
  for (guint i = 0; w[i]; i++)
    g_assert_nonnull (strstr (in_cur2, w[i]));
  g_assert_cmpuint (strlen (in_cur2), ==, strlen (want));

  /* tmp/ a symbolic link: refused, nothing written through it */
  g_autofree char *tmp = g_build_filename (md, "tmp", NULL);
  g_autofree char *outside = g_build_filename (dir, "outside", NULL);
  g_assert_cmpint (g_mkdir (outside, 0700), ==, 0);
  g_assert_cmpint (g_rmdir (tmp), ==, 0);
  g_assert_cmpint (symlink (outside, tmp), ==, 0);
  g_autofree char *p = g_build_filename (md, "cur", n1, NULL);
  g_clear_error (&e);
  g_assert_false (eb_maildir_replace (p, "y\n", 2, &np, &e));
  g_assert_error (e, G_FILE_ERROR, G_FILE_ERROR_NOTDIR);
  g_autofree char *in_outside = names_in (outside);
  g_assert_cmpstr (in_outside, ==, "");
  g_autofree char *still = get (p);
  g_assert_cmpstr (still, ==, "x\ny\nzz\n");
}

static void
test_maildir_virtual_size (void)
{
  const struct {
    const char *data;
    guint64     size;
  } cases[] = {
    { "", 0 },
    { "a", 1 },
    { "\n", 2 },
    { "\r\n", 2 },
    { "\n\n", 4 },
    { "\r\n\r\n", 4 },
    { "a\n", 3 },
    { "a\r\n", 3 },
    { "a\r\nb\n", 6 },
    { "a\nb\r\nc", 7 },
    { "\r", 1 },
    { "\r\r\n", 3 },
    { "\n\r\n", 4 },
    { "Subject: x\n\nbody\n", 20 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_test_message ("case %u", i);
    g_assert_cmpuint (eb_maildir_virtual_size (cases[i].data, strlen (cases[i].data)), ==, cases[i].size);
  }
}

/* ---- owner, mode, extended attributes -------------------------------------- */

static void
test_copy_attributes_mode_owner (void)
{
  g_autoptr (TmpDir) dir = tmpdir_new ();
  g_autofree char *a = g_build_filename (dir, "from", NULL);
  g_autofree char *b = g_build_filename (dir, "to", NULL);
  put (a, "a");
  put (b, "b");
  g_assert_cmpint (chmod (a, 02604), ==, 0);
  g_assert_cmpint (chmod (b, 0600), ==, 0);
  gboolean root = geteuid () == 0;
  if (root)
    g_assert_cmpint (chown (a, 4321, 8765), ==, 0);
  int from = open (a, O_RDONLY), to = open (b, O_RDWR);
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_replace_copy_attributes (from, to, &e));
  g_assert_no_error (e);
  close (from);
  close (to);
  struct stat sa, sb;
  g_assert_cmpint (stat (a, &sa), ==, 0);
  g_assert_cmpint (stat (b, &sb), ==, 0);
  g_assert_cmpint (sb.st_mode & 07777, ==, sa.st_mode & 07777);
  g_assert_cmpint (sb.st_uid, ==, root ? 4321 : geteuid ());
  g_assert_cmpint (sb.st_gid, ==, root ? 8765 : sa.st_gid);
}

static void
test_copy_attributes_xattr (void)
{
  g_autoptr (TmpDir) dir = tmpdir_new ();
  g_autofree char *a = g_build_filename (dir, "from", NULL);
  g_autofree char *b = g_build_filename (dir, "to", NULL);
  put (a, "a");
  put (b, "b");
  static const char value[] = "value\0with a NUL";
  if (setxattr (a, "user.extbody.test", value, sizeof value, 0) != 0) {
    g_autofree char *why = g_strdup_printf ("the file system refuses user.* extended attributes: %s",
                                            g_strerror (errno));
    g_test_skip (why);
    return;
  }
  g_assert_cmpint (setxattr (a, "user.extbody.empty", "", 0, 0), ==, 0);
  /* a name outside user.* (root may set trusted.* where the kernel lets it) is not copied */
  gboolean trusted = setxattr (a, "trusted.extbody.test", "t", 1, 0) == 0;
  int from = open (a, O_RDONLY), to = open (b, O_RDWR);
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_replace_copy_attributes (from, to, &e));
  g_assert_no_error (e);
  close (from);
  close (to);
  char got[64];
  ssize_t n = getxattr (b, "user.extbody.test", got, sizeof got);
  g_assert_cmpint (n, ==, (gssize) sizeof value);
  g_assert_cmpmem (got, (gsize) n, value, sizeof value);
  g_assert_cmpint (getxattr (b, "user.extbody.empty", got, sizeof got), ==, 0);
  if (trusted) {
    g_assert_cmpint (getxattr (b, "trusted.extbody.test", got, sizeof got), <, 0);
    g_assert_cmpint (errno, ==, ENODATA);
  }
  /* and eb_maildir_replace carries them to the new message */
  g_autofree char *md = g_build_filename (dir, "Maildir", NULL);
  make_maildir (md);
  g_autofree char *msg = g_build_filename (md, "cur", "1.M1P1.host:2,S", NULL);
  put (msg, "old\n");
  g_assert_cmpint (setxattr (msg, "user.extbody.test", value, sizeof value, 0), ==, 0);
  g_autofree char *np = NULL;
  g_assert_true (eb_maildir_replace (msg, "new\n", 4, &np, &e));
  g_assert_no_error (e);
  n = getxattr (np, "user.extbody.test", got, sizeof got);
  g_assert_cmpint (n, ==, (gssize) sizeof value);
  g_assert_cmpmem (got, (gsize) n, value, sizeof value);
}

/* ---- the cleanup list ------------------------------------------------------ */

static void
test_cleanup_and_stale (void)
{
  g_autoptr (TmpDir) dir = tmpdir_new ();
  g_autofree char *a = g_build_filename (dir, "a", NULL);
  g_autofree char *b = g_build_filename (dir, "b", NULL);
  put (a, "a");
  put (b, "b");
  int sa = eb_cleanup_add (a);
  int sb = eb_cleanup_add (b);
  g_assert_cmpint (sa, >=, 0);
  g_assert_cmpint (sb, >=, 0);
  g_assert_cmpint (sa, !=, sb);
  eb_cleanup_remove (sb);
  eb_cleanup_run ();
  g_assert_false (g_file_test (a, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (b, G_FILE_TEST_EXISTS));   /* removed from the list: kept */
  eb_cleanup_remove (sa);
  /* a path too long to hold is not covered */
  g_autofree char *longp = g_strnfill (5000, 'x');
  g_assert_cmpint (eb_cleanup_add (longp), ==, -1);

  /* what a killed run left beside an mbox: its own temporary names only */
  g_autofree char *mbox = g_build_filename (dir, "inbox", NULL);
  put (mbox, "");
  put_in (dir, ".inbox.extbody-Ab12Cd", "left by a killed run");
  put_in (dir, ".inbox.extbody-toolong", "not one of ours");
  put_in (dir, ".other.extbody-Ab12Cd", "another mailbox's");
  g_autofree char *ddir = g_build_filename (dir, ".inbox.extbody-Dir123", NULL);
  g_assert_cmpint (g_mkdir (ddir, 0700), ==, 0);
  eb_mbox_remove_stale (mbox);
  g_autofree char *names = names_in (dir);
  g_assert_cmpstr (names, ==, ".inbox.extbody-Dir123 .inbox.extbody-toolong .other.extbody-Ab12Cd b inbox");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mbox/from-line/table", test_from_line_table);
  g_test_add_func ("/mbox/split/framing", test_split_framing);
  g_test_add_func ("/mbox/split/leading-blank-line", test_split_leading_blank);
  g_test_add_func ("/mbox/split/mapped-agrees-over-40MiB", test_split_mapped_large);
  g_test_add ("/mbox/lock/dot-lock-and-fcntl", LockFixture, NULL, lock_setup, test_lock_takes_both, lock_teardown);
  g_test_add ("/mbox/lock/stale-dead-pid-removed", LockFixture, NULL, lock_setup, test_lock_stale_removed, lock_teardown);
  g_test_add ("/mbox/lock/live-holder-times-out", LockFixture, NULL, lock_setup, test_lock_live_holder_times_out, lock_teardown);
  g_test_add ("/mbox/lock/no-pid-never-stale", LockFixture, NULL, lock_setup, test_lock_without_pid_kept, lock_teardown);
  g_test_add ("/mbox/lock/fcntl-held-elsewhere", LockFixture, NULL, lock_setup, test_lock_fcntl_held, lock_teardown);
  g_test_add_func ("/mbox/lock/cannot-create", test_lock_cannot_create);
  g_test_add ("/mailbox/replace-file/unchanged-untouched", ReplaceFixture, NULL, replace_setup, test_replace_unchanged, replace_teardown);
  g_test_add ("/mailbox/replace-file/changed", ReplaceFixture, NULL, replace_setup, test_replace_changed, replace_teardown);
  g_test_add ("/mailbox/replace-file/backup-link", ReplaceFixture, NULL, replace_setup, test_replace_backup, replace_teardown);
  g_test_add ("/mailbox/replace-file/write-error", ReplaceFixture, NULL, replace_setup, test_replace_write_error, replace_teardown);
  g_test_add ("/mailbox/replace-file/changed-meanwhile", ReplaceFixture, NULL, replace_setup, test_replace_changed_meanwhile, replace_teardown);
  g_test_add_func ("/maildir/list/sorted-and-subfolders", test_maildir_list);
  g_test_add_func ("/maildir/list/symlinks-skipped", test_maildir_list_symlinks);
  g_test_add_func ("/maildir/map-entry", test_maildir_map_entry);
  g_test_add_func ("/maildir/replace", test_maildir_replace);
  g_test_add_func ("/maildir/virtual-size", test_maildir_virtual_size);
  g_test_add_func ("/mailbox/copy-attributes/mode-owner", test_copy_attributes_mode_owner);
  g_test_add_func ("/mailbox/copy-attributes/user-xattr", test_copy_attributes_xattr);
  g_test_add_func ("/mailbox/cleanup-and-stale", test_cleanup_and_stale);
  return g_test_run ();
}
