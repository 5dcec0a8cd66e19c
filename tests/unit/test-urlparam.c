/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-urlparam.c - RFC 2017 section 3.1 URL reassembly from raw header text,
 * its errors, and round trips: any URL, split into 40-character words with
 * every folding style, reassembles exactly. */
#include <string.h>
#include "eb-error.h"
#include "eb-urlparam.h"

/* eb_urlparam_reassemble, checked against eb_urlparam_reassemble_params on
 * every parameter of the value (as eb_extref_read asks it, with the other
 * parameters parsed too): the same URL, or the same error. */
static char *
reassemble (const char *raw, GError **error)
{
  g_autoptr (GError) perr = NULL;
  g_autoptr (EbParams) params = eb_params_parse (raw, strlen (raw));
  g_autofree char *from_params = eb_urlparam_reassemble_params (params, &perr);
  GError *err = NULL;
  char *url = eb_urlparam_reassemble (raw, strlen (raw), &err);
  g_assert_cmpstr (url, ==, from_params);
  if (err) {
    g_assert_nonnull (perr);
    g_assert_cmpint (err->code, ==, perr->code);
    g_assert_cmpstr (err->message, ==, perr->message);
  } else {
    g_assert_null (perr);
  }
  if (err)
    g_propagate_error (error, err);
  return url;
}

typedef struct {
  const char *name;
  const char *raw;   /* the Content-Type field value */
  const char *url;
} OkCase;

static const OkCase ok_cases[] = {
  { "plain", " message/external-body; access-type=URL; URL=\"http://a.example/x\"", "http://a.example/x" },
  { "rfc2017-example",
    " message/external-body; access-type=URL;\r\n"
    "        URL=\"ftp://ftp.deepspace.net/pub/Documents/\r\n"
    "        Space Stations/Nearby Planets\r\n"
    "        Solar System Overview\"",
    "ftp://ftp.deepspace.net/pub/Documents/SpaceStations/NearbyPlanetsSolarSystemOverview" },
  { "space-separated", " message/external-body; access-type=URL; URL=\"http://a.exa mple/x y\"", "http://a.example/xy" },
  { "tab-separated", " message/external-body; access-type=URL; URL=\"http://a.exa\tmple/\t\tx\"", "http://a.example/x" },
  { "crlf-fold", " message/external-body; access-type=URL;\r\n\tURL=\"http://a.example/\r\n\tlong/\r\n path\"", "http://a.example/long/path" },
  { "lf-fold", " message/external-body; access-type=URL;\n\tURL=\"http://a.example/\n\tlong/\n path\"", "http://a.example/long/path" },
  { "several-spaces", " message/external-body; access-type=URL; URL=\"  http://a  .example/   x  \"", "http://a.example/x" },
  { "split-in-pct", " message/external-body; access-type=URL; URL=\"data:,a%2\n\tC%20b\"", "data:,a%2C%20b" },
  { "split-in-base64-marker", " message/external-body; access-type=URL; URL=\"data:image/png;ba\n\tse64,AAAA\"", "data:image/png;base64,AAAA" },
  { "hyphen-at-break", " message/external-body; access-type=URL; URL=\"http://a.example/some-\r\n\tthing\"", "http://a.example/some-thing" },
  { "lowercase-name", " message/external-body; access-type=url; url=\"http://a.example/\"", "http://a.example/" },
  { "mixed-case-name", " message/external-body; Access-Type=Url; Url=\"http://a.example/\"", "http://a.example/" },
  { "url-before-access-type", " message/external-body; URL=\"http://a.example/\"; access-type=URL", "http://a.example/" },
  { "comments", " message/external-body (ref); access-type=URL (a comment); (another)\n URL=\"http://a.example/\" (trailing)", "http://a.example/" },
  { "rfc2231-quoted", " message/external-body; access-type=URL;\n URL*0=\"http://a.example/\";\n URL*1=\"path/\";\n URL*2=\"file\"", "http://a.example/path/file" },
  { "rfc2231-out-of-order", " message/external-body; access-type=URL; URL*1=\"/two\"; URL*0=\"http://a.example\"", "http://a.example/two" },
  { "rfc2231-extended", " message/external-body; access-type=URL; URL*0*=us-ascii''http%3A%2F%2Fa.example; URL*1*=%2Fb%20c", "http://a.example/b%20c" },
  { "rfc2231-mixed", " message/external-body; access-type=URL; URL*0*=utf-8'en'http%3A%2F%2F; URL*1=\"a.example/\"; URL*2=x", "http://a.example/x" },
  { "rfc2231-single-extended", " message/external-body; access-type=URL; URL*=us-ascii''data%3A%2Cx", "data:,x" },
  { "rfc2231-8bit-kept-as-octets", " message/external-body; access-type=URL; URL*0*=iso-8859-1''http%3A%2F%2Fa.example%2F%E9", "http://a.example/%E9" },
  { "wrapper-url", " message/external-body; access-type=URL; URL=\"<URL:http://a.example/>\"", "http://a.example/" },
  { "wrapper-angle", " message/external-body; access-type=URL; URL=\"<http://a.example/>\"", "http://a.example/" },
  { "wrapper-folded", " message/external-body; access-type=URL; URL=\"<URL:http://a.\n\texample/>\"", "http://a.example/" },
  { "leftover-8bit", " message/external-body; access-type=URL; URL=\"http://a.example/\xc3\xa9\"", "http://a.example/%C3%A9" },
  { "leftover-ctl", " message/external-body; access-type=URL; URL=\"http://a.example/\x01\x7f\"", "http://a.example/%01%7F" },
  { "leftover-quote-backslash", " message/external-body; access-type=URL; URL=\"http://a.example/\\\"\\\\\"", "http://a.example/%22%5C" },
  { "equals-question-not-encoded-word", " message/external-body; access-type=URL; URL=\"http://a.example/?a=?b\"", "http://a.example/?a=?b" },
  { "token-value", " message/external-body; access-type=URL; URL=token-only", "token-only" },
  { "no-space-after-semicolon", " message/external-body;access-type=URL;URL=\"data:,x\"", "data:,x" },
};

