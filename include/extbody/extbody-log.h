/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody-log.h - logging: syslog, journald or standard error, one line per message.
 *
 * Part of libextbody's public API; include <extbody/extbody.h>, which
 * includes every header of the API. */
#pragma once
#include <extbody/extbody-base.h>
#include <extbody/extbody-plan.h>

G_BEGIN_DECLS

/**
 * SECTION:extbody-log
 * @title: Logging
 * @short_description: logging: syslog, journald or standard error, one line per message
 * @include: extbody/extbody.h
 */

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
 * @ident: the program name ("extbodyd")
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
 * @plan: the message's plan
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
                                 const EbPlan *plan);


/* Sections are added by module: configuration, reasons, fetcher, rewrite,
 * inspect, batch and statistics. */

G_END_DECLS
