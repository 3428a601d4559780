/* Google's Gemini API: POST {base}/v1beta/models/{model}:
 * streamGenerateContent?alt=sse.
 *
 * Unlike scene-llm's adapter, the system prompt goes in
 * systemInstruction, the answer streams, the thought signatures Gemini
 * attaches to its parts go back where they came from (Gemini 3 refuses a
 * function-calling turn whose signature is missing), and the tools'
 * schemas are rewritten into the subset of JSON Schema that Gemini takes
 * (gemini_schema() below), since the daemon's plugins use $ref, oneOf and
 * const, which it rejects.
 */
#include "atl-build.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atelier/error.h>

#include "provider.h"

static int is_number(json_object *v) {
  return json_object_is_type(v, json_type_int) ||
         json_object_is_type(v, json_type_double);
}

/* --- The schema converter --------------------------------------------- */

/* How deep schemas may nest in the output, and how many $refs may expand
 * within one another: a recursive definition (a tree of nodes) would
 * otherwise expand forever. Gemini takes no recursion anyway, so the
 * innermost reference becomes a bare {"type": ...}. */
#define MAX_DEPTH 32
#define MAX_REF_DEPTH 8

static json_object *convert(json_object *s, json_object *root, int depth,
                            int refs);

/* The definition "#/$defs/NAME" (or "#/definitions/NAME") refers to, in
 * the root schema; NULL for any other reference, which Gemini could not
 * follow either. */
static json_object *resolve_ref(json_object *root, const char *ref) {
  const char *defs_key, *name;
  if (strncmp(ref, "#/$defs/", 8) == 0) {
    defs_key = "$defs";
    name = ref + 8;
  } else if (strncmp(ref, "#/definitions/", 14) == 0) {
    defs_key = "definitions";
    name = ref + 14;
  } else {
    return NULL;
  }
  /* A JSON pointer token: "~1" is "/" and "~0" is "~". */
  size_t n = strlen(name);
  char *key = malloc(n + 1), *k = key;
  if (key == NULL)
    return NULL;
  for (const char *p = name; *p != '\0'; p++) {
    if (*p == '/') { /* a pointer deeper than one definition */
      free(key);
      return NULL;
    }
    if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) {
      *k++ = p[1] == '1' ? '/' : '~';
      p++;
    } else {
      *k++ = *p;
    }
  }
  *k = '\0';
  json_object *defs, *target = NULL;
  if (!json_object_object_get_ex(root, defs_key, &defs) ||
      !json_object_object_get_ex(defs, key, &target))
    target = NULL;
  free(key);
  return target;
}

/* "minimum" or "maximum", from either the inclusive or the exclusive
 * keyword: Gemini has no exclusive bounds, and the nearest it can say is
 * the bound itself (the daemon still checks the arguments exactly). When
 * both come, the stricter wins. */
static void set_bound(json_object *out, const char *key, json_object *v,
                      int lower) {
  json_object *old;
  if (json_object_object_get_ex(out, key, &old)) {
    double a = json_object_get_double(old), b = json_object_get_double(v);
    if (lower ? b <= a : b >= a)
      return;
  }
  json_object_object_add(out, key, json_object_get(v));
}

/* Adds one enum value as Gemini wants it, a string. Returns the JSON type
 * name of the value, or NULL when it cannot be said (objects, arrays;
 * null becomes "nullable"). */
static const char *add_enum_value(json_object *arr, json_object *v,
                                  json_object *out) {
  switch (json_object_get_type(v)) {
  case json_type_string:
    json_object_array_add(arr, json_object_get(v));
    return "string";
  case json_type_int:
  case json_type_double:
  case json_type_boolean:
    json_object_array_add(arr,
                          json_object_new_string(json_object_get_string(v)));
    return json_object_is_type(v, json_type_int)      ? "integer"
           : json_object_is_type(v, json_type_double) ? "number"
                                                      : "boolean";
  case json_type_null:
    json_object_object_add(out, "nullable", json_object_new_boolean(1));
    return NULL;
  default:
    return NULL;
  }
}

/* "type": a list of types becomes a single type (and "nullable" when
 * "null" is one of them), or an anyOf of the types. */
