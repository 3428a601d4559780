/* The parts of a tools/call's answer that need no API socket: shared by
 * mcp_call.c and by the front atelierd runs for a handed-off `atelierctl
 * mcp` (daemon/mcp_front.c), so that a quick call answers alike whichever
 * ran it. See mcp.h. */
#include "atl-build.h"

#include <stdio.h>
#include <string.h>

#include "mcp_int.h"

json_object *atl__mcp_text_block(const char *text) {
  json_object *b = json_object_new_object();
  json_object_object_add(b, "type", json_object_new_string("text"));
  json_object_object_add(b, "text", json_object_new_string(text));
  return b;
}

json_object *atl__mcp_tool_error(json_object *id, const atl_mcp_era_t *era,
                                 const char *text) {
  json_object *content = json_object_new_array();
  json_object_array_add(content, atl__mcp_text_block(text));
  json_object *res = json_object_new_object();
  json_object_object_add(res, "content", content);
  json_object_object_add(res, "isError", json_object_new_boolean(1));
  return atl__mcp_result(id, res, era);
}

json_object *atl__mcp_result_text(json_object *result) {
  return atl__mcp_text_block(
      result
          ? json_object_to_json_string_ext(
                result, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
          : "{}");
}

json_object *atl__mcp_call_result(json_object *result, json_object *content,
                                  const char *sid) {
  json_object *res = json_object_new_object();
  json_object_object_add(res, "content", content);
  if (result != NULL && json_object_is_type(result, json_type_object))
    json_object_object_add(res, "structuredContent", json_object_get(result));
  /* Which session the call changed, for a client that goes on in it. */
  json_object *meta = json_object_new_object();
  json_object_object_add(meta, ATL_MCP_META_SESSION,
                         json_object_new_string(sid));
  json_object_object_add(res, "_meta", meta);
  return res;
}

void atl_mcp_via(const char *base, const char *client,
                 char out[ATL_MCP_VIA_MAX + 1]) {
  char via[256];
  if (client != NULL && client[0] != '\0')
    snprintf(via, sizeof(via), "%s (%s)", base, client);
  else
    snprintf(via, sizeof(via), "%s", base);
  /* atelierd takes printable ASCII; a client names itself as it likes. */
  size_t n = 0;
  for (const char *p = via; *p && n < ATL_MCP_VIA_MAX; p++)
    out[n++] = (*p >= 0x20 && *p <= 0x7e) ? *p : '?';
  out[n] = '\0';
}

int atl_mcp_direct(json_object *msg, atl_mcp_direct_t *out) {
  memset(out, 0, sizeof(*out));
  json_object *id = NULL, *params = NULL, *args = NULL, *meta = NULL;
  const char *jsonrpc = atl__mcp_str(msg, "jsonrpc");
  const char *method = atl__mcp_str(msg, "method");
  if (jsonrpc == NULL || strcmp(jsonrpc, "2.0") != 0 || method == NULL ||
      strcmp(method, "tools/call") != 0 ||
      !json_object_object_get_ex(msg, "id", &id) || !atl__mcp_id_ok(id) ||
      !json_object_object_get_ex(msg, "params", &params) ||
      !json_object_is_type(params, json_type_object))
    return 0;
  const char *name = atl__mcp_str(params, "name");
  if (name == NULL || (json_object_object_get_ex(params, "arguments", &args) &&
                       !json_object_is_type(args, json_type_object)))
    return 0;
  /* Progress is followed on a connection of its own, which only the
   * whole way has. */
  if (json_object_object_get_ex(params, "_meta", &meta) &&
      json_object_is_type(meta, json_type_object) &&
      json_object_object_get_ex(meta, "progressToken", NULL))
    return 0;
  atl_mcp_era_t era;
  json_object *err = NULL;
  int status = 0;
  if (atl__mcp_era_of(id, method, params, &era, &err, &status) != 0) {
    json_object_put(err);
    return 0;
  }
  if (era.session != NULL)
    return 0;
  out->id = id;
  out->name = name;
  out->args = args;
  out->modern = era.modern;
  out->client = era.client;
  return 1;
}

json_object *atl_mcp_direct_answer(const atl_mcp_direct_t *call,
                                   json_object *env, const char *sid) {
  atl_mcp_era_t era = {.modern = call->modern};
  json_object *ok = NULL, *result = NULL, *images = NULL;
  json_object_object_get_ex(env, "success", &ok);
  if (!json_object_get_boolean(ok)) {
    const char *e = atl__mcp_str(env, "error");
    return atl__mcp_tool_error(call->id, &era,
                               e ? e : "the tool failed without a message");
  }
  json_object_object_get_ex(env, "result", &result);
  json_object *content = json_object_new_array();
  json_object_array_add(content, atl__mcp_result_text(result));
  if (json_object_object_get_ex(env, "images", &images) &&
      json_object_is_type(images, json_type_array))
    for (size_t i = 0; i < json_object_array_length(images); i++) {
      const char *iid =
          atl__mcp_str(json_object_array_get_idx(images, i), "id");
      char line[200];
      snprintf(line, sizeof(line),
               "Image %s is on Atelier's page for session %s.", iid ? iid : "?",
               sid);
      json_object_array_add(content, atl__mcp_text_block(line));
    }
  return atl__mcp_result(call->id, atl__mcp_call_result(result, content, sid),
                         &era);
}

void atl_mcp_state(atl_mcp_t *m, char session[33],
                   char base[ATL_MCP_VIA_MAX + 1], char client[65]) {
  pthread_mutex_lock(&m->mu);
  snprintf(session, 33, "%s", m->session);
  snprintf(base, ATL_MCP_VIA_MAX + 1, "%s", m->via);
  snprintf(client, 65, "%s", m->client);
  pthread_mutex_unlock(&m->mu);
}
