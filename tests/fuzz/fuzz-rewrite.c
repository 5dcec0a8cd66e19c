/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-rewrite: a whole message through rewrite with fetching off; the
 * properties: a message in which nothing is resolved comes out byte-identical;
 * in one that changed, every byte before the first resolved reference's
 * header and after the last one's end is the input's own (the splice never
 * touches what it does not replace). Then again as a mail filter
 * (EB_REWRITE_STRIP_TRACE): the same decisions, and when nothing is resolved
 * the output is the input less exactly the removed header fields, each of
 * which is an X-Extbody or X-Extbody-Resolved field of the message header. */
#include <gio/gio.h>
#include <gmime/gmime.h>
#include <string.h>
#include "eb-plan-private.h"

static EbConfig *config;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  g_mime_init ();
  config = eb_config_new ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  GOutputStream *out = g_memory_output_stream_new_resizable ();
  EbPlan *r = NULL;
  if (!eb_rewrite ((const char *) data, size, config, NULL, EB_REWRITE_DEFAULT, out, &r, NULL))
    __builtin_trap ();
  g_output_stream_close (out, NULL, NULL);
  gsize n = g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (out));
  const void *o = g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (out));
  if (!r->changed && (n != size || (size && memcmp (o, data, size) != 0)))
    __builtin_trap ();
  if (r->changed) {
    const EbRef *first = NULL, *last = NULL;
    for (guint i = 0; r->scan && i < r->scan->refs->len; i++)
      if (((const EbResolution *) g_ptr_array_index (r->resolutions, i))->reason == EB_REASON_RESOLVED) {
        const EbRef *ref = g_ptr_array_index (r->scan->refs, i);
        if (!first || eb_extref_replaced_start (ref) < eb_extref_replaced_start (first))
          first = ref;
        if (!last || eb_extref_replaced_end (ref) > eb_extref_replaced_end (last))
          last = ref;
      }
    if (!first)
      __builtin_trap ();   /* changed, but nothing resolved */
    /* offsets count from after a leading From_ line, which is kept as it is */
    gsize head = r->message->from_len + eb_extref_replaced_start (first), end = r->message->from_len + eb_extref_replaced_end (last);
    gsize tail = size - end;
    if (n < head + tail || memcmp (o, data, head) != 0
        || memcmp ((const char *) o + n - tail, data + end, tail) != 0)
      __builtin_trap ();
  }
  /* as a mail filter */
  GOutputStream *out2 = g_memory_output_stream_new_resizable ();
  EbPlan *r2 = NULL;
  if (!eb_rewrite ((const char *) data, size, config, NULL, EB_REWRITE_STRIP_TRACE, out2, &r2, NULL))
    __builtin_trap ();
  g_output_stream_close (out2, NULL, NULL);
  if (r2->n_resolved != r->n_resolved)
    __builtin_trap ();
  if (r2->n_resolved == 0) {
    gsize n2 = g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (out2));
    const char *o2 = g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (out2));
    GString *want = g_string_new_len ((const char *) data, (gssize) r2->message->from_len);
    gsize pos = r2->message->from_len, removed = 0;
    for (guint k = 0; k < r2->removed->len; k++) {
      const EbRange *rg = &g_array_index (r2->removed, EbRange, k);
      gsize a = r2->message->from_len + rg->start, b = r2->message->from_len + rg->end;
      if (a < pos || b > size || b <= a)
        __builtin_trap ();
      if (g_ascii_strncasecmp ((const char *) data + a, "X-Extbody", 9) != 0)
        __builtin_trap ();
      g_string_append_len (want, (const char *) data + pos, (gssize) (a - pos));
      pos = b;
      removed++;
    }
    g_string_append_len (want, (const char *) data + pos, (gssize) (size - pos));
    if ((removed == 0) != !r2->changed || n2 != want->len || (n2 && memcmp (o2, want->str, n2) != 0))
      __builtin_trap ();
    g_string_free (want, TRUE);
  }
  eb_plan_free (r2);
  g_object_unref (out2);
  eb_plan_free (r);
  g_object_unref (out);
  return 0;
}
