/* eb-resolve.c - decisions and replacement headers (see eb-resolve.h). */
#include "eb-resolve.h"
#include "eb-dataurl.h"
#include "eb-error.h"
#include <string.h>

void
eb_resolution_free (EbResolution *res)
{
  if (!res)
    return;
  g_free (res->detail);
  if (res->header)
    g_string_free (res->header, TRUE);
  if (res->data)
    g_bytes_unref (res->data);
  g_free (res->type);
  g_free (res->sha256);
  g_free (res);
}

static EbResolution *
leave (EbResolution *res, EbReason reason, char *detail /* (transfer full) */)
{
  res->reason = reason;
  res->detail = detail;
  return res;
}

/* Append the raw field @f, its line breaks turned into @eol. */
static void
append_field (GString *out, const char *buf, const EbHeaderField *f, const char *eol)
{
  gsize p = f->start;
  while (p < f->value_end) {
    const char *nl = memchr (buf + p, '\n', f->value_end - p);
    gsize e = nl ? (gsize) (nl - buf) : f->value_end;
    gsize le = (e > p && buf[e - 1] == '\r') ? e - 1 : e;
    g_string_append_len (out, buf + p, (gssize) (le - p));
    g_string_append (out, eol);
    p = nl ? e + 1 : f->value_end;
  }
  if (f->value_end == f->start)
    g_string_append (out, eol);
}

static gboolean
block_has (const EbHeaderBlock *block, const char *buf, const char *base, gsize name_len)
{
  for (guint i = 0; i < block->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (block->fields, EbHeaderField, i);
    if (f->name_len == name_len && g_ascii_strncasecmp (buf + f->start, base, name_len) == 0)
      return TRUE;
  }
  return FALSE;
}

/* Multipart or message data goes out as 7bit lines or not at all: it may not hold
 * a line that would end an enclosing multipart. */
static gboolean
composite_safe (const guint8 *d, gsize len, GPtrArray *bounds)
{
  gsize col = 0;
  for (gsize i = 0; i < len; i++) {
    guint8 c = d[i];
    if (col == 0 && c == '-' && i + 1 < len && d[i + 1] == '-') {
      for (guint b = 0; b < bounds->len; b++) {
        const char *bd = g_ptr_array_index (bounds, b);
        gsize bl = strlen (bd);
        if (len - i - 2 >= bl && memcmp (d + i + 2, bd, bl) == 0)
          return FALSE;
      }
    }
    if (c == '\n') {
      col = 0;
      continue;
    }
    if (c == 0 || c >= 128 || (c == '\r' && !(i + 1 < len && d[i + 1] == '\n')))
      return FALSE;
    if (c != '\r' && ++col > 998)
      return FALSE;
  }
  return TRUE;
}

static char *
short_type (const char *t)
{
  return strlen (t) <= 100 ? g_strdup (t) : g_strdup_printf ("%.100s...", t);
}

