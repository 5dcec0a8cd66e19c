/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-mimetype.c - unit tests for the WHATWG MIME type module (eb-mimetype):
 * parse and serialize cases beyond the WPT suites (which test-wpt-mimetype
 * runs), the record accessors, essence comparison, copies, the data: URL
 * default, U+0000 with an explicit length, invalid UTF-8, large inputs, and
 * round-trip stability over every WPT input and over random inputs. */
#include <string.h>
#include <json-glib/json-glib.h>
#include "eb-mimetype.h"

typedef struct {
  const char *input;
  gssize      len;     /* -1: NUL-terminated */
  const char *output;  /* serialization, or NULL for failure */
} Case;

/* Parse @c and compare the serialization. */
static void
check_case (const Case *c)
{
  g_autoptr (EbMimeType) mt = eb_mime_type_parse (c->input, c->len);
  g_autofree char *got = mt ? eb_mime_type_serialize (mt) : NULL;
  if (g_strcmp0 (got, c->output) != 0) {
    g_autofree char *esc = g_strescape (c->input, NULL);
    g_test_message ("input \"%s\" (len %" G_GSSIZE_FORMAT "): got %s, want %s", esc, c->len,
                    got ? got : "failure", c->output ? c->output : "failure");
  }
  g_assert_cmpstr (got, ==, c->output);
}

static void
check_cases (const Case *cases, gsize n)
{
  for (gsize i = 0; i < n; i++)
    check_case (&cases[i]);
}

static void
test_parse_essence (void)
{
  static const Case cases[] = {
    { "text/html", -1, "text/html" },
    { "TEXT/HTML", -1, "text/html" },
    { " \t\r\ntext/html \t\r\n", -1, "text/html" },
    { "*/*", -1, "*/*" },
    { "!#$%&'*+-.^_`|~09azAZ/!#$%&'*+-.^_`|~09azAZ", -1, "!#$%&'*+-.^_`|~09azaz/!#$%&'*+-.^_`|~09azaz" },
    { "text/html ;x=1", -1, "text/html;x=1" },   /* trailing whitespace of the subtype */
    { "text/html;", -1, "text/html" },
    { "text/html/x", -1, NULL },                 /* "/" is not a token code point */
    { "", -1, NULL },
    { " \t\r\n", -1, NULL },
    { "text", -1, NULL },
    { "text/", -1, NULL },
    { "text/ ", -1, NULL },
    { "text/;x=1", -1, NULL },
    { "/html", -1, NULL },
    { "text /html", -1, NULL },
    { "text/ html", -1, NULL },
    { "te xt/html", -1, NULL },
    { "text/ht ml", -1, NULL },
    { "\x0ctext/html", -1, NULL },               /* form feed is not HTTP whitespace */
    { "text/html\x0b", -1, NULL },
    { "\"text\"/html", -1, NULL },
    { "text/h(tml", -1, NULL },
    { "t\xc3\xa9xt/plain", -1, NULL },           /* U+00E9: not a token code point */
    { "text/html\xc2\xa0", -1, NULL },           /* U+00A0 is not whitespace here */
    { "text/html\xc4\x80", -1, NULL },
  };
  check_cases (cases, G_N_ELEMENTS (cases));
}

