/* fuzz-params: RFC 2045/2231 parameters as read for every access-type. */
#include "eb-params.h"

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  EbParams *p = eb_params_parse ((const char *) data, size);
  const char *names[] = { "access-type", "url", "name", "site", "directory", "mode", "server",
                          "subject", "expiration", "size", "permission", "boundary" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++) {
    eb_params_get (p, names[i], NULL);
    GBytes *b = eb_params_get_octets (p, names[i], i & 1, NULL);
    if (b)
      g_bytes_unref (b);
  }
  for (guint i = 0; i < eb_params_get_n (p); i++)
    eb_params_get_name_at (p, i);
  eb_params_free (p);
  return 0;
}
