/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-postfix-dkim-verify.c - signed incoming mail: where a DKIM verifier
 * goes in smtpd_milters next to extbodyd resolving references, with a
 * real Postfix (a private instance on 127.0.0.1, tests/postfix/pf-peer.sh),
 * extbodyd in resolve mode (data: references, fetching off) and
 * Debian's OpenDKIM in verify mode (Mode v, a private instance on a unix
 * socket, AuthservID mx.test.example, the public key given with its
 * documented test option TestPublicKeys: no DNS). The messages are signed
 * beforehand, as the sender's domain would, with dkimpy
 * (tests/postfix/dkim-sign.py, relaxed/relaxed, a key opendkim-genkey made):
 *
 *   - smtpd_milters = opendkim, extbody: OpenDKIM verifies the message as it
 *     arrived and adds Authentication-Results: mx.test.example; dkim=pass;
 *     extbody then resolves the reference and keeps that field: the mailbox
 *     gets the resolved message with the pass. The delivered message's own
 *     signature no longer verifies (its bh= is the hash of the body as sent,
 *     tests/postfix/dkim-check.py): a later verifier, a mail reader or a next
 *     hop, finds it broken, which extbodyd(8) says;
 *   - smtpd_milters = extbody, opendkim: OpenDKIM sees the body extbody
 *     resolved and reports dkim=fail for a signature that was good when the
 *     message arrived: what not to configure;
 *   - a signed message without a reference, in both orders: extbody leaves it
 *     byte for byte as sent and OpenDKIM says dkim=pass either way (the fail
 *     above is the resolving, not the set-up).
 *
 * Postfix's cleanup hands the message to each milter in turn, after the edits
 * of the ones before it are applied (milter_message () in
 * src/milter/milter.c). Needs root (Postfix refuses otherwise), Postfix,
 * opendkim, opendkim-genkey (opendkim-tools) and /usr/bin/python3 with
 * python3-dkim: skipped (exit 77) without them. Every server and Postfix
 * instance it starts is registered with the watchdog (test-server.h). */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>
#include "test-server.h"
#include "mta-dir.h"
#include "mta-dkim.h"
#include "mta-milter.h"
#include "mta-maildir.h"
#include "mta-postfix.h"

static char *dir;          /* everything lives here */
static char *pfdir;        /* the Postfix instance */
static char *maildir_new;
static char *dkim_dir;     /* the key, OpenDKIM's configuration and log */
static guint verify_first_port;  /* smtpd_milters = opendkim (verify), extbody */
static guint verify_after_port;  /* smtpd_milters = extbody, opendkim (verify) */

/* @msg signed for test.example (selector sel) by dkim-sign.py, written to
 * DIR/@name; returns the file's path. */
static char *
signed_message (const char *name, const char *msg)
{
  g_autofree char *plain = g_strdup_printf ("%s/%s.plain", dir, name);
  g_assert_true (g_file_set_contents (plain, msg, -1, NULL));
  char *path = g_strdup_printf ("%s/%s", dir, name);
  g_autofree char *sign = mta_postfix_script ("dkim-sign.py");
  g_autofree char *cmd = g_strdup_printf ("/usr/bin/python3 '%s' '%s' '%s/sel.private' sel test.example > '%s'",
                                          sign, plain, dkim_dir, path);
  g_assert_cmpint (test_sh (cmd, NULL), ==, 0);
  return path;
}

/* Send the file @path to Postfix's listener on @port; asserts it was
 * accepted (send.py's output shown, and Postfix's log when refused). */
static void
send_to (guint port, const char *path)
{
  g_assert_cmpint (mta_postfix_send ("/usr/bin/python3", pfdir, port, path, NULL), ==, 0);
}

/* The delivered file holding @needle (its text), waiting up to 30 s. */
static char *
delivered (const char *needle)
{
  g_autofree char *path = NULL;
  char *text = mta_maildir_delivered (maildir_new, needle, 30, &path);
  if (text) {
    g_autofree char *n = g_path_get_basename (path);
    g_test_message ("delivered %s:\n%s", n, text);
    return text;
  }
  g_error ("%s was not delivered within 30 s", needle);
}

