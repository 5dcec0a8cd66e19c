/* fuzz-inspect: what inspect prints for any message (JSON and table). */
#include <gmime/gmime.h>
#include "eb-inspect.h"

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
  EbRewriteResult *r = eb_rewrite_plan ((const char *) data, size, config, NULL, EB_REWRITE_NO_PRECHECK);
  EbTable *t = eb_table_new (TRUE);
  for (guint i = 0; r->scan && i < r->scan->refs->len; i++) {
    g_free (eb_inspect_json ("fuzz", -1, NULL, r, i));
    g_free (eb_inspect_report_line (r, i));
    eb_table_add (t, "fuzz", r, i);
  }
  g_free (eb_table_finish (t));
  eb_table_free (t);
  eb_rewrite_result_free (r);
  return 0;
}
