/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* hostile-cases.h - the messages of the hostile-input suite, shared by
 * test-hostile.c (the resolver over them) and test-hostile-externalize.c
 * (`extbody externalize` over them): each case a message built here with its
 * expected outcome for the resolver, and every walk and fetch limit's message
 * at, just below and just above its value. Included once per test program. */
#pragma once
#include <glib.h>
#include <string.h>
#include "eb-reason.h"

typedef enum { UNCHANGED, LEFT, RESOLVED } Want;

typedef struct {
  const char *name;
  GString  *(*build) (void);
  Want        want;
  EbReason    reason;   /* for LEFT: the first reference's reason */
} Case;

static GString *
wrap (const char *ctype_params, const char *inner)
{
  GString *s = g_string_new ("From: a@example.org\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
                             "Content-Type: message/external-body; access-type=URL; ");
  g_string_append (s, ctype_params);
  g_string_append (s, "\n\n");
  g_string_append (s, inner ? inner : "Content-Type: text/plain\n");
  g_string_append (s, "\n--b--\n");
  return s;
}

/* ---- MIME structure ---- */
static GString *
deep_nesting (void)
{
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b0\n\n");
  for (int i = 0; i < 10000; i++)
    g_string_append_printf (s, "--b%d\nContent-Type: multipart/mixed; boundary=b%d\n\n", i, i + 1);
  g_string_append (s, "--b10000\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\nContent-Type: text/plain\n\n");
  return s;
}

static GString *
many_parts (void)
{
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n");
  for (int i = 0; i < 100000; i++)
    g_string_append (s, "--b\n\nx\n");
  g_string_append (s, "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\nContent-Type: text/plain\n\n--b--\n");
  return s;
}

static GString *
never_closes (void)
{
  GString *s = wrap ("URL=\"data:,x\"", "Content-Type: text/plain\n");
  g_string_truncate (s, s->len - strlen ("\n--b--\n"));
  g_string_append (s, "\nthe boundary never closes\n");
  return s;
}

static GString *
missing_boundary_param (void)
{
  return g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed\n\n--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\n--b--\n");
}

/* Multiparts without a boundary whose Content-Type carries a parameter with a
 * name of 30 to 40 8-bit bytes (twice that once GMime makes it UTF-8): asking
 * GMime 3.2 for the boundary of such a multipart made it invent one and
 * re-encode the header, and its parameter encoder never ends on names of 70
 * to 72 bytes (found by fuzz-rewrite, tests/fuzz/regressions/rewrite). The
 * reference after them must still be resolved. */
static GString *
no_boundary_long_param_name (void)
{
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n");
  for (int n = 30; n <= 40; n++) {
    g_string_append (s, "--b\nContent-Type: multipart/d; ");
    for (int i = 0; i < n; i++)
      g_string_append_c (s, '\xff');
    g_string_append (s, "=\xff" "external-body\n\nx\n");
  }
  g_string_append (s, "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\n"
                      "Content-Type: text/plain\n\n--b--\n");
  return s;
}

static GString *
duplicate_boundaries (void)
{
  return g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b; boundary=c\n\n--c\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\nContent-Type: text/plain\n\n--c--\n--b\n\n--b--\n");
}

static GString *
huge_header_line (void)
{
  GString *s = g_string_new ("From: a@example.org\nX-Huge: ");
  for (int i = 0; i < 1024 * 1024; i++)
    g_string_append_c (s, 'h');
  g_string_append (s, "\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
                      "Content-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\nContent-Type: text/plain\n\n--b--\n");
  return s;
}

static GString *
nul_bytes (void)
{
  GString *s = wrap ("URL=\"data:,x\"", "Content-Type: text/plain\n");
  g_string_insert_len (s, 5, "\0\0\0", 3);
  return s;
}

static GString *
invalid_utf8 (void)
{
  return wrap ("URL=\"data:,\xff\xfe\xc3\"", "Content-Type: text/plain; name=\"\xff\"\n");
}

static GString *
bare_cr (void)
{
  return g_string_new ("From: a\rMIME-Version: 1.0\rContent-Type: multipart/mixed; boundary=b\r\r--b\rContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\r\r--b--\r");
}

/* ---- parameters ---- */
static GString *
thousands_of_sections (void)
{
  GString *p = g_string_new (NULL);
  g_string_append (p, "URL*0=\"data:,\"");
  for (int i = 1; i < 5000; i++)
    g_string_append_printf (p, ";\n URL*%d=\"a\"", i);
  GString *s = wrap (p->str, NULL);
  g_string_free (p, TRUE);
  return s;
}

static GString *
sections_missing (void)
{
  return wrap ("URL*0=\"data:,\"; URL*2=\"x\"", NULL);
}