static void
test_parse_parameters (void)
{
  static const Case cases[] = {
    { "text/html;charset=gbk", -1, "text/html;charset=gbk" },
    { "text/html;CHARSET=GBK", -1, "text/html;charset=GBK" },         /* values keep case */
    { "text/html ; charset=gbk", -1, "text/html;charset=gbk" },
    { "text/html;  \t charset=gbk", -1, "text/html;charset=gbk" },
    { "text/html;charset =gbk", -1, "text/html" },                    /* name "charset " */
    { "text/html;charset= gbk", -1, "text/html;charset=\" gbk\"" },  /* leading space kept */
    { "text/html;charset=gbk \t;x=1", -1, "text/html;charset=gbk;x=1" },
    { "text/html;charset=", -1, "text/html" },
    { "text/html;charset= ;x=1", -1, "text/html;x=1" },
    { "text/html;charset", -1, "text/html" },
    { "text/html;charset;x=1", -1, "text/html;x=1" },
    { "text/html;;;; ;x=1", -1, "text/html;x=1" },
    { "text/html;=x;y=1", -1, "text/html;y=1" },
    { "text/html;a b=x;y=1", -1, "text/html;y=1" },
    { "text/html;\xc3\xa9=x;y=1", -1, "text/html;y=1" },
    { "text/html;x=1;X=2;x=3", -1, "text/html;x=1" },                /* first one wins */
    { "text/html;x=\xe2\x82\xac;x=2", -1, "text/html;x=2" },          /* a dropped one does not count */
    { "text/html;x=;x=2", -1, "text/html;x=2" },
    { "text/html;b=2;a=1;c=3", -1, "text/html;b=2;a=1;c=3" },         /* order kept */
    { "text/html;x=a=b", -1, "text/html;x=\"a=b\"" },
    { "text/html;x=a\tb", -1, "text/html;x=\"a\tb\"" },
    { "text/html;x=\xc3\xa9", -1, "text/html;x=\"\xc3\xa9\"" },
    { "text/html;x=\xc2\x80\xc3\xbf", -1, "text/html;x=\"\xc2\x80\xc3\xbf\"" },
    { "text/html;x=\xc2\xa0", -1, "text/html;x=\"\xc2\xa0\"" },
    { "text/html;x=\xc4\x80;y=1", -1, "text/html;y=1" },             /* U+0100 */
    { "text/html;x=\xf0\x9f\x98\x80;y=1", -1, "text/html;y=1" },
    { "text/html;x=a\x0b;y=1", -1, "text/html;y=1" },
    { "text/html;x=a\x7f;y=1", -1, "text/html;y=1" },
    { "text/html;x=a\nb;y=1", -1, "text/html;y=1" },
    { "text/html;x=a\rb", -1, "text/html" },
  };
  check_cases (cases, G_N_ELEMENTS (cases));
}

static void
test_parse_quoted (void)
{
  static const Case cases[] = {
    { "text/html;x=\"gbk\"", -1, "text/html;x=gbk" },
    { "text/html;x=\"\"", -1, "text/html;x=\"\"" },                   /* empty quoted: kept */
    { "text/html;x=\"", -1, "text/html;x=\"\"" },                     /* unterminated, empty */
    { "text/html;x=\"gbk", -1, "text/html;x=gbk" },
    { "text/html;x=\"gbk\"trailing;y=1", -1, "text/html;x=gbk;y=1" },
    { "text/html;x=\"a;b\";y=1", -1, "text/html;x=\"a;b\";y=1" },
    { "text/html;x=\"a=b\"", -1, "text/html;x=\"a=b\"" },
    { "text/html;x=\"g\\bk\"", -1, "text/html;x=gbk" },               /* \b is b */
    { "text/html;x=\"a\\\"b\"", -1, "text/html;x=\"a\\\"b\"" },
    { "text/html;x=\"a\\\\b\"", -1, "text/html;x=\"a\\\\b\"" },
    { "text/html;x=\"gbk\\\"", -1, "text/html;x=\"gbk\\\"\"" },       /* \" then the end */
    { "text/html;x=\"gbk\\", -1, "text/html;x=\"gbk\\\\\"" },         /* \ at the end is itself */
    { "text/html;x=\"\\\xc3\xa9\"", -1, "text/html;x=\"\xc3\xa9\"" },   /* escaped two-byte code point */
    { "text/html;x=\"\\\xe2\x82\xac\";y=1", -1, "text/html;y=1" },
    { "text/html;x=\"a\\\x01\";y=1", -1, "text/html;y=1" },
    { "text/html;x=\" a \"", -1, "text/html;x=\" a \"" },
    { "text/html;x=\"a\" ;y=1", -1, "text/html;x=a;y=1" },
    { "text/html;x=\"a\"\"b\"", -1, "text/html;x=a" },
    { "text/html;x=a\"b\"", -1, "text/html;x=\"a\\\"b\\\"\"" },       /* quotes not at the start */
    { "text/html;x=\"a\tb\"", -1, "text/html;x=\"a\tb\"" },
    { "text/html;x=\"a\nb\";y=1", -1, "text/html;y=1" },
    { "text/html;x=\"\xc4\x80\";y=1", -1, "text/html;y=1" },
    { "text/html;x=\"a\" \t\n", -1, "text/html;x=a" },
  };
  check_cases (cases, G_N_ELEMENTS (cases));
}

