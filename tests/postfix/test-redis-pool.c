/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-redis-pool.c - a pool of extbodyd instances sharing one Redis,
 * each behind its own private Postfix on 127.0.0.1 (tests/postfix/pf-peer.sh,
 * milter_default_action = tempfail), the real parts end to end: a
 * redis-server the test starts (test_redis_*, no persistence), the loopback
 * HTTP server (tests/servers/httpd.py) counting the requests each URL gets
 * (/counts), and SMTP sessions the test holds itself, several at once.
 *
 *   once        300 messages referencing 30 URLs, spread over the pool: each
 *               URL fetched exactly once in total, every message resolved.
 *   rate        max_requests_per_host = 6 with 18 messages, 6 per instance,
 *               each its own URL: the server sees no more requests than one
 *               bucket of 6 a minute lets through in the time the run took
 *               (each instance alone would let all 18 through).
 *   faults      Redis killed mid-run then restarted, and paused with SIGSTOP
 *               then resumed, with messages in flight: every message still
 *               delivered, resolved (the instances fall back to fetches of
 *               their own, at most one per instance and URL), each instance
 *               logs Redis down once and back once.
 *
 * Every message the test sends is delivered exactly once, and every delivered
 * message carries the milter's X-Extbody field: nothing lost, nothing passed
 * unfiltered. Needs root (Postfix refuses otherwise) and redis-server:
 * skipped (exit 77) without them. Every process it starts is registered with
 * the watchdog (test-server.h). */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>
#include "test-server.h"
#include "mta-dir.h"
#include "mta-maildir.h"
#include "mta-milter.h"
#include "mta-postfix.h"
#include "mta-smtp.h"

#define N_MILTERS 3
#define N_POOL_MESSAGES 300
#define N_POOL_URLS 30
#define RATE_N 6                 /* max_requests_per_host in the rate case */
#define N_RATE_MESSAGES 18       /* RATE_N per instance: each alone would fetch them all */
#define N_FAULT_MESSAGES 60
#define N_FAULT_URLS 20          /* each referenced once through every instance */
#define N_THREADS 6              /* SMTP sessions at once (per instance at most) */

typedef struct {
  MtaMilter   *milter;     /* NULL: not started, or stopped */
  char        *pfdir;      /* its Postfix */
  char        *maildir_new;
  guint        smtp_port;
  guint        wd_pf;
} Instance;

static char *dir;
static char *conf;           /* the configuration every instance reads */
static TestServer *httpd;
static guint http_port;
static TestRedis *redis;
static Instance inst[N_MILTERS];
static guint n_reloads;
/* every message sent, by id: the X-Extbody resolution it must arrive with
 * ("2 of 2"; "" for either "2 of 2" or "1 of 2") */
static GHashTable *expected;

static guint
log_count (guint k, const char *needle)
{
  return mta_milter_log_count (inst[k].milter, needle);
}

/* Wait (at most 60 s) until instance @k's log holds @needle @n times. */
static gboolean
log_wait (guint k, const char *needle, guint n)
{
  return mta_milter_log_wait (inst[k].milter, needle, n);
}

static void
milter_start (guint k)
{
  g_autofree char *log = g_strdup_printf ("%s/milter-%u.log", dir, k);
  g_autofree char *sock = g_strdup_printf ("%s/milter-%u.sock", dir, k);
  g_autofree char *pidfile = g_strdup_printf ("%s/milter-%u.pid", dir, k);
  /* Postfix's smtpd (user postfix) connects to a socket made by root: every
   * local user may */
  inst[k].milter = mta_milter_start (sock, conf, log, (const char *const[]) {
    "-P", pidfile, "--allow-network", "127.0.0.1/32", "-o", "milter_umask=000", NULL });
}

/* SIGTERM, and wait. Returns: whether it exited 0 (under the sanitizers, a
 * leak or an error found on the way makes it fail). */
static gboolean
milter_stop (guint k)
{
  MtaMilter *m = inst[k].milter;
  if (!m)
    return TRUE;
  gboolean ok = mta_milter_stop (m, FALSE) == 0;
  if (!ok) {
    g_autofree char *log = mta_milter_log (m);
    g_printerr ("milter %u did not exit 0; its log:\n%s", k, log);
  }
  g_clear_pointer (&inst[k].milter, mta_milter_free);
  return ok;
}

