/* Answers, request bodies and calls to the daemon: what every route
 * shares. Errors are JSON, {"error": "what was wrong"}, with the status
 * that says whose fault it was, so that a page or a script can show the
 * message as it is. */
#include "atl-build.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge.h"

const char *fcgi_status_text(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 201:
    return "Created";
  case 202:
    return "Accepted";
  case 204:
    return "No Content";
  case 304:
    return "Not Modified";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 409:
    return "Conflict";
  case 411:
    return "Length Required";
  case 413:
    return "Content Too Large";
  case 415:
    return "Unsupported Media Type";
  case 421:
    return "Misdirected Request";
  case 429:
    return "Too Many Requests";
  case 500:
    return "Internal Server Error";
  case 502:
    return "Bad Gateway";
  case 503:
    return "Service Unavailable";
  case 504:
    return "Gateway Timeout";
  default:
    return "Unknown";
  }
}

int fcgi_printf(fcgi_ctx_t *x, const char *fmt, ...) {
  /* libfcgi's own FCGX_FPrintF knows neither %zu nor %lld: format here. */
  char small[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof(small), fmt, ap);
  va_end(ap);
  if (n < 0)
    return -1;
  if ((size_t)n < sizeof(small))
    return FCGX_PutStr(small, n, x->req->out) == n ? 0 : -1;
  char *big = malloc((size_t)n + 1);
  if (big == NULL)
    return -1;
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  int rc = FCGX_PutStr(big, n, x->req->out) == n ? 0 : -1;
  free(big);
  return rc;
}

const char *fcgi_param(fcgi_ctx_t *x, const char *name) {
  return FCGX_GetParam(name, x->req->envp);
}

static void reply_text(fcgi_ctx_t *x, int status, const char *extra_headers,
                       const char *body, size_t len) {
  x->status = status;
  fcgi_printf(x,
              "Status: %d %s\r\n"
              "Content-Type: application/json\r\n"
              "Content-Length: %zu\r\n"
              "Cache-Control: no-store\r\n"
              "%s\r\n",
              status, fcgi_status_text(status), len,
              extra_headers ? extra_headers : "");
  /* A HEAD request gets the headers only. */
  const char *m = x->method;
  if (m == NULL || strcmp(m, "HEAD") != 0)
    FCGX_PutStr(body, (int)len, x->req->out);
}

