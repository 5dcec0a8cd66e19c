/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-public.c - the public API, as a program outside the library sees it:
 * this test includes only <extbody/extbody.h> and links the shared library
 * (a function that is not exported fails the link).
 *   /public/version      the run-time version is the compile-time one
 *   /public/config       typed getters by key; set, apply_option, errors
 *   /public/rewrite      the result's accessors on the sample with references
 *   /public/header-edits a top-level reference planned as a milter does,
 *                        with forged trace fields: the edits through accessors
 *   /public/data-url     data: URL processing and MIME type serialization
 *   /public/header       eb_header_get_value, eb_params_content_type_media_type */
#include <extbody/extbody.h>
#include <string.h>

static char *
sample (const char *name, gsize *len)
{
  g_autofree char *path = g_build_filename (g_getenv ("EXTBODY_DATADIR"), "samples", name, NULL);
  char *buf = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_get_contents (path, &buf, len, &error));
  g_assert_no_error (error);
  return buf;
}

static void
test_version (void)
{
  g_assert_cmpuint (eb_get_major_version (), ==, EXTBODY_MAJOR_VERSION);
  g_assert_cmpuint (eb_get_minor_version (), ==, EXTBODY_MINOR_VERSION);
  g_assert_cmpuint (eb_get_micro_version (), ==, EXTBODY_MICRO_VERSION);
  g_assert_cmpstr (eb_get_version_string (), ==, EXTBODY_VERSION_STRING);
  g_assert_cmpstr (EXTBODY_VERSION_STRING, ==, EXTBODY_VERSION_FOR_TESTS);
  g_assert_true (EXTBODY_CHECK_VERSION (EXTBODY_MAJOR_VERSION, EXTBODY_MINOR_VERSION,
                                        EXTBODY_MICRO_VERSION));
  g_assert_false (EXTBODY_CHECK_VERSION (EXTBODY_MAJOR_VERSION, EXTBODY_MINOR_VERSION + 1, 0));
  g_assert_true (EXTBODY_CHECK_VERSION (0, 0, 0));
}

static void
test_config (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GError) error = NULL;
  g_assert_false (eb_config_get_boolean (config, "fetch"));
  g_assert_true (eb_config_get_boolean (config, "strip_trace_fields"));
  g_assert_cmpuint (eb_config_get_uint64 (config, "max_message_size"), ==, 64 * 1024 * 1024);
  g_assert_cmpuint (eb_config_get_uint64 (config, "max_parts"), ==, 10000);
  g_assert_cmpstr (eb_config_get_string (config, "content_type_mismatch"), ==, "keep");

  g_assert_true (eb_config_set (config, "max_parts", "5000", &error));
  g_assert_no_error (error);
  g_assert_cmpuint (eb_config_get_uint64 (config, "max_parts"), ==, 5000);
  g_assert_true (eb_config_apply_option (config, "max_part_bytes=2k", &error));
  g_assert_cmpuint (eb_config_get_uint64 (config, "max_part_bytes"), ==, 2048);
  g_assert_true (eb_config_apply_option (config, "content_type_mismatch=accept", &error));
  g_assert_cmpstr (eb_config_get_string (config, "content_type_mismatch"), ==, "accept");
  g_assert_true (eb_config_apply_option (config, "fetch=on", &error));
  g_assert_true (eb_config_get_boolean (config, "fetch"));

  g_assert_false (eb_config_apply_option (config, "max_parts", &error));
  g_assert_error (error, EB_ERROR, EB_ERROR_SYNTAX);
  g_clear_error (&error);
  g_assert_false (eb_config_set (config, "no_such_key", "1", &error));
  g_assert_error (error, EB_ERROR, EB_ERROR_CONFIG);
  g_clear_error (&error);
  const char *bad[] = { "10.0.0.0/33", NULL };
  g_assert_false (eb_config_add_networks (config, bad, &error));
  g_assert_error (error, EB_ERROR, EB_ERROR_CONFIG);
  g_clear_error (&error);

  g_autoptr (EbConfig) copy = eb_config_copy (config);
  g_assert_cmpuint (eb_config_get_uint64 (copy, "max_parts"), ==, 5000);
  g_autofree char *dump = eb_config_dump (copy);
  g_assert_nonnull (strstr (dump, "max_parts = 5000\n"));

  /* asking for a key of another type is a programmer error */
  if (g_test_subprocess ()) {
    eb_config_get_uint64 (config, "fetch");
    return;
  }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*\"fetch\" is not a configuration key of the type asked for*");
}

