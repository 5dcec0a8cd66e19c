/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-rewrite.c - the message pipeline in process: pre-check, walk, resolve,
 * splice. Every rewritten message is parsed back with GMime and the resolved
 * part's decoded content compared with what the URL denotes; every byte outside
 * the replaced entity is compared with the input. */
#include <gio/gio.h>
#include "eb-gmime.h"
#include <string.h>
#include <glib/gstdio.h>
#include "eb-plan-private.h"
#include "eb-seal.h"
#include "eb-urlparam.h"
#include "test-edits.h"
#include "test-msg.h"
#include "test-run.h"

static GByteArray *
bytes_of (const char *s)
{
  GByteArray *a = g_byte_array_new ();
  g_byte_array_append (a, (const guint8 *) s, (guint) strlen (s));
  return a;
}

/* test_run_rewrite, and the pre-check never changes a result: the same
 * bytes with EB_REWRITE_NO_PRECHECK flipped. */
static void
do_rewrite (GByteArray *in, const EbConfig *config, EbRewriteFlags flags, TestRun *r)
{
  test_run_rewrite (in, config, flags, r);
  g_auto (TestRun) other = { 0 };
  test_run_rewrite (in, config, flags ^ EB_REWRITE_NO_PRECHECK, &other);
  g_assert_cmpmem (r->out->data, r->out->len, other.out->data, other.out->len);
}

static void
assert_identity (GByteArray *in, const EbConfig *config)
{
  g_auto (TestRun) r = { 0 };
  do_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  g_assert_false (r.result->changed);
  g_assert_cmpmem (r.out->data, r.out->len, in->data, in->len);
}

/* Parse @out with GMime and return the decoded content of the leaf whose
 * Content-ID is @cid, with its content type in @type. */
static GBytes *
decoded_part (GByteArray *out, const char *cid, char **type, char **cte)
{
  g_autoptr (GMimeStream) st = g_mime_stream_mem_new_with_buffer ((const char *) out->data, out->len);
  g_autoptr (GMimeParser) p = g_mime_parser_new_with_stream (st);
  g_autoptr (GMimeMessage) m = g_mime_parser_construct_message (p, NULL);
  g_assert_nonnull (m);
  g_autoptr (GMimePartIter) it = g_mime_part_iter_new (GMIME_OBJECT (m));
  GMimeObject *found = NULL;
  GMimeObject *top = g_mime_message_get_mime_part (m);
  if (GMIME_IS_PART (top) && g_strcmp0 (g_mime_object_get_content_id (top), cid) == 0)
    found = top;
  while (!found && g_mime_part_iter_is_valid (it)) {
    GMimeObject *o = g_mime_part_iter_get_current (it);
    if (GMIME_IS_MESSAGE_PART (o)) {
      GMimeMessage *inner = g_mime_message_part_get_message (GMIME_MESSAGE_PART (o));
      g_autoptr (GMimePartIter) it2 = g_mime_part_iter_new (GMIME_OBJECT (inner));
      while (!found && g_mime_part_iter_is_valid (it2)) {
        GMimeObject *o2 = g_mime_part_iter_get_current (it2);
        if (GMIME_IS_PART (o2) && g_strcmp0 (g_mime_object_get_content_id (o2), cid) == 0)
          found = o2;
        g_mime_part_iter_next (it2);
      }
    }
    if (!found && GMIME_IS_PART (o) && g_strcmp0 (g_mime_object_get_content_id (o), cid) == 0)
      found = o;
    g_mime_part_iter_next (it);
  }
  g_assert_nonnull (found);
  *type = g_mime_content_type_get_mime_type (g_mime_object_get_content_type (found));
  *cte = g_strdup (g_mime_object_get_header (found, "Content-Transfer-Encoding"));
  GMimeDataWrapper *dw = g_mime_part_get_content (GMIME_PART (found));
  g_autoptr (GMimeStream) mem = g_mime_stream_mem_new ();
  g_mime_data_wrapper_write_to_stream (dw, mem);
  GByteArray *ba = g_mime_stream_mem_get_byte_array (GMIME_STREAM_MEM (mem));
  return g_bytes_new (ba->data, ba->len);
}


static const char *MULTI =
  "From: a@example.org\n"
  "To: b@example.org\n"
  "Subject: refs\n"
  "MIME-Version: 1.0\n"
  "Content-Type: multipart/mixed; boundary=\"b1\"\n"
  "\n"
  "preamble\n"
  "--b1\n"
  "Content-Type: text/plain\n"
  "\n"
  "before\n"
  "--b1\n"
  "Content-Type: message/external-body; access-type=URL;\n"
  "\tURL=\"data:text/plain;charset=us-ascii,Hello%2C%20\n"
  "\tworld%21%0A\"\n"
  "Content-Description: outer description\n"
  "\n"
  "Content-Type: text/plain; charset=us-ascii\n"
  "Content-ID: <t1@x>\n"
  "\n"
  "THIS IS NOT REALLY THE BODY!\n"
  "--b1\n"
  "Content-Type: text/plain\n"
  "\n"
  "after\n"
  "--b1--\n"
  "epilogue\n";

static void
test_resolve_text (gconstpointer eolp)
{
  const char *eol = eolp;
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GByteArray) in = test_msg_with_eol (MULTI, eol);
  g_auto (TestRun) r = { 0 };
  do_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  g_assert_true (r.result->changed);
  g_assert_cmpuint (r.result->n_resolved, ==, 1);
  g_autofree char *type = NULL, *cte = NULL;
  g_autoptr (GBytes) body = decoded_part (r.out, "t1@x", &type, &cte);
  g_assert_cmpstr (type, ==, "text/plain");
  g_assert_cmpstr (cte, ==, "7bit");
  g_autofree char *expect = g_strdup_printf ("Hello, world!%s", eol);
  g_assert_cmpmem (g_bytes_get_data (body, NULL), g_bytes_get_size (body), expect, strlen (expect));

  /* Every byte before the entity and from its end on is the input's. */
  const EbRef *ref = g_ptr_array_index (r.result->scan->refs, 0);
  g_assert_cmpmem (r.out->data, ref->block_start, in->data, ref->block_start);
  gsize tail = in->len - ref->end;
  g_assert_cmpmem (r.out->data + r.out->len - tail, tail, in->data + ref->end, tail);
  /* The outer Content-Description, absent from the inner header, is kept; the
   * trace field is there; the whole output is in the message's line ending. */
  g_assert_nonnull (g_strstr_len ((char *) r.out->data, r.out->len, "Content-Description: outer description"));
  g_assert_nonnull (g_strstr_len ((char *) r.out->data, r.out->len, "X-Extbody-Resolved: access-type=URL; scheme=data"));
  if (strcmp (eol, "\n") == 0)
    g_assert_null (memchr (r.out->data, '\r', r.out->len));
  else
    for (guint i = 0; i < r.out->len; i++)
      if (r.out->data[i] == '\n')
        g_assert_cmpint (r.out->data[i - 1], ==, '\r');
}

/* GMime 3.2.13 drops the byte before a boundary when line endings are mixed
 * ("hello\n--b1\r\n" reads back as "hell"): the splice must not. */
