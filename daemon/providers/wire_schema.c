/* Tool schemas as each provider's API takes them (see wire_schema.h).
 *
 * Three steps, each a pure function of JSON trees:
 *   flatten()  a root union (oneOf/anyOf) or intersection (allOf) becomes a
 *              plain object schema, for every provider;
 *   gemini()   for Gemini, $refs inlined and only the keywords of the JSON
 *              Schema its parametersJsonSchema field documents;
 *   lint       the result checked against the rules each API enforces.
 * The rules and their sources are in doc/providers.md and
 * shared/anchors/provider-constraints.md.
 */
#include "atl-build.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "wire_schema.h"

static const char *const wire_names[ATL_WIRE_N] = {"anthropic", "openai",
                                                   "gemini"};

const char *atl_wire_name(atl_wire_t w) {
  return (unsigned)w < ATL_WIRE_N ? wire_names[w] : "?";
}

int atl_wire_of(const char *type) {
  for (int i = 0; type != NULL && i < ATL_WIRE_N; i++)
    if (strcmp(type, wire_names[i]) == 0)
      return i;
  return -1;
}

static json_object *copy(json_object *o) {
  json_object *c = NULL;
  if (o == NULL || json_object_deep_copy(o, &c, NULL) != 0)
    return NULL;
  return c;
}

static const char *str_of(json_object *o, const char *key) {
  json_object *v;
  return json_object_is_type(o, json_type_object) &&
                 json_object_object_get_ex(o, key, &v) &&
                 json_object_is_type(v, json_type_string)
             ? json_object_get_string(v)
             : NULL;
}

static json_object *member(json_object *o, const char *key) {
  json_object *v = NULL;
  if (!json_object_is_type(o, json_type_object) ||
      !json_object_object_get_ex(o, key, &v))
    return NULL;
  return v;
}

/* The schema a local reference ("#/a/b", a JSON pointer into root) names,
 * borrowed; NULL when it names nothing. */
static json_object *resolve(json_object *root, const char *ref) {
  if (ref == NULL || ref[0] != '#')
    return NULL;
  json_object *at = root;
  const char *p = ref + 1;
  char tok[256];
  while (*p == '/') {
    p++;
    size_t n = 0;
    for (; *p && *p != '/'; p++) {
      char c = *p;
      if (c == '~' && (p[1] == '0' || p[1] == '1'))
        c = *++p == '1' ? '/' : '~';
      if (n + 1 >= sizeof(tok))
        return NULL;
      tok[n++] = c;
    }
    tok[n] = '\0';
    if (json_object_is_type(at, json_type_array)) {
      char *end;
      long i = strtol(tok, &end, 10);
      if (*end || i < 0 || (size_t)i >= json_object_array_length(at))
        return NULL;
      at = json_object_array_get_idx(at, (size_t)i);
    } else if ((at = member(at, tok)) == NULL) {
      return NULL;
    }
  }
  return *p == '\0' ? at : NULL;
}

/* A schema's description, with text put before it (a new string). */
static void describe(json_object *s, const char *before) {
  const char *old = str_of(s, "description");
  char *d = old && *old ? atl_printf_new("%s %s", before, old) : strdup(before);
  if (d != NULL)
    json_object_object_add(s, "description", json_object_new_string(d));
  free(d);
}

/* ---- flattening a root union ---- */

/* A branch of a root union as a schema of its own: a reference is replaced
 * by what it names, the keywords beside it taking precedence. A new
 * object. */
static json_object *branch_of(json_object *root, json_object *b) {
  const char *ref = str_of(b, "$ref");
  json_object *target = ref ? resolve(root, ref) : NULL;
  if (target == NULL)
    return copy(b);
  json_object *out = copy(target);
  if (!json_object_is_type(out, json_type_object))
    return out;
  json_object_object_foreach(b, k, v) {
    if (strcmp(k, "$ref") != 0)
      json_object_object_add(out, k, copy(v));
  }
  return out;
}

/* The value a branch's discriminating property takes: the string of a
 * "const", or of an "enum" of one. */
static const char *tag_of(json_object *prop) {
  json_object *e = member(prop, "enum");
  if (json_object_is_type(e, json_type_array) &&
      json_object_array_length(e) == 1 &&
      json_object_is_type(json_object_array_get_idx(e, 0), json_type_string))
    return json_object_get_string(json_object_array_get_idx(e, 0));
  json_object *c = member(prop, "const");
  return json_object_is_type(c, json_type_string) ? json_object_get_string(c)
                                                  : NULL;
}

static int requires(json_object *s, const char *name) {
  json_object *r = member(s, "required");
  for (size_t i = 0; json_object_is_type(r, json_type_array) &&
                     i < json_object_array_length(r);
       i++) {
    json_object *v = json_object_array_get_idx(r, i);
    if (json_object_is_type(v, json_type_string) &&
        strcmp(json_object_get_string(v), name) == 0)
      return 1;
  }
  return 0;
}

