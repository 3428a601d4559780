/* atelier-fcgi: the FastCGI responder between nginx and atelierd.
 *
 * A thin client of the daemon's JSON-RPC API (doc/api.md): every HTTP
 * request under /api/ becomes one or a few JSON-RPC calls on a unix
 * socket, and the event stream of a session becomes a loop of long-polling
 * events.read calls written out as server-sent events. The bridge holds no
 * state of its own beyond its connections, so it can be restarted at any
 * time, and so can the daemon behind it (calls then answer 503 until it is
 * back, and event streams wait for it).
 *
 * Threads: a pool of threads accept FastCGI requests (libfcgi's FCGX API);
 * each request is served on the thread that accepted it, with that
 * thread's own connection to the daemon. An event stream keeps its thread
 * for as long as the client stays, so the pool grows as streams open and
 * shrinks as they close (fcgi/pool.c). See doc/deploy.md.
 */
#ifndef ATL_FCGI_BRIDGE_H
#define ATL_FCGI_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include <fcgiapp.h>
#include <json-c/json.h>

#include "rpc_client.h"

/* The command line (fcgi/main.c). Strings are argv's or static. */
typedef struct {
  const char *socket_path;    /* where nginx connects (FastCGI) */
  const char *daemon_socket;  /* atelierd's api.sock */
  size_t max_body;            /* request bodies past this get 413 */
  int min_threads;            /* accepting threads kept idle */
  int max_threads;            /* threads at most: requests + streams */
  int heartbeat_ms;           /* an SSE comment at least this often */
  int reserve_threads;        /* threads streams can never take */
  int max_streams_per_client; /* streams from one REMOTE_ADDR at once */
  int verbose;                /* a log line per request */
  /* --host: the Host header values served (argv's strings, in a malloc()ed
   * array); none: the loopback names on any port. */
  const char **hosts;
  int n_hosts;
} fcgi_options_t;

extern fcgi_options_t fcgi_opt;
/* Set once SIGTERM or SIGINT came: streams end, idle threads leave. */
extern volatile int fcgi_stopping;

/* One request being served. Owned by the thread serving it. */
typedef struct {
  FCGX_Request *req;
  const char *method; /* REQUEST_METHOD */
  char path[512];     /* REQUEST_URI up to '?' */
  const char *query;  /* after '?', or "" */
  int status;         /* the status answered, for the log */
  atl_rpcc_t *rpc;    /* this thread's connection to atelierd */
} fcgi_ctx_t;

/* fcgi/pool.c: starts the threads that accept and serve requests on
 * listen_fd (min_threads to begin with, up to max_threads). Returns 0, or
 * -1 when no thread could be started. */
int fcgi_pool_run(int listen_fd);
/* Waits until every thread has left (after fcgi_stopping and the listening
 * socket's shutdown), or timeout_ms. */
void fcgi_pool_wait(int timeout_ms);
/* Threads alive now. */
int fcgi_pool_threads(void);
/* Takes an event stream's slot for the client at addr (REMOTE_ADDR; NULL
 * counts as one unknown client). Returns 0, or 503 when every thread but
 * the reserve holds a stream, or 429 when addr holds
 * max_streams_per_client already. A slot taken is given back with
 * fcgi_stream_release(addr). */
int fcgi_stream_acquire(const char *addr);
void fcgi_stream_release(const char *addr);

/* fcgi/routes.c: serves one request. */
void fcgi_route(fcgi_ctx_t *x);

