/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* smtpd-proto.h - one line of what OpenSMTPD writes to a filter
 * (smtpd-filters(7), protocol 0.6 of OpenSMTPD 6.8, and 0.5 and 0.7, whose
 * data-line and report lines are laid out the same), read without copying:
 * a pure function (no I/O, no allocation), so that a fuzzer can drive it
 * (tests/fuzz/fuzz-smtpd-filter.c). libc only. */
#pragma once
#include <stddef.h>

/* A session id or token: hex digits, at most this many (smtpd writes 16). */
#define EBS_MAX_ID 16

typedef enum {
  EBS_LINE_CONFIG,        /* config|KEY|VALUE (VALUE may be empty or absent) */
  EBS_LINE_CONFIG_READY,  /* config|ready */
  EBS_LINE_DATA,          /* filter|VERSION|TIME|smtp-in|data-line|SESSION|TOKEN|DATA */
  EBS_LINE_DISCONNECT,    /* report|VERSION|TIME|smtp-in|link-disconnect|SESSION */
  EBS_LINE_OTHER,         /* a well-formed line of another kind, phase or event */
  EBS_LINE_INVALID        /* not a line smtpd writes */
} EbsLineKind;

/* A piece of the line: @len bytes at @p (not NUL-terminated). */
typedef struct {
  const char *p;
  size_t      len;
} EbsSlice;

typedef struct {
  EbsLineKind kind;
  EbsSlice    key, value;       /* CONFIG */
  EbsSlice    version;          /* DATA, DISCONNECT */
  EbsSlice    session, token;   /* DATA (token), DATA and DISCONNECT (session) */
  EbsSlice    data;             /* DATA: the message line, as the client sent it
                                 * (dot-stuffed; "." ends the message); may hold '|' */
  const char *reason;           /* INVALID: why, static text */
} EbsLine;

/* Read the line @line[0..@len) (no line break; a trailing CR is part of it).
 * Returns line->kind. */
EbsLineKind ebs_parse_line (const char *line, size_t len, EbsLine *out);