static void
test_mixed_eol (void)
{
  const char *m =
    "From: a@example.org\r\n"
    "MIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=b1\r\n"
    "\r\n"
    "--b1\r\n"
    "Content-Type: text/plain\r\n"
    "\r\n"
    "hello\n"
    "--b1\r\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,x%0A\"\n"
    "\n"
    "Content-Type: text/plain\n"
    "Content-ID: <m@x>\n"
    "\n"
    "phantom\n"
    "--b1\r\n"
    "Content-Type: text/plain\r\n"
    "\r\n"
    "world\n"
    "--b1--\r\n";
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GByteArray) in = bytes_of (m);
  g_auto (TestRun) r = { 0 };
  do_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  g_assert_true (r.result->changed);
  const EbRef *ref = g_ptr_array_index (r.result->scan->refs, 0);
  /* The entity ends right before "\n--b1" after "phantom": exact bytes. */
  const char *want_end = strstr (m, "phantom\n") + strlen ("phantom");
  g_assert_cmpuint (ref->end, ==, (gsize) (want_end - m));
  g_assert_cmpuint (ref->block_start, ==, (gsize) (strstr (m, "hello\n--b1\r\nContent-Type: message") - m) + 12);
  g_assert_nonnull (g_strstr_len ((char *) r.out->data, r.out->len, "\r\nhello\n--b1\r\n"));
  g_autofree char *out = g_strndup ((char *) r.out->data, r.out->len);
  g_assert_true (g_str_has_suffix (out, "\r\n\r\nworld\n--b1--\r\n"));
  gsize tail = in->len - ref->end;
  g_assert_cmpmem (r.out->data + r.out->len - tail, tail, in->data + ref->end, tail);
  g_assert_cmpmem (r.out->data, ref->block_start, in->data, ref->block_start);
}

/* RFC 2046 5.2.3.7: a message whose body is the reference keeps its own header;
 * its Content-* fields come from the inner header. */
static void
test_toplevel_merge (gconstpointer eolp)
{
  const char *m =
    "Received: from x by y; Sat, 21 Nov 2026 10:00:00 +0000\n"
    "From: a@example.org\n"
    "Subject: top\n"
    "MIME-Version: 1.0\n"
    "Content-Type: message/external-body; access-type=URL;\n"
    "  URL=\"data:text/html;base64,PGI+aGk8L2I+\"\n"
    "Content-Description: outer\n"
    "X-After: kept\n"
    "\n"
    "Content-Type: text/html\n"
    "Content-ID: <top@x>\n"
    "\n";
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GByteArray) in = test_msg_with_eol (m, eolp);
  g_auto (TestRun) r = { 0 };
  do_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  g_assert_true (r.result->changed);
  g_autofree char *out = g_strndup ((char *) r.out->data, r.out->len);
  g_autofree char *want = g_strjoinv (eolp, (char *[]) {
    "Received: from x by y; Sat, 21 Nov 2026 10:00:00 +0000",
    "From: a@example.org", "Subject: top", "MIME-Version: 1.0", "X-After: kept",
    "Content-Type: text/html", "Content-ID: <top@x>", "Content-Description: outer",
    "Content-Transfer-Encoding: 7bit", NULL });
  g_assert_true (g_str_has_prefix (out, want));
  g_autofree char *type = NULL, *cte = NULL;
  g_autoptr (GBytes) body = decoded_part (r.out, "top@x", &type, &cte);
  g_assert_cmpstr (type, ==, "text/html");
  g_assert_cmpmem (g_bytes_get_data (body, NULL), g_bytes_get_size (body), "<b>hi</b>", 9);
}

/* A reference inside a forwarded message/rfc822 inside a multipart. */
static void
test_nested_rfc822 (void)
{
  const char *m =
    "From: a@example.org\n"
    "MIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=outer\n"
    "\n"
    "--outer\n"
    "Content-Type: message/rfc822\n"
    "\n"
    "From: c@example.org\n"
    "MIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=inner\n"
    "\n"
    "--inner\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:application/octet-stream;base64,AAEC/w==\"\n"
    "\n"
    "Content-Type: application/octet-stream\n"
    "Content-ID: <bin@x>\n"
    "\n"
    "--inner--\n"
    "\n"
    "--outer--\n";
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GByteArray) in = bytes_of (m);
  g_auto (TestRun) r = { 0 };
  do_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  g_assert_true (r.result->changed);
  const EbRef *ref = g_ptr_array_index (r.result->scan->refs, 0);
  g_assert_cmpstr (ref->path, ==, "1.1");
  g_autofree char *type = NULL, *cte = NULL;
  g_autoptr (GBytes) body = decoded_part (r.out, "bin@x", &type, &cte);
  g_assert_cmpstr (cte, ==, "base64");
  g_assert_cmpmem (g_bytes_get_data (body, NULL), g_bytes_get_size (body), "\x00\x01\x02\xff", 4);
}

/* The inner Content-Transfer-Encoding declares the encoding of the data itself. */
static void
test_inner_cte (void)
{
  const char *ok =
    "MIME-Version: 1.0\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,aGVsbG8gd29ybGQ%3D\"\n"
    "\n"
    "Content-Type: text/plain\n"
    "Content-Transfer-Encoding: base64\n"
    "Content-ID: <c@x>\n"
    "\n";
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GByteArray) in = bytes_of (ok);
  g_auto (TestRun) r = { 0 };
  do_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  g_assert_true (r.result->changed);
  g_autofree char *type = NULL, *cte = NULL;
  g_autoptr (GBytes) body = decoded_part (r.out, "c@x", &type, &cte);
  g_assert_cmpmem (g_bytes_get_data (body, NULL), g_bytes_get_size (body), "hello world", 11);

  const char *bad =
    "MIME-Version: 1.0\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,not*base64!\"\n"
    "\n"
    "Content-Type: text/plain\n"
    "Content-Transfer-Encoding: base64\n"
    "\n";
  g_autoptr (GByteArray) in2 = bytes_of (bad);
  g_auto (TestRun) r2 = { 0 };
  do_rewrite (in2, config, EB_REWRITE_DEFAULT, &r2);
  g_assert_false (r2.result->changed);
  g_assert_cmpmem (r2.out->data, r2.out->len, in2->data, in2->len);
  const EbResolution *res = g_ptr_array_index (r2.result->resolutions, 0);
  g_assert_cmpint (res->reason, ==, EB_REASON_CTE_INVALID);

  const char *unknown =
    "MIME-Version: 1.0\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n"
    "\n"
    "Content-Type: text/plain\n"
    "Content-Transfer-Encoding: x-uuencode\n"
    "\n";
  g_autoptr (GByteArray) in3 = bytes_of (unknown);
  g_auto (TestRun) r3 = { 0 };
  do_rewrite (in3, config, EB_REWRITE_DEFAULT, &r3);
  g_assert_false (r3.result->changed);
  res = g_ptr_array_index (r3.result->resolutions, 0);
  g_assert_cmpint (res->reason, ==, EB_REASON_CTE_UNKNOWN);
}

typedef struct {
  const char *name;
  const char *url_and_inner;  /* the Content-Type parameters after access-type=URL; then the inner header */
  EbReason    reason;
} ReasonCase;

