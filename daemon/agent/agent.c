/* The agent loop (see agent.h): runs, turns, tool calls, offline mode,
 * replays. Its set-up (the provider, the system prompt, cassettes) is in
 * agent_setup.c, and the images going back to the model in
 * agent_images.c.
 *
 * A run goes through these steps, all on the loop thread:
 *   1. the user's message is committed to the history (run.started);
 *   2. a turn: the provider's request is sent; the answer streams in as
 *      server-sent events, each piece of text becoming a text.delta event;
 *      429s, 5xxs and connection errors are retried with backoff;
 *   3. the model's message is committed (text.done);
 *   4. its tool calls run one after the other, each through the same path
 *      as a tool.call (tool.started, then tool.finished); an unknown tool
 *      or bad arguments get an error result the model sees;
 *   5. the results are committed as one tool message; back to 2, unless
 *      the model made no call (run.completed), the turn limit is reached
 *      (run.limit_reached), or the run was cancelled (run.cancelled).
 */
#include "atl-build.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "agent_int.h"
#include "agent/sse.h"
#include "log.h"
#include "redact.h"
#include "slowlog.h"
#include "stats.h"
#include "trace.h"

/* ---- committing history and events ---- */

/* Appends msg (taken) to the history, in memory and in the store, with an
 * event of type carrying data (taken; may be NULL), in t (taken) with
 * what else it holds. */
static void commit_in(atl_agent_t *a, atl_txn_t *t, json_object *msg,
                      const char *type, json_object *data) {
  atl_session_t *s = a->s;
  json_object *role;
  json_object_object_get_ex(msg, "role", &role);
  json_object_object_add(msg, "ts_ms", json_object_new_int64(atl_now_ms()));
  char *content = atl_provider_json_text(msg);
  if (t != NULL && content != NULL)
    atl_txn_history_append(t, s->id, s->history_len,
                           json_object_get_string(role), content, atl_now_ms());
  s->history_len++;
  json_object_array_add(a->history, msg);
  char *dt = data ? atl_provider_json_text(data) : NULL;
  if (atl_session_emit_txn(a->d, s, t, type, dt, NULL, NULL) != 0)
    atl_log_kv(ATL_LOG_ERROR, "could not commit the history", "session", s->id,
               NULL);
  free(dt);
  free(content);
  json_object_put(data);
}

void atl__agent_commit(atl_agent_t *a, json_object *msg, const char *type,
                       json_object *data) {
  commit_in(a, atl_txn_new(), msg, type, data);
}

void atl__agent_emit(atl_agent_t *a, const char *type, json_object *data) {
  char *dt = data ? atl_provider_json_text(data) : NULL;
  atl_session_emit(a->d, a->s, type, dt, NULL, NULL);
  free(dt);
  json_object_put(data);
}

json_object *atl__agent_obj_str(const char *k, const char *v) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, k, json_object_new_string(v));
  return o;
}

json_object *atl__agent_text_message(const char *role, const char *text) {
  json_object *m = json_object_new_object();
  json_object_object_add(m, "role", json_object_new_string(role));
  json_object *parts = json_object_new_array();
  json_object *p = atl__agent_obj_str("type", "text");
  json_object_object_add(p, "text", json_object_new_string(text));
  json_object_array_add(parts, p);
  json_object_object_add(m, "parts", parts);
  return m;
}

/* ---- ending a run ---- */

void atl__agent_run_end(atl_agent_t *a, const char *type, json_object *data) {
  if (data == NULL)
    data = json_object_new_object();
  json_object_object_add(data, "turns", json_object_new_int((int)a->turns));
  json_object *u = json_object_new_object();
  json_object_object_add(u, "input_tokens",
                         json_object_new_int64(a->input_tokens));
  json_object_object_add(u, "output_tokens",
                         json_object_new_int64(a->output_tokens));
  json_object_object_add(data, "usage", u);
  atl__agent_emit(a, type, data);
  atl_log_kv(ATL_LOG_INFO, "run ended", "session", a->s->id, "how", type, NULL);
  if (atl_trace_wants(ATL_TR_RUN)) {
    json_object *f = json_object_new_object();
    json_object_object_add(f, "how", json_object_new_string(type));
    json_object_object_add(f, "turns", json_object_new_int((int)a->turns));
    json_object_object_add(f, "tokens_in",
                           json_object_new_int64(a->input_tokens));
    json_object_object_add(f, "tokens_out",
                           json_object_new_int64(a->output_tokens));
    atl_trace_emit(ATL_TR_RUN, a->s->id, "end", f);
  }
  a->active = 0;
  a->cancel = 0;
  free(a->model);
  a->model = NULL;
  json_object_put(a->calls);
  a->calls = NULL;
  json_object_put(a->results);
  a->results = NULL;
  atl_session_t *s = a->s;
  atl__agent_run_next(a);
  if (!a->active)
    atl_session_unref(a->d, s);
}

void atl__agent_run_error(atl_agent_t *a, int http_status, const char *msg) {
  atl__agent_run_fail(a, NULL, http_status, msg);
}

void atl__agent_run_fail(atl_agent_t *a, const char *reason, int http_status,
                         const char *msg) {
  json_object *data = atl__agent_obj_str("message", msg);
  if (http_status > 0)
    json_object_object_add(data, "status", json_object_new_int(http_status));
  if (reason != NULL)
    json_object_object_add(data, "reason", json_object_new_string(reason));
  atl_log_kv(ATL_LOG_ERROR, "run failed", "session", a->s->id, "reason",
             reason ? reason : "error", "error", msg, NULL);
  atl__agent_run_end(a, "run.error", data);
}

/* ---- tool calls ---- */

static void call_next(atl_agent_t *a);

