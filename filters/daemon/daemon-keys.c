/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-keys.c - the configuration keys only extbodyd reads (see daemon-keys.h). */
#include <extbody/extbody.h>

#include "daemon-keys.h"

#include <arpa/inet.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>

/* ---- the checks of their values ------------------------------------------ */

/* A file mode mask in octal, as umask(1) writes it: 1 to 4 octal digits,
 * at most 0777. */
static gboolean
check_umask (const char *value, GError **error)
{
  gsize n = strlen (value);
  gboolean ok = n >= 1 && n <= 4;
  for (gsize i = 0; ok && i < n; i++)
    ok = value[i] >= '0' && value[i] <= '7';
  if (ok && g_ascii_strtoull (value, NULL, 8) <= 0777)
    return TRUE;
  g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\" is not an octal mask (000 to 777)", value);
  return FALSE;
}

/* libmilter's socket: unix:PATH or local:PATH (absolute), inet:PORT[@ADDRESS],
 * inet6:PORT[@ADDRESS], with PORT 1 to 65535. */
static gboolean
check_socket (const char *value, GError **error)
{
  const char *v = value;
  if (g_str_has_prefix (v, "unix:") || g_str_has_prefix (v, "local:")) {
    const char *path = strchr (v, ':') + 1;
    if (g_path_is_absolute (path))
      return TRUE;
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\": the socket path must be absolute", v);
    return FALSE;
  }
  gboolean v6 = g_str_has_prefix (v, "inet6:");
  if (v6 || g_str_has_prefix (v, "inet:")) {
    const char *p = strchr (v, ':') + 1;
    const char *at = strchr (p, '@');
    g_autofree char *port = at ? g_strndup (p, (gsize) (at - p)) : g_strdup (p);
    gboolean ok = *port && strlen (port) <= 5 && port[0] != '0';
    for (const char *c = port; ok && *c; c++)
      ok = g_ascii_isdigit (*c);
    guint64 n = ok ? g_ascii_strtoull (port, NULL, 10) : 0;
    if (!ok || n < 1 || n > 65535) {
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\": \"%s\" is not a port (1 to 65535)", v, port);
      return FALSE;
    }
    if (at && !at[1]) {
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\": no address after '@'", v);
      return FALSE;
    }
    return TRUE;
  }
  g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
               "\"%s\" is not unix:PATH, inet:PORT@ADDRESS or inet6:PORT@ADDRESS", v);
  return FALSE;
}

/* extbodyd's HTTP listener: empty (none), unix:PATH (absolute), or
 * inet:PORT@ADDRESS / inet6:PORT@[ADDRESS] with an IP address written out.
 * The listener takes unauthenticated requests that may make the daemon
 * fetch: the daemon refuses an address other than loopback unless
 * http_allow_networks names who may connect. */
static gboolean
check_http_socket (const char *value, GError **error)
{
  if (!*value)
    return TRUE;
  if (g_str_has_prefix (value, "unix:")) {
    if (g_path_is_absolute (value + 5))
      return TRUE;
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\": the socket path must be absolute", value);
    return FALSE;
  }
  gboolean v6 = g_str_has_prefix (value, "inet6:");
  if (!v6 && !g_str_has_prefix (value, "inet:")) {
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
                 "\"%s\" is not unix:PATH, inet:PORT@127.0.0.1 or inet6:PORT@[::1]", value);
    return FALSE;
  }
  if (!check_socket (value, error))
    return FALSE;
  /* an IP address, written: names are not looked up (another address than
   * loopback needs http_allow_networks, which the daemon checks) */
  const char *at = strchr (value, '@');
  g_autofree char *addr = at ? g_strdup (at + 1) : NULL;
  if (addr && v6 && addr[0] == '[' && addr[strlen (addr) - 1] == ']') {
    memmove (addr, addr + 1, strlen (addr));
    addr[strlen (addr) - 1] = '\0';
  }
  unsigned char buf[16];
  if (addr && inet_pton (v6 ? AF_INET6 : AF_INET, addr, buf) == 1)
    return TRUE;
  g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
               "\"%s\": write an IP address: %s:PORT@%s for loopback", value,
               v6 ? "inet6" : "inet", v6 ? "[::1]" : "127.0.0.1");
  return FALSE;
}

/* extbodyd's listener for Dovecot: empty (none) or the absolute path
 * of a unix socket (the milter changes to / when it detaches). */
static gboolean
check_dovecot_socket (const char *value, GError **error)
{
  if (!*value || g_path_is_absolute (value))
    return TRUE;
  g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\": the socket path must be absolute", value);
  return FALSE;
}

