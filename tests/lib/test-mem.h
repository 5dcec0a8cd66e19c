/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-mem.h - prefix and suffix checks on bytes that are not a C string (a
 * message as a writer left it in a GByteArray, with no NUL after it), for the
 * tests. g_str_has_prefix() and g_str_has_suffix() take C strings: from GLib
 * 2.76 (Debian 13's 2.84) they are macros that call strlen() on the string,
 * which reads past the end of such bytes (AddressSanitizer stops there). The
 * bytes are never given a NUL to suit a test: the library reads them without
 * one, and the sanitizers must see it read past them if it ever does. */
#pragma once

#include <glib.h>
#include <string.h>

/* TRUE when the @len bytes at @data begin with @prefix. */
static inline gboolean
test_mem_has_prefix (const void *data, gsize len, const char *prefix)
{
  gsize n = strlen (prefix);
  return len >= n && memcmp (data, prefix, n) == 0;
}

/* TRUE when the @len bytes at @data end with @suffix. */
static inline gboolean
test_mem_has_suffix (const void *data, gsize len, const char *suffix)
{
  gsize n = strlen (suffix);
  return len >= n && memcmp ((const char *) data + len - n, suffix, n) == 0;
}
