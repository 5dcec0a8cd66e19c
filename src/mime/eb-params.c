/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-params.c - RFC 2045 / RFC 2231 parameters from raw header text (see
 * eb-params.h). One pass of cursor parsers over the bytes; sections are
 * collected per name in a hash table and checked when a value is asked for.
 * Linear in the input (sections are sorted once per name asked for). Values can
 * be as large as a message (data: URLs), so the long runs are found by memchr
 * and table or word-at-a-time scans, never byte by byte through GLib calls,
 * and a value that needs no change is shared, not copied. */
#include "eb-params.h"
#include "eb-error.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
  guint    num;        /* section number */
  gboolean extended;   /* name*N* : %XX encoded, section 0 with charset'lang' */
  GBytes  *value;      /* quoted-pairs undone, nothing else */
} Section;

typedef struct {
  char    *name;          /* lowercase */
  guint    n_plain;       /* name=... */
  GBytes  *plain;
  guint    n_single_ext;  /* name*=... */
  GBytes  *single_ext;
  GArray  *sections;      /* (element-type Section) name*N / name*N* */
  char    *syntax;        /* (nullable) the first syntax problem */
  char    *cached;        /* the value eb_params_get returned */
  gboolean junk_after;    /* a value of it was followed by text that is no parameter */
} Entry;

struct _EbParams {
  char       *media_type;
  GHashTable *entries;    /* name -> Entry */
  GPtrArray  *order;      /* (element-type Entry) first appearance */
  GPtrArray  *warnings;   /* NULL-terminated */
};

static void
section_clear (gpointer p)
{
  Section *s = p;
  g_bytes_unref (s->value);
}

static void
entry_free (Entry *e)
{
  g_free (e->name);
  if (e->plain)
    g_bytes_unref (e->plain);
  if (e->single_ext)
    g_bytes_unref (e->single_ext);
  g_array_unref (e->sections);
  g_free (e->syntax);
  g_free (e->cached);
  g_free (e);
}

/* ---- character classes ----------------------------------------------------- */

/* RFC 2045 token characters: printable US-ASCII but SPACE and the tspecials
 * ()<>@,;:\"/[]?= ; the row is the high nibble. */
static const guint8 token_char[256] = {
  /* 0x00 */ 0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,
  /* 0x10 */ 0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,
  /* 0x20  SP ! " # $ % & '  ( ) * + , - . / */
             0,1,0,1,1,1,1,1, 0,0,1,1,0,1,1,0,
  /* 0x30  0-9 : ; < = > ? */
             1,1,1,1,1,1,1,1, 1,1,0,0,0,0,0,0,
  /* 0x40  @ A-O */
             0,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,
  /* 0x50  P-Z [ \ ] ^ _ */
             1,1,1,1,1,1,1,1, 1,1,1,0,0,0,1,1,
  /* 0x60  ` a-o */
             1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,
  /* 0x70  p-z { | } ~ DEL */
             1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,0,
  /* 0x80 - 0xFF: none */
};

#define IS_LWS(c) ((c) == ' ' || (c) == '\t' || (c) == '\r' || (c) == '\n')

/* The first SP, HTAB, CR or LF in [p, end), or end. Eight bytes at a time
 * while none of them is below 0x21 (all four are); the rare other control
 * characters only send a word to the byte loop. */
static const guint8 *
find_lws (const guint8 *p, const guint8 *end)
{
  const guint64 ones = G_GUINT64_CONSTANT (0x0101010101010101);
  const guint64 highs = G_GUINT64_CONSTANT (0x8080808080808080);
  while (p < end) {
    if (end - p >= 8) {
      guint64 w;
      memcpy (&w, p, 8);
      if (((w - ones * 0x21) & ~w & highs) == 0) {   /* no byte < 0x21 */
        p += 8;
        continue;
      }
      for (const guint8 *q = p + 8; p < q; p++)
        if (IS_LWS (*p))
          return p;
      continue;
    }
    if (IS_LWS (*p))
      return p;
    p++;
  }
  return end;
}

/* ---- cursor parsers: advance *in only on success ------------------------ */

static void
skip_cfws (const char **in, const char *end)
{
  const char *p = *in;
  while (p < end) {
    if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
      p++;
    } else if (*p == '(') {
      int depth = 0;
      while (p < end) {
        if (*p == '\\' && p + 1 < end) {
          p += 2;
          continue;
        }
        if (*p == '(')
          depth++;
        else if (*p == ')' && --depth == 0) {
          p++;
          break;
        }
        p++;
      }
    } else {
      break;
    }
  }
  *in = p;
}

