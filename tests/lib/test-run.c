/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-run.c - one message rewritten in process (test-run.h). */
#include "test-run.h"

#include <gio/gio.h>

void
test_run_clear (TestRun *r)
{
  g_clear_pointer (&r->out, g_byte_array_unref);
  g_clear_pointer (&r->result, eb_plan_free);
}

void
test_run_rewrite (GByteArray *in, const EbConfig *config, EbRewriteFlags flags, TestRun *r)
{
  g_autoptr (GOutputStream) mem = g_memory_output_stream_new_resizable ();
  g_autoptr (GError) error = NULL;
  gboolean ok = eb_rewrite ((const char *) in->data, in->len, config, NULL, flags, mem, &r->result, &error);
  g_assert_no_error (error);
  g_assert_true (ok);
  g_output_stream_close (mem, NULL, NULL);
  r->out = g_byte_array_new ();
  g_byte_array_append (r->out, g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (mem)),
                       (guint) g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (mem)));
}
