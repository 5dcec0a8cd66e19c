/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-peer.c - who is at the other end of a connection to the daemon's
 * HTTP and Dovecot doors, and what that lets it do.
 *
 * On a unix socket a peer is its user: the credentials the kernel recorded
 * when it connected (SO_PEERCRED: uid, gid, pid; SO_PEERGROUPS: its
 * supplementary groups), which a client cannot choose. On an inet socket it
 * is its address. Two things follow from who it is:
 *
 *   - its share: one peer holds at most http_max_peer_connections
 *     (dovecot_max_peer_connections) of a door's connections, so that a
 *     flood of slow connections from one local user leaves the others their
 *     places (as Postfix's smtpd_client_connection_count_limit keeps one
 *     client to half of its processes). Root, the daemon's own user and
 *     loopback addresses are outside the shares: root and the daemon's user
 *     are the administrator's, and over TCP every local user comes from
 *     loopback alike;
 *   - what it may ask beyond rewriting and inspecting: storing (POST
 *     /externalize) and the counters (GET /metrics) are for root, the
 *     daemon's own user and the clients http_externalize_clients and
 *     http_metrics_clients name (as rspamd's controller keeps its writing
 *     commands to enable_password and secure_ip, and clamd keeps everything
 *     behind its socket's mode). */
#include <errno.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

static gboolean
address_is_loopback (const struct sockaddr_storage *ss, socklen_t len)
{
  g_autoptr (GSocketAddress) sa = g_socket_address_new_from_native ((gpointer) ss, len);
  return sa && G_IS_INET_SOCKET_ADDRESS (sa)
         && g_inet_address_get_is_loopback (g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (sa)));
}

static char *
address_string (const struct sockaddr_storage *ss, socklen_t len)
{
  g_autoptr (GSocketAddress) sa = g_socket_address_new_from_native ((gpointer) ss, len);
  if (!sa || !G_IS_INET_SOCKET_ADDRESS (sa))
    return g_strdup ("?");
  return g_inet_address_to_string (g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (sa)));
}

void
daemon_peer_of (int fd, DaemonPeer *p)
{
  memset (p, 0, sizeof *p);
  p->addr_len = sizeof p->addr;
  if (getpeername (fd, (struct sockaddr *) &p->addr, &p->addr_len) != 0)
    p->addr_len = 0;
  if (p->addr_len && (p->addr.ss_family == AF_INET || p->addr.ss_family == AF_INET6)) {
    g_autofree char *a = address_string (&p->addr, p->addr_len);
    g_strlcpy (p->key, a, sizeof p->key);
    g_strlcpy (p->name, a, sizeof p->name);
    p->exempt = address_is_loopback (&p->addr, p->addr_len);
    return;
  }
  struct ucred cr;
  socklen_t l = sizeof cr;
  if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) != 0) {
    /* no credentials: one peer for all such, counted */
    g_strlcpy (p->key, "unknown", sizeof p->key);
    g_strlcpy (p->name, "a client of unknown credentials", sizeof p->name);
    return;
  }
  p->has_creds = TRUE;
  p->uid = cr.uid;
  p->gid = cr.gid;
  p->pid = cr.pid;
  l = sizeof p->groups;
  if (getsockopt (fd, SOL_SOCKET, SO_PEERGROUPS, p->groups, &l) == 0)
    p->n_groups = l / sizeof p->groups[0];
  else if (errno == ERANGE)
    /* more than the array holds: the first ones are not told either way */
    p->n_groups = 0;
  p->exempt = cr.uid == 0 || cr.uid == geteuid ();
  g_snprintf (p->key, sizeof p->key, "uid %lu", (unsigned long) cr.uid);
  char buf[1024];
  struct passwd pw, *found = NULL;
  if (getpwuid_r (cr.uid, &pw, buf, sizeof buf, &found) == 0 && found)
    g_snprintf (p->name, sizeof p->name, "uid %lu (%s)", (unsigned long) cr.uid, found->pw_name);
  else
    g_snprintf (p->name, sizeof p->name, "uid %lu", (unsigned long) cr.uid);
}

void
daemon_peer_share_init (DaemonPeerShare *s, guint limit)
{
  g_mutex_init (&s->lock);
  s->held = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  s->limit = limit;
}

gboolean
daemon_peer_share_enter (DaemonPeerShare *s, const DaemonPeer *peer)
{
  if (peer->exempt)
    return TRUE;
  g_mutex_lock (&s->lock);
  guint n = GPOINTER_TO_UINT (g_hash_table_lookup (s->held, peer->key));
  gboolean ok = n < s->limit;
  if (ok)
    g_hash_table_insert (s->held, g_strdup (peer->key), GUINT_TO_POINTER (n + 1));
  g_mutex_unlock (&s->lock);
  return ok;
}

void
daemon_peer_share_leave (DaemonPeerShare *s, const DaemonPeer *peer)
{
  if (peer->exempt)
    return;
  g_mutex_lock (&s->lock);
  guint n = GPOINTER_TO_UINT (g_hash_table_lookup (s->held, peer->key));
  if (n > 1)
    g_hash_table_insert (s->held, g_strdup (peer->key), GUINT_TO_POINTER (n - 1));
  else
    g_hash_table_remove (s->held, peer->key);
  g_mutex_unlock (&s->lock);
}

void
daemon_peer_share_clear (DaemonPeerShare *s)
{
  g_clear_pointer (&s->held, g_hash_table_unref);
  g_mutex_clear (&s->lock);
}

static gboolean
in_groups (const DaemonPeer *p, gid_t gid)
{
  if (p->gid == gid)
    return TRUE;
  for (guint i = 0; i < p->n_groups; i++)
    if (p->groups[i] == gid)
      return TRUE;
  return FALSE;
}

gboolean
daemon_peer_is (const DaemonPeer *p, const DaemonClients *c)
{
  if (p->has_creds) {
    if (p->uid == 0 || p->uid == geteuid ())
      return TRUE;
    for (guint i = 0; c && i < c->uids->len; i++)
      if (g_array_index (c->uids, uid_t, i) == p->uid)
        return TRUE;
    for (guint i = 0; c && i < c->gids->len; i++)
      if (in_groups (p, g_array_index (c->gids, gid_t, i)))
        return TRUE;
    return FALSE;
  }
  if (!p->addr_len || !c || !c->nets->len)
    return FALSE;
  g_autoptr (GSocketAddress) sa = g_socket_address_new_from_native ((gpointer) &p->addr, p->addr_len);
  if (!sa || !G_IS_INET_SOCKET_ADDRESS (sa))
    return FALSE;
  GInetAddress *a = g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (sa));
  for (guint i = 0; i < c->nets->len; i++)
    if (g_inet_address_mask_matches (c->nets->pdata[i], a))
      return TRUE;
  return FALSE;
}
