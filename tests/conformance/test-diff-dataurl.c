/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-diff-dataurl.c - differential test of eb_data_url_process() against a
 * second implementation of the WHATWG Fetch data: URL processor: the jsdom
 * data-urls package (the reference implementation, on whatwg-url and
 * whatwg-mimetype) under Node.js, driven by differential/dataurl.js.
 *
 * A fixed-seed generator builds several thousand inputs from a grammar of the
 * tokens that matter (the scheme in any case, leading and trailing C0 controls
 * and spaces, tabs and newlines anywhere, authority and path forms, MIME types
 * with and without parameters, quoted strings, duplicate parameters, the
 * ";base64" marker and its near misses, commas, %XX escapes valid and not,
 * base64 with and without padding, white space, '=' and bad characters inside
 * it, non-ASCII UTF-8, U+0000, '?' and '#'). All of them go to one node process
 * (one JSON string a line, see dataurl.js); each answer is compared with
 * eb_data_url_process() on the same raw string: both fail, or both succeed with
 * the same serialized MIME type and the same body bytes.
 *
 * Both sides get the raw string, as in test-wpt-dataurl.c: eb_data_url_process()
 * does the URL parser's work itself, and data-urls' parseURL() runs whatwg-url
 * first, so the URL step is compared too (dataurl.js says more).
 *
 * Not compared: input that is not valid UTF-8. A JavaScript string cannot hold
 * it (and the WHATWG algorithms take strings of scalar values); the contract of
 * eb_data_url_process() makes it failure, which is checked on its own for a few
 * hundred generated inputs with a bad byte sequence spliced in.
 *
 * Skipped, with a message, when node is not on PATH or the package is not
 * installed (npm ci --prefix tests/conformance/differential). For a longer run
 * by hand, EXTBODY_DIFF_SEED and EXTBODY_DIFF_INPUTS change the seed and the
 * number of inputs (8000 by default, well under a second). */
#include <signal.h>
#include <string.h>
#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include "eb-dataurl.h"
#include "eb-error.h"

#define SEED        20240601u
#define N_INPUTS    8000
#define N_INVALID   400
#define MAX_SHOWN   20

/* The seed and the number of inputs, fixed unless EXTBODY_DIFF_SEED and
 * EXTBODY_DIFF_INPUTS say otherwise (for longer runs by hand). */
static guint32
env_uint (const char *name, guint32 fallback)
{
  const char *v = g_getenv (name);
  guint64 n = 0;
  if (v && g_ascii_string_to_unsigned (v, 10, 1, G_MAXUINT32, &n, NULL))
    return (guint32) n;
  return fallback;
}

/* A token: bytes with a length, so that "\0" is one byte. */
typedef struct {
  const char *s;
  gsize       n;
} Tok;
#define T(x) { x, sizeof x - 1 }

static const Tok *
pick_tok (GRand *r, const Tok *a, guint n)
{
  return &a[g_rand_int_range (r, 0, (gint32) n)];
}
#define PICK(r, a) pick_tok (r, a, G_N_ELEMENTS (a))

static void
add (GString *s, const Tok *t)
{
  g_string_append_len (s, t->s, (gssize) t->n);
}

static gboolean
chance (GRand *r, int percent)
{
  return g_rand_int_range (r, 0, 100) < percent;
}

/* ---- the grammar -------------------------------------------------------- */

static const Tok lead[] = {
  T (" "), T ("\t"), T ("\n"), T ("\r\n"), T ("\x01"), T ("\x1f"), T ("\0"), T (" \t\x0b\x0c "),
  T ("\x7f"), T ("\xc2\xa0"), T ("  "),
};

static const Tok scheme_other[] = {
  T ("DATA"), T ("Data"), T ("dAtA"), T ("da\tta"), T ("d\na\rta"), T ("dat"), T ("datas"),
  T ("x-data"), T ("d ata"), T ("1data"), T (""), T ("blob"), T ("dat%61"), T ("data+x"),
  T ("data\0"), T ("DATA\t"), T ("\xc4\x91" "ata"),
};

static const Tok colon_other[] = { T (""), T ("::"), T ("\xef\xbc\x9a"), T (" :"), T ("\t:") };

