/* Symbolic differentiation of an equation's tree (expr.h). Upstream
 * differentiates with mathjs (math.derivative, then simplify), so the
 * rules and their shapes are mathjs's: d(u^c) = c u^(c-1) du,
 * d(c^u) = c^u log(c) du, d(f^g) = f^g (df g/f + dg log f), d|u| =
 * |u|/u du, and a function without a rule is an error when its argument
 * depends on the variable. A subtree that does not depend on it has
 * derivative 0, and products with 0 or 1 are simplified away as mathjs's
 * simplify does, which also keeps 0 * Infinity from turning into NaN.
 *
 * The derivative shares the source's subtrees: the source's nodes are
 * copied first, at the same indices, and the new nodes refer to them. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "expr_int.h"

#define NONE ATL_OP_NONE

typedef struct {
  const atl_op_ast_t *a;
  atl_op_ast_t *d;
  size_t var;
  uint32_t *memo; /* each source node's derivative, or NONE */
  int8_t *dep;    /* whether a source node depends on var; -1 unknown */
  uint32_t zero, one, two;
  int bad_fn; /* a function without a derivative, or -1 */
} df_t;

static uint32_t mk(df_t *f, int type, int fn, double v, const uint32_t *kids,
                   uint32_t nk) {
  for (uint32_t i = 0; i < nk; i++)
    if (kids[i] == NONE)
      return NONE;
  return atl__op_ast_add(f->d, type, fn, v, 0, kids, nk);
}

static uint32_t num(df_t *f, double v) {
  return atl__op_ast_add(f->d, ATL_OP_N_CONST, 0, v, 0, NULL, 0);
}

static bool is_const(const df_t *f, uint32_t id, double v) {
  return id != NONE && f->d->nodes[id].type == ATL_OP_N_CONST &&
         f->d->nodes[id].v == v;
}

static uint32_t add(df_t *f, uint32_t a, uint32_t b) {
  if (is_const(f, a, 0))
    return b;
  if (is_const(f, b, 0))
    return a;
  return mk(f, ATL_OP_N_SUM, 0, 0, (uint32_t[]){a, b}, 2);
}

static uint32_t neg(df_t *f, uint32_t a) {
  if (is_const(f, a, 0))
    return f->zero;
  return mk(f, ATL_OP_N_NEG, 0, 0, &a, 1);
}

static uint32_t sub(df_t *f, uint32_t a, uint32_t b) {
  if (is_const(f, b, 0))
    return a;
  return add(f, a, neg(f, b));
}

static uint32_t mul(df_t *f, uint32_t a, uint32_t b) {
  if (is_const(f, a, 0) || is_const(f, b, 0))
    return a == NONE || b == NONE ? NONE : f->zero;
  if (is_const(f, a, 1))
    return b;
  if (is_const(f, b, 1))
    return a;
  return mk(f, ATL_OP_N_PROD, 0, 0, (uint32_t[]){a, b}, 2);
}

/* a / b as a true division (evaluatex's frac), as mathjs divides. */
static uint32_t dvd(df_t *f, uint32_t a, uint32_t b) {
  if (is_const(f, a, 0))
    return b == NONE ? NONE : f->zero;
  if (is_const(f, b, 1))
    return a;
  return mk(f, ATL_OP_N_CALL, ATL_OP_F_FRAC, 0, (uint32_t[]){a, b}, 2);
}

static uint32_t call(df_t *f, int fn, uint32_t a) {
  return mk(f, ATL_OP_N_CALL, fn, 0, &a, 1);
}

static uint32_t pw(df_t *f, uint32_t a, uint32_t b) {
  return mk(f, ATL_OP_N_POW, 0, 0, (uint32_t[]){a, b}, 2);
}

static uint32_t sq(df_t *f, uint32_t a) {
  return pw(f, a, f->two);
}

static bool dep(df_t *f, uint32_t id) {
  if (f->dep[id] < 0) {
    const atl_op_node_t *nd = &f->a->nodes[id];
    bool r = nd->type == ATL_OP_N_VAR && nd->k == f->var;
    if (nd->hasvar)
      for (uint32_t i = 0; i < nd->nk && !r; i++)
        r = dep(f, f->a->kids[nd->k + i]);
    f->dep[id] = r;
  }
  return f->dep[id];
}

static uint32_t D(df_t *f, uint32_t id);

/* d(a^b), given da and db and which of a and b depend on the variable. */
static uint32_t pow_rule(df_t *f, uint32_t a, uint32_t b, uint32_t da,
                         uint32_t db, bool depa, bool depb) {
  if (!depb)
    return mul(f, mul(f, b, pw(f, a, sub(f, b, f->one))), da);
  uint32_t ab = pw(f, a, b), lg = call(f, ATL_OP_F_LOG, a);
  if (!depa)
    return mul(f, mul(f, ab, lg), db);
  return mul(f, ab, add(f, mul(f, da, dvd(f, b, a)), mul(f, db, lg)));
}

/* The factor f'(u) of the chain rule for a one-argument function, or
 * (through *den) the denominator when mathjs writes it as du / den. */
