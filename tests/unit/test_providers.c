/* The providers' wire formats (daemon/providers/): the request built from a
 * history, and the turn parsed from a recorded stream fed through the SSE
 * parser in pieces, as it arrives from the network. */
#include "atl-build.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atelier/error.h>

#include "agent/sse.h"
#include "providers/provider.h"

/* A conversation with everything in it: text, parallel tool calls, their
 * results (one failed, one with an image). */
static const char *const HISTORY =
    "[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"a red "
    "ball\"}]},"
    "{\"role\":\"model\",\"parts\":[{\"type\":\"text\",\"text\":\"Adding "
    "it.\"},{\"type\":\"tool_call\",\"id\":\"call_1\",\"name\":\"create_"
    "shape\",\"arguments\":{\"id\":\"ball\"}},{\"type\":\"tool_call\","
    "\"id\":\"call_2\",\"name\":\"render\",\"arguments\":{}}]},"
    "{\"role\":\"tool\",\"parts\":[{\"type\":\"tool_result\",\"id\":\"call_"
    "1\",\"name\":\"create_shape\",\"result\":{\"success\":false,\"error\":"
    "\"/type: missing\"},\"is_error\":true},{\"type\":\"tool_result\","
    "\"id\":\"call_2\",\"name\":\"render\",\"result\":{\"success\":true},"
    "\"is_error\":false,\"images\":[{\"mime\":\"image/png\",\"data\":"
    "\"iVBORw0K\"}]}]},"
    "{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"thanks\"}]}"
    "]";

static const char *const TOOLS =
    "[{\"name\":\"create_shape\",\"description\":\"Create a shape.\","
    "\"input_schema\":{\"type\":\"object\"}}]";

static json_object *parse(const char *text) {
  json_object *o = json_tokener_parse(text);
  cr_assert_not_null(o, "%s", text);
  return o;
}

Test(openai, the_request_carries_every_result_and_the_images) {
  atl_provider_cfg_t cfg = {.name = "o",
                            .type = "openai",
                            .base_url = "http://127.0.0.1:9",
                            .api_key = "sk-test",
                            .max_tokens = 1000};
  json_object *h = parse(HISTORY), *tools = parse(TOOLS);
  atl_provider_req_t req;
  cr_assert_eq(atl_provider_build(&atl_provider_openai, &cfg, "gpt-x",
                                  "Be brief.", h, tools, &req),
               0);
  cr_assert_str_eq(req.url, "http://127.0.0.1:9/v1/chat/completions");
  cr_assert_str_eq(req.headers[0], "Content-Type: application/json");
  cr_assert_str_eq(req.headers[2], "Authorization: Bearer sk-test");
  cr_assert_str_eq(
      req.body,
      "{\"model\":\"gpt-x\",\"stream\":true,\"stream_options\":{\"include_"
      "usage\":true},\"max_tokens\":1000,\"messages\":["
      "{\"role\":\"system\",\"content\":\"Be brief.\"},"
      "{\"role\":\"user\",\"content\":\"a red ball\"},"
      "{\"role\":\"assistant\",\"content\":\"Adding it.\",\"tool_calls\":["
      "{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":"
      "\"create_shape\",\"arguments\":\"{\\\"id\\\":\\\"ball\\\"}\"}},"
      "{\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":"
      "\"render\",\"arguments\":\"{}\"}}]},"
      "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":"
      "\"{\\\"success\\\":false,\\\"error\\\":\\\"/type: missing\\\"}\"},"
      "{\"role\":\"tool\",\"tool_call_id\":\"call_2\",\"content\":"
      "\"{\\\"success\\\":true}\"},"
      "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"The "
      "images the tool calls above returned:\"},{\"type\":\"image_url\","
      "\"image_url\":{\"url\":\"data:image/png;base64,iVBORw0K\"}}]},"
      "{\"role\":\"user\",\"content\":\"thanks\"}],"
      "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"create_"
      "shape\",\"description\":\"Create a shape.\",\"parameters\":{\"type\":"
      "\"object\"}}}]}");
  atl_provider_req_free(&req);
  /* A local server without a key gets no Authorization header. */
  cfg.api_key = NULL;
  cr_assert_eq(
      atl_provider_build(&atl_provider_openai, &cfg, "m", NULL, h, NULL, &req),
      0);
  cr_assert_null(req.headers[2]);
  cr_assert(strstr(req.body, "\"role\":\"system\"") == NULL);
  atl_provider_req_free(&req);
  json_object_put(h);
  json_object_put(tools);
}

typedef struct {
  atl_turn_t *t;
  const atl_provider_ops_t *ops;
  char streamed[256];
} feed_t;

static int on_event(const char *event, const char *data, size_t len,
                    void *user) {
  feed_t *f = user;
  return f->ops->event(f->t, event, data, len) != 0 ? 1 : 0;
}

static void on_text(const char *s, size_t len, void *user) {
  feed_t *f = user;
  strncat(f->streamed, s, len);
}

/* Feeds stream in pieces of 7 bytes; returns atl_sse_feed's last result. */
static int feed(const atl_provider_ops_t *ops, atl_turn_t *t, feed_t *f,
                const char *stream) {
  f->t = t;
  f->ops = ops;
  t->on_text = on_text;
  t->user = f;
  atl_sse_t p;
  atl_sse_init(&p, 0);
  int rc = 0;
  size_t n = strlen(stream);
  for (size_t i = 0; i < n && rc == 0; i += 7)
    rc = atl_sse_feed(&p, stream + i, n - i < 7 ? n - i : 7, on_event, f);
  atl_sse_free(&p);
  return rc;
}

