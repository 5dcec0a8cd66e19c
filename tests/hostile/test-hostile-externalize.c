/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-hostile-externalize.c - `extbody externalize` over hostile mail.
 *
 * Every message of the hostile-input suite (hostile-cases.h: the cases and
 * every walk limit's message below, at and above it), and cases of its own,
 * go through the command with a directory store and externalize_min_size 16.
 * For each: the exit status is 0 (each case names another when one is
 * documented); standard error holds at most one line per part and nothing
 * else (with --report: "part PATH ... externalized URL" or "... left: TOKEN",
 * and "message left unchanged: TOKEN"); never a crash, never a hang (the
 * command runs under timeout(1), the program under ctest's); and the
 * standard output is what eb_externalize_plan and eb_plan_write make of the
 * message in process, which is checked to be a splice: the input byte for
 * byte when nothing was externalized, else the input with each replaced
 * part, in order, replaced and nothing else, each object in the store
 * holding the part's decoded bytes. The cases of its own: base64 that does
 * not decode (garbage, wrong padding: left, cte-invalid), a multipart whose
 * close delimiter is missing, 10,000 tiny attachments (max_parts), nesting
 * past max_nesting_depth, two Content-Type fields, a file name with control
 * characters, CR LF and encoded-words in the fallback text (no header
 * injection), the store directory a symbolic link, a symbolic link, a file
 * or a directory where the object should be, and the two GMime traps (mixed
 * line endings that cost a byte before a delimiter; a parameter name of 70 to
 * 72 bytes) with the bytes around the part checked. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <gmime/gmime.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include "eb-config.h"
#include "eb-header.h"
#include "eb-plan-private.h"
#include "eb-store.h"
#include "eb-transfer.h"
#include "hostile-cases.h"

#define BASE_URL "http://127.0.0.1:8080/hostile/store"

static const char *
extbody_path (void)
{
  const char *p = g_getenv ("EXTBODY");
  if (!p || !g_file_test (p, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip ("EXTBODY (the extbody program) is not set");
    return NULL;
  }
  return p;
}

static void
rm_rf (const char *path)
{
  GStatBuf st;
  if (g_lstat (path, &st) != 0)
    return;
  if (S_ISDIR (st.st_mode)) {
    g_autoptr (GDir) d = g_dir_open (path, 0, NULL);
    const char *n;
    while (d && (n = g_dir_read_name (d))) {
      g_autofree char *p = g_build_filename (path, n, NULL);
      rm_rf (p);
    }
    g_rmdir (path);
  } else {
    g_unlink (path);
  }
}

/* One run: the command's outcome and the same plan in process. */
typedef struct {
  char            *work;        /* the private directory */
  char            *store;       /* externalize_store as configured */
  char            *conf;
  int              status;      /* exit status, or -signal */
  GBytes          *out;         /* standard output */
  char            *err;         /* standard error */
  guint            n_lines;     /* lines on standard error */
  guint            n_externalized; /* of them, "externalized" lines */
  GString         *input;
  EbConfig        *config;
  EbPlan *plan;        /* in process, against the same store */
} Run;

static void
run_free (Run *r)
{
  if (!r)
    return;
  rm_rf (r->work);
  g_free (r->work);
  g_free (r->store);
  g_free (r->conf);
  g_clear_pointer (&r->out, g_bytes_unref);
  g_free (r->err);
  g_string_free (r->input, TRUE);
  g_clear_pointer (&r->config, eb_config_free);
  g_clear_pointer (&r->plan, eb_plan_free);
  g_free (r);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Run, run_free)

/* A private directory with a store directory "store" in it. */
static Run *
run_new (GString *msg /* (transfer full) */)
{
  Run *r = g_new0 (Run, 1);
  g_autoptr (GError) e = NULL;
  r->work = g_dir_make_tmp ("eb-hostile-ext-XXXXXX", &e);
  g_assert_no_error (e);
  r->store = g_build_filename (r->work, "store", NULL);
  g_assert_cmpint (g_mkdir (r->store, 0755), ==, 0);
  r->input = msg;
  return r;
}

/* The generic properties of a replaced part @ref of @r's plan: the object in
 * the store @objects holds its decoded bytes. */
static void
check_object (const Run *r, const char *objects, const EbRef *ref, const EbResolution *res)
{
  const char *buf = r->input->str + r->plan->message->from_len;
  g_autoptr (EbHeaderBlock) blk = eb_header_block_scan (buf, ref->block_start, ref->content_start);
  gint k = eb_header_block_find (blk, buf, "Content-Transfer-Encoding");
  g_autofree char *cte = k >= 0 ? eb_header_field_unfold (&g_array_index (blk->fields, EbHeaderField, k), buf)
                                : NULL;
  g_autoptr (GBytes) raw = g_bytes_new_static (buf + ref->content_start, ref->end - ref->content_start);
  g_autoptr (GError) e = NULL;
  g_autoptr (GBytes) decoded = eb_transfer_decode (eb_transfer_parse_cte (cte), raw, &e);
  g_assert_no_error (e);
  g_autofree char *path = g_build_filename (objects, res->digest, NULL);
  g_autofree char *got = NULL;
  gsize n = 0;
  g_assert_true (g_file_get_contents (path, &got, &n, NULL));
  g_assert_cmpmem (got, n, g_bytes_get_data (decoded, NULL), g_bytes_get_size (decoded));
  g_autofree char *sum = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, decoded);
  g_assert_cmpstr (sum, ==, res->digest);
  g_autofree char *url = g_strdup_printf ("%s/%s", BASE_URL, res->digest);
  g_assert_cmpstr (ref->url, ==, url);
}

/* Run the command over @r's message with @conf_extra (lines of the
 * configuration file) and @args, then plan in process; check everything that
 * holds for every message. @objects: where the objects land (NULL: the store). */
static void
run_externalize (Run *r, const char *conf_extra, const char *const *args, int want_status,
                 const char *objects)
{
  const char *exe = extbody_path ();
  g_assert_nonnull (exe);
  g_autoptr (GError) e = NULL;
  r->conf = g_build_filename (r->work, "extbody.conf", NULL);
  g_autofree char *conf = g_strdup_printf ("[extbody]\nexternalize_store = %s\nexternalize_base_url = %s\n"
                                           "externalize_min_size = 16\n%s",
                                           r->store, BASE_URL, conf_extra ? conf_extra : "");
  g_assert_true (g_file_set_contents (r->conf, conf, -1, &e));
  g_autofree char *in = g_build_filename (r->work, "in.eml", NULL);
  g_assert_true (g_file_set_contents (in, r->input->str, (gssize) r->input->len, &e));

  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (char *) "timeout");
  g_ptr_array_add (argv, (char *) "-s");
  g_ptr_array_add (argv, (char *) "KILL");
  g_ptr_array_add (argv, (char *) "120");
  g_ptr_array_add (argv, (char *) exe);
  g_ptr_array_add (argv, (char *) "externalize");
  g_ptr_array_add (argv, (char *) "-c");
  g_ptr_array_add (argv, r->conf);
  g_ptr_array_add (argv, (char *) "--report");
  for (guint i = 0; args && args[i]; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, in);
  g_ptr_array_add (argv, NULL);
  g_autoptr (GSubprocess) p = g_subprocess_newv ((const char *const *) argv->pdata,
                                                 G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
                                                 &e);
  g_assert_no_error (e);
  g_autoptr (GBytes) err = NULL;
  g_assert_true (g_subprocess_communicate (p, NULL, NULL, &r->out, &err, &e));
  g_assert_no_error (e);
  r->status = g_subprocess_get_if_exited (p) ? g_subprocess_get_exit_status (p)
                                             : -g_subprocess_get_term_sig (p);
  r->err = g_bytes_get_size (err) ? g_strndup (g_bytes_get_data (err, NULL), g_bytes_get_size (err))
                                  : g_strdup ("");
  g_test_message ("exit %d, %zu bytes out; stderr:\n%s", r->status, g_bytes_get_size (r->out),
                  strlen (r->err) > 4000 ? "(long)" : r->err);
  g_assert_cmpint (r->status, !=, 124);   /* timed out: a hang */
  g_assert_cmpint (r->status, ==, want_status);

  /* standard error: one line per part at most, nothing but those lines */
  g_autoptr (GHashTable) paths = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_auto (GStrv) lines = g_strsplit (r->err, "\n", -1);
  guint nl = g_strv_length (lines);
  g_assert_true (nl == 0 || lines[nl - 1][0] == '\0');   /* empty, or ends with a line break */
  for (guint i = 0; i + 1 < nl; i++) {
    const char *l = lines[i];
    r->n_lines++;
    if (g_str_has_prefix (l, "extbody: message left unchanged: "))
      continue;
    g_assert_true (g_str_has_prefix (l, "extbody: part "));
    char *sp = strchr (l + strlen ("extbody: part "), ' ');
    g_assert_nonnull (sp);
    char *path = g_strndup (l + strlen ("extbody: part "), (gsize) (sp - l) - strlen ("extbody: part "));
    g_assert_false (g_hash_table_contains (paths, path));   /* one line per part */
    g_hash_table_add (paths, path);
    if (strstr (l, " bytes: externalized "))
      r->n_externalized++;
    else
      g_assert_nonnull (strstr (l, " bytes: left: "));
  }
  if (want_status != 0)
    return;

  /* the same plan in process, against the same store (the objects are there) */
  r->config = eb_config_new ();
  g_assert_true (eb_config_load_file (r->config, r->conf, FALSE, &e));
  g_assert_no_error (e);
  g_autoptr (EbStore) store = eb_store_new (r->config, &e);
  g_assert_no_error (e);
  EbExternalizeFlags flags = EB_EXTERNALIZE_DEFAULT;
  for (guint i = 0; args && args[i]; i++)
    if (strcmp (args[i], "--fallback") == 0)
      flags |= EB_EXTERNALIZE_FALLBACK;
  r->plan = eb_externalize_plan (r->input->str, r->input->len, r->config, store, flags);
  g_assert_cmpuint (r->plan->n_resolved, ==, r->n_externalized);
  g_autoptr (GOutputStream) mem = g_memory_output_stream_new_resizable ();
  g_assert_true (eb_plan_write (r->plan, mem, &e));
  g_output_stream_close (mem, NULL, NULL);
  g_autoptr (GBytes) mine = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (mem));
  g_assert_true (g_bytes_equal (mine, r->out));

  gsize n = 0;
  const char *o = g_bytes_get_data (r->out, &n);
  if (r->n_externalized == 0) {
    g_assert_false (r->plan->changed);
    g_assert_cmpmem (o, n, r->input->str, r->input->len);
    return;
  }
  /* a splice: the input with each replaced part replaced, nothing else */
  const char *buf = r->input->str + r->plan->message->from_len;
  gsize len = r->input->len - r->plan->message->from_len;
  g_autoptr (GString) want = g_string_new_len (r->input->str, (gssize) r->plan->message->from_len);
  gsize pos = 0;
  for (guint i = 0; i < r->plan->scan->refs->len; i++) {
    const EbRef *ref = g_ptr_array_index (r->plan->scan->refs, i);
    const EbResolution *res = g_ptr_array_index (r->plan->resolutions, i);
    if (res->reason != EB_REASON_RESOLVED)
      continue;
    gsize a = eb_extref_replaced_start (ref), b = eb_extref_replaced_end (ref);
    g_assert_cmpuint (a, >=, pos);
    g_assert_cmpuint (b, >=, a);
    g_assert_cmpuint (b, <=, len);
    g_string_append_len (want, buf + pos, (gssize) (a - pos));
    g_string_append_len (want, res->head->str, (gssize) res->head->len);
    g_string_append_len (want, g_bytes_get_data (res->data, NULL), (gssize) g_bytes_get_size (res->data));
    pos = b;
    check_object (r, objects ? objects : r->store, ref, res);
  }
  g_string_append_len (want, buf + pos, (gssize) (len - pos));
  g_assert_cmpmem (o, n, want->str, want->len);
}

