/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-mailbox.c - mbox and Maildir (see eb-mailbox.h). */
#include "eb-mailbox.h"
#include "eb-error.h"
#include <extbody/extbody.h>    /* eb_maildir_sniff, eb_cleanup_run: public */
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
__attribute__ ((target ("avx2"))) static gsize
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

GMappedFile *
eb_maildir_map_entry (const char *path, const char **skipped)
{
  *skipped = NULL;
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  int e = errno;
  struct stat st;
  if ((fd < 0 && e == ELOOP) || (fd >= 0 && (fstat (fd, &st) != 0 || !S_ISREG (st.st_mode))))
    *skipped = "not a regular file";
  else if (fd < 0 && e == ENOENT)   /* a mail reader moved or deleted it meanwhile */
    *skipped = "gone since the folder was listed";
  GMappedFile *map = fd >= 0 && !*skipped ? g_mapped_file_new_from_fd (fd, FALSE, NULL) : NULL;
  if (fd >= 0)
    close (fd);
  return map;
}

gboolean
eb_maildir_sniff (const char *path)
{
  const char *subs[] = { "cur", "new", "tmp" };
  for (guint i = 0; i < 3; i++) {
    g_autofree char *d = g_build_filename (path, subs[i], NULL);
    if (!g_file_test (d, G_FILE_TEST_IS_DIR))
      return FALSE;
  }
  return TRUE;
}

char *
eb_maildir_problem (const char *path)
{
  int fd = open (path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return g_strdup_printf ("cannot open %s: %s", path, g_strerror (e));
  }
  const char *subs[] = { "cur", "new", "tmp" };
  g_autoptr (GString) missing = g_string_new (NULL);
  guint n_missing = 0;
  char *problem = NULL;
  for (guint i = 0; i < 3 && !problem; i++) {
    struct stat st;
    g_autofree char *d = g_build_filename (path, subs[i], NULL);
    if (fstatat (fd, subs[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
      int e = errno;
      if (e == ENOENT) {
        g_string_append_printf (missing, "%s%s/", n_missing ? ", " : "", subs[i]);
        n_missing++;
      } else {
        problem = g_strdup_printf ("%s: %s", d, g_strerror (e));
      }
    } else if (S_ISLNK (st.st_mode)) {
      continue;   /* never followed: the walk skips it with a line, a rewrite refuses it */
    } else if (!S_ISDIR (st.st_mode)) {
      problem = g_strdup_printf ("%s: not a directory", d);
    } else {
      int sfd = openat (fd, subs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sfd < 0) {
        int e = errno;
        problem = g_strdup_printf ("cannot open %s: %s", d, g_strerror (e));
      } else {
        close (sfd);
      }
    }
  }
  close (fd);
  if (!problem && n_missing)
    problem = g_strdup_printf ("%s: not a Maildir: no %s (a Maildir has cur/, new/ and tmp/)", path,
                               missing->str);
  return problem;
}

/* ---- files removed when a signal stops the process --------------------- */

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

static gboolean
fsync_dir (const char *path, GError **error)
{
  g_autofree char *dir = g_path_get_dirname (path);
  int d = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0 || fsync (d) != 0) {
    int e = errno;
    if (d >= 0)
      close (d);
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot sync %s: %s", dir,
                 g_strerror (e));
    return FALSE;
  }
  close (d);
  return TRUE;
}

#define XATTR_LIST_MAX_BYTES 65536   /* the kernel's own limit (XATTR_LIST_MAX) */
#define XATTR_VALUE_MAX_BYTES 65536  /* and per value (XATTR_SIZE_MAX) */

/* Copy the user.* extended attributes of @from to @to. Where the file system
 * has none (ENOTSUP) there is nothing to copy; any other failure is returned. */
static gboolean
copy_xattrs (int from, int to, int *err)
{
  g_autofree char *names = g_malloc (XATTR_LIST_MAX_BYTES);
  ssize_t n = flistxattr (from, names, XATTR_LIST_MAX_BYTES);
  if (n < 0) {
    if (errno == ENOTSUP)
      return TRUE;
    *err = errno;
    return FALSE;
  }
  g_autofree char *value = g_malloc (XATTR_VALUE_MAX_BYTES);
  for (const char *name = names; name < names + n; name += strlen (name) + 1) {
    if (!g_str_has_prefix (name, "user."))
      continue;
    ssize_t v = fgetxattr (from, name, value, XATTR_VALUE_MAX_BYTES);
    if (v < 0 || fsetxattr (to, name, value, (size_t) v, 0) != 0) {
      if (errno == ENOTSUP || errno == ENODATA)   /* the target cannot hold it; gone meanwhile */
        continue;
      *err = errno;
      return FALSE;
    }
  }
  return TRUE;
}

