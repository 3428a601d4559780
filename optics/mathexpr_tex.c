/* Equation templates (mathexpr.h, atl__op_mexpr_to_tex): upstream's
 * ModuleObj.expandEquation. It parses the text with mathjs, replaces the
 * symbols bound to numbers and inlines the `vars` functions (transform),
 * then prints with toTex (parenthesis "keep", implicit "hide") and a
 * handler for symbols and a few functions. The rules below are mathjs's:
 * its precedence table, its parenthesis rules for LaTeX and its function
 * templates, for the node kinds this subset has. */
#include "mathexpr_int.h"
#include "jsnum.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEX_MAX_NODES 200000 /* nodes after inlining */
#define TEX_MAX_INLINE 32    /* nested inlined calls */
#define TEX_MAX_LEN (4u << 20)

void atl__op_mathjs_format(double v, char *buf) {
  if (isnan(v)) {
    strcpy(buf, "NaN");
    return;
  }
  if (isinf(v)) {
    strcpy(buf, v < 0 ? "-Infinity" : "Infinity");
    return;
  }
  if (v == 0) {
    strcpy(buf, "0");
    return;
  }
  char d[24];
  int e, k = atl__op_shortest(fabs(v), d, &e);
  int x = e - 1; /* the exponent of d1.d2d3... */
  char *o = buf;
  if (v < 0)
    *o++ = '-';
  if (x < -3 || x >= 5) {
    o += sprintf(o, "%c", d[0]);
    if (k > 1)
      o += sprintf(o, ".%s", d + 1);
    sprintf(o, "e%c%d", x < 0 ? '-' : '+', abs(x));
  } else if (x < 0) {
    o += sprintf(o, "0.");
    for (int i = 0; i < -x - 1; i++)
      *o++ = '0';
    strcpy(o, d);
  } else {
    for (int i = 0; i <= x; i++)
      *o++ = i < k ? d[i] : '0';
    *o = '\0';
    if (k > x + 1)
      sprintf(o, ".%s", d + x + 1);
  }
}

/* Function definitions, upstream's funcDefs. */
typedef struct {
  char *name;
  atl_op_xnode_t *def; /* an XN_FNDEF: params and body */
} texdef_t;

struct atl_op_texdefs {
  texdef_t *v;
  size_t n;
};

atl_op_texdefs_t *atl__op_texdefs_new(void) {
  return calloc(1, sizeof(atl_op_texdefs_t));
}

void atl__op_texdefs_free(atl_op_texdefs_t *d) {
  if (d == NULL)
    return;
  for (size_t i = 0; i < d->n; i++) {
    free(d->v[i].name);
    atl__op_xnode_free(d->v[i].def);
  }
  free(d->v);
  free(d);
}

static const texdef_t *texdef_find(const atl_op_texdefs_t *d,
                                   const char *name) {
  for (size_t i = 0; d && i < d->n; i++)
    if (strcmp(d->v[i].name, name) == 0)
      return &d->v[i];
  return NULL;
}

static int is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

/* Upstream matches /^(\w+)\s*\(\s*([^)]+)\s*\)\s*=\s*(.+)$/, splits the
 * parameters on commas (trimmed) and keeps the body's text. */
int atl__op_texdefs_add(atl_op_texdefs_t *d, const char *var, char **err) {
  const char *p = var, *name = p;
  *err = NULL;
  while (is_word(*p))
    p++;
  size_t nlen = (size_t)(p - name);
  while (*p == ' ' || *p == '\t')
    p++;
  if (nlen == 0 || *p != '(')
    return 0;
  const char *close = strchr(p, ')');
  if (close == NULL || close == p + 1 || memchr(p, '\n', (size_t)(close - p)))
    return 0;
  const char *q = close + 1;
  while (*q == ' ' || *q == '\t')
    q++;
  if (*q != '=')
    return 0;
  q++;
  while (*q == ' ' || *q == '\t')
    q++;
  if (*q == '\0' || *q == '\n' || strchr(q, '\n'))
    return 0;
  atl_op_xnode_t *body;
  if (atl__op_xparse(q, strlen(q), &body, err) < 0)
    return -EINVAL;
  if (body == NULL)
    return 0;
  atl_op_xnode_t *def = atl__op_xnode_new(XN_FNDEF, 1);
  char *nm = strndup(name, nlen);
  size_t np = 1;
  for (const char *c = p + 1; c < close; c++)
    np += *c == ',';
  if (def)
    def->params = calloc(np, sizeof(char *));
  if (def == NULL || nm == NULL || def->params == NULL) {
    atl__op_xnode_free(def);
    atl__op_xnode_free(body);
    free(nm);
    return -ENOMEM;
  }
  def->args[0] = body;
  for (const char *s = p + 1; s <= close && def->nparams < np;) {
    const char *e = s;
    while (e < close && *e != ',')
      e++;
    const char *a = s, *b = e;
    while (a < b && (*a == ' ' || *a == '\t'))
      a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
      b--;
    if ((def->params[def->nparams] = strndup(a, (size_t)(b - a))) == NULL)
      break;
    def->nparams++;
    s = e + 1;
  }
  texdef_t *old = (texdef_t *)texdef_find(d, nm);
  if (old) {
    atl__op_xnode_free(old->def);
    old->def = def;
    free(nm);
    return 1;
  }
  texdef_t *v = realloc(d->v, (d->n + 1) * sizeof(*v));
  if (v == NULL) {
    atl__op_xnode_free(def);
    free(nm);
    return -ENOMEM;
  }
  d->v = v;
  d->v[d->n++] = (texdef_t){nm, def};
  return 1;
}

