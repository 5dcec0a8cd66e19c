/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-config.c - the configuration table, key files, and the meta-tests that
 * keep the example configuration and the man pages in step with the code. */
#include <arpa/inet.h>
#include <glib/gstdio.h>
#include <string.h>
#include "eb-config.h"
#include "eb-list.h"
#include "eb-error.h"
#include "eb-reason.h"
#include "daemon-keys.h"
#include "extbody-cli-keys.h"

static char *
source_file (const char *rel)
{
  /* G_TEST_SRCDIR is tests/; the project is its parent */
  g_autofree char *top = g_test_build_filename (G_TEST_DIST, "..", NULL);
  g_autofree char *path = g_build_filename (top, rel, NULL);
  char *text = NULL;
  g_autoptr (GError) error = NULL;
  g_file_get_contents (path, &text, NULL, &error);
  g_assert_no_error (error);
  return text;
}

static void
test_defaults (void)
{
  g_autoptr (EbConfig) c = eb_config_new ();
  g_assert_cmpuint (c->max_message_size, ==, 64 * 1024 * 1024);
  g_assert_cmpuint (c->max_nesting_depth, ==, 50);
  g_assert_cmpuint (c->max_parts, ==, 10000);
  g_assert_cmpuint (c->max_references, ==, 64);
  g_assert_cmpuint (c->max_part_bytes, ==, 32 * 1024 * 1024);
  g_assert_cmpuint (c->max_message_bytes, ==, 64 * 1024 * 1024);
  g_assert_false (c->fetch);   /* private by default */
  g_assert_cmpstr (c->allow_schemes, ==, "http, https, ftp");
  g_assert_cmpuint (c->max_redirects, ==, 3);
  g_assert_cmpstr (c->allow_networks, ==, "");
  g_assert_cmpstr (c->content_type_mismatch, ==, "keep");
  g_assert_false (c->allow_credentials);
  g_autoptr (GError) e = NULL;
  g_assert_false (eb_config_set (c, "content_type_mismatch", "maybe", &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
  g_clear_error (&e);
  g_assert_true (eb_config_set (c, "fetch", "off", &e));
  g_assert_false (c->fetch);
  g_assert_false (eb_config_set (c, "fetch", "perhaps", &e));
  g_autoptr (EbConfig) copy = eb_config_copy (c);
  g_assert_false (copy->fetch);
  g_assert_cmpstr (copy->allow_schemes, ==, "http, https, ftp");
}

static void
test_sizes (void)
{
  struct { const char *in; gboolean ok; guint64 v; } cases[] = {
    { "0", TRUE, 0 }, { "17", TRUE, 17 }, { "2k", TRUE, 2048 }, { "2K", TRUE, 2048 },
    { "3M", TRUE, 3 << 20 }, { " 1G ", TRUE, 1 << 30 }, { "", FALSE, 0 }, { "k", FALSE, 0 },
    { "-1", FALSE, 0 }, { "1.5M", FALSE, 0 }, { "1T", FALSE, 0 }, { "12 M", FALSE, 0 },
    { "99999999999999999999G", FALSE, 0 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    guint64 v = 0;
    g_assert_cmpint (eb_config_parse_size (cases[i].in, &v), ==, cases[i].ok);
    if (cases[i].ok)
      g_assert_cmpuint (v, ==, cases[i].v);
  }
}

static void
test_set_and_bounds (void)
{
  g_autoptr (EbConfig) c = eb_config_new ();
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_config_set (c, "max_parts", "12", &e));
  g_assert_cmpuint (c->max_parts, ==, 12);
  g_assert_false (eb_config_set (c, "max_parts", "0", &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
  g_clear_error (&e);
  g_assert_false (eb_config_set (c, "max_nesting_depth", "1001", &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
  g_clear_error (&e);
  g_assert_false (eb_config_set (c, "nope", "1", &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
  g_clear_error (&e);
  g_assert_false (eb_config_set (c, "max_parts", "12x", &e));
  g_assert_cmpuint (c->max_parts, ==, 12);
}

static void
test_load (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbody-config-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "x.conf", NULL);
  g_autoptr (EbConfig) c = eb_config_new ();
  g_autoptr (GError) e = NULL;

  g_assert_true (eb_config_load_file (c, path, TRUE, &e));   /* missing is fine */
  g_assert_false (eb_config_load_file (c, path, FALSE, &e));
  g_clear_error (&e);

  g_file_set_contents (path, "# c\n[extbody]\nmax_parts = 99\nmax_part_bytes=1k\n", -1, NULL);
  g_assert_true (eb_config_load_file (c, path, FALSE, &e));
  g_assert_cmpuint (c->max_parts, ==, 99);
  g_assert_cmpuint (c->max_part_bytes, ==, 1024);

  /* a bad file changes nothing */
  g_file_set_contents (path, "[extbody]\nmax_parts = 5\nmax_references = lots\n", -1, NULL);
  g_assert_false (eb_config_load_file (c, path, FALSE, &e));
  g_assert_nonnull (strstr (e->message, "max_references"));
  g_assert_cmpuint (c->max_parts, ==, 99);
  g_clear_error (&e);

  g_file_set_contents (path, "[other]\nx = 1\n", -1, NULL);
  g_assert_false (eb_config_load_file (c, path, FALSE, &e));
  g_assert_nonnull (strstr (e->message, "unknown group"));
  g_clear_error (&e);

  g_file_set_contents (path, "this is not a key file\n", -1, NULL);
  g_assert_false (eb_config_load_file (c, path, FALSE, &e));
  g_clear_error (&e);

  g_unlink (path);
  g_rmdir (dir);
}

/* Every key is in extbody.conf(5) with its default and its one-line text. */
static void
test_documented_keys (void)
{
  g_autofree char *man5 = source_file ("src/cli/extbody.conf.5");
  for (guint i = 0; i < eb_config_get_n_keys (); i++) {
    const EbConfigKey *k = eb_config_get_key (i);
    g_autofree char *mank = g_strdup_printf (".BR %s \" (default %s)\"\n%s\n", k->name,
                                             *k->default_value ? k->default_value : "empty", k->doc);
    g_test_message ("key %s", k->name);
    g_assert_nonnull (strstr (man5, mank));
  }
}

/* A line of the shipped file that sets a key, "key = value" (uncommented):
 * the key, or NULL. */
static char *
setting_of (const char *line)
{
  const char *s = line;
  while (g_ascii_isspace (*s))
    s++;
  if (!*s || *s == '#' || *s == '[')
    return NULL;
  const char *eq = strchr (s, '=');
  g_assert_nonnull (eq);
  while (eq > s && g_ascii_isspace (eq[-1]))
    eq--;
  return g_strndup (s, (gsize) (eq - s));
}

/* The file installed as /etc/extbody/extbody.conf (data/extbody.conf.example,
 * copied as it is by cmake --install and debian/rules) sets nothing: each key
 * of the table is there exactly once, commented out with its default
 * ("#key = default") right after its text ("# text"); no other line is a
 * commented setting; the only line that is no comment is [extbody]. So an
 * administrator's line can never be undone by a shipped one further down. */
static void
test_shipped_file (void)
{
  g_autofree char *example = source_file ("data/extbody.conf.example");
  g_auto (GStrv) lines = g_strsplit (example, "\n", -1);
  g_autoptr (GHashTable) at = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  guint n_group = 0;
  for (guint l = 0; lines[l]; l++) {
    const char *line = lines[l];
    g_autofree char *set = setting_of (line);
    if (set)
      g_error ("data/extbody.conf.example:%u sets %s: the shipped file sets no key", l + 1, set);
    if (strcmp (line, "[extbody]") == 0) {
      n_group++;
      continue;
    }
    g_assert_true (*line == '\0' || *line == '#');
    g_assert_true (*line == '\0' || !g_ascii_isspace (line[strlen (line) - 1]));   /* no trailing blank */
    /* "#key = value": a commented setting; "# text": a comment */
    gsize name = *line == '#' ? strspn (line + 1, "abcdefghijklmnopqrstuvwxyz_") : 0;   /* "": no line + 1 */
    if (name > 0 && g_str_has_prefix (line + 1 + name, " =")) {
      g_autofree char *key = g_strndup (line + 1, name);
      if (g_hash_table_contains (at, key))
        g_error ("data/extbody.conf.example:%u: %s a second time (first at line %u)", l + 1, key,
                 GPOINTER_TO_UINT (g_hash_table_lookup (at, key)));
      g_hash_table_insert (at, g_steal_pointer (&key), GUINT_TO_POINTER (l + 1));
    }
  }
  g_assert_cmpuint (n_group, ==, 1);
  g_assert_cmpuint (g_hash_table_size (at), ==, eb_config_get_n_keys ());
  for (guint i = 0; i < eb_config_get_n_keys (); i++) {
    const EbConfigKey *k = eb_config_get_key (i);
    g_test_message ("key %s", k->name);
    guint l = GPOINTER_TO_UINT (g_hash_table_lookup (at, k->name));
    g_assert_cmpuint (l, >, 1);
    g_autofree char *want = g_strstrip (g_strdup_printf ("#%s = %s", k->name, k->default_value));
    g_autofree char *doc = g_strdup_printf ("# %s", k->doc);
    g_assert_cmpstr (lines[l - 1], ==, want);
    g_assert_cmpstr (lines[l - 2], ==, doc);
  }
  /* and it loads: every default */
  g_autofree char *top = g_test_build_filename (G_TEST_DIST, "..", NULL);
  g_autofree char *path = g_build_filename (top, "data", "extbody.conf.example", NULL);
  g_autoptr (EbConfig) from_example = eb_config_new ();
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_config_load_file (from_example, path, FALSE, &e));
  g_assert_no_error (e);
  g_autoptr (EbConfig) defaults = eb_config_new ();
  g_autofree char *d1 = eb_config_dump (from_example);
  g_autofree char *d2 = eb_config_dump (defaults);
  g_assert_cmpstr (d1, ==, d2);
}

/* The Debian package's /etc/extbody/extbody.conf: the file above as debian/rules
 * edits it (its sed expression, run by sed on a copy). It sets one key, what
 * the package must: milter_socket, inside Postfix's chroot (Debian's smtpd
 * runs chrooted in /var/spool/postfix); the commented default stays; it
 * loads, with no key set twice. */
static void
test_shipped_file_debian (void)
{
  g_autofree char *rules = source_file ("debian/rules");
  /* every sed expression debian/rules runs on the shipped file, in order */
  g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (argv, g_strdup ("sed"));
  for (const char *sed = strstr (rules, "sed -i '"); sed; sed = strstr (sed, "sed -i '")) {
    sed += strlen ("sed -i '");
    const char *sed_end = strchr (sed, '\'');
    g_assert_nonnull (sed_end);
    g_autofree char *expr = g_strndup (sed, (gsize) (sed_end - sed));
    g_test_message ("debian/rules: sed -i '%s'", expr);
    g_assert_null (strstr (expr, "$"));   /* a Makefile would change it */
    g_ptr_array_add (argv, g_strdup ("-e"));
    g_ptr_array_add (argv, g_steal_pointer (&expr));
    sed = sed_end;
  }
  g_assert_cmpuint (argv->len, ==, 5);   /* milter_socket, trace_key_file */
  g_autofree char *top = g_test_build_filename (G_TEST_DIST, "..", NULL);
  g_autofree char *example = g_build_filename (top, "data", "extbody.conf.example", NULL);
  g_ptr_array_add (argv, g_strdup (example));
  g_ptr_array_add (argv, NULL);
  g_autofree char *out = NULL, *err = NULL;
  int wait = 0;
  g_autoptr (GError) e = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err, &wait, &e));
  g_assert_no_error (e);
  g_assert_true (g_spawn_check_wait_status (wait, NULL));
  g_assert_cmpstr (err, ==, "");

  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  guint n_set = 0, at = 0, at_key = 0;
  for (guint l = 0; lines[l]; l++) {
    g_autofree char *set = setting_of (lines[l]);
    if (!set)
      continue;
    n_set++;
    if (g_str_equal (set, "trace_key_file")) {
      at_key = l;
      continue;
    }
    at = l;
    g_assert_cmpstr (set, ==, "milter_socket");
  }
  g_assert_cmpuint (n_set, ==, 2);
  g_assert_cmpstr (lines[at], ==, "milter_socket = unix:/var/spool/postfix/extbody/extbody.sock");
  g_assert_cmpstr (lines[at_key], ==, "trace_key_file = /etc/extbody/trace.key");
  /* in its place: after the commented default and its text */
  gboolean after_default = FALSE;
  for (guint l = at; l > 0 && !after_default && *lines[l - 1] == '#'; l--)
    after_default = g_str_has_prefix (lines[l - 1], "#milter_socket = ");
  g_assert_true (after_default);
  after_default = FALSE;
  for (guint l = at_key; l > 0 && !after_default && *lines[l - 1] == '#'; l--)
    after_default = g_str_has_prefix (lines[l - 1], "#trace_key_file =");
  g_assert_true (after_default);

  g_autofree char *dir = g_dir_make_tmp ("extbody-config-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "extbody.conf", NULL);
  g_assert_true (g_file_set_contents (path, out, -1, NULL));
  g_autoptr (EbConfig) c = eb_config_new ();
  g_assert_true (eb_config_load_file (c, path, FALSE, &e));
  g_assert_no_error (e);
  g_autoptr (EbConfig) want = eb_config_new ();
  g_assert_true (eb_config_set (want, "milter_socket", "unix:/var/spool/postfix/extbody/extbody.sock", NULL));
  g_assert_true (eb_config_set (want, "trace_key_file", "/etc/extbody/trace.key", NULL));
  g_autofree char *d1 = eb_config_dump (c);
  g_autofree char *d2 = eb_config_dump (want);
  g_assert_cmpstr (d1, ==, d2);
  g_unlink (path);
  g_rmdir (dir);
}

/* A key set twice is an error naming both lines, FILE:LINE: in one group, in
 * the lines before the group line and the group, in a group given twice;
 * the file changes nothing then. A commented line sets nothing, keys are
 * compared as the loader takes them (case and all: "Fetch" is no key of
 * extbody's), and -o after the file overrides it on purpose. */
static void
test_key_set_twice (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbody-config-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "twice.conf", NULL);
  struct { const char *text; const char *key; guint first, second; } cases[] = {
    /* the shipped default further down, as an administrator's file had it */
    { "[extbody]\nfetch = on\nmax_parts = 5\n\n# text\nfetch = off\n", "fetch", 2, 6 },
    { "fetch = on\nfetch = on\n", "fetch", 1, 2 },
    { "# site\nmax_parts = 5\n[extbody]\nmax_parts = 6\n", "max_parts", 2, 4 },
    { "[extbody]\nmax_parts = 5\n\n[extbody]\n  max_parts=6\n", "max_parts", 2, 5 },
    { "[extbody]\r\nmax_parts = 5\r\n\tmax_parts\t =\t5\r\n", "max_parts", 2, 3 },
    { "allow_domains = a.example\nmax_parts = 5\nallow_domains =\nallow_domains = b.example\n",
      "allow_domains", 1, 3 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_assert_true (g_file_set_contents (path, cases[i].text, -1, NULL));
    g_autoptr (EbConfig) c = eb_config_new ();
    g_autoptr (GError) e = NULL;
    g_assert_false (eb_config_load_file (c, path, FALSE, &e));
    g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
    g_test_message ("%s", e->message);
    g_autofree char *want = g_strdup_printf ("%s:%u: %s is set a second time (first at %s:%u): set each key once",
                                             path, cases[i].second, cases[i].key, path, cases[i].first);
    g_assert_cmpstr (e->message, ==, want);
    g_assert_false (c->fetch);                   /* unchanged */
    g_assert_cmpuint (c->max_parts, ==, 10000);
  }

  /* a secret given twice: both lines named, neither value shown */
  const char *k1 = "first-k3y-0123456789abcdef0123456789", *k2 = "second-k3y-0123456789abcdef012345678";
  g_autofree char *keys = g_strdup_printf ("externalize_key = %s\nexternalize_key = %s\n", k1, k2);
  g_assert_true (g_file_set_contents (path, keys, -1, NULL));
  g_autoptr (EbConfig) s = eb_config_new ();
  g_autoptr (GError) se = NULL;
  g_assert_false (eb_config_load_file (s, path, FALSE, &se));
  g_assert_nonnull (strstr (se->message, ":2: externalize_key is set a second time (first at "));
  g_assert_null (strstr (se->message, "k3y"));

  /* not twice: a commented line, a key in another case (an unknown key) */
  g_autoptr (EbConfig) c = eb_config_new ();
  g_autoptr (GError) e = NULL;
  g_assert_true (g_file_set_contents (path, "[extbody]\n#fetch = off\nfetch = on\n# fetch = off\n", -1, NULL));
  g_assert_true (eb_config_load_file (c, path, FALSE, &e));
  g_assert_no_error (e);
  g_assert_true (c->fetch);
  g_assert_true (g_file_set_contents (path, "fetch = on\nFetch = off\n", -1, NULL));
  g_assert_false (eb_config_load_file (c, path, FALSE, &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
  g_assert_nonnull (strstr (e->message, "unknown key \"Fetch\""));
  g_clear_error (&e);

  /* -o after the file: an override, no error, whatever the file says */
  g_assert_true (g_file_set_contents (path, "[extbody]\nmax_parts = 5\nfetch = on\n", -1, NULL));
  g_autoptr (EbConfig) o = eb_config_new ();
  g_assert_true (eb_config_load_file (o, path, FALSE, &e));
  g_assert_true (eb_config_apply_option (o, "max_parts=7", &e));
  g_assert_true (eb_config_apply_option (o, "fetch=off", &e));
  g_assert_no_error (e);
  g_assert_cmpuint (o->max_parts, ==, 7);
  g_assert_false (o->fetch);
  g_unlink (path);
  g_rmdir (dir);
}

/* Every reason token is in extbody(1). */
static void
test_documented_reasons (void)
{
  g_autofree char *man1 = source_file ("src/cli/extbody.1");
  for (EbReason r = 0; r < EB_REASON_N; r++) {
    g_autofree char *entry = g_strdup_printf (".TP\n.B %s\n", eb_reason_token (r));
    g_test_message ("reason %s", eb_reason_token (r));
    g_assert_nonnull (strstr (man1, entry));
  }
}

/* The [extbody] line is optional: keys before any group are extbody's. */
static void
test_no_group_line (void)
{
  g_autofree char *dir = g_dir_make_tmp ("extbody-conf-XXXXXX", NULL);
  g_autofree char *f = g_build_filename (dir, "a.conf", NULL);
  g_assert_true (g_file_set_contents (f, "# site settings\n\nmax_parts = 5\nfetch = on\n", -1, NULL));
  g_autoptr (EbConfig) c = eb_config_new ();
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_config_load_file (c, f, FALSE, &e));
  g_assert_no_error (e);
  g_assert_cmpuint (c->max_parts, ==, 5);
  g_assert_true (c->fetch);
  g_assert_true (g_file_set_contents (f, "max_parts = 6\n[extbody]\nmax_references = 7\n", -1, NULL));
  g_assert_true (eb_config_load_file (c, f, FALSE, &e));
  g_assert_cmpuint (c->max_parts, ==, 6);
  g_assert_cmpuint (c->max_references, ==, 7);
  g_assert_true (g_file_set_contents (f, "max_parts = 5\nnot a key\n", -1, NULL));
  g_assert_false (eb_config_load_file (c, f, FALSE, &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
  g_assert_cmpuint (c->max_parts, ==, 6);   /* unchanged on failure */
  g_clear_error (&e);
  g_assert_true (g_file_set_contents (f, "max_parts = 5\n\0junk\n", 16, NULL));
  g_assert_false (eb_config_load_file (c, f, FALSE, &e));
  g_assert_nonnull (strstr (e->message, "NUL"));
  g_unlink (f);
  g_rmdir (dir);
}

/* One list syntax for every list key. */
static void
test_split_list (void)
{
  struct { const char *in; int n; } ok[] = {
    { "", 0 }, { "  \t", 0 }, { "a", 1 }, { "a,b", 2 }, { "a, b", 2 }, { "a b", 2 },
    { " a ,\tb  c ", 3 }, { "a , b", 2 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (ok); i++) {
    g_autoptr (GError) e = NULL;
    g_autoptr (GPtrArray) l = eb_list_split (ok[i].in, &e);
    g_assert_no_error (e);
    g_assert_cmpint ((int) l->len, ==, ok[i].n);
  }
  const char *bad[] = { ",a", "a,,b", "a,", "a, ,b" };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_autoptr (GError) e = NULL;
    g_assert_null (eb_list_split (bad[i], &e));
    g_assert_error (e, EB_ERROR, EB_ERROR_EMPTY);
  }
}

/* Typed keys refuse what the runtime could not use, naming the key. */
static void
test_typed_keys (void)
{
  struct { const char *key, *value; gboolean ok; } cases[] = {
    { "allow_networks", "10.0.0.0/8, ::1/128 192.168.0.1", TRUE },
    { "allow_networks", "10.0.0.0/33", FALSE },
    { "deny_networks", "banana", FALSE },
    { "allow_ports", "80 443, 8080", TRUE },
    { "allow_ports", "0", FALSE },
    { "allow_ports", "65536", FALSE },
    { "allow_schemes", "HTTPS, ftp", TRUE },
    { "allow_schemes", "http, gopher", TRUE },
    { "allow_schemes", "file, GOPHER", TRUE },
    { "allow_schemes", "http, wais", FALSE },
    { "allow_schemes", "telnet", FALSE },
    { "allow_schemes", "ftps", FALSE },
    { "allow_domains", "example.org, files.example.net 127.0.0.1 ::1", TRUE },
    { "allow_domains", ".example.org", TRUE },
    { "deny_domains", "*.example.com", FALSE },
    { "deny_domains", "exa mple", TRUE },          /* two items */
    { "deny_domains", "ex!ample.com", FALSE },
    { "local_file_dirs", "/srv/files, /var/spool/x", TRUE },
    { "local_file_dirs", "files", FALSE },
    { "milter_socket", "unix:/run/extbody/milter.sock", TRUE },
    { "milter_socket", "local:/tmp/m.sock", TRUE },
    { "milter_socket", "inet:8891@127.0.0.1", TRUE },
    { "milter_socket", "inet6:8891@[::1]", TRUE },
    { "milter_socket", "inet:8891", TRUE },
    { "milter_socket", "inet:99999@127.0.0.1", FALSE },
    { "milter_socket", "inet:0@127.0.0.1", FALSE },
    { "milter_socket", "inet:@127.0.0.1", FALSE },
    { "milter_socket", "unix:relative.sock", FALSE },
    { "milter_socket", "bogus", FALSE },
    { "proxy", "http://127.0.0.1:3128", TRUE },
    { "proxy", "127.0.0.1:3128", FALSE },
    { "redis_server", "", TRUE },
    { "redis_server", "127.0.0.1:6379", TRUE },
    { "redis_server", "redis.example.net:6380", TRUE },
    { "redis_server", "[::1]:6379", TRUE },
    { "redis_server", "unix:/run/redis/redis.sock", TRUE },
    { "redis_server", "unix:redis.sock", FALSE },
    { "redis_server", "127.0.0.1", FALSE },
    { "redis_server", "127.0.0.1:0", FALSE },
    { "redis_server", "127.0.0.1:65536", FALSE },
    { "redis_server", "::1:6379", FALSE },
    { "redis_server", "[]:6379", FALSE },
    { "redis_server", "redis://127.0.0.1:6379", FALSE },
    { "redis_timeout", "0", FALSE },
    { "redis_timeout", "250", TRUE },
    { "redis_prefix", "pool-a:", TRUE },
    { "redis_prefix", "two words", FALSE },
    { "redis_max_body", "4M", TRUE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (EbConfig) c = eb_config_new ();
    g_autoptr (GError) e = NULL;
    gboolean ok = eb_config_set (c, cases[i].key, cases[i].value, &e);
    g_test_message ("%s = %s: %s", cases[i].key, cases[i].value, e ? e->message : "ok");
    g_assert_cmpint (ok, ==, cases[i].ok);
    if (!ok) {
      g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
      g_assert_true (g_str_has_prefix (e->message, cases[i].key));
    }
  }
  /* -o: a missing '=' is a usage error, unlike a bad value */
  g_autoptr (EbConfig) c = eb_config_new ();
  g_autoptr (GError) e1 = NULL, e2 = NULL, e3 = NULL;
  g_assert_false (eb_config_apply_option (c, "max_parts", &e1));
  g_assert_error (e1, EB_ERROR, EB_ERROR_SYNTAX);
  g_assert_false (eb_config_apply_option (c, "max_parts=x", &e2));
  g_assert_error (e2, EB_ERROR, EB_ERROR_CONFIG);
  g_assert_true (eb_config_apply_option (c, " max_parts = 9", NULL));
  g_assert_cmpuint (c->max_parts, ==, 9);
  const char *nets[] = { "127.0.0.1/32", "banana", NULL };
  g_assert_false (eb_config_add_networks (c, nets, &e3));
  g_assert_nonnull (strstr (e3->message, "--allow-network banana"));
  g_assert_cmpstr (c->allow_networks, ==, "");
  const char *good[] = { "127.0.0.1/32", "::1", NULL };
  g_assert_true (eb_config_add_networks (c, good, NULL));
  g_assert_cmpstr (c->allow_networks, ==, "127.0.0.1/32, ::1");
}

/* Store credentials: read from the file, refused by -o, never printed. */
static void
test_store_credentials (void)
{
  g_autoptr (EbConfig) c = eb_config_new ();
  g_autoptr (GError) e = NULL;
  const char *file_only[] = { "externalize_store_user=alice", "externalize_store_password=s3cret",
                              " externalize_store_password =x" };
  for (guint i = 0; i < G_N_ELEMENTS (file_only); i++) {
    g_assert_false (eb_config_apply_option (c, file_only[i], &e));
    g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
    g_assert_nonnull (strstr (e->message, "only in the configuration file"));
    g_clear_error (&e);
  }
  g_assert_true (eb_config_apply_option (c, "externalize_store_timeout=5", &e));
  g_assert_no_error (e);
  g_assert_cmpuint (eb_config_get_uint64 (c, "externalize_store_timeout"), ==, 5);

  g_autofree char *path = g_build_filename (g_get_tmp_dir (), "extbody-test-store-cred.conf", NULL);
  g_assert_true (g_file_set_contents (path,
                                      "externalize_store = https://dav.example/store\n"
                                      "externalize_store_user = alice\n"
                                      "externalize_store_password = s3cret-Pw\n"
                                      "redis_password = r3dis-Pw\n", -1, NULL));
  g_assert_true (eb_config_load_file (c, path, FALSE, &e));
  g_assert_no_error (e);
  g_unlink (path);
  g_assert_cmpstr (eb_config_get_string (c, "externalize_store_password"), ==, "s3cret-Pw");
  g_autofree char *dump = eb_config_dump (c);
  g_assert_null (strstr (dump, "s3cret-Pw"));
  g_assert_null (strstr (dump, "r3dis-Pw"));
  g_assert_nonnull (strstr (dump, "externalize_store_password = (set; not shown)\n"));
  g_assert_nonnull (strstr (dump, "externalize_store_user = alice\n"));
  g_autoptr (EbConfig) d = eb_config_new ();
  g_autofree char *dump_d = eb_config_dump (d);
  g_assert_nonnull (strstr (dump_d, "externalize_store_password = \n"));
}

/* externalize_key: a secret like the store password (refused by -o, never
 * printed), of at least 32 bytes; a short one is refused naming the key and
 * its length, never its value. */
static void
test_externalize_key (void)
{
  g_autoptr (EbConfig) c = eb_config_new ();
  g_autoptr (GError) e = NULL;
  const char *key = "k3y-0123456789abcdef0123456789abcdef";
  g_autofree char *opt = g_strdup_printf ("externalize_key=%s", key);
  g_assert_false (eb_config_apply_option (c, opt, &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
  g_assert_nonnull (strstr (e->message, "externalize_key: only in the configuration file"));
  g_assert_null (strstr (e->message, key));
  g_clear_error (&e);
  g_assert_cmpstr (c->externalize_key, ==, "");

  const char *shorts[] = { "Qz", "s3cret-of-thirty-one-bytes-long" };
  for (guint i = 0; i < G_N_ELEMENTS (shorts); i++) {
    g_assert_false (eb_config_set (c, "externalize_key", shorts[i], &e));
    g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
    g_test_message ("%s", e->message);
    g_assert_true (g_str_has_prefix (e->message, "externalize_key: too short: "));
    g_assert_null (strstr (e->message, shorts[i]));
    g_clear_error (&e);
  }
  g_assert_true (eb_config_set (c, "externalize_key", "", &e));
  g_assert_true (eb_config_set (c, "externalize_key", "s3cret-of-thirty-two-bytes-long!", &e));
  g_assert_no_error (e);

  g_autofree char *path = g_build_filename (g_get_tmp_dir (), "extbody-test-key.conf", NULL);
  g_autofree char *text = g_strdup_printf ("externalize_key = %s\n", key);
  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  g_assert_true (eb_config_load_file (c, path, FALSE, &e));
  g_assert_no_error (e);
  g_assert_cmpstr (eb_config_get_string (c, "externalize_key"), ==, key);
  g_autofree char *dump = eb_config_dump (c);
  g_assert_null (strstr (dump, key));
  g_assert_nonnull (strstr (dump, "\nexternalize_key = (set; not shown)\n"));
  g_assert_true (g_file_set_contents (path, "externalize_key = tiny-k3y\n", -1, NULL));
  g_assert_false (eb_config_load_file (c, path, FALSE, &e));
  g_assert_nonnull (strstr (e->message, "externalize_key: too short: 8 bytes, at least 32"));
  g_assert_null (strstr (e->message, "tiny-k3y"));
  g_assert_cmpstr (eb_config_get_string (c, "externalize_key"), ==, key);   /* unchanged */
  g_unlink (path);
  g_autoptr (EbConfig) d = eb_config_new ();
  g_autofree char *dump_d = eb_config_dump (d);
  g_assert_nonnull (strstr (dump_d, "\nexternalize_key = \n"));
}

/* externalize_store and externalize_base_url hold only the characters a URL
 * may (RFC 3986): a space would vanish from the reference written (RFC 2017
 * 3.1 ignores white space in the URL parameter), a quote or a backslash is no
 * URL's; %-encoded, they are taken. */
static void
test_store_urls (void)
{
  g_autoptr (EbConfig) c = eb_config_new ();
  const char *bad[] = { "http://h/a b", "http://h/a\"b", "http://h/a\\b", "http://h/a<b>",
                        "http://h/\xc3\xa9", "http://h/a\tb", "http://h/{x}" };
  const char *keys[] = { "externalize_base_url", "externalize_store" };
  for (guint k = 0; k < G_N_ELEMENTS (keys); k++) {
    for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
      g_autoptr (GError) e = NULL;
      g_assert_false (eb_config_set (c, keys[k], bad[i], &e));
      g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
      g_assert_nonnull (strstr (e->message, "a character a URL cannot"));
    }
    g_autoptr (GError) e = NULL;
    g_assert_true (eb_config_set (c, keys[k], "http://h:8080/a%20b/~x-y_z.(1)!$&'*+,;=:@", &e));
    g_assert_no_error (e);
  }
}

/* Domain patterns are parsed once, when the key is set: lowercased, without
 * the dots around them; a copy parses its own. */
static void
test_domains (void)
{
  g_autoptr (EbConfig) c = eb_config_new ();
  g_autoptr (GError) e = NULL;
  g_assert_cmpuint (g_strv_length ((GStrv) eb_config_get_domains (c, "allow_domains")), ==, 0);
  g_assert_true (eb_config_set (c, "allow_domains", ".Files.Example.ORG., cdn.example.net", &e));
  g_assert_no_error (e);
  const char *const want[] = { "files.example.org", "cdn.example.net", NULL };
  g_assert_true (g_strv_equal ((const char *const *) eb_config_get_domains (c, "allow_domains"), want));
  g_autoptr (EbConfig) copy = eb_config_copy (c);
  g_assert_true (eb_config_get_domains (copy, "allow_domains") != eb_config_get_domains (c, "allow_domains"));
  g_assert_true (g_strv_equal (eb_config_get_domains (copy, "allow_domains"), want));
  g_assert_null (eb_config_get_domains (c, "allow_schemes"));
}

/* eb_config_networks_contain: the CIDR lists of allow_networks, deny_networks
 * and http_allow_networks, IPv4 and IPv6; another key holds none. */
static void
test_networks_contain (void)
{
  g_autoptr (EbConfig) c = eb_config_new ();
  g_assert_true (eb_config_set (c, "http_allow_networks", "10.9.9.0/24, 2001:db8::/32", NULL));
  struct sockaddr_in in = { .sin_family = AF_INET };
  struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
  inet_pton (AF_INET, "10.9.9.200", &in.sin_addr);
  g_assert_true (eb_config_networks_contain (c, "http_allow_networks", (struct sockaddr *) &in));
  g_assert_false (eb_config_networks_contain (c, "allow_networks", (struct sockaddr *) &in));
  g_assert_false (eb_config_networks_contain (c, "http_socket", (struct sockaddr *) &in));
  inet_pton (AF_INET, "10.9.10.1", &in.sin_addr);
  g_assert_false (eb_config_networks_contain (c, "http_allow_networks", (struct sockaddr *) &in));
  inet_pton (AF_INET6, "2001:db8:1::5", &in6.sin6_addr);
  g_assert_true (eb_config_networks_contain (c, "http_allow_networks", (struct sockaddr *) &in6));
  inet_pton (AF_INET6, "2001:db9::5", &in6.sin6_addr);
  g_assert_false (eb_config_networks_contain (c, "http_allow_networks", (struct sockaddr *) &in6));
  /* a copy has its own parsed lists */
  g_autoptr (EbConfig) copy = eb_config_copy (c);
  g_assert_true (eb_config_set (c, "http_allow_networks", "", NULL));
  inet_pton (AF_INET, "10.9.9.1", &in.sin_addr);
  g_assert_false (eb_config_networks_contain (c, "http_allow_networks", (struct sockaddr *) &in));
  g_assert_true (eb_config_networks_contain (copy, "http_allow_networks", (struct sockaddr *) &in));
  /* http_socket: IP addresses written out, any of them (the daemon asks for
   * http_allow_networks beside one that is not loopback) */
  g_assert_true (eb_config_set (c, "http_socket", "inet:8025@0.0.0.0", NULL));
  g_assert_true (eb_config_set (c, "http_socket", "inet6:8025@[::]", NULL));
  g_assert_false (eb_config_set (c, "http_socket", "inet:8025@localhost", NULL));
  g_assert_false (eb_config_set (c, "http_socket", "inet6:8025@[::1", NULL));
}


/* eb_config_register_keys: a program's keys beside the library's. Before any
 * program adds them a file that sets one is refused; once added they are
 * loaded, checked, copied, dumped after the library's and read with the
 * getters; a configuration made before has their defaults; adding the same
 * table again does nothing; a name taken, a bad name or a default its own
 * checks refuse is an error, and adds nothing. */
static gboolean
check_even (const char *value, GError **error)
{
  if (strlen (value) % 2 == 0)
    return TRUE;
  g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\" has an odd length", value);
  return FALSE;
}

static const EbConfigKeyInfo program_keys_for_test[] = {
  { "tprog_count", EB_CONFIG_KEY_NUMBER, "7", 1, 10, NULL, NULL, NULL, "A number." },
  { "tprog_size", EB_CONFIG_KEY_SIZE, "2k", 0, 4 << 20, NULL, NULL, NULL, "A size." },
  { "tprog_flag", EB_CONFIG_KEY_BOOLEAN, "on", 0, 0, NULL, NULL, NULL, "A switch." },
  { "tprog_word", EB_CONFIG_KEY_STRING, "ab", 0, 0, NULL, check_even, "even text", "Text." },
  { "tprog_mode", EB_CONFIG_KEY_STRING, "x", 0, 0, "x|y", NULL, NULL, "A choice." },
  { "tprog_nets", EB_CONFIG_KEY_NETWORKS, "192.0.2.0/24", 0, 0, NULL, NULL, NULL, "Networks." },
};

static void
program_keys_run (void)
{
  g_autofree char *dir = g_dir_make_tmp ("eb-config-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "p.conf", NULL);
  g_assert_true (g_file_set_contents (path, "max_parts = 9\ntprog_count = 3\n", -1, NULL));
  g_autoptr (GError) e = NULL;
  g_autoptr (EbConfig) before = eb_config_new ();
  g_assert_false (eb_config_load_file (before, path, FALSE, &e));
  g_assert_nonnull (strstr (e->message, "unknown key \"tprog_count\""));
  g_clear_error (&e);
  guint n = eb_config_get_n_keys ();

  /* refused whole: a name the library has, a bad name, a bad default */
  const EbConfigKeyInfo taken[] = {
    { "tprog_other", EB_CONFIG_KEY_NUMBER, "1", 0, 5, NULL, NULL, NULL, "x" },
    { "max_parts", EB_CONFIG_KEY_NUMBER, "1", 0, 5, NULL, NULL, NULL, "x" },
  };
  g_assert_false (eb_config_register_keys ("tprog", taken, G_N_ELEMENTS (taken), &e));
  g_assert_nonnull (strstr (e->message, "libextbody"));
  g_clear_error (&e);
  const EbConfigKeyInfo bad_name[] = { { "Tprog", EB_CONFIG_KEY_NUMBER, "1", 0, 5, NULL, NULL, NULL, "x" } };
  g_assert_false (eb_config_register_keys ("tprog", bad_name, 1, &e));
  g_clear_error (&e);
  const EbConfigKeyInfo bad_default[] = {
    { "tprog_other", EB_CONFIG_KEY_NUMBER, "9", 0, 5, NULL, NULL, NULL, "x" },
    { "tprog_odd", EB_CONFIG_KEY_STRING, "abc", 0, 0, NULL, check_even, "even text", "x" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad_default); i++) {
    g_assert_false (eb_config_register_keys ("tprog", &bad_default[i], 1, &e));
    g_clear_error (&e);
  }
  g_assert_cmpuint (eb_config_get_n_keys (), ==, n);

  g_assert_true (eb_config_register_keys ("tprog", program_keys_for_test,
                                          G_N_ELEMENTS (program_keys_for_test), &e));
  g_assert_no_error (e);
  g_assert_true (eb_config_register_keys ("tprog", program_keys_for_test,
                                          G_N_ELEMENTS (program_keys_for_test), &e));
  g_assert_cmpuint (eb_config_get_n_keys (), ==, n + G_N_ELEMENTS (program_keys_for_test));
  g_assert_cmpstr (eb_config_get_key (n)->program, ==, "tprog");
  /* another program may not take them */
  g_assert_false (eb_config_register_keys ("other", program_keys_for_test, 1, &e));
  g_assert_nonnull (strstr (e->message, "tprog's already"));
  g_clear_error (&e);

  /* made before: the defaults */
  g_assert_cmpuint (eb_config_get_uint64 (before, "tprog_count"), ==, 7);
  g_assert_cmpuint (eb_config_get_uint64 (before, "tprog_size"), ==, 2048);
  g_assert_true (eb_config_get_boolean (before, "tprog_flag"));
  g_assert_cmpstr (eb_config_get_string (before, "tprog_word"), ==, "ab");

  g_autoptr (EbConfig) c = eb_config_new ();
  g_assert_true (eb_config_load_file (c, path, FALSE, &e));
  g_assert_no_error (e);
  g_assert_cmpuint (eb_config_get_uint64 (c, "max_parts"), ==, 9);
  g_assert_cmpuint (eb_config_get_uint64 (c, "tprog_count"), ==, 3);
  g_assert_true (eb_config_set (c, "tprog_size", " 3M ", NULL));
  g_assert_cmpuint (eb_config_get_uint64 (c, "tprog_size"), ==, 3 << 20);
  g_assert_true (eb_config_apply_option (c, "tprog_flag=no", NULL));
  g_assert_false (eb_config_get_boolean (c, "tprog_flag"));
  g_assert_true (eb_config_set (c, "tprog_word", " abcd ", NULL));
  g_assert_cmpstr (eb_config_get_string (c, "tprog_word"), ==, "abcd");
  /* the checks: bounds, syntax, the program's own check, choices, CIDR lists */
  const char *refused[] = { "tprog_count=11", "tprog_count=0", "tprog_count=x", "tprog_size=5M",
                            "tprog_flag=maybe", "tprog_word=abc", "tprog_mode=z",
                            "tprog_nets=192.0.2.0/33" };
  for (guint i = 0; i < G_N_ELEMENTS (refused); i++) {
    g_test_message ("%s", refused[i]);
    g_assert_false (eb_config_apply_option (c, refused[i], &e));
    g_assert_nonnull (e);
    g_clear_error (&e);
  }
  g_assert_cmpuint (eb_config_get_uint64 (c, "tprog_count"), ==, 3);
  g_assert_cmpstr (eb_config_get_string (c, "tprog_word"), ==, "abcd");
  struct sockaddr_in in = { .sin_family = AF_INET };
  inet_pton (AF_INET, "192.0.2.9", &in.sin_addr);
  g_assert_true (eb_config_networks_contain (c, "tprog_nets", (struct sockaddr *) &in));
  g_assert_true (eb_config_networks_contain (before, "tprog_nets", (struct sockaddr *) &in) == FALSE);
  g_assert_true (eb_config_set (c, "tprog_nets", "198.51.100.0/24", NULL));
  g_assert_false (eb_config_networks_contain (c, "tprog_nets", (struct sockaddr *) &in));

  /* a copy is its own */
  g_autoptr (EbConfig) copy = eb_config_copy (c);
  g_assert_true (eb_config_set (c, "tprog_word", "ef", NULL));
  g_assert_cmpstr (eb_config_get_string (copy, "tprog_word"), ==, "abcd");
  inet_pton (AF_INET, "198.51.100.1", &in.sin_addr);
  g_assert_true (eb_config_networks_contain (copy, "tprog_nets", (struct sockaddr *) &in));

  /* dumped after the library's keys, in the program's order, as it writes
   * values: numbers in decimal, switches on or off */
  g_autofree char *dump = eb_config_dump (copy);
  const char *at = strstr (dump, "tprog_count = 3\ntprog_size = 3145728\ntprog_flag = off\n"
                           "tprog_word = abcd\ntprog_mode = x\ntprog_nets = 198.51.100.0/24\n");
  g_assert_nonnull (at);
  g_assert_cmpstr (at + strlen (at) - strlen ("tprog_nets = 198.51.100.0/24\n"), ==,
                   "tprog_nets = 198.51.100.0/24\n");
  g_assert_true (strstr (dump, "max_parts = 9\n") < at);
  /* a getter of the wrong type is a programmer's error */
  if (g_test_undefined ()) {
    g_test_expect_message (G_LOG_DOMAIN, G_LOG_LEVEL_CRITICAL, "*tprog_word*");
    g_assert_cmpuint (eb_config_get_uint64 (c, "tprog_word"), ==, 0);
    g_test_assert_expected_messages ();
  }
  g_unlink (path);
  g_rmdir (dir);
}

/* in a process of its own: the keys it adds stay out of the other cases (the
 * man page and the shipped file hold the library's and extbodyd's keys) */
static void
test_program_keys (void)
{
  if (g_test_subprocess ()) {
    program_keys_run ();
    return;
  }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDOUT | G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
}

/* extbodyd's settings: every key of DAEMON_SETTINGS is a key (the library's
 * or the daemon's), and each field holds its key's value, set or default. */
static void
test_daemon_settings (void)
{
  g_autoptr (EbConfig) c = eb_config_new ();
  g_autoptr (GError) error = NULL;
  g_assert_true (eb_config_set (c, "http_timeout", "77", &error));
  g_assert_true (eb_config_set (c, "milter_spill_size", "2M", &error));
  g_assert_true (eb_config_set (c, "strip_trace_fields", "off", &error));
  g_assert_true (eb_config_set (c, "dovecot_filter_socket", "/run/x/y", &error));
  g_assert_no_error (error);
  DaemonSettings k;
  g_assert_true (daemon_keys_bind (&k, c, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (k.http_timeout, ==, 77);
  g_assert_cmpuint (k.milter_spill_size, ==, 2 << 20);
  g_assert_false (k.strip_trace_fields);
  g_assert_cmpstr (k.dovecot_filter_socket, ==, "/run/x/y");
  g_assert_cmpuint (k.http_request_timeout, ==, 60);
  g_assert_cmpstr (k.on_error, ==, "accept");
  g_assert_true (k.fetch == FALSE);
  /* every field against its key's getter */
#define TEXT_(n) g_assert_cmpstr (k.n, ==, eb_config_get_string (c, #n));
#define NUM_(n) g_assert_cmpuint (k.n, ==, eb_config_get_uint64 (c, #n));
#define BOOL_(n) g_assert_cmpint (k.n, ==, eb_config_get_boolean (c, #n));
  DAEMON_SETTINGS (TEXT_, NUM_, BOOL_)
#undef TEXT_
#undef NUM_
#undef BOOL_
  /* the command's own keys (extbody-cli-keys.h) too */
#define HAS_(n) g_assert_true (eb_config_has_key (#n));
  CLI_SETTINGS (HAS_, HAS_, HAS_)
#undef HAS_
  g_assert_false (eb_config_has_key ("http_timout"));
  g_assert_true (eb_config_has_key ("http_timeout"));
  g_assert_true (eb_config_has_key ("max_message_size"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* extbodyd's keys, as the daemon and the command add them: the tables,
   * the man page and the shipped file hold all of them */
  g_autoptr (GError) keys_error = NULL;
  if (!daemon_keys_register (&keys_error))
    g_error ("%s", keys_error->message);
  g_test_add_func ("/config/defaults", test_defaults);
  g_test_add_func ("/config/sizes", test_sizes);
  g_test_add_func ("/config/set-and-bounds", test_set_and_bounds);
  g_test_add_func ("/config/load", test_load);
  g_test_add_func ("/config/split-list", test_split_list);
  g_test_add_func ("/config/domains", test_domains);
  g_test_add_func ("/config/networks-contain", test_networks_contain);
  g_test_add_func ("/config/no-group-line", test_no_group_line);
  g_test_add_func ("/config/typed-keys", test_typed_keys);
  g_test_add_func ("/config/store-credentials", test_store_credentials);
  g_test_add_func ("/config/store-urls", test_store_urls);
  g_test_add_func ("/config/externalize-key", test_externalize_key);
  g_test_add_func ("/config/documented/keys", test_documented_keys);
  g_test_add_func ("/config/shipped-file", test_shipped_file);
  g_test_add_func ("/config/shipped-file-debian", test_shipped_file_debian);
  g_test_add_func ("/config/key-set-twice", test_key_set_twice);
  g_test_add_func ("/config/program-keys", test_program_keys);
  g_test_add_func ("/config/daemon-settings", test_daemon_settings);
  g_test_add_func ("/config/documented/reasons", test_documented_reasons);
  return g_test_run ();
}
