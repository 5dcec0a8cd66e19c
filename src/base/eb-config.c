/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-config.c - the configuration table and key-file loading (see eb-config.h). */
#include "eb-config.h"
#include "eb-error.h"
#include "eb-list.h"
#include "eb-policy.h"
#include "eb-scheme.h"
#include <arpa/inet.h>
#include <stddef.h>
#include <string.h>

#define KEY(n, t, d, lo, hi, doc) { #n, t, d, lo, hi, offsetof (EbConfig, n), doc, NULL, NULL, NULL, NULL }
#define STR(n, d, doc, ch) { #n, EB_CONFIG_STRING, d, 0, 0, offsetof (EbConfig, n), doc, ch, NULL, NULL, NULL }
#define LIST(n, d, doc, chk, what) { #n, EB_CONFIG_STRING, d, 0, 0, offsetof (EbConfig, n), doc, NULL, chk, what, NULL }
#define BOOL(n, d, doc) { #n, EB_CONFIG_BOOL, d, 0, 1, offsetof (EbConfig, n), doc, NULL, NULL, NULL, NULL }

/* ---- lists and typed values ---------------------------------------------- */

static gboolean
check_cidrs (const char *value, GError **error)
{
  g_autoptr (GPtrArray) list = NULL;
  return eb_list_parse_cidrs (value, &list, error);
}

static gboolean
check_ports (const char *value, GError **error)
{
  g_autoptr (GArray) list = NULL;
  return eb_list_parse_ports (value, &list, error);
}

static gboolean
check_schemes (const char *value, GError **error)
{
  g_autoptr (GPtrArray) items = eb_list_split (value, error);
  if (!items)
    return FALSE;
  for (guint i = 0; i < items->len; i++) {
    const char *v = items->pdata[i];
    const EbScheme *s = eb_scheme_lookup (v);
    if (!s || !s->allowable) {
      g_autofree char *names = eb_scheme_list_allowable (", ");
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\" is not a scheme extbody fetches (%s)", v, names);
      return FALSE;
    }
  }
  return TRUE;
}

/* A domain as the fetch policy compares it: a host name (letters, digits,
 * hyphens, dots; labels of 1 to 63 characters), or an IPv4 or IPv6 address.
 * A domain covers its subdomains, so a wildcard is refused, with the hint. */
static gboolean
check_domains (const char *value, GError **error)
{
  g_autoptr (GPtrArray) items = eb_list_split (value, error);
  if (!items)
    return FALSE;
  for (guint i = 0; i < items->len; i++) {
    const char *v = items->pdata[i];
    const char *d = v;
    while (*d == '.')
      d++;
    if (g_str_has_prefix (d, "*.")) {
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
                   "\"%s\": write %s (a domain always covers its subdomains; wildcards are not used)",
                   v, d + 2);
      return FALSE;
    }
    if (g_hostname_is_ip_address (d) || (*d == '[' && d[strlen (d) - 1] == ']'))
      continue;
    gboolean ok = *d != '\0' && strlen (d) <= 253;
    gsize label = 0;
    for (const char *c = d; ok && *c; c++) {
      if (*c == '.') {
        ok = label > 0 || c[1] == '\0';
        label = 0;
      } else {
        ok = (g_ascii_isalnum (*c) || *c == '-' || *c == '_') && ++label <= 63;
      }
    }
    if (!ok) {
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\" is not a domain name", v);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean
check_dirs (const char *value, GError **error)
{
  g_autoptr (GPtrArray) items = eb_list_split (value, error);
  if (!items)
    return FALSE;
  for (guint i = 0; i < items->len; i++)
    if (!g_path_is_absolute (items->pdata[i])) {
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\" is not an absolute path",
                   (char *) items->pdata[i]);
      return FALSE;
    }
  return TRUE;
}

/* Media-type patterns for externalize_types: type/subtype, type/STAR or STAR/STAR,
 * each side an RFC 2045 token. */
static gboolean
check_type_patterns (const char *value, GError **error)
{
  g_autoptr (GPtrArray) items = eb_list_split (value, error);
  if (!items)
    return FALSE;
  for (guint i = 0; i < items->len; i++) {
    const char *v = items->pdata[i];
    const char *slash = strchr (v, '/');
    gboolean ok = slash && slash > v && slash[1] && !strchr (slash + 1, '/');
    for (const char *c = v; ok && *c; c++)
      ok = c == slash || (g_ascii_isgraph (*c) && !strchr ("()<>@,;:\\\"/[]?=", *c));
    if (ok && strchr (v, '*'))   /* '*' only as a whole side, and never * / subtype */
      ok = (slash - v == 1 && v[0] == '*' ? strcmp (slash + 1, "*") == 0 : !memchr (v, '*', (gsize) (slash - v)))
           && (strcmp (slash + 1, "*") == 0 || !strchr (slash + 1, '*'));
    if (!ok) {
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
                   "\"%s\" is not a media-type pattern (type/subtype, type/* or */*)", v);
      return FALSE;
    }
  }
  return TRUE;
}

/* A file named by its absolute path, or empty (none): the milter changes to
 * / when it detaches. */
static gboolean
check_file (const char *value, GError **error)
{
  if (!*value || g_path_is_absolute (value))
    return TRUE;
  g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\" is not an absolute path", value);
  return FALSE;
}

static gboolean
check_proxy (const char *value, GError **error)
{
  if (!*value || strstr (value, "://"))
    return TRUE;
  g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\" is not a proxy URL (SCHEME://HOST:PORT)", value);
  return FALSE;
}

/* Where the pool's Redis listens: HOST:PORT (a name or an IPv4 address),
 * [IPV6]:PORT, or unix:/ABSOLUTE/PATH; empty: no Redis. */
