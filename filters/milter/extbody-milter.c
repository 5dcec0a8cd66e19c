/* extbody-milter - resolve message/external-body references inside the MTA
 * (libmilter content filter for Postfix and Sendmail).
 *
 * Per connection: a Conn in the private data pointer; per message: the message
 * collected as headers (rebuilt "Name:value" lines, CRLF) and body chunks, in
 * memory up to milter_spill_size, then spooled to an unlinked temporary file.
 * At end of message the core (eb_rewrite) resolves the references and fetches
 * what is to be fetched; when something changed, the top-level header fields
 * that changed are changed with smfi_chgheader/smfi_addheader, one trace field
 * X-Extbody is added, and the body is replaced in one unbroken run of
 * smfi_replacebody calls. Nothing changed: no modification at all. A failure
 * inside accepts the message unchanged (on_error = accept) or tempfails it.
 * A message whose top-level Content-Type cannot hold an external-body is
 * accepted at end of header, without its body and without a MIME parse.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sysexits.h>
#include <syslog.h>
#include <unistd.h>

#include <curl/curl.h>
#include <gio/gio.h>
#include <gmime/gmime.h>
#include <libmilter/mfapi.h>

#include "eb-config.h"
#include "eb-fetch.h"
#include "eb-header.h"
#include "eb-params.h"
#include "eb-rewrite.h"

static EbConfig  *config;     /* read-only once smfi_main runs */
static EbFetcher *fetcher;    /* locked inside */
static gboolean   to_stderr = TRUE;

static void G_GNUC_PRINTF (2, 3)
log_line (int prio, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  if (to_stderr)
    fprintf (stderr, "extbody-milter: %s\n", msg);
  else
    syslog (prio, "%s", msg);
}

typedef struct {
  GByteArray *mem;
  int         fd;           /* spill file, or -1 */
  guint64     size;
  gboolean    failed;       /* writing the spill file failed */
  gboolean    cannot_hold;  /* the top-level type is neither multipart nor message */
} Msg;

typedef struct {
  Msg     *msg;
  gboolean read_only;   /* the MTA did not offer every change a rewrite needs */
} Conn;

static void
msg_free (Msg *m)
{
  if (!m)
    return;
  if (m->mem)
    g_byte_array_unref (m->mem);
  if (m->fd >= 0)
    close (m->fd);
  g_free (m);
}

static void
msg_append (Msg *m, const void *p, gsize n)
{
  m->size += n;
  if (m->failed)
    return;
  if (m->fd < 0 && m->mem->len + n > config->milter_spill_size) {
    g_autofree char *path = NULL;
    m->fd = g_file_open_tmp ("extbody-milter-XXXXXX", &path, NULL);
    if (m->fd < 0) {
      m->failed = TRUE;
      return;
    }
    unlink (path);   /* the open descriptor keeps it; nothing is left behind */
    if (write (m->fd, m->mem->data, m->mem->len) != (ssize_t) m->mem->len)
      m->failed = TRUE;
    g_byte_array_set_size (m->mem, 0);
  }
  if (m->fd >= 0) {
    if (write (m->fd, p, n) != (ssize_t) n)
      m->failed = TRUE;
  } else {
    g_byte_array_append (m->mem, p, (guint) n);
  }
}

static Conn *
conn_of (SMFICTX *ctx)
{
  Conn *c = smfi_getpriv (ctx);
  if (!c) {
    c = g_new0 (Conn, 1);
    smfi_setpriv (ctx, c);
  }
  return c;
}

static void
msg_done (SMFICTX *ctx)
{
  Conn *c = smfi_getpriv (ctx);
  if (c) {
    msg_free (c->msg);
    c->msg = NULL;
  }
}

static const char *
queue_id (SMFICTX *ctx)
{
  const char *id = smfi_getsymval (ctx, "i");
  return id ? id : "NOQUEUE";
}

static sfsistat
on_error_status (void)
{
  return strcmp (config->on_error, "tempfail") == 0 ? SMFIS_TEMPFAIL : SMFIS_ACCEPT;
}

/* ---- callbacks ------------------------------------------------------------ */