/* The index of the first part of @r's plan with @reason, or -1. */
static gint
find_reason (const Run *r, EbReason reason)
{
  for (guint i = 0; r->plan && r->plan->scan && i < r->plan->scan->refs->len; i++)
    if (((const EbResolution *) g_ptr_array_index (r->plan->resolutions, i))->reason == reason)
      return (gint) i;
  return -1;
}

static const EbRef *
ref_at (const Run *r, gint i)
{
  g_assert_cmpint (i, >=, 0);
  return g_ptr_array_index (r->plan->scan->refs, (guint) i);
}

/* ---- the suite's own messages ---------------------------------------------- */

static void
run_suite_case (gconstpointer data)
{
  const Case *c = data;
  if (!extbody_path ())
    return;
  g_autoptr (Run) r = run_new (c->build ());
  run_externalize (r, NULL, NULL, 0, NULL);
}

typedef struct {
  const Limit *limit;
  gint64       n;
} ExtLimitCase;

static void
run_suite_limit (gconstpointer data)
{
  const ExtLimitCase *lc = data;
  if (!extbody_path ())
    return;
  g_autoptr (Run) r = run_new (lc->limit->build (lc->n));
  g_autofree char *extra = lc->limit->value ? g_strdup_printf ("%s = %s\n", lc->limit->key, lc->limit->value)
                                            : NULL;
  run_externalize (r, extra, NULL, 0, NULL);
}

