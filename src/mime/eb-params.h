/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-params.h - RFC 2045 / RFC 2231 parameters, read from the raw header text.
 *
 * Pure. The input is the raw value of a Content-Type field: every byte after the
 * colon up to the end of the field, folds (CRLF or LF followed by SP/HTAB)
 * included, 8-bit bytes as they are. Never uses GMime's decoded parameters: GMime
 * decodes encoded-words inside quoted strings, joins RFC 2231 sections without
 * checking gaps or duplicates, and keeps "URL" and "url" apart.
 *
 * Grammar: type "/" subtype *( ";" attribute "=" value ), CFWS (white space,
 * folds and RFC 822 comments) allowed between tokens; a value is a token or a
 * quoted-string (backslash quoted-pairs undone); RFC 2231 sections name*N,
 * name*N* and name* are joined in section order, %XX decoded in extended
 * sections, and the charset of section 0 applied (converted to UTF-8 when it is
 * known; otherwise the octets are kept).
 *
 * Reading is lenient for the parameters nobody asks about and strict for the
 * one asked for: a parameter whose name appears both plain and as sections, twice
 * plain, or whose sections have a gap or a duplicate, is *ambiguous*; asking for
 * it gives EB_ERROR_AMBIGUOUS, never a guess. Junk between parameters (a missing
 * ';', stray characters) is skipped to the next ';' and recorded as a warning.
 */
#pragma once
#include <extbody/extbody.h>

G_BEGIN_DECLS

typedef struct _EbParams EbParams;

/* Returns: (transfer full): never NULL. */
EbParams *eb_params_parse (const char *raw, gsize len);
/* The same, keeping only the parameters named in the NULL-terminated @only
 * (ASCII case-insensitive; NULL: all): the others are stepped over, their values
 * never copied. */
EbParams *eb_params_parse_only (const char *raw, gsize len, const char *const *only);
void eb_params_free (EbParams *params);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbParams, eb_params_free)

/* eb_params_content_type_media_type (a copy of this, from a Content-Type value)
 * is public (extbody.h).
 * (transfer none) (nullable): "type/subtype" in ASCII lowercase, or NULL when
 * the field does not start with a valid type "/" subtype. */
const char *eb_params_get_media_type (const EbParams *params);

/* The unfolded value of parameter @name (ASCII case-insensitive), quotes removed,
 * sections joined and decoded.
 * Returns: (transfer none) (nullable): the value; NULL with EB_ERROR_MISSING when
 * absent, EB_ERROR_AMBIGUOUS when ambiguous (the message says how), or
 * EB_ERROR_SYNTAX when its value is malformed (bad %XX, unterminated quote). */
const char *eb_params_get (const EbParams *params, const char *name, GError **error);

/* Distinct parameter names (ASCII lowercase, without section suffixes), in order
 * of first appearance. */
guint eb_params_get_n (const EbParams *params);
const char *eb_params_get_name_at (const EbParams *params, guint i);

/* Whether a value of parameter @name was followed by text that is no
 * parameter before the next ';' (name="a" "b", name="a" b=c): the parser keeps
 * the first value and skips the rest with a warning, a recovery from a missing
 * ';' that a caller may refuse for a value that must be whole (RFC 2017's URL,
 * one quoted string). */
gboolean eb_params_get_junk_after (const EbParams *params, const char *name);

/* (transfer none): NULL-terminated list of warnings, one short line each. */
const char * const *eb_params_get_warnings (const EbParams *params);

G_END_DECLS

G_BEGIN_DECLS
/* For URL reassembly: the octets of parameter @name, sections joined in order,
 * quoted-pairs undone, %XX of extended sections decoded, NO charset conversion.
 * With @strip_lws, every SP, HTAB, CR and LF of the quoted and token parts is
 * removed (RFC 2017 3.1); octets produced by %XX decoding are data and stay.
 * Without it nothing is unfolded. Same errors as eb_params_get.
 * Returns: (transfer full) (nullable). */
GBytes *eb_params_get_octets (const EbParams *params, const char *name, gboolean strip_lws,
                              GError **error);
G_END_DECLS
