/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbodyc-http.c - one HTTP/1.1 answer (RFC 9112) read from the bytes
 * received: status line, header fields, the body framed by Content-Length,
 * by chunks or by the connection's end. Strict where leniency could let a
 * wrong body through as the message: a bare CR, a folded field, two
 * different lengths, a length and chunks together, a transfer coding other
 * than chunked, bytes after the answer are all INVALID, and the client then
 * passes the message through unchanged. A line may end in LF alone (RFC 9112
 * section 2.2 lets a recipient read it so); nothing else is forgiven. */
#include "extbodyc-http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

/* Content-Length and Extbody-* counts: 18 decimal digits cannot overflow a
 * 64-bit signed integer; a chunk size of 15 hex digits cannot either. */
#define EBC_HTTP_MAX_DEC_DIGITS 18
#define EBC_HTTP_MAX_HEX_DIGITS 15

static EbcHttpState
invalid (EbcHttpAnswer *a, const char *why)
{
  a->reason = why;
  return EBC_HTTP_INVALID;
}

/* More bytes are needed: INCOMPLETE, or INVALID when none will come. */
static EbcHttpState
incomplete (EbcHttpAnswer *a, int at_eof, const char *why)
{
  if (!at_eof)
    return EBC_HTTP_INCOMPLETE;
  return invalid (a, why);
}

/* The line at @pos, ended by LF (CR LF) before @limit: its content in
 * [@pos, *@end), the next line at *@next. 1 found, 0 not within the bytes
 * there are, -1 a NUL or a CR not followed by LF. */
static int
next_line (const char *buf, size_t limit, size_t pos, size_t *end, size_t *next)
{
  for (size_t i = pos; i < limit; i++) {
    char c = buf[i];
    if (c == '\n') {
      *end = i;
      *next = i + 1;
      return 1;
    }
    if (c == '\0')
      return -1;
    if (c == '\r') {
      if (i + 1 >= limit)
        return 0;
      if (buf[i + 1] != '\n')
        return -1;
      *end = i;
      *next = i + 2;
      return 1;
    }
  }
  return 0;
}

static int
is_tchar (unsigned char c)
{
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
    return 1;
  return c && strchr ("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Field values and reason phrases: VCHAR, SP, HTAB, obs-text; no other control. */
static int
is_text (const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char) s[i];
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return 0;
  }
  return 1;
}

static int
equals_nocase (const char *s, size_t n, const char *word)
{
  size_t w = strlen (word);
  if (n != w)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char a = s[i], b = word[i];
    if (a >= 'A' && a <= 'Z')
      a = (char) (a - 'A' + 'a');
    if (a != b)
      return 0;
  }
  return 1;
}

