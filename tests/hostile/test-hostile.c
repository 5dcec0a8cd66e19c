/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-hostile.c - the hostile-input suite: each case a message built here with
 * its expected safe outcome - the message unchanged byte for byte, a reference
 * left with a stated reason, or resolved. Never a crash, never a hang (ctest's
 * timeout), never a lost byte. */
#include <gio/gio.h>
#include <gmime/gmime.h>
#include <string.h>
#include <stdlib.h>
#include "eb-plan-private.h"
#include "test-server.h"
#include "hostile-cases.h"   /* the messages: cases[] and limits[] */

static void
run_limit (gconstpointer data)
{
  const LimitCase *lc = data;
  const Limit *l = lc->limit;
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GError) error = NULL;
  if (l->value)
    g_assert_true (eb_config_set (config, l->key, l->value, &error));
  g_assert_no_error (error);
  GString *m = l->build (lc->n);
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr (EbPlan) r = NULL;
  g_assert_true (eb_rewrite (m->str, m->len, config, NULL, EB_REWRITE_DEFAULT, out, &r, &error));
  g_assert_no_error (error);
  g_output_stream_close (out, NULL, NULL);
  gsize n = g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (out));
  const char *o = g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (out));
  gboolean same = n == m->len && memcmp (o, m->str, n) == 0;
  guint nrefs = r->scan ? r->scan->refs->len : 0;
  g_test_message ("%s=%" G_GINT64_FORMAT ", n=%" G_GINT64_FORMAT ": %u references, %u resolved, message %s",
                  l->key, l->limit, lc->n, nrefs, r->n_resolved, eb_reason_token (r->reason));
  if (lc->n <= l->limit) {
    g_assert_cmpint (r->reason, ==, EB_REASON_RESOLVED);
    g_assert_cmpuint (nrefs, >=, 1);
    g_assert_cmpuint (r->n_resolved, ==, nrefs);
    g_assert_true (r->changed);
    g_assert_false (same);
  } else
    switch (l->above) {
    case MESSAGE_LEFT:
      g_assert_cmpint (r->reason, ==, l->reason);
      g_assert_cmpuint (r->n_resolved, ==, 0);
      g_assert_false (r->changed);
      g_assert_true (same);
      break;
    case REF_LEFT:
      g_assert_cmpuint (nrefs, ==, 1);
      g_assert_cmpint (((EbResolution *) g_ptr_array_index (r->resolutions, 0))->reason, ==, l->reason);
      g_assert_false (r->changed);
      g_assert_true (same);
      break;
    case ONE_LEFT:
      g_assert_cmpuint (nrefs, ==, l->which + 1);
      for (guint i = 0; i < nrefs; i++)
        g_assert_cmpint (((EbResolution *) g_ptr_array_index (r->resolutions, i))->reason, ==,
                         i == l->which ? l->reason : EB_REASON_RESOLVED);
      g_assert_cmpuint (r->n_resolved, ==, nrefs - 1);
      g_assert_true (r->changed);
      break;
    case ALL_RESOLVED:
      g_assert_not_reached ();
    }
  g_string_free (m, TRUE);
}

/* ---- fetch limits at, just below and just above their values, against
 * tests/servers/httpd.py on 127.0.0.1 (time limits: below and above only) ---- */
typedef struct {
  const char *key;
  const char *value;     /* NULL: the default */
  gint64      limit;
  const char *path;      /* printf format taking n; with refs: one reference per i < n, taking i */
  gboolean    refs;      /* n = the number of references */
  gboolean    budget;    /* three references of 1000, 1000 and n - 2000 bytes */
  gint64      step;      /* the distance below and above; 0: 1 */
  gboolean    no_at;     /* time limits have no exact "at" */
  gboolean    floor;     /* a lower bound: at and above pass, below is refused */
  enum { CHECK_LEFT,     /* past the limit one reference is left with @reason */
         CHECK_PEAK,     /* a bound on concurrency: everything is resolved, and the
                            server never sees more than the limit at once */
         CHECK_CACHE     /* a bound on the cache: everything is resolved, and the same
                            message again costs no request up to the limit, some above */
  } check;
  EbReason    reason;    /* above: the reason of the one reference left */
  const char *extra[6];  /* more key, value pairs */
} FetchLimit;

