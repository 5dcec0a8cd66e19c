/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-metrics.c - mailbox_metrics_file from real runs: `extbody rewrite --mbox` over
 * messages whose references are resolved from data: URLs and from
 * tests/servers/httpd.py on 127.0.0.1 (one fetched, one taken from the cache,
 * one answered 404), the file read back by the reference parser, Debian's
 * python3-prometheus-client (tests/integration/parse-metrics.py), and every
 * value checked against what was sent; the runs add up and never touch
 * metrics_file, the daemon's. Skipped (77) without /usr/bin/python3 and
 * prometheus_client. */
#include <sys/types.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include "run-command.h"
#include "test-server.h"

#define PYTHON "/usr/bin/python3"

static TestServer *srv;
static char *dir;          /* the test's directory */
static char *empty_conf;   /* no /etc/extbody/extbody.conf */

static char *
part (const char *url, const char *type)
{
  if (!url)   /* a reference without its URL: left url-missing */
    return g_strdup ("--b\nContent-Type: message/external-body; access-type=URL\n\nContent-Type: text/plain\n\n");
  return g_strdup_printf ("--b\nContent-Type: message/external-body; access-type=URL;\n URL=\"%s\"\n\n"
                          "Content-Type: %s\n\n", url, type);
}

static char *
message (guint n, const char *body)
{
  return g_strdup_printf ("From sender@example.org Mon Jan  5 10:00:0%u 2026\n"
                          "From: sender@example.org\nMessage-ID: <m%u@example.org>\nMIME-Version: 1.0\n"
                          "Content-Type: multipart/mixed; boundary=\"b\"\n\n%s--b--\n\n", n, n, body);
}

/* parse-metrics.py's lines: "name{labels}" -> value, "# TYPE family" -> type */
static GHashTable *
parse (const char *file)
{
  g_autofree char *script = g_test_build_filename (G_TEST_DIST, "integration", "parse-metrics.py", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
                                                &error, PYTHON, script, file, NULL);
  g_assert_no_error (error);
  g_autofree char *out = NULL, *err = NULL;
  g_assert_true (g_subprocess_communicate_utf8 (p, NULL, NULL, &out, &err, &error));
  g_assert_no_error (error);
  g_test_message ("parsed:\n%s%s", out, err);
  g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 0);
  GHashTable *h = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    if (!*lines[i])
      continue;
    char *sp = strrchr (lines[i], ' ');
    g_assert_nonnull (sp);
    g_hash_table_insert (h, g_strndup (lines[i], (gsize) (sp - lines[i])), g_strdup (sp + 1));
  }
  return h;
}

static double
value (GHashTable *h, const char *sample)
{
  const char *v = g_hash_table_lookup (h, sample);
  g_test_message ("%s = %s", sample, v ? v : "(absent)");
  g_assert_nonnull (v);
  return g_ascii_strtod (v, NULL);
}

/* @sample ("name{labels}", labels sorted) with the command's writer label */
static double
wv (GHashTable *h, const char *sample)
{
  g_autofree char *name = NULL;
  if (g_str_has_suffix (sample, "{}"))
    name = g_strdup_printf ("%.*swriter=extbody}", (int) strlen (sample) - 1, sample);
  else
    name = g_strdup_printf ("%.*s,writer=extbody}", (int) strlen (sample) - 1, sample);
  return value (h, name);
}

