/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbodyc.c - the client of the resident daemon's HTTP listener, as spamc
 * is to spamd: the message on standard input goes to the daemon, the
 * daemon's answer to standard output. libc only (no GLib, GMime, curl), so
 * that it starts in about a millisecond where `extbody rewrite --filter`
 * loads 49 shared libraries per message: Exim's transport_filter, Postfix's
 * pipe(8), procmail, maildrop, scripts.
 *
 * Whatever goes wrong between the two (no daemon, an error status, garbage,
 * a timeout, a connection broken mid-answer), the message comes out exactly
 * as it came in (or, with --on-error tempfail, nothing comes out and the exit
 * status is 75), with one line on standard error: the answer is received
 * whole and checked (extbodyc-http.c) before its first byte is written, so
 * half a message is never written. With -e COMMAND... (spamc's -e, the last
 * option) the result goes to COMMAND's standard input instead: it is kept in
 * a memory file and COMMAND is executed in extbodyc's place only once the
 * result is whole, so Postfix's pipe(8) re-injects with no shell and no
 * temporary file; on any failure COMMAND is not run and the exit is 75.
 * Every wait is a poll () against one
 * deadline (-t), the connect included; no alarm, no signal handler. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "extbodyc-http.h"

#ifndef EXTBODY_VERSION
#define EXTBODY_VERSION "unknown"
#endif

/* The daemon's listener as the Debian package sets it up. */
#define EBC_DEFAULT_SOCKET "unix:/run/extbody/http.sock"
/* The whole exchange, the connect included (spamc's default too). */
#define EBC_DEFAULT_TIMEOUT 120.0
/* The daemon's own max_message_size default (src/base/eb-config.c, "64M"):
 * a larger message would be refused there, so it is not sent. */
#define EBC_DEFAULT_MAX_SIZE (64ULL * 1024 * 1024)
/* An answer may be larger than the message (fetched parts inlined, base64
 * on top): it is refused past EBC_ANSWER_FACTOR times -x plus
 * EBC_ANSWER_SLACK, the header's EBC_HTTP_MAX_HEADER included. */
#define EBC_ANSWER_FACTOR 4
#define EBC_ANSWER_SLACK (1024 * 1024)
/* After an answer complete by its framing, how long the daemon has to close
 * the connection (Connection: close) before the answer is taken as it is:
 * a byte arriving meanwhile makes it invalid (longer than its framing). */
#define EBC_CLOSE_GRACE_MS 200
/* The first reads and the buffer's growth: doubling from here. */
#define EBC_IO_CHUNK (64 * 1024)
/* An error answer's text shown on standard error, at most. */
#define EBC_MAX_ERROR_TEXT 200
/* -t's ceiling: a day; 0 means no deadline, as spamc's -t 0. */
#define EBC_MAX_TIMEOUT 86400.0
/* -q's longest id (Exim's are 16 or 23 characters, Postfix's up to 20). */
#define EBC_MAX_QUEUE_ID 64
/* -s: the daemons of a pool, at most; --tries' ceiling. */
#define EBC_MAX_DAEMONS 16
#define EBC_MAX_TRIES 64
/* Before a try on a daemon tried already (a pool's one address: HAProxy
 * sends it elsewhere), a pause of this many milliseconds times the try. */
#define EBC_RETRY_PAUSE_MS 100

typedef enum { MODE_REWRITE, MODE_EXTERNALIZE, MODE_INSPECT } Mode;

typedef struct {
  const char        *socket;    /* the daemon of this try */
  char              *daemons[EBC_MAX_DAEMONS];   /* -s, each given */
  int                n_daemons;
  int                tries;     /* --tries, 0: the default */
  double             timeout;
  unsigned long long max_size;
  Mode               mode;
  int                tempfail;  /* --on-error tempfail */
  int                verbose;
  const char        *queue_id;  /* -q: the MTA's id of the message, or NULL */
  char             **exec_argv; /* -e: the command the result goes to, or NULL */
} Options;

/* A growing byte buffer. */
typedef struct {
  char  *data;
  size_t len, cap;
} Buf;

static const char *const mode_names[] = { "rewrite", "externalize", "inspect" };

/* Where say () writes (-l): standard error (default), syslog, or a file
 * opened for appending. Exim's transport_filter puts a filter's standard
 * error into the message it delivers: there -l syslog or -l FILE. */
enum { LOG_TO_STDERR, LOG_TO_SYSLOG, LOG_TO_FILE };
static int log_to = LOG_TO_STDERR;
static int log_fd = STDERR_FILENO;
static const char *log_qid;   /* -q: the prefix of each line */