/* What the API streams for a text and two parallel calls (fragments as
 * OpenAI sends them: id and name once, then pieces of arguments). */
static const char *const OPENAI_STREAM =
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{"
    "\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Two "
    "\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"balls.\"}}]}"
    "\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":"
    "0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":"
    "\"create_shape\",\"arguments\":\"\"}}]}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":"
    "0,\"function\":{\"arguments\":\"{\\\"id\\\":\"}}]}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":"
    "1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":"
    "\"create_shape\",\"arguments\":\"{\\\"id\\\":\\\"b\\\"}\"}}]}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":"
    "0,\"function\":{\"arguments\":\"\\\"a\\\"}\"}}]}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_"
    "calls\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_"
    "tokens\":31,\"total_tokens\":151}}\n\n"
    "data: [DONE]\n\n";

Test(openai, a_streamed_turn_with_parallel_calls) {
  atl_turn_t t;
  atl_turn_init(&t);
  feed_t f = {0};
  cr_assert_eq(feed(&atl_provider_openai, &t, &f, OPENAI_STREAM), 0);
  cr_assert(t.done);
  cr_assert_null(t.error);
  cr_assert_str_eq(f.streamed, "Two balls.", "text streams as it comes");
  json_object *m = atl_turn_message(&t);
  cr_assert_str_eq(
      json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN),
      "{\"role\":\"model\",\"parts\":[{\"type\":\"text\",\"text\":\"Two "
      "balls.\"},{\"type\":\"tool_call\",\"id\":\"call_a\",\"name\":\"create_"
      "shape\",\"arguments\":{\"id\":\"a\"}},{\"type\":\"tool_call\",\"id\":"
      "\"call_b\",\"name\":\"create_shape\",\"arguments\":{\"id\":\"b\"}}],"
      "\"usage\":{\"input_tokens\":120,\"output_tokens\":31},\"stop_reason\":"
      "\"tool_calls\"}");
  json_object_put(m);
  atl_turn_free(&t);
}

Test(openai, broken_streams_are_errors) {
  atl_turn_t t;
  atl_turn_init(&t);
  feed_t f = {0};
  cr_assert_eq(feed(&atl_provider_openai, &t, &f,
                    "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
                    "data: {\"choices\":[{\"delta\n\n"),
               1);
  cr_assert_str_eq(t.error,
                   "the stream sent malformed JSON (19 bytes, starting "
                   "{\"choices\":[{\"delta)");
  cr_assert_not(t.done);
  atl_turn_free(&t);
  /* Arguments that are not a JSON object are kept, marked, for the loop to
   * answer with an error result. */
  atl_turn_init(&t);
  feed_t g = {0};
  cr_assert_eq(feed(&atl_provider_openai, &t, &g,
                    "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{"
                    "\"index\":0,\"id\":\"x\",\"function\":{\"name\":\"echo\","
                    "\"arguments\":\"{\\\"text\\\":\"}}]}}]}\n\n"
                    "data: [DONE]\n\n"),
               0);
  json_object *m = atl_turn_message(&t);
  cr_assert_str_eq(
      json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN),
      "{\"role\":\"model\",\"parts\":[{\"type\":\"tool_call\",\"id\":\"x\","
      "\"name\":\"echo\",\"arguments\":{},\"bad_arguments\":\"{\\\"text\\\":"
      "\"}]}");
  json_object_put(m);
  atl_turn_free(&t);
  char *msg = atl_provider_openai.error_message(
      "{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\"}}",
      60);
  cr_assert_str_eq(msg, "Rate limit reached");
  free(msg);
  cr_assert_null(atl_provider_openai.error_message("<html>", 6));
}

/* A model message with everything a provider may have to send back: signed
 * thinking, text, a signed call; then a turn whose thinking is unsigned.
 * Its model and tool messages are tagged with the provider they came
 * from (%s). */
static const char *const SIGNED_HISTORY =
    "[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"hi\"}]},"
    "{\"role\":\"model\",\"provider\":\"%s\",\"parts\":[{\"type\":"
    "\"thinking\",\"text\":\"Plan.\","
    "\"signature\":\"sig_t\"},{\"type\":\"text\",\"text\":\"On it.\"},{"
    "\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"render\",\"arguments\":"
    "{},\"signature\":\"sig_c\"}]},"
    "{\"role\":\"tool\",\"provider\":\"%s\",\"parts\":[{\"type\":"
    "\"tool_result\",\"id\":\"c1\","
    "\"name\":\"render\",\"result\":{\"success\":true},\"is_error\":false}]},"
    "{\"role\":\"model\",\"provider\":\"%s\",\"parts\":[{\"type\":"
    "\"thinking\",\"text\":"
    "\"Unsigned.\"},{\"type\":\"text\",\"text\":\"Done.\"}]}]";

/* SIGNED_HISTORY as from provider. */
static json_object *signed_history(const char *provider) {
  char buf[2048];
  snprintf(buf, sizeof(buf), SIGNED_HISTORY, provider, provider, provider);
  return parse(buf);
}

/* --- Anthropic ---------------------------------------------------------- */

