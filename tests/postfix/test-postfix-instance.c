/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-postfix-instance.c - what filters/README.md and filters/pipe/README.md
 * say about Postfix, against a real private Postfix instance on 127.0.0.1
 * (tests/postfix/pf-peer.sh):
 *
 * - the pipe filter in a second instance: sendmail's postdrop reads the
 *   default instance's /etc/postfix/main.cf and refuses the second instance's
 *   configuration directory until it is listed there in
 *   multi_instance_directories or alternate_config_directories; until then the
 *   message waits in the queue (deferred, nothing lost), and once listed it is
 *   re-injected into the second instance (its pickup, its queue), resolved;
 * - the header ceiling: with a milter in the path, cleanup cuts every header
 *   field, MIME part headers included, to 60000 bytes whatever
 *   header_size_limit says, so a 2 MiB data: URL arrives cut and unresolved;
 *   the same message arrives resolved through the milter when the milter's
 *   cleanup service has disable_mime_input_processing = yes, and through the
 *   pipe filter when header_size_limit is raised.
 *
 * The default instance's configuration directory is compiled into Postfix
 * (/etc/postfix). So that the system's configuration is never touched, the
 * instance runs in a private mount namespace (unshare(1)) in which /etc/postfix
 * is a copy of the system's with a main.cf of the test's own: the test edits
 * that main.cf exactly as the README tells an administrator to edit theirs.
 *
 * Needs root (Postfix refuses otherwise) and unshare: skipped (exit 77) without
 * them or without Postfix. Everything it starts is registered with the
 * watchdog (test-server.h), so a failed assertion leaves nothing running. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>
#include "test-server.h"
#include "mta-dir.h"
#include "mta-milter.h"
#include "mta-maildir.h"
#include "mta-postfix.h"

static char *dir;          /* everything lives here */
static char *pfdir;        /* the second instance */
static char *etc_postfix;  /* what /etc/postfix is in the instance's namespace */
static char *maildir_new;
static guint port_pipe;    /* smtpd with content_filter=extbody:dummy, no milter */
static guint port_milter;  /* smtpd with the milter, MIME input processing on */
static guint port_nomime;  /* smtpd with the milter, disable_mime_input_processing = yes */

#define PAYLOAD_BYTES (1536 * 1024)   /* decoded; its data: URL is 2 MiB */
static char *big_payload;
static char *big_base64;

static int
send_to (guint port, const char *msg)
{
  g_autofree char *file = g_build_filename (dir, "msg.eml", NULL);
  return mta_postfix_send (NULL, NULL, port, file, msg);
}

static char *
maillog (void)
{
  g_autofree char *path = g_build_filename (pfdir, "log", "maillog", NULL);
  char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, NULL))
    text = g_strdup ("");
  return text;
}

/* The delivered file holding @needle, waiting up to @seconds. */
static char *
delivered (const char *needle, int seconds)
{
  char *text = mta_maildir_delivered (maildir_new, needle, seconds, NULL);
  if (text)
    return text;
  g_autofree char *log = maillog ();
  g_test_message ("maillog:\n%s", log);
  return NULL;
}

static guint
copies (const char *needle)
{
  return mta_maildir_copies (maildir_new, needle, NULL);
}


/* The default instance's main.cf, as an administrator would write it. */
static void
write_default_main_cf (const char *line)
{
  g_autofree char *path = g_build_filename (etc_postfix, "main.cf", NULL);
  g_autofree char *text = g_strdup_printf ("# the default instance (read by postdrop)\n"
                                           "compatibility_level = 3.6\n%s%s",
                                           line ? line : "", line ? "\n" : "");
  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  g_assert_cmpint (g_chmod (path, 0644), ==, 0);
}

/* The number of messages in the instance's queue. */
static guint
queued (void)
{
  g_autofree char *cmd = g_strdup_printf ("postqueue -c '%s/etc' -j", pfdir);
  g_autofree char *out = NULL;
  g_assert_cmpint (test_sh (cmd, &out), ==, 0);
  guint n = 0;
  for (const char *p = out; (p = strstr (p, "\"queue_id\"")); p++)
    n++;
  return n;
}