static sfsistat
cb_negotiate (SMFICTX *ctx, unsigned long f0, unsigned long f1, unsigned long f2,
              unsigned long f3, unsigned long *pf0, unsigned long *pf1, unsigned long *pf2,
              unsigned long *pf3)
{
  const unsigned long actions = SMFIF_CHGBODY | SMFIF_CHGHDRS | SMFIF_ADDHDRS;
  if ((f0 & actions) != actions) {
    log_line (LOG_ERR, "the MTA does not offer body and header changes; every message passes unchanged");
    /* what it does offer (adding a header, say) must not be used either: a
     * message is changed whole or not at all */
    conn_of (ctx)->read_only = TRUE;
    return SMFIS_ALL_OPTS;
  }
  *pf0 = actions;
  unsigned long steps = SMFIP_NOCONNECT | SMFIP_NOHELO | SMFIP_NORCPT | SMFIP_NOUNKNOWN
                        | SMFIP_NODATA;
  *pf1 = (steps & f1) | (f1 & SMFIP_HDR_LEADSPC);
  *pf2 = 0;
  *pf3 = 0;
  return SMFIS_CONTINUE;
}

static sfsistat
cb_envfrom (SMFICTX *ctx, char **argv)
{
  Conn *c = conn_of (ctx);
  msg_free (c->msg);
  c->msg = NULL;
  if (c->read_only)
    return SMFIS_ACCEPT;
  c->msg = g_new0 (Msg, 1);
  c->msg->mem = g_byte_array_new ();
  c->msg->fd = -1;
  return SMFIS_CONTINUE;
}

static sfsistat
cb_header (SMFICTX *ctx, char *name, char *value)
{
  Conn *c = conn_of (ctx);
  if (!c->msg)
    return SMFIS_CONTINUE;
  msg_append (c->msg, name, strlen (name));
  msg_append (c->msg, ":", 1);
  /* without SMFIP_HDR_LEADSPC the space after the colon was taken off */
  if (*value != ' ' && *value != '\t')
    msg_append (c->msg, " ", 1);
  for (const char *p = value; *p; p++) {
    if (*p == '\n' && (p == value || p[-1] != '\r'))
      msg_append (c->msg, "\r", 1);
    msg_append (c->msg, p, 1);
  }
  msg_append (c->msg, "\r\n", 2);
  if (g_ascii_strcasecmp (name, "Content-Type") == 0) {
    g_autoptr (EbParams) params = eb_params_parse_only (value, strlen (value), (const char *const[]) { NULL });
    const char *media = eb_params_get_media_type (params);
    if (media && !g_str_has_prefix (media, "multipart/") && !g_str_has_prefix (media, "message/"))
      c->msg->cannot_hold = TRUE;
  }
  return SMFIS_CONTINUE;
}

static sfsistat
cb_eoh (SMFICTX *ctx)
{
  Conn *c = conn_of (ctx);
  if (!c->msg)
    return SMFIS_CONTINUE;
  /* only multipart and message bodies can hold an external-body (a missing
   * Content-Type means text/plain) */
  gboolean cannot = c->msg->cannot_hold;
  g_autoptr (EbHeaderBlock) blk = NULL;
  if (!cannot && c->msg->fd < 0) {
    blk = eb_header_block_scan ((const char *) c->msg->mem->data, 0, c->msg->mem->len);
    if (eb_header_block_find (blk, (const char *) c->msg->mem->data, "Content-Type") < 0)
      cannot = TRUE;
  }
  if (cannot) {
    msg_done (ctx);
    return SMFIS_ACCEPT;
  }
  msg_append (c->msg, "\r\n", 2);
  return SMFIS_CONTINUE;
}

static sfsistat
cb_body (SMFICTX *ctx, unsigned char *chunk, size_t len)
{
  Conn *c = conn_of (ctx);
  if (!c->msg)
    return SMFIS_CONTINUE;
  msg_append (c->msg, chunk, len);
  if (c->msg->size > config->max_message_size) {
    log_line (LOG_INFO, "%s: message larger than max_message_size: passed unchanged", queue_id (ctx));
    msg_done (ctx);
    return SMFIS_ACCEPT;
  }
  return SMFIS_CONTINUE;
}

static void
progress_cb (gpointer data)
{
  smfi_progress ((SMFICTX *) data);
}

/* "Name:value" fields of a header block, for comparing old and new. */
typedef struct {
  char *name;
  char *value;   /* as a milter header value: after the colon, CRLF folds as LF */
} Field;