/* Its private Postfix, with the milter's socket as its only smtpd_milters. */
static void
postfix_start (guint k)
{
  Instance *m = &inst[k];
  m->pfdir = g_strdup_printf ("%s/pf-%u", dir, k);
  m->maildir_new = mta_postfix_maildir_new (m->pfdir);
  g_autofree char *spec = g_strdup_printf ("unix:%s", m->milter->sock);
  m->wd_pf = mta_postfix_up (m->pfdir, spec, "tempfail", &m->smtp_port);
  /* Postfix waits for the end of message longer than the milter's
   * message_deadline (20 s at most here): past the deadline the milter gives
   * up on its own, and a message it took too long over would be deferred */
  g_assert_cmpint (mta_postfix_set (m->pfdir, "milter_content_timeout=40s"), ==, 0);
}

static void
postfix_stop (guint k)
{
  Instance *m = &inst[k];
  if (!m->pfdir)
    return;
  mta_postfix_down (m->pfdir, m->wd_pf);
}

/* The configuration every instance reads, then SIGHUP to each: the messages
 * after it get a fetcher of their own (empty local cache, a new Redis
 * connection) with keys under @prefix. */
static void
configure (const char *prefix, guint rate, guint deadline)
{
  g_autofree char *text = g_strdup_printf ("[extbody]\nfetch = on\n"
                                           "redis_server = 127.0.0.1:%u\n"
                                           /* generous: a loaded machine must not make
                                            * Redis look down when it is up */
                                           "redis_timeout = 2000\n"
                                           "redis_prefix = %s\n"
                                           "max_requests_per_host = %u\n"
                                           "message_deadline = %u\nfetch_timeout = %u\n",
                                           redis->port, prefix, rate, deadline, deadline);
  g_assert_true (g_file_set_contents (conf, text, -1, NULL));
  if (!inst[0].milter)
    return;
  n_reloads++;
  for (guint k = 0; k < N_MILTERS; k++)
    mta_milter_signal (inst[k].milter, SIGHUP);
  for (guint k = 0; k < N_MILTERS; k++)
    g_assert_true (log_wait (k, "SIGHUP: reloaded configuration from ", n_reloads));
}

/* ---- SMTP, several sessions at once ----------------------------------------- */

typedef struct {
  GSocketConnection *conn;
  GDataInputStream  *in;
  GOutputStream     *out;
} Smtp;

/* Returns: the reply's code (its last line's), or -1 when the connection broke. */
static int
smtp_reply (Smtp *s)
{
  for (;;) {
    g_autofree char *line = g_data_input_stream_read_line (s->in, NULL, NULL, NULL);
    if (!line || strlen (line) < 3)
      return -1;
    if (line[3] != '-')
      return atoi (line);
  }
}

static int
smtp_command (Smtp *s, const char *command)
{
  if (!g_output_stream_write_all (s->out, command, strlen (command), NULL, NULL, NULL))
    return -1;
  return smtp_reply (s);
}

static void
smtp_close (Smtp *s)
{
  if (!s)
    return;
  smtp_command (s, "QUIT\r\n");
  g_object_unref (s->in);
  g_object_unref (s->conn);
  g_free (s);
}

static Smtp *
smtp_open (guint port)
{
  g_autoptr (GSocketClient) client = g_socket_client_new ();
  g_socket_client_set_enable_proxy (client, FALSE);
  g_socket_client_set_timeout (client, 120);
  GSocketConnection *conn = g_socket_client_connect_to_host (client, "127.0.0.1", (guint16) port, NULL, NULL);
  if (!conn)
    return NULL;
  Smtp *s = g_new0 (Smtp, 1);
  s->conn = conn;
  s->in = g_data_input_stream_new (g_io_stream_get_input_stream (G_IO_STREAM (conn)));
  g_data_input_stream_set_newline_type (s->in, G_DATA_STREAM_NEWLINE_TYPE_CR_LF);
  s->out = g_io_stream_get_output_stream (G_IO_STREAM (conn));
  if (smtp_reply (s) != 220 || smtp_command (s, "HELO client.test.example\r\n") != 250) {
    smtp_close (s);
    return NULL;
  }
  return s;
}

/* Send @msg (CRLF lines, none starting with a dot). Returns: the reply to
 * its end of data (250: accepted), or the first reply that was not the one
 * expected, or -1 when the connection broke. */