static const ReasonCase reason_cases[] = {
  { "type-mismatch", "URL=\"data:image/png;base64,AAAA\"\n\nContent-Type: image/jpeg\n", EB_REASON_TYPE_MISMATCH },
  { "type-default-agrees", "URL=\"data:;charset=utf-8,abc\"\n\nContent-Type: image/jpeg\n", EB_REASON_RESOLVED },
  { "type-empty-agrees", "URL=\"data:,abc\"\n\nContent-Type: application/x-thing\n", EB_REASON_RESOLVED },
  { "type-case", "URL=\"data:IMAGE/PNG;base64,AAAA\"\n\nContent-Type: Image/Png\n", EB_REASON_RESOLVED },
  { "no-comma", "URL=\"data:text/plain;base64\"\n\nContent-Type: text/plain\n", EB_REASON_DATA_URL_INVALID },
  { "bad-base64", "URL=\"data:text/plain;base64,A\"\n\nContent-Type: text/plain\n", EB_REASON_DATA_URL_INVALID },
  { "empty-url", "URL=\"\"\n\nContent-Type: text/plain\n", EB_REASON_URL_INVALID },
  { "blank-url", "URL=\"  \n\t \"\n\nContent-Type: text/plain\n", EB_REASON_URL_INVALID },
  { "no-url", "name=x\n\nContent-Type: text/plain\n", EB_REASON_URL_MISSING },
  { "two-urls", "URL=\"data:,a\"; url=\"data:,b\"\n\nContent-Type: text/plain\n", EB_REASON_URL_INVALID },
  { "encoded-word", "URL=\"=?us-ascii?Q?data:,a?=\"\n\nContent-Type: text/plain\n", EB_REASON_URL_INVALID },
  { "http", "URL=\"http://example.com/x\"\n\nContent-Type: text/plain\n", EB_REASON_FETCH_OFF },
  { "ftp", "URL=\"FTP://example.com/x\"\n\nContent-Type: text/plain\n", EB_REASON_FETCH_OFF },
  { "gopher", "URL=\"gopher://example.com/0x\"\n\nContent-Type: text/plain\n", EB_REASON_FETCH_OFF },
  { "gopher-menu", "URL=\"gopher://example.com/1x\"\n\nContent-Type: text/plain\n", EB_REASON_NOT_DOCUMENT },
  { "mailto", "URL=\"mailto:a@example.com\"\n\nContent-Type: text/plain\n", EB_REASON_NOT_RETRIEVAL },
  { "wais", "URL=\"wais://example.com/db\"\n\nContent-Type: text/plain\n", EB_REASON_UNSUPPORTED_SCHEME },
  { "file", "URL=\"file:///etc/passwd\"\n\nContent-Type: text/plain\n", EB_REASON_SCHEME_DISABLED },
  { "bad-inner-type", "URL=\"data:,a\"\n\nContent-Type: garbage\n", EB_REASON_BAD_INNER_HEADER },
  { "multipart-ok", "URL=\"data:multipart/mixed;boundary=zz,--zz%0AContent-Type: text/plain%0A%0Ahi%0A--zz--%0A\"\n\nContent-Type: multipart/mixed; boundary=zz\n", EB_REASON_RESOLVED },
  { "no-phantom", "URL=\"data:text/plain,abc\"\n", EB_REASON_RESOLVED },
  { "rfc822-8bit", "URL=\"data:message/rfc822,Subject: x%0A%0A%FF%0A\"\n\nContent-Type: message/rfc822\n", EB_REASON_COMPOSITE_UNSAFE },
};

static void
test_reason (gconstpointer data)
{
  const ReasonCase *c = data;
  g_autofree char *m = g_strconcat (
    "MIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=URL; ", c->url_and_inner,
    "\n--b--\n", NULL);
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GByteArray) in = bytes_of (m);
  g_auto (TestRun) r = { 0 };
  do_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  g_assert_cmpuint (r.result->scan->refs->len, ==, 1);
  const EbResolution *res = g_ptr_array_index (r.result->resolutions, 0);
  if (res->reason != c->reason)
    g_test_message ("%s: got %s (%s)", c->name, eb_reason_token (res->reason), res->detail);
  g_assert_cmpint (res->reason, ==, c->reason);
  if (c->reason != EB_REASON_RESOLVED) {
    g_assert_false (r.result->changed);
    g_assert_cmpmem (r.out->data, r.out->len, in->data, in->len);
  } else {
    g_assert_true (r.result->changed);
  }
}

/* Leave alone what must not change: each message holds one data: reference
 * that would resolve but for the shape around it; -1 means the walk must not
 * see the reference at all (a leaf). Each must come out byte for byte. */
#define REF(ct_extra) \
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,hello\"" ct_extra "\n\n" \
  "Content-Type: text/plain\n\n"
typedef struct {
  const char *name;
  const char *message;
  int         reason;   /* EbReason of the first reference, or -1: no reference */
} KeepCase;

