/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-fallback.c - the fallback shape `externalize --fallback` writes (issue 20):
 * a multipart/alternative of a text/plain part with the link and the
 * message/external-body reference. When the reference resolves, the whole
 * alternative is replaced by the restored part, which must be the same part
 * as restoring the bare reference gives: every case is compared byte for byte
 * with the same message holding the bare reference instead. Any other shape is
 * handled as before (the reference alone replaced); an unresolved reference
 * changes nothing. data: URLs only: no server. */
#include <gio/gio.h>
#include "test-mem.h"
#include "eb-gmime.h"
#include <string.h>
#include "eb-plan-private.h"
#include "eb-inspect.h"
#include "eb-digest.h"
#include "test-edits.h"
#include "test-msg.h"
#include "test-run.h"

/* The reference as externalize writes it: 00 01 02 ff, MD5 BBbau...; the
 * phantom header as externalize writes it. */
#define REF_PART \
  "Content-Type: message/external-body; access-type=URL;\n" \
  "\tURL=\"data:application/octet-stream;base64,AAEC/w==\"; size=4\n" \
  "\n" \
  "Content-Type: application/octet-stream; name=\"r.bin\"\n" \
  "Content-ID: <r@x>\n" \
  "Content-Disposition: attachment; filename=\"r.bin\"\n" \
  "Content-MD5: BBbauBmIczOvgx+MdlrCrg==\n" \
  "Content-Transfer-Encoding: binary\n" \
  "\n"

/* The text/plain part before it. */
#define TEXT_PART \
  "Content-Type: text/plain; charset=us-ascii\n" \
  "\n" \
  "The attachment \"r.bin\" (application/octet-stream, 4 bytes) is stored at\n" \
  "data:application/octet-stream;base64,AAEC/w==\n"

/* The multipart/alternative body (after its header and blank line). */
#define ALT_BODY \
  "--" ALT_B "\n" \
  TEXT_PART \
  "--" ALT_B "\n" \
  REF_PART \
  "--" ALT_B "--\n"

/* The mark of extbody's own alternative (EB_FALLBACK_FIELD): its boundary's
 * form, and the field with the SHA-256 of the text part's notice (TEXT_PART's
 * text, LF, without its final line break: computed by Python's hashlib). */
#define ALT_B "=_extbody_3f2a5b6c7d8e9f0a1b2c3d4e"
#define NOTICE_SHA "6653319eee312a9856efa82c5ccadc1503fc3fe758b92e4fe3877e062b648596"
#define ALT_MARK "X-Extbody-Fallback: notice-sha256=" NOTICE_SHA "\n"
#define ALT_TYPE "Content-Type: multipart/alternative; boundary=\"" ALT_B "\"\n" ALT_MARK

/* Parse @out with GMime: the leaf whose Content-ID is @cid (anywhere, inside
 * message/rfc822 too), its type and decoded content; *@under_alt is set when a
 * multipart/alternative is one of its ancestors. */
static GBytes *
find_part (GByteArray *out, const char *cid, char **type, gboolean *under_alt)
{
  g_autoptr (GMimeStream) st = g_mime_stream_mem_new_with_buffer ((const char *) out->data, out->len);
  g_autoptr (GMimeParser) p = g_mime_parser_new_with_stream (st);
  g_autoptr (GMimeMessage) m = g_mime_parser_construct_message (p, NULL);
  g_assert_nonnull (m);
  /* an explicit stack of (object, under an alternative) */
  g_autoptr (GPtrArray) stack = g_ptr_array_new ();
  g_autoptr (GArray) alt = g_array_new (FALSE, FALSE, sizeof (gboolean));
  gboolean no = FALSE;
  g_ptr_array_add (stack, g_mime_message_get_mime_part (m));
  g_array_append_val (alt, no);
  GMimeObject *found = NULL;
  while (stack->len && !found) {
    GMimeObject *o = g_ptr_array_steal_index (stack, stack->len - 1);
    gboolean a = g_array_index (alt, gboolean, alt->len - 1);
    g_array_set_size (alt, alt->len - 1);
    if (GMIME_IS_MULTIPART (o)) {
      gboolean ia = a || g_mime_content_type_is_type (g_mime_object_get_content_type (o),
                                                      "multipart", "alternative");
      for (int i = g_mime_multipart_get_count (GMIME_MULTIPART (o)); i-- > 0;) {
        g_ptr_array_add (stack, g_mime_multipart_get_part (GMIME_MULTIPART (o), i));
        g_array_append_val (alt, ia);
      }
    } else if (GMIME_IS_MESSAGE_PART (o)) {
      GMimeMessage *inner = g_mime_message_part_get_message (GMIME_MESSAGE_PART (o));
      if (inner) {
        g_ptr_array_add (stack, g_mime_message_get_mime_part (inner));
        g_array_append_val (alt, a);
      }
    } else if (GMIME_IS_PART (o) && g_strcmp0 (g_mime_object_get_content_id (o), cid) == 0) {
      found = o;
      *under_alt = a;
    }
  }
  g_assert_nonnull (found);
  *type = g_mime_content_type_get_mime_type (g_mime_object_get_content_type (found));
  GMimeDataWrapper *dw = g_mime_part_get_content (GMIME_PART (found));
  g_autoptr (GMimeStream) mem = g_mime_stream_mem_new ();
  g_mime_data_wrapper_write_to_stream (dw, mem);
  GByteArray *ba = g_mime_stream_mem_get_byte_array (GMIME_STREAM_MEM (mem));
  return g_bytes_new (ba->data, ba->len);
}