/* ---- cases of externalize's own -------------------------------------------- */

static const char *const PAYLOAD_B64 =
  "VGhpcyBpcyB0aGUgYXR0YWNobWVudCdzIHBheWxvYWQsIGxvbmcgZW5vdWdoIHRvIGJlIHRha2VuIG91dC4K\n";

static GString *
one_attachment (const char *fields, const char *body)
{
  GString *s = g_string_new ("From: a@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
                             "--b\nContent-Type: text/plain\n\nhello\n--b\n");
  g_string_append (s, fields);
  g_string_append (s, "\n");
  g_string_append (s, body);
  g_string_append (s, "--b--\n");
  return s;
}

#define ATT_FIELDS "Content-Type: application/octet-stream\nContent-Disposition: attachment; filename=a.bin\n" \
                   "Content-Transfer-Encoding: base64\n"

static void
assert_left_unchanged (const Run *r, EbReason reason)
{
  g_assert_cmpuint (r->n_externalized, ==, 0);
  g_assert_cmpmem (g_bytes_get_data (r->out, NULL), g_bytes_get_size (r->out), r->input->str, r->input->len);
  gint i = find_reason (r, reason);
  g_assert_cmpint (i, >=, 0);
  g_assert_nonnull (strstr (r->err, eb_reason_token (reason)));
}

