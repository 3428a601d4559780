/* The provider-neutral turn a stream accumulates into, and what the
 * providers share (see provider.h). */
#include "atl-build.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atelier/error.h>

#include "provider.h"

void atl_provider_req_free(atl_provider_req_t *r) {
  free(r->url);
  for (size_t i = 0; i < sizeof(r->headers) / sizeof(r->headers[0]); i++)
    free(r->headers[i]);
  free(r->body);
  memset(r, 0, sizeof(*r));
}

void atl_turn_init(atl_turn_t *t) {
  memset(t, 0, sizeof(*t));
  t->input_tokens = -1;
  t->output_tokens = -1;
}

void atl_turn_free(atl_turn_t *t) {
  free(t->text);
  free(t->thinking);
  free(t->thinking_signature);
  for (size_t i = 0; i < t->n_calls; i++) {
    free(t->calls[i].id);
    free(t->calls[i].name);
    free(t->calls[i].args);
    free(t->calls[i].signature);
  }
  free(t->calls);
  free(t->stop_reason);
  free(t->error);
  memset(t, 0, sizeof(*t));
}

static int append(char **buf, size_t *len, size_t *cap, const char *s,
                  size_t n) {
  if (*len + n + 1 > *cap) {
    size_t c = *cap ? *cap : 64;
    while (c < *len + n + 1)
      c *= 2;
    char *b = realloc(*buf, c);
    if (b == NULL)
      return ATL_ENOMEM;
    *buf = b;
    *cap = c;
  }
  memcpy(*buf + *len, s, n);
  *len += n;
  (*buf)[*len] = '\0';
  return 0;
}

int atl_turn_text(atl_turn_t *t, const char *s, size_t len) {
  if (len == 0)
    return 0;
  int rc = append(&t->text, &t->text_len, &t->text_cap, s, len);
  if (rc == 0 && t->on_text != NULL)
    t->on_text(s, len, t->user);
  return rc;
}

int atl_turn_thinking(atl_turn_t *t, const char *s, size_t len) {
  return len ? append(&t->thinking, &t->thinking_len, &t->thinking_cap, s, len)
             : 0;
}

atl_turn_call_t *atl_turn_call(atl_turn_t *t, size_t i) {
  if (i > 255)
    return NULL;
  if (i >= t->n_calls) {
    atl_turn_call_t *c = realloc(t->calls, (i + 1) * sizeof(*c));
    if (c == NULL)
      return NULL;
    memset(c + t->n_calls, 0, (i + 1 - t->n_calls) * sizeof(*c));
    t->calls = c;
    t->n_calls = i + 1;
  }
  return &t->calls[i];
}

int atl_turn_call_args(atl_turn_call_t *c, const char *s, size_t len) {
  return append(&c->args, &c->args_len, &c->args_cap, s, len);
}

int atl_turn_fail(atl_turn_t *t, const char *fmt, ...) {
  if (t->error == NULL) { /* the first problem is the one to report */
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&t->error, fmt, ap) < 0)
      t->error = NULL;
    va_end(ap);
  }
  return ATL_EPROTO;
}

json_object *atl_turn_message(const atl_turn_t *t) {
  json_object *msg = json_object_new_object();
  json_object_object_add(msg, "role", json_object_new_string("model"));
  json_object *parts = json_object_new_array();
  if (t->thinking_len > 0 || t->thinking_signature != NULL) {
    json_object *p = json_object_new_object();
    json_object_object_add(p, "type", json_object_new_string("thinking"));
    json_object_object_add(
        p, "text", json_object_new_string(t->thinking ? t->thinking : ""));
    if (t->thinking_signature != NULL)
      json_object_object_add(p, "signature",
                             json_object_new_string(t->thinking_signature));
    json_object_array_add(parts, p);
  }
  if (t->text_len > 0) {
    json_object *p = json_object_new_object();
    json_object_object_add(p, "type", json_object_new_string("text"));
    json_object_object_add(
        p, "text", json_object_new_string_len(t->text, (int)t->text_len));
    json_object_array_add(parts, p);
  }
  for (size_t i = 0; i < t->n_calls; i++) {
    const atl_turn_call_t *c = &t->calls[i];
    if (c->name == NULL)
      continue; /* an index the stream skipped */
    json_object *p = json_object_new_object();
    json_object_object_add(p, "type", json_object_new_string("tool_call"));
    json_object_object_add(p, "id", json_object_new_string(c->id ? c->id : ""));
    json_object_object_add(p, "name", json_object_new_string(c->name));
    /* No arguments at all is an empty object (a tool without parameters);
     * anything else must parse as one. */
    json_object *args =
        c->args_len ? json_tokener_parse(c->args) : json_object_new_object();
    if (args == NULL || !json_object_is_type(args, json_type_object)) {
      json_object_put(args);
      json_object_object_add(p, "arguments", json_object_new_object());
      json_object_object_add(p, "bad_arguments",
                             json_object_new_string(c->args ? c->args : ""));
    } else {
      json_object_object_add(p, "arguments", args);
    }
    if (c->signature != NULL)
      json_object_object_add(p, "signature",
                             json_object_new_string(c->signature));
    json_object_array_add(parts, p);
  }
  json_object_object_add(msg, "parts", parts);
  if (t->input_tokens >= 0 || t->output_tokens >= 0) {
    json_object *u = json_object_new_object();
    json_object_object_add(u, "input_tokens",
                           json_object_new_int64(t->input_tokens));
    json_object_object_add(u, "output_tokens",
                           json_object_new_int64(t->output_tokens));
    json_object_object_add(msg, "usage", u);
  }
  if (t->stop_reason != NULL)
    json_object_object_add(msg, "stop_reason",
                           json_object_new_string(t->stop_reason));
  return msg;
}

const char *atl_provider_str(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) &&
                 json_object_is_type(v, json_type_string)
             ? json_object_get_string(v)
             : NULL;
}

char *atl_provider_json_text(json_object *o) {
  return strdup(json_object_to_json_string_ext(
      o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

json_object *atl_provider_parse_len(const char *s, size_t len) {
  if (s == NULL || len > INT_MAX)
    return NULL;
  json_tokener *tok = json_tokener_new();
  if (tok == NULL)
    return NULL;
  json_object *o = json_tokener_parse_ex(tok, s, (int)len);
  if (json_tokener_get_error(tok) != json_tokener_success) {
    json_object_put(o);
    o = NULL;
  }
  json_tokener_free(tok);
  return o;
}

const atl_provider_ops_t *atl_provider_find(const char *type) {
  static const atl_provider_ops_t *const all[] = {
      &atl_provider_openai, &atl_provider_anthropic, &atl_provider_gemini};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    if (type != NULL && strcmp(all[i]->type, type) == 0)
      return all[i];
  return NULL;
}
