/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-batch.c - every message of a mailbox through the ordered, bounded pool:
 * delivery in input order with 1 to 4 jobs even when later messages finish
 * first, the window bound, the statistics, the progress callback's final call,
 * a dry run that changes nothing, an mbox rewritten crash-safely (a write error
 * leaves it intact), a Maildir rewritten, and failures mapped to their codes. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include "eb-gmime.h"
#include "eb-batch.h"
#include "eb-maildir.h"
#include "eb-mbox.h"
#include "eb-message.h"
#include "eb-plan-private.h"

static const char from_line[] = "From sender@example.org Mon Jan  1 00:00:00 2024\n";

/* Message @i: with references (one resolves, one is left fetch-off, one
 * url-missing) when @i is odd, plain text otherwise. Both carry a
 * Content-Length field; only a rewritten message loses it. */
static char *
message (guint i)
{
  if (i % 2 == 0)
    return g_strdup_printf ("From: a@example.org\nSubject: plain %u\nMessage-ID: <m%u@example.org>\n"
                            "Content-Length: 13\n\nplain text.\n\n", i, i);
  return g_strdup_printf (
    "From: a@example.org\n"
    "Subject: refs %u\n"
    "Message-ID: <m%u@example.org>\n"
    "Content-Length: 999\n"
    "MIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=\"b\"\n"
    "\n"
    "--b\n"
    "Content-Type: message/external-body; access-type=URL;\n"
    " URL=\"data:text/plain,hello%%20world\"\n"
    "\n"
    "Content-Type: text/plain\n"
    "\n"
    "--b\n"
    "Content-Type: message/external-body; access-type=URL;\n"
    " URL=\"http://www.example.com/x.txt\"\n"
    "\n"
    "Content-Type: text/plain\n"
    "\n"
    "--b\n"
    "Content-Type: message/external-body; access-type=URL\n"
    "\n"
    "Content-Type: text/plain\n"
    "\n"
    "--b--\n\n", i, i);
}

typedef struct {
  char   *dir;
  char   *path;
  GArray *offsets;   /* (element-type gint64) each message's From_ line */
  GString *text;
} Box;

static void
box_clear (Box *b)
{
  if (b->dir) {
    g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", b->dir);
    g_assert_true (g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL));
  }
  g_clear_pointer (&b->dir, g_free);
  g_clear_pointer (&b->path, g_free);
  if (b->offsets)
    g_array_unref (b->offsets);
  if (b->text)
    g_string_free (b->text, TRUE);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Box, box_clear)

/* An mbox of @n messages in a new directory. */
static void
make_mbox (Box *b, guint n)
{
  b->dir = g_dir_make_tmp ("test-batch-XXXXXX", NULL);
  g_assert_nonnull (b->dir);
  b->path = g_build_filename (b->dir, "box", NULL);
  b->offsets = g_array_new (FALSE, FALSE, sizeof (gint64));
  b->text = g_string_new (NULL);
  for (guint i = 1; i <= n; i++) {
    gint64 off = (gint64) b->text->len;
    g_array_append_val (b->offsets, off);
    g_autofree char *m = message (i);
    g_string_append (b->text, from_line);
    g_string_append (b->text, m);
  }
  g_assert_true (g_file_set_contents (b->path, b->text->str, (gssize) b->text->len, NULL));
}

static char *
contents (const char *path)
{
  char *text = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  return text;
}

static guint
count_dir (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;
  while (g_dir_read_name (d))
    n++;
  return n;
}

static void
collect_notice (const char *line, gpointer data)
{
  g_ptr_array_add (data, g_strdup (line));
}

/* ---- order and window -------------------------------------------------------- */

typedef struct {
  guint    jobs, window, last, n;
  gint     started;
  EbStats *stats;
  Box     *box;
  gboolean later_first;
} Order;

static void
order_hook (guint number, gpointer data)
{
  Order *o = data;
  g_atomic_int_inc (&o->started);
  if (number == 1 && o->jobs > 1) {
    /* hold the first message until every other one in the window is done
     * (their count, the event; a run that never gets there fails, with
     * what it reached, instead of hanging the suite) */
    gint64 until = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
    while (eb_stats_get_messages (o->stats) < o->window - 1) {
      if (g_get_monotonic_time () > until)
        g_error ("the other %u messages of the window were not done within 60 s (%" G_GUINT64_FORMAT " were)",
                 o->window - 1, (guint64) eb_stats_get_messages (o->stats));
      g_usleep (1000);
    }
    o->later_first = TRUE;
  }
}

