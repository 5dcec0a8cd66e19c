/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-scheme.c - the table of URL schemes (src/base/eb-scheme.c): every
 * scheme extbody knew before the table, row by row (how it is retrieved, its
 * policy, why it is refused), the lookups, the list the errors of
 * allow_schemes give, and the url-path the ftp and gopher rules read. */
#include <string.h>
#include "eb-scheme.h"

static void
test_lookup (void)
{
  g_assert_cmpstr (eb_scheme_lookup ("http")->name, ==, "http");
  g_assert_cmpstr (eb_scheme_lookup ("HTTPS")->name, ==, "https");
  g_assert_cmpstr (eb_scheme_lookup ("Gopher")->name, ==, "gopher");
  g_assert_null (eb_scheme_lookup ("ftps"));
  g_assert_null (eb_scheme_lookup ("htt"));
  g_assert_null (eb_scheme_lookup (""));
  g_assert_null (eb_scheme_lookup (NULL));
  g_assert_cmpstr (eb_scheme_lookup_len ("data:,x", 4)->name, ==, "data");
  g_assert_cmpstr (eb_scheme_lookup_len ("NNTPS", 4)->name, ==, "nntp");
  g_assert_null (eb_scheme_lookup_len ("news", 3));
  g_assert_null (eb_scheme_lookup_len (NULL, 0));
}

