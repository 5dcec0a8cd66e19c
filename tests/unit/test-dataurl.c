/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-dataurl.c - the data: URL processor and forgiving-base64, beyond the
 * web-platform-tests suites: the URL parser's part (trimming, tabs and
 * newlines, scheme case, fragment, authority and path forms), type_given,
 * ";base64" variants, percent-decoding, U+0000, error messages, white space
 * anywhere in base64, large payloads, and the property that the opaque-path
 * route and the general (parse and serialize) route agree. */
#include <string.h>
#include "eb-dataurl.h"
#include "eb-error.h"

typedef struct {
  const char *url;
  gssize      url_len;     /* -1: NUL-terminated */
  const char *type;        /* serialized MIME type, or NULL for failure */
  const char *body;        /* or, for failure, the error message */
  gsize       body_len;    /* 0: strlen (body) */
  gboolean    type_given;
  gboolean    base64;
} Case;

#define DEFAULT_TYPE "text/plain;charset=US-ASCII"
#define FAIL(u, msg) { u, -1, NULL, msg, 0, FALSE, FALSE }

static const Case cases[] = {
  /* type_given */
  { "data:,x", -1, DEFAULT_TYPE, "x", 0, FALSE, FALSE },
  { "data:;charset=utf-8,x", -1, "text/plain;charset=utf-8", "x", 0, FALSE, FALSE },
  { "data:text/plain,x", -1, "text/plain", "x", 0, TRUE, FALSE },
  { "data:  ,x", -1, DEFAULT_TYPE, "x", 0, FALSE, FALSE },
  { "data:;base64,eA==", -1, DEFAULT_TYPE, "x", 0, FALSE, TRUE },
  { "data: ;base64,eA==", -1, DEFAULT_TYPE, "x", 0, FALSE, TRUE },
  { "data:garbage,x", -1, DEFAULT_TYPE, "x", 0, TRUE, FALSE },   /* named, but invalid */
  { "DATA:Text/HTML;Charset=\"x\",<b>", -1, "text/html;charset=x", "<b>", 0, TRUE, FALSE },

  /* ";base64" variants */
  { "data:;base64,aGk=", -1, DEFAULT_TYPE, "hi", 0, FALSE, TRUE },
  { "data:image/png;base64,AAEC", -1, "image/png", "\0\1\2", 3, TRUE, TRUE },
  { "data:image/png ; base64 ,AAEC", -1, "image/png", "\0\1\2", 3, TRUE, TRUE },
  { "data:a/b;  base64,aGk=", -1, "a/b", "hi", 0, TRUE, TRUE },
  { "data:a/b;BaSe64,aGk", -1, "a/b", "hi", 0, TRUE, TRUE },
  { "data:a/b;base64;base64,aGk", -1, "a/b", "hi", 0, TRUE, TRUE },
  { "data:a/b;base64x,aGk", -1, "a/b", "aGk", 0, TRUE, FALSE },
  { "data:a/b;base 64,aGk", -1, "a/b", "aGk", 0, TRUE, FALSE },
  { "data:a/b;%62ase64,aGk", -1, "a/b", "aGk", 0, TRUE, FALSE },
  { "data:a/b\tb;base64,aGk", -1, "a/bb", "hi", 0, TRUE, TRUE },
  { "data:;base64,a G\tk\n=", -1, DEFAULT_TYPE, "hi", 0, FALSE, TRUE },
  { "data:;base64,%61%47%6b%3d", -1, DEFAULT_TYPE, "hi", 0, FALSE, TRUE },
  { "data:;base64,aG%6\tb%\n3D", -1, DEFAULT_TYPE, "hi", 0, FALSE, TRUE },   /* tabs inside %XX */
  { "data:;base64,aGk%0C%20%09", -1, DEFAULT_TYPE, "hi", 0, FALSE, TRUE },
  { "data:;base64,aGk=#zz", -1, DEFAULT_TYPE, "hi", 0, FALSE, TRUE },
  { "data:;base64,YR", -1, DEFAULT_TYPE, "a", 0, FALSE, TRUE },             /* extra bits dropped */
  { "data:;base64,", -1, DEFAULT_TYPE, "", 0, FALSE, TRUE },

  /* percent-decoding */
  { "data:,a%2Cb%zz%", -1, DEFAULT_TYPE, "a,b%zz%", 0, FALSE, FALSE },
  { "data:,%4", -1, DEFAULT_TYPE, "%4", 0, FALSE, FALSE },
  { "data:,%41%4a%4A%ff", -1, DEFAULT_TYPE, "AJJ\xff", 0, FALSE, FALSE },
  { "data:,%4\t1", -1, DEFAULT_TYPE, "A", 0, FALSE, FALSE },          /* tab removed first */
  { "data:,%%41", -1, DEFAULT_TYPE, "%A", 0, FALSE, FALSE },
  { "data:,%2541", -1, DEFAULT_TYPE, "%41", 0, FALSE, FALSE },         /* decoded once */
  { "data:,caf\xc3\xa9 \x7f", -1, DEFAULT_TYPE, "caf\xc3\xa9 \x7f", 0, FALSE, FALSE },
  { "data:,a?b c\"d", -1, DEFAULT_TYPE, "a?b c\"d", 0, FALSE, FALSE },  /* query */
  { "data:text/plain;a=%2C,x", -1, "text/plain;a=%2C", "x", 0, TRUE, FALSE },
  { "data:text/plain;a=\xc3\xa9,x", -1, "text/plain;a=%C3%A9", "x", 0, TRUE, FALSE },

  /* the URL parser: trimming, tabs and newlines, scheme, fragment */
  { "data:,x#frag", -1, DEFAULT_TYPE, "x", 0, FALSE, FALSE },
  { "data:,x#frag,y#z", -1, DEFAULT_TYPE, "x", 0, FALSE, FALSE },
  { "data:text/plain#,x", -1, NULL, "data: URL has no comma", 0, FALSE, FALSE },
  { "  \t data:,x \x01", -1, DEFAULT_TYPE, "x", 0, FALSE, FALSE },
  { "\x01\x1f data:,x\x1f\x7f\x1f ", -1, DEFAULT_TYPE, "x\x1f\x7f", 0, FALSE, FALSE },   /* DEL is no C0 */
  { "d\ta\nt\ra:,x\ty", -1, DEFAULT_TYPE, "xy", 0, FALSE, FALSE },
  { "DaTa:,x", -1, DEFAULT_TYPE, "x", 0, FALSE, FALSE },
  { "data:text/plain ,x", -1, "text/plain", "x", 0, TRUE, FALSE },
  { "data:text/plain;a=b ,x", -1, "text/plain;a=b", "x", 0, TRUE, FALSE },
  /* an opaque path's space right before the query is encoded */
  { "data:text/plain;a=b ?,x", -1, "text/plain;a=\"b%20?\"", "x", 0, TRUE, FALSE },
  { "data:text/plain;a=b \t?,x", -1, "text/plain;a=\"b%20?\"", "x", 0, TRUE, FALSE },
  { "data:text/plain\f,x", -1, "text/plain%0c", "x", 0, TRUE, FALSE },

  /* authority and path forms ("data:" then '/') */
  { "data://test/,X", -1, DEFAULT_TYPE, "X", 0, TRUE, FALSE },
  { "data://u:p@h:080/,X", -1, DEFAULT_TYPE, "X", 0, TRUE, FALSE },
  { "data://[::1]/,X", -1, DEFAULT_TYPE, "X", 0, TRUE, FALSE },
  { "data:/a/../b/./c,X", -1, DEFAULT_TYPE, "X", 0, TRUE, FALSE },
  { "data:/,X", -1, DEFAULT_TYPE, "X", 0, TRUE, FALSE },
  { "data:\t/,X", -1, DEFAULT_TYPE, "X", 0, TRUE, FALSE },
  { "data://h?,X", -1, DEFAULT_TYPE, "X", 0, TRUE, FALSE },
  { "data://h,X/", -1, DEFAULT_TYPE, "X/", 0, TRUE, FALSE },
  { "data://test:test/,X", -1, NULL, "URL parser failure: invalid port", 0, FALSE, FALSE },
  { "data://:80/,X", -1, NULL, "URL parser failure: port without a host", 0, FALSE, FALSE },
  { "data://u@/,X", -1, NULL, "URL parser failure: credentials without a host", 0, FALSE, FALSE },
  { "data://a b/,X", -1, NULL, "URL parser failure: forbidden host code point", 0, FALSE, FALSE },
  { "data://h:65536/,X", -1, NULL, "URL parser failure: invalid port", 0, FALSE, FALSE },
  { "data://[::1/,X", -1, NULL, "URL parser failure: invalid IPv6 host", 0, FALSE, FALSE },
  { "data://[1::2::3]/,X", -1, NULL, "URL parser failure: invalid IPv6 host", 0, FALSE, FALSE },

  /* failures */
  FAIL ("data:text/plain", "data: URL has no comma"),
  FAIL ("data:", "data: URL has no comma"),
  FAIL ("data:;base64,A", "invalid base64 in data: URL"),
  FAIL ("data:;base64,aGk=x", "invalid base64 in data: URL"),
  FAIL ("data:;base64,a===", "invalid base64 in data: URL"),
  FAIL ("data:;base64,aGk%", "invalid base64 in data: URL"),
  FAIL ("data:;base64,aGk%25", "invalid base64 in data: URL"),
  FAIL ("data:;base64,aG\xc3\xa9", "invalid base64 in data: URL"),
  FAIL ("data:;base64,aGk=-", "invalid base64 in data: URL"),
  FAIL ("http://example.com/,x", "not a data: URL"),
  FAIL ("dat:,x", "not a data: URL"),
  FAIL ("datas:,x", "not a data: URL"),
  FAIL ("data,x", "not a data: URL"),
  FAIL ("1data:,x", "not a data: URL"),
  FAIL ("", "not a data: URL"),
  FAIL ("data:,\xff", "data: URL is not valid UTF-8"),
  FAIL ("data:\xc3,x", "data: URL is not valid UTF-8"),

  /* U+0000, with an explicit length */
  { "data:,a\0b", 9, DEFAULT_TYPE, "a\0b", 3, FALSE, FALSE },
  { "\0data:,x\0", 9, DEFAULT_TYPE, "x", 0, FALSE, FALSE },
  { "data:text/plain\0,x", 18, "text/plain%00", "x", 0, TRUE, FALSE },
  { "data:;base64,AA\0A", 17, NULL, "invalid base64 in data: URL", 0, FALSE, FALSE },
  { "data:\0,x", 8, DEFAULT_TYPE, "x", 0, TRUE, FALSE },
};

