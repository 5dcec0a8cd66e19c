/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody-smtpd-filter - an OpenSMTPD filter (smtpd-filters(7), protocols
 * 0.5 to 0.7: OpenSMTPD 6.8 on Debian 12, 7.6 on Debian 13) that hands each message received over SMTP to extbodyd's HTTP
 * listener (POST /rewrite, as extbodyc does) and gives smtpd the answer:
 * one long-lived process that smtpd starts (proc-exec), one poll(2) loop,
 * the sessions' messages side by side. Each message is kept whole in memory
 * up to -x bytes (over it, it passes as it came, line by line); at its final
 * "." it goes to the daemon, and whatever fails there - no daemon, an error
 * status, a garbled answer, past the -t deadline - it is given back exactly
 * as it came, whole: never half a message. See extbody-smtpd-filter(8).
 *
 * C11, GLib for its containers; the protocol line parser (smtpd-proto.c) and
 * the answer parser (filters/client/extbodyc-http.c, shared with extbodyc)
 * are libc only, and fuzzed. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glib.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "extbodyc-http.h"
#include "smtpd-proto.h"

#define EBS_DEFAULT_SOCKET "unix:/run/extbody/http.sock"
/* above the daemon's message_deadline (120 s), below smtpd's session
 * timeout (300 s): the daemon gives up on a reference first */
#define EBS_DEFAULT_TIMEOUT 150.0
/* the daemon's max_message_size default: set them together */
#define EBS_DEFAULT_MAX_SIZE (64ULL * 1024 * 1024)
/* an answer is refused past this many times -x, plus 1 MiB (resolved data
 * is larger than its reference, base64 4/3 of it) */
#define EBS_ANSWER_FACTOR 4
#define EBS_ANSWER_SLACK (1024 * 1024)
/* smtpd 6.8 reads a filter's line into a LINE_MAX (2048) buffer and cuts
 * what is longer (seen: a 3000-byte line echoed by a filter arrives as its
 * first 1997 bytes): "filter-dataline|" (16), two 16-digit ids, three '|'
 * and the line must fit in 2047, so an answer with a longer line (dot-stuffed)
 * is not used and the message goes on as it came */
#define EBS_MAX_OUT_LINE (2047 - 16 - 16 - 16 - 2)
/* a line from smtpd longer than this cannot be one: the protocol is lost */
#define EBS_MAX_IN_LINE (1024 * 1024)
#define EBS_IO_CHUNK (64 * 1024)

#define EX_OK 0
#define EX_USAGE 64
#define EX_SOFTWARE 70
#define EX_IOERR 74

typedef struct {
  const char *socket;
  double      timeout;
  guint64     max_size;
  gboolean    syslog;
  gboolean    verbose;
} Options;

static Options opt = { EBS_DEFAULT_SOCKET, EBS_DEFAULT_TIMEOUT, EBS_DEFAULT_MAX_SIZE, FALSE, FALSE };

/* One session's message, from its first data line to its final ".". */
typedef struct {
  char     *session;     /* smtpd's session id, as written */
  char     *token;       /* the token of its data lines, as written */
  GString  *raw;         /* the message's lines as they came (dot-stuffed), each ended by '\n' */
  GString  *message;     /* the message for the daemon: lines unstuffed, CRLF */
  gboolean  passing;     /* over -x: each line goes back as it comes */
  /* the exchange with the daemon, once the "." came: fd >= 0 */
  int       fd;
  gboolean  connected;
  GString  *request;     /* head and message */
  gsize     sent;
  gboolean  send_failed; /* the daemon stopped reading: an answer may still come */
  GString  *answer;
  gint64    deadline;    /* monotonic microseconds */
  gint64    started;
} Session;

static GHashTable *sessions;   /* session id -> Session */
static GString *out;           /* what smtpd has still to be given */
static gboolean registered;    /* config|ready came and was answered */
static guint64 n_messages, n_fallbacks;

