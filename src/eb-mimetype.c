/* eb-mimetype.c - WHATWG MIME types: parse (MIME Sniffing 4.4) and serialize
 * (4.5), on code points decoded from UTF-8.
 *
 * The input is decoded once into an array of code points; the algorithm's
 * "collect a sequence of code points" steps are cursor helpers over it that move
 * the position only forward. Linear time.
 */
#include "eb-mimetype.h"
#include <string.h>

struct _EbMimeType {
  char      *type;
  char      *subtype;
  GPtrArray *names;   /* (element-type utf8) lowercase ASCII */
  GPtrArray *values;  /* (element-type utf8) */
};

static gboolean
is_http_ws (gunichar c)
{
  return c == 0x0A || c == 0x0D || c == 0x09 || c == 0x20;
}

static gboolean
is_token (gunichar c)
{
  if (c >= 0x80)
    return FALSE;
  if (g_ascii_isalnum ((char) c))
    return TRUE;
  return c != 0 && strchr ("!#$%&'*+-.^_`|~", (int) c) != NULL;
}

static gboolean
is_quoted_token (gunichar c)
{
  return c == 0x09 || (c >= 0x20 && c <= 0x7E) || (c >= 0x80 && c <= 0xFF);
}

/* Decode @len bytes of UTF-8 (U+0000 allowed); NULL when invalid. */
static gunichar *
decode (const char *in, gsize len, gsize *n_out)
{
  gunichar *cp = g_new (gunichar, len + 1);
  gsize n = 0;
  const char *p = in, *end = in + len;
  while (p < end) {
    if (*p == '\0') {
      cp[n++] = 0;
      p++;
      continue;
    }
    gunichar c = g_utf8_get_char_validated (p, end - p);
    if (c == (gunichar) -1 || c == (gunichar) -2) {
      g_free (cp);
      return NULL;
    }
    cp[n++] = c;
    p = g_utf8_next_char (p);
  }
  *n_out = n;
  return cp;
}

/* UTF-8 of cp[a..b). */
static char *
encode (const gunichar *cp, gsize a, gsize b)
{
  GString *s = g_string_sized_new (b - a + 1);
  for (gsize i = a; i < b; i++)
    g_string_append_unichar (s, cp[i]);
  return g_string_free (s, FALSE);
}

static gboolean
all_of (const gunichar *cp, gsize a, gsize b, gboolean (*pred) (gunichar))
{
  for (gsize i = a; i < b; i++)
    if (!pred (cp[i]))
      return FALSE;
  return TRUE;
}

static EbMimeType *
mime_type_new (char *type, char *subtype)
{
  EbMimeType *mt = g_new0 (EbMimeType, 1);
  mt->type = type;
  mt->subtype = subtype;
  mt->names = g_ptr_array_new_with_free_func (g_free);
  mt->values = g_ptr_array_new_with_free_func (g_free);
  return mt;
}

static gboolean
has_param (const EbMimeType *mt, const char *name)
{
  for (guint i = 0; i < mt->names->len; i++)
    if (strcmp (g_ptr_array_index (mt->names, i), name) == 0)
      return TRUE;
  return FALSE;
}

/* Collect an HTTP quoted string with extract-value (Fetch), from *pos (a '"'). */
static GString *
collect_quoted (const gunichar *cp, gsize n, gsize *pos)
{
  GString *value = g_string_new (NULL);
  gsize p = *pos + 1;
  for (;;) {
    while (p < n && cp[p] != '"' && cp[p] != '\\')
      g_string_append_unichar (value, cp[p++]);
    if (p >= n)
      break;
    gunichar q = cp[p++];
    if (q == '\\') {
      if (p >= n) {
        g_string_append_c (value, '\\');
        break;
      }
      g_string_append_unichar (value, cp[p++]);
    } else {
      break;
    }
  }
  *pos = p;
  return value;
}

/* @s holds @len bytes of valid UTF-8, U+0000 included. */
static gboolean
utf8_all_quoted_token (const char *s, gsize len)
{
  const char *end = s + len;
  for (const char *p = s; p < end; p = *p ? g_utf8_next_char (p) : p + 1)
    if (!is_quoted_token (*p ? g_utf8_get_char (p) : 0))
      return FALSE;
  return TRUE;
}

