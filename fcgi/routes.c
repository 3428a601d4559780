/* The /api/ routes: each a JSON-RPC call or two on the daemon (see
 * doc/api.md and doc/deploy.md for the table). Path segments are checked
 * before anything is asked of the daemon, so a malformed URL gets a 404
 * here rather than an error from deeper down. */
#include "atl-build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "bridge.h"
#include "match.h"

/* Reads and model calls answer at once; a tool call may run as long as
 * the tool's own timeout (long-running tools: 10 minutes by default). */
#define RPC_TIMEOUT_MS 30000
#define TOOL_TIMEOUT_MS 660000

static int is_method(fcgi_ctx_t *x, const char *m) {
  return x->method != NULL && strcmp(x->method, m) == 0;
}

static void simple(fcgi_ctx_t *x, int ok_status, const char *method,
                   json_object *params, int timeout_ms) {
  json_object *r = NULL;
  if (fcgi_call(x, method, params, timeout_ms, &r) != 0)
    return;
  fcgi_reply_json(x, ok_status, r);
  json_object_put(r);
}

static json_object *with_session(const char *id) {
  json_object *p = json_object_new_object();
  json_object_object_add(p, "session", json_object_new_string(id));
  return p;
}

static void health(fcgi_ctx_t *x) {
  json_object *r = NULL;
  int rc = fcgi_call_quiet(x, "daemon.info", NULL, 5000, &r);
  json_object *o = json_object_new_object();
  json_object_object_add(
      o, "status",
      json_object_new_string(rc == ATL_RPCC_OK ? "ok" : "unavailable"));
  json_object_object_add(o, "service", json_object_new_string("atelier"));
  if (rc == ATL_RPCC_OK) {
    json_object *v;
    if (json_object_object_get_ex(r, "version", &v))
      json_object_object_add(o, "version", json_object_get(v));
  } else {
    json_object_object_add(
        o, "error",
        json_object_new_string(
            x->rpc->errmsg[0] ? x->rpc->errmsg : "atelierd is not reachable"));
  }
  fcgi_reply_json(x, rc == ATL_RPCC_OK ? 200 : 503, o);
  json_object_put(o);
  json_object_put(r);
}

/* POST /api/sessions {model?} */
static void create_session(fcgi_ctx_t *x) {
  json_object *body = NULL;
  if (fcgi_read_json(x, &body) != 0)
    return;
  if (body != NULL && !json_object_is_type(body, json_type_object)) {
    json_object_put(body);
    fcgi_reply_error(x, 400, "the body must be an object: {\"model\"?: name}");
    return;
  }
  simple(x, 201, "session.create", body ? body : json_object_new_object(),
         RPC_TIMEOUT_MS);
}

/* POST /api/sessions/{id}/messages {text, model?} */
static void send_message(fcgi_ctx_t *x, const char *id) {
  json_object *body = NULL;
  if (fcgi_read_json(x, &body) != 0)
    return;
  if (body == NULL || !json_object_is_type(body, json_type_object)) {
    json_object_put(body);
    fcgi_reply_error(x, 400,
                     "the body must be {\"text\": \"the message\", "
                     "\"model\"?: name}");
    return;
  }
  /* The daemon checks the members (and names the unknown ones). */
  json_object_object_add(body, "session", json_object_new_string(id));
  simple(x, 202, "session.send", body, RPC_TIMEOUT_MS);
}

/* POST /api/sessions/{id}/preview {quality?, view?}: a new live preview. */
static void request_preview(fcgi_ctx_t *x, const char *id) {
  json_object *body = NULL;
  if (fcgi_read_json(x, &body) != 0)
    return;
  if (body != NULL && !json_object_is_type(body, json_type_object)) {
    json_object_put(body);
    fcgi_reply_error(x, 400,
                     "the body must be {\"quality\"?: \"fast\" | \"hq\", "
                     "\"view\"?: a previewed namespace, e.g. \"scene\"}");
    return;
  }
  if (body == NULL)
    body = json_object_new_object();
  json_object_object_add(body, "session", json_object_new_string(id));
  simple(x, 200, "session.preview", body, RPC_TIMEOUT_MS);
}