static int
smtp_send (Smtp *s, const char *msg)
{
  int code;
  if ((code = smtp_command (s, "MAIL FROM:<a@test.example>\r\n")) != 250
      || (code = smtp_command (s, "RCPT TO:<b@test.example>\r\n")) != 250
      || (code = smtp_command (s, "DATA\r\n")) != 354) {
    if (code > 0)
      smtp_command (s, "RSET\r\n");
    return code;
  }
  if (!g_output_stream_write_all (s->out, msg, strlen (msg), NULL, NULL, NULL))
    return -1;
  return smtp_command (s, ".\r\n");
}

typedef struct {
  guint  instance;
  char  *id;
  char  *msg;
  int    code;      /* the end-of-data reply */
  gint64 usecs;     /* how long the message took, MAIL FROM to the reply */
} Job;

typedef struct {
  GPtrArray *jobs;
  gint       next;
  gint       done;
  GThread   *threads[N_THREADS];
} Batch;

static void
job_free (Job *j)
{
  g_free (j->id);
  g_free (j->msg);
  g_free (j);
}

/* A message with Message-ID <@id@test.example>, an http reference to @path
 * on the test server and a data: one (so that a message whose http
 * reference is left alone still shows the milter's X-Extbody field). */
static char *
message (const char *id, const char *path)
{
  return mta_smtp_message_http_data (id, http_port, path);
}

static Batch *
batch_new (void)
{
  Batch *b = g_new0 (Batch, 1);
  b->jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) job_free);
  return b;
}

/* Add a message to send through instance @k, expected to arrive with
 * @resolved ("" for either "2 of 2" or "1 of 2"). */
static void
batch_add (Batch *b, guint k, const char *id, const char *path, const char *resolved)
{
  Job *j = g_new0 (Job, 1);
  j->instance = k;
  j->id = g_strdup (id);
  j->msg = message (id, path);
  g_ptr_array_add (b->jobs, j);
  g_assert_false (g_hash_table_contains (expected, id));
  g_hash_table_insert (expected, g_strdup (id), g_strdup (resolved));
}

static gpointer
batch_worker (gpointer data)
{
  Batch *b = data;
  Smtp *conns[N_MILTERS] = { NULL };
  for (;;) {
    gint i = g_atomic_int_add (&b->next, 1);
    if (i >= (gint) b->jobs->len)
      break;
    Job *j = b->jobs->pdata[i];
    if (!conns[j->instance])
      conns[j->instance] = smtp_open (inst[j->instance].smtp_port);
    gint64 t0 = g_get_monotonic_time ();
    j->code = conns[j->instance] ? smtp_send (conns[j->instance], j->msg) : -1;
    j->usecs = g_get_monotonic_time () - t0;
    if (j->code < 0)
      g_clear_pointer (&conns[j->instance], smtp_close);
    g_atomic_int_inc (&b->done);
  }
  for (guint k = 0; k < N_MILTERS; k++)
    smtp_close (conns[k]);
  return NULL;
}

static void
batch_start (Batch *b)
{
  for (guint t = 0; t < N_THREADS; t++)
    b->threads[t] = g_thread_new ("smtp", batch_worker, b);
}

/* Wait (at most 120 s) until @n messages of @b have had their answer. */
static void
batch_wait_done (Batch *b, guint n)
{
  for (int t = 0; t < 120 * 100 && (guint) g_atomic_int_get (&b->done) < n; t++)
    g_usleep (10000);
  g_assert_cmpuint ((guint) g_atomic_int_get (&b->done), >=, n);
}

/* Join the senders: every message accepted. Returns: the longest time one
 * took, in seconds. */
static double
batch_finish (Batch *b)
{
  for (guint t = 0; t < N_THREADS; t++)
    g_thread_join (b->threads[t]);
  gint64 longest = 0;
  for (guint i = 0; i < b->jobs->len; i++) {
    Job *j = b->jobs->pdata[i];
    if (j->code != 250)
      g_test_message ("%s (instance %u): %d", j->id, j->instance, j->code);
    g_assert_cmpint (j->code, ==, 250);
    longest = MAX (longest, j->usecs);
  }
  return (double) longest / G_USEC_PER_SEC;
}

static void
batch_free (Batch *b)
{
  g_ptr_array_unref (b->jobs);
  g_free (b);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Batch, batch_free)

/* ---- what arrived, what the server saw -------------------------------------- */

static guint
n_delivered (void)
{
  guint n = 0;
  for (guint k = 0; k < N_MILTERS; k++) {
    g_autoptr (GDir) d = g_dir_open (inst[k].maildir_new, 0, NULL);
    while (d && g_dir_read_name (d))
      n++;
  }
  return n;
}