/* The restored part: application/octet-stream, 00 01 02 ff, no alternative
 * left around it. */
static void
assert_restored (GByteArray *out)
{
  g_autofree char *type = NULL;
  gboolean under_alt = TRUE;
  g_autoptr (GBytes) body = find_part (out, "r@x", &type, &under_alt);
  g_assert_cmpstr (type, ==, "application/octet-stream");
  g_assert_cmpmem (g_bytes_get_data (body, NULL), g_bytes_get_size (body), "\x00\x01\x02\xff", 4);
  g_assert_false (under_alt);
  g_assert_null (g_strstr_len ((const char *) out->data, out->len, "multipart/alternative"));
  g_assert_null (g_strstr_len ((const char *) out->data, out->len, "The attachment"));
}

typedef struct {
  const char *name;
  const char *fallback;   /* the message with the fallback shape */
  const char *bare;       /* the same with the bare reference in its place */
  const char *alt_path;   /* the alternative's path */
  gboolean    alt_root;
} ShapeCase;

static const ShapeCase shape_cases[] = {
  { "mixed",
    ("From: a@example.org\nTo: b@example.org\nSubject: fallback\nMIME-Version: 1.0\n"
     "Content-Type: multipart/mixed; boundary=\"outer\"\n\n"
     "preamble\n--outer\nContent-Type: text/plain\n\nHello.\n"
     "--outer\n" ALT_TYPE "\n" ALT_BODY
     "--outer\nContent-Type: text/plain\n\nafter\n--outer--\nepilogue\n"),
    ("From: a@example.org\nTo: b@example.org\nSubject: fallback\nMIME-Version: 1.0\n"
     "Content-Type: multipart/mixed; boundary=\"outer\"\n\n"
     "preamble\n--outer\nContent-Type: text/plain\n\nHello.\n"
     "--outer\n" REF_PART
     "--outer\nContent-Type: text/plain\n\nafter\n--outer--\nepilogue\n"),
    "2", FALSE },
  /* the alternative is the last part, with a preamble and an epilogue of its own */
  { "mixed-last",
    ("From: a@example.org\nMIME-Version: 1.0\n"
     "Content-Type: multipart/mixed; boundary=\"outer\"\n\n"
     "--outer\nContent-Type: text/plain\n\nHello.\n"
     "--outer\n" ALT_TYPE "\nalt preamble\n" ALT_BODY "alt epilogue\n\n"
     "--outer--\n"),
    ("From: a@example.org\nMIME-Version: 1.0\n"
     "Content-Type: multipart/mixed; boundary=\"outer\"\n\n"
     "--outer\nContent-Type: text/plain\n\nHello.\n"
     "--outer\n" REF_PART
     "--outer--\n"),
    "2", FALSE },
  /* the body of the message itself: RFC 2046 5.2.3.7 merge with its header */
  { "body",
    ("Received: from x by y; Sat, 21 Nov 2026 10:00:00 +0000\n"
     "From: a@example.org\nSubject: top\nMIME-Version: 1.0\n" ALT_TYPE
     "X-After: kept\n\n" ALT_BODY),
    ("Received: from x by y; Sat, 21 Nov 2026 10:00:00 +0000\n"
     "From: a@example.org\nSubject: top\nMIME-Version: 1.0\n"
     "X-After: kept\n" REF_PART),
    "", TRUE },
  /* inside a forwarded message/rfc822 */
  { "rfc822",
    ("From: a@example.org\nMIME-Version: 1.0\n"
     "Content-Type: multipart/mixed; boundary=outer\n\n"
     "--outer\nContent-Type: text/plain\n\nsee below\n"
     "--outer\nContent-Type: message/rfc822\n\n"
     "From: c@example.org\nSubject: fwd\nMIME-Version: 1.0\n" ALT_TYPE "\n" ALT_BODY
     "\n--outer--\n"),
    ("From: a@example.org\nMIME-Version: 1.0\n"
     "Content-Type: multipart/mixed; boundary=outer\n\n"
     "--outer\nContent-Type: text/plain\n\nsee below\n"
     "--outer\nContent-Type: message/rfc822\n\n"
     "From: c@example.org\nSubject: fwd\nMIME-Version: 1.0\n" REF_PART
     "--outer--\n"),
    "2", TRUE },
};