static uint32_t chain(df_t *f, int fn, uint32_t u, uint32_t *den) {
  *den = NONE;
  switch (fn) {
  case ATL_OP_F_SIN:
    return call(f, ATL_OP_F_COS, u);
  case ATL_OP_F_COS:
    return neg(f, call(f, ATL_OP_F_SIN, u));
  case ATL_OP_F_TAN:
    return sq(f, call(f, ATL_OP_F_SEC, u));
  case ATL_OP_F_SEC:
    return mul(f, call(f, ATL_OP_F_SEC, u), call(f, ATL_OP_F_TAN, u));
  case ATL_OP_F_CSC:
    return neg(f, mul(f, call(f, ATL_OP_F_CSC, u), call(f, ATL_OP_F_COT, u)));
  case ATL_OP_F_COT:
    return neg(f, sq(f, call(f, ATL_OP_F_CSC, u)));
  case ATL_OP_F_SINH:
    return call(f, ATL_OP_F_COSH, u);
  case ATL_OP_F_COSH:
    return call(f, ATL_OP_F_SINH, u);
  case ATL_OP_F_TANH:
    return sq(f, call(f, ATL_OP_F_SECH, u));
  case ATL_OP_F_SECH:
    return neg(f, mul(f, call(f, ATL_OP_F_SECH, u), call(f, ATL_OP_F_TANH, u)));
  case ATL_OP_F_EXP:
  case ATL_OP_F_EXPM1:
    return call(f, ATL_OP_F_EXP, u);
  case ATL_OP_F_ABS:
    return dvd(f, call(f, ATL_OP_F_ABS, u), u);
  case ATL_OP_F_ASIN:
    *den = call(f, ATL_OP_F_SQRT, sub(f, f->one, sq(f, u)));
    return f->one;
  case ATL_OP_F_ACOS:
    *den = call(f, ATL_OP_F_SQRT, sub(f, f->one, sq(f, u)));
    return num(f, -1);
  case ATL_OP_F_ATAN:
    *den = add(f, sq(f, u), f->one);
    return f->one;
  case ATL_OP_F_ASINH:
    *den = call(f, ATL_OP_F_SQRT, add(f, sq(f, u), f->one));
    return f->one;
  case ATL_OP_F_ACOSH:
    *den = call(f, ATL_OP_F_SQRT, sub(f, sq(f, u), f->one));
    return f->one;
  case ATL_OP_F_ATANH:
    *den = sub(f, f->one, sq(f, u));
    return f->one;
  case ATL_OP_F_LOG:
    *den = u;
    return f->one;
  case ATL_OP_F_LOG1P:
    *den = add(f, f->one, u);
    return f->one;
  case ATL_OP_F_LOG10:
    *den = mul(f, u, num(f, M_LN10));
    return f->one;
  case ATL_OP_F_LOG2:
    *den = mul(f, u, num(f, M_LN2));
    return f->one;
  case ATL_OP_F_SQRT:
    *den = mul(f, f->two, call(f, ATL_OP_F_SQRT, u));
    return f->one;
  case ATL_OP_F_CBRT:
    *den = mul(f, num(f, 3), sq(f, call(f, ATL_OP_F_CBRT, u)));
    return f->one;
  default:
    f->bad_fn = fn;
    return NONE;
  }
}

static uint32_t D_call(df_t *f, const atl_op_node_t *nd) {
  const uint32_t *k = f->a->kids + nd->k;
  int fn = nd->fn, params = atl__op_fns[fn].params;
  /* A missing argument is NaN, and so is everything computed from it. */
  if (params > 0 && nd->nk < (uint32_t)params)
    return num(f, NAN);
  switch (fn) {
  case ATL_OP_F_CDOT:
  case ATL_OP_F_TIMES:
    return add(f, mul(f, D(f, k[0]), k[1]), mul(f, k[0], D(f, k[1])));
  case ATL_OP_F_FRAC:
    return dvd(f, sub(f, mul(f, D(f, k[0]), k[1]), mul(f, k[0], D(f, k[1]))),
               sq(f, k[1]));
  case ATL_OP_F_POW:
    return pow_rule(f, k[0], k[1], D(f, k[0]), D(f, k[1]), dep(f, k[0]),
                    dep(f, k[1]));
  case ATL_OP_F_ROOTN: {
    /* rootn(x, n) is pow(x, 1/n). */
    uint32_t e = dvd(f, f->one, k[1]);
    uint32_t de = neg(f, dvd(f, D(f, k[1]), sq(f, k[1])));
    return pow_rule(f, k[0], e, D(f, k[0]), de, dep(f, k[0]), dep(f, k[1]));
  }
  case ATL_OP_F_LOGN: {
    /* logn(x, b) is log(x) / log(b). */
    uint32_t l1 = call(f, ATL_OP_F_LOG, k[0]), l2 = call(f, ATL_OP_F_LOG, k[1]);
    uint32_t d1 = dvd(f, D(f, k[0]), k[0]), d2 = dvd(f, D(f, k[1]), k[1]);
    return dvd(f, sub(f, mul(f, d1, l2), mul(f, l1, d2)), sq(f, l2));
  }
  case ATL_OP_F_ATAN2: {
    uint32_t y = k[0], x = k[1];
    return dvd(f, sub(f, mul(f, x, D(f, y)), mul(f, y, D(f, x))),
               add(f, sq(f, x), sq(f, y)));
  }
  case ATL_OP_F_HYPOT: {
    uint32_t s = f->zero;
    for (uint32_t i = 0; i < nd->nk; i++)
      s = add(f, s, mul(f, k[i], D(f, k[i])));
    uint32_t h = mk(f, ATL_OP_N_CALL, ATL_OP_F_HYPOT, 0, k, nd->nk);
    return dvd(f, s, h);
  }
  default:
    break;
  }
  if (params != 1) {
    f->bad_fn = fn;
    return NONE;
  }
  if (!dep(f, k[0]))
    return f->zero;
  uint32_t den, fac = chain(f, fn, k[0], &den);
  uint32_t du = D(f, k[0]);
  if (den != NONE)
    return mul(f, fac, dvd(f, du, den));
  return fac == NONE ? NONE : mul(f, fac, du);
}

