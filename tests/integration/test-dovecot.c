/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-dovecot.c - a rewritten Maildir as a real IMAP server serves it.
 *
 * Dovecot keeps a map from Maildir base names to IMAP UIDs (dovecot-uidlist);
 * a message rewritten under its old base name would be served with new content
 * under its old UID, which clients that cached it never fetch again. extbody
 * delivers the new version as a new message: this test reads a Maildir over
 * IMAP from a private Dovecot (its own configuration file, base_dir, logs and
 * port on 127.0.0.1, a static passdb/userdb, the mail owned by "nobody"), notes
 * the UIDs, rewrites the Maildir, and reads it again: the old UID is gone, a
 * new UID carries the resolved content with the same flags, the untouched
 * message keeps its UID, and the rewritten file still belongs to its owner.
 *
 * Needs root (Dovecot starts its processes as its own users) and the Debian
 * packages dovecot-core and dovecot-imapd (Dovecot 2.3 or 2.4: the
 * configuration is written for the version found, tests/dovecot/dovecot-test.h);
 * otherwise, or when Dovecot does not start, the test exits 77 (skipped).
 * Never the machine's own Dovecot: nothing of /etc/dovecot is read. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "eb-maildir.h"
#include "run-command.h"
#include "test-server.h"
#include "../dovecot/dovecot-test.h"   /* the configuration of Dovecot 2.3 or 2.4 */

static char *work;
static char *maildir;
static guint port;

static void
put (const char *path, const char *data)
{
  g_autoptr (GError) error = NULL;
  g_file_set_contents (path, data, -1, &error);
  g_assert_no_error (error);
}

/* A loopback port nobody listens on now (Dovecot binds it a moment later). */
typedef struct {
  guint  uid;
  char  *flags;   /* "\Flagged \Seen", sorted; \Recent (per session) left out */
  guint64 size;   /* RFC822.SIZE: Dovecot takes it from ",W=" when the name has one */
  GBytes *body;
} ImapMsg;

static void
imap_msg_free (gpointer p)
{
  ImapMsg *m = p;
  g_free (m->flags);
  g_bytes_unref (m->body);
  g_free (m);
}

/* Every message of INBOX over IMAP: UID, flags, full text (BODY.PEEK[]). The
 * client is Python's imaplib (python3 is a test dependency already). */
static GPtrArray *
imap_fetch_all (void)
{
  g_autofree char *script = g_strdup_printf (
    "import imaplib, base64, re\n"
    "c = imaplib.IMAP4('127.0.0.1', %u)\n"
    "c.login('tester', 'secret')\n"
    "c.select('INBOX', readonly=True)\n"
    "typ, data = c.uid('FETCH', '1:*', '(UID FLAGS RFC822.SIZE BODY.PEEK[])')\n"
    "for item in data:\n"
    "    if not isinstance(item, tuple):\n"
    "        continue\n"
    "    head = item[0].decode()\n"
    "    uid = re.search(r'UID (\\d+)', head).group(1)\n"
    "    flags = re.search(r'FLAGS \\(([^)]*)\\)', head).group(1).split()\n"
    "    flags = ' '.join(sorted(f for f in flags if f != '\\\\Recent'))\n"
    "    size = re.search(r'RFC822.SIZE (\\d+)', head).group(1)\n"
    "    print(uid + '|' + flags + '|' + size + '|' + base64.b64encode(item[1]).decode())\n"
    "c.logout()\n", port);
  g_autofree char *out = NULL, *err = NULL;
  int status = 0;
  g_autoptr (GError) error = NULL;
  g_spawn_sync (NULL, (char *[]) { "python3", "-c", script, NULL }, NULL, G_SPAWN_SEARCH_PATH,
                NULL, NULL, &out, &err, &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_test_message ("imap client: %s", err);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  GPtrArray *msgs = g_ptr_array_new_with_free_func (imap_msg_free);
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    if (!*lines[i])
      continue;
    g_auto (GStrv) f = g_strsplit (lines[i], "|", 4);
    g_assert_cmpuint (g_strv_length (f), ==, 4);
    ImapMsg *m = g_new0 (ImapMsg, 1);
    m->uid = (guint) atoi (f[0]);
    m->flags = g_strdup (f[1]);
    m->size = g_ascii_strtoull (f[2], NULL, 10);
    gsize n = 0;
    guchar *b = g_base64_decode (f[3], &n);
    m->body = g_bytes_new_take (b, n);
    g_ptr_array_add (msgs, m);
  }
  return msgs;
}

static const ImapMsg *
find_by_text (GPtrArray *msgs, const char *needle)
{
  const ImapMsg *found = NULL;
  for (guint i = 0; i < msgs->len; i++) {
    const ImapMsg *m = g_ptr_array_index (msgs, i);
    gsize n = 0;
    const char *d = g_bytes_get_data (m->body, &n);
    if (g_strstr_len (d, (gssize) n, needle)) {
      g_assert_null (found);   /* exactly once */
      found = m;
    }
  }
  return found;
}