typedef struct {
  const atl_op_scope_t *scope;
  const atl_op_texdefs_t *defs;
  long nodes;
  int depth;
  char *err;
} tctx_t;

static int terr(tctx_t *c, char *msg) {
  if (c->err == NULL)
    c->err = msg ? msg : strdup("Out of memory");
  return -EINVAL;
}

/* math.parse(value.toString()) for a number bound in the scope. */
static atl_op_xnode_t *number_node(tctx_t *c, double v) {
  char buf[ATL_OP_JSNUM_MAX];
  size_t n = atl__op_jsnum(v, buf);
  atl_op_xnode_t *r;
  char *e = NULL;
  if (atl__op_xparse(buf, n, &r, &e) < 0 || r == NULL) {
    terr(c, e);
    return NULL;
  }
  return r;
}

static atl_op_xnode_t *subst(tctx_t *c, const atl_op_xnode_t *n);

/* The body of def with its parameters replaced by the call's arguments
 * (as written, not yet transformed) and its other symbols bound to
 * numbers replaced by them; upstream's inner transform. */
static atl_op_xnode_t *bind_body(tctx_t *c, const atl_op_xnode_t *b,
                                 const atl_op_xnode_t *def,
                                 const atl_op_xnode_t *call) {
  if (++c->nodes > TEX_MAX_NODES) {
    terr(c, strdup("Equation too large after inlining functions"));
    return NULL;
  }
  if (b->kind == XN_SYM) {
    for (uint32_t i = 0; i < def->nparams && i < call->nargs; i++)
      if (strcmp(def->params[i], b->name) == 0)
        return atl__op_xnode_clone(call->args[i]);
    double v;
    if (atl__op_scope_get_num(c->scope, b->name, &v) == 0)
      return number_node(c, v);
  }
  atl_op_xnode_t *r = atl__op_xnode_clone(b);
  if (r == NULL)
    return NULL;
  for (uint32_t i = 0; i < r->nargs; i++) {
    atl__op_xnode_free(r->args[i]);
    if ((r->args[i] = bind_body(c, b->args[i], def, call)) == NULL) {
      atl__op_xnode_free(r);
      return NULL;
    }
  }
  return r;
}

/* Upstream's transformNode. */
static atl_op_xnode_t *subst(tctx_t *c, const atl_op_xnode_t *n) {
  if (++c->nodes > TEX_MAX_NODES) {
    terr(c, strdup("Equation too large after inlining functions"));
    return NULL;
  }
  double v;
  if (n->kind == XN_SYM && atl__op_scope_get_num(c->scope, n->name, &v) == 0)
    return number_node(c, v);
  const texdef_t *d;
  if (n->kind == XN_CALL && n->nargs > 0 &&
      (d = texdef_find(c->defs, n->name)) != NULL) {
    if (c->depth >= TEX_MAX_INLINE) {
      terr(c, atl__op_xfmt("Functions inlined too deeply (more than %d) at "
                           "%s",
                           TEX_MAX_INLINE, n->name));
      return NULL;
    }
    atl_op_xnode_t *b = bind_body(c, d->def->args[0], d->def, n);
    if (b == NULL)
      return NULL;
    c->depth++;
    atl_op_xnode_t *r = subst(c, b);
    c->depth--;
    atl__op_xnode_free(b);
    return r;
  }
  atl_op_xnode_t *r = atl__op_xnode_clone(n);
  if (r == NULL) {
    terr(c, NULL);
    return NULL;
  }
  for (uint32_t i = 0; i < r->nargs; i++) {
    atl__op_xnode_free(r->args[i]);
    if ((r->args[i] = subst(c, n->args[i])) == NULL) {
      atl__op_xnode_free(r);
      return NULL;
    }
  }
  return r;
}

