/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-dovecot-rest.c - extbody over mail at rest in a real Dovecot (2.3 or
 * 2.4, tests/dovecot/dovecot-test.h): an INBOX of generated messages
 * (tests/bench/gen-corpus.py, half of them with external-body parts)
 * APPENDed with varied flags, keywords and internal dates, then rewritten by
 * filters/dovecot/extbody-imap-rewrite through `doveadm exec imap`, and read
 * back over IMAP:
 *   - every data: reference the generator marks resolvable is resolved (its
 *     X-Extbody-Resolved field carries the content's sha256);
 *   - every message is byte for byte what plain `extbody rewrite` writes for
 *     what IMAP served before (the way of the tool when it ran a process per
 *     message): the others are untouched (same UID);
 *   - flags, keywords and internal dates are kept, the count is unchanged,
 *     each message is there once and no bookkeeping keyword is left, in
 *     each format Debian sets up (mdbox, Maildir, and mbox, Debian's
 *     default), the changed messages stored with UID REPLACE (RFC 8508)
 *     where Dovecot 2.4 offers it, and with APPEND and UID EXPUNGE
 *     (Dovecot 2.3, 2.4's mbox, --no-replace): which way is asserted, from
 *     the tool's -v line and from Dovecot's own count of the session's
 *     expunges (its "Logged out" line: REPLACE's are not counted there);
 *   - a run that went well writes nothing on standard error (Dovecot's
 *     "Logged out" line of the session included: a cron job mails whatever
 *     comes there), and a session that fails shows Dovecot's reason there;
 *   - a keyword of the tool's own still on a message at the end of a run
 *     (as Dovecot's mbox left them when a flag change was synced with an
 *     expunge) is removed before the run ends;
 *   - through extbodyd's HTTP listener (-s, POST /rewrite?stored) the store
 *     comes out the same as with one extbody process per batch;
 *   - issue 29's selection by BODYSTRUCTURE: references at every depth (top
 *     level, in a multipart/alternative, in a forwarded message/rfc822, in
 *     nested multiparts, in RFC 2231 sections, RFC 2231 values with a
 *     charset) are found and resolved, a reference of another access-type
 *     is not fetched, and a store without references has no message fetched
 *     whole (the tool's count line);
 *   - a store that changes during the run (through the tool's test hook): a
 *     message expunged and another flagged between fetching and storing,
 *     one that arrives between SELECT and the selection; the expunged one
 *     stays gone, the flagged one's new version has the flag, the new one is
 *     not touched;
 *   - killed (SIGKILL, through the tool's test hook) after each step of the
 *     third message it rewrites (changed messages stored in groups of two,
 *     one APPEND a group: the second group), in mdbox and in mbox, the run
 *     loses nothing (every message still there, in its old or its new
 *     version), and a second run finishes with the same result as a run
 *     never interrupted; so too killed after the third UID REPLACE (the
 *     first of the second group: Dovecot 2.4 only, 2.3 has no REPLACE),
 *     where every message is there exactly once and no keyword is set.
 *
 * Every user's mail is in the format its passwd-file line names
 * (dt_user_line_mail). Needs root and the Debian packages dovecot-core and
 * dovecot-imapd; otherwise exits 77 (skipped). The daemon case needs
 * EXTBODYD (ctest). */
#include "dovecot-test.h"
#include "mta-milter.h"

static DtServer server;
static char *corpus;
static char *special;        /* the selection's messages (write_special) */
static GHashTable *expect;   /* Message-ID -> "sha256,sha256" */
static GHashTable *wanted;   /* Message-ID -> GBytes: plain `extbody rewrite` of what IMAP served */
static GPtrArray *loaded;    /* the messages as IMAP served them before any rewrite */
static MtaMilter *daemon_;   /* extbodyd with its http_socket, when EXTBODYD is set */
static char *http_sock;
#define USERS_PER_FORMAT 40
static const char *const drivers[] = { "mdbox", "maildir", "mbox" };

/* The passwd-file userdb @path: USERS_PER_FORMAT users of each format,
 * DRIVER1, DRIVER2, ... (Dovecot looks at a passwd-file again at most once
 * a second: the users are all there from the start). */
static void
write_users (const char *path)
{
  g_autoptr (GString) text = g_string_new (NULL);
  for (guint d = 0; d < G_N_ELEMENTS (drivers); d++)
    for (guint i = 1; i <= USERS_PER_FORMAT; i++) {
      g_autofree char *user = g_strdup_printf ("%s%u", drivers[d], i);
      g_autofree char *home = g_strdup_printf ("%s/home/%s", server.work, user);
      g_autofree char *line = dt_user_line_mail (user, home, drivers[d]);
      g_string_append (text, line);
    }
  dt_put (path, text->str, 0644);
}

/* A fresh user, its mail in format @driver (mdbox, maildir, mbox), with the
 * messages of @dir (the corpus when NULL) in its INBOX. */
static char *
new_user_in (const char *dir, const char *driver)
{
  static guint used[G_N_ELEMENTS (drivers)];
  guint d = 0;
  while (d < G_N_ELEMENTS (drivers) && !g_str_equal (drivers[d], driver))
    d++;
  g_assert_cmpuint (d, <, G_N_ELEMENTS (drivers));
  g_assert_cmpuint (used[d], <, USERS_PER_FORMAT);
  char *user = g_strdup_printf ("%s%u", driver, ++used[d]);
  G_GNUC_UNUSED g_autofree char *out = dt_client ((const char *const[]) { "load", server.conf, user, dir ? dir : corpus, NULL });
  return user;
}

static char *
new_user_with (const char *dir)
{
  return new_user_in (dir, "mdbox");
}

static char *
new_user (void)
{
  return new_user_in (NULL, "mdbox");
}

/* extbody-imap-rewrite for @user with the options @opts (NULL: one extbody
 * process per batch) and the environment assignments @env; its exit status
 * (128 + signal when killed), what it wrote in *@output: its standard output,
 * then its standard error. A run that exits 0 must have written nothing on
 * standard error. */
static int
rewrite_full (const char *user, const char *opts, const char *env, char **output)
{
  g_autofree char *tool = g_test_build_filename (G_TEST_DIST, "..", "filters", "dovecot", "extbody-imap-rewrite", NULL);
  g_autofree char *conf = g_build_filename (server.work, "extbody.conf", NULL);
  g_autofree char *errfile = g_build_filename (server.work, "rewrite.err", NULL);
  g_autofree char *cmd = g_strdup_printf ("%s python3 '%s' -c '%s' -e '%s' %s -u '%s' --dovecot-config '%s' 2>'%s'",
                                          env ? env : "", tool, conf, g_getenv ("EXTBODY"),
                                          opts ? opts : "--no-daemon", user, server.conf, errfile);
  g_autofree char *out = NULL, *err = NULL;
  int rc = dt_sh (cmd, &out);
  g_assert_true (g_file_get_contents (errfile, &err, NULL, NULL));
  g_test_message ("extbody-imap-rewrite (%s %s): %d: %s%s%s", opts ? opts : "", env ? env : "whole run", rc, out,
                  *err ? "standard error: " : "", err);
  if (rc == 0)
    g_assert_cmpstr (err, ==, "");
  if (output)
    *output = g_strconcat (out, err, NULL);
  return rc;
}

/* The numbers of the count line "INBOX: N messages, F fetched whole, C changed". */
static void
counts (const char *out, guint *n, guint *fetched, guint *changed)
{
  const char *at = strstr (out, "INBOX: ");
  while (at && !g_ascii_isdigit (at[7]))
    at = strstr (at + 1, "INBOX: ");   /* past the -v lines of INBOX */
  g_assert_nonnull (at);
  g_assert_cmpint (sscanf (at, "INBOX: %u messages, %u fetched whole, %u changed", n, fetched, changed), ==, 3);
}

/* The way the run of @out stored the changed messages of INBOX, as the
 * tool's -v line says it and as Dovecot's own count of the session's
 * expunges shows it (the "Logged out" line, which -v prints): with UID
 * REPLACE where Dovecot 2.4 offers it, unless @driver is mbox or @opts
 * hold --no-replace; otherwise with APPEND and UID EXPUNGE, for the reason
 * given. Dovecot 2.4.1 does not count REPLACE's expunges in that line. */
static void
assert_stored_by (const char *out, const char *driver, const char *opts)
{
  gboolean no_replace = opts && strstr (opts, "--no-replace");
  gboolean mbox = g_str_equal (driver, "mbox");
  guint n = 0, fetched = 0, changed = 0;
  counts (out, &n, &fetched, &changed);
  g_assert_cmpuint (changed, >, 0);
  g_autofree char *expunged = NULL;
  if (dt_is_24 () && !no_replace && !mbox) {
    g_assert_nonnull (strstr (out, "INBOX: storing changed messages with UID REPLACE (RFC 8508)\n"));
    expunged = g_strdup (" deleted=0 expunged=0 ");
  } else {
    const char *why = no_replace ? "--no-replace"
                      : !dt_is_24 () ? "the server lacks REPLACE" : "an mbox, where Dovecot's REPLACE fails";
    g_autofree char *line = g_strdup_printf ("INBOX: storing changed messages with APPEND and UID EXPUNGE (%s)\n", why);
    g_assert_nonnull (strstr (out, line));
    expunged = g_strdup_printf (" deleted=%u expunged=%u ", changed, changed);
  }
  g_assert_nonnull (strstr (out, "Info: Disconnected: Logged out "));
  g_assert_nonnull (strstr (out, expunged));
}

static int
rewrite (const char *user, const char *kill_at)
{
  g_autofree char *env = kill_at ? g_strdup_printf ("EXTBODY_IMAP_REWRITE_KILL='%s'", kill_at) : NULL;
  return rewrite_full (user, NULL, env, NULL);
}

/* Plain `extbody rewrite` of each message of @msgs: Message-ID -> GBytes. */
static GHashTable *
rewrite_each (GPtrArray *msgs)
{
  GHashTable *h = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, (GDestroyNotify) g_bytes_unref);
  g_autofree char *conf = g_build_filename (server.work, "extbody.conf", NULL);
  g_autofree char *file = g_build_filename (server.work, "one.eml", NULL);
  for (guint i = 0; i < msgs->len; i++) {
    const DtMsg *m = g_ptr_array_index (msgs, i);
    gsize n = 0;
    const char *d = g_bytes_get_data (m->body, &n);
    g_assert_true (g_file_set_contents (file, d, (gssize) n, NULL));
    const char *argv[] = { g_getenv ("EXTBODY"), "rewrite", "-c", conf, file, NULL };
    g_autofree char *out = NULL;
    gsize len = 0;
    g_autoptr (GError) error = NULL;
    int status = 0;
    g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL, &status, &error);
    g_assert_no_error (error);
    g_assert_true (g_spawn_check_wait_status (status, NULL));
    len = strlen (out);   /* the messages here hold no NUL */
    g_hash_table_insert (h, g_strdup (m->msgid), g_bytes_new (out, len));
  }
  return h;
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
    /* what the old way, a process per message, stored */
    g_assert_true (g_bytes_equal (a->body, g_hash_table_lookup (wanted, b->msgid)));
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

/* A format (and the tool's options) of a case. */
typedef struct {
  const char *driver;
  const char *opts;   /* beside --no-daemon -v */
} Format;

static void
test_whole_run (gconstpointer data)
{
  const Format *f = data;
  g_autofree char *user = new_user_in (NULL, f->driver);
  g_autoptr (GPtrArray) before = dt_dump (&server, user);
  g_assert_cmpuint (before->len, ==, loaded->len);
  for (guint i = 0; i < before->len; i++)   /* every format serves the messages loaded as mdbox does */
    g_assert_true (g_bytes_equal (((DtMsg *) before->pdata[i])->body, ((DtMsg *) loaded->pdata[i])->body));
  g_autofree char *opts = g_strdup_printf ("--no-daemon -v%s%s", f->opts ? " " : "", f->opts ? f->opts : "");
  g_autofree char *out = NULL;
  g_assert_cmpint (rewrite_full (user, opts, NULL, &out), ==, 0);
  assert_stored_by (out, f->driver, f->opts);
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

/* Through the daemon's HTTP listener: the same store as with one extbody
 * process per batch (the previous case checked that one). */
static void
test_daemon (void)
{
  if (!daemon_) {
    g_test_skip ("EXTBODYD is not set (run through ctest)");
    return;
  }
  g_autofree char *user = new_user ();
  g_autofree char *opts = g_strdup_printf ("-v -j 4 --batch 7 -s unix:%s", http_sock);
  g_autofree char *out = NULL;
  g_assert_cmpint (rewrite_full (user, opts, NULL, &out), ==, 0);
  g_assert_nonnull (strstr (out, "through extbodyd"));
  g_autoptr (GPtrArray) after = dt_dump (&server, user);
  assert_rewritten (after);
  g_assert_cmpuint (mta_milter_log_count (daemon_, "http: POST /rewrite 200"), >=, g_hash_table_size (expect));
  /* a pool's list (extbodyc's -s) with a daemon gone: each message begins
   * at the next daemon, and one that meets the dead one goes on to the live
   * one; every message rewritten */
  g_autofree char *user3 = new_user ();
  guint served = mta_milter_log_count (daemon_, "http: POST /rewrite 200");
  g_autofree char *pool = g_strdup_printf ("-j 4 --batch 7 -s unix:%s/gone.sock,unix:%s", server.work, http_sock);
  g_assert_cmpint (rewrite_full (user3, pool, NULL, NULL), ==, 0);
  g_autoptr (GPtrArray) after3 = dt_dump (&server, user3);
  assert_rewritten (after3);
  g_assert_cmpuint (mta_milter_log_count (daemon_, "http: POST /rewrite 200") - served, >=, g_hash_table_size (expect));
  /* a daemon named and not there: 69, nothing done */
  g_autofree char *user2 = new_user ();
  g_autofree char *gone = g_strdup_printf ("-s unix:%s/nothing.sock", server.work);
  g_assert_cmpint (rewrite_full (user2, gone, NULL, NULL), ==, 69);
}

/* The tool's temporary directories in its default places whose process is
 * gone, one a line: what a run left. Another run of the tool on the machine
 * (a test beside this one, a suite in another chroot sharing /dev/shm) has
 * its own there, alive. */
static char *
dead_temp_dirs (void)
{
  char *out = NULL;
  dt_sh ("for d in /dev/shm/extbody-imap-rewrite-* ${TMPDIR:-/tmp}/extbody-imap-rewrite-*; do "
         "[ -d \"$d\" ] || continue; p=${d##*/extbody-imap-rewrite-}; p=${p%%-*}; "
         "kill -0 \"$p\" 2>/dev/null || echo \"$d\"; done",
         &out);
  return out ? out : g_strdup ("");
}

/* A small batch and one job: several extbody runs, same store. */
static void
test_small_batches (void)
{
  g_autofree char *user = new_user ();
  g_autofree char *out = NULL;
  g_autofree char *dead_before = dead_temp_dirs ();
  g_assert_cmpint (rewrite_full (user, "--no-daemon -j 1 --batch 3", NULL, &out), ==, 0);
  g_autoptr (GPtrArray) after = dt_dump (&server, user);
  assert_rewritten (after);
  /* nothing of its temporary Maildir is left: no directory of a process
   * that is gone, but those there before */
  g_autofree char *dead_after = dead_temp_dirs ();
  g_auto (GStrv) lines = g_strsplit (dead_after, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    if (*lines[i] && !strstr (dead_before, lines[i]))
      g_error ("the run left %s", lines[i]);
}

/* The selection's messages (issue 29): a reference at every depth, one of an
 * access-type extbody leaves alone, and messages without references. The
 * number in the name gives the flags (dovecot-client.py load). */
static const struct { const char *name; gboolean selected; const char *text; } special_msgs[] = {
  { "m1.eml", TRUE,
    "Message-ID: <top@sel>\nSubject: top\nMIME-Version: 1.0\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,top\"\n\n"
    "Content-Type: text/plain\n\n" },
  { "m2.eml", TRUE,
    "Message-ID: <alt@sel>\nSubject: alternative\nMIME-Version: 1.0\n"
    "Content-Type: multipart/alternative; boundary=a\n\n--a\nContent-Type: text/plain\n\nthe link\n"
    "--a\nContent-Type: message/external-body; ACCESS-TYPE=url;\n URL=\"data:,alt\"\n\n"
    "Content-Type: text/plain\n\n\n--a--\n" },
  { "m3.eml", TRUE,
    "Message-ID: <fwd@sel>\nSubject: forwarded\nMIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nsee below\n"
    "--b\nContent-Type: message/rfc822\n\nMessage-ID: <inner@sel>\nSubject: inner\nMIME-Version: 1.0\n"
    "Content-Type: multipart/alternative; boundary=c\n\n--c\nContent-Type: text/plain\n\nx\n"
    "--c\nContent-Type: Message/External-Body; access-type=\"URL\"; URL=\"data:,fwd\"\n\n"
    "Content-Type: text/plain\n\n\n--c--\n\n--b--\n" },
  { "m4.eml", TRUE,
    "Message-ID: <nested@sel>\nSubject: nested\nMIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=d\n\n--d\nContent-Type: multipart/related; boundary=e\n\n"
    "--e\nContent-Type: multipart/alternative; boundary=f\n\n--f\nContent-Type: text/plain\n\nx\n"
    "--f\nContent-Type: message/external-body; access-type=URL; URL=\"data:,nested\"\n\n"
    "Content-Type: text/plain\n\n\n--f--\n\n--e--\n\n--d\nContent-Type: text/plain\n\ny\n--d--\n" },
  { "m5.eml", TRUE,
    "Message-ID: <rfc2231@sel>\nSubject: sections\nMIME-Version: 1.0\n"
    "Content-Type: message/external-body; access-type=URL;\n URL*0=\"data:,sec\";\n URL*1=\"tions\"\n\n"
    "Content-Type: text/plain\n\n" },
  { "m6.eml", FALSE,
    "Message-ID: <mailserver@sel>\nSubject: mail-server\nMIME-Version: 1.0\n"
    "Content-Type: message/external-body; access-type=mail-server; server=\"listserv@example.org\"\n\n"
    "Content-Type: text/plain\n\nget file\n" },
  { "m7.eml", FALSE,
    "Message-ID: <plain@sel>\nSubject: plain\n\nno reference, but the words message/external-body\n" },
  { "m8.eml", FALSE,
    "Message-ID: <attach@sel>\nSubject: attachment\nMIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=g\n\n--g\nContent-Type: text/plain\n\nhi\n"
    "--g\nContent-Type: application/pdf; name=a.pdf\nContent-Transfer-Encoding: base64\n\nJVBERi0xLjQK\n--g--\n" },
  /* RFC 2231 values with a charset: Dovecot 2.3 shows them encoded (under
   * access-type* and URL*: uncertain, fetched), 2.4 decoded (URL) */
  { "m9.eml", TRUE,
    "Message-ID: <charset@sel>\nSubject: charset\nMIME-Version: 1.0\n"
    "Content-Type: message/external-body; access-type*=us-ascii'en'URL;\n URL*=us-ascii''data%3A%2Cencoded\n\n"
    "Content-Type: text/plain\n\n" },
};

static void
write_special (void)
{
  special = g_build_filename (server.work, "special", NULL);
  g_autofree char *none = g_build_filename (server.work, "none", NULL);
  g_mkdir (special, 0755);
  g_mkdir (none, 0755);
  for (guint i = 0; i < G_N_ELEMENTS (special_msgs); i++) {
    g_autofree char *f = g_build_filename (special, special_msgs[i].name, NULL);
    dt_put (f, special_msgs[i].text, 0644);
    if (!special_msgs[i].selected) {
      g_autofree char *g = g_build_filename (none, special_msgs[i].name, NULL);
      dt_put (g, special_msgs[i].text, 0644);
    }
  }
}

static void
test_selection (void)
{
  g_autofree char *user = new_user_with (special);
  g_autoptr (GPtrArray) before = dt_dump (&server, user);
  g_assert_cmpuint (before->len, ==, G_N_ELEMENTS (special_msgs));
  g_autoptr (GHashTable) want = rewrite_each (before);
  g_autofree char *out = NULL;
  g_assert_cmpint (rewrite_full (user, NULL, NULL, &out), ==, 0);
  guint n = 0, fetched = 0, changed = 0, selected = 0;
  for (guint i = 0; i < G_N_ELEMENTS (special_msgs); i++)
    selected += special_msgs[i].selected;
  counts (out, &n, &fetched, &changed);
  g_assert_cmpuint (n, ==, G_N_ELEMENTS (special_msgs));
  g_assert_cmpuint (fetched, ==, selected);
  g_assert_cmpuint (changed, ==, selected);
  g_autoptr (GPtrArray) after = dt_dump (&server, user);
  g_assert_cmpuint (after->len, ==, before->len);
  for (guint i = 0; i < before->len; i++) {
    const DtMsg *b = g_ptr_array_index (before, i);
    guint k = 0;
    const DtMsg *a = by_msgid (after, b->msgid, &k);
    g_assert_cmpuint (k, ==, 1);
    g_assert_true (g_bytes_equal (a->body, g_hash_table_lookup (want, b->msgid)));
    g_assert_cmpstr (a->flags, ==, b->flags);
    g_assert_cmpstr (a->date, ==, b->date);
    /* resolved: the data: URL's words are in the message now */
    gboolean sel = !g_str_equal (b->msgid, "<mailserver@sel>") && !g_str_equal (b->msgid, "<plain@sel>")
                   && !g_str_equal (b->msgid, "<attach@sel>");
    g_assert_true (sel == !g_bytes_equal (a->body, b->body));
  }

  /* a store without references: nothing fetched whole */
  g_autofree char *none = g_build_filename (server.work, "none", NULL);
  g_autofree char *user2 = new_user_with (none);
  g_autofree char *out2 = NULL;
  g_assert_cmpint (rewrite_full (user2, "--no-daemon -v", NULL, &out2), ==, 0);
  counts (out2, &n, &fetched, &changed);
  g_assert_cmpuint (n, ==, G_N_ELEMENTS (special_msgs) - selected);
  g_assert_cmpuint (fetched, ==, 0);
  g_assert_cmpuint (changed, ==, 0);
  /* Dovecot's own count of the session (doveadm exec imap's log line on its
   * standard error, which the tool shows with -v only): not one body served */
  g_assert_nonnull (strstr (out2, "session: "));
  g_assert_nonnull (strstr (out2, " body_count=0 body_bytes=0"));
}

/* The other ways to run it: -n changes nothing; --all takes every mailbox
 * (a second one made and filled by doveadm); --every-message fetches every
 * message whole; --command runs the session given (PREAUTH). */
static void
test_modes (void)
{
  g_autofree char *user = new_user_with (special);
  g_autoptr (GPtrArray) before = dt_dump (&server, user);
  guint n = 0, fetched = 0, changed = 0;
  g_autofree char *out = NULL;
  g_assert_cmpint (rewrite_full (user, "--no-daemon -n", NULL, &out), ==, 0);
  g_assert_nonnull (strstr (out, "(dry run: nothing stored)"));
  counts (out, &n, &fetched, &changed);
  g_assert_cmpuint (changed, ==, 6);
  g_autoptr (GPtrArray) same = dt_dump (&server, user);
  g_assert_cmpuint (same->len, ==, before->len);
  for (guint i = 0; i < before->len; i++) {
    const DtMsg *b = g_ptr_array_index (before, i), *a = g_ptr_array_index (same, i);
    g_assert_cmpuint (a->uid, ==, b->uid);
    g_assert_cmpstr (a->flags, ==, b->flags);
    g_assert_true (g_bytes_equal (a->body, b->body));
  }

  /* a second mailbox with the same messages: --all rewrites both */
  g_autofree char *mk = g_strdup_printf ("doveadm -c '%s' mailbox create -u %s 'Old mail' && "
                                         "doveadm -c '%s' copy -u %s 'Old mail' mailbox INBOX all",
                                         server.conf, user, server.conf, user);
  g_assert_cmpint (dt_sh (mk, NULL), ==, 0);
  g_autofree char *out2 = NULL;
  g_assert_cmpint (rewrite_full (user, "--no-daemon --all", NULL, &out2), ==, 0);
  g_assert_nonnull (strstr (out2, "INBOX: 9 messages, 6 fetched whole, 6 changed"));
  g_assert_nonnull (strstr (out2, "Old mail: 9 messages, 6 fetched whole, 6 changed"));
  g_autofree char *out3 = NULL;
  g_assert_cmpint (rewrite_full (user, "--no-daemon --all", NULL, &out3), ==, 0);
  g_assert_nonnull (strstr (out3, "INBOX: 9 messages, 0 fetched whole, 0 changed"));
  g_assert_nonnull (strstr (out3, "Old mail: 9 messages, 0 fetched whole, 0 changed"));

  /* every message fetched whole: the same store, nothing more to change */
  g_autofree char *out4 = NULL;
  g_assert_cmpint (rewrite_full (user, "--no-daemon --every-message", NULL, &out4), ==, 0);
  g_assert_nonnull (strstr (out4, "INBOX: 9 messages, 9 fetched whole, 0 changed"));

  /* --command: the session given, here the same doveadm exec imap */
  g_autofree char *user2 = new_user_with (special);
  g_autofree char *tool = g_test_build_filename (G_TEST_DIST, "..", "filters", "dovecot", "extbody-imap-rewrite", NULL);
  g_autofree char *conf = g_build_filename (server.work, "extbody.conf", NULL);
  g_autofree char *errfile = g_build_filename (server.work, "command.err", NULL);
  g_autofree char *cmd = g_strdup_printf ("python3 '%s' -c '%s' -e '%s' --no-daemon -v "
                                          "--command \"doveadm -c '%s' exec imap -u %s\" 2>'%s'",
                                          tool, conf, g_getenv ("EXTBODY"), server.conf, user2, errfile);
  g_autofree char *out5 = NULL, *err5 = NULL;
  g_assert_cmpint (dt_sh (cmd, &out5), ==, 0);
  g_test_message ("%s", out5);
  g_assert_true (g_file_get_contents (errfile, &err5, NULL, NULL));
  g_assert_cmpstr (err5, ==, "");
  g_assert_nonnull (strstr (out5, "INBOX: 9 messages, 6 fetched whole, 6 changed"));
  /* the session does not show Dovecot's mail format, and 2.4's REPLACE
   * fails in its mbox: APPEND, as on 2.3, which lacks REPLACE */
  g_assert_nonnull (strstr (out5, dt_is_24 () ? "INBOX: storing changed messages with APPEND and UID EXPUNGE "
                                                "(a Dovecot whose mail format the session does not show; "
                                                "REPLACE fails in its mbox)\n"
                                              : "INBOX: storing changed messages with APPEND and UID EXPUNGE "
                                                "(the server lacks REPLACE)\n"));
  /* extbody's configuration wrong: 78 before anything is read */
  g_autofree char *badconf = g_build_filename (server.work, "bad.conf", NULL);
  dt_put (badconf, "fetch = maybe\n", 0644);
  g_autofree char *badrun = g_strdup_printf ("python3 '%s' -c '%s' -e '%s' --no-daemon -u %s --dovecot-config '%s' 2>&1",
                                             tool, badconf, g_getenv ("EXTBODY"), user2, server.conf);
  g_autofree char *out6 = NULL;
  g_assert_cmpint (dt_sh (badrun, &out6), ==, 78);
  g_assert_nonnull (strstr (out6, "fetch"));
  g_assert_null (strstr (out6, "INBOX:"));
  /* a session that does not start: 69 */
  g_autofree char *bad = g_strdup_printf ("python3 '%s' -e '%s' --no-daemon --command false 2>&1", tool,
                                          g_getenv ("EXTBODY"));
  g_assert_cmpint (dt_sh (bad, NULL), ==, 69);
  /* and one that Dovecot refuses (no such user in the passwd-file): 69,
   * with what doveadm said on standard error */
  g_autofree char *out7 = NULL;
  g_assert_cmpint (rewrite_full ("nosuchuser", NULL, NULL, &out7), ==, 69);
  g_assert_nonnull (strstr (out7, "cannot open the IMAP session: the server closed the connection; "
                                  "its standard error: "));
}

/* The store changes while the tool runs: a message arrives between SELECT
 * and the selection; once the batch is fetched and resolved, one message to
 * rewrite is expunged and another flagged by another session. */
static void
test_store_changes (gconstpointer data)
{
  const char *opts = data;
  g_autofree char *user = new_user ();
  g_autoptr (GPtrArray) before = dt_dump (&server, user);
  /* the first two messages that will be rewritten */
  const DtMsg *gone = NULL, *flagged = NULL;
  for (guint i = 0; i < before->len && !flagged; i++) {
    const DtMsg *b = g_ptr_array_index (before, i);
    if (!g_hash_table_lookup (expect, b->msgid))
      continue;
    if (!gone)
      gone = b;
    else
      flagged = b;
  }
  g_assert_nonnull (flagged);
  g_autofree char *arrival = g_build_filename (server.work, "arrival.eml", NULL);
  dt_put (arrival, "Message-ID: <arrival@sel>\r\nSubject: arrival\r\nMIME-Version: 1.0\r\n"
                   "Content-Type: message/external-body; access-type=URL; URL=\"data:,new\"\r\n\r\n"
                   "Content-Type: text/plain\r\n\r\n", 0644);
  /* one STEP:COMMAND a line; \\Flagged in the shell's double quotes */
  g_autofree char *env = g_strdup_printf (
    "EXTBODY_IMAP_REWRITE_RUN='selected:doveadm -c %s save -u %s -m INBOX < %s\n"
    "fetched:doveadm -c %s expunge -u %s mailbox INBOX uid %u; "
    "doveadm -c %s flags add -u %s \"\\\\Flagged\" mailbox INBOX uid %u'",
    server.conf, user, arrival, server.conf, user, gone->uid, server.conf, user, flagged->uid);
  g_autofree char *out = NULL;
  g_assert_cmpint (rewrite_full (user, opts, env, &out), ==, 0);
  g_autoptr (GPtrArray) after = dt_dump (&server, user);
  g_assert_cmpuint (after->len, ==, before->len);   /* one gone, one arrived */
  for (guint i = 0; i < before->len; i++) {
    const DtMsg *b = g_ptr_array_index (before, i);
    guint k = 0;
    const DtMsg *a = by_msgid (after, b->msgid, &k);
    if (b == gone) {
      g_assert_cmpuint (k, ==, 0);
      continue;
    }
    g_assert_cmpuint (k, ==, 1);
    g_assert_true (g_bytes_equal (a->body, g_hash_table_lookup (wanted, b->msgid)));
    g_assert_cmpstr (a->date, ==, b->date);
    if (b == flagged) {
      g_assert_false (g_bytes_equal (a->body, b->body));
      g_assert_nonnull (strstr (a->flags, "\\Flagged"));
      g_assert_null (strstr (b->flags, "\\Flagged"));
    } else {
      g_assert_cmpstr (a->flags, ==, b->flags);
    }
  }
  guint k = 0;
  const DtMsg *a = by_msgid (after, "<arrival@sel>", &k);
  g_assert_cmpuint (k, ==, 1);
  g_assert_true (dt_contains (a->body, "data:,new"));   /* not touched this run */
  /* the next run takes it */
  g_assert_cmpint (rewrite (user, NULL), ==, 0);
  g_autoptr (GPtrArray) again = dt_dump (&server, user);
  a = by_msgid (again, "<arrival@sel>", &k);
  g_assert_false (dt_contains (a->body, "data:,new"));
}

/* A keyword of the tool's own left on a message when the run ends (as
 * Dovecot's mbox kept one whose removal its IMAP server synced with an
 * expunge): the run removes it before it ends. Here another session puts
 * $ExtbodyNew on a message the run does not change, once the run has looked
 * for what an interrupted run left. */
static void
test_keyword_left (gconstpointer data)
{
  const Format *f = data;
  g_autofree char *user = new_user_in (NULL, f->driver);
  g_autoptr (GPtrArray) before = dt_dump (&server, user);
  const DtMsg *plain = NULL;
  for (guint i = 0; i < before->len && !plain; i++)
    if (!g_hash_table_lookup (expect, ((DtMsg *) before->pdata[i])->msgid))
      plain = before->pdata[i];
  g_assert_nonnull (plain);
  g_autofree char *env = g_strdup_printf ("EXTBODY_IMAP_REWRITE_RUN='fetched:doveadm -c %s flags add -u %s "
                                          "\\$ExtbodyNew mailbox INBOX uid %u'", server.conf, user, plain->uid);
  g_autofree char *out = NULL;
  g_assert_cmpint (rewrite_full (user, "--no-daemon -v", env, &out), ==, 0);
  g_assert_nonnull (strstr (out, "INBOX: $ExtbodyOld or $ExtbodyNew was still on 1 message at the end; removed\n"));
  g_autoptr (GPtrArray) after = dt_dump (&server, user);
  assert_rewritten (after);
}

/* A kill: after which step, in which format. */
typedef struct {
  const char *step;     /* marked, appended, flagged, expunged (APPEND); replaced (UID REPLACE) */
  const char *driver;
} Kill;

static void
test_killed (gconstpointer data)
{
  const Kill *kill = data;
  gboolean replace = g_str_equal (kill->step, "replaced");
  g_autofree char *user = new_user_in (NULL, kill->driver);
  /* changed messages are stored again in groups of 2 (one APPEND, or two
   * UID REPLACEs, each): the third is the first of the second group */
  /* the runs' temporary directories in a TMPDIR of the case's own: another
   * run of the tool on the machine (a test beside this one, a suite in
   * another chroot sharing /dev/shm) has its own, alive, in /dev/shm */
  g_autofree char *tmp = g_build_filename (server.work, "tmp-killed-XXXXXX", NULL);
  g_assert_nonnull (g_mkdtemp (tmp));
  g_autofree char *env = g_strdup_printf ("TMPDIR='%s' EXTBODY_IMAP_REWRITE_KILL='%s:3'", tmp, kill->step);
  g_autofree char *tmp_env = g_strdup_printf ("TMPDIR='%s'", tmp);
  g_autofree char *ls = g_strdup_printf ("ls -d '%s'/extbody-imap-rewrite-* 2>/dev/null", tmp);
  g_assert_cmpint (rewrite_full (user, replace ? "--no-daemon --group 2" : "--no-daemon --group 2 --no-replace", env,
                                 NULL),
                   ==, 128 + SIGKILL);
  /* nothing lost: every message there, old or new version */
  g_autoptr (GPtrArray) mid = dt_dump (&server, user);
  for (guint i = 0; i < loaded->len; i++) {
    const DtMsg *b = g_ptr_array_index (loaded, i);
    guint n = 0;
    by_msgid (mid, b->msgid, &n);
    g_assert_cmpuint (n, >=, 1);
  }
  /* the kill came in the middle of a group's rewrite: after the append and
   * before the expunge, both versions of its two messages are there; a
   * REPLACE leaves each message once, and no keyword */
  if (g_str_equal (kill->step, "appended") || g_str_equal (kill->step, "flagged"))
    g_assert_cmpuint (mid->len, ==, loaded->len + 2);
  else
    g_assert_cmpuint (mid->len, ==, loaded->len);
  for (guint i = 0; replace && i < mid->len; i++)
    g_assert_null (strstr (((DtMsg *) mid->pdata[i])->flags, "$Extbody"));
  /* the killed run left its temporary Maildir; the next one removes it */
  g_autofree char *left = NULL;
  dt_sh (ls, &left);
  g_assert_cmpstr (left, !=, "");
  g_autofree char *out = NULL;
  g_assert_cmpint (rewrite_full (user, NULL, tmp_env, &out), ==, 0);
  /* the keywords the APPEND way left, found and finished first */
  g_assert_true (replace == !strstr (out, "INBOX: finished an interrupted run ("));
  g_autoptr (GPtrArray) after = dt_dump (&server, user);
  assert_rewritten (after);
  g_autofree char *left2 = NULL;
  dt_sh (ls, &left2);
  g_assert_cmpstr (left2, ==, "");
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
  g_autofree char *mail = dt_conf_mail ("mdbox", "~/mail", NULL);
  g_autofree char *passdb = dt_conf_passdb_static (NULL);
  g_autofree char *users_file = g_build_filename (server.work, "users", NULL);
  write_users (users_file);
  g_autofree char *userdb = dt_conf_userdb_passwd_file (users_file);
  g_autofree char *extra = g_strconcat (mail, passdb, userdb, NULL);
  int ret = 77;
  if (!dt_start (&server, 0, extra)) {
    g_printerr ("skipped: dovecot did not start\n");
    dt_print_log (&server);
  } else {
    /* the mailbox as loaded, the reference for every case */
    g_autofree char *u0 = new_user ();
    loaded = dt_dump (&server, u0);
    g_assert_cmpuint (loaded->len, ==, 40);
    wanted = rewrite_each (loaded);
    write_special ();
    if (g_getenv ("EXTBODYD")) {
      /* the daemon, its http_socket in the work directory */
      http_sock = g_build_filename (server.work, "http.sock", NULL);
      g_autofree char *dconf = g_build_filename (server.work, "extbodyd.conf", NULL);
      g_autofree char *dtext = g_strdup_printf ("[extbody]\nfetch = off\nmilter_umask = 000\nhttp_socket = unix:%s\n",
                                                http_sock);
      dt_put (dconf, dtext, 0644);
      g_autofree char *msock = g_build_filename (server.work, "milter.sock", NULL);
      g_autofree char *mlog = g_build_filename (server.work, "extbodyd.log", NULL);
      daemon_ = mta_milter_start (msock, dconf, mlog, NULL);
      for (int i = 0; i < 100 && !g_file_test (http_sock, G_FILE_TEST_EXISTS); i++)
        g_usleep (50000);
      g_assert_true (g_file_test (http_sock, G_FILE_TEST_EXISTS));
    }
    /* every format Debian sets up, each the way the tool picks for it
     * (UID REPLACE on 2.4 except in mbox), and the APPEND way where 2.4
     * would take REPLACE (on 2.3 the same way for another reason) */
    static const Format formats[] = {
      { "mdbox", NULL }, { "maildir", NULL }, { "mbox", NULL },
      { "mdbox", "--no-replace" }, { "maildir", "--no-replace" },
    };
    static const char *const format_names[] = { "rewritten", "rewritten-maildir", "rewritten-mbox",
                                                "rewritten-mdbox-no-replace", "rewritten-maildir-no-replace" };
    for (guint i = 0; i < G_N_ELEMENTS (formats); i++) {
      g_autofree char *path = g_strdup_printf ("/dovecot-rest/%s", format_names[i]);
      g_test_add_data_func (path, &formats[i], test_whole_run);
    }
    g_test_add_func ("/dovecot-rest/daemon-same-store", test_daemon);
    g_test_add_func ("/dovecot-rest/small-batches", test_small_batches);
    g_test_add_func ("/dovecot-rest/selection", test_selection);
    g_test_add_data_func ("/dovecot-rest/store-changes-during-the-run", "--no-daemon", test_store_changes);
    g_test_add_data_func ("/dovecot-rest/store-changes-during-the-run-no-replace", "--no-daemon --no-replace",
                          test_store_changes);
    g_test_add_func ("/dovecot-rest/dry-run-all-every-message-command", test_modes);
    g_test_add_data_func ("/dovecot-rest/keyword-left-removed", &formats[0], test_keyword_left);
    g_test_add_data_func ("/dovecot-rest/keyword-left-removed-mbox", &formats[2], test_keyword_left);
    /* the APPEND way's steps in mdbox and mbox; UID REPLACE's (2.4: 2.3
     * has none, so this case is not made there) in mdbox and Maildir */
    static const Kill kills[] = {
      { "marked", "mdbox" }, { "appended", "mdbox" }, { "flagged", "mdbox" }, { "expunged", "mdbox" },
      { "marked", "mbox" }, { "appended", "mbox" }, { "flagged", "mbox" }, { "expunged", "mbox" },
      { "replaced", "mdbox" }, { "replaced", "maildir" },
    };
    for (guint i = 0; i < G_N_ELEMENTS (kills); i++) {
      if (g_str_equal (kills[i].step, "replaced") && !dt_is_24 ())
        continue;
      g_autofree char *path = g_strdup_printf ("/dovecot-rest/%s%skilled-after-%s",
                                               g_str_equal (kills[i].driver, "mdbox") ? "" : kills[i].driver,
                                               g_str_equal (kills[i].driver, "mdbox") ? "" : "-", kills[i].step);
      g_test_add_data_func (path, &kills[i], test_killed);
    }
    ret = g_test_run ();
    if (ret != 0) {
      dt_print_log (&server);
      if (daemon_) {
        g_autofree char *l = mta_milter_log (daemon_);
        g_printerr ("extbodyd log:\n%s\n", l ? l : "");
      }
    }
    if (daemon_) {
      if (daemon_->proc)
        mta_milter_stop (daemon_, FALSE);
      mta_milter_free (daemon_);
    }
    g_ptr_array_unref (loaded);
    g_hash_table_unref (wanted);
  }
  g_hash_table_unref (expect);
  g_free (corpus);
  dt_stop (&server, ret == 1);
  return ret;
}