/* The Authentication-Results fields of the delivered @text's header, each
 * unfolded, every run of white space made one space; asserts there is
 * exactly one and returns it. */
static char *
auth_results (const char *text)
{
  const char *end = strstr (text, "\n\n");
  g_assert_nonnull (end);
  const char *name = "\nAuthentication-Results:";
  const char *p = g_strstr_len (text, end - text, name);
  g_assert_nonnull (p);
  g_assert_null (g_strstr_len (p + 1, end - (p + 1), name));
  p += strlen (name);
  GString *v = g_string_new (NULL);
  for (; p < end; p++) {
    if (*p == '\n' && p[1] != ' ' && p[1] != '\t')
      break;
    gboolean space = *p == ' ' || *p == '\t' || *p == '\n';
    if (!space)
      g_string_append_c (v, *p);
    else if (v->len > 0 && v->str[v->len - 1] != ' ')
      g_string_append_c (v, ' ');
  }
  g_test_message ("Authentication-Results: %s", v->str);
  return g_string_free (v, FALSE);
}

/* OpenDKIM's verdict for the signature of test.example, selector sel, and
 * nothing else: "mx.test.example; dkim=@result ..." */
static void
assert_dkim_result (const char *ar, const char *result)
{
  g_autofree char *head = g_strdup_printf ("mx.test.example; dkim=%s ", result);
  g_assert_true (g_str_has_prefix (ar, head));
  g_assert_nonnull (strstr (ar, " header.d=test.example "));
  g_assert_nonnull (strstr (ar, " header.s=sel "));
  g_assert_null (strstr (ar, result[0] == 'p' ? "dkim=fail" : "dkim=pass"));
}

/* dkim-check.py's output for the delivered @text, the signed message as
 * sent in @sent, asserting it ran. */
static char *
dkim_check (const char *text, const char *sent)
{
  g_autofree char *file = g_build_filename (dir, "delivered.eml", NULL);
  g_assert_true (g_file_set_contents (file, text, -1, NULL));
  g_autofree char *key_txt = g_build_filename (dkim_dir, "sel.txt", NULL);
  return mta_dkim_check (file, key_txt, sent);
}

/* A message with a text part and a data: reference extbody resolves. */
static char *
message_with_reference (const char *message_id)
{
  return g_strdup_printf (
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: signed, with a reference\r\n"
    "Message-ID: <%s>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: text/plain\r\n\r\nThe greeting is below.\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL;\r\n"
    "\tURL=\"data:,Hello%%2C%%20signed%%20world!%%0A\"\r\n\r\n"
    "Content-Type: text/plain\r\n\r\n--b--\r\n", message_id);
}

/* The resolved reference, in the delivered text. */
static void
assert_resolved (const char *text)
{
  g_assert_nonnull (strstr (text, "\nX-Extbody: resolved 1 of 1 external-body reference\n"));
  g_assert_nonnull (strstr (text, "\n\nHello, signed world!\n"));
  g_assert_null (strstr (text, "external-body;"));
}

/* smtpd_milters = opendkim (verify), extbody: the signature is verified on
 * the message as it arrived (pass), then the reference is resolved, and the
 * pass reaches the mailbox with the resolved message. That message's
 * signature is no longer valid: its body hash is the one of the body as
 * sent, which a verifier after this one (a mail reader, a next hop) finds. */
static void
test_verifier_first (void)
{
  g_autofree char *m = message_with_reference ("dkim-v-1@test.example");
  g_autofree char *sent = signed_message ("sent-1.eml", m);
  send_to (verify_first_port, sent);
  g_autofree char *got = delivered ("<dkim-v-1@test.example>");
  assert_resolved (got);
  g_autofree char *ar = auth_results (got);
  assert_dkim_result (ar, "pass");

  g_autofree char *out = dkim_check (got, sent);
  g_assert_nonnull (strstr (out, "d=test.example s=sel c=relaxed/relaxed\n"));
  /* signed as sent: the resolved body no longer matches */
  mta_dkim_assert_body_signed (out, FALSE);
}

