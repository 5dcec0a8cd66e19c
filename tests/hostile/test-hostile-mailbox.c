/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-hostile-mailbox.c - the hostile-input suite's mailbox faults, through
 * the extbody command: mboxes whose content is odd (empty, not an mbox, only
 * From_ lines, no final newline, CRLF, NUL and invalid UTF-8, a 10 MB line, a
 * message over max_message_size, "From " inside bodies, junk beside a
 * reference), mailboxes that are not what they claim (missing, a directory, a
 * FIFO, a symbolic link), locks held by others (dot-lock of a live process,
 * an fcntl lock, a stale dot-lock, a stale temporary file), writers that do
 * not lock, signals in the middle of a run, Maildir folders holding FIFOs,
 * symbolic links, directories and empty files, a Maildir message moved by a
 * mail reader during the run, input from a pipe; files of another user (owner,
 * mode, user.* xattrs kept), symbolic links below a Maildir (cur/, .Folder to
 * another user's Maildir), hard-linked messages and mboxes, Maildir++ ",S="
 * and ",W=" names, mboxrd quoting of new text, a stale Content-Length, From_
 * lines and look-alikes ("From the desk of the editor"), and an mbox that
 * cannot be written (exit 73).
 *
 * Every case states its outcome: the exit status (sysexits), a line on
 * standard error, and what the mailbox holds afterwards - every message that
 * was not rewritten byte for byte, the same number of messages, the
 * references resolved where they could be - and that nothing is left behind
 * (temporary files, dot-locks). */
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>
#include "eb-maildir.h"
#include "eb-mbox.h"
#include "../integration/run-command.h"
#include "test-server.h"

static char *work;
static char *conf;

#define FROM(x) "From " x "@example.org Sat Nov 21 10:00:00 2026\n"
/* a top-level reference, and one inside a multipart; both resolve to TEXT */
#define REF_TOP(x, url)                                                                  \
  FROM (x) "From: " x "@example.org\nMIME-Version: 1.0\n"                               \
  "Content-Type: message/external-body; access-type=URL; URL=\"" url "\"\n\n"           \
  "Content-Type: text/plain\n\n"
#define REF_MULTI(x, url)                                                                \
  FROM (x) "From: " x "@example.org\nMIME-Version: 1.0\n"                               \
  "Content-Type: multipart/mixed; boundary=b\n\n--b\n"                                  \
  "Content-Type: message/external-body; access-type=URL; URL=\"" url "\"\n\n"           \
  "Content-Type: text/plain\n\n--b--\n"
#define PLAIN(x, body) FROM (x) "From: " x "@example.org\nSubject: plain\n\n" body

static int
sh (const char *cmd, char **out)
{
  int status = 0;
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", (char *) cmd, NULL }, NULL,
                G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, out, NULL, &status, NULL);
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

static char *
path_in_work (const char *name)
{
  return g_build_filename (work, name, NULL);
}

static GBytes *
read_all (const char *path)
{
  char *d = NULL;
  gsize n = 0;
  if (!g_file_get_contents (path, &d, &n, NULL))
    return NULL;
  return g_bytes_new_take (d, n);
}

static void
put (const char *path, const void *data, gsize len)
{
  g_autoptr (GError) error = NULL;
  g_file_set_contents (path, data, (gssize) len, &error);
  g_assert_no_error (error);
}

static guint
n_messages (GBytes *b)
{
  gsize n = 0;
  const char *d = g_bytes_get_data (b, &n);
  g_autoptr (GArray) a = eb_mbox_split (d ? d : "", n);
  return a->len;
}

static gboolean
contains (GBytes *hay, const void *needle, gsize len)
{
  gsize n = 0;
  const char *d = g_bytes_get_data (hay, &n);
  if (len == 0)
    return TRUE;
  for (gsize i = 0; i + len <= n; i++)
    if (d[i] == ((const char *) needle)[0] && memcmp (d + i, needle, len) == 0)
      return TRUE;
  return FALSE;
}

/* Files in the work directory whose names contain @what (left-behind files). */
static guint
leftovers (const char *dir, const char *what)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;
  const char *name;
  while (d && (name = g_dir_read_name (d)))
    n += strstr (name, what) != NULL;
  return n;
}

static char *
err_text (CmdResult *r)
{
  return bytes_str (r->err);
}

/* ---- mbox content: a table ---------------------------------------------- */

typedef struct {
  const char *name;
  GBytes *(*make) (void);     /* the mbox */
  const char *option;         /* one -o KEY=VALUE, or NULL */
  int         status;
  const char *err;            /* a substring of standard error */
  gboolean    changed;
  const char *want;           /* must be in the result (resolved data) */
  const char *gone;           /* must not be in the result */
  const char *kept;           /* a message with a reference holding this stays as it was */
} ContentCase;

static GBytes *
text (const char *s)
{
  return g_bytes_new (s, strlen (s));
}

static GBytes *mk_empty (void) { return text (""); }
static GBytes *mk_not_mbox (void) { return text ("From: a@example.org\nSubject: x\n\nbody\n"); }
static GBytes *mk_blank_first (void) { return text ("\n" PLAIN ("a", "body\n")); }
static GBytes *mk_only_from (void) { return text (FROM ("a") "\n" FROM ("b") "\n" FROM ("c")); }
static GBytes *mk_from_no_newline (void) { return text ("From a"); }
static GBytes *
mk_top_between (void)
{
  return text (REF_TOP ("a", "data:,top%20level") "\n" PLAIN ("b", "second\n"));
}
static GBytes *
mk_top_last_no_newline (void)
{
  return text (PLAIN ("a", "first\n") "\n" REF_TOP ("b", "data:,top%20level"));
}
static GBytes *
mk_no_final_newline (void)
{
  return text (REF_MULTI ("a", "data:,resolved%20text") "\n" PLAIN ("b", "no final newline"));
}
static GBytes *
mk_crlf (void)
{
  g_autofree char *lf = g_strdup (REF_MULTI ("a", "data:,resolved%20text") "\n" PLAIN ("b", "crlf body\n"));
  g_auto (GStrv) lines = g_strsplit (lf, "\n", -1);
  g_autofree char *crlf = g_strjoinv ("\r\n", lines);
  return text (crlf);
}
static GBytes *
mk_top_crlf (void)
{
  g_autofree char *lf = g_strdup (REF_TOP ("a", "data:,top%20level") "\n" PLAIN ("b", "crlf body\n"));
  g_auto (GStrv) lines = g_strsplit (lf, "\n", -1);
  g_autofree char *crlf = g_strjoinv ("\r\n", lines);
  return text (crlf);
}
static GBytes *
mk_nul_utf8 (void)
{
  static const char junk[] = FROM ("j") "From: \xff\xfe@example.org\nSubject: \xc3\x28 \x00 nul\n\n"
                             "body \x00\x01\x02 \xed\xa0\x80 \xf4\x90\x80\x80\n\n";
  GByteArray *a = g_byte_array_new ();
  g_byte_array_append (a, (const guint8 *) junk, sizeof junk - 1);
  const char *ref = REF_MULTI ("a", "data:,resolved%20text") "\n";
  g_byte_array_append (a, (const guint8 *) ref, strlen (ref));
  return g_byte_array_free_to_bytes (a);
}
static GBytes *
mk_long_line (void)
{
  GString *s = g_string_new (PLAIN ("l", ""));
  for (int i = 0; i < 10 << 20; i++)
    g_string_append_c (s, (char) ('a' + i % 26));
  g_string_append (s, "\n\n" REF_MULTI ("a", "data:,resolved%20text") "\n");
  return g_string_free_to_bytes (s);
}
static GBytes *
mk_oversize (void)
{
  /* max_message_size=4096: the first reference is in a message of 8 KiB */
  GString *s = g_string_new (FROM ("big") "From: big@example.org\nMIME-Version: 1.0\n"
                             "Content-Type: multipart/mixed; boundary=b\n\n--b\n"
                             "Content-Type: text/plain\n\n");
  for (int i = 0; i < 128; i++)
    g_string_append (s, "padding padding padding padding padding padding padding padding\n");
  g_string_append (s, "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,big%20one\"\n\n"
                      "Content-Type: text/plain\n\n--b--\n\n");
  g_string_append (s, REF_MULTI ("a", "data:,resolved%20text") "\n");
  return g_string_free_to_bytes (s);
}
static GBytes *
mk_from_in_body (void)
{
  return text (PLAIN ("a", "a line\nFrom the middle of a paragraph\n>From quoted\n\n")
               REF_MULTI ("b", "data:,resolved%20text") "\n");
}
static GBytes *
mk_injection (void)
{
  /* the data tries to start a message of its own after a blank line */
  return text (REF_TOP ("a", "data:,x%0A%0AFrom%20evil@example.org%20Sat%20Nov%2021%2010:00:00%202026%0ASubject:%20injected%0A%0A")
               "\n" PLAIN ("b", "second\n"));
}
static GBytes *
mk_junk (void)
{
  return text (FROM ("j") "this is not a header\n\x01\x02: \n--b--\n\n"
               FROM ("h") "Subject: headers only, no blank line\n"
               "\n" REF_MULTI ("a", "data:,resolved%20text") "\n");
}
static GBytes *
mk_many (void)
{
  GString *s = g_string_new (NULL);
  for (int i = 0; i < 5000; i++) {
    if (i == 2500)
      g_string_append (s, REF_MULTI ("a", "data:,resolved%20text") "\n");
    g_string_append_printf (s, FROM ("m%d") "Subject: %d\n\nbody %d\n\n", i, i, i);
  }
  return g_string_free_to_bytes (s);
}
static GBytes *
mk_unresolvable (void)
{
  /* fetch=off: an http reference stays as it was, and nothing is written */
  return text (REF_MULTI ("a", "http://example.org/x") "\n" PLAIN ("b", "second\n"));
}

