/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody.h - the public API of libextbody.
 *
 * Everything a program linking libextbody may use is declared here (and in the
 * headers this one includes); every other symbol of the library is hidden.
 * Types are opaque, read through accessors.
 */
#pragma once
#include <gio/gio.h>
#include <extbody/extbody-version.h>

/**
 * EXTBODY_API:
 *
 * Marks a declaration of this header as exported by libextbody; every other
 * symbol of the library is hidden.
 */
#if defined(EXTBODY_COMPILATION) && defined(__GNUC__)
#  define EXTBODY_API __attribute__ ((visibility ("default")))
#else
#  define EXTBODY_API
#endif

G_BEGIN_DECLS

/**
 * SECTION:extbody
 * @title: libextbody
 * @short_description: resolve message/external-body references in mail
 * @include: extbody/extbody.h
 *
 * libextbody finds every message/external-body part of a message (RFC 2046
 * section 5.2.3), reassembles its URL (RFC 2017), resolves it (data: URLs in
 * process, http, https and ftp through libcurl under a strict policy when
 * fetching is on) and writes the message with each resolved reference replaced
 * by an ordinary part. The message is never re-serialized: every byte outside a
 * replaced part is copied from the input, and a message in which nothing is
 * resolved comes out byte for byte as it came in.
 *
 * A program calls eb_init() once before any thread starts, makes an #EbConfig
 * (eb_config_new(), optionally eb_config_load_file()), and passes each message
 * to eb_rewrite() or to eb_rewrite_plan() and one of the writers. An #EbFetcher
 * is needed only to fetch; without one only data: URLs are resolved.
 *
 * Compile with `pkg-config --cflags --libs extbody-1`.
 */

/* ---- version and library init ------------------------------------------- */

/**
 * eb_get_major_version:
 *
 * The major version of the libextbody the program runs with (compare
 * %EXTBODY_MAJOR_VERSION, the one it was compiled against).
 *
 * Returns: the major version.
 */
EXTBODY_API guint eb_get_major_version (void);

/**
 * eb_get_minor_version:
 *
 * The minor version of the libextbody the program runs with.
 *
 * Returns: the minor version.
 */
EXTBODY_API guint eb_get_minor_version (void);

/**
 * eb_get_micro_version:
 *
 * The micro version of the libextbody the program runs with.
 *
 * Returns: the micro version.
 */
EXTBODY_API guint eb_get_micro_version (void);

/**
 * eb_get_version_string:
 *
 * The version of the libextbody the program runs with, such as "0.1.0".
 *
 * Returns: (transfer none): the version.
 */
EXTBODY_API const char *eb_get_version_string (void);

/**
 * eb_get_library_versions:
 *
 * The versions of the libraries libextbody runs with, for a program's
 * --version: "GMime 3.2.13, GLib 2.74.6, " then libcurl's own version text,
 * its TLS and other libraries included ("libcurl/7.88.1 OpenSSL/3.0.11 ...").
 * It may be called before eb_init().
 *
 * Returns: (transfer full): the text.
 */
EXTBODY_API char *eb_get_library_versions (void);

/**
 * eb_init:
 *
 * Initialize the libraries libextbody uses (GMime, libcurl). Call it once,
 * before any thread starts and before any other function of libextbody that
 * parses or fetches; calling it again does nothing.
 */
EXTBODY_API void eb_init (void);

/**
 * eb_shutdown:
 *
 * Release what eb_init() set up, when no thread uses libextbody any more and
 * every object it gave is freed. Optional; it lets leak checkers see a clean
 * exit.
 */
EXTBODY_API void eb_shutdown (void);

/* ---- errors ----------------------------------------------------------------- */

/**
 * EB_ERROR:
 *
 * The error domain of libextbody: failures a caller acts on. A reference that
 * is left alone is not an error (see #EbReason).
 */
#define EB_ERROR (eb_error_quark ())

/**
 * eb_error_quark:
 *
 * The quark of %EB_ERROR.
 *
 * Returns: the error domain.
 */
EXTBODY_API GQuark eb_error_quark (void);

/**
 * EbError:
 * @EB_ERROR_FAILED: anything else
 * @EB_ERROR_SYNTAX: input does not follow the grammar (for a "KEY=VALUE"
 *   option: the '=' is missing)
 * @EB_ERROR_AMBIGUOUS: more than one reading; extbody never guesses
 * @EB_ERROR_MISSING: a required element is absent
 * @EB_ERROR_EMPTY: a value is present but empty
 * @EB_ERROR_ENCODED_WORD: an RFC 2047 encoded-word where none may be
 * @EB_ERROR_DATA_URL: the WHATWG data: URL processor returned failure
 * @EB_ERROR_LIMIT: a configured limit was reached
 * @EB_ERROR_IO: reading or writing failed
 * @EB_ERROR_CONFIG: the configuration is invalid (the message names the key)
 *
 * The codes of %EB_ERROR.
 */
typedef enum {
  EB_ERROR_FAILED,
  EB_ERROR_SYNTAX,
  EB_ERROR_AMBIGUOUS,
  EB_ERROR_MISSING,
  EB_ERROR_EMPTY,
  EB_ERROR_ENCODED_WORD,
  EB_ERROR_DATA_URL,
  EB_ERROR_LIMIT,
  EB_ERROR_IO,
  EB_ERROR_CONFIG,
} EbError;

/* ---- reasons ---------------------------------------------------------------- */

/**
 * EbReason:
 * @EB_REASON_RESOLVED: replaced by an ordinary part
 * @EB_REASON_ACCESS_TYPE: access-type other than URL: never acted on here
 * @EB_REASON_NO_ACCESS_TYPE: the access-type parameter is missing
 * @EB_REASON_BAD_ACCESS_TYPE: access-type present but ambiguous or malformed
 * @EB_REASON_URL_MISSING: access-type=URL without a URL parameter
 * @EB_REASON_URL_INVALID: the URL parameter cannot be reassembled unambiguously
 * @EB_REASON_SCHEME_DISABLED: the URL's scheme is not enabled
 * @EB_REASON_DATA_URL_INVALID: the data: URL processor returned failure
 * @EB_REASON_TYPE_MISMATCH: the data's content type disagrees with the inner header
 * @EB_REASON_BAD_INNER_HEADER: the inner (phantom) header cannot be used
 * @EB_REASON_CTE_UNKNOWN: the inner Content-Transfer-Encoding is unknown
 * @EB_REASON_CTE_INVALID: the data does not decode under the inner encoding
 * @EB_REASON_PART_TOO_LARGE: decoded data above max_part_bytes
 * @EB_REASON_MESSAGE_BUDGET: decoded data of the message above max_message_bytes
 * @EB_REASON_TOO_DEEP: nested deeper than max_nesting_depth
 * @EB_REASON_TOO_MANY_REFS: more references than max_references
 * @EB_REASON_TOO_MANY_PARTS: the message has more parts than max_parts
 * @EB_REASON_MESSAGE_TOO_LARGE: the message is above max_message_size
 * @EB_REASON_UNLOCATABLE: the part's bytes could not be located exactly
 * @EB_REASON_DUPLICATE_FIELD: the entity has two Content-Type fields
 * @EB_REASON_COMPOSITE_UNSAFE: multipart or message data that cannot go out as 7bit safely
 * @EB_REASON_UNPARSEABLE: GMime could not parse the message
 * @EB_REASON_REFUSED_ADDRESS: the fetch policy refused the address connected to
 * @EB_REASON_REFUSED_DOMAIN: allow_domains / deny_domains refused the host
 * @EB_REASON_CREDENTIALS: the URL carries a user name or password
 * @EB_REASON_RATE_LIMITED: max_requests_per_host reached for the host
 * @EB_REASON_TIMED_OUT: a fetch or the message deadline ran out
 * @EB_REASON_HTTP_STATUS: the server answered with a status other than 2xx
 * @EB_REASON_TOO_MANY_REDIRECTS: more redirects than max_redirects
 * @EB_REASON_FETCH_FAILED: the fetch failed otherwise (DNS, connection, TLS, ...)
 * @EB_REASON_EXPIRED: the expiration parameter is in the past
 * @EB_REASON_CHECKSUM: the data does not match the inner Content-MD5
 * @EB_REASON_SIZE_PARAM: the size parameter announces more than max_part_bytes
 * @EB_REASON_INSECURE_REDIRECT: a redirect from https to a scheme without TLS
 * @EB_REASON_WOULD_FETCH: planned with %EB_REWRITE_NO_FETCH: it would be fetched
 * @EB_REASON_REFUSED_PATH: local-file outside local_file_dirs, or not a regular file
 * @EB_REASON_FETCH_OFF: a reference that would be fetched, with fetch = off
 * @EB_REASON_LOCAL_FILE_DIRS: access-type=local-file, with local_file_dirs empty
 * @EB_REASON_PARAM_MISSING: a parameter the access-type needs is missing (site, name)
 * @EB_REASON_SIGNED: inside a signed or encrypted entity: resolving would break it
 * @EB_REASON_OUTER_CTE: the external-body entity has a transfer encoding RFC 2046 forbids
 * @EB_REASON_NESTED_REF: the phantom header's type is message/external-body again
 * @EB_REASON_STORE_FAILED: externalize: the store could not take the part (the
 *   detail is the store's one-line error); the part stays as it was
 * @EB_REASON_WOULD_EXTERNALIZE: externalize with %EB_EXTERNALIZE_NO_STORE: the
 *   part would be stored and replaced by a reference
 * @EB_REASON_N: the number of reasons (not a reason)
 *
 * Why a reference was resolved or left alone, or why a whole message was left
 * alone. A part left alone is data, not an error. Each reason has a stable
 * token (eb_reason_token()) and a text for people (eb_reason_text()).
 */
