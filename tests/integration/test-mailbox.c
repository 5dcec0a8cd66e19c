/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-mailbox.c - rewriting mboxes and Maildirs without ever losing a
 * message: byte identity of what is not rewritten, From_ lines and >From quoting
 * kept, Maildir flags and ,S= sizes, --dry-run, --backup, kill -9 at random
 * moments (every message present exactly once, old or new), a write error
 * (RLIMIT_FSIZE) leaving the original intact with a clear error, and a message
 * delivered into the mbox during a run still there afterwards. */
#include <glib/gstdio.h>
#include <signal.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>
#include "run-command.h"
#include "test-server.h"

static char *work;
static char *conf;

static char *
gen (const char *name, int count, const char *format)
{
  g_autofree char *genpy = g_test_build_filename (G_TEST_DIST, "bench", "gen-corpus.py", NULL);
  char *out = g_build_filename (work, name, NULL);
  g_autofree char *cmd = g_strdup_printf (
    "python3 '%s' --seed 1 --count %d --ext-fraction 0.1 --format %s --out '%s' --force -q",
    genpy, count, format, out);
  g_assert_cmpint (test_sh (cmd, NULL), ==, 0);
  return out;
}

/* The messages of an mbox keyed by their X-Extbody-Bench index. */
static GHashTable *
mbox_messages (const char *path)
{
  g_autofree char *text = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (path, &text, &len, NULL));
  GHashTable *h = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *next = p;
    do {
      next = g_strstr_len (next + 1, end - next - 1, "\n\nFrom ");
    } while (FALSE);
    const char *stop = next ? next + 2 : end;
    const char *idx = g_strstr_len (p, stop - p, "index=");
    g_assert_nonnull (idx);
    char *key = g_strdup_printf ("%d", atoi (idx + 6));
    g_assert_false (g_hash_table_contains (h, key));   /* exactly once */
    g_hash_table_insert (h, key, g_strndup (p, (gsize) (stop - p)));
    p = stop;
  }
  return h;
}

static void
copy (const char *from, const char *to)
{
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s' && cp -a '%s' '%s'", to, from, to);
  g_assert_cmpint (test_sh (cmd, NULL), ==, 0);
}

static void
test_mbox_roundtrip (void)
{
  g_autofree char *orig = gen ("small.mbox", 200, "mbox");
  g_autofree char *box = g_build_filename (work, "box.mbox", NULL);
  copy (orig, box);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "-o", "fetch=off", "--backup", ".bak", "-j", "2", "--mbox", box);
  g_autofree char *err = bytes_str (r.err);
  g_test_message ("%s", err);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_nonnull (strstr (err, "200 messages scanned"));
  g_autofree char *bak = g_strconcat (box, ".bak", NULL);
  g_autofree char *cmp = g_strdup_printf ("cmp -s '%s' '%s'", bak, orig);
  g_assert_cmpint (test_sh (cmp, NULL), ==, 0);
  g_autoptr (GHashTable) a = mbox_messages (orig);
  g_autoptr (GHashTable) b = mbox_messages (box);
  g_assert_cmpuint (g_hash_table_size (a), ==, 200);
  g_assert_cmpuint (g_hash_table_size (b), ==, 200);
  guint same = 0;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, a);
  while (g_hash_table_iter_next (&it, &k, &v)) {
    const char *nb = g_hash_table_lookup (b, k);
    g_assert_nonnull (nb);
    if (strcmp (v, nb) == 0)
      same++;
    else
      g_assert_nonnull (strstr (nb, "X-Extbody-Resolved:"));
  }
  g_assert_cmpuint (same, ==, 193);
  /* again: nothing left to change, the file is not touched */
  struct stat s1, s2;
  g_stat (box, &s1);
  g_auto (CmdResult) r2 = { 0 };
  RUN (&r2, NULL, "rewrite", "-c", conf, "-o", "fetch=off", "--mbox", box);
  g_stat (box, &s2);
  g_assert_cmpint (s1.st_ino, ==, s2.st_ino);
  g_assert_cmpint (s1.st_mtime, ==, s2.st_mtime);
}