static const ContentCase content_cases[] = {
  { "empty", mk_empty, NULL, 0, "0 messages scanned", FALSE, NULL, NULL },
  { "not-an-mbox", mk_not_mbox, NULL, EX_DATAERR, "not an mbox", FALSE, NULL, NULL },
  { "blank-line-first", mk_blank_first, NULL, EX_DATAERR, "not an mbox", FALSE, NULL, NULL },
  { "only-from-lines", mk_only_from, NULL, 0, "3 messages scanned, 0 references", FALSE, NULL, NULL },
  { "from-line-without-newline", mk_from_no_newline, NULL, 0, "1 messages scanned", FALSE, NULL, NULL },
  { "top-level-reference-between", mk_top_between, NULL, 0, "1 resolved", TRUE, "top level", "message/external-body" },
  { "top-level-reference-last", mk_top_last_no_newline, NULL, 0, "1 resolved", TRUE, "top level", "message/external-body" },
  { "no-final-newline", mk_no_final_newline, NULL, 0, "1 resolved", TRUE, "resolved text", "message/external-body" },
  { "crlf", mk_crlf, NULL, 0, "1 resolved", TRUE, "resolved text", "message/external-body" },
  { "crlf-top-level", mk_top_crlf, NULL, 0, "1 resolved", TRUE, "top level", "message/external-body" },
  { "nul-and-invalid-utf8", mk_nul_utf8, NULL, 0, "1 resolved", TRUE, "resolved text", "message/external-body" },
  { "line-of-10-mb", mk_long_line, NULL, 0, "1 resolved", TRUE, "resolved text", "message/external-body" },
  { "message-over-max-size", mk_oversize, "max_message_size=4096", 0, "1 references, 1 resolved, 1 messages changed; left: message-too-large 1", TRUE, "resolved text", NULL, "big one" },
  { "from-inside-body", mk_from_in_body, NULL, 0, "2 messages scanned, 1 references, 1 resolved", TRUE, "resolved text", NULL },
  { "from-line-injected-by-data", mk_injection, NULL, 0, "1 resolved", TRUE, "=46rom evil", "\nFrom evil" },
  { "junk-beside-reference", mk_junk, NULL, 0, "3 messages scanned, 1 references, 1 resolved", TRUE, "resolved text", NULL },
  { "5000-messages", mk_many, NULL, 0, "5001 messages scanned, 1 references, 1 resolved", TRUE, "resolved text", NULL },
  { "unresolvable-reference", mk_unresolvable, NULL, 0, "0 resolved, 0 messages changed", FALSE, NULL, NULL },
};

static void
test_content (gconstpointer data)
{
  const ContentCase *c = data;
  g_autofree char *box = g_strdup_printf ("%s/content-%s.mbox", work, c->name);
  g_autoptr (GBytes) in = c->make ();
  put (box, g_bytes_get_data (in, NULL), g_bytes_get_size (in));
  struct stat before, after;
  g_assert_cmpint (stat (box, &before), ==, 0);
  g_auto (CmdResult) r = { 0 };
  const char *opt = c->option ? c->option : "fetch=off";
  RUN (&r, NULL, "rewrite", "-c", conf, "-o", "fetch=off", "-o", opt, "--mbox", box);
  g_autofree char *err = err_text (&r);
  g_test_message ("exit %d: %s", r.status, err);
  g_assert_cmpint (r.status, ==, c->status);
  g_assert_nonnull (strstr (err, c->err));
  g_autoptr (GBytes) out = read_all (box);
  g_assert_nonnull (out);
  g_assert_cmpint (stat (box, &after), ==, 0);
  if (!c->changed) {
    /* not touched at all: same bytes, same inode, same time */
    g_assert_true (g_bytes_equal (in, out));
    g_assert_cmpuint (before.st_ino, ==, after.st_ino);
    g_assert_cmpint (before.st_mtim.tv_nsec, ==, after.st_mtim.tv_nsec);
  } else {
    g_assert_false (g_bytes_equal (in, out));
    g_assert_cmpuint (n_messages (out), ==, n_messages (in));
    /* every message that had nothing to resolve is there byte for byte */
    gsize n = 0;
    const char *d = g_bytes_get_data (in, &n);
    g_autoptr (GArray) msgs = eb_mbox_split (d, n);
    for (guint i = 0; i < msgs->len; i++) {
      const EbMboxMsg *m = &g_array_index (msgs, EbMboxMsg, i);
      gboolean ref = g_strstr_len (d + m->start, (gssize) (m->end - m->start), "access-type=URL") != NULL;
      if (!ref || (c->kept && g_strstr_len (d + m->start, (gssize) (m->end - m->start), c->kept)))
        g_assert_true (contains (out, d + m->from, m->end - m->from));
    }
  }
  if (c->want)
    g_assert_true (contains (out, c->want, strlen (c->want)));
  if (c->gone)
    g_assert_false (contains (out, c->gone, strlen (c->gone)));
  g_autofree char *base = g_path_get_basename (box);
  g_autofree char *tmpname = g_strdup_printf (".%s.extbody-", base);
  g_assert_cmpuint (leftovers (work, tmpname), ==, 0);
  g_autofree char *lock = g_strconcat (box, ".lock", NULL);
  g_assert_false (g_file_test (lock, G_FILE_TEST_EXISTS));
}

/* ---- what the mailbox path is ------------------------------------------- */

static const char plain_box[] = REF_MULTI ("a", "data:,resolved%20text") "\n" PLAIN ("b", "second\n");

static void
test_missing (void)
{
  g_autofree char *box = path_in_work ("no-such.mbox");
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "--mbox", box);
  g_autofree char *err = err_text (&r);
  g_assert_cmpint (r.status, ==, EX_NOINPUT);
  g_assert_nonnull (strstr (err, "cannot open"));
  g_assert_false (g_file_test (box, G_FILE_TEST_EXISTS));
  g_autofree char *lock = g_strconcat (box, ".lock", NULL);
  g_assert_false (g_file_test (lock, G_FILE_TEST_EXISTS));
}

static void
test_directory (void)
{
  g_autofree char *dir = path_in_work ("a-directory");
  g_mkdir (dir, 0755);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "--mbox", dir);
  g_autofree char *err = err_text (&r);
  g_assert_cmpint (r.status, ==, EX_NOINPUT);
  g_assert_nonnull (strstr (err, dir));
  g_assert_true (g_file_test (dir, G_FILE_TEST_IS_DIR));
}