typedef enum {
  EB_REASON_RESOLVED = 0,
  EB_REASON_ACCESS_TYPE,
  EB_REASON_NO_ACCESS_TYPE,
  EB_REASON_BAD_ACCESS_TYPE,
  EB_REASON_URL_MISSING,
  EB_REASON_URL_INVALID,
  EB_REASON_SCHEME_DISABLED,
  EB_REASON_DATA_URL_INVALID,
  EB_REASON_TYPE_MISMATCH,
  EB_REASON_BAD_INNER_HEADER,
  EB_REASON_CTE_UNKNOWN,
  EB_REASON_CTE_INVALID,
  EB_REASON_PART_TOO_LARGE,
  EB_REASON_MESSAGE_BUDGET,
  EB_REASON_TOO_DEEP,
  EB_REASON_TOO_MANY_REFS,
  EB_REASON_TOO_MANY_PARTS,
  EB_REASON_MESSAGE_TOO_LARGE,
  EB_REASON_UNLOCATABLE,
  EB_REASON_DUPLICATE_FIELD,
  EB_REASON_COMPOSITE_UNSAFE,
  EB_REASON_UNPARSEABLE,
  EB_REASON_REFUSED_ADDRESS,
  EB_REASON_REFUSED_DOMAIN,
  EB_REASON_CREDENTIALS,
  EB_REASON_RATE_LIMITED,
  EB_REASON_TIMED_OUT,
  EB_REASON_HTTP_STATUS,
  EB_REASON_TOO_MANY_REDIRECTS,
  EB_REASON_FETCH_FAILED,
  EB_REASON_EXPIRED,
  EB_REASON_CHECKSUM,
  EB_REASON_SIZE_PARAM,
  EB_REASON_INSECURE_REDIRECT,
  EB_REASON_WOULD_FETCH,
  EB_REASON_REFUSED_PATH,
  EB_REASON_FETCH_OFF,
  EB_REASON_LOCAL_FILE_DIRS,
  EB_REASON_PARAM_MISSING,
  EB_REASON_SIGNED,
  EB_REASON_OUTER_CTE,
  EB_REASON_NESTED_REF,
  EB_REASON_STORE_FAILED,
  EB_REASON_WOULD_EXTERNALIZE,
  EB_REASON_N
} EbReason;

/**
 * eb_reason_token:
 * @reason: a reason
 *
 * The stable token of @reason, such as "scheme-disabled": what `--json` and
 * the logs print. Documented in extbody(1).
 *
 * Returns: (transfer none): the token.
 */
EXTBODY_API const char *eb_reason_token (EbReason reason);

/**
 * eb_reason_text:
 * @reason: a reason
 *
 * One line for people, such as "scheme not enabled".
 *
 * Returns: (transfer none): the text.
 */
EXTBODY_API const char *eb_reason_text (EbReason reason);

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
 * @key: the name of a text key, such as "on_error"
 *
 * The value of a text key (a list key gives its text). Naming an unknown key or
 * one of another type is a programmer error (a critical warning, and NULL).
 *
 * Returns: (transfer none) (nullable): the value, valid until the key is set
 *   again or @config is freed.
 */
EXTBODY_API const char *eb_config_get_string (const EbConfig *config, const char *key);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbConfig, eb_config_free)

/* ---- fetcher ---------------------------------------------------------------- */

/**
 * EbFetcher:
 *
 * Fetches http, https and ftp URLs through libcurl under the fetch policy of
 * the configuration it was made with, with a cache and per-host rate limits
 * shared by every message it handles. One fetcher may be shared by threads.
 */
typedef struct _EbFetcher EbFetcher;

/**
 * eb_fetcher_new:
 * @config: the configuration (copied)
 * @error: return location for a #GError
 *
 * A fetcher for the fetch keys of @config. eb_init() must have been called.
 *
 * Returns: (transfer full) (nullable): the fetcher, or NULL with
 *   %EB_ERROR_CONFIG when a fetch key is invalid (a bad CIDR, port or scheme
 *   list).
 */
EXTBODY_API EbFetcher *eb_fetcher_new (const EbConfig *config, GError **error);

/**
 * eb_fetcher_free:
 * @fetcher: (nullable) (transfer full): a fetcher
 *
 * Free @fetcher, when no thread uses it any more.
 */
EXTBODY_API void eb_fetcher_free (EbFetcher *fetcher);

/**
 * EbFetchProgressFunc:
 * @data: the data given to eb_fetch_set_thread_progress()
 *
 * Called about once a second while fetches of the thread that set it run (the
 * milter calls smfi_progress() from it, so the MTA's timeout restarts).
 */
typedef void (*EbFetchProgressFunc) (gpointer data);

/**
 * eb_fetch_set_thread_progress:
 * @func: (nullable): the function, or NULL to clear it
 * @data: (closure func): passed to @func
 *
 * Set the progress function of the calling thread's fetches.
 */
EXTBODY_API void eb_fetch_set_thread_progress (EbFetchProgressFunc func, gpointer data);

/**
 * eb_fetch_set_thread_cancel:
 * @flag: (nullable): a flag, read atomically; NULL to clear
 *
 * A flag that cancels the calling thread's fetches once it is set (non-zero):
 * each stops within about a second as timed-out, "cancelled", and is not
 * cached. @flag must stay valid until it is cleared.
 */
EXTBODY_API void eb_fetch_set_thread_cancel (const gint *flag);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbFetcher, eb_fetcher_free)

/* ---- store (externalize) ----------------------------------------------------- */

/**
 * EbStore:
 *
 * Where `extbody externalize` puts the parts it takes out of messages: a
 * directory served by a web server under externalize_base_url, or a WebDAV
 * collection written with HTTP PUT (externalize_store). Objects are named by
 * the SHA-256 of their bytes, or with externalize_key by their HMAC-SHA256
 * keyed with it. A store may be shared by threads.
 */
typedef struct _EbStore EbStore;

/**
 * eb_store_new:
 * @config: the configuration (externalize_store, externalize_base_url,
 *   externalize_key, externalize_store_user, externalize_store_password,
 *   externalize_store_timeout, ca_file; read, not kept)
 * @error: return location for a #GError
 *
 * The store @config names. A directory must exist and externalize_base_url
 * must be set for it; a WebDAV store's objects are served under its own URL
 * unless externalize_base_url says otherwise. eb_init() must have been called.
 *
 * Returns: (transfer full) (nullable): the store, or NULL with
 *   %EB_ERROR_CONFIG when externalize_store is unset or unusable, or
 *   externalize_key is shorter than 32 bytes.
 */
EXTBODY_API EbStore *eb_store_new (const EbConfig *config, GError **error);

/**
 * eb_store_free:
 * @store: (nullable) (transfer full): a store
 *
 * Free @store, when no thread uses it any more.
 */
EXTBODY_API void eb_store_free (EbStore *store);

/**
 * eb_store_put:
 * @store: a store
 * @data: the bytes to store (the decoded part)
 * @sha256_hex: (nullable): the lowercase hex SHA-256 of @data, or NULL to
 *   have it computed; it is checked against @data either way
 * @error: return location for a #GError
 *
 * Store @data under its name (its SHA-256, or with externalize_key its
 * HMAC-SHA256), unless the store already holds exactly those bytes; read the
 * object back and check its size and name before answering. Thread-safe.
 *
 * Returns: (transfer full) (nullable): the URL a resolver fetches the object
 *   by (externalize_base_url, "/", the hex name), or NULL with %EB_ERROR_IO
 *   and a one-line message naming the store and the cause (an HTTP status, a
 *   libcurl error, an errno text, "read back 123 bytes, expected 456"); then
 *   no message may refer to the object.
 */
