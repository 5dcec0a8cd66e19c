/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-public-only.c - the command and the milter use libextbody's public API
 * only (issue 16), as any program outside the project would.
 *
 *   /public-only/includes     src/cli/extbody-cli.c and the milter's sources and
 *                             daemon.h (filters/daemon/ but
 *                             milter-check.c, which uses libmilter only)
 *                             include <extbody/extbody.h>, and no internal
 *                             header ("eb-*.h", or any header in quotes but
 *                             the front end's own and extbodyd's key table,
 *                             daemon-keys.h, which the command adds too) nor
 *                             one of the libraries libextbody wraps (gmime/,
 *                             curl/: their setup and versions are eb_init()'s
 *                             and eb_get_library_versions()'s)
 *   /public-only/linked       the built command and milter need
 *                             libextbody.so.2 and carry no eb_ symbol of their
 *                             own: linked to the internal archive
 *                             (extbody-core), the library's code would be
 *                             inside them
 *   /public-only/self-check   both checks catch what they must: internal
 *                             includes in a text, and a program linked to
 *                             extbody-core (this test, which calls an internal
 *                             function so that the archive's code is in it)
 *
 * The sources are found through G_TEST_SRCDIR (tests/), the command through
 * $EXTBODY, the milter through $EXTBODYD (unset when libmilter is
 * missing: then only its source is checked). Skipped (77) without nm and
 * readelf (binutils). */
#include <glib.h>
#include <string.h>
#include "eb-reason.h"
#include "test-server.h"

/* The forbidden #include lines of @text, one "LINE: why" each; @has_public is
 * set when it includes <extbody/extbody.h>. A header in quotes is allowed
 * only when it is the front end's own, beside its source in @dir (nullable:
 * none), such as the milter's milter-check.h: a module of the front end, not
 * of the library. */
static GPtrArray *
bad_includes (const char *text, const char *dir, gboolean *has_public)
{
  GPtrArray *bad = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GRegex) re = g_regex_new ("^[ \\t]*#[ \\t]*include[ \\t]*([<\"])([^>\"]*)[>\"]",
                                       G_REGEX_MULTILINE, 0, NULL);
  g_autoptr (GMatchInfo) mi = NULL;
  *has_public = FALSE;
  g_regex_match (re, text, 0, &mi);
  while (g_match_info_matches (mi)) {
    g_autofree char *line = g_match_info_fetch (mi, 0);
    g_autofree char *quote = g_match_info_fetch (mi, 1);
    g_autofree char *name = g_match_info_fetch (mi, 2);
    g_autofree char *base = g_path_get_basename (name);
    const char *why = NULL;
    if (g_str_has_prefix (base, "eb-"))
      why = "an internal header of libextbody";
    else if (strcmp (quote, "\"") == 0) {
      g_autofree char *own = dir && strchr (name, '/') == NULL ? g_build_filename (dir, name, NULL) : NULL;
      /* extbodyd's key table, which the command adds too (`extbody config`
       * checks the whole file): public API only itself (in sources[]) */
      if (strcmp (name, "daemon-keys.h") == 0)
        ;
      else if (!own || !g_file_test (own, G_FILE_TEST_IS_REGULAR))
        why = "a header in quotes (the project's own, not the public API)";
    }
    else if (g_str_has_prefix (name, "gmime/") || g_str_has_prefix (name, "curl/"))
      why = "a library libextbody wraps";
    if (why)
      g_ptr_array_add (bad, g_strdup_printf ("%s: %s", line, why));
    if (strcmp (name, "extbody/extbody.h") == 0 && strcmp (quote, "<") == 0)
      *has_public = TRUE;
    g_match_info_next (mi, NULL);
  }
  return bad;
}

static char *
run_tool (const char *tool, const char *opt, const char *path)
{
  g_autofree char *out = NULL;
  g_autofree char *err = NULL;
  int status = 0;
  g_autoptr (GError) error = NULL;
  const char *argv[] = { tool, opt, path, NULL };
  if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                     &status, &error))
    test_skip_all ("nm or readelf (binutils) cannot be run");
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("%s %s %s failed: %s", tool, opt, path, err);
  return g_steal_pointer (&out);
}

/* What is wrong with how the program @path is linked, one line each. */
static GPtrArray *
bad_linking (const char *path)
{
  GPtrArray *bad = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *dyn = run_tool ("readelf", "-d", path);
  if (!strstr (dyn, "Shared library: [libextbody.so."))
    g_ptr_array_add (bad, g_strdup_printf ("%s does not need libextbody.so", path));
  /* every symbol defined in the program, local ones included: the library's
   * hidden functions become local symbols when linked in statically */
  g_autofree char *syms = run_tool ("nm", "--defined-only", path);
  g_auto (GStrv) lines = g_strsplit (syms, "\n", -1);
  g_autoptr (GString) own = g_string_new (NULL);
  guint n = 0;
  for (guint i = 0; lines[i]; i++) {
    g_auto (GStrv) f = g_strsplit (g_strstrip (lines[i]), " ", -1);
    guint k = g_strv_length (f);
    if (k >= 2 && g_str_has_prefix (f[k - 1], "eb_")) {
      g_string_append_printf (own, " %s", f[k - 1]);
      n++;
    }
  }
  if (n)
    g_ptr_array_add (bad, g_strdup_printf ("%s defines %u eb_ symbols (the library's code is in "
                                           "it):%s", path, n, own->str));
  return bad;
}