/* A FIFO named as the mbox: refused at once, no reader waits on it. */
static void
test_fifo (void)
{
  g_autofree char *fifo = path_in_work ("a.fifo");
  g_assert_cmpint (mkfifo (fifo, 0644), ==, 0);
  g_autofree char *cmd = g_strdup_printf ("timeout 20 '%s' rewrite -c '%s' --mbox '%s'", extbody_path (), conf, fifo);
  gint64 t0 = g_get_monotonic_time ();
  int status = sh (cmd, NULL);
  g_assert_cmpint (status, ==, EX_NOINPUT);
  g_assert_cmpint (g_get_monotonic_time () - t0, <, 10 * G_USEC_PER_SEC);
  struct stat st;
  g_assert_cmpint (lstat (fifo, &st), ==, 0);
  g_assert_true (S_ISFIFO (st.st_mode));
  /* as a plain argument too (rewrite FILE, inspect FILE): refused at once with
   * one line (issue 26: it waited for a writer forever), exit 66 */
  g_autofree char *store = path_in_work ("fifo-store");
  g_mkdir (store, 0755);
  g_autofree char *ext = g_strdup_printf ("externalize -o externalize_store=%s -o externalize_base_url=http://files.example/o",
                                          store);
  const char *subs[] = { "rewrite", ext, "inspect" };
  for (guint i = 0; i < G_N_ELEMENTS (subs); i++) {
    g_autofree char *cmd2 = g_strdup_printf ("timeout 20 '%s' %s -c '%s' '%s' 2>&1 >/dev/null", extbody_path (),
                                             subs[i], conf, fifo);
    g_autofree char *out = NULL;
    t0 = g_get_monotonic_time ();
    g_assert_cmpint (sh (cmd2, &out), ==, EX_NOINPUT);
    g_assert_cmpint (g_get_monotonic_time () - t0, <, 10 * G_USEC_PER_SEC);
    g_autofree char *want = g_strdup_printf ("%s: a FIFO, not a regular file", fifo);
    g_assert_nonnull (strstr (out, want));
  }
}

/* A symbolic link named as the mbox: refused, the link and its target as they
 * were (renaming the new mbox over the link would cut the link). */
static void
test_symlink (void)
{
  g_autofree char *target = path_in_work ("link-target.mbox");
  g_autofree char *link = path_in_work ("link.mbox");
  put (target, plain_box, strlen (plain_box));
  g_assert_cmpint (symlink (target, link), ==, 0);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "--mbox", link);
  g_autofree char *err = err_text (&r);
  g_assert_cmpint (r.status, ==, EX_NOINPUT);
  g_assert_nonnull (strstr (err, "symbolic link"));
  struct stat st;
  g_assert_cmpint (lstat (link, &st), ==, 0);
  g_assert_true (S_ISLNK (st.st_mode));
  g_autoptr (GBytes) now = read_all (target);
  g_assert_cmpmem (g_bytes_get_data (now, NULL), g_bytes_get_size (now), plain_box, strlen (plain_box));
  /* the mailbox itself is rewritten */
  g_auto (CmdResult) r2 = { 0 };
  RUN (&r2, NULL, "rewrite", "-c", conf, "--mbox", target);
  g_assert_cmpint (r2.status, ==, 0);
  g_autoptr (GBytes) done = read_all (target);
  g_assert_true (contains (done, "resolved text", 13));
}

/* ---- locks ---------------------------------------------------------------- */

static char *
fresh_box (const char *name)
{
  char *box = path_in_work (name);
  put (box, plain_box, strlen (plain_box));
  return box;
}

static gboolean
box_unchanged (const char *box)
{
  g_autoptr (GBytes) now = read_all (box);
  return now && g_bytes_get_size (now) == strlen (plain_box)
         && memcmp (g_bytes_get_data (now, NULL), plain_box, strlen (plain_box)) == 0;
}

static gboolean
box_resolved (const char *box)
{
  g_autoptr (GBytes) now = read_all (box);
  return now && contains (now, "resolved text", 13) && !contains (now, "external-body", 13)
         && n_messages (now) == 2;
}

/* A dot-lock held by a live process (this one): wait lock_timeout, then a
 * temporary failure, the mailbox and the other program's lock untouched. */
static void
test_dotlock_live (void)
{
  g_autofree char *box = fresh_box ("dotlock.mbox");
  g_autofree char *lock = g_strconcat (box, ".lock", NULL);
  g_autofree char *pid = g_strdup_printf ("%ld\n", (long) getpid ());
  put (lock, pid, strlen (pid));
  gint64 t0 = g_get_monotonic_time ();
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "-o", "lock_timeout=1", "--mbox", box);
  double took = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  g_autofree char *err = err_text (&r);
  g_test_message ("%.2f s: %s", took, err);
  g_assert_cmpint (r.status, ==, EX_TEMPFAIL);
  g_assert_nonnull (strstr (err, "locked"));
  g_assert_nonnull (strstr (err, "unchanged"));
  g_assert_cmpfloat (took, >=, 0.9);
  g_assert_cmpfloat (took, <, 8.0);
  g_assert_true (box_unchanged (box));
  g_autoptr (GBytes) still = read_all (lock);
  g_assert_nonnull (still);
  g_assert_cmpmem (g_bytes_get_data (still, NULL), g_bytes_get_size (still), pid, strlen (pid));
  /* released: the next run goes through */
  g_unlink (lock);
  g_auto (CmdResult) r2 = { 0 };
  RUN (&r2, NULL, "rewrite", "-c", conf, "-o", "lock_timeout=1", "--mbox", box);
  g_assert_cmpint (r2.status, ==, 0);
  g_assert_true (box_resolved (box));
}

/* A dot-lock whose process is gone is stale: removed, and the run goes on. */
static void
test_dotlock_stale (void)
{
  g_autofree char *box = fresh_box ("stale.mbox");
  g_autofree char *lock = g_strconcat (box, ".lock", NULL);
  pid_t child = fork ();
  if (child == 0)
    _exit (0);
  waitpid (child, NULL, 0);
  g_autofree char *pid = g_strdup_printf ("%ld\n", (long) child);
  put (lock, pid, strlen (pid));
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "-o", "lock_timeout=1", "--mbox", box);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_true (box_resolved (box));
  g_assert_false (g_file_test (lock, G_FILE_TEST_EXISTS));
}

/* An fcntl lock held by another process (python's lockf is fcntl F_SETLK). */
typedef struct {
  const char *name;
  double      hold;       /* seconds the other program holds the lock */
  const char *timeout;    /* lock_timeout */
  int         status;
} FcntlCase;

static const FcntlCase fcntl_cases[] = {
  { "held-past-timeout", 30, "1", EX_TEMPFAIL },
  { "released-in-time", 1.5, "20", 0 },
};

static void
test_fcntl (gconstpointer data)
{
  const FcntlCase *c = data;
  g_autofree char *name = g_strdup_printf ("fcntl-%s.mbox", c->name);
  g_autofree char *box = fresh_box (name);
  g_autofree char *ready = g_strconcat (box, ".ready", NULL);
  g_autofree char *script = g_strdup_printf (
    "import fcntl, time, os\n"
    "f = open('%s', 'r+')\n"
    "fcntl.lockf(f, fcntl.LOCK_EX)\n"
    "open('%s', 'w').close()\n"
    "time.sleep(%g)\n", box, ready, c->hold);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) holder = g_subprocess_new (G_SUBPROCESS_FLAGS_NONE, &error, "python3", "-c", script, NULL);
  g_assert_no_error (error);
  for (int i = 0; i < 200 && !g_file_test (ready, G_FILE_TEST_EXISTS); i++)
    g_usleep (50000);
  g_assert_true (g_file_test (ready, G_FILE_TEST_EXISTS));
  g_auto (CmdResult) r = { 0 };
  g_autofree char *opt = g_strdup_printf ("lock_timeout=%s", c->timeout);
  RUN (&r, NULL, "rewrite", "-c", conf, "-o", opt, "--mbox", box);
  g_autofree char *err = err_text (&r);
  g_test_message ("exit %d: %s", r.status, err);
  g_assert_cmpint (r.status, ==, c->status);
  if (c->status) {
    g_assert_nonnull (strstr (err, "fcntl"));
    g_assert_true (box_unchanged (box));
  } else {
    g_assert_true (box_resolved (box));
  }
  /* our dot-lock is never left behind */
  g_autofree char *lock = g_strconcat (box, ".lock", NULL);
  g_assert_false (g_file_test (lock, G_FILE_TEST_EXISTS));
  g_subprocess_force_exit (holder);
  g_subprocess_wait (holder, NULL, NULL);
}