EXTBODY_API char *eb_store_put (EbStore *store, GBytes *data, const char *sha256_hex,
                                GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbStore, eb_store_free)

/* ---- rewrite ---------------------------------------------------------------- */

/**
 * EB_FILTER_FIELD:
 *
 * The name of the header field a mail filter adds to a message it rewrote.
 */
#define EB_FILTER_FIELD "X-Extbody"

/**
 * EB_TRACE_FIELD:
 *
 * The name of the header field added to every resolved part.
 */
#define EB_TRACE_FIELD "X-Extbody-Resolved"

/**
 * EB_FALLBACK_FIELD:
 *
 * The name of the header field `externalize --fallback` gives the
 * multipart/alternative it writes: "notice-sha256=" and the SHA-256 of its
 * text part (eb_digest_notice_hex()). With its boundary ("=_extbody_" and 24
 * hex digits) it is the mark by which a resolver knows that alternative as
 * extbody's own, and replaces it whole with the restored part; any other
 * multipart/alternative keeps its parts, and only a reference in it is
 * replaced.
 */
#define EB_FALLBACK_FIELD "X-Extbody-Fallback"

/**
 * EB_FALLBACK_NOTICE_MAX:
 *
 * The most bytes the text part of a fallback alternative may hold, header
 * included, for it to be taken as extbody's notice (the notice is a few
 * hundred bytes; a larger text part is somebody's words and is kept).
 */
#define EB_FALLBACK_NOTICE_MAX (64 * 1024)

/**
 * EbRewriteFlags:
 * @EB_REWRITE_DEFAULT: none
 * @EB_REWRITE_NO_PRECHECK: parse the message even when the cheap pre-check
 *   ("external-body" appears nowhere) says there is nothing to do
 * @EB_REWRITE_NO_FETCH: fetch nothing; what would be fetched is left with
 *   %EB_REASON_WOULD_FETCH
 * @EB_REWRITE_STRIP_TRACE: a mail filter's pass: remove the %EB_FILTER_FIELD
 *   and %EB_TRACE_FIELD fields of the message header (a sender can forge them)
 * @EB_REWRITE_FILTER_FIELD: a mail filter's pass: when something was resolved,
 *   the written message gets the %EB_FILTER_FIELD field the milter adds, at the
 *   end of its header (eb_rewrite_filter_field_value())
 *
 * How eb_rewrite_plan() and eb_rewrite() work.
 */
typedef enum {
  EB_REWRITE_DEFAULT      = 0,
  EB_REWRITE_NO_PRECHECK  = 1 << 0,
  EB_REWRITE_NO_FETCH     = 1 << 1,
  EB_REWRITE_STRIP_TRACE  = 1 << 2,
  EB_REWRITE_FILTER_FIELD = 1 << 3,
} EbRewriteFlags;

/**
 * EbActionKind:
 * @EB_ACTION_LEAVE: left alone (the reason says why)
 * @EB_ACTION_DATA: a data: URL: the data is in the reference
 * @EB_ACTION_FETCH: an http, https or ftp URL to fetch (anon-ftp made into one)
 * @EB_ACTION_LOCAL_FILE: a local file to read, inside local_file_dirs
 *
 * What was decided for a reference, from the reference and the configuration
 * alone, before any fetch.
 */
typedef enum {
  EB_ACTION_LEAVE,
  EB_ACTION_DATA,
  EB_ACTION_FETCH,
  EB_ACTION_LOCAL_FILE,
} EbActionKind;

/**
 * EbRewriteResult:
 *
 * What became of one message: the message's own outcome, and for each
 * message/external-body reference (in document order, numbered from 0) where
 * it is, what it says and what became of it. Opaque.
 */
typedef struct _EbRewriteResult EbRewriteResult;

/**
 * eb_rewrite_plan:
 * @buf: (array length=len): the message
 * @len: its length in bytes
 * @config: the configuration
 * @fetcher: (nullable): fetches http, https and ftp references, all of the
 *   message's at once; without one only data: URLs are resolved
 * @flags: flags
 *
 * Decide about every reference of the message in @buf without writing
 * anything. A leading mbox From_ line is kept as it is and not parsed. @buf
 * must stay unchanged while the result is used.
 *
 * Returns: (transfer full): the plan, never NULL.
 */
EXTBODY_API EbRewriteResult *eb_rewrite_plan (const char *buf, gsize len, const EbConfig *config,
                                              EbFetcher *fetcher, EbRewriteFlags flags);

/**
 * eb_rewrite_write:
 * @result: a plan from eb_rewrite_plan() on @buf
 * @buf: (array length=len): the message planned
 * @len: its length in bytes
 * @out: where the message goes
 * @error: return location for a #GError
 *
 * Write the message planned in @result to @out: every byte outside a replaced
 * part copied from @buf; unchanged when nothing was resolved.
 *
 * Returns: FALSE with a #GIOErrorEnum error when writing fails.
 */
EXTBODY_API gboolean eb_rewrite_write (const EbRewriteResult *result, const char *buf, gsize len,
                                       GOutputStream *out, GError **error);

/**
 * eb_rewrite_write_mboxrd:
 * @result: a plan from eb_rewrite_plan() on @buf
 * @buf: (array length=len): the message planned, a message of an mbox
 * @len: its length in bytes
 * @out: where the message goes
 * @error: return location for a #GError
 *
 * eb_rewrite_write() for a message of an mbox: the same bytes, except that a
 * new body written unencoded is mboxrd-quoted (">From" one ">" deeper).
 *
 * Returns: FALSE with a #GIOErrorEnum error when writing fails.
 */
EXTBODY_API gboolean eb_rewrite_write_mboxrd (const EbRewriteResult *result, const char *buf,
                                              gsize len, GOutputStream *out, GError **error);

/**
 * eb_rewrite_write_body:
 * @result: a plan from eb_rewrite_plan() on @buf
 * @buf: (array length=len): the message planned
 * @len: its length in bytes
 * @out: where the body goes
 * @error: return location for a #GError
 *
 * Write only the body of the message planned in @result (what follows its
 * header and the blank line), for a front end that changes the header itself
 * (a milter): with eb_rewrite_header_edits() it makes the message that
 * eb_rewrite_write() writes.
 *
 * Returns: FALSE with a #GIOErrorEnum error when writing fails.
 */
EXTBODY_API gboolean eb_rewrite_write_body (const EbRewriteResult *result, const char *buf,
                                            gsize len, GOutputStream *out, GError **error);

/**
 * eb_rewrite:
 * @buf: (array length=len): the message
 * @len: its length in bytes
 * @config: the configuration
 * @fetcher: (nullable): the fetcher, as for eb_rewrite_plan()
 * @flags: flags
 * @out: where the message goes
 * @result: (out) (optional) (transfer full): what was done
 * @error: return location for a #GError
 *
 * eb_rewrite_plan(), then eb_rewrite_write().
 *
 * Returns: FALSE with a #GIOErrorEnum error when writing fails (nothing else
 *   fails: a message that cannot be changed is copied).
 */
EXTBODY_API gboolean eb_rewrite (const char *buf, gsize len, const EbConfig *config,
                                 EbFetcher *fetcher, EbRewriteFlags flags, GOutputStream *out,
                                 EbRewriteResult **result, GError **error);

/**
 * eb_rewrite_result_free:
 * @result: (nullable) (transfer full): a result
 *
 * Free @result.
 */
EXTBODY_API void eb_rewrite_result_free (EbRewriteResult *result);

/**
 * eb_rewrite_result_get_reason:
 * @result: a result
 *
 * The message's own outcome: %EB_REASON_RESOLVED, or why the whole message was
 * left alone (%EB_REASON_MESSAGE_TOO_LARGE, %EB_REASON_UNPARSEABLE, a walk
 * limit, ...). Each reference has its own reason.
 *
 * Returns: the reason.
 */
EXTBODY_API EbReason eb_rewrite_result_get_reason (const EbRewriteResult *result);

/**
 * eb_rewrite_result_get_parsed:
 * @result: a result
 *
 * Whether the message was parsed (not when the pre-check or the size limit
 * said there was nothing to do).
 *
 * Returns: TRUE when it was parsed.
 */
EXTBODY_API gboolean eb_rewrite_result_get_parsed (const EbRewriteResult *result);

/**
 * eb_rewrite_result_get_changed:
 * @result: a result
 *
 * Whether the message written differs from the input.
 *
 * Returns: TRUE when it differs.
 */
EXTBODY_API gboolean eb_rewrite_result_get_changed (const EbRewriteResult *result);

/**
 * eb_rewrite_result_get_n_refs:
 * @result: a result
 *
 * The number of message/external-body references found.
 *
 * Returns: the number.
 */
