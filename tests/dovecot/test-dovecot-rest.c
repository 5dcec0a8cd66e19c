/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-dovecot-rest.c - extbody over mail at rest in a real Dovecot: an mdbox
 * INBOX of generated messages (tests/bench/gen-corpus.py, half of them with
 * external-body parts) APPENDed with varied flags, keywords and internal
 * dates, then rewritten by filters/dovecot/extbody-imap-rewrite through
 * `doveadm exec imap`, and read back over IMAP:
 *   - every data: reference the generator marks resolvable is resolved (its
 *     X-Extbody-Resolved field carries the content's sha256);
 *   - every other message is byte for byte what IMAP served before;
 *   - flags, keywords and internal dates are kept, the count is unchanged,
 *     each message is there once and no bookkeeping keyword is left;
 *   - killed (SIGKILL, through the tool's test hook) after each step of the
 *     third message it rewrites, the run loses nothing (every message still
 *     there, in its old or its new version), and a second run finishes with
 *     the same result as a run never interrupted.
 *
 * Needs root and the Debian packages dovecot-core and dovecot-imapd;
 * otherwise exits 77 (skipped). */
#include "dovecot-test.h"

static DtServer server;
static char *corpus;
static GHashTable *expect;   /* Message-ID -> "sha256,sha256" */
static GPtrArray *loaded;    /* the messages as IMAP served them before any rewrite */
static guint users;

/* A fresh user with the corpus in its INBOX. */
static char *
new_user (void)
{
  char *user = g_strdup_printf ("u%u", ++users);
  G_GNUC_UNUSED g_autofree char *out = dt_client ((const char *const[]) { "load", server.conf, user, corpus, NULL });
  return user;
}

/* extbody-imap-rewrite for @user; its exit status (128 + signal when killed). */
static int
rewrite (const char *user, const char *kill_at)
{
  g_autofree char *tool = g_test_build_filename (G_TEST_DIST, "..", "filters", "dovecot", "extbody-imap-rewrite", NULL);
  g_autofree char *conf = g_build_filename (server.work, "extbody.conf", NULL);
  g_autofree char *cmd = g_strdup_printf ("%s%s%s python3 '%s' -c '%s' -e '%s' -u '%s' --dovecot-config '%s' 2>&1",
                                          kill_at ? "EXTBODY_IMAP_REWRITE_KILL='" : "", kill_at ? kill_at : "",
                                          kill_at ? "'" : "", tool, conf, g_getenv ("EXTBODY"), user, server.conf);
  g_autofree char *out = NULL;
  int rc = dt_sh (cmd, &out);
  g_test_message ("extbody-imap-rewrite (%s): %d: %s", kill_at ? kill_at : "whole run", rc, out);
  return rc;
}

static const DtMsg *
by_msgid (GPtrArray *msgs, const char *msgid, guint *count)
{
  const DtMsg *found = NULL;
  *count = 0;
  for (guint i = 0; i < msgs->len; i++) {
    const DtMsg *m = g_ptr_array_index (msgs, i);
    if (g_str_equal (m->msgid, msgid)) {
      found = m;
      (*count)++;
    }
  }
  return found;
}

/* The mailbox after a finished run, against the one loaded. */
static void
assert_rewritten (GPtrArray *after)
{
  g_assert_cmpuint (after->len, ==, loaded->len);
  guint resolved = 0;
  for (guint i = 0; i < loaded->len; i++) {
    const DtMsg *b = g_ptr_array_index (loaded, i);
    guint n = 0;
    const DtMsg *a = by_msgid (after, b->msgid, &n);
    g_assert_cmpuint (n, ==, 1);
    g_assert_cmpstr (a->flags, ==, b->flags);
    g_assert_cmpstr (a->date, ==, b->date);
    const char *shas = g_hash_table_lookup (expect, b->msgid);
    if (!shas) {
      g_assert_true (g_bytes_equal (a->body, b->body));
      g_assert_cmpuint (a->uid, ==, b->uid);
      continue;
    }
    g_assert_false (g_bytes_equal (a->body, b->body));
    g_assert_cmpuint (a->uid, >, b->uid);
    g_auto (GStrv) list = g_strsplit (shas, ",", -1);
    for (guint k = 0; list[k]; k++) {
      g_autofree char *field = g_strdup_printf ("sha256=%s", list[k]);
      g_assert_true (dt_contains (a->body, field));
      resolved++;
    }
  }
  g_assert_cmpuint (resolved, >, 0);
  for (guint i = 0; i < after->len; i++) {
    const DtMsg *a = g_ptr_array_index (after, i);
    g_assert_null (strstr (a->flags, "$Extbody"));
  }
}

static void
test_whole_run (void)
{
  g_autofree char *user = new_user ();
  g_autoptr (GPtrArray) before = dt_dump (&server, user);
  g_assert_cmpuint (before->len, ==, loaded->len);
  g_assert_cmpint (rewrite (user, NULL), ==, 0);
  g_autoptr (GPtrArray) after = dt_dump (&server, user);
  assert_rewritten (after);
  /* a second run finds nothing more to do */
  g_assert_cmpint (rewrite (user, NULL), ==, 0);
  g_autoptr (GPtrArray) again = dt_dump (&server, user);
  g_assert_cmpuint (again->len, ==, after->len);
  for (guint i = 0; i < after->len; i++) {
    const DtMsg *x = g_ptr_array_index (after, i), *y = g_ptr_array_index (again, i);
    g_assert_cmpuint (x->uid, ==, y->uid);
    g_assert_true (g_bytes_equal (x->body, y->body));
  }
}

static void
test_killed (gconstpointer data)
{
  const char *step = data;
  g_autofree char *user = new_user ();
  g_autofree char *kill_at = g_strdup_printf ("%s:3", step);
  g_assert_cmpint (rewrite (user, kill_at), ==, 128 + SIGKILL);
  /* nothing lost: every message there, old or new version */
  g_autoptr (GPtrArray) mid = dt_dump (&server, user);
  for (guint i = 0; i < loaded->len; i++) {
    const DtMsg *b = g_ptr_array_index (loaded, i);
    guint n = 0;
    by_msgid (mid, b->msgid, &n);
    g_assert_cmpuint (n, >=, 1);
  }
  /* the kill came in the middle of a rewrite: after the append and before the
   * expunge, both versions are there */
  if (g_str_equal (step, "appended") || g_str_equal (step, "flagged"))
    g_assert_cmpuint (mid->len, ==, loaded->len + 1);
  else
    g_assert_cmpuint (mid->len, ==, loaded->len);
  g_assert_cmpint (rewrite (user, NULL), ==, 0);
  g_autoptr (GPtrArray) after = dt_dump (&server, user);
  assert_rewritten (after);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  dt_require (NULL);
  server.work = g_dir_make_tmp ("extbody-dovecot-rest-XXXXXX", NULL);
  g_assert_nonnull (server.work);
  g_chmod (server.work, 0755);
  g_autofree char *conf = g_build_filename (server.work, "extbody.conf", NULL);
  dt_put (conf, "", 0644);   /* the defaults: data: URLs only, fetching off */

  /* the corpus: 40 messages, half with external bodies */
  corpus = g_build_filename (server.work, "corpus", NULL);
  g_autofree char *manifest = g_build_filename (server.work, "manifest.jsonl", NULL);
  g_autofree char *gen = g_test_build_filename (G_TEST_DIST, "bench", "gen-corpus.py", NULL);
  g_autofree char *gencmd = g_strdup_printf ("python3 '%s' -q --seed 7 --count 40 --ext-fraction 0.5 --format dir"
                                             " --out '%s' --manifest '%s'", gen, corpus, manifest);
  g_assert_cmpint (dt_sh (gencmd, NULL), ==, 0);
  expect = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autofree char *exp = dt_client ((const char *const[]) { "expect", manifest, NULL });
  g_auto (GStrv) lines = g_strsplit (exp, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    g_auto (GStrv) f = g_strsplit (lines[i], "|", 2);
    if (g_strv_length (f) == 2)
      g_hash_table_insert (expect, g_strdup (f[0]), g_strdup (f[1]));
  }
  g_assert_cmpuint (g_hash_table_size (expect), >, 3);

  g_autofree char *homes = g_strdup_printf ("mkdir -p '%s/home' && chown nobody:nogroup '%s/home'", server.work, server.work);
  g_assert_cmpint (dt_sh (homes, NULL), ==, 0);
  g_autofree char *extra = g_strdup_printf (
    "mail_location = mdbox:~/mail\n"
    "passdb {\n  driver = static\n  args = nopassword=y\n}\n"
    "userdb {\n  driver = static\n  args = uid=nobody gid=nogroup home=%s/home/%%u\n}\n", server.work);
  int ret = 77;
  if (!dt_start (&server, 0, extra)) {
    g_printerr ("skipped: dovecot did not start\n");
    dt_print_log (&server);
  } else {
    /* the mailbox as loaded, the reference for every case */
    g_autofree char *u0 = new_user ();
    loaded = dt_dump (&server, u0);
    g_assert_cmpuint (loaded->len, ==, 40);
    g_test_add_func ("/dovecot-rest/rewritten", test_whole_run);
    for (const char *const *s = (const char *const[]) { "marked", "appended", "flagged", "expunged", NULL }; *s; s++) {
      g_autofree char *path = g_strdup_printf ("/dovecot-rest/killed-after-%s", *s);
      g_test_add_data_func (path, *s, test_killed);
    }
    ret = g_test_run ();
    if (ret != 0)
      dt_print_log (&server);
    g_ptr_array_unref (loaded);
  }
  g_hash_table_unref (expect);
  g_free (corpus);
  dt_stop (&server, ret == 1);
  return ret;
}
