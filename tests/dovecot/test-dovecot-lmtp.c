/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-dovecot-lmtp.c - extbody at delivery in a real Dovecot: messages sent
 * over LMTP to a private Dovecot (LMTP on a loopback port, mdbox, a
 * passwd-file userdb whose users each get a sieve_before script, Sieve set
 * up by the shipped filters/dovecot/90-extbody.conf-2.3 or -2.4, whichever
 * fits the Dovecot installed) pass through Pigeonhole's filter command and
 * filters/dovecot/extbody-sieve-filter, and are read back over IMAP:
 *   - a message with a data: reference is stored resolved (X-Extbody added);
 *   - a message whose reference cannot be resolved (fetching off) is stored
 *     exactly as sent;
 *   - when extbody fails (a stand-in that writes half a message and exits 70),
 *     when the filter program dies by a signal, and when extbody takes longer
 *     than the wrapper's -t, the message is stored exactly as sent. (Not when
 *     Pigeonhole's own sieve_filter_exec_timeout strikes: the LMTP process of
 *     Dovecot 2.3.19 and of 2.4.1 panics then; the wrapper gives up first,
 *     filters/dovecot/README.md.)
 * "Exactly as sent" means byte for byte after the one field Dovecot's LMTP
 * adds, Return-Path (lmtp_add_received_header = no, lmtp_hdr_delivery_address
 * = none), in IMAP's CRLF form.
 *
 * Needs root and the Debian packages dovecot-core, dovecot-imapd,
 * dovecot-lmtpd and dovecot-sieve; otherwise exits 77 (skipped). */
#include "dovecot-test.h"
#include "test-server.h"

#define SIEVE_EXTPROGRAMS "/usr/lib/dovecot/modules/sieve/lib90_sieve_extprograms_plugin.so"
#define LMTP "/usr/lib/dovecot/lmtp"

static DtServer server;
static guint lmtp_port;
static char *bin;

#define CRLF "\r\n"
#define REF_MSG                                                                                   \
  "From: a@example.org" CRLF "To: tester@example.org" CRLF "Subject: the reference" CRLF          \
  "Message-ID: <ref@test.example>" CRLF "MIME-Version: 1.0" CRLF                                 \
  "Content-Type: multipart/mixed; boundary=b" CRLF CRLF "--b" CRLF                                \
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,resolved%20at%20delivery\"" \
  CRLF CRLF "Content-Type: text/plain" CRLF CRLF "--b--" CRLF
#define LEFT_MSG                                                                                  \
  "From: b@example.org" CRLF "Subject: left alone" CRLF "Message-ID: <left@test.example>" CRLF   \
  "MIME-Version: 1.0" CRLF                                                                        \
  "Content-Type: message/external-body; access-type=URL;" CRLF                                    \
  "  URL=\"http://files.example.org/report.pdf\"" CRLF CRLF "Content-Type: application/pdf" CRLF CRLF

/* Delivers @msg to @user over LMTP and returns @user's only message. */
static DtMsg *
deliver (const char *user, const char *msg)
{
  g_autofree char *file = g_build_filename (server.work, "msg.eml", NULL);
  dt_put (file, msg, 0644);
  g_autofree char *port = g_strdup_printf ("%u", lmtp_port);
  G_GNUC_UNUSED g_autofree char *out = dt_client ((const char *const[]) { "lmtp", port, "sender@example.org", user, file, NULL });
  g_autoptr (GPtrArray) msgs = dt_dump (&server, user);
  g_assert_cmpuint (msgs->len, ==, 1);
  return g_ptr_array_steal_index (msgs, 0);
}

static void
assert_as_sent (const DtMsg *m, const char *msg)
{
  g_autofree char *want = g_strconcat ("Return-Path: <sender@example.org>" CRLF, msg, NULL);
  gsize n = 0;
  const char *data = g_bytes_get_data (m->body, &n);
  g_autofree char *got = g_strndup (data, n);
  g_assert_cmpstr (got, ==, want);
}

static void
test_resolved (void)
{
  DtMsg *m = deliver ("resolver", REF_MSG);
  g_assert_true (dt_contains (m->body, "resolved at delivery"));
  g_assert_false (dt_contains (m->body, "message/external-body"));
  g_assert_true (dt_contains (m->body, "X-Extbody: resolved 1 of 1 external-body reference"));
  g_assert_true (dt_contains (m->body, "Message-ID: <ref@test.example>"));
  dt_msg_free (m);
}

