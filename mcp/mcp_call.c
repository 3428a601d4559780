/* tools/list and tools/call: Atelier's tools, as atelierd lists and runs
 * them, in MCP's shapes (../shared/anchors/mcp.md §4). */
#include "atl-build.h"

#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mcp_int.h"
#include "rpc_client.h"

/* atelierd answers a tools/list or a session in well under a second; the
 * tool calls themselves wait for m->call_timeout_ms. */
#define QUICK_MS 30000

/* An image's base64 in a result is at most this: Claude Desktop refuses
 * results over 1 MB ("Tool result is too large"), and the rest of the
 * result needs room. A larger picture is scaled down and re-encoded by
 * atelierd (image.get's max_base64) and the text says so. */
#define IMAGE_INLINE_MAX (700 * 1024)

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A connection to atelierd for one request, whose wait the hang-up of
 * cancel_fd ends: an idle one of the pool, or a new one. Connecting for
 * every call cost more than the call (accept, the peer's credentials);
 * kept connections made MCP's echo calls several times faster
 * (bench/README.md, mcp). 0, or -1 with c->errmsg. */
static int connect_daemon(atl_mcp_t *m, atl_rpcc_t *c, int cancel_fd) {
  for (;;) {
    pthread_mutex_lock(&m->mu);
    int have = m->n_idle > 0;
    if (have)
      *c = m->idle[--m->n_idle];
    pthread_mutex_unlock(&m->mu);
    if (!have)
      break;
    /* One atelierd closed (a restart, client.kill) answers nothing: a
     * readable idle connection is an end of file, or bytes nobody asked
     * for. Either way it goes; a call is never sent on it. */
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN | POLLRDHUP};
    if (poll(&pfd, 1, 0) == 0) {
      c->watch_fd = cancel_fd;
      c->watch_closed = 0;
      return 0;
    }
    atl_rpcc_close(c);
    /* atelierd restarted: its plugins, and so its tools, may be others. */
    pthread_mutex_lock(&m->mu);
    free(m->tool_names);
    free(m->fast_names);
    m->tool_names = m->fast_names = NULL;
    pthread_mutex_unlock(&m->mu);
  }
  memset(c, 0, sizeof(*c));
  c->watch_fd = cancel_fd;
  return atl_rpcc_connect(c, m->socket_path);
}

/* Gives a connection back after its request: kept for the next when the
 * exchange ended cleanly, else closed (a cancelled wait leaves an answer
 * coming that nobody reads). */
static void release_daemon(atl_mcp_t *m, atl_rpcc_t *c, int clean) {
  if (clean && c->fd >= 0 && !c->watch_closed && c->len == 0) {
    c->watch_fd = -1;
    pthread_mutex_lock(&m->mu);
    int kept = m->n_idle < ATL_MCP_IDLE_MAX;
    if (kept)
      m->idle[m->n_idle++] = *c;
    pthread_mutex_unlock(&m->mu);
    if (kept)
      return;
  }
  atl_rpcc_close(c);
}

/* The answer to a request whose exchange with atelierd failed (rc, from
 * atl_rpcc_call; ATL_RPCC_TRANSPORT for a failed connect): none when the
 * client cancelled it meanwhile (its pipe closed: "SHOULD NOT respond"),
 * an internal error naming what atelierd refused, or, when atelierd
 * cannot be reached or went away, an internal error that also tells the
 * transport to stop. */
static json_object *failed(json_object *id, atl_rpcc_t *c, int rc,
                           const char *what, atl_mcp_req_t *r) {
  if (c->watch_closed) {
    r->cancelled = 1;
    return NULL;
  }
  /* Nothing was done: the request never reached atelierd (the client's
   * own sent), only the tool list was asked for, or a stopping atelierd
   * refused it. */
  r->unsent = (rc == ATL_RPCC_ERROR && c->err_code == ATL_RPCC_SHUTTING_DOWN) ||
              (rc == ATL_RPCC_TRANSPORT &&
               (!c->sent || strcmp(what, "tool.list") == 0));
  if (rc == ATL_RPCC_ERROR) {
    r->http_status = 500;
    return atl_mcp_error(id, -32603, NULL,
                         "Internal error: atelierd refused %s: %s", what,
                         c->err_message ? c->err_message : "no reason given");
  }
  r->daemon_gone = 1;
  r->http_status = 502;
  return atl_mcp_error(id, -32603, NULL,
                       "Internal error: atelierd is not answering (%s)",
                       c->errmsg[0] ? c->errmsg : "no reason given");
}

