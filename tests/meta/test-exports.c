/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-exports.c - libextbody exports its public API and nothing else.
 *
 *   /exports/declared     every symbol libextbody.so exports (nm -D
 *                         --defined-only) is declared EXTBODY_API in
 *                         a header of include/extbody/, with a doc comment
 *   /exports/exported     every function the public header declares or
 *                         documents is exported (else a program using it
 *                         cannot link)
 *   /exports/annotated    every EXTBODY_API declaration of the public header
 *                         sits under its own doc comment
 *
 * $EXTBODY_LIBRARY is the built libextbody.so; the header is found through
 * G_TEST_SRCDIR (tests/). Skipped (77) without nm (binutils). */
#include <glib.h>
#include <string.h>
#include "test-server.h"

static GHashTable *exported;    /* name -> name */
static GHashTable *declared;    /* EXTBODY_API functions of the header */
static GHashTable *documented;  /* "name:" doc comments of the header */
static char *header_text;

static void
test_declared (void)
{
  g_assert_cmpuint (g_hash_table_size (exported), >, 0);
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init (&it, exported);
  guint bad = 0;
  while (g_hash_table_iter_next (&it, &key, NULL)) {
    if (!g_hash_table_contains (declared, key)) {
      g_printerr ("exported but not declared EXTBODY_API in include/extbody: %s\n", (char *) key);
      bad++;
    } else if (!g_hash_table_contains (documented, key)) {
      g_printerr ("exported without a doc comment in include/extbody: %s\n", (char *) key);
      bad++;
    }
  }
  g_assert_cmpuint (bad, ==, 0);
}

static void
test_exported (void)
{
  guint bad = 0;
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init (&it, declared);
  while (g_hash_table_iter_next (&it, &key, NULL))
    if (!g_hash_table_contains (exported, key)) {
      g_printerr ("declared in include/extbody but not exported: %s\n", (char *) key);
      bad++;
    }
  /* a documented function (lowercase eb_ name) that is not EXTBODY_API */
  g_hash_table_iter_init (&it, documented);
  while (g_hash_table_iter_next (&it, &key, NULL))
    if (g_str_has_prefix (key, "eb_") && !g_hash_table_contains (declared, key)) {
      g_printerr ("documented in include/extbody but not declared EXTBODY_API: %s\n", (char *) key);
      bad++;
    }
  g_assert_cmpuint (bad, ==, 0);
}

static void
test_annotated (void)
{
  /* each "EXTBODY_API ... name (" follows a doc comment naming it, with only
   * that comment between the previous declaration and it */
  g_autoptr (GRegex) re = g_regex_new ("/\\*\\*\\s*\\n \\* ([A-Za-z_0-9]+):(?:(?!\\*/).)*\\*/\\s*\\n"
                                       "EXTBODY_API\\b[^;(]*?\\b([a-z_0-9]+) \\(",
                                       G_REGEX_DOTALL, 0, NULL);
  g_autoptr (GMatchInfo) mi = NULL;
  guint n = 0;
  g_regex_match (re, header_text, 0, &mi);
  while (g_match_info_matches (mi)) {
    g_autofree char *doc = g_match_info_fetch (mi, 1);
    g_autofree char *fn = g_match_info_fetch (mi, 2);
    g_assert_cmpstr (doc, ==, fn);
    n++;
    g_match_info_next (mi, NULL);
  }
  g_assert_cmpuint (n, ==, g_hash_table_size (declared));
}

static void
read_header (void)
{
  /* every header of the API: extbody.h and the area headers it includes */
  g_autofree char *dir = g_test_build_filename (G_TEST_DIST, "..", "include", "extbody", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GDir) d = g_dir_open (dir, 0, &error);
  g_assert_no_error (error);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  const char *name;
  while ((name = g_dir_read_name (d)))
    if (g_str_has_suffix (name, ".h"))
      g_ptr_array_add (names, g_strdup (name));
  g_ptr_array_sort (names, (GCompareFunc) g_strcmp0);
  g_assert_cmpuint (names->len, >, 1);
  GString *all = g_string_new (NULL);
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path = g_build_filename (dir, names->pdata[i], NULL);
    g_autofree char *text = NULL;
    g_assert_true (g_file_get_contents (path, &text, NULL, &error));
    g_assert_no_error (error);
    g_string_append (all, text);
    g_string_append_c (all, '\n');
  }
  header_text = g_string_free (all, FALSE);

  declared = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr (GRegex) decl = g_regex_new ("^EXTBODY_API\\b[^;(]*?\\b([a-z_0-9]+) \\(",
                                         G_REGEX_MULTILINE, 0, NULL);
  g_autoptr (GMatchInfo) mi = NULL;
  g_regex_match (decl, header_text, 0, &mi);
  while (g_match_info_matches (mi)) {
    g_hash_table_add (declared, g_match_info_fetch (mi, 1));
    g_match_info_next (mi, NULL);
  }

  documented = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr (GRegex) doc = g_regex_new ("/\\*\\*\\s*\\n \\* ([A-Za-z_0-9]+):", 0, 0, NULL);
  g_autoptr (GMatchInfo) md = NULL;
  g_regex_match (doc, header_text, 0, &md);
  while (g_match_info_matches (md)) {
    g_hash_table_add (documented, g_match_info_fetch (md, 1));
    g_match_info_next (md, NULL);
  }
}

static void
read_exports (const char *library)
{
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  int status = 0;
  g_autoptr (GError) error = NULL;
  const char *argv[] = { "nm", "-D", "--defined-only", library, NULL };
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                     &status, &error))
    test_skip_all ("nm (binutils) cannot be run");
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("nm -D --defined-only %s failed: %s", library, err);
  exported = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    g_auto (GStrv) f = g_strsplit_set (g_strstrip (lines[i]), " ", -1);
    guint n = g_strv_length (f);
    if (n < 2)
      continue;
    /* "ADDRESS TYPE NAME"; absolute symbols (A) such as a version node are not code */
    if (strcmp (f[n - 2], "A") == 0)
      continue;
    char *name = g_strdup (f[n - 1]);
    char *at = strchr (name, '@');   /* a versioned name: name@@VERSION */
    if (at)
      *at = '\0';
    g_hash_table_add (exported, name);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  const char *library = g_getenv ("EXTBODY_LIBRARY");
  if (!library)
    test_skip_all ("EXTBODY_LIBRARY is not set (run through ctest)");
  read_exports (library);
  read_header ();
  g_test_message ("libextbody exports %u symbols", g_hash_table_size (exported));
  g_test_add_func ("/exports/declared", test_declared);
  g_test_add_func ("/exports/exported", test_exported);
  g_test_add_func ("/exports/annotated", test_annotated);
  int status = g_test_run ();
  g_hash_table_unref (exported);
  g_hash_table_unref (declared);
  g_hash_table_unref (documented);
  g_free (header_text);
  return status;
}