/* What a run killed outright left beside the mbox is removed by the next run;
 * names that only look alike are not. */
static void
test_stale_temp (void)
{
  g_autofree char *box = fresh_box ("temp.mbox");
  g_autofree char *stale = path_in_work (".temp.mbox.extbody-Ab12Cd");
  g_autofree char *other = path_in_work (".temp.mbox.extbody-keep-me");
  put (stale, "half a mailbox", 14);
  put (other, "not ours", 8);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "--mbox", box);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_true (box_resolved (box));
  g_assert_false (g_file_test (stale, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (other, G_FILE_TEST_EXISTS));
}

/* ---- during a run: the run is kept busy by a slow server ------------------ */

static TestServer *
server_start (void)
{
  g_autoptr (GError) error = NULL;
  TestServer *s = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);
  return s;
}

static int
server_hits (TestServer *s)
{
  return (int) test_http_get_number (s->port, "/hits");
}

/* An mbox whose first message refers to the slow server, which answers
 * after @ms; the second is plain. */
static char *
slow_box (const char *name, TestServer *s, guint ms)
{
  g_autofree char *m = g_strdup_printf (
    FROM ("a") "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"http://127.0.0.1:%u/slow?ms=%u\"\n\n"
    "Content-Type: text/plain\n\n--b--\n\n" PLAIN ("b", "second\n"), s->port, ms);
  char *box = path_in_work (name);
  put (box, m, strlen (m));
  return box;
}

/* Start a rewrite of @target (an mbox, or a Maildir with @maildir) and
 * return when its fetch has reached the server. */
static GSubprocess *
start_busy_run (TestServer *s, const char *target, gboolean maildir)
{
  int hits0 = server_hits (s);
  g_autoptr (GError) error = NULL;
  GSubprocess *p = g_subprocess_new (G_SUBPROCESS_FLAGS_STDERR_PIPE, &error, extbody_path (), "rewrite",
                                     "-c", conf, "--fetch", "--allow-network", "127.0.0.1/32",
                                     maildir ? "--maildir" : "--mbox", target, NULL);
  g_assert_no_error (error);
  /* every /hits request counts itself: after the i-th one more, the run's fetch
   * has arrived when the count passes hits0 + i */
  gboolean arrived = FALSE;
  for (int i = 1; i <= 200 && !arrived; i++) {
    arrived = server_hits (s) >= hits0 + i + 1;
    if (!arrived)
      g_usleep (25000);
  }
  g_assert_true (arrived);
  return p;
}

static char *
finish_run (GSubprocess *p, int *status)
{
  g_autoptr (GBytes) err = NULL;
  g_subprocess_communicate (p, NULL, NULL, NULL, &err, NULL);
  *status = g_subprocess_get_if_exited (p) ? g_subprocess_get_exit_status (p)
            : -g_subprocess_get_term_sig (p);
  return bytes_str (err);
}

/* A writer that appends without taking either lock while the run works: the
 * run must not rename its copy over what that writer added. */
static void
test_unlocked_writer (void)
{
  g_autoptr (TestServer) s = server_start ();
  g_autofree char *box = slow_box ("unlocked.mbox", s, 2500);
  g_autoptr (GBytes) orig = read_all (box);
  g_autoptr (GSubprocess) p = start_busy_run (s, box, FALSE);
  const char add[] = "\n" PLAIN ("late", "appended without a lock\n");
  g_autofree char *cmd = g_strdup_printf ("printf '%%s' '%s' >> '%s'", add, box);
  g_assert_cmpint (sh (cmd, NULL), ==, 0);
  int status = 0;
  g_autofree char *err = finish_run (p, &status);
  g_test_message ("exit %d: %s", status, err);
  g_assert_cmpint (status, ==, EX_TEMPFAIL);
  g_assert_nonnull (strstr (err, "changed during the run"));
  g_autoptr (GBytes) now = read_all (box);
  g_assert_true (contains (now, g_bytes_get_data (orig, NULL), g_bytes_get_size (orig)));
  g_assert_true (contains (now, "appended without a lock", 23));
  g_assert_cmpuint (leftovers (work, ".unlocked.mbox.extbody-"), ==, 0);
  g_autofree char *lock = g_strconcat (box, ".lock", NULL);
  g_assert_false (g_file_test (lock, G_FILE_TEST_EXISTS));
}

/* A signal in the middle of a run: the mailbox as it was, no temporary file,
 * no dot-lock, and the signal's own exit status. */
static const int stop_signals[] = { SIGTERM, SIGINT, SIGHUP };

static void
test_signal (gconstpointer data)
{
  int sig = *(const int *) data;
  g_autoptr (TestServer) s = server_start ();
  g_autofree char *name = g_strdup_printf ("signal-%d.mbox", sig);
  g_autofree char *box = slow_box (name, s, 3000);
  g_autoptr (GBytes) orig = read_all (box);
  g_autoptr (GSubprocess) p = start_busy_run (s, box, FALSE);
  g_autofree char *lock = g_strconcat (box, ".lock", NULL);
  g_assert_true (g_file_test (lock, G_FILE_TEST_EXISTS));   /* it holds the mailbox now */
  g_autofree char *tmpname = g_strdup_printf (".%s.extbody-", name);
  g_assert_cmpuint (leftovers (work, tmpname), ==, 1);      /* and writes beside it */
  g_subprocess_send_signal (p, sig);
  int status = 0;
  g_autofree char *err = finish_run (p, &status);
  g_test_message ("status %d: %s", status, err);
  g_assert_cmpint (status, ==, -sig);
  g_autoptr (GBytes) now = read_all (box);
  g_assert_true (g_bytes_equal (orig, now));
  g_assert_false (g_file_test (lock, G_FILE_TEST_EXISTS));
  g_assert_cmpuint (leftovers (work, tmpname), ==, 0);
}

/* ---- Maildir -------------------------------------------------------------- */

static char *
make_maildir (const char *name)
{
  char *md = path_in_work (name);
  for (const char *const *sub = (const char *const[]) { "cur", "new", "tmp", NULL }; *sub; sub++) {
    g_autofree char *d = g_build_filename (md, *sub, NULL);
    g_assert_cmpint (g_mkdir_with_parents (d, 0700), ==, 0);
  }
  return md;
}

/* The one regular file in @dir that is not @old: a rewritten message's new
 * name. */
static char *
only_new_file (const char *dir, const char *old)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_assert_nonnull (d);
  char *found = NULL;
  const char *n;
  while ((n = g_dir_read_name (d))) {
    g_autofree char *p = g_build_filename (dir, n, NULL);
    struct stat st;
    if (strcmp (n, old) == 0 || lstat (p, &st) != 0 || !S_ISREG (st.st_mode))
      continue;
    g_assert_null (found);
    found = g_steal_pointer (&p);
  }
  g_assert_nonnull (found);
  return found;
}

#define MD_REF "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n" \
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,resolved%20text\"\n\n" \
  "Content-Type: text/plain\n\n--b--\n"

/* Entries of cur/ and new/ that are not messages are skipped, each with a
 * line; the run does not hang on a FIFO nor write through a symbolic link. */