/* Wait (at most 60 s) until every message sent so far has been delivered. */
static void
wait_delivered (void)
{
  guint want = g_hash_table_size (expected);
  for (int t = 0; t < 60 * 20 && n_delivered () < want; t++)
    g_usleep (50000);
  g_assert_cmpuint (n_delivered (), >=, want);
}

/* Every delivered message, by id: its X-Extbody resolution ("2 of 2"; "-"
 * when it has no X-Extbody field), and in @copies how many copies arrived. */
static GHashTable *
scan_delivered (GHashTable **copies)
{
  GHashTable *got = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  *copies = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint k = 0; k < N_MILTERS; k++) {
    g_autoptr (GDir) d = g_dir_open (inst[k].maildir_new, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name (d))) {
      g_autofree char *p = g_build_filename (inst[k].maildir_new, name, NULL);
      g_autofree char *text = NULL;
      g_assert_true (g_file_get_contents (p, &text, NULL, NULL));
      const char *mid = strstr (text, "\nMessage-ID: <");
      g_assert_nonnull (mid);
      mid += strlen ("\nMessage-ID: <");
      g_autofree char *id = g_strndup (mid, strcspn (mid, "@"));
      const char *field = strstr (text, "\nX-Extbody: resolved ");
      char *resolved = g_strdup ("-");
      if (field) {
        field += strlen ("\nX-Extbody: resolved ");
        const char *end = strstr (field, " external-body");
        g_free (resolved);
        resolved = end ? g_strndup (field, (gsize) (end - field)) : g_strdup ("?");
      }
      guint n = GPOINTER_TO_UINT (g_hash_table_lookup (*copies, id));
      g_hash_table_insert (*copies, g_strdup (id), GUINT_TO_POINTER (n + 1));
      g_hash_table_insert (got, g_steal_pointer (&id), resolved);
    }
  }
  return got;
}

/* The messages of @b arrived once each, as expected. @full, @partial: how
 * many with both references resolved, with the data: one only. */
static void
check_batch (Batch *b, guint *full, guint *partial)
{
  wait_delivered ();
  g_autoptr (GHashTable) copies = NULL;
  g_autoptr (GHashTable) got = scan_delivered (&copies);
  *full = *partial = 0;
  for (guint i = 0; i < b->jobs->len; i++) {
    Job *j = b->jobs->pdata[i];
    const char *want = g_hash_table_lookup (expected, j->id);
    const char *have = g_hash_table_lookup (got, j->id);
    if (!have || (*want && strcmp (want, have) != 0))
      g_test_message ("%s: expected resolved %s, got %s", j->id, *want ? want : "2 or 1 of 2",
                      have ? have : "(not delivered)");
    g_assert_nonnull (have);
    g_assert_cmpuint (GPOINTER_TO_UINT (g_hash_table_lookup (copies, j->id)), ==, 1);
    if (*want)
      g_assert_cmpstr (have, ==, want);
    else
      g_assert_true (strcmp (have, "2 of 2") == 0 || strcmp (have, "1 of 2") == 0);
    if (strcmp (have, "2 of 2") == 0)
      (*full)++;
    else
      (*partial)++;
  }
}

/* The requests httpd.py got, by target (path and query). */
static GHashTable *
http_counts (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GSocketClient) client = g_socket_client_new ();
  g_socket_client_set_enable_proxy (client, FALSE);
  g_socket_client_set_timeout (client, 10);
  g_autoptr (GSocketConnection) c = g_socket_client_connect_to_host (client, "127.0.0.1", (guint16) http_port,
                                                                     NULL, &error);
  g_assert_no_error (error);
  const char *req = "GET /counts HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  g_assert_true (g_output_stream_write_all (g_io_stream_get_output_stream (G_IO_STREAM (c)), req, strlen (req),
                                            NULL, NULL, &error));
  g_autoptr (GString) resp = g_string_new (NULL);
  char buf[4096];
  gssize got;
  while ((got = g_input_stream_read (g_io_stream_get_input_stream (G_IO_STREAM (c)), buf, sizeof buf, NULL,
                                     &error)) > 0)
    g_string_append_len (resp, buf, got);
  const char *body = strstr (resp->str, "\r\n\r\n");
  g_assert_nonnull (body);
  GHashTable *counts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_auto (GStrv) lines = g_strsplit (body + 4, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    const char *sp = strchr (lines[i], ' ');
    if (sp)
      g_hash_table_insert (counts, g_strdup (sp + 1), GUINT_TO_POINTER ((guint) atoi (lines[i])));
  }
  return counts;
}

