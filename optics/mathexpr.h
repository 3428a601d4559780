/* A subset of the mathjs expression language (mathjs 13, number mode), as
 * Ray Optics Simulation's module templates use it: numbers, booleans,
 * variables, + - * / ^ % mod, unary - + not, comparisons (chained), and or
 * xor, the ternary a ? b : c, postfix !, implicit multiplication by
 * mathjs's rules ("2x", "2(x+1)", "(a)(b)", "1/2x" is (1/2)*x), variable
 * and function assignment ("a = 3", "f(x, y) = x*y"), the constants and the
 * number functions listed in mathexpr_eval.c. Arithmetic is JavaScript's
 * and mathjs's: doubles, comparisons and floor/ceil/round/mod with mathjs's
 * relative tolerance 1e-12. What mathjs would turn into a complex number, a
 * unit, a string or a matrix is an error here.
 *
 * An expression is compiled once and evaluated many times, each time
 * against a scope (a list of named values). */
#ifndef ATL_OPTICS_MATHEXPR_H
#define ATL_OPTICS_MATHEXPR_H

#include <stdbool.h>
#include <stddef.h>

typedef double (*atl_op_random_cb)(void *user);

typedef struct atl_op_mexpr atl_op_mexpr_t;
typedef struct atl_op_scope atl_op_scope_t;

/* The result of an evaluation. UNDEF is the result of an empty expression
 * (mathjs returns undefined for ""); FUNC that of an expression naming a
 * function, such as a function assignment. */
typedef enum {
  ATL_OP_VAL_UNDEF,
  ATL_OP_VAL_NUM,
  ATL_OP_VAL_BOOL,
  ATL_OP_VAL_FUNC,
} atl_op_val_kind_t;

typedef struct {
  atl_op_val_kind_t kind;
  double num; /* NUM: the number; BOOL: 1 or 0; otherwise NaN */
} atl_op_value_t;

/* The longest source text compile accepts, and the deepest nesting of
 * parentheses, calls and operators. Both keep hostile input from taking
 * the stack or the heap. */
#define ATL_OP_MEXPR_MAX_LEN 65536
#define ATL_OP_MEXPR_MAX_DEPTH 200

/* Compiles src[0..len) (it need not be NUL-terminated). On success returns
 * 0 and *out is a new expression the caller releases with
 * atl__op_mexpr_free. On a syntax error returns -EINVAL and *err is a
 * malloc()ed message (mathjs's wording where there is one, with the
 * 1-based character position), which the caller frees. */
int atl__op_mexpr_compile(const char *src, size_t len, atl_op_mexpr_t **out,
                          char **err);

/* Releases one reference to e (NULL is allowed). A function assigned while
 * evaluating e holds its own reference, so a scope may outlive e. */
void atl__op_mexpr_free(atl_op_mexpr_t *e);

/* Evaluates e in scope. Assignments in e write into scope. `random()` calls
 * the callback bound with atl__op_scope_set_random once per call, after its
 * arguments (which are evaluated and ignored, as upstream's rng ignores
 * them). Returns 0 with *out set, or -EINVAL with a malloc()ed *err (an
 * undefined symbol, a complex result, a call with the wrong number of
 * arguments, a recursion or work limit). */
int atl__op_mexpr_eval(const atl_op_mexpr_t *e, atl_op_scope_t *scope,
                       atl_op_value_t *out, char **err);

/* True when e is empty (only white space): mathjs evaluates it to
 * undefined. */
bool atl__op_mexpr_is_empty(const atl_op_mexpr_t *e);

/* Scopes. A new scope is empty; the caller frees it with
 * atl__op_scope_free. A copy shares nothing with the original (functions
 * are reference-counted), so loops can give each iteration its own copy as
 * upstream's Object.assign({}, params) does. Setters replace an existing
 * binding of the name and return 0, or -ENOMEM. */
atl_op_scope_t *atl__op_scope_new(void);
atl_op_scope_t *atl__op_scope_copy(const atl_op_scope_t *s);
void atl__op_scope_free(atl_op_scope_t *s);
int atl__op_scope_set_num(atl_op_scope_t *s, const char *name, double v);
int atl__op_scope_set_bool(atl_op_scope_t *s, const char *name, bool v);
/* Binds name (upstream: "random") to a function drawing from cb(user). */
int atl__op_scope_set_random(atl_op_scope_t *s, const char *name,
                             atl_op_random_cb cb, void *user);
/* The number (or boolean as 1/0) bound to name: 0 and *v, or -ENOENT when
 * name is unbound or bound to a function. */
int atl__op_scope_get_num(const atl_op_scope_t *s, const char *name, double *v);

/* Function definitions for equation templates (upstream's funcDefs): the
 * `vars` entries that look like "name(a, b) = body". Owned by the caller:
 * created empty, filled with atl__op_texdefs_add (a later definition of a
 * name replaces the earlier one), freed with atl__op_texdefs_free. */
typedef struct atl_op_texdefs atl_op_texdefs_t;
atl_op_texdefs_t *atl__op_texdefs_new(void);
void atl__op_texdefs_free(atl_op_texdefs_t *d);
/* Parses one `vars` entry. Returns 1 when it is a function definition (and
 * is recorded), 0 when it is not one, -EINVAL with *err when its body does
 * not compile, -ENOMEM. */
int atl__op_texdefs_add(atl_op_texdefs_t *d, const char *var, char **err);

/* Upstream's equation template (a ``double-backtick`` block): parses src,
 * replaces every symbol bound to a number in scope by that number (as the
 * text JavaScript writes for it, parsed again), inlines every call of a
 * function in defs, and writes the result as mathjs's toTex does with
 * upstream's handler (x_1 as " x_{1}", theta as "\theta", log as "\log",
 * asin as "\arcsin" ...). On success *out is a malloc()ed string the
 * caller frees. Errors (syntax, inlining too deep or too large) return
 * -EINVAL with *err. */
int atl__op_mexpr_to_tex(const char *src, size_t len,
                         const atl_op_scope_t *scope,
                         const atl_op_texdefs_t *defs, char **out, char **err);

/* Writes v as mathjs's format() does by default (shortest digits, fixed
 * notation for exponents -3..4, else "1.5e+5"). buf holds 40 bytes. */
void atl__op_mathjs_format(double v, char *buf);

#endif
