/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody - resolve message/external-body references in mail.
 *
 *   extbody rewrite [-c FILE] [-o KEY=VALUE] [--report] [FILE]
 *   extbody externalize [-c FILE] [-o KEY=VALUE] [--fallback] [--report] [FILE]
 *   extbody inspect [-c FILE] [-o KEY=VALUE] [--json] FILE...
 *   extbody data-url [--json] [--type] URL|-
 *   extbody config [-c FILE] [-o KEY=VALUE] [--defaults]
 *
 * Exit codes follow sysexits(3); see extbody(1).
 */
#include <gio/gio.h>
#include <gio/gunixoutputstream.h>
#include <json-glib/json-glib.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

/* the public API only, as any program linking libextbody sees it */
#include <extbody/extbody.h>
/* extbodyd's keys: they are in the file the command reads and checks */
#include "daemon-keys.h"
#include "extbody-cli-keys.h"

static const char *prog = "extbody";

static void G_GNUC_PRINTF (1, 2)
die_line (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  fprintf (stderr, "%s: %s\n", prog, msg);
}

/* All of @path ("-" or NULL: standard input). A regular file is mapped, not
 * copied; anything else is read to its end. Errors: G_FILE_ERROR. */
static GBytes *
read_all (const char *path, GError **error)
{
  int fd = 0;
  gboolean is_stdin = !path || strcmp (path, "-") == 0;
  const char *name = is_stdin ? "standard input" : path;
  if (!is_stdin) {
    /* O_NONBLOCK: a FIFO named here must not wait for a writer forever */
    fd = open (path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      int e = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot open %s: %s",
                   path, g_strerror (e));
      return NULL;
    }
    /* only a regular file, or an open descriptor named as a file (/dev/stdin,
     * /dev/fd/N: a shell's pipe or process substitution); never a FIFO, a
     * socket or a device, which would wait or read forever */
    struct stat fst;
    gboolean descriptor = g_str_has_prefix (path, "/dev/fd/") || g_str_has_prefix (path, "/proc/self/fd/")
                          || strcmp (path, "/dev/stdin") == 0;
    if (fstat (fd, &fst) == 0 && !S_ISREG (fst.st_mode) && !S_ISDIR (fst.st_mode)
        && !(descriptor && S_ISFIFO (fst.st_mode))) {
      const char *what = S_ISFIFO (fst.st_mode) ? "a FIFO" : S_ISSOCK (fst.st_mode) ? "a socket"
                         : S_ISCHR (fst.st_mode) ? "a character device"
                         : S_ISBLK (fst.st_mode) ? "a block device" : "not a file";
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: %s, not a regular file (give a file, or the message on standard input)",
                   path, what);
      close (fd);
      return NULL;
    }
    fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) & ~O_NONBLOCK);
  }
  struct stat st;
  if (fstat (fd, &st) == 0 && S_ISREG (st.st_mode) && st.st_size > 0) {
    g_autoptr (GError) local = NULL;
    GMappedFile *mf = g_mapped_file_new_from_fd (fd, FALSE, &local);
    if (mf) {
      GBytes *b = g_mapped_file_get_bytes (mf);
      g_mapped_file_unref (mf);
      if (!is_stdin)
        close (fd);
      return b;
    }
  }
  GByteArray *a = g_byte_array_sized_new (65536);
  for (;;) {
    if (a->len > G_MAXUINT - 65536) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOSPC, "%s: input larger than 4 GiB", name);
      g_byte_array_unref (a);
      if (!is_stdin)
        close (fd);
      return NULL;
    }
    gsize room = MAX ((gsize) 65536, (gsize) a->len);
    room = MIN (room, (gsize) (G_MAXUINT - a->len));
    guint old = a->len;
    g_byte_array_set_size (a, old + (guint) room);
    ssize_t n = read (fd, a->data + old, room);
    int e = errno;
    g_byte_array_set_size (a, old + (guint) MAX (n, 0));
    if (n < 0 && e == EINTR)
      continue;
    if (n < 0) {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot read %s: %s", name,
                   g_strerror (e));
      g_byte_array_unref (a);
      if (!is_stdin)
        close (fd);
      return NULL;
    }
    if (n == 0)
      break;
  }
  if (!is_stdin)
    close (fd);
  return g_byte_array_free_to_bytes (a);
}

static int
exit_for_read_error (const GError *e)
{
  if (e->domain == G_FILE_ERROR
      && (e->code == G_FILE_ERROR_NOENT || e->code == G_FILE_ERROR_ACCES
          || e->code == G_FILE_ERROR_ISDIR || e->code == G_FILE_ERROR_NOTDIR
          || e->code == G_FILE_ERROR_PERM || e->code == G_FILE_ERROR_INVAL))
    return EX_NOINPUT;
  return EX_IOERR;
}

/* The one message at @path ("-" or NULL: standard input), not empty; else
 * NULL, *@status set and one line said (a directory: how a Maildir is
 * @done_to_maildir). */
static GBytes *
read_message (const char *path, const char *done_to_maildir, int *status)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) input = read_all (path, &error);
  if (!input) {
    gboolean dir = g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_ISDIR);
    die_line ("%s%s%s%s", error->message, dir ? " (a Maildir is " : "", dir ? done_to_maildir : "",
              dir ? " with --maildir DIR)" : "");
    *status = exit_for_read_error (error);
    return NULL;
  }
  if (g_bytes_get_size (input) == 0) {
    die_line ("%s: empty input, not a message", path ? path : "standard input");
    *status = EX_DATAERR;
    return NULL;
  }
  return g_steal_pointer (&input);
}

/* Options every subcommand that reads mail shares. */
static char *opt_config = NULL;
static char **opt_set = NULL;
static char **opt_allow_network = NULL;
static gboolean opt_no_precheck = FALSE;
static gboolean opt_fetch = FALSE;