static void convert_type(json_object *out, json_object *v, json_object *s) {
  if (json_object_is_type(v, json_type_string)) {
    json_object_object_add(out, "type", json_object_get(v));
    return;
  }
  if (!json_object_is_type(v, json_type_array))
    return;
  json_object *types = json_object_new_array();
  int nullable = 0;
  for (size_t i = 0; i < json_object_array_length(v); i++) {
    json_object *t = json_object_array_get_idx(v, i);
    if (!json_object_is_type(t, json_type_string))
      continue;
    if (strcmp(json_object_get_string(t), "null") == 0)
      nullable = 1;
    else
      json_object_array_add(types, json_object_get(t));
  }
  size_t n = json_object_array_length(types);
  json_object *dummy;
  if (n == 1 || (n > 1 && (json_object_object_get_ex(s, "anyOf", &dummy) ||
                           json_object_object_get_ex(s, "oneOf", &dummy)))) {
    /* With an anyOf of its own, the schema's first type stands for all. */
    json_object_object_add(
        out, "type", json_object_get(json_object_array_get_idx(types, 0)));
  } else if (n > 1) {
    json_object *any = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
      json_object *o = json_object_new_object();
      json_object_object_add(
          o, "type", json_object_get(json_object_array_get_idx(types, i)));
      json_object_array_add(any, o);
    }
    json_object_object_add(out, "anyOf", any);
  }
  if (nullable)
    json_object_object_add(out, "nullable", json_object_new_boolean(1));
  json_object_put(types);
}

/* allOf: the parts' keywords are merged into the schema, properties and
 * required lists joined, since Gemini has no allOf. */
static void merge_into(json_object *out, json_object *sub) {
  json_object_object_foreach(sub, key, v) {
    json_object *have;
    if (!json_object_object_get_ex(out, key, &have)) {
      json_object_object_add(out, key, json_object_get(v));
    } else if (strcmp(key, "properties") == 0) {
      json_object_object_foreach(v, pk, pv) {
        if (!json_object_object_get_ex(have, pk, NULL))
          json_object_object_add(have, pk, json_object_get(pv));
      }
    } else if (strcmp(key, "required") == 0) {
      for (size_t i = 0; i < json_object_array_length(v); i++)
        json_object_array_add(have,
                              json_object_get(json_object_array_get_idx(v, i)));
    }
  }
}

/* What JSON Schema leaves implied, Gemini wants said, and what JSON Schema
 * ignores, Gemini refuses: an enum needs its type (which a const implies);
 * "properties" and "required" are "only allowed for OBJECT type", "items"
 * for ARRAY, so a schema with them and no type gets that type, and one of
 * another type loses them; and every name in "required" must be one of
 * the "properties". */
static void fix_types(json_object *out, const char *enum_type) {
  json_object *type = NULL, *props = NULL, *req = NULL, *dummy;
  json_object_object_get_ex(out, "type", &type);
  json_object_object_get_ex(out, "properties", &props);
  json_object_object_get_ex(out, "required", &req);
  int any = json_object_object_get_ex(out, "anyOf", &dummy);
  int items = json_object_object_get_ex(out, "items", &dummy);
  const char *t = type ? json_object_get_string(type) : NULL;
  if (t == NULL && !any) {
    t = props || req ? "object" : items ? "array" : enum_type;
    if (t != NULL)
      json_object_object_add(out, "type", json_object_new_string(t));
  }
  if (t != NULL && strcmp(t, "object") != 0) {
    json_object_object_del(out, "properties");
    json_object_object_del(out, "required");
    props = req = NULL;
  }
  if (t != NULL && strcmp(t, "array") != 0)
    json_object_object_del(out, "items");
  if (req != NULL) {
    /* (required is a copy of our own: it may be changed in place.) */
    for (size_t i = json_object_array_length(req); i-- > 0;)
      if (props == NULL ||
          !json_object_object_get_ex(
              props, json_object_get_string(json_object_array_get_idx(req, i)),
              NULL))
        json_object_array_del_idx(req, i, 1);
    if (json_object_array_length(req) == 0)
      json_object_object_del(out, "required");
  }
}

