/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-gopher.c - gopher URLs and answers (see eb-gopher.h). */
#include "eb-gopher.h"
#include "eb-scheme.h"
#include <string.h>

/* RFC 1436 item types (RFC 1738 3.4: the first character of the path) that
 * are documents: text, BinHex, DOS binary, uuencoded, binary, GIF, image,
 * sound, and the common extensions doc, PNG, PDF, video, bitmap, Gopher+
 * sound. Telnet sessions (8, T) retrieve nothing; the rest (a menu 1, the
 * search 7, the CSO phone book 2, an error 3, an information line i, a
 * redundant server +, an HTML link h, anything unknown) is no document. */
EbReason
eb_gopher_classify (const char *url, char **detail)
{
  const char *path = eb_scheme_url_path (url);
  /* no path, or "/": the server's top menu (RFC 1738: the type defaults to 1) */
  char type = path[0] == '/' && path[1] ? path[1] : '1';
  if (type == '8' || type == 'T') {
    *detail = g_strdup_printf ("gopher item type %c is a telnet session", type);
    return EB_REASON_NOT_RETRIEVAL;
  }
  if (strchr ("04569gIsdpP;:<", type))
    return EB_REASON_RESOLVED;
  const char *what = type == '1' ? "a menu" : type == '7' ? "a search" : type == '2' ? "a CSO phone book"
                     : type == 'h' ? "an HTML link" : "not a document";
  if (g_ascii_isgraph (type))
    *detail = g_strdup_printf ("gopher item type %c is %s", type, what);
  else
    *detail = g_strdup_printf ("gopher item type 0x%02x is %s", (guchar) type, what);
  return EB_REASON_NOT_DOCUMENT;
}

void
eb_gopher_finish (const char *url, EbFetchResult *r)
{
  gsize len = 0;
  const char *d = g_bytes_get_data (r->body, &len);
  const char *nl = d ? memchr (d, '\n', len) : NULL;
  gsize first = nl ? (gsize) (nl - d) + 1 : len;
  gboolean one_line = first == len || (len - first <= 3 && d[first] == '.');
  if (len && d[0] == '3' && one_line && memchr (d, '\t', first)) {
    gsize tab = (const char *) memchr (d, '\t', first) - d;
    g_autofree char *text = g_strndup (d + 1, MIN (tab - 1, 100));
    for (char *c = text; *c; c++)
      if (!g_ascii_isprint (*c))
        *c = '?';
    r->reason = EB_REASON_FETCH_FAILED;
    r->detail = g_strdup_printf ("the gopher server answered with an error item: %s", text);
    g_clear_pointer (&r->body, g_bytes_unref);
    return;
  }
  const char *path = eb_scheme_url_path (url);
  char type = path[0] == '/' ? path[1] : 0;
  if (type != '0')
    return;
  gsize cut = 0;
  if (len >= 3 && memcmp (d + len - 3, ".\r\n", 3) == 0 && (len == 3 || d[len - 4] == '\n'))
    cut = 3;
  else if (len >= 2 && memcmp (d + len - 2, ".\n", 2) == 0 && (len == 2 || d[len - 3] == '\n'))
    cut = 2;
  if (cut) {
    GBytes *whole = r->body;
    r->body = g_bytes_new_from_bytes (whole, 0, len - cut);
    g_bytes_unref (whole);
  }
}
