/* What the providers' servers refuse, kept out of every request
 * (doc/providers.md): whitespace-only and empty messages, call ids of the
 * wrong shape, another provider's signatures, parameters a model refuses;
 * and how a turn's end is read (stop reasons, in-stream errors). */
#include "atl-build.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/sse.h"
#include "config.h"
#include "providers/models.h"
#include "providers/provider.h"

static json_object *parse(const char *text) {
  json_object *o = json_tokener_parse(text);
  cr_assert_not_null(o, "%s", text);
  return o;
}

static const atl_provider_ops_t *const all[] = {
    &atl_provider_anthropic, &atl_provider_openai, &atl_provider_gemini};

/* The request body of history for ops, with cfg and model. */
static char *body(const atl_provider_ops_t *ops, const atl_provider_cfg_t *cfg,
                  const char *model, const char *history) {
  json_object *h = parse(history);
  atl_provider_req_t req;
  cr_assert_eq(atl_provider_build(ops, cfg, model, NULL, h, NULL, &req), 0);
  char *out = strdup(req.body);
  atl_provider_req_free(&req);
  json_object_put(h);
  return out;
}

/* ---- the history ---- */

/* A model's "\n\n" before its call (Claude does this) and a user message
 * of spaces from an older history: neither is ever sent, by any
 * provider; an answer with nothing in it is left out whole. */
Test(rules, whitespace_and_empty_messages_are_never_sent) {
  const char *h =
      "[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"   \"}]},"
      "{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"go\"}]},"
      "{\"role\":\"model\",\"parts\":[{\"type\":\"text\",\"text\":\"\\n\\n\"},"
      "{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"t\",\"arguments\":{}}]}"
      ","
      "{\"role\":\"tool\",\"parts\":[{\"type\":\"tool_result\",\"id\":\"c1\","
      "\"name\":\"t\",\"result\":{\"success\":true}}]},"
      "{\"role\":\"model\",\"parts\":[],\"stop_reason\":\"length\"},"
      "{\"role\":\"model\",\"parts\":[{\"type\":\"thinking\",\"text\":\"x\"},"
      "{\"type\":\"text\",\"text\":\" \\t\"}]},"
      "{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"again\"}]}]";
  atl_provider_cfg_t cfg = {.base_url = "http://h", .max_tokens = 100};
  for (size_t i = 0; i < 3; i++) {
    char *b = body(all[i], &cfg, "m", h);
    cr_assert(strstr(b, "   ") == NULL && strstr(b, "\\n\\n") == NULL &&
                  strstr(b, " \\t") == NULL,
              "%s: %s", all[i]->type, b);
    /* null content only beside tool_calls, where OpenAI takes it. */
    for (const char *n = strstr(b, "null"); n; n = strstr(n + 1, "null"))
      cr_assert(all[i] == &atl_provider_openai &&
                    strncmp(n, "null,\"tool_calls\"", 17) == 0,
                "%s: %s", all[i]->type, b);
    cr_assert(strstr(b, "\"go\"") && strstr(b, "\"again\""), "%s", b);
    free(b);
  }
  /* OpenAI: the empty answers are not there at all; the one assistant
   * message is the call's. */
  char *b = body(&atl_provider_openai, &cfg, "m", h);
  const char *first = strstr(b, "\"role\":\"assistant\"");
  cr_assert(first && strstr(first + 1, "\"role\":\"assistant\"") == NULL, "%s",
            b);
  free(b);
}

