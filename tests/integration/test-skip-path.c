/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-skip-path.c - the mailbox skip path gives what the whole parse gives,
 * byte for byte (issue 29).
 *
 * In a mailbox run the split looks for "external-body" (any case) as it finds
 * the From_ lines, and a message without it is neither parsed nor handed to a
 * worker (its bytes are copied in long runs); externalize leaves a message
 * shorter than externalize_min_size unparsed; a Maildir message without it
 * is not parsed either, and an unchanged Maildir file is never touched.
 * --no-precheck turns all of that off: every message goes through the MIME
 * parse. Each mailbox here goes through
 *
 *   rewrite --mbox, rewrite --maildir, externalize --mbox, externalize
 *   --maildir (a directory store), inspect --json --mbox and --maildir, and
 *   for some the inspect table of the mbox
 *
 * on the skip path at -j 1 and -j 2 and on the whole parse (--no-precheck) at
 * -j 1, fetching off, and every outcome of one command must equal the others:
 * the exit status, standard output, standard error (the summary), the
 * mailbox afterwards (the mbox byte for byte; each Maildir file by folder,
 * name and content, a rewritten message by folder, flags and sizes since its
 * new base name is unique), the objects in the store. In every Maildir run a
 * file whose message did not change keeps its name, inode, mtime and ctime
 * (nanoseconds), a file replaced held a message that did change, and tmp/ is
 * left empty; an mbox in which nothing changed is not rewritten.
 *
 * The mailboxes: corpora of tests/bench/gen-corpus.py (seeds 1 to 3, 0, 10,
 * 50 and 100% of messages with references, LF and CRLF, mbox and Maildir,
 * each over 2 MiB); every message of the hostile suite (hostile-cases.h: the
 * cases, and each walk and size limit's messages just below, at and just
 * above it, under that limit's setting); the real messages of tests/corpus/;
 * messages with "external-body" only in a body, only in a header, only in a
 * From_ line, in upper, lower and mixed case, a From_ line right after it,
 * with and without a blank line before, a stale Content-Length; and an mbox
 * in which "external-body" and From_ lines (LF and CRLF) straddle the split's
 * 2 MiB chunk borders (SCAN_CHUNK in src/mailbox/eb-batch.c) at every
 * position, each reference resolved.
 *
 * The hostile messages that take seconds to parse (10,000 levels, 100,000
 * parts, 10,000 parts, 32 MiB parts, 64 MiB messages; /skip-path/heavy) hold
 * "external-body" and are parsed on both paths: for them rewrite --mbox
 * alone is compared, at -j 2. tests/CMakeLists.txt runs the program as three
 * tests: the mail (test-skip-path), the hostile suite
 * (test-skip-path-hostile), the heavy ones (test-skip-path-heavy).
 *
 * One difference is known and asserted as such (too_large_without_reference):
 * a message above max_message_size without "external-body" counts as
 * "message-too-large" in the summary of the whole parse, not on the skip
 * path; the mailbox is the same. */
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "run-command.h"
#include "../hostile/hostile-cases.h"

#define BASE_URL   "http://127.0.0.1:9/skip/store"
#define SCAN_CHUNK (2 << 20)   /* as src/mailbox/eb-batch.c */

static char *work;
static guint serial;
static gint64 t_cmd;   /* microseconds spent in extbody processes */

/* ---- files ----------------------------------------------------------------- */

static char *
new_dir (const char *label)
{
  g_autofree char *name = g_strdup_printf ("%04u-%s", ++serial, label);
  for (char *c = name; *c; c++)
    if (*c == '/' || *c == ' ' || *c == '=')
      *c = '-';
  char *d = g_build_filename (work, name, NULL);
  g_assert_cmpint (g_mkdir_with_parents (d, 0755), ==, 0);
  return d;
}

static void
put_file (const char *path, const char *data, gsize len)
{
  g_autoptr (GError) e = NULL;
  g_file_set_contents (path, data, (gssize) len, &e);
  g_assert_no_error (e);
}

static void
sh_ok (const char *const *argv)
{
  g_autoptr (GError) e = NULL;
  int status = 0;
  g_autofree char *err = NULL;
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                NULL, &err, &status, &e);
  g_assert_no_error (e);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("%s failed: %s", argv[0], err);
}

static void
rm_rf (const char *path)
{
  sh_ok ((const char *const[]) { "rm", "-rf", path, NULL });
}

static char *
file_sha (const char *path)
{
  g_autoptr (GBytes) b = file_bytes (path);
  return g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, b);
}

/* ---- mailboxes ------------------------------------------------------------- */

/* A mailbox to check: an mbox (dir/box.mbox) and/or a Maildir (dir/Maildir)
 * holding the same messages, the -o settings it runs under, and what to run. */
typedef struct {
  char      *name;
  char      *dir;
  gboolean   mbox, maildir;
  GPtrArray *opts;             /* "KEY=VALUE", each given with -o */
  guint64    min_size;         /* externalize_min_size */
  gboolean   externalize;
  gboolean   heavy;            /* slow to parse: fewer runs (check_box, check_cmd) */
  gboolean   table;            /* inspect without --json too */
} Box;

static void
box_free (Box *b)
{
  rm_rf (b->dir);
  g_free (b->name);
  g_free (b->dir);
  g_ptr_array_unref (b->opts);
  g_free (b);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Box, box_free)