/* U+0000 is a code point like any other when the length is explicit: it is
 * neither a token code point nor a quoted-string token code point. */
static void
test_parse_nul (void)
{
  static const Case cases[] = {
    { "a/b;x=\0;y=1", 11, "a/b;y=1" },
    { "a/b;\0=x;y=1", 11, "a/b;y=1" },
    { "a/b;x=\"\0\";y=1", 13, "a/b;y=1" },
    { "a/b;x=\"\\\0\";y=1", 14, "a/b;y=1" },
    { "a/b;x=\"a\"\0;y=1", 14, "a/b;x=a;y=1" },   /* after the quoted string: ignored */
    { "a\0/b", 4, NULL },
    { "a/b\0", 4, NULL },
    { "\0a/b", 4, NULL },
    { "a/b\0;x=1", 4, NULL },
    { "a/b;x=1\0", 8, "a/b" },
    { "a/b\0;x=1", -1, "a/b" },                  /* NUL-terminated: stops at the NUL */
    { "a/bc", 3, "a/b" },                        /* the length is honoured */
    { "a/b;x=1", 0, NULL },
  };
  check_cases (cases, G_N_ELEMENTS (cases));
  g_assert_null (eb_mime_type_parse (NULL, 0));
}

static void
test_parse_invalid_utf8 (void)
{
  /* Invalid UTF-8 anywhere fails the whole parse, even where a well-formed
   * but unacceptable code point would only drop a parameter. */
  static const Case cases[] = {
    { "\xff/x", -1, NULL },
    { "a/b;x=\xff", -1, NULL },
    { "a/b;x=\"\xc3\"", -1, NULL },               /* truncated sequence */
    { "a/b;x=\xe2\x82", -1, NULL },               /* truncated at the end */
    { "a/b;x=\xc0\xaf", -1, NULL },               /* overlong "/" */
    { "a/b;x=\xc1\xbf", -1, NULL },
    { "a/b;x=\xed\xa0\x80", -1, NULL },           /* a surrogate */
    { "a/b;x=\xf4\x90\x80\x80", -1, NULL },       /* above U+10FFFF */
    { "a/b;x=\x80", -1, NULL },                   /* lone continuation byte */
    { "a/b;x=1 \xc3", -1, NULL },
    { "a/b;y=\0\xc3", 8, NULL },
    /* well-formed noncharacters are valid code points */
    { "a/b;x=\xef\xbf\xbe;y=1", -1, "a/b;y=1" },
    { "a/b;x=\xef\xb7\x90;y=1", -1, "a/b;y=1" },
  };
  check_cases (cases, G_N_ELEMENTS (cases));

  g_assert_true (eb_mimetype_utf8_validate_with_nul ("", 0));
  g_assert_true (eb_mimetype_utf8_validate_with_nul (NULL, 0));
  g_assert_true (eb_mimetype_utf8_validate_with_nul ("\0", 1));
  g_assert_true (eb_mimetype_utf8_validate_with_nul ("a\0\xc3\xa9\0", 5));
  g_assert_true (eb_mimetype_utf8_validate_with_nul ("\xf4\x8f\xbf\xbf", 4));
  g_assert_false (eb_mimetype_utf8_validate_with_nul ("a\0\xc3", 3));
  g_assert_false (eb_mimetype_utf8_validate_with_nul ("\xc3\0\xa9", 3));  /* NUL inside a sequence */
  g_assert_false (eb_mimetype_utf8_validate_with_nul ("\xed\xbf\xbf", 3));
  g_assert_false (eb_mimetype_utf8_validate_with_nul ("\xc3\xa9", 1));    /* the length is honoured */
}

