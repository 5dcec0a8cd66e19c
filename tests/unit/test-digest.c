/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-digest.c - the digests externalize names and labels parts by: the
 * standard SHA-256 and MD5 (known answers), the same as GLib's GChecksum at
 * every length around the hash blocks and the one-pass block, the piecewise
 * SHA-256 equal to the one-shot one however the bytes are cut, and the empty
 * input; the HMAC-SHA256 of externalize_key: RFC 4231's test cases, and the
 * same as GLib's GHmac for keys shorter than, as long as and longer than a
 * block, at every length, one-shot and piecewise. */
#include <string.h>
#include "eb-digest.h"

static char *
glib_md5_base64 (const guint8 *p, gsize len)
{
  g_autoptr (GChecksum) c = g_checksum_new (G_CHECKSUM_MD5);
  g_checksum_update (c, p, (gssize) len);
  guint8 d[16];
  gsize n = sizeof d;
  g_checksum_get_digest (c, d, &n);
  return g_base64_encode (d, n);
}

static void
test_known (void)
{
  g_autofree char *sha = NULL, *md5 = NULL;
  eb_digest_sha256_md5 ((const guint8 *) "abc", 3, &sha, &md5);
  /* FIPS 180-2 appendix B.1; RFC 1321 A.5 ("abc": 900150983cd24fb0d6963f7d28e17f72) */
  g_assert_cmpstr (sha, ==, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  g_assert_cmpstr (md5, ==, "kAFQmDzST7DWlj99KOF/cg==");
  g_autofree char *empty = eb_digest_sha256_hex (NULL, 0);
  g_assert_cmpstr (empty, ==, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  g_autofree char *sha0 = NULL, *md50 = NULL;
  eb_digest_sha256_md5 (NULL, 0, &sha0, &md50);
  g_assert_cmpstr (sha0, ==, empty);
  g_assert_cmpstr (md50, ==, "1B2M2Y8AsgTpgAmY7PhCfg==");   /* d41d8cd98f00b204e9800998ecf8427e */
  g_test_message ("digests from %s", eb_digest_backend ());
}

static void
test_lengths (void)
{
  gsize max = 3 * 32 * 1024 + 200;
  g_autofree guint8 *buf = g_malloc (max);
  g_autoptr (GRand) rand = g_rand_new_with_seed (20);
  for (gsize i = 0; i < max; i++)
    buf[i] = (guint8) g_rand_int (rand);
  const gsize lens[] = { 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 129, 1000,
                         32 * 1024 - 1, 32 * 1024, 32 * 1024 + 1, 64 * 1024 + 63, max };
  for (guint i = 0; i < G_N_ELEMENTS (lens); i++) {
    gsize n = lens[i];
    g_autofree char *want_sha = g_compute_checksum_for_data (G_CHECKSUM_SHA256, buf, n);
    g_autofree char *want_md5 = glib_md5_base64 (buf, n);
    g_autofree char *sha = NULL, *md5 = NULL;
    eb_digest_sha256_md5 (buf, n, &sha, &md5);
    g_assert_cmpstr (sha, ==, want_sha);
    g_assert_cmpstr (md5, ==, want_md5);
    g_autofree char *only = eb_digest_sha256_hex (buf, n);
    g_assert_cmpstr (only, ==, want_sha);

    /* piecewise, in cuts of 1, 7, 64 and 65537 bytes */
    const gsize cuts[] = { 1, 7, 64, 65537 };
    for (guint k = 0; k < G_N_ELEMENTS (cuts); k++) {
      g_autoptr (EbDigest) s = eb_digest_new ();
      for (gsize off = 0; off < n; off += cuts[k])
        eb_digest_update (s, buf + off, MIN (cuts[k], n - off));
      g_autofree char *got = eb_digest_finish_hex (s);
      g_assert_cmpstr (got, ==, want_sha);
      g_autofree char *again = eb_digest_finish_hex (s);
      g_assert_cmpstr (again, ==, want_sha);
    }
  }
}

/* RFC 1864's canonical text: bare LF counted as CR LF; nothing to do -> NULL */
static void
test_canonical_text (void)
{
  struct { const char *in, *canonical; } cases[] = {
    { "a\nb\n", "a\r\nb\r\n" },
    { "\n", "\r\n" },
    { "a\r\nb\nc", "a\r\nb\r\nc" },
    { "\r\n\n\r", "\r\n\r\n\r" },
    { "a\r\nb\r\n", NULL },
    { "no line end", NULL },
    { "", NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *got = eb_digest_md5_canonical_text ((const guint8 *) cases[i].in,
                                                         strlen (cases[i].in));
    if (!cases[i].canonical) {
      g_assert_null (got);
      continue;
    }
    g_autoptr (GChecksum) c = g_checksum_new (G_CHECKSUM_MD5);
    g_checksum_update (c, (const guchar *) cases[i].canonical, (gssize) strlen (cases[i].canonical));
    guint8 d[16];
    gsize dl = sizeof d;
    g_checksum_get_digest (c, d, &dl);
    g_autofree char *want = g_base64_encode (d, dl);
    g_assert_cmpstr (got, ==, want);
  }
}

/* RFC 4231 section 4: HMAC-SHA-256 of test cases 1 to 4, 6 and 7 (5 is a
 * truncated output) */
static void
test_hmac_known (void)
{
  guint8 k3[20], d3[50], k4[25], d4[50], k6[131];
  memset (k3, 0xaa, sizeof k3);
  memset (d3, 0xdd, sizeof d3);
  for (guint i = 0; i < sizeof k4; i++)
    k4[i] = (guint8) (i + 1);
  memset (d4, 0xcd, sizeof d4);
  memset (k6, 0xaa, sizeof k6);
  const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
  const char *t7 = "This is a test using a larger than block-size key and a larger than block-size "
                   "data. The key needs to be hashed before being used by the HMAC algorithm.";
  struct { const guint8 *key; gsize kl; const guint8 *data; gsize dl; const char *want; } cases[] = {
    { (const guint8 *) "\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b", 20,
      (const guint8 *) "Hi There", 8,
      "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
    { (const guint8 *) "Jefe", 4, (const guint8 *) "what do ya want for nothing?", 28,
      "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
    { k3, sizeof k3, d3, sizeof d3, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
    { k4, sizeof k4, d4, sizeof d4, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
    { k6, sizeof k6, (const guint8 *) t6, strlen (t6),
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
    { k6, sizeof k6, (const guint8 *) t7, strlen (t7),
      "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *mac = NULL, *sha = NULL, *md5 = NULL;
    eb_digest_hmac_sha256_md5 (cases[i].key, cases[i].kl, cases[i].data, cases[i].dl, &mac, &sha, &md5);
    g_assert_cmpstr (mac, ==, cases[i].want);
    /* the plain digests of the same pass are those of the bytes, not keyed */
    g_autofree char *want_sha = g_compute_checksum_for_data (G_CHECKSUM_SHA256, cases[i].data, cases[i].dl);
    g_autofree char *want_md5 = glib_md5_base64 (cases[i].data, cases[i].dl);
    g_assert_cmpstr (sha, ==, want_sha);
    g_assert_cmpstr (md5, ==, want_md5);
    g_autoptr (EbDigest) s = eb_digest_new_hmac (cases[i].key, cases[i].kl);
    eb_digest_update (s, cases[i].data, cases[i].dl);
    g_autofree char *piece = eb_digest_finish_hex (s);
    g_assert_cmpstr (piece, ==, cases[i].want);
  }
  /* no key: the plain SHA-256, as the name of an object without externalize_key */
  g_autofree char *plain = NULL, *plain_sha = NULL;
  eb_digest_hmac_sha256_md5 (NULL, 0, (const guint8 *) "abc", 3, &plain, &plain_sha, NULL);
  g_assert_cmpstr (plain, ==, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  g_assert_cmpstr (plain_sha, ==, plain);
}

/* The HMAC against GLib's GHmac (its own implementation): keys of 0, 1, 32,
 * 63, 64, 65 and 200 bytes, data around the blocks and the one-pass block,
 * one-shot and cut in pieces. */
static void
test_hmac_lengths (void)
{
  gsize max = 2 * 32 * 1024 + 70;
  g_autofree guint8 *buf = g_malloc (max);
  guint8 key[200];
  g_autoptr (GRand) rand = g_rand_new_with_seed (25);
  for (gsize i = 0; i < max; i++)
    buf[i] = (guint8) g_rand_int (rand);
  for (gsize i = 0; i < sizeof key; i++)
    key[i] = (guint8) g_rand_int (rand);
  const gsize kls[] = { 0, 1, 32, 63, 64, 65, 200 };
  const gsize lens[] = { 0, 1, 55, 56, 64, 119, 128, 32 * 1024 - 1, 32 * 1024, 32 * 1024 + 1, max };
  for (guint k = 0; k < G_N_ELEMENTS (kls); k++) {
    for (guint i = 0; i < G_N_ELEMENTS (lens); i++) {
      gsize n = lens[i];
      g_autofree char *want = g_compute_hmac_for_data (G_CHECKSUM_SHA256, key, kls[k], buf, n);
      g_autofree char *mac = NULL;
      eb_digest_hmac_sha256_md5 (key, kls[k], buf, n, &mac, NULL, NULL);
      g_assert_cmpstr (mac, ==, want);
      g_autoptr (EbDigest) s = eb_digest_new_hmac (key, kls[k]);
      for (gsize off = 0; off < n; off += 1000)
        eb_digest_update (s, buf + off, MIN (1000, n - off));
      g_autofree char *piece = eb_digest_finish_hex (s);
      g_assert_cmpstr (piece, ==, want);
      g_autofree char *again = eb_digest_finish_hex (s);
      g_assert_cmpstr (again, ==, want);
    }
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/digest/known", test_known);
  g_test_add_func ("/digest/lengths", test_lengths);
  g_test_add_func ("/digest/canonical-text", test_canonical_text);
  g_test_add_func ("/digest/hmac-known", test_hmac_known);
  g_test_add_func ("/digest/hmac-lengths", test_hmac_lengths);
  return g_test_run ();
}
