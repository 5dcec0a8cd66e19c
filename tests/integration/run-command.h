/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* run-command.h - run the built extbody command (path in $EXTBODY) for the
 * integration tests, with optional standard input; capture both outputs. */
#pragma once
#include <gio/gio.h>
#include <string.h>

typedef struct {
  int     status;   /* exit status, or -1 when killed */
  GBytes *out;
  GBytes *err;
} CmdResult;

static inline void
cmd_result_clear (CmdResult *r)
{
  g_clear_pointer (&r->out, g_bytes_unref);
  g_clear_pointer (&r->err, g_bytes_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (CmdResult, cmd_result_clear)

static inline const char *
extbody_path (void)
{
  const char *p = g_getenv ("EXTBODY");
  g_assert_nonnull (p);
  return p;
}

/* Run extbody with NULL-terminated @args (after the program name), in @cwd
 * (NULL: the current directory). */
static inline void
run_extbody_in (CmdResult *r, const char *cwd, GBytes *input, const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) extbody_path ());
  for (guint i = 0; args[i]; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  g_autoptr (GError) error = NULL;
  GSubprocessFlags flags = G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE
                           | (input ? G_SUBPROCESS_FLAGS_STDIN_PIPE : 0);
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (flags);
  if (cwd)
    g_subprocess_launcher_set_cwd (l, cwd);
  g_autoptr (GSubprocess) p = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, &error);
  g_assert_no_error (error);
  g_subprocess_communicate (p, input, NULL, &r->out, &r->err, &error);
  g_assert_no_error (error);
  r->status = g_subprocess_get_if_exited (p) ? g_subprocess_get_exit_status (p) : -1;
}

static inline void
run_extbody (CmdResult *r, GBytes *input, const char *const *args)
{
  run_extbody_in (r, NULL, input, args);
}

#define RUN(r, input, ...) run_extbody ((r), (input), (const char *const[]) { __VA_ARGS__, NULL })

static inline char *
bytes_str (GBytes *b)
{
  gsize n = 0;
  const char *d = g_bytes_get_data (b, &n);
  return g_strndup (d ? d : "", n);
}

/* Number of lines in @b (a final line without newline counts). */
static inline guint
n_lines (GBytes *b)
{
  gsize n = 0;
  const char *d = g_bytes_get_data (b, &n);
  guint lines = 0;
  for (gsize i = 0; i < n; i++)
    if (d[i] == '\n')
      lines++;
  if (n && d[n - 1] != '\n')
    lines++;
  return lines;
}

static inline GBytes *
file_bytes (const char *path)
{
  g_autoptr (GError) error = NULL;
  char *data = NULL;
  gsize len = 0;
  g_file_get_contents (path, &data, &len, &error);
  g_assert_no_error (error);
  return g_bytes_new_take (data, len);
}
