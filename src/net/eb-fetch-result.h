/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-fetch-result.h - what a fetch gives back: the outcome of one URL (a
 * reason, the body when there is one, the server's Content-Type, the URL the
 * body came from), and figures for the statistics. A result owns its fields;
 * a copy shares the body (a GBytes). Results come from eb-fetch.h
 * (eb_fetcher_fetch_all, eb_fetch_local_file) and the fetcher's caches. */
#pragma once
#include <glib.h>
#include "eb-reason.h"

G_BEGIN_DECLS

typedef struct {
  EbReason reason;        /* RESOLVED when the data came back */
  char    *detail;        /* (nullable) one line */
  GBytes  *body;          /* (nullable) the data, when fetched */
  char    *content_type;  /* (nullable) the server's Content-Type, as sent */
  char    *final_url;     /* (nullable) the URL the data came from, after redirects */
  gboolean from_cache;
  /* for the statistics: set on the result of a transfer that left its
   * rate-limit wait (a name lookup, a connection); a copy from the cache
   * keeps them, so look at from_cache first */
  gboolean network;
  guint64  received;      /* body bytes that arrived, redirects and retries included */
  gint64   elapsed;       /* µs from leaving the rate-limit wait to the outcome */
} EbFetchResult;

void eb_fetch_result_free (EbFetchResult *r);
EbFetchResult *eb_fetch_result_copy (const EbFetchResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbFetchResult, eb_fetch_result_free)

G_END_DECLS
