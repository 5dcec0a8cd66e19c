/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-extbodyc: the answer parser of extbodyc (filters/client/extbodyc-http.c),
 * which decides whether the daemon's answer replaces a message. Properties:
 * no read outside the input (ASan); a COMPLETE answer takes the whole input,
 * its body inside it and within the limit, decoded to exactly body_len bytes
 * (in place the same as into a buffer of its own); a complete answer read
 * without the close is complete with it; and no proper prefix of a complete
 * answer is complete or invalid, so that a read cut anywhere only waits for
 * more. The first byte picks the body limit, to reach the limit checks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "extbodyc-http.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size == 0)
    return 0;
  size_t max_body = data[0] < 128 ? (size_t) data[0] * 16 : (size_t) 1 << 20;
  const char *buf = (const char *) data + 1;
  size_t len = size - 1;
  EbcHttpAnswer open_a, eof_a;
  EbcHttpState open_s = ebc_http_parse (buf, len, 0, max_body, &open_a);
  EbcHttpState eof_s = ebc_http_parse (buf, len, 1, max_body, &eof_a);
  if (eof_s == EBC_HTTP_INCOMPLETE)
    __builtin_trap ();
  if ((open_s == EBC_HTTP_INVALID || eof_s == EBC_HTTP_INVALID) && !(open_s == EBC_HTTP_INVALID ? open_a : eof_a).reason)
    __builtin_trap ();
  if (open_s == EBC_HTTP_COMPLETE
      && (eof_s != EBC_HTTP_COMPLETE || eof_a.body_len != open_a.body_len || eof_a.frame != open_a.frame))
    __builtin_trap ();
  if (eof_s != EBC_HTTP_COMPLETE)
    return 0;
  const EbcHttpAnswer *a = &eof_a;
  if (a->status < 200 || a->status > 599 || a->total_len != len || a->header_len > len
      || a->header_len > EBC_HTTP_MAX_HEADER || a->body_len > max_body || a->body_len > len - a->header_len)
    __builtin_trap ();
  /* decoded into a buffer of its exact size, and in place over a copy */
  char *out = malloc (a->body_len ? a->body_len : 1);
  char *copy = malloc (len);
  memcpy (copy, buf, len);
  if (ebc_http_body (buf, a, out) != a->body_len || ebc_http_body (copy, a, copy) != a->body_len
      || memcmp (out, copy, a->body_len) != 0)
    __builtin_trap ();
  if (a->frame != EBC_HTTP_FRAME_CHUNKED && memcmp (out, buf + a->header_len, a->body_len) != 0)
    __builtin_trap ();
  free (out);
  free (copy);
  /* cut anywhere (a few places), the answer only waits for more */
  size_t cuts[] = { len - 1, len / 2, a->header_len, a->header_len ? a->header_len - 1 : 0 };
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    EbcHttpAnswer p;
    if (cuts[i] < len && ebc_http_parse (buf, cuts[i], 0, max_body, &p) != EBC_HTTP_INCOMPLETE)
      __builtin_trap ();
  }
  return 0;
}
