/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-fetch.h - fetching http, https, ftp and gopher URLs through libcurl,
 * under the fetch policy; reading the local files of local-file references
 * and file URLs.
 *
 * Every URL in incoming mail was chosen by a stranger. All fetches of one message
 * run concurrently through one libcurl multi handle (at most
 * max_concurrent_fetches at once); identical URLs are fetched once, and results
 * are kept for cache_ttl seconds in a cache shared by every message a fetcher
 * handles. The policy is enforced where it cannot be bypassed: libcurl's
 * open-socket callback asks eb_policy_check() about every address before it
 * connects (every candidate address, every redirect, the FTP data connection);
 * redirects are followed by extbody itself, each one checked like the first URL
 * (scheme, credentials, domain, count); bytes are counted in the write callback
 * and the fetch aborted there, for each body (max_part_bytes) and for the
 * message's bodies together (max_message_bytes); time is bounded per fetch,
 * per message (one deadline for everything the message waits for: host name
 * lookups, made on threads of extbody's own that are abandoned at the deadline,
 * rate-limit turns, another thread's fetch of the same URL) and by a low-speed
 * limit; only a 200 with the whole body is used; no decompression (a content or
 * transfer coding is refused), no https-to-http redirect, no proxy unless
 * configured, no cookies, .netrc or credentials; TLS always verified. Rate
 * limits are a token bucket per host: a request over the rate waits for its
 * turn within the deadline.
 *
 * A fetcher may be shared by threads: its cache and rate limiter are locked.
 * curl_global_init() must have been called before any thread starts.
 */
#pragma once
#include <glib.h>
#include "eb-config.h"
#include "eb-reason.h"
#include "eb-fetch-result.h"

G_BEGIN_DECLS

/* EbFetcher (opaque), eb_fetcher_new, eb_fetcher_free and the per-thread
 * progress and cancel hooks (eb_fetch_set_thread_progress,
 * eb_fetch_set_thread_cancel) are public (extbody.h). */

/* The calling thread's hooks for libcurl transfers other than the fetcher's
 * (the store's, src/net/eb-store.c), so that a milter thread waiting on them keeps
 * its MTA informed and stops when told to:
 * eb_fetch_thread_cancelled: TRUE once the flag of eb_fetch_set_thread_cancel
 * is set (FALSE without one);
 * eb_fetch_thread_progress: the function of eb_fetch_set_thread_progress, if
 * any, called when more than a second has passed since *@last (monotonic
 * µs), which is then set to now - the fetcher's own rate. */
gboolean eb_fetch_thread_cancelled (void);
void eb_fetch_thread_progress (gint64 *last);

/* Is @url's scheme one the fetcher may fetch (allow_schemes, fetch = on)? */
gboolean eb_fetcher_scheme_allowed (const EbFetcher *fetcher, const char *url);

/* What @url's scheme and path say before any configuration is looked at:
 * EB_REASON_RESOLVED when it may name a document, else why not, with
 * *@detail set: not-retrieval (mailto, telnet, tn3270; a gopher telnet item
 * 8 or T), unsupported-scheme (wais, prospero), not-document (an ftp
 * directory: ;type=d or a path ending in '/'; a gopher item that is a menu,
 * a search or no document). eb-fetch-url.c. */
EbReason eb_fetch_url_classify (const char *url, char **detail);

/* Fetch the @n @urls of one message concurrently; identical URLs once.
 * @max_bytes caps each body, max_message_bytes all of them together, and
 * message_deadline the whole call. Returns: (transfer full) (element-type EbFetchResult): one result per
 * URL, in order. Never NULL; failures are results. */
GPtrArray *eb_fetcher_fetch_all (EbFetcher *fetcher, const char *const *urls, guint n,
                                 guint64 max_bytes);


/* Read the local file @path for an access-type=local-file reference: only a
 * regular file that lies, once every symbolic link and ".." is resolved, inside
 * one of the directories of the list @dirs (the local_file_dirs value), of at
 * most @max_bytes (else part-too-large) and at most @room, what the message's
 * max_message_bytes leaves (else message-budget, without reading it).
 * Returns: (transfer full): never NULL; failures are results. */
EbFetchResult *eb_fetch_local_file (const char *path, const char *const *dirs, guint64 max_bytes,
                                    guint64 room);

/* The local path of the file URL @url (RFC 1738 3.10) into *@path:
 * file:///PATH or file://LOCALHOST/PATH (any case), the path decoded segment by
 * segment. Returns EB_REASON_RESOLVED; else *@detail says why:
 * file-remote-host (any other host), refused-path (another form, a query or
 * fragment, a bad escape, an escaped '/' or NUL, a "." or ".." segment, a path
 * of PATH_MAX bytes or more). The path is then read by eb_fetch_local_file(),
 * which checks where it leads. */
EbReason eb_fetch_file_url_path (const char *url, char **path, char **detail);

G_END_DECLS