/* Restoring the fallback shape gives exactly what restoring the bare reference
 * gives: same bytes (header, data, and everything around). */
static void
test_shape (gconstpointer data)
{
  const ShapeCase *c = data;
  for (guint e = 0; e < 2; e++) {
    const char *eol = e ? "\r\n" : "\n";
    g_autoptr (EbConfig) config = eb_config_new ();
    g_autoptr (GByteArray) in = test_msg_with_eol (c->fallback, eol);
    g_autoptr (GByteArray) bare = test_msg_with_eol (c->bare, eol);
    g_auto (TestRun) r = { 0 };
    g_auto (TestRun) b = { 0 };
    test_run_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
    test_run_rewrite (bare, config, EB_REWRITE_DEFAULT, &b);
    g_assert_cmpuint (r.result->n_resolved, ==, 1);
    g_assert_cmpuint (b.result->n_resolved, ==, 1);
    const EbRef *ref = g_ptr_array_index (r.result->scan->refs, 0);
    g_assert_true (ref->alt);
    g_assert_cmpstr (ref->alt_path, ==, c->alt_path);
    g_assert_cmpint (ref->alt_is_root, ==, c->alt_root);
    g_assert_false (((const EbRef *) g_ptr_array_index (b.result->scan->refs, 0))->alt);
    /* the same message as the bare reference restored (the alternative's
     * preamble and epilogue are inside what is replaced) */
    g_assert_cmpmem (r.out->data, r.out->len, b.out->data, b.out->len);
    assert_restored (r.out);
    /* every byte outside the alternative is the input's */
    g_assert_cmpmem (r.out->data, ref->alt_start, in->data, ref->alt_start);
    gsize tail = in->len - ref->alt_end;
    g_assert_cmpmem (r.out->data + r.out->len - tail, tail, in->data + ref->alt_end, tail);
    if (!c->alt_root) {
      g_assert_true (test_mem_has_prefix (in->data + ref->alt_start, in->len - ref->alt_start, "Content-Type: multipart/alternative"));
      g_assert_true (test_mem_has_prefix (in->data + ref->alt_end, in->len - ref->alt_end, eol));
      g_assert_true (test_mem_has_prefix (in->data + ref->alt_end + strlen (eol), in->len - ref->alt_end - strlen (eol), "--outer"));
    } else if (*c->alt_path) {
      g_assert_true (test_mem_has_prefix (in->data + ref->alt_start, in->len - ref->alt_start, "From: c@example.org"));
    } else {
      g_assert_cmpuint (ref->alt_start, ==, 0);
      g_assert_cmpuint (ref->alt_end, ==, in->len);
    }
    /* the line ending is the message's */
    if (e == 0)
      g_assert_null (memchr (r.out->data, '\r', r.out->len));
    else
      for (guint i = 1; i < r.out->len; i++)
        if (r.out->data[i] == '\n')
          g_assert_cmpint (r.out->data[i - 1], ==, '\r');
    /* the report line and the JSON name the alternative replaced */
    g_autofree char *line = eb_inspect_report_line (r.result, 0);
    g_autofree char *bline = eb_inspect_report_line (b.result, 0);
    g_autofree char *want = *c->alt_path
                            ? g_strdup_printf ("%s, replacing multipart/alternative at part %s", bline, c->alt_path)
                            : g_strdup_printf ("%s, replacing the multipart/alternative message body", bline);
    g_autofree char *bpath = g_strdup_printf ("part %s:", ((const EbRef *) g_ptr_array_index (b.result->scan->refs, 0))->path);
    g_autofree char *rpath = g_strdup_printf ("part %s:", ref->path);
    g_autofree char *want2 = g_strconcat (rpath, want + strlen (bpath), NULL);
    g_assert_cmpstr (line, ==, want2);
    g_autofree char *json = eb_inspect_json (NULL, -1, NULL, r.result, 0);
    g_autofree char *bjson = eb_inspect_json (NULL, -1, NULL, b.result, 0);
    g_autofree char *member = g_strdup_printf ("\"replaced_part\":\"%s\"", c->alt_path);
    g_assert_nonnull (strstr (json, member));
    g_assert_null (strstr (bjson, "replaced_part"));
  }
}