/* ---- logging ------------------------------------------------------------ */

static void G_GNUC_PRINTF (1, 2)
say (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *text = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  if (opt.syslog)
    syslog (LOG_MAIL | LOG_INFO, "%s", text);
  else
    fprintf (stderr, "extbody-smtpd-filter: %s\n", text);
}

/* ---- the daemon's socket ------------------------------------------------ */

/* ---- sessions ----------------------------------------------------------- */

static Session *
session_new (EbsSlice id, EbsSlice token)
{
  Session *s = g_new0 (Session, 1);
  s->session = g_strndup (id.p, id.len);
  s->token = g_strndup (token.p, token.len);
  s->raw = g_string_new (NULL);
  s->message = g_string_new (NULL);
  s->fd = -1;
  return s;
}

static void
exchange_close (Session *s)
{
  if (s->fd >= 0)
    close (s->fd);
  s->fd = -1;
  if (s->request)
    g_string_free (s->request, TRUE);
  if (s->answer)
    g_string_free (s->answer, TRUE);
  s->request = s->answer = NULL;
}

static void
session_free (gpointer p)
{
  Session *s = p;
  exchange_close (s);
  g_string_free (s->raw, TRUE);
  g_string_free (s->message, TRUE);
  g_free (s->session);
  g_free (s->token);
  g_free (s);
}

/* One filter-dataline for @s: @line (@len bytes, already as the protocol
 * wants it, dot-stuffed). */
static void
emit (const Session *s, const char *line, size_t len)
{
  g_string_append (out, "filter-dataline|");
  g_string_append (out, s->session);
  g_string_append_c (out, '|');
  g_string_append (out, s->token);
  g_string_append_c (out, '|');
  g_string_append_len (out, line, (gssize) len);
  g_string_append_c (out, '\n');
}

/* The lines kept so far, as they came. */
static void
emit_raw (Session *s)
{
  const char *p = s->raw->str, *end = p + s->raw->len;
  while (p < end) {
    const char *nl = memchr (p, '\n', (size_t) (end - p));
    emit (s, p, (size_t) (nl - p));
    p = nl + 1;
  }
}

/* The message as it came, every line and the final ".". */
static void
emit_as_it_came (Session *s)
{
  emit_raw (s);
  emit (s, ".", 1);
}

/* The message is answered: its state goes, ready for the session's next one. */
static void
session_done (Session *s)
{
  g_hash_table_remove (sessions, s->session);
}

/* ---- the answer --------------------------------------------------------- */

/* Whether @body (@len bytes) can go back line by line: no line longer than
 * EBS_MAX_OUT_LINE once dot-stuffed, none with a NUL. */
static const char *
check_lines (const char *body, size_t len)
{
  if (memchr (body, '\0', len))
    return "a NUL in the answer";
  const char *p = body, *end = body + len;
  while (p < end) {
    const char *nl = memchr (p, '\n', (size_t) (end - p));
    size_t n = (size_t) ((nl ? nl : end) - p);
    if (nl && n > 0 && p[n - 1] == '\r')
      n--;
    if (n > 0 && p[0] == '.')
      n++;
    if (n > EBS_MAX_OUT_LINE)
      return "a line of the answer too long for smtpd's filter protocol";
    p = nl ? nl + 1 : end;
  }
  return NULL;
}

/* The answer's body, line by line (LF or CRLF), dot-stuffed, then ".". */
static void
emit_body (Session *s, const char *body, size_t len)
{
  g_autoptr (GString) line = g_string_new (NULL);
  const char *p = body, *end = body + len;
  while (p < end) {
    const char *nl = memchr (p, '\n', (size_t) (end - p));
    size_t n = (size_t) ((nl ? nl : end) - p);
    if (nl && n > 0 && p[n - 1] == '\r')
      n--;
    g_string_truncate (line, 0);
    if (n > 0 && p[0] == '.')
      g_string_append_c (line, '.');
    g_string_append_len (line, p, (gssize) n);
    emit (s, line->str, line->len);
    p = nl ? nl + 1 : end;
  }
  emit (s, ".", 1);
}