void atl__agent_add_result(atl_agent_t *a, json_object *call,
                           json_object *env) {
  json_object *id, *name, *ok;
  json_object_object_get_ex(call, "id", &id);
  json_object_object_get_ex(call, "name", &name);
  json_object *p = atl__agent_obj_str("type", "tool_result"), *made;
  json_object_object_add(p, "id", json_object_get(id));
  json_object_object_add(p, "name", json_object_get(name));
  if (json_object_object_get_ex(call, "made_id", &made))
    json_object_object_add(p, "made_id", json_object_get(made));
  int success = json_object_object_get_ex(env, "success", &ok) &&
                json_object_get_boolean(ok);
  /* The images a tool returned go back to the model as images, not as
   * ids: the history keeps the ids, the request gets the bytes. */
  json_object *imgs;
  if (json_object_object_get_ex(env, "images", &imgs) &&
      json_object_is_type(imgs, json_type_array)) {
    json_object *refs = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(imgs); i++) {
      json_object *im = json_object_array_get_idx(imgs, i), *iid, *mime;
      if (!json_object_object_get_ex(im, "id", &iid) ||
          !json_object_object_get_ex(im, "mime", &mime))
        continue;
      json_object *ref = json_object_new_object();
      json_object_object_add(ref, "id", json_object_get(iid));
      json_object_object_add(ref, "mime", json_object_get(mime));
      json_object_array_add(refs, ref);
    }
    json_object_object_add(p, "images", refs);
  }
  json_object_object_add(p, "result", env);
  json_object_object_add(p, "is_error", json_object_new_boolean(!success));
  json_object_array_add(a->results, p);
}

json_object *atl__agent_error_envelope(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  json_object *env = json_object_new_object();
  json_object_object_add(env, "success", json_object_new_boolean(0));
  json_object_object_add(env, "error", json_object_new_string(msg));
  return env;
}

static void call_done(atl_daemon_t *d, int rpc_status, const char *envelope,
                      void *user) {
  (void)d;
  atl_agent_t *a = user;
  json_object *call = json_object_array_get_idx(a->calls, a->next_call - 1);
  json_object *env = rpc_status == 0 && envelope
                         ? json_tokener_parse(envelope)
                         : atl__agent_error_envelope(
                               "the tool call could not be "
                               "completed (%s); nothing changed",
                               rpc_status == 0 ? "no answer" : "store error");
  atl__agent_add_result(a, call,
                        env ? env : atl__agent_error_envelope("no result"));
  call_next(a);
}

/* A "/tool" message's result is the user's doing, not a call the model
 * made: the history gets it as the answer's text, since every provider
 * refuses a tool result that answers no call of the model. */
static void direct_done(atl_agent_t *a) {
  json_object *part = json_object_array_get_idx(a->results, 0), *result;
  json_object *name;
  json_object_object_get_ex(part, "name", &name);
  json_object_object_get_ex(part, "result", &result);
  char *text = NULL;
  if (asprintf(&text, "/%s answered: %s", json_object_get_string(name),
               json_object_to_json_string_ext(
                   result, JSON_C_TO_STRING_PLAIN |
                               JSON_C_TO_STRING_NOSLASHESCAPE)) < 0)
    text = NULL;
  json_object *count = json_object_new_object();
  json_object_object_add(count, "count", json_object_new_int(1));
  atl__agent_commit(a, atl__agent_text_message("model", text ? text : ""),
                    "tool.results", count);
  free(text);
  json_object_put(a->results);
  a->results = NULL;
  json_object_put(a->calls);
  a->calls = NULL;
  atl__agent_run_end(a, "run.completed", NULL);
}

static void calls_done(atl_agent_t *a) {
  if (a->direct) {
    direct_done(a);
    return;
  }
  json_object *msg = json_object_new_object();
  json_object_object_add(msg, "role", json_object_new_string("tool"));
  /* The results go with the provider of the calls they answer. */
  if (a->tag != NULL)
    json_object_object_add(msg, "provider", json_object_new_string(a->tag));
  json_object *count = json_object_new_object();
  json_object_object_add(
      count, "count",
      json_object_new_int((int)json_object_array_length(a->results)));
  json_object_object_add(msg, "parts", a->results);
  a->results = NULL;
  atl__agent_commit(a, msg, "tool.results", count);
  json_object_put(a->calls);
  a->calls = NULL;
  if (a->cancel) {
    atl__agent_run_end(a, "run.cancelled", NULL);
  } else if (a->turns >= a->d->cfg->max_turns) {
    char text[128];
    snprintf(text, sizeof(text),
             "Reached maximum turn limit (%u turns). Send a message to "
             "continue.",
             a->d->cfg->max_turns);
    atl__agent_commit(a, atl__agent_text_message("model", text), "text.done",
                      atl__agent_obj_str("text", text));
    atl__agent_run_end(a, "run.limit_reached",
                       atl__agent_obj_str("message", text));
  } else {
    atl__agent_turn_start(a);
  }
}

/* A call answered without running (env taken): its result, and a
 * tool.finished event as a call that ran has, so that the page and the
 * trace see how it ended. */
static void unrun(atl_agent_t *a, json_object *call, const char *tool,
                  json_object *id, int redact, json_object *env) {
  json_object *ev = json_object_new_object(), *op = json_object_new_object(),
              *args = NULL;
  json_object_object_add(op, "tool", json_object_new_string(tool ? tool : ""));
  json_object_object_get_ex(call, "arguments", &args);
  json_object_object_add(op, "arguments",
                         redact ? json_object_new_string(ATL_REDACTED)
                                : json_object_get(args));
  json_object_object_add(ev, "operation", op);
  json_object_object_add(ev, "id", json_object_get(id));
  json_object_object_add(ev, "success", json_object_new_boolean(0));
  json_object *err;
  json_object_object_get_ex(env, "error", &err);
  json_object_object_add(ev, "error", json_object_get(err));
  json_object_object_add(ev, "duration_ms", json_object_new_int(0));
  char ts[32];
  atl_format_time_ms(atl_now_ms(), ts, sizeof(ts));
  json_object_object_add(ev, "timestamp", json_object_new_string(ts));
  atl__agent_add_result(a, call, env);
  atl__agent_emit(a, "tool.finished", ev);
}

/* Runs the calls one after the other: each sees the document the previous
 * one committed. The cancel flag is honoured between calls, never in the
 * middle of one. */
/* The form of a call to the tool te typed as a message: "/create_shape
 * {\"id\": …, \"type\": …}", its schema's required members (of its first
 * alternative, for a schema of alternatives). Malloc'd; NULL on no
 * memory. */
