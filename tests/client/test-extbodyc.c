/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-extbodyc.c - extbodyc (filters/client/) against tests/servers/answerd.py,
 * a stand-in for the daemon's HTTP listener whose socket names its behaviour:
 * good answers (Content-Length, chunked, to the close, after a 100 Continue,
 * "unchanged") give exactly the answer's message; every bad one (an error
 * status, garbage, a web server, a timeout, a close mid-body, a body longer
 * than its Content-Length, a header over 64 KiB, an early close) gives the
 * message byte for byte as it came and exit 0, or nothing and exit 75 with
 * --on-error tempfail; a message over -x is never sent. And the program
 * needs libc alone ($EXTBODYC is the program). */
#include <glib.h>
#include <signal.h>
#include <glib/gstdio.h>
#include <string.h>

#include "test-server.h"

/* answerd.py's change to a message (its PREFIX) */
#define PREFIX "X-Answerd: changed\r\n"
/* the large message: past any socket buffer, well under -x's default */
#define BIG_SIZE (5 * 1024 * 1024)

static TestServer *server;
static char *dir;

typedef struct {
  int    status;   /* exit status, -1 for a signal */
  GBytes *out;
  char   *err;
} Run;

static void
run_clear (Run *r)
{
  g_clear_pointer (&r->out, g_bytes_unref);
  g_clear_pointer (&r->err, g_free);
}

/* extbodyc with @args (NULL-terminated, after the program) and @input on
 * its standard input. */
static Run
run (const char *const *args, GBytes *input)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) g_getenv ("EXTBODYC"));
  for (guint i = 0; args[i]; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = g_subprocess_newv ((const char *const *) argv->pdata,
                                                 G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                                 | G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
  g_assert_no_error (error);
  Run r = { -1, NULL, NULL };
  g_autoptr (GBytes) err = NULL;
  g_autoptr (GBytes) none = g_bytes_new_static ("", 0);
  if (!input)
    input = none;
  g_assert_true (g_subprocess_communicate (p, input, NULL, &r.out, &err, &error));
  g_assert_no_error (error);
  r.err = g_bytes_get_size (err) ? g_strndup (g_bytes_get_data (err, NULL), g_bytes_get_size (err)) : g_strdup ("");
  if (g_subprocess_get_if_exited (p))
    r.status = g_subprocess_get_exit_status (p);
  return r;
}

static char *
sock (const char *mode)
{
  return g_strdup_printf ("unix:%s/%s.sock", dir, mode);
}

/* A message the way mail is, and is not: CRLF, NULs, 8-bit bytes, no final
 * newline. */
static GBytes *
odd_message (void)
{
  static const char m[] = "From: a@example.org\r\nSubject: odd\r\n\r\nbody\0with NUL\r\n\xff\xfe bytes\n"
                          "LF only line\r\nno final newline";
  return g_bytes_new_static (m, sizeof m - 1);
}

static GBytes *
big_message (void)
{
  GString *s = g_string_new ("From: a@example.org\r\nSubject: big\r\n\r\n");
  for (guint i = 0; s->len < BIG_SIZE; i++)
    g_string_append_printf (s, "line %u of a big message, with a NUL \\0 here:%c.\r\n", i, 0);
  g_string_append (s, "and no final newline");
  return g_string_free_to_bytes (s);
}

static void
assert_bytes_equal (GBytes *got, GBytes *want)
{
  g_assert_cmpuint (g_bytes_get_size (got), ==, g_bytes_get_size (want));
  g_assert_true (g_bytes_equal (got, want));
}

static GBytes *
prefixed (GBytes *msg)
{
  GByteArray *a = g_byte_array_new ();
  g_byte_array_append (a, (const guint8 *) PREFIX, strlen (PREFIX));
  g_byte_array_append (a, g_bytes_get_data (msg, NULL), g_bytes_get_size (msg));
  return g_byte_array_free_to_bytes (a);
}

static guint
requests_logged (void)
{
  g_autofree char *path = g_build_filename (dir, "requests.log", NULL);
  g_autofree char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, NULL))
    return 0;
  guint n = 0;
  for (const char *p = text; *p; p++)
    n += *p == '\n';
  return n;
}

