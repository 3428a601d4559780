/* Evaluating compiled expressions (mathexpr.h) with mathjs 13's number
 * semantics, and the scopes they read and write.
 *
 * Name resolution follows mathjs: inside a user function its parameters
 * first, then the scope the function was defined in (so a function from a
 * module's `vars` does not see loop variables, as upstream's closures over
 * the module scope do not), then the constants and functions below. A
 * scope copy keeps a reference on its source, so functions defined in the
 * source stay valid for as long as the copy lives. */
#include "jsnum.h"
#include "mathexpr_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REL_TOL 1e-12   /* mathjs's config.relTol */
#define ABS_TOL 1e-15   /* mathjs's config.absTol */
#define MAX_CALLS 24    /* nested user-function calls */
#define BUDGET 2000000L /* nodes one evaluation may visit */

typedef enum { B_NUM, B_BOOL, B_FUNC, B_RANDOM } bkind_t;

typedef struct {
  char *name;
  bkind_t kind;
  double num;
  atl_op_mexpr_t *owner;     /* B_FUNC: a reference on the definition */
  const atl_op_xnode_t *def; /* B_FUNC: the FNDEF node */
  atl_op_scope_t *defscope;  /* B_FUNC: where it was defined */
  atl_op_random_cb cb;       /* B_RANDOM */
  void *user;
} binding_t;

struct atl_op_scope {
  int refs;
  atl_op_scope_t *parent; /* the scope this one was copied from */
  binding_t *v;
  size_t n, cap;
};

atl_op_scope_t *atl__op_scope_new(void) {
  atl_op_scope_t *s = calloc(1, sizeof(*s));
  if (s)
    s->refs = 1;
  return s;
}

static void binding_clear(binding_t *b) {
  free(b->name);
  if (b->kind == B_FUNC)
    atl__op_mexpr_free(b->owner);
}

void atl__op_scope_free(atl_op_scope_t *s) {
  while (s && --s->refs == 0) {
    atl_op_scope_t *parent = s->parent;
    for (size_t i = 0; i < s->n; i++)
      binding_clear(&s->v[i]);
    free(s->v);
    free(s);
    s = parent;
  }
}

atl_op_scope_t *atl__op_scope_copy(const atl_op_scope_t *src) {
  atl_op_scope_t *s = atl__op_scope_new();
  if (s == NULL)
    return NULL;
  s->v = calloc(src->n ? src->n : 1, sizeof(*s->v));
  if (s->v == NULL) {
    free(s);
    return NULL;
  }
  s->cap = src->n ? src->n : 1;
  for (size_t i = 0; i < src->n; i++) {
    s->v[i] = src->v[i];
    if ((s->v[i].name = strdup(src->v[i].name)) == NULL) {
      atl__op_scope_free(s);
      return NULL;
    }
    if (s->v[i].kind == B_FUNC)
      s->v[i].owner->refs++;
    s->n++;
  }
  s->parent = (atl_op_scope_t *)src;
  s->parent->refs++;
  return s;
}

static binding_t *find(const atl_op_scope_t *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->v[i].name, name) == 0)
      return &s->v[i];
  return NULL;
}

/* The binding for name, created empty when missing; NULL when out of
 * memory. An existing binding is cleared for reuse. */
static binding_t *slot(atl_op_scope_t *s, const char *name) {
  binding_t *b = find(s, name);
  if (b) {
    if (b->kind == B_FUNC)
      atl__op_mexpr_free(b->owner);
    char *keep = b->name;
    memset(b, 0, sizeof(*b));
    b->name = keep;
    return b;
  }
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 8;
    binding_t *v = realloc(s->v, cap * sizeof(*v));
    if (v == NULL)
      return NULL;
    s->v = v;
    s->cap = cap;
  }
  b = &s->v[s->n];
  memset(b, 0, sizeof(*b));
  if ((b->name = strdup(name)) == NULL)
    return NULL;
  s->n++;
  return b;
}

