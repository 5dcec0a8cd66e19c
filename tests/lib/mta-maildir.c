/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-maildir.c - the messages a private MTA delivered (mta-maildir.h). */
#include "mta-maildir.h"

#include <string.h>

char *
mta_maildir_delivered (const char *maildir_new, const char *needle, int seconds, char **path)
{
  for (int t = 0; t < seconds * 20; t++) {
    g_autoptr (GDir) d = g_dir_open (maildir_new, 0, NULL);
    const char *n;
    while (d && (n = g_dir_read_name (d))) {
      g_autofree char *p = g_build_filename (maildir_new, n, NULL);
      char *text = NULL;
      if (g_file_get_contents (p, &text, NULL, NULL) && strstr (text, needle)) {
        if (path)
          *path = g_steal_pointer (&p);
        return text;
      }
      g_free (text);
    }
    g_usleep (50000);
  }
  return NULL;
}

guint
mta_maildir_copies (const char *maildir_new, const char *needle, char **first)
{
  guint n = 0;
  if (first)
    *first = NULL;
  g_autoptr (GDir) d = g_dir_open (maildir_new, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name (d))) {
    g_autofree char *p = g_build_filename (maildir_new, name, NULL);
    char *text = NULL;
    if (g_file_get_contents (p, &text, NULL, NULL) && strstr (text, needle)) {
      n++;
      if (first && !*first) {
        *first = text;
        continue;
      }
    }
    g_free (text);
  }
  return n;
}