static GArray *
fields_of (const char *buf, gsize len)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (Field));
  g_autoptr (EbHeaderBlock) blk = eb_header_block_scan (buf, 0, len);
  for (guint i = 0; i < blk->fields->len; i++) {
    const EbHeaderField *f = &g_array_index (blk->fields, EbHeaderField, i);
    Field x;
    x.name = g_strndup (buf + f->start, f->name_len);
    GString *v = g_string_new (NULL);
    for (gsize p = f->value; p < f->value_end; p++)
      if (buf[p] != '\r')
        g_string_append_c (v, buf[p]);
    x.value = g_string_free (v, FALSE);
    g_array_append_val (a, x);
  }
  return a;
}

static void
fields_free (GArray *a)
{
  for (guint i = 0; i < a->len; i++) {
    g_free (g_array_index (a, Field, i).name);
    g_free (g_array_index (a, Field, i).value);
  }
  g_array_unref (a);
}

/* Values of the fields named @name, in order. */
static GPtrArray *
values_of (GArray *fields, const char *name)
{
  GPtrArray *v = g_ptr_array_new ();
  for (guint i = 0; i < fields->len; i++)
    if (g_ascii_strcasecmp (g_array_index (fields, Field, i).name, name) == 0)
      g_ptr_array_add (v, g_array_index (fields, Field, i).value);
  return v;
}

/* Change the top-level header from @old to @new, field name by field name. */
static gboolean
change_headers (SMFICTX *ctx, GArray *old, GArray *new)
{
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (int pass = 0; pass < 2; pass++) {
    GArray *src = pass == 0 ? old : new;
    for (guint i = 0; i < src->len; i++) {
      const char *name = g_array_index (src, Field, i).name;
      g_autofree char *key = g_ascii_strdown (name, -1);
      if (g_hash_table_contains (seen, key))
        continue;
      g_hash_table_add (seen, g_strdup (key));
      g_autoptr (GPtrArray) ov = values_of (old, name);
      g_autoptr (GPtrArray) nv = values_of (new, name);
      guint common = MIN (ov->len, nv->len);
      for (guint k = 0; k < common; k++)
        if (strcmp (ov->pdata[k], nv->pdata[k]) != 0
            && smfi_chgheader (ctx, (char *) name, (int) k + 1, nv->pdata[k]) != MI_SUCCESS)
          return FALSE;
      for (guint k = common; k < nv->len; k++)
        if (smfi_addheader (ctx, (char *) name, nv->pdata[k]) != MI_SUCCESS)
          return FALSE;
      for (guint k = ov->len; k > common; k--)   /* delete from the last, indices stay valid */
        if (smfi_chgheader (ctx, (char *) name, (int) k, NULL) != MI_SUCCESS)
          return FALSE;
    }
  }
  return TRUE;
}

