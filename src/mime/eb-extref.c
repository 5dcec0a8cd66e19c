/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-extref.c - reading one external-body reference (see eb-extref.h). */
#include "eb-extref.h"
#include "eb-error.h"
#include "eb-params.h"
#include "eb-urlparam.h"
#include <string.h>

EbRef *
eb_extref_new (void)
{
  EbRef *ref = g_new0 (EbRef, 1);
  ref->boundaries = g_ptr_array_new_with_free_func (g_free);
  return ref;
}

void
eb_extref_free (EbRef *ref)
{
  if (!ref)
    return;
  g_free (ref->path);
  g_ptr_array_unref (ref->boundaries);
  eb_header_block_free (ref->outer);
  eb_header_block_free (ref->inner);
  g_free (ref->read_detail);
  g_free (ref->access_type);
  g_free (ref->url);
  g_free (ref->name);
  g_free (ref->site);
  g_free (ref->directory);
  g_free (ref->mode);
  g_free (ref->server);
  g_free (ref->subject);
  g_free (ref->expiration);
  g_free (ref->size);
  g_free (ref->permission);
  g_free (ref->inner_type);
  g_free (ref->inner_cte);
  g_free (ref->alt_path);
  eb_header_block_free (ref->alt_outer);
  g_free (ref);
}

gsize
eb_extref_replaced_start (const EbRef *ref)
{
  return ref->alt ? ref->alt_start : ref->block_start;
}

gsize
eb_extref_replaced_end (const EbRef *ref)
{
  return ref->alt ? ref->alt_end : ref->end;
}

gboolean
eb_extref_replaced_is_root (const EbRef *ref)
{
  return ref->alt ? ref->alt_is_root : ref->is_root;
}

static void
set_reason (EbRef *ref, EbReason reason, const char *detail)
{
  if (ref->read_reason != EB_REASON_RESOLVED)
    return;   /* the first problem is the one reported */
  ref->read_reason = reason;
  g_free (ref->read_detail);
  ref->read_detail = g_strdup (detail);
}

/* The only Content-Type field of @block, or NULL; *@dup is set when there are more. */
static const EbHeaderField *
content_type_field (const EbHeaderBlock *block, const char *buf, gboolean *dup)
{
  const EbHeaderField *found = NULL;
  *dup = FALSE;
  for (guint i = 0; i < block->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (block->fields, EbHeaderField, i);
    if (eb_header_field_is (f, buf, "Content-Type")) {
      if (found)
        *dup = TRUE;
      else
        found = f;
    }
  }
  return found;
}

static char *
param_or_null (EbParams *params, const char *name)
{
  const char *v = eb_params_get (params, name, NULL);
  return v ? g_strdup (v) : NULL;
}

const EbHeaderBlock *
eb_extref_outer (EbRef *ref, const char *buf)
{
  /* A block scanned from block_start whose body is content_start is the one
   * a scan up to content_start gives: the header's fields end there. */
  if (!ref->outer || ref->outer->start != ref->block_start || ref->outer->body != ref->content_start) {
    eb_header_block_free (ref->outer);
    ref->outer = eb_header_block_scan (buf, ref->block_start, ref->content_start);
  }
  return ref->outer;
}

/* The URL parameter's octets, as eb_params_get_octets gives them. RFC 2017:
 * the URL is one quoted string of words; URL="a" "b" (or a word after the
 * closing quote) would be resolved from "a" alone, a URL the sender did not
 * write: an error. */
static GBytes *
url_octets_of (const EbParams *params, GError **error)
{
  GBytes *octets = eb_params_get_octets (params, "url", TRUE, error);
  if (octets && eb_params_get_junk_after (params, "url")) {
    g_bytes_unref (octets);
    g_set_error_literal (error, EB_ERROR, EB_ERROR_SYNTAX,
                         "parameter url: text after its value that is no parameter "
                         "(the URL must be one quoted string)");
    return NULL;
  }
  return octets;
}

