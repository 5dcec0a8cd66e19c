/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* extbody-plan.h - one message's plan: rewrite and externalize, its writers and records.
 *
 * Part of libextbody's public API; include <extbody/extbody.h>, which
 * includes every header of the API. */
#pragma once
#include <extbody/extbody-base.h>
#include <extbody/extbody-config.h>
#include <extbody/extbody-fetch.h>
#include <extbody/extbody-store.h>

G_BEGIN_DECLS

/**
 * SECTION:extbody-plan
 * @title: Plans: rewrite and externalize
 * @short_description: one message's plan: rewrite and externalize, its writers and records
 * @include: extbody/extbody.h
 */

/* ---- rewrite ---------------------------------------------------------------- */

/**
 * EB_FILTER_FIELD:
 *
 * The name of the header field a mail filter adds to a message it rewrote.
 */
#define EB_FILTER_FIELD "X-Extbody"

/**
 * EB_TRACE_FIELD:
 *
 * The name of the header field added to every resolved part.
 */
#define EB_TRACE_FIELD "X-Extbody-Resolved"

/**
 * EB_FALLBACK_FIELD:
 *
 * The name of the header field `externalize --fallback` gives the
 * multipart/alternative it writes: "notice-sha256=" and the SHA-256 of its
 * text part (eb_digest_notice_hex()). With its boundary ("=_extbody_" and 24
 * hex digits) it is the mark by which a resolver knows that alternative as
 * extbody's own, and replaces it whole with the restored part; any other
 * multipart/alternative keeps its parts, and only a reference in it is
 * replaced.
 */
#define EB_FALLBACK_FIELD "X-Extbody-Fallback"

/**
 * EB_FALLBACK_NOTICE_MAX:
 *
 * The most bytes the text part of a fallback alternative may hold, header
 * included, for it to be taken as extbody's notice (the notice is a few
 * hundred bytes; a larger text part is somebody's words and is kept).
 */
#define EB_FALLBACK_NOTICE_MAX (64 * 1024)

/**
 * EbRewriteFlags:
 * @EB_REWRITE_DEFAULT: none
 * @EB_REWRITE_NO_PRECHECK: parse the message even when the cheap pre-check
 *   ("external-body" appears nowhere) says there is nothing to do
 * @EB_REWRITE_NO_FETCH: fetch nothing; what would be fetched is left with
 *   %EB_REASON_WOULD_FETCH
 * @EB_REWRITE_STRIP_TRACE: a mail filter's pass: remove the %EB_FILTER_FIELD
 *   and %EB_TRACE_FIELD fields of the message header (a sender can forge
 *   them). With the site's key (trace_key_file, eb_seal_key_check()) an
 *   %EB_FILTER_FIELD field whose seal verifies is this site's record and
 *   stays; when it says how the references were resolved and the message has
 *   as many references left as it says, a pass of this site handled the
 *   message already: it is left alone (%EB_REASON_SEALED_RECORD), nothing
 *   fetched, nothing removed but the fields without a valid seal
 * @EB_REWRITE_FILTER_FIELD: a mail filter's pass: when something was resolved,
 *   the written message gets the %EB_FILTER_FIELD field the milter adds, at the
 *   end of its header (eb_plan_filter_field_value()); with the site's key it
 *   is sealed, and written also when nothing was resolved in a message with
 *   references (eb_plan_get_filter_field())
 * @EB_REWRITE_DROP_CONTENT_LENGTH: a mailbox's pass: when the message changes,
 *   the Content-Length fields of its header go too (some mbox writers give
 *   the body's length there; after a rewrite it would be wrong, and readers
 *   that believe it would cut the message or glue the next one on; what the
 *   old value counted depends on the program that wrote it, so it is removed
 *   rather than updated, and readers that find none split at From_ lines)
 * @EB_REWRITE_HEADER_ONLY: the message given is its header alone, its body not kept
 *   (a milter's message above max_message_size, or one whose type cannot hold
 *   a reference): only its trace fields are judged, as for a message above
 *   max_message_size (a record whose seal verifies stays), and nothing is
 *   resolved
 *
 * How eb_rewrite_plan() and eb_rewrite() work.
 */