int atl__op_scope_set_num(atl_op_scope_t *s, const char *name, double v) {
  binding_t *b = slot(s, name);
  if (b == NULL)
    return -ENOMEM;
  b->kind = B_NUM;
  b->num = v;
  return 0;
}

int atl__op_scope_set_bool(atl_op_scope_t *s, const char *name, bool v) {
  binding_t *b = slot(s, name);
  if (b == NULL)
    return -ENOMEM;
  b->kind = B_BOOL;
  b->num = v;
  return 0;
}

int atl__op_scope_set_random(atl_op_scope_t *s, const char *name,
                             atl_op_random_cb cb, void *user) {
  binding_t *b = slot(s, name);
  if (b == NULL)
    return -ENOMEM;
  b->kind = B_RANDOM;
  b->cb = cb;
  b->user = user;
  return 0;
}

int atl__op_scope_get_num(const atl_op_scope_t *s, const char *name,
                          double *v) {
  const binding_t *b = find(s, name);
  if (b == NULL || (b->kind != B_NUM && b->kind != B_BOOL))
    return -ENOENT;
  *v = b->num;
  return 0;
}

/* One user-function call: its parameters' values. */
typedef struct frame {
  const atl_op_xnode_t *def;
  atl_op_value_t *vals;
} frame_t;

typedef struct {
  atl_op_scope_t *scope; /* where free names resolve and assignments go */
  frame_t *frame;        /* NULL outside a user function */
  int calls;
  long budget;
  char *err;
} ectx_t;

#define NUMV(x) ((atl_op_value_t){ATL_OP_VAL_NUM, (x)})
#define BOOLV(x) ((atl_op_value_t){ATL_OP_VAL_BOOL, (x) ? 1.0 : 0.0})

static int fail(ectx_t *c, char *msg) {
  if (c->err == NULL)
    c->err = msg ? msg : strdup("Out of memory");
  return -EINVAL;
}

int atl__op_nearly_equal(double a, double b) {
  if (isnan(a) || isnan(b))
    return 0;
  if (!isfinite(a) || !isfinite(b))
    return a == b;
  if (a == b)
    return 1;
  double m = fmax(fabs(a), fabs(b));
  return fabs(a - b) <= fmax(REL_TOL * m, ABS_TOL);
}

/* JavaScript's Math.round: halves go up (towards +infinity). */
static double js_round(double x) {
  if (!isfinite(x) || fabs(x) >= 4503599627370496.0)
    return x;
  double f = floor(x);
  double r = (x - f >= 0.5) ? f + 1 : f;
  return (r == 0 && signbit(x)) ? -0.0 : r;
}

/* mathjs's floor and ceil forgive round-off: a value within tolerance of
 * the nearest integer (and not of the other bound, floor(x) or ceil(x)) is
 * that integer. */
static double forgive(double x, double bound) {
  double r = js_round(x);
  if (bound == r)
    return bound;
  if (atl__op_nearly_equal(x, r) && !atl__op_nearly_equal(x, bound))
    return r;
  return bound;
}

static double m_floor(double x) {
  return forgive(x, floor(x));
}

static double m_ceil(double x) {
  return forgive(x, ceil(x));
}

/* mathjs's round(x, n) on the shortest decimal digits of x: half away
 * from zero at n decimals. */
static double round_dec(double x, int n) {
  if (!isfinite(x) || x == 0)
    return x;
  char d[24], buf[48];
  int e;
  int k = atl__op_shortest(fabs(x), d, &e); /* |x| = 0.d1d2... x 10^e */
  int p = e + n;                            /* digits kept */
  if (p >= k)
    return x;
  if (p < 0 || (p == 0 && d[0] < '5'))
    return signbit(x) ? -0.0 : 0.0;
  int up = d[p] >= '5';
  d[p] = '\0';
  for (int i = p - 1; up && i >= 0; i--) {
    if (d[i] == '9') {
      d[i] = '0';
    } else {
      d[i]++;
      up = 0;
    }
  }
  snprintf(buf, sizeof(buf), "%s0.%s%se%d", signbit(x) ? "-" : "",
           up ? "1" : "", p > 0 ? d : "0", e + up);
  return strtod(buf, NULL);
}