static gboolean
check_redis_server (const char *value, GError **error)
{
  if (!*value)
    return TRUE;
  if (g_str_has_prefix (value, "unix:")) {
    if (g_path_is_absolute (value + 5))
      return TRUE;
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\": the socket path must be absolute", value);
    return FALSE;
  }
  const char *colon = strrchr (value, ':');
  gboolean ok = colon && colon > value && colon[1] && strlen (colon + 1) <= 5;
  for (const char *c = ok ? colon + 1 : ""; ok && *c; c++)
    ok = g_ascii_isdigit (*c);
  guint64 port = ok ? g_ascii_strtoull (colon + 1, NULL, 10) : 0;
  ok = ok && port >= 1 && port <= 65535;
  if (ok && value[0] == '[')
    ok = colon[-1] == ']' && colon - value > 2;
  else if (ok)
    for (const char *c = value; ok && c < colon; c++)
      ok = g_ascii_isalnum (*c) || *c == '-' || *c == '.' || *c == '_';
  if (ok)
    return TRUE;
  g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
               "\"%s\" is not HOST:PORT, [IPV6]:PORT or unix:/PATH", value);
  return FALSE;
}

/* HOST, HOST:PORT or [IPV6]:PORT (a host name or an address), or empty. */
static gboolean
check_nntp_server (const char *value, GError **error)
{
  if (!*value)
    return TRUE;
  g_autofree char *with_port = NULL;
  const char *v = value;
  const char *colon = strrchr (value, ':');
  const char *bracket = strrchr (value, ']');
  if (!colon || (value[0] == '[' && bracket && colon < bracket))
    v = with_port = g_strdup_printf ("%s:119", value);
  if (!g_str_has_prefix (v, "unix:") && check_redis_server (v, NULL))
    return TRUE;
  g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\" is not HOST, HOST:PORT or [IPV6]:PORT", value);
  return FALSE;
}

/* Key prefixes are written into Redis commands as they are: printable ASCII
 * without white space, at most 64 characters. */
static gboolean
check_redis_prefix (const char *value, GError **error)
{
  gboolean ok = strlen (value) <= 64;
  for (const char *c = value; ok && *c; c++)
    ok = *c > ' ' && *c < 127;
  if (ok)
    return TRUE;
  g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
               "\"%s\" is not a key prefix (at most 64 printable characters, no white space)", value);
  return FALSE;
}

/* A URL objects live under: SCHEME://HOST[:PORT][/PATH], with a scheme of
 * @schemes ("|"-separated), no user name or password (they would end up in
 * every message or on every command line), no query and no fragment (an
 * object's name is appended to the path). */
static gboolean
check_url_of (const char *value, const char *schemes, GError **error)
{
  /* only the characters a URL may hold (RFC 3986): a space would vanish in
   * the reference (RFC 2017 3.1: white space in the URL parameter is
   * ignored), and quotes, backslashes and the like are no URL's */
  for (const char *c = value; *c; c++) {
    if ((guchar) *c <= 0x20 || (guchar) *c >= 0x7f || strchr ("\"<>\\^`{|}", *c)) {
      g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
                   "\"%s\" holds a character a URL cannot (write it %%-encoded)", value);
      return FALSE;
    }
  }
  g_autoptr (GError) local = NULL;
  g_autoptr (GUri) uri = g_uri_parse (value, G_URI_FLAGS_ENCODED, &local);
  if (!uri) {
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\" is not a URL (%s)", value, local->message);
    return FALSE;
  }
  g_auto (GStrv) ok = g_strsplit (schemes, "|", -1);
  g_autofree char *scheme = g_ascii_strdown (g_uri_get_scheme (uri), -1);
  if (!g_strv_contains ((const char *const *) ok, scheme)) {
    g_autofree char *list = g_strjoinv (", ", ok);
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\": the scheme must be one of %s", value, list);
    return FALSE;
  }
  if (!g_uri_get_host (uri) || !*g_uri_get_host (uri)) {
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\" names no host", value);
    return FALSE;
  }
  if (g_uri_get_userinfo (uri)) {
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
                 "\"%s\" carries a user name or password: write them in externalize_store_user and externalize_store_password",
                 value);
    return FALSE;
  }
  if (g_uri_get_query (uri) || g_uri_get_fragment (uri)) {
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "\"%s\" has a query or a fragment", value);
    return FALSE;
  }
  return TRUE;
}

/* externalize_store: empty, an absolute directory, or a WebDAV collection's
 * http(s) URL. */
static gboolean
check_store (const char *value, GError **error)
{
  if (!*value || g_path_is_absolute (value))
    return TRUE;
  if (!strstr (value, "://")) {
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
                 "\"%s\" is neither an absolute directory nor an http(s) URL", value);
    return FALSE;
  }
  return check_url_of (value, "http|https", error);
}

/* externalize_store_region: an AWS-style region name (letters, digits,
 * dashes), since it becomes one field of libcurl's "aws:amz:REGION:s3". */
static gboolean
check_region (const char *value, GError **error)
{
  gsize n = strlen (value);
  gboolean ok = n > 0 && n <= 64;
  for (const char *c = value; ok && *c; c++)
    ok = g_ascii_isalnum (*c) || *c == '-';
  if (!ok)
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
                 "\"%s\" is not a region name (letters, digits and dashes, such as us-east-1)", value);
  return ok;
}

static gboolean
check_base_url (const char *value, GError **error)
{
  return !*value || check_url_of (value, "http|https|ftp", error);
}

/* externalize_key: empty, or a secret of at least EB_EXTERNALIZE_KEY_MIN
 * bytes. The message says how long it is, never what it is. */