static const KeepCase keep_cases[] = {
  { "signed", "MIME-Version: 1.0\nContent-Type: multipart/signed; boundary=s; protocol=\"application/pgp-signature\"; micalg=pgp-sha256\n\n"
    "--s\n" REF ("") "\n--s\nContent-Type: application/pgp-signature\n\nsig\n--s--\n", EB_REASON_SIGNED },
  { "signed-nested", "MIME-Version: 1.0\nContent-Type: multipart/signed; boundary=s; protocol=\"application/pkcs7-signature\"\n\n"
    "--s\nContent-Type: multipart/mixed; boundary=m\n\n--m\nContent-Type: message/rfc822\n\n"
    "Subject: inner\nMIME-Version: 1.0\n" REF ("") "\n--m--\n\n--s\nContent-Type: application/pkcs7-signature\n\nsig\n--s--\n", EB_REASON_SIGNED },
  { "encrypted", "MIME-Version: 1.0\nContent-Type: multipart/encrypted; boundary=e; protocol=\"application/pgp-encrypted\"\n\n"
    "--e\nContent-Type: application/pgp-encrypted\n\nVersion: 1\n\n--e\n" REF ("") "\n--e--\n", EB_REASON_SIGNED },
  { "signed-case", "MIME-Version: 1.0\nContent-Type: Multipart/Signed; boundary=s; protocol=\"application/pgp-signature\"\n\n"
    "--s\n" REF ("") "\n--s--\n", EB_REASON_SIGNED },
  { "beside-signed", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=m\n\n"
    "--m\nContent-Type: multipart/signed; boundary=s; protocol=\"application/pgp-signature\"\n\n--s\nContent-Type: text/plain\n\nx\n--s--\n\n"
    "--m\n" REF ("") "\n--m--\n", EB_REASON_RESOLVED },
  { "outer-base64", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Transfer-Encoding: base64\n" REF ("") "\n--b--\n", EB_REASON_OUTER_CTE },
  { "outer-qp", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Transfer-Encoding: Quoted-Printable\n" REF ("") "\n--b--\n", EB_REASON_OUTER_CTE },
  { "outer-toplevel-base64", "MIME-Version: 1.0\nContent-Transfer-Encoding: base64\n" REF (""), EB_REASON_OUTER_CTE },
  { "outer-7bit", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Transfer-Encoding: 7bit\n" REF ("") "\n--b--\n", EB_REASON_RESOLVED },
  { "outer-8BIT", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Transfer-Encoding:  8BIT \n" REF ("") "\n--b--\n", EB_REASON_RESOLVED },
  { "outer-binary", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Transfer-Encoding: binary\n" REF ("") "\n--b--\n", EB_REASON_RESOLVED },
  { "nested-reference", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,hello\"\n\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\n\n--b--\n", EB_REASON_NESTED_REF },
  { "boundary-empty", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"\"\n\n--\n" REF ("") "\n----\n", -1 },
  { "boundary-71", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\n\n"
    "--aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n" REF ("")
    "\n--aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa--\n", -1 },
  { "boundary-70", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"\n\n"
    "--aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n" REF ("")
    "\n--aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa--\n", EB_REASON_RESOLVED },
  { "boundary-bad-char", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"a;b\"\n\n--a;b\n" REF ("") "\n--a;b--\n", -1 },
  { "boundary-trailing-space", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"ab \"\n\n--ab \n" REF ("") "\n--ab --\n", -1 },
  { "boundary-bchars", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"'()+_,-./:=? x\"\n\n--'()+_,-./:=? x\n" REF ("") "\n--'()+_,-./:=? x--\n", EB_REASON_RESOLVED },
  { "access-type-space", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=\"URL \"; URL=\"data:,hello\"\n\nContent-Type: text/plain\n\n\n--b--\n", EB_REASON_ACCESS_TYPE },
  { "duplicate-field", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,hello\"\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,other\"\n\nContent-Type: text/plain\n\n\n--b--\n", EB_REASON_DUPLICATE_FIELD },
  { "bad-access-type", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=URL; access-type=anon-ftp; URL=\"data:,hello\"\n\nContent-Type: text/plain\n\n\n--b--\n", EB_REASON_BAD_ACCESS_TYPE },
  { "unlocatable", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "a line that is no header field\n" REF ("") "\n--b--\n", EB_REASON_UNLOCATABLE },
  { "access-type-case", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=\"uRl\"; URL=\"data:,hello\"\n\nContent-Type: text/plain\n\n\n--b--\n", EB_REASON_RESOLVED },
};

static void
test_keep (gconstpointer data)
{
  const KeepCase *c = data;
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GByteArray) in = bytes_of (c->message);
  g_auto (TestRun) r = { 0 };
  do_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  g_assert_nonnull (r.result->scan);
  if (c->reason < 0) {
    g_assert_cmpuint (r.result->scan->refs->len, ==, 0);
  } else {
    g_assert_cmpuint (r.result->scan->refs->len, ==, 1);
    const EbResolution *res = g_ptr_array_index (r.result->resolutions, 0);
    if ((int) res->reason != c->reason)
      g_test_message ("%s: got %s (%s)", c->name, eb_reason_token (res->reason), res->detail);
    g_assert_cmpint (res->reason, ==, c->reason);
  }
  if (c->reason != EB_REASON_RESOLVED) {
    g_assert_false (r.result->changed);
    g_assert_cmpmem (r.out->data, r.out->len, in->data, in->len);
  } else {
    g_assert_true (r.result->changed);
    g_assert_nonnull (g_strstr_len ((char *) r.out->data, r.out->len, "\n\nhello"));
  }
}

/* A milter applies the header edits and the body writer; the result must be
 * the message eb_plan_write writes: the same fields (name and value, in
 * the order a milter leaves them: changed in place, added at the end) and the
 * same body bytes. */
static void
test_header_edits (gconstpointer data)
{
  const char *m = data;
  g_autoptr (EbConfig) config = eb_config_new ();
  gsize len = strlen (m);
  g_autoptr (EbPlan) r = eb_rewrite_plan (m, len, config, NULL, EB_REWRITE_STRIP_TRACE);
  g_assert_true (r->changed);
  g_autoptr (GOutputStream) o = g_memory_output_stream_new_resizable ();
  g_assert_true (eb_plan_write (r, o, NULL));
  g_output_stream_close (o, NULL, NULL);
  const char *want = g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (o));
  gsize want_len = g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (o));
  test_edits_assert_as_written (r, m, len, want, want_len, FALSE);
}

static const char *edit_cases[] = {
  /* a top-level reference, forged trace fields, a folded Content-ID */
  ("X-Extbody: resolved 9 of 9\r\nFrom: a@x\r\nX-Extbody-Resolved: forged\r\nMIME-Version: 1.0\r\n"
  "Content-ID: <outer@x>\r\nContent-Description: the\r\n outer one\r\n"
  "Content-Type: message/external-body; access-type=URL; URL=\"data:,hello\"\r\n\r\n"
  "Content-Type: text/plain; charset=us-ascii\r\nContent-ID: <inner@x>\r\n\r\n"),
  /* a part inside a multipart, and forged trace fields */
  ("From: a@x\nX-Extbody: forged\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
  "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,hello\"\n\nContent-Type: text/plain\n\n\n--b--\n"),
  /* only forged fields, nothing to resolve */
  ("From: a@x\nx-extbody-resolved: one\nX-EXTBODY: two\nSubject: s\n\nbody\n"),
  /* a top-level reference, no trace fields, no inner type */
  ("From: a@x\nMIME-Version: 1.0\nContent-Type: message/external-body; access-type=URL;\n URL=\"data:text/html,<p>x</p>\"\n\n"),
};

/* An external-body with no inner header at all: the blank line after its
 * header is also the line break of the next delimiter. */
static void
test_no_phantom (void)
{
  const char *m =
    "MIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=b\n"
    "\n"
    "--b\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:text/plain,abc\"\n"
    "Content-ID: <np@x>\n"
    "\n"
    "--b--\n";
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GByteArray) in = bytes_of (m);
  g_auto (TestRun) r = { 0 };
  do_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  g_assert_true (r.result->changed);
  const EbResolution *res = g_ptr_array_index (r.result->resolutions, 0);
  g_autofree char *want = g_strdup_printf (
    "MIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=b\n"
    "\n"
    "--b\n"
    "Content-Type: text/plain\n"
    "Content-ID: <np@x>\n"
    "Content-Transfer-Encoding: 7bit\n"
    "X-Extbody-Resolved: access-type=URL; scheme=data; type=\"text/plain\";\n"
    "\tsize=3; sha256=%s\n"
    "\n"
    "abc\n"
    "--b--\n", eb_resolution_sha256 (res));
  g_autofree char *out = g_strndup ((char *) r.out->data, r.out->len);
  g_assert_cmpstr (out, ==, want);
}

/* Header fields longer than the 64 KiB GMime is shown: the shadow copy cuts
 * them and every offset is mapped back. A folded 300 KB URL and a 200 KB
 * unfolded one, between parts, after a text part holding long indented runs. */
static void
test_long_fields (gconstpointer eolp)
{
  const char *eol = eolp;
  GRand *rnd = g_rand_new_with_seed (9);
  gsize n1 = 225 * 1024, n2 = 150 * 1024;
  guint8 *d1 = g_malloc (n1), *d2 = g_malloc (n2);
  for (gsize i = 0; i < n1; i++)
    d1[i] = (guint8) g_rand_int (rnd);
  for (gsize i = 0; i < n2; i++)
    d2[i] = (guint8) g_rand_int (rnd);
  g_rand_free (rnd);
  g_autofree char *b1 = g_base64_encode (d1, n1);
  g_autofree char *b2 = g_base64_encode (d2, n2);
  g_autofree char *url1 = g_strconcat ("data:application/octet-stream;base64,", b1, NULL);
  g_autofree char *param1 = eb_urlparam_format (url1, 40, EB_FOLD_LINES, "\n");

  GString *m = g_string_new ("From: a@example.org\nMIME-Version: 1.0\n"
                             "Content-Type: multipart/mixed; boundary=\"bb\"\n\n--bb\n"
                             "Content-Type: text/plain\n\n");
  for (guint i = 0; i < 3000; i++)   /* 90 KB of indented lines in a body */
    g_string_append (m, "    indented text that looks like a continuation\n");
  g_string_append (m, "--bb\nContent-Type: message/external-body; access-type=URL;\n\t");
  g_string_append (m, param1);
  g_string_append (m, "\n\nContent-Type: application/octet-stream\nContent-ID: <one@x>\n\n--bb\n"
                      "Content-Type: message/external-body; access-type=URL; URL=\"data:application/x-two;base64,");
  g_string_append (m, b2);
  g_string_append (m, "\"\n\nContent-Type: application/x-two\nContent-ID: <two@x>\n\n--bb\n"
                      "Content-Type: text/plain\n\nlast part\n--bb--\n");
  g_autoptr (GByteArray) in = test_msg_with_eol (m->str, eol);
  g_string_free (m, TRUE);

  g_autoptr (EbConfig) config = eb_config_new ();
  g_auto (TestRun) r = { 0 };
  do_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  g_assert_cmpuint (r.result->n_resolved, ==, 2);
  g_autofree char *t1 = NULL, *c1 = NULL, *t2 = NULL, *c2 = NULL;
  g_autoptr (GBytes) o1 = decoded_part (r.out, "one@x", &t1, &c1);
  g_autoptr (GBytes) o2 = decoded_part (r.out, "two@x", &t2, &c2);
  g_assert_cmpmem (g_bytes_get_data (o1, NULL), g_bytes_get_size (o1), d1, n1);
  g_assert_cmpmem (g_bytes_get_data (o2, NULL), g_bytes_get_size (o2), d2, n2);
  /* bytes around the two entities are the input's */
  const EbRef *a = g_ptr_array_index (r.result->scan->refs, 0);
  const EbRef *b = g_ptr_array_index (r.result->scan->refs, 1);
  g_assert_cmpmem (r.out->data, a->block_start, in->data, a->block_start);
  gsize tail = in->len - b->end;
  g_assert_cmpmem (r.out->data + r.out->len - tail, tail, in->data + b->end, tail);
  g_free (d1);
  g_free (d2);
}

/* Each limit at, just below and just above its value. */
static GByteArray *
refs_message (guint n_refs, gsize data_len)
{
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n");
  g_autofree char *payload = g_strnfill (data_len, 'a');
  for (guint i = 0; i < n_refs; i++)
    g_string_append_printf (s, "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,%s\"\n\n"
                            "Content-Type: text/plain\n\n", payload);
  g_string_append (s, "--b--\n");
  GByteArray *a = g_byte_array_new ();
  g_byte_array_append (a, (guint8 *) s->str, (guint) s->len);
  g_string_free (s, TRUE);
  return a;
}

static guint
count_resolved (GByteArray *in, const EbConfig *config)
{
  g_auto (TestRun) r = { 0 };
  do_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  return r.result->n_resolved;
}

static void
test_limits (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GByteArray) five = refs_message (5, 10);

  config->max_references = 4;
  g_assert_cmpuint (count_resolved (five, config), ==, 4);
  config->max_references = 5;
  g_assert_cmpuint (count_resolved (five, config), ==, 5);
  config->max_references = 6;
  g_assert_cmpuint (count_resolved (five, config), ==, 5);
  config->max_references = 64;

  config->max_part_bytes = 9;
  g_assert_cmpuint (count_resolved (five, config), ==, 0);
  config->max_part_bytes = 10;
  g_assert_cmpuint (count_resolved (five, config), ==, 5);
  config->max_part_bytes = G_MAXUINT32;

  config->max_message_bytes = 49;
  g_assert_cmpuint (count_resolved (five, config), ==, 4);
  config->max_message_bytes = 50;
  g_assert_cmpuint (count_resolved (five, config), ==, 5);
  config->max_message_bytes = G_MAXUINT32;

  /* 1 multipart + 5 parts = 6 entities */
  config->max_parts = 5;
  g_assert_cmpuint (count_resolved (five, config), ==, 0);
  config->max_parts = 6;
  g_assert_cmpuint (count_resolved (five, config), ==, 5);
  config->max_parts = 10000;

  config->max_message_size = five->len - 1;
  g_assert_cmpuint (count_resolved (five, config), ==, 0);
  config->max_message_size = five->len;
  g_assert_cmpuint (count_resolved (five, config), ==, 5);
}