#define REF_MSG                                                                             \
  "From: a@example.org\nSubject: the reference\nMessage-ID: <ref@test.example>\n"     \
  "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"           \
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,resolved%20by%20extbody\"\n\n" \
  "Content-Type: text/plain\n\n--b--\n"
#define PLAIN_MSG                                                                           \
  "From: b@example.org\nSubject: plain\nMessage-ID: <plain@test.example>\n\nnothing to resolve\n"

static void
test_new_uid (void)
{
  /* line ends LF: ",W=" (every line end counted as CRLF) differs from ",S=",
   * and Dovecot trusts both */
  g_autofree char *refname = g_strdup_printf ("1700000000.M1P1.test,S=%" G_GSIZE_FORMAT ",W=%" G_GUINT64_FORMAT ":2,FS",
                                              strlen (REF_MSG), eb_maildir_virtual_size (REF_MSG, strlen (REF_MSG)));
  g_autofree char *ref = g_build_filename (maildir, "cur", refname, NULL);
  g_autofree char *plain = g_build_filename (maildir, "cur", "1700000001.M2P1.test:2,S", NULL);
  put (ref, REF_MSG);
  put (plain, PLAIN_MSG);
  g_autofree char *own = g_strdup_printf ("chown -R nobody:nogroup '%s' && chmod 0600 '%s' '%s'",
                                          maildir, ref, plain);
  g_assert_cmpint (test_sh (own, NULL), ==, 0);

  g_autoptr (GPtrArray) before = imap_fetch_all ();
  g_assert_cmpuint (before->len, ==, 2);
  const ImapMsg *r0 = find_by_text (before, "<ref@test.example>");
  const ImapMsg *p0 = find_by_text (before, "<plain@test.example>");
  g_assert_nonnull (r0);
  g_assert_nonnull (p0);
  g_assert_cmpstr (r0->flags, ==, "\\Flagged \\Seen");
  g_test_message ("before: reference UID %u, plain UID %u", r0->uid, p0->uid);

  g_auto (CmdResult) r = { 0 };
  g_autofree char *conf = g_build_filename (work, "extbody.conf", NULL);
  put (conf, "");
  RUN (&r, NULL, "rewrite", "-c", conf, "--maildir", maildir);
  g_autofree char *err = bytes_str (r.err);
  g_test_message ("exit %d: %s", r.status, err);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_nonnull (strstr (err, "1 messages changed"));

  g_autoptr (GPtrArray) after = imap_fetch_all ();
  g_assert_cmpuint (after->len, ==, 2);
  const ImapMsg *r1 = find_by_text (after, "<ref@test.example>");
  const ImapMsg *p1 = find_by_text (after, "<plain@test.example>");
  g_assert_nonnull (r1);
  g_assert_nonnull (p1);
  g_test_message ("after: reference UID %u, plain UID %u", r1->uid, p1->uid);
  /* the old UID is gone; the new one is higher, with the resolved content
   * and the same flags */
  for (guint i = 0; i < after->len; i++)
    g_assert_cmpuint (((const ImapMsg *) g_ptr_array_index (after, i))->uid, !=, r0->uid);
  g_assert_cmpuint (r1->uid, >, MAX (r0->uid, p0->uid));
  g_assert_cmpstr (r1->flags, ==, r0->flags);
  gsize n = 0;
  const char *d = g_bytes_get_data (r1->body, &n);
  g_assert_nonnull (g_strstr_len (d, (gssize) n, "resolved by extbody"));
  /* the size Dovecot reports (from the new ",W=") is the real one */
  g_assert_cmpuint (r1->size, ==, eb_maildir_virtual_size (d, n));
  g_assert_cmpuint (r1->size, !=, r0->size);
  g_assert_null (g_strstr_len (d, (gssize) n, "external-body"));
  /* the untouched message: same UID, same bytes */
  g_assert_cmpuint (p1->uid, ==, p0->uid);
  g_assert_true (g_bytes_equal (p1->body, p0->body));
  /* the rewritten file is still the user's */
  g_autofree char *ls = g_strdup_printf ("find '%s/cur' -type f -user nobody -perm 0600 | wc -l", maildir);
  g_autofree char *count = NULL;
  test_sh (ls, &count);
  g_assert_cmpint (atoi (count), ==, 2);
}