/* The alternative's own fields other than Content-* go with the restored part;
 * its Content-* fields do not. */
static void
test_alt_fields (void)
{
  const char *m =
    "From: a@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=outer\n\n"
    "--outer\n" ALT_TYPE "X-Alt: kept\nContent-Description: the alternative\n"
    "Content-Location: http://example.org/r.bin\nContent-Language: en\n\n" ALT_BODY
    "--outer--\n";
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GByteArray) in = test_msg_with_eol (m, "\n");
  g_auto (TestRun) r = { 0 };
  test_run_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  g_assert_cmpuint (r.result->n_resolved, ==, 1);
  g_autofree char *out = g_strndup ((const char *) r.out->data, r.out->len);
  g_assert_nonnull (strstr (out, "--outer\nX-Alt: kept\nContent-Type: application/octet-stream; name=\"r.bin\"\n"));
  g_assert_null (strstr (out, "the alternative"));
  /* externalize leaves the part's other content fields on the alternative:
   * they come back (issue 25) */
  g_assert_nonnull (strstr (out, "\nContent-Location: http://example.org/r.bin\n"));
  g_assert_nonnull (strstr (out, "\nContent-Language: en\n"));
  g_assert_null (strstr (out, EB_FALLBACK_FIELD));
  assert_restored (r.out);
}

/* Not the fallback shape: only the reference is replaced, as before. */
typedef struct {
  const char *name;
  const char *msg;
  const char *kept;   /* still in the output */
} OtherCase;

