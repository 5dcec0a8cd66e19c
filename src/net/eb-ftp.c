/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-ftp.c - ftp URLs (see eb-ftp.h). */
#include "eb-ftp.h"
#include "eb-scheme.h"
#include <string.h>

EbReason
eb_ftp_classify (const char *url, char **detail)
{
  /* RFC 1738 3.2.2: ;type=d asks for a listing; a path ending in '/' (or
   * none) names a directory */
  const char *path = eb_scheme_url_path (url);
  gsize pl = strcspn (path, "?#");
  gboolean listing = pl >= 7 && g_ascii_strncasecmp (path + pl - 7, ";type=d", 7) == 0;
  if (listing || pl == 0 || path[pl - 1] == '/') {
    *detail = g_strdup (listing ? "an ftp directory listing (;type=d) is not a document"
                                : "an ftp URL naming a directory is not a document");
    return EB_REASON_NOT_DOCUMENT;
  }
  return EB_REASON_RESOLVED;
}

char *
eb_ftp_typecode_lower (const char *url)
{
  char *u = g_strdup (url);
  gsize n = strlen (u);
  if (n >= 7 && g_ascii_strncasecmp (u + n - 7, ";type=", 6) == 0)
    memcpy (u + n - 7, ";type=", 6);
  return u;
}

char *
eb_ftp_size_command (const char *url)
{
  const char *slash = strrchr (url, '/');
  if (slash && slash[1] && strspn (slash + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                              "0123456789._-+~") == strlen (slash + 1))
    return g_strdup_printf ("*SIZE %s", slash + 1);
  return NULL;
}

gboolean
eb_ftp_ascii (const char *url)
{
  gsize n = strcspn (url, "?#");
  return n >= 7 && g_ascii_strncasecmp (url + n - 7, ";type=a", 7) == 0;
}