static sfsistat
cb_eom (SMFICTX *ctx)
{
  Conn *c = conn_of (ctx);
  Msg *m = c->msg;
  if (!m)
    return SMFIS_CONTINUE;
  sfsistat status = SMFIS_CONTINUE;
  g_autoptr (GMappedFile) mapped = NULL;
  const char *buf;
  gsize len;
  if (m->failed) {
    log_line (LOG_ERR, "%s: cannot spool the message: %s", queue_id (ctx), g_strerror (errno));
    msg_done (ctx);
    return on_error_status ();
  }
  if (m->fd >= 0) {
    g_autoptr (GError) e = NULL;
    mapped = g_mapped_file_new_from_fd (m->fd, FALSE, &e);
    if (!mapped) {
      log_line (LOG_ERR, "%s: cannot map the spooled message: %s", queue_id (ctx), e->message);
      msg_done (ctx);
      return on_error_status ();
    }
    buf = g_mapped_file_get_contents (mapped);
    len = g_mapped_file_get_length (mapped);
  } else {
    buf = (const char *) m->mem->data;
    len = m->mem->len;
  }

  eb_fetch_set_thread_progress (progress_cb, ctx);
  g_autoptr (GOutputStream) out = g_memory_output_stream_new_resizable ();
  g_autoptr (EbRewriteResult) result = NULL;
  g_autoptr (GError) error = NULL;
  gboolean ok = eb_rewrite (buf, len, config, fetcher, EB_REWRITE_DEFAULT, out, &result, &error);
  eb_fetch_set_thread_progress (NULL, NULL);
  if (!ok) {
    log_line (LOG_ERR, "%s: %s", queue_id (ctx), error->message);
    msg_done (ctx);
    return on_error_status ();
  }

  guint n = result->scan ? result->scan->refs->len : 0;
  if (n || result->reason != EB_REASON_RESOLVED) {
    GString *left = g_string_new (NULL);
    for (guint i = 0; i < n; i++) {
      const EbResolution *r = g_ptr_array_index (result->resolutions, i);
      if (r->reason != EB_REASON_RESOLVED)
        g_string_append_printf (left, "%s%s", left->len ? ", " : "", eb_reason_token (r->reason));
    }
    if (result->reason != EB_REASON_RESOLVED)
      g_string_append_printf (left, "%smessage: %s", left->len ? ", " : "", eb_reason_token (result->reason));
    log_line (LOG_INFO, "%s: %u reference%s, %u resolved%s%s", queue_id (ctx), n, n == 1 ? "" : "s",
              result->n_resolved, left->len ? ", left: " : "", left->str);
    g_string_free (left, TRUE);
  }

  if (result->changed) {
    g_output_stream_close (out, NULL, NULL);
    const char *o = g_memory_output_stream_get_data (G_MEMORY_OUTPUT_STREAM (out));
    gsize olen = g_memory_output_stream_get_data_size (G_MEMORY_OUTPUT_STREAM (out));
    g_autoptr (EbHeaderBlock) ob = eb_header_block_scan (buf, 0, len);
    g_autoptr (EbHeaderBlock) nb = eb_header_block_scan (o, 0, olen);
    GArray *of = fields_of (buf, ob->end);
    GArray *nf = fields_of (o, nb->end);
    g_autofree char *trace = g_strdup_printf (" resolved %u of %u external-body reference%s",
                                              result->n_resolved, n, n == 1 ? "" : "s");
    gboolean done = change_headers (ctx, of, nf)
                    && smfi_addheader (ctx, "X-Extbody", trace) == MI_SUCCESS;
    fields_free (of);
    fields_free (nf);
    /* the new body, in one unbroken run of replacebody calls */
    for (gsize p = nb->body; done && p < olen; p += 65536) {
      gsize k = MIN ((gsize) 65536, olen - p);
      done = smfi_replacebody (ctx, (unsigned char *) o + p, (int) k) == MI_SUCCESS;
    }
    if (!done) {
      log_line (LOG_ERR, "%s: the MTA refused a modification", queue_id (ctx));
      status = on_error_status ();
    }
  }
  msg_done (ctx);
  return status;
}

static sfsistat
cb_abort (SMFICTX *ctx)
{
  msg_done (ctx);
  return SMFIS_CONTINUE;
}

static sfsistat
cb_close (SMFICTX *ctx)
{
  Conn *c = smfi_getpriv (ctx);
  if (c) {
    msg_free (c->msg);
    g_free (c);
    smfi_setpriv (ctx, NULL);
  }
  return SMFIS_CONTINUE;
}

static struct smfiDesc desc = {
  "extbody-milter", SMFI_VERSION,
  SMFIF_CHGBODY | SMFIF_CHGHDRS | SMFIF_ADDHDRS,
  NULL,            /* connect */
  NULL,            /* helo */
  cb_envfrom,
  NULL,            /* envrcpt */
  cb_header,
  cb_eoh,
  cb_body,
  cb_eom,
  cb_abort,
  cb_close,
  NULL,            /* unknown */
  NULL,            /* data */
  cb_negotiate,
};

/* ---- main ------------------------------------------------------------------ */

/* The file of a unix socket spec ("unix:PATH", "local:PATH" or a bare
 * "/PATH"), or NULL for an inet one. */
static const char *
unix_socket_path (const char *spec)
{
  if (g_str_has_prefix (spec, "unix:"))
    return spec + 5;
  if (g_str_has_prefix (spec, "local:"))
    return spec + 6;
  return spec[0] == '/' ? spec : NULL;
}

/* libmilter removes whatever socket is at the path before it binds its own:
 * a second daemon started by mistake would take the socket of a running one
 * and leave it serving nobody. A socket that answers is in use; one that
 * refuses is stale and may go. */