Test(rules, a_turn_keeps_no_whitespace_only_text) {
  atl_turn_t t;
  atl_turn_init(&t);
  cr_assert_eq(atl_turn_text(&t, "\n\n", 2), 0);
  atl_turn_call_t *c = atl_turn_call(&t, 0);
  c->id = strdup("toolu_1");
  c->name = strdup("render");
  cr_assert_eq(atl_turn_text(&t, "Done.", 5), 0);
  json_object *m = atl_turn_message(&t);
  cr_assert_str_eq(
      json_object_to_json_string_ext(json_object_object_get(m, "parts"),
                                     JSON_C_TO_STRING_PLAIN),
      "[{\"type\":\"tool_call\",\"id\":\"toolu_1\",\"name\":"
      "\"render\",\"arguments\":{}},{\"type\":\"text\",\"text\":"
      "\"Done.\"}]");
  json_object_put(m);
  atl_turn_free(&t);
  /* A call named twice in one answer gets an id of its own. */
  atl_turn_init(&t);
  for (size_t i = 0; i < 2; i++) {
    c = atl_turn_call(&t, i);
    c->id = strdup("same");
    c->name = strdup("t");
  }
  m = atl_turn_message(&t);
  json_object *p = json_object_object_get(m, "parts");
  const char *a = json_object_get_string(
      json_object_object_get(json_object_array_get_idx(p, 0), "id"));
  const char *b = json_object_get_string(
      json_object_object_get(json_object_array_get_idx(p, 1), "id"));
  cr_assert_str_eq(a, "same");
  cr_assert(strncmp(b, "atl_", 4) == 0, "%s", b);
  json_object_put(m);
  atl_turn_free(&t);
}

/* Ids of the wrong shape for Anthropic ([a-zA-Z0-9_-]) or OpenAI (at most
 * 40): made over, the same way for a call and its result; Gemini's empty
 * ids of old histories by their place. */
Test(rules, call_ids_take_every_providers_shape) {
  char buf[48];
  json_object *p = parse("{\"id\":\"toolu_01A-b\"}");
  cr_assert_str_eq(atl_provider_call_id(p, 0, buf), "toolu_01A-b");
  json_object_put(p);
  p = parse("{\"id\":\"call:with/odd chars\"}");
  const char *x = atl_provider_call_id(p, 0, buf);
  cr_assert(strncmp(x, "atl_", 4) == 0 && strlen(x) == 20, "%s", x);
  char keep[48];
  snprintf(keep, sizeof(keep), "%s", x);
  cr_assert_str_eq(atl_provider_call_id(p, 5, buf), keep, "stable");
  json_object_put(p);
  p = parse("{\"id\":\"call_0123456789012345678901234567890123456789\"}");
  x = atl_provider_call_id(p, 0, buf);
  cr_assert(strlen(x) <= 40 && strncmp(x, "atl_", 4) == 0, "%s", x);
  json_object_put(p);
  p = parse("{\"id\":\"\"}");
  cr_assert_str_eq(atl_provider_call_id(p, 1, buf), "atl_call_1");
  json_object_put(p);
  /* A Gemini session's calls, stored before ids were made, go to
   * Anthropic and OpenAI with one id per call, matched by their results. */
  const char *h =
      "[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"go\"}]},"
      "{\"role\":\"model\",\"provider\":\"gemini\",\"parts\":["
      "{\"type\":\"tool_call\",\"id\":\"\",\"name\":\"a\",\"arguments\":{}},"
      "{\"type\":\"tool_call\",\"id\":\"\",\"name\":\"b\",\"arguments\":{}}]},"
      "{\"role\":\"tool\",\"parts\":["
      "{\"type\":\"tool_result\",\"id\":\"\",\"name\":\"a\",\"result\":{}},"
      "{\"type\":\"tool_result\",\"id\":\"\",\"name\":\"b\",\"result\":{}}]}]";
  atl_provider_cfg_t cfg = {.base_url = "http://h", .max_tokens = 100};
  char *b = body(&atl_provider_anthropic, &cfg, "m", h);
  cr_assert(strstr(b, "\"type\":\"tool_use\",\"id\":\"atl_call_0\"") &&
                strstr(b, "\"type\":\"tool_use\",\"id\":\"atl_call_1\"") &&
                strstr(b, "\"tool_use_id\":\"atl_call_0\"") &&
                strstr(b, "\"tool_use_id\":\"atl_call_1\""),
            "%s", b);
  free(b);
  b = body(&atl_provider_openai, &cfg, "m", h);
  cr_assert(strstr(b, "\"id\":\"atl_call_1\"") &&
                strstr(b, "\"tool_call_id\":\"atl_call_1\""),
            "%s", b);
  cr_assert(strstr(b, "\"id\":\"\"") == NULL, "%s", b);
  free(b);
}

/* Text that is only Unicode whitespace is blank too: an IME's
 * ideographic space, a no-break space. */