typedef enum {
  EB_REWRITE_DEFAULT      = 0,
  EB_REWRITE_NO_PRECHECK  = 1 << 0,
  EB_REWRITE_NO_FETCH     = 1 << 1,
  EB_REWRITE_STRIP_TRACE  = 1 << 2,
  EB_REWRITE_FILTER_FIELD = 1 << 3,
  EB_REWRITE_DROP_CONTENT_LENGTH = 1 << 4,
  EB_REWRITE_HEADER_ONLY  = 1 << 5,
} EbRewriteFlags;

/**
 * EbActionKind:
 * @EB_ACTION_LEAVE: left alone (the reason says why)
 * @EB_ACTION_DATA: a data: URL: the data is in the reference
 * @EB_ACTION_FETCH: an http, https or ftp URL to fetch (anon-ftp made into one)
 * @EB_ACTION_LOCAL_FILE: a local file to read, inside local_file_dirs
 *
 * What was decided for a reference, from the reference and the configuration
 * alone, before any fetch.
 */
typedef enum {
  EB_ACTION_LEAVE,
  EB_ACTION_DATA,
  EB_ACTION_FETCH,
  EB_ACTION_LOCAL_FILE,
} EbActionKind;

/**
 * EbPlan:
 *
 * One message's plan, made by eb_rewrite_plan() or eb_externalize_plan():
 * the message it read (its bytes borrowed, not copied: they must outlive the
 * plan, unchanged), every replacement and every header field removal, and a
 * record for each reference or part (in document order, numbered from 0):
 * where it is, what it says and what became of it. The writers
 * (eb_plan_write(), eb_plan_write_body(), eb_plan_header_edits()) take the
 * plan alone. Opaque.
 */
typedef struct _EbPlan EbPlan;

/**
 * eb_rewrite_plan:
 * @buf: (array length=len): the message
 * @len: its length in bytes
 * @config: the configuration
 * @fetcher: (nullable): fetches http, https and ftp references, all of the
 *   message's at once; without one only data: URLs are resolved
 * @flags: flags
 *
 * Decide about every reference of the message in @buf without writing
 * anything. A leading mbox From_ line is kept as it is and not parsed. The
 * plan borrows @buf: it must stay, unchanged, until the plan is freed.
 *
 * Returns: (transfer full): the plan, never NULL.
 */
EXTBODY_API EbPlan *eb_rewrite_plan (const char *buf, gsize len, const EbConfig *config,
                                              EbFetcher *fetcher, EbRewriteFlags flags);

/**
 * eb_plan_write:
 * @plan: a plan
 * @out: where the message goes
 * @error: return location for a #GError
 *
 * Write the message planned in @plan to @out: every byte outside a replaced
 * part copied from the message planned; unchanged when nothing was resolved.
 *
 * Returns: FALSE with a #GIOErrorEnum error when writing fails.
 */
EXTBODY_API gboolean eb_plan_write (const EbPlan *plan, GOutputStream *out, GError **error);

/**
 * eb_plan_write_mboxrd:
 * @plan: a plan
 * @out: where the message goes
 * @error: return location for a #GError
 *
 * eb_plan_write() for a message of an mbox: the same bytes, except that a
 * new body written unencoded is mboxrd-quoted (">From" one ">" deeper).
 *
 * Returns: FALSE with a #GIOErrorEnum error when writing fails.
 */
EXTBODY_API gboolean eb_plan_write_mboxrd (const EbPlan *plan, GOutputStream *out, GError **error);

/**
 * eb_plan_write_body:
 * @plan: a plan
 * @out: where the body goes
 * @error: return location for a #GError
 *
 * Write only the body of the message planned in @plan (what follows its
 * header and the blank line), for a front end that changes the header itself
 * (a milter): with eb_plan_header_edits() it makes the message that
 * eb_plan_write() writes.
 *
 * Returns: FALSE with a #GIOErrorEnum error when writing fails.
 */
EXTBODY_API gboolean eb_plan_write_body (const EbPlan *plan, GOutputStream *out, GError **error);

/**
 * eb_rewrite:
 * @buf: (array length=len): the message
 * @len: its length in bytes
 * @config: the configuration
 * @fetcher: (nullable): the fetcher, as for eb_rewrite_plan()
 * @flags: flags
 * @out: where the message goes
 * @plan: (out) (optional) (transfer full): what was done
 * @error: return location for a #GError
 *
 * eb_rewrite_plan(), then eb_plan_write().
 *
 * Returns: FALSE with a #GIOErrorEnum error when writing fails (nothing else
 *   fails: a message that cannot be changed is copied).
 */