static char *direct_form(const atl_tool_entry_t *te) {
  json_object *schema = json_tokener_parse(te->tool.input_schema), *v, *req;
  json_object *root = schema;
  if (schema != NULL &&
      !json_object_object_get_ex(schema, "properties", NULL) &&
      (json_object_object_get_ex(schema, "oneOf", &v) ||
       json_object_object_get_ex(schema, "anyOf", &v)) &&
      json_object_is_type(v, json_type_array) && json_object_array_length(v))
    root = json_object_array_get_idx(v, 0);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL) {
    json_object_put(schema);
    return NULL;
  }
  fprintf(f, "/%s {", te->tool.name);
  if (root != NULL && json_object_object_get_ex(root, "required", &req) &&
      json_object_is_type(req, json_type_array))
    for (size_t i = 0; i < json_object_array_length(req); i++)
      fprintf(f, "%s\"%s\": …", i ? ", " : "",
              json_object_get_string(json_object_array_get_idx(req, i)));
  fputc('}', f);
  fclose(f);
  json_object_put(schema);
  return buf;
}

static void call_next(atl_agent_t *a) {
  size_t n = json_object_array_length(a->calls);
  while (a->next_call < n) {
    json_object *call = json_object_array_get_idx(a->calls, a->next_call++);
    json_object *name, *args, *bad, *id;
    json_object_object_get_ex(call, "name", &name);
    json_object_object_get_ex(call, "arguments", &args);
    json_object_object_get_ex(call, "id", &id);
    const char *tool = json_object_get_string(name);
    /* A tool that asks for its arguments to be kept out of traces gets
     * them kept out of the events too. */
    const atl_tool_entry_t *te = atl_registry_find(&a->d->registry, tool);
    int redact = te != NULL && (te->tool.flags & ATL_TOOL_REDACT_ARGS);
    json_object *started = atl__agent_obj_str("tool", tool);
    json_object_object_add(started, "id", json_object_get(id));
    json_object_object_add(started, "arguments",
                           redact ? json_object_new_string(ATL_REDACTED)
                                  : json_object_get(args));
    atl__agent_emit(a, "tool.started", started);
    if (a->cancel) {
      unrun(a, call, tool, id, redact,
            atl__agent_error_envelope("not run: the user cancelled the run"));
      continue;
    }
    if (a->direct && te != NULL && !(te->tool.flags & ATL_TOOL_NOT_FOR_MODEL) &&
        json_object_object_get_ex(call, "bad_arguments", &bad)) {
      /* A person typed it: say the form it takes. (An unknown tool's
       * name, or one a message may not call, is the tool-call path's to
       * report.) */
      char *form = direct_form(te);
      const char *typed = json_object_get_string(bad);
      typed += strspn(typed, " \t\n");
      unrun(a, call, tool, id, redact,
            atl__agent_error_envelope(
                "the arguments are not a JSON object: %.300s. Write the "
                "tool's name, a space and its arguments as one JSON object: "
                "%s (tool.list has its whole schema; the page lists the "
                "tools when you type /)",
                redact ? ATL_REDACTED : typed, form ? form : tool));
      free(form);
      continue;
    }
    if (!a->direct && json_object_object_get_ex(call, "bad_arguments", &bad)) {
      /* Nothing is skipped: the model learns its arguments were broken,
       * and why, when its answer reached the output limit inside them. */
      const char *shown = redact ? ATL_REDACTED : json_object_get_string(bad);
      unrun(a, call, tool, id, redact,
            a->cut ? atl__agent_error_envelope(
                         "not run: your answer reached its output limit "
                         "(max_tokens) inside these arguments, so they are "
                         "cut short: %.300s. Make the call again with less in "
                         "it, or split the work into several calls.",
                         shown)
                   : atl__agent_error_envelope(
                         "the arguments are not a JSON object: %.300s", shown));
      continue;
    }
    /* An unknown tool gets its error from the tool-call path itself, with
     * the list of the tools there are. */
    atl_toolcall_start(a->d, a->s, tool, json_object_get_string(id), NULL, args,
                       0, call_done, a);
    return;
  }
  calls_done(a);
}

/* ---- a turn ---- */

static void on_text(const char *text, size_t len, void *user) {
  atl_agent_t *a = user;
  json_object *data = json_object_new_object();
  json_object_object_add(data, "text",
                         json_object_new_string_len(text, (int)len));
  atl__agent_emit(a, "text.delta", data);
}

static void turn_release(atl_agent_t *a) {
  atl_agent_call_free(&a->call);
}

static void retry_fired(uv_timer_t *t) {
  atl_agent_t *a = t->data;
  if (a->d->shutting_down)
    atl__agent_run_error(a, 0,
                         "the daemon is shutting down; send the message again "
                         "once it is back");
  else
    atl__agent_turn_start(a);
}

/* 429, 5xx and connection errors are worth another try; the rest are our
 * mistake or the provider's refusal, and would fail again. */
static int retryable(const atl_http_response_t *r) {
  return r->status < 0 || r->http_code == 429 || r->http_code >= 500;
}

/* The call to run for a tool_call part of the model's message. A call of
 * a tool whose arguments are secret runs with them, from a copy, while
 * the part itself (committed to the history, and so sent back to the
 * model and shown in the page) keeps only their shape: the model wrote
 * them and needs them no more, and nothing persisted may hold them. */
static json_object *call_of(atl_agent_t *a, json_object *part) {
  json_object *name, *args, *copy = NULL;
  json_object_object_get_ex(part, "name", &name);
  const atl_tool_entry_t *te =
      atl_registry_find(&a->d->registry, json_object_get_string(name));
  if (te == NULL || !(te->tool.flags & ATL_TOOL_REDACT_ARGS) ||
      json_object_deep_copy(part, &copy, NULL) != 0)
    return json_object_get(part);
  if (json_object_object_get_ex(part, "arguments", &args))
    json_object_object_add(part, "arguments", atl_redact_args(args));
  if (json_object_object_get_ex(part, "bad_arguments", NULL))
    json_object_object_add(part, "bad_arguments",
                           json_object_new_string(ATL_REDACTED));
  return copy;
}

/* A model message came whole (msg taken): commit it, then run its calls
 * or end the run. */