typedef struct {
  json_object **b; /* the branches, resolved (owned) */
  size_t n;
  const char *disc; /* the discriminating property, or NULL */
  const char **tag; /* each branch's value of it */
} branches_t;

/* The property that tells the branches apart: one every branch declares
 * as a distinct constant string. "type" in every union the plugins
 * declare. */
static const char *find_discriminator(branches_t *bs) {
  json_object *props0 = member(bs->b[0], "properties");
  if (!json_object_is_type(props0, json_type_object))
    return NULL;
  json_object_object_foreach(props0, name, v0) {
    (void)v0;
    int ok = 1;
    for (size_t i = 0; ok && i < bs->n; i++) {
      const char *t = tag_of(member(member(bs->b[i], "properties"), name));
      bs->tag[i] = t;
      ok = t != NULL;
      for (size_t j = 0; ok && j < i; j++)
        ok = strcmp(bs->tag[j], t) != 0;
    }
    if (ok)
      return name;
  }
  return NULL;
}

/* "type is a, b or c" for the branches whose flag is set (a new string). */
static char *which(const branches_t *bs, const unsigned char *in) {
  size_t count = 0, seen = 0;
  for (size_t i = 0; i < bs->n; i++)
    count += in[i] != 0;
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (f == NULL)
    return NULL;
  if (bs->disc != NULL)
    fprintf(f, "%s is ", bs->disc);
  for (size_t i = 0; i < bs->n; i++) {
    if (!in[i])
      continue;
    seen++;
    if (seen > 1)
      fputs(seen == count ? " or " : ", ", f);
    if (bs->disc != NULL)
      fputs(bs->tag[i], f);
    else
      fprintf(f, "form %zu", i + 1);
  }
  fclose(f);
  return out;
}

/* The discriminator as one property: the enum of its values, described by
 * what each branch says of itself. */
static json_object *discriminator(const branches_t *bs) {
  json_object *out = json_object_new_object(), *vals = json_object_new_array();
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f != NULL)
    fputs("Which form the object takes; it decides which other properties "
          "apply.",
          f);
  for (size_t i = 0; i < bs->n; i++) {
    json_object_array_add(vals, json_object_new_string(bs->tag[i]));
    json_object *prop = member(member(bs->b[i], "properties"), bs->disc);
    const char *d = str_of(prop, "description");
    if (d == NULL)
      d = str_of(bs->b[i], "description");
    size_t n = d ? strlen(d) : 0;
    if (f != NULL)
      fprintf(f, " %s%s%s%s", bs->tag[i], n ? ": " : "", n ? d : "",
              n && strchr(".!?", d[n - 1]) ? "" : ".");
  }
  if (f != NULL)
    fclose(f);
  json_object_object_add(out, "type", json_object_new_string("string"));
  json_object_object_add(out, "enum", vals);
  if (text != NULL)
    json_object_object_add(out, "description", json_object_new_string(text));
  free(text);
  return out;
}

/* One property of the merged object, from the branches that declare it
 * (in[i]). */
static json_object *merged_property(const branches_t *bs, const char *name,
                                    const unsigned char *in) {
  json_object **distinct = calloc(bs->n, sizeof(*distinct));
  unsigned char *of = calloc(bs->n * bs->n, 1); /* of[k*n+i]: branch i */
  size_t nd = 0, declared = 0, required = 0;
  if (distinct == NULL || of == NULL) {
    free(distinct);
    free(of);
    return NULL;
  }
  for (size_t i = 0; i < bs->n; i++) {
    if (!in[i])
      continue;
    declared++;
    required += requires(bs->b[i], name) != 0;
    json_object *s = member(member(bs->b[i], "properties"), name);
    size_t k = 0;
    while (k < nd && !json_object_equal(distinct[k], s))
      k++;
    if (k == nd)
      distinct[nd++] = s;
    of[k * bs->n + i] = 1;
  }
  json_object *out;
  if (nd == 1) {
    out = copy(distinct[0]);
  } else {
    /* Each form the property takes, said to be for its branches. */
    json_object *any = json_object_new_array();
    for (size_t k = 0; k < nd; k++) {
      json_object *item = copy(distinct[k]);
      char *w = which(bs, of + k * bs->n),
           *t = w ? atl_printf_new("When %s:", w) : NULL;
      if (t != NULL && json_object_is_type(item, json_type_object))
        describe(item, t);
      free(w);
      free(t);
      json_object_array_add(any, item);
    }
    out = json_object_new_object();
    json_object_object_add(out, "anyOf", any);
  }
  /* Which branches take it, and which require it, unless all do. */
  char *note = NULL;
  if (declared < bs->n || (required > 0 && required < bs->n)) {
    char *w = which(bs, in);
    if (required == declared)
      note = w ? atl_printf_new("Only when %s (required then).", w) : NULL;
    else if (required == 0)
      note = w ? atl_printf_new("Only when %s.", w) : NULL;
    else {
      unsigned char *req = calloc(bs->n, 1);
      for (size_t i = 0; req != NULL && i < bs->n; i++)
      req[i] = in[i] && requires(bs->b[i], name);
      char *r = req ? which(bs, req) : NULL;
      note = w && r ? atl_printf_new("Only when %s; required when %s.", w, r)
                    : NULL;
      free(r);
      free(req);
    }
    free(w);
  }
  if (note != NULL && json_object_is_type(out, json_type_object))
    describe(out, note);
  free(note);
  free(distinct);
  free(of);
  return out;
}