static char *
small_message (const char *id, const char *text)
{
  g_autofree char *escaped = g_uri_escape_string (text, NULL, FALSE);
  return g_strdup_printf (
    "From: a@test.example\r\nTo: b@test.example\r\nSubject: second instance\r\n"
    "Message-ID: <%s@test.example>\r\nMIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n\r\n"
    "--b\r\nContent-Type: message/external-body; access-type=URL; URL=\"data:,%s\"\r\n\r\n"
    "Content-Type: text/plain\r\n\r\n--b--\r\n", id, escaped);
}

/* Re-injected into this instance: its pickup took the message from the filter
 * (user nobody) and its Received field names that queue id. */
static void
assert_reinjected_here (const char *got)
{
  const char *r = strstr (got, "Received: by mx.test.example (Postfix, from userid 65534)\n\tid ");
  g_assert_nonnull (r);
  r += strlen ("Received: by mx.test.example (Postfix, from userid 65534)\n\tid ");
  g_autofree char *id = g_strndup (r, strcspn (r, ";"));
  g_assert_cmpuint (strlen (id), >, 5);
  g_autofree char *log = maillog ();
  g_autofree char *pickup = g_strdup_printf ("]: %s: uid=65534 from=<a@test.example>", id);
  g_assert_nonnull (strstr (log, pickup));
  g_assert_nonnull (g_strrstr (log, "postfix-test/pickup["));
}

/* Without the listing, postdrop refuses the instance's directory: extbody-pipe
 * exits 75, the message stays in the queue. */
static void
test_unlisted (void)
{
  g_autofree char *m = small_message ("inst-1", "Hello, second instance!");
  g_assert_cmpint (send_to (port_pipe, m), ==, 0);
  g_autofree char *want = g_strdup_printf ("postdrop: fatal: specify \"alternate_config_directories = %s/etc\" "
                                           "or \"multi_instance_directories = %s/etc\" in /etc/postfix/main.cf",
                                           pfdir, pfdir);
  gboolean seen = FALSE;
  for (int t = 0; t < 30 * 20 && !seen; t++) {
    g_autofree char *log = maillog ();
    seen = strstr (log, "relay=extbody") && strstr (log, "status=deferred") && strstr (log, want);
    if (!seen)
      g_usleep (50000);
  }
  if (!seen) {
    g_autofree char *log = maillog ();
    g_test_message ("maillog:\n%s", log);
  }
  g_assert_true (seen);
  g_assert_cmpuint (copies ("<inst-1@test.example>"), ==, 0);
  g_assert_cmpuint (queued (), ==, 1);
}

/* postmulti's way: multi_instance_directories in the default main.cf. The
 * deferred message goes out on the next queue run, resolved, once. */
static void
test_multi_instance_directories (void)
{
  g_autofree char *line = g_strdup_printf ("multi_instance_directories = %s/etc", pfdir);
  write_default_main_cf (line);
  g_autofree char *flush = g_strdup_printf ("postqueue -c '%s/etc' -f", pfdir);
  g_assert_cmpint (test_sh (flush, NULL), ==, 0);
  g_autofree char *got = delivered ("<inst-1@test.example>", 30);
  g_assert_nonnull (got);
  g_test_message ("%s", got);
  g_assert_nonnull (strstr (got, "\n\nHello, second instance!\n"));
  g_assert_null (strstr (got, "external-body;"));
  assert_reinjected_here (got);
  g_usleep (G_USEC_PER_SEC);
  g_assert_cmpuint (copies ("<inst-1@test.example>"), ==, 1);
  g_assert_cmpuint (queued (), ==, 0);
}

