/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-mbox.c - mbox: From_ lines, splitting, locking (see eb-mbox.h). */
#include "eb-mbox.h"
#include "eb-cleanup.h"
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

/* ---- From_ lines ---------------------------------------------------------- */

#define FROM_LINE_MAX 1024   /* a From_ line longer than this is body text */

static gboolean
word_in (const char *w, gsize n, const char *list)
{
  /* @list: three-letter words one after another, e.g. "MonTue" */
  if (n != 3)
    return FALSE;
  for (const char *l = list; *l; l += 3)
    if (g_ascii_strncasecmp (w, l, 3) == 0)
      return TRUE;
  return FALSE;
}

static gboolean
all_digits (const char *w, gsize n, gsize min, gsize max)
{
  if (n < min || n > max)
    return FALSE;
  for (gsize i = 0; i < n; i++)
    if (!g_ascii_isdigit (w[i]))
      return FALSE;
  return TRUE;
}

/* hh:mm or hh:mm:ss */
static gboolean
is_time (const char *w, gsize n)
{
  if ((n != 5 && n != 8) || !all_digits (w, 2, 2, 2) || w[2] != ':' || !all_digits (w + 3, 2, 2, 2))
    return FALSE;
  return n == 5 || (w[5] == ':' && all_digits (w + 6, 2, 2, 2));
}

/* A time zone: "+0100", "-0800", or a name of letters ("PST", "MET", "GMT+1"). */
static gboolean
is_zone (const char *w, gsize n)
{
  if (n == 5 && (w[0] == '+' || w[0] == '-') && all_digits (w + 1, 4, 4, 4))
    return TRUE;
  if (n < 1 || n > 8 || !g_ascii_isalpha (w[0]))
    return FALSE;
  for (gsize i = 0; i < n; i++)
    if (!g_ascii_isalnum (w[i]) && w[i] != '+' && w[i] != '-')
      return FALSE;
  return TRUE;
}

typedef struct { const char *p; gsize n; } Word;

/* Do @w[@i...] read as a ctime date: [Wday] Mon DD hh:mm[:ss] [ZONE] YYYY
 * [ZONE] [remote from HOST]? */
static gboolean
date_at (const Word *w, guint n, guint i)
{
  if (i < n && word_in (w[i].p, w[i].n, "MonTueWedThuFriSatSun"))
    i++;
  if (i >= n || !word_in (w[i].p, w[i].n, "JanFebMarAprMayJunJulAugSepOctNovDec"))
    return FALSE;
  if (++i >= n || !all_digits (w[i].p, w[i].n, 1, 2))
    return FALSE;
  if (++i >= n || !is_time (w[i].p, w[i].n))
    return FALSE;
  i++;
  for (guint z = 0; z < 2 && i < n && !all_digits (w[i].p, w[i].n, 2, 4) && is_zone (w[i].p, w[i].n); z++)
    i++;
  if (i >= n || !all_digits (w[i].p, w[i].n, 2, 4))
    return FALSE;
  i++;
  if (i < n && is_zone (w[i].p, w[i].n) && !(w[i].n == 6 && g_ascii_strncasecmp (w[i].p, "remote", 6) == 0))
    i++;
  if (i == n)
    return TRUE;
  /* UUCP: "remote from HOST" */
  return i + 3 == n && w[i].n == 6 && g_ascii_strncasecmp (w[i].p, "remote", 6) == 0
         && w[i + 1].n == 4 && g_ascii_strncasecmp (w[i + 1].p, "from", 4) == 0;
}

