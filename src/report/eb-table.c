/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-table.c - the aligned table of inspect (see eb-table.h). */
#include "eb-table.h"
#include "eb-inspect.h"
#include <string.h>

/* The table fits an 80-column terminal: PART, ACCESS, URL / PARAMETERS,
 * ACTION and the reason token; when several messages are listed, each
 * message's rows follow a line naming it (the file, or the message's number
 * and Message-ID in a mailbox). The URL column takes what the others leave,
 * and long values are shortened in the middle. Everything else is in --json
 * and --report. */
#define TABLE_WIDTH 80
#define N_COLS 6
enum { COL_SOURCE, COL_PART, COL_ACCESS, COL_TARGET, COL_ACTION, COL_REASON };
static const char *headings[N_COLS] = {
  "SOURCE", "PART", "ACCESS", "URL / PARAMETERS", "ACTION", "REASON",
};
static const gsize col_max[N_COLS] = { 0, 9, 11, 0, 7, 18 };

struct _EbTable {
  gboolean   with_source;
  GPtrArray *rows;   /* (element-type GStrv) */
};

EbTable *
eb_table_new (gboolean with_source)
{
  EbTable *t = g_new0 (EbTable, 1);
  t->with_source = with_source;
  t->rows = g_ptr_array_new_with_free_func ((GDestroyNotify) g_strfreev);
  return t;
}

void
eb_table_free (EbTable *table)
{
  if (!table)
    return;
  g_ptr_array_unref (table->rows);
  g_free (table);
}

void
eb_table_add (EbTable *t, const char *source, const EbPlan *result, guint i)
{
  EbReason reason = eb_plan_get_ref_reason (result, i);
  char **row = g_new0 (char *, N_COLS + 1);
  row[COL_SOURCE] = eb_inspect_printable (source ? source : "-", 4096);
  row[COL_PART] = eb_inspect_printable (eb_plan_get_ref_path (result, i), 40);
  row[COL_ACCESS] = eb_inspect_printable (eb_plan_get_ref_access_type (result, i), 40);
  row[COL_TARGET] = eb_inspect_target (result, i, 400);
  row[COL_ACTION] = g_strdup (eb_inspect_action (reason));
  row[COL_REASON] = g_strdup (eb_reason_token (reason));
  g_ptr_array_add (t->rows, row);
}

/* @s (printable UTF-8) in at most @w characters: the middle replaced by "...". */
static char *
shorten (const char *s, gsize w)
{
  glong n = g_utf8_strlen (s, -1);
  if ((gsize) n <= w)
    return g_strdup (s);
  if (w <= 3)
    return g_strndup ("...", w);
  gsize head = (w - 3) * 2 / 3, tail = w - 3 - head;
  const char *h_end = g_utf8_offset_to_pointer (s, (glong) head);
  const char *t_start = g_utf8_offset_to_pointer (s, n - (glong) tail);
  GString *o = g_string_new_len (s, h_end - s);
  g_string_append (o, "...");
  g_string_append (o, t_start);
  return g_string_free (o, FALSE);
}

char *
eb_table_finish (EbTable *t)
{
  gsize width[N_COLS] = { 0 };
  for (guint c = COL_PART; c < N_COLS; c++)
    width[c] = strlen (headings[c]);
  for (guint r = 0; r < t->rows->len; r++) {
    char **row = g_ptr_array_index (t->rows, r);
    for (guint c = COL_PART; c < N_COLS; c++)
      width[c] = MAX (width[c], (gsize) g_utf8_strlen (row[c], -1));
  }
  /* the fixed columns at their widths (capped); the URL takes the rest */
  gsize fixed = 0;
  for (guint c = COL_PART; c < N_COLS; c++) {
    if (col_max[c])
      width[c] = MIN (width[c], col_max[c]);
    if (c != COL_TARGET)
      fixed += width[c] + (c == N_COLS - 1 ? 0 : 2);
  }
  gsize room = TABLE_WIDTH > fixed + 2 + 16 ? TABLE_WIDTH - fixed - 2 : 16;
  width[COL_TARGET] = MIN (width[COL_TARGET], room);
  GString *out = g_string_new (NULL);
  const char *last_source = NULL;
  for (gint r = -1; r < (gint) t->rows->len; r++) {
    char **row = r < 0 ? NULL : g_ptr_array_index (t->rows, r);
    if (row && t->with_source && (!last_source || strcmp (last_source, row[COL_SOURCE]) != 0)) {
      g_autofree char *src = shorten (row[COL_SOURCE], TABLE_WIDTH - 3);
      g_string_append_printf (out, "== %s\n", src);
      last_source = row[COL_SOURCE];
    }
    for (guint c = COL_PART; c < N_COLS; c++) {
      g_autofree char *cell = shorten (row ? row[c] : headings[c], width[c]);
      g_string_append (out, cell);
      if (c == N_COLS - 1)
        break;
      gsize pad = width[c] - (gsize) g_utf8_strlen (cell, -1) + 2;
      for (gsize k = 0; k < pad; k++)
        g_string_append_c (out, ' ');
    }
    g_string_append_c (out, '\n');
  }
  return g_string_free (out, FALSE);
}
