/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* smtpd-proto.c - one line of OpenSMTPD's filter protocol (smtpd-proto.h). */
#include "smtpd-proto.h"

#include <string.h>

/* The next field of [*p, end) up to a '|' (or the end): moves *p past the
 * '|'; @last: the field runs to the end, '|' included. Returns 0 when there
 * is no field left (the line ended before it). */
static int
next_field (const char **p, const char *end, int last, EbsSlice *f)
{
  if (!*p)
    return 0;
  f->p = *p;
  const char *bar = last ? NULL : memchr (*p, '|', (size_t) (end - *p));
  if (bar) {
    f->len = (size_t) (bar - *p);
    *p = bar + 1;
  } else {
    f->len = (size_t) (end - *p);
    *p = NULL;
  }
  return 1;
}

static int
is (EbsSlice f, const char *word)
{
  size_t n = strlen (word);
  return f.len == n && memcmp (f.p, word, n) == 0;
}

static int
is_id (EbsSlice f)
{
  if (f.len == 0 || f.len > EBS_MAX_ID)
    return 0;
  for (size_t i = 0; i < f.len; i++) {
    char c = f.p[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
      return 0;
  }
  return 1;
}

/* VERSION|TIME: a version of digits and dots, a time of digits and a dot */
static int
is_version (EbsSlice f)
{
  if (f.len == 0 || f.len > 32)
    return 0;
  for (size_t i = 0; i < f.len; i++)
    if (!((f.p[i] >= '0' && f.p[i] <= '9') || f.p[i] == '.'))
      return 0;
  return 1;
}

static EbsLineKind
invalid (EbsLine *out, const char *why)
{
  out->kind = EBS_LINE_INVALID;
  out->reason = why;
  return out->kind;
}

static EbsLineKind
parse_config (const char *p, const char *end, EbsLine *out)
{
  if (!next_field (&p, end, 0, &out->key) || out->key.len == 0)
    return invalid (out, "a config line without a key");
  if (!p && is (out->key, "ready"))
    return out->kind = EBS_LINE_CONFIG_READY;
  if (p)
    next_field (&p, end, 1, &out->value);
  return out->kind = EBS_LINE_CONFIG;
}

/* filter|... and report|...: VERSION|TIME|SUBSYSTEM|PHASE|SESSION then the rest */
static EbsLineKind
parse_event (const char *p, const char *end, int filter, EbsLine *out)
{
  EbsSlice time, subsystem, phase;
  if (!next_field (&p, end, 0, &out->version) || !is_version (out->version))
    return invalid (out, "no protocol version");
  if (!next_field (&p, end, 0, &time) || !is_version (time))
    return invalid (out, "no timestamp");
  if (!next_field (&p, end, 0, &subsystem) || subsystem.len == 0)
    return invalid (out, "no subsystem");
  if (!next_field (&p, end, 0, &phase) || phase.len == 0)
    return invalid (out, "no phase or event");
  if (!next_field (&p, end, 0, &out->session) || !is_id (out->session))
    return invalid (out, "no session id");
  if (!is (subsystem, "smtp-in"))
    return out->kind = EBS_LINE_OTHER;
  if (!filter) {
    if (is (phase, "link-disconnect") && !p)
      return out->kind = EBS_LINE_DISCONNECT;
    return out->kind = EBS_LINE_OTHER;
  }
  if (!is (phase, "data-line"))
    return out->kind = EBS_LINE_OTHER;
  if (!next_field (&p, end, 0, &out->token) || !is_id (out->token))
    return invalid (out, "a data-line without a token");
  if (!next_field (&p, end, 1, &out->data))
    return invalid (out, "a data-line without its line");
  return out->kind = EBS_LINE_DATA;
}

EbsLineKind
ebs_parse_line (const char *line, size_t len, EbsLine *out)
{
  memset (out, 0, sizeof *out);
  const char *end = line + len;
  const char *p = line;
  EbsSlice kind;
  if (!next_field (&p, end, 0, &kind) || !p)
    return invalid (out, "no '|' after the line's kind");
  if (is (kind, "config"))
    return parse_config (p, end, out);
  if (is (kind, "filter"))
    return parse_event (p, end, 1, out);
  if (is (kind, "report"))
    return parse_event (p, end, 0, out);
  return invalid (out, "an unknown kind of line");
}
