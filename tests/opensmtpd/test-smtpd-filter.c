/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-smtpd-filter.c - extbody-smtpd-filter (filters/opensmtpd/) speaking
 * OpenSMTPD's filter protocol with this program in smtpd's place (the lines
 * written by hand, as smtpd 6.8 writes them: tests/opensmtpd/ saw them), its
 * daemon tests/servers/answerd.py (good answers, which put a line on top of
 * the message, and every kind of bad one, a socket per behaviour):
 *
 * - the handshake: config lines, then the three register lines;
 * - a good answer comes back line by line for the right session and token,
 *   dot-stuffed again (lines starting with dots, a lone "." inside);
 * - "Extbody-Changed: no": the message as it came, not the answer's body;
 * - every bad answer (error status, refusal, not the daemon, garbage, too
 *   short, cut, a huge header, an answer before the message was read), no
 *   socket, and an answer with a line too long for smtpd: the message
 *   exactly as it came;
 * - sessions interleave, each answered with its own lines;
 * - three messages held by a daemon that never answers come back as they
 *   came together, after -t, not one after another;
 * - a message over -x goes back line by line as it comes, never sent;
 * - a session that disconnects while its message is with the daemon gets
 *   nothing, and the filter goes on;
 * - a line that is not of the protocol is ignored; bad options exit 64.
 */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <gio/gunixinputstream.h>
#include <gio/gunixoutputstream.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test-server.h"

static char *dir;
static TestServer *server;

typedef struct {
  GSubprocess *proc;
  int          in_fd;    /* its standard input */
  int          out_fd;   /* its standard output */
  GString     *got;      /* what it wrote so far */
  char        *err;      /* the file its standard error goes to */
} Filter;

static Filter *
filter_start (const char *mode, const char *const *extra)
{
  Filter *f = g_new0 (Filter, 1);
  g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (argv, g_strdup (g_getenv ("EXTBODY_SMTPD_FILTER")));
  g_ptr_array_add (argv, g_strdup ("-v"));
  g_ptr_array_add (argv, g_strdup ("-s"));
  if (g_str_has_prefix (mode, "inet:") || g_str_has_prefix (mode, "unix:"))
    g_ptr_array_add (argv, g_strdup (mode));
  else
    g_ptr_array_add (argv, g_strdup_printf ("unix:%s/%s.sock", dir, mode));
  for (guint i = 0; extra && extra[i]; i++)
    g_ptr_array_add (argv, g_strdup (extra[i]));
  g_ptr_array_add (argv, NULL);
  g_autoptr (GError) error = NULL;
  static guint n;
  f->err = g_strdup_printf ("%s/filter-%u.err", dir, ++n);
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDIN_PIPE
                                                                 | G_SUBPROCESS_FLAGS_STDOUT_PIPE);
  g_subprocess_launcher_set_stderr_file_path (l, f->err);
  f->proc = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, &error);
  g_assert_no_error (error);
  f->in_fd = g_unix_output_stream_get_fd (G_UNIX_OUTPUT_STREAM (g_subprocess_get_stdin_pipe (f->proc)));
  f->out_fd = g_unix_input_stream_get_fd (G_UNIX_INPUT_STREAM (g_subprocess_get_stdout_pipe (f->proc)));
  f->got = g_string_new (NULL);
  return f;
}

static void
put (Filter *f, const char *text)
{
  size_t len = strlen (text), done = 0;
  while (done < len) {
    ssize_t n = write (f->in_fd, text + done, len - done);
    g_assert_cmpint (n, >, 0);
    done += (size_t) n;
  }
}

/* Read what it writes until @needle is in f->got or @seconds pass. */
static gboolean
wait_for (Filter *f, const char *needle, double seconds)
{
  gint64 end = g_get_monotonic_time () + (gint64) (seconds * 1e6);
  while (!strstr (f->got->str, needle)) {
    gint64 left = end - g_get_monotonic_time ();
    if (left <= 0)
      return FALSE;
    struct pollfd p = { f->out_fd, POLLIN, 0 };
    if (poll (&p, 1, (int) (left / 1000) + 1) <= 0)
      continue;
    char buf[65536];
    ssize_t n = read (f->out_fd, buf, sizeof buf);
    if (n <= 0)
      return FALSE;
    g_string_append_len (f->got, buf, n);
  }
  return TRUE;
}

