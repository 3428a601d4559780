/* Anthropic's Messages API: POST {base}/v1/messages with "stream": true.
 *
 * Unlike scene-llm's adapter, a failed tool result says so (is_error), the
 * images a tool returned travel inside its tool_result, thinking blocks go
 * back with their signatures (the API refuses a tool-use turn whose
 * thinking was dropped or altered), and the answer streams.
 *
 * The API wants user and assistant messages to alternate, while the
 * history has a "tool" message between a model message and the next user
 * message; both become user messages, so consecutive messages of one role
 * are merged into one, their blocks in order (tool results first).
 */
#include "atl-build.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atelier/error.h>

#include "models.h"
#include "provider.h"

/* The output budget when the configuration sets none: the API requires
 * max_tokens on every request. */
#define DEFAULT_MAX_TOKENS 4096

static json_object *text_block(const char *text) {
  json_object *b = json_object_new_object();
  json_object_object_add(b, "type", json_object_new_string("text"));
  json_object_object_add(b, "text", json_object_new_string(text));
  return b;
}

static json_object *user_blocks(json_object *parts, json_object *msg) {
  (void)msg;
  json_object *blocks = json_object_new_array();
  size_t n = parts ? json_object_array_length(parts) : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(parts, i);
    const char *type = atl_provider_str(p, "type"),
               *text = atl_provider_str(p, "text");
    /* Empty and whitespace-only text blocks are refused, and once in the
     * history would fail every later request. */
    if (type != NULL && strcmp(type, "text") == 0 && !atl_provider_blank(text))
      json_object_array_add(blocks, text_block(text));
  }
  return blocks;
}

static json_object *model_blocks(json_object *parts, json_object *msg) {
  json_object *blocks = json_object_new_array();
  /* Thinking goes back only to Anthropic, which signed it. */
  int ours = atl_provider_same(msg, "anthropic");
  size_t n = parts ? json_object_array_length(parts) : 0, calls = 0, said = 0;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(parts, i);
    const char *type = atl_provider_str(p, "type");
    if (type == NULL)
      continue;
    if (strcmp(type, "redacted_thinking") == 0 && ours) {
      /* Encrypted thinking: back exactly as it came, or the API refuses
       * the turn. */
      const char *data = atl_provider_str(p, "data");
      if (data == NULL)
        continue;
      json_object *b = json_object_new_object();
      json_object_object_add(b, "type",
                             json_object_new_string("redacted_thinking"));
      json_object_object_add(b, "data", json_object_new_string(data));
      json_object_array_add(blocks, b);
    } else if (strcmp(type, "thinking") == 0 && ours) {
      /* The API verifies thinking by its signature: thinking without one
       * (cut short) cannot go back. */
      const char *sig = atl_provider_str(p, "signature"),
                 *text = atl_provider_str(p, "text");
      if (sig == NULL || sig[0] == '\0')
        continue;
      json_object *b = json_object_new_object();
      json_object_object_add(b, "type", json_object_new_string("thinking"));
      json_object_object_add(b, "thinking",
                             json_object_new_string(text ? text : ""));
      json_object_object_add(b, "signature", json_object_new_string(sig));
      json_object_array_add(blocks, b);
    } else if (strcmp(type, "text") == 0) {
      const char *text = atl_provider_str(p, "text");
      if (!atl_provider_blank(text)) {
        json_object_array_add(blocks, text_block(text));
        said++;
      }
    } else if (strcmp(type, "tool_call") == 0) {
      json_object *args = NULL;
      json_object_object_get_ex(p, "arguments", &args);
      char buf[48];
      json_object *b = json_object_new_object();
      json_object_object_add(b, "type", json_object_new_string("tool_use"));
      json_object_object_add(
          b, "id", json_object_new_string(atl_provider_call_id(p, calls, buf)));
      json_object_object_add(
          b, "name",
          json_object_new_string(
              atl_provider_str(p, "name") ? atl_provider_str(p, "name") : ""));
      json_object_object_add(b, "input",
                             args != NULL &&
                                     json_object_is_type(args, json_type_object)
                                 ? json_object_get(args)
                                 : json_object_new_object());
      json_object_array_add(blocks, b);
      calls++;
      said++;
    }
  }
  /* An answer with nothing said (cut before its first word, or only
   * thought) is left out: the API wants content in every message. */
  if (said == 0) {
    json_object_put(blocks);
    blocks = json_object_new_array();
  }
  return blocks;
}

