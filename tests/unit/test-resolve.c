/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-resolve.c - one decision per reference (eb_resolve_decide), the new part
 * built from it (eb_resolve) for data: URLs and for hand-made fetch results,
 * the new header's fields, and a table that produces every reason token. */
#include <string.h>
#include <glib/gstdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include "eb-gmime.h"
#include "eb-resolve.h"
#include "eb-plan-private.h"
#include "eb-seal.h"
#include "test-msg.h"

static EbConfig *
config_with (const char *const *options)
{
  EbConfig *config = eb_config_new ();
  for (guint i = 0; options && options[i]; i++) {
    g_autoptr (GError) error = NULL;
    g_assert_true (eb_config_apply_option (config, options[i], &error));
    g_assert_no_error (error);
  }
  return config;
}

/* A message with one reference: @params after "message/external-body; ", the
 * phantom part @inner (header, blank line, anything), inside a multipart. */
static char *
part_message (const char *params, const char *inner)
{
  return g_strdup_printf (
    "From: a@example.org\n"
    "Subject: part\n"
    "MIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=\"b1\"\n"
    "\n"
    "--b1\n"
    "Content-Type: text/plain\n"
    "\n"
    "first\n"
    "--b1\n"
    "Content-Type: message/external-body; %s\n"
    "\n"
    "%s"
    "\n--b1--\n", params, inner);
}

typedef struct {
  GByteArray    *msg;
  EbMessageScan *scan;
  EbRef         *ref;    /* (transfer none) the first reference */
} Scanned;