/* Adds the names of o's properties to order (an array of strings) that
 * it does not hold yet. */
static void add_names(json_object *order, json_object *props) {
  if (!json_object_is_type(props, json_type_object))
    return;
  json_object_object_foreach(props, name, v) {
    (void)v;
    size_t i = 0, n = json_object_array_length(order);
    while (i < n &&
           strcmp(json_object_get_string(json_object_array_get_idx(order, i)),
                  name) != 0)
      i++;
    if (i == n)
      json_object_array_add(order, json_object_new_string(name));
  }
}

/* Merges an allOf at the root into out: properties (identical ones once)
 * and required lists joined. */
static char *merge_all_of(json_object *root, json_object *out) {
  json_object *all = member(out, "allOf");
  if (all == NULL)
    return NULL;
  if (!json_object_is_type(all, json_type_array))
    return strdup("the root's allOf is not an array");
  json_object *all_ref = json_object_get(all);
  json_object_object_del(out, "allOf");
  char *why = NULL;
  for (size_t i = 0; why == NULL && i < json_object_array_length(all_ref);
       i++) {
    json_object *part = branch_of(root, json_object_array_get_idx(all_ref, i));
    if (json_object_is_type(part, json_type_boolean)) {
      /* true adds nothing; false admits nothing, which no model can call. */
      if (!json_object_get_boolean(part))
        why = atl_printf_new("part %zu of the root's allOf is false", i);
    } else if (!json_object_is_type(part, json_type_object)) {
      why = atl_printf_new("part %zu of the root's allOf is not a schema", i);
    } else if (member(part, "oneOf") || member(part, "anyOf") ||
               member(part, "allOf")) {
      why = atl_printf_new(
          "part %zu of the root's allOf is itself a combination", i);
    } else {
      json_object *props = member(part, "properties"), *have;
      if (json_object_is_type(props, json_type_object)) {
        if (!json_object_object_get_ex(out, "properties", &have)) {
          have = json_object_new_object();
          json_object_object_add(out, "properties", have);
        }
        json_object_object_foreach(props, k, v) {
          json_object *old = member(have, k);
          if (old != NULL && !json_object_equal(old, v)) {
            why = atl_printf_new(
                "property '%s' is declared differently by two parts of "
                "the root's allOf",
                k);
            break;
          }
          json_object_object_add(have, k, copy(v));
        }
      }
      json_object *req = member(part, "required"), *oreq;
      if (why == NULL && json_object_is_type(req, json_type_array)) {
        if (!json_object_object_get_ex(out, "required", &oreq)) {
          oreq = json_object_new_array();
          json_object_object_add(out, "required", oreq);
        }
        /* Each name once: 2020-12 wants required's items unique. */
        for (size_t j = 0; j < json_object_array_length(req); j++) {
          json_object *name = json_object_array_get_idx(req, j);
          if (!json_object_is_type(name, json_type_string) ||
              !requires(out, json_object_get_string(name)))
            json_object_array_add(oreq, copy(name));
        }
      }
    }
    json_object_put(part);
  }
  json_object_put(all_ref);
  return why;
}

/* The schema with its root union merged into one object schema (a new
 * object), or NULL with *why. */
