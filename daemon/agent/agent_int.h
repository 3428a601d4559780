/* What agent.c shares with the modules the loop is made of (agent_stop.c,
 * agent_context.c): the state of a session's agent and the steps a run is
 * made of. Not for anything outside daemon/agent/.
 */
#ifndef ATL_AGENT_INT_H
#define ATL_AGENT_INT_H

#include "agent.h"
#include "agent/sse.h"

/* A message waiting for the session's run to end (agent_queue.c). */
typedef struct pending_s {
  struct pending_s *next;
  struct atl_agent_s *a;
  char *text;
  char *model;   /* NULL: the session's */
  int64_t id;    /* its id in the store's queue */
  int64_t ts_ms; /* when it was sent */
  int committed; /* in the store: acknowledged, and free to start */
  int dropped;   /* cancelled before its commit came back */
  int queued;    /* what session.send answers: it did not start at once */
  atl_agent_sent_cb sent; /* until the commit comes back */
  void *user;
} pending_t;

struct atl_agent_s {
  /* The model call in flight. First: the HTTP client's callbacks get the
   * call as their user (agent_call.c), which is then the agent too. */
  atl_agent_call_t call;
  atl_daemon_t *d;
  atl_session_t *s; /* pinned while a run is active */
  /* NULL until loaded. Messages already sent to the model are null here:
   * req_cache holds their wire form (agent_request.c). */
  json_object *history;
  pending_t *q_head, *q_tail;
  unsigned queued;

  int loading; /* the history is being read from the store */

  /* The run. */
  int active;
  int cancel;
  int direct; /* a "/tool {json}" message: no model call */
  unsigned turns;
  char *model;
  int64_t input_tokens, output_tokens;
  unsigned attempt;
  uint64_t call_started_ns;
  uv_timer_t retry_timer;
  int timer_ready;
  /* Replaying: the cassette's turns (borrowed) and the next one. */
  json_object *replay;
  size_t replay_pos;
  /* The tool calls of the last model message, and their results. */
  json_object *calls;
  size_t next_call;
  json_object *results;
  atl_agent_request_cache_t req_cache;
  /* The provider type whose answer the calls came in (the tool message
   * answering them carries it), or NULL. Static. */
  const char *tag;
  /* How the run has been kept going: answers cut at the output limit
   * continued, unreadable calls reported back (agent_stop.c), and whether
   * the calls now running came in an answer cut short. */
  unsigned continuations, malformed;
  int cut;
  /* The context window: summaries made and refusals for length met in
   * this run, and the images of the request waiting for a summary. */
  unsigned compactions, context_retries;
  json_object *pending_refs;
  /* Every call id of the session, as a set: a new answer's ids are made
   * unique against it (atl_provider_claim_ids). */
  json_object *ids;
};

/* ---- agent.c ---- */

/* Appends msg (taken) to the history, in memory and in the store, with an
 * event of type carrying data (taken; may be NULL). */
void atl__agent_commit(atl_agent_t *a, json_object *msg, const char *type,
                       json_object *data);
/* An event of type with data (taken; may be NULL). */
void atl__agent_emit(atl_agent_t *a, const char *type, json_object *data);
/* {k: v} and {"role": role, "parts": [{"type": "text", "text": text}]}. */
json_object *atl__agent_obj_str(const char *k, const char *v);
json_object *atl__agent_text_message(const char *role, const char *text);
/* Ends the run with an event of type (data taken; may be NULL). */
void atl__agent_run_end(atl_agent_t *a, const char *type, json_object *data);
/* Ends the run with run.error {message, status?}; _fail adds "reason",
 * a word a client can act on (refusal, safety, max_tokens, ...). */
void atl__agent_run_error(atl_agent_t *a, int http_status, const char *msg);
void atl__agent_run_fail(atl_agent_t *a, const char *reason, int http_status,
                         const char *msg);
/* {"success": false, "error": <printf>}. */
json_object *atl__agent_error_envelope(const char *fmt, ...) ATL_PRINTF(1, 2);
/* Adds the result envelope env (taken) of call to a->results. */
void atl__agent_add_result(atl_agent_t *a, json_object *call, json_object *env);
/* The next model call of the run (or its end, if cancelled). */
void atl__agent_turn_start(atl_agent_t *a);

/* The session's agent state, made on first use (NULL: no memory). */
atl_agent_t *atl__agent_of(atl_daemon_t *d, atl_session_t *s);
/* Reads the history on a worker; then the queue's head runs (or, with
 * none, the session pinned for the load is let go). Returns 0 or a
 * negative ATL_E* code. */
int atl__agent_load(atl_agent_t *a);
/* Starts a run with the queued message qid (text and model taken): its
 * run.started commit removes it from the store's queue. */
void atl__agent_run_start(atl_agent_t *a, char *text, char *model, int64_t qid);

/* ---- agent_queue.c ---- */

/* Starts the queue's head, if the agent is idle and the head may start. */
void atl__agent_run_next(atl_agent_t *a);
void atl__agent_queue_free(atl_agent_t *a);

/* ---- agent_stop.c ---- */

/* Acts on how the model's turn ended, once its message msg is committed
 * (calls: its tool calls, borrowed): a turn cut at the output limit is
 * continued, a refusal ends the run with a run.error that says so, an
 * unreadable call is reported back to the model. Returns 1 when it took
 * the run over, 0 when the loop goes on (runs the calls, or completes). */
int atl__agent_stop(atl_agent_t *a, json_object *msg, json_object *calls);

/* ---- agent_context.c ---- */

/* Summarises the oldest messages so that the next request fits the
 * window (the request cache's last estimate and budget say by how much):
 * commits a summary message and a context.compacted event, then calls
 * done(a, 1, NULL); done(a, 0, NULL) if the run was cancelled meanwhile;
 * done(a, -1, why) when the summary call met a passing trouble (to be
 * retried; nothing was committed). A summary the provider will not make
 * (refused, empty) is committed as the messages dropped, and done(a, 1).
 * Returns 0, or ATL_E2BIG when no cut would make it fit (done is not
 * called). */
int atl__agent_compact(atl_agent_t *a, void (*done)(atl_agent_t *a, int status,
                                                    const char *why));
/* Whether a provider's error message is a refusal for length, the window
 * it names (*window, 0 when it names none), and whether that window holds
 * the answer too (*with_output). */
int atl__agent_context_refusal(const char *why, uint64_t *window,
                               int *with_output);

#endif