/* ---- good answers ------------------------------------------------------- */

static void
check_good (const char *mode, GBytes *msg)
{
  g_autofree char *s = sock (mode);
  const char *args[] = { "-s", s, "-t", "30", NULL };
  Run r = run (args, msg);
  g_test_message ("%s: %s", mode, r.err);
  g_assert_cmpint (r.status, ==, 0);
  g_autoptr (GBytes) want = prefixed (msg);
  assert_bytes_equal (r.out, want);
  g_assert_cmpstr (r.err, ==, "");
  run_clear (&r);
}

static void
test_good_answers (void)
{
  g_autoptr (GBytes) odd = odd_message ();
  g_autoptr (GBytes) big = big_message ();
  static const char *const modes[] = { "echo", "chunked", "eof", "interim" };
  for (guint i = 0; i < G_N_ELEMENTS (modes); i++) {
    check_good (modes[i], odd);
    check_good (modes[i], big);
  }
}

/* The request as the protocol has it. */
static void
test_request (void)
{
  g_autoptr (GBytes) odd = odd_message ();
  check_good ("echo", odd);
  g_autofree char *path = g_build_filename (dir, "requests.log", NULL);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  g_autofree char *line = g_strdup_printf ("echo POST /rewrite %zu localhost|message/rfc822|close\n",
                                           g_bytes_get_size (odd));
  g_assert_nonnull (strstr (text, line));
}

static void
test_unchanged (void)
{
  /* Extbody-Changed: no: the bytes that came in, whatever the body */
  g_autoptr (GBytes) odd = odd_message ();
  g_autofree char *s = sock ("unchanged");
  const char *args[] = { "-s", s, "-v", NULL };
  Run r = run (args, odd);
  g_assert_cmpint (r.status, ==, 0);
  assert_bytes_equal (r.out, odd);
  g_assert_nonnull (strstr (r.err, "changed no, references 0, resolved 0"));
  run_clear (&r);
}

static void
test_inet (void)
{
  g_autoptr (GBytes) odd = odd_message ();
  g_autofree char *s = g_strdup_printf ("inet:%u@127.0.0.1", server->port);
  const char *args[] = { "-s", s, "-v", NULL };
  Run r = run (args, odd);
  g_assert_cmpint (r.status, ==, 0);
  g_autoptr (GBytes) want = prefixed (odd);
  assert_bytes_equal (r.out, want);
  g_assert_nonnull (strstr (r.err, "changed yes, references 1, resolved 1"));
  run_clear (&r);
}

/* ---- fallbacks ---------------------------------------------------------- */

/* @s (a -s value) fails as @what says: the message byte for byte, exit 0,
 * one line; with --on-error tempfail nothing, exit 75, one line. */
static void
check_fallback (const char *s, const char *timeout, GBytes *msg, const char *what)
{
  const char *args[] = { "-s", s, "-t", timeout, NULL };
  Run r = run (args, msg);
  g_test_message ("%s: %s", s, r.err);
  g_assert_cmpint (r.status, ==, 0);
  assert_bytes_equal (r.out, msg);
  g_assert_true (g_str_has_prefix (r.err, "extbodyc: "));
  g_assert_nonnull (strstr (r.err, what));
  g_assert_true (g_str_has_suffix (r.err, "; message passed through unchanged\n"));
  /* one line */
  g_assert_true (strchr (r.err, '\n') == r.err + strlen (r.err) - 1);
  run_clear (&r);

  const char *tf[] = { "-s", s, "-t", timeout, "--on-error", "tempfail", NULL };
  r = run (tf, msg);
  g_assert_cmpint (r.status, ==, 75);
  g_assert_cmpuint (g_bytes_get_size (r.out), ==, 0);
  g_assert_nonnull (strstr (r.err, what));
  g_assert_nonnull (strstr (r.err, "exit 75"));
  run_clear (&r);
}

