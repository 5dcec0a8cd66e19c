/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-buffer.h - a growing byte buffer in memory of its own (an anonymous
 * mapping), for the bodies extbody fetches and reads.
 *
 * A body grows as its bytes arrive, side by side with the other bodies of the
 * message being fetched, and may be dropped at any moment (a limit, a failure,
 * an earlier reference that needs the room). In the malloc heap such buffers
 * cost more than they hold: glibc raises its mmap threshold to the largest
 * block freed (up to 32 MiB), so once one large body has been freed the next
 * ones grow inside the heap, where growing copies them and freeing leaves holes
 * that stay resident. A mapping of its own holds resident only the pages
 * written, grows without copying (mremap), and goes back to the system the
 * moment it is freed: the memory a message's bodies take follows the bytes
 * counted for them (eb-fetch's max_message_bytes), whatever the state of the
 * heap. */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

typedef struct _EbBuffer EbBuffer;

/* A new, empty buffer with room for @reserve bytes (0: unknown; the room is
 * address space, not memory, until written). Returns: (transfer full)
 * (nullable): NULL when no mapping could be made. */
EbBuffer *eb_buffer_new (gsize reserve);

/* Append @n bytes; the room grows as needed. Returns: FALSE (the buffer
 * unchanged) when it could not grow. */
gboolean eb_buffer_append (EbBuffer *buffer, const void *data, gsize n);

gsize eb_buffer_get_size (const EbBuffer *buffer);

/* The buffer's bytes as a GBytes that owns the mapping (no copy; unmapped
 * when the last reference goes); @buffer is consumed. Returns: (transfer full). */
GBytes *eb_buffer_free_to_bytes (EbBuffer *buffer);

/* Unmap and free @buffer (nullable). */
void eb_buffer_free (EbBuffer *buffer);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbBuffer, eb_buffer_free)

G_END_DECLS
