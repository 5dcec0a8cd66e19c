/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-message-shadow.c - GMime parses a shadow copy of a message
 * (eb-message.c: no parameters in an external-body Content-Type field, no
 * logical line over 64 KiB): the walk must find exactly what it finds when
 * GMime is shown the bytes themselves (eb_message_scan_unshadowed): the same
 * parts, offsets, references, URLs and reasons. Over crafted messages where a
 * cut could go wrong (a field ending right at a delimiter, in LF before a
 * CRLF delimiter, such a field in a body, odd case, CRLF), the hostile-input
 * suite's messages, the real corpus and generated messages. */
#include <string.h>
#include "eb-gmime.h"
#include "eb-message.h"
#include "../hostile/hostile-cases.h"
#include "../servers/test-server.h"

/* Under AddressSanitizer (about 40 times slower here, GMime's allocations
 * intercepted) the messages GMime takes long over whole - over 256 KiB, or
 * thousands of parts - are compared in the normal build only, and fewer
 * generated messages: the sanitizer build checks the memory of every code
 * path on the rest. */
#define SANITIZED_MAX_BYTES (256 << 10)

static gboolean
affordable (const char *name, gsize len)
{
  if (!TEST_UNDER_ASAN)
    return TRUE;
  return len <= SANITIZED_MAX_BYTES && !strstr (name, "parts") && !strstr (name, "nesting");
}

static guint compared;

static void
same_str (const char *what, const char *a, const char *b)
{
  if (g_strcmp0 (a, b) != 0)
    g_error ("%s differs: \"%.80s\" against \"%.80s\"", what, a ? a : "(null)", b ? b : "(null)");
}

/* Both scans of @buf, compared field by field. */
static void
check (const char *name, const char *buf, gsize len)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbMessageScan) cut = eb_message_scan (buf, len, config);
  g_autoptr (EbMessageScan) whole = eb_message_scan_unshadowed (buf, len, config);
  g_test_message ("%s: %u parts, %u references", name, whole->n_parts, whole->refs->len);
  g_assert_cmpint (cut->reason, ==, whole->reason);
  g_assert_cmpuint (cut->n_parts, ==, whole->n_parts);
  g_assert_cmpstr (cut->eol, ==, whole->eol);
  g_assert_cmpuint (cut->refs->len, ==, whole->refs->len);
  for (guint i = 0; i < cut->refs->len; i++) {
    const EbRef *a = g_ptr_array_index (cut->refs, i), *b = g_ptr_array_index (whole->refs, i);
    same_str ("path", a->path, b->path);
    g_assert_cmpuint (a->depth, ==, b->depth);
    g_assert_cmpint (a->is_root, ==, b->is_root);
    g_assert_cmpint (a->located, ==, b->located);
    g_assert_cmpuint (a->block_start, ==, b->block_start);
    g_assert_cmpuint (a->content_start, ==, b->content_start);
    g_assert_cmpuint (a->end, ==, b->end);
    g_assert_cmpint (a->walk_reason, ==, b->walk_reason);
    g_assert_cmpint (a->read_reason, ==, b->read_reason);
    same_str ("access-type", a->access_type, b->access_type);
    same_str ("URL", a->url, b->url);
    same_str ("inner type", a->inner_type, b->inner_type);
    g_assert_cmpint (a->alt, ==, b->alt);
    same_str ("alternative path", a->alt_path, b->alt_path);
    g_assert_cmpuint (a->alt_start, ==, b->alt_start);
    g_assert_cmpuint (a->alt_end, ==, b->alt_end);
    g_assert_cmpuint (a->boundaries->len, ==, b->boundaries->len);
    for (guint j = 0; j < a->boundaries->len; j++)
      same_str ("boundary", g_ptr_array_index (a->boundaries, j), g_ptr_array_index (b->boundaries, j));
  }
  compared++;
}

/* Turn "\n" of @tmpl into @eol. */
static GString *
with_eol (const char *tmpl, const char *eol)
{
  GString *s = g_string_new (NULL);
  for (const char *p = tmpl; *p; p++) {
    if (*p == '\n')
      g_string_append (s, eol);
    else
      g_string_append_c (s, *p);
  }
  return s;
}