static json_object *convert_object(json_object *s, json_object *root, int depth,
                                   int refs) {
  json_object *out = json_object_new_object();
  const char *enum_type = NULL; /* the type an enum or a const implies */
  json_object_object_foreach(s, key, v) {
    if (strcmp(key, "type") == 0) {
      convert_type(out, v, s);
    } else if (strcmp(key, "format") == 0 || strcmp(key, "description") == 0 ||
               strcmp(key, "title") == 0 || strcmp(key, "pattern") == 0) {
      if (json_object_is_type(v, json_type_string))
        json_object_object_add(out, key, json_object_get(v));
    } else if (strcmp(key, "nullable") == 0) {
      if (json_object_is_type(v, json_type_boolean))
        json_object_object_add(out, key, json_object_get(v));
    } else if (strcmp(key, "enum") == 0 || strcmp(key, "const") == 0) {
      /* Gemini's enum is a list of strings; a const is an enum of one. */
      json_object *arr = json_object_new_array();
      const char *t = NULL;
      int all_strings = 1;
      if (strcmp(key, "const") == 0) {
        t = add_enum_value(arr, v, out);
      } else if (json_object_is_type(v, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(v); i++) {
          const char *vt =
              add_enum_value(arr, json_object_array_get_idx(v, i), out);
          if (vt != NULL && strcmp(vt, "string") != 0)
            all_strings = 0;
        }
        t = all_strings ? "string" : NULL;
      }
      if (json_object_array_length(arr) > 0) {
        json_object_object_add(out, "enum", arr);
        enum_type = t;
      } else {
        json_object_put(arr);
      }
    } else if (strcmp(key, "properties") == 0) {
      if (!json_object_is_type(v, json_type_object))
        continue;
      json_object *props = json_object_new_object();
      json_object_object_foreach(v, pk, pv) {
        json_object_object_add(props, pk, convert(pv, root, depth + 1, refs));
      }
      json_object_object_add(out, key, props);
    } else if (strcmp(key, "required") == 0) {
      /* A copy, so that an allOf merged in later can add to it. */
      if (!json_object_is_type(v, json_type_array))
        continue;
      json_object *req = json_object_new_array();
      for (size_t i = 0; i < json_object_array_length(v); i++) {
        json_object *r = json_object_array_get_idx(v, i);
        if (json_object_is_type(r, json_type_string))
          json_object_array_add(req, json_object_get(r));
      }
      json_object_object_add(out, key, req);
    } else if (strcmp(key, "items") == 0) {
      /* An array of item schemas is a tuple, which Gemini cannot say. */
      if (json_object_is_type(v, json_type_object))
        json_object_object_add(out, key, convert(v, root, depth + 1, refs));
    } else if (strcmp(key, "anyOf") == 0 || strcmp(key, "oneOf") == 0) {
      /* oneOf's "exactly one" becomes "at least one": the nearest Gemini
       * can say, and the same thing for the tagged unions the plugins
       * declare, whose branches exclude each other. */
      if (!json_object_is_type(v, json_type_array))
        continue;
      json_object *any;
      if (!json_object_object_get_ex(out, "anyOf", &any)) {
        any = json_object_new_array();
        json_object_object_add(out, "anyOf", any);
      }
      for (size_t i = 0; i < json_object_array_length(v); i++)
        json_object_array_add(any, convert(json_object_array_get_idx(v, i),
                                           root, depth + 1, refs));
    } else if (strcmp(key, "minItems") == 0 || strcmp(key, "maxItems") == 0 ||
               strcmp(key, "minLength") == 0 || strcmp(key, "maxLength") == 0 ||
               strcmp(key, "minProperties") == 0 ||
               strcmp(key, "maxProperties") == 0) {
      if (is_number(v))
        json_object_object_add(out, key,
                               json_object_new_int64(json_object_get_int64(v)));
    } else if (strcmp(key, "minimum") == 0 ||
               strcmp(key, "exclusiveMinimum") == 0) {
      /* (Draft 4's boolean exclusiveMinimum is not a number: dropped.) */
      if (is_number(v))
        set_bound(out, "minimum", v, 1);
    } else if (strcmp(key, "maximum") == 0 ||
               strcmp(key, "exclusiveMaximum") == 0) {
      if (is_number(v))
        set_bound(out, "maximum", v, 0);
    }
    /* Everything else is dropped: Gemini answers 400 to a keyword it does
     * not know ($schema, $id, $defs, $comment, additionalProperties,
     * examples, uniqueItems, multipleOf, if/then/else, not,
     * prefixItems...), and "default" and "example", which it documents,
     * it ignores. */
  }
  json_object *all;
  if (json_object_object_get_ex(s, "allOf", &all) &&
      json_object_is_type(all, json_type_array))
    for (size_t i = 0; i < json_object_array_length(all); i++) {
      json_object *sub =
          convert(json_object_array_get_idx(all, i), root, depth + 1, refs);
      merge_into(out, sub);
      json_object_put(sub);
    }
  fix_types(out, enum_type);
  return out;
}