Test(anthropic, the_request_merges_roles_and_marks_failed_results) {
  atl_provider_cfg_t cfg = {.name = "a",
                            .type = "anthropic",
                            .base_url = "http://127.0.0.1:9",
                            .api_key = "sk-ant-test",
                            .max_tokens = 1000};
  json_object *h = parse(HISTORY), *tools = parse(TOOLS);
  atl_provider_req_t req;
  cr_assert_eq(atl_provider_build(&atl_provider_anthropic, &cfg, "claude-x",
                                  "Be brief.", h, tools, &req),
               0);
  cr_assert_str_eq(req.url, "http://127.0.0.1:9/v1/messages");
  cr_assert_str_eq(req.headers[0], "Content-Type: application/json");
  cr_assert_str_eq(req.headers[1], "Accept: text/event-stream");
  cr_assert_str_eq(req.headers[2], "anthropic-version: 2023-06-01");
  cr_assert_str_eq(req.headers[3], "x-api-key: sk-ant-test");
  cr_assert_null(req.headers[4]);
  /* The tool results and the user's "thanks" are one user message, the
   * results first; the failed one says so; the image is in its result. */
  cr_assert_str_eq(
      req.body,
      "{\"model\":\"claude-x\",\"max_tokens\":1000,\"stream\":true,"
      "\"system\":\"Be brief.\",\"tools\":[{\"name\":\"create_shape\","
      "\"description\":\"Create a shape.\",\"input_schema\":{\"type\":"
      "\"object\"}}],\"messages\":["
      "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a red "
      "ball\"}]},"
      "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":"
      "\"Adding it.\"},{\"type\":\"tool_use\",\"id\":\"call_1\",\"name\":"
      "\"create_shape\",\"input\":{\"id\":\"ball\"}},{\"type\":\"tool_use\","
      "\"id\":\"call_2\",\"name\":\"render\",\"input\":{}}]},"
      "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_"
      "id\":\"call_1\",\"content\":[{\"type\":\"text\",\"text\":\"{\\\"success"
      "\\\":false,\\\"error\\\":\\\"/type: missing\\\"}\"}],\"is_error\":true},"
      "{\"type\":\"tool_result\",\"tool_use_id\":\"call_2\",\"content\":[{"
      "\"type\":\"text\",\"text\":\"{\\\"success\\\":true}\"},{\"type\":"
      "\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\","
      "\"data\":\"iVBORw0K\"}}]},"
      "{\"type\":\"text\",\"text\":\"thanks\"}]}]}");
  atl_provider_req_free(&req);
  /* No key, no x-api-key; no budget configured, the default one (the API
   * requires max_tokens); no system prompt, no "system". */
  cfg.api_key = NULL;
  cfg.max_tokens = 0;
  cr_assert_eq(atl_provider_build(&atl_provider_anthropic, &cfg, "m", NULL, h,
                                  NULL, &req),
               0);
  cr_assert_null(req.headers[3]);
  cr_assert(strstr(req.body, "\"max_tokens\":4096,") != NULL);
  cr_assert(strstr(req.body, "\"system\"") == NULL);
  cr_assert(strstr(req.body, "\"tools\"") == NULL);
  atl_provider_req_free(&req);
  json_object_put(h);
  json_object_put(tools);
}

Test(anthropic, signed_thinking_goes_back_and_unsigned_does_not) {
  atl_provider_cfg_t cfg = {.base_url = "http://h", .max_tokens = 10};
  json_object *h = signed_history("anthropic");
  atl_provider_req_t req;
  cr_assert_eq(atl_provider_build(&atl_provider_anthropic, &cfg, "m", NULL, h,
                                  NULL, &req),
               0);
  cr_assert_str_eq(
      req.body,
      "{\"model\":\"m\",\"max_tokens\":10,\"stream\":true,\"messages\":["
      "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]},"
      "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\","
      "\"thinking\":\"Plan.\",\"signature\":\"sig_t\"},{\"type\":\"text\","
      "\"text\":\"On it.\"},{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":"
      "\"render\",\"input\":{}}]},"
      "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_"
      "id\":\"c1\",\"content\":[{\"type\":\"text\",\"text\":\"{\\\"success\\\":"
      "true}\"}]}]},"
      "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":"
      "\"Done.\"}]}]}");
  atl_provider_req_free(&req);
  json_object_put(h);
  /* Another provider's signatures never go to Anthropic (it would refuse
   * them): a session that changed provider goes on. */
  h = signed_history("gemini");
  cr_assert_eq(atl_provider_build(&atl_provider_anthropic, &cfg, "m", NULL, h,
                                  NULL, &req),
               0);
  cr_assert(strstr(req.body, "thinking") == NULL &&
                strstr(req.body, "sig_") == NULL &&
                strstr(req.body, "\"On it.\"") != NULL,
            "%s", req.body);
  atl_provider_req_free(&req);
  json_object_put(h);
}

/* What the API streams for thinking, a text and two parallel calls, as its
 * streaming documentation shows the events: each content block opened,
 * filled by deltas and closed by index; the thinking's signature in a
 * signature_delta before its block closes; tool input as partial JSON;
 * the stop reason and the output count in message_delta. */
