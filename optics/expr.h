/* Ray Optics Simulation's equations: the LaTeX subset its equation-driven
 * objects store (CustomGlass, CustomMirror, the Param* objects, the GRIN
 * glasses and the Custom*Surface objects), compiled for fast, repeated
 * evaluation. Upstream rewrites the text (src/core/equation.js) and hands
 * it to evaluatex in LaTeX mode; this module reads the same language with
 * the same results, and says where a malformed equation goes wrong.
 *
 * The language, as evaluatex reads it after upstream's rewriting:
 * - numbers 12 and 1.5 (no exponent, no leading or trailing dot);
 * - + and - between terms, * and / between factors, ^ (right-assoc.);
 *   a / b is a * (1 / b), as upstream computes it; juxtaposition
 *   multiplies (2x, 0.5(x+1), (a)(b), x\sqrt{2});
 * - a leading - negates the power that follows: -x^2 is -(x^2);
 * - ( [ { and \left( \left[ open, ) ] } and \right) \right] close, of any
 *   kind; |x| and \left|x\right| are absolute values; n! is a factorial;
 * - in LaTeX fashion, ^ and the commands below take one character or one
 *   {group} per argument: x^23 is x^2 * 3, x^{23} is x^23, \frac12 is
 *   1/2, \sqrt 45 is sqrt(4) * 5;
 * - \frac{a}{b}, \sqrt{a} (\sqrt[n]{a} is sqrt(n) * a, as upstream
 *   reads it), \sin \cos \tan \sec \csc \cot \arcsin \arccos \arctan,
 *   \sinh \cosh \tanh, \exp, \log (the natural logarithm), \max, \min,
 *   \cdot, \times (between factors, or as upstream's prefix \times{a}{b}),
 *   \pi, \mathrm{sech} and \operatorname{} of asin acos atan asinh acosh
 *   atanh arcsinh arccosh arctanh floor ceil round trunc sign sgn abs;
 * - plain names of JavaScript's Math (sin, cos, atan2, hypot, max, min,
 *   log10, cbrt, pow, sign, floor, ...), evaluatex's extra functions (frac,
 *   logn, rootn, sec, csc, cot, fact, cdot, times) and sech, called with
 *   (arguments, separated, by commas) or on the power that follows
 *   (sin x^2 is sin(x^2)); the constants pi, e, PI, E, LN2, LN10, LOG2E,
 *   LOG10E, SQRT2, SQRT1_2.
 * Not supported: \ln (upstream fails on it when evaluating; use \log),
 * \operatorname of other names, \sqrt[n] as a root, exponents in numbers
 * (1e5), Math.random, and any command not listed.
 *
 * Variables: the caller names them (vars), and a name may be spelled in
 * the equation as itself (x, t, theta_0, P_0) or in LaTeX: a Greek name
 * with a backslash (\lambda for "lambda", \theta_0 and \theta_{0} for
 * "theta_0") and a subscripted Latin name with braces (P_{0} for "P_0").
 * As upstream does, these spellings are replaced before anything else is
 * read, by the name in parentheses, so 0.5P_0 and \theta_0^2 read as
 * upstream reads them. Upstream's names per object: x (CustomGlass eqn1
 * and eqn2, CustomMirror eqn), t (eqnX, eqnY of the Param* objects), x, y
 * and lambda (refIndexFn and absorptionFn of the GRIN glasses; upstream
 * calls lambda z), and theta_0, P_0, lambda, t, p, n_0, n_1, theta_j, P_j
 * (eqnTheta and eqnP of the Custom*Surface objects).
 *
 * Arithmetic is JavaScript's: Math.pow's NaN cases, max/min with NaN and
 * signed zeros, Math.round's halves, NaN for a missing argument. Where
 * upstream throws while evaluating (a factorial of a negative number, a
 * variable whose value is not finite), the value here is NaN; callers that
 * must reproduce upstream's error instead check their inputs (see
 * atl__op_expr_uses_var). */
#ifndef ATL_OPTICS_EXPR_H
#define ATL_OPTICS_EXPR_H

#include <stdbool.h>
#include <stddef.h>

/* A compiled equation: immutable after compilation, so one may be
 * evaluated from several threads at once. */
typedef struct atl_op_expr atl_op_expr_t;

/* The longest equation accepted, in bytes, and the deepest nesting of
 * brackets, powers, signs and function calls. */
#define ATL_OP_EXPR_MAX_LEN 16384
#define ATL_OP_EXPR_MAX_DEPTH 200

/* Compiles latex (NUL-terminated UTF-8, not NULL) over the nvars variables
 * named by vars (each a plain name matching [A-Za-z_][A-Za-z_0-9]*; the
 * array and the strings are read during the call only). On success
 * returns 0 and stores a new expression in *out, which the caller frees
 * with atl__op_expr_free. On a malformed equation returns -EINVAL, sets
 * *out to NULL and stores in *err a malloc()ed message naming the problem
 * and its column (1-based, in characters of latex), which the caller
 * frees; on memory exhaustion returns -ENOMEM with the same contract. err
 * may be NULL when the message is not wanted. */
int atl__op_expr_compile(const char *latex, const char *const *vars,
                         size_t nvars, atl_op_expr_t **out, char **err);

/* The value for the variables values[0 .. nvars-1], in the order of vars
 * at compilation (values may be NULL when nvars is 0). Allocates nothing
 * and never fails: a domain error is NaN, as in JavaScript. */
double atl__op_expr_eval(const atl_op_expr_t *e, const double *values);

/* The partial derivative of e with respect to variable i, symbolically,
 * as a new expression over the same variables (the caller frees it). The
 * rules are mathjs's (upstream differentiates GRIN glasses' n(x, y) and
 * CustomGlass's curves with math.derivative): d|u| = |u|/u du, and
 * functions without a derivative (floor, ceil, round, trunc, sign, max,
 * min, fact, ...) are an error when their argument depends on variable i
 * and have derivative 0 otherwise. Returns 0, or -EINVAL with *err set
 * (i out of range, such a function, or a result too large), or -ENOMEM. */
int atl__op_expr_derivative(const atl_op_expr_t *e, size_t i,
                            atl_op_expr_t **out, char **err);

/* Whether the equation reads variable i at all. Upstream's evaluator
 * throws when a variable it reads is not finite, and BaseCustomSurface
 * returns NaN for an angle theta_j it reads when that is not finite. */
bool atl__op_expr_uses_var(const atl_op_expr_t *e, size_t i);

/* Frees e and everything it owns; e may be NULL. */
void atl__op_expr_free(atl_op_expr_t *e);

#endif
