/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-valgrind.c - the extbody command under valgrind memcheck over the test
 * messages: every corpus message and sample inspected (JSON and table), all of
 * them rewritten as one mbox by two worker threads, single messages rewritten
 * to standard output, data: URLs decoded, and references fetched over HTTP
 * from the test server on loopback. Each run must end with no memcheck error
 * and no definitely lost block (valgrind's exit code says so), and do its job:
 * the outputs are checked too. Registered in the normal build only (valgrind
 * cannot run an AddressSanitizer build). */
#include <glib/gstdio.h>
#include "run-command.h"
#include "test-server.h"

static char *empty_conf;

/* Run extbody under valgrind with @args; the exit status is extbody's own, or
 * 99 when memcheck found an error or a definite leak. */
static void
run_memcheck (CmdResult *r, GBytes *input, const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  const char *vg[] = { "--quiet", "--error-exitcode=99", "--leak-check=full",
                       "--errors-for-leak-kinds=definite", "--show-leak-kinds=definite",
                       "--track-fds=no", "--child-silent-after-fork=yes", NULL };
  g_ptr_array_add (argv, (gpointer) g_getenv ("VALGRIND"));
  for (guint i = 0; vg[i]; i++)
    g_ptr_array_add (argv, (gpointer) vg[i]);
  g_ptr_array_add (argv, (gpointer) extbody_path ());
  g_ptr_array_add (argv, (gpointer) args[0]);   /* the command, then its options */
  if (strcmp (args[0], "data-url") != 0) {   /* data-url reads no configuration */
    g_ptr_array_add (argv, "-c");
    g_ptr_array_add (argv, empty_conf);
  }
  for (guint i = 1; args[i]; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (
    G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE | (input ? G_SUBPROCESS_FLAGS_STDIN_PIPE : 0));
  /* GLib's slice allocator would hide blocks from memcheck */
  g_subprocess_launcher_setenv (l, "G_SLICE", "always-malloc", TRUE);
  g_autoptr (GSubprocess) p = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, &error);
  g_assert_no_error (error);
  g_subprocess_communicate (p, input, NULL, &r->out, &r->err, &error);
  g_assert_no_error (error);
  r->status = g_subprocess_get_if_exited (p) ? g_subprocess_get_exit_status (p) : -1;
  if (r->status == 99 || r->status == -1) {
    gsize n;
    const char *e = g_bytes_get_data (r->err, &n);
    g_printerr ("%.*s", (int) n, e);
  }
}

#define MEMCHECK(r, input, ...) run_memcheck ((r), (input), (const char *const[]) { __VA_ARGS__, NULL })

/* Every test message: the .eml files of tests/corpus and data/samples. */
static GPtrArray *
messages (void)
{
  GPtrArray *a = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *corpus = g_test_build_filename (G_TEST_DIST, "corpus", NULL);
  g_autofree char *samples = g_build_filename (g_getenv ("EXTBODY_DATADIR"), "samples", NULL);
  const char *dirs[] = { corpus, samples };
  for (guint i = 0; i < G_N_ELEMENTS (dirs); i++) {
    g_autoptr (GDir) d = g_dir_open (dirs[i], 0, NULL);
    g_assert_nonnull (d);
    const char *n;
    while ((n = g_dir_read_name (d)))
      if (g_str_has_suffix (n, ".eml"))
        g_ptr_array_add (a, g_build_filename (dirs[i], n, NULL));
  }
  g_assert_cmpuint (a->len, >=, 10);
  return a;
}

static void
test_inspect (void)
{
  g_autoptr (GPtrArray) m = messages ();
  for (int json = 0; json < 2; json++) {
    g_autoptr (GPtrArray) args = g_ptr_array_new ();
    g_ptr_array_add (args, "inspect");
    g_ptr_array_add (args, "-o");
    g_ptr_array_add (args, "fetch=off");
    if (json)
      g_ptr_array_add (args, "--json");
    for (guint i = 0; i < m->len; i++)
      g_ptr_array_add (args, m->pdata[i]);
    g_ptr_array_add (args, NULL);
    g_auto (CmdResult) r = { 0 };
    run_memcheck (&r, NULL, (const char *const *) args->pdata);
    g_assert_cmpint (r.status, ==, 0);
    g_assert_cmpuint (g_bytes_get_size (r.out), >, 100);
  }
}

/* All messages as one mbox, rewritten in place by two threads. */
static void
test_rewrite_mbox (void)
{
  g_autoptr (GPtrArray) m = messages ();
  g_autoptr (GString) mbox = g_string_new (NULL);
  for (guint i = 0; i < m->len; i++) {
    g_autofree char *data = NULL;
    gsize len;
    g_assert_true (g_file_get_contents (m->pdata[i], &data, &len, NULL));
    g_string_append (mbox, "From test@example.org Sun Nov 22 10:00:00 2026\n");
    /* mboxrd quoting of body lines starting with From */
    g_auto (GStrv) lines = g_strsplit (data, "\n", -1);
    for (guint k = 0; lines[k]; k++) {
      if (!lines[k + 1] && !*lines[k])
        break;
      const char *p = lines[k];
      while (*p == '>')
        p++;
      if (g_str_has_prefix (p, "From "))
        g_string_append_c (mbox, '>');
      g_string_append (mbox, lines[k]);
      g_string_append_c (mbox, '\n');
    }
    g_string_append_c (mbox, '\n');
  }
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("extbody-valgrind-XXXXXX", &error);
  g_assert_no_error (error);
  g_autofree char *path = g_build_filename (dir, "mbox", NULL);
  g_assert_true (g_file_set_contents (path, mbox->str, mbox->len, NULL));
  g_auto (CmdResult) r = { 0 };
  MEMCHECK (&r, NULL, "rewrite", "-o", "fetch=off", "-j", "2", "--mbox", path);
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *after = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (path, &after, &len, NULL));
  /* the samples hold data: references, so the mailbox changed */
  g_assert_false (len == mbox->len && memcmp (after, mbox->str, len) == 0);
  g_unlink (path);
  g_rmdir (dir);
}