static gboolean
decode_token (const char **in, const char *end, const char **start, gsize *len)
{
  const char *p = *in;
  while (p < end && token_char[(guchar) *p])
    p++;
  if (p == *in)
    return FALSE;
  *start = *in;
  *len = (gsize) (p - *in);
  *in = p;
  return TRUE;
}

/* A quoted-string at *in; FALSE (and *in at end) when unterminated. With @out
 * NULL the string is only skipped. The closing quote is found by memchr from
 * backslash to backslash (a quoted-pair takes the next byte, whatever it is);
 * the value is copied in runs between quoted-pairs. */
static gboolean
decode_quoted (const char **in, const char *end, GBytes **out)
{
  const char *p = *in + 1;
  const char *qt = NULL;        /* the next '"' at or after p, once found */
  gboolean pairs = FALSE;
  for (;;) {
    if (!qt || qt < p) {
      qt = p < end ? memchr (p, '"', (gsize) (end - p)) : NULL;
      if (!qt) {
        *in = end;
        return FALSE;
      }
    }
    const char *bs = memchr (p, '\\', (gsize) (qt - p));
    if (!bs)
      break;
    if (bs + 1 >= end) {
      *in = end;
      return FALSE;
    }
    pairs = TRUE;
    p = bs + 2;
  }
  const char *close = qt;
  if (out) {
    gsize span = (gsize) (close - (*in + 1));
    guint8 *v = g_malloc (span + 1);
    gsize o = 0;
    if (!pairs) {
      memcpy (v, *in + 1, span);
      *out = g_bytes_new_take (v, span);
      *in = close + 1;
      return TRUE;
    }
    for (const char *q = *in + 1; q < close;) {
      const char *bs = memchr (q, '\\', (gsize) (close - q));
      const char *run_end = bs ? bs : close;
      memcpy (v + o, q, (gsize) (run_end - q));
      o += (gsize) (run_end - q);
      if (!bs)
        break;
      v[o++] = (guint8) bs[1];
      q = bs + 2;
    }
    *out = g_bytes_new_take (v, o);
  }
  *in = close + 1;
  return TRUE;
}

/* Skip to the next ';' outside quoted strings and comments. */
static void
skip_junk (const char **in, const char *end)
{
  const char *p = *in;
  while (p < end && *p != ';') {
    if (*p == '"') {
      decode_quoted (&p, end, NULL);
      continue;
    }
    if (*p == '(') {
      skip_cfws (&p, end);
      continue;
    }
    p++;
    while (p < end && *p != ';' && *p != '"' && *p != '(')
      p++;
  }
  *in = p;
}