static json_object *tool_blocks(json_object *parts, json_object *msg) {
  (void)msg;
  json_object *blocks = json_object_new_array();
  size_t n = parts ? json_object_array_length(parts) : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(parts, i), *result = NULL, *v;
    json_object_object_get_ex(p, "result", &result);
    json_object *content = json_object_new_array();
    char *text = result ? atl_provider_json_text(result) : strdup("{}");
    json_object_array_add(content, text_block(text ? text : "{}"));
    free(text);
    json_object *imgs;
    if (json_object_object_get_ex(p, "images", &imgs) &&
        json_object_is_type(imgs, json_type_array))
      for (size_t k = 0; k < json_object_array_length(imgs); k++) {
        json_object *im = json_object_array_get_idx(imgs, k);
        const char *mime = atl_provider_str(im, "mime"),
                   *data = atl_provider_str(im, "data");
        if (mime == NULL || data == NULL)
          continue;
        json_object *src = json_object_new_object();
        json_object_object_add(src, "type", json_object_new_string("base64"));
        json_object_object_add(src, "media_type", json_object_new_string(mime));
        json_object_object_add(src, "data", json_object_new_string(data));
        json_object *b = json_object_new_object();
        json_object_object_add(b, "type", json_object_new_string("image"));
        json_object_object_add(b, "source", src);
        json_object_array_add(content, b);
      }
    char buf[48];
    json_object *b = json_object_new_object();
    json_object_object_add(b, "type", json_object_new_string("tool_result"));
    json_object_object_add(
        b, "tool_use_id",
        json_object_new_string(atl_provider_call_id(p, i, buf)));
    json_object_object_add(b, "content", content);
    if (json_object_object_get_ex(p, "is_error", &v) &&
        json_object_get_boolean(v))
      json_object_object_add(b, "is_error", json_object_new_boolean(1));
    json_object_array_add(blocks, b);
  }
  return blocks;
}

/* A history message as the items of a user or assistant message; a tool
 * message's results go in a user message, merged with the user's words
 * that follow. */
static const atl_provider_roles_t roles = {"user", "assistant", user_blocks,
                                           model_blocks, tool_blocks};

static int piece(json_object *m, atl_provider_piece_t *out) {
  return atl_provider_piece_by_role(m, &roles, out);
}

/* The API takes JSON Schema (draft 2020-12, $ref included) but refuses
 * oneOf, anyOf and allOf at the root of input_schema, and one refused tool
 * fails the whole request: each schema goes in the form wire_schema.c
 * derives. */
static json_object *wire(json_object *schema) {
  return atl_provider_wire(schema, ATL_WIRE_ANTHROPIC);
}

static char *tools_text(json_object *tools) {
  return atl_provider_tools_text(tools, wire, "input_schema", NULL);
}

/* max_tokens as sent: the configured one, within the model's largest
 * answer; the thinking is part of it. */
static uint64_t output_cap(const atl_provider_cfg_t *cfg, const char *model) {
  const atl_model_info_t *mi = atl_model_info("anthropic", model);
  uint32_t n = cfg->max_tokens ? cfg->max_tokens : DEFAULT_MAX_TOKENS;
  return mi != NULL && n > mi->max_output ? mi->max_output : n;
}

/* How a request thinks: not at all, with a budget, or adaptively (the
 * model decides how much; Opus 4.7 and later refuse a budget, and 4.6
 * deprecates it). */
enum { THINK_OFF, THINK_BUDGET, THINK_ADAPTIVE };

