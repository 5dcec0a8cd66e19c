/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-redis.c - a bounded, self-healing hiredis connection pool (see eb-redis.h). */
#include "eb-redis.h"
#include <extbody/extbody.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/time.h>
#include <time.h>

#define EB_REDIS_IDLE_MAX  16                       /* connections kept between calls */
#define EB_REDIS_PAUSE_MIN (250 * G_TIME_SPAN_MILLISECOND)
#define EB_REDIS_PAUSE_MAX (8 * G_TIME_SPAN_SECOND)

struct _EbRedis {
  char          *server;    /* as configured, for the log */
  char          *host;      /* NULL for a unix socket */
  char          *path;      /* the unix socket */
  int            port;
  struct timeval timeout;
  char          *password;
  char          *prefix;
  GMutex         lock;
  GPtrArray     *idle;      /* redisContext* ready for a command */
  gboolean       down;      /* logged as down, not yet logged back */
  gboolean       probing;   /* a thread is trying it again */
  gint64         retry_at;  /* monotonic µs: while down, no try before */
  gint64         pause;     /* µs, the current pause between tries */
  guint64        requests;  /* atomic-ish: under lock */
};

static void
context_free (gpointer c)
{
  redisFree (c);
}

EbRedis *
eb_redis_new (const EbConfig *config)
{
  const char *server = config->redis_server;
  if (!server || !*server)
    return NULL;
  EbRedis *r = g_new0 (EbRedis, 1);
  r->server = g_strdup (server);
  if (g_str_has_prefix (server, "unix:")) {
    r->path = g_strdup (server + 5);
  } else {
    /* checked by the configuration: HOST:PORT or [V6]:PORT */
    const char *colon = strrchr (server, ':');
    r->port = atoi (colon + 1);
    if (server[0] == '[')
      r->host = g_strndup (server + 1, (gsize) (colon - server) - 2);
    else
      r->host = g_strndup (server, (gsize) (colon - server));
  }
  r->timeout.tv_sec = config->redis_timeout / 1000;
  r->timeout.tv_usec = (config->redis_timeout % 1000) * 1000;
  r->password = g_strdup (config->redis_password);
  r->prefix = g_strdup (config->redis_prefix);
  g_mutex_init (&r->lock);
  r->idle = g_ptr_array_new_with_free_func (context_free);
  r->pause = EB_REDIS_PAUSE_MIN;
  return r;
}

void
eb_redis_free (EbRedis *r)
{
  if (!r)
    return;
  g_ptr_array_unref (r->idle);
  g_mutex_clear (&r->lock);
  g_free (r->server);
  g_free (r->host);
  g_free (r->path);
  g_free (r->password);
  g_free (r->prefix);
  g_free (r);
}

char *
eb_redis_key (const EbRedis *r, const char *name)
{
  return g_strconcat (r->prefix, name, NULL);
}

gboolean
eb_redis_is_up (EbRedis *r)
{
  g_mutex_lock (&r->lock);
  gboolean up = !r->down;
  g_mutex_unlock (&r->lock);
  return up;
}

guint64
eb_redis_requests (EbRedis *r)
{
  g_mutex_lock (&r->lock);
  guint64 n = r->requests;
  g_mutex_unlock (&r->lock);
  return n;
}

/* A failure: the connection is dropped (with every idle one: they lead to the
 * same server), Redis is down until the pause has passed, and that is logged
 * when it was up. */
static void
mark_down (EbRedis *r, const char *why)
{
  gint64 now = g_get_monotonic_time ();
  g_mutex_lock (&r->lock);
  gboolean was_up = !r->down;
  if (was_up)
    r->pause = EB_REDIS_PAUSE_MIN;
  else if (r->probing)
    r->pause = MIN (r->pause * 2, EB_REDIS_PAUSE_MAX);
  r->down = TRUE;
  r->probing = FALSE;
  r->retry_at = now + r->pause;
  g_ptr_array_set_size (r->idle, 0);
  g_mutex_unlock (&r->lock);
  if (was_up)
    eb_log (LOG_WARNING, "Redis %s is down: %s; each instance uses its own cache and rate limits until it is back",
            r->server, why);
}

