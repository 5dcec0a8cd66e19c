/* eb-config.c - the configuration table and key-file loading (see eb-config.h). */
#include "eb-config.h"
#include "eb-error.h"
#include <stddef.h>
#include <string.h>

#define KEY(n, t, d, lo, hi, doc) { #n, t, d, lo, hi, offsetof (EbConfig, n), doc }

static const EbConfigKey keys[] = {
  KEY (max_message_size, EB_CONFIG_SIZE, "64M", 1024, G_GUINT64_CONSTANT (1) << 40,
       "Messages larger than this are passed on unchanged, without a MIME parse."),
  KEY (max_nesting_depth, EB_CONFIG_UINT, "50", 1, 1000,
       "Multipart and message/rfc822 levels walked; deeper references are left alone."),
  KEY (max_parts, EB_CONFIG_UINT, "10000", 1, 10000000,
       "MIME entities walked per message; a message with more is left unchanged."),
  KEY (max_references, EB_CONFIG_UINT, "64", 0, 100000,
       "external-body references acted on per message; later ones are left alone."),
  KEY (max_part_bytes, EB_CONFIG_SIZE, "32M", 0, G_GUINT64_CONSTANT (1) << 40,
       "Decoded bytes of one resolved part; larger data leaves the reference alone."),
  KEY (max_message_bytes, EB_CONFIG_SIZE, "64M", 0, G_GUINT64_CONSTANT (1) << 40,
       "Decoded bytes resolved per message; references past it are left alone."),
};

guint
eb_config_get_n_keys (void)
{
  return G_N_ELEMENTS (keys);
}

const EbConfigKey *
eb_config_get_key (guint i)
{
  g_return_val_if_fail (i < G_N_ELEMENTS (keys), NULL);
  return &keys[i];
}

static const EbConfigKey *
find_key (const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    if (strcmp (keys[i].name, name) == 0)
      return &keys[i];
  return NULL;
}

gboolean
eb_config_parse_size (const char *text, guint64 *out)
{
  const char *p = text;
  while (g_ascii_isspace (*p))
    p++;
  if (!g_ascii_isdigit (*p))
    return FALSE;
  char *end = NULL;
  guint64 v = g_ascii_strtoull (p, &end, 10);
  guint shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
  default: break;
  }
  while (g_ascii_isspace (*end))
    end++;
  if (*end != '\0')
    return FALSE;
  if (shift && v > (G_MAXUINT64 >> shift))
    return FALSE;
  *out = v << shift;
  return TRUE;
}

static gboolean
set_key (EbConfig *config, const EbConfigKey *k, const char *value, const char *where,
         GError **error)
{
  guint64 v = 0;
  gboolean ok;
  if (k->type == EB_CONFIG_SIZE) {
    ok = eb_config_parse_size (value, &v);
  } else {
    char *end = NULL;
    const char *p = value;
    while (g_ascii_isspace (*p))
      p++;
    ok = g_ascii_isdigit (*p);
    if (ok) {
      v = g_ascii_strtoull (p, &end, 10);
      while (g_ascii_isspace (*end))
        end++;
      ok = *end == '\0';
    }
  }
  if (!ok) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s%s: \"%s\" is not a %s", where,
                 k->name, value, k->type == EB_CONFIG_SIZE ? "size" : "whole number");
    return FALSE;
  }
  if (v < k->min || v > k->max) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG,
                 "%s%s: %s is out of range (%" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT ")",
                 where, k->name, value, k->min, k->max);
    return FALSE;
  }
  char *field = (char *) config + k->offset;
  if (k->type == EB_CONFIG_SIZE)
    *(guint64 *) field = v;
  else
    *(guint *) field = (guint) v;
  return TRUE;
}

EbConfig *
eb_config_new (void)
{
  EbConfig *config = g_new0 (EbConfig, 1);
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++) {
    gboolean ok = set_key (config, &keys[i], keys[i].default_value, "", NULL);
    g_assert (ok);
  }
  return config;
}

void
eb_config_free (EbConfig *config)
{
  g_free (config);
}

gboolean
eb_config_set (EbConfig *config, const char *key, const char *value, GError **error)
{
  const EbConfigKey *k = find_key (key);
  if (!k) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "unknown configuration key \"%s\"", key);
    return FALSE;
  }
  return set_key (config, k, value, "", error);
}

gboolean
eb_config_load_file (EbConfig *config, const char *path, gboolean missing_ok, GError **error)
{
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_autoptr (GError) local = NULL;
  if (!g_key_file_load_from_file (kf, path, G_KEY_FILE_NONE, &local)) {
    if (missing_ok && g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
      return TRUE;
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s: %s", path, local->message);
    return FALSE;
  }
  g_auto (GStrv) groups = g_key_file_get_groups (kf, NULL);
  for (guint g = 0; groups[g]; g++) {
    if (strcmp (groups[g], EB_CONFIG_GROUP) != 0) {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s: unknown group [%s]", path, groups[g]);
      return FALSE;
    }
  }
  EbConfig copy = *config;
  g_auto (GStrv) names = g_key_file_get_keys (kf, EB_CONFIG_GROUP, NULL, NULL);
  g_autofree char *where = g_strdup_printf ("%s: ", path);
  for (guint i = 0; names && names[i]; i++) {
    const EbConfigKey *k = find_key (names[i]);
    if (!k) {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s: unknown key \"%s\"", path, names[i]);
      return FALSE;
    }
    g_autofree char *value = g_key_file_get_string (kf, EB_CONFIG_GROUP, names[i], &local);
    if (!value) {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s: %s: %s", path, names[i], local->message);
      return FALSE;
    }
    if (!set_key (&copy, k, value, where, error))
      return FALSE;
  }
  *config = copy;
  return TRUE;
}

char *
eb_config_dump (const EbConfig *config)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++) {
    const char *field = (const char *) config + keys[i].offset;
    guint64 v = keys[i].type == EB_CONFIG_SIZE ? *(const guint64 *) field : *(const guint *) field;
    g_string_append_printf (s, "%s = %" G_GUINT64_FORMAT "\n", keys[i].name, v);
  }
  return g_string_free (s, FALSE);
}