static const char *const ANTHROPIC_STREAM =
    "event: message_start\n"
    "data: {\"type\": \"message_start\", \"message\": {\"id\": "
    "\"msg_01XFDUDYJgAACzvnptvVoYEL\", \"type\": \"message\", \"role\": "
    "\"assistant\", \"content\": [], \"model\": \"claude-sonnet-4-5\", "
    "\"stop_reason\": null, \"stop_sequence\": null, \"usage\": "
    "{\"input_tokens\": 120, \"output_tokens\": 1}}}\n\n"
    "event: content_block_start\n"
    "data: {\"type\": \"content_block_start\", \"index\": 0, "
    "\"content_block\": {\"type\": \"thinking\", \"thinking\": \"\"}}\n\n"
    "event: ping\n"
    "data: {\"type\": \"ping\"}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": "
    "{\"type\": \"thinking_delta\", \"thinking\": \"Two shapes, \"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": "
    "{\"type\": \"thinking_delta\", \"thinking\": \"two calls.\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": "
    "{\"type\": \"signature_delta\", \"signature\": "
    "\"EqQBCgIYAhIM1gbcDa9GJwZA2b3h\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\": \"content_block_stop\", \"index\": 0}\n\n"
    "event: content_block_start\n"
    "data: {\"type\": \"content_block_start\", \"index\": 1, "
    "\"content_block\": {\"type\": \"text\", \"text\": \"\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\": \"content_block_delta\", \"index\": 1, \"delta\": "
    "{\"type\": \"text_delta\", \"text\": \"Two \"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\": \"content_block_delta\", \"index\": 1, \"delta\": "
    "{\"type\": \"text_delta\", \"text\": \"balls.\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\": \"content_block_stop\", \"index\": 1}\n\n"
    "event: content_block_start\n"
    "data: {\"type\": \"content_block_start\", \"index\": 2, "
    "\"content_block\": {\"type\": \"tool_use\", \"id\": "
    "\"toolu_01A09q90qw90lq917835lq9\", \"name\": \"create_shape\", "
    "\"input\": {}}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\": \"content_block_delta\", \"index\": 2, \"delta\": "
    "{\"type\": \"input_json_delta\", \"partial_json\": \"\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\": \"content_block_delta\", \"index\": 2, \"delta\": "
    "{\"type\": \"input_json_delta\", \"partial_json\": \"{\\\"id\\\": "
    "\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\": \"content_block_delta\", \"index\": 2, \"delta\": "
    "{\"type\": \"input_json_delta\", \"partial_json\": \"\\\"a\\\"}\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\": \"content_block_stop\", \"index\": 2}\n\n"
    "event: content_block_start\n"
    "data: {\"type\": \"content_block_start\", \"index\": 3, "
    "\"content_block\": {\"type\": \"tool_use\", \"id\": "
    "\"toolu_01B7kBrSqv7dnzeNp3ZsK5rM\", \"name\": \"create_shape\", "
    "\"input\": {}}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\": \"content_block_delta\", \"index\": 3, \"delta\": "
    "{\"type\": \"input_json_delta\", \"partial_json\": \"{\\\"id\\\": "
    "\\\"b\\\"}\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\": \"content_block_stop\", \"index\": 3}\n\n"
    "event: message_delta\n"
    "data: {\"type\": \"message_delta\", \"delta\": {\"stop_reason\": "
    "\"tool_use\", \"stop_sequence\": null}, \"usage\": {\"output_tokens\": "
    "31}}\n\n"
    "event: message_stop\n"
    "data: {\"type\": \"message_stop\"}\n\n";

Test(anthropic, a_streamed_turn_with_thinking_and_parallel_calls) {
  atl_turn_t t;
  atl_turn_init(&t);
  feed_t f = {0};
  cr_assert_eq(feed(&atl_provider_anthropic, &t, &f, ANTHROPIC_STREAM), 0);
  cr_assert(t.done);
  cr_assert_null(t.error);
  cr_assert_str_eq(f.streamed, "Two balls.", "text streams as it comes");
  json_object *m = atl_turn_message(&t);
  cr_assert_str_eq(
      json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN),
      "{\"role\":\"model\",\"parts\":[{\"type\":\"thinking\",\"text\":\"Two "
      "shapes, two calls.\",\"signature\":\"EqQBCgIYAhIM1gbcDa9GJwZA2b3h\"},"
      "{\"type\":\"text\",\"text\":\"Two balls.\"},{\"type\":\"tool_call\","
      "\"id\":\"toolu_01A09q90qw90lq917835lq9\",\"name\":\"create_shape\","
      "\"arguments\":{\"id\":\"a\"}},{\"type\":\"tool_call\",\"id\":"
      "\"toolu_01B7kBrSqv7dnzeNp3ZsK5rM\",\"name\":\"create_shape\","
      "\"arguments\":{\"id\":\"b\"}}],\"usage\":{\"input_tokens\":120,"
      "\"output_tokens\":31},\"stop_reason\":\"tool_use\"}");
  json_object_put(m);
  atl_provider_anthropic.turn_free(&t);
  cr_assert_null(t.priv);
  atl_turn_free(&t);
}

/* Interleaved thinking (Claude 4): several thinking blocks in one answer,
 * each with its own signature (one in two pieces), a redacted block among
 * them, text between. The API refuses the next turn unless every block
 * comes back as it came and where it came. */
static const char *const ANTHROPIC_INTERLEAVED =
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"usage\":"
    "{\"input_tokens\":9}}}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,"
    "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
    "{\"type\":\"thinking_delta\",\"thinking\":\"First.\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
    "{\"type\":\"signature_delta\",\"signature\":\"sigA\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":1,"
    "\"content_block\":{\"type\":\"text\",\"text\":\"Looking.\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":2,"
    "\"content_block\":{\"type\":\"redacted_thinking\",\"data\":"
    "\"EmwKAhgBEgy3va3pzix\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":2}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":3,"
    "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":"
    "{\"type\":\"thinking_delta\",\"thinking\":\"Then.\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":"
    "{\"type\":\"signature_delta\",\"signature\":\"sigB1\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":"
    "{\"type\":\"signature_delta\",\"signature\":\"sigB2\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":3}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":4,"
    "\"content_block\":{\"type\":\"tool_use\",\"id\":\"tu_1\",\"name\":"
    "\"render\",\"input\":{}}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":4}\n\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
    "\"tool_use\"},\"usage\":{\"output_tokens\":5}}\n\n"
    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}\n\n";