static void
test_rewrite_one (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("EXTBODY_DATADIR"), "samples", "references.eml", NULL);
  g_autofree char *data = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (path, &data, &len, NULL));
  g_autoptr (GBytes) in = g_bytes_new (data, len);
  g_auto (CmdResult) r = { 0 };
  MEMCHECK (&r, in, "rewrite", "-o", "fetch=off", "--report");
  g_assert_cmpint (r.status, ==, 0);
  g_assert_false (g_bytes_equal (r.out, in));
  /* a message that does not parse as anything flows through unchanged */
  g_autoptr (GBytes) junk = g_bytes_new_static ("\0\1\2 not mail\r\r\n--", 18);
  g_auto (CmdResult) r2 = { 0 };
  MEMCHECK (&r2, junk, "rewrite");
  g_assert_cmpint (r2.status, ==, 0);
  g_assert_true (g_bytes_equal (r2.out, junk));
}

static void
test_data_url (void)
{
  g_auto (CmdResult) r = { 0 };
  MEMCHECK (&r, NULL, "data-url", "data:text/plain;charset=utf-8;base64,aGVs%20bG8=");
  g_assert_cmpint (r.status, ==, 0);
  g_auto (CmdResult) r2 = { 0 };
  MEMCHECK (&r2, NULL, "data-url", "data:text/plain;base64,a");
  g_assert_cmpint (r2.status, !=, 0);
  g_assert_cmpint (r2.status, !=, 99);
}

/* Fetching: libcurl's multi interface, the policy callback, redirects, the
 * byte limit and a refused address, against tests/servers/httpd.py. */
static void
test_fetch (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TestServer) srv = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);
  guint port = srv->port;

  g_autoptr (GString) msg = g_string_new ("From: a@example.org\nMIME-Version: 1.0\n"
                                          "Content-Type: multipart/mixed; boundary=b\n\n");
  const char *paths[] = { "/text", "/chain/2", "/big?n=5000", "/status/404", "/bin?n=300" };
  for (guint i = 0; i < G_N_ELEMENTS (paths); i++)
    g_string_append_printf (msg, "--b\nContent-Type: message/external-body; access-type=URL;\n"
                                 " URL=\"http://127.0.0.1:%u%s\"\n\nContent-Type: %s\n\n",
                            port, paths[i], i == 4 ? "application/octet-stream" : "text/plain");
  g_string_append (msg, "--b\nContent-Type: message/external-body; access-type=URL;\n"
                        " URL=\"http://127.0.0.2:1/text\"\n\nContent-Type: text/plain\n\n--b--\n");
  g_autoptr (GBytes) input = g_bytes_new (msg->str, msg->len);
  g_auto (CmdResult) r = { 0 };
  g_autofree char *port_s = g_strdup_printf ("allow_ports=%u", port);
  MEMCHECK (&r, input, "rewrite", "--report", "--fetch", "--allow-network", "127.0.0.1/32", "-o", port_s,
            "-o", "max_part_bytes=4000");
  g_assert_cmpint (r.status, ==, 0);
  gsize n;
  const char *out = g_bytes_get_data (r.out, &n);
  g_autofree char *o = g_strndup (out, n);
  g_assert_nonnull (strstr (o, "hello from the test server"));
  g_autofree char *err = g_strndup (g_bytes_get_data (r.err, NULL), g_bytes_get_size (r.err));
  g_test_message ("%s", err);
  const char *want[] = { "part 1: access-type=url http://127.0.0.1:%u/text: resolved",
                         "part 2: access-type=url http://127.0.0.1:%u/chain/2: resolved",
                         "part 3: access-type=url http://127.0.0.1:%u/big?n=5000: left: part-too-large",
                         "part 4: access-type=url http://127.0.0.1:%u/status/404: left: http-status",
                         "part 5: access-type=url http://127.0.0.1:%u/bin?n=300: resolved",
                         "part 6: access-type=url http://127.0.0.2:1/text: left: refused-address" };
  for (guint i = 0; i < G_N_ELEMENTS (want); i++) {
    g_autofree char *w = g_strdup_printf (want[i], port);
    g_assert_nonnull (strstr (err, w));
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("extbody-valgrind-conf-XXXXXX", &error);
  g_assert_no_error (error);
  empty_conf = g_build_filename (dir, "empty.conf", NULL);
  g_assert_true (g_file_set_contents (empty_conf, "", 0, NULL));
  g_test_add_func ("/valgrind/inspect", test_inspect);
  g_test_add_func ("/valgrind/rewrite-mbox", test_rewrite_mbox);
  g_test_add_func ("/valgrind/rewrite-one", test_rewrite_one);
  g_test_add_func ("/valgrind/data-url", test_data_url);
  g_test_add_func ("/valgrind/fetch", test_fetch);
  int status = g_test_run ();
  g_unlink (empty_conf);
  g_rmdir (dir);
  g_free (empty_conf);
  return status;
}
