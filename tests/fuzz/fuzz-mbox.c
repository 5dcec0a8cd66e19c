/* fuzz-mbox: mbox splitting; messages in order, inside the input, not
 * overlapping, each after its From_ line. */
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
    prev = x->end;
  }
  if (m->len && g_array_index (m, EbMboxMsg, m->len - 1).end != size)
    __builtin_trap ();
  g_array_unref (m);
  return 0;
}
