/* Tool calls: validation, the handler on the pool, the commit, the answer.
 *
 * A call goes through these steps:
 *   1. (loop) it waits its turn: calls of one session run one at a time,
 *      each seeing the document the previous one committed;
 *   2. (pool, or the loop for a handler flagged ATL_TOOL_FAST) the
 *      arguments are validated and completed with defaults, the handler
 *      runs on a private copy of the document, the envelope, the
 *      tool.finished event and the new document are serialized, and one
 *      store transaction gets the document, the event and any images; the
 *      store's group commit batches it with other sessions';
 *   3. (loop) after the commit, the session takes the new document and the
 *      caller gets the envelope. Nothing is acknowledged before step 3.
 * A handler that overruns its timeout is answered with an error envelope
 * at the deadline; its late result is discarded, so the document only ever
 * holds the changes of calls that were answered as successful.
 */
#include "atl-build.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "log.h"
#include "redact.h"
#include "slowlog.h"
#include "stats.h"
#include "preview.h"
#include "toolcall.h"
#include "trace.h"

static void job_free(atl_call_job_t *j) {
  json_object_put(j->args);
  json_object_put(j->doc);
  json_object_put(j->result);
  json_object_put(j->before);
  json_object_put(j->after);
  free(j->tool_name);
  free(j->call_id);
  free(j->via);
  free(j->error);
  free(j->target);
  free(j->envelope);
  free(j->event);
  free(j->doc_text);
  for (size_t i = 0; i < j->n_images; i++) {
    free(j->images[i].mime);
    free(j->images[i].name);
    free(j->images[i].data);
  }
  free(j->images);
  for (size_t i = 0; i < j->n_events; i++) {
    free(j->ev_types[i]);
    free(j->ev_data[i]);
  }
  free(j->ev_types);
  free(j->ev_data);
  free(j);
}

/* The job is shared by the loop and a pool thread; whoever lets go last
 * frees it. */
static void job_release(atl_call_job_t *j) {
  if (atomic_fetch_sub(&j->refs, 1) == 1)
    job_free(j);
}

static void timer_closed(uv_handle_t *h) {
  job_release(h->data);
}

/* ---- step 2: on the pool (or the loop, for a fast handler) ---- */

/* The call's arguments are secret (ATL_TOOL_REDACT_ARGS). */
static bool redacts(const atl_call_job_t *j) {
  return j->tool != NULL && (j->tool->tool.flags & ATL_TOOL_REDACT_ARGS);
}

static char *join_errors(json_object *errors) {
  size_t n = json_object_array_length(errors), len = 1;
  for (size_t i = 0; i < n; i++)
    len +=
        strlen(json_object_get_string(json_object_array_get_idx(errors, i))) +
        1;
  char *out = malloc(len);
  if (out == NULL)
    return NULL;
  out[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (i > 0)
      strcat(out, "\n");
    strcat(out, json_object_get_string(json_object_array_get_idx(errors, i)));
  }
  return out;
}

static void set_error(atl_call_job_t *j, const char *fmt, ...) ATL_PRINTF(2, 3);
static void set_error(atl_call_job_t *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  free(j->error);
  if (vasprintf(&j->error, fmt, ap) < 0)
    j->error = NULL;
  va_end(ap);
  j->outcome = ATL_OUTCOME_ERROR;
}

/* The tools a caller may be told of: a model (for_model) is never told
 * of the tools for people only. */
static char *available_tools(const atl_registry_t *reg, bool for_model) {
  size_t len = 1;
  for (size_t i = 0; i < reg->n_tools; i++)
    len += strlen(reg->tools[i]->tool.name) + 2;
  char *out = malloc(len);
  if (out == NULL)
    return NULL;
  out[0] = '\0';
  for (size_t i = 0; i < reg->n_tools; i++) {
    if (for_model && (reg->tools[i]->tool.flags & ATL_TOOL_NOT_FOR_MODEL))
      continue;
    if (out[0])
      strcat(out, ", ");
    strcat(out, reg->tools[i]->tool.name);
  }
  return out;
}