/* A growing string. */
typedef struct {
  char *s;
  size_t n, cap;
  int bad;
} sbuf_t;

static void put(sbuf_t *b, const char *s) {
  size_t k = strlen(s);
  if (b->bad)
    return;
  if (b->n + k + 1 > TEX_MAX_LEN) {
    b->bad = 2;
    return;
  }
  if (b->n + k + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + k + 1)
      cap *= 2;
    char *g = realloc(b->s, cap);
    if (g == NULL) {
      b->bad = 1;
      return;
    }
    b->s = g;
    b->cap = cap;
  }
  memcpy(b->s + b->n, s, k + 1);
  b->n += k;
}

/* mathjs's precedence levels (operators.js) for this subset: -1 is none
 * (constants, symbols, calls, parentheses in "keep" mode). */
static int prec(const atl_op_xnode_t *n) {
  switch (n->kind) {
  case XN_ASSIGN:
  case XN_FNDEF:
    return 0;
  case XN_COND:
    return 1;
  case XN_REL:
    return n->nargs == 2 ? 8 : 8;
  case XN_OP:
    switch (n->op) {
    case XO_OR:
      return 2;
    case XO_XOR:
      return 3;
    case XO_AND:
      return 4;
    case XO_ADD:
    case XO_SUB:
      return 12;
    case XO_MUL:
      return n->implicit ? 14 : 13;
    case XO_DIV:
      return 13;
    case XO_MOD:
      return 15;
    case XO_NEG:
    case XO_POS:
    case XO_NOT:
      return 16;
    case XO_POW:
      return 17;
    default:
      return 18; /* factorial */
    }
  default:
    return -1;
  }
}

static int is_div(const atl_op_xnode_t *n) {
  return n->kind == XN_OP && n->op == XO_DIV;
}

static int no_latex_parens(const atl_op_xnode_t *n) {
  return is_div(n) || n->kind == XN_COND;
}

static const char *op_tex(int op) {
  static const char *const t[] = {
      [XO_ADD] = "+",        [XO_SUB] = "-",       [XO_MUL] = "\\cdot",
      [XO_DIV] = "\\frac",   [XO_MOD] = "\\mod",   [XO_POW] = "^",
      [XO_NEG] = "-",        [XO_POS] = "+",       [XO_NOT] = "\\neg",
      [XO_FACT] = "!",       [XO_AND] = "\\wedge", [XO_OR] = "\\vee",
      [XO_XOR] = "\\veebar", [XO_EQ] = "=",        [XO_NE] = "\\neq",
      [XO_LT] = "<",         [XO_GT] = ">",        [XO_LE] = "\\leq",
      [XO_GE] = "\\geq"};
  return t[op];
}

static void tex(sbuf_t *b, const atl_op_xnode_t *n);

static void tex_paren(sbuf_t *b, const atl_op_xnode_t *n, int parens) {
  if (parens)
    put(b, "\\left(");
  tex(b, n);
  if (parens)
    put(b, "\\right)");
}

/* The handler's symbols: x_1 is " x_{1}", theta_0 "\theta_{0}", t " t",
 * lambda "\lambda". */
static void tex_symbol(sbuf_t *b, const char *name) {
  const char *u = strchr(name, '_');
  size_t base = u ? (size_t)(u - name) : strlen(name);
  char *bs = strndup(name, base);
  if (bs == NULL) {
    b->bad = 1;
    return;
  }
  put(b, base == 1 ? " " : "\\");
  put(b, bs);
  free(bs);
  if (u) {
    put(b, "_{");
    put(b, u + 1);
    put(b, "}");
  }
}

static void tex_number(sbuf_t *b, double v) {
  char buf[48];
  if (!isfinite(v)) {
    put(b, v < 0 ? "-\\infty" : "\\infty");
    return;
  }
  atl__op_mathjs_format(v, buf);
  char *e = strchr(buf, 'e');
  if (e) {
    *e = '\0';
    put(b, buf);
    put(b, "\\cdot10^{");
    put(b, e + 1);
    put(b, "}");
  } else {
    put(b, buf);
  }
}