/* issue 25: a person's multipart/alternative of their own words and a
 * reference: the reference is replaced, the words stay. */
#define PERSON_MSG                                                                                \
  "From: a@example.org" CRLF "To: tester@example.org" CRLF "Subject: words and a reference" CRLF \
  "Message-ID: <person@test.example>" CRLF "MIME-Version: 1.0" CRLF                              \
  "Content-Type: multipart/alternative; boundary=\"zz\"" CRLF CRLF "--zz" CRLF                   \
  "Content-Type: text/plain" CRLF CRLF "The words a person wrote." CRLF "--zz" CRLF              \
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,hello%20world\"" CRLF CRLF  \
  "Content-Type: text/plain" CRLF CRLF "--zz--" CRLF

static void
test_person_words (void)
{
  DtMsg *m = deliver ("person", PERSON_MSG);
  g_assert_true (dt_contains (m->body, "--zz" CRLF "Content-Type: text/plain" CRLF CRLF
                                       "The words a person wrote." CRLF "--zz" CRLF));
  g_assert_true (dt_contains (m->body, CRLF CRLF "hello world"));
  g_assert_false (dt_contains (m->body, "message/external-body"));
  g_assert_true (dt_contains (m->body, "X-Extbody: resolved 1 of 1 external-body reference"));
  dt_msg_free (m);
}

static void
test_unresolvable (void)
{
  DtMsg *m = deliver ("leaver", LEFT_MSG);
  assert_as_sent (m, LEFT_MSG);
  dt_msg_free (m);
}

static void
test_failing_extbody (void)
{
  DtMsg *m = deliver ("failer", REF_MSG);
  assert_as_sent (m, REF_MSG);
  dt_msg_free (m);
}

static void
test_filter_killed (void)
{
  DtMsg *m = deliver ("killed", REF_MSG);
  assert_as_sent (m, REF_MSG);
  dt_msg_free (m);
}

static void
test_filter_timeout (void)
{
  DtMsg *m = deliver ("staller", REF_MSG);
  assert_as_sent (m, REF_MSG);
  dt_msg_free (m);
}

