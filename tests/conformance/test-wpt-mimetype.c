/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-wpt-mimetype.c - the web-platform-tests MIME type suites
 * (mimesniff/mime-types/resources/{mime-types,generated-mime-types}.json,
 * vendored unchanged in wpt/, BSD-3, provenance in wpt/README.md) through
 * eb_mime_type_parse() and eb_mime_type_serialize().
 *
 * Each file is a JSON array; bare strings are section titles and are skipped.
 * For every object, parsing "input" must fail exactly when "output" is null,
 * and otherwise serialize to "output". The fields navigable, encoding and
 * minimizedMIMEType concern other algorithms and are not used.
 *
 * U+0000: generated-mime-types.json has five inputs with a "\u0000" escape
 * (for example "x/x;x=\u0000;bonus=x"). json-glib 1.6 keeps strings as
 * NUL-terminated C strings, so it would silently cut those inputs short
 * ("x/x;x=" - a different test). Before parsing, load_wpt() therefore rewrites
 * each "\u0000" escape into "\uFDD0", a noncharacter that it first checks the
 * file does not hold in any form (raw UTF-8 or an escape in any case), and
 * wpt_string() turns U+FDD0 back into a NUL byte and returns the length. No
 * entry is skipped.
 */
#include <string.h>
#include <json-glib/json-glib.h>
#include "eb-mimetype.h"

#define SENTINEL_UTF8 "\xef\xb7\x90" /* U+FDD0 */

typedef struct {
  const char *file;
  guint       n_entries;  /* object entries (tests), section titles excluded */
  guint       n_nul;      /* "\u0000" escapes in the file */
} WptFile;

/* Parse the vendored file @name; the number of "\u0000" escapes rewritten to
 * U+FDD0 goes to @n_nul. */
static JsonParser *
load_wpt (const char *name, guint *n_nul)
{
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "conformance", "wpt", name, NULL);
  g_autofree char *raw = NULL;
  gsize len = 0;
  g_autoptr (GError) error = NULL;
  g_file_get_contents (path, &raw, &len, &error);
  g_assert_no_error (error);
  g_assert_true (g_utf8_validate_len (raw, len, NULL));
  g_assert_null (g_strstr_len (raw, (gssize) len, SENTINEL_UTF8));

  g_autoptr (GString) s = g_string_sized_new (len);
  *n_nul = 0;
  for (gsize i = 0; i < len; i++) {
    if (raw[i] != '\\' || i + 1 >= len) {
      g_string_append_c (s, raw[i]);
      continue;
    }
    /* An escape: copy it whole, so "\\u0000" (an escaped backslash) is not
     * mistaken for "\u0000". */
    if (raw[i + 1] == 'u') {
      g_assert_cmpuint (i + 6, <=, len);
      g_assert_false (g_ascii_strncasecmp (raw + i + 2, "fdd0", 4) == 0);
      if (memcmp (raw + i + 2, "0000", 4) == 0) {
        g_string_append (s, "\\uFDD0");
        (*n_nul)++;
      } else {
        g_string_append_len (s, raw + i, 6);
      }
      i += 5;
    } else {
      g_string_append_len (s, raw + i, 2);
      i++;
    }
  }

  JsonParser *p = json_parser_new ();
  json_parser_load_from_data (p, s->str, (gssize) s->len, &error);
  g_assert_no_error (error);
  return p;
}

/* The string @node holds, with U+FDD0 turned back into U+0000; its length in
 * bytes in @len. */
static char *
wpt_string (JsonNode *node, gsize *len)
{
  g_assert_true (JSON_NODE_HOLDS_VALUE (node));
  g_assert_cmpuint (json_node_get_value_type (node), ==, G_TYPE_STRING);
  const char *v = json_node_get_string (node);
  GString *s = g_string_sized_new (strlen (v));
  for (const char *p = v; *p; p++) {
    if (strncmp (p, SENTINEL_UTF8, 3) == 0) {
      g_string_append_c (s, '\0');
      p += 2;
    } else {
      g_string_append_c (s, *p);
    }
  }
  *len = s->len;
  return g_string_free (s, FALSE);
}

/* A printable, unambiguous form of @len bytes at @s for messages. */
static char *
escape (const char *s, gsize len)
{
  GString *o = g_string_new (NULL);
  for (gsize i = 0; i < len; i++) {
    guchar c = (guchar) s[i];
    if (c < 0x20 || c >= 0x7F || c == '\\')
      g_string_append_printf (o, "\\x%02x", c);
    else
      g_string_append_c (o, (char) c);
  }
  return g_string_free (o, FALSE);
}

static void
test_file (gconstpointer data)
{
  const WptFile *f = data;
  guint n_nul = 0;
  g_autoptr (JsonParser) parser = load_wpt (f->file, &n_nul);
  JsonNode *root = json_parser_get_root (parser);
  g_assert_true (JSON_NODE_HOLDS_ARRAY (root));
  JsonArray *a = json_node_get_array (root);

  guint checked = 0, failed = 0, with_nul = 0;
  for (guint i = 0; i < json_array_get_length (a); i++) {
    JsonNode *entry = json_array_get_element (a, i);
    if (JSON_NODE_HOLDS_VALUE (entry) && json_node_get_value_type (entry) == G_TYPE_STRING)
      continue;  /* a section title */
    g_assert_true (JSON_NODE_HOLDS_OBJECT (entry));
    JsonObject *o = json_node_get_object (entry);
    g_assert_true (json_object_has_member (o, "input"));
    g_assert_true (json_object_has_member (o, "output"));

    gsize in_len = 0, want_len = 0;
    g_autofree char *input = wpt_string (json_object_get_member (o, "input"), &in_len);
    JsonNode *out = json_object_get_member (o, "output");
    g_autofree char *want = JSON_NODE_HOLDS_NULL (out) ? NULL : wpt_string (out, &want_len);
    if (memchr (input, '\0', in_len))
      with_nul++;

    g_autoptr (EbMimeType) mt = eb_mime_type_parse (input, (gssize) in_len);
    g_autofree char *got = mt ? eb_mime_type_serialize (mt) : NULL;
    checked++;
    if (g_strcmp0 (got, want) != 0 || (want && strlen (want) != want_len)) {
      failed++;
      g_autofree char *esc = escape (input, in_len);
      g_test_message ("FAIL %s entry %u: input \"%s\": got %s, want %s", f->file, i, esc,
                      got ? got : "failure", want ? want : "failure");
    }
  }
  g_test_message ("%s: %u checked, %u failed", f->file, checked, failed);
  g_assert_cmpuint (checked, ==, f->n_entries);
  g_assert_cmpuint (with_nul, ==, f->n_nul);
  g_assert_cmpuint (failed, ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  static const WptFile mime_types = { "mime-types.json", 74, 0 };
  static const WptFile generated = { "generated-mime-types.json", 881, 5 };
  g_test_add_data_func ("/wpt/mimesniff/mime-types", &mime_types, test_file);
  g_test_add_data_func ("/wpt/mimesniff/generated-mime-types", &generated, test_file);
  return g_test_run ();
}
