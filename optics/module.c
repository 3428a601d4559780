/* ModuleObj expansion (module.h), after upstream's ModuleObj.expandObjs,
 * expandArray, expandObject, expandString and parseVariableRange. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* asprintf */
#endif
#include "fail.h"
#include "module.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsnum.h"

/* Compiled templates, by text: a loop evaluates the same ones many times. */
typedef struct centry {
  struct centry *next;
  atl_op_mexpr_t *e;
  char text[];
} centry_t;

#define CACHE_SLOTS 256

/* The whole expansion: limits and the first error. */
typedef struct {
  json_object *modules;
  atl_op_random_cb random;
  void *user;
  long objs;
  size_t bytes;
  char *err;
  int rc;
} glob_t_;

/* One module instance being expanded. */
typedef struct {
  glob_t_ *g;
  const char *name;
  char *where; /* "scene object 3 (module "X")", and the nesting */
  double max_loop;
  atl_op_texdefs_t *defs;
  centry_t *cache[CACHE_SLOTS];
  char path[512]; /* objs[0].p1.x: the field being expanded */
  size_t plen;
  int jdepth;
} mod_t;

static int expand_instance(glob_t_ *g, json_object *obj, const char *where,
                           int depth, json_object *out);

/* Records the first error as "<where>: <path>: <message>". */
__attribute__((format(printf, 2, 3))) static int merr(mod_t *m, const char *fmt,
                                                      ...) {
  if (m->g->err)
    return m->g->rc;
  va_list ap;
  va_start(ap, fmt);
  char *msg = atl__op_vfmt(fmt, ap);
  va_end(ap);
  if (msg == NULL || asprintf(&m->g->err, "%s: %s%s%s", m->where, m->path,
                              m->plen ? ": " : "", msg) < 0)
    m->g->err = NULL;
  free(msg);
  m->g->rc = m->g->err ? -EINVAL : -ENOMEM;
  return m->g->rc;
}

static int oom(mod_t *m) {
  if (m->g->rc == 0)
    m->g->rc = -ENOMEM;
  return m->g->rc;
}

/* Appends ".key" or "[i]" to the path; returns the old length. */
static size_t path_push(mod_t *m, const char *key, long idx) {
  size_t old = m->plen;
  int n = key ? snprintf(m->path + old, sizeof(m->path) - old, "%s%s",
                         old ? "." : "", key)
              : snprintf(m->path + old, sizeof(m->path) - old, "[%ld]", idx);
  if (n > 0)
    m->plen = old + (size_t)n < sizeof(m->path) ? old + (size_t)n
                                                : sizeof(m->path) - 1;
  return old;
}

static void path_pop(mod_t *m, size_t old) {
  m->plen = old;
  m->path[old] = '\0';
}