static Box *
box_new (const char *name)
{
  Box *b = g_new0 (Box, 1);
  b->name = g_strdup (name);
  b->dir = new_dir (name);
  b->opts = g_ptr_array_new_with_free_func (g_free);
  b->min_size = 4096;
  b->externalize = TRUE;
  b->table = TRUE;
  return b;
}

/* mboxrd: a line that is ">*From " gets one more ">". */
static void
append_quoted (GString *mbox, const char *msg, gsize len)
{
  gboolean bol = TRUE;
  for (gsize i = 0; i < len; i++) {
    if (bol) {
      gsize j = i;
      while (j < len && msg[j] == '>')
        j++;
      if (len - j >= 5 && memcmp (msg + j, "From ", 5) == 0)
        g_string_append_c (mbox, '>');
    }
    g_string_append_c (mbox, msg[i]);
    bol = msg[i] == '\n';
  }
}

/* A message of the mbox: its From_ line and its text (as read). */
typedef struct {
  const char *from;   /* NULL: a plain one */
  GString    *text;
} Msg;

static void
msgs_free (GArray *a)
{
  for (guint i = 0; i < a->len; i++)
    g_string_free (g_array_index (a, Msg, i).text, TRUE);
  g_array_unref (a);
}

static void
add_msg (GArray *msgs, const char *from, GString *text /* (transfer full) */)
{
  Msg m = { from, text };
  g_array_append_val (msgs, m);
}

/* @msgs as an mbox and as a Maildir (some in new/, most in cur/ with flags,
 * some with ",S=" sizes). */
static void
box_write (Box *b, GArray *msgs)
{
  GString *mbox = g_string_new (NULL);
  g_autofree char *md = g_build_filename (b->dir, "Maildir", NULL);
  const char *subs[] = { "cur", "new", "tmp" };
  for (guint i = 0; i < 3; i++) {
    g_autofree char *s = g_build_filename (md, subs[i], NULL);
    g_assert_cmpint (g_mkdir_with_parents (s, 0755), ==, 0);
  }
  for (guint i = 0; i < msgs->len; i++) {
    const Msg *m = &g_array_index (msgs, Msg, i);
    g_string_append (mbox, m->from ? m->from : "From sender@example.org Sat Nov 21 10:00:00 2026\n");
    append_quoted (mbox, m->text->str, m->text->len);
    if (m->text->len && m->text->str[m->text->len - 1] != '\n')
      g_string_append_c (mbox, '\n');
    g_string_append_c (mbox, '\n');
    g_autofree char *fname = NULL;
    if (i % 5 == 4)
      fname = g_strdup_printf ("new/1700000000.M%06uP1Q%u.skiptest", i, i);
    else if (i % 3 == 2)
      fname = g_strdup_printf ("cur/1700000000.M%06uP1Q%u.skiptest,S=%" G_GSIZE_FORMAT ":2,RS", i, i,
                               m->text->len);
    else
      fname = g_strdup_printf ("cur/1700000000.M%06uP1Q%u.skiptest:2,S", i, i);
    g_autofree char *p = g_build_filename (md, fname, NULL);
    put_file (p, m->text->str, m->text->len);
  }
  g_autofree char *mp = g_build_filename (b->dir, "box.mbox", NULL);
  put_file (mp, mbox->str, mbox->len);
  g_string_free (mbox, TRUE);
  b->mbox = b->maildir = TRUE;
}

/* ---- one run ----------------------------------------------------------------- */

typedef enum { REWRITE, EXTERNALIZE, INSPECT, INSPECT_JSON } Cmd;
static const char *const cmd_names[] = { "rewrite", "externalize", "inspect", "inspect --json" };

/* What one command did: compared whole between the runs of a command. */
typedef struct {
  int        status;
  GBytes    *out, *err;
  GBytes    *mbox;    /* the mbox afterwards */
  GPtrArray *files;   /* the Maildir afterwards, one line per file, sorted */
  GPtrArray *store;   /* the store's objects: "NAME SHA256", sorted */
  guint      kept, replaced;
} Outcome;

static void
outcome_free (Outcome *o)
{
  g_clear_pointer (&o->out, g_bytes_unref);
  g_clear_pointer (&o->err, g_bytes_unref);
  g_clear_pointer (&o->mbox, g_bytes_unref);
  g_clear_pointer (&o->files, g_ptr_array_unref);
  g_clear_pointer (&o->store, g_ptr_array_unref);
  g_free (o);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Outcome, outcome_free)

static gint
cmp_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* A Maildir file as stat saw it before the run. */
typedef struct {
  char           *sha;
  ino_t           ino;
  struct timespec mtime, ctime;
} Before;

static void
before_free (gpointer p)
{
  Before *b = p;
  g_free (b->sha);
  g_free (b);
}

/* Every regular file of cur/ and new/ ("cur/NAME") with its stat. */
static GHashTable *
maildir_snapshot (const char *md)
{
  GHashTable *h = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, before_free);
  const char *subs[] = { "cur", "new" };
  for (guint s = 0; s < 2; s++) {
    g_autofree char *sd = g_build_filename (md, subs[s], NULL);
    g_autoptr (GDir) d = g_dir_open (sd, 0, NULL);
    g_assert_nonnull (d);
    const char *n;
    while ((n = g_dir_read_name (d))) {
      g_autofree char *p = g_build_filename (sd, n, NULL);
      struct stat st;
      g_assert_cmpint (lstat (p, &st), ==, 0);
      g_assert_true (S_ISREG (st.st_mode));
      Before *b = g_new0 (Before, 1);
      b->sha = file_sha (p);
      b->ino = st.st_ino;
      b->mtime = st.st_mtim;
      b->ctime = st.st_ctim;
      g_hash_table_insert (h, g_strdup_printf ("%s/%s", subs[s], n), b);
    }
  }
  return h;
}

