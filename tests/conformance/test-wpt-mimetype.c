/* test-wpt-mimetype.c - web-platform-tests mimesniff/mime-types: every entry of
 * mime-types.json and generated-mime-types.json (vendored in wpt/, BSD-3, see
 * wpt/README.md) through eb_mime_type_parse and eb_mime_type_serialize. */
#include "eb-mimetype.h"
#include "wpt-load.h"

static void
run_file (gconstpointer data)
{
  const char *name = ((const char *const *) data)[0];
  guint expected_entries = (guint) atoi (((const char *const *) data)[1]);
  g_autoptr (JsonParser) p = wpt_load (name);
  JsonArray *a = json_node_get_array (json_parser_get_root (p));
  guint checked = 0, failed = 0;
  for (guint i = 0; i < json_array_get_length (a); i++) {
    JsonNode *n = json_array_get_element (a, i);
    if (JSON_NODE_HOLDS_VALUE (n))
      continue;   /* a section title */
    JsonObject *o = json_node_get_object (n);
    gsize ilen = 0;
    g_autofree char *input = wpt_string (json_object_get_member (o, "input"), &ilen);
    JsonNode *out = json_object_get_member (o, "output");
    g_autoptr (EbMimeType) mt = eb_mime_type_parse (input, (gssize) ilen);
    g_autofree char *got = mt ? eb_mime_type_serialize (mt) : NULL;
    const char *want = JSON_NODE_HOLDS_NULL (out) ? NULL : json_node_get_string (out);
    checked++;
    if (g_strcmp0 (got, want) != 0) {
      failed++;
      g_autofree char *esc = wpt_escape (input, ilen);
      g_test_message ("FAIL %s: input \"%s\": got %s, want %s", name, esc, got ? got : "failure",
                      want ? want : "failure");
    }
    /* serialize -> parse -> serialize is stable */
    if (mt) {
      g_autoptr (EbMimeType) again = eb_mime_type_parse (got, -1);
      g_assert_nonnull (again);
      g_autofree char *got2 = eb_mime_type_serialize (again);
      g_assert_cmpstr (got2, ==, got);
    }
  }
  g_test_message ("%s: %u checked, %u failed", name, checked, failed);
  g_assert_cmpuint (checked, ==, expected_entries);
  g_assert_cmpuint (failed, ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  static const char *mt[] = { "mime-types.json", "74" };
  static const char *gen[] = { "generated-mime-types.json", "881" };
  g_test_add_data_func ("/wpt/mimesniff/mime-types", mt, run_file);
  g_test_add_data_func ("/wpt/mimesniff/generated-mime-types", gen, run_file);
  return g_test_run ();
}
