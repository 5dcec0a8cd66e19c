/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-fetch-memory.c - the memory one message takes while its fetches run
 * together (issue 25, item 3), measured on the command against a private nginx
 * on 127.0.0.1.
 *
 * A message with N references to bodies of the same size, of which only two
 * fit in max_message_bytes, is rewritten by `extbody rewrite --fetch --report`
 * for N = 2 and N = 32; the peak RSS (wait4's ru_maxrss) of the 32-reference
 * run stays within MARGIN_KIB of the 2-reference run's, whatever the number of
 * references and however their fetches interleave; both stay within
 * max_message_bytes plus MARGIN_KIB of the same command's peak on the same
 * message without fetching. The references that resolve are the first two, in
 * every run (earlier references first, as read one after another); every
 * other one is left with the one reason message-budget, and the output holds
 * exactly the first two bodies. Two shapes: the (3.5 MiB bodies,
 * max_part_bytes 4M, max_message_bytes 8M, distinct files) and larger bodies
 * (15 MiB, 16M and 32M, one file under 32 URLs), where the malloc heap's
 * growth showed most before the bodies had mappings of their own. The server
 * sends a Content-Length, and, once more for the shape, a chunked
 * response (nginx's SSI filter on: the size is unknown until the end). Last,
 * access-type=local-file references to one 3.5 MiB file (local_file_dirs), which
 * were all read before any was resolved: each is read when its turn comes,
 * within what max_message_bytes leaves (the baseline: local_file_dirs empty).
 * The AddressSanitizer build checks all but the memory. Skipped (exit 77)
 * without nginx. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "test-server.h"

/* what the process may hold beyond the bodies max_message_bytes counts */
#define MARGIN_KIB 4096

/* AddressSanitizer keeps freed memory in quarantine: resident memory says
 * nothing about what the program holds there. Its build checks the rest
 * (which references resolve, the output); the normal build measures. */
#if defined(__SANITIZE_ADDRESS__)
#define MEASURE_RSS FALSE
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEASURE_RSS FALSE
#endif
#endif
#ifndef MEASURE_RSS
#define MEASURE_RSS TRUE
#endif

static char *dir;
static char *conf;

typedef struct {
  const char *name;
  gsize       size;         /* of each body */
  const char *part_bytes;   /* max_part_bytes */
  const char *message_bytes;
  gsize       budget;       /* max_message_bytes in bytes */
  gboolean    one_file;     /* one file under every URL (?i=N) */
  gboolean    chunked;      /* the server sends it chunked */
  gboolean    local;        /* access-type=local-file references instead (no server) */
} Shape;

static const Shape shapes[] = {
  { "3.5MiB-bodies-8M", 3584 * 1024, "4M", "8M", 8 << 20, FALSE, FALSE },
  { "3.5MiB-bodies-8M-chunked", 3584 * 1024, "4M", "8M", 8 << 20, FALSE, TRUE },
  { "15MiB-bodies-32M", 15 << 20, "16M", "32M", 32 << 20, TRUE, FALSE },
  /* local files are read when their turn comes, within what is left */
  { "3.5MiB-local-files-8M", 3584 * 1024, "4M", "8M", 8 << 20, TRUE, FALSE, TRUE },
};

/* File @i's text: lines that name it, @size bytes. */
static void
write_body (const char *root, guint i, gsize size)
{
  g_autofree char *name = g_strdup_printf ("%s/f%02u.txt", root, i);
  g_autofree char *line = g_strdup_printf ("body-%02u %s\n", i,
                                           "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
  gsize ll = strlen (line);
  char *text = g_malloc (size);
  for (gsize p = 0; p < size; p += ll)
    memcpy (text + p, line, MIN (ll, size - p));
  text[size - 1] = '\n';
  g_assert_true (g_file_set_contents (name, text, (gssize) size, NULL));
  g_free (text);
}

static char *
message_of (guint port, guint n, gboolean one_file, const char *local_dir)
{
  GString *m = g_string_new ("From: a@example.org\nMIME-Version: 1.0\n"
                             "Content-Type: multipart/mixed; boundary=b\n\n"
                             "--b\nContent-Type: text/plain\n\nbefore\n");
  for (guint i = 0; i < n; i++)
    if (local_dir)
      g_string_append_printf (m, "--b\nContent-Type: message/external-body; access-type=local-file;\n"
                                 " name=\"%s/f%02u.txt\"\n\nContent-Type: text/plain\n\n",
                              local_dir, one_file ? 0 : i);
    else
      g_string_append_printf (m, "--b\nContent-Type: message/external-body; access-type=URL;\n"
                                 " URL=\"http://127.0.0.1:%u/f%02u.txt?i=%u\"\n\nContent-Type: text/plain\n\n",
                              port, one_file ? 0 : i, i);
  g_string_append (m, "--b--\n");
  return g_string_free (m, FALSE);
}

/* The header of nginx's response to GET @path (HTTP/1.1), read directly. */
static char *
response_header (guint port, const char *path)
{
  g_autoptr (GSocketClient) client = g_socket_client_new ();
  g_autoptr (GError) error = NULL;
  g_autofree char *where = g_strdup_printf ("127.0.0.1:%u", port);
  g_autoptr (GSocketConnection) c = g_socket_client_connect_to_host (client, where, 0, NULL, &error);
  g_assert_no_error (error);
  g_autofree char *req = g_strdup_printf ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
  GOutputStream *out = g_io_stream_get_output_stream (G_IO_STREAM (c));
  g_assert_true (g_output_stream_write_all (out, req, strlen (req), NULL, NULL, &error));
  GInputStream *in = g_io_stream_get_input_stream (G_IO_STREAM (c));
  GString *h = g_string_new (NULL);
  char buf[4096];
  while (!strstr (h->str, "\r\n\r\n") && h->len < 65536) {
    gssize n = g_input_stream_read (in, buf, sizeof buf, NULL, &error);
    g_assert_no_error (error);
    if (n <= 0)
      break;
    g_string_append_len (h, buf, n);
  }
  char *end = strstr (h->str, "\r\n\r\n");
  g_assert_nonnull (end);
  g_string_truncate (h, (gsize) (end - h->str) + 2);
  return g_string_free (h, FALSE);
}

/* Run `extbody rewrite` on @msg_file with @args; its standard output goes to
 * @out_file, its standard error to @err_file. Returns: its peak RSS in KiB. */
static glong
run_rewrite (const char *msg_file, const char *out_file, const char *err_file, const char *const *args)
{
  const char *exe = g_getenv ("EXTBODY");
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) exe);
  g_ptr_array_add (argv, "rewrite");
  g_ptr_array_add (argv, "-c");
  g_ptr_array_add (argv, conf);
  for (guint i = 0; args[i]; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  pid_t pid = fork ();
  g_assert_cmpint (pid, >=, 0);
  if (pid == 0) {
    int in = open (msg_file, O_RDONLY);
    int out = open (out_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open (err_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0)
      _exit (126);
    dup2 (in, 0);
    dup2 (out, 1);
    dup2 (err, 2);
    execv (exe, (char **) argv->pdata);
    _exit (127);
  }
  int status = 0;
  struct rusage ru;
  g_assert_cmpint (wait4 (pid, &status, 0, &ru), ==, pid);
  g_assert_true (WIFEXITED (status));
  g_assert_cmpint (WEXITSTATUS (status), ==, 0);
  return ru.ru_maxrss;
}

/* The report's lines: the first two references resolved, every other one left
 * message-budget, each reference one line. */
static void
check_report (const char *err_file, guint n)
{
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (err_file, &text, NULL, NULL));
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  guint seen = 0;
  for (guint i = 0; lines[i]; i++) {
    if (!*lines[i])
      continue;
    /* "extbody: part P: access-type=url URL: resolved (...)" or "...: left: REASON: ..." */
    g_autofree char *want_part = g_strdup_printf ("extbody: part %u: ", seen + 2);
    g_test_message ("%s", lines[i]);
    g_assert_true (g_str_has_prefix (lines[i], want_part));
    if (seen < 2)
      g_assert_nonnull (strstr (lines[i], ": resolved ("));
    else
      g_assert_nonnull (strstr (lines[i], ": left: message-budget: "));
    seen++;
  }
  g_assert_cmpuint (seen, ==, n);
}

/* The output holds the first two bodies and no other. */
static void
check_output (const char *out_file, const Shape *s, guint n)
{
  g_autoptr (GMappedFile) map = g_mapped_file_new (out_file, FALSE, NULL);
  g_assert_nonnull (map);
  const char *d = g_mapped_file_get_contents (map);
  gsize len = g_mapped_file_get_length (map);
  g_assert_cmpuint (len, >, 2 * s->size);
  g_assert_cmpuint (len, <, 2 * s->size + 64 * 1024);
  guint found[32] = { 0 };
  const char *p = d, *end = d + len;
  while ((p = memmem (p, (gsize) (end - p), "\nbody-", 6))) {
    p += 6;
    guint k = (guint) g_ascii_strtoull (p, NULL, 10);
    g_assert_cmpuint (k, <, 32);
    found[k] = 1;
  }
  if (s->one_file) {
    g_assert_cmpuint (found[0], ==, 1);   /* one file: its text twice, measured by the length */
  } else {
    for (guint k = 0; k < n; k++)
      g_assert_cmpuint (found[k], ==, k < 2);
  }
}

static void
run_shape (gconstpointer data)
{
  const Shape *s = data;
  g_autofree char *root = g_build_filename (dir, s->name, NULL);
  g_assert_cmpint (g_mkdir_with_parents (root, 0755), ==, 0);
  for (guint i = 0; i < (s->one_file ? 1u : 32u); i++)
    write_body (root, i, s->size);
  /* chunked: nginx's SSI filter on, which drops the Content-Length */
  g_autoptr (TestNginx) nginx = s->local ? NULL
                                : test_nginx_start_with (root, s->chunked ? "ssi on; ssi_types *;" : "");
  if (!s->local) {
    g_assert_nonnull (nginx);
    g_autofree char *head = response_header (nginx->port, "/f00.txt");
    g_test_message ("%s", head);
    g_assert_true (g_str_has_prefix (head, "HTTP/1.1 200 "));
    g_assert_true ((strstr (head, "\r\nTransfer-Encoding: chunked\r\n") != NULL) == s->chunked);
    g_assert_true ((strstr (head, "\r\nContent-Length: ") != NULL) == !s->chunked);
  }

  /* without --fetch, then with it (local files are read either way: the
   * baseline is a message where no reference is acted on) */
  const char *limits[] = { "-o", NULL, "-o", NULL, "-o", NULL, "--allow-network", "127.0.0.1/32", "--report",
                           NULL, NULL };
  g_autofree char *part = g_strdup_printf ("max_part_bytes=%s", s->part_bytes);
  g_autofree char *msg = g_strdup_printf ("max_message_bytes=%s", s->message_bytes);
  g_autofree char *dirs = g_strdup_printf ("local_file_dirs=%s", s->local ? root : "");
  limits[1] = part;
  limits[3] = msg;
  limits[5] = dirs;
  glong peak[2] = { 0 }, base[2] = { 0 };
  guint ns[2] = { 2, 32 };
  char *outs[2], *errs[2];
  for (guint k = 0; k < 2; k++) {
    g_autofree char *m = message_of (nginx ? nginx->port : 0, ns[k], s->one_file, s->local ? root : NULL);
    g_autofree char *mf = g_strdup_printf ("%s/m%u.eml", root, ns[k]);
    g_assert_true (g_file_set_contents (mf, m, -1, NULL));
    outs[k] = g_strdup_printf ("%s/out%u.eml", root, ns[k]);
    errs[k] = g_strdup_printf ("%s/err%u.txt", root, ns[k]);
    if (s->local)
      limits[5] = "local_file_dirs=";
    base[k] = run_rewrite (mf, outs[k], errs[k], limits);
    limits[5] = dirs;
    limits[9] = "--fetch";
    peak[k] = run_rewrite (mf, outs[k], errs[k], limits);
    limits[9] = NULL;
    g_test_message ("%s, %u references: peak RSS %ld KiB fetching, %ld KiB without", s->name, ns[k], peak[k],
                    base[k]);
  }
  g_test_message ("%s: 32 references peak %+ld KiB over 2 references", s->name, peak[1] - peak[0]);
  /* the memory first, then what resolved */
  if (MEASURE_RSS) {
    g_assert_cmpint (peak[1], <=, peak[0] + MARGIN_KIB);
    for (guint k = 0; k < 2; k++)
      g_assert_cmpint (peak[k], <=, base[k] + (glong) (s->budget / 1024) + MARGIN_KIB);
  } else {
    g_test_message ("AddressSanitizer build: peak memory not checked");
  }
  for (guint k = 0; k < 2; k++) {
    check_report (errs[k], ns[k]);
    check_output (outs[k], s, ns[k]);
    g_free (outs[k]);
    g_free (errs[k]);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (!g_getenv ("EXTBODY"))
    test_skip_all ("EXTBODY is not set (run through ctest)");
  if (!g_file_test ("/usr/sbin/nginx", G_FILE_TEST_IS_EXECUTABLE))
    test_skip_all ("nginx is not installed (apt-get install nginx-light)");
  dir = g_dir_make_tmp ("extbody-fetch-memory-XXXXXX", NULL);
  g_assert_nonnull (dir);
  g_chmod (dir, 0755);
  g_autofree char *rm_dir = g_strdup_printf ("rm -rf '%s'", dir);
  guint wd_dir = test_watchdog_add (rm_dir);
  conf = g_build_filename (dir, "extbody.conf", NULL);
  g_assert_true (g_file_set_contents (conf, "", -1, NULL));
  for (guint i = 0; i < G_N_ELEMENTS (shapes); i++) {
    g_autofree char *path = g_strdup_printf ("/fetch-memory/%s", shapes[i].name);
    g_test_add_data_func (path, &shapes[i], run_shape);
  }
  int rc = g_test_run ();
  test_sh (rm_dir, NULL);
  test_watchdog_remove (wd_dir);
  g_free (conf);
  g_free (dir);
  return rc;
}