/* A file named by its absolute path, or empty (none): the daemon changes
 * to / when it detaches. */
static gboolean
check_file (const char *value, GError **error)
{
  if (!*value || g_path_is_absolute (value))
    return TRUE;
  g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\" is not an absolute path", value);
  return FALSE;
}

/* ---- the clients a door lets do more ----------------------------------------- */

void
daemon_keys_clients_free (DaemonClients *c)
{
  if (!c)
    return;
  g_array_unref (c->uids);
  g_array_unref (c->gids);
  g_ptr_array_unref (c->nets);
  g_free (c);
}

/* One item of a clients list: a user, @group or ADDRESS/BITS. */
static gboolean
clients_add (DaemonClients *c, const char *item, GError **error)
{
  if (strchr (item, '/')) {
    GInetAddressMask *m = g_inet_address_mask_new_from_string (item, NULL);
    if (!m) {
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\" is not a CIDR block", item);
      return FALSE;
    }
    g_ptr_array_add (c->nets, m);
    return TRUE;
  }
  if (item[0] == '@') {
    struct group *gr = item[1] ? getgrnam (item + 1) : NULL;
    if (!gr) {
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\": no such group", item);
      return FALSE;
    }
    gid_t gid = gr->gr_gid;
    g_array_append_val (c->gids, gid);
    return TRUE;
  }
  struct passwd *pw = getpwnam (item);
  if (!pw) {
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\": no such user", item);
    return FALSE;
  }
  uid_t uid = pw->pw_uid;
  g_array_append_val (c->uids, uid);
  return TRUE;
}

DaemonClients *
daemon_keys_clients_parse (const char *value, GError **error)
{
  g_autoptr (DaemonClients) c = g_new0 (DaemonClients, 1);
  c->uids = g_array_new (FALSE, FALSE, sizeof (uid_t));
  c->gids = g_array_new (FALSE, FALSE, sizeof (gid_t));
  c->nets = g_ptr_array_new_with_free_func (g_object_unref);
  g_auto (GStrv) items = g_strsplit_set (value ? value : "", ", \t", -1);
  for (guint i = 0; items[i]; i++)
    if (*items[i] && !clients_add (c, items[i], error))
      return NULL;
  return g_steal_pointer (&c);
}

/* A list of users, @groups and CIDR blocks, each of them there. */
static gboolean
check_clients (const char *value, GError **error)
{
  DaemonClients *c = daemon_keys_clients_parse (value, error);
  daemon_keys_clients_free (c);
  return c != NULL;
}

/* ---- the keys --------------------------------------------------------------- */

