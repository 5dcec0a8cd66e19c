/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-gopher.h - what gopher URLs (RFC 1738 3.4) and answers (RFC 1436) need
 * beyond libcurl, which fetches them: the item type a URL names, and the
 * error item a server answers with in place of a document. Pure functions of
 * the URL and the bytes; the fetcher calls them for the schemes whose row
 * says EB_SCHEME_RULES_GOPHER (eb-scheme.h).
 */
#pragma once
#include <glib.h>
#include "eb-reason.h"
#include "eb-fetch-result.h"

G_BEGIN_DECLS

/* What the item type of the gopher URL @url says (RFC 1738 3.4: the first
 * character of the path; none, or "/": the top menu, type 1):
 * EB_REASON_RESOLVED for a document; not-retrieval for a telnet session (8,
 * T); not-document for a menu, a search, a CSO phone book, an HTML link or
 * any other type, with *@detail set. */
EbReason eb_gopher_classify (const char *url, char **detail);

/* @r, the result of the gopher URL @url received whole (there are no
 * statuses): an error item in place of the document (a one-line menu of type
 * 3, which is how servers say the selector does not exist) makes it a
 * failure; a text item (type 0) loses the "." line that ends it, when the
 * server sent one. Lines are not un-stuffed: servers send their files as
 * they are. */
void eb_gopher_finish (const char *url, EbFetchResult *r);

G_END_DECLS
