/* The OpenAI-compatible Chat Completions protocol (OpenAI, OpenRouter,
 * Ollama, llama.cpp's server, vLLM): POST {base}/v1/chat/completions with
 * "stream": true.
 *
 * Unlike scene-llm's adapter, every tool result goes back (one "tool"
 * message per call, in order), and images a tool returned follow them in a
 * user message of image_url data URLs, since "tool" messages take text
 * only.
 */
#include "atl-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atelier/error.h>

#include "config.h"
#include "models.h"
#include "provider.h"

/* What a reasoning model may spend on its reasoning besides the answer's
 * max_tokens. */
#define REASONING_ROOM 16384u

/* The text parts joined (those that are only whitespace left out); NULL
 * when there is none. It runs for every
 * message of the history on every model call, so the usual single text
 * part is shared, not copied. */
static json_object *text_of_parts(json_object *parts) {
  size_t n = json_object_array_length(parts), total = 0, count = 0;
  json_object *only = NULL;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(parts, i), *text;
    const char *type = atl_provider_str(p, "type");
    if (type != NULL && strcmp(type, "text") == 0 &&
        json_object_object_get_ex(p, "text", &text) &&
        json_object_is_type(text, json_type_string) &&
        !atl_provider_blank(json_object_get_string(text))) {
      only = text;
      total += (size_t)json_object_get_string_len(text);
      count++;
    }
  }
  if (count <= 1)
    return only ? json_object_get(only) : NULL;
  char *buf = malloc(total + 1), *at = buf;
  if (buf == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(parts, i), *text;
    const char *type = atl_provider_str(p, "type");
    if (type != NULL && strcmp(type, "text") == 0 &&
        json_object_object_get_ex(p, "text", &text) &&
        json_object_is_type(text, json_type_string) &&
        !atl_provider_blank(json_object_get_string(text))) {
      size_t len = (size_t)json_object_get_string_len(text);
      memcpy(at, json_object_get_string(text), len);
      at += len;
    }
  }
  *at = '\0';
  json_object *out = json_object_new_string_len(buf, (int)total);
  free(buf);
  return out;
}

/* The assistant message of a model message's parts; none for an answer
 * with neither text nor calls (cut before its first word, filtered):
 * "content": null without "tool_calls" is refused ("expected a string,
 * got null"), and would fail every later request of the session. */
static json_object *model_messages(json_object *parts, json_object *msg) {
  (void)msg;
  json_object *msgs = json_object_new_array();
  json_object *out = json_object_new_object();
  json_object_object_add(out, "role", json_object_new_string("assistant"));
  json_object *text = parts ? text_of_parts(parts) : NULL;
  json_object_object_add(out, "content", text); /* null with only calls */
  json_object *calls = json_object_new_array();
  size_t n = parts ? json_object_array_length(parts) : 0, ordinal = 0;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(parts, i);
    const char *type = atl_provider_str(p, "type");
    if (type == NULL || strcmp(type, "tool_call") != 0)
      continue;
    json_object *args = NULL;
    json_object_object_get_ex(p, "arguments", &args);
    json_object *fn = json_object_new_object();
    json_object_object_add(
        fn, "name",
        json_object_new_string(
            atl_provider_str(p, "name") ? atl_provider_str(p, "name") : ""));
    char *a = args ? atl_provider_json_text(args) : strdup("{}");
    json_object_object_add(fn, "arguments",
                           json_object_new_string(a ? a : "{}"));
    free(a);
    char buf[48];
    json_object *c = json_object_new_object();
    json_object_object_add(
        c, "id",
        json_object_new_string(atl_provider_call_id(p, ordinal++, buf)));
    json_object_object_add(c, "type", json_object_new_string("function"));
    json_object_object_add(c, "function", fn);
    json_object_array_add(calls, c);
  }
  if (json_object_array_length(calls) > 0) {
    json_object_object_add(out, "tool_calls", calls);
  } else {
    json_object_put(calls);
    if (text == NULL) {
      json_object_put(out);
      return msgs;
    }
  }
  json_object_array_add(msgs, out);
  return msgs;
}

