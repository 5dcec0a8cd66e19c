/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-mbox: mbox splitting; messages in order, inside the input, not
 * overlapping, each after its From_ line, which (but for the file's first
 * line) reads as a real From_ line; the split in pieces that also looks for
 * "external-body" finds the same From_ lines and every match, once, and a
 * message holds one exactly when the pre-check says so. */
#include "eb-mbox.h"
#include "eb-message.h"

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

  const char *d = (const char *) data;
  gsize step = size ? (gsize) data[0] % 97 + 1 : 1;
  GArray *seps = g_array_new (FALSE, FALSE, sizeof (gsize));
  GArray *hits = g_array_new (FALSE, FALSE, sizeof (gsize));
  for (gsize from = 0; from < size; from += step)
    eb_mbox_find_separators_and_hits (d, size, from, from + step, seps, hits);
  if (seps->len != m->len)
    __builtin_trap ();
  for (guint i = 0; i < m->len; i++)
    if (g_array_index (seps, gsize, i) != g_array_index (m, EbMboxMsg, i).from)
      __builtin_trap ();
  guint k = 0;
  for (gsize p = 0; p + 13 <= size; p++)
    if (g_ascii_strncasecmp (d + p, "external-body", 13) == 0
        && (k >= hits->len || g_array_index (hits, gsize, k++) != p))
      __builtin_trap ();
  if (k != hits->len)
    __builtin_trap ();
  for (guint i = 0, h = 0; i < m->len; i++) {
    const EbMboxMsg *x = &g_array_index (m, EbMboxMsg, i);
    while (h < hits->len && g_array_index (hits, gsize, h) < x->start)
      h++;
    gboolean hit = h < hits->len && g_array_index (hits, gsize, h) < x->end;
    if (hit != eb_message_may_hold_external_body (d + x->start, x->end - x->start))
      __builtin_trap ();
  }
  g_array_unref (seps);
  g_array_unref (hits);
  g_array_unref (m);
  return 0;
}