void fcgi_reply_json_h(fcgi_ctx_t *x, int status, const char *headers,
                       json_object *body) {
  size_t len = 0;
  const char *text = json_object_to_json_string_length(
      body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
  reply_text(x, status, headers, text, len);
}

void fcgi_reply_json(fcgi_ctx_t *x, int status, json_object *body) {
  fcgi_reply_json_h(x, status, NULL, body);
}

static void reply_error_v(fcgi_ctx_t *x, int status, const char *headers,
                          const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "error", json_object_new_string(msg));
  size_t len = 0;
  const char *text = json_object_to_json_string_length(
      o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
  reply_text(x, status, headers, text, len);
  json_object_put(o);
}

void fcgi_reply_error(fcgi_ctx_t *x, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  reply_error_v(x, status, NULL, fmt, ap);
  va_end(ap);
}

void fcgi_reply_error_h(fcgi_ctx_t *x, int status, const char *headers,
                        const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  reply_error_v(x, status, headers, fmt, ap);
  va_end(ap);
}

void fcgi_reply_method(fcgi_ctx_t *x, const char *allow) {
  char h[128];
  snprintf(h, sizeof(h), "Allow: %s\r\n", allow);
  fcgi_reply_error_h(x, 405, h, "%s %s is not allowed here (allowed: %s)",
                     x->method ? x->method : "?", x->path, allow);
}

int fcgi_read_body(fcgi_ctx_t *x, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  const char *cl = fcgi_param(x, "CONTENT_LENGTH");
  if (cl == NULL || cl[0] == '\0')
    return 0; /* no body */
  char *end;
  errno = 0;
  unsigned long long n = strtoull(cl, &end, 10);
  if (errno != 0 || *end != '\0' || cl[0] == '-') {
    fcgi_reply_error(x, 400, "Content-Length is not a number: '%.40s'", cl);
    return 400;
  }
  if (n > fcgi_opt.max_body) {
    fcgi_reply_error(x, 413,
                     "the request body is %llu bytes; at most %zu are "
                     "accepted",
                     n, fcgi_opt.max_body);
    return 413;
  }
  if (n == 0)
    return 0;
  const char *ct = fcgi_param(x, "CONTENT_TYPE");
  if (ct != NULL && ct[0] != '\0' && strncmp(ct, "application/json", 16) != 0) {
    fcgi_reply_error(x, 415,
                     "the body must be JSON (Content-Type: application/json), "
                     "not %.60s",
                     ct);
    return 415;
  }
  char *buf = malloc(n + 1);
  if (buf == NULL) {
    fcgi_reply_error(x, 500, "out of memory");
    return 500;
  }
  size_t got = 0;
  while (got < n) {
    int r = FCGX_GetStr(buf + got, (int)(n - got > 65536 ? 65536 : n - got),
                        x->req->in);
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  if (got < n) {
    free(buf);
    fcgi_reply_error(x, 400, "the request body ended after %zu of %llu bytes",
                     got, n);
    return 400;
  }
  buf[n] = '\0';
  *out = buf;
  *len = (size_t)n;
  return 0;
}

int fcgi_read_json(fcgi_ctx_t *x, json_object **out) {
  *out = NULL;
  char *buf = NULL;
  size_t n = 0;
  int rc = fcgi_read_body(x, &buf, &n);
  if (rc != 0 || buf == NULL)
    return rc;
  char why[200];
  json_object *o = atl_json_parse_text(buf, n, why, sizeof(why));
  free(buf);
  if (o == NULL) {
    fcgi_reply_error(x, 400, "the body is not valid JSON: %s", why);
    return 400;
  }
  *out = o;
  return 0;
}

int fcgi_status_of_rpc(int code) {
  switch (code) {
  case -32700: /* parse error: ours to fix, but the input came from the user */
  case -32600:
  case -32602:
    return 400;
  case -32001: /* no such session */
  case -32002:
    return 404; /* no such image */
  case -32003:
    return 503; /* shutting down */
  case -32004:
    return 429; /* the session's queue is full */
  case -32010:
    return 503; /* store failure: retry */
  default:
    return 500;
  }
}

int fcgi_call_quiet(fcgi_ctx_t *x, const char *method, json_object *params,
                    int timeout_ms, json_object **result) {
  atl_rpcc_t *c = x->rpc;
  *result = NULL;
  for (int attempt = 0; attempt < 2; attempt++) {
    if (c->fd < 0) {
      if (atl_rpcc_connect(c, fcgi_opt.daemon_socket) != 0) {
        json_object_put(params);
        return ATL_RPCC_TRANSPORT;
      }
      /* Another daemon, perhaps with another configuration. */
      fcgi_auth_forget();
    }
    json_object *p = params ? json_object_get(params) : NULL;
    int rc = atl_rpcc_call(c, method, p, timeout_ms, result);
    if (rc != ATL_RPCC_TRANSPORT) {
      json_object_put(params);
      return rc;
    }
    /* The connection broke (the daemon restarted, most likely). A request
     * that was not written whole was never seen, so it may go again on a
     * new connection; one that was is not repeated: it may have run. */
    int unsent = !c->sent;
    atl_rpcc_close(c);
    if (!unsent)
      break;
  }
  json_object_put(params);
  return ATL_RPCC_TRANSPORT;
}

int fcgi_call(fcgi_ctx_t *x, const char *method, json_object *params,
              int timeout_ms, json_object **result) {
  int rc = fcgi_call_quiet(x, method, params, timeout_ms, result);
  if (rc == ATL_RPCC_OK)
    return 0;
  if (rc == ATL_RPCC_TRANSPORT) {
    fcgi_reply_error(x, 503, "atelierd is not reachable (%s); try again",
                     x->rpc->errmsg[0] ? x->rpc->errmsg : "no connection");
    return 503;
  }
  int status = fcgi_status_of_rpc(x->rpc->err_code);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "error",
                         json_object_new_string(x->rpc->err_message
                                                    ? x->rpc->err_message
                                                    : "the daemon refused"));
  json_object_object_add(o, "code", json_object_new_int(x->rpc->err_code));
  if (x->rpc->err_data != NULL)
    json_object_object_add(o, "data", json_object_get(x->rpc->err_data));
  fcgi_reply_json(x, status, o);
  json_object_put(o);
  return status;
}

void fcgi_log(const char *level, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ atelier-fcgi %s %s\n",
          tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
          tm.tm_sec, ts.tv_nsec / 1000000, level, msg);
}
