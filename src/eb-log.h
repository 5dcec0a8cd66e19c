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
#include "eb-rewrite.h"

G_BEGIN_DECLS

typedef enum {
  EB_LOG_STDERR,   /* "IDENT: message" on standard error */
  EB_LOG_SYSLOG,   /* syslog(3), facility mail, LOG_PID */
} EbLogTarget;

/* Install the writer (the first call) and choose where records go: the
 * journal when standard error is the journal, else @target. @ident: the
 * program name ("extbody-milter"). Call it before any thread starts; a later
 * call (single-threaded) switches the target, as a daemon does when it detaches. */
void eb_log_init (const char *ident, EbLogTarget target);

/* "stderr" or "syslog" as a target; FALSE for anything else. */
gboolean eb_log_parse_target (const char *name, EbLogTarget *target);

/* One line of text at syslog @priority (LOG_ERR, LOG_INFO, ...). */
void eb_log (int priority, const char *format, ...) G_GNUC_PRINTF (2, 3);

/* The start line, at LOG_INFO: "start version=... gmime=... glib=... libcurl=..."
 * then the NULL-terminated @key, value, ... pairs given (a NULL value skips its
 * pair), e.g. eb_log_start ("socket", spec, "fetch", "off", NULL). */
void eb_log_start (const char *key, ...) G_GNUC_NULL_TERMINATED;

/* The versions of extbody and the libraries it runs with, as key=value pairs:
 * "version=0.1.0 gmime=3.2.13 glib=2.74.6 libcurl=7.88.1".
 * Returns: (transfer full). */
char *eb_log_versions (void);

/* The per-message record of @result, at LOG_INFO, when the message had
 * references, was left alone as a whole, or had trace fields removed: one line
 * for the message
 *   queue_id=ID msgid=<M> references=N resolved=N changed=yes|no
 *     [reason=TOKEN] [trace_removed=N]
 * and one per reference
 *   queue_id=ID msgid=<M> ref=I part=1.2 access_type=url scheme=https
 *     host=files.example.org outcome=resolved|left [reason=TOKEN]
 *     [type=image/png bytes=N]
 * @queue_id, @message_id (nullable): left out when NULL. */
void eb_log_message (const char *queue_id, const char *message_id, const EbRewriteResult *result);

/* The Message-ID of the message planned in @result (@buf, @len as given to
 * eb_rewrite_plan), unfolded, or NULL. Returns: (transfer full) (nullable). */
char *eb_log_message_id (const EbRewriteResult *result, const char *buf, gsize len);

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

G_END_DECLS