/* POST /api/sessions/{id}/tools/{name}: the body is the arguments. */
static void call_tool(fcgi_ctx_t *x, const char *id, const char *tool) {
  json_object *args = NULL;
  if (fcgi_read_json(x, &args) != 0)
    return;
  if (args != NULL && !json_object_is_type(args, json_type_object)) {
    json_object_put(args);
    fcgi_reply_error(x, 400,
                     "the body must be the tool's arguments, a JSON object");
    return;
  }
  json_object *p = with_session(id);
  json_object_object_add(p, "name", json_object_new_string(tool));
  json_object_object_add(p, "arguments",
                         args ? args : json_object_new_object());
  simple(x, 200, "tool.call", p, TOOL_TIMEOUT_MS);
}

/* GET /api/images/{id}.png (method image.get) and /api/previews/{id}.png
 * (preview.get): immutable (the id is the content's hash), so cached for a
 * year and revalidated by its ETag. A preview replaced by a newer one is a
 * 404, but a browser that kept it may still show it: it is what it was. */
static void image(fcgi_ctx_t *x, const char *id, const char *method) {
  const char *inm = fcgi_param(x, "HTTP_IF_NONE_MATCH");
  char etag[96];
  snprintf(etag, sizeof(etag), "\"%s\"", id);
  if (inm != NULL && (strstr(inm, etag) != NULL || strcmp(inm, "*") == 0)) {
    x->status = 304;
    fcgi_printf(x,
                "Status: 304 Not Modified\r\nETag: %s\r\n"
                "Cache-Control: public, max-age=31536000, immutable\r\n\r\n",
                etag);
    return;
  }
  json_object *p = json_object_new_object(), *r = NULL, *v;
  json_object_object_add(p, "id", json_object_new_string(id));
  if (fcgi_call(x, method, p, RPC_TIMEOUT_MS, &r) != 0)
    return;
  const char *mime = json_object_object_get_ex(r, "mime", &v)
                         ? json_object_get_string(v)
                         : "application/octet-stream";
  const char *b64 =
      json_object_object_get_ex(r, "data", &v) ? json_object_get_string(v) : "";
  size_t n = 0;
  unsigned char *bytes = atl_base64_decode(b64, strlen(b64), &n);
  if (bytes == NULL) {
    json_object_put(r);
    fcgi_reply_error(x, 502, "atelierd sent image data that is not base64");
    return;
  }
  /* Only image types are served as such: anything else is a download,
   * never a page in our origin. */
  int is_image = strncmp(mime, "image/", 6) == 0 &&
                 strchr(mime, '\r') == NULL && strchr(mime, '\n') == NULL &&
                 strcmp(mime, "image/svg+xml");
  x->status = 200;
  fcgi_printf(x,
              "Status: 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
              "ETag: %s\r\n"
              "Cache-Control: public, max-age=31536000, immutable\r\n"
              "%s\r\n",
              is_image ? mime : "application/octet-stream", n, etag,
              is_image ? "" : "Content-Disposition: attachment\r\n");
  if (!is_method(x, "HEAD"))
    FCGX_PutStr((const char *)bytes, (int)n, x->req->out);
  free(bytes);
  json_object_put(r);
}

/* /metrics: the text atelierd writes on metrics.sock, beside api.sock
 * (doc/admin.md), passed on as it is. The bridge never needs admin.sock
 * for it. */
