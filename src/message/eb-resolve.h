/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-resolve.h - decide what becomes of one reference, and build its replacement.
 *
 * For a reference that can be resolved: the data (a data: URL, processed by the
 * WHATWG processor), its agreement with the inner header's type (RFC 2017 section
 * 3), its decoding under the inner Content-Transfer-Encoding (RFC 2046 5.2.3.7),
 * the limits, and the text of the new header, built from the raw inner header in
 * the message's own line ending. Nothing here writes to the message.
 *
 * The new header, for a part inside a multipart: the inner header's fields as
 * written (its Content-Transfer-Encoding replaced), a Content-Type from the data
 * when the inner header has none, the outer fields the inner header lacks (not
 * the outer Content-Type or Content-Transfer-Encoding), the new
 * Content-Transfer-Encoding, and the trace field X-Extbody-Resolved. For the body
 * of a message (RFC 2046 5.2.3.7 merge): the message's own fields except its
 * Content-* fields, then the same content fields. For a reference in the
 * fallback shape (EbRef alt: the last of a two-part multipart/alternative after
 * text/plain, marked as extbody's), which replaces the whole alternative: the
 * alternative's own fields except its Content-* fields and EB_FALLBACK_FIELD
 * (for the body of a message: the message header, as above), then the fields
 * the bare reference would get, with the part's content fields externalize left
 * on the alternative (Content-Location...) unless the inner header has them.
 */
#pragma once
#include <glib.h>
#include "eb-config.h"
#include "eb-extref.h"
#include "eb-transfer.h"
#include "eb-fetch.h"
#include "eb-resolution.h"
#include "eb-action.h"

G_BEGIN_DECLS

/* EbResolution is in eb-resolution.h, EbAction in eb-action.h. */

/* Decide about @ref: leave it (a walk limit, an unreadable reference, fetching
 * off, a scheme not allowed, a size parameter over max_part_bytes, an
 * access-type never acted on, ...), take a data: URL's data, fetch a URL, or
 * read a local file. An expiration in the past is no reason to leave (RFC 2046
 * 5.2.3.1: the data is no longer guaranteed, not forbidden): a failed fetch of
 * such a reference is reported as expired by eb_resolve().
 * Returns: (transfer full): never NULL. */
EbAction *eb_resolve_decide (const EbRef *ref, const EbConfig *config);

/* Build the replacement of @ref, a reference in @buf (@len bytes) whose line
 * ending is @eol, as decided by @action (from eb_resolve_decide). @fetched is
 * the result of executing a FETCH or LOCAL_FILE action, or NULL when it was not
 * executed (inspect without fetching: the reference is left would-fetch).
 * @budget counts the decoded bytes resolved so far in this message and is
 * increased when this one is resolved.
 * Returns: (transfer full): never NULL. */
EbResolution *eb_resolve (const EbRef *ref, const EbAction *action, const char *buf, gsize len,
                          const char *eol, const EbConfig *config,
                          const EbFetchResult *fetched, guint64 *budget);

/* Is @scheme in allow_schemes? */
gboolean eb_resolve_scheme_allowed (const EbConfig *config, const char *scheme);

/* Does @ref carry an expiration parameter that lies in the past? */
gboolean eb_resolve_expired (const EbRef *ref);

/* Is @scheme (lowercase or not) one extbody can fetch: one whose row
 * (eb-scheme.h) says libcurl or the NNTP client fetches it? */
gboolean eb_resolve_scheme_fetchable (const char *scheme);

G_END_DECLS