static void
test_depth_limit (void)
{
  /* a reference nested N multiparts deep */
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b0\n\n");
  const guint N = 6;
  for (guint i = 0; i < N; i++)
    g_string_append_printf (s, "--b%u\nContent-Type: multipart/mixed; boundary=b%u\n\n", i, i + 1);
  g_string_append_printf (s, "--b%u\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\nContent-Type: text/plain\n\n", N);
  for (guint i = N + 1; i-- > 0;)
    g_string_append_printf (s, "--b%u--\n", i);
  g_autoptr (GByteArray) in = bytes_of (s->str);
  g_string_free (s, TRUE);
  g_autoptr (EbConfig) config = eb_config_new ();
  /* the reference is at depth N + 1 */
  config->max_nesting_depth = N;
  g_assert_cmpuint (count_resolved (in, config), ==, 0);
  config->max_nesting_depth = N + 1;
  g_assert_cmpuint (count_resolved (in, config), ==, 1);
  config->max_nesting_depth = N + 2;
  g_assert_cmpuint (count_resolved (in, config), ==, 1);
}

/* Nothing to resolve: the output is the input, byte for byte. */
static const char *identity_msgs[] = {
  "From: a\r\nSubject: crlf\r\n\r\nbody\r\n",
  "From: a\nSubject: no final newline\n\nbody",
  "From: a\nSubject: 8bit \xe9\xff\n\n\xc3\xa9t\xc3\xa9\n",
  "From: a\nSubject: odd\n  folding\n\t\there\nX-Empty:\n\n\n\n",
  "From: a\nContent-Type: message/external-body; access-type=anon-ftp; site=x; name=y; directory=z\n\nContent-Type: text/plain\n\n",
  "From: a\nContent-Type: message/external-body; access-type=URL; URL=\"http://example.com/\"\n\nContent-Type: text/plain\n\n",
  "From: a\nContent-Type: multipart/mixed; boundary=x\n\n--x\nContent-Type: text/plain\n\ntruncated, no close delimiter",
  "From: a\nContent-Type: multipart/mixed; boundary=x\n\nno boundary at all\n",
  "From: a\nContent-Type: message/external-body; access-type=URL; URL=\"data:,unterminated\n\n",
  "From: a\nContent-Type: message/external-body\n\n",
  "\n\n\n",
  "not a header at all\n",
  "From: a\nContent-Type: multipart/mixed; boundary=x\n\n--x\nContent-Type: message/external-body; access-type=URL; URL=\"data:image/gif;base64,R0lG\"\n\nContent-Type: image/png\n\n--x--\n",
};

static void
test_identity (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  for (guint i = 0; i < G_N_ELEMENTS (identity_msgs); i++) {
    g_autoptr (GByteArray) in = bytes_of (identity_msgs[i]);
    assert_identity (in, config);
  }
  /* A message with a NUL byte in it. */
  g_autoptr (GByteArray) nul = g_byte_array_new ();
  g_byte_array_append (nul, (const guint8 *) "From: a\n\nx\0y\n", 13);
  assert_identity (nul, config);
}

/* A huge parameter count and a huge nesting depth: no crash, nothing lost. */
static void
test_hostile_shapes (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  GString *s = g_string_new ("From: a\nContent-Type: message/external-body; access-type=URL");
  for (guint i = 0; i < 50000; i++)
    g_string_append_printf (s, "; p%u=v", i);
  g_string_append (s, "; URL=\"data:,ok\"\n\nContent-Type: text/plain\n\n");
  g_autoptr (GByteArray) in = bytes_of (s->str);
  g_string_free (s, TRUE);
  g_auto (TestRun) r = { 0 };
  do_rewrite (in, config, EB_REWRITE_DEFAULT, &r);
  g_assert_true (r.result->changed);

  GString *d = g_string_new ("From: a\nContent-Type: multipart/mixed; boundary=b0\n\n");
  for (guint i = 0; i < 2000; i++)
    g_string_append_printf (d, "--b%u\nContent-Type: multipart/mixed; boundary=b%u\n\n", i, i + 1);
  g_string_append (d, "--b2000\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\nContent-Type: text/plain\n\n");
  g_autoptr (GByteArray) deep = bytes_of (d->str);
  g_string_free (d, TRUE);
  assert_identity (deep, config);
}


