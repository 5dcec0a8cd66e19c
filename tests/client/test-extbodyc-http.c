/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-extbodyc-http.c - extbodyc's answer parser (filters/client/extbodyc-http.c)
 * case by case: each framing, what is forgiven (LF alone, interim answers,
 * chunk extensions and trailers) and what is refused (a bare CR, a folded
 * field, two lengths, a length and chunks, another transfer coding, bytes
 * past the framing, the limits), and the INCOMPLETE/INVALID line at EOF;
 * and the daemon's side of the same rules (issue 39): a request's head, its
 * refusals and their statuses, the same field lines refused by both ends,
 * and the chunk decoder fed in two pieces cut anywhere. */
#include <glib.h>
#include <string.h>

#include "extbodyc-http.h"

/* the body limit of these cases */
#define MAX_BODY 1000

static EbcHttpState
parse (const char *text, int at_eof, EbcHttpAnswer *a)
{
  return ebc_http_parse (text, strlen (text), at_eof, MAX_BODY, a);
}

/* @text is complete (closed or not) with @body */
static void
assert_body (const char *text, const char *body)
{
  EbcHttpAnswer a;
  g_assert_cmpint (parse (text, 1, &a), ==, EBC_HTTP_COMPLETE);
  char *out = g_malloc (a.body_len + 1);
  g_assert_cmpuint (ebc_http_body (text, &a, out), ==, strlen (body));
  g_assert_cmpmem (out, a.body_len, body, strlen (body));
  g_free (out);
}

static void
assert_invalid (const char *text, const char *reason)
{
  EbcHttpAnswer a;
  g_assert_cmpint (parse (text, 1, &a), ==, EBC_HTTP_INVALID);
  g_assert_nonnull (strstr (a.reason, reason));
}

static void
test_length (void)
{
  const char *t = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nExtbody-Changed: yes\r\n"
                  "Extbody-References: 2\r\nExtbody-Resolved: 1\r\n\r\nhello";
  EbcHttpAnswer a;
  g_assert_cmpint (parse (t, 0, &a), ==, EBC_HTTP_COMPLETE);
  g_assert_cmpint (a.status, ==, 200);
  g_assert_cmpint (a.changed, ==, 1);
  g_assert_cmpint (a.references, ==, 2);
  g_assert_cmpint (a.resolved, ==, 1);
  g_assert_cmpint (a.frame, ==, EBC_HTTP_FRAME_LENGTH);
  assert_body (t, "hello");
  /* short of its length: waits, and at the close is invalid */
  g_autofree char *cut = g_strndup (t, strlen (t) - 2);
  g_assert_cmpint (parse (cut, 0, &a), ==, EBC_HTTP_INCOMPLETE);
  assert_invalid (cut, "closed inside the body");
  /* longer than its length */
  g_autofree char *more = g_strconcat (t, "!", NULL);
  assert_invalid (more, "bytes after the answer");
  /* LF alone, a status without reason, the same length twice */
  assert_body ("HTTP/1.0 404\nContent-Length: 2\ncontent-length: 2\n\nno", "no");
  assert_invalid ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nno", "Content-Length");
  assert_invalid ("HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n", "Content-Length");
  assert_invalid ("HTTP/1.1 200 OK\r\nContent-Length: 1001\r\n\r\n", "over the answer's limit");
}

static void
test_chunked (void)
{
  const char *t = "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n"
                  "5;a=b\r\nhello\r\n1\r\n \r\nA \r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n";
  assert_body (t, "hello 0123456789");
  EbcHttpAnswer a;
  for (size_t cut = 1; cut < strlen (t); cut++) {
    g_autofree char *p = g_strndup (t, cut);
    g_assert_cmpint (parse (p, 0, &a), ==, EBC_HTTP_INCOMPLETE);
    g_assert_cmpint (parse (p, 1, &a), ==, EBC_HTTP_INVALID);
  }
  assert_invalid ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "transfer coding");
  assert_invalid ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
                  "both");
  assert_invalid ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "no hex number");
  assert_invalid ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", "longer than its size");
  assert_invalid ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n", "no hex number");
  assert_invalid ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3E9\r\n", "over the answer's limit");
  assert_invalid ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nx", "bytes after");
}

