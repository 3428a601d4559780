/* The JSON-RPC methods of api.sock (doc/api.md). Each method checks its
 * params and says exactly what was wrong; reads of the store run on
 * libuv's threadpool so that the loop never waits for SQLite.
 */
#include "atl-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "admin.h"
#include "agent/agent.h"
#include "daemon.h"
#include "image_fit.h"
#include "log.h"
#include "mcp_front.h"
#include "preview.h"
#include "redact.h"
#include "render_host.h"
#include "stats.h"
#include "tools_mcp.h"
#include "trace.h"

typedef void (*method_fn)(atl_daemon_t *d, atl_rpc_call_t *c,
                          json_object *params);

/* ---- params ---- */

void atl_rpc_invalid(atl_daemon_t *d, atl_rpc_call_t *c, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  int n = snprintf(msg, sizeof(msg), "Invalid params: ");
  vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
  va_end(ap);
  atl_rpc_reply_error(d, c, ATL_RPC_INVALID_PARAMS, msg, NULL);
}

int atl_rpc_only(atl_daemon_t *d, atl_rpc_call_t *c, json_object *params,
                 const char *const *names) {
  if (params == NULL)
    return 1;
  if (!json_object_is_type(params, json_type_object)) {
    atl_rpc_invalid(d, c, "params must be an object");
    return 0;
  }
  json_object_object_foreach(params, key, val) {
    (void)val;
    int found = 0;
    for (const char *const *n = names; *n; n++)
      if (strcmp(*n, key) == 0)
        found = 1;
    if (!found) {
      char allowed[256] = "";
      for (const char *const *n = names; *n; n++) {
        strncat(allowed, *n, sizeof(allowed) - strlen(allowed) - 3);
        if (n[1])
          strcat(allowed, ", ");
      }
      atl_rpc_invalid(d, c, "unknown member '%s' (allowed: %s)", key,
                      allowed[0] ? allowed : "none");
      return 0;
    }
  }
  return 1;
}

static const char *session_param(atl_daemon_t *d, atl_rpc_call_t *c,
                                 json_object *params) {
  json_object *v = NULL;
  if (params == NULL || !json_object_object_get_ex(params, "session", &v)) {
    atl_rpc_invalid(d, c, "missing \"session\" (a 32-digit hex session id)");
    return NULL;
  }
  if (!json_object_is_type(v, json_type_string) ||
      !atl_is_session_id(json_object_get_string(v))) {
    atl_rpc_invalid(d, c,
                    "\"session\" must be a 32-digit lowercase hex session id, "
                    "got %s",
                    json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    return NULL;
  }
  return json_object_get_string(v);
}

/* Reads an optional integer member in [lo, hi]; returns 0 on error. */
static int int_param(atl_daemon_t *d, atl_rpc_call_t *c, json_object *params,
                     const char *name, int64_t lo, int64_t hi, int64_t *out) {
  json_object *v = NULL;
  if (params == NULL || !json_object_object_get_ex(params, name, &v))
    return 1;
  if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < lo ||
      json_object_get_int64(v) > hi) {
    atl_rpc_invalid(d, c,
                    "\"%s\" must be an integer between %lld and %lld, got %s",
                    name, (long long)lo, (long long)hi,
                    json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
    return 0;
  }
  *out = json_object_get_int64(v);
  return 1;
}

static void no_session(atl_daemon_t *d, atl_rpc_call_t *c, const char *id,
                       int status) {
  if (status == ATL_ENOENT) {
    char msg[96];
    snprintf(msg, sizeof(msg), "no such session: %s", id);
    json_object *data = json_object_new_object();
    json_object_object_add(data, "session", json_object_new_string(id));
    atl_rpc_reply_error(d, c, ATL_RPC_NO_SESSION, msg, data);
    json_object_put(data);
  } else {
    atl_rpc_reply_error(d, c, ATL_RPC_STORE_ERROR, atl_strerror(status), NULL);
  }
}

static json_object *time_json(int64_t ms) {
  char ts[32];
  atl_format_time_ms(ms, ts, sizeof(ts));
  return json_object_new_string(ts);
}

/* ---- daemon.info, tool.list ---- */

static void m_daemon_info(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *r = atl_rpc_daemon_info(d);
  atl_rpc_reply(d, c, r);
  json_object_put(r);
}

json_object *atl_rpc_daemon_info(atl_daemon_t *d) {
  json_object *r = json_object_new_object();
  json_object_object_add(r, "version", json_object_new_string(PACKAGE_VERSION));
  json_object *abi = json_object_new_object();
  json_object_object_add(abi, "major",
                         json_object_new_int(ATL_PLUGIN_ABI_MAJOR));
  json_object_object_add(abi, "minor",
                         json_object_new_int(ATL_PLUGIN_ABI_MINOR));
  json_object_object_add(r, "abi", abi);
  json_object_object_add(r, "pid", json_object_new_int((int)getpid()));
  json_object_object_add(r, "uptime_ms",
                         json_object_new_int64(atl_now_ms() - d->started_ms));
  json_object *plugins = json_object_new_array();
  for (size_t i = 0; i < d->registry.n_plugins; i++) {
    atl_plugin_entry_t *pe = d->registry.plugins[i];
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(pe->desc.name));
    json_object_object_add(
        o, "version",
        json_object_new_string(pe->desc.version ? pe->desc.version : ""));
    json_object_object_add(o, "description",
                           json_object_new_string(pe->desc.description
                                                      ? pe->desc.description
                                                      : ""));
    json_object *tools = json_object_new_array();
    for (size_t k = 0; k < d->registry.n_tools; k++)
      if (d->registry.tools[k]->plugin == pe)
        json_object_array_add(
            tools, json_object_new_string(d->registry.tools[k]->tool.name));
    json_object_object_add(o, "tools", tools);
    json_object_array_add(plugins, o);
  }
  json_object_object_add(r, "plugins", plugins);
  json_object_object_add(r, "render", atl_render_host_status(d));
  json_object_object_add(
      r, "sessions_loaded",
      json_object_new_int64((int64_t)atl_sessions_loaded(d)));
  json_object_object_add(
      r, "clients",
      json_object_new_int((int)(d->api ? atl_server_clients(d->api) : 0)));
  json_object_object_add(r, "store", atl_admin_store_json(d));
  return r;
}