/* atelierd's tool list in MCP's form (tool.list {"wire": "mcp"}): a new
 * array, or NULL with *rc saying why. The names are kept (m->tool_names)
 * for tools/call to check against; the list itself is never shared
 * between threads, since json-c's reference counts are not atomic. */
static json_object *fetch_tools(atl_mcp_t *m, atl_rpcc_t *c, int *rc) {
  json_object *params = json_object_new_object();
  json_object_object_add(params, "wire", json_object_new_string("mcp"));
  json_object *tools = NULL;
  *rc = atl_rpcc_call(c, "tool.list", params, QUICK_MS, &tools);
  if (*rc == ATL_RPCC_OK && !json_object_is_type(tools, json_type_array)) {
    snprintf(c->errmsg, sizeof(c->errmsg),
             "tool.list answered something other than a list");
    *rc = ATL_RPCC_TRANSPORT;
  }
  if (*rc != ATL_RPCC_OK) {
    json_object_put(tools);
    return NULL;
  }
  /* "\nname\nname\n": a name is known when "\nname\n" is in it. */
  size_t n = json_object_array_length(tools), len = 2;
  for (size_t i = 0; i < n; i++) {
    const char *t = atl__mcp_str(json_object_array_get_idx(tools, i), "name");
    len += t ? strlen(t) + 1 : 0;
  }
  char *names = malloc(len), *fasts = malloc(len), *w = names, *lw = fasts;
  if (names != NULL && fasts != NULL) {
    *w++ = '\n';
    *lw++ = '\n';
    for (size_t i = 0; i < n; i++) {
      json_object *tool = json_object_array_get_idx(tools, i), *meta = NULL;
      const char *t = atl__mcp_str(tool, "name");
      if (t == NULL)
        continue;
      w += sprintf(w, "%s\n", t);
      json_object *fast = NULL;
      if (json_object_object_get_ex(tool, "_meta", &meta) &&
          json_object_object_get_ex(meta, "dev.atelier/fast", &fast) &&
          json_object_is_type(fast, json_type_boolean) &&
          json_object_get_boolean(fast))
        lw += sprintf(lw, "%s\n", t);
    }
    *w = '\0';
    *lw = '\0';
    pthread_mutex_lock(&m->mu);
    free(m->tool_names);
    free(m->fast_names);
    m->tool_names = names;
    m->fast_names = fasts;
    m->names_ms = mono_ms();
    pthread_mutex_unlock(&m->mu);
  } else {
    free(names);
    free(fasts);
  }
  return tools;
}

/* 1 when name is a line of names ("\nname\n..."), else 0. */
static int in_names(const char *names, const char *name) {
  size_t n = strlen(name);
  /* The list starts with a newline, and name has none: a match is never
   * at its first byte. */
  for (const char *p = names;
       n > 0 && strchr(name, '\n') == NULL && (p = strstr(p, name)) != NULL;
       p++)
    if (p[-1] == '\n' && p[n] == '\n')
      return 1;
  return 0;
}

int atl_mcp_is_quick(atl_mcp_t *m, json_object *msg) {
  json_object *params = NULL, *meta = NULL;
  const char *method = atl__mcp_str(msg, "method");
  if (method == NULL || strcmp(method, "tools/call") != 0 ||
      !json_object_object_get_ex(msg, "params", &params))
    return 0;
  const char *name = atl__mcp_str(params, "name");
  /* Progress is sent by a thread that follows the call, which a quick
   * call on the reading thread does not start. */
  if (name == NULL || (json_object_object_get_ex(params, "_meta", &meta) &&
                       json_object_object_get_ex(meta, "progressToken", NULL)))
    return 0;
  pthread_mutex_lock(&m->mu);
  int quick = m->fast_names != NULL && in_names(m->fast_names, name);
  pthread_mutex_unlock(&m->mu);
  return quick;
}

