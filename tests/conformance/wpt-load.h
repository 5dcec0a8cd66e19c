/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* wpt-load.h - load a web-platform-tests JSON file with json-glib, keeping
 * U+0000 in strings. json-glib 1.6 stores strings NUL-terminated, so a "\u0000"
 * escape would cut its string short: before parsing, each one is turned into
 * the noncharacter U+FDD0 (which no file here contains: checked), and
 * wpt_string() turns it back into a NUL byte. */
#pragma once
#include <json-glib/json-glib.h>
#include <string.h>

static inline JsonParser *
wpt_load (const char *name)
{
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "conformance", "wpt", name, NULL);
  g_autofree char *raw = NULL;
  gsize len = 0;
  g_autoptr (GError) error = NULL;
  g_file_get_contents (path, &raw, &len, &error);
  g_assert_no_error (error);
  g_assert_null (g_strstr_len (raw, (gssize) len, "\xef\xb7\x90"));
  g_assert_null (strstr (raw, "\\ufdd0"));
  g_assert_null (strstr (raw, "\\uFDD0"));
  GString *s = g_string_sized_new (len);
  for (gsize i = 0; i < len; i++) {
    if (raw[i] == '\\' && i + 1 < len) {
      if (i + 5 < len && memcmp (raw + i + 1, "u0000", 5) == 0) {
        g_string_append (s, "\\uFDD0");
        i += 5;
      } else {
        g_string_append_len (s, raw + i, 2);
        i++;
      }
      continue;
    }
    g_string_append_c (s, raw[i]);
  }
  JsonParser *p = json_parser_new ();
  json_parser_load_from_data (p, s->str, (gssize) s->len, &error);
  g_assert_no_error (error);
  g_string_free (s, TRUE);
  return p;
}

/* The string of @node with U+FDD0 turned back into NUL; its length in @len. */
static inline char *
wpt_string (JsonNode *node, gsize *len)
{
  const char *v = json_node_get_string (node);
  GString *s = g_string_new (NULL);
  for (const char *p = v; *p; p++) {
    if ((guchar) p[0] == 0xef && (guchar) p[1] == 0xb7 && (guchar) p[2] == 0x90) {
      g_string_append_c (s, '\0');
      p += 2;
    } else {
      g_string_append_c (s, *p);
    }
  }
  *len = s->len;
  return g_string_free (s, FALSE);
}

/* A printable form of @s for messages. */
static inline char *
wpt_escape (const char *s, gsize len)
{
  GString *o = g_string_new (NULL);
  for (gsize i = 0; i < len; i++) {
    guchar c = (guchar) s[i];
    if (c < 0x20 || c == 0x7f)
      g_string_append_printf (o, "\\x%02x", c);
    else
      g_string_append_c (o, (char) c);
  }
  return g_string_free (o, FALSE);
}