EXTBODY_API gboolean eb_rewrite (const char *buf, gsize len, const EbConfig *config,
                                 EbFetcher *fetcher, EbRewriteFlags flags, GOutputStream *out,
                                 EbPlan **plan, GError **error);

/**
 * eb_plan_free:
 * @plan: (nullable) (transfer full): a result
 *
 * Free @plan.
 */
EXTBODY_API void eb_plan_free (EbPlan *plan);

/**
 * eb_plan_get_reason:
 * @plan: a result
 *
 * The message's own outcome: %EB_REASON_RESOLVED, or why the whole message was
 * left alone (%EB_REASON_MESSAGE_TOO_LARGE, %EB_REASON_UNPARSEABLE, a walk
 * limit, ...). Each reference has its own reason.
 *
 * Returns: the reason.
 */
EXTBODY_API EbReason eb_plan_get_reason (const EbPlan *plan);

/**
 * eb_plan_get_parsed:
 * @plan: a result
 *
 * Whether the message was parsed (not when the pre-check or the size limit
 * said there was nothing to do).
 *
 * Returns: TRUE when it was parsed.
 */
EXTBODY_API gboolean eb_plan_get_parsed (const EbPlan *plan);

/**
 * eb_plan_get_changed:
 * @plan: a result
 *
 * Whether the message written differs from the input.
 *
 * Returns: TRUE when it differs.
 */
EXTBODY_API gboolean eb_plan_get_changed (const EbPlan *plan);

/**
 * eb_plan_get_n_refs:
 * @plan: a result
 *
 * The number of message/external-body references found.
 *
 * Returns: the number.
 */
EXTBODY_API guint eb_plan_get_n_refs (const EbPlan *plan);

/**
 * eb_plan_get_n_resolved:
 * @plan: a result
 *
 * The number of references resolved.
 *
 * Returns: the number.
 */
EXTBODY_API guint eb_plan_get_n_resolved (const EbPlan *plan);

/**
 * eb_plan_get_n_removed:
 * @plan: a result
 *
 * With %EB_REWRITE_STRIP_TRACE: the number of trace fields (%EB_FILTER_FIELD,
 * %EB_TRACE_FIELD) removed from the message header; otherwise 0.
 *
 * Returns: the number.
 */
EXTBODY_API guint eb_plan_get_n_removed (const EbPlan *plan);

/**
 * eb_plan_get_ref_reason:
 * @plan: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * What became of reference @i: %EB_REASON_RESOLVED or why it was left alone.
 *
 * Returns: the reason.
 */
EXTBODY_API EbReason eb_plan_get_ref_reason (const EbPlan *plan, guint i);

/**
 * eb_plan_get_ref_detail:
 * @plan: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * One line with the particulars of reference @i's reason.
 *
 * Returns: (transfer none) (nullable): the line, or NULL.
 */
EXTBODY_API const char *eb_plan_get_ref_detail (const EbPlan *plan, guint i);

/**
 * eb_plan_get_ref_path:
 * @plan: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * Where reference @i is: an IMAP-style part path such as "2.1".
 *
 * Returns: (transfer none): the path.
 */
EXTBODY_API const char *eb_plan_get_ref_path (const EbPlan *plan, guint i);

/**
 * eb_plan_get_ref_access_type:
 * @plan: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * Reference @i's access-type, in lowercase ("url", "anon-ftp", ...).
 *
 * Returns: (transfer none) (nullable): the access-type, or NULL when it has
 *   none that can be read.
 */
EXTBODY_API const char *eb_plan_get_ref_access_type (const EbPlan *plan,
                                                               guint i);

/**
 * eb_plan_get_ref_url:
 * @plan: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * Reference @i's URL (access-type=URL), reassembled from its header.
 *
 * Returns: (transfer none) (nullable): the URL, or NULL.
 */
EXTBODY_API const char *eb_plan_get_ref_url (const EbPlan *plan, guint i);

/**
 * eb_plan_get_ref_action:
 * @plan: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * What was decided for reference @i before any fetch.
 *
 * Returns: the action.
 */
EXTBODY_API EbActionKind eb_plan_get_ref_action (const EbPlan *plan, guint i);

/**
 * eb_plan_get_ref_target:
 * @plan: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * For %EB_ACTION_FETCH the URL fetched, for %EB_ACTION_LOCAL_FILE the file read.
 *
 * Returns: (transfer none) (nullable): the target, or NULL for other actions.
 */