/* smtpd_milters = extbody, opendkim (verify): OpenDKIM gets the resolved
 * body, and a signature that was good when the message arrived is reported
 * as failed. */
static void
test_verifier_after (void)
{
  g_autofree char *m = message_with_reference ("dkim-v-2@test.example");
  g_autofree char *sent = signed_message ("sent-2.eml", m);
  send_to (verify_after_port, sent);
  g_autofree char *got = delivered ("<dkim-v-2@test.example>");
  assert_resolved (got);
  g_autofree char *ar = auth_results (got);
  assert_dkim_result (ar, "fail");
}

/* A signed message without a reference passes in either order: extbody
 * delivers it byte for byte as sent, and its signature verifies. */
static void
test_unchanged_either_order (void)
{
  const guint ports[] = { verify_first_port, verify_after_port };
  for (guint i = 0; i < G_N_ELEMENTS (ports); i++) {
    g_autofree char *id = g_strdup_printf ("dkim-v-3-%u@test.example", i);
    g_autofree char *m = g_strdup_printf (
      "From: a@test.example\r\nTo: b@test.example\r\nSubject: signed, nothing to resolve\r\n"
      "Message-ID: <%s>\r\nMIME-Version: 1.0\r\n"
      "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
      "--b\r\nContent-Type: text/plain\r\n\r\nNo reference here.\r\n"
      "--b\r\nContent-Type: text/plain; name=\"notes.txt\"\r\n\r\nnotes\r\n--b--\r\n", id);
    g_autofree char *name = g_strdup_printf ("sent-3-%u.eml", i);
    g_autofree char *sent = signed_message (name, m);
    send_to (ports[i], sent);
    g_autofree char *needle = g_strdup_printf ("<%s>", id);
    g_autofree char *got = delivered (needle);
    g_autofree char *sent_text = NULL;
    g_assert_true (g_file_get_contents (sent, &sent_text, NULL, NULL));
    g_autofree char *want = test_crlf_to_lf (sent_text);
    g_assert_cmpstr (test_after_received (got), ==, want);
    g_autofree char *ar = auth_results (got);
    assert_dkim_result (ar, "pass");
    g_autofree char *out = dkim_check (got, sent);
    g_assert_nonnull (strstr (out, "\nverify=ok\n"));
  }
}

/* The TXT record of opendkim-genkey's SELECTOR.txt (its quoted strings
 * joined), for OpenDKIM's TestPublicKeys file. */