EXTBODY_API guint eb_rewrite_result_get_n_refs (const EbRewriteResult *result);

/**
 * eb_rewrite_result_get_n_resolved:
 * @result: a result
 *
 * The number of references resolved.
 *
 * Returns: the number.
 */
EXTBODY_API guint eb_rewrite_result_get_n_resolved (const EbRewriteResult *result);

/**
 * eb_rewrite_result_get_n_removed:
 * @result: a result
 *
 * With %EB_REWRITE_STRIP_TRACE: the number of trace fields (%EB_FILTER_FIELD,
 * %EB_TRACE_FIELD) removed from the message header; otherwise 0.
 *
 * Returns: the number.
 */
EXTBODY_API guint eb_rewrite_result_get_n_removed (const EbRewriteResult *result);

/**
 * eb_rewrite_result_get_ref_reason:
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * What became of reference @i: %EB_REASON_RESOLVED or why it was left alone.
 *
 * Returns: the reason.
 */
EXTBODY_API EbReason eb_rewrite_result_get_ref_reason (const EbRewriteResult *result, guint i);

/**
 * eb_rewrite_result_get_ref_detail:
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * One line with the particulars of reference @i's reason.
 *
 * Returns: (transfer none) (nullable): the line, or NULL.
 */
EXTBODY_API const char *eb_rewrite_result_get_ref_detail (const EbRewriteResult *result, guint i);

/**
 * eb_rewrite_result_get_ref_path:
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * Where reference @i is: an IMAP-style part path such as "2.1".
 *
 * Returns: (transfer none): the path.
 */
EXTBODY_API const char *eb_rewrite_result_get_ref_path (const EbRewriteResult *result, guint i);

/**
 * eb_rewrite_result_get_ref_access_type:
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * Reference @i's access-type, in lowercase ("url", "anon-ftp", ...).
 *
 * Returns: (transfer none) (nullable): the access-type, or NULL when it has
 *   none that can be read.
 */
EXTBODY_API const char *eb_rewrite_result_get_ref_access_type (const EbRewriteResult *result,
                                                               guint i);

/**
 * eb_rewrite_result_get_ref_url:
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * Reference @i's URL (access-type=URL), reassembled from its header.
 *
 * Returns: (transfer none) (nullable): the URL, or NULL.
 */
EXTBODY_API const char *eb_rewrite_result_get_ref_url (const EbRewriteResult *result, guint i);

/**
 * eb_rewrite_result_get_ref_action:
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * What was decided for reference @i before any fetch.
 *
 * Returns: the action.
 */
EXTBODY_API EbActionKind eb_rewrite_result_get_ref_action (const EbRewriteResult *result, guint i);

/**
 * eb_rewrite_result_get_ref_target:
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * For %EB_ACTION_FETCH the URL fetched, for %EB_ACTION_LOCAL_FILE the file read.
 *
 * Returns: (transfer none) (nullable): the target, or NULL for other actions.
 */
EXTBODY_API const char *eb_rewrite_result_get_ref_target (const EbRewriteResult *result, guint i);

/**
 * eb_rewrite_result_get_ref_content_type:
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * The media type of reference @i's new part, such as "image/png".
 *
 * Returns: (transfer none) (nullable): the type, or NULL when not resolved.
 */
EXTBODY_API const char *eb_rewrite_result_get_ref_content_type (const EbRewriteResult *result,
                                                                guint i);

/**
 * eb_rewrite_result_get_ref_encoding:
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * The transfer encoding of reference @i's new part: "7bit",
 * "quoted-printable" or "base64".
 *
 * Returns: (transfer none) (nullable): the encoding, or NULL when not resolved.
 */
EXTBODY_API const char *eb_rewrite_result_get_ref_encoding (const EbRewriteResult *result, guint i);

/**
 * eb_rewrite_result_get_ref_size:
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * The size of reference @i's data, decoded.
 *
 * Returns: the size in bytes; 0 when not resolved.
 */
EXTBODY_API guint64 eb_rewrite_result_get_ref_size (const EbRewriteResult *result, guint i);

/**
 * eb_rewrite_result_get_ref_sha256:
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * The SHA-256 of reference @i's data, decoded, in lowercase hex.
 *
 * Returns: (transfer none) (nullable): the digest, or NULL when not resolved.
 */
EXTBODY_API const char *eb_rewrite_result_get_ref_sha256 (const EbRewriteResult *result, guint i);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbRewriteResult, eb_rewrite_result_free)

/**
 * EbHeaderEditKind:
 * @EB_HEADER_CHANGE: the index-th field of the name gets the value
 * @EB_HEADER_ADD: a field with the name and value is added
 * @EB_HEADER_DELETE: the index-th field of the name goes
 *
 * The kinds of #EbHeaderEdit.
 */
typedef enum {
  EB_HEADER_CHANGE,
  EB_HEADER_ADD,
  EB_HEADER_DELETE,
} EbHeaderEditKind;

/**
 * EbHeaderEdit:
 *
 * One edit of the message header, as a mail filter makes it. Opaque.
 */
typedef struct _EbHeaderEdit EbHeaderEdit;

/**
 * eb_rewrite_filter_field_value:
 * @result: a result
 *
 * The value of the %EB_FILTER_FIELD field for the message planned in @result,
 * after the colon, as a milter passes it: " resolved 1 of 2 external-body
 * references"; for a plan of eb_externalize_plan(), " externalized 1 of 2
 * parts".
 *
 * Returns: (transfer full): the value.
 */
EXTBODY_API char *eb_rewrite_filter_field_value (const EbRewriteResult *result);

/**
 * eb_rewrite_header_edits:
 * @result: a plan from eb_rewrite_plan() on @buf
 * @buf: (array length=len): the message planned
 * @len: its length in bytes
 *
 * The edits of the message header that @result implies (trace fields removed;
 * a resolved top-level reference's merged header), in an order they can be
 * applied one after another: changes, additions, then deletions, each name's
 * from its last field. None when nothing changed.
 *
 * Returns: (transfer full) (element-type EbHeaderEdit): the edits, freed
 *   with the array.
 */
EXTBODY_API GPtrArray *eb_rewrite_header_edits (const EbRewriteResult *result, const char *buf,
                                                gsize len);

/**
 * eb_header_edit_get_kind:
 * @edit: an edit
 *
 * What @edit does.
 *
 * Returns: the kind.
 */
EXTBODY_API EbHeaderEditKind eb_header_edit_get_kind (const EbHeaderEdit *edit);

/**
 * eb_header_edit_get_name:
 * @edit: an edit
 *
 * The name of the field edited.
 *
 * Returns: (transfer none): the name.
 */
EXTBODY_API const char *eb_header_edit_get_name (const EbHeaderEdit *edit);

/**
 * eb_header_edit_get_index:
 * @edit: an edit
 *
 * For %EB_HEADER_CHANGE and %EB_HEADER_DELETE: which field of that name, from
 * 1, among the fields of the message header as it came.
 *
 * Returns: the index; 0 for %EB_HEADER_ADD.
 */
EXTBODY_API guint eb_header_edit_get_index (const EbHeaderEdit *edit);

/**
 * eb_header_edit_get_value:
 * @edit: an edit
 *
 * For %EB_HEADER_CHANGE and %EB_HEADER_ADD: the value after the colon, its
 * folds as "\n" and white space (as a milter passes values).
 *
 * Returns: (transfer none) (nullable): the value; NULL for %EB_HEADER_DELETE.
 */
EXTBODY_API const char *eb_header_edit_get_value (const EbHeaderEdit *edit);

/**
 * eb_header_edit_free:
 * @edit: (nullable) (transfer full): an edit
 *
 * Free @edit (the array of eb_rewrite_header_edits() does it).
 */
EXTBODY_API void eb_header_edit_free (EbHeaderEdit *edit);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbHeaderEdit, eb_header_edit_free)

/* ---- inspect ---------------------------------------------------------------- */

/**
 * eb_inspect_printable:
 * @s: (nullable): UTF-8 or not
 * @max: cut at this many bytes; 0: no cut
 *
 * Text that is safe to print on one line: control characters, backslash and
 * invalid UTF-8 escaped; cut to @max bytes with "..." and the length.
 *
 * Returns: (transfer full): the text; "-" for NULL.
 */
EXTBODY_API char *eb_inspect_printable (const char *s, gsize max);

/**
 * eb_inspect_json:
 * @source: (nullable): the message's file name
 * @mbox_offset: in an mbox, the byte offset of the message's From_ line; else -1
 * @message_id: (nullable): the message's Message-ID
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * One JSON object (no newline) describing reference @i, with the field names
 * of `extbody inspect --json` (extbody(1)).
 *
 * Returns: (transfer full): the JSON text.
 */
