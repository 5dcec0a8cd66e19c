/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-nntp.c - news: and nntp: URLs through a strict NNTP client (see
 * eb-nntp.h): the response reader, the URLs, and one article's fetch. */
#include "eb-nntp.h"
#include "eb-fetch-shared.h"
#include "eb-scheme.h"
#include <string.h>
#include <poll.h>
#include <errno.h>

/* ---- the response reader --------------------------------------------------- */

#define STATUS_MAX 512   /* RFC 3977 3.1: a response line, CR LF included */

struct _EbNntpReader {
  gsize       max_line;
  guint64     max_bytes;
  gboolean    block;     /* reading a data block */
  gboolean    failed;
  EbReason    why;
  char       *detail;
  GByteArray *line;      /* the line under way, without its LF */
  GByteArray *data;      /* the data block so far */
  guint       code;
  char       *text;
};

EbNntpReader *
eb_nntp_reader_new (gsize max_line, guint64 max_bytes)
{
  EbNntpReader *r = g_new0 (EbNntpReader, 1);
  r->max_line = max_line;
  r->max_bytes = max_bytes;
  r->line = g_byte_array_new ();
  r->data = g_byte_array_new ();
  r->text = g_strdup ("");
  return r;
}

void
eb_nntp_reader_free (EbNntpReader *r)
{
  if (!r)
    return;
  g_byte_array_unref (r->line);
  g_byte_array_unref (r->data);
  g_free (r->detail);
  g_free (r->text);
  g_free (r);
}

void
eb_nntp_reader_want_block (EbNntpReader *r)
{
  r->block = TRUE;
  g_byte_array_set_size (r->data, 0);
}

static EbNntpStep
fail (EbNntpReader *r, EbReason why, char *detail /* (transfer full) */)
{
  r->failed = TRUE;
  r->why = why;
  g_free (r->detail);
  r->detail = detail;
  return EB_NNTP_FAILED;
}

/* A status line (RFC 3977 3.2): three digits, the first 1 to 5, then a space
 * and text, or nothing. */
static EbNntpStep
status_line (EbNntpReader *r, const guint8 *l, gsize n)
{
  if (n < 3 || l[0] < '1' || l[0] > '5' || !g_ascii_isdigit (l[1]) || !g_ascii_isdigit (l[2])
      || (n > 3 && l[3] != ' '))
    return fail (r, EB_REASON_FETCH_FAILED, g_strdup ("NNTP: a malformed status line"));
  r->code = (guint) ((l[0] - '0') * 100 + (l[1] - '0') * 10 + (l[2] - '0'));
  gsize tn = n > 4 ? MIN (n - 4, 200) : 0;
  g_free (r->text);
  r->text = g_malloc (tn + 1);
  for (gsize i = 0; i < tn; i++)
    r->text[i] = g_ascii_isprint (l[4 + i]) ? (char) l[4 + i] : '?';
  r->text[tn] = '\0';
  return EB_NNTP_STATUS;
}

/* One line of a data block: the end, or its bytes (a leading dot removed,
 * RFC 3977 3.1.1) and CR LF. */
static EbNntpStep
block_line (EbNntpReader *r, const guint8 *l, gsize n)
{
  if (n == 1 && l[0] == '.')
    return EB_NNTP_END;
  if (n && l[0] == '.') {
    l++;
    n--;
  }
  if ((guint64) r->data->len + n + 2 > r->max_bytes)
    return fail (r, EB_REASON_PART_TOO_LARGE,
                 g_strdup_printf ("more than %" G_GUINT64_FORMAT " bytes", r->max_bytes));
  g_byte_array_append (r->data, l, (guint) n);
  g_byte_array_append (r->data, (const guint8 *) "\r\n", 2);
  return EB_NNTP_MORE;
}