typedef struct {
  const FetchLimit *limit;
  gint64            n;
} FetchLimitCase;

static TestServer *httpd;
static guint httpd_port;

static void
httpd_start (void)
{
  if (httpd)
    return;
  g_autoptr (GError) error = NULL;
  httpd = test_server_start ("httpd.py", NULL, NULL, FALSE, &error);
  g_assert_no_error (error);
  httpd_port = httpd->port;
}

/* Rewrite @m through @fetcher: the result; whether the output is @m byte for
 * byte; how many seconds it took. */
static EbPlan *
rewrite_timed (const GString *m, const EbConfig *config, EbFetcher *fetcher, gboolean *same, double *secs)
{
  g_autoptr (GError) error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  EbPlan *r = NULL;
  g_assert_true (eb_rewrite (m->str, m->len, config, fetcher, EB_REWRITE_DEFAULT, out, &r, &error));
  g_assert_no_error (error);
  *secs = (g_get_monotonic_time () - t0) / 1e6;
  g_output_stream_close (out, NULL, NULL);
  gsize n = g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (out));
  *same = n == m->len && memcmp (g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (out)), m->str, n) == 0;
  return r;
}

static void
append_http_ref (GString *s, const char *path, const char *type)
{
  g_string_append_printf (s, "--b\nContent-Type: message/external-body; access-type=URL;\n"
                             " URL=\"http://127.0.0.1:%u%s\"\n\nContent-Type: %s\n\n",
                          httpd_port, path, type);
}

static const FetchLimit fetch_limits[] = {
  { "max_redirects", NULL, 3, "/chain/%" G_GINT64_FORMAT, .reason = EB_REASON_TOO_MANY_REDIRECTS },
  { "max_redirects", "2", 2, "/chain/%" G_GINT64_FORMAT, .reason = EB_REASON_TOO_MANY_REDIRECTS },
  { "max_part_bytes", "1000", 1000, "/bin?n=%" G_GINT64_FORMAT, .reason = EB_REASON_PART_TOO_LARGE },
  { "max_part_bytes", "1000", 1000, "/big?n=%" G_GINT64_FORMAT, .reason = EB_REASON_PART_TOO_LARGE },
  { "max_message_bytes", "3000", 3000, "/bin?n=%" G_GINT64_FORMAT, .budget = TRUE,
    .reason = EB_REASON_MESSAGE_BUDGET },
  { "max_header_bytes", "2048", 2048, "/headers?n=%" G_GINT64_FORMAT, .reason = EB_REASON_FETCH_FAILED },
  /* a request over the rate waits for its turn (one each 20 s at 3 a minute):
   * left rate-limited because the turn comes after the 5 s deadline */
  { "max_requests_per_host", "3", 3, "/text?i=%" G_GINT64_FORMAT, .refs = TRUE,
    .reason = EB_REASON_RATE_LIMITED, .extra = { "cache_ttl", "0", "message_deadline", "5" } },
  { "fetch_timeout", "2", 2000, "/slow?ms=%" G_GINT64_FORMAT, .step = 1200, .no_at = TRUE,
    .reason = EB_REASON_TIMED_OUT },
  { "message_deadline", "2", 2000, "/slow?ms=%" G_GINT64_FORMAT, .step = 1200, .no_at = TRUE,
    .reason = EB_REASON_TIMED_OUT },
  /* bytes a second, over low_speed_time = 2 s: a steady 200 B/s is cut, 1800 B/s
   * for 3.5 s comes through */
  { "low_speed_limit", "1000", 1000, "/rate?bps=%" G_GINT64_FORMAT "&ms=3500", .step = 800,
    .no_at = TRUE, .floor = TRUE, .reason = EB_REASON_TIMED_OUT,
    .extra = { "low_speed_time", "2" } },
  { "max_concurrent_fetches", "3", 3, "/slow?ms=600&i=%" G_GINT64_FORMAT, .refs = TRUE,
    .check = CHECK_PEAK, .extra = { "cache_ttl", "0" } },
  { "max_concurrent_fetches", NULL, 8, "/slow?ms=600&i=%" G_GINT64_FORMAT, .refs = TRUE,
    .check = CHECK_PEAK, .extra = { "cache_ttl", "0" } },
  { "cache_entries", "3", 3, "/text?c=%" G_GINT64_FORMAT, .refs = TRUE, .check = CHECK_CACHE },
};

