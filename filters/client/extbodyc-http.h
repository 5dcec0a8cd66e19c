/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbodyc-http.h - HTTP/1.1 framing (RFC 9112) by one set of rules for both
 * ends: the daemon's answer as extbodyc reads it, and a request as extbodyd's
 * HTTP listener reads it (filters/daemon/daemon-http.c compiles this file
 * in, as extbody-smtpd-filter does). Pure functions (no I/O, no
 * allocation), so that the client checks an answer whole before it writes a
 * byte of it, the daemon acts on no byte but the body a request's framing
 * gives, and fuzzers can drive both (tests/fuzz/fuzz-extbodyc.c,
 * fuzz-http-request.c). libc only. */
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
/* A request line's target longer than this is refused (414). */
#define EBC_HTTP_MAX_TARGET 8192
/* Empty lines skipped before a request line (RFC 9112 section 2.2: a
 * client may send one after a body); more is garbage. */
#define EBC_HTTP_MAX_EMPTY_LINES 4

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

/* ---- requests: the daemon's side --------------------------------------- */

/* A request's head (request line and header fields) as the daemon acts on
 * it. Offsets and lengths point into the buffer parsed. */
typedef struct {
  int                status;       /* INVALID: the status to answer (400, 414, 417, 431, 501, 505) */
  const char        *reason;       /* INVALID: why, static text */
  size_t             head_len;     /* COMPLETE: bytes of the head, empty lines before it included */
  size_t             method, method_len;
  size_t             target, target_len;
  int                minor;        /* HTTP/1.minor */
  EbcHttpFrame       frame;        /* LENGTH, CHUNKED, or EOF: no body at all */
  unsigned long long length;       /* LENGTH: the Content-Length */
  int                close;        /* the connection ends after the answer (Connection: close, or
                                    * HTTP/1.0 without keep-alive) */
  int                expect_continue;  /* Expect: 100-continue */
} EbcHttpRequest;

/* Read the request head in @buf[0..@len). COMPLETE: @req says where the
 * body starts (req->head_len) and how it is framed; INCOMPLETE: more bytes
 * may complete it (within EBC_HTTP_MAX_HEADER); INVALID: req->status and
 * req->reason say what to answer before closing the connection. The rules
 * are the answer's, plus a request's own (RFC 9112): a length that is
 * ambiguous (Content-Length and Transfer-Encoding together, two lengths that
 * differ, a length that is no number) is 400, a transfer coding other than
 * chunked 501, Transfer-Encoding in HTTP/1.0 400, an HTTP/1.1 request with no
 * Host or any with two 400, whitespace between a field name and its colon
 * 400, an obsolete folded line 400, another major version 505. */
EbcHttpState ebc_http_parse_request (const char *buf, size_t len, EbcHttpRequest *req);

/* The value of the first field named @name (any case) of a head @buf[0..@head_len)
 * that ebc_http_parse_request found COMPLETE, without the white space around it:
 * its start, its length in *@value_len; NULL when there is none. */
const char *ebc_http_field (const char *buf, size_t head_len, const char *name, size_t *value_len);

/* ---- chunked bodies, read as they come: both ends ------------------------ */

/* Where a chunked body's reading stands; zero it to begin. */
typedef struct {
  int                state;      /* private */
  unsigned long long left;       /* the current chunk's data bytes still to come */
  unsigned long long total;      /* data bytes so far */
  size_t             trailer;    /* trailer bytes so far */
} EbcHttpChunks;

/* Read the chunked body @in[0..@len) from where @c stands. Returns
 * COMPLETE once the last chunk and the trailer fields have been read, with
 * *@used the bytes that took (what follows belongs to the next message);
 * INVALID with *@why; INCOMPLETE otherwise: when *@data_len is not 0, chunk
 * data is at @in + *@data (the caller takes it and calls again with the bytes
 * from *@used on), else *@used bytes were read and the rest (a line not yet
 * ended) is needed again with what follows. @at_eof: no byte will follow
 * (INCOMPLETE becomes INVALID). A body longer than @max_body, a chunk-size
 * line over EBC_HTTP_MAX_CHUNK_LINE and trailer fields over
 * EBC_HTTP_MAX_HEADER are INVALID. */
EbcHttpState ebc_http_chunks (EbcHttpChunks *c, const char *in, size_t len, int at_eof,
                              unsigned long long max_body, size_t *used, size_t *data, size_t *data_len,
                              const char **why);

/* The daemon's socket as the client options name it: unix:PATH, local:PATH,
 * a plain path, inet:PORT@HOST (a numeric address or localhost: no name
 * lookup) or inet:PORT (127.0.0.1), into @ss and @sl. 0, or -1 with @why (a
 * static text). No I/O. */
int ebc_socket_parse (const char *spec, struct sockaddr_storage *ss, socklen_t *sl, const char **why);