static const Tok after_colon[] = {
  T ("/"), T ("//"), T ("///"), T ("//host/"), T ("//HoSt/"), T ("//h:80/"), T ("//h:/"),
  T ("//h:99999/"), T ("//h:65535/"), T ("//h:8a/"), T ("//u:p@h/"), T ("//u@h/"), T ("//@h/"),
  T ("//u:p@/"), T ("//u:@h/"), T ("//:p@h/"), T ("//a@b@h/"), T ("//[::1]/"),
  T ("//[1:2:3:4:5:6:7:8]/"), T ("//[::ffff:1.2.3.4]/"), T ("//[1::2::3]/"),
  T ("//[0:0:1:0:0:0:0:1]/"), T ("//[1:0:0:2:0:0:0:3]/"), T ("//[g::]/"), T ("//[::1/"),
  T ("//[::1.2.3]/"), T ("//h%41/"), T ("//h^/"), T ("//h|/"), T ("//h\\/"), T ("//h /"),
  T ("//\xc3\xa4/"), T ("/./"), T ("/../"), T ("/%2e/"), T ("/.%2E/"), T ("//h/../"),
  T ("/a/./b/../"), T ("//h?q"), T ("/?"), T ("//h#"), T ("//h"), T ("/\t/h/"), T ("//h/a/.."),
  T ("/%2e%2e/x/"), T ("//1.2.3.4/"), T ("//h:0080/"), T ("//u%40:p@h/"), T ("//u p@h/"),
  T ("//h:65536/"), T ("//h:0/"), T ("//[::]/"), T ("//[0:0:0:0:0:0:0:0]/"), T ("//[1:0::]/"),
  T ("//[::1:0:0:2]/"), T ("//[::ffff:256.1.1.1]/"), T ("//[1:2:3:4:5:6:7::]/"),
  T ("//[FFFF::0001]/"), T ("//u:p:q@h/"), T ("//u;=@h/"), T ("//u\"<>@h/"), T ("//h/.%2e/"),
  T ("/.//"), T ("/..//"), T ("//h/%2E%2e/x/"), T ("/x/..%2F/"), T ("/x?"), T ("//h?a\"b`{}"),
};

/* MIME types the MIME type parser accepts, and ones it does not (or that the
 * URL parser changes first) */
static const Tok types_good[] = {
  T ("text/plain"), T ("TEXT/PLAIN"), T ("text/html"), T ("image/png"),
  T ("application/octet-stream"), T ("x/y"), T ("*/*"), T ("image/svg+xml"), T ("TeXt/HtMl"),
  T ("x-y.z/a!$&-^_`|~'*+"), T ("A/B"), T ("text/plain "), T (" text/plain"), T ("text/plain\t"),
  T ("\ttext/plain"), T ("text/pl%61in"), T ("%74ext/plain"), T ("a\tb/c"),
};

static const Tok types_odd[] = {
  T ("text"), T ("a/b!#c"), T ("text/"), T ("/plain"), T ("/"), T ("a/b/c"), T ("te xt/plain"),
  T ("text /plain"), T ("text/ plain"), T ("\"text\"/plain"), T ("t\xc3\xa4xt/plain"),
  T ("text/pl\xc3\xa4in"), T ("text/plain\x7f"), T ("text/plain\x01"), T ("\x0ctext/plain"),
  T ("text/plain\xe2\x80\x8b"), T ("a/b(c)"), T ("a@b/c"), T ("\xf0\x9f\x98\x80/x"),
  T ("text/plain\0"), T ("a/b?c"), T ("a/b\\c"), T ("a/b{c}"), T ("a/\"b\""),
};

static const Tok param_sep[] = {
  T (";"), T (";"), T (";"), T (";"), T ("; "), T (" ;"), T (";;"), T (";\t"), T (";\x0c"),
  T ("; ;"), T (";\n"), T (" ; "), T (";\r"), T (";\x0b"),
};

static const Tok param_name[] = {
  T ("charset"), T ("charset"), T ("CHARSET"), T ("Charset"), T ("x"), T ("X"), T ("a-b"),
  T ("a b"), T (""), T ("base64"), T ("q"), T ("\xc3\xa4"), T ("n%41"), T ("\"n\""),
  T ("charset "), T (" charset"), T ("(x)"), T ("a/b"), T ("x"), T ("y"), T ("BASE64"),
  T ("\tx"), T ("x\x0c"),
};

static const Tok param_eq[] = { T (""), T ("=="), T (" ="), T ("= "), T ("=\t"), T ("=\x0c") };

