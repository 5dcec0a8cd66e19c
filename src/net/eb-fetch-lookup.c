/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-fetch-lookup.c - host name lookups on threads a deadline can abandon
 * (see eb-fetch-shared.h). */
#include "eb-fetch-shared.h"
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <netdb.h>
#include <arpa/inet.h>

/* ---- name lookups that a deadline can abandon ------------------------------- */

/* libcurl's threaded resolver cannot be interrupted: a DNS server that never
 * answers holds a transfer for glibc's retries whatever the time limits say.
 * So extbody looks names up itself, on a thread of its own that it abandons
 * when connect_timeout or the message deadline comes first, and hands the
 * addresses to curl (CURLOPT_RESOLVE); the policy still checks each address
 * curl connects to. An abandoned thread ends when getaddrinfo() returns. */
/* Lookup threads alive in the process at most (abandoned ones included, until
 * getaddrinfo returns): a DNS outage under a flood of mail cannot pile threads
 * up. A transfer waits for a free one within its deadline. */
#define EB_FETCH_MAX_LOOKUPS 64
static gint live_lookups;


LookupWaker *
eb_fetch_lookup_waker_new (CURLM *multi)
{
  LookupWaker *w = g_new0 (LookupWaker, 1);
  w->ref = 1;
  g_mutex_init (&w->lock);
  w->multi = multi;
  return w;
}

static void
waker_unref (LookupWaker *w)
{
  if (!w || !g_atomic_int_dec_and_test (&w->ref))
    return;
  g_mutex_clear (&w->lock);
  g_free (w);
}

/* The loop is over (before curl_multi_cleanup): no lookup wakes it any more. */
void
eb_fetch_lookup_waker_close (LookupWaker *w)
{
  g_mutex_lock (&w->lock);
  w->multi = NULL;
  g_mutex_unlock (&w->lock);
  waker_unref (w);
}

void
eb_fetch_lookup_unref (Lookup *l)
{
  if (!l || !g_atomic_int_dec_and_test (&l->ref))
    return;
  waker_unref (l->waker);
  g_free (l->host);
  g_free (l->addrs);
  g_free (l->error);
  g_free (l);
}

static gpointer
lookup_thread (gpointer data)
{
  Lookup *l = data;
  struct addrinfo hints = { 0 }, *res = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo (l->host, NULL, &hints, &res);
  if (rc != 0) {
    l->error = g_strdup_printf ("host %.100s: %s", l->host, gai_strerror (rc));
  } else {
    GString *s = g_string_new (NULL);
    guint n = 0;
    for (struct addrinfo *a = res; a && n < 16; a = a->ai_next) {
      char text[INET6_ADDRSTRLEN];
      const void *bin = a->ai_family == AF_INET ? (const void *) &((struct sockaddr_in *) a->ai_addr)->sin_addr
                      : a->ai_family == AF_INET6 ? (const void *) &((struct sockaddr_in6 *) a->ai_addr)->sin6_addr
                      : NULL;
      if (!bin || !inet_ntop (a->ai_family, bin, text, sizeof text))
        continue;
      g_autofree char *item = a->ai_family == AF_INET6 ? g_strdup_printf ("[%s]", text) : g_strdup (text);
      if (strstr (s->str, item))
        continue;
      g_string_append_printf (s, "%s%s", n++ ? "," : "", item);
    }
    freeaddrinfo (res);
    if (n)
      l->addrs = g_string_free (s, FALSE);
    else {
      g_string_free (s, TRUE);
      l->error = g_strdup_printf ("host %.100s: no address", l->host);
    }
  }
  g_atomic_int_set (&l->done, 1);
  /* the loop waiting on it moves on now, not at its next tick */
  if (l->waker) {
    g_mutex_lock (&l->waker->lock);
    if (l->waker->multi)
      curl_multi_wakeup (l->waker->multi);
    g_mutex_unlock (&l->waker->lock);
  }
  eb_fetch_lookup_unref (l);
  g_atomic_int_add (&live_lookups, -1);
  return NULL;
}

/* Start looking @host up, waking @waker's loop (nullable) when it ends;
 * NULL when no thread could be made. */
Lookup *
eb_fetch_lookup_start (const char *host, LookupWaker *waker)
{
  Lookup *l = g_new0 (Lookup, 1);
  l->ref = 2;       /* the thread's and the caller's */
  l->host = g_strdup (host);
  if (waker) {
    g_atomic_int_inc (&waker->ref);
    l->waker = waker;
  }
  g_atomic_int_inc (&live_lookups);
  GThread *th = g_thread_try_new ("eb-lookup", lookup_thread, l, NULL);
  if (!th) {
    g_atomic_int_add (&live_lookups, -1);
    waker_unref (l->waker);
    g_free (l->host);
    g_free (l);
    return NULL;
  }
  g_thread_unref (th);
  return l;
}

/* The host and port to look up for @url, when it names a host rather than an
 * address; FALSE otherwise. */
gboolean
eb_fetch_lookup_needed (const char *url, char **host, long *port)
{
  CURLU *u = curl_url ();
  char *h = NULL, *p = NULL;
  gboolean need = FALSE;
  unsigned flags = 0;
#ifdef CURLU_PUNYCODE
  flags |= CURLU_PUNYCODE;
#endif
  if (curl_url_set (u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK
      && curl_url_get (u, CURLUPART_HOST, &h, flags) == CURLUE_OK && h && *h && h[0] != '['
      && !g_hostname_is_ip_address (h)
      && curl_url_get (u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) == CURLUE_OK && p) {
    *host = g_strdup (h);
    *port = strtol (p, NULL, 10);
    need = TRUE;
  }
  curl_free (h);
  curl_free (p);
  curl_url_cleanup (u);
  return need;
}

/* TRUE when no more lookup threads may start now. */
gboolean
eb_fetch_lookup_threads_full (void)
{
  return g_atomic_int_get (&live_lookups) >= EB_FETCH_MAX_LOOKUPS;
}
