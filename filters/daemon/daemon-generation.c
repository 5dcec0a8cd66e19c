/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon-generation.c - configuration generations: load, reference, install, reload */
#include <string.h>
#include <sysexits.h>

#include <extbody/extbody.h>

#include "daemon.h"

static GMutex gen_lock;
static Gen   *gen_current;
static char  *gen_reload_failure;   /* why the last reload failed (gen_lock), or NULL */
static gint   gen_draining;         /* set at SIGTERM, read by /healthz */

void
daemon_generation_unref (Gen *g)
{
  if (!g || !g_atomic_int_dec_and_test (&g->refs))
    return;
  eb_fetcher_free (g->fetcher);
  eb_store_free (g->store);
  daemon_keys_clients_free (g->externalize_clients);
  daemon_keys_clients_free (g->metrics_clients);
  eb_config_free (g->config);
  g_free (g);
}

Gen *
daemon_generation_ref (Gen *g)
{
  g_atomic_int_inc (&g->refs);
  return g;
}

/* Returns: (transfer full): the generation in force. */
Gen *
daemon_generation_get (void)
{
  g_mutex_lock (&gen_lock);
  Gen *g = daemon_generation_ref (gen_current);
  g_mutex_unlock (&gen_lock);
  return g;
}

/* An inet http_socket on an address other than loopback takes anyone who
 * reaches it, so it needs http_allow_networks to name who may connect (the
 * listener, daemon-http.c, refuses the others). */
static gboolean
check_http_address (const DaemonSettings *keys, GError **error)
{
  const char *spec = keys->http_socket;
  const char *at = spec ? strchr (spec, '@') : NULL;
  if (!at || g_str_has_prefix (spec, "unix:"))
    return TRUE;
  g_autofree char *addr = g_strdup (at + 1);
  if (addr[0] == '[') {
    memmove (addr, addr + 1, strlen (addr));
    addr[strlen (addr) - 1] = '\0';
  }
  g_autoptr (GInetAddress) a = g_inet_address_new_from_string (addr);
  g_autofree char *allowed = g_strstrip (g_strdup (keys->http_allow_networks));
  if (a && (g_inet_address_get_is_loopback (a) || *allowed))
    return TRUE;
  g_set_error (error, EB_ERROR, EB_ERROR_CONFIG,
               "http_socket: \"%s\" is not a loopback address: list the networks whose clients may connect in "
               "http_allow_networks (the listener asks no password), or write %s", spec,
               g_str_has_prefix (spec, "inet6:") ? "inet6:PORT@[::1]" : "inet:PORT@127.0.0.1");
  return FALSE;
}

/* Make @g (transfer full) the generation in force. */
void
daemon_generation_install (Gen *g)
{
  g_mutex_lock (&gen_lock);
  Gen *old = gen_current;
  gen_current = g;
  g_mutex_unlock (&gen_lock);
  daemon_generation_unref (old);
}

/* Load the configuration as the daemon reads it: the file, every -o, every
 * --allow-network and -p, then the fetch policy built from it (whether
 * fetching is on or not: -n checks what the daemon would use).
 * Returns: (transfer full) (nullable): the generation, or NULL with @error
 * and the exit status in @status. */
Gen *
daemon_generation_load (const ConfigArgs *a, int *status, GError **error)
{
  g_autoptr (EbConfig) config = eb_config_new ();
  const char *path = a->config ? a->config : EB_CONFIG_DEFAULT_PATH;
  *status = EX_CONFIG;
  if (!eb_config_load_file (config, path, a->config == NULL, error))
    return NULL;
  /* -o and --allow-network as the command applies them (one library call) */
  for (guint i = 0; a->set && a->set[i]; i++) {
    if (!eb_config_apply_option (config, a->set[i], error)) {
      if (g_error_matches (*error, EB_ERROR, EB_ERROR_SYNTAX))
        *status = EX_USAGE;
      return NULL;
    }
  }
  if (!eb_config_add_networks (config, a->allow, error))
    return NULL;
  /* -p is a milter_socket: checked the same way */
  if (a->socket && !eb_config_set (config, "milter_socket", a->socket, error)) {
    g_prefix_error (error, "-p ");
    return NULL;
  }
  /* every key the daemon reads, bound once to its field */
  DaemonSettings keys;
  if (!daemon_keys_bind (&keys, config, error)) {
    *status = EX_SOFTWARE;
    return NULL;
  }
  if (!check_http_address (&keys, error))
    return NULL;
  /* the site's key, read now as the daemon's user: one it cannot use is a
   * configuration error, never records lost message after message */
  if (!eb_seal_key_check (config, error))
    return NULL;
  g_autoptr (EbFetcher) fetcher = eb_fetcher_new (config, error);
  if (!fetcher)
    return NULL;
  g_autoptr (EbStore) store = NULL;
  if (strcmp (keys.milter_mode, "externalize") == 0) {
    /* a store that cannot be used is a configuration error (-n says so) */
    store = eb_store_new (config, error);
    if (!store) {
      g_prefix_error (error, "milter_mode = externalize: ");
      return NULL;
    }
  }
  /* the users and groups named, looked up once (the check passed: a failure
   * here is a name that went away in between) */
  g_autoptr (DaemonClients) ext = daemon_keys_clients_parse (keys.http_externalize_clients, error);
  if (!ext) {
    g_prefix_error (error, "http_externalize_clients: ");
    return NULL;
  }
  g_autoptr (DaemonClients) met = daemon_keys_clients_parse (keys.http_metrics_clients, error);
  if (!met) {
    g_prefix_error (error, "http_metrics_clients: ");
    return NULL;
  }
  Gen *g = g_new0 (Gen, 1);
  g->refs = 1;
  g->externalize_clients = g_steal_pointer (&ext);
  g->metrics_clients = g_steal_pointer (&met);
  g->store = g_steal_pointer (&store);
  if (keys.fetch)
    g->fetcher = g_steal_pointer (&fetcher);
  /* the texts it holds are the configuration's, which the generation keeps */
  g->keys = keys;
  g->tempfail = strcmp (keys.on_error, "tempfail") == 0;
  g->config = g_steal_pointer (&config);
  return g;
}