gboolean
eb_mbox_is_from_line (const char *line, gsize len)
{
  if (len < 5 || memcmp (line, "From ", 5) != 0)
    return FALSE;
  const char *nl = memchr (line, '\n', len);
  gsize end = nl ? (gsize) (nl - line) : len;
  if (end > 5 && line[end - 1] == '\r')
    end--;
  if (end > FROM_LINE_MAX)
    return FALSE;
  Word w[16];
  guint n = 0;
  gsize p = 5;
  while (p < end) {
    while (p < end && (line[p] == ' ' || line[p] == '\t'))
      p++;
    if (p == end)
      break;
    gsize s = p;
    if (n == 0 && line[p] == '"') {   /* a quoted sender may hold spaces */
      p++;
      while (p < end && line[p] != '"')
        p += line[p] == '\\' && p + 1 < end ? 2 : 1;
      p += p < end;
    }
    while (p < end && line[p] != ' ' && line[p] != '\t')
      p++;
    if (n == G_N_ELEMENTS (w))
      return FALSE;
    w[n++] = (Word) { line + s, p - s };
  }
  /* the sender is the first word (it may be missing: "From Sat Nov ..."),
   * the date follows it */
  return (n >= 1 && date_at (w, n, 1)) || date_at (w, n, 0);
}

/* A separator at @p (after a blank line): a real From_ line, or any line
 * starting "From " at the very start of the file, which the caller has
 * already taken for an mbox. */
static gboolean
is_from_line (const char *buf, gsize len, gsize p)
{
  if (len - p < 5 || memcmp (buf + p, "From ", 5) != 0)
    return FALSE;
  return p == 0 || eb_mbox_is_from_line (buf + p, len - p);
}

/* The first "\nFrom " at or after @p, or NULL: sixteen bytes at a time (GCC
 * and clang vector extensions; plain C elsewhere), a "\n" followed by an "F"
 * flagging the places memcmp then looks at. */
typedef guint8 V16 __attribute__ ((vector_size (16)));