static const OtherCase other_cases[] = {
  { "three-parts",
    ("From: a@x\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=alt\n\n"
     "--alt\n" TEXT_PART "--alt\nContent-Type: text/html\n\n<p>link</p>\n--alt\n" REF_PART
     "--alt--\n"),
    "<p>link</p>" },
  { "first-html",
    ("From: a@x\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=outer\n\n"
     "--outer\nContent-Type: multipart/alternative; boundary=alt\n\n"
     "--alt\nContent-Type: text/html\n\n<p>link</p>\n--alt\n" REF_PART "--alt--\n--outer--\n"),
    "<p>link</p>" },
  { "reference-first",
    ("From: a@x\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=alt\n\n"
     "--alt\n" REF_PART "--alt\n" TEXT_PART "--alt--\n"),
    "The attachment" },
  { "mixed-not-alternative",
    ("From: a@x\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=alt\n\n"
     "--alt\n" TEXT_PART "--alt\n" REF_PART "--alt--\n"),
    "The attachment" },
  /* issue 25: a person's alternative of their own words and a reference: the
   * words are kept whatever the shape (no mark of extbody's) */
  { "person-words",
    ("From: a@x\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=\"zz\"\n\n"
     "--zz\nContent-Type: text/plain\n\nThe words a person wrote.\n--zz\n" REF_PART "--zz--\n"),
    "The words a person wrote." },
  { "person-words-in-mixed",
    ("From: a@x\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=outer\n\n"
     "--outer\nContent-Type: multipart/alternative; boundary=\"zz\"\n\n"
     "--zz\nContent-Type: text/plain\n\nThe words a person wrote.\n--zz\n" REF_PART "--zz--\n"
     "--outer--\n"),
    "The words a person wrote." },
  /* extbody's boundary form, but no mark field */
  { "boundary-without-field",
    ("From: a@x\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=\"" ALT_B "\"\n\n"
     ALT_BODY),
    "The attachment" },
  /* the mark field, but another boundary */
  { "field-without-boundary",
    ("From: a@x\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=\"=_extbody_3f2a\"\n"
     ALT_MARK "\n--=_extbody_3f2a\n" TEXT_PART "--=_extbody_3f2a\n" REF_PART "--=_extbody_3f2a--\n"),
    "The attachment" },
  /* the mark whole, but the text is not the notice it names (a person wrote
   * in it) */
  { "text-not-the-notice",
    ("From: a@x\nMIME-Version: 1.0\n" ALT_TYPE "\n--" ALT_B "\n" TEXT_PART "and a word of mine\n--" ALT_B "\n"
     REF_PART "--" ALT_B "--\n"),
    "and a word of mine" },
  { "person-words-marked",
    ("From: a@x\nMIME-Version: 1.0\n" ALT_TYPE "\n--" ALT_B "\n"
     "Content-Type: text/plain\n\nThe words a person wrote.\n--" ALT_B "\n" REF_PART "--" ALT_B "--\n"),
    "The words a person wrote." },
  /* the field twice */
  { "field-twice",
    ("From: a@x\nMIME-Version: 1.0\n" ALT_TYPE ALT_MARK "\n" ALT_BODY),
    "The attachment" },
  /* a digest that is no digest */
  { "field-malformed",
    ("From: a@x\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=\"" ALT_B "\"\n"
     "X-Extbody-Fallback: notice-sha256=" NOTICE_SHA "0\n\n" ALT_BODY),
    "The attachment" },
  /* the alternative's close delimiter is missing: GMime ends it at the
   * enclosing one; what it spans is not certain, so the reference alone */
  { "no-close-delimiter",
    ("From: a@x\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=outer\n\n"
     "--outer\nContent-Type: multipart/alternative; boundary=alt\n\n"
     "--alt\n" TEXT_PART "--alt\n" REF_PART "--outer\nContent-Type: text/plain\n\nafter\n--outer--\n"),
    "The attachment" },
};

static void
test_other (gconstpointer data)
{
  const OtherCase *c = data;
  for (guint e = 0; e < 2; e++) {
    g_autoptr (EbConfig) config = eb_config_new ();
    g_autoptr (GByteArray) in = test_msg_with_eol (c->msg, e ? "\r\n" : "\n");
    g_auto (TestRun) r = { 0 };
    test_run_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
    g_assert_cmpuint (r.result->n_resolved, ==, 1);
    const EbRef *ref = g_ptr_array_index (r.result->scan->refs, 0);
    g_assert_false (ref->alt);
    g_assert_nonnull (g_strstr_len ((const char *) r.out->data, r.out->len, c->kept));
    /* the reference alone replaced: everything around it is the input's */
    g_assert_cmpmem (r.out->data, ref->block_start, in->data, ref->block_start);
    gsize tail = in->len - ref->end;
    g_assert_cmpmem (r.out->data + r.out->len - tail, tail, in->data + ref->end, tail);
    g_autofree char *type = NULL;
    gboolean under_alt = FALSE;
    g_autoptr (GBytes) body = find_part (r.out, "r@x", &type, &under_alt);
    g_assert_cmpmem (g_bytes_get_data (body, NULL), g_bytes_get_size (body), "\x00\x01\x02\xff", 4);
    g_autofree char *line = eb_inspect_report_line (r.result, 0);
    g_assert_null (strstr (line, "replacing"));
  }
}

/* A reference in the fallback shape that does not resolve: nothing changes. */
static const char *unresolved_msgs[] = {
  /* fetching is off */
  ("From: a@x\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=outer\n\n"
   "--outer\n" ALT_TYPE "\n--" ALT_B "\n" TEXT_PART "--" ALT_B "\n"
   "Content-Type: message/external-body; access-type=URL;\n\tURL=\"http://files.example/x/3f2a\"; size=4\n\n"
   "Content-Type: application/octet-stream\nContent-Transfer-Encoding: binary\n\n"
   "--" ALT_B "--\n--outer--\n"),
  /* the data disagrees with the Content-MD5 */
  ("From: a@x\nMIME-Version: 1.0\n" ALT_TYPE "\n--" ALT_B "\n" TEXT_PART "--" ALT_B "\n"
   "Content-Type: message/external-body; access-type=URL; URL=\"data:application/octet-stream;base64,AAEC/g==\"\n\n"
   "Content-Type: application/octet-stream\nContent-MD5: BBbauBmIczOvgx+MdlrCrg==\n"
   "Content-Transfer-Encoding: binary\n\n--" ALT_B "--\n"),
};