Test(rules, unicode_whitespace_is_blank) {
  cr_assert(atl_provider_blank("\xe3\x80\x80"));            /* U+3000 */
  cr_assert(atl_provider_blank(" \xc2\xa0\t\xe2\x80\xaf")); /* U+00A0 U+202F */
  cr_assert(atl_provider_blank(NULL) && atl_provider_blank(""));
  cr_assert(!atl_provider_blank("\xe3\x80\x80x"));
  cr_assert(!atl_provider_blank("\xc3\xa9")); /* é */
  cr_assert(!atl_provider_blank("\xe2\x80\x8b"), "U+200B is no space");
  cr_assert(!atl_provider_blank("\xff"), "an invalid byte is not space");
}

/* A Gemini session stored before ids were made (every call's id "")
 * with two call turns: the ids made at load are unique in the session,
 * each result takes its call's, and Anthropic gets each tool_use id
 * once. So are ids a server reuses in every answer ("call_0"). */
Test(rules, call_ids_are_unique_in_the_session) {
  json_object *h = parse(
      "[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"go\"}]},"
      "{\"role\":\"model\",\"provider\":\"gemini\",\"parts\":[{\"type\":"
      "\"tool_call\",\"id\":\"\",\"name\":\"a\",\"arguments\":{}},{\"type\":"
      "\"tool_call\",\"id\":\"\",\"name\":\"b\",\"arguments\":{}}]},"
      "{\"role\":\"tool\",\"parts\":[{\"type\":\"tool_result\",\"id\":\"\","
      "\"name\":\"a\",\"result\":{}},{\"type\":\"tool_result\",\"id\":\"\","
      "\"name\":\"b\",\"result\":{}}]},"
      "{\"role\":\"model\",\"provider\":\"gemini\",\"parts\":[{\"type\":"
      "\"tool_call\",\"id\":\"\",\"name\":\"a\",\"arguments\":{}}]},"
      "{\"role\":\"tool\",\"parts\":[{\"type\":\"tool_result\",\"id\":\"\","
      "\"name\":\"a\",\"result\":{}}]},"
      "{\"role\":\"model\",\"provider\":\"openai\",\"parts\":[{\"type\":"
      "\"tool_call\",\"id\":\"call_0\",\"name\":\"a\",\"arguments\":{}}]},"
      "{\"role\":\"tool\",\"parts\":[{\"type\":\"tool_result\",\"id\":"
      "\"call_0\",\"name\":\"a\",\"result\":{}}]},"
      "{\"role\":\"model\",\"provider\":\"openai\",\"parts\":[{\"type\":"
      "\"tool_call\",\"id\":\"call_0\",\"name\":\"b\",\"arguments\":{}}]},"
      "{\"role\":\"tool\",\"parts\":[{\"type\":\"tool_result\",\"id\":"
      "\"call_0\",\"name\":\"b\",\"result\":{}}]}]");
  json_object *seen = json_object_new_object();
  size_t n = json_object_array_length(h), changed = 0;
  for (size_t i = 0; i < n; i++) {
    json_object *m = json_object_array_get_idx(h, i);
    if (strcmp(json_object_get_string(json_object_object_get(m, "role")),
               "model") == 0)
      changed += atl_provider_claim_ids(
          m, i, seen, i + 1 < n ? json_object_array_get_idx(h, i + 1) : NULL);
  }
  cr_assert_eq(changed, 4, "three empty ids and the second call_0");
  atl_provider_cfg_t cfg = {.base_url = "http://h", .max_tokens = 100};
  atl_provider_req_t req;
  cr_assert_eq(atl_provider_build(&atl_provider_anthropic, &cfg, "m", NULL, h,
                                  NULL, &req),
               0);
  static const char *const ids[] = {"atl_h1_0", "atl_h1_1", "atl_h3_0",
                                    "call_0", "atl_h7_0"};
  for (size_t i = 0; i < 5; i++) {
    char use[64], result[64];
    snprintf(use, sizeof(use), "\"tool_use\",\"id\":\"%s\"", ids[i]);
    snprintf(result, sizeof(result), "\"tool_use_id\":\"%s\"", ids[i]);
    const char *u = strstr(req.body, use);
    cr_assert(u && !strstr(u + 1, use), "%s once: %s", ids[i], req.body);
    cr_assert(strstr(req.body, result), "%s answered: %s", ids[i], req.body);
  }
  atl_provider_req_free(&req);
  json_object_put(seen);
  json_object_put(h);
}

