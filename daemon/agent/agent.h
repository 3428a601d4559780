/* The agent loop: a user message starts a run; the model is called with
 * the system prompt, the whole history and every tool; its text streams
 * out as events; its tool calls run in order and their results go back;
 * the run ends when the model answers without a call, at the turn limit,
 * on cancel, or on an error. Everything runs on the loop thread.
 *
 * History and events are committed after every step, so a daemon killed
 * mid-run restarts with a consistent history.
 */
#ifndef ATL_AGENT_H
#define ATL_AGENT_H

#include "daemon.h"
#include "providers/provider.h"

/* The provider the daemon talks to, resolved once at start-up from the
 * configuration and the environment. */
typedef struct atl_agent_provider_s {
  const atl_provider_ops_t *ops; /* NULL: offline, or replay */
  int replay;                    /* a [provider.*] of type replay */
  atl_provider_cfg_t cfg;
  char *model;    /* the default model */
  char *base_url; /* owned copies behind cfg's pointers */
  char *api_key;
  char *why_offline;     /* what to tell a user in offline mode */
  char *prompt;          /* agent.system_prompt_file's text, or NULL */
  json_object *cassette; /* replay: the cassette's turns */
  json_object *demo;     /* the demo cassette's turns, read on first use */
  char *tools_text;      /* the request's "tools" value, or NULL for none */
} atl_agent_provider_t;

typedef struct atl_agent_s atl_agent_t;

int atl_agent_init(atl_daemon_t *d);
void atl_agent_free(atl_daemon_t *d);

/* The session's agent state is freed with the session. */
void atl_agent_session_free(atl_session_t *s);

/* Reads a cassette: {"format": "atelier-cassette", "version": 1,
 * "turns": [model messages in the history's form]}. Returns its turns (a
 * new reference) or NULL with *err (malloc()ed) saying what is wrong. */
json_object *atl_cassette_load(const char *path, char **err);

/* session.send: starts a run with text, or queues it while one is active.
 * Returns 0, or ATL_EBUSY when the queue is full (agent.queue_max).
 * model may be NULL (the provider's default). */
int atl_agent_send(atl_daemon_t *d, atl_session_t *s, const char *text,
                   const char *model, int *queued_out);
/* agent.models: {provider, type, models, default, offline, why?} as a new
 * object (provider, type and default null when offline). */
json_object *atl_agent_models(atl_daemon_t *d);

/* session.cancel: the run stops after the tool call in flight; returns 1
 * if a run was active. */
int atl_agent_cancel(atl_daemon_t *d, atl_session_t *s);

/* ---- between agent.c and its helpers ---- */

/* agent_setup.c: the system prompt for a session's document (CURRENT SCENE
 * from every plugin's describe hook), malloc()ed; the bundled demo
 * cassette's turns (borrowed; NULL if it cannot be read). */
char *atl_agent_system_prompt(atl_daemon_t *d, json_object *doc);
json_object *atl_agent_demo_turns(atl_daemon_t *d);

/* agent_images.c: the newest tool message's image references (a new
 * array of {id, mime}); reading their bytes on a worker (done runs on the
 * loop with "data" added where found); and putting the bytes into the
 * history for one request (attach 1) and out again (attach 0). */
json_object *atl_agent_newest_images(json_object *history);
int atl_agent_load_images(atl_daemon_t *d, json_object *refs,
                          void (*done)(void *user, json_object *refs),
                          void *user);
void atl_agent_attach_images(json_object *history, json_object *refs,
                             int attach);

/* agent_request.c: what a session's requests are built from, kept
 * between turns. The history is append-only, so each message's wire form
 * (its piece) is rendered once, and the message itself is then replaced
 * by null in the history: from then on the piece stands for it (the
 * store keeps the message). The system prompt is kept while the session's
 * document is the same object (documents are replaced, never changed in
 * place). Zero-initialised; freed with atl_agent_request_cache_free. */
typedef struct {
  json_object *history;         /* the history the pieces are of (a ref) */
  atl_provider_piece_t *pieces; /* owned, one per history message */
  size_t n_pieces, cap;
  json_object *doc; /* the document the system prompt is of (a reference) */
  char *system;
} atl_agent_request_cache_t;

void atl_agent_request_cache_free(atl_agent_request_cache_t *c);
/* The request of the next model call for history (whose last message may
 * carry images attached for this call only: refs, possibly empty), into
 * out. Returns 0 or a negative ATL_E* code. */
int atl_agent_request(atl_daemon_t *d, atl_agent_request_cache_t *c,
                      const char *model, json_object *doc, json_object *history,
                      json_object *refs, atl_provider_req_t *out);

#endif
