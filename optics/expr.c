/* Equations (expr.h): the syntax tree's storage, the functions with
 * JavaScript's semantics, code generation with constant folding, and the
 * evaluator. The code is postfix over a value stack whose depth is known
 * at compilation, so evaluating allocates nothing. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr_int.h"

/* The deepest value stack an expression may need, and the most
 * instructions it may have (a derivative repeats subtrees it shares). */
#define STACK_MAX 512
#define CODE_MAX (1u << 20)
#define AST_LIMIT (1u << 22)

const atl_op_fn_info_t atl__op_fns[ATL_OP_F_COUNT] = {
    [ATL_OP_F_ABS] = {"abs", 1},       [ATL_OP_F_ACOS] = {"acos", 1},
    [ATL_OP_F_ACOSH] = {"acosh", 1},   [ATL_OP_F_ASIN] = {"asin", 1},
    [ATL_OP_F_ASINH] = {"asinh", 1},   [ATL_OP_F_ATAN] = {"atan", 1},
    [ATL_OP_F_ATANH] = {"atanh", 1},   [ATL_OP_F_ATAN2] = {"atan2", 2},
    [ATL_OP_F_CBRT] = {"cbrt", 1},     [ATL_OP_F_CEIL] = {"ceil", 1},
    [ATL_OP_F_CLZ32] = {"clz32", 1},   [ATL_OP_F_COS] = {"cos", 1},
    [ATL_OP_F_COSH] = {"cosh", 1},     [ATL_OP_F_EXP] = {"exp", 1},
    [ATL_OP_F_EXPM1] = {"expm1", 1},   [ATL_OP_F_FLOOR] = {"floor", 1},
    [ATL_OP_F_FROUND] = {"fround", 1}, [ATL_OP_F_HYPOT] = {"hypot", -1},
    [ATL_OP_F_IMUL] = {"imul", 2},     [ATL_OP_F_LOG] = {"log", 1},
    [ATL_OP_F_LOG1P] = {"log1p", 1},   [ATL_OP_F_LOG10] = {"log10", 1},
    [ATL_OP_F_LOG2] = {"log2", 1},     [ATL_OP_F_MAX] = {"max", -1},
    [ATL_OP_F_MIN] = {"min", -1},      [ATL_OP_F_POW] = {"pow", 2},
    [ATL_OP_F_ROUND] = {"round", 1},   [ATL_OP_F_SIGN] = {"sign", 1},
    [ATL_OP_F_SIN] = {"sin", 1},       [ATL_OP_F_SINH] = {"sinh", 1},
    [ATL_OP_F_SQRT] = {"sqrt", 1},     [ATL_OP_F_TAN] = {"tan", 1},
    [ATL_OP_F_TANH] = {"tanh", 1},     [ATL_OP_F_TRUNC] = {"trunc", 1},
    [ATL_OP_F_CDOT] = {"cdot", 2},     [ATL_OP_F_TIMES] = {"times", 2},
    [ATL_OP_F_FACT] = {"fact", 1},     [ATL_OP_F_FRAC] = {"frac", 2},
    [ATL_OP_F_LOGN] = {"logn", 2},     [ATL_OP_F_ROOTN] = {"rootn", 2},
    [ATL_OP_F_SEC] = {"sec", 1},       [ATL_OP_F_CSC] = {"csc", 1},
    [ATL_OP_F_COT] = {"cot", 1},       [ATL_OP_F_SECH] = {"sech", 1},
};

enum {
  I_CONST,
  I_VAR,
  I_ZPLUS,
  I_ADD,
  I_SUB,
  I_MUL,
  I_NEG,
  I_INV,
  I_POW,
  I_SQ,
  I_CALL
};

typedef struct {
  uint8_t op;
  uint8_t fn;
  uint16_t argc;
  uint32_t a; /* I_VAR: the variable */
  double v;   /* I_CONST */
} ins_t;

struct atl_op_expr {
  atl_op_ast_t ast; /* kept for differentiation */
  uint32_t root;
  size_t nvars;
  ins_t *code;
  size_t ncode;
  uint8_t *uses; /* nvars flags */
};

