/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-externalize.c - eb_externalize_plan in process, with a directory store
 * in a temporary directory: which parts are taken out, the reference written
 * (parsed back with the project's own reader and with GMime), the bytes
 * outside, the root part, CRLF, the fallback, dedup, a failing store, a
 * second pass that changes nothing, and the names with externalize_key. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include "test-mem.h"
#include "eb-gmime.h"
#include <string.h>
#include "eb-config.h"
#include "eb-externalize.h"
#include "eb-list.h"
#include "eb-header.h"
#include "eb-resolve.h"
#include "eb-plan-private.h"
#include "eb-seal.h"
#include "eb-store.h"
#include "eb-urlparam.h"

#define BASE_URL "http://127.0.0.1:8080/a/rather/long/store/path"

typedef struct {
  char     *dir;
  EbConfig *config;
  EbStore  *store;
} Fixture;

static void
fixture_setup (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  f->dir = g_dir_make_tmp ("eb-externalize-XXXXXX", NULL);
  g_assert_nonnull (f->dir);
  f->config = eb_config_new ();
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_config_set (f->config, "externalize_store", f->dir, &e));
  g_assert_true (eb_config_set (f->config, "externalize_base_url", BASE_URL, &e));
  g_assert_true (eb_config_set (f->config, "externalize_min_size", "100", &e));
  f->store = eb_store_new (f->config, &e);
  g_assert_no_error (e);
}

static void
fixture_teardown (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  eb_store_free (f->store);
  eb_config_free (f->config);
  g_autoptr (GDir) d = g_dir_open (f->dir, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name (d))) {
    g_autofree char *p = g_build_filename (f->dir, n, NULL);
    g_unlink (p);
  }
  g_rmdir (f->dir);
  g_free (f->dir);
}

/* "\n" of @s made @eol. */
static GString *
with_eol (const char *s, const char *eol)
{
  GString *g = g_string_new (NULL);
  for (const char *p = s; *p; p++)
    if (*p == '\n')
      g_string_append (g, eol);
    else
      g_string_append_c (g, *p);
  return g;
}

/* @n bytes of base64 lines (76 columns) of a deterministic payload; *@raw gets
 * the payload. */
static char *
base64_lines (gsize n, guint seed, GBytes **raw)
{
  guint8 *d = g_new0 (guint8, n + 1);
  for (gsize i = 0; i < n; i++)
    d[i] = (guint8) ((i * 131 + seed * 7) ^ (i >> 3));
  g_autofree char *b = g_base64_encode (d, n);
  GString *s = g_string_new (NULL);
  for (gsize i = 0, bl = strlen (b); i < bl; i += 76) {
    g_string_append_len (s, b + i, (gssize) MIN (76, bl - i));
    g_string_append_c (s, '\n');
  }
  if (raw)
    *raw = g_bytes_new_take (d, n);
  else
    g_free (d);
  return g_string_free (s, FALSE);
}

static GByteArray *
write_plan (const EbPlan *r, const char *buf, gsize len)
{
  g_autoptr (GOutputStream) mem = g_memory_output_stream_new_resizable ();
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_plan_write (r, mem, &e));
  g_assert_no_error (e);
  g_output_stream_close (mem, NULL, NULL);
  GByteArray *out = g_byte_array_new ();
  g_byte_array_append (out, g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (mem)),
                       (guint) g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (mem)));
  return out;
}

static guint
count_objects (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;
  while (d && g_dir_read_name (d))
    n++;
  return n;
}

static gboolean
is_candidate (const EbPlan *r, const char *path)
{
  for (guint i = 0; i < eb_plan_get_n_refs (r); i++)
    if (strcmp (eb_plan_get_ref_path (r, i), path) == 0)
      return TRUE;
  return FALSE;
}

/* ---- selection ------------------------------------------------------------- */

static void
test_selection (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  g_autofree char *big = base64_lines (300, 1, NULL);
  g_autofree char *small = base64_lines (60, 2, NULL);
  GString *text = g_string_new (NULL);
  for (int i = 0; i < 10; i++)
    g_string_append (text, "A line of text that is read inline, not stored.\n");
  g_autofree char *msg = g_strdup_printf (
    "MIME-Version: 1.0\nSubject: selection\nContent-Type: multipart/mixed; boundary=outer\n\n"
    "--outer\nContent-Type: text/plain\n\n%s"                                     /* 1 inline text */
    "--outer\nContent-Type: text/csv\nContent-Disposition: attachment; filename=a.csv\n\n%s"  /* 2 */
    "--outer\nContent-Type: application/pdf\nContent-Transfer-Encoding: base64\n\n%s"         /* 3 */
    "--outer\nContent-Type: image/png\nContent-Transfer-Encoding: base64\n\n%s"               /* 4 small */
    "--outer\nContent-Type: multipart/related; boundary=rel\n\n"
    "--rel\nContent-Type: text/html\n\n<img src=cid:x>\n"
    "--rel\nContent-Type: image/png\nContent-ID: <x>\nContent-Transfer-Encoding: base64\n\n%s" /* 5.2 related */
    "--rel--\n"
    "--outer\nContent-Type: multipart/signed; boundary=sig; protocol=\"application/pgp-signature\"\n\n"
    "--sig\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\n%s"  /* 6.1 signed */
    "--sig\nContent-Type: application/pgp-signature\n\nsig\n--sig--\n"
    "--outer\nContent-Type: application/zip\nContent-Transfer-Encoding: x-unknown\n\n%s"      /* 7 unknown cte */
    "--outer--\n",
    text->str, text->str, big, small, big, big, big);
  g_string_free (text, TRUE);
  gsize len = strlen (msg);
  g_autoptr (EbPlan) r = eb_externalize_plan (msg, len, f->config, f->store,
                                                       EB_EXTERNALIZE_DEFAULT);
  g_assert_cmpint (eb_plan_get_reason (r), ==, EB_REASON_RESOLVED);
  g_assert_cmpuint (eb_plan_get_n_refs (r), ==, 3);
  g_assert_false (is_candidate (r, "1"));
  g_assert_true (is_candidate (r, "2"));
  g_assert_true (is_candidate (r, "3"));
  g_assert_false (is_candidate (r, "4"));
  g_assert_false (is_candidate (r, "5.2"));
  g_assert_false (is_candidate (r, "6.1"));
  g_assert_true (is_candidate (r, "7"));
  g_assert_cmpint (eb_plan_get_ref_reason (r, 0), ==, EB_REASON_RESOLVED);
  g_assert_cmpint (eb_plan_get_ref_reason (r, 1), ==, EB_REASON_RESOLVED);
  g_assert_cmpint (eb_plan_get_ref_reason (r, 2), ==, EB_REASON_CTE_UNKNOWN);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 2);
  g_assert_cmpuint (count_objects (f->dir), ==, 2);
  g_autofree char *ff = eb_plan_filter_field_value (r);
  g_assert_cmpstr (ff, ==, " externalized 2 of 3 parts");

  /* only images: the pdf and the csv are no candidates; the png is small */
  g_assert_true (eb_config_set (f->config, "externalize_types", "image/*, TEXT/CSV", NULL));
  g_autoptr (EbPlan) r2 = eb_externalize_plan (msg, len, f->config, f->store,
                                                        EB_EXTERNALIZE_NO_STORE);
  g_assert_cmpuint (eb_plan_get_n_refs (r2), ==, 1);
  g_assert_cmpstr (eb_plan_get_ref_path (r2, 0), ==, "2");
  g_assert_cmpint (eb_plan_get_ref_reason (r2, 0), ==, EB_REASON_WOULD_EXTERNALIZE);
  g_assert_false (eb_plan_get_changed (r2));
}