static void
test_maildir_entries (void)
{
  g_autofree char *md = make_maildir ("md-entries");
  g_autofree char *outside = path_in_work ("outside-message");
  put (outside, MD_REF, strlen (MD_REF));
  g_autofree char *ref = g_build_filename (md, "new", "1.ref.host", NULL);
  g_autofree char *fifo = g_build_filename (md, "new", "2.fifo.host", NULL);
  g_autofree char *link = g_build_filename (md, "new", "3.link.host", NULL);
  g_autofree char *dir = g_build_filename (md, "cur", "4.dir.host:2,S", NULL);
  g_autofree char *empty = g_build_filename (md, "cur", "5.empty.host:2,S", NULL);
  g_autofree char *junk = g_build_filename (md, "cur", "6.junk.host:2,", NULL);
  put (ref, MD_REF, strlen (MD_REF));
  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  g_assert_cmpint (symlink (outside, link), ==, 0);
  g_assert_cmpint (g_mkdir (dir, 0700), ==, 0);
  put (empty, "", 0);
  static const char junkdata[] = "\x00\x01\xff\xfe\nnot: mail\x00\n\n\x80";
  put (junk, junkdata, sizeof junkdata - 1);
  g_autofree char *cmd = g_strdup_printf ("timeout 30 '%s' rewrite -c '%s' --maildir '%s' 2>&1", extbody_path (), conf, md);
  g_autofree char *out = NULL;
  int status = sh (cmd, &out);
  g_test_message ("exit %d: %s", status, out);
  g_assert_cmpint (status, ==, 0);
  g_assert_nonnull (strstr (out, "skipped "));
  g_assert_nonnull (strstr (out, "2.fifo.host: not a regular file"));
  g_assert_nonnull (strstr (out, "3.link.host: not a regular file"));
  g_assert_nonnull (strstr (out, "4.dir.host:2,S: not a regular file"));
  g_assert_nonnull (strstr (out, "3 messages scanned (3 entries skipped), 1 references, 1 resolved"));
  /* the resolved message is delivered under a new name, the old one gone */
  g_assert_false (g_file_test (ref, G_FILE_TEST_EXISTS));
  g_autofree char *newdir = g_build_filename (md, "new", NULL);
  g_autofree char *resolved = only_new_file (newdir, "1.ref.host");
  g_autoptr (GBytes) r = read_all (resolved);
  g_assert_true (contains (r, "resolved text", 13));
  struct stat st;
  g_assert_cmpint (lstat (link, &st), ==, 0);
  g_assert_true (S_ISLNK (st.st_mode));
  g_assert_cmpint (lstat (fifo, &st), ==, 0);
  g_assert_true (S_ISFIFO (st.st_mode));
  g_autoptr (GBytes) o = read_all (outside);
  g_assert_cmpmem (g_bytes_get_data (o, NULL), g_bytes_get_size (o), MD_REF, strlen (MD_REF));
  g_autoptr (GBytes) e = read_all (empty);
  g_assert_cmpuint (g_bytes_get_size (e), ==, 0);
  g_autoptr (GBytes) j = read_all (junk);
  g_assert_cmpmem (g_bytes_get_data (j, NULL), g_bytes_get_size (j), junkdata, sizeof junkdata - 1);
  g_autofree char *tmp = g_build_filename (md, "tmp", NULL);
  g_assert_cmpuint (leftovers (tmp, ""), ==, 0);
}

/* A mail reader moves a message (new/ to cur/ with a flag) while its reference
 * is being fetched: the message must stay exactly once, where the reader put
 * it, and the run says so and asks to be run again. */
static void
test_maildir_moved (void)
{
  g_autoptr (TestServer) s = server_start ();
  g_autofree char *md = make_maildir ("md-moved");
  g_autofree char *m = g_strdup_printf (
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"http://127.0.0.1:%u/slow?ms=2500\"\n\n"
    "Content-Type: text/plain\n\n--b--\n", s->port);
  g_autofree char *in_new = g_build_filename (md, "new", "7.moved.host", NULL);
  g_autofree char *in_cur = g_build_filename (md, "cur", "7.moved.host:2,S", NULL);
  put (in_new, m, strlen (m));
  g_autoptr (GSubprocess) p = start_busy_run (s, md, TRUE);
  g_assert_cmpint (g_rename (in_new, in_cur), ==, 0);
  int status = 0;
  g_autofree char *err = finish_run (p, &status);
  g_test_message ("exit %d: %s", status, err);
  g_assert_cmpint (status, ==, EX_TEMPFAIL);
  g_assert_nonnull (strstr (err, "moved or deleted during the run"));
  g_assert_false (g_file_test (in_new, G_FILE_TEST_EXISTS));
  g_autoptr (GBytes) now = read_all (in_cur);
  g_assert_cmpmem (g_bytes_get_data (now, NULL), g_bytes_get_size (now), m, strlen (m));
  g_autofree char *cmd = g_strdup_printf ("find '%s' -type f | wc -l", md);
  g_autofree char *count = NULL;
  sh (cmd, &count);
  g_assert_cmpint (atoi (count), ==, 1);
}

/* ---- ownership, links, names ---------------------------------------------- */

/* Can files in @dir hold user.* extended attributes? */
static gboolean
user_xattrs_work (const char *dir)
{
  g_autofree char *probe = g_build_filename (dir, "xattr-probe", NULL);
  put (probe, "x", 1);
  gboolean ok = setxattr (probe, "user.extbody-probe", "1", 1, 0) == 0;
  g_unlink (probe);
  return ok;
}

/* The one regular file of @dir (a Maildir's cur/ or new/). */
static char *
sole_file (const char *dir)
{
  return only_new_file (dir, "");
}

/* Run as root, a message owned by another user (0600, with a user.* xattr) is
 * rewritten: the new file is still theirs, same mode, same attributes; and an
 * mbox keeps its attributes too. */
static void
test_maildir_owner (void)
{
  if (geteuid () != 0) {
    g_test_skip ("needs root to give files to another user");
    return;
  }
  g_autofree char *md = make_maildir ("md-owner");
  g_autofree char *msg = g_build_filename (md, "cur", "8.owner.host:2,S", NULL);
  put (msg, MD_REF, strlen (MD_REF));
  g_assert_cmpint (chown (msg, 4321, 4322), ==, 0);
  g_assert_cmpint (chmod (msg, 0600), ==, 0);
  gboolean xattrs = user_xattrs_work (work);
  if (xattrs)
    g_assert_cmpint (setxattr (msg, "user.label", "work", 4, 0), ==, 0);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "--maildir", md);
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *cur = g_build_filename (md, "cur", NULL);
  g_autofree char *now = sole_file (cur);
  g_autoptr (GBytes) b = read_all (now);
  g_assert_true (contains (b, "resolved text", 13));
  struct stat st;
  g_assert_cmpint (stat (now, &st), ==, 0);
  g_assert_cmpuint (st.st_uid, ==, 4321);
  g_assert_cmpuint (st.st_gid, ==, 4322);
  g_assert_cmpuint (st.st_mode & 07777, ==, 0600);
  char v[16] = { 0 };
  if (xattrs) {
    g_assert_cmpint (getxattr (now, "user.label", v, sizeof v), ==, 4);
    g_assert_cmpstr (v, ==, "work");
  } else {
    g_test_message ("no user xattrs in %s: attributes not checked", work);
  }
  /* an mbox: the same */
  g_autofree char *box = fresh_box ("owner.mbox");
  g_assert_cmpint (chown (box, 4321, 4322), ==, 0);
  g_assert_cmpint (chmod (box, 0640), ==, 0);
  if (xattrs)
    g_assert_cmpint (setxattr (box, "user.label", "mbox", 4, 0), ==, 0);
  g_auto (CmdResult) r2 = { 0 };
  RUN (&r2, NULL, "rewrite", "-c", conf, "--mbox", box);
  g_assert_cmpint (r2.status, ==, 0);
  g_assert_true (box_resolved (box));
  g_assert_cmpint (stat (box, &st), ==, 0);
  g_assert_cmpuint (st.st_uid, ==, 4321);
  g_assert_cmpuint (st.st_gid, ==, 4322);
  g_assert_cmpuint (st.st_mode & 07777, ==, 0640);
  if (xattrs) {
    memset (v, 0, sizeof v);
    g_assert_cmpint (getxattr (box, "user.label", v, sizeof v), ==, 4);
    g_assert_cmpstr (v, ==, "mbox");
  }
}

/* Below the Maildir named, no symbolic link is followed: a cur/ that points
 * out of the tree, a Maildir++ folder ".Other" that is another user's Maildir;
 * each is skipped with a line, and what they point to stays as it was. The
 * Maildir itself may be named through a link. */