static void tex_args(sbuf_t *b, const atl_op_xnode_t *n) {
  for (uint32_t i = 0; i < n->nargs; i++) {
    if (i)
      put(b, ",");
    tex(b, n->args[i]);
  }
}

/* FunctionNode: upstream's handler first, then mathjs's latexFunctions,
 * then \mathrm{name}\left(args\right). */
static void tex_call(sbuf_t *b, const atl_op_xnode_t *n) {
  static const char *const handler[][2] = {
      {"log", "\\log"},
      {"asin", "\\arcsin"},
      {"acos", "\\arccos"},
      {"atan", "\\arctan"},
      {"asinh", "\\operatorname{asinh}"},
      {"acosh", "\\operatorname{acosh}"},
      {"atanh", "\\operatorname{atanh}"},
      {"floor", "\\operatorname{floor}"},
      {"ceil", "\\operatorname{ceil}"},
      {"round", "\\operatorname{round}"},
      {"sign", "\\operatorname{sign}"},
  };
  /* name, argument count, prefix, between, suffix */
  static const char *const fns[][5] = {
      {"sin", "1", "\\sin\\left(", "", "\\right)"},
      {"cos", "1", "\\cos\\left(", "", "\\right)"},
      {"tan", "1", "\\tan\\left(", "", "\\right)"},
      {"sec", "1", "\\sec\\left(", "", "\\right)"},
      {"csc", "1", "\\csc\\left(", "", "\\right)"},
      {"cot", "1", "\\cot\\left(", "", "\\right)"},
      {"sinh", "1", "\\sinh\\left(", "", "\\right)"},
      {"cosh", "1", "\\cosh\\left(", "", "\\right)"},
      {"tanh", "1", "\\tanh\\left(", "", "\\right)"},
      {"exp", "1", "\\exp\\left(", "", "\\right)"},
      {"abs", "1", "\\left|", "", "\\right|"},
      {"sqrt", "1", "\\sqrt{", "", "}"},
      {"cbrt", "1", "\\sqrt[3]{", "", "}"},
      {"log10", "1", "\\log_{10}\\left(", "", "\\right)"},
      {"log2", "1", "\\log_{2}\\left(", "", "\\right)"},
      {"square", "1", "\\left(", "", "\\right)^2"},
      {"cube", "1", "\\left(", "", "\\right)^3"},
      {"factorial", "1", "\\left(", "", "\\right)!"},
      {"pow", "2", "\\left(", "\\right)^{", "}"},
      {"mod", "2", "\\left(", "\\mod", "\\right)"},
      {"atan2", "2", "\\mathrm{atan2}\\left(", ",", "\\right)"},
  };
  for (size_t i = 0; i < sizeof(handler) / sizeof(*handler); i++)
    if (strcmp(n->name, handler[i][0]) == 0 && n->nargs > 0) {
      put(b, handler[i][1]);
      put(b, "\\left(");
      tex(b, n->args[0]);
      put(b, "\\right)");
      return;
    }
  for (size_t i = 0; i < sizeof(fns) / sizeof(*fns); i++)
    if (strcmp(n->name, fns[i][0]) == 0 &&
        n->nargs == (uint32_t)(fns[i][1][0] - '0')) {
      put(b, fns[i][2]);
      tex(b, n->args[0]);
      if (n->nargs == 2) {
        put(b, fns[i][3]);
        tex(b, n->args[1]);
      }
      put(b, fns[i][4]);
      return;
    }
  if (strcmp(n->name, "max") == 0 || strcmp(n->name, "min") == 0) {
    put(b, n->name[1] == 'a' ? "\\max\\left(" : "\\min\\left(");
  } else {
    put(b, "\\mathrm{");
    put(b, n->name);
    put(b, "}\\left(");
  }
  tex_args(b, n);
  put(b, "\\right)");
}

