/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-http-request: an HTTP request as extbodyd's HTTP listener reads it
 * (filters/client/extbodyc-http.c: ebc_http_parse_request for the head,
 * ebc_http_chunks for a chunked body, driven as filters/daemon/daemon-http.c
 * drives them). The daemon's own parser, not a library's, decides what
 * bytes a message is made of, so: no read outside the input (ASan); a
 * COMPLETE head lies within the input (its method and target inside it), an
 * INVALID one has a status from 400 to 505 and a reason; no proper prefix of
 * a complete head is complete or invalid (a head cut anywhere only waits);
 * and a chunked body read at once and read in pieces (their size picked by
 * the first byte, the bytes of a line not yet ended given again, as the
 * daemon keeps them) ends the same way, with the same data and the same
 * bytes taken, never more data than the limit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "extbodyc-http.h"

#define FUZZ_MAX_BODY 4096

typedef struct {
  EbcHttpState state;
  size_t       used;        /* bytes the body took */
  size_t       data_len;
  char        *data;
} Read;

/* The chunked body in @in[0..@len), given @piece bytes at a time (0: all
 * at once), the unconsumed rest kept and given again with the next piece. */
static Read
read_chunks (const char *in, size_t len, size_t piece)
{
  Read r = { EBC_HTTP_INCOMPLETE, 0, 0, malloc (FUZZ_MAX_BODY + 1) };
  EbcHttpChunks c;
  memset (&c, 0, sizeof c);
  size_t start = 0, have = piece ? (piece < len ? piece : len) : len;
  for (;;) {
    int at_eof = have == len;
    size_t used, data, data_len;
    const char *why;
    r.state = ebc_http_chunks (&c, in + start, have - start, at_eof, FUZZ_MAX_BODY, &used, &data, &data_len, &why);
    if (used > have - start || (data_len && data + data_len > used))
      __builtin_trap ();
    if (r.data_len + data_len > FUZZ_MAX_BODY)
      __builtin_trap ();
    memcpy (r.data + r.data_len, in + start + data, data_len);
    r.data_len += data_len;
    start += used;
    if (r.state == EBC_HTTP_INVALID && !why)
      __builtin_trap ();
    if (r.state != EBC_HTTP_INCOMPLETE)
      break;
    if (data_len == 0) {
      if (at_eof)
        __builtin_trap ();   /* at the end, INCOMPLETE is never the answer */
      have = have + piece < len ? have + piece : len;
    }
  }
  r.used = start;
  if (c.total != r.data_len)
    __builtin_trap ();
  return r;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size == 0)
    return 0;
  size_t piece = data[0] % 17;
  const char *buf = (const char *) data + 1;
  size_t len = size - 1;
  EbcHttpRequest h;
  EbcHttpState s = ebc_http_parse_request (buf, len, &h);
  if (s == EBC_HTTP_INVALID) {
    if (h.status < 400 || h.status > 505 || !h.reason)
      __builtin_trap ();
    return 0;
  }
  if (s != EBC_HTTP_COMPLETE)
    return 0;
  if (h.head_len > len || h.head_len > EBC_HTTP_MAX_HEADER || h.method + h.method_len > h.head_len
      || h.target + h.target_len > h.head_len || h.method_len == 0 || h.target_len == 0)
    __builtin_trap ();
  size_t cuts[] = { h.head_len - 1, h.head_len / 2, 1 };
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    EbcHttpRequest p;
    if (cuts[i] < h.head_len && ebc_http_parse_request (buf, cuts[i], &p) != EBC_HTTP_INCOMPLETE)
      __builtin_trap ();
  }
  if (h.frame != EBC_HTTP_FRAME_CHUNKED)
    return 0;
  const char *body = buf + h.head_len;
  size_t blen = len - h.head_len;
  Read whole = read_chunks (body, blen, 0);
  Read pieces = read_chunks (body, blen, piece ? piece : 1);
  if (whole.state != pieces.state
      || (whole.state == EBC_HTTP_COMPLETE
          && (whole.used != pieces.used || whole.data_len != pieces.data_len
              || memcmp (whole.data, pieces.data, whole.data_len) != 0)))
    __builtin_trap ();
  free (whole.data);
  free (pieces.data);
  return 0;
}
