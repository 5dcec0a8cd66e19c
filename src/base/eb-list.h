/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-list.h - the list values of the configuration, parsed.
 *
 * Every list key of the configuration (extbody.conf(5)) has one syntax:
 * items separated by a comma, white space, or both. This module is the one
 * place that reads it, below both the configuration (eb-config, which checks
 * list keys with it when they are loaded or set) and the fetch policy
 * (eb-policy, which takes the typed lists, never text). It depends only on
 * the CIDR block type of eb-policy.h and on eb-error.
 */
#pragma once

#include <glib.h>
#include "eb-policy.h"

G_BEGIN_DECLS

/* The one list syntax of every list key: items separated by a comma, white
 * space, or both; an empty or all-white-space value is an empty list; an empty
 * item (",a", "a,,b", "a,") is an error (EB_ERROR_EMPTY).
 * Returns: (transfer full) (element-type utf8) (nullable): NULL on error. */
GPtrArray *eb_list_split (const char *text, GError **error);

/* Parse a list of CIDR blocks such as "127.0.0.0/8, ::1/128" or "10.0.0.0/8
 * 192.168.0.0/16": items are separated by a comma, white space, or a comma with
 * white space around it. An empty or all-white-space value is an empty list.
 * Errors: EB_ERROR_EMPTY for an empty item (",a", "a,,b", "a,"), or the
 * eb_policy_cidr_parse() error of the first bad item, prefixed with its position.
 * @out: (transfer full): a GPtrArray of EbCidr *, freeing its elements; set
 * only on success. */
gboolean eb_list_parse_cidrs (const char *text, GPtrArray **out, GError **error);

/* Parse a port list such as "80, 443, 21" with the same separators. Each port
 * is decimal 1..65535 without sign or leading zeros (EB_ERROR_SYNTAX otherwise).
 * @out: (transfer full): a GArray of guint16; set only on success. */
gboolean eb_list_parse_ports (const char *text, GArray **out, GError **error);

/* Domain patterns as the fetch policy compares them (allow_domains,
 * deny_domains): each of @items lowercased, without leading or trailing
 * dots; an item that is only dots is dropped.
 * Returns: (transfer full): a NULL-terminated vector, never NULL. */
GStrv eb_list_domains (const char *const *items);

G_END_DECLS
