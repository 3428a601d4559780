/* The MCP front's protocol: JSON-RPC checks, the two eras, and the
 * methods other than tools/call (mcp_call.c). See mcp.h. */
#include "atl-build.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp_int.h"

/* The legacy versions a client may open with, newest first: "If the server
 * supports the requested protocol version, it MUST respond with the same
 * version. Otherwise ... the latest version supported by the server". The
 * official v1 SDK client accepts these four (and 2024-10-07). */
const char *const atl__mcp_legacy_versions[] = {
    ATL_MCP_LEGACY_LATEST, "2025-06-18", "2025-03-26", "2024-11-05", NULL};

static const char instructions[] =
    "Atelier builds 3D scenes, 2D optical benches and drawings. Each tool "
    "changes one Atelier session, which the user watches live on "
    "Atelier's page; render_scene and render_optics answer with the "
    "picture.";

atl_mcp_t *atl_mcp_new(const atl_mcp_config_t *cfg) {
  atl_mcp_t *m = calloc(1, sizeof(*m));
  if (m == NULL)
    return NULL;
  pthread_mutex_init(&m->mu, NULL);
  m->socket_path = strdup(cfg->socket_path ? cfg->socket_path : "");
  m->via = strdup(cfg->via ? cfg->via : "MCP");
  m->shared = cfg->shared;
  if (cfg->session != NULL && !cfg->shared) {
    snprintf(m->session, sizeof(m->session), "%s", cfg->session);
    m->fixed_session = 1;
  }
  m->call_timeout_ms =
      cfg->call_timeout_ms > 0 ? cfg->call_timeout_ms : 10 * 60 * 1000;
  if (m->socket_path == NULL || m->via == NULL) {
    atl_mcp_free(m);
    return NULL;
  }
  return m;
}

void atl_mcp_free(atl_mcp_t *m) {
  if (m == NULL)
    return;
  pthread_mutex_destroy(&m->mu);
  free(m->socket_path);
  free(m->via);
  free(m->tool_names);
  free(m->fast_names);
  for (int i = 0; i < m->n_idle; i++)
    atl_rpcc_close(&m->idle[i]);
  free(m);
}

void atl_mcp_session(atl_mcp_t *m, char *out, size_t size) {
  pthread_mutex_lock(&m->mu);
  snprintf(out, size, "%s", m->session);
  pthread_mutex_unlock(&m->mu);
}

/* ---- answers ---- */

json_object *atl_mcp_error(json_object *id, int code, json_object *data,
                           const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  json_object *e = json_object_new_object();
  json_object_object_add(e, "code", json_object_new_int(code));
  json_object_object_add(e, "message", json_object_new_string(msg));
  if (data != NULL)
    json_object_object_add(e, "data", data);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
  json_object_object_add(o, "id", id ? json_object_get(id) : NULL);
  json_object_object_add(o, "error", e);
  return o;
}

