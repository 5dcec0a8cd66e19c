/* eb-config.c - the configuration table and key-file loading (see eb-config.h). */
#include "eb-config.h"
#include "eb-error.h"
#include <stddef.h>
#include <string.h>

#define KEY(n, t, d, lo, hi, doc) { #n, t, d, lo, hi, offsetof (EbConfig, n), doc, NULL }
#define STR(n, d, doc, ch) { #n, EB_CONFIG_STRING, d, 0, 0, offsetof (EbConfig, n), doc, ch }
#define BOOL(n, d, doc) { #n, EB_CONFIG_BOOL, d, 0, 1, offsetof (EbConfig, n), doc, NULL }

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
       "Decoded bytes of one resolved part; larger data leaves the reference alone. A fetch is stopped once more than this has arrived, whatever size the server announced."),
  KEY (max_message_bytes, EB_CONFIG_SIZE, "64M", 0, G_GUINT64_CONSTANT (1) << 40,
       "Decoded bytes resolved per message; references past it are left alone. A fetched body that cannot fit beside those the message already holds is stopped, so a message's memory follows this limit, not the size of what its URLs serve."),
  BOOL (fetch, "off",
        "Fetch http, https and ftp URLs (on), or resolve data: URLs only, with no network at all (off). A fetch tells the URL's owner that the mail was processed, and from where, like a remote image in a mail reader: turn it on deliberately, usually with allow_domains."),
  STR (allow_schemes, "http, https, ftp",
       "URL schemes that may be fetched, for the URL and for every redirect (http, https, ftp).", NULL),
  KEY (max_redirects, EB_CONFIG_UINT, "3", 0, 20,
       "Redirects followed per fetch; each must pass the same checks as the URL."),
  STR (allow_networks, "",
       "CIDR blocks that may be connected to on any port, even when private or loopback.", NULL),
  STR (deny_networks, "",
       "CIDR blocks never connected to; deny wins over allow.", NULL),
  STR (allow_ports, "80, 443, 21",
       "Ports that may be connected to outside allow_networks.", NULL),
  STR (allow_domains, "",
       "When set, only these domains and their subdomains are fetched from: the way most sites will want to turn fetching on (their own file-sharing and archive hosts).", NULL),
  STR (deny_domains, "",
       "Domains, and their subdomains, never fetched from.", NULL),
  KEY (max_requests_per_host, EB_CONFIG_UINT, "60", 1, 1000000,
       "Requests per minute to one destination host: that many at once, then one each 60/N seconds. A request over the rate waits for its turn; it is left rate-limited only when its turn would come after message_deadline."),
  KEY (connect_timeout, EB_CONFIG_UINT, "10", 1, 3600,
       "Seconds to look the host name up and connect, per fetch."),
  KEY (fetch_timeout, EB_CONFIG_UINT, "60", 1, 86400,
       "Seconds for a whole fetch, redirects included; also the longest wait for any one reply of an FTP server."),
  KEY (message_deadline, EB_CONFIG_UINT, "120", 1, 86400,
       "Seconds for all fetches of one message together: name lookups, waits for a rate-limit turn and for another message's fetch of the same URL included."),
  KEY (low_speed_limit, EB_CONFIG_SIZE, "1k", 0, G_GUINT64_CONSTANT (1) << 40,
       "Bytes per second below which a fetch is slow."),
  KEY (low_speed_time, EB_CONFIG_UINT, "20", 1, 3600,
       "Seconds a fetch may stay slow before it is aborted."),
  KEY (max_header_bytes, EB_CONFIG_SIZE, "64k", 1024, G_GUINT64_CONSTANT (1) << 30,
       "Bytes of response header per fetch."),
  KEY (max_concurrent_fetches, EB_CONFIG_UINT, "8", 1, 1000,
       "Fetches of one message run at the same time."),
  KEY (cache_ttl, EB_CONFIG_UINT, "300", 0, 86400,
       "Seconds a fetched URL is remembered and not fetched again; 0 caches nothing."),
  KEY (cache_entries, EB_CONFIG_UINT, "256", 0, 1000000,
       "URLs remembered at most."),
  STR (proxy, "",
       "Proxy URL for every fetch; empty means none, whatever the environment says.", NULL),
  STR (ca_file, "",
       "File of CA certificates for https; empty means the system's.", NULL),
  STR (content_type_mismatch, "keep",
       "When the server's media type disagrees with the inner header: keep the reference, or accept the data.", "keep|accept"),
  BOOL (allow_credentials, "off",
        "Fetch URLs that carry a user name or password."),
  STR (local_file_dirs, "",
       "Directories whose files access-type=local-file references may be read from; empty reads none.", NULL),
  KEY (lock_timeout, EB_CONFIG_UINT, "60", 0, 3600,
       "Seconds to wait for an mbox that another program has locked (dot-lock or fcntl); then the run ends with a temporary failure, the mailbox unchanged."),
  STR (milter_socket, "unix:/run/extbody/milter.sock",
       "extbody-milter's socket: unix:PATH, inet:PORT@ADDRESS or inet6:PORT@ADDRESS.", NULL),
  STR (on_error, "accept",
       "What extbody-milter answers when it fails inside: accept the message unchanged, or tempfail it.", "accept|tempfail"),
  BOOL (strip_trace_fields, "on",
        "Remove X-Extbody and X-Extbody-Resolved fields that arrive in a message's header (extbody-milter, extbody-pipe): a sender can forge them."),
  KEY (milter_spill_size, EB_CONFIG_SIZE, "1M", 0, G_GUINT64_CONSTANT (1) << 40,
       "Message bytes extbody-milter keeps in memory; a larger message is spooled to a temporary file."),
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
  char *field = (char *) config + k->offset;
  if (k->type == EB_CONFIG_STRING) {
    g_autofree char *t = g_strstrip (g_strdup (value));
    if (k->choices) {
      g_auto (GStrv) ch = g_strsplit (k->choices, "|", -1);
      if (!g_strv_contains ((const char *const *) ch, t)) {
        g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s%s: \"%s\" is not one of %s", where,
                     k->name, value, k->choices);
        return FALSE;
      }
    }
    g_free (*(char **) field);
    *(char **) field = g_steal_pointer (&t);
    return TRUE;
  }
  if (k->type == EB_CONFIG_BOOL) {
    g_autofree char *raw = g_strdup (value);
    g_autofree char *t = g_ascii_strdown (g_strstrip (raw), -1);
    if (!strcmp (t, "on") || !strcmp (t, "yes") || !strcmp (t, "true") || !strcmp (t, "1"))
      *(gboolean *) field = TRUE;
    else if (!strcmp (t, "off") || !strcmp (t, "no") || !strcmp (t, "false") || !strcmp (t, "0"))
      *(gboolean *) field = FALSE;
    else {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s%s: \"%s\" is not on or off", where,
                   k->name, value);
      return FALSE;
    }
    return TRUE;
  }
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