/* fcgi/reply.c: answers. Each writes the whole response. */
void fcgi_reply_json(fcgi_ctx_t *x, int status, json_object *body);
void fcgi_reply_error(fcgi_ctx_t *x, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with extra header lines ("Name: value\r\n" each). */
void fcgi_reply_json_h(fcgi_ctx_t *x, int status, const char *headers,
                       json_object *body);
void fcgi_reply_error_h(fcgi_ctx_t *x, int status, const char *headers,
                        const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* 405 with an Allow header listing allow. */
void fcgi_reply_method(fcgi_ctx_t *x, const char *allow);
/* The reason phrase of a status. */
const char *fcgi_status_text(int status);
/* Writes to the response (printf-style). 0, or -1 when the client has
 * gone. */
int fcgi_printf(fcgi_ctx_t *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A request parameter (CGI variable), or NULL. */
const char *fcgi_param(fcgi_ctx_t *x, const char *name);
/* Reads the request body as it is: 0 with *out (malloc()ed and
 * NUL-terminated, *len bytes; NULL for no body), or answers 400/413/415
 * itself and returns the status. */
int fcgi_read_body(fcgi_ctx_t *x, char **out, size_t *len);
/* Reads the request body as a JSON value. Returns 0 with *out (NULL for an
 * empty body), or answers 400/411/413/415 itself and returns the status. */
int fcgi_read_json(fcgi_ctx_t *x, json_object **out);

/* A JSON-RPC call on this thread's connection, (re)connecting as needed.
 * Returns 0 with *result (a new reference; may be NULL for null), or
 * answers the HTTP error itself (503 daemon unreachable, 4xx/5xx mapped
 * from the JSON-RPC error) and returns its status. params is taken. */
int fcgi_call(fcgi_ctx_t *x, const char *method, json_object *params,
              int timeout_ms, json_object **result);
/* The same without answering: returns ATL_RPCC_OK / ATL_RPCC_ERROR (see
 * x->rpc->err_code) / ATL_RPCC_TRANSPORT. */
int fcgi_call_quiet(fcgi_ctx_t *x, const char *method, json_object *params,
                    int timeout_ms, json_object **result);
/* The HTTP status for a JSON-RPC error code. */
int fcgi_status_of_rpc(int code);

/* fcgi/auth.c: who may use the API (Host, Origin, Sec-Fetch-Site,
 * Content-Type, the token; see the file's comment). Returns 0 when the
 * request may go on to its route (a FCGI_R_* of match.h), else the status
 * it answered. POST /api/auth (FCGI_R_AUTH) is answered here. */
int fcgi_guard(fcgi_ctx_t *x, int route);
/* The thread's connection to atelierd is new: ask http.auth again. */
void fcgi_auth_forget(void);
/* Whether this request may still go on, for a stream that may have
 * outlived a daemon restart (the token revoked, auth turned on): asks
 * atelierd again only if the daemon that answered before has closed this
 * thread's connection. 1 yes, 0 no, -1 atelierd is not reachable yet.
 * Answers nothing. */
int fcgi_auth_recheck(fcgi_ctx_t *x);
/* 1 if a Host header value is one the bridge serves (--host). */
int fcgi_host_allowed(const char *host);
/* 1 if addr (text) is an IPv4 or IPv6 loopback address. */
int fcgi_addr_is_loopback(const char *addr);

/* The MCP session key atelierd gave this thread with the token (64 hex
 * digits), or NULL before fcgi_guard() or from an atelierd without one. */
const char *fcgi_mcp_key(void);

/* fcgi/mcp.c: POST /mcp and /api/sessions/{id}/mcp (bound: the id, else
 * NULL), the MCP front over Streamable HTTP (doc/mcp.md). */
void fcgi_mcp(fcgi_ctx_t *x, const char *bound);

/* fcgi/sse.c: GET /api/sessions/{id}/events. */
void fcgi_events(fcgi_ctx_t *x, const char *session);
/* One event ({seq, type, ts, data}) as its SSE text (malloc()ed, *len
 * bytes), its seq in *seq; NULL on ENOMEM. */
char *fcgi_sse_format(json_object *event, long long *seq, size_t *len);

/* fcgi/hub.c: the streams of one session share one long poll. */
typedef struct fcgi_hub_s fcgi_hub_t;
enum {
  FCGI_HUB_EVENTS = 1,  /* *out holds the SSE text of new events */
  FCGI_HUB_IDLE,        /* nothing within wait_ms */
  FCGI_HUB_BEHIND,      /* *after is older than the hub remembers */
  FCGI_HUB_GONE,        /* the session no longer exists */
  FCGI_HUB_CLIENT_GONE, /* this stream's client has left */
  FCGI_HUB_DAEMON_DOWN  /* atelierd is unreachable */
};
/* Joins (or makes) the hub of session; after is where the joining stream
 * stands. NULL on ENOMEM. */
fcgi_hub_t *fcgi_hub_join(const char *session, long long after);
void fcgi_hub_leave(fcgi_hub_t *h);
/* Waits at most wait_ms for events after *after, polling atelierd on x's
 * connection when no other stream of the hub does. On FCGI_HUB_EVENTS,
 * *out (malloc()ed, *len bytes) and *after advance. */
int fcgi_hub_wait(fcgi_hub_t *h, fcgi_ctx_t *x, long long *after, char **out,
                  size_t *len, int wait_ms);

/* Logging to stderr: "atelier-fcgi: LEVEL message". */
void fcgi_log(const char *level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
