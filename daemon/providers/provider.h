/* LLM providers: what the agent loop needs of each wire protocol.
 *
 * The loop keeps the conversation in one provider-neutral form (below) and
 * asks a provider for two things: the HTTP request of one model call, built
 * from the system prompt, the history and the tools; and, as the answer
 * streams in as server-sent events, the parsing of each event into one
 * provider-neutral turn. Neither does any I/O: the loop sends the request
 * with the daemon's HTTP client and feeds the events through sse.h, so the
 * providers are plain functions, tested on recorded bytes.
 *
 * The history is a JSON array of messages:
 *   {"role": "user",  "parts": [{"type": "text", "text": "..."}]}
 *   {"role": "model", "parts": [
 *       {"type": "thinking", "text": "...", "signature": "..."},
 *       {"type": "text", "text": "..."},
 *       {"type": "tool_call", "id": "...", "name": "...",
 *        "arguments": {...}, "signature"?: "..."}],
 *    "usage"?: {"input_tokens": n, "output_tokens": n}, ...}
 *   {"role": "tool",  "parts": [
 *       {"type": "tool_result", "id": "...", "name": "...",
 *        "result": <the envelope: {"success": ..., ...}>, "is_error": bool,
 *        "images"?: [{"mime": "image/png", "data": "<base64>"}]}]}
 * Every tool_call of a model message is answered, in order, by a
 * tool_result in the tool message that follows it; the loop guarantees it
 * (an unknown tool or bad arguments get an error result, never nothing).
 * "signature"s are the provider's opaque reasoning tokens (Anthropic's
 * thinking signature, Gemini's thoughtSignature), kept to be sent back.
 */
#ifndef ATL_PROVIDER_H
#define ATL_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* One configured provider ([provider.NAME] in the configuration). */
typedef struct {
  const char *name;     /* NAME */
  const char *type;     /* "openai", "anthropic", "gemini", "replay" */
  const char *base_url; /* e.g. "https://api.anthropic.com", no trailing / */
  const char *api_key;  /* read from api_key_env; may be NULL (local servers) */
  uint32_t max_tokens;  /* max output tokens per model call */
  uint32_t timeout_ms;  /* per model call */
} atl_provider_cfg_t;

/* One HTTP request, owned by the caller: free it with atl_provider_req_free. */
typedef struct {
  char *url;
  char *headers[8]; /* "Name: value", NULL-terminated */
  char *body;       /* JSON */
} atl_provider_req_t;

void atl_provider_req_free(atl_provider_req_t *r);

/* A tool call as it streams in. */
typedef struct {
  char *id;
  char *name;
  char *args; /* JSON text, accumulated from fragments */
  size_t args_len, args_cap;
  char *signature;
} atl_turn_call_t;

/* One model turn, accumulated from the stream. */
typedef struct {
  char *text;
  size_t text_len, text_cap;
  char *thinking;
  size_t thinking_len, thinking_cap;
  char *thinking_signature;
  atl_turn_call_t *calls;
  size_t n_calls;
  int64_t input_tokens, output_tokens; /* -1: not reported */
  char *stop_reason;                   /* as the provider says it */
  int done;                            /* the stream's final event came */
  char *error; /* what was wrong with the stream, if anything */
  void *priv;  /* the provider's parsing state */
  /* Called with each piece of text as it arrives (may be NULL). */
  void (*on_text)(const char *text, size_t len, void *user);
  void *user;
} atl_turn_t;

void atl_turn_init(atl_turn_t *t);
void atl_turn_free(atl_turn_t *t);
/* Appends text (and reports it through on_text). 0 or ATL_ENOMEM. */
int atl_turn_text(atl_turn_t *t, const char *s, size_t len);
int atl_turn_thinking(atl_turn_t *t, const char *s, size_t len);
/* The call at index i, created (empty) if needed; NULL on ENOMEM or when i
 * is absurd (> 255). */
atl_turn_call_t *atl_turn_call(atl_turn_t *t, size_t i);
int atl_turn_call_args(atl_turn_call_t *c, const char *s, size_t len);
/* Records a protocol error (printf-style); returns ATL_EPROTO. */
int atl_turn_fail(atl_turn_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The model message of the history for a finished turn: a new object. The
 * arguments of each call are parsed; a call whose arguments are not a JSON
 * object is kept with "arguments": {} and "bad_arguments": "<the text>", so
 * that the loop can answer it with an error result. */
json_object *atl_turn_message(const atl_turn_t *t);

typedef struct {
  const char *type;
  /* Builds the request of one streamed model call. system may be NULL;
   * history is the array above; tools is an array of {name, description,
   * input_schema} (the schemas as the daemon's plugins declare them).
   * Returns 0 or a negative ATL_E* code. */
  int (*build)(const atl_provider_cfg_t *cfg, const char *model,
               const char *system, json_object *history, json_object *tools,
               atl_provider_req_t *out);
  /* One server-sent event of the answer. Returns 0, or ATL_EPROTO with
   * t->error set. */
  int (*event)(atl_turn_t *t, const char *event, const char *data, size_t len);
  /* The error message in an error answer's body (status >= 400), as a new
   * malloc()ed string, or NULL if the body does not say. */
  char *(*error_message)(const char *body, size_t len);
  /* Frees t->priv. May be NULL. */
  void (*turn_free)(atl_turn_t *t);
} atl_provider_ops_t;

extern const atl_provider_ops_t atl_provider_openai;
extern const atl_provider_ops_t atl_provider_anthropic;
extern const atl_provider_ops_t atl_provider_gemini;

/* Internal (gemini.c, declared for the tests): a tool's input schema
 * rewritten into the subset of JSON Schema that Gemini accepts, $refs
 * inlined. The result is the caller's to put; it shares unchanged parts of
 * schema (reference-counted), so schema must not be changed while it
 * lives. schema itself is not changed. */
json_object *atl__gemini_schema(json_object *schema);

/* What the providers share in building and parsing JSON (turn.c). */
/* o[key] when it is a string (borrowed), else NULL. */
const char *atl_provider_str(json_object *o, const char *key);
/* o as compact JSON text, malloc()ed. */
char *atl_provider_json_text(json_object *o);
/* Exactly len bytes of JSON (no NUL needed), or NULL if they are not. */
json_object *atl_provider_parse_len(const char *s, size_t len);
/* Appends items (an array, taken) to list as {"role": role, key: items},
 * or to the last entry when it has the same role: the APIs want roles to
 * alternate, and tool results followed by the user's words are both
 * "user". An empty array adds nothing. */
void atl_provider_append_merged(json_object *list, const char *role,
                                const char *key, json_object *items);

/* The provider of a type name, or NULL. */
const atl_provider_ops_t *atl_provider_find(const char *type);

#endif