static unsigned hash(const char *s, size_t n) {
  unsigned h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

/* The compiled expression for src[0..n), from the cache or compiled now.
 * The cache owns it. */
static atl_op_mexpr_t *compiled(mod_t *m, const char *src, size_t n,
                                const char *what) {
  unsigned h = hash(src, n) % CACHE_SLOTS;
  for (centry_t *c = m->cache[h]; c; c = c->next)
    if (strlen(c->text) == n && memcmp(c->text, src, n) == 0)
      return c->e;
  atl_op_mexpr_t *e;
  char *err = NULL;
  int rc = atl__op_mexpr_compile(src, n, &e, &err);
  if (rc < 0) {
    merr(m,
         "%s \"%.*s\" does not parse: %s. Write a mathjs expression such "
         "as `x_1 + 2*cos(theta)`",
         what, (int)(n > 200 ? 200 : n), src, err ? err : "out of memory");
    free(err);
    return NULL;
  }
  centry_t *c = malloc(sizeof(*c) + n + 1);
  if (c == NULL) {
    atl__op_mexpr_free(e);
    oom(m);
    return NULL;
  }
  memcpy(c->text, src, n);
  c->text[n] = '\0';
  c->e = e;
  c->next = m->cache[h];
  m->cache[h] = c;
  return e;
}

/* Evaluates src[0..n) in scope. */
static int evaluate(mod_t *m, const char *src, size_t n, atl_op_scope_t *scope,
                    const char *what, atl_op_value_t *v) {
  atl_op_mexpr_t *e = compiled(m, src, n, what);
  if (e == NULL)
    return m->g->rc;
  char *err = NULL;
  if (atl__op_mexpr_eval(e, scope, v, &err) < 0) {
    const char *hint = strncmp(err, "Undefined symbol", 16) == 0
                           ? ". Define it as a module param, a var, a loop "
                             "variable or a control point (x_1, y_1, ...)"
                           : "";
    merr(m, "%s \"%.*s\": %s%s", what, (int)(n > 200 ? 200 : n), src, err,
         hint);
    free(err);
    return m->g->rc;
  }
  return 0;
}

static int count(mod_t *m, size_t bytes) {
  if (++m->g->objs > ATL_OP_MODULE_MAX_OBJS)
    return merr(m,
                "the expansion makes more than %d objects and values "
                "(loops or nested modules too large); lower the loop "
                "ranges or maxLoopLength",
                ATL_OP_MODULE_MAX_OBJS);
  m->g->bytes += bytes;
  if (m->g->bytes > ATL_OP_MODULE_MAX_BYTES)
    return merr(m,
                "the expansion makes more than %u MiB of text; shorten "
                "the templates or the loops",
                ATL_OP_MODULE_MAX_BYTES >> 20);
  return 0;
}

/* A value as JavaScript's string concatenation writes it. */
static int value_text(mod_t *m, const atl_op_value_t *v, char *buf) {
  switch (v->kind) {
  case ATL_OP_VAL_NUM:
    atl__op_jsnum(v->num, buf);
    return 0;
  case ATL_OP_VAL_BOOL:
    strcpy(buf, v->num != 0 ? "true" : "false");
    return 0;
  case ATL_OP_VAL_UNDEF:
    strcpy(buf, "undefined");
    return 0;
  default:
    return merr(m, "a template evaluates to a function, not a value; call "
                   "it, as in `f(1)`");
  }
}

/* expandString: NULL in *out (and 0) stands for undefined. */
static int expand_string(mod_t *m, const char *s, atl_op_scope_t *scope,
                         json_object **out) {
  *out = NULL;
  size_t len = strlen(s), nparts = 1;
  for (size_t i = 0; i < len; i++)
    nparts += s[i] == '`';
  if ((nparts == 3 && s[0] == '`' && s[len - 1] == '`') ||
      (nparts == 2 && s[0] == '`')) {
    /* One block: the value itself ("`x" unclosed is accepted, as
     * upstream only warns). */
    size_t n = nparts == 3 ? len - 2 : len - 1;
    atl_op_value_t v;
    if (evaluate(m, s + 1, n, scope, "template", &v) < 0)
      return m->g->rc;
    if (v.kind == ATL_OP_VAL_FUNC)
      return value_text(m, &v, NULL);
    if (v.kind == ATL_OP_VAL_UNDEF)
      return count(m, 0);
    *out = v.kind == ATL_OP_VAL_BOOL ? json_object_new_boolean(v.num != 0)
                                     : json_object_new_double(v.num);
    return *out ? count(m, 0) : oom(m);
  }
  char *res = NULL;
  size_t rlen = 0;
  FILE *f = open_memstream(&res, &rlen);
  if (f == NULL)
    return oom(m);
  const char *p = s, *end = s + len;
  int in_text = 1, rc = 0;
  while (rc == 0) {
    const char *tick = memchr(p, '`', (size_t)(end - p));
    const char *stop = tick ? tick : end;
    if (in_text) {
      fwrite(p, 1, (size_t)(stop - p), f);
    } else if (stop == p && tick) {
      /* An empty part followed by more: a ``double-backtick`` equation,
       * which must be closed by two backticks. */
      const char *q = tick + 1;
      const char *close = memchr(q, '`', (size_t)(end - q));
      if (close == NULL || close + 1 >= end || close[1] != '`') {
        rc = merr(m, "unclosed equation ``%.*s: close it with ``",
                  (int)((end - q) > 200 ? 200 : (end - q)), q);
        break;
      }
      char *tex = NULL, *err = NULL;
      if (atl__op_mexpr_to_tex(q, (size_t)(close - q), scope, m->defs, &tex,
                               &err) < 0) {
        rc = merr(m, "equation ``%.*s``: %s",
                  (int)((close - q) > 200 ? 200 : (close - q)), q,
                  err ? err : "out of memory");
        free(err);
        break;
      }
      fputs(tex, f);
      free(tex);
      p = close + 2;
      in_text = 1; /* the part after the closing pair is text */
      if (p > end)
        break;
      continue;
    } else {
      atl_op_value_t v;
      char buf[ATL_OP_JSNUM_MAX + 16];
      rc = evaluate(m, p, (size_t)(stop - p), scope, "template", &v);
      if (rc == 0)
        rc = value_text(m, &v, buf);
      if (rc == 0)
        fputs(buf, f);
    }
    if (tick == NULL)
      break;
    p = tick + 1;
    in_text = !in_text;
  }
  if (fclose(f) != 0 || res == NULL) {
    free(res);
    return rc ? rc : oom(m);
  }
  if (rc == 0 && (rc = count(m, rlen)) == 0) {
    *out = json_object_new_string_len(res, (int)rlen);
    if (*out == NULL)
      rc = oom(m);
  }
  free(res);
  return rc;
}

static int expand_array(mod_t *m, json_object *arr, atl_op_scope_t *scope,
                        json_object **out);

/* Numbers, booleans and null are copied, so that the caller may change
 * the output without touching the scene document. */
static int copy_scalar(mod_t *m, json_object *v, json_object **out) {
  *out = NULL;
  if (v == NULL)
    return count(m, 0);
  if (json_object_deep_copy(v, out, NULL) != 0)
    return oom(m);
  return count(m, 0);
}

/* expandObject: every key but "for" and "if"; null becomes {}, as
 * upstream's typeof null === 'object' makes it. */
static int expand_object(mod_t *m, json_object *obj, atl_op_scope_t *scope,
                         json_object **out) {
  if (++m->jdepth > ATL_OP_MODULE_MAX_JSON_DEPTH) {
    m->jdepth--;
    return merr(m, "objects nested deeper than %d levels",
                ATL_OP_MODULE_MAX_JSON_DEPTH);
  }
  int rc = count(m, 0);
  json_object *res = rc == 0 ? json_object_new_object() : NULL;
  if (rc == 0 && res == NULL)
    rc = oom(m);
  if (rc == 0 && obj != NULL) {
    json_object_object_foreach(obj, key, val) {
      if (strcmp(key, "for") == 0 || strcmp(key, "if") == 0)
        continue;
      size_t old = path_push(m, key, 0);
      json_object *v = NULL;
      switch (json_object_get_type(val)) {
      case json_type_string:
        rc = expand_string(m, json_object_get_string(val), scope, &v);
        break;
      case json_type_array:
        rc = expand_array(m, val, scope, &v);
        break;
      case json_type_object:
      case json_type_null:
        rc = expand_object(m, val, scope, &v);
        break;
      default:
        rc = copy_scalar(m, val, &v);
        break;
      }
      path_pop(m, old);
      if (rc == 0 && v != NULL && json_object_object_add(res, key, v) != 0) {
        json_object_put(v);
        rc = oom(m);
      }
      if (rc)
        break;
    }
  }
  m->jdepth--;
  if (rc) {
    json_object_put(res);
    return rc;
  }
  *out = res;
  return 0;
}

typedef struct {
  char *name;
  double start, step, end, def;
} range_t;

/* parseVariableRange: "name=start:step:end[:default]", the name trimmed,
 * the others mathjs expressions; only the text between the first and the
 * second '=' is read, and a default only with exactly four parts. */
static int parse_range(mod_t *m, const char *str, atl_op_scope_t *scope,
                       range_t *r) {
  memset(r, 0, sizeof(*r));
  const char *eq = strchr(str, '=');
  if (eq == NULL)
    return merr(m,
                "range \"%.200s\" has no '='; write "
                "\"name=start:step:end\"",
                str);
  const char *a = str, *b = eq;
  while (a < b && (*a == ' ' || *a == '\t' || *a == '\n'))
    a++;
  while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\n'))
    b--;
  if ((r->name = strndup(a, (size_t)(b - a))) == NULL)
    return oom(m);
  const char *rest = eq + 1, *rend = strchr(rest, '=');
  if (rend == NULL)
    rend = rest + strlen(rest);
  const char *parts[5];
  size_t lens[5], np = 0;
  for (const char *p = rest; np < 5;) {
    const char *c = memchr(p, ':', (size_t)(rend - p));
    parts[np] = p;
    lens[np++] = (size_t)((c ? c : rend) - p);
    if (c == NULL)
      break;
    p = c + 1;
  }
  if (np < 3)
    return merr(m, "range \"%.200s\" needs start:step:end after '='", str);
  double *dst[4] = {&r->start, &r->step, &r->end, &r->def};
  for (size_t i = 0; i < (np == 4 ? 4u : 3u); i++) {
    atl_op_value_t v;
    if (evaluate(m, parts[i], lens[i], scope, "range bound", &v) < 0)
      return m->g->rc;
    if (v.kind != ATL_OP_VAL_NUM && v.kind != ATL_OP_VAL_BOOL)
      return merr(m, "range \"%.200s\": \"%.*s\" is not a number", str,
                  (int)lens[i], parts[i]);
    *dst[i] = v.num;
  }
  if (np != 4)
    r->def = r->start;
  return 0;
}

/* Binds the loop variables for combination idx (the first variable
 * outermost) into a copy of scope, inner variables first so that the
 * outer one wins a shared name, as Object.assign in upstream does. */
static atl_op_scope_t *loop_scope(mod_t *m, atl_op_scope_t *scope,
                                  const range_t *v, double *const *vals,
                                  const long *counts, size_t nv, long idx) {
  atl_op_scope_t *s = atl__op_scope_copy(scope);
  for (size_t k = nv; s && k-- > 0;) {
    long i = idx % counts[k];
    idx /= counts[k];
    if (atl__op_scope_set_num(s, v[k].name, vals[k][i]) < 0) {
      atl__op_scope_free(s);
      s = NULL;
    }
  }
  if (s == NULL)
    oom(m);
  return s;
}

static int truthy_if(mod_t *m, json_object *cond, atl_op_scope_t *scope,
                     int *keep) {
  if (!json_object_is_type(cond, json_type_string))
    return merr(m, "\"if\" must be a string holding a mathjs condition, "
                   "such as \"i != 3\"");
  const char *s = json_object_get_string(cond);
  atl_op_value_t v;
  if (evaluate(m, s, strlen(s), scope, "condition", &v) < 0)
    return m->g->rc;
  *keep = v.kind == ATL_OP_VAL_FUNC ||
          ((v.kind == ATL_OP_VAL_NUM || v.kind == ATL_OP_VAL_BOOL) &&
           v.num != 0 && !isnan(v.num));
  return 0;
}

/* One element with "for": loops, then "if" per iteration. */
static int expand_loop(mod_t *m, json_object *el, json_object *forv,
                       atl_op_scope_t *scope, json_object *res) {
  range_t v[16];
  long counts[16];
  double *vals[16] = {0};
  size_t nv = 0;
  int rc = 0;
  json_object *cond = NULL;
  int has_if = json_object_object_get_ex(el, "if", &cond);
  if (json_object_is_type(forv, json_type_string)) {
    rc = parse_range(m, json_object_get_string(forv), scope, &v[nv++]);
  } else if (json_object_is_type(forv, json_type_array)) {
    size_t n = json_object_array_length(forv);
    if (n > 16)
      return merr(m,
                  "\"for\" has %zu loop variables; at most 16 are "
                  "supported",
                  n);
    for (size_t i = 0; i < n && rc == 0; i++) {
      json_object *s = json_object_array_get_idx(forv, i);
      if (!json_object_is_type(s, json_type_string))
        rc = merr(m,
                  "\"for\"[%zu] is not a string; write "
                  "\"name=start:step:end\"",
                  i);
      else
        rc = parse_range(m, json_object_get_string(s), scope, &v[nv++]);
    }
  }
  /* The sizes, upstream's checks first, then ours on the product. */
  long total = 1;
  for (size_t k = 0; k < nv && rc == 0; k++) {
    double span = v[k].end - v[k].start, step = v[k].step;
    if (step == 0 || span * step < 0 || span / step + 1 > m->max_loop)
      rc = merr(m,
                "loop variable %s=%g:%g:%g takes more than "
                "maxLoopLength=%g values (or never reaches its end); "
                "use a larger step or raise the module's maxLoopLength",
                v[k].name, v[k].start, step, v[k].end, m->max_loop);
    else if (span / step + 1 > ATL_OP_MODULE_MAX_OBJS)
      rc = merr(m, "loop variable %s takes more than %d values", v[k].name,
                ATL_OP_MODULE_MAX_OBJS);
    if (rc)
      break;
    /* The values as upstream's `value += step` makes them; a step lost
     * in the start's rounding would never end. */
    double q = span / step;
    long cap = isfinite(q) && q >= 0 ? (long)q + 2 : 2;
    if ((vals[k] = malloc((size_t)cap * sizeof(double))) == NULL) {
      rc = oom(m);
      break;
    }
    counts[k] = 0;
    for (double x = v[k].start; x <= v[k].end && rc == 0; x += step) {
      if (counts[k] == cap)
        rc = merr(m,
                  "loop variable %s never reaches %g in steps of %g "
                  "(the step is lost in rounding); use a larger step",
                  v[k].name, v[k].end, step);
      else
        vals[k][counts[k]++] = x;
    }
    if (rc)
      break;
    total *= counts[k];
    if (total > m->max_loop)
      rc = merr(m,
                "the loops make more than maxLoopLength=%g objects; "
                "narrow the ranges or raise maxLoopLength",
                m->max_loop);
    else if (total > ATL_OP_MODULE_MAX_OBJS)
      rc = merr(m,
                "the loops make more than %d objects, the most one "
                "expansion may make; narrow the ranges",
                ATL_OP_MODULE_MAX_OBJS);
  }
  for (long i = 0; rc == 0 && i < (nv ? total : 1); i++) {
    atl_op_scope_t *s =
        nv ? loop_scope(m, scope, v, vals, counts, nv, i) : scope;
    if (s == NULL) {
      rc = m->g->rc;
      break;
    }
    int keep = 1;
    if (has_if)
      rc = truthy_if(m, cond, s, &keep);
    json_object *o = NULL;
    if (rc == 0 && keep)
      rc = expand_object(m, el, s, &o);
    if (rc == 0 && o && json_object_array_add(res, o) != 0) {
      json_object_put(o);
      rc = oom(m);
    }
    if (s != scope)
      atl__op_scope_free(s);
  }
  for (size_t k = 0; k < nv; k++) {
    free(v[k].name);
    free(vals[k]);
  }
  return rc;
}

/* expandArray. */
static int expand_array(mod_t *m, json_object *arr, atl_op_scope_t *scope,
                        json_object **out) {
  if (++m->jdepth > ATL_OP_MODULE_MAX_JSON_DEPTH) {
    m->jdepth--;
    return merr(m, "arrays nested deeper than %d levels",
                ATL_OP_MODULE_MAX_JSON_DEPTH);
  }
  json_object *res = json_object_new_array();
  int rc = res ? 0 : oom(m);
  size_t n = json_object_array_length(arr);
  for (size_t i = 0; i < n && rc == 0; i++) {
    json_object *el = json_object_array_get_idx(arr, i), *v = NULL, *x;
    size_t old = path_push(m, NULL, (long)i);
    if (json_object_is_type(el, json_type_object) &&
        json_object_object_get_ex(el, "for", &x)) {
      rc = expand_loop(m, el, x, scope, res);
    } else if (json_object_is_type(el, json_type_object) &&
               json_object_object_get_ex(el, "if", &x)) {
      int keep;
      rc = truthy_if(m, x, scope, &keep);
      if (rc == 0 && keep)
        rc = expand_object(m, el, scope, &v);
    } else if (json_object_is_type(el, json_type_string)) {
      rc = expand_string(m, json_object_get_string(el), scope, &v);
    } else if (json_object_is_type(el, json_type_array)) {
      rc = expand_array(m, el, scope, &v);
    } else if (json_object_is_type(el, json_type_object)) {
      rc = expand_object(m, el, scope, &v);
    } else {
      rc = copy_scalar(m, el, &v);
    }
    path_pop(m, old);
    /* An object left out by its "if" adds nothing; undefined from a
     * template is JSON's null. */
    int is_obj = json_object_is_type(el, json_type_object);
    if (rc == 0 && (v != NULL || !is_obj) && json_object_array_add(res, v) != 0)
      rc = oom(m);
    else if (rc == 0)
      v = NULL;
    json_object_put(v);
  }
  m->jdepth--;
  if (rc) {
    json_object_put(res);
    return rc;
  }
  *out = res;
  return 0;
}

/* A param or coordinate from the scene: numbers and booleans as they are,
 * numeric strings as mathjs converts them. */
static int bind_value(mod_t *m, atl_op_scope_t *s, const char *name,
                      json_object *v) {
  int rc;
  switch (json_object_get_type(v)) {
  case json_type_double:
  case json_type_int:
    rc = atl__op_scope_set_num(s, name, json_object_get_double(v));
    break;
  case json_type_boolean:
    rc = atl__op_scope_set_bool(s, name, json_object_get_boolean(v));
    break;
  case json_type_string: {
    const char *t = json_object_get_string(v);
    char *end;
    double x = strtod(t, &end);
    while (*end == ' ')
      end++;
    if (*t == '\0' || *end != '\0')
      return merr(m,
                  "%s is the string \"%.100s\", not a number; give a "
                  "number",
                  name, t);
    rc = atl__op_scope_set_num(s, name, x);
    break;
  }
  default:
    return merr(m, "%s is not a number; give a number", name);
  }
  return rc < 0 ? oom(m) : 0;
}

static const char *const known_keys[] = {
    "importedFromBeta", "numPoints", "params", "vars", "objs", "maxLoopLength"};

/* The scope of upstream's expandObjs: params, points, random, vars. */
static int module_scope(mod_t *m, json_object *def, json_object *obj,
                        atl_op_scope_t *s) {
  json_object *params = NULL, *decl = NULL, *points = NULL, *vars = NULL, *x;
  int rc = 0;
  json_object_object_get_ex(def, "params", &decl);
  if (decl && !json_object_is_type(decl, json_type_array))
    return merr(m, "the module's \"params\" must be an array of "
                   "\"name=start:step:end:default\" strings");
  if (json_object_object_get_ex(obj, "params", &params) && params) {
    if (!json_object_is_type(params, json_type_object))
      return merr(m, "the ModuleObj's \"params\" must be an object of "
                     "numbers");
    json_object_object_foreach(params, k, v) {
      if ((rc = bind_value(m, s, k, v)) < 0)
        return rc;
    }
  } else {
    /* No params on the object: every declaration's default. */
    atl_op_scope_t *empty = atl__op_scope_new();
    if (empty == NULL)
      return oom(m);
    size_t n = decl ? json_object_array_length(decl) : 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
      json_object *d = json_object_array_get_idx(decl, i);
      range_t r;
      size_t old = path_push(m, "params", 0);
      path_push(m, NULL, (long)i);
      if (!json_object_is_type(d, json_type_string)) {
        rc = merr(m, "not a string; write \"name=start:step:end:default\"");
      } else {
        rc = parse_range(m, json_object_get_string(d), empty, &r);
        if (rc == 0 && atl__op_scope_set_num(s, r.name, r.def) < 0)
          rc = oom(m);
        free(r.name);
      }
      path_pop(m, old);
    }
    atl__op_scope_free(empty);
    if (rc)
      return rc;
  }
  if (json_object_object_get_ex(obj, "points", &points) && points) {
    if (!json_object_is_type(points, json_type_array))
      return merr(m, "the ModuleObj's \"points\" must be an array of "
                     "{\"x\": number, \"y\": number}");
    for (size_t i = 0; i < json_object_array_length(points); i++) {
      json_object *p = json_object_array_get_idx(points, i);
      char xn[32], yn[32];
      snprintf(xn, sizeof(xn), "x_%zu", i + 1);
      snprintf(yn, sizeof(yn), "y_%zu", i + 1);
      json_object *px = NULL, *py = NULL;
      if (!json_object_is_type(p, json_type_object) ||
          !json_object_object_get_ex(p, "x", &px) ||
          !json_object_object_get_ex(p, "y", &py))
        return merr(m, "points[%zu] must be {\"x\": number, \"y\": number}", i);
      if ((rc = bind_value(m, s, xn, px)) < 0 ||
          (rc = bind_value(m, s, yn, py)) < 0)
        return rc;
    }
  } else if (json_object_object_get_ex(def, "numPoints", &x)) {
    /* No points on the object: numPoints points at the origin. */
    int n = json_object_get_int(x);
    for (int i = 0; i < n && i < 10000; i++) {
      char xn[32], yn[32];
      snprintf(xn, sizeof(xn), "x_%d", i + 1);
      snprintf(yn, sizeof(yn), "y_%d", i + 1);
      if (atl__op_scope_set_num(s, xn, 0) < 0 ||
          atl__op_scope_set_num(s, yn, 0) < 0)
        return oom(m);
    }
  }
  if (m->g->random &&
      atl__op_scope_set_random(s, "random", m->g->random, m->g->user) < 0)
    return oom(m);
  if (json_object_object_get_ex(def, "vars", &vars) && vars) {
    if (!json_object_is_type(vars, json_type_array))
      return merr(m, "the module's \"vars\" must be an array of strings such "
                     "as \"a = 2*x_1\" or \"f(t) = t^2\"");
    for (size_t i = 0; i < json_object_array_length(vars) && rc == 0; i++) {
      json_object *v = json_object_array_get_idx(vars, i);
      size_t old = path_push(m, "vars", 0);
      path_push(m, NULL, (long)i);
      if (!json_object_is_type(v, json_type_string)) {
        rc = merr(m, "not a string; write \"a = 2*x_1\" or \"f(t) = t^2\"");
      } else {
        const char *t = json_object_get_string(v);
        char *err = NULL;
        int r = atl__op_texdefs_add(m->defs, t, &err);
        atl_op_value_t val;
        if (r == -EINVAL)
          rc = merr(m, "\"%.200s\": %s", t, err);
        else if (r < 0)
          rc = oom(m);
        else
          rc = evaluate(m, t, strlen(t), s, "variable definition", &val);
        free(err);
      }
      path_pop(m, old);
    }
  }
  return rc;
}