static guint
http_count (GHashTable *counts, const char *target)
{
  return GPOINTER_TO_UINT (g_hash_table_lookup (counts, target));
}

static guint64
redis_commands (void)
{
  g_autofree char *info = test_redis_command (redis, "INFO stats");
  const char *p = strstr (info, "total_commands_processed:");
  g_assert_nonnull (p);
  return g_ascii_strtoull (p + strlen ("total_commands_processed:"), NULL, 10);
}

/* ---- the cases ----------------------------------------------------------------- */

/* 300 messages, 30 URLs (each answered after 200 ms, so that the first
 * messages for one URL are in several instances at once): every URL fetched
 * once by the whole pool, every message resolved. */
static void
test_each_url_once (void)
{
  configure ("pool:", 100000, 20);
  g_autoptr (Batch) b = batch_new ();
  for (guint i = 0; i < N_POOL_MESSAGES; i++) {
    g_autofree char *id = g_strdup_printf ("pool-%u", i);
    g_autofree char *path = g_strdup_printf ("/slow?ms=200&u=pool-%u", i % N_POOL_URLS);
    /* every URL reaches every instance (not i % N_MILTERS: 30 URLs, 3 instances) */
    batch_add (b, (i + i / N_POOL_URLS) % N_MILTERS, id, path, "2 of 2");
  }
  guint64 c0 = redis_commands ();
  gint64 t0 = g_get_monotonic_time ();
  batch_start (b);
  double longest = batch_finish (b);
  guint full = 0, partial = 0;
  check_batch (b, &full, &partial);
  double secs = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  guint64 c1 = redis_commands ();
  g_assert_cmpuint (full, ==, N_POOL_MESSAGES);

  g_autoptr (GHashTable) counts = http_counts ();
  guint fetches = 0, most = 0;
  for (guint u = 0; u < N_POOL_URLS; u++) {
    g_autofree char *target = g_strdup_printf ("/slow?ms=200&u=pool-%u", u);
    guint n = http_count (counts, target);
    if (n != 1)
      g_test_message ("%s fetched %u times", target, n);
    fetches += n;
    most = MAX (most, n);
  }
  g_test_message ("pool of %u: %u messages, %u URLs: %u resolved, %u fetches (at most %u per URL), "
                  "%.2f Redis commands per message, %.1f messages/s, longest message %.2f s",
                  N_MILTERS, N_POOL_MESSAGES, N_POOL_URLS, full, fetches, most,
                  (double) (c1 - c0) / N_POOL_MESSAGES, N_POOL_MESSAGES / secs, longest);
  g_assert_cmpuint (fetches, ==, N_POOL_URLS);
  g_assert_cmpuint (most, ==, 1);
}

/* max_requests_per_host = RATE_N: a bucket of RATE_N at once, then one each
 * 60/RATE_N s, for the whole pool. N_RATE_MESSAGES messages, RATE_N through
 * each instance, each its own URL, message_deadline 5 s: a token bucket of
 * its own in each instance would let every one through; the shared one lets
 * RATE_N through, and one more each 10 s the run lasted. */
static void
test_rate_holds_across_the_pool (void)
{
  configure ("rate:", RATE_N, 5);
  g_autoptr (Batch) b = batch_new ();
  for (guint i = 0; i < N_RATE_MESSAGES; i++) {
    g_autofree char *id = g_strdup_printf ("rate-%u", i);
    g_autofree char *path = g_strdup_printf ("/text?rate=%u", i);
    batch_add (b, i % N_MILTERS, id, path, "");
  }
  gint64 t0 = g_get_monotonic_time ();
  batch_start (b);
  batch_finish (b);
  guint full = 0, partial = 0;
  check_batch (b, &full, &partial);
  g_autoptr (GHashTable) counts = http_counts ();
  /* the window: from before the first message to after the count, so longer
   * than the one in which the server saw the requests */
  double secs = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  guint seen = 0;
  for (guint i = 0; i < N_RATE_MESSAGES; i++) {
    g_autofree char *target = g_strdup_printf ("/text?rate=%u", i);
    seen += http_count (counts, target);
  }
  guint allowed = RATE_N + (guint) (secs * RATE_N / 60.0);
  g_test_message ("rate %u/min for the pool: %u messages (%u per instance) in %.2f s: the server saw %u "
                  "requests (the bucket allows %u in that time; each instance alone would allow %u), "
                  "%u messages resolved, %u left rate-limited",
                  RATE_N, N_RATE_MESSAGES, N_RATE_MESSAGES / N_MILTERS, secs, seen, allowed, N_RATE_MESSAGES,
                  full, partial);
  /* the request a message fetched is the one its http reference resolved */
  g_assert_cmpuint (seen, ==, full);
  g_assert_cmpuint (seen, <=, allowed);
  g_assert_cmpuint (seen, >=, 1);
  g_assert_cmpuint (partial, >=, 1);
  for (guint k = 0; k < N_MILTERS; k++)
    g_assert_cmpuint (log_count (k, "Redis 127.0.0.1:"), ==, 0);
}

