/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-mbox.h - mbox: splitting, locking, and crash-safe rewriting.
 *
 * mbox: messages are separated by From_ lines at the start of the file or after
 * an empty line - a line that reads "From SENDER DATE" with DATE in the ctime
 * form (eb_mbox_is_from_line), as mutt and Dovecot split; any other line
 * starting "From " is body text (the very first line of the file only needs
 * to start "From "); everything is kept byte for byte (the From_ lines, ">From"
 * quoting in either mboxo or mboxrd style, the blank separator lines). The file
 * is locked the way delivery agents lock it - a dot-lock file (FILE.lock, created
 * with O_EXCL, holding our PID; a lock whose process is gone is stale and removed)
 * and an fcntl lock - for the whole run; the new mbox is written beside the old
 * one, flushed with fsync and renamed over it, so a crash at any moment leaves the
 * old file or the new one. Nothing changed: the file is not touched.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  gsize from;    /* the From_ line */
  gsize start;   /* the message: after the From_ line */
  gsize end;     /* one past the message (the next From_ line, or the end) */
} EbMboxMsg;

/* Does the line at @line (up to its "\n" or @len) read as an mbox From_ line:
 * "From ", a sender (may be missing or "quoted with spaces"), then a ctime date
 * "[Wdy] Mon DD hh:mm[:ss] [ZONE] YYYY [ZONE]", optionally " remote from HOST"?
 * Lines over 1024 bytes never are. */
gboolean eb_mbox_is_from_line (const char *line, gsize len);

/* Split @len bytes of mbox. Returns: (transfer full) (element-type EbMboxMsg). */
GArray *eb_mbox_split (const char *buf, gsize len);

/* The same over a read-only mapping, giving its pages back (MADV_DONTNEED) as
 * the scan passes them, so that splitting a large mailbox does not make it
 * resident; the pages come back on demand. */
GArray *eb_mbox_split_mapped (const char *buf, gsize len);

/* The messages of @len bytes of mbox one at a time, as eb_mbox_split() finds
 * them, scanning only as far as the message given. */
typedef struct {
  const char *buf;
  gsize       len;
  gsize       next;   /* the next From_ line, or len */
} EbMboxIter;
void     eb_mbox_iter_init (EbMboxIter *iter, const char *buf, gsize len);
gboolean eb_mbox_iter_next (EbMboxIter *iter, EbMboxMsg *msg);

/* Append to @out (element-type gsize) the offsets of the From_ lines that start
 * messages (as eb_mbox_split() finds them) from @from up to, not including,
 * @to: the split of a large mbox in pieces, each looked at on its own. */
void eb_mbox_find_separators (const char *buf, gsize len, gsize from, gsize to, GArray *out);

/* eb_mbox_find_separators(), and in the same pass the offsets where
 * "external-body" (in any case, as eb_message_may_hold_external_body() looks
 * for it) starts, for the "-" in it from @from up to, not including, @to
 * (@hits, element-type gsize): a message with none in it holds no external
 * body. */
void eb_mbox_find_separators_and_hits (const char *buf, gsize len, gsize from, gsize to,
                                       GArray *seps, GArray *hits);

/* eb_mbox_find_separators_and_hits() over the mbox @fd of @len bytes, read
 * with pread() a piece at a time into one buffer instead of mapped: the pages
 * of the messages never looked at again are not mapped. FALSE: a read failed
 * (what was found so far is in @seps and @hits). */
gboolean eb_mbox_read_separators_and_hits (int fd, gsize len, gsize from, gsize to, GArray *seps,
                                           GArray *hits);

/* Remove what a run killed outright (SIGKILL, power loss) left beside the mbox
 * @path: its ".NAME.extbody-XXXXXX" files. Only for a caller holding the lock,
 * since only a lock holder writes them. */
void eb_mbox_remove_stale (const char *path);

typedef struct _EbMboxLock EbMboxLock;
/* Lock @path (dot-lock, then fcntl on @fd), waiting at most @timeout_s seconds.
 * Returns: (transfer full) (nullable): NULL with an error. */
EbMboxLock *eb_mbox_lock (const char *path, int fd, guint timeout_s, GError **error);
void eb_mbox_unlock (EbMboxLock *lock);

G_END_DECLS
