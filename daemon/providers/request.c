/* A model call's request, assembled from text.
 *
 * Each turn sends the whole history and every tool's definition again;
 * only the last message or two are new. The providers therefore render
 * each history message into its wire form once (a piece), the tools once
 * per daemon, and the request is the concatenation of those texts: a turn
 * costs the new messages plus a copy, not a rebuild of the whole
 * conversation as a json-c tree (which was 77 % of the loop thread's time
 * under bench/agent, and grew with every message).
 */
#include "atl-build.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atelier/error.h>

#include "provider.h"

int atl_sb_reserve(atl_strbuf_t *b, size_t n) {
  if (b->oom)
    return ATL_ENOMEM;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
      b->oom = 1;
      return ATL_ENOMEM;
    }
    b->p = p;
    b->cap = cap;
    b->p[b->len] = '\0';
  }
  return 0;
}

int atl_sb_add(atl_strbuf_t *b, const char *s, size_t n) {
  if (atl_sb_reserve(b, n) != 0)
    return ATL_ENOMEM;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
  return 0;
}

int atl_sb_adds(atl_strbuf_t *b, const char *s) {
  return atl_sb_add(b, s, strlen(s));
}

int atl_sb_json_string(atl_strbuf_t *b, const char *s) {
  json_object *o = json_object_new_string(s);
  if (o == NULL) {
    b->oom = 1;
    return ATL_ENOMEM;
  }
  int rc = atl_sb_adds(
      b, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                               JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(o);
  return rc;
}

char *atl_sb_take(atl_strbuf_t *b) {
  if (b->oom) {
    free(b->p);
    memset(b, 0, sizeof(*b));
    return NULL;
  }
  char *p = b->p ? b->p : strdup("");
  memset(b, 0, sizeof(*b));
  return p;
}

void atl_provider_piece_free(atl_provider_piece_t *p) {
  free(p->text);
  memset(p, 0, sizeof(*p));
}

int atl_provider_piece_of(const char *role, json_object *items,
                          atl_provider_piece_t *out) {
  memset(out, 0, sizeof(*out));
  out->role = role;
  if (items == NULL)
    return ATL_ENOMEM;
  const char *t = json_object_to_json_string_ext(
      items, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  size_t n = t ? strlen(t) : 0;
  /* "[a,b]" without its brackets: pieces are spliced into arrays. */
  if (n < 2) {
    json_object_put(items);
    return ATL_ENOMEM;
  }
  out->text = strndup(t + 1, n - 2);
  out->len = n - 2;
  json_object_put(items);
  return out->text ? 0 : ATL_ENOMEM;
}

int atl_provider_piece_by_role(json_object *m, const atl_provider_roles_t *r,
                               atl_provider_piece_t *out) {
  json_object *parts = NULL;
  const char *role = atl_provider_str(m, "role");
  json_object_object_get_ex(m, "parts", &parts);
  if (parts != NULL && !json_object_is_type(parts, json_type_array))
    parts = NULL;
  memset(out, 0, sizeof(*out));
  if (role == NULL)
    return 0;
  if (strcmp(role, "user") == 0)
    return atl_provider_piece_of(r->user, r->user_items(parts, m), out);
  if (strcmp(role, "model") == 0)
    return atl_provider_piece_of(r->model, r->model_items(parts, m), out);
  if (strcmp(role, "tool") == 0)
    return atl_provider_piece_of(r->user, r->tool_items(parts, m), out);
  return 0;
}

int atl_provider_same(json_object *msg, const char *type) {
  const char *p = atl_provider_str(msg, "provider");
  return p != NULL && type != NULL && strcmp(p, type) == 0;
}

/* The code point at s (n bytes left), and its length in *len; an invalid
 * byte is itself, length 1. */
static uint32_t utf8_at(const unsigned char *s, size_t n, size_t *len) {
  uint32_t c = s[0];
  size_t k = c < 0x80         ? 1
             : (c >> 5) == 6  ? 2
             : (c >> 4) == 14 ? 3
             : (c >> 3) == 30 ? 4
                              : 1;
  if (k == 1 || k > n) {
    *len = 1;
    return c;
  }
  c &= 0x7Fu >> k;
  for (size_t i = 1; i < k; i++) {
    if ((s[i] & 0xC0) != 0x80) {
      *len = 1;
      return s[0];
    }
    c = (c << 6) | (s[i] & 0x3Fu);
  }
  *len = k;
  return c;
}

/* Unicode's White_Space, and the separators Python's str.isspace adds
 * (0x1C-0x1F): what a server that strips text strips. */
static int unicode_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 ||
         c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

int atl_provider_blank_n(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0, len; i < n; i += len)
    if (!unicode_space(utf8_at(u + i, n - i, &len)))
      return 0;
  return 1;
}

int atl_provider_blank(const char *text) {
  return text == NULL || atl_provider_blank_n(text, strlen(text));
}

size_t atl_provider_claim_ids(json_object *msg, size_t index, json_object *seen,
                              json_object *next) {
  json_object *parts, *nparts = NULL;
  size_t changed = 0, k = 0;
  if (!json_object_object_get_ex(msg, "parts", &parts) ||
      !json_object_is_type(parts, json_type_array))
    return 0;
  const char *nrole = atl_provider_str(next, "role");
  if (nrole != NULL && strcmp(nrole, "tool") == 0)
    json_object_object_get_ex(next, "parts", &nparts);
  for (size_t i = 0; i < json_object_array_length(parts); i++) {
    json_object *p = json_object_array_get_idx(parts, i);
    const char *type = atl_provider_str(p, "type");
    if (type == NULL || strcmp(type, "tool_call") != 0)
      continue;
    const char *id = atl_provider_str(p, "id");
    if (id == NULL || id[0] == '\0' ||
        json_object_object_get_ex(seen, id, NULL)) {
      char made[64];
      snprintf(made, sizeof(made), "atl_h%zu_%zu", index, k);
      for (int n = 2; json_object_object_get_ex(seen, made, NULL); n++)
        snprintf(made, sizeof(made), "atl_h%zu_%zu_%d", index, k, n);
      /* Its result is the one at the same place in the next message. */
      json_object *r = json_object_array_get_idx(nparts, k);
      const char *rid = atl_provider_str(r, "id");
      if (r != NULL && (rid == NULL || strcmp(rid, id ? id : "") == 0)) {
        json_object_object_add(r, "id", json_object_new_string(made));
        json_object_object_add(r, "made_id", json_object_new_boolean(1));
      }
      json_object_object_add(p, "id", json_object_new_string(made));
      json_object_object_add(p, "made_id", json_object_new_boolean(1));
      changed++;
    }
    json_object_object_add(seen, atl_provider_str(p, "id"), NULL);
    k++;
  }
  return changed;
}

const char *atl_provider_call_id(json_object *part, size_t ordinal,
                                 char buf[48]) {
  const char *id = atl_provider_str(part, "id");
  size_t n = id ? strlen(id) : 0;
  int ok = n > 0 && n <= 40;
  for (size_t i = 0; ok && i < n; i++)
    ok = isalnum((unsigned char)id[i]) || id[i] == '_' || id[i] == '-';
  if (ok)
    return id;
  if (n == 0) {
    snprintf(buf, 48, "atl_call_%zu", ordinal);
    return buf;
  }
  /* FNV-1a: the same id always makes the same one. */
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)id[i]) * 1099511628211ull;
  snprintf(buf, 48, "atl_%016llx", (unsigned long long)h);
  return buf;
}