static void
test_fallbacks (void)
{
  g_autoptr (GBytes) odd = odd_message ();
  g_autoptr (GBytes) big = big_message ();
  static const struct { const char *mode, *what; } cases[] = {
    { "error", "the daemon answered an error: 500 the daemon failed: test" },
    { "refuse", "413 message over max_message_size" },
    { "plain", "no Extbody-Changed field" },
    { "garbage", "no HTTP/1.x status line" },
    { "short", "bytes after the answer" },
    { "cut", "the connection closed inside the body" },
    { "hugeheader", "a header over 64 KiB" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *s = sock (cases[i].mode);
    check_fallback (s, "30", odd, cases[i].what);
    check_fallback (s, "30", big, cases[i].what);
  }
  /* answered and closed before reading the message: whatever the kernel
   * makes of it (a reset, the 503), a fallback */
  g_autofree char *early = sock ("early");
  check_fallback (early, "30", big, early + 5);
}

static void
test_slow (void)
{
  g_autoptr (GBytes) odd = odd_message ();
  g_autofree char *s = sock ("slow");
  gint64 t0 = g_get_monotonic_time ();
  check_fallback (s, "0.5", odd, "timed out (-t)");
  double took = (g_get_monotonic_time () - t0) / 1e6;
  /* two runs of half a second each, and not the server's 30 s */
  g_assert_cmpfloat (took, >=, 1.0);
  g_assert_cmpfloat (took, <, 10.0);
}

static void
test_unreachable (void)
{
  g_autoptr (GBytes) odd = odd_message ();
  g_autofree char *nosock = g_build_filename (dir, "nobody-listens.sock", NULL);
  check_fallback (nosock, "30", odd, "cannot connect");
  g_autofree char *closed = g_strdup_printf ("inet:%u@127.0.0.1", test_free_port ());
  check_fallback (closed, "30", odd, "Connection refused");
}

/* ---- a pool of daemons (-s A,B, --tries) ----------------------------------- */

/* -s names several daemons: a try that the next daemon may make instead (no
 * connection, 502/503/504, a daemon gone before its answer) goes there, and
 * the message comes out once, from the daemon that answered, with one line
 * saying what happened to the first; a refusal another daemon would make too
 * (500) is not tried again; when every try fails, the fallback, one line. */
static void
test_pool (void)
{
  g_autoptr (GBytes) odd = odd_message ();
  g_autoptr (GBytes) want = prefixed (odd);
  g_autofree char *echo = sock ("echo");
  g_autofree char *dead = g_strdup_printf ("inet:%u@127.0.0.1", test_free_port ());
  static const char *const failing[] = { "dead", "busy", "gateway", "dies", "early", "cut" };
  for (guint i = 0; i < G_N_ELEMENTS (failing); i++) {
    g_autofree char *bad = i == 0 ? g_strdup (dead) : sock (failing[i]);
    g_autofree char *list = g_strdup_printf ("%s,%s", bad, echo);
    gboolean first_bad = FALSE;
    /* each process begins at a daemon chosen at random: both orders come
     * up (24 runs: all alike once in 8 million) */
    for (guint n = 0; n < 24; n++) {
      const char *args[] = { "-s", list, "-t", "30", NULL };
      Run r = run (args, odd);
      g_assert_cmpint (r.status, ==, 0);
      assert_bytes_equal (r.out, want);
      if (*r.err) {
        g_test_message ("%s: %s", failing[i], r.err);
        first_bad = TRUE;
        g_assert_true (g_str_has_prefix (r.err, "extbodyc: "));
        g_autofree char *done = g_strdup_printf ("; done by %s on try 2\n", echo);
        g_assert_true (g_str_has_suffix (r.err, done));
        g_assert_true (strchr (r.err, '\n') == r.err + strlen (r.err) - 1);
      }
      run_clear (&r);
    }
    g_assert_true (first_bad);
  }
  /* -s again is the same as a comma */
  const char *twice[] = { "-s", dead, "-s", echo, "--tries", "2", NULL };
  Run r = run (twice, odd);
  g_assert_cmpint (r.status, ==, 0);
  assert_bytes_equal (r.out, want);
  run_clear (&r);

  /* tries on one address: a pause, then the same daemon (a balancer's one
   * address sends it elsewhere); 500 is not tried again */
  static const struct { const char *mode; const char *tries; guint requests; const char *what; } one[] = {
    { "busy", "3", 3, "503 stopping: try again later (try 3 of 3; the first: " },
    { "dies", "2", 2, "the connection closed" },
    { "error", "3", 1, "500 the daemon failed: test; message passed through" },
    { "refuse", "3", 1, "413 message over max_message_size; message passed through" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (one); i++) {
    g_autofree char *s = sock (one[i].mode);
    guint before = requests_logged ();
    const char *args[] = { "-s", s, "--tries", one[i].tries, NULL };
    r = run (args, odd);
    g_test_message ("%s: %s", one[i].mode, r.err);
    g_assert_cmpint (r.status, ==, 0);
    assert_bytes_equal (r.out, odd);
    g_assert_nonnull (strstr (r.err, one[i].what));
    g_assert_true (g_str_has_suffix (r.err, "; message passed through unchanged\n"));
    g_assert_true (strchr (r.err, '\n') == r.err + strlen (r.err) - 1);
    g_assert_cmpuint (requests_logged () - before, ==, one[i].requests);
    run_clear (&r);
  }
  /* one daemon, no --tries: one try, as before there were lists */
  {
    g_autofree char *s = sock ("dies");
    guint before = requests_logged ();
    const char *args[] = { "-s", s, NULL };
    r = run (args, odd);
    g_assert_cmpint (r.status, ==, 0);
    assert_bytes_equal (r.out, odd);
    g_assert_true (g_str_has_suffix (r.err, "the connection closed without an answer; message passed through unchanged\n"));
    g_assert_cmpuint (requests_logged () - before, ==, 1);
    run_clear (&r);
  }
  /* every daemon gone: the fallback, --on-error's */
  g_autofree char *dead2 = g_strdup_printf ("inet:%u@127.0.0.1", test_free_port ());
  g_autofree char *both = g_strdup_printf ("%s,%s", dead, dead2);
  const char *gone[] = { "-s", both, "--on-error", "tempfail", NULL };
  r = run (gone, odd);
  g_assert_cmpint (r.status, ==, 75);
  g_assert_cmpuint (g_bytes_get_size (r.out), ==, 0);
  g_assert_nonnull (strstr (r.err, "Connection refused (try 2 of 2; the first: cannot connect"));
  run_clear (&r);
  /* -t is one deadline for every try */
  g_autofree char *slow = sock ("slow");
  g_autofree char *slow2 = g_strdup_printf ("%s,%s", slow, slow);
  gint64 t0 = g_get_monotonic_time ();
  const char *late[] = { "-s", slow2, "-t", "0.5", NULL };
  r = run (late, odd);
  g_assert_cmpint (r.status, ==, 0);
  assert_bytes_equal (r.out, odd);
  g_assert_nonnull (strstr (r.err, "timed out (-t)"));
  g_assert_cmpfloat ((g_get_monotonic_time () - t0) / 1e6, <, 5.0);
  run_clear (&r);
  /* usage */
  const char *const bad_args[][5] = {
    { "-s", "inet:http@127.0.0.1", NULL },
    { "--tries", "0", NULL },
    { "--tries", "65", NULL },
    { "-s", "inet:99999@127.0.0.1,unix:/x", NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad_args); i++) {
    r = run (bad_args[i], NULL);
    g_assert_cmpint (r.status, ==, 64);
    g_assert_cmpuint (g_bytes_get_size (r.out), ==, 0);
    run_clear (&r);
  }
  GString *many = g_string_new (NULL);
  for (guint i = 0; i < 17; i++)
    g_string_append_printf (many, "%s%s", i ? "," : "", echo);
  const char *too_many[] = { "-s", many->str, NULL };
  r = run (too_many, NULL);
  g_assert_cmpint (r.status, ==, 64);
  g_assert_nonnull (strstr (r.err, "more than 16 daemons"));
  run_clear (&r);
  g_string_free (many, TRUE);
}

/* -l FILE: the line goes to the file (appended), nothing to standard error,
 * the message still passed through whole; -l with a relative name is a usage
 * error. */
static void
test_log_file (void)
{
  g_autoptr (GBytes) odd = odd_message ();
  g_autofree char *nosock = g_build_filename (dir, "nobody-listens.sock", NULL);
  g_autofree char *log = g_build_filename (dir, "extbodyc.log", NULL);
  g_assert_true (g_file_set_contents (log, "before\n", -1, NULL));
  const char *args[] = { "-s", nosock, "-t", "30", "-l", log, NULL };
  Run r = run (args, odd);
  g_assert_cmpint (r.status, ==, 0);
  assert_bytes_equal (r.out, odd);
  g_assert_cmpstr (r.err, ==, "");
  run_clear (&r);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (log, &text, NULL, NULL));
  g_assert_true (g_str_has_prefix (text, "before\nextbodyc["));
  g_assert_nonnull (strstr (text, "]: cannot connect "));
  g_assert_true (g_str_has_suffix (text, "; message passed through unchanged\n"));
  /* a usage error reads no input: none is given (see test_usage_and_output) */
  const char *relative[] = { "-s", nosock, "-l", "extbodyc.log", NULL };
  r = run (relative, NULL);
  g_assert_cmpint (r.status, ==, 64);
  g_assert_nonnull (strstr (r.err, "-l wants stderr, syslog or an absolute file name"));
  run_clear (&r);
}

/* -x: not sent (the server sees no request), passed through whole, the part
 * past the limit copied without being held. */
static void
test_max_size (void)
{
  g_autoptr (GBytes) odd = odd_message ();
  g_autoptr (GBytes) big = big_message ();
  g_autofree char *s = sock ("echo");
  guint before = requests_logged ();
  const char *small[] = { "-s", s, "-x", "20", NULL };
  Run r = run (small, odd);
  g_assert_cmpint (r.status, ==, 0);
  assert_bytes_equal (r.out, odd);
  g_assert_nonnull (strstr (r.err, "message over 20 bytes (-x): not sent"));
  run_clear (&r);
  const char *mib[] = { "-s", s, "-x", "1M", "--on-error", "tempfail", NULL };
  r = run (mib, big);
  g_assert_cmpint (r.status, ==, 0);
  assert_bytes_equal (r.out, big);
  run_clear (&r);
  g_assert_cmpuint (requests_logged (), ==, before);
  /* -x the message's size: sent */
  g_autofree char *exact = g_strdup_printf ("%zu", g_bytes_get_size (odd));
  const char *fits[] = { "-s", s, "-x", exact, NULL };
  r = run (fits, odd);
  g_autoptr (GBytes) want = prefixed (odd);
  assert_bytes_equal (r.out, want);
  run_clear (&r);
  g_assert_cmpuint (requests_logged (), ==, before + 1);
}

static void
test_inspect (void)
{
  g_autoptr (GBytes) odd = odd_message ();
  g_autofree char *echo = sock ("echo");
  const char *ok[] = { "-m", "inspect", "-s", echo, NULL };
  Run r = run (ok, odd);
  g_assert_cmpint (r.status, ==, 0);
  g_autofree char *json = g_strdup_printf ("{\"path\":\"/inspect\",\"bytes\":%zu}\n", g_bytes_get_size (odd));
  g_assert_cmpmem (g_bytes_get_data (r.out, NULL), g_bytes_get_size (r.out), json, strlen (json));
  run_clear (&r);
  /* no message to pass through: 75 for what may pass, 69 for a refusal */
  static const struct { const char *mode; int status; } cases[] = {
    { "error", 75 }, { "garbage", 75 }, { "cut", 75 }, { "refuse", 69 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *s = sock (cases[i].mode);
    const char *args[] = { "-m", "inspect", "-s", s, NULL };
    r = run (args, odd);
    g_assert_cmpint (r.status, ==, cases[i].status);
    g_assert_cmpuint (g_bytes_get_size (r.out), ==, 0);
    g_assert_nonnull (strstr (r.err, "nothing inspected"));
    run_clear (&r);
  }
}

/* ---- the program itself ------------------------------------------------- */

static void
test_usage_and_output (void)
{
  static const char *const bad[][3] = {
    { "-m", "resolve", NULL }, { "-t", "-1", NULL }, { "-x", "12Q", NULL },
    { "--on-error", "retry", NULL }, { "--bogus", NULL, NULL }, { "stray", NULL, NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    /* no input: a usage error reads none (a write to it would be a SIGPIPE here) */
    Run r = run (bad[i], NULL);
    g_assert_cmpint (r.status, ==, 64);
    g_assert_cmpuint (g_bytes_get_size (r.out), ==, 0);
    run_clear (&r);
  }
  const char *version[] = { "--version", NULL };
  Run r = run (version, NULL);
  g_assert_cmpint (r.status, ==, 0);
  run_clear (&r);
  /* standard output that cannot be written: EX_IOERR */
  g_autofree char *s = sock ("echo");
  g_autofree char *cmd = g_strdup_printf ("printf 'Subject: x\\n\\nbody\\n' | '%s' -s '%s' > /dev/full",
                                          g_getenv ("EXTBODYC"), s);
  g_assert_cmpint (test_sh (cmd, NULL), ==, 74);
}

/* libc and nothing else: that is what makes it start fast. */
static void
test_libc_only (void)
{
  g_autofree char *cmd = g_strdup_printf ("ldd '%s'", g_getenv ("EXTBODYC"));
  g_autofree char *out = NULL;
  g_assert_cmpint (test_sh (cmd, &out), ==, 0);
  g_test_message ("%s", out);
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    const char *l = g_strstrip (lines[i]);
    if (!*l)
      continue;
    /* a sanitizer build links its run-time libraries too */
    if (TEST_UNDER_ASAN && (strstr (l, "libasan") || strstr (l, "libubsan") || strstr (l, "libm.so")
                            || strstr (l, "libgcc_s") || strstr (l, "libstdc++")))
      continue;
    if (!g_str_has_prefix (l, "linux-vdso.so") && !g_str_has_prefix (l, "libc.so.6")
        && !strstr (l, "/ld-linux"))
      g_error ("extbodyc links more than libc: %s", l);
  }
}

static void
test_startup (void)
{
  /* 50 runs of --version: the start-up alone, exec included; beside each,
   * a run of true(1), the floor of a fork and exec on this machine now */
  const char *argv[] = { g_getenv ("EXTBODYC"), "--version", NULL };
  const char *floor_argv[] = { "true", NULL };
  guint runs = 50;
  gint64 spent = 0, floor_spent = 0;
  for (guint i = 0; i < runs; i++) {
    int status;
    gint64 t0 = g_get_monotonic_time ();
    g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                                 NULL, NULL, &status, NULL));
    gint64 t1 = g_get_monotonic_time ();
    g_assert_true (g_spawn_check_wait_status (status, NULL));
    g_assert_true (g_spawn_sync (NULL, (char **) floor_argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                 NULL, NULL, &status, NULL));
    floor_spent += g_get_monotonic_time () - t1;
    spent += t1 - t0;
  }
  double ms = spent / 1000.0 / runs, floor_ms = floor_spent / 1000.0 / runs;
  g_test_message ("start-up: %.2f ms a run (fork and exec included); true(1): %.2f ms", ms, floor_ms);
  if (g_test_verbose ())
    g_printerr ("extbodyc start-up: %.2f ms a run, true(1) %.2f ms\n", ms, floor_ms);
  /* `extbody` takes about 8 ms, some 8 times true(1); extbodyc, a libc
   * program, at most 3 times it (or 5 ms), however loaded the machine */
  g_assert_cmpfloat (ms, <, MAX (5.0, 3 * floor_ms));
}