EbMimeType *
eb_mime_type_parse (const char *input, gssize len)
{
  g_return_val_if_fail (input != NULL, NULL);
  gsize n = 0;
  g_autofree gunichar *cp = decode (input, len < 0 ? strlen (input) : (gsize) len, &n);
  if (!cp)
    return NULL;

  gsize start = 0, end = n;
  while (start < end && is_http_ws (cp[start]))
    start++;
  while (end > start && is_http_ws (cp[end - 1]))
    end--;

  gsize pos = start;
  while (pos < end && cp[pos] != '/')
    pos++;
  if (pos == start || !all_of (cp, start, pos, is_token) || pos >= end)
    return NULL;
  gsize type_end = pos;
  pos++;
  gsize sub_start = pos;
  while (pos < end && cp[pos] != ';')
    pos++;
  gsize sub_end = pos;
  while (sub_end > sub_start && is_http_ws (cp[sub_end - 1]))
    sub_end--;
  if (sub_end == sub_start || !all_of (cp, sub_start, sub_end, is_token))
    return NULL;

  g_autofree char *t = encode (cp, start, type_end);
  g_autofree char *s = encode (cp, sub_start, sub_end);
  EbMimeType *mt = mime_type_new (g_ascii_strdown (t, -1), g_ascii_strdown (s, -1));

  while (pos < end) {
    pos++;   /* the ';' */
    while (pos < end && is_http_ws (cp[pos]))
      pos++;
    gsize name_start = pos;
    while (pos < end && cp[pos] != ';' && cp[pos] != '=')
      pos++;
    gsize name_end = pos;
    if (pos < end) {
      if (cp[pos] == ';')
        continue;
      pos++;   /* the '=' */
    }
    if (pos >= end)
      break;
    g_autofree char *value = NULL;
    gsize value_len = 0;
    if (cp[pos] == '"') {
      GString *v = collect_quoted (cp, end, &pos);
      value_len = v->len;
      value = g_string_free (v, FALSE);
      while (pos < end && cp[pos] != ';')
        pos++;
    } else {
      gsize vs = pos;
      while (pos < end && cp[pos] != ';')
        pos++;
      gsize ve = pos;
      while (ve > vs && is_http_ws (cp[ve - 1]))
        ve--;
      if (ve == vs)
        continue;
      value = encode (cp, vs, ve);
      value_len = strlen (value);
      if (!all_of (cp, vs, ve, is_quoted_token))
        continue;
    }
    if (name_end == name_start || !all_of (cp, name_start, name_end, is_token))
      continue;
    g_autofree char *raw_name = encode (cp, name_start, name_end);
    char *name = g_ascii_strdown (raw_name, -1);
    if (!utf8_all_quoted_token (value, value_len) || has_param (mt, name)) {
      g_free (name);
      continue;
    }
    g_ptr_array_add (mt->names, name);
    g_ptr_array_add (mt->values, g_steal_pointer (&value));
  }
  return mt;
}

EbMimeType *
eb_mime_type_new_text_plain (void)
{
  EbMimeType *mt = mime_type_new (g_strdup ("text"), g_strdup ("plain"));
  g_ptr_array_add (mt->names, g_strdup ("charset"));
  g_ptr_array_add (mt->values, g_strdup ("US-ASCII"));
  return mt;
}

EbMimeType *
eb_mime_type_copy (const EbMimeType *mt)
{
  EbMimeType *c = mime_type_new (g_strdup (mt->type), g_strdup (mt->subtype));
  for (guint i = 0; i < mt->names->len; i++) {
    g_ptr_array_add (c->names, g_strdup (g_ptr_array_index (mt->names, i)));
    g_ptr_array_add (c->values, g_strdup (g_ptr_array_index (mt->values, i)));
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
  g_ptr_array_unref (mt->names);
  g_ptr_array_unref (mt->values);
  g_free (mt);
}

const char *
eb_mime_type_get_type (const EbMimeType *mt)
{
  return mt->type;
}

const char *
eb_mime_type_get_subtype (const EbMimeType *mt)
{
  return mt->subtype;
}

char *
eb_mime_type_get_essence (const EbMimeType *mt)
{
  return g_strconcat (mt->type, "/", mt->subtype, NULL);
}

gboolean
eb_mime_type_essence_equal (const EbMimeType *a, const EbMimeType *b)
{
  return strcmp (a->type, b->type) == 0 && strcmp (a->subtype, b->subtype) == 0;
}

const char *
eb_mime_type_get_parameter (const EbMimeType *mt, const char *name)
{
  for (guint i = 0; i < mt->names->len; i++)
    if (strcmp (g_ptr_array_index (mt->names, i), name) == 0)
      return g_ptr_array_index (mt->values, i);
  return NULL;
}

guint
eb_mime_type_get_n_parameters (const EbMimeType *mt)
{
  return mt->names->len;
}

void
eb_mime_type_get_parameter_at (const EbMimeType *mt, guint i, const char **name,
                               const char **value)
{
  g_return_if_fail (i < mt->names->len);
  if (name)
    *name = g_ptr_array_index (mt->names, i);
  if (value)
    *value = g_ptr_array_index (mt->values, i);
}

char *
eb_mime_type_serialize (const EbMimeType *mt)
{
  GString *s = g_string_new (mt->type);
  g_string_append_c (s, '/');
  g_string_append (s, mt->subtype);
  for (guint i = 0; i < mt->names->len; i++) {
    const char *v = g_ptr_array_index (mt->values, i);
    g_string_append_c (s, ';');
    g_string_append (s, g_ptr_array_index (mt->names, i));
    g_string_append_c (s, '=');
    gboolean token = *v != '\0';
    for (const char *p = v; *p && token; p++)
      token = is_token ((guchar) *p);
    if (token) {
      g_string_append (s, v);
      continue;
    }
    g_string_append_c (s, '"');
    for (const char *p = v; *p; p++) {
      if (*p == '"' || *p == '\\')
        g_string_append_c (s, '\\');
      g_string_append_c (s, *p);
    }
    g_string_append_c (s, '"');
  }
  return g_string_free (s, FALSE);
}

gboolean
eb_utf8_validate_with_nul (const char *s, gsize len)
{
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