static void
test_serialize (void)
{
  static const Case cases[] = {
    { "a/b;x=\"tok\"", -1, "a/b;x=tok" },
    { "a/b;x=\"\"", -1, "a/b;x=\"\"" },
    { "a/b;x=\"a b\"", -1, "a/b;x=\"a b\"" },
    { "a/b;x=\"(\"", -1, "a/b;x=\"(\"" },
    { "a/b;x=\"@\"", -1, "a/b;x=\"@\"" },
    { "a/b;x=\"\\\"\\\\\"", -1, "a/b;x=\"\\\"\\\\\"" },
    { "a/b;x=!#$%&'*+-.^_`|~", -1, "a/b;x=!#$%&'*+-.^_`|~" },
    { "a/b;x=\xc3\xa9", -1, "a/b;x=\"\xc3\xa9\"" },
  };
  check_cases (cases, G_N_ELEMENTS (cases));
}

static void
test_accessors (void)
{
  g_autoptr (EbMimeType) mt =
    eb_mime_type_parse (" Text/HTML ; Charset=\"utf-8\"; Q=1;charset=x;empty=;bad name=v;z=\"\"", -1);
  g_assert_nonnull (mt);
  g_assert_cmpstr (eb_mime_type_get_type (mt), ==, "text");
  g_assert_cmpstr (eb_mime_type_get_subtype (mt), ==, "html");
  g_autofree char *ess = eb_mime_type_get_essence (mt);
  g_assert_cmpstr (ess, ==, "text/html");

  g_assert_cmpuint (eb_mime_type_get_n_parameters (mt), ==, 3);
  g_assert_cmpstr (eb_mime_type_get_parameter (mt, "charset"), ==, "utf-8");
  g_assert_cmpstr (eb_mime_type_get_parameter (mt, "q"), ==, "1");
  g_assert_cmpstr (eb_mime_type_get_parameter (mt, "z"), ==, "");
  g_assert_null (eb_mime_type_get_parameter (mt, "empty"));
  g_assert_null (eb_mime_type_get_parameter (mt, "bad name"));
  g_assert_null (eb_mime_type_get_parameter (mt, ""));

  static const char *const names[] = { "charset", "q", "z" };
  static const char *const values[] = { "utf-8", "1", "" };
  for (guint i = 0; i < 3; i++) {
    const char *n = NULL, *v = NULL;
    eb_mime_type_get_parameter_at (mt, i, &n, &v);
    g_assert_cmpstr (n, ==, names[i]);
    g_assert_cmpstr (v, ==, values[i]);
  }
  const char *only = NULL;
  eb_mime_type_get_parameter_at (mt, 1, NULL, &only);
  g_assert_cmpstr (only, ==, "1");

  g_autofree char *ser = eb_mime_type_serialize (mt);
  g_assert_cmpstr (ser, ==, "text/html;charset=utf-8;q=1;z=\"\"");

  g_autoptr (EbMimeType) bare = eb_mime_type_parse ("a/b", -1);
  g_assert_cmpuint (eb_mime_type_get_n_parameters (bare), ==, 0);
  g_assert_null (eb_mime_type_get_parameter (bare, "charset"));
}