/* -e COMMAND: the command runs in extbodyc's place with the whole result on
 * its standard input and extbodyc's standard output as its own: the answer,
 * or the message as it came when the daemon failed; with --on-error tempfail
 * and no answer, or a command that cannot be run, it is not run: exit 75. A
 * large result (the big message) goes through the memory file whole. */
static void
test_exec (void)
{
  g_autoptr (GBytes) odd = odd_message ();
  g_autoptr (GBytes) big = big_message ();
  g_autofree char *good = sock ("echo");
  g_autofree char *none = g_strdup_printf ("unix:%s/nobody-here.sock", dir);
  /* cat, after a line of its own: proves the command wrote, not extbodyc */
  const char *sh = "printf 'ran:%s\\n' \"$*\"; exec cat";
  GBytes *msgs[] = { odd, big };
  for (guint i = 0; i < G_N_ELEMENTS (msgs); i++) {
    const char *args[] = { "-s", good, "-t", "30", "-e", "sh", "-c", sh, "sh", "-G", "-i", "--", "rcpt", NULL };
    Run r = run (args, msgs[i]);
    g_assert_cmpint (r.status, ==, 0);
    g_autoptr (GBytes) answer = prefixed (msgs[i]);
    gsize len = 0;
    const char *d = g_bytes_get_data (r.out, &len);
    g_assert_true (len > 0 && g_str_has_prefix (d, "ran:-G -i -- rcpt\n"));
    g_autoptr (GBytes) rest = g_bytes_new_from_bytes (r.out, strlen ("ran:-G -i -- rcpt\n"), len - strlen ("ran:-G -i -- rcpt\n"));
    assert_bytes_equal (rest, answer);
    run_clear (&r);
  }
  /* the daemon unreachable: the message as it came */
  const char *fb[] = { "-s", none, "-t", "5", "-e", "cat", NULL };
  Run r = run (fb, odd);
  g_assert_cmpint (r.status, ==, 0);
  assert_bytes_equal (r.out, odd);
  g_assert_nonnull (strstr (r.err, "message passed through unchanged"));
  run_clear (&r);
  /* --on-error tempfail: the command not run */
  const char *tf[] = { "-s", none, "-t", "5", "--on-error", "tempfail", "-e", "sh", "-c", "echo ran", NULL };
  r = run (tf, odd);
  g_assert_cmpint (r.status, ==, 75);
  g_assert_cmpuint (g_bytes_get_size (r.out), ==, 0);
  g_assert_nonnull (strstr (r.err, "-e sh not run"));
  run_clear (&r);
  /* a command that cannot be run */
  const char *bad[] = { "-s", good, "-t", "30", "-e", "/nonexistent/sendmail", NULL };
  r = run (bad, odd);
  g_assert_cmpint (r.status, ==, 75);
  g_assert_cmpuint (g_bytes_get_size (r.out), ==, 0);
  g_assert_nonnull (strstr (r.err, "cannot run /nonexistent/sendmail"));
  run_clear (&r);
  /* -e with nothing after it */
  const char *empty[] = { "-e", NULL };
  r = run (empty, NULL);   /* it stops before reading anything */
  g_assert_cmpint (r.status, ==, 64);
  run_clear (&r);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* a child that stops reading its input early shows as a failed write
   * (EPIPE, an assertion naming the case), not as this program killed */
  signal (SIGPIPE, SIG_IGN);
  if (!g_getenv ("EXTBODYC"))
    test_skip_all ("EXTBODYC is not set (ctest sets it)");
  g_autoptr (GError) error = NULL;
  dir = g_dir_make_tmp ("extbodyc-XXXXXX", &error);
  g_assert_no_error (error);
  const char *args[] = { "--dir", dir, NULL };
  server = test_server_start ("answerd.py", args, NULL, FALSE, &error);
  g_assert_no_error (error);
  g_test_add_func ("/extbodyc/good-answers", test_good_answers);
  g_test_add_func ("/extbodyc/request", test_request);
  g_test_add_func ("/extbodyc/unchanged", test_unchanged);
  g_test_add_func ("/extbodyc/inet", test_inet);
  g_test_add_func ("/extbodyc/fallbacks", test_fallbacks);
  g_test_add_func ("/extbodyc/slow", test_slow);
  g_test_add_func ("/extbodyc/unreachable", test_unreachable);
  g_test_add_func ("/extbodyc/pool", test_pool);
  g_test_add_func ("/extbodyc/log-file", test_log_file);
  g_test_add_func ("/extbodyc/max-size", test_max_size);
  g_test_add_func ("/extbodyc/inspect", test_inspect);
  g_test_add_func ("/extbodyc/exec", test_exec);
  g_test_add_func ("/extbodyc/usage-and-output", test_usage_and_output);
  g_test_add_func ("/extbodyc/libc-only", test_libc_only);
  /* a sanitizer's run-time start-up is not the program's */
  if (!TEST_UNDER_ASAN)
    g_test_add_func ("/extbodyc/startup", test_startup);
  int r = g_test_run ();
  test_server_stop (server);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  test_sh (rm, NULL);
  return r;
}