uint32_t atl__op_ast_add(atl_op_ast_t *a, int type, int fn, double v,
                         uint32_t k, const uint32_t *kids, uint32_t nk) {
  if (a->n + a->nkids + nk + 1 > a->limit) {
    a->why = ATL_OP_AST_TOO_BIG;
    return ATL_OP_NONE;
  }
  unsigned depth = 0, hasvar = type == ATL_OP_N_VAR;
  for (uint32_t i = 0; i < nk; i++) {
    const atl_op_node_t *c = &a->nodes[kids[i]];
    depth = c->depth > depth ? c->depth : depth;
    hasvar |= c->hasvar;
  }
  if (depth + 1 > ATL_OP_AST_MAX_DEPTH) {
    a->why = ATL_OP_AST_TOO_DEEP;
    return ATL_OP_NONE;
  }
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 32;
    atl_op_node_t *n = realloc(a->nodes, cap * sizeof(*n));
    if (n == NULL) {
      a->why = ATL_OP_AST_NOMEM;
      return ATL_OP_NONE;
    }
    a->nodes = n, a->cap = cap;
  }
  if (a->nkids + nk > a->kcap) {
    size_t cap = (a->nkids + nk) * 2 + 32;
    uint32_t *n = realloc(a->kids, cap * sizeof(*n));
    if (n == NULL) {
      a->why = ATL_OP_AST_NOMEM;
      return ATL_OP_NONE;
    }
    a->kids = n, a->kcap = cap;
  }
  atl_op_node_t *nd = &a->nodes[a->n];
  *nd = (atl_op_node_t){.type = (uint8_t)type,
                        .fn = (uint8_t)fn,
                        .hasvar = (uint8_t)hasvar,
                        .depth = (uint16_t)(depth + 1),
                        .nk = nk,
                        .k = nk ? (uint32_t)a->nkids : k,
                        .v = v};
  if (nk)
    memcpy(a->kids + a->nkids, kids, nk * sizeof(*kids));
  a->nkids += nk;
  return (uint32_t)a->n++;
}

void atl__op_ast_free(atl_op_ast_t *a) {
  free(a->nodes);
  free(a->kids);
  *a = (atl_op_ast_t){0};
}

/* ------------------------------------------------------------------ */
/* JavaScript's Math, where C's differs. */

/* Math.pow: ECMAScript's NaN cases, then V8's pow, which is fdlibm's with
 * its shortcuts for the exponents 1, -1, 2 and 0.5 (where glibc's pow may
 * round differently); otherwise glibc's pow, within an ulp of fdlibm's. */
static double js_pow(double a, double b) {
  if (isnan(b))
    return NAN;
  if (b == 0)
    return 1;
  if ((a == 1 || a == -1) && isinf(b))
    return NAN;
  if (b == 1)
    return a;
  if (b == -1)
    return 1 / a;
  if (b == 2)
    return a * a;
  if (b == 0.5 && !signbit(a))
    return sqrt(a);
  return pow(a, b);
}

static double js_round(double x) {
  if (!isfinite(x) || x == 0)
    return x;
  if (x > 0 && x < 0.5)
    return 0.0;
  if (x < 0 && x >= -0.5)
    return -0.0;
  double r = floor(x);
  return x - r >= 0.5 ? r + 1 : r;
}

static double js_sign(double x) {
  if (isnan(x) || x == 0)
    return x;
  return x > 0 ? 1 : -1;
}

/* Math.max and Math.min: NaN wins, and +0 is above -0. */
static double js_minmax(const double *a, size_t n, int max) {
  double r = max ? -INFINITY : INFINITY;
  for (size_t i = 0; i < n; i++) {
    double x = a[i];
    if (isnan(x))
      return NAN;
    if (max ? (x > r || (x == 0 && r == 0 && !signbit(x)))
            : (x < r || (x == 0 && r == 0 && signbit(x))))
      r = x;
  }
  return r;
}

/* V8's Math.hypot: an infinity wins over NaN, and the sum of squares is
 * scaled by the largest magnitude and added with Kahan's compensation. */
static double js_hypot(const double *a, size_t n) {
  double max = 0;
  int nan = 0;
  for (size_t i = 0; i < n; i++) {
    double x = fabs(a[i]);
    if (isnan(x))
      nan = 1;
    else if (x > max)
      max = x;
  }
  if (isinf(max))
    return INFINITY;
  if (nan)
    return NAN;
  if (max == 0)
    return 0;
  double sum = 0, comp = 0;
  for (size_t i = 0; i < n; i++) {
    double q = fabs(a[i]) / max;
    double term = q * q - comp;
    double next = sum + term;
    comp = (next - sum) - term;
    sum = next;
  }
  return sqrt(sum) * max;
}

