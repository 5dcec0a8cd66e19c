/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbodyc-http.h - the daemon's HTTP/1.1 answer, read from the bytes
 * received so far: a pure function (no I/O, no allocation), so that the
 * client checks an answer whole before it writes a byte of it, and so that a
 * fuzzer can drive it (tests/fuzz/fuzz-extbodyc.c). libc only. */
#pragma once
#include <stddef.h>
#include <sys/socket.h>

/* The status line and the header fields together (and, for a chunked body,
 * its trailer fields): past it an answer is refused, whatever follows. */
#define EBC_HTTP_MAX_HEADER (64 * 1024)
/* A chunk-size line (hex digits and extensions) longer than this is garbage. */
#define EBC_HTTP_MAX_CHUNK_LINE 1024
/* Interim (1xx) answers skipped before the final one; more is a loop. */
#define EBC_HTTP_MAX_INTERIM 8

typedef enum {
  EBC_HTTP_INCOMPLETE,   /* more bytes may complete it */
  EBC_HTTP_COMPLETE,     /* a whole answer, framing checked, nothing after it */
  EBC_HTTP_INVALID       /* never an answer, whatever comes next */
} EbcHttpState;

typedef enum {
  EBC_HTTP_FRAME_LENGTH,   /* Content-Length */
  EBC_HTTP_FRAME_CHUNKED,  /* Transfer-Encoding: chunked */
  EBC_HTTP_FRAME_EOF       /* neither: the body runs to the connection's end */
} EbcHttpFrame;

typedef struct {
  int          status;       /* the final answer's status code, 200..599 */
  size_t       header_len;   /* bytes before the body (interim answers included) */
  EbcHttpFrame frame;
  size_t       body_len;     /* the body's length once decoded (COMPLETE only) */
  size_t       total_len;    /* bytes the answer takes in the input (COMPLETE only) */
  int          changed;      /* Extbody-Changed: 1 yes, 0 no, -1 absent or other */
  long long    references;   /* Extbody-References, -1 when absent */
  long long    resolved;     /* Extbody-Resolved, -1 when absent */
  const char  *reason;       /* INVALID (and INCOMPLETE at EOF): why, static text */
} EbcHttpAnswer;

/* Read the answer in @buf[0..@len). @at_eof: the peer has closed, no byte
 * will follow (an incomplete answer is then INVALID, and a body framed by
 * the connection's end is complete). @max_body: a longer body (declared,
 * decoded or received) is INVALID. Bytes after a complete answer make it
 * INVALID: the request said Connection: close, one answer comes back. */
EbcHttpState ebc_http_parse (const char *buf, size_t len, int at_eof, size_t max_body,
                             EbcHttpAnswer *answer);

/* The body of a COMPLETE @answer parsed from @buf, decoded (chunks joined)
 * into @out, which holds at least answer->body_len bytes and may be @buf
 * itself (decoding only ever moves bytes back). Returns answer->body_len. */
size_t ebc_http_body (const char *buf, const EbcHttpAnswer *answer, char *out);

/* The daemon's socket as the client options name it: unix:PATH, local:PATH,
 * a plain path, inet:PORT@HOST (a numeric address or localhost: no name
 * lookup) or inet:PORT (127.0.0.1), into @ss and @sl. 0, or -1 with @why (a
 * static text). No I/O. */
int ebc_socket_parse (const char *spec, struct sockaddr_storage *ss, socklen_t *sl, const char **why);
