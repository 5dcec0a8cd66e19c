/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-dataurl.h - the WHATWG Fetch data: URL processor (Fetch, "data: URLs"),
 * with Infra's forgiving-base64 decode.
 *
 * Pure. eb_data_url_process() first does to its input what the WHATWG URL parser
 * and the URL serializer with "exclude fragment" do to a data: URL (strip leading
 * and trailing C0 controls and spaces, remove ASCII tab and newline, lowercase
 * the scheme, percent-encode per the path/query sets, fail where the URL parser
 * fails), then runs the processor. Decoding is linear in the input and the body
 * is allocated once.
 */
#pragma once
#include <glib.h>
#include "eb-mimetype.h"

G_BEGIN_DECLS

/* EbDataUrl is opaque outside the library; eb_data_url_process, its getters
 * and eb_data_url_free are public (extbody.h). */
struct _EbDataUrl {
  EbMimeType *mime_type;   /* (transfer full) never NULL */
  GBytes     *body;        /* (transfer full) never NULL */
  gboolean    base64;      /* the ";base64" form was used */
  gboolean    type_given;  /* the URL named a MIME type (mimeType was not
                              empty after stripping, and did not start with ';'):
                              when FALSE, mime_type is the default. */
};

/* Infra forgiving-base64 decode of @len bytes of @input.
 * Returns: (transfer full) (nullable): the bytes, or NULL for failure. */
GBytes *eb_data_url_forgiving_base64_decode (const char *input, gsize len);

/* Cheap check: does @input (after leading C0/space) start with "data:" in any case? */
gboolean eb_data_url_has_scheme (const char *input, gsize len);

G_END_DECLS
