/* The mathjs-subset parser (mathexpr.h): mathjs's tokenizer and its
 * recursive descent by precedence, assignment (lowest), conditional, or,
 * xor, and, comparisons, add/subtract, multiply/divide, implicit
 * multiplication, "rule 2" (number/number before a symbol), % and mod,
 * unary, power (right-associative, its exponent may carry a sign),
 * postfix !, then symbols, calls, numbers and parentheses. The tree keeps
 * parentheses and the implicit flag, which the LaTeX writer needs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "mathexpr_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

atl_op_xnode_t *atl__op_xnode_new(atl_op_xkind_t kind, uint32_t nargs) {
  atl_op_xnode_t *n = calloc(1, sizeof(*n));
  if (n == NULL)
    return NULL;
  n->kind = (uint8_t)kind;
  n->nargs = nargs;
  if (nargs > 0) {
    n->args = calloc(nargs, sizeof(*n->args));
    if (n->args == NULL) {
      free(n);
      return NULL;
    }
  }
  return n;
}

void atl__op_xnode_free(atl_op_xnode_t *n) {
  if (n == NULL)
    return;
  for (uint32_t i = 0; i < n->nargs; i++)
    atl__op_xnode_free(n->args[i]);
  for (uint32_t i = 0; i < n->nparams; i++)
    free(n->params[i]);
  free(n->params);
  free(n->args);
  free(n->rels);
  free(n->name);
  free(n);
}

atl_op_xnode_t *atl__op_xnode_clone(const atl_op_xnode_t *n) {
  atl_op_xnode_t *c = atl__op_xnode_new((atl_op_xkind_t)n->kind, n->nargs);
  if (c == NULL)
    return NULL;
  c->op = n->op;
  c->implicit = n->implicit;
  c->num = n->num;
  if (n->name && (c->name = strdup(n->name)) == NULL)
    goto fail;
  for (uint32_t i = 0; i < n->nargs; i++)
    if ((c->args[i] = atl__op_xnode_clone(n->args[i])) == NULL)
      goto fail;
  if (n->rels) {
    if ((c->rels = malloc(n->nargs)) == NULL)
      goto fail;
    memcpy(c->rels, n->rels, n->nargs - 1);
  }
  if (n->nparams) {
    if ((c->params = calloc(n->nparams, sizeof(char *))) == NULL)
      goto fail;
    c->nparams = n->nparams;
    for (uint32_t i = 0; i < n->nparams; i++)
      if ((c->params[i] = strdup(n->params[i])) == NULL)
        goto fail;
  }
  return c;
fail:
  atl__op_xnode_free(c);
  return NULL;
}

/* Tokens, as mathjs types them. */
enum { T_END, T_DELIM, T_NUM, T_SYM };

typedef struct {
  const char *s;
  size_t len, pos;
  int type;
  size_t tstart, tlen; /* the token's text */
  int nesting;         /* open parentheses: newlines inside are spaces */
  int depth;           /* recursion, against hostile nesting */
  char *err;
  int oom;
} pstate_t;

static const char *const delims3[] = {">>>"};
static const char *const delims2[] = {
    ".*", "./", ".^", "^|", "==", "!=", "<=", ">=", "<<", ">>"};
static const char delims1[] = ",()[]{}\"';+-*/%^~!&|=:?<>";
static const char *const named[] = {"mod", "to", "in", "and",
                                    "xor", "or", "not"};

static int tok_is(const pstate_t *p, const char *t) {
  size_t n = strlen(t);
  return p->type != T_END && p->type != T_NUM && p->tlen == n &&
         memcmp(p->s + p->tstart, t, n) == 0;
}

static int is_alpha(unsigned char c) {
  /* mathjs accepts Latin-1, Greek and letter-like symbols too; any
   * non-ASCII byte stands in for them here. */
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         c == '$' || c >= 0x80;
}

static int is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