static void turn_finished(atl_agent_t *a, json_object *msg, uint64_t ms) {
  json_object *text = NULL, *parts = NULL;
  atl_agent_provider_t *p = a->d->agent;
  json_object_object_add(msg, "latency_ms", json_object_new_int64((int64_t)ms));
  json_object_object_add(msg, "model", json_object_new_string(a->model));
  /* Whose answer it is: its signatures and ids go back to that provider
   * only (a cassette's turns are nobody's). */
  a->tag = a->replay == NULL && p->ops != NULL ? p->cfg.type : NULL;
  if (a->tag != NULL)
    json_object_object_add(msg, "provider", json_object_new_string(a->tag));
  /* Ids unique in the session: Anthropic refuses a request with the same
   * tool_use id twice, and some servers number calls afresh each answer. */
  if (a->ids == NULL)
    a->ids = json_object_new_object();
  atl_provider_claim_ids(msg, a->s->history_len, a->ids, NULL);
  json_object_object_get_ex(msg, "parts", &parts);
  a->turns++;
  a->attempt = 0;
  /* The text and the calls of this message, in order. */
  json_object *calls = json_object_new_array();
  for (size_t i = 0; parts && i < json_object_array_length(parts); i++) {
    json_object *part = json_object_array_get_idx(parts, i), *type;
    if (!json_object_object_get_ex(part, "type", &type))
      continue;
    if (strcmp(json_object_get_string(type), "tool_call") == 0)
      json_object_array_add(calls, call_of(a, part));
    else if (strcmp(json_object_get_string(type), "text") == 0 && text == NULL)
      json_object_object_get_ex(part, "text", &text);
  }
  json_object *done =
      atl__agent_obj_str("text", text ? json_object_get_string(text) : "");
  json_object_object_add(done, "latency_ms",
                         json_object_new_int64((int64_t)ms));
  json_object_get(msg);
  atl__agent_commit(a, msg, "text.done", done);
  /* A turn cut short, refused or unreadable is acted on, not taken for an
   * answer (agent_stop.c). */
  int taken = atl__agent_stop(a, msg, calls);
  /* Calls cut at the output limit: the last one's arguments are broken,
   * and its error says why. */
  a->cut = atl_turn_stop_kind(atl_provider_str(msg, "stop_reason")) ==
           ATL_STOP_LENGTH;
  json_object_put(msg);
  if (taken) {
    json_object_put(calls);
    return;
  }
  if (json_object_array_length(calls) == 0) {
    json_object_put(calls);
    atl__agent_run_end(a, "run.completed", NULL);
    return;
  }
  a->calls = calls;
  a->next_call = 0;
  a->results = json_object_new_array();
  call_next(a);
}

/* The turn's figures (stats.h, per "provider/model") and its end in the
 * trace. err_kind: ATL_MS_ERR_* of a failure, -1 for none. */
static void count_turn(atl_agent_t *a, int err_kind, int retried,
                       const char *error) {
  atl_agent_provider_t *p = a->d->agent;
  char label[96];
  snprintf(label, sizeof(label), "%s/%s", p->cfg.name ? p->cfg.name : "",
           a->model ? a->model : "");
  uint64_t us = atl_stats_us_since(a->call_started_ns);
  atl_series_t *st = atl_stats_series(ATL_FAM_MODEL, label);
  if (st != NULL) {
    atl_hist_add(&st->h, us, err_kind >= 0);
    if (err_kind >= 0)
      atomic_fetch_add_explicit(&st->n[err_kind], 1, memory_order_relaxed);
    if (retried)
      atomic_fetch_add_explicit(&st->n[ATL_MS_RETRIES], 1,
                                memory_order_relaxed);
    if (err_kind < 0) {
      if (a->call.turn.input_tokens > 0)
        atomic_fetch_add_explicit(&st->n[ATL_MS_TOKENS_IN],
                                  (uint64_t)a->call.turn.input_tokens,
                                  memory_order_relaxed);
      if (a->call.turn.output_tokens > 0)
        atomic_fetch_add_explicit(&st->n[ATL_MS_TOKENS_OUT],
                                  (uint64_t)a->call.turn.output_tokens,
                                  memory_order_relaxed);
    }
  }
  if (a->call.first_byte_ns > a->call_started_ns) {
    atl_series_t *tt = atl_stats_series(ATL_FAM_TTFB, label);
    if (tt != NULL)
      atl_hist_add(&tt->h, (a->call.first_byte_ns - a->call_started_ns) / 1000,
                   0);
  }
  if (atl_slowlog_wants(us)) {
    json_object *dt = json_object_new_object();
    json_object_object_add(dt, "turn", json_object_new_int((int)a->turns + 1));
    json_object_object_add(
        dt, "first_byte_ms",
        json_object_new_int64(
            a->call.first_byte_ns > a->call_started_ns
                ? (int64_t)((a->call.first_byte_ns - a->call_started_ns) /
                            1000000u)
                : -1));
    json_object_object_add(dt, "tokens_in",
                           json_object_new_int64(a->call.turn.input_tokens));
    json_object_object_add(dt, "tokens_out",
                           json_object_new_int64(a->call.turn.output_tokens));
    if (error != NULL)
      json_object_object_add(dt, "error", json_object_new_string(error));
    atl_slowlog_add("turn", a->s->id, label, us, dt);
  }
  if (!atl_trace_wants(ATL_TR_TURN))
    return;
  json_object *f = json_object_new_object();
  json_object_object_add(f, "ok", json_object_new_boolean(err_kind < 0));
  json_object_object_add(f, "ms", json_object_new_int64((int64_t)(us / 1000)));
  json_object_object_add(f, "tokens_in",
                         json_object_new_int64(a->call.turn.input_tokens));
  json_object_object_add(f, "tokens_out",
                         json_object_new_int64(a->call.turn.output_tokens));
  json_object_object_add(f, "tool_calls",
                         json_object_new_int((int)a->call.turn.n_calls));
  if (error != NULL)
    json_object_object_add(f, "error", json_object_new_string(error));
  if (retried)
    json_object_object_add(f, "retry", json_object_new_boolean(1));
  atl_trace_emit(ATL_TR_TURN, a->s->id, "end", f);
}

