/* Google's Gemini API: POST {base}/v1beta/models/{model}:
 * streamGenerateContent?alt=sse.
 *
 * Unlike scene-llm's adapter, the system prompt goes in
 * systemInstruction, the answer streams, the thought signatures Gemini
 * attaches to its parts go back where they came from (Gemini 3 refuses a
 * function-calling turn whose signature is missing), and each tool's
 * schema goes as parametersJsonSchema, in the form wire_schema.c derives
 * for Gemini (doc/providers.md says why that field and not "parameters").
 */
#include "atl-build.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atelier/error.h>

#include "models.h"
#include "provider.h"
#include "wire_schema.h"

/* --- The request ------------------------------------------------------- */

static json_object *text_part(const char *text) {
  json_object *p = json_object_new_object();
  json_object_object_add(p, "text", json_object_new_string(text));
  return p;
}

static json_object *user_parts(json_object *parts, json_object *msg) {
  (void)msg;
  json_object *out = json_object_new_array();
  size_t n = parts ? json_object_array_length(parts) : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(parts, i);
    const char *type = atl_provider_str(p, "type"),
               *text = atl_provider_str(p, "text");
    if (type != NULL && strcmp(type, "text") == 0 && !atl_provider_blank(text))
      json_object_array_add(out, text_part(text));
  }
  return out;
}

/* A call's id goes to Gemini only when Gemini gave it: one Atelier made,
 * or another provider's, never came from Gemini. */
static const char *gemini_id(json_object *part, int ours) {
  const char *id = atl_provider_str(part, "id");
  json_object *made;
  if (!ours || id == NULL || id[0] == '\0' ||
      (json_object_object_get_ex(part, "made_id", &made) &&
       json_object_get_boolean(made)))
    return NULL;
  return id;
}

static json_object *model_parts(json_object *parts, json_object *msg) {
  json_object *out = json_object_new_array();
  json_object *last_text = NULL;
  const char *thinking_sig = NULL;
  /* Thought signatures go back only to Gemini, which made them. */
  int ours = atl_provider_same(msg, "gemini");
  size_t n = parts ? json_object_array_length(parts) : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(parts, i);
    const char *type = atl_provider_str(p, "type");
    if (type == NULL)
      continue;
    if (strcmp(type, "thinking") == 0) {
      /* Thought summaries are not the model's words and do not go back;
       * their signature does, below. */
      const char *sig = atl_provider_str(p, "signature");
      if (ours && sig != NULL && sig[0] != '\0')
        thinking_sig = sig;
    } else if (strcmp(type, "text") == 0) {
      const char *text = atl_provider_str(p, "text");
      if (!atl_provider_blank(text)) {
        last_text = text_part(text);
        json_object_array_add(out, last_text);
      }
    } else if (strcmp(type, "tool_call") == 0) {
      json_object *args = NULL;
      json_object_object_get_ex(p, "arguments", &args);
      json_object *fc = json_object_new_object();
      json_object_object_add(
          fc, "name",
          json_object_new_string(
              atl_provider_str(p, "name") ? atl_provider_str(p, "name") : ""));
      json_object_object_add(fc, "args",
                             args != NULL &&
                                     json_object_is_type(args, json_type_object)
                                 ? json_object_get(args)
                                 : json_object_new_object());
      /* Gemini names calls only sometimes; an id it gave goes back. */
      const char *id = gemini_id(p, ours),
                 *sig = ours ? atl_provider_str(p, "signature") : NULL;
      if (id != NULL)
        json_object_object_add(fc, "id", json_object_new_string(id));
      json_object *part = json_object_new_object();
      json_object_object_add(part, "functionCall", fc);
      if (sig != NULL && sig[0] != '\0')
        json_object_object_add(part, "thoughtSignature",
                               json_object_new_string(sig));
      json_object_array_add(out, part);
    }
  }
  /* A signature that came on a part without a call came on the answer's
   * text, which the turn joined into one; it goes back on that text.
   * With no text it is dropped: Gemini refuses empty text parts, and
   * checks only the signatures of calls. */
  if (thinking_sig != NULL && last_text != NULL)
    json_object_object_add(last_text, "thoughtSignature",
                           json_object_new_string(thinking_sig));
  return out;
}

