/* test-digest.c - the digests externalize names and labels parts by: the
 * standard SHA-256 and MD5 (known answers), the same as GLib's GChecksum at
 * every length around the hash blocks and the one-pass block, the piecewise
 * SHA-256 equal to the one-shot one however the bytes are cut, and the empty
 * input. */
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
      g_autoptr (EbSha256) s = eb_sha256_new ();
      for (gsize off = 0; off < n; off += cuts[k])
        eb_sha256_update (s, buf + off, MIN (cuts[k], n - off));
      g_autofree char *got = eb_sha256_finish_hex (s);
      g_assert_cmpstr (got, ==, want_sha);
      g_autofree char *again = eb_sha256_finish_hex (s);
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

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/digest/known", test_known);
  g_test_add_func ("/digest/lengths", test_lengths);
  g_test_add_func ("/digest/canonical-text", test_canonical_text);
  return g_test_run ();
}
