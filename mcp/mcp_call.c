/* tools/list and tools/call: Atelier's tools, as atelierd lists and runs
 * them, in MCP's shapes (../shared/anchors/mcp.md §4). */
#include "atl-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp_int.h"
#include "rpc_client.h"

/* atelierd answers a tools/list or a session in well under a second; the
 * tool calls themselves wait for m->call_timeout_ms. */
#define QUICK_MS 30000

/* An image whose base64 would take a result past this is not inlined:
 * Claude Desktop refuses results over 1 MB ("Tool result is too large"),
 * and the rest of the result needs room. */
#define IMAGE_INLINE_MAX (700 * 1024)

/* A new connection to atelierd for one request, whose wait the hang-up of
 * cancel_fd ends. 0, or -1 with c->errmsg. */
static int connect_daemon(atl_mcp_t *m, atl_rpcc_t *c, int cancel_fd) {
  memset(c, 0, sizeof(*c));
  c->watch_fd = cancel_fd;
  return atl_rpcc_connect(c, m->socket_path);
}

/* The answer when atelierd cannot be reached or went away mid-request. */
static json_object *daemon_gone(json_object *id, atl_rpcc_t *c,
                                atl_mcp_req_t *r) {
  r->daemon_gone = 1;
  r->http_status = 502;
  return atl__mcp_error(id, -32603, NULL,
                        "Internal error: atelierd is not answering (%s)",
                        c->errmsg[0] ? c->errmsg : "no reason given");
}

/* atelierd's tool list in MCP's form (tool.list {"wire": "mcp"}): a new
 * reference, kept in m->tools as well; NULL with c->errmsg set. */
static json_object *fetch_tools(atl_mcp_t *m, atl_rpcc_t *c) {
  json_object *params = json_object_new_object();
  json_object_object_add(params, "wire", json_object_new_string("mcp"));
  json_object *tools = NULL;
  int rc = atl_rpcc_call(c, "tool.list", params, QUICK_MS, &tools);
  if (rc == ATL_RPCC_ERROR)
    snprintf(c->errmsg, sizeof(c->errmsg), "tool.list: %s",
             c->err_message ? c->err_message : "refused");
  if (rc != ATL_RPCC_OK || !json_object_is_type(tools, json_type_array)) {
    json_object_put(tools);
    return NULL;
  }
  pthread_mutex_lock(&m->mu);
  json_object_put(m->tools);
  m->tools = json_object_get(tools);
  pthread_mutex_unlock(&m->mu);
  return tools;
}

/* The tool list, from the cache when there is one. */
static json_object *tools_of(atl_mcp_t *m, atl_rpcc_t *c) {
  pthread_mutex_lock(&m->mu);
  json_object *t = m->tools ? json_object_get(m->tools) : NULL;
  pthread_mutex_unlock(&m->mu);
  return t ? t : fetch_tools(m, c);
}

json_object *atl__mcp_tools_list(atl_mcp_t *m, json_object *id,
                                 json_object *params, const atl_mcp_era_t *era,
                                 atl_mcp_req_t *r) {
  json_object *cursor = NULL;
  if (params != NULL && json_object_object_get_ex(params, "cursor", &cursor)) {
    /* One page holds every tool, so no cursor was ever given out: "Invalid
     * cursors SHOULD result in an error with code -32602". */
    r->http_status = 400;
    return atl__mcp_error(
        id, -32602, NULL,
        "Invalid params: cursor %s is not one this server "
        "gave (its tools/list is one page: call it without "
        "a cursor)",
        json_object_to_json_string_ext(cursor, JSON_C_TO_STRING_PLAIN));
  }
  atl_rpcc_t c;
  json_object *tools = NULL;
  if (connect_daemon(m, &c, -1) != 0 || (tools = fetch_tools(m, &c)) == NULL) {
    json_object *e = daemon_gone(id, &c, r);
    atl_rpcc_close(&c);
    return e;
  }
  atl_rpcc_close(&c);
  json_object *res = json_object_new_object();
  json_object_object_add(res, "tools", tools);
  if (era->modern) {
    json_object_object_add(res, "ttlMs", json_object_new_int(ATL_MCP_TTL_MS));
    json_object_object_add(res, "cacheScope", json_object_new_string("public"));
  }
  return atl__mcp_result(id, res, era);
}

/* The session the calls go to, made at the first call when the server was
 * given none. 0 with out set, or -1 with c->errmsg. */