static json_object *tool_parts(json_object *parts, json_object *msg) {
  /* (A tool message carries the provider of the calls it answers.) */
  int ours = atl_provider_same(msg, "gemini");
  json_object *out = json_object_new_array(), *images = json_object_new_array();
  size_t n = parts ? json_object_array_length(parts) : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(parts, i), *result = NULL;
    json_object_object_get_ex(p, "result", &result);
    json_object *fr = json_object_new_object();
    json_object_object_add(
        fr, "name",
        json_object_new_string(
            atl_provider_str(p, "name") ? atl_provider_str(p, "name") : ""));
    const char *id = gemini_id(p, ours);
    if (id != NULL)
      json_object_object_add(fr, "id", json_object_new_string(id));
    /* "response" is a Struct: an envelope is an object already, anything
     * else is wrapped. */
    json_object *resp;
    if (result != NULL && json_object_is_type(result, json_type_object)) {
      resp = json_object_get(result);
    } else {
      resp = json_object_new_object();
      json_object_object_add(resp, "result", json_object_get(result));
    }
    json_object_object_add(fr, "response", resp);
    json_object *part = json_object_new_object();
    json_object_object_add(part, "functionResponse", fr);
    json_object_array_add(out, part);
    json_object *imgs;
    if (json_object_object_get_ex(p, "images", &imgs) &&
        json_object_is_type(imgs, json_type_array))
      for (size_t k = 0; k < json_object_array_length(imgs); k++) {
        json_object *im = json_object_array_get_idx(imgs, k);
        const char *mime = atl_provider_str(im, "mime"),
                   *data = atl_provider_str(im, "data");
        if (mime == NULL || data == NULL)
          continue;
        json_object *d = json_object_new_object();
        json_object_object_add(d, "mimeType", json_object_new_string(mime));
        json_object_object_add(d, "data", json_object_new_string(data));
        json_object *ip = json_object_new_object();
        json_object_object_add(ip, "inlineData", d);
        json_object_array_add(images, ip);
      }
  }
  /* The images after all the responses, which Gemini wants together. */
  for (size_t k = 0; k < json_object_array_length(images); k++)
    json_object_array_add(
        out, json_object_get(json_object_array_get_idx(images, k)));
  json_object_put(images);
  return out;
}

/* The parameters of a declaration, or NULL for a tool without any.
 *
 * Gemini has two fields for them. "parameters" takes its own OpenAPI
 * subset, whose validation refuses much of JSON Schema (an untyped node,
 * an OBJECT root without properties, anyOf beside other keywords, const,
 * $ref...), and Gemini 3 answers MALFORMED_FUNCTION_CALL for unions given
 * there. "parametersJsonSchema" takes JSON Schema, and is what the Vercel
 * AI SDK, zed and hermes-agent moved to after testing it live on Gemini 2.5
 * and 3 (doc/providers.md has the sources). It gets the derived form: a
 * plain object root, references inlined, documented keywords only. */
static json_object *parameters_of(json_object *schema) {
  if (schema == NULL)
    return NULL;
  char *why = NULL;
  json_object *p = atl_wire_schema(schema, ATL_WIRE_GEMINI, &why);
  free(why); /* the plugin loader refused such tools already */
  if (p != NULL && atl_wire_is_empty(p)) {
    json_object_put(p);
    p = NULL;
  }
  return p;
}

/* A history message as the parts of a user or model content; a tool
 * message's function responses go in a user content, merged with the
 * user's words that follow. */
static const atl_provider_roles_t roles = {"user", "model", user_parts,
                                           model_parts, tool_parts};

static int piece(json_object *m, atl_provider_piece_t *out) {
  return atl_provider_piece_by_role(m, &roles, out);
}

/* The declarations, schemas converted: done once per daemon, since the
 * conversion (with $refs inlined) is the costliest part of a request. */