static void
test_eof (void)
{
  const char *t = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end";
  EbcHttpAnswer a;
  g_assert_cmpint (parse (t, 0, &a), ==, EBC_HTTP_INCOMPLETE);
  assert_body (t, "to the end");
  g_autofree char *big = g_strnfill (MAX_BODY + 1, 'x');
  g_autofree char *over = g_strconcat ("HTTP/1.1 200 OK\r\n\r\n", big, NULL);
  g_assert_cmpint (parse (over, 0, &a), ==, EBC_HTTP_INVALID);
}

static void
test_head (void)
{
  EbcHttpAnswer a;
  /* garbage is told at its first bytes */
  g_assert_cmpint (parse ("SSH-2.0", 0, &a), ==, EBC_HTTP_INVALID);
  g_assert_cmpint (parse ("HTTP/1", 0, &a), ==, EBC_HTTP_INCOMPLETE);
  assert_invalid ("", "without an answer");
  assert_invalid ("HTTP/2 200 OK\r\n\r\n", "status line");
  assert_invalid ("HTTP/1.1 20 OK\r\n\r\n", "status line");
  assert_invalid ("HTTP/1.1 200OK\r\n\r\n", "status line");
  assert_invalid ("HTTP/1.1 200 OK\rContent-Length: 0\r\n\r\n", "bare CR");
  assert_invalid ("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", "folded");
  assert_invalid ("HTTP/1.1 200 OK\r\nX : a\r\n\r\n", "no field");
  assert_invalid ("HTTP/1.1 200 OK\r\nX: a\001b\r\n\r\n", "control character");
  assert_invalid ("HTTP/1.1 101 Switching Protocols\r\n\r\n", "protocol switch");
  /* interim answers skipped, at most EBC_HTTP_MAX_INTERIM */
  assert_body ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX: 1\r\n\r\n"
               "HTTP/1.1 204 No Content\r\n\r\n", "");
  GString *s = g_string_new (NULL);
  for (int i = 0; i <= EBC_HTTP_MAX_INTERIM; i++)
    g_string_append (s, "HTTP/1.1 100 Continue\r\n\r\n");
  g_string_append (s, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  assert_invalid (s->str, "interim");
  g_string_free (s, TRUE);
  /* the header's limit, with or without its end in sight */
  g_autofree char *pad = g_strnfill (EBC_HTTP_MAX_HEADER, 'a');
  g_autofree char *huge = g_strconcat ("HTTP/1.1 200 OK\r\nX: ", pad, "\r\n\r\n", NULL);
  g_assert_cmpint (parse (huge, 0, &a), ==, EBC_HTTP_INVALID);
  g_assert_nonnull (strstr (a.reason, "64 KiB"));
  /* unknown values of the extbody fields read as absent */
  g_assert_cmpint (parse ("HTTP/1.1 200 OK\r\nExtbody-Changed: maybe\r\nExtbody-Resolved: x\r\n"
                          "Content-Length: 0\r\n\r\n", 0, &a), ==, EBC_HTTP_COMPLETE);
  g_assert_cmpint (a.changed, ==, -1);
  g_assert_cmpint (a.resolved, ==, -1);
  g_assert_cmpint (a.references, ==, -1);
}

/* ---- requests: the daemon's side of the same rules ------------------------ */

static EbcHttpState
parse_req (const char *text, EbcHttpRequest *r)
{
  return ebc_http_parse_request (text, strlen (text), r);
}

static void
assert_refused (const char *text, int status, const char *reason)
{
  EbcHttpRequest r;
  g_test_message ("%s", text);
  g_assert_cmpint (parse_req (text, &r), ==, EBC_HTTP_INVALID);
  g_assert_cmpint (r.status, ==, status);
  g_assert_nonnull (strstr (r.reason, reason));
}