static gboolean
check_externalize_key (const char *value, GError **error)
{
  gsize n = strlen (value);
  if (n == 0 || n >= EB_EXTERNALIZE_KEY_MIN)
    return TRUE;
  g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX,
               "too short: %" G_GSIZE_FORMAT " bytes, at least %d (make one with openssl rand -hex 32)",
               n, EB_EXTERNALIZE_KEY_MIN);
  return FALSE;
}

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
       "Decoded bytes resolved per message; references past it are left alone. The bodies a message holds while its references are fetched and read count against it too (a body as it arrives, or its whole size once the server announces it), earlier references first: a later one gives up its room to an earlier one, and a body that cannot fit beside the earlier ones is stopped, or not read. The memory a message's bodies take stays within this limit, whatever the number of references and however their fetches interleave."),
  BOOL (fetch, "off",
        "Fetch http, https, ftp and gopher URLs, as allow_schemes permits (on), or resolve data: URLs only, with no network at all (off). A fetch tells the URL's owner that the mail was processed, and from where, like a remote image in a mail reader: turn it on deliberately, usually with allow_domains."),
  LIST (allow_schemes, "http, https, ftp",
       "URL schemes that may be fetched, for the URL and for every redirect: http, https, ftp, gopher (gopher's port 70 must then be in allow_ports, or the server in allow_networks), news and nntp (NNTP, port 119, extbody's own client; news: URLs from nntp_server), and file: file:///PATH and file://localhost/PATH are read as access-type=local-file references are, inside local_file_dirs, whether fetch is on or off, and never reached by a redirect. Whatever this says, mailto, telnet and tn3270 URLs are never used (not-retrieval) and wais and prospero URLs never fetched (unsupported-scheme).", check_schemes, "scheme list"),
  KEY (max_redirects, EB_CONFIG_UINT, "3", 0, 20,
       "Redirects followed per fetch; each must pass the same checks as the URL."),
  LIST (allow_networks, "",
       "CIDR blocks that may be connected to on any port, even when private or loopback.", check_cidrs, "CIDR list"),
  LIST (deny_networks, "",
       "CIDR blocks never connected to; deny wins over allow.", check_cidrs, "CIDR list"),
  LIST (allow_ports, "80, 443, 21",
       "Ports that may be connected to outside allow_networks.", check_ports, "port list"),
  LIST (allow_domains, "",
       "When set, only these domains and their subdomains are fetched from: the way most sites will want to turn fetching on (their own file-sharing and archive hosts).", check_domains, "domain list"),
  LIST (deny_domains, "",
       "Domains, and their subdomains, never fetched from.", check_domains, "domain list"),
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
  LIST (nntp_server, "",
       "The news server news: URLs (news:MESSAGE-ID) are fetched from when allow_schemes names news: HOST, HOST:PORT or [IPV6]:PORT (port 119 when none; it must be in allow_ports, or the server in allow_networks); empty: news: URLs are not fetched. nntp://HOST/GROUP/NUMBER URLs name their own server.", check_nntp_server, "news server"),
  KEY (nntp_max_line_bytes, EB_CONFIG_SIZE, "64k", 512, G_GUINT64_CONSTANT (1) << 20,
       "Bytes of one line of an article an NNTP server sends (CR LF not counted); an article with a longer line is left fetch-failed."),
  LIST (redis_server, "",
       "The Redis server a pool of extbody instances shares its fetch cache, its fetch coalescing and its per-host rate limits through: HOST:PORT, [IPV6]:PORT or unix:/PATH; empty: each instance keeps its own. Redis is an optimisation: when it is down, slow or answers nonsense, an instance falls back to its own cache and limits.", check_redis_server, "Redis server"),
  KEY (redis_timeout, EB_CONFIG_UINT, "200", 1, 60000,
       "Milliseconds to connect to Redis and for each Redis command; past it Redis counts as down and is tried again later, with a growing pause."),
  LIST (redis_prefix, "extbody:",
       "Prefix of every Redis key extbody uses, so that several pools or other programs can share one Redis.", check_redis_prefix, "key prefix"),
  STR (redis_password, "",
       "Password sent with AUTH when connecting to Redis; empty: none.", NULL),
  KEY (redis_max_body, EB_CONFIG_SIZE, "1M", 0, G_GUINT64_CONSTANT (512) << 20,
       "Largest fetched body stored in Redis; a larger one stays in the instance's own cache, and other instances fetch it themselves."),
  LIST (proxy, "",
       "Proxy URL for every fetch; empty means none, whatever the environment says.", check_proxy, "URL"),
  STR (ca_file, "",
       "File of CA certificates for https; empty means the system's.", NULL),
  STR (content_type_mismatch, "keep",
       "When the server's media type disagrees with the inner header: keep the reference, or accept the data.", "keep|accept"),
  BOOL (allow_credentials, "off",
        "Fetch URLs that carry a user name or password."),
  LIST (local_file_dirs, "",
       "Directories whose files access-type=local-file references, and file URLs when allow_schemes names file, may be read from; empty reads none.", check_dirs, "directory list"),
  KEY (lock_timeout, EB_CONFIG_UINT, "60", 0, 3600,
       "Seconds to wait for an mbox that another program has locked (dot-lock or fcntl); then the run ends with a temporary failure, the mailbox unchanged."),
  KEY (externalize_min_size, EB_CONFIG_SIZE, "1M", 1, G_GUINT64_CONSTANT (1) << 40,
       "extbody externalize takes out of a message the parts of at least this many decoded bytes (and only those that externalize_types matches; never text meant to be read inline, never parts under multipart/signed, multipart/encrypted or multipart/related)."),
  LIST (externalize_types, "*/*",
       "The media types extbody externalize may take out of messages: type/subtype, type/* or */*, separated by commas or spaces, compared ignoring case.", check_type_patterns, "media-type pattern list"),
  KEY (externalize_retention, EB_CONFIG_UINT, "0", 0, 36500,
       "Days ahead for the expiration parameter (RFC 2046 5.2.3) of each reference extbody externalize writes; 0 writes none. It is a promise to the recipients only: extbody never deletes a stored object, expiring them is the administrator's (see extbody(1)); in a directory store each message that refers to an object again renews its modification time."),
  BOOL (externalize_fallback, "off",
        "extbody externalize writes each reference inside a multipart/alternative, after a short text/plain part with the link, for mail readers that do not show message/external-body (extbody rewrite restores the original part alone)."),
  LIST (mailbox_metrics_file, "",
       "The same counters for extbody rewrite and extbody externalize --mbox and --maildir runs, added up over every run: each run reads this file, adds its counters and writes it back (under a lock on FILE.lock, waited for up to lock_timeout; mode 0644), so they only grow; every sample has the label writer=\"extbody\", apart from the daemon's. Empty (the default): the runs write no metrics. Name it another NAME.prom beside metrics_file, writable by the users whose runs count.", check_file, "absolute path"),
  BOOL (strip_trace_fields, "on",
        "Remove X-Extbody and X-Extbody-Resolved fields that arrive in a message's header (extbodyd, extbody-pipe): a sender can forge them."),
  LIST (trace_key_file, "",
       "A file holding the site's secret (32 to 4096 bytes, mode 0640, owner root, group extbody: readable by extbodyd and by nobody else; the Debian package makes /etc/extbody/trace.key) that seals the X-Extbody records this site's passes write: each ends in \"; seal=\" and an HMAC-SHA256 of the record and the message's Message-ID. A pass (strip_trace_fields) keeps a record whose seal verifies and removes any other as forged; when that record says the references were resolved (\"resolved N of M external-body references\", as many references left as it says) the pass leaves the message alone and fetches nothing. With it a pass also writes its record when it resolved nothing (\"resolved 0 of 2 ...\") in a message with references, so that a later pass does not fetch them again. For a site where the milter and the daemon's Dovecot door both see a message; a program that cannot read the file (a user's extbody; Dovecot 2.3's per-message Sieve program, run as the mail user) seals and trusts nothing: beside the milter, Dovecot reaches the daemon's socket. Empty: no seal, every record removed.", check_file, "absolute path"),
  LIST (externalize_store, "",
       "Where extbody externalize stores the parts it takes out of messages: an absolute directory (served by a web server under externalize_base_url), or the http or https URL of a WebDAV collection (an S3 bucket with externalize_store_auth = aws-sigv4), written with HTTP PUT. Each object is named by the SHA-256 of its bytes (their HMAC-SHA256 with externalize_key), so a part sent to many recipients is stored once, and is read back and checked before any message refers to it. Empty: externalize refuses to run.", check_store, "directory or URL"),
  LIST (externalize_base_url, "",
       "The URL the stored objects are served under (http, https or ftp); an object's URL is this, a slash, and its name: the SHA-256 of its bytes in hexadecimal, or their HMAC-SHA256 with externalize_key. Required for a directory store; for WebDAV, empty means the store's own URL.", check_base_url, "URL"),
  LIST (externalize_key, "",
       "A secret that names the stored objects: with it an object's name is the HMAC-SHA256 of its bytes keyed with this value (still one object per content), so that nobody without the key can compute the URL of a file and ask the store whether this site has it; empty: the SHA-256 of its bytes, which anyone who has the file can compute (see extbody(1), Privacy). At least 32 bytes, taken as written (make one with openssl rand -hex 32); read from the configuration file only, never from -o, and never printed by extbody config. Set it before the first message: a new key names anew whatever is stored afterwards.", check_externalize_key, "secret of at least 32 bytes"),
  STR (externalize_store_user, "",
       "User name for HTTP basic authentication to the WebDAV store (the access key ID of an aws-sigv4 store); empty: none. Read from the configuration file only, never from -o.", NULL),
  STR (externalize_store_password, "",
       "Password for HTTP basic authentication to the WebDAV store (the secret access key of an aws-sigv4 store). Read from the configuration file only, never from -o, and never printed by extbody config; keep the file unreadable to others (mode 0640, group extbody for extbodyd).", NULL),
  KEY (externalize_store_timeout, EB_CONFIG_UINT, "60", 1, 86400,
       "Seconds for each request to an http or https store (the existence check, the upload and the read-back); past it the part stays in the message. Meanwhile the milter tells the MTA about once a second that it is still working (smfi_progress), so the MTA's own milter timeout need not cover the store (see extbodyd(8))."),
  STR (externalize_store_auth, "basic",
       "How extbody authenticates to an http or https store: basic (HTTP basic authentication with externalize_store_user and externalize_store_password, for WebDAV), or aws-sigv4 (an S3-compatible object store: externalize_store is the bucket's URL in path style, http(s)://HOST[:PORT]/BUCKET, objects are written as BUCKET/NAME with HTTP PUT signed with AWS Signature Version 4, externalize_store_user is the access key ID and externalize_store_password the secret access key). The bucket, or a web server in front of it, must serve the objects to anyone under externalize_base_url (for S3 a bucket policy allowing s3:GetObject to everyone; no ACL is sent).", "basic|aws-sigv4"),
  LIST (externalize_store_region, "us-east-1",
       "The region an aws-sigv4 store's requests are signed for (part of the signature): the bucket's region, or us-east-1 for a server that has none.", check_region, "region"),
};