static uint32_t js_uint32(double x) {
  if (!isfinite(x))
    return 0;
  double m = fmod(trunc(x), 4294967296.0);
  if (m < 0)
    m += 4294967296.0;
  return (uint32_t)m;
}

/* evaluatex's fact: rounds, refuses negatives (upstream throws; NaN
 * here) and multiplies down to 2; once the product is infinite it stays
 * so, which bounds the loop. */
static double js_fact(double a) {
  a = js_round(a);
  if (a < 0)
    return NAN;
  double r = 1;
  for (; a > 1 && !isinf(r); a--)
    r *= a;
  return r;
}

double atl__op_apply(int fn, const double *x, size_t n) {
  int params = atl__op_fns[fn].params;
  double a[2] = {NAN, NAN};
  if (params > 0)
    for (size_t i = 0; i < (size_t)params && i < n; i++)
      a[i] = x[i];
  switch (fn) {
  case ATL_OP_F_ABS:
    return fabs(a[0]);
  case ATL_OP_F_ACOS:
    return acos(a[0]);
  case ATL_OP_F_ACOSH:
    return acosh(a[0]);
  case ATL_OP_F_ASIN:
    return asin(a[0]);
  case ATL_OP_F_ASINH:
    return asinh(a[0]);
  case ATL_OP_F_ATAN:
    return atan(a[0]);
  case ATL_OP_F_ATANH:
    return atanh(a[0]);
  case ATL_OP_F_ATAN2:
    return atan2(a[0], a[1]);
  case ATL_OP_F_CBRT:
    return cbrt(a[0]);
  case ATL_OP_F_CEIL:
    return ceil(a[0]);
  case ATL_OP_F_CLZ32: {
    uint32_t u = js_uint32(a[0]);
    return u ? __builtin_clz(u) : 32;
  }
  case ATL_OP_F_COS:
    return cos(a[0]);
  case ATL_OP_F_COSH:
    return cosh(a[0]);
  case ATL_OP_F_EXP:
    return exp(a[0]);
  case ATL_OP_F_EXPM1:
    return expm1(a[0]);
  case ATL_OP_F_FLOOR:
    return floor(a[0]);
  case ATL_OP_F_FROUND:
    return (double)(float)a[0];
  case ATL_OP_F_HYPOT:
    return js_hypot(x, n);
  case ATL_OP_F_IMUL:
    return (double)(int32_t)(js_uint32(a[0]) * js_uint32(a[1]));
  case ATL_OP_F_LOG:
    return log(a[0]);
  case ATL_OP_F_LOG1P:
    return log1p(a[0]);
  case ATL_OP_F_LOG10:
    return log10(a[0]);
  case ATL_OP_F_LOG2:
    return log2(a[0]);
  case ATL_OP_F_MAX:
    return js_minmax(x, n, 1);
  case ATL_OP_F_MIN:
    return js_minmax(x, n, 0);
  case ATL_OP_F_POW:
    return js_pow(a[0], a[1]);
  case ATL_OP_F_ROUND:
    return js_round(a[0]);
  case ATL_OP_F_SIGN:
    return js_sign(a[0]);
  case ATL_OP_F_SIN:
    return sin(a[0]);
  case ATL_OP_F_SINH:
    return sinh(a[0]);
  case ATL_OP_F_SQRT:
    return sqrt(a[0]);
  case ATL_OP_F_TAN:
    return tan(a[0]);
  case ATL_OP_F_TANH:
    return tanh(a[0]);
  case ATL_OP_F_TRUNC:
    return trunc(a[0]);
  case ATL_OP_F_CDOT:
  case ATL_OP_F_TIMES:
    return a[0] * a[1];
  case ATL_OP_F_FACT:
    return js_fact(a[0]);
  case ATL_OP_F_FRAC:
    return a[0] / a[1];
  case ATL_OP_F_LOGN:
    return log(a[0]) / log(a[1]);
  case ATL_OP_F_ROOTN:
    return js_pow(a[0], 1 / a[1]);
  case ATL_OP_F_SEC:
    return 1 / cos(a[0]);
  case ATL_OP_F_CSC:
    return 1 / sin(a[0]);
  case ATL_OP_F_COT:
    return 1 / tan(a[0]);
  case ATL_OP_F_SECH:
    return 1 / cosh(a[0]);
  default:
    return NAN;
  }
}