static void
test_rewrite (void)
{
  gsize len = 0;
  g_autofree char *buf = sample ("references.eml", &len);
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr (EbPlan) r = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (eb_rewrite (buf, len, config, NULL, EB_REWRITE_DEFAULT, out, &r, &error));
  g_assert_no_error (error);
  g_assert_cmpint (eb_plan_get_reason (r), ==, EB_REASON_RESOLVED);
  g_assert_true (eb_plan_get_parsed (r));
  g_assert_true (eb_plan_get_changed (r));
  g_assert_cmpuint (eb_plan_get_n_refs (r), ==, 6);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 3);
  g_assert_cmpuint (eb_plan_get_n_removed (r), ==, 0);

  /* part 2: a data: URL, resolved */
  g_assert_cmpstr (eb_plan_get_ref_path (r, 0), ==, "2");
  g_assert_cmpint (eb_plan_get_ref_reason (r, 0), ==, EB_REASON_RESOLVED);
  g_assert_cmpstr (eb_plan_get_ref_access_type (r, 0), ==, "url");
  g_assert_true (g_str_has_prefix (eb_plan_get_ref_url (r, 0), "data:image/png;base64,"));
  g_assert_cmpint (eb_plan_get_ref_action (r, 0), ==, EB_ACTION_DATA);
  g_assert_null (eb_plan_get_ref_target (r, 0));
  g_assert_cmpstr (eb_plan_get_ref_content_type (r, 0), ==, "image/png");
  g_assert_cmpstr (eb_plan_get_ref_encoding (r, 0), ==, "base64");
  g_assert_cmpuint (eb_plan_get_ref_size (r, 0), ==, 79);
  g_assert_cmpuint (strlen (eb_plan_get_ref_sha256 (r, 0)), ==, 64);

  /* part 4: a type mismatch, left */
  g_assert_cmpstr (eb_plan_get_ref_path (r, 2), ==, "4");
  g_assert_cmpint (eb_plan_get_ref_reason (r, 2), ==, EB_REASON_TYPE_MISMATCH);
  g_assert_null (eb_plan_get_ref_content_type (r, 2));
  g_assert_null (eb_plan_get_ref_encoding (r, 2));
  g_assert_null (eb_plan_get_ref_sha256 (r, 2));
  g_assert_cmpuint (eb_plan_get_ref_size (r, 2), ==, 0);

  /* part 5: http with fetching off, left; the decision was a fetch */
  g_assert_cmpstr (eb_plan_get_ref_path (r, 3), ==, "5");
  g_assert_cmpint (eb_plan_get_ref_reason (r, 3), ==, EB_REASON_FETCH_OFF);
  g_assert_cmpstr (eb_reason_token (eb_plan_get_ref_reason (r, 3)), ==, "fetch-off");
  g_assert_nonnull (eb_plan_get_ref_detail (r, 3));

  /* the report, JSON and table speak of the same reference */
  g_autofree char *line = eb_inspect_report_line (r, 0);
  g_assert_true (g_str_has_prefix (line, "part 2: access-type=url data:image/png;base64,"));
  g_autofree char *json = eb_inspect_json ("m.eml", -1, NULL, r, 3);
  g_assert_nonnull (strstr (json, "\"reason\":\"fetch-off\""));
  g_autoptr (EbTable) table = eb_table_new (FALSE);
  for (guint i = 0; i < eb_plan_get_n_refs (r); i++)
    eb_table_add (table, NULL, r, i);
  g_autofree char *text = eb_table_finish (table);
  g_assert_nonnull (strstr (text, "type-mismatch"));
  g_autofree char *printable = eb_inspect_printable ("a\tb", 0);
  g_assert_cmpstr (printable, ==, "a\\x09b");

  /* plan + write give the bytes eb_rewrite gave */
  g_autoptr (EbPlan) plan = eb_rewrite_plan (buf, len, config, NULL, EB_REWRITE_DEFAULT);
  g_autoptr (GOutputStream) out2 = g_memory_output_stream_new_resizable ();
  g_assert_true (eb_plan_write (plan, out2, &error));
  g_assert_true (g_output_stream_close (out, NULL, NULL) && g_output_stream_close (out2, NULL, NULL));
  g_autoptr (GBytes) a = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
  g_autoptr (GBytes) b = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out2));
  g_assert_true (g_bytes_equal (a, b));
}

