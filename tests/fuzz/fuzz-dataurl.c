/* fuzz-dataurl: the WHATWG data: URL processor on any input. */
#include "eb-dataurl.h"

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  EbDataUrl *du = eb_data_url_process ((const char *) data, (gssize) size, NULL);
  eb_data_url_free (du);
  GBytes *b = eb_forgiving_base64_decode ((const char *) data, size);
  if (b)
    g_bytes_unref (b);
  return 0;
}
