/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-fetch-url.c - the checks a URL passes before it is fetched, and again for
 * every redirect target (see eb-fetch-shared.h). */
#include "eb-fetch-shared.h"
#include "eb-ftp.h"
#include "eb-gopher.h"
#include "eb-scheme.h"
#include <string.h>

char *
eb_fetch_url_scheme (const char *url)
{
  const char *c = strchr (url, ':');
  if (!c || c == url)
    return NULL;
  for (const char *p = url; p < c; p++)
    if (!g_ascii_isalnum (*p) && *p != '+' && *p != '-' && *p != '.')
      return NULL;
  return g_ascii_strdown (url, c - url);
}

/* Is @url's scheme one the fetcher may fetch (allow_schemes, fetch = on)?
 * eb_fetcher_scheme_allowed(), the public name, returns this. */
gboolean
eb_fetch_url_scheme_allowed (const EbFetcher *f, const char *url)
{
  if (!f->config->fetch)
    return FALSE;
  g_autofree char *s = eb_fetch_url_scheme (url);
  return s && g_strv_contains ((const char *const *) f->schemes, s);
}

static gboolean domain_in (GStrv list, const char *host);

/* Do allow_domains and deny_domains let @host (lowercase) be fetched from? */
gboolean
eb_fetch_url_host_allowed (const EbFetcher *f, const char *host)
{
  g_autofree char *h = g_strdup (host);
  gsize hl = strlen (h);
  while (hl && h[hl - 1] == '.')
    h[--hl] = '\0';
  return !domain_in (f->deny_domains, h) && (!f->allow_domains[0] || domain_in (f->allow_domains, h));
}

EbReason
eb_fetch_url_classify (const char *url, char **detail)
{
  g_autofree char *s = eb_fetch_url_scheme (url);
  const EbScheme *scheme = eb_scheme_lookup (s);
  if (!scheme)
    return EB_REASON_RESOLVED;
  if (scheme->refusal != EB_REASON_RESOLVED) {
    *detail = g_strdup_printf ("scheme \"%s\": %s", s, scheme->why);
    return scheme->refusal;
  }
  switch (scheme->rules) {
  case EB_SCHEME_RULES_FTP:
    return eb_ftp_classify (url, detail);
  case EB_SCHEME_RULES_GOPHER:
    return eb_gopher_classify (url, detail);
  case EB_SCHEME_RULES_NONE:
  default:
    return EB_REASON_RESOLVED;
  }
}

static gboolean
domain_in (GStrv list, const char *host)
{
  gsize hl = strlen (host);
  for (guint i = 0; list[i]; i++) {
    gsize dl = strlen (list[i]);
    if (hl == dl && strcmp (host, list[i]) == 0)
      return TRUE;
    if (hl > dl && host[hl - dl - 1] == '.' && strcmp (host + hl - dl, list[i]) == 0)
      return TRUE;
  }
  return FALSE;
}

/* The checks a URL must pass before it is fetched, and again for every redirect
 * target. Returns RESOLVED, or the reason with *detail set. @host gets the
 * lowercase host. */
EbReason
eb_fetch_url_check (EbFetcher *f, const char *url, char **detail, char **host_out)
{
  CURLU *u = curl_url ();
  char *scheme = NULL, *user = NULL, *pass = NULL, *host = NULL;
  const EbScheme *row = NULL;
  EbReason r = EB_REASON_RESOLVED;
  /* the scheme first: a URL of a scheme not enabled is refused for that, even
   * when curl could not parse it (data:,x has no host) */
  g_autofree char *given = eb_fetch_url_scheme (url);
  if (given && !eb_fetch_url_scheme_allowed (f, url)) {
    r = EB_REASON_SCHEME_DISABLED;
    *detail = g_strdup_printf ("scheme \"%.40s\"", given);
    goto out;
  }
  if (curl_url_set (u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
    r = EB_REASON_FETCH_FAILED;
    *detail = g_strdup ("malformed URL");
    goto out;
  }
  curl_url_get (u, CURLUPART_SCHEME, &scheme, 0);
  if (!scheme || !eb_fetch_url_scheme_allowed (f, url)) {
    r = EB_REASON_SCHEME_DISABLED;
    *detail = g_strdup_printf ("scheme \"%s\"", scheme ? scheme : "");
    goto out;
  }
  if ((r = eb_fetch_url_classify (url, detail)) != EB_REASON_RESOLVED)
    goto out;
  row = eb_scheme_lookup (scheme);
  if (row && !row->redirect) {
    /* extbody's own NNTP client takes a message's references, never a redirect */
    r = EB_REASON_SCHEME_DISABLED;
    *detail = g_strdup_printf ("scheme \"%s\" is not followed from a redirect", scheme);
    goto out;
  }
  curl_url_get (u, CURLUPART_USER, &user, 0);
  curl_url_get (u, CURLUPART_PASSWORD, &pass, 0);
  if ((user || pass) && !f->config->allow_credentials) {
    r = EB_REASON_CREDENTIALS;
    *detail = g_strdup ("the URL carries a user name or password");
    goto out;
  }
  if (curl_url_get (u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host || !*host) {
    r = EB_REASON_FETCH_FAILED;
    *detail = g_strdup ("URL without a host");
    goto out;
  }
  {
    g_autofree char *h = g_ascii_strdown (host, -1);
    gsize hl = strlen (h);
    while (hl && h[hl - 1] == '.')
      h[--hl] = '\0';
    if (domain_in (f->deny_domains, h) || (f->allow_domains[0] && !domain_in (f->allow_domains, h))) {
      r = EB_REASON_REFUSED_DOMAIN;
      *detail = g_strdup_printf ("host %.100s", h);
      goto out;
    }
    if (host_out)
      *host_out = g_steal_pointer (&h);
  }
out:
  curl_free (scheme);
  curl_free (user);
  curl_free (pass);
  curl_free (host);
  curl_url_cleanup (u);
  return r;
}