static void turn_done(const atl_http_response_t *r, void *user) {
  atl_agent_t *a = user;
  atl_agent_provider_t *p = a->d->agent;
  uint64_t ms = (atl_mono_ns() - a->call_started_ns) / 1000000u;
  if (a->cancel) {
    /* The partial answer is dropped: the history keeps whole turns. */
    turn_release(a);
    atl__agent_run_end(a, "run.cancelled", NULL);
    return;
  }
  if (a->d->shutting_down) {
    turn_release(a);
    atl__agent_run_error(a, 0,
                         "the daemon is shutting down; send the message again "
                         "once it is back");
    return;
  }
  int ok = r->status == 0 && r->http_code >= 200 && r->http_code < 300 &&
           a->call.turn.error == NULL && a->call.turn.done;
  if (!ok) {
    char msg[600];
    char *why = atl_agent_call_said(&a->call, r);
    /* A provider's own report of a passing trouble in the stream (an
     * overload after the 200) is retried like the same status would be;
     * a stream we could not read is not. */
    int transient = a->call.turn.error != NULL && a->call.turn.error_transient;
    int broken = a->call.turn.error != NULL && !transient;
    /* Once an answer has begun, its text is out as text.delta events: a
     * retry would say it twice, so a cut answer is an error instead. */
    int begun = a->call.turn.text_len > 0 || a->call.turn.n_calls > 0;
    if (a->call.over_cap)
      snprintf(msg, sizeof(msg), "%s", a->call.turn.error);
    else if (broken)
      snprintf(msg, sizeof(msg), "the provider's answer was broken: %s",
               a->call.turn.error);
    else if (transient)
      snprintf(msg, sizeof(msg), "%s", a->call.turn.error);
    else if (r->status < 0 && begun)
      snprintf(msg, sizeof(msg),
               "the provider's answer stopped before its end (a truncated "
               "stream): %s",
               r->error ? r->error : "connection closed");
    else if (r->status < 0)
      snprintf(msg, sizeof(msg), "the provider could not be reached: %s",
               r->error ? r->error : "connection failed");
    else if (r->http_code >= 300)
      snprintf(msg, sizeof(msg), "the provider answered HTTP %ld: %s",
               r->http_code, why ? why : "(no message)");
    else
      snprintf(msg, sizeof(msg),
               "the provider's answer stopped before its "
               "end (a truncated stream)");
    /* Refused for length (the estimate was short, or the window smaller
     * than the table says): the window it names is believed, and the
     * request is made again within it, once a run. */
    uint64_t window = 0;
    int with_output = 0;
    if (!broken && !begun && r->http_code >= 400 && r->http_code < 500 &&
        atl__agent_context_refusal(why, &window, &with_output) &&
        a->context_retries < 1) {
      free(why);
      a->context_retries++;
      atl_agent_request_cache_t *c = &a->req_cache;
      uint64_t out = p->ops->output_cap ? p->ops->output_cap(&p->cfg, a->model)
                                        : p->cfg.max_tokens;
      uint64_t lower = window == 0                 ? c->last_estimate / 2
                       : !with_output              ? window - window / 8
                       : window > out + window / 8 ? window - out - window / 8
                                                   : window / 4;
      c->ceiling = c->ceiling && c->ceiling < lower ? c->ceiling : lower;
      if (c->bytes_per_token > 0)
        c->bytes_per_token *= 0.8;
      atl_log_kv(ATL_LOG_WARN,
                 "refused for length; holding the request "
                 "within a smaller window",
                 "session", a->s->id, "error", msg, NULL);
      count_turn(a, ATL_MS_ERR_HTTP, 1, msg);
      turn_release(a);
      atl__agent_turn_start(a);
      return;
    }
    free(why);
    int again = !broken && !begun &&
                (transient ||
                 ((r->status < 0 || r->http_code >= 300) && retryable(r))) &&
                a->attempt < 3;
    count_turn(a,
               broken || begun || a->call.over_cap ? ATL_MS_ERR_STREAM
               : r->status < 0                     ? ATL_MS_ERR_NETWORK
               : r->http_code >= 300               ? ATL_MS_ERR_HTTP
                                                   : ATL_MS_ERR_STREAM,
               again, msg);
    turn_release(a);
    if (again) {
      /* 1 s, 2 s, then 4 s, or what Retry-After says, with jitter so
       * that sessions that failed together do not come back together. */
      uint64_t delay = 1000u << (a->attempt - 1);
      /* A provider that says when to come back is believed, within a
       * minute: a longer wait is better ended as an error the user sees. */
      if (r->retry_after_s > 0)
        delay =
            r->retry_after_s > 60 ? 60000u : (uint64_t)r->retry_after_s * 1000u;
      delay += (uint64_t)(rand() % 250);
      atl_log_kv(ATL_LOG_WARN, "model call failed; retrying", "session",
                 a->s->id, "error", msg, NULL);
      uv_timer_start(&a->retry_timer, retry_fired, delay, 0);
      return;
    }
    atl__agent_run_error(a, r->http_code >= 300 ? (int)r->http_code : 0, msg);
    return;
  }
  count_turn(a, -1, 0, NULL);
  json_object *msg = atl_turn_message(&a->call.turn);
  /* The provider's count of what was sent teaches the estimate. */
  atl_agent_calibrate(&a->req_cache, a->call.turn.input_tokens);
  if (a->call.turn.input_tokens > 0)
    a->input_tokens += a->call.turn.input_tokens;
  if (a->call.turn.output_tokens > 0)
    a->output_tokens += a->call.turn.output_tokens;
  turn_release(a);
  turn_finished(a, msg, ms);
}

/* The next turn of a cassette, played through the same path as a model's
 * answer: its text streams out in pieces, its calls run for real. */