Test(anthropic, interleaved_thinking_goes_back_block_for_block) {
  atl_turn_t t;
  atl_turn_init(&t);
  feed_t f = {0};
  cr_assert_eq(feed(&atl_provider_anthropic, &t, &f, ANTHROPIC_INTERLEAVED), 0);
  cr_assert_null(t.error);
  json_object *m = atl_turn_message(&t);
  cr_assert_str_eq(
      json_object_to_json_string_ext(json_object_object_get(m, "parts"),
                                     JSON_C_TO_STRING_PLAIN),
      "[{\"type\":\"thinking\",\"text\":\"First.\",\"signature\":\"sigA\"},"
      "{\"type\":\"text\",\"text\":\"Looking.\"},"
      "{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va3pzix\"},"
      "{\"type\":\"thinking\",\"text\":\"Then.\",\"signature\":"
      "\"sigB1sigB2\"},"
      "{\"type\":\"tool_call\",\"id\":\"tu_1\",\"name\":\"render\","
      "\"arguments\":{}}]");
  /* And back to the API, in the next request (the loop tags the answer
   * with its provider). */
  json_object_object_add(m, "provider", json_object_new_string("anthropic"));
  json_object *h = json_object_new_array();
  json_object_array_add(h, parse("{\"role\":\"user\",\"parts\":[{\"type\":"
                                 "\"text\",\"text\":\"go\"}]}"));
  json_object_array_add(h, m);
  atl_provider_cfg_t cfg = {.base_url = "http://h", .max_tokens = 10};
  atl_provider_req_t req;
  cr_assert_eq(atl_provider_build(&atl_provider_anthropic, &cfg, "m", NULL, h,
                                  NULL, &req),
               0);
  cr_assert(strstr(req.body, "{\"role\":\"assistant\",\"content\":["
                             "{\"type\":\"thinking\",\"thinking\":\"First.\","
                             "\"signature\":\"sigA\"},"
                             "{\"type\":\"text\",\"text\":\"Looking.\"},"
                             "{\"type\":\"redacted_thinking\",\"data\":"
                             "\"EmwKAhgBEgy3va3pzix\"},"
                             "{\"type\":\"thinking\",\"thinking\":\"Then.\","
                             "\"signature\":\"sigB1sigB2\"},"
                             "{\"type\":\"tool_use\",\"id\":\"tu_1\",\"name\":"
                             "\"render\",\"input\":{}}]}") != NULL,
            "%s", req.body);
  atl_provider_req_free(&req);
  json_object_put(h);
  atl_provider_anthropic.turn_free(&t);
  atl_turn_free(&t);
}

/* A delta that does not fit its block is a protocol error, not a crash or
 * a signature on the wrong block. */
Test(anthropic, a_signature_for_a_text_block_is_an_error) {
  atl_turn_t t;
  atl_turn_init(&t);
  feed_t f = {0};
  cr_assert_eq(
      feed(&atl_provider_anthropic, &t, &f,
           "event: content_block_start\n"
           "data: {\"type\":\"content_block_start\",\"index\":0,"
           "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
           "event: content_block_delta\n"
           "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
           "{\"type\":\"signature_delta\",\"signature\":\"x\"}}\n\n"),
      1);
  cr_assert_str_eq(t.error, "signature_delta for content block 0, not a "
                            "thinking block");
  atl_provider_anthropic.turn_free(&t);
  atl_turn_free(&t);
}

Test(anthropic, broken_streams_are_errors) {
  atl_turn_t t;
  atl_turn_init(&t);
  feed_t f = {0};
  cr_assert_eq(feed(&atl_provider_anthropic, &t, &f,
                    "event: message_start\n"
                    "data: {\"type\":\"message_start\",\"message\":{}}\n\n"
                    "event: content_block_start\n"
                    "data: {\"type\":\"content_block_start\",\"index\n\n"),
               1);
  cr_assert_str_eq(t.error,
                   "the stream sent malformed JSON (36 bytes, starting "
                   "{\"type\":\"content_block_s)");
  cr_assert_not(t.done);
  atl_provider_anthropic.turn_free(&t);
  atl_turn_free(&t);
  /* An error event in the middle of a 200 answer (the API's "overloaded"
   * comes this way). */
  atl_turn_init(&t);
  feed_t g = {0};
  cr_assert_eq(
      feed(&atl_provider_anthropic, &t, &g,
           "event: content_block_start\n"
           "data: {\"type\":\"content_block_start\",\"index\":0,"
           "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
           "event: content_block_delta\n"
           "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{"
           "\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n"
           "event: error\n"
           "data: {\"type\": \"error\", \"error\": {\"type\": "
           "\"overloaded_error\", \"message\": \"Overloaded\"}}\n\n"),
      1);
  cr_assert_str_eq(t.error, "the provider reported an error: Overloaded "
                            "(overloaded_error)");
  cr_assert_str_eq(g.streamed, "Hel");
  cr_assert_not(t.done);
  atl_provider_anthropic.turn_free(&t);
  atl_turn_free(&t);
  /* Tool input for a block that never started would be lost: an error. */
  atl_turn_init(&t);
  feed_t h = {0};
  cr_assert_eq(feed(&atl_provider_anthropic, &t, &h,
                    "event: content_block_delta\n"
                    "data: {\"type\":\"content_block_delta\",\"index\":4,"
                    "\"delta\":{\"type\":\"input_json_delta\","
                    "\"partial_json\":\"{}\"}}\n\n"),
               1);
  cr_assert_str_eq(t.error, "a delta for content block 4, never started");
  atl_provider_anthropic.turn_free(&t);
  atl_turn_free(&t);
  /* The body of an error status; the length is what counts, not a NUL. */
  const char *body = "{\"type\":\"error\",\"error\":{\"type\":\"not_found_"
                     "error\",\"message\":\"model: claude-x\"}}trailing";
  char *msg = atl_provider_anthropic.error_message(
      body, strlen(body) - strlen("trailing"));
  cr_assert_str_eq(msg, "model: claude-x (not_found_error)");
  free(msg);
  cr_assert_null(atl_provider_anthropic.error_message("<html>", 6));
  cr_assert_null(atl_provider_anthropic.error_message("{\"error\":\"x\"}", 13));
}

