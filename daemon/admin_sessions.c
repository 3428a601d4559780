/* The admin socket's sessions and session methods (doc/admin.md): every
 * session in the store, with the live state of those in memory, and one
 * session in depth with each plugin's own summary (admin_summary, plugin
 * ABI 1.4). The store is read on libuv's threadpool, never on the loop.
 */
#include "atl-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "agent/agent.h"
#include "toolcall.h"

typedef struct {
  uv_work_t work;
  atl_daemon_t *d;
  atl_rpc_call_t *c;
  int status;
  json_object *rows; /* from the store */
} list_req_t;

static json_object *time_json(int64_t ms) {
  char ts[32];
  atl_format_time_ms(ms, ts, sizeof(ts));
  return json_object_new_string(ts);
}

/* What a session in memory is doing, added to o. */
static void live_state(atl_session_t *s, json_object *o) {
  json_object *agent = atl_agent_summary(s);
  int run = 0, queued = s->queued > 0;
  if (agent != NULL) {
    json_object *v = NULL;
    run = json_object_object_get_ex(agent, "running", &v) &&
          json_object_get_boolean(v);
    queued |= json_object_object_get_ex(agent, "queued_messages", &v) &&
              json_object_get_int(v) > 0;
  }
  const char *state = s->busy || run ? "running" : queued ? "queued" : "idle";
  json_object_object_add(o, "state", json_object_new_string(state));
  json_object_object_add(o, "loaded", json_object_new_boolean(1));
  json_object_object_add(o, "tool",
                         s->running && s->running->tool_name
                             ? json_object_new_string(s->running->tool_name)
                             : NULL);
  json_object_object_add(o, "calls_queued",
                         json_object_new_int((int)s->queued));
  json_object_object_add(o, "last_seq", json_object_new_int64(s->last_seq));
  json_object_object_add(o, "updated", time_json(s->updated_ms));
  if (agent != NULL)
    json_object_object_add(o, "agent", agent);
}

static int list_row(const atl_session_row_t *row, void *user) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_string(row->id));
  json_object_object_add(o, "state", json_object_new_string("stored"));
  json_object_object_add(o, "loaded", json_object_new_boolean(0));
  json_object_object_add(
      o, "model", row->model[0] ? json_object_new_string(row->model) : NULL);
  json_object_object_add(o, "created", time_json(row->created_ms));
  json_object_object_add(o, "updated", time_json(row->updated_ms));
  json_object_object_add(o, "last_seq", json_object_new_int64(row->last_seq));
  json_object_object_add(o, "history_len",
                         json_object_new_int64(row->history_len));
  json_object_array_add(user, o);
  return 0;
}

static void list_work(uv_work_t *w) {
  list_req_t *lr = w->data;
  atl_store_reader_t *r = atl_daemon_reader_take(lr->d);
  if (r == NULL) {
    lr->status = ATL_ESTORE;
    return;
  }
  lr->rows = json_object_new_array();
  lr->status = atl_store_session_list(r, list_row, lr->rows);
  atl_daemon_reader_give(lr->d, r);
}

static void list_done(uv_work_t *w, int uvstatus) {
  list_req_t *lr = w->data;
  atl_daemon_t *d = lr->d;
  d->work_in_flight--;
  if (uvstatus != 0 || lr->status != 0) {
    atl_rpc_reply_error(d, lr->c, ATL_RPC_STORE_ERROR,
                        "the session store could not be read", NULL);
  } else {
    /* The store's rows, with the live state of the sessions in memory (a
     * session created a moment ago may be in memory before its row is
     * read, and is then listed from memory alone). */
    json_object *byid = json_object_new_object();
    size_t n = json_object_array_length(lr->rows), stored = n;
    for (size_t i = 0; i < n; i++) {
      json_object *o = json_object_array_get_idx(lr->rows, i);
      const char *id = json_object_get_string(json_object_object_get(o, "id"));
      json_object_object_add(byid, id, json_object_get(o));
    }
    for (size_t b = 0; b < d->n_buckets; b++) {
      for (atl_session_t *s = d->buckets[b]; s != NULL; s = s->hnext) {
        if (s->deleted)
          continue;
        json_object *o = json_object_object_get(byid, s->id);
        if (o == NULL) {
          o = json_object_new_object();
          json_object_object_add(o, "id", json_object_new_string(s->id));
          json_object_array_add(lr->rows, o);
        }
        live_state(s, o);
        json_object_object_add(
            o, "model", s->model[0] ? json_object_new_string(s->model) : NULL);
      }
    }
    json_object_put(byid);
    json_object *r = json_object_new_object();
    json_object_object_add(r, "sessions", json_object_get(lr->rows));
    json_object_object_add(
        r, "loaded", json_object_new_int64((int64_t)atl_sessions_loaded(d)));
    json_object_object_add(r, "stored", json_object_new_int64((int64_t)stored));
    atl_rpc_reply(d, lr->c, r);
    json_object_put(r);
  }
  json_object_put(lr->rows);
  free(lr);
}