static void replay_turn(atl_agent_t *a) {
  size_t n = json_object_array_length(a->replay);
  json_object *msg = NULL;
  if (a->replay_pos >= n ||
      json_object_deep_copy(
          json_object_array_get_idx(a->replay, a->replay_pos++), &msg, NULL) !=
          0)
    msg = atl__agent_text_message("model",
                                  "(The recording ends here. Configure an LLM "
                                  "provider to go on from this scene.)");
  json_object *parts, *part, *type, *text;
  json_object_object_get_ex(msg, "parts", &parts);
  for (size_t i = 0; parts && i < json_object_array_length(parts); i++) {
    part = json_object_array_get_idx(parts, i);
    if (!json_object_object_get_ex(part, "type", &type) ||
        strcmp(json_object_get_string(type), "text") != 0 ||
        !json_object_object_get_ex(part, "text", &text))
      continue;
    /* A few words at a time, as a model's stream would bring them. */
    const char *t = json_object_get_string(text), *start = t;
    int words = 0;
    for (const char *c = t;; c++) {
      if (*c == ' ' || *c == '\0')
        words++;
      if ((*c == ' ' && words % 4 == 0) || *c == '\0') {
        size_t len = (size_t)(c - start) + (*c == ' ');
        if (len > 0)
          on_text(start, len, a);
        start = c + 1;
      }
      if (*c == '\0')
        break;
    }
  }
  turn_finished(a, msg, 0);
}

static void turn_request(atl_agent_t *a, json_object *refs);

static void images_ready(void *user, json_object *refs) {
  turn_request(user, refs);
}

void atl__agent_turn_start(atl_agent_t *a) {
  if (a->cancel) {
    atl__agent_run_end(a, "run.cancelled", NULL);
    return;
  }
  if (a->replay != NULL) {
    replay_turn(a);
    return;
  }
  json_object *refs = atl_agent_newest_images(a->history);
  if (json_object_array_length(refs) == 0 ||
      atl_agent_load_images(a->d, refs, images_ready, a) != 0)
    turn_request(a, refs);
  json_object_put(refs);
}

#define MAX_COMPACTIONS 3

/* A summary is made (or the run was cancelled meanwhile, or the summary
 * call failed for now): the request is asked for again, with the images
 * it was to carry. */
static void compacted(atl_agent_t *a, int status, const char *why) {
  json_object *refs = a->pending_refs;
  a->pending_refs = NULL;
  if (status == 0 || a->cancel || a->d->shutting_down) {
    atl__agent_run_end(a, "run.cancelled", NULL);
  } else if (status > 0) {
    turn_request(a, refs);
  } else if (a->compactions < MAX_COMPACTIONS) {
    /* The summary call met a passing trouble: the turn starts again after
     * a pause, as a failed model call does, and summarises again. */
    uint64_t delay = (1000u << (a->compactions - 1)) + (uint64_t)(rand() % 250);
    atl_log_kv(ATL_LOG_WARN, "summary call failed; retrying", "session",
               a->s->id, "error", why ? why : "", NULL);
    uv_timer_start(&a->retry_timer, retry_fired, delay, 0);
  } else {
    char msg[800];
    snprintf(msg, sizeof(msg),
             "The conversation no longer fits the model's context window and "
             "its oldest part could not be summarised: %s. Send the message "
             "again later.",
             why ? why : "the provider did not answer");
    atl__agent_run_fail(a, "context", 0, msg);
  }
  json_object_put(refs);
}

/* The request would not fit the context window even with earlier results
 * short: the oldest messages are summarised first (agent_context.c), at
 * most MAX_COMPACTIONS times a run (failed attempts included). */
static void compact(atl_agent_t *a, json_object *refs) {
  atl_agent_request_cache_t *c = &a->req_cache;
  int rc = ATL_E2BIG;
  if (a->compactions < MAX_COMPACTIONS) {
    a->compactions++;
    a->pending_refs = json_object_get(refs);
    rc = atl__agent_compact(a, compacted);
    if (rc != 0) {
      json_object_put(a->pending_refs);
      a->pending_refs = NULL;
    }
  }
  if (rc == 0)
    return;
  char msg[400];
  snprintf(msg, sizeof(msg),
           "The conversation does not fit the model's context window even "
           "with its oldest part summarised (about %llu tokens > %llu): the "
           "newest messages alone are too long. Send a new message (earlier "
           "results then go in short), start a new session, or raise "
           "context_tokens in [provider.%s].",
           (unsigned long long)c->last_estimate,
           (unsigned long long)c->last_budget, a->d->agent->cfg.name);
  atl__agent_run_fail(a, "context", 0, msg);
}

static void turn_request(atl_agent_t *a, json_object *refs) {
  atl_agent_provider_t *p = a->d->agent;
  if (a->cancel || a->d->shutting_down) {
    atl__agent_run_end(a, "run.cancelled", NULL);
    return;
  }
  atl_provider_req_t req;
  size_t short_below = a->req_cache.short_below;
  int rc = atl_agent_request(a->d, &a->req_cache, a->model, a->s->doc,
                             a->history, refs, &req);
  if (rc == ATL_E2BIG) {
    compact(a, refs);
    return;
  }
  if (rc != 0) {
    atl__agent_run_error(a, 0, "could not build the request to the provider");
    return;
  }
  if (a->req_cache.short_below > short_below) {
    /* Never silently: the page and the log say what goes in short. */
    json_object *data = json_object_new_object();
    json_object_object_add(
        data, "short_below",
        json_object_new_int64((int64_t)a->req_cache.short_below));
    json_object_object_add(
        data, "tokens",
        json_object_new_int64((int64_t)a->req_cache.last_estimate));
    json_object_object_add(
        data, "budget",
        json_object_new_int64((int64_t)a->req_cache.last_budget));
    atl__agent_emit(a, "context.trimmed", data);
    atl_log_kv(ATL_LOG_INFO,
               "context window tight: earlier tool results go in short",
               "session", a->s->id, NULL);
  }
  a->attempt++;
  /* A cancel stops the listening: the run ends without this turn. */
  atl_agent_call_init(&a->call, p->ops, &a->cancel);
  a->call.turn.on_text = on_text;
  a->call.turn.user = a;
  a->call_started_ns = atl_mono_ns();
  a->call.started_ns = a->call_started_ns;
  a->call.trace_session = a->s->id;
  if (atl_trace_wants(ATL_TR_TURN)) {
    json_object *f = json_object_new_object();
    json_object_object_add(f, "provider", json_object_new_string(p->cfg.name));
    json_object_object_add(f, "model", json_object_new_string(a->model));
    json_object_object_add(f, "turn", json_object_new_int((int)a->turns + 1));
    json_object_object_add(f, "attempt", json_object_new_int((int)a->attempt));
    json_object_object_add(
        f, "messages",
        json_object_new_int64(
            a->history ? (int64_t)json_object_array_length(a->history) : 0));
    json_object_object_add(
        f, "bytes",
        json_object_new_int64(req.body ? (int64_t)strlen(req.body) : 0));
    atl_trace_emit(ATL_TR_TURN, a->s->id, "request", f);
  }
  rc = atl_agent_call_start(&a->call, a->d, &req, p->cfg.timeout_ms, turn_done);
  atl_provider_req_free(&req);
  if (rc != 0) {
    turn_release(a);
    atl__agent_run_error(a, 0, "could not start the request to the provider");
  }
}