/* http.auth: what the web bridge needs to check /api/ requests (doc/api.md).
 * Whoever can connect to api.sock may already drive every session, so
 * handing them the token gives nothing away: the socket's permissions are
 * its authentication. */
static void m_http_auth(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *r = json_object_new_object();
  int required = d->http_token[0] != '\0';
  json_object_object_add(r, "required", json_object_new_boolean(required));
  if (required)
    json_object_object_add(r, "token", json_object_new_string(d->http_token));
  /* The bridge signs the MCP session ids it gives legacy clients with
   * this (doc/mcp.md): a client cannot make one up for another session. */
  json_object_object_add(r, "mcp_key", json_object_new_string(d->mcp_key));
  atl_rpc_reply(d, c, r);
  json_object_put(r);
}

/* tool.list {"wire": PROVIDER}: the request's "tools" value exactly as
 * that provider's requests carry it, whichever provider is configured: what
 * a developer reads to see what the model is offered, and what the tests
 * hand to the fake provider's rules. */
static void tool_list_wire(atl_daemon_t *d, atl_rpc_call_t *c,
                           json_object *wire) {
  const char *name = json_object_get_string(wire);
  if (json_object_is_type(wire, json_type_string) && strcmp(name, "mcp") == 0) {
    json_object *r = atl_tools_mcp(d);
    atl_rpc_reply(d, c, r);
    json_object_put(r);
    return;
  }
  const atl_provider_ops_t *ops = json_object_is_type(wire, json_type_string)
                                      ? atl_provider_find(name)
                                      : NULL;
  if (ops == NULL) {
    atl_rpc_invalid(
        d, c,
        "\"wire\" must be \"anthropic\", \"openai\", \"gemini\" or "
        "\"mcp\", got %s",
        json_object_to_json_string_ext(wire, JSON_C_TO_STRING_PLAIN));
    return;
  }
  char *text = d->tools_json && json_object_array_length(d->tools_json) > 0
                   ? ops->tools_text(d->tools_json)
                   : strdup("[]");
  json_object *r = text ? json_tokener_parse(text) : NULL;
  free(text);
  if (r == NULL) {
    atl_rpc_reply_error(d, c, ATL_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return;
  }
  atl_rpc_reply(d, c, r);
  json_object_put(r);
}

static void m_tool_list(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"wire", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *wire = NULL;
  if (p != NULL && json_object_object_get_ex(p, "wire", &wire)) {
    tool_list_wire(d, c, wire);
    return;
  }
  json_object *r = json_object_new_array();
  for (size_t i = 0; i < d->registry.n_tools; i++) {
    const atl_tool_entry_t *t = d->registry.tools[i];
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(t->tool.name));
    json_object_object_add(o, "description",
                           json_object_new_string(t->tool.description));
    json_object_object_add(o, "input_schema",
                           json_object_get(atl_schema_json(t->input)));
    json_object_object_add(o, "plugin",
                           json_object_new_string(t->plugin->desc.name));
    /* A tool for people only: listed for the page and clients, never in
     * what a model is offered (the wire form). */
    if (t->tool.flags & ATL_TOOL_NOT_FOR_MODEL)
      json_object_object_add(o, "for_model", json_object_new_boolean(0));
    json_object_array_add(r, o);
  }
  atl_rpc_reply(d, c, r);
  json_object_put(r);
}

/* ---- sessions ---- */

static void created_cb(atl_daemon_t *d, atl_session_t *s, int status,
                       void *user) {
  atl_rpc_call_t *c = user;
  if (status != 0) {
    atl_rpc_reply_error(d, c, ATL_RPC_STORE_ERROR, atl_strerror(status), NULL);
    return;
  }
  json_object *r = json_object_new_object();
  json_object_object_add(r, "id", json_object_new_string(s->id));
  atl_rpc_reply(d, c, r);
  json_object_put(r);
  atl_log_kv(ATL_LOG_INFO, "session created", "session", s->id, NULL);
  atomic_fetch_add_explicit(&atl_stats.sessions_created, 1,
                            memory_order_relaxed);
}

/* The optional "model" of session.create and session.send: 1 with *out
 * set (NULL when absent), or 0 after answering with what is wrong. */
static int model_param(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p,
                       const char **out) {
  json_object *model = NULL;
  *out = NULL;
  if (!json_object_object_get_ex(p, "model", &model) || model == NULL)
    return 1;
  if (!json_object_is_type(model, json_type_string)) {
    atl_rpc_invalid(d, c,
                    "\"model\" must be a model name (a string, e.g. "
                    "\"claude-sonnet-4-5\"), not %s",
                    json_type_to_name(json_object_get_type(model)));
    return 0;
  }
  const char *why = atl_model_name_error(json_object_get_string(model));
  if (why != NULL) {
    atl_rpc_invalid(d, c, "\"model\" %s", why);
    return 0;
  }
  *out = json_object_get_string(model);
  return 1;
}

