/* Reading an equation (expr.h): upstream's textual rewriting, evaluatex's
 * LaTeX-mode lexer and its recursive-descent grammar, into the syntax tree
 * of expr_int.h. Every byte of the rewritten text remembers the column of
 * the original it came from, so messages point at what the user wrote. */
#include <errno.h>
#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr_int.h"

/* The rewritten text and, for each byte and one past the end, the byte
 * offset in the original it came from. */
typedef struct {
  char *s;
  uint32_t *pos;
  size_t n, cap;
} text_t;

static bool text_put(text_t *t, const char *s, size_t n, uint32_t pos) {
  if (t->n + n + 1 > t->cap) {
    size_t cap = (t->n + n + 1) * 2;
    char *ns = realloc(t->s, cap);
    if (ns == NULL)
      return false;
    t->s = ns;
    uint32_t *np = realloc(t->pos, cap * sizeof(*np));
    if (np == NULL)
      return false;
    t->pos = np;
    t->cap = cap;
  }
  memcpy(t->s + t->n, s, n);
  for (size_t i = 0; i < n; i++)
    t->pos[t->n + i] = pos;
  t->n += n;
  t->s[t->n] = '\0';
  return true;
}

/* One rewriting rule: pat becomes rep. With guard set, pat only matches
 * when the next byte is not a letter (guard 1) or not a digit (guard 2),
 * so \lambda does not match inside \lambdax nor P_1 inside P_10. */
typedef struct {
  const char *pat;
  const char *rep;
  int guard;
} rule_t;

