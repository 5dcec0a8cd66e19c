/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-maildir.h - Maildir: listing, mapping, and crash-safe rewriting.
 *
 * Maildir: only changed messages are rewritten, each written in tmp/, fsync'd,
 * delivered as a new message (a new unique base name, so that IMAP servers give
 * it a new UID; same folder, same ":2,FLAGS" info, Maildir++ ",S=" and ",W="
 * sizes updated) and only then the old file removed: a crash leaves at worst
 * both versions, never neither. Unchanged files are not touched at all. Below
 * the Maildir named, no symbolic link is followed (cur/, new/, tmp/, .Folder).
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* Is @path a Maildir (cur/, new/ and tmp/)? Public (extbody.h). */
gboolean eb_maildir_sniff (const char *path);

/* eb_maildir_problem: public (extbody.h). */

/* Maildir: the message files under @dir (cur/ and new/; with @recursive the
 * Maildir++ subfolders ".NAME" too), sorted. Returns: (transfer full). */
GPtrArray *eb_maildir_list (const char *dir, gboolean recursive, GError **error);

/* The same, never through a symbolic link below @dir (@dir itself is opened as
 * given): a cur/, new/, tmp/ or ".Folder" that is a link is not entered, and a
 * line "PATH: why" added to @skipped (nullable, element-type utf8). */
GPtrArray *eb_maildir_list_full (const char *dir, gboolean recursive, GPtrArray *skipped,
                                 GError **error);

/* The size of @len bytes with every line end counted as CRLF (Dovecot's
 * "virtual size", Maildir++ ",W="). */
guint64 eb_maildir_virtual_size (const char *data, gsize len);

/* Map the Maildir message file @path for reading: only a regular file, not
 * through a symbolic link, and never waiting on a FIFO. Anything else in cur/ or
 * new/ is not a message: NULL with *@skipped saying why ("not a regular file",
 * "gone since the folder was listed"); NULL with *@skipped NULL is a read error.
 * Returns: (transfer full) (nullable). */
GMappedFile *eb_maildir_map_entry (const char *path, const char **skipped);

/* Rewrite one Maildir message file @path (in DIR/cur or DIR/new) with @len new
 * bytes: tmp/ file with the old file's owner, mode and xattrs, fsync, linked
 * into the same folder under a new unique name with the old ",S="/",W=" sizes
 * updated and the old ":2,FLAGS" kept, then the old file removed. *@new_path
 * gets the new name. G_FILE_ERROR_AGAIN: the old file was moved or deleted
 * meanwhile (nothing delivered). */
gboolean eb_maildir_replace (const char *path, const char *data, gsize len, char **new_path,
                             GError **error);

G_END_DECLS
