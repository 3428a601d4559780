/* The JSON Schema validator: validating instances against a compiled
 * schema (schema_compile.c builds it) and filling in defaults.
 *
 * Validation only walks nodes and never modifies them, so a compiled schema
 * can be used by many threads at once. The message texts are built here;
 * the helpers they are made of are in schema_msg.c.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "schema_int.h"

/* How many names an "unexpected property" or enum message lists. */
#define MAX_LISTED 20

static const char *const bound_ops[NBOUNDS] = {">=", ">", "<=", "<"};

/* ---------------------------------------------------------------------
 * Equality
 * ------------------------------------------------------------------ */

/* Deep JSON equality: numbers by value (1 equals 1.0), objects regardless
 * of key order. Values nested deeper than the limit compare unequal, which
 * keeps hostile inputs from exhausting the stack. */
static int json_equal(json_object *a, json_object *b, int depth) {
  if (depth > 512)
    return 0;
  if (schema_is_number(a) && schema_is_number(b))
    return schema_num_cmp(a, b) == 0;
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
    long double x = schema_num_value(v);
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
    return T_NUMBER | (schema_is_integer(inst) ? T_INTEGER : 0);
  }
  return 0;
}

static const char *type_phrase(unsigned bit) {
  for (size_t i = 0; i < SCHEMA_NTYPES; i++)
    if (schema_types[i].bit == bit)
      return schema_types[i].phrase;
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
  /* Models often send an array or an object as a string of JSON text
   * (Code Monet's recorded sessions show it three times in a row), and
   * "expected an array, got a string" alone did not stop them. */
  if (json_object_is_type(inst, json_type_string)) {
    json_object *parsed = json_tokener_parse(json_object_get_string(inst));
    unsigned bits = parsed ? type_bits(parsed) : 0;
    if (parsed && (bits & n->types) &&
        (json_object_is_type(parsed, json_type_array) ||
         json_object_is_type(parsed, json_type_object)))
      schema_sb_printf(&sb,
                       "; that string holds JSON text: send the %s "
                       "itself, not a string that contains it",
                       json_object_is_type(parsed, json_type_array) ? "array"
                                                                    : "object");
    json_object_put(parsed);
  }
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
    if (i == MAX_LISTED) {
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
  long double x = schema_num_value(inst), m = schema_num_value(of);
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
    int cmp = schema_num_cmp(inst, n->bound[b]);
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
      if (too_short)
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
      /* [x, y, z]: "exactly 3 items" says it all in one go. */
      if (n->min_items >= 0 && n->min_items == n->max_items)
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
  size_t matched = 0;
  /* For oneOf, every alternative is tried so that the message can say
   * which ones matched; anyOf is satisfied by the first match. */
  unsigned char *hit = calloc(alts->n, 1);
  if (hit == NULL) {
    v->oom = 1;
    return;
  }
  for (size_t a = 0; a < alts->n; a++) {
    sink_t q = {NULL, 0};
    validate(v, &q, alts->v[a], inst, depth + 1);
    if (q.count == 0) {
      hit[a] = 1;
      matched++;
      if (!exactly_one)
        break;
    }
  }
  if (exactly_one ? matched == 1 : matched > 0) {
    free(hit);
    return;
  }
  schema_sb_t sb;
  if (matched > 1) {
    if (begin(v, k, &sb)) {
      schema_sb_printf(&sb,
                       "expected a value matching exactly one of %zu "
                       "alternatives, matched %zu (alternatives ",
                       alts->n, matched);
      size_t listed = 0;
      for (size_t a = 0; a < alts->n; a++) {
        if (!hit[a])
          continue;
        listed++;
        schema_sb_printf(&sb, "%s%zu",
                         listed == 1         ? ""
                         : listed == matched ? " and "
                                             : ", ",
                         a + 1);
      }
      schema_sb_puts(&sb, ")");
      finish(v, k, &sb);
    }
    free(hit);
    return;
  }
  free(hit);
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
  if (depth > SCHEMA_MAX_DEPTH) {
    if (begin(v, k, &sb)) {
      schema_sb_printf(&sb,
                       "validation nests deeper than %d levels (is there a "
                       "'$ref' cycle in the schema, or is the value nested "
                       "too deeply?)",
                       SCHEMA_MAX_DEPTH);
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
  if (n == NULL || n->boolean >= 0 || depth > SCHEMA_MAX_DEPTH)
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
