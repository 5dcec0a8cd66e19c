/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-mimetype.h - WHATWG MIME types (MIME Sniffing, sections 4.4 and 4.5).
 *
 * Pure: strings in, records out. Strings are UTF-8; the algorithms work on code
 * points, so U+0080..U+00FF (HTTP quoted-string token code points) arrive as
 * two-byte UTF-8 sequences and serialize back the same way.
 */
#pragma once
#include <extbody/extbody.h>

G_BEGIN_DECLS

/* EbMimeType (opaque), eb_mime_type_parse, _copy, _free, _get_essence,
 * _get_parameter, _serialize and eb_mimetype_utf8_validate_with_nul are public
 * (extbody.h). */

/* A new record text/plain;charset=US-ASCII, the data: URL default. */
EbMimeType *eb_mime_type_new_text_plain (void);

/* (transfer none): lowercase ASCII type and subtype. */
const char *eb_mime_type_get_type (const EbMimeType *mt);
const char *eb_mime_type_get_subtype (const EbMimeType *mt);

/* TRUE when the essences are equal. */
gboolean eb_mime_type_essence_equal (const EbMimeType *a, const EbMimeType *b);

/* Parameters in order of first appearance; names are lowercase ASCII. */
guint eb_mime_type_get_n_parameters (const EbMimeType *mt);
void eb_mime_type_get_parameter_at (const EbMimeType *mt, guint i,
                                    const char **name, const char **value);

G_END_DECLS