static void
test_mbox_run (void)
{
  g_autofree char *bin = g_strdup_printf ("http://127.0.0.1:%u/bin?n=1000", srv->port);
  g_autofree char *gone = g_strdup_printf ("http://127.0.0.1:%u/status/404", srv->port);
  g_autofree char *p1 = part ("data:text/plain,hello", "text/plain");
  g_autofree char *p2 = part (bin, "application/octet-stream");
  g_autofree char *p3 = part (gone, "text/plain");
  g_autofree char *p4 = part (NULL, NULL);
  g_autofree char *b1 = g_strconcat (p1, p2, NULL);
  g_autofree char *b3 = g_strconcat (p3, p4, NULL);
  g_autofree char *m1 = message (1, b1);      /* data: resolved, /bin fetched */
  g_autofree char *m2 = message (2, p2);      /* /bin again: the cache */
  g_autofree char *m3 = message (3, b3);      /* 404: http-status; url-missing */
  g_autofree char *m4 = g_strdup ("From sender@example.org Mon Jan  5 10:00:04 2026\n"
                                  "From: sender@example.org\nSubject: none\n\nplain\n\n");
  g_autofree char *box = g_build_filename (dir, "box", NULL);
  g_autofree char *text = g_strconcat (m1, m2, m3, m4, NULL);
  g_assert_true (g_file_set_contents (box, text, -1, NULL));
  g_autofree char *metrics_dir = g_build_filename (dir, "textfile", NULL);
  g_assert_cmpint (g_mkdir (metrics_dir, 0755), ==, 0);
  g_autofree char *prom = g_build_filename (metrics_dir, "extbody.prom", NULL);
  g_autofree char *opt = g_strdup_printf ("mailbox_metrics_file=%s", prom);
  /* the daemon's file, in the same directory: the command never touches it
   * (its counters would go back) */
  g_autofree char *daemon_prom = g_build_filename (metrics_dir, "extbodyd.prom", NULL);
  const char *daemon_text = "# TYPE extbody_messages_total counter\nextbody_messages_total 123456\n";
  g_assert_true (g_file_set_contents (daemon_prom, daemon_text, -1, NULL));
  g_autofree char *dopt = g_strdup_printf ("metrics_file=%s", daemon_prom);

  /* under the unit's umask (0007) or a stricter one, the file is still 0644:
   * node_exporter reads it as its own user */
  mode_t old_mask = umask (077);
  g_auto (CmdResult) r = { 0 };
  RUN (&r, NULL, "rewrite", "-c", empty_conf, "--fetch", "--allow-network", "127.0.0.1/32",
       "-o", opt, "-o", dopt, "-j", "2", "--mbox", box);
  umask (old_mask);
  g_autofree char *err = bytes_str (r.err);
  g_test_message ("stderr: %s", err);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_null (strstr (err, "metrics_file"));
  g_assert_cmpint (test_http_get_number (srv->port, "/hits"), ==, 3);   /* /bin once, /status/404 once, and this /hits */

  /* its file, its lock, and the daemon's as it was (no temporary left) */
  g_autoptr (GDir) d = g_dir_open (metrics_dir, 0, NULL);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  const char *nm;
  while ((nm = g_dir_read_name (d)))
    g_ptr_array_add (names, g_strdup (nm));
  g_assert_cmpuint (names->len, ==, 3);
  g_autofree char *daemon_after = NULL;
  g_assert_true (g_file_get_contents (daemon_prom, &daemon_after, NULL, NULL));
  g_assert_cmpstr (daemon_after, ==, daemon_text);
  GStatBuf st;
  g_assert_cmpint (g_stat (prom, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0644);
  g_autofree char *lock = g_strconcat (prom, ".lock", NULL);
  g_assert_true (g_file_test (lock, G_FILE_TEST_IS_REGULAR));

  g_autoptr (GHashTable) m = parse (prom);
  g_assert_cmpstr (g_hash_table_lookup (m, "# TYPE extbody_messages"), ==, "counter");
  g_assert_cmpstr (g_hash_table_lookup (m, "# TYPE extbody_left"), ==, "counter");
  g_assert_cmpstr (g_hash_table_lookup (m, "# TYPE extbody_fetch_duration_seconds"), ==, "histogram");
  g_assert_cmpfloat (wv (m, "extbody_messages_total{}"), ==, 4);
  g_assert_cmpfloat (wv (m, "extbody_messages_changed_total{}"), ==, 2);
  g_assert_cmpfloat (wv (m, "extbody_input_bytes_total{}"), >, 0);
  g_assert_cmpfloat (wv (m, "extbody_input_bytes_total{}"), <=, (double) strlen (text));
  g_assert_cmpfloat (wv (m, "extbody_references_total{}"), ==, 5);
  g_assert_cmpfloat (wv (m, "extbody_references_resolved_total{}"), ==, 3);
  g_assert_cmpfloat (wv (m, "extbody_left_total{reason=http-status}"), ==, 1);
  g_assert_cmpfloat (wv (m, "extbody_left_total{reason=url-missing}"), ==, 1);
  g_assert_cmpfloat (wv (m, "extbody_left_total{reason=fetch-off}"), ==, 0);
  g_assert_cmpfloat (wv (m, "extbody_fetches_total{outcome=resolved}"), ==, 1);
  g_assert_cmpfloat (wv (m, "extbody_fetches_total{outcome=http-status}"), ==, 1);
  g_assert_cmpfloat (wv (m, "extbody_fetch_cache_hits_total{}"), ==, 1);
  /* /bin's 1000 bytes and the 404's body ("status body\n") */
  g_assert_cmpfloat (wv (m, "extbody_fetched_bytes_total{}"), ==, 1012);
  g_assert_cmpfloat (wv (m, "extbody_fetch_duration_seconds_count{}"), ==, 2);
  g_assert_cmpfloat (wv (m, "extbody_fetch_duration_seconds_bucket{le=+Inf}"), ==, 2);
  g_assert_cmpfloat (wv (m, "extbody_fetch_duration_seconds_sum{}"), >, 0);
  /* the buckets, cumulative, as the parser names them */
  const char *les[] = { "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5",
                        "10", "30", "60", "120", "+Inf" };
  double prev = 0;
  for (guint i = 0; i < G_N_ELEMENTS (les); i++) {
    g_autofree char *name = g_strdup_printf ("extbody_fetch_duration_seconds_bucket{le=%s}", les[i]);
    double v = wv (m, name);
    g_assert_cmpfloat (v, >=, prev);
    prev = v;
  }

  /* a second run over the same messages adds to the first: every counter
   * grows, none goes back */
  g_autofree char *box2 = g_build_filename (dir, "box2", NULL);
  g_assert_true (g_file_set_contents (box2, text, -1, NULL));
  g_auto (CmdResult) r1 = { 0 };
  RUN (&r1, NULL, "rewrite", "-c", empty_conf, "--fetch", "--allow-network", "127.0.0.1/32",
       "-o", opt, "--mbox", box2);
  g_assert_cmpint (r1.status, ==, 0);
  g_autoptr (GHashTable) again = parse (prom);
  g_assert_cmpfloat (wv (again, "extbody_messages_total{}"), ==, 8);
  g_assert_cmpfloat (wv (again, "extbody_references_total{}"), ==, 10);
  g_assert_cmpfloat (wv (again, "extbody_references_resolved_total{}"), ==, 6);
  g_assert_cmpfloat (wv (again, "extbody_fetch_duration_seconds_count{}"), ==, 4);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, m);
  while (g_hash_table_iter_next (&it, &k, &v)) {
    if (g_str_has_prefix (k, "# "))
      continue;
    const char *after = g_hash_table_lookup (again, k);
    g_assert_nonnull (after);
    g_assert_cmpfloat (g_ascii_strtod (after, NULL), >=, g_ascii_strtod (v, NULL));
  }
  /* four runs at once (each over a box of its own): none is lost */
  GString *sh = g_string_new (NULL);
  for (guint i = 0; i < 4; i++) {
    g_autofree char *bi = g_strdup_printf ("%s/box-par-%u", dir, i);
    g_assert_true (g_file_set_contents (bi, text, -1, NULL));
    g_string_append_printf (sh, "'%s' rewrite -c '%s' -o '%s' --mbox '%s' & ", g_getenv ("EXTBODY"), empty_conf,
                            opt, bi);
  }
  g_string_append (sh, "wait");
  g_autofree char *par_cmd = g_string_free (sh, FALSE);
  g_autofree char *par_out = NULL;
  g_assert_cmpint (test_sh (par_cmd, &par_out), ==, 0);
  g_assert_null (strstr (par_out, "metrics"));
  g_autoptr (GHashTable) par = parse (prom);
  g_assert_cmpfloat (wv (par, "extbody_messages_total{}"), ==, 8 + 4 * 4);
  g_assert_cmpfloat (wv (par, "extbody_left_total{reason=fetch-off}"), ==, 4 * 3);

  /* an ordinary user's run with the daemon's metrics_file out of its reach
   * and no mailbox_metrics_file: no metrics, no line */
  g_autofree char *unreachable = g_strdup_printf ("metrics_file=%s/missing/extbodyd.prom", dir);
  g_auto (CmdResult) r0 = { 0 };
  RUN (&r0, NULL, "rewrite", "-c", empty_conf, "-o", unreachable, "--mbox", box);
  g_autofree char *err0 = bytes_str (r0.err);
  g_assert_cmpint (r0.status, ==, 0);
  g_assert_null (strstr (err0, "metrics"));

  /* a mailbox_metrics_file that cannot be written: one line, the run's status unchanged */
  g_autofree char *bad = g_strdup_printf ("mailbox_metrics_file=%s/missing/extbody.prom", dir);
  g_auto (CmdResult) r2 = { 0 };
  RUN (&r2, NULL, "rewrite", "-c", empty_conf, "-o", bad, "--mbox", box);
  g_autofree char *err2 = bytes_str (r2.err);
  g_test_message ("stderr: %s", err2);
  g_assert_cmpint (r2.status, ==, 0);
  g_assert_nonnull (strstr (err2, "cannot write mailbox_metrics_file: "));
  /* a file that is not these counters (the daemon's, say): left as it is, one line */
  g_autofree char *theirs = g_strdup_printf ("mailbox_metrics_file=%s", daemon_prom);
  g_auto (CmdResult) r4 = { 0 };
  RUN (&r4, NULL, "rewrite", "-c", empty_conf, "-o", theirs, "--mbox", box);
  g_autofree char *err4 = bytes_str (r4.err);
  g_test_message ("stderr: %s", err4);
  g_assert_cmpint (r4.status, ==, 0);
  g_assert_nonnull (strstr (err4, "line 2 is not this writer's counters (writer=\"extbody\"); left as it is"));
  g_free (daemon_after);
  g_assert_true (g_file_get_contents (daemon_prom, &daemon_after, NULL, NULL));
  g_assert_cmpstr (daemon_after, ==, daemon_text);
  /* a relative path is a configuration error naming the key */
  g_auto (CmdResult) r3 = { 0 };
  RUN (&r3, NULL, "rewrite", "-c", empty_conf, "-o", "mailbox_metrics_file=extbody.prom", "--mbox", box);
  g_autofree char *err3 = bytes_str (r3.err);
  g_assert_cmpint (r3.status, ==, 78);
  g_assert_nonnull (strstr (err3, "mailbox_metrics_file"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (!g_file_test (PYTHON, G_FILE_TEST_IS_EXECUTABLE)
      || system (PYTHON " -c 'import prometheus_client.parser' 2>/dev/null") != 0)
    test_skip_all (PYTHON " with prometheus_client (python3-prometheus-client) is needed");
  g_autoptr (GError) error = NULL;
  srv = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);
  dir = g_dir_make_tmp ("extbody-metrics-XXXXXX", NULL);
  empty_conf = g_build_filename (dir, "empty.conf", NULL);
  g_assert_true (g_file_set_contents (empty_conf, "", -1, NULL));
  g_test_add_func ("/metrics/mbox-run", test_mbox_run);
  int status = g_test_run ();
  test_server_stop (srv);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  if (system (rm) != 0)
    g_printerr ("cannot remove %s\n", dir);
  g_free (empty_conf);
  g_free (dir);
  return status;
}