/* Does @type match the externalize_types list @text? */
static gboolean
types_match (const char *text, const char *type)
{
  g_autoptr (GPtrArray) items = eb_list_split (text, NULL);
  g_assert_nonnull (items);
  g_ptr_array_add (items, NULL);
  return eb_externalize_type_matches ((const char *const *) items->pdata, type);
}

static void
test_types (void)
{
  g_assert_true (types_match ("*/*", "application/pdf"));
  g_assert_true (types_match ("image/*", "IMAGE/png"));
  g_assert_true (types_match ("text/plain application/pdf", "application/PDF"));
  g_assert_false (types_match ("image/*", "application/pdf"));
  g_assert_false (types_match ("application/pd", "application/pdf"));
  g_assert_false (types_match ("", "application/pdf"));
  g_autoptr (EbConfig) c = eb_config_new ();
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_config_set (c, "externalize_types", "image/*, application/pdf */*", &e));
  const char *bad[] = { "image", "*/png", "im*/png", "image/p*", "a/b/c", "/x", "x/" };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_test_message ("pattern %s", bad[i]);
    g_assert_false (eb_config_set (c, "externalize_types", bad[i], &e));
    g_clear_error (&e);
  }
}

/* A part of exactly externalize_min_size decoded bytes is taken; one byte less is not. */
static void
test_min_size_edge (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  for (gsize n = 99; n <= 101; n++) {
    g_autofree char *b = base64_lines (n, 3, NULL);
    g_autofree char *msg = g_strdup_printf (
      "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nhi\n"
      "--b\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\n%s--b--\n", b);
    g_autoptr (EbPlan) r = eb_externalize_plan (msg, strlen (msg), f->config, f->store, 0);
    g_assert_cmpuint (eb_plan_get_n_refs (r), ==, n >= 100 ? 1 : 0);
    g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, n >= 100 ? 1 : 0);
  }
}

/* ---- the reference ---------------------------------------------------------- */

/* The quoted words of the URL parameter in the raw Content-Type value @v. */
static void
check_url_words (const char *v, gsize vl)
{
  const char *u = g_strstr_len (v, (gssize) vl, "URL=\"");
  g_assert_nonnull (u);
  const char *q = u + 5, *endq = memchr (q, '"', vl - (gsize) (q - v));
  g_assert_nonnull (endq);
  guint words = 0;
  for (const char *w = q; w < endq;) {
    while (w < endq && (*w == ' ' || *w == '\t' || *w == '\r' || *w == '\n'))
      w++;
    const char *we = w;
    while (we < endq && !(*we == ' ' || *we == '\t' || *we == '\r' || *we == '\n'))
      we++;
    if (we > w) {
      g_assert_cmpuint ((gsize) (we - w), <=, 40);
      words++;
    }
    w = we;
  }
  g_assert_cmpuint (words, >, 1);   /* BASE_URL + "/" + 64 hex needs several */
}

/* The raw value of field @name of @blk in @buf, line breaks included. */
static char *
raw_value (const EbHeaderBlock *blk, const char *buf, const char *name)
{
  gint i = eb_header_block_find (blk, buf, name);
  if (i < 0)
    return NULL;
  const EbHeaderField *f = &g_array_index (blk->fields, EbHeaderField, i);
  return g_strndup (buf + f->value, f->value_end - f->value);
}

/* Read the references of @out with the resolver's own reader (rewrite with
 * fetching planned, nothing fetched) and check each against what was stored:
 * the URL (in words of at most 40), size, expiration, the phantom header's
 * Content-MD5 and encoding, and its Content-Type as written in @orig_cts. */
static void
check_references (const GByteArray *out, const char *const *urls, GBytes *const *payloads,
                  const char *const *orig_cts, guint n, guint days)
{
  g_autoptr (EbConfig) c = eb_config_new ();
  g_assert_true (eb_config_set (c, "fetch", "on", NULL));
  g_autoptr (EbPlan) r = eb_rewrite_plan ((const char *) out->data, out->len, c, NULL,
                                                   EB_REWRITE_NO_FETCH);
  g_assert_cmpuint (r->scan->refs->len, ==, n);
  const char *buf = (const char *) out->data + r->message->from_len;
  for (guint i = 0; i < n; i++) {
    const EbRef *ref = g_ptr_array_index (r->scan->refs, i);
    g_assert_cmpint (ref->read_reason, ==, EB_REASON_RESOLVED);
    g_assert_cmpstr (ref->access_type, ==, "url");
    g_assert_cmpstr (ref->url, ==, urls[i]);
    g_assert_cmpint (eb_plan_get_ref_reason (r, i), ==, EB_REASON_WOULD_FETCH);
    g_assert_cmpstr (eb_plan_get_ref_target (r, i), ==, urls[i]);
    g_autofree char *size = g_strdup_printf ("%" G_GSIZE_FORMAT, g_bytes_get_size (payloads[i]));
    g_assert_cmpstr (ref->size, ==, size);
    if (days) {
      g_assert_nonnull (ref->expiration);
      g_autoptr (GDateTime) t = g_mime_utils_header_decode_date (ref->expiration);
      g_assert_nonnull (t);
      g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
      GTimeSpan ahead = g_date_time_difference (t, now);
      g_assert_cmpint (ahead, >, (gint64) (days - 1) * G_TIME_SPAN_DAY);
      g_assert_cmpint (ahead, <=, (gint64) days * G_TIME_SPAN_DAY);
      g_assert_false (eb_resolve_expired (ref));
    } else {
      g_assert_null (ref->expiration);
    }
    g_autofree char *ct = raw_value (ref->outer, buf, "Content-Type");
    check_url_words (ct, strlen (ct));
    g_autofree char *md5 = raw_value (ref->inner, buf, "Content-MD5");
    g_autofree char *want = NULL;
    {
      guint8 d[16];
      gsize dl = sizeof d;
      g_autoptr (GChecksum) ck = g_checksum_new (G_CHECKSUM_MD5);
      g_checksum_update (ck, g_bytes_get_data (payloads[i], NULL), (gssize) g_bytes_get_size (payloads[i]));
      g_checksum_get_digest (ck, d, &dl);
      g_autofree char *b64 = g_base64_encode (d, dl);
      want = g_strdup_printf (" %s", b64);
    }
    g_assert_cmpstr (md5, ==, want);
    g_autofree char *cte = raw_value (ref->inner, buf, "Content-Transfer-Encoding");
    g_assert_cmpstr (cte, ==, " binary");
    g_autofree char *ict = raw_value (ref->inner, buf, "Content-Type");
    g_assert_cmpstr (ict, ==, orig_cts[i]);
    /* the object is the payload */
    g_autofree char *hex = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, payloads[i]);
    g_assert_true (g_str_has_suffix (urls[i], hex));
  }
}

/* An attachment in the middle of a multipart: the reference reads back, and
 * every byte before and after the part is the input's. */
