/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-resolution.c - what resolving one reference gave (see eb-resolution.h). */
#include "eb-resolution.h"

void
eb_resolution_free (EbResolution *res)
{
  if (!res)
    return;
  g_free (res->detail);
  if (res->head)
    g_string_free (res->head, TRUE);
  if (res->data)
    g_bytes_unref (res->data);
  g_free (res->type);
  g_free (res->trace);
  g_free (res->eol);
  g_free (res->digest);
  g_free (res);
}

const char *
eb_resolution_sha256 (const EbResolution *cres)
{
  EbResolution *res = (EbResolution *) cres;   /* a cache: computed once */
  if (!res->digest && res->reason == EB_REASON_RESOLVED && res->data)
    res->digest = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, res->data);
  return res->digest;
}

const GString *
eb_resolution_header (const EbResolution *cres)
{
  EbResolution *res = (EbResolution *) cres;   /* finished once */
  if (res->head && res->trace) {
    g_string_append_printf (res->head, "%s: %s;%s\tsize=%" G_GSIZE_FORMAT "; sha256=%s%s",
                            EB_TRACE_FIELD, res->trace, res->eol, g_bytes_get_size (res->data),
                            eb_resolution_sha256 (res), res->eol);
    g_string_append (res->head, res->eol);
    g_clear_pointer (&res->trace, g_free);
  }
  return res->head;
}
