/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-edits.c - a rewrite plan's header edits applied as a milter applies
 * them (test-edits.h). */
#include "test-edits.h"

#include <gio/gio.h>
#include <string.h>
#include "eb-header.h"

/* The fields of the header of @buf as "Name:value" (CRs dropped), and in
 * @body the offset of its body. */
static GPtrArray *
test_edits_fields (const char *buf, gsize len, gsize *body)
{
  GPtrArray *a = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (EbHeaderBlock) blk = eb_header_block_scan (buf, 0, len);
  for (guint i = 0; i < blk->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (blk->fields, EbHeaderField, i);
    GString *v = g_string_new (NULL);
    for (gsize p = f->value; p < f->value_end; p++)
      if (buf[p] != '\r')
        g_string_append_c (v, buf[p]);
    g_autofree char *val = g_string_free (v, FALSE);
    g_ptr_array_add (a, g_strdup_printf ("%.*s:%s", (int) f->name_len, buf + f->start, val));
  }
  *body = blk->body;
  return a;
}

static gint
test_edits_cmp (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

void
test_edits_assert_as_written (EbPlan *r, const char *m, gsize len,
                              const char *want, gsize want_len, gboolean drop_filter_field)
{
  gsize want_body = 0, old_body = 0;
  g_autoptr (GPtrArray) want_fields = test_edits_fields (want, want_len, &want_body);
  g_autoptr (GPtrArray) fields = test_edits_fields (m, len, &old_body);
  if (drop_filter_field)
    for (guint i = want_fields->len; i-- > 0;)
      if (g_str_has_prefix (want_fields->pdata[i], EB_FILTER_FIELD ":"))
        g_ptr_array_remove_index (want_fields, i);
  /* apply the edits as a milter does */
  g_autoptr (GPtrArray) edits = eb_plan_header_edits (r);
  g_assert_cmpuint (edits->len, >, 0);
  for (guint e = 0; e < edits->len; e++) {
    const EbHeaderEdit *ed = g_ptr_array_index (edits, e);
    g_autofree char *prefix = g_strdup_printf ("%s:", ed->name);
    if (ed->kind == EB_HEADER_ADD) {
      g_ptr_array_add (fields, g_strconcat (prefix, ed->value, NULL));
      continue;
    }
    guint seen = 0;
    for (guint i = 0; i < fields->len; i++) {
      const char *f = g_ptr_array_index (fields, i);
      if (g_ascii_strncasecmp (f, prefix, strlen (prefix)) != 0 || ++seen != ed->index)
        continue;
      if (ed->kind == EB_HEADER_DELETE) {
        g_ptr_array_remove_index (fields, i);
      } else {
        g_free (fields->pdata[i]);
        fields->pdata[i] = g_strconcat (prefix, ed->value, NULL);
      }
      break;
    }
    g_assert_cmpuint (seen, ==, ed->index);
  }
  /* the same fields (sorted: a milter cannot reorder them) */
  g_ptr_array_sort (fields, test_edits_cmp);
  g_ptr_array_sort (want_fields, test_edits_cmp);
  g_assert_cmpuint (fields->len, ==, want_fields->len);
  for (guint i = 0; i < fields->len; i++)
    g_assert_cmpstr (g_ptr_array_index (fields, i), ==, g_ptr_array_index (want_fields, i));
  /* and the same body */
  g_autoptr (GOutputStream) ob = g_memory_output_stream_new_resizable ();
  g_assert_true (eb_plan_write_body (r, ob, NULL));
  g_output_stream_close (ob, NULL, NULL);
  g_assert_cmpmem (g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (ob)),
                   g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (ob)),
                   want + want_body, want_len - want_body);
}
