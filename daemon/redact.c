/* Scrubbing a call's secret arguments out of everything derived from the
 * call (see redact.h). */
#include "redact.h"

#include <stdlib.h>
#include <string.h>

#define MIN_SECRET 4

typedef struct {
  char **v;
  size_t n, cap;
} secrets_t;

static void add(secrets_t *s, const char *text, size_t len) {
  if (len < MIN_SECRET)
    return;
  for (size_t i = 0; i < s->n; i++)
    if (strlen(s->v[i]) == len && memcmp(s->v[i], text, len) == 0)
      return;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 8;
    char **nv = realloc(s->v, cap * sizeof(*nv));
    if (nv == NULL)
      return;
    s->v = nv;
    s->cap = cap;
  }
  char *copy = strndup(text, len);
  if (copy != NULL)
    s->v[s->n++] = copy;
}

/* Calls fn on every leaf (not object, not array) of v. */
static void each_leaf(json_object *v, void (*fn)(json_object *, void *),
                      void *user) {
  if (json_object_is_type(v, json_type_object)) {
    json_object_object_foreach(v, key, val) {
      (void)key;
      each_leaf(val, fn, user);
    }
  } else if (json_object_is_type(v, json_type_array)) {
    for (size_t i = 0; i < json_object_array_length(v); i++)
      each_leaf(json_object_array_get_idx(v, i), fn, user);
  } else {
    fn(v, user);
  }
}

/* A value of the arguments, as written and as it appears inside a JSON
 * string (a secret with a quote or a backslash in it is escaped in the
 * text of a serialized result, and must be found there too). */
static void collect(json_object *v, void *user) {
  secrets_t *s = user;
  if (json_object_is_type(v, json_type_string)) {
    add(s, json_object_get_string(v), (size_t)json_object_get_string_len(v));
    const char *q = json_object_to_json_string_ext(
        v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t qn = strlen(q);
    if (qn >= 2)
      add(s, q + 1, qn - 2);
  } else if (json_object_is_type(v, json_type_int) ||
             json_object_is_type(v, json_type_double)) {
    const char *t = json_object_to_json_string(v);
    add(s, t, strlen(t));
  }
}

/* Longest first, so that a secret containing another is replaced whole. */
static int by_length_desc(const void *a, const void *b) {
  size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
  return la < lb ? 1 : la > lb ? -1 : 0;
}

static void secrets_free(secrets_t *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->v[i]);
  free(s->v);
}

/* text with every occurrence of needle replaced (a new string, or NULL). */
static char *replace_all(const char *text, const char *needle) {
  size_t nl = strlen(needle), rl = strlen(ATL_REDACTED), count = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + nl, needle))
    count++;
  size_t len = strlen(text);
  char *out = malloc(len + count * (rl > nl ? rl - nl : 0) + 1);
  if (out == NULL)
    return NULL;
  char *o = out;
  const char *p = text, *hit;
  while ((hit = strstr(p, needle)) != NULL) {
    memcpy(o, p, (size_t)(hit - p));
    o += hit - p;
    memcpy(o, ATL_REDACTED, rl);
    o += rl;
    p = hit + nl;
  }
  strcpy(o, p);
  return out;
}

static char *scrub(const char *text, const secrets_t *s) {
  char *cur = strdup(text);
  for (size_t i = 0; cur != NULL && i < s->n; i++) {
    if (strstr(cur, s->v[i]) == NULL)
      continue;
    char *next = replace_all(cur, s->v[i]);
    free(cur);
    cur = next;
  }
  return cur;
}

static void scrub_string(json_object *v, void *user) {
  if (!json_object_is_type(v, json_type_string))
    return;
  char *clean = scrub(json_object_get_string(v), user);
  if (clean != NULL && strcmp(clean, json_object_get_string(v)) != 0)
    json_object_set_string(v, clean);
  free(clean);
}

static void secrets_of(secrets_t *s, json_object *args) {
  memset(s, 0, sizeof(*s));
  each_leaf(args, collect, s);
  if (s->n > 1)
    qsort(s->v, s->n, sizeof(*s->v), by_length_desc);
}

json_object *atl_redact_args(json_object *args) {
  json_object *out = json_object_new_object();
  if (!json_object_is_type(args, json_type_object))
    return out;
  json_object_object_foreach(args, key, val) {
    json_object_object_add(out, key,
                           json_object_is_type(val, json_type_object)
                               ? atl_redact_args(val)
                               : json_object_new_string(ATL_REDACTED));
  }
  return out;
}

char *atl_redact_text(const char *text, json_object *args) {
  if (text == NULL)
    return NULL;
  secrets_t s;
  secrets_of(&s, args);
  char *out = scrub(text, &s);
  secrets_free(&s);
  return out;
}

void atl_redact_json(json_object *obj, json_object *args) {
  if (obj == NULL)
    return;
  secrets_t s;
  secrets_of(&s, args);
  each_leaf(obj, scrub_string, &s);
  secrets_free(&s);
}
