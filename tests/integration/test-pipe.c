/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-pipe.c - the pipe filter (filters/pipe/extbody-pipe) logs each message
 * and reference as the milter does and adds the milter's X-Extbody field to
 * the messages it changes. The re-injection command is a script that saves
 * what it is given. The log is read twice: on standard error (-l stderr, or
 * EXTBODY_LOG=stderr), and as syslog datagrams, from a socket of the test's
 * own mounted on /dev/log in a private mount namespace (root only: skipped
 * otherwise). A real Postfix runs the filter in tests/postfix. */
#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "run-command.h"

#define QID "4XyZ1ab2C3"

#define MSG \
  "From: alice@example.org\n" \
  "To: bob@example.org\n" \
  "X-Extbody: resolved 9 of 9 external-body references (forged)\n" \
  "Message-ID: <pipe-log@example.org>\n" \
  "MIME-Version: 1.0\n" \
  "Content-Type: multipart/mixed; boundary=b\n\n" \
  "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,hello%20pipe\"\n\n" \
  "Content-Type: text/plain\n\n" \
  "--b\nContent-Type: message/external-body; access-type=URL;\n" \
  " URL=\"https://u:s3cr3t@Files.Example.org:8443/r.pdf?token=s3cr3t\"\n\n" \
  "Content-Type: application/pdf\n\n" \
  "--b--\n"

#define UNCHANGED \
  "From: alice@example.org\n" \
  "Message-ID: <pipe-unchanged@example.org>\n" \
  "MIME-Version: 1.0\n" \
  "Content-Type: message/external-body; access-type=URL; URL=\"https://files.example.org/x\"\n\n" \
  "Content-Type: text/plain\n\n"

typedef struct {
  char *dir;
  char *sendmail;   /* saves its arguments in dir/args, the message in dir/msg */
  char *conf;
  char *in;
} Fixture;

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  f->dir = g_dir_make_tmp ("extbody-pipe-log-XXXXXX", NULL);
  g_assert_nonnull (f->dir);
  f->sendmail = g_build_filename (f->dir, "sendmail", NULL);
  g_autofree char *script = g_strdup_printf ("#!/bin/sh\necho \"$@\" > '%s/args'\ncat > '%s/msg'\n",
                                             f->dir, f->dir);
  g_assert_true (g_file_set_contents (f->sendmail, script, -1, NULL));
  g_assert_cmpint (g_chmod (f->sendmail, 0755), ==, 0);
  f->conf = g_build_filename (f->dir, "extbody.conf", NULL);
  g_assert_true (g_file_set_contents (f->conf, "", 0, NULL));
  f->in = g_build_filename (f->dir, "in.eml", NULL);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", f->dir);
  g_assert_cmpint (system (rm), ==, 0);
  g_free (f->dir);
  g_free (f->sendmail);
  g_free (f->conf);
  g_free (f->in);
}

/* Run the pipe filter on @msg with the arguments @args (a shell fragment
 * before "-f"), @env (a shell fragment of assignments), through @wrap (a
 * command it is run under, or ""). Returns its standard error. */
static char *
run_pipe (Fixture *f, const char *msg, const char *env, const char *wrap, const char *args,
          int *status)
{
  g_assert_true (g_file_set_contents (f->in, msg, -1, NULL));
  g_autofree char *pipe = g_test_build_filename (G_TEST_DIST, "..", "filters", "pipe", "extbody-pipe", NULL);
  g_autofree char *inner = g_strdup_printf ("%s EXTBODY='%s' SENDMAIL='%s' sh '%s' -c '%s' %s "
                                            "-f alice@example.org -- bob@example.org < '%s'",
                                            env, extbody_path (), f->sendmail, pipe, f->conf, args, f->in);
  g_autofree char *quoted = g_shell_quote (inner);
  g_autofree char *cmd = g_strdup_printf ("%s sh -c %s", wrap, quoted);
  char *err = NULL;
  int wait = 0;
  g_autoptr (GError) error = NULL;
  const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err,
                               &wait, &error));
  g_assert_no_error (error);
  *status = WIFEXITED (wait) ? WEXITSTATUS (wait) : -1;
  g_test_message ("%s\nstandard error:\n%s", cmd, err);
  return err;
}