/* In the order extbody.conf(5) and the example file give them. */
static const EbConfigKeyInfo daemon_keys[] = {
  { "metrics_file", EB_CONFIG_KEY_STRING, "", 0, 0, NULL, check_file, "absolute path",
    "When set, extbodyd's counters since it started (messages, references, resolved, left by reason, fetches by outcome, bytes fetched, cache hits, fetch latency) are written to this file in the Prometheus text format, mode 0644 (counters are not secrets: node_exporter reads them as its own user), replaced atomically every metrics_interval seconds and when the daemon stops; only the daemon writes it. Name it NAME.prom in the directory node_exporter's textfile collector reads (Debian's prometheus-node-exporter: /var/lib/prometheus/node-exporter, which the unit may write)." },
  { "metrics_interval", EB_CONFIG_KEY_NUMBER, "60", 1, 86400, NULL, NULL, NULL,
    "Seconds between two writes of metrics_file by extbodyd." },
  { "milter_socket", EB_CONFIG_KEY_STRING, "unix:/run/extbody/milter.sock", 0, 0, NULL, check_socket, "socket",
    "extbodyd's socket: unix:PATH, inet:PORT@ADDRESS or inet6:PORT@ADDRESS." },
  { "milter_umask", EB_CONFIG_KEY_STRING, "007", 0, 0, NULL, check_umask, "octal mask",
    "The file mode mask, in octal, extbodyd's unix socket is made with: 007 gives 0770, so that the daemon's user and group can connect (add the MTA's user, postfix, to that group); 000 lets every local user connect." },
  { "client_umask", EB_CONFIG_KEY_STRING, "000", 0, 0, NULL, check_umask, "octal mask",
    "The file mode mask, in octal, the unix sockets of extbodyd's other doors are made with (http_socket and dovecot_filter_socket): 000 gives 0777, so that every local user can connect, as Exim's local deliveries and Dovecot's LMTP run as the recipient; 007 keeps them to the daemon's user and group. Whoever can connect has messages rewritten and inspected as extbody would for them; storing (POST /externalize) and the counters (GET /metrics) take more: http_externalize_clients and http_metrics_clients." },
  { "on_error", EB_CONFIG_KEY_STRING, "accept", 0, 0, "accept|tempfail", NULL, NULL,
    "What extbodyd answers when it fails inside: accept the message unchanged, or tempfail it." },
  { "milter_spill_size", EB_CONFIG_KEY_SIZE, "1M", 0, G_GUINT64_CONSTANT (1) << 40, NULL, NULL, NULL,
    "Message bytes extbodyd keeps in memory, on every door (the milter, http_socket, dovecot_filter_socket); a larger message is spooled to a temporary file of its own (unlinked, mode 0600, in TMPDIR or /tmp), and so is the new message or body of one that is, or whose resolved data is, larger: the daemon's memory follows the connections it serves, not their messages' size." },
  { "milter_stop_timeout", EB_CONFIG_KEY_NUMBER, "60", 0, 3600, NULL, NULL, NULL,
    "Seconds extbodyd lets the messages in flight finish once told to stop (SIGTERM, SIGINT); meanwhile it accepts no connection and tempfails new messages; a message still unfinished then is cut off, and the MTA's milter_default_action applies to it." },
  { "drain_delay", EB_CONFIG_KEY_NUMBER, "0", 0, 300, NULL, NULL, NULL,
    "Seconds extbodyd goes on serving every door once told to stop (SIGTERM, SIGINT) while GET /healthz of its HTTP listener answers 503, so that a load balancer checking it (HAProxy's option httpchk) takes it out of the pool before it stops accepting; then milter_stop_timeout begins. A second SIGTERM ends the wait. 0: none (one daemon alone). Set it above the balancer's check interval times its fall count." },
  { "redis_required", EB_CONFIG_KEY_BOOLEAN, "off", 0, 0, NULL, NULL, NULL,
    "When on, GET /healthz of extbodyd's HTTP listener answers 503 while redis_server does not answer (a PING within redis_timeout), so that a pool whose members must share their fetches takes the daemon out meanwhile; the daemon itself goes on resolving with its own cache. Off (the default): Redis is an optimisation and /healthz only says how it is." },
  { "http_socket", EB_CONFIG_KEY_STRING, "unix:/run/extbody/http.sock", 0, 0, NULL, check_http_socket, "socket",
    "extbodyd's HTTP listener, for extbodyc (Exim's transport_filter, Postfix's pipe, scripts): POST /rewrite, /inspect, /externalize; GET /metrics, /healthz. unix:PATH (made with the mode client_umask gives), inet:PORT@127.0.0.1 or inet6:PORT@[::1] (it asks no password: loopback only, unless http_allow_networks names the networks whose clients may connect, when inet:PORT@ADDRESS may name another address of the machine); empty: none." },
  { "http_allow_networks", EB_CONFIG_KEY_NETWORKS, "", 0, 0, NULL, NULL, NULL,
    "CIDR blocks whose clients may connect to an inet http_socket besides loopback; with it set, http_socket may name any address of this machine (inet:PORT@0.0.0.0: all). Mind that the listener asks no password: list only hosts that may have mail rewritten and make the daemon fetch. Empty (the default): loopback only." },
  { "http_max_connections", EB_CONFIG_KEY_NUMBER, "16", 1, 1000, NULL, NULL, NULL,
    "Requests extbodyd's HTTP listener works on at once (from a request's header to its answer); past it a new one is answered 503. As many connections again may stay open (idle between requests, or sending one); a connection past that waits in the socket's backlog until one ends." },
  { "http_timeout", EB_CONFIG_KEY_NUMBER, "30", 1, 3600, NULL, NULL, NULL,
    "Seconds an HTTP client of extbodyd may stay idle, or take between two pieces of its request or of reading its answer, before it is cut off." },
  { "http_request_timeout", EB_CONFIG_KEY_NUMBER, "60", 1, 3600, NULL, NULL, NULL,
    "Seconds an HTTP request to extbodyd may take in all, from its first byte to the last of its body, however steadily it comes (a client that sends a byte now and then is cut off, answered 408); its answer must be read within as many seconds again." },
  { "http_max_peer_connections", EB_CONFIG_KEY_NUMBER, "8", 1, 2000, NULL, NULL, NULL,
    "Connections to extbodyd's HTTP listener one peer may hold at once: on a unix http_socket a peer is a user (the client's credentials), on an inet one an address; past it a new connection is answered 503 and closed, so that one local user cannot take every connection from the others. Root, the daemon's own user and loopback addresses (which every local user shares) are not counted. Where one user runs every delivery (OpenSMTPD's filter, Dovecot's virtual users), set it to twice http_max_connections." },
  { "http_externalize_clients", EB_CONFIG_KEY_STRING, "", 0, 0, NULL, check_clients, "users, @groups, CIDR blocks",
    "Who may store through POST /externalize of extbodyd's HTTP listener, besides root and the daemon's own user: user names and @group names (the credentials of a client of a unix http_socket, its supplementary groups included) and CIDR blocks (the address of a client of an inet http_socket: 127.0.0.1/32 lets every local user), separated by commas or spaces. Anyone else is answered 403. Empty (the default): no other local user writes to the store; POST /rewrite and /inspect stay open to every client." },
  { "http_metrics_clients", EB_CONFIG_KEY_STRING, "", 0, 0, NULL, check_clients, "users, @groups, CIDR blocks",
    "Who may read the counters through GET /metrics of extbodyd's HTTP listener, besides root and the daemon's own user, written as http_externalize_clients is (Prometheus scraping an inet http_socket: its address); anyone else is answered 403. metrics_file is the way that needs none." },
  { "dovecot_filter_socket", EB_CONFIG_KEY_STRING, "/run/extbody/extbody", 0, 0, NULL, check_dovecot_socket, "socket path",
    "extbodyd's listener for Dovecot's program-client protocol: the absolute path of a unix socket (made with the mode client_umask gives), where Pigeonhole's Sieve filter command connects instead of running a program when sieve_filter_socket_dir names its directory (relative to Dovecot's base_dir) and the socket is named as the program the script calls; each message is filtered as extbody rewrite --filter does, and on any failure Dovecot keeps the message as it came; empty: none." },
  { "dovecot_max_connections", EB_CONFIG_KEY_NUMBER, "16", 1, 1000, NULL, NULL, NULL,
    "Connections extbodyd's Dovecot listener serves at once; past it a new one waits in the socket's backlog until one ends." },
  { "dovecot_timeout", EB_CONFIG_KEY_NUMBER, "30", 1, 3600, NULL, NULL, NULL,
    "Seconds a Dovecot client of extbodyd may stay idle before it is cut off (its message stays as it came)." },
  { "dovecot_request_timeout", EB_CONFIG_KEY_NUMBER, "60", 1, 3600, NULL, NULL, NULL,
    "Seconds a Dovecot client of extbodyd may take in all, from its connection to the end of its message, however steadily it sends; past it the client is cut off and its message stays as it came. The answer must be read within as many seconds again." },
  { "dovecot_max_peer_connections", EB_CONFIG_KEY_NUMBER, "8", 1, 1000, NULL, NULL, NULL,
    "Connections to extbodyd's Dovecot listener one user (the client's credentials) may hold at once; past it a new connection is answered at once with a failure (its message stays as it came), so that one local user cannot make every other delivery wait. Root and the daemon's own user are not counted. Where Dovecot delivers for every user as one (virtual users: vmail), set it to dovecot_max_connections." },
  { "milter_mode", EB_CONFIG_KEY_STRING, "resolve", 0, 0, "resolve|externalize", NULL, NULL,
    "What extbodyd does to each message: resolve its message/external-body references (resolve), or store its large attachments in externalize_store and replace them with references (externalize), for an instance on the outgoing path (the submission service); externalize needs externalize_store." },
};