static gboolean
same_time (const struct timespec *a, const struct timespec *b)
{
  return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* The Maildir after a run against its snapshot: a file still there is the
 * same file, untouched (inode, mtime, ctime, content); a file gone held a
 * message that is not there any more as it was; as many new files as gone
 * ones, with the flags of a gone one. The new files are described by folder,
 * what follows their base name (flags, ",S=" and ",W=") and content. */
static GPtrArray *
maildir_check (const char *md, GHashTable *before, guint *kept, guint *replaced, const char *what)
{
  g_autoptr (GHashTable) after = maildir_snapshot (md);
  g_autoptr (GHashTable) contents = g_hash_table_new (g_str_hash, g_str_equal);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, after);
  while (g_hash_table_iter_next (&it, &k, &v))
    g_hash_table_add (contents, ((Before *) v)->sha);
  GPtrArray *lines = g_ptr_array_new_with_free_func (g_free);
  guint gone = 0;
  g_hash_table_iter_init (&it, before);
  while (g_hash_table_iter_next (&it, &k, &v)) {
    const Before *was = v;
    const Before *now = g_hash_table_lookup (after, k);
    if (now) {
      if (now->ino != was->ino || !same_time (&now->mtime, &was->mtime)
          || !same_time (&now->ctime, &was->ctime) || strcmp (now->sha, was->sha) != 0)
        g_error ("%s: %s/%s was touched though its message did not change (inode %lu -> %lu, "
                 "mtime %ld.%09ld -> %ld.%09ld, ctime %ld.%09ld -> %ld.%09ld)", what, md, (char *) k,
                 (unsigned long) was->ino, (unsigned long) now->ino, (long) was->mtime.tv_sec,
                 was->mtime.tv_nsec, (long) now->mtime.tv_sec, now->mtime.tv_nsec, (long) was->ctime.tv_sec,
                 was->ctime.tv_nsec, (long) now->ctime.tv_sec, now->ctime.tv_nsec);
      g_ptr_array_add (lines, g_strdup_printf ("kept %s %s", (char *) k, now->sha));
    } else {
      gone++;
      if (g_hash_table_contains (contents, was->sha))
        g_error ("%s: %s/%s was replaced by the same message", what, md, (char *) k);
    }
  }
  guint fresh = 0;
  g_hash_table_iter_init (&it, after);
  while (g_hash_table_iter_next (&it, &k, &v)) {
    if (g_hash_table_contains (before, k))
      continue;
    fresh++;
    const char *name = (const char *) k + 4;   /* after "cur/" or "new/" */
    g_ptr_array_add (lines, g_strdup_printf ("new %.3s/*%s %s", (const char *) k, name + strcspn (name, ",:"),
                                             ((Before *) v)->sha));
  }
  g_assert_cmpuint (fresh, ==, gone);
  g_autofree char *tmp = g_build_filename (md, "tmp", NULL);
  g_autoptr (GDir) d = g_dir_open (tmp, 0, NULL);
  g_assert_nonnull (d);
  g_assert_null (g_dir_read_name (d));   /* nothing left behind */
  g_ptr_array_sort (lines, cmp_str);
  *kept = g_hash_table_size (before) - gone;
  *replaced = gone;
  return lines;
}

static GPtrArray *
store_list (const char *store)
{
  GPtrArray *lines = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GDir) d = g_dir_open (store, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name (d))) {
    g_autofree char *p = g_build_filename (store, n, NULL);
    g_autofree char *s = file_sha (p);
    g_ptr_array_add (lines, g_strdup_printf ("%s %s", n, s));
  }
  g_ptr_array_sort (lines, cmp_str);
  return lines;
}

/* @cmd over a copy of @b's mbox (@maildir: its Maildir), @jobs at once, the
 * whole parse when @full. Run in a directory of its own under the same
 * relative names, so that every output can be compared whole. */