static json_object *convert(json_object *s, json_object *root, int depth,
                            int refs) {
  if (s == NULL || !json_object_is_type(s, json_type_object) ||
      depth > MAX_DEPTH)
    return json_object_new_object(); /* true, false: any value */
  const char *ref = atl_provider_str(s, "$ref");
  json_object *target = ref ? resolve_ref(root, ref) : NULL;
  if (target == NULL || !json_object_is_type(target, json_type_object))
    return convert_object(s, root, depth, refs);
  if (refs >= MAX_REF_DEPTH) {
    json_object *out = json_object_new_object(), *t;
    if (json_object_object_get_ex(target, "type", &t) &&
        json_object_is_type(t, json_type_string))
      json_object_object_add(out, "type", json_object_get(t));
    return out;
  }
  /* The definition, with the keywords beside the $ref (a description,
   * a default) taking precedence, as a schema of its own. */
  json_object *merged = json_object_new_object();
  json_object_object_foreach(target, tk, tv) {
    json_object_object_add(merged, tk, json_object_get(tv));
  }
  json_object_object_foreach(s, sk, sv) {
    if (strcmp(sk, "$ref") != 0)
      json_object_object_add(merged, sk, json_object_get(sv));
  }
  json_object *out = convert(merged, root, depth, refs + 1);
  json_object_put(merged);
  return out;
}

json_object *atl__gemini_schema(json_object *schema) {
  return convert(schema, schema, 0, 0);
}

/* --- The request ------------------------------------------------------- */

static json_object *text_part(const char *text) {
  json_object *p = json_object_new_object();
  json_object_object_add(p, "text", json_object_new_string(text));
  return p;
}

static json_object *user_parts(json_object *parts) {
  json_object *out = json_object_new_array();
  size_t n = parts ? json_object_array_length(parts) : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(parts, i);
    const char *type = atl_provider_str(p, "type"),
               *text = atl_provider_str(p, "text");
    if (type != NULL && strcmp(type, "text") == 0 && text != NULL &&
        text[0] != '\0')
      json_object_array_add(out, text_part(text));
  }
  return out;
}

static json_object *model_parts(json_object *parts) {
  json_object *out = json_object_new_array();
  json_object *last_text = NULL;
  const char *thinking_sig = NULL;
  size_t n = parts ? json_object_array_length(parts) : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(parts, i);
    const char *type = atl_provider_str(p, "type");
    if (type == NULL)
      continue;
    if (strcmp(type, "thinking") == 0) {
      /* Thought summaries are not the model's words and do not go back;
       * their signature does, below. */
      const char *sig = atl_provider_str(p, "signature");
      if (sig != NULL && sig[0] != '\0')
        thinking_sig = sig;
    } else if (strcmp(type, "text") == 0) {
      const char *text = atl_provider_str(p, "text");
      if (text != NULL && text[0] != '\0') {
        last_text = text_part(text);
        json_object_array_add(out, last_text);
      }
    } else if (strcmp(type, "tool_call") == 0) {
      json_object *args = NULL;
      json_object_object_get_ex(p, "arguments", &args);
      json_object *fc = json_object_new_object();
      json_object_object_add(
          fc, "name",
          json_object_new_string(
              atl_provider_str(p, "name") ? atl_provider_str(p, "name") : ""));
      json_object_object_add(fc, "args",
                             args != NULL &&
                                     json_object_is_type(args, json_type_object)
                                 ? json_object_get(args)
                                 : json_object_new_object());
      /* Gemini names calls only sometimes; an id it gave goes back. */
      const char *id = atl_provider_str(p, "id"),
                 *sig = atl_provider_str(p, "signature");
      if (id != NULL && id[0] != '\0')
        json_object_object_add(fc, "id", json_object_new_string(id));
      json_object *part = json_object_new_object();
      json_object_object_add(part, "functionCall", fc);
      if (sig != NULL && sig[0] != '\0')
        json_object_object_add(part, "thoughtSignature",
                               json_object_new_string(sig));
      json_object_array_add(out, part);
    }
  }
  /* A signature that came on a part without a call came on the answer's
   * text, which the turn joined into one; it goes back on that text.
   * With no text it is dropped: Gemini refuses empty text parts, and
   * checks only the signatures of calls. */
  if (thinking_sig != NULL && last_text != NULL)
    json_object_object_add(last_text, "thoughtSignature",
                           json_object_new_string(thinking_sig));
  return out;
}

