/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-message.c - the GMime walk: part paths, depth, located offsets checked
 * against the bytes, boundaries, walk limits, line endings and the pre-check. */
#include <string.h>
#include "eb-gmime.h"
#include "eb-message.h"
#include "test-msg.h"

static EbMessageScan *
scan_of (GByteArray *m, const EbConfig *config)
{
  return eb_message_scan ((const char *) m->data, m->len, config);
}

static const EbRef *
ref_at (const EbMessageScan *scan, guint i)
{
  g_assert_cmpuint (i, <, scan->refs->len);
  return g_ptr_array_index (scan->refs, i);
}

static gboolean
starts_with (GByteArray *m, gsize at, const char *s)
{
  gsize n = strlen (s);
  return at + n <= m->len && memcmp (m->data + at, s, n) == 0;
}

/* The offsets of a located reference, checked against the bytes: @outer starts
 * at block_start, @inner at content_start, and end is the end of the input or
 * just before the line break of the nearest boundary's delimiter. */
static void
assert_located (GByteArray *m, const EbRef *ref, const char *outer, const char *inner)
{
  g_assert_true (ref->located);
  g_assert_cmpuint (ref->block_start, <=, ref->content_start);
  g_assert_cmpuint (ref->content_start, <=, ref->end);
  g_assert_cmpuint (ref->end, <=, m->len);
  g_assert_true (starts_with (m, ref->block_start, outer));
  g_assert_true (ref->block_start == 0 || m->data[ref->block_start - 1] == '\n');
  g_assert_true (starts_with (m, ref->content_start, inner));
  /* the blank line that ends the header is just before content_start */
  g_assert_cmpuint (ref->content_start, >=, 1);
  g_assert_cmpint (m->data[ref->content_start - 1], ==, '\n');
  /* the header block the walk checked the offsets with is the one read:
   * exactly [block_start, content_start) */
  g_assert_nonnull (ref->outer);
  g_assert_cmpuint (ref->outer->start, ==, ref->block_start);
  g_assert_cmpuint (ref->outer->body, ==, ref->content_start);
  g_assert_cmpuint (ref->outer->fields->len, >, 0);
  if (ref->end == m->len)
    return;
  g_assert_cmpuint (ref->boundaries->len, >, 0);
  g_autofree char *delim = g_strdup_printf ("--%s", (const char *) g_ptr_array_index (ref->boundaries, 0));
  if (m->data[ref->end] == '\n') {
    g_assert_true (starts_with (m, ref->end + 1, delim));
  } else {
    g_assert_true (starts_with (m, ref->end, "\r\n"));
    g_assert_true (starts_with (m, ref->end + 2, delim));
  }
  /* the entity's last byte is not the line break's CR */
  g_assert_cmpint (m->data[ref->end - 1], !=, '\r');
}

static void
assert_bounds (const EbRef *ref, const char *const *want)
{
  guint n = g_strv_length ((char **) want);
  g_assert_cmpuint (ref->boundaries->len, ==, n);
  for (guint i = 0; i < n; i++)
    g_assert_cmpstr (g_ptr_array_index (ref->boundaries, i), ==, want[i]);
}

/* Four references: 2.1 inside a nested multipart, 3.1 the body of a
 * message/rfc822, 4 and 5 directly in the top multipart. */
static const char *TREE =
  "From: a@example.org\n"
  "Subject: tree\n"
  "MIME-Version: 1.0\n"
  "Content-Type: multipart/mixed; boundary=\"b1\"\n"
  "\n"
  "preamble\n"
  "--b1\n"
  "Content-Type: text/plain\n"
  "\n"
  "one\n"
  "--b1\n"
  "Content-Type: multipart/alternative; boundary=b2\n"
  "\n"
  "--b2\n"
  "Content-Type: message/external-body; access-type=URL; URL=\"http://h/2.1\"\n"
  "\n"
  "Content-Type: text/plain\n"
  "\n"
  "--b2\n"
  "Content-Type: text/html\n"
  "\n"
  "<p>two</p>\n"
  "--b2--\n"
  "--b1\n"
  "Content-Type: message/rfc822\n"
  "\n"
  "From: c@example.org\n"
  "Subject: inner\n"
  "Content-Type: message/external-body; access-type=URL; URL=\"http://h/3.1\"\n"
  "\n"
  "Content-Type: image/png\n"
  "\n"
  "--b1\n"
  "Content-Type: message/external-body; access-type=anon-ftp; site=s; name=n\n"
  "Content-Description: four\n"
  "\n"
  "Content-Type: text/plain\n"
  "Content-ID: <four@x>\n"
  "\n"
  "ignored body\n"
  "--b1\n"
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,5\"\n"
  "\n"
  "Content-Type: text/plain\n"
  "\n"
  "--b1--\n"
  "epilogue\n";