static Outcome *
run_one (const Box *b, Cmd cmd, gboolean maildir, guint jobs, gboolean full)
{
  g_autofree char *label = g_strdup_printf ("%s-%s-%s-j%u%s", b->name, cmd_names[cmd], maildir ? "maildir" : "mbox",
                                            jobs, full ? "-full" : "");
  g_autofree char *dir = new_dir (label);
  const char *box = maildir ? "Maildir" : "box.mbox";
  g_autofree char *src = g_build_filename (b->dir, box, NULL);
  g_autofree char *dst = g_build_filename (dir, box, NULL);
  gboolean writes = cmd == REWRITE || cmd == EXTERNALIZE;
  const char *cwd = writes ? dir : b->dir;   /* inspect reads the mailbox where it is */
  if (writes)
    sh_ok ((const char *const[]) { "cp", "-R", src, dst, NULL });
  g_autofree char *store = g_build_filename (dir, "store", NULL);
  g_autofree char *conf = g_build_filename (dir, "extbody.conf", NULL);
  g_autofree char *conf_text = NULL;
  if (cmd == EXTERNALIZE) {
    g_assert_cmpint (g_mkdir (store, 0755), ==, 0);
    conf_text = g_strdup_printf ("[extbody]\nexternalize_store = %s\nexternalize_base_url = %s\n"
                                 "externalize_min_size = %" G_GUINT64_FORMAT "\n", store, BASE_URL, b->min_size);
  } else {
    conf_text = g_strdup ("[extbody]\n");
  }
  put_file (conf, conf_text, strlen (conf_text));

  g_autoptr (GPtrArray) args = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (args, g_strdup (cmd == INSPECT_JSON ? "inspect" : cmd_names[cmd]));
  g_ptr_array_add (args, g_strdup ("-c"));
  g_ptr_array_add (args, g_strdup (conf));
  g_ptr_array_add (args, g_strdup ("-o"));
  g_ptr_array_add (args, g_strdup ("fetch=off"));
  for (guint i = 0; i < b->opts->len; i++) {
    g_ptr_array_add (args, g_strdup ("-o"));
    g_ptr_array_add (args, g_strdup (g_ptr_array_index (b->opts, i)));
  }
  g_ptr_array_add (args, g_strdup ("-j"));
  g_ptr_array_add (args, g_strdup_printf ("%u", jobs));
  if (full)
    g_ptr_array_add (args, g_strdup ("--no-precheck"));
  if (cmd == INSPECT_JSON)
    g_ptr_array_add (args, g_strdup ("--json"));
  g_ptr_array_add (args, g_strdup (maildir ? "--maildir" : "--mbox"));
  g_ptr_array_add (args, g_strdup (box));
  g_ptr_array_add (args, NULL);

  g_autoptr (GHashTable) before = NULL;
  struct stat mst = { 0 };
  g_autofree char *mbox_before = NULL;
  if (writes && maildir) {
    before = maildir_snapshot (dst);
    g_usleep (20000);   /* a file touched now gets a later ctime than the one seen */
  } else if (writes) {
    g_assert_cmpint (stat (dst, &mst), ==, 0);
    mbox_before = file_sha (dst);
    g_usleep (20000);
  }
  Outcome *o = g_new0 (Outcome, 1);
  CmdResult r = { 0 };
  gint64 t0 = g_get_monotonic_time ();
  run_extbody_in (&r, cwd, NULL, (const char *const *) args->pdata);
  t_cmd += g_get_monotonic_time () - t0;
  o->status = r.status;
  o->out = r.out;
  o->err = r.err;
  if (writes && maildir) {
    o->files = maildir_check (dst, before, &o->kept, &o->replaced, label);
  } else if (writes) {
    o->mbox = file_bytes (dst);
    struct stat st;
    g_assert_cmpint (stat (dst, &st), ==, 0);
    g_autofree char *now = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, o->mbox);
    /* an mbox whose messages all stay as they were is not rewritten */
    if (strcmp (now, mbox_before) == 0 && (st.st_ino != mst.st_ino || !same_time (&st.st_mtim, &mst.st_mtim)))
      g_error ("%s: the mbox was rewritten though nothing in it changed", label);
  }
  if (cmd == EXTERNALIZE)
    o->store = store_list (store);
  rm_rf (dir);
  return o;
}

static void
assert_lines_equal (GPtrArray *a, GPtrArray *b, const char *what)
{
  for (guint i = 0; i < MIN (a->len, b->len); i++)
    if (strcmp (g_ptr_array_index (a, i), g_ptr_array_index (b, i)) != 0)
      g_error ("%s: line %u differs:\n  %s\n  %s", what, i, (char *) g_ptr_array_index (a, i),
               (char *) g_ptr_array_index (b, i));
  if (a->len != b->len)
    g_error ("%s: %u lines against %u", what, a->len, b->len);
}

static void
assert_bytes_equal (GBytes *a, GBytes *b, const char *what)
{
  gsize la = 0, lb = 0;
  const char *da = g_bytes_get_data (a, &la), *db = g_bytes_get_data (b, &lb);
  gsize i = 0;
  while (i < la && i < lb && da[i] == db[i])
    i++;
  if (i == la && i == lb)
    return;
  gsize from = i > 120 ? i - 120 : 0;
  g_error ("%s: first difference at byte %" G_GSIZE_FORMAT " (of %" G_GSIZE_FORMAT " and %" G_GSIZE_FORMAT
           "):\n--- skip path, -j 1\n%.*s\n--- this run\n%.*s", what, i, la, lb,
           (int) MIN (la - from, 400), da ? da + from : "", (int) MIN (lb - from, 400), db ? db + from : "");
}

static void
assert_same (const Outcome *want, const Outcome *got, const char *what)
{
  if (want->status != got->status)
    g_error ("%s: exit status %d, the skip path at -j 1 %d", what, got->status, want->status);
  g_autofree char *ew = bytes_str (want->err);
  g_autofree char *eg = bytes_str (got->err);
  if (strcmp (ew, eg) != 0)
    g_error ("%s: standard error differs:\n--- skip path, -j 1\n%s--- this run\n%s", what, ew, eg);
  assert_bytes_equal (want->out, got->out, what);
  if (want->mbox)
    assert_bytes_equal (want->mbox, got->mbox, what);
  if (want->files)
    assert_lines_equal (want->files, got->files, what);
  if (want->store)
    assert_lines_equal (want->store, got->store, what);
}