static void
test_unresolved (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (unresolved_msgs); i++)
    for (guint e = 0; e < 2; e++) {
      g_autoptr (EbConfig) config = eb_config_new ();
      g_autoptr (GByteArray) in = test_msg_with_eol (unresolved_msgs[i], e ? "\r\n" : "\n");
      g_auto (TestRun) r = { 0 };
      test_run_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
      g_assert_cmpuint (r.result->scan->refs->len, ==, 1);
      g_assert_true (((const EbRef *) g_ptr_array_index (r.result->scan->refs, 0))->alt);
      g_assert_cmpuint (r.result->n_resolved, ==, 0);
      g_assert_false (r.result->changed);
      g_assert_cmpmem (r.out->data, r.out->len, in->data, in->len);
    }
}

/* Two attachments externalized with --fallback in one message: both
 * alternatives replaced, nothing overlapping, the rest as it was. */
static void
test_two (void)
{
  const char *m =
    "From: a@x\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=outer\n\n"
    "--outer\nContent-Type: text/plain\n\nHello.\n"
    "--outer\n" ALT_TYPE "\n" ALT_BODY
    "--outer\nContent-Type: multipart/alternative; boundary=\"1=_extbody_000000000000000000000002\"\n"
    "X-Extbody-Fallback: notice-sha256=066085a464c84cc7b1517dd07b6004b4808b91236491eebf645e6a6b95436d38\n\n"
    "--1=_extbody_000000000000000000000002\nContent-Type: text/plain\nContent-Transfer-Encoding: quoted-printable\n\n"
    "the sec=\nond\n--1=_extbody_000000000000000000000002\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:text/plain,second%0A\"\n\n"
    "Content-Type: text/plain\nContent-ID: <s@x>\nContent-Disposition: attachment\n\n"
    "--1=_extbody_000000000000000000000002--\n--outer--\n";
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GByteArray) in = test_msg_with_eol (m, "\r\n");
  g_auto (TestRun) r = { 0 };
  test_run_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  g_assert_cmpuint (r.result->n_resolved, ==, 2);
  const EbRef *a = g_ptr_array_index (r.result->scan->refs, 0);
  const EbRef *b = g_ptr_array_index (r.result->scan->refs, 1);
  g_assert_true (a->alt && b->alt);
  g_assert_cmpuint (a->alt_end, <, b->alt_start);
  assert_restored (r.out);
  g_autofree char *type = NULL;
  gboolean under_alt = TRUE;
  g_autoptr (GBytes) body = find_part (r.out, "s@x", &type, &under_alt);
  g_assert_cmpstr (type, ==, "text/plain");
  g_assert_false (under_alt);
  g_assert_cmpmem (g_bytes_get_data (body, NULL), g_bytes_get_size (body), "second\r\n", 8);
  g_assert_nonnull (g_strstr_len ((const char *) r.out->data, r.out->len, "\r\n\r\nHello.\r\n--outer\r\n"));
  g_autofree char *out = g_strndup ((const char *) r.out->data, r.out->len);
  g_assert_true (g_str_has_suffix (out, "\r\n--outer--\r\n"));
}

/* ---- the milter's header edits for the body of the message ---------------- */

/* As the milter applies them: the edits turn the message header into the
 * header eb_plan_write() writes, and eb_plan_write_body() writes the
 * rest. With forged trace fields, which are removed. */
