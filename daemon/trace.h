/* The admin socket's trace: what happens in the daemon, as JSON lines, to
 * every admin connection that asked for it (doc/admin.md, "trace").
 *
 * Emitting is free when nobody traces that kind: atl_trace_wants() is one
 * relaxed atomic load, and callers build nothing unless it says yes. When
 * someone does, the line is made on the emitting thread and handed to the
 * loop, which writes it to each subscriber whose filter matches. A
 * subscriber whose reader has fallen more than ATL_TRACE_BUFFER bytes
 * behind loses lines instead of holding them: they are counted and the
 * count is written ({"dropped": N}) as soon as the reader catches up, so
 * a stalled reader costs a bounded amount of memory and never slows the
 * loop.
 */
#ifndef ATL_TRACE_H
#define ATL_TRACE_H

#include <stdatomic.h>
#include <stdint.h>

#include <json-c/json.h>

/* (daemon.h's; repeated so that the store can emit without it) */
typedef struct atl_daemon_s atl_daemon_t;
typedef struct atl_conn_s atl_conn_t;

enum {
  ATL_TR_RPC = 1u << 0,    /* "rpc": a request on api.sock, as it arrives */
  ATL_TR_RUN = 1u << 1,    /* "run": an agent run starts or ends */
  ATL_TR_TURN = 1u << 2,   /* "turn": a model request, its first byte, end */
  ATL_TR_TOOL = 1u << 3,   /* "tool": a tool call starts or ends */
  ATL_TR_COMMIT = 1u << 4, /* "commit": a store group commit */
  ATL_TR_RENDER = 1u << 5, /* "render": a render job and its units */
  ATL_TR_EVENT = 1u << 6,  /* "event": a session event emitted */
  ATL_TR_LOG = 1u << 7,    /* "log": a log line */
  ATL_TR_ALL = (1u << 8) - 1
};

/* How far one subscriber's reader may fall behind, in bytes. */
#define ATL_TRACE_BUFFER ((size_t)1 << 20)

/* The kinds some subscriber wants; read it through atl_trace_wants. */
extern _Atomic unsigned atl_trace_mask;

static inline int atl_trace_wants(unsigned kind) {
  return (atomic_load_explicit(&atl_trace_mask, memory_order_relaxed) & kind) !=
         0;
}

/* Sets the daemon the lines are posted to (at start) or NULL (at exit). */
void atl_trace_init(atl_daemon_t *d);

/* Emits a line of kind: {"t": seconds since the daemon started (monotonic),
 * "kind": ..., "session": session (omitted when NULL), "what": what, and
 * the members of fields}. fields (may be NULL) is taken. Any thread; does
 * nothing unless atl_trace_wants(kind). Never logs. For rare lines; the
 * writer below costs a tenth of it. */
void atl_trace_emit(unsigned kind, const char *session, const char *what,
                    json_object *fields);

/* The same line written directly, without json-c, for the lines of every
 * call: atl_tw_begin, the fields, atl_tw_end. The writer lives on the
 * caller's stack (lines past its buffer go to the heap). Strings are
 * copied and escaped; atl_tw_json takes text that is already JSON. */
typedef struct {
  unsigned kind;
  int level;     /* a log line's, else -1 */
  uint64_t t_us; /* its time, in µs since the daemon started */
  char session[33];
  char *p;
  size_t len, cap;
  int failed;
  char stack[2048];
} atl_tw_t;
/* 0 (and nothing to end) unless someone traces kind. */
int atl_tw_begin(atl_tw_t *w, unsigned kind, const char *session,
                 const char *what);
void atl_tw_str(atl_tw_t *w, const char *key, const char *val);
void atl_tw_strn(atl_tw_t *w, const char *key, const char *val, size_t len);
void atl_tw_int(atl_tw_t *w, const char *key, int64_t v);
void atl_tw_ms(atl_tw_t *w, const char *key, uint64_t us); /* as ms */
void atl_tw_bool(atl_tw_t *w, const char *key, int v);
void atl_tw_json(atl_tw_t *w, const char *key, const char *json, size_t len);
/* Queues the line and frees what the writer took. */
void atl_tw_end(atl_tw_t *w);

/* The kind's name ("rpc", ...) and back (0 if unknown). */
const char *atl_trace_kind_name(unsigned kind);
unsigned atl_trace_kind_parse(const char *name);

/* Makes conn (an admin connection, whose answer to trace has been written)
 * a subscriber: lines of the kinds in mask, of session (NULL or "": all),
 * log lines at log_level and above, for seconds (0: until the client
 * leaves), after which {"end": "time"} is written and conn closed. Loop
 * thread. 0 or ATL_ENOMEM. */
int atl_trace_subscribe(atl_daemon_t *d, atl_conn_t *conn, unsigned mask,
                        const char *session, int log_level, double seconds);
/* Subscribers now. */
unsigned atl_trace_subscribers(void);
/* Ends every subscription ({"end": "shutdown"}), at shutdown. */
void atl_trace_end_all(void);

#endif