gboolean
eb_copy_file_attributes (int from, int to, GError **error)
{
  struct stat st;
  int e = 0;
  if (fstat (from, &st) != 0)
    e = errno;
  else if (fchown (to, st.st_uid, st.st_gid) != 0 && geteuid () == 0)
    e = errno;   /* not root: a file of our own, and it stays ours */
  else if (fchmod (to, st.st_mode & 07777) != 0)
    e = errno;
  else
    copy_xattrs (from, to, &e);
  if (e) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e),
                 "cannot copy owner, mode and attributes: %s", g_strerror (e));
    return FALSE;
  }
  return TRUE;
}

gboolean
eb_replace_file (const char *path, int old_fd, const char *backup, EbWriteFunc write_fn,
                 gpointer data, GError **error)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *tmpl = g_strdup_printf ("%s/.%s.extbody-XXXXXX", dir, base);
  int fd = g_mkstemp_full (tmpl, O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
                 "cannot create a file beside %s: %s", path, g_strerror (errno));
    return FALSE;
  }
  int cleanup = eb_cleanup_add (tmpl);
  struct stat before;
  gboolean have_before = fstat (old_fd, &before) == 0;
  gboolean changed = TRUE;
  gboolean ok = write_fn (fd, data, &changed, error);
  if (ok && !changed) {
    close (fd);
    unlink (tmpl);
    eb_cleanup_remove (cleanup);
    return TRUE;
  }
  if (ok && fsync (fd) != 0) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno), "cannot sync %s: %s", tmpl,
                 g_strerror (errno));
    ok = FALSE;
  }
  if (ok && !eb_copy_file_attributes (old_fd, fd, error)) {
    g_prefix_error (error, "%s from %s: ", tmpl, path);
    ok = FALSE;
  }
  if (close (fd) != 0 && ok) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno), "cannot write %s: %s", tmpl,
                 g_strerror (errno));
    ok = FALSE;
  }
  /* A writer that does not lock (or a file put in its place) changed the
   * mailbox while the new one was written: renaming now would lose what it
   * wrote. The check and the rename are not atomic; locking writers never
   * get here. */
  struct stat now, named;
  if (ok && have_before
      && (fstat (old_fd, &now) != 0 || stat (path, &named) != 0
          || now.st_size != before.st_size || now.st_mtim.tv_sec != before.st_mtim.tv_sec
          || now.st_mtim.tv_nsec != before.st_mtim.tv_nsec
          || named.st_dev != before.st_dev || named.st_ino != before.st_ino)) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_AGAIN,
                 "%s changed during the run without taking the lock", path);
    ok = FALSE;
  }
  if (ok && backup) {
    unlink (backup);
    if (link (path, backup) != 0) {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
                   "cannot keep the backup %s: %s", backup, g_strerror (errno));
      ok = FALSE;
    }
  }
  if (ok && rename (tmpl, path) != 0) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno), "cannot rename %s to %s: %s",
                 tmpl, path, g_strerror (errno));
    ok = FALSE;
  }
  if (!ok)
    unlink (tmpl);
  eb_cleanup_remove (cleanup);
  return ok && fsync_dir (path, error);
}

static gint
cmp_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* Open the directory @name under @dirfd, never through a symbolic link. */
static int
open_subdir (int dirfd, const char *name)
{
  return openat (dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* A symbolic link where a directory is expected: the reason it is skipped. */
static const char *
subdir_problem (int dirfd, const char *name, int *err)
{
  struct stat st;
  *err = 0;
  if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    *err = errno;
    return NULL;
  }
  if (S_ISLNK (st.st_mode))
    return "a symbolic link, not followed";
  if (!S_ISDIR (st.st_mode))
    return "not a directory";
  return NULL;
}

static void
add_skip (GPtrArray *skipped, const char *path, const char *why)
{
  if (skipped)
    g_ptr_array_add (skipped, g_strdup_printf ("%s: %s", path, why));
}

/* The messages of the Maildir open as @mdfd (named @dir). Its cur/, new/ and
 * tmp/ must be directories of their own, not symbolic links. */
static gboolean
list_one (int mdfd, const char *dir, GPtrArray *out, GPtrArray *skipped, GError **error)
{
  const char *subs[] = { "tmp", "new", "cur" };
  for (guint i = 0; i < 3; i++) {
    g_autofree char *d = g_build_filename (dir, subs[i], NULL);
    int e = 0;
    const char *why = subdir_problem (mdfd, subs[i], &e);
    if (why) {
      add_skip (skipped, d, why);
      continue;
    }
    if (i == 0)
      continue;   /* tmp/ only checked: a link there would write outside */
    int fd = e ? -1 : open_subdir (mdfd, subs[i]);
    DIR *dp = fd >= 0 ? fdopendir (fd) : NULL;
    if (!dp) {
      e = e ? e : errno;
      if (fd >= 0)
        close (fd);
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot open %s: %s", d,
                   g_strerror (e));
      return FALSE;
    }
    struct dirent *de;
    while ((de = readdir (dp)))
      if (de->d_name[0] != '.')
        g_ptr_array_add (out, g_build_filename (d, de->d_name, NULL));
    closedir (dp);
  }
  return TRUE;
}