static void
check_tree (const char *eol)
{
  g_autoptr (GByteArray) m = test_msg_with_eol (TREE, eol);
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbMessageScan) scan = scan_of (m, config);
  g_assert_cmpint (scan->reason, ==, EB_REASON_RESOLVED);
  g_assert_cmpstr (scan->eol, ==, eol);
  /* root, 1, 2, 2.1, 2.2, 3, 3's body, 4, 5 */
  g_assert_cmpuint (scan->n_parts, ==, 9);
  g_assert_cmpuint (scan->refs->len, ==, 4);

  static const struct {
    const char *path;
    guint depth;
    gboolean is_root;
    const char *outer, *inner, *url, *bounds[3];
  } want[] = {
    { "2.1", 2, FALSE, "Content-Type: message/external-body; access-type=URL; URL=\"http://h/2.1\"",
      "Content-Type: text/plain", "http://h/2.1", { "b2", "b1", NULL } },
    { "3.1", 2, TRUE, "From: c@example.org", "Content-Type: image/png", "http://h/3.1",
      { "b1", NULL } },
    { "4", 1, FALSE, "Content-Type: message/external-body; access-type=anon-ftp",
      "Content-Type: text/plain", NULL, { "b1", NULL } },
    { "5", 1, FALSE, "Content-Type: message/external-body; access-type=URL; URL=\"data:,5\"",
      "Content-Type: text/plain", "data:,5", { "b1", NULL } },
  };
  for (guint i = 0; i < G_N_ELEMENTS (want); i++) {
    const EbRef *ref = ref_at (scan, i);
    g_test_message ("ref %u", i);
    g_assert_cmpstr (ref->path, ==, want[i].path);
    g_assert_cmpuint (ref->depth, ==, want[i].depth);
    g_assert_cmpint (ref->is_root, ==, want[i].is_root);
    g_assert_cmpint (ref->walk_reason, ==, EB_REASON_RESOLVED);
    g_assert_cmpint (ref->read_reason, ==, EB_REASON_RESOLVED);
    g_assert_cmpstr (ref->url, ==, want[i].url);
    assert_bounds (ref, want[i].bounds);
    assert_located (m, ref, want[i].outer, want[i].inner);
  }
  /* 4's content includes its ignored body; its end is before "--b1" */
  const EbRef *four = ref_at (scan, 2);
  g_autofree char *tail = g_strdup_printf ("ignored body%s--b1", eol);
  gsize tl = strlen ("ignored body");
  g_assert_true (starts_with (m, four->end - tl, tail));
  /* an empty phantom body: 2.1 ends right after the phantom header's blank line
   * minus the delimiter's line break */
  const EbRef *two = ref_at (scan, 0);
  g_autofree char *ph = g_strdup_printf ("Content-Type: text/plain%s", eol);
  g_assert_cmpuint (two->end, ==, two->content_start + strlen (ph));
}

static void
test_tree_lf (void)
{
  check_tree ("\n");
}

static void
test_tree_crlf (void)
{
  check_tree ("\r\n");
}

/* The body of a top-level message is part "1", is_root, starts at byte 0 and
 * ends at the end of the input. */
