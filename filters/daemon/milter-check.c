/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* milter-check.c - extbodyd --check-mta USER (see milter-check.h). */
#include "milter-check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sysexits.h>
#include <unistd.h>

#include <libmilter/mfapi.h>
#include <libmilter/mfdef.h>

#define MILTER_PACKET_MAX 65535   /* libmilter's largest packet: a bigger length is not the protocol */

/* ---- Postfix's names for the socket (pure) ---------------------------------- */

GStrv
milter_check_postfix_names (const char *value)
{
  GPtrArray *out = g_ptr_array_new ();
  const char *p = value ? value : "";
  while (*p) {
    while (*p == ',' || g_ascii_isspace (*p))
      p++;
    if (!*p)
      break;
    if (*p == '{') {
      /* { name, setting = value, ... }: the name is the first element */
      const char *end = strchr (p, '}');
      g_autofree char *inner = g_strndup (p + 1, end ? (gsize) (end - p - 1) : strlen (p + 1));
      g_auto (GStrv) parts = g_strsplit_set (inner, ", \t\n", -1);
      for (guint i = 0; parts[i]; i++)
        if (*parts[i]) {
          g_ptr_array_add (out, g_strdup (parts[i]));
          break;
        }
      p = end ? end + 1 : p + strlen (p);
      continue;
    }
    const char *s = p;
    while (*p && *p != ',' && !g_ascii_isspace (*p))
      p++;
    g_ptr_array_add (out, g_strndup (s, (gsize) (p - s)));
  }
  g_ptr_array_add (out, NULL);
  return (GStrv) g_ptr_array_free (out, FALSE);
}

char *
milter_check_postfix_path (const char *name, const char *queue_directory, gboolean chroot)
{
  const char *path = NULL;
  if (g_str_has_prefix (name, "unix:"))
    path = name + 5;
  else if (name[0] == '/')
    path = name;
  else if (!strchr (name, ':'))
    path = name;   /* Postfix takes a name without a transport as unix: */
  if (!path || !*path)
    return NULL;
  if (path[0] != '/')   /* relative: to the queue directory, chrooted or not */
    return g_canonicalize_filename (path, queue_directory);
  if (chroot)
    return g_canonicalize_filename (path + 1, queue_directory);
  return g_canonicalize_filename (path, "/");
}

/* ---- the daemon's socket ------------------------------------------------------ */

typedef struct {
  char *path;                  /* unix: the socket file, absolute */
  struct sockaddr_storage sa;  /* inet: the address */
  socklen_t sa_len;
  char *display;               /* for the messages */
  char *inet_port;             /* inet: the port, for Postfix's names */
} Target;

static void
target_clear (Target *t)
{
  g_free (t->path);
  g_free (t->display);
  g_free (t->inet_port);
}

static gboolean
target_parse (Target *t, const char *spec)
{
  memset (t, 0, sizeof *t);
  const char *path = NULL;
  if (g_str_has_prefix (spec, "unix:"))
    path = spec + 5;
  else if (g_str_has_prefix (spec, "local:"))
    path = spec + 6;
  else if (spec[0] == '/')
    path = spec;
  if (path) {
    t->path = g_canonicalize_filename (path, NULL);
    t->display = g_strdup (t->path);
    return TRUE;
  }
  int family = g_str_has_prefix (spec, "inet6:") ? AF_INET6
               : g_str_has_prefix (spec, "inet:") ? AF_INET : AF_UNSPEC;
  const char *at = strchr (spec, '@');
  if (family == AF_UNSPEC)
    return FALSE;
  const char *port = strchr (spec, ':') + 1;
  t->inet_port = at ? g_strndup (port, (gsize) (at - port)) : g_strdup (port);
  const char *host = at ? at + 1 : (family == AF_INET6 ? "::1" : "127.0.0.1");
  if (!*host || strcmp (host, "*") == 0 || strcmp (host, "0.0.0.0") == 0 || strcmp (host, "::") == 0)
    host = family == AF_INET6 ? "::1" : "127.0.0.1";   /* every address: reached on loopback */
  struct addrinfo hints = { .ai_family = family, .ai_socktype = SOCK_STREAM }, *res = NULL;
  if (getaddrinfo (host, t->inet_port, &hints, &res) != 0 || !res)
    return FALSE;
  memcpy (&t->sa, res->ai_addr, res->ai_addrlen);
  t->sa_len = res->ai_addrlen;
  freeaddrinfo (res);
  t->display = g_strdup (spec);
  return TRUE;
}