static json_object *flatten(json_object *schema, char **why) {
  json_object *out = copy(schema);
  if (!json_object_is_type(out, json_type_object)) {
    json_object_put(out);
    *why = strdup("the schema's root is not an object schema");
    return NULL;
  }
  if ((*why = merge_all_of(schema, out)) != NULL) {
    json_object_put(out);
    return NULL;
  }
  const char *ukey = member(out, "oneOf")   ? "oneOf"
                     : member(out, "anyOf") ? "anyOf"
                                            : NULL;
  if (ukey == NULL)
    return out;
  json_object *u = member(out, ukey);
  size_t n =
      json_object_is_type(u, json_type_array) ? json_object_array_length(u) : 0;
  if (n == 0) {
    *why = atl_printf_new("the root's %s has no branches", ukey);
    json_object_put(out);
    return NULL;
  }
  branches_t bs = {.n = n};
  bs.b = calloc(n, sizeof(*bs.b));
  bs.tag = calloc(n, sizeof(*bs.tag));
  unsigned char *in = calloc(n, 1);
  json_object *order = json_object_new_array();
  if (bs.b == NULL || bs.tag == NULL || in == NULL)
    *why = strdup("out of memory");
  for (size_t i = 0; *why == NULL && i < n; i++) {
    bs.b[i] = branch_of(schema, json_object_array_get_idx(u, i));
    json_object *ty = member(bs.b[i], "type");
    if (!json_object_is_type(member(bs.b[i], "properties"), json_type_object) ||
        (ty != NULL && !(json_object_is_type(ty, json_type_string) &&
                         strcmp(json_object_get_string(ty), "object") == 0)))
      *why = atl_printf_new(
          "branch %zu of the root's %s is not an object schema with "
          "properties",
          i, ukey);
    else if (member(bs.b[i], "oneOf") || member(bs.b[i], "anyOf") ||
             member(bs.b[i], "allOf"))
      *why = atl_printf_new(
          "branch %zu of the root's %s is itself a combination", i, ukey);
  }
  json_object *props = NULL, *req = NULL;
  if (*why == NULL) {
    bs.disc = find_discriminator(&bs);
    /* The root's own properties hold in every branch and come first. */
    json_object *own = member(out, "properties");
    add_names(order, own);
    for (size_t i = 0; i < n; i++)
      add_names(order, member(bs.b[i], "properties"));
    props = json_object_new_object();
    req = json_object_new_array();
    for (size_t k = 0; k < json_object_array_length(order); k++) {
      const char *name =
          json_object_get_string(json_object_array_get_idx(order, k));
      json_object *p;
      int all_require = 1;
      if (member(own, name) != NULL) {
        p = copy(member(own, name));
        all_require = requires(out, name);
      } else if (bs.disc != NULL && strcmp(name, bs.disc) == 0) {
        p = discriminator(&bs);
      } else {
        p = NULL;
      }
      for (size_t i = 0; i < n; i++) {
        in[i] = member(member(bs.b[i], "properties"), name) != NULL;
        if (member(own, name) == NULL && !(in[i] && requires(bs.b[i], name)))
          all_require = 0;
      }
      if (p == NULL)
        p = merged_property(&bs, name, in);
      json_object_object_add(props, name, p);
      if (all_require || requires(out, name))
        json_object_array_add(req, json_object_new_string(name));
    }
  }
  if (*why == NULL) {
    int closed = 1;
    for (size_t i = 0; i < n; i++) {
      json_object *ap = member(bs.b[i], "additionalProperties");
      closed &= json_object_is_type(ap, json_type_boolean) &&
                !json_object_get_boolean(ap);
    }
    json_object_object_del(out, ukey);
    json_object_object_add(out, "type", json_object_new_string("object"));
    json_object_object_add(out, "properties", json_object_get(props));
    if (json_object_array_length(req) > 0)
      json_object_object_add(out, "required", json_object_get(req));
    else
      json_object_object_del(out, "required");
    if (closed)
      json_object_object_add(out, "additionalProperties",
                             json_object_new_boolean(0));
    char *note =
        bs.disc
            ? atl_printf_new(
                  "(One of %zu forms, chosen by '%s'; each property says "
                  "which forms take it.)",
                  n, bs.disc)
            : atl_printf_new(
                  "(One of %zu forms; each property says which take it.)", n);
    if (note != NULL) {
      const char *old = str_of(out, "description");
      char *d = old && *old ? atl_printf_new("%s %s", old, note) : strdup(note);
      if (d != NULL)
        json_object_object_add(out, "description", json_object_new_string(d));
      free(d);
    }
    free(note);
  }
  for (size_t i = 0; bs.b != NULL && i < n; i++)
    json_object_put(bs.b[i]);
  free(bs.b);
  free(bs.tag);
  free(in);
  json_object_put(order);
  json_object_put(props);
  json_object_put(req);
  if (*why != NULL) {
    json_object_put(out);
    return NULL;
  }
  return out;
}

/* ---- Gemini: references inlined, documented keywords only ---- */

/* The JSON Schema keywords Gemini documents for its JSON-Schema fields
 * (parametersJsonSchema, responseJsonSchema), $-keywords aside: what goes
 * to Gemini is limited to these, so that nothing depends on how it treats
 * the others. */
static const char *const gemini_keys[] = {"type",        "format",
                                          "title",       "description",
                                          "enum",        "items",
                                          "prefixItems", "minItems",
                                          "maxItems",    "minimum",
                                          "maximum",     "anyOf",
                                          "properties",  "additionalProperties",
                                          "required",    "propertyOrdering",
                                          NULL};

static int gemini_key(const char *k) {
  for (size_t i = 0; gemini_keys[i] != NULL; i++)
    if (strcmp(gemini_keys[i], k) == 0)
      return 1;
  return 0;
}

#define MAX_DEPTH 64