static char *
reinjected (Fixture *f)
{
  g_autofree char *p = g_build_filename (f->dir, "msg", NULL);
  char *got = NULL;
  if (!g_file_get_contents (p, &got, NULL, NULL))
    return NULL;
  return got;
}

static guint
count (const char *hay, const char *needle)
{
  guint n = 0;
  for (const char *p = strstr (hay, needle); p; p = strstr (p + 1, needle))
    n++;
  return n;
}

/* The message changed: the forged field gone, one X-Extbody field at the end
 * of the header (as the milter's smfi_addheader puts it). */
static void
check_changed (Fixture *f)
{
  g_autofree char *got = reinjected (f);
  g_assert_nonnull (got);
  g_test_message ("re-injected:\n%s", got);
  g_assert_null (strstr (got, "(forged)"));
  g_assert_cmpuint (count (got, "X-Extbody:"), ==, 1);
  g_assert_nonnull (strstr (got, "Content-Type: multipart/mixed; boundary=b\n"
                                 "X-Extbody: resolved 1 of 2 external-body references\n\n--b\n"));
  g_assert_nonnull (strstr (got, "\n\nhello pipe\n"));
}

/* The record's lines, as eb_log_message writes them (the prefix aside). */
static const char *const record[] = {
  "queue_id=" QID " msgid=<pipe-log@example.org> references=2 resolved=1 changed=yes trace_removed=1",
  "queue_id=" QID " msgid=<pipe-log@example.org> ref=1 part=1 access_type=url scheme=data "
  "outcome=resolved type=text/plain bytes=10",
  "queue_id=" QID " msgid=<pipe-log@example.org> ref=2 part=2 access_type=url scheme=https "
  "host=files.example.org outcome=left reason=fetch-off",
};

static void
test_stderr (Fixture *f, gconstpointer data)
{
  for (guint how = 0; how < 2; how++) {
    int status = -1;
    g_autofree char *err = how == 0 ? run_pipe (f, MSG, "EXTBODY_LOG=stderr", "", "-q " QID, &status)
                                    : run_pipe (f, MSG, "", "", "-l stderr -q " QID, &status);
    g_assert_cmpint (status, ==, 0);
    check_changed (f);
    g_autofree char *want = g_strdup_printf ("extbody: %s\nextbody: %s\nextbody: %s\n", record[0],
                                             record[1], record[2]);
    g_assert_cmpstr (err, ==, want);
    g_assert_null (strstr (err, "s3cr3t"));
    g_autofree char *args = g_build_filename (f->dir, "args", NULL);
    g_assert_cmpint (g_unlink (args), ==, 0);
  }
}

/* Nothing resolved: the message goes on byte for byte, without the field, and
 * is logged all the same; without -q, no queue id. */
static void
test_unchanged (Fixture *f, gconstpointer data)
{
  int status = -1;
  g_autofree char *err = run_pipe (f, UNCHANGED, "EXTBODY_LOG=stderr", "", "", &status);
  g_assert_cmpint (status, ==, 0);
  g_autofree char *got = reinjected (f);
  g_assert_cmpstr (got, ==, UNCHANGED);
  g_assert_cmpstr (err, ==,
                   "extbody: msgid=<pipe-unchanged@example.org> references=1 resolved=0 changed=no\n"
                   "extbody: msgid=<pipe-unchanged@example.org> ref=1 part=1 access_type=url scheme=https "
                   "host=files.example.org outcome=left reason=fetch-off\n");
}

