/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dovecot-test.h - a private Dovecot for the tests in tests/dovecot (one
 * program each, so these helpers are static): its own configuration file,
 * base_dir, state_dir and log under a temporary directory everyone can read,
 * started in the foreground (dovecot -F) and stopped with the test even when an
 * assertion aborts it; never the machine's own instance, nothing of
 * /etc/dovecot is read. The client side is tests/dovecot/dovecot-client.py. */
#pragma once

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string.h>
#include <stdlib.h>
#include "test-server.h"

G_GNUC_UNUSED static int
dt_sh (const char *cmd, char **out)
{
  int status = 0;
  g_spawn_sync (NULL, (char *[]) { "/bin/sh", "-c", (char *) cmd, NULL }, NULL, 0, NULL, NULL, out,
                NULL, &status, NULL);
  return WIFEXITED (status) ? WEXITSTATUS (status) : 128 + (WIFSIGNALED (status) ? WTERMSIG (status) : 0);
}

G_GNUC_UNUSED static void
dt_put (const char *path, const char *data, int mode)
{
  g_autoptr (GError) error = NULL;
  g_file_set_contents (path, data, -1, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_chmod (path, mode), ==, 0);
}

/* A copy of @src named @name in @dir, mode @mode: what Dovecot runs as another
 * user must not sit in a checkout that user cannot read. */
G_GNUC_UNUSED static char *
dt_copy (const char *src, const char *dir, const char *name, int mode)
{
  g_assert_nonnull (src);
  char *dst = g_build_filename (dir, name, NULL);
  g_autofree char *data = NULL;
  gsize len = 0;
  g_autoptr (GError) error = NULL;
  g_file_get_contents (src, &data, &len, &error);
  g_assert_no_error (error);
  g_file_set_contents (dst, data, (gssize) len, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_chmod (dst, mode), ==, 0);
  return dst;
}

G_GNUC_UNUSED static void
dt_die_with_parent (gpointer data)
{
  (void) data;
  prctl (PR_SET_PDEATHSIG, SIGTERM);
}

/* Exits 77 unless root, Dovecot and python3 are here. @extra: further
 * programs the test needs (sieve tools), NULL-terminated. */
G_GNUC_UNUSED static void
dt_require (const char *const *extra)
{
  gboolean ok = geteuid () == 0 && getpwnam ("dovecot") && getpwnam ("dovenull") && getpwnam ("nobody");
  for (const char *const *p = (const char *const[]) { "dovecot", "doveadm", "python3", NULL }; ok && *p; p++) {
    g_autofree char *f = g_find_program_in_path (*p);
    g_autofree char *s = g_build_filename ("/usr/sbin", *p, NULL);
    ok = f || g_file_test (s, G_FILE_TEST_IS_EXECUTABLE);
  }
  for (const char *const *p = extra; ok && p && *p; p++)
    ok = g_file_test (*p, G_FILE_TEST_EXISTS);
  if (!ok) {
    g_printerr ("skipped: needs root, python3 and the Debian packages dovecot-core, dovecot-imapd%s\n",
                extra ? ", dovecot-lmtpd, dovecot-sieve" : "");
    exit (77);
  }
}

typedef struct {
  char *work;        /* the temporary directory, 0755 */
  char *conf;        /* WORK/dovecot.conf */
  char *log;         /* WORK/dovecot.log */
  GSubprocess *proc;
} DtServer;

/* WORK/dovecot.conf: the common part (no listener but @port when @port is
 * not 0: LMTP on 127.0.0.1) and @extra; then starts Dovecot and waits (at
 * most 20 s) until doveadm reaches it. FALSE when it does not start. */
G_GNUC_UNUSED static gboolean
dt_start (DtServer *s, guint port, const char *extra)
{
  g_autofree char *dovecot = g_find_program_in_path ("dovecot");
  if (!dovecot)
    dovecot = g_strdup ("/usr/sbin/dovecot");
  s->conf = g_build_filename (s->work, "dovecot.conf", NULL);
  s->log = g_build_filename (s->work, "dovecot.log", NULL);
  g_autofree char *lmtp = port ? g_strdup_printf ("service lmtp {\n  inet_listener lmtp {\n"
                                                  "    address = 127.0.0.1\n    port = %u\n  }\n}\n", port)
                               : g_strdup ("");
  g_autofree char *text = g_strdup_printf (
    "base_dir = %s/run\n"
    "state_dir = %s/state\n"
    "log_path = %s\n"
    "protocols = imap%s\n"
    "listen = 127.0.0.1\n"
    "ssl = no\n"
    "first_valid_uid = 1\n"
    "service imap-login {\n  inet_listener imap {\n    port = 0\n  }\n"
    "  inet_listener imaps {\n    port = 0\n  }\n}\n"
    "service pop3-login {\n  inet_listener pop3 {\n    port = 0\n  }\n}\n"
    "service submission-login {\n  inet_listener submission {\n    port = 0\n  }\n}\n"
    "%s%s",
    s->work, s->work, s->log, port ? " lmtp" : "", lmtp, extra);
  dt_put (s->conf, text, 0644);
  g_autofree char *state = g_build_filename (s->work, "state", NULL);
  g_mkdir (state, 0755);

  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
  g_subprocess_launcher_set_child_setup (l, dt_die_with_parent, NULL, NULL);
  s->proc = g_subprocess_launcher_spawn (l, &error, dovecot, "-F", "-c", s->conf, NULL);
  if (!s->proc) {
    g_printerr ("dovecot: %s\n", error->message);
    return FALSE;
  }
  g_autofree char *probe = g_strdup_printf ("doveadm -c '%s' who >/dev/null 2>&1", s->conf);
  for (int i = 0; i < 200; i++) {
    if (g_subprocess_get_identifier (s->proc) == NULL)
      return FALSE;   /* it exited */
    if (dt_sh (probe, NULL) == 0) {
      if (!port)
        return TRUE;
      /* its own master listens there (never another test's process) */
      const char *id = g_subprocess_get_identifier (s->proc);
      if (id && test_port_owned_by (port, (GPid) atoi (id)))
        return TRUE;
    }
    g_usleep (100000);
  }
  return FALSE;
}