EXTBODY_API const char *eb_plan_get_ref_target (const EbPlan *plan, guint i);

/**
 * eb_plan_get_ref_content_type:
 * @plan: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * The media type of reference @i's new part, such as "image/png".
 *
 * Returns: (transfer none) (nullable): the type, or NULL when not resolved.
 */
EXTBODY_API const char *eb_plan_get_ref_content_type (const EbPlan *plan,
                                                                guint i);

/**
 * eb_plan_get_ref_encoding:
 * @plan: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * The transfer encoding of reference @i's new part: "7bit",
 * "quoted-printable" or "base64".
 *
 * Returns: (transfer none) (nullable): the encoding, or NULL when not resolved.
 */
EXTBODY_API const char *eb_plan_get_ref_encoding (const EbPlan *plan, guint i);

/**
 * eb_plan_get_ref_size:
 * @plan: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * The size of reference @i's data, decoded.
 *
 * Returns: the size in bytes; 0 when not resolved.
 */
EXTBODY_API guint64 eb_plan_get_ref_size (const EbPlan *plan, guint i);

/**
 * eb_plan_get_ref_sha256:
 * @plan: a result
 * @i: a reference, below eb_plan_get_n_refs()
 *
 * The SHA-256 of reference @i's data, decoded, in lowercase hex.
 *
 * Returns: (transfer none) (nullable): the digest, or NULL when not resolved.
 */
EXTBODY_API const char *eb_plan_get_ref_sha256 (const EbPlan *plan, guint i);

/**
 * eb_plan_get_message_id:
 * @plan: a plan
 *
 * The Message-ID of the message planned, unfolded, read from the message
 * header the plan read.
 *
 * Returns: (transfer full) (nullable): the Message-ID, or NULL.
 */
EXTBODY_API char *eb_plan_get_message_id (const EbPlan *plan);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbPlan, eb_plan_free)

/**
 * EbHeaderEditKind:
 * @EB_HEADER_CHANGE: the index-th field of the name gets the value
 * @EB_HEADER_ADD: a field with the name and value is added
 * @EB_HEADER_DELETE: the index-th field of the name goes
 *
 * The kinds of #EbHeaderEdit.
 */
typedef enum {
  EB_HEADER_CHANGE,
  EB_HEADER_ADD,
  EB_HEADER_DELETE,
} EbHeaderEditKind;

/**
 * EbHeaderEdit:
 *
 * One edit of the message header, as a mail filter makes it. Opaque.
 */
typedef struct _EbHeaderEdit EbHeaderEdit;

/**
 * eb_plan_filter_field_value:
 * @plan: a result
 *
 * The value of the %EB_FILTER_FIELD field for the message planned in @plan,
 * after the colon, as a milter passes it: " resolved 1 of 2 external-body
 * references"; for a plan of eb_externalize_plan(), " externalized 1 of 2
 * parts". With the site's key (trace_key_file) it ends in "; seal=" and the
 * record's seal for the message's Message-ID: " resolved 1 of 2
 * external-body references; seal=Q2hhbmdlZCBieSBub2JvZHk".
 *
 * Returns: (transfer full): the value.
 */
EXTBODY_API char *eb_plan_filter_field_value (const EbPlan *plan);

/**
 * eb_plan_get_filter_field:
 * @plan: a result
 *
 * Whether the message planned gets the %EB_FILTER_FIELD field
 * (eb_plan_filter_field_value()): made with %EB_REWRITE_FILTER_FIELD or
 * %EB_EXTERNALIZE_FILTER_FIELD, when something was resolved or externalized;
 * with the site's key (trace_key_file) also when a rewrite resolved nothing
 * in a message with references, and never for a message left alone for this
 * site's sealed record. eb_plan_write() writes it; a milter adds it.
 *
 * Returns: TRUE when the field is added.
 */
EXTBODY_API gboolean eb_plan_get_filter_field (const EbPlan *plan);

/**
 * eb_plan_header_edits:
 * @plan: a plan
 *
 * The edits of the message header that @plan implies (trace fields removed;
 * a resolved top-level reference's merged header), in an order they can be
 * applied one after another: changes, additions, then deletions, each name's
 * from its last field. None when nothing changed.
 *
 * Returns: (transfer full) (element-type EbHeaderEdit): the edits, freed
 *   with the array.
 */
