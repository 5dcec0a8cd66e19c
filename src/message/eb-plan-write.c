/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-plan-write.c - a plan's writers: the splice (see eb-plan.h).
 *
 * Every byte outside a replaced entity or a removed field is copied from the
 * message verbatim; each replaced entity is written as its new header and its
 * data encoded for transport. */
#include "eb-plan-private.h"
#include <string.h>

/* Write @len bytes of new unencoded body text, mboxrd-quoted: a line "From ",
 * ">From ", ">>From " ... gets one more ">", which mboxrd readers (mutt,
 * Dovecot, Python's mailbox) take off again. */
static gboolean
write_mboxrd_quoted (GOutputStream *out, const char *d, gsize len, GError **error)
{
  gsize p = 0, flushed = 0;
  while (p < len) {
    gsize q = p;
    while (q < len && d[q] == '>')
      q++;
    if (len - q >= 5 && memcmp (d + q, "From ", 5) == 0) {
      if (!g_output_stream_write_all (out, d + flushed, p - flushed, NULL, NULL, error)
          || !g_output_stream_write_all (out, ">", 1, NULL, NULL, error))
        return FALSE;
      flushed = p;
    }
    const char *nl = memchr (d + p, '\n', len - p);
    p = nl ? (gsize) (nl - d) + 1 : len;
  }
  return g_output_stream_write_all (out, d + flushed, len - flushed, NULL, NULL, error);
}

/* The data of @res encoded for transport; with @mboxrd, a body written
 * unencoded (7bit) is mboxrd-quoted. */
static gboolean
write_data (const EbResolution *res, const char *eol, gboolean mboxrd, GOutputStream *out,
            GError **error)
{
  gsize dlen = 0;
  const guint8 *d = g_bytes_get_data (res->data, &dlen);
  if (!mboxrd || res->encoding != EB_OUT_7BIT)
    return eb_transfer_write (res->encoding, d, dlen, eol, out, error);
  g_autoptr (GOutputStream) body = g_memory_output_stream_new_resizable ();
  if (!eb_transfer_write (res->encoding, d, dlen, eol, body, error)
      || !g_output_stream_close (body, NULL, error))
    return FALSE;
  GMemoryOutputStream *m = G_MEMORY_OUTPUT_STREAM (body);
  return write_mboxrd_quoted (out, g_memory_output_stream_get_data (m),
                              g_memory_output_stream_get_data_size (m), error);
}

/* Write the X-Extbody field of @r in the line ending @eol. */
static gboolean
write_filter_field (const EbPlan *r, const char *eol, GOutputStream *out, GError **error)
{
  g_autofree char *value = eb_plan_filter_field_value (r);
  g_autofree char *line = g_strconcat (EB_FILTER_FIELD ":", value, eol, NULL);
  return g_output_stream_write_all (out, line, strlen (line), NULL, NULL, error);
}

/* Write the new header @h (blank line included) with the X-Extbody field
 * before its blank line. */
static gboolean
write_header_with_field (const EbPlan *r, const GString *h, const char *eol,
                         GOutputStream *out, GError **error)
{
  gsize el = strlen (eol);
  gsize at = h->len >= el && memcmp (h->str + h->len - el, eol, el) == 0 ? h->len - el : h->len;
  return g_output_stream_write_all (out, h->str, at, NULL, NULL, error)
         && write_filter_field (r, eol, out, error)
         && g_output_stream_write_all (out, h->str + at, h->len - at, NULL, NULL, error);
}

/* Write buf[@from, @to) of the message; with @field_at inside it (not
 * G_MAXSIZE), the X-Extbody field is written there, and @field_at becomes
 * G_MAXSIZE. */
