/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-maildir.c - the messages a private MTA delivered (mta-maildir.h). */
#include "mta-maildir.h"

#include <glib/gstdio.h>
#include <stdlib.h>
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

const char *
mta_maildir_body (const char *text)
{
  const char *p = strstr (text, "\n\n");
  g_assert_nonnull (p);
  return p + 2;
}

void
mta_maildir_assert_resolved (const char *text, const char *top, const char *want_body)
{
  const char *body = strstr (top, "\n\n");
  g_assert_nonnull (body);
  g_autofree char *header = g_strndup (top, body - top + 1);
  /* the field the daemon adds, at the end of the header */
  g_assert_true (g_str_has_suffix (header, "\nX-Extbody: resolved 1 of 1 external-body reference\n"));
  g_assert_null (strstr (text, "message/external-body"));
  g_assert_cmpstr (body + 2, ==, want_body);
}

void
mta_maildir_resolved_1_of_1 (const char *text, G_GNUC_UNUSED guint i)
{
  g_assert_nonnull (strstr (text, "\nX-Extbody: resolved 1 of 1 external-body reference\n"));
  g_assert_null (strstr (text, "message/external-body"));
}

/* How many burst messages @maildir_new holds now, each counted in @seen by
 * its number; each checked as it is read (mta_maildir_burst_wait). */
static guint
burst_scan (const char *maildir_new, guint n, guint *seen, MtaMaildirCheck check)
{
  guint total = 0;
  memset (seen, 0, n * sizeof *seen);
  g_autoptr (GDir) d = g_dir_open (maildir_new, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name (d))) {
    g_autofree char *p = g_build_filename (maildir_new, name, NULL);
    g_autofree char *text = NULL;
    if (!g_file_get_contents (p, &text, NULL, NULL))
      continue;
    const char *id = strstr (text, "<burst-");
    if (!id)
      continue;
    int i = atoi (id + 7);
    g_assert_cmpint (i, >=, 0);
    g_assert_cmpint (i, <, (int) n);
    seen[i]++;
    total++;
    g_autofree char *body = g_strdup_printf ("\n\nburst %d", i);
    if (!strstr (text, body))
      g_test_message ("%s:\n%s", p, text);
    g_assert_nonnull (strstr (text, body));
    if (check)
      check (text, (guint) i);
  }
  return total;
}

void
mta_maildir_burst_wait (const char *maildir_new, guint n, int seconds, MtaMaildirCheck check)
{
  g_autofree guint *seen = g_new0 (guint, n);
  guint total = 0;
  for (int t = 0; t < seconds * 20 && total < n; t++) {
    total = burst_scan (maildir_new, n, seen, check);
    if (total < n)
      g_usleep (50000);
  }
  g_assert_cmpuint (total, ==, n);
  for (guint i = 0; i < n; i++)
    g_assert_cmpuint (seen[i], ==, 1);
}

void
mta_maildir_assert_accounted (guint sent, guint delivered, guint lost, guint unfiltered)
{
  g_test_message ("sent %u, delivered %u, lost %u, unfiltered %u", sent, delivered, lost, unfiltered);
  g_assert_cmpuint (delivered, ==, sent);
  g_assert_cmpuint (lost, ==, 0);
  g_assert_cmpuint (unfiltered, ==, 0);
}

void
mta_maildir_burst_clear (const char *maildir_new)
{
  g_autoptr (GDir) d = g_dir_open (maildir_new, 0, NULL);
  g_assert_nonnull (d);
  const char *name;
  while ((name = g_dir_read_name (d))) {
    g_autofree char *path = g_build_filename (maildir_new, name, NULL);
    g_autofree char *text = NULL;
    if (g_file_get_contents (path, &text, NULL, NULL) && strstr (text, "<burst-"))
      g_assert_cmpint (g_unlink (path), ==, 0);
  }
}
