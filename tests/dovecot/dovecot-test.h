/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dovecot-test.h - a private Dovecot for the tests in tests/dovecot (one
 * program each, so these helpers are static): its own configuration file,
 * base_dir, state_dir and log under a temporary directory everyone can read,
 * started in the foreground (dovecot -F) and stopped with the test even when an
 * assertion aborts it; never the machine's own instance, nothing of
 * /etc/dovecot is read. The client side is tests/dovecot/dovecot-client.py.
 *
 * The configuration is written for the Dovecot installed (dt_version):
 * Dovecot 2.3 (Debian 12: 2.3.19, Pigeonhole 0.5.19) and 2.4 (Debian 13:
 * 2.4.1, Pigeonhole 2.4.1) spell most of it differently, and each refuses
 * the other's form. 2.4 wants dovecot_config_version and
 * dovecot_storage_version before any other setting, has no plugin { }
 * section (Pigeonhole's settings are top-level settings), names passdbs and
 * userdbs by their driver with a setting each instead of "args", splits
 * mail_location into mail_driver and mail_path, gives lists that add to
 * their defaults as blocks (mail_plugins { sieve = yes }: 2.4 reads
 * "$mail_plugins sieve" as a plugin named "$mail_plugins", and every
 * delivery fails), and names Sieve scripts in sieve_script blocks instead of
 * sieve and sieve_before. The dt_conf_* helpers give each part in the form
 * of the version found, so that a test says once what it wants. */
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

/* Dovecot's version as 10 * major + minor: 23 (2.3.x) or 24 (2.4.x), from
 * `dovecot --version`. Any other version fails the test (exit 1): its
 * configuration would be a guess, and a test that cannot say which Dovecot
 * it ran against proves nothing. */
G_GNUC_UNUSED static int
dt_version (void)
{
  static int version;
  if (version)
    return version;
  g_autofree char *out = NULL;
  int rc = dt_sh ("dovecot --version 2>&1 || /usr/sbin/dovecot --version 2>&1", &out);
  int major = 0, minor = 0;
  if (rc != 0 || !out || sscanf (out, "%d.%d", &major, &minor) != 2 || major != 2 || (minor != 3 && minor != 4)) {
    g_printerr ("dovecot --version: %s: the tests know the configuration of Dovecot 2.3 and 2.4 only\n",
                out ? g_strstrip (out) : "(nothing)");
    exit (1);
  }
  version = 10 * major + minor;
  return version;
}

G_GNUC_UNUSED static gboolean
dt_is_24 (void)
{
  return dt_version () == 24;
}

/* The first lines of a configuration: 2.4 refuses a file whose first
 * settings are not these two (the versions whose defaults and storage
 * formats the file was written for); 2.3 knows neither. */
G_GNUC_UNUSED static const char *
dt_conf_head (void)
{
  return dt_is_24 () ? "dovecot_config_version = 2.4.0\ndovecot_storage_version = 2.4.0\n" : "";
}

/* Mail under each user's home, in format @driver (mdbox, maildir, mbox) at
 * @path; for mbox, INBOX is the file @inbox (NULL: not set). */
G_GNUC_UNUSED static char *
dt_conf_mail (const char *driver, const char *path, const char *inbox)
{
  if (dt_is_24 ())
    return g_strdup_printf ("mail_driver = %s\nmail_path = %s\n%s%s%s", driver, path,
                            inbox ? "mail_inbox_path = " : "", inbox ? inbox : "", inbox ? "\n" : "");
  return g_strdup_printf ("mail_location = %s:%s%s%s\n", driver, path, inbox ? ":INBOX=" : "", inbox ? inbox : "");
}

/* A passdb that lets every user in: with @password, or with none at all
 * (NULL: only for sessions that need no login, LMTP and doveadm). */
G_GNUC_UNUSED static char *
dt_conf_passdb_static (const char *password)
{
  if (dt_is_24 ())
    return password ? g_strdup_printf ("passdb static {\n  password = %s\n}\n", password)
                    : g_strdup ("passdb static {\n  fields {\n    nopassword = yes\n  }\n}\n");
  return g_strdup_printf ("passdb {\n  driver = static\n  args = %s%s\n}\n", password ? "password=" : "nopassword=y",
                          password ? password : "");
}

/* Every user is nobody:nogroup, home @home (with %u for the user name;
 * written %{user} for 2.4). */
G_GNUC_UNUSED static char *
dt_conf_userdb_static (const char *home)
{
  if (dt_is_24 ()) {
    g_autoptr (GString) h = g_string_new (home);
    g_string_replace (h, "%u", "%{user}", 0);
    return g_strdup_printf ("userdb static {\n  fields {\n    uid = nobody\n    gid = nogroup\n    home = %s\n  }\n}\n",
                            h->str);
  }
  return g_strdup_printf ("userdb {\n  driver = static\n  args = uid=nobody gid=nogroup home=%s\n}\n", home);
}

/* The users of the passwd-file @file (lines from dt_user_line). */
G_GNUC_UNUSED static char *
dt_conf_userdb_passwd_file (const char *file)
{
  if (dt_is_24 ())
    return g_strdup_printf ("userdb passwd-file {\n  passwd_file_path = %s\n}\n", file);
  return g_strdup_printf ("userdb {\n  driver = passwd-file\n  args = %s\n}\n", file);
}

/* A passwd-file line: @user, nobody:nogroup, home @home, and its own
 * sieve_before script @before (NULL: the configuration's). 2.3 takes the
 * plugin setting sieve_before from the userdb; 2.4 takes any setting, here
 * the path of the script storage named "extbody" (dt_conf_sieve). */
G_GNUC_UNUSED static char *
dt_user_line (const char *user, const char *home, const char *before)
{
  if (!before)
    return g_strdup_printf ("%s::65534:65534::%s::\n", user, home);
  return g_strdup_printf ("%s::65534:65534::%s::userdb_%s=%s\n", user, home,
                          dt_is_24 () ? "sieve_script/extbody/path" : "sieve_before", before);
}

/* A passwd-file line: @user, nobody:nogroup, home @home, and its mail in
 * format @driver under the home, whatever the configuration's: "mdbox"
 * (~/mail), "maildir" (~/Maildir), or "mbox" (~/mail, INBOX the file
 * ~/inbox, as Debian's /var/mail/USER). 2.3 takes the userdb field mail
 * (mail_location's form), 2.4 the settings mail_driver, mail_path and
 * mail_inbox_path. */
G_GNUC_UNUSED static char *
dt_user_line_mail (const char *user, const char *home, const char *driver)
{
  gboolean mbox = g_str_equal (driver, "mbox");
  const char *path = g_str_equal (driver, "maildir") ? "~/Maildir" : "~/mail";
  if (dt_is_24 ())
    return g_strdup_printf ("%s::65534:65534::%s::userdb_mail_driver=%s userdb_mail_path=%s%s\n", user, home, driver,
                            path, mbox ? " userdb_mail_inbox_path=~/inbox" : "");
  return g_strdup_printf ("%s::65534:65534::%s::userdb_mail=%s:%s%s\n", user, home, driver, path,
                          mbox ? ":INBOX=~/inbox" : "");
}

/* Sieve at LMTP delivery: the personal script ~/.dovecot.sieve, the global
 * script @before run before it (a user's own from dt_user_line replaces it),
 * Pigeonhole's filter command for global scripts only, its programs in
 * @bin_dir and its sockets in @socket_dir (relative to base_dir), either
 * NULL when not used, and the time limit of 130 s the shipped configuration
 * (filters/dovecot/90-extbody.conf-2.3 and -2.4) gives a program or a socket
 * alike (Pigeonhole's default, 10 s, applies to the socket too: with it, a
 * machine loaded enough stored a many-sessions message as it came). */
G_GNUC_UNUSED static char *
dt_conf_sieve (const char *before, const char *bin_dir, const char *socket_dir)
{
  g_autoptr (GString) s = g_string_new (NULL);
  if (dt_is_24 ()) {
    g_string_append (s, "protocol lmtp {\n  mail_plugins {\n    sieve = yes\n  }\n}\n"
                        "sieve_script personal {\n  path = ~/sieve\n  active_path = ~/.dovecot.sieve\n}\n");
    g_string_append_printf (s, "sieve_script extbody {\n  type = before\n  path = %s\n}\n", before);
    g_string_append (s, "sieve_plugins {\n  sieve_extprograms = yes\n}\n"
                        "sieve_global_extensions {\n  vnd.dovecot.filter = yes\n}\n");
    if (bin_dir)
      g_string_append_printf (s, "sieve_filter_bin_dir = %s\n", bin_dir);
    if (socket_dir)
      g_string_append_printf (s, "sieve_filter_socket_dir = %s\n", socket_dir);
    if (bin_dir || socket_dir)
      g_string_append (s, "sieve_filter_exec_timeout = 130s\n");
    return g_string_free (g_steal_pointer (&s), FALSE);
  }
  g_string_append_printf (s, "protocol lmtp {\n  mail_plugins = sieve\n}\n"
                             "plugin {\n  sieve = file:~/sieve;active=~/.dovecot.sieve\n  sieve_before = %s\n"
                             "  sieve_plugins = sieve_extprograms\n  sieve_global_extensions = +vnd.dovecot.filter\n",
                          before);
  if (bin_dir)
    g_string_append_printf (s, "  sieve_filter_bin_dir = %s\n", bin_dir);
  if (socket_dir)
    g_string_append_printf (s, "  sieve_filter_socket_dir = %s\n", socket_dir);
  if (bin_dir || socket_dir)
    g_string_append (s, "  sieve_filter_exec_timeout = 130s\n");
  g_string_append (s, "}\n");
  return g_string_free (g_steal_pointer (&s), FALSE);
}

/* The shipped configuration for the version installed,
 * filters/dovecot/90-extbody.conf-2.3 or -2.4, as an administrator
 * installs it, with its two paths of the Debian package replaced: the
 * filter programs' directory by @bin_dir and the global script by @before.
 * A test that runs with it shows that Dovecot not only reads the file
 * (doveconf -n) but delivers through it. */
G_GNUC_UNUSED static char *
dt_conf_shipped (const char *bin_dir, const char *before)
{
  g_autofree char *name = g_strdup_printf ("90-extbody.conf-%d.%d", dt_version () / 10, dt_version () % 10);
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "..", "filters", "dovecot", name, NULL);
  g_autofree char *text = NULL;
  g_autoptr (GError) error = NULL;
  g_file_get_contents (path, &text, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (GString) s = g_string_new (text);
  g_assert_cmpuint (g_string_replace (s, "= /usr/libexec/extbody/sieve-filter\n", "= BIN\n", 0), ==, 1);
  g_assert_cmpuint (g_string_replace (s, "= /etc/dovecot/sieve/extbody.sieve\n", "= BEFORE\n", 0), ==, 1);
  g_autofree char *b = g_strdup_printf ("= %s\n", bin_dir), *f = g_strdup_printf ("= %s\n", before);
  g_string_replace (s, "= BIN\n", b, 0);
  g_string_replace (s, "= BEFORE\n", f, 0);
  return g_string_free (g_steal_pointer (&s), FALSE);
}

/* No address-space limit for @service's processes (Dovecot's default
 * vsz_limit is 256 MB): 2.3 says 0, 2.4 "unlimited" (and refuses 0). */
G_GNUC_UNUSED static char *
dt_conf_vsz_unlimited (const char *service)
{
  return g_strdup_printf ("service %s {\n  vsz_limit = %s\n}\n", service, dt_is_24 () ? "unlimited" : "0");
}

/* Exits 77 unless root, Dovecot and python3 are here. @extra: further
 * programs the test needs (sieve tools), NULL-terminated. Then the
 * version is known (dt_version: exit 1 when it is neither 2.3 nor 2.4). */
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
  g_test_message ("Dovecot %d.%d", dt_version () / 10, dt_version () % 10);
}