/* Totals over a test, to show it checked something. */
static guint n_runs, n_kept, n_replaced;
static guint64 n_changed_mbox;

/* @cmd over @b's mbox or Maildir: the skip path and the whole parse at -j 1
 * and -j 2, all alike. */
static void
check_cmd (const Box *b, Cmd cmd, gboolean maildir)
{
  /* the skip path at -j 1 and -j 2, the whole parse at -j 1 (a large
   * mailbox: -j 2 both) */
  static const struct { guint jobs; gboolean full; } light[] = { { 1, FALSE }, { 2, FALSE }, { 1, TRUE } },
                                                      heavy[] = { { 2, FALSE }, { 2, TRUE } };
  g_autoptr (Outcome) first = NULL;
  for (guint v = 0; v < (b->heavy ? G_N_ELEMENTS (heavy) : G_N_ELEMENTS (light)); v++) {
    guint jobs = b->heavy ? heavy[v].jobs : light[v].jobs;
    gboolean full = b->heavy ? heavy[v].full : light[v].full;
    {
      g_autoptr (Outcome) o = run_one (b, cmd, maildir, jobs, full);
      n_runs++;
      g_autofree char *what = g_strdup_printf ("%s: %s --%s -j %u%s", b->name, cmd_names[cmd],
                                               maildir ? "maildir" : "mbox", jobs, full ? " --no-precheck" : "");
      if (o->status != 0) {
        g_autofree char *e = bytes_str (o->err);
        g_error ("%s: exit status %d: %s", what, o->status, e);
      }
      n_kept += o->kept;
      n_replaced += o->replaced;
      if (!first) {
        g_test_message ("%s: %.*s", what, (int) g_bytes_get_size (o->err), (const char *) g_bytes_get_data (o->err, NULL));
        first = g_steal_pointer (&o);
      } else {
        assert_same (first, o, what);
      }
    }
  }
  if (first->mbox) {
    g_autofree char *src = g_build_filename (b->dir, "box.mbox", NULL);
    g_autoptr (GBytes) in = file_bytes (src);
    n_changed_mbox += !g_bytes_equal (in, first->mbox);
  }
}

/* Every command over @b's mbox and Maildir, the inspect table (the same plans
 * as --json) over the mbox only, and when @b->table only. A heavy mailbox
 * (every message of it holds "external-body" and is over
 * externalize_min_size: no message is skipped, what is compared is the
 * split, and each parse takes seconds): rewrite of the mbox only. */
static void
check_box (const Box *b)
{
  const Cmd cmds[] = { REWRITE, EXTERNALIZE, INSPECT_JSON, INSPECT };
  for (guint c = 0; c < G_N_ELEMENTS (cmds); c++) {
    if ((cmds[c] == EXTERNALIZE && !b->externalize) || (cmds[c] == INSPECT && !b->table)
        || (b->heavy && cmds[c] != REWRITE))
      continue;
    if (b->mbox)
      check_cmd (b, cmds[c], FALSE);
    if (b->maildir && !b->heavy && cmds[c] != INSPECT)
      check_cmd (b, cmds[c], TRUE);
  }
}

/* ---- the generated corpora --------------------------------------------------- */

typedef struct {
  int         seed;
  double      fraction;
  const char *eol;
} Gen;

static const Gen gens[] = {
  { 1, 0.0, "lf" }, { 1, 0.1, "lf" }, { 1, 0.5, "lf" }, { 1, 1.0, "lf" },
  { 2, 0.1, "crlf" }, { 2, 1.0, "crlf" }, { 3, 0.5, "crlf" },
};
#define GEN_COUNT "30"   /* about 3 MB: the split reads it in more than one chunk */

static void
test_generated (gconstpointer data)
{
  const Gen *g = data;
  g_autofree char *name = g_strdup_printf ("gen-seed%d-%g-%s", g->seed, g->fraction, g->eol);
  g_autoptr (Box) b = box_new (name);
  g_autofree char *genpy = g_test_build_filename (G_TEST_DIST, "bench", "gen-corpus.py", NULL);
  g_autofree char *seed = g_strdup_printf ("%d", g->seed);
  g_autofree char *frac = g_strdup_printf ("%g", g->fraction);
  g_autofree char *mbox = g_build_filename (b->dir, "box.mbox", NULL);
  g_autofree char *md = g_build_filename (b->dir, "Maildir", NULL);
  const char *fmts[][2] = { { "mbox", mbox }, { "maildir", md } };
  for (guint i = 0; i < 2; i++)
    sh_ok ((const char *const[]) { "python3", genpy, "--seed", seed, "--count", GEN_COUNT, "--ext-fraction", frac,
                                   "--eol", g->eol, "--format", fmts[i][0], "--out", fmts[i][1], "-q", NULL });
  b->mbox = b->maildir = TRUE;
  b->min_size = 100000;   /* the corpus's messages are 1 KB to 2 MB: both sides of it */
  b->table = g->seed == 1 && g->fraction == 0.5;
  n_runs = n_kept = n_replaced = 0;
  n_changed_mbox = 0;
  t_cmd = 0;
  check_box (b);
  g_test_message ("%.2f s in extbody processes", t_cmd / 1e6);
  g_test_message ("%u runs; Maildir files kept %u, replaced %u; mbox runs that changed it %" G_GUINT64_FORMAT,
                  n_runs, n_kept, n_replaced, n_changed_mbox);
  g_assert_cmpuint (n_kept, >, 0);
  if (g->fraction > 0)
    g_assert_cmpuint (n_replaced, >, 0);   /* data: references are resolved with fetching off */
}