/* Close its input (smtpd gone): it exits 0. Returns what it wrote to its
 * standard error. */
static char *
filter_end_err (Filter *f)
{
  g_autoptr (GError) error = NULL;
  g_output_stream_close (g_subprocess_get_stdin_pipe (f->proc), NULL, NULL);
  g_subprocess_wait (f->proc, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_get_if_exited (f->proc));
  g_assert_cmpint (g_subprocess_get_exit_status (f->proc), ==, 0);
  g_object_unref (f->proc);
  g_string_free (f->got, TRUE);
  char *err = NULL;
  g_file_get_contents (f->err, &err, NULL, NULL);
  g_unlink (f->err);
  g_free (f->err);
  g_free (f);
  return err ? err : g_strdup ("");
}

/* Close its input (smtpd gone): it exits 0. */
static void
filter_end (Filter *f)
{
  g_free (filter_end_err (f));
}

static const char *handshake =
  "config|smtpd-version|6.8.0p2\nconfig|smtp-session-timeout|300\nconfig|subsystem|smtp-in\n"
  "config|admd|mta.test.example\nconfig|ready\n";

static Filter *
ready (const char *mode, const char *const *extra)
{
  Filter *f = filter_start (mode, extra);
  put (f, handshake);
  g_assert_true (wait_for (f, "register|ready\n", 10));
  g_assert_cmpstr (f->got->str, ==, "register|filter|smtp-in|data-line\nregister|report|smtp-in|link-disconnect\n"
                                    "register|ready\n");
  g_string_truncate (f->got, 0);
  return f;
}

/* The message's lines as smtpd sends them (dot-stuffed), without the final "." */
static const char *const lines[] = {
  "Received: from [127.0.0.1] (mta.test.example [127.0.0.1])",
  "\tby mta.test.example (OpenSMTPD) with ESMTP id 22f37f3b",
  "From: a@test.example", "Subject: dots|and|bars", "Message-ID: <m@test.example>", "",
  "body", "..one dot", "...two dots", "..", "", "trailing space ", NULL,
};

/* the protocol version smtpd_lines writes: 0.6 (OpenSMTPD 6.8) unless a
 * case says otherwise */
static const char *protocol = "0.6";

/* The lines of @ls for @session/@token as smtpd writes them, then ".". */
static char *
smtpd_lines (const char *session, const char *token, const char *const *ls)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; ls[i]; i++)
    g_string_append_printf (s, "filter|%s|1795774490.99%04u|smtp-in|data-line|%s|%s|%s\n", protocol, i, session,
                            token, ls[i]);
  g_string_append_printf (s, "filter|%s|1795774491.000000|smtp-in|data-line|%s|%s|.\n", protocol, session, token);
  return g_string_free (s, FALSE);
}

/* What the filter gives back for @ls: @top (a line, or NULL) then the lines, then "." */
static char *
answer_lines (const char *session, const char *token, const char *top, const char *const *ls)
{
  GString *s = g_string_new (NULL);
  if (top)
    g_string_append_printf (s, "filter-dataline|%s|%s|%s\n", session, token, top);
  for (guint i = 0; ls[i]; i++)
    g_string_append_printf (s, "filter-dataline|%s|%s|%s\n", session, token, ls[i]);
  g_string_append_printf (s, "filter-dataline|%s|%s|.\n", session, token);
  return g_string_free (s, FALSE);
}

static void
test_good_answer (void)
{
  const char *modes[] = { "echo", "chunked", "eof", "interim" };
  for (guint i = 0; i < G_N_ELEMENTS (modes); i++) {
    Filter *f = ready (modes[i], NULL);
    g_autofree char *in = smtpd_lines ("f65823c134db0d18", "26322c76ebf9b32f", lines);
    put (f, in);
    g_autofree char *want = answer_lines ("f65823c134db0d18", "26322c76ebf9b32f", "X-Answerd: changed", lines);
    g_assert_true (wait_for (f, "|.\n", 10));
    g_assert_cmpstr (f->got->str, ==, want);
    filter_end (f);
  }
}

/* OpenSMTPD 7.5 and later announce their protocol (config|protocol|0.7, 7.6
 * on Debian 13) and say 0.7 in every line; a version the filter does not
 * know is read as 0.7 and said once. The answers are the same. */