/* A log target that does not exist is a usage error; nothing is re-injected. */
static void
test_bad_target (Fixture *f, gconstpointer data)
{
  int status = -1;
  g_autofree char *err = run_pipe (f, MSG, "", "", "-l journal", &status);
  g_assert_cmpint (status, ==, 64);
  g_assert_nonnull (strstr (err, "-l takes syslog or stderr"));
  g_autofree char *got = reinjected (f);
  g_assert_null (got);
  g_autofree char *err2 = run_pipe (f, MSG, "EXTBODY_LOG=journal", "", "", &status);
  g_assert_nonnull (strstr (err2, "-l takes syslog or stderr, not \"journal\""));
  g_assert_cmpint (status, ==, 64);
  /* the command itself says the same */
  g_auto (CmdResult) r = { 0 };
  g_autoptr (GBytes) in = g_bytes_new_static (MSG, strlen (MSG));
  RUN (&r, in, "rewrite", "--log", "journal");
  g_assert_cmpint (r.status, ==, 64);
  g_auto (CmdResult) r2 = { 0 };
  RUN (&r2, NULL, "rewrite", "--log", "stderr", "--mbox", f->in);
  g_assert_cmpint (r2.status, ==, 64);
}

/* The default: syslog, facility mail, read from a datagram socket of the
 * test's own mounted on /dev/log in a private mount namespace. */
static void
test_syslog (Fixture *f, gconstpointer data)
{
  if (geteuid () != 0) {
    g_test_skip ("a private /dev/log needs root (a mount namespace)");
    return;
  }
  g_autofree char *unshare = g_find_program_in_path ("unshare");
  if (!unshare) {
    g_test_skip ("no unshare (util-linux)");
    return;
  }
  g_autofree char *dev = g_build_filename (f->dir, "dev", NULL);
  g_assert_cmpint (g_mkdir (dev, 0755), ==, 0);
  g_autofree char *path = g_build_filename (dev, "log", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSocket) sock = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_DATAGRAM,
                                           G_SOCKET_PROTOCOL_DEFAULT, &error);
  g_assert_no_error (error);
  g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (path);
  g_assert_true (g_socket_bind (sock, addr, FALSE, &error));
  g_assert_no_error (error);
  g_chmod (path, 0666);
  /* the namespace's /dev: the test's directory with /dev/null and friends */
  g_autofree char *wrap = g_strdup_printf (
    "unshare --mount --propagation private sh -c '"
    "for d in null zero random urandom; do touch \"$0/$d\" && mount --bind /dev/$d \"$0/$d\" || exit 1; done && "
    "mount --bind \"$0\" /dev && exec \"$@\"' '%s'", dev);
  int status = -1;
  g_autofree char *err = run_pipe (f, MSG, "", wrap, "-q " QID, &status);
  if (status != 0 && strstr (err, "unshare")) {
    g_test_skip ("no mount namespace here");
    return;
  }
  g_assert_cmpint (status, ==, 0);
  g_assert_cmpstr (err, ==, "");
  check_changed (f);
  /* every datagram sent is queued: read them all without waiting */
  g_socket_set_blocking (sock, FALSE);
  g_autoptr (GPtrArray) lines = g_ptr_array_new_with_free_func (g_free);
  for (;;) {
    char buf[4096];
    gssize n = g_socket_receive (sock, buf, sizeof buf - 1, NULL, NULL);
    if (n <= 0)
      break;
    buf[n] = 0;
    g_test_message ("syslog: %s", buf);
    g_ptr_array_add (lines, g_strdup (buf));
  }
  g_assert_cmpuint (lines->len, ==, G_N_ELEMENTS (record));
  for (guint i = 0; i < lines->len; i++) {
    const char *l = g_ptr_array_index (lines, i);
    /* <22>: facility mail (2), priority info (6); the ident and the PID */
    g_assert_true (g_str_has_prefix (l, "<22>"));
    g_assert_nonnull (strstr (l, " extbody["));
    g_autofree char *tail = g_strdup_printf ("]: %s", record[i]);
    g_assert_true (g_str_has_suffix (l, tail));
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add ("/pipe/log/stderr", Fixture, NULL, fixture_set_up, test_stderr, fixture_tear_down);
  g_test_add ("/pipe/log/unchanged", Fixture, NULL, fixture_set_up, test_unchanged, fixture_tear_down);
  g_test_add ("/pipe/log/bad-target", Fixture, NULL, fixture_set_up, test_bad_target, fixture_tear_down);
  g_test_add ("/pipe/log/syslog", Fixture, NULL, fixture_set_up, test_syslog, fixture_tear_down);
  return g_test_run ();
}