static double m_round(double x, int n) {
  double xe = round_dec(x, 12);
  double sel = atl__op_nearly_equal(x, xe) ? xe : x;
  return round_dec(sel, n);
}

/* mathjs's pow for numbers: real where JavaScript's is, with x^Infinity
 * = 0 for |x| < 1; a negative base with a non-integer exponent would be
 * complex. */
static int m_pow(ectx_t *c, double x, double y, double *out) {
  if ((x * x < 1 && y == INFINITY) || (x * x > 1 && y == -INFINITY)) {
    *out = 0;
    return 0;
  }
  int yint = isfinite(y) && y == nearbyint(y);
  if (!yint && !(x >= 0))
    return fail(c, atl__op_xfmt("pow(%g, %g) is complex; complex numbers "
                                "are not supported",
                                x, y));
  if (isnan(y) || ((x == 1 || x == -1) && isinf(y)))
    *out = NAN; /* JavaScript, unlike C, says NaN here */
  else
    *out = pow(x, y);
  return 0;
}

static int complex_err(ectx_t *c, const char *fn, double x) {
  return fail(c, atl__op_xfmt("%s(%g) is complex; complex numbers are not "
                              "supported",
                              fn, x));
}

static double m_mod(double x, double y) {
  return y == 0 ? x : x - y * m_floor(x / y);
}

static double factorial(double n) {
  if (n == nearbyint(n) && n <= 170) {
    double r = 1;
    for (int i = 2; i <= (int)n; i++)
      r *= i;
    return r;
  }
  return tgamma(n + 1);
}

static int m_larger(double a, double b) {
  return a > b && !atl__op_nearly_equal(a, b);
}

/* The number functions. Their argument counts follow mathjs; -1 is "any
 * number, at least min". */
typedef struct {
  const char *name;
  int min, max;
} builtin_t;

static const builtin_t builtins[] = {
    {"abs", 1, 1},       {"sign", 1, 1},   {"sqrt", 1, 1},   {"cbrt", 1, 1},
    {"exp", 1, 1},       {"expm1", 1, 1},  {"log", 1, 2},    {"log10", 1, 1},
    {"log2", 1, 1},      {"log1p", 1, 1},  {"sin", 1, 1},    {"cos", 1, 1},
    {"tan", 1, 1},       {"sec", 1, 1},    {"csc", 1, 1},    {"cot", 1, 1},
    {"asin", 1, 1},      {"acos", 1, 1},   {"atan", 1, 1},   {"atan2", 2, 2},
    {"sinh", 1, 1},      {"cosh", 1, 1},   {"tanh", 1, 1},   {"asinh", 1, 1},
    {"acosh", 1, 1},     {"atanh", 1, 1},  {"floor", 1, 1},  {"ceil", 1, 1},
    {"fix", 1, 1},       {"round", 1, 2},  {"min", 1, -1},   {"max", 1, -1},
    {"sum", 1, -1},      {"mean", 1, -1},  {"hypot", 1, -1}, {"pow", 2, 2},
    {"mod", 2, 2},       {"square", 1, 1}, {"cube", 1, 1},   {"nthRoot", 1, 2},
    {"factorial", 1, 1}, {"gamma", 1, 1},
};