static const Tok param_value[] = {
  T ("utf-8"), T ("UTF-8"), T ("US-ASCII"), T ("iso-8859-1"), T ("x"), T (""),
  T ("\"quoted\""), T ("\"q u o\""), T ("\"a\\\"b\""), T ("\"a\\\\b\""), T ("\"\\"),
  T ("\"unterminated"), T ("\"a\\"), T ("\"\""), T ("\" \""), T ("a b"), T ("a\tb"),
  T ("x;y"), T ("\"x;y\""), T ("\"x,y\""), T ("\xc3\xa9"), T ("\"\xc3\xa9\""), T ("%22"),
  T ("%3B"), T ("\"a\"b"), T ("\"a\" b"), T ("\"a\"  ;"), T ("\xc3\xbf"), T ("a\x7f"),
  T ("\"\x01\""), T ("base64"), T ("\"base64\""), T ("  "), T ("a=b"), T ("\"=\""),
  T ("\"\\a\\b\""), T ("\"a\t\""), T ("\"\\\\\""), T ("a\\b"), T ("(c)"), T ("\"a\"\"b\""),
  T ("x "), T (" x"), T ("x\t"), T ("\"x\"\t"), T ("\"\\\xc3\xa9\""), T ("\0"), T ("\"\0\""),
  T ("b ?"), T ("b ?c"), T ("\"a ?\""), T ("b?\"c\""), T ("a`{}^|"), T ("\"a#\""),
};

static const Tok marker_other[] = {
  T (";BASE64"), T (";Base64"), T ("; base64"), T (";  base64"), T (";base64 "),
  T (";base64\t"), T (";base64  "), T (" ;base64"), T (";base64;"), T (";\tbase64"),
  T (";base64;base64"), T (";base64x"), T (";base 64"), T (";bas%65 64"), T (";ba%73e64"),
  T ("%3Bbase64"), T (";base64="), T (";base64=x"), T ("base64"), T (";;base64"),
  T (";\nbase64"), T (";ba\nse64"), T ("; ;base64"), T (";base\xef\xbc\x96\xef\xbc\x94"),
  T (";\x0c" "base64"), T (";base64\x0c"), T ("; \tbase64"), T (";bAsE64"), T (";base64 ;"),
  T (";charset=x;base64"), T (";base64;charset=x"), T (";x=\"a;base64\""),
  T (";x=\"a;base64"), T (" ; base64 "),
};

static const Tok comma_other[] = { T (""), T (",,"), T ("%2C"), T (" ,"), T (", "), T ("\t,") };

static const Tok body_tok[] = {
  T ("hello"), T ("a"), T ("%41"), T ("%4a"), T ("%4"), T ("%"), T ("%%"), T ("%zz"), T ("%g1"),
  T ("%2C"), T (","), T ("%00"), T ("\0"), T ("\xc3\xa9"), T ("%C3%A9"), T ("%FF"),
  T ("\xf0\x9f\x98\x80"), T (" "), T ("  "), T ("\t"), T ("\n"), T ("\r"), T ("\x0c"), T ("\x01"),
  T ("\x7f"), T ("?"), T ("?q=1"), T ("#"), T ("#f"), T ("%23"), T ("%3F"), T ("+"), T ("="),
  T ("=="), T ("aGk="), T ("\""), T ("<>"), T ("\\"), T ("`{}^|"), T ("'"), T ("%2"),
  T ("%e2%82%ac"), T ("%E2%82"), T ("%4\t1"), T ("%\n41"), T ("/"), T ("/../"), T ("/./"),
  T (";"), T ("%25"), T ("%2541"), T ("\xef\xbf\xbf"), T ("\xe2\x80\xa8"), T ("\xc2\x80"),
};

static const Tok b64_noise[] = {
  T (" "), T ("\t"), T ("\n"), T ("\r"), T ("\x0c"), T ("  "), T ("%20"), T ("%09"), T ("%0A"),
  T ("%0a"), T ("%0C"), T ("%0D"), T ("!"), T ("-"), T ("_"), T ("."), T ("%"), T ("%4"),
  T ("%zz"), T ("%%"), T ("\xc3\xa9"), T ("\0"), T ("%00"), T ("?"), T ("#"), T ("="), T ("=="),
  T ("==="), T ("%3D"), T ("%3d"), T ("+"), T ("/"), T ("%2B"), T ("%2F"), T ("%2f"),
  T ("\xc2\xa0"), T ("%C2%A0"), T ("%A0"), T (","), T (";"), T ("%41"), T ("%6"), T ("\x0b"),
  T ("%0B"), T ("%4\t1"), T ("%\n3D"), T ("%25"), T ("%2541"), T ("*"), T ("\x7f"),
};

static const Tok fragment[] = {
  T ("#"), T ("#frag"), T ("#\xc3\xa4"), T ("#,"), T ("#%zz"), T ("#\x01"), T ("#a#b"),
  T ("#;base64"), T ("# "), T ("#\0"),
};

