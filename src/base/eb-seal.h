/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-seal.h - the site's seal on the X-Extbody records its passes write.
 *
 * Every pass of a mail filter (the milter, the daemon's Dovecot and HTTP
 * doors, `extbody rewrite --filter`) removes the X-Extbody fields a message
 * arrives with: a sender can forge them. Where one site runs two passes over
 * the same message (the milter, then Dovecot's filter at delivery) the second
 * would remove the first's record as forged, and fetch again what the first
 * left. With a secret of the site's own (trace_key_file) each record a pass
 * writes ends in "; seal=" and 22 characters: the first 16 bytes, base64url
 * without padding, of the HMAC-SHA256 (RFC 2104, GLib's GHmac) keyed with the
 * secret over
 *
 *     "extbody-seal-1\n" RECORD "\n" MESSAGE-ID
 *
 * where RECORD is the field's value before "; seal=" and MESSAGE-ID the value
 * of the message's first Message-ID field (empty without one), each unfolded,
 * every run of white space made one space, trimmed. A seal made for one
 * message does not verify on another (another Message-ID), nor on another
 * record, nor with another key; a sender without the key cannot make one.
 *
 * The key is read at its first use (eb_seal_key) and kept with the
 * configuration: a program that cannot read it (a user's, the per-message
 * Sieve program run as the mail user) seals and trusts nothing, as without
 * the key, with one debug line at most; extbodyd reads it when it loads its
 * configuration (eb_seal_key_check) and refuses one it cannot use.
 *
 * What a pass does with a sealed record is the plan's (eb-rewrite.c,
 * eb-externalize.c); this module only makes, checks and reads seals. Pure
 * but for the key's file.
 */
#pragma once
#include <glib.h>
#include "eb-config.h"

G_BEGIN_DECLS

/* The key's file holds at least this many bytes (taken as they are), and at
 * most EB_SEAL_KEY_MAX. */
#define EB_SEAL_KEY_MIN 32
#define EB_SEAL_KEY_MAX 4096

/* The length of a seal: 16 bytes of HMAC in base64url, no padding. */
#define EB_SEAL_LEN 22

/* eb_seal_key_check is public (extbody-config.h). */

/* The key of trace_key_file, read at the first call for @config and kept
 * with it; NULL when the key is empty, or cannot be read or used (one debug
 * line, once a process, says why). Thread-safe. Returns: (transfer full)
 * (nullable). */
GBytes *eb_seal_key (const EbConfig *config);

/* The key in the file @path, checked: a regular file, neither readable nor
 * writable by others, of EB_SEAL_KEY_MIN to EB_SEAL_KEY_MAX bytes. NULL with
 * @error (G_FILE_ERROR from open's errno, else EB_ERROR_CONFIG) naming the
 * path and the fix. Returns: (transfer full). */
GBytes *eb_seal_read_key (const char *path, GError **error);

/* @s (@len bytes, -1: up to its NUL) unfolded: CR and LF dropped, every run
 * of spaces and tabs one space, none at either end. Returns: (transfer full). */
char *eb_seal_canonical (const char *s, gssize len);

/* The seal of @record (a field's value before "; seal=") for the message whose
 * Message-ID is @message_id (nullable: none), keyed with @key: EB_SEAL_LEN
 * characters. Returns: (transfer full). */
char *eb_seal_make (GBytes *key, const char *record, const char *message_id);

/* Whether the field value @value (as written, folds and all) ends in a seal
 * that verifies with @key for @message_id (nullable). With @record, the
 * record it seals (canonical, without the seal) when it does. */
gboolean eb_seal_verify (GBytes *key, const char *value, const char *message_id, char **record);

/* Whether @record (canonical) is a rewrite's record, "resolved N of M
 * external-body reference" or "... references", with N at most M: then N in
 * *@done and M in *@of (either nullable). */
gboolean eb_seal_record_counts (const char *record, guint *done, guint *of);

G_END_DECLS
