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
  cr_assert_eq(
      atl_provider_openai.build(&cfg, "gpt-x", "Be brief.", h, tools, &req), 0);
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
  cr_assert_eq(atl_provider_openai.build(&cfg, "m", NULL, h, NULL, &req), 0);
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
                   "the stream sent malformed JSON: {\"choices\":[{\"delta");
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
