/* Compiling a JSON Schema into the tree of nodes that schema.c validates
 * with.
 *
 * A schema is compiled once (when a plugin registers a tool) and used for
 * every call, so compiling does all the checking and parsing it can: each
 * keyword's value is checked and converted, patterns are compiled, and
 * "$ref"s are resolved to the node they point to. Nodes are shared: every
 * JSON location is compiled once (the memo below), which is also what lets
 * a "$ref" close a cycle.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atelier/error.h>

#include "schema.h"
#include "schema_int.h"

/* How deep a schema document may nest when compiled. */
#define MAX_COMPILE_DEPTH 256

const schema_type_t schema_types[SCHEMA_NTYPES] = {
    {"null", T_NULL, "null"},
    {"boolean", T_BOOLEAN, "a boolean"},
    {"object", T_OBJECT, "an object"},
    {"array", T_ARRAY, "an array"},
    {"number", T_NUMBER, "a number"},
    {"string", T_STRING, "a string"},
    {"integer", T_INTEGER, "an integer"},
};

/* ---------------------------------------------------------------------
 * Compiling
 * ------------------------------------------------------------------ */

typedef struct {
  node_t *node;
  char *path; /* of the "$ref" keyword, for error messages */
} pending_ref_t;

typedef struct {
  atl_schema_t *s;
  unsigned flags;
  const char *root_id; /* the root's "$id", or NULL */
  schema_sb_t path;    /* where in the schema we are: "#/properties/x" */
  char *err;
  int depth;
  /* The memo: JSON location -> node, open addressing on the pointer. */
  json_object **memo_keys;
  node_t **memo_vals;
  size_t memo_cap, memo_n;
  pending_ref_t *refs;
  size_t nrefs, cap_refs;
} cctx_t;

static void fail(cctx_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Records the first compile error, prefixed with the current path. */
static void fail(cctx_t *c, const char *fmt, ...) {
  if (c->err != NULL)
    return;
  schema_sb_t sb;
  schema_sb_init(&sb);
  schema_sb_puts(&sb, schema_sb_str(&c->path));
  schema_sb_puts(&sb, ": ");
  va_list ap;
  va_start(ap, fmt);
  char msg[512];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  schema_sb_puts(&sb, msg);
  c->err = schema_sb_take(&sb);
  if (c->err == NULL)
    c->err = strdup("out of memory");
}

static size_t memo_slot(const cctx_t *c, json_object *key) {
  uintptr_t h = (uintptr_t)key;
  h ^= h >> 17;
  h *= 0x9E3779B97F4A7C15u;
  size_t i = (size_t)(h >> 7) & (c->memo_cap - 1);
  while (c->memo_keys[i] != NULL && c->memo_keys[i] != key)
    i = (i + 1) & (c->memo_cap - 1);
  return i;
}

static node_t *memo_get(const cctx_t *c, json_object *key) {
  if (c->memo_cap == 0)
    return NULL;
  size_t i = memo_slot(c, key);
  return c->memo_keys[i] == key ? c->memo_vals[i] : NULL;
}

static int memo_put(cctx_t *c, json_object *key, node_t *n) {
  if ((c->memo_n + 1) * 2 > c->memo_cap) {
    size_t old_cap = c->memo_cap;
    json_object **old_keys = c->memo_keys;
    node_t **old_vals = c->memo_vals;
    size_t cap = old_cap ? old_cap * 2 : 64;
    c->memo_keys = calloc(cap, sizeof(*c->memo_keys));
    c->memo_vals = calloc(cap, sizeof(*c->memo_vals));
    if (c->memo_keys == NULL || c->memo_vals == NULL) {
      free(c->memo_keys);
      free(c->memo_vals);
      c->memo_keys = old_keys;
      c->memo_vals = old_vals;
      return ATL_ENOMEM;
    }
    c->memo_cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
      if (old_keys[i] != NULL) {
        size_t j = memo_slot(c, old_keys[i]);
        c->memo_keys[j] = old_keys[i];
        c->memo_vals[j] = old_vals[i];
      }
    }
    free(old_keys);
    free(old_vals);
  }
  size_t i = memo_slot(c, key);
  c->memo_keys[i] = key;
  c->memo_vals[i] = n;
  c->memo_n++;
  return 0;
}