static char at(const pstate_t *p, size_t i) {
  return p->pos + i < p->len ? p->s[p->pos + i] : '\0';
}

/* Records the first error: mathjs's message and the 1-based column of the
 * current token. */
static void perr(pstate_t *p, const char *msg, const char *arg) {
  if (p->err || p->oom)
    return;
  size_t col = p->tstart + 1;
  p->err = arg ? atl__op_xfmt("%s%s (char %zu)", msg, arg, col)
               : atl__op_xfmt("%s (char %zu)", msg, col);
  if (p->err == NULL)
    p->oom = 1;
}

static void next_token(pstate_t *p) {
  if (p->err)
    return;
  for (;;) {
    char c = at(p, 0);
    if (c == ' ' || c == '\t' || c == '\r' || (c == '\n' && p->nesting > 0)) {
      p->pos++;
    } else if (c == '#') {
      while (p->pos < p->len && p->s[p->pos] != '\n')
        p->pos++;
    } else {
      break;
    }
  }
  p->tstart = p->pos;
  p->tlen = 0;
  if (p->pos >= p->len) {
    p->type = T_END;
    return;
  }
  const char *s = p->s + p->pos;
  size_t left = p->len - p->pos;
  p->type = T_DELIM;
  if (s[0] == '\n' || s[0] == '\0') {
    /* mathjs would start a new statement (a block); not supported. */
    p->tlen = 1;
    perr(p, "Multiple statements are not supported", NULL);
    return;
  }
  for (size_t i = 0; i < sizeof(delims3) / sizeof(*delims3); i++)
    if (left >= 3 && memcmp(s, delims3[i], 3) == 0) {
      p->tlen = 3;
      p->pos += 3;
      return;
    }
  for (size_t i = 0; i < sizeof(delims2) / sizeof(*delims2); i++)
    if (left >= 2 && memcmp(s, delims2[i], 2) == 0) {
      p->tlen = 2;
      p->pos += 2;
      return;
    }
  if (strchr(delims1, s[0])) {
    p->tlen = 1;
    p->pos++;
    return;
  }
  if (is_digit((unsigned char)s[0]) || s[0] == '.') {
    p->type = T_NUM;
    if (s[0] == '0' &&
        (at(p, 1) == 'b' || at(p, 1) == 'o' || at(p, 1) == 'x')) {
      p->tlen = 2;
      perr(p, "Binary, octal and hexadecimal numbers are not supported", NULL);
      return;
    }
    if (s[0] == '.') {
      p->pos++;
      if (!is_digit((unsigned char)at(p, 0))) {
        p->type = T_DELIM; /* a lone dot: property access */
        p->tlen = 1;
        return;
      }
    } else {
      while (is_digit((unsigned char)at(p, 0)))
        p->pos++;
      if (at(p, 0) == '.' && at(p, 1) != '/' && at(p, 1) != '*' &&
          at(p, 1) != '^')
        p->pos++;
    }
    while (is_digit((unsigned char)at(p, 0)))
      p->pos++;
    if (at(p, 0) == 'e' || at(p, 0) == 'E') {
      char n1 = at(p, 1);
      if (is_digit((unsigned char)n1) || n1 == '-' || n1 == '+') {
        p->pos++;
        if (at(p, 0) == '+' || at(p, 0) == '-')
          p->pos++;
        if (!is_digit((unsigned char)at(p, 0))) {
          p->tlen = p->pos - p->tstart;
          char got[2] = {at(p, 0), 0};
          perr(p, "Digit expected, got ", got[0] ? got : "end");
          return;
        }
        while (is_digit((unsigned char)at(p, 0)))
          p->pos++;
      } else if (n1 == '.') {
        p->tlen = p->pos - p->tstart;
        perr(p, "Digit expected, got \".\"", NULL);
        return;
      }
    }
    p->tlen = p->pos - p->tstart;
    return;
  }
  if (is_alpha((unsigned char)s[0])) {
    while (is_alpha((unsigned char)at(p, 0)) ||
           is_digit((unsigned char)at(p, 0)))
      p->pos++;
    p->tlen = p->pos - p->tstart;
    p->type = T_SYM;
    for (size_t i = 0; i < sizeof(named) / sizeof(*named); i++)
      if (p->tlen == strlen(named[i]) && memcmp(s, named[i], p->tlen) == 0)
        p->type = T_DELIM;
    return;
  }
  p->tlen = left;
  perr(p, "Syntax error in part \"", "...\"");
}