static void
test_maildir_symlinks (void)
{
  g_autofree char *md = make_maildir ("md-links");
  g_autofree char *elsewhere = path_in_work ("md-links-elsewhere");
  g_assert_cmpint (g_mkdir (elsewhere, 0700), ==, 0);
  g_autofree char *cur = g_build_filename (md, "cur", NULL);
  g_assert_cmpint (g_rmdir (cur), ==, 0);
  g_assert_cmpint (symlink (elsewhere, cur), ==, 0);
  g_autofree char *outside = g_build_filename (elsewhere, "9.outside.host:2,S", NULL);
  put (outside, MD_REF, strlen (MD_REF));
  g_autofree char *other = make_maildir ("md-links-other-user");
  g_autofree char *other_msg = g_build_filename (other, "new", "10.other.host", NULL);
  put (other_msg, MD_REF, strlen (MD_REF));
  g_autofree char *folder = g_build_filename (md, ".Other", NULL);
  g_assert_cmpint (symlink (other, folder), ==, 0);
  /* a folder of its own is walked, and its messages rewritten */
  g_autofree char *own = g_build_filename (md, ".Own", NULL);
  for (const char *const *sub = (const char *const[]) { "cur", "new", "tmp", NULL }; *sub; sub++) {
    g_autofree char *d = g_build_filename (own, *sub, NULL);
    g_assert_cmpint (g_mkdir_with_parents (d, 0700), ==, 0);
  }
  g_autofree char *own_msg = g_build_filename (own, "new", "11.own.host", NULL);
  put (own_msg, MD_REF, strlen (MD_REF));
  g_autofree char *named = path_in_work ("md-links-by-link");
  g_assert_cmpint (symlink (md, named), ==, 0);

  g_autofree char *cmd = g_strdup_printf ("'%s' rewrite -c '%s' -r --maildir '%s' 2>&1", extbody_path (), conf, named);
  g_autofree char *out = NULL;
  int status = sh (cmd, &out);
  g_test_message ("exit %d: %s", status, out);
  g_assert_cmpint (status, ==, 0);
  g_assert_nonnull (strstr (out, "/cur: a symbolic link, not followed"));
  g_assert_nonnull (strstr (out, "/.Other: a symbolic link, not followed"));
  g_assert_nonnull (strstr (out, "1 messages scanned (2 entries skipped), 1 references, 1 resolved, 1 messages changed"));
  g_autoptr (GBytes) o = read_all (outside);
  g_assert_cmpmem (g_bytes_get_data (o, NULL), g_bytes_get_size (o), MD_REF, strlen (MD_REF));
  g_autoptr (GBytes) om = read_all (other_msg);
  g_assert_cmpmem (g_bytes_get_data (om, NULL), g_bytes_get_size (om), MD_REF, strlen (MD_REF));
  struct stat st;
  g_assert_cmpint (lstat (cur, &st), ==, 0);
  g_assert_true (S_ISLNK (st.st_mode));
  g_assert_false (g_file_test (own_msg, G_FILE_TEST_EXISTS));
  g_autofree char *own_new = g_build_filename (own, "new", NULL);
  g_autofree char *own_now = sole_file (own_new);
  g_autoptr (GBytes) on = read_all (own_now);
  g_assert_true (contains (on, "resolved text", 13));
}

/* A hard-linked message or mbox is left alone with a reason: renaming the new
 * version over one name would leave the other name holding the old one. */
static void
test_hard_links (void)
{
  g_autofree char *md = make_maildir ("md-hardlink");
  g_autofree char *msg = g_build_filename (md, "new", "12.linked.host", NULL);
  g_autofree char *twin = path_in_work ("md-hardlink-twin");
  put (msg, MD_REF, strlen (MD_REF));
  g_assert_cmpint (link (msg, twin), ==, 0);
  g_autofree char *cmd = g_strdup_printf ("'%s' rewrite -c '%s' --maildir '%s' 2>&1", extbody_path (), conf, md);
  g_autofree char *out = NULL;
  int status = sh (cmd, &out);
  g_test_message ("exit %d: %s", status, out);
  g_assert_cmpint (status, ==, 0);
  g_assert_nonnull (strstr (out, "skipped "));
  g_assert_nonnull (strstr (out, "12.linked.host: hard-linked"));
  g_assert_nonnull (strstr (out, "(1 entries skipped)"));
  g_autoptr (GBytes) m = read_all (msg);
  g_assert_cmpmem (g_bytes_get_data (m, NULL), g_bytes_get_size (m), MD_REF, strlen (MD_REF));
  struct stat a, b;
  g_assert_cmpint (stat (msg, &a), ==, 0);
  g_assert_cmpint (stat (twin, &b), ==, 0);
  g_assert_cmpuint (a.st_ino, ==, b.st_ino);

  g_autofree char *box = fresh_box ("hardlink.mbox");
  g_autofree char *boxtwin = path_in_work ("hardlink-twin.mbox");
  g_assert_cmpint (link (box, boxtwin), ==, 0);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "--mbox", box);
  g_autofree char *err = err_text (&r);
  g_test_message ("exit %d: %s", r.status, err);
  g_assert_cmpint (r.status, ==, EX_CANTCREAT);
  g_assert_nonnull (strstr (err, "hard-linked"));
  g_assert_true (box_unchanged (box));
  g_assert_cmpint (stat (box, &a), ==, 0);
  g_assert_cmpint (stat (boxtwin, &b), ==, 0);
  g_assert_cmpuint (a.st_ino, ==, b.st_ino);
  g_autofree char *lock = g_strconcat (box, ".lock", NULL);
  g_assert_false (g_file_test (lock, G_FILE_TEST_EXISTS));
}

/* Maildir++ sizes: ",S=" is the new size, ",W=" the new size with every line
 * end counted as CRLF (as Dovecot reads it); the flags are kept and the
 * message gets a new base name; the old file is gone. */
typedef struct {
  const char *name;
  const char *old;     /* the file name */
  gboolean    crlf;
} SizeCase;

static const SizeCase size_cases[] = {
  { "lf", "13.sized.host,S=999,W=1010:2,FS", FALSE },
  { "crlf", "14.sized.host,S=999,W=999:2,RS", TRUE },
  { "w-only", "15.sized.host,W=1:2,", FALSE },
};

static void
test_maildir_sizes (gconstpointer data)
{
  const SizeCase *c = data;
  g_autofree char *mdname = g_strdup_printf ("md-size-%s", c->name);
  g_autofree char *md = make_maildir (mdname);
  g_autofree char *msg = g_build_filename (md, "cur", c->old, NULL);
  g_autofree char *m = NULL;
  if (c->crlf) {
    g_auto (GStrv) lines = g_strsplit (MD_REF, "\n", -1);
    m = g_strjoinv ("\r\n", lines);
  } else {
    m = g_strdup (MD_REF);
  }
  put (msg, m, strlen (m));
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "--maildir", md);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_false (g_file_test (msg, G_FILE_TEST_EXISTS));
  g_autofree char *cur = g_build_filename (md, "cur", NULL);
  g_autofree char *now = sole_file (cur);
  g_autofree char *name = g_path_get_basename (now);
  g_autoptr (GBytes) b = read_all (now);
  gsize n = 0;
  const char *d = g_bytes_get_data (b, &n);
  g_assert_true (contains (b, "resolved text", 13));
  guint64 lf = 0, bare = 0;
  for (gsize i = 0; i < n; i++)
    if (d[i] == '\n') {
      lf++;
      bare += i == 0 || d[i - 1] != '\r';
    }
  g_assert_cmpuint (lf, >, 0);
  if (c->crlf)
    g_assert_cmpuint (bare, ==, 0);
  /* a new base: not the old one */
  const char *oldbase_end = strchr (c->old, ',');
  g_assert_false (strncmp (name, c->old, (gsize) (oldbase_end - c->old)) == 0);
  g_autofree char *want = NULL;
  const char *flags = strchr (c->old, ':');
  if (strstr (c->old, ",S="))
    want = g_strdup_printf (",S=%" G_GSIZE_FORMAT ",W=%" G_GUINT64_FORMAT "%s", n, (guint64) n + bare, flags);
  else
    want = g_strdup_printf (",W=%" G_GUINT64_FORMAT "%s", (guint64) n + bare, flags);
  g_test_message ("%s -> %s", c->old, name);
  g_assert_true (g_str_has_suffix (name, want));
  g_assert_cmpuint (strlen (name), ==, strcspn (name, ",") + strlen (want));
}

