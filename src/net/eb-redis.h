/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* eb-redis.h - the Redis a pool of extbody instances shares (redis_server),
 * through hiredis.
 *
 * Redis is an optimisation, never a dependency of mail flow. Every call here
 * is bounded by redis_timeout (connecting, AUTH, each command); a call that
 * fails - no connection, a timeout, a reply hiredis cannot parse, a refused
 * AUTH - returns NULL and marks Redis down: calls made while it is down
 * return NULL at once, without touching the network, until a pause has passed
 * (250 ms, doubled at each failed try up to 8 s); then one call tries again.
 * The change is logged once each way ("Redis ... is down: ..." at LOG_WARNING,
 * "Redis ... is back" at LOG_NOTICE), never once per message. Callers treat
 * NULL as "no Redis": the local cache and limits decide.
 *
 * Connections are kept in a small pool, one in use per thread at a time, so an
 * EbRedis may be shared by every thread of a fetcher. SIGPIPE from a server
 * that went away is held off around each command (the calling thread's mask),
 * whatever the program does with the signal.
 */
#pragma once
#include <glib.h>
#include <hiredis/hiredis.h>
#include "eb-config.h"

G_BEGIN_DECLS

typedef struct _EbRedis EbRedis;

G_DEFINE_AUTOPTR_CLEANUP_FUNC (redisReply, freeReplyObject)

/* A Lua script, run with EVALSHA (SCRIPT LOAD on a NOSCRIPT answer). Its
 * SHA-1 is computed once, on first use. */
typedef struct {
  const char *source;
  char        sha1[41];
} EbRedisScript;

#define EB_REDIS_SCRIPT(src) { (src), { 0 } }

/* A handle for @config's redis_server, redis_timeout, redis_password and
 * redis_prefix; NULL when redis_server is empty. Connects on first use, not
 * here: a Redis that is down at start only means no sharing yet.
 * Returns: (transfer full) (nullable). */
EbRedis *eb_redis_new (const EbConfig *config);
void eb_redis_free (EbRedis *redis);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (EbRedis, eb_redis_free)

/* @name prefixed with redis_prefix. Returns: (transfer full). */
char *eb_redis_key (const EbRedis *redis, const char *name);

/* Run one command of @argc arguments (@lens: their lengths; NULL: C strings).
 * Returns: (transfer full) (nullable): the reply - maybe an error reply, such
 * as WRONGTYPE for a key holding something else, which is the caller's to
 * judge - or NULL when Redis is down or did not answer in time. */
redisReply *eb_redis_command (EbRedis *redis, int argc, const char **argv, const size_t *lens);

/* Run @script with @nkeys keys then arguments (@argc of them in all, keys
 * first), by EVALSHA; when the server does not know it (NOSCRIPT: restarted,
 * flushed), loaded with SCRIPT LOAD and run again once.
 * Returns: (transfer full) (nullable): as eb_redis_command. */
redisReply *eb_redis_script (EbRedis *redis, EbRedisScript *script, int nkeys, int argc,
                             const char **argv, const size_t *lens);

/* Whether the last try reached Redis (FALSE while down). */
gboolean eb_redis_is_up (EbRedis *redis);

/* Commands sent since @redis was made (replies, errors and timeouts alike),
 * connection set-up (AUTH, SCRIPT LOAD) included: what a pool costs Redis. */
guint64 eb_redis_requests (EbRedis *redis);

G_END_DECLS