static char *tools_text(json_object *tools) {
  char *decls = atl_provider_tools_text(tools, parameters_of,
                                        "parametersJsonSchema", NULL);
  char *out = NULL;
  if (decls != NULL &&
      asprintf(&out, "[{\"functionDeclarations\":%s}]", decls) < 0)
    out = NULL;
  free(decls);
  return out;
}

/* What Gemini's thinking models may spend on thinking besides the
 * answer's max_tokens, when the configuration does not say. */
#define THINKING_ROOM 8192u

/* generationConfig. Gemini 2.5 and 3 think, and their thoughts count
 * against maxOutputTokens: with the bare 4096 of old, a long think left
 * nothing for the answer, which came back empty with finishReason
 * MAX_TOKENS. So the thinking gets a budget of its own (thinkingBudget on
 * 2.5, within the model's range; a thinkingLevel on 3, which has no
 * settable budget) and maxOutputTokens is max_tokens plus that budget,
 * within the model's largest answer. */
/* What a request asks of the model's output: maxOutputTokens, and the
 * thinking budget (-1: none to set) or level (NULL: none). */
typedef struct {
  uint64_t out;
  int64_t budget;
  const char *level;
} plan_t;

static plan_t plan(const atl_provider_cfg_t *cfg, const char *model) {
  const atl_model_info_t *mi = atl_model_info("gemini", model);
  plan_t p = {.out = cfg->max_tokens, .budget = -1, .level = NULL};
  if (mi != NULL && (mi->flags & ATL_MODEL_THINKING_BUDGET)) {
    int64_t budget = cfg->thinking_set ? (int64_t)cfg->thinking_budget
                                       : (int64_t)THINKING_ROOM;
    /* Within the model's range; 0 turns thinking off only where the
     * model allows it (2.5 Pro always thinks). */
    if (budget == 0 && !(mi->flags & ATL_MODEL_THINKING_OFF))
      budget = mi->think_min;
    if (budget > 0 && budget < mi->think_min)
      budget = mi->think_min;
    if (budget > mi->think_max)
      budget = mi->think_max;
    p.out += (uint64_t)budget;
    p.budget = budget;
  } else if (mi != NULL && (mi->flags & ATL_MODEL_THINKING_LEVEL)) {
    /* No budget to set: "low" when the configuration asks for as little
     * thinking as can be, else the model's own level, with room for it. */
    int low = cfg->thinking_set && cfg->thinking_budget == 0;
    p.out += low ? 4096u : cfg->thinking_set ? cfg->thinking_budget : 16384u;
    p.level = low ? "low" : NULL;
  }
  if (mi != NULL && p.out > mi->max_output)
    p.out = mi->max_output;
  return p;
}

static void generation_config(atl_strbuf_t *b, const atl_provider_cfg_t *cfg,
                              const char *model) {
  if (cfg->max_tokens == 0)
    return;
  plan_t p = plan(cfg, model);
  char num[160];
  atl_sb_adds(b, ",\"generationConfig\":{");
  if (p.budget >= 0) {
    snprintf(num, sizeof(num), "\"thinkingConfig\":{\"thinkingBudget\":%lld},",
             (long long)p.budget);
    atl_sb_adds(b, num);
  } else if (p.level != NULL) {
    atl_sb_adds(b, "\"thinkingConfig\":{\"thinkingLevel\":\"");
    atl_sb_adds(b, p.level);
    atl_sb_adds(b, "\"},");
  }
  snprintf(num, sizeof(num), "\"maxOutputTokens\":%llu}",
           (unsigned long long)p.out);
  atl_sb_adds(b, num);
}

static uint64_t output_cap(const atl_provider_cfg_t *cfg, const char *model) {
  return cfg->max_tokens ? plan(cfg, model).out : 8192u;
}