json_object *atl_provider_wire(json_object *schema, atl_wire_t w) {
  char *why = NULL;
  json_object *out = schema ? atl_wire_schema(schema, w, &why) : NULL;
  free(why);
  if (out == NULL) {
    out = json_object_new_object();
    json_object_object_add(out, "type", json_object_new_string("object"));
  }
  return out;
}

char *atl_provider_tools_text(json_object *tools,
                              json_object *(*one)(json_object *schema),
                              const char *schema_key,
                              json_object *(*wrap)(json_object *decl)) {
  json_object *ts = json_object_new_array();
  size_t nt = json_object_array_length(tools);
  for (size_t i = 0; i < nt; i++) {
    json_object *t = json_object_array_get_idx(tools, i), *schema = NULL;
    json_object_object_get_ex(t, "input_schema", &schema);
    const char *name = atl_provider_str(t, "name"),
               *desc = atl_provider_str(t, "description");
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(name ? name : ""));
    if (desc != NULL)
      json_object_object_add(o, "description", json_object_new_string(desc));
    json_object *params = one(schema);
    if (params != NULL)
      json_object_object_add(o, schema_key, params);
    json_object_array_add(ts, wrap ? wrap(o) : o);
  }
  char *out = atl_provider_json_text(ts);
  json_object_put(ts);
  return out;
}