/* ---- small helpers ------------------------------------------------------ */

static void
say (const char *fmt, ...)
{
  char line[1024];
  /* -q: the queue id first, as the MTA's own lines */
  int at = log_qid ? snprintf (line, sizeof line, "%s: ", log_qid) : 0;
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (line + at, sizeof line - (size_t) at, fmt, ap);
  va_end (ap);
  /* one write: the line is not interleaved with another filter's */
  size_t n = strlen (line);
  if (log_to == LOG_TO_SYSLOG) {
    syslog (LOG_MAIL | LOG_WARNING, "%s", line);
    return;
  }
  char out[1100];
  int m = log_to == LOG_TO_FILE
          ? snprintf (out, sizeof out, "extbodyc[%ld]: %.*s\n", (long) getpid (), (int) n, line)
          : snprintf (out, sizeof out, "extbodyc: %.*s\n", (int) n, line);
  if (m > 0 && write (log_fd, out, (size_t) m) < 0)
    return;
}

/* -l: stderr, syslog or an absolute file name; 0, or -1 when it cannot be. */
static int
set_log (const char *to)
{
  if (!strcmp (to, "stderr"))
    return 0;
  if (!strcmp (to, "syslog")) {
    openlog ("extbodyc", LOG_PID, LOG_MAIL);
    log_to = LOG_TO_SYSLOG;
    return 0;
  }
  if (to[0] != '/')
    return -1;
  int fd = open (to, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    /* the line still goes somewhere: syslog, never the message */
    openlog ("extbodyc", LOG_PID, LOG_MAIL);
    log_to = LOG_TO_SYSLOG;
    say ("cannot open the log file %s: %s", to, strerror (errno));
    return 0;
  }
  log_fd = fd;
  log_to = LOG_TO_FILE;
  return 0;
}

static int64_t
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left before @deadline (-1: none) for poll (); 0 when past. */
static int
left_ms (int64_t deadline)
{
  if (deadline < 0)
    return -1;
  int64_t l = deadline - now_ms ();
  return l <= 0 ? 0 : l > INT32_MAX ? INT32_MAX : (int) l;
}

static int
buf_reserve (Buf *b, size_t more, size_t cap_limit)
{
  if (b->cap - b->len >= more)
    return 0;
  size_t want = b->cap ? b->cap : EBC_IO_CHUNK;
  while (want - b->len < more) {
    if (want > SIZE_MAX / 2)
      return -1;
    want *= 2;
  }
  if (want > cap_limit && cap_limit - b->len >= more)
    want = cap_limit;
  char *d = realloc (b->data, want);
  if (!d)
    return -1;
  b->data = d;
  b->cap = want;
  return 0;
}

/* Write all of @buf to @fd (standard output): 0, or -1 with errno. */
static int
write_all (int fd, const char *buf, size_t len)
{
  while (len > 0) {
    ssize_t w = write (fd, buf, len);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    buf += w;
    len -= (size_t) w;
  }
  return 0;
}

/* ---- standard input and output ------------------------------------------ */

/* Read standard input into @in, at most @max bytes. 1: all of it; 0: more
 * than @max (the first max + 1 bytes are in @in); -1 a read error. */
static int
read_message (Buf *in, unsigned long long max)
{
  size_t limit = max >= SIZE_MAX - 1 ? SIZE_MAX - 1 : (size_t) max + 1;
  for (;;) {
    if (in->len >= limit)
      return 0;
    size_t want = limit - in->len < EBC_IO_CHUNK ? limit - in->len : EBC_IO_CHUNK;
    if (buf_reserve (in, want, limit) < 0)
      return -1;
    ssize_t r = read (STDIN_FILENO, in->data + in->len, in->cap - in->len < limit - in->len
                                                        ? in->cap - in->len : limit - in->len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r == 0)
      return 1;
    in->len += (size_t) r;
  }
}

/* The rest of standard input to standard output, unchanged. */
static int
copy_rest (char *scratch, size_t size)
{
  for (;;) {
    ssize_t r = read (STDIN_FILENO, scratch, size);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -2;
    if (r == 0)
      return 0;
    if (write_all (STDOUT_FILENO, scratch, (size_t) r) < 0)
      return -1;
  }
}

/* ---- the connection ----------------------------------------------------- */