static void
test_cases (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    const Case *c = &cases[i];
    g_autoptr (GError) error = NULL;
    g_autofree char *raw = g_strndup (c->url, c->url_len < 0 ? strlen (c->url) : (gsize) c->url_len);
    g_autofree char *esc = g_strescape (raw, NULL);
    g_test_message ("case %u: %s", i, esc);
    g_autoptr (EbDataUrl) du = eb_data_url_process (c->url, c->url_len, &error);
    if (!c->type) {
      g_assert_null (du);
      g_assert_error (error, EB_ERROR, EB_ERROR_DATA_URL);
      g_assert_cmpstr (error->message, ==, c->body);
      continue;
    }
    g_assert_no_error (error);
    g_autofree char *t = eb_mime_type_serialize (du->mime_type);
    g_assert_cmpstr (t, ==, c->type);
    gsize want_len = c->body_len ? c->body_len : strlen (c->body);
    g_assert_cmpmem (g_bytes_get_data (du->body, NULL), g_bytes_get_size (du->body), c->body,
                     want_len);
    g_assert_cmpint (du->type_given, ==, c->type_given);
    g_assert_cmpint (du->base64, ==, c->base64);
  }
}

/* Deterministic pseudo-random bytes. */
static guint8 *
random_bytes (gsize n, guint32 seed)
{
  guint8 *raw = g_malloc (n);
  GRand *r = g_rand_new_with_seed (seed);
  for (gsize i = 0; i < n; i += 4) {
    guint32 v = g_rand_int (r);
    memcpy (raw + i, &v, MIN (4, n - i));
  }
  g_rand_free (r);
  return raw;
}