static void run_handler(atl_call_job_t *j) {
  const atl_tool_entry_t *te = j->tool;
  json_object *errors = NULL;
  if (atl_schema_validate(te->input, j->args, &errors) > 0) {
    char *msg = join_errors(errors);
    set_error(j, "%s", msg ? msg : "invalid arguments");
    j->stat_kind = ATL_TS_INVALID;
    free(msg);
    json_object_put(errors);
    return;
  }
  atl_schema_apply_defaults(te->input, j->args);

  const char *ns_name = te->plugin->desc.name;
  json_object *ns = NULL;
  if (!json_object_object_get_ex(j->doc, ns_name, &ns) ||
      !json_object_is_type(ns, json_type_object)) {
    ns = json_object_new_object();
    json_object_object_add(j->doc, ns_name, ns);
  }
  j->call.struct_size = sizeof(atl_call_t);
  j->call.session_id = j->session_id;
  j->call.tool = te->tool.name;
  j->call.args = j->args;
  j->call.ns = ns;
  j->call.document = j->doc;
  j->call.plugin_state = te->plugin->state;
  j->call.host = &te->plugin->host;
  j->call.host_private = j;

  int rc = te->tool.handler(&j->call);
  if (rc < 0 || j->outcome == ATL_OUTCOME_NONE)
    j->stat_kind = ATL_TS_HOST_ERROR;
  if (rc < 0) {
    set_error(j, "internal error in plugin '%s' (tool '%s'): %s",
              te->plugin->desc.name, te->tool.name, atl_strerror(rc));
    atl_log_kv(ATL_LOG_ERROR, "tool handler failed", "plugin",
               te->plugin->desc.name, "tool", te->tool.name, "error",
               atl_strerror(rc), NULL);
  } else if (j->outcome == ATL_OUTCOME_NONE) {
    set_error(j, "internal error in plugin '%s': tool '%s' reported no result",
              te->plugin->desc.name, te->tool.name);
  }
  if (j->outcome == ATL_OUTCOME_SUCCESS && te->result != NULL &&
      j->d->cfg->check_results) {
    json_object *rerr = NULL;
    if (atl_schema_validate(te->result, j->result, &rerr) > 0) {
      char *msg = join_errors(rerr);
      if (redacts(j)) {
        /* The message may quote the result, and the result its arguments. */
        char *clean = atl_redact_text(msg, j->args);
        free(msg);
        msg = clean;
      }
      atl_log_kv(ATL_LOG_ERROR, "tool result does not match its schema", "tool",
                 te->tool.name, "error", msg, NULL);
      set_error(j,
                "internal error in plugin '%s': the result of '%s' does not "
                "match its result schema: %s",
                te->plugin->desc.name, te->tool.name, msg ? msg : "");
      j->stat_kind = ATL_TS_HOST_ERROR;
      free(msg);
      json_object_put(rerr);
    }
  }
}

/* Replaces *obj (a reference this job holds) with a scrubbed deep copy;
 * on ENOMEM with nothing, so that no unscrubbed value leaves. */
static void scrub_copy(json_object **obj, json_object *args) {
  if (*obj == NULL)
    return;
  json_object *copy = NULL;
  if (json_object_deep_copy(*obj, &copy, NULL) != 0)
    copy = NULL;
  json_object_put(*obj);
  *obj = copy;
  atl_redact_json(copy, args);
}

/* Replaces the string *s (malloc()ed, owned by the job) with a scrubbed
 * copy; NULL on ENOMEM, so that no unscrubbed value leaves. */
static void scrub_str(char **s, json_object *args) {
  if (*s == NULL)
    return;
  char *clean = atl_redact_text(*s, args);
  free(*s);
  *s = clean;
}

