/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-transfer.h - Content-Transfer-Encoding: decode what the inner header
 * declares, encode what mail transport needs.
 *
 * RFC 2046 section 5.2.3.7: the inner header's Content-Transfer-Encoding declares
 * the encoding of the retrieved data itself. Absent means 7bit; 7bit, 8bit and
 * binary are the identity. The replacement part is encoded afresh for transport:
 * text as 7bit when it is clean, otherwise quoted-printable; everything else as
 * base64; never 8bit or binary.
 */
#pragma once
#include <gio/gio.h>

G_BEGIN_DECLS

typedef enum {
  EB_CTE_IDENTITY,   /* absent, 7bit, 8bit, binary */
  EB_CTE_BASE64,
  EB_CTE_QP,
  EB_CTE_UNKNOWN,
} EbCte;

/* The encoding named by a Content-Transfer-Encoding value (NULL: absent). */
EbCte eb_transfer_parse_cte (const char *value);

/* Decode @data under @cte. base64 must be well-formed (alphabet, white space and
 * final padding only); quoted-printable must have only =XX (either case) and soft
 * line breaks after '='. Returns: (transfer full) (nullable): NULL with
 * EB_ERROR_SYNTAX when @data does not decode. */
GBytes *eb_transfer_decode (EbCte cte, GBytes *data, GError **error);

typedef enum {
  EB_OUT_7BIT,
  EB_OUT_QP,
  EB_OUT_BASE64,
} EbOutEncoding;

/* Can @data go out as 7bit text lines: no NUL, no octet above 127, CR only
 * before LF, lines of at most 998 octets, and no line starting with "--" or
 * "From ", ">From ", ">>From " ... (which could end an enclosing multipart, or
 * be mangled by an mbox or unquoted by an mboxrd reader)? */
gboolean eb_transfer_is_clean_7bit (const guint8 *data, gsize len);

/* The transport encoding for a part: @is_text selects 7bit-or-QP, else base64. */
EbOutEncoding eb_transfer_choose (gboolean is_text, const guint8 *data, gsize len);

/* "7bit", "quoted-printable" or "base64". */
const char *eb_transfer_name (EbOutEncoding enc);

/* Write @data encoded with @enc to @out, lines ending in @eol. 7bit text has its
 * line breaks (LF or CRLF) turned into @eol; quoted-printable keeps line breaks
 * as hard breaks and soft-breaks lines at 76 columns; base64 writes 76-column
 * lines and ends with @eol. */
gboolean eb_transfer_write (EbOutEncoding enc, const guint8 *data, gsize len,
                            const char *eol, GOutputStream *out, GError **error);

/* The length eb_transfer_write would write. */
guint64 eb_transfer_encoded_length (EbOutEncoding enc, const guint8 *data, gsize len,
                                    const char *eol);

G_END_DECLS