static void
test_base64_garbage (void)
{
  if (!extbody_path ())
    return;
  g_autoptr (Run) r = run_new (one_attachment (ATT_FIELDS, "VGhpcyBpcyB0aGUgYXR0YWNo!!bWVudCdzIHBheWxvYWQsIGxvbmcgZW5vdWdo\x01\xff\n"));
  run_externalize (r, NULL, NULL, 0, NULL);
  assert_left_unchanged (r, EB_REASON_CTE_INVALID);
}

static void
test_base64_padding (gconstpointer data)
{
  if (!extbody_path ())
    return;
  g_autoptr (GString) body = g_string_new (PAYLOAD_B64);
  g_string_append (body, data);   /* after the final padding, or padding where none belongs */
  g_autoptr (Run) r = run_new (one_attachment (ATT_FIELDS, body->str));
  run_externalize (r, NULL, NULL, 0, NULL);
  assert_left_unchanged (r, EB_REASON_CTE_INVALID);
}

/* Final padding left out: the forgiving base64 decoder of eb-transfer (the
 * WHATWG one data: URLs use) reads it as the one unambiguous value, so the
 * part is taken out with exactly those bytes (check_object). */
static void
test_base64_unpadded (void)
{
  if (!extbody_path ())
    return;
  g_autoptr (GString) body = g_string_new (PAYLOAD_B64);
  g_string_append (body, "QQ\n");
  g_autoptr (Run) r = run_new (one_attachment (ATT_FIELDS, body->str));
  run_externalize (r, NULL, NULL, 0, NULL);
  g_assert_cmpuint (r->n_externalized, ==, 1);
  const EbResolution *res = g_ptr_array_index (r->plan->resolutions, 0);
  g_autofree char *obj = g_build_filename (r->store, res->digest, NULL);
  g_autofree char *got = NULL;
  gsize n = 0;
  g_assert_true (g_file_get_contents (obj, &got, &n, NULL));
  g_assert_cmpuint (n, ==, 63 + 1);
  g_assert_cmpint (got[n - 1], ==, 'A');
}

/* The last part's multipart never closes: the part runs to the end of the
 * message, and the splice keeps the bytes before it. */
