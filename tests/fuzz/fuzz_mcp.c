/* Fuzz target: the MCP front's handling of one message from a client
 * (mcp/mcp.c), the bytes an MCP client writes to `atelierctl mcp`. The
 * server points at a socket that does not exist, so a request that would
 * reach atelierd (tools/list, tools/call) ends in the "not answering"
 * error, and everything before it (JSON-RPC checks, the eras, the modern
 * envelope, the methods) is what runs. Whatever the bytes: no crash, no
 * leak, an answer only for a request with a usable id, and every answer a
 * JSON-RPC 2.0 response with exactly one of result and error. */
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
  (void)atl_mcp_cancelled_id(msg);
  atl_mcp_req_t r = {.cancel_fd = -1};
  json_object *answer = atl_mcp_handle(m, msg, &r);
  if (answer != NULL)
    check_answer(msg, answer);
  else if (r.http_status != 202 && !r.cancelled)
    abort(); /* no answer only for what needs none */
  json_object_put(answer);
  json_object_put(msg);
  return 0;
}