static json_object *tool_parts(json_object *parts) {
  json_object *out = json_object_new_array(), *images = json_object_new_array();
  size_t n = parts ? json_object_array_length(parts) : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *p = json_object_array_get_idx(parts, i), *result = NULL;
    json_object_object_get_ex(p, "result", &result);
    json_object *fr = json_object_new_object();
    json_object_object_add(
        fr, "name",
        json_object_new_string(
            atl_provider_str(p, "name") ? atl_provider_str(p, "name") : ""));
    const char *id = atl_provider_str(p, "id");
    if (id != NULL && id[0] != '\0')
      json_object_object_add(fr, "id", json_object_new_string(id));
    /* "response" is a Struct: an envelope is an object already, anything
     * else is wrapped. */
    json_object *resp;
    if (result != NULL && json_object_is_type(result, json_type_object)) {
      resp = json_object_get(result);
    } else {
      resp = json_object_new_object();
      json_object_object_add(resp, "result", json_object_get(result));
    }
    json_object_object_add(fr, "response", resp);
    json_object *part = json_object_new_object();
    json_object_object_add(part, "functionResponse", fr);
    json_object_array_add(out, part);
    json_object *imgs;
    if (json_object_object_get_ex(p, "images", &imgs) &&
        json_object_is_type(imgs, json_type_array))
      for (size_t k = 0; k < json_object_array_length(imgs); k++) {
        json_object *im = json_object_array_get_idx(imgs, k);
        const char *mime = atl_provider_str(im, "mime"),
                   *data = atl_provider_str(im, "data");
        if (mime == NULL || data == NULL)
          continue;
        json_object *d = json_object_new_object();
        json_object_object_add(d, "mimeType", json_object_new_string(mime));
        json_object_object_add(d, "data", json_object_new_string(data));
        json_object *ip = json_object_new_object();
        json_object_object_add(ip, "inlineData", d);
        json_object_array_add(images, ip);
      }
  }
  /* The images after all the responses, which Gemini wants together. */
  for (size_t k = 0; k < json_object_array_length(images); k++)
    json_object_array_add(
        out, json_object_get(json_object_array_get_idx(images, k)));
  json_object_put(images);
  return out;
}

/* The parameters of a declaration, or NULL for a tool without any: Gemini
 * refuses an OBJECT schema with no properties ("should be non-empty for
 * OBJECT type") and wants the field left out instead. */
static json_object *parameters_of(json_object *schema) {
  if (schema == NULL)
    return NULL;
  json_object *p = atl__gemini_schema(schema), *props, *dummy;
  if (!json_object_object_get_ex(p, "anyOf", &dummy) &&
      (!json_object_object_get_ex(p, "properties", &props) ||
       json_object_object_length(props) == 0)) {
    json_object_put(p);
    return NULL;
  }
  return p;
}

/* A history message as the parts of a user or model content; a tool
 * message's function responses go in a user content, merged with the
 * user's words that follow. */
static const atl_provider_roles_t roles = {"user", "model", user_parts,
                                           model_parts, tool_parts};

