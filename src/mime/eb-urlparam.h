/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-urlparam.h - the URL parameter of access-type=URL (RFC 2017 section 3.1).
 *
 * Pure. Reassembly starts from the raw Content-Type field value (see
 * eb-params.h), never from GMime's decoded value.
 */
#pragma once
#include <glib.h>
#include "eb-params.h"

G_BEGIN_DECLS

/* Reassemble the URL parameter of the raw Content-Type field value @raw:
 *  - find the parameter named "URL" in any case, plain or as RFC 2231 sections
 *    (URL*0, URL*1*, ...; %XX and the charset form decoded to octets, which are
 *    kept as octets: no charset conversion);
 *  - remove the enclosing quotes (undoing quoted-pairs) and every linear white
 *    space character (SP, HTAB, CR, LF) - this also covers a hyphen at a line
 *    break (RFC 2017 says the hyphen is part of the URL);
 *  - unwrap an RFC 1738 "<URL:...>" or "<...>" wrapper;
 *  - percent-encode (%XX, uppercase) any SPACE, CTL, '"', '\\' or 8-bit octet
 *    left (RFC 2017 section 3.1 step 1).
 * Ambiguity is an error, never a guess.
 * Returns: (transfer full) (nullable): the URL (NUL-terminated ASCII), or NULL with
 *   EB_ERROR_MISSING      no URL parameter;
 *   EB_ERROR_EMPTY        empty or only white space (or an empty wrapper);
 *   EB_ERROR_AMBIGUOUS    both URL and URL*0 / URL*, two URL parameters, a gap or
 *                         a duplicate among the sections;
 *   EB_ERROR_ENCODED_WORD an RFC 2047 encoded-word (=?charset?B|Q?text?=) inside it;
 *   EB_ERROR_SYNTAX       an unquoted value that is not an RFC 2045 token
 *                         (for instance a bare URL), bad %XX, unterminated quote.
 * The message is one short line that says which. */
char *eb_urlparam_reassemble (const char *raw, gsize len, GError **error);

/* The same from @params, a Content-Type value already parsed (eb_params_parse,
 * or eb_params_parse_only with "url" among its names): same result, same errors. */
char *eb_urlparam_reassemble_params (const EbParams *params, GError **error);

/* The same from the URL parameter's octets as eb_params_get_octets (params,
 * "url", TRUE, ...) gives them (@octets: transfer full), so that a caller can
 * let the parsed list go first: a URL as large as the message is then held
 * twice at most, not three times. */
char *eb_urlparam_reassemble_octets (GBytes *octets, GError **error);

/* Split @url into words of at most @max_word characters (RFC 2017 uses 40).
 * Returns: (transfer full) (element-type utf8): the words, in order. */
GPtrArray *eb_urlparam_split (const char *url, guint max_word);

typedef enum {
  EB_FOLD_NONE,        /* URL="whole" on one line */
  EB_FOLD_SPACE,       /* URL="w1 w2 w3" words separated by one space, no fold */
  EB_FOLD_TAB,         /* URL="w1\tw2" */
  EB_FOLD_LINES,       /* URL="w1<eol>\tw2<eol>\tw3" one word per folded line */
  EB_FOLD_LINES_SPACE, /* like LINES, folded with a single space */
  EB_FOLD_RFC2231,     /* URL*0="w1";<eol>\tURL*1="w2" */
  EB_FOLD_RFC2231_EXT, /* URL*0*=us-ascii''w1%XX;<eol>\tURL*1*=w2 (%XX for
                          every octet outside attribute-char, never split
                          inside a %XX) */
} EbFoldStyle;

/* Format @url as the text of a URL parameter (no leading "; "), split into words
 * of at most @max_word characters with @style, folding with @eol ("\r\n" or
 * "\n"). '"' and '\\' are written as quoted-pairs.
 * Returns: (transfer full). */
char *eb_urlparam_format (const char *url, guint max_word, EbFoldStyle style,
                          const char *eol);

G_END_DECLS