static void
run_fetch_limit (gconstpointer data)
{
  const FetchLimitCase *fc = data;
  const FetchLimit *l = fc->limit;
  httpd_start ();
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GError) error = NULL;
  g_assert_true (eb_config_set (config, "fetch", "on", &error));
  g_assert_true (eb_config_set (config, "allow_networks", "127.0.0.1/32", &error));
  if (l->value)
    g_assert_true (eb_config_set (config, l->key, l->value, &error));
  for (guint i = 0; l->extra[i]; i += 2)
    g_assert_true (eb_config_set (config, l->extra[i], l->extra[i + 1], &error));
  g_assert_no_error (error);
  g_autoptr (EbFetcher) fetcher = eb_fetcher_new (config, &error);
  g_assert_no_error (error);

  GString *m = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n");
  guint nrefs_want = 1;
  if (l->refs) {
    for (gint64 i = 0; i < fc->n; i++) {
      g_autofree char *path = g_strdup_printf (l->path, i);
      append_http_ref (m, path, "text/plain");
    }
    nrefs_want = (guint) fc->n;
  } else if (l->budget) {
    gint64 sizes[] = { 1000, 1000, fc->n - 2000 };
    for (guint i = 0; i < 3; i++) {
      g_autofree char *path = g_strdup_printf (l->path, sizes[i]);
      append_http_ref (m, path, "application/octet-stream");
    }
    nrefs_want = 3;
  } else {
    g_autofree char *path = g_strdup_printf (l->path, fc->n);
    gboolean bin = g_str_has_prefix (l->path, "/bin") || g_str_has_prefix (l->path, "/big");
    append_http_ref (m, path, bin ? "application/octet-stream" : "text/plain");
  }
  g_string_append (m, "--b--\n");

  gboolean same;
  double secs;
  g_autoptr (EbPlan) r = rewrite_timed (m, config, fetcher, &same, &secs);
  guint nrefs = r->scan ? r->scan->refs->len : 0;
  g_assert_cmpuint (nrefs, ==, nrefs_want);
  guint left = 0, left_with_reason = 0;
  for (guint i = 0; i < nrefs; i++) {
    const EbResolution *res = g_ptr_array_index (r->resolutions, i);
    if (res->reason != EB_REASON_RESOLVED) {
      left++;
      left_with_reason += res->reason == l->reason;
      g_test_message ("reference %u left: %s (%s)", i, eb_reason_token (res->reason), res->detail ? res->detail : "");
    }
  }
  g_test_message ("%s=%" G_GINT64_FORMAT ", n=%" G_GINT64_FORMAT ": %u references, %u resolved, %.2f s",
                  l->key, l->limit, fc->n, nrefs, r->n_resolved, secs);
  /* no limit lets a fetch run far past it: the time limits end within a margin */
  g_assert_cmpfloat (secs, <, 30 * test_time_scale ());
  if (l->check != CHECK_LEFT) {
    /* bounds on how, not whether: every reference is resolved */
    g_assert_cmpuint (left, ==, 0);
    g_assert_cmpuint (r->n_resolved, ==, nrefs);
    if (l->check == CHECK_PEAK) {
      gint64 peak = test_http_get_number (httpd_port, "/peak?reset=1");
      g_test_message ("at most %" G_GINT64_FORMAT " requests at once", peak);
      g_assert_cmpint (peak, ==, MIN (fc->n, l->limit));
    } else {
      /* the same message again, through the same fetcher */
      gint64 before = test_http_get_number (httpd_port, "/hits");
      gboolean same2;
      double secs2;
      g_autoptr (EbPlan) r2 = rewrite_timed (m, config, fetcher, &same2, &secs2);
      g_assert_cmpuint (r2->n_resolved, ==, nrefs);
      gint64 fetched = test_http_get_number (httpd_port, "/hits") - before - 1;   /* not the /hits request itself */
      g_test_message ("the same message again: %" G_GINT64_FORMAT " requests", fetched);
      if (fc->n <= l->limit)
        g_assert_cmpint (fetched, ==, 0);
      else
        g_assert_cmpint (fetched, >, 0);
    }
  } else if (l->floor ? fc->n >= l->limit : fc->n <= l->limit) {
    g_assert_cmpuint (left, ==, 0);
    g_assert_true (r->changed);
    g_assert_false (same);
  } else {
    g_assert_cmpuint (left, ==, 1);
    g_assert_cmpuint (left_with_reason, ==, 1);
    if (nrefs == 1)
      g_assert_true (same);
    else
      g_assert_true (r->changed);
    if (l->no_at && !l->floor)
      g_assert_cmpfloat (secs, <, l->limit / 1000.0 + 3 * test_time_scale ());
  }
  g_string_free (m, TRUE);
}