/* dt_start on a port of its own (in *@port): again on another, at most
 * TEST_PORT_ATTEMPTS times, when the one it was given was taken before
 * Dovecot bound it ("Address already in use" in its log). */
G_GNUC_UNUSED static gboolean
dt_start_free_port (DtServer *s, guint *port, const char *extra)
{
  for (guint attempt = 0; attempt < TEST_PORT_ATTEMPTS; attempt++) {
    *port = test_free_port ();
    if (dt_start (s, *port, extra))
      return TRUE;
    g_autofree char *log = NULL;
    g_file_get_contents (s->log, &log, NULL, NULL);
    if (!log || !strstr (log, "in use"))
      return FALSE;
    g_printerr ("# dovecot: port %u was taken before it bound it; again with another\n", *port);
    if (s->proc) {
      g_subprocess_send_signal (s->proc, SIGTERM);
      g_subprocess_wait (s->proc, NULL, NULL);
      g_clear_object (&s->proc);
    }
    g_unlink (s->log);
  }
  return FALSE;
}

G_GNUC_UNUSED static void
dt_print_log (const DtServer *s)
{
  g_autofree char *l = NULL;
  g_file_get_contents (s->log, &l, NULL, NULL);
  g_printerr ("dovecot log:\n%s\n", l ? l : "");
}

G_GNUC_UNUSED static void
dt_stop (DtServer *s, gboolean keep_work)
{
  if (s->proc) {
    g_subprocess_send_signal (s->proc, SIGTERM);
    g_subprocess_wait (s->proc, NULL, NULL);
    g_clear_object (&s->proc);
  }
  if (!keep_work) {
    g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", s->work);
    dt_sh (rm, NULL);
  }
}

/* tests/dovecot/dovecot-client.py ARGS...: its standard output; asserts it
 * exits 0. */
G_GNUC_UNUSED static char *
dt_client (const char *const *args)
{
  g_autofree char *client = g_test_build_filename (G_TEST_DIST, "dovecot", "dovecot-client.py", NULL);
  g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
  g_strv_builder_add_many (b, "python3", client, NULL);
  g_strv_builder_addv (b, (const char **) args);
  g_auto (GStrv) argv = g_strv_builder_end (b);
  char *out = NULL;
  g_autofree char *err = NULL;
  int status = 0;
  g_autoptr (GError) error = NULL;
  g_spawn_sync (NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err, &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_printerr ("dovecot-client.py %s: %s\n", args[0], err);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  return out;
}

/* One message as IMAP serves it. */
typedef struct {
  guint uid;
  char *flags;    /* sorted, without \Recent */
  char *date;     /* INTERNALDATE */
  char *msgid;
  GBytes *body;   /* BODY[] */
} DtMsg;

G_GNUC_UNUSED static void
dt_msg_free (gpointer p)
{
  DtMsg *m = p;
  g_free (m->flags);
  g_free (m->date);
  g_free (m->msgid);
  g_bytes_unref (m->body);
  g_free (m);
}

/* Every message of @user's INBOX, in UID order. */
G_GNUC_UNUSED static GPtrArray *
dt_dump (const DtServer *s, const char *user)
{
  g_autofree char *out = dt_client ((const char *const[]) { "dump", s->conf, user, NULL });
  GPtrArray *msgs = g_ptr_array_new_with_free_func (dt_msg_free);
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    if (!*lines[i])
      continue;
    g_auto (GStrv) f = g_strsplit (lines[i], "|", 5);
    g_assert_cmpuint (g_strv_length (f), ==, 5);
    DtMsg *m = g_new0 (DtMsg, 1);
    m->uid = (guint) atoi (f[0]);
    m->flags = g_strdup (f[1]);
    m->date = g_strdup (f[2]);
    m->msgid = g_strdup (f[3]);
    gsize n = 0;
    guchar *b = g_base64_decode (f[4], &n);
    m->body = g_bytes_new_take (b, n);
    g_ptr_array_add (msgs, m);
  }
  return msgs;
}

G_GNUC_UNUSED static gboolean
dt_contains (GBytes *b, const char *needle)
{
  gsize n = 0;
  const char *d = g_bytes_get_data (b, &n);
  return g_strstr_len (d, (gssize) n, needle) != NULL;
}