static void
run_reference (Fixture *f, const char *eol, gboolean retention)
{
  g_autoptr (GBytes) payload = NULL;
  g_autofree char *b = base64_lines (5000, 4, &payload);
  g_autofree char *tmpl = g_strdup_printf (
    "From: a@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"xx\"\n\n"
    "preamble\n--xx\nContent-Type: text/plain\n\nhello\n"
    "--xx\nContent-Type: application/pdf;\n name=\"report.pdf\"\nContent-Transfer-Encoding: base64\n"
    "Content-Disposition: attachment; filename=\"report.pdf\"\nContent-ID: <p1@example.org>\n"
    "Content-Description: the report\nX-Other: kept\n\n%s"
    "--xx--\nepilogue\n", b);
  g_autoptr (GString) msg = with_eol (tmpl, eol);
  if (retention)
    g_assert_true (eb_config_set (f->config, "externalize_retention", "7", NULL));
  g_autoptr (EbPlan) r = eb_externalize_plan (msg->str, msg->len, f->config, f->store, 0);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 1);
  g_assert_true (eb_plan_get_changed (r));
  const char *url = eb_plan_get_ref_url (r, 0);
  g_assert_nonnull (url);
  g_autoptr (GByteArray) out = write_plan (r, msg->str, msg->len);

  /* the bytes outside: everything up to the part's header, from its end on */
  const EbRef *ref = g_ptr_array_index (r->scan->refs, 0);
  g_assert_cmpmem (out->data, ref->block_start, msg->str, ref->block_start);
  gsize tail = msg->len - ref->end;
  g_assert_cmpmem (out->data + out->len - tail, tail, msg->str + ref->end, tail);
  /* the message's line ending throughout */
  if (strcmp (eol, "\r\n") == 0)
    for (guint i = 0; i < out->len; i++)
      if (out->data[i] == '\n')
        g_assert_true (i > 0 && out->data[i - 1] == '\r');

  g_autofree char *ct = g_strdup_printf (" application/pdf;%s name=\"report.pdf\"", eol);
  const char *urls[] = { url };
  GBytes *payloads[] = { payload };
  const char *cts[] = { ct };
  check_references (out, urls, payloads, cts, 1, retention ? 7 : 0);
  /* the object */
  g_autofree char *hex = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, payload);
  g_autofree char *obj = g_build_filename (f->dir, hex, NULL);
  g_autofree char *content = NULL;
  gsize clen = 0;
  g_assert_true (g_file_get_contents (obj, &content, &clen, NULL));
  g_assert_cmpmem (content, clen, g_bytes_get_data (payload, NULL), g_bytes_get_size (payload));
  /* the other fields: phantom ones as written, X-Other kept in the outer header */
  g_assert_nonnull (g_strstr_len ((const char *) out->data, out->len, "X-Other: kept"));
  g_assert_nonnull (g_strstr_len ((const char *) out->data, out->len, "Content-ID: <p1@example.org>"));

  /* GMime sees a message/external-body with the phantom header as its content */
  g_autoptr (GMimeStream) st = g_mime_stream_mem_new_with_buffer ((const char *) out->data, out->len);
  g_autoptr (GMimeParser) parser = g_mime_parser_new_with_stream (st);
  g_autoptr (GMimeMessage) m = g_mime_parser_construct_message (parser, NULL);
  g_assert_nonnull (m);
  GMimeMultipart *mp = GMIME_MULTIPART (g_mime_message_get_mime_part (m));
  g_assert_cmpint (g_mime_multipart_get_count (mp), ==, 2);
  GMimeObject *p2 = g_mime_multipart_get_part (mp, 1);
  g_assert_true (g_mime_content_type_is_type (g_mime_object_get_content_type (p2), "message",
                                              "external-body"));
  g_assert_cmpstr (g_mime_object_get_header (p2, "X-Other"), ==, "kept");

  /* a second externalize changes nothing: its output is its input */
  g_autoptr (EbPlan) again = eb_externalize_plan ((const char *) out->data, out->len,
                                                           f->config, f->store, 0);
  g_assert_false (eb_plan_get_changed (again));
  g_assert_cmpuint (eb_plan_get_n_refs (again), ==, 0);
  g_autoptr (GByteArray) out2 = write_plan (again, (const char *) out->data, out->len);
  g_assert_cmpmem (out2->data, out2->len, out->data, out->len);
}

static void
test_reference_lf (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  run_reference (f, "\n", FALSE);
}

static void
test_reference_crlf (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  run_reference (f, "\r\n", TRUE);
}

/* The body of a single-part message: the message header is rebuilt (its
 * content fields moved into the phantom header), and the header edits a milter
 * makes say the same. */
static void
test_root (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  g_autoptr (GBytes) payload = NULL;
  g_autofree char *b = base64_lines (3000, 5, &payload);
  g_autofree char *msg = g_strdup_printf (
    "From: a@example.org\nSubject: root\nMIME-Version: 1.0\nContent-Type: application/zip\n"
    "Content-Transfer-Encoding: base64\nContent-Disposition: attachment; filename=x.zip\n"
    "Message-ID: <r@example.org>\n\n%s", b);
  gsize len = strlen (msg);
  g_autoptr (EbPlan) r = eb_externalize_plan (msg, len, f->config, f->store,
                                                       EB_EXTERNALIZE_FILTER_FIELD);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 1);
  g_assert_cmpstr (eb_plan_get_ref_path (r, 0), ==, "1");
  g_autoptr (GByteArray) out = write_plan (r, msg, len);
  const char *o = (const char *) out->data;
  g_assert_true (test_mem_has_prefix (o, out->len, "From: a@example.org\nSubject: root\nMIME-Version: 1.0\n"
                                      "Message-ID: <r@example.org>\n"
                                      "Content-Type: message/external-body; access-type=URL;\n"));
  g_assert_nonnull (g_strstr_len (o, (gssize) out->len, "\nX-Extbody: externalized 1 of 1 part\n\n"
                                                        "Content-Type: application/zip\n"
                                                        "Content-Disposition: attachment; filename=x.zip\n"
                                                        "Content-Transfer-Encoding: binary\n"));
  const char *urls[] = { eb_plan_get_ref_url (r, 0) };
  GBytes *payloads[] = { payload };
  const char *cts[] = { " application/zip" };
  check_references (out, urls, payloads, cts, 1, 0);

  /* the milter's way: header edits and a new body give the same message */
  g_autoptr (GPtrArray) edits = eb_plan_header_edits (r);
  gboolean changed_ct = FALSE, deleted_cte = FALSE, deleted_cd = FALSE;
  for (guint i = 0; i < edits->len; i++) {
    const EbHeaderEdit *e = edits->pdata[i];
    const char *name = eb_header_edit_get_name (e);
    if (!g_ascii_strcasecmp (name, "Content-Type")) {
      g_assert_cmpint (eb_header_edit_get_kind (e), ==, EB_HEADER_CHANGE);
      g_assert_true (g_str_has_prefix (eb_header_edit_get_value (e), " message/external-body;"));
      changed_ct = TRUE;
    }
    if (!g_ascii_strcasecmp (name, "Content-Transfer-Encoding"))
      deleted_cte = eb_header_edit_get_kind (e) == EB_HEADER_DELETE;
    if (!g_ascii_strcasecmp (name, "Content-Disposition"))
      deleted_cd = eb_header_edit_get_kind (e) == EB_HEADER_DELETE;
    g_assert_true (g_ascii_strcasecmp (name, "Subject") && g_ascii_strcasecmp (name, "From"));
  }
  g_assert_true (changed_ct && deleted_cte && deleted_cd);
  g_autoptr (GOutputStream) mem = g_memory_output_stream_new_resizable ();
  g_assert_true (eb_plan_write_body (r, mem, NULL));
  g_output_stream_close (mem, NULL, NULL);
  g_autoptr (EbHeaderBlock) top = eb_header_block_scan (o, 0, out->len);
  gsize bl = g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (mem));
  g_assert_cmpmem (g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (mem)), bl,
                   o + top->body, out->len - top->body);
}

/* A mail filter's pass (EB_EXTERNALIZE_STRIP_TRACE): the trace fields a
 * sender forged go as plan ranges, from the written message and in the header
 * edits a milter makes, whether the part is the message's body (its header
 * rebuilt) or a part of a multipart; a message with nothing to take out loses
 * them too, and nothing else. */
