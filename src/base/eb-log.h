/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-log.h - one log for the library and every front end.
 *
 * Everything goes through GLib's structured logging (g_log_structured and the
 * g_warning family, the library's and GMime's included): eb_log_init() installs
 * one writer that sends each record
 *   - to the systemd journal, with its structured fields, when standard error
 *     is the journal (a unit's service);
 *   - else to syslog(3), facility mail, with the ident and LOG_PID, when the
 *     front end asks for it (a daemon after it detached, the pipe filter);
 *   - else to standard error as "IDENT: message".
 * Debug records are dropped unless G_MESSAGES_DEBUG names their domain.
 *
 * The records a log pipeline reads are lines of key=value pairs (values quoted
 * when needed, control characters escaped; see eb_log_append_pair); on the
 * journal the same pairs are also fields named EXTBODY_<KEY in capitals>
 * (queue_id: EXTBODY_QUEUE_ID). A URL is never logged whole (it may carry
 * tokens): only its scheme and host.
 */
#pragma once
#include <glib.h>
#include <extbody/extbody.h>

G_BEGIN_DECLS

/* EbLogTarget, eb_log_init, eb_log_parse_target, eb_log, eb_log_start,
 * eb_log_versions, eb_log_message are public
 * (extbody.h, "logging"). */

/* --- the pure parts, for the tests ---------------------------------------- */

/* What of @url may be logged: its scheme (lowercase) and host (lowercase, no
 * user information, no port, an IPv6 literal with its brackets). A data: URL
 * has no host; a URL without a scheme has neither. Never fails.
 * @scheme, @host: (out) (transfer full) (nullable). */
void eb_log_url_origin (const char *url, char **scheme, char **host);

/* Append " KEY=VALUE" to @line (no space when @line is empty). VALUE is
 * written as it is when it is made of printable characters other than space,
 * '"', '=' and '\\'; otherwise it is quoted ("...") with '"' and '\\' escaped
 * as \" and \\, control characters as \n, \r, \t or \xHH, and bytes that are
 * not UTF-8 as \xHH. An empty VALUE is "". At most 256 bytes of VALUE are
 * written, then "...". */
void eb_log_append_pair (GString *line, const char *key, const char *value);

/* --- records, for eb-log-message ------------------------------------------- */

/* A record's fields: key, value, key, value, ... (values owned). */
typedef GPtrArray EbLogPairs;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbLogPairs, g_ptr_array_unref)

EbLogPairs *eb_log_pairs_new (void);
/* Add @key=@value; nothing when @value is NULL. */
void eb_log_pairs_add (EbLogPairs *p, const char *key, const char *value);
void eb_log_pairs_add_uint (EbLogPairs *p, const char *key, guint64 n);

/* Send @text (nullable) followed by @pairs (nullable) as one record at
 * @priority: a line for syslog and standard error, fields EXTBODY_<KEY> for
 * the journal. */
void eb_log_emit (int priority, const char *text, const EbLogPairs *pairs);

G_END_DECLS