static void tex_op(sbuf_t *b, const atl_op_xnode_t *n) {
  int p = prec(n);
  if (n->nargs == 1) {
    const atl_op_xnode_t *a = n->args[0];
    int ap = prec(a);
    int parens = ap >= 0 && !no_latex_parens(a) && ap <= p;
    if (n->op == XO_FACT) {
      tex_paren(b, a, parens);
      put(b, "!");
    } else {
      put(b, op_tex(n->op));
      tex_paren(b, a, parens);
    }
    return;
  }
  const atl_op_xnode_t *l = n->args[0], *r = n->args[1];
  int lp = prec(l), rp = prec(r);
  int right = n->op == XO_POW;
  /* Which operators a node is associative with (mathjs associativeWith). */
  int assoc_r = (n->op == XO_ADD && r->kind == XN_OP &&
                 (r->op == XO_ADD || r->op == XO_SUB)) ||
                (n->op == XO_MUL && r->kind == XN_OP &&
                 (r->op == XO_MUL || r->op == XO_DIV));
  int lpar = lp >= 0 && (lp < p || (lp == p && right));
  int rpar = rp >= 0 && (rp < p || (rp == p && !right && !assoc_r));
  if (lp >= 0 && (is_div(n) || no_latex_parens(l)))
    lpar = 0;
  if (rp >= 0 && (is_div(n) || right || no_latex_parens(r)))
    rpar = 0;
  if (is_div(n)) {
    put(b, "\\frac{");
    tex_paren(b, l, lpar);
    put(b, "}{");
    tex_paren(b, r, rpar);
    put(b, "}");
    return;
  }
  if (n->op == XO_POW) {
    int wrap = is_div(l) || l->kind == XN_COND;
    put(b, wrap ? "\\left({" : "{");
    tex_paren(b, l, lpar);
    put(b, wrap ? "}\\right)^{" : "}^{");
    tex_paren(b, r, rpar);
    put(b, "}");
    return;
  }
  tex_paren(b, l, lpar);
  put(b, n->op == XO_MUL && n->implicit ? "~" : op_tex(n->op));
  tex_paren(b, r, rpar);
}

static void tex(sbuf_t *b, const atl_op_xnode_t *n) {
  if (b->bad)
    return;
  switch (n->kind) {
  case XN_NUM:
    tex_number(b, n->num);
    break;
  case XN_BOOL:
    put(b, n->num != 0 ? "true" : "false");
    break;
  case XN_SYM:
    tex_symbol(b, n->name);
    break;
  case XN_PAREN:
    tex_paren(b, n->args[0], 1);
    break;
  case XN_OP:
    tex_op(b, n);
    break;
  case XN_REL: {
    if (n->nargs == 2) {
      /* One comparison is an OperatorNode: left-associative, no
       * associativity with itself. */
      int lp = prec(n->args[0]), rp = prec(n->args[1]);
      tex_paren(b, n->args[0], lp >= 0 && lp < 8 && lp != 1);
      put(b, op_tex(n->rels[0]));
      tex_paren(b, n->args[1], rp >= 0 && rp <= 8 && rp != 1);
      break;
    }
    for (uint32_t i = 0; i < n->nargs; i++) {
      int ap = prec(n->args[i]);
      if (i)
        put(b, op_tex(n->rels[i - 1]));
      tex_paren(b, n->args[i], ap >= 0 && ap <= 8);
    }
    break;
  }
  case XN_COND:
    put(b, "\\begin{cases} {");
    tex(b, n->args[1]);
    put(b, "}, &\\quad{\\text{if }\\;");
    tex(b, n->args[0]);
    put(b, "}\\\\{");
    tex(b, n->args[2]);
    put(b, "}, &\\quad{\\text{otherwise}}\\end{cases}");
    break;
  case XN_CALL:
    tex_call(b, n);
    break;
  default:
    b->bad = 3; /* assignments have no place in an equation */
    break;
  }
}

int atl__op_mexpr_to_tex(const char *src, size_t len,
                         const atl_op_scope_t *scope,
                         const atl_op_texdefs_t *defs, char **out, char **err) {
  *out = NULL;
  *err = NULL;
  atl_op_xnode_t *root;
  if (atl__op_xparse(src, len, &root, err) < 0)
    return -EINVAL;
  if (root == NULL) {
    *err = strdup("Empty equation");
    return -EINVAL;
  }
  tctx_t c = {.scope = scope, .defs = defs};
  atl_op_xnode_t *t = subst(&c, root);
  atl__op_xnode_free(root);
  if (t == NULL) {
    *err = c.err ? c.err : strdup("Out of memory");
    return -EINVAL;
  }
  sbuf_t b = {0};
  tex(&b, t);
  atl__op_xnode_free(t);
  if (b.bad || b.s == NULL) {
    free(b.s);
    *err = strdup(b.bad == 2   ? "Equation longer than 4 MiB after inlining"
                  : b.bad == 3 ? "An assignment cannot be part of an equation"
                               : "Out of memory");
    return -EINVAL;
  }
  *out = b.s;
  return 0;
}