static void
warn (EbParams *params, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static void
warn (EbParams *params, const char *fmt, ...)
{
  if (params->warnings->len > 100)
    return;   /* hostile input: the first hundred say enough */
  va_list ap;
  va_start (ap, fmt);
  char *w = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_ptr_array_insert (params->warnings, (gint) params->warnings->len - 1, w);
}

static Entry *
entry_for (EbParams *params, const char *name, gsize len)
{
  g_autofree char *lower = g_ascii_strdown (name, (gssize) len);
  Entry *e = g_hash_table_lookup (params->entries, lower);
  if (!e) {
    e = g_new0 (Entry, 1);
    e->name = g_steal_pointer (&lower);
    e->sections = g_array_new (FALSE, FALSE, sizeof (Section));
    g_array_set_clear_func (e->sections, section_clear);
    g_hash_table_insert (params->entries, e->name, e);
    g_ptr_array_add (params->order, e);
  }
  return e;
}

static void
entry_syntax (Entry *e, const char *why)
{
  if (!e->syntax)
    e->syntax = g_strdup_printf ("parameter %s: %s", e->name, why);
}

static gboolean
wanted (const char *const *only, const char *name, gsize len)
{
  if (!only)
    return TRUE;
  for (guint i = 0; only[i]; i++)
    if (strlen (only[i]) == len && g_ascii_strncasecmp (only[i], name, len) == 0)
      return TRUE;
  return FALSE;
}

EbParams *
eb_params_parse (const char *raw, gsize len)
{
  return eb_params_parse_only (raw, len, NULL);
}

EbParams *
eb_params_parse_only (const char *raw, gsize len, const char *const *only)
{
  EbParams *params = g_new0 (EbParams, 1);
  params->entries = g_hash_table_new (g_str_hash, g_str_equal);
  params->order = g_ptr_array_new_with_free_func ((GDestroyNotify) entry_free);
  params->warnings = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (params->warnings, NULL);

  const char *p = raw, *end = raw + len;
  const char *ts, *ss;
  gsize tl, sl;
  skip_cfws (&p, end);
  const char *q = p;
  if (decode_token (&q, end, &ts, &tl)) {
    skip_cfws (&q, end);
    if (q < end && *q == '/') {
      q++;
      skip_cfws (&q, end);
      if (decode_token (&q, end, &ss, &sl)) {
        g_autofree char *t = g_ascii_strdown (ts, (gssize) tl);
        g_autofree char *s = g_ascii_strdown (ss, (gssize) sl);
        params->media_type = g_strconcat (t, "/", s, NULL);
        p = q;
      }
    }
  }
  if (!params->media_type)
    warn (params, "no valid type/subtype");

  Entry *last = NULL;   /* the entry whose value was read last, up to the next ';' */
  while (p < end) {
    skip_cfws (&p, end);
    if (p >= end)
      break;
    if (*p != ';') {
      const char *junk = p;
      skip_junk (&p, end);
      warn (params, "junk skipped: %.*s", (int) MIN (40, p - junk), junk);
      if (last)
        last->junk_after = TRUE;
      last = NULL;
      continue;
    }
    last = NULL;
    p++;
    skip_cfws (&p, end);
    if (p >= end || *p == ';')
      continue;
    const char *as;
    gsize al;
    if (!decode_token (&p, end, &as, &al)) {
      const char *junk = p;
      skip_junk (&p, end);
      warn (params, "junk skipped: %.*s", (int) MIN (40, p - junk), junk);
      continue;
    }
    /* attribute [ "*" section ] [ "*" ] */
    const char *star = memchr (as, '*', al);
    gsize nl = star ? (gsize) (star - as) : al;
    if (nl == 0) {
      skip_junk (&p, end);
      warn (params, "parameter without a name");
      continue;
    }
    if (!wanted (only, as, nl)) {
      /* not asked for: step over its value without storing it */
      skip_cfws (&p, end);
      if (p < end && *p == '=') {
        p++;
        skip_cfws (&p, end);
        if (p < end && *p == '"')
          decode_quoted (&p, end, NULL);
      }
      skip_junk (&p, end);
      continue;
    }
    Entry *e = entry_for (params, as, nl);
    gboolean is_section = FALSE, extended = FALSE;
    guint num = 0;
    if (star) {
      const char *s = star + 1, *se = as + al;
      if (s == se) {
        extended = TRUE;            /* name* */
      } else {
        const char *d = s;
        while (d < se && g_ascii_isdigit (*d))
          d++;
        if (d == s || (d - s > 1 && *s == '0') || d - s > 6
            || !(d == se || (d + 1 == se && *d == '*'))) {
          entry_syntax (e, "malformed RFC 2231 section");
          skip_junk (&p, end);
          continue;
        }
        is_section = TRUE;
        num = (guint) strtoul (s, NULL, 10);
        extended = d + 1 == se;
      }
    }
    skip_cfws (&p, end);
    if (p >= end || *p != '=') {
      entry_syntax (e, "no '=' after the name");
      skip_junk (&p, end);
      continue;
    }
    p++;
    skip_cfws (&p, end);
    GBytes *value = NULL;
    if (p < end && *p == '"') {
      if (!decode_quoted (&p, end, &value)) {
        entry_syntax (e, "unterminated quoted string");
        continue;
      }
      if (p < end && *p != ';' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n'
          && *p != '(') {
        /* e.g. URL="a; b="c: which quote was meant is anybody's guess */
        g_bytes_unref (value);
        entry_syntax (e, "text right after the closing quote");
        skip_junk (&p, end);
        continue;
      }
    } else {
      const char *vs;
      gsize vl;
      if (!decode_token (&p, end, &vs, &vl)) {
        entry_syntax (e, "value is neither a token nor a quoted string");
        skip_junk (&p, end);
        continue;
      }
      if (p < end && *p != ';' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n'
          && *p != '(') {
        /* e.g. URL=http://x: a bare value that is not a token */
        entry_syntax (e, "unquoted value is not a token (quote it)");
        skip_junk (&p, end);
        continue;
      }
      value = g_bytes_new (vs, vl);
    }
    last = e;
    if (is_section) {
      Section sec = { num, extended, value };
      g_array_append_val (e->sections, sec);
    } else if (extended) {
      if (e->single_ext)
        g_bytes_unref (e->single_ext);
      e->single_ext = value;
      e->n_single_ext++;
    } else {
      if (e->plain)
        g_bytes_unref (e->plain);
      e->plain = value;
      e->n_plain++;
    }
  }
  return params;
}

void
eb_params_free (EbParams *params)
{
  if (!params)
    return;
  g_free (params->media_type);
  g_hash_table_unref (params->entries);
  g_ptr_array_unref (params->order);
  g_ptr_array_unref (params->warnings);
  g_free (params);
}

const char *
eb_params_get_media_type (const EbParams *params)
{
  return params->media_type;
}

guint
eb_params_get_n (const EbParams *params)
{
  return params->order->len;
}

const char *
eb_params_get_name_at (const EbParams *params, guint i)
{
  g_return_val_if_fail (i < params->order->len, NULL);
  return ((Entry *) g_ptr_array_index (params->order, i))->name;
}

gboolean
eb_params_get_junk_after (const EbParams *params, const char *name)
{
  g_autofree char *lower = g_ascii_strdown (name, -1);
  const Entry *e = g_hash_table_lookup (params->entries, lower);
  return e && e->junk_after;
}

const char * const *
eb_params_get_warnings (const EbParams *params)
{
  return (const char * const *) params->warnings->pdata;
}

static gint
cmp_section (gconstpointer a, gconstpointer b)
{
  guint x = ((const Section *) a)->num, y = ((const Section *) b)->num;
  return x < y ? -1 : x > y;
}

/* The output of join: a buffer sized once for the whole value (decoding and
 * stripping only ever shorten), filled in runs. */
typedef struct {
  guint8 *data;
  gsize   len, cap;
} Out;

static void
out_put (Out *out, const guint8 *d, gsize l)
{
  g_assert (out->len + l <= out->cap);
  if (l) {
    memcpy (out->data + out->len, d, l);
    out->len += l;
  }
}

/* Append the %XX-decoded bytes of [s, s+n) to @out, copying the runs between
 * escapes whole. */
static gboolean
pct_decode_into (Out *out, const guint8 *s, gsize n)
{
  const guint8 *p = s, *end = s + n;
  while (p < end) {
    const guint8 *pc = memchr (p, '%', (gsize) (end - p));
    if (!pc) {
      out_put (out, p, (gsize) (end - p));
      break;
    }
    out_put (out, p, (gsize) (pc - p));
    if (end - pc <= 2 || !g_ascii_isxdigit (pc[1]) || !g_ascii_isxdigit (pc[2]))
      return FALSE;
    guint8 b = (guint8) (g_ascii_xdigit_value (pc[1]) << 4 | g_ascii_xdigit_value (pc[2]));
    out_put (out, &b, 1);
    p = pc + 3;
  }
  return TRUE;
}

/* Append [d, d+l) to @out, without SP, HTAB, CR and LF when @strip. */
static void
append_text (Out *out, const guint8 *d, gsize l, gboolean strip)
{
  if (!strip) {
    out_put (out, d, l);
    return;
  }
  const guint8 *p = d, *end = d + l;
  while (p < end) {
    const guint8 *w = find_lws (p, end);
    out_put (out, p, (gsize) (w - p));
    p = w;
    while (p < end && IS_LWS (*p))
      p++;
  }
}

/* Join @e's value into octets; *charset gets section 0's charset (or NULL).
 * With @strip, linear white space is removed from the quoted and token parts
 * (never from octets that %XX decoding produced). */
static GBytes *
join (const Entry *e, gboolean strip, char **charset, GError **error)
{
  *charset = NULL;
  if (e->syntax) {
    g_set_error_literal (error, EB_ERROR, EB_ERROR_SYNTAX, e->syntax);
    return NULL;
  }
  guint forms = (e->n_plain > 0) + (e->n_single_ext > 0) + (e->sections->len > 0);
  if (forms == 0) {
    g_set_error (error, EB_ERROR, EB_ERROR_MISSING, "no %s parameter", e->name);
    return NULL;
  }
  if (forms > 1) {
    g_set_error (error, EB_ERROR, EB_ERROR_AMBIGUOUS,
                 "parameter %s given both whole and in RFC 2231 sections", e->name);
    return NULL;
  }
  if (e->n_plain > 1 || e->n_single_ext > 1) {
    g_set_error (error, EB_ERROR, EB_ERROR_AMBIGUOUS, "parameter %s given twice", e->name);
    return NULL;
  }
  const Section *secs = NULL;
  guint n = 0;
  Section single;
  g_autoptr (GArray) sorted = NULL;
  if (e->n_plain) {
    /* the value itself when nothing is to go: shared, not copied */
    gsize l = 0;
    const guint8 *d = g_bytes_get_data (e->plain, &l);
    if (!strip || find_lws (d, d + l) == d + l)
      return g_bytes_ref (e->plain);
    Out out = { g_malloc (l), 0, l };
    append_text (&out, d, l, strip);
    return g_bytes_new_take (out.data, out.len);
  }
  if (e->n_single_ext) {
    single = (Section) { 0, TRUE, e->single_ext };
    secs = &single;
    n = 1;
  } else {
    sorted = g_array_sized_new (FALSE, FALSE, sizeof (Section), e->sections->len);
    g_array_append_vals (sorted, e->sections->data, e->sections->len);
    g_array_sort (sorted, cmp_section);
    secs = (const Section *) sorted->data;
    n = sorted->len;
    for (guint i = 0; i < n; i++) {
      if (secs[i].num != i) {
        g_set_error (error, EB_ERROR, EB_ERROR_AMBIGUOUS,
                     i > 0 && secs[i].num == secs[i - 1].num
                       ? "parameter %s: RFC 2231 section %u given twice"
                       : "parameter %s: RFC 2231 section %u missing",
                     e->name, i > 0 && secs[i].num == secs[i - 1].num ? secs[i].num : i);
        return NULL;
      }
    }
  }
  gsize total = 0;
  for (guint i = 0; i < n; i++)
    total += g_bytes_get_size (secs[i].value);
  Out out = { g_malloc (total), 0, total };
  for (guint i = 0; i < n; i++) {
    gsize l = 0;
    const guint8 *d = g_bytes_get_data (secs[i].value, &l);
    if (!secs[i].extended) {
      append_text (&out, d, l, strip);
      continue;
    }
    if (secs[i].num == 0) {
      const guint8 *q1 = memchr (d, '\'', l);
      const guint8 *q2 = q1 ? memchr (q1 + 1, '\'', l - (gsize) (q1 + 1 - d)) : NULL;
      if (!q2) {
        g_free (out.data);
        g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
                     "parameter %s: extended value without charset'language'", e->name);
        return NULL;
      }
      if (q1 > d)
        *charset = g_strndup ((const char *) d, (gsize) (q1 - d));
      l -= (gsize) (q2 + 1 - d);
      d = q2 + 1;
    }
    if (!pct_decode_into (&out, d, l)) {
      g_free (out.data);
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "parameter %s: bad %%XX escape", e->name);
      return NULL;
    }
  }
  return g_bytes_new_take (out.data, out.len);
}