static char *tok_dup(pstate_t *p) {
  char *s = strndup(p->s + p->tstart, p->tlen);
  if (s == NULL)
    p->oom = 1;
  return s;
}

static atl_op_xnode_t *mk(pstate_t *p, atl_op_xkind_t kind, uint32_t nargs) {
  atl_op_xnode_t *n = atl__op_xnode_new(kind, nargs);
  if (n == NULL)
    p->oom = 1;
  return n;
}

/* Sets n's height from its children; a tree taller than the limit is an
 * error (n is freed), since evaluation and printing recurse over it. */
static atl_op_xnode_t *height(pstate_t *p, atl_op_xnode_t *n) {
  if (n == NULL)
    return NULL;
  unsigned h = 0;
  for (uint32_t i = 0; i < n->nargs; i++)
    if (n->args[i] && n->args[i]->height > h)
      h = n->args[i]->height;
  if (h + 1 > ATL_OP_XNODE_MAX_HEIGHT) {
    perr(p, "Expression nested too deeply (more than 256 levels)", NULL);
    atl__op_xnode_free(n);
    return NULL;
  }
  n->height = (uint16_t)(h + 1);
  return n;
}

static atl_op_xnode_t *mk_op(pstate_t *p, atl_op_xop_t op, atl_op_xnode_t *a,
                             atl_op_xnode_t *b) {
  atl_op_xnode_t *n =
      (a == NULL || (b == NULL && op != XO_NEG && op != XO_POS &&
                     op != XO_NOT && op != XO_FACT))
          ? NULL
          : mk(p, XN_OP, b ? 2 : 1);
  if (n == NULL) {
    atl__op_xnode_free(a);
    atl__op_xnode_free(b);
    return NULL;
  }
  n->op = (uint8_t)op;
  n->args[0] = a;
  if (b)
    n->args[1] = b;
  return height(p, n);
}

static int failed(const pstate_t *p) {
  return p->err != NULL || p->oom;
}

static atl_op_xnode_t *parse_assign(pstate_t *p);
static atl_op_xnode_t *parse_unary(pstate_t *p);

/* A construct mathjs has and this subset does not: an error, n freed. */
static atl_op_xnode_t *reject(pstate_t *p, atl_op_xnode_t *n, const char *msg) {
  perr(p, msg, NULL);
  atl__op_xnode_free(n);
  return NULL;
}
static atl_op_xnode_t *parse_or(pstate_t *p);

/* Deeper than the limit is an error rather than a stack overflow. */
static int enter(pstate_t *p) {
  if (++p->depth > ATL_OP_MEXPR_MAX_DEPTH) {
    perr(p, "Expression nested too deeply (more than 200 levels)", NULL);
    return -1;
  }
  return 0;
}