/* Runs code[0 .. n-1] on a stack of STACK_MAX values. */
static double run(const ins_t *code, size_t n, const double *vals) {
  double st[STACK_MAX];
  size_t sp = 0;
  for (size_t i = 0; i < n; i++) {
    const ins_t *in = &code[i];
    switch (in->op) {
    case I_CONST:
      st[sp++] = in->v;
      break;
    case I_VAR:
      st[sp++] = vals[in->a];
      break;
    case I_ZPLUS:
      st[sp - 1] = 0.0 + st[sp - 1];
      break;
    case I_ADD:
      sp--, st[sp - 1] += st[sp];
      break;
    case I_SUB:
      sp--, st[sp - 1] -= st[sp];
      break;
    case I_MUL:
      sp--, st[sp - 1] *= st[sp];
      break;
    case I_NEG:
      st[sp - 1] = -st[sp - 1];
      break;
    case I_INV:
      st[sp - 1] = 1.0 / st[sp - 1];
      break;
    case I_SQ:
      st[sp - 1] *= st[sp - 1];
      break;
    case I_POW:
      sp--, st[sp - 1] = js_pow(st[sp - 1], st[sp]);
      break;
    case I_CALL:
      sp -= in->argc;
      st[sp] = atl__op_apply(in->fn, st + sp, in->argc);
      sp++;
      break;
    }
  }
  return st[0];
}

double atl__op_expr_eval(const atl_op_expr_t *e, const double *values) {
  return run(e->code, e->ncode, values);
}

/* ------------------------------------------------------------------ */
/* Code generation. */

typedef struct {
  const atl_op_ast_t *a;
  ins_t *code;
  size_t n, cap;
  size_t sp, maxsp;
  int rc;
  char **err;
} gen_t;

static void put(gen_t *g, ins_t in, int push) {
  if (g->rc)
    return;
  if (g->n == CODE_MAX) {
    g->rc = atl__op_fail(g->err, -EINVAL,
                         "the equation is too large to compile (more than %u "
                         "operations once expanded)",
                         CODE_MAX);
    return;
  }
  if (g->n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 64;
    ins_t *c = realloc(g->code, cap * sizeof(*c));
    if (c == NULL) {
      g->rc = atl__op_fail(g->err, -ENOMEM, "out of memory");
      return;
    }
    g->code = c, g->cap = cap;
  }
  g->code[g->n++] = in;
  g->sp = (size_t)((ptrdiff_t)g->sp + push);
  if (g->sp > g->maxsp)
    g->maxsp = g->sp;
  if (g->maxsp > STACK_MAX)
    g->rc = atl__op_fail(g->err, -EINVAL,
                         "the equation needs more than %d values at once "
                         "(too many arguments or too deep)",
                         STACK_MAX);
}

static void gen(gen_t *g, uint32_t id);

static void gen_node(gen_t *g, const atl_op_node_t *nd) {
  const uint32_t *kid = nd->nk ? g->a->kids + nd->k : NULL;
  switch (nd->type) {
  case ATL_OP_N_CONST:
    put(g, (ins_t){.op = I_CONST, .v = nd->v}, 1);
    break;
  case ATL_OP_N_VAR:
    put(g, (ins_t){.op = I_VAR, .a = nd->k}, 1);
    break;
  case ATL_OP_N_SUM:
    gen(g, kid[0]);
    if (nd->nk > 1)
      put(g, (ins_t){.op = I_ZPLUS}, 0);
    for (uint32_t i = 1; i < nd->nk; i++) {
      const atl_op_node_t *c = &g->a->nodes[kid[i]];
      /* a + (-b) is a - b exactly, in one instruction fewer. */
      if (c->type == ATL_OP_N_NEG) {
        gen(g, g->a->kids[c->k]);
        put(g, (ins_t){.op = I_SUB}, -1);
      } else {
        gen(g, kid[i]);
        put(g, (ins_t){.op = I_ADD}, -1);
      }
    }
    break;
  case ATL_OP_N_PROD:
    gen(g, kid[0]);
    for (uint32_t i = 1; i < nd->nk; i++) {
      gen(g, kid[i]);
      put(g, (ins_t){.op = I_MUL}, -1);
    }
    break;
  case ATL_OP_N_NEG:
    gen(g, kid[0]);
    put(g, (ins_t){.op = I_NEG}, 0);
    break;
  case ATL_OP_N_INV:
    gen(g, kid[0]);
    put(g, (ins_t){.op = I_INV}, 0);
    break;
  case ATL_OP_N_POW:
    gen(g, kid[0]);
    gen(g, kid[1]);
    /* Math.pow(a, 1) is a and Math.pow(a, 2) is a * a (see js_pow); both
     * are frequent in derivatives, and a call to pow is slow. */
    if (!g->rc && !g->a->nodes[kid[1]].hasvar &&
        (g->code[g->n - 1].v == 1 || g->code[g->n - 1].v == 2)) {
      int sq = g->code[g->n - 1].v == 2;
      g->n--, g->sp--;
      if (sq)
        put(g, (ins_t){.op = I_SQ}, 0);
      break;
    }
    put(g, (ins_t){.op = I_POW}, -1);
    break;
  case ATL_OP_N_CALL:
    for (uint32_t i = 0; i < nd->nk; i++)
      gen(g, kid[i]);
    put(g, (ins_t){.op = I_CALL, .fn = nd->fn, .argc = (uint16_t)nd->nk},
        1 - (int)nd->nk);
    break;
  }
}