/* An instance set up by hand: alternate_config_directories. */
static void
test_alternate_config_directories (void)
{
  g_autofree char *line = g_strdup_printf ("alternate_config_directories = %s/etc", pfdir);
  write_default_main_cf (line);
  g_autofree char *m = small_message ("inst-2", "Hello again!");
  g_assert_cmpint (send_to (port_pipe, m), ==, 0);
  g_autofree char *got = delivered ("<inst-2@test.example>", 30);
  g_assert_nonnull (got);
  g_assert_nonnull (strstr (got, "\n\nHello again!\n"));
  assert_reinjected_here (got);
  g_usleep (G_USEC_PER_SEC);
  g_assert_cmpuint (copies ("<inst-2@test.example>"), ==, 1);
}

/* The message with a 2 MiB data: URL in a MIME part header, Message-ID <@id>. */
static char *
big (const char *id)
{
  GString *m = g_string_new (NULL);
  g_string_append_printf (m, "From: a@test.example\r\nTo: b@test.example\r\nSubject: a large part header\r\n"
                             "Message-ID: <%s@test.example>\r\nMIME-Version: 1.0\r\n"
                             "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
                             "Content-Type: message/external-body; access-type=URL;\r\n\tURL=\"", id);
  g_autofree char *url = g_strconcat ("data:text/plain;base64,", big_base64, NULL);
  for (gsize i = 0, n = strlen (url); i < n; i += 70) {
    if (i > 0)
      g_string_append (m, "\r\n\t");
    g_string_append_len (m, url + i, (gssize) MIN ((gsize) 70, n - i));
  }
  g_string_append (m, "\"\r\n\r\nContent-Type: text/plain\r\n\r\n--b--\r\n");
  return g_string_free (m, FALSE);
}

/* With the milter, cleanup cuts the part header at 60000 bytes although
 * header_size_limit is 4 MiB: the URL arrives cut, the reference unresolved. */
static void
test_part_header_milter_cut (void)
{
  g_autofree char *hsl = NULL;
  g_autofree char *cmd = g_strdup_printf ("postconf -c '%s/etc' -h header_size_limit", pfdir);
  g_assert_cmpint (test_sh (cmd, &hsl), ==, 0);
  g_assert_cmpstr (g_strstrip (hsl), ==, "4194304");
  g_autofree char *m = big ("big-milter");
  g_assert_cmpint (send_to (port_milter, m), ==, 0);
  g_autofree char *got = delivered ("<big-milter@test.example>", 60);
  g_assert_nonnull (got);
  const char *field = strstr (got, "\nContent-Type: message/external-body; access-type=URL;\n");
  g_assert_nonnull (field);
  field++;
  const char *end = strstr (field, "\n\n");
  g_assert_nonnull (end);
  gsize len = (gsize) (end - field);
  const char *sent = strstr (m, "Content-Type: message/external-body");
  g_test_message ("the part header arrived with %" G_GSIZE_FORMAT " bytes; %" G_GSIZE_FORMAT " were sent",
                  len, (gsize) (strstr (sent, "\r\n\r\n") - sent));
  g_assert_cmpuint (len, >=, 59000);
  g_assert_cmpuint (len, <=, 61000);
  /* cut short: the quoted URL never closes, so extbody left it */
  g_assert_null (memchr (field + strlen ("Content-Type: message/external-body; access-type=URL;\n\tURL=\""), '"',
                         len - strlen ("Content-Type: message/external-body; access-type=URL;\n\tURL=\"")));
  g_assert_null (strstr (got, "X-Extbody: resolved"));
  g_assert_null (strstr (got, "line 0000000 of the big data"));
  /* and the rest of the message is there */
  g_assert_nonnull (strstr (end, "\n\nContent-Type: text/plain\n\n--b--\n"));
}

static void
assert_payload (const char *got)
{
  g_assert_nonnull (strstr (got, "X-Extbody-Resolved: access-type=URL; scheme=data; type=\"text/plain\""));
  const char *body = strstr (got, "\n\nline 0000000 of the big data");
  g_assert_nonnull (body);
  g_assert_true (strncmp (body + 2, big_payload, PAYLOAD_BYTES) == 0);
  g_assert_cmpstr (body + 2 + PAYLOAD_BYTES, ==, "\n--b--\n");
}

/* The milter's own cleanup service with disable_mime_input_processing = yes:
 * the part header reaches the milter whole, as body. */