static void
test_essence_equal (void)
{
  static const struct {
    const char *a, *b;
    gboolean    equal;
  } cases[] = {
    { "text/html", "text/html", TRUE },
    { "TEXT/Html", "text/HTML;charset=x", TRUE },
    { "text/html;a=1", "text/html;a=2", TRUE },
    { " text/html ", "text/html", TRUE },
    { "text/html", "text/plain", FALSE },
    { "text/html", "application/html", FALSE },
    { "text/htmlx", "text/html", FALSE },
    { "te/xthtml", "tex/thtml", FALSE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (EbMimeType) a = eb_mime_type_parse (cases[i].a, -1);
    g_autoptr (EbMimeType) b = eb_mime_type_parse (cases[i].b, -1);
    g_assert_nonnull (a);
    g_assert_nonnull (b);
    g_assert_cmpint (eb_mime_type_essence_equal (a, b), ==, cases[i].equal);
    g_assert_cmpint (eb_mime_type_essence_equal (b, a), ==, cases[i].equal);
  }
}

static void
test_copy (void)
{
  EbMimeType *orig = eb_mime_type_parse ("Image/SVG+XML;a=1;B=\"x y\";c=\"\"", -1);
  g_assert_nonnull (orig);
  g_autofree char *want = eb_mime_type_serialize (orig);
  g_autoptr (EbMimeType) copy = eb_mime_type_copy (orig);
  eb_mime_type_free (orig);  /* the copy owns everything it holds */
  g_autofree char *got = eb_mime_type_serialize (copy);
  g_assert_cmpstr (got, ==, want);
  g_assert_cmpstr (got, ==, "image/svg+xml;a=1;b=\"x y\";c=\"\"");
  g_assert_cmpstr (eb_mime_type_get_type (copy), ==, "image");
  g_assert_cmpstr (eb_mime_type_get_parameter (copy, "b"), ==, "x y");
  g_assert_cmpuint (eb_mime_type_get_n_parameters (copy), ==, 3);

  g_autoptr (EbMimeType) bare = eb_mime_type_parse ("a/b", -1);
  g_autoptr (EbMimeType) bare_copy = eb_mime_type_copy (bare);
  g_autofree char *bs = eb_mime_type_serialize (bare_copy);
  g_assert_cmpstr (bs, ==, "a/b");

  eb_mime_type_free (NULL);
}

static void
test_text_plain (void)
{
  g_autoptr (EbMimeType) plain = eb_mime_type_new_text_plain ();
  g_autofree char *ser = eb_mime_type_serialize (plain);
  g_assert_cmpstr (ser, ==, "text/plain;charset=US-ASCII");
  g_assert_cmpstr (eb_mime_type_get_type (plain), ==, "text");
  g_assert_cmpstr (eb_mime_type_get_subtype (plain), ==, "plain");
  g_assert_cmpuint (eb_mime_type_get_n_parameters (plain), ==, 1);
  g_assert_cmpstr (eb_mime_type_get_parameter (plain, "charset"), ==, "US-ASCII");

  g_autoptr (EbMimeType) parsed = eb_mime_type_parse (ser, -1);
  g_assert_true (eb_mime_type_essence_equal (plain, parsed));
  g_assert_cmpstr (eb_mime_type_get_parameter (parsed, "charset"), ==, "US-ASCII");

  /* each call is a new record */
  g_autoptr (EbMimeType) other = eb_mime_type_new_text_plain ();
  g_assert_true (other != plain);
}

#define MB (1024 * 1024)

/* Long inputs: one 1 MB value (quoted with escapes, and bare), and many
 * parameters, distinct or all with the same name. Not timed; the parser is
 * linear, so these run in milliseconds. */
static void
test_large (void)
{
  g_autoptr (GString) s = g_string_new ("application/x;big=\"");
  for (guint i = 0; i < MB; i++)
    g_string_append_c (s, (char) ('a' + i % 26));
  g_string_append (s, "\\\"\";n=2");
  g_autoptr (EbMimeType) mt = eb_mime_type_parse (s->str, (gssize) s->len);
  g_assert_nonnull (mt);
  const char *big = eb_mime_type_get_parameter (mt, "big");
  g_assert_cmpuint (strlen (big), ==, MB + 1);
  g_assert_cmpint (big[MB], ==, '"');
  g_assert_cmpstr (eb_mime_type_get_parameter (mt, "n"), ==, "2");
  g_autofree char *ser = eb_mime_type_serialize (mt);
  g_assert_cmpuint (strlen (ser), ==, s->len);

  g_string_assign (s, "a/b;v=");
  for (guint i = 0; i < MB; i++)
    g_string_append (s, "\xc3\xa9");
  g_autoptr (EbMimeType) wide = eb_mime_type_parse (s->str, -1);
  g_assert_nonnull (wide);
  g_assert_cmpuint (strlen (eb_mime_type_get_parameter (wide, "v")), ==, 2 * MB);

  /* an unterminated quoted string of backslashes */
  g_string_assign (s, "a/b;v=\"");
  for (guint i = 0; i < MB; i++)
    g_string_append_c (s, '\\');
  g_autoptr (EbMimeType) bs = eb_mime_type_parse (s->str, -1);
  g_assert_cmpuint (strlen (eb_mime_type_get_parameter (bs, "v")), ==, MB / 2);

  /* 100000 distinct parameters, then 100000 with one name */
  g_string_assign (s, "a/b");
  for (guint i = 0; i < 100000; i++)
    g_string_append_printf (s, ";p%u=%u", i, i);
  g_autoptr (EbMimeType) many = eb_mime_type_parse (s->str, -1);
  g_assert_cmpuint (eb_mime_type_get_n_parameters (many), ==, 100000);
  g_assert_cmpstr (eb_mime_type_get_parameter (many, "p99999"), ==, "99999");
  g_string_assign (s, "a/b");
  for (guint i = 0; i < 100000; i++)
    g_string_append_printf (s, ";p=%u", i);
  g_autoptr (EbMimeType) same = eb_mime_type_parse (s->str, -1);
  g_assert_cmpuint (eb_mime_type_get_n_parameters (same), ==, 1);
  g_assert_cmpstr (eb_mime_type_get_parameter (same, "p"), ==, "0");

  /* a megabyte of whitespace and semicolons */
  g_string_assign (s, "a/b");
  for (guint i = 0; i < MB; i++)
    g_string_append_c (s, i % 2 ? ';' : ' ');
  g_string_append (s, "x=1");
  g_autoptr (EbMimeType) semis = eb_mime_type_parse (s->str, -1);
  g_autofree char *ss = eb_mime_type_serialize (semis);
  g_assert_cmpstr (ss, ==, "a/b;x=1");
}

/* Parse @input, serialize, parse that, serialize again: the second parse must
 * succeed, give an equal record, and serialize identically. Returns FALSE when
 * @input does not parse. */
static gboolean
check_round_trip (const char *input, gssize len)
{
  g_autoptr (EbMimeType) a = eb_mime_type_parse (input, len);
  if (!a)
    return FALSE;
  g_autofree char *s1 = eb_mime_type_serialize (a);
  g_assert_true (g_utf8_validate (s1, -1, NULL));
  g_autoptr (EbMimeType) b = eb_mime_type_parse (s1, -1);
  if (!b) {
    g_autofree char *esc = g_strescape (s1, NULL);
    g_test_message ("serialization \"%s\" does not parse", esc);
  }
  g_assert_nonnull (b);
  g_autofree char *s2 = eb_mime_type_serialize (b);
  g_assert_cmpstr (s2, ==, s1);
  g_assert_true (eb_mime_type_essence_equal (a, b));
  g_assert_cmpuint (eb_mime_type_get_n_parameters (a), ==, eb_mime_type_get_n_parameters (b));
  for (guint i = 0; i < eb_mime_type_get_n_parameters (a); i++) {
    const char *na, *va, *nb, *vb;
    eb_mime_type_get_parameter_at (a, i, &na, &va);
    eb_mime_type_get_parameter_at (b, i, &nb, &vb);
    g_assert_cmpstr (na, ==, nb);
    g_assert_cmpstr (va, ==, vb);
  }
  return TRUE;
}

/* The WPT inputs, with "\u0000" kept: json-glib 1.6 cuts strings at U+0000, so
 * the escape is rewritten to the noncharacter U+FDD0 (absent from the files:
 * asserted) before parsing and turned back into a NUL byte after. The same
 * approach as test-wpt-mimetype.c. */
static void
round_trip_wpt_file (const char *name, guint *n_inputs, guint *n_parsed)
{
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "conformance", "wpt", name, NULL);
  g_autofree char *raw = NULL;
  gsize len = 0;
  g_autoptr (GError) error = NULL;
  g_file_get_contents (path, &raw, &len, &error);
  g_assert_no_error (error);
  g_assert_null (g_strstr_len (raw, (gssize) len, "\xef\xb7\x90"));
  g_autoptr (GString) text = g_string_sized_new (len);
  for (gsize i = 0; i < len; i++) {
    if (raw[i] == '\\' && i + 5 < len && raw[i + 1] == 'u') {
      g_assert_false (g_ascii_strncasecmp (raw + i + 2, "fdd0", 4) == 0);
      g_string_append_len (text, memcmp (raw + i + 2, "0000", 4) == 0 ? "\\uFDD0" : raw + i, 6);
      i += 5;
    } else if (raw[i] == '\\' && i + 1 < len) {
      g_string_append_len (text, raw + i, 2);
      i++;
    } else {
      g_string_append_c (text, raw[i]);
    }
  }
  g_autoptr (JsonParser) parser = json_parser_new ();
  json_parser_load_from_data (parser, text->str, (gssize) text->len, &error);
  g_assert_no_error (error);

  JsonArray *a = json_node_get_array (json_parser_get_root (parser));
  for (guint i = 0; i < json_array_get_length (a); i++) {
    JsonNode *n = json_array_get_element (a, i);
    if (!JSON_NODE_HOLDS_OBJECT (n))
      continue;  /* a section title */
    const char *v = json_object_get_string_member (json_node_get_object (n), "input");
    g_autoptr (GString) input = g_string_new (NULL);
    for (const char *p = v; *p; p++) {
      if (strncmp (p, "\xef\xb7\x90", 3) == 0) {
        g_string_append_c (input, '\0');
        p += 2;
      } else {
        g_string_append_c (input, *p);
      }
    }
    (*n_inputs)++;
    if (check_round_trip (input->str, (gssize) input->len))
      (*n_parsed)++;
  }
}

