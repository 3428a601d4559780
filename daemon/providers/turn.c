/* The provider-neutral turn a stream accumulates into, and what the
 * providers share (see provider.h). */
#include "atl-build.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

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
  for (size_t i = 0; i < t->n_thoughts; i++) {
    free(t->thoughts[i].text);
    free(t->thoughts[i].signature);
    free(t->thoughts[i].redacted);
  }
  free(t->thoughts);
  free(t->order);
  for (size_t i = 0; i < t->n_calls; i++) {
    free(t->calls[i].id);
    free(t->calls[i].name);
    free(t->calls[i].args);
    free(t->calls[i].signature);
  }
  free(t->calls);
  free(t->stop_reason);
  free(t->stop_message);
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

/* Parts are few (a text, some thoughts, the calls); this bounds what a
 * broken stream can make us allocate. */
#define MAX_PARTS 2048
#define MAX_THOUGHTS 1024

static atl_turn_part_t *last_part(atl_turn_t *t) {
  return t->n_order ? &t->order[t->n_order - 1] : NULL;
}

/* Adds a part, closing the text part before it. */
static int add_part(atl_turn_t *t, unsigned char kind, size_t index) {
  if (t->n_order >= MAX_PARTS)
    return ATL_ENOMEM;
  if (t->n_order == t->order_cap) {
    size_t cap = t->order_cap ? 2 * t->order_cap : 8;
    atl_turn_part_t *o = realloc(t->order, cap * sizeof(*o));
    if (o == NULL)
      return ATL_ENOMEM;
    t->order = o;
    t->order_cap = cap;
  }
  atl_turn_part_t *prev = last_part(t);
  if (prev != NULL && prev->kind == ATL_TURN_TEXT && prev->to == SIZE_MAX)
    prev->to = t->text_len;
  t->order[t->n_order++] = (atl_turn_part_t){
      .kind = kind, .index = index, .from = t->text_len, .to = SIZE_MAX};
  return 0;
}

int atl_turn_text(atl_turn_t *t, const char *s, size_t len) {
  if (len == 0)
    return 0;
  atl_turn_part_t *last = last_part(t);
  int rc = 0;
  if (last == NULL || last->kind != ATL_TURN_TEXT)
    rc = add_part(t, ATL_TURN_TEXT, 0);
  if (rc == 0)
    rc = append(&t->text, &t->text_len, &t->text_cap, s, len);
  if (rc == 0 && t->on_text != NULL)
    t->on_text(s, len, t->user);
  return rc;
}

atl_turn_thought_t *atl_turn_thought(atl_turn_t *t, int fresh) {
  if (!fresh && t->n_thoughts > 0)
    return &t->thoughts[t->n_thoughts - 1];
  if (t->n_thoughts >= MAX_THOUGHTS)
    return NULL;
  atl_turn_thought_t *th =
      realloc(t->thoughts, (t->n_thoughts + 1) * sizeof(*th));
  if (th == NULL)
    return NULL;
  t->thoughts = th;
  memset(&th[t->n_thoughts], 0, sizeof(*th));
  if (add_part(t, ATL_TURN_THOUGHT, t->n_thoughts) != 0)
    return NULL;
  return &t->thoughts[t->n_thoughts++];
}

int atl_turn_thought_text(atl_turn_thought_t *th, const char *s, size_t len) {
  return len ? append(&th->text, &th->text_len, &th->text_cap, s, len) : 0;
}

int atl_turn_thinking(atl_turn_t *t, const char *s, size_t len) {
  if (len == 0)
    return 0;
  atl_turn_part_t *last = last_part(t);
  int open = last != NULL && last->kind == ATL_TURN_THOUGHT &&
             t->thoughts[last->index].redacted == NULL;
  atl_turn_thought_t *th = atl_turn_thought(t, !open);
  return th ? atl_turn_thought_text(th, s, len) : ATL_ENOMEM;
}