static void node_free(node_t *n) {
  free(n->props);
  free(n->required);
  free(n->prefix.v);
  free(n->all_of.v);
  free(n->any_of.v);
  free(n->one_of.v);
  if (n->pattern != NULL)
    pcre2_code_free(n->pattern);
  free(n);
}

static node_t *new_node(cctx_t *c, json_object *json) {
  atl_schema_t *s = c->s;
  if (s->nnodes == s->cap_nodes) {
    size_t cap = s->cap_nodes ? s->cap_nodes * 2 : 16;
    node_t **v = realloc(s->nodes, cap * sizeof(*v));
    if (v == NULL)
      return NULL;
    s->nodes = v;
    s->cap_nodes = cap;
  }
  node_t *n = calloc(1, sizeof(*n));
  if (n == NULL)
    return NULL;
  n->json = json;
  n->boolean = -1;
  n->min_props = n->max_props = -1;
  n->min_items = n->max_items = -1;
  n->min_len = n->max_len = -1;
  s->nodes[s->nnodes++] = n;
  if (memo_put(c, json, n) != 0)
    return NULL;
  return n;
}

static node_t *compile_node(cctx_t *c, json_object *json);

/* Compiles the subschema under the pointer token key of the current path. */
static node_t *compile_sub(cctx_t *c, const char *key, json_object *json) {
  size_t len = c->path.len;
  schema_sb_put_pointer_token(&c->path, key);
  node_t *n = compile_node(c, json);
  schema_sb_truncate(&c->path, len);
  return n;
}

static node_t *compile_sub_index(cctx_t *c, size_t index, json_object *json) {
  size_t len = c->path.len;
  schema_sb_put_pointer_index(&c->path, index);
  node_t *n = compile_node(c, json);
  schema_sb_truncate(&c->path, len);
  return n;
}

/* Helpers that check one keyword's value; each returns 0 or -1 after
 * fail(). They are called with the keyword already on the path. */

static int want_count(cctx_t *c, const char *kw, json_object *v,
                      long long *out) {
  if (!schema_is_integer(v) || schema_num_value(v) < 0) {
    fail(c, "'%s' must be a non-negative integer, got %s", kw,
         schema_is_number(v) ? "a negative or fractional number"
                             : schema_kind_phrase(v));
    return -1;
  }
  long double x = schema_num_value(v);
  *out = x > (long double)LLONG_MAX / 2 ? LLONG_MAX / 2 : (long long)x;
  return 0;
}

static int want_schema_list(cctx_t *c, const char *kw, json_object *v,
                            node_list_t *out) {
  if (!json_object_is_type(v, json_type_array) ||
      json_object_array_length(v) == 0) {
    fail(c, "'%s' must be a non-empty array of schemas, got %s", kw,
         json_object_is_type(v, json_type_array) ? "an empty array"
                                                 : schema_kind_phrase(v));
    return -1;
  }
  size_t n = json_object_array_length(v);
  out->v = calloc(n, sizeof(*out->v));
  if (out->v == NULL) {
    fail(c, "out of memory");
    return -1;
  }
  out->n = n;
  for (size_t i = 0; i < n; i++) {
    out->v[i] = compile_sub_index(c, i, json_object_array_get_idx(v, i));
    if (out->v[i] == NULL)
      return -1;
  }
  return 0;
}