static void
test_top_level (void)
{
  const char *eols[] = { "\n", "\r\n" };
  for (guint e = 0; e < G_N_ELEMENTS (eols); e++) {
    g_autoptr (GByteArray) m = test_msg_with_eol (
      "From: a@example.org\n"
      "MIME-Version: 1.0\n"
      "Content-Type: message/external-body; access-type=URL; URL=\"data:,top\"\n"
      "\n"
      "Content-Type: text/plain\n"
      "\n", eols[e]);
    g_autoptr (EbConfig) config = eb_config_new ();
    g_autoptr (EbMessageScan) scan = scan_of (m, config);
    g_assert_cmpint (scan->reason, ==, EB_REASON_RESOLVED);
    g_assert_cmpuint (scan->n_parts, ==, 1);
    g_assert_cmpuint (scan->refs->len, ==, 1);
    const EbRef *ref = ref_at (scan, 0);
    g_assert_cmpstr (ref->path, ==, "1");
    g_assert_cmpuint (ref->depth, ==, 0);
    g_assert_true (ref->is_root);
    g_assert_cmpuint (ref->boundaries->len, ==, 0);
    g_assert_cmpuint (ref->block_start, ==, 0);
    g_assert_cmpuint (ref->end, ==, m->len);
    assert_located (m, ref, "From: a@example.org", "Content-Type: text/plain");
    g_assert_cmpstr (ref->url, ==, "data:,top");
  }
}

/* Mixed line endings: a CRLF message header, LF parts, a CRLF delimiter. */
static void
test_mixed_eol (void)
{
  const char *mixed =
    "From: a@example.org\r\n"
    "MIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=\"mx\"\r\n"
    "\r\n"
    "--mx\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,a\"\n"
    "\n"
    "Content-Type: text/plain\n"
    "\n"
    "body a\r\n"
    "--mx\r\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,b\"\r\n"
    "\r\n"
    "Content-Type: text/plain\n"
    "\n"
    "body b\n"
    "--mx--\n";
  g_autoptr (GByteArray) m = g_byte_array_new ();
  g_byte_array_append (m, (const guint8 *) mixed, (guint) strlen (mixed));
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbMessageScan) scan = scan_of (m, config);
  g_assert_cmpstr (scan->eol, ==, "\r\n");
  g_assert_cmpuint (scan->refs->len, ==, 2);
  const EbRef *a = ref_at (scan, 0), *b = ref_at (scan, 1);
  g_assert_cmpstr (a->path, ==, "1");
  g_assert_cmpstr (b->path, ==, "2");
  assert_located (m, a, "Content-Type: message/external-body; access-type=URL; URL=\"data:,a\"",
                  "Content-Type: text/plain");
  assert_located (m, b, "Content-Type: message/external-body; access-type=URL; URL=\"data:,b\"",
                  "Content-Type: text/plain");
  g_assert_true (starts_with (m, a->end, "\r\n--mx"));
  g_assert_true (starts_with (m, a->end - 6, "body a"));
  g_assert_true (starts_with (m, b->end, "\n--mx--"));
  g_assert_true (starts_with (m, b->end - 6, "body b"));
}

/* Walk limits, each with a small configuration value. */
static void
test_walk_limits (void)
{
  g_autoptr (GByteArray) m = test_msg_with_eol (TREE, "\n");

  g_autoptr (EbConfig) deep = eb_config_new ();
  deep->max_nesting_depth = 1;
  g_autoptr (EbMessageScan) s1 = scan_of (m, deep);
  g_assert_cmpint (s1->reason, ==, EB_REASON_RESOLVED);
  static const EbReason want_deep[] = { EB_REASON_TOO_DEEP, EB_REASON_TOO_DEEP,
                                        EB_REASON_RESOLVED, EB_REASON_RESOLVED };
  for (guint i = 0; i < G_N_ELEMENTS (want_deep); i++)
    g_assert_cmpint (ref_at (s1, i)->walk_reason, ==, want_deep[i]);

  g_autoptr (EbConfig) refs = eb_config_new ();
  refs->max_references = 2;
  g_autoptr (EbMessageScan) s2 = scan_of (m, refs);
  g_assert_cmpint (s2->reason, ==, EB_REASON_RESOLVED);
  static const EbReason want_refs[] = { EB_REASON_RESOLVED, EB_REASON_RESOLVED,
                                        EB_REASON_TOO_MANY_REFS, EB_REASON_TOO_MANY_REFS };
  g_assert_cmpuint (s2->refs->len, ==, 4);
  for (guint i = 0; i < G_N_ELEMENTS (want_refs); i++)
    g_assert_cmpint (ref_at (s2, i)->walk_reason, ==, want_refs[i]);

  /* max_parts 4: root, 1, 2, 2.1 are walked, the fifth entity stops the walk;
   * the one reference seen carries the message's reason */
  g_autoptr (EbConfig) parts = eb_config_new ();
  parts->max_parts = 4;
  g_autoptr (EbMessageScan) s3 = scan_of (m, parts);
  g_assert_cmpint (s3->reason, ==, EB_REASON_TOO_MANY_PARTS);
  g_assert_cmpuint (s3->n_parts, ==, 5);
  g_assert_cmpuint (s3->refs->len, ==, 1);
  g_assert_cmpstr (ref_at (s3, 0)->path, ==, "2.1");
  g_assert_cmpint (ref_at (s3, 0)->walk_reason, ==, EB_REASON_TOO_MANY_PARTS);

  /* exactly enough parts: no limit */
  parts->max_parts = 9;
  g_autoptr (EbMessageScan) s4 = scan_of (m, parts);
  g_assert_cmpint (s4->reason, ==, EB_REASON_RESOLVED);
  g_assert_cmpuint (s4->refs->len, ==, 4);
}