/* The exchange ended: the answer whole and checked, or the message as it came. */
static void
finish (Session *s, const char *why)
{
  double took = (double) (g_get_monotonic_time () - s->started) / 1e6;
  EbcHttpAnswer a;
  const char *body = NULL;
  size_t body_len = 0;
  int changed = 0;
  if (!why) {
    gsize max_answer = opt.max_size * EBS_ANSWER_FACTOR + EBS_ANSWER_SLACK;
    EbcHttpState st = ebc_http_parse (s->answer->str, s->answer->len, s->fd < 0, max_answer, &a);
    if (st != EBC_HTTP_COMPLETE)
      why = st == EBC_HTTP_INVALID ? a.reason : "the daemon closed before its answer was whole";
    else if (a.status != 200)
      why = "the daemon answered an error status";
    else if (s->sent < s->request->len)
      why = "the daemon answered before it had the whole message";
    else if (a.changed < 0)
      why = "an answer with no Extbody-Changed field (not the extbody daemon?)";
    else {
      body_len = ebc_http_body (s->answer->str, &a, s->answer->str);
      body = s->answer->str;
      changed = a.changed;
      if (changed && body_len == 0)
        why = "an empty answer";
      else if (changed)
        why = check_lines (body, body_len);
    }
  }
  n_messages++;
  if (why) {
    n_fallbacks++;
    say ("session=%s status=passed-as-it-came bytes=%zu seconds=%.3f reason=\"%s\"", s->session,
         s->message->len, took, why);
    emit_as_it_came (s);
  } else if (!changed) {
    if (opt.verbose)
      say ("session=%s status=unchanged bytes=%zu seconds=%.3f", s->session, s->message->len, took);
    emit_as_it_came (s);
  } else {
    if (opt.verbose)
      say ("session=%s status=rewritten bytes=%zu out=%zu references=%lld resolved=%lld seconds=%.3f", s->session,
           s->message->len, body_len, a.references, a.resolved, took);
    emit_body (s, body, body_len);
  }
  session_done (s);
}

/* The message whole (its "." came): to the daemon. */
static void
start_exchange (Session *s)
{
  s->started = g_get_monotonic_time ();
  s->deadline = opt.timeout > 0 ? s->started + (gint64) (opt.timeout * 1e6) : G_MAXINT64;
  struct sockaddr_storage ss;
  socklen_t sl;
  const char *why = NULL;
  if (ebc_socket_parse (opt.socket, &ss, &sl, &why) < 0) {
    finish (s, why);
    return;
  }
  s->fd = socket (ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd < 0) {
    finish (s, "cannot make a socket");
    return;
  }
  s->request = g_string_sized_new (s->message->len + 256);
  g_string_printf (s->request,
                   "POST /rewrite HTTP/1.1\r\nHost: localhost\r\nContent-Length: %zu\r\n"
                   "Content-Type: message/rfc822\r\nExtbody-Queue-Id: %s\r\nConnection: close\r\n\r\n",
                   s->message->len, s->session);
  g_string_append_len (s->request, s->message->str, (gssize) s->message->len);
  s->answer = g_string_new (NULL);
  if (connect (s->fd, (struct sockaddr *) &ss, sl) == 0)
    s->connected = TRUE;
  else if (errno != EINPROGRESS && errno != EINTR) {
    g_autofree char *w = g_strdup_printf ("cannot connect to %s: %s", opt.socket, g_strerror (errno));
    exchange_close (s);
    finish (s, w);
  }
}