static void
test_missing_close_delimiter (void)
{
  if (!extbody_path ())
    return;
  GString *m = one_attachment (ATT_FIELDS, PAYLOAD_B64);
  g_string_truncate (m, m->len - strlen ("--b--\n"));
  g_autoptr (Run) r = run_new (m);
  run_externalize (r, NULL, NULL, 0, NULL);
  g_assert_cmpuint (r->n_externalized, ==, 1);
  const EbRef *ref = ref_at (r, find_reason (r, EB_REASON_RESOLVED));
  g_assert_true (ref->end <= r->input->len);
  const char *o = g_bytes_get_data (r->out, NULL);
  g_assert_cmpmem (o, ref->block_start, r->input->str, ref->block_start);
}

/* n tiny attachments in one multipart: n + 1 parts. */
static GString *
tiny_attachments (guint n)
{
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n");
  for (guint i = 0; i < n; i++)
    g_string_append_printf (s, "--b\nContent-Type: application/octet-stream\nContent-Disposition: attachment\n\n"
                               "tiny attachment number %06u\n", i % 3);
  g_string_append (s, "--b--\n");
  return s;
}

static void
test_max_parts (gconstpointer data)
{
  if (!extbody_path ())
    return;
  guint n = GPOINTER_TO_UINT (data);
  g_autoptr (Run) r = run_new (tiny_attachments (n));
  run_externalize (r, NULL, NULL, 0, NULL);
  if (n + 1 > 10000) {
    g_assert_cmpuint (r->n_externalized, ==, 0);
    g_assert_cmpint (r->plan->reason, ==, EB_REASON_TOO_MANY_PARTS);
    g_assert_nonnull (strstr (r->err, "message left unchanged: too-many-parts"));
    g_assert_cmpuint (r->n_lines, ==, 1);
  } else {
    g_assert_cmpuint (r->n_externalized, ==, n);
    g_assert_cmpuint (r->n_lines, ==, n);
  }
}

/* The attachment inside @n nested multiparts. */
static GString *
nested_attachment (guint n)
{
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=d1\n\n");
  for (guint i = 1; i < n; i++)
    g_string_append_printf (s, "--d%u\nContent-Type: multipart/mixed; boundary=d%u\n\n", i, i + 1);
  g_string_append_printf (s, "--d%u\n" ATT_FIELDS "\n%s", n, PAYLOAD_B64);
  for (guint i = n; i >= 1; i--)
    g_string_append_printf (s, "--d%u--\n", i);
  return s;
}

static void
test_nesting (gconstpointer data)
{
  if (!extbody_path ())
    return;
  guint n = GPOINTER_TO_UINT (data);
  g_autoptr (Run) r = run_new (nested_attachment (n));
  run_externalize (r, "max_nesting_depth = 5\n", NULL, 0, NULL);
  if (n <= 5) {
    g_assert_cmpuint (r->n_externalized, ==, 1);
  } else {
    assert_left_unchanged (r, EB_REASON_TOO_DEEP);
    g_assert_cmpuint (r->n_lines, ==, 1);
  }
}

/* Two Content-Type (or two Content-Transfer-Encoding) fields: readers
 * disagree about the part; it is not a candidate at all. */
static void
test_two_fields (gconstpointer data)
{
  if (!extbody_path ())
    return;
  g_autoptr (Run) r = run_new (one_attachment (data, PAYLOAD_B64));
  run_externalize (r, NULL, NULL, 0, NULL);
  g_assert_cmpuint (r->n_externalized, ==, 0);
  g_assert_cmpuint (r->n_lines, ==, 0);
  g_assert_cmpmem (g_bytes_get_data (r->out, NULL), g_bytes_get_size (r->out), r->input->str, r->input->len);
}

/* A file name made to inject header fields into the fallback's text part:
 * control characters, CR LF (RFC 2231 %0D%0A, an encoded-word =0D=0A) and
 * encoded-words. The text part's header is exactly the two fields extbody
 * writes, its body has no bare control character, and no line of the output
 * the input did not have starts a header field of the injected names. */
