/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-keys.h - the configuration keys only extbodyd reads.
 *
 * extbodyd's sockets, their modes and limits, its mode, its answer on an
 * inner failure, its spill size, its stop timeout and its metrics file are
 * the daemon's, not the library's: this table defines them (name, type,
 * default, bounds, check and the text extbody.conf(5) prints) and adds them
 * to the library's keys with eb_config_register_keys, as each Postfix daemon
 * owns its parameters. The daemon reads them with the library's getters, by
 * name. They live in the file every extbody program reads
 * (/etc/extbody/extbody.conf), so the command adds them too: `extbody config`
 * lists and checks the whole file, as postconf knows every daemon's
 * parameters. Public API only (extbody.h). */
#pragma once
#include <gio/gio.h>
#include <extbody/extbody.h>

G_BEGIN_DECLS

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