static void m_session_create(atl_daemon_t *d, atl_rpc_call_t *c,
                             json_object *p) {
  static const char *const names[] = {"model", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  const char *model;
  if (!model_param(d, c, p, &model))
    return;
  atl_session_create(d, model, created_cb, c);
}

/* A read on the threadpool: fn fills result (or status) off the loop. */
typedef struct read_req_s {
  uv_work_t work;
  atl_daemon_t *d;
  atl_rpc_call_t *c;
  char id[65];
  int64_t a, b;
  int status;
  json_object *result;
  void (*fn)(struct read_req_s *rr, atl_store_reader_t *r);
} read_req_t;

static void read_work(uv_work_t *w) {
  read_req_t *rr = w->data;
  atl_store_reader_t *r = atl_daemon_reader_take(rr->d);
  if (r == NULL) {
    rr->status = ATL_ESTORE;
    return;
  }
  rr->fn(rr, r);
  atl_daemon_reader_give(rr->d, r);
}

static void read_image(read_req_t *rr, atl_store_reader_t *r);

static void read_done(uv_work_t *w, int uvstatus) {
  read_req_t *rr = w->data;
  atl_daemon_t *d = rr->d;
  d->work_in_flight--;
  if (uvstatus != 0 && rr->status == 0)
    rr->status = ATL_ECANCELED;
  if (rr->status == ATL_ENOENT && rr->fn == read_image)
    atl_rpc_reply_error(d, rr->c, ATL_RPC_NO_IMAGE, "no such image", NULL);
  else if (rr->status == ATL_E2BIG && rr->fn == read_image)
    atl_rpc_reply_error(d, rr->c, ATL_RPC_INVALID_PARAMS,
                        "the image cannot be made that small: give a larger "
                        "max_base64 (a JPEG of 64 px on its long side is the "
                        "smallest tried)",
                        NULL);
  else if (rr->status == ATL_EINVAL && rr->fn == read_image)
    atl_rpc_reply_error(d, rr->c, ATL_RPC_INTERNAL_ERROR,
                        "the stored image is larger than max_base64 and not "
                        "a PNG or JPEG that can be scaled; ask without "
                        "max_base64",
                        NULL);
  else if (rr->status != 0)
    no_session(d, rr->c, rr->id, rr->status);
  else
    atl_rpc_reply(d, rr->c, rr->result);
  json_object_put(rr->result);
  free(rr);
}

static void start_read(atl_daemon_t *d, atl_rpc_call_t *c, const char *id,
                       int64_t a, int64_t b,
                       void (*fn)(read_req_t *, atl_store_reader_t *)) {
  read_req_t *rr = calloc(1, sizeof(*rr));
  if (rr == NULL) {
    atl_rpc_reply_error(d, c, ATL_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return;
  }
  rr->work.data = rr;
  rr->d = d;
  rr->c = c;
  snprintf(rr->id, sizeof(rr->id), "%s", id ? id : "");
  rr->a = a;
  rr->b = b;
  rr->fn = fn;
  d->work_in_flight++;
  uv_queue_work(d->loop, &rr->work, read_work, read_done);
}

static int history_row(const atl_history_row_t *row, void *user) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "idx", json_object_new_int64(row->idx));
  json_object_object_add(o, "role", json_object_new_string(row->role));
  json_object *content = json_tokener_parse(row->content);
  json_object_object_add(o, "content", content);
  json_object_object_add(o, "created", time_json(row->created_ms));
  json_object_array_add(user, o);
  return 0;
}

static int queued_row(const atl_queue_row_t *row, void *user) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_int64(row->id));
  json_object_object_add(o, "text", json_object_new_string(row->text));
  json_object_object_add(
      o, "model", row->model ? json_object_new_string(row->model) : NULL);
  json_object_object_add(o, "ts", time_json(row->ts_ms));
  json_object_array_add(user, o);
  return 0;
}

static void read_session(read_req_t *rr, atl_store_reader_t *r) {
  atl_session_row_t row;
  rr->status = atl_store_session_load(r, rr->id, &row);
  if (rr->status != 0)
    return;
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_string(row.id));
  json_object_object_add(o, "created", time_json(row.created_ms));
  json_object_object_add(o, "updated", time_json(row.updated_ms));
  json_object_object_add(
      o, "model", row.model[0] ? json_object_new_string(row.model) : NULL);
  json_object *doc = json_tokener_parse(row.document);
  json_object_object_add(o, "document", doc ? doc : json_object_new_object());
  free(row.document);
  json_object *hist = json_object_new_array();
  atl_store_history_read(r, rr->id, 0, 0, history_row, hist);
  json_object_object_add(o, "history", hist);
  json_object *queue = json_object_new_array();
  atl_store_queue_read(r, rr->id, queued_row, queue);
  json_object_object_add(o, "queued", queue);
  json_object_object_add(o, "last_seq", json_object_new_int64(row.last_seq));
  rr->result = o;
}

static void m_session_get(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"session", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  const char *id = session_param(d, c, p);
  if (id)
    start_read(d, c, id, 0, 0, read_session);
}

static int list_row(const atl_session_row_t *row, void *user) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_string(row->id));
  json_object_object_add(o, "created", time_json(row->created_ms));
  json_object_object_add(o, "updated", time_json(row->updated_ms));
  json_object_object_add(o, "last_seq", json_object_new_int64(row->last_seq));
  json_object_object_add(o, "history_len",
                         json_object_new_int64(row->history_len));
  json_object_object_add(
      o, "model", row->model[0] ? json_object_new_string(row->model) : NULL);
  json_object_array_add(user, o);
  return 0;
}

static void read_list(read_req_t *rr, atl_store_reader_t *r) {
  rr->result = json_object_new_array();
  rr->status = atl_store_session_list(r, list_row, rr->result);
}

static void m_session_list(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {NULL};
  if (atl_rpc_only(d, c, p, names))
    start_read(d, c, NULL, 0, 0, read_list);
}

static void deleted_cb(atl_daemon_t *d, atl_session_t *s, int status,
                       void *user) {
  atl_rpc_call_t *c = user;
  if (status != 0) {
    atl_rpc_reply_error(d, c, ATL_RPC_STORE_ERROR, atl_strerror(status), NULL);
    return;
  }
  atl_log_kv(ATL_LOG_INFO, "session deleted", "session", s->id, NULL);
  atomic_fetch_add_explicit(&atl_stats.sessions_deleted, 1,
                            memory_order_relaxed);
  atl_toolcall_drain(d, s, ATL_RPC_NO_SESSION);
  json_object *r = json_object_new_object();
  json_object_object_add(r, "deleted", json_object_new_boolean(1));
  atl_rpc_reply(d, c, r);
  json_object_put(r);
}

typedef struct {
  atl_rpc_call_t *c;
  char id[ATL_SESSION_ID_LEN + 1];
} delete_req_t;

static void delete_got(atl_daemon_t *d, atl_session_t *s, int status,
                       void *user) {
  delete_req_t *dr = user;
  atl_rpc_call_t *c = dr->c;
  if (s == NULL)
    no_session(d, c, dr->id, status);
  else
    atl_session_delete(d, s, deleted_cb, c);
  free(dr);
}

