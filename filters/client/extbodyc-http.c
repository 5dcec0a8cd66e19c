/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbodyc-http.c - HTTP/1.1 framing (RFC 9112) by one set of rules for
 * both ends. extbodyc reads one answer from the bytes received: status line,
 * header fields, the body framed by Content-Length, by chunks or by the
 * connection's end. extbodyd's HTTP listener reads each request's head with
 * the same field rules (ebc_http_parse_request) and its chunked body with the
 * same decoder, as it comes (ebc_http_chunks). Strict where leniency could
 * let a wrong body through as the message: a bare CR, a folded field, two
 * different lengths, a length and chunks together, a transfer coding other
 * than chunked are refused on both sides (bytes after an answer too: the
 * client then passes the message through unchanged; the daemon answers a
 * request it refuses with 400, or 501 for a coding, and closes the
 * connection). A line may end in LF alone (RFC 9112 section 2.2 lets a
 * recipient read it so); nothing else is forgiven. */
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

static char
lower (char c)
{
  return c >= 'A' && c <= 'Z' ? (char) (c - 'A' + 'a') : c;
}

/* @s[0..@n) is @word (lowercase) in any case. */
static int
equals_nocase (const char *s, size_t n, const char *word)
{
  size_t w = strlen (word);
  if (n != w)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (lower (s[i]) != word[i])
      return 0;
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

/* What the header fields say about the framing, the same for both ends. */
typedef struct {
  long long length;     /* Content-Length, -1 absent */
  int       chunked;    /* Transfer-Encoding: chunked seen */
  int       coding;     /* a transfer coding other than chunked seen */
} Fields;

/* One field line @s[0..@n): its name is [0, *@name_len), its value, white
 * space around it taken off, [*@v, *@ve). 0, or -1 with *@why. */
static int
field_split (const char *s, size_t n, size_t *name_len, size_t *v, size_t *ve, const char **why)
{
  if (s[0] == ' ' || s[0] == '\t') {
    *why = "a folded header field (obsolete line folding)";
    return -1;
  }
  size_t colon = 0;
  while (colon < n && is_tchar ((unsigned char) s[colon]))
    colon++;
  if (colon == 0 || colon >= n || s[colon] != ':') {
    *why = "a header line that is no field";
    return -1;
  }
  size_t a = colon + 1, e = n;
  while (a < e && (s[a] == ' ' || s[a] == '\t'))
    a++;
  while (e > a && (s[e - 1] == ' ' || s[e - 1] == '\t'))
    e--;
  if (!is_text (s + a, e - a)) {
    *why = "a control character in a header field";
    return -1;
  }
  *name_len = colon;
  *v = a;
  *ve = e;
  return 0;
}

/* Content-Length and Transfer-Encoding, as both ends read them (RFC 9112
 * section 6): one decimal length, the same however often it is given;
 * chunked, once. 0 (other fields too), or -1 with *@why. */
static int
framing_field (const char *name, size_t nl, const char *val, size_t vn, Fields *f, const char **why)
{
  if (equals_nocase (name, nl, "content-length")) {
    long long l = decimal (val, vn);
    if (l < 0 || (f->length >= 0 && f->length != l)) {
      *why = "a wrong or repeated Content-Length";
      return -1;
    }
    f->length = l;
  } else if (equals_nocase (name, nl, "transfer-encoding")) {
    if (!equals_nocase (val, vn, "chunked")) {
      f->coding = 1;
      *why = "a transfer coding other than chunked";
      return -1;
    }
    if (f->chunked) {
      *why = "chunked twice";
      return -1;
    }
    f->chunked = 1;
  }
  return 0;
}

/* What a field line of the final answer tells the client besides its
 * framing. */
static void
answer_field (const char *name, size_t nl, const char *val, size_t vn, EbcHttpAnswer *a)
{
  if (equals_nocase (name, nl, "extbody-changed"))
    a->changed = equals_nocase (val, vn, "yes") ? 1 : equals_nocase (val, vn, "no") ? 0 : -1;
  else if (equals_nocase (name, nl, "extbody-references"))
    a->references = decimal (val, vn);
  else if (equals_nocase (name, nl, "extbody-resolved"))
    a->resolved = decimal (val, vn);
}

/* Field lines from @pos to the empty line, within @limit: *@pos goes past
 * the empty line. With @f, the framing fields are read into it (and with
 * @a the answer's own fields into @a); without, the lines are only checked
 * (an interim answer's, the trailer's). INVALID sets *@why. */
static EbcHttpState
fields (const char *buf, size_t len, size_t limit, int at_eof, size_t *pos, Fields *f, EbcHttpAnswer *a,
        const char **why)
{
  size_t end, next;
  for (;;) {
    int r = next_line (buf, len < limit ? len : limit, *pos, &end, &next);
    if (r < 0) {
      *why = "a NUL or a bare CR in the header";
      return EBC_HTTP_INVALID;
    }
    if (r == 0) {
      if (len >= limit) {
        *why = "a header over 64 KiB";
        return EBC_HTTP_INVALID;
      }
      *why = "the connection closed inside the header";
      return at_eof ? EBC_HTTP_INVALID : EBC_HTTP_INCOMPLETE;
    }
    if (end == *pos) {
      *pos = next;
      return EBC_HTTP_COMPLETE;
    }
    const char *s = buf + *pos;
    size_t nl, v, ve;
    if (field_split (s, end - *pos, &nl, &v, &ve, why) < 0)
      return EBC_HTTP_INVALID;
    if (f && framing_field (s, nl, s + v, ve - v, f, why) < 0)
      return EBC_HTTP_INVALID;
    if (a)
      answer_field (s, nl, s + v, ve - v, a);
    *pos = next;
  }
}

/* ---- chunked bodies ---------------------------------------------------------- */

enum { CH_SIZE, CH_DATA, CH_DATA_END, CH_TRAILER, CH_DONE };

/* A chunk-size line [@s, @e): hex digits, optional white space, then
 * nothing or ';' and extensions. The size, or -1. */
static long long
chunk_size (const char *s, const char *e, const char **why)
{
  long long size = 0;
  const char *p = s;
  for (; p < e && p - s < EBC_HTTP_MAX_HEX_DIGITS + 1; p++) {
    char c = *p;
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0)
      break;
    /* one digit past the limit is read only to be refused below: 15 hex
     * digits fit in a long long, a 16th could overflow it */
    if (p - s < EBC_HTTP_MAX_HEX_DIGITS)
      size = size * 16 + d;
  }
  if (p == s || p - s > EBC_HTTP_MAX_HEX_DIGITS) {
    *why = "a chunk size that is no hex number";
    return -1;
  }
  while (p < e && (*p == ' ' || *p == '\t'))
    p++;
  if (p < e && (*p != ';' || !is_text (p, (size_t) (e - p)))) {
    *why = "garbage after a chunk size";
    return -1;
  }
  return size;
}