/* ---- runs ---- */

/* Offline, or "/tool {json}" with any provider: the tool runs directly. */
static int direct_call(atl_agent_t *a, const char *text) {
  if (text[0] != '/')
    return 0;
  size_t n = strcspn(text + 1, " \t\n");
  char *tool = strndup(text + 1, n);
  const char *rest = text + 1 + n;
  json_object *args =
      *rest ? json_tokener_parse(rest) : json_object_new_object();
  json_object *call = atl__agent_obj_str("type", "tool_call");
  json_object_object_add(call, "id", json_object_new_string("direct"));
  json_object_object_add(call, "name", json_object_new_string(tool));
  if (args != NULL && json_object_is_type(args, json_type_object)) {
    json_object_object_add(call, "arguments", args);
  } else {
    json_object_put(args);
    json_object_object_add(call, "arguments", json_object_new_object());
    json_object_object_add(call, "bad_arguments", json_object_new_string(rest));
  }
  free(tool);
  a->calls = json_object_new_array();
  json_object_array_add(a->calls, call);
  a->next_call = 0;
  a->results = json_object_new_array();
  /* The model never asked for this call, so no model call follows: the
   * run ends with the results. */
  a->direct = 1;
  call_next(a);
  return 1;
}

char *atl_agent_redacted_text(atl_daemon_t *d, const char *text) {
  if (text == NULL || text[0] != '/')
    return NULL;
  size_t n = strcspn(text + 1, " \t\n");
  char *tool = strndup(text + 1, n);
  if (tool == NULL)
    return NULL;
  const atl_tool_entry_t *te = atl_registry_find(&d->registry, tool);
  char *out = NULL;
  if (te != NULL && (te->tool.flags & ATL_TOOL_REDACT_ARGS))
    out = atl_printf_new("/%s %s", tool, ATL_REDACTED);
  free(tool);
  return out;
}

void atl__agent_run_start(atl_agent_t *a, char *text, char *model,
                          int64_t qid) {
  atl_agent_provider_t *p = a->d->agent;
  a->active = 1;
  a->cancel = 0;
  a->direct = 0;
  a->turns = 0;
  a->continuations = a->malformed = 0;
  a->cut = 0;
  a->compactions = a->context_retries = 0;
  a->attempt = 0;
  a->input_tokens = a->output_tokens = 0;
  /* The message's model, else the session's (session.create), else the
   * provider's default. */
  a->model = model              ? model
             : a->s->model[0]   ? strdup(a->s->model)
             : p->model != NULL ? strdup(p->model)
                                : strdup("");
  /* A "/tool {json}" message for a tool whose arguments are secret runs
   * with them, but the history, the event and so the model's next request
   * get the message without them. */
  char *shown = atl_agent_redacted_text(a->d, text);
  const char *kept = shown ? shown : text;
  json_object *started = atl__agent_obj_str("text", kept);
  json_object_object_add(started, "model", json_object_new_string(a->model));
  if (atl_trace_wants(ATL_TR_RUN)) {
    json_object *f = json_object_new_object();
    json_object_object_add(
        f, "provider",
        json_object_new_string(p->ops ? p->cfg.name : "(offline)"));
    json_object_object_add(f, "model", json_object_new_string(a->model));
    json_object_object_add(f, "text_bytes",
                           json_object_new_int64((int64_t)strlen(kept)));
    atl_trace_emit(ATL_TR_RUN, a->s->id, "start", f);
  }
  json_object_object_add(
      started, "provider",
      json_object_new_string(p->ops ? p->cfg.name : "(offline)"));
  /* The message that starts, by the id its message.queued named (if it
   * waited); leaving the store's queue in the same transaction that puts
   * it in the history is what makes it run exactly once. */
  json_object_object_add(started, "message_id", json_object_new_int64(qid));
  atl_txn_t *t = atl_txn_new();
  atl_txn_queue_pop(t, a->s->id, qid);
  commit_in(a, t, atl__agent_text_message("user", kept), "run.started",
            started);
  free(shown);
  a->replay = NULL;
  if ((strcmp(text, "/demo") == 0 || strncmp(text, "/demo ", 6) == 0) &&
      atl_registry_find(&a->d->registry, "demo") == NULL) {
    /* "/demo", "/demo scene", "/demo drawing": a bundled cassette. */
    char name[32] = "";
    sscanf(text + 5, " %31s", name);
    free(text);
    int known = 0;
    if ((a->replay = atl_agent_demo_turns(a->d, name, &known)) == NULL) {
      if (!known) {
        char msg[160];
        snprintf(msg, sizeof(msg), "there is no demo '%s'; the demos are: %s",
                 name, atl_agent_demo_names());
        atl__agent_run_error(a, 0, msg);
      } else
        atl__agent_run_error(a, 0,
                             "the demo cassette cannot be read (see the log)");
      return;
    }
    a->replay_pos = 0;
    atl__agent_turn_start(a);
    return;
  }
  if (direct_call(a, text)) {
    free(text);
    return;
  }
  free(text);
  if (p->replay) {
    /* The cassette goes on where the session's last run left it. */
    a->replay = p->cassette;
    atl__agent_turn_start(a);
    return;
  }
  if (p->ops == NULL) {
    atl__agent_commit(a, atl__agent_text_message("model", p->why_offline),
                      "text.done", atl__agent_obj_str("text", p->why_offline));
    atl__agent_run_end(a, "run.completed", NULL);
    return;
  }
  atl__agent_turn_start(a);
}

/* ---- the history, loaded once ---- */

typedef struct {
  atl_agent_t *a;
  json_object *history;
  int status;
} load_t;