/* 1*DIGIT, at most EBC_HTTP_MAX_DEC_DIGITS; -1 otherwise. */
static long long
decimal (const char *s, size_t n)
{
  if (n == 0 || n > EBC_HTTP_MAX_DEC_DIGITS)
    return -1;
  long long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

/* "HTTP/1.x SP 3DIGIT [SP reason]": the status, or -1. */
static int
status_line (const char *s, size_t n)
{
  if (n < 12 || memcmp (s, "HTTP/1.", 7) != 0 || s[7] < '0' || s[7] > '9' || s[8] != ' ')
    return -1;
  int status = 0;
  for (size_t i = 9; i < 12; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    status = status * 10 + (s[i] - '0');
  }
  if (status < 100 || status > 599)
    return -1;
  if (n > 12 && (s[12] != ' ' || !is_text (s + 13, n - 13)))
    return -1;
  return status;
}

/* What the header fields say, before the framing is decided. */
typedef struct {
  long long length;     /* Content-Length, -1 absent */
  int       chunked;    /* Transfer-Encoding: chunked seen */
} Fields;

/* One "name: value" line: 0, or -1 with a->reason. @final: the fields of
 * the final answer (an interim answer's and the trailer's are only checked). */
static int
field_line (const char *s, size_t n, int final, Fields *f, EbcHttpAnswer *a)
{
  if (s[0] == ' ' || s[0] == '\t') {
    a->reason = "a folded header field (obsolete line folding)";
    return -1;
  }
  size_t colon = 0;
  while (colon < n && is_tchar ((unsigned char) s[colon]))
    colon++;
  if (colon == 0 || colon >= n || s[colon] != ':') {
    a->reason = "a header line that is no field";
    return -1;
  }
  size_t v = colon + 1, e = n;
  while (v < e && (s[v] == ' ' || s[v] == '\t'))
    v++;
  while (e > v && (s[e - 1] == ' ' || s[e - 1] == '\t'))
    e--;
  if (!is_text (s + v, e - v)) {
    a->reason = "a control character in a header field";
    return -1;
  }
  if (!final)
    return 0;
  const char *val = s + v;
  size_t vn = e - v;
  if (equals_nocase (s, colon, "content-length")) {
    long long l = decimal (val, vn);
    if (l < 0 || (f->length >= 0 && f->length != l)) {
      a->reason = "a wrong or repeated Content-Length";
      return -1;
    }
    f->length = l;
  } else if (equals_nocase (s, colon, "transfer-encoding")) {
    if (f->chunked || !equals_nocase (val, vn, "chunked")) {
      a->reason = "a transfer coding other than chunked";
      return -1;
    }
    f->chunked = 1;
  } else if (equals_nocase (s, colon, "extbody-changed")) {
    a->changed = equals_nocase (val, vn, "yes") ? 1 : equals_nocase (val, vn, "no") ? 0 : -1;
  } else if (equals_nocase (s, colon, "extbody-references")) {
    a->references = decimal (val, vn);
  } else if (equals_nocase (s, colon, "extbody-resolved")) {
    a->resolved = decimal (val, vn);
  }
  return 0;
}

/* Field lines from @pos to the empty line, within @limit: *@pos goes past
 * the empty line. */
static EbcHttpState
fields (const char *buf, size_t len, size_t limit, int at_eof, int final, size_t *pos, Fields *f,
        EbcHttpAnswer *a)
{
  size_t end, next;
  for (;;) {
    int r = next_line (buf, len < limit ? len : limit, *pos, &end, &next);
    if (r < 0)
      return invalid (a, "a NUL or a bare CR in the header");
    if (r == 0) {
      if (len >= limit)
        return invalid (a, "a header over 64 KiB");
      return incomplete (a, at_eof, "the connection closed inside the header");
    }
    if (end == *pos) {
      *pos = next;
      return EBC_HTTP_COMPLETE;
    }
    if (field_line (buf + *pos, end - *pos, final, f, a) < 0)
      return EBC_HTTP_INVALID;
    *pos = next;
  }
}

/* The chunked body from @pos: its decoded length in a->body_len and its
 * end in a->total_len when COMPLETE; with @out, the chunks copied there. */
static EbcHttpState
chunks (const char *buf, size_t len, size_t pos, int at_eof, size_t max_body, EbcHttpAnswer *a,
        char *out)
{
  size_t decoded = 0, end, next;
  const char *closed = "the connection closed inside the chunked body";
  for (;;) {
    size_t limit = len - pos > EBC_HTTP_MAX_CHUNK_LINE ? pos + EBC_HTTP_MAX_CHUNK_LINE : len;
    int r = next_line (buf, limit, pos, &end, &next);
    if (r < 0)
      return invalid (a, "a NUL or a bare CR in a chunk-size line");
    if (r == 0) {
      if (limit < len || len - pos >= EBC_HTTP_MAX_CHUNK_LINE)
        return invalid (a, "a chunk-size line over 1 KiB");
      return incomplete (a, at_eof, closed);
    }
    size_t size = 0, i = pos;
    for (; i < end && i - pos < EBC_HTTP_MAX_HEX_DIGITS + 1; i++) {
      char c = buf[i];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0)
        break;
      size = size * 16 + (size_t) d;
    }
    if (i == pos || i - pos > EBC_HTTP_MAX_HEX_DIGITS)
      return invalid (a, "a chunk size that is no hex number");
    while (i < end && (buf[i] == ' ' || buf[i] == '\t'))
      i++;
    if (i < end && (buf[i] != ';' || !is_text (buf + i, end - i)))
      return invalid (a, "garbage after a chunk size");
    pos = next;
    if (size == 0)
      break;
    if (size > max_body - decoded)
      return invalid (a, "a chunked body over the answer's limit");
    if (size > len - pos)
      return incomplete (a, at_eof, closed);
    if (out)
      memmove (out + decoded, buf + pos, size);
    decoded += size;
    pos += size;
    /* the chunk's data ends in CR LF (or LF) */
    if (pos < len && buf[pos] == '\n')
      pos++;
    else if (pos + 1 < len && buf[pos] == '\r' && buf[pos + 1] == '\n')
      pos += 2;
    else if (pos == len || (pos + 1 == len && buf[pos] == '\r'))
      return incomplete (a, at_eof, closed);
    else
      return invalid (a, "a chunk longer than its size");
  }
  /* the trailer fields, checked and dropped, bounded as a header is */
  Fields ignored = { -1, 0 };
  size_t limit = len - pos > EBC_HTTP_MAX_HEADER ? pos + EBC_HTTP_MAX_HEADER : len + 1;
  EbcHttpState s = fields (buf, len, limit, at_eof, 0, &pos, &ignored, a);
  if (s != EBC_HTTP_COMPLETE)
    return s;
  a->body_len = decoded;
  a->total_len = pos;
  return EBC_HTTP_COMPLETE;
}

/* The status lines and header fields, interim answers skipped: the final
 * answer's in @a, its framing in @f, the body's start in a->header_len. */