/* ---- the hostile suite ------------------------------------------------------- */

static void
test_hostile_cases (gconstpointer data)
{
  gboolean heavy = GPOINTER_TO_INT (data);
  g_autoptr (Box) b = box_new (heavy ? "hostile-heavy" : "hostile");
  g_autoptr (GArray) msgs = g_array_new (FALSE, FALSE, sizeof (Msg));
  guint n = 0;
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    GString *s = cases[i].build ();
    /* heavy: a megabyte or more, or a long parse (10,000 levels, 100,000 parts) */
    gboolean h = s->len >= (1 << 20) || g_str_has_prefix (cases[i].name, "structure/nesting")
                 || g_str_has_prefix (cases[i].name, "structure/parts");
    if (h == heavy) {
      add_msg (msgs, NULL, s);
      n++;
    } else {
      g_string_free (s, TRUE);
    }
  }
  g_assert_cmpuint (n, >, 0);
  box_write (b, msgs);
  msgs_free (g_steal_pointer (&msgs));
  b->heavy = heavy;
  check_box (b);
}

static void
test_hostile_limit (gconstpointer data)
{
  const Limit *l = data;
  g_autofree char *name = g_strdup_printf ("limit-%s-%s", l->key, l->value ? l->value : "default");
  g_autoptr (Box) b = box_new (name);
  if (l->value)
    g_ptr_array_add (b->opts, g_strdup_printf ("%s=%s", l->key, l->value));
  g_autoptr (GArray) msgs = g_array_new (FALSE, FALSE, sizeof (Msg));
  gsize total = 0;
  for (gint64 n = l->limit - 1; n <= l->limit + 1; n++) {
    GString *s = l->build (n);
    total += s->len;
    add_msg (msgs, NULL, s);
  }
  box_write (b, msgs);
  msgs_free (g_steal_pointer (&msgs));
  /* 10,000 parts thrice, or three messages of 64 MiB */
  b->heavy = total > (1 << 20);
  check_box (b);
}

/* ---- the real corpus ---------------------------------------------------------- */

static void
test_corpus (void)
{
  g_autofree char *dir = g_test_build_filename (G_TEST_DIST, "corpus", NULL);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_assert_nonnull (d);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  const char *n;
  while ((n = g_dir_read_name (d)))
    if (g_str_has_suffix (n, ".eml") || g_str_has_suffix (n, ".mmdf"))
      g_ptr_array_add (names, g_strdup (n));
  g_ptr_array_sort (names, cmp_str);
  g_assert_cmpuint (names->len, ==, 15);
  g_autoptr (Box) b = box_new ("corpus");
  g_autoptr (GArray) msgs = g_array_new (FALSE, FALSE, sizeof (Msg));
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *p = g_build_filename (dir, g_ptr_array_index (names, i), NULL);
    g_autoptr (GBytes) bytes = file_bytes (p);
    add_msg (msgs, NULL, g_string_new_len (g_bytes_get_data (bytes, NULL), (gssize) g_bytes_get_size (bytes)));
  }
  box_write (b, msgs);
  msgs_free (g_steal_pointer (&msgs));
  b->min_size = 2048;
  check_box (b);
}

/* ---- where "external-body" is ------------------------------------------------- */

#define PLAIN_HDR "From: p@example.org\nSubject: plain\n"
#define REF_MSG(ctype, url)                                                                          \
  "From: r@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"      \
  "Content-Type: " ctype "; access-type=URL; URL=\"" url "\"\n\nContent-Type: text/plain\n\n--b--\n"