typedef enum { FAULT_KILL, FAULT_STOP } Fault;

/* N_FAULT_MESSAGES messages, the three for one URL one through each instance
 * at once; the fault comes after a quarter of them, goes after two thirds,
 * with messages in flight both times. Then messages until every instance has
 * logged Redis back. */
static void
run_fault (Fault fault)
{
  const char *tag = fault == FAULT_KILL ? "kill" : "stop";
  g_autofree char *prefix = g_strdup_printf ("%s:", tag);
  configure (prefix, 100000, 20);
  g_autofree char *down_line = g_strdup_printf ("Redis 127.0.0.1:%u is down", redis->port);
  g_autofree char *back_line = g_strdup_printf ("Redis 127.0.0.1:%u is back", redis->port);
  guint downs[N_MILTERS], backs[N_MILTERS];
  for (guint k = 0; k < N_MILTERS; k++) {
    downs[k] = log_count (k, down_line);
    backs[k] = log_count (k, back_line);
  }

  g_autoptr (Batch) b = batch_new ();
  for (guint i = 0; i < N_FAULT_MESSAGES; i++) {
    g_autofree char *id = g_strdup_printf ("%s-%u", tag, i);
    g_autofree char *path = g_strdup_printf ("/slow?ms=100&u=%s-%u", tag, i / N_MILTERS);
    batch_add (b, i % N_MILTERS, id, path, "2 of 2");
  }
  batch_start (b);
  batch_wait_done (b, N_FAULT_MESSAGES / 4);
  if (fault == FAULT_KILL)
    test_redis_kill (redis);
  else
    test_redis_signal (redis, SIGSTOP);
  guint at_fault = (guint) g_atomic_int_get (&b->done);
  batch_wait_done (b, 2 * N_FAULT_MESSAGES / 3);
  guint at_recovery = (guint) g_atomic_int_get (&b->done);
  if (fault == FAULT_KILL)
    test_redis_restart (redis);
  else
    test_redis_signal (redis, SIGCONT);
  double longest = batch_finish (b);
  guint full = 0, partial = 0;
  check_batch (b, &full, &partial);
  g_assert_cmpuint (full, ==, N_FAULT_MESSAGES);

  /* Redis was down for each instance, then back: one message at a time
   * through each instance that has not said so yet (a message tries Redis
   * again once the instance's pause has passed, 8 s at most) */
  guint probes = 0;
  g_autoptr (Batch) p = batch_new ();
  for (guint round = 0; round < 200; round++) {
    gboolean all_back = TRUE;
    for (guint k = 0; k < N_MILTERS; k++) {
      if (log_count (k, back_line) > backs[k])
        continue;
      all_back = FALSE;
      g_autofree char *id = g_strdup_printf ("%s-probe-%u", tag, probes++);
      g_autofree char *path = g_strdup_printf ("/text?probe=%s", id);
      batch_add (p, k, id, path, "2 of 2");
      Job *j = p->jobs->pdata[p->jobs->len - 1];
      Smtp *s = smtp_open (inst[k].smtp_port);
      j->code = s ? smtp_send (s, j->msg) : -1;
      smtp_close (s);
      g_assert_cmpint (j->code, ==, 250);
    }
    if (all_back)
      break;
    g_usleep (100000);
  }
  check_batch (p, &full, &partial);
  g_assert_cmpuint (partial, ==, 0);

  guint hist[N_MILTERS + 2] = { 0 };
  g_autoptr (GHashTable) counts = http_counts ();
  for (guint u = 0; u < N_FAULT_URLS; u++) {
    g_autofree char *target = g_strdup_printf ("/slow?ms=100&u=%s-%u", tag, u);
    guint n = http_count (counts, target);
    /* at least once (resolved), at most once per instance (its own cache and
     * its own coalescing while Redis is away) */
    g_assert_cmpuint (n, >=, 1);
    g_assert_cmpuint (n, <=, N_MILTERS);
    hist[n]++;
  }
  for (guint k = 0; k < N_MILTERS; k++) {
    g_assert_cmpuint (log_count (k, down_line), ==, downs[k] + 1);
    g_assert_cmpuint (log_count (k, back_line), ==, backs[k] + 1);
  }
  g_test_message ("Redis %s after %u of %u messages answered, %s after %u: %u delivered resolved 2 of 2, "
                  "lost 0; URLs fetched once %u, twice %u, three times %u; longest message %.2f s; "
                  "every instance logged Redis down once and back once (%u probe messages after)",
                  fault == FAULT_KILL ? "killed" : "paused (SIGSTOP)", at_fault, N_FAULT_MESSAGES,
                  fault == FAULT_KILL ? "restarted" : "resumed (SIGCONT)", at_recovery, N_FAULT_MESSAGES,
                  hist[1], hist[2], hist[3], longest, probes);
}