static void
test_strip_trace (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  g_autoptr (GBytes) payload = NULL;
  g_autofree char *b = base64_lines (3000, 7, &payload);
  g_autofree char *root = g_strdup_printf (
    "From: a@example.org\nX-Extbody: externalized 9 of 9 parts\nSubject: root\nMIME-Version: 1.0\n"
    "Content-Type: application/zip\nContent-Transfer-Encoding: base64\n"
    "X-Extbody-Resolved: forged\n\n%s", b);
  g_autofree char *multi = g_strdup_printf (
    "From: a@example.org\nX-Extbody: externalized 9 of 9 parts\nSubject: multi\nMIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nhi\n--b\n"
    "Content-Type: application/zip\nContent-Transfer-Encoding: base64\n\n%s--b--\n", b);
  const char *msgs[] = { root, multi };
  for (guint m = 0; m < G_N_ELEMENTS (msgs); m++) {
    gsize len = strlen (msgs[m]);
    g_autoptr (EbPlan) r = eb_externalize_plan (msgs[m], len, f->config, f->store,
                                                EB_EXTERNALIZE_STRIP_TRACE | EB_EXTERNALIZE_FILTER_FIELD);
    g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 1);
    g_autoptr (GByteArray) out = write_plan (r, msgs[m], len);
    g_autofree char *o = g_strndup ((const char *) out->data, out->len);
    g_assert_null (strstr (o, "9 of 9"));
    g_assert_null (strstr (o, "forged"));
    g_assert_nonnull (strstr (o, "\nX-Extbody: externalized 1 of "));
    g_autoptr (GPtrArray) edits = eb_plan_header_edits (r);
    guint deleted = 0;
    for (guint i = 0; i < edits->len; i++)
      if (eb_header_edit_get_kind (edits->pdata[i]) == EB_HEADER_DELETE
          && !g_ascii_strncasecmp (eb_header_edit_get_name (edits->pdata[i]), "X-Extbody", 9))
        deleted++;
    g_assert_cmpuint (deleted, ==, m == 0 ? 2 : 1);
  }
  /* nothing to take out: the trace field alone goes */
  static const char small[] = "From: a@example.org\nX-Extbody: forged\nSubject: s\n\nhi\n";
  static const char want[] = "From: a@example.org\nSubject: s\n\nhi\n";
  g_autoptr (EbPlan) r = eb_externalize_plan (small, strlen (small), f->config, f->store,
                                              EB_EXTERNALIZE_STRIP_TRACE);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 0);
  g_assert_true (eb_plan_get_changed (r));
  g_autoptr (GByteArray) out = write_plan (r, small, strlen (small));
  g_assert_cmpmem (out->data, out->len, want, strlen (want));
}

/* With the site's key (trace_key_file) a record this site sealed stays
 * (whatever it says: externalize makes no decision by it), a forged one
 * goes, and the pass's own record is sealed for the message's Message-ID. */
static void
test_strip_trace_sealed (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  const char *secret = "0123456789abcdef0123456789abcdef";
  g_autofree char *dir = g_dir_make_tmp ("eb-ext-seal-XXXXXX", NULL);
  g_autofree char *key_file = g_build_filename (dir, "trace.key", NULL);
  g_assert_true (g_file_set_contents (key_file, secret, -1, NULL));
  g_assert_cmpint (g_chmod (key_file, 0600), ==, 0);
  g_assert_true (eb_config_set (f->config, "trace_key_file", key_file, NULL));
  g_autoptr (GBytes) key = g_bytes_new_static (secret, strlen (secret));
  g_autofree char *seal = eb_seal_make (key, "resolved 1 of 1 external-body reference", "<ext@test.example>");
  g_autoptr (GBytes) payload = NULL;
  g_autofree char *b = base64_lines (3000, 7, &payload);
  g_autofree char *msg = g_strdup_printf (
    "From: a@example.org\nMessage-ID: <ext@test.example>\nX-Extbody: externalized 9 of 9 parts\n"
    "X-Extbody: resolved 1 of 1 external-body reference; seal=%s\nMIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nhi\n--b\n"
    "Content-Type: application/zip\nContent-Transfer-Encoding: base64\n\n%s--b--\n", seal, b);
  gsize len = strlen (msg);
  g_autoptr (EbPlan) r = eb_externalize_plan (msg, len, f->config, f->store,
                                              EB_EXTERNALIZE_STRIP_TRACE | EB_EXTERNALIZE_FILTER_FIELD);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 1);
  g_assert_cmpuint (eb_plan_get_n_removed (r), ==, 1);
  g_autoptr (GByteArray) out = write_plan (r, msg, len);
  g_autofree char *o = g_strndup ((const char *) out->data, out->len);
  g_assert_null (strstr (o, "9 of 9"));
  g_autofree char *kept = g_strdup_printf ("\nX-Extbody: resolved 1 of 1 external-body reference; seal=%s\n", seal);
  g_assert_nonnull (strstr (o, kept));
  g_autofree char *value = eb_plan_filter_field_value (r);
  g_assert_true (g_str_has_prefix (value, " externalized 1 of 1 part; seal="));
  g_assert_true (eb_seal_verify (key, value, "<ext@test.example>", NULL));
  g_autofree char *added = g_strdup_printf ("\nX-Extbody:%s\n", value);
  g_assert_nonnull (strstr (o, added));
  g_unlink (key_file);
  g_rmdir (dir);
}

/* The fallback: a multipart/alternative with a text part naming the file and
 * the link, then the reference; GMime reads it so. */
static void
test_fallback (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  g_autoptr (GBytes) payload = NULL;
  g_autofree char *b = base64_lines (2000, 6, &payload);
  g_autofree char *msg = g_strdup_printf (
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"=_extbody_\"\n\n"
    "--=_extbody_\nContent-Type: text/plain\n\nbody\n"
    "--=_extbody_\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n"
    "Content-Disposition: attachment;\n filename*=utf-8''%%C3%%A9t%%C3%%A9%%07.bin\n\n%s"
    "--=_extbody_--\n", b);
  gsize len = strlen (msg);
  g_assert_true (eb_config_set (f->config, "externalize_retention", "30", NULL));
  g_autoptr (EbPlan) r = eb_externalize_plan (msg, len, f->config, f->store,
                                                       EB_EXTERNALIZE_FALLBACK);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 1);
  const char *url = eb_plan_get_ref_url (r, 0);
  g_autoptr (GByteArray) out = write_plan (r, msg, len);
  g_autoptr (GMimeStream) st = g_mime_stream_mem_new_with_buffer ((const char *) out->data, out->len);
  g_autoptr (GMimeParser) parser = g_mime_parser_new_with_stream (st);
  g_autoptr (GMimeMessage) m = g_mime_parser_construct_message (parser, NULL);
  GMimeMultipart *mp = GMIME_MULTIPART (g_mime_message_get_mime_part (m));
  g_assert_cmpint (g_mime_multipart_get_count (mp), ==, 2);
  GMimeObject *alt = g_mime_multipart_get_part (mp, 1);
  g_assert_true (GMIME_IS_MULTIPART (alt));
  g_assert_true (g_mime_content_type_is_type (g_mime_object_get_content_type (alt), "multipart",
                                              "alternative"));
  const char *ab = g_mime_multipart_get_boundary (GMIME_MULTIPART (alt));
  g_assert_false (g_str_has_prefix (ab, "=_extbody_") && strlen (ab) == strlen ("=_extbody_"));
  g_assert_cmpint (g_mime_multipart_get_count (GMIME_MULTIPART (alt)), ==, 2);
  GMimeObject *t = g_mime_multipart_get_part (GMIME_MULTIPART (alt), 0);
  GMimeObject *x = g_mime_multipart_get_part (GMIME_MULTIPART (alt), 1);
  g_assert_true (g_mime_content_type_is_type (g_mime_object_get_content_type (t), "text", "plain"));
  g_assert_true (g_mime_content_type_is_type (g_mime_object_get_content_type (x), "message",
                                              "external-body"));
  /* the text: decoded, with the name (control character removed), the URL, the digest */
  GMimeDataWrapper *dw = g_mime_part_get_content (GMIME_PART (t));
  g_autoptr (GMimeStream) ts = g_mime_stream_mem_new ();
  g_mime_data_wrapper_write_to_stream (dw, ts);
  GByteArray *ta = g_mime_stream_mem_get_byte_array (GMIME_STREAM_MEM (ts));
  g_autofree char *text = g_strndup ((const char *) ta->data, ta->len);
  g_autofree char *hex = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, payload);
  g_assert_nonnull (strstr (text, "\"\xc3\xa9t\xc3\xa9.bin\""));
  g_assert_nonnull (strstr (text, url));
  g_assert_nonnull (strstr (text, hex));
  g_assert_nonnull (strstr (text, "Kept until: "));
  g_assert_null (strchr (text, '\a'));
  /* the reference inside reads back */
  const char *urls[] = { url };
  GBytes *payloads[] = { payload };
  const char *cts[] = { " application/octet-stream" };
  check_references (out, urls, payloads, cts, 1, 30);
}