static int call_builtin(ectx_t *c, const char *f, const double *a, int n,
                        double *r) {
  double x = n > 0 ? a[0] : NAN;
#define IS(s) (strcmp(f, s) == 0)
  if (IS("abs"))
    *r = fabs(x);
  else if (IS("sign"))
    *r = x > 0 ? 1 : x < 0 ? -1 : x;
  else if (IS("sqrt")) {
    if (x < 0)
      return complex_err(c, f, x);
    *r = sqrt(x);
  } else if (IS("cbrt"))
    *r = cbrt(x);
  else if (IS("exp"))
    *r = exp(x);
  else if (IS("expm1"))
    *r = expm1(x);
  else if (IS("log")) {
    if (x < 0 || (n == 2 && a[1] < 0))
      return complex_err(c, f, x < 0 ? x : a[1]);
    *r = n == 2 ? log(x) / log(a[1]) : log(x);
  } else if (IS("log10") || IS("log2")) {
    if (x < 0)
      return complex_err(c, f, x);
    *r = IS("log10") ? log10(x) : log2(x);
  } else if (IS("log1p")) {
    if (x < -1)
      return complex_err(c, f, x);
    *r = log1p(x);
  } else if (IS("sin"))
    *r = sin(x);
  else if (IS("cos"))
    *r = cos(x);
  else if (IS("tan"))
    *r = tan(x);
  else if (IS("sec"))
    *r = 1 / cos(x);
  else if (IS("csc"))
    *r = 1 / sin(x);
  else if (IS("cot"))
    *r = 1 / tan(x);
  else if (IS("asin") || IS("acos")) {
    if (x < -1 || x > 1)
      return complex_err(c, f, x);
    *r = IS("asin") ? asin(x) : acos(x);
  } else if (IS("atan"))
    *r = atan(x);
  else if (IS("atan2"))
    *r = atan2(x, a[1]);
  else if (IS("sinh"))
    *r = sinh(x);
  else if (IS("cosh"))
    *r = cosh(x);
  else if (IS("tanh"))
    *r = tanh(x);
  else if (IS("asinh"))
    *r = asinh(x);
  else if (IS("acosh")) {
    if (x < 1)
      return complex_err(c, f, x);
    *r = acosh(x);
  } else if (IS("atanh")) {
    if (x < -1 || x > 1)
      return complex_err(c, f, x);
    *r = atanh(x);
  } else if (IS("floor"))
    *r = m_floor(x);
  else if (IS("ceil"))
    *r = m_ceil(x);
  else if (IS("fix"))
    *r = x > 0 ? m_floor(x) : m_ceil(x);
  else if (IS("round")) {
    double d = n == 2 ? a[1] : 0;
    if (d != nearbyint(d) || d < 0 || d > 15)
      return fail(c, strdup("Number of decimals in function round must be "
                            "an integer from 0 to 15 inclusive"));
    *r = m_round(x, (int)d);
  } else if (IS("min") || IS("max")) {
    double res = a[0];
    for (int i = 0; i < n && !isnan(res); i++)
      if (isnan(a[i]))
        res = NAN;
      else if (IS("max") ? m_larger(a[i], res) : m_larger(res, a[i]))
        res = a[i];
    *r = res;
  } else if (IS("sum") || IS("mean")) {
    double s = 0;
    for (int i = 0; i < n; i++)
      s += a[i];
    *r = IS("sum") ? s : s / n;
  } else if (IS("hypot")) {
    double s = 0;
    for (int i = 0; i < n; i++)
      s = hypot(s, a[i]);
    *r = s;
  } else if (IS("pow"))
    return m_pow(c, x, a[1], r);
  else if (IS("mod"))
    *r = m_mod(x, a[1]);
  else if (IS("square"))
    *r = x * x;
  else if (IS("cube"))
    *r = x * x * x;
  else if (IS("nthRoot")) {
    double root = n == 2 ? a[1] : 2;
    int odd = fmod(fabs(root), 2) == 1;
    if (x < 0 && !odd)
      return fail(c, strdup("nthRoot: a negative value has no real even "
                            "root"));
    *r = x < 0 ? -pow(-x, 1 / root) : pow(x, 1 / root);
  } else if (IS("factorial") || IS("gamma")) {
    if (IS("factorial") && x < 0)
      return fail(c, strdup("Value must be non-negative"));
    *r = IS("gamma") ? tgamma(x) : factorial(x);
  }
#undef IS
  return 0;
}