/* A non-blocking connected socket, or -1 with @why (errno kept). */
static int
connect_daemon (const char *spec, int64_t deadline, const char **why)
{
  struct sockaddr_storage ss;
  socklen_t sl;
  if (ebc_socket_parse (spec, &ss, &sl, why) < 0) {
    errno = EINVAL;
    return -1;
  }
  int fd = socket (ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *why = "socket";
    return -1;
  }
  if (connect (fd, (struct sockaddr *) &ss, sl) == 0)
    return fd;
  if (errno != EINPROGRESS && errno != EINTR) {
    /* a unix socket's full backlog is EAGAIN: a busy daemon, a fallback */
    *why = "cannot connect";
    int e = errno;
    close (fd);
    errno = e;
    return -1;
  }
  struct pollfd p = { fd, POLLOUT, 0 };
  int r;
  while ((r = poll (&p, 1, left_ms (deadline))) < 0 && errno == EINTR)
    ;
  int err = 0;
  socklen_t el = sizeof err;
  if (r == 0)
    err = ETIMEDOUT;
  else if (r < 0 || getsockopt (fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
    err = errno;
  if (err) {
    *why = r == 0 ? "timed out connecting" : "cannot connect";
    close (fd);
    errno = err;
    return -1;
  }
  return fd;
}

/* What one exchange came to. */
typedef struct {
  Buf         answer;
  int         sent_all;    /* the whole request went out */
  int         eof;         /* the daemon closed */
  const char *why;         /* a failure: what happened */
  int         error;       /* and its errno, 0 when none applies */
  int         connected;   /* the connection was made */
} Exchange;

/* Receive what is there into @x->answer: 1 progress, 0 EOF, -1 error. */
static int
receive (int fd, Exchange *x, size_t max_answer)
{
  if (x->answer.len >= max_answer) {
    x->why = "an answer over the limit (4 times -x plus 1 MiB)";
    return -1;
  }
  size_t room = max_answer - x->answer.len;
  if (buf_reserve (&x->answer, room < EBC_IO_CHUNK ? room : EBC_IO_CHUNK, max_answer) < 0) {
    x->why = "out of memory";
    return -1;
  }
  size_t n = x->answer.cap - x->answer.len;
  ssize_t r = recv (fd, x->answer.data + x->answer.len, n < room ? n : room, 0);
  if (r < 0) {
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
      return 1;
    x->why = "the connection broke while receiving";
    x->error = errno;
    return -1;
  }
  if (r == 0) {
    x->eof = 1;
    return 0;
  }
  x->answer.len += (size_t) r;
  return 1;
}

/* Is the answer complete yet (by its framing)? The parser is run on every
 * read while the header is incomplete or the body has a length; a chunked
 * body is walked again only when a quarter more has come, so that a body of
 * tiny chunks costs no quadratic time (the close ends it anyway). */
static EbcHttpState
check_answer (Exchange *x, size_t max_body, size_t *parsed_at, EbcHttpAnswer *a)
{
  size_t len = x->answer.len;
  if (!x->eof && *parsed_at && len < *parsed_at + *parsed_at / 4)
    return EBC_HTTP_INCOMPLETE;
  EbcHttpState s = ebc_http_parse (x->answer.data, len, x->eof, max_body, a);
  if (s == EBC_HTTP_INCOMPLETE && a->frame == EBC_HTTP_FRAME_CHUNKED && a->header_len)
    *parsed_at = len;
  return s;
}

/* Send the request and receive the answer, together (a daemon may answer
 * while it reads, or refuse early), until the answer is complete, the
 * deadline passes or the connection fails. COMPLETE with @a filled, or
 * INVALID with x->why. */
static EbcHttpState
exchange (int fd, const char *req, size_t req_len, const Buf *msg, int64_t deadline,
          size_t max_answer, Exchange *x, EbcHttpAnswer *a)
{
  size_t sent = 0, total = req_len + msg->len, parsed_at = 0;
  int64_t grace_end = -1;
  EbcHttpState s = EBC_HTTP_INCOMPLETE;
  for (;;) {
    struct pollfd p = { fd, POLLIN | (sent < total ? POLLOUT : 0), 0 };
    int64_t until = grace_end >= 0 && (deadline < 0 || grace_end < deadline) ? grace_end : deadline;
    int r = poll (&p, 1, left_ms (until));
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      x->why = "poll";
      x->error = errno;
      return EBC_HTTP_INVALID;
    }
    if (r == 0) {
      if (s == EBC_HTTP_COMPLETE)
        return s;   /* complete, nothing more came: the daemon kept the connection */
      x->why = "timed out (-t) waiting for the daemon";
      return EBC_HTTP_INVALID;
    }
    if ((p.revents & POLLOUT) && sent < total) {
      const char *from = sent < req_len ? req + sent : msg->data + (sent - req_len);
      size_t n = sent < req_len ? req_len - sent : total - sent;
      ssize_t w = send (fd, from, n, MSG_NOSIGNAL);
      if (w > 0)
        sent += (size_t) w;
      else if (w < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
        /* the daemon stopped reading: what it said (an error status) may be there */
        x->error = errno;
        total = sent;
      }
      x->sent_all = sent == req_len + msg->len;
      continue;
    }
    if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
      continue;
    if (receive (fd, x, max_answer) < 0)
      return EBC_HTTP_INVALID;
    s = check_answer (x, max_answer, &parsed_at, a);
    if (s == EBC_HTTP_INVALID) {
      x->why = a->reason;
      return s;
    }
    if (x->eof && s == EBC_HTTP_COMPLETE)
      return s;
    if (s == EBC_HTTP_COMPLETE && grace_end < 0)
      grace_end = now_ms () + EBC_CLOSE_GRACE_MS;
  }
}

/* ---- one message -------------------------------------------------------- */

/* Why the daemon's answer cannot be used, or NULL; @text gets an error
 * answer's one line. */
static const char *
refuse_answer (const Options *o, const EbcHttpAnswer *a, const Exchange *x, char *text, size_t size)
{
  text[0] = '\0';
  if (a->status != 200) {
    size_t n = a->body_len < size - 1 ? a->body_len : size - 1;
    size_t k = 0;
    for (size_t i = 0; i < n && x->answer.data[a->header_len + i] != '\n'; i++) {
      unsigned char c = (unsigned char) x->answer.data[a->header_len + i];
      if (c >= 0x20 && c != 0x7f)
        text[k++] = (char) c;
    }
    text[k] = '\0';
    return "the daemon answered an error";
  }
  if (!x->sent_all)
    return "the daemon answered before it had the whole message";
  if (o->mode != MODE_INSPECT && a->changed < 0)
    return "an answer with no Extbody-Changed field (not the extbody daemon?)";
  return NULL;
}

static char *
request_head (const Options *o, size_t len, size_t *head_len)
{
  static char head[384];
  int n = snprintf (head, sizeof head,
                    "POST /%s HTTP/1.1\r\n"
                    "Host: localhost\r\n"
                    "Content-Length: %zu\r\n"
                    "Content-Type: message/rfc822\r\n"
                    "%s%s%s"
                    "Connection: close\r\n"
                    "\r\n", mode_names[o->mode], len,
                    o->queue_id ? "Extbody-Queue-Id: " : "", o->queue_id ? o->queue_id : "",
                    o->queue_id ? "\r\n" : "");
  *head_len = (size_t) n;
  return head;
}

/* The daemon's answer to @msg, whole and checked: 0 with @out pointing into
 * x->answer, or -1 with what went wrong in @why (one line). One try, on
 * o->socket, before @deadline (-1: none). */
static int
ask_daemon (const Options *o, const Buf *msg, int64_t deadline, Exchange *x, EbcHttpAnswer *a,
            const char **out, size_t *out_len, char *why, size_t why_size)
{
  unsigned long long cap = o->max_size * EBC_ANSWER_FACTOR + EBC_ANSWER_SLACK;
  size_t max_answer = cap > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t) cap;
  const char *what = NULL;
  int fd = connect_daemon (o->socket, deadline, &what);
  if (fd < 0) {
    snprintf (why, why_size, "%s %s: %s", what, o->socket, strerror (errno));
    return -1;
  }
  x->connected = 1;
  size_t head_len;
  const char *head = request_head (o, msg->len, &head_len);
  EbcHttpState s = exchange (fd, head, head_len, msg, deadline, max_answer, x, a);
  close (fd);
  if (s != EBC_HTTP_COMPLETE) {
    if (x->error)
      snprintf (why, why_size, "%s: %s: %s (%s)", o->socket, x->why, strerror (x->error),
                x->sent_all ? "the whole message was sent" : "the message was not all sent");
    else
      snprintf (why, why_size, "%s: %s", o->socket, x->why);
    return -1;
  }
  char text[EBC_MAX_ERROR_TEXT + 1];
  what = refuse_answer (o, a, x, text, sizeof text);
  if (what) {
    if (a->status != 200)
      snprintf (why, why_size, "%s: %s: %d %s", o->socket, what, a->status, text);
    else
      snprintf (why, why_size, "%s: %s", o->socket, what);
    return -1;
  }
  /* decoded in place: chunks only ever move back */
  *out_len = ebc_http_body (x->answer.data, a, x->answer.data);
  *out = x->answer.data;
  return 0;
}

