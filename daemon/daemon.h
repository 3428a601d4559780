/* atelierd's core: the daemon context and the internal interfaces of the
 * modules that share it (server, rpc, sessions, plugins, tool calls).
 *
 * Threads. Everything here runs on the loop thread unless a function says
 * otherwise. Tool handlers run on the daemon's own worker pool (tools.threads
 * threads); store reads run on libuv's threadpool; commits run on the
 * store's writer thread. Results come back to the loop through
 * atl_daemon_post(), a FIFO drained by one uv_async_t, so that work posted
 * from one thread is run on the loop in the order it was posted.
 */
#ifndef ATL_DAEMON_H
#define ATL_DAEMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <uv.h>

#include <atelier/plugin.h>

#include "config.h"
#include "http.h"
#include "jsonrpc.h"
#include "schema.h"
#include "store.h"
#include "util.h"

typedef struct atl_daemon_s atl_daemon_t;
typedef struct atl_session_s atl_session_t;
typedef struct atl_conn_s atl_conn_t;
typedef struct atl_plugin_entry_s atl_plugin_entry_t;
typedef struct atl_tool_entry_s atl_tool_entry_t;
typedef struct atl_previews_s atl_previews_t;

/* ---- posting work to the loop, and the handler pool ---- */

typedef void (*atl_post_fn)(void *arg);
typedef struct atl_post_s {
  struct atl_post_s *next;
  atl_post_fn fn;
  void *arg;
} atl_post_t;

/* Runs fn(arg) on the loop thread, after everything posted before it from
 * the same thread. Any thread. Returns 0 or ATL_ENOMEM. */
int atl_daemon_post(atl_daemon_t *d, atl_post_fn fn, void *arg);

/* Runs fn(arg) on a handler thread. Any thread. */
int atl_pool_submit(atl_daemon_t *d, atl_post_fn fn, void *arg);

/* Store readers are pooled: take one for the duration of a read on a
 * worker thread, then give it back. */
atl_store_reader_t *atl_daemon_reader_take(atl_daemon_t *d);
void atl_daemon_reader_give(atl_daemon_t *d, atl_store_reader_t *r);

/* ---- plugins ---- */

struct atl_tool_entry_s {
  atl_tool_t tool; /* copied from the plugin (zero-extended) */
  atl_plugin_entry_t *plugin;
  atl_schema_t *input;        /* compiled input schema */
  atl_schema_t *result;       /* compiled result schema or NULL */
  uint32_t timeout_ms;        /* effective timeout */
  struct atl_series_s *stats; /* its calls (stats.h); NULL: not counted */
};

struct atl_plugin_entry_s {
  atl_plugin_t desc; /* copied from the plugin (zero-extended) */
  char *path;
  void *dl;        /* dlopen handle */
  void *state;     /* from init() */
  atl_host_t host; /* this plugin's host table */
  int initialized;
};

typedef struct {
  atl_plugin_entry_t **plugins;
  size_t n_plugins;
  atl_tool_entry_t **tools; /* sorted by name */
  size_t n_tools;
  size_t n_redacting; /* tools flagged ATL_TOOL_REDACT_ARGS */
} atl_registry_t;

typedef struct {
  uint16_t min_minor;              /* the oldest ABI minor accepted (0) */
  uint32_t timeout_ms;             /* default handler timeout */
  uint32_t long_timeout_ms;        /* default for ATL_TOOL_LONG_RUNNING */
  const atl_host_t *host_template; /* copied into each plugin's table */
} atl_load_options_t;

/* Loads one plugin into reg: checks, schemas, init. On failure returns a
 * negative ATL_E* code with *reason (malloc()ed) saying why; reg is
 * unchanged. Loop thread. */
int atl_registry_load(atl_registry_t *reg, const char *path,
                      const atl_load_options_t *opt, char **reason);
/* Loads every *.so of dir in name order, skipping the comma-separated names
 * in disable. Failures are logged; with strict the first one is returned. */
int atl_registry_load_dir(atl_registry_t *reg, const char *dir,
                          const char *disable, int strict,
                          const atl_load_options_t *opt);
const atl_tool_entry_t *atl_registry_find(const atl_registry_t *reg,
                                          const char *name);
/* Calls destroy() in reverse load order and unloads everything. */
void atl_registry_unload(atl_registry_t *reg);

/* ---- sessions ---- */

typedef struct atl_call_job_s atl_call_job_t;
typedef struct atl_waiter_s atl_waiter_t;

