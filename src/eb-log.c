/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-log.c - the writer, the per-message record, the start line (see eb-log.h). */
#include "eb-log.h"
#include "eb-header.h"
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

static gboolean
is_special_scheme (const char *s)
{
  static const char *const special[] = { "http", "https", "ftp", "ws", "wss", "file" };
  for (gsize i = 0; i < G_N_ELEMENTS (special); i++)
    if (strcmp (s, special[i]) == 0)
      return TRUE;
  return FALSE;
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

/* key, value, key, value, ... (values owned) */
typedef GPtrArray Pairs;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Pairs, g_ptr_array_unref)

static Pairs *
pairs_new (void)
{
  return g_ptr_array_new_with_free_func (g_free);
}

static void
pairs_add (Pairs *p, const char *key, const char *value)
{
  if (!value)
    return;
  g_ptr_array_add (p, g_strdup (key));
  g_ptr_array_add (p, g_strdup (value));
}

static void
pairs_add_uint (Pairs *p, const char *key, guint64 n)
{
  g_ptr_array_add (p, g_strdup (key));
  g_ptr_array_add (p, g_strdup_printf ("%" G_GUINT64_FORMAT, n));
}

/* Send @text (nullable) followed by @pairs as one record at @priority: a line
 * for syslog and standard error, fields EXTBODY_<KEY> for the journal. */
static void
emit (int priority, const char *text, const Pairs *pairs)
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
  emit (priority, text, NULL);
}

/* extbody's version and the libraries' it runs with */
static void
version_pairs (Pairs *p)
{
  g_autofree char *gmime = g_strdup_printf ("%u.%u.%u", gmime_major_version, gmime_minor_version,
                                            gmime_micro_version);
  g_autofree char *glib = g_strdup_printf ("%u.%u.%u", glib_major_version, glib_minor_version,
                                           glib_micro_version);
  const curl_version_info_data *cv = curl_version_info (CURLVERSION_NOW);
  pairs_add (p, "version", EXTBODY_VERSION);
  pairs_add (p, "gmime", gmime);
  pairs_add (p, "glib", glib);
  pairs_add (p, "libcurl", cv && cv->version ? cv->version : "unknown");
}

char *
eb_log_versions (void)
{
  g_autoptr (Pairs) p = pairs_new ();
  version_pairs (p);
  GString *s = g_string_new (NULL);
  for (guint i = 0; i + 1 < p->len; i += 2)
    eb_log_append_pair (s, g_ptr_array_index (p, i), g_ptr_array_index (p, i + 1));
  return g_string_free (s, FALSE);
}

void
eb_log_start (const char *key, ...)
{
  g_autoptr (Pairs) p = pairs_new ();
  pairs_add (p, "event", "start");
  version_pairs (p);
  va_list ap;
  va_start (ap, key);
  for (const char *k = key; k; k = va_arg (ap, const char *))
    pairs_add (p, k, va_arg (ap, const char *));
  va_end (ap);
  emit (LOG_INFO, NULL, p);
}

/* Is the detail of a reference left for @reason one the log may carry? What
 * the fetch said (the curl error with the host and port, the HTTP status, the
 * policy's words), never a local file's path nor what names a URL's path or
 * query (would-fetch carries the URL). */
static gboolean
detail_loggable (EbReason reason, EbActionKind action)
{
  if (action == EB_ACTION_LOCAL_FILE)
    return FALSE;
  switch (reason) {
  case EB_REASON_FETCH_FAILED: case EB_REASON_HTTP_STATUS: case EB_REASON_TIMED_OUT:
  case EB_REASON_REFUSED_ADDRESS: case EB_REASON_REFUSED_DOMAIN: case EB_REASON_RATE_LIMITED:
  case EB_REASON_TOO_MANY_REDIRECTS: case EB_REASON_INSECURE_REDIRECT: case EB_REASON_TYPE_MISMATCH:
  case EB_REASON_CHECKSUM: case EB_REASON_PART_TOO_LARGE: case EB_REASON_MESSAGE_BUDGET:
  case EB_REASON_CTE_INVALID: case EB_REASON_CTE_UNKNOWN: case EB_REASON_SIZE_PARAM:
  case EB_REASON_EXPIRED:
    return TRUE;
  default:
    return FALSE;
  }
}

/* Everything the record reads from a reference of @r, in one place. */
static void
reference_pairs (const EbRewriteResult *r, guint i, Pairs *p)
{
  EbActionKind action = eb_rewrite_result_get_ref_action (r, i);
  pairs_add_uint (p, "ref", i + 1);
  pairs_add (p, "part", eb_rewrite_result_get_ref_path (r, i));
  pairs_add (p, "access_type", eb_rewrite_result_get_ref_access_type (r, i));
  /* the URL as written, or the one made for a fetch (anon-ftp); never a
   * local file's path, never more than scheme and host */
  const char *url = eb_rewrite_result_get_ref_url (r, i);
  if (!url && action == EB_ACTION_FETCH)
    url = eb_rewrite_result_get_ref_target (r, i);
  g_autofree char *scheme = NULL, *host = NULL;
  eb_log_url_origin (url, &scheme, &host);
  const char *site = eb_rewrite_result_get_ref_site (r, i);
  if (!host && !url && site)
    host = g_ascii_strdown (site, -1);
  pairs_add (p, "scheme", scheme);
  pairs_add (p, "host", host);
  EbReason reason = eb_rewrite_result_get_ref_outcome (r, i);
  pairs_add (p, "outcome", reason == EB_REASON_RESOLVED ? "resolved" : "left");
  if (reason != EB_REASON_RESOLVED)
    pairs_add (p, "reason", eb_reason_token (reason));
  /* why, in the fetch's own words: the curl error, the HTTP status */
  if (reason != EB_REASON_RESOLVED && detail_loggable (reason, action))
    pairs_add (p, "detail", eb_rewrite_result_get_ref_outcome_detail (r, i));
  GBytes *data = eb_rewrite_result_get_ref_data (r, i);
  if (reason == EB_REASON_RESOLVED) {
    pairs_add (p, "type", eb_rewrite_result_get_ref_type (r, i));
    if (data)
      pairs_add_uint (p, "bytes", g_bytes_get_size (data));
  }
}