/* Serializes the envelope, the event and the document. */
static void serialize(atl_call_job_t *j) {
  if (redacts(j)) {
    /* Whatever came out of the call may quote its secret arguments: a
     * schema error quotes the bad value, a handler may echo its input.
     * The envelope goes to the caller, the history and the model, the
     * error to the log too, so the values are scrubbed here, once. */
    char *clean = atl_redact_text(j->error, j->args);
    if (clean != NULL) {
      free(j->error);
      j->error = clean;
    }
    /* A plugin may hand back its live state (the object in the session's
     * document, by reference): scrubbing that would change what the tool
     * keeps. The copies that leave are scrubbed instead. */
    scrub_copy(&j->result, j->args);
    scrub_copy(&j->before, j->args);
    scrub_copy(&j->after, j->args);
    /* The target is usually an argument (an object's id), and it goes to
     * the event and the log; an image's name to the envelope. */
    scrub_str(&j->target, j->args);
    for (size_t i = 0; i < j->n_images; i++)
      scrub_str(&j->images[i].name, j->args);
  }
  const int flags = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;
  int ok = j->outcome == ATL_OUTCOME_SUCCESS;
  json_object *env = json_object_new_object();
  json_object_object_add(env, "success", json_object_new_boolean(ok));
  json_object *ids = NULL;
  if (ok) {
    json_object_object_add(env, "result",
                           j->result ? json_object_get(j->result)
                                     : json_object_new_object());
    if (j->n_images > 0) {
      json_object *imgs = json_object_new_array();
      ids = json_object_new_array();
      for (size_t i = 0; i < j->n_images; i++) {
        json_object *im = json_object_new_object();
        json_object_object_add(im, "id",
                               json_object_new_string(j->images[i].id));
        json_object_object_add(im, "mime",
                               json_object_new_string(j->images[i].mime));
        json_object_object_add(
            im, "size", json_object_new_int64((int64_t)j->images[i].len));
        if (j->images[i].name)
          json_object_object_add(im, "name",
                                 json_object_new_string(j->images[i].name));
        json_object_array_add(imgs, im);
        json_object_array_add(ids, json_object_new_string(j->images[i].id));
      }
      json_object_object_add(env, "images", imgs);
    }
  } else {
    json_object_object_add(
        env, "error", json_object_new_string(j->error ? j->error : "failed"));
  }
  j->envelope = strdup(json_object_to_json_string_ext(env, flags));
  json_object_put(env);

  /* The ToolCallEvent of seed 003. */
  json_object *ev = json_object_new_object();
  json_object *op = json_object_new_object();
  json_object_object_add(op, "tool", json_object_new_string(j->tool_name));
  if (j->target)
    json_object_object_add(op, "target", json_object_new_string(j->target));
  if (redacts(j))
    json_object_object_add(op, "arguments",
                           json_object_new_string(ATL_REDACTED));
  else
    json_object_object_add(op, "arguments", json_object_get(j->args));
  if (j->before)
    json_object_object_add(op, "before", json_object_get(j->before));
  if (j->after)
    json_object_object_add(op, "after", json_object_get(j->after));
  json_object_object_add(ev, "operation", op);
  if (j->call_id)
    json_object_object_add(ev, "id", json_object_new_string(j->call_id));
  if (j->via)
    json_object_object_add(ev, "via", json_object_new_string(j->via));
  json_object_object_add(ev, "success", json_object_new_boolean(ok));
  if (!ok)
    json_object_object_add(
        ev, "error", json_object_new_string(j->error ? j->error : "failed"));
  json_object_object_add(ev, "duration_ms",
                         json_object_new_int64(j->duration_ms));
  char ts[32];
  atl_format_time_ms(j->started_ms, ts, sizeof(ts));
  json_object_object_add(ev, "timestamp", json_object_new_string(ts));
  if (ids)
    json_object_object_add(ev, "images", ids);
  j->event = strdup(json_object_to_json_string_ext(ev, flags));
  json_object_put(ev);

  if (ok && j->tool && !(j->tool->tool.flags & ATL_TOOL_READ_ONLY))
    j->doc_text = strdup(json_object_to_json_string_ext(j->doc, flags));
}

static void commit(atl_call_job_t *j);

static void job_work(void *arg) {
  atl_call_job_t *j = arg;
  uint64_t t0 = atl_mono_ns();
  if (j->tool == NULL) {
    char *names = available_tools(&j->d->registry, j->call_id != NULL);
    set_error(j, "unknown tool '%s'; available tools: %s", j->tool_name,
              names && names[0] ? names : "(none)");
    free(names);
  } else {
    run_handler(j);
  }
  j->duration_ms = (int64_t)((atl_mono_ns() - t0) / 1000000u);
  serialize(j);
  int expect = ATL_JOB_RUNNING;
  if (atomic_compare_exchange_strong(&j->state, &expect, ATL_JOB_FINISHED)) {
    /* In time: this thread commits, saving a trip through the loop. */
    commit(j);
  } else {
    /* The deadline passed and the loop has answered: drop the result. */
    job_release(j);
  }
}

/* ---- step 3: on the loop ---- */

static void answer(atl_call_job_t *j, int rpc_status, const char *envelope) {
  atl_daemon_t *d = j->d;
  if (j->done)
    j->done(d, rpc_status, envelope, j->user);
  j->done = NULL;
  d->calls_in_flight--;
}

static void commit_loop(void *arg);

static void commit_cb(int status, void *user) {
  atl_call_job_t *j = user;
  j->commit_status = status;
  atl_daemon_post(j->d, commit_loop, j);
}

/* Appends text to buf (cap bytes, at bytes used), cut on a character's
 * first byte if it does not fit; the new length. Nothing is appended
 * after a cut (*cut is set), so a cut name never looks whole. */
static size_t append_cut(char *buf, size_t cap, size_t at, const char *text,
                         int *cut) {
  if (*cut)
    return at;
  size_t len = strlen(text), room = cap - 1 - at;
  size_t n = atl_utf8_prefix(text, len, room);
  memcpy(buf + at, text, n);
  buf[at + n] = '\0';
  *cut = n < len;
  return at + n;
}

/* Seed 003's terse lines, "Tool call: update_shape (blue_sphere)", with
 * the session and the timing as logfmt fields; a failure adds an error
 * line with the message the model was given. */