/* EB_REWRITE_FILTER_FIELD (a mail filter's pass): when something was resolved,
 * the message written is the one written without the flag plus the milter's
 * X-Extbody field as the last field of the message header, in the message's
 * line ending; when nothing was resolved, nothing is added. */
static const struct {
  const char *msg;      /* "\n" becomes the line ending */
  const char *value;    /* the field's value, or NULL: no field */
} filter_cases[] = {
  { "From: a@example.org\nX-Extbody: forged\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,one\"\n\n"
    "Content-Type: text/plain\n\n"
    "--b\nContent-Type: message/external-body; access-type=URL; URL=\"https://h.example/x\"\n\n"
    "Content-Type: text/plain\n\n--b--\n",
    "resolved 1 of 2 external-body references" },
  /* the last field of the header removed (strip_trace_fields) */
  { "From: a@example.org\nContent-Type: multipart/mixed; boundary=b\nX-Extbody-Resolved: forged\n\n"
    "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,one\"\n\n"
    "Content-Type: text/plain\n\n--b--\n",
    "resolved 1 of 1 external-body reference" },
  /* the body of the message itself: the field ends its new header */
  { "From sender@example.org Mon Jan  1 00:00:00 2024\nFrom: a@example.org\nSubject: s\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,one\"\n\n"
    "Content-Type: text/plain\n\n",
    "resolved 1 of 1 external-body reference" },
  /* nothing resolved: nothing added (the forged field still goes) */
  { "From: a@example.org\nX-Extbody: forged\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: message/external-body; access-type=URL; URL=\"https://h.example/x\"\n\n"
    "Content-Type: text/plain\n\n--b--\n",
    NULL },
  { "From: a@example.org\n\nno reference\n", NULL },
};

static GByteArray *
write_with (GByteArray *in, const EbConfig *config, EbRewriteFlags flags, EbPlan **res)
{
  g_autoptr (GOutputStream) mem = g_memory_output_stream_new_resizable ();
  g_autoptr (GError) error = NULL;
  g_assert_true (eb_rewrite ((const char *) in->data, in->len, config, NULL, flags, mem, res, &error));
  g_assert_no_error (error);
  g_output_stream_close (mem, NULL, NULL);
  GByteArray *a = g_byte_array_new ();
  g_byte_array_append (a, g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (mem)),
                       (guint) g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (mem)));
  return a;
}

static void
test_filter_field (void)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  const char *eols[] = { "\n", "\r\n" };
  for (guint i = 0; i < G_N_ELEMENTS (filter_cases); i++)
    for (guint e = 0; e < G_N_ELEMENTS (eols); e++) {
      const char *eol = eols[e];
      g_test_message ("case %u, %s", i, e ? "CRLF" : "LF");
      g_autoptr (GByteArray) in = test_msg_with_eol (filter_cases[i].msg, eol);
      g_autoptr (EbPlan) r0 = NULL, r1 = NULL;
      g_autoptr (GByteArray) plain = write_with (in, config, EB_REWRITE_STRIP_TRACE, &r0);
      g_autoptr (GByteArray) got = write_with (in, config, EB_REWRITE_STRIP_TRACE | EB_REWRITE_FILTER_FIELD, &r1);
      g_autofree char *p = g_strndup ((const char *) plain->data, plain->len);
      g_autofree char *g = g_strndup ((const char *) got->data, got->len);
      g_test_message ("%s", g);
      if (!filter_cases[i].value) {
        g_assert_false (r1->filter_field);
        g_assert_cmpstr (g, ==, p);
        g_assert_null (strstr (g, "X-Extbody:"));
        continue;
      }
      g_assert_true (r1->filter_field);
      g_autofree char *value = eb_plan_filter_field_value (r1);
      g_assert_cmpstr (value + 1, ==, filter_cases[i].value);
      /* the end of the header of the message written without the flag */
      g_autofree char *blank = g_strconcat (eol, eol, NULL);
      const char *h = strstr (p, blank);
      g_assert_nonnull (h);
      gsize at = (gsize) (h - p) + strlen (eol);
      g_autofree char *want = g_strdup_printf ("%.*sX-Extbody: %s%s%s", (int) at, p,
                                               filter_cases[i].value, eol, p + at);
      g_assert_cmpstr (g, ==, want);
    }
}

/* ---- the site's sealed records (trace_key_file, eb-seal.h) ------------------ */

#define SEAL_KEY "0123456789abcdef0123456789abcdef"
#define SEAL_MID "<sealed.1@test.example>"
/* a data: reference, a forged record, a forged X-Extbody-Resolved */
#define SEAL_MSG                                                                              \
  "From: a@example.org\nMessage-ID: " SEAL_MID "\n"                                            \
  "X-Extbody: resolved 9 of 9 external-body references; seal=garbage\n"                       \
  "X-Extbody-Resolved: forged\nContent-Type: multipart/mixed; boundary=b\n\n"                 \
  "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,one\"\n\n"          \
  "Content-Type: text/plain\n\n--b--\n"
/* an http reference, left with fetch = off */
#define SEAL_HTTP_MSG                                                                         \
  "From: a@example.org\nMessage-ID: <sealed.2@test.example>\nContent-Type: multipart/mixed; boundary=b\n\n" \
  "--b\nContent-Type: message/external-body; access-type=URL; URL=\"http://127.0.0.1:1/x\"\n\n" \
  "Content-Type: text/plain\n\n--b--\n"

/* A configuration whose trace_key_file holds @key (NULL: none), in a fresh
 * directory; *@dir gets it (remove with seal_dir_remove). */
static EbConfig *
seal_config (const char *key, char **dir)
{
  EbConfig *c = eb_config_new ();
  *dir = g_dir_make_tmp ("eb-rewrite-seal-XXXXXX", NULL);
  if (key) {
    g_autofree char *path = g_build_filename (*dir, "trace.key", NULL);
    g_assert_true (g_file_set_contents (path, key, -1, NULL));
    g_assert_cmpint (g_chmod (path, 0600), ==, 0);
    g_autoptr (GError) e = NULL;
    g_assert_true (eb_config_set (c, "trace_key_file", path, &e));
    g_assert_true (eb_seal_key_check (c, &e));
  }
  return c;
}

static void
seal_dir_remove (char *dir)
{
  g_autofree char *path = g_build_filename (dir, "trace.key", NULL);
  g_unlink (path);
  g_rmdir (dir);
  g_free (dir);
}

/* @text's X-Extbody fields (their values as written, after the colon). */
static GPtrArray *
filter_fields (const char *text)
{
  GPtrArray *v = g_ptr_array_new_with_free_func (g_free);
  const char *end = strstr (text, "\n\n");
  for (const char *p = strstr (text, "X-Extbody:"); p && (!end || p < end); p = strstr (p + 1, "X-Extbody:"))
    if (p == text || p[-1] == '\n')
      g_ptr_array_add (v, g_strndup (p + strlen ("X-Extbody:"), strcspn (p, "\n") - strlen ("X-Extbody:")));
  return v;
}

/* A filter's pass with the key: the forged record and X-Extbody-Resolved
 * field go, the reference is resolved, and the record written is sealed for
 * the message's Message-ID. A second pass leaves that message byte for byte
 * (the sealed record says the site handled it); without the key, or with
 * another, the second pass removes the record as forged, as before. */