/* 1 when name is one of the tools tools/list gives, 0 when not, -1 when
 * the list could not be had (*rc says why), -2 when it could not be kept
 * (out of memory). */
static int tool_known(atl_mcp_t *m, atl_rpcc_t *c, const char *name, int *rc) {
  *rc = ATL_RPCC_OK;
  for (int attempt = 0; attempt < 2; attempt++) {
    pthread_mutex_lock(&m->mu);
    int known = m->tool_names != NULL ? in_names(m->tool_names, name) : -1;
    int64_t names_ms = m->names_ms;
    pthread_mutex_unlock(&m->mu);
    /* A name the list lacks is looked up once more, when the list is
     * more than a few seconds old: atelierd may have restarted with other
     * plugins since (the bridge outlives it), and a client looping on a
     * bad name costs atelierd a tool.list now and then, not each time. */
    int fresh = mono_ms() - names_ms < 5000;
    if (known == 1 || (known == 0 && (attempt == 1 || fresh)))
      return known;
    json_object *tools = fetch_tools(m, c, rc);
    if (tools == NULL)
      return -1;
    json_object_put(tools);
  }
  /* The list came but could not be kept (out of memory): not atelierd's
   * doing, and not a reason to stop. */
  return -2;
}

json_object *atl__mcp_tools_list(atl_mcp_t *m, json_object *id,
                                 json_object *params, const atl_mcp_era_t *era,
                                 atl_mcp_req_t *r) {
  json_object *cursor = NULL;
  if (params != NULL && json_object_object_get_ex(params, "cursor", &cursor)) {
    /* One page holds every tool, so no cursor was ever given out: "Invalid
     * cursors SHOULD result in an error with code -32602". */
    r->http_status = 400;
    return atl_mcp_error(
        id, -32602, NULL,
        "Invalid params: cursor %s is not one this server "
        "gave (its tools/list is one page: call it without "
        "a cursor)",
        json_object_to_json_string_ext(cursor, JSON_C_TO_STRING_PLAIN));
  }
  atl_rpcc_t c;
  json_object *tools = NULL;
  int rc = ATL_RPCC_TRANSPORT;
  if (connect_daemon(m, &c, r->cancel_fd) != 0 ||
      (tools = fetch_tools(m, &c, &rc)) == NULL) {
    json_object *e = failed(id, &c, rc, "tool.list", r);
    release_daemon(m, &c, rc == ATL_RPCC_ERROR);
    return e;
  }
  release_daemon(m, &c, 1);
  json_object *res = json_object_new_object();
  json_object_object_add(res, "tools", tools);
  if (era->modern) {
    json_object_object_add(res, "ttlMs", json_object_new_int(ATL_MCP_TTL_MS));
    json_object_object_add(res, "cacheScope", json_object_new_string("public"));
  }
  return atl__mcp_result(id, res, era);
}

/* A new session: for a call that asked for one ("new"), or the first
 * call of a server given none. */
static int new_session(atl_rpcc_t *c, char *out, size_t size) {
  json_object *res = NULL;
  int rc = atl_rpcc_call(c, "session.create", NULL, QUICK_MS, &res);
  const char *sid = rc == ATL_RPCC_OK ? atl__mcp_str(res, "id") : NULL;
  if (sid != NULL) {
    snprintf(out, size, "%s", sid);
  } else if (rc == ATL_RPCC_OK) {
    snprintf(c->errmsg, sizeof(c->errmsg),
             "session.create answered without an id");
    rc = ATL_RPCC_TRANSPORT;
  }
  json_object_put(res);
  return rc;
}

/* The session the calls go to, made at the first call when the server was
 * given none. ATL_RPCC_OK with out set, or why not (atl_rpcc_call's). */