EXTBODY_API GPtrArray *eb_plan_header_edits (const EbPlan *plan);

/**
 * eb_header_edit_get_kind:
 * @edit: an edit
 *
 * What @edit does.
 *
 * Returns: the kind.
 */
EXTBODY_API EbHeaderEditKind eb_header_edit_get_kind (const EbHeaderEdit *edit);

/**
 * eb_header_edit_get_name:
 * @edit: an edit
 *
 * The name of the field edited.
 *
 * Returns: (transfer none): the name.
 */
EXTBODY_API const char *eb_header_edit_get_name (const EbHeaderEdit *edit);

/**
 * eb_header_edit_get_index:
 * @edit: an edit
 *
 * For %EB_HEADER_CHANGE and %EB_HEADER_DELETE: which field of that name, from
 * 1, among the fields of the message header as it came.
 *
 * Returns: the index; 0 for %EB_HEADER_ADD.
 */
EXTBODY_API guint eb_header_edit_get_index (const EbHeaderEdit *edit);

/**
 * eb_header_edit_get_value:
 * @edit: an edit
 *
 * For %EB_HEADER_CHANGE and %EB_HEADER_ADD: the value after the colon, its
 * folds as "\n" and white space (as a milter passes values).
 *
 * Returns: (transfer none) (nullable): the value; NULL for %EB_HEADER_DELETE.
 */
EXTBODY_API const char *eb_header_edit_get_value (const EbHeaderEdit *edit);

/**
 * eb_header_edit_free:
 * @edit: (nullable) (transfer full): an edit
 *
 * Free @edit (the array of eb_plan_header_edits() does it).
 */
EXTBODY_API void eb_header_edit_free (EbHeaderEdit *edit);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbHeaderEdit, eb_header_edit_free)

/* ---- externalize ------------------------------------------------------------ */

/**
 * EbExternalizeFlags:
 * @EB_EXTERNALIZE_DEFAULT: none
 * @EB_EXTERNALIZE_FALLBACK: write each reference inside a multipart/alternative
 *   after a short text/plain part with the link (as externalize_fallback = on)
 * @EB_EXTERNALIZE_FILTER_FIELD: when something was externalized, the written
 *   message gets the %EB_FILTER_FIELD field ("externalized N of M parts")
 * @EB_EXTERNALIZE_NO_STORE: decide only: every candidate is left with
 *   %EB_REASON_WOULD_EXTERNALIZE; nothing is stored, nothing changed
 * @EB_EXTERNALIZE_MBOXRD: the message comes from an mbox, its "From " lines
 *   quoted the mboxrd way (">From ", ">>From "...): a part's bytes are stored
 *   unquoted, as the message's reader sees them (eb_batch_set_store() sets it
 *   for an mbox)
 * @EB_EXTERNALIZE_STRIP_TRACE: a mail filter's pass: remove the
 *   %EB_FILTER_FIELD and %EB_TRACE_FIELD fields of the message header, as
 *   %EB_REWRITE_STRIP_TRACE does
 * @EB_EXTERNALIZE_DROP_CONTENT_LENGTH: a mailbox's pass: when the message
 *   changes, its header's Content-Length fields go too, as
 *   %EB_REWRITE_DROP_CONTENT_LENGTH
 *
 * How eb_externalize_plan() works.
 */
typedef enum {
  EB_EXTERNALIZE_DEFAULT      = 0,
  EB_EXTERNALIZE_FALLBACK     = 1 << 0,
  EB_EXTERNALIZE_FILTER_FIELD = 1 << 1,
  EB_EXTERNALIZE_NO_STORE     = 1 << 2,
  EB_EXTERNALIZE_MBOXRD       = 1 << 3,
  EB_EXTERNALIZE_STRIP_TRACE  = 1 << 4,
  EB_EXTERNALIZE_DROP_CONTENT_LENGTH = 1 << 5,
} EbExternalizeFlags;