/* --- Gemini ------------------------------------------------------------- */

/* TOOLS, and a tool whose schema Gemini would refuse as it is. */
static const char *const GEMINI_TOOLS =
    "[{\"name\":\"create_shape\",\"description\":\"Create a shape.\","
    "\"input_schema\":{\"type\":\"object\"}},"
    "{\"name\":\"set_camera\",\"description\":\"Aim the camera.\","
    "\"input_schema\":{\"type\":\"object\",\"properties\":{\"vfov\":{"
    "\"type\":\"number\",\"exclusiveMinimum\":0,\"maximum\":180,\"default\":"
    "45}},\"required\":[\"vfov\"],\"additionalProperties\":false}}]";

Test(gemini, the_request_answers_calls_with_function_responses) {
  atl_provider_cfg_t cfg = {.name = "g",
                            .type = "gemini",
                            .base_url = "http://127.0.0.1:9",
                            .api_key = "AIza-test",
                            .max_tokens = 1000};
  json_object *h = parse(HISTORY), *tools = parse(GEMINI_TOOLS);
  atl_provider_req_t req;
  cr_assert_eq(atl_provider_build(&atl_provider_gemini, &cfg, "gemini-x",
                                  "Be brief.", h, tools, &req),
               0);
  cr_assert_str_eq(req.url, "http://127.0.0.1:9/v1beta/models/gemini-x:"
                            "streamGenerateContent?alt=sse");
  cr_assert_str_eq(req.headers[0], "Content-Type: application/json");
  cr_assert_str_eq(req.headers[1], "Accept: text/event-stream");
  cr_assert_str_eq(req.headers[2], "x-goog-api-key: AIza-test");
  cr_assert_null(req.headers[3]);
  /* The calls' ids are not Gemini's (the history does not say it gave
   * them): they stay out. The results are functionResponses with the
   * envelope as an object, the
   * image an inlineData part after them, the user's "thanks" in the same
   * user turn; the tool without parameters has no "parametersJsonSchema",
   * the other one's schema is the JSON Schema Gemini documents (the
   * exclusive bound as the nearest inclusive one, the default in words). */
  cr_assert_str_eq(
      req.body,
      "{\"systemInstruction\":{\"parts\":[{\"text\":\"Be brief.\"}]},"
      "\"contents\":["
      "{\"role\":\"user\",\"parts\":[{\"text\":\"a red ball\"}]},"
      "{\"role\":\"model\",\"parts\":[{\"text\":\"Adding it.\"},"
      "{\"functionCall\":{\"name\":\"create_shape\",\"args\":{\"id\":"
      "\"ball\"}}},{\"functionCall\":{\"name\":\"render\","
      "\"args\":{}}}]},"
      "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":"
      "\"create_shape\",\"response\":{\"success\":false,"
      "\"error\":\"/type: missing\"}}},{\"functionResponse\":{\"name\":"
      "\"render\",\"response\":{\"success\":true}}},"
      "{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"iVBORw0K\"}},"
      "{\"text\":\"thanks\"}]}],"
      "\"tools\":[{\"functionDeclarations\":[{\"name\":\"create_shape\","
      "\"description\":\"Create a shape.\"},{\"name\":\"set_camera\","
      "\"description\":\"Aim the camera.\",\"parametersJsonSchema\":{"
      "\"type\":\"object\",\"properties\":{\"vfov\":{\"type\":\"number\","
      "\"minimum\":0,\"maximum\":180,\"description\":\"Default: 45.\"}},"
      "\"required\":[\"vfov\"],\"additionalProperties\":false}}]}],"
      "\"generationConfig\":{\"maxOutputTokens\":1000}}");
  atl_provider_req_free(&req);
  cfg.api_key = NULL;
  cfg.max_tokens = 0;
  cr_assert_eq(
      atl_provider_build(&atl_provider_gemini, &cfg, "m", NULL, h, NULL, &req),
      0);
  cr_assert_null(req.headers[2]);
  cr_assert(strstr(req.body, "systemInstruction") == NULL);
  cr_assert(strstr(req.body, "generationConfig") == NULL);
  cr_assert(strstr(req.body, "\"tools\"") == NULL);
  atl_provider_req_free(&req);
  json_object_put(h);
  json_object_put(tools);
}

