/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-mimetype: parse; parse, serialize, parse again gives the same. */
#include <string.h>
#include "eb-mimetype.h"

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  EbMimeType *mt = eb_mime_type_parse ((const char *) data, (gssize) size);
  if (!mt)
    return 0;
  char *s1 = eb_mime_type_serialize (mt);
  EbMimeType *again = eb_mime_type_parse (s1, -1);
  if (!again)
    __builtin_trap ();
  char *s2 = eb_mime_type_serialize (again);
  if (strcmp (s1, s2) != 0)
    __builtin_trap ();
  g_free (s1);
  g_free (s2);
  eb_mime_type_free (again);
  eb_mime_type_free (mt);
  return 0;
}
