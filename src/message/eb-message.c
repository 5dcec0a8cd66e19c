/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-message.c - GMime parse, iterative walk, exact location (see eb-message.h). */
#include "eb-message.h"
#include "eb-digest.h"
#include "eb-gmime.h"
#include "eb-transfer.h"
#include <string.h>

#define EB_SHADOW_FIELD_MAX (64 * 1024)

static EbMessageScan *scan_message (const char *buf, gsize len, const EbConfig *config,
                                    gboolean unshadowed, EbMessage *message);
static EbLeafScan *scan_leaves (const char *buf, gsize len, const EbConfig *config,
                                EbMessage *message);

/* ---- the one reading ------------------------------------------------------ */

gsize
eb_message_from_line_len (const char *buf, gsize len)
{
  if (len < 5 || memcmp (buf, "From ", 5) != 0)
    return 0;
  const char *nl = memchr (buf, '\n', len);
  gsize end = nl ? (gsize) (nl - buf) + 1 : len;
  /* "From :" is a header field (obsolete white space before the colon) */
  gsize p = 5;
  while (p < end && (buf[p] == ' ' || buf[p] == '\t'))
    p++;
  if (p < end && buf[p] == ':')
    return 0;
  return end;
}

EbMessage *
eb_message_new (const char *buf, gsize len)
{
  g_return_val_if_fail (buf != NULL || len == 0, NULL);
  EbMessage *m = g_new0 (EbMessage, 1);
  m->input = buf;
  m->input_len = len;
  m->from_len = eb_message_from_line_len (buf, len);
  m->buf = buf + m->from_len;
  m->len = len - m->from_len;
  return m;
}

void
eb_message_free (EbMessage *message)
{
  if (!message)
    return;
  eb_header_block_free (message->top);
  eb_message_scan_free (message->scan);
  eb_message_leaf_scan_free (message->leaves);
  g_free (message);
}

const EbHeaderBlock *
eb_message_get_top (EbMessage *message)
{
  if (!message->top)
    message->top = eb_header_block_scan (message->buf, 0, message->len);
  return message->top;
}

char *
eb_message_get_field_value (EbMessage *message, const char *name)
{
  const EbHeaderBlock *top = eb_message_get_top (message);
  gint i = eb_header_block_find (top, message->buf, name);
  return i >= 0 ? eb_header_field_unfold (&g_array_index (top->fields, EbHeaderField, i), message->buf)
                : NULL;
}

EbMessageScan *
eb_message_get_scan (EbMessage *message, const EbConfig *config)
{
  if (!message->scan)
    message->scan = scan_message (message->buf, message->len, config, FALSE, message);
  return message->scan;
}

EbLeafScan *
eb_message_get_leaves (EbMessage *message, const EbConfig *config)
{
  if (!message->leaves)
    message->leaves = scan_leaves (message->buf, message->len, config, message);
  return message->leaves;
}


gboolean
eb_message_may_hold_external_body (const char *buf, gsize len)
{
  static const char pat[] = "external-body";   /* the '-' is at index 8 */
  const gsize plen = sizeof pat - 1;
  if (len < plen)
    return FALSE;
  const char *p = buf + 8;
  const char *last = buf + len - (plen - 8);    /* last place the '-' may be */
  while (p <= last) {
    p = memchr (p, '-', (gsize) (last - p) + 1);
    if (!p)
      return FALSE;
    if (g_ascii_strncasecmp (p - 8, pat, plen) == 0)
      return TRUE;
    p++;
  }
  return FALSE;
}

/* ---- the shadow copy GMime parses ---------------------------------------
 *
 * GMime keeps several copies of every header value (its header buffer, the raw
 * value, the unfolded value, each parameter), so a 100 MB folded URL parameter
 * would cost it half a gigabyte. extbody reads parameters from the original
 * bytes itself and needs from GMime only the tree, the media types, the
 * boundaries and the offsets. So GMime parses a shadow copy in which every
 * logical line (a line and its continuation lines) keeps at most
 * EB_SHADOW_FIELD_MAX bytes: the excess is cut, whole continuation lines or the
 * end of a line before its line break; and in which an external-body
 * Content-Type field keeps only its media type (its parameters, a data: URL
 * often the most of a message with references, are cut up to the line break
 * that ends the field: parsing them was most of GMime's time). A cut never
 * removes the start of a line, so no header field, boundary or delimiter line
 * is lost or made up, nor the byte before a line break, where GMime may end a
 * part's content; every offset GMime reports is mapped back to the original
 * bytes through the list of cuts. test-message-shadow and fuzz-inspect hold
 * the walk over the shadow to the walk over the bytes themselves. */

typedef struct {
  gsize at;      /* shadow offset where bytes were removed */
  gsize total;   /* bytes removed up to and including this cut */
} Cut;

static void
add_cut (GArray *cuts, gsize at, gsize n)
{
  if (n == 0)
    return;
  if (cuts->len) {
    Cut *last = &g_array_index (cuts, Cut, cuts->len - 1);
    if (last->at == at) {
      last->total += n;
      return;
    }
  }
  Cut c = { at, (cuts->len ? g_array_index (cuts, Cut, cuts->len - 1).total : 0) + n };
  g_array_append_val (cuts, c);
}

/* Does every logical line of @buf (a line and its continuation lines, line
 * ends included) hold at most EB_SHADOW_FIELD_MAX bytes? Then nothing is cut.
 * From each logical line's start, the last line break before the farthest
 * place the next may start is looked for backwards: a few looks per
 * EB_SHADOW_FIELD_MAX bytes in a body, each byte looked at at most twice. */
static gboolean
lines_short (const char *buf, gsize len)
{
  gsize l = 0;   /* a logical line starts here */
  while (len - l > EB_SHADOW_FIELD_MAX) {
    gsize hi = l + EB_SHADOW_FIELD_MAX, next = 0;   /* the next start is in (l, hi] */
    while (hi > l) {
      const char *nl = memrchr (buf + l, '\n', hi - l);
      if (!nl)
        break;
      gsize i = (gsize) (nl - buf);   /* i + 1 < len: hi < len */
      if (buf[i + 1] != ' ' && buf[i + 1] != '\t') {
        next = i + 1;
        break;
      }
      hi = i;
    }
    if (!next)
      return FALSE;
    l = next;
  }
  return TRUE;
}

/* A stretch [from, to) of the original bytes left out of the shadow. */
typedef struct {
  gsize    from, to;
  gboolean field;   /* an external-body field's parameters (see external_body_drops) */
} Drop;