/* ---- the keys programs add ------------------------------------------------- */

/* The keys programs added, after the library's: appended under the lock,
 * read without it (a slot is written before the count that shows it). Added
 * at a program's start, as its own table, and never removed. */
#define PROGRAM_KEYS_MAX 256
static EbConfigKey *program_keys[PROGRAM_KEYS_MAX];
static guint n_program_keys;   /* read with g_atomic_int_get */
static GMutex program_keys_lock;

guint
eb_config_get_n_keys (void)
{
  return G_N_ELEMENTS (keys) + (guint) g_atomic_int_get (&n_program_keys);
}

const EbConfigKey *
eb_config_get_key (guint i)
{
  g_return_val_if_fail (i < eb_config_get_n_keys (), NULL);
  return i < G_N_ELEMENTS (keys) ? &keys[i] : program_keys[i - G_N_ELEMENTS (keys)];
}

static const EbConfigKey *
find_key (const char *name)
{
  guint n = eb_config_get_n_keys ();
  for (guint i = 0; i < n; i++) {
    const EbConfigKey *k = eb_config_get_key (i);
    if (strcmp (k->name, name) == 0)
      return k;
  }
  return NULL;
}

static gboolean set_key (EbConfig *config, const EbConfigKey *k, const char *value, const char *where,
                         GError **error);