static void log_call(atl_call_job_t *j) {
  int ok = j->outcome == ATL_OUTCOME_SUCCESS && !j->timed_out;
  if (atl_log_enabled(ATL_LOG_INFO)) {
    /* Put together by hand: the two snprintf calls were a third of the
     * line's cost, and a daemon logs at info by default. */
    char ms[24], msg[256];
    size_t n =
        atl_u64_dec(j->duration_ms > 0 ? (uint64_t)j->duration_ms : 0, ms);
    ms[n] = '\0';
    int cut = 0;
    n = append_cut(msg, sizeof(msg), 0, "Tool call: ", &cut);
    n = append_cut(msg, sizeof(msg), n, j->tool_name ? j->tool_name : "?",
                   &cut);
    if (j->target) {
      n = append_cut(msg, sizeof(msg), n, " (", &cut);
      n = append_cut(msg, sizeof(msg), n, j->target, &cut);
      append_cut(msg, sizeof(msg), n, ")", &cut);
    }
    atl_log_kv(ATL_LOG_INFO, msg, "session", j->session_id, "tool",
               j->tool_name, "target", j->target, "ms", ms, NULL);
  }
  if (!ok) {
    /* As the mock-up: "Tool call FAIL: Shape not found (id: red_sphere)".
     * The message is the one the model was given (a redacting tool's is
     * scrubbed already), cut to a line's worth. */
    char msg[600];
    const char *e = j->error ? j->error : "(no message)";
    size_t cut = atl_utf8_prefix(e, strlen(e), 500);
    snprintf(msg, sizeof(msg), "Tool call FAIL: %.*s", (int)cut, e);
    for (char *p = msg; *p; p++)
      if (*p == '\n')
        *p = ' ';
    atl_log_kv(ATL_LOG_ERROR, msg, "session", j->session_id, "tool",
               j->tool_name, "target", j->target, NULL);
  }
}

/* The call's latency and failure kind (stats.h), and its end in the admin
 * socket's trace. What serialize() left is safe to show: a redacting
 * tool's error and result are scrubbed there. */
static void count_call(atl_call_job_t *j) {
  int ok = j->outcome == ATL_OUTCOME_SUCCESS && !j->timed_out &&
           j->commit_status == 0;
  uint64_t us = atl_stats_us_since(j->started_ns);
  atl_series_t *st = j->tool ? j->tool->stats : NULL;
  if (st != NULL) {
    atl_hist_add(&st->h, us, !ok);
    int kind = j->timed_out                        ? ATL_TS_TIMED_OUT
               : j->stat_kind >= 0                 ? j->stat_kind
               : j->outcome != ATL_OUTCOME_SUCCESS ? ATL_TS_FAILED
               : j->commit_status != 0             ? ATL_TS_HOST_ERROR
                                                   : -1;
    if (kind >= 0)
      atomic_fetch_add_explicit(&st->n[kind], 1, memory_order_relaxed);
  }
  if (atl_slowlog_wants(us)) {
    json_object *dt = json_object_new_object();
    json_object *shown = j->tool == NULL || !redacts(j)
                             ? json_object_get(j->args)
                             : atl_redact_args(j->args);
    size_t alen = 0;
    const char *atext =
        json_object_to_json_string_length(shown, JSON_C_TO_STRING_PLAIN, &alen);
    if (alen > 2048) {
      /* A drawing's thousand paths are not kept whole 128 times over. */
      size_t cut = atl_utf8_prefix(atext, alen, 2048);
      json_object_object_add(dt, "args_cut",
                             json_object_new_string_len(atext, (int)cut));
      json_object_object_add(dt, "args_bytes",
                             json_object_new_int64((int64_t)alen));
      json_object_put(shown);
    } else {
      json_object_object_add(dt, "args", shown);
    }
    json_object_object_add(dt, "handler_ms",
                           json_object_new_int64(j->duration_ms));
    json_object_object_add(dt, "ok", json_object_new_boolean(ok));
    if (!ok && j->error)
      json_object_object_add(dt, "error", json_object_new_string(j->error));
    atl_slowlog_add("tool", j->session_id, j->tool_name, us, dt);
  }
  atl_tw_t w;
  if (!atl_tw_begin(&w, ATL_TR_TOOL, j->session_id, "end"))
    return;
  atl_tw_str(&w, "tool", j->tool_name);
  if (j->call_id)
    atl_tw_str(&w, "call_id", j->call_id);
  atl_tw_bool(&w, "ok", ok);
  atl_tw_ms(&w, "ms", us);
  if (j->target)
    atl_tw_str(&w, "target", j->target);
  if (!ok && j->error)
    atl_tw_str(&w, "error", j->error);
  if (j->n_images > 0)
    atl_tw_int(&w, "images", (int64_t)j->n_images);
  if (j->envelope) {
    size_t len = strlen(j->envelope);
    atl_tw_int(&w, "result_bytes", (int64_t)len);
    /* The start of the envelope, cut on a character's first byte. */
    atl_tw_strn(&w, "result_head", j->envelope,
                atl_utf8_prefix(j->envelope, len, 300));
  }
  atl_tw_end(&w);
}

