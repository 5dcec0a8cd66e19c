/* test-dataurl.c - the data: URL processor and forgiving-base64, beyond the
 * web-platform-tests suites: type_given, U+0000, large payloads, white space,
 * and the property that the fast path (used in place) and the general path
 * (parsed and serialized) agree. */
#include <string.h>
#include "eb-dataurl.h"
#include "eb-error.h"

typedef struct {
  const char *url;
  const char *type;      /* serialized, or NULL for failure */
  const char *body;
  gsize       body_len;
  gboolean    type_given;
} Case;

static const Case cases[] = {
  { "data:,x", "text/plain;charset=US-ASCII", "x", 1, FALSE },
  { "data:;charset=utf-8,x", "text/plain;charset=utf-8", "x", 1, FALSE },
  { "data:text/plain,x", "text/plain", "x", 1, TRUE },
  { "DATA:Text/HTML;Charset=\"x\",<b>", "text/html;charset=x", "<b>", 3, TRUE },
  { "data:;base64,aGk=", "text/plain;charset=US-ASCII", "hi", 2, FALSE },
  { "data:image/png;base64,AAEC", "image/png", "\0\1\2", 3, TRUE },
  { "data:image/png ; base64 ,AAEC", "image/png", "\0\1\2", 3, TRUE },
  { "data:a/b;  base64,aGk=", "a/b", "hi", 2, TRUE },
  { "data:a/b;BASE64,aGk", "a/b", "hi", 2, TRUE },
  { "data:;base64,a G\tk\n=", "text/plain;charset=US-ASCII", "hi", 2, FALSE },
  { "data:;base64,%61%47%6b%3d", "text/plain;charset=US-ASCII", "hi", 2, FALSE },
  { "data:,a%2Cb%zz%", "text/plain;charset=US-ASCII", "a,b%zz%", 7, FALSE },
  { "data:,x#frag", "text/plain;charset=US-ASCII", "x", 1, FALSE },
  { "  \t data:,x \x01", "text/plain;charset=US-ASCII", "x", 1, FALSE },
  { "data:garbage,x", "text/plain;charset=US-ASCII", "x", 1, TRUE },
  { "data:,caf\xc3\xa9", "text/plain;charset=US-ASCII", "caf\xc3\xa9", 5, FALSE },
  { "data:text/plain", NULL, NULL, 0, FALSE },
  { "data:;base64,A", NULL, NULL, 0, FALSE },
  { "data:;base64,aGk=x", NULL, NULL, 0, FALSE },
  { "data:;base64,a===", NULL, NULL, 0, FALSE },
  { "http://example.com/,x", NULL, NULL, 0, FALSE },
  { "dat:,x", NULL, NULL, 0, FALSE },
  { "data://a:b/,x", NULL, NULL, 0, FALSE },
  { "", NULL, NULL, 0, FALSE },
};

static void
test_cases (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    const Case *c = &cases[i];
    g_autoptr (GError) error = NULL;
    g_autoptr (EbDataUrl) du = eb_data_url_process (c->url, -1, &error);
    g_test_message ("case %u: %s", i, c->url);
    if (!c->type) {
      g_assert_null (du);
      g_assert_error (error, EB_ERROR, EB_ERROR_DATA_URL);
      g_assert_null (strchr (error->message, '\n'));
      continue;
    }
    g_assert_no_error (error);
    g_autofree char *t = eb_mime_type_serialize (du->mime_type);
    g_assert_cmpstr (t, ==, c->type);
    gsize want_len = c->body_len ? c->body_len : strlen (c->body);
    g_assert_cmpmem (g_bytes_get_data (du->body, NULL), g_bytes_get_size (du->body), c->body, want_len);
    g_assert_cmpint (du->type_given, ==, c->type_given);
  }
}