/* The virtual size itself. */
static void
test_virtual_size (void)
{
  g_assert_cmpuint (eb_maildir_virtual_size ("", 0), ==, 0);
  g_assert_cmpuint (eb_maildir_virtual_size ("a\nb\n", 4), ==, 6);
  g_assert_cmpuint (eb_maildir_virtual_size ("a\r\nb\r\n", 6), ==, 6);
  g_assert_cmpuint (eb_maildir_virtual_size ("\n\r\n\n", 4), ==, 6);
  g_assert_cmpuint (eb_maildir_virtual_size ("no end", 6), ==, 6);
}

/* ---- mboxrd quoting, Content-Length -------------------------------------- */

/* New text in an mbox never starts a line with ">From ", ">>From ": an mboxrd
 * reader would take a ">" off. Quoted-printable writes "=3EFrom". A new body
 * that cannot be encoded (a message/rfc822) is mboxrd-quoted by the mbox
 * writer: every "From ", ">From " ... line gets one more ">". */
static void
test_mboxrd_quoting (void)
{
  const char m[] =
    FROM ("q") "From: q@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,one%0A%3EFrom%20two%0A%3E%3EFrom%20three%0A\"\n\n"
    "Content-Type: text/plain\n\n--b\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:message/rfc822,Subject:%20inner%0A%0A%3EFrom%20a%0AFrom%20b%0A%3E%3EFrom%20c%0A\"\n\n"
    "Content-Type: message/rfc822\n\n--b--\n\n"
    PLAIN ("p", "kept\n>From as it was\n");
  g_autofree char *box = path_in_work ("mboxrd.mbox");
  put (box, m, strlen (m));
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "--mbox", box);
  g_autofree char *err = err_text (&r);
  g_test_message ("exit %d: %s", r.status, err);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_nonnull (strstr (err, "2 resolved"));
  g_autoptr (GBytes) out = read_all (box);
  g_autofree char *s = g_strndup (g_bytes_get_data (out, NULL), g_bytes_get_size (out));
  g_test_message ("%s", s);
  /* the text: quoted-printable, no line an mboxrd reader would change */
  g_assert_nonnull (strstr (s, "\none\n=3EFrom two\n=3E>From three\n"));
  /* the message: mboxrd-quoted once */
  g_assert_nonnull (strstr (s, "Subject: inner\n\n>>From a\n>From b\n>>>From c\n"));
  /* the untouched message exactly as it was */
  g_assert_true (g_str_has_suffix (s, PLAIN ("p", "kept\n>From as it was\n")));
  g_assert_cmpuint (n_messages (out), ==, 2);
}

/* A top-level Content-Length of a rewritten message would be wrong: it is
 * removed (with its continuation line); an unchanged message keeps its own. */
static void
test_content_length (void)
{
  const char m[] =
    FROM ("c") "From: c@example.org\nContent-Length: 83\n\t \nMIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,resolved%20text%20longer%20than%20before\"\n\n"
    "Content-Type: text/plain\n\n--b--\n\n"
    PLAIN ("d", "Content-Length: 1\n");
  const char kept[] = FROM ("k") "From: k@example.org\nContent-Length: 5\n\nbody\n";
  g_autofree char *box = path_in_work ("content-length.mbox");
  g_autofree char *all = g_strconcat (m, "\n", kept, NULL);
  put (box, all, strlen (all));
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "--mbox", box);
  g_assert_cmpint (r.status, ==, 0);
  g_autoptr (GBytes) out = read_all (box);
  g_autofree char *s = g_strndup (g_bytes_get_data (out, NULL), g_bytes_get_size (out));
  g_test_message ("%s", s);
  g_assert_nonnull (strstr (s, "resolved text longer than before"));
  g_assert_true (g_str_has_prefix (s, FROM ("c") "From: c@example.org\nMIME-Version: 1.0\n"));
  g_assert_nonnull (strstr (s, "\nContent-Length: 1\n"));   /* a body line, not a field */
  g_assert_true (g_str_has_suffix (s, kept));
  /* 100000 of them: all gone, in one pass */
  GString *many = g_string_new (FROM ("m") "From: m@example.org\n");
  for (int i = 0; i < 100000; i++)
    g_string_append (many, "Content-Length: 5\n");
  g_string_append (many, "MIME-Version: 1.0\nContent-Type: message/external-body; access-type=URL; "
                         "URL=\"data:,many\"\n\nContent-Type: text/plain\n\n");
  g_autofree char *box2 = path_in_work ("content-length-many.mbox");
  put (box2, many->str, many->len);
  g_string_free (many, TRUE);
  g_auto (CmdResult) r2 = { 0 };
  RUN (&r2, NULL, "rewrite", "-c", conf, "--mbox", box2);
  g_assert_cmpint (r2.status, ==, 0);
  g_autoptr (GBytes) out2 = read_all (box2);
  g_assert_true (contains (out2, "many", 4));
  g_assert_false (contains (out2, "Content-Length", 14));
}

/* ---- From_ lines -------------------------------------------------------- */

typedef struct {
  const char *line;
  gboolean    is_from;
} FromCase;

static const FromCase from_cases[] = {
  { "From a@example.org Sat Nov 21 10:00:00 2026\n", TRUE },
  { "From a@example.org Sat Nov 21 10:00:00 2026\r\n", TRUE },
  { "From a@example.org  Sat Nov  1 10:00:00 2026", TRUE },
  { "From a@example.org Sat Nov 21 10:00 2026\n", TRUE },
  { "From a@example.org Sat Nov 21 10:00:00 PST 2026\n", TRUE },
  { "From a@example.org Sat Nov 21 10:00:00 +0100 2026\n", TRUE },
  { "From a@example.org Sat Nov 21 10:00:00 2026 +0100\n", TRUE },
  { "From a@example.org Sat Nov 21 10:00:00 MET DST 2026\n", TRUE },
  { "From uucp Sat Nov 21 10:00:00 2026 remote from gateway\n", TRUE },
  { "From \"a b\"@example.org Sat Nov 21 10:00:00 2026\n", TRUE },
  { "From Sat Nov 21 10:00:00 2026\n", TRUE },                     /* no sender */
  { "From MAILER-DAEMON Fri Jan  2 03:04:05 1998\n", TRUE },
  { "From the desk of the editor: Sat Nov 21\n", FALSE },
  { "From the desk of the editor: hello\n", FALSE },
  { "From here to there\n", FALSE },
  { "From a@example.org\n", FALSE },
  { "From a@example.org Sat Nov 21 2026\n", FALSE },               /* no time */
  { "From a@example.org Sat Nov 21 10:00:00\n", FALSE },           /* no year */
  { "From a@example.org Sat Nov 21 10:00:00 2026 and more words\n", FALSE },
  { "From a@example.org Sat Nov 21 25-00-00 2026\n", FALSE },
  { "From a@example.org Sat Xyz 21 10:00:00 2026\n", FALSE },
  { "From: a@example.org Sat Nov 21 10:00:00 2026\n", FALSE },
  { ">From a@example.org Sat Nov 21 10:00:00 2026\n", FALSE },
  { "from a@example.org Sat Nov 21 10:00:00 2026\n", FALSE },
};

static void
test_from_lines (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (from_cases); i++) {
    g_test_message ("%s", from_cases[i].line);
    g_assert_cmpint (eb_mbox_is_from_line (from_cases[i].line, strlen (from_cases[i].line)), ==,
                     from_cases[i].is_from);
  }
  /* a long line never is */
  GString *l = g_string_new ("From a@example.org Sat Nov 21 10:00:00 2026");
  for (int i = 0; i < 2000; i++)
    g_string_append (l, " remote");
  g_assert_false (eb_mbox_is_from_line (l->str, l->len));
  g_string_free (l, TRUE);
}

/* A reference whose phantom body holds "From the desk of the editor" after a
 * blank line: one message, rewritten whole, not split in two. */