static const struct {
  const char *name;
  double v;
} constants[] = {
    {"pi", M_PI},         {"PI", M_PI},       {"e", M_E},
    {"E", M_E},           {"tau", 2 * M_PI},  {"phi", 1.618033988749895},
    {"LN2", M_LN2},       {"LN10", M_LN10},   {"LOG2E", M_LOG2E},
    {"LOG10E", M_LOG10E}, {"SQRT2", M_SQRT2}, {"SQRT1_2", M_SQRT1_2},
};

static int eval(ectx_t *c, const atl_op_xnode_t *n, atl_op_value_t *out);

static int num_of(ectx_t *c, const atl_op_xnode_t *n, double *x) {
  atl_op_value_t v;
  if (eval(c, n, &v) < 0)
    return -EINVAL;
  if (v.kind == ATL_OP_VAL_FUNC)
    return fail(c, strdup("A function is not a number (call it with "
                          "parentheses)"));
  *x = v.num;
  return 0;
}

static int truthy(ectx_t *c, const atl_op_xnode_t *n, int *t) {
  double x;
  if (num_of(c, n, &x) < 0)
    return -EINVAL;
  *t = x != 0 && !isnan(x);
  return 0;
}

static int eval_symbol(ectx_t *c, const char *name, atl_op_value_t *out) {
  if (c->frame) {
    const atl_op_xnode_t *d = c->frame->def;
    for (uint32_t i = 0; i < d->nparams; i++)
      if (strcmp(d->params[i], name) == 0) {
        *out = c->frame->vals[i];
        return 0;
      }
  }
  const binding_t *b = find(c->scope, name);
  if (b) {
    if (b->kind == B_NUM)
      *out = NUMV(b->num);
    else if (b->kind == B_BOOL)
      *out = BOOLV(b->num != 0);
    else
      *out = (atl_op_value_t){ATL_OP_VAL_FUNC, NAN};
    return 0;
  }
  for (size_t i = 0; i < sizeof(constants) / sizeof(*constants); i++)
    if (strcmp(constants[i].name, name) == 0) {
      *out = NUMV(constants[i].v);
      return 0;
    }
  for (size_t i = 0; i < sizeof(builtins) / sizeof(*builtins); i++)
    if (strcmp(builtins[i].name, name) == 0) {
      *out = (atl_op_value_t){ATL_OP_VAL_FUNC, NAN};
      return 0;
    }
  if (strcmp(name, "i") == 0)
    return fail(c, strdup("The imaginary unit i is not supported"));
  return fail(c, atl__op_xfmt("Undefined symbol %s", name));
}

static int eval_args(ectx_t *c, const atl_op_xnode_t *n, double *a) {
  for (uint32_t i = 0; i < n->nargs; i++)
    if (num_of(c, n->args[i], &a[i]) < 0)
      return -EINVAL;
  return 0;
}