static const char *crafted[] = {
  /* a folded URL, the field's last line right before the inner header's blank line */
  "From: a@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
  "Content-Type: message/external-body; access-type=URL;\n URL*0=\"data:,one-\";\n URL*1=\"two\"\n\n"
  "Content-Type: text/plain\n\n--b\nContent-Type: text/plain\n\nlast\n--b--\n",
  /* the field's last line right before a delimiter: no blank line, no inner header */
  "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
  "Content-Type: message/external-body; access-type=URL;\n\tURL=\"data:,x\"\n--b\n"
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,y\"\n\nContent-Type: text/plain\n\n--b--\n",
  /* the same at the end of the input, with and without a last line break */
  "MIME-Version: 1.0\nContent-Type: message/external-body; access-type=URL;\n URL=\"data:,end\"\n",
  "MIME-Version: 1.0\nContent-Type: message/external-body; access-type=URL;\n URL=\"data:,end\"",
  /* such a field (and its indented lines) in a text body, then a delimiter */
  "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\n"
  "Content-Type: message/external-body; access-type=URL;\n  URL=\"data:,quoted\"\n--b\n"
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,real\"\n\nContent-Type: text/plain\n\n--b--\n",
  /* odd case and blanks, a comment, no parameters, a longer subtype, a name with a blank */
  "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
  "content-TYPE:\t  MESSAGE/External-Body ;\n access-type=url; url=\"data:,case\"\n\nContent-Type: text/plain\n\n--b\n"
  "Content-Type: message/external-body(comment); access-type=URL; URL=\"data:,comment\"\n\nContent-Type: text/plain\n\n--b\n"
  "Content-Type: message/external-body\n\nContent-Type: text/plain\n\n--b\n"
  "Content-Type: message/external-bodyx; access-type=URL; URL=\"data:,x\"\n\nContent-Type: text/plain\n\n--b\n"
  "Content-Type : message/external-body; access-type=URL; URL=\"data:,y\"\n\nContent-Type: text/plain\n\n--b--\n",
  /* the field split before its value, and two Content-Type fields */
  "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
  "Content-Type:\n message/external-body; access-type=URL; URL=\"data:,next-line\"\n\nContent-Type: text/plain\n\n--b\n"
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,first\"\n"
  "Content-Type: text/plain\n\nContent-Type: text/plain\n\n--b--\n",
  /* a boundary parameter in an external-body field (GMime is not shown it) */
  "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
  "Content-Type: message/external-body; boundary=c; access-type=URL; URL=\"data:,bnd\"\n\n"
  "Content-Type: text/plain\n\n--c\nnot a part\n--b--\n",
  /* a field in a part's content ending in LF, the delimiter after it in CRLF
   * (GMime ends that content two bytes before the delimiter) */
  "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
  "Content-Type: message/external-body; access-type=x\n\nContent-Type: text/plain\n\n"
  "Content-Type: message/external-body; access-type=URL;\n\tURL=\"data:,in-content\"x\n--b\r\n"
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,after\"\n\nContent-Type: text/plain\n\n--b--\n",
  /* the last byte kept must not lengthen the subtype */
  "MIME-Version: 1.0\nContent-Type: message/external-body; access-type=URL; URL=\"data:,a; name=\"x\n\n"
  "Content-Type: text/plain\n\n",
  "MIME-Version: 1.0\nContent-Type: message/external-body\n access-type=URL; URL=\"data:,next\"\n\n"
  "Content-Type: text/plain\n\n",
  /* inside a forwarded message and an alternative, the fallback shape */
  "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: message/rfc822\n\n"
  "Subject: fwd\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=c\n\n--c\n"
  "Content-Type: text/plain\n\nsee the link\n--c\n"
  "Content-Type: message/external-body; access-type=URL;\n URL*0=\"data:,deep-\";\n URL*1=\"er\"\n\n"
  "Content-Type: text/plain\n\n--c--\n\n--b--\n",
};

static void
test_crafted (void)
{
  const char *eols[] = { "\n", "\r\n" };
  for (guint e = 0; e < G_N_ELEMENTS (eols); e++)
    for (guint i = 0; i < G_N_ELEMENTS (crafted); i++) {
      g_autoptr (GString) m = with_eol (crafted[i], eols[e]);
      g_autofree char *name = g_strdup_printf ("crafted %u%s", i, e ? " (CRLF)" : "");
      check (name, m->str, m->len);
    }
  /* a field of 300 KB, folded, beside the 64 KiB cut of long lines, and a
   * 200 KB unfolded one, each followed at once by a delimiter; a long text
   * field the same, its last line in LF before a CRLF delimiter */
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
                             "Content-Type: message/external-body; access-type=URL;\n URL*0=\"data:,\"");
  for (guint i = 1; i < 5000; i++)
    g_string_append_printf (s, ";\n URL*%u=\"%s\"", i, "0123456789abcdefghij0123456789abcdefghij");
  g_string_append (s, "\n--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,");
  for (guint i = 0; i < 5000; i++)
    g_string_append (s, "0123456789abcdefghij0123456789abcdefghij");
  g_string_append (s, "\"\n--b\nContent-Type: text/plain\nX-Long: x");
  for (guint i = 0; i < 3000; i++)
    g_string_append (s, "\n 0123456789abcdefghij0123456789abcdefghij");
  g_string_append (s, "\n--b\r\nContent-Type: text/plain\n\n    indented\n--b--\n");
  check ("long fields", s->str, s->len);
  g_string_free (s, TRUE);
}

