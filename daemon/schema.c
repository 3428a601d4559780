/* The JSON Schema validator: compiling a schema into a tree of nodes, and
 * validating instances against it.
 *
 * A schema is compiled once (when a plugin registers a tool) and used for
 * every call, so compiling does all the checking and parsing it can: each
 * keyword's value is checked and converted, patterns are compiled, and
 * "$ref"s are resolved to the node they point to. Validation then only
 * walks nodes. Nodes are shared: every JSON location is compiled once (the
 * memo below), which is also what lets a "$ref" close a cycle.
 *
 * The message texts are built here; the helpers they are made of are in
 * schema_msg.c.
 */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <pcre2.h>

#include <atelier/error.h>

#include "schema.h"
#include "schema_int.h"

/* How deep validation may recurse (subschemas and "$ref"s). A "$ref"
 * cycle that does not consume the instance would otherwise recurse
 * forever; no reasonable tool schema comes close. */
#define MAX_DEPTH 64
/* How deep a schema document may nest when compiled. */
#define MAX_COMPILE_DEPTH 256
/* How many property names an "unexpected property" message lists. */
#define MAX_LISTED 20

enum {
  T_NULL = 1u << 0,
  T_BOOLEAN = 1u << 1,
  T_OBJECT = 1u << 2,
  T_ARRAY = 1u << 3,
  T_NUMBER = 1u << 4,
  T_STRING = 1u << 5,
  T_INTEGER = 1u << 6
};

static const struct {
  const char *name;
  unsigned bit;
  const char *phrase;
} type_names[] = {
    {"null", T_NULL, "null"},
    {"boolean", T_BOOLEAN, "a boolean"},
    {"object", T_OBJECT, "an object"},
    {"array", T_ARRAY, "an array"},
    {"number", T_NUMBER, "a number"},
    {"string", T_STRING, "a string"},
    {"integer", T_INTEGER, "an integer"},
};
#define NTYPES (sizeof(type_names) / sizeof(type_names[0]))

/* Bounds of a number, indexes into node.bound. */
enum { B_MIN, B_EMIN, B_MAX, B_EMAX, NBOUNDS };
static const char *const bound_ops[NBOUNDS] = {">=", ">", "<=", "<"};

typedef struct node node_t;

typedef struct {
  const char *name; /* borrowed from the schema document */
  node_t *schema;
} prop_t;

typedef struct {
  node_t **v;
  size_t n;
} node_list_t;

struct node {
  json_object *json;
  int boolean; /* -1: an object schema; 0 or 1: the schema false or true */
  unsigned types;
  unsigned type_order[NTYPES]; /* the type bits as the schema lists them */
  size_t ntypes;

  prop_t *props;
  size_t nprops;
  const char **required;
  size_t nrequired;
  node_t *additional;
  long long min_props, max_props; /* -1: absent */

  node_list_t prefix;
  node_t *items;
  long long min_items, max_items;
  int unique;

  json_object *enum_values; /* an array, or NULL */
  json_object *const_value;
  int has_const;

  json_object *bound[NBOUNDS]; /* numbers, or NULL */
  json_object *multiple_of;

  long long min_len, max_len;
  pcre2_code *pattern;
  const char *pattern_src;

  node_list_t all_of, any_of, one_of;
  node_t *not_, *if_, *then_, *else_;

  node_t *ref;
  const char *ref_text;
  json_object *default_value;
  int has_default;
};

struct atl_schema_s {
  json_object *doc;
  node_t *root;
  node_t **nodes; /* every node, for freeing */
  size_t nnodes, cap_nodes;
};

/* ---------------------------------------------------------------------
 * Numbers and equality
 * ------------------------------------------------------------------ */

static int is_number(json_object *v) {
  json_type t = json_object_get_type(v);
  return t == json_type_int || t == json_type_double;
}

/* A JSON number as a long double, which holds every int64, uint64 and
 * double exactly on the platforms we build for, so that comparing 1 with
 * 1.0 or 2^63 with a double needs no special cases. */
static long double num_value(json_object *v) {
  if (json_object_is_type(v, json_type_int)) {
    int64_t i = json_object_get_int64(v);
    if (i == INT64_MAX)
      return (long double)json_object_get_uint64(v);
    return (long double)i;
  }
  return (long double)json_object_get_double(v);
}

/* Compares two numbers: -1, 0 or 1 (and 2 if either is NaN). Two integers
 * are compared as integers, which is exact even where long double is no
 * wider than double (as under valgrind). */
static int num_cmp(json_object *a, json_object *b) {
  if (json_object_is_type(a, json_type_int) &&
      json_object_is_type(b, json_type_int)) {
    int64_t x = json_object_get_int64(a), y = json_object_get_int64(b);
    if (x == INT64_MAX && y == INT64_MAX) {
      uint64_t ux = json_object_get_uint64(a), uy = json_object_get_uint64(b);
      return (ux > uy) - (ux < uy);
    }
    return (x > y) - (x < y);
  }
  long double x = num_value(a), y = num_value(b);
  if (x < y)
    return -1;
  if (x > y)
    return 1;
  return x == y ? 0 : 2;
}