static uint32_t D(df_t *f, uint32_t id) {
  if (!dep(f, id))
    return f->zero;
  if (f->memo[id] != NONE)
    return f->memo[id];
  const atl_op_node_t *nd = &f->a->nodes[id];
  const uint32_t *k = nd->nk ? f->a->kids + nd->k : NULL;
  uint32_t r = NONE;
  switch (nd->type) {
  case ATL_OP_N_VAR:
    r = f->one;
    break;
  case ATL_OP_N_SUM:
    r = f->zero;
    for (uint32_t i = 0; i < nd->nk && r != NONE; i++)
      r = add(f, r, D(f, k[i]));
    break;
  case ATL_OP_N_PROD: {
    /* The sum over the factors that depend on the variable of the product
     * with that factor replaced by its derivative. */
    uint32_t *t = malloc(nd->nk * sizeof(*t));
    if (t == NULL) {
      f->d->why = ATL_OP_AST_NOMEM;
      return NONE;
    }
    r = f->zero;
    for (uint32_t j = 0; j < nd->nk && r != NONE; j++) {
      if (!dep(f, k[j]))
        continue;
      uint32_t dj = D(f, k[j]), m = 0;
      for (uint32_t i = 0; i < nd->nk; i++)
        if (i != j)
          t[m++] = k[i];
      uint32_t rest = m == 1 ? t[0] : mk(f, ATL_OP_N_PROD, 0, 0, t, m);
      r = add(f, r, mul(f, rest, dj));
    }
    free(t);
    break;
  }
  case ATL_OP_N_NEG:
    r = neg(f, D(f, k[0]));
    break;
  case ATL_OP_N_INV:
    r = neg(f, dvd(f, D(f, k[0]), sq(f, k[0])));
    break;
  case ATL_OP_N_POW:
    r = pow_rule(f, k[0], k[1], D(f, k[0]), D(f, k[1]), dep(f, k[0]),
                 dep(f, k[1]));
    break;
  case ATL_OP_N_CALL:
    r = D_call(f, nd);
    break;
  default:
    break;
  }
  f->memo[id] = r;
  return r;
}

int atl__op_diff(const atl_op_ast_t *a, uint32_t root, size_t var,
                 atl_op_ast_t *d, uint32_t *droot, char **err) {
  df_t f = {.a = a, .d = d, .var = var, .bad_fn = -1};
  f.memo = malloc(a->n * sizeof(*f.memo));
  f.dep = malloc(a->n);
  d->nodes = malloc((a->n + 8) * sizeof(*d->nodes));
  d->kids = malloc((a->nkids + 8) * sizeof(*d->kids));
  if (f.memo == NULL || f.dep == NULL || d->nodes == NULL || d->kids == NULL) {
    free(f.memo), free(f.dep);
    return atl__op_fail(err, -ENOMEM, "out of memory");
  }
  memset(f.memo, 0xFF, a->n * sizeof(*f.memo));
  memset(f.dep, -1, a->n);
  memcpy(d->nodes, a->nodes, a->n * sizeof(*d->nodes));
  if (a->nkids)
    memcpy(d->kids, a->kids, a->nkids * sizeof(*d->kids));
  d->n = a->n, d->cap = a->n + 8;
  d->nkids = a->nkids, d->kcap = a->nkids + 8;
  f.zero = num(&f, 0), f.one = num(&f, 1), f.two = num(&f, 2);
  uint32_t r = f.two == NONE ? NONE : D(&f, root);
  free(f.memo), free(f.dep);
  if (r != NONE) {
    *droot = r;
    return 0;
  }
  if (f.bad_fn >= 0)
    return atl__op_fail(err, -EINVAL,
                        "%s() has no derivative, and its argument depends on "
                        "the variable differentiated by",
                        atl__op_fns[f.bad_fn].name);
  if (d->why == ATL_OP_AST_NOMEM)
    return atl__op_fail(err, -ENOMEM, "out of memory");
  return atl__op_fail(err, -EINVAL, "the derivative is too %s to compile",
                      d->why == ATL_OP_AST_TOO_DEEP ? "deeply nested"
                                                    : "large");
}