static int compile_type(cctx_t *c, node_t *n, json_object *v) {
  json_object *one = v;
  size_t count = 1;
  if (json_object_is_type(v, json_type_array)) {
    count = json_object_array_length(v);
    if (count == 0) {
      fail(c, "'type' must be a type name or a non-empty array of them, got "
              "an empty array");
      return -1;
    }
  }
  for (size_t i = 0; i < count; i++) {
    if (json_object_is_type(v, json_type_array))
      one = json_object_array_get_idx(v, i);
    if (!json_object_is_type(one, json_type_string)) {
      fail(c, "'type' must be a type name or an array of them, got %s",
           schema_kind_phrase(one));
      return -1;
    }
    const char *name = json_object_get_string(one);
    size_t t = 0;
    while (t < SCHEMA_NTYPES && strcmp(schema_types[t].name, name) != 0)
      t++;
    if (t == SCHEMA_NTYPES) {
      fail(c,
           "unknown type \"%.60s\" (expected string, number, integer, "
           "object, array, boolean or null)",
           name);
      return -1;
    }
    if (n->types & schema_types[t].bit) {
      fail(c, "'type' lists \"%s\" twice", name);
      return -1;
    }
    n->types |= schema_types[t].bit;
    n->type_order[n->ntypes++] = schema_types[t].bit;
  }
  return 0;
}

static int compile_properties(cctx_t *c, node_t *n, json_object *v) {
  if (!json_object_is_type(v, json_type_object)) {
    fail(c, "'properties' must be an object of schemas, got %s",
         schema_kind_phrase(v));
    return -1;
  }
  size_t count = (size_t)json_object_object_length(v);
  n->props = calloc(count ? count : 1, sizeof(*n->props));
  if (n->props == NULL) {
    fail(c, "out of memory");
    return -1;
  }
  json_object_object_foreach(v, key, sub) {
    node_t *p = compile_sub(c, key, sub);
    if (p == NULL)
      return -1;
    n->props[n->nprops].name = key;
    n->props[n->nprops].schema = p;
    n->nprops++;
  }
  return 0;
}

static int compile_required(cctx_t *c, node_t *n, json_object *v) {
  if (!json_object_is_type(v, json_type_array)) {
    fail(c, "'required' must be an array of property names, got %s",
         schema_kind_phrase(v));
    return -1;
  }
  size_t count = json_object_array_length(v);
  n->required = calloc(count ? count : 1, sizeof(*n->required));
  if (n->required == NULL) {
    fail(c, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < count; i++) {
    json_object *name = json_object_array_get_idx(v, i);
    if (!json_object_is_type(name, json_type_string)) {
      fail(c,
           "'required' must be an array of property names, got %s at "
           "index %zu",
           schema_kind_phrase(name), i);
      return -1;
    }
    n->required[n->nrequired++] = json_object_get_string(name);
  }
  return 0;
}

static int compile_defs(cctx_t *c, json_object *v) {
  if (!json_object_is_type(v, json_type_object)) {
    fail(c, "'$defs' must be an object of schemas, got %s",
         schema_kind_phrase(v));
    return -1;
  }
  json_object_object_foreach(v, key, sub) {
    if (compile_sub(c, key, sub) == NULL)
      return -1;
  }
  return 0;
}

static int compile_pattern(cctx_t *c, node_t *n, json_object *v) {
  if (!json_object_is_type(v, json_type_string)) {
    fail(c, "'pattern' must be a string, got %s", schema_kind_phrase(v));
    return -1;
  }
  /* ECMA-262 semantics where PCRE2 differs by default: "$" only matches at
   * the very end, and \u is a four-digit (or braced) code point escape. */
  pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
  if (cc == NULL) {
    fail(c, "out of memory");
    return -1;
  }
  pcre2_set_compile_extra_options(cc, PCRE2_EXTRA_ALT_BSUX);
  int code;
  PCRE2_SIZE offset;
  n->pattern_src = json_object_get_string(v);
  n->pattern = pcre2_compile(
      (PCRE2_SPTR)n->pattern_src, (PCRE2_SIZE)json_object_get_string_len(v),
      PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX, &code, &offset, cc);
  pcre2_compile_context_free(cc);
  if (n->pattern == NULL) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(code, msg, sizeof(msg));
    fail(c, "'pattern' is not a valid regular expression: %s at offset %zu",
         (const char *)msg, (size_t)offset);
    return -1;
  }
  return 0;
}

