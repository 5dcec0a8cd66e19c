/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-nntp: the NNTP response reader (src/net/eb-nntp.c) over a server's
 * bytes: a status line, then a data block, as ARTICLE is answered. The input's
 * first byte chooses the limits and how the bytes are cut into reads; the
 * same bytes read whole and cut must give the same outcome, a block never
 * larger than its limit, a text of printable bytes, and a used count within
 * what was fed. Then the URL parser over the input as a news: and an nntp: URL. */
#include <string.h>
#include "eb-nntp.h"

typedef struct {
  EbNntpStep step;
  guint      code;
  GBytes    *block;
  EbReason   why;
} Outcome;

static void
run (const guint8 *data, size_t size, gsize max_line, guint64 max_bytes, gsize cut, Outcome *o)
{
  EbNntpReader *r = eb_nntp_reader_new (max_line, max_bytes);
  gsize pos = 0;
  gboolean in_block = FALSE;
  memset (o, 0, sizeof *o);
  o->step = EB_NNTP_MORE;
  while (pos < size) {
    gsize n = MIN (cut, size - pos);
    gsize used = 0;
    EbNntpStep s = eb_nntp_reader_feed (r, (const char *) data + pos, n, &used);
    if (used > n)
      __builtin_trap ();
    if (s == EB_NNTP_MORE && used != n)
      __builtin_trap ();
    pos += used;
    if (s == EB_NNTP_STATUS) {
      o->code = eb_nntp_reader_code (r);
      if (o->code < 100 || o->code > 599)
        __builtin_trap ();
      for (const char *t = eb_nntp_reader_text (r); *t; t++)
        if (!g_ascii_isprint (*t))
          __builtin_trap ();
      if (in_block)
        __builtin_trap ();
      eb_nntp_reader_want_block (r);
      in_block = TRUE;
    } else if (s == EB_NNTP_END) {
      o->step = s;
      o->block = eb_nntp_reader_steal_block (r);
      if (g_bytes_get_size (o->block) > max_bytes)
        __builtin_trap ();
      break;
    } else if (s == EB_NNTP_FAILED) {
      const char *d = NULL;
      o->step = s;
      o->why = eb_nntp_reader_failure (r, &d);
      if (!d || (o->why != EB_REASON_FETCH_FAILED && o->why != EB_REASON_PART_TOO_LARGE))
        __builtin_trap ();
      break;
    }
  }
  eb_nntp_reader_free (r);
}

int
LLVMFuzzerTestOneInput (const guint8 *data, size_t size)
{
  if (size < 1)
    return 0;
  guint8 knob = data[0];
  data++;
  size--;
  gsize max_line = 16 + (knob & 0x0f) * 64;
  guint64 max_bytes = 64 + ((knob >> 4) & 0x0f) * 512;
  Outcome whole, cut;
  run (data, size, max_line, max_bytes, size ? size : 1, &whole);
  run (data, size, max_line, max_bytes, 1 + (knob % 7), &cut);
  if (whole.step != cut.step || whole.code != cut.code || whole.why != cut.why)
    __builtin_trap ();
  if (whole.block && !g_bytes_equal (whole.block, cut.block))
    __builtin_trap ();
  g_clear_pointer (&whole.block, g_bytes_unref);
  g_clear_pointer (&cut.block, g_bytes_unref);

  /* the URLs: never a crash, and an article only from a well-formed URL */
  if (size < 2048) {
    for (guint k = 0; k < 2; k++) {
      char *u = g_strdup_printf ("%s%.*s", k ? "nntp://" : "news:", (int) size, (const char *) data);
      if (strlen (u) == (k ? 7 : 5) + size) {
        char *detail = NULL;
        EbReason r = eb_nntp_classify (u, &detail);
        if (r != EB_REASON_RESOLVED && !detail)
          __builtin_trap ();
        g_free (detail);
      }
      g_free (u);
    }
  }
  return 0;
}
