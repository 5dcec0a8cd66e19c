/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-log.c - the writer, the per-message record, the start line (see eb-log.h). */
#include "eb-log.h"
#include "eb-scheme.h"
#include <curl/curl.h>
#include <gmime/gmime.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#define VALUE_MAX 256   /* bytes of one value written to a line */

/* Set before any thread starts (eb_log_init), read by the writer. */
static char        log_ident[64] = "extbody";
static EbLogTarget log_target = EB_LOG_STDERR;
static gboolean    log_journal;
static gsize       writer_installed;

/* ---- pure parts ---------------------------------------------------------- */

void
eb_log_append_pair (GString *line, const char *key, const char *value)
{
  if (line->len)
    g_string_append_c (line, ' ');
  g_string_append (line, key);
  g_string_append_c (line, '=');
  gsize len = strlen (value);
  gsize n = MIN (len, (gsize) VALUE_MAX);
  gboolean plain = n > 0 && n == len;
  for (gsize i = 0; plain && i < n; i++) {
    guchar c = (guchar) value[i];
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '=' || c == '\\')
      plain = FALSE;
  }
  if (plain) {
    g_string_append_len (line, value, (gssize) n);
    return;
  }
  g_string_append_c (line, '"');
  const char *p = value, *end = value + n;
  while (p < end) {
    guchar c = (guchar) *p;
    if (c == '"' || c == '\\') {
      g_string_append_c (line, '\\');
      g_string_append_c (line, (char) c);
    } else if (c == '\n') {
      g_string_append (line, "\\n");
    } else if (c == '\r') {
      g_string_append (line, "\\r");
    } else if (c == '\t') {
      g_string_append (line, "\\t");
    } else if (c < 0x20 || c == 0x7f) {
      g_string_append_printf (line, "\\x%02x", c);
    } else if (c >= 0x80) {
      gunichar u = g_utf8_get_char_validated (p, end - p);
      if (u == (gunichar) -1 || u == (gunichar) -2) {
        g_string_append_printf (line, "\\x%02x", c);
      } else {
        const char *next = g_utf8_next_char (p);
        g_string_append_len (line, p, next - p);
        p = next;
        continue;
      }
    } else {
      g_string_append_c (line, (char) c);
    }
    p++;
  }
  if (n < len)
    g_string_append (line, "...");
  g_string_append_c (line, '"');
}

/* A WHATWG URL special scheme (http, https, ftp, ws, wss, file: the rows of
 * eb-scheme.c that say so), @s lowercase. */
static gboolean
is_special_scheme (const char *s)
{
  const EbScheme *scheme = eb_scheme_lookup (s);
  return scheme && scheme->special;
}

void
eb_log_url_origin (const char *url, char **scheme, char **host)
{
  *scheme = NULL;
  *host = NULL;
  if (!url)
    return;
  /* leading and trailing C0 controls and spaces do not count (WHATWG URL) */
  const char *p = url;
  while (*p && (guchar) *p <= 0x20)
    p++;
  const char *end = p + strlen (p);
  while (end > p && (guchar) end[-1] <= 0x20)
    end--;
  if (p == end || !g_ascii_isalpha (*p))
    return;
  const char *s = p;
  while (s < end && (g_ascii_isalnum (*s) || *s == '+' || *s == '-' || *s == '.'))
    s++;
  if (s == end || *s != ':')
    return;
  g_autofree char *sch = g_ascii_strdown (p, s - p);
  const char *a = s + 1;
  gboolean special = is_special_scheme (sch);
  if (special) {
    /* http:\\host, http:///host and http:host all name the host */
    while (a < end && (*a == '/' || *a == '\\'))
      a++;
  } else if (end - a >= 2 && a[0] == '/' && a[1] == '/') {
    a += 2;
  } else {
    *scheme = g_steal_pointer (&sch);   /* data:, mailto:, ...: no host */
    return;
  }
  const char *ae = a;
  while (ae < end && *ae != '/' && *ae != '?' && *ae != '#' && !(special && *ae == '\\'))
    ae++;
  /* user information ends at the last '@' of the authority */
  for (const char *q = ae; q > a; q--)
    if (q[-1] == '@') {
      a = q;
      break;
    }
  const char *he;
  if (a < ae && *a == '[') {
    he = memchr (a, ']', ae - a);
    if (!he) {
      *scheme = g_steal_pointer (&sch);
      return;
    }
    he++;
  } else {
    he = a;
    while (he < ae && *he != ':')
      he++;
  }
  *scheme = g_steal_pointer (&sch);
  if (he > a)
    *host = g_ascii_strdown (a, he - a);
}