/* 20 MB through base64, against GLib's encoder: as one line, and wrapped at 76
 * columns with CR LF (as in mail), both directly and through the data: URL. */
static void
test_large (void)
{
  gsize n = 20 * 1000 * 1000;
  g_autofree guint8 *raw = random_bytes (n, 3);
  g_autofree char *b64 = g_base64_encode (raw, n);
  gsize b64_len = strlen (b64);

  g_autoptr (GBytes) direct = eb_data_url_forgiving_base64_decode (b64, b64_len);
  g_assert_nonnull (direct);
  g_assert_cmpmem (g_bytes_get_data (direct, NULL), g_bytes_get_size (direct), raw, n);

  g_autofree char *url = g_strconcat ("data:application/octet-stream;base64,", b64, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (EbDataUrl) du = eb_data_url_process (url, -1, &error);
  g_assert_no_error (error);
  g_assert_true (du->base64 && du->type_given);
  g_assert_cmpmem (g_bytes_get_data (du->body, NULL), g_bytes_get_size (du->body), raw, n);

  GString *wrapped = g_string_sized_new (b64_len + b64_len / 38 + 64);
  g_string_append (wrapped, "data:application/octet-stream;base64,\r\n");
  for (gsize i = 0; i < b64_len; i += 76) {
    g_string_append_len (wrapped, b64 + i, (gssize) MIN (76, b64_len - i));
    g_string_append (wrapped, "\r\n");
  }
  g_autoptr (EbDataUrl) du2 = eb_data_url_process (wrapped->str, (gssize) wrapped->len, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (g_bytes_get_data (du2->body, NULL), g_bytes_get_size (du2->body), raw, n);
  gsize off = strlen ("data:application/octet-stream;base64,");
  g_autoptr (GBytes) direct2 = eb_data_url_forgiving_base64_decode (wrapped->str + off, wrapped->len - off);
  g_assert_nonnull (direct2);
  g_assert_true (g_bytes_equal (direct2, du2->body));
  g_string_free (wrapped, TRUE);
}

/* ASCII white space at random places (and between every two characters) in
 * base64 changes nothing, directly or in a data: URL, where form feed and
 * space may also come percent-encoded and tab and newline may split a %XX. */
static void
test_whitespace_everywhere (void)
{
  static const char *const ws[] = { " ", "\t", "\n", "\r", "\f" };
  static const char *const url_ws[] = { " ", "\t", "\n", "\r", "\f", "%20", "%0C", "%0a", "%09" };
  GRand *r = g_rand_new_with_seed (5);
  for (guint k = 0; k < 2000; k++) {
    gsize n = (gsize) g_rand_int_range (r, 0, 40);
    g_autofree guint8 *raw = random_bytes (n, k);
    g_autofree char *b64 = g_base64_encode (raw, n);
    if (k % 3 == 0) {   /* without padding */
      char *eq = strchr (b64, '=');
      if (eq)
        *eq = '\0';
    }
    gboolean every = k % 5 == 0;
    GString *d = g_string_new (NULL);
    GString *u = g_string_new ("data:;base64,");
    for (const char *p = b64;; p++) {
      if (every || g_rand_int_range (r, 0, 3) == 0) {
        g_string_append (d, ws[g_rand_int_range (r, 0, G_N_ELEMENTS (ws))]);
        g_string_append (u, url_ws[g_rand_int_range (r, 0, G_N_ELEMENTS (url_ws))]);
      }
      if (!*p)
        break;
      if (*p == '=' || g_rand_int_range (r, 0, 8) == 0) {
        /* percent-encoded in the URL, maybe split by a tab or newline */
        g_string_append_printf (u, "%%%X", (guchar) *p >> 4);
        if (g_rand_boolean (r))
          g_string_append_c (u, "\t\n\r"[g_rand_int_range (r, 0, 3)]);
        g_string_append_printf (u, "%x", (guchar) *p & 15);
      } else {
        g_string_append_c (u, *p);
      }
      g_string_append_c (d, *p);
    }
    g_autoptr (GBytes) got = eb_data_url_forgiving_base64_decode (d->str, d->len);
    g_assert_nonnull (got);
    g_assert_cmpmem (g_bytes_get_data (got, NULL), g_bytes_get_size (got), raw, n);
    g_autoptr (GError) error = NULL;
    g_autoptr (EbDataUrl) du = eb_data_url_process (u->str, (gssize) u->len, &error);
    if (error)
      g_test_message ("%s", u->str);
    g_assert_no_error (error);
    g_assert_cmpmem (g_bytes_get_data (du->body, NULL), g_bytes_get_size (du->body), raw, n);
    g_string_free (d, TRUE);
    g_string_free (u, TRUE);
  }
  g_rand_free (r);
}

/* The URL parser removes tab and newline anywhere, and a leading "/." in an
 * opaque path is no dot segment: inserting a tab must not change the result. */
static void
test_routes_agree (void)
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
    g_string_insert_c (t, (gssize) g_rand_int_range (r, 5, (gint32) t->len + 1),
                       "\t\n\r"[g_rand_int_range (r, 0, 3)]);
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
      g_assert_cmpint (a->type_given, ==, b->type_given);
    } else {
      g_assert_cmpstr (e1->message, ==, e2->message);
    }
    g_string_free (s, TRUE);
  }
  g_rand_free (r);
}

