/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody-config.h - configuration: keys, files and options.
 *
 * Part of libextbody's public API; include <extbody/extbody.h>, which
 * includes every header of the API. */
#pragma once
#include <sys/socket.h>

#include <extbody/extbody-base.h>

G_BEGIN_DECLS

/**
 * SECTION:extbody-config
 * @title: Configuration
 * @short_description: configuration: keys, files and options
 * @include: extbody/extbody.h
 */

/* ---- configuration ---------------------------------------------------------- */

/**
 * EB_CONFIG_DEFAULT_PATH:
 *
 * The configuration file the command and the milter read when none is named:
 * %EXTBODY_CONFIG_PATH, as configured when libextbody was built.
 */
#define EB_CONFIG_DEFAULT_PATH EXTBODY_CONFIG_PATH

/**
 * EbConfig:
 *
 * Every limit and switch of extbody, as named keys (documented in
 * extbody.conf(5)). Opaque: set keys with eb_config_set(), read them with
 * eb_config_get_boolean(), eb_config_get_uint64() and eb_config_get_string().
 */
typedef struct _EbConfig EbConfig;

/**
 * eb_config_new:
 *
 * A configuration holding every default (fetching off: data: URLs only).
 *
 * Returns: (transfer full): the configuration; free it with eb_config_free().
 */
EXTBODY_API EbConfig *eb_config_new (void);

/**
 * eb_config_copy:
 * @config: a configuration
 *
 * A copy of @config.
 *
 * Returns: (transfer full): the copy.
 */
EXTBODY_API EbConfig *eb_config_copy (const EbConfig *config);

/**
 * eb_config_free:
 * @config: (nullable) (transfer full): a configuration
 *
 * Free @config.
 */
EXTBODY_API void eb_config_free (EbConfig *config);

/**
 * eb_config_load_file:
 * @config: the configuration to change
 * @path: (type filename): a configuration file (a GLib key file, group [extbody])
 * @missing_ok: a file that does not exist is no error
 * @error: return location for a #GError
 *
 * Load the keys of the file @path over @config. Unknown keys are errors, and
 * so is a key set twice in the file: the message names both lines
 * ("FILE:LINE: KEY is set a second time (first at FILE:LINE)"), so that a
 * later line never silently undoes an earlier one.
 *
 * Returns: FALSE with %EB_ERROR_CONFIG (or a #GKeyFileError or #GFileError)
 *   on failure, the message naming the file and the key; @config is then
 *   unchanged.
 */
EXTBODY_API gboolean eb_config_load_file (EbConfig *config, const char *path, gboolean missing_ok,
                                          GError **error);

/**
 * eb_config_set:
 * @config: the configuration to change
 * @key: a key name, such as "max_parts"
 * @value: its value as written in a configuration file, such as "5000"
 * @error: return location for a #GError
 *
 * Set one key from its text form, checked as the file loader checks it.
 *
 * Returns: FALSE with %EB_ERROR_CONFIG for an unknown key or a bad value.
 */
EXTBODY_API gboolean eb_config_set (EbConfig *config, const char *key, const char *value,
                                    GError **error);

/**
 * eb_config_apply_option:
 * @config: the configuration to change
 * @option: "KEY=VALUE", as given to -o
 * @error: return location for a #GError
 *
 * Apply one command-line override. Credentials (externalize_store_user,
 * externalize_store_password) and externalize_key are refused: they are read
 * from the configuration file only.
 *
 * Returns: FALSE with %EB_ERROR_SYNTAX when the '=' is missing, with
 *   %EB_ERROR_CONFIG for an unknown key, a bad value or a credential key.
 */
EXTBODY_API gboolean eb_config_apply_option (EbConfig *config, const char *option, GError **error);

/**
 * eb_config_networks_contain:
 * @config: a configuration
 * @key: a key holding CIDR blocks: allow_networks, deny_networks, or a
 *   program's key of type %EB_CONFIG_KEY_NETWORKS (extbodyd's
 *   http_allow_networks)
 * @address: an IPv4 or IPv6 socket address
 *
 * Whether @address is in one of the blocks of @key (the daemon asks it of
 * a client of its HTTP listener).
 *
 * Returns: TRUE when it is; FALSE when not, or @key holds no CIDR blocks.
 */
EXTBODY_API gboolean eb_config_networks_contain (const EbConfig *config, const char *key,
                                                 const struct sockaddr *address);

/**
 * eb_config_add_networks:
 * @config: the configuration to change
 * @cidrs: (array zero-terminated=1) (nullable): CIDR blocks, such as "10.1.0.0/16"
 * @error: return location for a #GError
 *
 * Add @cidrs to the allow_networks key (--allow-network), each checked.
 *
 * Returns: FALSE with %EB_ERROR_CONFIG when one is not a CIDR block.
 */
EXTBODY_API gboolean eb_config_add_networks (EbConfig *config, const char *const *cidrs,
                                             GError **error);

/**
 * eb_config_dump:
 * @config: a configuration
 *
 * Every key with its current value, one "key = value" line each; a secret
 * that is set (externalize_store_password, externalize_key, redis_password)
 * is written as "(set; not shown)".
 *
 * Returns: (transfer full): the text.
 */
EXTBODY_API char *eb_config_dump (const EbConfig *config);

/**
 * eb_config_get_boolean:
 * @config: a configuration
 * @key: the name of a boolean key, such as "fetch"
 *
 * The value of a boolean key. Naming an unknown key or one of another type is
 * a programmer error (a critical warning, and FALSE).
 *
 * Returns: the value.
 */
EXTBODY_API gboolean eb_config_get_boolean (const EbConfig *config, const char *key);