static int is_integer_value(json_object *v) {
  if (json_object_is_type(v, json_type_int))
    return 1;
  if (!json_object_is_type(v, json_type_double))
    return 0;
  double d = json_object_get_double(v);
  return isfinite(d) && floor(d) == d;
}

/* Deep JSON equality: numbers by value (1 equals 1.0), objects regardless
 * of key order. Values nested deeper than the limit compare unequal, which
 * keeps hostile inputs from exhausting the stack. */
static int json_equal(json_object *a, json_object *b, int depth) {
  if (depth > 512)
    return 0;
  if (is_number(a) && is_number(b))
    return num_cmp(a, b) == 0;
  json_type t = json_object_get_type(a);
  if (t != json_object_get_type(b))
    return 0;
  switch (t) {
  case json_type_null:
    return 1;
  case json_type_boolean:
    return !json_object_get_boolean(a) == !json_object_get_boolean(b);
  case json_type_string: {
    int la = json_object_get_string_len(a);
    return la == json_object_get_string_len(b) &&
           memcmp(json_object_get_string(a), json_object_get_string(b),
                  (size_t)la) == 0;
  }
  case json_type_array: {
    size_t n = json_object_array_length(a);
    if (n != json_object_array_length(b))
      return 0;
    for (size_t i = 0; i < n; i++)
      if (!json_equal(json_object_array_get_idx(a, i),
                      json_object_array_get_idx(b, i), depth + 1))
        return 0;
    return 1;
  }
  case json_type_object: {
    if (json_object_object_length(a) != json_object_object_length(b))
      return 0;
    json_object_object_foreach(a, key, va) {
      json_object *vb;
      if (!json_object_object_get_ex(b, key, &vb) ||
          !json_equal(va, vb, depth + 1))
        return 0;
    }
    return 1;
  }
  default:
    return 0;
  }
}

/* A hash that agrees with json_equal (equal values hash alike), so that
 * uniqueItems can sort instead of comparing every pair. */
