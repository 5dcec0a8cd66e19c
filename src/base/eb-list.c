/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-list.c - the one list syntax of the configuration, and its typed lists
 * (see eb-list.h). */
#include "eb-list.h"
#include "eb-error.h"
#include <string.h>

static gboolean
is_space (char ch)
{
  return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\f' || ch == '\v';
}

GPtrArray *
eb_list_split (const char *text, GError **error)
{
  g_autoptr (GPtrArray) items = g_ptr_array_new_with_free_func (g_free);
  const char *p = text ? text : "";
  while (is_space (*p))
    p++;
  if (*p == '\0')
    return g_steal_pointer (&items);
  for (;;) {
    const char *start = p;
    while (*p && *p != ',' && !is_space (*p))
      p++;
    if (p == start) {
      g_set_error (error, EB_ERROR, EB_ERROR_EMPTY, "item %u of the list is empty", items->len + 1);
      return NULL;
    }
    g_ptr_array_add (items, g_strndup (start, (gsize) (p - start)));
    while (is_space (*p))
      p++;
    if (*p == '\0')
      break;
    if (*p == ',') {
      p++;
      while (is_space (*p))
        p++;
      if (*p == '\0') {
        g_set_error (error, EB_ERROR, EB_ERROR_EMPTY, "item %u of the list is empty (trailing comma)",
                     items->len + 1);
        return NULL;
      }
    }
  }
  return g_steal_pointer (&items);
}

gboolean
eb_list_parse_cidrs (const char *text, GPtrArray **out, GError **error)
{
  g_return_val_if_fail (out != NULL, FALSE);
  g_autoptr (GPtrArray) items = eb_list_split (text, error);
  if (items == NULL)
    return FALSE;
  g_autoptr (GPtrArray) list = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < items->len; i++) {
    EbCidr *c = g_new (EbCidr, 1);
    g_ptr_array_add (list, c);
    if (!eb_policy_cidr_parse (items->pdata[i], c, error)) {
      g_prefix_error (error, "item %u of the list: ", i + 1);
      return FALSE;
    }
  }
  *out = g_steal_pointer (&list);
  return TRUE;
}

gboolean
eb_list_parse_ports (const char *text, GArray **out, GError **error)
{
  g_return_val_if_fail (out != NULL, FALSE);
  g_autoptr (GPtrArray) items = eb_list_split (text, error);
  if (items == NULL)
    return FALSE;
  g_autoptr (GArray) ports = g_array_new (FALSE, FALSE, sizeof (guint16));
  for (guint i = 0; i < items->len; i++) {
    const char *s = items->pdata[i];
    gsize n = strlen (s);
    gboolean ok = n <= 5 && s[0] != '0';
    for (gsize j = 0; ok && j < n; j++)
      ok = g_ascii_isdigit (s[j]);
    guint64 v = ok ? g_ascii_strtoull (s, NULL, 10) : 0;
    if (!ok || v < 1 || v > 65535) {
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
                   "item %u of the list: \"%s\" is not a port number (1 to 65535)", i + 1, s);
      return FALSE;
    }
    guint16 port = (guint16) v;
    g_array_append_val (ports, port);
  }
  *out = g_steal_pointer (&ports);
  return TRUE;
}

GStrv
eb_list_domains (const char *const *items)
{
  GStrvBuilder *b = g_strv_builder_new ();
  for (guint i = 0; items && items[i]; i++) {
    g_autofree char *v = g_ascii_strdown (items[i], -1);
    char *s = v;
    while (*s == '.')
      s++;
    gsize l = strlen (s);
    while (l && s[l - 1] == '.')
      s[--l] = '\0';
    if (*s)
      g_strv_builder_add (b, s);
  }
  GStrv out = g_strv_builder_end (b);
  g_strv_builder_unref (b);
  return out;
}