/* The message as it came, after one line saying why; or, with --on-error
 * tempfail (and always in inspect mode: there is no message to write),
 * nothing and a failure status. */
static int
fall_back (const Options *o, const Buf *msg, const char *why, int refused)
{
  if (o->mode == MODE_INSPECT) {
    say ("%s; nothing inspected (exit %d)", why, refused ? EX_UNAVAILABLE : EX_TEMPFAIL);
    return refused ? EX_UNAVAILABLE : EX_TEMPFAIL;
  }
  if (o->tempfail) {
    say ("%s; message not written, exit %d (--on-error tempfail)", why, EX_TEMPFAIL);
    return EX_TEMPFAIL;
  }
  say ("%s; message passed through unchanged", why);
  if (write_all (STDOUT_FILENO, msg->data, msg->len) < 0) {
    say ("cannot write standard output: %s", strerror (errno));
    return EX_IOERR;
  }
  return EX_OK;
}

/* A message over -x: not sent; what was read, then the rest, unchanged. */
static int
pass_oversize (const Options *o, const Buf *msg)
{
  if (o->mode == MODE_INSPECT) {
    say ("message over %llu bytes (-x): not inspected (exit %d)", o->max_size, EX_UNAVAILABLE);
    return EX_UNAVAILABLE;
  }
  say ("message over %llu bytes (-x): not sent, passed through unchanged", o->max_size);
  if (write_all (STDOUT_FILENO, msg->data, msg->len) < 0) {
    say ("cannot write standard output: %s", strerror (errno));
    return EX_IOERR;
  }
  /* not the message's buffer: -x may have made it a few bytes long */
  static char scratch[EBC_IO_CHUNK];
  int r = copy_rest (scratch, sizeof scratch);
  if (r == -1) {
    say ("cannot write standard output: %s", strerror (errno));
    return EX_IOERR;
  }
  if (r == -2) {
    /* the start is out already: nothing better can be done than to say so */
    say ("cannot read standard input: %s", strerror (errno));
    return EX_IOERR;
  }
  return EX_OK;
}

