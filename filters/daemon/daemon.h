/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon.h - extbodyd's internal header: the stages, their shared types and state.
 *
 * extbodyd - resolve message/external-body references inside the MTA
 * (libmilter content filter for Postfix and Sendmail).
 *
 * Per connection: a Conn in the private data pointer; per message: the message
 * collected as headers (rebuilt "Name:value" lines, CRLF) and body chunks, in
 * memory up to milter_spill_size, then spooled to an unlinked temporary file.
 * At end of message the library (eb_rewrite_plan) resolves the references and
 * fetches what is to be fetched; when something was resolved, the header edits
 * the library gives (eb_plan_header_edits: no re-parse, no diff here) are
 * sent with smfi_chgheader/smfi_addheader, one trace field X-Extbody is added,
 * and the body the library writes (eb_plan_write_body) replaces the old one
 * in one unbroken run of smfi_replacebody calls (the new body of a spilled
 * message, or of one whose resolved data passes milter_spill_size, is written
 * to a spill file of its own and sent from its mapping, so memory follows
 * neither). Nothing changed: no modification at all. A failure
 * inside accepts the message unchanged (on_error = accept) or tempfails it.
 * Every modification is checked to fit in a milter packet before the first is
 * sent (a message is changed whole or not at all); a refusal once they have
 * begun tempfails. X-Extbody and X-Extbody-Resolved fields that arrive in the
 * top-level header are deleted (strip_trace_fields), but a record this site
 * sealed (trace_key_file: the library judges, eb-seal.h), which may leave
 * the message alone. A message whose top-level
 * Content-Type cannot hold an external-body is accepted at end of header,
 * without its body and without a MIME parse, unless it carries such fields:
 * then its body is skipped and the library judges its header alone at end of
 * message (EB_REWRITE_HEADER_ONLY), as it does for a message past
 * max_message_size that carries them.
 * While a message waits on its fetches, a kick thread keeps libmilter's worker
 * pool from leaving other sessions unserved (see milter_worker_kick_run), and
 * the fetches are cancelled when the MTA has closed the connection.
 *
 * The daemon is split by stage, each in a file of its own:
 *
 *   daemon-main.c        start-up and lifecycle: the options, the socket,
 *                        detaching, the signals, the metrics_file, the stop
 *                        and its drain of the messages in flight
 *   daemon-generation.c  configuration generations (Gen): loaded at start and
 *                        on SIGHUP, referenced by each message
 *   milter-session.c     libmilter's session callbacks, the per-connection
 *                        (Conn) and per-message (Msg) state, the end of
 *                        message in named steps (eom_*)
 *   milter-worker.c      how an end-of-message callback waits on its fetches
 *                        and rewrite (milter_worker_rewrite) while the kick
 *                        thread keeps libmilter's worker pool serving others
 *   milter-check.c       --check-mta
 *   daemon-http.c        the HTTP listener (http_socket): the same plans for
 *                        extbodyc, Exim and scripts, one request per thread
 *   daemon-dovecot.c     the listener for Dovecot's program-client protocol
 *                        (dovecot_filter_socket): Pigeonhole's filter command
 *                        without a process per message, one thread per
 *                        connection
 *   daemon-listen.c      the unix sockets of those two doors: bound at start,
 *                        removed at the stop while still theirs
 *   daemon-peer.c        who is at the other end of a connection of those
 *                        doors (its credentials or address), the share of
 *                        connections one peer may hold, and whether it is
 *                        one of the clients a key names
 *   daemon-io.c          reading and writing a connection of those doors
 *                        within its time limits: idle, and in all
 *   daemon-spool.c       a message's bytes, or an answer's, in memory up to
 *                        milter_spill_size and in a file of their own past
 *                        it, on every door
 *   daemon-job.c         one message's work on every door: planned with the
 *                        door's profile, written, counted and logged
 *   daemon-linger.c      a connection answered before its client finished
 *                        sending, read to its end before it is closed
 *
 * A message flows through them thus: daemon-main.c registers the callbacks
 * (milter_session_desc) and serves; at MAIL FROM milter-session.c counts the
 * message in flight (milter_session_in_flight, refused once stopping is set) and takes a
 * reference to the generation in force (daemon_generation_get); the headers
 * and body are collected into the Msg; at end of message the session runs its
 * steps, the rewrite through milter_worker_rewrite, and sends the changes; the
 * message's generation is released with it. The stop (daemon-main.c) sets
 * stopping and waits for milter_session_in_flight to reach 0.
 */
