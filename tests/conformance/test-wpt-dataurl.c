/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-wpt-dataurl.c - web-platform-tests fetch/data-urls: data-urls.json
 * through eb_data_url_process, and base64.json both as WPT's fetch test uses it
 * (the data: URL "data:;base64," + input) and directly through
 * eb_data_url_forgiving_base64_decode (as atob() uses it). Vendored in wpt/, BSD-3.
 *
 * The two base64 routes need not agree in general: on the way through the URL,
 * the URL parser removes tab, LF and CR, percent-encodes non-ASCII (which the
 * processor decodes back to bytes >= 0x80) and cuts at '#'. For this file they
 * agree, and WPT's one expectation holds for both: tab, LF and CR are ASCII
 * whitespace that forgiving-base64 removes anyway; every non-ASCII input is
 * expected to fail, and fails both as bytes >= 0x80 (URL) and in atob()'s
 * isomorphic encoding (U+00A0 is byte 0xA0, outside the alphabet; code points
 * above U+00FF are rejected before decoding); U+0000 becomes "%00", a NUL byte,
 * outside the alphabet either way; and no input holds a '#' (asserted below).
 *
 * json-glib cuts strings at U+0000; wpt-load.h maps "\u0000" escapes through
 * U+FDD0 and back, and each test checks that the NUL bytes in the loaded inputs
 * match the "\u0000" escapes in the raw file, so none is lost. */
#include "eb-dataurl.h"
#include "wpt-load.h"

/* The number of "\u0000" escapes in the raw text of @name. */
static guint
count_nul_escapes (const char *name)
{
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "conformance", "wpt", name, NULL);
  g_autofree char *raw = NULL;
  gsize len = 0;
  g_autoptr (GError) error = NULL;
  g_file_get_contents (path, &raw, &len, &error);
  g_assert_no_error (error);
  guint n = 0;
  for (gsize i = 0; i + 6 <= len; i++) {
    if (raw[i] == '\\' && g_ascii_strncasecmp (raw + i + 1, "u0000", 5) == 0)
      n++;
    if (raw[i] == '\\')
      i++;   /* skip the escaped character: "\\u0000" is no escape of U+0000 */
  }
  return n;
}

static guint
count_nul (const char *s, gsize len)
{
  guint n = 0;
  for (gsize i = 0; i < len; i++)
    n += s[i] == '\0';
  return n;
}

static gboolean
bytes_match (GBytes *got, JsonArray *want)
{
  gsize n = 0;
  const guint8 *d = g_bytes_get_data (got, &n);
  if (n != json_array_get_length (want))
    return FALSE;
  for (gsize i = 0; i < n; i++)
    if (d[i] != (guint8) json_array_get_int_element (want, (guint) i))
      return FALSE;
  return TRUE;
}

static void
test_data_urls (void)
{
  g_autoptr (JsonParser) p = wpt_load ("data-urls.json");
  JsonArray *a = json_node_get_array (json_parser_get_root (p));
  guint checked = 0, failed = 0, nuls = 0;
  for (guint i = 0; i < json_array_get_length (a); i++) {
    JsonNode *n = json_array_get_element (a, i);
    if (!JSON_NODE_HOLDS_ARRAY (n))
      continue;   /* a comment */
    JsonArray *e = json_node_get_array (n);
    gsize ilen = 0;
    g_autofree char *input = wpt_string (json_array_get_element (e, 0), &ilen);
    nuls += count_nul (input, ilen);
    JsonNode *mime = json_array_get_element (e, 1);
    g_autoptr (GError) error = NULL;
    g_autoptr (EbDataUrl) du = eb_data_url_process (input, (gssize) ilen, &error);
    checked++;
    gboolean ok;
    g_autofree char *got_type = du ? eb_mime_type_serialize (du->mime_type) : NULL;
    if (JSON_NODE_HOLDS_NULL (mime)) {
      ok = du == NULL;
    } else {
      const char *want = json_node_get_string (mime);
      if (!*want)
        want = "text/plain;charset=US-ASCII";
      ok = du && g_strcmp0 (got_type, want) == 0
           && bytes_match (du->body, json_array_get_array_element (e, 2));
    }
    if (!ok) {
      failed++;
      g_autofree char *esc = wpt_escape (input, ilen);
      g_test_message ("FAIL data-urls \"%s\": got %s (%s)", esc, got_type ? got_type : "failure",
                      error ? error->message : "");
    }
  }
  g_test_message ("data-urls.json: %u checked, %u failed", checked, failed);
  g_assert_cmpuint (nuls, ==, count_nul_escapes ("data-urls.json"));
  g_assert_cmpuint (nuls, >, 0);
  g_assert_cmpuint (checked, ==, 72);
  g_assert_cmpuint (failed, ==, 0);
}