static void
test_header_edits (void)
{
  gsize len0 = 0;
  g_autofree char *msg = sample ("toplevel-crlf.eml", &len0);
  /* a forged trace field at the top, as a sender could add it */
  g_autofree char *buf = g_strconcat ("X-Extbody: forged\r\n", msg, NULL);
  gsize len = len0 + strlen ("X-Extbody: forged\r\n");
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbPlan) r = eb_rewrite_plan (buf, len, config, NULL, EB_REWRITE_STRIP_TRACE);
  g_assert_cmpuint (eb_plan_get_n_refs (r), ==, 1);
  g_assert_cmpuint (eb_plan_get_n_resolved (r), ==, 1);
  g_assert_cmpuint (eb_plan_get_n_removed (r), ==, 1);
  g_autoptr (GPtrArray) edits = eb_plan_header_edits (r);
  gboolean changed_type = FALSE, deleted_trace = FALSE;
  for (guint i = 0; i < edits->len; i++) {
    const EbHeaderEdit *e = g_ptr_array_index (edits, i);
    const char *name = eb_header_edit_get_name (e);
    switch (eb_header_edit_get_kind (e)) {
    case EB_HEADER_CHANGE:
      g_assert_cmpuint (eb_header_edit_get_index (e), >=, 1);
      g_assert_nonnull (eb_header_edit_get_value (e));
      if (g_ascii_strcasecmp (name, "Content-Type") == 0) {
        changed_type = TRUE;
        g_assert_nonnull (strstr (eb_header_edit_get_value (e), "text/html"));
      }
      break;
    case EB_HEADER_ADD:
      g_assert_cmpuint (eb_header_edit_get_index (e), ==, 0);
      g_assert_nonnull (eb_header_edit_get_value (e));
      break;
    case EB_HEADER_DELETE:
      g_assert_null (eb_header_edit_get_value (e));
      if (g_ascii_strcasecmp (name, EB_FILTER_FIELD) == 0 && eb_header_edit_get_index (e) == 1)
        deleted_trace = TRUE;
      break;
    }
  }
  g_assert_true (changed_type);
  g_assert_true (deleted_trace);
  /* the body the milter sends: the decoded HTML, no phantom header */
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr (GError) error = NULL;
  g_assert_true (eb_plan_write_body (r, out, &error));
  g_assert_no_error (error);
  g_assert_true (g_output_stream_close (out, NULL, NULL));
  g_autoptr (GBytes) body = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (out));
  g_autofree char *text = g_strndup (g_bytes_get_data (body, NULL), g_bytes_get_size (body));
  g_assert_null (strstr (text, "Content-Type:"));
}

static void
test_data_url (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (EbDataUrl) du = eb_data_url_process ("data:Text/HTML;Charset=\"utf-8\";base64,aGk=", -1,
                                                  &error);
  g_assert_no_error (error);
  g_autofree char *ser = eb_mime_type_serialize (eb_data_url_get_mime_type (du));
  g_assert_cmpstr (ser, ==, "text/html;charset=utf-8");
  g_autofree char *essence = eb_mime_type_get_essence (eb_data_url_get_mime_type (du));
  g_assert_cmpstr (essence, ==, "text/html");
  g_assert_cmpstr (eb_mime_type_get_parameter (eb_data_url_get_mime_type (du), "charset"), ==, "utf-8");
  gsize n = 0;
  const char *body = g_bytes_get_data (eb_data_url_get_body (du), &n);
  g_assert_cmpmem (body, n, "hi", 2);
  g_assert_true (eb_data_url_get_base64 (du));

  g_autoptr (EbDataUrl) bad = eb_data_url_process ("data:;base64,a", -1, &error);
  g_assert_null (bad);
  g_assert_error (error, EB_ERROR, EB_ERROR_DATA_URL);

  g_autoptr (EbMimeType) mt = eb_mime_type_parse ("TEXT/plain ; a=b", -1);
  g_autoptr (EbMimeType) mt2 = eb_mime_type_copy (mt);
  g_autofree char *s2 = eb_mime_type_serialize (mt2);
  g_assert_cmpstr (s2, ==, "text/plain;a=b");
  g_assert_null (eb_mime_type_parse ("nonsense", -1));
  g_assert_true (eb_mimetype_utf8_validate_with_nul ("a\0b", 3));
  g_assert_false (eb_mimetype_utf8_validate_with_nul ("\xff", 1));
}

static void
test_header (void)
{
  const char *m = "From: a@example.org\r\nSubject: one\r\n\ttwo\r\nMessage-ID: <x@y>\r\n\r\nSubject: body\r\n";
  g_autofree char *subject = eb_header_get_value (m, strlen (m), "subject");
  g_assert_cmpstr (subject, ==, "one\ttwo");
  g_autofree char *id = eb_header_get_value (m, strlen (m), "Message-ID");
  g_assert_cmpstr (id, ==, "<x@y>");
  g_assert_null (eb_header_get_value (m, strlen (m), "Content-Type"));

  g_autofree char *t1 = eb_params_content_type_media_type (" Multipart/Mixed (comment); boundary=x");
  g_assert_cmpstr (t1, ==, "multipart/mixed");
  g_autofree char *t2 = eb_params_content_type_media_type ("text");
  g_assert_null (t2);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  eb_init ();
  eb_init ();   /* again: nothing */
  g_test_add_func ("/public/version", test_version);
  g_test_add_func ("/public/config", test_config);
  g_test_add_func ("/public/rewrite", test_rewrite);
  g_test_add_func ("/public/header-edits", test_header_edits);
  g_test_add_func ("/public/data-url", test_data_url);
  g_test_add_func ("/public/header", test_header);
  int status = g_test_run ();
  eb_shutdown ();
  return status;
}