static void
test_redis_killed_and_restarted (void)
{
  run_fault (FAULT_KILL);
}

static void
test_redis_paused (void)
{
  run_fault (FAULT_STOP);
}

/* Over everything the test sent: each message delivered exactly once, and
 * no delivered message without the milter's field. */
static void
test_nothing_lost_nothing_unfiltered (void)
{
  wait_delivered ();
  g_autoptr (GHashTable) copies = NULL;
  g_autoptr (GHashTable) got = scan_delivered (&copies);
  guint lost = 0, unfiltered = 0, total = n_delivered ();
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init (&it, got);
  while (g_hash_table_iter_next (&it, &key, &value))
    if (strcmp (value, "-") == 0)
      unfiltered++;
  g_hash_table_iter_init (&it, expected);
  while (g_hash_table_iter_next (&it, &key, &value))
    if (GPOINTER_TO_UINT (g_hash_table_lookup (copies, key)) != 1)
      lost++;
  mta_maildir_assert_accounted (g_hash_table_size (expected), total, lost, unfiltered);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  mta_postfix_require ("EXTBODYD", NULL);
  if (!g_file_test (test_redis_server (), G_FILE_TEST_IS_EXECUTABLE))
    test_skip_all (g_strdup_printf ("%s is not installed (apt-get install redis-server)", test_redis_server ()));
  guint wd_dir = 0;
  dir = mta_dir_make ("redis-pool", &wd_dir);
  conf = g_build_filename (dir, "extbody.conf", NULL);
  expected = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr (GError) error = NULL;

  redis = test_redis_start ();
  g_assert_nonnull (redis);
  httpd = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);
  http_port = httpd->port;

  configure ("pool:", 100000, 20);
  for (guint k = 0; k < N_MILTERS; k++)
    milter_start (k);
  for (guint k = 0; k < N_MILTERS; k++)
    postfix_start (k);

  g_test_add_func ("/redis-pool/1-each-url-fetched-once-by-the-pool", test_each_url_once);
  g_test_add_func ("/redis-pool/2-rate-holds-across-the-pool", test_rate_holds_across_the_pool);
  g_test_add_func ("/redis-pool/3-redis-killed-and-restarted", test_redis_killed_and_restarted);
  g_test_add_func ("/redis-pool/4-redis-paused-with-sigstop", test_redis_paused);
  g_test_add_func ("/redis-pool/5-nothing-lost-nothing-unfiltered", test_nothing_lost_nothing_unfiltered);
  int rc = g_test_run ();

  for (guint k = 0; k < N_MILTERS; k++)
    postfix_stop (k);
  for (guint k = 0; k < N_MILTERS; k++) {
    if (!milter_stop (k))
      rc = 1;
    g_free (inst[k].pfdir);
    g_free (inst[k].maildir_new);
  }
  g_clear_pointer (&redis, test_redis_stop);
  g_clear_pointer (&httpd, test_server_stop);
  g_hash_table_unref (expected);
  g_free (conf);
  mta_dir_remove (dir, wd_dir);
  g_free (dir);
  return rc;
}