EbNntpStep
eb_nntp_reader_feed (EbNntpReader *r, const char *data, gsize len, gsize *used)
{
  *used = 0;
  if (r->failed)
    return EB_NNTP_FAILED;
  gsize limit = r->block ? r->max_line : STATUS_MAX - 2;
  for (gsize i = 0; i < len; i++) {
    if (data[i] != '\n') {
      /* a CR may end the line: one byte over the limit is allowed for it */
      if (r->line->len >= limit + 1 || (r->line->len == limit && data[i] != '\r')) {
        *used = i + 1;
        return fail (r, EB_REASON_FETCH_FAILED,
                     g_strdup_printf ("NNTP: a %s line longer than %" G_GSIZE_FORMAT " bytes",
                                      r->block ? "data" : "status", limit));
      }
      g_byte_array_append (r->line, (const guint8 *) data + i, 1);
      continue;
    }
    *used = i + 1;
    gsize n = r->line->len;
    if (n && r->line->data[n - 1] == '\r')
      n--;
    else if (n > limit)
      return fail (r, EB_REASON_FETCH_FAILED,
                   g_strdup_printf ("NNTP: a %s line longer than %" G_GSIZE_FORMAT " bytes",
                                    r->block ? "data" : "status", limit));
    EbNntpStep s = r->block ? block_line (r, r->line->data, n) : status_line (r, r->line->data, n);
    g_byte_array_set_size (r->line, 0);
    if (s == EB_NNTP_END)
      r->block = FALSE;
    if (s != EB_NNTP_MORE)
      return s;
  }
  *used = len;
  return EB_NNTP_MORE;
}

guint
eb_nntp_reader_code (const EbNntpReader *r)
{
  return r->code;
}

const char *
eb_nntp_reader_text (const EbNntpReader *r)
{
  return r->text;
}

GBytes *
eb_nntp_reader_steal_block (EbNntpReader *r)
{
  GByteArray *d = r->data;
  r->data = g_byte_array_new ();
  return g_byte_array_free_to_bytes (d);
}

EbReason
eb_nntp_reader_failure (const EbNntpReader *r, const char **detail)
{
  *detail = r->detail;
  return r->failed ? r->why : EB_REASON_RESOLVED;
}

/* ---- URLs ------------------------------------------------------------------- */

/* The row of @url's scheme (eb-scheme.h), or NULL. */
static const EbScheme *
url_scheme (const char *url)
{
  const char *colon = strchr (url, ':');
  return colon ? eb_scheme_lookup_len (url, (gsize) (colon - url)) : NULL;
}

gboolean
eb_nntp_is_url (const char *url)
{
  const EbScheme *scheme = url_scheme (url);
  return scheme && scheme->by == EB_SCHEME_NNTP;
}

/* @n bytes at @s percent-decoded, or NULL when an escape is bad or the
 * result holds a byte that no message-id or group name may (a control
 * character, a space, DEL). */
static char *
decode_atom (const char *s, gsize n)
{
  GString *o = g_string_new (NULL);
  for (gsize i = 0; i < n; i++) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= n || !g_ascii_isxdigit (s[i + 1]) || !g_ascii_isxdigit (s[i + 2])) {
        g_string_free (o, TRUE);
        return NULL;
      }
      c = (char) (g_ascii_xdigit_value (s[i + 1]) * 16 + g_ascii_xdigit_value (s[i + 2]));
      i += 2;
    }
    if ((guchar) c <= ' ' || (guchar) c == 0x7f) {
      g_string_free (o, TRUE);
      return NULL;
    }
    g_string_append_c (o, c);
  }
  return g_string_free (o, FALSE);
}

typedef struct {
  char   *host;       /* nntp: the URL's host (brackets kept for IPv6); news: NULL */
  guint   port;
  char   *group;      /* nntp: the group */
  char   *article;    /* "<message-id>" or the number */
} Target;

