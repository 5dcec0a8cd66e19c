/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-nntp.c - the NNTP response reader and the news: and nntp: URLs
 * (src/net/eb-nntp.c), case by case: status lines, dot-unstuffing, the end
 * of a data block, every limit at, below and above it, bytes fed one at a
 * time, and URLs that name no article or none that can exist. */
#include <string.h>
#include "eb-nntp.h"

/* Feed @in in pieces of @cut bytes; returns the last step, with *@rest the
 * bytes after the event. */
static EbNntpStep
feed (EbNntpReader *r, const char *in, gsize cut, gsize *rest)
{
  gsize len = strlen (in), pos = 0;
  EbNntpStep s = EB_NNTP_MORE;
  while (pos < len) {
    gsize n = MIN (cut, len - pos), used = 0;
    s = eb_nntp_reader_feed (r, in + pos, n, &used);
    pos += used;
    if (s != EB_NNTP_MORE)
      break;
  }
  *rest = len - pos;
  return s;
}

static void
test_status (void)
{
  static const struct {
    const char *in;
    EbNntpStep  step;
    guint       code;
    const char *text;
  } cases[] = {
    { "200 news.example.org ready\r\n", EB_NNTP_STATUS, 200, "news.example.org ready" },
    { "201\r\n", EB_NNTP_STATUS, 201, "" },
    { "430 No Such Article Found\n", EB_NNTP_STATUS, 430, "No Such Article Found" },
    { "211 3 1 3 misc.test\r\n", EB_NNTP_STATUS, 211, "3 1 3 misc.test" },
    { "220 0 <a@b> \x01\x7f\xff\r\n", EB_NNTP_STATUS, 220, "0 <a@b> ???" },
    { "2000 x\r\n", EB_NNTP_FAILED, 0, NULL },
    { "600 x\r\n", EB_NNTP_FAILED, 0, NULL },
    { "099 x\r\n", EB_NNTP_FAILED, 0, NULL },
    { "20\r\n", EB_NNTP_FAILED, 0, NULL },
    { "\r\n", EB_NNTP_FAILED, 0, NULL },
    { "HTTP/1.1 200 OK\r\n", EB_NNTP_FAILED, 0, NULL },
    { "200 no end", EB_NNTP_MORE, 0, NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    for (gsize cut = 1; cut <= 64; cut *= 4) {
      g_autoptr (EbNntpReader) r = eb_nntp_reader_new (1000, 1000);
      gsize rest = 0;
      EbNntpStep s = feed (r, cases[i].in, cut, &rest);
      g_assert_cmpint (s, ==, cases[i].step);
      g_assert_cmpuint (rest, ==, 0);
      if (s == EB_NNTP_STATUS) {
        g_assert_cmpuint (eb_nntp_reader_code (r), ==, cases[i].code);
        g_assert_cmpstr (eb_nntp_reader_text (r), ==, cases[i].text);
      }
    }
  }
  /* a status line of 512 bytes with its CR LF is the longest (RFC 3977 3.1) */
  GString *l = g_string_new ("200 ");
  while (l->len < 510)
    g_string_append_c (l, 'x');
  g_string_append (l, "\r\n");
  g_autoptr (EbNntpReader) ok = eb_nntp_reader_new (1000, 1000);
  gsize rest = 0;
  g_assert_cmpint (feed (ok, l->str, 7, &rest), ==, EB_NNTP_STATUS);
  g_string_insert_c (l, 4, 'y');
  g_autoptr (EbNntpReader) over = eb_nntp_reader_new (1000, 1000);
  g_assert_cmpint (feed (over, l->str, 7, &rest), ==, EB_NNTP_FAILED);
  const char *d = NULL;
  g_assert_cmpint (eb_nntp_reader_failure (over, &d), ==, EB_REASON_FETCH_FAILED);
  g_assert_nonnull (strstr (d, "status line longer than 510 bytes"));
  /* endless bytes without a line end are refused as they come */
  g_string_truncate (l, 0);
  while (l->len < 100000)
    g_string_append (l, "2000000000");
  g_autoptr (EbNntpReader) endless = eb_nntp_reader_new (1000, 1000);
  g_assert_cmpint (feed (endless, l->str, 4096, &rest), ==, EB_NNTP_FAILED);
  g_assert_cmpuint (rest, >, 90000);
  g_string_free (l, TRUE);
}

/* A status line, then a data block */
static void
test_block (void)
{
  static const struct {
    const char *in;
    EbNntpStep  step;
    const char *block;   /* END: the data; FAILED: a piece of the detail */
    gsize       rest;
    EbReason    why;
  } cases[] = {
    { "220 1 <a@b>\r\nSubject: x\r\n\r\nbody\r\n.\r\n", EB_NNTP_END, "Subject: x\r\n\r\nbody\r\n", 0 },
    /* dot-stuffing undone: ".." is ".", "..." is ".." */
    { "220 ok\r\n..\r\n...x\r\n.y\r\n.\r\n", EB_NNTP_END, ".\r\n..x\r\ny\r\n", 0 },
    /* LF alone ends a line too; what follows the end is not read */
    { "220 ok\nline\n.\nQUIT-ANSWER\r\n", EB_NNTP_END, "line\r\n", 13 },
    /* an empty article */
    { "220 ok\r\n.\r\n", EB_NNTP_END, "", 0 },
    /* a CR inside a line is data */
    { "220 ok\r\na\rb\r\n.\r\n", EB_NNTP_END, "a\rb\r\n", 0 },
    /* ". " is not the end */
    { "220 ok\r\n. \r\n.\r\n", EB_NNTP_END, " \r\n", 0 },
    /* no terminator: more wanted (the caller sees the connection close) */
    { "220 ok\r\nline\r\n", EB_NNTP_MORE, NULL, 0 },
    { "220 ok\r\nline\r\n.", EB_NNTP_MORE, NULL, 0 },
    /* a line of 16 bytes is the longest here; 17 fails */
    { "220 ok\r\n0123456789abcdef\r\n.\r\n", EB_NNTP_END, "0123456789abcdef\r\n", 0 },
    { "220 ok\r\n0123456789abcdefg\r\n.\r\n", EB_NNTP_FAILED, "data line longer than 16 bytes", 0,
      EB_REASON_FETCH_FAILED },
    { "220 ok\r\n0123456789abcdef\n.\r\n", EB_NNTP_END, "0123456789abcdef\r\n", 0 },
    /* 64 bytes of data is the most here (CR LF counted) */
    { "220 ok\r\n0123456789abcd\r\n0123456789abcd\r\n0123456789abcd\r\n0123456789abcd\r\n.\r\n",
      EB_NNTP_END, "0123456789abcd\r\n0123456789abcd\r\n0123456789abcd\r\n0123456789abcd\r\n", 0 },
    { "220 ok\r\n0123456789abcd\r\n0123456789abcd\r\n0123456789abcd\r\n0123456789abcde\r\n.\r\n",
      EB_NNTP_FAILED, "more than 64 bytes", 0, EB_REASON_PART_TOO_LARGE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    for (gsize cut = 1; cut <= 256; cut *= 2) {
      g_autoptr (EbNntpReader) r = eb_nntp_reader_new (16, 64);
      const char *in = cases[i].in;
      gsize rest = 0;
      g_assert_cmpint (feed (r, in, cut, &rest), ==, EB_NNTP_STATUS);
      g_assert_cmpuint (eb_nntp_reader_code (r), ==, 220);
      eb_nntp_reader_want_block (r);
      const char *more = in + strlen (in) - rest;
      EbNntpStep s = feed (r, more, cut, &rest);
      g_test_message ("case %u cut %" G_GSIZE_FORMAT ": step %d", i, cut, s);
      g_assert_cmpint (s, ==, cases[i].step);
      if (s == EB_NNTP_END) {
        g_autoptr (GBytes) b = eb_nntp_reader_steal_block (r);
        g_assert_cmpmem (g_bytes_get_data (b, NULL), g_bytes_get_size (b), cases[i].block, strlen (cases[i].block));
        g_assert_cmpuint (rest, ==, cases[i].rest);
      } else if (s == EB_NNTP_FAILED) {
        const char *d = NULL;
        g_assert_cmpint (eb_nntp_reader_failure (r, &d), ==, cases[i].why);
        g_assert_nonnull (strstr (d, cases[i].block));
        /* and it stays failed */
        gsize used = 9;
        g_assert_cmpint (eb_nntp_reader_feed (r, ".\r\n", 3, &used), ==, EB_NNTP_FAILED);
        g_assert_cmpuint (used, ==, 0);
      }
    }
  }
}

static void
test_urls (void)
{
  static const struct {
    const char *url;
    EbReason    reason;
  } cases[] = {
    { "news:1234@news.example.org", EB_REASON_RESOLVED },
    { "NEWS:1234@news.example.org", EB_REASON_RESOLVED },
    { "news:<1234@news.example.org>", EB_REASON_RESOLVED },
    { "news:a%24b@c", EB_REASON_RESOLVED },
    { "news:comp.lang.c", EB_REASON_NOT_DOCUMENT },
    { "news:*", EB_REASON_NOT_DOCUMENT },
    { "news:", EB_REASON_NOT_DOCUMENT },
    { "news:a%20b@c", EB_REASON_URL_INVALID },
    { "news:a%0D%0AQUIT@c", EB_REASON_URL_INVALID },
    { "news:a%3E@c", EB_REASON_URL_INVALID },
    { "news:<a>b@c>", EB_REASON_URL_INVALID },
    { "news:a%0@c", EB_REASON_URL_INVALID },
    { "news:<>@", EB_REASON_URL_INVALID },
    { "nntp://news.example.org/comp.lang.c/12", EB_REASON_RESOLVED },
    { "nntp://news.example.org:1119/comp.lang.c/12", EB_REASON_RESOLVED },
    { "nntp://[::1]:119/a.b/1", EB_REASON_RESOLVED },
    { "nntp://[::1]/a.b/1", EB_REASON_RESOLVED },
    { "nntp://news.example.org/comp.lang.c", EB_REASON_NOT_DOCUMENT },
    { "nntp://news.example.org/comp.lang.c/", EB_REASON_NOT_DOCUMENT },
    { "nntp://news.example.org/", EB_REASON_NOT_DOCUMENT },
    { "nntp://news.example.org", EB_REASON_NOT_DOCUMENT },
    { "nntp://news.example.org:0/a/1", EB_REASON_URL_INVALID },
    { "nntp://news.example.org:65536/a/1", EB_REASON_URL_INVALID },
    { "nntp://news.example.org:/a/1", EB_REASON_URL_INVALID },
    { "nntp://u:p@news.example.org/a/1", EB_REASON_CREDENTIALS },
    { "nntp://news.example.org/a/x1", EB_REASON_URL_INVALID },
    { "nntp://news.example.org/a/0", EB_REASON_URL_INVALID },
    { "nntp://news.example.org/a/12345678901234567", EB_REASON_URL_INVALID },
    { "nntp://news.example.org/a%20b/1", EB_REASON_URL_INVALID },
    { "nntp://news.example.org/a%0D%0AQUIT/1", EB_REASON_URL_INVALID },
    { "nntp://news.example.org/a/1?x", EB_REASON_URL_INVALID },
    { "nntp:news.example.org/a/1", EB_REASON_URL_INVALID },
    { "nntp:///a/1", EB_REASON_URL_INVALID },
    { "http://h/x", EB_REASON_RESOLVED },   /* not news: nothing to say */
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    char *detail = NULL;
    EbReason r = eb_nntp_classify (cases[i].url, &detail);
    g_test_message ("%s: %s (%s)", cases[i].url, eb_reason_token (r), detail ? detail : "");
    g_assert_cmpstr (eb_reason_token (r), ==, eb_reason_token (cases[i].reason));
    g_assert_true ((r == EB_REASON_RESOLVED) == (detail == NULL));
    g_free (detail);
  }
  g_assert_true (eb_nntp_is_url ("NNTP://h/g/1"));
  g_assert_false (eb_nntp_is_url ("snews://h/g/1"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/nntp/status", test_status);
  g_test_add_func ("/nntp/block", test_block);
  g_test_add_func ("/nntp/urls", test_urls);
  return g_test_run ();
}
