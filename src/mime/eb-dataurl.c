/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-dataurl.c - the WHATWG Fetch data: URL processor, with Infra's
 * forgiving-base64 decode (the contract is in eb-dataurl.h).
 *
 * The standards describe three passes: the URL parser (which trims the input,
 * removes ASCII tabs and newlines, percent-encodes, and splits off the
 * fragment), the URL serializer with "exclude fragment", and the data: URL
 * processor (which splits at the first comma, percent-decodes the body and
 * perhaps forgiving-base64 decodes it). This module gets the same results with
 * one pass over the body:
 *
 *  - A URL with an opaque path (the usual "data:type,body") is not serialized
 *    as a whole. The serializer percent-encodes only bytes that are neither '%'
 *    nor hex digits, and the processor percent-decodes the body, so the body
 *    decodes to the same bytes as the raw input with tabs and newlines skipped.
 *    Only the MIME type part, which the processor does not decode, is
 *    serialized (it ends at the first comma, and is short).
 *  - A URL whose path starts with '/' ("data:/p" or "data://host/p") goes
 *    through a small parser for non-special URLs (authority, opaque or IPv6
 *    host, port, path with dot segments, query) and the serializer, and the
 *    processor runs on that string.
 *
 * The body decoders (percent-decoding, and percent-decoding fused with
 * forgiving-base64) skip tabs and newlines as the URL parser would have removed
 * them, write into one buffer allocated from an upper bound (the body length,
 * or 3/4 of it for base64) and shrink it once at the end. The base64 loop takes
 * four characters at a time through a 256-entry table and falls back to one at
 * a time for white space, '=', "%XX" and errors. Linear time throughout.
 */
#include "eb-dataurl.h"
#include "eb-error.h"
#include "eb-scheme.h"
#include <string.h>

void
eb_data_url_free (EbDataUrl *du)
{
  if (!du)
    return;
  if (du->mime_type)
    eb_mime_type_free (du->mime_type);
  if (du->body)
    g_bytes_unref (du->body);
  g_free (du);
}

static void
set_error (GError **error, const char *message)
{
  g_set_error_literal (error, EB_ERROR, EB_ERROR_DATA_URL, message);
}

/* ---- cursors ------------------------------------------------------------ */

/* A read position in the bytes [p, end). */
typedef struct {
  const char *p;
  const char *end;
} Cursor;

/* The byte at the cursor (0..255), or -1 at the end. */
static inline int
cursor_peek (const Cursor *c)
{
  return c->p < c->end ? (guchar) *c->p : -1;
}

static inline gboolean
is_tab_or_newline (int ch)
{
  return ch == '\t' || ch == '\n' || ch == '\r';
}

/* The URL parser removes every ASCII tab and newline before it starts. */
static inline void
cursor_skip_tab_newline (Cursor *c)
{
  while (c->p < c->end && is_tab_or_newline ((guchar) *c->p))
    c->p++;
}

/* The next byte as the URL parser sees it (tabs and newlines removed), or -1. */
static inline int
cursor_next (Cursor *c)
{
  cursor_skip_tab_newline (c);
  return c->p < c->end ? (guchar) *c->p++ : -1;
}

/* Advance to the first '/' or '?', or to the end. */
static inline void
cursor_skip_to_slash_or_query (Cursor *c)
{
  while (c->p < c->end && *c->p != '/' && *c->p != '?')
    c->p++;
}