static void
test_protocols (void)
{
  const char *const versions[][2] = { { "7.6.0p1", "0.7" }, { "7.9.0p1", "0.8" } };
  for (guint v = 0; v < G_N_ELEMENTS (versions); v++) {
    protocol = versions[v][1];
    Filter *f = filter_start ("echo", NULL);
    g_autofree char *hs = g_strdup_printf ("config|smtpd-version|%s\nconfig|protocol|%s\n"
                                           "config|smtp-session-timeout|300\nconfig|subsystem|smtp-in\n"
                                           "config|admd|mta.test.example\nconfig|ready\n", versions[v][0], protocol);
    put (f, hs);
    g_assert_true (wait_for (f, "register|ready\n", 10));
    g_assert_cmpstr (f->got->str, ==, "register|filter|smtp-in|data-line\nregister|report|smtp-in|link-disconnect\n"
                                      "register|ready\n");
    g_string_truncate (f->got, 0);
    g_autofree char *in = smtpd_lines ("f65823c134db0d18", "26322c76ebf9b32f", lines);
    put (f, in);
    g_autofree char *want = answer_lines ("f65823c134db0d18", "26322c76ebf9b32f", "X-Answerd: changed", lines);
    g_assert_true (wait_for (f, "|.\n", 10));
    g_assert_cmpstr (f->got->str, ==, want);
    g_autofree char *bye = g_strdup_printf ("report|%s|1795774492.000000|smtp-in|link-disconnect|f65823c134db0d18\n",
                                            protocol);
    put (f, bye);
    g_autofree char *err = filter_end_err (f);
    g_test_message ("%s", err);
    g_autofree char *said = g_strdup_printf ("smtpd speaks filter protocol %s%s", protocol,
                                             v == 0 ? "\n" : ", which this filter does not know (it knows 0.5 to 0.7)");
    g_assert_nonnull (strstr (err, said));
  }
  protocol = "0.6";
}

static void
test_inet (void)
{
  g_autofree char *spec = g_strdup_printf ("inet:%u@127.0.0.1", server->port);
  Filter *f = ready (spec, NULL);
  g_autofree char *in = smtpd_lines ("1", "2", lines);
  put (f, in);
  g_autofree char *want = answer_lines ("1", "2", "X-Answerd: changed", lines);
  g_assert_true (wait_for (f, "|.\n", 10));
  g_assert_cmpstr (f->got->str, ==, want);
  filter_end (f);
}

static void
test_fallbacks (void)
{
  const char *modes[] = { "unchanged", "error", "refuse", "plain", "garbage", "short", "cut", "hugeheader",
                          "early", "no-such" };
  for (guint i = 0; i < G_N_ELEMENTS (modes); i++) {
    g_test_message ("%s", modes[i]);
    Filter *f = ready (modes[i], NULL);
    g_autofree char *in = smtpd_lines ("aa", "bb", lines);
    put (f, in);
    g_autofree char *want = answer_lines ("aa", "bb", NULL, lines);
    g_assert_true (wait_for (f, "|.\n", 10));
    g_assert_cmpstr (f->got->str, ==, want);
    filter_end (f);
  }
}

/* an answer with a line smtpd would cut: the message as it came */
static void
test_long_line (void)
{
  g_autofree char *longer = g_strnfill (2100, 'x');
  const char *ls[] = { "Subject: long", "", longer, NULL };
  Filter *f = ready ("echo", NULL);
  g_autofree char *in = smtpd_lines ("aa", "bb", ls);
  put (f, in);
  g_autofree char *want = answer_lines ("aa", "bb", NULL, ls);
  g_assert_true (wait_for (f, "|.\n", 10));
  g_assert_cmpstr (f->got->str, ==, want);
  filter_end (f);
  /* one of 1997 bytes is not too long */
  g_autofree char *fits = g_strnfill (1997, 'y');
  const char *ls2[] = { "Subject: fits", "", fits, NULL };
  f = ready ("echo", NULL);
  g_autofree char *in2 = smtpd_lines ("aa", "bb", ls2);
  put (f, in2);
  g_autofree char *want2 = answer_lines ("aa", "bb", "X-Answerd: changed", ls2);
  g_assert_true (wait_for (f, "|.\n", 10));
  g_assert_cmpstr (f->got->str, ==, want2);
  filter_end (f);
}