static int eval_call(ectx_t *c, const atl_op_xnode_t *n, atl_op_value_t *out) {
  const char *name = n->name;
  int rc = 0;
  if (c->frame)
    for (uint32_t i = 0; i < c->frame->def->nparams; i++)
      if (strcmp(c->frame->def->params[i], name) == 0)
        return fail(c, atl__op_xfmt("%s is not a function", name));
  double stack[8], *a = n->nargs <= 8 ? stack : malloc(n->nargs * sizeof(*a));
  if (a == NULL)
    return fail(c, NULL);
  const binding_t *b = find(c->scope, name);
  if (eval_args(c, n, a) < 0) {
    rc = -EINVAL;
  } else if (b && b->kind == B_RANDOM) {
    *out = NUMV(b->cb(b->user));
  } else if (b && b->kind == B_FUNC) {
    const atl_op_xnode_t *d = b->def;
    if (n->nargs != d->nparams) {
      rc = fail(c, atl__op_xfmt("Too %s arguments in function %s "
                                "(expected: %u, actual: %u)",
                                n->nargs < d->nparams ? "few" : "many", name,
                                d->nparams, n->nargs));
    } else if (c->calls >= MAX_CALLS) {
      rc = fail(c, atl__op_xfmt("Function calls nested too deeply (more "
                                "than %d) in %s",
                                MAX_CALLS, name));
    } else {
      atl_op_value_t vals[n->nargs ? n->nargs : 1];
      for (uint32_t i = 0; i < n->nargs; i++)
        vals[i] = NUMV(a[i]);
      frame_t fr = {d, vals};
      ectx_t sub = *c;
      sub.frame = &fr;
      sub.scope = b->defscope;
      sub.calls++;
      rc = eval(&sub, d->args[0], out);
      c->budget = sub.budget;
      c->err = sub.err;
    }
  } else if (b) {
    rc = fail(c, atl__op_xfmt("%s is not a function", name));
  } else {
    const builtin_t *f = NULL;
    for (size_t i = 0; i < sizeof(builtins) / sizeof(*builtins); i++)
      if (strcmp(builtins[i].name, name) == 0)
        f = &builtins[i];
    if (f == NULL) {
      rc = fail(c, atl__op_xfmt("Undefined function %s", name));
    } else if ((int)n->nargs < f->min ||
               (f->max >= 0 && (int)n->nargs > f->max)) {
      rc = fail(c, atl__op_xfmt("Wrong number of arguments in function %s "
                                "(%u provided)",
                                name, n->nargs));
    } else {
      double r = NAN;
      rc = call_builtin(c, name, a, (int)n->nargs, &r);
      *out = NUMV(r);
    }
  }
  if (a != stack)
    free(a);
  return rc;
}

static int compare(int op, double x, double y) {
  switch (op) {
  case XO_EQ:
    return atl__op_nearly_equal(x, y);
  case XO_NE:
    return !atl__op_nearly_equal(x, y);
  case XO_LT:
    return x < y && !atl__op_nearly_equal(x, y);
  case XO_GT:
    return x > y && !atl__op_nearly_equal(x, y);
  case XO_LE:
    return x <= y || atl__op_nearly_equal(x, y);
  default:
    return x >= y || atl__op_nearly_equal(x, y);
  }
}

static int eval_op(ectx_t *c, const atl_op_xnode_t *n, atl_op_value_t *out) {
  double x, y = 0;
  int t;
  switch (n->op) {
  case XO_AND:
  case XO_OR:
    /* mathjs evaluates and/or lazily. */
    if (truthy(c, n->args[0], &t) < 0)
      return -EINVAL;
    if (t == (n->op == XO_OR)) {
      *out = BOOLV(t);
      return 0;
    }
    if (truthy(c, n->args[1], &t) < 0)
      return -EINVAL;
    *out = BOOLV(t);
    return 0;
  case XO_NOT:
    if (truthy(c, n->args[0], &t) < 0)
      return -EINVAL;
    *out = BOOLV(!t);
    return 0;
  default:
    break;
  }
  if (num_of(c, n->args[0], &x) < 0 ||
      (n->nargs == 2 && num_of(c, n->args[1], &y) < 0))
    return -EINVAL;
  double r;
  switch (n->op) {
  case XO_ADD:
    r = x + y;
    break;
  case XO_SUB:
    r = x - y;
    break;
  case XO_MUL:
    r = x * y;
    break;
  case XO_DIV:
    r = x / y;
    break;
  case XO_MOD:
    r = m_mod(x, y);
    break;
  case XO_POW:
    if (m_pow(c, x, y, &r) < 0)
      return -EINVAL;
    break;
  case XO_NEG:
    r = -x;
    break;
  case XO_POS:
    r = x;
    break;
  case XO_FACT:
    if (x < 0)
      return fail(c, strdup("Value must be non-negative"));
    r = factorial(x);
    break;
  case XO_XOR:
    *out = BOOLV((x != 0 && !isnan(x)) != (y != 0 && !isnan(y)));
    return 0;
  default:
    *out = BOOLV(compare(n->op, x, y));
    return 0;
  }
  *out = NUMV(r);
  return 0;
}

