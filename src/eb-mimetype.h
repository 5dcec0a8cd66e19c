/* eb-mimetype.h - WHATWG MIME types (MIME Sniffing, sections 4.4 and 4.5).
 *
 * Pure: strings in, records out. Strings are UTF-8; the algorithms work on code
 * points, so U+0080..U+00FF (HTTP quoted-string token code points) arrive as
 * two-byte UTF-8 sequences and serialize back the same way.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

typedef struct _EbMimeType EbMimeType;

/* Parse a MIME type (MIME Sniffing 4.4). @input is UTF-8 of @len bytes (-1:
 * NUL-terminated; with an explicit length it may hold U+0000).
 * Returns: (transfer full) (nullable): the record, or NULL for failure.
 * Invalid UTF-8 is failure. */
EbMimeType *eb_mime_type_parse (const char *input, gssize len);

/* A new record text/plain;charset=US-ASCII, the data: URL default. */
EbMimeType *eb_mime_type_new_text_plain (void);

EbMimeType *eb_mime_type_copy (const EbMimeType *mt);
void eb_mime_type_free (EbMimeType *mt);

/* (transfer none): lowercase ASCII type and subtype. */
const char *eb_mime_type_get_type (const EbMimeType *mt);
const char *eb_mime_type_get_subtype (const EbMimeType *mt);

/* (transfer full): "type/subtype". */
char *eb_mime_type_get_essence (const EbMimeType *mt);

/* TRUE when the essences are equal. */
gboolean eb_mime_type_essence_equal (const EbMimeType *a, const EbMimeType *b);

/* Parameters in order of first appearance; names are lowercase ASCII.
 * (transfer none) (nullable): the value of @name (ASCII lowercase), or NULL. */
const char *eb_mime_type_get_parameter (const EbMimeType *mt, const char *name);
guint eb_mime_type_get_n_parameters (const EbMimeType *mt);
void eb_mime_type_get_parameter_at (const EbMimeType *mt, guint i,
                                    const char **name, const char **value);

/* Serialize (MIME Sniffing 4.5). Returns: (transfer full). */
char *eb_mime_type_serialize (const EbMimeType *mt);

/* Like g_utf8_validate_len(), but U+0000 (a NUL byte) is valid, as it is in the
 * WHATWG algorithms. */
gboolean eb_utf8_validate_with_nul (const char *s, gsize len);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbMimeType, eb_mime_type_free)

G_END_DECLS