static void
test_seal_first_and_second_pass (void)
{
  char *dir = NULL;
  g_autoptr (EbConfig) config = seal_config (SEAL_KEY, &dir);
  g_autoptr (GByteArray) in = bytes_of (SEAL_MSG);
  const EbRewriteFlags filter = EB_REWRITE_STRIP_TRACE | EB_REWRITE_FILTER_FIELD;
  g_autoptr (EbPlan) r1 = NULL;
  g_autoptr (GByteArray) first = write_with (in, config, filter, &r1);
  g_autofree char *t1 = g_strndup ((const char *) first->data, first->len);
  g_test_message ("first pass:\n%s", t1);
  g_assert_cmpuint (r1->n_resolved, ==, 1);
  g_assert_cmpuint (eb_plan_get_n_removed (r1), ==, 2);
  g_assert_null (strstr (t1, "garbage"));
  g_assert_null (strstr (t1, "X-Extbody-Resolved: forged"));
  g_autoptr (GPtrArray) f1 = filter_fields (t1);
  g_assert_cmpuint (f1->len, ==, 1);
  g_autoptr (GBytes) key = g_bytes_new_static (SEAL_KEY, strlen (SEAL_KEY));
  g_autofree char *seal = eb_seal_make (key, "resolved 1 of 1 external-body reference", SEAL_MID);
  g_autofree char *want = g_strdup_printf (" resolved 1 of 1 external-body reference; seal=%s", seal);
  g_assert_cmpstr (f1->pdata[0], ==, want);
  g_autofree char *value = eb_plan_filter_field_value (r1);
  g_assert_cmpstr (value, ==, want);

  /* the second pass: byte for byte, the message's own reason */
  g_autoptr (EbPlan) r2 = NULL;
  g_autoptr (GByteArray) second = write_with (first, config, filter, &r2);
  g_assert_cmpmem (second->data, second->len, first->data, first->len);
  g_assert_false (r2->changed);
  g_assert_false (eb_plan_get_filter_field (r2));
  g_assert_cmpint (eb_plan_get_reason (r2), ==, EB_REASON_SEALED_RECORD);
  g_assert_cmpuint (eb_plan_get_n_refs (r2), ==, 0);
  g_autoptr (GPtrArray) edits = eb_plan_header_edits (r2);
  g_assert_cmpuint (edits->len, ==, 0);

  /* without the key, or with another, the record is removed as forged (and
   * the record of that pass, when it writes one, is unsealed) */
  char *dir0 = NULL, *dir2 = NULL;
  g_autoptr (EbConfig) none = seal_config (NULL, &dir0);
  g_autoptr (EbConfig) other = seal_config ("0123456789abcdef0123456789abcdeF", &dir2);
  const EbConfig *configs[] = { none, other };
  for (guint i = 0; i < G_N_ELEMENTS (configs); i++) {
    g_autoptr (EbPlan) r = NULL;
    g_autoptr (GByteArray) out = write_with (first, configs[i], filter, &r);
    g_autofree char *t = g_strndup ((const char *) out->data, out->len);
    g_assert_cmpint (eb_plan_get_reason (r), ==, EB_REASON_RESOLVED);
    g_assert_true (r->changed);
    g_autoptr (GPtrArray) f = filter_fields (t);
    g_assert_cmpuint (f->len, ==, 0);   /* the record lost: nothing left to resolve, nothing written */
  }
  seal_dir_remove (dir0);
  seal_dir_remove (dir2);
  seal_dir_remove (dir);
}

/* A record is bound to its message: copied onto another Message-ID, or onto
 * a message with more references left than it says, it is removed and the
 * message resolved; a changed record is removed. */
static void
test_seal_bound_to_message (void)
{
  char *dir = NULL;
  g_autoptr (EbConfig) config = seal_config (SEAL_KEY, &dir);
  g_autoptr (GBytes) key = g_bytes_new_static (SEAL_KEY, strlen (SEAL_KEY));
  g_autofree char *seal = eb_seal_make (key, "resolved 1 of 1 external-body reference", SEAL_MID);
  g_autofree char *seal0 = eb_seal_make (key, "resolved 0 of 1 external-body reference", SEAL_MID);
  struct {
    const char *mid, *record, *seal;
  } cases[] = {
    /* another message's record */
    { "<other@test.example>", "resolved 1 of 1 external-body reference", seal },
    /* its own Message-ID, but the message still holds the reference it says was resolved */
    { SEAL_MID, "resolved 1 of 1 external-body reference", seal },
    /* the record changed */
    { SEAL_MID, "resolved 0 of 2 external-body references", seal0 },
  };
  const EbRewriteFlags filter = EB_REWRITE_STRIP_TRACE | EB_REWRITE_FILTER_FIELD;
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *msg = g_strdup_printf (
      "From: a@example.org\nMessage-ID: %s\nX-Extbody: %s; seal=%s\nContent-Type: multipart/mixed; boundary=b\n\n"
      "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,one\"\n\n"
      "Content-Type: text/plain\n\n--b--\n", cases[i].mid, cases[i].record, cases[i].seal);
    g_test_message ("%s", msg);
    g_autoptr (GByteArray) in = bytes_of (msg);
    g_autoptr (EbPlan) r = NULL;
    g_autoptr (GByteArray) out = write_with (in, config, filter, &r);
    g_autofree char *t = g_strndup ((const char *) out->data, out->len);
    g_assert_cmpuint (r->n_resolved, ==, 1);
    g_autoptr (GPtrArray) f = filter_fields (t);
    g_assert_cmpuint (f->len, ==, 1);
    g_autofree char *mine = eb_plan_filter_field_value (r);
    g_assert_cmpstr (f->pdata[0], ==, mine);   /* the pass's own record, alone */
  }
  seal_dir_remove (dir);
}

/* Nothing resolved: with the key the pass still writes its sealed record
 * ("resolved 0 of 1"), as a milter too (its header edits), so that a later
 * pass of the site fetches nothing: with fetching on, that pass leaves the
 * message byte for byte and makes no fetch, where without the record it
 * tries the URL again. */
