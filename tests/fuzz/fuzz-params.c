/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-params: RFC 2045/2231 parameters as read for every access-type: the
 * input is the raw value of a Content-Type field, read by the parameter parser
 * for every RFC 2046 / RFC 2017 parameter name, then as the Content-Type of an
 * external-body entity with a phantom header, read the way the rewriter reads
 * every reference (eb_extref_read). Properties: the access-type comes out
 * lowercase (and otherwise exactly as written: "URL " is not URL); only
 * access-type=URL gets a
 * URL, and a readable URL reference always has one; the phantom header of
 * an external-body is read from its own bytes only, whatever the outer field
 * holds. */
#include <string.h>
#include "eb-extref.h"
#include "eb-params.h"

#define PHANTOM "Content-Type: text/plain\nContent-Transfer-Encoding: 7bit\n\n"

static void
read_as_reference (const guint8 *data, size_t size)
{
  GString *e = g_string_new ("Content-Type:");
  g_string_append_len (e, (const char *) data, (gssize) size);
  g_string_append (e, "\n\n");
  gsize content = e->len;
  g_string_append (e, PHANTOM);

  EbRef *ref = eb_extref_new ();
  ref->block_start = 0;
  ref->content_start = content;
  ref->end = e->len;
  eb_extref_read (ref, e->str, e->len);

  if (ref->access_type) {
    for (const char *c = ref->access_type; *c; c++)
      if (g_ascii_isupper (*c))
        __builtin_trap ();
  }
  /* the reference's Content-Type is the first field of its header, which ends
   * where the input's bytes stop being a field value (a line break not
   * followed by white space) */
  const EbHeaderField *ct = &g_array_index (ref->outer->fields, EbHeaderField, 0);
  EbParams *ctp = eb_params_parse (e->str + ct->value, ct->value_end - ct->value);
  gboolean external_body = g_strcmp0 (eb_params_get_media_type (ctp), "message/external-body") == 0;
  eb_params_free (ctp);

  gboolean is_url = ref->access_type && strcmp (ref->access_type, "url") == 0;
  if (ref->url && !is_url)
    __builtin_trap ();
  if (is_url && ref->read_reason == EB_REASON_RESOLVED && !ref->url)
    __builtin_trap ();
  if (external_body
      && (g_strcmp0 (ref->inner_type, "text/plain") != 0 || ref->inner_type_bad
          || g_strcmp0 (ref->inner_cte, "7bit") != 0))
    __builtin_trap ();

  eb_extref_free (ref);
  g_string_free (e, TRUE);
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  EbParams *p = eb_params_parse ((const char *) data, size);
  const char *names[] = { "access-type", "url", "name", "site", "directory", "mode", "server",
                          "subject", "expiration", "size", "permission", "boundary" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++) {
    eb_params_get (p, names[i], NULL);
    GBytes *b = eb_params_get_octets (p, names[i], i & 1, NULL);
    if (b)
      g_bytes_unref (b);
  }
  for (guint i = 0; i < eb_params_get_n (p); i++)
    eb_params_get_name_at (p, i);
  eb_params_free (p);

  read_as_reference (data, size);
  return 0;
}
