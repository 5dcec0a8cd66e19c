/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-externalize.h - take large parts out of a message: store them, refer to them.
 *
 * The reverse of the resolver (issue 20). The walk (eb_message_scan_leaves)
 * finds every leaf part and where it lies in the original bytes; the selection
 * keeps the leaves worth storing (externalize_min_size, externalize_types,
 * never text read inline, never under signed, encrypted or related entities);
 * each one is decoded exactly as it is declared (eb-transfer), its SHA-256
 * (with externalize_key its HMAC-SHA256, eb_store_digest) names it in the
 * store (eb_store_put, the only I/O), and once stored and
 * verified it is replaced by a message/external-body reference (access-type=URL,
 * RFC 2017) whose phantom header keeps the part's own content fields as written.
 *
 * The plan is an EbPlan, so every writer of eb-rewrite serves it: each
 * candidate is an EbRef in scan->refs (its header block and extent) with an
 * EbResolution: RESOLVED when externalized, with head = the new header block
 * and its blank line, data = the rest of the replacement (the phantom header
 * and its blank line, or with the fallback the multipart/alternative's body)
 * written as 7bit, trace NULL; or the reason the part stays (store-failed with
 * the store's error, would-externalize, too-deep, cte-invalid, cte-unknown).
 * Parts that are not eligible are not candidates at all.
 *
 * eb_externalize_plan and EbExternalizeFlags are public (extbody.h).
 */
#pragma once
#include <extbody/extbody.h>

G_BEGIN_DECLS

/* Does the media type @type ("type/subtype", any case) match one of the
 * externalize_types patterns @patterns (type/subtype, type/STAR, STAR/STAR)? */
gboolean eb_externalize_type_matches (const char *const *patterns, const char *type);

/* @t as an RFC 5322 date in UTC, English names whatever the locale:
 * "Thu, 01 Jan 2026 00:00:00 +0000". Returns: (transfer full). */
char *eb_externalize_format_date (GDateTime *t);

/* The text of the fallback's text/plain part (lines ending in "\n"): the file
 * name (@filename: control characters removed, made valid UTF-8; nullable),
 * the type, the size, the URL, the SHA-256 (@sha256: nullable, none with
 * externalize_key) and, with @until, the date it is kept until.
 * Returns: (transfer full). */
char *eb_externalize_fallback_text (const char *filename, const char *type, guint64 size,
                                    const char *url, const char *sha256, const char *until);

G_END_DECLS
