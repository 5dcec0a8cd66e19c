/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-resolution.h - what resolving one reference gave: the reason, and when
 * resolved the decoded data, its encoding and type, and the new header block,
 * finished (trace field with size and SHA-256) when first asked for.
 * eb_resolve() (eb-resolve.h) makes it. EB_TRACE_FIELD is public (extbody.h).
 */
#pragma once
#include <glib.h>
#include <extbody/extbody.h>
#include "eb-transfer.h"

G_BEGIN_DECLS

typedef struct {
  EbReason      reason;     /* RESOLVED or why the reference is left alone */
  char         *detail;     /* (nullable) one line with the particulars */
  /* When resolved: */
  GBytes       *data;       /* the decoded data, the new body before encoding */
  EbOutEncoding encoding;   /* its transport encoding */
  char         *type;       /* the new part's media type (essence) */
  /* private: the digest is computed, and the header finished, when first asked
   * for (inspect's table needs neither) */
  GString      *head;       /* the new header block less the trace field */
  char         *trace;      /* the trace field's source, until head is finished */
  char         *eol;
  char         *digest;
} EbResolution;

void eb_resolution_free (EbResolution *res);

/* When resolved: the new header block, blank line included (the trace field
 * with the data's size and SHA-256 last); otherwise NULL. Finished on the
 * first call (not thread-safe: one thread at a time per resolution). */
const GString *eb_resolution_header (const EbResolution *res);
/* When resolved: the hex SHA-256 of the data; otherwise NULL (computed on the
 * first call, as eb_resolution_header()). */
const char *eb_resolution_sha256 (const EbResolution *res);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbResolution, eb_resolution_free)

G_END_DECLS