static void
test_round_trip_wpt (void)
{
  guint n_inputs = 0, n_parsed = 0;
  round_trip_wpt_file ("mime-types.json", &n_inputs, &n_parsed);
  round_trip_wpt_file ("generated-mime-types.json", &n_inputs, &n_parsed);
  g_test_message ("%u WPT inputs, %u parse and round-trip", n_inputs, n_parsed);
  g_assert_cmpuint (n_inputs, ==, 74 + 881);
  g_assert_cmpuint (n_parsed, ==, (74 - 20) + (881 - 356));
}

/* Random strings over the characters that matter to the algorithm: no crash,
 * and whatever parses round-trips. Seeded by g_test (--seed to replay). */
static void
test_round_trip_random (void)
{
  static const char *const atoms[] = {
    "a", "B", "z", "0", "-", "+", "/", ";", "=", "\"", "\\", " ", "\t", "\n", "\r",
    "\x0c", "\x01", "\x7f", "(", "@", "\0", "\xc2\x80", "\xc3\xa9", "\xc3\xbf",
    "\xc4\x80", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "text/html", ";charset=", "x/y;",
  };
  guint parsed = 0;
  for (guint round = 0; round < 20000; round++) {
    g_autoptr (GString) s = g_string_new (NULL);
    guint n = (guint) g_test_rand_int_range (0, 24);
    if (g_test_rand_bit ())
      g_string_append (s, "t/s");
    for (guint i = 0; i < n; i++) {
      const char *atom = atoms[g_test_rand_int_range (0, G_N_ELEMENTS (atoms))];
      g_string_append_len (s, atom, *atom ? (gssize) strlen (atom) : 1);
    }
    if (check_round_trip (s->str, (gssize) s->len))
      parsed++;
  }
  g_test_message ("%u of 20000 random inputs parse", parsed);
  g_assert_cmpuint (parsed, >, 1000);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/mimetype/parse/essence", test_parse_essence);
  g_test_add_func ("/mimetype/parse/parameters", test_parse_parameters);
  g_test_add_func ("/mimetype/parse/quoted-string", test_parse_quoted);
  g_test_add_func ("/mimetype/parse/nul", test_parse_nul);
  g_test_add_func ("/mimetype/parse/invalid-utf8", test_parse_invalid_utf8);
  g_test_add_func ("/mimetype/parse/large", test_large);
  g_test_add_func ("/mimetype/serialize", test_serialize);
  g_test_add_func ("/mimetype/accessors", test_accessors);
  g_test_add_func ("/mimetype/essence-equal", test_essence_equal);
  g_test_add_func ("/mimetype/copy", test_copy);
  g_test_add_func ("/mimetype/text-plain", test_text_plain);
  g_test_add_func ("/mimetype/round-trip/wpt", test_round_trip_wpt);
  g_test_add_func ("/mimetype/round-trip/random", test_round_trip_random);
  return g_test_run ();
}
