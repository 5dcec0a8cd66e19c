/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-fetch-result.c - what a fetch gives back (see eb-fetch-result.h). */
#include "eb-fetch-result.h"

void
eb_fetch_result_free (EbFetchResult *r)
{
  if (!r)
    return;
  g_free (r->detail);
  if (r->body)
    g_bytes_unref (r->body);
  g_free (r->content_type);
  g_free (r->final_url);
  g_free (r);
}

EbFetchResult *
eb_fetch_result_copy (const EbFetchResult *r)
{
  EbFetchResult *c = g_new0 (EbFetchResult, 1);
  c->reason = r->reason;
  c->detail = g_strdup (r->detail);
  c->body = r->body ? g_bytes_ref (r->body) : NULL;
  c->content_type = g_strdup (r->content_type);
  c->final_url = g_strdup (r->final_url);
  c->from_cache = r->from_cache;
  c->network = r->network;
  c->received = r->received;
  c->elapsed = r->elapsed;
  return c;
}
