/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-extref.h - one message/external-body reference, read from the raw bytes.
 *
 * Pure: given the bytes of a message and where an external-body entity lies in
 * them (found by eb-message), read its header, its parameters (access-type, URL
 * and the RFC 2046 parameters of the other access-types) and its inner
 * ("phantom") header, byte for byte.
 */
#pragma once
#include <glib.h>
#include "eb-header.h"
#include "eb-reason.h"

G_BEGIN_DECLS

typedef struct {
  /* Where it is (filled in by eb-message). */
  char      *path;          /* IMAP-style part path: "1", "2.1" */
  guint      depth;         /* multipart/message levels above it */
  gboolean   is_root;       /* the body of a message (top-level or encapsulated):
                               RFC 2046 5.2.3.7 merge with the message header */
  gsize      block_start;   /* first byte of the header block (a root: the message's) */
  gsize      content_start; /* first byte of the content: the phantom header */
  gsize      end;           /* one past the entity's last byte, before the line
                               break that belongs to the next delimiter */
  gboolean   located;       /* the offsets were checked against the bytes */
  GPtrArray *boundaries;    /* (element-type utf8) enclosing boundaries, nearest first */
  EbReason   walk_reason;   /* a walk limit that applies to it, or RESOLVED */

  /* What it says (filled in by eb_extref_read). */
  EbHeaderBlock *outer;     /* the header block at block_start (eb-message keeps
                               the one it checked the location with) */
  EbHeaderBlock *inner;     /* the phantom header at content_start */
  EbReason   read_reason;   /* RESOLVED when it could be read */
  char      *read_detail;   /* (nullable) why not, one line */
  char      *access_type;   /* (nullable) lowercase */
  char      *url;           /* (nullable) access-type=URL: reassembled */
  char      *name, *site, *directory, *mode, *server, *subject;  /* (nullable) */
  char      *expiration, *size, *permission;                    /* (nullable) */
  char      *inner_type;    /* (nullable) media type of the inner Content-Type, lowercase */
  gboolean   inner_type_bad;/* the inner header has a Content-Type we cannot read */
  char      *inner_cte;     /* (nullable) the inner Content-Transfer-Encoding, unfolded */

  /* The fallback shape (filled in by eb-message; what `externalize --fallback`
   * writes): the reference is the second and last part of a multipart/alternative
   * of exactly two parts whose first is text/plain, and the alternative bears
   * extbody's mark (eb-message: its boundary, EB_FALLBACK_FIELD, the notice as
   * its text part). When the reference resolves,
   * that whole alternative entity, not the reference alone, is replaced by the
   * restored part. */
  gboolean   alt;           /* the shape was found and its offsets checked */
  char      *alt_path;      /* the alternative's part path ("" for the body of the
                               top-level message) */
  gboolean   alt_is_root;   /* the alternative is the body of a message */
  gsize      alt_start;     /* first byte of its header block (a root: the message's) */
  gsize      alt_end;       /* one past its last byte (its close delimiter and
                               epilogue included), before the line break that
                               belongs to the next delimiter; or the end */
  EbHeaderBlock *alt_outer; /* the header block at alt_start */
} EbRef;

EbRef *eb_extref_new (void);
void eb_extref_free (EbRef *ref);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbRef, eb_extref_free)

/* Read @ref's header, parameters and phantom header from @buf (@len bytes),
 * using block_start, content_start and end. Never fails: problems are recorded
 * in read_reason and read_detail. Everything is read afresh but the outer
 * header block, which is kept when it is the one at those offsets (see
 * eb_extref_outer). */
void eb_extref_read (EbRef *ref, const char *buf, gsize len);

/* @ref's outer header block, from block_start up to content_start: ref->outer
 * when it starts at block_start and its body at content_start (scanned there
 * already, by eb-message when it located @ref), else scanned from @buf into
 * ref->outer.
 * Returns: (transfer none): ref->outer, never NULL. */
const EbHeaderBlock *eb_extref_outer (EbRef *ref, const char *buf);

/* The bytes a resolved @ref replaces: [start, end). The reference itself, or
 * the whole multipart/alternative of the fallback shape. */
gsize eb_extref_replaced_start (const EbRef *ref);
gsize eb_extref_replaced_end (const EbRef *ref);
/* Is what a resolved @ref replaces the body of a message (RFC 2046 5.2.3.7
 * merge with that message's header)? */
gboolean eb_extref_replaced_is_root (const EbRef *ref);

G_END_DECLS
