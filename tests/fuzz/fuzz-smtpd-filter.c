/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-smtpd-filter: the protocol line parser of extbody-smtpd-filter
 * (filters/opensmtpd/smtpd-proto.c), which reads every line smtpd writes to
 * the filter. Properties: no read outside the line (ASan; the line is copied
 * into a buffer of exactly its length); every slice lies inside the line; a
 * data line's session and token are 1 to 16 hex digits and its data runs to
 * the end of the line; a line is "config|ready" exactly when it is read as
 * CONFIG_READY; an invalid line says why; and the same line reads the same
 * twice. The input is split at line breaks, each piece one line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "smtpd-proto.h"

static void
inside (const char *line, size_t len, EbsSlice s)
{
  if (s.p == NULL) {
    if (s.len != 0)
      __builtin_trap ();
    return;
  }
  if (s.p < line || s.p + s.len > line + len)
    __builtin_trap ();
}

static int
hex_id (EbsSlice s)
{
  if (s.len == 0 || s.len > EBS_MAX_ID)
    return 0;
  for (size_t i = 0; i < s.len; i++)
    if (!strchr ("0123456789abcdefABCDEF", s.p[i]) || s.p[i] == '\0')
      return 0;
  return 1;
}

static void
one_line (const char *data, size_t len)
{
  char *line = malloc (len ? len : 1);
  if (!line)
    return;
  memcpy (line, data, len);
  EbsLine a, b;
  EbsLineKind k = ebs_parse_line (line, len, &a);
  if (k != a.kind)
    __builtin_trap ();
  if (ebs_parse_line (line, len, &b) != k || memcmp (&a, &b, sizeof a) != 0)
    __builtin_trap ();
  EbsSlice all[] = { a.key, a.value, a.version, a.session, a.token, a.data };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    inside (line, len, all[i]);
  int ready = len == 12 && memcmp (line, "config|ready", 12) == 0;
  if (ready != (k == EBS_LINE_CONFIG_READY))
    __builtin_trap ();
  if (k == EBS_LINE_INVALID && !a.reason)
    __builtin_trap ();
  if (k == EBS_LINE_DATA) {
    if (!hex_id (a.session) || !hex_id (a.token))
      __builtin_trap ();
    if (a.data.p + a.data.len != line + len)
      __builtin_trap ();
  }
  if (k == EBS_LINE_DISCONNECT && (!hex_id (a.session) || a.session.p + a.session.len != line + len))
    __builtin_trap ();
  free (line);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const char *p = (const char *) data, *end = p + size;
  while (p <= end) {
    const char *nl = memchr (p, '\n', (size_t) (end - p));
    one_line (p, (size_t) ((nl ? nl : end) - p));
    if (!nl)
      break;
    p = nl + 1;
  }
  return 0;
}