static void
test_fallback_filename (gconstpointer data)
{
  if (!extbody_path ())
    return;
  g_autofree char *fields = g_strdup_printf ("Content-Type: application/octet-stream\n"
                                             "Content-Disposition: attachment; %s\n"
                                             "Content-Transfer-Encoding: base64\n", (const char *) data);
  g_autoptr (Run) r = run_new (one_attachment (fields, PAYLOAD_B64));
  const char *const args[] = { "--fallback", NULL };
  run_externalize (r, NULL, args, 0, NULL);
  g_assert_cmpuint (r->n_externalized, ==, 1);
  g_autofree char *out = g_strndup (g_bytes_get_data (r->out, NULL), g_bytes_get_size (r->out));
  g_assert_cmpuint (strlen (out), ==, g_bytes_get_size (r->out));
  g_assert_null (strstr (out, "\nX-Injected"));
  g_assert_null (strstr (out, "\nBcc:"));
  g_assert_null (strstr (out, "\r"));
  /* the text part: its header, a blank line, then lines of printable text */
  const char *t = strstr (out, "Content-Type: text/plain; charset=");
  g_assert_nonnull (t);
  const char *nl = strchr (t, '\n');
  g_assert_true (g_str_has_prefix (nl + 1, "Content-Transfer-Encoding: "));
  nl = strchr (nl + 1, '\n');
  g_assert_true (nl[1] == '\n');
  const char *body = nl + 2, *end = strstr (body, "\n--=_extbody_");
  g_assert_nonnull (end);
  g_autofree char *text = g_strndup (body, (gsize) (end - body));
  for (const char *p = text; *p; p++)
    g_assert_true (*p == '\n' || (guchar) *p >= 0x20);
  g_test_message ("fallback text:\n%s", text);
  /* the decoded text names the file on one line */
  g_assert_nonnull (strstr (text, "File name: "));
}

/* The store directory is a symbolic link to a directory elsewhere: the
 * objects land there (externalize_store names it; the link is followed like
 * any path the administrator configured). */
static void
test_store_symlink (void)
{
  if (!extbody_path ())
    return;
  g_autoptr (Run) r = run_new (one_attachment (ATT_FIELDS, PAYLOAD_B64));
  g_autofree char *real = g_build_filename (r->work, "elsewhere", NULL);
  g_assert_cmpint (g_mkdir (real, 0755), ==, 0);
  g_free (r->store);
  r->store = g_build_filename (r->work, "store-link", NULL);
  g_assert_cmpint (symlink (real, r->store), ==, 0);
  run_externalize (r, NULL, NULL, 0, real);
  g_assert_cmpuint (r->n_externalized, ==, 1);
  GStatBuf st;
  g_assert_cmpint (g_lstat (r->store, &st), ==, 0);
  g_assert_true (S_ISLNK (st.st_mode));
}

typedef enum { OBJ_SYMLINK, OBJ_FILE, OBJ_DIR } ObjectTrap;

/* Something already where the part's object goes: a symbolic link to a file
 * elsewhere (never written through: replaced by the object), a file with
 * other bytes (replaced, then verified), a directory (the store fails: the
 * part stays, one line on standard error, exit 0). */
static void
test_object_trap (gconstpointer data)
{
  if (!extbody_path ())
    return;
  ObjectTrap trap = GPOINTER_TO_INT (data);
  g_autoptr (Run) r = run_new (one_attachment (ATT_FIELDS, PAYLOAD_B64));
  gsize n = 0;
  g_autofree guchar *payload = g_base64_decode (PAYLOAD_B64, &n);
  g_autofree char *sha = g_compute_checksum_for_data (G_CHECKSUM_SHA256, payload, n);
  g_autofree char *obj = g_build_filename (r->store, sha, NULL);
  g_autofree char *outside = g_build_filename (r->work, "outside", NULL);
  g_assert_true (g_file_set_contents (outside, "not yours\n", -1, NULL));
  switch (trap) {
  case OBJ_SYMLINK:
    g_assert_cmpint (symlink (outside, obj), ==, 0);
    break;
  case OBJ_FILE:
    g_assert_true (g_file_set_contents (obj, "other bytes under the name\n", -1, NULL));
    break;
  case OBJ_DIR:
    g_assert_cmpint (g_mkdir (obj, 0755), ==, 0);
    g_autofree char *inner = g_build_filename (obj, "x", NULL);
    g_assert_true (g_file_set_contents (inner, "x", -1, NULL));
    break;
  }
  run_externalize (r, NULL, NULL, 0, NULL);
  g_autofree char *o = NULL;
  g_assert_true (g_file_get_contents (outside, &o, NULL, NULL));
  g_assert_cmpstr (o, ==, "not yours\n");
  GStatBuf st;
  g_assert_cmpint (g_lstat (obj, &st), ==, 0);
  if (trap == OBJ_DIR) {
    assert_left_unchanged (r, EB_REASON_STORE_FAILED);
    g_assert_cmpuint (r->n_lines, ==, 1);
    g_assert_true (S_ISDIR (st.st_mode));
  } else {
    g_assert_cmpuint (r->n_externalized, ==, 1);
    g_assert_true (S_ISREG (st.st_mode));   /* check_object read it: the payload */
  }
}