EXTBODY_API char *eb_inspect_json (const char *source, gint64 mbox_offset, const char *message_id,
                                   const EbRewriteResult *result, guint i);

/**
 * eb_inspect_report_line:
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * The `extbody rewrite --report` line for reference @i (no newline), such as
 * "part 2: access-type=url data:...: resolved (image/png, 79 bytes, base64)".
 *
 * Returns: (transfer full): the line.
 */
EXTBODY_API char *eb_inspect_report_line (const EbRewriteResult *result, guint i);

/**
 * EbTable:
 *
 * An aligned table of references, as `extbody inspect` prints it, under
 * construction. Opaque.
 */
typedef struct _EbTable EbTable;

/**
 * eb_table_new:
 * @with_source: the table has a column for the message's file name
 *
 * An empty table.
 *
 * Returns: (transfer full): the table.
 */
EXTBODY_API EbTable *eb_table_new (gboolean with_source);

/**
 * eb_table_add:
 * @table: a table
 * @source: (nullable): the message's file name, for the source column
 * @result: a result
 * @i: a reference, below eb_rewrite_result_get_n_refs()
 *
 * Add a row for reference @i.
 */
EXTBODY_API void eb_table_add (EbTable *table, const char *source, const EbRewriteResult *result,
                               guint i);

/**
 * eb_table_finish:
 * @table: a table
 *
 * The aligned table, with a heading line.
 *
 * Returns: (transfer full): the text.
 */
EXTBODY_API char *eb_table_finish (EbTable *table);

/**
 * eb_table_free:
 * @table: (nullable) (transfer full): a table
 *
 * Free @table.
 */
EXTBODY_API void eb_table_free (EbTable *table);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbTable, eb_table_free)

/* ---- data: URLs and MIME types ---------------------------------------------- */

/**
 * EbMimeType:
 *
 * A WHATWG MIME type record (MIME Sniffing, section 4). Opaque.
 */
typedef struct _EbMimeType EbMimeType;

/**
 * eb_mime_type_parse:
 * @input: (array length=len): UTF-8
 * @len: its length in bytes, or -1 when it is NUL-terminated (with a length it
 *   may hold U+0000)
 *
 * Parse a MIME type (MIME Sniffing 4.4).
 *
 * Returns: (transfer full) (nullable): the record, or NULL for failure
 *   (invalid UTF-8 included).
 */
EXTBODY_API EbMimeType *eb_mime_type_parse (const char *input, gssize len);

/**
 * eb_mime_type_copy:
 * @mt: a record
 *
 * A copy of @mt.
 *
 * Returns: (transfer full): the copy.
 */
EXTBODY_API EbMimeType *eb_mime_type_copy (const EbMimeType *mt);

/**
 * eb_mime_type_free:
 * @mt: (nullable) (transfer full): a record
 *
 * Free @mt.
 */
EXTBODY_API void eb_mime_type_free (EbMimeType *mt);

/**
 * eb_mime_type_get_essence:
 * @mt: a record
 *
 * The essence, "type/subtype" in lowercase.
 *
 * Returns: (transfer full): the essence.
 */
EXTBODY_API char *eb_mime_type_get_essence (const EbMimeType *mt);

/**
 * eb_mime_type_get_parameter:
 * @mt: a record
 * @name: a parameter name in ASCII lowercase
 *
 * The value of parameter @name.
 *
 * Returns: (transfer none) (nullable): the value, or NULL when absent.
 */
EXTBODY_API const char *eb_mime_type_get_parameter (const EbMimeType *mt, const char *name);

/**
 * eb_mime_type_serialize:
 * @mt: a record
 *
 * Serialize @mt (MIME Sniffing 4.5), such as "text/plain;charset=US-ASCII".
 *
 * Returns: (transfer full): the text.
 */
EXTBODY_API char *eb_mime_type_serialize (const EbMimeType *mt);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbMimeType, eb_mime_type_free)

/**
 * EbDataUrl:
 *
 * The result of the WHATWG data: URL processor: a MIME type and a body. Opaque.
 */
typedef struct _EbDataUrl EbDataUrl;

/**
 * eb_data_url_process:
 * @input: (array length=len): a URL, UTF-8
 * @len: its length in bytes, or -1 when it is NUL-terminated (with a length it
 *   may hold U+0000)
 * @error: return location for a #GError
 *
 * The WHATWG Fetch data: URL processor, after what the URL parser and
 * serializer do to a data: URL.
 *
 * Returns: (transfer full) (nullable): the result, or NULL with
 *   %EB_ERROR_DATA_URL (a one-line message saying why) when the processor
 *   returns failure.
 */
EXTBODY_API EbDataUrl *eb_data_url_process (const char *input, gssize len, GError **error);

/**
 * eb_data_url_get_mime_type:
 * @du: a result
 *
 * The MIME type (text/plain;charset=US-ASCII when the URL named none).
 *
 * Returns: (transfer none): the MIME type.
 */
EXTBODY_API const EbMimeType *eb_data_url_get_mime_type (const EbDataUrl *du);

/**
 * eb_data_url_get_body:
 * @du: a result
 *
 * The body, decoded.
 *
 * Returns: (transfer none): the body.
 */
EXTBODY_API GBytes *eb_data_url_get_body (const EbDataUrl *du);

/**
 * eb_data_url_get_base64:
 * @du: a result
 *
 * Whether the ";base64" form was used.
 *
 * Returns: TRUE when it was.
 */
EXTBODY_API gboolean eb_data_url_get_base64 (const EbDataUrl *du);

/**
 * eb_data_url_free:
 * @du: (nullable) (transfer full): a result
 *
 * Free @du.
 */
EXTBODY_API void eb_data_url_free (EbDataUrl *du);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbDataUrl, eb_data_url_free)

/**
 * eb_utf8_validate_with_nul:
 * @s: (array length=len): bytes
 * @len: their number
 *
 * Like g_utf8_validate_len(), except that U+0000 (a NUL byte) is valid, as it
 * is in the WHATWG algorithms.
 *
 * Returns: TRUE when @s is UTF-8.
 */
EXTBODY_API gboolean eb_utf8_validate_with_nul (const char *s, gsize len);

/* ---- the message header ------------------------------------------------------ */

/**
 * eb_message_get_header:
 * @buf: (array length=len): a message, from its first header line (no From_ line)
 * @len: its length in bytes
 * @name: a field name, ASCII case-insensitive
 *
 * The first field named @name of the message header, read from the raw bytes:
 * its value unfolded (folds removed, the white space after them kept), with
 * surrounding white space trimmed.
 *
 * Returns: (transfer full) (nullable): the value, or NULL when the header has
 *   no such field.
 */
EXTBODY_API char *eb_message_get_header (const char *buf, gsize len, const char *name);

/**
 * eb_content_type_get_media_type:
 * @value: the value of a Content-Type field, as written (folds and comments
 *   allowed)
 *
 * The media type a Content-Type field names, as extbody reads it.
 *
 * Returns: (transfer full) (nullable): "type/subtype" in ASCII lowercase, or
 *   NULL when the value does not start with a valid type "/" subtype.
 */
EXTBODY_API char *eb_content_type_get_media_type (const char *value);

/* ---- logging ---------------------------------------------------------------- */

/**
 * EbLogTarget:
 * @EB_LOG_STDERR: "IDENT: message" on standard error
 * @EB_LOG_SYSLOG: syslog(3), facility mail, with LOG_PID
 *
 * Where eb_log_init() sends records when standard error is not the systemd
 * journal (when it is, records go to the journal with structured fields).
 */
typedef enum {
  EB_LOG_STDERR,
  EB_LOG_SYSLOG,
} EbLogTarget;

/**
 * eb_log_init:
 * @ident: the program name ("extbody-milter")
 * @target: where records go when standard error is not the journal
 *
 * Send every log record of the process - the front end's, libextbody's and
 * GMime's g_warning() family included - through one writer: to the systemd
 * journal (its fields EXTBODY_KEY for each key=value pair) when standard error
 * is the journal, else to @target. Debug records are dropped unless
 * G_MESSAGES_DEBUG names their domain. Call it before any thread starts; a
 * later call (single-threaded) switches the target, as a daemon does when it
 * detaches.
 */
EXTBODY_API void eb_log_init (const char *ident, EbLogTarget target);

/**
 * eb_log_parse_target:
 * @name: "stderr" or "syslog"
 * @target: (out): the target named
 *
 * Read a target's name, as a command-line option gives it.
 *
 * Returns: FALSE when @name is neither.
 */
EXTBODY_API gboolean eb_log_parse_target (const char *name, EbLogTarget *target);