static int session_of(atl_mcp_t *m, atl_rpcc_t *c, char *out, size_t size) {
  static pthread_mutex_t making = PTHREAD_MUTEX_INITIALIZER;
  /* One maker at a time, so that two first calls at once share one
   * session rather than leave an empty one behind. */
  pthread_mutex_lock(&making);
  pthread_mutex_lock(&m->mu);
  snprintf(out, size, "%s", m->session);
  pthread_mutex_unlock(&m->mu);
  int rc = ATL_RPCC_OK;
  if (out[0] == '\0' && (rc = new_session(c, out, size)) == ATL_RPCC_OK) {
    pthread_mutex_lock(&m->mu);
    snprintf(m->session, sizeof(m->session), "%s", out);
    pthread_mutex_unlock(&m->mu);
  }
  pthread_mutex_unlock(&making);
  return rc;
}

/* The images a call attached, as image blocks (fetched with image.get,
 * whose base64 MCP takes as it is) and a line each saying what they are.
 * -1 when the exchange with atelierd broke (gone, or the call cancelled). */
static int add_images(atl_rpcc_t *c, json_object *images, json_object *content,
                      const char *session, const char *page) {
  /* "session X", with the page's link to it when the transport knows the
   * page's address. */
  char where[300];
  if (page != NULL)
    snprintf(where, sizeof(where), "%s (%s/#s=%s)", session, page, session);
  else
    snprintf(where, sizeof(where), "%s", session);
  size_t n = json_object_array_length(images);
  for (size_t i = 0; i < n; i++) {
    json_object *img = json_object_array_get_idx(images, i);
    const char *iid = atl__mcp_str(img, "id");
    if (iid == NULL)
      continue;
    json_object *p = json_object_new_object(), *got = NULL, *fit = NULL;
    json_object_object_add(p, "id", json_object_new_string(iid));
    json_object_object_add(p, "max_base64",
                           json_object_new_int(IMAGE_INLINE_MAX));
    /* Fitting a large noisy picture takes atelierd seconds (more under a
     * sanitizer): not the quick requests' limit. */
    int rc = atl_rpcc_call(c, "image.get", p, 4 * QUICK_MS, &got);
    if (rc == ATL_RPCC_TRANSPORT)
      return -1;
    const char *data = rc == ATL_RPCC_OK ? atl__mcp_str(got, "data") : NULL;
    const char *mime = atl__mcp_str(got, "mime");
    char line[600];
    if (data != NULL && mime != NULL) {
      json_object *b = json_object_new_object();
      json_object_object_add(b, "type", json_object_new_string("image"));
      json_object_object_add(b, "data", json_object_new_string(data));
      json_object_object_add(b, "mimeType", json_object_new_string(mime));
      json_object_array_add(content, b);
      int w = 0, h = 0, ow = 0, oh = 0;
      if (json_object_object_get_ex(got, "fitted", &fit)) {
        w = json_object_get_int(json_object_object_get(fit, "width"));
        h = json_object_get_int(json_object_object_get(fit, "height"));
        ow = json_object_get_int(json_object_object_get(fit, "orig_width"));
        oh = json_object_get_int(json_object_object_get(fit, "orig_height"));
      }
      if (fit != NULL && (w != ow || h != oh))
        snprintf(line, sizeof(line),
                 "Image %s: the picture above, scaled to %dx%d (%s) from "
                 "%dx%d so that this result stays under 1 MB, which MCP "
                 "clients require; the full picture is on Atelier's page for "
                 "session %s.",
                 iid, w, h, mime, ow, oh, where);
      else if (fit != NULL)
        snprintf(line, sizeof(line),
                 "Image %s: the picture above, %dx%d, re-encoded as %s so "
                 "that this result stays under 1 MB, which MCP clients "
                 "require; the original is on Atelier's page for session %s.",
                 iid, w, h, mime, where);
      else
        snprintf(line, sizeof(line),
                 "Image %s (%s): the picture above, also on Atelier's page "
                 "for session %s.",
                 iid, mime, where);
    } else {
      snprintf(line, sizeof(line), "Image %s could not be read: %s", iid,
               c->err_message ? c->err_message : "atelierd did not say why");
    }
    json_object_array_add(content, atl__mcp_text_block(line));
    json_object_put(got);
  }
  return 0;
}

