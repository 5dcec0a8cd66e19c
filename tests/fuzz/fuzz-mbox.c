/* fuzz-mbox: mbox splitting; messages in order, inside the input, not
 * overlapping, each after its From_ line, which (but for the file's first
 * line) reads as a real From_ line. */
#include "eb-mailbox.h"

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  GArray *m = eb_mbox_split ((const char *) data, size);
  gsize prev = 0;
  for (guint i = 0; i < m->len; i++) {
    const EbMboxMsg *x = &g_array_index (m, EbMboxMsg, i);
    if (x->from < prev || x->from > x->start || x->start > x->end || x->end > size)
      __builtin_trap ();
    if (x->from > 0 && !eb_mbox_is_from_line ((const char *) data + x->from, size - x->from))
      __builtin_trap ();
    prev = x->end;
  }
  if (m->len && g_array_index (m, EbMboxMsg, m->len - 1).end != size)
    __builtin_trap ();
  g_array_unref (m);
  return 0;
}
