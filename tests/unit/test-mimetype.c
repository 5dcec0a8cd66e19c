/* test-mimetype.c - WHATWG MIME type records beyond the WPT suites: accessors,
 * essence comparison, copies, the data: URL default, U+0000 and invalid UTF-8,
 * and a 1 MB parameter. */
#include <string.h>
#include "eb-mimetype.h"

static void
test_accessors (void)
{
  g_autoptr (EbMimeType) mt = eb_mime_type_parse (" Text/HTML ; Charset=\"utf-8\"; q=1;charset=x;empty=;bad name=v", -1);
  g_assert_nonnull (mt);
  g_assert_cmpstr (eb_mime_type_get_type (mt), ==, "text");
  g_assert_cmpstr (eb_mime_type_get_subtype (mt), ==, "html");
  g_autofree char *ess = eb_mime_type_get_essence (mt);
  g_assert_cmpstr (ess, ==, "text/html");
  g_assert_cmpuint (eb_mime_type_get_n_parameters (mt), ==, 2);
  g_assert_cmpstr (eb_mime_type_get_parameter (mt, "charset"), ==, "utf-8");
  g_assert_cmpstr (eb_mime_type_get_parameter (mt, "q"), ==, "1");
  g_assert_null (eb_mime_type_get_parameter (mt, "empty"));
  const char *n = NULL, *v = NULL;
  eb_mime_type_get_parameter_at (mt, 1, &n, &v);
  g_assert_cmpstr (n, ==, "q");
  g_autofree char *ser = eb_mime_type_serialize (mt);
  g_assert_cmpstr (ser, ==, "text/html;charset=utf-8;q=1");

  g_autoptr (EbMimeType) copy = eb_mime_type_copy (mt);
  g_autofree char *ser2 = eb_mime_type_serialize (copy);
  g_assert_cmpstr (ser2, ==, ser);
  g_autoptr (EbMimeType) other = eb_mime_type_parse ("TEXT/html;x=y", -1);
  g_assert_true (eb_mime_type_essence_equal (mt, other));
  g_autoptr (EbMimeType) plain = eb_mime_type_new_text_plain ();
  g_autofree char *ps = eb_mime_type_serialize (plain);
  g_assert_cmpstr (ps, ==, "text/plain;charset=US-ASCII");
  g_assert_false (eb_mime_type_essence_equal (mt, plain));
}

static void
test_quoting (void)
{
  g_autoptr (EbMimeType) mt = eb_mime_type_parse ("a/b;x=\"q\\\"uo\\\\te\";y=\"\";z=\"caf\xc3\xa9\"", -1);
  g_assert_nonnull (mt);
  g_autofree char *ser = eb_mime_type_serialize (mt);
  g_assert_cmpstr (ser, ==, "a/b;x=\"q\\\"uo\\\\te\";y=\"\";z=\"caf\xc3\xa9\"");
}

static void
test_failures (void)
{
  const char *bad[] = { "", "   ", "text", "text/", "/html", "te xt/html", "text/ht ml", "text/html\xc4\x80",
                        "\xff/x", "t\xc3\xa9xt/plain" };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    g_assert_null (eb_mime_type_parse (bad[i], -1));
  /* U+0000 with an explicit length: in a value it drops the parameter */
  g_autoptr (EbMimeType) mt = eb_mime_type_parse ("a/b;x=\0;y=1", 11);
  g_assert_nonnull (mt);
  g_autofree char *ser = eb_mime_type_serialize (mt);
  g_assert_cmpstr (ser, ==, "a/b;y=1");
  g_assert_null (eb_mime_type_parse ("a\0/b", 4));
}

static void
test_large (void)
{
  GString *s = g_string_new ("application/x;big=\"");
  for (guint i = 0; i < 1024 * 1024; i++)
    g_string_append_c (s, 'a' + (char) (i % 26));
  g_string_append (s, "\";n=2");
  g_autoptr (EbMimeType) mt = eb_mime_type_parse (s->str, (gssize) s->len);
  g_assert_nonnull (mt);
  g_assert_cmpuint (strlen (eb_mime_type_get_parameter (mt, "big")), ==, 1024 * 1024);
  g_assert_cmpstr (eb_mime_type_get_parameter (mt, "n"), ==, "2");
  g_string_free (s, TRUE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mimetype/accessors", test_accessors);
  g_test_add_func ("/mimetype/quoting", test_quoting);
  g_test_add_func ("/mimetype/failures", test_failures);
  g_test_add_func ("/mimetype/large", test_large);
  return g_test_run ();
}