static int session_of(atl_mcp_t *m, atl_rpcc_t *c, char *out, size_t size) {
  static pthread_mutex_t making = PTHREAD_MUTEX_INITIALIZER;
  /* One maker at a time, so that two first calls at once share one
   * session rather than leave an empty one behind. */
  pthread_mutex_lock(&making);
  pthread_mutex_lock(&m->mu);
  snprintf(out, size, "%s", m->session);
  pthread_mutex_unlock(&m->mu);
  int rc = 0;
  if (out[0] == '\0') {
    json_object *res = NULL;
    rc = atl_rpcc_call(c, "session.create", NULL, QUICK_MS, &res);
    const char *sid = rc == ATL_RPCC_OK ? atl__mcp_str(res, "id") : NULL;
    if (sid != NULL) {
      pthread_mutex_lock(&m->mu);
      snprintf(m->session, sizeof(m->session), "%s", sid);
      pthread_mutex_unlock(&m->mu);
      snprintf(out, size, "%s", sid);
      rc = 0;
    } else {
      if (rc == ATL_RPCC_ERROR)
        snprintf(c->errmsg, sizeof(c->errmsg), "session.create: %s",
                 c->err_message ? c->err_message : "refused");
      rc = -1;
    }
    json_object_put(res);
  }
  pthread_mutex_unlock(&making);
  return rc;
}

static json_object *text_block(const char *text) {
  json_object *b = json_object_new_object();
  json_object_object_add(b, "type", json_object_new_string("text"));
  json_object_object_add(b, "text", json_object_new_string(text));
  return b;
}

/* A tool execution error: the model sees it and may correct its call. */
static json_object *tool_error(json_object *id, const atl_mcp_era_t *era,
                               const char *text) {
  json_object *content = json_object_new_array();
  json_object_array_add(content, text_block(text));
  json_object *res = json_object_new_object();
  json_object_object_add(res, "content", content);
  json_object_object_add(res, "isError", json_object_new_boolean(1));
  return atl__mcp_result(id, res, era);
}

/* The images a call attached, as image blocks (fetched with image.get,
 * whose base64 MCP takes as it is) and a line each saying what they are.
 * -1 when atelierd went away meanwhile. */
static int add_images(atl_rpcc_t *c, json_object *images, json_object *content,
                      const char *session) {
  size_t n = json_object_array_length(images);
  for (size_t i = 0; i < n; i++) {
    json_object *img = json_object_array_get_idx(images, i);
    const char *iid = atl__mcp_str(img, "id");
    if (iid == NULL)
      continue;
    json_object *p = json_object_new_object(), *got = NULL;
    json_object_object_add(p, "id", json_object_new_string(iid));
    int rc = atl_rpcc_call(c, "image.get", p, QUICK_MS, &got);
    if (rc == ATL_RPCC_TRANSPORT)
      return -1;
    const char *data = rc == ATL_RPCC_OK ? atl__mcp_str(got, "data") : NULL;
    const char *mime = atl__mcp_str(got, "mime");
    char line[512];
    if (data != NULL && mime != NULL && strlen(data) <= IMAGE_INLINE_MAX) {
      json_object *b = json_object_new_object();
      json_object_object_add(b, "type", json_object_new_string("image"));
      json_object_object_add(b, "data", json_object_new_string(data));
      json_object_object_add(b, "mimeType", json_object_new_string(mime));
      json_object_array_add(content, b);
      snprintf(line, sizeof(line),
               "Image %s (%s): the picture above, also on Atelier's page "
               "for session %s.",
               iid, mime, session);
    } else if (data != NULL) {
      snprintf(line, sizeof(line),
               "Image %s is too large to include here (over %d kB of "
               "base64; MCP clients refuse results over 1 MB): see it on "
               "Atelier's page for session %s, or render a smaller one.",
               iid, IMAGE_INLINE_MAX / 1024, session);
    } else {
      snprintf(line, sizeof(line), "Image %s could not be read: %s", iid,
               c->err_message ? c->err_message : "atelierd did not say why");
    }
    json_object_array_add(content, text_block(line));
    json_object_put(got);
  }
  return 0;
}