static int piece(json_object *m, atl_provider_piece_t *out) {
  return atl_provider_piece_by_role(m, &roles, out);
}

/* The declarations, schemas converted: done once per daemon, since the
 * conversion (with $refs inlined) is the costliest part of a request. */
static char *tools_text(json_object *tools) {
  char *decls =
      atl_provider_tools_text(tools, parameters_of, "parameters", NULL);
  char *out = NULL;
  if (decls != NULL &&
      asprintf(&out, "[{\"functionDeclarations\":%s}]", decls) < 0)
    out = NULL;
  free(decls);
  return out;
}

static int request(const atl_provider_cfg_t *cfg, const char *model,
                   const char *system, const char *messages, const char *tools,
                   atl_provider_req_t *out) {
  memset(out, 0, sizeof(*out));
  atl_strbuf_t b = {0};
  atl_provider_body_reserve(&b, system, messages, tools);
  atl_sb_adds(&b, "{");
  if (system != NULL) {
    atl_sb_adds(&b, "\"systemInstruction\":{\"parts\":[{\"text\":");
    atl_sb_json_string(&b, system);
    atl_sb_adds(&b, "}]},");
  }
  atl_sb_adds(&b, "\"contents\":[");
  atl_sb_adds(&b, messages);
  atl_sb_adds(&b, "]");
  if (tools != NULL) {
    atl_sb_adds(&b, ",\"tools\":");
    atl_sb_adds(&b, tools);
  }
  if (cfg->max_tokens > 0) {
    char num[64];
    snprintf(num, sizeof(num), ",\"generationConfig\":{\"maxOutputTokens\":%u}",
             cfg->max_tokens);
    atl_sb_adds(&b, num);
  }
  atl_sb_adds(&b, "}");
  if (asprintf(&out->url, "%s/v1beta/models/%s:streamGenerateContent?alt=sse",
               cfg->base_url, model) < 0)
    out->url = NULL;
  return atl_provider_req_finish(out, &b, NULL,
                                 "x-goog-api-key: ", cfg->api_key);
}

/* --- The stream -------------------------------------------------------- */

static int add_part(atl_turn_t *t, json_object *part) {
  json_object *fc, *v;
  const char *sig = atl_provider_str(part, "thoughtSignature");
  if (json_object_object_get_ex(part, "functionCall", &fc) &&
      json_object_is_type(fc, json_type_object)) {
    /* Each call comes whole, in a part of its own: a new slot. */
    size_t i = t->n_calls;
    atl_turn_call_t *c = atl_turn_call(t, i);
    if (c == NULL)
      return atl_turn_fail(t, "too many tool calls");
    const char *name = atl_provider_str(fc, "name"),
               *id = atl_provider_str(fc, "id");
    c->name = strdup(name ? name : "");
    if (id != NULL)
      c->id = strdup(id);
    if (sig != NULL)
      c->signature = strdup(sig);
    if (c->name == NULL || (id != NULL && c->id == NULL) ||
        (sig != NULL && c->signature == NULL))
      return ATL_ENOMEM;
    json_object *args;
    if (json_object_object_get_ex(fc, "args", &args) && args != NULL) {
      char *a = atl_provider_json_text(args);
      int rc = a ? atl_turn_call_args(c, a, strlen(a)) : ATL_ENOMEM;
      free(a);
      return rc;
    }
    return 0;
  }
  if (sig != NULL) {
    /* A signature on a part that is no call belongs to the turn's
     * reasoning (see model_parts); the newest one stands. */
    atl_turn_thought_t *th = atl_turn_thought(t, 0);
    if (th == NULL || atl_turn_thought_sign(th, sig, strlen(sig), 0) != 0)
      return ATL_ENOMEM;
  }
  if (json_object_object_get_ex(part, "text", &v) &&
      json_object_is_type(v, json_type_string)) {
    json_object *thought;
    int is_thought = json_object_object_get_ex(part, "thought", &thought) &&
                     json_object_get_boolean(thought);
    size_t len = (size_t)json_object_get_string_len(v);
    return is_thought ? atl_turn_thinking(t, json_object_get_string(v), len)
                      : atl_turn_text(t, json_object_get_string(v), len);
  }
  return 0; /* executable code, inline data and the like: not for us */
}