static void
test_places (void)
{
  g_autoptr (Box) b = box_new ("places");
  g_autoptr (GArray) msgs = g_array_new (FALSE, FALSE, sizeof (Msg));
  const char *texts[] = {
    PLAIN_HDR "\nA body that names message/external-body and nothing else.\n",
    "From: h@example.org\nSubject: about EXTERNAL-BODY\nX-Note: message/external-body\n\nNo reference here.\n",
    REF_MSG ("message/external-body", "data:,lower"),
    REF_MSG ("MESSAGE/EXTERNAL-BODY", "data:,upper"),
    REF_MSG ("Message/External-Body", "data:,title"),
    REF_MSG ("message/eXtErNaL-bOdY", "data:,mixed"),
    PLAIN_HDR "\nexternal-body\n",   /* the last line of the message, a From_ line right after */
    /* a From_ look-alike inside a body (quoted in the mbox), then a reference */
    PLAIN_HDR "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n\nFrom the desk of the editor\n"
              ">From a quoted line\n--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,after\"\n\n"
              "Content-Type: text/plain\n\n--b--\n",
    /* a stale Content-Length, with a reference and without */
    "From: c@example.org\nContent-Length: 12\nMIME-Version: 1.0\nContent-Type: message/external-body; "
    "access-type=URL; URL=\"data:,cl\"\n\nContent-Type: text/plain\n\n",
    "From: c@example.org\nContent-Length: 99999\nSubject: plain with Content-Length\n\nhello\n",
    /* external-body in a parameter and in a part header that is no reference */
    "From: x@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"external-body\"\n\n"
    "--external-body\nContent-Type: text/plain; name=external-body.txt\n\nx\n--external-body--\n",
    /* a reference that is left (access-type other than URL) */
    "From: f@example.org\nMIME-Version: 1.0\nContent-Type: message/external-body; access-type=anon-ftp; "
    "site=ftp.example.org; name=x\n\nContent-Type: text/plain\n\n",
    "From: e@example.org\nSubject: ends with it, no newline\n\nexternal-body",
    "From: f@example.org\r\nMIME-Version: 1.0\r\nContent-Type: message/External-Body; access-type=URL; "
    "URL=\"data:,crlf\"\r\n\r\nContent-Type: text/plain\r\n\r\n",
  };
  for (guint i = 0; i < G_N_ELEMENTS (texts); i++)
    add_msg (msgs, NULL, g_string_new (texts[i]));
  /* "external-body" only in the From_ line */
  add_msg (msgs, "From external-body@example.org Sat Nov 21 10:00:00 2026\n", g_string_new (PLAIN_HDR "\nhi\n"));
  add_msg (msgs, "From external-body@example.org Sat Nov 21 10:00:00 2026\n",
           g_string_new (REF_MSG ("message/external-body", "data:,from-line-too")));
  box_write (b, msgs);
  msgs_free (g_steal_pointer (&msgs));
  /* and an mbox of its own in which a From_ line follows "external-body" with
   * no blank line (so no separator: one message) and one with a CRLF blank line */
  g_autofree char *raw = g_build_filename (b->dir, "box.mbox", NULL);
  g_autoptr (GBytes) had = file_bytes (raw);
  GString *m = g_string_new_len (g_bytes_get_data (had, NULL), (gssize) g_bytes_get_size (had));
  g_string_append (m, "From a@example.org Sat Nov 21 10:00:00 2026\n" REF_MSG ("message/external-body", "data:,x")
                      "external-body\nFrom b@example.org Sat Nov 21 10:00:00 2026\n" PLAIN_HDR "\nhi\n\n"
                      "From c@example.org Sat Nov 21 10:00:00 2026\r\n" PLAIN_HDR "\r\nexternal-body\r\n\r\n"
                      "From d@example.org Sat Nov 21 10:00:00 2026\r\n"
                      "From: d@example.org\r\nMIME-Version: 1.0\r\nContent-Type: message/external-body; "
                      "access-type=URL; URL=\"data:,d\"\r\n\r\nContent-Type: text/plain\r\n\r\n\r\n");
  put_file (raw, m->str, m->len);
  g_string_free (m, TRUE);
  b->min_size = 64;
  n_changed_mbox = 0;
  check_box (b);
  g_assert_cmpuint (n_changed_mbox, >, 0);
}

/* ---- the chunk borders ---------------------------------------------------------- */

/* Append a plain message (From_ line included) so that @m ends at @at. */
static void
pad_to (GString *m, gsize at, const char *eol)
{
  g_autofree char *head = g_strdup_printf ("From pad@example.org Sat Nov 21 10:00:00 2026%sFrom: pad@example.org%s"
                                           "Subject: padding%s%s", eol, eol, eol, eol);
  gsize el = strlen (eol);
  g_assert_cmpuint (at, >=, m->len + strlen (head) + 200);
  g_string_append (m, head);
  gsize body = at - m->len - el;   /* then the blank line that ends the message */
  while (body > 0) {   /* lines of 80 bytes, the last two of 40 to 160 between them */
    gsize line = body >= 160 ? 80 : body > 80 ? body / 2 : body;
    for (gsize i = 0; i + el < line; i++)
      g_string_append_c (m, 'x');
    g_string_append (m, eol);
    body -= line;
  }
  g_string_append (m, eol);
  g_assert_cmpuint (m->len, ==, at);
}