/* two sessions' lines interleaved, each answered with its own */
static void
test_interleaved (void)
{
  Filter *f = ready ("echo", NULL);
  const char *other_sent[] = { "Subject: other", "", "b1", "..", NULL };
  g_autofree char *a = smtpd_lines ("aaaa", "1111", lines);
  g_autofree char *b = smtpd_lines ("bbbb", "2222", other_sent);
  g_auto (GStrv) al = g_strsplit (a, "\n", -1);
  g_auto (GStrv) bl = g_strsplit (b, "\n", -1);
  GString *mix = g_string_new (NULL);
  for (guint i = 0; al[i] && *al[i]; i++) {
    g_string_append_printf (mix, "%s\n", al[i]);
    if (i < g_strv_length (bl) && *bl[i])
      g_string_append_printf (mix, "%s\n", bl[i]);
  }
  for (guint i = g_strv_length (al); i < g_strv_length (bl); i++)
    if (*bl[i])
      g_string_append_printf (mix, "%s\n", bl[i]);
  g_autofree char *in = g_string_free (mix, FALSE);
  put (f, in);
  g_assert_true (wait_for (f, "filter-dataline|aaaa|1111|.\n", 10));
  g_assert_true (wait_for (f, "filter-dataline|bbbb|2222|.\n", 10));
  /* each session's lines, in order, whatever the other's did between them */
  GString *ga = g_string_new (NULL), *gb = g_string_new (NULL);
  g_auto (GStrv) out = g_strsplit (f->got->str, "\n", -1);
  for (guint i = 0; out[i]; i++) {
    if (g_str_has_prefix (out[i], "filter-dataline|aaaa|"))
      g_string_append_printf (ga, "%s\n", out[i]);
    else if (g_str_has_prefix (out[i], "filter-dataline|bbbb|"))
      g_string_append_printf (gb, "%s\n", out[i]);
    else
      g_assert_cmpstr (out[i], ==, "");
  }
  g_autofree char *wa = answer_lines ("aaaa", "1111", "X-Answerd: changed", lines);
  g_autofree char *wb = answer_lines ("bbbb", "2222", "X-Answerd: changed", other_sent);
  g_assert_cmpstr (ga->str, ==, wa);
  g_assert_cmpstr (gb->str, ==, wb);
  g_string_free (ga, TRUE);
  g_string_free (gb, TRUE);
  filter_end (f);
}

/* three messages with a daemon that never answers: all back as they came
 * after -t, together */
static void
test_slow_together (void)
{
  Filter *f = ready ("slow", (const char *const[]) { "-t", "2", NULL });
  gint64 t0 = g_get_monotonic_time ();
  for (int i = 1; i <= 3; i++) {
    g_autofree char *id = g_strdup_printf ("%d", i);
    g_autofree char *in = smtpd_lines (id, "ab", lines);
    put (f, in);
  }
  for (int i = 1; i <= 3; i++) {
    g_autofree char *end = g_strdup_printf ("filter-dataline|%d|ab|.\n", i);
    g_assert_true (wait_for (f, end, 20));
  }
  double took = (double) (g_get_monotonic_time () - t0) / 1e6;
  g_test_message ("three messages back in %.2f s", took);
  /* one after another they would take 6 s at least */
  g_assert_cmpfloat (took, >=, 1.9);
  g_assert_cmpfloat (took, <, 5.5);
  for (int i = 1; i <= 3; i++) {
    g_autofree char *id = g_strdup_printf ("%d", i);
    g_autofree char *want = answer_lines (id, "ab", NULL, lines);
    g_assert_nonnull (strstr (f->got->str, want));
  }
  filter_end (f);
}

