/* fuzz-rewrite: a whole message through rewrite with fetching off; the
 * properties: a message in which nothing is resolved comes out byte-identical;
 * in one that changed, every byte before the first resolved reference's
 * header and after the last one's end is the input's own (the splice never
 * touches what it does not replace). */
#include <gio/gio.h>
#include <gmime/gmime.h>
#include <string.h>
#include "eb-rewrite.h"

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
  EbRewriteResult *r = NULL;
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
        if (!first || ref->block_start < first->block_start)
          first = ref;
        if (!last || ref->end > last->end)
          last = ref;
      }
    if (!first)
      __builtin_trap ();   /* changed, but nothing resolved */
    /* offsets count from after a leading From_ line, which is kept as it is */
    gsize head = r->skip + first->block_start, end = r->skip + last->end;
    gsize tail = size - end;
    if (n < head + tail || memcmp (o, data, head) != 0
        || memcmp ((const char *) o + n - tail, data + end, tail) != 0)
      __builtin_trap ();
  }
  eb_rewrite_result_free (r);
  g_object_unref (out);
  return 0;
}