/* mboxo and mboxrd quoting and odd separators are kept byte for byte. */
static void
test_mbox_quoting (void)
{
  const char *m =
    "From a@example.org Sat Nov 21 10:00:00 2026\n"
    "From: a@example.org\nSubject: quoted\n\n>From the start\n>>From deeper\nFrom inside a line is fine\n\n"
    "From b@example.org Sat Nov 21 10:01:00 2026\n"
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,From%20x%0AFrom%20y%0A\"\n\n"
    "Content-Type: text/plain\n\n--b--\n\n"
    "From c@example.org Sat Nov 21 10:02:00 2026\n"
    "From: c@example.org\n\nno final newline";
  g_autofree char *box = g_build_filename (work, "quoting.mbox", NULL);
  g_file_set_contents (box, m, -1, NULL);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "--mbox", box);
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *out = NULL;
  g_file_get_contents (box, &out, NULL, NULL);
  const char *second = strstr (m, "From b@");
  const char *third = strstr (m, "From c@");
  g_autofree char *head = g_strndup (m, (gsize) (second - m));
  g_assert_true (g_str_has_prefix (out, head));
  g_assert_true (g_str_has_suffix (out, third));
  /* the resolved text never starts a line with "From ": quoted-printable */
  g_assert_nonnull (strstr (out, "=46rom x\n=46rom y\n"));
  /* no line starting "From " was added (the one in the first message was there) */
  g_auto (GStrv) a = g_strsplit (out, "\nFrom ", -1);
  g_auto (GStrv) b = g_strsplit (m, "\nFrom ", -1);
  g_assert_cmpuint (g_strv_length (a), ==, g_strv_length (b));
}

static void
test_maildir (void)
{
  g_autofree char *orig = gen ("md-orig", 200, "maildir");
  g_autofree char *md = g_build_filename (work, "md", NULL);
  copy (orig, md);
  /* a Maildir++ size in one changed name */
  g_autofree char *find = g_strdup_printf ("grep -l -r -i 'URL.*=.*\"data:' '%s/cur' | head -1", md);
  g_autofree char *victim = NULL;
  test_sh (find, &victim);
  g_strstrip (victim);
  g_autofree char *sized = g_strdup_printf ("%.*s,S=1234:2,FS", (int) (strstr (victim, ":2,") - victim), victim);
  g_assert_cmpint (g_rename (victim, sized), ==, 0);
  g_autofree char *untouched_before = NULL;
  g_autofree char *ls = g_strdup_printf ("cd '%s' && find . -type f -printf '%%p %%i %%T@\\n' | sort", md);
  test_sh (ls, &untouched_before);

  g_auto (CmdResult) dry = { 0 };
  RUN (&dry, NULL, "rewrite", "-c", conf, "-o", "fetch=off", "--dry-run", "--maildir", md);
  g_autofree char *after_dry = NULL;
  test_sh (ls, &after_dry);
  g_assert_cmpstr (after_dry, ==, untouched_before);
  g_autofree char *derr = bytes_str (dry.err);
  g_assert_nonnull (strstr (derr, "7 messages would change"));

  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "-o", "fetch=off", "--maildir", md);
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *after = NULL;
  test_sh (ls, &after);
  /* unchanged files: same inode and time; 7 changed; the sized one renamed */
  g_auto (GStrv) lb = g_strsplit (untouched_before, "\n", -1);
  guint kept = 0;
  for (guint i = 0; lb[i] && *lb[i]; i++) {
    g_autofree char *line = g_strconcat ("\n", lb[i], "\n", NULL);
    g_autofree char *hay = g_strconcat ("\n", after, NULL);
    if (strstr (hay, line))
      kept++;
  }
  g_assert_cmpuint (kept, ==, 200 - 7);
  g_assert_false (g_file_test (sized, G_FILE_TEST_EXISTS));
  g_autofree char *glob = g_strdup_printf ("ls '%s'/cur | grep -c ',S=[0-9]*:2,FS$'", md);
  g_autofree char *cnt = NULL;
  test_sh (glob, &cnt);
  g_assert_cmpint (atoi (cnt), ==, 1);
  g_autofree char *tmpcount = g_strdup_printf ("ls -A '%s/tmp' | wc -l", md);
  g_autofree char *tc = NULL;
  test_sh (tmpcount, &tc);
  g_assert_cmpint (atoi (tc), ==, 0);
}