/**
 * eb_log:
 * @priority: a syslog priority (LOG_ERR, LOG_WARNING, LOG_INFO, ...)
 * @format: a printf() format
 * @...: its arguments
 *
 * Log one line of text.
 */
EXTBODY_API void eb_log (int priority, const char *format, ...) G_GNUC_PRINTF (2, 3);

/**
 * eb_log_start:
 * @key: the first key, or NULL
 * @...: its value, then more key, value pairs, then NULL (a NULL value skips
 *   its pair)
 *
 * The start line, at LOG_INFO: "event=start version=... gmime=... glib=...
 * libcurl=..." (the versions extbody runs with), then the pairs given, e.g.
 * eb_log_start ("socket", spec, "fetch", "off", NULL).
 */
EXTBODY_API void eb_log_start (const char *key, ...) G_GNUC_NULL_TERMINATED;

/**
 * eb_log_versions:
 *
 * The versions of extbody and of the libraries it runs with, as key=value
 * pairs: "version=0.1.0 gmime=3.2.13 glib=2.74.6 libcurl=7.88.1".
 *
 * Returns: (transfer full): the pairs.
 */
EXTBODY_API char *eb_log_versions (void);

/**
 * eb_log_message:
 * @queue_id: (nullable): the MTA's queue id, left out when NULL
 * @message_id: (nullable): the message's Message-ID, left out when NULL
 * @result: the message's result
 *
 * The per-message record, at LOG_INFO, for a message that had references, was
 * left alone as a whole or had trace fields removed: one line for the message
 * ("queue_id=ID msgid=&lt;M&gt; references=N resolved=N changed=yes|no
 * [reason=TOKEN] [trace_removed=N]") and one per reference ("queue_id=ID
 * msgid=&lt;M&gt; ref=I part=1.2 access_type=url scheme=https
 * host=files.example.org outcome=resolved|left [reason=TOKEN] [type=T
 * bytes=N]"). Values with spaces, quotes or control characters are quoted and
 * escaped. A URL is never logged whole (it may carry tokens): only its scheme
 * and host.
 */
EXTBODY_API void eb_log_message (const char *queue_id, const char *message_id,
                                 const EbRewriteResult *result);

/**
 * eb_log_message_id:
 * @result: the result of eb_rewrite_plan() on @buf
 * @buf: (array length=len): the message as given to eb_rewrite_plan()
 * @len: its length
 *
 * The Message-ID of the message planned in @result, unfolded.
 *
 * Returns: (transfer full) (nullable): the Message-ID, or NULL.
 */
EXTBODY_API char *eb_log_message_id (const EbRewriteResult *result, const char *buf, gsize len);

/* Sections are added by module: configuration, reasons, fetcher, rewrite,
 * inspect, batch and statistics. */

/* ---- batch and statistics ------------------------------------------------
 *
 * EbConfig, EbFetcher, EbRewriteResult, EbRewriteFlags and EbReason are
 * declared in their own sections (configuration, fetcher, rewrite, reasons).
 */

/* EbStats: thread-safe counters that an administrator and a front end share: messages
 * scanned, messages skipped, messages changed, references, references
 * resolved, references left alone by reason, bytes of input, and the fetches
 * made for those messages (by outcome, bytes, cache hits, a latency
 * histogram). They only grow: one EbStats for a process's lifetime gives the
 * counters Prometheus expects (eb_stats_write_prometheus()), across reloads.
 */
typedef struct _EbStats EbStats;

/**
 * eb_stats_new:
 *
 * Returns: (transfer full): counters, all zero.
 */
EXTBODY_API EbStats *eb_stats_new (void);

/**
 * eb_stats_free:
 * @stats: (nullable) (transfer full): the counters
 */
EXTBODY_API void eb_stats_free (EbStats *stats);

/**
 * eb_stats_add_result:
 * @stats: the counters
 * @result: (nullable): what eb_rewrite_plan() decided for one message; %NULL
 *   for a message that could not be read
 *
 * Counts one scanned message: its references, those resolved and those left
 * by reason. A message not even parsed (too large) counts its own reason once.
 * Safe to call from several threads.
 */
EXTBODY_API void eb_stats_add_result (EbStats *stats, const EbRewriteResult *result);

/**
 * eb_stats_add_skipped:
 * @stats: the counters
 *
 * Counts one mailbox entry skipped (not a message, hard-linked, gone).
 */
EXTBODY_API void eb_stats_add_skipped (EbStats *stats);

/**
 * eb_stats_add_changed:
 * @stats: the counters
 * @n: messages
 *
 * Counts @n messages changed (or that would change, in a dry run).
 */
EXTBODY_API void eb_stats_add_changed (EbStats *stats, guint64 n);

/**
 * eb_stats_add_bytes:
 * @stats: the counters
 * @n: bytes
 *
 * Counts @n bytes of input.
 */
EXTBODY_API void eb_stats_add_bytes (EbStats *stats, guint64 n);

/**
 * eb_stats_get_messages:
 * @stats: the counters
 *
 * Returns: the messages scanned (skipped entries not included).
 */
EXTBODY_API guint64 eb_stats_get_messages (EbStats *stats);

/**
 * eb_stats_get_skipped:
 * @stats: the counters
 *
 * Returns: the mailbox entries skipped.
 */
EXTBODY_API guint64 eb_stats_get_skipped (EbStats *stats);

/**
 * eb_stats_get_changed:
 * @stats: the counters
 *
 * Returns: the messages changed.
 */
EXTBODY_API guint64 eb_stats_get_changed (EbStats *stats);

/**
 * eb_stats_get_references:
 * @stats: the counters
 *
 * Returns: the external-body references found.
 */
EXTBODY_API guint64 eb_stats_get_references (EbStats *stats);

/**
 * eb_stats_get_resolved:
 * @stats: the counters
 *
 * Returns: the references resolved.
 */
EXTBODY_API guint64 eb_stats_get_resolved (EbStats *stats);

/**
 * eb_stats_get_parts:
 * @stats: the counters
 *
 * Returns: the parts eb_externalize_plan() found to take out (its candidates).
 */
EXTBODY_API guint64 eb_stats_get_parts (EbStats *stats);

/**
 * eb_stats_get_externalized:
 * @stats: the counters
 *
 * Returns: the parts stored and replaced by references.
 */
EXTBODY_API guint64 eb_stats_get_externalized (EbStats *stats);

/**
 * eb_stats_get_externalized_bytes:
 * @stats: the counters
 *
 * Returns: the decoded bytes of the parts stored and replaced.
 */
EXTBODY_API guint64 eb_stats_get_externalized_bytes (EbStats *stats);

/**
 * eb_stats_get_bytes:
 * @stats: the counters
 *
 * Returns: the bytes of input counted.
 */
EXTBODY_API guint64 eb_stats_get_bytes (EbStats *stats);

/**
 * eb_stats_get_left:
 * @stats: the counters
 * @reason: why: anything but %EB_REASON_RESOLVED
 *
 * Returns: the references (or whole messages not parsed) left alone for @reason.
 */
EXTBODY_API guint64 eb_stats_get_left (EbStats *stats, EbReason reason);

/**
 * eb_stats_format_summary:
 * @stats: the counters
 * @dry_run: say "would change" instead of "changed"
 *
 * One line (no newline) such as "12 messages scanned, 3 references, 1
 * resolved, 1 messages changed; left: fetch-off 2 (fetch = on)": the
 * references left by reason, most first (ties by token), each followed by the
 * configuration key that decides it where there is one.
 *
 * Returns: (transfer full): the line.
 */
EXTBODY_API char *eb_stats_format_summary (EbStats *stats, gboolean dry_run);

/**
 * eb_stats_get_fetches:
 * @stats: the counters
 * @outcome: %EB_REASON_RESOLVED for the fetches that brought data back, else
 *   why a fetch gave none
 *
 * Fetches are counted by eb_stats_add_result() from the messages' results:
 * one for each URL fetched from the network (a name lookup or a connection
 * made), redirects and a retry included in it; a URL taken from the fetcher's
 * cache is a cache hit instead, and one refused before any network use
 * (policy, rate limit) is counted among the references left only.
 *
 * Returns: the fetches that ended with @outcome.
 */
EXTBODY_API guint64 eb_stats_get_fetches (EbStats *stats, EbReason outcome);

/**
 * eb_stats_get_fetched_bytes:
 * @stats: the counters
 *
 * Returns: the body bytes that arrived over the network, for every fetch
 * (those stopped at a limit included).
 */
EXTBODY_API guint64 eb_stats_get_fetched_bytes (EbStats *stats);