static void
test_chunk_borders (void)
{
  g_autoptr (Box) b = box_new ("borders");
  GString *m = g_string_new (NULL);
  const char *cases3[] = { "external-body", "EXTERNAL-BODY", "External-Body" };
  guint border = 0;
  /* "external-body" from SCAN_CHUNK - 13 (ends at the border) to the border +
   * 1 (starts just after): its "-" on each side */
  for (int k = -1; k <= 13; k++) {
    gsize at = (gsize) ++border * SCAN_CHUNK;
    GString *ref = g_string_new (NULL);
    g_string_printf (ref, "From r@example.org Sat Nov 21 10:00:00 2026\nFrom: r@example.org\nMIME-Version: 1.0\n"
                          "Content-Type: message/");
    gsize before = ref->len;
    g_string_append_printf (ref, "%s; access-type=URL; URL=\"data:,token-%d\"\n\nContent-Type: text/plain\n\n\n",
                            cases3[(k + 1) % 3], k);
    pad_to (m, at - (gsize) k - before, "\n");
    g_string_append_len (m, ref->str, (gssize) ref->len);
    g_assert_cmpint (g_ascii_strncasecmp (m->str + at - (gsize) k, "external-body", 13), ==, 0);
    g_string_free (ref, TRUE);
  }
  /* a From_ line (of a message with a reference) starting at the border - k:
   * its "\n" before, "From " across, the line across; LF and CRLF */
  const int from_lf[] = { -1, 0, 1, 2, 3, 4, 5, 6, 20, 40, G_MININT }, from_crlf[] = { -2, -1, 0, 1, 2, 3, G_MININT };
  for (guint e = 0; e < 2; e++) {
    const char *eol = e ? "\r\n" : "\n";
    const int *from_at = e ? from_crlf : from_lf;
    for (guint i = 0; from_at[i] != G_MININT; i++) {
      gsize at = (gsize) ++border * SCAN_CHUNK;
      pad_to (m, at - (gsize) from_at[i], eol);
      g_string_append_printf (m, "From f@example.org Sat Nov 21 10:00:00 2026%sFrom: f@example.org%s"
                                 "MIME-Version: 1.0%sContent-Type: message/external-body; access-type=URL; "
                                 "URL=\"data:,from-%u-%d\"%s%sContent-Type: text/plain%s%s%s",
                              eol, eol, eol, e, from_at[i], eol, eol, eol, eol, eol);
    }
  }
  g_string_append (m, "From z@example.org Sat Nov 21 10:00:00 2026\n" PLAIN_HDR "\nthe end\n");
  g_autofree char *p = g_build_filename (b->dir, "box.mbox", NULL);
  put_file (p, m->str, m->len);
  g_string_free (m, TRUE);
  b->mbox = TRUE;              /* the split is the mbox's */
  b->externalize = FALSE;      /* externalize reads every message whole: no split hits */
  n_changed_mbox = 0;
  check_box (b);
  g_assert_cmpuint (n_changed_mbox, >, 0);
  /* every reference resolved: none was lost to a border */
  g_autoptr (Outcome) o = run_one (b, REWRITE, FALSE, 2, FALSE);
  g_autofree char *err = bytes_str (o->err);
  g_autofree char *want = g_strdup_printf ("%u references, %u resolved, %u messages changed", border, border, border);
  if (!strstr (err, want))
    g_error ("borders: want \"%s\" in: %s", want, err);
}

/* ---- the difference there is -------------------------------------------------- */

/* A message above max_message_size without "external-body": the whole parse
 * counts it as left (message-too-large), the skip path as a message without
 * a reference. The mailboxes are the same; the summaries differ by that. */
static void
test_too_large_without_reference (void)
{
  g_autoptr (Box) b = box_new ("too-large");
  g_ptr_array_add (b->opts, g_strdup ("max_message_size=4096"));
  g_autoptr (GArray) msgs = g_array_new (FALSE, FALSE, sizeof (Msg));
  GString *big = g_string_new (PLAIN_HDR "\n");
  while (big->len < 8192)
    g_string_append (big, "a line of a message over max_message_size\n");
  add_msg (msgs, NULL, big);
  add_msg (msgs, NULL, g_string_new (REF_MSG ("message/external-body", "data:,x")));
  box_write (b, msgs);
  msgs_free (g_steal_pointer (&msgs));
  for (guint md = 0; md <= 1; md++) {
    g_autoptr (Outcome) skip = run_one (b, REWRITE, md, 2, FALSE);
    g_autoptr (Outcome) full = run_one (b, REWRITE, md, 2, TRUE);
    g_assert_cmpint (skip->status, ==, full->status);
    if (skip->mbox)
      assert_bytes_equal (skip->mbox, full->mbox, "too-large");
    else
      assert_lines_equal (skip->files, full->files, "too-large");
    g_autofree char *es = bytes_str (skip->err);
    g_autofree char *ef = bytes_str (full->err);
    g_assert_cmpstr (es, ==, "extbody: 2 messages scanned, 1 references, 1 resolved, 1 messages changed\n");
    g_assert_cmpstr (ef, ==, "extbody: 2 messages scanned, 1 references, 1 resolved, 1 messages changed; "
                             "left: message-too-large 1 (raise max_message_size)\n");
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_autoptr (GError) e = NULL;
  work = g_dir_make_tmp ("eb-skip-path-XXXXXX", &e);
  g_assert_no_error (e);
  for (guint i = 0; i < G_N_ELEMENTS (gens); i++) {
    g_autofree char *p = g_strdup_printf ("/skip-path/generated/seed-%d-%g-%s", gens[i].seed, gens[i].fraction,
                                          gens[i].eol);
    g_test_add_data_func (p, &gens[i], test_generated);
  }
  /* the messages slow to parse apart (/skip-path/heavy): 10,000 levels,
   * 100,000 parts, 10,000 parts thrice, 32 MiB parts, 64 MiB messages */
  g_test_add_data_func ("/skip-path/hostile/cases", GINT_TO_POINTER (FALSE), test_hostile_cases);
  g_test_add_data_func ("/skip-path/heavy/hostile-cases", GINT_TO_POINTER (TRUE), test_hostile_cases);
  for (guint i = 0; i < G_N_ELEMENTS (limits); i++) {
    gboolean heavy = !limits[i].value && limits[i].limit >= 10000;
    g_autofree char *p = g_strdup_printf ("/skip-path/%s/limit-%s-%s", heavy ? "heavy" : "hostile", limits[i].key,
                                          limits[i].value ? limits[i].value : "default");
    g_test_add_data_func (p, &limits[i], test_hostile_limit);
  }
  g_test_add_func ("/skip-path/corpus", test_corpus);
  g_test_add_func ("/skip-path/places", test_places);
  g_test_add_func ("/skip-path/chunk-borders", test_chunk_borders);
  g_test_add_func ("/skip-path/too-large-without-reference", test_too_large_without_reference);
  int rc = g_test_run ();
  rm_rf (work);
  g_free (work);
  return rc;
}
