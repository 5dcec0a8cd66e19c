/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-params.c - RFC 2045 / RFC 2231 parameters from raw header text. */
#include <string.h>
#include "eb-error.h"
#include "eb-params.h"

static EbParams *
parse (const char *raw)
{
  return eb_params_parse (raw, strlen (raw));
}

static void
test_basic (void)
{
  g_autoptr (EbParams) p = parse (" Message/External-Body (c) ;\r\n\tACCESS-TYPE=anon-ftp; Site=\"ftp.example.org\";\r\n"
                                  " directory=\"pub\\\\x\"; name=\"a\r\n b\"; mode=image");
  g_assert_cmpstr (eb_params_get_media_type (p), ==, "message/external-body");
  g_assert_cmpstr (eb_params_get (p, "access-type", NULL), ==, "anon-ftp");
  g_assert_cmpstr (eb_params_get (p, "SITE", NULL), ==, "ftp.example.org");
  g_assert_cmpstr (eb_params_get (p, "directory", NULL), ==, "pub\\x");
  g_assert_cmpstr (eb_params_get (p, "name", NULL), ==, "a b");
  g_assert_cmpstr (eb_params_get (p, "mode", NULL), ==, "image");
  g_assert_cmpuint (eb_params_get_n (p), ==, 5);
  g_assert_cmpstr (eb_params_get_name_at (p, 0), ==, "access-type");
  g_assert_null (eb_params_get_warnings (p)[0]);
  g_autoptr (GError) e = NULL;
  g_assert_null (eb_params_get (p, "server", &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_MISSING);
}

static void
test_rfc2231 (void)
{
  g_autoptr (EbParams) p = parse (" a/b; title*2=\"c\"; title*0*=iso-8859-1'fr'caf%E9%20; title*1=\"au lait \"; "
                                  "simple*=utf-8''%E2%82%AC");
  g_assert_cmpstr (eb_params_get (p, "title", NULL), ==, "caf\xc3\xa9 au lait c");
  g_assert_cmpstr (eb_params_get (p, "simple", NULL), ==, "\xe2\x82\xac");
  g_autoptr (GBytes) oct = eb_params_get_octets (p, "title", FALSE, NULL);
  g_assert_cmpmem (g_bytes_get_data (oct, NULL), g_bytes_get_size (oct), "caf\xe9 au lait c", 14);
}

static void
test_ambiguity (void)
{
  struct { const char *raw; EbError code; } cases[] = {
    { " a/b; x=1; X=2", EB_ERROR_AMBIGUOUS },
    { " a/b; x=1; x*0=2", EB_ERROR_AMBIGUOUS },
    { " a/b; x*=us-ascii''1; x*0=2", EB_ERROR_AMBIGUOUS },
    { " a/b; x*0=1; x*2=2", EB_ERROR_AMBIGUOUS },
    { " a/b; x*0=1; x*0=2", EB_ERROR_AMBIGUOUS },
    { " a/b; x*01=1", EB_ERROR_SYNTAX },
    { " a/b; x*1x=1", EB_ERROR_SYNTAX },
    { " a/b; x=\"open", EB_ERROR_SYNTAX },
    { " a/b; x=a:b", EB_ERROR_SYNTAX },
    { " a/b; x*0*=noquote", EB_ERROR_SYNTAX },
    { " a/b; x*0*=''%G1", EB_ERROR_SYNTAX },
    { " a/b; x", EB_ERROR_SYNTAX },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (EbParams) p = parse (cases[i].raw);
    g_autoptr (GError) e = NULL;
    g_test_message ("case %u: %s", i, cases[i].raw);
    g_assert_null (eb_params_get (p, "x", &e));
    g_assert_error (e, EB_ERROR, (gint) cases[i].code);
  }
}

/* Lenient for what nobody asks about: junk is skipped with a warning. */
static void
test_recovery (void)
{
  g_autoptr (EbParams) p = parse (" message/external-body;\n access-type=mail-server\n server=\"x@y\";\n expiration=\"soon\"; ;; @@@ ; z=1");
  g_assert_cmpstr (eb_params_get (p, "access-type", NULL), ==, "mail-server");
  g_assert_null (eb_params_get (p, "server", NULL));
  g_assert_cmpstr (eb_params_get (p, "expiration", NULL), ==, "soon");
  g_assert_cmpstr (eb_params_get (p, "z", NULL), ==, "1");
  g_assert_nonnull (eb_params_get_warnings (p)[0]);

  g_autoptr (EbParams) q = parse ("garbage here; a=1");
  g_assert_null (eb_params_get_media_type (q));
  g_assert_cmpstr (eb_params_get (q, "a", NULL), ==, "1");

  g_autoptr (EbParams) c = parse (" a/b; x=\"v\" (comment; with semicolon) ; y=(c)2");
  g_assert_cmpstr (eb_params_get (c, "x", NULL), ==, "v");
  g_assert_cmpstr (eb_params_get (c, "y", NULL), ==, "2");
  /* a comment is no junk; nothing followed these values */
  g_assert_false (eb_params_get_junk_after (c, "x"));
  g_assert_false (eb_params_get_junk_after (c, "y"));
  g_assert_false (eb_params_get_junk_after (c, "nope"));

  /* what followed a value up to the next ';' is told, for the caller that
   * must have the value whole: the first value is kept all the same */
  g_autoptr (EbParams) j = parse (" a/b; URL=\"data:,a\" \"b\"; n=\"1\" n2=2 ; m=x;"
                                  " s*0=\"q\" w; t=\"u\" \n ; v=3 (c)");
  g_assert_cmpstr (eb_params_get (j, "url", NULL), ==, "data:,a");
  g_assert_true (eb_params_get_junk_after (j, "URL"));
  g_assert_cmpstr (eb_params_get (j, "n", NULL), ==, "1");
  g_assert_true (eb_params_get_junk_after (j, "n"));
  g_assert_null (eb_params_get (j, "n2", NULL));
  g_assert_false (eb_params_get_junk_after (j, "m"));
  g_assert_true (eb_params_get_junk_after (j, "s"));
  g_assert_false (eb_params_get_junk_after (j, "t"));   /* folding white space only */
  g_assert_false (eb_params_get_junk_after (j, "v"));
}

static void
test_stress (void)
{
  GString *s = g_string_new (" a/b");
  for (guint i = 0; i < 100000; i++)
    g_string_append_printf (s, "; p%u=v%u", i, i);
  for (guint i = 0; i < 5000; i++)
    g_string_append_printf (s, "; big*%u=\"x\"", 4999 - i);
  g_autoptr (EbParams) p = eb_params_parse (s->str, s->len);
  g_assert_cmpstr (eb_params_get (p, "p99999", NULL), ==, "v99999");
  g_assert_cmpuint (strlen (eb_params_get (p, "big", NULL)), ==, 5000);
  g_string_free (s, TRUE);

  /* a 10 MB value */
  GString *v = g_string_new (" a/b; v=\"");
  for (guint i = 0; i < 10 * 1024 * 1024; i++)
    g_string_append_c (v, 'q');
  g_string_append_c (v, '"');
  g_autoptr (EbParams) pv = eb_params_parse (v->str, v->len);
  g_assert_cmpuint (strlen (eb_params_get (pv, "v", NULL)), ==, 10 * 1024 * 1024);
  g_string_free (v, TRUE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/params/basic", test_basic);
  g_test_add_func ("/params/rfc2231", test_rfc2231);
  g_test_add_func ("/params/ambiguity", test_ambiguity);
  g_test_add_func ("/params/recovery", test_recovery);
  g_test_add_func ("/params/stress", test_stress);
  return g_test_run ();
}
