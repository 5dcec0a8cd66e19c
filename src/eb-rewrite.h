/* eb-rewrite.h - one message in, one message out; never re-serialized.
 *
 * The pre-check (no "external-body" anywhere: copy out untouched, no parse), the
 * size limit, the GMime parse and walk (eb-message), a decision per reference
 * (eb-resolve), and the splice: every byte outside a replaced entity is copied
 * from the input verbatim; each replaced entity is written as its new header and
 * its data encoded for transport. A message in which nothing is resolved is
 * written byte for byte as it came in.
 */
#pragma once
#include <gio/gio.h>
#include "eb-config.h"
#include "eb-message.h"
#include "eb-resolve.h"
#include "eb-fetch.h"

G_BEGIN_DECLS

typedef enum {
  EB_REWRITE_DEFAULT      = 0,
  EB_REWRITE_NO_PRECHECK  = 1 << 0,  /* parse even when the pre-check says no */
  EB_REWRITE_NO_FETCH     = 1 << 1,  /* report what would be fetched, fetch nothing */
  EB_REWRITE_STRIP_TRACE  = 1 << 2,  /* a mail filter's pass: remove the X-Extbody and
                                        X-Extbody-Resolved fields of the message header
                                        (a sender can forge them) */
  EB_REWRITE_FILTER_FIELD = 1 << 3,  /* a mail filter's pass: when something was
                                        resolved, the written message gets the
                                        X-Extbody field the milter adds, at the
                                        end of its header */
} EbRewriteFlags;

#define EB_FILTER_FIELD "X-Extbody"

typedef struct {
  gsize start, end;   /* bytes [start, end) */
} EbRange;

typedef struct {
  gsize          skip;         /* bytes of a leading mbox From_ line: kept as they
                                  are, not parsed; every offset in scan is from
                                  the byte after it */
  gboolean       parsed;       /* a MIME parse was done */
  EbReason       reason;       /* RESOLVED, or why the whole message was left alone */
  EbMessageScan *scan;         /* (nullable) when parsed */
  GPtrArray     *actions;      /* (element-type EbAction) the decision for each of scan->refs */
  GPtrArray     *resolutions;  /* (element-type EbResolution) one per scan->refs */
  guint          n_resolved;
  GArray        *removed;      /* (element-type EbRange) with EB_REWRITE_STRIP_TRACE:
                                  the message header's trace fields removed, in
                                  order (offsets as in scan) */
  gboolean       changed;      /* the output differs from the input */
  gboolean       filter_field; /* with EB_REWRITE_FILTER_FIELD and something
                                  resolved: eb_rewrite_write() adds the field */
} EbRewriteResult;

void eb_rewrite_result_free (EbRewriteResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbRewriteResult, eb_rewrite_result_free)

/* The length of a leading mbox From_ line ("From sender date", as mail readers
 * save single messages and pipe(8) with flags=F passes them), line break
 * included, or 0. */
gsize eb_rewrite_from_line_len (const char *buf, gsize len);

/* Decide about every reference of the message in @buf (@len bytes) without
 * writing anything. A leading From_ line is kept as it is and not parsed. @buf must stay unchanged while the result is used.
 * @fetcher (nullable): fetches http, https and ftp references, all of the
 * message's at once; without one only data: URLs are resolved.
 * Returns: (transfer full): never NULL. */
EbRewriteResult *eb_rewrite_plan (const char *buf, gsize len, const EbConfig *config,
                                  EbFetcher *fetcher, EbRewriteFlags flags);

/* Write the message planned in @result (from eb_rewrite_plan on the same @buf)
 * to @out. */
gboolean eb_rewrite_write (const EbRewriteResult *result, const char *buf, gsize len,
                           GOutputStream *out, GError **error);

/* eb_rewrite_write() for a message of an mbox: the same bytes, except that a
 * new body written unencoded (7bit: a message/rfc822 or multipart, or text
 * that needed no encoding) is mboxrd-quoted (">From" one ">" deeper). Text
 * that is encoded never needs it: quoted-printable writes "=46rom" and
 * "=3EFrom", and 7bit is chosen only for text without such lines. */
gboolean eb_rewrite_write_mboxrd (const EbRewriteResult *result, const char *buf, gsize len,
                                  GOutputStream *out, GError **error);

/* Write only the body of the message planned in @result (what follows its
 * header and the blank line), for a front end that changes the header itself
 * (the milter): with eb_rewrite_header_edits() it makes the message that
 * eb_rewrite_write() writes. */
gboolean eb_rewrite_write_body (const EbRewriteResult *result, const char *buf, gsize len,
                                GOutputStream *out, GError **error);

typedef enum {
  EB_HEADER_CHANGE,   /* the @index-th field named @name gets @value */
  EB_HEADER_ADD,      /* a field @name: @value is added */
  EB_HEADER_DELETE,   /* the @index-th field named @name goes */
} EbHeaderEditKind;

typedef struct {
  EbHeaderEditKind kind;
  char            *name;
  guint            index;   /* CHANGE, DELETE: 1-based among the fields of that name
                               in the message header as it came */
  char            *value;   /* CHANGE, ADD: the value after the colon, its folds as
                               "\n" and white space (as a milter passes values) */
} EbHeaderEdit;

void eb_header_edit_free (EbHeaderEdit *edit);

/* The edits of the message header that @result implies (trace fields removed;
 * a resolved top-level reference's merged header), in an order they can be
 * applied one after another: changes, additions, then deletions, each name's
 * from its last field. None when nothing changed.
 * Returns: (transfer full) (element-type EbHeaderEdit). */
GPtrArray *eb_rewrite_header_edits (const EbRewriteResult *result, const char *buf, gsize len);

/* The value of the X-Extbody field (EB_FILTER_FIELD) for the message planned
 * in @result, after the colon, as a milter passes it:
 * " resolved 1 of 2 external-body references".
 * Returns: (transfer full). */
char *eb_rewrite_filter_field_value (const EbRewriteResult *result);

/* Plan, then write the message to @out. Returns FALSE with a GIOError when
 * writing fails (nothing else fails: a message that cannot be changed is copied).
 * @result: (out) (optional) (transfer full): what was done. */
gboolean eb_rewrite (const char *buf, gsize len, const EbConfig *config, EbFetcher *fetcher,
                     EbRewriteFlags flags,
                     GOutputStream *out, EbRewriteResult **result, GError **error);

G_END_DECLS
