/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-replace.h - replacing a file crash-safely, keeping its attributes.
 *
 * The new file is written beside the old one, fsync'd and renamed over it, so a
 * crash at any moment leaves the old file or the new one. Rewritten files (mbox
 * or Maildir) keep the owner, group, mode and user.* extended attributes of the
 * file they replace.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* Replace @path by the bytes @write_fn writes beside it: write, fsync, keep the
 * mode and owner of @old_fd, link the old file to @backup (nullable) first,
 * rename over, fsync the directory. When @write_fn says nothing changed
 * (*changed FALSE), the new file is removed and @path is not touched.
 * Errors: G_FILE_ERROR, @path untouched. */
typedef gboolean (*EbWriteFunc) (int fd, gpointer data, gboolean *changed, GError **error);
gboolean eb_replace_file (const char *path, int old_fd, const char *backup,
                          EbWriteFunc write_fn, gpointer data, GError **error);

/* Give @to the owner and group (when root), the mode and the user.* extended
 * attributes (where the file system has them) of @from. Errors: G_FILE_ERROR. */
gboolean eb_replace_copy_attributes (int from, int to, GError **error);

/* fsync the directory holding @path, so that a rename in it is durable.
 * Errors: G_FILE_ERROR. */
gboolean eb_replace_fsync_dir (const char *path, GError **error);

G_END_DECLS
