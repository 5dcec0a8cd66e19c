/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-config.h - every limit and switch of extbody, as named configuration keys.
 *
 * One table (eb-config.c) lists each key of the library with its type,
 * default, bounds and a one-line description; a program adds the keys only it
 * reads (extbodyd's sockets, filters/daemon/daemon-keys.c) with
 * eb_config_register_keys, after the library's. Together they drive loading,
 * checking, `extbody config` and the example configuration, and a test keeps
 * data/extbody.conf.example and the man page in step with them. Files are GLib key files; keys live in the [extbody]
 * group. Sizes accept a k, M or G suffix (powers of 1024). Unknown keys are
 * errors, so a typo never silently leaves a default in force; so is a key set
 * twice in a file, so a later line never silently undoes an earlier one (-o,
 * applied after the file, overrides it on purpose).
 */
#pragma once
#include <extbody/extbody.h>

G_BEGIN_DECLS

#define EB_CONFIG_GROUP "extbody"

/* EbConfig is opaque outside the library (extbody.h). */
struct _EbConfig {
  guint64 max_message_size;    /* bytes; a larger message passes unchanged */
  guint   max_nesting_depth;   /* multipart / message levels walked */
  guint   max_parts;           /* MIME entities walked per message */
  guint   max_references;      /* external-body parts acted on per message */
  guint64 max_part_bytes;      /* decoded bytes of one resolved part */
  guint64 max_message_bytes;   /* decoded bytes resolved per message */
  /* fetching */
  gboolean fetch;              /* off: data: URLs only */
  char    *allow_schemes;      /* "http, https, ftp" */
  guint    max_redirects;
  char    *allow_networks;     /* CIDR list */
  char    *deny_networks;      /* CIDR list */
  char    *allow_ports;        /* port list */
  char    *allow_domains;      /* domain list (and subdomains); empty: any */
  char    *deny_domains;       /* domain list (and subdomains) */
  guint    max_requests_per_host;  /* per minute, per destination host */
  guint    connect_timeout;    /* seconds */
  guint    fetch_timeout;      /* seconds, one fetch */
  guint    message_deadline;   /* seconds, all fetches of one message */
  guint64  low_speed_limit;    /* bytes per second ... */
  guint    low_speed_time;     /* ... below which for this many seconds aborts */
  guint64  max_header_bytes;   /* response header bytes per fetch */
  guint    max_concurrent_fetches;
  guint    cache_ttl;          /* seconds */
  guint    cache_entries;
  char    *nntp_server;        /* news: URLs' server: host[:port]; empty: none */
  guint64  nntp_max_line_bytes; /* one line of an article */
  /* a pool's shared cache, coalescing and rate limits (eb-redis.h) */
  char    *redis_server;       /* host:port, [v6]:port or unix:/path; empty: none */
  guint    redis_timeout;      /* milliseconds, connect and each command */
  char    *redis_prefix;       /* prepended to every key */
  char    *redis_password;     /* AUTH; empty: none */
  guint64  redis_max_body;     /* bodies larger stay in the local cache only */
  char    *proxy;              /* empty: no proxy, whatever the environment says */
  char    *ca_file;            /* empty: the system's CAs */
  char    *content_type_mismatch;  /* keep | accept */
  gboolean allow_credentials;  /* user:password@ in URLs */
  char    *local_file_dirs;    /* directories access-type=local-file may read; empty: none */
  guint    lock_timeout;       /* seconds to wait for a locked mbox */
  /* externalize: which parts, and the reference written (eb-externalize.h) */
  guint64  externalize_min_size;   /* decoded bytes from which a part is taken out */
  char    *externalize_types;      /* media-type patterns (type/subtype, type/any, any/any) */
  guint    externalize_retention;  /* days until the expiration parameter; 0: none */
  gboolean externalize_fallback;   /* the reference inside multipart/alternative with a text part */
  /* statistics */
  char    *mailbox_metrics_file; /* the mailbox runs' file, added up; empty: none */
  /* what a message arrives with */
  gboolean strip_trace_fields; /* remove incoming X-Extbody, X-Extbody-Resolved */
  char    *trace_key_file;     /* the site's secret that seals its records (eb-seal.h); empty: none */
  /* externalize: where stored parts go (eb-store.h) */
  char    *externalize_store;          /* absolute directory or WebDAV http(s) URL; empty: none */
  char    *externalize_base_url;       /* URL the objects are served under */
  char    *externalize_key;            /* names objects by HMAC-SHA256; empty: SHA-256;
                                          configuration file only; never printed */
  char    *externalize_store_user;     /* WebDAV basic auth; configuration file only */
  char    *externalize_store_password; /* configuration file only; never printed */
  guint    externalize_store_timeout;  /* seconds, one store request */
  char    *externalize_store_auth;     /* basic | aws-sigv4 (S3, path style) */
  char    *externalize_store_region;   /* SigV4 region, e.g. us-east-1 */
  /* the list keys parsed (eb-list.h), kept in step with their text above by
   * every set; read with eb_config_get_strv, _get_networks, _get_ports */
  GHashTable *lists;           /* key name -> GStrv, of each list key */
  GHashTable *networks;          /* key name -> GPtrArray of EbCidr *, of each CIDR list key */
  GArray     *allow_ports_v;     /* guint16 */
  GStrv       allow_domains_v;   /* domain patterns (eb_list_domains) */
  GStrv       deny_domains_v;
  /* the keys programs added (eb_config_register_keys): key name -> its value
   * as text, normalized ("on", a number in decimal) */
  GHashTable *program_values;
  /* the key of trace_key_file once read (eb-seal.c fills them, under its
   * lock; a copy, a load and a new trace_key_file start unread) */
  GBytes     *trace_key;       /* NULL: none, or unusable */
  gboolean    trace_key_read;
};

typedef enum { EB_CONFIG_UINT, EB_CONFIG_SIZE, EB_CONFIG_BOOL, EB_CONFIG_STRING } EbConfigType;

typedef struct {
  const char  *name;
  EbConfigType type;
  const char  *default_value;  /* as written in the example file */
  guint64      min, max;        /* numbers; for a STRING with choices, unused */
  gsize        offset;         /* into EbConfig */
  const char  *doc;            /* one sentence */
  const char  *choices;        /* STRING: "a|b" when only these are valid, else NULL */
  /* STRING: checks the value as the code that uses it will read it (a CIDR
   * list, a port list, ...); NULL when any text goes */
  gboolean   (*check) (const char *value, GError **error);
  const char  *what;           /* STRING with a check: what the value is, for --help and errors */
  const char  *program;        /* NULL: the library's; else the program that added it, whose
                                  value is in program_values (offset unused) */
} EbConfigKey;

/* eb_config_new, _copy, _free, _load_file, _set, _apply_option,
 * _add_networks, _dump and the typed getters are public (extbody.h). */

/* The keys: the library's table, then those programs added. */
guint eb_config_get_n_keys (void);
const EbConfigKey *eb_config_get_key (guint i);

/* The items of list key @key (allow_schemes, allow_domains, deny_domains,
 * local_file_dirs, externalize_types, ...; any key with a list check), parsed
 * once when it was set; an empty list for an empty value, NULL for a key that
 * is not a list. Owned by @config, valid until the key is set again. */
const char *const *eb_config_get_strv (const EbConfig *config, const char *key);

/* allow_networks, deny_networks or a program's CIDR list key parsed: EbCidr *
 * elements (eb-policy.h); NULL for another key. Owned by @config. */
const GPtrArray *eb_config_get_networks (const EbConfig *config, const char *key);

/* allow_domains or deny_domains as domain patterns (eb_list_domains:
 * lowercased, no leading or trailing dot); NULL for another key. Owned by
 * @config. */
const char *const *eb_config_get_domains (const EbConfig *config, const char *key);

/* allow_ports parsed: guint16 elements. Owned by @config. */
const GArray *eb_config_get_ports (const EbConfig *config);

/* The list keys the library reads, each through its own accessor (the
 * parsed items, as eb_config_get_strv, eb_config_get_networks and
 * eb_config_get_domains give them): outside this module no list is looked
 * up by its name, and a misspelt one does not compile. */
const char *const *eb_config_get_allow_schemes (const EbConfig *config);
const char *const *eb_config_get_local_file_dirs (const EbConfig *config);
const char *const *eb_config_get_externalize_types (const EbConfig *config);
const GPtrArray *eb_config_get_allow_networks (const EbConfig *config);
const GPtrArray *eb_config_get_deny_networks (const EbConfig *config);
const char *const *eb_config_get_allow_domains (const EbConfig *config);
const char *const *eb_config_get_deny_domains (const EbConfig *config);

/* TRUE for a key -o (eb_config_apply_option) refuses: credentials and
 * externalize_key are read from the configuration file only, never from a
 * command line. */
gboolean eb_config_key_is_file_only (const char *name);

/* TRUE for a key whose value eb_config_dump does not print (a password,
 * externalize_key). */
gboolean eb_config_key_is_secret (const char *name);

/* The shortest externalize_key taken, in bytes: as long as the digest
 * (RFC 2104 section 3 discourages shorter keys). */
#define EB_EXTERNALIZE_KEY_MIN 32

/* Parse a size such as "64M". */
gboolean eb_config_parse_size (const char *text, guint64 *out);

G_END_DECLS
