/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-keys.c - the configuration keys only extbodyd reads (see daemon-keys.h). */
#include <extbody/extbody.h>

#include "daemon-keys.h"

#include <arpa/inet.h>
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
    "The file mode mask, in octal, the unix sockets of extbodyd's other doors are made with (http_socket and dovecot_filter_socket): 000 gives 0777, so that every local user can connect, as Exim's local deliveries and Dovecot's LMTP run as the recipient; 007 keeps them to the daemon's user and group. Whoever can connect has messages rewritten as extbody would for them, and, when externalize_store is set, stored through POST /externalize." },
  { "on_error", EB_CONFIG_KEY_STRING, "accept", 0, 0, "accept|tempfail", NULL, NULL,
    "What extbodyd answers when it fails inside: accept the message unchanged, or tempfail it." },
  { "milter_spill_size", EB_CONFIG_KEY_SIZE, "1M", 0, G_GUINT64_CONSTANT (1) << 40, NULL, NULL, NULL,
    "Message bytes extbodyd keeps in memory; a larger message is spooled to a temporary file, and so is the new body of a message that is, or whose resolved data is, larger." },
  { "milter_stop_timeout", EB_CONFIG_KEY_NUMBER, "60", 0, 3600, NULL, NULL, NULL,
    "Seconds extbodyd lets the messages in flight finish once told to stop (SIGTERM, SIGINT); meanwhile it accepts no connection and tempfails new messages; a message still unfinished then is cut off, and the MTA's milter_default_action applies to it." },
  { "http_socket", EB_CONFIG_KEY_STRING, "unix:/run/extbody/http.sock", 0, 0, NULL, check_http_socket, "socket",
    "extbodyd's HTTP listener, for extbodyc (Exim's transport_filter, Postfix's pipe, scripts): POST /rewrite, /inspect, /externalize; GET /metrics. unix:PATH (made with the mode client_umask gives), inet:PORT@127.0.0.1 or inet6:PORT@[::1] (it asks no password: loopback only, unless http_allow_networks names the networks whose clients may connect, when inet:PORT@ADDRESS may name another address of the machine); empty: none." },
  { "http_allow_networks", EB_CONFIG_KEY_NETWORKS, "", 0, 0, NULL, NULL, NULL,
    "CIDR blocks whose clients may connect to an inet http_socket besides loopback; with it set, http_socket may name any address of this machine (inet:PORT@0.0.0.0: all). Mind that the listener asks no password: list only hosts that may have mail rewritten and make the daemon fetch. Empty (the default): loopback only." },
  { "http_max_connections", EB_CONFIG_KEY_NUMBER, "16", 1, 1000, NULL, NULL, NULL,
    "Requests extbodyd's HTTP listener works on at once (from a request's header to its answer); past it a new one is answered 503. As many idle connections again may stay open; one more is closed unanswered." },
  { "http_timeout", EB_CONFIG_KEY_NUMBER, "30", 1, 3600, NULL, NULL, NULL,
    "Seconds an HTTP client of extbodyd may stay idle, or take between two pieces of its request, before it is cut off." },
  { "dovecot_filter_socket", EB_CONFIG_KEY_STRING, "/run/extbody/extbody", 0, 0, NULL, check_dovecot_socket, "socket path",
    "extbodyd's listener for Dovecot's program-client protocol: the absolute path of a unix socket (made with the mode client_umask gives), where Pigeonhole's Sieve filter command connects instead of running a program when sieve_filter_socket_dir names its directory (relative to Dovecot's base_dir) and the socket is named as the program the script calls; each message is filtered as extbody rewrite --filter does, and on any failure Dovecot keeps the message as it came; empty: none." },
  { "dovecot_max_connections", EB_CONFIG_KEY_NUMBER, "16", 1, 1000, NULL, NULL, NULL,
    "Connections extbodyd's Dovecot listener serves at once; past it a new one waits in the socket's backlog until one ends." },
  { "dovecot_timeout", EB_CONFIG_KEY_NUMBER, "30", 1, 3600, NULL, NULL, NULL,
    "Seconds a Dovecot client of extbodyd may stay idle before it is cut off (its message stays as it came)." },
  { "milter_mode", EB_CONFIG_KEY_STRING, "resolve", 0, 0, "resolve|externalize", NULL, NULL,
    "What extbodyd does to each message: resolve its message/external-body references (resolve), or store its large attachments in externalize_store and replace them with references (externalize), for an instance on the outgoing path (the submission service); externalize needs externalize_store." },
};

gboolean
daemon_keys_register (GError **error)
{
  return eb_config_register_keys ("extbodyd", daemon_keys, G_N_ELEMENTS (daemon_keys), error);
}