static const Tok trail[] = {
  T (" "), T ("\t"), T ("\n"), T ("\0"), T ("\x1f"), T ("  \r\n"), T ("\x7f"), T ("\xc2\xa0"),
  T ("\x0b"), T (" \x01"),
};

static gboolean
is_utf8_boundary (const GString *s, gsize i)
{
  return i >= s->len || ((guchar) s->str[i] & 0xC0) != 0x80;
}

/* A random position in @s at a UTF-8 character boundary, at or after @from. */
static gsize
random_boundary (GRand *r, const GString *s, gsize from)
{
  if (from >= s->len)
    return s->len;
  gsize i = from + (gsize) g_rand_int_range (r, 0, (gint32) (s->len - from + 1));
  while (!is_utf8_boundary (s, i))
    i++;
  return i;
}

/* A base64 body: the encoding of random bytes, then perturbed. */
static void
gen_base64_body (GRand *r, GString *s)
{
  gsize n = (gsize) g_rand_int_range (r, 0, 40);
  guchar raw[40];
  for (gsize i = 0; i < n; i++)
    raw[i] = (guchar) g_rand_int_range (r, 0, 256);
  g_autofree char *enc = g_base64_encode (raw, n);
  GString *b = g_string_new (enc);
  if (chance (r, 35)) {
    while (b->len > 0 && b->str[b->len - 1] == '=')
      g_string_truncate (b, b->len - 1);   /* no padding */
  }
  if (chance (r, 20) && b->len > 0) {
    /* percent-encode a few characters, in either case */
    for (int k = g_rand_int_range (r, 1, 4); k > 0; k--) {
      gsize i = (gsize) g_rand_int_range (r, 0, (gint32) b->len);
      if (b->str[i] == '%' || !g_ascii_isalnum (b->str[i]))
        continue;
      char e[4];
      g_snprintf (e, sizeof e, chance (r, 50) ? "%%%02X" : "%%%02x", (guchar) b->str[i]);
      g_string_erase (b, (gssize) i, 1);
      g_string_insert (b, (gssize) i, e);
    }
  }
  int noise = chance (r, 55) ? g_rand_int_range (r, 1, 4) : 0;
  for (; noise > 0; noise--) {
    const Tok *t = PICK (r, b64_noise);
    gsize at = random_boundary (r, b, 0);
    g_string_insert_len (b, (gssize) at, t->s, (gssize) t->n);
  }
  if (chance (r, 8) && b->len > 0 && (guchar) b->str[b->len - 1] < 0x80)
    g_string_truncate (b, b->len - 1);   /* a character short */
  if (chance (r, 5))
    g_string_append_c (b, '=');
  if (chance (r, 5))
    g_string_ascii_up (b);
  g_string_append_len (s, b->str, (gssize) b->len);
  g_string_free (b, TRUE);
}

/* One structured input: [lead] scheme ':' [path start] [type] [params]
 * [;base64] ',' body [#fragment] [trail]. */
static void
gen_structured (GRand *r, GString *s)
{
  if (chance (r, 15))
    add (s, PICK (r, lead));
  if (chance (r, 90))
    g_string_append (s, "data");
  else
    add (s, PICK (r, scheme_other));
  if (chance (r, 96))
    g_string_append_c (s, ':');
  else
    add (s, PICK (r, colon_other));
  if (chance (r, 12))
    add (s, PICK (r, after_colon));

  gsize mime_start = s->len;
  if (chance (r, 80))
    add (s, chance (r, 70) ? PICK (r, types_good) : PICK (r, types_odd));
  int nparams = 0;
  while (nparams < 12 && chance (r, nparams == 0 ? 55 : 45))
    nparams++;
  for (int i = 0; i < nparams; i++) {
    add (s, PICK (r, param_sep));
    if (chance (r, 95))
      add (s, PICK (r, param_name));
    if (chance (r, 88))
      g_string_append_c (s, '=');
    else
      add (s, PICK (r, param_eq));
    if (chance (r, 95))
      add (s, PICK (r, param_value));
  }
  gboolean b64 = FALSE;
  if (chance (r, 40)) {
    b64 = TRUE;
    if (chance (r, 60))
      g_string_append (s, ";base64");
    else
      add (s, PICK (r, marker_other));
  }
  if (chance (r, 6)) {
    /* random case in the MIME type part */
    for (gsize i = mime_start; i < s->len; i++)
      if (g_ascii_isalpha (s->str[i]) && chance (r, 50))
        s->str[i] ^= 0x20;
  }

  if (chance (r, 95))
    g_string_append_c (s, ',');
  else
    add (s, PICK (r, comma_other));

  if (b64 || chance (r, 10)) {
    gen_base64_body (r, s);
  } else {
    for (int k = g_rand_int_range (r, 0, 12); k > 0; k--)
      add (s, PICK (r, body_tok));
  }
  if (chance (r, 10))
    add (s, PICK (r, fragment));
  if (chance (r, 10))
    add (s, PICK (r, trail));

  /* a tab or newline anywhere: the URL parser removes them */
  if (chance (r, 8)) {
    static const Tok tn[] = { T ("\t"), T ("\n"), T ("\r"), T ("\r\n") };
    const Tok *t = PICK (r, tn);
    gsize at = random_boundary (r, s, 0);
    g_string_insert_len (s, (gssize) at, t->s, (gssize) t->n);
  }
}