/* One "tool" message per result, then a user message with the images
 * they returned, if any. */
static json_object *tool_messages(json_object *parts, json_object *msg) {
  (void)msg;
  json_object *msgs = json_object_new_array();
  size_t n = parts ? json_object_array_length(parts) : 0;
  json_object *images = json_object_new_array();
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(parts, i), *result = NULL;
    json_object_object_get_ex(p, "result", &result);
    json_object *out = json_object_new_object();
    json_object_object_add(out, "role", json_object_new_string("tool"));
    char buf[48];
    json_object_object_add(
        out, "tool_call_id",
        json_object_new_string(atl_provider_call_id(p, i, buf)));
    char *text = result ? atl_provider_json_text(result) : strdup("{}");
    json_object_object_add(out, "content",
                           json_object_new_string(text ? text : "{}"));
    free(text);
    json_object_array_add(msgs, out);
    json_object *imgs;
    if (json_object_object_get_ex(p, "images", &imgs))
      for (size_t k = 0; k < json_object_array_length(imgs); k++) {
        json_object *im = json_object_array_get_idx(imgs, k);
        const char *mime = atl_provider_str(im, "mime"),
                   *data = atl_provider_str(im, "data");
        if (mime == NULL || data == NULL)
          continue;
        char *url = NULL;
        if (asprintf(&url, "data:%s;base64,%s", mime, data) < 0)
          continue;
        json_object *iu = json_object_new_object();
        json_object_object_add(iu, "url", json_object_new_string(url));
        free(url);
        json_object *part = json_object_new_object();
        json_object_object_add(part, "type",
                               json_object_new_string("image_url"));
        json_object_object_add(part, "image_url", iu);
        json_object_array_add(images, part);
      }
  }
  if (json_object_array_length(images) > 0) {
    json_object *intro = json_object_new_object();
    json_object_object_add(intro, "type", json_object_new_string("text"));
    json_object_object_add(
        intro, "text",
        json_object_new_string("The images the tool calls above returned:"));
    json_object *content = json_object_new_array();
    json_object_array_add(content, intro);
    for (size_t k = 0; k < json_object_array_length(images); k++)
      json_object_array_add(
          content, json_object_get(json_object_array_get_idx(images, k)));
    json_object *u = json_object_new_object();
    json_object_object_add(u, "role", json_object_new_string("user"));
    json_object_object_add(u, "content", content);
    json_object_array_add(msgs, u);
  }
  json_object_put(images);
  return msgs;
}

/* The user's words as one user message; none when there are none. */
static json_object *user_messages(json_object *parts, json_object *msg) {
  (void)msg;
  json_object *msgs = json_object_new_array();
  json_object *text = parts ? text_of_parts(parts) : NULL;
  if (text == NULL)
    return msgs;
  json_object *u = json_object_new_object();
  json_object_object_add(u, "role", json_object_new_string("user"));
  json_object_object_add(u, "content", text);
  json_object_array_add(msgs, u);
  return msgs;
}

/* A history message as whole Chat Completions messages (no role to merge
 * under: the API takes consecutive messages of one role). */
static const atl_provider_roles_t roles = {NULL, NULL, user_messages,
                                           model_messages, tool_messages};

static int piece(json_object *m, atl_provider_piece_t *out) {
  return atl_provider_piece_by_role(m, &roles, out);
}

/* Each tool as {"type": "function", "function": {name, description,
 * parameters}}: the function objects are made alike for every provider,
 * then wrapped. */
static json_object *as_function(json_object *fn) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "type", json_object_new_string("function"));
  json_object_object_add(o, "function", fn);
  return o;
}

/* Without "strict", the API takes JSON Schema but refuses a root that is
 * not a plain object (no oneOf/anyOf/allOf/enum/const/not) and an array
 * schema without items: each schema goes in the form wire_schema.c
 * derives. */
static json_object *wire(json_object *schema) {
  return atl_provider_wire(schema, ATL_WIRE_OPENAI);
}

static char *tools_text(json_object *tools) {
  return atl_provider_tools_text(tools, wire, "parameters", as_function);
}