/* Inlining copies a definition at each use, so shared definitions used
 * from shared definitions multiply: past this many nodes the schema is
 * refused rather than sent (or built) at any size. */
#define MAX_GEMINI_NODES 20000

typedef struct {
  json_object *root;
  const char *stack[MAX_DEPTH]; /* the references being inlined */
  int n_stack;
  size_t nodes;
  char *why;
} gem_t;

static json_object *gem(gem_t *g, json_object *s, int depth);

static int is_number(json_object *v) {
  return json_object_is_type(v, json_type_int) ||
         json_object_is_type(v, json_type_double);
}

/* minimum/maximum from the inclusive or the exclusive keyword: the nearest
 * Gemini can say; the stricter bound wins. */
static void bound(json_object *out, const char *key, json_object *v,
                  int lower) {
  json_object *old = member(out, key);
  if (old != NULL) {
    double a = json_object_get_double(old), b = json_object_get_double(v);
    if (lower ? b <= a : b >= a)
      return;
  }
  json_object_object_add(out, key, copy(v));
}

/* (A schema false admits nothing: as a choice among others it is left
 * out.) */
static json_object *gem_list(gem_t *g, json_object *arr, int depth) {
  json_object *out = json_object_new_array();
  for (size_t i = 0; json_object_is_type(arr, json_type_array) &&
                     i < json_object_array_length(arr);
       i++) {
    json_object *one = gem(g, json_object_array_get_idx(arr, i), depth + 1);
    if (one != NULL)
      json_object_array_add(out, one);
  }
  return out;
}