/* ---- parameters each model insists on ---- */

Test(rules, the_model_table) {
  const atl_model_info_t *m = atl_model_info("openai", "o1-2024-12-17");
  cr_assert(m && strcmp(m->prefix, "o1") == 0);
  cr_assert_null(atl_model_info("openai", "o10"));
  cr_assert_str_eq(atl_model_info("openai", "openai/gpt-5-mini")->prefix,
                   "gpt-5");
  cr_assert_str_eq(atl_model_info("openai", "gpt-5-chat-latest")->prefix,
                   "gpt-5-chat");
  cr_assert_str_eq(
      atl_model_info("anthropic", "claude-opus-4-1-20250805")->prefix,
      "claude-opus-4");
  cr_assert_str_eq(atl_model_info("anthropic", "claude-opus-4-7")->prefix,
                   "claude-opus-4-7");
  cr_assert_str_eq(
      atl_model_info("gemini", "models/gemini-2.5-flash-lite")->prefix,
      "gemini-2.5-flash-lite");
  cr_assert_null(atl_model_info("gemini", "claude-opus-4-7"));
  cr_assert_null(atl_model_info("openai", "llama3.1:8b"));
}

/* What the window leaves for the request: the answer as it is asked for
 * is reserved (Anthropic counts input and max_tokens together). */
Test(rules, the_output_each_request_asks_for) {
  atl_provider_cfg_t cfg = {.max_tokens = 64000};
  cr_assert_eq(atl_provider_anthropic.output_cap(&cfg, "claude-sonnet-4-5"),
               64000);
  cr_assert_eq(atl_provider_anthropic.output_cap(&cfg, "claude-3-5-haiku"),
               8192);
  cfg.max_tokens = 8192;
  cr_assert_eq(atl_provider_openai.output_cap(&cfg, "o3"), 8192 + 16384);
  cr_assert_eq(atl_provider_openai.output_cap(&cfg, "gpt-4.1"), 8192);
  cr_assert_eq(atl_provider_gemini.output_cap(&cfg, "gemini-2.5-flash"),
               8192 + 8192);
}

Test(rules, openai_reasoning_models_get_max_completion_tokens) {
  const char *h =
      "[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"go\"}]}]";
  atl_provider_cfg_t cfg = {.base_url = "http://h", .max_tokens = 8192};
  char *b = body(&atl_provider_openai, &cfg, "gpt-4.1-mini", h);
  cr_assert(strstr(b, ",\"max_tokens\":8192,"), "%s", b);
  free(b);
  /* Room for the reasoning besides the answer. */
  b = body(&atl_provider_openai, &cfg, "o4-mini", h);
  cr_assert(strstr(b, ",\"max_completion_tokens\":24576,") &&
                !strstr(b, "\"max_tokens\""),
            "%s", b);
  free(b);
  /* Held to the model's largest answer. */
  cfg.max_tokens = 100000;
  b = body(&atl_provider_openai, &cfg, "gpt-4o", h);
  cr_assert(strstr(b, ",\"max_tokens\":16384,"), "%s", b);
  free(b);
  /* The configuration may say which. */
  cfg.max_tokens = 50;
  cfg.max_tokens_param = ATL_TOKEN_PARAM_MAX_COMPLETION_TOKENS;
  b = body(&atl_provider_openai, &cfg, "llama3", h);
  cr_assert(strstr(b, ",\"max_completion_tokens\":50,"), "%s", b);
  free(b);
}