/* A comma-separated list up to ')' after a call's '(' (already consumed). */
static atl_op_xnode_t *parse_call(pstate_t *p, char *name) {
  atl_op_xnode_t **args = NULL;
  uint32_t n = 0, cap = 0;
  p->nesting++;
  next_token(p);
  if (!tok_is(p, ")")) {
    for (;;) {
      atl_op_xnode_t *a = parse_assign(p);
      if (a == NULL)
        goto fail;
      if (n == cap) {
        cap = cap ? 2 * cap : 4;
        atl_op_xnode_t **g = realloc(args, cap * sizeof(*args));
        if (g == NULL) {
          p->oom = 1;
          atl__op_xnode_free(a);
          goto fail;
        }
        args = g;
      }
      args[n++] = a;
      if (!tok_is(p, ","))
        break;
      next_token(p);
    }
  }
  if (!tok_is(p, ")")) {
    perr(p, "Parenthesis ) expected", NULL);
    goto fail;
  }
  p->nesting--;
  next_token(p);
  atl_op_xnode_t *c = mk(p, XN_CALL, 0);
  if (c == NULL)
    goto fail;
  c->name = name;
  c->args = args;
  c->nargs = n;
  return height(p, c);
fail:
  for (uint32_t i = 0; i < n; i++)
    atl__op_xnode_free(args[i]);
  free(args);
  free(name);
  return NULL;
}

static atl_op_xnode_t *parse_primary(pstate_t *p) {
  if (failed(p))
    return NULL;
  if (p->type == T_SYM ||
      (p->type == T_DELIM && is_alpha((unsigned char)p->s[p->tstart]))) {
    char *name = tok_dup(p);
    if (name == NULL)
      return NULL;
    next_token(p);
    atl_op_xnode_t *n;
    if (strcmp(name, "true") == 0 || strcmp(name, "false") == 0) {
      if ((n = mk(p, XN_BOOL, 0)) != NULL)
        n->num = name[0] == 't';
      free(name);
    } else if (strcmp(name, "NaN") == 0 || strcmp(name, "Infinity") == 0) {
      if ((n = mk(p, XN_NUM, 0)) != NULL)
        n->num = name[0] == 'N' ? NAN : INFINITY;
      free(name);
    } else if (strcmp(name, "null") == 0 || strcmp(name, "undefined") == 0) {
      perr(p, "null and undefined are not supported", NULL);
      free(name);
      return NULL;
    } else if (tok_is(p, "(")) {
      return parse_call(p, name);
    } else {
      if ((n = mk(p, XN_SYM, 0)) != NULL)
        n->name = name;
      else
        free(name);
    }
    if (n && (tok_is(p, "[") || tok_is(p, ".")))
      return reject(p, n, "Indexing and properties are not supported");
    return n;
  }
  if (p->type == T_NUM) {
    char buf[64];
    atl_op_xnode_t *n = mk(p, XN_NUM, 0);
    if (n == NULL)
      return NULL;
    if (p->tlen < sizeof(buf)) {
      memcpy(buf, p->s + p->tstart, p->tlen);
      buf[p->tlen] = 0;
      n->num = strtod(buf, NULL);
    } else {
      char *t = tok_dup(p);
      n->num = t ? strtod(t, NULL) : 0;
      free(t);
    }
    next_token(p);
    return n;
  }
  if (tok_is(p, "(")) {
    p->nesting++;
    next_token(p);
    atl_op_xnode_t *in = parse_assign(p);
    if (in == NULL)
      return NULL;
    if (!tok_is(p, ")")) {
      perr(p, "Parenthesis ) expected", NULL);
      atl__op_xnode_free(in);
      return NULL;
    }
    p->nesting--;
    next_token(p);
    atl_op_xnode_t *n = mk(p, XN_PAREN, 1);
    if (n == NULL) {
      atl__op_xnode_free(in);
      return NULL;
    }
    n->args[0] = in;
    return height(p, n);
  }
  if (tok_is(p, "\"") || tok_is(p, "'"))
    perr(p, "Strings are not supported", NULL);
  else if (tok_is(p, "[") || tok_is(p, "{"))
    perr(p, "Matrices and objects are not supported", NULL);
  else if (p->type == T_END)
    perr(p, "Unexpected end of expression", NULL);
  else
    perr(p, "Value expected", NULL);
  return NULL;
}

static atl_op_xnode_t *parse_postfix(pstate_t *p) {
  atl_op_xnode_t *n = parse_primary(p);
  while (n && tok_is(p, "!")) {
    next_token(p);
    n = mk_op(p, XO_FACT, n, NULL);
  }
  if (n && tok_is(p, "'"))
    return reject(p, n, "Transpose (') is not supported");
  return n;
}