struct atl_session_s {
  char id[ATL_SESSION_ID_LEN + 1];
  json_object *doc; /* the committed document */
  int64_t created_ms;
  int64_t updated_ms;
  int64_t history_len;
  char model[ATL_MODEL_NAME_MAX + 1]; /* session.create's; "": the default */
  pthread_mutex_t seq_mu; /* guards last_seq: events come from any thread */
  int64_t last_seq;       /* the newest event sequence number assigned */
  int64_t committed_seq;  /* the newest event sequence number committed */
  int64_t doc_rev; /* the event seq of the document's last change (at most) */
  int refs;        /* pins: in-flight work, waiters, loaders */
  int busy;        /* a tool call runs or commits */
  int deleted;
  int stale; /* a commit failed: reload before next use */
  atl_call_job_t *queue_head, *queue_tail; /* calls waiting for busy */
  atl_call_job_t *running; /* the call that made it busy, or NULL */
  unsigned queued;
  atl_waiter_t *waiters; /* events.read long polls */
  atl_session_t *hnext;  /* hash chain */
  atl_session_t *lru_prev, *lru_next;
  struct atl_agent_s *agent; /* the agent's state; NULL until a message */
};

typedef void (*atl_session_cb)(atl_daemon_t *d, atl_session_t *s, int status,
                               void *user);

/* Finds a session in memory or loads it from the store; cb gets it, or
 * NULL with ATL_ENOENT / ATL_ESTORE. The session is pinned only while cb
 * runs: to keep it longer, take a reference (atl_session_ref) and release
 * it later with atl_session_unref. cb may run before this returns. */
void atl_session_get(atl_daemon_t *d, const char *id, atl_session_cb cb,
                     void *user);
void atl_session_ref(atl_session_t *s);
void atl_session_unref(atl_daemon_t *d, atl_session_t *s);
/* Creates a session; cb gets it pinned once committed. */
void atl_session_create(atl_daemon_t *d, const char *model, atl_session_cb cb,
                        void *user);
/* Deletes a session; cb gets status 0 once committed. */
void atl_session_delete(atl_daemon_t *d, atl_session_t *s, atl_session_cb cb,
                        void *user);
/* Appends an event (data_json may be NULL) and commits it; done (may be
 * NULL) runs on the loop afterwards. Assigns the next sequence number. */
int atl_session_emit(atl_daemon_t *d, atl_session_t *s, const char *type,
                     const char *data_json, atl_post_fn done, void *arg);
/* The same with more in the transaction (t: taken, even on failure), such
 * as the history entry the event reports. */
int atl_session_emit_txn(atl_daemon_t *d, atl_session_t *s, atl_txn_t *t,
                         const char *type, const char *data_json,
                         atl_post_fn done, void *arg);
/* The same, for a caller that must know whether it committed: done runs
 * on the loop with the commit's status (0 or a negative ATL_E* code).
 * type NULL: t is committed without an event. Returns 0 (done will run)
 * or a negative code (it will not; t is freed). */
typedef void (*atl_commit_cb)(atl_daemon_t *d, int status, void *arg);
int atl_session_commit(atl_daemon_t *d, atl_session_t *s, atl_txn_t *t,
                       const char *type, const char *data_json,
                       atl_commit_cb done, void *arg);
/* Appends the n_pre events of pre_types and pre_data (may be 0), then an
 * event of type, to t, numbering them in that order, and submits t; any
 * thread. *seq_out gets the last event's sequence number before cb can
 * run. Returns 0 or a negative ATL_E* code (t is freed either way). */
int atl_session_submit(atl_daemon_t *d, atl_session_t *s, atl_txn_t *t,
                       const char *const *pre_types,
                       const char *const *pre_data, size_t n_pre,
                       const char *type, int64_t ts_ms, const char *data,
                       atl_store_done_cb cb, void *user, int64_t *seq_out);
/* Called after a commit that included events of s up to seq. */
void atl_session_committed(atl_daemon_t *d, atl_session_t *s, int64_t seq);
/* Waits for events of s after after_seq for at most wait_ms; cb runs on the
 * loop when there are some, or on time-out. */
typedef void (*atl_waiter_cb)(atl_daemon_t *d, atl_session_t *s, void *user);
int atl_session_wait(atl_daemon_t *d, atl_session_t *s, uint32_t wait_ms,
                     atl_waiter_cb cb, void *user);
size_t atl_sessions_loaded(atl_daemon_t *d);
/* At start: loads every session with messages queued in the store, so
 * that their agents run them (what an earlier atelierd acknowledged and
 * never started). */