gboolean
daemon_keys_register (GError **error)
{
  return eb_config_register_keys ("extbodyd", daemon_keys, G_N_ELEMENTS (daemon_keys), error);
}

/* ---- the settings of a generation ------------------------------------------ */

gboolean
daemon_keys_bind (DaemonSettings *s, const EbConfig *config, GError **error)
{
#define TEXT_(k) if (!eb_config_has_key (#k)) goto unknown_##k; s->k = eb_config_get_string (config, #k);
#define NUM_(k)  if (!eb_config_has_key (#k)) goto unknown_##k; s->k = eb_config_get_uint64 (config, #k);
#define BOOL_(k) if (!eb_config_has_key (#k)) goto unknown_##k; s->k = eb_config_get_boolean (config, #k);
  DAEMON_SETTINGS (TEXT_, NUM_, BOOL_)
  return TRUE;
#undef TEXT_
#undef NUM_
#undef BOOL_
#define UNKNOWN_(k) unknown_##k: g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "no configuration key %s", #k); return FALSE;
  DAEMON_SETTINGS (UNKNOWN_, UNKNOWN_, UNKNOWN_)
#undef UNKNOWN_
}

gboolean
daemon_keys_http_allows (const EbConfig *config, const struct sockaddr *addr)
{
  return eb_config_networks_contain (config, "http_allow_networks", addr);
}