static atl_op_xnode_t *parse_pow(pstate_t *p) {
  atl_op_xnode_t *n = parse_postfix(p);
  if (n && tok_is(p, "^")) {
    next_token(p);
    n = mk_op(p, XO_POW, n, parse_unary(p));
  }
  return n;
}

static atl_op_xnode_t *parse_unary(pstate_t *p) {
  if (enter(p) < 0)
    return NULL;
  atl_op_xnode_t *n;
  atl_op_xop_t op;
  if (tok_is(p, "-") || tok_is(p, "+") || tok_is(p, "not")) {
    op = tok_is(p, "-") ? XO_NEG : tok_is(p, "+") ? XO_POS : XO_NOT;
    next_token(p);
    n = mk_op(p, op, parse_unary(p), NULL);
  } else if (tok_is(p, "~")) {
    perr(p, "Bitwise operators are not supported", NULL);
    n = NULL;
  } else {
    n = parse_pow(p);
  }
  p->depth--;
  return n;
}

/* mathjs: '%' directly before a delimiter other than '(' is a percentage
 * (x/100); otherwise '%' and "mod" are the modulus, binding tighter than
 * '*' and '/'. */
static atl_op_xnode_t *parse_percent(pstate_t *p) {
  atl_op_xnode_t *n = parse_unary(p);
  while (n && (tok_is(p, "%") || tok_is(p, "mod"))) {
    int pct = tok_is(p, "%");
    next_token(p);
    if (pct && (p->type == T_DELIM || p->type == T_END) && !tok_is(p, "(")) {
      atl_op_xnode_t *h = mk(p, XN_NUM, 0);
      if (h)
        h->num = 100;
      n = mk_op(p, XO_DIV, n, h);
    } else {
      n = mk_op(p, XO_MOD, n, parse_unary(p));
    }
  }
  return n;
}

static int rule2_node(const atl_op_xnode_t *n) {
  return n->kind == XN_NUM ||
         (n->kind == XN_OP && n->nargs == 1 && n->args[0]->kind == XN_NUM &&
          (n->op == XO_NEG || n->op == XO_POS));
}

/* "Rule 2": number / number followed by a symbol or '(' divides first, so
 * that 1/2x is (1/2)x. */
static atl_op_xnode_t *parse_rule2(pstate_t *p) {
  atl_op_xnode_t *n = parse_percent(p), *last = n;
  while (n && tok_is(p, "/") && rule2_node(last)) {
    pstate_t save = *p;
    next_token(p);
    if (failed(p))
      return n;
    if (p->type != T_NUM) {
      *p = save;
      break;
    }
    pstate_t save2 = *p;
    next_token(p);
    if (failed(p))
      return n;
    if (p->type == T_SYM || tok_is(p, "(")) {
      *p = save2;
      last = parse_percent(p);
      n = mk_op(p, XO_DIV, n, last);
    } else {
      *p = save;
      break;
    }
  }
  return n;
}

static atl_op_xnode_t *parse_implicit(pstate_t *p) {
  atl_op_xnode_t *n = parse_rule2(p), *last = n;
  while (n && !failed(p) &&
         (p->type == T_SYM || tok_is(p, "(") ||
          (p->type == T_NUM && last->kind != XN_NUM &&
           (last->kind != XN_OP || last->op == XO_FACT)))) {
    last = parse_rule2(p);
    n = mk_op(p, XO_MUL, n, last);
    if (n)
      n->implicit = 1;
  }
  return n;
}

static atl_op_xnode_t *parse_mul(pstate_t *p) {
  atl_op_xnode_t *n = parse_implicit(p);
  while (n && (tok_is(p, "*") || tok_is(p, "/"))) {
    atl_op_xop_t op = tok_is(p, "*") ? XO_MUL : XO_DIV;
    next_token(p);
    n = mk_op(p, op, n, parse_implicit(p));
  }
  if (n && (tok_is(p, ".*") || tok_is(p, "./") || tok_is(p, ".^")))
    return reject(p, n, "Element-wise operators are not supported");
  return n;
}