GBytes *
eb_params_get_octets (const EbParams *params, const char *name, gboolean strip_lws,
                      GError **error)
{
  g_autofree char *lower = g_ascii_strdown (name, -1);
  Entry *e = g_hash_table_lookup (params->entries, lower);
  if (!e) {
    g_set_error (error, EB_ERROR, EB_ERROR_MISSING, "no %s parameter", lower);
    return NULL;
  }
  g_autofree char *charset = NULL;
  return join (e, strip_lws, &charset, error);
}

const char *
eb_params_get (const EbParams *params, const char *name, GError **error)
{
  g_autofree char *lower = g_ascii_strdown (name, -1);
  Entry *e = g_hash_table_lookup (params->entries, lower);
  if (!e) {
    g_set_error (error, EB_ERROR, EB_ERROR_MISSING, "no %s parameter", lower);
    return NULL;
  }
  if (e->cached)
    return e->cached;
  g_autofree char *charset = NULL;
  g_autoptr (GBytes) octets = join (e, FALSE, &charset, error);
  if (!octets)
    return NULL;
  gsize l = 0;
  const char *d = g_bytes_get_data (octets, &l);
  char *value = g_malloc (l + 1);
  gsize o = 0;
  for (gsize i = 0; i < l; i++) {  /* unfold: folds lose their line breaks */
    value[o] = d[i];
    o += d[i] != '\r' && d[i] != '\n';
  }
  value[o] = '\0';
  if (charset && g_ascii_strcasecmp (charset, "us-ascii") && g_ascii_strcasecmp (charset, "utf-8")) {
    char *conv = g_convert (value, -1, "UTF-8", charset, NULL, NULL, NULL);
    if (conv) {
      g_free (value);
      value = conv;
    }
  }
  e->cached = value;
  return value;
}

char *
eb_params_content_type_media_type (const char *value)
{
  g_return_val_if_fail (value != NULL, NULL);
  g_autoptr (EbParams) params = eb_params_parse_only (value, strlen (value),
                                                      (const char *const[]) { NULL });
  return g_strdup (eb_params_get_media_type (params));
}