EbResolution *
eb_resolve (const EbRef *ref, const char *buf, gsize len, const char *eol,
            const EbConfig *config, guint64 *budget)
{
  EbResolution *res = g_new0 (EbResolution, 1);

  if (ref->walk_reason != EB_REASON_RESOLVED)
    return leave (res, ref->walk_reason, NULL);
  if (!ref->located || ref->read_reason != EB_REASON_RESOLVED)
    return leave (res, ref->located ? ref->read_reason : EB_REASON_UNLOCATABLE,
                  g_strdup (ref->read_detail));
  if (!ref->access_type || strcmp (ref->access_type, "url") != 0)
    return leave (res, EB_REASON_ACCESS_TYPE,
                  g_strdup_printf ("access-type=%s", ref->access_type ? ref->access_type : ""));
  if (!eb_data_url_has_scheme (ref->url, strlen (ref->url))) {
    const char *colon = strchr (ref->url, ':');
    gsize sl = colon ? (gsize) (colon - ref->url) : 0;
    g_autofree char *scheme = g_ascii_strdown (ref->url, (gssize) MIN (sl, 32));
    return leave (res, EB_REASON_SCHEME_DISABLED,
                  g_strdup_printf ("scheme \"%s\"", sl ? scheme : ""));
  }
  if (ref->inner_type_bad)
    return leave (res, EB_REASON_BAD_INNER_HEADER,
                  g_strdup ("inner Content-Type unreadable or repeated"));

  g_autoptr (GError) err = NULL;
  g_autoptr (EbDataUrl) du = eb_data_url_process (ref->url, (gssize) strlen (ref->url), &err);
  if (!du)
    return leave (res, EB_REASON_DATA_URL_INVALID, g_strdup (err->message));

  g_autofree char *data_essence = eb_mime_type_get_essence (du->mime_type);
  if (du->type_given && ref->inner_type && strcmp (data_essence, ref->inner_type) != 0) {
    g_autofree char *a = short_type (data_essence);
    g_autofree char *b = short_type (ref->inner_type);
    return leave (res, EB_REASON_TYPE_MISMATCH,
                  g_strdup_printf ("data: URL is %s, inner header says %s", a, b));
  }

  EbCte cte = eb_transfer_parse_cte (ref->inner_cte);
  if (cte == EB_CTE_UNKNOWN)
    return leave (res, EB_REASON_CTE_UNKNOWN,
                  g_strdup_printf ("Content-Transfer-Encoding: %.60s", ref->inner_cte));
  if (g_bytes_get_size (du->body) > config->max_part_bytes)
    return leave (res, EB_REASON_PART_TOO_LARGE,
                  g_strdup_printf ("%" G_GSIZE_FORMAT " bytes", g_bytes_get_size (du->body)));
  g_autoptr (GBytes) data = eb_transfer_decode (cte, du->body, &err);
  if (!data)
    return leave (res, EB_REASON_CTE_INVALID,
                  g_strdup_printf ("as %s: %s", ref->inner_cte, err->message));
  gsize dlen = 0;
  const guint8 *d = g_bytes_get_data (data, &dlen);
  if (dlen > config->max_part_bytes)
    return leave (res, EB_REASON_PART_TOO_LARGE,
                  g_strdup_printf ("%" G_GSIZE_FORMAT " bytes", dlen));
  if (*budget + dlen > config->max_message_bytes)
    return leave (res, EB_REASON_MESSAGE_BUDGET,
                  g_strdup_printf ("%" G_GUINT64_FORMAT " + %" G_GSIZE_FORMAT " bytes", *budget, dlen));

  const char *type = ref->inner_type ? ref->inner_type : data_essence;
  gboolean composite = g_str_has_prefix (type, "multipart/") || g_str_has_prefix (type, "message/");
  EbOutEncoding enc;
  if (composite) {
    if (!composite_safe (d, dlen, ref->boundaries))
      return leave (res, EB_REASON_COMPOSITE_UNSAFE, g_strdup (type));
    enc = EB_OUT_7BIT;
  } else {
    enc = eb_transfer_choose (g_str_has_prefix (type, "text/"), d, dlen);
  }

  /* The new header. */
  GString *h = g_string_new (NULL);
  const EbHeaderBlock *outer = ref->outer;
  const EbHeaderBlock *inner = ref->inner;
  if (ref->is_root) {
    for (guint i = 0; i < outer->fields->len; i++) {
      const EbHeaderField *f = &g_array_index (outer->fields, EbHeaderField, i);
      if (!eb_header_field_is_content (f, buf))
        append_field (h, buf, f, eol);
    }
  }
  for (guint i = 0; i < inner->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (inner->fields, EbHeaderField, i);
    if (!eb_header_field_is (f, buf, "Content-Transfer-Encoding"))
      append_field (h, buf, f, eol);
  }
  if (!ref->inner_type) {
    g_autofree char *ser = eb_mime_type_serialize (du->mime_type);
    g_string_append_printf (h, "Content-Type: %s%s", ser, eol);
  }
  for (guint i = 0; i < outer->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (outer->fields, EbHeaderField, i);
    if (eb_header_field_is (f, buf, "Content-Type")
        || eb_header_field_is (f, buf, "Content-Transfer-Encoding"))
      continue;
    if (ref->is_root && !eb_header_field_is_content (f, buf))
      continue;   /* already copied above */
    if (block_has (inner, buf, buf + f->start, f->name_len))
      continue;   /* the inner header wins */
    append_field (h, buf, f, eol);
  }
  g_string_append_printf (h, "Content-Transfer-Encoding: %s%s", eb_transfer_name (enc), eol);
  res->sha256 = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, data);
  g_autofree char *st = short_type (data_essence);
  g_string_append_printf (h, "%s: access-type=URL; scheme=data; type=\"%s\";%s\tsize=%"
                          G_GSIZE_FORMAT "; sha256=%s%s",
                          EB_TRACE_FIELD, st, eol, dlen, res->sha256, eol);
  g_string_append (h, eol);

  *budget += dlen;
  res->reason = EB_REASON_RESOLVED;
  res->header = h;
  res->data = g_steal_pointer (&data);
  res->encoding = enc;
  res->type = g_strdup (type);
  (void) len;
  return res;
}