static void
mark_up (EbRedis *r)
{
  g_mutex_lock (&r->lock);
  gboolean was_down = r->down;
  r->down = FALSE;
  r->probing = FALSE;
  r->pause = EB_REDIS_PAUSE_MIN;
  g_mutex_unlock (&r->lock);
  if (was_down)
    eb_log (LOG_NOTICE, "Redis %s is back: the cache and rate limits are shared again", r->server);
}

/* SIGPIPE held off for this thread while writing to a server that may have
 * gone; a SIGPIPE raised meanwhile is taken before the mask is restored. */
typedef struct {
  sigset_t old;
  gboolean pending_before;
} PipeGuard;

static void
pipe_guard_enter (PipeGuard *g)
{
  sigset_t pipe, pending;
  sigemptyset (&pipe);
  sigaddset (&pipe, SIGPIPE);
  pthread_sigmask (SIG_BLOCK, &pipe, &g->old);
  sigpending (&pending);
  g->pending_before = sigismember (&pending, SIGPIPE);
}

static void
pipe_guard_leave (PipeGuard *g)
{
  if (!g->pending_before) {
    sigset_t pipe, pending;
    sigemptyset (&pipe);
    sigaddset (&pipe, SIGPIPE);
    sigpending (&pending);
    if (sigismember (&pending, SIGPIPE)) {
      struct timespec zero = { 0, 0 };
      while (sigtimedwait (&pipe, NULL, &zero) < 0 && errno == EINTR)
        ;
    }
  }
  pthread_sigmask (SIG_SETMASK, &g->old, NULL);
}

/* One command on @c; NULL when the connection failed (c->err set). */
static redisReply *
run (EbRedis *r, redisContext *c, int argc, const char **argv, const size_t *lens)
{
  g_mutex_lock (&r->lock);
  r->requests++;
  g_mutex_unlock (&r->lock);
  PipeGuard g;
  pipe_guard_enter (&g);
  redisReply *reply = redisCommandArgv (c, argc, argv, lens);
  pipe_guard_leave (&g);
  if (!reply && !c->err)
    c->err = REDIS_ERR_OTHER;
  return reply;
}

static redisContext *
connect_one (EbRedis *r, char **why)
{
  redisContext *c = r->path ? redisConnectUnixWithTimeout (r->path, r->timeout)
                            : redisConnectWithTimeout (r->host, r->port, r->timeout);
  if (!c) {
    *why = g_strdup ("cannot allocate a connection");
    return NULL;
  }
  if (c->err) {
    *why = g_strdup (c->errstr);
    redisFree (c);
    return NULL;
  }
  if (redisSetTimeout (c, r->timeout) != REDIS_OK) {
    *why = g_strdup_printf ("cannot set the timeout: %s", c->errstr);
    redisFree (c);
    return NULL;
  }
  if (*r->password) {
    const char *argv[] = { "AUTH", r->password };
    g_autoptr (redisReply) reply = run (r, c, 2, argv, NULL);
    if (!reply || reply->type == REDIS_REPLY_ERROR) {
      *why = g_strdup_printf ("AUTH: %s", reply ? reply->str : c->errstr);
      redisFree (c);
      return NULL;
    }
  }
  return c;
}

static gboolean
timed_out (const redisContext *c)
{
  return c->err == REDIS_ERR_IO && strstr (c->errstr, "temporarily unavailable");
}

/* A connection for one command, or NULL when Redis is down (and not to be
 * tried yet, or tried now and failed). *@reused: it was idle in the pool. */