static GString *
sections_out_of_order (void)
{
  return wrap ("URL*2=\"c\"; URL*0=\"data:,a\"; URL*1=\"b\"", NULL);
}

static GString *
duplicate_url (void)
{
  return wrap ("URL=\"data:,a\"; URL=\"data:,b\"", NULL);
}

static GString *
unbalanced_quotes (void)
{
  return wrap ("URL=\"data:,a; name=\"x", NULL);
}

static GString *
url_10mb (void)
{
  GString *u = g_string_new ("URL=\"data:application/octet-stream;base64,");
  for (int i = 0; i < 10 * 1024 * 1024 / 4; i++) {
    g_string_append (u, "AAAA");
    if (i % 10 == 9)
      g_string_append (u, "\n ");   /* folded, as senders do */
  }
  g_string_append (u, "\"");
  GString *s = wrap (u->str, "Content-Type: application/octet-stream\n");
  g_string_free (u, TRUE);
  return s;
}

/* ---- data: URLs ---- */
static GString *
mime_type_1mb (void)
{
  GString *u = g_string_new ("URL=\"data:text/plain;x=");
  for (int i = 0; i < 1024 * 1024; i++)
    g_string_append_c (u, 'q');
  g_string_append (u, ",hello\"");
  GString *s = wrap (u->str, "Content-Type: text/plain\n");
  g_string_free (u, TRUE);
  return s;
}

static GString *
base64_whitespace_everywhere (void)
{
  return wrap ("URL=\"data:text/plain;base64, a G V s\n\tb G 8 = \"", "Content-Type: text/plain\n");
}

static GString *
announced_gigabytes (void)
{
  return wrap ("size=999999999999; URL=\"data:,x\"", "Content-Type: text/plain\n");
}

/* ---- limits at, below, above ---- */
static GString *
at_part_limit (void)
{
  GString *u = g_string_new ("URL=\"data:,");
  for (int i = 0; i < 32 * 1024 * 1024 / 1024; i++)
    g_string_append_len (u, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 1024);
  g_string_append (u, "\"");
  GString *s = wrap (u->str, "Content-Type: application/octet-stream\n");
  g_string_free (u, TRUE);
  return s;   /* exactly max_part_bytes (32M) of data: allowed */
}

static GString *
above_part_limit (void)
{
  GString *s = at_part_limit ();
  char *q = strstr (s->str, "\"\n\nContent-Type: application");
  g_string_insert_c (s, q - s->str, 'z');
  return s;
}

static const Case cases[] = {
  { "structure/nesting-10000", deep_nesting, UNCHANGED, 0 },
  { "structure/parts-100000", many_parts, UNCHANGED, 0 },
  { "structure/boundary-never-closes", never_closes, RESOLVED, 0 },
  { "structure/missing-boundary-parameter", missing_boundary_param, UNCHANGED, 0 },
  { "structure/duplicate-boundary-parameter", duplicate_boundaries, UNCHANGED, 0 },
  { "structure/no-boundary-long-parameter-name", no_boundary_long_param_name, RESOLVED, 0 },
  { "structure/header-line-1mb", huge_header_line, RESOLVED, 0 },
  { "structure/nul-bytes", nul_bytes, RESOLVED, 0 },
  { "structure/invalid-utf8", invalid_utf8, RESOLVED, 0 },
  { "structure/bare-cr", bare_cr, UNCHANGED, 0 },
  { "params/5000-sections", thousands_of_sections, RESOLVED, 0 },
  { "params/missing-section", sections_missing, LEFT, EB_REASON_URL_INVALID },
  { "params/out-of-order-sections", sections_out_of_order, RESOLVED, 0 },
  { "params/duplicate-url", duplicate_url, LEFT, EB_REASON_URL_INVALID },
  { "params/unbalanced-quotes", unbalanced_quotes, LEFT, EB_REASON_URL_INVALID },
  { "params/url-10mb", url_10mb, RESOLVED, 0 },
  { "dataurl/mime-type-1mb", mime_type_1mb, RESOLVED, 0 },
  { "dataurl/base64-white-space-everywhere", base64_whitespace_everywhere, RESOLVED, 0 },
  { "dataurl/gigabytes-announced", announced_gigabytes, RESOLVED, 0 },
  { "limits/part-bytes-at", at_part_limit, RESOLVED, 0 },
  { "limits/part-bytes-above", above_part_limit, LEFT, EB_REASON_PART_TOO_LARGE },
};

/* ---- every limit at, just below and just above its value ----
 * Each builder makes a message whose measure (depth, parts, references, bytes)
 * is exactly n; the case runs n = value - 1, value and value + 1. */
