/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-corpus-fetch.c - real messages of tests/corpus resolved end to end,
 * without the network: the program runs in a mount and network namespace of
 * its own (unshare --mount --net), where the loopback interface is the only
 * one, /etc/hosts (bind-mounted) names each message's anon-ftp site as
 * 127.0.0.1, and the tests' FTP server (tests/servers/ftpd.py) listens on
 * 127.0.0.1:21 serving a stand-in file at each reference's directory and
 * name. extbody runs with fetch on and allow_networks 127.0.0.1/32, exactly as
 * a site would run it, and must fetch over the reference's own host, port and
 * path: a message is rewritten only when the anon-ftp parameters were read
 * right, and the expected files show "resolved".
 *
 * Checked for each message: the --report lines and the whole rewritten
 * message against tests/corpus/expected/NAME.fetch.report and NAME.fetch.out
 * (every byte outside the replaced part is the input's), and, parsed back with
 * GMime, the new part: the inner header's type and Content-ID, the stand-in's
 * bytes as its content, no external-body left where it was. The expectations
 * with fetching off (tests/integration/test-corpus.c) stay as they are.
 *
 * Without root, unshare or ip (or where a namespace cannot be made) the whole
 * program is skipped (exit 77). EXTBODY_REGENERATE=1 rewrites the expected
 * files instead of checking them. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <glib/gstdio.h>
#include "eb-gmime.h"
#include "run-command.h"
#include "test-server.h"

#define INSIDE_ENV "EB_CORPUS_FETCH_INSIDE"   /* set in the namespace: the directory made outside */

typedef struct {
  const char *message;   /* in tests/corpus */
  const char *site;      /* the anon-ftp site, named 127.0.0.1 in /etc/hosts */
  const char *path;      /* directory/name on the server */
  const char *type;      /* the inner header's Content-Type */
  const char *content_id;
  const char *part;      /* the part path of the reference */
} Case;

static const Case cases[] = {
  { "ietf-mailarchive-2008-i-d-announce-anon-ftp.eml", "ftp.ietf.org",
    "internet-drafts/draft-ietf-ancp-framework-06.txt", "text/plain", "2008-05-09085530.I-D@ietf.org", "2" },
  /* the anon-ftp alternative of a multipart/alternative whose first
   * alternative (mail-server) is left */
  { "cpython-msg36-ietf-1998-mail-server-and-anon-ftp-alternatives.eml", "ftp.ietf.org",
    "internet-drafts/draft-ietf-mboned-mix-00.txt", "text/plain", "19981222151406.I-D@ietf.org", "2.2" },
  /* upper-case parameter names and values, unquoted access-type; no inner
   * header at all (the Content-ID is on the outer one, and kept): FTP names
   * no type either, so the new part is application/octet-stream, base64 */
  { "flanker-httpd-dev-1997-forwarded-ietf-draft-anon-ftp.eml", "ds.internic.net",
    "internet-drafts/draft-ietf-http-authentication-00.txt", "application/octet-stream",
    "Pine.BSF.3.95.971201104619.22475G@alive.znep.com", "2.2" },
};

/* What the server sends for @c: a stand-in, not the real draft. */
static char *
stand_in (const Case *c)
{
  return g_strdup_printf ("Stand-in for ftp://%s/%s, served on 127.0.0.1 by extbody's tests.\n"
                          "The real file is not copied here.\n", c->site, c->path);
}

static const char *workdir;   /* made outside the namespace: hosts, the FTP root */
static TestServer *ftpd;

static void
check_or_write (const char *path, GBytes *got)
{
  if (g_getenv ("EXTBODY_REGENERATE")) {
    g_autoptr (GError) e = NULL;
    g_file_set_contents (path, g_bytes_get_data (got, NULL), (gssize) g_bytes_get_size (got), &e);
    g_assert_no_error (e);
    return;
  }
  g_autoptr (GBytes) want = file_bytes (path);
  if (!g_bytes_equal (want, got)) {
    g_autofree char *w = bytes_str (want), *g = bytes_str (got);
    g_test_message ("%s differs:\n--- expected\n%s\n--- got\n%s", path, w, g);
  }
  g_assert_true (g_bytes_equal (want, got));
}

/* The part at the 1-based dotted @path below @obj ("2.1": the first part of
 * the second part), going into message/rfc822 parts' messages. */
static GMimeObject *
part_at (GMimeObject *obj, const char *path)
{
  g_auto (GStrv) steps = g_strsplit (path, ".", -1);
  for (guint i = 0; steps[i] && obj; i++) {
    while (GMIME_IS_MESSAGE_PART (obj))
      obj = (GMimeObject *) g_mime_message_get_mime_part (g_mime_message_part_get_message ((GMimeMessagePart *) obj));
    g_assert_true (GMIME_IS_MULTIPART (obj));
    int k = atoi (steps[i]) - 1;
    g_assert_cmpint (k, >=, 0);
    g_assert_cmpint (k, <, g_mime_multipart_get_count ((GMimeMultipart *) obj));
    obj = g_mime_multipart_get_part ((GMimeMultipart *) obj, k);
  }
  return obj;
}

static void
test_resolves (gconstpointer data)
{
  const Case *c = data;
  g_autofree char *dir = g_test_build_filename (G_TEST_DIST, "corpus", NULL);
  g_autofree char *input_path = g_build_filename (dir, c->message, NULL);
  g_autoptr (GBytes) input = file_bytes (input_path);

  /* the site resolves to 127.0.0.1 here, and only here */
  g_autoptr (GResolver) resolver = g_resolver_get_default ();
  g_autoptr (GError) error = NULL;
  GList *addrs = g_resolver_lookup_by_name (resolver, c->site, NULL, &error);
  g_assert_no_error (error);
  g_autofree char *first = g_inet_address_to_string (addrs->data);
  g_resolver_free_addresses (addrs);
  g_assert_cmpstr (first, ==, "127.0.0.1");

  g_autofree char *empty_conf = g_build_filename (workdir, "empty.conf", NULL);
  g_auto (CmdResult) w = { 0 };
  run_extbody_in (&w, dir, NULL,
                  (const char *const[]) { "rewrite", "-c", empty_conf, "--fetch", "--allow-network", "127.0.0.1/32",
                                          "--report", c->message, NULL });
  g_autofree char *err = bytes_str (w.err);
  g_test_message ("report:\n%s", err);
  g_assert_cmpint (w.status, ==, 0);
  g_autofree char *report = g_strdup_printf ("%s/expected/%s.fetch.report", dir, c->message);
  check_or_write (report, w.err);
  g_autofree char *outpath = g_strdup_printf ("%s/expected/%s.fetch.out", dir, c->message);
  check_or_write (outpath, w.out);

  /* what the expected files claim, checked here too */
  g_autofree char *line = g_strdup_printf ("extbody: part %s: access-type=anon-ftp ", c->part);
  g_assert_nonnull (strstr (err, line));
  g_assert_nonnull (strstr (err, ": resolved ("));
  g_assert_false (g_bytes_equal (w.out, input));

  /* the new part, parsed back */
  g_autoptr (GMimeStream) s = g_mime_stream_mem_new_with_buffer (g_bytes_get_data (w.out, NULL),
                                                                  g_bytes_get_size (w.out));
  g_autoptr (GMimeParser) p = g_mime_parser_new_with_stream (s);
  g_autoptr (GMimeMessage) m = g_mime_parser_construct_message (p, NULL);
  g_assert_nonnull (m);
  GMimeObject *part = part_at (g_mime_message_get_mime_part (m), c->part);
  g_assert_true (GMIME_IS_PART (part));
  g_autofree char *type = g_mime_content_type_get_mime_type (g_mime_object_get_content_type (part));
  g_assert_cmpstr (type, ==, c->type);
  g_assert_cmpstr (g_mime_object_get_content_id (part), ==, c->content_id);
  g_assert_nonnull (g_mime_object_get_header (part, "X-Extbody-Resolved"));
  g_autofree char *url = g_strdup_printf ("ftp://%s/", c->site);
  g_assert_nonnull (strstr (g_mime_object_get_header (part, "X-Extbody-Resolved"), url));
  GMimeDataWrapper *content = g_mime_part_get_content ((GMimePart *) part);
  g_autoptr (GMimeStream) decoded = g_mime_stream_mem_new ();
  g_mime_data_wrapper_write_to_stream (content, decoded);
  GByteArray *bytes = g_mime_stream_mem_get_byte_array ((GMimeStreamMem *) decoded);
  g_autofree char *want = stand_in (c);
  g_assert_cmpmem (bytes->data, bytes->len, want, strlen (want));
}

/* Outside: make the files, then run this same program again inside a new
 * mount and network namespace (the same process: unshare and sh exec). */
static void
enter_namespace (char **argv)
{
  g_autofree char *unshare = g_find_program_in_path ("unshare");
  g_autofree char *ip = g_find_program_in_path ("ip");
  int probe = -1;
  const char *why = NULL;
  if (geteuid () != 0)
    why = "needs root for a private mount and network namespace";
  else if (!unshare || !ip)
    why = "needs unshare and ip (util-linux, iproute2)";
  else if (!g_spawn_sync (NULL, (char *[]) { unshare, "--mount", "--net", "/bin/true", NULL }, NULL,
                          G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL, NULL, &probe, NULL)
           || !WIFEXITED (probe) || WEXITSTATUS (probe) != 0)
    why = "a private mount and network namespace cannot be made here";
  if (why) {
    /* exit() runs no cleanup: what is held is given back first, or
     * LeakSanitizer fails the skip */
    g_clear_pointer (&unshare, g_free);
    g_clear_pointer (&ip, g_free);
    test_skip_all (why);
  }

  g_autoptr (GError) e = NULL;
  g_autofree char *dir = g_dir_make_tmp ("extbody-corpus-fetch-XXXXXX", &e);
  g_assert_no_error (e);
  GString *hosts = g_string_new ("127.0.0.1\tlocalhost\n");
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_string_append_printf (hosts, "127.0.0.1\t%s\n", cases[i].site);
    g_autofree char *file = g_build_filename (dir, "ftp", cases[i].path, NULL);
    g_autofree char *parent = g_path_get_dirname (file);
    g_assert_cmpint (g_mkdir_with_parents (parent, 0755), ==, 0);
    g_autofree char *body = stand_in (&cases[i]);
    g_assert_true (g_file_set_contents (file, body, -1, &e));
  }
  g_autofree char *hosts_path = g_build_filename (dir, "hosts", NULL);
  g_assert_true (g_file_set_contents (hosts_path, hosts->str, -1, &e));
  g_string_free (hosts, TRUE);
  g_autofree char *conf = g_build_filename (dir, "empty.conf", NULL);
  g_assert_true (g_file_set_contents (conf, "", 0, &e));
  g_autofree char *self = g_file_read_link ("/proc/self/exe", &e);
  g_assert_no_error (e);

  g_autoptr (GPtrArray) args = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (args, g_strdup (unshare));
  g_ptr_array_add (args, g_strdup ("--mount"));
  g_ptr_array_add (args, g_strdup ("--net"));
  g_ptr_array_add (args, g_strdup ("/bin/sh"));
  g_ptr_array_add (args, g_strdup ("-c"));
  /* $0 is this program, $1 the directory, the rest its arguments */
  g_ptr_array_add (args, g_strdup ("ip link set lo up && mount --bind \"$1/hosts\" /etc/hosts "
                                   "|| { echo 'SKIP: the namespace could not be set up'; rm -rf \"$1\"; exit 77; }; "
                                   "d=$1; shift; exec env " INSIDE_ENV "=\"$d\" \"$0\" \"$@\""));
  g_ptr_array_add (args, g_strdup (self));
  g_ptr_array_add (args, g_strdup (dir));
  for (guint i = 1; argv[i]; i++)
    g_ptr_array_add (args, g_strdup (argv[i]));
  g_ptr_array_add (args, NULL);
  fflush (stdout);
  execv (unshare, (char **) args->pdata);
  g_printerr ("cannot run %s: %s\n", unshare, g_strerror (errno));
  exit (1);
}