/* ---- progress ----
 *
 * A client that sends a progressToken with a tools/call is told how the
 * call goes: the session's render.progress and tool.progress events of
 * that tool, read on a connection of their own while the call runs, as
 * notifications/progress ({progress, total: 100, message}), each with
 * more progress than the last ("MUST increase"), and none after the
 * answer. A session runs its calls one at a time, so the tool's events in
 * that window are the call's, unless it waited behind another call of
 * the same tool (another client's render): that one's progress is then
 * reported too, as progress is never taken back. */

typedef struct {
  atl_mcp_t *m;
  const atl_mcp_req_t *r;
  json_object *token; /* a copy of the client's progressToken */
  char sid[33];
  char tool[80];
  int64_t after;      /* the session's last event before the call */
  int stop_r, stop_w; /* closing stop_w ends the follower's wait */
  pthread_t thread;
  double sent; /* the last progress sent */
} follow_t;

static void follow_event(follow_t *f, json_object *ev) {
  const char *type = atl__mcp_str(ev, "type");
  json_object *data = NULL, *fr = NULL;
  if (type == NULL ||
      (strcmp(type, "render.progress") != 0 &&
       strcmp(type, "tool.progress") != 0) ||
      !json_object_object_get_ex(ev, "data", &data))
    return;
  const char *tool = atl__mcp_str(data, "tool");
  if (tool != NULL && strcmp(tool, f->tool) != 0)
    return;
  if (!json_object_object_get_ex(data, "fraction", &fr))
    return;
  double p = floor(json_object_get_double(fr) * 1000.0 + 0.5) / 10.0;
  if (!(p > f->sent) || p > 100.0)
    return;
  f->sent = p;
  char msg[200];
  const char *text = atl__mcp_str(data, "message");
  json_object *pass = NULL, *passes = NULL;
  if (text != NULL)
    snprintf(msg, sizeof(msg), "%s: %s", f->tool, text);
  else if (json_object_object_get_ex(data, "pass", &pass) &&
           json_object_object_get_ex(data, "passes", &passes))
    snprintf(msg, sizeof(msg), "%s: %.1f %% (pass %d of %d)", f->tool, p,
             json_object_get_int(pass), json_object_get_int(passes));
  else
    snprintf(msg, sizeof(msg), "%s: %.1f %%", f->tool, p);
  json_object *params = json_object_new_object();
  json_object_object_add(params, "progressToken", json_object_get(f->token));
  /* As the one decimal it was rounded to: json-c would write 23.9 as
   * 23.899999999999999. */
  char num[32];
  snprintf(num, sizeof(num), "%.1f", p);
  json_object_object_add(params, "progress", json_object_new_double_s(p, num));
  json_object_object_add(params, "total", json_object_new_int(100));
  json_object_object_add(params, "message", json_object_new_string(msg));
  json_object *note = json_object_new_object();
  json_object_object_add(note, "jsonrpc", json_object_new_string("2.0"));
  json_object_object_add(note, "method",
                         json_object_new_string("notifications/progress"));
  json_object_object_add(note, "params", params);
  f->r->notify(f->r->notify_user, note);
  json_object_put(note);
}

static void *follow_main(void *arg) {
  follow_t *f = arg;
  atl_rpcc_t c;
  if (connect_daemon(f->m, &c, f->stop_r) != 0) {
    atl_rpcc_close(&c);
    return NULL;
  }
  for (;;) {
    json_object *p = json_object_new_object(), *res = NULL, *evs = NULL;
    json_object_object_add(p, "session", json_object_new_string(f->sid));
    json_object_object_add(p, "after_seq", json_object_new_int64(f->after));
    /* Short waits: when the call ends, this wait is cut off, and atelierd
     * keeps a cut-off wait until it times out. */
    json_object_object_add(p, "wait_ms", json_object_new_int(2000));
    if (atl_rpcc_call(&c, "events.read", p, 10000, &res) != ATL_RPCC_OK)
      break; /* stopped (the pipe closed), or atelierd went away */
    /* On from the last event read, not from last_seq: an answer may stop
     * short of it (its size), and a commit may come between the two. */
    if (json_object_object_get_ex(res, "events", &evs) &&
        json_object_is_type(evs, json_type_array))
      for (size_t i = 0; i < json_object_array_length(evs); i++) {
        json_object *ev = json_object_array_get_idx(evs, i), *seq = NULL;
        follow_event(f, ev);
        if (json_object_object_get_ex(ev, "seq", &seq))
          f->after = json_object_get_int64(seq);
      }
    json_object_put(res);
  }
  atl_rpcc_close(&c);
  return NULL;
}