static void
test_from_in_phantom_body (void)
{
  const char m[] =
    FROM ("e") "From: e@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,resolved%20text\"\n\n"
    "Content-Type: text/plain\n\nFrom the desk of the editor: see the attached text.\n\n"
    "From here on, the phantom body.\n--b--\n\n"
    PLAIN ("f", "second\n");
  g_autofree char *box = path_in_work ("phantom-from.mbox");
  put (box, m, strlen (m));
  g_autoptr (GBytes) in = text (m);
  g_assert_cmpuint (n_messages (in), ==, 2);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "--mbox", box);
  g_autofree char *err = err_text (&r);
  g_test_message ("exit %d: %s", r.status, err);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_nonnull (strstr (err, "2 messages scanned, 1 references, 1 resolved"));
  g_autoptr (GBytes) out = read_all (box);
  g_autofree char *s = g_strndup (g_bytes_get_data (out, NULL), g_bytes_get_size (out));
  g_test_message ("%s", s);
  g_assert_nonnull (strstr (s, "resolved text"));
  g_assert_null (strstr (s, "desk of the editor"));   /* the phantom body went with the reference */
  g_assert_null (strstr (s, "phantom body"));
  g_assert_nonnull (strstr (s, "\n--b--\n\n" FROM ("f")));
  g_assert_cmpuint (n_messages (out), ==, 2);
}

/* ---- a mailbox that cannot be written ------------------------------------- */

/* A read-only mbox (not writable by whoever runs extbody): 73, EX_CANTCREAT,
 * not 66 - the file is there. As root everything is writable: the command is
 * run as nobody (setpriv) on a root-owned 0644 file - a copy of it beside the
 * mbox, nobody may not reach the checkout (root's 0700 home). */
static void
test_read_only (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbody-ro-XXXXXX", NULL);
  g_assert_cmpint (chmod (dir, 0755), ==, 0);
  g_autofree char *box = g_build_filename (dir, "ro.mbox", NULL);
  g_autofree char *c = g_build_filename (dir, "empty.conf", NULL);
  put (box, plain_box, strlen (plain_box));
  put (c, "", 0);
  g_assert_cmpint (chmod (box, 0444), ==, 0);
  g_assert_cmpint (chmod (c, 0644), ==, 0);
  g_autofree char *as = NULL;
  g_autofree char *extbody = NULL;
  if (geteuid () == 0) {
    extbody = test_copy_for_everyone (extbody_path (), dir, "extbody", 0755);
    as = g_strdup ("setpriv --reuid=nobody --regid=nogroup --clear-groups ");
    g_autofree char *probe = g_strdup_printf ("%s'%s' --help >/dev/null", as, extbody);
    g_assert_cmpint (sh (probe, NULL), ==, 0);
  } else {
    extbody = g_strdup (extbody_path ());
    as = g_strdup ("");
  }
  g_autofree char *cmd = g_strdup_printf ("%s'%s' rewrite -c '%s' --mbox '%s' 2>&1", as, extbody, c, box);
  g_autofree char *out = NULL;
  int status = sh (cmd, &out);
  g_test_message ("exit %d: %s", status, out);
  g_assert_cmpint (status, ==, EX_CANTCREAT);
  g_assert_nonnull (strstr (out, "cannot write"));
  g_assert_nonnull (strstr (out, "unchanged"));
  g_assert_true (box_unchanged (box));
  /* a writable mbox in a directory it cannot write beside: also 73 */
  g_assert_cmpint (chown (box, 65534, 65534), ==, 0);
  g_assert_cmpint (chmod (box, 0644), ==, 0);
  if (geteuid () != 0)
    g_assert_cmpint (chmod (dir, 0555), ==, 0);
  g_autofree char *out2 = NULL;
  status = sh (cmd, &out2);
  g_test_message ("exit %d: %s", status, out2);
  g_assert_cmpint (status, ==, EX_CANTCREAT);
  g_assert_true (box_unchanged (box));
  chmod (dir, 0755);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  sh (rm, NULL);
}

/* ---- a pipe --------------------------------------------------------------- */

/* A message from a pipe, named as a file (/dev/stdin, a process substitution):
 * read once, resolved, not mistaken for an empty file. */
static void
test_pipe (void)
{
  g_autofree char *msg = path_in_work ("pipe.eml");
  const char *m = MD_REF;
  put (msg, m, strlen (m));
  g_autofree char *cmd = g_strdup_printf ("cat '%s' | '%s' rewrite -c '%s' /dev/stdin", msg, extbody_path (), conf);
  g_autofree char *out = NULL;
  g_assert_cmpint (sh (cmd, &out), ==, 0);
  g_assert_nonnull (strstr (out, "resolved text"));
  g_assert_null (strstr (out, "external-body"));
  /* a process substitution: the sniff for an mbox must not eat the input */
  g_autofree char *cmd2 = g_strdup_printf ("bash -c \"'%s' rewrite -c '%s' <(cat '%s')\"", extbody_path (), conf, msg);
  g_autofree char *out2 = NULL;
  g_assert_cmpint (sh (cmd2, &out2), ==, 0);
  g_assert_nonnull (strstr (out2, "resolved text"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  work = g_dir_make_tmp ("extbody-hostile-mailbox-XXXXXX", NULL);
  conf = path_in_work ("empty.conf");
  put (conf, "", 0);
  for (guint i = 0; i < G_N_ELEMENTS (content_cases); i++) {
    g_autofree char *p = g_strdup_printf ("/hostile/mailbox/content/%s", content_cases[i].name);
    g_test_add_data_func (p, &content_cases[i], test_content);
  }
  g_test_add_func ("/hostile/mailbox/path/missing", test_missing);
  g_test_add_func ("/hostile/mailbox/path/directory", test_directory);
  g_test_add_func ("/hostile/mailbox/path/fifo", test_fifo);
  g_test_add_func ("/hostile/mailbox/path/symlink", test_symlink);
  g_test_add_func ("/hostile/mailbox/lock/dotlock-live", test_dotlock_live);
  g_test_add_func ("/hostile/mailbox/lock/dotlock-stale", test_dotlock_stale);
  for (guint i = 0; i < G_N_ELEMENTS (fcntl_cases); i++) {
    g_autofree char *p = g_strdup_printf ("/hostile/mailbox/lock/fcntl-%s", fcntl_cases[i].name);
    g_test_add_data_func (p, &fcntl_cases[i], test_fcntl);
  }
  g_test_add_func ("/hostile/mailbox/lock/stale-temp-file", test_stale_temp);
  g_test_add_func ("/hostile/mailbox/during/unlocked-writer", test_unlocked_writer);
  for (guint i = 0; i < G_N_ELEMENTS (stop_signals); i++) {
    g_autofree char *p = g_strdup_printf ("/hostile/mailbox/during/signal-%s", g_strsignal (stop_signals[i]));
    for (char *c = p; *c; c++)
      if (*c == ' ')
        *c = '-';
    g_test_add_data_func (p, &stop_signals[i], test_signal);
  }
  g_test_add_func ("/hostile/mailbox/maildir/entries", test_maildir_entries);
  g_test_add_func ("/hostile/mailbox/maildir/moved-during-run", test_maildir_moved);
  g_test_add_func ("/hostile/mailbox/maildir/owner-kept", test_maildir_owner);
  g_test_add_func ("/hostile/mailbox/maildir/symlinks-not-followed", test_maildir_symlinks);
  g_test_add_func ("/hostile/mailbox/hard-links", test_hard_links);
  for (guint i = 0; i < G_N_ELEMENTS (size_cases); i++) {
    g_autofree char *p = g_strdup_printf ("/hostile/mailbox/maildir/sizes-%s", size_cases[i].name);
    g_test_add_data_func (p, &size_cases[i], test_maildir_sizes);
  }
  g_test_add_func ("/hostile/mailbox/maildir/virtual-size", test_virtual_size);
  g_test_add_func ("/hostile/mailbox/mbox/mboxrd-quoting", test_mboxrd_quoting);
  g_test_add_func ("/hostile/mailbox/mbox/content-length", test_content_length);
  g_test_add_func ("/hostile/mailbox/mbox/from-lines", test_from_lines);
  g_test_add_func ("/hostile/mailbox/mbox/from-in-phantom-body", test_from_in_phantom_body);
  g_test_add_func ("/hostile/mailbox/mbox/read-only", test_read_only);
  g_test_add_func ("/hostile/mailbox/pipe", test_pipe);
  int ret = g_test_run ();
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", work);
  if (ret == 0)
    sh (rm, NULL);
  return ret;
}