/* "data: {GenerateContentResponse}" events. The stream has no final
 * marker: the chunk whose candidate has a finishReason is the last. */
static int event(atl_turn_t *t, const char *name, const char *data,
                 size_t len) {
  (void)name;
  json_object *chunk = atl_provider_parse_len(data, len);
  if (chunk == NULL || !json_object_is_type(chunk, json_type_object)) {
    json_object_put(chunk);
    return atl_turn_fail(t, "the stream sent malformed JSON: %.200s", data);
  }
  int rc = 0;
  json_object *err, *o, *v;
  if (json_object_object_get_ex(chunk, "error", &err)) {
    const char *msg = json_object_is_type(err, json_type_object)
                          ? atl_provider_str(err, "message")
                          : NULL;
    const char *status = msg ? atl_provider_str(err, "status") : NULL;
    if (status != NULL)
      rc = atl_turn_fail(t, "the provider reported an error: %s (%s)", msg,
                         status);
    else
      rc = atl_turn_fail(t, "the provider reported an error: %s",
                         msg ? msg : json_object_to_json_string(err));
    json_object_put(chunk);
    return rc;
  }
  if (json_object_object_get_ex(chunk, "usageMetadata", &o) &&
      json_object_is_type(o, json_type_object)) {
    if (json_object_object_get_ex(o, "promptTokenCount", &v))
      t->input_tokens = json_object_get_int64(v);
    if (json_object_object_get_ex(o, "candidatesTokenCount", &v))
      t->output_tokens = json_object_get_int64(v);
  }
  json_object *cands, *cand = NULL;
  if (json_object_object_get_ex(chunk, "candidates", &cands) &&
      json_object_is_type(cands, json_type_array) &&
      json_object_array_length(cands) > 0)
    cand = json_object_array_get_idx(cands, 0);
  if (cand != NULL && json_object_is_type(cand, json_type_object)) {
    json_object *content, *parts;
    if (json_object_object_get_ex(cand, "content", &content) &&
        json_object_object_get_ex(content, "parts", &parts) &&
        json_object_is_type(parts, json_type_array))
      for (size_t i = 0; rc == 0 && i < json_object_array_length(parts); i++)
        rc = add_part(t, json_object_array_get_idx(parts, i));
    const char *finish = atl_provider_str(cand, "finishReason");
    if (rc == 0 && finish != NULL) {
      free(t->stop_reason);
      t->stop_reason = strdup(finish);
      t->done = 1;
    }
  } else if (json_object_object_get_ex(chunk, "promptFeedback", &o)) {
    /* A refused prompt gets no candidate at all, and no finishReason to
     * end the stream: it ends here. */
    const char *reason = atl_provider_str(o, "blockReason");
    if (reason != NULL)
      rc = atl_turn_fail(t, "the provider blocked the prompt: %s", reason);
  }
  json_object_put(chunk);
  return rc;
}

static char *error_message(const char *body, size_t len) {
  json_object *o = atl_provider_parse_len(body, len), *first = o, *err;
  char *out = NULL;
  /* Without alt=sse errors come in an array, as the chunks would. */
  if (o != NULL && json_object_is_type(o, json_type_array))
    first = json_object_array_get_idx(o, 0);
  if (first != NULL && json_object_is_type(first, json_type_object) &&
      json_object_object_get_ex(first, "error", &err) &&
      json_object_is_type(err, json_type_object)) {
    const char *m = atl_provider_str(err, "message"),
               *status = atl_provider_str(err, "status");
    if (m != NULL && status != NULL) {
      if (asprintf(&out, "%s (%s)", m, status) < 0)
        out = NULL;
    } else if (m != NULL) {
      out = strdup(m);
    }
  }
  json_object_put(o);
  return out;
}

const atl_provider_ops_t atl_provider_gemini = {
    .type = "gemini",
    .merge_key = "parts",
    .piece = piece,
    .tools_text = tools_text,
    .request = request,
    .event = event,
    .error_message = error_message,
    .turn_free = NULL,
};