/* Whether the call left its plugin's namespace as it was in old_doc: a
 * failed update, or one that set what was already there. */
static bool namespace_same(const atl_call_job_t *j, json_object *old_doc) {
  const char *ns = j->tool->plugin->desc.name;
  json_object *a = NULL, *b = NULL;
  json_object_object_get_ex(old_doc, ns, &a);
  json_object_object_get_ex(j->s->doc, ns, &b);
  return json_object_equal(a, b);
}

static void commit_loop(void *arg) {
  atl_call_job_t *j = arg;
  atl_daemon_t *d = j->d;
  atl_session_t *s = j->s;
  uv_timer_stop(&j->timer);
  count_call(j);
  if (j->pool_ref) {
    /* The pool thread let go when it submitted; its reference ends here,
     * on the loop, where the job is freed once the timer closes. */
    j->pool_ref = 0;
    job_release(j);
  }
  json_object *old_doc = NULL;
  if (j->commit_status == 0) {
    if (j->new_doc) {
      /* The old document is freed after the answer: tens of thousands of
       * strings in a big canvas take milliseconds the caller need not
       * wait for. */
      old_doc = s->doc;
      s->doc = j->new_doc;
      j->new_doc = NULL;
      s->updated_ms = atl_now_ms();
      s->doc_rev = j->seq;
    }
    atl_session_committed(d, s, j->seq);
    log_call(j);
    answer(j, 0, j->envelope);
    /* After the commit, so that the preview shows what was committed, and
     * after the answer, which must not wait for the comparison and the
     * snapshot; a call that changed nothing is not worth a picture. */
    if (old_doc != NULL && j->tool != NULL &&
        atl_previews_watch(d, j->tool->plugin->desc.name) &&
        !namespace_same(j, old_doc))
      atl_previews_changed(d, s, j->tool->plugin->desc.name, j->seq);
  } else {
    /* The store refused the transaction: nothing of the call is in it, so
     * the caller must not think it happened, and our in-memory state (the
     * sequence counter) is ahead of the store: reload before next use. */
    s->stale = 1;
    atl_log_kv(ATL_LOG_ERROR, "tool call could not be committed", "session",
               s->id, "tool", j->tool_name, "error",
               atl_strerror(j->commit_status), NULL);
    answer(j, ATL_RPC_STORE_ERROR, NULL);
  }
  if (j->new_doc) {
    json_object_put(j->new_doc);
    j->new_doc = NULL;
  }
  s->busy = 0;
  s->running = NULL;
  atl_toolcall_next(d, s);
  json_object_put(old_doc);
  atl_session_unref(d, s);
  uv_close((uv_handle_t *)&j->timer, timer_closed);
}

/* Builds and submits the transaction of a finished call: on the pool
 * thread that ran it, or on the loop for a timed-out one. Only the session's
 * id and its locked sequence counter are touched, so either thread may. */
static void commit(atl_call_job_t *j) {
  atl_daemon_t *d = j->d;
  atl_session_t *s = j->s;
  atl_txn_t *t = atl_txn_new();
  if (t == NULL) {
    j->commit_status = ATL_ENOMEM;
    atl_daemon_post(d, commit_loop, j);
    return;
  }
  int64_t now = atl_now_ms();
  if (j->doc_text) {
    atl_txn_document_take(t, s->id, j->doc_text, now);
    j->doc_text = NULL;
    /* The worker's copy becomes the session's document after the commit;
     * nothing touches it any more but the loop. */
    j->new_doc = json_object_get(j->doc);
  }
  for (size_t i = 0; i < j->n_images; i++)
    atl_txn_image_put(t, j->images[i].id, j->images[i].mime, j->images[i].data,
                      j->images[i].len, now);
  /* A failed call's own events describe changes that were not made. */
  size_t n_pre =
      j->outcome == ATL_OUTCOME_SUCCESS && !j->timed_out ? j->n_events : 0;
  int rc =
      atl_session_submit(d, s, t, (const char *const *)j->ev_types,
                         (const char *const *)j->ev_data, n_pre,
                         "tool.finished", now, j->event, commit_cb, j, &j->seq);
  if (rc != 0) {
    j->commit_status = rc;
    atl_daemon_post(d, commit_loop, j);
  }
}