/* connect_timeout: a listener whose accept queue is full drops every new SYN,
 * so a connection to it never completes (what a firewall that drops does). A
 * reference to it is left timed out within connect_timeout and a margin -
 * fetch_timeout is far away - while one to a server that answers is resolved. */
static void
test_connect_timeout (gconstpointer data)
{
  gboolean never = GPOINTER_TO_INT (data);
  httpd_start ();
  g_autoptr (GError) error = NULL;
  g_autoptr (GSocket) hole = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, 0, &error);
  g_assert_no_error (error);
  g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr (GSocketAddress) any = g_inet_socket_address_new (lo, 0);
  g_assert_true (g_socket_bind (hole, any, FALSE, &error));
  g_socket_set_listen_backlog (hole, 0);
  g_assert_true (g_socket_listen (hole, &error));
  g_autoptr (GSocketAddress) where = g_socket_get_local_address (hole, &error);
  g_assert_no_error (error);
  guint hole_port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (where));
  g_autoptr (GPtrArray) fill = g_ptr_array_new_with_free_func (g_object_unref);
  GPollFD pfd[3];
  for (int i = 0; i < 3; i++) {
    GSocket *f = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, 0, &error);
    g_assert_no_error (error);
    g_socket_set_blocking (f, FALSE);
    g_socket_connect (f, where, NULL, NULL);   /* in progress, or queued: either fills */
    g_ptr_array_add (fill, f);
    pfd[i] = (GPollFD) { g_socket_get_fd (f), G_IO_OUT, 0 };
  }
  /* full once one of them is connected (waits in the accept queue): the
   * rest, and what comes after, have their SYNs dropped */
  if (g_poll (pfd, 3, 10 * 1000) < 1)
    g_error ("none of 3 connections to a listener with an empty accept queue completed in 10 s");

  g_autoptr (EbConfig) config = eb_config_new ();
  g_assert_true (eb_config_set (config, "fetch", "on", &error));
  g_assert_true (eb_config_set (config, "allow_networks", "127.0.0.1/32", &error));
  g_assert_true (eb_config_set (config, "connect_timeout", "1", &error));
  g_assert_true (eb_config_set (config, "fetch_timeout", "20", &error));
  g_autoptr (EbFetcher) fetcher = eb_fetcher_new (config, &error);
  g_assert_no_error (error);
  g_autoptr (GString) m = g_string_new (NULL);
  g_string_printf (m, "MIME-Version: 1.0\nContent-Type: message/external-body; access-type=URL;\n"
                      " URL=\"http://127.0.0.1:%u/text\"\n\nContent-Type: text/plain\n\n",
                   never ? hole_port : httpd_port);
  gboolean same;
  double secs;
  g_autoptr (EbPlan) r = rewrite_timed (m, config, fetcher, &same, &secs);
  const EbResolution *res = g_ptr_array_index (r->resolutions, 0);
  g_test_message ("%s: %s (%s), %.2f s", never ? "never connects" : "connects",
                  eb_reason_token (res->reason), res->detail ? res->detail : "", secs);
  if (never) {
    g_assert_cmpint (res->reason, ==, EB_REASON_TIMED_OUT);
    g_assert_false (r->changed);
    g_assert_true (same);
    g_assert_cmpfloat (secs, >=, 0.9);
    g_assert_cmpfloat (secs, <, 1 + 3 * test_time_scale ());
  } else {
    g_assert_cmpint (res->reason, ==, EB_REASON_RESOLVED);
    g_assert_true (r->changed);
  }
}

