/* test-server.c - the tests' loopback servers as child processes (see
 * test-server.h). */
#include "test-server.h"
#include <stdlib.h>
#include <string.h>

TestServer *
test_server_start (const char *script, const char *const *args, const char *const *announce,
                   gboolean quiet, GError **error)
{
  static const char *const port_only[] = { "PORT ", NULL };
  if (!announce)
    announce = port_only;
  g_autofree char *path = g_test_build_filename (G_TEST_DIST, "servers", script, NULL);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, g_file_test ("/usr/bin/python3", G_FILE_TEST_IS_EXECUTABLE)
                           ? "/usr/bin/python3" : "python3");
  g_ptr_array_add (argv, path);
  for (guint i = 0; args && args[i]; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, "--lifetime");
  g_ptr_array_add (argv, "600");
  g_ptr_array_add (argv, NULL);

  GSubprocessFlags flags = G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE;
  if (quiet)
    flags |= G_SUBPROCESS_FLAGS_STDERR_SILENCE;
  TestServer *s = g_new0 (TestServer, 1);
  s->proc = g_subprocess_newv ((const char *const *) argv->pdata, flags, error);
  if (!s->proc) {
    g_free (s);
    return NULL;
  }
  g_autoptr (GDataInputStream) in = g_data_input_stream_new (g_subprocess_get_stdout_pipe (s->proc));
  for (guint i = 0; announce[i]; i++) {
    g_assert_cmpuint (i, <, G_N_ELEMENTS (s->ports));
    g_autofree char *line = g_data_input_stream_read_line (in, NULL, NULL, error);
    if (!line || !g_str_has_prefix (line, announce[i]) || atoi (line + strlen (announce[i])) <= 0) {
      if (error && !*error)
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s did not announce its %s port",
                     script, announce[i]);
      test_server_stop (s);
      return NULL;
    }
    s->ports[i] = (guint) atoi (line + strlen (announce[i]));
  }
  s->port = s->ports[0];
  return s;
}

void
test_server_stop (TestServer *server)
{
  if (!server)
    return;
  g_output_stream_close (g_subprocess_get_stdin_pipe (server->proc), NULL, NULL);
  g_subprocess_wait (server->proc, NULL, NULL);
  g_object_unref (server->proc);
  g_free (server);
}

gint64
test_http_get_number (guint port, const char *path)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GSocketClient) client = g_socket_client_new ();
  /* straight to the test server: no proxy from the environment, and a server
   * that stops answering fails the test instead of holding it */
  g_socket_client_set_enable_proxy (client, FALSE);
  g_socket_client_set_timeout (client, 10);
  g_autoptr (GSocketConnection) c = g_socket_client_connect_to_host (client, "127.0.0.1", port, NULL, &error);
  g_assert_no_error (error);
  g_autofree char *req = g_strdup_printf ("GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
  GOutputStream *os = g_io_stream_get_output_stream (G_IO_STREAM (c));
  g_assert_true (g_output_stream_write_all (os, req, strlen (req), NULL, NULL, &error));
  g_autoptr (GString) resp = g_string_new (NULL);
  char buf[4096];
  gssize got;
  while ((got = g_input_stream_read (g_io_stream_get_input_stream (G_IO_STREAM (c)), buf, sizeof buf,
                                     NULL, &error)) > 0)
    g_string_append_len (resp, buf, got);
  g_assert_no_error (error);
  const char *body = strstr (resp->str, "\r\n\r\n");
  g_assert_nonnull (body);
  return g_ascii_strtoll (body + 4, NULL, 10);
}
