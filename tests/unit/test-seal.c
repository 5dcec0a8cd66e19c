/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-seal.c - the site's seal on its X-Extbody records (eb-seal): made as
 * eb-seal.h says (a vector computed by Python's hmac module, not by GLib),
 * verified through folding and white space, refused for another record,
 * Message-ID or key and for a seal altered or missing; the records a rewrite
 * writes read back; the key's file read and refused as the daemon must
 * refuse it, and kept with the configuration that names it. What a pass does
 * with a sealed record is in test-rewrite (/rewrite/seal/...) and
 * test-externalize. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include "eb-seal.h"

#define KEY "0123456789abcdef0123456789abcdef"
#define RECORD "resolved 1 of 2 external-body references"
#define MID "<a.1@test.example>"
/* python3: base64.urlsafe_b64encode(hmac.new(KEY, b"extbody-seal-1\n" + RECORD
 * + b"\n" + MID, hashlib.sha256).digest()[:16]).rstrip(b"=") */
#define SEAL "L5r0aeS_hlp7arK2_Zv16g"
/* the same for "resolved 0 of 1 external-body reference" and no Message-ID */
#define SEAL_NO_MID "GvjXOO8KRucl73AFCVImJw"

static GBytes *
key_of (const char *k)
{
  return g_bytes_new (k, strlen (k));
}

static void
test_made (void)
{
  g_autoptr (GBytes) key = key_of (KEY);
  g_autofree char *seal = eb_seal_make (key, RECORD, MID);
  g_assert_cmpstr (seal, ==, SEAL);
  g_assert_cmpuint (strlen (seal), ==, EB_SEAL_LEN);
  /* the record as a milter passes it (a leading space) and folded: the same */
  g_autofree char *folded = eb_seal_make (key, " resolved 1 of 2\r\n\texternal-body  references ", " " MID "\r\n");
  g_assert_cmpstr (folded, ==, SEAL);
  /* no Message-ID: the empty one */
  g_autofree char *none = eb_seal_make (key, "resolved 0 of 1 external-body reference", NULL);
  g_assert_cmpstr (none, ==, SEAL_NO_MID);
  g_autofree char *empty = eb_seal_make (key, "resolved 0 of 1 external-body reference", "");
  g_assert_cmpstr (empty, ==, SEAL_NO_MID);
}

static void
test_verified (void)
{
  g_autoptr (GBytes) key = key_of (KEY);
  const char *good[] = {
    " " RECORD "; seal=" SEAL,
    RECORD "; seal=" SEAL,
    " resolved 1 of 2 external-body references;\r\n seal=" SEAL "\r\n",
    " resolved 1 of 2\n\texternal-body references;  seal=" SEAL "  ",
    " " RECORD " ; seal=" SEAL,
  };
  for (guint i = 0; i < G_N_ELEMENTS (good); i++) {
    g_autofree char *record = NULL;
    g_test_message ("good %u: %s", i, good[i]);
    g_assert_true (eb_seal_verify (key, good[i], MID, &record));
    g_assert_cmpstr (record, ==, RECORD);
  }
  g_assert_true (eb_seal_verify (key, " resolved 0 of 1 external-body reference; seal=" SEAL_NO_MID, NULL, NULL));
}

/* Each change of the record, the Message-ID, the key or the seal fails. */
static void
test_changed_fails (void)
{
  g_autoptr (GBytes) key = key_of (KEY);
  g_autoptr (GBytes) other = key_of ("0123456789abcdef0123456789abcdeF");
  g_autoptr (GBytes) longer = key_of (KEY "0");
  const char *value = " " RECORD "; seal=" SEAL;
  g_assert_true (eb_seal_verify (key, value, MID, NULL));
  g_assert_false (eb_seal_verify (other, value, MID, NULL));
  g_assert_false (eb_seal_verify (longer, value, MID, NULL));
  g_assert_false (eb_seal_verify (NULL, value, MID, NULL));
  const char *mids[] = { "<a.2@test.example>", "<A.1@test.example>", "", NULL, MID " ", "<a.1@test.example> x" };
  for (guint i = 0; i < G_N_ELEMENTS (mids); i++) {
    g_test_message ("Message-ID %s", mids[i] ? mids[i] : "(none)");
    gboolean ok = eb_seal_verify (key, value, mids[i], NULL);
    /* white space at the ends is no change */
    g_assert_true (ok == (mids[i] && strcmp (mids[i], MID " ") == 0));
  }
  const char *bad[] = {
    " resolved 2 of 2 external-body references; seal=" SEAL,
    " resolved 1 of 3 external-body references; seal=" SEAL,
    " resolved 1 of 2 external-body reference; seal=" SEAL,
    " resolved 9 of 9 external-body references; seal=garbage",
    " " RECORD,
    " " RECORD ";",
    " " RECORD "; seal=",
    " " RECORD "; seal=" SEAL "x",
    " " RECORD "; seal=x" SEAL,
    " " RECORD "; seal=L5r0aeS_hlp7arK2_Zv16G",   /* the last letter's case */
    " " RECORD "; seal=L5r0aeS/hlp7arK2/Zv16g",   /* base64, not base64url */
    " " RECORD "; Seal=" SEAL,
    " " RECORD "; seal=" SEAL "; seal=" SEAL,
    "; seal=" SEAL,
    "",
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
    g_autofree char *record = NULL;
    g_test_message ("bad %u: %s", i, bad[i]);
    g_assert_false (eb_seal_verify (key, bad[i], MID, &record));
    g_assert_null (record);
  }
}

static void
test_record_counts (void)
{
  guint done = 99, of = 99;
  g_assert_true (eb_seal_record_counts ("resolved 1 of 2 external-body references", &done, &of));
  g_assert_cmpuint (done, ==, 1);
  g_assert_cmpuint (of, ==, 2);
  g_assert_true (eb_seal_record_counts ("resolved 0 of 1 external-body reference", &done, &of));
  g_assert_cmpuint (done, ==, 0);
  g_assert_cmpuint (of, ==, 1);
  g_assert_true (eb_seal_record_counts ("resolved 0 of 0 external-body references", NULL, NULL));
  const char *not_records[] = {
    "externalized 1 of 2 parts", "resolved 3 of 2 external-body references",
    "resolved 1 of 2 external-body references and more", "resolved -1 of 2 external-body references",
    "resolved 1 of 2", "resolved 1of 2 external-body references", "resolved 1234567890 of 1234567890 external-body references",
    "Resolved 1 of 2 external-body references", "",
  };
  for (guint i = 0; i < G_N_ELEMENTS (not_records); i++) {
    g_test_message ("%s", not_records[i]);
    g_assert_false (eb_seal_record_counts (not_records[i], NULL, NULL));
  }
}

/* A file @name in @dir holding @text, mode @mode; returns its path. */
static char *
key_file (const char *dir, const char *name, const char *text, int mode)
{
  char *path = g_build_filename (dir, name, NULL);
  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  g_assert_cmpint (g_chmod (path, mode), ==, 0);
  return path;
}

/* The key's file as the daemon reads it: a regular file of 32 to 4096 bytes
 * that no other user may read or write; anything else refused with the
 * file's name, never its bytes. */
static void
test_key_file (void)
{
  g_autofree char *dir = g_dir_make_tmp ("eb-seal-XXXXXX", NULL);
  g_assert_nonnull (dir);
  g_autofree char *good = key_file (dir, "good", KEY, 0640);
  g_autofree char *owner = key_file (dir, "owner", KEY "\n", 0600);
  g_autofree char *world = key_file (dir, "world", KEY, 0644);
  g_autofree char *writable = key_file (dir, "writable", KEY, 0602);
  g_autofree char *shorter = key_file (dir, "short", "0123456789abcdef0123456789abcde", 0640);
  g_autofree char *missing = g_build_filename (dir, "missing", NULL);
  g_autoptr (GError) e = NULL;
  g_autoptr (GBytes) k = eb_seal_read_key (good, &e);
  g_assert_no_error (e);
  g_assert_cmpmem (g_bytes_get_data (k, NULL), g_bytes_get_size (k), KEY, strlen (KEY));
  g_autoptr (GBytes) k2 = eb_seal_read_key (owner, &e);
  g_assert_no_error (e);
  g_assert_cmpuint (g_bytes_get_size (k2), ==, strlen (KEY) + 1);   /* taken as it is */
  const char *refused[] = { world, writable, shorter, dir };
  for (guint i = 0; i < G_N_ELEMENTS (refused); i++) {
    g_autoptr (GBytes) none = eb_seal_read_key (refused[i], &e);
    g_assert_null (none);
    g_test_message ("%s", e->message);
    g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
    g_assert_nonnull (strstr (e->message, refused[i]));
    g_assert_null (strstr (e->message, "0123456789abcdef"));
    g_clear_error (&e);
  }
  g_autoptr (GBytes) none = eb_seal_read_key (missing, &e);
  g_assert_null (none);
  g_assert_error (e, G_FILE_ERROR, G_FILE_ERROR_NOENT);
  g_assert_nonnull (strstr (e->message, "trace_key_file: "));
  g_clear_error (&e);

  /* through the configuration: read at the first use, kept; a copy reads its
   * own; naming another file forgets the key read */
  g_autoptr (EbConfig) c = eb_config_new ();
  g_assert_null (eb_seal_key (c));
  g_assert_true (eb_seal_key_check (c, &e));
  g_assert_true (eb_config_set (c, "trace_key_file", good, &e));
  g_autoptr (GBytes) got = eb_seal_key (c);
  g_assert_nonnull (got);
  g_assert_true (g_bytes_equal (got, k));
  g_assert_true (eb_seal_key_check (c, &e));
  g_autoptr (EbConfig) copy = eb_config_copy (c);
  g_autoptr (GBytes) copied = eb_seal_key (copy);
  g_assert_true (g_bytes_equal (copied, k));
  g_assert_true (eb_config_set (c, "trace_key_file", missing, &e));
  g_assert_null (eb_seal_key (c));   /* one debug line, no failure */
  g_assert_false (eb_seal_key_check (c, &e));
  g_assert_error (e, G_FILE_ERROR, G_FILE_ERROR_NOENT);
  g_clear_error (&e);
  g_assert_true (eb_config_set (c, "trace_key_file", world, &e));
  g_assert_false (eb_seal_key_check (c, &e));
  g_assert_error (e, EB_ERROR, EB_ERROR_CONFIG);
  g_assert_nonnull (strstr (e->message, "chmod 0640"));
  g_clear_error (&e);
  g_assert_false (eb_config_set (c, "trace_key_file", "relative/trace.key", &e));
  g_clear_error (&e);
  g_autoptr (GBytes) still = eb_seal_key (copy);
  g_assert_true (g_bytes_equal (still, k));

  const char *all[] = { good, owner, world, writable, shorter };
  for (guint i = 0; i < G_N_ELEMENTS (all); i++)
    g_unlink (all[i]);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/seal/made", test_made);
  g_test_add_func ("/seal/verified", test_verified);
  g_test_add_func ("/seal/changed-fails", test_changed_fails);
  g_test_add_func ("/seal/record-counts", test_record_counts);
  g_test_add_func ("/seal/key-file", test_key_file);
  return g_test_run ();
}