/* A key's name: lowercase letters, digits and underscores, a letter first. */
static gboolean
valid_key_name (const char *name)
{
  if (!name || !g_ascii_islower (*name))
    return FALSE;
  for (const char *c = name; *c; c++)
    if (!g_ascii_islower (*c) && !g_ascii_isdigit (*c) && *c != '_')
      return FALSE;
  return TRUE;
}

/* The library's form of @info, a key of @program. */
static EbConfigKey *
program_key_new (const char *program, const EbConfigKeyInfo *info)
{
  EbConfigKey *k = g_new0 (EbConfigKey, 1);
  k->name = info->name;
  k->type = info->type == EB_CONFIG_KEY_NUMBER ? EB_CONFIG_UINT
          : info->type == EB_CONFIG_KEY_SIZE ? EB_CONFIG_SIZE
          : info->type == EB_CONFIG_KEY_BOOLEAN ? EB_CONFIG_BOOL : EB_CONFIG_STRING;
  k->default_value = info->default_value;
  k->min = info->type == EB_CONFIG_KEY_BOOLEAN ? 0 : info->min;
  k->max = info->type == EB_CONFIG_KEY_BOOLEAN ? 1 : info->max;
  k->offset = G_MAXSIZE;
  k->doc = info->doc;
  k->choices = info->choices;
  k->check = info->type == EB_CONFIG_KEY_NETWORKS ? check_cidrs : info->check;
  k->what = info->type == EB_CONFIG_KEY_NETWORKS ? "CIDR list" : info->what;
  k->program = program;
  return k;
}

/* Whether @info can be added as a key of @program: a new, valid name, a type
 * and a default its own checks take. */
static gboolean
program_key_check (const char *program, const EbConfigKeyInfo *info, GError **error)
{
  if (!valid_key_name (info->name) || !info->default_value || !info->doc
      || info->type > EB_CONFIG_KEY_NETWORKS
      || (info->type == EB_CONFIG_KEY_BOOLEAN && strcmp (info->default_value, "on") != 0
          && strcmp (info->default_value, "off") != 0)) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s: key \"%s\": not a valid key", program,
                 info->name ? info->name : "(null)");
    return FALSE;
  }
  const EbConfigKey *had = find_key (info->name);
  if (had) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s: key \"%s\" is %s's already", program,
                 info->name, had->program ? had->program : "libextbody");
    return FALSE;
  }
  g_autofree EbConfigKey *k = program_key_new (program, info);
  EbConfig scratch = { 0 };
  gboolean ok = set_key (&scratch, k, info->default_value, "default of ", error);
  g_clear_pointer (&scratch.program_values, g_hash_table_unref);
  g_clear_pointer (&scratch.lists, g_hash_table_unref);
  g_clear_pointer (&scratch.networks, g_hash_table_unref);
  return ok;
}

gboolean
eb_config_register_keys (const char *program, const EbConfigKeyInfo *keys_info, guint n_keys,
                         GError **error)
{
  g_return_val_if_fail (program != NULL && (keys_info != NULL || n_keys == 0), FALSE);
  g_mutex_lock (&program_keys_lock);
  gboolean ok = TRUE;
  /* the same program's keys again: nothing to do (its first key tells) */
  const EbConfigKey *first = n_keys ? find_key (keys_info[0].name) : NULL;
  if (first && g_strcmp0 (first->program, program) == 0 && first->doc == keys_info[0].doc)
    goto out;
  for (guint i = 0; ok && i < n_keys; i++)
    ok = program_key_check (program, &keys_info[i], error);
  for (guint i = 0; ok && i < n_keys; i++)
    for (guint j = 0; ok && j < i; j++)
      if (strcmp (keys_info[i].name, keys_info[j].name) == 0) {
        g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s: key \"%s\" twice", program, keys_info[i].name);
        ok = FALSE;
      }
  if (ok && n_program_keys + n_keys > PROGRAM_KEYS_MAX) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s: more keys than programs may add (%d in all)",
                 program, PROGRAM_KEYS_MAX);
    ok = FALSE;
  }
  for (guint i = 0; ok && i < n_keys; i++) {
    guint at = n_program_keys;
    program_keys[at] = program_key_new (g_intern_string (program), &keys_info[i]);
    g_atomic_int_set (&n_program_keys, at + 1);   /* the slot, then the count */
  }
out:
  g_mutex_unlock (&program_keys_lock);
  return ok;
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

static void parse_list (EbConfig *config, const EbConfigKey *k);
static void forget_trace_key (EbConfig *config);

/* @text (taken) becomes the value of the program's key @k in @config. */
static void
set_program_value (EbConfig *config, const EbConfigKey *k, char *text)
{
  if (!config->program_values)
    config->program_values = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  g_hash_table_replace (config->program_values, (gpointer) k->name, text);
}