/* The drops of the EB_SHADOW_FIELD_MAX rule, in order: the excess of every
 * logical line, one drop from where its budget runs out to the end of its
 * last line. Every drop (of either rule) leaves the byte before a line's
 * '\n' and the '\n': GMime ends a part's content one or two bytes before the
 * delimiter line (two when that line ends in CRLF, whatever the line before
 * it ends with), and that place must be a byte the shadow keeps for its
 * offset to map back. A drop never starts a line either: a continuation line
 * dropped whole from its start keeps its first byte, a blank. */
static void
long_line_drops (const char *buf, gsize len, GArray *drops)
{
  gsize p = 0, budget = 0;
  gint open = -1;   /* the drop of the logical line being read, if any */
  while (p < len) {
    const char *nl = memchr (buf + p, '\n', len - p);
    gsize e = nl ? (gsize) (nl - buf) + 1 : len;
    gsize ce = e;
    if (ce > p && buf[ce - 1] == '\n')
      ce--;
    if (ce > p && buf[ce - 1] == '\r')
      ce--;
    /* a drop in this line ends here at the latest */
    gsize lim = nl ? MAX (p, (gsize) (nl - buf) - 1) : len;
    gboolean cont = p > 0 && (buf[p] == ' ' || buf[p] == '\t');
    if (!cont) {
      budget = EB_SHADOW_FIELD_MAX;
      open = -1;
    }
    if (budget == 0) {   /* a continuation line past the budget: it all goes */
      if (open >= 0) {
        Drop *d = &g_array_index (drops, Drop, open);
        d->to = MAX (d->to, lim);
      } else if (lim > p + 1) {
        Drop d = { p + 1, lim, FALSE };
        g_array_append_val (drops, d);
        open = (gint) drops->len - 1;
      }
    } else if (ce - p > budget) {
      if (lim > p + budget) {
        Drop d = { p + budget, lim, FALSE };
        g_array_append_val (drops, d);
        open = (gint) drops->len - 1;
      }
      budget = 0;
    } else {
      budget -= ce - p;
    }
    p = e;
  }
}

/* Where the subtype of an external-body Content-Type field starting at @p
 * ends ("Content-Type:", blanks, "message/external-body", then a ';', a
 * blank, a '(' or the line break), or 0 when the line at @p is no such
 * field. */
static gsize
external_body_type_end (const char *buf, gsize len, gsize p)
{
  static const char name[] = "content-type:", type[] = "message/external-body";
  if (len - p < sizeof name - 1 || g_ascii_strncasecmp (buf + p, name, sizeof name - 1) != 0)
    return 0;
  gsize q = p + sizeof name - 1;
  while (q < len && (buf[q] == ' ' || buf[q] == '\t'))
    q++;
  if (len - q < sizeof type - 1 || g_ascii_strncasecmp (buf + q, type, sizeof type - 1) != 0)
    return 0;
  q += sizeof type - 1;
  if (q < len && buf[q] != ';' && buf[q] != ' ' && buf[q] != '\t' && buf[q] != '('
      && buf[q] != '\r' && buf[q] != '\n')
    return 0;
  return q;
}

/* The drops of the external-body rule, in order: in every line that starts
 * an external-body Content-Type field, everything after the subtype and the
 * byte after it up to the end of the field (its continuation lines included)
 * but the byte before its last '\n' and that '\n' (see long_line_drops). GMime takes nothing from those parameters that extbody uses
 * (the walk asks it only for the media type of an external-body part; the
 * reference is read from the original bytes), and a data: URL in them is
 * most of what a message with references holds. A body line that looks like
 * such a field loses the same: content, whose offsets map back. Found from
 * the "external-body" in the bytes, not by reading every line. */
static void
external_body_drops (const char *buf, gsize len, GArray *drops)
{
  static const char pat[] = "message/external-body";   /* the '-' is at index 16 */
  const gsize plen = sizeof pat - 1;
  if (len < plen)
    return;
  gsize done = 0;   /* no drop may start before this */
  const char *p = buf + 16;
  const char *last = buf + len - (plen - 16);
  while (p <= last) {
    p = memchr (p, '-', (gsize) (last - p) + 1);
    if (!p)
      break;
    gsize at = (gsize) (p - buf) - 16;
    p++;
    if (at < done || g_ascii_strncasecmp (buf + at, pat, plen) != 0)
      continue;
    /* the start of its line: "Content-Type:" and blanks before it */
    gsize ls = at;
    while (ls > 0 && (buf[ls - 1] == ' ' || buf[ls - 1] == '\t'))
      ls--;
    if (ls < 13 || (ls - 13 > 0 && buf[ls - 14] != '\n'))
      continue;
    ls -= 13;
    gsize q = external_body_type_end (buf, len, ls);
    if (q != at + plen)
      continue;
    /* the field's end: its last line's line break */
    gsize e = q;
    for (;;) {
      const char *nl = memchr (buf + e, '\n', len - e);
      if (!nl) {
        e = len;
        break;
      }
      e = (gsize) (nl - buf);
      if (e + 1 < len && (buf[e + 1] == ' ' || buf[e + 1] == '\t')) {
        e++;
        continue;
      }
      e--;   /* the byte before the '\n' stays, see long_line_drops */
      break;
    }
    /* the byte after the subtype stays too (a ';', a blank or a '('), so
     * that the byte kept at the end cannot lengthen the subtype; a field
     * whose first line ends at the subtype keeps its next line's blank */
    gsize from = q + 1;
    if (q < len && (buf[q] == '\r' || buf[q] == '\n')) {
      const char *nl0 = memchr (buf + q, '\n', len - q);
      from = nl0 ? (gsize) (nl0 - buf) + 2 : len;
    }
    if (q < len && e > from) {
      Drop d = { from, e, TRUE };
      g_array_append_val (drops, d);
    }
    done = MAX (e, q);
    p = buf + done + 16 > p ? buf + done + 16 : p;
  }
}

static gint
drop_cmp (gconstpointer a, gconstpointer b)
{
  const Drop *x = a, *y = b;
  return x->from < y->from ? -1 : x->from > y->from;
}

/* A stretch of the shadow: its @len bytes at shadow offset @at are the
 * original's at @from. */
typedef struct {
  gsize at, from, len;
} Seg;

