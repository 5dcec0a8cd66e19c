/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-transfer.c - transfer decoding and encoding, checked against GMime's own
 * decoders. */
#include <gmime/gmime.h>
#include <string.h>
#include "eb-error.h"
#include "eb-transfer.h"

static GBytes *
encode (EbOutEncoding enc, const void *d, gsize n, const char *eol)
{
  g_autoptr (GOutputStream) mem = g_memory_output_stream_new_resizable ();
  g_autoptr (GError) e = NULL;
  g_assert_true (eb_transfer_write (enc, d, n, eol, mem, &e));
  g_output_stream_close (mem, NULL, NULL);
  GBytes *b = g_memory_output_stream_steal_as_bytes (G_MEMORY_OUTPUT_STREAM (mem));
  g_assert_cmpuint (eb_transfer_encoded_length (enc, d, n, eol), ==, g_bytes_get_size (b));
  return b;
}

/* Decode with GMime (the reference decoder). */
static GByteArray *
gmime_decode (GMimeContentEncoding enc, GBytes *b)
{
  gsize n = 0;
  const char *d = g_bytes_get_data (b, &n);
  GByteArray *out = g_byte_array_sized_new ((guint) n + 8);
  g_byte_array_set_size (out, (guint) n + 8);
  int state = 0;
  guint32 save = 0;
  gsize len = 0;
  if (enc == GMIME_CONTENT_ENCODING_BASE64)
    len = g_mime_encoding_base64_decode_step ((const guchar *) d, n, out->data, &state, &save);
  else
    len = g_mime_encoding_quoted_decode_step ((const guchar *) d, n, out->data, &state, &save);
  g_byte_array_set_size (out, (guint) len);
  return out;
}

static void
assert_lines_max (GBytes *b, gsize max)
{
  gsize n = 0;
  const char *d = g_bytes_get_data (b, &n);
  gsize col = 0;
  for (gsize i = 0; i < n; i++) {
    if (d[i] == '\n') {
      col = 0;
    } else if (d[i] != '\r') {
      col++;
      g_assert_cmpuint (col, <=, max);
    }
  }
}

static void
test_base64_roundtrip (void)
{
  GRand *r = g_rand_new_with_seed (7);
  for (gsize len = 0; len < 400; len++) {
    g_autofree guint8 *d = g_malloc (len + 1);
    for (gsize i = 0; i < len; i++)
      d[i] = (guint8) g_rand_int_range (r, 0, 256);
    g_autoptr (GBytes) enc = encode (EB_OUT_BASE64, d, len, "\r\n");
    assert_lines_max (enc, 76);
    g_autoptr (GByteArray) back = gmime_decode (GMIME_CONTENT_ENCODING_BASE64, enc);
    g_assert_cmpmem (back->data, back->len, d, len);
    /* and our own decoder */
    g_autoptr (GError) e = NULL;
    g_autoptr (GBytes) mine = eb_transfer_decode (EB_CTE_BASE64, enc, &e);
    g_assert_no_error (e);
    g_assert_cmpmem (g_bytes_get_data (mine, NULL), g_bytes_get_size (mine), d, len);
  }
  g_rand_free (r);
}

static void
test_qp_roundtrip (void)
{
  const char *texts[] = {
    "plain\n", "caf\xc3\xa9\n", "trailing space \nand tab\t\n", "=equals=\n",
    "--boundary-looking line\n", "From the start\n", "bare\rcr\n", "nul\0byte",
    "a very long line that goes on and on and on and on and on and on and on and on and on and on and on\n",
    "no newline at end", "crlf\r\nline\r\n", "",
  };
  for (guint i = 0; i < G_N_ELEMENTS (texts); i++) {
    gsize len = i == 7 ? 8 : strlen (texts[i]);
    g_autoptr (GBytes) enc = encode (EB_OUT_QP, texts[i], len, "\n");
    assert_lines_max (enc, 76);
    gsize n = 0;
    const char *e = g_bytes_get_data (enc, &n);
    g_autofree char *es = g_strndup (e ? e : "", n);
    g_assert_null (strstr (es, "\n--"));
    g_assert_false (g_str_has_prefix (es, "--"));
    g_assert_false (g_str_has_prefix (es, "From "));
    g_autoptr (GError) err = NULL;
    g_autoptr (GBytes) back = eb_transfer_decode (EB_CTE_QP, enc, &err);
    g_assert_no_error (err);
    /* line breaks come back as LF (the encoding was written with LF) */
    g_autofree char *want = NULL;
    {
      GString *w = g_string_new_len (texts[i], (gssize) len);
      for (gsize k = 0; k + 1 < w->len; k++)
        if (w->str[k] == '\r' && w->str[k + 1] == '\n')
          g_string_erase (w, (gssize) k, 1);
      want = g_string_free (w, FALSE);
    }
    g_assert_cmpmem (g_bytes_get_data (back, NULL), g_bytes_get_size (back), want,
                     i == 7 ? 8 : strlen (want));
    g_autoptr (GByteArray) gm = gmime_decode (GMIME_CONTENT_ENCODING_QUOTEDPRINTABLE, enc);
    g_assert_cmpmem (gm->data, gm->len, want, i == 7 ? 8 : strlen (want));
  }
}