static void m_session_delete(atl_daemon_t *d, atl_rpc_call_t *c,
                             json_object *p) {
  static const char *const names[] = {"session", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  const char *id = session_param(d, c, p);
  if (id == NULL)
    return;
  delete_req_t *dr = calloc(1, sizeof(*dr));
  if (dr == NULL) {
    atl_rpc_reply_error(d, c, ATL_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return;
  }
  dr->c = c;
  snprintf(dr->id, sizeof(dr->id), "%s", id);
  atl_session_get(d, id, delete_got, dr);
}

/* ---- tool.call ---- */

typedef struct {
  atl_rpc_call_t *c;
  char id[ATL_SESSION_ID_LEN + 1];
  char *tool;
  char *via;
  json_object *args;
  int if_idle; /* refuse (ATL_RPC_BUSY) rather than wait for the session */
} call_req_t;

static void call_done(atl_daemon_t *d, int rpc_status, const char *envelope,
                      void *user) {
  atl_rpc_call_t *c = user;
  if (rpc_status == 0)
    atl_rpc_reply_text(d, c, envelope);
  else if (rpc_status == ATL_RPC_NO_SESSION)
    atl_rpc_reply_error(d, c, rpc_status, "no such session (deleted)", NULL);
  else if (rpc_status == ATL_RPC_QUEUE_FULL)
    atl_rpc_reply_error(d, c, rpc_status,
                        "too many calls queued for this session (256); wait "
                        "for answers before sending more",
                        NULL);
  else if (rpc_status == ATL_RPC_STORE_ERROR)
    atl_rpc_reply_error(d, c, rpc_status,
                        "the call could not be committed to the store; nothing "
                        "was changed, retry",
                        NULL);
  else
    atl_rpc_reply_error(d, c, rpc_status, "internal error", NULL);
}

static void tool_call_abandoned(atl_daemon_t *d, atl_rpc_call_t *c) {
  atl_session_t *s = atl_session_loaded(d, c->abandon_key);
  if (s != NULL && atl_toolcall_cancel_long_of(s, c))
    atl_log_kv(ATL_LOG_INFO, "tool call cancelled: its client left", "session",
               s->id, NULL);
}

static void call_got(atl_daemon_t *d, atl_session_t *s, int status,
                     void *user) {
  call_req_t *cr = user;
  const atl_tool_entry_t *t = NULL;
  if (s == NULL) {
    no_session(d, cr->c, cr->id, status);
  } else if (d->shutting_down) {
    atl_rpc_reply_error(d, cr->c, ATL_RPC_SHUTTING_DOWN,
                        "the daemon is shutting down", NULL);
  } else if (cr->if_idle && (s->busy || s->running || s->queue_head)) {
    /* The caller would rather not wait here (atelierctl mcp runs quick
     * calls on the thread that reads its client's messages, which must
     * not sit behind another client's render): it sends the call again
     * from where waiting costs nothing. Nothing was started. */
    atl_rpc_reply_error(d, cr->c, ATL_RPC_BUSY,
                        "the session is running another call", NULL);
  } else if (atl_conn_closing(cr->c->conn) &&
             (t = atl_registry_find(&d->registry, cr->tool)) &&
             (t->tool.flags & ATL_TOOL_LONG_RUNNING)) {
    /* Its client left while the session loaded: a render nobody waits
     * for is not started (nothing was acknowledged). */
    atl_rpc_reply_error(d, cr->c, ATL_RPC_INTERNAL_ERROR,
                        "the client closed the connection", NULL);
  } else {
    /* A long call (a render) stops when its client leaves before the
     * answer: nobody is left to see it, and the session's next calls
     * wait behind it. Set before the start: a fast call answers in it. */
    cr->c->on_abandon = tool_call_abandoned;
    snprintf(cr->c->abandon_key, sizeof(cr->c->abandon_key), "%s", s->id);
    atl_toolcall_start(d, s, cr->tool, NULL, cr->via, cr->args, 1, call_done,
                       cr->c);
    cr->args = NULL;
  }
  json_object_put(cr->args);
  free(cr->tool);
  free(cr->via);
  free(cr);
}

/* tool.call's "via": who made the call, for the page (an MCP client's
 * name). Printable ASCII only: a bidirectional override or a zero-width
 * character could make one client pass for another there, and a C1
 * control would reach terminals through atelierctl. */
#define VIA_MAX 160

static int via_ok(json_object *v) {
  if (!json_object_is_type(v, json_type_string))
    return 0;
  size_t n = (size_t)json_object_get_string_len(v);
  const unsigned char *s = (const unsigned char *)json_object_get_string(v);
  if (n == 0 || n > VIA_MAX)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] < 0x20 || s[i] > 0x7e)
      return 0;
  return 1;
}

static void m_tool_call(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"session", "name",    "arguments",
                                      "via",     "if_idle", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  const char *id = session_param(d, c, p);
  if (id == NULL)
    return;
  json_object *name = NULL, *args = NULL;
  if (!json_object_object_get_ex(p, "name", &name) ||
      !json_object_is_type(name, json_type_string) ||
      json_object_get_string_len(name) == 0) {
    atl_rpc_invalid(d, c,
                    "\"name\" must be the name of a tool (a non-empty string)");
    return;
  }
  if (json_object_object_get_ex(p, "arguments", &args) && args != NULL &&
      !json_object_is_type(args, json_type_object)) {
    atl_rpc_invalid(
        d, c, "\"arguments\" must be an object, got %s",
        json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN));
    return;
  }
  json_object *via = NULL;
  if (json_object_object_get_ex(p, "via", &via) && !via_ok(via)) {
    atl_rpc_invalid(d, c,
                    "\"via\" must say who makes the call: 1 to %d "
                    "printable ASCII characters",
                    VIA_MAX);
    return;
  }
  json_object *if_idle = NULL;
  if (json_object_object_get_ex(p, "if_idle", &if_idle) &&
      !json_object_is_type(if_idle, json_type_boolean)) {
    atl_rpc_invalid(d, c, "\"if_idle\" must be true or false");
    return;
  }
  call_req_t *cr = calloc(1, sizeof(*cr));
  if (cr == NULL) {
    atl_rpc_reply_error(d, c, ATL_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return;
  }
  cr->c = c;
  cr->if_idle = if_idle != NULL && json_object_get_boolean(if_idle);
  snprintf(cr->id, sizeof(cr->id), "%s", id);
  cr->tool = strdup(json_object_get_string(name));
  cr->via = via ? strdup(json_object_get_string(via)) : NULL;
  /* Detached from the request, so that the call's reference is the only
   * one (atl_toolcall_start takes it over). */
  cr->args = args ? json_object_get(args) : NULL;
  if (args)
    json_object_object_del(p, "arguments");
  atl_session_get(d, id, call_got, cr);
}