static int eval(ectx_t *c, const atl_op_xnode_t *n, atl_op_value_t *out) {
  if (--c->budget < 0)
    return fail(c, strdup("Expression needs too much work (more than 2e6 "
                          "steps)"));
  switch (n->kind) {
  case XN_NUM:
    *out = NUMV(n->num);
    return 0;
  case XN_BOOL:
    *out = BOOLV(n->num != 0);
    return 0;
  case XN_SYM:
    return eval_symbol(c, n->name, out);
  case XN_PAREN:
    return eval(c, n->args[0], out);
  case XN_OP:
    return eval_op(c, n, out);
  case XN_REL: {
    double x, y;
    if (num_of(c, n->args[0], &y) < 0)
      return -EINVAL;
    for (uint32_t i = 1; i < n->nargs; i++) {
      x = y;
      if (num_of(c, n->args[i], &y) < 0)
        return -EINVAL;
      if (!compare(n->rels[i - 1], x, y)) {
        *out = BOOLV(0);
        return 0;
      }
    }
    *out = BOOLV(1);
    return 0;
  }
  case XN_COND: {
    int t;
    if (truthy(c, n->args[0], &t) < 0)
      return -EINVAL;
    return eval(c, n->args[t ? 1 : 2], out);
  }
  case XN_CALL:
    return eval_call(c, n, out);
  case XN_ASSIGN: {
    if (eval(c, n->args[0], out) < 0)
      return -EINVAL;
    if (c->frame)
      for (uint32_t i = 0; i < c->frame->def->nparams; i++)
        if (strcmp(c->frame->def->params[i], n->name) == 0) {
          c->frame->vals[i] = *out;
          return 0;
        }
    if (out->kind == ATL_OP_VAL_FUNC)
      return fail(c, atl__op_xfmt("Cannot assign a function to %s", n->name));
    int rc = out->kind == ATL_OP_VAL_BOOL
                 ? atl__op_scope_set_bool(c->scope, n->name, out->num != 0)
                 : atl__op_scope_set_num(c->scope, n->name, out->num);
    return rc < 0 ? fail(c, NULL) : 0;
  }
  default:
    break;
  }
  return fail(c, strdup("internal error: unknown node"));
}

/* Function definitions are evaluated here because they need the owning
 * expression, which keeps the body alive. */
static int eval_top(ectx_t *c, const atl_op_mexpr_t *e, atl_op_value_t *out) {
  const atl_op_xnode_t *n = e->root;
  if (n->kind != XN_FNDEF)
    return eval(c, n, out);
  binding_t *b = slot(c->scope, n->name);
  if (b == NULL)
    return fail(c, NULL);
  b->kind = B_FUNC;
  b->owner = (atl_op_mexpr_t *)e;
  b->owner->refs++;
  b->def = n;
  b->defscope = c->scope;
  *out = (atl_op_value_t){ATL_OP_VAL_FUNC, NAN};
  return 0;
}

static int has_inner_fndef(const atl_op_xnode_t *n, int top) {
  if (n->kind == XN_FNDEF && !top)
    return 1;
  for (uint32_t i = 0; i < n->nargs; i++)
    if (has_inner_fndef(n->args[i], 0))
      return 1;
  return 0;
}

int atl__op_mexpr_eval(const atl_op_mexpr_t *e, atl_op_scope_t *scope,
                       atl_op_value_t *out, char **err) {
  *err = NULL;
  if (e->root == NULL) {
    *out = (atl_op_value_t){ATL_OP_VAL_UNDEF, NAN};
    return 0;
  }
  if (has_inner_fndef(e->root, 1)) {
    *err = strdup("A function definition must be the whole expression");
    return -EINVAL;
  }
  ectx_t c = {.scope = scope, .budget = BUDGET};
  if (eval_top(&c, e, out) < 0) {
    *err = c.err ? c.err : strdup("Out of memory");
    return -EINVAL;
  }
  return 0;
}