Test(gemini, thought_signatures_go_back_where_they_came_from) {
  atl_provider_cfg_t cfg = {.base_url = "http://h"};
  json_object *h = signed_history("gemini");
  atl_provider_req_t req;
  cr_assert_eq(
      atl_provider_build(&atl_provider_gemini, &cfg, "m", NULL, h, NULL, &req),
      0);
  /* The thought summaries stay out; the call's signature is on its
   * functionCall part, the text's on the text. */
  cr_assert_str_eq(
      req.body,
      "{\"contents\":["
      "{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]},"
      "{\"role\":\"model\",\"parts\":[{\"text\":\"On it.\",\"thoughtSignature"
      "\":\"sig_t\"},{\"functionCall\":{\"name\":\"render\",\"args\":{},"
      "\"id\":\"c1\"},\"thoughtSignature\":\"sig_c\"}]},"
      "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":"
      "\"render\",\"id\":\"c1\",\"response\":{\"success\":true}}}]},"
      "{\"role\":\"model\",\"parts\":[{\"text\":\"Done.\"}]}]}");
  atl_provider_req_free(&req);
  json_object_put(h);
  /* Another provider's signatures and call ids stay with it. */
  h = signed_history("anthropic");
  cr_assert_eq(
      atl_provider_build(&atl_provider_gemini, &cfg, "m", NULL, h, NULL, &req),
      0);
  cr_assert_str_eq(
      req.body,
      "{\"contents\":["
      "{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]},"
      "{\"role\":\"model\",\"parts\":[{\"text\":\"On it.\"},{\"functionCall\":"
      "{\"name\":\"render\",\"args\":{}}}]},"
      "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":"
      "\"render\",\"response\":{\"success\":true}}}]},"
      "{\"role\":\"model\",\"parts\":[{\"text\":\"Done.\"}]}]}");
  atl_provider_req_free(&req);
  json_object_put(h);
}

/* What streamGenerateContent?alt=sse sends for a thought summary, a text
 * and two parallel calls (gemini-2.5 with includeThoughts): each event a
 * whole GenerateContentResponse, lines ending in CRLF; the calls come
 * whole, the thought signature on the first; no ids; finishReason STOP
 * even for calls, on the last chunk, which also has the final usage. */
static const char *const GEMINI_STREAM =
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": "
    "\"**Placing two balls**\\n\\nThe user wants two.\",\"thought\": "
    "true}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": "
    "{\"promptTokenCount\": 120,\"totalTokenCount\": 150,"
    "\"promptTokensDetails\": [{\"modality\": \"TEXT\",\"tokenCount\": "
    "120}],\"thoughtsTokenCount\": 30},\"modelVersion\": "
    "\"gemini-2.5-flash\",\"responseId\": \"w5hUaKXUL8uSxN8P0Ne4wQg\"}\r\n"
    "\r\n"
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Two "
    "\"}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": "
    "{\"promptTokenCount\": 120,\"candidatesTokenCount\": 1,"
    "\"totalTokenCount\": 151,\"thoughtsTokenCount\": 30},\"modelVersion\": "
    "\"gemini-2.5-flash\",\"responseId\": \"w5hUaKXUL8uSxN8P0Ne4wQg\"}\r\n"
    "\r\n"
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": "
    "\"balls.\"}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": "
    "{\"promptTokenCount\": 120,\"candidatesTokenCount\": 3,"
    "\"totalTokenCount\": 153,\"thoughtsTokenCount\": 30},\"modelVersion\": "
    "\"gemini-2.5-flash\",\"responseId\": \"w5hUaKXUL8uSxN8P0Ne4wQg\"}\r\n"
    "\r\n"
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"functionCall\": "
    "{\"name\": \"create_shape\",\"args\": {\"id\": \"a\"}},"
    "\"thoughtSignature\": \"CiQB0e2Kb3dRh+BYdbZvmulSN2Pwwh\"},"
    "{\"functionCall\": {\"name\": \"create_shape\",\"args\": {\"id\": "
    "\"b\"}}}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": "
    "0}],\"usageMetadata\": {\"promptTokenCount\": 120,"
    "\"candidatesTokenCount\": 31,\"totalTokenCount\": 181,"
    "\"thoughtsTokenCount\": 30},\"modelVersion\": \"gemini-2.5-flash\","
    "\"responseId\": \"w5hUaKXUL8uSxN8P0Ne4wQg\"}\r\n\r\n";