/* The same attachment twice: stored once, both parts refer to it. */
static void
test_dedup (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  g_autofree char *b = base64_lines (700, 7, NULL);
  g_autofree char *msg = g_strdup_printf (
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: image/jpeg\nContent-Transfer-Encoding: base64\n\n%s"
    "--b\nContent-Type: image/jpeg; name=copy.jpg\nContent-Transfer-Encoding: base64\n\n%s--b--\n", b, b);
  g_autoptr (EbPlan) r = eb_externalize_plan (msg, strlen (msg), f->config, f->store, 0);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 2);
  g_assert_cmpstr (eb_plan_get_ref_url (r, 0), ==, eb_plan_get_ref_url (r, 1));
  g_assert_cmpuint (count_objects (f->dir), ==, 1);
  /* another message with it: still one object */
  g_autoptr (EbPlan) r2 = eb_externalize_plan (msg, strlen (msg), f->config, f->store, 0);
  g_assert_cmpuint (eb_plan_get_n_resolved (r2), ==, 2);
  g_assert_cmpuint (count_objects (f->dir), ==, 1);
}

/* A store that fails: the message comes out byte for byte as it came in, each
 * candidate left with store-failed and the store's error. */
static void
test_store_failure (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  g_autofree char *b = base64_lines (700, 8, NULL);
  g_autofree char *msg = g_strdup_printf (
    "From sender@example.org Thu Jan  1 00:00:00 2026\n"
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: text/plain\n\nhi\n"
    "--b\nContent-Type: audio/ogg\nContent-Transfer-Encoding: base64\n\n%s--b--\n", b);
  gsize len = strlen (msg);
  g_assert_cmpint (g_rmdir (f->dir), ==, 0);
  g_autoptr (EbPlan) r = eb_externalize_plan (msg, len, f->config, f->store,
                                                       EB_EXTERNALIZE_FILTER_FIELD);
  g_assert_cmpuint (eb_plan_get_n_refs (r), ==, 1);
  g_assert_cmpint (eb_plan_get_ref_reason (r, 0), ==, EB_REASON_STORE_FAILED);
  g_assert_nonnull (eb_plan_get_ref_detail (r, 0));
  g_assert_null (strchr (eb_plan_get_ref_detail (r, 0), '\n'));
  g_assert_false (eb_plan_get_changed (r));
  g_autoptr (GByteArray) out = write_plan (r, msg, len);
  g_assert_cmpmem (out->data, out->len, msg, len);
  g_assert_cmpint (g_mkdir (f->dir, 0700), ==, 0);
}

/* Nothing to take out: byte for byte; a message over max_message_size or
 * max_parts is left whole. */
static void
test_unchanged (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  g_autofree char *b = base64_lines (700, 9, NULL);
  g_autofree char *msg = g_strdup_printf (
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: text/plain\n\nhi\n--b\nContent-Type: text/plain\n\nho\n"
    "--b\nContent-Type: application/x-thing\nContent-Transfer-Encoding: base64\n\n%s--b--\n", b);
  gsize len = strlen (msg);
  g_assert_true (eb_config_set (f->config, "max_parts", "3", NULL));
  g_autoptr (EbPlan) r = eb_externalize_plan (msg, len, f->config, f->store, 0);
  g_assert_cmpint (eb_plan_get_reason (r), ==, EB_REASON_TOO_MANY_PARTS);
  g_assert_false (eb_plan_get_changed (r));
  g_assert_true (eb_config_set (f->config, "max_parts", "4", NULL));
  g_assert_true (eb_config_set (f->config, "max_message_size", "1k", NULL));
  g_autoptr (EbPlan) r2 = eb_externalize_plan (msg, len, f->config, f->store, 0);
  g_assert_cmpint (eb_plan_get_reason (r2), ==, EB_REASON_MESSAGE_TOO_LARGE);
  g_assert_false (eb_plan_get_changed (r2));
  g_assert_true (eb_config_set (f->config, "max_message_size", "64M", NULL));
  g_assert_true (eb_config_set (f->config, "max_nesting_depth", "1", NULL));
  g_autofree char *deep = g_strdup_printf (
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: multipart/mixed; boundary=c\n\n"
    "--c\nContent-Type: application/x-thing\nContent-Transfer-Encoding: base64\n\n%s--c--\n--b--\n", b);
  g_autoptr (EbPlan) r3 = eb_externalize_plan (deep, strlen (deep), f->config, f->store, 0);
  g_assert_cmpuint (eb_plan_get_n_refs (r3), ==, 1);
  g_assert_cmpint (eb_plan_get_ref_reason (r3, 0), ==, EB_REASON_TOO_DEEP);
  g_assert_false (eb_plan_get_changed (r3));
  g_assert_true (eb_config_set (f->config, "max_nesting_depth", "20", NULL));
  g_assert_true (eb_config_set (f->config, "externalize_min_size", "1M", NULL));
  g_autoptr (EbPlan) r4 = eb_externalize_plan (msg, len, f->config, f->store, 0);
  g_assert_cmpuint (eb_plan_get_n_refs (r4), ==, 0);
  g_autoptr (GByteArray) out = write_plan (r4, msg, len);
  g_assert_cmpmem (out->data, out->len, msg, len);
  g_assert_cmpuint (count_objects (f->dir), ==, 0);
}

/* An attachment inside a forwarded message is walked and taken out. */
static void
test_encapsulated (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  g_autofree char *b = base64_lines (900, 10, NULL);
  g_autofree char *msg = g_strdup_printf (
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: text/plain\n\nsee below\n"
    "--b\nContent-Type: message/rfc822\n\nFrom: x@example.org\nSubject: inner\nMIME-Version: 1.0\n"
    "Content-Type: application/x-tar\nContent-Transfer-Encoding: base64\n\n%s--b--\n", b);
  gsize len = strlen (msg);
  g_autoptr (EbPlan) r = eb_externalize_plan (msg, len, f->config, f->store, 0);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 1);
  g_assert_cmpstr (eb_plan_get_ref_path (r, 0), ==, "2.1");
  g_autoptr (GByteArray) out = write_plan (r, msg, len);
  g_assert_nonnull (g_strstr_len ((const char *) out->data, out->len,
                                  "Content-Type: message/rfc822\n\nFrom: x@example.org\nSubject: inner\n"
                                  "MIME-Version: 1.0\nContent-Type: message/external-body;"));
}

