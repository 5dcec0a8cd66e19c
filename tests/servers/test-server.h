/* test-server.h - the tests' servers on 127.0.0.1 (tests/servers/NAME.py) as
 * child processes. A server prints one "NAME <port>" line for each port it
 * listens on, then serves until its standard input closes (which also happens
 * when the test dies) or --lifetime seconds pass: no test leaves one running. */
#pragma once
#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct {
  GSubprocess *proc;
  guint        port;       /* the first port announced */
  guint        ports[4];   /* every port announced, in order */
} TestServer;

/* Start tests/servers/@script under Debian's python3 (/usr/bin/python3, where
 * pyftpdlib is; python3 from PATH without it) with the NULL-terminated @args
 * (nullable) and --lifetime 600, and read the announcement lines whose
 * prefixes @announce lists (NULL: one "PORT " line). @quiet: the server's
 * standard error goes nowhere (pyftpdlib logs every command there).
 * Returns: (transfer full) (nullable): NULL with @error when the server could
 * not start or did not announce its ports. */
TestServer *test_server_start (const char *script, const char *const *args,
                               const char *const *announce, gboolean quiet, GError **error);

/* Close the server's standard input and wait for it to end. */
void test_server_stop (TestServer *server);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TestServer, test_server_stop)

/* GET @path from http://127.0.0.1:@port directly (HTTP/1.0, not through
 * extbody): the number its body starts with (httpd.py's /hits, /peak). */
gint64 test_http_get_number (guint port, const char *path);

G_END_DECLS