/* One step of the trailer: a field line checked, or its end. */
static EbcHttpState
chunks_trailer (EbcHttpChunks *c, const char *in, size_t len, int at_eof, size_t *pos, const char **why)
{
  size_t room = EBC_HTTP_MAX_HEADER - c->trailer;
  size_t limit = len - *pos > room ? *pos + room : len + 1;
  size_t at = *pos;
  EbcHttpState s = fields (in, len, limit, at_eof, &at, NULL, NULL, why);
  /* the lines checked are taken whether or not the empty line came */
  if (s == EBC_HTTP_INCOMPLETE) {
    /* only whole lines are taken: find the last one */
    size_t end, next, p = *pos;
    while (next_line (in, len, p, &end, &next) == 1 && end != p)
      p = next;
    c->trailer += p - *pos;
    *pos = p;
    *why = "the connection closed inside the chunked body";
    return s;
  }
  if (s == EBC_HTTP_COMPLETE) {
    c->trailer += at - *pos;
    *pos = at;
    c->state = CH_DONE;
  }
  return s;
}

EbcHttpState
ebc_http_chunks (EbcHttpChunks *c, const char *in, size_t len, int at_eof, unsigned long long max_body,
                 size_t *used, size_t *data, size_t *data_len, const char **why)
{
  const char *closed = "the connection closed inside the chunked body";
  size_t pos = 0, end, next;
  *data = *data_len = 0;
  *why = NULL;
  for (;;) {
    *used = pos;
    switch (c->state) {
    case CH_SIZE: {
      size_t limit = len - pos > EBC_HTTP_MAX_CHUNK_LINE ? pos + EBC_HTTP_MAX_CHUNK_LINE : len;
      int r = next_line (in, limit, pos, &end, &next);
      if (r < 0) {
        *why = "a NUL or a bare CR in a chunk-size line";
        return EBC_HTTP_INVALID;
      }
      if (r == 0) {
        if (len - pos >= EBC_HTTP_MAX_CHUNK_LINE) {
          *why = "a chunk-size line over 1 KiB";
          return EBC_HTTP_INVALID;
        }
        *why = closed;
        return at_eof ? EBC_HTTP_INVALID : EBC_HTTP_INCOMPLETE;
      }
      long long size = chunk_size (in + pos, in + end, why);
      if (size < 0)
        return EBC_HTTP_INVALID;
      pos = next;
      if (size == 0) {
        c->state = CH_TRAILER;
        break;
      }
      if ((unsigned long long) size > max_body - c->total) {
        *why = "a chunked body over the limit";
        return EBC_HTTP_INVALID;
      }
      c->left = (unsigned long long) size;
      c->state = CH_DATA;
      break;
    }
    case CH_DATA: {
      size_t have = len - pos;
      if (have == 0) {
        *why = closed;
        return at_eof ? EBC_HTTP_INVALID : EBC_HTTP_INCOMPLETE;
      }
      size_t n = (unsigned long long) have < c->left ? have : (size_t) c->left;
      *data = pos;
      *data_len = n;
      c->left -= n;
      c->total += n;
      if (c->left == 0)
        c->state = CH_DATA_END;
      *used = pos + n;
      return EBC_HTTP_INCOMPLETE;
    }
    case CH_DATA_END:
      /* the chunk's data ends in CR LF (or LF) */
      if (pos < len && in[pos] == '\n')
        pos++;
      else if (pos + 1 < len && in[pos] == '\r' && in[pos + 1] == '\n')
        pos += 2;
      else if (pos == len || (pos + 1 == len && in[pos] == '\r')) {
        *why = closed;
        return at_eof ? EBC_HTTP_INVALID : EBC_HTTP_INCOMPLETE;
      } else {
        *why = "a chunk longer than its size";
        return EBC_HTTP_INVALID;
      }
      c->state = CH_SIZE;
      break;
    case CH_TRAILER: {
      EbcHttpState s = chunks_trailer (c, in, len, at_eof, &pos, why);
      *used = pos;
      if (s != EBC_HTTP_COMPLETE)
        return s;
      break;
    }
    default:
      *used = pos;
      return EBC_HTTP_COMPLETE;
    }
  }
}