static GOptionEntry config_entries[] = {
  { "config", 'c', 0, G_OPTION_ARG_FILENAME, &opt_config,
    "Configuration file (default " EB_CONFIG_DEFAULT_PATH "; absent is fine)", "FILE" },
  { "set", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &opt_set,
    "Override one configuration key (repeatable)", "KEY=VALUE" },
  { "allow-network", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_allow_network,
    "Add a CIDR block to allow_networks (repeatable)", "CIDR" },
  { "fetch", 0, 0, G_OPTION_ARG_NONE, &opt_fetch,
    "Fetch http, https, ftp (and, as allow_schemes permits, gopher) references (fetch = on; off by default: a fetch tells the URL's owner)", NULL },
  { NULL }
};

static EbConfig *
load_config (int *status)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  g_autoptr (GError) error = NULL;
  const char *path = opt_config ? opt_config : EB_CONFIG_DEFAULT_PATH;
  if (!eb_config_load_file (config, path, opt_config == NULL, &error)) {
    die_line ("%s", error->message);
    *status = EX_CONFIG;
    return NULL;
  }
  for (guint i = 0; opt_set && opt_set[i]; i++) {
    if (!eb_config_apply_option (config, opt_set[i], &error)) {
      die_line ("%s", error->message);
      *status = g_error_matches (error, EB_ERROR, EB_ERROR_SYNTAX) ? EX_USAGE : EX_CONFIG;
      return NULL;
    }
  }
  if (!eb_config_add_networks (config, (const char *const *) opt_allow_network, &error)) {
    die_line ("%s", error->message);
    *status = EX_CONFIG;
    return NULL;
  }
  if (opt_fetch && !eb_config_set (config, "fetch", "on", &error)) {
    die_line ("%s", error->message);
    *status = EX_CONFIG;
    return NULL;
  }
  return g_steal_pointer (&config);
}

/* The fetcher for @config, or NULL when fetching is off; *status set on error. */
static EbFetcher *
make_fetcher (const EbConfig *config, int *status)
{
  const CliSettings keys = extbody_cli_keys_of (config);
  if (!keys.fetch)
    return NULL;
  g_autoptr (GError) error = NULL;
  EbFetcher *f = eb_fetcher_new (config, &error);
  if (!f) {
    die_line ("%s", error->message);
    *status = EX_CONFIG;
  }
  return f;
}

static GOptionContext *
new_context (const char *params, const char *summary, GOptionEntry *entries, gboolean with_config)
{
  GOptionContext *ctx = g_option_context_new (params);
  g_option_context_set_summary (ctx, summary);
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (with_config) {
    GOptionGroup *g = g_option_group_new ("config", "Configuration options:",
                                          "Show configuration options", NULL, NULL);
    g_option_group_add_entries (g, config_entries);
    g_option_context_add_group (ctx, g);
  }
  return ctx;
}

static gboolean
parse_options (GOptionContext *ctx, int *argc, char ***argv, int *status)
{
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, argc, argv, &error)) {
    die_line ("%s (try --help)", error->message);
    *status = EX_USAGE;
    return FALSE;
  }
  return TRUE;
}


/* ---- mailboxes ----------------------------------------------------------- */

/* The progress bar (only when standard error is a terminal). */
static void
draw_progress (guint done, guint total, guint64 bytes, guint64 total_bytes, gboolean final,
               gpointer data)
{
  const gint64 *t0 = data;
  double secs = (double) (g_get_monotonic_time () - *t0) / G_USEC_PER_SEC;
  double rate = secs > 0 ? done / secs : 0;
  double left = rate > 0 ? (total - done) / rate : 0;
  int width = 24, fill = total ? (int) ((guint64) width * done / total) : width;
  fprintf (stderr, "\r[%.*s%*s] %u/%u messages, %.1f/%.1f MB, %.0f msg/s, %.0f s left ",
           fill, "########################", width - fill, "", done, total, bytes / 1e6,
           total_bytes / 1e6, rate, left);
  if (final)
    fputc ('\n', stderr);
  fflush (stderr);
}

static void
print_notice (const char *line, gpointer data)
{
  die_line ("%s", line);
}

/* The sysexits(3) status of a failed batch run. */
static int
exit_for_batch_error (const GError *e)
{
  if (!e || e->domain != EB_BATCH_ERROR)
    return EX_SOFTWARE;
  switch ((EbBatchError) e->code) {
  case EB_BATCH_ERROR_NOINPUT:   return EX_NOINPUT;
  case EB_BATCH_ERROR_DATAERR:   return EX_DATAERR;
  case EB_BATCH_ERROR_CANTCREAT: return EX_CANTCREAT;
  case EB_BATCH_ERROR_IOERR:     return EX_IOERR;
  case EB_BATCH_ERROR_TEMPFAIL:  return EX_TEMPFAIL;
  }
  return EX_SOFTWARE;
}

typedef enum { BOX_NONE, BOX_MBOX, BOX_MAILDIR } BoxKind;

/* What a command works on: one message (FILE in @argv, or standard input) or
 * the mailbox named by --mbox / --maildir, and whether the options given go
 * with it. Returns: 0, or EX_USAGE after saying why. */
