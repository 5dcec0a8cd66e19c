/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody-cli-keys.h - the keys the command reads itself, each bound to a
 * typed field of CliSettings from the configuration it loaded: the
 * command reads settings->lock_timeout, never a key by its name, so that a
 * misspelt key does not compile (the library reads the rest through its
 * own typed configuration). TEXT: a string borrowed from the configuration,
 * NUM: a number or a size, BOOL: on or off. Public API only. */
#pragma once
#include <extbody/extbody.h>

G_BEGIN_DECLS

#define CLI_SETTINGS(TEXT, NUM, BOOL) \
  BOOL (fetch) TEXT (mailbox_metrics_file) NUM (lock_timeout) NUM (max_message_size)

#define CLI_SETTINGS_TEXT_(k) const char *k;
#define CLI_SETTINGS_NUM_(k)  guint64 k;
#define CLI_SETTINGS_BOOL_(k) gboolean k;
typedef struct {
  CLI_SETTINGS (CLI_SETTINGS_TEXT_, CLI_SETTINGS_NUM_, CLI_SETTINGS_BOOL_)
} CliSettings;

/* Every key of CLI_SETTINGS in @config, bound to its field. */
CliSettings extbody_cli_keys_of (const EbConfig *config);

G_END_DECLS
