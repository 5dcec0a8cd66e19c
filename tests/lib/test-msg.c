/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-msg.c - a test message in the line ending a case asks for (test-msg.h). */
#include "test-msg.h"

#include <string.h>

GByteArray *
test_msg_with_eol (const char *tmpl, const char *eol)
{
  GByteArray *a = g_byte_array_new ();
  for (const char *p = tmpl; *p; p++) {
    if (*p == '\n')
      g_byte_array_append (a, (const guint8 *) eol, (guint) strlen (eol));
    else
      g_byte_array_append (a, (const guint8 *) p, 1);
  }
  return a;
}