static gboolean
set_key (EbConfig *config, const EbConfigKey *k, const char *value, const char *where,
         GError **error)
{
  guint64 v = 0;
  gboolean ok;
  /* a program's key: its value goes to program_values, as text */
  gboolean own = k->program == NULL;
  gboolean flag = FALSE;
  char *text = NULL;
  char *field = own ? (char *) config + k->offset
              : k->type == EB_CONFIG_BOOL ? (char *) &flag : (char *) &text;
  if (k->type == EB_CONFIG_STRING) {
    g_autofree char *t = g_strstrip (g_strdup (value));
    if (k->check) {
      g_autoptr (GError) local = NULL;
      if (!k->check (t, &local)) {
        g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s%s: %s", where, k->name, local->message);
        return FALSE;
      }
    }
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
    if (own && k->offset == G_STRUCT_OFFSET (EbConfig, trace_key_file))
      forget_trace_key (config);
    if (!own)
      set_program_value (config, k, text);
    parse_list (config, k);
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
    if (!own)
      set_program_value (config, k, g_strdup (flag ? "on" : "off"));
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
  if (!own)
    set_program_value (config, k, g_strdup_printf ("%" G_GUINT64_FORMAT, v));
  else if (k->type == EB_CONFIG_SIZE)
    *(guint64 *) field = v;
  else
    *(guint *) field = (guint) v;
  return TRUE;
}

EbConfig *
eb_config_new (void)
{
  EbConfig *config = g_new0 (EbConfig, 1);
  guint n = eb_config_get_n_keys ();
  for (guint i = 0; i < n; i++) {
    const EbConfigKey *k = eb_config_get_key (i);
    gboolean ok = set_key (config, k, k->default_value, "", NULL);
    g_assert (ok);
  }
  return config;
}

/* A key whose value is a list: the library's keys with a check read the one
 * list syntax; of a program's keys, only CIDR lists are the library's to
 * parse. */
static gboolean
is_list_key (const EbConfigKey *k)
{
  return k->program ? k->check == check_cidrs : k->check != NULL;
}

/* The text of key @k in @config. */
static const char *
string_value (const EbConfig *config, const EbConfigKey *k)
{
  if (!k->program)
    return *(char *const *) ((const char *) config + k->offset);
  const char *v = config->program_values ? g_hash_table_lookup (config->program_values, k->name) : NULL;
  /* a configuration made before the program added its keys has its defaults */
  return v ? v : k->default_value;
}

/* Parse @k's value, already checked, into its typed forms. */
static void
parse_list (EbConfig *config, const EbConfigKey *k)
{
  if (!is_list_key (k))
    return;
  const char *text = string_value (config, k);
  if (!config->lists)
    config->lists = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, (GDestroyNotify) g_strfreev);
  g_autoptr (GPtrArray) items = eb_list_split (text, NULL);
  if (!items)
    items = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (items, NULL);
  g_hash_table_replace (config->lists, (gpointer) k->name, g_ptr_array_steal (items, NULL));
  if (k->check == check_cidrs) {
    GPtrArray *nets = NULL;
    if (!eb_list_parse_cidrs (text, &nets, NULL))
      nets = g_ptr_array_new_with_free_func (g_free);
    if (!config->networks)
      config->networks = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                (GDestroyNotify) g_ptr_array_unref);
    g_hash_table_replace (config->networks, (gpointer) k->name, nets);
  } else if (!strcmp (k->name, "allow_domains") || !strcmp (k->name, "deny_domains")) {
    GStrv *d = !strcmp (k->name, "allow_domains") ? &config->allow_domains_v : &config->deny_domains_v;
    g_strfreev (*d);
    *d = eb_list_domains (g_hash_table_lookup (config->lists, k->name));
  } else if (!strcmp (k->name, "allow_ports")) {
    g_clear_pointer (&config->allow_ports_v, g_array_unref);
    if (!eb_list_parse_ports (text, &config->allow_ports_v, NULL))
      config->allow_ports_v = g_array_new (FALSE, FALSE, sizeof (guint16));
  }
}

static void
free_lists (EbConfig *config)
{
  g_clear_pointer (&config->lists, g_hash_table_unref);
  g_clear_pointer (&config->networks, g_hash_table_unref);
  g_clear_pointer (&config->allow_ports_v, g_array_unref);
  g_clear_pointer (&config->allow_domains_v, g_strfreev);
  g_clear_pointer (&config->deny_domains_v, g_strfreev);
}

/* Forget the key of trace_key_file read so far (eb-seal.c reads it again). */
static void
forget_trace_key (EbConfig *config)
{
  g_clear_pointer (&config->trace_key, g_bytes_unref);
  config->trace_key_read = FALSE;
}

static void
free_strings (EbConfig *config)
{
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    if (keys[i].type == EB_CONFIG_STRING)
      g_clear_pointer ((char **) ((char *) config + keys[i].offset), g_free);
  g_clear_pointer (&config->program_values, g_hash_table_unref);
  free_lists (config);
  forget_trace_key (config);
}

