/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-mimetype.c - WHATWG MIME types (MIME Sniffing 4.4 and 4.5). */

/**
 * SECTION:eb-mimetype
 * @title: EbMimeType
 * @short_description: parse and serialize MIME types the WHATWG way
 *
 * A MIME type record (MIME Sniffing, "MIME type representation") is a type, a
 * subtype and an ordered map of parameters. eb_mime_type_parse() implements
 * "parse a MIME type" (section 4.4) and eb_mime_type_serialize() "serialize a
 * MIME type" (section 4.5), exactly as written, so that the results agree with
 * browsers and with the web-platform-tests suites in tests/conformance/wpt/.
 *
 * The algorithms are defined on code points. The input is UTF-8; it is
 * validated once (U+0000 is a valid code point, so with an explicit length a
 * NUL byte is just another character) and then walked as bytes. That is exact
 * because:
 *
 * - every delimiter the algorithm looks for (HTTP whitespace, `/`, `;`, `=`,
 *   `"` and `\`) is ASCII, and in valid UTF-8 an ASCII byte is never part of a
 *   multi-byte sequence;
 * - HTTP token code points are all ASCII, so a byte >= 0x80 is never one;
 * - HTTP quoted-string token code points above ASCII are exactly U+0080..U+00FF,
 *   whose UTF-8 sequences are the ones that start with 0xC2 or 0xC3.
 *
 * Every "collect a sequence of code points" step is a cursor helper over
 * `const char **in` that moves only forward, so parsing is linear in the
 * input; the "parameters[name] does not exist" test uses a hash table, so many
 * parameters stay linear too. Records are immutable once parsed: type, subtype
 * and parameter names are lowercase ASCII; parameter values are valid UTF-8
 * that only holds HTTP quoted-string token code points (never U+0000).
 */
#include "eb-mimetype.h"
#include <string.h>

typedef struct {
  char *name;   /* lowercase ASCII, HTTP token code points, non-empty */
  char *value;  /* UTF-8, HTTP quoted-string token code points */
} EbMimeParam;

struct _EbMimeType {
  char   *type;
  char   *subtype;
  GArray *params;  /* (element-type EbMimeParam), in order of first appearance */
};

/* Character classes (Fetch, "HTTP whitespace", "HTTP token code point",
 * "HTTP quoted-string token code point"). */

static inline gboolean
is_http_ws (char c)
{
  return c == '\t' || c == '\n' || c == '\r' || c == ' ';
}