json_object *atl__mcp_tools_call(atl_mcp_t *m, json_object *id,
                                 json_object *params, const atl_mcp_era_t *era,
                                 atl_mcp_req_t *r) {
  const char *name = atl__mcp_str(params, "name");
  if (name == NULL) {
    r->http_status = 400;
    return atl__mcp_error(id, -32602, NULL,
                          "Invalid params: tools/call needs params.name, the "
                          "name of a tool tools/list gives");
  }
  json_object *args = NULL;
  if (params != NULL && json_object_object_get_ex(params, "arguments", &args) &&
      args != NULL && !json_object_is_type(args, json_type_object)) {
    r->http_status = 400;
    return atl__mcp_error(
        id, -32602, NULL,
        "Invalid params: params.arguments must be an "
        "object of the tool's arguments, got %s",
        json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN));
  }
  atl_rpcc_t c;
  json_object *answer = NULL, *tools = NULL, *env = NULL;
  char sid[33];
  if (connect_daemon(m, &c, r->cancel_fd) != 0 ||
      (tools = tools_of(m, &c)) == NULL)
    goto gone;
  int known = 0;
  for (size_t i = 0; i < json_object_array_length(tools) && !known; i++) {
    const char *t = atl__mcp_str(json_object_array_get_idx(tools, i), "name");
    known = t != NULL && strcmp(t, name) == 0;
  }
  json_object_put(tools);
  if (!known) {
    /* A protocol error, as the spec's own example: the tool is not one
     * of the list, so the call cannot be a model's mistake in its
     * arguments. */
    r->http_status = 200;
    answer =
        atl__mcp_error(id, -32602, NULL,
                       "Unknown tool: %s (tools/list names the tools)", name);
    goto out;
  }
  if (session_of(m, &c, sid, sizeof(sid)) != 0) {
    if (c.err_code != 0) {
      answer = tool_error(id, era, c.errmsg);
      goto out;
    }
    goto gone;
  }
  char via[256];
  pthread_mutex_lock(&m->mu);
  if (m->client[0])
    snprintf(via, sizeof(via), "%s (%s)", m->via, m->client);
  else
    snprintf(via, sizeof(via), "%s", m->via);
  pthread_mutex_unlock(&m->mu);
  json_object *p = json_object_new_object();
  json_object_object_add(p, "session", json_object_new_string(sid));
  json_object_object_add(p, "name", json_object_new_string(name));
  json_object_object_add(
      p, "arguments", args ? json_object_get(args) : json_object_new_object());
  json_object_object_add(p, "via", json_object_new_string(via));
  int rc = atl_rpcc_call(&c, "tool.call", p, m->call_timeout_ms, &env);
  if (rc == ATL_RPCC_TRANSPORT) {
    if (c.watch_closed) {
      /* Cancelled: "SHOULD NOT respond". atelierd sees the connection
       * close and stops a long call (doc/api.md, tool.call). */
      r->cancelled = 1;
      goto out;
    }
    goto gone;
  }
  if (rc == ATL_RPCC_ERROR) {
    char msg[700];
    if (c.err_code == ATL_RPCC_NO_SESSION)
      snprintf(msg, sizeof(msg),
               "Atelier's session %s is gone (deleted): nothing can be "
               "called in it. Start atelierctl mcp again without --session "
               "for a new one.",
               sid);
    else
      snprintf(msg, sizeof(msg), "%s",
               c.err_message ? c.err_message : "atelierd refused the call");
    answer = tool_error(id, era, msg);
    goto out;
  }
  json_object *ok = NULL, *result = NULL, *images = NULL;
  json_object_object_get_ex(env, "success", &ok);
  if (!json_object_get_boolean(ok)) {
    const char *e = atl__mcp_str(env, "error");
    answer = tool_error(id, era, e ? e : "the tool failed without a message");
    goto out;
  }
  json_object_object_get_ex(env, "result", &result);
  json_object *content = json_object_new_array();
  /* "a tool that returns structured content SHOULD also return the
   * serialized JSON in a TextContent block" */
  json_object_array_add(
      content,
      text_block(result ? json_object_to_json_string_ext(
                              result, JSON_C_TO_STRING_PLAIN |
                                          JSON_C_TO_STRING_NOSLASHESCAPE)
                        : "{}"));
  if (json_object_object_get_ex(env, "images", &images) &&
      json_object_is_type(images, json_type_array) &&
      add_images(&c, images, content, sid) != 0) {
    json_object_put(content);
    goto gone;
  }
  json_object *res = json_object_new_object();
  json_object_object_add(res, "content", content);
  if (result != NULL && json_object_is_type(result, json_type_object))
    json_object_object_add(res, "structuredContent", json_object_get(result));
  answer = atl__mcp_result(id, res, era);
  goto out;
gone:
  answer = daemon_gone(id, &c, r);
out:
  json_object_put(env);
  atl_rpcc_close(&c);
  return answer;
}