static void
order_message (guint number, const char *source, gint64 offset, const char *mid,
               const EbPlan *result, gpointer data)
{
  Order *o = data;
  g_assert_cmpuint (number, ==, o->last + 1);   /* in input order */
  o->last = number;
  g_assert_cmpstr (source, ==, o->box->path);
  g_assert_cmpint (offset, ==, g_array_index (o->box->offsets, gint64, number - 1));
  guint started = (guint) g_atomic_int_get (&o->started);
  g_assert_cmpuint (started, <=, number - 1 + o->window);   /* never more in flight */
  if (number == 1 && o->jobs > 1) {
    g_assert_true (o->later_first);
    g_assert_cmpuint (started, ==, o->window);   /* the window filled, and no further */
  }
  if (number % 2) {
    g_autofree char *want = g_strdup_printf ("<m%u@example.org>", number);
    g_assert_cmpstr (mid, ==, want);
    g_assert_cmpuint (result->scan->refs->len, ==, 3);
  } else {
    g_assert_null (mid);   /* looked up only when there are references */
  }
}

static void
test_order (gconstpointer data)
{
  guint jobs = GPOINTER_TO_UINT (data);
  g_auto (Box) box = { 0 };
  make_mbox (&box, 50);
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbBatch) batch = eb_batch_new (config, NULL, EB_BATCH_INSPECT);
  eb_batch_set_jobs (batch, jobs);
  eb_batch_set_flags (batch, EB_REWRITE_NO_FETCH);
  Order o = { jobs, eb_batch_window (jobs), 0, 50, 0, eb_batch_get_stats (batch), &box, FALSE };
  g_assert_cmpuint (o.window, <, 50);
  eb_batch_set_work_hook (batch, order_hook, &o);
  eb_batch_set_message_func (batch, order_message, &o);
  g_autoptr (GError) error = NULL;
  g_assert_true (eb_batch_run_mbox (batch, box.path, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (o.last, ==, 50);
  g_assert_cmpint (o.started, ==, 50);
  g_assert_cmpuint (eb_stats_get_messages (o.stats), ==, 50);
}

/* ---- statistics, progress and a dry run -------------------------------------- */

typedef struct {
  guint   calls, finals;
  guint   done, total;
  guint64 bytes, total_bytes;
  gboolean last_final;
} Progress;

static void
on_progress (guint done, guint total, guint64 bytes, guint64 total_bytes, gboolean final,
             gpointer data)
{
  Progress *p = data;
  p->calls++;
  p->finals += final;
  p->last_final = final;
  p->done = done;
  p->total = total;
  p->bytes = bytes;
  p->total_bytes = total_bytes;
}

static void
test_dry_run (void)
{
  g_auto (Box) box = { 0 };
  make_mbox (&box, 21);
  GStatBuf before, after;
  g_assert_cmpint (g_stat (box.path, &before), ==, 0);
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbBatch) batch = eb_batch_new (config, NULL, EB_BATCH_DRY_RUN);
  eb_batch_set_jobs (batch, 3);
  Progress p = { 0 };
  eb_batch_set_progress_func (batch, on_progress, &p);
  g_autoptr (GError) error = NULL;
  g_assert_true (eb_batch_run_mbox (batch, box.path, &error));
  g_assert_true (eb_batch_get_complete (batch));
  /* nothing changed, byte for byte, and the file not even replaced */
  g_autofree char *now = contents (box.path);
  g_assert_cmpstr (now, ==, box.text->str);
  g_assert_cmpint (g_stat (box.path, &after), ==, 0);
  g_assert_cmpuint (after.st_ino, ==, before.st_ino);
  g_assert_cmpint (after.st_mtime, ==, before.st_mtime);
  g_assert_cmpuint (count_dir (box.dir), ==, 1);
  /* what a rewrite would do */
  EbStats *s = eb_batch_get_stats (batch);
  g_assert_cmpuint (eb_stats_get_messages (s), ==, 21);
  g_assert_cmpuint (eb_stats_get_references (s), ==, 33);
  g_assert_cmpuint (eb_stats_get_resolved (s), ==, 11);
  g_assert_cmpuint (eb_stats_get_left (s, EB_REASON_FETCH_OFF), ==, 11);
  g_assert_cmpuint (eb_stats_get_left (s, EB_REASON_URL_MISSING), ==, 11);
  g_assert_cmpuint (eb_stats_get_changed (s), ==, 11);
  g_assert_cmpuint (eb_stats_get_bytes (s), ==, box.text->len - 21 * strlen (from_line));
  g_autofree char *line = eb_stats_format_summary (s, TRUE);
  g_assert_cmpstr (line, ==, "21 messages scanned, 33 references, 11 resolved, 11 messages would "
                             "change; left: fetch-off 11 (fetch = on), url-missing 11");
  /* the progress callback: its last call, and only that one, is final and complete */
  g_assert_cmpuint (p.finals, ==, 1);
  g_assert_true (p.last_final);
  g_assert_cmpuint (p.done, ==, 21);
  g_assert_cmpuint (p.total, ==, 21);
  g_assert_cmpuint (p.bytes, ==, eb_stats_get_bytes (s));
  g_assert_cmpuint (p.total_bytes, ==, box.text->len);
}

