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
 * Content-* fields, then the same content fields.
 */
#pragma once
#include <glib.h>
#include "eb-config.h"
#include "eb-extref.h"
#include "eb-transfer.h"
#include "eb-fetch.h"

G_BEGIN_DECLS

#define EB_TRACE_FIELD "X-Extbody-Resolved"

typedef struct {
  EbReason      reason;     /* RESOLVED or why the reference is left alone */
  char         *detail;     /* (nullable) one line with the particulars */
  /* When resolved: */
  GString      *header;     /* the new header block, blank line included */
  GBytes       *data;       /* the decoded data, the new body before encoding */
  EbOutEncoding encoding;   /* its transport encoding */
  char         *type;       /* the new part's media type (essence) */
  char         *sha256;     /* hex SHA-256 of the data */
} EbResolution;

void eb_resolution_free (EbResolution *res);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbResolution, eb_resolution_free)

/* Resolve @ref, a reference in @buf (@len bytes) whose line ending is @eol.
 * @fetched is the result of fetching eb_resolve_fetch_url(@ref), or NULL when
 * nothing was fetched for it. @budget counts the decoded bytes resolved so far in
 * this message and is increased when this one is resolved.
 * Returns: (transfer full): never NULL. */
EbResolution *eb_resolve (const EbRef *ref, const char *buf, gsize len, const char *eol,
                          const EbConfig *config, const EbFetchResult *fetched,
                          guint64 *budget);

/* The URL to fetch for @ref, or NULL when there is nothing to fetch: access-type
 * URL with a scheme other than data:, or anon-ftp (RFC 2046 site, directory,
 * name, mode made into an RFC 1738 ftp URL). When the reference may not be
 * fetched for a reason known before any fetch (a size parameter over
 * max_part_bytes), NULL is returned and *@reason and *@detail are set. An
 * expiration in the past is no such reason (RFC 2046 5.2.3.1: the data is no
 * longer guaranteed, not forbidden): it is fetched, and a failed fetch of it is
 * reported as expired.
 * Returns: (transfer full) (nullable). */
char *eb_resolve_fetch_url (const EbRef *ref, const EbConfig *config, EbReason *reason,
                            char **detail);

/* Does @ref carry an expiration parameter that lies in the past? */
gboolean eb_resolve_expired (const EbRef *ref);

/* Is @scheme (lowercase or not) one extbody can fetch (http, https, ftp)? */
gboolean eb_resolve_scheme_fetchable (const char *scheme);

G_END_DECLS