/* Starts following the call's progress when the client asked for it and
 * the transport can send it; NULL when not (or it cannot start: the call
 * then goes without). c is the call's connection, used here once. */
static follow_t *follow_start(atl_mcp_t *m, atl_rpcc_t *c, const char *sid,
                              const char *tool, json_object *params,
                              const atl_mcp_req_t *r) {
  json_object *meta = NULL, *token = NULL;
  if (r->notify == NULL || params == NULL ||
      !json_object_object_get_ex(params, "_meta", &meta) ||
      !json_object_is_type(meta, json_type_object) ||
      !json_object_object_get_ex(meta, "progressToken", &token) ||
      !(json_object_is_type(token, json_type_string) ||
        json_object_is_type(token, json_type_int)))
    return NULL;
  /* Where the session's events stand now: an after_seq past the last
   * event stands for it (events.read), and the answer says which. */
  json_object *p = json_object_new_object(), *res = NULL, *last = NULL;
  json_object_object_add(p, "session", json_object_new_string(sid));
  json_object_object_add(p, "after_seq", json_object_new_int64(INT64_MAX));
  json_object_object_add(p, "limit", json_object_new_int(1));
  if (atl_rpcc_call(c, "events.read", p, QUICK_MS, &res) != ATL_RPCC_OK ||
      !json_object_object_get_ex(res, "last_seq", &last)) {
    json_object_put(res);
    return NULL;
  }
  follow_t *f = calloc(1, sizeof(*f));
  int fds[2];
  if (f == NULL || pipe2(fds, O_CLOEXEC) != 0) {
    free(f);
    json_object_put(res);
    return NULL;
  }
  f->m = m;
  f->r = r;
  f->after = json_object_get_int64(last);
  json_object_put(res);
  json_object_deep_copy(token, &f->token, NULL);
  snprintf(f->sid, sizeof(f->sid), "%s", sid);
  snprintf(f->tool, sizeof(f->tool), "%s", tool);
  f->stop_r = fds[0];
  f->stop_w = fds[1];
  if (f->token == NULL || pthread_create(&f->thread, NULL, follow_main, f)) {
    close(fds[0]);
    close(fds[1]);
    json_object_put(f->token);
    free(f);
    return NULL;
  }
  return f;
}

/* Stops following, before the call's answer goes: no progress after it. */
static void follow_stop(follow_t *f) {
  if (f == NULL)
    return;
  close(f->stop_w);
  pthread_join(f->thread, NULL);
  close(f->stop_r);
  json_object_put(f->token);
  free(f);
}

static int is_session_id(const char *s) {
  size_t n = strspn(s, "0123456789abcdef");
  return n == 32 && s[n] == '\0';
}

/* What a shared endpoint says to a call that named no session. */
static const char *unnamed_session_text(const char *page) {
  static __thread char text[700];
  snprintf(text, sizeof(text),
           "This endpoint serves every Atelier session, and this call named "
           "none. Use the address of one session's own endpoint, "
           "%s/api/sessions/<session id>/mcp (the session's page, "
           "%s/#s=<session id>, shows the id), or name it in the request's "
           "_meta: {\"%s\": \"<session id>\"}, or \"new\" for a new "
           "session.",
           page ? page : "http://HOST:PORT", page ? page : "http://HOST:PORT",
           ATL_MCP_META_SESSION);
  return text;
}