/**
 * EbProfile:
 * @EB_PROFILE_AS_GIVEN: a message given by hand (`extbody rewrite FILE`):
 *   nothing added, none of its fields removed
 * @EB_PROFILE_TRANSIT: mail in transit, written whole (a filter's pass: the
 *   daemon's HTTP /rewrite and /externalize, its Dovecot filter, `extbody
 *   rewrite --filter` and `externalize --filter`): the %EB_FILTER_FIELD
 *   record added, the trace fields the message came with judged and removed
 *   when strip_trace_fields is on
 * @EB_PROFILE_TRANSIT_BODY: the same pass for a milter, which sends the
 *   header's edits (eb_plan_header_edits()) and the body
 *   (eb_plan_write_body()) apart: the same flags as %EB_PROFILE_TRANSIT
 * @EB_PROFILE_AT_REST: stored mail (mbox, Maildir, IMAP, the daemon's
 *   /rewrite?stored): its trace fields kept, nothing added, and the
 *   Content-Length fields of a message that changes removed
 *
 * Where a message is, named once: each caller plans with the flags its
 * profile gives (eb_profile_rewrite_flags(), eb_profile_externalize_flags())
 * and adds only what its own run asks for (%EB_REWRITE_NO_PRECHECK,
 * %EB_REWRITE_HEADER_ONLY, %EB_EXTERNALIZE_NO_STORE, ...).
 */
typedef enum {
  EB_PROFILE_AS_GIVEN,
  EB_PROFILE_TRANSIT,
  EB_PROFILE_TRANSIT_BODY,
  EB_PROFILE_AT_REST,
} EbProfile;

/**
 * eb_profile_rewrite_flags:
 * @profile: where the message is
 * @config: the configuration (strip_trace_fields)
 *
 * Returns: the flags a rewrite of a message in @profile is planned with.
 */
EXTBODY_API EbRewriteFlags eb_profile_rewrite_flags (EbProfile profile, const EbConfig *config);

/**
 * eb_profile_externalize_flags:
 * @profile: where the message is
 * @config: the configuration (strip_trace_fields; externalize_fallback is
 *   read by eb_externalize_plan() itself)
 *
 * Returns: the flags an externalize of a message in @profile is planned with.
 */
EXTBODY_API EbExternalizeFlags eb_profile_externalize_flags (EbProfile profile, const EbConfig *config);

/**
 * eb_externalize_plan:
 * @buf: the message (a leading mbox From_ line is kept and skipped)
 * @len: its length
 * @config: the configuration (externalize_min_size, externalize_types,
 *   externalize_retention, externalize_fallback, and the walk limits)
 * @store: (nullable): where the parts go; %NULL plans as with
 *   %EB_EXTERNALIZE_NO_STORE
 * @flags: how
 *
 * Plans the externalization of @buf: every leaf part eligible (not text meant
 * to be read inline, not under multipart/signed, multipart/encrypted or
 * multipart/related, of at least externalize_min_size decoded bytes, of a type
 * externalize_types matches, whose transfer encoding decodes cleanly) is a
 * candidate: stored through @store and, once stored and verified, replaced
 * by a message/external-body reference (access-type=URL) whose phantom header
 * keeps the part's own Content-Type, Content-ID, Content-Description and
 * Content-Disposition as written, with a Content-MD5 of the stored bytes
 * (and, for a part without a Content-ID, "<SHA-256@host of the URL>": RFC 2046
 * 5.2.3 wants one in every reference; the resolver leaves it out of the part it
 * restores). A part the store failed to take is left with %EB_REASON_STORE_FAILED. The
 * result is written with eb_plan_write() and the other writers; every byte
 * outside a replaced part is copied as it was, and a message with nothing
 * externalized comes out byte for byte as it came in. In the result, the
 * "references" are the candidates and "resolved" those externalized; for each
 * externalized one, eb_plan_get_ref_url() gives the URL.
 *
 * Returns: (transfer full): the plan, never %NULL.
 */
EXTBODY_API EbPlan *eb_externalize_plan (const char *buf, gsize len,
                                                  const EbConfig *config, EbStore *store,
                                                  EbExternalizeFlags flags);

/**
 * eb_externalize_report_line:
 * @plan: a plan from eb_externalize_plan()
 * @i: a candidate, from 0 to eb_plan_get_n_refs() - 1
 *
 * One line (no newline) about candidate @i for people: its part path, media
 * type and decoded size, then "externalized URL" or "left: TOKEN: text"
 * followed by the detail (the store's error) when there is one, e.g.
 * "part 2 application/pdf 5242880 bytes: externalized http://files.example/ab12...".
 *
 * Returns: (transfer full): the line.
 */
EXTBODY_API char *eb_externalize_report_line (const EbPlan *plan, guint i);

G_END_DECLS