#ifndef MILTER_H
#define MILTER_H

#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>

#include <gio/gio.h>
#include <libmilter/mfapi.h>

#include <extbody/extbody.h>

#include "daemon-keys.h"


/* every line goes through libextbody's log (eb_log_init: the journal under
 * systemd, syslog mail once detached, standard error in the foreground) */
#define log_line eb_log

/* ---- configuration generations -------------------------------------------
 *
 * The configuration and the fetcher built from it make one generation. A
 * message takes a reference to the current generation at MAIL FROM and keeps
 * it to its end; SIGHUP installs a new generation for the messages that begin
 * afterwards (on connections old and new), and an old one is freed when its
 * last message ends. */
typedef struct {
  gint       refs;
  EbConfig  *config;
  EbFetcher *fetcher;       /* NULL when fetch = off */
  EbStore   *store;         /* milter_mode = externalize: where parts go; else NULL */
  DaemonSettings keys;      /* every key the daemon reads, bound once (daemon-keys.h) */
  gboolean   tempfail;      /* on_error = tempfail */
  DaemonClients *externalize_clients;   /* http_externalize_clients */
  DaemonClients *metrics_clients;       /* http_metrics_clients */
} Gen;
void daemon_generation_unref (Gen *g);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Gen, daemon_generation_unref)

Gen *daemon_generation_ref (Gen *g);
Gen *daemon_generation_get (void);
void daemon_generation_install (Gen *g);

/* daemon-spool.c: bytes as they come, in memory up to @spill, then in an unlinked file of
 * their own (g_file_open_tmp: TMPDIR or /tmp, mode 0600), which the
 * memory's bytes move to. */
typedef struct {
  GByteArray  *mem;
  int          fd;       /* the file once spilled, else -1 */
  guint64      size;     /* bytes appended */
  guint64      spill;
  int          error;    /* errno of a write that failed, 0 */
  GMappedFile *map;      /* the file mapped by daemon_spool_bytes */
} DaemonSpool;

typedef struct {
  Gen        *gen;          /* the configuration of this message */
  DaemonSpool spool;        /* the message as collected */
  gboolean    cannot_hold;  /* the top-level type is neither multipart nor message */
  gboolean    has_type;     /* a Content-Type field came (none: text/plain) */
  guint       n_trace[2];   /* incoming fields named as trace_names (strip_trace_fields) */
  gboolean    strip_only;   /* nothing to resolve: only the trace fields to judge (the
                               spool keeps the header alone) */
  guint64     header_len;   /* the header's bytes in the spool, known at its end */
} Msg;

typedef struct {
  Msg     *msg;
  gboolean read_only;   /* the MTA did not offer every change a rewrite needs */
  gboolean can_skip;    /* the MTA takes SMFIS_SKIP from the body callback */
  GList    link;        /* in conns */
} Conn;

/* What the command line says about the configuration: applied at start and
 * again at each reload. */
typedef struct {
  const char        *config;   /* -c, or NULL for the default path */
  const char *const *set;      /* -o */
  const char *const *allow;    /* --allow-network */
  const char        *socket;   /* -p */
} ConfigArgs;

typedef struct {
  ConfigArgs   args;
  const char  *upath;      /* the unix socket's file, or NULL */
  struct stat  sock_st;    /* what it was once bound, to remove only ours */
  int          lfd;        /* libmilter's listening descriptor, or -1 */
  const char  *pidfile;    /* written by us, or NULL */
} Life;

Gen *daemon_generation_load (const ConfigArgs *a, int *status, GError **error);
void daemon_generation_reload (Life *life, const char *signame);

