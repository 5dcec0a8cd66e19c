/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-buffer.c - byte buffers in mappings of their own (see eb-buffer.h). */
#include "eb-buffer.h"
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The least room a buffer of unknown size starts with. */
#define EB_BUFFER_START (64 * 1024)

struct _EbBuffer {
  guint8 *data;   /* the mapping, or NULL while there is no room */
  gsize   len;    /* bytes written */
  gsize   room;   /* the mapping's length: a whole number of pages */
};

/* @n rounded up to whole pages; 0 when that cannot be represented. */
static gsize
page_round (gsize n)
{
  long p = sysconf (_SC_PAGESIZE);
  gsize page = p > 0 ? (gsize) p : 4096;
  return n > G_MAXSIZE - page ? 0 : (n + page - 1) / page * page;
}

static guint8 *
map (gsize room)
{
  void *p = mmap (NULL, room, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* Give @b exactly @room bytes of room (a whole number of pages, at least len). */
static gboolean
resize (EbBuffer *b, gsize room)
{
  if (room == b->room)
    return TRUE;
  if (!b->data) {
    b->data = map (room);
    if (!b->data)
      return FALSE;
    b->room = room;
    return TRUE;
  }
#ifdef MREMAP_MAYMOVE
  void *p = mremap (b->data, b->room, room, MREMAP_MAYMOVE);
  if (p == MAP_FAILED)
    return FALSE;
#else
  guint8 *p = map (room);
  if (!p)
    return FALSE;
  memcpy (p, b->data, b->len);
  munmap (b->data, b->room);
#endif
  b->data = p;
  b->room = room;
  return TRUE;
}

EbBuffer *
eb_buffer_new (gsize reserve)
{
  EbBuffer *b = g_new0 (EbBuffer, 1);
  gsize room = page_round (reserve ? reserve : EB_BUFFER_START);
  if (!room || !resize (b, room)) {
    g_free (b);
    return NULL;
  }
  return b;
}

gboolean
eb_buffer_append (EbBuffer *b, const void *data, gsize n)
{
  if (n > G_MAXSIZE - b->len)
    return FALSE;
  if (b->len + n > b->room) {
    /* double the room (address space: only the pages written are memory) */
    gsize want = MAX (b->len + n, b->room <= G_MAXSIZE / 2 ? b->room * 2 : b->len + n);
    gsize room = page_round (want);
    if (!room || !resize (b, room))
      return FALSE;
  }
  memcpy (b->data + b->len, data, n);
  b->len += n;
  return TRUE;
}

gsize
eb_buffer_get_size (const EbBuffer *b)
{
  return b->len;
}

void
eb_buffer_free (EbBuffer *b)
{
  if (!b)
    return;
  if (b->data)
    munmap (b->data, b->room);
  g_free (b);
}

GBytes *
eb_buffer_free_to_bytes (EbBuffer *b)
{
  if (b->len == 0) {
    eb_buffer_free (b);
    return g_bytes_new (NULL, 0);
  }
  /* the room past the last page written goes back now */
  gsize room = page_round (b->len);
  if (room < b->room && munmap (b->data + room, b->room - room) == 0)
    b->room = room;
  return g_bytes_new_with_free_func (b->data, b->len, (GDestroyNotify) eb_buffer_free, b);
}