static void
rm_rf (const char *path)
{
  g_autoptr (GDir) d = g_dir_open (path, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name (d))) {
    g_autofree char *p = g_build_filename (path, n, NULL);
    if (g_file_test (p, G_FILE_TEST_IS_DIR) && !g_file_test (p, G_FILE_TEST_IS_SYMLINK))
      rm_rf (p);
    else
      g_unlink (p);
  }
  g_rmdir (path);
}

int
main (int argc, char **argv)
{
  workdir = g_getenv (INSIDE_ENV);
  if (!workdir)
    enter_namespace (argv);
  g_mime_init ();
  g_test_init (&argc, &argv, NULL);
  g_autofree char *clean = g_strdup_printf ("rm -rf '%s'", workdir);
  guint cleaner = test_watchdog_add (clean);   /* the directory goes however the test ends */
  g_autofree char *root = g_build_filename (workdir, "ftp", NULL);
  g_autoptr (GError) e = NULL;
  ftpd = test_server_start ("ftpd.py", (const char *[]) { root, "--port", "21", NULL }, NULL, TRUE, &e);
  g_assert_no_error (e);
  g_assert_cmpuint (ftpd->port, ==, 21);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *path = g_strdup_printf ("/corpus-fetch/%s", cases[i].message);
    g_test_add_data_func (path, &cases[i], test_resolves);
  }
  int status = g_test_run ();
  g_clear_pointer (&ftpd, test_server_stop);
  rm_rf (workdir);
  test_watchdog_remove (cleaner);
  g_mime_shutdown ();
  return status;
}