static void
test_request (void)
{
  const char *t = "\r\nPOST /rewrite?stored HTTP/1.1\r\nHost: localhost\r\ncontent-length: 5\r\n"
                  "Extbody-Queue-Id:  Q1 \r\nConnection: keep-alive, Close\r\nExpect: 100-Continue\r\n\r\nhello";
  EbcHttpRequest r;
  g_assert_cmpint (parse_req (t, &r), ==, EBC_HTTP_COMPLETE);
  g_assert_cmpmem (t + r.method, r.method_len, "POST", 4);
  g_assert_cmpmem (t + r.target, r.target_len, "/rewrite?stored", 15);
  g_assert_cmpint (r.minor, ==, 1);
  g_assert_cmpint (r.frame, ==, EBC_HTTP_FRAME_LENGTH);
  g_assert_cmpuint (r.length, ==, 5);
  g_assert_true (r.close);
  g_assert_true (r.expect_continue);
  g_assert_cmpstr (t + r.head_len, ==, "hello");
  gsize n = 0;
  const char *q = ebc_http_field (t, r.head_len, "extbody-queue-id", &n);
  g_assert_cmpmem (q, n, "Q1", 2);
  g_assert_null (ebc_http_field (t, r.head_len, "Extbody-Queue", &n));
  /* every cut of the head waits for more */
  for (gsize cut = 0; cut < r.head_len; cut++) {
    g_autofree char *p = g_strndup (t, cut);
    g_assert_cmpint (parse_req (p, &r), ==, EBC_HTTP_INCOMPLETE);
  }
  /* chunked, no body, HTTP/1.0 closes unless kept alive, LF alone */
  g_assert_cmpint (parse_req ("POST / HTTP/1.1\nHost: x\nTransfer-Encoding: chunked\n\n", &r), ==, EBC_HTTP_COMPLETE);
  g_assert_cmpint (r.frame, ==, EBC_HTTP_FRAME_CHUNKED);
  g_assert_false (r.close);
  g_assert_cmpint (parse_req ("GET /metrics HTTP/1.0\r\n\r\n", &r), ==, EBC_HTTP_COMPLETE);
  g_assert_cmpint (r.frame, ==, EBC_HTTP_FRAME_EOF);
  g_assert_true (r.close);
  g_assert_cmpint (parse_req ("GET /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", &r), ==, EBC_HTTP_COMPLETE);
  g_assert_false (r.close);
  /* the framing RFC 9112 section 6.3 calls ambiguous, and the rest refused */
  assert_refused ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "both");
  assert_refused ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 10\r\n\r\n", 400, "both");
  assert_refused ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400, "Content-Length");
  assert_refused ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n", 400, "Content-Length");
  assert_refused ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x5\r\n\r\n", 400, "Content-Length");
  assert_refused ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1234567890123456789\r\n\r\n", 400, "Content-Length");
  assert_refused ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "transfer coding");
  assert_refused ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
                  400, "chunked twice");
  assert_refused ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0");
  assert_refused ("POST / HTTP/1.1\r\n\r\n", 400, "without Host");
  assert_refused ("POST / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", 400, "two Host");
  assert_refused ("POST / HTTP/1.1\r\nHost: x\r\nX : y\r\n\r\n", 400, "no field");
  assert_refused ("POST / HTTP/1.1\r\nHost: x\r\nX: y\r\n z\r\n\r\n", 400, "folded");
  assert_refused ("POST / HTTP/1.1\r\nHost: x\rX: y\r\n\r\n", 400, "bare CR");
  assert_refused ("POST / HTTP/1.1\r\nHost: x\r\nX: a\001b\r\n\r\n", 400, "control character");
  assert_refused ("POST / HTTP/2.0\r\n\r\n", 505, "version");
  assert_refused ("POST  / HTTP/1.1\r\n\r\n", 400, "request line");
  assert_refused ("POST / HTTP/1.1 \r\n\r\n", 400, "request line");
  assert_refused ("POST / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n", 417, "expectation");
  assert_refused ("\r\n\r\n\r\n\r\n\r\nPOST / HTTP/1.1\r\n", 400, "empty lines");
  assert_refused ("\x16\x03\x01", 400, "no request line");
  g_autofree char *pad = g_strnfill (EBC_HTTP_MAX_TARGET + 1, 'a');
  g_autofree char *long_target = g_strconcat ("GET /", pad, " HTTP/1.1\r\n", NULL);
  assert_refused (long_target, 414, "target");
  g_autofree char *pad2 = g_strnfill (EBC_HTTP_MAX_HEADER, 'a');
  g_autofree char *huge = g_strconcat ("POST / HTTP/1.1\r\nHost: x\r\nX: ", pad2, NULL);
  assert_refused (huge, 431, "64 KiB");
}

/* The same field lines are refused by both ends, or by neither: one set of
 * rules (the framing fields included). */