/* References inside multipart/signed and multipart/encrypted are left: signed. */
static void
test_sealed (void)
{
  const char *types[] = {
    "multipart/signed; protocol=\"application/pgp-signature\"; micalg=pgp-sha256",
    "multipart/encrypted; protocol=\"application/pgp-encrypted\"",
  };
  for (guint t = 0; t < G_N_ELEMENTS (types); t++) {
    g_autofree char *tmpl = g_strdup_printf (
      "From: a@example.org\n"
      "MIME-Version: 1.0\n"
      "Content-Type: multipart/mixed; boundary=out\n"
      "\n"
      "--out\n"
      "Content-Type: %s; boundary=sig\n"
      "\n"
      "--sig\n"
      "Content-Type: message/external-body; access-type=URL; URL=\"data:,in\"\n"
      "\n"
      "Content-Type: text/plain\n"
      "\n"
      "--sig\n"
      "Content-Type: application/octet-stream\n"
      "\n"
      "xyz\n"
      "--sig--\n"
      "--out\n"
      "Content-Type: message/external-body; access-type=URL; URL=\"data:,out\"\n"
      "\n"
      "Content-Type: text/plain\n"
      "\n"
      "--out--\n", types[t]);
    g_autoptr (GByteArray) m = test_msg_with_eol (tmpl, "\n");
    g_autoptr (EbConfig) config = eb_config_new ();
    g_autoptr (EbMessageScan) scan = scan_of (m, config);
    g_assert_cmpuint (scan->refs->len, ==, 2);
    g_assert_cmpstr (ref_at (scan, 0)->path, ==, "1.1");
    g_assert_cmpint (ref_at (scan, 0)->walk_reason, ==, EB_REASON_SIGNED);
    g_assert_cmpstr (ref_at (scan, 0)->url, ==, "data:,in");
    g_assert_cmpstr (ref_at (scan, 1)->path, ==, "2");
    g_assert_cmpint (ref_at (scan, 1)->walk_reason, ==, EB_REASON_RESOLVED);
  }
}