/* A text attachment without Content-Type is text/plain; charset=us-ascii
 * (RFC 2045 5.2): the phantom header names it, so a resolver does not take
 * the type a web server makes up for the object. */
static void
test_default_type (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  GString *text = g_string_new (NULL);
  for (guint i = 0; i < 40; i++)
    g_string_append_printf (text, "line %u of a log file that is attached\n", i);
  g_autofree char *msg = g_strdup_printf (
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: text/plain\n\nhi\n"
    "--b\nContent-Disposition: attachment; filename=log.txt\n\n%s--b--\n", text->str);
  g_string_free (text, TRUE);
  gsize len = strlen (msg);
  g_autoptr (EbPlan) r = eb_externalize_plan (msg, len, f->config, f->store, 0);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 1);
  g_autoptr (GByteArray) out = write_plan (r, msg, len);
  g_assert_nonnull (g_strstr_len ((const char *) out->data, out->len,
                                  "\n\nContent-Disposition: attachment; filename=log.txt\n"
                                  "Content-Type: text/plain; charset=us-ascii\n"
                                  "Content-Transfer-Encoding: binary\n"));
  /* RFC 2046 5.2.3: the encapsulated header of every reference includes a
   * Content-ID; a part without one gets <SHA-256@host of the URL> */
  const char *url = eb_plan_get_ref_url (r, 0);
  g_autofree char *cid = g_strdup_printf ("\nContent-ID: <%s@127.0.0.1>\n\n", url + strlen (url) - 64);
  g_autofree char *written = g_strndup ((const char *) out->data, out->len);
  const char *found = strstr (written, cid);
  g_assert_nonnull (found);
  g_assert_true (strstr (written, "Content-ID:") == found + 1);
  g_assert_null (strstr (found + 2, "Content-ID:"));

  /* its Content-MD5 is of the canonical form, CR LF line ends (RFC 1864),
   * though the object holds the lines as they were (LF) */
  GString *canon = g_string_new (NULL);
  for (guint i = 0; i < 40; i++)
    g_string_append_printf (canon, "line %u of a log file that is attached\r\n", i);
  g_string_truncate (canon, canon->len - 2);   /* the last line break is the delimiter's */
  g_autoptr (GChecksum) md5 = g_checksum_new (G_CHECKSUM_MD5);
  g_checksum_update (md5, (const guchar *) canon->str, (gssize) canon->len);
  g_string_free (canon, TRUE);
  guint8 d[16];
  gsize dl = sizeof d;
  g_checksum_get_digest (md5, d, &dl);
  g_autofree char *b64 = g_base64_encode (d, dl);
  g_autofree char *field = g_strdup_printf ("\nContent-MD5: %s\n", b64);
  g_assert_nonnull (strstr (written, field));
}

/* An mbox message (EB_EXTERNALIZE_MBOXRD): a text attachment's "From " lines
 * are quoted in the mailbox (">From ", ">>From " for a line that was
 * ">From "); the object holds them as the reader sees them, unquoted, and a
 * line that only starts with '>' keeps it. Without the flag the bytes are
 * taken as they are. */
static void
test_mboxrd (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  GString *quoted = g_string_new (NULL), *plain = g_string_new (NULL);
  for (guint i = 0; i < 20; i++) {
    g_string_append_printf (quoted, ">From the log, line %u\n>>From quoted\n> >From not a From_ line\n", i);
    g_string_append_printf (plain, "From the log, line %u\n>From quoted\n> >From not a From_ line\n", i);
  }
  g_autofree char *msg = g_strdup_printf (
    "From sender@example.org Thu Jan  1 00:00:00 2026\n"
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: text/plain\n\nhi\n"
    "--b\nContent-Type: text/plain; name=log.txt\nContent-Disposition: attachment\n\n%s--b--\n",
    quoted->str);
  gsize len = strlen (msg);
  /* the last line break belongs to the boundary's delimiter line */
  g_string_truncate (plain, plain->len - 1);
  g_string_truncate (quoted, quoted->len - 1);
  g_autoptr (EbPlan) r = eb_externalize_plan (msg, len, f->config, f->store,
                                                       EB_EXTERNALIZE_MBOXRD);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 1);
  g_autofree char *hex = g_compute_checksum_for_string (G_CHECKSUM_SHA256, plain->str, -1);
  g_autofree char *path = g_build_filename (f->dir, hex, NULL);
  g_autofree char *stored = NULL;
  gsize n = 0;
  g_assert_true (g_file_get_contents (path, &stored, &n, NULL));
  g_assert_cmpmem (stored, n, plain->str, plain->len);
  g_autofree char *url = g_strconcat (BASE_URL "/", hex, NULL);
  g_assert_cmpstr (eb_plan_get_ref_url (r, 0), ==, url);
  /* not from an mbox: the bytes as they are */
  g_autoptr (EbPlan) r2 = eb_externalize_plan (msg, len, f->config, f->store, 0);
  g_assert_cmpuint (eb_plan_get_n_resolved (r2), ==, 1);
  g_autofree char *hex2 = g_compute_checksum_for_string (G_CHECKSUM_SHA256, quoted->str, -1);
  g_autofree char *url2 = g_strconcat (BASE_URL "/", hex2, NULL);
  g_assert_cmpstr (eb_plan_get_ref_url (r2, 0), ==, url2);
  g_string_free (quoted, TRUE);
  g_string_free (plain, TRUE);
}

/* A part extbody rewrite restored (its header carries the phantom's
 * Content-MD5 and the trace field X-Extbody-Resolved) and externalized again is
 * referred to as the first time: the stale trace and checksum are dropped, the
 * other fields of the part kept. */
static void
test_again_after_rewrite (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  g_autofree char *b = base64_lines (700, 12, NULL);
  const char *first = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
                      "--b\nContent-Type: text/plain\n\nhi\n"
                      "--b\nContent-Type: application/zip; name=a.zip\nContent-Transfer-Encoding: base64\n\n%s--b--\n";
  const char *restored = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
                         "--b\nContent-Type: text/plain\n\nhi\n"
                         "--b\nContent-Type: application/zip; name=a.zip\nContent-MD5: AAAAAAAAAAAAAAAAAAAAAA==\n"
                         "Content-Transfer-Encoding: base64\n"
                         "X-Extbody-Resolved: access-type=URL;\n\tURL=\"http://old.example/x\";\n\tsize=700; sha256=00\n"
                         "\n%s--b--\n";
  g_autofree char *m1 = g_strdup_printf (first, b), *m2 = g_strdup_printf (restored, b);
  g_autoptr (EbPlan) r1 = eb_externalize_plan (m1, strlen (m1), f->config, f->store, 0);
  g_autoptr (EbPlan) r2 = eb_externalize_plan (m2, strlen (m2), f->config, f->store, 0);
  g_assert_cmpuint (eb_plan_get_n_resolved (r1), ==, 1);
  g_assert_cmpuint (eb_plan_get_n_resolved (r2), ==, 1);
  g_autoptr (GByteArray) o1 = write_plan (r1, m1, strlen (m1));
  g_autoptr (GByteArray) o2 = write_plan (r2, m2, strlen (m2));
  g_assert_cmpmem (o2->data, o2->len, o1->data, o1->len);
  g_assert_null (g_strstr_len ((const char *) o2->data, o2->len, "X-Extbody-Resolved"));
  g_assert_null (g_strstr_len ((const char *) o2->data, o2->len, "AAAAAAAA"));
}