/* GMime 3.2.13 ends a part one byte early when line endings are mixed: the
 * part's bytes must still run exactly to the line break before the
 * delimiter, and the bytes around it stay. */
static void
test_mixed_eol (void)
{
  if (!extbody_path ())
    return;
  GString *m = g_string_new ("From: a@example.org\r\nMIME-Version: 1.0\r\n"
                             "Content-Type: multipart/mixed; boundary=\"mx\"\r\n\r\n"
                             "--mx\n" ATT_FIELDS "\n");
  g_string_append (m, PAYLOAD_B64);
  g_string_truncate (m, m->len - 1);
  g_string_append (m, "\r\n--mx\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment\r\n"
                      "Content-Transfer-Encoding: base64\r\n\r\n");
  g_string_append (m, PAYLOAD_B64);
  g_string_append (m, "--mx--\n");
  g_autoptr (Run) r = run_new (m);
  run_externalize (r, NULL, NULL, 0, NULL);
  g_assert_cmpuint (r->n_externalized, ==, 2);
  const char *in = r->input->str;
  const EbRef *a = ref_at (r, 0), *b = ref_at (r, 1);
  g_assert_true (g_str_has_prefix (in + a->end, "\r\n--mx\r\n"));
  g_assert_true (g_str_has_prefix (in + a->end - 2, "4K"));   /* the payload's last bytes */
  g_assert_true (g_str_has_prefix (in + b->end, "\n--mx--"));
  g_assert_true (g_str_has_prefix (in + b->end - 2, "4K"));
  /* in the output: each replacement ends, then the input's line break and delimiter */
  gsize n = 0;
  const char *o = g_bytes_get_data (r->out, &n);
  g_autoptr (GString) tail = g_string_new_len (in + a->end, (gssize) (b->block_start - a->end));
  g_assert_nonnull (memmem (o, n, tail->str, tail->len));
  g_assert_true (n > 8 && memcmp (o + n - 8, "\n--mx--\n", 8) == 0);
}

/* GMime 3.2's parameter encoder never ends on a parameter name of 70 to 72
 * bytes; multiparts without a boundary carrying such names come first, the
 * attachment after them is still taken out and the bytes before it kept. */