static atl_op_xnode_t *parse_add(pstate_t *p) {
  atl_op_xnode_t *n = parse_mul(p);
  while (n && (tok_is(p, "+") || tok_is(p, "-"))) {
    atl_op_xop_t op = tok_is(p, "+") ? XO_ADD : XO_SUB;
    next_token(p);
    n = mk_op(p, op, n, parse_mul(p));
  }
  return n;
}

static int rel_op(const pstate_t *p) {
  static const char *const t[] = {"==", "!=", "<", ">", "<=", ">="};
  for (int i = 0; i < 6; i++)
    if (tok_is(p, t[i]))
      return XO_EQ + i;
  return -1;
}

/* Comparisons chain: a < b <= c is (a < b) and (b <= c), b evaluated once. */
static atl_op_xnode_t *parse_rel(pstate_t *p) {
  atl_op_xnode_t *first = parse_add(p);
  if (first == NULL || rel_op(p) < 0)
    return first;
  atl_op_xnode_t *n = mk(p, XN_REL, 0);
  if (n == NULL) {
    atl__op_xnode_free(first);
    return NULL;
  }
  atl_op_xnode_t *cur = first;
  uint32_t cap = 0;
  int op;
  while (cur) {
    if (n->nargs == cap) {
      cap = cap ? 2 * cap : 4;
      atl_op_xnode_t **a = realloc(n->args, cap * sizeof(*a));
      uint8_t *r = a ? realloc(n->rels, cap) : NULL;
      if (a)
        n->args = a;
      if (r == NULL) {
        p->oom = 1;
        atl__op_xnode_free(cur);
        atl__op_xnode_free(n);
        return NULL;
      }
      n->rels = r;
    }
    n->args[n->nargs++] = cur;
    if ((op = rel_op(p)) < 0)
      break;
    n->rels[n->nargs - 1] = (uint8_t)op;
    next_token(p);
    cur = parse_add(p);
  }
  if (failed(p)) {
    atl__op_xnode_free(n);
    return NULL;
  }
  if (tok_is(p, "<<") || tok_is(p, ">>") || tok_is(p, ">>>"))
    perr(p, "Bit shifts are not supported", NULL);
  return height(p, n);
}

static atl_op_xnode_t *parse_logic(pstate_t *p, int level) {
  static const char *const names[] = {"or", "xor", "and"};
  static const atl_op_xop_t ops[] = {XO_OR, XO_XOR, XO_AND};
  atl_op_xnode_t *n = level == 2 ? parse_rel(p) : parse_logic(p, level + 1);
  if (n && level == 2 && (tok_is(p, "&") || tok_is(p, "|") || tok_is(p, "^|")))
    return reject(p, n, "Bitwise operators are not supported");
  while (n && tok_is(p, names[level])) {
    next_token(p);
    n = mk_op(p, ops[level], n,
              level == 2 ? parse_rel(p) : parse_logic(p, level + 1));
  }
  return n;
}

static atl_op_xnode_t *parse_or(pstate_t *p) {
  return parse_logic(p, 0);
}

static atl_op_xnode_t *parse_cond(pstate_t *p) {
  atl_op_xnode_t *n = parse_or(p);
  while (n && tok_is(p, "?")) {
    next_token(p);
    atl_op_xnode_t *a = parse_assign(p), *b = NULL;
    if (a && !tok_is(p, ":"))
      perr(p, "False part of conditional expression expected", NULL);
    if (a && !failed(p)) {
      next_token(p);
      b = parse_assign(p);
    }
    atl_op_xnode_t *c = b ? mk(p, XN_COND, 3) : NULL;
    if (c == NULL) {
      atl__op_xnode_free(n);
      atl__op_xnode_free(a);
      atl__op_xnode_free(b);
      return NULL;
    }
    c->args[0] = n;
    c->args[1] = a;
    c->args[2] = b;
    n = height(p, c);
  }
  return n;
}