json_object *atl__mcp_result(json_object *id, json_object *result,
                             const atl_mcp_era_t *era) {
  if (era->modern) {
    /* "The result MUST include a resultType field"; servers "SHOULD
     * include" their serverInfo in every result. Legacy results have
     * neither: the v2 SDK adds them on modern requests only. */
    json_object_object_add(result, "resultType",
                           json_object_new_string("complete"));
    json_object *meta = NULL;
    if (!json_object_object_get_ex(result, "_meta", &meta)) {
      meta = json_object_new_object();
      json_object_object_add(result, "_meta", meta);
    }
    json_object_object_add(meta, "io.modelcontextprotocol/serverInfo",
                           atl__mcp_server_info());
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
  json_object_object_add(o, "id", json_object_get(id));
  json_object_object_add(o, "result", result);
  return o;
}

json_object *atl_mcp_parse_error(const char *why) {
  return atl_mcp_error(NULL, -32700, NULL,
                       "Parse error: %s (send one JSON-RPC message, as "
                       "compact JSON, per line)",
                       why);
}

json_object *atl__mcp_server_info(void) {
  json_object *s = json_object_new_object();
  json_object_object_add(s, "name", json_object_new_string("atelier"));
  json_object_object_add(s, "title", json_object_new_string("Atelier"));
  json_object_object_add(s, "version", json_object_new_string(PACKAGE_VERSION));
  return s;
}

/* ---- what a message is ---- */

const char *atl__mcp_str(json_object *o, const char *key) {
  json_object *v = NULL;
  if (o == NULL || !json_object_is_type(o, json_type_object) ||
      !json_object_object_get_ex(o, key, &v) ||
      !json_object_is_type(v, json_type_string))
    return NULL;
  return json_object_get_string(v);
}

const char *atl_mcp_method(json_object *msg) {
  return atl__mcp_str(msg, "method");
}

static const char *method_of(json_object *msg) {
  return atl_mcp_method(msg);
}

int atl_mcp_is_slow(json_object *msg) {
  const char *method = method_of(msg);
  json_object *id = NULL;
  return method != NULL && strcmp(method, "tools/call") == 0 &&
         json_object_object_get_ex(msg, "id", &id);
}

json_object *atl_mcp_cancelled_id(json_object *msg) {
  const char *method = method_of(msg);
  json_object *params = NULL, *id = NULL;
  /* A notification: a request of that name is not one. */
  if (method == NULL || strcmp(method, "notifications/cancelled") != 0 ||
      json_object_object_get_ex(msg, "id", NULL) ||
      !json_object_object_get_ex(msg, "params", &params) ||
      !json_object_is_type(params, json_type_object) ||
      !json_object_object_get_ex(params, "requestId", &id))
    return NULL;
  return id;
}

/* JSON-RPC 2.0: "an identifier ... MUST contain a String, Number, or NULL
 * value"; MCP narrows it: "MUST include a string or integer ID", "MUST NOT
 * be null". */
int atl__mcp_id_ok(json_object *id) {
  return id != NULL && (json_object_is_type(id, json_type_string) ||
                        json_object_is_type(id, json_type_int));
}

json_object *atl_mcp_request_id(json_object *msg) {
  json_object *id = NULL;
  if (json_object_is_type(msg, json_type_object) &&
      json_object_object_get_ex(msg, "id", &id) && atl__mcp_id_ok(id))
    return id;
  return NULL;
}

/* The era of a request, from its params' _meta (2026-07-28: "Every
 * request carries its protocol version"): 0 and *era set, or an error
 * answer in *err with the HTTP status the spec asks for. */
int atl__mcp_era_of(json_object *id, const char *method, json_object *params,
                    atl_mcp_era_t *era, json_object **err, int *status) {
  memset(era, 0, sizeof(*era));
  json_object *meta = NULL, *v = NULL, *caps = NULL;
  int has_meta = params != NULL &&
                 json_object_is_type(params, json_type_object) &&
                 json_object_object_get_ex(params, "_meta", &meta) &&
                 json_object_is_type(meta, json_type_object);
  int has_version =
      has_meta && json_object_object_get_ex(meta, ATL_MCP_META_VERSION, &v);
  if (!has_version) {
    /* server/discover exists only in the modern era, where it carries
     * the envelope like any request. */
    if (strcmp(method, "server/discover") == 0) {
      *status = 400;
      *err = atl_mcp_error(
          id, -32602, NULL,
          "Invalid params: server/discover is missing the required "
          "per-request envelope key(s): _meta[\"%s\"] and _meta[\"%s\"] "
          "(protocol version %s)",
          ATL_MCP_META_VERSION, ATL_MCP_META_CAPS, ATL_MCP_MODERN);
      return -1;
    }
    return 0; /* legacy */
  }
  era->modern = 1;
  if (!json_object_is_type(v, json_type_string) ||
      strcmp(json_object_get_string(v), ATL_MCP_MODERN) != 0) {
    json_object *data = json_object_new_object();
    json_object *supported = json_object_new_array();
    json_object_array_add(supported, json_object_new_string(ATL_MCP_MODERN));
    json_object_object_add(data, "supported", supported);
    json_object_object_add(data, "requested", json_object_get(v));
    *status = 400;
    *err =
        atl_mcp_error(id, -32022, data,
                      "Unsupported protocol version: %s (this server "
                      "speaks %s, and %s and earlier through initialize)",
                      json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN),
                      ATL_MCP_MODERN, ATL_MCP_LEGACY_LATEST);
    return -1;
  }
  if (!json_object_object_get_ex(meta, ATL_MCP_META_CAPS, &caps) ||
      !json_object_is_type(caps, json_type_object)) {
    *status = 400;
    *err = atl_mcp_error(id, -32602, NULL,
                         "Invalid params: _meta[\"%s\"] must be the "
                         "client's capabilities (an object; {} for none)",
                         ATL_MCP_META_CAPS);
    return -1;
  }
  json_object *info = NULL;
  if (json_object_object_get_ex(meta, ATL_MCP_META_CLIENT, &info))
    era->client = atl__mcp_str(info, "name");
  era->session = atl__mcp_str(meta, ATL_MCP_META_SESSION);
  return 0;
}