static void
test_long_parameter_name (void)
{
  if (!extbody_path ())
    return;
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n");
  for (int n = 30; n <= 40; n++) {
    g_string_append (s, "--b\nContent-Type: multipart/d; ");
    for (int i = 0; i < n; i++)
      g_string_append_c (s, '\xff');
    g_string_append (s, "=\xff" "external-body\n\nx\n");
  }
  g_string_append (s, "--b\nContent-Type: application/octet-stream; ");
  for (int i = 0; i < 71; i++)
    g_string_append_c (s, 'n');
  g_string_append (s, "=v\nContent-Transfer-Encoding: base64\n\n");
  g_string_append (s, PAYLOAD_B64);
  g_string_append (s, "--b--\n");
  g_autoptr (Run) r = run_new (s);
  run_externalize (r, NULL, NULL, 0, NULL);
  g_assert_cmpuint (r->n_externalized, ==, 1);
  const EbRef *ref = ref_at (r, find_reason (r, EB_REASON_RESOLVED));
  const char *o = g_bytes_get_data (r->out, NULL);
  g_assert_cmpmem (o, ref->block_start, r->input->str, ref->block_start);
  g_assert_true (g_str_has_prefix (r->input->str + ref->block_start, "Content-Type: application/octet-stream; nnn"));
  g_assert_true (g_str_has_prefix (r->input->str + ref->end, "\n--b--\n"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  eb_init ();
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *p = g_strdup_printf ("/hostile-externalize/suite/%s", cases[i].name);
    g_test_add_data_func (p, &cases[i], run_suite_case);
  }
  g_autoptr (GPtrArray) lcs = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < G_N_ELEMENTS (limits); i++)
    for (gint64 d = -1; d <= 1; d++) {
      ExtLimitCase *lc = g_new (ExtLimitCase, 1);
      lc->limit = &limits[i];
      lc->n = limits[i].limit + d;
      g_ptr_array_add (lcs, lc);
      g_autofree char *p = g_strdup_printf ("/hostile-externalize/limits/%s=%s/%s", limits[i].key,
                                            limits[i].value ? limits[i].value : "default",
                                            d < 0 ? "below" : d == 0 ? "at" : "above");
      g_test_add_data_func (p, lc, run_suite_limit);
    }
  g_test_add_func ("/hostile-externalize/base64/garbage", test_base64_garbage);
  g_test_add_data_func ("/hostile-externalize/base64/data-after-padding", "QQ==QUJD\n", test_base64_padding);
  g_test_add_data_func ("/hostile-externalize/base64/too-much-padding", "QQ===\n", test_base64_padding);
  g_test_add_data_func ("/hostile-externalize/base64/one-character-over", "Q\n", test_base64_padding);
  g_test_add_func ("/hostile-externalize/base64/padding-missing", test_base64_unpadded);
  g_test_add_func ("/hostile-externalize/structure/missing-close-delimiter", test_missing_close_delimiter);
  g_test_add_data_func ("/hostile-externalize/limits/max_parts/9999-attachments", GUINT_TO_POINTER (9999),
                        test_max_parts);
  g_test_add_data_func ("/hostile-externalize/limits/max_parts/10000-attachments", GUINT_TO_POINTER (10000),
                        test_max_parts);
  g_test_add_data_func ("/hostile-externalize/limits/max_nesting_depth=5/at", GUINT_TO_POINTER (5),
                        test_nesting);
  g_test_add_data_func ("/hostile-externalize/limits/max_nesting_depth=5/above", GUINT_TO_POINTER (6),
                        test_nesting);
  g_test_add_data_func ("/hostile-externalize/fields/two-content-types",
                        "Content-Type: application/octet-stream\nContent-Type: text/plain\n"
                        "Content-Disposition: attachment\nContent-Transfer-Encoding: base64\n",
                        test_two_fields);
  g_test_add_data_func ("/hostile-externalize/fields/two-transfer-encodings",
                        "Content-Type: application/octet-stream\nContent-Transfer-Encoding: 7bit\n"
                        "Content-Transfer-Encoding: base64\n",
                        test_two_fields);
  g_test_add_data_func ("/hostile-externalize/fallback/filename-rfc2231-crlf",
                        "filename*=UTF-8''a%0D%0AX-Injected%3A%201%0D%0A%0D%0Abody%07%1B%5B31m.bin",
                        test_fallback_filename);
  g_test_add_data_func ("/hostile-externalize/fallback/filename-encoded-word-crlf",
                        "filename=\"=?UTF-8?Q?a=0D=0ABcc:_victim@example.org=0D=0A?= =?UTF-8?B?wobigKg=?=.bin\"",
                        test_fallback_filename);
  g_test_add_data_func ("/hostile-externalize/fallback/filename-control-characters",
                        "filename=\"a\x01\x1b[2Jb\x7f\xc2\x85\xe2\x80\xa8" "c.bin\"",
                        test_fallback_filename);
  g_test_add_func ("/hostile-externalize/store/directory-is-a-symlink", test_store_symlink);
  g_test_add_data_func ("/hostile-externalize/store/object-is-a-symlink", GINT_TO_POINTER (OBJ_SYMLINK),
                        test_object_trap);
  g_test_add_data_func ("/hostile-externalize/store/object-is-another-file", GINT_TO_POINTER (OBJ_FILE),
                        test_object_trap);
  g_test_add_data_func ("/hostile-externalize/store/object-is-a-directory", GINT_TO_POINTER (OBJ_DIR),
                        test_object_trap);
  g_test_add_func ("/hostile-externalize/gmime/mixed-line-endings", test_mixed_eol);
  g_test_add_func ("/hostile-externalize/gmime/parameter-name-71", test_long_parameter_name);
  return g_test_run ();
}