static void
free_strings (EbConfig *config)
{
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    if (keys[i].type == EB_CONFIG_STRING)
      g_clear_pointer ((char **) ((char *) config + keys[i].offset), g_free);
}

static void
copy_strings (EbConfig *config)
{
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    if (keys[i].type == EB_CONFIG_STRING) {
      char **f = (char **) ((char *) config + keys[i].offset);
      *f = g_strdup (*f);
    }
}

EbConfig *
eb_config_copy (const EbConfig *config)
{
  EbConfig *c = g_memdup2 (config, sizeof *config);
  copy_strings (c);
  return c;
}

void
eb_config_free (EbConfig *config)
{
  if (!config)
    return;
  free_strings (config);
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
  copy_strings (&copy);
  g_auto (GStrv) names = g_key_file_get_keys (kf, EB_CONFIG_GROUP, NULL, NULL);
  g_autofree char *where = g_strdup_printf ("%s: ", path);
  for (guint i = 0; names && names[i]; i++) {
    const EbConfigKey *k = find_key (names[i]);
    if (!k) {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s: unknown key \"%s\"", path, names[i]);
      free_strings (&copy);
      return FALSE;
    }
    g_autofree char *value = g_key_file_get_string (kf, EB_CONFIG_GROUP, names[i], &local);
    if (!value) {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s: %s: %s", path, names[i], local->message);
      free_strings (&copy);
      return FALSE;
    }
    if (!set_key (&copy, k, value, where, error)) {
      free_strings (&copy);
      return FALSE;
    }
  }
  free_strings (config);
  *config = copy;
  return TRUE;
}

char *
eb_config_dump (const EbConfig *config)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++) {
    const char *field = (const char *) config + keys[i].offset;
    if (keys[i].type == EB_CONFIG_STRING) {
      g_string_append_printf (s, "%s = %s\n", keys[i].name, *(char *const *) field);
      continue;
    }
    if (keys[i].type == EB_CONFIG_BOOL) {
      g_string_append_printf (s, "%s = %s\n", keys[i].name, *(const gboolean *) field ? "on" : "off");
      continue;
    }
    guint64 v = keys[i].type == EB_CONFIG_SIZE ? *(const guint64 *) field : *(const guint *) field;
    g_string_append_printf (s, "%s = %" G_GUINT64_FORMAT "\n", keys[i].name, v);
  }
  return g_string_free (s, FALSE);
}