/* The daemon's health, as GET /healthz tells it: NULL while it takes work,
 * else why not (g_free it): it drains (daemon_generation_set_draining, at
 * SIGTERM), its last reload failed (the old configuration still serves, but
 * the daemon is out of step with its file), or redis_required is on and
 * Redis does not answer. @redis: how the shared cache stands, for the
 * answer's second line. Asks Redis (a PING within redis_timeout). */
char *daemon_generation_health (EbFetcherShared *redis);
void daemon_generation_set_draining (void);

/* ---- daemon-job.c --------------------------------------------------------- */

/* One message's work, as a door asks for it. */
typedef struct {
  const Gen  *gen;           /* the configuration of this message */
  EbProfile   profile;       /* EB_PROFILE_TRANSIT (HTTP, Dovecot), _TRANSIT_BODY (the
                                milter) or _AT_REST (HTTP's ?stored) */
  gboolean    externalize;   /* externalize (with gen->store) instead of rewrite */
  const char *buf;           /* the message */
  gsize       len;
  gboolean    spooled;       /* it came to a spool file: so does a new one */
  /* the message's id for the log (newly allocated, or NULL), asked only
   * when a line is written: an MTA's queue id; NULL: none */
  char     *(*queue_id) (gpointer progress_data);
  /* the door's hooks while the fetches run: @progress is called as they
   * progress, a non-zero *@cancelled cuts them off, and @gone, asked
   * afterwards, says the client went away (nothing to answer, nothing
   * counted); each may be NULL */
  void      (*progress) (gpointer data);
  gpointer    progress_data;
  gint       *cancelled;
  gboolean  (*gone) (gpointer progress_data);
} DaemonJob;

/* What a job gives: its plan, and its new message (or body) in @out, a
 * spool file of its own (@out_fd) or memory, @out_len bytes; @out is NULL
 * when the message does not change (for the milter: when its body does
 * not), and the door sends what it read. */
typedef struct {
  EbPlan        *plan;
  GOutputStream *out;
  int            out_fd;
  guint64        out_len;
} DaemonJobOutput;

/* Plan @job's message, write it, add it to daemon_main_stats (a whole
 * message's change; the milter counts its own once the MTA took it) and log
 * its line. FALSE with @error when the new message cannot be written, or
 * when the client is @gone (G_IO_ERROR_CANCELLED); @o is then to be
 * cleared as well. */
gboolean daemon_job_run (const DaemonJob *job, DaemonJobOutput *o, GError **error);
void daemon_job_output_clear (DaemonJobOutput *o);

/* ---- milter-session.c ---------------------------------------------------- */

/* Messages between MAIL FROM and their end (SIGTERM lets them finish), and
 * the stop: once set, a new message is refused with a temporary failure. */
extern gint milter_session_in_flight;
extern gint milter_session_stopping;
extern gint milter_session_refused;   /* messages refused while stopping, for the log */

/* the callbacks, for smfi_register */
extern struct smfiDesc milter_session_desc;

/* ---- milter-worker.c ----------------------------------------------------- */

/* the kick thread and the address it connects to (daemon-main.c starts and
 * stops the thread, and changes the address when the daemon stops) */
extern GMutex   milter_worker_kick_lock;
extern GCond    milter_worker_kick_cond;
extern gboolean milter_worker_kick_stop;
extern GThread *milter_worker_kick_thread;
extern GMutex   milter_worker_kick_addr_lock;
extern struct sockaddr_storage milter_worker_kick_addr;
extern socklen_t milter_worker_kick_addr_len;   /* 0: no address to kick */

void milter_worker_kick_to (const struct sockaddr_storage *addr, socklen_t addr_len);
void milter_worker_kick_once (void);
gpointer milter_worker_kick_run (gpointer data);
void milter_worker_kick_set_address (int fd);
gboolean milter_worker_rewrite (SMFICTX *ctx, const Gen *gen, const Msg *m, const char *buf, gsize len,
                                GOutputStream **out, int *out_fd, EbPlan **result,
                                GError **error);

/* ---- daemon-listen.c ----------------------------------------------------- */