/* ---- session.send, session.cancel (the agent) ---- */

typedef struct {
  atl_rpc_call_t *c;
  char id[ATL_SESSION_ID_LEN + 1];
  char *text;
  char *model;
  int cancel;
} agent_req_t;

/* {name: flag}, or the store error why (the answer of session.send and
 * session.cancel once their commit came back). */
static void reply_committed(atl_daemon_t *d, atl_rpc_call_t *c, int status,
                            const char *name, int flag, const char *why) {
  if (status != 0) {
    atl_rpc_reply_error(d, c, ATL_RPC_STORE_ERROR, why, NULL);
    return;
  }
  json_object *r = json_object_new_object();
  json_object_object_add(r, name, json_object_new_boolean(flag));
  atl_rpc_reply(d, c, r);
  json_object_put(r);
}

/* session.send's answer, once the message is in the store. */
static void agent_sent(atl_daemon_t *d, int status, int queued, void *user) {
  reply_committed(d, user, status, "queued", queued,
                  "the message could not be committed to the store; it was "
                  "not queued, send it again");
}

/* session.cancel's, once the dropped messages are out of the store. */
static void agent_cancelled(atl_daemon_t *d, int status, int cancelled,
                            void *user) {
  reply_committed(d, user, status, "cancelled", cancelled,
                  "the waiting messages could not be dropped from the store; "
                  "cancel again");
}

static void agent_got(atl_daemon_t *d, atl_session_t *s, int status,
                      void *user) {
  agent_req_t *ar = user;
  if (s == NULL) {
    no_session(d, ar->c, ar->id, status);
  } else if (ar->cancel) {
    atl_agent_cancel(d, s, agent_cancelled, ar->c);
  } else if (d->shutting_down) {
    atl_rpc_reply_error(d, ar->c, ATL_RPC_SHUTTING_DOWN,
                        "the daemon is shutting down", NULL);
  } else {
    int rc = atl_agent_send(d, s, ar->text, ar->model, agent_sent, ar->c);
    if (rc == ATL_EBUSY) {
      char msg[160];
      snprintf(msg, sizeof(msg),
               "too many messages waiting for this session's run (%u, "
               "agent.queue_max); wait for run.completed, or cancel the run",
               d->cfg->queue_max);
      atl_rpc_reply_error(d, ar->c, ATL_RPC_QUEUE_FULL, msg, NULL);
    } else if (rc != 0) {
      atl_rpc_reply_error(d, ar->c, ATL_RPC_INTERNAL_ERROR, atl_strerror(rc),
                          NULL);
    }
  }
  free(ar->text);
  free(ar->model);
  free(ar);
}

