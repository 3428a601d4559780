/* Fuzz target: the MCP front's handling of one message from a client
 * (mcp/mcp.c), the bytes an MCP client writes to `atelierctl mcp`. The
 * server points at a socket that does not exist, so a request that would
 * reach atelierd (tools/list, tools/call) ends in the "not answering"
 * error, and everything before it (JSON-RPC checks, the eras, the modern
 * envelope, the methods) is what runs. Whatever the bytes: no crash, no
 * leak, an answer only for a request with a usable id, and every answer a
 * JSON-RPC 2.0 response with exactly one of result and error.
 *
 * The same message then goes through the HTTP transport's checks
 * (mcp/mcp_http.c) with the headers its "_h" member names (accept,
 * version, method, name: whatever the fuzzer puts there), and through a
 * shared server (the bridge's), with the session id its "_h".sid names:
 * an answer or none, as above; a header refusal always an error with 400
 * or 406; and a session id is only ever read back when it was made with
 * the key, never from the fuzzer's bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_answer(json_object *msg, json_object *answer) {
  json_object *v = NULL, *id = NULL, *aid = NULL;
  if (!json_object_is_type(answer, json_type_object) ||
      !json_object_object_get_ex(answer, "jsonrpc", &v) ||
      strcmp(json_object_get_string(v), "2.0") != 0)
    abort();
  int has_result = json_object_object_get_ex(answer, "result", NULL);
  int has_error = json_object_object_get_ex(answer, "error", NULL);
  if (has_result == has_error || !json_object_object_get_ex(answer, "id", &aid))
    abort();
  /* A result answers a request whose id it repeats. */
  if (has_result && (!json_object_is_type(msg, json_type_object) ||
                     !json_object_object_get_ex(msg, "id", &id) ||
                     !json_object_equal(id, aid)))
    abort();
}

static const char key[] =
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

static const char *hdr(json_object *h, const char *name) {
  json_object *v = NULL;
  if (h == NULL || !json_object_is_type(h, json_type_object) ||
      !json_object_object_get_ex(h, name, &v) ||
      !json_object_is_type(v, json_type_string))
    return NULL;
  return json_object_get_string(v);
}

/* The HTTP side: the header checks, the session ids, a shared server. */
static void http_side(json_object *msg) {
  static atl_mcp_t *shared;
  if (shared == NULL) {
    atl_mcp_config_t cfg = {.socket_path = "/nonexistent/atelier/api.sock",
                            .via = "fuzz",
                            .shared = 1};
    shared = atl_mcp_new(&cfg);
    if (shared == NULL)
      abort();
  }
  json_object *h = NULL;
  if (json_object_is_type(msg, json_type_object))
    json_object_object_get_ex(msg, "_h", &h);
  atl_mcp_http_t headers = {.accept = hdr(h, "accept"),
                            .protocol_version = hdr(h, "version"),
                            .method = hdr(h, "method"),
                            .name = hdr(h, "name")};
  int status = 0;
  json_object *err = atl_mcp_http_check(&headers, msg, &status);
  if (err != NULL) {
    if (status != 400 && status != 406)
      abort();
    check_answer(msg, err);
    json_object_put(err);
    return;
  }
  (void)atl_mcp_is_legacy_initialize(msg);
  (void)atl_mcp_is_legacy_request(msg);
  char sid[33], client[33], made[ATL_MCP_SID_MAX + 1];
  const char *given = hdr(h, "sid");
  /* The fuzzer cannot forge the MAC: reading its bytes must fail. */
  if (given != NULL && atl_mcp_sid_read(key, given, sid, client) == 0)
    abort();
  /* One made from its bytes reads back as it was made. */
  const char *cname = hdr(h, "client");
  if (atl_mcp_sid_make(key, "0123456789abcdef0123456789abcdef", cname, made) !=
          0 ||
      strlen(made) > ATL_MCP_SID_MAX ||
      atl_mcp_sid_read(key, made, sid, client) != 0 ||
      strcmp(sid, "0123456789abcdef0123456789abcdef") != 0 ||
      strncmp(client, cname ? cname : "", 32) != 0)
    abort();
  for (const char *p = made; *p; p++)
    if (*p < 0x21 || *p > 0x7e)
      abort();
  atl_mcp_req_t r = {.cancel_fd = -1,
                     .session = hdr(h, "session") ? sid : NULL,
                     .page = "http://127.0.0.1:8080"};
  json_object *answer = atl_mcp_handle(shared, msg, &r);
  if (answer != NULL)
    check_answer(msg, answer);
  else if (r.http_status != 202 && !r.cancelled)
    abort();
  json_object_put(answer);
}

/* What atelierd runs itself for a handed-off atelierctl mcp: a call it
 * takes is a request whose answer, for any envelope, is a valid one. */
static void direct_side(json_object *msg) {
  atl_mcp_direct_t call;
  if (!atl_mcp_direct(msg, &call))
    return;
  if (call.id == NULL || call.name == NULL ||
      (call.args != NULL && !json_object_is_type(call.args, json_type_object)))
    abort();
  static const char *const envs[] = {
      "{\"success\":true,\"result\":{\"a\":1}}",
      "{\"success\":false,\"error\":\"no\"}",
      "{\"success\":true,\"images\":[{\"id\":\"x\"},7]}",
      "{}",
      "[]",
      NULL};
  for (int i = 0; envs[i] != NULL; i++) {
    json_object *env = json_tokener_parse(envs[i]);
    json_object *a =
        atl_mcp_direct_answer(&call, env, "0123456789abcdef0123456789abcdef");
    check_answer(msg, a);
    json_object_put(a);
    json_object_put(env);
  }
  char via[ATL_MCP_VIA_MAX + 1];
  atl_mcp_via("fuzz", call.client, via);
  for (const char *p = via; *p; p++)
    if (*p < 0x20 || *p > 0x7e)
      abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static atl_mcp_t *m;
  if (m == NULL) {
    atl_mcp_config_t cfg = {.socket_path = "/nonexistent/atelier/api.sock",
                            .via = "fuzz"};
    m = atl_mcp_new(&cfg);
    if (m == NULL)
      abort();
  }
  json_tokener *tok = json_tokener_new();
  json_object *msg = json_tokener_parse_ex(tok, (const char *)data, (int)size);
  int complete = json_tokener_get_error(tok) == json_tokener_success;
  json_tokener_free(tok);
  if (!complete) {
    json_object_put(msg);
    json_object *e = atl_mcp_parse_error("fuzz");
    check_answer(NULL, e);
    json_object_put(e);
    return 0;
  }
  (void)atl_mcp_is_slow(msg);
  (void)atl_mcp_is_quick(m, msg);
  (void)atl_mcp_cancelled_id(msg);
  atl_mcp_req_t r = {.cancel_fd = -1};
  json_object *answer = atl_mcp_handle(m, msg, &r);
  if (answer != NULL)
    check_answer(msg, answer);
  else if (r.http_status != 202 && !r.cancelled)
    abort(); /* no answer only for what needs none */
  json_object_put(answer);
  direct_side(msg);
  http_side(msg);
  json_object_put(msg);
  return 0;
}