/* One line when @door's socket or a number fixed at start differs between
 * @old and @now: they stay as they were. */
static void
reload_door_check (const DaemonDoor *door, const DaemonSettings *old, const DaemonSettings *now, const char *signame)
{
  const char *o = G_STRUCT_MEMBER (const char *, old, door->socket_key.offset);
  const char *n = G_STRUCT_MEMBER (const char *, now, door->socket_key.offset);
  gboolean changed = strcmp (o, n) != 0;
  g_autoptr (GString) keys = g_string_new (door->socket_key.name);
  for (guint i = 0; door->start_keys[i].name; i++) {
    gsize at = door->start_keys[i].offset;
    changed |= G_STRUCT_MEMBER (guint64, old, at) != G_STRUCT_MEMBER (guint64, now, at);
    g_string_append_printf (keys, "%s%s", door->start_keys[i + 1].name ? ", " : " and ", door->start_keys[i].name);
  }
  if (changed)
    log_line (LOG_WARNING, "%s: %s stay as they were at start until the daemon is restarted", signame, keys->str);
}

void
daemon_generation_reload (Life *life, const char *signame)
{
  g_autoptr (GError) error = NULL;
  int status = 0;
  Gen *g = daemon_generation_load (&life->args, &status, &error);
  if (!g) {
    log_line (LOG_ERR, "%s: reload failed: %s; keeping the old configuration", signame, error->message);
    g_autoptr (GDateTime) now = g_date_time_new_now_local ();
    g_autofree char *when = g_date_time_format (now, "%Y-%m-%d %H:%M:%S");
    g_mutex_lock (&gen_lock);
    g_free (gen_reload_failure);
    gen_reload_failure = g_strdup_printf ("the reload at %s failed: %s", when, error->message);
    g_mutex_unlock (&gen_lock);
    return;
  }
  const char *path = life->args.config ? life->args.config : EB_CONFIG_DEFAULT_PATH;
  g_autoptr (Gen) old = daemon_generation_get ();
  if (strcmp (old->keys.milter_socket, g->keys.milter_socket) != 0)
    log_line (LOG_WARNING, "%s: milter_socket is now %s: the daemon listens on %s until it is restarted",
              signame, g->keys.milter_socket, old->keys.milter_socket);
  /* the doors' sockets and limits are the daemon's, set at start (who may
   * store or read the counters goes with each request's configuration) */
  for (const DaemonDoor *const *d = daemon_main_doors; *d; d++)
    reload_door_check (*d, &old->keys, &g->keys, signame);
  daemon_generation_install (g);
  g_mutex_lock (&gen_lock);
  g_clear_pointer (&gen_reload_failure, g_free);
  g_mutex_unlock (&gen_lock);
  log_line (LOG_INFO, "%s: reloaded configuration from %s%s", signame, path,
            g->store ? " (milter_mode = externalize)"
            : g->keys.fetch ? "" : " (fetch = off)");
}

void
daemon_generation_set_draining (void)
{
  g_atomic_int_set (&gen_draining, 1);
}

char *
daemon_generation_health (EbFetcherShared *redis)
{
  g_autoptr (Gen) g = daemon_generation_get ();
  *redis = g->fetcher ? eb_fetcher_check_shared (g->fetcher) : EB_FETCHER_SHARED_NONE;
  if (g_atomic_int_get (&gen_draining))
    return g_strdup ("draining: stopping after drain_delay");
  g_mutex_lock (&gen_lock);
  char *failed = g_strdup (gen_reload_failure);
  g_mutex_unlock (&gen_lock);
  if (failed)
    return failed;
  if (g->keys.redis_required && *redis == EB_FETCHER_SHARED_DOWN)
    return g_strdup ("Redis does not answer (redis_required = on)");
  return NULL;
}