/* Pieces of "data:/path" and "data://authority/path" URLs. The processor's
 * MIME type part then starts with '/' and is never a valid MIME type, and the
 * body is percent-decoded, which undoes the URL parser's percent-encoding: what
 * shows is failure (host, IPv6, port) and the structure after the first comma
 * (userinfo and host serialization, dot segments, the query). So commas come
 * early: in the userinfo, the host and the path segments. */
static const Tok h_userinfo[] = {
  T ("u@"), T ("u:p@"), T ("u:@"), T (":p@"), T ("u,v@"), T ("u:p,q@"), T ("a@b@"), T ("u;=@"),
  T ("u\"<>@"), T ("u%40@"), T ("u p@"), T ("@"), T (",@"), T ("u:p:q@"), T ("\xc3\xa4:\xc3\xb6@"),
  T ("u[]|^@"), T ("u/@"), T ("u?@"), T (",u;=@"), T (",u:@"), T (",:p@"), T (",u:p:q;[]@"),
  T (",\xc3\xa4\\|@"),
};

static const Tok h_host[] = {
  T ("h"), T ("H,x"), T (","), T ("a,b"), T ("[::1]"), T ("[1:0:0:2:0:0:0:3]"),
  T ("[::ffff:1.2.3.4]"), T ("[0:0:1:0:0:0:0:1]"), T ("[1::]"), T ("[::]"), T ("[FFFF::0001]"),
  T ("[::01.2.3.4]"), T ("[::1.2.3.4.5]"), T ("[1:2:3:4:5:6:7:8:9]"), T (""), T ("\xc3\xa4"),
  T ("h%41"), T ("h^"), T ("x\"y"), T ("[1:0:0:0:2:0:0:0]"), T ("[0:1:0:1:0:1:0:1]"),
  T ("[1:2::3:4]"), T ("[::1.2.3.4]"), T ("[1:2:3:4:5:6:1.2.3.4]"), T ("[::0.0.0.0]"),
  T ("[::1.2.3.256]"), T ("[1:0:0:1:0:0:1:0]"), T ("[a:b:c:d:e:f:0:0]"), T ("[0:0::0:0:1]"),
  T ("h`{}"), T ("h'!$&()*+,;="), T ("h:"), T ("1.2.3.4"), T ("%zz"),
};

static const Tok h_port[] = {
  T (":"), T (":80"), T (":0080"), T (":65535"), T (":65536"), T (":8a"), T (":,"), T (":0"),
};

static const Tok h_segment[] = {
  T ("a"), T (","), T ("a,b"), T ("."), T (".."), T ("%2e"), T ("%2E%2e"), T (".%2e"), T ("%2e."),
  T ("..."), T (""), T ("x y"), T ("\""), T ("{}"), T ("^`"), T ("%zz"), T ("\xc3\xa9"),
  T (";base64"), T ("text,plain"), T ("a;base64,aGk="), T (",aGk="), T ("%2F"), T ("<>"),
  T ("..,"), T (",.."), T ("a\\b"), T ("\x01"), T ("%00"), T ("\0"), T (" "), T ("| "),
};

static const Tok h_query[] = {
  T ("?"), T ("?a\"b"), T ("?,x"), T ("?x=1&y={}`^|"), T ("?<>'"), T ("?\xc3\xa9"),
  T ("? ,"), T ("?/../"), T ("??"), T ("?%zz,"), T ("?\x01,"),
};

