/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-keys.h - the configuration keys only extbodyd reads.
 *
 * extbodyd's sockets, their modes and limits, its mode, its answer on an
 * inner failure, its spill size, its stop timeout and its metrics file are
 * the daemon's, not the library's: this table defines them (name, type,
 * default, bounds, check and the text extbody.conf(5) prints) and adds them
 * to the library's keys with eb_config_register_keys, as each Postfix daemon
 * owns its parameters. The daemon reads them, and the library's keys it
 * needs, through DaemonSettings, bound once per configuration generation
 * (the only place that looks a key up by its name). They live in the file every extbody program reads
 * (/etc/extbody/extbody.conf), so the command adds them too: `extbody config`
 * lists and checks the whole file, as postconf knows every daemon's
 * parameters. Public API only (extbody.h). */
#pragma once
#include <sys/socket.h>

#include <gio/gio.h>
#include <extbody/extbody.h>

G_BEGIN_DECLS

/* Every key extbodyd reads, the library's among them, each bound once per
 * configuration generation to a typed field of DaemonSettings
 * (daemon_keys_bind): the daemon reads gen->keys.http_timeout, never a key
 * by its name, so that a misspelt key does not compile. The field's name is
 * the key's. TEXT: a string (borrowed from the configuration, which the
 * generation holds), NUM: a number or a size, BOOL: on or off. */
#define DAEMON_SETTINGS(TEXT, NUM, BOOL)                                                        \
  TEXT (milter_socket) TEXT (milter_mode) TEXT (milter_umask) TEXT (client_umask) TEXT (on_error) \
  NUM (milter_spill_size) NUM (milter_stop_timeout) NUM (drain_delay) BOOL (redis_required)       \
  TEXT (metrics_file) NUM (metrics_interval)                                                     \
  TEXT (http_socket) TEXT (http_allow_networks) NUM (http_max_connections) NUM (http_timeout)   \
  NUM (http_request_timeout) NUM (http_max_peer_connections) TEXT (http_externalize_clients)      \
  TEXT (http_metrics_clients) TEXT (dovecot_filter_socket) NUM (dovecot_max_connections)         \
  NUM (dovecot_timeout) NUM (dovecot_request_timeout) NUM (dovecot_max_peer_connections)         \
  BOOL (fetch) NUM (max_message_size) BOOL (strip_trace_fields)

#define DAEMON_SETTINGS_TEXT_(k) const char *k;
#define DAEMON_SETTINGS_NUM_(k)  guint64 k;
#define DAEMON_SETTINGS_BOOL_(k) gboolean k;
typedef struct {
  DAEMON_SETTINGS (DAEMON_SETTINGS_TEXT_, DAEMON_SETTINGS_NUM_, DAEMON_SETTINGS_BOOL_)
} DaemonSettings;

/* A number key of DaemonSettings named by its field, for a table: its name
 * and where its value is. */
typedef struct {
  const char *name;
  gsize       offset;
} DaemonKeyField;
#define DAEMON_KEY_FIELD(k) { #k, G_STRUCT_OFFSET (DaemonSettings, k) }

/* Bind every key of DAEMON_SETTINGS in @config to its field of @s. FALSE
 * with @error when the configuration lacks one of them (the table names a
 * key nobody registered: a programming error, found at start). */
gboolean daemon_keys_bind (DaemonSettings *s, const EbConfig *config, GError **error);

/* Is @addr in @config's http_allow_networks? */
gboolean daemon_keys_http_allows (const EbConfig *config, const struct sockaddr *addr);

/* Adds extbodyd's keys to the library's, before any configuration is made
 * (again: nothing). FALSE only when the table is wrong (a programming error). */
gboolean daemon_keys_register (GError **error);

/* The value of http_externalize_clients or http_metrics_clients, parsed
 * once (names looked up when the configuration loads: a user or group made
 * later needs a reload): the users, groups and networks named. */
typedef struct {
  GArray    *uids;   /* uid_t */
  GArray    *gids;   /* gid_t */
  GPtrArray *nets;   /* GInetAddressMask */
} DaemonClients;

/* Parse @value; NULL with @error (%EB_ERROR_SYNTAX) naming the item that is
 * no user, group or CIDR block. */
DaemonClients *daemon_keys_clients_parse (const char *value, GError **error);
void daemon_keys_clients_free (DaemonClients *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (DaemonClients, daemon_keys_clients_free)

G_END_DECLS