static int request(const atl_provider_cfg_t *cfg, const char *model,
                   const char *system, const char *messages, const char *tools,
                   atl_provider_req_t *out) {
  memset(out, 0, sizeof(*out));
  atl_strbuf_t b = {0};
  atl_provider_body_reserve(&b, system, messages, tools);
  atl_sb_adds(&b, "{");
  if (system != NULL) {
    atl_sb_adds(&b, "\"systemInstruction\":{\"parts\":[{\"text\":");
    atl_sb_json_string(&b, system);
    atl_sb_adds(&b, "}]},");
  }
  atl_sb_adds(&b, "\"contents\":[");
  atl_sb_adds(&b, messages);
  atl_sb_adds(&b, "]");
  if (tools != NULL) {
    atl_sb_adds(&b, ",\"tools\":");
    atl_sb_adds(&b, tools);
  }
  generation_config(&b, cfg, model);
  atl_sb_adds(&b, "}");
  if (asprintf(&out->url, "%s/v1beta/models/%s:streamGenerateContent?alt=sse",
               cfg->base_url, model) < 0)
    out->url = NULL;
  return atl_provider_req_finish(out, &b, NULL,
                                 "x-goog-api-key: ", cfg->api_key);
}

/* --- The stream -------------------------------------------------------- */

static int add_part(atl_turn_t *t, json_object *part) {
  json_object *fc, *v;
  const char *sig = atl_provider_str(part, "thoughtSignature");
  if (json_object_object_get_ex(part, "functionCall", &fc) &&
      json_object_is_type(fc, json_type_object)) {
    /* Each call comes whole, in a part of its own: a new slot. */
    size_t i = t->n_calls;
    atl_turn_call_t *c = atl_turn_call(t, i);
    if (c == NULL)
      return atl_turn_fail(t, "too many tool calls");
    const char *name = atl_provider_str(fc, "name"),
               *id = atl_provider_str(fc, "id");
    c->name = strdup(name ? name : "");
    if (id != NULL)
      c->id = strdup(id);
    if (sig != NULL)
      c->signature = strdup(sig);
    if (c->name == NULL || (id != NULL && c->id == NULL) ||
        (sig != NULL && c->signature == NULL))
      return ATL_ENOMEM;
    json_object *args;
    if (json_object_object_get_ex(fc, "args", &args) && args != NULL) {
      char *a = atl_provider_json_text(args);
      int rc = a ? atl_turn_call_args(c, a, strlen(a)) : ATL_ENOMEM;
      free(a);
      return rc;
    }
    return 0;
  }
  if (sig != NULL) {
    /* A signature on a part that is no call belongs to the turn's
     * reasoning (see model_parts); the newest one stands. */
    atl_turn_thought_t *th = atl_turn_thought(t, 0);
    if (th == NULL || atl_turn_thought_sign(th, sig, strlen(sig), 0) != 0)
      return ATL_ENOMEM;
  }
  if (json_object_object_get_ex(part, "text", &v) &&
      json_object_is_type(v, json_type_string)) {
    json_object *thought;
    int is_thought = json_object_object_get_ex(part, "thought", &thought) &&
                     json_object_get_boolean(thought);
    size_t len = (size_t)json_object_get_string_len(v);
    return is_thought ? atl_turn_thinking(t, json_object_get_string(v), len)
                      : atl_turn_text(t, json_object_get_string(v), len);
  }
  return 0; /* executable code, inline data and the like: not for us */
}

/* "data: {GenerateContentResponse}" events. The stream has no final
 * marker: the chunk whose candidate has a finishReason is the last. */