static const char *
find_nl_from (const char *p, const char *end)
{
  const V16 nl = { '\n', '\n', '\n', '\n', '\n', '\n', '\n', '\n',
                   '\n', '\n', '\n', '\n', '\n', '\n', '\n', '\n' };
  const V16 ef = { 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F' };
  while (end - p >= 17 + 5) {
    V16 a, b;
    memcpy (&a, p, 16);
    memcpy (&b, p + 1, 16);
    V16 m = (V16) ((a == nl) & (b == ef));
    guint64 w[2];
    memcpy (w, &m, sizeof w);
    if (w[0] | w[1]) {
      for (guint k = 0; k < 16; k++)
        if (m[k] && memcmp (p + k + 1, "From ", 5) == 0)
          return p + k;
    }
    p += 16;
  }
  return end - p >= 6 ? memmem (p, (gsize) (end - p), "\nFrom ", 6) : NULL;
}

/* The start of the first separator at or after @p: a line that is a From_
 * line after a blank line (the start of the file counts as one), or @len. */
static gsize
next_separator (const char *buf, gsize len, gsize p)
{
  if (p == 0 && is_from_line (buf, len, 0))
    return 0;
  while (p < len) {
    const char *hit = find_nl_from (buf + p, buf + len);
    if (!hit)
      return len;
    gsize nl = (gsize) (hit - buf), s = nl + 1;   /* nl ends the line before */
    gboolean blank = nl == 0 || buf[nl - 1] == '\n'
                     || (buf[nl - 1] == '\r' && (nl == 1 || buf[nl - 2] == '\n'));
    if (blank && eb_mbox_is_from_line (buf + s, len - s))
      return s;
    p = s;
  }
  return len;
}

void
eb_mbox_find_separators (const char *buf, gsize len, gsize from, gsize to, GArray *out)
{
  to = MIN (to, len);
  if (from >= to)
    return;
  if (from == 0 && is_from_line (buf, len, 0))
    g_array_append_val (out, from);
  gsize p = from == 0 ? 0 : from - 1;   /* the "\n" before a separator at @from */
  const char *end = buf + MIN (len, to + 5);   /* room for "From " after the last */
  while (p < to) {
    const char *hit = find_nl_from (buf + p, end);
    if (!hit)
      return;
    gsize nl = (gsize) (hit - buf), s = nl + 1;
    if (s >= to)
      return;
    gboolean blank = nl == 0 || buf[nl - 1] == '\n'
                     || (buf[nl - 1] == '\r' && (nl == 1 || buf[nl - 2] == '\n'));
    if (blank && eb_mbox_is_from_line (buf + s, len - s))
      g_array_append_val (out, s);
    p = s;
  }
}

/* "external-body" in any case at @p (@p + 13 <= the end), as
 * eb_message_may_hold_external_body() looks for it. */
static gboolean
is_external_body_at (const char *p)
{
  static const char pat[] = "external-body";
  for (guint i = 0; i < sizeof pat - 1; i++)
    if (g_ascii_tolower (p[i]) != pat[i])
      return FALSE;
  return TRUE;
}

/* One candidate of eb_mbox_find_separators_and_hits at @q: a "\n" (a From_
 * line may follow) or a "-" (the middle of "external-body"). */
static inline void
candidate (const char *buf, gsize len, gsize from, gsize to, gsize q, GArray *seps, GArray *hits)
{
  if (buf[q] == '\n') {
    gsize s = q + 1;
    if (s < to && s >= from && len - s >= 5 && memcmp (buf + s, "From ", 5) == 0) {
      gboolean blank = q == 0 || buf[q - 1] == '\n'
                       || (buf[q - 1] == '\r' && (q == 1 || buf[q - 2] == '\n'));
      if (blank && eb_mbox_is_from_line (buf + s, len - s))
        g_array_append_val (seps, s);
    }
  } else if (buf[q] == '-' && q >= from && q >= 8 && len - q >= 5
             && is_external_body_at (buf + q - 8)) {
    gsize h = q - 8;
    g_array_append_val (hits, h);
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_AVX2_SCAN 1

/* 64 bytes at a time with AVX2: the bytes that are "\n", "F", "-" and "b" or
 * "B" as bit masks; a candidate is a "\n" before an "F" or a "-" before a
 * "b" (the last byte of a block is paired with the first of the next).
 * Returns where it stopped (fewer than 64 bytes before @to, or @len). */
static __attribute__ ((target ("avx2"))) gsize
scan_avx2 (const char *buf, gsize len, gsize from, gsize to, gsize q, GArray *seps, GArray *hits)
{
  const __m256i nl = _mm256_set1_epi8 ('\n'), ef = _mm256_set1_epi8 ('F');
  const __m256i da = _mm256_set1_epi8 ('-'), bb = _mm256_set1_epi8 ('b');
  const __m256i lc = _mm256_set1_epi8 (0x20);
  while (q + 64 <= to && len - q >= 65) {
    __m256i a0 = _mm256_loadu_si256 ((const __m256i *) (const void *) (buf + q));
    __m256i a1 = _mm256_loadu_si256 ((const __m256i *) (const void *) (buf + q + 32));
#define MASK64(x0, x1) \
    ((guint64) (guint32) _mm256_movemask_epi8 (x0) | ((guint64) (guint32) _mm256_movemask_epi8 (x1) << 32))
    guint64 mnl = MASK64 (_mm256_cmpeq_epi8 (a0, nl), _mm256_cmpeq_epi8 (a1, nl));
    guint64 mda = MASK64 (_mm256_cmpeq_epi8 (a0, da), _mm256_cmpeq_epi8 (a1, da));
    if (!(mnl | mda)) {
      q += 64;
      continue;
    }
    guint64 mef = MASK64 (_mm256_cmpeq_epi8 (a0, ef), _mm256_cmpeq_epi8 (a1, ef));
    guint64 mbb = MASK64 (_mm256_cmpeq_epi8 (_mm256_or_si256 (a0, lc), bb),
                          _mm256_cmpeq_epi8 (_mm256_or_si256 (a1, lc), bb));
#undef MASK64
    char after = buf[q + 64];
    mef = (mef >> 1) | ((guint64) (after == 'F') << 63);
    mbb = (mbb >> 1) | ((guint64) ((after | 0x20) == 'b') << 63);
    guint64 c = (mnl & mef) | (mda & mbb);
    while (c) {
      candidate (buf, len, from, to, q + (gsize) __builtin_ctzll (c), seps, hits);
      c &= c - 1;
    }
    q += 64;
  }
  return q;
}
#endif

void
eb_mbox_find_separators_and_hits (const char *buf, gsize len, gsize from, gsize to, GArray *seps,
                                  GArray *hits)
{
  to = MIN (to, len);
  if (from >= to)
    return;
  if (from == 0 && is_from_line (buf, len, 0))
    g_array_append_val (seps, from);
  /* a "\n" before an "F", or a "-" before a "b" or "B", flags a place to look
   * at (the "\n" before a separator at @from is the byte before it) */
  gsize q = from == 0 ? 0 : from - 1;
#ifdef HAVE_AVX2_SCAN
  if (__builtin_cpu_supports ("avx2"))
    q = scan_avx2 (buf, len, from, to, q, seps, hits);
#endif
  /* sixteen bytes at a time */
  const V16 nl = { '\n', '\n', '\n', '\n', '\n', '\n', '\n', '\n',
                   '\n', '\n', '\n', '\n', '\n', '\n', '\n', '\n' };
  const V16 ef = { 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F', 'F' };
  const V16 da = { '-', '-', '-', '-', '-', '-', '-', '-', '-', '-', '-', '-', '-', '-', '-', '-' };
  const V16 bb = { 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b', 'b' };
  const V16 lc = { 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
                   0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20 };
  while (q + 16 <= to && len - q >= 17) {
    V16 a, b;
    memcpy (&a, buf + q, 16);
    memcpy (&b, buf + q + 1, 16);
    V16 m = (V16) (((a == nl) & (b == ef)) | ((a == da) & ((b | lc) == bb)));
    guint64 w[2];
    memcpy (w, &m, sizeof w);
    if (w[0] | w[1])
      for (guint k = 0; k < 16; k++)
        if (m[k])
          candidate (buf, len, from, to, q + k, seps, hits);
    q += 16;
  }
  for (; q < to; q++)
    if (buf[q] == '\n' || buf[q] == '-')
      candidate (buf, len, from, to, q, seps, hits);
}

gboolean
eb_mbox_read_separators_and_hits (int fd, gsize len, gsize from, gsize to, GArray *seps,
                                  GArray *hits)
{
  /* a piece, with the bytes before it that tell a blank line and the start of
   * "external-body", and after it the rest of a From_ line and of "body" */
  const gsize piece = 256 << 10, before = 8, after = FROM_LINE_MAX + 8;
  to = MIN (to, len);
  if (from >= to)
    return TRUE;
  g_autofree char *tmp = g_malloc (MIN (piece, to - from) + before + after);
  for (gsize f = from; f < to; f += piece) {
    gsize t = MIN (to, f + piece);
    gsize off = f >= before ? f - before : 0, end = MIN (len, t + after), got = 0;
    while (got < end - off) {
      ssize_t n = pread (fd, tmp + got, end - off - got, (off_t) (off + got));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return FALSE;
      got += (gsize) n;
    }
    guint s0 = seps->len, h0 = hits->len;
    eb_mbox_find_separators_and_hits (tmp, end - off, f - off, t - off, seps, hits);
    for (guint i = s0; i < seps->len; i++)
      g_array_index (seps, gsize, i) += off;
    for (guint i = h0; i < hits->len; i++)
      g_array_index (hits, gsize, i) += off;
  }
  return TRUE;
}

void
eb_mbox_iter_init (EbMboxIter *iter, const char *buf, gsize len)
{
  iter->buf = buf;
  iter->len = len;
  iter->next = next_separator (buf, len, 0);
}

gboolean
eb_mbox_iter_next (EbMboxIter *iter, EbMboxMsg *msg)
{
  const char *buf = iter->buf;
  gsize len = iter->len;
  if (iter->next >= len)
    return FALSE;
  msg->from = iter->next;
  const char *nl = memchr (buf + msg->from, '\n', len - msg->from);
  msg->start = nl ? (gsize) (nl - buf) + 1 : len;
  iter->next = msg->end = next_separator (buf, len, msg->start);
  return TRUE;
}

static GArray *
split (const char *buf, gsize len, gboolean release)
{
  const gsize chunk = 16 << 20;
  gsize page = (gsize) sysconf (_SC_PAGESIZE), released = 0;
  GArray *msgs = g_array_new (FALSE, FALSE, sizeof (EbMboxMsg));
  EbMboxIter iter;
  EbMboxMsg m;
  eb_mbox_iter_init (&iter, buf, len);
  while (eb_mbox_iter_next (&iter, &m)) {
    g_array_append_val (msgs, m);
    if (release && m.end < len && m.end - released >= chunk) {
      gsize z = (m.end - 4096) / page * page;   /* keep the line being looked at */
      if (z > released)
        madvise ((void *) (buf + released), z - released, MADV_DONTNEED);
      released = z;
    }
  }
  return msgs;
}

GArray *
eb_mbox_split (const char *buf, gsize len)
{
  return split (buf, len, FALSE);
}

GArray *
eb_mbox_split_mapped (const char *buf, gsize len)
{
  return split (buf, len, TRUE);
}

void
eb_mbox_remove_stale (const char *path)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *prefix = g_strdup_printf (".%s.extbody-", base);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *n;
  while (d && (n = g_dir_read_name (d)))
    if (g_str_has_prefix (n, prefix) && strlen (n) == strlen (prefix) + 6) {
      g_autofree char *p = g_build_filename (dir, n, NULL);
      struct stat st;
      if (lstat (p, &st) == 0 && S_ISREG (st.st_mode))
        unlink (p);
    }
}

struct _EbMboxLock {
  char *dotlock;
  int   fd;
  int   cleanup;
};

EbMboxLock *
eb_mbox_lock (const char *path, int fd, guint timeout_s, GError **error)
{
  g_autofree char *dot = g_strconcat (path, ".lock", NULL);
  int cleanup = -1;
  gint64 end = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;
  for (;;) {
    int lfd = open (dot, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (lfd >= 0) {
      g_autofree char *pid = g_strdup_printf ("%ld\n", (long) getpid ());
      if (write (lfd, pid, strlen (pid)) < 0) {
        /* the lock still stands; its content only helps find stale ones */
      }
      close (lfd);
      cleanup = eb_cleanup_add (dot);
      break;
    }
    if (errno != EEXIST) {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
                   "cannot create the lock file %s: %s", dot, g_strerror (errno));
      return NULL;
    }
    /* stale: its process is gone */
    g_autofree char *content = NULL;
    if (g_file_get_contents (dot, &content, NULL, NULL)) {
      long pid = atol (content);
      if (pid > 0 && kill ((pid_t) pid, 0) != 0 && errno == ESRCH) {
        unlink (dot);
        continue;
      }
    }
    if (g_get_monotonic_time () > end) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_AGAIN, "%s is locked (%s)", path, dot);
      return NULL;
    }
    g_usleep (100000);
  }
  /* the fcntl lock within the same time (F_SETLKW would wait for ever) */
  struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
  while (fcntl (fd, F_SETLK, &fl) != 0) {
    int e = errno;
    if ((e == EACCES || e == EAGAIN || e == EINTR) && g_get_monotonic_time () <= end) {
      g_usleep (100000);
      continue;
    }
    unlink (dot);
    eb_cleanup_remove (cleanup);
    if (e == EACCES || e == EAGAIN)
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_AGAIN, "%s is locked (fcntl) by another program", path);
    else
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot lock %s: %s", path,
                   g_strerror (e));
    return NULL;
  }
  EbMboxLock *l = g_new0 (EbMboxLock, 1);
  l->dotlock = g_steal_pointer (&dot);
  l->fd = fd;
  l->cleanup = cleanup;
  return l;
}

void
eb_mbox_unlock (EbMboxLock *l)
{
  if (!l)
    return;
  struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET };
  fcntl (l->fd, F_SETLK, &fl);
  unlink (l->dotlock);
  eb_cleanup_remove (l->cleanup);
  g_free (l->dotlock);
  g_free (l);
}