GPtrArray *
eb_maildir_list_full (const char *dir, gboolean recursive, GPtrArray *skipped, GError **error)
{
  GPtrArray *out = g_ptr_array_new_with_free_func (g_free);
  /* the folder named may be reached through a symbolic link, as written */
  int mdfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (mdfd < 0) {
    int e = errno;
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot open %s: %s", dir,
                 g_strerror (e));
    g_ptr_array_unref (out);
    return NULL;
  }
  gboolean ok = list_one (mdfd, dir, out, skipped, error);
  if (ok && recursive) {
    int dup_fd = dup (mdfd);
    DIR *dp = dup_fd >= 0 ? fdopendir (dup_fd) : NULL;
    struct dirent *de;
    while (ok && dp && (de = readdir (dp))) {
      const char *n = de->d_name;
      if (n[0] != '.' || !strcmp (n, ".") || !strcmp (n, ".."))
        continue;
      g_autofree char *sub = g_build_filename (dir, n, NULL);
      int e = 0;
      const char *why = subdir_problem (mdfd, n, &e);
      if (why && strcmp (why, "not a directory") != 0) {
        add_skip (skipped, sub, why);   /* a folder elsewhere, maybe another user's */
        continue;
      }
      int sfd = why || e ? -1 : open_subdir (mdfd, n);
      struct stat st;
      if (sfd >= 0 && fstatat (sfd, "cur", &st, AT_SYMLINK_NOFOLLOW) == 0
          && fstatat (sfd, "new", &st, AT_SYMLINK_NOFOLLOW) == 0
          && fstatat (sfd, "tmp", &st, AT_SYMLINK_NOFOLLOW) == 0)
        ok = list_one (sfd, sub, out, skipped, error);
      if (sfd >= 0)
        close (sfd);
    }
    if (dp)
      closedir (dp);
    else if (dup_fd >= 0)
      close (dup_fd);
  }
  close (mdfd);
  if (!ok) {
    g_ptr_array_unref (out);
    return NULL;
  }
  g_ptr_array_sort (out, cmp_str);
  return out;
}

GPtrArray *
eb_maildir_list (const char *dir, gboolean recursive, GError **error)
{
  return eb_maildir_list_full (dir, recursive, NULL, error);
}

/* The size of a message with every line end counted as CRLF: Dovecot's
 * "virtual size", the ",W=" of a Maildir++ name. */
guint64
eb_maildir_virtual_size (const char *data, gsize len)
{
  guint64 n = len;
  for (const char *p = data, *end = data + len; (p = memchr (p, '\n', (gsize) (end - p))); p++)
    n += p == data || p[-1] != '\r';
  return n;
}

/* @rest (the part of a Maildir name after its base: ",S=N,W=M:2,FLAGS") with
 * ",S=" and ",W=" given the new sizes, where they are. Only the part before
 * the ":" info holds them. */
static char *
with_sizes (const char *rest, guint64 size, guint64 vsize)
{
  GString *o = g_string_new (NULL);
  const char *info = strchr (rest, ':');
  const char *p = rest, *stop = info ? info : rest + strlen (rest);
  while (p < stop) {
    if (*p == ',' && stop - p >= 3 && (p[1] == 'S' || p[1] == 'W') && p[2] == '=') {
      char key = p[1];
      p += 3;
      while (p < stop && g_ascii_isdigit (*p))
        p++;
      g_string_append_printf (o, ",%c=%" G_GUINT64_FORMAT, key, key == 'S' ? size : vsize);
      continue;
    }
    g_string_append_c (o, *p++);
  }
  g_string_append (o, stop);
  return g_string_free (o, FALSE);
}

/* A new unique base name (the Maildir convention: time.MusecPpidQn.host, the
 * host with "/" and ":" escaped). */
static char *
unique_base (void)
{
  static gint counter = 0;
  gint64 now = g_get_real_time ();
  char host[256] = "localhost";
  gethostname (host, sizeof host - 1);
  GString *h = g_string_new (NULL);
  for (const char *c = host; *c; c++)
    if (*c == '/')
      g_string_append (h, "\\057");
    else if (*c == ':')
      g_string_append (h, "\\072");
    else if (*c == ',')
      g_string_append (h, "\\054");
    else
      g_string_append_c (h, *c);
  char *b = g_strdup_printf ("%" G_GINT64_FORMAT ".M%06dP%ldQ%d.%s", now / G_USEC_PER_SEC,
                             (int) (now % G_USEC_PER_SEC), (long) getpid (),
                             g_atomic_int_add (&counter, 1), h->str);
  g_string_free (h, TRUE);
  return b;
}