static void
test_ok (gconstpointer data)
{
  const OkCase *c = data;
  g_autoptr (GError) error = NULL;
  g_autofree char *url = reassemble (c->raw, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (url, ==, c->url);
}

typedef struct {
  const char *name;
  const char *raw;
  EbError     code;
} ErrCase;

static const ErrCase err_cases[] = {
  { "missing", " message/external-body; access-type=URL", EB_ERROR_MISSING },
  { "empty", " message/external-body; access-type=URL; URL=\"\"", EB_ERROR_EMPTY },
  { "only-white-space", " message/external-body; access-type=URL; URL=\"   \r\n\t \"", EB_ERROR_EMPTY },
  { "empty-wrapper", " message/external-body; access-type=URL; URL=\"<URL:>\"", EB_ERROR_EMPTY },
  { "two-urls", " message/external-body; access-type=URL; URL=\"http://a/\"; url=\"http://b/\"", EB_ERROR_AMBIGUOUS },
  { "url-and-section", " message/external-body; access-type=URL; URL=\"http://a/\"; URL*0=\"http://b/\"", EB_ERROR_AMBIGUOUS },
  { "url-and-extended", " message/external-body; access-type=URL; URL=\"http://a/\"; URL*=us-ascii''x", EB_ERROR_AMBIGUOUS },
  { "gap", " message/external-body; access-type=URL; URL*0=\"http://a/\"; URL*2=\"x\"", EB_ERROR_AMBIGUOUS },
  { "no-section-zero", " message/external-body; access-type=URL; URL*1=\"http://a/\"", EB_ERROR_AMBIGUOUS },
  { "duplicate-section", " message/external-body; access-type=URL; URL*0=\"http://a/\"; URL*1=\"x\"; URL*1=\"y\"", EB_ERROR_AMBIGUOUS },
  { "encoded-word", " message/external-body; access-type=URL; URL=\"=?us-ascii?Q?http://a/?=\"", EB_ERROR_ENCODED_WORD },
  { "encoded-word-b", " message/external-body; access-type=URL; URL=\"http://a/=?utf-8?B?w6k=?=\"", EB_ERROR_ENCODED_WORD },
  { "bare-url", " message/external-body; access-type=URL; URL=http://a.example/", EB_ERROR_SYNTAX },
  { "unterminated-quote", " message/external-body; access-type=URL; URL=\"http://a.example/", EB_ERROR_SYNTAX },
  { "bad-pct", " message/external-body; access-type=URL; URL*0*=us-ascii''http%3", EB_ERROR_SYNTAX },
  { "bad-pct-hex", " message/external-body; access-type=URL; URL*0*=us-ascii''http%zz", EB_ERROR_SYNTAX },
  { "extended-without-charset", " message/external-body; access-type=URL; URL*0*=http%3A", EB_ERROR_SYNTAX },
  { "leading-zero-section", " message/external-body; access-type=URL; URL*00=\"x\"", EB_ERROR_SYNTAX },
};

static void
test_err (gconstpointer data)
{
  const ErrCase *c = data;
  g_autoptr (GError) error = NULL;
  g_autofree char *url = reassemble (c->raw, &error);
  g_assert_null (url);
  g_assert_error (error, EB_ERROR, (gint) c->code);
  g_assert_null (strchr (error->message, '\n'));
}

/* ---- round trips ---------------------------------------------------------- */

static const char url_chars[] =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=";

static char *
random_url (GRand *r, gsize len)
{
  GString *s = g_string_new ("http://");
  while (s->len < len) {
    if (g_rand_int_range (r, 0, 10) == 0)
      g_string_append_printf (s, "%%%02X", g_rand_int_range (r, 0, 256));
    else
      g_string_append_c (s, url_chars[g_rand_int_range (r, 0, sizeof url_chars - 1)]);
  }
  return g_string_free (s, FALSE);
}

static GPtrArray *
roundtrip_urls (void)
{
  GPtrArray *urls = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (urls, g_strdup ("http://a/"));
  g_ptr_array_add (urls, g_strdup ("http://example.com/1234567890123456789012"));          /* 40 */
  g_ptr_array_add (urls, g_strdup ("http://example.com/12345678901234567890123"));         /* 41 */
  g_ptr_array_add (urls, g_strdup ("http://[2001:db8::1]:8080/p?q=1&r=%20#frag"));
  g_ptr_array_add (urls, g_strdup ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="));
  g_ptr_array_add (urls, g_strdup ("data:,%E2%82%AC%20%25%2C%22%5C"));
  g_ptr_array_add (urls, g_strdup ("ftp://ftp.example.org/pub/file.txt;type=a"));
  GRand *r = g_rand_new_with_seed (2017);
  g_ptr_array_add (urls, random_url (r, 80));
  g_ptr_array_add (urls, random_url (r, 1000));
  g_ptr_array_add (urls, random_url (r, 100 * 1024));
  for (guint i = 0; i < 500; i++)
    g_ptr_array_add (urls, random_url (r, (gsize) g_rand_int_range (r, 8, 300)));
  g_rand_free (r);
  return urls;
}

static void
test_roundtrip (void)
{
  g_autoptr (GPtrArray) urls = roundtrip_urls ();
  const EbFoldStyle styles[] = { EB_FOLD_NONE, EB_FOLD_SPACE, EB_FOLD_TAB, EB_FOLD_LINES,
                                 EB_FOLD_LINES_SPACE, EB_FOLD_RFC2231, EB_FOLD_RFC2231_EXT };
  const char *eols[] = { "\r\n", "\n" };
  guint checked = 0;
  for (guint u = 0; u < urls->len; u++) {
    const char *url = g_ptr_array_index (urls, u);
    /* split: words of at most 40, concatenating to the URL */
    g_autoptr (GPtrArray) words = eb_urlparam_split (url, 40);
    GString *joined = g_string_new (NULL);
    for (guint w = 0; w < words->len; w++) {
      g_assert_cmpuint (strlen (g_ptr_array_index (words, w)), <=, 40);
      g_string_append (joined, g_ptr_array_index (words, w));
    }
    g_assert_cmpstr (joined->str, ==, url);
    g_string_free (joined, TRUE);
    for (guint s = 0; s < G_N_ELEMENTS (styles); s++) {
      for (guint e = 0; e < G_N_ELEMENTS (eols); e++) {
        g_autofree char *param = eb_urlparam_format (url, 40, styles[s], eols[e]);
        g_autofree char *raw = g_strconcat (" message/external-body; access-type=URL;", eols[e],
                                            "\t", param, NULL);
        g_autoptr (GError) error = NULL;
        g_autofree char *back = reassemble (raw, &error);
        if (error || g_strcmp0 (back, url) != 0)
          g_test_message ("style %u eol %u: %s", s, e, raw);
        g_assert_no_error (error);
        g_assert_cmpstr (back, ==, url);
        checked++;
      }
    }
  }
  g_assert_cmpuint (checked, ==, urls->len * 14);
}

static void
test_format_shapes (void)
{
  g_autofree char *a = eb_urlparam_format ("http://example.com/abc", 8, EB_FOLD_LINES, "\r\n");
  g_assert_cmpstr (a, ==, "URL=\"http://e\r\n\txample.c\r\n\tom/abc\"");
  g_autofree char *b = eb_urlparam_format ("http://x/\"", 40, EB_FOLD_NONE, "\n");
  g_assert_cmpstr (b, ==, "URL=\"http://x/\\\"\"");
  g_autofree char *c = eb_urlparam_format ("a b", 40, EB_FOLD_RFC2231_EXT, "\n");
  g_assert_cmpstr (c, ==, "URL*0*=us-ascii''a%20b");
  g_autofree char *d = eb_urlparam_format ("http://ab", 6, EB_FOLD_RFC2231, "\n");
  g_assert_cmpstr (d, ==, "URL*0=\"http:/\";\n\tURL*1=\"/ab\"");
  /* never split inside %XX */
  g_autofree char *e = eb_urlparam_format ("ab:cd", 4, EB_FOLD_RFC2231_EXT, "\n");
  g_assert_cmpstr (e, ==, "URL*0*=us-ascii''ab;\n\tURL*1*=%3Ac;\n\tURL*2*=d");
}

/* Hostile sizes complete and stay linear (no timing asserted). */
static void
test_stress (void)
{
  GString *s = g_string_new (" message/external-body; access-type=URL");
  for (guint i = 0; i < 5000; i++)
    g_string_append_printf (s, ";\n URL*%u=\"%u/\"", 4999 - i, 4999 - i);
  g_autoptr (GError) error = NULL;
  g_autofree char *url = eb_urlparam_reassemble (s->str, s->len, &error);
  g_assert_no_error (error);
  g_assert_true (g_str_has_prefix (url, "0/1/2/3/"));
  g_assert_true (g_str_has_suffix (url, "/4998/4999/"));
  g_string_free (s, TRUE);

  GString *j = g_string_new (" message/external-body; access-type=URL");
  for (guint i = 0; i < 100000; i++)
    g_string_append (j, "; junk junk");
  g_string_append (j, "; URL=\"data:,ok\"");
  g_autofree char *url2 = eb_urlparam_reassemble (j->str, j->len, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (url2, ==, "data:,ok");
  g_string_free (j, TRUE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (ok_cases); i++) {
    g_autofree char *p = g_strdup_printf ("/urlparam/reassemble/%s", ok_cases[i].name);
    g_test_add_data_func (p, &ok_cases[i], test_ok);
  }
  for (guint i = 0; i < G_N_ELEMENTS (err_cases); i++) {
    g_autofree char *p = g_strdup_printf ("/urlparam/error/%s", err_cases[i].name);
    g_test_add_data_func (p, &err_cases[i], test_err);
  }
  g_test_add_func ("/urlparam/roundtrip/every-style", test_roundtrip);
  g_test_add_func ("/urlparam/format/shapes", test_format_shapes);
  g_test_add_func ("/urlparam/stress", test_stress);
  return g_test_run ();
}
