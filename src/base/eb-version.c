/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-version.c - the run-time version and the library's one-time setup
 * (see extbody.h). */
#include <extbody/extbody.h>
#include <curl/curl.h>
#include <gmime/gmime.h>

guint
eb_get_major_version (void)
{
  return EXTBODY_MAJOR_VERSION;
}

guint
eb_get_minor_version (void)
{
  return EXTBODY_MINOR_VERSION;
}

guint
eb_get_micro_version (void)
{
  return EXTBODY_MICRO_VERSION;
}

const char *
eb_get_version_string (void)
{
  return EXTBODY_VERSION_STRING;
}

char *
eb_get_library_versions (void)
{
  return g_strdup_printf ("GMime %u.%u.%u, GLib %u.%u.%u, %s", gmime_major_version,
                          gmime_minor_version, gmime_micro_version, glib_major_version,
                          glib_minor_version, glib_micro_version, curl_version ());
}

/* GMime's and libcurl's global state: set up once, before threads start. */
G_LOCK_DEFINE_STATIC (init);
static gboolean initialized;

void
eb_init (void)
{
  G_LOCK (init);
  if (!initialized) {
    g_mime_init ();
    curl_global_init (CURL_GLOBAL_DEFAULT);
    initialized = TRUE;
  }
  G_UNLOCK (init);
}

void
eb_shutdown (void)
{
  G_LOCK (init);
  if (initialized) {
    g_mime_shutdown ();
    curl_global_cleanup ();
    initialized = FALSE;
  }
  G_UNLOCK (init);
}
