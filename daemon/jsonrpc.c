/* JSON-RPC 2.0 framing, parsing and response building. */
#include "atl-build.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "util.h"

void atl_framer_init(atl_framer_t *f, size_t max_frame) {
  memset(f, 0, sizeof(*f));
  f->max_frame = max_frame;
}

void atl_framer_free(atl_framer_t *f) {
  free(f->buf);
  memset(f, 0, sizeof(*f));
}

static int framer_reserve(atl_framer_t *f, size_t extra) {
  if (f->len + extra <= f->cap)
    return 0;
  size_t cap = f->cap ? f->cap : 4096;
  while (cap < f->len + extra)
    cap *= 2;
  char *nb = realloc(f->buf, cap);
  if (nb == NULL)
    return ATL_ENOMEM;
  f->buf = nb;
  f->cap = cap;
  return 0;
}

/* Consumes complete lines from the front of the buffer. */
static int framer_drain(atl_framer_t *f, atl_frame_cb cb, void *user) {
  size_t start = 0;
  int stop = 0;
  while (!stop && start < f->len) {
    size_t from = start + (start == 0 ? f->scanned : 0);
    char *nl = memchr(f->buf + from, '\n', f->len - from);
    if (nl == NULL) {
      size_t pending = f->len - start;
      if (!f->discarding && pending > f->max_frame) {
        /* The frame is already too long: report it now rather than
         * buffering up to the newline, and drop what we have. */
        f->discarding = 1;
        stop = cb(ATL_FRAME_OVERSIZE, NULL, pending, user);
        start = f->len;
      } else if (f->discarding) {
        start = f->len;
      }
      break;
    }
    size_t n = (size_t)(nl - (f->buf + start));
    if (f->discarding) {
      f->discarding = 0;
    } else if (n > f->max_frame) {
      stop = cb(ATL_FRAME_OVERSIZE, NULL, n, user);
    } else {
      size_t m = n;
      if (m > 0 && f->buf[start + m - 1] == '\r')
        m--;
      if (m > 0)
        stop = cb(ATL_FRAME_LINE, f->buf + start, m, user);
    }
    start += n + 1;
  }
  if (start > 0) {
    memmove(f->buf, f->buf + start, f->len - start);
    f->len -= start;
    f->scanned = 0;
  }
  /* Whatever is left has been searched for a newline already (unless we
   * stopped early, in which case the next feed rescans from the start). */
  f->scanned = stop ? 0 : f->len;
  return 0;
}

int atl_framer_drain(atl_framer_t *f, atl_frame_cb cb, void *user) {
  return f->len > 0 ? framer_drain(f, cb, user) : 0;
}

int atl_framer_feed(atl_framer_t *f, const char *data, size_t len,
                    atl_frame_cb cb, void *user) {
  if (f->discarding) {
    /* Skip to the end of the oversize frame without buffering it. */
    const char *nl = memchr(data, '\n', len);
    if (nl == NULL)
      return 0;
    f->discarding = 0;
    size_t skip = (size_t)(nl - data) + 1;
    data += skip;
    len -= skip;
  }
  if (len > 0) {
    if (framer_reserve(f, len) != 0)
      return ATL_ENOMEM;
    memcpy(f->buf + f->len, data, len);
    f->len += len;
  }
  return framer_drain(f, cb, user);
}

static char *finish_line(json_object *resp, size_t *len) {
  size_t n = 0;
  const char *text = json_object_to_json_string_length(
      resp, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
  char *out = malloc(n + 2);
  if (out != NULL) {
    memcpy(out, text, n);
    out[n] = '\n';
    out[n + 1] = '\0';
    if (len)
      *len = n + 1;
  }
  json_object_put(resp);
  return out;
}

static json_object *response_head(json_object *id) {
  json_object *resp = json_object_new_object();
  json_object_object_add(resp, "jsonrpc", json_object_new_string("2.0"));
  json_object_object_add(resp, "id", id ? json_object_get(id) : NULL);
  return resp;
}

char *atl_rpc_result(json_object *id, json_object *result, size_t *len) {
  json_object *resp = response_head(id);
  json_object_object_add(resp, "result", json_object_get(result));
  return finish_line(resp, len);
}

char *atl_rpc_result_text(json_object *id, const char *result_text,
                          size_t *len) {
  /* Splicing the text avoids parsing and re-serializing a result that a
   * worker thread has already serialized. */
  const char *idtext =
      id ? json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN) : "null";
  size_t n = strlen(idtext) + strlen(result_text) + 64;
  char *out = malloc(n);
  if (out == NULL)
    return NULL;
  int w = snprintf(out, n, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%s}\n",
                   idtext, result_text);
  if (len)
    *len = (size_t)w;
  return out;
}

char *atl_rpc_error(json_object *id, int code, const char *message,
                    json_object *data, size_t *len) {
  json_object *resp = response_head(id);
  json_object *err = json_object_new_object();
  json_object_object_add(err, "code", json_object_new_int(code));
  json_object_object_add(err, "message", json_object_new_string(message));
  if (data != NULL)
    json_object_object_add(err, "data", json_object_get(data));
  json_object_object_add(resp, "error", err);
  return finish_line(resp, len);
}