/* kill -9 at random moments: every message present exactly once, each either
 * its old or its new version; then a clean run finishes the job. */
static void
test_kill (void)
{
  g_autofree char *orig = gen ("big.mbox", 1000, "mbox");
  g_autofree char *mdorig = gen ("big-md", 1000, "maildir");
  g_autofree char *final = g_build_filename (work, "final.mbox", NULL);
  copy (orig, final);
  g_auto (CmdResult) r0 = { 0 };
  RUN (&r0, NULL, "rewrite", "-c", conf, "-o", "fetch=off", "--mbox", final);
  g_assert_cmpint (r0.status, ==, 0);
  g_autoptr (GHashTable) old = mbox_messages (orig);
  g_autoptr (GHashTable) neu = mbox_messages (final);
  GRand *rnd = g_rand_new_with_seed (99);
  for (int round = 0; round < 6; round++) {
    gboolean maildir = round % 2;
    g_autofree char *target = g_build_filename (work, maildir ? "kill-md" : "kill.mbox", NULL);
    copy (maildir ? mdorig : orig, target);
    guint delay_ms = (guint) g_rand_int_range (rnd, 0, 1200);
    g_autofree char *cmd = g_strdup_printf (
      "'%s' rewrite -c '%s' -o fetch=off %s '%s' 2>/dev/null & p=$!; sleep %u.%03u; kill -9 $p 2>/dev/null; wait $p 2>/dev/null; true",
      g_getenv ("EXTBODY"), conf, maildir ? "--maildir" : "--mbox", target, delay_ms / 1000, delay_ms % 1000);
    test_sh (cmd, NULL);
    if (!maildir) {
      g_autoptr (GHashTable) now = mbox_messages (target);
      g_assert_cmpuint (g_hash_table_size (now), ==, 1000);
      GHashTableIter it;
      gpointer k, v;
      g_hash_table_iter_init (&it, now);
      while (g_hash_table_iter_next (&it, &k, &v))
        g_assert_true (strcmp (v, g_hash_table_lookup (old, k)) == 0
                       || strcmp (v, g_hash_table_lookup (neu, k)) == 0);
    } else {
      /* a rewritten message is delivered as a new one before the old one is
       * removed: a kill between the two leaves both (one message, at most) */
      g_autofree char *count = g_strdup_printf ("find '%s/cur' '%s/new' -type f | wc -l", target, target);
      g_autofree char *c = NULL;
      test_sh (count, &c);
      g_assert_cmpint (atoi (c), >=, 1000);
      g_assert_cmpint (atoi (c), <=, 1001);
      g_autofree char *ids = g_strdup_printf ("cat '%s'/cur/* '%s'/new/* | grep -o 'X-Extbody-Bench: extbody-gen-corpus/1; seed=1; index=[0-9]*' | sort | uniq -d | wc -l", target, target);
      g_autofree char *dups = NULL;
      test_sh (ids, &dups);
      g_assert_cmpint (atoi (dups), ==, atoi (c) - 1000);
      g_autofree char *idcount = g_strdup_printf ("cat '%s'/cur/* '%s'/new/* | grep -o 'X-Extbody-Bench: extbody-gen-corpus/1; seed=1; index=[0-9]*' | sort -u | wc -l", target, target);
      g_autofree char *ic = NULL;
      test_sh (idcount, &ic);
      g_assert_cmpint (atoi (ic), ==, 1000);   /* none lost */
    }
    /* a clean run after the kill finishes the work (a stale dot-lock is removed) */
    g_auto (CmdResult) r = { 0 };
    RUN (&r, NULL, "rewrite", "-c", conf, "-o", "fetch=off", maildir ? "--maildir" : "--mbox", target);
    g_assert_cmpint (r.status, ==, 0);
    if (!maildir) {
      g_autofree char *cmp = g_strdup_printf ("cmp -s '%s' '%s'", target, final);
      g_assert_cmpint (test_sh (cmp, NULL), ==, 0);
    }
  }
  g_rand_free (rnd);
}