/* The chunked body of an answer from @pos: its decoded length in
 * a->body_len and its end in a->total_len when COMPLETE; with @out, the
 * chunks copied there. */
static EbcHttpState
chunks (const char *buf, size_t len, size_t pos, int at_eof, size_t max_body, EbcHttpAnswer *a,
        char *out)
{
  EbcHttpChunks c = { 0 };
  size_t decoded = 0;
  for (;;) {
    size_t used, data, data_len;
    const char *why;
    EbcHttpState s = ebc_http_chunks (&c, buf + pos, len - pos, at_eof, max_body, &used, &data, &data_len, &why);
    if (data_len && out)
      memmove (out + decoded, buf + pos + data, data_len);
    decoded += data_len;
    pos += used;
    if (s == EBC_HTTP_INVALID) {
      /* the answer's words for its own limit */
      return invalid (a, strcmp (why, "a chunked body over the limit") == 0
                           ? "a chunked body over the answer's limit" : why);
    }
    if (s == EBC_HTTP_COMPLETE) {
      a->body_len = decoded;
      a->total_len = pos;
      return s;
    }
    if (data_len == 0)
      return EBC_HTTP_INCOMPLETE;
  }
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
    const char *why = NULL;
    EbcHttpState s = fields (buf, len, EBC_HTTP_MAX_HEADER, at_eof, &pos, final ? f : NULL, final ? a : NULL, &why);
    if (s == EBC_HTTP_INVALID)
      return invalid (a, why);
    if (s == EBC_HTTP_INCOMPLETE)
      return incomplete (a, at_eof, why);
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
  Fields f = { -1, 0, 0 };
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

/* ---- requests ----------------------------------------------------------------- */

static EbcHttpState
refuse (EbcHttpRequest *r, int status, const char *why)
{
  r->status = status;
  r->reason = why;
  return EBC_HTTP_INVALID;
}

/* "method SP request-target SP HTTP/1.x" (RFC 9112 section 3) into @r: 0,
 * or -1 with r->status and r->reason. */
static int
request_line (const char *buf, size_t pos, size_t end, EbcHttpRequest *r)
{
  size_t p = pos;
  while (p < end && is_tchar ((unsigned char) buf[p]))
    p++;
  if (p == pos || p >= end || buf[p] != ' ') {
    refuse (r, 400, "a malformed request line");
    return -1;
  }
  r->method = pos;
  r->method_len = p - pos;
  size_t t = ++p;
  while (p < end && (unsigned char) buf[p] > 0x20 && buf[p] != 0x7f)
    p++;
  if (p == t || p >= end || buf[p] != ' ') {
    refuse (r, 400, "a malformed request line");
    return -1;
  }
  if (p - t > EBC_HTTP_MAX_TARGET) {
    refuse (r, 414, "a request target over 8 KiB");
    return -1;
  }
  r->target = t;
  r->target_len = p - t;
  const char *v = buf + p + 1;
  size_t vn = end - p - 1;
  if (vn != 8 || memcmp (v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' || v[6] != '.' || v[7] < '0'
      || v[7] > '9') {
    refuse (r, 400, "a malformed request line");
    return -1;
  }
  if (v[5] != '1') {
    refuse (r, 505, "an HTTP version other than 1.x");
    return -1;
  }
  r->minor = v[7] - '0';
  return 0;
}

/* Does the list @val[0..@vn) (tokens separated by commas) hold @token? */
static int
has_token (const char *val, size_t vn, const char *token)
{
  size_t i = 0;
  while (i < vn) {
    while (i < vn && (val[i] == ' ' || val[i] == '\t' || val[i] == ','))
      i++;
    size_t s = i;
    while (i < vn && val[i] != ',')
      i++;
    size_t e = i;
    while (e > s && (val[e - 1] == ' ' || val[e - 1] == '\t'))
      e--;
    if (e > s && equals_nocase (val + s, e - s, token))
      return 1;
  }
  return 0;
}

/* What a request's fields say besides the framing. */
typedef struct {
  int hosts;
  int close, keep_alive, expect_other;
} RequestFields;

static void
request_field (const char *name, size_t nl, const char *val, size_t vn, EbcHttpRequest *r, RequestFields *rf)
{
  if (equals_nocase (name, nl, "host"))
    rf->hosts++;
  else if (equals_nocase (name, nl, "connection")) {
    rf->close |= has_token (val, vn, "close");
    rf->keep_alive |= has_token (val, vn, "keep-alive");
  } else if (equals_nocase (name, nl, "expect")) {
    if (equals_nocase (val, vn, "100-continue"))
      r->expect_continue = 1;
    else
      rf->expect_other = 1;
  }
}

/* The field lines of a request from @pos: 0 with *@pos past the empty line,
 * 1 when more bytes are needed, -1 with r->status. */
static int
request_fields (const char *buf, size_t len, size_t *pos, Fields *f, RequestFields *rf, EbcHttpRequest *r)
{
  size_t end, next;
  for (;;) {
    int k = next_line (buf, len < EBC_HTTP_MAX_HEADER ? len : EBC_HTTP_MAX_HEADER, *pos, &end, &next);
    if (k < 0) {
      refuse (r, 400, "a NUL or a bare CR in the header");
      return -1;
    }
    if (k == 0) {
      if (len >= EBC_HTTP_MAX_HEADER) {
        refuse (r, 431, "a header over 64 KiB");
        return -1;
      }
      return 1;
    }
    if (end == *pos) {
      *pos = next;
      return 0;
    }
    const char *s = buf + *pos, *why = NULL;
    size_t nl, v, ve;
    if (field_split (s, end - *pos, &nl, &v, &ve, &why) < 0 || framing_field (s, nl, s + v, ve - v, f, &why) < 0) {
      refuse (r, f->coding ? 501 : 400, why);
      return -1;
    }
    request_field (s, nl, s + v, ve - v, r, rf);
    *pos = next;
  }
}

EbcHttpState
ebc_http_parse_request (const char *buf, size_t len, EbcHttpRequest *r)
{
  memset (r, 0, sizeof *r);
  size_t pos = 0, end, next;
  int line;
  for (int empty = 0;; empty++) {
    line = next_line (buf, len < EBC_HTTP_MAX_HEADER ? len : EBC_HTTP_MAX_HEADER, pos, &end, &next);
    if (line <= 0 || end != pos)
      break;
    if (empty == EBC_HTTP_MAX_EMPTY_LINES)
      return refuse (r, 400, "empty lines instead of a request");
    pos = next;
  }
  /* garbage is told at its first bytes: a request line begins with a method */
  for (size_t i = pos; i < len && i < pos + 16 && buf[i] != ' '; i++)
    if (!is_tchar ((unsigned char) buf[i]) && buf[i] != '\r' && buf[i] != '\n')
      return refuse (r, 400, "no request line");
  if (line < 0)
    return refuse (r, 400, "a NUL or a bare CR in the request line");
  if (line == 0)
    return len >= EBC_HTTP_MAX_HEADER ? refuse (r, 431, "a request line over 64 KiB") : EBC_HTTP_INCOMPLETE;
  if (request_line (buf, pos, end, r) < 0)
    return EBC_HTTP_INVALID;
  pos = next;
  Fields f = { -1, 0, 0 };
  RequestFields rf = { 0 };
  int k = request_fields (buf, len, &pos, &f, &rf, r);
  if (k < 0)
    return EBC_HTTP_INVALID;
  if (k > 0)
    return EBC_HTTP_INCOMPLETE;
  if (f.chunked && f.length >= 0)
    return refuse (r, 400, "both Content-Length and chunked");
  if (f.chunked && r->minor == 0)
    return refuse (r, 400, "Transfer-Encoding in an HTTP/1.0 request");
  if (rf.hosts > 1 || (rf.hosts == 0 && r->minor >= 1))
    return refuse (r, 400, rf.hosts ? "two Host fields" : "an HTTP/1.1 request without Host");
  if (rf.expect_other)
    return refuse (r, 417, "an expectation other than 100-continue");
  r->head_len = pos;
  r->frame = f.chunked ? EBC_HTTP_FRAME_CHUNKED : f.length >= 0 ? EBC_HTTP_FRAME_LENGTH : EBC_HTTP_FRAME_EOF;
  r->length = f.length >= 0 ? (unsigned long long) f.length : 0;
  r->close = rf.close || (r->minor == 0 && !rf.keep_alive);
  return EBC_HTTP_COMPLETE;
}

const char *
ebc_http_field (const char *buf, size_t head_len, const char *name, size_t *value_len)
{
  size_t pos = 0, end, next, nn = strlen (name);
  int seen_line = 0;   /* the request line: what follows are fields */
  *value_len = 0;
  while (next_line (buf, head_len, pos, &end, &next) == 1) {
    const char *s = buf + pos, *why;
    size_t nl, v, ve;
    if (end == pos && seen_line)
      return NULL;
    if (end != pos && seen_line && field_split (s, end - pos, &nl, &v, &ve, &why) == 0 && nl == nn) {
      size_t i = 0;
      while (i < nl && lower (s[i]) == lower (name[i]))
        i++;
      if (i == nl) {
        *value_len = ve - v;
        return s + v;
      }
    }
    seen_line |= end != pos;
    pos = next;
  }
  return NULL;
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