static bool is_alpha(int c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
static bool is_digit(int c) {
  return c >= '0' && c <= '9';
}

/* Rewrites in (with its positions) by the rules in one left-to-right
 * scan, the first matching rule winning at each offset. Upstream applies
 * its rules one after another with replaceAll; every rule of one pass
 * starts with a backslash or a letter that no replacement produces next
 * to the same text, so one scan in rule order gives the same text. */
static bool rewrite(const text_t *in, const rule_t *rules, size_t nrules,
                    text_t *out) {
  size_t i = 0;
  while (i < in->n) {
    size_t r = 0;
    for (; r < nrules; r++) {
      size_t m = strlen(rules[r].pat);
      if (m > in->n - i || memcmp(in->s + i, rules[r].pat, m) != 0)
        continue;
      int next = (unsigned char)in->s[i + m];
      if ((rules[r].guard == 1 && is_alpha(next)) ||
          (rules[r].guard == 2 && is_digit(next)))
        continue;
      if (!text_put(out, rules[r].rep, strlen(rules[r].rep), in->pos[i]))
        return false;
      i += m;
      break;
    }
    if (r == nrules) {
      if (!text_put(out, in->s + i, 1, in->pos[i]))
        return false;
      i++;
    }
  }
  out->pos[out->n] = in->pos[in->n];
  return true;
}

/* src/core/equation.js's rewriting, in its order. */
static const rule_t latex_rules[] = {
    {"\\cdot", "*", 0},
    {"\\pi", "(PI)", 0},
    {"\\log", " log", 0},
    {"\\exp", " exp", 0},
    {"\\arcsin", " asin", 0},
    {"\\arccos", " acos", 0},
    {"\\arctan", " atan", 0},
    {"\\sinh", " sinh", 0},
    {"\\cosh", " cosh", 0},
    {"\\tanh", " tanh", 0},
    {"\\operatorname{asin}", " asin", 0},
    {"\\operatorname{acos}", " acos", 0},
    {"\\operatorname{atan}", " atan", 0},
    {"\\operatorname{asinh}", " asinh", 0},
    {"\\operatorname{acosh}", " acosh", 0},
    {"\\operatorname{atanh}", " atanh", 0},
    {"\\operatorname{arcsinh}", " asinh", 0},
    {"\\operatorname{arccosh}", " acosh", 0},
    {"\\operatorname{arctanh}", " atanh", 0},
    {"\\operatorname{floor}", " floor", 0},
    {"\\operatorname{ceil}", " ceil", 0},
    {"\\operatorname{round}", " round", 0},
    {"\\operatorname{trunc}", " trunc", 0},
    {"\\operatorname{sign}", " sign", 0},
    {"\\operatorname{sgn}", " sign", 0},
    {"\\max", " max", 0},
    {"\\min", " min", 0},
    {"\\operatorname{abs}", " abs", 0},
    {"\\left|", "|", 0},
    {"\\right|", "|", 0},
    {"\\mathrm{sech}", " sech", 0},
};

static const char *const greek[] = {
    "alpha",  "beta",  "gamma",    "delta", "epsilon", "varepsilon", "zeta",
    "eta",    "theta", "vartheta", "iota",  "kappa",   "lambda",     "mu",
    "nu",     "xi",    "rho",      "sigma", "tau",     "upsilon",    "phi",
    "varphi", "chi",   "psi",      "omega"};

static bool is_greek(const char *s, size_t n) {
  for (size_t g = 0; g < sizeof(greek) / sizeof(*greek); g++)
    if (strlen(greek[g]) == n && memcmp(greek[g], s, n) == 0)
      return true;
  return false;
}

/* The LaTeX spellings of the variables, as BaseCustomSurface and
 * BaseGrinGlass replace them before evaluating: name_D as \name_D and
 * \name_{D} for a Greek name, else as name_D and name_{D}; a Greek name
 * without a subscript as \name. Each becomes (name). Returns the number of
 * rules made (at most 2 per variable), or -1 without memory; the strings
 * are malloc()ed into rules, freed by free_rules. */
static long var_rules(const char *const *vars, size_t nvars, rule_t *rules) {
  long n = 0;
  for (size_t v = 0; v < nvars; v++) {
    const char *name = vars[v];
    size_t len = strlen(name);
    const char *us = strchr(name, '_');
    size_t blen = us ? (size_t)(us - name) : len;
    bool digits = us != NULL && us[1] != '\0';
    for (const char *p = us ? us + 1 : name + len; *p; p++)
      digits = digits && is_digit(*p);
    bool letters = blen > 0;
    for (size_t i = 0; i < blen; i++)
      letters = letters && is_alpha(name[i]);
    if (!letters || (us != NULL && !digits))
      continue;
    bool gk = is_greek(name, blen);
    if (us == NULL && !gk)
      continue;
    const char *sub = us ? us + 1 : "";
    char *rep = malloc(len + 3), *p1 = malloc(len + 2), *p2 = malloc(len + 4);
    if (rep == NULL || p1 == NULL || p2 == NULL) {
      free(rep), free(p1), free(p2);
      return -1;
    }
    snprintf(rep, len + 3, "(%s)", name);
    snprintf(p1, len + 2, "%s%s", gk ? "\\" : "", name);
    snprintf(p2, len + 4, "%s%.*s_{%s}", gk ? "\\" : "", (int)blen, name, sub);
    rules[n++] = (rule_t){p1, rep, us ? 2 : 1};
    /* The rule's replacement is owned by its first rule only. */
    if (us != NULL)
      rules[n++] = (rule_t){p2, NULL, 0};
    else
      free(p2);
  }
  for (long r = 0; r < n; r++)
    if (rules[r].rep == NULL)
      rules[r].rep = rules[r - 1].rep;
  return n;
}

static void free_rules(rule_t *rules, long n) {
  for (long r = 0; r < n; r++) {
    free((char *)rules[r].pat);
    if (r + 1 == n || rules[r + 1].rep != rules[r].rep)
      free((char *)rules[r].rep);
  }
}

/* ------------------------------------------------------------------ */
/* The lexer: evaluatex's token patterns, in their order of precedence. */

enum {
  T_LP,
  T_RP,
  T_PLUS,
  T_MINUS,
  T_TIMES,
  T_DIV,
  T_CMD,  /* a supported LaTeX command: fn, arity in k */
  T_FUNC, /* a name of a function: fn */
  T_NUM,  /* a number or a named constant: v */
  T_VAR,  /* k */
  T_ABS,
  T_BANG,
  T_COMMA,
  T_POW,
};

typedef struct {
  uint8_t type, fn;
  uint32_t k;
  uint32_t at; /* offset in the rewritten text */
  double v;
} tok_t;

typedef struct {
  const char *orig;
  text_t t;
  size_t p; /* the lexer's offset in t.s */
  tok_t *toks;
  size_t ntok;
  const char *const *vars;
  size_t nvars;
  char **err;
  /* The parser's state. */
  size_t cur;
  int depth;
  atl_op_ast_t *ast;
  uint32_t *stk;
  size_t nstk, stkcap;
} ps_t;

/* The 1-based column, in characters, of the original byte offset off. */
static unsigned column(const char *s, size_t off) {
  unsigned col = 1;
  for (size_t i = 0; i < off && s[i]; i++)
    col += ((unsigned char)s[i] & 0xC0) != 0x80;
  return col;
}

/* Fails with a message about the rewritten offset at, quoting up to a
 * dozen characters of the original from there. */
static int fail_at(ps_t *ps, size_t at, const char *what) {
  size_t off = ps->t.pos[at];
  const char *q = ps->orig + off;
  int qn = 0;
  while (q[qn] && qn < 12)
    qn++;
  if (qn == 0)
    return atl__op_fail(ps->err, -EINVAL, "%s at the end of the equation",
                        what);
  return atl__op_fail(ps->err, -EINVAL, "%s at column %u (at \"%.*s%s\")", what,
                      column(ps->orig, off), qn, q, q[qn] ? "..." : "");
}

/* JavaScript's \s at t.s + p: its length in bytes, or 0. */
static size_t space_len(const unsigned char *s) {
  if (*s == ' ' || (*s >= '\t' && *s <= '\r'))
    return 1;
  if (s[0] == 0xC2 && s[1] == 0xA0)
    return 2;
  if (s[0] == 0xE1 && s[1] == 0x9A && s[2] == 0x80)
    return 3;
  if (s[0] == 0xE2 && s[1] == 0x80 &&
      (s[2] <= 0x8A || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF))
    return s[2] >= 0x80 ? 3 : 0;
  if ((s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F) ||
      (s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80) ||
      (s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF))
    return 3;
  return 0;
}

static void skip_space(ps_t *ps) {
  size_t k;
  while ((k = space_len((const unsigned char *)ps->t.s + ps->p)) > 0)
    ps->p += k;
}

static const struct {
  const char *name;
  double v;
} constants[] = {
    {"pi", 3.141592653589793},       {"e", 2.718281828459045},
    {"E", 2.718281828459045},        {"PI", 3.141592653589793},
    {"LN10", 2.302585092994046},     {"LN2", 0.6931471805599453},
    {"LOG10E", 0.4342944819032518},  {"LOG2E", 1.4426950408889634},
    {"SQRT1_2", 0.7071067811865476}, {"SQRT2", 1.4142135623730951},
};

/* The LaTeX commands evaluatex gives arguments to, with their arity. */
static const struct {
  const char *name;
  int fn, arity;
} commands[] = {
    {"cdot", ATL_OP_F_CDOT, 2}, {"times", ATL_OP_F_TIMES, 2},
    {"frac", ATL_OP_F_FRAC, 2}, {"sqrt", ATL_OP_F_SQRT, 1},
    {"sin", ATL_OP_F_SIN, 1},   {"cos", ATL_OP_F_COS, 1},
    {"tan", ATL_OP_F_TAN, 1},   {"asin", ATL_OP_F_ASIN, 1},
    {"acos", ATL_OP_F_ACOS, 1}, {"atan", ATL_OP_F_ATAN, 1},
    {"sec", ATL_OP_F_SEC, 1},   {"csc", ATL_OP_F_CSC, 1},
    {"cot", ATL_OP_F_COT, 1},
};

/* Resolves a name as evaluatex does: a function of Math, of evaluatex or
 * of upstream's constants first, then a number constant, then a variable. */
static int resolve_symbol(ps_t *ps, tok_t *tk, const char *s, size_t n) {
  for (int f = 0; f < ATL_OP_F_COUNT; f++)
    if (strlen(atl__op_fns[f].name) == n &&
        memcmp(atl__op_fns[f].name, s, n) == 0) {
      tk->type = T_FUNC, tk->fn = (uint8_t)f;
      return 0;
    }
  for (size_t c = 0; c < sizeof(constants) / sizeof(*constants); c++)
    if (strlen(constants[c].name) == n &&
        memcmp(constants[c].name, s, n) == 0) {
      tk->type = T_NUM, tk->v = constants[c].v;
      return 0;
    }
  for (size_t v = 0; v < ps->nvars; v++)
    if (strlen(ps->vars[v]) == n && memcmp(ps->vars[v], s, n) == 0) {
      tk->type = T_VAR, tk->k = (uint32_t)v;
      return 0;
    }
  char what[160];
  if (n == 6 && memcmp(s, "random", 6) == 0)
    return fail_at(ps, tk->at, "random is not supported (not reproducible)");
  int shown = n > 40 ? 40 : (int)n;
  int w = snprintf(what, sizeof(what), "unknown variable \"%.*s\" (", shown, s);
  if (ps->nvars == 0)
    w += snprintf(what + w, sizeof(what) - (size_t)w, "this equation has none");
  for (size_t v = 0; v < ps->nvars && (size_t)w < sizeof(what) - 1; v++)
    w += snprintf(what + w, sizeof(what) - (size_t)w, "%s%s",
                  v ? ", " : "known: ", ps->vars[v]);
  if ((size_t)w < sizeof(what) - 1)
    snprintf(what + w, sizeof(what) - (size_t)w, ")");
  return fail_at(ps, tk->at, what);
}

static int resolve_command(ps_t *ps, tok_t *tk, const char *s, size_t n) {
  char low[16];
  if (n < sizeof(low)) {
    for (size_t i = 0; i < n; i++)
      low[i] = (char)(s[i] | 0x20);
    low[n] = '\0';
    for (size_t c = 0; c < sizeof(commands) / sizeof(*commands); c++)
      if (strcmp(low, commands[c].name) == 0) {
        tk->type = T_CMD, tk->fn = (uint8_t)commands[c].fn;
        tk->k = (uint32_t)commands[c].arity;
        return 0;
      }
    if (strcmp(low, "ln") == 0)
      return fail_at(ps, tk->at,
                     "\\ln is not supported (upstream cannot evaluate it); "
                     "write \\log for the natural logarithm");
    if (strcmp(low, "left") == 0 || strcmp(low, "right") == 0)
      return fail_at(ps, tk->at,
                     "\\left and \\right must be followed by (, [ or |");
    if (strcmp(low, "operatorname") == 0)
      return fail_at(
          ps, tk->at,
          "unknown \\operatorname (known: asin acos atan asinh acosh "
          "atanh arcsinh arccosh arctanh floor ceil round trunc "
          "sign sgn abs)");
  }
  char what[96];
  snprintf(what, sizeof(what), "unknown command \"\\%.*s\"",
           n > 40 ? 40 : (int)n, s);
  return fail_at(ps, tk->at, what);
}

/* Reads a token that is not a single punctuation character (\left( and
 * the like, a command, a name or a number, none longer than lim bytes) and
 * stores its length in *len. */
static int word_token(ps_t *ps, tok_t *tk, const char *s, size_t lim,
                      size_t *len) {
  size_t n = 1;
  if (*s == '\\') {
    if (strncmp(s, "\\left(", 6) == 0 || strncmp(s, "\\left[", 6) == 0) {
      tk->type = T_LP, *len = 6;
      return 0;
    }
    if (strncmp(s, "\\right)", 7) == 0 || strncmp(s, "\\right]", 7) == 0) {
      tk->type = T_RP, *len = 7;
      return 0;
    }
    while (n < lim && is_alpha(s[n]))
      n++;
    if (n == 1)
      return fail_at(ps, ps->p, "a backslash must start a command name");
    *len = n;
    return resolve_command(ps, tk, s + 1, n - 1);
  }
  if (is_alpha(*s) || *s == '_') {
    while (n < lim && (is_alpha(s[n]) || is_digit(s[n]) || s[n] == '_'))
      n++;
    *len = n;
    return resolve_symbol(ps, tk, s, n);
  }
  if (!is_digit(*s))
    return fail_at(ps, ps->p, "unexpected character");
  while (n < lim && is_digit(s[n]))
    n++;
  if (n + 1 < lim && s[n] == '.' && is_digit(s[n + 1]))
    for (n++; n < lim && is_digit(s[n]); n++)
      ;
  /* Digits with at most one point: strtod reads them exactly as
   * parseFloat does, once a locale's decimal comma is taken care of. */
  char *num = strndup(s, n);
  if (num == NULL)
    return atl__op_fail(ps->err, -ENOMEM, "out of memory");
  char *dot = strchr(num, '.');
  const char *lp = localeconv()->decimal_point;
  if (dot != NULL && lp != NULL && lp[0] != '\0' && lp[1] == '\0')
    *dot = lp[0];
  tk->type = T_NUM;
  tk->v = strtod(num, NULL);
  free(num);
  *len = n;
  return 0;
}

/* Reads one token at ps->p. With one set, the token is read from a single
 * character, as evaluatex reads the argument of ^ or of a command (a
 * command itself is still read whole). */
static int next_token(ps_t *ps, tok_t *tk, bool one) {
  skip_space(ps);
  const char *s = ps->t.s + ps->p;
  size_t rest = ps->t.n - ps->p;
  if (rest == 0)
    return fail_at(ps, ps->p, "something was expected");
  if (*s == '\\')
    one = false;
  size_t lim = one ? 1 : rest, n = 1;
  tk->at = (uint32_t)ps->p;
  /* The one-character tokens, in the order of their types. */
  static const char punct[] = "([{)]}+-*/|!,^";
  static const uint8_t ptype[] = {T_LP,  T_LP,   T_LP,    T_RP,    T_RP,
                                  T_RP,  T_PLUS, T_MINUS, T_TIMES, T_DIV,
                                  T_ABS, T_BANG, T_COMMA, T_POW};
  const char *pc = *s ? strchr(punct, *s) : NULL;
  if (pc != NULL) {
    tk->type = ptype[pc - punct];
  } else {
    int rc = word_token(ps, tk, s, lim, &n);
    if (rc)
      return rc;
  }
  ps->p += n;
  return 0;
}

static bool is_group_open(const ps_t *ps, const tok_t *tk) {
  return tk->type == T_LP && ps->t.s[tk->at] == '{';
}
static bool is_group_close(const ps_t *ps, const tok_t *tk) {
  return tk->type == T_RP && ps->t.s[tk->at] == '}';
}

/* evaluatex's lexExpression, without recursion: a stack of pending tasks,
 * each either a whole expression (read until its closing brace or the
 * end) or one single-character argument of ^ or of a command. */
static int lex(ps_t *ps) {
  enum { EXPR, CHARARG };
  size_t cap = 2 * ps->t.n + 4;
  uint8_t *task = malloc(cap);
  ps->toks = malloc((ps->t.n + 1) * sizeof(*ps->toks));
  if (task == NULL || ps->toks == NULL) {
    free(task);
    return atl__op_fail(ps->err, -ENOMEM, "out of memory");
  }
  size_t nt = 0;
  task[nt++] = EXPR;
  int rc = 0;
  while (nt > 0 && rc == 0) {
    uint8_t kind = task[nt - 1];
    if (kind == CHARARG)
      nt--;
    if (ps->p >= ps->t.n) {
      if (kind == EXPR)
        nt--;
      continue;
    }
    tok_t tk = {0};
    if ((rc = next_token(ps, &tk, kind == CHARARG)) != 0)
      break;
    ps->toks[ps->ntok++] = tk;
    if (tk.type == T_POW || tk.type == T_CMD) {
      uint32_t arity = tk.type == T_POW ? 1 : tk.k;
      for (uint32_t a = 0; a < arity; a++)
        task[nt++] = CHARARG;
    } else if (is_group_open(ps, &tk)) {
      task[nt++] = EXPR;
    } else if (kind == EXPR && is_group_close(ps, &tk)) {
      nt--;
    }
  }
  free(task);
  if (rc == 0) {
    skip_space(ps);
    /* Upstream stops reading at a closing brace with no opening one and
     * ignores the rest; that is an error here. */
    if (ps->p < ps->t.n)
      rc = fail_at(ps, ps->toks[ps->ntok - 1].at, "unmatched closing brace");
  }
  return rc;
}

/* ------------------------------------------------------------------ */
/* The parser: evaluatex's grammar, building nodes as it goes. */

static int sum(ps_t *ps, uint32_t *out);
static int power(ps_t *ps, uint32_t *out);
static int val(ps_t *ps, uint32_t *out);

static const tok_t *peek(const ps_t *ps) {
  return ps->cur < ps->ntok ? &ps->toks[ps->cur] : NULL;
}

static bool accept(ps_t *ps, int type) {
  const tok_t *tk = peek(ps);
  if (tk == NULL || tk->type != type)
    return false;
  ps->cur++;
  return true;
}

static int unexpected(ps_t *ps, const char *expected) {
  char what[128];
  const tok_t *tk = peek(ps);
  snprintf(what, sizeof(what), "expected %s", expected);
  return fail_at(ps, tk ? tk->at : ps->t.n, what);
}

static int node(ps_t *ps, int type, int fn, double v, uint32_t k, size_t base,
                uint32_t *out) {
  uint32_t nk = (uint32_t)(ps->nstk - base);
  *out =
      atl__op_ast_add(ps->ast, type, fn, v, k, nk ? ps->stk + base : NULL, nk);
  ps->nstk = base;
  if (*out != ATL_OP_NONE)
    return 0;
  if (ps->ast->why == ATL_OP_AST_NOMEM)
    return atl__op_fail(ps->err, -ENOMEM, "out of memory");
  return atl__op_fail(ps->err, -EINVAL, "the equation is too large");
}

static int push(ps_t *ps, uint32_t k) {
  if (ps->nstk == ps->stkcap) {
    size_t cap = ps->stkcap ? ps->stkcap * 2 : 64;
    uint32_t *n = realloc(ps->stk, cap * sizeof(*n));
    if (n == NULL)
      return atl__op_fail(ps->err, -ENOMEM, "out of memory");
    ps->stk = n, ps->stkcap = cap;
  }
  ps->stk[ps->nstk++] = k;
  return 0;
}

/* Parses with f and pushes the result; wraps it in a NEG or INV first
 * when wrap is one of those. */
static int push_parsed(ps_t *ps, int (*f)(ps_t *, uint32_t *), int wrap) {
  uint32_t k;
  int rc = f(ps, &k);
  if (rc == 0 && wrap >= 0) {
    size_t base = ps->nstk;
    if ((rc = push(ps, k)) == 0)
      rc = node(ps, wrap, 0, 0, 0, base, &k);
  }
  return rc ? rc : push(ps, k);
}

/* Makes the operands pushed since base a node of the given type, or
 * returns the only one as it is: evaluatex drops a sum or product of one
 * term. */
static int gather(ps_t *ps, int type, size_t base, uint32_t *out) {
  if (ps->nstk - base == 1) {
    *out = ps->stk[--ps->nstk];
    return 0;
  }
  return node(ps, type, 0, 0, 0, base, out);
}

static int product(ps_t *ps, uint32_t *out) {
  size_t base = ps->nstk;
  int rc = push_parsed(ps, power, -1);
  while (rc == 0) {
    const tok_t *tk = peek(ps);
    if (tk == NULL)
      break;
    if (tk->type == T_CMD &&
        (tk->fn == ATL_OP_F_TIMES || tk->fn == ATL_OP_F_CDOT)) {
      /* evaluatex knows \times only as a prefix \times{a}{b} and reads
       * its arguments a character at a time, so 2\times10 cannot mean
       * 20; it fails upstream, and here with a way out. */
      return fail_at(ps, tk->at,
                     "\\times between factors is not supported (upstream "
                     "fails on it); write \\cdot");
    }
    if (tk->type == T_TIMES) {
      ps->cur++;
      rc = push_parsed(ps, power, -1);
    } else if (tk->type == T_DIV) {
      ps->cur++;
      rc = push_parsed(ps, power, ATL_OP_N_INV);
    } else if (tk->type == T_LP || tk->type == T_VAR || tk->type == T_NUM ||
               tk->type == T_FUNC || tk->type == T_CMD) {
      /* Juxtaposition; before a command (2\sqrt{x}) evaluatex fails, and
       * multiplying is what was meant. */
      rc = push_parsed(ps, power, -1);
    } else {
      break;
    }
  }
  return rc ? rc : gather(ps, ATL_OP_N_PROD, base, out);
}

static int sum(ps_t *ps, uint32_t *out) {
  size_t base = ps->nstk;
  int rc = push_parsed(ps, product, -1);
  while (rc == 0) {
    if (accept(ps, T_PLUS))
      rc = push_parsed(ps, product, -1);
    else if (accept(ps, T_MINUS))
      rc = push_parsed(ps, product, ATL_OP_N_NEG);
    else
      break;
  }
  return rc ? rc : gather(ps, ATL_OP_N_SUM, base, out);
}

static int deeper(ps_t *ps) {
  if (++ps->depth <= 2 * ATL_OP_EXPR_MAX_DEPTH)
    return 0;
  const tok_t *tk = peek(ps);
  return fail_at(ps, tk ? tk->at : ps->t.n,
                 "the equation is nested too deeply");
}

static int val_inner(ps_t *ps, uint32_t *out) {
  const tok_t *tk = peek(ps);
  if (tk == NULL)
    return unexpected(ps, "a number, a variable, a function or a bracket");
  size_t base = ps->nstk;
  int rc = 0;
  ps->cur++;
  switch (tk->type) {
  case T_VAR:
    return node(ps, ATL_OP_N_VAR, 0, 0, tk->k, base, out);
  case T_NUM:
    return node(ps, ATL_OP_N_CONST, 0, tk->v, 0, base, out);
  case T_CMD: {
    /* A command takes its arguments as values, not as powers: \sin x^2 is
     * (sin x)^2, as in evaluatex. */
    int fn = tk->fn;
    for (uint32_t a = 0; a < tk->k && rc == 0; a++)
      rc = push_parsed(ps, val, -1);
    return rc ? rc : node(ps, ATL_OP_N_CALL, fn, 0, 0, base, out);
  }
  case T_FUNC: {
    int fn = tk->fn;
    if (accept(ps, T_LP)) {
      do
        rc = push_parsed(ps, sum, -1);
      while (rc == 0 && accept(ps, T_COMMA));
      if (rc == 0 && !accept(ps, T_RP))
        rc = unexpected(ps, "\",\" or a closing bracket");
    } else {
      /* Without brackets a function takes the power that follows. */
      rc = push_parsed(ps, power, -1);
    }
    return rc ? rc : node(ps, ATL_OP_N_CALL, fn, 0, 0, base, out);
  }
  case T_MINUS:
    if ((rc = push_parsed(ps, power, -1)) != 0)
      return rc;
    return node(ps, ATL_OP_N_NEG, 0, 0, 0, base, out);
  case T_LP:
    if ((rc = sum(ps, out)) == 0 && !accept(ps, T_RP))
      rc = unexpected(ps, "a closing bracket");
    return rc;
  case T_ABS:
    if ((rc = push_parsed(ps, sum, -1)) == 0 && !accept(ps, T_ABS))
      rc = unexpected(ps, "a closing |");
    return rc ? rc : node(ps, ATL_OP_N_CALL, ATL_OP_F_ABS, 0, 0, base, out);
  default:
    ps->cur--;
    return unexpected(ps, "a number, a variable, a function or a bracket");
  }
}

static int val(ps_t *ps, uint32_t *out) {
  int rc = deeper(ps);
  if (rc == 0)
    rc = val_inner(ps, out);
  ps->depth--;
  if (rc == 0 && accept(ps, T_BANG)) {
    size_t base = ps->nstk;
    if ((rc = push(ps, *out)) == 0)
      rc = node(ps, ATL_OP_N_CALL, ATL_OP_F_FACT, 0, 0, base, out);
  }
  return rc;
}

static int power(ps_t *ps, uint32_t *out) {
  int rc = deeper(ps);
  size_t base = ps->nstk;
  if (rc == 0)
    rc = push_parsed(ps, val, -1);
  if (rc == 0 && accept(ps, T_POW)) {
    if ((rc = push_parsed(ps, power, -1)) == 0)
      rc = node(ps, ATL_OP_N_POW, 0, 0, 0, base, out);
  } else if (rc == 0) {
    *out = ps->stk[--ps->nstk];
  }
  ps->depth--;
  return rc;
}

int atl__op_parse(const char *latex, const char *const *vars, size_t nvars,
                  atl_op_ast_t *a, uint32_t *root, char **err) {
  size_t len = strlen(latex);
  if (len > ATL_OP_EXPR_MAX_LEN)
    return atl__op_fail(err, -EINVAL,
                        "the equation is too long (%zu bytes; at most %d)", len,
                        ATL_OP_EXPR_MAX_LEN);
  for (size_t v = 0; v < nvars; v++) {
    const char *s = vars[v];
    bool ok = is_alpha(*s) || *s == '_';
    for (const char *p = s; ok && *p; p++)
      ok = is_alpha(*p) || is_digit(*p) || *p == '_';
    if (!ok || strlen(s) > 64)
      return atl__op_fail(err, -EINVAL, "invalid variable name \"%.64s\"", s);
  }
  ps_t ps = {.orig = latex, .vars = vars, .nvars = nvars, .err = err, .ast = a};
  text_t t0 = {0}, t1 = {0};
  rule_t *vr = malloc((2 * nvars + 1) * sizeof(*vr));
  long nvr = vr ? var_rules(vars, nvars, vr) : -1;
  int rc = 0;
  if (nvr < 0 || !text_put(&t0, latex, len, 0) || !text_put(&t1, "", 0, 0) ||
      !text_put(&ps.t, "", 0, 0)) {
    rc = atl__op_fail(err, -ENOMEM, "out of memory");
  } else {
    for (size_t i = 0; i <= len; i++)
      t0.pos[i] = (uint32_t)i;
    if (!rewrite(&t0, vr, (size_t)nvr, &t1) ||
        !rewrite(&t1, latex_rules, sizeof(latex_rules) / sizeof(*latex_rules),
                 &ps.t))
      rc = atl__op_fail(err, -ENOMEM, "out of memory");
  }
  if (nvr > 0)
    free_rules(vr, nvr);
  free(vr);
  free(t0.s), free(t0.pos), free(t1.s), free(t1.pos);
  if (rc == 0) {
    skip_space(&ps);
    if (ps.p == ps.t.n)
      rc = atl__op_fail(err, -EINVAL, "the equation is empty");
  }
  if (rc == 0)
    rc = lex(&ps);
  if (rc == 0)
    rc = sum(&ps, root);
  if (rc == 0 && ps.cur < ps.ntok)
    rc = unexpected(&ps, ps.toks[ps.cur].type == T_RP
                             ? "an operator (this closing bracket has no "
                               "opening one)"
                             : "an operator or the end");
  free(ps.t.s), free(ps.t.pos), free(ps.toks), free(ps.stk);
  return rc;
}