/* ---- options ------------------------------------------------------------ */

static void
usage (FILE *to)
{
  fprintf (to,
    "Usage: extbodyc [-s SOCKET[,SOCKET...]] [--tries N] [-t SECONDS] [-x BYTES]\n"
    "                [-m rewrite|externalize|inspect]\n"
    "                [--on-error accept|tempfail] [-l stderr|syslog|FILE] [-q ID] [-v]\n"
    "                [-e COMMAND [ARG...]]\n"
    "                [-h] [--version]\n"
    "The message on standard input through the extbody daemon's HTTP listener,\n"
    "the result on standard output; the message unchanged when the daemon fails.\n"
    "  -s, --socket SOCKET    unix:PATH, inet:PORT@HOST or PATH (" EBC_DEFAULT_SOCKET ");\n"
    "                         a pool: several, comma-separated (or -s again), each\n"
    "                         process beginning at another\n"
    "      --tries N          tries on the daemons in turn while one is gone,\n"
    "                         stopping or full (502, 503, 504): the number of\n"
    "                         daemons (a balancer's one address: give 3)\n"
    "  -t, --timeout SECONDS  the whole exchange, connect included (120; 0: none)\n"
    "  -x, --max-size BYTES   larger messages are not sent (64M; K, M, G suffixes)\n"
    "  -m, --mode MODE        rewrite (default), externalize or inspect (JSON out)\n"
    "      --on-error ACTION  accept: pass the message through (default);\n"
    "                         tempfail: write nothing, exit 75\n"
    "  -l, --log WHERE        where its lines go: stderr (default), syslog\n"
    "                         (facility mail) or FILE (an absolute path, appended)\n"
    "  -q, --queue-id ID      the MTA's id of the message, in the daemon's log line\n"
    "                         and its own (Exim: $message_exim_id)\n"
    "  -v, --verbose          one line on standard error about each message\n"
    "  -e COMMAND [ARG...]    the last option: the result on COMMAND's standard\n"
    "                         input (run once the result is whole; not run, and\n"
    "                         exit 75, on any failure): Postfix's pipe(8) with\n"
    "                         -e /usr/sbin/sendmail -G -i -f ${sender} -- ${recipient}\n"
    "  -h, --help             this text\n"
    "      --version          the version\n"
    "Exit status: 0 done (or passed through); 64 usage; 69 inspect refused;\n"
    "74 I/O error; 75 temporary failure (--on-error tempfail, inspect).\n");
}