static inline gboolean
is_token_byte (char c)
{
  return g_ascii_isalnum (c) || (c > 0 && strchr ("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Whether the @len bytes at @s (valid UTF-8) solely contain HTTP token code
 * points. Empty is TRUE. */
static gboolean
all_token (const char *s, gsize len)
{
  for (gsize i = 0; i < len; i++)
    if (!is_token_byte (s[i]))
      return FALSE;
  return TRUE;
}

/* Whether the @len bytes at @s (valid UTF-8, U+0000 allowed) solely contain
 * HTTP quoted-string token code points: U+0009, U+0020..U+007E and
 * U+0080..U+00FF (two-byte sequences led by 0xC2 or 0xC3). */
static gboolean
all_quoted_string_token (const char *s, gsize len)
{
  for (gsize i = 0; i < len; i++) {
    guchar c = (guchar) s[i];
    if (c < 0x80) {
      if (c != '\t' && (c < 0x20 || c == 0x7F))
        return FALSE;
    } else if (c == 0xC2 || c == 0xC3) {
      i++;  /* its continuation byte: validated input */
    } else {
      return FALSE;
    }
  }
  return TRUE;
}

static void
mime_param_clear (gpointer data)
{
  EbMimeParam *p = data;
  g_free (p->name);
  g_free (p->value);
}

/* Takes ownership of @type and @subtype. */
static EbMimeType *
mime_type_new (char *type, char *subtype)
{
  EbMimeType *mt = g_new0 (EbMimeType, 1);
  mt->type = type;
  mt->subtype = subtype;
  mt->params = g_array_new (FALSE, FALSE, sizeof (EbMimeParam));
  g_array_set_clear_func (mt->params, mime_param_clear);
  return mt;
}

/* Takes ownership of @name and @value. */
static void
mime_type_append (EbMimeType *mt, char *name, char *value)
{
  EbMimeParam p = { name, value };
  g_array_append_val (mt->params, p);
}

/* Cursor helpers. Each takes the position *@in and the end of the input @end;
 * the ones that can fail move *@in only on success. */

/* Collect a sequence of code points that are HTTP whitespace. */
static void
skip_http_ws (const char **in, const char *end)
{
  const char *p = *in;
  while (p < end && is_http_ws (*p))
    p++;
  *in = p;
}

/* The end of [@start, @end) once trailing HTTP whitespace is removed. */
static const char *
rstrip_http_ws (const char *start, const char *end)
{
  while (end > start && is_http_ws (end[-1]))
    end--;
  return end;
}

/* Collect a sequence of code points that are not @a or @b (both ASCII, so the
 * scan cannot stop inside a multi-byte sequence). Returns where it started. */
static const char *
collect_not (const char **in, const char *end, char a, char b)
{
  const char *start = *in, *p = start;
  while (p < end && *p != a && *p != b)
    p++;
  *in = p;
  return start;
}

/* Collect an HTTP quoted string (Fetch) with extract-value true: *@in must be
 * at U+0022 ("). Appends the value to @value; fails (without moving) when *@in
 * is not at a quote. An unterminated string runs to @end, and a backslash at
 * the very end stands for itself. */
static gboolean
parse_http_quoted_string (const char **in, const char *end, GString *value)
{
  const char *p = *in;
  if (p >= end || *p != '"')
    return FALSE;
  p++;
  for (;;) {
    const char *run = collect_not (&p, end, '"', '\\');
    g_string_append_len (value, run, p - run);
    if (p >= end)
      break;
    char quote_or_backslash = *p++;
    if (quote_or_backslash != '\\')
      break;  /* the closing quote */
    if (p >= end) {
      g_string_append_c (value, '\\');
      break;
    }
    /* The code point after the backslash, whole (U+0000 is one byte). */
    const char *next = g_utf8_next_char (p);
    g_string_append_len (value, p, next - p);
    p = next;
  }
  *in = p;
  return TRUE;
}

/* Steps 2-10 of "parse a MIME type": type, "/", subtype (trailing HTTP
 * whitespace removed), both lowercased. On success *@in is at the ";" that
 * starts the parameters, or at @end. */
static gboolean
parse_essence (const char **in, const char *end, char **type, char **subtype)
{
  const char *p = *in;

  const char *t = collect_not (&p, end, '/', '/');
  gsize t_len = (gsize) (p - t);
  if (t_len == 0 || !all_token (t, t_len))
    return FALSE;
  if (p >= end)
    return FALSE;
  p++;  /* the "/" */

  const char *s = collect_not (&p, end, ';', ';');
  gsize s_len = (gsize) (rstrip_http_ws (s, p) - s);
  if (s_len == 0 || !all_token (s, s_len))
    return FALSE;

  *type = g_ascii_strdown (t, (gssize) t_len);
  *subtype = g_ascii_strdown (s, (gssize) s_len);
  *in = p;
  return TRUE;
}

/* One round of step 11 of "parse a MIME type", from the ";" at *@in. It always
 * consumes one parameter's text, up to the next ";" that ends it (or @end),
 * even one that the algorithm skips. Returns TRUE with a lowercase @name and a
 * @value when the parameter is well formed (name non-empty and all token code
 * points, value all quoted-string token code points); whether the name is
 * already taken is for the caller. */
static gboolean
next_parameter (const char **in, const char *end, char **name, char **value)
{
  const char *p = *in + 1;  /* the ";" */
  gboolean ok = TRUE;

  skip_http_ws (&p, end);
  const char *n = collect_not (&p, end, ';', '=');
  gsize n_len = (gsize) (p - n);
  if (p < end) {
    if (*p == ';') {
      *in = p;
      return FALSE;
    }
    p++;  /* the "=" */
  }
  if (p >= end) {
    *in = end;
    return FALSE;
  }
  if (n_len == 0 || !all_token (n, n_len))
    ok = FALSE;  /* still consume the value */

  g_autoptr (GString) v = NULL;
  if (*p == '"') {
    v = g_string_new (NULL);
    parse_http_quoted_string (&p, end, v);
    collect_not (&p, end, ';', ';');
    ok = ok && all_quoted_string_token (v->str, v->len);
  } else {
    const char *vs = collect_not (&p, end, ';', ';');
    gsize v_len = (gsize) (rstrip_http_ws (vs, p) - vs);
    ok = ok && v_len > 0 && all_quoted_string_token (vs, v_len);
    if (ok)
      v = g_string_new_len (vs, (gssize) v_len);
  }
  *in = p;
  if (!ok)
    return FALSE;
  *name = g_ascii_strdown (n, (gssize) n_len);
  *value = g_string_free (g_steal_pointer (&v), FALSE);
  return TRUE;
}

EbMimeType *
eb_mime_type_parse (const char *input, gssize len)
{
  g_return_val_if_fail (input != NULL || len == 0, NULL);

  gsize n = len < 0 ? strlen (input) : (gsize) len;
  if (n == 0 || !eb_mimetype_utf8_validate_with_nul (input, n))
    return NULL;  /* empty input has an empty type: failure */

  /* 1. Remove leading and trailing HTTP whitespace. */
  const char *p = input, *end = input + n;
  skip_http_ws (&p, end);
  end = rstrip_http_ws (p, end);

  /* 2-10. */
  g_autofree char *type = NULL;
  g_autofree char *subtype = NULL;
  if (!parse_essence (&p, end, &type, &subtype))
    return NULL;
  g_autoptr (EbMimeType) mt = mime_type_new (g_steal_pointer (&type), g_steal_pointer (&subtype));

  /* 11. Parameters; the first occurrence of a name wins. @seen borrows the
   * names from mt->params (heap strings, so the array may grow). */
  g_autoptr (GHashTable) seen = NULL;
  while (p < end) {
    char *name = NULL, *value = NULL;
    if (!next_parameter (&p, end, &name, &value))
      continue;
    if (!seen)
      seen = g_hash_table_new (g_str_hash, g_str_equal);
    if (g_hash_table_contains (seen, name)) {
      g_free (name);
      g_free (value);
      continue;
    }
    g_hash_table_add (seen, name);
    mime_type_append (mt, name, value);
  }
  return g_steal_pointer (&mt);
}

EbMimeType *
eb_mime_type_new_text_plain (void)
{
  EbMimeType *mt = mime_type_new (g_strdup ("text"), g_strdup ("plain"));
  mime_type_append (mt, g_strdup ("charset"), g_strdup ("US-ASCII"));
  return mt;
}

EbMimeType *
eb_mime_type_copy (const EbMimeType *mt)
{
  g_return_val_if_fail (mt != NULL, NULL);
  EbMimeType *c = mime_type_new (g_strdup (mt->type), g_strdup (mt->subtype));
  for (guint i = 0; i < mt->params->len; i++) {
    const EbMimeParam *p = &g_array_index (mt->params, EbMimeParam, i);
    mime_type_append (c, g_strdup (p->name), g_strdup (p->value));
  }
  return c;
}

void
eb_mime_type_free (EbMimeType *mt)
{
  if (!mt)
    return;
  g_free (mt->type);
  g_free (mt->subtype);
  g_array_unref (mt->params);
  g_free (mt);
}

const char *
eb_mime_type_get_type (const EbMimeType *mt)
{
  g_return_val_if_fail (mt != NULL, NULL);
  return mt->type;
}

const char *
eb_mime_type_get_subtype (const EbMimeType *mt)
{
  g_return_val_if_fail (mt != NULL, NULL);
  return mt->subtype;
}

char *
eb_mime_type_get_essence (const EbMimeType *mt)
{
  g_return_val_if_fail (mt != NULL, NULL);
  return g_strconcat (mt->type, "/", mt->subtype, NULL);
}

gboolean
eb_mime_type_essence_equal (const EbMimeType *a, const EbMimeType *b)
{
  g_return_val_if_fail (a != NULL && b != NULL, FALSE);
  return strcmp (a->type, b->type) == 0 && strcmp (a->subtype, b->subtype) == 0;
}

/* Names are stored lowercase; @name is compared ASCII case-insensitively, which
 * for the lowercase names the contract asks for is plain equality. */
const char *
eb_mime_type_get_parameter (const EbMimeType *mt, const char *name)
{
  g_return_val_if_fail (mt != NULL && name != NULL, NULL);
  for (guint i = 0; i < mt->params->len; i++) {
    const EbMimeParam *p = &g_array_index (mt->params, EbMimeParam, i);
    if (g_ascii_strcasecmp (p->name, name) == 0)
      return p->value;
  }
  return NULL;
}

guint
eb_mime_type_get_n_parameters (const EbMimeType *mt)
{
  g_return_val_if_fail (mt != NULL, 0);
  return mt->params->len;
}

void
eb_mime_type_get_parameter_at (const EbMimeType *mt, guint i, const char **name,
                               const char **value)
{
  g_return_if_fail (mt != NULL && i < mt->params->len);
  const EbMimeParam *p = &g_array_index (mt->params, EbMimeParam, i);
  if (name)
    *name = p->name;
  if (value)
    *value = p->value;
}

/* MIME Sniffing 4.5: a value that is empty or not all HTTP token code points
 * is quoted, with a backslash before each '"' and '\'. */
char *
eb_mime_type_serialize (const EbMimeType *mt)
{
  g_return_val_if_fail (mt != NULL, NULL);
  GString *s = g_string_new (mt->type);
  g_string_append_c (s, '/');
  g_string_append (s, mt->subtype);
  for (guint i = 0; i < mt->params->len; i++) {
    const EbMimeParam *p = &g_array_index (mt->params, EbMimeParam, i);
    gsize v_len = strlen (p->value);
    g_string_append_c (s, ';');
    g_string_append (s, p->name);
    g_string_append_c (s, '=');
    if (v_len > 0 && all_token (p->value, v_len)) {
      g_string_append_len (s, p->value, (gssize) v_len);
      continue;
    }
    g_string_append_c (s, '"');
    for (const char *c = p->value; *c; c++) {
      if (*c == '"' || *c == '\\')
        g_string_append_c (s, '\\');
      g_string_append_c (s, *c);
    }
    g_string_append_c (s, '"');
  }
  return g_string_free (s, FALSE);
}

gboolean
eb_mimetype_utf8_validate_with_nul (const char *s, gsize len)
{
  g_return_val_if_fail (s != NULL || len == 0, FALSE);
  if (len == 0)
    return TRUE;
  const char *p = s, *end = s + len;
  while (p < end) {
    const char *nul = memchr (p, '\0', (gsize) (end - p));
    const char *stop = nul ? nul : end;
    if (!g_utf8_validate_len (p, (gsize) (stop - p), NULL))
      return FALSE;
    p = nul ? nul + 1 : end;
  }
  return TRUE;
}