/* A part of an externalize plan (eb_externalize_plan): where it is, what
 * it is, and whether it went to the store (with the store's host, never the
 * URL) or why it stays. */
static void
part_pairs (const EbRewriteResult *r, guint i, Pairs *p)
{
  EbReason reason = eb_rewrite_result_get_ref_outcome (r, i);
  pairs_add (p, "part", eb_rewrite_result_get_ref_path (r, i));
  pairs_add (p, "type", eb_rewrite_result_get_ref_type (r, i));
  pairs_add (p, "bytes", eb_rewrite_result_get_ref_declared_size (r, i));
  pairs_add (p, "outcome", reason == EB_REASON_RESOLVED ? "externalized" : "left");
  if (reason != EB_REASON_RESOLVED) {
    pairs_add (p, "reason", eb_reason_token (reason));
    pairs_add (p, "detail", eb_rewrite_result_get_ref_outcome_detail (r, i));
    return;
  }
  g_autofree char *scheme = NULL, *host = NULL;
  eb_log_url_origin (eb_rewrite_result_get_ref_url (r, i), &scheme, &host);
  pairs_add (p, "scheme", scheme);
  pairs_add (p, "host", host);
  pairs_add (p, "sha256", eb_rewrite_result_get_ref_digest (r, i));
}

/* eb_log_message for a plan of eb_externalize_plan: event=externalize lines */
static void
log_externalize (const char *queue_id, const char *message_id, const EbRewriteResult *result)
{
  guint n = eb_rewrite_result_get_n_refs (result);
  EbReason reason = eb_rewrite_result_get_reason (result);
  if (!n && reason == EB_REASON_RESOLVED)
    return;
  g_autoptr (Pairs) msg = pairs_new ();
  pairs_add (msg, "event", "externalize");
  pairs_add (msg, "queue_id", queue_id);
  pairs_add (msg, "msgid", message_id);
  pairs_add_uint (msg, "parts", n);
  pairs_add_uint (msg, "externalized", eb_rewrite_result_get_n_resolved (result));
  pairs_add (msg, "changed", eb_rewrite_result_get_changed (result) ? "yes" : "no");
  if (reason != EB_REASON_RESOLVED)
    pairs_add (msg, "reason", eb_reason_token (reason));
  emit (LOG_INFO, NULL, msg);
  for (guint i = 0; i < n; i++) {
    g_autoptr (Pairs) p = pairs_new ();
    pairs_add (p, "event", "externalize");
    pairs_add (p, "queue_id", queue_id);
    pairs_add (p, "msgid", message_id);
    part_pairs (result, i, p);
    emit (LOG_INFO, NULL, p);
  }
}

void
eb_log_message (const char *queue_id, const char *message_id, const EbRewriteResult *result)
{
  g_return_if_fail (result != NULL);
  if (eb_rewrite_result_get_externalized (result)) {
    log_externalize (queue_id, message_id, result);
    return;
  }
  guint n = eb_rewrite_result_get_n_refs (result);
  guint removed = eb_rewrite_result_get_n_removed (result);
  EbReason reason = eb_rewrite_result_get_reason (result);
  if (!n && !removed && reason == EB_REASON_RESOLVED)
    return;
  g_autoptr (Pairs) msg = pairs_new ();
  pairs_add (msg, "queue_id", queue_id);
  pairs_add (msg, "msgid", message_id);
  pairs_add_uint (msg, "references", n);
  pairs_add_uint (msg, "resolved", eb_rewrite_result_get_n_resolved (result));
  pairs_add (msg, "changed", eb_rewrite_result_get_changed (result) ? "yes" : "no");
  if (reason != EB_REASON_RESOLVED)
    pairs_add (msg, "reason", eb_reason_token (reason));
  if (removed)
    pairs_add_uint (msg, "trace_removed", removed);
  emit (LOG_INFO, NULL, msg);
  for (guint i = 0; i < n; i++) {
    g_autoptr (Pairs) p = pairs_new ();
    pairs_add (p, "queue_id", queue_id);
    pairs_add (p, "msgid", message_id);
    reference_pairs (result, i, p);
    emit (LOG_INFO, NULL, p);
  }
}

char *
eb_log_message_id (const EbRewriteResult *result, const char *buf, gsize len)
{
  gsize from = result ? eb_rewrite_result_get_from_line_len (result) : 0;
  gsize skip = from <= len ? from : 0;
  g_autoptr (EbHeaderBlock) blk = eb_header_block_scan (buf + skip, 0, len - skip);
  gint i = eb_header_block_find (blk, buf + skip, "Message-ID");
  if (i < 0)
    return NULL;
  char *v = eb_header_field_unfold (&g_array_index (blk->fields, EbHeaderField, i), buf + skip);
  if (!*v)
    g_clear_pointer (&v, g_free);
  return v;
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