static redisContext *
acquire (EbRedis *r, gboolean *reused)
{
  gint64 now = g_get_monotonic_time ();
  g_mutex_lock (&r->lock);
  if (r->down) {
    if (r->probing || now < r->retry_at) {
      g_mutex_unlock (&r->lock);
      return NULL;
    }
    r->probing = TRUE;
  }
  redisContext *c = r->idle->len ? g_ptr_array_steal_index_fast (r->idle, r->idle->len - 1) : NULL;
  g_mutex_unlock (&r->lock);
  *reused = c != NULL;
  if (c)
    return c;
  g_autofree char *why = NULL;
  c = connect_one (r, &why);
  if (!c)
    mark_down (r, why);
  return c;
}

static void
release (EbRedis *r, redisContext *c)
{
  if (c->err) {
    /* SO_RCVTIMEO expired: EAGAIN, as hiredis reports it */
    g_autofree char *why = timed_out (c) ? g_strdup ("no answer within redis_timeout")
                                : g_strdup (c->errstr[0] ? c->errstr : "no answer");
    redisFree (c);
    mark_down (r, why);
    return;
  }
  mark_up (r);
  g_mutex_lock (&r->lock);
  if (r->idle->len < EB_REDIS_IDLE_MAX) {
    g_ptr_array_add (r->idle, c);
    c = NULL;
  }
  g_mutex_unlock (&r->lock);
  if (c)
    redisFree (c);
}

/* A command on a connection from the pool. One that had been idle may have
 * been closed meanwhile (Redis restarted, an idle timeout): when it fails
 * other than by a timeout, the command is sent once more on a new one. */
static redisReply *
run_pooled (EbRedis *r, redisContext **c, gboolean reused, int argc, const char **argv, const size_t *lens)
{
  redisReply *reply = run (r, *c, argc, argv, lens);
  if (reply || !reused || timed_out (*c))
    return reply;
  g_autofree char *why = NULL;
  redisContext *fresh = connect_one (r, &why);
  if (!fresh)
    return NULL;   /* the old one's error is reported */
  redisFree (*c);
  *c = fresh;
  return run (r, *c, argc, argv, lens);
}

redisReply *
eb_redis_command (EbRedis *r, int argc, const char **argv, const size_t *lens)
{
  gboolean reused = FALSE;
  redisContext *c = acquire (r, &reused);
  if (!c)
    return NULL;
  redisReply *reply = run_pooled (r, &c, reused, argc, argv, lens);
  release (r, c);
  return reply;
}

redisReply *
eb_redis_script (EbRedis *r, EbRedisScript *script, int nkeys, int argc, const char **argv,
                 const size_t *lens)
{
  if (!script->sha1[0]) {
    g_autofree char *sha = g_compute_checksum_for_string (G_CHECKSUM_SHA1, script->source, -1);
    g_mutex_lock (&r->lock);
    memcpy (script->sha1, sha, 40);
    script->sha1[40] = '\0';
    g_mutex_unlock (&r->lock);
  }
  g_autofree char *n = g_strdup_printf ("%d", nkeys);
  g_autofree const char **args = g_new0 (const char *, (gsize) argc + 3);
  g_autofree size_t *alens = g_new0 (size_t, (gsize) argc + 3);
  args[0] = "EVALSHA";
  args[1] = script->sha1;
  args[2] = n;
  for (int i = 0; i < argc; i++) {
    args[i + 3] = argv[i];
    alens[i + 3] = lens ? lens[i] : strlen (argv[i]);
  }
  alens[0] = 7;
  alens[1] = 40;
  alens[2] = strlen (n);
  gboolean reused = FALSE;
  redisContext *c = acquire (r, &reused);
  if (!c)
    return NULL;
  redisReply *reply = run_pooled (r, &c, reused, argc + 3, args, alens);
  if (reply && reply->type == REDIS_REPLY_ERROR && g_str_has_prefix (reply->str, "NOSCRIPT")) {
    freeReplyObject (reply);
    const char *load[] = { "SCRIPT", "LOAD", script->source };
    g_autoptr (redisReply) loaded = run (r, c, 3, load, NULL);
    reply = loaded && loaded->type == REDIS_REPLY_STRING ? run (r, c, argc + 3, args, alens) : NULL;
  }
  release (r, c);
  return reply;
}