static void
test_hostile (void)
{
  guint n = 0;
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    GString *m = cases[i].build ();
    if (affordable (cases[i].name, m->len)) {
      check (cases[i].name, m->str, m->len);
      n++;
    }
    g_string_free (m, TRUE);
  }
  for (guint i = 0; i < G_N_ELEMENTS (limits); i++)
    for (gint64 d = -1; d <= 1; d++) {
      GString *m = limits[i].build (limits[i].limit + d);
      if (affordable (limits[i].key, m->len)) {
        check (limits[i].key, m->str, m->len);
        n++;
      }
      g_string_free (m, TRUE);
    }
  g_assert_cmpuint (n, >=, TEST_UNDER_ASAN ? 20 : G_N_ELEMENTS (cases) + 3 * G_N_ELEMENTS (limits));
}

static void
test_corpus (void)
{
  g_autofree char *dir = g_test_build_filename (G_TEST_DIST, "corpus", NULL);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_assert_nonnull (d);
  guint n = 0;
  for (const char *f; (f = g_dir_read_name (d));) {
    if (!g_str_has_suffix (f, ".eml"))
      continue;
    g_autofree char *path = g_build_filename (dir, f, NULL);
    g_autofree char *data = NULL;
    gsize len = 0;
    g_assert_true (g_file_get_contents (path, &data, &len, NULL));
    check (f, data, len);
    n++;
  }
  g_assert_cmpuint (n, >, 10);
}

/* gen-corpus.py's messages, half of them with references (folded and long
 * data: URLs among them), in both line endings. */
static void
test_generated (void)
{
  g_autofree char *gen = g_test_build_filename (G_TEST_DIST, "bench", "gen-corpus.py", NULL);
  g_autofree char *tmp = g_dir_make_tmp ("eb-shadow-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (tmp, "box.mbox", NULL);
  g_autofree char *serve = g_build_filename (tmp, "serve", NULL);
  const char *count = TEST_UNDER_ASAN ? "60" : "300";
  const char *argv[] = { "python3", gen, "--seed", "7", "--count", count, "--ext-fraction", "0.5",
                         "--format", "mbox", "--out", out, "--serve-dir", serve, "--force", "-q", NULL };
  int status = 0;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
                               &status, &error));
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_autofree char *data = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (out, &data, &len, NULL));
  guint n = 0, with_refs = 0;
  for (gsize p = 0; p < len;) {   /* messages between From_ lines */
    const char *nl = memchr (data + p, '\n', len - p);
    gsize start = nl ? (gsize) (nl - data) + 1 : len, end = start;
    const char *next = g_strstr_len (data + start, (gssize) (len - start), "\nFrom ");
    end = next ? (gsize) (next - data) + 1 : len;
    for (guint e = 0; e < 2; e++) {
      g_autofree char *name = g_strdup_printf ("generated %u%s", n, e ? " (CRLF)" : "");
      if (e == 0) {
        check (name, data + start, end - start);
      } else {
        g_autofree char *one = g_strndup (data + start, end - start);
        g_autoptr (GString) crlf = with_eol (one, "\r\n");
        check (name, crlf->str, crlf->len);
      }
    }
    with_refs += eb_message_may_hold_external_body (data + start, end - start);
    n++;
    p = end;
  }
  g_assert_cmpuint (n, ==, (guint) atoi (count));
  g_assert_cmpuint (with_refs, >, n / 3);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", tmp);
  g_assert_cmpint (system (rm), ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  eb_init ();
  g_test_add_func ("/message-shadow/crafted", test_crafted);
  g_test_add_func ("/message-shadow/hostile", test_hostile);
  g_test_add_func ("/message-shadow/corpus", test_corpus);
  g_test_add_func ("/message-shadow/generated", test_generated);
  int rc = g_test_run ();
  g_test_message ("%u messages compared", compared);
  return rc;
}