static void
die_with_parent (gpointer data)
{
  (void) data;
  prctl (PR_SET_PDEATHSIG, SIGTERM);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_autofree char *dovecot = g_find_program_in_path ("dovecot");
  if (!dovecot && g_file_test ("/usr/sbin/dovecot", G_FILE_TEST_IS_EXECUTABLE))
    dovecot = g_strdup ("/usr/sbin/dovecot");
  g_autofree char *python3 = g_find_program_in_path ("python3");
  if (geteuid () != 0 || !dovecot || !getpwnam ("dovecot") || !getpwnam ("dovenull")
      || !getpwnam ("nobody") || !python3) {
    g_printerr ("skipped: needs root, dovecot-core and dovecot-imapd (users dovecot, dovenull)\n");
    return 77;
  }
  work = g_dir_make_tmp ("extbody-dovecot-XXXXXX", NULL);
  g_chmod (work, 0755);
  maildir = g_build_filename (work, "Maildir", NULL);
  for (const char *const *sub = (const char *const[]) { "cur", "new", "tmp", NULL }; *sub; sub++) {
    g_autofree char *d = g_build_filename (maildir, *sub, NULL);
    g_mkdir_with_parents (d, 0700);
  }
  g_autofree char *conf = g_build_filename (work, "dovecot.conf", NULL);
  g_autofree char *log = g_build_filename (work, "dovecot.log", NULL);
  g_autofree char *state = g_build_filename (work, "state", NULL);
  g_mkdir (state, 0755);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) dc = NULL;
  gboolean up = FALSE;
  /* a port of its own: again on another when the one given was taken
   * before Dovecot bound it ("Address already in use" in its log) */
  for (guint attempt = 0; attempt < TEST_PORT_ATTEMPTS && !up; attempt++) {
    port = test_free_port ();
    /* in the form of the Dovecot installed (2.3 or 2.4, dovecot-test.h):
     * 2.4 calls disable_plaintext_auth = no auth_allow_cleartext = yes, and
     * its listeners take the global listen, having no address of their own */
    g_autofree char *mail = dt_conf_mail ("maildir", maildir, NULL);
    g_autofree char *passdb = dt_conf_passdb_static ("secret");
    g_autofree char *home = g_build_filename (work, "home", NULL);
    g_autofree char *userdb = dt_conf_userdb_static (home);
    g_autofree char *text = g_strdup_printf (
      "%s"
      "base_dir = %s/run\n"
      "state_dir = %s/state\n"
      "log_path = %s\n"
      "protocols = imap\n"
      "listen = 127.0.0.1\n"
      "ssl = no\n"
      "%s\n"
      "auth_mechanisms = plain\n"
      "%s"
      "first_valid_uid = 1\n"
      "%s%s"
      "service imap-login {\n  inet_listener imap {\n%s    port = %u\n  }\n"
      "  inet_listener imaps {\n    port = 0\n  }\n}\n"
      "service pop3-login {\n  inet_listener pop3 {\n    port = 0\n  }\n}\n"
      "service submission-login {\n  inet_listener submission {\n    port = 0\n  }\n}\n"
      "service lmtp {\n  unix_listener lmtp {\n    mode = 0600\n  }\n}\n",
      dt_conf_head (), work, work, log, dt_is_24 () ? "auth_allow_cleartext = yes" : "disable_plaintext_auth = no",
      mail, passdb, userdb, dt_is_24 () ? "" : "    address = 127.0.0.1\n", port);
    put (conf, text);
    g_unlink (log);
    /* in the foreground, and stopped with this process even when an assertion
     * aborts it (its own children follow the master) */
    g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
    g_subprocess_launcher_set_child_setup (l, die_with_parent, NULL, NULL);
    g_clear_object (&dc);
    g_clear_error (&error);
    dc = g_subprocess_launcher_spawn (l, &error, dovecot, "-F", "-c", conf, NULL);
    for (int i = 0; dc && i < 200 && !up; i++) {   /* at most 20 s for it to listen */
      const char *id = g_subprocess_get_identifier (dc);
      if (id == NULL)
        break;   /* it exited */
      up = test_port_owned_by (port, (GPid) atoi (id));   /* its own master, no other process */
      if (!up)
        g_usleep (100000);
    }
    g_autofree char *text_log = NULL;
    if (up || !dc || !g_file_get_contents (log, &text_log, NULL, NULL) || !strstr (text_log, "in use"))
      break;
    g_printerr ("# dovecot: port %u was taken before it bound it; again with another\n", port);
    g_subprocess_send_signal (dc, SIGTERM);
    g_subprocess_wait (dc, NULL, NULL);
  }
  int ret = 77;
  if (!up) {
    g_autofree char *l = NULL;
    g_file_get_contents (log, &l, NULL, NULL);
    g_printerr ("skipped: dovecot did not start on 127.0.0.1:%u%s%s\n%s\n", port,
                error ? ": " : "", error ? error->message : "", l ? l : "");
  } else {
    g_test_add_func ("/dovecot/rewritten-message-gets-a-new-uid", test_new_uid);
    ret = g_test_run ();
    if (ret != 0) {
      g_autofree char *l = NULL;
      g_file_get_contents (log, &l, NULL, NULL);
      g_printerr ("dovecot log:\n%s\n", l ? l : "");
    }
  }
  if (dc) {
    g_subprocess_send_signal (dc, SIGTERM);
    g_subprocess_wait (dc, NULL, NULL);
  }
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", work);
  if (ret != 1)
    test_sh (rm, NULL);
  return ret;
}