static void mod_free(mod_t *m) {
  for (int i = 0; i < CACHE_SLOTS; i++)
    for (centry_t *c = m->cache[i], *n; c; c = n) {
      n = c->next;
      atl__op_mexpr_free(c->e);
      free(c);
    }
  atl__op_texdefs_free(m->defs);
}

/* Expands obj (a ModuleObj) into out, nested ModuleObjs included. */
static int expand_instance(glob_t_ *g, json_object *obj, const char *where,
                           int depth, json_object *out) {
  mod_t m = {.g = g, .where = (char *)where, .max_loop = 1000};
  json_object *name = NULL, *def = NULL, *objs = NULL, *x;
  json_object_object_get_ex(obj, "module", &name);
  if (!json_object_is_type(name, json_type_string))
    return merr(&m, "the ModuleObj has no \"module\" naming a definition in "
                    "the scene's \"modules\"");
  m.name = json_object_get_string(name);
  if (g->modules == NULL ||
      !json_object_object_get_ex(g->modules, m.name, &def) ||
      !json_object_is_type(def, json_type_object))
    return merr(&m,
                "unknown module \"%.100s\"; define it under the scene's "
                "\"modules\" or fix the name",
                m.name);
  json_object_object_foreach(def, key, val) {
    (void)val;
    size_t k = 0;
    while (k < 6 && strcmp(key, known_keys[k]) != 0)
      k++;
    if (k == 6)
      return merr(&m,
                  "module \"%.100s\" has the unknown key \"%.100s\"; "
                  "the keys are numPoints, params, vars, objs and "
                  "maxLoopLength",
                  m.name, key);
  }
  if (json_object_object_get_ex(def, "maxLoopLength", &x)) {
    /* `maxLoopLength || 1000`: zero, NaN and non-numbers mean 1000. */
    double v = json_object_get_double(x);
    if (v != 0 && !isnan(v))
      m.max_loop = v;
  }
  if ((m.defs = atl__op_texdefs_new()) == NULL)
    return oom(&m);
  atl_op_scope_t *s = atl__op_scope_new();
  json_object *res = NULL;
  int rc = s ? module_scope(&m, def, obj, s) : oom(&m);
  if (rc == 0) {
    if (json_object_object_get_ex(def, "objs", &objs) &&
        json_object_is_type(objs, json_type_array)) {
      path_push(&m, "objs", 0);
      rc = expand_array(&m, objs, s, &res);
      path_pop(&m, 0);
    } else if (objs != NULL) {
      rc = merr(&m, "the module's \"objs\" must be an array of objects");
    }
  }
  atl__op_scope_free(s);
  mod_free(&m);
  size_t n = res ? json_object_array_length(res) : 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    json_object *o = json_object_array_get_idx(res, i), *t = NULL;
    if (!json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, "type", &t) ||
        !json_object_is_type(t, json_type_string)) {
      m.plen = (size_t)snprintf(m.path, sizeof(m.path),
                                "objs (expanded "
                                "element %zu)",
                                i);
      rc = merr(&m, "not an object with a string \"type\"; every element "
                    "of objs must expand to a scene object");
    } else if (strcmp(json_object_get_string(t), "ModuleObj") == 0) {
      char *inner = NULL;
      if (depth + 1 >= ATL_OP_MODULE_MAX_DEPTH) {
        m.plen = (size_t)snprintf(m.path, sizeof(m.path),
                                  "objs (expanded "
                                  "element %zu)",
                                  i);
        rc = merr(&m,
                  "ModuleObj nested more than %d deep (a module that "
                  "contains itself?)",
                  ATL_OP_MODULE_MAX_DEPTH);
      } else if (asprintf(&inner, "%s > expanded objs[%zu] (module \"%s\")",
                          where, i, m.name) < 0) {
        rc = oom(&m);
      } else {
        rc = expand_instance(g, o, inner, depth + 1, out);
        free(inner);
      }
    } else if (json_object_array_add(out, json_object_get(o)) != 0) {
      json_object_put(o);
      rc = oom(&m);
    }
  }
  json_object_put(res);
  return rc;
}