void atl_sessions_resume(atl_daemon_t *d);
void atl_sessions_free_all(atl_daemon_t *d);
/* Answers every events.read long poll now, with what there is (at
 * shutdown: their timers would otherwise keep the loop, and the daemon,
 * alive for up to a minute). */
void atl_sessions_wake_all(atl_daemon_t *d);

/* ---- tool calls ---- */

typedef void (*atl_call_done_cb)(atl_daemon_t *d, int rpc_status,
                                 const char *envelope_json, void *user);
/* Runs a tool call on a pinned session: validation, handler, commit of the
 * document change and the tool.finished event; done gets the envelope JSON
 * once committed (rpc_status 0), or a JSON-RPC error code. call_id is
 * borrowed; call_id (the model's id for the call, NULL for a direct call)
 * goes into tool.finished as "id", so that it can be matched with its
 * tool.started. via (borrowed, may be NULL) names who made a direct call
 * (an MCP client) and goes into tool.finished as "via". args is copied,
 * unless take_args is set: then the call
 * takes over the caller's reference, which must be the only one (the call
 * fills in defaults in place, on another thread); a request's arguments,
 * detached from it, are 100 kB of JSON not worth copying. */
void atl_toolcall_start(atl_daemon_t *d, atl_session_t *s, const char *tool,
                        const char *call_id, const char *via, json_object *args,
                        int take_args, atl_call_done_cb done, void *user);
/* Starts the next queued call of s, if any (after the previous one). */
void atl_toolcall_next(atl_daemon_t *d, atl_session_t *s);
/* Asks the call running on s, if it is flagged ATL_TOOL_LONG_RUNNING (a
 * render), to stop: its call_cancelled() turns 1. Shorter calls are left
 * to finish. Returns 1 if a call was asked. */
int atl_toolcall_cancel_long(atl_session_t *s);
/* The same for the call whose done callback gets user (a tool.call whose
 * client went away), running or still queued (it then stops as soon as it
 * starts). */
int atl_toolcall_cancel_long_of(atl_session_t *s, void *user);
/* The session with id if it is loaded (no reference taken), else NULL.
 * Loop thread. */
atl_session_t *atl_session_loaded(atl_daemon_t *d, const char *id);
/* Fails every queued call of s (session deleted or shutting down). */
void atl_toolcall_drain(atl_daemon_t *d, atl_session_t *s, int rpc_status);

/* The host API table given to plugins. */
void atl_host_table_init(atl_daemon_t *d, atl_host_t *h);
/* Emits an event of type with data_text (a JSON object's text, taken; may
 * be NULL) to a session, from any thread, as the host's emit() does.
 * Returns 0 once posted, ATL_EINVAL or ATL_ENOMEM. */
int atl_host_emit_text(atl_daemon_t *d, const char *session_id,
                       const char *type, char *data_text);

/* ---- the API and admin servers ---- */

typedef struct atl_server_s atl_server_t;
typedef struct atl_rpc_call_s atl_rpc_call_t;
typedef void (*atl_dispatch_fn)(atl_daemon_t *d, atl_rpc_call_t *c,
                                atl_rpc_request_t *req);
/* What makes a server the API's or the admin's. Static; borrowed. */
typedef struct {
  const char *name;         /* "api" or "admin", for logs and clients */
  unsigned umask;           /* the socket file's: 0117 (0660) or 0177 (0600) */
  int check_peer;           /* refuse a peer whose uid is not ours or root */
  int needs_auth;           /* connections start unauthenticated */
  int traced;               /* requests go to the admin trace (atl_rpc_trace) */
  atl_dispatch_fn dispatch; /* takes ownership of req */
  /* Connections may pass descriptors (SCM_RIGHTS) with a request, for a
   * method to take (atl_conn_take_pipe): atelierctl mcp's stdin and
   * stdout. Those no method takes are closed once it has run. */
  int accepts_fds;
} atl_server_kind_t;
extern const atl_server_kind_t atl_api_kind;   /* rpc.c */
extern const atl_server_kind_t atl_admin_kind; /* admin.c */

int atl_server_start(atl_daemon_t *d, const char *path,
                     const atl_server_kind_t *kind, atl_server_t **out);
/* Stops accepting; open connections stay until atl_server_close. */
void atl_server_stop_accepting(atl_server_t *srv);
void atl_server_close(atl_server_t *srv);
unsigned atl_server_clients(const atl_server_t *srv);

/* One connection as the admin socket shows it; strings are borrowed for
 * the callback's duration. */