static void
gen_hierarchical (GRand *r, GString *s)
{
  g_string_append (s, chance (r, 80) ? "data:" : "DaTa:");
  if (chance (r, 70)) {
    g_string_append (s, "//");
    if (chance (r, 25))
      add (s, PICK (r, h_userinfo));
    add (s, PICK (r, h_host));
    if (chance (r, 20))
      add (s, PICK (r, h_port));
  }
  for (int k = g_rand_int_range (r, 0, 7); k > 0; k--) {
    g_string_append_c (s, '/');
    add (s, PICK (r, h_segment));
  }
  if (chance (r, 25))
    add (s, PICK (r, h_query));
  if (chance (r, 10))
    add (s, PICK (r, fragment));
  /* a tab or newline somewhere */
  if (chance (r, 10)) {
    gsize at = random_boundary (r, s, 0);
    g_string_insert_c (s, (gssize) at, chance (r, 50) ? '\t' : '\n');
  }
}

/* Every pool at once, for the unstructured inputs. */
static const struct {
  const Tok *t;
  guint      n;
} pools[] = {
#define POOL(a) { a, G_N_ELEMENTS (a) }
  POOL (lead),        POOL (scheme_other), POOL (colon_other), POOL (after_colon),
  POOL (types_good),  POOL (types_odd),    POOL (param_sep),   POOL (param_name),
  POOL (param_eq),    POOL (param_value),  POOL (marker_other), POOL (comma_other),
  POOL (body_tok),    POOL (b64_noise),    POOL (fragment),    POOL (trail),
  POOL (h_userinfo),  POOL (h_host),       POOL (h_port),      POOL (h_segment),
  POOL (h_query),
#undef POOL
};

/* One unstructured input: "data:" (usually) and tokens from every pool. */
static void
gen_chaos (GRand *r, GString *s)
{
  if (chance (r, 85))
    g_string_append (s, chance (r, 80) ? "data:" : "DATA:");
  for (int k = g_rand_int_range (r, 1, 14); k > 0; k--) {
    guint p = (guint) g_rand_int_range (r, 0, G_N_ELEMENTS (pools));
    add (s, pick_tok (r, pools[p].t, pools[p].n));
  }
}

static char *
gen_input (GRand *r, gsize *len)
{
  GString *s = g_string_new (NULL);
  int mode = g_rand_int_range (r, 0, 100);
  if (mode < 10)
    gen_chaos (r, s);
  else if (mode < 22)
    gen_hierarchical (r, s);
  else
    gen_structured (r, s);
  *len = s->len;
  return g_string_free (s, FALSE);
}

/* ---- helpers ------------------------------------------------------------ */

/* @s as a JSON string literal: '"', '\\' and code points below U+0020 escaped,
 * everything else (valid UTF-8) as it is. */
static void
append_json_string (GString *out, const char *s, gsize n)
{
  g_string_append_c (out, '"');
  for (gsize i = 0; i < n; i++) {
    guchar c = (guchar) s[i];
    if (c == '"' || c == '\\')
      g_string_append_printf (out, "\\%c", c);
    else if (c < 0x20)
      g_string_append_printf (out, "\\u%04x", c);
    else
      g_string_append_c (out, (char) c);
  }
  g_string_append_c (out, '"');
}

/* @s for a message: printable ASCII as it is, the rest as \xHH. */
static char *
show (const char *s, gsize n)
{
  GString *out = g_string_new (NULL);
  for (gsize i = 0; i < n; i++) {
    guchar c = (guchar) s[i];
    if (c >= 0x20 && c < 0x7F && c != '\\')
      g_string_append_c (out, (char) c);
    else
      g_string_append_printf (out, "\\x%02X", c);
  }
  return g_string_free (out, FALSE);
}

/* A result: failure (ok FALSE), or a serialized MIME type and body bytes. */
typedef struct {
  gboolean ok;
  char    *type;
  GBytes  *body;
  char    *error;   /* dataurl.js could not run data-urls on the input */
} Result;

static void
result_clear (Result *res)
{
  g_free (res->type);
  if (res->body)
    g_bytes_unref (res->body);
  g_free (res->error);
  memset (res, 0, sizeof *res);
}

static char *
show_result (const Result *res)
{
  if (res->error)
    return g_strdup_printf ("error: %s", res->error);
  if (!res->ok)
    return g_strdup ("failure");
  gsize n = 0;
  const char *d = g_bytes_get_data (res->body, &n);
  g_autofree char *b = show (d, n);
  return g_strdup_printf ("type \"%s\", body (%" G_GSIZE_FORMAT " bytes) \"%s\"", res->type, n, b);
}

