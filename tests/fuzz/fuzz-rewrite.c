/* fuzz-rewrite: a whole message through rewrite with fetching off; the
 * property: a message in which nothing is resolved comes out byte-identical. */
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
  eb_rewrite_result_free (r);
  g_object_unref (out);
  return 0;
}