static char *
txt_record (const char *zone_line)
{
  GString *r = g_string_new (NULL);
  gboolean inside = FALSE;
  for (const char *p = zone_line; *p; p++) {
    if (*p == '"')
      inside = !inside;
    else if (inside)
      g_string_append_c (r, *p);
  }
  return g_string_free (r, FALSE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  mta_postfix_require ("EXTBODYD", NULL);
  const char *dkim_missing = mta_dkim_missing ();
  if (dkim_missing)
    test_skip_all (dkim_missing);
  struct passwd *pw = getpwnam ("nobody");
  if (!pw)
    test_skip_all ("no user nobody to run the milter as");
  uid_t nobody_uid = pw->pw_uid;
  gid_t nobody_gid = pw->pw_gid;
  guint wd_dir = 0;
  dir = mta_dir_make ("pfdkim", &wd_dir);
  pfdir = g_build_filename (dir, "pf", NULL);
  maildir_new = mta_postfix_maildir_new (pfdir);

  /* the sockets' directory is nobody's, so that the milter removes its socket at the stop */
  g_autofree char *run = g_build_filename (dir, "run", NULL);
  g_assert_cmpint (g_mkdir (run, 0755), ==, 0);
  g_assert_cmpint (chown (run, nobody_uid, nobody_gid), ==, 0);

  /* the sender's key; OpenDKIM gets the public half from a file instead of DNS */
  dkim_dir = g_build_filename (dir, "dkim", NULL);
  g_autofree char *txt_path = mta_dkim_genkey (dkim_dir);
  g_autofree char *zone_line = NULL;
  g_assert_true (g_file_get_contents (txt_path, &zone_line, NULL, NULL));
  g_autofree char *record = txt_record (zone_line);
  g_assert_true (g_str_has_prefix (record, "v=DKIM1;"));
  g_autofree char *keys = g_build_filename (dkim_dir, "keys", NULL);
  g_autofree char *keys_text = g_strdup_printf ("sel._domainkey.test.example %s\n", record);
  g_assert_true (g_file_set_contents (keys, keys_text, -1, NULL));
  g_autofree char *dkim_conf_text = g_strdup_printf ("Mode v\nTestPublicKeys %s\nAuthservID mx.test.example\n", keys);
  g_autofree char *dkim_sock = g_build_filename (run, "dkim.sock", NULL);
  MtaDkim *opendkim = mta_dkim_start (dkim_dir, dkim_sock, dkim_conf_text);

  /* extbodyd resolving (the defaults: data: URLs, no fetching), as nobody */
  g_autofree char *milter_conf = g_build_filename (dir, "milter.conf", NULL);
  g_assert_true (g_file_set_contents (milter_conf, "milter_umask = 000\n", -1, NULL));
  g_autofree char *milter_log = g_build_filename (dir, "milter.log", NULL);
  g_autofree char *milter_sock = g_build_filename (run, "extbody.sock", NULL);
  MtaMilter *milter = mta_milter_start (milter_sock, milter_conf, milter_log,
                                       (const char *const[]) { "-u", "nobody", NULL });

  /* one Postfix, two listeners: the verifier first, the verifier after extbody */
  verify_first_port = test_free_port ();
  do
    verify_after_port = test_free_port ();
  while (verify_after_port == verify_first_port);
  g_autofree char *peer = mta_postfix_script ("pf-peer.sh");
  g_autofree char *up = g_strdup_printf ("sh '%s' up '%s' %u 'unix:%s,unix:%s' tempfail",
                                         peer, pfdir, verify_first_port, dkim_sock, milter_sock);
  g_autofree char *pf_stop = g_strdup_printf ("postfix -c '%s/etc' stop", pfdir);
  guint wd_pf = test_watchdog_add (pf_stop);
  g_assert_cmpint (test_sh (up, NULL), ==, 0);
  g_autofree char *service = g_strdup_printf (
    "sh '%s' service '%s' '127.0.0.1:%u inet n - n - - smtpd -o smtpd_milters=unix:%s,unix:%s'",
    peer, pfdir, verify_after_port, milter_sock, dkim_sock);
  g_assert_cmpint (test_sh (service, NULL), ==, 0);
  mta_postfix_wait_listening (pfdir, verify_after_port);

  g_test_add_func ("/postfix-dkim-verify/1-verifier-first-pass-reaches-mailbox", test_verifier_first);
  g_test_add_func ("/postfix-dkim-verify/2-verifier-after-extbody-fails", test_verifier_after);
  g_test_add_func ("/postfix-dkim-verify/3-unchanged-message-passes-either-order", test_unchanged_either_order);
  int rc = g_test_run ();

  mta_postfix_down (pfdir, wd_pf);
  int milter_status = mta_milter_stop (milter, TRUE);
  mta_milter_free (milter);
  mta_dkim_stop (opendkim, TRUE);
  mta_dir_remove (dir, wd_dir);
  g_free (dkim_dir);
  g_free (maildir_new);
  g_free (pfdir);
  g_free (dir);
  if (milter_status != 0) {
    g_printerr ("the milter exited %d\n", milter_status);
    return 1;
  }
  return rc;
}