static json_object *gem_object(gem_t *g, json_object *s, int depth) {
  json_object *out = json_object_new_object(), *deflt = NULL;
  json_object_object_foreach(s, k, v) {
    if (strcmp(k, "type") == 0 || strcmp(k, "format") == 0 ||
        strcmp(k, "title") == 0 || strcmp(k, "description") == 0) {
      if (json_object_is_type(v, json_type_string) ||
          (k[0] == 't' && k[1] == 'y' &&
           json_object_is_type(v, json_type_array)))
        json_object_object_add(out, k, copy(v));
    } else if (strcmp(k, "enum") == 0 || strcmp(k, "const") == 0) {
      /* Gemini's enums are of strings and numbers; a const is an enum of
       * one. Anything else is left to the host's validation. */
      json_object *vals = json_object_new_array();
      int ok = 1;
      if (k[0] == 'c') {
        ok = json_object_is_type(v, json_type_string) || is_number(v);
        if (ok)
          json_object_array_add(vals, copy(v));
      } else {
        for (size_t i = 0; json_object_is_type(v, json_type_array) &&
                           i < json_object_array_length(v);
             i++) {
          json_object *e = json_object_array_get_idx(v, i);
          ok &= json_object_is_type(e, json_type_string) || is_number(e);
          json_object_array_add(vals, copy(e));
        }
        ok &= json_object_is_type(v, json_type_array);
      }
      if (ok && json_object_array_length(vals) > 0)
        json_object_object_add(out, "enum", vals);
      else
        json_object_put(vals);
    } else if (strcmp(k, "properties") == 0) {
      /* A property whose schema is false can never be given: left out,
       * the host's validation still refuses it. */
      json_object *props = json_object_new_object();
      json_object_object_foreach(v, pk, pv) {
        json_object *one = gem(g, pv, depth + 1);
        if (one != NULL)
          json_object_object_add(props, pk, one);
      }
      json_object_object_add(out, k, props);
    } else if (strcmp(k, "required") == 0 ||
               strcmp(k, "propertyOrdering") == 0) {
      if (json_object_is_type(v, json_type_array))
        json_object_object_add(out, k, copy(v));
    } else if (strcmp(k, "items") == 0) {
      /* Draft 4's array of item schemas is 2020-12's prefixItems. */
      if (json_object_is_type(v, json_type_array))
        json_object_object_add(out, "prefixItems", gem_list(g, v, depth));
      else if (json_object_is_type(v, json_type_object)) {
        json_object *one = gem(g, v, depth + 1);
        if (one != NULL)
          json_object_object_add(out, k, one);
      }
    } else if (strcmp(k, "prefixItems") == 0) {
      json_object_object_add(out, k, gem_list(g, v, depth));
    } else if (strcmp(k, "minItems") == 0 || strcmp(k, "maxItems") == 0) {
      if (is_number(v))
        json_object_object_add(out, k,
                               json_object_new_int64(json_object_get_int64(v)));
    } else if (strcmp(k, "minimum") == 0 ||
               strcmp(k, "exclusiveMinimum") == 0) {
      if (is_number(v))
        bound(out, "minimum", v, 1);
    } else if (strcmp(k, "maximum") == 0 ||
               strcmp(k, "exclusiveMaximum") == 0) {
      if (is_number(v))
        bound(out, "maximum", v, 0);
    } else if (strcmp(k, "anyOf") == 0 || strcmp(k, "oneOf") == 0) {
      /* oneOf's "exactly one" becomes "at least one", as Gemini reads it
       * anyway; the plugins' unions have branches that exclude each
       * other. */
      json_object *any = member(out, "anyOf"), *items = gem_list(g, v, depth);
      if (any == NULL) {
        json_object_object_add(out, "anyOf", items);
      } else {
        for (size_t i = 0; i < json_object_array_length(items); i++)
          json_object_array_add(
              any, json_object_get(json_object_array_get_idx(items, i)));
        json_object_put(items);
      }
    } else if (strcmp(k, "additionalProperties") == 0) {
      if (json_object_is_type(v, json_type_boolean))
        json_object_object_add(out, k, copy(v));
      else if (json_object_is_type(v, json_type_object))
        json_object_object_add(out, k, gem(g, v, depth + 1));
    } else if (strcmp(k, "default") == 0) {
      deflt = v;
    } else if (strcmp(k, "allOf") == 0) {
      if (g->why == NULL)
        g->why = strdup("allOf below the root cannot be said to Gemini");
    }
    /* Everything else is left out (pattern, lengths, uniqueItems, $defs,
     * $comment, examples, ...): the host's validation checks it, and its
     * errors tell the model. */
  }
  /* A default Gemini is not told about goes in the description. */
  const char *d = str_of(out, "description");
  if (deflt != NULL && (d == NULL || strstr(d, "efault") == NULL)) {
    const char *t = json_object_to_json_string_ext(
        deflt, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (t != NULL && strlen(t) <= 120) {
      char *nd = d && *d ? atl_printf_new("%s Default: %s.", d, t)
                         : atl_printf_new("Default: %s.", t);
      if (nd != NULL)
        json_object_object_add(out, "description", json_object_new_string(nd));
      free(nd);
    }
  }
  return out;
}

static json_object *gem(gem_t *g, json_object *s, int depth) {
  if (json_object_is_type(s, json_type_boolean))
    return json_object_get_boolean(s) ? json_object_new_object() : NULL;
  if (!json_object_is_type(s, json_type_object))
    return json_object_new_object();
  if (++g->nodes > MAX_GEMINI_NODES) {
    if (g->why == NULL)
      g->why = atl_printf_new(
          "the schema grows past %d nodes when its references are "
          "inlined for Gemini",
          MAX_GEMINI_NODES);
    return json_object_new_object();
  }
  if (depth > MAX_DEPTH) {
    if (g->why == NULL)
      g->why = strdup("the schema nests deeper than 64 levels");
    return json_object_new_object();
  }
  const char *ref = str_of(s, "$ref");
  if (ref == NULL)
    return gem_object(g, s, depth);
  json_object *target = resolve(g->root, ref);
  for (int i = 0; i < g->n_stack; i++)
    if (strcmp(g->stack[i], ref) == 0) {
      if (g->why == NULL)
        g->why = atl_printf_new(
            "'%s' refers to itself (a recursive schema cannot be "
            "inlined for Gemini)",
            ref);
      return json_object_new_object();
    }
  if (target == NULL || g->n_stack >= MAX_DEPTH) {
    if (g->why == NULL)
      g->why =
          atl_printf_new("the reference '%s' names nothing in the schema", ref);
    return json_object_new_object();
  }
  /* The definition, the keywords beside the reference taking
   * precedence. */
  json_object *merged = json_object_is_type(target, json_type_object)
                            ? copy(target)
                            : json_object_new_object();
  json_object_object_foreach(s, k, v) {
    if (strcmp(k, "$ref") != 0)
      json_object_object_add(merged, k, copy(v));
  }
  g->stack[g->n_stack++] = ref;
  json_object *out = gem(g, merged, depth + 1);
  g->n_stack--;
  json_object_put(merged);
  return out;
}

json_object *atl_wire_schema(json_object *schema, atl_wire_t w, char **why) {
  *why = NULL;
  json_object *flat = flatten(schema, why);
  if (flat == NULL || w != ATL_WIRE_GEMINI)
    return flat;
  gem_t g = {.root = flat};
  json_object *out = gem(&g, flat, 0);
  json_object_put(flat);
  if (g.why != NULL) {
    json_object_put(out);
    *why = g.why;
    return NULL;
  }
  return out;
}

int atl_wire_is_empty(json_object *wire) {
  json_object *p = member(wire, "properties");
  return !json_object_is_type(p, json_type_object) ||
         json_object_object_length(p) == 0;
}

/* ---- the lint ---- */

static int name_ok(const char *name, atl_wire_t w) {
  size_t n = name ? strlen(name) : 0;
  if (n == 0 || n > 64)
    return 0;
  if (w == ATL_WIRE_GEMINI &&
      !(isalpha((unsigned char)name[0]) || name[0] == '_'))
    return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)name[i];
    if (!(isalnum(c) || c == '_' || c == '-' ||
          (w == ATL_WIRE_GEMINI && (c == '.' || c == ':'))))
      return 0;
  }
  return 1;
}