static void
test_part_header_milter_nomime (void)
{
  g_autofree char *m = big ("big-nomime");
  g_assert_cmpint (send_to (port_nomime, m), ==, 0);
  g_autofree char *got = delivered ("<big-nomime@test.example>", 60);
  g_assert_nonnull (got);
  g_assert_nonnull (strstr (got, "X-Extbody: resolved 1 of 1 external-body reference\n"));
  assert_payload (got);
}

/* The pipe filter, no milter in its path, header_size_limit = 4 MiB. */
static void
test_part_header_pipe (void)
{
  g_autofree char *m = big ("big-pipe");
  g_assert_cmpint (send_to (port_pipe, m), ==, 0);
  g_autofree char *got = delivered ("<big-pipe@test.example>", 60);
  g_assert_nonnull (got);
  assert_reinjected_here (got);
  assert_payload (got);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  mta_postfix_require ("EXTBODYD", "EXTBODY", NULL);
  if (test_sh ("unshare --mount --propagation private true >/dev/null 2>&1", NULL) != 0)
    test_skip_all ("unshare --mount does not work here (a private /etc/postfix is needed)");

  guint wd_dir = 0;
  dir = mta_dir_make ("pfi", &wd_dir);
  pfdir = g_build_filename (dir, "pf", NULL);
  maildir_new = mta_postfix_maildir_new (pfdir);

  /* the payload: lines a reader can check */
  GString *p = g_string_new (NULL);
  for (guint i = 0; p->len < PAYLOAD_BYTES; i++)
    g_string_append_printf (p, "line %07u of the big data: url body\n", i);
  g_string_truncate (p, PAYLOAD_BYTES);
  big_payload = g_string_free (p, FALSE);
  big_base64 = g_base64_encode ((const guchar *) big_payload, PAYLOAD_BYTES);

  /* the milter */
  g_autofree char *sock = g_build_filename (dir, "milter.sock", NULL);
  g_autofree char *conf = g_build_filename (dir, "milter.conf", NULL);
  /* Postfix's smtpd (user postfix) connects to a socket made by root */
  g_assert_true (g_file_set_contents (conf, "milter_umask = 000\n", -1, NULL));
  g_autofree char *spec = g_strdup_printf ("unix:%s", sock);
  MtaMilter *milter = mta_milter_start (sock, conf, NULL, NULL);

  /* what pipe(8) runs as nobody: copies everyone can read (see test-postfix.c) */
  g_autofree char *run = mta_dir_public (dir, "pipe-run");
  g_autofree char *pipe_src = g_test_build_filename (G_TEST_DIST, "..", "filters", "pipe", "extbody-pipe", NULL);
  g_autofree char *pipe = test_copy_for_everyone (pipe_src, run, NULL, 0755);
  g_autofree char *extbody = test_copy_for_everyone (g_getenv ("EXTBODY"), run, NULL, 0755);
  g_autofree char *pipe_conf = g_build_filename (run, "pipe.conf", NULL);
  g_assert_true (g_file_set_contents (pipe_conf, "[extbody]\nfetch = off\n", -1, NULL));
  g_chmod (pipe_conf, 0644);

  /* /etc/postfix inside the namespace: the system's files, a main.cf of our own */
  etc_postfix = g_build_filename (dir, "etc-postfix", NULL);
  g_autofree char *copy = g_strdup_printf ("cp -a /etc/postfix/. '%s/' && rm -f '%s/main.cf'", etc_postfix, etc_postfix);
  g_assert_cmpint (g_mkdir (etc_postfix, 0755), ==, 0);
  g_assert_cmpint (test_sh (copy, NULL), ==, 0);
  write_default_main_cf (NULL);

  port_milter = test_free_port ();
  port_nomime = test_free_port ();
  g_autofree char *peer = mta_postfix_script ("pf-peer.sh");
  g_autofree char *stop = g_strdup_printf ("postfix -c '%s/etc' stop", pfdir);
  guint wd_pf = test_watchdog_add (stop);
  /* Up in the namespace, then as filters/README.md and filters/pipe/README.md
   * say: the pipe filter behind the first smtpd, re-injection through pickup,
   * header_size_limit raised for it; the milter behind two more smtpd, each with
   * a cleanup service of its own (so the default cleanup never serves milter
   * mail), one of them with disable_mime_input_processing = yes. */
  g_autofree char *up = g_strdup_printf (
    "set -e\n"
    "mount --bind '%s' /etc/postfix\n"
    "sh '%s' up '%s' \"$1\" '' tempfail\n"
    "postconf -c '%s/etc' -e header_size_limit=4194304\n"
    "sed -i \"s|^127.0.0.1:$1 inet n - n - - smtpd\\$|& -o content_filter=extbody:dummy|\" '%s/etc/master.cf'\n"
    "sh '%s' service '%s' 'pickup unix n - n 60 1 pickup' "
    "'extbody unix - n n - 10 pipe flags=Rq user=nobody null_sender= "
    "argv=%s -c %s -e %s -f ${sender} -- ${recipient}' "
    "'127.0.0.1:%u inet n - n - - smtpd -o smtpd_milters=%s -o cleanup_service_name=cleanup-milter-mime' "
    "'cleanup-milter-mime unix n - n - 0 cleanup' "
    "'127.0.0.1:%u inet n - n - - smtpd -o smtpd_milters=%s -o cleanup_service_name=cleanup-milter' "
    "'cleanup-milter unix n - n - 0 cleanup -o disable_mime_input_processing=yes'\n",
    etc_postfix, peer, pfdir, pfdir, pfdir, peer, pfdir, pipe, pipe_conf, extbody,
    port_milter, spec, port_nomime, spec);
  g_autofree char *up_script = g_build_filename (dir, "up.sh", NULL);
  g_assert_true (g_file_set_contents (up_script, up, -1, NULL));
  /* $1: the first smtpd's port, another when it was taken (pf-peer.sh exit 75) */
  g_autofree char *unshare = g_strdup_printf ("unshare --mount --propagation private sh '%s' {PORT}", up_script);
  g_free (test_sh_on_free_port (unshare, &port_pipe, NULL));
  g_usleep (G_USEC_PER_SEC);   /* the reload is asynchronous */
  {
    g_autofree char *pidfile = g_build_filename (pfdir, "spool", "pid", "master.pid", NULL);
    g_autofree char *master = NULL;
    g_file_get_contents (pidfile, &master, NULL, NULL);
    g_assert_nonnull (master);
    /* the instance sees the private /etc/postfix; this process, the system's */
    g_autofree char *ns = g_strdup_printf ("/proc/%d/ns/mnt", atoi (master));
    g_autofree char *theirs = g_file_read_link (ns, NULL);
    g_autofree char *ours = g_file_read_link ("/proc/self/ns/mnt", NULL);
    g_assert_nonnull (theirs);
    g_assert_cmpstr (theirs, !=, ours);
    g_autofree char *info = g_strdup_printf ("master=%d milter=%s smtp=%u", atoi (master),
                                             g_subprocess_get_identifier (milter->proc), port_pipe);
    test_abort_point ("postfix", info);
  }

  g_test_add_func ("/postfix-instance/1-unlisted-directory-deferred", test_unlisted);
  g_test_add_func ("/postfix-instance/2-multi-instance-directories", test_multi_instance_directories);
  g_test_add_func ("/postfix-instance/3-alternate-config-directories", test_alternate_config_directories);
  g_test_add_func ("/postfix-instance/4-part-header-milter-cut-at-60000", test_part_header_milter_cut);
  g_test_add_func ("/postfix-instance/5-part-header-milter-no-mime-processing", test_part_header_milter_nomime);
  g_test_add_func ("/postfix-instance/6-part-header-pipe-filter", test_part_header_pipe);
  int rc = g_test_run ();

  mta_postfix_down (pfdir, wd_pf);
  mta_milter_stop (milter, FALSE);
  mta_milter_free (milter);
  mta_dir_remove (dir, wd_dir);
  g_free (big_payload);
  g_free (big_base64);
  return rc;
}