static void
copy_strings (EbConfig *config)
{
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    if (keys[i].type == EB_CONFIG_STRING) {
      char **f = (char **) ((char *) config + keys[i].offset);
      *f = g_strdup (*f);
    }
  GHashTable *values = config->program_values;
  config->program_values = NULL;
  if (values) {
    GHashTableIter it;
    gpointer name, value;
    g_hash_table_iter_init (&it, values);
    while (g_hash_table_iter_next (&it, &name, &value))
      set_program_value (config, find_key (name), g_strdup (value));
  }
  /* the key read is not shared: the copy reads it again */
  config->trace_key = NULL;
  config->trace_key_read = FALSE;
  /* the parsed lists are @config's own too, parsed again from its text */
  config->lists = NULL;
  config->networks = NULL;
  config->allow_ports_v = NULL;
  config->allow_domains_v = config->deny_domains_v = NULL;
  guint n = eb_config_get_n_keys ();
  for (guint i = 0; i < n; i++)
    parse_list (config, eb_config_get_key (i));
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
eb_config_key_is_file_only (const char *name)
{
  return g_strcmp0 (name, "externalize_store_user") == 0
    || g_strcmp0 (name, "externalize_store_password") == 0
    || g_strcmp0 (name, "externalize_key") == 0;
}

gboolean
eb_config_key_is_secret (const char *name)
{
  return g_strcmp0 (name, "externalize_store_password") == 0
    || g_strcmp0 (name, "externalize_key") == 0
    || g_strcmp0 (name, "redis_password") == 0;
}

gboolean
eb_config_apply_option (EbConfig *config, const char *option, GError **error)
{
  const char *eq = strchr (option, '=');
  if (!eq) {
    g_set_error (error, EB_ERROR, EB_ERROR_SYNTAX, "-o %s: expected KEY=VALUE", option);
    return FALSE;
  }
  g_autofree char *key = g_strstrip (g_strndup (option, (gsize) (eq - option)));
  if (eb_config_key_is_file_only (key)) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG,
                 "-o: %s: only in the configuration file (a command line is visible to every local user)", key);
    return FALSE;
  }
  if (!eb_config_set (config, key, eq + 1, error)) {
    g_prefix_error (error, "-o: ");
    return FALSE;
  }
  return TRUE;
}

gboolean
eb_config_add_networks (EbConfig *config, const char *const *cidrs, GError **error)
{
  for (guint i = 0; cidrs && cidrs[i]; i++) {
    g_autoptr (GError) local = NULL;
    if (!check_cidrs (cidrs[i], &local)) {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "--allow-network %s: %s", cidrs[i], local->message);
      return FALSE;
    }
  }
  if (!cidrs || !cidrs[0])
    return TRUE;
  g_autofree char *joined = g_strjoinv (", ", (char **) cidrs);
  g_autofree char *all = *config->allow_networks
    ? g_strconcat (config->allow_networks, ", ", joined, NULL) : g_strdup (joined);
  return eb_config_set (config, "allow_networks", all, error);
}

/* A key set twice in one file is an error naming both lines: GKeyFile keeps
 * the last value, so a default further down would silently undo the line an
 * administrator added above it. @text has been accepted by GKeyFile; its lines
 * are read the way GKeyFile reads them (leading white space skipped, '#'
 * comments, "[group]" lines, a key is what stands before the first '=' less
 * trailing white space: case and all), and only keys of [extbody] count, keys
 * before any group line included (the other groups are refused anyway). The
 * values are not shown: one may be a secret. */
static gboolean
check_keys_set_once (const char *path, const char *text, GError **error)
{
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  gboolean ours = TRUE;
  guint n = 0;
  for (const char *p = text; *p;) {
    const char *nl = strchr (p, '\n');
    const char *end = nl ? nl : p + strlen (p);
    const char *s = p;
    n++;
    p = nl ? nl + 1 : end;
    while (s < end && g_ascii_isspace (*s))
      s++;
    if (s == end || *s == '#')
      continue;
    if (*s == '[') {
      const char *close = end - 1;
      while (close > s && *close != ']')
        close--;
      ours = close > s && (gsize) (close - s - 1) == strlen (EB_CONFIG_GROUP)
        && strncmp (s + 1, EB_CONFIG_GROUP, (gsize) (close - s - 1)) == 0;
      continue;
    }
    const char *eq = memchr (s, '=', (gsize) (end - s));
    if (!ours || !eq)
      continue;
    while (eq > s && g_ascii_isspace (eq[-1]))
      eq--;
    g_autofree char *key = g_strndup (s, (gsize) (eq - s));
    guint first = GPOINTER_TO_UINT (g_hash_table_lookup (seen, key));
    if (first) {
      g_set_error (error, EB_ERROR, EB_ERROR_CONFIG,
                   "%s:%u: %s is set a second time (first at %s:%u): set each key once",
                   path, n, key, path, first);
      return FALSE;
    }
    g_hash_table_insert (seen, g_steal_pointer (&key), GUINT_TO_POINTER (n));
  }
  return TRUE;
}