/* The output a request asks for: max_tokens, and for a reasoning model
 * room for its reasoning, which counts against max_completion_tokens (or a
 * long think leaves an empty answer cut at the limit); within the model's
 * largest answer. */
static uint64_t output_cap(const atl_provider_cfg_t *cfg, const char *model) {
  const atl_model_info_t *mi = atl_model_info("openai", model);
  int reasoning = mi != NULL && (mi->flags & ATL_MODEL_REASONING);
  uint64_t n = (cfg->max_tokens ? cfg->max_tokens : 4096u) +
               (reasoning ? REASONING_ROOM : 0);
  if (mi != NULL && n > mi->max_output)
    n = mi->max_output;
  return n;
}

static int request(const atl_provider_cfg_t *cfg, const char *model,
                   const char *system, const char *messages, const char *tools,
                   atl_provider_req_t *out) {
  memset(out, 0, sizeof(*out));
  atl_strbuf_t b = {0};
  atl_provider_body_reserve(&b, system, messages, tools);
  atl_sb_adds(&b, "{\"model\":");
  atl_sb_json_string(&b, model);
  atl_sb_adds(&b, ",\"stream\":true,\"stream_options\":{\"include_usage\":"
                  "true}");
  if (cfg->max_tokens > 0) {
    /* Reasoning models (o-series, gpt-5) refuse max_tokens ("Use
     * 'max_completion_tokens' instead"). */
    const atl_model_info_t *mi = atl_model_info("openai", model);
    int reasoning = mi != NULL && (mi->flags & ATL_MODEL_REASONING);
    int completion =
        cfg->max_tokens_param == ATL_TOKEN_PARAM_MAX_COMPLETION_TOKENS ||
        (cfg->max_tokens_param == ATL_TOKEN_PARAM_AUTO && reasoning);
    uint64_t n = output_cap(cfg, model);
    char num[64];
    snprintf(num, sizeof(num), ",\"%s\":%llu",
             completion ? "max_completion_tokens" : "max_tokens",
             (unsigned long long)n);
    atl_sb_adds(&b, num);
  }
  atl_sb_adds(&b, ",\"messages\":[");
  if (system != NULL) {
    atl_sb_adds(&b, "{\"role\":\"system\",\"content\":");
    atl_sb_json_string(&b, system);
    atl_sb_adds(&b, messages[0] ? "}," : "}");
  }
  atl_sb_adds(&b, messages);
  atl_sb_adds(&b, "]");
  if (tools != NULL) {
    atl_sb_adds(&b, ",\"tools\":");
    atl_sb_adds(&b, tools);
  }
  atl_sb_adds(&b, "}");
  if (asprintf(&out->url, "%s/v1/chat/completions", cfg->base_url) < 0)
    out->url = NULL;
  return atl_provider_req_finish(out, &b, NULL, "Authorization: Bearer ",
                                 cfg->api_key);
}