static void
test_same_rules (void)
{
  const char *fields[] = {
    "Content-Length: 5\r\n", "Content-Length: 5\r\nContent-Length: 5\r\n", "Content-Length: 5\r\nContent-Length: 4\r\n",
    "Content-Length: +5\r\n", "Content-Length: 5, 5\r\n", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
    "Transfer-Encoding: gzip\r\n", "Transfer-Encoding: CHUNKED\r\n", "X: a\r\n b\r\n", "X : a\r\n", "X: a\rb\r\n",
    "X:\r\n", "X:a\r\n", "\"X\": a\r\n", "X\001: a\r\n", "X: \xff\r\n",
  };
  for (guint i = 0; i < G_N_ELEMENTS (fields); i++) {
    g_autofree char *answer = g_strconcat ("HTTP/1.1 200 OK\r\n", fields[i], "\r\n", NULL);
    g_autofree char *request = g_strconcat ("POST / HTTP/1.1\r\nHost: x\r\n", fields[i], "\r\n", NULL);
    EbcHttpAnswer a;
    EbcHttpRequest r;
    EbcHttpState sa = ebc_http_parse (answer, strlen (answer), 0, MAX_BODY, &a);
    EbcHttpState sr = parse_req (request, &r);
    g_test_message ("%s: answer %d, request %d", fields[i], sa, sr);
    g_assert_cmpint (sa == EBC_HTTP_INVALID, ==, sr == EBC_HTTP_INVALID);
  }
}

/* The chunk decoder as the daemon runs it, the bytes given in two pieces
 * cut anywhere, the rest of a line not yet ended given again: the same data
 * and the same end as in one piece. */
static void
test_chunks_split (void)
{
  const char *body = "5;a=b\r\nhello\r\n1\r\n \r\nA \r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT";
  gsize len = strlen (body);
  for (gsize cut = 0; cut <= len; cut++) {
    EbcHttpChunks c = { 0 };
    GString *data = g_string_new (NULL);
    GString *in = g_string_new_len (body, (gssize) cut);
    gboolean fed = FALSE;
    EbcHttpState s;
    for (;;) {
      gsize used, at, dl;
      const char *why;
      s = ebc_http_chunks (&c, in->str, in->len, fed, 1000, &used, &at, &dl, &why);
      g_string_append_len (data, in->str + at, (gssize) dl);
      g_string_erase (in, 0, (gssize) used);
      if (s != EBC_HTTP_INCOMPLETE)
        break;
      if (dl == 0) {
        g_assert_false (fed);
        g_string_append_len (in, body + cut, (gssize) (len - cut));
        fed = TRUE;
      }
    }
    g_assert_cmpint (s, ==, EBC_HTTP_COMPLETE);
    if (!fed)   /* complete within the first piece: the rest is the next message's */
      g_string_append_len (in, body + cut, (gssize) (len - cut));
    g_assert_cmpstr (data->str, ==, "hello 0123456789");
    g_assert_cmpstr (in->str, ==, "NEXT");
    g_assert_cmpuint (c.total, ==, 16);
    g_string_free (data, TRUE);
    g_string_free (in, TRUE);
  }
  /* the limit, and a size line without end */
  EbcHttpChunks c = { 0 };
  gsize used, at, dl;
  const char *why;
  g_assert_cmpint (ebc_http_chunks (&c, "11\r\n", 4, 0, 16, &used, &at, &dl, &why), ==, EBC_HTTP_INVALID);
  g_assert_nonnull (strstr (why, "over the limit"));
  memset (&c, 0, sizeof c);
  g_autofree char *ext = g_strnfill (EBC_HTTP_MAX_CHUNK_LINE, ';');
  g_assert_cmpint (ebc_http_chunks (&c, ext, strlen (ext), 0, 16, &used, &at, &dl, &why), ==, EBC_HTTP_INVALID);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/extbodyc-http/length", test_length);
  g_test_add_func ("/extbodyc-http/chunked", test_chunked);
  g_test_add_func ("/extbodyc-http/eof", test_eof);
  g_test_add_func ("/extbodyc-http/head", test_head);
  g_test_add_func ("/extbodyc-http/request", test_request);
  g_test_add_func ("/extbodyc-http/same-rules", test_same_rules);
  g_test_add_func ("/extbodyc-http/chunks-split", test_chunks_split);
  return g_test_run ();
}