Test(gemini, a_streamed_turn_with_a_thought_signature_and_parallel_calls) {
  atl_turn_t t;
  atl_turn_init(&t);
  feed_t f = {0};
  cr_assert_eq(feed(&atl_provider_gemini, &t, &f, GEMINI_STREAM), 0);
  cr_assert(t.done);
  cr_assert_null(t.error);
  cr_assert_str_eq(f.streamed, "Two balls.", "thoughts are not the text");
  json_object *m = atl_turn_message(&t);
  /* Gemini named neither call: each gets an id of its own, made here, so
   * that its result answers it by id with every provider. */
  json_object *parts = json_object_object_get(m, "parts");
  char ids[2][32];
  for (int i = 0; i < 2; i++) {
    json_object *c = json_object_array_get_idx(parts, (size_t)i + 2);
    snprintf(ids[i], sizeof(ids[i]), "%s",
             json_object_get_string(json_object_object_get(c, "id")));
    cr_assert(strncmp(ids[i], "atl_", 4) == 0 && strlen(ids[i]) == 24, "%s",
              ids[i]);
    cr_assert(json_object_get_boolean(json_object_object_get(c, "made_id")));
    json_object_object_del(c, "id");
    json_object_object_del(c, "made_id");
  }
  cr_assert_str_neq(ids[0], ids[1]);
  cr_assert_str_eq(
      json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN),
      "{\"role\":\"model\",\"parts\":[{\"type\":\"thinking\",\"text\":"
      "\"**Placing two balls**\\n\\nThe user wants two.\"},{\"type\":"
      "\"text\",\"text\":\"Two balls.\"},{\"type\":\"tool_call\","
      "\"name\":\"create_shape\",\"arguments\":{\"id\":\"a\"},"
      "\"signature\":\"CiQB0e2Kb3dRh+BYdbZvmulSN2Pwwh\"},{\"type\":"
      "\"tool_call\",\"name\":\"create_shape\",\"arguments\":"
      "{\"id\":\"b\"}}],\"usage\":{\"input_tokens\":120,\"output_tokens\":"
      "31},\"stop_reason\":\"STOP\"}");
  json_object_put(m);
  atl_turn_free(&t);
  /* An id Gemini gives is kept; a signature on a part without a call is
   * the thinking's, in the place it came. */
  atl_turn_init(&t);
  feed_t g = {0};
  cr_assert_eq(feed(&atl_provider_gemini, &t, &g,
                    "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":"
                    "\"Done.\"},{\"text\":\"\",\"thoughtSignature\":\"Cs0B\"},"
                    "{\"functionCall\":{\"id\":\"fc_1\",\"name\":\"render\","
                    "\"args\":{}}}],\"role\":\"model\"},\"finishReason\":"
                    "\"STOP\"}]}\r\n\r\n"),
               0);
  m = atl_turn_message(&t);
  cr_assert_str_eq(
      json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN),
      "{\"role\":\"model\",\"parts\":[{\"type\":\"text\",\"text\":"
      "\"Done.\"},{\"type\":\"thinking\",\"text\":\"\",\"signature\":"
      "\"Cs0B\"},{\"type\":\"tool_call\",\"id\":\"fc_1\",\"name\":"
      "\"render\",\"arguments\":{}}],\"stop_reason\":\"STOP\"}");
  json_object_put(m);
  atl_turn_free(&t);
}

Test(gemini, broken_streams_are_errors) {
  atl_turn_t t;
  atl_turn_init(&t);
  feed_t f = {0};
  cr_assert_eq(feed(&atl_provider_gemini, &t, &f,
                    "data: {\"candidates\":[{\"content\":{\"parts\":[{"
                    "\"text\":\"a\"}]}}]}\r\n\r\n"
                    "data: {\"candidates\":[{\"cont\r\n\r\n"),
               1);
  cr_assert_str_eq(t.error,
                   "the stream sent malformed JSON (21 bytes, starting "
                   "{\"candidates\":[{\"cont)");
  cr_assert_not(t.done);
  atl_turn_free(&t);
  /* An error in the middle of a 200 answer. */
  atl_turn_init(&t);
  feed_t g = {0};
  cr_assert_eq(feed(&atl_provider_gemini, &t, &g,
                    "data: {\"candidates\":[{\"content\":{\"parts\":[{"
                    "\"text\":\"Hel\"}]}}]}\r\n\r\n"
                    "data: {\"error\": {\"code\": 503, \"message\": \"The "
                    "model is overloaded. Please try again later.\", "
                    "\"status\": \"UNAVAILABLE\"}}\r\n\r\n"),
               1);
  cr_assert_str_eq(t.error, "the provider reported an error: The model is "
                            "overloaded. Please try again later. "
                            "(UNAVAILABLE)");
  cr_assert_str_eq(g.streamed, "Hel");
  cr_assert_not(t.done);
  atl_turn_free(&t);
  /* A refused prompt has no candidate, hence no finishReason: the stream
   * ends there, a refusal the loop reports (agent_stop.c). */
  atl_turn_init(&t);
  feed_t h = {0};
  cr_assert_eq(feed(&atl_provider_gemini, &t, &h,
                    "data: {\"promptFeedback\": {\"blockReason\": "
                    "\"PROHIBITED_CONTENT\"},\"usageMetadata\": "
                    "{\"promptTokenCount\": 7,\"totalTokenCount\": 7}}"
                    "\r\n\r\n"),
               0);
  cr_assert(t.done);
  cr_assert_str_eq(t.stop_reason, "prompt_blocked");
  cr_assert_str_eq(t.stop_message, "PROHIBITED_CONTENT");
  cr_assert_eq(atl_turn_stop_kind(t.stop_reason), ATL_STOP_REFUSAL);
  atl_turn_free(&t);
  const char *body = "{\n  \"error\": {\n    \"code\": 400,\n    "
                     "\"message\": \"API key not valid. Please pass a valid "
                     "API key.\",\n    \"status\": \"INVALID_ARGUMENT\"\n  "
                     "}\n}\n";
  char *msg = atl_provider_gemini.error_message(body, strlen(body));
  cr_assert_str_eq(msg, "API key not valid. Please pass a valid API key. "
                        "(INVALID_ARGUMENT)");
  free(msg);
  /* Without alt=sse, the error comes in an array. */
  body = "[{\"error\":{\"code\":429,\"message\":\"Resource has been "
         "exhausted\",\"status\":\"RESOURCE_EXHAUSTED\"}}]";
  msg = atl_provider_gemini.error_message(body, strlen(body));
  cr_assert_str_eq(msg, "Resource has been exhausted (RESOURCE_EXHAUSTED)");
  free(msg);
  cr_assert_null(atl_provider_gemini.error_message("<html>", 6));
}

Test(providers, every_type_is_found) {
  cr_assert_eq(atl_provider_find("openai"), &atl_provider_openai);
  cr_assert_eq(atl_provider_find("anthropic"), &atl_provider_anthropic);
  cr_assert_eq(atl_provider_find("gemini"), &atl_provider_gemini);
  cr_assert_null(atl_provider_find("replay"));
  cr_assert_null(atl_provider_find(NULL));
}