/* "data: {chunk}" events; "data: [DONE]" ends the stream. */
static int event(atl_turn_t *t, const char *name, const char *data,
                 size_t len) {
  (void)name;
  if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
    t->done = 1;
    return 0;
  }
  json_object *chunk = json_tokener_parse(data);
  if (chunk == NULL || !json_object_is_type(chunk, json_type_object)) {
    json_object_put(chunk);
    /* Only its start: the rest may be a secret tool argument. */
    return atl_turn_fail(
        t, "the stream sent malformed JSON (%zu bytes, starting %.24s)",
        strlen(data), data);
  }
  int rc = 0;
  json_object *err;
  if (json_object_object_get_ex(chunk, "error", &err)) {
    const char *msg = atl_provider_str(err, "message");
    const char *etype = atl_provider_str(err, "type"),
               *code = atl_provider_str(err, "code");
    /* A server error or a rate limit in the stream is a passing one. */
    t->error_transient =
        (etype != NULL && (strcmp(etype, "server_error") == 0 ||
                           strcmp(etype, "requests") == 0)) ||
        (code != NULL && (strcmp(code, "server_error") == 0 ||
                          strcmp(code, "rate_limit_exceeded") == 0));
    rc = atl_turn_fail(t, "the provider reported an error: %s",
                       msg ? msg : json_object_to_json_string(err));
    json_object_put(chunk);
    return rc;
  }
  json_object *usage;
  if (json_object_object_get_ex(chunk, "usage", &usage) &&
      json_object_is_type(usage, json_type_object)) {
    json_object *v;
    if (json_object_object_get_ex(usage, "prompt_tokens", &v))
      t->input_tokens = json_object_get_int64(v);
    if (json_object_object_get_ex(usage, "completion_tokens", &v))
      t->output_tokens = json_object_get_int64(v);
  }
  json_object *choices, *choice, *delta;
  if (json_object_object_get_ex(chunk, "choices", &choices) &&
      json_object_is_type(choices, json_type_array) &&
      json_object_array_length(choices) > 0 &&
      (choice = json_object_array_get_idx(choices, 0)) != NULL) {
    const char *finish = atl_provider_str(choice, "finish_reason");
    if (finish != NULL) {
      free(t->stop_reason);
      /* A refusal ends with "stop", its text in "refusal": it is a
       * refusal all the same. */
      t->stop_reason = strdup(
          t->stop_message_len > 0 && strcmp(finish, "stop") == 0 ? "refusal"
                                                                 : finish);
    }
    if (json_object_object_get_ex(choice, "delta", &delta) &&
        json_object_is_type(delta, json_type_object)) {
      json_object *content, *calls, *refusal;
      if (json_object_object_get_ex(delta, "content", &content) &&
          json_object_is_type(content, json_type_string))
        rc = atl_turn_text(t, json_object_get_string(content),
                           (size_t)json_object_get_string_len(content));
      /* A refusal comes as its own text, in place of the answer. */
      if (rc == 0 && json_object_object_get_ex(delta, "refusal", &refusal) &&
          json_object_is_type(refusal, json_type_string))
        rc = atl_turn_stop_message(t, json_object_get_string(refusal),
                                   (size_t)json_object_get_string_len(refusal));
      if (rc == 0 && json_object_object_get_ex(delta, "tool_calls", &calls) &&
          json_object_is_type(calls, json_type_array)) {
        for (size_t i = 0; rc == 0 && i < json_object_array_length(calls);
             i++) {
          json_object *c = json_object_array_get_idx(calls, i), *idx, *fn;
          /* Fragments of one call share its index; only the first has
           * the id and the name. */
          size_t index = json_object_object_get_ex(c, "index", &idx)
                             ? (size_t)json_object_get_int(idx)
                             : i;
          atl_turn_call_t *tc = atl_turn_call(t, index);
          if (tc == NULL) {
            rc = atl_turn_fail(t, "tool call index %zu is out of range", index);
            break;
          }
          const char *id = atl_provider_str(c, "id");
          if (id != NULL && tc->id == NULL)
            tc->id = strdup(id);
          if (json_object_object_get_ex(c, "function", &fn)) {
            const char *fname = atl_provider_str(fn, "name");
            if (fname != NULL && tc->name == NULL)
              tc->name = strdup(fname);
            const char *args = atl_provider_str(fn, "arguments");
            if (args != NULL)
              rc = atl_turn_call_args(tc, args, strlen(args));
          }
        }
      }
    }
  }
  json_object_put(chunk);
  return rc;
}

static char *error_message(const char *body, size_t len) {
  json_object *o = atl_provider_parse_len(body, len), *err;
  char *out = NULL;
  if (o != NULL && json_object_object_get_ex(o, "error", &err)) {
    const char *m = json_object_is_type(err, json_type_object)
                        ? atl_provider_str(err, "message")
                        : json_object_get_string(err);
    if (m != NULL)
      out = strdup(m);
  }
  json_object_put(o);
  return out;
}

const atl_provider_ops_t atl_provider_openai = {
    .type = "openai",
    .merge_key = NULL,
    .piece = piece,
    .tools_text = tools_text,
    .request = request,
    .event = event,
    .error_message = error_message,
    .turn_free = NULL,
    .output_cap = output_cap,
};
