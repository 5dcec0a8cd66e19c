/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody-base.h - the library's version, start and end, errors and the reasons a reference is left alone.
 *
 * Part of libextbody's public API; include <extbody/extbody.h>, which
 * includes every header of the API. */
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
 * SECTION:extbody-base
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
 * Compile with `pkg-config --cflags --libs extbody-2`.
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
 * @EB_REASON_NOT_RETRIEVAL: a URL that retrieves nothing (mailto, telnet,
 *   tn3270): RFC 2017 section 3 says it must not be used
 * @EB_REASON_UNSUPPORTED_SCHEME: a retrieval scheme no server speaks any more
 *   (wais, prospero)
 * @EB_REASON_NOT_DOCUMENT: the URL names a directory listing, a gopher menu or
 *   search, a newsgroup: not a document
 * @EB_REASON_FILE_REMOTE_HOST: a file URL naming a host other than localhost
 * @EB_REASON_SEALED_RECORD: the whole message: its header holds an X-Extbody
 *   record this site sealed (trace_key_file) saying how its references were
 *   resolved; a pass of this site handled it already, and nothing is done again
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
  EB_REASON_NOT_RETRIEVAL,
  EB_REASON_UNSUPPORTED_SCHEME,
  EB_REASON_NOT_DOCUMENT,
  EB_REASON_FILE_REMOTE_HOST,
  EB_REASON_SEALED_RECORD,
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

G_END_DECLS