static void metrics(fcgi_ctx_t *x) {
  char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
  const char *api = fcgi_opt.daemon_socket;
  const char *slash = strrchr(api, '/');
  int dir = slash ? (int)(slash - api) : 1;
  int n =
      snprintf(path, sizeof(path), "%.*s/metrics.sock", dir, slash ? api : ".");
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  int fd = n > 0 && (size_t)n < sizeof(path)
               ? socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)
               : -1;
  struct timeval tv = {.tv_sec = 5};
  if (fd >= 0) {
    memcpy(a.sun_path, path, (size_t)n + 1);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    /* A unix connect() waits on a full backlog: this bounds it too. */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
    if (fd >= 0)
      close(fd);
    fcgi_reply_error(x, 503,
                     "atelierd's metrics socket (%.200s) is not "
                     "reachable; is atelierd running?",
                     path);
    return;
  }
  size_t len = 0, cap = 65536;
  char *text = malloc(cap);
  for (;;) {
    if (text == NULL)
      break;
    if (len == cap) {
      char *nt = cap < ((size_t)16 << 20) ? realloc(text, cap * 2) : NULL;
      if (nt == NULL) {
        free(text);
        text = NULL;
        break;
      }
      text = nt;
      cap *= 2;
    }
    ssize_t r = read(fd, text + len, cap - len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      if (r < 0) {
        free(text);
        text = NULL;
      }
      break;
    }
    len += (size_t)r;
  }
  close(fd);
  if (text == NULL) {
    fcgi_reply_error(x, 502, "atelierd's metrics could not be read whole");
    return;
  }
  x->status = 200;
  fcgi_printf(x,
              "Status: 200 OK\r\nContent-Type: text/plain; version=0.0.4; "
              "charset=utf-8\r\nContent-Length: %zu\r\n"
              "Cache-Control: no-store\r\n\r\n",
              len);
  if (!is_method(x, "HEAD"))
    FCGX_PutStr(text, (int)len, x->req->out);
  free(text);
}

void fcgi_route(fcgi_ctx_t *x) {
  fcgi_match_t m;
  fcgi_match(x->method, x->path, &m);
  /* Before anything else, even a 404: a request that may not use the API
   * learns nothing from it. */
  if (fcgi_guard(x, m.method_ok ? m.route : FCGI_R_NONE) != 0 ||
      (m.route == FCGI_R_AUTH && m.method_ok))
    return;
  if (m.route == FCGI_R_NONE) {
    fcgi_reply_error(x, 404, "%s: %s", m.why, x->path);
    return;
  }
  if (!m.method_ok) {
    fcgi_reply_method(x, m.allow);
    return;
  }
  switch (m.route) {
  case FCGI_R_HEALTH:
    health(x);
    break;
  case FCGI_R_MODELS:
    simple(x, 200, "agent.models", NULL, RPC_TIMEOUT_MS);
    break;
  case FCGI_R_TOOLS:
    simple(x, 200, "tool.list", NULL, RPC_TIMEOUT_MS);
    break;
  case FCGI_R_SESSIONS:
    if (is_method(x, "POST"))
      create_session(x);
    else
      simple(x, 200, "session.list", NULL, RPC_TIMEOUT_MS);
    break;
  case FCGI_R_SESSION:
    simple(x, 200, is_method(x, "DELETE") ? "session.delete" : "session.get",
           with_session(m.session), RPC_TIMEOUT_MS);
    break;
  case FCGI_R_MESSAGES:
    send_message(x, m.session);
    break;
  case FCGI_R_CANCEL:
    simple(x, 200, "session.cancel", with_session(m.session), RPC_TIMEOUT_MS);
    break;
  case FCGI_R_EVENTS:
    fcgi_events(x, m.session);
    break;
  case FCGI_R_TOOL_CALL:
    call_tool(x, m.session, m.tool);
    break;
  case FCGI_R_IMAGE:
    image(x, m.image, "image.get");
    break;
  case FCGI_R_PREVIEW:
    image(x, m.image, "preview.get");
    break;
  case FCGI_R_PREVIEW_REQUEST:
    request_preview(x, m.session);
    break;
  case FCGI_R_METRICS:
    metrics(x);
    break;
  case FCGI_R_MCP:
    fcgi_mcp(x, NULL);
    break;
  case FCGI_R_SESSION_MCP:
    fcgi_mcp(x, m.session);
    break;
  case FCGI_R_AUTH: /* answered by fcgi_guard */
    break;
  }
}