Test(rules, anthropic_thinking_and_max_tokens_fit_the_model) {
  const char *h =
      "[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"go\"}]}]";
  atl_provider_cfg_t cfg = {
      .base_url = "http://h", .max_tokens = 20000, .thinking_budget = 4096};
  char *b = body(&atl_provider_anthropic, &cfg, "claude-sonnet-4-5", h);
  cr_assert(strstr(b, "\"max_tokens\":20000,") &&
                strstr(b, "\"thinking\":{\"type\":\"enabled\","
                          "\"budget_tokens\":4096}"),
            "%s", b);
  free(b);
  /* Opus 4.7 refuses a budget: adaptive thinking, no budget_tokens. */
  b = body(&atl_provider_anthropic, &cfg, "claude-opus-4-7", h);
  cr_assert(strstr(b, "\"thinking\":{\"type\":\"adaptive\"}") &&
                !strstr(b, "budget_tokens"),
            "%s", b);
  free(b);
  /* claude-3-5-sonnet answers at most 8192 tokens (its first release
   * 4096) and has no extended thinking: no thinking parameter. */
  b = body(&atl_provider_anthropic, &cfg, "claude-3-5-sonnet-20241022", h);
  cr_assert(strstr(b, "\"max_tokens\":8192,") && !strstr(b, "thinking"), "%s",
            b);
  free(b);
  b = body(&atl_provider_anthropic, &cfg, "claude-3-5-sonnet-20240620", h);
  cr_assert(strstr(b, "\"max_tokens\":4096,"), "%s", b);
  free(b);
  /* Within a smaller max_tokens, the budget stays under it. */
  cfg.max_tokens = 3000;
  b = body(&atl_provider_anthropic, &cfg, "claude-sonnet-4-20250514", h);
  cr_assert(strstr(b, "\"max_tokens\":3000,") &&
                strstr(b, "\"budget_tokens\":1500}"),
            "%s", b);
  free(b);
}

Test(rules, gemini_thinking_gets_a_budget_beside_the_answer) {
  const char *h =
      "[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"go\"}]}]";
  atl_provider_cfg_t cfg = {.base_url = "http://h", .max_tokens = 4096};
  char *b = body(&atl_provider_gemini, &cfg, "gemini-2.5-flash", h);
  cr_assert(strstr(b, "\"generationConfig\":{\"thinkingConfig\":{"
                      "\"thinkingBudget\":8192},\"maxOutputTokens\":12288}"),
            "%s", b);
  free(b);
  /* 2.5 Pro always thinks: 0 is its least, 128. */
  cfg.thinking_set = 1;
  cfg.thinking_budget = 0;
  b = body(&atl_provider_gemini, &cfg, "gemini-2.5-pro", h);
  cr_assert(strstr(b, "{\"thinkingBudget\":128},\"maxOutputTokens\":4224}"),
            "%s", b);
  free(b);
  b = body(&atl_provider_gemini, &cfg, "gemini-2.5-flash", h);
  cr_assert(strstr(b, "{\"thinkingBudget\":0},\"maxOutputTokens\":4096}"), "%s",
            b);
  free(b);
  /* Gemini 3: a level, not a budget. */
  b = body(&atl_provider_gemini, &cfg, "gemini-3-pro-preview", h);
  cr_assert(strstr(b, "{\"thinkingLevel\":\"low\"},\"maxOutputTokens\":8192}"),
            "%s", b);
  free(b);
  /* A model the table does not know: max_tokens as it is. */
  b = body(&atl_provider_gemini, &cfg, "gemini-exp-1206", h);
  cr_assert(strstr(b, "\"generationConfig\":{\"maxOutputTokens\":4096}"), "%s",
            b);
  free(b);
}

/* ---- how a turn ends ---- */

