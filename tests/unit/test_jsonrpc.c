/* JSON-RPC framing and parsing: split frames, oversize frames, garbage. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"

typedef struct {
  int lines, oversize;
  char got[16][256];
} sink_t;

static int collect(int kind, const char *line, size_t len, void *user) {
  sink_t *s = user;
  if (kind == ATL_FRAME_OVERSIZE) {
    s->oversize++;
    return 0;
  }
  if (s->lines < 16 && len < 256) {
    memcpy(s->got[s->lines], line, len);
    s->got[s->lines][len] = '\0';
  }
  s->lines++;
  return 0;
}

Test(framer, frames_split_across_reads) {
  atl_framer_t f;
  sink_t s = {0};
  atl_framer_init(&f, 1024);
  const char *parts[] = {"{\"a\"", ":1}\n{\"b\":2", "}\r\n\n", "{\"c\":3}\n"};
  for (int i = 0; i < 4; i++)
    atl_framer_feed(&f, parts[i], strlen(parts[i]), collect, &s);
  cr_assert_eq(s.lines, 3);
  cr_assert_str_eq(s.got[0], "{\"a\":1}");
  cr_assert_str_eq(s.got[1], "{\"b\":2}");
  cr_assert_str_eq(s.got[2], "{\"c\":3}");
  atl_framer_free(&f);
}

Test(framer, byte_at_a_time) {
  atl_framer_t f;
  sink_t s = {0};
  atl_framer_init(&f, 1024);
  const char *msg = "{\"x\":[1,2,3]}\n{\"y\":\"z\"}\n";
  for (size_t i = 0; i < strlen(msg); i++)
    atl_framer_feed(&f, msg + i, 1, collect, &s);
  cr_assert_eq(s.lines, 2);
  cr_assert_str_eq(s.got[1], "{\"y\":\"z\"}");
  atl_framer_free(&f);
}

Test(framer, oversize_frame_is_reported_once_and_skipped) {
  atl_framer_t f;
  sink_t s = {0};
  atl_framer_init(&f, 16);
  char big[100];
  memset(big, 'x', sizeof(big));
  atl_framer_feed(&f, "{\"ok\":1}\n", 9, collect, &s);
  /* The oversize frame arrives in pieces, then a good frame follows. */
  atl_framer_feed(&f, big, 40, collect, &s);
  atl_framer_feed(&f, big, 60, collect, &s);
  atl_framer_feed(&f, "xx\n{\"ok\":2}\n", 12, collect, &s);
  cr_assert_eq(s.oversize, 1);
  cr_assert_eq(s.lines, 2);
  cr_assert_str_eq(s.got[1], "{\"ok\":2}");
  /* An oversize frame inside one read. */
  atl_framer_feed(&f, big, 50, collect, &s);
  atl_framer_feed(&f, "\n{\"ok\":3}\n", 10, collect, &s);
  cr_assert_eq(s.oversize, 2);
  cr_assert_str_eq(s.got[2], "{\"ok\":3}");
  atl_framer_free(&f);
}

/* Takes one frame, then asks to stop (a connection pausing its reading). */
static int one_then_stop(int kind, const char *line, size_t len, void *user) {
  collect(kind, line, len, user);
  return 1;
}

Test(framer, frames_left_after_a_stop_come_out_with_drain) {
  atl_framer_t f;
  sink_t s = {0};
  atl_framer_init(&f, 1024);
  const char *msg = "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\"";
  atl_framer_feed(&f, msg, strlen(msg), one_then_stop, &s);
  cr_assert_eq(s.lines, 1);
  /* No more bytes come: the frames already read must not wait for them. */
  atl_framer_drain(&f, one_then_stop, &s);
  cr_assert_eq(s.lines, 2);
  cr_assert_str_eq(s.got[1], "{\"b\":2}");
  atl_framer_drain(&f, collect, &s);
  cr_assert_eq(s.lines, 3);
  cr_assert_str_eq(s.got[2], "{\"c\":3}");
  /* The incomplete frame waits for its end. */
  atl_framer_drain(&f, collect, &s);
  cr_assert_eq(s.lines, 3);
  atl_framer_feed(&f, ":4}\n", 4, collect, &s);
  cr_assert_eq(s.lines, 4);
  cr_assert_str_eq(s.got[3], "{\"d\":4}");
  atl_framer_free(&f);
}

