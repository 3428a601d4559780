/* MCP over Streamable HTTP (doc/mcp.md; ../shared/anchors/mcp.md §7):
 * POST /mcp and POST /api/sessions/{id}/mcp. The protocol is mcp/'s, as
 * `atelierctl mcp` serves it on stdio; this file is the transport.
 *
 * Each POST carries one JSON-RPC message; fcgi_guard() has already
 * checked Host, Origin and the token. Then:
 *   - the headers are checked against the body (atl_mcp_http_check:
 *     Accept, MCP-Protocol-Version, Mcp-Method, Mcp-Name);
 *   - the session is found: the path's, or for /mcp a modern request's
 *     _meta (the protocol core reads it) or a legacy client's MCP session
 *     (Mcp-Session-Id, made at its initialize: a new Atelier session on
 *     /mcp, the path's on /api/sessions/{id}/mcp);
 *   - the answer is JSON, or an event stream once a notification (a
 *     render's progress) comes before it, with X-Accel-Buffering: no so
 *     that nginx passes each event on at once;
 *   - a modern call is cancelled when its client closes the connection
 *     (nginx then closes ours); a legacy one by notifications/cancelled
 *     in another POST of the same MCP session, since for the legacy era
 *     "disconnection SHOULD NOT be interpreted as the client cancelling".
 *
 * The bridge keeps no state between requests but the calls in flight (for
 * their cancels): an MCP session id is signed (mcp.h), so any thread, or
 * a restarted bridge, reads it alone.
 */
#include "atl-build.h"

#include <fcntl.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bridge.h"
#include "mcp.h"

/* A session made for a legacy client's initialize: session.create's limit
 * (routes.c's RPC_TIMEOUT_MS). */
#define CREATE_TIMEOUT_MS 30000

/* ---- the server ---- */

static pthread_once_t server_once = PTHREAD_ONCE_INIT;
static atl_mcp_t *server;

static void server_init(void) {
  atl_mcp_config_t cfg = {.socket_path = fcgi_opt.daemon_socket,
                          .via = "MCP over HTTP",
                          .shared = 1};
  server = atl_mcp_new(&cfg);
}

/* ---- legacy calls in flight, for notifications/cancelled ---- */

typedef struct inflight_s {
  struct inflight_s *next;
  char *key; /* the MCP session id, a newline, the request id's JSON */
  int cancel_w;
} inflight_t;

static pthread_mutex_t inflight_mu = PTHREAD_MUTEX_INITIALIZER;
static inflight_t *inflight;

static char *inflight_key(const char *mcp_sid, json_object *id) {
  const char *idtext =
      json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN);
  size_t n = strlen(mcp_sid) + strlen(idtext) + 2;
  char *k = malloc(n);
  if (k != NULL)
    snprintf(k, n, "%s\n%s", mcp_sid, idtext);
  return k;
}

/* Closes the cancel pipe of the call key names, if it is in flight: its
 * wait for atelierd ends, and atelierd stops the call. An unknown or
 * finished one is ignored, as the spec asks. */
static void inflight_cancel(const char *key) {
  pthread_mutex_lock(&inflight_mu);
  for (inflight_t *f = inflight; f; f = f->next)
    if (strcmp(f->key, key) == 0 && f->cancel_w >= 0) {
      close(f->cancel_w);
      f->cancel_w = -1;
    }
  pthread_mutex_unlock(&inflight_mu);
}

static void inflight_remove(inflight_t *k) {
  pthread_mutex_lock(&inflight_mu);
  for (inflight_t **p = &inflight; *p; p = &(*p)->next)
    if (*p == k) {
      *p = k->next;
      break;
    }
  pthread_mutex_unlock(&inflight_mu);
  if (k->cancel_w >= 0)
    close(k->cancel_w);
  free(k->key);
  free(k);
}

/* ---- the answer ---- */