int atl__op_module_expand(json_object *doc, json_object *obj,
                          atl_op_random_cb random, void *user,
                          json_object **out, char **err) {
  *out = NULL;
  *err = NULL;
  glob_t_ g = {.random = random, .user = user};
  json_object *objs = NULL, *name = NULL;
  json_object_object_get_ex(doc, "modules", &g.modules);
  json_object_object_get_ex(obj, "module", &name);
  long idx = -1;
  if (json_object_object_get_ex(doc, "objs", &objs) &&
      json_object_is_type(objs, json_type_array))
    for (size_t i = 0; i < json_object_array_length(objs); i++)
      if (json_object_array_get_idx(objs, i) == obj)
        idx = (long)i;
  char where[256];
  const char *nm = json_object_is_type(name, json_type_string)
                       ? json_object_get_string(name)
                       : "?";
  if (idx >= 0)
    snprintf(where, sizeof(where), "objs[%ld] (ModuleObj of module \"%.100s\")",
             idx, nm);
  else
    snprintf(where, sizeof(where), "ModuleObj of module \"%.100s\"", nm);
  json_object *res = json_object_new_array();
  int rc = res ? expand_instance(&g, obj, where, 0, res) : -ENOMEM;
  if (rc == 0 && g.rc)
    rc = g.rc;
  if (rc < 0) {
    json_object_put(res);
    *err = g.err ? g.err : strdup("Out of memory while expanding a ModuleObj");
    return rc == -ENOMEM ? -ENOMEM : -EINVAL;
  }
  free(g.err);
  *out = res;
  return 0;
}