typedef enum { ALL_RESOLVED, REF_LEFT, MESSAGE_LEFT, ONE_LEFT } Above;

typedef struct {
  const char *key;
  const char *value;    /* NULL: the default value */
  gint64      limit;
  GString  *(*build) (gint64 n);
  Above       above;    /* what happens at value + 1 */
  EbReason    reason;
  guint       which;    /* for ONE_LEFT: the reference left, others resolved */
} Limit;

typedef struct {
  const Limit *limit;
  gint64       n;
} LimitCase;

static GString *
depth_n (gint64 n)   /* the reference inside n nested multiparts: depth n */
{
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=d1\n\n");
  for (gint64 i = 1; i < n; i++)
    g_string_append_printf (s, "--d%" G_GINT64_FORMAT "\nContent-Type: multipart/mixed; boundary=d%" G_GINT64_FORMAT "\n\n",
                            i, i + 1);
  g_string_append_printf (s, "--d%" G_GINT64_FORMAT "\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\n"
                             "Content-Type: text/plain\n\n", n);
  for (gint64 i = n; i >= 1; i--)
    g_string_append_printf (s, "--d%" G_GINT64_FORMAT "--\n", i);
  return s;
}

static GString *
parts_n (gint64 n)   /* n parts in all: the multipart, n - 2 texts, the reference last */
{
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n");
  for (gint64 i = 0; i < n - 2; i++)
    g_string_append (s, "--b\nContent-Type: text/plain\n\nx\n");
  g_string_append (s, "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\n"
                      "Content-Type: text/plain\n\n--b--\n");
  return s;
}

static GString *
references_n (gint64 n)
{
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n");
  for (gint64 i = 0; i < n; i++)
    g_string_append_printf (s, "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,%" G_GINT64_FORMAT "\"\n\n"
                               "Content-Type: text/plain\n\n", i);
  g_string_append (s, "--b--\n");
  return s;
}

static void
append_data_ref (GString *s, gint64 bytes)
{
  g_string_append (s, "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,");
  for (gint64 i = 0; i < bytes; i++)
    g_string_append_c (s, 'a' + i % 26);
  g_string_append (s, "\"\n\nContent-Type: text/plain\n\n");
}

static GString *
part_bytes_n (gint64 n)
{
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n");
  append_data_ref (s, n);
  g_string_append (s, "--b--\n");
  return s;
}

static GString *
message_bytes_n (gint64 n)   /* three references, 1000 + 1000 + (n - 2000) bytes */
{
  GString *s = g_string_new ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n");
  append_data_ref (s, 1000);
  append_data_ref (s, 1000);
  append_data_ref (s, n - 2000);
  g_string_append (s, "--b--\n");
  return s;
}

static GString *
message_size_n (gint64 n)   /* a message of exactly n bytes */
{
  GString *s = g_string_new ("X-Pad: ");
  const char *rest = "\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
                     "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\n"
                     "Content-Type: text/plain\n\n--b--\n";
  g_assert_cmpint (n, >, (gint64) (strlen (rest) + 7));
  while ((gint64) (s->len + strlen (rest)) < n)
    g_string_append_c (s, 'p');
  g_string_append (s, rest);
  g_assert_cmpint ((gint64) s->len, ==, n);
  return s;
}

static const Limit limits[] = {
  { "max_nesting_depth", NULL, 50, depth_n, REF_LEFT, EB_REASON_TOO_DEEP, 0 },
  { "max_nesting_depth", "3", 3, depth_n, REF_LEFT, EB_REASON_TOO_DEEP, 0 },
  { "max_parts", NULL, 10000, parts_n, MESSAGE_LEFT, EB_REASON_TOO_MANY_PARTS, 0 },
  { "max_parts", "20", 20, parts_n, MESSAGE_LEFT, EB_REASON_TOO_MANY_PARTS, 0 },
  { "max_references", NULL, 64, references_n, ONE_LEFT, EB_REASON_TOO_MANY_REFS, 64 },
  { "max_references", "2", 2, references_n, ONE_LEFT, EB_REASON_TOO_MANY_REFS, 2 },
  { "max_part_bytes", "1000", 1000, part_bytes_n, REF_LEFT, EB_REASON_PART_TOO_LARGE, 0 },
  { "max_message_bytes", "3000", 3000, message_bytes_n, ONE_LEFT, EB_REASON_MESSAGE_BUDGET, 2 },
  { "max_message_size", "4096", 4096, message_size_n, MESSAGE_LEFT, EB_REASON_MESSAGE_TOO_LARGE, 0 },
  { "max_message_size", NULL, 64 * 1024 * 1024, message_size_n, MESSAGE_LEFT, EB_REASON_MESSAGE_TOO_LARGE, 0 },
};