typedef struct {
  fcgi_ctx_t *x;
  pthread_mutex_t mu;
  int streaming;       /* the headers of an event stream are out */
  int broken;          /* the client has gone */
  const char *headers; /* extra header lines, or "" */
} answer_t;

static void stream_start(answer_t *a) {
  a->x->status = 200;
  if (fcgi_printf(a->x,
                  "Status: 200 OK\r\nContent-Type: text/event-stream\r\n"
                  "Cache-Control: no-cache, no-transform\r\n"
                  "X-Accel-Buffering: no\r\n%s\r\n",
                  a->headers) != 0)
    a->broken = 1;
  a->streaming = 1;
}

static void stream_event(answer_t *a, json_object *msg) {
  const char *s = json_object_to_json_string_ext(
      msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  /* json-c escapes control characters: the text is one data line. */
  if (!a->broken &&
      (fcgi_printf(a->x, "event: message\ndata: %s\n\n", s) != 0 ||
       FCGX_FFlush(a->x->req->out) != 0))
    a->broken = 1;
}

/* A notification of the request (its progress), from the thread that
 * follows the call: the answer becomes an event stream. */
static void notify(void *user, json_object *msg) {
  answer_t *a = user;
  pthread_mutex_lock(&a->mu);
  if (!a->streaming)
    stream_start(a);
  stream_event(a, msg);
  pthread_mutex_unlock(&a->mu);
}

static void reply_202(fcgi_ctx_t *x, const char *headers) {
  x->status = 202;
  fcgi_printf(x, "Status: 202 Accepted\r\nContent-Length: 0\r\n%s\r\n",
              headers);
}

/* A JSON-RPC error for the transport (no id: "MAY be a JSON-RPC error
 * with no id"). */
static void reply_rpc_error(fcgi_ctx_t *x, int status, json_object *id,
                            int code, const char *text) {
  json_object *e = atl_mcp_error(id, code, NULL, "%s", text);
  fcgi_reply_json(x, status, e);
  json_object_put(e);
}

/* The page's address as the client reached it, for the links answers
 * give: the Host fcgi_guard() let through. */
static void page_of(fcgi_ctx_t *x, char *out, size_t size) {
  const char *https = fcgi_param(x, "HTTPS");
  const char *host = fcgi_param(x, "HTTP_HOST");
  int secure = https != NULL && https[0] != '\0' && strcmp(https, "off") != 0;
  snprintf(out, size, "%s://%s", secure ? "https" : "http",
           host ? host : "127.0.0.1");
}

/* 0 when session exists; else answers (404 when it does not, the mapped
 * status when atelierd cannot say) and returns the status. */
static int session_exists(fcgi_ctx_t *x, const char *session, json_object *id) {
  /* The cheapest read of a session: where its events stand. */
  json_object *p = json_object_new_object(), *r = NULL;
  json_object_object_add(p, "session", json_object_new_string(session));
  json_object_object_add(p, "after_seq", json_object_new_int64(INT64_MAX));
  json_object_object_add(p, "limit", json_object_new_int(1));
  int rc = fcgi_call_quiet(x, "events.read", p, CREATE_TIMEOUT_MS, &r);
  json_object_put(r);
  if (rc == ATL_RPCC_OK)
    return 0;
  char text[300];
  if (rc == ATL_RPCC_ERROR && x->rpc->err_code == ATL_RPCC_NO_SESSION) {
    snprintf(text, sizeof(text),
             "Atelier has no session %s: open the page, start or pick a "
             "session, and use its own MCP address",
             session);
    reply_rpc_error(x, 404, id, -32600, text);
    return 404;
  }
  snprintf(text, sizeof(text), "Internal error: atelierd %s",
           rc == ATL_RPCC_TRANSPORT ? "is not reachable; try again"
                                    : "could not look the session up");
  int status = rc == ATL_RPCC_TRANSPORT ? 503 : 500;
  reply_rpc_error(x, status, id, -32603, text);
  return status;
}

/* A new session for a legacy client's initialize on /mcp: 0 with out
 * set, or the status answered. */
static int session_new(fcgi_ctx_t *x, json_object *id, char out[33]) {
  json_object *r = NULL, *v = NULL;
  int rc = fcgi_call_quiet(x, "session.create", json_object_new_object(),
                           CREATE_TIMEOUT_MS, &r);
  const char *sid = rc == ATL_RPCC_OK && json_object_object_get_ex(r, "id", &v)
                        ? json_object_get_string(v)
                        : NULL;
  if (sid != NULL && strlen(sid) == 32) {
    memcpy(out, sid, 33);
    json_object_put(r);
    return 0;
  }
  json_object_put(r);
  char text[300];
  int status = rc == ATL_RPCC_TRANSPORT ? 503
               : rc == ATL_RPCC_ERROR   ? fcgi_status_of_rpc(x->rpc->err_code)
                                        : 500;
  snprintf(text, sizeof(text), "Internal error: atelierd %s",
           rc == ATL_RPCC_TRANSPORT ? "is not reachable; try again"
           : rc == ATL_RPCC_ERROR   ? x->rpc->err_message
                                          ? x->rpc->err_message
                                          : "refused a new session"
                                    : "answered session.create without an id");
  reply_rpc_error(x, status, id, -32603, text);
  return status;
}

/* The client's name in a legacy initialize, or NULL. */
static const char *client_of(json_object *msg) {
  json_object *params = NULL, *info = NULL, *name = NULL;
  if (json_object_object_get_ex(msg, "params", &params) &&
      json_object_is_type(params, json_type_object) &&
      json_object_object_get_ex(params, "clientInfo", &info) &&
      json_object_is_type(info, json_type_object) &&
      json_object_object_get_ex(info, "name", &name) &&
      json_object_is_type(name, json_type_string))
    return json_object_get_string(name);
  return NULL;
}

/* A legacy initialize: answered first, and only if it succeeds is its
 * MCP session made (a new Atelier session on /mcp, the path's on a
 * session's own endpoint) and its id sent: a malformed initialize leaves
 * no session behind. */
static void legacy_initialize(fcgi_ctx_t *x, const char *bound,
                              json_object *msg, json_object *id,
                              const char *key) {
  if (key == NULL) {
    reply_rpc_error(x, 500, id, -32603,
                    "Internal error: no MCP session id can be made "
                    "(atelierd gave the bridge no key: run an atelierd as "
                    "new as this atelier-fcgi)");
    return;
  }
  atl_mcp_req_t r = {.cancel_fd = -1};
  json_object *answer = atl_mcp_handle(server, msg, &r);
  if (answer == NULL || !json_object_object_get_ex(answer, "result", NULL)) {
    if (answer != NULL)
      fcgi_reply_json(x, r.http_status, answer);
    else
      reply_202(x, "");
    json_object_put(answer);
    return;
  }
  /* initialize starts a new MCP session whatever Mcp-Session-Id came
   * with it (the SDKs send none): on /mcp, a new Atelier session. */
  char sid[33], client[33], made[ATL_MCP_SID_MAX + 1];
  const char *name = client_of(msg);
  snprintf(client, sizeof(client), "%.32s", name ? name : "");
  /* An id that cannot be made is found out before a session is: none is
   * left behind by a 500. */
  if (atl_mcp_sid_make(key, "00000000000000000000000000000000", client, made) !=
      0) {
    reply_rpc_error(x, 500, id, -32603,
                    "Internal error: no MCP session id can be made (no "
                    "randomness, or a malformed key from atelierd)");
    json_object_put(answer);
    return;
  }
  int rc =
      bound != NULL ? session_exists(x, bound, id) : session_new(x, id, sid);
  if (rc == 0 && bound != NULL)
    memcpy(sid, bound, 33);
  if (rc == 0 && atl_mcp_sid_make(key, sid, client, made) != 0) {
    reply_rpc_error(x, 500, id, -32603,
                    "Internal error: no MCP session id could be made (no "
                    "randomness)");
    rc = 500;
  }
  if (rc == 0) {
    char headers[ATL_MCP_SID_MAX + 32];
    snprintf(headers, sizeof(headers), "Mcp-Session-Id: %s\r\n", made);
    fcgi_reply_json_h(x, 200, headers, answer);
  }
  json_object_put(answer);
}

void fcgi_mcp(fcgi_ctx_t *x, const char *bound) {
  pthread_once(&server_once, server_init);
  if (server == NULL) {
    reply_rpc_error(x, 500, NULL, -32603, "Internal error: out of memory");
    return;
  }
  char *body = NULL;
  size_t len = 0;
  if (fcgi_read_body(x, &body, &len) != 0)
    return;
  char why[256] = "an empty body (POST one JSON-RPC message)";
  json_object *msg =
      body != NULL ? atl_json_parse_text(body, len, why, sizeof(why)) : NULL;
  free(body);
  if (msg == NULL) {
    json_object *e = atl_mcp_parse_error(why);
    fcgi_reply_json(x, 400, e);
    json_object_put(e);
    return;
  }
  atl_mcp_http_t h = {
      .accept = fcgi_param(x, "HTTP_ACCEPT"),
      .protocol_version = fcgi_param(x, "HTTP_MCP_PROTOCOL_VERSION"),
      .method = fcgi_param(x, "HTTP_MCP_METHOD"),
      .name = fcgi_param(x, "HTTP_MCP_NAME"),
  };
  int status = 200;
  json_object *err = atl_mcp_http_check(&h, msg, &status);
  if (err != NULL) {
    fcgi_reply_json(x, status, err);
    json_object_put(err);
    json_object_put(msg);
    return;
  }

  json_object *id = atl_mcp_request_id(msg);
  const char *key = fcgi_mcp_key();
  const char *given = fcgi_param(x, "HTTP_MCP_SESSION_ID");
  if (given != NULL && given[0] == '\0')
    given = NULL;
  char sid[33] = "", client[33] = "";
  int legacy = atl_mcp_is_legacy_request(msg);
  int initialize = atl_mcp_is_legacy_initialize(msg);
  json_object *cancelled = atl_mcp_cancelled_id(msg);
  /* The modern era has no MCP sessions: a session id sent with a modern
   * request is ignored, as the spec says ("do not mint or echo"). The
   * legacy era's notifications need one only to cancel. */
  int use_given = given != NULL && (legacy || cancelled != NULL);
  if (use_given && !initialize) {
    if (key == NULL || atl_mcp_sid_read(key, given, sid, client) != 0 ||
        (bound != NULL && strcmp(sid, bound) != 0)) {
      /* "MUST respond to requests containing that session ID with HTTP
       * 404": the client then starts a new one with initialize. An id
       * this server did not make for this endpoint is none of its. */
      reply_rpc_error(x, 404, id, -32600,
                      "Session not found: this Mcp-Session-Id is not one "
                      "this server gave for this address; send initialize "
                      "again for a new one");
      json_object_put(msg);
      return;
    }
  }
  if (cancelled != NULL) {
    if (sid[0] != '\0') {
      char *k = inflight_key(given, cancelled);
      if (k != NULL)
        inflight_cancel(k);
      free(k);
    }
    reply_202(x, "");
    json_object_put(msg);
    return;
  }
  if (initialize) {
    legacy_initialize(x, bound, msg, id, key);
    json_object_put(msg);
    return;
  }
  if (legacy && bound == NULL && sid[0] == '\0') {
    const char *method = atl_mcp_method(msg);
    if (method == NULL || strcmp(method, "ping") != 0) {
      /* "SHOULD respond to requests without an MCP-Session-Id header
       * (other than initialization) with HTTP 400". */
      reply_rpc_error(x, 400, id, -32600,
                      "Bad Request: a legacy request to /mcp needs the "
                      "Mcp-Session-Id header that initialize's answer "
                      "gave; send initialize first (or use a session's "
                      "own address, /api/sessions/<id>/mcp)");
      json_object_put(msg);
      return;
    }
  }
  if (bound != NULL && sid[0] == '\0')
    memcpy(sid, bound, 33);

  char page[300];
  page_of(x, page, sizeof(page));

  /* Cancels. A modern call ends when its client hangs up: nginx closes
   * this FastCGI connection then (fastcgi_keep_conn off). A legacy one
   * with an MCP session ends by notifications/cancelled. */
  inflight_t *flight = NULL;
  int cancel_r = -1;
  int slow = atl_mcp_is_slow(msg);
  if (slow && legacy && given != NULL && sid[0] != '\0') {
    int fds[2];
    flight = calloc(1, sizeof(*flight));
    if (flight != NULL && (flight->key = inflight_key(given, id)) != NULL &&
        pipe2(fds, O_CLOEXEC) == 0) {
      flight->cancel_w = fds[1];
      cancel_r = fds[0];
      pthread_mutex_lock(&inflight_mu);
      flight->next = inflight;
      inflight = flight;
      pthread_mutex_unlock(&inflight_mu);
    } else if (flight != NULL) {
      /* Without memory for it, the call goes on uncancellable. */
      free(flight->key);
      free(flight);
      flight = NULL;
    }
  }

  answer_t a = {.x = x, .headers = ""};
  pthread_mutex_init(&a.mu, NULL);
  atl_mcp_req_t r = {
      .cancel_fd =
          cancel_r >= 0 ? cancel_r : (!legacy && slow ? x->req->ipcFd : -1),
      .notify = notify,
      .notify_user = &a,
      .session = sid[0] ? sid : NULL,
      .client = client[0] ? client : NULL,
      .page = page,
  };
  json_object *answer = atl_mcp_handle(server, msg, &r);
  if (flight != NULL)
    inflight_remove(flight);
  if (cancel_r >= 0)
    close(cancel_r);

  if (legacy && r.session_gone && bound == NULL && given != NULL &&
      !a.streaming) {
    /* The Atelier session of this MCP session was deleted: the MCP
     * session has ended, and the client starts another. (Once progress
     * has gone out as a stream, the status is sent: the tool error that
     * says so ends the stream instead.) */
    json_object_put(answer);
    answer = NULL;
    reply_rpc_error(x, 404, id, -32600,
                    "Session not found: this MCP session's Atelier "
                    "session was deleted; send initialize again for a "
                    "new one");
  }
  if (a.streaming) {
    /* The answer ends the stream ("The final JSON-RPC response SHOULD
     * terminate the stream"); a cancelled call's stream just ends. */
    if (answer != NULL)
      stream_event(&a, answer);
  } else if (answer != NULL) {
    fcgi_reply_json(x, r.http_status, answer);
  } else if (r.cancelled && x->status == 0) {
    /* A request its client cancelled: "SHOULD NOT respond" to it, but
     * its POST needs an answer; an event stream with no message is
     * one that says nothing. A client that takes JSON only is told it
     * was cancelled (-32800, outside the spec's reserved range). */
    const char *acc = fcgi_param(x, "HTTP_ACCEPT");
    if (acc == NULL || strstr(acc, "event-stream") != NULL ||
        strstr(acc, "*/*") != NULL || strstr(acc, "text/*") != NULL)
      stream_start(&a);
    else
      reply_rpc_error(x, 200, id, -32800, "Request cancelled");
  } else if (x->status == 0) {
    /* A notification or a response. */
    reply_202(x, "");
  }
  pthread_mutex_destroy(&a.mu);
  json_object_put(answer);
  json_object_put(msg);
}