/* dataurl.js's answer line @line into @res. FALSE when the line is malformed. */
static gboolean
parse_node_line (const char *line, Result *res)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (JsonNode) node = json_from_string (line, &error);
  if (!node)
    return FALSE;
  if (JSON_NODE_HOLDS_NULL (node))
    return TRUE;
  if (!JSON_NODE_HOLDS_OBJECT (node))
    return FALSE;
  JsonObject *o = json_node_get_object (node);
  if (json_object_has_member (o, "error")) {
    res->error = g_strdup (json_object_get_string_member (o, "error"));
    return TRUE;
  }
  const char *type = json_object_get_string_member (o, "mimeType");
  const char *body = json_object_get_string_member (o, "body");
  if (!type || !body)
    return FALSE;
  gsize n = 0;
  guchar *bytes = g_base64_decode (body, &n);
  res->ok = TRUE;
  res->type = g_strdup (type);
  res->body = g_bytes_new_take (bytes, n);
  return TRUE;
}

static void
run_ours (const char *input, gsize len, Result *res)
{
  g_autoptr (EbDataUrl) du = eb_data_url_process (input, (gssize) len, NULL);
  if (!du)
    return;
  res->ok = TRUE;
  res->type = eb_mime_type_serialize (du->mime_type);
  res->body = g_bytes_ref (du->body);
}

static gboolean
results_equal (const Result *a, const Result *b)
{
  if (a->error || b->error || a->ok != b->ok)
    return FALSE;
  if (!a->ok)
    return TRUE;
  return strcmp (a->type, b->type) == 0 && g_bytes_equal (a->body, b->body);
}

/* Where node and data-urls are, or NULL with a reason in @why. */
static char *
find_node (char **script, char **why)
{
  char *node = g_find_program_in_path ("node");
  if (!node)
    node = g_find_program_in_path ("nodejs");
  if (!node) {
    *why = g_strdup ("node is not on PATH (apt-get install nodejs npm)");
    return NULL;
  }
  g_autofree char *pkg = g_test_build_filename (G_TEST_DIST, "conformance", "differential",
                                                "node_modules", "data-urls", "package.json",
                                                NULL);
  if (!g_file_test (pkg, G_FILE_TEST_IS_REGULAR)) {
    *why = g_strdup_printf ("the data-urls package is not installed (%s missing): "
                            "npm ci --prefix tests/conformance/differential",
                            pkg);
    g_free (node);
    return NULL;
  }
  *script = g_test_build_filename (G_TEST_DIST, "conformance", "differential", "dataurl.js",
                                   NULL);
  return node;
}

/* ---- the tests ---------------------------------------------------------- */