static void
add_seg (GArray *segs, gsize *at, gsize from, gsize len)
{
  if (len == 0)
    return;
  Seg sg = { *at, from, len };
  g_array_append_val (segs, sg);
  *at += len;
}

/* Returns: (transfer full): the stretches of the shadow, or NULL when nothing
 * needs cutting (then GMime reads the original bytes). The shadow is never
 * copied: GMime reads it through an EbGapStream over the original bytes. */
static GArray *
make_shadow (const char *buf, gsize len, GArray *cuts)
{
  g_autoptr (GArray) drops = g_array_new (FALSE, FALSE, sizeof (Drop));
  external_body_drops (buf, len, drops);
  if (!lines_short (buf, len)) {
    long_line_drops (buf, len, drops);
    g_array_sort (drops, drop_cmp);
  }
  if (drops->len == 0)
    return NULL;
  GArray *segs = g_array_new (FALSE, FALSE, sizeof (Seg));
  gsize kept_to = 0;    /* buf[kept_to, ...) is not yet in the shadow */
  gsize at = 0;         /* the shadow's length so far */
  gsize field_to = 0;   /* the end of the last external-body field's drop */
  for (guint i = 0; i < drops->len; i++) {
    Drop d = g_array_index (drops, Drop, i);
    /* a long line's drop inside an external-body field's is that field's
     * (the line break that ends the field stays) */
    if (d.to <= kept_to || (!d.field && d.from < field_to))
      continue;
    if (d.field)
      field_to = d.to;
    d.from = MAX (d.from, kept_to);
    add_seg (segs, &at, kept_to, d.from - kept_to);
    add_cut (cuts, at, d.to - d.from);
    kept_to = d.to;
  }
  add_seg (segs, &at, kept_to, len - kept_to);
  return segs;
}

/* ---- EbGapStream: the shadow as GMime reads it ------------------------------
 *
 * A read-only, seekable GMimeStream over the original bytes that leaves the
 * cut stretches out, so that the shadow costs no copy. Its substreams (GMime
 * makes one per part's content) share the bytes and the stretches. */
typedef struct {
  GMimeStream  parent;
  const char  *buf;    /* the original bytes, not owned */
  GArray      *segs;   /* (element-type Seg) shared, in order */
  gint64       total;  /* the shadow's length */
} EbGapStream;

typedef struct {
  GMimeStreamClass parent_class;
} EbGapStreamClass;

G_DEFINE_TYPE (EbGapStream, eb_gap_stream, GMIME_TYPE_STREAM)

static gint64
gap_end (GMimeStream *stream)
{
  return stream->bound_end != -1 ? stream->bound_end : ((EbGapStream *) stream)->total;
}

static ssize_t
gap_read (GMimeStream *stream, char *out, size_t len)
{
  EbGapStream *g = (EbGapStream *) stream;
  gint64 end = gap_end (stream);
  if (stream->position >= end)
    return 0;
  gsize want = (gsize) MIN ((gint64) len, end - stream->position), got = 0;
  /* the stretch holding the position */
  guint lo = 0, hi = g->segs->len;
  while (hi - lo > 1) {
    guint mid = (lo + hi) / 2;
    if (g_array_index (g->segs, Seg, mid).at <= (gsize) stream->position)
      lo = mid;
    else
      hi = mid;
  }
  for (guint i = lo; i < g->segs->len && got < want; i++) {
    const Seg *sg = &g_array_index (g->segs, Seg, i);
    gsize pos = (gsize) stream->position + got;
    if (pos < sg->at || pos >= sg->at + sg->len)
      continue;
    gsize n = MIN (want - got, sg->at + sg->len - pos);
    memcpy (out + got, g->buf + sg->from + (pos - sg->at), n);
    got += n;
  }
  stream->position += (gint64) got;
  return (ssize_t) got;
}

static ssize_t
gap_write (GMimeStream *stream, const char *in, size_t len)
{
  return -1;
}

static int
gap_flush (GMimeStream *stream)
{
  return 0;
}

static int
gap_close (GMimeStream *stream)
{
  return 0;
}

static gboolean
gap_eos (GMimeStream *stream)
{
  return stream->position >= gap_end (stream);
}

static int
gap_reset (GMimeStream *stream)
{
  stream->position = stream->bound_start;
  return 0;
}

static gint64
gap_seek (GMimeStream *stream, gint64 offset, GMimeSeekWhence whence)
{
  gint64 real = whence == GMIME_STREAM_SEEK_SET ? offset
              : whence == GMIME_STREAM_SEEK_CUR ? stream->position + offset
              : gap_end (stream) + offset;
  if (real < stream->bound_start || real > gap_end (stream))
    return -1;
  stream->position = real;
  return real;
}

static gint64
gap_tell (GMimeStream *stream)
{
  return stream->position;
}

static gint64
gap_length (GMimeStream *stream)
{
  return gap_end (stream) - stream->bound_start;
}

static GMimeStream *eb_gap_stream_new (const char *buf, GArray *segs, gint64 start, gint64 end);

static GMimeStream *
gap_substream (GMimeStream *stream, gint64 start, gint64 end)
{
  EbGapStream *g = (EbGapStream *) stream;
  return eb_gap_stream_new (g->buf, g->segs, start, end);
}

static void
gap_finalize (GObject *object)
{
  g_array_unref (((EbGapStream *) object)->segs);
  G_OBJECT_CLASS (eb_gap_stream_parent_class)->finalize (object);
}

static void
eb_gap_stream_class_init (EbGapStreamClass *klass)
{
  GMimeStreamClass *sc = GMIME_STREAM_CLASS (klass);
  G_OBJECT_CLASS (klass)->finalize = gap_finalize;
  sc->read = gap_read;
  sc->write = gap_write;
  sc->flush = gap_flush;
  sc->close = gap_close;
  sc->eos = gap_eos;
  sc->reset = gap_reset;
  sc->seek = gap_seek;
  sc->tell = gap_tell;
  sc->length = gap_length;
  sc->substream = gap_substream;
}

static void
eb_gap_stream_init (EbGapStream *g)
{
}

/* A stream of the shadow made of @segs (referenced) over @buf, bounded
 * [@start, @end) (@end -1: its end). */
static GMimeStream *
eb_gap_stream_new (const char *buf, GArray *segs, gint64 start, gint64 end)
{
  EbGapStream *g = g_object_new (eb_gap_stream_get_type (), NULL);
  g->buf = buf;
  g->segs = g_array_ref (segs);
  const Seg *last = segs->len ? &g_array_index (segs, Seg, segs->len - 1) : NULL;
  g->total = last ? (gint64) (last->at + last->len) : 0;
  g_mime_stream_construct (GMIME_STREAM (g), start, end);
  return GMIME_STREAM (g);
}