/**
 * eb_config_get_uint64:
 * @config: a configuration
 * @key: the name of a number or size key, such as "max_message_size"
 *
 * The value of a number or size key (sizes in bytes). Naming an unknown key
 * or one of another type is a programmer error (a critical warning, and 0).
 *
 * Returns: the value.
 */
EXTBODY_API guint64 eb_config_get_uint64 (const EbConfig *config, const char *key);

/**
 * eb_config_get_string:
 * @config: a configuration
 * @key: the name of a text key, such as "content_type_mismatch"
 *
 * The value of a text key (a list key gives its text). Naming an unknown key or
 * one of another type is a programmer error (a critical warning, and NULL).
 *
 * Returns: (transfer none) (nullable): the value, valid until the key is set
 *   again or @config is freed.
 */
EXTBODY_API const char *eb_config_get_string (const EbConfig *config, const char *key);

/**
 * eb_config_has_key:
 * @key: a name
 *
 * Whether @key is a configuration key: the library's, or one a program added
 * (eb_config_register_keys()). A program that binds the keys it reads to
 * typed fields once checks its table with this when it starts.
 *
 * Returns: TRUE for a key.
 */
EXTBODY_API gboolean eb_config_has_key (const char *key);

/**
 * eb_seal_key_check:
 * @config: a configuration
 * @error: return location for a #GError
 *
 * Read now the site's secret named by trace_key_file, which seals the
 * X-Extbody records of this site's passes (extbody.conf(5)), and keep it with
 * @config. Without this call it is read when a message first needs it, and a
 * program that cannot read it (another user's) seals and trusts nothing, as
 * without the key; a daemon calls this when it loads its configuration, so
 * that a key it cannot use is refused at once instead.
 *
 * Returns: TRUE when trace_key_file is empty or holds a usable key (a
 *   regular file of 32 to 4096 bytes, neither readable nor writable by other
 *   users); FALSE with @error (a #GFileError when it cannot be opened, else
 *   %EB_ERROR_CONFIG) naming the file and what to do.
 */
EXTBODY_API gboolean eb_seal_key_check (const EbConfig *config, GError **error);

/* ---- a program's own keys ---------------------------------------------------- */

/**
 * EbConfigKeyType:
 * @EB_CONFIG_KEY_NUMBER: a whole number from @min to @max
 * @EB_CONFIG_KEY_SIZE: a size in bytes, with an optional k, M or G suffix
 *   (powers of 1024), from @min to @max
 * @EB_CONFIG_KEY_BOOLEAN: on or off (also yes, no, true, false, 1, 0)
 * @EB_CONFIG_KEY_STRING: text, as its @check and @choices allow
 * @EB_CONFIG_KEY_NETWORKS: a list of CIDR blocks, as allow_networks is written;
 *   read with eb_config_networks_contain()
 *
 * The type of a key a program adds with eb_config_register_keys().
 */
typedef enum {
  EB_CONFIG_KEY_NUMBER,
  EB_CONFIG_KEY_SIZE,
  EB_CONFIG_KEY_BOOLEAN,
  EB_CONFIG_KEY_STRING,
  EB_CONFIG_KEY_NETWORKS,
} EbConfigKeyType;

/**
 * EbConfigCheckFunc:
 * @value: the value, white space stripped
 * @error: where the reason goes when @value is refused
 *
 * Checks the value of a text key as the program that reads it will read it
 * (a socket's syntax, an absolute path, ...).
 *
 * Returns: TRUE when @value is valid.
 */
typedef gboolean (*EbConfigCheckFunc) (const char *value, GError **error);

/**
 * EbConfigKeyInfo:
 * @name: the key, in lowercase letters and underscores
 * @type: its type
 * @default_value: the default, as written in a configuration file ("" for
 *   none); it must pass the key's own checks
 * @min: the smallest value of a number or size key
 * @max: the largest value of a number or size key
 * @choices: (nullable): a text key's only values, "a|b"; NULL for any
 * @check: (nullable): checks a text key's value; NULL for any text
 * @what: (nullable): what a checked text key's value is ("socket"), for
 *   --help and error messages
 * @doc: one paragraph, as extbody.conf(5) and the example file print it
 *
 * One key of a program's own, such as the sockets of extbodyd.
 */
typedef struct {
  const char *name;
  EbConfigKeyType type;
  const char *default_value;
  guint64 min;
  guint64 max;
  const char *choices;
  EbConfigCheckFunc check;
  const char *what;
  const char *doc;
} EbConfigKeyInfo;

/**
 * eb_config_register_keys:
 * @program: the program the keys belong to, such as "extbodyd"
 * @keys: (array length=n_keys): the keys; the table and its strings must stay
 *   valid as long as the process runs (a static table)
 * @n_keys: how many
 * @error: return location for a #GError, or %NULL
 *
 * Adds a program's own keys to those of the library, as OpenDKIM's and
 * Postfix's daemons each own their parameters: keys that only that program
 * reads (extbodyd's sockets, for one) are defined by it, not by libextbody.
 * Once added, the keys are read, checked and written like the library's
 * own (eb_config_load_file(), eb_config_set(), eb_config_dump() after the
 * library's keys, the getters), in every configuration made afterwards. A
 * configuration file that sets a key no program in this process has added is
 * refused ("unknown key"): a program that reads the file it shares with
 * extbodyd, as the command `extbody config` does, adds extbodyd's keys too.
 *
 * Call it at start, before any other thread uses the library. Adding the same
 * program's keys again does nothing; a name the library or another program
 * already has is an error, as is a default that fails its key's checks.
 *
 * Returns: TRUE on success.
 */
EXTBODY_API gboolean eb_config_register_keys (const char *program, const EbConfigKeyInfo *keys,
                                              guint n_keys, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbConfig, eb_config_free)

G_END_DECLS
