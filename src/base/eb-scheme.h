/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-scheme.h - the URL schemes extbody knows: one table, a row each.
 *
 * A reference's URL (RFC 2017: an RFC 1738 URL, or one of the schemes named
 * since) is handled as its scheme's row says: how it is retrieved (by
 * libcurl, by extbody's own NNTP client, from a local file, from the URL
 * itself, or never), the policy it falls under (whether allow_schemes may
 * name it, whether a redirect may lead to it, whether it speaks HTTP or TLS,
 * where its server comes from, its default port) and, for a scheme that is
 * refused whatever the configuration, why. Every scheme fetched over the
 * network is subject to the whole fetch policy: allow_domains and
 * deny_domains for its host, eb-policy for the address and port of every
 * connection. A scheme's name is spelled once in src/, in the table of
 * eb-scheme.c (tests/meta/test-structure.py holds the code to it): the code
 * asks the table, never compares a name.
 *
 * Why the table is here, in base/, and pure data. The configuration
 * (eb-config, base/) checks the names of allow_schemes when a value is
 * loaded or set, and the error it gives ("allow_schemes: \"telnet\" is not
 * a scheme extbody fetches (...)", with the file or -o it came from) is part
 * of the interface: eb_config_set() fails on it, `extbody config` reports
 * it, whether a fetcher is ever built or not. So the table must be readable
 * from base/, the bottom layer, and none of it may lead up: a row holds no
 * function of net/. The code a scheme needs of its own lives in net/, one
 * file a scheme, and the row leads to it by value: `by` names the client
 * (EB_SCHEME_NNTP: eb-nntp.c; EB_SCHEME_LOCAL_FILE: eb_fetch_local_file;
 * EB_SCHEME_INLINE: mime/eb-dataurl.c) and `rules` the checks a scheme
 * libcurl fetches adds to libcurl's (EB_SCHEME_RULES_FTP: eb-ftp.c,
 * EB_SCHEME_RULES_GOPHER: eb-gopher.c). The fetcher and the decision
 * (eb-resolve) switch on those values, never on a name. How to add a scheme:
 * src/README.md, "Adding a URL scheme".
 */
#pragma once
#include <glib.h>
#include "eb-reason.h"

G_BEGIN_DECLS

/* How a URL of the scheme is retrieved. */
typedef enum {
  EB_SCHEME_NEVER,       /* never: refused for the row's refusal, or as any scheme not enabled */
  EB_SCHEME_INLINE,      /* the URL carries the data (RFC 2397): mime/eb-dataurl.c */
  EB_SCHEME_LOCAL_FILE,  /* a file of local_file_dirs, read by extbody: eb_fetch_local_file */
  EB_SCHEME_CURL,        /* over the network by libcurl: net/eb-fetch-transfer.c */
  EB_SCHEME_NNTP,        /* over the network by extbody's own NNTP client: net/eb-nntp.c */
} EbSchemeFetch;

/* The checks a scheme that libcurl fetches adds to libcurl's: what its URL's
 * path says before it is fetched, how its transfer is set up, what its
 * answer holds. */
typedef enum {
  EB_SCHEME_RULES_NONE,
  EB_SCHEME_RULES_FTP,     /* RFC 1738 3.2: typecodes, directories, SIZE: net/eb-ftp.c */
  EB_SCHEME_RULES_GOPHER,  /* RFC 1738 3.4, RFC 1436: item types, error items: net/eb-gopher.c */
} EbSchemeRules;

typedef struct {
  const char   *name;         /* lowercase, as the URL spells it in any case */
  EbSchemeFetch by;
  EbSchemeRules rules;
  gboolean      allowable;    /* allow_schemes may name it */
  gboolean      redirect;     /* a redirect may lead to it, when allow_schemes names it */
  gboolean      http;         /* HTTP: statuses, a response header, redirects */
  gboolean      tls;          /* over TLS: a redirect from it must not give TLS up */
  gboolean      nntp_server;  /* its URLs name no server: nntp_server is it (RFC 1738 3.6) */
  gboolean      special;      /* a WHATWG URL special scheme: its authority is a host */
  guint16       port;         /* the port when the URL and the configuration name none */
  EbReason      refusal;      /* refused whatever the configuration (RESOLVED: not so) */
  const char   *why;          /* the refusal's detail, after "scheme \"NAME\": " */
  const char   *access_type;  /* the RFC 2046 access-type whose references are its URLs */
} EbScheme;

/* The row of @name (any case; NULL or no row: NULL). */
const EbScheme *eb_scheme_lookup (const char *name);

/* The row of the @len bytes at @name (any case), or NULL. */
const EbScheme *eb_scheme_lookup_len (const char *name, gsize len);

/* The row whose URLs the references of RFC 2046 access-type @access_type
 * (as written, such as "anon-ftp") are, or NULL. */
const EbScheme *eb_scheme_for_access_type (const char *access_type);

/* Is @scheme (nullable) fetched over the network, by libcurl or by the NNTP
 * client? */
gboolean eb_scheme_is_fetched (const EbScheme *scheme);

/* The names allow_schemes may name, in the table's order, separated by ", "
 * and the last two by @last ("http, https, ..., news, nntp" with ", "),
 * for the errors that list them. Returns: (transfer full). */
char *eb_scheme_list_allowable (const char *last);

/* The url-path of @url in the common Internet scheme syntax (RFC 1738 3.1:
 * scheme://authority/url-path): a pointer into @url at what follows the
 * authority ('/', '?', '#' or the end), or "" when @url has no "://". */
const char *eb_scheme_url_path (const char *url);

G_END_DECLS
