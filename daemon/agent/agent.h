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

#include "agent/sse.h"
#include "daemon.h"
#include "providers/provider.h"

/* The provider the daemon talks to, resolved once at start-up from the
 * configuration and the environment. */
/* The bundled demos: "/demo NAME" replays conf/cassettes/FILE.json. */
#define ATL_N_DEMOS 3
#define ATL_DEMOS                                                              \
  {                                                                            \
    {"scene", "snowman"}, {"drawing", "drawing"}, {                            \
      "optics", "optics"                                                       \
    }                                                                          \
  }

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
  /* The demos' turns (conf/cassettes/NAME.json), each read on first use:
   * ATL_DEMOS names them. */
  json_object *demo[ATL_N_DEMOS];
  char *tools_text; /* the request's "tools" value, or NULL for none */
} atl_agent_provider_t;

typedef struct atl_agent_s atl_agent_t;

int atl_agent_init(atl_daemon_t *d);
void atl_agent_free(atl_daemon_t *d);

/* Fills p (zeroed by the caller) with the provider [provider.NAME] of the
 * configuration, or, for NULL, the one the agent uses (the configured
 * one, else the first whose key is in the environment); offline (ops
 * NULL, why_offline set) when there is none. atl_agent_provider_clear
 * frees what it holds. */
void atl_agent_provider_resolve(atl_daemon_t *d, const char *name,
                                atl_agent_provider_t *p);
void atl_agent_provider_clear(atl_agent_provider_t *p);
/* The public endpoint and key variable of a provider type (anthropic,
 * gemini, openai): 0, or -1 for another type. The strings are static. */
int atl_provider_defaults(const char *type, const char **url, const char **env);

/* agent_call.c: a streamed model call (a run's turn, a summary, a provider
 * check): the turn its events are parsed into, the SSE parser,
 * and the answer's first bytes (an error answer's body comes to the data
 * callback, not in the response). atl_agent_call_data is the HTTP
 * client's data callback: its user is the call, or a struct whose first
 * member is the call. Listening stops once *stop (may be NULL) is set. */
typedef struct {
  const atl_provider_ops_t *ops;
  atl_turn_t turn;
  atl_sse_t sse;
  char raw[8192];
  size_t raw_len;
  const int *stop;
  /* agent.max_turn_bytes, from atl_agent_call_start; 0: no cap. */
  size_t max_bytes;
  int over_cap; /* the answer passed max_bytes and was cut off */
  /* When the first byte of the answer came (atl_mono_ns), 0 before; a
   * run's turn sets trace_session (borrowed) after atl_agent_call_init so
   * that the admin socket's trace shows that moment. */
  uint64_t started_ns, first_byte_ns;
  const char *trace_session;
} atl_agent_call_t;

void atl_agent_call_init(atl_agent_call_t *c, const atl_provider_ops_t *ops,
                         const int *stop);
int atl_agent_call_data(const char *data, size_t len, void *user);
/* Sends req (not taken) within timeout_ms, its answer parsed into c and
 * done called with c as its user (so c is the first member of what done
 * reads). Returns 0 or a negative ATL_E* code (done is then never
 * called). */
int atl_agent_call_start(atl_agent_call_t *c, atl_daemon_t *d,
                         const atl_provider_req_t *req, uint32_t timeout_ms,
                         atl_http_done_cb done);
/* The provider's message in an error answer (malloc()ed), or NULL. */
char *atl_agent_call_said(const atl_agent_call_t *c,
                          const atl_http_response_t *r);
void atl_agent_call_free(atl_agent_call_t *c);

/* provider.check (agent_check.c): sends the provider NAME (NULL: the
 * agent's) one small request with the real tool list, and calls done with
 * what came of it (a new object: {provider, type, model, base_url, ok,
 * key: {ok, message}, tools: {ok, count, message, tool?}, answer: {text,
 * stop_reason, latency_ms, input_tokens, output_tokens}, status?}),
 * which done takes. model NULL: the provider's default. */
void atl_agent_check(atl_daemon_t *d, const char *name, const char *model,
                     void (*done)(atl_daemon_t *d, json_object *report,
                                  void *user),
                     void *user);

/* The session's agent state is freed with the session. */
void atl_agent_session_free(atl_session_t *s);
/* What the session's agent is doing, for the admin socket: {running,
 * phase ("idle", "model" or "tools"), turns, model, tokens_in, tokens_out,
 * queued_messages}; NULL when the session has no agent state yet. */
json_object *atl_agent_summary(const atl_session_t *s);

/* Reads a cassette: {"format": "atelier-cassette", "version": 1,
 * "turns": [model messages in the history's form]}. Returns its turns (a
 * new reference) or NULL with *err (malloc()ed) saying what is wrong. */
json_object *atl_cassette_load(const char *path, char **err);

/* session.send: queues text for the session's run (agent_queue.c). The
 * message is committed to the store's queue first; sent(d, status, queued,
 * user) runs on the loop once it is (status 0: acknowledged; queued: it
 * waits for a run or for messages sent before it) or could not be (a
 * negative ATL_E* code: nothing was kept). Returns 0 (sent will run),
 * ATL_EBUSY when the queue is full (agent.queue_max), or another negative
 * code (sent will not run). model may be NULL (the provider's default). */
typedef void (*atl_agent_sent_cb)(atl_daemon_t *d, int status, int queued,
                                  void *user);
int atl_agent_send(atl_daemon_t *d, atl_session_t *s, const char *text,
                   const char *model, atl_agent_sent_cb sent, void *user);
/* A session loaded from the store hands over the messages an earlier
 * atelierd acknowledged and never started (rows: [{id, text, model?,
 * ts_ms}], oldest first, borrowed); they run in order. */
