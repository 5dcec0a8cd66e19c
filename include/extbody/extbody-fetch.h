/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody-fetch.h - the fetcher: libcurl under the fetch policy.
 *
 * Part of libextbody's public API; include <extbody/extbody.h>, which
 * includes every header of the API. */
#pragma once
#include <extbody/extbody-base.h>
#include <extbody/extbody-config.h>

G_BEGIN_DECLS

/**
 * SECTION:extbody-fetch
 * @title: Fetcher
 * @short_description: the fetcher: libcurl under the fetch policy
 * @include: extbody/extbody.h
 */

/* ---- fetcher ---------------------------------------------------------------- */

/**
 * EbFetcher:
 *
 * Fetches http, https and ftp URLs through libcurl under the fetch policy of
 * the configuration it was made with, with a cache and per-host rate limits
 * shared by every message it handles. One fetcher may be shared by threads.
 */
typedef struct _EbFetcher EbFetcher;

/**
 * eb_fetcher_new:
 * @config: the configuration (copied)
 * @error: return location for a #GError
 *
 * A fetcher for the fetch keys of @config. eb_init() must have been called.
 *
 * Returns: (transfer full) (nullable): the fetcher, or NULL with
 *   %EB_ERROR_CONFIG when a fetch key is invalid (a bad CIDR, port or scheme
 *   list).
 */
EXTBODY_API EbFetcher *eb_fetcher_new (const EbConfig *config, GError **error);

/**
 * eb_fetcher_free:
 * @fetcher: (nullable) (transfer full): a fetcher
 *
 * Free @fetcher, when no thread uses it any more.
 */
EXTBODY_API void eb_fetcher_free (EbFetcher *fetcher);

/**
 * EbFetcherShared:
 * @EB_FETCHER_SHARED_NONE: no redis_server is configured: the fetcher keeps
 *   its own cache and rate limits
 * @EB_FETCHER_SHARED_UP: Redis answers: the cache and limits are shared
 * @EB_FETCHER_SHARED_DOWN: Redis does not answer: the fetcher uses its own
 *   cache and limits until it does
 *
 * How the fetcher's shared cache stands (eb_fetcher_check_shared()).
 */
typedef enum {
  EB_FETCHER_SHARED_NONE,
  EB_FETCHER_SHARED_UP,
  EB_FETCHER_SHARED_DOWN,
} EbFetcherShared;

/**
 * eb_fetcher_check_shared:
 * @fetcher: a fetcher
 *
 * Asks the fetcher's Redis whether it answers (a PING within redis_timeout),
 * as a health check does. While Redis is down and its next try has not come
 * (the fetcher waits a little longer after each failure), it is not asked
 * again and %EB_FETCHER_SHARED_DOWN is returned at once. A change is logged as
 * the fetches log it ("Redis ... is down", "... is back").
 *
 * Returns: how the shared cache stands.
 */
EXTBODY_API EbFetcherShared eb_fetcher_check_shared (EbFetcher *fetcher);

/**
 * EbFetchProgressFunc:
 * @data: the data given to eb_fetch_set_thread_progress()
 *
 * Called about once a second while fetches of the thread that set it run (the
 * milter calls smfi_progress() from it, so the MTA's timeout restarts).
 */
typedef void (*EbFetchProgressFunc) (gpointer data);

/**
 * eb_fetch_set_thread_progress:
 * @func: (nullable): the function, or NULL to clear it
 * @data: (closure func): passed to @func
 *
 * Set the progress function of the calling thread's fetches.
 */
EXTBODY_API void eb_fetch_set_thread_progress (EbFetchProgressFunc func, gpointer data);

/**
 * eb_fetch_set_thread_cancel:
 * @flag: (nullable): a flag, read atomically; NULL to clear
 *
 * A flag that cancels the calling thread's fetches once it is set (non-zero):
 * each stops within about a second as timed-out, "cancelled", and is not
 * cached. @flag must stay valid until it is cleared.
 */
EXTBODY_API void eb_fetch_set_thread_cancel (const gint *flag);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbFetcher, eb_fetcher_free)

G_END_DECLS