static void
report (GPtrArray *bad)
{
  for (guint i = 0; i < bad->len; i++)
    g_printerr ("%s\n", (char *) g_ptr_array_index (bad, i));
}

static const char *const sources[] = {
  "src/cli/extbody-cli.c",
  "filters/daemon/daemon.h",
  "filters/daemon/daemon-main.c",
  "filters/daemon/daemon-generation.c",
  "filters/daemon/daemon-keys.h",
  "filters/daemon/daemon-keys.c",
  "filters/daemon/daemon-listen.c",
  "filters/daemon/milter-session.c",
  "filters/daemon/milter-worker.c",
};

static void
test_includes (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (sources); i++) {
    g_autofree char *path = g_test_build_filename (G_TEST_DIST, "..", sources[i], NULL);
    g_autofree char *text = NULL;
    g_autoptr (GError) error = NULL;
    g_assert_true (g_file_get_contents (path, &text, NULL, &error));
    g_assert_no_error (error);
    gboolean has_public = FALSE;
    g_autofree char *dir = g_path_get_dirname (path);
    g_autoptr (GPtrArray) bad = bad_includes (text, dir, &has_public);
    if (bad->len)
      g_printerr ("%s:\n", sources[i]);
    report (bad);
    g_assert_cmpuint (bad->len, ==, 0);
    g_assert_true (has_public);
  }
}

static void
test_linked (void)
{
  const char *programs[] = { g_getenv ("EXTBODY"), g_getenv ("EXTBODYD") };
  g_assert_nonnull (programs[0]);
  if (!programs[1])
    g_test_message ("EXTBODYD is not set (no libmilter): only the command is checked");
  for (guint i = 0; i < G_N_ELEMENTS (programs); i++) {
    if (!programs[i])
      continue;
    g_assert_true (g_file_test (programs[i], G_FILE_TEST_IS_EXECUTABLE));
    g_autoptr (GPtrArray) bad = bad_linking (programs[i]);
    report (bad);
    g_assert_cmpuint (bad->len, ==, 0);
  }
}

static void
test_self_check (void)
{
  gboolean has_public = FALSE;
  g_autoptr (GPtrArray) fine = bad_includes ("#include <extbody/extbody.h>\n#include <glib.h>\n"
                                             "#include <json-glib/json-glib.h>\n"
                                             "#include <libmilter/mfapi.h>\n"
                                             "/* #include \"eb-config.h\" in a comment */\n",
                                             NULL, &has_public);
  g_assert_cmpuint (fine->len, ==, 0);
  g_assert_true (has_public);
  g_autoptr (GPtrArray) bad = bad_includes ("#include <glib.h>\n#include \"eb-config.h\"\n"
                                            "  #  include <eb-rewrite.h>\n#include \"local.h\"\n"
                                            "#include <gmime/gmime.h>\n#include <curl/curl.h>\n",
                                            NULL, &has_public);
  g_assert_cmpuint (bad->len, ==, 5);
  g_assert_false (has_public);
  /* a header of the front end's own, beside its source, is allowed; one of
   * the library's (eb-*) never, even there */
  g_autofree char *daemon_dir = g_test_build_filename (G_TEST_DIST, "..", "filters", "daemon", NULL);
  g_autoptr (GPtrArray) own = bad_includes ("#include <extbody/extbody.h>\n#include \"milter-check.h\"\n"
                                            "#include \"no-such-header.h\"\n", daemon_dir, &has_public);
  g_assert_cmpuint (own->len, ==, 1);

  /* this program links extbody-core, and its code is in it */
  g_assert_cmpstr (eb_reason_token (EB_REASON_RESOLVED), ==, "resolved");
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  g_assert_nonnull (self);
  g_autoptr (GPtrArray) linked = bad_linking (self);
  g_assert_cmpuint (linked->len, ==, 2);
  g_assert_true (g_str_has_suffix (g_ptr_array_index (linked, 0), "does not need libextbody.so"));
  g_autofree char *syms = g_strconcat (g_ptr_array_index (linked, 1), " ", NULL);
  g_assert_nonnull (strstr (syms, " eb_reason_token "));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/public-only/includes", test_includes);
  g_test_add_func ("/public-only/linked", test_linked);
  g_test_add_func ("/public-only/self-check", test_self_check);
  return g_test_run ();
}