void atl_admin_sessions(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  list_req_t *lr = calloc(1, sizeof(*lr));
  if (lr == NULL) {
    atl_rpc_reply_error(d, c, ATL_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return;
  }
  lr->work.data = lr;
  lr->d = d;
  lr->c = c;
  d->work_in_flight++;
  uv_queue_work(d->loop, &lr->work, list_work, list_done);
}

/* ---- session {session} ---- */

typedef struct {
  atl_rpc_call_t *c;
  char id[ATL_SESSION_ID_LEN + 1];
} get_req_t;

static void got(atl_daemon_t *d, atl_session_t *s, int status, void *user) {
  get_req_t *g = user;
  if (s == NULL) {
    char msg[96];
    snprintf(msg, sizeof(msg), "no such session: %s", g->id);
    atl_rpc_reply_error(
        d, g->c,
        status == ATL_ENOENT ? ATL_RPC_NO_SESSION : ATL_RPC_STORE_ERROR,
        status == ATL_ENOENT ? msg : atl_strerror(status), NULL);
    free(g);
    return;
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_string(s->id));
  json_object_object_add(o, "model",
                         s->model[0] ? json_object_new_string(s->model) : NULL);
  json_object_object_add(o, "created", time_json(s->created_ms));
  json_object_object_add(o, "history_len",
                         json_object_new_int64(s->history_len));
  live_state(s, o);
  /* Each namespace: its size as stored, and its plugin's own summary. */
  json_object *plugins = json_object_new_object();
  json_object_object_foreach(s->doc, ns_name, ns) {
    json_object *po = json_object_new_object();
    size_t len = 0;
    json_object_to_json_string_length(ns, JSON_C_TO_STRING_PLAIN, &len);
    json_object_object_add(po, "bytes", json_object_new_int64((int64_t)len));
    for (size_t i = 0; i < d->registry.n_plugins; i++) {
      atl_plugin_entry_t *pe = d->registry.plugins[i];
      if (strcmp(pe->desc.name, ns_name) != 0 || pe->desc.admin_summary == NULL)
        continue;
      json_object *sum = pe->desc.admin_summary(pe->state, s->id, ns);
      if (sum != NULL)
        json_object_object_add(po, "summary", sum);
    }
    json_object_object_add(plugins, ns_name, po);
  }
  json_object_object_add(o, "namespaces", plugins);
  atl_rpc_reply(d, g->c, o);
  json_object_put(o);
  free(g);
}

void atl_admin_session(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"session", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *v = NULL;
  if (p == NULL || !json_object_object_get_ex(p, "session", &v) ||
      !json_object_is_type(v, json_type_string) ||
      !atl_is_session_id(json_object_get_string(v))) {
    atl_rpc_invalid(d, c,
                    "\"session\" must be a 32-digit lowercase hex "
                    "session id (see sessions)");
    return;
  }
  get_req_t *g = calloc(1, sizeof(*g));
  if (g == NULL) {
    atl_rpc_reply_error(d, c, ATL_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return;
  }
  g->c = c;
  snprintf(g->id, sizeof(g->id), "%s", json_object_get_string(v));
  /* Loads it when it is only in the store, as any client would. */
  atl_session_get(d, g->id, got, g);
}