/* ---- Postfix: does a milter setting name the socket? -------------------------- */

static char *
postconf (const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) "postconf");
  for (guint i = 0; args[i]; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  char *out = NULL;
  int status = 0;
  if (!g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
                     NULL, NULL, &out, NULL, &status, NULL)
      || !g_spawn_check_wait_status (status, NULL)) {
    g_free (out);
    return NULL;
  }
  return out;
}

/* The value of "SERVICE/TYPE/PARAM = value" in postconf -P's output, or NULL. */
static char *
master_override (const char *overrides, const char *service, const char *param)
{
  g_autofree char *key = g_strdup_printf ("%s/%s =", service, param);
  g_auto (GStrv) lines = g_strsplit (overrides ? overrides : "", "\n", -1);
  for (guint i = 0; lines[i]; i++)
    if (g_str_has_prefix (lines[i], key))   /* "... = value", or "... =" when empty */
      return g_strstrip (g_strdup (lines[i] + strlen (key)));
  return NULL;
}

static gboolean
same_file (const char *a, const char *b)
{
  if (strcmp (a, b) == 0)
    return TRUE;
  struct stat sa, sb;
  return stat (a, &sa) == 0 && stat (b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* A main.cf that sets @param more than once: Postfix takes the last line
 * ("overriding earlier entry"), so the milters of the earlier ones get no
 * mail, as after appending a snippet to a main.cf that had its own
 * smtpd_milters. The line saying so, or NULL. */
static char *
postfix_set_twice (const char *param)
{
  g_autofree char *dir_out = postconf ((const char *[]) { "-xh", "config_directory", NULL });
  if (!dir_out)
    return NULL;
  g_autofree char *main_cf = g_build_filename (g_strstrip (dir_out), "main.cf", NULL);
  g_autofree char *text = NULL;
  if (!g_file_get_contents (main_cf, &text, NULL, NULL))
    return NULL;
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  g_autoptr (GString) at = g_string_new (NULL);
  g_autofree char *last = NULL;
  guint n = 0;
  gsize plen = strlen (param);
  for (guint i = 0; lines[i]; i++) {
    const char *l = lines[i];
    if (strncmp (l, param, plen) != 0)
      continue;   /* a comment, a continuation or another parameter */
    const char *q = l + plen;
    while (*q == ' ' || *q == '\t')
      q++;
    if (*q != '=')
      continue;
    g_string_append_printf (at, "%s%u", n ? ", " : "", i + 1);
    g_free (last);
    last = g_strstrip (g_strdup (q + 1));
    n++;
  }
  if (n < 2)
    return NULL;
  return g_strdup_printf ("%s sets %s %u times (lines %s): Postfix uses the last, \"%s\", and the milters of "
                          "the others get no mail; keep one line that lists every milter, in order: "
                          "postconf -e '%s = ...'", main_cf, param, n, at->str, last, param);
}

/* Whether milter name @name reaches @t from a service chrooted or not. */
static gboolean
postfix_name_reaches (const char *name, const Target *t, const char *qd, gboolean chroot, char **where)
{
  if (t->path) {
    g_autofree char *p = milter_check_postfix_path (name, qd, chroot);
    if (!p)
      return FALSE;
    gboolean same = same_file (p, t->path);
    if (where && !*where)
      *where = g_steal_pointer (&p);
    return same;
  }
  /* inet:HOST:PORT (Postfix) against inet:PORT@ADDRESS: the port decides */
  if (!g_str_has_prefix (name, "inet:"))
    return FALSE;
  const char *colon = strrchr (name, ':');
  return colon && strcmp (colon + 1, t->inet_port) == 0;
}

/* Postfix's name for @path: relative to the queue directory when inside it. */
static char *
postfix_suggest (const Target *t, const char *qd)
{
  if (!t->path)
    return g_strdup_printf ("inet:127.0.0.1:%s", t->inet_port);
  g_autofree char *prefix = g_strconcat (qd, "/", NULL);
  if (g_str_has_prefix (t->path, prefix))
    return g_strdup_printf ("unix:%s", t->path + strlen (prefix));
  return g_strdup_printf ("unix:%s", t->path);
}

/* 0 and a note in @ok when an smtpd service of Postfix names the socket;
 * EX_CONFIG and the line when none does; 0 and no note when postconf is not
 * there to ask. */
static int
postfix_check (const Target *t, char **ok, char **line)
{
  g_autofree char *qd_out = postconf ((const char *[]) { "-xh", "queue_directory", NULL });
  g_autofree char *master = postconf ((const char *[]) { "-M", NULL });
  if (!qd_out || !master)
    return 0;
  g_autofree char *qd = g_strstrip (g_strdup (qd_out));
  g_autofree char *smtpd_main = postconf ((const char *[]) { "-xh", "smtpd_milters", NULL });
  g_autofree char *non_smtpd_main = postconf ((const char *[]) { "-xh", "non_smtpd_milters", NULL });
  g_autofree char *overrides = postconf ((const char *[]) { "-xP", NULL });
  g_strstrip (smtpd_main ? smtpd_main : (smtpd_main = g_strdup ("")));
  g_strstrip (non_smtpd_main ? non_smtpd_main : (non_smtpd_main = g_strdup ("")));

  g_autofree char *first_miss = NULL;   /* the first setting that names another socket of extbody's */
  g_autofree char *first_miss_name = NULL;   /* its name in main.cf's smtpd_milters */
  gboolean cleanup_names = FALSE;
  guint n_smtpd = 0;
  g_auto (GStrv) lines = g_strsplit (master, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    /* service type private unpriv chroot wakeup maxproc command args */
    g_auto (GStrv) f = g_strsplit_set (g_strstrip (lines[i]), " \t", -1);
    g_autoptr (GPtrArray) w = g_ptr_array_new ();
    for (guint j = 0; f[j]; j++)
      if (*f[j])
        g_ptr_array_add (w, f[j]);
    if (w->len < 8)
      continue;
    const char *cmd = g_ptr_array_index (w, 7);
    gboolean is_smtpd = strcmp (cmd, "smtpd") == 0, is_cleanup = strcmp (cmd, "cleanup") == 0;
    if (!is_smtpd && !is_cleanup)
      continue;
    /* master.cf's chroot column; "-" is n since Postfix 3.0 */
    gboolean chroot = strcmp (g_ptr_array_index (w, 4), "y") == 0;
    const char *param = is_smtpd ? "smtpd_milters" : "non_smtpd_milters";
    g_autofree char *service = g_strdup_printf ("%s/%s", (char *) g_ptr_array_index (w, 0),
                                                (char *) g_ptr_array_index (w, 1));
    g_autofree char *over = master_override (overrides, service, param);
    const char *value = over ? over : is_smtpd ? smtpd_main : non_smtpd_main;
    if (is_smtpd)
      n_smtpd++;
    g_auto (GStrv) names = milter_check_postfix_names (value);
    for (guint k = 0; names[k]; k++) {
      g_autofree char *where = NULL;
      if (postfix_name_reaches (names[k], t, qd, chroot, &where)) {
        if (is_cleanup) {
          cleanup_names = TRUE;
          continue;
        }
        if (!*ok)
          *ok = g_strdup_printf ("Postfix's %s (%s%s%s) names it as %s", param, service,
                                 chroot ? ", chrooted in " : "", chroot ? qd : "", names[k]);
      } else if (!first_miss && is_smtpd && strstr (names[k], "extbody")) {
        /* extbody's by its name, but not this socket (an old snippet's
         * name); any other milter is a neighbour (OpenDKIM, rspamd) */
        first_miss = g_strdup_printf ("%s = %s (%s%s%s) reaches %s", param, value, service,
                                      chroot ? ", chrooted in " : "", chroot ? qd : "",
                                      where ? where : names[k]);
        if (!over)
          first_miss_name = g_strdup (names[k]);
      }
    }
  }
  g_autofree char *twice = postfix_set_twice ("smtpd_milters");
  if (!twice)
    twice = postfix_set_twice ("non_smtpd_milters");
  if (twice) {
    *line = g_steal_pointer (&twice);
    g_clear_pointer (ok, g_free);
    return EX_CONFIG;
  }
  if (*ok || n_smtpd == 0)
    return 0;
  /* the name, after the milters main.cf already lists (a verifier such as
   * OpenDKIM stays before extbodyd; extbodyd(8): neighbours) */
  g_autofree char *name = postfix_suggest (t, qd);
  g_autofree char *suggest = NULL;
  const char *at = first_miss_name ? strstr (smtpd_main, first_miss_name) : NULL;
  if (at)   /* the old name replaced in its place, the neighbours kept */
    suggest = g_strdup_printf ("%.*s%s%s", (int) (at - smtpd_main), smtpd_main, name, at + strlen (first_miss_name));
  else if (*smtpd_main && !first_miss)
    suggest = g_strdup_printf ("%s, %s", smtpd_main, name);
  else
    suggest = g_strdup (name);
  if (first_miss)
    *line = g_strdup_printf ("Postfix's %s, but extbodyd listens on %s: mail passes unfiltered; "
                             "set smtpd_milters = %s in main.cf", first_miss, t->display, suggest);
  else
    *line = g_strdup_printf ("no smtpd service of Postfix names %s in smtpd_milters%s: mail received over "
                             "SMTP passes unfiltered; set smtpd_milters = %s in main.cf", t->display,
                             cleanup_names ? " (non_smtpd_milters does)" : "", suggest);
  return EX_CONFIG;
}

/* ---- the connection, as the MTA's user ----------------------------------------- */

static const char *
group_name (gid_t gid, char *buf, gsize n)
{
  struct group *gr = getgrgid (gid);
  if (gr)
    return gr->gr_name;
  g_snprintf (buf, n, "%lu", (unsigned long) gid);
  return buf;
}

static const char *
user_name (uid_t uid, char *buf, gsize n)
{
  struct passwd *pw = getpwuid (uid);
  if (pw)
    return pw->pw_name;
  g_snprintf (buf, n, "%lu", (unsigned long) uid);
  return buf;
}

static gboolean
in_group (gid_t gid)
{
  if (getegid () == gid)
    return TRUE;
  gid_t groups[256];
  int n = getgroups (G_N_ELEMENTS (groups), groups);
  for (int i = 0; i < n; i++)
    if (groups[i] == gid)
      return TRUE;
  return FALSE;
}

/* The line for EACCES on @path as @user (the process is @user now): the
 * first directory it may not search, or the socket it may not write. */
static char *
explain_denied (const char *path, const char *user)
{
  g_autofree char *blame = NULL;
  gboolean is_dir = TRUE;
  g_auto (GStrv) parts = g_strsplit (path, "/", -1);
  GString *dir = g_string_new ("/");
  for (guint i = 0; parts[i] && parts[i + 1]; i++) {
    if (*parts[i]) {
      if (dir->len > 1)
        g_string_append_c (dir, '/');
      g_string_append (dir, parts[i]);
    }
    if (access (dir->str, X_OK) != 0) {
      blame = g_strdup (dir->str);
      break;
    }
  }
  g_string_free (dir, TRUE);
  if (!blame && access (path, W_OK) != 0) {
    blame = g_strdup (path);
    is_dir = FALSE;
  }
  struct stat st;
  if (!blame || stat (blame, &st) != 0)
    return g_strdup_printf ("%s may not connect to %s: %s", user, path, g_strerror (EACCES));
  char gb[32], ub[32];
  const char *g = group_name (st.st_gid, gb, sizeof gb), *o = user_name (st.st_uid, ub, sizeof ub);
  const char *what = is_dir ? "search" : "write to";
  mode_t group_bit = is_dir ? S_IXGRP : S_IWGRP;
  if ((st.st_mode & group_bit) && !in_group (st.st_gid))
    return g_strdup_printf ("%s may not connect to %s: %s is %s:%s mode %04o and %s is not in the group %s: "
                            "adduser %s %s, then restart the mail server (its running processes keep "
                            "their groups)", user, path, blame, o, g, (unsigned) (st.st_mode & 07777),
                            user, g, user, g);
  return g_strdup_printf ("%s may not connect to %s: %s is %s:%s mode %04o, which does not let %s %s it",
                          user, path, blame, o, g, (unsigned) (st.st_mode & 07777), user, what);
}

static gint64
remaining_ms (gint64 deadline)
{
  gint64 left = (deadline - g_get_monotonic_time ()) / 1000;
  return left > 0 ? left : 0;
}

/* Read exactly @n bytes before @deadline: 1 done, 0 end of file first, -1
 * time out, -2 an error (errno). */
static int
read_all (int fd, guint8 *buf, gsize n, gint64 deadline)
{
  gsize got = 0;
  while (got < n) {
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    int r = poll (&pfd, 1, (int) MIN (remaining_ms (deadline), G_MAXINT));
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -2;
    if (r == 0)
      return -1;
    ssize_t k = read (fd, buf + got, n - got);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return -2;
    if (k == 0)
      return 0;
    got += (gsize) k;
  }
  return 1;
}

static void
put32 (guint8 *p, guint32 v)
{
  v = htonl (v);
  memcpy (p, &v, 4);
}

static guint32
get32 (const guint8 *p)
{
  guint32 v;
  memcpy (&v, p, 4);
  return ntohl (v);
}

/* The actions a milter asks for, in words. */
static char *
actions_text (guint32 a)
{
  static const struct { guint32 bit; const char *name; } names[] = {
    { SMFIF_ADDHDRS, "add headers" }, { SMFIF_CHGHDRS, "change headers" },
    { SMFIF_CHGBODY, "replace the body" }, { SMFIF_ADDRCPT, "add recipients" },
    { SMFIF_DELRCPT, "delete recipients" }, { SMFIF_QUARANTINE, "quarantine" },
    { SMFIF_CHGFROM, "change the sender" }, { SMFIF_ADDRCPT_PAR, "add recipients with parameters" },
    { SMFIF_SETSYMLIST, "choose macros" },
  };
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    if (a & names[i].bit)
      g_string_append_printf (s, "%s%s", s->len ? ", " : "", names[i].name);
  if (!s->len)
    g_string_append (s, "nothing");
  return g_string_free (s, FALSE);
}

/* Negotiate on @fd as an MTA offering milter protocol 6 and everything. */
static int
negotiate (int fd, const char *user, const char *display, guint timeout_s, gint64 deadline, char **result)
{
  guint8 pkt[4 + 1 + MILTER_OPTLEN];
  put32 (pkt, 1 + MILTER_OPTLEN);
  pkt[4] = SMFIC_OPTNEG;
  put32 (pkt + 5, 6);
  put32 (pkt + 9, SMFI_CURR_ACTS);
  put32 (pkt + 13, SMFI_CURR_PROT);
  if (send (fd, pkt, sizeof pkt, MSG_NOSIGNAL) != (ssize_t) sizeof pkt) {
    *result = g_strdup_printf ("%s connected to %s, but the milter negotiation could not be sent: %s",
                               user, display, g_strerror (errno));
    return EX_PROTOCOL;
  }
  guint8 head[4];
  int r = read_all (fd, head, sizeof head, deadline);
  guint32 len = r == 1 ? get32 (head) : 0;
  if (r == 1 && (len < 1 || len > MILTER_PACKET_MAX))
    r = 2;   /* not the milter protocol's length */
  g_autofree guint8 *body = NULL;
  if (r == 1) {
    body = g_malloc (len);
    r = read_all (fd, body, len, deadline);
  }
  if (r == -1) {
    *result = g_strdup_printf ("%s connected to %s, but no milter answered the negotiation within %u s",
                               user, display, timeout_s);
    return EX_TEMPFAIL;
  }
  if (r == 0 || r == -2) {
    *result = g_strdup_printf ("%s connected to %s, but the connection was closed without a milter answer%s%s: "
                               "not a milter, or one that refuses protocol 6", user, display,
                               r == -2 ? ": " : "", r == -2 ? g_strerror (errno) : "");
    return EX_PROTOCOL;
  }
  if (r == 2 || body[0] != SMFIC_OPTNEG || len < 1 + MILTER_OPTLEN) {
    *result = g_strdup_printf ("%s connected to %s, but what answers is not a milter (no option "
                               "negotiation in its reply)", user, display);
    return EX_PROTOCOL;
  }
  guint32 version = get32 (body + 1), actions = get32 (body + 5);
  /* a polite end, as an MTA ends a session */
  guint8 quit[5];
  put32 (quit, 1);
  quit[4] = SMFIC_QUIT;
  (void) !send (fd, quit, sizeof quit, MSG_NOSIGNAL);
  g_autofree char *acts = actions_text (actions);
  *result = g_strdup_printf ("%s connects to %s and negotiates milter protocol %u (the milter asks to: %s)",
                             user, display, version, acts);
  return 0;
}

int
milter_check_mta (const char *spec, const char *user, guint timeout_s, gboolean if_installed)
{
  Target t;
  if (!target_parse (&t, spec)) {
    fprintf (stderr, "extbodyd: cannot check socket %s\n", spec);
    target_clear (&t);
    return EX_USAGE;
  }
  gint64 deadline = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;
  int status = 0;
  g_autofree char *line = NULL, *postfix_ok = NULL, *result = NULL, *name = NULL;
  struct passwd *pw = getpwnam (user);
  if (!pw && if_installed) {
    printf ("extbodyd: no user %s on this system: its mail server is not installed, nothing to check\n", user);
    target_clear (&t);
    return 0;
  }
  if (!pw) {
    line = g_strdup_printf ("no user %s on this system (is the mail server installed?)", user);
    status = EX_NOUSER;
    goto out;
  }
  uid_t uid = pw->pw_uid;
  gid_t gid = pw->pw_gid;
  name = g_strdup (pw->pw_name);
  if (strcmp (name, "postfix") == 0) {
    status = postfix_check (&t, &postfix_ok, &line);
    if (status)
      goto out;
  }
  if (geteuid () == 0) {
    if (initgroups (name, gid) != 0 || setgid (gid) != 0 || setuid (uid) != 0) {
      line = g_strdup_printf ("cannot become %s: %s", name, g_strerror (errno));
      status = EX_OSERR;
      goto out;
    }
  } else if (geteuid () != uid) {
    line = g_strdup_printf ("run the check as root (it becomes %s) or as %s", name, name);
    status = EX_NOPERM;
    goto out;
  }

  int fd = -1;
  int err = 0;
  for (;;) {
    fd = socket (t.path ? AF_UNIX : t.sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = errno;
      break;
    }
    int rc;
    if (t.path) {
      struct sockaddr_un sa = { .sun_family = AF_UNIX };
      if (strlen (t.path) >= sizeof sa.sun_path) {
        close (fd);
        fd = -1;
        err = ENAMETOOLONG;
        break;
      }
      memcpy (sa.sun_path, t.path, strlen (t.path) + 1);
      rc = connect (fd, (struct sockaddr *) &sa, sizeof sa);
    } else {
      rc = connect (fd, (struct sockaddr *) &t.sa, t.sa_len);
    }
    if (rc == 0)
      break;
    err = errno;
    close (fd);
    fd = -1;
    /* a daemon that is starting: wait for its socket, up to the time-out */
    if ((err == ENOENT || err == ECONNREFUSED) && remaining_ms (deadline) > 0) {
      g_usleep (100 * 1000);
      continue;
    }
    break;
  }
  if (fd < 0) {
    if (err == EACCES || err == EPERM) {
      line = t.path ? explain_denied (t.path, name)
                    : g_strdup_printf ("%s may not connect to %s: %s", name, t.display, g_strerror (err));
      status = EX_NOPERM;
    } else if (err == ENOENT) {
      line = g_strdup_printf ("%s cannot connect to %s: no such socket (after %u s): extbodyd is not "
                              "running, or listens elsewhere (milter_socket)", name, t.display, timeout_s);
      status = EX_UNAVAILABLE;
    } else if (err == ECONNREFUSED) {
      line = g_strdup_printf ("%s cannot connect to %s: %s (after %u s): extbodyd is not running (a socket "
                              "left from an earlier run), or listens elsewhere (milter_socket)", name, t.display,
                              g_strerror (err), timeout_s);
      status = EX_UNAVAILABLE;
    } else {
      line = g_strdup_printf ("%s cannot connect to %s: %s", name, t.display, g_strerror (err));
      status = EX_UNAVAILABLE;
    }
    goto out;
  }
  status = negotiate (fd, name, t.display, timeout_s, deadline, &result);
  close (fd);
  if (status)
    line = g_steal_pointer (&result);

out:
  if (status)
    fprintf (stderr, "extbodyd: %s\n", line);
  else
    printf ("extbodyd: OK: %s%s%s\n", result, postfix_ok ? "; " : "", postfix_ok ? postfix_ok : "");
  fflush (stdout);
  target_clear (&t);
  return status;
}