Test(rules, stop_reasons_in_every_providers_words) {
  static const struct {
    const char *r;
    int kind;
  } cases[] = {
      {NULL, ATL_STOP_END},
      {"end_turn", ATL_STOP_END},
      {"tool_calls", ATL_STOP_END},
      {"STOP", ATL_STOP_END},
      {"max_tokens", ATL_STOP_LENGTH},
      {"length", ATL_STOP_LENGTH},
      {"MAX_TOKENS", ATL_STOP_LENGTH},
      {"refusal", ATL_STOP_REFUSAL},
      {"content_filter", ATL_STOP_REFUSAL},
      {"SAFETY", ATL_STOP_REFUSAL},
      {"prompt_blocked", ATL_STOP_REFUSAL},
      {"MALFORMED_FUNCTION_CALL", ATL_STOP_MALFORMED},
      {"pause_turn", ATL_STOP_PAUSE},
      {"something_new", ATL_STOP_END},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    cr_assert_eq(atl_turn_stop_kind(cases[i].r), cases[i].kind, "%s",
                 cases[i].r ? cases[i].r : "(null)");
}

static int feed_cb(const char *event, const char *data, size_t len,
                   void *user) {
  const atl_provider_ops_t **ops = ((void **)user)[0];
  atl_turn_t *t = ((void **)user)[1];
  return (*ops)->event(t, event, data, len) != 0;
}

static void feed(const atl_provider_ops_t *ops, atl_turn_t *t,
                 const char *stream) {
  atl_sse_t sse;
  atl_sse_init(&sse, 0);
  void *u[2] = {(void *)&ops, t};
  atl_sse_feed(&sse, stream, strlen(stream), feed_cb, u);
  atl_sse_free(&sse);
}

/* An overload reported in the stream after the 200 is a passing trouble
 * (retried); an error the stream cannot explain is not. */
Test(rules, in_stream_errors_say_whether_they_pass) {
  atl_turn_t t;
  atl_turn_init(&t);
  feed(&atl_provider_anthropic, &t,
       "event: message_start\ndata: {\"type\":\"message_start\",\"message\":"
       "{\"usage\":{\"input_tokens\":5}}}\n\n"
       "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
       "\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
  cr_assert(t.error && t.error_transient);
  atl_provider_anthropic.turn_free(&t);
  atl_turn_free(&t);
  atl_turn_init(&t);
  feed(&atl_provider_anthropic, &t,
       "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
       "\"invalid_request_error\",\"message\":\"no\"}}\n\n");
  cr_assert(t.error && !t.error_transient);
  atl_provider_anthropic.turn_free(&t);
  atl_turn_free(&t);
  atl_turn_init(&t);
  feed(&atl_provider_openai, &t,
       "data: {\"error\":{\"message\":\"The server had an error\",\"type\":"
       "\"server_error\"}}\n\n");
  cr_assert(t.error && t.error_transient);
  atl_turn_free(&t);
  atl_turn_init(&t);
  feed(&atl_provider_gemini, &t,
       "data: {\"error\":{\"code\":503,\"message\":\"The model is "
       "overloaded.\",\"status\":\"UNAVAILABLE\"}}\r\n\r\n");
  cr_assert(t.error && t.error_transient);
  atl_turn_free(&t);
}

/* OpenAI's refusal comes as its own text with finish_reason "stop";
 * Gemini's malformed call with a finishMessage. */
Test(rules, refusals_and_malformed_calls_are_told_apart) {
  atl_turn_t t;
  atl_turn_init(&t);
  feed(&atl_provider_openai, &t,
       "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
       "\"content\":null,\"refusal\":\"I can't \"}}]}\n\n"
       "data: {\"choices\":[{\"index\":0,\"delta\":{\"refusal\":\"help.\"}}]}"
       "\n\n"
       "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
       "\"stop\"}]}\n\n"
       "data: [DONE]\n\n");
  cr_assert(t.done && t.error == NULL);
  cr_assert_str_eq(t.stop_reason, "refusal");
  cr_assert_str_eq(t.stop_message, "I can't help.");
  json_object *m = atl_turn_message(&t);
  cr_assert_str_eq(
      json_object_get_string(json_object_object_get(m, "stop_message")),
      "I can't help.");
  json_object_put(m);
  atl_turn_free(&t);
  atl_turn_init(&t);
  feed(&atl_provider_gemini, &t,
       "data: {\"candidates\":[{\"content\":{\"role\":\"model\"},"
       "\"finishReason\":\"MALFORMED_FUNCTION_CALL\",\"finishMessage\":"
       "\"Malformed function call: print(x\"}]}\r\n\r\n");
  cr_assert(t.done);
  cr_assert_eq(atl_turn_stop_kind(t.stop_reason), ATL_STOP_MALFORMED);
  cr_assert_str_eq(t.stop_message, "Malformed function call: print(x");
  atl_turn_free(&t);
}