static void job_timeout(uv_timer_t *t) {
  atl_call_job_t *j = t->data;
  int expect = ATL_JOB_RUNNING;
  if (!atomic_compare_exchange_strong(&j->state, &expect, ATL_JOB_TIMED_OUT))
    return; /* the handler returned just in time and is committing */
  j->timed_out = 1;
  atomic_store(&j->cancelled, 1);
  /* The worker still owns the original job's outcome fields, so a second,
   * loop-owned job carries the timeout through serialize() and the commit.
   * The arguments are the worker's too (defaults are filled in place), so
   * the event refers to the call instead of copying them. */
  atl_call_job_t *tj = calloc(1, sizeof(*tj));
  if (tj == NULL)
    return;
  atomic_init(&tj->refs, 1);
  atomic_init(&tj->state, ATL_JOB_FINISHED);
  tj->d = j->d;
  tj->s = j->s;
  tj->tool = j->tool;
  tj->tool_name = strdup(j->tool_name);
  memcpy(tj->session_id, j->session_id, sizeof(tj->session_id));
  tj->args = json_object_new_string("(see the call)");
  tj->started_ms = j->started_ms;
  tj->started_ns = j->started_ns;
  tj->stat_kind = -1;
  tj->duration_ms = j->tool->timeout_ms;
  tj->timed_out = 1;
  set_error(tj, "tool '%s' timed out after %u ms", j->tool_name,
            j->tool->timeout_ms);
  serialize(tj);
  tj->done = j->done;
  tj->user = j->user;
  j->done = NULL;
  uv_timer_init(j->d->loop, &tj->timer);
  tj->timer.data = tj;
  /* The original job's loop side ends here: its timer closes now and the
   * pool's reference frees it when the handler finally returns. */
  uv_close((uv_handle_t *)&j->timer, timer_closed);
  commit(tj);
}

/* A handler flagged ATL_TOOL_FAST runs here on the loop (step 2 without
 * the pool): the pool's two hand-offs, a wake-up each way, cost more than
 * such a handler, and with 64 clients they were what kept the tool-call
 * p99 above 5 ms (bench/README.md). */
static bool runs_inline(const atl_daemon_t *d, const atl_call_job_t *j) {
  return j->tool != NULL && (j->tool->tool.flags & ATL_TOOL_FAST) &&
         d->cfg->inline_fast;
}

/* A fast handler that is not fast holds up every client of the daemon, so
 * say which one; at most once a second, so the log is not flooded. The job
 * is still alive: its commit can only finish on this thread, later. */
static void warn_if_slow(const atl_call_job_t *j, uint64_t ns) {
  static uint64_t last_warned_ns; /* the loop's only */
  const uint64_t limit_ns = 2000000u;
  uint64_t now = atl_mono_ns();
  if (ns <= limit_ns || (last_warned_ns && now - last_warned_ns < 1000000000u))
    return;
  last_warned_ns = now;
  char ms[32];
  snprintf(ms, sizeof(ms), "%.1f", (double)ns / 1e6);
  atl_log_kv(ATL_LOG_WARN,
             "a tool flagged fast held the event loop; unflag it or set "
             "tools.inline_fast = no",
             "plugin", j->tool->plugin->desc.name, "tool", j->tool_name, "ms",
             ms, NULL);
}