/* Each scheme as extbody handled it before the table. */
static void
test_rows (void)
{
  static const struct {
    const char   *name;
    EbSchemeFetch by;
    EbSchemeRules rules;
    gboolean      allowable, redirect, http, tls, nntp_server, special;
    guint16       port;
  } rows[] = {
    { "http", EB_SCHEME_CURL, EB_SCHEME_RULES_NONE, TRUE, TRUE, TRUE, FALSE, FALSE, TRUE, 80 },
    { "https", EB_SCHEME_CURL, EB_SCHEME_RULES_NONE, TRUE, TRUE, TRUE, TRUE, FALSE, TRUE, 443 },
    { "ftp", EB_SCHEME_CURL, EB_SCHEME_RULES_FTP, TRUE, TRUE, FALSE, FALSE, FALSE, TRUE, 21 },
    { "gopher", EB_SCHEME_CURL, EB_SCHEME_RULES_GOPHER, TRUE, TRUE, FALSE, FALSE, FALSE, FALSE, 70 },
    { "file", EB_SCHEME_LOCAL_FILE, EB_SCHEME_RULES_NONE, TRUE, FALSE, FALSE, FALSE, FALSE, TRUE, 0 },
    { "news", EB_SCHEME_NNTP, EB_SCHEME_RULES_NONE, TRUE, FALSE, FALSE, FALSE, TRUE, FALSE, 119 },
    { "nntp", EB_SCHEME_NNTP, EB_SCHEME_RULES_NONE, TRUE, FALSE, FALSE, FALSE, FALSE, FALSE, 119 },
    { "mailto", EB_SCHEME_NEVER, EB_SCHEME_RULES_NONE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE, 0 },
    { "telnet", EB_SCHEME_NEVER, EB_SCHEME_RULES_NONE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE, 0 },
    { "tn3270", EB_SCHEME_NEVER, EB_SCHEME_RULES_NONE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE, 0 },
    { "wais", EB_SCHEME_NEVER, EB_SCHEME_RULES_NONE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE, 0 },
    { "prospero", EB_SCHEME_NEVER, EB_SCHEME_RULES_NONE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE, 0 },
    { "data", EB_SCHEME_INLINE, EB_SCHEME_RULES_NONE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE, 0 },
    { "ws", EB_SCHEME_NEVER, EB_SCHEME_RULES_NONE, FALSE, FALSE, FALSE, FALSE, FALSE, TRUE, 0 },
    { "wss", EB_SCHEME_NEVER, EB_SCHEME_RULES_NONE, FALSE, FALSE, FALSE, FALSE, FALSE, TRUE, 0 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (rows); i++) {
    const EbScheme *s = eb_scheme_lookup (rows[i].name);
    g_test_message ("%s", rows[i].name);
    g_assert_nonnull (s);
    g_assert_cmpstr (s->name, ==, rows[i].name);
    g_assert_cmpint (s->by, ==, rows[i].by);
    g_assert_cmpint (s->rules, ==, rows[i].rules);
    g_assert_cmpint (s->allowable, ==, rows[i].allowable);
    g_assert_cmpint (s->redirect, ==, rows[i].redirect);
    g_assert_cmpint (s->http, ==, rows[i].http);
    g_assert_cmpint (s->tls, ==, rows[i].tls);
    g_assert_cmpint (s->nntp_server, ==, rows[i].nntp_server);
    g_assert_cmpint (s->special, ==, rows[i].special);
    g_assert_cmpuint (s->port, ==, rows[i].port);
    /* fetched over the network: by libcurl or the NNTP client, and only those */
    g_assert_cmpint (eb_scheme_is_fetched (s), ==, rows[i].by == EB_SCHEME_CURL || rows[i].by == EB_SCHEME_NNTP);
    /* allow_schemes names what is retrieved at all, but data: (always) */
    g_assert_cmpint (s->allowable, ==, s->by != EB_SCHEME_NEVER && s->by != EB_SCHEME_INLINE);
    /* a redirect leads only where libcurl goes */
    g_assert_true (!s->redirect || s->by == EB_SCHEME_CURL);
    /* a refusal is of a scheme never retrieved, and says why */
    g_assert_true (s->refusal == EB_REASON_RESOLVED || (s->by == EB_SCHEME_NEVER && s->why));
  }
  g_assert_false (eb_scheme_is_fetched (NULL));
}

static void
test_refusals (void)
{
  static const struct {
    const char *name;
    EbReason    refusal;
    const char *why;
  } cases[] = {
    { "mailto", EB_REASON_NOT_RETRIEVAL, "RFC 2017 section 3 forbids a URL that retrieves nothing" },
    { "telnet", EB_REASON_NOT_RETRIEVAL, "RFC 2017 section 3 forbids a URL that retrieves nothing" },
    { "tn3270", EB_REASON_NOT_RETRIEVAL, "RFC 2017 section 3 forbids a URL that retrieves nothing" },
    { "wais", EB_REASON_UNSUPPORTED_SCHEME, "no server speaks it any more" },
    { "prospero", EB_REASON_UNSUPPORTED_SCHEME, "no server speaks it any more" },
    /* refused as any scheme not enabled: no reason of their own */
    { "ws", EB_REASON_RESOLVED, NULL },
    { "data", EB_REASON_RESOLVED, NULL },
    { "gopher", EB_REASON_RESOLVED, NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    const EbScheme *s = eb_scheme_lookup (cases[i].name);
    g_assert_cmpint (s->refusal, ==, cases[i].refusal);
    g_assert_cmpstr (s->why, ==, cases[i].why);
  }
}

static void
test_allowable (void)
{
  /* the lists the errors of allow_schemes give (eb-config.c, eb-fetch.c) */
  g_autofree char *comma = eb_scheme_list_allowable (", ");
  g_autofree char *and = eb_scheme_list_allowable (" and ");
  g_assert_cmpstr (comma, ==, "http, https, ftp, gopher, file, news, nntp");
  g_assert_cmpstr (and, ==, "http, https, ftp, gopher, file, news and nntp");
}

static void
test_access_type (void)
{
  g_assert_cmpstr (eb_scheme_for_access_type ("anon-ftp")->name, ==, "ftp");
  /* as written: the access-type is compared as eb-resolve reads it */
  g_assert_null (eb_scheme_for_access_type ("ANON-FTP"));
  g_assert_null (eb_scheme_for_access_type ("ftp"));
  g_assert_null (eb_scheme_for_access_type ("local-file"));
  g_assert_null (eb_scheme_for_access_type (NULL));
}

static void
test_url_path (void)
{
  static const struct {
    const char *url;
    const char *path;
  } cases[] = {
    { "gopher://h.example/0x", "/0x" },
    { "gopher://h.example", "" },
    { "ftp://h.example:21/d/f;type=a", "/d/f;type=a" },
    { "ftp://h.example?q", "?q" },
    { "ftp://u@h.example#f", "#f" },
    { "mailto:a@b", "" },
    { "x:a://h/p", "/p" },   /* the first "://", wherever it is */
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    g_assert_cmpstr (eb_scheme_url_path (cases[i].url), ==, cases[i].path);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/scheme/lookup", test_lookup);
  g_test_add_func ("/scheme/rows", test_rows);
  g_test_add_func ("/scheme/refusals", test_refusals);
  g_test_add_func ("/scheme/allowable", test_allowable);
  g_test_add_func ("/scheme/access-type", test_access_type);
  g_test_add_func ("/scheme/url-path", test_url_path);
  return g_test_run ();
}