static void
run_case (gconstpointer data)
{
  const Case *c = data;
  GString *m = c->build ();
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr (EbPlan) r = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (eb_rewrite (m->str, m->len, config, NULL, EB_REWRITE_DEFAULT, out, &r, &error));
  g_output_stream_close (out, NULL, NULL);
  gsize n = g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (out));
  const char *o = g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (out));
  guint nrefs = r->scan ? r->scan->refs->len : 0;
  const EbResolution *first = nrefs ? g_ptr_array_index (r->resolutions, 0) : NULL;
  g_test_message ("%s: %u references, changed %d, first %s (%s)", c->name, nrefs, r->changed,
                  first ? eb_reason_token (first->reason) : "-", first && first->detail ? first->detail : "");
  switch (c->want) {
  case UNCHANGED:
  case LEFT:
    g_assert_false (r->changed);
    g_assert_cmpuint (n, ==, m->len);
    g_assert_true (memcmp (o, m->str, n) == 0);
    if (c->want == LEFT) {
      g_assert_nonnull (first);
      g_assert_cmpint (first->reason, ==, c->reason);
    }
    break;
  case RESOLVED: {
    g_assert_true (r->changed);
    g_assert_cmpuint (r->n_resolved, >=, 1);
    /* every byte before the first replaced entity and after the last is the input's */
    const EbRef *a = g_ptr_array_index (r->scan->refs, 0);
    const EbRef *z = g_ptr_array_index (r->scan->refs, nrefs - 1);
    g_assert_true (memcmp (o, m->str, a->block_start) == 0);
    gsize tail = m->len - z->end;
    g_assert_cmpuint (n, >=, tail);
    g_assert_true (memcmp (o + n - tail, m->str + z->end, tail) == 0);
    break;
  }
  }
  g_string_free (m, TRUE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_mime_init ();
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *p = g_strdup_printf ("/hostile/%s", cases[i].name);
    g_test_add_data_func (p, &cases[i], run_case);
  }
  g_autoptr (GPtrArray) lcs = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < G_N_ELEMENTS (limits); i++)
    for (gint64 d = -1; d <= 1; d++) {
      LimitCase *lc = g_new (LimitCase, 1);
      lc->limit = &limits[i];
      lc->n = limits[i].limit + d;
      g_ptr_array_add (lcs, lc);
      g_autofree char *p = g_strdup_printf ("/hostile/limits/%s=%s/%s", limits[i].key,
                                            limits[i].value ? limits[i].value : "default",
                                            d < 0 ? "below" : d == 0 ? "at" : "above");
      g_test_add_data_func (p, lc, run_limit);
    }
  g_autoptr (GPtrArray) fcs = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < G_N_ELEMENTS (fetch_limits); i++)
    for (gint64 d = -1; d <= 1; d++) {
      const FetchLimit *l = &fetch_limits[i];
      if (d == 0 && l->no_at)
        continue;
      FetchLimitCase *fc = g_new (FetchLimitCase, 1);
      fc->limit = l;
      fc->n = l->limit + d * (l->step ? l->step : 1);
      g_ptr_array_add (fcs, fc);
      g_autofree char *where = g_strndup (l->path, strcspn (l->path, "?%"));
      g_autofree char *p = g_strdup_printf ("/hostile/fetch-limits/%s=%s%s%s/%s", l->key,
                                            l->value ? l->value : "default",
                                            where[strlen (where) - 1] == '/' ? "" : "", where,
                                            d < 0 ? "below" : d == 0 ? "at" : "above");
      g_test_add_data_func (p, fc, run_fetch_limit);
    }
  g_test_add_data_func ("/hostile/fetch-limits/connect_timeout=1/connects", GINT_TO_POINTER (FALSE),
                        test_connect_timeout);
  g_test_add_data_func ("/hostile/fetch-limits/connect_timeout=1/never-connects", GINT_TO_POINTER (TRUE),
                        test_connect_timeout);
  int status = g_test_run ();
  g_clear_pointer (&httpd, test_server_stop);
  return status;
}
