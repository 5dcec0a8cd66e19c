/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-scheme.c - the table of URL schemes (see eb-scheme.h). */
#include "eb-scheme.h"
#include <string.h>

#define RETRIEVES_NOTHING "RFC 2017 section 3 forbids a URL that retrieves nothing"
#define NO_SERVER "no server speaks it any more"

/* The schemes allow_schemes may name come first, in the order the errors
 * list them; then those refused whatever the configuration; then those
 * extbody knows only as the WHATWG URL standard's special schemes (eb-log
 * reads their authority as a host), which are refused as any scheme not
 * enabled. */
static const EbScheme schemes[] = {
  { .name = "http", .by = EB_SCHEME_CURL, .allowable = TRUE, .redirect = TRUE, .http = TRUE,
    .special = TRUE, .port = 80 },
  /* RFC 2818 */
  { .name = "https", .by = EB_SCHEME_CURL, .allowable = TRUE, .redirect = TRUE, .http = TRUE,
    .tls = TRUE, .special = TRUE, .port = 443 },
  { .name = "ftp", .by = EB_SCHEME_CURL, .rules = EB_SCHEME_RULES_FTP, .allowable = TRUE,
    .redirect = TRUE, .special = TRUE, .port = 21, .access_type = "anon-ftp" },
  { .name = "gopher", .by = EB_SCHEME_CURL, .rules = EB_SCHEME_RULES_GOPHER, .allowable = TRUE,
    .redirect = TRUE, .port = 70 },
  /* read as access-type=local-file is, whether fetch is on or off; never
   * reached by a redirect */
  { .name = "file", .by = EB_SCHEME_LOCAL_FILE, .allowable = TRUE, .special = TRUE },
  /* extbody's own NNTP client takes a message's references, never a redirect */
  { .name = "news", .by = EB_SCHEME_NNTP, .allowable = TRUE, .nntp_server = TRUE, .port = 119 },
  { .name = "nntp", .by = EB_SCHEME_NNTP, .allowable = TRUE, .port = 119 },
  { .name = "mailto", .refusal = EB_REASON_NOT_RETRIEVAL, .why = RETRIEVES_NOTHING },
  { .name = "telnet", .refusal = EB_REASON_NOT_RETRIEVAL, .why = RETRIEVES_NOTHING },
  { .name = "tn3270", .refusal = EB_REASON_NOT_RETRIEVAL, .why = RETRIEVES_NOTHING },
  { .name = "wais", .refusal = EB_REASON_UNSUPPORTED_SCHEME, .why = NO_SERVER },
  { .name = "prospero", .refusal = EB_REASON_UNSUPPORTED_SCHEME, .why = NO_SERVER },
  /* RFC 2397: resolved whatever fetch and allow_schemes say, no network at all */
  { .name = "data", .by = EB_SCHEME_INLINE },
  { .name = "ws", .special = TRUE },
  { .name = "wss", .special = TRUE },
};

const EbScheme *
eb_scheme_lookup_len (const char *name, gsize len)
{
  if (!name || !len)
    return NULL;
  /* the names are lower case: the first letter rules out most rows at once
   * (a lookup per reference, and per redirect) */
  char first = g_ascii_tolower (name[0]);
  for (guint i = 0; i < G_N_ELEMENTS (schemes); i++)
    if (schemes[i].name[0] == first && strlen (schemes[i].name) == len
        && g_ascii_strncasecmp (schemes[i].name, name, len) == 0)
      return &schemes[i];
  return NULL;
}

const EbScheme *
eb_scheme_lookup (const char *name)
{
  return name ? eb_scheme_lookup_len (name, strlen (name)) : NULL;
}

const EbScheme *
eb_scheme_for_access_type (const char *access_type)
{
  for (guint i = 0; i < G_N_ELEMENTS (schemes); i++)
    if (schemes[i].access_type && g_strcmp0 (schemes[i].access_type, access_type) == 0)
      return &schemes[i];
  return NULL;
}

gboolean
eb_scheme_is_fetched (const EbScheme *scheme)
{
  return scheme && (scheme->by == EB_SCHEME_CURL || scheme->by == EB_SCHEME_NNTP);
}

char *
eb_scheme_list_allowable (const char *last)
{
  GString *s = g_string_new (NULL);
  guint n = 0;
  for (guint i = 0; i < G_N_ELEMENTS (schemes); i++)
    n += schemes[i].allowable;
  for (guint i = 0, k = 0; i < G_N_ELEMENTS (schemes); i++) {
    if (!schemes[i].allowable)
      continue;
    if (k++)
      g_string_append (s, k == n ? last : ", ");
    g_string_append (s, schemes[i].name);
  }
  return g_string_free (s, FALSE);
}

const char *
eb_scheme_url_path (const char *url)
{
  const char *p = strstr (url, "://");
  if (!p)
    return "";
  p += 3;
  gsize n = strcspn (p, "/?#");
  return p + n;
}