/* ---- the round trip, in process (issue 25) ----------------------------------- */

/* @out with the URL of its one reference made a data: URL of @payload, so
 * that the resolver restores the part without a server. */
static GByteArray *
with_data_url (const GByteArray *out, GBytes *payload)
{
  const char *o = (const char *) out->data;
  const char *u = g_strstr_len (o, (gssize) out->len, "URL=\"");
  g_assert_nonnull (u);
  const char *q = memchr (u + 5, '"', out->len - (gsize) (u + 5 - o));
  g_assert_nonnull (q);
  g_autofree char *b64 = g_base64_encode (g_bytes_get_data (payload, NULL), g_bytes_get_size (payload));
  GByteArray *r = g_byte_array_new ();
  g_byte_array_append (r, out->data, (guint) (u + 5 - o));
  g_byte_array_append (r, (const guint8 *) "data:;base64,", 13);
  g_byte_array_append (r, (const guint8 *) b64, (guint) strlen (b64));
  g_byte_array_append (r, (const guint8 *) q, (guint) (out->len - (gsize) (q - o)));
  return r;
}

/* The fields of the header block at @start of @buf as "Name:value" (CR
 * dropped), sorted. */
static GPtrArray *
sorted_fields (const char *buf, gsize start, gsize len)
{
  GPtrArray *a = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (EbHeaderBlock) blk = eb_header_block_scan (buf, start, len);
  for (guint i = 0; i < blk->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (blk->fields, EbHeaderField, i);
    GString *v = g_string_new (NULL);
    for (gsize p = f->start; p < f->value_end; p++)
      if (buf[p] != '\r')
        g_string_append_c (v, buf[p]);
    g_ptr_array_add (a, g_string_free (v, FALSE));
  }
  return a;
}

/* A CR LF message whose close delimiter is its last line, with no line break
 * after it, with a part that carries fields of every kind: externalize, in both
 * forms, keeps the CR LF before the delimiter (no bare LF anywhere), and the
 * part restored from its reference has every field it had (two more: the
 * trace field and the phantom's Content-MD5; the transfer encoding chosen
 * afresh), the same bytes, and nothing of the alternative left. */
static void
test_round_trip_fields (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  g_autoptr (GBytes) payload = NULL;
  g_autofree char *b = base64_lines (3000, 13, &payload);
  g_autofree char *part = g_strdup_printf (
    "Content-Type: application/pdf; name=\"a.pdf\"\n"
    "Content-Location: http://example.org/docs/a.pdf\n"
    "Content-Language: en\n"
    "X-Attachment-Id: f_1\n"
    "Content-Disposition: attachment; filename=\"a.pdf\"\n"
    "Content-Description: the plan\n"
    "Content-ID: <a@example.org>\n"
    "Content-Transfer-Encoding: base64\n\n%s", b);
  g_autofree char *tmpl = g_strdup_printf (
    "From: a@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"zz\"\n\n"
    "--zz\nContent-Type: text/plain\n\nhello\n--zz\n%s--zz--", part);
  g_autoptr (GString) msg = with_eol (tmpl, "\r\n");
  g_assert_true (g_str_has_suffix (msg->str, "\r\n--zz--"));
  for (guint fb = 0; fb < 2; fb++) {
    g_autoptr (EbPlan) r = eb_externalize_plan (msg->str, msg->len, f->config, f->store,
                                                         fb ? EB_EXTERNALIZE_FALLBACK : 0);
    g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 1);
    g_autoptr (GByteArray) out = write_plan (r, msg->str, msg->len);
    for (guint i = 0; i < out->len; i++)
      if (out->data[i] == '\n')
        g_assert_true (i > 0 && out->data[i - 1] == '\r');
    g_autofree char *os = g_strndup ((const char *) out->data, out->len);
    g_assert_true (g_str_has_suffix (os, "\r\n--zz--"));
    g_assert_cmpint (fb ? strstr (os, EB_FALLBACK_FIELD ": notice-sha256=") != NULL
                        : strstr (os, EB_FALLBACK_FIELD) == NULL, ==, TRUE);

    /* back: the reference resolved (a data: URL in place of the store's) */
    g_autoptr (GByteArray) in2 = with_data_url (out, payload);
    g_autoptr (EbConfig) c = eb_config_new ();
    g_autoptr (EbPlan) back = eb_rewrite_plan ((const char *) in2->data, in2->len, c, NULL, 0);
    g_assert_cmpuint (eb_plan_get_n_resolved (back), ==, 1);
    const EbRef *ref = g_ptr_array_index (back->scan->refs, 0);
    g_assert_cmpint (ref->alt, ==, fb);
    g_autoptr (GByteArray) restored = write_plan (back, (const char *) in2->data, in2->len);
    const char *rs = (const char *) restored->data;
    for (guint i = 0; i < restored->len; i++)
      if (restored->data[i] == '\n')
        g_assert_true (i > 0 && restored->data[i - 1] == '\r');
    g_assert_null (g_strstr_len (rs, (gssize) restored->len, "multipart/alternative"));
    g_assert_null (g_strstr_len (rs, (gssize) restored->len, EB_FALLBACK_FIELD));
    g_assert_null (g_strstr_len (rs, (gssize) restored->len, "was taken out"));
    /* the restored part: every field the part had */
    const char *at = g_strstr_len (rs, (gssize) restored->len, "hello\r\n--zz\r\n");
    g_assert_nonnull (at);
    gsize ps = (gsize) (at - rs) + strlen ("hello\r\n--zz\r\n");
    g_autoptr (GPtrArray) got = sorted_fields (rs, ps, restored->len);
    g_autoptr (GPtrArray) want = sorted_fields (part, 0, strlen (part));
    for (guint i = 0; i < want->len; i++) {
      const char *w = want->pdata[i];
      if (g_str_has_prefix (w, "Content-Transfer-Encoding:"))
        continue;
      gboolean found = FALSE;
      for (guint k = 0; k < got->len && !found; k++)
        found = strcmp (got->pdata[k], w) == 0;
      if (!found)
        g_error ("%s: the restored part lost \"%s\"", fb ? "fallback" : "plain", w);
    }
    g_assert_cmpuint (got->len, ==, want->len + 2);
    g_assert_true (test_mem_has_suffix (restored->data, restored->len, "\r\n--zz--"));
    /* the bytes before the part are the message's */
    g_assert_cmpmem (restored->data, ps, msg->str, ps);
  }
}

/* Resolving a reference in a CR LF message whose close delimiter is its last
 * line without a line break: the CR LF before the delimiter stays. */
static void
test_rewrite_crlf_last_line (void)
{
  g_autoptr (GString) msg = with_eol (
    "From: a@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"zz\"\n\n"
    "--zz\nContent-Type: text/plain\n\nhello\n--zz\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,hello%20world\"\n\n"
    "Content-Type: text/plain\n\n--zz--", "\r\n");
  g_autoptr (EbConfig) c = eb_config_new ();
  g_autoptr (EbPlan) r = eb_rewrite_plan (msg->str, msg->len, c, NULL, 0);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 1);
  g_autoptr (GByteArray) out = write_plan (r, msg->str, msg->len);
  for (guint i = 0; i < out->len; i++)
    if (out->data[i] == '\n')
      g_assert_true (i > 0 && out->data[i - 1] == '\r');
  g_assert_cmpmem (out->data + out->len - 8, 8, "\r\n--zz--", 8);
}

/* ---- externalize_key ------------------------------------------------------ */

#define KEY "0123456789abcdef0123456789abcdef-externalize_key-test"