static void
test_differential (void)
{
  g_autofree char *why = NULL, *script = NULL;
  g_autofree char *node = find_node (&script, &why);
  if (!node) {
    g_test_skip (why);
    return;
  }

  /* the inputs, and the lines for node */
  guint32 seed = env_uint ("EXTBODY_DIFF_SEED", SEED);
  guint n_inputs = env_uint ("EXTBODY_DIFF_INPUTS", N_INPUTS);
  g_autoptr (GRand) r = g_rand_new_with_seed (seed);
  g_autoptr (GPtrArray) inputs = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GArray) lens = g_array_new (FALSE, FALSE, sizeof (gsize));
  GString *lines = g_string_new (NULL);
  while (inputs->len < n_inputs) {
    gsize len = 0;
    char *in = gen_input (r, &len);
    g_assert_true (eb_mimetype_utf8_validate_with_nul (in, len));
    g_ptr_array_add (inputs, in);
    g_array_append_val (lens, len);
    append_json_string (lines, in, len);
    g_string_append_c (lines, '\n');
  }
  g_autoptr (GBytes) stdin_bytes = g_string_free_to_bytes (lines);

  /* one node process for all of them */
  g_autoptr (GError) error = NULL;
  const char *argv[] = { node, script, NULL };
  g_autoptr (GSubprocess) proc = g_subprocess_newv (argv,
                                                    G_SUBPROCESS_FLAGS_STDIN_PIPE
                                                      | G_SUBPROCESS_FLAGS_STDOUT_PIPE,
                                                    &error);
  g_assert_no_error (error);
  g_autoptr (GBytes) stdout_bytes = NULL;
  if (!g_subprocess_communicate (proc, stdin_bytes, NULL, &stdout_bytes, NULL, &error)) {
    /* say how node ended (its standard error is ours) before the error */
    g_subprocess_wait (proc, NULL, NULL);
    g_test_message ("running %s %s: %s", node, script, error->message);
  }
  if (!g_subprocess_get_if_exited (proc) || g_subprocess_get_exit_status (proc) != 0) {
    g_test_fail_printf ("%s %s ended with wait status %d", node, script,
                        g_subprocess_get_status (proc));
    return;
  }
  g_assert_no_error (error);

  gsize out_len = 0;
  const char *out = g_bytes_get_data (stdout_bytes, &out_len);
  g_autofree char *text = g_strndup (out, out_len);
  g_auto (GStrv) answers = g_strsplit (text, "\n", -1);
  guint n_answers = g_strv_length (answers);
  g_assert_cmpuint (n_answers, ==, inputs->len + 1);   /* the last line ends in '\n' */
  g_assert_cmpstr (answers[inputs->len], ==, "");

  guint compared = 0, mismatches = 0, both_ok = 0, both_fail = 0, b64_ok = 0;
  for (guint i = 0; i < inputs->len; i++) {
    const char *in = g_ptr_array_index (inputs, i);
    gsize len = g_array_index (lens, gsize, i);
    Result theirs = { 0 }, ours = { 0 };
    if (!parse_node_line (answers[i], &theirs))
      g_error ("dataurl.js answered \"%s\" for input %u", answers[i], i);
    run_ours (in, len, &ours);
    compared++;
    if (results_equal (&ours, &theirs)) {
      if (ours.ok) {
        both_ok++;
        /* how many went through the base64 decoder: a rough check on the mix */
        g_autoptr (EbDataUrl) du = eb_data_url_process (in, (gssize) len, NULL);
        b64_ok += du->base64;
      } else {
        both_fail++;
      }
    } else {
      mismatches++;
      if (mismatches <= MAX_SHOWN) {
        g_autofree char *si = show (in, len);
        g_autofree char *so = show_result (&ours);
        g_autofree char *st = show_result (&theirs);
        g_test_message ("MISMATCH #%u \"%s\"\n  extbody:   %s\n  data-urls: %s", i, si, so, st);
      }
    }
    result_clear (&theirs);
    result_clear (&ours);
  }
  g_test_message ("seed %u: compared %u inputs with data-urls: %u both succeeded (%u of them "
                  "base64), %u both failed, %u mismatches",
                  seed, compared, both_ok, b64_ok, both_fail, mismatches);
  if (mismatches > MAX_SHOWN)
    g_test_message ("(%u more mismatches not shown)", mismatches - MAX_SHOWN);
  g_assert_cmpuint (compared, ==, n_inputs);
  /* the mix stays useful: plenty of both outcomes, base64 included */
  g_assert_cmpuint (both_ok, >, n_inputs / 4);
  g_assert_cmpuint (both_fail, >, n_inputs / 20);
  g_assert_cmpuint (b64_ok, >, n_inputs / 20);
  g_assert_cmpuint (mismatches, ==, 0);
}

/* Invalid UTF-8 cannot go to data-urls (see the top): eb_data_url_process()
 * fails it wherever it is. */
static void
test_invalid_utf8 (void)
{
  static const Tok bad[] = {
    T ("\xff"), T ("\xc3"), T ("\xc3("), T ("\xed\xa0\x80"), T ("\xc0\xaf"), T ("\xe2\x82"),
    T ("\xf4\x90\x80\x80"), T ("\x80"), T ("\xf8\x88\x80\x80\x80"),
  };
  g_autoptr (GRand) r = g_rand_new_with_seed (SEED + 1);
  guint checked = 0;
  for (guint i = 0; i < N_INVALID; i++) {
    gsize len = 0;
    g_autofree char *in = gen_input (r, &len);
    GString *s = g_string_new_len (in, (gssize) len);
    const Tok *t = PICK (r, bad);
    gsize at = random_boundary (r, s, 0);
    g_string_insert_len (s, (gssize) at, t->s, (gssize) t->n);
    g_autoptr (GError) error = NULL;
    g_autoptr (EbDataUrl) du = eb_data_url_process (s->str, (gssize) s->len, &error);
    if (du) {
      g_autofree char *si = show (s->str, s->len);
      g_test_message ("invalid UTF-8 accepted: \"%s\"", si);
    }
    g_assert_null (du);
    g_assert_error (error, EB_ERROR, EB_ERROR_DATA_URL);
    g_string_free (s, TRUE);
    checked++;
  }
  g_test_message ("%u inputs with invalid UTF-8, all failures", checked);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* a node that exits early must not kill us while we write its input */
  signal (SIGPIPE, SIG_IGN);
  g_test_add_func ("/differential/data-urls", test_differential);
  g_test_add_func ("/differential/invalid-utf8", test_invalid_utf8);
  return g_test_run ();
}