/* Progress on @s's socket (@revents). */
static void
exchange_io (Session *s, short revents)
{
  if (!s->connected) {
    int err = 0;
    socklen_t el = sizeof err;
    if (getsockopt (s->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
      err = errno;
    if (err) {
      g_autofree char *w = g_strdup_printf ("cannot connect to %s: %s", opt.socket, g_strerror (err));
      exchange_close (s);
      finish (s, w);
      return;
    }
    s->connected = TRUE;
  }
  if ((revents & POLLOUT) && !s->send_failed && s->sent < s->request->len) {
    ssize_t n = send (s->fd, s->request->str + s->sent, s->request->len - s->sent, MSG_NOSIGNAL);
    if (n > 0)
      s->sent += (gsize) n;
    else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      /* the daemon may have answered (an error) before reading it all */
      shutdown (s->fd, SHUT_WR);
      s->send_failed = TRUE;
    }
  }
  if (revents & (POLLIN | POLLHUP | POLLERR)) {
    char buf[EBS_IO_CHUNK];
    ssize_t n = recv (s->fd, buf, sizeof buf, 0);
    if (n > 0) {
      g_string_append_len (s->answer, buf, n);
      gsize max_answer = opt.max_size * EBS_ANSWER_FACTOR + EBS_ANSWER_SLACK;
      EbcHttpAnswer a;
      EbcHttpState st = ebc_http_parse (s->answer->str, s->answer->len, 0, max_answer, &a);
      if (st == EBC_HTTP_INVALID) {
        close (s->fd);
        s->fd = -1;
        finish (s, a.reason);
      } else if (st == EBC_HTTP_COMPLETE) {
        finish (s, NULL);
      }
      return;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      if (n < 0) {
        g_autofree char *w = g_strdup_printf ("%s: %s", opt.socket, g_strerror (errno));
        finish (s, w);
        return;
      }
      close (s->fd);
      s->fd = -1;
      finish (s, NULL);
    }
  }
}

/* ---- smtpd's lines ------------------------------------------------------ */

static void
on_data_line (const EbsLine *l)
{
  g_autofree char *id = g_strndup (l->session.p, l->session.len);
  Session *s = g_hash_table_lookup (sessions, id);
  if (!s) {
    s = session_new (l->session, l->token);
    g_hash_table_insert (sessions, s->session, s);
  }
  if (s->fd >= 0 || s->request) {
    /* a line for a message already with the daemon: smtpd never sends one;
     * given back at once rather than lost */
    say ("session=%s a data line while its message is with the daemon: given back as it came", s->session);
    emit (s, l->data.p, l->data.len);
    return;
  }
  int end = l->data.len == 1 && l->data.p[0] == '.';
  if (s->passing) {
    emit (s, l->data.p, l->data.len);
    if (end)
      session_done (s);
    return;
  }
  if (end) {
    start_exchange (s);
    return;
  }
  const char *p = l->data.p;
  size_t n = l->data.len;
  if (n > 0 && p[0] == '.') {
    p++;
    n--;
  }
  if (s->message->len + n + 2 > opt.max_size) {
    say ("session=%s status=passed-as-it-came reason=\"a message over %" G_GUINT64_FORMAT " bytes (-x)\"",
         s->session, opt.max_size);
    n_messages++;
    n_fallbacks++;
    s->passing = TRUE;
    emit_raw (s);
    g_string_truncate (s->raw, 0);
    g_string_truncate (s->message, 0);
    emit (s, l->data.p, l->data.len);
    return;
  }
  g_string_append_len (s->raw, l->data.p, (gssize) l->data.len);
  g_string_append_c (s->raw, '\n');
  g_string_append_len (s->message, p, (gssize) n);
  g_string_append (s->message, "\r\n");
}

/* The filter protocols whose data-line and link-disconnect lines (the only
 * ones registered) this filter reads, and its answer, filter-dataline, are
 * the same: 0.5 (OpenSMTPD 6.6), 0.6 (6.7, 6.8), 0.7 (7.4 and later: only
 * link-auth's fields changed places). smtpd announces its version from 7.5 on
 * (config|protocol|0.7); 6.8 announces none and speaks 0.6. */
static const char *const known_protocols[] = { "0.5", "0.6", "0.7", NULL };

/* config|protocol|V: a version this filter does not know gets one line, and
 * its lines are read as 0.7's (they say their version each: a data-line that
 * is no longer one is refused line by line, as any line not of the protocol) */
static void
on_protocol (const char *v)
{
  for (guint i = 0; known_protocols[i]; i++)
    if (!strcmp (v, known_protocols[i])) {
      if (opt.verbose)
        say ("smtpd speaks filter protocol %s", v);
      return;
    }
  say ("smtpd speaks filter protocol %s, which this filter does not know (it knows 0.5 to 0.7): "
       "reading its lines as 0.7's", v);
}

static void
on_config (const EbsLine *l)
{
  if (l->key.len == strlen ("protocol") && !memcmp (l->key.p, "protocol", l->key.len)) {
    g_autofree char *v = g_strndup (l->value.p, MIN (l->value.len, 32));
    on_protocol (v);
    return;
  }
  if (l->key.len == strlen ("smtp-session-timeout") && !memcmp (l->key.p, "smtp-session-timeout", l->key.len)) {
    g_autofree char *v = g_strndup (l->value.p, l->value.len);
    double t = g_ascii_strtod (v, NULL);
    if (t > 20 && (opt.timeout <= 0 || opt.timeout > t - 10)) {
      say ("-t %.0f is not below smtpd's session timeout (%.0f s): %.0f s used", opt.timeout, t, t - 10);
      opt.timeout = t - 10;
    }
  }
}

/* One line from smtpd (no line break). Returns FALSE when the protocol is lost. */
static gboolean
on_line (const char *line, size_t len)
{
  EbsLine l;
  switch (ebs_parse_line (line, len, &l)) {
  case EBS_LINE_CONFIG:
    on_config (&l);
    return TRUE;
  case EBS_LINE_CONFIG_READY:
    if (!registered)
      g_string_append (out, "register|filter|smtp-in|data-line\n"
                            "register|report|smtp-in|link-disconnect\n"
                            "register|ready\n");
    registered = TRUE;
    return TRUE;
  case EBS_LINE_DATA:
    on_data_line (&l);
    return TRUE;
  case EBS_LINE_DISCONNECT: {
    g_autofree char *id = g_strndup (l.session.p, l.session.len);
    g_hash_table_remove (sessions, id);
    return TRUE;
  }
  case EBS_LINE_OTHER:
    return TRUE;
  case EBS_LINE_INVALID:
  default:
    say ("a line from smtpd that is not of its filter protocol (%s): %.*s", l.reason, (int) MIN (len, 80), line);
    return TRUE;
  }
}

/* ---- the loop ----------------------------------------------------------- */

static void
set_nonblocking (int fd)
{
  int fl = fcntl (fd, F_GETFL);
  if (fl >= 0)
    fcntl (fd, F_SETFL, fl | O_NONBLOCK);
}

/* Write what can be written of @out. FALSE: standard output is gone. */
static gboolean
flush_out (void)
{
  while (out->len > 0) {
    ssize_t n = write (STDOUT_FILENO, out->str, out->len);
    if (n > 0) {
      g_string_erase (out, 0, n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      return TRUE;
    return FALSE;
  }
  return TRUE;
}

static int
run (void)
{
  set_nonblocking (STDIN_FILENO);
  set_nonblocking (STDOUT_FILENO);
  g_autoptr (GString) in = g_string_new (NULL);
  gboolean in_eof = FALSE;
  g_autoptr (GArray) fds = g_array_new (FALSE, FALSE, sizeof (struct pollfd));
  g_autoptr (GPtrArray) owners = g_ptr_array_new ();
  for (;;) {
    if (!flush_out ()) {
      say ("cannot write to smtpd: %s", g_strerror (errno));
      return EX_IOERR;
    }
    if (in_eof && out->len == 0)
      return EX_OK;
    if (in_eof) {
      /* smtpd is gone: nobody reads what is left */
      return EX_OK;
    }
    g_array_set_size (fds, 0);
    g_ptr_array_set_size (owners, 0);
    struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
    g_array_append_val (fds, p);
    g_ptr_array_add (owners, NULL);
    struct pollfd o = { STDOUT_FILENO, out->len ? POLLOUT : 0, 0 };
    g_array_append_val (fds, o);
    g_ptr_array_add (owners, NULL);
    gint64 now = g_get_monotonic_time ();
    gint64 next = G_MAXINT64;
    GHashTableIter it;
    gpointer k, v;
    g_autoptr (GPtrArray) late = g_ptr_array_new ();
    g_hash_table_iter_init (&it, sessions);
    while (g_hash_table_iter_next (&it, &k, &v)) {
      Session *s = v;
      if (s->fd < 0)
        continue;
      if (now >= s->deadline) {
        g_ptr_array_add (late, s);
        continue;
      }
      next = MIN (next, s->deadline);
      gboolean to_send = !s->connected || (!s->send_failed && s->sent < s->request->len);
      struct pollfd q = { s->fd, (short) (POLLIN | (to_send ? POLLOUT : 0)), 0 };
      g_array_append_val (fds, q);
      g_ptr_array_add (owners, s);
    }
    for (guint i = 0; i < late->len; i++) {
      Session *s = g_ptr_array_index (late, i);
      g_autofree char *w = g_strdup_printf ("no whole answer within %.0f s (-t)", opt.timeout);
      exchange_close (s);
      finish (s, w);
    }
    if (late->len)
      continue;
    int wait_ms = next == G_MAXINT64 ? -1 : (int) MIN ((next - now) / 1000 + 1, 60000);
    int r = poll ((struct pollfd *) fds->data, fds->len, wait_ms);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      say ("poll: %s", g_strerror (errno));
      return EX_SOFTWARE;
    }
    struct pollfd *pf = (struct pollfd *) fds->data;
    /* the daemon's sockets before smtpd's lines, which may free a session
     * (link-disconnect); each session has one socket, and finish() frees
     * only its own */
    for (guint i = 2; i < fds->len; i++)
      if (pf[i].revents)
        exchange_io (g_ptr_array_index (owners, i), pf[i].revents);
    if (pf[0].revents) {
      char buf[EBS_IO_CHUNK];
      ssize_t n = read (STDIN_FILENO, buf, sizeof buf);
      if (n == 0)
        in_eof = TRUE;
      else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        say ("cannot read from smtpd: %s", g_strerror (errno));
        return EX_IOERR;
      } else if (n > 0) {
        g_string_append_len (in, buf, n);
        gsize start = 0;
        for (;;) {
          char *nl = memchr (in->str + start, '\n', in->len - start);
          if (!nl)
            break;
          on_line (in->str + start, (size_t) (nl - (in->str + start)));
          start = (gsize) (nl - in->str) + 1;
        }
        g_string_erase (in, 0, (gssize) start);
        if (in->len > EBS_MAX_IN_LINE) {
          say ("a line from smtpd over %d bytes: the protocol is lost", EBS_MAX_IN_LINE);
          return EX_SOFTWARE;
        }
      }
    }
  }
}

/* ---- options ------------------------------------------------------------ */

static void
usage (FILE *to)
{
  fprintf (to,
    "Usage: extbody-smtpd-filter [-s SOCKET] [-t SECONDS] [-x BYTES] [-l stderr|syslog] [-v]\n"
    "An OpenSMTPD filter (smtpd.conf: filter \"extbody\" proc-exec \"...\"): each message\n"
    "through the extbody daemon's HTTP listener; the message as it came when it fails.\n"
    "  -s, --socket SOCKET    unix:PATH, inet:PORT@HOST or PATH (" EBS_DEFAULT_SOCKET ")\n"
    "  -t, --timeout SECONDS  the daemon's whole answer to one message (150; 0: none)\n"
    "  -x, --max-size BYTES   larger messages pass as they came (64M; K, M, G suffixes)\n"
    "  -l, --log WHERE        stderr (default: smtpd's log) or syslog (facility mail)\n"
    "  -v, --verbose          one line about every message, not only the failures\n"
    "  -h, --help             this text\n"
    "      --version          the version\n");
}

static int
parse_size (const char *s, guint64 *v)
{
  char *end;
  errno = 0;
  guint64 n = g_ascii_strtoull (s, &end, 10);
  if (end == s || errno)
    return -1;
  guint64 mul = 1;
  if (*end == 'K' || *end == 'k')
    mul = 1024, end++;
  else if (*end == 'M' || *end == 'm')
    mul = 1024 * 1024, end++;
  else if (*end == 'G' || *end == 'g')
    mul = 1024ULL * 1024 * 1024, end++;
  if (*end || n == 0 || n > G_MAXUINT64 / mul / EBS_ANSWER_FACTOR)
    return -1;
  *v = n * mul;
  return 0;
}

int
main (int argc, char **argv)
{
  static const struct option longs[] = {
    { "socket", required_argument, NULL, 's' },
    { "timeout", required_argument, NULL, 't' },
    { "max-size", required_argument, NULL, 'x' },
    { "log", required_argument, NULL, 'l' },
    { "verbose", no_argument, NULL, 'v' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
  };
  int c;
  while ((c = getopt_long (argc, argv, "s:t:x:l:vh", longs, NULL)) != -1) {
    switch (c) {
    case 's': {
      struct sockaddr_storage ss;
      socklen_t sl;
      const char *why;
      if (ebc_socket_parse (optarg, &ss, &sl, &why) < 0) {
        fprintf (stderr, "extbody-smtpd-filter: -s %s: %s\n", optarg, why);
        return EX_USAGE;
      }
      opt.socket = optarg;
      break;
    }
    case 't': {
      char *end;
      opt.timeout = g_ascii_strtod (optarg, &end);
      if (end == optarg || *end || opt.timeout < 0 || opt.timeout > 86400) {
        fprintf (stderr, "extbody-smtpd-filter: -t %s: seconds from 0 to 86400\n", optarg);
        return EX_USAGE;
      }
      break;
    }
    case 'x':
      if (parse_size (optarg, &opt.max_size) < 0) {
        fprintf (stderr, "extbody-smtpd-filter: -x %s: a size in bytes (K, M, G suffixes)\n", optarg);
        return EX_USAGE;
      }
      break;
    case 'l':
      if (!strcmp (optarg, "syslog"))
        opt.syslog = TRUE;
      else if (strcmp (optarg, "stderr") != 0) {
        fprintf (stderr, "extbody-smtpd-filter: -l %s: stderr or syslog\n", optarg);
        return EX_USAGE;
      }
      break;
    case 'v':
      opt.verbose = TRUE;
      break;
    case 'h':
      usage (stdout);
      return EX_OK;
    case 'V':
      printf ("extbody-smtpd-filter %s\n", EXTBODY_VERSION);
      return EX_OK;
    default:
      usage (stderr);
      return EX_USAGE;
    }
  }
  if (optind < argc) {
    usage (stderr);
    return EX_USAGE;
  }
  signal (SIGPIPE, SIG_IGN);
  if (opt.syslog)
    openlog ("extbody-smtpd-filter", LOG_PID, LOG_MAIL);
  sessions = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, session_free);
  out = g_string_new (NULL);
  int rc = run ();
  if (opt.verbose || rc != EX_OK)
    say ("exit %d: %" G_GUINT64_FORMAT " messages, %" G_GUINT64_FORMAT " passed as they came", rc, n_messages,
         n_fallbacks);
  g_hash_table_destroy (sessions);
  g_string_free (out, TRUE);
  return rc;
}