static void
test_base64 (void)
{
  g_autoptr (JsonParser) p = wpt_load ("base64.json");
  JsonArray *a = json_node_get_array (json_parser_get_root (p));
  guint checked = 0, failed = 0, nuls = 0;
  for (guint i = 0; i < json_array_get_length (a); i++) {
    JsonNode *n = json_array_get_element (a, i);
    if (!JSON_NODE_HOLDS_ARRAY (n))
      continue;   /* a comment */
    JsonArray *e = json_node_get_array (n);
    gsize ilen = 0;
    g_autofree char *input = wpt_string (json_array_get_element (e, 0), &ilen);
    nuls += count_nul (input, ilen);
    g_assert_null (memchr (input, '#', ilen));   /* see the top of the file */
    JsonNode *want = json_array_get_element (e, 1);
    checked++;

    /* through the data: URL, as WPT's fetch test does */
    g_autofree char *url = g_malloc (ilen + 14);
    memcpy (url, "data:;base64,", 13);
    memcpy (url + 13, input, ilen);
    g_autoptr (EbDataUrl) du = eb_data_url_process (url, (gssize) (ilen + 13), NULL);
    gboolean ok_url = JSON_NODE_HOLDS_NULL (want)
                        ? du == NULL
                        : du && bytes_match (du->body, json_node_get_array (want));

    /* directly, as atob() does; atob() takes a string whose code points must be
     * below U+0100: isomorphic-encode it first (non-Latin-1 fails) */
    gboolean latin1 = TRUE;
    GString *iso = g_string_new (NULL);
    const char *q = input, *qend = input + ilen;
    while (q < qend) {
      gunichar c = *q ? g_utf8_get_char (q) : 0;
      if (c > 0xFF)
        latin1 = FALSE;
      g_string_append_c (iso, (char) (c & 0xFF));
      q = *q ? g_utf8_next_char (q) : q + 1;
    }
    g_autoptr (GBytes) direct = latin1 ? eb_data_url_forgiving_base64_decode (iso->str, iso->len) : NULL;
    g_string_free (iso, TRUE);
    gboolean ok_direct = JSON_NODE_HOLDS_NULL (want)
                           ? direct == NULL
                           : direct && bytes_match (direct, json_node_get_array (want));
    if (!ok_url || !ok_direct) {
      failed++;
      g_autofree char *esc = wpt_escape (input, ilen);
      g_test_message ("FAIL base64 \"%s\": url route %s, direct route %s", esc,
                      ok_url ? "ok" : "WRONG", ok_direct ? "ok" : "WRONG");
    }
  }
  g_test_message ("base64.json: %u checked, %u failed", checked, failed);
  g_assert_cmpuint (nuls, ==, count_nul_escapes ("base64.json"));
  g_assert_cmpuint (nuls, >, 0);
  g_assert_cmpuint (checked, ==, 80);
  g_assert_cmpuint (failed, ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/wpt/fetch/data-urls", test_data_urls);
  g_test_add_func ("/wpt/fetch/base64", test_base64);
  return g_test_run ();
}