static inline int
hexval (int ch)
{
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

/* If the cursor (just after a '%') is at two hex digits, possibly with tabs and
 * newlines among them, consume them and return the byte; else return -1 and
 * leave the cursor alone. */
static inline int
cursor_take_hex_pair (Cursor *c)
{
  Cursor look = *c;
  int hi = hexval (cursor_next (&look));
  if (hi < 0)
    return -1;
  int lo = hexval (cursor_next (&look));
  if (lo < 0)
    return -1;
  *c = look;
  return hi << 4 | lo;
}

static gboolean
valid_utf8 (const char *s, gsize n)
{
  /* ASCII, eight bytes at a time, before the general check */
  guint64 acc = 0;
  gsize i = 0;
  for (; i + 8 <= n; i += 8) {
    guint64 x;
    memcpy (&x, s + i, 8);
    acc |= x;
  }
  for (; i < n; i++)
    acc |= (guchar) s[i];
  if (!(acc & G_GUINT64_CONSTANT (0x8080808080808080)))
    return TRUE;
  return eb_mimetype_utf8_validate_with_nul (s, n);
}

/* ---- percent-encoding --------------------------------------------------- */

typedef enum {
  SET_C0,        /* C0 control percent-encode set */
  SET_QUERY,     /* query percent-encode set */
  SET_PATH,      /* path percent-encode set */
  SET_USERINFO,  /* userinfo percent-encode set */
} PctSet;

/* Is byte @c in @set? Every byte of a non-ASCII code point's UTF-8 is >= 0x80
 * and so in every set: encoding byte by byte is UTF-8 percent-encoding. */
static gboolean
in_set (guchar c, PctSet set)
{
  if (c < 0x20 || c > 0x7E)
    return TRUE;
  if (set == SET_C0)
    return FALSE;
  if (c == ' ' || c == '"' || c == '#' || c == '<' || c == '>')
    return TRUE;
  if (set == SET_QUERY)
    return FALSE;
  if (c == '?' || c == '^' || c == '`' || c == '{' || c == '}')
    return TRUE;
  if (set == SET_PATH)
    return FALSE;
  return c == '/' || c == ':' || c == ';' || c == '=' || c == '@' || c == '[' || c == '\\'
         || c == ']' || c == '|';
}

static void
append_pct_byte (GString *out, guchar c, PctSet set)
{
  static const char hex[] = "0123456789ABCDEF";
  if (in_set (c, set)) {
    char e[3] = { '%', hex[c >> 4], hex[c & 15] };
    g_string_append_len (out, e, 3);
  } else {
    g_string_append_c (out, (char) c);
  }
}

static void
append_pct (GString *out, const char *s, gsize n, PctSet set)
{
  for (gsize i = 0; i < n; i++)
    append_pct_byte (out, (guchar) s[i], set);
}

/* ---- the URL parser: scheme --------------------------------------------- */

/* Trim C0 controls and spaces at both ends of @c, parse the scheme, and leave
 * the cursor after the ':'. Failure unless the scheme is data, the one whose
 * URL carries the data (EB_SCHEME_INLINE, eb-scheme.h). */
static gboolean
parse_scheme (Cursor *c, GError **error)
{
  while (c->p < c->end && (guchar) *c->p <= 0x20)
    c->p++;
  while (c->end > c->p && (guchar) c->end[-1] <= 0x20)
    c->end--;

  char scheme[4];
  gsize n = 0;
  int ch = cursor_next (c);
  if (ch < 0 || !g_ascii_isalpha (ch)) {
    set_error (error, "not a data: URL");
    return FALSE;
  }
  for (;;) {
    if (n < sizeof scheme)
      scheme[n] = g_ascii_tolower ((char) ch);
    n++;
    ch = cursor_next (c);
    if (ch == ':')
      break;
    if (ch < 0 || !(g_ascii_isalnum (ch) || ch == '+' || ch == '-' || ch == '.')) {
      set_error (error, "not a data: URL");
      return FALSE;
    }
  }
  const EbScheme *row = n <= sizeof scheme ? eb_scheme_lookup_len (scheme, n) : NULL;
  if (!row || row->by != EB_SCHEME_INLINE) {
    set_error (error, "not a data: URL");
    return FALSE;
  }
  return TRUE;
}

/* ---- the URL parser: opaque path ---------------------------------------- */

/* Append the serialization of [s, e), a prefix of an opaque path and maybe
 * query that is followed by neither '?' nor '#' (it ends at the comma). */
static void
serialize_opaque_prefix (const char *s, const char *e, GString *out)
{
  Cursor c = { s, e };
  gboolean query = FALSE;
  int ch;
  while ((ch = cursor_next (&c)) >= 0) {
    if (query) {
      append_pct_byte (out, (guchar) ch, SET_QUERY);
    } else if (ch == '?') {
      query = TRUE;
      g_string_append_c (out, '?');
    } else if (ch == ' ') {
      /* a space right before the query (or fragment) is encoded, so that an
       * opaque path never ends in a space */
      Cursor look = c;
      g_string_append (out, cursor_next (&look) == '?' ? "%20" : " ");
    } else {
      append_pct_byte (out, (guchar) ch, SET_C0);
    }
  }
}

/* ---- the URL parser: authority, host, port, path ------------------------ */

static gboolean
is_forbidden_host_code_point (guchar c)
{
  return c == 0 || c == '\t' || c == '\n' || c == '\r' || c == ' ' || c == '#' || c == '/'
         || c == ':' || c == '<' || c == '>' || c == '?' || c == '@' || c == '[' || c == '\\'
         || c == ']' || c == '^' || c == '|';
}

/* The URL standard's IPv6 parser on [s, s + n) (inside the brackets). */
static gboolean
parse_ipv6 (const char *s, gsize n, guint16 address[8])
{
  Cursor c = { s, s + n };
  int piece = 0, compress = -1;
  memset (address, 0, 8 * sizeof address[0]);

  if (cursor_peek (&c) == ':') {
    if (n < 2 || s[1] != ':')
      return FALSE;
    c.p += 2;
    compress = ++piece;
  }
  while (cursor_peek (&c) >= 0) {
    if (piece == 8)
      return FALSE;
    if (cursor_peek (&c) == ':') {
      if (compress >= 0)
        return FALSE;
      c.p++;
      compress = ++piece;
      continue;
    }
    guint value = 0, length = 0;
    while (length < 4 && hexval (cursor_peek (&c)) >= 0) {
      value = value * 16 + (guint) hexval (cursor_peek (&c));
      c.p++;
      length++;
    }
    if (cursor_peek (&c) == '.') {
      /* an IPv4 address in the last two pieces */
      if (length == 0)
        return FALSE;
      c.p -= length;
      if (piece > 6)
        return FALSE;
      int seen = 0;
      while (cursor_peek (&c) >= 0) {
        int v4 = -1;
        if (seen > 0) {
          if (cursor_peek (&c) == '.' && seen < 4)
            c.p++;
          else
            return FALSE;
        }
        if (!g_ascii_isdigit (cursor_peek (&c)))
          return FALSE;
        while (g_ascii_isdigit (cursor_peek (&c))) {
          int digit = cursor_peek (&c) - '0';
          if (v4 < 0)
            v4 = digit;
          else if (v4 == 0)
            return FALSE;
          else
            v4 = v4 * 10 + digit;
          if (v4 > 255)
            return FALSE;
          c.p++;
        }
        address[piece] = (guint16) (address[piece] * 0x100 + v4);
        seen++;
        if (seen == 2 || seen == 4)
          piece++;
      }
      if (seen != 4)
        return FALSE;
      break;
    } else if (cursor_peek (&c) == ':') {
      c.p++;
      if (cursor_peek (&c) < 0)
        return FALSE;
    } else if (cursor_peek (&c) >= 0) {
      return FALSE;
    }
    address[piece++] = (guint16) value;
  }
  if (compress >= 0) {
    int swaps = piece - compress;
    piece = 7;
    while (piece != 0 && swaps > 0) {
      guint16 t = address[piece];
      address[piece] = address[compress + swaps - 1];
      address[compress + swaps - 1] = t;
      piece--;
      swaps--;
    }
  } else if (piece != 8) {
    return FALSE;
  }
  return TRUE;
}

/* The URL standard's IPv6 serializer, with the brackets. */
static void
append_ipv6 (GString *out, const guint16 address[8])
{
  /* the first longest run of two or more zero pieces is compressed */
  int compress = -1, best = 1;
  for (int i = 0; i < 8;) {
    int j = i;
    while (j < 8 && address[j] == 0)
      j++;
    if (j - i > best) {
      compress = i;
      best = j - i;
    }
    i = j > i ? j : i + 1;
  }
  g_string_append_c (out, '[');
  gboolean ignore0 = FALSE;
  for (int i = 0; i < 8; i++) {
    if (ignore0 && address[i] == 0)
      continue;
    ignore0 = FALSE;
    if (compress == i) {
      g_string_append (out, i == 0 ? "::" : ":");
      ignore0 = TRUE;
      continue;
    }
    g_string_append_printf (out, "%x", address[i]);
    if (i != 7)
      g_string_append_c (out, ':');
  }
  g_string_append_c (out, ']');
}

/* The host parser for a non-special URL (IPv6 or opaque host). */
static gboolean
parse_host (const char *h, gsize n, GString *out, GError **error)
{
  if (n > 0 && h[0] == '[') {
    guint16 address[8];
    if (n < 2 || h[n - 1] != ']' || !parse_ipv6 (h + 1, n - 2, address)) {
      set_error (error, "URL parser failure: invalid IPv6 host");
      return FALSE;
    }
    append_ipv6 (out, address);
    return TRUE;
  }
  for (gsize i = 0; i < n; i++) {
    if (is_forbidden_host_code_point ((guchar) h[i])) {
      set_error (error, "URL parser failure: forbidden host code point");
      return FALSE;
    }
  }
  append_pct (out, h, n, SET_C0);
  return TRUE;
}

/* Authority state to the end of the port state: @c is after "//". */
static gboolean
parse_authority (Cursor *c, GString *out, GError **error)
{
  const char *a = c->p;
  cursor_skip_to_slash_or_query (c);
  const char *a_end = c->p;

  g_string_append (out, "//");
  const char *h = a;
  const char *at = memrchr (a, '@', (gsize) (a_end - a));
  if (at) {
    /* every '@' but the last belongs to the userinfo; the first ':' splits it */
    h = at + 1;
    if (h == a_end) {
      set_error (error, "URL parser failure: credentials without a host");
      return FALSE;
    }
    const char *colon = memchr (a, ':', (gsize) (at - a));
    const char *u_end = colon ? colon : at;
    gsize start = out->len;
    append_pct (out, a, (gsize) (u_end - a), SET_USERINFO);
    if (colon && colon + 1 < at) {
      g_string_append_c (out, ':');
      append_pct (out, colon + 1, (gsize) (at - colon - 1), SET_USERINFO);
    }
    if (out->len > start)
      g_string_append_c (out, '@');
  }

  /* the host ends at the first ':' outside brackets */
  const char *port = NULL;
  gboolean in_brackets = FALSE;
  for (const char *q = h; q < a_end && !port; q++) {
    if (*q == '[')
      in_brackets = TRUE;
    else if (*q == ']')
      in_brackets = FALSE;
    else if (*q == ':' && !in_brackets)
      port = q;
  }
  const char *h_end = port ? port : a_end;
  if (port && h_end == h) {
    set_error (error, "URL parser failure: port without a host");
    return FALSE;
  }
  if (!parse_host (h, (gsize) (h_end - h), out, error))
    return FALSE;

  if (port && port + 1 < a_end) {
    guint value = 0;
    for (const char *q = port + 1; q < a_end; q++) {
      if (!g_ascii_isdigit (*q) || (value = value * 10 + (guint) (*q - '0')) > 65535) {
        set_error (error, "URL parser failure: invalid port");
        return FALSE;
      }
    }
    g_string_append_printf (out, ":%u", value);
  }
  return TRUE;
}

static gboolean
is_single_dot (const char *s, gsize n)
{
  return (n == 1 && s[0] == '.') || (n == 3 && g_ascii_strncasecmp (s, "%2e", 3) == 0);
}

static gboolean
is_double_dot (const char *s, gsize n)
{
  if (n == 2)
    return s[0] == '.' && s[1] == '.';
  if (n == 4)
    return (s[0] == '.' && is_single_dot (s + 1, 3)) || (is_single_dot (s, 3) && s[3] == '.');
  if (n == 6)
    return is_single_dot (s, 3) && is_single_dot (s + 3, 3);
  return FALSE;
}

/* Path state, up to '?' or the end: each segment is appended to @out as "/seg";
 * @starts holds where each one starts, so ".." can drop the last. */
static void
parse_path (Cursor *c, gboolean has_host, GString *out)
{
  gsize base = out->len;
  g_autoptr (GArray) starts = g_array_new (FALSE, FALSE, sizeof (gsize));
  for (;;) {
    const char *s = c->p;
    cursor_skip_to_slash_or_query (c);
    gsize n = (gsize) (c->p - s);
    gboolean last = cursor_peek (c) != '/';
    gboolean dotdot = is_double_dot (s, n);
    if (dotdot && starts->len > 0) {
      g_string_truncate (out, g_array_index (starts, gsize, starts->len - 1));
      g_array_set_size (starts, starts->len - 1);
    }
    if (dotdot || is_single_dot (s, n)) {
      if (last) {
        g_array_append_val (starts, out->len);
        g_string_append_c (out, '/');
      }
    } else {
      g_array_append_val (starts, out->len);
      g_string_append_c (out, '/');
      append_pct (out, s, n, SET_PATH);
    }
    if (last)
      break;
    c->p++;
  }
  /* without a host, a path whose first segment is empty would read as an
   * authority: the serializer puts "/." before it */
  if (!has_host && starts->len > 1
      && g_array_index (starts, gsize, 1) == g_array_index (starts, gsize, 0) + 1)
    g_string_insert (out, (gssize) base, "/.");
}

/* Path-or-authority state onwards, for a URL whose tabs and newlines are gone
 * and whose fragment is cut off: @c is at the '/' after "data:". Appends the
 * serialization of the rest to @out. */
static gboolean
serialize_hierarchical (Cursor *c, GString *out, GError **error)
{
  c->p++;
  if (cursor_peek (c) == '/') {
    c->p++;
    if (!parse_authority (c, out, error))
      return FALSE;
    /* path start state: the authority ended at '/', '?' or the end */
    if (cursor_peek (c) == '/') {
      c->p++;
      parse_path (c, TRUE, out);
    }
  } else {
    parse_path (c, FALSE, out);
  }
  if (cursor_peek (c) == '?') {
    c->p++;
    g_string_append_c (out, '?');
    append_pct (out, c->p, (gsize) (c->end - c->p), SET_QUERY);
    c->p = c->end;
  }
  return TRUE;
}

/* ---- forgiving-base64 and percent-decoding ------------------------------ */

enum {
  XX = 0xFF,  /* not allowed */
  PA = 64,    /* '=' */
  SP = 65,    /* ASCII whitespace */
  PC = 66,    /* '%' */
};

/* The value of each base64 alphabet byte, or its class. */
static const guint8 b64_table[256] = {
  XX, XX, XX, XX, XX, XX, XX, XX, XX, SP, SP, XX, SP, SP, XX, XX,
  XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
  SP, XX, XX, XX, XX, PC, XX, XX, XX, XX, XX, 62, XX, XX, XX, 63,
  52, 53, 54, 55, 56, 57, 58, 59, 60, 61, XX, XX, XX, PA, XX, XX,
  XX,  0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14,
  15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, XX, XX, XX, XX, XX,
  XX, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
  41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, XX, XX, XX, XX, XX,
  XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
  XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
  XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
  XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
  XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
  XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
  XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
  XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
};

/* Wrap the first @n bytes of @buf (allocated for @cap) without copying. */
static GBytes *
bytes_take (guint8 *buf, gsize n, gsize cap)
{
  if (n == 0) {
    g_free (buf);
    return g_bytes_new (NULL, 0);
  }
  if (n < cap)
    buf = g_realloc (buf, n);
  return g_bytes_new_take (buf, n);
}

/* Forgiving-base64 decode of [in, in + len) or, when @url, of the
 * percent-decoding of those bytes with tabs and newlines removed first (a
 * data: URL body). NULL for failure. Each output byte takes at least 4/3 input
 * bytes, so 3/4 of the input (rounded up) bounds the output. */
static GBytes *
base64_decode (const char *in, gsize len, gboolean url)
{
  const guchar *s = (const guchar *) in;
  gsize cap = len / 4 * 3 + 2;
  guint8 *out = g_malloc (cap);
  gsize i = 0, o = 0;
  guint32 acc = 0;
  guint nbits = 0;   /* bits in acc: 0, 6, 12 or 18 */
  guint pads = 0;    /* '=' seen: nothing but white space may follow */

  while (i < len) {
    if (nbits == 0 && pads == 0) {
      /* four alphabet bytes at a time */
      while (i + 4 <= len) {
        guint32 a = b64_table[s[i]], b = b64_table[s[i + 1]];
        guint32 c = b64_table[s[i + 2]], d = b64_table[s[i + 3]];
        if ((a | b | c | d) >= 64)
          break;
        guint32 v = a << 18 | b << 12 | c << 6 | d;
        out[o] = (guint8) (v >> 16);
        out[o + 1] = (guint8) (v >> 8);
        out[o + 2] = (guint8) v;
        o += 3;
        i += 4;
      }
      if (i >= len)
        break;
    }
    /* one byte at a time */
    guint ch = s[i++];
    if (url && ch == '%') {
      Cursor c = { (const char *) s + i, (const char *) s + len };
      int byte = cursor_take_hex_pair (&c);
      if (byte < 0)
        goto fail;   /* a literal '%' is not in the alphabet */
      ch = (guint) byte;
      i = (gsize) ((const guchar *) c.p - s);
    }
    guint v = b64_table[ch];
    if (v < 64) {
      if (pads)
        goto fail;
      acc = acc << 6 | v;
      nbits += 6;
      if (nbits == 24) {
        out[o] = (guint8) (acc >> 16);
        out[o + 1] = (guint8) (acc >> 8);
        out[o + 2] = (guint8) acc;
        o += 3;
        acc = 0;
        nbits = 0;
      }
    } else if (v == PA) {
      pads++;
    } else if (v != SP) {
      goto fail;   /* outside the alphabet, or a '%' (from "%25" too) */
    }
  }

  /* With white space removed: one or two '=' may end a string whose length is
   * a multiple of 4 (they are removed); then a length of 1 modulo 4 fails. */
  gsize count = o / 3 * 4 + nbits / 6;
  if (pads > 2 || (pads && (count + pads) % 4 != 0) || count % 4 == 1)
    goto fail;
  /* 12 bits left: discard the last 4; 18 bits: discard the last 2 */
  if (nbits == 12) {
    out[o++] = (guint8) (acc >> 4);
  } else if (nbits == 18) {
    out[o++] = (guint8) (acc >> 10);
    out[o++] = (guint8) (acc >> 2);
  }
  return bytes_take (out, o, cap);

fail:
  g_free (out);
  return NULL;
}

GBytes *
eb_data_url_forgiving_base64_decode (const char *input, gsize len)
{
  g_return_val_if_fail (input != NULL || len == 0, NULL);
  return base64_decode (input ? input : "", len, FALSE);
}

/* Percent-decode [in, in + len) with tabs and newlines removed first. */
static GBytes *
percent_decode (const char *in, gsize len)
{
  guint8 *out = g_malloc (len ? len : 1);
  gsize o = 0;
  Cursor c = { in, in + len };
  while (c.p < c.end) {
    const char *run = c.p;
    while (c.p < c.end && *c.p != '%' && !is_tab_or_newline ((guchar) *c.p))
      c.p++;
    memcpy (out + o, run, (gsize) (c.p - run));
    o += (gsize) (c.p - run);
    if (c.p >= c.end)
      break;
    if (*c.p++ == '%') {
      int byte = cursor_take_hex_pair (&c);
      out[o++] = byte < 0 ? '%' : (guint8) byte;
    }
  }
  return bytes_take (out, o, len ? len : 1);
}

/* ---- the processor ------------------------------------------------------ */

static gboolean
is_ascii_whitespace (guchar c)
{
  return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' ';
}

/* Fetch's data: URL processor from the first comma on: @mime is the serialized
 * part before the comma; @body the part after it, maybe with tabs and newlines
 * (to be skipped), up to the fragment. */
static EbDataUrl *
process (const char *mime, gsize mime_len, const char *body, gsize body_len,
         gboolean check_body_utf8, GError **error)
{
  const char *ms = mime, *me = mime + mime_len;
  while (ms < me && is_ascii_whitespace ((guchar) *ms))
    ms++;
  while (me > ms && is_ascii_whitespace ((guchar) me[-1]))
    me--;

  /* ';', zero or more spaces, "base64" (any case) at the end */
  gboolean b64 = FALSE;
  if (me - ms >= 6 && g_ascii_strncasecmp (me - 6, "base64", 6) == 0) {
    const char *q = me - 6;
    while (q > ms && q[-1] == ' ')
      q--;
    if (q > ms && q[-1] == ';') {
      b64 = TRUE;
      me = q - 1;
    }
  }

  g_autoptr (GBytes) bytes = NULL;
  if (b64) {
    bytes = base64_decode (body, body_len, TRUE);
    if (!bytes) {
      set_error (error, "invalid base64 in data: URL");
      return NULL;
    }
  } else {
    if (check_body_utf8 && !valid_utf8 (body, body_len)) {
      set_error (error, "data: URL is not valid UTF-8");
      return NULL;
    }
    bytes = percent_decode (body, body_len);
  }

  EbDataUrl *du = g_new0 (EbDataUrl, 1);
  du->base64 = b64;
  du->body = g_steal_pointer (&bytes);
  du->type_given = ms < me && *ms != ';';
  if (ms < me && *ms == ';') {
    gsize n = (gsize) (me - ms);
    g_autofree char *mt = g_malloc (10 + n);
    memcpy (mt, "text/plain", 10);
    memcpy (mt + 10, ms, n);
    du->mime_type = eb_mime_type_parse (mt, (gssize) (10 + n));
  } else {
    du->mime_type = eb_mime_type_parse (ms, me - ms);
  }
  if (!du->mime_type)
    du->mime_type = eb_mime_type_new_text_plain ();
  return du;
}

gboolean
eb_data_url_has_scheme (const char *input, gsize len)
{
  gsize i = 0;
  while (i < len && (guchar) input[i] <= 0x20)
    i++;
  return len - i >= 5 && g_ascii_strncasecmp (input + i, "data:", 5) == 0;
}

EbDataUrl *
eb_data_url_process (const char *input, gssize len, GError **error)
{
  g_return_val_if_fail (input != NULL || len == 0, NULL);
  if (!input)
    input = "";
  Cursor c = { input, input + (len < 0 ? strlen (input) : (gsize) len) };
  if (!parse_scheme (&c, error))
    return NULL;

  /* the fragment is excluded; nothing after a '#' can make parsing fail */
  const char *hash = memchr (c.p, '#', (gsize) (c.end - c.p));
  const char *stop = hash ? hash : c.end;
  Cursor look = c;
  cursor_skip_tab_newline (&look);

  if (cursor_peek (&look) != '/') {
    /* opaque path: serialize only the part before the comma */
    const char *comma = memchr (c.p, ',', (gsize) (stop - c.p));
    const char *mime_end = comma ? comma : stop;
    if (!valid_utf8 (c.p, (gsize) (mime_end - c.p)) || !valid_utf8 (stop, (gsize) (c.end - stop))) {
      set_error (error, "data: URL is not valid UTF-8");
      return NULL;
    }
    if (!comma) {
      set_error (error, "data: URL has no comma");
      return NULL;
    }
    g_autoptr (GString) mime = g_string_sized_new ((gsize) (comma - c.p) + 16);
    serialize_opaque_prefix (c.p, comma, mime);
    return process (mime->str, mime->len, comma + 1, (gsize) (stop - comma - 1), TRUE, error);
  }

  /* path or authority: remove tabs and newlines, parse, serialize */
  if (!valid_utf8 (c.p, (gsize) (c.end - c.p))) {
    set_error (error, "data: URL is not valid UTF-8");
    return NULL;
  }
  g_autoptr (GString) clean = g_string_sized_new ((gsize) (stop - c.p));
  int ch;
  Cursor r = { c.p, stop };
  while ((ch = cursor_next (&r)) >= 0)
    g_string_append_c (clean, (char) ch);
  g_autoptr (GString) url = g_string_sized_new (clean->len + 16);
  Cursor u = { clean->str, clean->str + clean->len };
  if (!serialize_hierarchical (&u, url, error))
    return NULL;
  const char *comma = memchr (url->str, ',', url->len);
  if (!comma) {
    set_error (error, "data: URL has no comma");
    return NULL;
  }
  return process (url->str, (gsize) (comma - url->str), comma + 1,
                  url->len - (gsize) (comma + 1 - url->str), FALSE, error);
}

const EbMimeType *
eb_data_url_get_mime_type (const EbDataUrl *du)
{
  g_return_val_if_fail (du != NULL, NULL);
  return du->mime_type;
}

GBytes *
eb_data_url_get_body (const EbDataUrl *du)
{
  g_return_val_if_fail (du != NULL, NULL);
  return du->body;
}

gboolean
eb_data_url_get_base64 (const EbDataUrl *du)
{
  g_return_val_if_fail (du != NULL, FALSE);
  return du->base64;
}
