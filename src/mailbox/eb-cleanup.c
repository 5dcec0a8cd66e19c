/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-cleanup.c - files removed when a signal stops the process (see eb-cleanup.h). */
#include "eb-cleanup.h"
#include <extbody/extbody.h>    /* eb_cleanup_run: public */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define CLEANUP_SLOTS 8
static char cleanup_paths[CLEANUP_SLOTS][4096];
static volatile sig_atomic_t cleanup_used[CLEANUP_SLOTS];
static GMutex cleanup_lock;

int
eb_cleanup_add (const char *path)
{
  if (strlen (path) >= sizeof cleanup_paths[0])
    return -1;
  int slot = -1;
  g_mutex_lock (&cleanup_lock);
  for (int i = 0; i < CLEANUP_SLOTS && slot < 0; i++)
    if (!cleanup_used[i]) {
      strcpy (cleanup_paths[i], path);
      cleanup_used[i] = 1;   /* only now does the handler look at the path */
      slot = i;
    }
  g_mutex_unlock (&cleanup_lock);
  return slot;
}

void
eb_cleanup_remove (int slot)
{
  if (slot < 0 || slot >= CLEANUP_SLOTS)
    return;
  g_mutex_lock (&cleanup_lock);
  cleanup_used[slot] = 0;
  g_mutex_unlock (&cleanup_lock);
}

void
eb_cleanup_run (void)
{
  for (int i = 0; i < CLEANUP_SLOTS; i++)
    if (cleanup_used[i])
      unlink (cleanup_paths[i]);
}