static int request(const atl_provider_cfg_t *cfg, const char *model,
                   const char *system, const char *messages, const char *tools,
                   atl_provider_req_t *out) {
  memset(out, 0, sizeof(*out));
  atl_strbuf_t b = {0};
  atl_provider_body_reserve(&b, system, messages, tools);
  /* The API refuses max_tokens above the model's largest answer
   * ("max_tokens: 10000 > 4096, which is the maximum allowed number of
   * output tokens for ..."): it is held to what the model allows. */
  const atl_model_info_t *mi = atl_model_info("anthropic", model);
  uint32_t max_tokens = (uint32_t)output_cap(cfg, model);
  uint32_t budget = cfg->thinking_budget;
  /* Models without extended thinking (Claude 3, 3.5) refuse the
   * parameter: it is left out for them. */
  int thinks = mi == NULL || (mi->flags & ATL_MODEL_THINKS);
  int think = budget == 0 || !thinks                           ? THINK_OFF
              : mi != NULL && (mi->flags & ATL_MODEL_ADAPTIVE) ? THINK_ADAPTIVE
                                                               : THINK_BUDGET;
  /* A budget must stay under max_tokens and be at least 1024. */
  if (think == THINK_BUDGET && budget >= max_tokens)
    budget = max_tokens / 2;
  if (think == THINK_BUDGET && budget < 1024)
    think = THINK_OFF;
  char num[32];
  atl_sb_adds(&b, "{\"model\":");
  atl_sb_json_string(&b, model);
  snprintf(num, sizeof(num), "%u", max_tokens);
  atl_sb_adds(&b, ",\"max_tokens\":");
  atl_sb_adds(&b, num);
  atl_sb_adds(&b, ",\"stream\":true");
  if (think == THINK_BUDGET) {
    snprintf(num, sizeof(num), "%u", budget);
    atl_sb_adds(&b, ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":");
    atl_sb_adds(&b, num);
    atl_sb_adds(&b, "}");
  } else if (think == THINK_ADAPTIVE) {
    atl_sb_adds(&b, ",\"thinking\":{\"type\":\"adaptive\"}");
  }
  if (system != NULL) {
    atl_sb_adds(&b, ",\"system\":");
    atl_sb_json_string(&b, system);
  }
  if (tools != NULL) {
    atl_sb_adds(&b, ",\"tools\":");
    atl_sb_adds(&b, tools);
  }
  atl_sb_adds(&b, ",\"messages\":[");
  atl_sb_adds(&b, messages);
  atl_sb_adds(&b, "]}");
  if (asprintf(&out->url, "%s/v1/messages", cfg->base_url) < 0)
    out->url = NULL;
  /* With a thinking budget, Claude 4 may also think between tool calls
   * (interleaved thinking, a beta the header turns on; adaptive thinking
   * interleaves without it): every thinking block goes back where it came
   * (see model_blocks). */
  static const char *const plain[] = {"anthropic-version: 2023-06-01", NULL};
  static const char *const thinking[] = {
      "anthropic-version: 2023-06-01",
      "anthropic-beta: interleaved-thinking-2025-05-14", NULL};
  return atl_provider_req_finish(out, &b,
                                 think == THINK_BUDGET ? thinking : plain,
                                 "x-api-key: ", cfg->api_key);
}

/* What each content block of the answer is, by its index. */
enum { BLOCK_NONE, BLOCK_TEXT, BLOCK_THINKING, BLOCK_TOOL, BLOCK_OTHER };

typedef struct {
  unsigned char kind;
  size_t slot; /* the call of a tool_use block, the thought of a thinking one */
} block_t;

typedef struct {
  block_t *blocks;
  size_t n_blocks;
  size_t n_calls; /* tool_use blocks seen so far */
} state_t;

/* Content blocks per answer are few; this bounds what a broken stream
 * can make us allocate. */
#define MAX_BLOCKS 1024

static state_t *state_of(atl_turn_t *t) {
  if (t->priv == NULL)
    t->priv = calloc(1, sizeof(state_t));
  return t->priv;
}

static block_t *block_at(state_t *st, size_t i) {
  if (i >= MAX_BLOCKS)
    return NULL;
  if (i >= st->n_blocks) {
    block_t *b = realloc(st->blocks, (i + 1) * sizeof(*b));
    if (b == NULL)
      return NULL;
    memset(b + st->n_blocks, 0, (i + 1 - st->n_blocks) * sizeof(*b));
    st->blocks = b;
    st->n_blocks = i + 1;
  }
  return &st->blocks[i];
}

