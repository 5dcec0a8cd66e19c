/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* milter-check.h - extbodyd --check-mta USER: reach the daemon's socket
 * as the mail server would, and say in one line what is wrong.
 *
 * `extbodyd -n` checks the configuration; this checks the path mail
 * takes: as USER (the MTA's user: postfix for Postfix, smmsp or root for
 * Sendmail), with USER's groups, connect to the socket the configuration
 * names and negotiate the milter protocol (OPTNEG) as an MTA does. For the
 * user postfix, Postfix's own settings (postconf: smtpd_milters and
 * non_smtpd_milters in main.cf and master.cf, each resolved as its service
 * resolves it, inside the chroot of /var/spool/postfix or not) must name that
 * socket too.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* Run the check of the socket @spec (milter_socket: unix:PATH, local:PATH,
 * /PATH, inet:PORT@ADDRESS, inet6:PORT@ADDRESS) as @user, waiting up to
 * @timeout_s seconds for the socket to appear (a daemon that is starting)
 * and for its answer. Prints one line: "OK: ..." on standard output, or what
 * is wrong on standard error. Called as root, the process becomes @user for
 * good (a one-shot command). Returns: the exit status (sysexits.h): 0;
 * EX_NOUSER; EX_NOPERM (permission denied: the user's groups, or not root);
 * EX_UNAVAILABLE (nothing listens); EX_PROTOCOL (something listens that does
 * not speak the milter protocol); EX_TEMPFAIL (no answer in time); EX_CONFIG
 * (Postfix names another socket, or none). With @if_installed, a @user that
 * does not exist (the mail server is not installed here) is one line and 0. */
int milter_check_mta (const char *spec, const char *user, guint timeout_s, gboolean if_installed);

/* The path a Postfix milter name (unix:PATH or a bare path; inet: gives
 * NULL) reaches, for a service chrooted (@chroot) or not, with
 * @queue_directory as the chroot and the working directory. Pure.
 * Returns: (transfer full) (nullable). */
char *milter_check_postfix_path (const char *name, const char *queue_directory, gboolean chroot);

/* The milter names of a Postfix smtpd_milters or non_smtpd_milters value
 * (separated by commas or white space; "{ name, settings... }" gives name).
 * Pure. Returns: (transfer full). */
GStrv milter_check_postfix_names (const char *value);

G_END_DECLS