static void start(atl_daemon_t *d, atl_call_job_t *j) {
  atl_session_t *s = j->s;
  s->busy = 1;
  s->running = j;
  j->started_ms = atl_now_ms();
  j->started_ns = atl_mono_ns();
  j->stat_kind = -1;
  atl_tw_t w;
  if (atl_tw_begin(&w, ATL_TR_TOOL, j->session_id, "start")) {
    /* The arguments as they arrived; a redacting tool's keys only. */
    atl_tw_str(&w, "tool", j->tool_name);
    if (j->call_id)
      atl_tw_str(&w, "call_id", j->call_id);
    json_object *shown = redacts(j) ? atl_redact_args(j->args) : j->args;
    size_t n = 0;
    const char *text = json_object_to_json_string_length(
        shown, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    atl_tw_json(&w, "args", text, n);
    if (shown != j->args)
      json_object_put(shown);
    atl_tw_end(&w);
  }
  /* Reading the session's document from the pool thread is safe: nothing
   * changes it while the session is busy, and deep copying only reads. */
  j->doc = NULL;
  if (json_object_deep_copy(s->doc, &j->doc, NULL) != 0 || j->doc == NULL)
    j->doc = json_object_new_object();
  uv_timer_init(d->loop, &j->timer);
  j->timer.data = j;
  atomic_fetch_add(&j->refs, 1); /* the pool's reference */
  j->pool_ref = 1;
  if (runs_inline(d, j)) {
    /* No timer: nothing could fire it while the handler holds the loop. */
    uint64_t t0 = atl_mono_ns();
    job_work(j);
    warn_if_slow(j, atl_mono_ns() - t0);
    return;
  }
  if (j->tool)
    uv_timer_start(&j->timer, job_timeout, j->tool->timeout_ms, 0);
  /* A render (render_scene, render_optics) shows the session its own
   * picture: a live preview its plugin makes would share the farm with
   * it and take samples from the model's render, or cover its picture.
   * Other calls, long ones too (optics_simulate), let previews go on. */
  if (j->tool && (j->tool->tool.flags & ATL_TOOL_HOLDS_PREVIEWS))
    atl_previews_hold(d, j->session_id, j->tool->plugin);
  if (atl_pool_submit(d, job_work, j) != 0) {
    atomic_fetch_sub(&j->refs, 1);
    j->pool_ref = 0;
    atomic_store(&j->state, ATL_JOB_FINISHED);
    set_error(j, "out of memory");
    serialize(j);
    commit(j);
  }
}

void atl_toolcall_next(atl_daemon_t *d, atl_session_t *s) {
  if (s->busy || s->queue_head == NULL)
    return;
  atl_call_job_t *j = s->queue_head;
  s->queue_head = j->next;
  if (s->queue_head == NULL)
    s->queue_tail = NULL;
  s->queued--;
  j->next = NULL;
  if (s->deleted) {
    answer(j, ATL_RPC_NO_SESSION, NULL);
    atl_session_unref(d, s);
    job_release(j);
    atl_toolcall_next(d, s);
    return;
  }
  start(d, j);
}

void atl_toolcall_drain(atl_daemon_t *d, atl_session_t *s, int rpc_status) {
  while (s->queue_head) {
    atl_call_job_t *j = s->queue_head;
    s->queue_head = j->next;
    s->queued--;
    answer(j, rpc_status, NULL);
    atl_session_unref(d, s);
    job_release(j);
  }
  s->queue_tail = NULL;
}

#define ATL_SESSION_QUEUE_MAX 256

void atl_toolcall_start(atl_daemon_t *d, atl_session_t *s, const char *tool,
                        const char *call_id, const char *via, json_object *args,
                        int take_args, atl_call_done_cb done, void *user) {
  atl_call_job_t *j =
      s->queued < ATL_SESSION_QUEUE_MAX ? calloc(1, sizeof(*j)) : NULL;
  if (j == NULL) {
    if (take_args)
      json_object_put(args);
    done(d,
         s->queued >= ATL_SESSION_QUEUE_MAX ? ATL_RPC_QUEUE_FULL
                                            : ATL_RPC_INTERNAL_ERROR,
         NULL, user);
    return;
  }
  atomic_init(&j->refs, 1);
  atomic_init(&j->state, ATL_JOB_RUNNING);
  j->d = d;
  j->s = s;
  j->tool = atl_registry_find(&d->registry, tool);
  /* A model's call (it has an id) to a tool for people only is a call to a
   * tool it was never offered. */
  if (j->tool != NULL && call_id != NULL &&
      (j->tool->tool.flags & ATL_TOOL_NOT_FOR_MODEL))
    j->tool = NULL;
  j->tool_name = strdup(tool);
  j->call_id = call_id ? strdup(call_id) : NULL;
  j->via = via ? strdup(via) : NULL;
  memcpy(j->session_id, s->id, sizeof(j->session_id));
  /* The arguments are the job's own: defaults are filled in place. */
  j->args = NULL;
  if (take_args && args != NULL)
    j->args = args;
  else if (args == NULL || json_object_deep_copy(args, &j->args, NULL) != 0)
    j->args = json_object_new_object();
  j->done = done;
  j->user = user;
  d->calls_in_flight++;
  atl_session_ref(s);
  if (s->busy || s->queue_head) {
    if (s->queue_tail)
      s->queue_tail->next = j;
    else
      s->queue_head = j;
    s->queue_tail = j;
    s->queued++;
    return;
  }
  start(d, j);
}

/* ---- the call_* functions of the host table ---- */

atl_call_job_t *atl__job_of(const atl_call_t *call) {
  return call ? (atl_call_job_t *)call->host_private : NULL;
}

int atl__call_result(atl_call_t *call, json_object *result) {
  atl_call_job_t *j = atl__job_of(call);
  if (j == NULL || j->preview != NULL || j->outcome != ATL_OUTCOME_NONE) {
    json_object_put(result);
    return ATL_EINVAL;
  }
  j->result = result ? result : json_object_new_object();
  j->outcome = ATL_OUTCOME_SUCCESS;
  return 0;
}

int atl__call_errorv(atl_call_t *call, const char *fmt, va_list ap) {
  atl_call_job_t *j = atl__job_of(call);
  if (j == NULL || j->preview != NULL || j->outcome != ATL_OUTCOME_NONE)
    return ATL_EINVAL;
  if (vasprintf(&j->error, fmt, ap) < 0)
    j->error = NULL;
  j->outcome = ATL_OUTCOME_ERROR;
  return 0;
}

int atl__call_image(atl_call_t *call, const char *mime, const void *data,
                    size_t len, const char *name) {
  atl_call_job_t *j = atl__job_of(call);
  if (j == NULL || j->preview != NULL || mime == NULL || data == NULL ||
      len == 0)
    return ATL_EINVAL;
  atl_call_image_t *ni =
      realloc(j->images, (j->n_images + 1) * sizeof(*j->images));
  if (ni == NULL)
    return ATL_ENOMEM;
  j->images = ni;
  atl_call_image_t *im = &j->images[j->n_images];
  memset(im, 0, sizeof(*im));
  im->data = malloc(len);
  if (im->data == NULL)
    return ATL_ENOMEM;
  memcpy(im->data, data, len);
  im->len = len;
  im->mime = strdup(mime);
  im->name = name ? strdup(name) : NULL;
  atl_sha256_hex(data, len, im->id);
  j->n_images++;
  return 0;
}

int atl__call_operation(atl_call_t *call, const char *target,
                        json_object *before, json_object *after) {
  atl_call_job_t *j = atl__job_of(call);
  if (j == NULL || j->preview != NULL) {
    json_object_put(before);
    json_object_put(after);
    return ATL_EINVAL;
  }
  free(j->target);
  j->target = target ? strdup(target) : NULL;
  json_object_put(j->before);
  json_object_put(j->after);
  j->before = before;
  j->after = after;
  return 0;
}

int atl_toolcall_cancel_long(atl_session_t *s) {
  atl_call_job_t *j = s->running;
  if (j == NULL || j->tool == NULL ||
      !(j->tool->tool.flags & ATL_TOOL_LONG_RUNNING))
    return 0;
  atomic_store(&j->cancelled, 1);
  return 1;
}

int atl_toolcall_cancel_long_of(atl_session_t *s, void *user) {
  atl_call_job_t *j = s->running;
  if (j != NULL && j->user == user)
    return atl_toolcall_cancel_long(s);
  /* Still waiting its turn: marked now, it stops as soon as it starts (a
   * render returns "cancelled" at once). */
  for (j = s->queue_head; j != NULL; j = j->next)
    if (j->user == user && j->tool != NULL &&
        (j->tool->tool.flags & ATL_TOOL_LONG_RUNNING)) {
      atomic_store(&j->cancelled, 1);
      return 1;
    }
  return 0;
}

int atl__call_cancelled(const atl_call_t *call) {
  atl_call_job_t *j = atl__job_of(call);
  if (j == NULL || atomic_load(&j->cancelled))
    return 1;
  uint64_t at = atomic_load(&j->cancel_at_ns);
  return at != 0 && atl_mono_ns() >= at;
}

/* Event types are what readers filter on; the same shape as the host's
 * own ("tool.finished"). */
static bool event_type_ok(const char *t) {
  if (t == NULL || !(t[0] >= 'a' && t[0] <= 'z'))
    return false;
  size_t n = 0;
  for (; t[n]; n++)
    if (!((t[n] >= 'a' && t[n] <= 'z') || (t[n] >= '0' && t[n] <= '9') ||
          t[n] == '_' || t[n] == '.'))
      return false;
  return n <= 63;
}

int atl__call_emit(atl_call_t *call, const char *type, json_object *data) {
  atl_call_job_t *j = atl__job_of(call);
  /* A call's events go into one transaction; a plugin that makes
   * thousands should batch them into fewer, larger ones. */
  if (j == NULL || j->preview != NULL || !event_type_ok(type) ||
      j->n_events >= 1024) {
    json_object_put(data);
    return ATL_EINVAL;
  }
  char *text = NULL;
  if (data != NULL) {
    if (redacts(j))
      atl_redact_json(data, j->args);
    text = strdup(json_object_to_json_string_ext(
        data, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(data);
    if (text == NULL)
      return ATL_ENOMEM;
  }
  char **nt = realloc(j->ev_types, (j->n_events + 1) * sizeof(char *));
  if (nt == NULL) {
    free(text);
    return ATL_ENOMEM;
  }
  j->ev_types = nt;
  char **nd = realloc(j->ev_data, (j->n_events + 1) * sizeof(char *));
  if (nd == NULL) {
    free(text);
    return ATL_ENOMEM;
  }
  j->ev_data = nd;
  j->ev_types[j->n_events] = strdup(type);
  j->ev_data[j->n_events] = text;
  if (j->ev_types[j->n_events] == NULL) {
    free(text);
    return ATL_ENOMEM;
  }
  j->n_events++;
  return 0;
}