static uint64_t json_hash(json_object *v, int depth) {
  uint64_t h = 1469598103934665603u;
  if (depth > 512)
    return h;
  switch (json_object_get_type(v)) {
  case json_type_null:
    return 1;
  case json_type_boolean:
    return json_object_get_boolean(v) ? 2 : 3;
  case json_type_int:
  case json_type_double: {
    long double x = num_value(v);
    if (x == 0)
      return 4; /* 0 and -0 are equal */
    double d = (double)x;
    uint64_t bits;
    memcpy(&bits, &d, sizeof(bits));
    return bits * 0x9E3779B97F4A7C15u;
  }
  case json_type_string: {
    const unsigned char *s = (const unsigned char *)json_object_get_string(v);
    int n = json_object_get_string_len(v);
    for (int i = 0; i < n; i++)
      h = (h ^ s[i]) * 1099511628211u;
    return h;
  }
  case json_type_array: {
    size_t n = json_object_array_length(v);
    h ^= 0x5555;
    for (size_t i = 0; i < n; i++)
      h = (h ^ json_hash(json_object_array_get_idx(v, i), depth + 1)) *
          1099511628211u;
    return h;
  }
  case json_type_object: {
    /* Members combined with a sum, which does not depend on their order. */
    uint64_t sum = 0x7777;
    json_object_object_foreach(v, key, val) {
      uint64_t k = 1469598103934665603u;
      for (const char *p = key; *p != '\0'; p++)
        k = (k ^ (unsigned char)*p) * 1099511628211u;
      sum += (k ^ json_hash(val, depth + 1)) * 0x9E3779B97F4A7C15u;
    }
    return sum;
  }
  }
  return h;
}

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
  if (!is_integer_value(v) || num_value(v) < 0) {
    fail(c, "'%s' must be a non-negative integer, got %s", kw,
         is_number(v) ? "a negative or fractional number"
                      : schema_kind_phrase(v));
    return -1;
  }
  long double x = num_value(v);
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
    while (t < NTYPES && strcmp(type_names[t].name, name) != 0)
      t++;
    if (t == NTYPES) {
      fail(c,
           "unknown type \"%.60s\" (expected string, number, integer, "
           "object, array, boolean or null)",
           name);
      return -1;
    }
    if (n->types & type_names[t].bit) {
      fail(c, "'type' lists \"%s\" twice", name);
      return -1;
    }
    n->types |= type_names[t].bit;
    n->type_order[n->ntypes++] = type_names[t].bit;
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
  if (!is_number(v)) {
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
    if (!(num_value(v) > 0)) {
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

/* ---------------------------------------------------------------------
 * Validating
 * ------------------------------------------------------------------ */

/* Where problems go: a JSON array of messages, or nowhere (quiet mode,
 * used to try alternatives), in which case validation stops at the first
 * problem since only whether there is one matters. */
typedef struct {
  json_object *msgs;
  int count;
} sink_t;

typedef struct {
  schema_sb_t path; /* JSON pointer of the instance value being checked */
  int oom;
} vctx_t;

static void validate(vctx_t *v, sink_t *k, const node_t *n, json_object *inst,
                     int depth);

static int quiet_done(const sink_t *k) {
  return k->msgs == NULL && k->count > 0;
}

/* Counts a problem and, unless the sink is quiet, starts its message with
 * the instance pointer. Returns 1 if the caller should write the rest. */
static int begin(vctx_t *v, sink_t *k, schema_sb_t *sb) {
  k->count++;
  if (k->msgs == NULL)
    return 0;
  schema_sb_init(sb);
  schema_sb_puts(sb, v->path.len ? schema_sb_str(&v->path) : "(root)");
  schema_sb_puts(sb, ": ");
  return 1;
}

static void finish(vctx_t *v, sink_t *k, schema_sb_t *sb) {
  char *msg = schema_sb_take(sb);
  json_object *str = msg ? json_object_new_string(msg) : NULL;
  free(msg);
  if (str == NULL || json_object_array_add(k->msgs, str) != 0) {
    json_object_put(str);
    v->oom = 1;
  }
}

/* Moves the messages of one sink into another. */
static void merge(vctx_t *v, sink_t *into, sink_t *from) {
  into->count += from->count;
  if (into->msgs == NULL || from->msgs == NULL)
    return;
  size_t n = json_object_array_length(from->msgs);
  for (size_t i = 0; i < n; i++) {
    json_object *m = json_object_get(json_object_array_get_idx(from->msgs, i));
    if (json_object_array_add(into->msgs, m) != 0) {
      json_object_put(m);
      v->oom = 1;
    }
  }
}

static unsigned type_bits(json_object *inst) {
  switch (json_object_get_type(inst)) {
  case json_type_null:
    return T_NULL;
  case json_type_boolean:
    return T_BOOLEAN;
  case json_type_object:
    return T_OBJECT;
  case json_type_array:
    return T_ARRAY;
  case json_type_string:
    return T_STRING;
  case json_type_int:
  case json_type_double:
    return T_NUMBER | (is_integer_value(inst) ? T_INTEGER : 0);
  }
  return 0;
}

static const char *type_phrase(unsigned bit) {
  for (size_t i = 0; i < NTYPES; i++)
    if (type_names[i].bit == bit)
      return type_names[i].phrase;
  return "a value";
}

static void check_type(vctx_t *v, sink_t *k, const node_t *n,
                       json_object *inst) {
  if (n->types == 0 || (type_bits(inst) & n->types))
    return;
  schema_sb_t sb;
  if (!begin(v, k, &sb))
    return;
  schema_sb_puts(&sb, "expected ");
  for (size_t i = 0; i < n->ntypes; i++) {
    if (i > 0)
      schema_sb_puts(&sb, i + 1 == n->ntypes ? " or " : ", ");
    schema_sb_puts(&sb, type_phrase(n->type_order[i]));
  }
  schema_sb_puts(&sb, ", got ");
  schema_sb_describe(&sb, inst);
  finish(v, k, &sb);
}

/* The closest of a list of strings to s within edit distance 2, or NULL.
 * A candidate must share something with s beyond the edits, so that "x"
 * is not offered for "y". */
static const char *closest(const char *s, const char *const *names,
                           size_t count) {
  const char *best = NULL;
  size_t best_d = 3;
  for (size_t i = 0; i < count; i++) {
    size_t d = schema_edit_distance(s, names[i], 2);
    if (d < best_d && d < strlen(names[i]) && d < strlen(s)) {
      best = names[i];
      best_d = d;
    }
  }
  return best;
}

static void check_enum(vctx_t *v, sink_t *k, const node_t *n,
                       json_object *inst) {
  if (n->has_const && !json_equal(inst, n->const_value, 0)) {
    schema_sb_t sb;
    if (begin(v, k, &sb)) {
      schema_sb_puts(&sb, "expected ");
      schema_sb_put_expected(&sb, n->const_value);
      schema_sb_puts(&sb, ", got ");
      schema_sb_describe(&sb, inst);
      finish(v, k, &sb);
    }
  }
  if (n->enum_values == NULL)
    return;
  size_t count = json_object_array_length(n->enum_values);
  for (size_t i = 0; i < count; i++)
    if (json_equal(inst, json_object_array_get_idx(n->enum_values, i), 0))
      return;
  schema_sb_t sb;
  if (!begin(v, k, &sb))
    return;
  schema_sb_puts(&sb, count == 1 ? "expected " : "expected one of ");
  /* String alternatives are also candidates for a "did you mean". */
  const char *strings[64];
  size_t nstrings = 0;
  for (size_t i = 0; i < count; i++) {
    json_object *e = json_object_array_get_idx(n->enum_values, i);
    if (i > 0)
      schema_sb_puts(&sb, ", ");
    if (i == 20) {
      schema_sb_printf(&sb, "... (%zu more)", count - i);
      break;
    }
    schema_sb_put_expected(&sb, e);
    if (json_object_is_type(e, json_type_string) && nstrings < 64)
      strings[nstrings++] = json_object_get_string(e);
  }
  if (count == 0)
    schema_sb_puts(&sb, "nothing (the enum is empty)");
  schema_sb_puts(&sb, ", got ");
  schema_sb_describe(&sb, inst);
  if (json_object_is_type(inst, json_type_string)) {
    const char *guess =
        closest(json_object_get_string(inst), strings, nstrings);
    if (guess != NULL)
      schema_sb_printf(&sb, "; did you mean \"%s\"?", guess);
  }
  finish(v, k, &sb);
}

/* Whether x is a multiple of m (m > 0). Decimal fractions such as 0.0001
 * are not exact in binary, so the quotient is allowed a few units of
 * rounding error; quotients too large to hold a fraction count as whole,
 * rather than overflowing into a wrong answer. */
static int is_multiple(json_object *inst, json_object *of) {
  if (json_object_is_type(inst, json_type_int) &&
      json_object_is_type(of, json_type_int)) {
    /* Exact, in integers; of is positive. */
    int64_t x = json_object_get_int64(inst), m = json_object_get_int64(of);
    uint64_t ux =
        x >= 0 ? (x == INT64_MAX ? json_object_get_uint64(inst) : (uint64_t)x)
               : (uint64_t)(-(x + 1)) + 1;
    uint64_t um = m == INT64_MAX ? json_object_get_uint64(of) : (uint64_t)m;
    return ux % um == 0;
  }
  long double x = num_value(inst), m = num_value(of);
  if (fmodl(x, m) == 0)
    return 1;
  double q = (double)(x / m);
  if (!isfinite(q))
    return 0;
  if (fabs(q) >= 9007199254740992.0) /* 2^53 */
    return 1;
  return fabs(q - nearbyint(q)) <= 4 * DBL_EPSILON * fabs(q);
}

static void check_number(vctx_t *v, sink_t *k, const node_t *n,
                         json_object *inst) {
  int bad = 0;
  for (int b = 0; b < NBOUNDS; b++) {
    if (n->bound[b] == NULL)
      continue;
    int cmp = num_cmp(inst, n->bound[b]);
    /* A NaN (cmp 2) fails every bound. */
    int ok = cmp != 2 && (b == B_MIN    ? cmp >= 0
                          : b == B_EMIN ? cmp > 0
                          : b == B_MAX  ? cmp <= 0
                                        : cmp < 0);
    bad |= !ok;
  }
  if (bad) {
    schema_sb_t sb;
    if (begin(v, k, &sb)) {
      schema_sb_puts(&sb, n->types == T_INTEGER ? "expected an integer "
                                                : "expected a number ");
      int first = 1;
      for (int b = 0; b < NBOUNDS; b++) {
        if (n->bound[b] == NULL)
          continue;
        schema_sb_printf(&sb, "%s%s ", first ? "" : " and ", bound_ops[b]);
        schema_sb_put_number(&sb, n->bound[b]);
        first = 0;
      }
      schema_sb_puts(&sb, ", got ");
      schema_sb_describe(&sb, inst);
      finish(v, k, &sb);
    }
  }
  if (n->multiple_of != NULL && !is_multiple(inst, n->multiple_of)) {
    schema_sb_t sb;
    if (begin(v, k, &sb)) {
      schema_sb_puts(&sb, "expected a multiple of ");
      schema_sb_put_number(&sb, n->multiple_of);
      schema_sb_puts(&sb, ", got ");
      schema_sb_describe(&sb, inst);
      finish(v, k, &sb);
    }
  }
}

static void check_string(vctx_t *v, sink_t *k, const node_t *n,
                         json_object *inst) {
  const char *str = json_object_get_string(inst);
  size_t bytes = (size_t)json_object_get_string_len(inst);
  if (n->min_len >= 0 || n->max_len >= 0) {
    long long len = (long long)schema_utf8_length(str, bytes);
    int too_short = n->min_len >= 0 && len < n->min_len;
    int too_long = n->max_len >= 0 && len > n->max_len;
    schema_sb_t sb;
    if ((too_short || too_long) && begin(v, k, &sb)) {
      schema_sb_puts(&sb, "expected a string of ");
      if (n->min_len == n->max_len)
        schema_sb_put_count(&sb, n->min_len, "exactly 1 character",
                            "exactly %lld characters");
      else if (too_short)
        schema_sb_put_count(&sb, n->min_len, "at least 1 character",
                            "at least %lld characters");
      else
        schema_sb_put_count(&sb, n->max_len, "at most 1 character",
                            "at most %lld characters");
      schema_sb_puts(&sb, ", got ");
      schema_sb_describe(&sb, inst);
      schema_sb_put_count(&sb, len, " (1 character)", " (%lld characters)");
      finish(v, k, &sb);
    }
  }
  if (n->pattern == NULL)
    return;
  /* Match data is per call: the compiled pattern is shared by threads. */
  pcre2_match_data *md = pcre2_match_data_create(1, NULL);
  if (md == NULL) {
    v->oom = 1;
    return;
  }
  int rc = pcre2_match(n->pattern, (PCRE2_SPTR)str, bytes, 0, 0, md, NULL);
  pcre2_match_data_free(md);
  if (rc >= 0)
    return;
  schema_sb_t sb;
  if (!begin(v, k, &sb))
    return;
  schema_sb_printf(&sb, "expected a string matching the pattern '%s', got ",
                   n->pattern_src);
  schema_sb_describe(&sb, inst);
  if (rc != PCRE2_ERROR_NOMATCH) {
    PCRE2_UCHAR msg[128];
    pcre2_get_error_message(rc, msg, sizeof(msg));
    schema_sb_printf(&sb, " (the pattern could not be applied: %s)",
                     (const char *)msg);
  }
  finish(v, k, &sb);
}

typedef struct {
  uint64_t hash;
  size_t index;
} hashed_t;

static int cmp_hashed(const void *a, const void *b) {
  const hashed_t *x = a, *y = b;
  if (x->hash != y->hash)
    return x->hash < y->hash ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* Finds the duplicate pair whose later item comes first; returns 0 if all
 * items are distinct. */
static int find_duplicate(vctx_t *v, json_object *arr, size_t *first,
                          size_t *second) {
  size_t n = json_object_array_length(arr);
  if (n < 2)
    return 0;
  hashed_t *h = malloc(n * sizeof(*h));
  if (h == NULL) {
    v->oom = 1;
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    h[i].hash = json_hash(json_object_array_get_idx(arr, i), 0);
    h[i].index = i;
  }
  qsort(h, n, sizeof(*h), cmp_hashed);
  int found = 0;
  for (size_t i = 0; i < n; i++) {
    for (size_t j = i + 1; j < n && h[j].hash == h[i].hash; j++) {
      if (found && h[j].index >= *second)
        break;
      if (json_equal(json_object_array_get_idx(arr, h[i].index),
                     json_object_array_get_idx(arr, h[j].index), 0)) {
        *first = h[i].index;
        *second = h[j].index;
        found = 1;
        break;
      }
    }
  }
  free(h);
  return found;
}

static void check_array(vctx_t *v, sink_t *k, const node_t *n,
                        json_object *inst, int depth) {
  size_t count = json_object_array_length(inst);
  long long c = (long long)count;
  schema_sb_t sb;
  if ((n->min_items >= 0 && c < n->min_items) ||
      (n->max_items >= 0 && c > n->max_items)) {
    if (begin(v, k, &sb)) {
      schema_sb_puts(&sb, "expected an array of ");
      if (n->min_items == n->max_items)
        schema_sb_put_count(&sb, n->min_items, "exactly 1 item",
                            "exactly %lld items");
      else if (n->min_items >= 0 && c < n->min_items)
        schema_sb_put_count(&sb, n->min_items, "at least 1 item",
                            "at least %lld items");
      else
        schema_sb_put_count(&sb, n->max_items, "at most 1 item",
                            "at most %lld items");
      schema_sb_put_count(&sb, c, ", got 1 item", ", got %lld items");
      finish(v, k, &sb);
    }
  }
  size_t first = 0, second = 0;
  if (n->unique && !quiet_done(k) && find_duplicate(v, inst, &first, &second) &&
      begin(v, k, &sb)) {
    schema_sb_printf(&sb,
                     "expected an array of unique items, got a duplicate: "
                     "items %zu and %zu are equal (",
                     first, second);
    schema_sb_describe(&sb, json_object_array_get_idx(inst, second));
    schema_sb_putc(&sb, ')');
    finish(v, k, &sb);
  }
  for (size_t i = 0; i < count && !quiet_done(k); i++) {
    const node_t *item = i < n->prefix.n ? n->prefix.v[i] : n->items;
    if (item == NULL)
      continue;
    size_t len = v->path.len;
    schema_sb_put_pointer_index(&v->path, i);
    if (item->boolean == 0 && i >= n->prefix.n) {
      /* "items": false after prefixItems: say how many are allowed. */
      if (begin(v, k, &sb)) {
        schema_sb_put_count(&sb, (long long)n->prefix.n,
                            "unexpected item (the array allows 1 item)",
                            "unexpected item (the array allows %lld items)");
        schema_sb_puts(&sb, ", got ");
        schema_sb_describe(&sb, json_object_array_get_idx(inst, i));
        finish(v, k, &sb);
      }
    } else {
      validate(v, k, item, json_object_array_get_idx(inst, i), depth + 1);
    }
    schema_sb_truncate(&v->path, len);
  }
}

static const node_t *find_prop(const node_t *n, const char *name) {
  for (size_t i = 0; i < n->nprops; i++)
    if (strcmp(n->props[i].name, name) == 0)
      return n->props[i].schema;
  return NULL;
}

static void report_unexpected(vctx_t *v, sink_t *k, const node_t *n,
                              const char *key) {
  schema_sb_t sb;
  if (!begin(v, k, &sb))
    return;
  schema_sb_puts(&sb, "unexpected property '");
  schema_sb_puts(&sb, key);
  if (n->nprops == 0) {
    schema_sb_puts(&sb, "' (no properties are allowed)");
    finish(v, k, &sb);
    return;
  }
  schema_sb_puts(&sb, "' (allowed: ");
  const char *names[64];
  size_t nnames = 0;
  for (size_t i = 0; i < n->nprops; i++) {
    if (i == MAX_LISTED) {
      schema_sb_printf(&sb, ", ... (%zu more)", n->nprops - i);
      break;
    }
    schema_sb_puts(&sb, i ? ", " : "");
    schema_sb_puts(&sb, n->props[i].name);
  }
  for (size_t i = 0; i < n->nprops && nnames < 64; i++)
    names[nnames++] = n->props[i].name;
  schema_sb_putc(&sb, ')');
  const char *guess = closest(key, names, nnames);
  if (guess != NULL)
    schema_sb_printf(&sb, "; did you mean '%s'?", guess);
  finish(v, k, &sb);
}

static void check_object(vctx_t *v, sink_t *k, const node_t *n,
                         json_object *inst, int depth) {
  schema_sb_t sb;
  for (size_t i = 0; i < n->nrequired && !quiet_done(k); i++) {
    json_object *dummy;
    if (!json_object_object_get_ex(inst, n->required[i], &dummy) &&
        begin(v, k, &sb)) {
      schema_sb_printf(&sb, "missing required property '%s'", n->required[i]);
      finish(v, k, &sb);
    }
  }
  long long count = json_object_object_length(inst);
  if ((n->min_props >= 0 && count < n->min_props) ||
      (n->max_props >= 0 && count > n->max_props)) {
    if (begin(v, k, &sb)) {
      schema_sb_puts(&sb, "expected an object with ");
      if (n->min_props >= 0 && count < n->min_props)
        schema_sb_put_count(&sb, n->min_props, "at least 1 property",
                            "at least %lld properties");
      else
        schema_sb_put_count(&sb, n->max_props, "at most 1 property",
                            "at most %lld properties");
      schema_sb_put_count(&sb, count, ", got 1 property",
                          ", got %lld properties");
      finish(v, k, &sb);
    }
  }
  if (n->nprops == 0 && n->additional == NULL)
    return;
  json_object_object_foreach(inst, key, val) {
    if (quiet_done(k))
      return;
    const node_t *p = find_prop(n, key);
    if (p == NULL && n->additional == NULL)
      continue;
    if (p == NULL && n->additional->boolean == 0) {
      report_unexpected(v, k, n, key);
      continue;
    }
    size_t len = v->path.len;
    schema_sb_put_pointer_token(&v->path, key);
    validate(v, k, p ? p : n->additional, val, depth + 1);
    schema_sb_truncate(&v->path, len);
  }
}

/* The value a branch of oneOf/anyOf requires for property name through
 * "const" or a one-member "enum", looking through "$ref"s; NULL if none.
 * *found tells a required null apart from no requirement. */
static json_object *branch_const(const node_t *n, const char *name,
                                 int *found) {
  *found = 0;
  for (int hops = 0; n != NULL && hops < 16; hops++, n = n->ref) {
    const node_t *p = find_prop(n, name);
    for (int h2 = 0; p != NULL && h2 < 16; h2++, p = p->ref) {
      if (p->has_const) {
        *found = 1;
        return p->const_value;
      }
      if (p->enum_values != NULL &&
          json_object_array_length(p->enum_values) == 1) {
        *found = 1;
        return json_object_array_get_idx(p->enum_values, 0);
      }
    }
  }
  return NULL;
}

/* The name of a property whose constant value tells the alternatives
 * apart (such as "type"), or NULL. */
static const char *discriminator(const node_list_t *alts) {
  const node_t *first = alts->v[0];
  for (int hops = 0; first != NULL && hops < 16; hops++, first = first->ref) {
    for (size_t i = 0; i < first->nprops; i++) {
      const char *name = first->props[i].name;
      int all = 1, found;
      for (size_t a = 0; a < alts->n && all; a++) {
        branch_const(alts->v[a], name, &found);
        all = found;
      }
      if (all)
        return name;
    }
  }
  return NULL;
}

/* Reports a failed oneOf/anyOf through its discriminator property, if it
 * has one and the instance is an object. Returns 1 if it did. */
static int report_by_discriminator(vctx_t *v, sink_t *k,
                                   const node_list_t *alts, json_object *inst,
                                   int depth) {
  if (!json_object_is_type(inst, json_type_object))
    return 0;
  const char *name = discriminator(alts);
  if (name == NULL)
    return 0;
  json_object *given;
  int present = json_object_object_get_ex(inst, name, &given);
  size_t match = 0, nmatch = 0;
  int found;
  if (present) {
    for (size_t a = 0; a < alts->n; a++) {
      if (json_equal(given, branch_const(alts->v[a], name, &found), 0)) {
        match = a;
        nmatch++;
      }
    }
    if (nmatch == 1) {
      validate(v, k, alts->v[match], inst, depth + 1);
      return 1;
    }
    if (nmatch > 1)
      return 0;
  }
  schema_sb_t sb;
  size_t len = v->path.len;
  if (present)
    schema_sb_put_pointer_token(&v->path, name);
  if (begin(v, k, &sb)) {
    if (present)
      schema_sb_puts(&sb, "expected one of ");
    else
      schema_sb_printf(&sb, "missing required property '%s' (one of ", name);
    for (size_t a = 0; a < alts->n; a++) {
      if (a > 0)
        schema_sb_puts(&sb, ", ");
      schema_sb_put_expected(&sb, branch_const(alts->v[a], name, &found));
    }
    if (present) {
      schema_sb_puts(&sb, ", got ");
      schema_sb_describe(&sb, given);
    } else {
      schema_sb_putc(&sb, ')');
    }
    finish(v, k, &sb);
  }
  schema_sb_truncate(&v->path, len);
  return 1;
}

static void check_alternatives(vctx_t *v, sink_t *k, const node_list_t *alts,
                               int exactly_one, json_object *inst, int depth) {
  size_t matched = 0, which[2] = {0, 0};
  for (size_t a = 0; a < alts->n; a++) {
    sink_t q = {NULL, 0};
    validate(v, &q, alts->v[a], inst, depth + 1);
    if (q.count == 0) {
      if (matched < 2)
        which[matched] = a;
      matched++;
      /* anyOf is satisfied by the first match, oneOf fails at a second. */
      if (!exactly_one || matched > 1)
        break;
    }
  }
  if (exactly_one ? matched == 1 : matched > 0)
    return;
  schema_sb_t sb;
  if (matched > 1) {
    if (begin(v, k, &sb)) {
      schema_sb_printf(&sb,
                       "expected a value matching exactly one of %zu "
                       "alternatives, matched more than one (alternatives "
                       "%zu and %zu both match)",
                       alts->n, which[0] + 1, which[1] + 1);
      finish(v, k, &sb);
    }
    return;
  }
  if (k->msgs == NULL) {
    k->count++;
    return;
  }
  if (report_by_discriminator(v, k, alts, inst, depth))
    return;
  if (begin(v, k, &sb)) {
    schema_sb_printf(&sb,
                     "expected a value matching %s of %zu alternatives, "
                     "matched 0",
                     exactly_one ? "exactly one" : "at least one", alts->n);
    finish(v, k, &sb);
  }
  /* Then the problems of the alternative that came closest. */
  sink_t best = {NULL, 0};
  for (size_t a = 0; a < alts->n; a++) {
    sink_t s = {json_object_new_array(), 0};
    if (s.msgs == NULL) {
      v->oom = 1;
      break;
    }
    validate(v, &s, alts->v[a], inst, depth + 1);
    if (best.msgs == NULL || s.count < best.count) {
      json_object_put(best.msgs);
      best = s;
    } else {
      json_object_put(s.msgs);
    }
  }
  if (best.msgs != NULL) {
    merge(v, k, &best);
    json_object_put(best.msgs);
  }
}

static void validate(vctx_t *v, sink_t *k, const node_t *n, json_object *inst,
                     int depth) {
  schema_sb_t sb;
  if (depth > MAX_DEPTH) {
    if (begin(v, k, &sb)) {
      schema_sb_printf(&sb,
                       "validation nests deeper than %d levels (is there a "
                       "'$ref' cycle in the schema, or is the value nested "
                       "too deeply?)",
                       MAX_DEPTH);
      finish(v, k, &sb);
    }
    return;
  }
  if (n->boolean == 1)
    return;
  if (n->boolean == 0) {
    if (begin(v, k, &sb)) {
      schema_sb_puts(&sb, "no value is allowed here, got ");
      schema_sb_describe(&sb, inst);
      finish(v, k, &sb);
    }
    return;
  }
  if (n->ref != NULL)
    validate(v, k, n->ref, inst, depth + 1);
  if (quiet_done(k))
    return;
  check_type(v, k, n, inst);
  check_enum(v, k, n, inst);
  if (quiet_done(k))
    return;
  switch (json_object_get_type(inst)) {
  case json_type_int:
  case json_type_double:
    check_number(v, k, n, inst);
    break;
  case json_type_string:
    check_string(v, k, n, inst);
    break;
  case json_type_array:
    check_array(v, k, n, inst, depth);
    break;
  case json_type_object:
    check_object(v, k, n, inst, depth);
    break;
  default:
    break;
  }
  for (size_t i = 0; i < n->all_of.n && !quiet_done(k); i++)
    validate(v, k, n->all_of.v[i], inst, depth + 1);
  if (n->any_of.n > 0 && !quiet_done(k))
    check_alternatives(v, k, &n->any_of, 0, inst, depth);
  if (n->one_of.n > 0 && !quiet_done(k))
    check_alternatives(v, k, &n->one_of, 1, inst, depth);
  if (n->not_ != NULL && !quiet_done(k)) {
    sink_t q = {NULL, 0};
    validate(v, &q, n->not_, inst, depth + 1);
    if (q.count == 0 && begin(v, k, &sb)) {
      schema_sb_puts(&sb, "expected a value that does not match the schema in "
                          "'not', got ");
      schema_sb_describe(&sb, inst);
      finish(v, k, &sb);
    }
  }
  if (n->if_ != NULL && (n->then_ != NULL || n->else_ != NULL) &&
      !quiet_done(k)) {
    sink_t q = {NULL, 0};
    validate(v, &q, n->if_, inst, depth + 1);
    const node_t *branch = q.count == 0 ? n->then_ : n->else_;
    if (branch != NULL)
      validate(v, k, branch, inst, depth + 1);
  }
}

int atl_schema_validate(const atl_schema_t *s, json_object *instance,
                        json_object **errors) {
  if (errors != NULL)
    *errors = NULL;
  vctx_t v;
  schema_sb_init(&v.path);
  v.oom = 0;
  sink_t k = {errors ? json_object_new_array() : NULL, 0};
  if (errors != NULL && k.msgs == NULL)
    return 1;
  if (errors == NULL) {
    /* Without messages only the count is wanted; a quiet sink would stop
     * at the first problem, so collect into a scratch array. */
    k.msgs = json_object_new_array();
    if (k.msgs == NULL)
      return 1;
  }
  validate(&v, &k, s->root, instance, 0);
  if (v.oom || v.path.oom) {
    json_object_array_add(
        k.msgs, json_object_new_string(
                    "(root): out of memory while validating the arguments"));
    k.count++;
  }
  schema_sb_free(&v.path);
  if (errors != NULL && k.count > 0)
    *errors = k.msgs;
  else
    json_object_put(k.msgs);
  return k.count;
}

/* ---------------------------------------------------------------------
 * Defaults
 * ------------------------------------------------------------------ */

static int matches(const node_t *n, json_object *inst, int depth) {
  vctx_t v;
  schema_sb_init(&v.path);
  v.oom = 0;
  sink_t q = {NULL, 0};
  validate(&v, &q, n, inst, depth);
  schema_sb_free(&v.path);
  return q.count == 0;
}

/* The "default" of a property schema, looking through "$ref"s. */
static json_object *default_of(const node_t *n, int *found) {
  for (int hops = 0; n != NULL && hops < 16; hops++, n = n->ref) {
    if (n->has_default) {
      *found = 1;
      return n->default_value;
    }
  }
  *found = 0;
  return NULL;
}

static void apply_defaults(const node_t *n, json_object *inst, int depth) {
  if (n == NULL || n->boolean >= 0 || depth > MAX_DEPTH)
    return;
  if (n->ref != NULL)
    apply_defaults(n->ref, inst, depth + 1);
  if (json_object_is_type(inst, json_type_object)) {
    for (size_t i = 0; i < n->nprops; i++) {
      json_object *val;
      if (json_object_object_get_ex(inst, n->props[i].name, &val))
        continue;
      int found;
      json_object *def = default_of(n->props[i].schema, &found);
      if (!found)
        continue;
      json_object *copy = NULL;
      if (def != NULL && json_object_deep_copy(def, &copy, NULL) != 0)
        continue;
      if (json_object_object_add(inst, n->props[i].name, copy) != 0)
        json_object_put(copy);
    }
    /* Then into every member, including the defaults just added, whose
     * own members may have defaults. */
    json_object_object_foreach(inst, key, val) {
      const node_t *p = find_prop(n, key);
      apply_defaults(p ? p : n->additional, val, depth + 1);
    }
  } else if (json_object_is_type(inst, json_type_array)) {
    size_t count = json_object_array_length(inst);
    for (size_t i = 0; i < count; i++)
      apply_defaults(i < n->prefix.n ? n->prefix.v[i] : n->items,
                     json_object_array_get_idx(inst, i), depth + 1);
  }
  for (size_t i = 0; i < n->all_of.n; i++)
    apply_defaults(n->all_of.v[i], inst, depth + 1);
  const node_list_t *lists[2] = {&n->one_of, &n->any_of};
  for (int l = 0; l < 2; l++) {
    for (size_t i = 0; i < lists[l]->n; i++) {
      if (matches(lists[l]->v[i], inst, depth + 1)) {
        apply_defaults(lists[l]->v[i], inst, depth + 1);
        break;
      }
    }
  }
  if (n->if_ != NULL)
    apply_defaults(matches(n->if_, inst, depth + 1) ? n->then_ : n->else_, inst,
                   depth + 1);
}

int atl_schema_apply_defaults(const atl_schema_t *s, json_object *instance) {
  apply_defaults(s->root, instance, 0);
  return 0;
}
