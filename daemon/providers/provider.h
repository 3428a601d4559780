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

#include "wire_schema.h"

/* One configured provider ([provider.NAME] in the configuration). */
typedef struct {
  const char *name;     /* NAME */
  const char *type;     /* "openai", "anthropic", "gemini", "replay" */
  const char *base_url; /* e.g. "https://api.anthropic.com", no trailing / */
  const char *api_key;  /* read from api_key_env; may be NULL (local servers) */
  uint32_t max_tokens;  /* the answer's output tokens per model call */
  /* Thinking: Anthropic's budget (within max_tokens; 0: off), Gemini's
   * (besides max_tokens; 0: the least the model allows); thinking_set:
   * the configuration gave one (else Gemini's is the daemon's choice). */
  uint32_t thinking_budget;
  int thinking_set;
  uint32_t timeout_ms;     /* per model call */
  uint32_t context_tokens; /* the window to keep within; 0: the model's */
  int max_tokens_param;    /* openai: ATL_TOKEN_PARAM_* of config.h */
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

/* A block of the model's reasoning: its text (a summary, with some
 * providers) and signature, or, for Anthropic's redacted_thinking, the
 * opaque data. Both kinds must go back exactly as they came. */
typedef struct {
  char *text;
  size_t text_len, text_cap;
  char *signature;
  size_t signature_len, signature_cap;
  char *redacted; /* redacted_thinking's data, or NULL */
} atl_turn_thought_t;

/* The answer's parts in the order they came: a stretch of text
 * (text[from, to)), a thought or a call (index). Anthropic refuses a
 * tool-use turn whose thinking blocks come back reordered. */
enum { ATL_TURN_TEXT = 1, ATL_TURN_THOUGHT, ATL_TURN_CALL };
typedef struct {
  unsigned char kind;
  size_t index;
  size_t from, to; /* ATL_TURN_TEXT; to is SIZE_MAX while it grows */
} atl_turn_part_t;

/* One model turn, accumulated from the stream. */
typedef struct {
  char *text; /* all of the answer's text, joined */
  size_t text_len, text_cap;
  atl_turn_thought_t *thoughts;
  size_t n_thoughts;
  atl_turn_call_t *calls;
  size_t n_calls;
  atl_turn_part_t *order;
  size_t n_order, order_cap;
  int64_t input_tokens, output_tokens; /* -1: not reported */
  char *stop_reason;                   /* as the provider says it */
  /* What the provider said of the stop, if anything: Gemini's
   * finishMessage, OpenAI's refusal text. */
  char *stop_message;
  size_t stop_message_len, stop_message_cap;
  int done;    /* the stream's final event came */
  char *error; /* what was wrong with the stream, if anything */
  /* error is the provider's own report of a passing trouble (overloaded,
   * unavailable) sent in the stream after its 200: worth another try
   * while nothing of the answer has come. */
  int error_transient;
  void *priv; /* the provider's parsing state */
  /* Called with each piece of text as it arrives (may be NULL). */
  void (*on_text)(const char *text, size_t len, void *user);
  void *user;
} atl_turn_t;

void atl_turn_init(atl_turn_t *t);
void atl_turn_free(atl_turn_t *t);
/* Appends text (and reports it through on_text). 0 or ATL_ENOMEM. A
 * stretch of text after another kind of part is a new text part. */
int atl_turn_text(atl_turn_t *t, const char *s, size_t len);
/* Appends reasoning text to the thought that came last, or to a new one
 * when something else came after it. */
int atl_turn_thinking(atl_turn_t *t, const char *s, size_t len);
/* A new thought (fresh 1), or the last one, made if there is none (fresh
 * 0). NULL on ENOMEM or past 1024 thoughts. */
atl_turn_thought_t *atl_turn_thought(atl_turn_t *t, int fresh);
/* Appends to a thought's text. */
int atl_turn_thought_text(atl_turn_thought_t *th, const char *s, size_t len);
/* Appends to a thought's signature, or replaces it (append_to 0). */
int atl_turn_thought_sign(atl_turn_thought_t *th, const char *s, size_t len,
                          int append_to);
/* The call at index i, created (empty) if needed, with the slots before
 * it, each a part in index order; NULL on ENOMEM or when i is absurd
 * (> 255). */
atl_turn_call_t *atl_turn_call(atl_turn_t *t, size_t i);
int atl_turn_call_args(atl_turn_call_t *c, const char *s, size_t len);
/* Records a protocol error (printf-style); returns ATL_EPROTO. */
int atl_turn_fail(atl_turn_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends to the stop message. */
int atl_turn_stop_message(atl_turn_t *t, const char *s, size_t len);

/* How a turn ended, whatever the provider's words for it. */
enum {
  ATL_STOP_END = 0,   /* the model finished (or the stop is unknown) */
  ATL_STOP_LENGTH,    /* cut at the output limit (max_tokens, length) */
  ATL_STOP_REFUSAL,   /* refused or blocked (refusal, content_filter,
                         SAFETY, a blocked prompt...) */
  ATL_STOP_MALFORMED, /* a call the provider could not parse
                         (MALFORMED_FUNCTION_CALL) */
  ATL_STOP_PAUSE      /* paused mid-turn, to be resumed (pause_turn) */
};
int atl_turn_stop_kind(const char *stop_reason);
/* The model message of the history for a finished turn: a new object,
 * its parts in the order they came. Text that is only whitespace is left
 * out (Anthropic refuses such a block for good: "text content blocks must
 * contain non-whitespace text"). Every call has an id, unique in the
 * message: one the provider gave none gets "atl_<hex>" and "made_id":
 * true. The arguments of each call are parsed; a call whose arguments are
 * not a JSON object is kept with "arguments": {} and "bad_arguments":
 * "<the text>", so that the loop can answer it with an error result. */
json_object *atl_turn_message(const atl_turn_t *t);

/* A growable string; the zero value is empty. Appending after a failed
 * allocation does nothing and keeps failing, so a caller checks once, at
 * atl_sb_take. */
typedef struct {
  char *p;
  size_t len, cap;
  int oom;
} atl_strbuf_t;

int atl_sb_add(atl_strbuf_t *b, const char *s, size_t n);
/* Makes room for n more bytes at once. */
int atl_sb_reserve(atl_strbuf_t *b, size_t n);
int atl_sb_adds(atl_strbuf_t *b, const char *s);
/* s as a JSON string literal, quotes included. */
int atl_sb_json_string(atl_strbuf_t *b, const char *s);
/* The text (the caller's to free; "" when nothing was added), or NULL if
 * an allocation failed. b is empty again either way. */
char *atl_sb_take(atl_strbuf_t *b);

/* One history message in a provider's wire form: the JSON values it adds
 * to the request's message list, as text without the enclosing brackets
 * ("{..},{..}"; empty when it adds nothing). With a role, the values are
 * the content items of a message of that role, and consecutive pieces of
 * one role share a message; with no role, they are whole messages. role
 * is a static string; text is owned by the piece. */
typedef struct {
  const char *role;
  char *text;
  size_t len;
} atl_provider_piece_t;

void atl_provider_piece_free(atl_provider_piece_t *p);

typedef struct atl_provider_ops_s {
  const char *type;
  /* The key of a message's items, for pieces with a role ("content",
   * "parts"). */
  const char *merge_key;
  /* Renders one message of the history (the format above) into out.
   * Returns 0 or ATL_ENOMEM. The result depends on msg alone, so the loop
   * keeps it for the next turns. */
  int (*piece)(json_object *msg, atl_provider_piece_t *out);
  /* The request's "tools" value for tools, an array of {name,
   * description, input_schema} (the schemas as the daemon's plugins
   * declare them), as malloc()ed JSON text; NULL on ENOMEM. */
  char *(*tools_text)(json_object *tools);
  /* The request of one streamed model call. system may be NULL; messages
   * is the joined pieces (atl_provider_join), tools_text NULL for none.
   * Returns 0 or a negative ATL_E* code. */
  int (*request)(const atl_provider_cfg_t *cfg, const char *model,
                 const char *system, const char *messages,
                 const char *tools_text, atl_provider_req_t *out);
  /* One server-sent event of the answer. Returns 0, or ATL_EPROTO with
   * t->error set. */
  int (*event)(atl_turn_t *t, const char *event, const char *data, size_t len);
  /* The error message in an error answer's body (status >= 400), as a new
   * malloc()ed string, or NULL if the body does not say. */
  char *(*error_message)(const char *body, size_t len);
  /* Frees t->priv. May be NULL. */
  void (*turn_free)(atl_turn_t *t);
  /* The output tokens a request to model asks for, as request() sends
   * them (thinking included where it counts): what the context window
   * must leave room for. */
  uint64_t (*output_cap)(const atl_provider_cfg_t *cfg, const char *model);
} atl_provider_ops_t;

/* Appends pieces[0..n) to out as the items of the request's message list
 * (no brackets), merging consecutive pieces of one role. */
int atl_provider_join(const atl_provider_ops_t *ops,
                      const atl_provider_piece_t *pieces, size_t n,
                      atl_strbuf_t *out);
/* The whole request from scratch: every piece, the tools, the request.
 * The loop caches pieces and tools instead (agent_request.c); this is the
 * reference it must agree with, and what the tests use. */
int atl_provider_build(const atl_provider_ops_t *ops,
                       const atl_provider_cfg_t *cfg, const char *model,
                       const char *system, json_object *history,
                       json_object *tools, atl_provider_req_t *out);
/* How a provider renders each role of the history: the wire roles of
 * user and model messages (tool results go in a user message), and the
 * items of each, as new arrays from a message's parts (which may be NULL)
 * and the message itself (its "provider" tag). An empty array leaves the
 * message out: one with nothing a provider takes (an empty answer, text
 * that is only whitespace) is never sent. */
typedef struct {
  const char *user, *model;
  json_object *(*user_items)(json_object *parts, json_object *msg);
  json_object *(*model_items)(json_object *parts, json_object *msg);
  json_object *(*tool_items)(json_object *parts, json_object *msg);
} atl_provider_roles_t;

/* Whether msg came from a provider of this type (its "provider" tag). A
 * provider's opaque data (thinking signatures, thought signatures, its
 * call ids for Gemini) goes back only to a provider of the same type: the
 * others refuse it, and sessions outlive a change of provider. */
int atl_provider_same(json_object *msg, const char *type);
/* Whether a text is absent or only whitespace (Unicode's, as UTF-8: a
 * no-break or an ideographic space is whitespace too): never sent. _n for
 * the first n bytes of s. */
int atl_provider_blank(const char *text);
int atl_provider_blank_n(const char *s, size_t n);
/* Gives each call of the model message msg (history index index) an id
 * no other call of the session has: one that is empty (Gemini's, stored
 * before ids were made) or already in seen (a server that numbers its
 * calls afresh in every answer) becomes "atl_h<index>_<k>" with made_id;
 * the result answering it in next (the tool message after msg, or NULL)
 * takes the same. Every id ends up in seen (an object used as a set, the
 * caller's). In memory only: the store keeps what it has, and this runs
 * again when a history is loaded. Returns how many ids changed. */
size_t atl_provider_claim_ids(json_object *msg, size_t index, json_object *seen,
                              json_object *next);
/* The id of a call or result part as Anthropic and OpenAI take it: the
 * part's own when it is 1 to 40 of [a-zA-Z0-9_-]; else one made from it
 * (the same for the call and its result), or, for an empty id (Gemini's,
 * stored before ids were made), from ordinal, the part's place among the
 * message's calls or results, which is the same for both. Points into buf
 * or into part. */
const char *atl_provider_call_id(json_object *part, size_t ordinal,
                                 char buf[48]);

int atl_provider_piece_by_role(json_object *m, const atl_provider_roles_t *r,
                               atl_provider_piece_t *out);
/* A tool's input schema in the wire form of dialect w (wire_schema.h), a
 * new object; {"type": "object"} for none, and for a schema that has no
 * such form (the plugin loader refuses those tools, so it does not
 * happen). For atl_provider_tools_text. */
json_object *atl_provider_wire(json_object *schema, atl_wire_t w);
/* The tools as an array of {name, description, schema_key: one(schema)}
 * (schema_key left out when one returns NULL), each passed through wrap
 * (which takes it) unless wrap is NULL, as JSON text. */
char *atl_provider_tools_text(json_object *tools,
                              json_object *(*one)(json_object *schema),
                              const char *schema_key,
                              json_object *(*wrap)(json_object *decl));
/* A piece of role from items (an array, taken). */
int atl_provider_piece_of(const char *role, json_object *items,
                          atl_provider_piece_t *out);
/* Sizes a request body's buffer for its parts before it is filled. */
void atl_provider_body_reserve(atl_strbuf_t *b, const char *system,
                               const char *messages, const char *tools);
/* Completes a request whose URL is set: moves body into out->body, adds
 * the Content-Type and Accept headers, the extra ones (a NULL-terminated
 * list of at most 4, or NULL), and
 * key_prefix followed by api_key unless the key is NULL or empty. On an
 * allocation failure frees out and returns ATL_ENOMEM. */
int atl_provider_req_finish(atl_provider_req_t *out, atl_strbuf_t *body,
                            const char *const *extra, const char *key_prefix,
                            const char *api_key);

extern const atl_provider_ops_t atl_provider_openai;
extern const atl_provider_ops_t atl_provider_anthropic;
extern const atl_provider_ops_t atl_provider_gemini;

/* What the providers share in building and parsing JSON (turn.c). */
/* o[key] when it is a string (borrowed), else NULL. */
const char *atl_provider_str(json_object *o, const char *key);
/* o as compact JSON text, malloc()ed. */
char *atl_provider_json_text(json_object *o);
/* Exactly len bytes of JSON (no NUL needed), or NULL if they are not. */
json_object *atl_provider_parse_len(const char *s, size_t len);

/* The provider of a type name, or NULL. */
const atl_provider_ops_t *atl_provider_find(const char *type);

#endif