static gboolean
unix_socket_in_use (const char *path)
{
  struct stat st;
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (lstat (path, &st) != 0 || !S_ISSOCK (st.st_mode) || strlen (path) >= sizeof sa.sun_path)
    return FALSE;
  memcpy (sa.sun_path, path, strlen (path) + 1);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return FALSE;
  gboolean live = connect (fd, (struct sockaddr *) &sa, sizeof sa) == 0 || errno == EAGAIN;
  close (fd);
  return live;
}

/* libmilter offers no way to set TCP_NODELAY on the sockets it accepts; on
 * Linux an accepted socket inherits it from the listening one, which is found
 * among the open descriptors. */
static void
set_nodelay_on_listener (void)
{
  for (int fd = 3; fd < 1024; fd++) {
    int type = 0, listening = 0;
    socklen_t l = sizeof type;
    if (getsockopt (fd, SOL_SOCKET, SO_TYPE, &type, &l) != 0 || type != SOCK_STREAM)
      continue;
    l = sizeof listening;
    if (getsockopt (fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l) != 0 || !listening)
      continue;
    struct sockaddr_storage ss;
    l = sizeof ss;
    if (getsockname (fd, (struct sockaddr *) &ss, &l) != 0
        || (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
      continue;
    int one = 1;
    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
}

static int
drop_privileges (const char *user)
{
  struct passwd *pw = getpwnam (user);
  if (!pw) {
    log_line (LOG_ERR, "no such user: %s", user);
    return EX_NOUSER;
  }
  if (initgroups (pw->pw_name, pw->pw_gid) != 0 || setgid (pw->pw_gid) != 0
      || setuid (pw->pw_uid) != 0) {
    log_line (LOG_ERR, "cannot become %s: %s", user, g_strerror (errno));
    return EX_NOPERM;
  }
  return 0;
}

/* main without the globals' release, so that every return leaves nothing
 * behind (LeakSanitizer runs over the daemon in the tests) */
static int
run (int argc, char **argv)
{
  g_autofree char *opt_config = NULL, *opt_socket = NULL, *opt_user = NULL, *opt_pidfile = NULL;
  g_auto (GStrv) opt_set = NULL;
  g_auto (GStrv) opt_allow = NULL;
  gboolean opt_daemon = FALSE, opt_version = FALSE, opt_no_nodelay = FALSE;
  GOptionEntry entries[] = {
    { "socket", 'p', 0, G_OPTION_ARG_STRING, &opt_socket,
      "Socket: unix:PATH, inet:PORT@ADDRESS, inet6:PORT@ADDRESS (default: milter_socket)", "SPEC" },
    { "config", 'c', 0, G_OPTION_ARG_FILENAME, &opt_config,
      "Configuration file (default " EB_CONFIG_DEFAULT_PATH "; absent is fine)", "FILE" },
    { "set", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &opt_set, "Override a configuration key", "KEY=VALUE" },
    { "allow-network", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_allow, "Add a CIDR block to allow_networks", "CIDR" },
    { "user", 'u', 0, G_OPTION_ARG_STRING, &opt_user, "Run as USER once the socket is bound", "USER" },
    { "daemon", 'd', 0, G_OPTION_ARG_NONE, &opt_daemon, "Detach and log to syslog (default: foreground, stderr)", NULL },
    { "pidfile", 'P', 0, G_OPTION_ARG_FILENAME, &opt_pidfile, "With -d: write the PID here", "FILE" },
    { "version", 'V', 0, G_OPTION_ARG_NONE, &opt_version, "Show the version", NULL },
    { "no-nodelay", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &opt_no_nodelay,
      "Leave Nagle's algorithm on for TCP (to measure what TCP_NODELAY saves)", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("");
  g_option_context_set_summary (ctx, "Resolve message/external-body references in mail, as a milter for Postfix and Sendmail.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    fprintf (stderr, "extbody-milter: %s (try --help)\n", error->message);
    return EX_USAGE;
  }
  if (opt_version) {
    printf ("extbody-milter %s\n", EXTBODY_VERSION);
    return 0;
  }
  if (argc > 1) {
    fprintf (stderr, "extbody-milter: unexpected argument \"%s\" (try --help)\n", argv[1]);
    return EX_USAGE;
  }

  config = eb_config_new ();
  const char *path = opt_config ? opt_config : EB_CONFIG_DEFAULT_PATH;
  if (!eb_config_load_file (config, path, opt_config == NULL, &error)) {
    fprintf (stderr, "extbody-milter: %s\n", error->message);
    return EX_CONFIG;
  }
  for (guint i = 0; opt_set && opt_set[i]; i++) {
    const char *eq = strchr (opt_set[i], '=');
    g_autofree char *key = eq ? g_strstrip (g_strndup (opt_set[i], (gsize) (eq - opt_set[i]))) : NULL;
    if (!eq || !eb_config_set (config, key, eq + 1, &error)) {
      fprintf (stderr, "extbody-milter: -o %s: %s\n", opt_set[i], error ? error->message : "expected KEY=VALUE");
      return EX_CONFIG;
    }
  }
  if (opt_allow) {
    g_autofree char *joined = g_strjoinv (", ", opt_allow);
    g_autofree char *all = *config->allow_networks
      ? g_strconcat (config->allow_networks, ", ", joined, NULL) : g_strdup (joined);
    eb_config_set (config, "allow_networks", all, NULL);
  }

  g_mime_init ();
  curl_global_init (CURL_GLOBAL_DEFAULT);   /* before any thread */
  if (config->fetch) {
    fetcher = eb_fetcher_new (config, &error);
    if (!fetcher) {
      fprintf (stderr, "extbody-milter: %s\n", error->message);
      return EX_CONFIG;
    }
  }

  const char *sock = opt_socket ? opt_socket : config->milter_socket;
  if (smfi_setconn ((char *) sock) != MI_SUCCESS || smfi_register (desc) != MI_SUCCESS) {
    fprintf (stderr, "extbody-milter: cannot use socket %s\n", sock);
    return EX_USAGE;
  }
  const char *upath = unix_socket_path (sock);
  struct stat st;
  if (upath && lstat (upath, &st) == 0 && !S_ISSOCK (st.st_mode)) {
    fprintf (stderr, "extbody-milter: %s exists and is not a socket (left alone)\n", upath);
    return EX_UNAVAILABLE;
  }
  if (upath && unix_socket_in_use (upath)) {
    fprintf (stderr, "extbody-milter: socket %s is in use by a running daemon\n", upath);
    return EX_UNAVAILABLE;
  }
  /* the MTA's user must be able to connect: a socket made under umask 022 is
   * refused by Postfix. Access is controlled by the socket's directory. */
  mode_t old = umask (0);
  int r = smfi_opensocket (TRUE);   /* removes a stale unix socket first */
  umask (old);
  if (r != MI_SUCCESS) {
    fprintf (stderr, "extbody-milter: cannot open socket %s: %s\n", sock, g_strerror (errno));
    return EX_UNAVAILABLE;
  }
  if (!opt_no_nodelay)
    set_nodelay_on_listener ();
  if (opt_user) {
    struct passwd *pw = getpwnam (opt_user);
    if (pw && upath && chown (upath, pw->pw_uid, pw->pw_gid) != 0)
      fprintf (stderr, "extbody-milter: cannot chown %s: %s\n", upath, g_strerror (errno));
    int s = drop_privileges (opt_user);
    if (s)
      return s;
  }
  if (opt_daemon) {
    if (daemon (0, 0) != 0) {
      fprintf (stderr, "extbody-milter: cannot detach: %s\n", g_strerror (errno));
      return EX_OSERR;
    }
    to_stderr = FALSE;
    openlog ("extbody-milter", LOG_PID, LOG_MAIL);
    if (opt_pidfile) {
      g_autofree char *pid = g_strdup_printf ("%ld\n", (long) getpid ());
      if (!g_file_set_contents (opt_pidfile, pid, -1, &error))
        log_line (LOG_ERR, "cannot write %s: %s", opt_pidfile, error->message);
    }
  }
  log_line (LOG_INFO, "listening on %s%s", sock, config->fetch ? "" : " (fetch = off)");
  signal (SIGPIPE, SIG_IGN);
  r = smfi_main ();
  return r == MI_SUCCESS ? 0 : EX_SOFTWARE;
}

int
main (int argc, char **argv)
{
  int status = run (argc, argv);
  g_clear_pointer (&fetcher, eb_fetcher_free);
  g_clear_pointer (&config, eb_config_free);
  return status;
}