/* A write error (the file size limit) gives a clear error, exit 74, and leaves
 * the original mbox as it was. */
static void
test_write_error (void)
{
  g_autofree char *orig = gen ("fsize-orig.mbox", 200, "mbox");
  g_autofree char *box = g_build_filename (work, "fsize.mbox", NULL);
  copy (orig, box);
  g_autofree char *cmd = g_strdup_printf ("ulimit -f 1000; '%s' rewrite -c '%s' -o fetch=off --mbox '%s' 2>'%s/fsize.err'",
                                          g_getenv ("EXTBODY"), conf, box, work);
  g_assert_cmpint (test_sh (cmd, NULL), ==, EX_IOERR);
  g_autofree char *err = NULL;
  g_autofree char *ep = g_build_filename (work, "fsize.err", NULL);
  g_file_get_contents (ep, &err, NULL, NULL);
  g_test_message ("%s", err);
  g_assert_nonnull (strstr (err, "the mailbox is unchanged"));
  g_autofree char *cmp = g_strdup_printf ("cmp -s '%s' '%s'", box, orig);
  g_assert_cmpint (test_sh (cmp, NULL), ==, 0);
  g_autofree char *left = g_strdup_printf ("ls -A '%s' | grep -c 'fsize.mbox.extbody' || true", work);
  g_autofree char *l = NULL;
  test_sh (left, &l);
  g_assert_cmpint (atoi (l), ==, 0);
}

typedef struct {
  const char *box;
  guint       port;   /* httpd.py's */
} HeldBox;

static gboolean
run_holds_box (gpointer data)
{
  HeldBox *h = data;
  g_autofree char *lock = g_strconcat (h->box, ".lock", NULL);
  return g_file_test (lock, G_FILE_TEST_EXISTS) && test_http_get_number (h->port, "/peak") >= 1;
}

/* A delivery that arrives while a run holds the mailbox waits, and its message
 * is there afterwards. The run is kept busy by a reference to a slow server. */
static void
test_delivery_during_run (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TestServer) srv = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);
  guint port = srv->port;
  g_autofree char *m = g_strdup_printf (
    "From a@example.org Sat Nov 21 10:00:00 2026\n"
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"http://127.0.0.1:%u/slow?ms=2000\"\n\n"
    "Content-Type: text/plain\n\n--b--\n\n", port);
  g_autofree char *box = g_build_filename (work, "deliver.mbox", NULL);
  g_file_set_contents (box, m, -1, NULL);
  g_autofree char *deliver = g_test_build_filename (G_TEST_DIST, "integration", "deliver.py", NULL);
  g_autoptr (GSubprocess) run = g_subprocess_new (G_SUBPROCESS_FLAGS_STDERR_SILENCE, &error, g_getenv ("EXTBODY"),
                                                  "rewrite", "-c", conf, "--fetch", "--allow-network",
                                                  "127.0.0.1/32", "--mbox", box, NULL);
  g_assert_no_error (error);
  /* the delivery starts once the run holds the mailbox: its dot-lock is
   * there and its fetch is under way */
  HeldBox held = { box, port };
  test_wait_until (run_holds_box, &held, 30, "the run holding the mailbox (its dot-lock, its fetch started)");
  g_autofree char *cmd = g_strdup_printf ("python3 '%s' '%s' '<delivered-1@test.example>'", deliver, box);
  g_assert_cmpint (test_sh (cmd, NULL), ==, 0);
  g_assert_true (g_subprocess_wait_check (run, NULL, &error));
  g_assert_no_error (error);
  g_autofree char *out = NULL;
  g_file_get_contents (box, &out, NULL, NULL);
  g_assert_nonnull (strstr (out, "<delivered-1@test.example>"));
  g_assert_nonnull (strstr (out, "hello from the test server"));
  /* appended once the run was over: after the message it rewrote */
  g_assert_true (strstr (out, "hello from the test server") < strstr (out, "<delivered-1@test.example>"));
}