static int history_row(const atl_history_row_t *row, void *user) {
  json_object *m = json_tokener_parse(row->content);
  if (m != NULL)
    json_object_array_add(user, m);
  return 0;
}

/* A daemon killed between a model message and its tool results leaves
 * calls without results, which every provider refuses. They are answered
 * here, once, as interrupted: the history is whole again, and the model
 * learns what happened. */
static void repair(atl_agent_t *a) {
  size_t n = json_object_array_length(a->history);
  json_object *last = n ? json_object_array_get_idx(a->history, n - 1) : NULL;
  json_object *role, *parts;
  if (last == NULL || !json_object_object_get_ex(last, "role", &role) ||
      strcmp(json_object_get_string(role), "model") != 0 ||
      !json_object_object_get_ex(last, "parts", &parts))
    return;
  a->results = json_object_new_array();
  for (size_t i = 0; i < json_object_array_length(parts); i++) {
    json_object *part = json_object_array_get_idx(parts, i), *type;
    if (json_object_object_get_ex(part, "type", &type) &&
        strcmp(json_object_get_string(type), "tool_call") == 0)
      atl__agent_add_result(
          a, part,
          atl__agent_error_envelope("interrupted: atelierd stopped before this "
                                    "call ran; it did not run"));
  }
  if (json_object_array_length(a->results) == 0) {
    json_object_put(a->results);
    a->results = NULL;
    return;
  }
  json_object *msg = json_object_new_object();
  json_object_object_add(msg, "role", json_object_new_string("tool"));
  const char *tag = atl_provider_str(last, "provider");
  if (tag != NULL)
    json_object_object_add(msg, "provider", json_object_new_string(tag));
  json_object_object_add(msg, "parts", a->results);
  a->results = NULL;
  /* The run.interrupted event came when the session was loaded
   * (sessions.c); this commits the answers that make the history whole. */
  json_object *data = json_object_new_object();
  json_object_object_add(data, "count",
                         json_object_new_int((int)json_object_array_length(
                             json_object_object_get(msg, "parts"))));
  json_object_object_add(data, "interrupted", json_object_new_boolean(1));
  atl__agent_commit(a, msg, "tool.results", data);
}

static void load_done(void *arg) {
  load_t *l = arg;
  atl_agent_t *a = l->a;
  a->d->work_in_flight--;
  a->loading = 0;
  if (a->history == NULL)
    a->history = l->history;
  else
    json_object_put(l->history);
  free(l);
  /* A history stored before call ids were made unique (Gemini's empty
   * ones), or from a server that reuses them, is given unique ones in
   * memory, each call's result with it. */
  json_object_put(a->ids);
  a->ids = json_object_new_object();
  size_t n = json_object_array_length(a->history), changed = 0;
  for (size_t i = 0; i < n; i++) {
    json_object *m = json_object_array_get_idx(a->history, i), *role;
    if (json_object_object_get_ex(m, "role", &role) &&
        strcmp(json_object_get_string(role), "model") == 0)
      changed += atl_provider_claim_ids(
          m, i, a->ids,
          i + 1 < n ? json_object_array_get_idx(a->history, i + 1) : NULL);
  }
  if (changed > 0)
    atl_log_kv(ATL_LOG_INFO, "call ids made unique in the loaded history",
               "session", a->s->id, NULL);
  repair(a);
  atl__agent_run_next(a);
  if (!a->active)
    atl_session_unref(a->d, a->s);
}

static void load_work(void *arg) {
  load_t *l = arg;
  atl_store_reader_t *r = atl_daemon_reader_take(l->a->d);
  l->history = json_object_new_array();
  if (r != NULL) {
    l->status =
        atl_store_history_read(r, l->a->s->id, 0, 0, history_row, l->history);
    atl_daemon_reader_give(l->a->d, r);
  }
  atl_daemon_post(l->a->d, load_done, l);
}

/* ---- the session's agent ---- */

int atl__agent_load(atl_agent_t *a) {
  load_t *l = calloc(1, sizeof(*l));
  if (l == NULL)
    return ATL_ENOMEM;
  l->a = a;
  a->loading = 1;
  a->d->work_in_flight++;
  atl_pool_submit(a->d, load_work, l);
  return 0;
}

atl_agent_t *atl__agent_of(atl_daemon_t *d, atl_session_t *s) {
  if (s->agent == NULL) {
    atl_agent_t *a = calloc(1, sizeof(*a));
    if (a == NULL)
      return NULL;
    a->d = d;
    a->s = s;
    uv_timer_init(d->loop, &a->retry_timer);
    a->retry_timer.data = a;
    a->timer_ready = 1;
    s->agent = a;
  }
  return s->agent;
}

static void timer_closed(uv_handle_t *h) {
  free(h->data);
}

void atl_agent_session_free(atl_session_t *s) {
  atl_agent_t *a = s->agent;
  if (a == NULL)
    return;
  s->agent = NULL;
  atl__agent_queue_free(a);
  atl_agent_request_cache_free(&a->req_cache);
  json_object_put(a->history);
  json_object_put(a->calls);
  json_object_put(a->results);
  json_object_put(a->pending_refs);
  json_object_put(a->ids);
  free(a->model);
  uv_close((uv_handle_t *)&a->retry_timer, timer_closed);
}

json_object *atl_agent_summary(const atl_session_t *s) {
  const atl_agent_t *a = s->agent;
  if (a == NULL)
    return NULL;
  json_object *o = json_object_new_object();
  json_object_object_add(o, "running", json_object_new_boolean(a->active));
  const char *phase =
      !a->active ? "idle"
      : a->calls != NULL && a->next_call < json_object_array_length(a->calls)
          ? "tools"
          : "model";
  json_object_object_add(o, "phase", json_object_new_string(phase));
  json_object_object_add(o, "turns", json_object_new_int((int)a->turns));
  json_object_object_add(o, "model",
                         a->model ? json_object_new_string(a->model) : NULL);
  json_object_object_add(o, "tokens_in",
                         json_object_new_int64(a->input_tokens));
  json_object_object_add(o, "tokens_out",
                         json_object_new_int64(a->output_tokens));
  json_object_object_add(o, "queued_messages",
                         json_object_new_int((int)a->queued));
  return o;
}