gboolean
eb_maildir_replace (const char *path, const char *data, gsize len, char **new_path, GError **error)
{
  g_autofree char *sub = g_path_get_dirname (path);        /* .../cur or .../new */
  g_autofree char *md = g_path_get_dirname (sub);
  g_autofree char *name = g_path_get_basename (path);
  g_autofree char *base = unique_base ();
  g_autofree char *tmpdir = g_build_filename (md, "tmp", NULL);
  g_autofree char *tmp = g_build_filename (tmpdir, base, NULL);
  struct stat st;
  /* tmp/ and the message's own folder: directories of the Maildir, never
   * symbolic links to somewhere else */
  const char *dirs[] = { tmpdir, sub };
  for (guint i = 0; i < 2; i++) {
    if (lstat (dirs[i], &st) != 0) {
      int e = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "%s: %s%s", dirs[i], g_strerror (e),
                   i == 0 && e == ENOENT ? " (a Maildir has cur/, new/ and tmp/: a message is written in tmp/ first)" : "");
      return FALSE;
    }
    if (!S_ISDIR (st.st_mode)) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR, "%s: %s", dirs[i],
                   S_ISLNK (st.st_mode) ? "a symbolic link, not followed (a directory of the Maildir's own is needed)"
                                        : "not a directory");
      return FALSE;
    }
  }
  int old = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (old < 0) {
    int e = errno;
    if (e == ENOENT) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_AGAIN,
                   "%s was moved or deleted during the run", path);
    } else {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot open %s: %s", path,
                   g_strerror (e));
    }
    return FALSE;
  }
  int fd = open (tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    int e = errno;
    close (old);
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot create %s: %s", tmp,
                 g_strerror (e));
    return FALSE;
  }
  int cleanup = eb_cleanup_add (tmp);
  gsize done = 0;
  int e = 0;
  while (done < len) {
    ssize_t n = write (fd, data + done, len - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      e = n < 0 ? errno : ENOSPC;
      break;
    }
    done += (gsize) n;
  }
  g_autoptr (GError) attr_error = NULL;
  if (!e && fsync (fd) != 0)
    e = errno;
  gboolean attrs = !e && eb_copy_file_attributes (old, fd, &attr_error);
  close (old);
  if (!e && close (fd) != 0)
    e = errno;
  else if (e)
    close (fd);
  if (e || !attrs) {
    unlink (tmp);
    eb_cleanup_remove (cleanup);
    if (attr_error)
      g_set_error (error, G_FILE_ERROR, attr_error->code, "%s: %s", tmp, attr_error->message);
    else
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot write %s: %s", tmp,
                   g_strerror (e));
    return FALSE;
  }
  /* A mail reader moved (new/ to cur/, a flag changed) or deleted the message
   * while it was being resolved: delivering now would bring back a deleted
   * message or make a second copy of a moved one. The check and the delivery
   * are not atomic; Maildir has no lock to close that gap. */
  if (lstat (path, &st) != 0 || !S_ISREG (st.st_mode)) {
    unlink (tmp);
    eb_cleanup_remove (cleanup);
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_AGAIN,
                 "%s was moved or deleted during the run", path);
    return FALSE;
  }
  /* The new version is a new message (a new name, so an IMAP server gives it
   * a new UID and clients fetch it again), in the same folder with the same
   * flags; delivered first, the old one removed after: a crash between the
   * two leaves both, never neither. */
  const char *rest = name + strcspn (name, ",:");
  g_autofree char *newrest = with_sizes (rest, len, eb_maildir_virtual_size (data, len));
  g_autofree char *target = g_strconcat (sub, "/", base, newrest, NULL);
  if (link (tmp, target) != 0) {
    e = errno;
    unlink (tmp);
    eb_cleanup_remove (cleanup);
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e), "cannot deliver %s as %s: %s",
                 tmp, target, g_strerror (e));
    return FALSE;
  }
  unlink (tmp);
  eb_cleanup_remove (cleanup);
  if (!fsync_dir (target, error))
    return FALSE;   /* the old one is still there: at worst both */
  if (unlink (path) != 0 && errno != ENOENT) {
    e = errno;
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (e),
                 "delivered %s but cannot remove the old %s: %s", target, path, g_strerror (e));
    return FALSE;
  }
  *new_path = g_steal_pointer (&target);
  return fsync_dir (*new_path, error);
}