/**
 * eb_stats_get_cache_hits:
 * @stats: the counters
 *
 * Returns: the URLs taken from the fetcher's cache (an earlier message's
 * fetch, or an earlier reference of the same message) instead of fetched.
 */
EXTBODY_API guint64 eb_stats_get_cache_hits (EbStats *stats);

/**
 * eb_stats_format_prometheus:
 * @stats: the counters
 *
 * The counters in the Prometheus text exposition format (version 0.0.4), as
 * the node_exporter textfile collector reads them: a HELP and a TYPE line for
 * each metric; counters named with _total (extbody_messages_total,
 * extbody_skipped_total, extbody_messages_changed_total,
 * extbody_input_bytes_total, extbody_references_total,
 * extbody_references_resolved_total, extbody_left_total with a reason label
 * for every reason token, extbody_fetches_total with an outcome label,
 * extbody_fetched_bytes_total, extbody_fetch_cache_hits_total); and the
 * histogram extbody_fetch_duration_seconds (fixed buckets from 5 ms to 120 s,
 * _bucket{le=...}, _sum, _count). Label values are escaped as the format
 * says. A consistent snapshot: taken under the counters' lock.
 *
 * Returns: (transfer full): the text, ending with a newline.
 */
EXTBODY_API char *eb_stats_format_prometheus (EbStats *stats);

/**
 * eb_stats_write_prometheus:
 * @stats: the counters
 * @path: the file, usually NAME.prom in node_exporter's
 *   --collector.textfile.directory
 * @error: (nullable): where a failure goes
 *
 * Writes eb_stats_format_prometheus() to @path atomically: into a temporary
 * file in the same directory (whose name does not end in .prom), flushed to
 * disk (fsync), then renamed over @path, mode 0644 whatever the umask, so that a reader sees the
 * old file or the new one, never a part of one. On failure @path is as it was
 * and no temporary file is left.
 *
 * Returns: %TRUE when written; %FALSE with @error (G_FILE_ERROR) set.
 */
EXTBODY_API gboolean eb_stats_write_prometheus (EbStats *stats, const char *path, GError **error);

/**
 * eb_stats_add_to_prometheus:
 * @stats: the counters of one run
 * @path: the file, NAME.prom in node_exporter's --collector.textfile.directory,
 *   of this writer alone
 * @writer: the value of the label writer="..." every sample of @path carries,
 *   so that its series differ from those of another writer's file in the same
 *   directory
 * @lock_timeout: the most seconds to wait for another run's lock
 * @error: (nullable): where a failure goes
 *
 * Adds @stats to the counters @path holds and writes the sums back, as
 * eb_stats_write_prometheus() writes (atomically, mode 0644), under an
 * exclusive lock on @path with ".lock" appended: the counters of runs that
 * each start from zero only ever grow in @path, whether the runs come one
 * after the other or at once, as Prometheus expects of a counter. A missing
 * @path counts from zero; a @path that is not such counters of @writer is left
 * as it is and is an error (%G_FILE_ERROR_INVAL, naming the line).
 *
 * Returns: %TRUE when written; %FALSE with @error (G_FILE_ERROR) set.
 */
EXTBODY_API gboolean eb_stats_add_to_prometheus (EbStats *stats, const char *path, const char *writer,
                                                 guint lock_timeout, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbStats, eb_stats_free)

/* EbBatch: what rewrite and inspect over mailboxes share: messages taken from an mbox
 * or a Maildir, planned by a bounded pool of worker threads with at most a
 * window of messages in flight, and handed back in input order on the calling
 * thread, their memory given back as the run goes. In %EB_BATCH_REWRITE mode
 * an mbox is locked and replaced crash-safely (mboxrd quoting, stale
 * Content-Length fields dropped, its framing kept) and each changed Maildir
 * message delivered anew; %EB_BATCH_DRY_RUN and %EB_BATCH_INSPECT change
 * nothing.
 */
typedef struct _EbBatch EbBatch;

/**
 * EbBatchMode:
 * @EB_BATCH_REWRITE: plan each message and write the changed ones back
 * @EB_BATCH_DRY_RUN: plan and count as a rewrite would; write nothing
 * @EB_BATCH_INSPECT: plan each message to describe it; write nothing, lock
 *   nothing, and take Maildir entries as they are (no hard-link check)
 */
typedef enum {
  EB_BATCH_REWRITE,
  EB_BATCH_DRY_RUN,
  EB_BATCH_INSPECT,
} EbBatchMode;

/**
 * EB_BATCH_ERROR:
 *
 * The error domain of a batch run. Its message is the line already handed
 * to the notice callback.
 */
#define EB_BATCH_ERROR (eb_batch_error_quark ())

/**
 * eb_batch_error_quark:
 *
 * The quark of %EB_BATCH_ERROR.
 *
 * Returns: the error domain.
 */
EXTBODY_API GQuark eb_batch_error_quark (void);

/**
 * EbBatchError:
 * @EB_BATCH_ERROR_NOINPUT: the mailbox cannot be opened, or is not one
 * @EB_BATCH_ERROR_DATAERR: the file is not an mbox
 * @EB_BATCH_ERROR_CANTCREAT: the mailbox cannot be replaced (not writable,
 *   hard-linked, no lock file can be made beside it)
 * @EB_BATCH_ERROR_IOERR: reading or writing failed
 * @EB_BATCH_ERROR_TEMPFAIL: locked by another, or changed by another
 *   meanwhile: run again
 *
 * Codes for the failures a caller acts on, one per sysexits(3) status.
 */
typedef enum {
  EB_BATCH_ERROR_NOINPUT,
  EB_BATCH_ERROR_DATAERR,
  EB_BATCH_ERROR_CANTCREAT,
  EB_BATCH_ERROR_IOERR,
  EB_BATCH_ERROR_TEMPFAIL,
} EbBatchError;

/**
 * EbBatchProgressFunc:
 * @done: messages planned so far
 * @total: messages in the mailbox
 * @bytes_done: bytes of them
 * @total_bytes: bytes of the mailbox (0 while unknown)
 * @final: the last call of the run
 * @user_data: as given
 *
 * Called on the calling thread about five times a second, and once at the end.
 */
typedef void (*EbBatchProgressFunc) (guint done, guint total, guint64 bytes_done,
                                     guint64 total_bytes, gboolean final, gpointer user_data);

/**
 * EbBatchMessageFunc:
 * @number: the message's number in its mailbox, from 1 (a Maildir's skipped
 *   entries take their numbers too)
 * @source: the mbox, or the Maildir message file
 * @mbox_offset: the byte offset of its From_ line, or -1 in a Maildir
 * @message_id: (nullable): its Message-ID (looked up only when it has references)
 * @result: what was decided for it
 * @user_data: as given
 *
 * Called for every message planned, in input order, on the calling thread.
 */
typedef void (*EbBatchMessageFunc) (guint number, const char *source, gint64 mbox_offset,
                                    const char *message_id, const EbRewriteResult *result,
                                    gpointer user_data);

/**
 * EbBatchNoticeFunc:
 * @line: one line for people (no newline), e.g. "skipped PATH: not a regular file"
 * @user_data: as given
 *
 * Called on the calling thread for each entry skipped, each message that
 * cannot be read or written, and each failure of the run, in order.
 */
typedef void (*EbBatchNoticeFunc) (const char *line, gpointer user_data);

/**
 * eb_batch_new:
 * @config: the configuration; kept (not copied) for the batch's lifetime
 * @fetcher: (nullable): the fetcher, kept likewise; %NULL: resolve data: URLs only
 * @mode: rewrite, dry run or inspect
 *
 * Returns: (transfer full): a batch with one job, not recursive, no backup.
 */
EXTBODY_API EbBatch *eb_batch_new (const EbConfig *config, EbFetcher *fetcher, EbBatchMode mode);

/**
 * eb_batch_free:
 * @batch: (nullable) (transfer full): the batch
 */
EXTBODY_API void eb_batch_free (EbBatch *batch);

/**
 * eb_batch_set_mode:
 * @batch: the batch
 * @mode: rewrite, dry run or inspect, for the runs that follow
 */
EXTBODY_API void eb_batch_set_mode (EbBatch *batch, EbBatchMode mode);

/**
 * eb_batch_set_jobs:
 * @batch: the batch
 * @jobs: messages planned at once (worker threads), at least 1
 */
EXTBODY_API void eb_batch_set_jobs (EbBatch *batch, guint jobs);

/**
 * eb_batch_set_recursive:
 * @batch: the batch
 * @recursive: with a Maildir, its Maildir++ subfolders too
 */
EXTBODY_API void eb_batch_set_recursive (EbBatch *batch, gboolean recursive);

/**
 * eb_batch_set_backup:
 * @batch: the batch
 * @path: (nullable): where the original mbox is kept (linked) when it is replaced
 */