int atl_turn_thought_sign(atl_turn_thought_t *th, const char *s, size_t len,
                          int append_to) {
  if (!append_to)
    th->signature_len = 0;
  return append(&th->signature, &th->signature_len, &th->signature_cap, s, len);
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
    for (size_t k = t->n_calls; k <= i; k++)
      if (add_part(t, ATL_TURN_CALL, k) != 0)
        return NULL;
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

int atl_turn_stop_message(atl_turn_t *t, const char *s, size_t len) {
  return len ? append(&t->stop_message, &t->stop_message_len,
                      &t->stop_message_cap, s, len)
             : 0;
}

int atl_turn_stop_kind(const char *r) {
  static const char *const length[] = {"max_tokens", "length", "MAX_TOKENS",
                                       "model_context_window_exceeded", NULL};
  static const char *const refusal[] = {
      "refusal",   "content_filter",     "SAFETY", "RECITATION",
      "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",   "IMAGE_SAFETY",
      "LANGUAGE",  "prompt_blocked",     NULL};
  static const char *const malformed[] = {"MALFORMED_FUNCTION_CALL",
                                          "UNEXPECTED_TOOL_CALL",
                                          "TOO_MANY_TOOL_CALLS", NULL};
  if (r == NULL)
    return ATL_STOP_END;
  for (size_t i = 0; length[i]; i++)
    if (strcmp(r, length[i]) == 0)
      return ATL_STOP_LENGTH;
  for (size_t i = 0; refusal[i]; i++)
    if (strcmp(r, refusal[i]) == 0)
      return ATL_STOP_REFUSAL;
  for (size_t i = 0; malformed[i]; i++)
    if (strcmp(r, malformed[i]) == 0)
      return ATL_STOP_MALFORMED;
  return strcmp(r, "pause_turn") == 0 ? ATL_STOP_PAUSE : ATL_STOP_END;
}

static json_object *thought_part(const atl_turn_thought_t *th) {
  json_object *p = json_object_new_object();
  if (th->redacted != NULL) {
    json_object_object_add(p, "type",
                           json_object_new_string("redacted_thinking"));
    json_object_object_add(p, "data", json_object_new_string(th->redacted));
    return p;
  }
  json_object_object_add(p, "type", json_object_new_string("thinking"));
  json_object_object_add(
      p, "text",
      json_object_new_string_len(th->text ? th->text : "", (int)th->text_len));
  if (th->signature != NULL)
    json_object_object_add(p, "signature",
                           json_object_new_string(th->signature));
  return p;
}

/* An id for a call the provider named not (Gemini often does not) or
 * named twice in one answer: every provider wants each call answered by
 * its id, and Anthropic wants ids of [a-zA-Z0-9_-], OpenAI of at most 40
 * characters. */
static void make_id(char out[32]) {
  unsigned char r[10];
  if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
    for (size_t i = 0; i < sizeof(r); i++)
      r[i] = (unsigned char)rand();
  memcpy(out, "atl_", 4);
  for (size_t i = 0; i < sizeof(r); i++)
    snprintf(out + 4 + 2 * i, 3, "%02x", r[i]);
}

static json_object *call_part(const atl_turn_call_t *c, json_object *parts) {
  json_object *p = json_object_new_object();
  json_object_object_add(p, "type", json_object_new_string("tool_call"));
  int taken = c->id == NULL || c->id[0] == '\0';
  for (size_t i = 0; !taken && i < json_object_array_length(parts); i++) {
    json_object *o = json_object_array_get_idx(parts, i), *id;
    taken = json_object_object_get_ex(o, "id", &id) &&
            strcmp(json_object_get_string(id), c->id) == 0;
  }
  if (taken) {
    char id[32];
    make_id(id);
    json_object_object_add(p, "id", json_object_new_string(id));
    json_object_object_add(p, "made_id", json_object_new_boolean(1));
  } else {
    json_object_object_add(p, "id", json_object_new_string(c->id));
  }
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
  return p;
}

json_object *atl_turn_message(const atl_turn_t *t) {
  json_object *msg = json_object_new_object();
  json_object_object_add(msg, "role", json_object_new_string("model"));
  json_object *parts = json_object_new_array();
  for (size_t i = 0; i < t->n_order; i++) {
    const atl_turn_part_t *o = &t->order[i];
    if (o->kind == ATL_TURN_TEXT) {
      size_t to = o->to == SIZE_MAX ? t->text_len : o->to;
      if (to <= o->from ||
          atl_provider_blank_n(t->text + o->from, to - o->from))
        continue;
      json_object *p = json_object_new_object();
      json_object_object_add(p, "type", json_object_new_string("text"));
      json_object_object_add(
          p, "text",
          json_object_new_string_len(t->text + o->from, (int)(to - o->from)));
      json_object_array_add(parts, p);
    } else if (o->kind == ATL_TURN_THOUGHT) {
      json_object_array_add(parts, thought_part(&t->thoughts[o->index]));
    } else if (t->calls[o->index].name != NULL) {
      /* (A call slot without a name is an index the stream skipped.) */
      json_object_array_add(parts, call_part(&t->calls[o->index], parts));
    }
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
  if (t->stop_message_len > 0)
    json_object_object_add(
        msg, "stop_message",
        json_object_new_string_len(t->stop_message, (int)t->stop_message_len));
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