static void
test_choose (void)
{
  g_assert_cmpint (eb_transfer_choose (TRUE, (const guint8 *) "hi\n", 3), ==, EB_OUT_7BIT);
  g_assert_cmpint (eb_transfer_choose (TRUE, (const guint8 *) "h\xc3\xa9\n", 4), ==, EB_OUT_QP);
  g_assert_cmpint (eb_transfer_choose (TRUE, (const guint8 *) "--x\n", 4), ==, EB_OUT_QP);
  g_assert_cmpint (eb_transfer_choose (TRUE, (const guint8 *) "From me\n", 8), ==, EB_OUT_QP);
  g_assert_cmpint (eb_transfer_choose (TRUE, (const guint8 *) "a\rb", 3), ==, EB_OUT_QP);
  g_assert_cmpint (eb_transfer_choose (FALSE, (const guint8 *) "hi\n", 3), ==, EB_OUT_BASE64);
  g_autofree char *longline = g_strnfill (999, 'x');
  g_assert_cmpint (eb_transfer_choose (TRUE, (const guint8 *) longline, 999), ==, EB_OUT_QP);
  g_assert_cmpint (eb_transfer_choose (TRUE, (const guint8 *) longline, 998), ==, EB_OUT_7BIT);
}

static void
test_7bit_eol (void)
{
  g_autoptr (GBytes) b = encode (EB_OUT_7BIT, "a\nb\r\nc", 6, "\r\n");
  g_assert_cmpmem (g_bytes_get_data (b, NULL), g_bytes_get_size (b), "a\r\nb\r\nc", 7);
}

static void
test_decode (void)
{
  struct { EbCte cte; const char *in; const char *out; } ok[] = {
    { EB_CTE_IDENTITY, "raw\xff", "raw\xff" },
    { EB_CTE_BASE64, "aGVs\r\nbG8=\r\n", "hello" },
    { EB_CTE_QP, "a=3Db=\nc\n", "a=bc\n" },
    { EB_CTE_QP, "soft  =  \nbreak", "soft  break" },
    { EB_CTE_QP, "lower=3d", "lower=" },
    { EB_CTE_QP, "trailing   \n", "trailing\n" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (ok); i++) {
    g_autoptr (GBytes) in = g_bytes_new_static (ok[i].in, strlen (ok[i].in));
    g_autoptr (GError) e = NULL;
    g_autoptr (GBytes) out = eb_transfer_decode (ok[i].cte, in, &e);
    g_assert_no_error (e);
    g_assert_cmpmem (g_bytes_get_data (out, NULL), g_bytes_get_size (out), ok[i].out, strlen (ok[i].out));
  }
  struct { EbCte cte; const char *in; } bad[] = {
    { EB_CTE_BASE64, "aGVsb" }, { EB_CTE_BASE64, "a*b=" }, { EB_CTE_BASE64, "aG=Vs" }, { EB_CTE_QP, "=4" },
    { EB_CTE_QP, "=ZZ" }, { EB_CTE_QP, "x=\x01\x02" }, { EB_CTE_UNKNOWN, "x" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_autoptr (GBytes) in = g_bytes_new_static (bad[i].in, strlen (bad[i].in));
    g_autoptr (GError) e = NULL;
    g_autoptr (GBytes) out = eb_transfer_decode (bad[i].cte, in, &e);
    g_assert_null (out);
    g_assert_error (e, EB_ERROR, EB_ERROR_SYNTAX);
  }
  g_assert_cmpint (eb_transfer_parse_cte (NULL), ==, EB_CTE_IDENTITY);
  g_assert_cmpint (eb_transfer_parse_cte (" 8BIT "), ==, EB_CTE_IDENTITY);
  g_assert_cmpint (eb_transfer_parse_cte ("Binary"), ==, EB_CTE_IDENTITY);
  g_assert_cmpint (eb_transfer_parse_cte ("Base64 (comment)"), ==, EB_CTE_BASE64);
  g_assert_cmpint (eb_transfer_parse_cte ("Quoted-Printable"), ==, EB_CTE_QP);
  g_assert_cmpint (eb_transfer_parse_cte ("x-uuencode"), ==, EB_CTE_UNKNOWN);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_mime_init ();
  g_test_add_func ("/transfer/base64/roundtrip", test_base64_roundtrip);
  g_test_add_func ("/transfer/qp/roundtrip", test_qp_roundtrip);
  g_test_add_func ("/transfer/choose", test_choose);
  g_test_add_func ("/transfer/7bit-eol", test_7bit_eol);
  g_test_add_func ("/transfer/decode", test_decode);
  return g_test_run ();
}
