/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-inspect.c - JSON lines and report lines (see eb-inspect.h). */
#include "eb-inspect.h"
#include <json-glib/json-glib.h>
#include <string.h>

#define URL_SHOW_MAX 72        /* table and report: URLs are cut here */
#define JSON_DATA_URL_MAX 1024 /* JSON: data: URLs longer than this are cut */

char *
eb_inspect_printable (const char *s, gsize max)
{
  if (!s)
    return g_strdup ("-");
  gsize len = strlen (s);
  GString *out = g_string_sized_new (MIN (len, max ? max + 32 : len) + 8);
  const char *p = s;
  const char *end = s + len;
  while (p < end) {
    /* the next piece: an escape, an ASCII character or a whole UTF-8 character */
    char piece[8];
    gsize n;
    const char *next;
    guchar c = (guchar) *p;
    gunichar u = c < 0x80 ? c : g_utf8_get_char_validated (p, end - p);
    if (c < 0x20 || c == 0x7f || c == '\\' || u == (gunichar) -1 || u == (gunichar) -2) {
      n = (gsize) g_snprintf (piece, sizeof piece, "\\x%02x", c);
      next = p + 1;
    } else {
      next = c < 0x80 ? p + 1 : g_utf8_next_char (p);
      n = (gsize) (next - p);
      memcpy (piece, p, n);
    }
    if (max && out->len + n > max) {   /* at most @max bytes, then the length */
      g_string_append_printf (out, "...[%" G_GSIZE_FORMAT " bytes]", len);
      break;
    }
    g_string_append_len (out, piece, (gssize) n);
    p = next;
  }
  return g_string_free (out, FALSE);
}

const char *
eb_inspect_action (EbReason reason)
{
  if (reason == EB_REASON_WOULD_FETCH)
    return "fetch";
  return reason == EB_REASON_RESOLVED ? "resolve" : "leave";
}

static void
add_str (JsonBuilder *b, const char *name, const char *value)
{
  json_builder_set_member_name (b, name);
  if (!value) {
    json_builder_add_null_value (b);
    return;
  }
  g_autofree char *valid = g_utf8_make_valid (value, -1);
  json_builder_add_string_value (b, valid);
}

char *
eb_inspect_json (const char *source, gint64 mbox_offset, const char *message_id,
                 const EbPlan *result, guint i)
{
  EbReason reason = eb_plan_get_ref_reason (result, i);
  const char *url = eb_plan_get_ref_url (result, i);
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  if (source)
    add_str (b, "source", source);
  if (mbox_offset >= 0) {
    json_builder_set_member_name (b, "mbox_offset");
    json_builder_add_int_value (b, mbox_offset);
  }
  if (message_id)
    add_str (b, "message_id", message_id);
  add_str (b, "part", eb_plan_get_ref_path (result, i));
  add_str (b, "access_type", eb_plan_get_ref_access_type (result, i));
  if (url && g_ascii_strncasecmp (url, "data:", 5) == 0 && strlen (url) > JSON_DATA_URL_MAX) {
    g_autofree char *cut = g_strndup (url, JSON_DATA_URL_MAX);
    add_str (b, "url", cut);
    json_builder_set_member_name (b, "url_truncated");
    json_builder_add_boolean_value (b, TRUE);
  } else {
    add_str (b, "url", url);
  }
  if (url) {
    json_builder_set_member_name (b, "url_length");
    json_builder_add_int_value (b, (gint64) strlen (url));
  }
  static const char *const params[] = {
    "name", "site", "directory", "mode", "server", "subject",
    "expiration", "size", "permission", "inner_type",
  };
  for (guint k = 0; k < G_N_ELEMENTS (params); k++)
    add_str (b, params[k], eb_plan_get_ref_param (result, i, params[k]));
  add_str (b, "action", eb_inspect_action (reason));
  add_str (b, "reason", eb_reason_token (reason));
  add_str (b, "reason_text", eb_reason_text (reason));
  add_str (b, "detail", eb_plan_get_ref_detail (result, i));
  if (reason == EB_REASON_RESOLVED) {
    add_str (b, "new_type", eb_plan_get_ref_content_type (result, i));
    json_builder_set_member_name (b, "data_size");
    json_builder_add_int_value (b, (gint64) eb_plan_get_ref_size (result, i));
    add_str (b, "sha256", eb_plan_get_ref_sha256 (result, i));
    add_str (b, "encoding", eb_plan_get_ref_encoding (result, i));
    const char *replaced = eb_plan_get_ref_replaced_path (result, i);
    if (replaced)   /* the fallback shape: the whole alternative is replaced */
      add_str (b, "replaced_part", replaced);
  }
  json_builder_end_object (b);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  return json_generator_to_data (gen, NULL);
}

/* What the table shows in its URL / PARAMETERS column. */
char *
eb_inspect_target (const EbPlan *result, guint i, gsize max)
{
  const char *url = eb_plan_get_ref_url (result, i);
  if (url)
    return eb_inspect_printable (url, max);
  GString *s = g_string_new (NULL);
  static const char *const names[] = { "site", "directory", "name", "mode", "server", "subject" };
  for (guint k = 0; k < G_N_ELEMENTS (names); k++) {
    const char *value = eb_plan_get_ref_param (result, i, names[k]);
    if (!value)
      continue;
    g_autofree char *v = eb_inspect_printable (value, 40);
    g_string_append_printf (s, "%s%s=%s", s->len ? " " : "", names[k], v);
  }
  if (!s->len)
    g_string_append_c (s, '-');
  return g_string_free (s, FALSE);
}

char *
eb_inspect_report_line (const EbPlan *result, guint i)
{
  EbReason reason = eb_plan_get_ref_reason (result, i);
  g_autofree char *at = eb_inspect_printable (eb_plan_get_ref_access_type (result, i), 20);
  g_autofree char *target = eb_inspect_target (result, i, URL_SHOW_MAX);
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "part %s: access-type=%s %s: ",
                          eb_plan_get_ref_path (result, i), at, target);
  if (reason == EB_REASON_RESOLVED) {
    g_string_append_printf (s, "resolved (%s, %" G_GUINT64_FORMAT " bytes, %s)",
                            eb_plan_get_ref_content_type (result, i),
                            eb_plan_get_ref_size (result, i),
                            eb_plan_get_ref_encoding (result, i));
    const char *replaced = eb_plan_get_ref_replaced_path (result, i);
    if (replaced && *replaced) {
      g_autofree char *ap = eb_inspect_printable (replaced, 40);
      g_string_append_printf (s, ", replacing multipart/alternative at part %s", ap);
    } else if (replaced) {
      g_string_append (s, ", replacing the multipart/alternative message body");
    }
  } else {
    const char *detail = eb_plan_get_ref_detail (result, i);
    g_string_append_printf (s, "left: %s: %s", eb_reason_token (reason), eb_reason_text (reason));
    if (detail) {
      g_autofree char *d = eb_inspect_printable (detail, 120);
      g_string_append_printf (s, " (%s)", d);
    }
  }
  return g_string_free (s, FALSE);
}