/* A multipart whose boundary is not RFC 2046 syntax is a leaf. */
static void
test_bad_boundary (void)
{
  const char *bounds[] = { "\"b@d\"", "\"ends in space \"", "\"\"",
                           "\"12345678901234567890123456789012345678901234567890123456789012345678901\"" };
  for (guint i = 0; i < G_N_ELEMENTS (bounds); i++) {
    g_autofree char *tmpl = g_strdup_printf (
      "From: a@example.org\n"
      "MIME-Version: 1.0\n"
      "Content-Type: multipart/mixed; boundary=%s\n"
      "\n"
      "--%.*s\n"
      "Content-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n"
      "\n"
      "Content-Type: text/plain\n"
      "\n"
      "--%.*s--\n", bounds[i],
      (int) strlen (bounds[i]) - 2, bounds[i] + 1, (int) strlen (bounds[i]) - 2, bounds[i] + 1);
    g_autoptr (GByteArray) m = test_msg_with_eol (tmpl, "\n");
    g_autoptr (EbConfig) config = eb_config_new ();
    g_autoptr (EbMessageScan) scan = scan_of (m, config);
    g_test_message ("boundary %s", bounds[i]);
    g_assert_cmpint (scan->reason, ==, EB_REASON_RESOLVED);
    g_assert_cmpuint (scan->refs->len, ==, 0);
    g_assert_cmpuint (scan->n_parts, ==, 1);
  }
  /* the longest valid boundary (70 characters) is walked */
  const char *b70 = "1234567890123456789012345678901234567890123456789012345678901234567890";
  g_autofree char *tmpl = g_strdup_printf (
    "MIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=\"%s\"\n"
    "\n"
    "--%s\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n"
    "\n"
    "Content-Type: text/plain\n"
    "\n"
    "--%s--\n", b70, b70, b70);
  g_autoptr (GByteArray) m = test_msg_with_eol (tmpl, "\n");
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (EbMessageScan) scan = scan_of (m, config);
  g_assert_cmpuint (scan->refs->len, ==, 1);
  const char *want[] = { b70, NULL };
  assert_bounds (ref_at (scan, 0), want);
}

/* The pre-check. */
static void
test_precheck (void)
{
  static const struct {
    const char *s;
    gssize len;   /* -1: strlen */
    gboolean want;
  } cases[] = {
    { "external-body", -1, TRUE },
    { "EXTERNAL-BODY", -1, TRUE },
    { "Content-Type: Message/External-Body; x", -1, TRUE },
    { "external-body at the start", -1, TRUE },
    { "at the end: message/external-body", -1, TRUE },
    { "ExTeRnAl-BoDy", -1, TRUE },
    { "external-bod", -1, FALSE },          /* shorter than the pattern */
    { "external-body", 12, FALSE },         /* the buffer ends before the 'y' */
    { "xexternal-body", 13, FALSE },
    { "external body", -1, FALSE },
    { "externalbody", -1, FALSE },
    { "external-\n body", -1, FALSE },      /* a type cannot be folded */
    { "external_body", -1, FALSE },
    { "--------------", -1, FALSE },
    { "", 0, FALSE },
    { "message/external-boda message/external-bodyy", -1, TRUE },
    { "xternal-body external-bod", -1, FALSE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    gsize len = cases[i].len < 0 ? strlen (cases[i].s) : (gsize) cases[i].len;
    g_test_message ("pre-check \"%s\" (%" G_GSIZE_FORMAT ")", cases[i].s, len);
    g_assert_cmpint (eb_message_may_hold_external_body (cases[i].s, len), ==, cases[i].want);
  }
  /* a buffer with no NUL after it: the match must lie inside */
  char exact[13];
  memcpy (exact, "external-body", 13);
  g_assert_true (eb_message_may_hold_external_body (exact, 13));
  g_assert_false (eb_message_may_hold_external_body (exact + 1, 12));
}

/* Not a message at all: unparseable, or no reference. */
static void
test_no_refs (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GByteArray) m = test_msg_with_eol ("Subject: plain\n\nhello\n", "\n");
  g_autoptr (EbMessageScan) scan = scan_of (m, config);
  g_assert_cmpint (scan->reason, ==, EB_REASON_RESOLVED);
  g_assert_cmpuint (scan->refs->len, ==, 0);
  g_assert_cmpuint (scan->n_parts, ==, 1);
  g_assert_cmpstr (scan->eol, ==, "\n");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_mime_init ();
  g_test_add_func ("/message/tree/lf", test_tree_lf);
  g_test_add_func ("/message/tree/crlf", test_tree_crlf);
  g_test_add_func ("/message/top-level", test_top_level);
  g_test_add_func ("/message/mixed-eol", test_mixed_eol);
  g_test_add_func ("/message/walk-limits", test_walk_limits);
  g_test_add_func ("/message/sealed", test_sealed);
  g_test_add_func ("/message/bad-boundary", test_bad_boundary);
  g_test_add_func ("/message/precheck", test_precheck);
  g_test_add_func ("/message/no-refs", test_no_refs);
  return g_test_run ();
}