void
eb_extref_read (EbRef *ref, const char *buf, gsize len)
{
  g_return_if_fail (ref->block_start <= ref->content_start && ref->content_start <= ref->end
                    && ref->end <= len);

  /* read afresh: what an earlier reading found goes, but the outer header
   * block of these very offsets (eb-message's walk scanned it to check
   * them): a header may be as large as the message */
  eb_header_block_free (ref->inner);
  char **strings[] = { &ref->read_detail, &ref->access_type, &ref->url, &ref->name, &ref->site,
                       &ref->directory, &ref->mode, &ref->server, &ref->subject, &ref->expiration,
                       &ref->size, &ref->permission, &ref->inner_type, &ref->inner_cte };
  for (guint i = 0; i < G_N_ELEMENTS (strings); i++)
    g_clear_pointer (strings[i], g_free);
  ref->inner_type_bad = FALSE;
  eb_extref_outer (ref, buf);
  ref->inner = eb_header_block_scan (buf, ref->content_start, ref->end);
  ref->read_reason = EB_REASON_RESOLVED;

  gboolean dup = FALSE;
  const EbHeaderField *ct = content_type_field (ref->outer, buf, &dup);
  if (!ct) {
    set_reason (ref, EB_REASON_UNLOCATABLE, "no Content-Type field where GMime saw one");
    return;
  }
  if (dup)
    set_reason (ref, EB_REASON_DUPLICATE_FIELD, "two Content-Type fields");

  const char *raw = buf + ct->value;
  gsize raw_len = ct->value_end - ct->value;
  GBytes *url_octets = NULL;          /* taken by eb_urlparam_reassemble_octets */
  g_autoptr (GError) uerr = NULL;
  {
    /* One parse of the value for the small parameters and the URL. The
     * parameter list holds a copy of every value it keeps, the URL included
     * (which may be as large as the message): it goes as soon as the URL's
     * octets are out of it, before they are reassembled. */
    static const char *const only[] = { "access-type", "name", "site", "directory", "mode",
                                        "server", "subject", "expiration", "size",
                                        "permission", "url", NULL };
    g_autoptr (EbParams) params = eb_params_parse_only (raw, raw_len, only);
    const char *media = eb_params_get_media_type (params);
    if (!media || strcmp (media, "message/external-body") != 0) {
      set_reason (ref, EB_REASON_UNLOCATABLE, "Content-Type is not message/external-body");
      return;
    }

    g_autoptr (GError) err = NULL;
    const char *at = eb_params_get (params, "access-type", &err);
    if (at) {
      /* case-insensitive and exact (RFC 2046 5.2.3): "URL " is not URL */
      ref->access_type = g_ascii_strdown (at, -1);
    } else if (g_error_matches (err, EB_ERROR, EB_ERROR_MISSING)) {
      set_reason (ref, EB_REASON_NO_ACCESS_TYPE, NULL);
    } else {
      set_reason (ref, EB_REASON_BAD_ACCESS_TYPE, err->message);
    }

    ref->name = param_or_null (params, "name");
    ref->site = param_or_null (params, "site");
    ref->directory = param_or_null (params, "directory");
    ref->mode = param_or_null (params, "mode");
    ref->server = param_or_null (params, "server");
    ref->subject = param_or_null (params, "subject");
    ref->expiration = param_or_null (params, "expiration");
    ref->size = param_or_null (params, "size");
    ref->permission = param_or_null (params, "permission");

    if (ref->access_type && strcmp (ref->access_type, "url") == 0)
      url_octets = url_octets_of (params, &uerr);
  }
  if (ref->access_type && strcmp (ref->access_type, "url") == 0) {
    if (url_octets)
      ref->url = eb_urlparam_reassemble_octets (url_octets, &uerr);
    if (!ref->url) {
      if (g_error_matches (uerr, EB_ERROR, EB_ERROR_MISSING))
        set_reason (ref, EB_REASON_URL_MISSING, uerr->message);
      else
        set_reason (ref, EB_REASON_URL_INVALID, uerr->message);
    }
  }

  /* RFC 2046 5.2.3: the external-body entity itself is 7bit, 8bit or binary;
   * a reader that decodes any other encoding sees another inner header. */
  gint octe = eb_header_block_find (ref->outer, buf, "Content-Transfer-Encoding");
  if (octe >= 0) {
    g_autofree char *v = eb_header_field_unfold (&g_array_index (ref->outer->fields, EbHeaderField,
                                                                 octe), buf);
    g_strstrip (v);
    if (g_ascii_strcasecmp (v, "7bit") && g_ascii_strcasecmp (v, "8bit")
        && g_ascii_strcasecmp (v, "binary")) {
      g_autofree char *shown = g_strdup_printf ("Content-Transfer-Encoding: %.60s", v);
      set_reason (ref, EB_REASON_OUTER_CTE, shown);
    }
  }

  /* The inner header. */
  gboolean idup = FALSE;
  const EbHeaderField *ict = content_type_field (ref->inner, buf, &idup);
  if (ict) {
    g_autoptr (EbParams) ip = eb_params_parse (buf + ict->value, ict->value_end - ict->value);
    const char *imedia = eb_params_get_media_type (ip);
    if (imedia && !idup)
      ref->inner_type = g_strdup (imedia);
    else
      ref->inner_type_bad = TRUE;
  }
  gint icte = eb_header_block_find (ref->inner, buf, "Content-Transfer-Encoding");
  if (icte >= 0)
    ref->inner_cte = eb_header_field_unfold (&g_array_index (ref->inner->fields, EbHeaderField,
                                                             icte), buf);
}