typedef struct {
  atl_wire_t w;
  json_object *root;
  const char *refs[MAX_DEPTH]; /* the references followed to get here */
  int n_refs;
  /* References already walked whole: each is checked once, or shared
   * definitions would be walked again at every use, multiplying. */
  json_object *done;
  char *why;
} lint_t;

static const char *const json_types[] = {
    "null", "boolean", "object", "array", "number", "string", "integer", NULL};

static int json_type_ok(json_object *t) {
  if (json_object_is_type(t, json_type_string)) {
    for (size_t i = 0; json_types[i]; i++)
      if (strcmp(json_types[i], json_object_get_string(t)) == 0)
        return 1;
    return 0;
  }
  if (!json_object_is_type(t, json_type_array) ||
      json_object_array_length(t) == 0)
    return 0;
  for (size_t i = 0; i < json_object_array_length(t); i++)
    if (!json_type_ok(json_object_array_get_idx(t, i)) ||
        !json_object_is_type(json_object_array_get_idx(t, i), json_type_string))
      return 0;
  return 1;
}

static int is_array_schema(json_object *s) {
  json_object *t = member(s, "type");
  if (json_object_is_type(t, json_type_string))
    return strcmp(json_object_get_string(t), "array") == 0;
  for (size_t i = 0; json_object_is_type(t, json_type_array) &&
                     i < json_object_array_length(t);
       i++)
    if (strcmp(json_object_get_string(json_object_array_get_idx(t, i)),
               "array") == 0)
      return 1;
  return 0;
}

static void lint_at(lint_t *l, json_object *s, const char *path, int depth);

static void lint_child(lint_t *l, json_object *s, const char *path,
                       const char *key, int depth) {
  char *p = atl_printf_new("%s/%s", path, key);
  if (p != NULL)
    lint_at(l, s, p, depth + 1);
  free(p);
}

static void lint_at(lint_t *l, json_object *s, const char *path, int depth) {
  if (l->why != NULL)
    return;
  if (json_object_is_type(s, json_type_boolean))
    return;
  if (!json_object_is_type(s, json_type_object)) {
    l->why =
        atl_printf_new("%s: a schema must be an object or a boolean", path);
    return;
  }
  if (depth > MAX_DEPTH) {
    l->why = atl_printf_new("%s: the schema nests deeper than %d levels", path,
                            MAX_DEPTH);
    return;
  }
  int gemini = l->w == ATL_WIRE_GEMINI;
  json_object_object_foreach(s, k, v) {
    if (l->why != NULL)
      return;
    if (gemini && !gemini_key(k)) {
      l->why =
          atl_printf_new("%s: Gemini's schema has no keyword '%s'", path, k);
    } else if (strcmp(k, "type") == 0 && !json_type_ok(v)) {
      l->why = atl_printf_new("%s/type: not a JSON Schema type", path);
    } else if (strcmp(k, "items") == 0 &&
               !json_object_is_type(v, json_type_object) &&
               !json_object_is_type(v, json_type_boolean)) {
      l->why = atl_printf_new(
          "%s/items: draft 2020-12 wants one schema (an array of "
          "them is prefixItems)",
          path);
    } else if ((strcmp(k, "exclusiveMinimum") == 0 ||
                strcmp(k, "exclusiveMaximum") == 0) &&
               !is_number(v)) {
      l->why = atl_printf_new("%s/%s: draft 2020-12 wants a number", path, k);
    } else if (strcmp(k, "required") == 0) {
      int ok = json_object_is_type(v, json_type_array), unique = 1;
      for (size_t i = 0; ok && i < json_object_array_length(v); i++) {
        json_object *a = json_object_array_get_idx(v, i);
        ok = json_object_is_type(a, json_type_string);
        for (size_t j = 0; ok && unique && j < i; j++)
          unique =
              strcmp(json_object_get_string(a),
                     json_object_get_string(json_object_array_get_idx(v, j))) !=
              0;
      }
      if (!ok)
        l->why =
            atl_printf_new("%s/required: not an array of property names", path);
      else if (!unique)
        l->why = atl_printf_new(
            "%s/required: a name twice (draft 2020-12 wants them "
            "unique)",
            path);
    } else if (strcmp(k, "properties") == 0 || strcmp(k, "$defs") == 0) {
      if (!json_object_is_type(v, json_type_object)) {
        l->why = atl_printf_new("%s/%s: not an object", path, k);
        continue;
      }
      json_object_object_foreach(v, pk, pv) {
        char *p = atl_printf_new("%s/%s", path, k);
        if (p != NULL)
          lint_child(l, pv, p, pk, depth);
        free(p);
      }
    } else if (strcmp(k, "items") == 0 ||
               strcmp(k, "additionalProperties") == 0 ||
               strcmp(k, "not") == 0) {
      lint_child(l, v, path, k, depth);
    } else if (strcmp(k, "anyOf") == 0 || strcmp(k, "oneOf") == 0 ||
               strcmp(k, "allOf") == 0 || strcmp(k, "prefixItems") == 0) {
      if (!json_object_is_type(v, json_type_array) ||
          json_object_array_length(v) == 0) {
        l->why =
            atl_printf_new("%s/%s: not a non-empty array of schemas", path, k);
        continue;
      }
      for (size_t i = 0; i < json_object_array_length(v); i++) {
        char idx[32];
        snprintf(idx, sizeof(idx), "%s/%zu", k, i);
        lint_child(l, json_object_array_get_idx(v, i), path, idx, depth);
      }
    } else if (strcmp(k, "enum") == 0) {
      int ok = json_object_is_type(v, json_type_array) &&
               json_object_array_length(v) > 0;
      for (size_t i = 0; ok && gemini && i < json_object_array_length(v); i++) {
        json_object *e = json_object_array_get_idx(v, i);
        ok = json_object_is_type(e, json_type_string) || is_number(e);
      }
      if (!ok)
        l->why =
            atl_printf_new("%s/enum: %s", path,
                           gemini ? "Gemini takes enums of strings and numbers"
                                  : "not a non-empty array");
    } else if (strcmp(k, "$ref") == 0) {
      /* A reference must name a schema of the same document, and
       * following references must never come back to one being followed:
       * the APIs' resolvers recurse without end on a cycle. */
      const char *ref = json_object_get_string(v);
      json_object *target = resolve(l->root, ref);
      if (target == NULL) {
        l->why = atl_printf_new("%s/$ref: '%s' names nothing in the schema",
                                path, ref);
        continue;
      }
      for (int i = 0; i < l->n_refs; i++)
        if (strcmp(l->refs[i], ref) == 0) {
          l->why =
              atl_printf_new("%s/$ref: '%s' refers back to itself (a recursive "
                             "schema)",
                             path, ref);
          break;
        }
      if (l->why != NULL || l->n_refs >= MAX_DEPTH ||
          json_object_object_get_ex(l->done, ref, NULL))
        continue;
      l->refs[l->n_refs++] = ref;
      lint_at(l, target, ref, depth + 1);
      l->n_refs--;
      if (l->why == NULL)
        json_object_object_add(l->done, ref, NULL);
    }
  }
  /* OpenAI: "array schema missing items", in non-strict mode too. */
  if (l->why == NULL && is_array_schema(s) && member(s, "items") == NULL &&
      member(s, "prefixItems") == NULL)
    l->why = atl_printf_new(
        "%s: an array schema without items (OpenAI refuses it)", path);
}