static void
test_seal_nothing_fetched_twice (void)
{
  char *dir = NULL;
  g_autoptr (EbConfig) config = seal_config (SEAL_KEY, &dir);
  g_autoptr (GByteArray) in = bytes_of (SEAL_HTTP_MSG);
  const EbRewriteFlags filter = EB_REWRITE_STRIP_TRACE | EB_REWRITE_FILTER_FIELD;
  g_autoptr (EbPlan) r1 = NULL;
  g_autoptr (GByteArray) first = write_with (in, config, filter, &r1);
  g_autofree char *t1 = g_strndup ((const char *) first->data, first->len);
  g_assert_cmpuint (r1->n_resolved, ==, 0);
  g_assert_true (r1->changed);
  g_assert_true (eb_plan_get_filter_field (r1));
  g_autoptr (GPtrArray) f1 = filter_fields (t1);
  g_assert_cmpuint (f1->len, ==, 1);
  g_assert_true (g_str_has_prefix (f1->pdata[0], " resolved 0 of 1 external-body reference; seal="));
  /* the message as it came, the record added at the end of its header: what
   * a milter makes of it too (no header edit, the field it adds) */
  g_autofree char *value = eb_plan_filter_field_value (r1);
  const char *blank = strstr (SEAL_HTTP_MSG, "\n\n");
  g_autofree char *want = g_strdup_printf ("%.*sX-Extbody:%s\n%s", (int) (blank + 1 - SEAL_HTTP_MSG), SEAL_HTTP_MSG,
                                           value, blank + 1);
  g_assert_cmpstr (t1, ==, want);
  g_autoptr (GPtrArray) edits = eb_plan_header_edits (r1);
  g_assert_cmpuint (edits->len, ==, 0);
  /* without the key: nothing written, as before */
  char *dir0 = NULL;
  g_autoptr (EbConfig) none = seal_config (NULL, &dir0);
  g_autoptr (EbPlan) r0 = NULL;
  g_autoptr (GByteArray) plain = write_with (in, none, filter, &r0);
  g_assert_cmpmem (plain->data, plain->len, in->data, in->len);

  /* the second pass, fetching on and the URL allowed (a closed loopback port) */
  const char *on[] = { "fetch=on", "allow_networks=127.0.0.1/32", "allow_ports=1", "cache_ttl=0" };
  for (guint i = 0; i < G_N_ELEMENTS (on); i++) {
    g_assert_true (eb_config_apply_option (config, on[i], NULL));
    g_assert_true (eb_config_apply_option (none, on[i], NULL));
  }
  g_autoptr (GError) e = NULL;
  g_autoptr (EbFetcher) fetcher = eb_fetcher_new (config, &e);
  g_assert_no_error (e);
  g_autoptr (EbPlan) r2 = eb_rewrite_plan ((const char *) first->data, first->len, config, fetcher, filter);
  g_assert_cmpint (eb_plan_get_reason (r2), ==, EB_REASON_SEALED_RECORD);
  g_assert_false (r2->changed);
  g_assert_cmpuint (eb_plan_get_n_fetches (r2), ==, 0);
  g_autoptr (GOutputStream) mem = g_memory_output_stream_new_resizable ();
  g_assert_true (eb_plan_write (r2, mem, &e));
  g_output_stream_close (mem, NULL, NULL);
  g_assert_cmpmem (g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (mem)),
                   g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (mem)), first->data, first->len);
  /* the control: the same pass without the key tries the URL */
  g_autoptr (EbFetcher) fetcher0 = eb_fetcher_new (none, &e);
  g_assert_no_error (e);
  g_autoptr (EbPlan) r3 = eb_rewrite_plan ((const char *) first->data, first->len, none, fetcher0, filter);
  g_assert_cmpuint (eb_plan_get_n_fetches (r3), ==, 1);
  g_assert_cmpint (eb_plan_get_ref_reason (r3, 0), ==, EB_REASON_FETCH_FAILED);
  seal_dir_remove (dir0);
  seal_dir_remove (dir);
}

/* The header alone (a milter's message past max_message_size, or one whose
 * type holds no reference): a sealed record stays on its seal, the forged
 * fields go, nothing else is done. */
static void
test_seal_header_only (void)
{
  char *dir = NULL;
  g_autoptr (EbConfig) config = seal_config (SEAL_KEY, &dir);
  g_autoptr (GBytes) key = g_bytes_new_static (SEAL_KEY, strlen (SEAL_KEY));
  g_autofree char *seal = eb_seal_make (key, "resolved 1 of 2 external-body references", SEAL_MID);
  g_autofree char *header = g_strdup_printf (
    "From: a@example.org\r\nMessage-ID: " SEAL_MID "\r\nX-Extbody: forged\r\n"
    "X-Extbody: resolved 1 of 2 external-body references; seal=%s\r\nX-Extbody-Resolved: x\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n", seal);
  const EbRewriteFlags flags = EB_REWRITE_STRIP_TRACE | EB_REWRITE_HEADER_ONLY;
  g_autoptr (EbPlan) r = eb_rewrite_plan (header, strlen (header), config, NULL, flags);
  g_assert_cmpint (eb_plan_get_reason (r), ==, EB_REASON_SEALED_RECORD);
  g_assert_cmpuint (eb_plan_get_n_removed (r), ==, 1);
  g_autofree char *want = g_strdup_printf (
    "From: a@example.org\r\nMessage-ID: " SEAL_MID "\r\n"
    "X-Extbody: resolved 1 of 2 external-body references; seal=%s\r\nX-Extbody-Resolved: x\r\n"
    "Content-Type: multipart/mixed; boundary=b\r\n", seal);
  test_edits_assert_as_written (r, header, strlen (header), want, strlen (want), FALSE);
  /* without a valid seal every trace field goes */
  g_autofree char *forged = g_strdup_printf ("From: a@example.org\r\nMessage-ID: <another@test.example>\r\n"
                                             "X-Extbody: resolved 1 of 2 external-body references; seal=%s\r\n"
                                             "X-Extbody-Resolved: x\r\n", seal);
  g_autoptr (EbPlan) r2 = eb_rewrite_plan (forged, strlen (forged), config, NULL, flags);
  g_assert_cmpint (eb_plan_get_reason (r2), ==, EB_REASON_RESOLVED);
  g_assert_cmpuint (eb_plan_get_n_removed (r2), ==, 2);
  g_assert_false (eb_plan_get_filter_field (r2));
  seal_dir_remove (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_mime_init ();
  g_test_add_data_func ("/rewrite/resolve/text-lf", "\n", test_resolve_text);
  g_test_add_data_func ("/rewrite/resolve/text-crlf", "\r\n", test_resolve_text);
  g_test_add_func ("/rewrite/splice/mixed-line-endings", test_mixed_eol);
  g_test_add_data_func ("/rewrite/merge/toplevel-lf", "\n", test_toplevel_merge);
  g_test_add_data_func ("/rewrite/merge/toplevel-crlf", "\r\n", test_toplevel_merge);
  g_test_add_func ("/rewrite/walk/nested-rfc822", test_nested_rfc822);
  g_test_add_func ("/rewrite/splice/no-inner-header", test_no_phantom);
  g_test_add_data_func ("/rewrite/splice/long-fields-lf", "\n", test_long_fields);
  g_test_add_data_func ("/rewrite/splice/long-fields-crlf", "\r\n", test_long_fields);
  g_test_add_func ("/rewrite/resolve/inner-cte", test_inner_cte);
  for (guint i = 0; i < G_N_ELEMENTS (reason_cases); i++) {
    g_autofree char *path = g_strdup_printf ("/rewrite/reason/%s", reason_cases[i].name);
    g_test_add_data_func (path, &reason_cases[i], test_reason);
  }
  for (guint i = 0; i < G_N_ELEMENTS (keep_cases); i++) {
    g_autofree char *path = g_strdup_printf ("/rewrite/keep/%s", keep_cases[i].name);
    g_test_add_data_func (path, &keep_cases[i], test_keep);
  }
  for (guint i = 0; i < G_N_ELEMENTS (edit_cases); i++) {
    g_autofree char *path = g_strdup_printf ("/rewrite/header-edits/%u", i);
    g_test_add_data_func (path, edit_cases[i], test_header_edits);
  }
  g_test_add_func ("/rewrite/limits/each", test_limits);
  g_test_add_func ("/rewrite/limits/depth", test_depth_limit);
  g_test_add_func ("/rewrite/identity/unchanged", test_identity);
  g_test_add_func ("/rewrite/hostile/shapes", test_hostile_shapes);
  g_test_add_func ("/rewrite/filter-field", test_filter_field);
  g_test_add_func ("/rewrite/seal/first-and-second-pass", test_seal_first_and_second_pass);
  g_test_add_func ("/rewrite/seal/bound-to-message", test_seal_bound_to_message);
  g_test_add_func ("/rewrite/seal/nothing-fetched-twice", test_seal_nothing_fetched_twice);
  g_test_add_func ("/rewrite/seal/header-only", test_seal_header_only);
  return g_test_run ();
}