int atl_provider_join(const atl_provider_ops_t *ops,
                      const atl_provider_piece_t *pieces, size_t n,
                      atl_strbuf_t *out) {
  const char *open_role = NULL; /* the message left open, if any */
  int first = 1;
  /* One allocation for the whole list: a request is tens of kilobytes,
   * and growing it step by step copied it several times per turn. */
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    total += pieces[i].len + 32;
  atl_sb_reserve(out, total);
  for (size_t i = 0; i < n; i++) {
    const atl_provider_piece_t *p = &pieces[i];
    if (p->len == 0)
      continue;
    if (p->role != NULL && open_role != NULL &&
        strcmp(p->role, open_role) == 0) {
      /* The same role again: its items join the open message, so that
       * roles alternate as the APIs want. */
      atl_sb_add(out, ",", 1);
      atl_sb_add(out, p->text, p->len);
      continue;
    }
    if (open_role != NULL)
      atl_sb_add(out, "]}", 2);
    if (!first)
      atl_sb_add(out, ",", 1);
    first = 0;
    if (p->role != NULL) {
      atl_sb_adds(out, "{\"role\":\"");
      atl_sb_adds(out, p->role);
      atl_sb_adds(out, "\",\"");
      atl_sb_adds(out, ops->merge_key);
      atl_sb_adds(out, "\":[");
    }
    atl_sb_add(out, p->text, p->len);
    open_role = p->role;
  }
  if (open_role != NULL)
    atl_sb_add(out, "]}", 2);
  return out->oom ? ATL_ENOMEM : 0;
}

int atl_provider_build(const atl_provider_ops_t *ops,
                       const atl_provider_cfg_t *cfg, const char *model,
                       const char *system, json_object *history,
                       json_object *tools, atl_provider_req_t *out) {
  memset(out, 0, sizeof(*out));
  size_t n = history ? json_object_array_length(history) : 0;
  atl_provider_piece_t *pieces = calloc(n ? n : 1, sizeof(*pieces));
  if (pieces == NULL)
    return ATL_ENOMEM;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = ops->piece(json_object_array_get_idx(history, i), &pieces[i]);
  atl_strbuf_t msgs = {0};
  if (rc == 0)
    rc = atl_provider_join(ops, pieces, n, &msgs);
  for (size_t i = 0; i < n; i++)
    atl_provider_piece_free(&pieces[i]);
  free(pieces);
  char *tools_text = NULL;
  if (rc == 0 && tools != NULL && json_object_array_length(tools) > 0) {
    tools_text = ops->tools_text(tools);
    if (tools_text == NULL)
      rc = ATL_ENOMEM;
  }
  char *m = atl_sb_take(&msgs);
  if (rc == 0 && m == NULL)
    rc = ATL_ENOMEM;
  if (rc == 0)
    rc = ops->request(cfg, model, system, m, tools_text, out);
  free(m);
  free(tools_text);
  return rc;
}

void atl_provider_body_reserve(atl_strbuf_t *b, const char *system,
                               const char *messages, const char *tools) {
  /* A JSON string may escape its text, which rarely adds much; an
   * underestimate only costs a reallocation. */
  size_t n = 512 + strlen(messages) + (tools ? strlen(tools) : 0) +
             (system ? strlen(system) + strlen(system) / 8 : 0);
  atl_sb_reserve(b, n);
}

int atl_provider_req_finish(atl_provider_req_t *out, atl_strbuf_t *body,
                            const char *const *extra, const char *key_prefix,
                            const char *api_key) {
  size_t h = 0;
  out->headers[h++] = strdup("Content-Type: application/json");
  out->headers[h++] = strdup("Accept: text/event-stream");
  /* Up to 4 more, leaving room for the key and the list's NULL. */
  for (size_t i = 0; extra != NULL && extra[i] != NULL && i < 4; i++)
    out->headers[h++] = strdup(extra[i]);
  int bad = 0;
  for (size_t i = 0; i < h; i++)
    bad |= out->headers[i] == NULL;
  /* Local servers (Ollama, llama.cpp) take no key. */
  if (api_key != NULL && api_key[0] != '\0' &&
      asprintf(&out->headers[h], "%s%s", key_prefix, api_key) < 0) {
    out->headers[h] = NULL;
    bad = 1;
  }
  out->body = atl_sb_take(body);
  if (bad || out->body == NULL || out->url == NULL) {
    atl_provider_req_free(out);
    return ATL_ENOMEM;
  }
  return 0;
}