/* A unix socket of the daemon's, as bound. */
typedef struct {
  char       *path;   /* NULL: none (or removed) */
  struct stat st;     /* the file as bound: removed only while it is this one */
} DaemonSocket;

/* Bind and listen on the unix socket @path for the key @key (named in
 * errors), its mode 0777 less client_umask, its file given to @user (-u)
 * when set. An old socket nobody answers on is removed first; one a running
 * daemon answers on, or a file that is no socket, is an error.
 * Returns: the listening descriptor, or -1 with @error. */
int daemon_listen_unix (DaemonSocket *s, const char *key, const char *path, const DaemonSettings *keys,
                        const char *user, GError **error);

/* Remove @s's file when it is still the one bound, and forget it. */
void daemon_listen_remove (DaemonSocket *s);

/* TRUE, with a line in the log, when the directory of the unix socket @path
 * (the value of @key) does not exist: that door is off. A door nobody asked
 * for stays shut without stopping the others (an HTTP socket's /run/extbody
 * when the daemon is started by hand without the unit's RuntimeDirectory;
 * the milter's /var/spool/postfix/extbody on a host without Postfix); with
 * no door open at all the daemon does not start (daemon-main.c). */
gboolean daemon_listen_dir_missing (const char *key, const char *path);

/* ---- the doors: daemon-http.c, daemon-dovecot.c -------------------------
 *
 * A door beside the milter: a listener of its own, bound at start (@open,
 * before privileges go; nothing when its socket key is empty), served once
 * the daemon has detached (@start, signals blocked), and at the stop closed
 * to new connections (@quiesce) while its @in_flight work finishes, then
 * ended (@stop, also at a start that failed). Each door's file defines its
 * row; daemon_main_doors lists them, and the daemon's start, reload, drain
 * and stop loop over that list. A door reads a message, hands it to
 * daemon_job_run with its profile, and answers in its own protocol. */
typedef struct {
  const char *name;                /* "http": the log's prefix */
  const char *in_flight_what;      /* "HTTP request": the stop's lines, "%u %s%s in flight" */
  DaemonKeyField socket_key;       /* its socket's key (http_socket) */
  const DaemonKeyField *start_keys;   /* number keys fixed at start, as its socket is; ended by { NULL } */
  gboolean  (*open) (const Gen *gen, const char *user, GError **error);   /* the first generation */
  gboolean  (*start) (const Gen *gen, GError **error);
  gboolean  (*is_open) (void);     /* after @open, before the stop */
  void      (*quiesce) (void);
  guint     (*in_flight) (void);
  void      (*stop) (void);
} DaemonDoor;

extern const DaemonDoor daemon_http_door;      /* daemon-http.c: extbodyc, Exim, scripts */
extern const DaemonDoor daemon_dovecot_door;   /* daemon-dovecot.c: Pigeonhole's filter */

/* daemon-main.c: every door but the milter's, NULL-ended */
extern const DaemonDoor *const daemon_main_doors[];

/* ---- daemon-spool.c ------------------------------------------------------ */

/* (DaemonSpool is above, with the milter's Msg that holds one.) */
void daemon_spool_init (DaemonSpool *s, guint64 spill);
/* FALSE once a write has failed (s->error): what follows is dropped. */
gboolean daemon_spool_append (DaemonSpool *s, const void *data, gsize len);
/* Drop the bytes (nothing more is kept; size still counts what came). */
void daemon_spool_drop (DaemonSpool *s);
/* Keep the first @n bytes alone (size still counts what came). */
void daemon_spool_truncate (DaemonSpool *s, guint64 n);
/* The bytes: the memory's, or the file mapped (read-only). NULL with
 * @error when the file cannot be mapped or a write failed. */
const char *daemon_spool_bytes (DaemonSpool *s, gsize *len, GError **error);
void daemon_spool_clear (DaemonSpool *s);

/* Where an answer (a new message) of about @expect bytes is written: a
 * memory stream, or past @spill (or when @to_file) an unlinked file whose
 * descriptor *@fd gets (the stream closes it); -1 for memory. */