void atl_agent_restore(atl_daemon_t *d, atl_session_t *s, json_object *rows);
/* What the history and the events keep of a message: for "/tool {json}"
 * naming a tool flagged ATL_TOOL_REDACT_ARGS, "/tool (redacted)" (a new
 * string the caller frees); NULL for any other text, kept as written.
 * Whatever persists or shows a message before its run (a queue) uses it. */
char *atl_agent_redacted_text(atl_daemon_t *d, const char *text);
/* agent.models: {provider, type, models, default, offline, why?} as a new
 * object (provider, type and default null when offline). */
json_object *atl_agent_models(atl_daemon_t *d);

/* session.cancel: the run stops after the tool call in flight, and the
 * messages waiting for it are dropped from the store (a queue.cleared
 * event). cb(d, status, cancelled, user) runs once that is committed
 * (maybe before this returns): cancelled is 1 if a run was active or a
 * message was dropped. */
typedef void (*atl_agent_cancel_cb)(atl_daemon_t *d, int status, int cancelled,
                                    void *user);
void atl_agent_cancel(atl_daemon_t *d, atl_session_t *s, atl_agent_cancel_cb cb,
                      void *user);

/* ---- between agent.c and its helpers ---- */

/* agent_setup.c: the system prompt for a session's document (CURRENT SCENE
 * from every plugin's describe hook), malloc()ed; the turns of the bundled
 * demo called name ("scene" when name is NULL or empty: "/demo" alone),
 * borrowed, or NULL (and *known = 0 for a name that is no demo, 1 for a
 * cassette that cannot be read). */
char *atl_agent_system_prompt(atl_daemon_t *d, json_object *doc);
json_object *atl_agent_demo_turns(atl_daemon_t *d, const char *name,
                                  int *known);
/* The demos' names, "scene, drawing, optics". */
const char *atl_agent_demo_names(void);

/* agent_images.c: the newest tool message's image references (a new
 * array of {id, mime}; summaries after it do not count); reading their
 * bytes on a worker (done runs on the loop with "data" added where found);
 * and putting the bytes into the history's message at index at for one
 * request (attach 1) and out again (attach 0). */
json_object *atl_agent_newest_images(json_object *history);
int atl_agent_load_images(atl_daemon_t *d, json_object *refs,
                          void (*done)(void *user, json_object *refs),
                          void *user);
void atl_agent_attach_images(json_object *history, json_object *refs,
                             int attach, size_t at);

/* agent_request.c: what a session's requests are built from, kept
 * between turns. The history is append-only, so each message's wire form
 * (its piece) is rendered once, and the message itself is then replaced
 * by null in the history: from then on the piece stands for it (the
 * store keeps the message). The system prompt is kept while the session's
 * document is the same object (documents are replaced, never changed in
 * place).
 *
 * It also keeps each request within the model's context window
 * (doc/providers.md, "The context window"): when the estimate of a
 * request's input tokens passes the budget, old tool results go in a short
 * form (their summaries), and when that is not enough atl_agent_request
 * says so (ATL_E2BIG) and the loop summarises the oldest messages
 * (agent_context.c): a "summary" message in the history then stands for
 * every message before the one it names. Zero-initialised; freed with
 * atl_agent_request_cache_free. */
typedef struct {
  json_object *history;         /* the history the pieces are of (a ref) */
  atl_provider_piece_t *pieces; /* owned, one per history message */
  /* Per message: the short form of a tool message's piece (results cut to
   * their summaries; len 0 when not worth it), and what the message is. */
  atl_provider_piece_t *shorts;
  unsigned char *kind;
  size_t n_pieces, cap;
  json_object *doc; /* the document the system prompt is of (a reference) */
  char *system;
  /* The window. */
  uint64_t ceiling;             /* 0, or a budget learnt from a refusal */
  double bytes_per_token;       /* 0 until measured; then the last measure */
  size_t start;                 /* the first message sent in full */
  atl_provider_piece_t summary; /* the summary standing for those before */
  size_t short_below;           /* tool messages before it go short */
  /* The last request built: its size (images aside), images and input
   * estimate, and the budget it was held to. */
  size_t last_bytes, last_images;
  uint64_t last_estimate, last_budget;
} atl_agent_request_cache_t;

/* What a message is, for the window (kind[]). */
enum {
  ATL_MSG_OTHER = 0,
  ATL_MSG_USER,  /* a user's message: a run starts there */
  ATL_MSG_NUDGE, /* a word of the loop's to the model (role user) */
  ATL_MSG_MODEL,
  ATL_MSG_TOOL,
  ATL_MSG_SUMMARY
};

void atl_agent_request_cache_free(atl_agent_request_cache_t *c);
/* The request of the next model call for history (whose last message, or
 * the last before trailing summaries, may carry images attached for this
 * call only: refs, possibly empty), into out. Returns 0; ATL_E2BIG when
 * the request cannot be held within the context window without
 * summarising (nothing is built); or another negative ATL_E* code. */
int atl_agent_request(atl_daemon_t *d, atl_agent_request_cache_t *c,
                      const char *model, json_object *doc, json_object *history,
                      json_object *refs, atl_provider_req_t *out);
/* The input tokens a request to model may take: the configured
 * context_tokens or the model's window, less room for the answer, or the
 * ceiling learnt from a refusal if lower. */
uint64_t atl_agent_budget(atl_daemon_t *d, const atl_agent_request_cache_t *c,
                          const char *model);
/* The estimate of a request of bytes (images aside) and images. */
uint64_t atl_agent_estimate(const atl_agent_request_cache_t *c, size_t bytes,
                            size_t images);
/* Learns from a provider's count of the last request's input tokens. */
void atl_agent_calibrate(atl_agent_request_cache_t *c, int64_t input_tokens);

#endif