/* ---- mbox rewrite ------------------------------------------------------------- */

static void
test_mbox_rewrite (void)
{
  g_auto (Box) box = { 0 };
  make_mbox (&box, 9);
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbBatch) batch = eb_batch_new (config, NULL, EB_BATCH_REWRITE);
  eb_batch_set_jobs (batch, 2);
  g_autofree char *backup = g_strconcat (box.path, ".orig", NULL);
  eb_batch_set_backup (batch, backup);
  g_autoptr (GPtrArray) notices = g_ptr_array_new_with_free_func (g_free);
  eb_batch_set_notice_func (batch, collect_notice, notices);
  g_autoptr (GError) error = NULL;
  g_assert_true (eb_batch_run_mbox (batch, box.path, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (notices->len, ==, 0);
  g_assert_cmpuint (eb_stats_get_changed (eb_batch_get_stats (batch)), ==, 5);
  /* the original kept whole beside it; no lock, no temporary file left */
  g_autofree char *old = contents (backup);
  g_assert_cmpstr (old, ==, box.text->str);
  g_assert_cmpuint (count_dir (box.dir), ==, 2);
  /* every message there once, in order, with its From_ line; the plain ones
   * byte for byte, the others resolved, their stale Content-Length gone */
  g_autofree char *now = contents (box.path);
  g_autoptr (GArray) msgs = eb_mbox_split (now, strlen (now));
  g_assert_cmpuint (msgs->len, ==, 9);
  for (guint i = 0; i < msgs->len; i++) {
    const EbMboxMsg *m = &g_array_index (msgs, EbMboxMsg, i);
    g_autofree char *from = g_strndup (now + m->from, m->start - m->from);
    g_assert_cmpstr (from, ==, from_line);
    g_autofree char *got = g_strndup (now + m->start, m->end - m->start);
    g_autofree char *orig = message (i + 1);
    if ((i + 1) % 2 == 0) {
      g_assert_cmpstr (got, ==, orig);
    } else {
      g_assert_nonnull (strstr (got, "\nhello world\n"));
      g_assert_nonnull (strstr (got, "X-Extbody-Resolved:"));
      g_assert_null (strstr (got, "Content-Length"));
      g_assert_nonnull (strstr (got, "http://www.example.com/x.txt"));   /* left as it was */
      g_assert_true (g_str_has_suffix (got, "--b--\n\n"));   /* the blank line before the next */
    }
  }
  /* a second run: nothing left to change, the file not replaced */
  GStatBuf st1, st2;
  g_assert_cmpint (g_stat (box.path, &st1), ==, 0);
  g_autoptr (EbBatch) again = eb_batch_new (config, NULL, EB_BATCH_INSPECT);
  eb_batch_set_mode (again, EB_BATCH_REWRITE);
  g_assert_true (eb_batch_run_mbox (again, box.path, NULL));
  g_assert_cmpint (g_stat (box.path, &st2), ==, 0);
  g_assert_cmpuint (st1.st_ino, ==, st2.st_ino);
  g_assert_cmpuint (eb_stats_get_changed (eb_batch_get_stats (again)), ==, 0);
  g_assert_cmpuint (eb_stats_get_resolved (eb_batch_get_stats (again)), ==, 0);
}

/* A write that fails half-way (RLIMIT_FSIZE) leaves the mbox as it was and no
 * temporary file beside it. */
static void
test_mbox_write_error (void)
{
  if (g_test_subprocess ()) {
    /* the child: the limit must not touch the test process */
    const char *path = g_getenv ("TEST_BATCH_BOX");
    GStatBuf st;
    g_assert_cmpint (g_stat (path, &st), ==, 0);
    signal (SIGXFSZ, SIG_IGN);
    struct rlimit rl = { (rlim_t) st.st_size / 2, (rlim_t) st.st_size / 2 };
    g_assert_cmpint (setrlimit (RLIMIT_FSIZE, &rl), ==, 0);
    g_autoptr (EbConfig) config = eb_config_new ();
    g_autoptr (EbBatch) batch = eb_batch_new (config, NULL, EB_BATCH_REWRITE);
    g_autoptr (GPtrArray) notices = g_ptr_array_new_with_free_func (g_free);
    eb_batch_set_notice_func (batch, collect_notice, notices);
    g_autoptr (GError) error = NULL;
    g_assert_false (eb_batch_run_mbox (batch, path, &error));
    g_assert_error (error, EB_BATCH_ERROR, EB_BATCH_ERROR_IOERR);
    g_assert_cmpuint (notices->len, ==, 1);
    g_assert_cmpstr (g_ptr_array_index (notices, 0), ==, error->message);
    g_assert_nonnull (strstr (error->message, "(the mailbox is unchanged)"));
    /* the summary still describes the mailbox: nothing changed */
    g_assert_true (eb_batch_get_complete (batch));
    g_assert_cmpuint (eb_stats_get_messages (eb_batch_get_stats (batch)), ==, 200);
    g_assert_cmpuint (eb_stats_get_changed (eb_batch_get_stats (batch)), ==, 0);
    return;
  }
  g_auto (Box) box = { 0 };
  make_mbox (&box, 200);
  g_setenv ("TEST_BATCH_BOX", box.path, TRUE);
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
  g_autofree char *now = contents (box.path);
  g_assert_cmpstr (now, ==, box.text->str);
  g_assert_cmpuint (count_dir (box.dir), ==, 1);   /* no temporary file, no lock */
}

/* ---- Maildir ------------------------------------------------------------------ */

static void
test_maildir (void)
{
  g_autofree char *dir = g_dir_make_tmp ("test-batch-md-XXXXXX", NULL);
  const char *sub[] = { "cur", "new", "tmp" };
  for (guint i = 0; i < G_N_ELEMENTS (sub); i++) {
    g_autofree char *d = g_build_filename (dir, sub[i], NULL);
    g_assert_cmpint (g_mkdir (d, 0700), ==, 0);
  }
  g_autofree char *m1 = message (1), *m2 = message (2), *m3 = message (3), *m5 = message (5);
  g_autofree char *f1 = g_build_filename (dir, "cur", "1000.a.host:2,S", NULL);
  g_autofree char *f2 = g_build_filename (dir, "cur", "1001.b.host:2,S", NULL);
  g_autofree char *f3 = g_build_filename (dir, "new", "1002.c.host", NULL);
  g_autofree char *f4 = g_build_filename (dir, "cur", "1003.d.host:2,", NULL);   /* a FIFO */
  g_autofree char *f5 = g_build_filename (dir, "cur", "1004.e.host:2,", NULL);   /* hard-linked */
  g_autofree char *f5b = g_build_filename (dir, "1004.link", NULL);
  g_assert_true (g_file_set_contents (f1, m1, -1, NULL));
  g_assert_true (g_file_set_contents (f2, m2, -1, NULL));
  g_assert_true (g_file_set_contents (f3, m3, -1, NULL));
  g_assert_cmpint (mkfifo (f4, 0600), ==, 0);
  g_assert_true (g_file_set_contents (f5, m5, -1, NULL));
  g_assert_cmpint (link (f5, f5b), ==, 0);
  GStatBuf st2;
  g_assert_cmpint (g_stat (f2, &st2), ==, 0);

  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbBatch) batch = eb_batch_new (config, NULL, EB_BATCH_REWRITE);
  eb_batch_set_jobs (batch, 4);
  g_autoptr (GPtrArray) notices = g_ptr_array_new_with_free_func (g_free);
  eb_batch_set_notice_func (batch, collect_notice, notices);
  g_autoptr (GError) error = NULL;
  g_assert_true (eb_batch_run_maildir (batch, dir, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (notices->len, ==, 2);
  g_autofree char *n4 = g_strdup_printf ("skipped %s: not a regular file", f4);
  g_autofree char *n5 = g_strdup_printf ("skipped %s: hard-linked (a second name would keep the "
                                         "old message)", f5);
  g_assert_cmpstr (g_ptr_array_index (notices, 0), ==, n4);
  g_assert_cmpstr (g_ptr_array_index (notices, 1), ==, n5);
  EbStats *s = eb_batch_get_stats (batch);
  g_assert_cmpuint (eb_stats_get_messages (s), ==, 3);
  g_assert_cmpuint (eb_stats_get_skipped (s), ==, 2);
  g_assert_cmpuint (eb_stats_get_changed (s), ==, 2);
  /* the changed ones delivered anew (their old names gone), the rest untouched */
  g_assert_false (g_file_test (f1, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (f3, G_FILE_TEST_EXISTS));
  GStatBuf st2b;
  g_assert_cmpint (g_stat (f2, &st2b), ==, 0);
  g_assert_cmpuint (st2b.st_ino, ==, st2.st_ino);
  g_autofree char *k5 = contents (f5);
  g_assert_cmpstr (k5, ==, m5);
  g_autoptr (GPtrArray) files = eb_maildir_list (dir, FALSE, NULL);
  guint resolved = 0;
  for (guint i = 0; i < files->len; i++) {
    const char *f = g_ptr_array_index (files, i);
    if (strstr (f, "1003.d"))
      continue;
    g_autofree char *text = contents (f);
    if (strstr (text, "\nhello world\n")) {
      resolved++;
      g_assert_null (strstr (text, "Content-Length"));
      if (strstr (text, "Subject: refs 1\n"))
        g_assert_true (g_str_has_suffix (f, ":2,S"));   /* its flags kept */
    }
  }
  g_assert_cmpuint (resolved, ==, 2);
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", dir);
  g_assert_true (g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL));
}

/* ---- the split in pieces --------------------------------------------------------- */

/* The workers split an mbox in stretches: every cut gives the From_ lines
 * eb_mbox_split() gives, however the stretches fall (through a From_ line, a
 * blank line, a CRLF, "\nFrom " without a date). */
static void
test_split_in_pieces (void)
{
  static const char *const pieces[] = {
    "From a Mon Jan  1 00:00:00 2024\n", "From x\n", "\n", "\r\n", "text\n", "\r", "From ",
    ">From b Mon Jan  1 00:00:00 2024\n", "x", "From a Mon Jan  1 00:00:00 2024\r\n",
    "From a Mon Jan  1 00:00:00 2024", "0123456789abcdef0123456789abcdef\n",
  };
  GRand *rand = g_rand_new_with_seed (16);
  for (guint iter = 0; iter < 20000; iter++) {
    g_autoptr (GString) text = g_string_new (NULL);
    gint n = g_rand_int_range (rand, 0, 40);
    for (gint i = 0; i < n; i++)
      g_string_append (text, pieces[g_rand_int_range (rand, 0, G_N_ELEMENTS (pieces))]);
    g_autoptr (GArray) whole = eb_mbox_split (text->str, text->len);
    g_autoptr (GArray) seps = g_array_new (FALSE, FALSE, sizeof (gsize));
    gsize step = (gsize) g_rand_int_range (rand, 1, 64);
    for (gsize from = 0; from < text->len; from += step)
      eb_mbox_find_separators (text->str, text->len, from, from + step, seps);
    g_assert_cmpuint (seps->len, ==, whole->len);
    for (guint i = 0; i < whole->len; i++)
      g_assert_cmpuint (g_array_index (seps, gsize, i), ==, g_array_index (whole, EbMboxMsg, i).from);
  }
  g_rand_free (rand);
}

/* The split that also looks for "external-body" (the pre-check's search, in
 * the same pass): the same From_ lines, every place "external-body" starts in
 * any case, once, however the stretches fall - from memory and read from the
 * file a piece at a time - and a message holds one exactly when the pre-check
 * says it may hold an external body. */
static void
check_hits (const GString *text, GArray *seps, GArray *hits)
{
  g_autoptr (GArray) whole = eb_mbox_split (text->str, text->len);
  g_assert_cmpuint (seps->len, ==, whole->len);
  for (guint i = 0; i < whole->len; i++)
    g_assert_cmpuint (g_array_index (seps, gsize, i), ==, g_array_index (whole, EbMboxMsg, i).from);
  guint k = 0;
  for (gsize p = 0; p + 13 <= text->len; p++) {
    if (g_ascii_strncasecmp (text->str + p, "external-body", 13) != 0)
      continue;
    g_assert_cmpuint (k, <, hits->len);
    g_assert_cmpuint (g_array_index (hits, gsize, k), ==, p);
    k++;
  }
  g_assert_cmpuint (k, ==, hits->len);
  for (guint i = 0; i < whole->len; i++) {
    const EbMboxMsg *m = &g_array_index (whole, EbMboxMsg, i);
    gboolean hit = FALSE;
    for (guint j = 0; j < hits->len && !hit; j++)
      hit = g_array_index (hits, gsize, j) >= m->start && g_array_index (hits, gsize, j) < m->end;
    g_assert_cmpint (hit, ==, eb_message_may_hold_external_body (text->str + m->start,
                                                                 m->end - m->start));
  }
}

static void
test_split_hits_in_pieces (void)
{
  static const char *const pieces[] = {
    "From a Mon Jan  1 00:00:00 2024\n", "\n", "\r\n", "text\n", "From ", "-", "b", "B",
    "external-body", "EXTERNAL-BODY", "eXtErNaL-bOdY", "external-bod", "xternal-body", "external",
    "-body", "external_body", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n",
    "Content-Type: message/external-body; access-type=URL;\n URL=\"data:,x\"\n",
  };
  GRand *rand = g_rand_new_with_seed (17);
  g_autofree char *dir = g_dir_make_tmp ("eb-hits-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "mbox", NULL);
  for (guint iter = 0; iter < 4000; iter++) {
    g_autoptr (GString) text = g_string_new (NULL);
    /* now and then larger than the 256 KB the file is read in */
    gint n = iter % 500 == 0 ? 30000 : g_rand_int_range (rand, 0, 60);
    for (gint i = 0; i < n; i++)
      g_string_append (text, pieces[g_rand_int_range (rand, 0, G_N_ELEMENTS (pieces))]);
    gsize step = (gsize) g_rand_int_range (rand, 1, n > 1000 ? 400000 : 300);
    g_autoptr (GArray) seps = g_array_new (FALSE, FALSE, sizeof (gsize));
    g_autoptr (GArray) hits = g_array_new (FALSE, FALSE, sizeof (gsize));
    for (gsize from = 0; from < text->len; from += step)
      eb_mbox_find_separators_and_hits (text->str, text->len, from, from + step, seps, hits);
    check_hits (text, seps, hits);
    if (iter % 10 == 0) {   /* read from the file */
      g_assert_true (g_file_set_contents (path, text->str, (gssize) text->len, NULL));
      int fd = g_open (path, O_RDONLY, 0);
      g_assert_cmpint (fd, >=, 0);
      g_array_set_size (seps, 0);
      g_array_set_size (hits, 0);
      for (gsize from = 0; from < text->len; from += step)
        g_assert_true (eb_mbox_read_separators_and_hits (fd, text->len, from, from + step, seps,
                                                          hits));
      close (fd);
      check_hits (text, seps, hits);
    }
  }
  g_unlink (path);
  g_rmdir (dir);
  g_rand_free (rand);
}

/* ---- failures ------------------------------------------------------------------ */

typedef struct {
  const char  *name;
  EbBatchMode  mode;
  gboolean     maildir;
  void       (*setup) (const char *dir, const char *path);
  gint         code;       /* -1: success */
  const char  *text;       /* in the one notice */
} ErrorCase;

static void
mk_nothing (const char *dir, const char *path)
{
}

static void
mk_dir (const char *dir, const char *path)
{
  g_assert_cmpint (g_mkdir (path, 0700), ==, 0);
}

static void
mk_symlink (const char *dir, const char *path)
{
  g_autofree char *real = g_build_filename (dir, "real", NULL);
  g_assert_true (g_file_set_contents (real, "From a Mon Jan  1 00:00:00 2024\n\nx\n", -1, NULL));
  g_assert_cmpint (symlink (real, path), ==, 0);
}

static void
mk_not_mbox (const char *dir, const char *path)
{
  g_assert_true (g_file_set_contents (path, "Subject: hello\n\nnot an mbox\n", -1, NULL));
}

static void
mk_hardlinked (const char *dir, const char *path)
{
  g_autofree char *other = g_build_filename (dir, "other", NULL);
  g_assert_true (g_file_set_contents (path, "From a Mon Jan  1 00:00:00 2024\n\nx\n", -1, NULL));
  g_assert_cmpint (link (path, other), ==, 0);
}

static void
mk_locked (const char *dir, const char *path)
{
  g_assert_true (g_file_set_contents (path, "From a Mon Jan  1 00:00:00 2024\n\nx\n", -1, NULL));
  g_autofree char *lock = g_strconcat (path, ".lock", NULL);
  g_autofree char *pid = g_strdup_printf ("%ld\n", (long) getppid ());   /* alive */
  g_assert_true (g_file_set_contents (lock, pid, -1, NULL));
}

static void
mk_maildir_no_tmp (const char *dir, const char *path)
{
  for (guint i = 0; i < 2; i++) {
    g_autofree char *d = g_build_filename (path, i ? "new" : "cur", NULL);
    g_assert_cmpint (g_mkdir_with_parents (d, 0700), ==, 0);
  }
}

static void
mk_maildir_tmp_link (const char *dir, const char *path)
{
  mk_maildir_no_tmp (dir, path);
  g_autofree char *t = g_build_filename (path, "tmp", NULL);
  g_assert_cmpint (symlink (dir, t), ==, 0);
  g_autofree char *m = g_build_filename (path, "new", "1.ref.host", NULL);
  g_assert_true (g_file_set_contents (m, "MIME-Version: 1.0\nContent-Type: message/external-body; access-type=URL;"
                                         " URL=\"data:,x\"\n\nContent-Type: text/plain\n\n", -1, NULL));
}

static const ErrorCase error_cases[] = {
  { "missing", EB_BATCH_REWRITE, FALSE, mk_nothing, EB_BATCH_ERROR_NOINPUT, "No such file" },
  { "missing-inspect", EB_BATCH_INSPECT, FALSE, mk_nothing, EB_BATCH_ERROR_NOINPUT, "No such file" },
  { "directory", EB_BATCH_INSPECT, FALSE, mk_dir, EB_BATCH_ERROR_NOINPUT, "not a regular file" },
  { "symlink", EB_BATCH_DRY_RUN, FALSE, mk_symlink, EB_BATCH_ERROR_NOINPUT, "a symbolic link, not followed" },
  { "not-mbox", EB_BATCH_REWRITE, FALSE, mk_not_mbox, EB_BATCH_ERROR_DATAERR, "not an mbox (it does not start with a From_ line); unchanged" },
  { "not-mbox-inspect", EB_BATCH_INSPECT, FALSE, mk_not_mbox, EB_BATCH_ERROR_DATAERR, "not an mbox (it does not start with a From_ line)" },
  { "hard-linked", EB_BATCH_REWRITE, FALSE, mk_hardlinked, EB_BATCH_ERROR_CANTCREAT, "hard-linked (2 names" },
  { "hard-linked-inspect", EB_BATCH_INSPECT, FALSE, mk_hardlinked, -1, NULL },
  { "locked", EB_BATCH_REWRITE, FALSE, mk_locked, EB_BATCH_ERROR_TEMPFAIL, "is locked" },
  { "locked-dry-run", EB_BATCH_DRY_RUN, FALSE, mk_locked, -1, NULL },
  { "maildir-missing", EB_BATCH_REWRITE, TRUE, mk_nothing, EB_BATCH_ERROR_NOINPUT, NULL },
  { "maildir-not-one", EB_BATCH_INSPECT, TRUE, mk_dir, EB_BATCH_ERROR_NOINPUT, "not a Maildir: no cur/, new/, tmp/ (a Maildir has cur/, new/ and tmp/)" },
  /* issue 26: what is missing, by name, in every mode */
  { "maildir-no-tmp", EB_BATCH_REWRITE, TRUE, mk_maildir_no_tmp, EB_BATCH_ERROR_NOINPUT, "box: not a Maildir: no tmp/ (a Maildir has cur/, new/ and tmp/)" },
  { "maildir-no-tmp-inspect", EB_BATCH_INSPECT, TRUE, mk_maildir_no_tmp, EB_BATCH_ERROR_NOINPUT, "box: not a Maildir: no tmp/" },
};

static void
test_errors (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (error_cases); i++) {
    const ErrorCase *c = &error_cases[i];
    g_test_message ("case %s", c->name);
    g_autofree char *dir = g_dir_make_tmp ("test-batch-err-XXXXXX", NULL);
    g_autofree char *path = g_build_filename (dir, "box", NULL);
    c->setup (dir, path);
    g_autoptr (EbConfig) config = eb_config_new ();
    g_assert_true (eb_config_apply_option (config, "lock_timeout=0", NULL));
    g_autoptr (EbBatch) batch = eb_batch_new (config, NULL, c->mode);
    g_autoptr (GPtrArray) notices = g_ptr_array_new_with_free_func (g_free);
    eb_batch_set_notice_func (batch, collect_notice, notices);
    g_autoptr (GError) error = NULL;
    gboolean ok = c->maildir ? eb_batch_run_maildir (batch, path, &error)
                             : eb_batch_run_mbox (batch, path, &error);
    if (c->code < 0) {
      g_assert_no_error (error);
      g_assert_true (ok);
      g_assert_cmpuint (notices->len, ==, 0);
    } else {
      g_assert_false (ok);
      g_assert_error (error, EB_BATCH_ERROR, c->code);
      g_assert_cmpuint (notices->len, ==, 1);
      g_assert_cmpstr (g_ptr_array_index (notices, 0), ==, error->message);
      if (c->text)
        g_assert_nonnull (strstr (error->message, c->text));
      g_assert_false (eb_batch_get_complete (batch));
    }
    g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", dir);
    g_assert_true (g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL));
  }
}

/* A Maildir whose tmp/ is a symbolic link: never written through; the walk
 * says so, and the message stays as it was, the reason by name (issue 26: it
 * was "tmp or cur ... (a symbolic link?)"). */
static void
test_maildir_tmp_link (void)
{
  g_autofree char *dir = g_dir_make_tmp ("test-batch-err-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "box", NULL);
  mk_maildir_tmp_link (dir, path);
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbBatch) batch = eb_batch_new (config, NULL, EB_BATCH_REWRITE);
  g_autoptr (GPtrArray) notices = g_ptr_array_new_with_free_func (g_free);
  eb_batch_set_notice_func (batch, collect_notice, notices);
  g_autoptr (GError) error = NULL;
  g_assert_false (eb_batch_run_maildir (batch, path, &error));
  g_assert_error (error, EB_BATCH_ERROR, EB_BATCH_ERROR_IOERR);
  g_autofree char *want = g_strdup_printf ("%s/tmp: a symbolic link, not followed (a directory of the Maildir's own "
                                           "is needed) (the message is unchanged)", path);
  g_assert_nonnull (strstr (error->message, want));
  g_autofree char *m = g_build_filename (path, "new", "1.ref.host", NULL);
  g_assert_true (g_file_test (m, G_FILE_TEST_IS_REGULAR));
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", dir);
  g_assert_true (g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL));
}

int
main (int argc, char **argv)
{
  g_mime_init ();
  g_test_init (&argc, &argv, NULL);
  for (guint jobs = 1; jobs <= 4; jobs++) {
    g_autofree char *name = g_strdup_printf ("/batch/order/jobs-%u", jobs);
    g_test_add_data_func (name, GUINT_TO_POINTER (jobs), test_order);
  }
  g_test_add_func ("/batch/dry-run", test_dry_run);
  g_test_add_func ("/batch/mbox/rewrite", test_mbox_rewrite);
  g_test_add_func ("/batch/mbox/write-error", test_mbox_write_error);
  g_test_add_func ("/batch/maildir/rewrite", test_maildir);
  g_test_add_func ("/batch/mbox/split-in-pieces", test_split_in_pieces);
  g_test_add_func ("/batch/mbox/split-and-hits-in-pieces", test_split_hits_in_pieces);
  g_test_add_func ("/batch/errors", test_errors);
  g_test_add_func ("/batch/maildir-tmp-link", test_maildir_tmp_link);
  int rc = g_test_run ();
  g_mime_shutdown ();
  return rc;
}