static EbcHttpState
head (const char *buf, size_t len, int at_eof, EbcHttpAnswer *a, Fields *f)
{
  size_t pos = 0, end, next;
  for (int interim = 0;; interim++) {
    /* garbage is told at its first bytes, not after 64 KiB of it */
    size_t have = len - pos < 7 ? len - pos : 7;
    if (memcmp (buf + pos, "HTTP/1.", have) != 0)
      return invalid (a, "no HTTP/1.x status line");
    int r = next_line (buf, len < EBC_HTTP_MAX_HEADER ? len : EBC_HTTP_MAX_HEADER, pos, &end, &next);
    if (r < 0)
      return invalid (a, "a NUL or a bare CR in the status line");
    if (r == 0) {
      if (len >= EBC_HTTP_MAX_HEADER)
        return invalid (a, "a header over 64 KiB");
      return incomplete (a, at_eof, "the connection closed inside the status line");
    }
    a->status = status_line (buf + pos, end - pos);
    if (a->status < 0)
      return invalid (a, "a malformed status line");
    if (a->status == 101)
      return invalid (a, "a protocol switch nobody asked for");
    if (a->status < 200 && interim >= EBC_HTTP_MAX_INTERIM)
      return invalid (a, "too many interim answers");
    pos = next;
    int final = a->status >= 200;
    EbcHttpState s = fields (buf, len, EBC_HTTP_MAX_HEADER, at_eof, final, &pos, f, a);
    if (s != EBC_HTTP_COMPLETE)
      return s;
    if (final) {
      a->header_len = pos;
      return EBC_HTTP_COMPLETE;
    }
  }
}

EbcHttpState
ebc_http_parse (const char *buf, size_t len, int at_eof, size_t max_body, EbcHttpAnswer *a)
{
  memset (a, 0, sizeof *a);
  a->status = -1;
  a->changed = -1;
  a->references = -1;
  a->resolved = -1;
  Fields f = { -1, 0 };
  if (len == 0)
    return incomplete (a, at_eof, "the connection closed without an answer");
  EbcHttpState s = head (buf, len, at_eof, a, &f);
  if (s != EBC_HTTP_COMPLETE)
    return s;
  if (f.chunked && f.length >= 0)
    return invalid (a, "both Content-Length and chunked");
  size_t have = len - a->header_len;
  if (a->status == 204 || a->status == 304)
    f.length = 0;
  if (f.chunked) {
    a->frame = EBC_HTTP_FRAME_CHUNKED;
    s = chunks (buf, len, a->header_len, at_eof, max_body, a, NULL);
    if (s != EBC_HTTP_COMPLETE)
      return s;
  } else if (f.length >= 0) {
    a->frame = EBC_HTTP_FRAME_LENGTH;
    if ((unsigned long long) f.length > max_body)
      return invalid (a, "a Content-Length over the answer's limit");
    if (have < (size_t) f.length)
      return incomplete (a, at_eof, "the connection closed inside the body (short of its Content-Length)");
    a->body_len = (size_t) f.length;
    a->total_len = a->header_len + a->body_len;
  } else {
    a->frame = EBC_HTTP_FRAME_EOF;
    if (have > max_body)
      return invalid (a, "a body over the answer's limit");
    if (!at_eof)
      return EBC_HTTP_INCOMPLETE;
    a->body_len = have;
    a->total_len = len;
  }
  if (a->total_len < len)
    return invalid (a, "bytes after the answer (longer than its framing)");
  return EBC_HTTP_COMPLETE;
}

size_t
ebc_http_body (const char *buf, const EbcHttpAnswer *a, char *out)
{
  if (a->frame != EBC_HTTP_FRAME_CHUNKED) {
    memmove (out, buf + a->header_len, a->body_len);
    return a->body_len;
  }
  EbcHttpAnswer again = *a;
  chunks (buf, a->total_len, a->header_len, 1, a->body_len, &again, out);
  return a->body_len;
}

int
ebc_socket_parse (const char *spec, struct sockaddr_storage *ss, socklen_t *sl, const char **why)
{
  memset (ss, 0, sizeof *ss);
  if (strncmp (spec, "inet:", 5) != 0 && strncmp (spec, "inet6:", 6) != 0) {
    const char *path = strncmp (spec, "unix:", 5) == 0 ? spec + 5 : strncmp (spec, "local:", 6) == 0 ? spec + 6 : spec;
    struct sockaddr_un *un = (struct sockaddr_un *) ss;
    if (!*path || strlen (path) >= sizeof un->sun_path) {
      *why = "empty or too long a socket path";
      return -1;
    }
    un->sun_family = AF_UNIX;
    memcpy (un->sun_path, path, strlen (path) + 1);
    *sl = (socklen_t) sizeof *un;
    return 0;
  }
  const char *p = strchr (spec, ':') + 1;
  char *end;
  errno = 0;
  unsigned long port = strtoul (p, &end, 10);
  if (end == p || port == 0 || port > 65535 || errno || (*end && *end != '@')) {
    *why = "no port in inet:PORT@HOST";
    return -1;
  }
  const char *host = *end == '@' ? end + 1 : "127.0.0.1";
  if (!strcmp (host, "localhost"))
    host = "127.0.0.1";
  struct sockaddr_in *in4 = (struct sockaddr_in *) ss;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ss;
  if (inet_pton (AF_INET, host, &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons ((uint16_t) port);
    *sl = (socklen_t) sizeof *in4;
    return 0;
  }
  if (inet_pton (AF_INET6, host, &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons ((uint16_t) port);
    *sl = (socklen_t) sizeof *in6;
    return 0;
  }
  *why = "the host of inet:PORT@HOST is not a numeric address (or localhost)";
  return -1;
}