/* The original offset of shadow offset @off. */
static gint64
map_offset (GArray *cuts, gint64 off)
{
  if (off < 0 || cuts->len == 0)
    return off;
  guint lo = 0, hi = cuts->len;   /* first cut with at > off */
  while (lo < hi) {
    guint mid = (lo + hi) / 2;
    if (g_array_index (cuts, Cut, mid).at <= (gsize) off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo == 0 ? off : off + (gint64) g_array_index (cuts, Cut, lo - 1).total;
}

void
eb_message_scan_free (EbMessageScan *scan)
{
  if (!scan)
    return;
  g_ptr_array_unref (scan->refs);
  g_free (scan);
}

typedef struct {
  GMimeObject  *obj;
  GMimeMessage *msg;     /* set when obj is the body of this message */
  char         *path;    /* the entity's path; "" for a top-level multipart */
  guint         depth;
  GPtrArray    *bounds;  /* enclosing boundaries, nearest first (shared) */
  gboolean      sealed;  /* inside a signed or encrypted entity */
  char         *parent_type;  /* (nullable) the enclosing multipart's type, lowercase;
                                 NULL for the body of a message (EbLeaf parent_type) */
  gboolean      in_related;   /* somewhere under a multipart/related */
  /* the fallback shape (see is_fallback_alternative): set on the reference */
  GMimeObject  *alt;         /* the multipart/alternative it is the last part of */
  GMimeMessage *alt_msg;     /* set when that alternative is the body of this message */
  GPtrArray    *alt_bounds;  /* the boundaries enclosing that alternative */
} Item;

/* RFC 2046 5.1.1: boundary := 0*69<bchars> bcharsnospace */
static gboolean
boundary_valid (const char *b)
{
  gsize n = b ? strlen (b) : 0;
  if (n < 1 || n > 70 || b[n - 1] == ' ')
    return FALSE;
  for (gsize i = 0; i < n; i++)
    if (!g_ascii_isalnum (b[i]) && !strchr ("'()+_,-./:=? ", b[i]))
      return FALSE;
  return TRUE;
}

/* Signed or encrypted: changing anything inside breaks the signature or the
 * encryption (RFC 1847, RFC 3156, RFC 8551). */
static gboolean
is_sealed (GMimeObject *obj)
{
  GMimeContentType *ct = g_mime_object_get_content_type (obj);
  return ct && (g_mime_content_type_is_type (ct, "multipart", "signed")
                || g_mime_content_type_is_type (ct, "multipart", "encrypted")
                || g_mime_content_type_is_type (ct, "application", "pkcs7-mime")
                || g_mime_content_type_is_type (ct, "application", "x-pkcs7-mime")
                || g_mime_content_type_is_type (ct, "application", "pgp-encrypted"));
}

static gint64
min_header_offset (GMimeObject *obj, gint64 best)
{
  GMimeHeaderList *hl = g_mime_object_get_header_list (obj);
  int n = hl ? g_mime_header_list_get_count (hl) : 0;
  for (int i = 0; i < n; i++) {
    gint64 off = g_mime_header_get_offset (g_mime_header_list_get_header_at (hl, i));
    if (off >= 0 && (best < 0 || off < best))
      best = off;
  }
  return best;
}

/* Does a delimiter line for one of @bounds start right after the line break at @p? */
static gboolean
delimiter_follows (const char *buf, gsize len, gsize p, GPtrArray *bounds)
{
  gsize q;
  if (p + 1 <= len && buf[p] == '\n')
    q = p + 1;
  else if (p + 2 <= len && buf[p] == '\r' && buf[p + 1] == '\n')
    q = p + 2;
  else
    return FALSE;
  if (len - q < 2 || buf[q] != '-' || buf[q + 1] != '-')
    return FALSE;
  for (guint i = 0; i < bounds->len; i++) {
    const char *b = g_ptr_array_index (bounds, i);
    gsize bl = strlen (b);
    if (len - q - 2 >= bl && memcmp (buf + q + 2, b, bl) == 0)
      return TRUE;
  }
  return FALSE;
}

/* The true end of an entity whose content GMime ends at @e: the line break
 * before the delimiter that follows, or the end of the input. GMime 3.2.13 can
 * end a content one byte short when line endings are mixed, so the delimiter
 * is looked for at @e and the two bytes after it. When the content is empty
 * (@empty: the blank line after the header is also the line break of the
 * delimiter), the entity ends before that line break, up to two bytes before @e. */
static gboolean
locate_end (const char *buf, gsize len, gint64 e, gboolean empty, GPtrArray *bounds, gsize *end)
{
  if (e < 0 || (guint64) e > len)
    return FALSE;
  if ((gsize) e == len) {
    *end = len;
    return TRUE;
  }
  gsize from = (gsize) e;
  if (empty)
    from = from >= 2 ? from - 2 : 0;
  /* GMime 3.2.13 ends the last content of a CR LF message whose close
   * delimiter is its last line, without a line break, after the CR: the
   * line break before the delimiter is CR LF all the same (RFC 2046 5.1.1) */
  else if (from >= 1 && buf[from - 1] == '\r' && buf[from] == '\n'
           && delimiter_follows (buf, len, from - 1, bounds))
    from--;
  for (gsize p = from; p <= (gsize) e + 2 && p < len; p++) {
    if (delimiter_follows (buf, len, p, bounds)) {
      *end = p;
      return TRUE;
    }
  }
  return FALSE;
}

static char *
child_path (const char *parent, int i)
{
  return *parent ? g_strdup_printf ("%s.%d", parent, i + 1) : g_strdup_printf ("%d", i + 1);
}

static gboolean
is_external_body (GMimeObject *obj)
{
  GMimeContentType *ct = g_mime_object_get_content_type (obj);
  return ct && g_mime_content_type_is_type (ct, "message", "external-body");
}

/* The fallback shape `externalize --fallback` writes: a multipart/alternative
 * of exactly two parts, a text/plain leaf (the link, for readers that do not
 * show external-body parts) and then a message/external-body (RFC 2046 5.1.4:
 * the last alternative is the preferred one). */
static gboolean
is_fallback_alternative (GMimeObject *obj)
{
  GMimeContentType *ct = g_mime_object_get_content_type (obj);
  if (!GMIME_IS_MULTIPART (obj) || !ct || !g_mime_content_type_is_type (ct, "multipart", "alternative"))
    return FALSE;
  GMimeMultipart *mp = GMIME_MULTIPART (obj);
  if (g_mime_multipart_get_count (mp) != 2)
    return FALSE;
  GMimeObject *text = g_mime_multipart_get_part (mp, 0);
  GMimeObject *ref = g_mime_multipart_get_part (mp, 1);
  GMimeContentType *tt = g_mime_object_get_content_type (text);
  return GMIME_IS_PART (text) && tt && g_mime_content_type_is_type (tt, "text", "plain")
         && GMIME_IS_PART (ref) && is_external_body (ref);
}

static gint64
max_header_offset (GMimeObject *obj, gint64 best)
{
  GMimeHeaderList *hl = g_mime_object_get_header_list (obj);
  int n = hl ? g_mime_header_list_get_count (hl) : 0;
  for (int i = 0; i < n; i++)
    best = MAX (best, g_mime_header_get_offset (g_mime_header_list_get_header_at (hl, i)));
  return best;
}

/* Does the line at @q start with "--@b"? */
static gboolean
dash_boundary_at (const char *buf, gsize len, gsize q, const char *b)
{
  gsize bl = strlen (b);
  return len - q >= bl + 2 && buf[q] == '-' && buf[q + 1] == '-' && memcmp (buf + q + 2, b, bl) == 0;
}

/* The boundary `externalize --fallback` gives its alternative: "=_extbody_"
 * and 24 lowercase hex digits, after a number when that one was taken. */
static gboolean
fallback_boundary (const char *b)
{
  while (g_ascii_isdigit (*b))
    b++;
  if (!g_str_has_prefix (b, "=_extbody_"))
    return FALSE;
  b += strlen ("=_extbody_");
  for (guint i = 0; i < 24; i++)
    if (!g_ascii_isdigit (b[i]) && !(b[i] >= 'a' && b[i] <= 'f'))
      return FALSE;
  return b[24] == '\0';
}

/* Is the multipart/alternative whose header is @blk, with boundary @b, one that
 * extbody wrote, its text part the notice extbody wrote there? Its boundary has
 * extbody's form, its header holds one EB_FALLBACK_FIELD, "notice-sha256=" and
 * a digest, and the text part, from @text_start (the line after the first
 * delimiter) to the line break before the delimiter line that ends before
 * @ref_start, decodes (by its own Content-Transfer-Encoding) to a text whose
 * eb_digest_notice_hex() is that digest. A stranger's alternative with a
 * person's words in it has no such mark, and is never unwrapped. */
static gboolean
fallback_marked (const char *buf, const EbHeaderBlock *blk, const char *b, gsize text_start,
                 gsize ref_start)
{
  if (!fallback_boundary (b))
    return FALSE;
  gint at = -1;
  for (guint i = 0; i < blk->fields->len; i++)
    if (eb_header_field_is (&g_array_index (blk->fields, EbHeaderField, i), buf, EB_FALLBACK_FIELD)) {
      if (at >= 0)
        return FALSE;   /* two: not what extbody writes */
      at = (gint) i;
    }
  if (at < 0)
    return FALSE;
  g_autofree char *mark = eb_header_field_unfold (&g_array_index (blk->fields, EbHeaderField, at), buf);
  static const char prefix[] = "notice-sha256=";
  if (!g_str_has_prefix (mark, prefix) || strlen (mark) != strlen (prefix) + 64)
    return FALSE;
  /* the delimiter line before the reference's header, and the line break
   * before it (it belongs to the delimiter) */
  if (ref_start < 2 || buf[ref_start - 1] != '\n')
    return FALSE;
  gsize ls = ref_start - 1;
  while (ls > text_start && buf[ls - 1] != '\n')
    ls--;
  if (ls <= text_start || !dash_boundary_at (buf, ref_start, ls, b))
    return FALSE;
  gsize text_end = ls - 1;
  if (text_end > text_start && buf[text_end - 1] == '\r')
    text_end--;
  if (text_end - text_start > EB_FALLBACK_NOTICE_MAX)
    return FALSE;
  g_autoptr (EbHeaderBlock) th = eb_header_block_scan (buf, text_start, text_end);
  if (!th->blank)
    return FALSE;
  gint ci = eb_header_block_find (th, buf, "Content-Transfer-Encoding");
  g_autofree char *cte = ci >= 0 ? eb_header_field_unfold (&g_array_index (th->fields, EbHeaderField, ci), buf)
                                 : NULL;
  EbCte enc = eb_transfer_parse_cte (cte);
  if (enc == EB_CTE_UNKNOWN)
    return FALSE;
  gsize body = MIN (th->body, text_end);   /* an empty text: its blank line is the break */
  g_autoptr (GBytes) raw = g_bytes_new_static (buf + body, text_end - body);
  g_autoptr (GBytes) text = eb_transfer_decode (enc, raw, NULL);
  if (!text)
    return FALSE;
  gsize tl = 0;
  const guint8 *t = g_bytes_get_data (text, &tl);
  g_autofree char *got = eb_digest_notice_hex (t, tl);
  return g_ascii_strcasecmp (got, mark + strlen (prefix)) == 0;
}

/* The header block of @buf from @start up to @limit. The message header's
 * (@start 0) is the message's one reading (eb_message_get_top; @message
 * nullable: none) when that reading ends within @limit, copied: the block
 * goes with the reference or leaf, whose resolution may change it. */
static EbHeaderBlock *
header_block (EbMessage *message, const char *buf, gsize start, gsize limit)
{
  EbHeaderBlock *blk = start == 0 && message ? eb_header_block_within (eb_message_get_top (message), limit)
                                             : NULL;
  return blk ? blk : eb_header_block_scan (buf, start, limit);
}

/* For a located reference of the fallback shape (@it->alt set): find the
 * alternative entity in the bytes, from its header block to the end of its
 * epilogue, and check it: its header block ends in a blank line before its first
 * part and holds every header GMime read for it; the reference is followed by the
 * alternative's close delimiter (not another delimiter that GMime took as its
 * end); the epilogue runs to the next enclosing delimiter (or the end of the
 * input for a message with no enclosing multipart). Anything else: the shape is
 * not recorded and the reference alone is replaced, as any other. */
static void
locate_alt (EbRef *ref, const Item *it, const char *buf, gsize len, GArray *cuts,
            EbMessage *message)
{
  if (!ref->located || !it->alt || !it->alt_bounds || it->bounds->len == 0)
    return;
  const char *b = g_ptr_array_index (it->bounds, 0);   /* the alternative's own boundary */
  gint64 hs = min_header_offset (it->alt, -1);
  gint64 hmax = max_header_offset (it->alt, -1);
  if (it->alt_msg) {
    hs = min_header_offset (GMIME_OBJECT (it->alt_msg), hs);
    hmax = max_header_offset (GMIME_OBJECT (it->alt_msg), hmax);
  }
  hs = map_offset (cuts, hs);
  hmax = map_offset (cuts, hmax);
  if (hs < 0 || hmax < hs || (gsize) hs >= ref->block_start || (hs > 0 && buf[hs - 1] != '\n'))
    return;
  g_autoptr (EbHeaderBlock) blk = header_block (message, buf, (gsize) hs, ref->block_start);
  if (!blk->blank || blk->fields->len == 0 || (gsize) hmax >= blk->end)
    return;
  /* the first delimiter at the start of a line after the header; the text
   * part starts on the line after it */
  gboolean first = FALSE;
  gsize text_start = 0;
  for (gsize q = blk->body; q < ref->block_start && !first; ) {
    if (dash_boundary_at (buf, ref->block_start, q, b))
      first = TRUE;
    const char *nl = memchr (buf + q, '\n', ref->block_start - q);
    if (!nl)
      break;
    q = (gsize) (nl - buf) + 1;
    text_start = q;
  }
  if (!first || !fallback_marked (buf, blk, b, text_start, ref->block_start))
    return;
  /* the close delimiter right after the reference */
  gsize q = ref->end;
  if (q < len && buf[q] == '\r')
    q++;
  if (q >= len || buf[q] != '\n')
    return;
  q++;
  if (!dash_boundary_at (buf, len, q, b) || len - q < strlen (b) + 4
      || memcmp (buf + q + 2 + strlen (b), "--", 2) != 0)
    return;
  /* ... which no enclosing boundary would also take as its own */
  for (guint i = 0; i < it->alt_bounds->len; i++)
    if (dash_boundary_at (buf, len, q, g_ptr_array_index (it->alt_bounds, i)))
      return;
  /* the epilogue: up to the line break before the next enclosing delimiter */
  gsize end = len;
  if (it->alt_bounds->len) {
    gboolean found = FALSE;
    const char *nl;
    for (gsize p = q; !found && (nl = memchr (buf + p, '\n', len - p)) != NULL; ) {
      gsize n = (gsize) (nl - buf);
      gsize at = n > q && buf[n - 1] == '\r' ? n - 1 : n;
      if (delimiter_follows (buf, len, at, it->alt_bounds)) {
        end = at;
        found = TRUE;
      }
      p = n + 1;
    }
    if (!found)
      return;
  }
  g_autofree char *path = g_strdup (ref->path);
  char *dot = strrchr (path, '.');
  if (dot)
    *dot = '\0';
  else
    *path = '\0';
  ref->alt = TRUE;
  ref->alt_path = g_steal_pointer (&path);
  ref->alt_is_root = it->alt_msg != NULL;
  ref->alt_start = (gsize) hs;
  ref->alt_end = end;
  ref->alt_outer = g_steal_pointer (&blk);
}

static void
locate (EbRef *ref, const Item *it, const char *buf, gsize len, GArray *cuts, EbMessage *message)
{
  GMimePart *part = GMIME_PART (it->obj);
  GMimeDataWrapper *dw = g_mime_part_get_content (part);
  GMimeStream *st = dw ? g_mime_data_wrapper_get_stream (dw) : NULL;
  gint64 hs = min_header_offset (it->obj, -1);
  if (it->msg)
    hs = min_header_offset (GMIME_OBJECT (it->msg), hs);
  if (!st)
    return;
  hs = map_offset (cuts, hs);
  gint64 bs = map_offset (cuts, st->bound_start);
  gint64 be = map_offset (cuts, st->bound_end);
  if (hs < 0 || bs < hs || (guint64) bs > len)
    return;
  gsize end = 0;
  gboolean empty = be == bs;
  if (!locate_end (buf, len, be, empty, it->bounds, &end))
    return;
  gsize content = (gsize) bs;
  if (end < content) {
    if (!empty)
      return;
    content = end;   /* no content at all: the entity is its header */
  }
  if (end < (gsize) hs)
    return;
  /* The header block must run exactly up to the content. */
  g_autoptr (EbHeaderBlock) blk = header_block (message, buf, (gsize) hs, content);
  if (blk->body != content || blk->fields->len == 0)
    return;
  if (hs > 0 && buf[hs - 1] != '\n')
    return;
  ref->block_start = (gsize) hs;
  ref->content_start = content;
  ref->end = end;
  ref->located = TRUE;
  /* kept: eb_extref_read (and externalize) read this very block */
  eb_header_block_free (ref->outer);
  ref->outer = g_steal_pointer (&blk);
}

/* A byte array around bytes it does not own. */
typedef GByteArray EbBorrowedBytes;

static void
borrowed_bytes_free (EbBorrowedBytes *a)
{
  g_byte_array_free (a, FALSE);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbBorrowedBytes, borrowed_bytes_free)

/* GMime's parse of a message, kept for the walk: the cuts of its shadow (see
 * make_shadow; GMime reads it through an EbGapStream) and what GMime made.
 * Without a shadow GMime reads the bytes
 * where they are, not a copy: a byte array around them that the stream does
 * not own, let go (not the bytes) after everything GMime made. */
typedef struct {
  GArray          *cuts;
  EbBorrowedBytes *borrowed;
  GMimeStream     *stream;
  GMimeParser     *parser;
  GMimeMessage    *message;   /* NULL: GMime made no message of it */
} Parsed;

static void
parsed_clear (Parsed *p)
{
  g_clear_object (&p->message);
  g_clear_object (&p->parser);
  g_clear_object (&p->stream);
  g_clear_pointer (&p->borrowed, borrowed_bytes_free);
  g_clear_pointer (&p->cuts, g_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Parsed, parsed_clear)

static void
parse (Parsed *p, const char *buf, gsize len, gboolean shadow)
{
  p->cuts = g_array_new (FALSE, FALSE, sizeof (Cut));
  g_autoptr (GArray) segs = shadow ? make_shadow (buf, len, p->cuts) : NULL;
  if (segs) {
    p->stream = eb_gap_stream_new (buf, segs, 0, -1);
  } else {
    p->borrowed = g_byte_array_new_take ((guint8 *) (gpointer) buf, len);
    p->stream = g_mime_stream_mem_new_with_byte_array (p->borrowed);
    g_mime_stream_mem_set_owner (GMIME_STREAM_MEM (p->stream), FALSE);
  }
  p->parser = g_mime_parser_new_with_stream (p->stream);
  g_mime_parser_set_persist_stream (p->parser, TRUE);
  g_mime_parser_set_format (p->parser, GMIME_FORMAT_MESSAGE);
  p->message = g_mime_parser_construct_message (p->parser, NULL);
}

static char *
type_of (GMimeObject *obj)
{
  GMimeContentType *ct = g_mime_object_get_content_type (obj);
  const char *t = ct ? g_mime_content_type_get_media_type (ct) : NULL;
  const char *s = ct ? g_mime_content_type_get_media_subtype (ct) : NULL;
  g_autofree char *both = g_strdup_printf ("%s/%s", t && *t ? t : "text", s && *s ? s : "plain");
  return g_ascii_strdown (both, -1);
}

/* The parts @it holds, pushed on @stack to be walked in order: a
 * multipart's (with a valid boundary, which @all_bounds keeps) or a
 * message's body. FALSE when @it holds no parts of its own (a leaf).
 * A multipart's parts get its type as their parent_type and are in_related
 * under a multipart/related; a message's body has no parent_type and is
 * in_related where the message/rfc822 part is. */
static gboolean
push_children (GArray *stack, GPtrArray *all_bounds, const Item *item)
{
  Item it = *item;
  /* Not g_mime_multipart_get_boundary: on a multipart without a boundary
   * parameter it invents one and re-encodes the Content-Type header, and
   * GMime 3.2's parameter encoder never ends on some parameter names (found
   * by fuzz-rewrite).  This is a plain lookup.  A multipart whose boundary is
   * missing, empty or not RFC 2046 syntax is a leaf: readers disagree on
   * where its parts are. */
  const char *b = GMIME_IS_MULTIPART (it.obj)
                  ? g_mime_object_get_content_type_parameter (it.obj, "boundary") : NULL;
  if (GMIME_IS_MULTIPART (it.obj) && boundary_valid (b)) {
    GMimeMultipart *mp = GMIME_MULTIPART (it.obj);
    GPtrArray *bounds = g_ptr_array_new_with_free_func (g_free);
    g_ptr_array_add (bounds, g_strdup (b));
    for (guint i = 0; i < it.bounds->len; i++)
      g_ptr_array_add (bounds, g_strdup (g_ptr_array_index (it.bounds, i)));
    g_ptr_array_add (all_bounds, bounds);
    g_autofree char *mtype = type_of (it.obj);
    gboolean related = it.in_related || strcmp (mtype, "multipart/related") == 0;
    int n = g_mime_multipart_get_count (mp);
    for (int i = n - 1; i >= 0; i--) {   /* pushed in reverse: walked in order */
      GMimeObject *c = g_mime_multipart_get_part (mp, i);
      Item child = { c, NULL, child_path (it.path, i), it.depth + 1, bounds,
                     it.sealed || is_sealed (c), g_strdup (mtype), related };
      if (i == 1 && is_fallback_alternative (it.obj)) {
        child.alt = it.obj;
        child.alt_msg = it.msg;
        child.alt_bounds = it.bounds;
      }
      g_array_append_val (stack, child);
    }
    return TRUE;
  }
  if (GMIME_IS_MESSAGE_PART (it.obj)) {
    GMimeMessage *inner = g_mime_message_part_get_message (GMIME_MESSAGE_PART (it.obj));
    GMimeObject *ib = inner ? g_mime_message_get_mime_part (inner) : NULL;
    if (ib) {
      char *p = GMIME_IS_MULTIPART (ib) ? g_strdup (it.path) : child_path (it.path, 0);
      Item child = { ib, inner, p, it.depth + 1, it.bounds, it.sealed || is_sealed (ib), NULL,
                     it.in_related };
      g_array_append_val (stack, child);
    }
    return TRUE;
  }
  return FALSE;
}

static void
item_clear (Item *it)
{
  g_clear_pointer (&it->path, g_free);
  g_clear_pointer (&it->parent_type, g_free);
}

/* The reference an external-body part @it makes, the @n_refs'th of its
 * message: where it is, why the walk leaves it if it does, and what its
 * headers say. */
static EbRef *
ref_of_item (const Item *it, guint n_refs, const char *buf, gsize len, GArray *cuts,
             EbMessage *message, const EbConfig *config)
{
  EbRef *ref = eb_extref_new ();
  ref->path = g_strdup (it->path);
  ref->depth = it->depth;
  ref->is_root = it->msg != NULL;
  for (guint i = 0; i < it->bounds->len; i++)
    g_ptr_array_add (ref->boundaries, g_strdup (g_ptr_array_index (it->bounds, i)));
  ref->walk_reason = EB_REASON_RESOLVED;
  if (it->sealed)
    ref->walk_reason = EB_REASON_SIGNED;
  else if (it->depth > config->max_nesting_depth)
    ref->walk_reason = EB_REASON_TOO_DEEP;
  else if (n_refs >= config->max_references)
    ref->walk_reason = EB_REASON_TOO_MANY_REFS;
  locate (ref, it, buf, len, cuts, message);
  locate_alt (ref, it, buf, len, cuts, message);
  if (ref->located)
    eb_extref_read (ref, buf, len);
  else
    ref->read_reason = EB_REASON_UNLOCATABLE;
  return ref;
}

/* The leaf a part @it is (externalize's walk): where it is, whether it is
 * past max_nesting_depth (externalize leaves a signed part itself, by its
 * sealed, so only TOO_DEEP is marked here) and what GMime read of its header.
 * Takes @it's parent_type. */
static EbLeaf *
leaf_of_item (Item *it, const char *buf, gsize len, GArray *cuts, EbMessage *message,
              const EbConfig *config)
{
  EbLeaf *leaf = g_new0 (EbLeaf, 1);
  EbRef *ref = leaf->ref = eb_extref_new ();
  ref->path = g_strdup (it->path);
  ref->depth = it->depth;
  ref->is_root = it->msg != NULL;
  for (guint i = 0; i < it->bounds->len; i++)
    g_ptr_array_add (ref->boundaries, g_strdup (g_ptr_array_index (it->bounds, i)));
  ref->walk_reason = it->depth > config->max_nesting_depth ? EB_REASON_TOO_DEEP : EB_REASON_RESOLVED;
  locate (ref, it, buf, len, cuts, message);
  leaf->type = type_of (it->obj);
  leaf->parent_type = g_steal_pointer (&it->parent_type);
  leaf->sealed = it->sealed;
  leaf->in_related = it->in_related;
  GMimeContentDisposition *cd = g_mime_object_get_content_disposition (it->obj);
  leaf->attachment = cd && g_mime_content_disposition_is_attachment (cd);
  leaf->filename = g_strdup (g_mime_part_get_filename (GMIME_PART (it->obj)));
  const char *cte = g_mime_object_get_header (it->obj, "Content-Transfer-Encoding");
  leaf->cte = cte ? g_strstrip (g_strdup (cte)) : NULL;
  return leaf;
}

/* What a walk collects, and what it found on the way. */
typedef struct {
  GPtrArray *refs;     /* (nullable) the external-body parts go here (EbRef) */
  GPtrArray *leaves;   /* (nullable) every other leaf part goes here (EbLeaf) */
  guint      n_parts;  /* entities walked */
  EbReason   reason;   /* RESOLVED, UNPARSEABLE or TOO_MANY_PARTS */
  gboolean   unshadowed;   /* GMime is shown the bytes themselves (tests) */
  EbMessage *message;  /* (nullable) the message walked: its header's one reading
                          serves an entity whose header is the message header */
} Walk;

/* The one walk of eb_message_scan() and eb_message_scan_leaves(): parse
 * @buf, then walk GMime's tree in document order, iteratively (a stack of
 * Items, no recursion), every entity counted against max_parts; past it the
 * walk stops with reason TOO_MANY_PARTS. A part that holds no parts of its
 * own is collected as a reference or as a leaf, as @w asks. */
static void
walk (Walk *w, const char *buf, gsize len, const EbConfig *config)
{
  w->reason = EB_REASON_RESOLVED;
  g_auto (Parsed) parsed = { 0 };
  parse (&parsed, buf, len, !w->unshadowed);
  GArray *cuts = parsed.cuts;
  GMimeMessage *message = parsed.message;
  if (!message || !g_mime_message_get_mime_part (message)) {
    w->reason = EB_REASON_UNPARSEABLE;
    return;
  }

  GPtrArray *all_bounds = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  GArray *stack = g_array_new (FALSE, FALSE, sizeof (Item));
  GPtrArray *top_bounds = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (all_bounds, top_bounds);
  GMimeObject *body = g_mime_message_get_mime_part (message);
  Item root = { body, message, g_strdup (GMIME_IS_MULTIPART (body) ? "" : "1"), 0, top_bounds,
                is_sealed (body), NULL, FALSE };
  g_array_append_val (stack, root);

  while (stack->len > 0) {
    Item it = g_array_index (stack, Item, stack->len - 1);
    g_array_set_size (stack, stack->len - 1);

    if (++w->n_parts > config->max_parts) {
      w->reason = EB_REASON_TOO_MANY_PARTS;
      item_clear (&it);
      while (stack->len > 0) {
        item_clear (&g_array_index (stack, Item, stack->len - 1));
        g_array_set_size (stack, stack->len - 1);
      }
      break;
    }

    if (!push_children (stack, all_bounds, &it) && GMIME_IS_PART (it.obj)) {
      if (is_external_body (it.obj)) {
        if (w->refs)
          g_ptr_array_add (w->refs, ref_of_item (&it, w->refs->len, buf, len, cuts, w->message, config));
      } else if (w->leaves) {
        g_ptr_array_add (w->leaves, leaf_of_item (&it, buf, len, cuts, w->message, config));
      }
    }
    item_clear (&it);
  }

  g_array_unref (stack);
  g_ptr_array_unref (all_bounds);
}

static EbMessageScan *
scan_message (const char *buf, gsize len, const EbConfig *config, gboolean unshadowed,
              EbMessage *message)
{
  EbMessageScan *scan = g_new0 (EbMessageScan, 1);
  scan->refs = g_ptr_array_new_with_free_func ((GDestroyNotify) eb_extref_free);
  scan->eol = eb_header_eol_at (buf, len, 0);
  Walk w = { scan->refs, NULL, 0, EB_REASON_RESOLVED, unshadowed, message };
  walk (&w, buf, len, config);
  scan->n_parts = w.n_parts;
  scan->reason = w.reason;
  /* a message left whole leaves every reference in it, for that reason */
  if (scan->reason != EB_REASON_RESOLVED)
    for (guint i = 0; i < scan->refs->len; i++)
      ((EbRef *) g_ptr_array_index (scan->refs, i))->walk_reason = scan->reason;
  return scan;
}

EbMessageScan *
eb_message_scan (const char *buf, gsize len, const EbConfig *config)
{
  return scan_message (buf, len, config, FALSE, NULL);
}

EbMessageScan *
eb_message_scan_unshadowed (const char *buf, gsize len, const EbConfig *config)
{
  return scan_message (buf, len, config, TRUE, NULL);
}

/* ---- every leaf (externalize) ---------------------------------------------- */

static void
leaf_free (EbLeaf *leaf)
{
  if (!leaf)
    return;
  eb_extref_free (leaf->ref);
  g_free (leaf->type);
  g_free (leaf->parent_type);
  g_free (leaf->filename);
  g_free (leaf->cte);
  g_free (leaf);
}

void
eb_message_leaf_scan_free (EbLeafScan *scan)
{
  if (!scan)
    return;
  g_ptr_array_unref (scan->leaves);
  g_free (scan);
}

static EbLeafScan *
scan_leaves (const char *buf, gsize len, const EbConfig *config, EbMessage *message)
{
  EbLeafScan *scan = g_new0 (EbLeafScan, 1);
  scan->leaves = g_ptr_array_new_with_free_func ((GDestroyNotify) leaf_free);
  scan->eol = eb_header_eol_at (buf, len, 0);
  Walk w = { NULL, scan->leaves, 0, EB_REASON_RESOLVED, FALSE, message };
  walk (&w, buf, len, config);
  scan->n_parts = w.n_parts;
  scan->reason = w.reason;
  return scan;
}

EbLeafScan *
eb_message_scan_leaves (const char *buf, gsize len, const EbConfig *config)
{
  return scan_leaves (buf, len, config, NULL);
}