static void
scanned_clear (Scanned *s)
{
  g_clear_pointer (&s->scan, eb_message_scan_free);
  g_clear_pointer (&s->msg, g_byte_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Scanned, scanned_clear)

static void
scan_text (Scanned *s, const char *text, const char *eol, const EbConfig *config)
{
  s->msg = test_msg_with_eol (text, eol);
  s->scan = eb_message_scan ((const char *) s->msg->data, s->msg->len, config);
  g_assert_cmpint (s->scan->reason, ==, EB_REASON_RESOLVED);
  g_assert_cmpuint (s->scan->refs->len, >=, 1);
  s->ref = g_ptr_array_index (s->scan->refs, 0);
  g_assert_true (s->ref->located);
}

static void
scan_part (Scanned *s, const char *params, const char *inner, const EbConfig *config)
{
  g_autofree char *text = part_message (params, inner);
  scan_text (s, text, "\n", config);
}

static EbResolution *
resolve (Scanned *s, const EbAction *a, const EbConfig *config, const EbFetchResult *fetched,
         guint64 *budget)
{
  guint64 zero = 0;
  return eb_resolve (s->ref, a, (const char *) s->msg->data, s->msg->len, s->scan->eol, config,
                     fetched, budget ? budget : &zero);
}

/* ---- eb_resolve_decide -------------------------------------------------- */

#define FETCH_ON "fetch=on"
typedef struct {
  const char  *name;
  const char  *params;
  const char  *inner;        /* NULL: "Content-Type: text/plain\n\n" */
  const char  *options[4];
  EbActionKind kind;
  EbReason     reason;
  const char  *target;       /* FETCH / LOCAL_FILE */
  const char  *detail;       /* LEAVE; NULL: not checked */
} DecideCase;

static const DecideCase decide_cases[] = {
  { "data", "access-type=URL; URL=\"data:,x\"", NULL, { NULL },
    EB_ACTION_DATA, EB_REASON_RESOLVED, NULL, NULL },
  { "data-uppercase", "access-type=URL; URL=\"DATA:text/plain,x\"", NULL, { NULL },
    EB_ACTION_DATA, EB_REASON_RESOLVED, NULL, NULL },
  { "http-fetch-off", "access-type=URL; URL=\"http://h.example/x\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_FETCH_OFF, NULL, "scheme \"http\"" },
  { "https-fetch-off", "access-type=URL; URL=\"https://h.example/x\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_FETCH_OFF, NULL, "scheme \"https\"" },
  { "ftp-fetch-off", "access-type=URL; URL=\"ftp://h.example/x\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_FETCH_OFF, NULL, "scheme \"ftp\"" },
  { "http-fetch-on", "access-type=URL; URL=\"http://h.example/x\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "http://h.example/x", NULL },
  { "https-upper-fetch-on", "access-type=URL; URL=\"HTTPS://h.example/x\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "HTTPS://h.example/x", NULL },
  { "ftp-fetch-on", "access-type=URL; URL=\"ftp://h.example/x\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "ftp://h.example/x", NULL },
  { "scheme-not-allowed", "access-type=URL; URL=\"http://h.example/x\"", NULL,
    { FETCH_ON, "allow_schemes=https", NULL },
    EB_ACTION_LEAVE, EB_REASON_SCHEME_DISABLED, NULL, "scheme \"http\"" },
  /* gopher: fetched only when allow_schemes names it; the item type first */
  { "gopher", "access-type=URL; URL=\"gopher://h.example/0x\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_SCHEME_DISABLED, NULL, "scheme \"gopher\"" },
  { "gopher-fetch-off", "access-type=URL; URL=\"gopher://h.example/0x\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_FETCH_OFF, NULL, "scheme \"gopher\"" },
  { "gopher-allowed", "access-type=URL; URL=\"gopher://h.example:7070/9bin%20file\"", NULL,
    { FETCH_ON, "allow_schemes=gopher", NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "gopher://h.example:7070/9bin%20file", NULL },
  { "gopher-image", "access-type=URL; URL=\"gopher://h.example/I/a.png\"", NULL,
    { FETCH_ON, "allow_schemes=gopher", NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "gopher://h.example/I/a.png", NULL },
  { "gopher-top-menu", "access-type=URL; URL=\"gopher://h.example\"", NULL,
    { FETCH_ON, "allow_schemes=gopher", NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_DOCUMENT, NULL, "gopher item type 1 is a menu" },
  { "gopher-slash", "access-type=URL; URL=\"gopher://h.example/\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_DOCUMENT, NULL, "gopher item type 1 is a menu" },
  { "gopher-menu", "access-type=URL; URL=\"gopher://h.example/1/dir\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_DOCUMENT, NULL, "gopher item type 1 is a menu" },
  { "gopher-search", "access-type=URL; URL=\"gopher://h.example/7/find%09x\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_DOCUMENT, NULL, "gopher item type 7 is a search" },
  { "gopher-telnet", "access-type=URL; URL=\"gopher://h.example/8/x\"", NULL,
    { FETCH_ON, "allow_schemes=gopher", NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_RETRIEVAL, NULL, "gopher item type 8 is a telnet session" },
  { "gopher-tn3270", "access-type=URL; URL=\"gopher://h.example/T/x\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_RETRIEVAL, NULL, "gopher item type T is a telnet session" },
  { "gopher-escape-type", "access-type=URL; URL=\"gopher://h.example/%30x\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_DOCUMENT, NULL, "gopher item type % is not a document" },
  /* URLs that retrieve nothing, schemes with no server left: whatever the
   * configuration says */
  { "mailto", "access-type=URL; URL=\"mailto:list@example.org\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_RETRIEVAL, NULL, NULL },
  { "mailto-upper-fetch-on", "access-type=URL; URL=\"MAILTO:list@example.org\"", NULL,
    { FETCH_ON, "allow_schemes=http", NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_RETRIEVAL, NULL, NULL },
  { "telnet", "access-type=URL; URL=\"telnet://h.example/\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_RETRIEVAL, NULL,
    "scheme \"telnet\": RFC 2017 section 3 forbids a URL that retrieves nothing" },
  { "tn3270", "access-type=URL; URL=\"tn3270://h.example/\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_RETRIEVAL, NULL, NULL },
  { "wais", "access-type=URL; URL=\"wais://h.example/db?x\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_UNSUPPORTED_SCHEME, NULL, "scheme \"wais\": no server speaks it any more" },
  { "prospero", "access-type=URL; URL=\"prospero://h.example/x\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_UNSUPPORTED_SCHEME, NULL, NULL },
  /* ftp: a directory is no document, whatever the configuration */
  { "ftp-type-d", "access-type=URL; URL=\"ftp://h.example/pub;type=d\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_DOCUMENT, NULL, "an ftp directory listing (;type=d) is not a document" },
  { "ftp-type-D-upper", "access-type=URL; URL=\"ftp://h.example/pub;TYPE=D\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_DOCUMENT, NULL, NULL },
  { "ftp-trailing-slash", "access-type=URL; URL=\"ftp://h.example/pub/\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_DOCUMENT, NULL, "an ftp URL naming a directory is not a document" },
  { "ftp-no-path", "access-type=URL; URL=\"ftp://h.example\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_NOT_DOCUMENT, NULL, NULL },
  { "ftp-type-a", "access-type=URL; URL=\"ftp://h.example/f.txt;type=a\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "ftp://h.example/f.txt;type=a", NULL },
  { "ftp-type-i", "access-type=URL; URL=\"ftp://h.example/f.bin;type=i\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "ftp://h.example/f.bin;type=i", NULL },
  /* file: gated by allow_schemes and local_file_dirs, fetch on or off */
  { "file-remote-host", "access-type=URL; URL=\"file://evil.example/etc/passwd\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_FILE_REMOTE_HOST, NULL, "host \"evil.example\"" },
  { "file-not-allowed", "access-type=URL; URL=\"file:///tmp/x\"", NULL, { "local_file_dirs=/tmp", NULL },
    EB_ACTION_LEAVE, EB_REASON_SCHEME_DISABLED, NULL, "scheme \"file\"" },
  { "file-no-dirs", "access-type=URL; URL=\"file:///tmp/x\"", NULL, { "allow_schemes=file", NULL },
    EB_ACTION_LEAVE, EB_REASON_LOCAL_FILE_DIRS, NULL, "scheme \"file\"" },
  { "file-empty-host", "access-type=URL; URL=\"file:///tmp/a%20b/c\"", NULL,
    { "allow_schemes=file", "local_file_dirs=/tmp", NULL },
    EB_ACTION_LOCAL_FILE, EB_REASON_RESOLVED, "/tmp/a b/c", NULL },
  { "file-localhost-any-case", "access-type=URL; URL=\"FILE://LocalHost/tmp/x\"", NULL,
    { "allow_schemes=file", "local_file_dirs=/tmp", NULL },
    EB_ACTION_LOCAL_FILE, EB_REASON_RESOLVED, "/tmp/x", NULL },
  { "file-localhost-port", "access-type=URL; URL=\"file://localhost:80/tmp/x\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_FILE_REMOTE_HOST, NULL, "host \"localhost:80\"" },
  { "file-escaped-slash", "access-type=URL; URL=\"file:///tmp/a%2F..%2F..%2Fetc/passwd\"", NULL,
    { "allow_schemes=file", "local_file_dirs=/tmp", NULL },
    EB_ACTION_LEAVE, EB_REASON_REFUSED_PATH, NULL, "the path holds an escaped '/' (%2F)" },
  { "file-dotdot", "access-type=URL; URL=\"file:///tmp/../etc/passwd\"", NULL,
    { "allow_schemes=file", "local_file_dirs=/tmp", NULL },
    EB_ACTION_LEAVE, EB_REASON_REFUSED_PATH, NULL, "the path holds a \".\" or \"..\" segment" },
  { "file-escaped-dotdot", "access-type=URL; URL=\"file:///tmp/%2e%2E/etc/passwd\"", NULL,
    { "allow_schemes=file", "local_file_dirs=/tmp", NULL },
    EB_ACTION_LEAVE, EB_REASON_REFUSED_PATH, NULL, "the path holds a \".\" or \"..\" segment" },
  { "file-nul", "access-type=URL; URL=\"file:///tmp/x%00.txt\"", NULL,
    { "allow_schemes=file", "local_file_dirs=/tmp", NULL },
    EB_ACTION_LEAVE, EB_REASON_REFUSED_PATH, NULL, "the path holds an escaped NUL (%00)" },
  { "file-bad-escape", "access-type=URL; URL=\"file:///tmp/x%4\"", NULL,
    { "allow_schemes=file", "local_file_dirs=/tmp", NULL },
    EB_ACTION_LEAVE, EB_REASON_REFUSED_PATH, NULL, "a bad %-escape in the path" },
  { "file-query", "access-type=URL; URL=\"file:///tmp/x?y\"", NULL,
    { "allow_schemes=file", "local_file_dirs=/tmp", NULL },
    EB_ACTION_LEAVE, EB_REASON_REFUSED_PATH, NULL, "a file URL with a query or a fragment" },
  { "file-one-slash", "access-type=URL; URL=\"file:/tmp/x\"", NULL,
    { "allow_schemes=file", "local_file_dirs=/tmp", NULL },
    EB_ACTION_LEAVE, EB_REASON_REFUSED_PATH, NULL, NULL },
  { "file-size-over", "access-type=URL; URL=\"file:///tmp/x\"; size=11", NULL,
    { "allow_schemes=file", "local_file_dirs=/tmp", "max_part_bytes=10", NULL },
    EB_ACTION_LEAVE, EB_REASON_SIZE_PARAM, NULL, "size=11" },
  { "file", "access-type=URL; URL=\"file:///etc/passwd\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_SCHEME_DISABLED, NULL, "scheme \"file\"" },
  { "no-scheme", "access-type=URL; URL=\"h.example/x\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_SCHEME_DISABLED, NULL, "scheme \"\"" },
  { "size-over", "access-type=URL; URL=\"http://h.example/x\"; size=1001", NULL,
    { FETCH_ON, "max_part_bytes=1000", NULL },
    EB_ACTION_LEAVE, EB_REASON_SIZE_PARAM, NULL, "size=1001" },
  { "size-equal", "access-type=URL; URL=\"http://h.example/x\"; size=1000", NULL,
    { FETCH_ON, "max_part_bytes=1000", NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "http://h.example/x", NULL },
  /* a size parameter matters only for what would be fetched */
  { "size-over-fetch-off", "access-type=URL; URL=\"http://h.example/x\"; size=1001", NULL,
    { "max_part_bytes=1000", NULL },
    EB_ACTION_LEAVE, EB_REASON_FETCH_OFF, NULL, NULL },
  { "size-over-data", "access-type=URL; URL=\"data:,x\"; size=1001", NULL,
    { FETCH_ON, "max_part_bytes=1000", NULL },
    EB_ACTION_DATA, EB_REASON_RESOLVED, NULL, NULL },
  { "size-over-disabled", "access-type=URL; URL=\"ldap://h/\"; size=1001", NULL,
    { FETCH_ON, "max_part_bytes=1000", NULL },
    EB_ACTION_LEAVE, EB_REASON_SCHEME_DISABLED, NULL, NULL },
  /* anon-ftp: the RFC 1738 URL */
  { "anon-ftp-absolute-ascii",
    "access-type=anon-ftp; site=\"ftp.example.org\"; directory=\"/pub/src\"; name=\"f.txt\"; mode=ascii",
    NULL, { FETCH_ON, NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "ftp://ftp.example.org/%2Fpub/src/f.txt;type=a", NULL },
  { "anon-ftp-relative-image",
    "access-type=anon-ftp; site=\"ftp.example.org\"; directory=\"pub/src/\"; name=\"f.bin\"; mode=IMAGE",
    NULL, { FETCH_ON, NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "ftp://ftp.example.org/pub/src/f.bin;type=i", NULL },
  { "anon-ftp-binary",
    "access-type=anon-ftp; site=h; name=f; mode=binary", NULL, { FETCH_ON, NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "ftp://h/f;type=i", NULL },
  { "anon-ftp-local8",
    "access-type=anon-ftp; site=h; name=f; mode=local8", NULL, { FETCH_ON, NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "ftp://h/f;type=i", NULL },
  { "anon-ftp-no-mode-escaped",
    "access-type=anon-ftp; site=h; directory=\"a b\"; name=\"c;d e\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "ftp://h/a%20b/c%3Bd%20e", NULL },
  { "anon-ftp-unknown-mode",
    "access-type=anon-ftp; site=h; name=f; mode=ebcdic", NULL, { FETCH_ON, NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "ftp://h/f", NULL },
  { "anon-ftp-fetch-off", "access-type=anon-ftp; site=h; name=f", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_FETCH_OFF, NULL, "access-type=anon-ftp" },
  { "anon-ftp-ftp-not-allowed", "access-type=anon-ftp; site=h; name=f", NULL,
    { FETCH_ON, "allow_schemes=http https", NULL },
    EB_ACTION_LEAVE, EB_REASON_SCHEME_DISABLED, NULL, "access-type=anon-ftp: scheme \"ftp\"" },
  { "anon-ftp-size-over", "access-type=anon-ftp; site=h; name=f; size=99", NULL,
    { FETCH_ON, "max_part_bytes=98", NULL },
    EB_ACTION_LEAVE, EB_REASON_SIZE_PARAM, NULL, "size=99" },
  { "anon-ftp-no-site", "access-type=anon-ftp; name=f", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_PARAM_MISSING, NULL, "access-type=anon-ftp without site" },
  { "anon-ftp-no-name", "access-type=anon-ftp; site=h", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_PARAM_MISSING, NULL, "access-type=anon-ftp without name" },
  /* local-file */
  { "local-file-no-name", "access-type=local-file; site=h", NULL, { "local_file_dirs=/tmp", NULL },
    EB_ACTION_LEAVE, EB_REASON_PARAM_MISSING, NULL, "access-type=local-file without name" },
  { "local-file-no-dirs", "access-type=local-file; name=\"/tmp/x\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_LOCAL_FILE_DIRS, NULL, "access-type=local-file" },
  { "local-file", "access-type=local-file; name=\"/tmp/x\"", NULL, { "local_file_dirs=/tmp", NULL },
    EB_ACTION_LOCAL_FILE, EB_REASON_RESOLVED, "/tmp/x", NULL },
  /* access-types never acted on */
  { "ftp", "access-type=ftp; site=h; name=f", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_ACCESS_TYPE, NULL, "access-type=ftp" },
  { "tftp", "access-type=TFTP; site=h; name=f", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_ACCESS_TYPE, NULL, "access-type=tftp" },
  { "mail-server", "access-type=mail-server; server=\"a@b\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_ACCESS_TYPE, NULL, "access-type=mail-server" },
  { "x-unknown", "access-type=x-other", NULL, { FETCH_ON, NULL },
    EB_ACTION_LEAVE, EB_REASON_ACCESS_TYPE, NULL, "access-type=x-other" },
  { "url-with-space", "access-type=\"URL \"; URL=\"data:,x\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_ACCESS_TYPE, NULL, "access-type=url " },
  /* the reference itself */
  { "nested", "access-type=URL; URL=\"data:,x\"",
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,y\"\n\n", { NULL },
    EB_ACTION_LEAVE, EB_REASON_NESTED_REF, NULL, NULL },
  { "bad-inner-two", "access-type=URL; URL=\"data:,x\"",
    "Content-Type: text/plain\nContent-Type: text/html\n\n", { NULL },
    EB_ACTION_LEAVE, EB_REASON_BAD_INNER_HEADER, NULL, "inner Content-Type unreadable or repeated" },
  { "bad-inner-garbage", "access-type=URL; URL=\"data:,x\"", "Content-Type: ???\n\n", { NULL },
    EB_ACTION_LEAVE, EB_REASON_BAD_INNER_HEADER, NULL, NULL },
  { "no-access-type", "URL=\"data:,x\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_NO_ACCESS_TYPE, NULL, NULL },
  { "url-missing", "access-type=URL", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_URL_MISSING, NULL, NULL },
  { "url-invalid", "access-type=URL; URL=\"\"", NULL, { NULL },
    EB_ACTION_LEAVE, EB_REASON_URL_INVALID, NULL, "URL parameter is empty" },
  /* expired is no reason to leave */
  { "expired-fetch", "access-type=URL; URL=\"http://h.example/x\"; "
    "expiration=\"Thu, 01 Jan 1998 00:00:00 +0000\"", NULL, { FETCH_ON, NULL },
    EB_ACTION_FETCH, EB_REASON_RESOLVED, "http://h.example/x", NULL },
  { "expired-data", "access-type=URL; URL=\"data:,x\"; expiration=\"Thu, 01 Jan 1998 00:00:00 +0000\"",
    NULL, { NULL }, EB_ACTION_DATA, EB_REASON_RESOLVED, NULL, NULL },
};

static void
test_decide (gconstpointer data)
{
  const DecideCase *c = data;
  g_autoptr (EbConfig) config = config_with (c->options);
  g_auto (Scanned) s = { 0 };
  scan_part (&s, c->params, c->inner ? c->inner : "Content-Type: text/plain\n\n", config);
  g_autoptr (EbAction) a = eb_resolve_decide (s.ref, config);
  g_assert_cmpint (a->kind, ==, c->kind);
  g_assert_cmpstr (eb_reason_token (a->reason), ==, eb_reason_token (c->reason));
  g_assert_cmpstr (a->target, ==, c->target);
  if (c->detail)
    g_assert_cmpstr (a->detail, ==, c->detail);
  if (c->kind != EB_ACTION_LEAVE)
    g_assert_null (a->detail);
}

/* Walk reasons come first and are passed through as they are. */
static void
test_decide_walk (void)
{
  static const EbReason walk[] = { EB_REASON_TOO_DEEP, EB_REASON_TOO_MANY_REFS,
                                   EB_REASON_TOO_MANY_PARTS, EB_REASON_SIGNED };
  g_autoptr (EbConfig) config = config_with (NULL);
  for (guint i = 0; i < G_N_ELEMENTS (walk); i++) {
    g_auto (Scanned) s = { 0 };
    scan_part (&s, "access-type=URL; URL=\"data:,x\"", "Content-Type: text/plain\n\n", config);
    s.ref->walk_reason = walk[i];
    g_autoptr (EbAction) a = eb_resolve_decide (s.ref, config);
    g_assert_cmpint (a->kind, ==, EB_ACTION_LEAVE);
    g_assert_cmpint (a->reason, ==, walk[i]);
    g_assert_null (a->target);
    g_assert_null (a->detail);
    g_autoptr (EbResolution) res = resolve (&s, a, config, NULL, NULL);
    g_assert_cmpint (res->reason, ==, walk[i]);
    g_assert_null (eb_resolution_header (res));
  }
  /* not located: unlocatable, whatever the read said */
  g_auto (Scanned) s = { 0 };
  scan_part (&s, "access-type=URL; URL=\"data:,x\"", "Content-Type: text/plain\n\n", config);
  s.ref->located = FALSE;
  g_autoptr (EbAction) a = eb_resolve_decide (s.ref, config);
  g_assert_cmpint (a->reason, ==, EB_REASON_UNLOCATABLE);
}

static void
test_expired (void)
{
  static const struct {
    const char *expiration;
    gboolean    expired;
  } cases[] = {
    { NULL, FALSE },
    { "Thu, 01 Jan 1998 00:00:00 +0000", TRUE },
    { "Sat, 01 Jan 2000 00:00:00 GMT", TRUE },
    { "Fri, 01 Jan 2100 00:00:00 +0000", FALSE },
    { "not a date", FALSE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autoptr (EbRef) ref = eb_extref_new ();
    ref->expiration = g_strdup (cases[i].expiration);
    g_assert_cmpint (eb_resolve_expired (ref), ==, cases[i].expired);
  }
}

static void
test_schemes (void)
{
  static const struct { const char *s; gboolean fetchable; } f[] = {
    { "http", TRUE }, { "HTTPS", TRUE }, { "Ftp", TRUE }, { "gopher", TRUE }, { "Gopher", TRUE },
    { "file", FALSE }, { "data", FALSE }, { "", FALSE }, { "https ", FALSE }, { "ftps", FALSE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (f); i++)
    g_assert_cmpint (eb_resolve_scheme_fetchable (f[i].s), ==, f[i].fetchable);

  const char *opts[] = { "allow_schemes=https, FTP", NULL };
  g_autoptr (EbConfig) c = config_with (opts);
  g_assert_true (eb_resolve_scheme_allowed (c, "https"));
  g_assert_true (eb_resolve_scheme_allowed (c, "HTTPS"));
  g_assert_true (eb_resolve_scheme_allowed (c, "ftp"));
  g_assert_false (eb_resolve_scheme_allowed (c, "http"));
  g_assert_false (eb_resolve_scheme_allowed (c, "ftps"));
  const char *none[] = { "allow_schemes=", NULL };
  g_autoptr (EbConfig) c2 = config_with (none);
  g_assert_false (eb_resolve_scheme_allowed (c2, "http"));
  g_autoptr (EbConfig) def = config_with (NULL);
  g_assert_true (eb_resolve_scheme_allowed (def, "http"));
  g_assert_true (eb_resolve_scheme_allowed (def, "https"));
  g_assert_true (eb_resolve_scheme_allowed (def, "ftp"));
}

/* ---- eb_resolve on DATA actions ----------------------------------------- */

static char *
md5_b64 (const char *s)
{
  guint8 d[16];
  gsize dl = sizeof d;
  g_autoptr (GChecksum) c = g_checksum_new (G_CHECKSUM_MD5);
  g_checksum_update (c, (const guchar *) s, (gssize) strlen (s));
  g_checksum_get_digest (c, d, &dl);
  return g_base64_encode (d, dl);
}

typedef struct {
  const char  *name;
  const char  *params;
  const char  *inner;
  const char  *options[3];
  guint64      budget;       /* resolved before this one */
  EbReason     reason;
  const char  *type;         /* resolved: the new type */
  const char  *data;         /* resolved: the data */
  const char  *detail;       /* left: NULL not checked */
} DataCase;

#define MD5_HELLO "ixqZU8RhEpaoJ6v4xHgE1w=="  /* MD5 ("Hello"), checked in test_data_md5 */

static const DataCase data_cases[] = {
  { "agree", "access-type=URL; URL=\"data:text/plain,Hello\"", "Content-Type: text/plain; charset=us-ascii\n\n",
    { NULL }, 0, EB_REASON_RESOLVED, "text/plain", "Hello", NULL },
  { "type-case", "access-type=URL; URL=\"data:TEXT/Plain,Hello\"", "Content-Type: text/PLAIN\n\n",
    { NULL }, 0, EB_REASON_RESOLVED, "text/plain", "Hello", NULL },
  { "disagree", "access-type=URL; URL=\"data:text/html,Hello\"", "Content-Type: text/plain\n\n",
    { NULL }, 0, EB_REASON_TYPE_MISMATCH, NULL, NULL,
    "data: URL is text/html, inner header says text/plain" },
  /* a data: URL that names no type does not disagree */
  { "no-data-type", "access-type=URL; URL=\"data:,Hello\"", "Content-Type: image/gif\n\n",
    { NULL }, 0, EB_REASON_RESOLVED, "image/gif", "Hello", NULL },
  { "no-inner-type", "access-type=URL; URL=\"data:image/png;base64,iVBO\"", "Content-ID: <x@y>\n\n",
    { NULL }, 0, EB_REASON_RESOLVED, "image/png", "\x89PN", NULL },
  { "invalid", "access-type=URL; URL=\"data:text/plain\"", "Content-Type: text/plain\n\n",
    { NULL }, 0, EB_REASON_DATA_URL_INVALID, NULL, NULL, NULL },
  /* the inner Content-Transfer-Encoding */
  { "inner-base64", "access-type=URL; URL=\"data:,SGVs%0D%0AbG8=\"",
    "Content-Type: text/plain\nContent-Transfer-Encoding: BASE64\n\n",
    { NULL }, 0, EB_REASON_RESOLVED, "text/plain", "Hello", NULL },
  { "inner-qp", "access-type=URL; URL=\"data:,H=65llo\"",
    "Content-Type: text/plain\nContent-Transfer-Encoding: quoted-printable\n\n",
    { NULL }, 0, EB_REASON_RESOLVED, "text/plain", "Hello", NULL },
  { "inner-8bit", "access-type=URL; URL=\"data:,Hello\"",
    "Content-Type: text/plain\nContent-Transfer-Encoding: 8bit\n\n",
    { NULL }, 0, EB_REASON_RESOLVED, "text/plain", "Hello", NULL },
  { "inner-unknown", "access-type=URL; URL=\"data:,Hello\"",
    "Content-Type: text/plain\nContent-Transfer-Encoding: x-uue\n\n",
    { NULL }, 0, EB_REASON_CTE_UNKNOWN, NULL, NULL, "Content-Transfer-Encoding: x-uue" },
  { "inner-base64-bad", "access-type=URL; URL=\"data:,SGVsb!G8=\"",
    "Content-Type: text/plain\nContent-Transfer-Encoding: base64\n\n",
    { NULL }, 0, EB_REASON_CTE_INVALID, NULL, NULL, NULL },
  /* Content-MD5 */
  { "md5-good", "access-type=URL; URL=\"data:,Hello\"",
    "Content-Type: text/plain\nContent-MD5: " MD5_HELLO "\n\n",
    { NULL }, 0, EB_REASON_RESOLVED, "text/plain", "Hello", NULL },
  { "md5-of-decoded", "access-type=URL; URL=\"data:,SGVsbG8=\"",
    "Content-Type: text/plain\nContent-Transfer-Encoding: base64\nContent-MD5: " MD5_HELLO "\n\n",
    { NULL }, 0, EB_REASON_RESOLVED, "text/plain", "Hello", NULL },
  { "md5-bad", "access-type=URL; URL=\"data:,Hellp\"",
    "Content-Type: text/plain\nContent-MD5: " MD5_HELLO "\n\n",
    { NULL }, 0, EB_REASON_CHECKSUM, NULL, NULL, NULL },
  /* text: RFC 1864 digests the canonical form (CR LF); the data may end its lines in LF */
  { "md5-text-canonical", "access-type=URL; URL=\"data:,a%0Ab%0A\"",
    "Content-Type: text/plain\nContent-MD5: WbDXdy8FYe+5VRjzy4q8YA==\n\n",
    { NULL }, 0, EB_REASON_RESOLVED, "text/plain", "a\nb\n", NULL },
  { "md5-binary-not-canonical", "access-type=URL; URL=\"data:,a%0Ab%0A\"",
    "Content-Type: application/octet-stream\nContent-MD5: WbDXdy8FYe+5VRjzy4q8YA==\n\n",
    { NULL }, 0, EB_REASON_CHECKSUM, NULL, NULL, NULL },
  /* limits */
  { "part-equal", "access-type=URL; URL=\"data:,Hello\"", "Content-Type: text/plain\n\n",
    { "max_part_bytes=5", NULL }, 0, EB_REASON_RESOLVED, "text/plain", "Hello", NULL },
  { "part-over", "access-type=URL; URL=\"data:,Hello!\"", "Content-Type: text/plain\n\n",
    { "max_part_bytes=5", NULL }, 0, EB_REASON_PART_TOO_LARGE, NULL, NULL, "6 bytes" },
  /* raw data over the limit although decoded it would fit */
  { "part-over-raw", "access-type=URL; URL=\"data:,SGVsbG8=\"",
    "Content-Type: text/plain\nContent-Transfer-Encoding: base64\n\n",
    { "max_part_bytes=5", NULL }, 0, EB_REASON_PART_TOO_LARGE, NULL, NULL, "8 bytes" },
  { "budget-equal", "access-type=URL; URL=\"data:,Hello\"", "Content-Type: text/plain\n\n",
    { "max_message_bytes=10", NULL }, 5, EB_REASON_RESOLVED, "text/plain", "Hello", NULL },
  { "budget-over", "access-type=URL; URL=\"data:,Hello\"", "Content-Type: text/plain\n\n",
    { "max_message_bytes=10", NULL }, 6, EB_REASON_MESSAGE_BUDGET, NULL, NULL, "6 + 5 bytes" },
  /* composite data */
  { "composite-safe", "access-type=URL; URL=\"data:,Subject:%20x%0D%0A%0D%0Abody%0D%0A\"",
    "Content-Type: message/rfc822\n\n",
    { NULL }, 0, EB_REASON_RESOLVED, "message/rfc822", "Subject: x\r\n\r\nbody\r\n", NULL },
  { "composite-8bit", "access-type=URL; URL=\"data:,Subject:%20x%0A%0A%FF\"",
    "Content-Type: message/rfc822\n\n",
    { NULL }, 0, EB_REASON_COMPOSITE_UNSAFE, NULL, NULL, "message/rfc822" },
  { "composite-delimiter", "access-type=URL; URL=\"data:,--x%0A--b1--%0A\"",
    "Content-Type: multipart/mixed; boundary=x\n\n",
    { NULL }, 0, EB_REASON_COMPOSITE_UNSAFE, NULL, NULL, "multipart/mixed" },
  { "composite-bare-cr", "access-type=URL; URL=\"data:,a%0Db\"",
    "Content-Type: message/rfc822\n\n",
    { NULL }, 0, EB_REASON_COMPOSITE_UNSAFE, NULL, NULL, NULL },
};

static void
test_data (gconstpointer data)
{
  const DataCase *c = data;
  g_autoptr (EbConfig) config = config_with (c->options);
  g_auto (Scanned) s = { 0 };
  scan_part (&s, c->params, c->inner, config);
  g_autoptr (EbAction) a = eb_resolve_decide (s.ref, config);
  g_assert_cmpint (a->kind, ==, EB_ACTION_DATA);
  guint64 budget = c->budget;
  g_autoptr (EbResolution) res = resolve (&s, a, config, NULL, &budget);
  g_assert_cmpstr (eb_reason_token (res->reason), ==, eb_reason_token (c->reason));
  if (c->reason != EB_REASON_RESOLVED) {
    g_assert_null (eb_resolution_header (res));
    g_assert_null (res->data);
    g_assert_cmpuint (budget, ==, c->budget);
    g_assert_nonnull (res->detail);
    if (c->detail)
      g_assert_cmpstr (res->detail, ==, c->detail);
    return;
  }
  g_assert_cmpstr (res->type, ==, c->type);
  gsize n = 0;
  const char *d = g_bytes_get_data (res->data, &n);
  g_assert_cmpmem (d, n, c->data, strlen (c->data));
  g_assert_cmpuint (budget, ==, c->budget + n);
  g_autofree char *sha = g_compute_checksum_for_data (G_CHECKSUM_SHA256, (const guchar *) c->data,
                                                      strlen (c->data));
  g_assert_cmpstr (eb_resolution_sha256 (res), ==, sha);
  g_assert_null (res->detail);
}

static void
test_data_md5 (void)
{
  g_autofree char *m = md5_b64 ("Hello");
  g_assert_cmpstr (m, ==, MD5_HELLO);
}

/* The type a data: URL gives is written when the inner header names none. */
static void
test_data_default_type (void)
{
  g_autoptr (EbConfig) config = config_with (NULL);
  static const struct { const char *url; const char *ct; const char *type; } cases[] = {
    { "data:,Hello", "Content-Type: text/plain;charset=US-ASCII", "text/plain" },
    { "data:image/png;base64,iVBO", "Content-Type: image/png", "image/png" },
    { "data:text/html;charset=utf-8,x", "Content-Type: text/html;charset=utf-8", "text/html" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_auto (Scanned) s = { 0 };
    g_autofree char *params = g_strdup_printf ("access-type=URL; URL=\"%s\"", cases[i].url);
    scan_part (&s, params, "Content-ID: <x@y>\n\n", config);
    g_autoptr (EbAction) a = eb_resolve_decide (s.ref, config);
    g_autoptr (EbResolution) res = resolve (&s, a, config, NULL, NULL);
    g_assert_cmpint (res->reason, ==, EB_REASON_RESOLVED);
    g_assert_cmpstr (res->type, ==, cases[i].type);
    g_autofree char *line = g_strdup_printf ("\n%s\n", cases[i].ct);
    g_test_message ("%s", eb_resolution_header (res)->str);
    g_assert_nonnull (strstr (eb_resolution_header (res)->str, line));
  }
}

/* ---- eb_resolve on FETCH actions: hand-made fetch results ---------------- */

typedef struct {
  const char *name;
  const char *params;
  const char *inner;
  const char *options[3];
  EbReason    fetch_reason;
  const char *fetch_detail;
  const char *server_type;    /* the server's Content-Type, as sent */
  EbReason    reason;
  const char *type;
  const char *detail;
} FetchCase;

#define URL_P "access-type=URL; URL=\"http://h.example/x\""
#define EXPIRED_P "; expiration=\"Thu, 01 Jan 1998 00:00:00 +0000\""
#define FUTURE_P "; expiration=\"Fri, 01 Jan 2100 00:00:00 +0000\""
#define TEXT_INNER "Content-Type: text/plain\n\n"

static const FetchCase fetch_cases[] = {
  { "agree", URL_P, TEXT_INNER, { FETCH_ON, NULL }, EB_REASON_RESOLVED, NULL,
    "text/plain; charset=utf-8", EB_REASON_RESOLVED, "text/plain", NULL },
  { "octet-stream-inner-governs", URL_P, "Content-Type: image/png\n\n", { FETCH_ON, NULL },
    EB_REASON_RESOLVED, NULL, "application/octet-stream", EB_REASON_RESOLVED, "image/png", NULL },
  { "octet-stream-no-inner", URL_P, "Content-ID: <x@y>\n\n", { FETCH_ON, NULL },
    EB_REASON_RESOLVED, NULL, "Application/Octet-Stream", EB_REASON_RESOLVED,
    "application/octet-stream", NULL },
  { "server-type-no-inner", URL_P, "Content-ID: <x@y>\n\n", { FETCH_ON, NULL },
    EB_REASON_RESOLVED, NULL, "image/gif", EB_REASON_RESOLVED, "image/gif", NULL },
  { "no-server-type", URL_P, TEXT_INNER, { FETCH_ON, NULL },
    EB_REASON_RESOLVED, NULL, NULL, EB_REASON_RESOLVED, "text/plain", NULL },
  { "no-types", URL_P, "Content-ID: <x@y>\n\n", { FETCH_ON, NULL },
    EB_REASON_RESOLVED, NULL, NULL, EB_REASON_RESOLVED, "application/octet-stream", NULL },
  { "disagree", URL_P, TEXT_INNER, { FETCH_ON, NULL },
    EB_REASON_RESOLVED, NULL, "text/html", EB_REASON_TYPE_MISMATCH, NULL,
    "server says text/html, inner header says text/plain" },
  { "disagree-accept", URL_P, TEXT_INNER, { FETCH_ON, "content_type_mismatch=accept", NULL },
    EB_REASON_RESOLVED, NULL, "text/html", EB_REASON_RESOLVED, "text/plain", NULL },
  { "not-a-mime-type", URL_P, TEXT_INNER, { FETCH_ON, NULL },
    EB_REASON_RESOLVED, NULL, "garbage", EB_REASON_TYPE_MISMATCH, NULL,
    "the server's Content-Type is not a MIME type" },
  { "not-a-mime-type-accept", URL_P, TEXT_INNER, { FETCH_ON, "content_type_mismatch=accept", NULL },
    EB_REASON_RESOLVED, NULL, "garbage", EB_REASON_RESOLVED, "text/plain", NULL },
  { "blank-server-type", URL_P, TEXT_INNER, { FETCH_ON, NULL },
    EB_REASON_RESOLVED, NULL, "  ", EB_REASON_RESOLVED, "text/plain", NULL },
  /* a failed fetch: expired when the reference has expired */
  { "failed-expired", URL_P EXPIRED_P, TEXT_INNER, { FETCH_ON, NULL },
    EB_REASON_HTTP_STATUS, "HTTP 404", NULL, EB_REASON_EXPIRED, NULL,
    "expiration=Thu, 01 Jan 1998 00:00:00 +0000; http-status: HTTP 404" },
  { "failed-expired-no-detail", URL_P EXPIRED_P, TEXT_INNER, { FETCH_ON, NULL },
    EB_REASON_FETCH_FAILED, NULL, NULL, EB_REASON_EXPIRED, NULL,
    "expiration=Thu, 01 Jan 1998 00:00:00 +0000; fetch-failed: fetch failed" },
  { "failed-unexpired", URL_P FUTURE_P, TEXT_INNER, { FETCH_ON, NULL },
    EB_REASON_HTTP_STATUS, "HTTP 404", NULL, EB_REASON_HTTP_STATUS, NULL, "HTTP 404" },
  { "failed-no-expiration", URL_P, TEXT_INNER, { FETCH_ON, NULL },
    EB_REASON_TIMED_OUT, "after 30 s", NULL, EB_REASON_TIMED_OUT, NULL, "after 30 s" },
  /* an expired reference whose data is still there is resolved */
  { "expired-but-there", URL_P EXPIRED_P, TEXT_INNER, { FETCH_ON, NULL },
    EB_REASON_RESOLVED, NULL, "text/plain", EB_REASON_RESOLVED, "text/plain", NULL },
  { "fetched-too-large", URL_P, TEXT_INNER, { FETCH_ON, "max_part_bytes=4", NULL },
    EB_REASON_RESOLVED, NULL, "text/plain", EB_REASON_PART_TOO_LARGE, NULL, "5 bytes" },
};

static EbFetchResult *
fetch_result (EbReason reason, const char *detail, const char *type, const char *body,
              const char *final_url)
{
  EbFetchResult *f = g_new0 (EbFetchResult, 1);
  f->reason = reason;
  f->detail = g_strdup (detail);
  if (reason == EB_REASON_RESOLVED) {
    f->body = body ? g_bytes_new (body, strlen (body)) : g_bytes_new (NULL, 0);
    f->content_type = g_strdup (type);
    f->final_url = g_strdup (final_url);
  }
  return f;
}

static void
test_fetch (gconstpointer data)
{
  const FetchCase *c = data;
  g_autoptr (EbConfig) config = config_with (c->options);
  g_auto (Scanned) s = { 0 };
  scan_part (&s, c->params, c->inner, config);
  g_autoptr (EbAction) a = eb_resolve_decide (s.ref, config);
  g_assert_cmpint (a->kind, ==, EB_ACTION_FETCH);
  g_autoptr (EbFetchResult) f = fetch_result (c->fetch_reason, c->fetch_detail, c->server_type,
                                              "Hello", "http://h.example/x");
  guint64 budget = 0;
  g_autoptr (EbResolution) res = resolve (&s, a, config, f, &budget);
  g_assert_cmpstr (eb_reason_token (res->reason), ==, eb_reason_token (c->reason));
  if (c->reason != EB_REASON_RESOLVED) {
    g_assert_cmpstr (res->detail, ==, c->detail);
    g_assert_null (eb_resolution_header (res));
    g_assert_cmpuint (budget, ==, 0);
    return;
  }
  g_assert_cmpstr (res->type, ==, c->type);
  g_assert_cmpuint (budget, ==, 5);
  g_assert_cmpuint (g_bytes_get_size (res->data), ==, 5);
  /* the Content-Type written: the inner one, or the type that governs */
  if (strstr (c->inner, "Content-Type:") == NULL) {
    g_autofree char *line = g_strdup_printf ("Content-Type: %s\n", c->type);
    g_assert_true (g_str_has_prefix (strstr (eb_resolution_header (res)->str, "Content-Type:"), line));
  }
}

/* Without a fetch result (inspect without fetching): would-fetch, the target
 * as detail. */
static void
test_would_fetch (void)
{
  const char *opts[] = { FETCH_ON, "local_file_dirs=/tmp", NULL };
  g_autoptr (EbConfig) config = config_with (opts);
  static const struct { const char *params; const char *detail; } cases[] = {
    { URL_P, "http://h.example/x" },
    { "access-type=anon-ftp; site=h; name=f", "ftp://h/f" },
    { "access-type=local-file; name=\"/tmp/f\"", "/tmp/f" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_auto (Scanned) s = { 0 };
    scan_part (&s, cases[i].params, TEXT_INNER, config);
    g_autoptr (EbAction) a = eb_resolve_decide (s.ref, config);
    g_assert_cmpint (a->kind, !=, EB_ACTION_LEAVE);
    g_autoptr (EbResolution) res = resolve (&s, a, config, NULL, NULL);
    g_assert_cmpint (res->reason, ==, EB_REASON_WOULD_FETCH);
    g_assert_cmpstr (res->detail, ==, cases[i].detail);
  }
}

/* ---- the new header ----------------------------------------------------- */

static char *
eol_text (const char *tmpl, const char *eol)
{
  g_autoptr (GByteArray) a = test_msg_with_eol (tmpl, eol);
  g_byte_array_append (a, (const guint8 *) "", 1);
  return (char *) g_byte_array_free (g_steal_pointer (&a), FALSE);
}

static char *
sha_hex (const char *s)
{
  return g_compute_checksum_for_data (G_CHECKSUM_SHA256, (const guchar *) s, strlen (s));
}

/* A part inside a multipart: inner fields as written (its CTE replaced), the
 * outer fields the inner header lacks (not the outer Content-Type or CTE), the
 * new CTE, the trace field. */
static void
check_header_part (const char *eol)
{
  g_autoptr (EbConfig) config = config_with (NULL);
  g_autofree char *text = g_strdup (
    "From: a@example.org\n"
    "MIME-Version: 1.0\n"
    "Content-Type: multipart/mixed; boundary=\"b1\"\n"
    "\n"
    "--b1\n"
    "Content-Type: message/external-body; access-type=URL;\n"
    "\tURL=\"data:,SGVsbG8=\"\n"
    "Content-Description: outer\n"
    "Content-ID: <outer@x>\n"
    "Content-Transfer-Encoding: 7bit\n"
    "X-Outer: o\n"
    "\n"
    "Content-Type: text/plain; charset=us-ascii\n"
    "Content-ID: <inner@x>\n"
    "X-Inner: folded\n"
    " value\n"
    "Content-Transfer-Encoding: base64\n"
    "\n"
    "\n--b1--\n");
  g_auto (Scanned) s = { 0 };
  scan_text (&s, text, eol, config);
  g_assert_false (s.ref->is_root);
  g_autoptr (EbAction) a = eb_resolve_decide (s.ref, config);
  g_autoptr (EbResolution) res = resolve (&s, a, config, NULL, NULL);
  g_assert_cmpint (res->reason, ==, EB_REASON_RESOLVED);
  g_autofree char *sha = sha_hex ("Hello");
  g_autofree char *tmpl = g_strdup_printf (
    "Content-Type: text/plain; charset=us-ascii\n"
    "Content-ID: <inner@x>\n"
    "X-Inner: folded\n"
    " value\n"
    "Content-Description: outer\n"
    "X-Outer: o\n"
    "Content-Transfer-Encoding: 7bit\n"
    "X-Extbody-Resolved: access-type=URL; scheme=data; type=\"text/plain\";\n"
    "\tsize=5; sha256=%s\n"
    "\n", sha);
  g_autofree char *want = eol_text (tmpl, eol);
  g_assert_cmpstr (eb_resolution_header (res)->str, ==, want);
  g_assert_cmpint (res->encoding, ==, EB_OUT_7BIT);
  g_assert_cmpstr (eb_resolution_sha256 (res), ==, sha);
}

static void
test_header_part_lf (void)
{
  check_header_part ("\n");
}

static void
test_header_part_crlf (void)
{
  check_header_part ("\r\n");
}

/* The body of a message (RFC 2046 5.2.3.7): the message's own fields except
 * its Content-* fields, the inner fields, the outer content fields the inner
 * lacks, the new CTE and the trace. */
static void
check_header_root (const char *eol)
{
  const char *opts[] = { FETCH_ON, NULL };
  g_autoptr (EbConfig) config = config_with (opts);
  const char *text =
    "From: a@example.org\n"
    "Subject: top\n"
    "Content-Type: message/external-body; access-type=URL;\n"
    "\tURL=\"http://h.example/a/rather/long/path/that/is/longer/than/forty/characters.bin\"\n"
    "MIME-Version: 1.0\n"
    "Content-Language: en\n"
    "Content-Description: outer\n"
    "X-Other: o\n"
    "\n"
    "Content-Type: application/x-thing\n"
    "Content-Description: inner\n"
    "\n";
  g_auto (Scanned) s = { 0 };
  scan_text (&s, text, eol, config);
  g_assert_true (s.ref->is_root);
  g_autoptr (EbAction) a = eb_resolve_decide (s.ref, config);
  g_assert_cmpint (a->kind, ==, EB_ACTION_FETCH);
  const char *body = "\x01\x02\x03\xff binary";
  g_autoptr (EbFetchResult) f = fetch_result (EB_REASON_RESOLVED, NULL, "application/x-thing",
                                              body, a->target);
  g_autoptr (EbResolution) res = resolve (&s, a, config, f, NULL);
  g_assert_cmpint (res->reason, ==, EB_REASON_RESOLVED);
  g_assert_cmpint (res->encoding, ==, EB_OUT_BASE64);
  g_assert_cmpstr (res->type, ==, "application/x-thing");
  g_autofree char *sha = sha_hex (body);
  g_autofree char *tmpl = g_strdup_printf (
    "From: a@example.org\n"
    "Subject: top\n"
    "MIME-Version: 1.0\n"
    "X-Other: o\n"
    "Content-Type: application/x-thing\n"
    "Content-Description: inner\n"
    "Content-Language: en\n"
    "Content-Transfer-Encoding: base64\n"
    "X-Extbody-Resolved: access-type=URL;\n"
    "\tURL=\"http://h.example/a/rather/long/path/that\n"   /* 40 characters a line */
    "\t/is/longer/than/forty/characters.bin\";\n"
    "\tsize=%" G_GSIZE_FORMAT "; sha256=%s\n"
    "\n", strlen (body), sha);
  g_autofree char *want = eol_text (tmpl, eol);
  g_assert_cmpstr (eb_resolution_header (res)->str, ==, want);
}

static void
test_header_root_lf (void)
{
  check_header_root ("\n");
}

static void
test_header_root_crlf (void)
{
  check_header_root ("\r\n");
}

/* The trace of anon-ftp and local-file references. */
static void
test_header_trace (void)
{
  g_autofree char *dir = g_dir_make_tmp ("eb-resolve-XXXXXX", NULL);
  g_assert_nonnull (dir);
  g_autofree char *opt = g_strdup_printf ("local_file_dirs=%s", dir);
  const char *opts[] = { FETCH_ON, opt, NULL };
  g_autoptr (EbConfig) config = config_with (opts);
  g_autofree char *sha = sha_hex ("Hello");

  g_auto (Scanned) s = { 0 };
  scan_part (&s, "access-type=anon-ftp; site=h; name=f; mode=ascii", TEXT_INNER, config);
  g_autoptr (EbAction) a = eb_resolve_decide (s.ref, config);
  g_assert_cmpstr (a->target, ==, "ftp://h/f;type=a");
  g_autoptr (EbFetchResult) f = fetch_result (EB_REASON_RESOLVED, NULL, NULL, "Hello", a->target);
  g_autoptr (EbResolution) res = resolve (&s, a, config, f, NULL);
  g_assert_cmpint (res->reason, ==, EB_REASON_RESOLVED);
  g_autofree char *want = g_strdup_printf (
    "X-Extbody-Resolved: access-type=anon-ftp;\n\tURL=\"ftp://h/f;type=a\";\n\tsize=5; sha256=%s\n\n", sha);
  g_assert_true (g_str_has_suffix (eb_resolution_header (res)->str, want));

  /* local-file: a real file read through the library */
  g_autofree char *path = g_build_filename (dir, "a file.txt", NULL);
  g_assert_true (g_file_set_contents (path, "Hello", 5, NULL));
  g_autofree char *params = g_strdup_printf ("access-type=local-file; name=\"%s\"", path);
  g_auto (Scanned) s2 = { 0 };
  scan_part (&s2, params, TEXT_INNER, config);
  g_autoptr (EbAction) a2 = eb_resolve_decide (s2.ref, config);
  g_assert_cmpint (a2->kind, ==, EB_ACTION_LOCAL_FILE);
  g_assert_cmpstr (a2->target, ==, path);
  g_autoptr (EbFetchResult) f2 = eb_fetch_local_file (a2->target, eb_config_get_strv (config, "local_file_dirs"),
                                                      config->max_part_bytes, config->max_message_bytes);
  g_assert_cmpint (f2->reason, ==, EB_REASON_RESOLVED);
  g_autoptr (EbResolution) res2 = resolve (&s2, a2, config, f2, NULL);
  g_assert_cmpint (res2->reason, ==, EB_REASON_RESOLVED);
  g_autofree char *want2 = g_strdup_printf (
    "X-Extbody-Resolved: access-type=local-file;\n\tname=\"%s\";\n\tsize=5; sha256=%s\n\n",
    f2->final_url, sha);
  g_assert_true (g_str_has_suffix (eb_resolution_header (res2)->str, want2));
  g_assert_cmpstr (g_bytes_get_data (res2->data, NULL), !=, NULL);
  g_unlink (path);
  g_rmdir (dir);
}

/* ---- every reason token, produced ---------------------------------------- */

#define PART(params, inner) \
  "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n" \
  "Content-Type: message/external-body; " params "\n\n" inner "\n--b--\n"
#define DATA_REF(inner) PART ("access-type=URL; URL=\"data:,hello\"", inner)
#define ATTACHMENT \
  "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n" \
  "Content-Type: application/octet-stream\n\nbytes\n--b--\n"
#define HTTP_REF PART ("access-type=URL; URL=\"http://h.example/x\"", "Content-Type: text/plain\n\n")

typedef struct {
  EbReason    reason;
  const char *message;      /* through eb_rewrite_plan (no fetcher) */
  const char *options[3];
  guint       index;        /* the reference whose reason it is */
  gboolean    whole;        /* the message's reason (the result's) */
  gboolean    fetched;      /* through eb_resolve with a hand-made fetch result of @reason */
  gboolean    local_dir;    /* local_file_dirs = a fresh temporary directory */
  gboolean    externalize;  /* through eb_externalize_plan (with a store that fails
                               when the reason is store-failed, with none otherwise) */
  gboolean    sealed;       /* a filter's pass (strip_trace) with a key of the site's
                               (trace_key_file), the message under the record it sealed
                               ("resolved 0 of 1 ...") */
} ReasonCase;

static const ReasonCase reason_cases[] = {
  { EB_REASON_RESOLVED, DATA_REF ("Content-Type: text/plain\n\n"), { NULL } },
  { EB_REASON_ACCESS_TYPE, PART ("access-type=mail-server; server=\"a@b\"", "\n"), { NULL } },
  { EB_REASON_NO_ACCESS_TYPE, PART ("URL=\"data:,x\"", "\n"), { NULL } },
  { EB_REASON_BAD_ACCESS_TYPE, PART ("access-type=URL; access-type=URL; URL=\"data:,x\"", "\n"), { NULL } },
  { EB_REASON_URL_MISSING, PART ("access-type=URL", "\n"), { NULL } },
  { EB_REASON_URL_INVALID, PART ("access-type=URL; URL=http://bare/", "\n"), { NULL } },
  { EB_REASON_SCHEME_DISABLED, PART ("access-type=URL; URL=\"ldap://h/\"", "\n"), { NULL } },
  { EB_REASON_DATA_URL_INVALID, PART ("access-type=URL; URL=\"data:nocomma\"", "\n"), { NULL } },
  { EB_REASON_TYPE_MISMATCH, PART ("access-type=URL; URL=\"data:text/html,x\"", "Content-Type: text/plain\n\n"), { NULL } },
  { EB_REASON_BAD_INNER_HEADER, DATA_REF ("Content-Type: a/b\nContent-Type: a/b\n\n"), { NULL } },
  { EB_REASON_CTE_UNKNOWN, DATA_REF ("Content-Transfer-Encoding: x-foo\n\n"), { NULL } },
  { EB_REASON_CTE_INVALID, DATA_REF ("Content-Transfer-Encoding: base64\n\n"), { NULL } },
  { EB_REASON_PART_TOO_LARGE, DATA_REF ("\n"), { "max_part_bytes=4", NULL } },
  { EB_REASON_MESSAGE_BUDGET,
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,hello\"\n\n\n"
    "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,hello\"\n\n\n--b--\n",
    { "max_message_bytes=9", NULL }, 1 },
  { EB_REASON_TOO_DEEP,
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: multipart/mixed; boundary=c\n\n"
    "--c\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\n\n--c--\n"
    "\n--b--\n", { "max_nesting_depth=1", NULL } },
  { EB_REASON_TOO_MANY_REFS,
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n"
    "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,a\"\n\n\n"
    "--b\nContent-Type: message/external-body; access-type=URL; URL=\"data:,b\"\n\n\n--b--\n",
    { "max_references=1", NULL }, 1 },
  { EB_REASON_TOO_MANY_PARTS, DATA_REF ("\n"), { "max_parts=1", NULL }, 0, TRUE },
  { EB_REASON_MESSAGE_TOO_LARGE, DATA_REF ("\n"), { "max_message_size=1024", NULL }, 0, TRUE },
  { EB_REASON_UNLOCATABLE,
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "a line that is no header field\n"
    "Content-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\n\n--b--\n", { NULL } },
  { EB_REASON_DUPLICATE_FIELD,
    PART ("access-type=URL; URL=\"data:,x\"\nContent-Type: message/external-body; access-type=URL; URL=\"data:,y\"", "\n"),
    { NULL } },
  { EB_REASON_COMPOSITE_UNSAFE,
    PART ("access-type=URL; URL=\"data:,%FF\"", "Content-Type: message/rfc822\n\n"), { NULL } },
  { EB_REASON_UNPARSEABLE, "", { NULL }, 0, TRUE },
  { EB_REASON_REFUSED_ADDRESS, HTTP_REF, { FETCH_ON, NULL }, 0, FALSE, TRUE },
  { EB_REASON_REFUSED_DOMAIN, HTTP_REF, { FETCH_ON, NULL }, 0, FALSE, TRUE },
  { EB_REASON_CREDENTIALS, HTTP_REF, { FETCH_ON, NULL }, 0, FALSE, TRUE },
  { EB_REASON_RATE_LIMITED, HTTP_REF, { FETCH_ON, NULL }, 0, FALSE, TRUE },
  { EB_REASON_TIMED_OUT, HTTP_REF, { FETCH_ON, NULL }, 0, FALSE, TRUE },
  { EB_REASON_HTTP_STATUS, HTTP_REF, { FETCH_ON, NULL }, 0, FALSE, TRUE },
  { EB_REASON_TOO_MANY_REDIRECTS, HTTP_REF, { FETCH_ON, NULL }, 0, FALSE, TRUE },
  { EB_REASON_INSECURE_REDIRECT, HTTP_REF, { FETCH_ON, NULL }, 0, FALSE, TRUE },
  { EB_REASON_FETCH_FAILED, HTTP_REF, { FETCH_ON, NULL }, 0, FALSE, TRUE },
  { EB_REASON_EXPIRED,
    PART ("access-type=URL; URL=\"http://h.example/x\"; expiration=\"Thu, 01 Jan 1998 00:00:00 +0000\"", "\n"),
    { FETCH_ON, NULL }, 0, FALSE, TRUE },
  { EB_REASON_CHECKSUM, DATA_REF ("Content-MD5: " MD5_HELLO "\n\n"), { NULL } },
  { EB_REASON_SIZE_PARAM, PART ("access-type=URL; URL=\"http://h.example/x\"; size=2000", "\n"),
    { FETCH_ON, "max_part_bytes=1999", NULL } },
  { EB_REASON_WOULD_FETCH, HTTP_REF, { FETCH_ON, NULL } },
  { EB_REASON_REFUSED_PATH, PART ("access-type=local-file; name=\"/etc/passwd\"", "\n"),
    { NULL }, 0, FALSE, FALSE, TRUE },
  { EB_REASON_FETCH_OFF, HTTP_REF, { NULL } },
  { EB_REASON_LOCAL_FILE_DIRS, PART ("access-type=local-file; name=\"/etc/passwd\"", "\n"), { NULL } },
  { EB_REASON_PARAM_MISSING, PART ("access-type=anon-ftp; name=f", "\n"), { FETCH_ON, NULL } },
  { EB_REASON_SIGNED,
    "MIME-Version: 1.0\nContent-Type: multipart/signed; boundary=s; protocol=\"application/pgp-signature\"\n\n"
    "--s\nContent-Type: message/external-body; access-type=URL; URL=\"data:,x\"\n\n\n"
    "--s\nContent-Type: application/pgp-signature\n\nsig\n--s--\n", { NULL } },
  { EB_REASON_OUTER_CTE,
    PART ("access-type=URL; URL=\"data:,x\"\nContent-Transfer-Encoding: base64", "\n"), { NULL } },
  { EB_REASON_NESTED_REF,
    DATA_REF ("Content-Type: message/external-body; access-type=URL; URL=\"data:,y\"\n\n"), { NULL } },
  { EB_REASON_STORE_FAILED, ATTACHMENT, { "externalize_min_size=1", NULL }, 0, FALSE, FALSE, FALSE, TRUE },
  { EB_REASON_WOULD_EXTERNALIZE, ATTACHMENT, { "externalize_min_size=1", NULL }, 0, FALSE, FALSE, FALSE,
    TRUE },
  { EB_REASON_NOT_RETRIEVAL, PART ("access-type=URL; URL=\"mailto:a@b.example\"", "\n"), { NULL } },
  { EB_REASON_UNSUPPORTED_SCHEME, PART ("access-type=URL; URL=\"wais://h/db\"", "\n"), { NULL } },
  { EB_REASON_NOT_DOCUMENT, PART ("access-type=URL; URL=\"ftp://h/pub/\"", "\n"), { FETCH_ON, NULL } },
  { EB_REASON_FILE_REMOTE_HOST, PART ("access-type=URL; URL=\"file://evil.example/etc/passwd\"", "\n"), { NULL } },
  { EB_REASON_SEALED_RECORD, DATA_REF ("\n"), { NULL }, 0, TRUE, FALSE, FALSE, FALSE, TRUE },
};

G_STATIC_ASSERT (G_N_ELEMENTS (reason_cases) == EB_REASON_N);

static EbReason
produce (const ReasonCase *c)
{
  g_autofree char *dir = NULL;
  g_autoptr (GPtrArray) opts = g_ptr_array_new_with_free_func (g_free);
  for (guint k = 0; c->options[k]; k++)
    g_ptr_array_add (opts, g_strdup (c->options[k]));
  if (c->local_dir) {
    dir = g_dir_make_tmp ("eb-reason-XXXXXX", NULL);
    g_assert_nonnull (dir);
    g_ptr_array_add (opts, g_strdup_printf ("local_file_dirs=%s", dir));
  }
  g_ptr_array_add (opts, NULL);
  g_autoptr (EbConfig) config = config_with ((const char *const *) opts->pdata);
  GString *msg = g_string_new (c->message);
  if (c->reason == EB_REASON_MESSAGE_TOO_LARGE)
    while (msg->len <= 1024)
      g_string_prepend (msg, "X-Padding: 0123456789012345678901234567890123456789\n");
  g_autoptr (EbStore) store = NULL;
  if (c->externalize && c->reason == EB_REASON_STORE_FAILED) {
    /* a directory store whose directory is gone when the part is put */
    g_autofree char *sdir = g_dir_make_tmp ("eb-reason-store-XXXXXX", NULL);
    g_assert_true (eb_config_set (config, "externalize_store", sdir, NULL));
    g_assert_true (eb_config_set (config, "externalize_base_url", "http://127.0.0.1/x", NULL));
    g_autoptr (GError) e = NULL;
    store = eb_store_new (config, &e);
    g_assert_no_error (e);
    g_assert_cmpint (g_rmdir (sdir), ==, 0);
  }
  g_autofree char *key_file = NULL;
  if (c->sealed) {
    /* the record a pass of the site wrote, sealed with the site's key */
    dir = g_dir_make_tmp ("eb-reason-XXXXXX", NULL);
    key_file = g_build_filename (dir, "trace.key", NULL);
    const char *secret = "0123456789abcdef0123456789abcdef";
    g_assert_true (g_file_set_contents (key_file, secret, -1, NULL));
    g_assert_cmpint (g_chmod (key_file, 0600), ==, 0);
    g_assert_true (eb_config_set (config, "trace_key_file", key_file, NULL));
    g_autoptr (GBytes) key = g_bytes_new_static (secret, strlen (secret));
    g_autofree char *seal = eb_seal_make (key, "resolved 0 of 1 external-body reference", NULL);
    g_autofree char *field = g_strdup_printf ("X-Extbody: resolved 0 of 1 external-body reference; seal=%s\n", seal);
    g_string_prepend (msg, field);
  }
  g_autoptr (EbPlan) r = c->externalize
    ? eb_externalize_plan (msg->str, msg->len, config, store, EB_EXTERNALIZE_DEFAULT)
    : eb_rewrite_plan (msg->str, msg->len, config, NULL,
                       EB_REWRITE_NO_PRECHECK | (c->sealed ? EB_REWRITE_STRIP_TRACE : 0));
  EbReason got;
  if (c->whole) {
    g_assert_cmpuint (r->n_resolved, ==, 0);
    got = r->reason;
  } else {
    g_assert_nonnull (r->scan);
    g_assert_cmpuint (c->index, <, r->resolutions->len);
    const EbResolution *res = g_ptr_array_index (r->resolutions, c->index);
    got = res->reason;
    if (c->fetched) {
      /* eb_resolve passes the fetch's reason through (expired: a failed fetch
       * of an expired reference) */
      g_assert_cmpint (got, ==, EB_REASON_WOULD_FETCH);
      const EbAction *a = g_ptr_array_index (r->actions, c->index);
      g_assert_cmpint (a->kind, ==, EB_ACTION_FETCH);
      EbReason fr = c->reason == EB_REASON_EXPIRED ? EB_REASON_HTTP_STATUS : c->reason;
      g_autoptr (EbFetchResult) f = fetch_result (fr, "from the fetcher", NULL, NULL, NULL);
      guint64 budget = 0;
      g_autoptr (EbResolution) res2 = eb_resolve (g_ptr_array_index (r->scan->refs, c->index), a,
                                                  msg->str + r->message->from_len, msg->len - r->message->from_len,
                                                  r->scan->eol, config, f, &budget);
      got = res2->reason;
      g_assert_nonnull (res2->detail);
    }
  }
  if (key_file)
    g_unlink (key_file);
  if (dir)
    g_rmdir (dir);
  g_string_free (msg, TRUE);
  return got;
}

static void
test_every_reason (void)
{
  gboolean seen[EB_REASON_N] = { FALSE };
  for (guint i = 0; i < G_N_ELEMENTS (reason_cases); i++) {
    const ReasonCase *c = &reason_cases[i];
    g_test_message ("reason %s", eb_reason_token (c->reason));
    g_assert_cmpuint (c->reason, <, EB_REASON_N);
    g_assert_false (seen[c->reason]);
    seen[c->reason] = TRUE;
    EbReason got = produce (c);
    g_assert_cmpstr (eb_reason_token (got), ==, eb_reason_token (c->reason));
  }
  for (guint r = 0; r < EB_REASON_N; r++)
    g_assert_true (seen[r]);
}

/* ---- file URLs, against real files ---------------------------------------- */

/* The reason of the one reference of a message whose URL is @u, planned with
 * allow_schemes = file and local_file_dirs = @dirs (and @extra); *@detail and
 * *@trace (nullable) get the detail and the new part's header. */
static EbReason
file_url (const char *u, const char *dirs, const char *extra, char **detail, char **head)
{
  g_autofree char *ls = g_strdup_printf ("local_file_dirs=%s", dirs);
  const char *opts[] = { "allow_schemes=file", ls, extra, NULL };
  g_autoptr (EbConfig) config = config_with (opts);
  g_autofree char *msg = g_strdup_printf (
    "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
    "Content-Type: message/external-body; access-type=URL;\n URL=\"%s\"\n\n"
    "Content-Type: application/octet-stream\n\n\n--b--\n", u);
  g_autoptr (EbPlan) r = eb_rewrite_plan (msg, strlen (msg), config, NULL, EB_REWRITE_NO_PRECHECK);
  g_assert_nonnull (r->scan);
  g_assert_cmpuint (r->resolutions->len, ==, 1);
  const EbResolution *res = g_ptr_array_index (r->resolutions, 0);
  g_test_message ("%s: %s (%s)", u, eb_reason_token (res->reason), res->detail ? res->detail : "");
  *detail = g_strdup (res->detail);
  if (head)
    *head = res->reason == EB_REASON_RESOLVED ? g_strdup (eb_resolution_header ((EbResolution *) res)->str) : NULL;
  return res->reason;
}

static void
test_file_url (void)
{
  g_autofree char *top = g_dir_make_tmp ("eb-file-url-XXXXXX", NULL);
  g_autofree char *dir = g_build_filename (top, "in", NULL);
  g_autofree char *out = g_build_filename (top, "out", NULL);
  g_assert_cmpint (g_mkdir (dir, 0700), ==, 0);
  g_assert_cmpint (g_mkdir (out, 0700), ==, 0);
  g_autofree char *secret = g_build_filename (out, "secret", NULL);
  g_assert_true (g_file_set_contents (secret, "secret", -1, NULL));
  g_autofree char *ok = g_build_filename (dir, "a b.txt", NULL);
  g_assert_true (g_file_set_contents (ok, "Hello", -1, NULL));
  g_autofree char *sub = g_build_filename (dir, "sub", NULL);
  g_assert_cmpint (g_mkdir (sub, 0700), ==, 0);
  g_autofree char *link = g_build_filename (dir, "link", NULL);
  g_assert_cmpint (symlink (secret, link), ==, 0);
  g_autofree char *dlink = g_build_filename (dir, "dlink", NULL);
  g_assert_cmpint (symlink (out, dlink), ==, 0);
  g_autofree char *fifo = g_build_filename (dir, "fifo", NULL);
  g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
  g_autofree char *huge = g_build_filename (dir, "huge", NULL);
  int fd = open (huge, O_WRONLY | O_CREAT, 0600);
  g_assert_cmpint (fd, >=, 0);
  g_assert_cmpint (ftruncate (fd, (off_t) 1 << 40), ==, 0);   /* sparse: a terabyte of nothing */
  close (fd);
  /* a name with a literal "%2F" and one with a '/'-free escape */
  g_autofree char *pct = g_build_filename (dir, "x%2Fy", NULL);
  g_assert_true (g_file_set_contents (pct, "pct", -1, NULL));

  struct {
    const char *path;     /* after file:// */
    EbReason    reason;
    const char *detail;   /* a piece of it, or NULL */
  } cases[] = {
    { "/in/a%20b.txt", EB_REASON_RESOLVED, NULL },
    { "/in/sub/../a%20b.txt", EB_REASON_REFUSED_PATH, "\"..\" segment" },
    { "/in/%2e%2e/out/secret", EB_REASON_REFUSED_PATH, "\"..\" segment" },
    { "/in/%2E/a%20b.txt", EB_REASON_REFUSED_PATH, "\"..\" segment" },
    { "/in/sub%2F..%2F..%2Fout/secret", EB_REASON_REFUSED_PATH, "escaped '/'" },
    { "/in/x%252Fy", EB_REASON_RESOLVED, NULL },
    { "/in/link", EB_REASON_REFUSED_PATH, "not inside local_file_dirs" },
    { "/in/dlink/secret", EB_REASON_REFUSED_PATH, "not inside local_file_dirs" },
    { "/in/fifo", EB_REASON_REFUSED_PATH, "not a regular file" },
    { "/in/sub", EB_REASON_REFUSED_PATH, "not a regular file" },
    { "/in/sub/", EB_REASON_REFUSED_PATH, "not a regular file" },
    { "/in/none", EB_REASON_REFUSED_PATH, "No such file" },
    { "/in/a%20b.txt%00.jpg", EB_REASON_REFUSED_PATH, "NUL" },
    { "/out/secret", EB_REASON_REFUSED_PATH, "not inside local_file_dirs" },
    { "/in/huge", EB_REASON_PART_TOO_LARGE, NULL },
    { "/in/a%zzb", EB_REASON_REFUSED_PATH, "bad %-escape" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *u = g_strdup_printf ("file://%s%s", top, cases[i].path);
    g_autofree char *detail = NULL;
    g_autofree char *head = NULL;
    EbReason r = file_url (u, dir, NULL, &detail, &head);
    g_assert_cmpstr (eb_reason_token (r), ==, eb_reason_token (cases[i].reason));
    if (cases[i].detail)
      g_assert_nonnull (strstr (detail, cases[i].detail));
    if (r == EB_REASON_RESOLVED) {
      /* the trace names the URL, not the path read */
      g_assert_nonnull (strstr (head, "X-Extbody-Resolved: access-type=URL;\n\tURL=\"file:"));
    }
  }
  /* the host: empty or localhost in any case; anything else, even with the
   * same path, is another machine's file */
  const char *hosts[] = { "localhost", "LOCALHOST", "LocalHost" };
  for (guint i = 0; i < G_N_ELEMENTS (hosts); i++) {
    g_autofree char *u = g_strdup_printf ("file://%s%s/in/a%%20b.txt", hosts[i], top);
    g_autofree char *detail = NULL;
    g_assert_cmpint (file_url (u, dir, NULL, &detail, NULL), ==, EB_REASON_RESOLVED);
  }
  const char *remote[] = { "evil", "evil.example", "127.0.0.1", "localhost.", "localhost:0", "%6cocalhost",
                           "user@localhost" };
  for (guint i = 0; i < G_N_ELEMENTS (remote); i++) {
    g_autofree char *u = g_strdup_printf ("file://%s%s/in/a%%20b.txt", remote[i], top);
    g_autofree char *detail = NULL;
    g_assert_cmpint (file_url (u, dir, NULL, &detail, NULL), ==, EB_REASON_FILE_REMOTE_HOST);
  }
  /* the limits: max_part_bytes and the message's max_message_bytes */
  g_autofree char *u = g_strdup_printf ("file://%s/in/a%%20b.txt", top);
  g_autofree char *d1 = NULL, *d2 = NULL, *d3 = NULL;
  g_assert_cmpint (file_url (u, dir, "max_part_bytes=4", &d1, NULL), ==, EB_REASON_PART_TOO_LARGE);
  g_assert_cmpint (file_url (u, dir, "max_message_bytes=4", &d2, NULL), ==, EB_REASON_MESSAGE_BUDGET);
  /* the whole file system is not a directory list away: "/" must be named */
  g_assert_cmpint (file_url (u, out, NULL, &d3, NULL), ==, EB_REASON_REFUSED_PATH);

  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", top);
  g_assert_cmpint (system (rm), ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_mime_init ();
  for (guint i = 0; i < G_N_ELEMENTS (decide_cases); i++) {
    g_autofree char *p = g_strdup_printf ("/resolve/decide/%s", decide_cases[i].name);
    g_test_add_data_func (p, &decide_cases[i], test_decide);
  }
  g_test_add_func ("/resolve/decide/walk-reasons", test_decide_walk);
  g_test_add_func ("/resolve/expired", test_expired);
  g_test_add_func ("/resolve/schemes", test_schemes);
  g_test_add_func ("/resolve/data/md5", test_data_md5);
  for (guint i = 0; i < G_N_ELEMENTS (data_cases); i++) {
    g_autofree char *p = g_strdup_printf ("/resolve/data/%s", data_cases[i].name);
    g_test_add_data_func (p, &data_cases[i], test_data);
  }
  g_test_add_func ("/resolve/data/default-type", test_data_default_type);
  for (guint i = 0; i < G_N_ELEMENTS (fetch_cases); i++) {
    g_autofree char *p = g_strdup_printf ("/resolve/fetch/%s", fetch_cases[i].name);
    g_test_add_data_func (p, &fetch_cases[i], test_fetch);
  }
  g_test_add_func ("/resolve/fetch/would-fetch", test_would_fetch);
  g_test_add_func ("/resolve/header/part-lf", test_header_part_lf);
  g_test_add_func ("/resolve/header/part-crlf", test_header_part_crlf);
  g_test_add_func ("/resolve/header/root-lf", test_header_root_lf);
  g_test_add_func ("/resolve/header/root-crlf", test_header_root_crlf);
  g_test_add_func ("/resolve/header/trace", test_header_trace);
  g_test_add_func ("/resolve/every-reason", test_every_reason);
  g_test_add_func ("/resolve/file-url", test_file_url);
  return g_test_run ();
}