/* BYTES with an optional K, M or G (binary) suffix; 0 when malformed. */
static unsigned long long
parse_size (const char *s)
{
  char *end;
  errno = 0;
  unsigned long long v = strtoull (s, &end, 10);
  if (end == s || errno || *s == '-')
    return 0;
  unsigned shift = 0;
  if (*end == 'k' || *end == 'K')
    shift = 10;
  else if (*end == 'm' || *end == 'M')
    shift = 20;
  else if (*end == 'g' || *end == 'G')
    shift = 30;
  if (shift)
    end++;
  if (*end || v > (1ULL << 40) >> shift)
    return 0;
  return v << shift;
}

/* -s: one daemon, or several comma-separated, each a socket ebc_socket_parse
 * takes; 0, or -1 said. */
static int
add_daemons (Options *o, char *list)
{
  for (char *save = NULL, *d = strtok_r (list, ",", &save); d; d = strtok_r (NULL, ",", &save)) {
    struct sockaddr_storage ss;
    socklen_t sl;
    const char *why = NULL;
    if (o->n_daemons == EBC_MAX_DAEMONS) {
      say ("-s names more than %d daemons", EBC_MAX_DAEMONS);
      return -1;
    }
    if (ebc_socket_parse (d, &ss, &sl, &why) < 0) {
      say ("-s: \"%.200s\": %s", d, why);
      return -1;
    }
    o->daemons[o->n_daemons++] = d;
  }
  return 0;
}

/* 0 to go on, or the exit status. */
static int
parse_options (int argc, char **argv, Options *o)
{
  enum { OPT_ON_ERROR = 256, OPT_VERSION, OPT_TRIES };
  static const struct option longs[] = {
    { "socket", required_argument, NULL, 's' },
    { "timeout", required_argument, NULL, 't' },
    { "tries", required_argument, NULL, OPT_TRIES },
    { "max-size", required_argument, NULL, 'x' },
    { "mode", required_argument, NULL, 'm' },
    { "on-error", required_argument, NULL, OPT_ON_ERROR },
    { "log", required_argument, NULL, 'l' },
    { "queue-id", required_argument, NULL, 'q' },
    { "verbose", no_argument, NULL, 'v' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, OPT_VERSION },
    { NULL, 0, NULL, 0 }
  };
  int c;
  char *end;
  while ((c = getopt_long (argc, argv, "+s:t:x:m:l:q:veh", longs, NULL)) != -1) {
    switch (c) {
    case 's':
      if (add_daemons (o, optarg) < 0)
        return EX_USAGE;
      break;
    case OPT_TRIES:
      errno = 0;
      long v = strtol (optarg, &end, 10);
      if (end == optarg || *end || errno || v < 1 || v > EBC_MAX_TRIES) {
        say ("--tries wants a number from 1 to %d, not \"%s\"", EBC_MAX_TRIES, optarg);
        return EX_USAGE;
      }
      o->tries = (int) v;
      break;
    case 't':
      errno = 0;
      o->timeout = strtod (optarg, &end);
      if (end == optarg || *end || errno || !(o->timeout >= 0 && o->timeout <= EBC_MAX_TIMEOUT)) {
        say ("-t wants seconds from 0 (no limit) to %.0f, not \"%s\"", EBC_MAX_TIMEOUT, optarg);
        return EX_USAGE;
      }
      break;
    case 'x':
      o->max_size = parse_size (optarg);
      if (!o->max_size) {
        say ("-x wants a size in bytes (K, M, G suffixes), from 1 to 1T, not \"%s\"", optarg);
        return EX_USAGE;
      }
      break;
    case 'm':
      for (o->mode = MODE_REWRITE; o->mode <= MODE_INSPECT; o->mode++)
        if (!strcmp (optarg, mode_names[o->mode]))
          break;
      if (o->mode > MODE_INSPECT) {
        say ("-m wants rewrite, externalize or inspect, not \"%s\"", optarg);
        return EX_USAGE;
      }
      break;
    case OPT_ON_ERROR:
      if (strcmp (optarg, "accept") && strcmp (optarg, "tempfail")) {
        say ("--on-error wants accept or tempfail, not \"%s\"", optarg);
        return EX_USAGE;
      }
      o->tempfail = !strcmp (optarg, "tempfail");
      break;
    case 'l':
      if (set_log (optarg) < 0) {
        say ("-l wants stderr, syslog or an absolute file name, not \"%s\"", optarg);
        return EX_USAGE;
      }
      break;
    case 'q': {
      /* sent in a header field: 1 to 64 of letters, digits, '.', '_', '-' */
      size_t n = strlen (optarg);
      int ok = n >= 1 && n <= EBC_MAX_QUEUE_ID;
      for (size_t i = 0; ok && i < n; i++)
        ok = isalnum ((unsigned char) optarg[i]) || optarg[i] == '.' || optarg[i] == '_' || optarg[i] == '-';
      if (!ok) {
        say ("-q wants 1 to %d letters, digits, '.', '_' or '-', not \"%.80s\"", EBC_MAX_QUEUE_ID, optarg);
        return EX_USAGE;
      }
      o->queue_id = log_qid = optarg;
      break;
    }
    case 'v':
      o->verbose = 1;
      break;
    case 'e':
      /* the last option: the rest is the command and its arguments */
      if (optind >= argc) {
        say ("-e wants a command");
        return EX_USAGE;
      }
      o->exec_argv = &argv[optind];
      return 0;
    case 'h':
      usage (stdout);
      return -EX_OK - 1;
    case OPT_VERSION:
      printf ("extbodyc %s\n", EXTBODY_VERSION);
      return -EX_OK - 1;
    default:
      usage (stderr);
      return EX_USAGE;
    }
  }
  if (!o->n_daemons)
    o->daemons[o->n_daemons++] = (char *) EBC_DEFAULT_SOCKET;
  if (optind < argc) {
    say ("no arguments: the message comes on standard input");
    usage (stderr);
    return EX_USAGE;
  }
  return 0;
}

