/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-dovecot-socket.c - extbody at delivery in a real Dovecot through the
 * daemon: Pigeonhole's filter command with sieve_filter_socket_dir connects
 * to extbodyd's dovecot_filter_socket (no process per message) in a
 * private Dovecot (LMTP on a loopback port, mdbox, a passwd-file userdb whose
 * users each get a sieve_before script), and the messages are read back over
 * IMAP:
 *   - a message with a data: reference is stored resolved, byte for byte what
 *     `extbody rewrite --filter` writes for the message Sieve is given (the
 *     message with the Return-Path field LMTP adds);
 *   - a message past max_message_size is stored exactly as sent (the daemon
 *     answers "-");
 *   - 200 messages from 10 LMTP sessions at once are each stored once,
 *     resolved (but for any whose LMTP process logged that it gave up
 *     connecting within Pigeonhole's 5 ms, stored as sent); and so they are
 *     with the daemon reloaded (SIGHUP) 4 times while they come;
 *   - past one user's dovecot_max_peer_connections a message is stored
 *     exactly as sent, its LMTP session and Dovecot's LMTP process unharmed;
 *   - with the daemon stopped (its socket gone) a message is stored exactly
 *     as sent, and so it is with the daemon killed (its socket left behind,
 *     nobody answering), and with the daemon killed in the middle of a
 *     message (its reference being fetched from a loopback test server).
 * "Exactly as sent" means byte for byte after Return-Path, in IMAP's CRLF
 * form (lmtp_add_received_header = no, lmtp_hdr_delivery_address = none).
 *
 * Needs root and the Debian packages dovecot-core, dovecot-imapd,
 * dovecot-lmtpd and dovecot-sieve; otherwise exits 77 (skipped). */
#include "dovecot-test.h"
#include "mta-milter.h"
#include "test-server.h"

#define SIEVE_EXTPROGRAMS "/usr/lib/dovecot/modules/sieve/lib90_sieve_extprograms_plugin.so"
#define LMTP "/usr/lib/dovecot/lmtp"
/* the daemon's max_message_size here: LARGE_MSG passes it */
#define TEST_MAX_MESSAGE_SIZE 4000
#define N_SESSIONS 10
#define N_PER_SESSION 20
#define N_RELOADS 4

static DtServer server;
static guint lmtp_port;
static char *conf;       /* the daemon's configuration, and the command's */
static MtaMilter *milter;
static TestServer *httpd;   /* the loopback server a held fetch waits on */

#define CRLF "\r\n"
#define RETURN_PATH "Return-Path: <sender@example.org>" CRLF
#define REF_MSG                                                                                   \
  "From: a@example.org" CRLF "To: tester@example.org" CRLF "Subject: the reference" CRLF          \
  "Message-ID: <ref@test.example>" CRLF "MIME-Version: 1.0" CRLF "X-Extbody: forged" CRLF         \
  "Content-Type: multipart/mixed; boundary=b" CRLF CRLF "--b" CRLF                                \
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,resolved%20at%20delivery\"" \
  CRLF CRLF "Content-Type: text/plain" CRLF CRLF "--b--" CRLF

static void
deliver_to (const char *user, const char *msg)
{
  g_autofree char *file = g_build_filename (server.work, "msg.eml", NULL);
  dt_put (file, msg, 0644);
  g_autofree char *port = g_strdup_printf ("%u", lmtp_port);
  G_GNUC_UNUSED g_autofree char *out = dt_client ((const char *const[]) { "lmtp", port, "sender@example.org", user, file, NULL });
}

/* Delivers @msg to @user over LMTP and returns @user's only message. */
static DtMsg *
deliver (const char *user, const char *msg)
{
  deliver_to (user, msg);
  g_autoptr (GPtrArray) msgs = dt_dump (&server, user);
  g_assert_cmpuint (msgs->len, ==, 1);
  return g_ptr_array_steal_index (msgs, 0);
}

static void
assert_bytes (const DtMsg *m, const char *want)
{
  gsize n = 0;
  const char *data = g_bytes_get_data (m->body, &n);
  g_autofree char *got = g_strndup (data, n);
  g_assert_cmpstr (got, ==, want);
}

/* What `extbody rewrite --filter -c CONF` writes for @msg. */
static char *
rewrite_filter (const char *msg)
{
  g_autofree char *file = g_build_filename (server.work, "cmd.eml", NULL);
  dt_put (file, msg, 0644);
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
  g_subprocess_launcher_set_stdin_file_path (l, file);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = g_subprocess_launcher_spawn (l, &error, g_getenv ("EXTBODY"), "rewrite", "--filter",
                                                           "-c", conf, NULL);
  g_assert_no_error (error);
  char *out = NULL;
  g_subprocess_communicate_utf8 (p, NULL, NULL, &out, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_get_successful (p));
  return out;
}

static void
test_resolved (void)
{
  guint before = mta_milter_log_count (milter, "dovecot: filter +");
  DtMsg *m = deliver ("resolver", REF_MSG);
  g_autofree char *want = rewrite_filter (RETURN_PATH REF_MSG);
  g_assert_nonnull (strstr (want, "resolved at delivery"));
  assert_bytes (m, want);
  g_assert_cmpuint (mta_milter_log_count (milter, "dovecot: filter +"), ==, before + 1);
  dt_msg_free (m);
}

static void
test_too_large (void)
{
  g_autoptr (GString) msg = g_string_new (REF_MSG);
  g_string_append (msg, "--b" CRLF "Content-Type: text/plain" CRLF CRLF);
  while (msg->len <= TEST_MAX_MESSAGE_SIZE)
    g_string_append (msg, "A line of text to make the message larger than max_message_size." CRLF);
  g_string_append (msg, "--b--" CRLF);
  /* its last part after the closing delimiter: still one message */
  DtMsg *m = deliver ("large", msg->str);
  g_autofree char *want = g_strconcat (RETURN_PATH, msg->str, NULL);
  assert_bytes (m, want);
  g_assert_true (mta_milter_log_wait (milter, "larger than max_message_size", 1));
  dt_msg_free (m);
}

/* The lines of Dovecot's log in which @user's LMTP process gave up on the
 * daemon's socket before it said a word to it: Pigeonhole allows the
 * connection 5 ms, a constant of its own (SIEVE_EXTPROGRAMS_CONNECT_TIMEOUT_MSECS,
 * no setting), and an LMTP process that is not run again within 5 ms of its
 * connect(2) - two cores, ten sessions, the daemon under the sanitizers -
 * logs "program unix:...: Connection timed out (> 5 msecs)" and its implicit
 * keep stores the message as it came. The
 * daemon never sees such a connection (a connect to a Unix socket is done
 * once it is queued); filters/dovecot/README.md says so. */
static guint
dovecot_connect_timeouts (const char *user)
{
  g_autofree char *log = NULL;
  g_file_get_contents (server.log, &log, NULL, NULL);
  g_autofree char *who = g_strdup_printf ("lmtp(%s)", user);
  guint n = 0;
  g_auto (GStrv) lines = g_strsplit (log ? log : "", "\n", -1);
  for (guint i = 0; lines[i]; i++)
    if (strstr (lines[i], who) && strstr (lines[i], "timed out (> 5 msecs)"))
      n++;
  return n;
}

/* @user's messages: the N_SESSIONS * N_PER_SESSION of lmtp-many, each
 * stored once, each its own reference resolved - but for those whose LMTP
 * process logged that it gave up connecting (dovecot_connect_timeouts), each
 * of which is stored as it came: as many as it logged, none more. Returns
 * how many were resolved. */
static guint
assert_many (const char *user)
{
  g_autoptr (GPtrArray) msgs = dt_dump (&server, user);
  g_assert_cmpuint (msgs->len, ==, N_SESSIONS * N_PER_SESSION);
  g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
  guint as_sent = 0;
  for (guint i = 0; i < msgs->len; i++) {
    DtMsg *m = msgs->pdata[i];
    g_assert_false (g_hash_table_contains (seen, m->msgid));
    g_hash_table_add (seen, m->msgid);
    guint j = 0, k = 0;
    g_assert_cmpint (sscanf (m->msgid, "<%u.%u@", &j, &k), ==, 2);
    if (!dt_contains (m->body, "X-Extbody:")) {
      /* as lmtp-many sent it, after Return-Path */
      g_autofree char *sent = g_strdup_printf (
        RETURN_PATH "From: a@example.org" CRLF "To: %s" CRLF "Subject: %u.%u" CRLF
        "Message-ID: <%u.%u@test.example>" CRLF "MIME-Version: 1.0" CRLF
        "Content-Type: multipart/mixed; boundary=b" CRLF CRLF "--b" CRLF
        "Content-Type: message/external-body; access-type=URL; URL=\"data:,message%%20%u.%u\"" CRLF CRLF
        "Content-Type: text/plain" CRLF CRLF "--b--" CRLF, user, j, k, j, k, j, k);
      assert_bytes (m, sent);
      as_sent++;
      continue;
    }
    g_autofree char *text = g_strdup_printf (CRLF CRLF "message %u.%u", j, k);
    g_assert_true (dt_contains (m->body, text));
    g_assert_true (dt_contains (m->body, CRLF "X-Extbody: resolved 1 of 1 external-body reference" CRLF));
    g_assert_false (dt_contains (m->body, "message/external-body"));
  }
  g_assert_cmpuint (as_sent, ==, dovecot_connect_timeouts (user));
  g_assert_cmpuint (as_sent, <=, msgs->len / 4);
  if (as_sent)
    g_test_message ("%u of %u stored as they came: Dovecot's LMTP gave up connecting (> 5 msecs)", as_sent, msgs->len);
  return msgs->len - as_sent;
}

/* lmtp-many to @user, not waited for. @user's INBOX is made first: ten
 * first deliveries at once to a user who has none make Dovecot 2.3 race
 * with itself creating it (its LMTP processes panic: "fcntl(...
 * dovecot.list.index.log, write-lock, F_SETLKW) locking failed: Resource
 * deadlock avoided", "Mailbox already exists"), nothing of the daemon's. */
static GSubprocess *
many_to (const char *user)
{
  g_autofree char *make = g_strdup_printf ("doveadm -c '%s' mailbox status -u '%s' messages INBOX", server.conf, user);
  g_autofree char *status = NULL;
  g_assert_cmpint (dt_sh (make, &status), ==, 0);
  g_assert_cmpstr (status, ==, "INBOX messages=0\n");
  g_autofree char *client = g_test_build_filename (G_TEST_DIST, "dovecot", "dovecot-client.py", NULL);
  g_autofree char *port = g_strdup_printf ("%u", lmtp_port);
  g_autofree char *s = g_strdup_printf ("%d", N_SESSIONS);
  g_autofree char *n = g_strdup_printf ("%d", N_PER_SESSION);
  g_autoptr (GError) error = NULL;
  GSubprocess *p = g_subprocess_new (G_SUBPROCESS_FLAGS_NONE, &error, "python3", client, "lmtp-many", port,
                                     "sender@example.org", user, s, n, NULL);
  g_assert_no_error (error);
  return p;
}

/* 200 messages from 10 LMTP sessions at once: each stored once, resolved. */
static void
test_many (void)
{
  gint64 t0 = g_get_monotonic_time ();
  guint before = mta_milter_log_count (milter, "dovecot: filter +");
  g_autoptr (GSubprocess) p = many_to ("many");
  g_assert_true (g_subprocess_wait_check (p, NULL, NULL));
  g_test_message ("%d messages in %.1f s", N_SESSIONS * N_PER_SESSION,
                  (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC);
  guint resolved = assert_many ("many");
  g_assert_cmpuint (mta_milter_log_count (milter, "dovecot: filter +"), ==, before + resolved);
}

/* The same with the daemon reloaded (SIGHUP) N_RELOADS times while the
 * messages come, after each 40 it answered: none lost, none stored
 * unresolved, none twice. */
static void
test_many_reloaded (void)
{
  guint before = mta_milter_log_count (milter, "dovecot: filter +");
  g_autoptr (GSubprocess) p = many_to ("reloaded");
  mta_milter_reload_under (milter, "dovecot: filter +", N_SESSIONS * N_PER_SESSION / (N_RELOADS + 1), N_RELOADS);
  g_assert_true (g_subprocess_wait_check (p, NULL, NULL));
  guint resolved = assert_many ("reloaded");
  g_assert_cmpuint (mta_milter_log_count (milter, "dovecot: filter +"), ==, before + resolved);
  /* too-large's alone, but for connections an LMTP process gave up on
   * after the daemon had accepted them (Pigeonhole's 5 ms, see
   * dovecot_connect_timeouts): nothing read, each one of Dovecot's */
  guint gone = mta_milter_log_count (milter, "dovecot: filter -, 0 bytes in: the client went away before the message");
  g_assert_cmpuint (gone, <=, dovecot_connect_timeouts ("many") + dovecot_connect_timeouts ("reloaded"));
  g_assert_cmpuint (mta_milter_log_count (milter, "dovecot: filter -") - gone, ==, 1);
}

/* A daemon of its own (NAME.conf, NAME.sock, NAME.log in the work
 * directory) in place of the running one: fetch on, from the loopback test
 * server, and the keys of @extra. A held fetch is given 60 s in all
 * (low_speed_time too: its default, 20 s, cut off the held fetch of
 * /over-share while three deliveries took 7 s each on a loaded machine). */
static void
restart_fetching (const char *name, const char *extra)
{
  g_autofree char *file = g_strdup_printf ("%s/%s.conf", server.work, name);
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = on\nallow_networks = 127.0.0.1/32\n"
                                           "fetch_timeout = 60\nmessage_deadline = 60\nlow_speed_time = 60\n"
                                           "milter_umask = 000\n"
                                           "dovecot_filter_socket = %s/extbody-run/extbody\n%s", server.work, extra);
  dt_put (file, text, 0644);
  g_autofree char *msock = g_strdup_printf ("%s/%s.sock", server.work, name);
  g_autofree char *mlog = g_strdup_printf ("%s/%s.log", server.work, name);
  mta_milter_free (milter);
  milter = mta_milter_start (msock, file, mlog, NULL);
}

/* A message whose reference waits at the loopback test server's gate
 * @gate, delivered to @user over LMTP and not waited for; it is being
 * filtered when this returns. *@msg: the message. */
static GSubprocess *
deliver_held (const char *gate, const char *user, char **msg)
{
  *msg = g_strdup_printf (
    "From: a@example.org" CRLF "To: tester@example.org" CRLF "Subject: held" CRLF
    "Message-ID: <%s@test.example>" CRLF "MIME-Version: 1.0" CRLF
    "Content-Type: multipart/mixed; boundary=b" CRLF CRLF "--b" CRLF
    "Content-Type: message/external-body; access-type=URL;" CRLF
    " URL=\"http://127.0.0.1:%u/hold?gate=%s&n=1\"" CRLF CRLF
    "Content-Type: text/plain" CRLF CRLF "--b--" CRLF, gate, httpd->port, gate);
  g_autofree char *file = g_strdup_printf ("%s/%s.eml", server.work, gate);
  dt_put (file, *msg, 0644);
  g_autofree char *client = g_test_build_filename (G_TEST_DIST, "dovecot", "dovecot-client.py", NULL);
  g_autofree char *port = g_strdup_printf ("%u", lmtp_port);
  g_autoptr (GError) error = NULL;
  GSubprocess *p = g_subprocess_new (G_SUBPROCESS_FLAGS_NONE, &error, "python3", client, "lmtp", port,
                                     "sender@example.org", user, file, NULL);
  g_assert_no_error (error);
  g_assert_true (mta_milter_held_wait (httpd->port, gate));
  return p;
}

/* The lines of Dovecot's log that say its LMTP process met a reset
 * connection or died of it. */
static guint
dovecot_resets (void)
{
  g_autofree char *log = NULL;
  g_file_get_contents (server.log, &log, NULL, NULL);
  guint n = 0;
  g_auto (GStrv) lines = g_strsplit (log ? log : "", "\n", -1);
  for (guint i = 0; lines[i]; i++)
    if (strstr (lines[i], "Connection reset by peer") || strstr (lines[i], "Panic:")
        || strstr (lines[i], "killed with signal"))
      n++;
  return n;
}

/* One user past dovecot_max_peer_connections (1 here): while its first
 * message is being filtered (its reference held at the loopback test
 * server's gate), its next connection is answered "-" at once. The daemon
 * reads what the client sends before it closes (a close with unread bytes
 * resets the connection, and Dovecot 2.4's LMTP process panics on that and
 * drops its session): the second message is stored exactly as sent, its
 * LMTP session goes on, Dovecot logs no reset; the first is resolved once
 * the gate opens. */
static void
test_over_share (void)
{
  restart_fetching ("milter-share", "dovecot_max_peer_connections = 1\n");
  guint resets = dovecot_resets ();
  g_autofree char *held = NULL;
  g_autoptr (GSubprocess) p = deliver_held ("dovecot-share", "sharer", &held);
  for (guint i = 0; i < 3; i++) {
    g_autofree char *user = g_strdup_printf ("refused%u", i);
    DtMsg *m = deliver (user, REF_MSG);
    g_autofree char *want = g_strconcat (RETURN_PATH, REF_MSG, NULL);
    assert_bytes (m, want);
    dt_msg_free (m);
  }
  g_assert_cmpuint (mta_milter_log_count (milter, "refused: it holds dovecot_max_peer_connections (1) already"), ==, 3);
  g_assert_cmpint (test_http_get_number (httpd->port, "/open?gate=dovecot-share"), ==, 0);
  g_assert_true (g_subprocess_wait_check (p, NULL, NULL));
  g_autoptr (GPtrArray) msgs = dt_dump (&server, "sharer");
  g_assert_cmpuint (msgs->len, ==, 1);
  DtMsg *m = msgs->pdata[0];
  g_assert_true (dt_contains (m->body, CRLF "X-Extbody: resolved 1 of 1 external-body reference" CRLF));
  g_assert_cmpuint (dovecot_resets (), ==, resets);
  g_assert_cmpint (mta_milter_stop (milter, TRUE), ==, 0);
  g_autofree char *osock = g_build_filename (server.work, "milter-4.sock", NULL);
  g_autofree char *olog = g_build_filename (server.work, "milter-4.log", NULL);
  mta_milter_free (milter);
  milter = mta_milter_start (osock, conf, olog, NULL);
}

/* The daemon stopped: its socket is gone, Pigeonhole finds no program, the
 * script fails and its implicit keep stores the message as it came. */
static void
test_daemon_stopped (void)
{
  g_assert_cmpint (mta_milter_stop (milter, TRUE), ==, 0);
  g_autofree char *sock = g_build_filename (server.work, "extbody-run", "extbody", NULL);
  g_assert_false (g_file_test (sock, G_FILE_TEST_EXISTS));
  DtMsg *m = deliver ("stopped", REF_MSG);
  g_autofree char *want = g_strconcat (RETURN_PATH, REF_MSG, NULL);
  assert_bytes (m, want);
  dt_msg_free (m);
}

/* The daemon killed (SIGKILL): its socket stays with nobody behind it,
 * Pigeonhole cannot connect, the script fails and its implicit keep stores
 * the message as it came. */
static void
test_daemon_killed (void)
{
  g_autofree char *msock = g_build_filename (server.work, "milter.sock", NULL);
  g_autofree char *mlog = g_build_filename (server.work, "milter-2.log", NULL);
  mta_milter_free (milter);
  milter = mta_milter_start (msock, conf, mlog, NULL);
  mta_milter_signal (milter, SIGKILL);
  mta_milter_wait (milter, FALSE);
  g_autofree char *sock = g_build_filename (server.work, "extbody-run", "extbody", NULL);
  g_assert_true (g_file_test (sock, G_FILE_TEST_EXISTS));
  DtMsg *m = deliver ("killed", REF_MSG);
  g_autofree char *want = g_strconcat (RETURN_PATH, REF_MSG, NULL);
  assert_bytes (m, want);
  dt_msg_free (m);
}

/* The daemon killed (SIGKILL) in the middle of a message: its reference is
 * being fetched (held at the loopback test server's gate) when the daemon
 * dies; Pigeonhole reads the end of the connection without "+", the filter
 * fails and the implicit keep stores the message exactly as sent - once,
 * never a part of it. */
static void
test_daemon_killed_mid_message (void)
{
  restart_fetching ("milter-3", "");
  g_autofree char *msg = NULL;
  g_autoptr (GSubprocess) p = deliver_held ("dovecot-kill", "midkill", &msg);
  mta_milter_signal (milter, SIGKILL);
  g_assert_cmpint (mta_milter_wait (milter, FALSE), ==, -1);
  g_assert_true (g_subprocess_wait_check (p, NULL, NULL));
  g_autoptr (GPtrArray) msgs = dt_dump (&server, "midkill");
  g_assert_cmpuint (msgs->len, ==, 1);
  g_autofree char *want = g_strconcat (RETURN_PATH, msg, NULL);
  assert_bytes (msgs->pdata[0], want);
  g_assert_cmpint (test_http_get_number (httpd->port, "/open?gate=dovecot-kill"), ==, 0);
}

/* The users (each its home, mdbox under it, and the one sieve_before) and
 * Dovecot's configuration: the filter through the socket directory only. */
static char *
dovecot_config (const char *script)
{
  g_autofree char *passwd = g_build_filename (server.work, "users", NULL);
  g_autoptr (GString) users = g_string_new (NULL);
  const char *us[] = { "resolver", "large", "many", "reloaded", "sharer", "refused0", "refused1", "refused2",
                       "stopped", "killed", "midkill" };
  for (guint i = 0; i < G_N_ELEMENTS (us); i++) {
    g_autofree char *home = g_strdup_printf ("%s/home/%s", server.work, us[i]);
    g_autofree char *line = dt_user_line (us[i], home, script);
    g_string_append (users, line);
  }
  dt_put (passwd, users->str, 0644);
  g_autofree char *homes = g_strdup_printf ("mkdir -p '%s/home' && chown nobody:nogroup '%s/home'", server.work, server.work);
  g_assert_cmpint (dt_sh (homes, NULL), ==, 0);
  g_autofree char *mail = dt_conf_mail ("mdbox", "~/mail", NULL);
  g_autofree char *passdb = dt_conf_passdb_static (NULL);
  g_autofree char *userdb = dt_conf_userdb_passwd_file (passwd);
  /* the socket directory relative to base_dir (WORK/run), as /run/dovecot/../extbody
   * in filters/dovecot/90-extbody.conf-2.3 and -2.4: WORK/extbody-run/extbody */
  g_autofree char *sieve = dt_conf_sieve (script, NULL, "../extbody-run");
  return g_strconcat (mail, passdb, userdb,
                      "lmtp_add_received_header = no\n"
                      "lmtp_hdr_delivery_address = none\n",
                      sieve, NULL);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  dt_require ((const char *const[]) { SIEVE_EXTPROGRAMS, LMTP, "/usr/bin/sievec", NULL });
  if (!g_getenv ("EXTBODYD") || !g_getenv ("EXTBODY")) {
    g_printerr ("skipped: EXTBODYD or EXTBODY is not set (run through ctest)\n");
    return 77;
  }
  server.work = g_dir_make_tmp ("extbody-dovecot-socket-XXXXXX", NULL);
  g_assert_nonnull (server.work);
  g_chmod (server.work, 0755);
  g_autofree char *sdir = g_build_filename (server.work, "sieve", NULL);
  g_mkdir (sdir, 0755);
  g_autofree char *script = g_build_filename (sdir, "extbody.sieve", NULL);
  dt_put (script, "require \"vnd.dovecot.filter\";\nfilter \"extbody\";\nkeep;\n", 0644);
  g_autofree char *extra = dovecot_config (script);
  int ret = 77;
  if (!dt_start_free_port (&server, &lmtp_port, extra)) {
    g_printerr ("skipped: dovecot did not start with LMTP on 127.0.0.1:%u\n", lmtp_port);
    dt_print_log (&server);
    dt_stop (&server, FALSE);
    return ret;
  }
  g_autofree char *compile = g_strdup_printf ("sievec -c '%s' '%s'", server.conf, script);
  g_assert_cmpint (dt_sh (compile, NULL), ==, 0);
  /* the daemon's socket where Pigeonhole looks, BASE_DIR/../extbody-run/extbody,
   * mode 0777 (milter_umask 000): the LMTP process runs as the user, nobody */
  g_autofree char *sockdir = g_build_filename (server.work, "extbody-run", NULL);
  g_assert_cmpint (g_mkdir_with_parents (sockdir, 0755), ==, 0);
  conf = g_build_filename (server.work, "extbody.conf", NULL);
  /* every delivery runs as one user (nobody) here, as with virtual users
   * (vmail): dovecot_max_peer_connections raised to dovecot_max_connections
   * as filters/dovecot/README.md tells such a site to */
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = off\nmilter_umask = 000\n"
                                           "dovecot_filter_socket = %s/extbody\nmax_message_size = %d\n"
                                           "dovecot_max_peer_connections = 16\n",
                                           sockdir, TEST_MAX_MESSAGE_SIZE);
  dt_put (conf, text, 0644);
  g_autofree char *msock = g_build_filename (server.work, "milter.sock", NULL);
  g_autofree char *mlog = g_build_filename (server.work, "milter.log", NULL);
  milter = mta_milter_start (msock, conf, mlog, NULL);
  g_autoptr (GError) error = NULL;
  httpd = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);
  g_test_add_func ("/dovecot-socket/resolved-as-the-command-writes", test_resolved);
  g_test_add_func ("/dovecot-socket/too-large-stored-as-sent", test_too_large);
  g_test_add_func ("/dovecot-socket/many-sessions", test_many);
  g_test_add_func ("/dovecot-socket/many-sessions-reloaded", test_many_reloaded);
  g_test_add_func ("/dovecot-socket/over-share-stored-as-sent", test_over_share);
  g_test_add_func ("/dovecot-socket/daemon-stopped-stored-as-sent", test_daemon_stopped);
  g_test_add_func ("/dovecot-socket/daemon-killed-stored-as-sent", test_daemon_killed);
  g_test_add_func ("/dovecot-socket/daemon-killed-mid-message-stored-as-sent", test_daemon_killed_mid_message);
  ret = g_test_run ();
  if (ret != 0) {
    dt_print_log (&server);
    g_autofree char *l = mta_milter_log (milter);
    g_printerr ("extbodyd log:\n%s\n", l ? l : "");
  }
  if (milter->proc)
    mta_milter_stop (milter, FALSE);
  mta_milter_free (milter);
  g_clear_pointer (&httpd, test_server_stop);
  dt_stop (&server, ret == 1);
  return ret;
}