static void
target_clear (Target *t)
{
  g_clear_pointer (&t->host, g_free);
  g_clear_pointer (&t->group, g_free);
  g_clear_pointer (&t->article, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Target, target_clear)

static EbReason
parse_news (const char *rest, Target *t, char **detail)
{
  if (!strchr (rest, '@')) {
    *detail = g_strdup (strcmp (rest, "*") == 0 ? "news:* names every group, not an article"
                                                : "a news: URL naming a group, not an article");
    return EB_REASON_NOT_DOCUMENT;
  }
  gsize n = strlen (rest);
  if (n >= 2 && rest[0] == '<' && rest[n - 1] == '>') {
    rest++;
    n -= 2;
  }
  g_autofree char *id = decode_atom (rest, n);
  if (!id || !*id || strlen (id) > 248 || strpbrk (id, "<>")) {
    *detail = g_strdup ("a news: message-id that no article can have");
    return EB_REASON_URL_INVALID;
  }
  t->article = g_strdup_printf ("<%s>", id);
  return EB_REASON_RESOLVED;
}

static EbReason
parse_nntp (const char *rest, Target *t, char **detail)
{
  if (strncmp (rest, "//", 2) != 0) {
    *detail = g_strdup ("an nntp: URL is nntp://HOST[:PORT]/GROUP/NUMBER");
    return EB_REASON_URL_INVALID;
  }
  const char *a = rest + 2;
  gsize al = strcspn (a, "/?#");
  const char *path = a + al;
  g_autofree char *auth = g_strndup (a, al);
  if (strchr (auth, '@')) {
    *detail = g_strdup ("the URL carries a user name or password");
    return EB_REASON_CREDENTIALS;
  }
  const char *colon = strrchr (auth, ':');
  if (colon && (auth[0] != '[' || colon > strrchr (auth, ']'))) {
    guint64 p = 0;
    if (!colon[1] || strspn (colon + 1, "0123456789") != strlen (colon + 1) || strlen (colon + 1) > 5
        || (p = g_ascii_strtoull (colon + 1, NULL, 10)) < 1 || p > 65535) {
      *detail = g_strdup ("an nntp: URL with a bad port");
      return EB_REASON_URL_INVALID;
    }
    t->port = (guint) p;
    t->host = g_strndup (auth, colon - auth);
  } else {
    t->host = g_strdup (auth);
  }
  if (!*t->host) {
    *detail = g_strdup ("URL without a host");
    return EB_REASON_URL_INVALID;
  }
  if (*path && *path != '/') {
    *detail = g_strdup ("an nntp: URL with a query or a fragment");
    return EB_REASON_URL_INVALID;
  }
  const char *g = *path ? path + 1 : path;
  const char *slash = strchr (g, '/');
  if (!*g || !slash || !slash[1]) {
    *detail = g_strdup ("an nntp: URL naming a group, not an article");
    return EB_REASON_NOT_DOCUMENT;
  }
  t->group = decode_atom (g, slash - g);
  const char *num = slash + 1;
  if (!t->group || !*t->group || strlen (t->group) > 400 || strspn (num, "0123456789") != strlen (num)
      || strlen (num) > 16 || g_ascii_strtoull (num, NULL, 10) == 0) {
    *detail = g_strdup ("an nntp: URL whose group or article number is none");
    return EB_REASON_URL_INVALID;
  }
  t->article = g_strdup (num);
  return EB_REASON_RESOLVED;
}

/* @url, a news: or nntp: URL (eb_nntp_is_url), into @t, whose port is its
 * scheme's unless the URL names one; a scheme whose URLs name no server
 * (news:) names an article by its message-id. */
static EbReason
parse_url (const char *url, Target *t, char **detail)
{
  const EbScheme *scheme = url_scheme (url);
  const char *rest = url + strlen (scheme->name) + 1;
  t->port = scheme->port;
  if (scheme->nntp_server)
    return parse_news (rest, t, detail);
  return parse_nntp (rest, t, detail);
}

EbReason
eb_nntp_classify (const char *url, char **detail)
{
  g_auto (Target) t = { 0 };
  if (!eb_nntp_is_url (url))
    return EB_REASON_RESOLVED;
  return parse_url (url, &t, detail);
}

/* ---- one article ------------------------------------------------------------ */

typedef struct {
  EbFetcher *f;
  EbReason   why;
  char      *detail;
} Connect;

static curl_socket_t
open_checked (void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
  Connect *c = clientp;
  char *why = NULL;
  (void) purpose;
  if (eb_policy_check (c->f->policy, &addr->addr, &why) != EB_POLICY_ALLOWED) {
    c->why = EB_REASON_REFUSED_ADDRESS;
    g_free (c->detail);
    c->detail = why;
    return CURL_SOCKET_BAD;
  }
  g_free (why);
  return socket (addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
}

typedef struct {
  CURL          *easy;
  curl_socket_t  sock;
  gint64         until;     /* monotonic µs */
  const gint    *cancel;    /* (nullable) the thread's cancel flag */
  void         (*progress) (gint64 *last);   /* the thread's progress hook */
  gint64         last;      /* for it */
  EbNntpReader  *reader;
  GByteArray    *in;        /* received, not yet fed */
  guint64        received;
} Conn;

/* Wait for @events on the connection until its deadline; FALSE with
 * *@why and *@detail when it passed or the thread was cancelled. */
static gboolean
wait_for (Conn *c, short events, EbReason *why, char **detail)
{
  for (;;) {
    gint64 now = g_get_monotonic_time ();
    if (c->progress)
      c->progress (&c->last);
    if (c->cancel && g_atomic_int_get (c->cancel)) {
      *why = EB_REASON_TIMED_OUT;
      *detail = g_strdup ("cancelled");
      return FALSE;
    }
    if (now >= c->until) {
      *why = EB_REASON_TIMED_OUT;
      *detail = g_strdup ("NNTP: the deadline passed");
      return FALSE;
    }
    struct pollfd p = { .fd = c->sock, .events = events };
    int ms = (int) MIN ((c->until - now) / 1000 + 1, 100);
    int n = poll (&p, 1, ms);
    if (n > 0)
      return TRUE;
    if (n < 0 && errno != EINTR) {
      *why = EB_REASON_FETCH_FAILED;
      *detail = g_strdup_printf ("NNTP: %s", g_strerror (errno));
      return FALSE;
    }
  }
}

static gboolean
send_line (Conn *c, const char *line, EbReason *why, char **detail)
{
  gsize len = strlen (line), done = 0;
  while (done < len) {
    size_t n = 0;
    CURLcode rc = curl_easy_send (c->easy, line + done, len - done, &n);
    if (rc == CURLE_AGAIN) {
      if (!wait_for (c, POLLOUT, why, detail))
        return FALSE;
      continue;
    }
    if (rc != CURLE_OK) {
      *why = EB_REASON_FETCH_FAILED;
      *detail = g_strdup_printf ("NNTP: %s", curl_easy_strerror (rc));
      return FALSE;
    }
    done += n;
  }
  return TRUE;
}

/* Read until the reader has an event; FAILED with *@why and *@detail set. */
static EbNntpStep
read_step (Conn *c, EbReason *why, char **detail)
{
  for (;;) {
    gsize used = 0;
    EbNntpStep s = c->in->len ? eb_nntp_reader_feed (c->reader, (const char *) c->in->data, c->in->len, &used)
                              : EB_NNTP_MORE;
    g_byte_array_remove_range (c->in, 0, (guint) used);
    if (s == EB_NNTP_FAILED) {
      const char *d = NULL;
      *why = eb_nntp_reader_failure (c->reader, &d);
      *detail = g_strdup (d);
      return s;
    }
    if (s != EB_NNTP_MORE)
      return s;
    char buf[16384];
    size_t n = 0;
    CURLcode rc = curl_easy_recv (c->easy, buf, sizeof buf, &n);
    if (rc == CURLE_AGAIN) {
      if (!wait_for (c, POLLIN, why, detail))
        return EB_NNTP_FAILED;
      continue;
    }
    if (rc != CURLE_OK || n == 0) {
      *why = EB_REASON_FETCH_FAILED;
      *detail = g_strdup (rc != CURLE_OK ? curl_easy_strerror (rc)
                                         : "NNTP: the server closed the connection before the end of its answer");
      return EB_NNTP_FAILED;
    }
    c->received += n;
    g_byte_array_append (c->in, (const guint8 *) buf, (guint) n);
  }
}

/* A status line whose code is @want, or a failure naming what came. */
static gboolean
expect (Conn *c, guint want, const char *after, EbReason *why, char **detail)
{
  if (read_step (c, why, detail) != EB_NNTP_STATUS)
    return FALSE;
  guint code = eb_nntp_reader_code (c->reader);
  if (code == want)
    return TRUE;
  *why = EB_REASON_FETCH_FAILED;
  *detail = g_strdup_printf ("NNTP %u after %s: %s", code, after, eb_nntp_reader_text (c->reader));
  return FALSE;
}

/* The conversation on a connected socket: greeting, GROUP, ARTICLE, the
 * article, QUIT. */
static void
converse (Conn *c, const Target *t, EbFetchResult *r)
{
  EbReason why = EB_REASON_RESOLVED;
  char *detail = NULL;
  gboolean ok = read_step (c, &why, &detail) == EB_NNTP_STATUS;
  if (ok && eb_nntp_reader_code (c->reader) != 200 && eb_nntp_reader_code (c->reader) != 201) {
    why = EB_REASON_FETCH_FAILED;
    detail = g_strdup_printf ("NNTP greeting %u: %s", eb_nntp_reader_code (c->reader),
                              eb_nntp_reader_text (c->reader));
    ok = FALSE;
  }
  if (ok && t->group) {
    g_autofree char *cmd = g_strdup_printf ("GROUP %s\r\n", t->group);
    ok = send_line (c, cmd, &why, &detail) && expect (c, 211, "GROUP", &why, &detail);
  }
  if (ok) {
    g_autofree char *cmd = g_strdup_printf ("ARTICLE %s\r\n", t->article);
    ok = send_line (c, cmd, &why, &detail) && expect (c, 220, "ARTICLE", &why, &detail);
  }
  if (ok) {
    eb_nntp_reader_want_block (c->reader);
    ok = read_step (c, &why, &detail) == EB_NNTP_END;
  }
  if (!ok) {
    r->reason = why;
    r->detail = detail;
    return;
  }
  size_t n = 0;
  curl_easy_send (c->easy, "QUIT\r\n", 6, &n);   /* a courtesy: not waited for */
  r->reason = EB_REASON_RESOLVED;
  r->body = eb_nntp_reader_steal_block (c->reader);
  r->content_type = g_strdup ("message/rfc822");
}

/* Connect to @host:@port through libcurl (its resolver, its connect
 * timeout, the open-socket check of every address) and talk. */
static void
fetch_from (EbFetcher *f, const char *host, guint port, const Target *t, guint64 max_bytes,
            gint64 until, const gint *cancel, void (*progress) (gint64 *), EbFetchResult *r)
{
  const EbConfig *cfg = f->config;
  Connect chk = { .f = f, .why = EB_REASON_RESOLVED };
  g_autofree char *u = g_strdup_printf ("http://%s:%u/", host, port);
  CURL *e = curl_easy_init ();
  curl_easy_setopt (e, CURLOPT_URL, u);
  curl_easy_setopt (e, CURLOPT_CONNECT_ONLY, 1L);
  curl_easy_setopt (e, CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt (e, CURLOPT_PROXY, "");
  curl_easy_setopt (e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt (e, CURLOPT_OPENSOCKETFUNCTION, open_checked);
  curl_easy_setopt (e, CURLOPT_OPENSOCKETDATA, &chk);
  gint64 left_ms = MAX ((until - g_get_monotonic_time ()) / 1000, 1);
  curl_easy_setopt (e, CURLOPT_CONNECTTIMEOUT_MS, (long) MIN ((gint64) cfg->connect_timeout * 1000, left_ms));
  CURLcode rc = curl_easy_perform (e);
  if (rc != CURLE_OK) {
    r->reason = chk.why != EB_REASON_RESOLVED ? chk.why
                : rc == CURLE_OPERATION_TIMEDOUT ? EB_REASON_TIMED_OUT : EB_REASON_FETCH_FAILED;
    r->detail = chk.detail ? g_steal_pointer (&chk.detail) : g_strdup (curl_easy_strerror (rc));
    curl_easy_cleanup (e);
    return;
  }
  g_free (chk.detail);
  r->network = TRUE;
  Conn c = { .easy = e, .until = until, .cancel = cancel, .progress = progress,
             .last = g_get_monotonic_time (), .in = g_byte_array_new (),
             .reader = eb_nntp_reader_new ((gsize) cfg->nntp_max_line_bytes, max_bytes) };
  curl_easy_getinfo (e, CURLINFO_ACTIVESOCKET, &c.sock);
  converse (&c, t, r);
  r->received = c.received;
  eb_nntp_reader_free (c.reader);
  g_byte_array_unref (c.in);
  curl_easy_cleanup (e);
}

/* Split nntp_server (HOST:PORT, [IPV6]:PORT or HOST) into *@host and, when
 * it names one, *@port. */
static void
server_split (const char *server, char **host, guint *port)
{
  const char *colon = strrchr (server, ':');
  const char *bracket = strrchr (server, ']');
  if (colon && (server[0] != '[' || (bracket && colon > bracket))) {
    *host = g_strndup (server, colon - server);
    *port = (guint) g_ascii_strtoull (colon + 1, NULL, 10);
  } else {
    *host = g_strdup (server);
  }
}

EbFetchResult *
eb_nntp_fetch (EbFetcher *f, const char *url, guint64 max_bytes, gint64 deadline, const gint *cancel,
               void (*progress) (gint64 *last))
{
  EbFetchResult *r = g_new0 (EbFetchResult, 1);
  r->final_url = g_strdup (url);
  g_auto (Target) t = { 0 };
  g_autofree char *host = NULL;
  guint port = 0;
  if (!eb_fetch_url_scheme_allowed (f, url)) {
    g_autofree char *s = eb_fetch_url_scheme (url);
    r->reason = EB_REASON_SCHEME_DISABLED;
    r->detail = g_strdup_printf ("scheme \"%s\"", s ? s : "");
    return r;
  }
  if ((r->reason = parse_url (url, &t, &r->detail)) != EB_REASON_RESOLVED)
    return r;
  if (t.host) {
    host = g_strdup (t.host);
    port = t.port;
  } else if (f->config->nntp_server && *f->config->nntp_server) {
    port = t.port;   /* the scheme's, unless nntp_server names one */
    server_split (f->config->nntp_server, &host, &port);
  } else {
    r->reason = EB_REASON_SCHEME_DISABLED;
    r->detail = g_strdup ("news: URLs need nntp_server");
    return r;
  }
  if (f->config->proxy && *f->config->proxy) {
    r->reason = EB_REASON_FETCH_FAILED;
    r->detail = g_strdup ("NNTP is never fetched through proxy, and never around it");
    return r;
  }
  g_autofree char *lower = g_ascii_strdown (host, -1);
  if (!eb_fetch_url_host_allowed (f, lower)) {
    r->reason = EB_REASON_REFUSED_DOMAIN;
    r->detail = g_strdup_printf ("host %.100s", lower);
    return r;
  }
  gint64 start = eb_fetch_rate_reserve (f, lower, deadline);
  if (start < 0) {
    r->reason = EB_REASON_RATE_LIMITED;
    r->detail = g_strdup_printf ("host %.100s: no slot before the message deadline", lower);
    return r;
  }
  gint64 last = g_get_monotonic_time ();
  while (g_get_monotonic_time () < start && !(cancel && g_atomic_int_get (cancel))) {
    if (progress)
      progress (&last);
    g_usleep (MAX (MIN (start - g_get_monotonic_time (), 100000), 0));
  }
  gint64 begun = g_get_monotonic_time ();
  gint64 until = MIN (deadline, begun + (gint64) f->config->fetch_timeout * G_USEC_PER_SEC);
  fetch_from (f, host, port, &t, max_bytes, until, cancel, progress, r);
  r->elapsed = g_get_monotonic_time () - begun;
  return r;
}