char *atl_wire_lint(const char *name, json_object *wire, atl_wire_t w) {
  const char *pname = atl_wire_name(w);
  if (!name_ok(name, w))
    return atl_printf_new(
        "%s: the tool name '%s' is not %s", pname, name ? name : "",
        w == ATL_WIRE_GEMINI ? "a letter or '_' followed by at most 63 of "
                               "[a-zA-Z0-9_.:-]"
                             : "1 to 64 of [a-zA-Z0-9_-]");
  json_object *ty = member(wire, "type");
  if (!json_object_is_type(wire, json_type_object) ||
      !json_object_is_type(ty, json_type_string) ||
      strcmp(json_object_get_string(ty), "object") != 0)
    return atl_printf_new("%s: the schema's root must have type 'object'",
                          pname);
  static const char *const top[] = {"oneOf", "anyOf", "allOf", "enum",
                                    "const", "not",   NULL};
  for (size_t i = 0; top[i] != NULL; i++)
    if (member(wire, top[i]) != NULL)
      return atl_printf_new(
          "%s: the schema has '%s' at its root, which the API "
          "refuses",
          pname, top[i]);
  lint_t l = {.w = w, .root = wire, .done = json_object_new_object()};
  lint_at(&l, wire, "#", 0);
  json_object_put(l.done);
  if (l.why == NULL)
    return NULL;
  char *out = atl_printf_new("%s: %s", pname, l.why);
  free(l.why);
  return out;
}

char *atl_wire_check_tool(const char *name, json_object *schema) {
  for (int w = 0; w < ATL_WIRE_N; w++) {
    char *why = NULL;
    json_object *wire = atl_wire_schema(schema, (atl_wire_t)w, &why);
    if (wire == NULL) {
      char *out = atl_printf_new("%s: %s", atl_wire_name((atl_wire_t)w),
                                 why ? why : "out of memory");
      free(why);
      return out;
    }
    char *bad = atl_wire_lint(name, wire, (atl_wire_t)w);
    json_object_put(wire);
    if (bad != NULL)
      return bad;
  }
  return NULL;
}