/* With externalize_key: the object's name is the HMAC-SHA256 of its bytes
 * (GLib's GHmac, not extbody's code), the same attachment twice and in a
 * second message is one object, the result's SHA-256 is still the plain one
 * (the log's sha256=), and the message holds no plain SHA-256 of the part:
 * not in the URL, the generated Content-ID, the fallback's text or boundary.
 * The Content-MD5 is there as always. */
static void
test_key_names (Fixture *f, gconstpointer data G_GNUC_UNUSED)
{
  g_assert_true (eb_config_set (f->config, "externalize_key", KEY, NULL));
  eb_store_free (f->store);
  f->store = eb_store_new (f->config, NULL);
  g_assert_nonnull (f->store);
  g_autoptr (GBytes) payload = NULL;
  g_autofree char *b = base64_lines (900, 13, &payload);
  g_autofree char *msg = g_strdup_printf (
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: text/plain\n\nhi\n"
    "--b\nContent-Type: application/pdf; name=a.pdf\nContent-Transfer-Encoding: base64\n\n%s"
    "--b\nContent-Type: application/pdf; name=b.pdf\nContent-Transfer-Encoding: base64\n\n%s--b--\n", b, b);
  gsize len = strlen (msg);
  g_autoptr (GBytes) key = g_bytes_new_static (KEY, strlen (KEY));
  g_autofree char *mac = g_compute_hmac_for_bytes (G_CHECKSUM_SHA256, key, payload);
  g_autofree char *sha = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, payload);
  g_autofree char *url = g_strconcat (BASE_URL "/", mac, NULL);
  for (guint round = 0; round < 2; round++) {
    g_autoptr (EbPlan) r = eb_externalize_plan (msg, len, f->config, f->store,
                                                         round ? EB_EXTERNALIZE_FALLBACK : 0);
    g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 2);
    g_assert_cmpstr (eb_plan_get_ref_url (r, 0), ==, url);
    g_assert_cmpstr (eb_plan_get_ref_url (r, 1), ==, url);
    g_assert_cmpstr (eb_plan_get_ref_sha256 (r, 0), ==, sha);
    g_assert_cmpuint (count_objects (f->dir), ==, 1);
    g_autofree char *path = g_build_filename (f->dir, mac, NULL);
    g_autofree char *stored = NULL;
    gsize n = 0;
    g_assert_true (g_file_get_contents (path, &stored, &n, NULL));
    g_assert_cmpmem (stored, n, g_bytes_get_data (payload, NULL), g_bytes_get_size (payload));
    g_autoptr (GByteArray) out = write_plan (r, msg, len);
    g_autofree char *text = g_strndup ((const char *) out->data, out->len);
    g_autofree char *cid = g_strdup_printf ("\nContent-ID: <%s@127.0.0.1>\n", mac);
    g_assert_nonnull (strstr (text, cid));
    g_autofree char *sha24 = g_strndup (sha, 24);
    g_assert_null (strstr (text, sha24));
    g_assert_null (strstr (text, KEY));
    g_assert_nonnull (strstr (text, "\nContent-MD5: "));
    if (round) {
      g_autofree char *boundary = g_strdup_printf ("boundary=\"=_extbody_%.24s\"", mac);
      g_assert_nonnull (strstr (text, boundary));
      g_assert_null (strstr (text, "SHA-256"));
    }
  }
  /* the fallback text itself: the SHA-256 line only when given one */
  g_autofree char *with = eb_externalize_fallback_text ("a.pdf", "application/pdf", 900, url, sha, NULL);
  g_autofree char *without = eb_externalize_fallback_text ("a.pdf", "application/pdf", 900, url, NULL, NULL);
  g_assert_nonnull (strstr (with, sha));
  g_assert_null (strstr (without, "SHA-256"));
  g_assert_nonnull (strstr (without, url));
}

/* The resolver leaves the generated Content-ID out of the part it restores:
 * <SHA-256@host> always, <HMAC@host> when its configuration has the same
 * externalize_key; with another key or none, <HMAC@host> is the sender's
 * own Content-ID as far as it can tell, and stays. data: URLs: no server. */
static void
test_key_content_id (void)
{
  g_autoptr (GBytes) payload = NULL;
  g_free (base64_lines (300, 14, &payload));
  g_autofree char *b64 = g_base64_encode (g_bytes_get_data (payload, NULL), g_bytes_get_size (payload));
  g_autoptr (GBytes) key = g_bytes_new_static (KEY, strlen (KEY));
  g_autofree char *mac = g_compute_hmac_for_bytes (G_CHECKSUM_SHA256, key, payload);
  g_autofree char *sha = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, payload);
  struct { const char *id, *key; gboolean kept; } cases[] = {
    { sha, NULL, FALSE },
    { sha, KEY, FALSE },
    { mac, KEY, FALSE },
    { mac, NULL, TRUE },
    { mac, "another key of at least thirty-two bytes", TRUE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *msg = g_strdup_printf (
      "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
      "--b\nContent-Type: text/plain\n\nhi\n"
      "--b\nContent-Type: message/external-body; access-type=URL;\n\tURL=\"data:;base64,%s\"\n\n"
      "Content-Type: application/pdf\nContent-Transfer-Encoding: binary\n"
      "Content-ID: <%s@files.example>\n\n\n--b--\n", b64, cases[i].id);
    g_autoptr (EbConfig) c = eb_config_new ();
    if (cases[i].key)
      g_assert_true (eb_config_set (c, "externalize_key", cases[i].key, NULL));
    g_autoptr (GOutputStream) mem = g_memory_output_stream_new_resizable ();
    g_autoptr (EbPlan) r = NULL;
    g_autoptr (GError) e = NULL;
    g_assert_true (eb_rewrite (msg, strlen (msg), c, NULL, EB_REWRITE_DEFAULT, mem, &r, &e));
    g_assert_no_error (e);
    g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 1);
    g_output_stream_close (mem, NULL, NULL);
    g_autofree char *out = g_strndup (g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (mem)),
                                      g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (mem)));
    g_test_message ("case %u", i);
    g_assert_null (strstr (out, "message/external-body"));
    g_assert_nonnull (strstr (out, "Content-Type: application/pdf\n"));
    g_assert_cmpint (strstr (out, "Content-ID:") != NULL, ==, cases[i].kept);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  eb_init ();
  g_test_add_func ("/externalize/types", test_types);
#define ADD(path, fn) g_test_add (path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
  ADD ("/externalize/selection", test_selection);
  ADD ("/externalize/min-size-edge", test_min_size_edge);
  ADD ("/externalize/reference-lf", test_reference_lf);
  ADD ("/externalize/reference-crlf", test_reference_crlf);
  ADD ("/externalize/root", test_root);
  ADD ("/externalize/strip-trace", test_strip_trace);
  ADD ("/externalize/strip-trace-sealed", test_strip_trace_sealed);
  ADD ("/externalize/fallback", test_fallback);
  ADD ("/externalize/dedup", test_dedup);
  ADD ("/externalize/store-failure", test_store_failure);
  ADD ("/externalize/unchanged", test_unchanged);
  ADD ("/externalize/encapsulated", test_encapsulated);
  ADD ("/externalize/default-type", test_default_type);
  ADD ("/externalize/mboxrd", test_mboxrd);
  ADD ("/externalize/again-after-rewrite", test_again_after_rewrite);
  ADD ("/externalize/round-trip-fields", test_round_trip_fields);
  g_test_add_func ("/externalize/rewrite-crlf-last-line", test_rewrite_crlf_last_line);
  ADD ("/externalize/key-names", test_key_names);
  g_test_add_func ("/externalize/key-content-id", test_key_content_id);
  return g_test_run ();
}