static gboolean
write_verbatim (const EbPlan *r, const char *buf, gsize from, gsize to, gsize *field_at,
                GOutputStream *out, GError **error)
{
  if (*field_at < from || *field_at > to)
    return g_output_stream_write_all (out, buf + from, to - from, NULL, NULL, error);
  gsize at = *field_at;
  *field_at = G_MAXSIZE;
  /* a header that ends without a line break (no body at all) gets one first */
  gboolean need_eol = at > 0 && buf[at - 1] != '\n';
  return g_output_stream_write_all (out, buf + from, at - from, NULL, NULL, error)
         && (!need_eol || g_output_stream_write_all (out, r->scan->eol, strlen (r->scan->eol),
                                                     NULL, NULL, error))
         && write_filter_field (r, r->scan->eol, out, error)
         && g_output_stream_write_all (out, buf + at, to - at, NULL, NULL, error);
}

/* Splice the new message (with @body_only: only what follows its header and
 * the blank line; with @mboxrd: new unencoded bodies mboxrd-quoted) to @out. */
static gboolean
splice (const EbPlan *r, GOutputStream *out,
        gboolean body_only, gboolean mboxrd, GError **error)
{
  gboolean ok = TRUE;
  const char *buf = r->message->buf;
  gsize len = r->message->len;
  gsize pos = 0;
  const EbResolution *root = eb_plan_root_resolution (r);
  /* where the X-Extbody field goes: the end of the message header (a resolved
   * message body: the end of its new header) */
  gsize field_at = G_MAXSIZE;
  if (body_only && !root) {
    pos = eb_message_get_top (r->message)->body;
  } else if (!body_only) {
    ok = g_output_stream_write_all (out, r->message->input, r->message->from_len, NULL, NULL, error);
    if (r->filter_field && r->scan && !root) {
      field_at = eb_message_get_top (r->message)->end;
    }
  }
  /* the fields removed from the message header: they lie before every
   * reference, or inside the message's own (then rebuilt without them) */
  const EbRef *first = eb_plan_first_resolved (r);
  for (guint k = 0; ok && r->changed && r->removed && k < r->removed->len; k++) {
    const EbRange *rg = &g_array_index (r->removed, EbRange, k);
    if (rg->start < pos)
      continue;
    if (first && eb_extref_replaced_start (first) <= rg->start)
      break;
    ok = write_verbatim (r, buf, pos, rg->start, &field_at, out, error);
    pos = rg->end;
  }
  for (guint i = 0; ok && r->changed && r->scan && i < r->scan->refs->len; i++) {
    const EbRef *ref = g_ptr_array_index (r->scan->refs, i);
    const EbResolution *res = g_ptr_array_index (r->resolutions, i);
    if (res->reason != EB_REASON_RESOLVED)
      continue;
    ok = write_verbatim (r, buf, pos, eb_extref_replaced_start (ref), &field_at, out, error)
         && (res == root && body_only ? TRUE
             : res == root && r->filter_field
             ? write_header_with_field (r, eb_resolution_header (res), r->scan->eol, out, error)
             : g_output_stream_write_all (out, eb_resolution_header (res)->str,
                                          eb_resolution_header (res)->len, NULL, NULL, error))
         && write_data (res, r->scan->eol, mboxrd, out, error);
    pos = eb_extref_replaced_end (ref);
  }
  if (ok)
    ok = write_verbatim (r, buf, pos, len, &field_at, out, error);
  if (ok)
    ok = g_output_stream_flush (out, NULL, error);
  return ok;
}

gboolean
eb_plan_write (const EbPlan *r, GOutputStream *out, GError **error)
{
  if (!r->changed) {
    gboolean ok = g_output_stream_write_all (out, r->message->input, r->message->input_len, NULL,
                                             NULL, error);
    return ok && g_output_stream_flush (out, NULL, error);
  }
  return splice (r, out, FALSE, FALSE, error);
}

gboolean
eb_plan_write_mboxrd (const EbPlan *r, GOutputStream *out, GError **error)
{
  if (!r->changed)
    return eb_plan_write (r, out, error);
  return splice (r, out, FALSE, TRUE, error);
}

gboolean
eb_plan_write_body (const EbPlan *r, GOutputStream *out, GError **error)
{
  return splice (r, out, TRUE, FALSE, error);
}