/* Generates a subtree; one that reads no variable is evaluated here and
 * becomes its value, computed by the same code as at run time. */
static void gen(gen_t *g, uint32_t id) {
  const atl_op_node_t *nd = &g->a->nodes[id];
  size_t start = g->n, sp = g->sp;
  gen_node(g, nd);
  if (g->rc || nd->hasvar || nd->type == ATL_OP_N_CONST)
    return;
  double v = run(g->code + start, g->n - start, NULL);
  g->n = start, g->sp = sp;
  put(g, (ins_t){.op = I_CONST, .v = v}, 1);
}

int atl__op_build(atl_op_ast_t *a, uint32_t root, size_t nvars,
                  atl_op_expr_t **out, char **err) {
  *out = NULL;
  atl_op_expr_t *e = calloc(1, sizeof(*e));
  uint8_t *uses = calloc(nvars + 1, 1);
  if (e == NULL || uses == NULL) {
    free(e), free(uses);
    atl__op_ast_free(a);
    return atl__op_fail(err, -ENOMEM, "out of memory");
  }
  gen_t g = {.a = a, .err = err};
  gen(&g, root);
  e->ast = *a;
  *a = (atl_op_ast_t){0};
  e->root = root, e->nvars = nvars, e->uses = uses;
  e->code = g.code, e->ncode = g.n;
  if (g.rc) {
    atl__op_expr_free(e);
    return g.rc;
  }
  for (size_t i = 0; i < g.n; i++)
    if (g.code[i].op == I_VAR)
      uses[g.code[i].a] = 1;
  *out = e;
  return 0;
}

int atl__op_expr_compile(const char *latex, const char *const *vars,
                         size_t nvars, atl_op_expr_t **out, char **err) {
  *out = NULL;
  if (err != NULL)
    *err = NULL;
  atl_op_ast_t a = {.limit = AST_LIMIT};
  uint32_t root = 0;
  int rc = atl__op_parse(latex, vars, nvars, &a, &root, err);
  if (rc) {
    atl__op_ast_free(&a);
    return rc;
  }
  return atl__op_build(&a, root, nvars, out, err);
}

int atl__op_expr_derivative(const atl_op_expr_t *e, size_t i,
                            atl_op_expr_t **out, char **err) {
  *out = NULL;
  if (err != NULL)
    *err = NULL;
  if (i >= e->nvars)
    return atl__op_fail(err, -EINVAL,
                        "no variable %zu to differentiate by (the equation "
                        "has %zu)",
                        i, e->nvars);
  atl_op_ast_t d = {.limit = AST_LIMIT};
  uint32_t root = 0;
  int rc = atl__op_diff(&e->ast, e->root, i, &d, &root, err);
  if (rc) {
    atl__op_ast_free(&d);
    return rc;
  }
  return atl__op_build(&d, root, e->nvars, out, err);
}

bool atl__op_expr_uses_var(const atl_op_expr_t *e, size_t i) {
  return i < e->nvars && e->uses[i];
}

void atl__op_expr_free(atl_op_expr_t *e) {
  if (e == NULL)
    return;
  atl__op_ast_free(&e->ast);
  free(e->code);
  free(e->uses);
  free(e);
}
