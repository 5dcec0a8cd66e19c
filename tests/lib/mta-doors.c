/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* mta-doors.c - see mta-doors.h. */
#include "mta-doors.h"

#include "mta-dir.h"
#include "test-server.h"

#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

gboolean
mta_doors_can_switch_user (void)
{
  g_autofree char *setpriv = g_find_program_in_path ("setpriv");
  return setpriv && geteuid () == 0 && getpwnam ("nobody") && getgrnam ("nogroup");
}

GSubprocess *
mta_doors_spawn_as (const char *user, GSubprocessFlags flags, const char *const *argv)
{
  gboolean number = g_ascii_isdigit (user[0]);
  g_autofree char *reuid = g_strdup_printf ("--reuid=%s", user);
  g_autofree char *regid = g_strdup_printf ("--regid=%s", number ? user : strcmp (user, "nobody") == 0 ? "nogroup" : user);
  g_autoptr (GPtrArray) a = g_ptr_array_new ();
  const char *pre[] = { "setpriv", reuid, regid, "--clear-groups", "--", NULL };
  for (guint i = 0; pre[i]; i++)
    g_ptr_array_add (a, (char *) pre[i]);
  for (guint i = 0; argv[i]; i++)
    g_ptr_array_add (a, (char *) argv[i]);
  g_ptr_array_add (a, NULL);
  g_autoptr (GError) error = NULL;
  GSubprocess *p = g_subprocess_newv ((const char *const *) a->pdata, flags, &error);
  g_assert_no_error (error);
  return p;
}

char *
mta_doors_for_everyone (const char *dir, const char *src)
{
  g_autofree char *pub = g_build_filename (dir, "doors-public", NULL);
  if (!g_file_test (pub, G_FILE_TEST_IS_DIR))
    g_free (mta_dir_public (dir, "doors-public"));
  return test_copy_for_everyone (src, pub, NULL, 0755);
}

guint64
mta_doors_peak_kib (const MtaMilter *m)
{
  g_autofree char *path = g_strdup_printf ("/proc/%s/status", g_subprocess_get_identifier (m->proc));
  g_autofree char *status = NULL;
  g_assert_true (g_file_get_contents (path, &status, NULL, NULL));
  const char *at = strstr (status, "\nVmHWM:");
  g_assert_nonnull (at);
  return g_ascii_strtoull (at + 7, NULL, 10);
}

GBytes *
mta_doors_big_message (guint i, guint mib)
{
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "From: a@example.org\r\nTo: b@example.net\r\nSubject: big %u\r\n"
                             "Message-ID: <big-%u@test.example>\r\nMIME-Version: 1.0\r\n"
                             "Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
                             "Content-Type: message/external-body; access-type=URL; URL=\"data:,big%%20%u\"\r\n\r\n"
                             "Content-Type: text/plain\r\n\r\n--b\r\nContent-Type: application/octet-stream\r\n"
                             "Content-Transfer-Encoding: base64\r\n\r\n", i, i, i);
  GRand *rand = g_rand_new_with_seed (i);
  guchar raw[57];
  gsize want = (gsize) mib * 1024 * 1024;
  while (s->len < want) {
    for (guint k = 0; k < sizeof raw; k++)
      raw[k] = (guchar) g_rand_int_range (rand, 0, 256);
    g_autofree char *line = g_base64_encode (raw, sizeof raw);
    g_string_append (s, line);
    g_string_append (s, "\r\n");
  }
  g_rand_free (rand);
  g_string_append (s, "--b--\r\n");
  gsize len = s->len;
  return g_bytes_new_take (g_string_free (s, FALSE), len);
}

typedef struct {
  const char *sock;
  guint       i;
  gboolean    dovecot;
  GBytes     *msg;
  gboolean    ok;
} BigRun;

/* One big message through its door: answered whole, its reference resolved. */
static gpointer
big_run (gpointer data)
{
  BigRun *b = data;
  gsize len = g_bytes_get_size (b->msg);
  g_autoptr (GString) req = g_string_new (NULL);
  if (b->dovecot)
    g_string_append (req, "VERSION\tscript\t4\t0\n-\n\n");
  else
    g_string_append_printf (req, "POST /rewrite HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                                 "Content-Length: %" G_GSIZE_FORMAT "\r\n\r\n", len);
  g_string_append_len (req, g_bytes_get_data (b->msg, NULL), (gssize) len);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  g_strlcpy (sa.sun_path, b->sock, sizeof sa.sun_path);
  int fd = socket (AF_UNIX, SOCK_STREAM, 0);
  g_assert_cmpint (connect (fd, (struct sockaddr *) &sa, sizeof sa), ==, 0);
  for (gsize off = 0; off < req->len;) {
    ssize_t n = send (fd, req->str + off, req->len - off, MSG_NOSIGNAL);
    g_assert_cmpint (n, >, 0);
    off += (gsize) n;
  }
  if (b->dovecot)
    shutdown (fd, SHUT_WR);
  GByteArray *all = g_byte_array_new ();
  char buf[65536];
  ssize_t n;
  while ((n = recv (fd, buf, sizeof buf, 0)) > 0)
    g_byte_array_append (all, (guint8 *) buf, (guint) n);
  close (fd);
  g_autofree char *mine = g_strdup_printf ("\r\n\r\nbig %u", b->i);
  const char *d = (const char *) all->data;
  b->ok = all->len > len && g_strstr_len (d, MIN (all->len, 4096), mine)
          && (b->dovecot ? memcmp (d + all->len - 2, "+\n", 2) == 0 : g_str_has_prefix (d, "HTTP/1.1 200 OK\r\n"))
          && g_strstr_len (d + all->len - 64, 64, "--b--\r\n");
  g_byte_array_unref (all);
  return NULL;
}

double
mta_doors_big_at_once (const MtaMilter *m, const char *sock, gboolean dovecot, guint n, guint mib)
{
  BigRun runs[32];
  GThread *t[32];
  g_assert_cmpuint (n, <=, G_N_ELEMENTS (runs));
  guint64 total = 0;
  for (guint i = 0; i < n; i++) {
    runs[i] = (BigRun) { sock, i, dovecot, mta_doors_big_message (i, mib), FALSE };
    total += g_bytes_get_size (runs[i].msg);
  }
  guint64 before = mta_doors_peak_kib (m);
  for (guint i = 0; i < n; i++)
    t[i] = g_thread_new ("big", big_run, &runs[i]);
  for (guint i = 0; i < n; i++) {
    g_thread_join (t[i]);
    g_assert_true (runs[i].ok);
    g_bytes_unref (runs[i].msg);
  }
  guint64 after = mta_doors_peak_kib (m);
  double ratio = (double) (after - before) * 1024 / (double) total;
  g_test_message ("%u messages of %.1f MiB at once through %s: VmHWM %" G_GUINT64_FORMAT " KiB before, %"
                  G_GUINT64_FORMAT " KiB after: it grew by %.2f times the messages", n,
                  (double) total / n / 1048576, dovecot ? "Dovecot's protocol" : "HTTP", before, after, ratio);
  return ratio;
}
