/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-inspect: what inspect prints for any message (JSON and table), with the
 * properties that make it safe to read: every JSON record parses as one JSON
 * object on one line; the --report line and every table line are valid UTF-8
 * without control characters (whatever bytes the message held). And the walk
 * finds the same whether or not GMime is shown the parameters of external-body
 * fields (eb-message.c's shadow): parts, offsets, references, URLs, reasons. */
#include <gmime/gmime.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include "eb-inspect.h"
#include "eb-message.h"
#include "eb-plan-private.h"

static EbConfig *config;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  g_mime_init ();
  config = eb_config_new ();
  return 0;
}

/* valid UTF-8, no C0 control or DEL, except @allow */
static void
check_printable (const char *s, char allow)
{
  if (!g_utf8_validate (s, -1, NULL))
    __builtin_trap ();
  for (const char *c = s; *c; c++)
    if (((guchar) *c < 0x20 || *c == 0x7f) && *c != allow)
      __builtin_trap ();
}

static gboolean
same (const char *a, const char *b)
{
  return g_strcmp0 (a, b) == 0;
}

static void
check_shadow (const char *data, gsize size)
{
  EbMessageScan *a = eb_message_scan (data, size, config);
  EbMessageScan *b = eb_message_scan_unshadowed (data, size, config);
  if (a->reason != b->reason || a->n_parts != b->n_parts || a->refs->len != b->refs->len)
    __builtin_trap ();
  for (guint i = 0; i < a->refs->len; i++) {
    const EbRef *x = g_ptr_array_index (a->refs, i), *y = g_ptr_array_index (b->refs, i);
    if (!same (x->path, y->path) || x->located != y->located || x->block_start != y->block_start
        || x->content_start != y->content_start || x->end != y->end
        || x->walk_reason != y->walk_reason || x->read_reason != y->read_reason
        || !same (x->url, y->url) || !same (x->access_type, y->access_type)
        || x->alt != y->alt || x->alt_start != y->alt_start || x->alt_end != y->alt_end)
      __builtin_trap ();
  }
  eb_message_scan_free (a);
  eb_message_scan_free (b);
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  check_shadow ((const char *) data, size);
  EbPlan *r = eb_rewrite_plan ((const char *) data, size, config, NULL, EB_REWRITE_NO_PRECHECK);
  EbTable *t = eb_table_new (TRUE);
  for (guint i = 0; r->scan && i < r->scan->refs->len; i++) {
    char *json = eb_inspect_json ("fuzz", -1, NULL, r, i);
    if (strchr (json, '\n'))
      __builtin_trap ();
    JsonParser *p = json_parser_new ();
    if (!json_parser_load_from_data (p, json, -1, NULL)
        || !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (p)))
      __builtin_trap ();
    g_object_unref (p);
    g_free (json);
    char *line = eb_inspect_report_line (r, i);
    check_printable (line, 0);
    g_free (line);
    eb_table_add (t, "fuzz", r, i);
  }
  char *table = eb_table_finish (t);
  check_printable (table, '\n');
  g_free (table);
  eb_table_free (t);
  eb_plan_free (r);
  return 0;
}