typedef struct {
  char *work;        /* the temporary directory, 0755 */
  char *conf;        /* WORK/dovecot.conf */
  char *log;         /* WORK/dovecot.log */
  GSubprocess *proc;
} DtServer;

/* WORK/dovecot.conf: the common part (no listener but @port when @port is
 * not 0: LMTP on 127.0.0.1) and @extra (from the dt_conf_* helpers, in the
 * form of the version installed); then starts Dovecot and waits (at
 * most 20 s) until doveadm reaches it. FALSE when it does not start. */
G_GNUC_UNUSED static gboolean
dt_start (DtServer *s, guint port, const char *extra)
{
  g_autofree char *dovecot = g_find_program_in_path ("dovecot");
  if (!dovecot)
    dovecot = g_strdup ("/usr/sbin/dovecot");
  s->conf = g_build_filename (s->work, "dovecot.conf", NULL);
  s->log = g_build_filename (s->work, "dovecot.log", NULL);
  /* 2.3 gives a listener its address; 2.4 has no such setting there, and
   * listens where the global listen (127.0.0.1 here) says */
  g_autofree char *lmtp = port ? g_strdup_printf ("service lmtp {\n  inet_listener lmtp {\n"
                                                  "%s    port = %u\n  }\n}\n",
                                                  dt_is_24 () ? "" : "    address = 127.0.0.1\n", port)
                               : g_strdup ("");
  g_autofree char *text = g_strdup_printf (
    "%s"
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
    dt_conf_head (), s->work, s->work, s->log, port ? " lmtp" : "", lmtp, extra);
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