/* name = value and name(a, b) = body; assignment is right-associative. */
static atl_op_xnode_t *parse_assign(pstate_t *p) {
  if (enter(p) < 0)
    return NULL;
  atl_op_xnode_t *n = parse_cond(p);
  if (n && tok_is(p, "=")) {
    int ok = n->kind == XN_SYM || n->kind == XN_CALL;
    for (uint32_t i = 0; ok && n->kind == XN_CALL && i < n->nargs; i++)
      ok = n->args[i]->kind == XN_SYM;
    if (!ok) {
      perr(p, "Invalid left hand side of assignment operator =", NULL);
      atl__op_xnode_free(n);
      p->depth--;
      return NULL;
    }
    next_token(p);
    atl_op_xnode_t *v = parse_assign(p);
    atl_op_xnode_t *a =
        v ? mk(p, n->kind == XN_SYM ? XN_ASSIGN : XN_FNDEF, 1) : NULL;
    if (a == NULL) {
      atl__op_xnode_free(v);
      atl__op_xnode_free(n);
      p->depth--;
      return NULL;
    }
    a->args[0] = v;
    a->name = n->name;
    n->name = NULL;
    if (n->kind == XN_CALL) {
      /* The parameters are the call's symbol arguments. */
      a->params = calloc(n->nargs ? n->nargs : 1, sizeof(char *));
      if (a->params == NULL)
        p->oom = 1;
      for (uint32_t i = 0; a->params && i < n->nargs; i++) {
        a->params[i] = n->args[i]->name;
        n->args[i]->name = NULL;
        a->nparams++;
      }
    }
    atl__op_xnode_free(n);
    n = height(p, a);
  }
  p->depth--;
  return n;
}

int atl__op_xparse(const char *src, size_t len, atl_op_xnode_t **root,
                   char **err) {
  *root = NULL;
  *err = NULL;
  if (len > ATL_OP_MEXPR_MAX_LEN) {
    *err = atl__op_xfmt("Expression longer than %d characters",
                        ATL_OP_MEXPR_MAX_LEN);
    return -EINVAL;
  }
  pstate_t p = {.s = src, .len = len};
  next_token(&p);
  atl_op_xnode_t *n = NULL;
  if (!failed(&p) && p.type != T_END) {
    n = parse_assign(&p);
    if (n && p.type != T_END) {
      char *t = tok_dup(&p);
      if (t)
        perr(&p, p.type == T_DELIM ? "Unexpected operator " : "Unexpected ", t);
      free(t);
    }
  }
  if (failed(&p)) {
    atl__op_xnode_free(n);
    *err = p.err ? p.err : strdup("Out of memory");
    return p.oom && p.err == NULL ? -ENOMEM : -EINVAL;
  }
  *root = n;
  return 0;
}

int atl__op_mexpr_compile(const char *src, size_t len, atl_op_mexpr_t **out,
                          char **err) {
  *out = NULL;
  atl_op_xnode_t *root;
  int rc = atl__op_xparse(src, len, &root, err);
  if (rc < 0)
    return rc;
  atl_op_mexpr_t *e = calloc(1, sizeof(*e));
  if (e == NULL) {
    atl__op_xnode_free(root);
    *err = strdup("Out of memory");
    return -ENOMEM;
  }
  e->refs = 1;
  e->root = root;
  *out = e;
  return 0;
}

void atl__op_mexpr_free(atl_op_mexpr_t *e) {
  if (e == NULL || --e->refs > 0)
    return;
  atl__op_xnode_free(e->root);
  free(e);
}

bool atl__op_mexpr_is_empty(const atl_op_mexpr_t *e) {
  return e->root == NULL;
}