static void m_session_send(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"session", "text", "model", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  const char *id = session_param(d, c, p);
  if (id == NULL)
    return;
  json_object *text = NULL;
  if (!json_object_object_get_ex(p, "text", &text) ||
      !json_object_is_type(text, json_type_string) ||
      json_object_get_string_len(text) == 0) {
    atl_rpc_invalid(d, c,
                    "\"text\" must be the user's message (a non-empty string)");
    return;
  }
  /* Whitespace alone says nothing, and kept in the history it would fail
   * every later request to Anthropic ("text content blocks must contain
   * non-whitespace text"). */
  if (atl_provider_blank(json_object_get_string(text))) {
    atl_rpc_invalid(
        d, c, "\"text\" must be the user's message; it is only whitespace");
    return;
  }
  const char *model;
  if (!model_param(d, c, p, &model))
    return;
  agent_req_t *ar = calloc(1, sizeof(*ar));
  if (ar == NULL) {
    atl_rpc_reply_error(d, c, ATL_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return;
  }
  ar->c = c;
  snprintf(ar->id, sizeof(ar->id), "%s", id);
  ar->text = strdup(json_object_get_string(text));
  ar->model = model ? strdup(model) : NULL;
  atl_session_get(d, id, agent_got, ar);
}

static void m_session_cancel(atl_daemon_t *d, atl_rpc_call_t *c,
                             json_object *p) {
  static const char *const names[] = {"session", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  const char *id = session_param(d, c, p);
  if (id == NULL)
    return;
  agent_req_t *ar = calloc(1, sizeof(*ar));
  if (ar == NULL) {
    atl_rpc_reply_error(d, c, ATL_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return;
  }
  ar->c = c;
  ar->cancel = 1;
  snprintf(ar->id, sizeof(ar->id), "%s", id);
  atl_session_get(d, id, agent_got, ar);
}

/* ---- events.read ---- */

/* An answer holds events up to this many bytes of their data (and at least
 * one): with events of megabytes (a tool's arguments can be as large as
 * api.max_frame), limit alone would let one read build gigabytes. The
 * reader asks again from the last event it got. */
#define EVENTS_MAX_BYTES ((size_t)4 << 20)

typedef struct {
  json_object *events;
  size_t bytes;
} event_sink_t;

static int event_row(const atl_event_row_t *row, void *user) {
  event_sink_t *sink = user;
  if (sink->bytes >= EVENTS_MAX_BYTES)
    return 1;
  sink->bytes += (row->data ? strlen(row->data) : 0) + 64;
  json_object *o = json_object_new_object();
  json_object_object_add(o, "seq", json_object_new_int64(row->seq));
  json_object_object_add(o, "type", json_object_new_string(row->type));
  json_object_object_add(o, "ts", time_json(row->ts_ms));
  json_object_object_add(o, "data",
                         row->data ? json_tokener_parse(row->data) : NULL);
  json_object_array_add(sink->events, o);
  return 0;
}

static void read_events(read_req_t *rr, atl_store_reader_t *r) {
  json_object *evs = json_object_new_array();
  event_sink_t sink = {.events = evs};
  rr->status = atl_store_events_read(r, rr->id, rr->a, rr->b, event_row, &sink);
  atl_session_row_t row;
  int64_t last = 0;
  if (rr->status == 0) {
    int rc = atl_store_session_load(r, rr->id, &row);
    if (rc == 0) {
      last = row.last_seq;
      free(row.document);
    } else {
      rr->status = rc;
    }
  }
  json_object *o = json_object_new_object();
  atomic_fetch_add_explicit(&atl_stats.events_delivered,
                            json_object_array_length(evs),
                            memory_order_relaxed);
  json_object_object_add(o, "events", evs);
  json_object_object_add(o, "last_seq", json_object_new_int64(last));
  rr->result = o;
}

typedef struct {
  atl_rpc_call_t *c;
  char id[ATL_SESSION_ID_LEN + 1];
  int64_t after, limit, wait_ms;
  int waited; /* counted in atl_stats.polls_waiting */
} events_req_t;

static void events_wake(atl_daemon_t *d, atl_session_t *s, void *user) {
  events_req_t *er = user;
  if (er->waited)
    atomic_fetch_sub_explicit(&atl_stats.polls_waiting, 1,
                              memory_order_relaxed);
  start_read(d, er->c, s->id, er->after, er->limit, read_events);
  free(er);
}

static void events_got(atl_daemon_t *d, atl_session_t *s, int status,
                       void *user) {
  events_req_t *er = user;
  if (s == NULL) {
    no_session(d, er->c, er->id, status);
    free(er);
    return;
  }
  /* A point past the session's end (a stale or forged resume point)
   * stands for the end: the reader waits for the next event rather than
   * for one numbered past it, which would wake it at every commit with
   * nothing to return. */
  if (er->after > s->committed_seq)
    er->after = s->committed_seq;
  if (er->wait_ms > 0 && s->committed_seq <= er->after && !d->shutting_down) {
    er->waited = 1;
    atomic_fetch_add_explicit(&atl_stats.polls_waiting, 1,
                              memory_order_relaxed);
    if (atl_session_wait(d, s, (uint32_t)er->wait_ms, events_wake, er) == 0)
      return;
    er->waited = 0;
    atomic_fetch_sub_explicit(&atl_stats.polls_waiting, 1,
                              memory_order_relaxed);
  }
  events_wake(d, s, er);
}

static void m_events_read(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"session", "after_seq", "limit",
                                      "wait_ms", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  const char *id = session_param(d, c, p);
  if (id == NULL)
    return;
  events_req_t *er = calloc(1, sizeof(*er));
  if (er == NULL) {
    atl_rpc_reply_error(d, c, ATL_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return;
  }
  er->c = c;
  snprintf(er->id, sizeof(er->id), "%s", id);
  er->limit = 1000;
  if (!int_param(d, c, p, "after_seq", 0, INT64_MAX, &er->after) ||
      !int_param(d, c, p, "limit", 1, 10000, &er->limit) ||
      !int_param(d, c, p, "wait_ms", 0, 60000, &er->wait_ms)) {
    free(er);
    return;
  }
  atl_session_get(d, id, events_got, er);
}

/* ---- image.get ---- */

/* An image as image.get and preview.get answer it: {id, mime, size, data}
 * with the bytes in base64 (only here, on the wire: the store and the
 * previews keep the bytes). NULL when out of memory. */
static json_object *image_json(const char *id, const char *mime,
                               const void *data, size_t len) {
  char *b64 = malloc(4 * ((len + 2) / 3) + 1);
  if (b64 == NULL)
    return NULL;
  EVP_EncodeBlock((unsigned char *)b64, data, (int)len);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_string(id));
  json_object_object_add(o, "mime", json_object_new_string(mime));
  json_object_object_add(o, "size", json_object_new_int64((int64_t)len));
  json_object_object_add(o, "data", json_object_new_string(b64));
  free(b64);
  return o;
}

/* image.get; with max_base64 (rr->a > 0) the picture is fitted to it
 * first, scaled down and re-encoded as a provider's images are
 * (image_fit.h), here on the threadpool: an MCP client refuses a result
 * over 1 MB, and a large render is several. */
static void read_image(read_req_t *rr, atl_store_reader_t *r) {
  char *mime = NULL;
  void *data = NULL;
  size_t len = 0;
  rr->status = atl_store_image_get(r, rr->id, &mime, &data, &len);
  if (rr->status != 0)
    return;
  atl_image_fit_t fit = {0};
  if (rr->a > 0) {
    atl_image_limits_t lim = {.max_base64 = (size_t)rr->a};
    rr->status = atl_image_fit(data, len, &lim, &fit);
    /* A format the fitter does not read (the canvas's WebP references)
     * goes as it is when it fits already. */
    if (rr->status == ATL_EINVAL && atl_base64_len(len) <= (size_t)rr->a)
      rr->status = 0;
  }
  if (rr->status == 0 && fit.changed) {
    rr->result = image_json(rr->id, fit.mime, fit.data, fit.len);
    if (rr->result != NULL) {
      json_object *f = json_object_new_object();
      json_object_object_add(f, "width", json_object_new_int(fit.width));
      json_object_object_add(f, "height", json_object_new_int(fit.height));
      json_object_object_add(f, "orig_width",
                             json_object_new_int(fit.orig_width));
      json_object_object_add(f, "orig_height",
                             json_object_new_int(fit.orig_height));
      json_object_object_add(f, "orig_size", json_object_new_int64(len));
      json_object_object_add(rr->result, "fitted", f);
    }
  } else if (rr->status == 0) {
    rr->result = image_json(rr->id, mime, data, len);
  }
  if (rr->status == 0 && rr->result == NULL)
    rr->status = ATL_ENOMEM;
  atl_image_fit_free(&fit);
  free(mime);
  free(data);
}

/* The "id" param of image.get and preview.get (what: "an image", "a
 * preview"): 64 lowercase hex digits, else NULL after an invalid-params
 * answer. */
static const char *image_id_param(atl_daemon_t *d, atl_rpc_call_t *c,
                                  json_object *p, const char *what) {
  json_object *v = NULL;
  const char *id = NULL;
  if (p && json_object_object_get_ex(p, "id", &v) &&
      json_object_is_type(v, json_type_string))
    id = json_object_get_string(v);
  size_t n = id ? strlen(id) : 0;
  int ok = n == 64;
  for (size_t i = 0; ok && i < n; i++)
    ok = (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f');
  if (!ok) {
    atl_rpc_invalid(d, c, "\"id\" must be %s id (64 lowercase hex digits)",
                    what);
    return NULL;
  }
  return id;
}

static void m_image_get(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"id", "max_base64", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  const char *id = image_id_param(d, c, p, "an image");
  if (id == NULL)
    return;
  json_object *mb = NULL;
  int64_t max_b64 = 0;
  if (json_object_object_get_ex(p, "max_base64", &mb)) {
    max_b64 =
        json_object_is_type(mb, json_type_int) ? json_object_get_int64(mb) : -1;
    if (max_b64 < 1024 || max_b64 > ((int64_t)1 << 30)) {
      atl_rpc_invalid(d, c,
                      "\"max_base64\" must be an integer from 1024 to 2^30: "
                      "the most bytes of base64 the answer's data may take");
      return;
    }
  }
  start_read(d, c, id, max_b64, 0, read_image);
}

/* ---- live previews (preview.c) ---- */

/* preview.get {id}: the picture, from memory, as image.get answers. */
static void m_preview_get(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"id", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  const char *id = image_id_param(d, c, p, "a preview");
  if (id == NULL)
    return;
  void *data = NULL;
  size_t len = 0;
  char mime[32] = "";
  int rc = atl_previews_get(d, id, &data, &len, mime, sizeof(mime));
  if (rc == ATL_ENOENT) {
    atl_rpc_reply_error(
        d, c, ATL_RPC_NO_IMAGE,
        "no such preview: a newer one replaced it, it expired "
        "(render.preview_ttl_s), or atelierd restarted; session.preview "
        "makes a new one",
        NULL);
    return;
  }
  json_object *o = rc == 0 ? image_json(id, mime, data, len) : NULL;
  free(data);
  if (o == NULL) {
    atl_rpc_reply_error(d, c, ATL_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return;
  }
  atl_rpc_reply(d, c, o);
  json_object_put(o);
}

typedef struct {
  atl_rpc_call_t *c;
  char id[ATL_SESSION_ID_LEN + 1];
  char quality[8]; /* "", "fast" or "hq" */
  char view[33];   /* a plugin name's size; "": every one */
} preview_req_t;

static void preview_got(atl_daemon_t *d, atl_session_t *s, int status,
                        void *user) {
  preview_req_t *pr = user;
  if (s == NULL) {
    no_session(d, pr->c, pr->id, status);
  } else {
    int n = atl_previews_request(d, s, pr->quality[0] ? pr->quality : NULL,
                                 pr->view[0] ? pr->view : NULL);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "enabled",
                           json_object_new_boolean(d->previews != NULL));
    json_object_object_add(o, "requested", json_object_new_int(n));
    atl_rpc_reply(d, pr->c, o);
    json_object_put(o);
  }
  free(pr);
}

/* session.preview {session, quality?, view?}: a new preview of view (or
 * of every previewed namespace the session has) now, at "fast" or "hq"
 * from now on. */
static void m_session_preview(atl_daemon_t *d, atl_rpc_call_t *c,
                              json_object *p) {
  static const char *const names[] = {"session", "quality", "view", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  const char *id = session_param(d, c, p);
  if (id == NULL)
    return;
  json_object *v = NULL;
  const char *q = NULL;
  if (json_object_object_get_ex(p, "quality", &v)) {
    q = json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                 : "";
    if (strcmp(q, "fast") != 0 && strcmp(q, "hq") != 0) {
      atl_rpc_invalid(d, c,
                      "\"quality\" must be \"fast\" (about 64 samples a "
                      "pixel) or \"hq\" (500)");
      return;
    }
  }
  const char *view = NULL;
  if (json_object_object_get_ex(p, "view", &v)) {
    view = json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                    : "";
    int known = 0;
    for (size_t i = 0; i < d->registry.n_plugins && !known; i++) {
      const atl_plugin_t *pl = &d->registry.plugins[i]->desc;
      known = pl->preview != NULL && strcmp(pl->preview_of, view) == 0;
    }
    if (!known) {
      char *views = atl_previews_views(d);
      atl_rpc_invalid(d, c,
                      "\"view\" must be a namespace a plugin previews: %s",
                      views && *views ? views : "no plugin does");
      free(views);
      return;
    }
  }
  preview_req_t *pr = calloc(1, sizeof(*pr));
  if (pr == NULL) {
    atl_rpc_reply_error(d, c, ATL_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return;
  }
  pr->c = c;
  snprintf(pr->id, sizeof(pr->id), "%s", id);
  snprintf(pr->quality, sizeof(pr->quality), "%s", q ? q : "");
  snprintf(pr->view, sizeof(pr->view), "%s", view ? view : "");
  atl_session_get(d, id, preview_got, pr);
}

static void m_agent_models(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *r = atl_agent_models(d);
  atl_rpc_reply(d, c, r);
  json_object_put(r);
}

/* provider.check {provider?, model?}: agent_check.c. */
static void checked(atl_daemon_t *d, json_object *report, void *user) {
  atl_rpc_call_t *c = user;
  if (report == NULL) {
    atl_rpc_reply_error(d, c, ATL_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return;
  }
  atl_rpc_reply(d, c, report);
  json_object_put(report);
}

static void m_provider_check(atl_daemon_t *d, atl_rpc_call_t *c,
                             json_object *p) {
  static const char *const names[] = {"provider", "model", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *v = NULL;
  const char *name = NULL, *model = NULL;
  if (p != NULL && json_object_object_get_ex(p, "provider", &v)) {
    if (!json_object_is_type(v, json_type_string) ||
        !atl_provider_name_ok(json_object_get_string(v))) {
      atl_rpc_invalid(
          d, c,
          "\"provider\" must name a [provider.NAME] section (1 to 32 "
          "of a-z, 0-9, '_' and '-')");
      return;
    }
    name = json_object_get_string(v);
  }
  if (!model_param(d, c, p, &model))
    return;
  atl_agent_check(d, name, model, checked, c);
}

/* ---- dispatch ---- */

static const struct {
  const char *name;
  method_fn fn;
  int mutates;  /* refused while shutting down */
  int new_work; /* refused while draining (admin accept_sessions false) */
} methods[] = {
    {"agent.models", m_agent_models, 0, 0},
    {"daemon.info", m_daemon_info, 0, 0},
    {"events.read", m_events_read, 0, 0},
    {"http.auth", m_http_auth, 0, 0},
    {"image.get", m_image_get, 0, 0},
    {"mcp.attach", atl_mcp_front_attach, 1, 0},
    {"preview.get", m_preview_get, 0, 0},
    {"provider.check", m_provider_check, 0, 0},
    {"session.cancel", m_session_cancel, 0, 0},
    {"session.create", m_session_create, 1, 1},
    {"session.delete", m_session_delete, 1, 0},
    {"session.get", m_session_get, 0, 0},
    {"session.list", m_session_list, 0, 0},
    {"session.preview", m_session_preview, 0, 1},
    {"session.send", m_session_send, 1, 1},
    {"tool.call", m_tool_call, 1, 0},
    {"tool.list", m_tool_list, 0, 0},
};
#define N_METHODS (sizeof(methods) / sizeof(methods[0]))

void atl_rpc_trace(atl_daemon_t *d, atl_rpc_call_t *c,
                   const atl_rpc_request_t *req, const char *line, size_t len) {
  json_object *params = req->params, *v = NULL, *session = NULL;
  int is_obj = params && json_object_is_type(params, json_type_object);
  if (is_obj)
    json_object_object_get_ex(params, "session", &session);
  const char *sid = session && json_object_is_type(session, json_type_string)
                        ? json_object_get_string(session)
                        : NULL;
  atl_tw_t w;
  if (!atl_tw_begin(&w, ATL_TR_RPC, sid && atl_is_session_id(sid) ? sid : NULL,
                    req->method))
    return;
  atl_tw_int(&w, "client", (int64_t)atl_conn_id(c->conn));
  /* The line as it came, like redis MONITOR, unless it could carry a
   * secret: tool arguments (a tool.call) or a "/tool {json}" message
   * (a session.send). Those are written from the parsed request, with a
   * redacting tool's values replaced; the raw line is not used for them at
   * all, since it may hold members the parser dropped (a key given
   * twice). */
  /* Without a redacting tool loaded (the shipped plugins have none) no
   * request can carry a secret argument: the raw line is always used. */
  int parsed = is_obj && d->registry.n_redacting > 0 &&
               (json_object_object_get_ex(params, "arguments", &v) ||
                (json_object_object_get_ex(params, "text", &v) &&
                 json_object_is_type(v, json_type_string) &&
                 json_object_get_string(v)[0] == '/'));
  char *text = NULL;
  if (parsed) {
    json_object *copy = NULL;
    if (json_object_deep_copy(params, &copy, NULL) == 0 && copy != NULL) {
      json_object *tool = NULL, *args = NULL, *msg = NULL;
      if (json_object_object_get_ex(copy, "name", &tool) &&
          json_object_is_type(tool, json_type_string) &&
          json_object_object_get_ex(copy, "arguments", &args)) {
        const atl_tool_entry_t *te =
            atl_registry_find(&d->registry, json_object_get_string(tool));
        if (te && (te->tool.flags & ATL_TOOL_REDACT_ARGS))
          json_object_object_add(copy, "arguments", atl_redact_args(args));
      }
      if (json_object_object_get_ex(copy, "text", &msg) &&
          json_object_is_type(msg, json_type_string)) {
        char *shown = atl_agent_redacted_text(d, json_object_get_string(msg));
        if (shown != NULL)
          json_object_object_add(copy, "text", json_object_new_string(shown));
        free(shown);
      }
      text =
          strdup(json_object_to_json_string_ext(copy, JSON_C_TO_STRING_PLAIN));
    }
    json_object_put(copy);
    line = text ? text : "null";
    len = strlen(line);
  }
  const char *key = parsed ? "params" : "request";
  if (len <= 2048) {
    atl_tw_json(&w, key, line, len);
  } else {
    char cut[32];
    snprintf(cut, sizeof(cut), "%s_cut", key);
    atl_tw_strn(&w, cut, line, atl_utf8_prefix(line, len, 2048));
    atl_tw_int(&w, "bytes", (int64_t)len);
  }
  atl_tw_end(&w);
  free(text);
}

void atl_rpc_dispatch(atl_daemon_t *d, atl_rpc_call_t *c,
                      atl_rpc_request_t *req) {
  size_t n = N_METHODS;
  static atl_series_t *series[N_METHODS];
  for (size_t i = 0; i < n; i++) {
    if (strcmp(methods[i].name, req->method) != 0)
      continue;
    if (c->series == NULL) { /* admin's forwarded calls count as admin's */
      if (series[i] == NULL)
        series[i] = atl_stats_series(ATL_FAM_RPC, methods[i].name);
      atl_rpc_call_measure(c, series[i]);
    }
    if (methods[i].mutates && d->shutting_down) {
      atl_rpc_reply_error(d, c, ATL_RPC_SHUTTING_DOWN,
                          "the daemon is shutting down", NULL);
    } else if (methods[i].new_work && d->refuse_sessions) {
      atl_rpc_reply_error(d, c, ATL_RPC_REFUSED,
                          "the daemon is draining: new sessions and messages "
                          "are refused until accept_sessions is true again",
                          NULL);
    } else {
      methods[i].fn(d, c, req->params);
    }
    atl_rpc_request_free(req);
    return;
  }
  atl_rpc_not_found(d, c, req->method, "known", methods, n, sizeof(methods[0]));
  atl_rpc_request_free(req);
}

void atl_rpc_not_found(atl_daemon_t *d, atl_rpc_call_t *c, const char *method,
                       const char *what, const void *table, size_t n,
                       size_t stride) {
  char msg[512];
  int k = snprintf(msg, sizeof(msg), "Method not found: '%.64s' (%s:", method,
                   what);
  for (size_t i = 0; i < n && k < (int)sizeof(msg) - 40; i++)
    k += snprintf(msg + k, sizeof(msg) - (size_t)k, "%s %s", i ? "," : "",
                  *(const char *const *)((const char *)table + i * stride));
  snprintf(msg + k, sizeof(msg) - (size_t)k, ")");
  atl_rpc_reply_error(d, c, ATL_RPC_METHOD_NOT_FOUND, msg, NULL);
}

const atl_server_kind_t atl_api_kind = {.name = "api",
                                        .umask = 0117,
                                        .check_peer = 0,
                                        .needs_auth = 0,
                                        .traced = 1,
                                        .dispatch = atl_rpc_dispatch,
                                        .accepts_fds = 1};
