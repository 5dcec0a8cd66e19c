/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-extref.c - eb_extref_read on raw bytes: the offsets are set by hand (no
 * GMime), the outer header at 0, the phantom header after its blank line. */
#include <string.h>
#include "eb-extref.h"

typedef struct {
  char  *buf;
  EbRef *ref;
} Read;

static void
read_clear (Read *r)
{
  g_clear_pointer (&r->buf, g_free);
  g_clear_pointer (&r->ref, eb_extref_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Read, read_clear)

/* @outer (header fields, each line ended by "\n") and @inner (the phantom
 * header and anything after it) joined by a blank line; then eb_extref_read. */
static void
read_ref (Read *r, const char *outer, const char *inner)
{
  r->buf = g_strconcat (outer, "\n", inner, NULL);
  r->ref = eb_extref_new ();
  r->ref->block_start = 0;
  r->ref->content_start = strlen (outer) + 1;
  r->ref->end = strlen (r->buf);
  r->ref->located = TRUE;
  /* read twice: a second reading replaces the first (no leak, no stale value) */
  eb_extref_read (r->ref, r->buf, strlen (r->buf));
  eb_extref_read (r->ref, r->buf, strlen (r->buf));
}

#define CT "Content-Type: message/external-body; "

static void
test_access_type (void)
{
  static const struct {
    const char *outer;
    EbReason reason;
    const char *access_type;
    const char *url;
  } cases[] = {
    { CT "access-type=URL; URL=\"http://h/x\"\n", EB_REASON_RESOLVED, "url", "http://h/x" },
    { CT "Access-Type=\"uRl\"; url=\"http://h/x\"\n", EB_REASON_RESOLVED, "url", "http://h/x" },
    { CT "access-type=ANON-FTP; site=s; name=n\n", EB_REASON_RESOLVED, "anon-ftp", NULL },
    /* exact: "URL " is not URL, and no URL is reassembled for it */
    { CT "access-type=\"URL \"; URL=\"http://h/x\"\n", EB_REASON_RESOLVED, "url ", NULL },
    { CT "access-type=mail-server; server=a@b\n", EB_REASON_RESOLVED, "mail-server", NULL },
    { CT "URL=\"http://h/x\"\n", EB_REASON_NO_ACCESS_TYPE, NULL, NULL },
    { CT "access-type=URL; access-type=ftp; URL=\"http://h/x\"\n", EB_REASON_BAD_ACCESS_TYPE, NULL, NULL },
    { CT "access-type=URL\n", EB_REASON_URL_MISSING, "url", NULL },
    { CT "access-type=URL; URL=\"\"\n", EB_REASON_URL_INVALID, "url", NULL },
    { CT "access-type=URL; URL=http://h/x\n", EB_REASON_URL_INVALID, "url", NULL },
    { CT "access-type=URL; URL=\"http://a/\"; URL=\"http://b/\"\n", EB_REASON_URL_INVALID, "url", NULL },
    { CT "access-type=URL; URL=\"http://a/\"; URL*0=\"http://b/\"\n", EB_REASON_URL_INVALID, "url", NULL },
    { CT "access-type=URL; URL*0=\"http://a/\"; URL*2=\"x\"\n", EB_REASON_URL_INVALID, "url", NULL },
    { CT "access-type=URL; URL=\"=?utf-8?Q?http://a/?=\"\n", EB_REASON_URL_INVALID, "url", NULL },
    /* RFC 2017: one quoted string; not the first of several, nor a value
     * with a word after it (the rest would be skipped: another URL) */
    { CT "access-type=URL; URL=\"http://a/\" \"b\"\n", EB_REASON_URL_INVALID, "url", NULL },
    { CT "access-type=URL;\n URL=\"http://a/\"\n \"b\"; name=x\n", EB_REASON_URL_INVALID, "url", NULL },
    { CT "access-type=URL; URL=\"http://a/\" b\n", EB_REASON_URL_INVALID, "url", NULL },
    { CT "access-type=URL; URL*0=\"http://a/\" \"b\"; URL*1=\"c\"\n", EB_REASON_URL_INVALID, "url", NULL },
    /* the rest of the field is not the URL's: a comment, white space, a ';' */
    { CT "access-type=URL; URL=\"http://h/x\" (a comment)\n ; name=n\n", EB_REASON_RESOLVED, "url", "http://h/x" },
    { CT "access-type=URL; URL=\"http://h/x\" junk; name=n\n", EB_REASON_URL_INVALID, "url", NULL },
    { CT "access-type=URL junk; URL=\"http://h/x\"\n", EB_REASON_RESOLVED, "url", "http://h/x" },
    /* a second Content-Type field in the external-body entity */
    { CT "access-type=URL; URL=\"http://h/x\"\nContent-Type: text/plain\n", EB_REASON_DUPLICATE_FIELD, "url", "http://h/x" },
    /* no Content-Type where GMime saw one, or another type: not located exactly */
    { "Content-Description: x\n", EB_REASON_UNLOCATABLE, NULL, NULL },
    { "Content-Type: text/plain; access-type=URL; URL=\"http://h/x\"\n", EB_REASON_UNLOCATABLE, NULL, NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_auto (Read) r = { 0 };
    g_test_message ("case %u: %s", i, cases[i].outer);
    read_ref (&r, cases[i].outer, "Content-Type: text/plain\n\n");
    g_assert_cmpstr (eb_reason_token (r.ref->read_reason), ==, eb_reason_token (cases[i].reason));
    g_assert_cmpstr (r.ref->access_type, ==, cases[i].access_type);
    g_assert_cmpstr (r.ref->url, ==, cases[i].url);
    if (cases[i].reason == EB_REASON_RESOLVED || cases[i].reason == EB_REASON_NO_ACCESS_TYPE)
      g_assert_null (r.ref->read_detail);
    else if (cases[i].reason != EB_REASON_URL_MISSING)
      g_assert_nonnull (r.ref->read_detail);
    /* the one line a URL with text after it gets says what is wrong */
    if (cases[i].reason == EB_REASON_URL_INVALID && strstr (cases[i].outer, "/\" ")
        && !strstr (cases[i].outer, "(a comment)"))
      g_assert_cmpstr (r.ref->read_detail, ==, "parameter url: text after its value that is no parameter "
                                              "(the URL must be one quoted string)");
  }
}

/* The first problem is the one reported. */
static void
test_first_reason (void)
{
  g_auto (Read) r = { 0 };
  read_ref (&r, CT "access-type=URL; URL=\"http://h/x\"\nContent-Type: a/b\n"
                "Content-Transfer-Encoding: base64\n", "\n");
  g_assert_cmpint (r.ref->read_reason, ==, EB_REASON_DUPLICATE_FIELD);
  g_assert_cmpstr (r.ref->read_detail, ==, "two Content-Type fields");
}

static void
test_parameters (void)
{
  g_auto (Read) r = { 0 };
  read_ref (&r, CT "access-type=anon-ftp;\n"
                "\tname=\"file.tar.gz\"; site=\"ftp.example.org\"; directory=\"/pub/src\";\n"
                "\tmode=image; server=\"srv@example.org\"; subject=\"send it\";\n"
                "\texpiration=\"Thu, 01 Jan 2037 00:00:00 +0000\"; size=12345;\n"
                "\tpermission=read-write\n",
            "Content-Type: application/gzip\n\n");
  g_assert_cmpint (r.ref->read_reason, ==, EB_REASON_RESOLVED);
  g_assert_cmpstr (r.ref->access_type, ==, "anon-ftp");
  g_assert_cmpstr (r.ref->name, ==, "file.tar.gz");
  g_assert_cmpstr (r.ref->site, ==, "ftp.example.org");
  g_assert_cmpstr (r.ref->directory, ==, "/pub/src");
  g_assert_cmpstr (r.ref->mode, ==, "image");
  g_assert_cmpstr (r.ref->server, ==, "srv@example.org");
  g_assert_cmpstr (r.ref->subject, ==, "send it");
  g_assert_cmpstr (r.ref->expiration, ==, "Thu, 01 Jan 2037 00:00:00 +0000");
  g_assert_cmpstr (r.ref->size, ==, "12345");
  g_assert_cmpstr (r.ref->permission, ==, "read-write");
  g_assert_null (r.ref->url);
  g_assert_cmpstr (r.ref->inner_type, ==, "application/gzip");
  g_assert_false (r.ref->inner_type_bad);
  g_assert_null (r.ref->inner_cte);
  /* the header blocks */
  g_assert_cmpuint (r.ref->outer->fields->len, ==, 1);
  g_assert_cmpuint (r.ref->inner->fields->len, ==, 1);
  g_assert_true (r.ref->inner->blank);

  /* absent parameters stay NULL */
  g_auto (Read) r2 = { 0 };
  read_ref (&r2, CT "access-type=local-file\n", "\n");
  g_assert_cmpstr (r2.ref->access_type, ==, "local-file");
  g_assert_null (r2.ref->name);
  g_assert_null (r2.ref->site);
  g_assert_null (r2.ref->directory);
  g_assert_null (r2.ref->mode);
  g_assert_null (r2.ref->size);
  g_assert_null (r2.ref->expiration);
  g_assert_null (r2.ref->inner_type);
  g_assert_false (r2.ref->inner_type_bad);
}

static void
test_url_reassembly (void)
{
  static const struct {
    const char *outer;
    const char *url;
  } cases[] = {
    /* RFC 2017: quoted words of at most 40 characters, folded */
    { CT "access-type=URL;\n"
      "\tURL=\"http://www.example.org/a/rather/long/pat\n"
      "\th/that/goes/on/and/on/file.txt\"\n",
      "http://www.example.org/a/rather/long/path/that/goes/on/and/on/file.txt" },
    { CT "access-type=URL; URL=\"http://www.example.org/one two three\"\n",
      "http://www.example.org/onetwothree" },
    /* RFC 2231 sections, plain and extended */
    { CT "access-type=URL;\n\tURL*0=\"http://www.example.org/\";\n\tURL*1=\"sections.txt\"\n",
      "http://www.example.org/sections.txt" },
    { CT "access-type=URL;\n\tURL*1=\"b.txt\";\n\tURL*0=\"http://h/a/\"\n",
      "http://h/a/b.txt" },
    { CT "access-type=URL; URL*0*=us-ascii''http%3A%2F%2Fh%2F; URL*1*=%7Ex\n",
      "http://h/~x" },
    /* the RFC 1738 wrapper */
    { CT "access-type=URL; URL=\"<URL:http://h/w>\"\n", "http://h/w" },
    /* a URL with a quoted-pair */
    { CT "access-type=URL; URL=\"http://h/a\\\"b\"\n", "http://h/a%22b" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_auto (Read) r = { 0 };
    g_test_message ("case %u", i);
    read_ref (&r, cases[i].outer, "\n");
    g_assert_cmpint (r.ref->read_reason, ==, EB_REASON_RESOLVED);
    g_assert_cmpstr (r.ref->url, ==, cases[i].url);
  }
}

static void
test_outer_cte (void)
{
  static const struct {
    const char *cte;
    EbReason reason;
  } cases[] = {
    { "7bit", EB_REASON_RESOLVED },
    { "8BIT", EB_REASON_RESOLVED },
    { "Binary", EB_REASON_RESOLVED },
    { " 7Bit ", EB_REASON_RESOLVED },
    { "base64", EB_REASON_OUTER_CTE },
    { "BASE64", EB_REASON_OUTER_CTE },
    { "Quoted-Printable", EB_REASON_OUTER_CTE },
    { "x-uuencode", EB_REASON_OUTER_CTE },
    { "", EB_REASON_OUTER_CTE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_auto (Read) r = { 0 };
    g_autofree char *outer = g_strdup_printf (CT "access-type=URL; URL=\"http://h/x\"\n"
                                              "Content-Transfer-Encoding:%s\n", cases[i].cte);
    g_test_message ("CTE \"%s\"", cases[i].cte);
    read_ref (&r, outer, "Content-Type: text/plain\n\n");
    g_assert_cmpstr (eb_reason_token (r.ref->read_reason), ==, eb_reason_token (cases[i].reason));
    g_assert_cmpstr (r.ref->url, ==, "http://h/x");
    if (cases[i].reason == EB_REASON_OUTER_CTE) {
      g_autofree char *stripped = g_strstrip (g_strdup (cases[i].cte));
      g_autofree char *want = g_strdup_printf ("Content-Transfer-Encoding: %s", stripped);
      g_assert_cmpstr (r.ref->read_detail, ==, want);
    }
  }
}

static void
test_inner (void)
{
  static const struct {
    const char *inner;
    const char *type;
    gboolean bad;
    const char *cte;
  } cases[] = {
    { "Content-Type: Text/HTML; charset=UTF-8\n\n", "text/html", FALSE, NULL },
    { "content-type:IMAGE/png\n\n", "image/png", FALSE, NULL },
    { "Content-Type: text/plain\nContent-Type: text/html\n\n", NULL, TRUE, NULL },
    { "Content-Type: ???\n\n", NULL, TRUE, NULL },
    { "Content-Type: text\n\n", NULL, TRUE, NULL },
    { "Content-Type:\n\n", NULL, TRUE, NULL },
    { "Content-ID: <x@y>\n\n", NULL, FALSE, NULL },
    { "Content-Type: text/plain\nContent-Transfer-Encoding: BASE64\n\n", "text/plain", FALSE, "BASE64" },
    { "Content-Transfer-Encoding:\n quoted-printable\n\n", NULL, FALSE, "quoted-printable" },
    { "Content-Transfer-Encoding: quoted-\n printable\n\n", NULL, FALSE, "quoted- printable" },
    { "Content-Type: message/external-body; access-type=URL; URL=\"http://h/\"\n\n",
      "message/external-body", FALSE, NULL },
    /* no blank line: the phantom header ends at the end of the entity */
    { "Content-Type: text/plain", "text/plain", FALSE, NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_auto (Read) r = { 0 };
    g_test_message ("inner case %u", i);
    read_ref (&r, CT "access-type=URL; URL=\"http://h/x\"\n", cases[i].inner);
    g_assert_cmpint (r.ref->read_reason, ==, EB_REASON_RESOLVED);
    g_assert_cmpstr (r.ref->inner_type, ==, cases[i].type);
    g_assert_cmpint (r.ref->inner_type_bad, ==, cases[i].bad);
    g_assert_cmpstr (r.ref->inner_cte, ==, cases[i].cte);
  }
}

/* Offsets inside a larger buffer, CRLF line endings. */
static void
test_offsets (void)
{
  const char *buf =
    "--b\r\n"
    "Content-Type: message/external-body; access-type=URL;\r\n"
    " URL=\"data:,x\"\r\n"
    "\r\n"
    "Content-Type: text/plain\r\n"
    "Content-Transfer-Encoding: base64\r\n"
    "\r\n"
    "\r\n--b--\r\n";
  g_autoptr (EbRef) ref = eb_extref_new ();
  ref->block_start = 5;
  ref->content_start = (gsize) (strstr (buf, "Content-Type: text") - buf);
  ref->end = (gsize) (strstr (buf, "\r\n\r\n--b--") - buf) + 2;
  ref->located = TRUE;
  {
    eb_extref_read (ref, buf, strlen (buf));
    g_assert_cmpint (ref->read_reason, ==, EB_REASON_RESOLVED);
    g_assert_cmpstr (ref->access_type, ==, "url");
    g_assert_cmpstr (ref->url, ==, "data:,x");
    g_assert_cmpstr (ref->inner_type, ==, "text/plain");
    g_assert_cmpstr (ref->inner_cte, ==, "base64");
    g_assert_cmpuint (ref->outer->fields->len, ==, 1);
    g_assert_cmpuint (ref->inner->fields->len, ==, 2);
    g_assert_cmpuint (g_array_index (ref->outer->fields, EbHeaderField, 0).start, ==, 5);
    g_assert_cmpuint (g_array_index (ref->inner->fields, EbHeaderField, 0).start, ==,
                      ref->content_start);
  }
}

/* The outer header block: one already scanned at the ref's offsets is kept
 * (eb-message scans it to locate the ref), one from other offsets is scanned
 * again; either way the reading is the same. */
static void
test_outer_kept (void)
{
  const char *buf =
    "X-Before: 1\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n"
    "\n"
    "Content-Type: text/plain\n"
    "\n";
  gsize ct = (gsize) (strstr (buf, "Content-Type") - buf);
  g_autoptr (EbRef) ref = eb_extref_new ();
  ref->block_start = ct;
  ref->content_start = (gsize) (strstr (buf, "\n\n") - buf) + 2;
  ref->end = strlen (buf);
  ref->located = TRUE;

  /* stale: the block of other offsets (the whole header) */
  ref->outer = eb_header_block_scan (buf, 0, ref->content_start);
  eb_extref_read (ref, buf, strlen (buf));
  g_assert_cmpuint (ref->outer->start, ==, ct);
  g_assert_cmpuint (ref->outer->body, ==, ref->content_start);
  g_assert_cmpuint (ref->outer->fields->len, ==, 1);
  g_assert_cmpstr (ref->url, ==, "data:,x");

  /* current: kept as it is, the rest read afresh */
  const EbHeaderBlock *outer = ref->outer;
  g_clear_pointer (&ref->url, g_free);
  eb_extref_read (ref, buf, strlen (buf));
  g_assert_true (ref->outer == outer);
  g_assert_true (eb_extref_outer (ref, buf) == outer);
  g_assert_cmpstr (ref->url, ==, "data:,x");
  g_assert_cmpstr (ref->inner_type, ==, "text/plain");
  g_assert_cmpint (ref->read_reason, ==, EB_REASON_RESOLVED);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/extref/access-type", test_access_type);
  g_test_add_func ("/extref/first-reason", test_first_reason);
  g_test_add_func ("/extref/parameters", test_parameters);
  g_test_add_func ("/extref/url-reassembly", test_url_reassembly);
  g_test_add_func ("/extref/outer-cte", test_outer_cte);
  g_test_add_func ("/extref/inner", test_inner);
  g_test_add_func ("/extref/offsets", test_offsets);
  g_test_add_func ("/extref/outer-kept", test_outer_kept);
  return g_test_run ();
}