EXTBODY_API void eb_batch_set_backup (EbBatch *batch, const char *path);

/**
 * eb_batch_set_flags:
 * @batch: the batch
 * @flags: the flags each message is planned with, e.g. %EB_REWRITE_NO_FETCH
 */
EXTBODY_API void eb_batch_set_flags (EbBatch *batch, EbRewriteFlags flags);

/**
 * eb_batch_set_progress_func:
 * @batch: the batch
 * @func: (nullable) (scope notified): called as the run goes
 * @user_data: for @func
 */
EXTBODY_API void eb_batch_set_progress_func (EbBatch *batch, EbBatchProgressFunc func,
                                             gpointer user_data);

/**
 * eb_batch_set_message_func:
 * @batch: the batch
 * @func: (nullable) (scope notified): called for every message, in order
 * @user_data: for @func
 */
EXTBODY_API void eb_batch_set_message_func (EbBatch *batch, EbBatchMessageFunc func,
                                            gpointer user_data);

/**
 * eb_batch_set_notice_func:
 * @batch: the batch
 * @func: (nullable) (scope notified): called for each line for people
 * @user_data: for @func
 */
EXTBODY_API void eb_batch_set_notice_func (EbBatch *batch, EbBatchNoticeFunc func,
                                           gpointer user_data);

/**
 * eb_batch_run_mbox:
 * @batch: the batch
 * @path: the mbox: a regular file, never through a symbolic link
 * @error: an %EB_BATCH_ERROR
 *
 * Every message of the mbox @path. In %EB_BATCH_REWRITE mode the mbox is
 * locked for the run and, when a message changed, replaced by the new one.
 *
 * Returns: %FALSE with @error when the run failed; the mailbox is then as it was.
 */
EXTBODY_API gboolean eb_batch_run_mbox (EbBatch *batch, const char *path, GError **error);

/**
 * eb_batch_run_maildir:
 * @batch: the batch
 * @path: the Maildir (cur/, new/ and tmp/)
 * @error: an %EB_BATCH_ERROR
 *
 * Every message of the Maildir @path. A message that cannot be read or
 * replaced is told to the notice callback and the run goes on; the error
 * returned at the end says the worst.
 *
 * Returns: %FALSE with @error when any message failed or the run could not start.
 */
EXTBODY_API gboolean eb_batch_run_maildir (EbBatch *batch, const char *path, GError **error);

/**
 * eb_batch_get_complete:
 * @batch: the batch
 *
 * Returns: whether the last run went through every message of its mailbox
 *   (so its statistics describe the mailbox), even when writing then failed.
 */
EXTBODY_API gboolean eb_batch_get_complete (EbBatch *batch);

/**
 * eb_batch_get_stats:
 * @batch: the batch
 *
 * The counters of every run of @batch so far.
 *
 * Returns: (transfer none): the counters.
 */
EXTBODY_API EbStats *eb_batch_get_stats (EbBatch *batch);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbBatch, eb_batch_free)

/**
 * eb_maildir_sniff:
 * @path: (type filename): a directory
 *
 * Whether @path is a Maildir: it holds the directories cur/, new/ and tmp/.
 * Nothing is read but their existence.
 *
 * Returns: TRUE when it is one.
 */
EXTBODY_API gboolean eb_maildir_sniff (const char *path);

/**
 * eb_maildir_problem:
 * @path: (type filename): a directory
 *
 * What keeps @path from being a Maildir extbody can read and rewrite, as one
 * line for an administrator: @path cannot be opened (with the system's
 * words), or which of cur/, new/ and tmp/ is missing, not a directory, or
 * cannot be opened. A symbolic link there is no problem here: it is never
 * followed (the Maildir walk skips it with a line of its own, and a rewrite
 * refuses to write through it).
 *
 * Returns: (transfer full) (nullable): the line, or %NULL when cur/, new/
 *   and tmp/ are there and can be opened.
 */
EXTBODY_API char *eb_maildir_problem (const char *path);

/**
 * eb_cleanup_run:
 *
 * Unlink every file a batch run in progress must not leave behind: the new
 * mbox being written beside the old one and the dot-lock. Async-signal-safe:
 * for a handler of SIGTERM, SIGINT or SIGHUP, which then lets the signal take
 * its default course. The mailbox itself stays as it was.
 */
EXTBODY_API void eb_cleanup_run (void);

/* ---- externalize ------------------------------------------------------------ */

/**
 * EbExternalizeFlags:
 * @EB_EXTERNALIZE_DEFAULT: none
 * @EB_EXTERNALIZE_FALLBACK: write each reference inside a multipart/alternative
 *   after a short text/plain part with the link (as externalize_fallback = on)
 * @EB_EXTERNALIZE_FILTER_FIELD: when something was externalized, the written
 *   message gets the %EB_FILTER_FIELD field ("externalized N of M parts")
 * @EB_EXTERNALIZE_NO_STORE: decide only: every candidate is left with
 *   %EB_REASON_WOULD_EXTERNALIZE; nothing is stored, nothing changed
 * @EB_EXTERNALIZE_MBOXRD: the message comes from an mbox, its "From " lines
 *   quoted the mboxrd way (">From ", ">>From "...): a part's bytes are stored
 *   unquoted, as the message's reader sees them (eb_batch_set_store() sets it
 *   for an mbox)
 *
 * How eb_externalize_plan() works.
 */
typedef enum {
  EB_EXTERNALIZE_DEFAULT      = 0,
  EB_EXTERNALIZE_FALLBACK     = 1 << 0,
  EB_EXTERNALIZE_FILTER_FIELD = 1 << 1,
  EB_EXTERNALIZE_NO_STORE     = 1 << 2,
  EB_EXTERNALIZE_MBOXRD       = 1 << 3,
} EbExternalizeFlags;

/**
 * eb_externalize_plan:
 * @buf: the message (a leading mbox From_ line is kept and skipped)
 * @len: its length
 * @config: the configuration (externalize_min_size, externalize_types,
 *   externalize_retention, externalize_fallback, and the walk limits)
 * @store: (nullable): where the parts go; %NULL plans as with
 *   %EB_EXTERNALIZE_NO_STORE
 * @flags: how
 *
 * Plans the externalization of @buf: every leaf part eligible (not text meant
 * to be read inline, not under multipart/signed, multipart/encrypted or
 * multipart/related, of at least externalize_min_size decoded bytes, of a type
 * externalize_types matches, whose transfer encoding decodes cleanly) is a
 * candidate: stored through @store and, once stored and verified, replaced
 * by a message/external-body reference (access-type=URL) whose phantom header
 * keeps the part's own Content-Type, Content-ID, Content-Description and
 * Content-Disposition as written, with a Content-MD5 of the stored bytes
 * (and, for a part without a Content-ID, "<SHA-256@host of the URL>": RFC 2046
 * 5.2.3 wants one in every reference; the resolver leaves it out of the part it
 * restores). A part the store failed to take is left with %EB_REASON_STORE_FAILED. The
 * result is written with eb_rewrite_write() and the other writers; every byte
 * outside a replaced part is copied as it was, and a message with nothing
 * externalized comes out byte for byte as it came in. In the result, the
 * "references" are the candidates and "resolved" those externalized; for each
 * externalized one, eb_rewrite_result_get_ref_url() gives the URL.
 *
 * Returns: (transfer full): the plan, never %NULL.
 */
EXTBODY_API EbRewriteResult *eb_externalize_plan (const char *buf, gsize len,
                                                  const EbConfig *config, EbStore *store,
                                                  EbExternalizeFlags flags);

/**
 * eb_externalize_report_line:
 * @result: a plan from eb_externalize_plan()
 * @i: a candidate, from 0 to eb_rewrite_result_get_n_refs() - 1
 *
 * One line (no newline) about candidate @i for people: its part path, media
 * type and decoded size, then "externalized URL" or "left: TOKEN: text"
 * followed by the detail (the store's error) when there is one, e.g.
 * "part 2 application/pdf 5242880 bytes: externalized http://files.example/ab12...".
 *
 * Returns: (transfer full): the line.
 */
EXTBODY_API char *eb_externalize_report_line (const EbRewriteResult *result, guint i);

/**
 * eb_batch_set_store:
 * @batch: the batch
 * @store: (nullable): kept (not copied) for the batch's lifetime; non-%NULL:
 *   every message is planned with eb_externalize_plan() (in a dry run with
 *   %EB_EXTERNALIZE_NO_STORE added), and the batch's rewrite flags are not used
 * @flags: the flags each message is externalized with
 */
EXTBODY_API void eb_batch_set_store (EbBatch *batch, EbStore *store, EbExternalizeFlags flags);

G_END_DECLS