static int
pick_source (int argc, char **argv, const char *mbox, const char *maildir, gboolean filter,
             const char *backup, gboolean recursive, gboolean dry_run, const char **path,
             BoxKind *kind)
{
  *path = argc == 2 ? argv[1] : NULL;
  *kind = BOX_NONE;
  if (mbox || maildir) {
    if (*path || (mbox && maildir)) {
      die_line ("give one FILE, --mbox FILE or --maildir DIR (try --help)");
      return EX_USAGE;
    }
    *kind = mbox ? BOX_MBOX : BOX_MAILDIR;
    *path = mbox ? mbox : maildir;
  }
  if (filter && *kind != BOX_NONE) {
    die_line ("--filter goes with one message, not a mailbox (try --help)");
    return EX_USAGE;
  }
  if (*kind == BOX_NONE && (backup || recursive || dry_run)) {
    die_line ("--%s goes with --mbox or --maildir (try --help)",
              backup ? "backup" : recursive ? "recursive" : "dry-run");
    return EX_USAGE;
  }
  if (backup && *kind != BOX_MBOX) {
    die_line ("--backup goes with an mbox");
    return EX_USAGE;
  }
  return 0;
}

/* rewrite (or, with @dry_run, only plan) every message of a mailbox. */

/* mailbox_metrics_file: the run's counters added to those of every earlier
 * run, for node_exporter's textfile collector (never metrics_file, the
 * daemon's: its counters would go back). Not set: nothing, no line. */
static void
write_mailbox_metrics (const EbConfig *config, EbBatch *batch)
{
  const CliSettings keys = extbody_cli_keys_of (config);
  const char *metrics = keys.mailbox_metrics_file;
  if (!metrics || !*metrics)
    return;
  g_autoptr (GError) merr = NULL;
  guint lock_timeout = (guint) keys.lock_timeout;
  if (!eb_metrics_add_to_prometheus (eb_batch_get_stats (batch), metrics, "extbody", lock_timeout, &merr))
    die_line ("cannot write mailbox_metrics_file: %s", merr->message);
}

static int
rewrite_mailbox (const char *path, BoxKind kind, const EbConfig *config, EbFetcher *fetcher,
                 gboolean recursive, gboolean dry_run, const char *backup, guint jobs)
{
  g_autoptr (EbBatch) batch = eb_batch_new (config, fetcher,
                                            dry_run ? EB_BATCH_DRY_RUN : EB_BATCH_REWRITE);
  gint64 t0 = g_get_monotonic_time ();
  eb_batch_set_jobs (batch, jobs);
  eb_batch_set_recursive (batch, recursive);
  eb_batch_set_backup (batch, backup);
  /* --no-precheck: every message through the whole parse, none skipped */
  eb_batch_set_flags (batch, opt_no_precheck ? EB_REWRITE_NO_PRECHECK : EB_REWRITE_DEFAULT);
  eb_batch_set_notice_func (batch, print_notice, NULL);
  if (isatty (STDERR_FILENO))
    eb_batch_set_progress_func (batch, draw_progress, &t0);
  g_autoptr (GError) error = NULL;
  gboolean ok = kind == BOX_MBOX ? eb_batch_run_mbox (batch, path, &error)
                                 : eb_batch_run_maildir (batch, path, &error);
  if (eb_batch_get_complete (batch)) {
    g_autofree char *summary = eb_stats_format_summary (eb_batch_get_stats (batch), dry_run);
    die_line ("%s", summary);
  }
  write_mailbox_metrics (config, batch);
  return ok ? 0 : exit_for_batch_error (error);
}

static void
on_stop_signal (int sig)
{
  eb_cleanup_run ();
  signal (sig, SIG_DFL);
  raise (sig);
}

/* ---- rewrite ---------------------------------------------------------- */