static int parse(const char *text, atl_rpc_request_t *req, char **err) {
  return atl_rpc_parse(text, strlen(text), req, err);
}

Test(rpc, valid_request) {
  atl_rpc_request_t req;
  char *err = NULL;
  cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tool.list\","
                     "\"params\":{}}",
                     &req, &err),
               0);
  cr_assert_str_eq(req.method, "tool.list");
  cr_assert_eq(json_object_get_int(req.id), 7);
  cr_assert_not(req.notification);
  atl_rpc_request_free(&req);
}

Test(rpc, notification_and_null_id) {
  atl_rpc_request_t req;
  char *err = NULL;
  cr_assert_eq(parse("{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", &req, &err), 0);
  cr_assert(req.notification);
  atl_rpc_request_free(&req);
  cr_assert_eq(
      parse("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}", &req, &err),
      0);
  cr_assert_not(req.notification);
  cr_assert_null(req.id);
  atl_rpc_request_free(&req);
}

static void expect_error(const char *text, int code, const char *want) {
  atl_rpc_request_t req;
  char *err = NULL;
  cr_assert_eq(parse(text, &req, &err), code, "for %s", text);
  cr_assert_not_null(err);
  json_object *resp = json_tokener_parse(err);
  cr_assert_not_null(resp, "the error response is JSON: %s", err);
  json_object *e = json_object_object_get(resp, "error");
  cr_assert_eq(json_object_get_int(json_object_object_get(e, "code")), code);
  const char *msg =
      json_object_get_string(json_object_object_get(e, "message"));
  cr_assert(strstr(msg, want) != NULL, "'%s' lacks '%s'", msg, want);
  cr_assert_eq(err[strlen(err) - 1], '\n');
  json_object_put(resp);
  free(err);
}

Test(rpc, garbage) {
  expect_error("{\"jsonrpc\":", ATL_RPC_PARSE_ERROR, "Parse error");
  expect_error("hello", ATL_RPC_PARSE_ERROR, "Parse error");
  expect_error("{} {}", ATL_RPC_PARSE_ERROR, "Parse error");
  expect_error("{\"a\": NaN}", ATL_RPC_PARSE_ERROR, "NaN and Infinity");
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\","
               "\"params\":{\"r\":[1,-Infinity]}}",
               ATL_RPC_PARSE_ERROR, "NaN and Infinity");
  expect_error("\x01\x02\xff", ATL_RPC_PARSE_ERROR, "Parse error");
  /* Invalid UTF-8 inside a string is not JSON either. */
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"\xff\xfe\"}",
               ATL_RPC_PARSE_ERROR, "Parse error");
  /* Valid multi-byte UTF-8 is fine. */
  atl_rpc_request_t req;
  char *err = NULL;
  cr_assert_eq(
      parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"caf\xc3\xa9\"}", &req,
            &err),
      0);
  cr_assert_str_eq(req.method, "caf\xc3\xa9");
  atl_rpc_request_free(&req);
}

Test(rpc, invalid_requests) {
  expect_error("[1,2]", ATL_RPC_INVALID_REQUEST, "batches");
  expect_error("42", ATL_RPC_INVALID_REQUEST, "request object");
  expect_error("{\"id\":1,\"method\":\"x\"}", ATL_RPC_INVALID_REQUEST,
               "\"jsonrpc\" must be \"2.0\"");
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}",
               ATL_RPC_INVALID_REQUEST, "\"method\" must be a string");
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"x\"}",
               ATL_RPC_INVALID_REQUEST, "\"id\" must be");
  expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":3}",
               ATL_RPC_INVALID_REQUEST, "\"params\" must be");
}

Test(rpc, responses) {
  json_object *id = json_object_new_string("a");
  json_object *res = json_object_new_object();
  size_t len = 0;
  char *line = atl_rpc_result(id, res, &len);
  cr_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}\n");
  cr_assert_eq(len, strlen(line));
  free(line);
  line = atl_rpc_result_text(NULL, "{\"success\":true}", &len);
  cr_assert_str_eq(
      line,
      "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{\"success\":true}}\n");
  free(line);
  json_object_put(id);
  json_object_put(res);
}