static int block_start(atl_turn_t *t, state_t *st, json_object *ev) {
  json_object *idx, *cb;
  if (!json_object_object_get_ex(ev, "index", &idx) ||
      !json_object_object_get_ex(ev, "content_block", &cb))
    return atl_turn_fail(t, "content_block_start without index or block");
  int64_t i = json_object_get_int64(idx);
  block_t *b = i >= 0 ? block_at(st, (size_t)i) : NULL;
  if (b == NULL)
    return atl_turn_fail(t, "content block index %lld is out of range",
                         (long long)i);
  const char *type = atl_provider_str(cb, "type");
  if (type == NULL) {
    b->kind = BLOCK_OTHER;
  } else if (strcmp(type, "text") == 0) {
    b->kind = BLOCK_TEXT;
    const char *text = atl_provider_str(cb, "text");
    if (text != NULL)
      return atl_turn_text(t, text, strlen(text));
  } else if (strcmp(type, "thinking") == 0 ||
             strcmp(type, "redacted_thinking") == 0) {
    /* Every thinking block is kept apart, with its own signature, and
     * redacted ones with their data: the API wants them all back as they
     * came, in their places among the text and the calls. */
    atl_turn_thought_t *th = atl_turn_thought(t, 1);
    if (th == NULL)
      return atl_turn_fail(t, "too many thinking blocks");
    b->slot = t->n_thoughts - 1;
    if (type[0] == 'r') {
      const char *data = atl_provider_str(cb, "data");
      b->kind = BLOCK_OTHER;
      th->redacted = strdup(data ? data : "");
      return th->redacted ? 0 : ATL_ENOMEM;
    }
    b->kind = BLOCK_THINKING;
    const char *text = atl_provider_str(cb, "thinking");
    if (text != NULL && text[0] != '\0' &&
        atl_turn_thought_text(th, text, strlen(text)) != 0)
      return ATL_ENOMEM;
  } else if (strcmp(type, "tool_use") == 0) {
    /* Calls take slots in the order their blocks appear, whatever the
     * indexes of the text and thinking blocks around them. The block's
     * "input" is always {} here: the arguments come as deltas. */
    b->kind = BLOCK_TOOL;
    b->slot = st->n_calls++;
    atl_turn_call_t *c = atl_turn_call(t, b->slot);
    if (c == NULL)
      return atl_turn_fail(t, "too many tool calls");
    const char *id = atl_provider_str(cb, "id"),
               *name = atl_provider_str(cb, "name");
    free(c->id);
    free(c->name);
    c->id = strdup(id ? id : "");
    c->name = strdup(name ? name : "");
    if (c->id == NULL || c->name == NULL)
      return ATL_ENOMEM;
  } else {
    /* Server tools and whatever comes later: nothing the loop can act
     * on. */
    b->kind = BLOCK_OTHER;
  }
  return 0;
}

static int block_delta(atl_turn_t *t, state_t *st, json_object *ev) {
  json_object *idx, *delta;
  if (!json_object_object_get_ex(ev, "index", &idx) ||
      !json_object_object_get_ex(ev, "delta", &delta))
    return atl_turn_fail(t, "content_block_delta without index or delta");
  int64_t i = json_object_get_int64(idx);
  block_t *b = i >= 0 && (size_t)i < st->n_blocks ? &st->blocks[i] : NULL;
  const char *type = atl_provider_str(delta, "type");
  if (b == NULL || b->kind == BLOCK_NONE)
    return atl_turn_fail(t, "a delta for content block %lld, never started",
                         (long long)i);
  if (type == NULL || b->kind == BLOCK_OTHER)
    return 0;
  if (strcmp(type, "text_delta") == 0) {
    const char *s = atl_provider_str(delta, "text");
    return s ? atl_turn_text(t, s, strlen(s)) : 0;
  }
  if (strcmp(type, "thinking_delta") == 0 ||
      strcmp(type, "signature_delta") == 0) {
    if (b->kind != BLOCK_THINKING)
      return atl_turn_fail(t,
                           "%s for content block %lld, not a thinking "
                           "block",
                           type, (long long)i);
    atl_turn_thought_t *th = &t->thoughts[b->slot];
    const char *s =
        atl_provider_str(delta, type[0] == 't' ? "thinking" : "signature");
    if (s == NULL)
      return 0;
    /* A signature in pieces is joined, like the text. */
    return type[0] == 't' ? atl_turn_thought_text(th, s, strlen(s))
                          : atl_turn_thought_sign(th, s, strlen(s), 1);
  }
  if (strcmp(type, "input_json_delta") == 0) {
    const char *s = atl_provider_str(delta, "partial_json");
    if (b->kind != BLOCK_TOOL)
      return atl_turn_fail(t,
                           "tool arguments for content block %lld, not a "
                           "tool_use block",
                           (long long)i);
    if (s == NULL || s[0] == '\0')
      return 0;
    atl_turn_call_t *c = atl_turn_call(t, b->slot);
    return c ? atl_turn_call_args(c, s, strlen(s)) : ATL_ENOMEM;
  }
  return 0; /* a delta type of a later API version */
}

/* "event: NAME" + "data: {"type": NAME, ...}" pairs; message_stop ends the
 * stream. The type inside the data is the one relied upon: it is always
 * there, while proxies may drop the event lines. */