typedef struct {
  uint64_t id; /* never reused while the daemon runs */
  int fd;
  long pid, uid; /* SO_PEERCRED's, -1 if unknown */
  int64_t created_ms;
  uint64_t requests;
  unsigned pending; /* requests not answered yet */
  uint64_t bytes_in, bytes_out;
  const char *last_method; /* "" before the first request */
  int streaming;           /* an admin trace */
  const char *kind;        /* "api" or "admin" */
} atl_conn_info_t;
void atl_server_each(const atl_server_t *srv,
                     void (*fn)(const atl_conn_info_t *info, void *user),
                     void *user);
/* Closes connection id: 0, or ATL_ENOENT if it is not one of srv's. */
int atl_server_kill(atl_server_t *srv, uint64_t id);

/* A request's connection, and what the admin socket needs of it. Loop
 * thread. */
atl_conn_t *atl_rpc_conn(const atl_rpc_call_t *c);
uint64_t atl_conn_id(const atl_conn_t *c);
int atl_conn_authed(const atl_conn_t *c);
void atl_conn_set_authed(atl_conn_t *c);
/* Counts a wrong secret; returns how many c has given. */
int atl_conn_auth_failed(atl_conn_t *c);
void atl_conn_peer(const atl_conn_t *c, long *pid, long *uid);
unsigned atl_conn_pending(const atl_conn_t *c);
/* Turns c into a stream (an admin trace): it reads nothing more, and
 * on_close(arg) runs when it closes (the client left, client.kill, the
 * daemon stopping). */
void atl_conn_stream_start(atl_conn_t *c, void (*on_close)(void *arg),
                           void *arg);
/* Writes buf (len bytes of whole lines; malloc()ed, and taken whatever
 * happens) on a streaming c in one write, unless c already has more than
 * cap bytes waiting for its reader: then ATL_EAGAIN and nothing is
 * written (the caller counts what it dropped). 0, ATL_EAGAIN, ATL_EIO
 * (closing) or ATL_ENOMEM. */
int atl_conn_stream_write(atl_conn_t *c, char *buf, size_t len, size_t cap);
void atl_conn_close(atl_conn_t *c);
/* Turns c into a raw link (atelierctl mcp's, daemon/mcp_front.c): each
 * line it reads goes to on_line (borrowed for the call; NULL with len 0
 * for one longer than api.max_frame) instead of being a request, and
 * on_close(arg) runs when it closes. Lines go the other way with
 * atl_conn_stream_write. */
void atl_conn_raw_start(atl_conn_t *c,
                        void (*on_line)(void *arg, const char *line,
                                        size_t len),
                        void (*on_close)(void *arg), void *arg);
/* Takes the next descriptor c's client passed into p (uv_pipe_init'ed,
 * not yet open): 0, or a negative libuv error (UV_ENOENT: none). */
int atl_conn_take_pipe(atl_conn_t *c, uv_pipe_t *p);
/* Bytes c has queued for its client and not yet written. */
size_t atl_conn_queued(const atl_conn_t *c);
/* 1 once c is closing (its on_close has run or will not be set). */
int atl_conn_closing(const atl_conn_t *c);
/* Closes c once what it has queued is written; until then whatever c
 * sends is ignored. */
void atl_conn_end(atl_conn_t *c);

/* A request being answered: the server owns it; rpc fills the answer. */
struct atl_rpc_call_s {
  atl_conn_t *conn;
  json_object *id; /* owned reference, may be NULL */
  int notification;
  char *response; /* the response line once ready */
  size_t response_len;
  int ready;
  struct atl_rpc_call_s *next;
  /* Its latency goes to series (stats.h) when answered, from t0_ns;
   * failed: the answer was an error. */
  uint64_t t0_ns;
  struct atl_series_s *series;
  int failed;
  /* Run once if the connection closes before the answer is ready: the
   * client gave up (an MCP client's cancel), so what it asked for may
   * stop. key is the method's own (tool.call: the session id). */
  void (*on_abandon)(atl_daemon_t *d, atl_rpc_call_t *c);
  char abandon_key[40];
};
/* Counts c's latency, when it is answered, in s. */
void atl_rpc_call_measure(atl_rpc_call_t *c, struct atl_series_s *s);

/* Answers a request (loop thread). result is borrowed. */
void atl_rpc_reply(atl_daemon_t *d, atl_rpc_call_t *c, json_object *result);
void atl_rpc_reply_text(atl_daemon_t *d, atl_rpc_call_t *c,
                        const char *result_json);