/* A URL that many messages reference is fetched once in a run, even with
 * several workers asking for it at the same moment. */
static void
test_fetch_once (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TestServer) srv = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);
  guint port = srv->port;
  GString *m = g_string_new (NULL);
  for (int i = 0; i < 40; i++)
    g_string_append_printf (m,
      "From list@example.org Sat Nov 21 10:00:00 2026\n"
      "Message-ID: <list-%d@example.org>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
      "Content-Type: message/external-body; access-type=URL; URL=\"http://127.0.0.1:%u/slow?ms=200\"\n\n"
      "Content-Type: text/plain\n\n--b--\n\n", i, port);
  g_autofree char *box = g_build_filename (work, "list.mbox", NULL);
  g_file_set_contents (box, m->str, (gssize) m->len, NULL);
  g_string_free (m, TRUE);
  gint64 before = test_http_get_number (port, "/hits");
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", conf, "--fetch", "--allow-network", "127.0.0.1/32", "-j", "4", "--mbox", box);
  g_autofree char *err = bytes_str (r.err);
  g_test_message ("%s", err);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_nonnull (strstr (err, "40 references, 40 resolved"));
  gint64 after = test_http_get_number (port, "/hits");
  g_assert_cmpint (after - before, ==, 2);   /* one fetch, plus the /hits request itself */
}

/* inspect streams one JSON object per reference with the message's identity. */
static void
test_inspect (void)
{
  g_autofree char *box = gen ("inspect.mbox", 200, "mbox");
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "inspect", "-c", conf, "--json", "--mbox", box);
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *out = bytes_str (r.out);
  g_auto (GStrv) lines = g_strsplit (g_strstrip (out), "\n", -1);
  g_assert_cmpuint (g_strv_length (lines), ==, 25);
  for (guint i = 0; lines[i]; i++) {
    g_assert_nonnull (strstr (lines[i], "\"mbox_offset\":"));
    g_assert_nonnull (strstr (lines[i], "\"message_id\":\"<"));
  }
  g_autofree char *md = gen ("inspect-md", 200, "maildir");
  g_auto (CmdResult) r2 = { 0 };
  RUN (&r2, NULL, "inspect", "-c", conf, "--json", "--maildir", md);
  g_autofree char *out2 = bytes_str (r2.out);
  g_assert_cmpuint (n_lines (r2.out), ==, 25);
  g_assert_nonnull (strstr (out2, "/cur/"));
  /* inspect changes nothing */
  g_autofree char *genpy = g_test_build_filename (G_TEST_DIST, "bench", "gen-corpus.py", NULL);
  g_autofree char *cmp = g_strdup_printf ("python3 '%s' --seed 1 --count 200 --ext-fraction 0.1 --out '%s.check' --force -q && cmp -s '%s' '%s.check'",
                                          genpy, box, box, box);
  g_assert_cmpint (test_sh (cmp, NULL), ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  work = g_dir_make_tmp ("extbody-mailbox-XXXXXX", NULL);
  conf = g_build_filename (work, "empty.conf", NULL);
  g_file_set_contents (conf, "", 0, NULL);
  g_test_add_func ("/mailbox/mbox/roundtrip", test_mbox_roundtrip);
  g_test_add_func ("/mailbox/mbox/quoting", test_mbox_quoting);
  g_test_add_func ("/mailbox/maildir", test_maildir);
  g_test_add_func ("/mailbox/kill-9", test_kill);
  g_test_add_func ("/mailbox/write-error", test_write_error);
  g_test_add_func ("/mailbox/delivery-during-run", test_delivery_during_run);
  g_test_add_func ("/mailbox/inspect", test_inspect);
  g_test_add_func ("/mailbox/fetch-once", test_fetch_once);
  int rc = g_test_run ();
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", work);
  test_sh (rm, NULL);
  g_free (conf);
  g_free (work);
  return rc;
}
