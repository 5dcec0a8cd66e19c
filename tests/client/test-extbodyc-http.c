/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-extbodyc-http.c - extbodyc's answer parser (filters/client/extbodyc-http.c)
 * case by case: each framing, what is forgiven (LF alone, interim answers,
 * chunk extensions and trailers) and what is refused (a bare CR, a folded
 * field, two lengths, a length and chunks, another transfer coding, bytes
 * past the framing, the limits), and the INCOMPLETE/INVALID line at EOF. */
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

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/extbodyc-http/length", test_length);
  g_test_add_func ("/extbodyc-http/chunked", test_chunked);
  g_test_add_func ("/extbodyc-http/eof", test_eof);
  g_test_add_func ("/extbodyc-http/head", test_head);
  return g_test_run ();
}