/* A random word for the spread over a pool: the kernel's, or the clock's
 * nanoseconds mixed with the process id when getrandom () has none. */
static unsigned
random_word (void)
{
  unsigned w = 0;
  if (getrandom (&w, sizeof w, GRND_NONBLOCK) == (ssize_t) sizeof w)
    return w;
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ((unsigned) ts.tv_nsec ^ (unsigned) getpid () * 2654435761u) >> 7;
}

/* May a try that failed so be made again, on the next daemon? When the
 * daemon cannot have answered (no connection; the connection ended or broke
 * before the whole answer came: a daemon killed, a pool's member gone) or
 * said it cannot now (502, 503, 504: stopping, full, a balancer with no
 * server). Not after -t's deadline, an answer that is not HTTP, nor a refusal
 * that another daemon would make too (413, 400, 500). Nothing has been
 * written yet: the answer is used only whole. */
static int
may_retry (const Exchange *x, const EbcHttpAnswer *a)
{
  if (!x->connected)
    return 1;
  if (x->why)   /* no whole answer */
    return x->eof || x->error == ECONNRESET || x->error == EPIPE;
  return a->status == 502 || a->status == 503 || a->status == 504;
}

/* One message read whole: through a daemon (the next of -s's after a try
 * that may be made again, up to --tries, all before -t's one deadline), or
 * the fallback. */
static int
filter (Options *o, const Buf *msg, int64_t start)
{
  Exchange x = { { NULL, 0, 0 }, 0, 0, NULL, 0, 0 };
  EbcHttpAnswer a = { .status = -1, .changed = -1 };
  const char *out = NULL;
  size_t out_len = 0;
  char why[1024], first_why[1024] = "";
  int r = EX_OK;
  int64_t deadline = o->timeout > 0 ? start + (int64_t) (o->timeout * 1000) : -1;
  int n = o->n_daemons;
  int tries = o->tries ? o->tries : n;
  /* spread: each process begins at a daemon of the list chosen at random
   * (not by its process id: an MTA that forks twice per delivery gives its
   * filters process ids of one parity) */
  int first = n > 1 ? (int) (random_word () % (unsigned) n) : 0;
  int t;
  for (t = 0;; t++) {
    o->socket = o->daemons[(first + t) % n];
    if (t > 0) {
      free (x.answer.data);
      memset (&x, 0, sizeof x);
      a = (EbcHttpAnswer) { .status = -1, .changed = -1 };
    }
    if (ask_daemon (o, msg, deadline, &x, &a, &out, &out_len, why, sizeof why) == 0)
      break;
    if (!first_why[0])
      snprintf (first_why, sizeof first_why, "%s", why);
    int again = t + 1 < tries && may_retry (&x, &a), left = left_ms (deadline);
    if (again && t + 1 >= n) {
      /* a daemon tried already: a pause first, if -t leaves time for it */
      int pause = EBC_RETRY_PAUSE_MS * (t + 1);
      again = left < 0 || left > pause;
      if (again)
        poll (NULL, 0, pause);
    } else if (again)
      again = left != 0;
    if (!again) {
      if (t > 0) {
        size_t l = strlen (why);
        snprintf (why + l, sizeof why - l, " (try %d of %d; the first: %s)", t + 1, tries, first_why);
      }
      r = fall_back (o, msg, why, a.status >= 400 && a.status < 500 && x.why == NULL);
      free (x.answer.data);
      return r;
    }
  }
  if (first_why[0])
    say ("%s; done by %s on try %d", first_why, o->socket, t + 1);
  /* unchanged: the bytes that came in, whatever the body says */
  if (o->mode != MODE_INSPECT && a.changed == 0) {
    out = msg->data;
    out_len = msg->len;
  }
  if (write_all (STDOUT_FILENO, out, out_len) < 0) {
    say ("cannot write standard output: %s", strerror (errno));
    r = EX_IOERR;
  } else if (o->verbose)
    say ("%s: %zu bytes in, %zu out, changed %s, references %lld, resolved %lld, %lld ms",
         mode_names[o->mode], msg->len, out_len, a.changed == 1 ? "yes" : a.changed == 0 ? "no" : "-",
         a.references, a.resolved, (long long) (now_ms () - start));
  free (x.answer.data);
  return r;
}

