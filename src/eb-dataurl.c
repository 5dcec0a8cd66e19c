/* eb-dataurl.c - the WHATWG data: URL processor (see eb-dataurl.h).
 *
 * Two stages:
 *  1. What the URL parser and the serializer with "exclude fragment" do to a
 *     data: URL. Common URLs (an opaque path of printable ASCII, no query) come
 *     out of the serializer as they went in, up to the fragment; they are used in
 *     place, without a copy. Everything else goes through a small parser for
 *     non-special URLs (opaque path, or authority and path) and is serialized.
 *  2. The processor proper, on the serialized URL after "data:": the MIME type
 *     before the first comma, the percent-decoded body, and for ";base64" the
 *     forgiving-base64 decode fused with the percent-decoding, into one buffer
 *     allocated once from an upper bound. Linear time.
 */
#include "eb-dataurl.h"
#include "eb-error.h"
#include <arpa/inet.h>
#include <string.h>

void
eb_data_url_free (EbDataUrl *du)
{
  if (!du)
    return;
  eb_mime_type_free (du->mime_type);
  if (du->body)
    g_bytes_unref (du->body);
  g_free (du);
}

static const char hexu[] = "0123456789ABCDEF";

static int
hexval (guchar c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  c |= 0x20;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

/* ---- stage 1: the URL parser, for the data scheme ----------------------- */

typedef enum { SET_C0, SET_FRAGMENT, SET_QUERY, SET_PATH, SET_USERINFO } PctSet;

static gboolean
in_set (guchar c, PctSet set)
{
  if (c < 0x20 || c > 0x7E)
    return TRUE;
  if (set == SET_C0)
    return FALSE;
  if (set == SET_FRAGMENT)
    return c == ' ' || c == '"' || c == '<' || c == '>' || c == '`';
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

/* Bytes of a UTF-8 string: every byte of a non-ASCII code point is >= 0x80 and
 * so in every set; percent-encoding the bytes one by one is percent-encoding
 * the code point's UTF-8. */
static void
append_pct (GString *out, const char *s, gsize n, PctSet set)
{
  for (gsize i = 0; i < n; i++) {
    guchar c = (guchar) s[i];
    if (in_set (c, set)) {
      g_string_append_c (out, '%');
      g_string_append_c (out, hexu[c >> 4]);
      g_string_append_c (out, hexu[c & 15]);
    } else {
      g_string_append_c (out, (char) c);
    }
  }
}

static gboolean
forbidden_host (guchar c)
{
  return c == 0 || c == '\t' || c == '\n' || c == '\r' || c == ' ' || c == '#' || c == '/'
         || c == ':' || c == '<' || c == '>' || c == '?' || c == '@' || c == '[' || c == '\\'
         || c == ']' || c == '^' || c == '|';
}

/* The opaque-host parser, or the IPv6 parser for "[...]". */
static gboolean
parse_host (const char *h, gsize n, GString *out, GError **error)
{
  if (n && h[0] == '[') {
    if (h[n - 1] != ']') {
      g_set_error_literal (error, EB_ERROR, EB_ERROR_DATA_URL, "URL parser failure: bad IPv6 host");
      return FALSE;
    }
    g_autofree char *lit = g_strndup (h + 1, n - 2);
    guint8 a[16];
    if (inet_pton (AF_INET6, lit, a) != 1) {
      g_set_error_literal (error, EB_ERROR, EB_ERROR_DATA_URL, "URL parser failure: bad IPv6 host");
      return FALSE;
    }
    /* WHATWG IPv6 serializer: compress the first longest run of >= 2 zero pieces */
    guint16 p[8];
    for (int i = 0; i < 8; i++)
      p[i] = (guint16) (a[2 * i] << 8 | a[2 * i + 1]);
    int best = -1, best_len = 1;
    for (int i = 0; i < 8;) {
      if (p[i] != 0) {
        i++;
        continue;
      }
      int j = i;
      while (j < 8 && p[j] == 0)
        j++;
      if (j - i > best_len) {
        best = i;
        best_len = j - i;
      }
      i = j;
    }
    g_string_append_c (out, '[');
    for (int i = 0; i < 8; i++) {
      if (i == best) {
        g_string_append (out, i == 0 ? "::" : ":");
        i += best_len - 1;
        continue;
      }
      g_string_append_printf (out, "%x", p[i]);
      if (i < 7)
        g_string_append_c (out, ':');
    }
    g_string_append_c (out, ']');
    return TRUE;
  }
  for (gsize i = 0; i < n; i++) {
    if (forbidden_host ((guchar) h[i])) {
      g_set_error_literal (error, EB_ERROR, EB_ERROR_DATA_URL,
                           "URL parser failure: forbidden host code point");
      return FALSE;
    }
  }
  append_pct (out, h, n, SET_C0);
  return TRUE;
}

static gboolean
is_dot (const char *s, gsize n)
{
  return (n == 1 && s[0] == '.') || (n == 3 && g_ascii_strncasecmp (s, "%2e", 3) == 0);
}

static gboolean
is_dotdot (const char *s, gsize n)
{
  if (n < 2 || n > 6)
    return FALSE;
  g_autofree char *l = g_ascii_strdown (s, (gssize) n);
  return !strcmp (l, "..") || !strcmp (l, ".%2e") || !strcmp (l, "%2e.") || !strcmp (l, "%2e%2e");
}

/* Parse the part after "data:" of a URL (tabs and newlines already removed,
 * [p, end)), and append its serialization without the fragment to @out. */
static gboolean
serialize_rest (const char *p, const char *end, GString *out, GError **error)
{
  const char *hash = p < end ? memchr (p, '#', (gsize) (end - p)) : NULL;
  if (hash)
    end = hash;   /* the fragment is excluded; nothing in it can make parsing fail */

  if (p < end && *p == '/') {
    GPtrArray *segs = g_ptr_array_new_with_free_func (g_free);
    gboolean has_host = FALSE;
    GString *auth = g_string_new (NULL);
    p++;
    if (p < end && *p == '/') {
      /* authority: userinfo@host:port, up to / ? or end */
      p++;
      const char *a = p;
      while (p < end && *p != '/' && *p != '?')
        p++;
      const char *a_end = p;
      const char *at = NULL;
      for (const char *q = a; q < a_end; q++)
        if (*q == '@')
          at = q;
      const char *h = a;
      if (at) {
        const char *colon = memchr (a, ':', (gsize) (at - a));
        GString *user = g_string_new (NULL), *pass = g_string_new (NULL);
        /* every '@' before the last is part of the userinfo, encoded */
        append_pct (user, a, (gsize) ((colon ? colon : at) - a), SET_USERINFO);
        if (colon)
          append_pct (pass, colon + 1, (gsize) (at - colon - 1), SET_USERINFO);
        if (user->len || pass->len) {
          g_string_append_len (auth, user->str, (gssize) user->len);
          if (pass->len) {
            g_string_append_c (auth, ':');
            g_string_append_len (auth, pass->str, (gssize) pass->len);
          }
          g_string_append_c (auth, '@');
        }
        g_string_free (user, TRUE);
        g_string_free (pass, TRUE);
        h = at + 1;
        if (h == a_end) {
          g_set_error_literal (error, EB_ERROR, EB_ERROR_DATA_URL,
                               "URL parser failure: credentials without a host");
          g_string_free (auth, TRUE);
          g_ptr_array_unref (segs);
          return FALSE;
        }
      }
      /* host and port: the last ':' outside brackets */
      const char *port = NULL;
      gboolean inbr = FALSE;
      for (const char *q = h; q < a_end; q++) {
        if (*q == '[')
          inbr = TRUE;
        else if (*q == ']')
          inbr = FALSE;
        else if (*q == ':' && !inbr) {
          port = q;
          break;
        }
      }
      const char *h_end = port ? port : a_end;
      if (!parse_host (h, (gsize) (h_end - h), auth, error)) {
        g_string_free (auth, TRUE);
        g_ptr_array_unref (segs);
        return FALSE;
      }
      if (port && port + 1 < a_end) {
        guint64 v = 0;
        for (const char *q = port + 1; q < a_end; q++) {
          if (!g_ascii_isdigit (*q) || (v = v * 10 + (guint64) (*q - '0')) > 65535) {
            g_set_error_literal (error, EB_ERROR, EB_ERROR_DATA_URL,
                                 "URL parser failure: invalid port");
            g_string_free (auth, TRUE);
            g_ptr_array_unref (segs);
            return FALSE;
          }
        }
        g_string_append_printf (auth, ":%u", (guint) v);
      }
      has_host = TRUE;
      if (p < end && *p == '/')
        p++;
      else if (p >= end || *p == '?') {
        /* path start with nothing: empty path */
        goto path_done;
      }
    }
    /* path segments up to '?' */
    for (;;) {
      const char *s = p;
      while (p < end && *p != '/' && *p != '?')
        p++;
      gsize n = (gsize) (p - s);
      gboolean last = p >= end || *p == '?';
      if (is_dotdot (s, n)) {
        if (segs->len)
          g_ptr_array_remove_index (segs, segs->len - 1);
        if (last)
          g_ptr_array_add (segs, g_strdup (""));
      } else if (is_dot (s, n)) {
        if (last)
          g_ptr_array_add (segs, g_strdup (""));
      } else {
        GString *seg = g_string_new (NULL);
        append_pct (seg, s, n, SET_PATH);
        g_ptr_array_add (segs, g_string_free (seg, FALSE));
      }
      if (last)
        break;
      p++;
    }
  path_done:
    if (has_host) {
      g_string_append (out, "//");
      g_string_append_len (out, auth->str, (gssize) auth->len);
    } else if (segs->len > 1 && *(char *) g_ptr_array_index (segs, 0) == '\0') {
      g_string_append (out, "/.");
    }
    for (guint i = 0; i < segs->len; i++) {
      g_string_append_c (out, '/');
      g_string_append (out, g_ptr_array_index (segs, i));
    }
    g_string_free (auth, TRUE);
    g_ptr_array_unref (segs);
  } else {
    /* opaque path up to '?' */
    const char *q = p < end ? memchr (p, '?', (gsize) (end - p)) : NULL;
    const char *pe = q ? q : end;
    for (const char *s = p; s < pe; s++) {
      if (*s == ' ' && s + 1 == pe && (q || hash))
        g_string_append (out, "%20");
      else
        append_pct (out, s, 1, SET_C0);
    }
    p = pe;
  }
  if (p < end && *p == '?') {
    g_string_append_c (out, '?');
    append_pct (out, p + 1, (gsize) (end - p - 1), SET_QUERY);
  }
  return TRUE;
}

/* Are all @n bytes at @s in 0x20..0x7E and none a '?'? Eight bytes at a time
 * (the classic SWAR tests for "some byte below / above / equal to"). */
static gboolean
printable_no_query (const char *s, gsize n)
{
  const guint64 ones = G_GUINT64_CONSTANT (0x0101010101010101);
  const guint64 highs = G_GUINT64_CONSTANT (0x8080808080808080);
  gsize i = 0;
  for (; i + 8 <= n; i += 8) {
    guint64 x;
    memcpy (&x, s + i, 8);
    guint64 less = (x - ones * 0x20) & ~x & highs;   /* some byte < 0x20 */
    guint64 more = ((x + ones * (127 - 0x7E)) | x) & highs;   /* some byte > 0x7E */
    guint64 q = x ^ (ones * '?');
    guint64 isq = (q - ones) & ~q & highs;           /* some byte == '?' */
    if (less | more | isq)
      return FALSE;
  }
  for (; i < n; i++) {
    guchar c = (guchar) s[i];
    if (c < 0x20 || c > 0x7E || c == '?')
      return FALSE;
  }
  return TRUE;
}

/* The serialized URL after "data:" as a view [*out, *out + *out_len); @tmp
 * holds it when it had to be built. */
static gboolean
url_stage (const char *in, gsize len, GString **tmp, const char **out, gsize *out_len,
           GError **error)
{
  const char *p = in, *end = in + len;
  while (p < end && (guchar) *p <= 0x20)
    p++;
  while (end > p && (guchar) end[-1] <= 0x20)
    end--;
  /* scheme: must be "data" */
  const char *s = p;
  if (s >= end || !g_ascii_isalpha (*s)) {
    g_set_error_literal (error, EB_ERROR, EB_ERROR_DATA_URL, "not a data: URL");
    return FALSE;
  }
  while (s < end && (g_ascii_isalnum (*s) || *s == '+' || *s == '-' || *s == '.' || *s == '\t'
                     || *s == '\n' || *s == '\r'))
    s++;
  if (s >= end || *s != ':') {
    g_set_error_literal (error, EB_ERROR, EB_ERROR_DATA_URL, "not a data: URL");
    return FALSE;
  }
  {
    char scheme[8];
    gsize k = 0;
    for (const char *q = p; q < s; q++) {
      if (*q == '\t' || *q == '\n' || *q == '\r')
        continue;
      if (k == 5)
        break;
      scheme[k++] = g_ascii_tolower (*q);
    }
    if (k != 4 || memcmp (scheme, "data", 4) != 0) {
      g_set_error_literal (error, EB_ERROR, EB_ERROR_DATA_URL, "not a data: URL");
      return FALSE;
    }
  }
  const char *rest = s + 1;

  /* Fast path: printable ASCII, no query, not starting with '/', no tab or
   * newline: the serialization is the input itself up to the fragment. */
  const char *hash = memchr (rest, '#', (gsize) (end - rest));
  const char *stop = hash ? hash : end;
  if ((rest == stop || *rest != '/') && printable_no_query (rest, (gsize) (stop - rest))
      && !(hash && stop > rest && stop[-1] == ' ')) {
    *out = rest;
    *out_len = (gsize) (stop - rest);
    return TRUE;
  }

  /* General path: remove ASCII tab and newline, then parse and serialize. */
  GString *clean = g_string_sized_new ((gsize) (end - rest));
  for (const char *q = rest; q < end; q++)
    if (*q != '\t' && *q != '\n' && *q != '\r')
      g_string_append_c (clean, *q);
  *tmp = g_string_sized_new (clean->len + 16);
  gboolean ok = serialize_rest (clean->str, clean->str + clean->len, *tmp, error);
  g_string_free (clean, TRUE);
  if (!ok) {
    g_string_free (*tmp, TRUE);
    *tmp = NULL;
    return FALSE;
  }
  *out = (*tmp)->str;
  *out_len = (*tmp)->len;
  return TRUE;
}

/* ---- stage 2: the processor --------------------------------------------- */

static gboolean
is_ascii_ws (guchar c)
{
  return c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x20;
}

static guint8 b64val[256];

static void
init_tables (void)
{
  static gsize done = 0;
  if (g_once_init_enter (&done)) {
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    memset (b64val, 0xFF, sizeof b64val);
    for (int i = 0; i < 64; i++)
      b64val[(guchar) a[i]] = (guint8) i;
    g_once_init_leave (&done, 1);
  }
}

/* Forgiving-base64 over the percent-decoding of [in, in+len) when @pct, else
 * over the bytes themselves. Returns NULL for failure. */
static GBytes *
base64_decode (const char *in, gsize len, gboolean pct)
{
  init_tables ();
  guint8 *out = g_malloc (len / 4 * 3 + 3);
  gsize o = 0;
  guint32 acc = 0;
  guint nbits = 0;     /* 0, 6, 12, 18 */
  gsize count = 0;     /* base64 characters, '=' excluded */
  guint pads = 0;
  gsize i = 0;
  while (i < len) {
    /* fast path: four alphabet characters in a row */
    if (nbits == 0 && !pads && i + 4 <= len) {
      guint8 a = b64val[(guchar) in[i]], b = b64val[(guchar) in[i + 1]];
      guint8 c = b64val[(guchar) in[i + 2]], d = b64val[(guchar) in[i + 3]];
      if ((a | b | c | d) < 64) {
        guint32 v = (guint32) a << 18 | (guint32) b << 12 | (guint32) c << 6 | d;
        out[o] = (guint8) (v >> 16);
        out[o + 1] = (guint8) (v >> 8);
        out[o + 2] = (guint8) v;
        o += 3;
        count += 4;
        i += 4;
        continue;
      }
    }
    guchar ch = (guchar) in[i++];
    if (pct && ch == '%' && i + 2 <= len) {
      int h = hexval ((guchar) in[i]), l = hexval ((guchar) in[i + 1]);
      if (h >= 0 && l >= 0) {
        ch = (guchar) (h << 4 | l);
        i += 2;
      }
    }
    if (is_ascii_ws (ch))
      continue;
    if (ch == '=') {
      pads++;
      continue;
    }
    guint8 v = b64val[ch];
    if (v >= 64 || pads) {
      g_free (out);
      return NULL;
    }
    acc = acc << 6 | v;
    nbits += 6;
    count++;
    if (nbits == 24) {
      out[o++] = (guint8) (acc >> 16);
      out[o++] = (guint8) (acc >> 8);
      out[o++] = (guint8) acc;
      acc = 0;
      nbits = 0;
    }
  }
  /* '=' only as one or two at the very end of a length divisible by 4 */
  if (pads && (pads > 2 || (count + pads) % 4 != 0)) {
    g_free (out);
    return NULL;
  }
  if (count % 4 == 1) {
    g_free (out);
    return NULL;
  }
  if (nbits == 12) {
    out[o++] = (guint8) (acc >> 4);
  } else if (nbits == 18) {
    out[o++] = (guint8) (acc >> 10);
    out[o++] = (guint8) (acc >> 2);
  }
  return g_bytes_new_take (g_realloc (out, o ? o : 1), o);
}

GBytes *
eb_forgiving_base64_decode (const char *input, gsize len)
{
  return base64_decode (input, len, FALSE);
}

static GBytes *
percent_decode (const char *in, gsize len)
{
  guint8 *out = g_malloc (len + 1);
  gsize o = 0, i = 0;
  while (i < len) {
    const char *pc = memchr (in + i, '%', len - i);
    gsize run = pc ? (gsize) (pc - (in + i)) : len - i;
    memcpy (out + o, in + i, run);
    o += run;
    i += run;
    if (i >= len)
      break;
    if (i + 2 < len) {
      int h = hexval ((guchar) in[i + 1]), l = hexval ((guchar) in[i + 2]);
      if (h >= 0 && l >= 0) {
        out[o++] = (guint8) (h << 4 | l);
        i += 3;
        continue;
      }
    }
    out[o++] = '%';
    i++;
  }
  return g_bytes_new_take (g_realloc (out, o ? o : 1), o);
}

static gboolean
is_ascii (const char *s, gsize n)
{
  gsize i = 0;
  guint64 acc = 0;
  for (; i + 8 <= n; i += 8) {
    guint64 x;
    memcpy (&x, s + i, 8);
    acc |= x;
  }
  for (; i < n; i++)
    acc |= (guchar) s[i];
  return (acc & G_GUINT64_CONSTANT (0x8080808080808080)) == 0;
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
eb_data_url_process (const char *input, gssize len_in, GError **error)
{
  g_return_val_if_fail (input != NULL, NULL);
  gsize len = len_in < 0 ? strlen (input) : (gsize) len_in;
  if (!is_ascii (input, len) && !eb_utf8_validate_with_nul (input, len)) {
    g_set_error_literal (error, EB_ERROR, EB_ERROR_DATA_URL, "data: URL is not valid UTF-8");
    return NULL;
  }
  GString *tmp = NULL;
  const char *u = NULL;
  gsize ulen = 0;
  if (!url_stage (input, len, &tmp, &u, &ulen, error))
    return NULL;

  const char *comma = memchr (u, ',', ulen);
  if (!comma) {
    if (tmp)
      g_string_free (tmp, TRUE);
    g_set_error_literal (error, EB_ERROR, EB_ERROR_DATA_URL, "data: URL has no comma");
    return NULL;
  }
  const char *ms = u, *me = comma;
  while (ms < me && is_ascii_ws ((guchar) *ms))
    ms++;
  while (me > ms && is_ascii_ws ((guchar) me[-1]))
    me--;
  const char *body = comma + 1;
  gsize body_len = ulen - (gsize) (body - u);

  /* ";" + zero or more spaces + "base64" at the end of the MIME type */
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

  EbDataUrl *du = g_new0 (EbDataUrl, 1);
  du->base64 = b64;
  if (b64) {
    du->body = base64_decode (body, body_len, TRUE);
    if (!du->body) {
      if (tmp)
        g_string_free (tmp, TRUE);
      eb_data_url_free (du);
      g_set_error_literal (error, EB_ERROR, EB_ERROR_DATA_URL, "invalid base64 in data: URL");
      return NULL;
    }
  } else {
    du->body = percent_decode (body, body_len);
  }

  g_autofree char *mt = NULL;
  if (ms < me && *ms == ';')
    mt = g_strdup_printf ("text/plain%.*s", (int) (me - ms), ms);
  else
    mt = g_strndup (ms, (gsize) (me - ms));
  du->type_given = ms < me && *ms != ';';
  du->mime_type = eb_mime_type_parse (mt, -1);
  if (!du->mime_type)
    du->mime_type = eb_mime_type_new_text_plain ();
  if (tmp)
    g_string_free (tmp, TRUE);
  return du;
}
