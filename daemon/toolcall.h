/* The state of one tool call, shared by the loop and a pool thread. Only
 * toolcall.c and the host table (host.c) look inside. */
#ifndef ATL_TOOLCALL_H
#define ATL_TOOLCALL_H

#include "daemon.h"

enum { ATL_OUTCOME_NONE = 0, ATL_OUTCOME_SUCCESS = 1, ATL_OUTCOME_ERROR = 2 };

/* Who finishes a call: the pool thread when its handler returns in time, or
 * the loop when the timeout fires first. Decided once, by compare and swap,
 * so that exactly one of them commits. */
enum { ATL_JOB_RUNNING = 0, ATL_JOB_FINISHED = 1, ATL_JOB_TIMED_OUT = 2 };

typedef struct {
  char id[ATL_IMAGE_ID_LEN + 1];
  char *mime;
  char *name;
  void *data;
  size_t len;
} atl_call_image_t;

struct atl_call_job_s {
  atl_call_job_t *next; /* the session's queue */
  atomic_int refs;
  atomic_int cancelled;
  atomic_int state; /* ATL_JOB_* */
  atl_daemon_t *d;
  atl_session_t *s;
  const atl_tool_entry_t *tool; /* NULL: unknown tool */
  char *tool_name;
  char *call_id; /* the model's id of the call, or NULL */
  char *via;     /* who made a direct call ("MCP over stdio (...)"), or NULL */
  char session_id[ATL_SESSION_ID_LEN + 1];
  json_object *args;
  atl_call_done_cb done;
  void *user;
  uv_timer_t timer;
  int64_t started_ms;
  uint64_t started_ns; /* for the admin socket's latencies */
  int stat_kind;       /* ATL_TS_* of a failure (stats.h), or -1 */

  /* Written by the pool thread, read by the loop after the post. */
  atl_call_t call;
  json_object *doc;
  int outcome;
  json_object *result;
  char *error;
  char *target;
  json_object *before, *after;
  atl_call_image_t *images;
  size_t n_images;
  int64_t duration_ms;
  char *envelope;
  char *event;
  char *doc_text;
  /* The call's own events (call_emit), committed before tool.finished. */
  char **ev_types, **ev_data;
  size_t n_events;

  /* Loop only, except commit_status, seq and new_doc, which the thread
   * that commits sets before the store takes the transaction. */
  int pool_ref; /* the pool's reference is still held */
  int timed_out;
  int commit_status;
  int64_t seq;
  json_object *new_doc;

  /* A live preview's call (preview.c), not a tool call: its slot, and the
   * revision its snapshot follows. The call_* outcome functions refuse
   * such a call; only preview_put and call_cancelled take it. */
  void *preview;
  int64_t preview_rev;
  int preview_hq;        /* made at HQ */
  int preview_requested; /* asked for by session.preview, not a change */
  /* A preview's second way to be cancelled: when the monotonic clock
   * passes this (0: never), as call_cancelled() sees it. */
  _Atomic uint64_t cancel_at_ns;
};

atl_call_job_t *atl__job_of(const atl_call_t *call);
int atl__call_result(atl_call_t *call, json_object *result);
int atl__call_errorv(atl_call_t *call, const char *fmt, va_list ap);
int atl__call_image(atl_call_t *call, const char *mime, const void *data,
                    size_t len, const char *name);
int atl__call_operation(atl_call_t *call, const char *target,
                        json_object *before, json_object *after);
int atl__call_cancelled(const atl_call_t *call);
int atl__call_emit(atl_call_t *call, const char *type, json_object *data);

#endif