/* ---- the methods other than tools/call ---- */

static json_object *capabilities(void) {
  /* The tool set changes only when atelierd restarts with other
   * plugins, and then every connection is new: no list_changed. */
  json_object *tools = json_object_new_object();
  json_object_object_add(tools, "listChanged", json_object_new_boolean(0));
  json_object *caps = json_object_new_object();
  json_object_object_add(caps, "tools", tools);
  return caps;
}

/* Keeps a client's name for the events ("via"): printable ASCII, short. */
static void keep_client(atl_mcp_t *m, const char *name) {
  if (name == NULL)
    return;
  char clean[sizeof(m->client)];
  size_t n = 0;
  for (const char *p = name; *p && n + 1 < sizeof(clean); p++)
    clean[n++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
  clean[n] = '\0';
  pthread_mutex_lock(&m->mu);
  memcpy(m->client, clean, n + 1);
  pthread_mutex_unlock(&m->mu);
}

static json_object *initialize(atl_mcp_t *m, json_object *id,
                               json_object *params, atl_mcp_req_t *r) {
  const char *asked = atl__mcp_str(params, "protocolVersion");
  if (asked == NULL) {
    r->http_status = 400;
    return atl_mcp_error(id, -32602, NULL,
                         "Invalid params: initialize needs "
                         "params.protocolVersion, a string such as \"%s\"",
                         ATL_MCP_LEGACY_LATEST);
  }
  /* Negotiate down, never refuse: servers that answered an unknown
   * version with an error broke when Claude Desktop moved on. */
  const char *version = ATL_MCP_LEGACY_LATEST;
  for (size_t i = 0; atl__mcp_legacy_versions[i] != NULL; i++)
    if (strcmp(asked, atl__mcp_legacy_versions[i]) == 0)
      version = atl__mcp_legacy_versions[i];
  json_object *info = NULL;
  if (!m->shared) {
    if (json_object_is_type(params, json_type_object) &&
        json_object_object_get_ex(params, "clientInfo", &info))
      keep_client(m, atl__mcp_str(info, "name"));
    pthread_mutex_lock(&m->mu);
    snprintf(m->legacy_version, sizeof(m->legacy_version), "%s", version);
    pthread_mutex_unlock(&m->mu);
  }
  json_object *res = json_object_new_object();
  json_object_object_add(res, "protocolVersion",
                         json_object_new_string(version));
  json_object_object_add(res, "capabilities", capabilities());
  json_object_object_add(res, "serverInfo", atl__mcp_server_info());
  json_object_object_add(res, "instructions",
                         json_object_new_string(instructions));
  atl_mcp_era_t legacy = {0};
  return atl__mcp_result(id, res, &legacy);
}

static json_object *discover(json_object *id, const atl_mcp_era_t *era) {
  json_object *res = json_object_new_object();
  json_object *versions = json_object_new_array();
  json_object_array_add(versions, json_object_new_string(ATL_MCP_MODERN));
  json_object_object_add(res, "supportedVersions", versions);
  json_object_object_add(res, "capabilities", capabilities());
  json_object_object_add(res, "instructions",
                         json_object_new_string(instructions));
  /* Caching hints are a MUST on a complete discover result. */
  json_object_object_add(res, "ttlMs", json_object_new_int(ATL_MCP_TTL_MS));
  json_object_object_add(res, "cacheScope", json_object_new_string("public"));
  return atl__mcp_result(id, res, era);
}

/* ---- one message ---- */

json_object *atl_mcp_handle(atl_mcp_t *m, json_object *msg, atl_mcp_req_t *r) {
  r->http_status = 200;
  r->daemon_gone = 0;
  r->cancelled = 0;
  r->session_gone = 0;
  r->busy = 0;
  r->unsent = 0;
  if (json_object_is_type(msg, json_type_array)) {
    r->http_status = 400;
    return atl_mcp_error(NULL, -32600, NULL,
                         "Invalid Request: batches are not supported (MCP "
                         "has none since 2025-06-18): send one message at "
                         "a time");
  }
  if (!json_object_is_type(msg, json_type_object)) {
    r->http_status = 400;
    return atl_mcp_error(
        NULL, -32600, NULL,
        "Invalid Request: a JSON-RPC message is an "
        "object, got %s",
        json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN));
  }
  json_object *id = NULL;
  int has_id = json_object_object_get_ex(msg, "id", &id);
  const char *jsonrpc = atl__mcp_str(msg, "jsonrpc");
  if (jsonrpc == NULL || strcmp(jsonrpc, "2.0") != 0) {
    r->http_status = 400;
    return atl_mcp_error(atl__mcp_id_ok(id) ? id : NULL, -32600, NULL,
                         "Invalid Request: \"jsonrpc\" must be \"2.0\"");
  }
  json_object *mv = NULL;
  if (!json_object_object_get_ex(msg, "method", &mv)) {
    /* A response: this server sends no requests, so none is awaited. */
    if (json_object_object_get_ex(msg, "result", NULL) ||
        json_object_object_get_ex(msg, "error", NULL)) {
      r->http_status = 202;
      return NULL;
    }
    r->http_status = 400;
    return atl_mcp_error(atl__mcp_id_ok(id) ? id : NULL, -32600, NULL,
                         "Invalid Request: no \"method\"");
  }
  if (!json_object_is_type(mv, json_type_string)) {
    r->http_status = 400;
    return atl_mcp_error(atl__mcp_id_ok(id) ? id : NULL, -32600, NULL,
                         "Invalid Request: \"method\" must be a string");
  }
  const char *method = json_object_get_string(mv);
  if (has_id && !atl__mcp_id_ok(id)) {
    r->http_status = 400;
    return atl_mcp_error(
        NULL, -32600, NULL,
        "Invalid Request: \"id\" must be a string or an "
        "integer, got %s",
        json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN));
  }
  json_object *params = NULL;
  json_object_object_get_ex(msg, "params", &params);
  if (params != NULL && !json_object_is_type(params, json_type_object)) {
    if (!has_id) {
      r->http_status = 202;
      return NULL;
    }
    r->http_status = 400;
    return atl_mcp_error(id, -32602, NULL,
                         "Invalid params: \"params\" must be an object");
  }
  if (!has_id) {
    /* notifications/initialized, notifications/cancelled (which the
     * transport acts on) and the rest: "The receiver MUST NOT send a
     * response." */
    r->http_status = 202;
    return NULL;
  }

  atl_mcp_era_t era;
  json_object *err = NULL;
  if (atl__mcp_era_of(id, method, params, &era, &err, &r->http_status) != 0)
    return err;
  if (era.client != NULL && !m->shared)
    keep_client(m, era.client);

  if (!era.modern && strcmp(method, "initialize") == 0)
    return initialize(m, id, params, r);
  if (!era.modern && strcmp(method, "ping") == 0)
    return atl__mcp_result(id, json_object_new_object(), &era);
  if (era.modern && strcmp(method, "server/discover") == 0)
    return discover(id, &era);
  if (strcmp(method, "tools/list") == 0)
    return atl__mcp_tools_list(m, id, params, &era, r);
  if (strcmp(method, "tools/call") == 0)
    return atl__mcp_tools_call(m, id, params, &era, r);
  /* The modern transport answers an unknown method with 404. */
  r->http_status = era.modern ? 404 : 200;
  return atl_mcp_error(
      id, -32601, NULL,
      "Method not found: %s (this server has %s, tools/list and "
      "tools/call)",
      method, era.modern ? "server/discover" : "initialize, ping");
}