/* over -x: each line back as it comes, the daemon never asked */
static void
test_max_size (void)
{
  Filter *f = ready ("echo", (const char *const[]) { "-x", "200", NULL });
  g_autofree char *in = smtpd_lines ("cc", "dd", lines);
  /* all but the final ".": the lines are back before it */
  char *dot = g_strrstr (in, "filter|0.6|1795774491.000000|");
  g_autofree char *head = g_strndup (in, dot - in);
  put (f, head);
  g_autofree char *want = answer_lines ("cc", "dd", NULL, lines);
  g_autofree char *want_head = g_strndup (want, strlen (want) - strlen ("filter-dataline|cc|dd|.\n"));
  g_assert_true (wait_for (f, "trailing space \n", 10));
  g_assert_cmpstr (f->got->str, ==, want_head);
  put (f, dot);
  g_assert_true (wait_for (f, "|.\n", 10));
  g_assert_cmpstr (f->got->str, ==, want);
  /* and the session's next message, small, is resolved again */
  const char *small[] = { "a", NULL };
  g_autofree char *in2 = smtpd_lines ("cc", "dd", small);
  g_string_truncate (f->got, 0);
  put (f, in2);
  g_autofree char *want2 = answer_lines ("cc", "dd", "X-Answerd: changed", small);
  g_assert_true (wait_for (f, "|.\n", 10));
  g_assert_cmpstr (f->got->str, ==, want2);
  filter_end (f);
}

/* a session gone while its message is with the daemon: nothing for it; the
 * filter goes on; a line of another protocol is ignored */
static void
test_disconnect_and_junk (void)
{
  Filter *f = ready ("slow", (const char *const[]) { "-t", "1", NULL });
  g_autofree char *in = smtpd_lines ("dead", "ab", lines);
  put (f, in);
  put (f, "report|0.6|1795774492.000000|smtp-in|link-disconnect|dead\n");
  put (f, "something else entirely\nfilter|0.6|1|smtp-in|data-line|zz\n");
  g_assert_false (wait_for (f, "dead", 2.0));
  g_assert_cmpstr (f->got->str, ==, "");
  /* still serving: the next session's message comes back (as it came: slow) */
  const char *small[] = { "a", NULL };
  g_autofree char *in2 = smtpd_lines ("beef", "ab", small);
  put (f, in2);
  g_assert_true (wait_for (f, "filter-dataline|beef|ab|.\n", 10));
  g_autofree char *want = answer_lines ("beef", "ab", NULL, small);
  g_assert_cmpstr (f->got->str, ==, want);
  filter_end (f);
}

static void
test_usage (void)
{
  const char *bad[][3] = {
    { "-t", "x", NULL }, { "-x", "0", NULL }, { "-s", "inet:0@127.0.0.1", NULL }, { "-l", "file", NULL },
    { "--bogus", NULL, NULL }, { "extra", NULL, NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_autoptr (GError) error = NULL;
    const char *argv[] = { g_getenv ("EXTBODY_SMTPD_FILTER"), bad[i][0], bad[i][1], NULL };
    g_autoptr (GSubprocess) p = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDERR_SILENCE, &error);
    g_assert_no_error (error);
    g_assert_true (g_subprocess_wait (p, NULL, NULL));
    g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 64);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  signal (SIGPIPE, SIG_IGN);
  if (!g_getenv ("EXTBODY_SMTPD_FILTER"))
    test_skip_all ("EXTBODY_SMTPD_FILTER is not set (ctest sets it)");
  g_autoptr (GError) error = NULL;
  dir = g_dir_make_tmp ("smtpd-filter-XXXXXX", &error);
  g_assert_no_error (error);
  const char *args[] = { "--dir", dir, NULL };
  server = test_server_start ("answerd.py", args, NULL, FALSE, &error);
  g_assert_no_error (error);
  g_test_add_func ("/smtpd-filter/good-answers", test_good_answer);
  g_test_add_func ("/smtpd-filter/protocols", test_protocols);
  g_test_add_func ("/smtpd-filter/inet", test_inet);
  g_test_add_func ("/smtpd-filter/fallbacks", test_fallbacks);
  g_test_add_func ("/smtpd-filter/long-line", test_long_line);
  g_test_add_func ("/smtpd-filter/interleaved", test_interleaved);
  g_test_add_func ("/smtpd-filter/slow-together", test_slow_together);
  g_test_add_func ("/smtpd-filter/max-size", test_max_size);
  g_test_add_func ("/smtpd-filter/disconnect-and-junk", test_disconnect_and_junk);
  g_test_add_func ("/smtpd-filter/usage", test_usage);
  int rc = g_test_run ();
  g_clear_pointer (&server, test_server_stop);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  test_sh (rm, NULL);
  g_free (dir);
  return rc;
}
