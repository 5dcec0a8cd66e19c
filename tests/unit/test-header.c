/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-header.c - raw header blocks, byte for byte. */
#include <string.h>
#include "eb-header.h"

static void
test_fields (void)
{
  const char *b = "From: a\r\nSubject: one\r\n two\r\n\tthree\r\nX-Empty:\r\n\r\nbody";
  g_autoptr (EbHeaderBlock) h = eb_header_block_scan (b, 0, strlen (b));
  g_assert_true (h->blank);
  g_assert_cmpuint (h->fields->len, ==, 3);
  g_assert_cmpuint (h->body, ==, (gsize) (strstr (b, "body") - b));
  const EbHeaderField *f = &g_array_index (h->fields, EbHeaderField, 1);
  g_assert_true (eb_header_field_is (f, b, "subject"));
  g_assert_cmpuint (f->start, ==, 9);
  g_assert_cmpmem (b + f->value, f->value_end - f->value, " one\r\n two\r\n\tthree", 18);
  g_assert_cmpuint (f->end, ==, (gsize) (strstr (b, "X-Empty") - b));
  g_autofree char *u = eb_header_field_unfold (f, b);
  g_assert_cmpstr (u, ==, "one two\tthree");
  g_assert_cmpint (eb_header_block_find (h, b, "x-empty"), ==, 2);
  g_assert_cmpint (eb_header_block_find (h, b, "to"), ==, -1);
  g_assert_cmpstr (eb_header_eol_at (b, strlen (b), 0), ==, "\r\n");
}

static void
test_ends (void)
{
  /* no blank line: the block ends at the first line that is no field */
  const char *b = "Content-Type: text/plain\n--boundary\n";
  g_autoptr (EbHeaderBlock) h = eb_header_block_scan (b, 0, strlen (b));
  g_assert_false (h->blank);
  g_assert_cmpuint (h->fields->len, ==, 1);
  g_assert_cmpuint (h->end, ==, 25);
  g_assert_cmpuint (h->body, ==, 25);

  /* the limit ends it, mid-field */
  const char *c = "A: 1\nB: 2\n";
  g_autoptr (EbHeaderBlock) h2 = eb_header_block_scan (c, 0, 7);
  g_assert_cmpuint (h2->fields->len, ==, 2);
  g_assert_cmpuint (g_array_index (h2->fields, EbHeaderField, 1).end, ==, 7);

  /* mixed endings, a name with space before the colon, an empty block */
  const char *d = "A : 1\r\nB: 2\n\r\nx";
  g_autoptr (EbHeaderBlock) h3 = eb_header_block_scan (d, 0, strlen (d));
  g_assert_cmpuint (h3->fields->len, ==, 2);
  g_assert_true (h3->blank);
  g_assert_cmpuint (h3->body, ==, strlen (d) - 1);
  g_autoptr (EbHeaderBlock) h4 = eb_header_block_scan ("\nbody", 0, 5);
  g_assert_true (h4->blank);
  g_assert_cmpuint (h4->fields->len, ==, 0);
  g_assert_cmpuint (h4->body, ==, 1);

  /* content fields */
  const char *e = "Content-ID: <x>\nContent-: y\nContentType: z\n\n";
  g_autoptr (EbHeaderBlock) h5 = eb_header_block_scan (e, 0, strlen (e));
  g_assert_true (eb_header_field_is_content (&g_array_index (h5->fields, EbHeaderField, 0), e));
  g_assert_false (eb_header_field_is_content (&g_array_index (h5->fields, EbHeaderField, 1), e));
  g_assert_false (eb_header_field_is_content (&g_array_index (h5->fields, EbHeaderField, 2), e));
}

/* A block taken from a scan with a larger limit (eb_header_block_within) is
 * the block a scan up to the smaller one gives, whenever it is given: every
 * limit of every header below, broken ones too. */
static void
test_within (void)
{
  static const char *const heads[] = {
    "From: a\r\nSubject: one\r\n two\r\n\r\nbody",
    "Content-Type: text/plain\n--boundary\nContent-Length: 3\n\nabc",
    "A : 1\r\nB: 2\n\r\nx",
    "\nbody",
    "A: 1\nB: 2",
    "A: 1\r\n\rX",
    "A: 1\r\n \r\n\r\nz",
    "A: 1\r\n\r",
    "",
  };
  for (guint i = 0; i < G_N_ELEMENTS (heads); i++) {
    const char *b = heads[i];
    gsize len = strlen (b);
    g_autoptr (EbHeaderBlock) known = eb_header_block_scan (b, 0, len);
    for (gsize limit = 0; limit <= len; limit++) {
      g_autoptr (EbHeaderBlock) w = eb_header_block_within (known, limit);
      g_assert_true ((w != NULL) == (known->body <= limit));
      if (!w)
        continue;
      g_autoptr (EbHeaderBlock) h = eb_header_block_scan (b, 0, limit);
      g_assert_cmpuint (w->start, ==, h->start);
      g_assert_cmpuint (w->end, ==, h->end);
      g_assert_cmpuint (w->body, ==, h->body);
      g_assert_cmpint (w->blank, ==, h->blank);
      g_assert_cmpmem (w->fields->data, w->fields->len * sizeof (EbHeaderField),
                       h->fields->data, h->fields->len * sizeof (EbHeaderField));
      /* a copy: the known block stays as it was */
      g_assert_true (w->fields != known->fields);
    }
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/header/fields", test_fields);
  g_test_add_func ("/header/ends", test_ends);
  g_test_add_func ("/header/within", test_within);
  return g_test_run ();
}