GOutputStream *daemon_spool_output (guint64 expect, guint64 spill, gboolean to_file, int *fd);

/* ---- daemon-io.c --------------------------------------------------------- */

typedef enum {
  DAEMON_IO_OK,
  DAEMON_IO_EOF,       /* the peer closed its end */
  DAEMON_IO_IDLE,      /* nothing came (or went) for the idle time */
  DAEMON_IO_LATE,      /* the deadline passed */
  DAEMON_IO_ERROR,     /* the connection broke (errno) */
} DaemonIoEnd;

/* A connection's socket (non-blocking once daemon_io_init has run) and its
 * limits: one wait at most @idle_ms, everything before @deadline. */
typedef struct {
  int    fd;
  int    idle_ms;
  gint64 deadline;   /* monotonic, microseconds; 0: none */
} DaemonIo;

void daemon_io_init (DaemonIo *io, int fd, guint idle_s);
/* The deadline @seconds from now (0: none). */
void daemon_io_deadline (DaemonIo *io, guint seconds);
/* Read what there is, up to @len bytes, waiting within the limits: the
 * count, or 0 with *@end saying why nothing (EOF, IDLE, LATE, ERROR). */
gsize daemon_io_read (DaemonIo *io, void *buf, gsize len, DaemonIoEnd *end);
/* Write all of @data within the limits. */
gboolean daemon_io_write (DaemonIo *io, const void *data, gsize len, DaemonIoEnd *end);
/* Write @len bytes of the file @fd from its start within the limits. */
gboolean daemon_io_write_file (DaemonIo *io, int fd, guint64 len, DaemonIoEnd *end);
/* A short answer (a refusal) written at once if the socket takes it, never
 * waiting. */
void daemon_io_write_now (int fd, const char *text);

/* ---- daemon-linger.c ----------------------------------------------------- */

/* The close of connections whose clients may still be sending. */
typedef struct _DaemonLinger DaemonLinger;

DaemonLinger *daemon_linger_new (const char *door, guint max, guint idle_s, guint total_s, GError **error);
void daemon_linger_close (DaemonLinger *l, int fd, gsize head_max);
void daemon_linger_free (DaemonLinger *l);

/* ---- daemon-peer.c ------------------------------------------------------- */

/* The other end of a connection. */
typedef struct {
  gboolean has_creds;     /* a unix socket's: uid, gid, groups */
  uid_t    uid;
  gid_t    gid;
  pid_t    pid;
  gid_t    groups[64];    /* supplementary groups (SO_PEERGROUPS), the first 64 */
  guint    n_groups;
  struct sockaddr_storage addr;   /* an inet socket's */
  socklen_t addr_len;
  gboolean exempt;        /* root, the daemon's own user, loopback: outside any share */
  char     key[64];       /* who it is for the shares: "uid N" or the address */
  char     name[128];     /* for the log: "uid N (user)" or the address */
} DaemonPeer;

/* Who is at the other end of the accepted socket @fd. */
void daemon_peer_of (int fd, DaemonPeer *peer);

/* The connections each peer holds on one door, at most @limit each. */
typedef struct {
  GMutex      lock;
  GHashTable *held;    /* key -> count */
  guint       limit;
} DaemonPeerShare;

void daemon_peer_share_init (DaemonPeerShare *s, guint limit);
/* Count one more connection of @peer: FALSE (nothing counted) when it holds
 * its share already. An exempt peer is always let in. */
gboolean daemon_peer_share_enter (DaemonPeerShare *s, const DaemonPeer *peer);
void daemon_peer_share_leave (DaemonPeerShare *s, const DaemonPeer *peer);
void daemon_peer_share_clear (DaemonPeerShare *s);

/* Root, the daemon's own user, or one of @clients (its uid, its primary or
 * a supplementary group, or its inet address in a block)? */
gboolean daemon_peer_is (const DaemonPeer *peer, const DaemonClients *clients);

/* ---- daemon-main.c ------------------------------------------------------- */

extern EbStats *daemon_main_stats;   /* every message planned, for the summary at exit */

#endif /* MILTER_H */