/* ---- records ------------------------------------------------------------- */

EbLogPairs *
eb_log_pairs_new (void)
{
  return g_ptr_array_new_with_free_func (g_free);
}

void
eb_log_pairs_add (EbLogPairs *p, const char *key, const char *value)
{
  if (!value)
    return;
  g_ptr_array_add (p, g_strdup (key));
  g_ptr_array_add (p, g_strdup (value));
}

void
eb_log_pairs_add_uint (EbLogPairs *p, const char *key, guint64 n)
{
  g_ptr_array_add (p, g_strdup (key));
  g_ptr_array_add (p, g_strdup_printf ("%" G_GUINT64_FORMAT, n));
}

void
eb_log_emit (int priority, const char *text, const EbLogPairs *pairs)
{
  g_autoptr (GString) line = g_string_new (text);
  guint n = pairs ? pairs->len / 2 : 0;
  g_autoptr (GArray) fields = g_array_sized_new (FALSE, FALSE, sizeof (GLogField), n + 3);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < n; i++) {
    const char *k = g_ptr_array_index (pairs, 2 * i);
    const char *v = g_ptr_array_index (pairs, 2 * i + 1);
    eb_log_append_pair (line, k, v);
    g_autofree char *up = g_ascii_strup (k, -1);
    char *name = g_strconcat ("EXTBODY_", up, NULL);
    g_ptr_array_add (names, name);
    GLogField f = { name, v, -1 };
    g_array_append_val (fields, f);
  }
  char prio[2] = { (char) ('0' + CLAMP (priority, 0, 7)), 0 };
  GLogField m = { "MESSAGE", line->str, -1 };
  GLogField pr = { "PRIORITY", prio, -1 };
  g_array_prepend_val (fields, pr);
  g_array_prepend_val (fields, m);
  GLogLevelFlags level = priority <= LOG_WARNING ? G_LOG_LEVEL_WARNING
                         : priority == LOG_NOTICE ? G_LOG_LEVEL_MESSAGE
                         : priority == LOG_INFO ? G_LOG_LEVEL_INFO : G_LOG_LEVEL_DEBUG;
  g_log_structured_array (level, (const GLogField *) (void *) fields->data, fields->len);
}

void
eb_log (int priority, const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  g_autofree char *text = g_strdup_vprintf (format, ap);
  va_end (ap);
  eb_log_emit (priority, text, NULL);
}

/* extbody's version and the libraries' it runs with */
static void
version_pairs (EbLogPairs *p)
{
  g_autofree char *gmime = g_strdup_printf ("%u.%u.%u", gmime_major_version, gmime_minor_version,
                                            gmime_micro_version);
  g_autofree char *glib = g_strdup_printf ("%u.%u.%u", glib_major_version, glib_minor_version,
                                           glib_micro_version);
  const curl_version_info_data *cv = curl_version_info (CURLVERSION_NOW);
  eb_log_pairs_add (p, "version", EXTBODY_VERSION);
  eb_log_pairs_add (p, "gmime", gmime);
  eb_log_pairs_add (p, "glib", glib);
  eb_log_pairs_add (p, "libcurl", cv && cv->version ? cv->version : "unknown");
}

char *
eb_log_versions (void)
{
  g_autoptr (EbLogPairs) p = eb_log_pairs_new ();
  version_pairs (p);
  GString *s = g_string_new (NULL);
  for (guint i = 0; i + 1 < p->len; i += 2)
    eb_log_append_pair (s, g_ptr_array_index (p, i), g_ptr_array_index (p, i + 1));
  return g_string_free (s, FALSE);
}