static void
test_nul (void)
{
  /* U+0000 in the URL itself, with an explicit length */
  g_autoptr (GError) error = NULL;
  g_autoptr (EbDataUrl) du = eb_data_url_process ("data:,a\0b", 9, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (g_bytes_get_data (du->body, NULL), g_bytes_get_size (du->body), "a\0b", 3);
  g_autoptr (EbDataUrl) bad = eb_data_url_process ("data:,\xff", -1, &error);
  g_assert_null (bad);
  g_assert_error (error, EB_ERROR, EB_ERROR_DATA_URL);
}

/* 20 MB through base64, against GLib's encoder. */
static void
test_large (void)
{
  gsize n = 20 * 1000 * 1000;
  guint8 *raw = g_malloc (n);
  GRand *r = g_rand_new_with_seed (3);
  for (gsize i = 0; i < n; i++)
    raw[i] = (guint8) g_rand_int (r);
  g_rand_free (r);
  g_autofree char *b64 = g_base64_encode (raw, n);
  g_autofree char *url = g_strconcat ("data:application/octet-stream;base64,", b64, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (EbDataUrl) du = eb_data_url_process (url, -1, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (g_bytes_get_data (du->body, NULL), g_bytes_get_size (du->body), raw, n);
  g_free (raw);
}

/* The URL parser removes tab and newline anywhere: inserting one forces the
 * general path; the result must equal the fast path's. */
static void
test_paths_agree (void)
{
  static const char alphabet[] = "abcXYZ019+/=,;% #?.:-_~!$&'()*\"<>[]^`{|}\\";
  GRand *r = g_rand_new_with_seed (4);
  for (guint k = 0; k < 20000; k++) {
    GString *s = g_string_new ("data:");
    guint n = (guint) g_rand_int_range (r, 0, 24);
    for (guint i = 0; i < n; i++)
      g_string_append_c (s, alphabet[g_rand_int_range (r, 0, sizeof alphabet - 1)]);
    if (g_rand_boolean (r))
      g_string_insert (s, 5, g_rand_boolean (r) ? ";base64," : "text/plain,");
    g_autoptr (GString) t = g_string_new (s->str);
    g_string_insert_c (t, (gssize) g_rand_int_range (r, 5, (gint32) t->len + 1), '\t');
    g_autoptr (GError) e1 = NULL, e2 = NULL;
    g_autoptr (EbDataUrl) a = eb_data_url_process (s->str, -1, &e1);
    g_autoptr (EbDataUrl) b = eb_data_url_process (t->str, -1, &e2);
    if ((a == NULL) != (b == NULL))
      g_test_message ("disagree: \"%s\" vs \"%s\"", s->str, t->str);
    g_assert_true ((a == NULL) == (b == NULL));
    if (a) {
      g_autofree char *ta = eb_mime_type_serialize (a->mime_type);
      g_autofree char *tb = eb_mime_type_serialize (b->mime_type);
      g_assert_cmpstr (ta, ==, tb);
      g_assert_true (g_bytes_equal (a->body, b->body));
    }
    g_string_free (s, TRUE);
  }
  g_rand_free (r);
}

static void
test_base64_direct (void)
{
  struct { const char *in; const char *out; } ok[] = {
    { "", "" }, { "aGk=", "hi" }, { "aGk", "hi" }, { "aGVsbG8=", "hello" }, { " a G V s b G 8 = ", "hello" },
    { "YQ==", "a" }, { "YQ", "a" }, { "YR==", "a" },   /* extra bits are discarded */
  };
  for (guint i = 0; i < G_N_ELEMENTS (ok); i++) {
    g_autoptr (GBytes) b = eb_forgiving_base64_decode (ok[i].in, strlen (ok[i].in));
    g_assert_nonnull (b);
    g_assert_cmpmem (g_bytes_get_data (b, NULL), g_bytes_get_size (b), ok[i].out, strlen (ok[i].out));
  }
  const char *bad[] = { "a", "abcde", "a=bc", "ab=c", "YQ=", "YQ===", "Y===", "****", "aGk=\x80" };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    g_assert_null (eb_forgiving_base64_decode (bad[i], strlen (bad[i])));
  g_assert_true (eb_data_url_has_scheme (" DaTa:x", 7));
  g_assert_false (eb_data_url_has_scheme ("http:x", 6));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/dataurl/cases", test_cases);
  g_test_add_func ("/dataurl/nul", test_nul);
  g_test_add_func ("/dataurl/large", test_large);
  g_test_add_func ("/dataurl/fast-and-general-paths-agree", test_paths_agree);
  g_test_add_func ("/dataurl/base64", test_base64_direct);
  return g_test_run ();
}