/* A global Sieve script for @user, compiled as Pigeonhole wants it. */
static char *
script (const char *name, const char *body)
{
  g_autofree char *dir = g_build_filename (server.work, "sieve", NULL);
  g_mkdir_with_parents (dir, 0755);
  g_autofree char *file = g_strdup_printf ("%s/%s.sieve", dir, name);
  g_autofree char *text = g_strdup_printf ("require \"vnd.dovecot.filter\";\n%s\nkeep;\n", body);
  dt_put (file, text, 0644);
  return g_steal_pointer (&file);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  dt_require ((const char *const[]) { SIEVE_EXTPROGRAMS, LMTP, "/usr/bin/sievec", NULL });
  server.work = g_dir_make_tmp ("extbody-dovecot-lmtp-XXXXXX", NULL);
  g_assert_nonnull (server.work);
  g_chmod (server.work, 0755);

  /* what Dovecot runs as nobody: copies everyone can read */
  bin = g_build_filename (server.work, "bin", NULL);
  g_mkdir (bin, 0755);
  g_autofree char *wrapper_src = g_test_build_filename (G_TEST_DIST, "..", "filters", "dovecot", "extbody-sieve-filter", NULL);
  G_GNUC_UNUSED g_autofree char *wrapper = dt_copy (wrapper_src, bin, "extbody", 0755);
  g_autofree char *extbody = test_copy_for_everyone (g_getenv ("EXTBODY"), bin, "extbody-real", 0755);
  g_autofree char *conf = g_build_filename (server.work, "extbody.conf", NULL);
  dt_put (conf, "", 0644);   /* the defaults: data: URLs only, fetching off */
  g_autofree char *half = g_build_filename (bin, "extbody-half", NULL);
  dt_put (half, "#!/bin/sh\ncat >/dev/null\nprintf 'From: half'\nexit 70\n", 0755);
  g_autofree char *die = g_build_filename (bin, "die", NULL);
  dt_put (die, "#!/bin/sh\nhead -c 10 >/dev/null\nkill -KILL $$\n", 0755);
  g_autofree char *stall = g_build_filename (bin, "stall", NULL);
  /* outlives the wrapper's -t (exec: the kill at the timeout ends it) */
  dt_put (stall, "#!/bin/sh\ncat >/dev/null\nexec sleep 600\n", 0755);

  g_autofree char *args = g_strdup_printf ("[\"-c\", \"%s\", \"-e\", \"%s\", \"-l\", \"stderr\"]", conf, extbody);
  g_autofree char *s_resolve = g_strdup_printf ("filter \"extbody\" %s;", args);
  g_autofree char *s_half_args = g_strdup_printf ("[\"-c\", \"%s\", \"-e\", \"%s\"]", conf, half);
  g_autofree char *s_half = g_strdup_printf ("filter \"extbody\" %s;", s_half_args);
  g_autofree char *sc_resolve = script ("resolve", s_resolve);
  g_autofree char *sc_half = script ("half", s_half);
  g_autofree char *sc_die = script ("die", "filter \"die\";");
  g_autofree char *s_stall_args = g_strdup_printf ("[\"-c\", \"%s\", \"-e\", \"%s\", \"-t\", \"1\"]", conf, stall);
  g_autofree char *s_stall = g_strdup_printf ("filter \"extbody\" %s;", s_stall_args);
  g_autofree char *sc_stall = script ("stall", s_stall);

  /* users: each its home (mdbox under it) and its sieve_before */
  g_autofree char *passwd = g_build_filename (server.work, "users", NULL);
  g_autoptr (GString) users = g_string_new (NULL);
  const struct { const char *user, *script; } us[] = {
    { "resolver", sc_resolve }, { "person", sc_resolve }, { "leaver", sc_resolve },
    { "failer", sc_half }, { "killed", sc_die }, { "staller", sc_stall },
  };
  for (guint i = 0; i < G_N_ELEMENTS (us); i++) {
    g_autofree char *home = g_strdup_printf ("%s/home/%s", server.work, us[i].user);
    g_autofree char *line = dt_user_line (us[i].user, home, us[i].script);
    g_string_append (users, line);
  }
  dt_put (passwd, users->str, 0644);
  g_autofree char *homes = g_strdup_printf ("mkdir -p '%s/home' && chown nobody:nogroup '%s/home'", server.work, server.work);
  g_assert_cmpint (dt_sh (homes, NULL), ==, 0);

  g_autofree char *mail = dt_conf_mail ("mdbox", "~/mail", NULL);
  g_autofree char *passdb = dt_conf_passdb_static (NULL);
  g_autofree char *userdb = dt_conf_userdb_passwd_file (passwd);
  /* Sieve as filters/dovecot/90-extbody.conf-2.3 or -2.4 sets it up,
   * with the test's programs and scripts */
  g_autofree char *sieve = dt_conf_shipped (bin, sc_resolve);
  /* a sanitizer build's extbody reserves terabytes of address space for
   * its shadow memory: lift Dovecot's vsz_limit (256 MB by default), under
   * which the filter runs; a normal build runs under the default */
  g_autofree char *vsz = g_getenv ("ASAN_OPTIONS") ? dt_conf_vsz_unlimited ("lmtp") : g_strdup ("");
  g_autofree char *extra = g_strconcat (mail, passdb, userdb,
                                        "lmtp_add_received_header = no\n"
                                        "lmtp_hdr_delivery_address = none\n",
                                        sieve, vsz, NULL);
  int ret = 77;
  if (!dt_start_free_port (&server, &lmtp_port, extra)) {
    g_printerr ("skipped: dovecot did not start with LMTP on 127.0.0.1:%u\n", lmtp_port);
    dt_print_log (&server);
  } else {
    /* global scripts are compiled beforehand (Pigeonhole does not write them at delivery) */
    g_autofree char *compile = g_strdup_printf ("for s in '%s'/sieve/*.sieve; do sievec -c '%s' \"$s\" || exit 1; done",
                                                server.work, server.conf);
    g_assert_cmpint (dt_sh (compile, NULL), ==, 0);
    g_test_add_func ("/dovecot-lmtp/resolved", test_resolved);
    g_test_add_func ("/dovecot-lmtp/person-words-kept", test_person_words);
    g_test_add_func ("/dovecot-lmtp/unresolvable-stored-as-sent", test_unresolvable);
    g_test_add_func ("/dovecot-lmtp/failing-extbody-stored-as-sent", test_failing_extbody);
    g_test_add_func ("/dovecot-lmtp/killed-filter-stored-as-sent", test_filter_killed);
    g_test_add_func ("/dovecot-lmtp/stalled-extbody-stored-as-sent", test_filter_timeout);
    ret = g_test_run ();
    if (ret != 0)
      dt_print_log (&server);
  }
  dt_stop (&server, ret == 1);
  return ret;
}