static int
cmd_rewrite (int argc, char **argv)
{
  gboolean report = FALSE, recursive = FALSE, dry_run = FALSE, filter = FALSE;
  g_autofree char *mbox = NULL, *maildir = NULL, *backup = NULL;
  g_autofree char *log = NULL, *queue_id = NULL;
  int jobs = (int) g_get_num_processors ();
  GOptionEntry entries[] = {
    { "report", 0, 0, G_OPTION_ARG_NONE, &report,
      "Write one line per reference to standard error", NULL },
    { "mbox", 0, 0, G_OPTION_ARG_FILENAME, &mbox, "Rewrite the mbox FILE in place (locked, crash-safe)", "FILE" },
    { "maildir", 0, 0, G_OPTION_ARG_FILENAME, &maildir, "Rewrite the changed messages of the Maildir DIR", "DIR" },
    { "recursive", 'r', 0, G_OPTION_ARG_NONE, &recursive, "With a Maildir, its Maildir++ subfolders too", NULL },
    { "dry-run", 'n', 0, G_OPTION_ARG_NONE, &dry_run, "Report what would change; change nothing", NULL },
    { "backup", 0, 0, G_OPTION_ARG_STRING, &backup, "Keep the original mbox as FILE+SUFFIX", "SUFFIX" },
    { "jobs", 'j', 0, G_OPTION_ARG_INT, &jobs, "Messages processed at once (default: the number of cores)", "N" },
    { "filter", 0, 0, G_OPTION_ARG_NONE, &filter,
      "The message is mail in transit (extbody-pipe): with strip_trace_fields, remove the X-Extbody and X-Extbody-Resolved fields of its header; when something is resolved, add an X-Extbody field as the milter does", NULL },
    { "log", 0, 0, G_OPTION_ARG_STRING, &log,
      "Log the message and each reference as the milter does, to syslog (facility mail) or stderr (the journal when standard error is the journal)", "syslog|stderr" },
    { "queue-id", 0, 0, G_OPTION_ARG_STRING, &queue_id,
      "With --log: the MTA's queue id of the message, for the log", "ID" },
    { "no-precheck", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &opt_no_precheck,
      "Always do the MIME parse (for testing)", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = new_context ("[FILE]",
      "Resolve the external-body references of one message read from FILE (or standard\n"
      "input) and write the message to standard output. A message with nothing to\n"
      "resolve is written byte for byte as it was read; FILE itself is never changed,\n"
      "even when it starts with a \"From \" line. A mailbox is rewritten in place only\n"
      "when named with --mbox FILE or --maildir DIR.", entries, TRUE);
  int status = 0;
  if (!parse_options (ctx, &argc, &argv, &status))
    return status;
  if (argc > 2) {
    die_line ("rewrite takes at most one FILE (try --help)");
    return EX_USAGE;
  }
  g_autoptr (EbConfig) config = load_config (&status);
  if (!config)
    return status;
  g_autoptr (EbFetcher) fetcher = make_fetcher (config, &status);
  if (status)
    return status;

  const char *path = NULL;
  BoxKind kind = BOX_NONE;
  if (pick_source (argc, argv, mbox, maildir, filter, backup, recursive, dry_run, &path, &kind))
    return EX_USAGE;
  EbLogTarget log_target = EB_LOG_STDERR;
  if (log && !eb_log_parse_target (log, &log_target)) {
    die_line ("--log takes syslog or stderr, not \"%s\" (try --help)", log);
    return EX_USAGE;
  }
  if ((log || queue_id) && kind != BOX_NONE) {
    die_line ("--%s goes with one message, not a mailbox (try --help)", log ? "log" : "queue-id");
    return EX_USAGE;
  }
  if (log)
    eb_log_init (prog, log_target);
  if (kind != BOX_NONE) {
    g_autofree char *bk = backup ? g_strconcat (path, backup, NULL) : NULL;
    int rc = rewrite_mailbox (path, kind, config, fetcher, recursive, dry_run, bk,
                              (guint) CLAMP (jobs, 1, 256));
    return rc;
  }
  g_autoptr (GError) error = NULL;
  int read_status = 0;
  g_autoptr (GBytes) input = read_message (path, "rewritten", &read_status);
  if (!input)
    return read_status;
  gsize in_len = 0;
  const char *in_buf = g_bytes_get_data (input, &in_len);

  g_autoptr (GOutputStream) out = g_unix_output_stream_new (STDOUT_FILENO, FALSE);
  g_autoptr (EbPlan) result = NULL;
  EbRewriteFlags flags = eb_profile_rewrite_flags (filter ? EB_PROFILE_TRANSIT : EB_PROFILE_AS_GIVEN, config);
  if (opt_no_precheck)
    flags |= EB_REWRITE_NO_PRECHECK;
  if (!eb_rewrite (in_buf, in_len, config, fetcher, flags, out, &result, &error)) {
    die_line ("cannot write the message: %s", error->message);
    return EX_IOERR;
  }
  if (log) {
    g_autofree char *mid = eb_plan_get_message_id (result);
    eb_log_message (queue_id, mid, result);
  }
  if (report) {
    EbReason reason = eb_plan_get_reason (result);
    if (reason != EB_REASON_RESOLVED)
      fprintf (stderr, "%s: message left unchanged: %s: %s\n", prog, eb_reason_token (reason),
               eb_reason_text (reason));
    guint n_refs = eb_plan_get_n_refs (result);
    for (guint i = 0; i < n_refs; i++) {
      g_autofree char *line = eb_inspect_report_line (result, i);
      fprintf (stderr, "%s: %s\n", prog, line);
    }
    guint n_removed = eb_plan_get_n_removed (result);
    if (n_removed)
      fprintf (stderr, "%s: removed %u X-Extbody trace field%s that came with the message\n", prog,
               n_removed, n_removed == 1 ? "" : "s");
  }
  return 0;
}

/* ---- externalize ------------------------------------------------------- */

/* A part the store could not take: one line on standard error, always. */
static void
print_store_failures (const char *where, const EbPlan *result)
{
  guint n = eb_plan_get_n_refs (result);
  for (guint i = 0; i < n; i++) {
    if (eb_plan_get_ref_reason (result, i) != EB_REASON_STORE_FAILED)
      continue;
    g_autofree char *line = eb_externalize_report_line (result, i);
    die_line ("%s%s%s", where ? where : "", where ? " " : "", line);
  }
}

typedef struct {
  const char *box;
  gboolean    report;
} ExternalizeRun;

static void
externalize_message (guint number, const char *source, gint64 offset, const char *mid,
                     const EbPlan *result, gpointer data)
{
  ExternalizeRun *run = data;
  guint n = eb_plan_get_n_refs (result);
  g_autofree char *where = g_strdup_printf ("%s #%u", run->box, number);
  if (!run->report) {
    print_store_failures (where, result);
    return;
  }
  for (guint i = 0; i < n; i++) {
    g_autofree char *line = eb_externalize_report_line (result, i);
    die_line ("%s %s", where, line);
  }
}

/* "N messages scanned, N parts to externalize, N externalized, N messages
 * changed; left: TOKEN N, ..." */
static char *
externalize_summary (EbStats *stats, gboolean dry_run)
{
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "%" G_GUINT64_FORMAT " messages scanned, %" G_GUINT64_FORMAT
                          " candidate parts, %" G_GUINT64_FORMAT " externalized, %" G_GUINT64_FORMAT
                          " messages %s",
                          eb_stats_get_messages (stats), eb_stats_get_parts (stats),
                          eb_stats_get_externalized (stats), eb_stats_get_changed (stats),
                          dry_run ? "would change" : "changed");
  const char *sep = "; left: ";
  for (guint r = 1; r < EB_REASON_N; r++) {
    guint64 n = eb_stats_get_left (stats, (EbReason) r);
    if (!n)
      continue;
    g_string_append_printf (s, "%s%s %" G_GUINT64_FORMAT, sep, eb_reason_token ((EbReason) r), n);
    sep = ", ";
  }
  return g_string_free (s, FALSE);
}

static int
cmd_externalize (int argc, char **argv)
{
  gboolean report = FALSE, recursive = FALSE, dry_run = FALSE, filter = FALSE, fallback = FALSE;
  g_autofree char *mbox = NULL, *maildir = NULL, *backup = NULL;
  int jobs = (int) g_get_num_processors ();
  GOptionEntry entries[] = {
    { "fallback", 0, 0, G_OPTION_ARG_NONE, &fallback,
      "Write each reference inside a multipart/alternative after a short text part with the link (externalize_fallback = on)", NULL },
    { "report", 0, 0, G_OPTION_ARG_NONE, &report,
      "Write one line per candidate part to standard error", NULL },
    { "mbox", 0, 0, G_OPTION_ARG_FILENAME, &mbox, "Externalize the parts of the mbox FILE in place (locked, crash-safe)", "FILE" },
    { "maildir", 0, 0, G_OPTION_ARG_FILENAME, &maildir, "Externalize the parts of the messages of the Maildir DIR", "DIR" },
    { "recursive", 'r', 0, G_OPTION_ARG_NONE, &recursive, "With a Maildir, its Maildir++ subfolders too", NULL },
    { "dry-run", 'n', 0, G_OPTION_ARG_NONE, &dry_run, "Report what would change; store and change nothing", NULL },
    { "backup", 0, 0, G_OPTION_ARG_STRING, &backup, "Keep the original mbox as FILE+SUFFIX", "SUFFIX" },
    { "jobs", 'j', 0, G_OPTION_ARG_INT, &jobs, "Messages processed at once (default: the number of cores)", "N" },
    { "filter", 0, 0, G_OPTION_ARG_NONE, &filter,
      "The message is mail in transit: when something is externalized, add an X-Extbody field as the milter does", NULL },
    { "no-precheck", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &opt_no_precheck,
      "In a mailbox, parse every message, even one too small to hold a part to take out (for testing)", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = new_context ("[FILE]",
      "Take the large parts out of one message read from FILE (or standard input):\n"
      "store each in externalize_store and replace it by a message/external-body\n"
      "reference (RFC 2017 access-type=URL); write the message to standard output. A\n"
      "message with nothing to take out is written byte for byte as it was read; a\n"
      "part the store cannot take stays as it was (one line on standard error). A\n"
      "mailbox is changed in place only when named with --mbox FILE or --maildir DIR.",
      entries, TRUE);
  int status = 0;
  if (!parse_options (ctx, &argc, &argv, &status))
    return status;
  if (argc > 2) {
    die_line ("externalize takes at most one FILE (try --help)");
    return EX_USAGE;
  }
  const char *path = NULL;
  BoxKind kind = BOX_NONE;
  if (pick_source (argc, argv, mbox, maildir, filter, backup, recursive, dry_run, &path, &kind))
    return EX_USAGE;
  g_autoptr (EbConfig) config = load_config (&status);
  if (!config)
    return status;
  g_autoptr (GError) error = NULL;
  g_autoptr (EbStore) store = eb_store_new (config, &error);
  if (!store) {
    die_line ("%s", error->message);
    return EX_CONFIG;
  }
  EbExternalizeFlags flags = fallback ? EB_EXTERNALIZE_FALLBACK : EB_EXTERNALIZE_DEFAULT;

  if (kind != BOX_NONE) {
    g_autoptr (EbBatch) batch = eb_batch_new (config, NULL,
                                              dry_run ? EB_BATCH_DRY_RUN : EB_BATCH_REWRITE);
    gint64 t0 = g_get_monotonic_time ();
    eb_batch_set_store (batch, store, flags);
    eb_batch_set_flags (batch, opt_no_precheck ? EB_REWRITE_NO_PRECHECK : EB_REWRITE_DEFAULT);
    eb_batch_set_jobs (batch, (guint) CLAMP (jobs, 1, 256));
    eb_batch_set_recursive (batch, recursive);
    g_autofree char *bk = backup ? g_strconcat (path, backup, NULL) : NULL;
    eb_batch_set_backup (batch, bk);
    eb_batch_set_notice_func (batch, print_notice, NULL);
    ExternalizeRun run = { path, report };
    eb_batch_set_message_func (batch, externalize_message, &run);
    if (isatty (STDERR_FILENO))
      eb_batch_set_progress_func (batch, draw_progress, &t0);
    gboolean ok = kind == BOX_MBOX ? eb_batch_run_mbox (batch, path, &error)
                                   : eb_batch_run_maildir (batch, path, &error);
    if (eb_batch_get_complete (batch)) {
      g_autofree char *summary = externalize_summary (eb_batch_get_stats (batch), dry_run);
      die_line ("%s", summary);
    }
    write_mailbox_metrics (config, batch);
    return ok ? 0 : exit_for_batch_error (error);
  }

  int read_status = 0;
  g_autoptr (GBytes) input = read_message (path, "externalized", &read_status);
  if (!input)
    return read_status;
  gsize in_len = 0;
  const char *in_buf = g_bytes_get_data (input, &in_len);
  flags |= eb_profile_externalize_flags (filter ? EB_PROFILE_TRANSIT : EB_PROFILE_AS_GIVEN, config);
  g_autoptr (EbPlan) result = eb_externalize_plan (in_buf, in_len, config, store, flags);
  g_autoptr (GOutputStream) out = g_unix_output_stream_new (STDOUT_FILENO, FALSE);
  if (!eb_plan_write (result, out, &error)) {
    die_line ("cannot write the message: %s", error->message);
    return EX_IOERR;
  }
  EbReason reason = eb_plan_get_reason (result);
  if (report && reason != EB_REASON_RESOLVED)
    fprintf (stderr, "%s: message left unchanged: %s: %s\n", prog, eb_reason_token (reason),
             eb_reason_text (reason));
  if (report) {
    guint n = eb_plan_get_n_refs (result);
    for (guint i = 0; i < n; i++) {
      g_autofree char *line = eb_externalize_report_line (result, i);
      die_line ("%s", line);
    }
  } else {
    print_store_failures (NULL, result);
  }
  return 0;
}

/* ---- inspect ---------------------------------------------------------- */

typedef struct {
  const char *box;
  gboolean    json;
  EbTable    *table;
  guint       n_refs;
} InspectRun;

/* One message of a mailbox: its rows, a JSON line per reference. */
static void
inspect_message (guint number, const char *source, gint64 offset, const char *mid,
                 const EbPlan *result, gpointer data)
{
  InspectRun *run = data;
  guint n_refs = eb_plan_get_n_refs (result);
  if (!n_refs)
    return;
  /* in the table, a mailbox's message by its number and Message-ID */
  g_autofree char *label = g_strdup_printf ("%s #%u %s", run->box, number,
                                            mid ? mid : "(no Message-ID)");
  for (guint i = 0; i < n_refs; i++) {
    run->n_refs++;
    if (run->json) {
      g_autofree char *line = eb_inspect_json (source, offset, mid, result, i);
      printf ("%s\n", line);
    } else {
      eb_table_add (run->table, label, result, i);
    }
  }
}

/* Every message of the mailbox @path (an mbox: a regular file, not through a
 * symbolic link; a Maildir walked as rewrite walks it). */
static guint
inspect_mailbox (EbBatch *batch, const char *path, BoxKind kind, gboolean json, EbTable *table,
                 int *status)
{
  InspectRun run = { path, json, table, 0 };
  eb_batch_set_message_func (batch, inspect_message, &run);
  g_autoptr (GError) error = NULL;
  if (!(kind == BOX_MBOX ? eb_batch_run_mbox (batch, path, &error)
                         : eb_batch_run_maildir (batch, path, &error)))
    *status = MAX (*status, exit_for_batch_error (error));
  eb_batch_set_message_func (batch, NULL, NULL);
  return run.n_refs;
}

static int
cmd_inspect (int argc, char **argv)
{
  gboolean json = FALSE, recursive = FALSE;
  char **mboxes = NULL, **maildirs = NULL;
  int jobs = (int) g_get_num_processors ();
  GOptionEntry entries[] = {
    { "mbox", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &mboxes, "Every message of the mbox FILE (repeatable)", "FILE" },
    { "maildir", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &maildirs, "Every message of the Maildir DIR (repeatable)", "DIR" },
    { "recursive", 'r', 0, G_OPTION_ARG_NONE, &recursive, "With a Maildir, its Maildir++ subfolders too", NULL },
    { "jobs", 'j', 0, G_OPTION_ARG_INT, &jobs, "Messages of a mailbox looked at at once (default: the number of cores)", "N" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json,
      "One JSON object per reference per line (fields in extbody(1))", NULL },
    { "no-precheck", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &opt_no_precheck,
      "Always do the MIME parse (for testing)", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = new_context ("[FILE...]",
      "List every message/external-body reference of each message FILE (\"-\": standard\n"
      "input; each FILE is one message), of every mbox named with --mbox and Maildir\n"
      "named with --maildir, of every access-type, and what rewrite would do with it.\n"
      "Nothing is changed.", entries, TRUE);
  int status = 0;
  if (!parse_options (ctx, &argc, &argv, &status))
    return status;
  g_auto (GStrv) mb = mboxes, md = maildirs;
  if (argc < 2 && !mb && !md) {
    die_line ("inspect needs a FILE, --mbox FILE or --maildir DIR (try --help)");
    return EX_USAGE;
  }
  g_autoptr (EbConfig) config = load_config (&status);
  if (!config)
    return status;
  const CliSettings keys = extbody_cli_keys_of (config);
  /* --fetch: really fetch, to tell what rewrite would do */
  EbRewriteFlags flags = opt_no_precheck ? EB_REWRITE_NO_PRECHECK : EB_REWRITE_DEFAULT;
  if (!opt_fetch)
    flags |= EB_REWRITE_NO_FETCH;

  g_autoptr (EbFetcher) fetcher = make_fetcher (config, &status);
  if (status)
    return status;
  gboolean several = argc > 2 || mb || md
                     || (argc == 2 && g_file_test (argv[1], G_FILE_TEST_IS_DIR));
  g_autoptr (EbTable) table = eb_table_new (several);
  g_autoptr (EbBatch) batch = eb_batch_new (config, fetcher, EB_BATCH_INSPECT);
  eb_batch_set_jobs (batch, (guint) CLAMP (jobs, 1, 256));
  eb_batch_set_recursive (batch, recursive);
  eb_batch_set_flags (batch, flags);
  eb_batch_set_notice_func (batch, print_notice, NULL);
  guint n_refs = 0, n_unread = 0;
  for (guint i = 0; mb && mb[i]; i++)
    n_refs += inspect_mailbox (batch, mb[i], BOX_MBOX, json, table, &status);
  for (guint i = 0; md && md[i]; i++)
    n_refs += inspect_mailbox (batch, md[i], BOX_MAILDIR, json, table, &status);
  for (int a = 1; a < argc; a++) {
    g_autoptr (GError) error = NULL;
    /* a directory is no message: a Maildir named without --maildir is read as
     * one (nothing is changed, and no content is sniffed) */
    if (strcmp (argv[a], "-") != 0 && g_file_test (argv[a], G_FILE_TEST_IS_DIR)
        && eb_maildir_sniff (argv[a])) {
      n_refs += inspect_mailbox (batch, argv[a], BOX_MAILDIR, json, table, &status);
      continue;
    }
    if (strcmp (argv[a], "-") != 0 && g_file_test (argv[a], G_FILE_TEST_IS_DIR)) {
      /* a directory that is not a Maildir we can read: say what is missing or
       * not permitted */
      g_autofree char *problem = eb_maildir_problem (argv[a]);
      die_line ("%s", problem ? problem : "not a Maildir");
      status = MAX (status, EX_NOINPUT);
      continue;
    }
    g_autoptr (GBytes) input = read_all (argv[a], &error);
    if (!input) {
      die_line ("%s%s", error->message,
                g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_ISDIR)
                  ? " (a Maildir is inspected with --maildir DIR)" : "");
      status = MAX (status, exit_for_read_error (error));
      continue;
    }
    gsize in_len = 0;
    const char *in_buf = g_bytes_get_data (input, &in_len);
    g_autoptr (EbPlan) result = eb_rewrite_plan (in_buf ? in_buf : "", in_len, config,
                                                          fetcher, flags);
    EbReason reason = eb_plan_get_reason (result);
    if (reason != EB_REASON_RESOLVED
        && (eb_plan_get_parsed (result) || reason == EB_REASON_MESSAGE_TOO_LARGE))
      fprintf (stderr, "%s: %s: message left unchanged: %s\n", prog, argv[a],
               eb_reason_text (reason));
    if (reason == EB_REASON_MESSAGE_TOO_LARGE)
      n_unread++;   /* its references, if any, were not looked for */
    guint n_refs_msg = eb_plan_get_n_refs (result);
    for (guint i = 0; i < n_refs_msg; i++) {
      n_refs++;
      if (json) {
        g_autofree char *line = eb_inspect_json (argv[a], -1, NULL, result, i);
        printf ("%s\n", line);
      } else {
        eb_table_add (table, argv[a], result, i);
      }
    }
  }
  if (!json) {
    if (n_refs) {
      g_autofree char *text = eb_table_finish (table);
      fputs (text, stdout);
    } else if (!n_unread) {
      printf ("no external-body references\n");
    }
    /* "no references" would be a claim about a message never read */
    if (n_unread)
      printf ("%s%u message%s not inspected: larger than max_message_size (%" G_GUINT64_FORMAT
              " bytes; -o max_message_size=SIZE to look)\n", n_refs ? "" : "no external-body references found; ",
              n_unread, n_unread == 1 ? "" : "s", keys.max_message_size);
  }
  if (fflush (stdout) != 0) {
    die_line ("cannot write: %s", g_strerror (errno));
    return EX_IOERR;
  }
  return status;
}

/* ---- data-url --------------------------------------------------------- */

static int
cmd_data_url (int argc, char **argv)
{
  gboolean json = FALSE, type = FALSE;
  GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json,
      "Print {\"mime_type\": ..., \"body_base64\": ...}", NULL },
    { "type", 0, 0, G_OPTION_ARG_NONE, &type, "Print the serialized MIME type instead of the body", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = new_context ("URL",
      "Run the WHATWG data: URL processor on URL (\"-\": read it from standard input,\n"
      "UTF-8, to end of file) and write the body to standard output.", entries, FALSE);
  int status = 0;
  if (!parse_options (ctx, &argc, &argv, &status))
    return status;
  if (argc != 2) {
    die_line ("data-url takes exactly one URL (try --help)");
    return EX_USAGE;
  }
  g_autoptr (GBytes) from_stdin = NULL;
  const char *url = argv[1];
  gsize url_len = strlen (url);
  if (strcmp (url, "-") == 0) {
    g_autoptr (GError) error = NULL;
    from_stdin = read_all (NULL, &error);
    if (!from_stdin) {
      die_line ("%s", error->message);
      return EX_IOERR;
    }
    url = g_bytes_get_data (from_stdin, &url_len);
    if (!eb_mimetype_utf8_validate_with_nul (url, url_len)) {
      die_line ("standard input is not UTF-8");
      return EX_DATAERR;
    }
  }
  g_autoptr (GError) error = NULL;
  g_autoptr (EbDataUrl) du = eb_data_url_process (url ? url : "", (gssize) url_len, &error);
  if (!du) {
    die_line ("%s", error->message);
    return EX_DATAERR;
  }
  g_autofree char *ser = eb_mime_type_serialize (eb_data_url_get_mime_type (du));
  gsize blen = 0;
  const guint8 *body = g_bytes_get_data (eb_data_url_get_body (du), &blen);
  if (json) {
    g_autofree char *b64 = g_base64_encode (body, blen);
    g_autoptr (JsonBuilder) b = json_builder_new ();
    json_builder_begin_object (b);
    json_builder_set_member_name (b, "mime_type");
    json_builder_add_string_value (b, ser);
    json_builder_set_member_name (b, "body_base64");
    json_builder_add_string_value (b, b64);
    json_builder_end_object (b);
    g_autoptr (JsonGenerator) gen = json_generator_new ();
    g_autoptr (JsonNode) root = json_builder_get_root (b);
    json_generator_set_root (gen, root);
    g_autofree char *text = json_generator_to_data (gen, NULL);
    printf ("%s\n", text);
  } else if (type) {
    printf ("%s\n", ser);
  } else if (blen && fwrite (body, 1, blen, stdout) != blen) {
    die_line ("cannot write: %s", g_strerror (errno));
    return EX_IOERR;
  }
  if (fflush (stdout) != 0) {
    die_line ("cannot write: %s", g_strerror (errno));
    return EX_IOERR;
  }
  return 0;
}

/* ---- config ----------------------------------------------------------- */

static int
cmd_config (int argc, char **argv)
{
  gboolean defaults = FALSE, check = FALSE;
  GOptionEntry entries[] = {
    { "defaults", 'd', 0, G_OPTION_ARG_NONE, &defaults, "Print the built-in defaults", NULL },
    { "check", 'n', 0, G_OPTION_ARG_NONE, &check,
      "Only check the configuration, as the runtime reads it: print nothing when it is valid, one line naming the key and exit 78 when not", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = new_context ("",
      "Check the configuration and print every key with the value in force.", entries, TRUE);
  int status = 0;
  if (!parse_options (ctx, &argc, &argv, &status))
    return status;
  if (argc != 1) {
    die_line ("config takes no arguments (try --help)");
    return EX_USAGE;
  }
  g_autoptr (EbConfig) config = defaults ? eb_config_new () : load_config (&status);
  if (!config)
    return status;
  /* what the runtime builds from it, whether fetching is on or not */
  g_autoptr (GError) error = NULL;
  g_autoptr (EbFetcher) fetcher = eb_fetcher_new (config, &error);
  if (!fetcher) {
    die_line ("%s", error->message);
    return EX_CONFIG;
  }
  if (check)
    return 0;
  g_autofree char *text = eb_config_dump (config);
  fputs (text, stdout);
  return 0;
}

/* ---- main ------------------------------------------------------------- */

static void
usage (FILE *to)
{
  fprintf (to,
    "Usage: extbody COMMAND [OPTION...] [ARG...]\n"
    "\n"
    "Resolve message/external-body references (RFC 2046, RFC 2017 access-type=URL)\n"
    "into ordinary MIME parts.\n"
    "\n"
    "Commands:\n"
    "  rewrite [FILE]          resolve the references of one message (FILE or stdin,\n"
    "                          never changed); write it to standard output\n"
    "  rewrite --mbox FILE     rewrite an mbox in place (locked, crash-safe)\n"
    "  rewrite --maildir DIR   rewrite the changed messages of a Maildir\n"
    "  externalize [FILE]      store the large parts of one message (externalize_store)\n"
    "                          and replace them by references; write it to standard\n"
    "                          output (--mbox FILE, --maildir DIR: in place)\n"
    "  inspect [FILE...] [--mbox FILE] [--maildir DIR]\n"
    "                          list every external-body reference and what rewrite\n"
    "                          would do with it; change nothing\n"
    "  data-url URL|-          run the WHATWG data: URL processor on URL\n"
    "  config [--check]        check the configuration and print the values in force\n"
    "\n"
    "Options of rewrite, externalize, inspect and config:\n"
    "  -c, --config=FILE       configuration file (default " EB_CONFIG_DEFAULT_PATH ")\n"
    "  -o, --set=KEY=VALUE     override one configuration key (repeatable)\n"
    "  --allow-network=CIDR    add a block to allow_networks (repeatable)\n"
    "  --fetch                 fetch http, https and ftp references (off by default:\n"
    "                          a fetch tells the URL's owner the mail was processed)\n"
    "\n"
    "Options:\n"
    "  -h, --help              show this help (COMMAND --help: the command's options)\n"
    "  -V, --version           show the version\n"
    "\n"
    "Lists in values are separated by commas, white space or both.\n"
    "\n"
    "Exit status: 0 done; 64 usage; 65 data error; 66 no input; 74 I/O error;\n"
    "75 temporary failure; 78 configuration error. See extbody(1).\n");
}

int
main (int argc, char **argv)
{
  if (argc < 2) {
    usage (stderr);
    return EX_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp (cmd, "-h") || !strcmp (cmd, "--help") || !strcmp (cmd, "help")) {
    usage (stdout);
    return 0;
  }
  if (!strcmp (cmd, "-V") || !strcmp (cmd, "--version")) {
    g_autofree char *libs = eb_get_library_versions ();
    printf ("extbody %s (%s)\n", eb_get_version_string (), libs);
    return 0;
  }

  /* a write past RLIMIT_FSIZE must fail with EFBIG, not kill the process */
  signal (SIGXFSZ, SIG_IGN);
  /* stopped by a signal: no half-written mailbox or dot-lock stays behind */
  struct sigaction sa = { .sa_handler = on_stop_signal };
  sigemptyset (&sa.sa_mask);
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGHUP, &sa, NULL);
  signal (SIGPIPE, SIG_IGN);
  eb_init ();
  /* extbodyd's keys beside the library's: the file is the daemon's too, and
   * `extbody config` checks and lists all of it, as postconf does */
  g_autoptr (GError) keys_error = NULL;
  if (!daemon_keys_register (&keys_error)) {
    fprintf (stderr, "%s: %s\n", prog, keys_error->message);
    return EX_SOFTWARE;
  }
  /* the library's diagnostics (and GMime's) as "extbody: ..." on standard
   * error, or in the journal; rewrite --log can send them to syslog */
  eb_log_init (prog, EB_LOG_STDERR);
  int status;
  /* Each command sees argv from its own name on, so --help speaks of it. */
  g_autofree char *name = g_strdup_printf ("%s %s", prog, cmd);
  char **sub = argv + 1;
  int subc = argc - 1;
  g_set_prgname (name);
  if (!strcmp (cmd, "rewrite"))
    status = cmd_rewrite (subc, sub);
  else if (!strcmp (cmd, "externalize"))
    status = cmd_externalize (subc, sub);
  else if (!strcmp (cmd, "inspect"))
    status = cmd_inspect (subc, sub);
  else if (!strcmp (cmd, "data-url"))
    status = cmd_data_url (subc, sub);
  else if (!strcmp (cmd, "config"))
    status = cmd_config (subc, sub);
  else {
    die_line ("unknown command \"%s\" (try --help)", cmd);
    status = EX_USAGE;
  }
  g_strfreev (opt_set);
  g_strfreev (opt_allow_network);
  g_free (opt_config);
  eb_shutdown ();
  return status;
}
