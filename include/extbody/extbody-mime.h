/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody-mime.h - data: URLs, MIME types and the message header.
 *
 * Part of libextbody's public API; include <extbody/extbody.h>, which
 * includes every header of the API. */
#pragma once
#include <extbody/extbody-base.h>

G_BEGIN_DECLS

/**
 * SECTION:extbody-mime
 * @title: MIME types, data URLs, header fields
 * @short_description: data: URLs, MIME types and the message header
 * @include: extbody/extbody.h
 */

/* ---- data: URLs and MIME types ---------------------------------------------- */

/**
 * EbMimeType:
 *
 * A WHATWG MIME type record (MIME Sniffing, section 4). Opaque.
 */
typedef struct _EbMimeType EbMimeType;

/**
 * eb_mime_type_parse:
 * @input: (array length=len): UTF-8
 * @len: its length in bytes, or -1 when it is NUL-terminated (with a length it
 *   may hold U+0000)
 *
 * Parse a MIME type (MIME Sniffing 4.4).
 *
 * Returns: (transfer full) (nullable): the record, or NULL for failure
 *   (invalid UTF-8 included).
 */
EXTBODY_API EbMimeType *eb_mime_type_parse (const char *input, gssize len);

/**
 * eb_mime_type_copy:
 * @mt: a record
 *
 * A copy of @mt.
 *
 * Returns: (transfer full): the copy.
 */
EXTBODY_API EbMimeType *eb_mime_type_copy (const EbMimeType *mt);

/**
 * eb_mime_type_free:
 * @mt: (nullable) (transfer full): a record
 *
 * Free @mt.
 */
EXTBODY_API void eb_mime_type_free (EbMimeType *mt);

/**
 * eb_mime_type_get_essence:
 * @mt: a record
 *
 * The essence, "type/subtype" in lowercase.
 *
 * Returns: (transfer full): the essence.
 */
EXTBODY_API char *eb_mime_type_get_essence (const EbMimeType *mt);

/**
 * eb_mime_type_get_parameter:
 * @mt: a record
 * @name: a parameter name in ASCII lowercase
 *
 * The value of parameter @name.
 *
 * Returns: (transfer none) (nullable): the value, or NULL when absent.
 */
EXTBODY_API const char *eb_mime_type_get_parameter (const EbMimeType *mt, const char *name);

/**
 * eb_mime_type_serialize:
 * @mt: a record
 *
 * Serialize @mt (MIME Sniffing 4.5), such as "text/plain;charset=US-ASCII".
 *
 * Returns: (transfer full): the text.
 */
EXTBODY_API char *eb_mime_type_serialize (const EbMimeType *mt);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbMimeType, eb_mime_type_free)

/**
 * EbDataUrl:
 *
 * The result of the WHATWG data: URL processor: a MIME type and a body. Opaque.
 */
typedef struct _EbDataUrl EbDataUrl;

/**
 * eb_data_url_process:
 * @input: (array length=len): a URL, UTF-8
 * @len: its length in bytes, or -1 when it is NUL-terminated (with a length it
 *   may hold U+0000)
 * @error: return location for a #GError
 *
 * The WHATWG Fetch data: URL processor, after what the URL parser and
 * serializer do to a data: URL.
 *
 * Returns: (transfer full) (nullable): the result, or NULL with
 *   %EB_ERROR_DATA_URL (a one-line message saying why) when the processor
 *   returns failure.
 */
EXTBODY_API EbDataUrl *eb_data_url_process (const char *input, gssize len, GError **error);

/**
 * eb_data_url_get_mime_type:
 * @du: a result
 *
 * The MIME type (text/plain;charset=US-ASCII when the URL named none).
 *
 * Returns: (transfer none): the MIME type.
 */
EXTBODY_API const EbMimeType *eb_data_url_get_mime_type (const EbDataUrl *du);

/**
 * eb_data_url_get_body:
 * @du: a result
 *
 * The body, decoded.
 *
 * Returns: (transfer none): the body.
 */
EXTBODY_API GBytes *eb_data_url_get_body (const EbDataUrl *du);

/**
 * eb_data_url_get_base64:
 * @du: a result
 *
 * Whether the ";base64" form was used.
 *
 * Returns: TRUE when it was.
 */
EXTBODY_API gboolean eb_data_url_get_base64 (const EbDataUrl *du);

/**
 * eb_data_url_free:
 * @du: (nullable) (transfer full): a result
 *
 * Free @du.
 */
EXTBODY_API void eb_data_url_free (EbDataUrl *du);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbDataUrl, eb_data_url_free)

/**
 * eb_mimetype_utf8_validate_with_nul:
 * @s: (array length=len): bytes
 * @len: their number
 *
 * Like g_utf8_validate_len(), except that U+0000 (a NUL byte) is valid, as it
 * is in the WHATWG algorithms.
 *
 * Returns: TRUE when @s is UTF-8.
 */
EXTBODY_API gboolean eb_mimetype_utf8_validate_with_nul (const char *s, gsize len);

/* ---- the message header ------------------------------------------------------ */

/**
 * eb_header_get_value:
 * @buf: (array length=len): a message, from its first header line (no From_ line)
 * @len: its length in bytes
 * @name: a field name, ASCII case-insensitive
 *
 * The first field named @name of the message header, read from the raw bytes:
 * its value unfolded (folds removed, the white space after them kept), with
 * surrounding white space trimmed.
 *
 * Returns: (transfer full) (nullable): the value, or NULL when the header has
 *   no such field.
 */
EXTBODY_API char *eb_header_get_value (const char *buf, gsize len, const char *name);

/**
 * eb_params_content_type_media_type:
 * @value: the value of a Content-Type field, as written (folds and comments
 *   allowed)
 *
 * The media type a Content-Type field names, as extbody reads it.
 *
 * Returns: (transfer full) (nullable): "type/subtype" in ASCII lowercase, or
 *   NULL when the value does not start with a valid type "/" subtype.
 */
EXTBODY_API char *eb_params_content_type_media_type (const char *value);

G_END_DECLS