void atl_rpc_reply_error(atl_daemon_t *d, atl_rpc_call_t *c, int code,
                         const char *message, json_object *data);
/* Answers an "Invalid params: ..." error (both sockets' methods). */
void atl_rpc_invalid(atl_daemon_t *d, atl_rpc_call_t *c, const char *fmt, ...)
    ATL_PRINTF(3, 4);
/* 1 if params (may be NULL) is an object with only the named members;
 * else answers the error and returns 0. */
int atl_rpc_only(atl_daemon_t *d, atl_rpc_call_t *c, json_object *params,
                 const char *const *names);
/* daemon.info's answer (a new object), which the admin socket's info
 * extends. */
json_object *atl_rpc_daemon_info(atl_daemon_t *d);
/* The request req, read as line (len bytes), in the admin socket's trace
 * as kind rpc (trace.h), if anyone traces that: the line as it came, or,
 * for a tool flagged ATL_TOOL_REDACT_ARGS, its params with the arguments'
 * values replaced; past 2 kB, cut. */
void atl_rpc_trace(atl_daemon_t *d, atl_rpc_call_t *c,
                   const atl_rpc_request_t *req, const char *line, size_t len);
/* Answers "Method not found: 'method' (what: a, b, ...)" with the names
 * of a method table: n entries of stride bytes, each beginning with its
 * name (const char *). */
void atl_rpc_not_found(atl_daemon_t *d, atl_rpc_call_t *c, const char *method,
                       const char *what, const void *table, size_t n,
                       size_t stride);
/* Dispatches a parsed request (takes ownership of req). */
void atl_rpc_dispatch(atl_daemon_t *d, atl_rpc_call_t *c,
                      atl_rpc_request_t *req);

/* ---- the daemon ---- */

struct atl_daemon_s {
  uv_loop_t *loop;
  atl_config_t *cfg;
  atl_store_t *store;
  atl_http_t *http;
  struct atl_farm_s *farm; /* the render farm; NULL when off or stopped */
  struct atl_previews_s *previews; /* live previews; NULL when off */
  atl_registry_t registry;
  atl_host_t host_template;
  atl_server_t *api;
  atl_server_t *admin;
  uv_pipe_t metrics_listener; /* metrics.sock (metrics.c) */
  int metrics_listening;
  char metrics_path[4096];
  int64_t started_ms;
  uint64_t started_ns; /* atl_mono_ns() at start, for uptime */
  /* [admin] secret_file's contents; "" when none is set. */
  char admin_secret[129];
  /* accept_sessions false: session.create and session.send are refused
   * (a drain before an upgrade). */
  int refuse_sessions;
  /* The HTTP API's token (token.h); "" when [http] auth is off. */
  char http_token[65];
  /* The key of the MCP session ids the bridge signs (token.h, mcp.key):
   * 64 hex digits, given to the bridge by http.auth. */
  char mcp_key[65];

  /* The post queue. */
  uv_async_t post_async;
  pthread_mutex_t post_mu;
  atl_post_t *post_head, *post_tail;

  /* The handler pool. */
  pthread_t *pool_threads;
  unsigned pool_n;
  pthread_mutex_t pool_mu;
  pthread_cond_t pool_cv;
  atl_post_t *pool_head, *pool_tail;
  int pool_stop;

  /* Store readers. */
  pthread_mutex_t readers_mu;
  atl_store_reader_t **readers;
  size_t n_readers, cap_readers;

  /* Sessions in memory. */
  atl_session_t **buckets;
  size_t n_buckets;
  size_t n_sessions;
  atl_session_t *lru_head, *lru_tail; /* head: most recently used */

  struct atl_agent_provider_s *agent; /* the LLM provider (agent/agent.h) */
  json_object *tools_json; /* every tool as the providers are given them */

  unsigned calls_in_flight; /* tool calls started and not yet answered */
  unsigned work_in_flight;  /* other asynchronous work */
  int shutting_down;
  int exit_code;
  uv_signal_t sig_term, sig_int, sig_hup;
  uv_timer_t shutdown_timer;
  uint64_t shutdown_deadline_ns;
};

/* Sets up everything (store, plugins, API socket) without running the
 * loop. Returns 0 or a negative code (logged). */
int atl_daemon_init(atl_daemon_t *d, uv_loop_t *loop, atl_config_t *cfg);
/* Starts a graceful shutdown (as SIGTERM does). */
void atl_daemon_shutdown(atl_daemon_t *d);
/* Frees what init created, after the loop has stopped. */
void atl_daemon_free(atl_daemon_t *d);

#endif