/* The line a call that made its session adds: how to go on in it. */
static json_object *text_block_made(const char *sid, const char *page) {
  char text[700];
  if (page != NULL)
    snprintf(text, sizeof(text),
             "This call made a new Atelier session, %s: watch it at "
             "%s/#s=%s. To go on in it, name it in _meta "
             "(\"%s\": \"%s\") or use %s/api/sessions/%s/mcp.",
             sid, page, sid, ATL_MCP_META_SESSION, sid, page, sid);
  else
    snprintf(text, sizeof(text),
             "This call made a new Atelier session, %s. To go on in it, "
             "name it in _meta (\"%s\": \"%s\").",
             sid, ATL_MCP_META_SESSION, sid);
  return atl__mcp_text_block(text);
}

json_object *atl__mcp_tools_call(atl_mcp_t *m, json_object *id,
                                 json_object *params, const atl_mcp_era_t *era,
                                 atl_mcp_req_t *r) {
  const char *name = atl__mcp_str(params, "name");
  if (name == NULL) {
    r->http_status = 400;
    return atl_mcp_error(id, -32602, NULL,
                         "Invalid params: tools/call needs params.name, the "
                         "name of a tool tools/list gives");
  }
  json_object *args = NULL;
  if (params != NULL && json_object_object_get_ex(params, "arguments", &args) &&
      args != NULL && !json_object_is_type(args, json_type_object)) {
    r->http_status = 400;
    return atl_mcp_error(
        id, -32602, NULL,
        "Invalid params: params.arguments must be an "
        "object of the tool's arguments, got %s",
        json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN));
  }
  atl_rpcc_t c;
  json_object *answer = NULL, *env = NULL;
  const char *what = "tool.list";
  char sid[33];
  int rc = ATL_RPCC_TRANSPORT, known = -1;
  if (connect_daemon(m, &c, r->cancel_fd) != 0 ||
      (known = tool_known(m, &c, name, &rc)) == -1)
    goto failed;
  if (known == -2) {
    r->http_status = 500;
    answer = atl_mcp_error(id, -32603, NULL,
                           "Internal error: out of memory for the tool list");
    goto out;
  }
  if (!known) {
    /* A protocol error, as the spec's own example: the tool is not one
     * of the list, so the call cannot be a model's mistake in its
     * arguments. */
    answer =
        atl_mcp_error(id, -32602, NULL,
                      "Unknown tool: %s (tools/list names the tools)", name);
    goto out;
  }
  what = "session.create";
  int made = 0;
  const char *named = era->session;
  if (r->session != NULL) {
    /* The endpoint is the session's: a request naming another one is a
     * mistake to point out, not to follow. */
    if (named != NULL && strcmp(named, r->session) != 0) {
      answer = atl_mcp_error(
          id, -32602, NULL,
          "Invalid params: _meta[\"%s\"] names session %.40s, but this "
          "endpoint is session %s's (leave it out, or use /mcp)",
          ATL_MCP_META_SESSION, named, r->session);
      r->http_status = 400;
      goto out;
    }
    snprintf(sid, sizeof(sid), "%s", r->session);
  } else if (named != NULL && strcmp(named, "new") == 0) {
    if ((rc = new_session(&c, sid, sizeof(sid))) != ATL_RPCC_OK)
      goto failed;
    made = 1;
  } else if (named != NULL) {
    if (!is_session_id(named)) {
      answer = atl_mcp_error(
          id, -32602, NULL,
          "Invalid params: _meta[\"%s\"] must be an Atelier session's id "
          "(32 lowercase hex digits) or \"new\", got \"%.40s\"",
          ATL_MCP_META_SESSION, named);
      r->http_status = 400;
      goto out;
    }
    snprintf(sid, sizeof(sid), "%s", named);
  } else if (m->shared) {
    answer = atl__mcp_tool_error(id, era, unnamed_session_text(r->page));
    goto out;
  } else if ((rc = session_of(m, &c, sid, sizeof(sid))) != ATL_RPCC_OK) {
    goto failed;
  }
  char via[ATL_MCP_VIA_MAX + 1];
  const char *client = era->client ? era->client : r->client;
  pthread_mutex_lock(&m->mu);
  if (client == NULL && !m->shared && m->client[0])
    client = m->client;
  atl_mcp_via(m->via, client, via);
  pthread_mutex_unlock(&m->mu);
  json_object *p = json_object_new_object();
  json_object_object_add(p, "session", json_object_new_string(sid));
  json_object_object_add(p, "name", json_object_new_string(name));
  json_object_object_add(
      p, "arguments", args ? json_object_get(args) : json_object_new_object());
  json_object_object_add(p, "via", json_object_new_string(via));
  if (r->if_idle)
    json_object_object_add(p, "if_idle", json_object_new_boolean(1));
  what = "tool.call";
  follow_t *follow = follow_start(m, &c, sid, name, params, r);
  /* A cancel that came meanwhile (follow_start's round trip) stops the
   * call before it is sent: a cancelled create_shape must not happen. */
  struct pollfd hung = {.fd = r->cancel_fd, .events = POLLRDHUP};
  if (c.watch_closed || (r->cancel_fd >= 0 && poll(&hung, 1, 0) > 0)) {
    follow_stop(follow);
    json_object_put(p);
    c.watch_closed = 1;
    rc = ATL_RPCC_TRANSPORT;
    goto failed;
  }
  rc = atl_rpcc_call(&c, "tool.call", p, m->call_timeout_ms, &env);
  follow_stop(follow);
  if (rc == ATL_RPCC_ERROR && c.err_code == ATL_RPCC_BUSY && r->if_idle) {
    r->busy = 1; /* nothing started: the transport sends it again */
    goto out;
  }
  if (rc == ATL_RPCC_ERROR && c.err_code == ATL_RPCC_NO_SESSION) {
    char msg[400];
    r->session_gone = 1;
    pthread_mutex_lock(&m->mu);
    /* Under --new the next call makes another; a session the person
     * named is not swapped for one they did not ask for. */
    int fixed = m->fixed_session || m->shared || named != NULL;
    if (!fixed && strcmp(m->session, sid) == 0)
      m->session[0] = '\0';
    pthread_mutex_unlock(&m->mu);
    if (m->shared || named != NULL)
      snprintf(msg, sizeof(msg),
               "Atelier has no session %s (it was deleted, or never was): "
               "nothing can be called in it. Name another, or \"new\" in "
               "_meta[\"%s\"].",
               sid, ATL_MCP_META_SESSION);
    else
      snprintf(msg, sizeof(msg),
               fixed ? "Atelier's session %s is gone (deleted): nothing can "
                       "be called in it. Start atelierctl mcp again with "
                       "another --session, or with --new."
                     : "Atelier's session %s is gone (deleted); the next "
                       "call makes a new one.",
               sid);
    answer = atl__mcp_tool_error(id, era, msg);
    goto out;
  }
  if (rc != ATL_RPCC_OK)
    goto failed;
  json_object *ok = NULL, *result = NULL, *images = NULL;
  json_object_object_get_ex(env, "success", &ok);
  if (!json_object_get_boolean(ok)) {
    const char *e = atl__mcp_str(env, "error");
    answer = atl__mcp_tool_error(id, era,
                                 e ? e : "the tool failed without a message");
    goto out;
  }
  json_object_object_get_ex(env, "result", &result);
  json_object *content = json_object_new_array();
  json_object_array_add(content, atl__mcp_result_text(result));
  what = "image.get";
  if (json_object_object_get_ex(env, "images", &images) &&
      json_object_is_type(images, json_type_array) &&
      add_images(&c, images, content, sid, r->page) != 0) {
    json_object_put(content);
    rc = ATL_RPCC_TRANSPORT;
    goto failed;
  }
  if (made)
    json_object_array_add(content, text_block_made(sid, r->page));
  json_object *res = atl__mcp_call_result(result, content, sid);
  answer = atl__mcp_result(id, res, era);
  goto out;
failed:
  answer = failed(id, &c, rc, what, r);
out:
  json_object_put(env);
  /* Clean: answered (an error answer too), not cut off mid-exchange. */
  release_daemon(m, &c, rc == ATL_RPCC_OK || rc == ATL_RPCC_ERROR);
  return answer;
}