static int add_pending_ref(cctx_t *c, node_t *n) {
  if (c->nrefs == c->cap_refs) {
    size_t cap = c->cap_refs ? c->cap_refs * 2 : 8;
    pending_ref_t *v = realloc(c->refs, cap * sizeof(*v));
    if (v == NULL)
      return -1;
    c->refs = v;
    c->cap_refs = cap;
  }
  char *path = strdup(schema_sb_str(&c->path));
  if (path == NULL)
    return -1;
  c->refs[c->nrefs].node = n;
  c->refs[c->nrefs].path = path;
  c->nrefs++;
  return 0;
}

/* Keywords that carry no assertion and are accepted everywhere. */
static int is_annotation(const char *kw) {
  static const char *const names[] = {"title",     "description", "examples",
                                      "$comment",  "$schema",     "readOnly",
                                      "writeOnly", "format",      "deprecated"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (strcmp(kw, names[i]) == 0)
      return 1;
  return 0;
}

static int compile_number_kw(cctx_t *c, const char *kw, json_object *v,
                             json_object **out) {
  if (!schema_is_number(v)) {
    fail(c, "'%s' must be a number, got %s", kw, schema_kind_phrase(v));
    return -1;
  }
  *out = v;
  return 0;
}

/* Compiles one keyword of an object schema; the keyword is on the path. */
static int compile_keyword(cctx_t *c, node_t *n, const char *kw,
                           json_object *v) {
  if (strcmp(kw, "type") == 0)
    return compile_type(c, n, v);
  if (strcmp(kw, "properties") == 0)
    return compile_properties(c, n, v);
  if (strcmp(kw, "required") == 0)
    return compile_required(c, n, v);
  if (strcmp(kw, "additionalProperties") == 0)
    return (n->additional = compile_node(c, v)) ? 0 : -1;
  if (strcmp(kw, "items") == 0)
    return (n->items = compile_node(c, v)) ? 0 : -1;
  if (strcmp(kw, "not") == 0)
    return (n->not_ = compile_node(c, v)) ? 0 : -1;
  if (strcmp(kw, "if") == 0)
    return (n->if_ = compile_node(c, v)) ? 0 : -1;
  if (strcmp(kw, "then") == 0)
    return (n->then_ = compile_node(c, v)) ? 0 : -1;
  if (strcmp(kw, "else") == 0)
    return (n->else_ = compile_node(c, v)) ? 0 : -1;
  if (strcmp(kw, "prefixItems") == 0)
    return want_schema_list(c, kw, v, &n->prefix);
  if (strcmp(kw, "allOf") == 0)
    return want_schema_list(c, kw, v, &n->all_of);
  if (strcmp(kw, "anyOf") == 0)
    return want_schema_list(c, kw, v, &n->any_of);
  if (strcmp(kw, "oneOf") == 0)
    return want_schema_list(c, kw, v, &n->one_of);
  if (strcmp(kw, "minItems") == 0)
    return want_count(c, kw, v, &n->min_items);
  if (strcmp(kw, "maxItems") == 0)
    return want_count(c, kw, v, &n->max_items);
  if (strcmp(kw, "minLength") == 0)
    return want_count(c, kw, v, &n->min_len);
  if (strcmp(kw, "maxLength") == 0)
    return want_count(c, kw, v, &n->max_len);
  if (strcmp(kw, "minProperties") == 0)
    return want_count(c, kw, v, &n->min_props);
  if (strcmp(kw, "maxProperties") == 0)
    return want_count(c, kw, v, &n->max_props);
  if (strcmp(kw, "minimum") == 0)
    return compile_number_kw(c, kw, v, &n->bound[B_MIN]);
  if (strcmp(kw, "exclusiveMinimum") == 0)
    return compile_number_kw(c, kw, v, &n->bound[B_EMIN]);
  if (strcmp(kw, "maximum") == 0)
    return compile_number_kw(c, kw, v, &n->bound[B_MAX]);
  if (strcmp(kw, "exclusiveMaximum") == 0)
    return compile_number_kw(c, kw, v, &n->bound[B_EMAX]);
  if (strcmp(kw, "multipleOf") == 0) {
    if (compile_number_kw(c, kw, v, &n->multiple_of) != 0)
      return -1;
    if (!(schema_num_value(v) > 0)) {
      fail(c, "'multipleOf' must be a number > 0");
      return -1;
    }
    return 0;
  }
  if (strcmp(kw, "uniqueItems") == 0) {
    if (!json_object_is_type(v, json_type_boolean)) {
      fail(c, "'uniqueItems' must be a boolean, got %s", schema_kind_phrase(v));
      return -1;
    }
    n->unique = json_object_get_boolean(v);
    return 0;
  }
  if (strcmp(kw, "enum") == 0) {
    if (!json_object_is_type(v, json_type_array)) {
      fail(c, "'enum' must be an array, got %s", schema_kind_phrase(v));
      return -1;
    }
    n->enum_values = v;
    return 0;
  }
  if (strcmp(kw, "const") == 0) {
    n->const_value = v;
    n->has_const = 1;
    return 0;
  }
  if (strcmp(kw, "default") == 0) {
    n->default_value = v;
    n->has_default = 1;
    return 0;
  }
  if (strcmp(kw, "pattern") == 0)
    return compile_pattern(c, n, v);
  if (strcmp(kw, "$defs") == 0)
    return compile_defs(c, v);
  if (strcmp(kw, "$ref") == 0) {
    if (!json_object_is_type(v, json_type_string)) {
      fail(c, "'$ref' must be a string, got %s", schema_kind_phrase(v));
      return -1;
    }
    n->ref_text = json_object_get_string(v);
    if (add_pending_ref(c, n) != 0) {
      fail(c, "out of memory");
      return -1;
    }
    return 0;
  }
  return 1; /* not a keyword we know */
}

static node_t *compile_node(cctx_t *c, json_object *json) {
  node_t *n = memo_get(c, json);
  if (n != NULL)
    return n;
  if (c->depth >= MAX_COMPILE_DEPTH) {
    fail(c, "the schema nests deeper than %d levels", MAX_COMPILE_DEPTH);
    return NULL;
  }
  int is_bool = json_object_is_type(json, json_type_boolean);
  if (!is_bool && !json_object_is_type(json, json_type_object)) {
    fail(c, "a schema must be an object or a boolean, got %s",
         schema_kind_phrase(json));
    return NULL;
  }
  /* json-c represents null as NULL, which the memo cannot key on; it is
   * rejected above, so json is never NULL here. */
  n = new_node(c, json);
  if (n == NULL) {
    fail(c, "out of memory");
    return NULL;
  }
  if (is_bool) {
    n->boolean = json_object_get_boolean(json) ? 1 : 0;
    return n;
  }
  c->depth++;
  int is_root = c->s->root == NULL && c->path.len <= 1;
  int rc = 0;
  json_object_object_foreach(json, kw, v) {
    if (is_annotation(kw))
      continue;
    size_t len = c->path.len;
    schema_sb_put_pointer_token(&c->path, kw);
    if (strcmp(kw, "$id") == 0) {
      rc = is_root ? 0 : 1;
      if (is_root && !json_object_is_type(v, json_type_string)) {
        fail(c, "'$id' must be a string, got %s", schema_kind_phrase(v));
        rc = -1;
      }
    } else {
      rc = compile_keyword(c, n, kw, v);
    }
    schema_sb_truncate(&c->path, len);
    if (rc < 0)
      break;
    if (rc > 0) {
      rc = 0;
      if (c->flags & ATL_SCHEMA_STRICT) {
        if (strcmp(kw, "$id") == 0)
          fail(c, "unsupported keyword '$id' (allowed only at the root)");
        else
          fail(c, "unsupported keyword '%s'", kw);
        rc = -1;
        break;
      }
    }
  }
  c->depth--;
  return rc == 0 ? n : NULL;
}

static int hex_value(char ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

/* Decodes the %XX escapes of a URI fragment; returns a new string, or
 * NULL when out of memory. A '%' not followed by two hex digits is kept as
 * it is. */
static char *percent_decode(const char *s) {
  size_t n = strlen(s);
  char *out = malloc(n + 1);
  if (out == NULL)
    return NULL;
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '%' && i + 2 < n && hex_value(s[i + 1]) >= 0 &&
        hex_value(s[i + 2]) >= 0) {
      out[j++] = (char)(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out[j++] = s[i];
    }
  }
  out[j] = '\0';
  return out;
}

/* Follows a JSON pointer (already percent-decoded) from the document root.
 * Returns 0 and *out, or -1 if some token does not exist. */
static int resolve_pointer(json_object *doc, const char *ptr,
                           json_object **out) {
  json_object *cur = doc;
  const char *p = ptr;
  while (*p != '\0') {
    if (*p != '/')
      return -1;
    p++;
    const char *end = strchr(p, '/');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char *token = malloc(len + 1);
    if (token == NULL)
      return -1;
    size_t j = 0;
    for (size_t i = 0; i < len; i++) {
      if (p[i] == '~' && i + 1 < len && (p[i + 1] == '0' || p[i + 1] == '1')) {
        token[j++] = p[i + 1] == '0' ? '~' : '/';
        i++;
      } else {
        token[j++] = p[i];
      }
    }
    token[j] = '\0';
    int ok = 0;
    if (json_object_is_type(cur, json_type_object)) {
      json_object *next;
      if (json_object_object_get_ex(cur, token, &next)) {
        cur = next;
        ok = 1;
      }
    } else if (json_object_is_type(cur, json_type_array) && j > 0 &&
               strspn(token, "0123456789") == j &&
               (token[0] != '0' || j == 1) && j < 10) {
      size_t idx = (size_t)strtoul(token, NULL, 10);
      if (idx < json_object_array_length(cur)) {
        cur = json_object_array_get_idx(cur, idx);
        ok = 1;
      }
    }
    free(token);
    if (!ok)
      return -1;
    p += len;
  }
  *out = cur;
  return 0;
}

/* Resolves every "$ref" met while compiling. A target that is not itself
 * a place the walk compiled (a pointer into "properties" of a "$defs"
 * entry is, one into "enum" is not) is compiled now, which may add more
 * references to the list. */
static int resolve_refs(cctx_t *c) {
  for (size_t i = 0; i < c->nrefs; i++) {
    node_t *n = c->refs[i].node;
    const char *ref = n->ref_text;
    schema_sb_truncate(&c->path, 0);
    schema_sb_puts(&c->path, c->refs[i].path);
    /* A reference through the root's own "$id" is a local one. */
    size_t idlen = c->root_id ? strlen(c->root_id) : 0;
    if (idlen > 0 && strncmp(ref, c->root_id, idlen) == 0 &&
        (ref[idlen] == '\0' || ref[idlen] == '#'))
      ref += idlen;
    if (*ref == '\0')
      ref = "#";
    if (*ref != '#') {
      fail(c,
           "cannot resolve '$ref' \"%.100s\": only references within this "
           "schema (\"#...\") are supported",
           n->ref_text);
      return -1;
    }
    char *ptr = percent_decode(ref + 1);
    if (ptr == NULL) {
      fail(c, "out of memory");
      return -1;
    }
    json_object *target = NULL;
    int rc = ptr[0] != '\0' && ptr[0] != '/'
                 ? -2
                 : resolve_pointer(c->s->doc, ptr, &target);
    free(ptr);
    if (rc == -2) {
      fail(c,
           "cannot resolve '$ref' \"%.100s\": anchors are not supported, "
           "use a JSON pointer such as \"#/$defs/name\"",
           n->ref_text);
      return -1;
    }
    if (rc != 0) {
      fail(c, "cannot resolve '$ref' \"%.100s\": no such location",
           n->ref_text);
      return -1;
    }
    schema_sb_truncate(&c->path, 0);
    schema_sb_puts(&c->path, ref);
    n->ref = compile_node(c, target);
    if (n->ref == NULL)
      return -1;
  }
  return 0;
}

void atl_schema_free(atl_schema_t *s) {
  if (s == NULL)
    return;
  for (size_t i = 0; i < s->nnodes; i++)
    node_free(s->nodes[i]);
  free(s->nodes);
  json_object_put(s->doc);
  free(s);
}

int atl_schema_compile(json_object *schema, unsigned flags, atl_schema_t **out,
                       char **err) {
  *out = NULL;
  if (err != NULL)
    *err = NULL;
  atl_schema_t *s = calloc(1, sizeof(*s));
  if (s == NULL)
    return ATL_ENOMEM;
  s->doc = json_object_get(schema);
  cctx_t c = {.s = s, .flags = flags};
  schema_sb_init(&c.path);
  schema_sb_putc(&c.path, '#');
  json_object *id;
  if (json_object_object_get_ex(schema, "$id", &id) &&
      json_object_is_type(id, json_type_string))
    c.root_id = json_object_get_string(id);
  node_t *root = compile_node(&c, schema);
  s->root = root;
  int rc = 0;
  if (root == NULL || resolve_refs(&c) != 0)
    rc = ATL_ESCHEMA;
  if (c.path.oom && rc == 0)
    rc = ATL_ENOMEM;
  for (size_t i = 0; i < c.nrefs; i++)
    free(c.refs[i].path);
  free(c.refs);
  free(c.memo_keys);
  free(c.memo_vals);
  schema_sb_free(&c.path);
  if (rc != 0) {
    if (err != NULL) {
      *err = c.err;
      c.err = NULL;
    }
    free(c.err);
    atl_schema_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

int atl_schema_compile_text(const char *text, unsigned flags,
                            atl_schema_t **out, char **err) {
  *out = NULL;
  if (err != NULL)
    *err = NULL;
  json_tokener *tok = json_tokener_new_ex(MAX_COMPILE_DEPTH);
  if (tok == NULL)
    return ATL_ENOMEM;
  size_t len = strlen(text);
  /* The terminating NUL is passed too: it tells the tokener that a
   * top-level literal such as "true" or 12 is complete. */
  json_object *doc = json_tokener_parse_ex(tok, text, (int)len + 1);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  size_t pos = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  if (jerr == json_tokener_success) {
    /* Only white space may follow the document. */
    while (pos < len && text[pos] != '\0' && strchr(" \t\r\n", text[pos]))
      pos++;
    if (pos < len)
      jerr = json_tokener_error_parse_unexpected;
  } else if (jerr == json_tokener_continue) {
    pos = len;
  }
  if (jerr != json_tokener_success) {
    json_object_put(doc);
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < len; i++) {
      if (text[i] == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    if (err != NULL) {
      schema_sb_t sb;
      schema_sb_init(&sb);
      schema_sb_printf(
          &sb, "malformed JSON at line %zu, column %zu: %s", line, col,
          jerr == json_tokener_continue ? "unexpected end of text"
                                        : json_tokener_error_desc(jerr));
      *err = schema_sb_take(&sb);
    }
    return ATL_ESCHEMA;
  }
  int rc = atl_schema_compile(doc, flags, out, err);
  json_object_put(doc);
  return rc;
}

json_object *atl_schema_json(const atl_schema_t *s) {
  return s->doc;
}