static int event(atl_turn_t *t, const char *name, const char *data,
                 size_t len) {
  (void)name;
  json_object *chunk = atl_provider_parse_len(data, len);
  if (chunk == NULL || !json_object_is_type(chunk, json_type_object)) {
    json_object_put(chunk);
    /* Only its start: the rest may be a secret tool argument. */
    return atl_turn_fail(
        t, "the stream sent malformed JSON (%zu bytes, starting %.24s)",
        strlen(data), data);
  }
  int rc = 0;
  json_object *err, *o, *v;
  if (json_object_object_get_ex(chunk, "error", &err)) {
    const char *msg = json_object_is_type(err, json_type_object)
                          ? atl_provider_str(err, "message")
                          : NULL;
    const char *status = json_object_is_type(err, json_type_object)
                             ? atl_provider_str(err, "status")
                             : NULL;
    /* Overload and server trouble reported in the stream: passing. */
    static const char *const transient[] = {"UNAVAILABLE", "RESOURCE_EXHAUSTED",
                                            "INTERNAL", "DEADLINE_EXCEEDED",
                                            NULL};
    for (size_t i = 0; status != NULL && transient[i] != NULL; i++)
      if (strcmp(status, transient[i]) == 0)
        t->error_transient = 1;
    if (msg == NULL)
      status = NULL;
    if (status != NULL)
      rc = atl_turn_fail(t, "the provider reported an error: %s (%s)", msg,
                         status);
    else
      rc = atl_turn_fail(t, "the provider reported an error: %s",
                         msg ? msg : json_object_to_json_string(err));
    json_object_put(chunk);
    return rc;
  }
  if (json_object_object_get_ex(chunk, "usageMetadata", &o) &&
      json_object_is_type(o, json_type_object)) {
    if (json_object_object_get_ex(o, "promptTokenCount", &v))
      t->input_tokens = json_object_get_int64(v);
    if (json_object_object_get_ex(o, "candidatesTokenCount", &v))
      t->output_tokens = json_object_get_int64(v);
  }
  json_object *cands, *cand = NULL;
  if (json_object_object_get_ex(chunk, "candidates", &cands) &&
      json_object_is_type(cands, json_type_array) &&
      json_object_array_length(cands) > 0)
    cand = json_object_array_get_idx(cands, 0);
  if (cand != NULL && json_object_is_type(cand, json_type_object)) {
    json_object *content, *parts;
    if (json_object_object_get_ex(cand, "content", &content) &&
        json_object_object_get_ex(content, "parts", &parts) &&
        json_object_is_type(parts, json_type_array))
      for (size_t i = 0; rc == 0 && i < json_object_array_length(parts); i++)
        rc = add_part(t, json_object_array_get_idx(parts, i));
    const char *finish = atl_provider_str(cand, "finishReason"),
               *why = atl_provider_str(cand, "finishMessage");
    if (rc == 0 && why != NULL)
      rc = atl_turn_stop_message(t, why, strlen(why));
    if (rc == 0 && finish != NULL) {
      free(t->stop_reason);
      t->stop_reason = strdup(finish);
      t->done = 1;
    }
  } else if (json_object_object_get_ex(chunk, "promptFeedback", &o)) {
    /* A refused prompt gets no candidate at all, and no finishReason to
     * end the stream: it ends here, a refusal. */
    const char *reason = atl_provider_str(o, "blockReason");
    if (reason != NULL) {
      free(t->stop_reason);
      t->stop_reason = strdup("prompt_blocked");
      rc = t->stop_reason ? atl_turn_stop_message(t, reason, strlen(reason))
                          : ATL_ENOMEM;
      t->done = 1;
    }
  }
  json_object_put(chunk);
  return rc;
}

static char *error_message(const char *body, size_t len) {
  json_object *o = atl_provider_parse_len(body, len), *first = o, *err;
  char *out = NULL;
  /* Without alt=sse errors come in an array, as the chunks would. */
  if (o != NULL && json_object_is_type(o, json_type_array))
    first = json_object_array_get_idx(o, 0);
  if (first != NULL && json_object_is_type(first, json_type_object) &&
      json_object_object_get_ex(first, "error", &err) &&
      json_object_is_type(err, json_type_object)) {
    const char *m = atl_provider_str(err, "message"),
               *status = atl_provider_str(err, "status");
    if (m != NULL && status != NULL) {
      if (asprintf(&out, "%s (%s)", m, status) < 0)
        out = NULL;
    } else if (m != NULL) {
      out = strdup(m);
    }
  }
  json_object_put(o);
  return out;
}

const atl_provider_ops_t atl_provider_gemini = {
    .type = "gemini",
    .merge_key = "parts",
    .piece = piece,
    .tools_text = tools_text,
    .request = request,
    .event = event,
    .error_message = error_message,
    .turn_free = NULL,
    .output_cap = output_cap,
};