static int event(atl_turn_t *t, const char *name, const char *data,
                 size_t len) {
  json_object *ev = atl_provider_parse_len(data, len);
  if (ev == NULL || !json_object_is_type(ev, json_type_object)) {
    json_object_put(ev);
    /* Only its start: the rest may be a secret tool argument. */
    return atl_turn_fail(
        t, "the stream sent malformed JSON (%zu bytes, starting %.24s)",
        strlen(data), data);
  }
  const char *type = atl_provider_str(ev, "type");
  if (type == NULL)
    type = name != NULL ? name : "";
  state_t *st = state_of(t);
  int rc = 0;
  json_object *o, *usage, *v;
  if (st == NULL) {
    rc = ATL_ENOMEM;
  } else if (strcmp(type, "message_start") == 0) {
    if (json_object_object_get_ex(ev, "message", &o) &&
        json_object_object_get_ex(o, "usage", &usage) &&
        json_object_object_get_ex(usage, "input_tokens", &v))
      t->input_tokens = json_object_get_int64(v);
  } else if (strcmp(type, "content_block_start") == 0) {
    rc = block_start(t, st, ev);
  } else if (strcmp(type, "content_block_delta") == 0) {
    rc = block_delta(t, st, ev);
  } else if (strcmp(type, "message_delta") == 0) {
    const char *stop = json_object_object_get_ex(ev, "delta", &o)
                           ? atl_provider_str(o, "stop_reason")
                           : NULL;
    if (stop != NULL) {
      free(t->stop_reason);
      t->stop_reason = strdup(stop);
    }
    /* The counts here are cumulative; the output count is final. */
    if (json_object_object_get_ex(ev, "usage", &usage)) {
      if (json_object_object_get_ex(usage, "output_tokens", &v))
        t->output_tokens = json_object_get_int64(v);
      if (json_object_object_get_ex(usage, "input_tokens", &v) &&
          !json_object_is_type(v, json_type_null))
        t->input_tokens = json_object_get_int64(v);
    }
  } else if (strcmp(type, "message_stop") == 0) {
    t->done = 1;
  } else if (strcmp(type, "error") == 0) {
    json_object *err = NULL;
    json_object_object_get_ex(ev, "error", &err);
    const char *msg = err ? atl_provider_str(err, "message") : NULL;
    const char *etype = err ? atl_provider_str(err, "type") : NULL;
    /* An overload or a server error can come after the 200 (the stream
     * had begun): the same trouble as a 529 or a 500 there, and retried
     * the same way while nothing of the answer has come. */
    static const char *const transient[] = {"overloaded_error", "api_error",
                                            "rate_limit_error", "timeout_error",
                                            NULL};
    for (size_t i = 0; etype != NULL && transient[i] != NULL; i++)
      if (strcmp(etype, transient[i]) == 0)
        t->error_transient = 1;
    if (msg != NULL && etype != NULL)
      rc = atl_turn_fail(t, "the provider reported an error: %s (%s)", msg,
                         etype);
    else
      rc = atl_turn_fail(t, "the provider reported an error: %s",
                         msg ? msg : json_object_to_json_string(ev));
  }
  /* content_block_stop, ping and event types added later need nothing. */
  json_object_put(ev);
  return rc;
}

static char *error_message(const char *body, size_t len) {
  json_object *o = atl_provider_parse_len(body, len), *err;
  char *out = NULL;
  if (o != NULL && json_object_is_type(o, json_type_object) &&
      json_object_object_get_ex(o, "error", &err) &&
      json_object_is_type(err, json_type_object)) {
    const char *m = atl_provider_str(err, "message"),
               *type = atl_provider_str(err, "type");
    if (m != NULL && type != NULL) {
      if (asprintf(&out, "%s (%s)", m, type) < 0)
        out = NULL;
    } else if (m != NULL) {
      out = strdup(m);
    }
  }
  json_object_put(o);
  return out;
}

static void turn_free(atl_turn_t *t) {
  state_t *st = t->priv;
  if (st != NULL)
    free(st->blocks);
  free(st);
  t->priv = NULL;
}

const atl_provider_ops_t atl_provider_anthropic = {
    .type = "anthropic",
    .merge_key = "content",
    .piece = piece,
    .tools_text = tools_text,
    .request = request,
    .event = event,
    .error_message = error_message,
    .turn_free = turn_free,
    .output_cap = output_cap,
};
