/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-dir.c - an MTA test's directory (mta-dir.h). */
#include "mta-dir.h"

#include <glib/gstdio.h>
#include "test-server.h"

char *
mta_dir_make (const char *name, guint *watchdog)
{
  g_autofree char *tmpl = g_strdup_printf ("extbody-%s-XXXXXX", name);
  g_autoptr (GError) error = NULL;
  char *dir = g_dir_make_tmp (tmpl, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_chmod (dir, 0755), ==, 0);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  *watchdog = test_watchdog_add (rm);
  return dir;
}

void
mta_dir_remove (const char *dir, guint watchdog)
{
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", dir);
  test_sh (rm, NULL);
  test_watchdog_remove (watchdog);
}

char *
mta_dir_public (const char *dir, const char *name)
{
  char *path = g_build_filename (dir, name, NULL);
  g_assert_cmpint (g_mkdir (path, 0755), ==, 0);
  g_assert_cmpint (g_chmod (path, 0755), ==, 0);
  return path;
}