static void
test_base64_direct (void)
{
  static const struct {
    const char *in;
    const char *out;
  } ok[] = {
    { "", "" },
    { "aGk=", "hi" },
    { "aGk", "hi" },
    { "aGVsbG8=", "hello" },
    { " a G V s b G 8 = ", "hello" },
    { "\f\taGVs\r\nbG8=\n", "hello" },
    { "aGk\t=\n", "hi" },
    { "YQ==", "a" },
    { "YQ", "a" },
    { "YR==", "a" },   /* the spec discards the extra bits, whatever they are */
    { "YWI=", "ab" },
    { "YWJ=", "ab" },
    { "+/+/", "\xfb\xff\xbf" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (ok); i++) {
    g_autoptr (GBytes) b = eb_data_url_forgiving_base64_decode (ok[i].in, strlen (ok[i].in));
    g_assert_nonnull (b);
    g_assert_cmpmem (g_bytes_get_data (b, NULL), g_bytes_get_size (b), ok[i].out,
                     strlen (ok[i].out));
  }
  static const char *const bad[] = {
    "a", "abcde", "a=bc", "ab=c", "YQ=", "YQ===", "Y===", "aGk==", "=", "==", "****",
    "aGk=\x80", "%61%47%6b", "aGk\v", "-_-_", "aG k= =x",
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    g_assert_null (eb_data_url_forgiving_base64_decode (bad[i], strlen (bad[i])));
  g_assert_null (eb_data_url_forgiving_base64_decode ("aG\0k", 4));
  g_autoptr (GBytes) empty = eb_data_url_forgiving_base64_decode (NULL, 0);
  g_assert_nonnull (empty);
  g_assert_cmpuint (g_bytes_get_size (empty), ==, 0);
}

static void
test_has_scheme (void)
{
  g_assert_true (eb_data_url_has_scheme (" DaTa:x", 7));
  g_assert_true (eb_data_url_has_scheme ("\x01 data:", 7));
  g_assert_false (eb_data_url_has_scheme ("data", 4));
  g_assert_false (eb_data_url_has_scheme ("http:x", 6));
  g_assert_false (eb_data_url_has_scheme ("", 0));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/dataurl/cases", test_cases);
  g_test_add_func ("/dataurl/large", test_large);
  g_test_add_func ("/dataurl/whitespace-everywhere", test_whitespace_everywhere);
  g_test_add_func ("/dataurl/routes-agree", test_routes_agree);
  g_test_add_func ("/dataurl/base64", test_base64_direct);
  g_test_add_func ("/dataurl/has-scheme", test_has_scheme);
  return g_test_run ();
}