/* -e: run the command in this process's place, the memory file on its
 * standard input and the real standard output back, when the result is whole
 * (@r, the exit status it would have, is 0); else exit 75, the command not
 * run: the MTA tries again later. Returns only when it fails. */
static int
exec_with_result (const Options *o, int r, int out_saved)
{
  if (r != EX_OK) {
    say ("-e %s not run (exit %d); exit %d", o->exec_argv[0], r, EX_TEMPFAIL);
    return EX_TEMPFAIL;
  }
  if (lseek (STDOUT_FILENO, 0, SEEK_SET) != 0 || dup2 (STDOUT_FILENO, STDIN_FILENO) < 0
      || dup2 (out_saved, STDOUT_FILENO) < 0) {
    say ("-e: cannot hand the result over: %s; exit %d", strerror (errno), EX_TEMPFAIL);
    return EX_TEMPFAIL;
  }
  close (out_saved);
  signal (SIGPIPE, SIG_DFL);   /* ignored signals stay ignored across exec */
  execvp (o->exec_argv[0], o->exec_argv);
  say ("-e: cannot run %s: %s; exit %d", o->exec_argv[0], strerror (errno), EX_TEMPFAIL);
  return EX_TEMPFAIL;
}

int
main (int argc, char **argv)
{
  Options o = { .socket = EBC_DEFAULT_SOCKET, .timeout = EBC_DEFAULT_TIMEOUT, .max_size = EBC_DEFAULT_MAX_SIZE,
                .mode = MODE_REWRITE };
  int r = parse_options (argc, argv, &o);
  if (r < 0)
    return EX_OK;
  if (r > 0)
    return r;
  /* -e: what would go to standard output goes to a memory file, handed to
   * the command once whole */
  int out_saved = -1;
  if (o.exec_argv) {
    int mfd = memfd_create ("extbodyc", MFD_CLOEXEC);
    out_saved = mfd >= 0 ? fcntl (STDOUT_FILENO, F_DUPFD_CLOEXEC, 3) : -1;
    if (mfd < 0 || out_saved < 0 || dup2 (mfd, STDOUT_FILENO) < 0) {
      say ("-e: cannot make a memory file: %s; exit %d", strerror (errno), EX_TEMPFAIL);
      return EX_TEMPFAIL;
    }
    close (mfd);
  }
  /* a daemon gone mid-send and a reader gone from standard output are
   * errors to report (EPIPE), never a silent death */
  signal (SIGPIPE, SIG_IGN);
  int64_t start = now_ms ();

  Buf msg = { NULL, 0, 0 };
  r = read_message (&msg, o.max_size);
  if (r < 0) {
    say ("cannot read standard input: %s", strerror (errno));
    r = o.tempfail || o.mode == MODE_INSPECT ? EX_TEMPFAIL : EX_IOERR;
  } else if (r == 0)
    r = pass_oversize (&o, &msg);
  else if (msg.len == 0 && o.mode != MODE_INSPECT)
    r = EX_OK;   /* nothing to filter */
  else
    r = filter (&o, &msg, start);
  /* freed, though the process ends: a sanitizer build checks for leaks */
  free (msg.data);
  if (o.exec_argv)
    return exec_with_result (&o, r, out_saved);
  return r;
}