static void
test_header_edits (gconstpointer eolp)
{
  const char *tmpl =
    "X-Extbody: resolved 9 of 9\nFrom: a@x\nX-Extbody-Resolved: forged\nSubject: s\nMIME-Version: 1.0\n"
    ALT_TYPE "Content-Description: the alternative\n\n" ALT_BODY;
  g_autoptr (GByteArray) in = test_msg_with_eol (tmpl, eolp);
  const char *m = (const char *) in->data;
  gsize len = in->len;
  g_autoptr (EbConfig) config = eb_config_new ();
  for (guint ff = 0; ff < 2; ff++) {
    EbRewriteFlags flags = EB_REWRITE_STRIP_TRACE | (ff ? EB_REWRITE_FILTER_FIELD : 0);
    g_autoptr (EbPlan) r = eb_rewrite_plan (m, len, config, NULL, flags);
    g_assert_cmpuint (r->n_resolved, ==, 1);
    g_assert_true (((const EbRef *) g_ptr_array_index (r->scan->refs, 0))->alt);
    g_autoptr (GOutputStream) o = g_memory_output_stream_new_resizable ();
    g_assert_true (eb_plan_write (r, o, NULL));
    g_output_stream_close (o, NULL, NULL);
    const char *want = g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (o));
    gsize want_len = g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (o));
    g_autofree char *ws = g_strndup (want, want_len);
    /* the header written: the message's own fields less the forged ones, then
     * the restored part's */
    g_autofree char *head = g_strjoinv (eolp, (char *[]) {
      "From: a@x", "Subject: s", "MIME-Version: 1.0",
      "Content-Type: application/octet-stream; name=\"r.bin\"", NULL });
    g_assert_true (g_str_has_prefix (ws, head));
    g_assert_null (strstr (ws, "forged"));
    g_assert_null (strstr (ws, "the alternative"));
    g_assert_null (strstr (ws, "multipart/alternative"));
    g_assert_true ((strstr (ws, "X-Extbody: resolved 1 of 1") != NULL) == (ff == 1));
    /* the milter adds the X-Extbody field itself (eb_plan_filter_field_value) */
    test_edits_assert_as_written (r, m, len, want, want_len, TRUE);
    GByteArray outa = { (guint8 *) (gpointer) want, (guint) want_len };
    assert_restored (&outa);
  }
}

/* The notice digest: the text with LF line ends, without its final line
 * breaks; CR LF and LF give the same (values from Python's hashlib). */
static void
test_notice_digest (void)
{
  const char *t = "The attachment \"r.bin\" (application/octet-stream, 4 bytes) is stored at\n"
                  "data:application/octet-stream;base64,AAEC/w==";
  const char *variants[] = { "", "\n", "\r\n", "\n\n" };
  for (guint i = 0; i < G_N_ELEMENTS (variants); i++) {
    g_autofree char *v = g_strconcat (t, variants[i], NULL);
    g_autofree char *d = eb_digest_notice_hex ((const guint8 *) v, strlen (v));
    g_assert_cmpstr (d, ==, NOTICE_SHA);
  }
  g_autoptr (GByteArray) crlf = test_msg_with_eol (t, "\r\n");
  g_autofree char *d = eb_digest_notice_hex (crlf->data, crlf->len);
  g_assert_cmpstr (d, ==, NOTICE_SHA);
  g_autofree char *other = eb_digest_notice_hex ((const guint8 *) "the second", 10);
  g_assert_cmpstr (other, ==, "066085a464c84cc7b1517dd07b6004b4808b91236491eebf645e6a6b95436d38");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_mime_init ();
  for (guint i = 0; i < G_N_ELEMENTS (shape_cases); i++) {
    g_autofree char *path = g_strdup_printf ("/fallback/restored/%s", shape_cases[i].name);
    g_test_add_data_func (path, &shape_cases[i], test_shape);
  }
  g_test_add_func ("/fallback/restored/alternative-fields", test_alt_fields);
  g_test_add_func ("/fallback/restored/two", test_two);
  for (guint i = 0; i < G_N_ELEMENTS (other_cases); i++) {
    g_autofree char *path = g_strdup_printf ("/fallback/not-the-shape/%s", other_cases[i].name);
    g_test_add_data_func (path, &other_cases[i], test_other);
  }
  g_test_add_func ("/fallback/unresolved-unchanged", test_unresolved);
  g_test_add_func ("/fallback/notice-digest", test_notice_digest);
  g_test_add_data_func ("/fallback/header-edits/lf", "\n", test_header_edits);
  g_test_add_data_func ("/fallback/header-edits/crlf", "\r\n", test_header_edits);
  int rc = g_test_run ();
  g_mime_shutdown ();
  return rc;
}