gboolean
eb_config_load_file (EbConfig *config, const char *path, gboolean missing_ok, GError **error)
{
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_autoptr (GError) local = NULL;
  g_autofree char *text = NULL;
  gsize text_len = 0;
  if (!g_file_get_contents (path, &text, &text_len, &local)) {
    if (missing_ok && g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
      return TRUE;
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s: %s", path, local->message);
    return FALSE;
  }
  if (memchr (text, '\0', text_len)) {
    g_set_error (error, EB_ERROR, EB_ERROR_CONFIG, "%s: holds a NUL byte: not a configuration file", path);
    return FALSE;
  }
  /* Keys before any group line are extbody's: "max_parts = 5" alone is a
   * valid file (the [extbody] line is optional, as in postconf files). */
  const char *p = text;
  while (*p) {
    const char *nl = strchr (p, '\n');
    const char *q = p;
    while (*q == ' ' || *q == '\t')
      q++;
    if (*q != '#' && *q != ';' && *q != '\n' && *q != '\r' && *q != '\0')
      break;
    p = nl ? nl + 1 : p + strlen (p);
  }
  gboolean grouped = *p == '[';
  g_autofree char *data = grouped ? NULL : g_strconcat ("[" EB_CONFIG_GROUP "]\n", text, NULL);
  if (!g_key_file_load_from_data (kf, grouped ? text : data, (gsize) -1, G_KEY_FILE_NONE, &local)) {
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
  if (!check_keys_set_once (path, text, error))
    return FALSE;
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
  guint n = eb_config_get_n_keys ();
  for (guint i = 0; i < n; i++) {
    const EbConfigKey *k = eb_config_get_key (i);
    const char *field = (const char *) config + k->offset;
    if (k->type == EB_CONFIG_STRING || k->program) {
      /* a program's key is kept as text, already as this writes it */
      const char *v = string_value (config, k);
      if (*v && eb_config_key_is_secret (k->name))
        v = "(set; not shown)";
      g_string_append_printf (s, "%s = %s\n", k->name, v);
      continue;
    }
    if (k->type == EB_CONFIG_BOOL) {
      g_string_append_printf (s, "%s = %s\n", k->name, *(const gboolean *) field ? "on" : "off");
      continue;
    }
    guint64 v = k->type == EB_CONFIG_SIZE ? *(const guint64 *) field : *(const guint *) field;
    g_string_append_printf (s, "%s = %" G_GUINT64_FORMAT "\n", k->name, v);
  }
  return g_string_free (s, FALSE);
}

/* The typed getters of the public API: a key by name, through the table; NULL
 * (and a critical warning) for an unknown key or one of another type. */
static const EbConfigKey *
typed_key (const char *key, EbConfigType want, EbConfigType also)
{
  g_return_val_if_fail (key != NULL, NULL);
  const EbConfigKey *k = find_key (key);
  if (!k || (k->type != want && k->type != also)) {
    g_critical ("libextbody: \"%s\" is not a configuration key of the type asked for", key);
    return NULL;
  }
  return k;
}

gboolean
eb_config_has_key (const char *key)
{
  g_return_val_if_fail (key != NULL, FALSE);
  return find_key (key) != NULL;
}

gboolean
eb_config_get_boolean (const EbConfig *config, const char *key)
{
  g_return_val_if_fail (config != NULL, FALSE);
  const EbConfigKey *k = typed_key (key, EB_CONFIG_BOOL, EB_CONFIG_BOOL);
  if (!k)
    return FALSE;
  if (k->program) {
    const char *v = string_value (config, k);
    return strcmp (v, "on") == 0;   /* as set_key wrote it */
  }
  return *(const gboolean *) ((const char *) config + k->offset);
}

guint64
eb_config_get_uint64 (const EbConfig *config, const char *key)
{
  g_return_val_if_fail (config != NULL, 0);
  const EbConfigKey *k = typed_key (key, EB_CONFIG_UINT, EB_CONFIG_SIZE);
  if (!k)
    return 0;
  const char *f = (const char *) config + k->offset;
  if (k->program) {
    guint64 v = 0;
    /* a number in decimal, as set_key wrote it; a default still as written */
    return eb_config_parse_size (string_value (config, k), &v) ? v : 0;
  }
  return k->type == EB_CONFIG_SIZE ? *(const guint64 *) f : *(const guint *) f;
}

const char *
eb_config_get_string (const EbConfig *config, const char *key)
{
  g_return_val_if_fail (config != NULL, NULL);
  const EbConfigKey *k = typed_key (key, EB_CONFIG_STRING, EB_CONFIG_STRING);
  return k ? string_value (config, k) : NULL;
}

const char *const *
eb_config_get_strv (const EbConfig *config, const char *key)
{
  g_return_val_if_fail (config != NULL && key != NULL, NULL);
  return config->lists ? g_hash_table_lookup (config->lists, key) : NULL;
}

const GPtrArray *
eb_config_get_networks (const EbConfig *config, const char *key)
{
  g_return_val_if_fail (config != NULL && key != NULL, NULL);
  return config->networks ? g_hash_table_lookup (config->networks, key) : NULL;
}

gboolean
eb_config_networks_contain (const EbConfig *config, const char *key, const struct sockaddr *address)
{
  g_return_val_if_fail (config != NULL && key != NULL && address != NULL, FALSE);
  const GPtrArray *nets = eb_config_get_networks (config, key);
  for (guint i = 0; nets && i < nets->len; i++)
    if (eb_policy_cidr_contains (g_ptr_array_index (nets, i), address))
      return TRUE;
  return FALSE;
}

const char *const *
eb_config_get_domains (const EbConfig *config, const char *key)
{
  g_return_val_if_fail (config != NULL && key != NULL, NULL);
  return (const char *const *) (!strcmp (key, "allow_domains") ? config->allow_domains_v
                              : !strcmp (key, "deny_domains") ? config->deny_domains_v : NULL);
}

const char *const *
eb_config_get_allow_schemes (const EbConfig *config)
{
  return eb_config_get_strv (config, "allow_schemes");
}

const char *const *
eb_config_get_local_file_dirs (const EbConfig *config)
{
  return eb_config_get_strv (config, "local_file_dirs");
}

const char *const *
eb_config_get_externalize_types (const EbConfig *config)
{
  return eb_config_get_strv (config, "externalize_types");
}

const GPtrArray *
eb_config_get_allow_networks (const EbConfig *config)
{
  return eb_config_get_networks (config, "allow_networks");
}

const GPtrArray *
eb_config_get_deny_networks (const EbConfig *config)
{
  return eb_config_get_networks (config, "deny_networks");
}

const char *const *
eb_config_get_allow_domains (const EbConfig *config)
{
  g_return_val_if_fail (config != NULL, NULL);
  return (const char *const *) config->allow_domains_v;
}

const char *const *
eb_config_get_deny_domains (const EbConfig *config)
{
  g_return_val_if_fail (config != NULL, NULL);
  return (const char *const *) config->deny_domains_v;
}

const GArray *
eb_config_get_ports (const EbConfig *config)
{
  g_return_val_if_fail (config != NULL, NULL);
  return config->allow_ports_v;
}