void atl_rpc_request_free(atl_rpc_request_t *req) {
  if (req->root)
    json_object_put(req->root);
  memset(req, 0, sizeof(*req));
}

/* json-c accepts NaN and Infinity even in strict mode; JSON has neither,
 * and a NaN that reached a tool would compare false with every bound of its
 * schema. Returns 1 if v holds a non-finite number anywhere. */
static int has_nonfinite(json_object *v) {
  switch (json_object_get_type(v)) {
  case json_type_double:
    return !isfinite(json_object_get_double(v));
  case json_type_array:
    for (size_t i = 0; i < json_object_array_length(v); i++)
      if (has_nonfinite(json_object_array_get_idx(v, i)))
        return 1;
    return 0;
  case json_type_object: {
    json_object_object_foreach(v, key, val) {
      (void)key;
      if (has_nonfinite(val))
        return 1;
    }
    return 0;
  }
  default:
    return 0;
  }
}

int atl_rpc_parse(const char *line, size_t len, atl_rpc_request_t *req,
                  char **error_response) {
  memset(req, 0, sizeof(*req));
  *error_response = NULL;
  json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
  if (tok == NULL)
    return ATL_RPC_INTERNAL_ERROR;
  /* JSON text is UTF-8 (RFC 8259); without this check, invalid bytes inside
   * a string would be accepted and echoed back in error messages, making
   * our own responses invalid JSON for strict clients. */
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  json_object *root = json_tokener_parse_ex(tok, line, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  size_t off = json_tokener_get_parse_end(tok);
  if (root == NULL && jerr == json_tokener_continue && off == len) {
    /* A bare number at the end of the frame is incomplete to json-c until
     * it sees a terminator; the frame's end is one. */
    root = json_tokener_parse_ex(tok, " ", 1);
    jerr = json_tokener_get_error(tok);
    off = len;
  }
  json_tokener_free(tok);
  if (root != NULL && jerr == json_tokener_success && off == len &&
      has_nonfinite(root)) {
    json_object_put(root);
    *error_response = atl_rpc_error(
        NULL, ATL_RPC_PARSE_ERROR,
        "Parse error: NaN and Infinity are not JSON numbers; send a finite "
        "number",
        NULL, NULL);
    return ATL_RPC_PARSE_ERROR;
  }
  if (root == NULL || jerr != json_tokener_success || off != len) {
    /* Trailing bytes after a complete value are as malformed as a broken
     * value: a frame holds exactly one JSON text. */
    char msg[256];
    if (root != NULL && jerr == json_tokener_success)
      snprintf(msg, sizeof(msg),
               "Parse error: unexpected data after the JSON value at byte %zu "
               "(one JSON text per line)",
               off);
    else
      snprintf(msg, sizeof(msg), "Parse error: %s at byte %zu",
               json_tokener_error_desc(
                   jerr == json_tokener_success ? json_tokener_continue : jerr),
               off);
    if (root)
      json_object_put(root);
    *error_response = atl_rpc_error(NULL, ATL_RPC_PARSE_ERROR, msg, NULL, NULL);
    return ATL_RPC_PARSE_ERROR;
  }
  const char *why = NULL;
  json_object *v, *id = NULL;
  if (!json_object_is_type(root, json_type_object)) {
    why = json_object_is_type(root, json_type_array)
              ? "Invalid Request: batches are not supported; send one request "
                "object per line"
              : "Invalid Request: expected a JSON-RPC request object";
  } else {
    if (json_object_object_get_ex(root, "id", &id)) {
      json_type t = json_object_get_type(id);
      if (t != json_type_string && t != json_type_int &&
          t != json_type_double && t != json_type_null) {
        why = "Invalid Request: \"id\" must be a string, a number or null";
        id = NULL;
      }
    }
    if (why == NULL) {
      if (!json_object_object_get_ex(root, "jsonrpc", &v) ||
          !json_object_is_type(v, json_type_string) ||
          strcmp(json_object_get_string(v), "2.0") != 0)
        why = "Invalid Request: \"jsonrpc\" must be \"2.0\"";
      else if (!json_object_object_get_ex(root, "method", &v) ||
               !json_object_is_type(v, json_type_string))
        why = "Invalid Request: \"method\" must be a string";
      else
        req->method = json_object_get_string(v);
    }
    if (why == NULL && json_object_object_get_ex(root, "params", &v) &&
        v != NULL) {
      if (!json_object_is_type(v, json_type_object) &&
          !json_object_is_type(v, json_type_array))
        why = "Invalid Request: \"params\" must be an object";
      else
        req->params = v;
    }
  }
  if (why != NULL) {
    *error_response =
        atl_rpc_error(id, ATL_RPC_INVALID_REQUEST, why, NULL, NULL);
    json_object_put(root);
    memset(req, 0, sizeof(*req));
    return ATL_RPC_INVALID_REQUEST;
  }
  req->root = root;
  req->notification = !json_object_object_get_ex(root, "id", &v);
  req->id = req->notification ? NULL : v;
  return 0;
}
