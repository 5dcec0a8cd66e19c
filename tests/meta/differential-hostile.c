/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* differential-hostile - write the messages of the hostile-input suite
 * (hostile-cases.h: cases[] and limits[]) to files, for differential.py.
 *
 *   differential-hostile DIR
 *
 * Each case becomes DIR/hostile-NAME.eml (the slashes of its name turned into
 * dashes). Each limit case (value - 1, value, value + 1) becomes
 * DIR/limit-KEY-VALUE-N.eml; when the limit is not the default value, a file
 * of the same name plus ".opt" holds the KEY=VALUE the run needs (one line).
 * A limit case larger than 16 MiB (the default max_message_size) is left out:
 * it would make the comparison slow and adds no code path the 4096 one lacks.
 * Exit 0, or 1 when a file cannot be written. */
#include <glib.h>
#include <stdio.h>
#include "hostile-cases.h"

static gboolean
put (const char *dir, const char *name, const GString *s, const char *opt)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_file_set_contents (path, s->str, (gssize) s->len, &error)) {
    fprintf (stderr, "differential-hostile: %s\n", error->message);
    return FALSE;
  }
  if (opt) {
    g_autofree char *op = g_strconcat (path, ".opt", NULL);
    g_autofree char *line = g_strconcat (opt, "\n", NULL);
    if (!g_file_set_contents (op, line, -1, &error)) {
      fprintf (stderr, "differential-hostile: %s\n", error->message);
      return FALSE;
    }
  }
  return TRUE;
}

int
main (int argc, char **argv)
{
  if (argc != 2) {
    fprintf (stderr, "usage: differential-hostile DIR\n");
    return 2;
  }
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *base = g_strdelimit (g_strdup (cases[i].name), "/", '-');
    g_autofree char *name = g_strconcat ("hostile-", base, ".eml", NULL);
    GString *s = cases[i].build ();
    gboolean ok = put (argv[1], name, s, NULL);
    g_string_free (s, TRUE);
    if (!ok)
      return 1;
  }
  for (gsize i = 0; i < G_N_ELEMENTS (limits); i++) {
    if (limits[i].limit > 16 * 1024 * 1024)
      continue;
    for (gint64 d = -1; d <= 1; d++) {
      gint64 n = limits[i].limit + d;
      g_autofree char *name = g_strdup_printf ("limit-%s-%s-%" G_GINT64_FORMAT ".eml", limits[i].key,
                                               limits[i].value ? limits[i].value : "default", n);
      g_autofree char *opt = limits[i].value ? g_strdup_printf ("%s=%s", limits[i].key, limits[i].value) : NULL;
      GString *s = limits[i].build (n);
      gboolean ok = put (argv[1], name, s, opt);
      g_string_free (s, TRUE);
      if (!ok)
        return 1;
    }
  }
  return 0;
}
