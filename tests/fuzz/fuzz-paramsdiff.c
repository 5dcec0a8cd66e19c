/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-paramsdiff: the differential check of issue 16's faster parameter
 * parsing and URL reassembly: for any Content-Type value, the current
 * eb_params_* and eb_urlparam_reassemble give byte for byte what the old ones
 * (params-old.c) gave - media type, names, warnings, every value, every
 * octet string with and without white-space stripping, every error (domain,
 * code and message) - so the speed work changed no result. The input is also
 * cut in two at its first byte's value: the front is the header value and,
 * read as a parameter name, the rest. Built as a libFuzzer target in the fuzz
 * build and replayed with mutations by tests/unit/test-params-diff.c. */
#include <string.h>
#include "eb-params.h"
#include "eb-urlparam.h"
#include "params-old.h"

#define DIFF(cond) do { if (!(cond)) __builtin_trap (); } while (0)

static void
same_error (const GError *a, const GError *b)
{
  DIFF ((a == NULL) == (b == NULL));
  if (a) {
    DIFF (a->domain == b->domain && a->code == b->code);
    DIFF (strcmp (a->message, b->message) == 0);
  }
}

static void
same_bytes (GBytes *a, GBytes *b)
{
  DIFF ((a == NULL) == (b == NULL));
  if (a)
    DIFF (g_bytes_equal (a, b));
}

static void
compare_name (EbParams *p, OldEbParams *o, const char *name)
{
  GError *ea = NULL, *eb = NULL;
  const char *va = eb_params_get (p, name, &ea);
  const char *vb = old_eb_params_get (o, name, &eb);
  DIFF (g_strcmp0 (va, vb) == 0);
  same_error (ea, eb);
  g_clear_error (&ea);
  g_clear_error (&eb);
  /* a second time: from the cache */
  DIFF (g_strcmp0 (eb_params_get (p, name, NULL), old_eb_params_get (o, name, NULL)) == 0);
  for (int strip = 0; strip < 2; strip++) {
    GBytes *ba = eb_params_get_octets (p, name, strip, &ea);
    GBytes *bb = old_eb_params_get_octets (o, name, strip, &eb);
    same_bytes (ba, bb);
    same_error (ea, eb);
    g_clear_error (&ea);
    g_clear_error (&eb);
    if (ba)
      g_bytes_unref (ba);
    if (bb)
      g_bytes_unref (bb);
  }
}

static const char *const names[] = { "access-type", "url", "URL", "name", "site", "directory",
                                     "mode", "server", "subject", "expiration", "size",
                                     "permission", "boundary", "charset", NULL };

static void
compare_parse (const char *raw, gsize len, const char *const *only, const char *extra)
{
  EbParams *p = eb_params_parse_only (raw, len, only);
  OldEbParams *o = old_eb_params_parse_only (raw, len, only);
  DIFF (g_strcmp0 (eb_params_get_media_type (p), old_eb_params_get_media_type (o)) == 0);
  DIFF (eb_params_get_n (p) == old_eb_params_get_n (o));
  for (guint i = 0; i < eb_params_get_n (p); i++) {
    const char *n = eb_params_get_name_at (p, i);
    DIFF (strcmp (n, old_eb_params_get_name_at (o, i)) == 0);
  }
  const char *const *wa = eb_params_get_warnings (p), *const *wb = old_eb_params_get_warnings (o);
  for (; *wa && *wb; wa++, wb++)
    DIFF (strcmp (*wa, *wb) == 0);
  DIFF (*wa == NULL && *wb == NULL);
  for (guint i = 0; names[i]; i++)
    compare_name (p, o, names[i]);
  for (guint i = 0; i < eb_params_get_n (p); i++)
    compare_name (p, o, eb_params_get_name_at (p, i));
  if (extra)
    compare_name (p, o, extra);
  eb_params_free (p);
  old_eb_params_free (o);
}

static void
compare_all (const char *raw, gsize len, const char *extra)
{
  static const char *const only_url[] = { "url", NULL };
  static const char *const only_ref[] = { "access-type", "name", "site", "directory", "mode",
                                          "server", "subject", "expiration", "size",
                                          "permission", NULL };
  static const char *const only_none[] = { NULL };
  compare_parse (raw, len, NULL, extra);
  compare_parse (raw, len, only_url, extra);
  compare_parse (raw, len, only_ref, extra);
  compare_parse (raw, len, only_none, extra);

  GError *ea = NULL, *eb = NULL;
  char *ua = eb_urlparam_reassemble (raw, len, &ea);
  char *ub = old_eb_urlparam_reassemble (raw, len, &eb);
  DIFF (g_strcmp0 (ua, ub) == 0);
  same_error (ea, eb);
  g_clear_error (&ea);
  g_clear_error (&eb);
  g_free (ua);
  g_free (ub);

  char *z = g_strndup (raw, len);
  char *ma = eb_params_content_type_media_type (z);
  char *mb = old_eb_params_content_type_media_type (z);
  DIFF (g_strcmp0 (ma, mb) == 0);
  g_free (ma);
  g_free (mb);
  g_free (z);
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  compare_all ((const char *) data, size, NULL);
  if (size > 1) {
    gsize cut = 1 + data[0] % (size - 1);
    char *extra = g_strndup ((const char *) data + cut, size - cut);
    compare_all ((const char *) data + 1, cut - 1, extra);
    g_free (extra);
  }
  return 0;
}
