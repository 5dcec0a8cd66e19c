/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-config.h - every limit and switch of extbody, as named configuration keys.
 *
 * One table (eb-config.c) lists each key with its type, default, bounds and a
 * one-line description; it drives loading, checking, `extbody config` and the
 * example configuration, and a test keeps data/extbody.conf.example and the man
 * page in step with it. Files are GLib key files; keys live in the [extbody]
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
  char    *metrics_file;       /* Prometheus text file (the milter's); empty: none */
  char    *mailbox_metrics_file; /* the mailbox runs' file, added up; empty: none */
  guint    metrics_interval;   /* seconds, the milter's writes */
  /* the milter */
  char    *milter_socket;      /* libmilter socket spec */
  char    *milter_umask;       /* octal mask for the unix socket's mode */
  char    *client_umask;       /* the same, for http_socket and dovecot_filter_socket */
  char    *on_error;           /* accept | tempfail */
  gboolean strip_trace_fields; /* remove incoming X-Extbody, X-Extbody-Resolved */
  guint64  milter_spill_size;  /* message bytes kept in memory before spilling to a file */
  guint    milter_stop_timeout;  /* seconds messages in flight get to finish at SIGTERM */
  char    *http_socket;        /* the milter's HTTP listener: unix:PATH, inet:PORT@127.0.0.1,
                                  inet6:PORT@[::1]; empty: none (default unix:/run/extbody/http.sock) */
  char    *http_allow_networks; /* CIDR blocks that may connect besides loopback */
  guint    http_max_connections; /* HTTP requests worked on at once; past it 503 */
  guint    http_timeout;       /* seconds an HTTP client may be idle or slow */
  char    *dovecot_filter_socket; /* the milter's listener for Dovecot's program-client
                                     protocol: an absolute unix socket path; empty: none */
  guint    dovecot_max_connections; /* Dovecot connections served at once */
  guint    dovecot_timeout;    /* seconds a Dovecot client may be idle */
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
  char    *milter_mode;        /* resolve | externalize */
  /* the list keys parsed (eb-list.h), kept in step with their text above by
   * every set; read with eb_config_get_strv, _get_networks, _get_ports */
  GHashTable *lists;           /* key name -> GStrv, of each list key */
  GPtrArray  *allow_networks_v;  /* EbCidr * */
  GPtrArray  *http_allow_networks_v;  /* EbCidr * */
  GPtrArray  *deny_networks_v;   /* EbCidr * */
  GArray     *allow_ports_v;     /* guint16 */
  GStrv       allow_domains_v;   /* domain patterns (eb_list_domains) */
  GStrv       deny_domains_v;
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
} EbConfigKey;

/* eb_config_new, _copy, _free, _load_file, _set, _apply_option,
 * _add_networks, _dump and the typed getters are public (extbody.h). */

/* The key table. */
guint eb_config_get_n_keys (void);
const EbConfigKey *eb_config_get_key (guint i);

/* The items of list key @key (allow_schemes, allow_domains, deny_domains,
 * local_file_dirs, externalize_types, ...; any key with a list check), parsed
 * once when it was set; an empty list for an empty value, NULL for a key that
 * is not a list. Owned by @config, valid until the key is set again. */
const char *const *eb_config_get_strv (const EbConfig *config, const char *key);

/* allow_networks, deny_networks or http_allow_networks parsed: EbCidr *
 * elements (eb-policy.h); NULL for another key. Owned by @config. */
const GPtrArray *eb_config_get_networks (const EbConfig *config, const char *key);

/* allow_domains or deny_domains as domain patterns (eb_list_domains:
 * lowercased, no leading or trailing dot); NULL for another key. Owned by
 * @config. */
const char *const *eb_config_get_domains (const EbConfig *config, const char *key);

/* allow_ports parsed: guint16 elements. Owned by @config. */
const GArray *eb_config_get_ports (const EbConfig *config);

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