void
eb_log_start (const char *key, ...)
{
  g_autoptr (EbLogPairs) p = eb_log_pairs_new ();
  eb_log_pairs_add (p, "event", "start");
  version_pairs (p);
  va_list ap;
  va_start (ap, key);
  for (const char *k = key; k; k = va_arg (ap, const char *))
    eb_log_pairs_add (p, k, va_arg (ap, const char *));
  va_end (ap);
  eb_log_emit (LOG_INFO, NULL, p);
}

/* ---- the writer ---------------------------------------------------------- */

static const char *
field_str (const GLogField *fields, gsize n, const char *key, gsize *len)
{
  for (gsize i = 0; i < n; i++)
    if (strcmp (fields[i].key, key) == 0 && fields[i].value) {
      *len = fields[i].length < 0 ? strlen (fields[i].value) : (gsize) fields[i].length;
      return fields[i].value;
    }
  *len = 0;
  return NULL;
}

static int
priority_of (GLogLevelFlags level, const GLogField *fields, gsize n)
{
  gsize len;
  const char *p = field_str (fields, n, "PRIORITY", &len);
  if (p && len == 1 && p[0] >= '0' && p[0] <= '7')
    return p[0] - '0';
  if (level & G_LOG_LEVEL_ERROR)
    return LOG_CRIT;
  if (level & G_LOG_LEVEL_CRITICAL)
    return LOG_ERR;
  if (level & G_LOG_LEVEL_WARNING)
    return LOG_WARNING;
  if (level & G_LOG_LEVEL_MESSAGE)
    return LOG_NOTICE;
  if (level & G_LOG_LEVEL_INFO)
    return LOG_INFO;
  return LOG_DEBUG;
}

static GLogWriterOutput
writer (GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
  gsize dlen = 0, mlen = 0;
  const char *domain = field_str (fields, n, "GLIB_DOMAIN", &dlen);
  if ((level & G_LOG_LEVEL_DEBUG) && g_log_writer_default_would_drop (level, domain))
    return G_LOG_WRITER_HANDLED;
  if (log_journal) {
    g_autoptr (GArray) all = g_array_sized_new (FALSE, FALSE, sizeof (GLogField), n + 2);
    GLogField id = { "SYSLOG_IDENTIFIER", log_ident, -1 };
    GLogField fac = { "SYSLOG_FACILITY", "2", -1 };   /* mail */
    g_array_append_val (all, id);
    g_array_append_val (all, fac);
    g_array_append_vals (all, fields, (guint) n);
    if (g_log_writer_journald (level, (const GLogField *) (void *) all->data, all->len, data)
        == G_LOG_WRITER_HANDLED)
      return G_LOG_WRITER_HANDLED;
  }
  const char *msg = field_str (fields, n, "MESSAGE", &mlen);
  if (!msg)
    msg = "";
  /* GLib's and GMime's records name their domain; the library's and the
   * front ends' do not */
  g_autoptr (GString) line = g_string_new (NULL);
  if (domain && dlen)
    g_string_append_printf (line, "%.*s: ", (int) dlen, domain);
  g_string_append_len (line, msg, (gssize) mlen);
  if (log_target == EB_LOG_SYSLOG) {
    syslog (priority_of (level, fields, n), "%s", line->str);
  } else {
    g_string_prepend (line, ": ");
    g_string_prepend (line, log_ident);
    g_string_append_c (line, '\n');
    fwrite (line->str, 1, line->len, stderr);
    fflush (stderr);
  }
  return G_LOG_WRITER_HANDLED;
}

gboolean
eb_log_parse_target (const char *name, EbLogTarget *target)
{
  if (!g_strcmp0 (name, "stderr"))
    *target = EB_LOG_STDERR;
  else if (!g_strcmp0 (name, "syslog"))
    *target = EB_LOG_SYSLOG;
  else
    return FALSE;
  return TRUE;
}

void
eb_log_init (const char *ident, EbLogTarget target)
{
  g_strlcpy (log_ident, ident ? ident : "extbody", sizeof log_ident);
  log_target = target;
  log_journal = g_log_writer_is_journald (fileno (stderr));
  if (target == EB_LOG_SYSLOG && !log_journal)
    openlog (log_ident, LOG_PID, LOG_MAIL);
  if (g_once_init_enter (&writer_installed)) {
    g_log_set_writer_func (writer, NULL, NULL);
    g_once_init_leave (&writer_installed, 1);
  }
}
