/* The optics simulator's equations (optics/expr.h) and its seedrandom
 * ARC4 generator (optics/arc4.h): every equation of Ray Optics
 * Simulation's scene tests compiles, each construct gives the value
 * JavaScript gives (the expected numbers were computed with Node 20),
 * malformed equations say what and where, and derivatives agree with
 * central differences. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arc4.h"
#include "expr.h"
#include "test_data.h"

/* ------------------------------------------------------------------ */
/* seedrandom ARC4 */

Test(optics_arc4, seed0_matches_the_reference_csv) {
  size_t n;
  char *csv = atl_test_slurp(
      "ray-optics-scenes/_derived/seedrandom-arc4-seed0-first1024.csv", &n);
  atl_op_arc4_t r;
  atl__op_arc4_seed(&r, "0");
  char *save = NULL, *line = strtok_r(csv, "\n", &save);
  cr_assert_str_eq(line, "index,value");
  int rows = 0;
  while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
    char *comma = strchr(line, ',');
    cr_assert_not_null(comma);
    cr_assert_eq(atoi(line), rows);
    double want = strtod(comma + 1, NULL), got = atl__op_arc4_next(&r);
    cr_assert(got == want, "draw %d: %.17g, want %.17g", rows, got, want);
    rows++;
  }
  cr_assert_eq(rows, 1024);
  free(csv);
}

/* Expected values from an independent implementation of the algorithm in
 * tests/data/ray-optics-scenes/README.md (checked there against the
 * seed-0 file). */
static void expect_draws(const char *seed, const double *want, int n) {
  atl_op_arc4_t r;
  atl__op_arc4_seed(&r, seed);
  for (int i = 0; i < n; i++) {
    double got = atl__op_arc4_next(&r);
    cr_assert(got == want[i], "seed %.20s draw %d: %.17g, want %.17g", seed, i,
              got, want[i]);
  }
}

Test(optics_arc4, non_ascii_seed_uses_utf16_code_units) {
  /* é and ö are one unit each, the emoji two (a surrogate pair). */
  const double want[] = {0.244704151164042, 0.8492040399381634,
                         0.9851140322855885, 0.2491090992250268};
  expect_draws("h\xc3\xa9llo w\xc3\xb6rld \xf0\x9f\x98\x80 \xe2\x88\x91", want,
               4);
}

Test(optics_arc4, long_seed_wraps_the_key) {
  char seed[301];
  for (int i = 0; i < 300; i++)
    seed[i] = (char)(33 + (i * 7) % 90);
  seed[300] = '\0';
  const double want[] = {0.10190594680462259, 0.564708977703004,
                         0.07893525234629711, 0.941394686475054};
  expect_draws(seed, want, 4);
}

Test(optics_arc4, empty_seed_is_key_zero) {
  const double want[] = {0.23144008215179881, 0.27404636548159655,
                         0.7901279251811976, 0.40384160557189036};
  expect_draws("", want, 4);
}

Test(optics_arc4, draws_are_in_unit_interval) {
  atl_op_arc4_t r;
  atl__op_arc4_seed(&r, "\xff\xfe bad utf-8 \xc0\x80");
  for (int i = 0; i < 100000; i++) {
    double v = atl__op_arc4_next(&r);
    cr_assert(v >= 0 && v < 1);
  }
}

/* ------------------------------------------------------------------ */
/* Helpers */

static const char *const XY[] = {"x", "y", "lambda"};
static const char *const SURF[] = {"theta_0", "P_0", "lambda",  "t",  "p",
                                   "n_0",     "n_1", "theta_1", "P_1"};

static atl_op_expr_t *compile_ok(const char *s, const char *const *vars,
                                 size_t n) {
  atl_op_expr_t *e = NULL;
  char *err = NULL;
  int rc = atl__op_expr_compile(s, vars, n, &e, &err);
  cr_assert_eq(rc, 0, "%s: %s", s, err ? err : "?");
  cr_assert_null(err);
  cr_assert_not_null(e);
  return e;
}

static char *compile_err(const char *s, const char *const *vars, size_t n) {
  atl_op_expr_t *e = (atl_op_expr_t *)1;
  char *err = NULL;
  int rc = atl__op_expr_compile(s, vars, n, &e, &err);
  cr_assert_eq(rc, -EINVAL, "%s compiled", s);
  cr_assert_null(e);
  cr_assert_not_null(err);
  return err;
}

static double eval1(const char *s, const char *const *vars, size_t n,
                    const double *vals) {
  atl_op_expr_t *e = compile_ok(s, vars, n);
  double v = atl__op_expr_eval(e, vals);
  atl__op_expr_free(e);
  return v;
}

/* Bitwise equality, so NaN equals NaN and -0 differs from 0. */
static int same(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

/* ------------------------------------------------------------------ */
/* Every equation of the scene tests and of the object defaults. */

static const char *const EQN_KEYS[] = {"eqn",          "eqn1",     "eqn2",
                                       "eqnX",         "eqnY",     "refIndexFn",
                                       "absorptionFn", "eqnTheta", "eqnP"};

static int n_found, n_grin;

static void check_equation(const char *key, const char *s, size_t nrays) {
  /* Module templates (``...``) are mathjs, expanded before they reach
   * the objects; they are not this evaluator's input. */
  if (strchr(s, '`') != NULL)
    return;
  static const char *const X[] = {"x"}, *const T[] = {"t"};
  const char *const *vars = X;
  size_t n = 1;
  char names[2][16][12] = {{{0}}};
  const char *surf[7 + 32];
  if (strcmp(key, "eqnX") == 0 || strcmp(key, "eqnY") == 0) {
    vars = T;
  } else if (strcmp(key, "refIndexFn") == 0 ||
             strcmp(key, "absorptionFn") == 0) {
    vars = XY, n = 3;
  } else if (strcmp(key, "eqnTheta") == 0 || strcmp(key, "eqnP") == 0) {
    memcpy(surf, SURF, 7 * sizeof(*surf));
    n = 7;
    for (size_t j = 1; j <= nrays && j <= 16; j++) {
      snprintf(names[0][j - 1], 12, "theta_%zu", j);
      snprintf(names[1][j - 1], 12, "P_%zu", j);
      surf[n++] = names[0][j - 1];
      surf[n++] = names[1][j - 1];
    }
    vars = surf;
  }
  atl_op_expr_t *e = compile_ok(s, vars, n);
  double vals[40];
  for (size_t i = 0; i < n; i++)
    vals[i] = 0.25 + 0.125 * (double)i;
  (void)atl__op_expr_eval(e, vals);
  if (strcmp(key, "refIndexFn") == 0) {
    /* A GRIN glass needs the gradient of n(x, y). */
    for (size_t i = 0; i < 2; i++) {
      atl_op_expr_t *d = NULL;
      char *err = NULL;
      cr_assert_eq(atl__op_expr_derivative(e, i, &d, &err), 0, "%s: %s", s,
                   err ? err : "?");
      atl__op_expr_free(d);
    }
    n_grin++;
  }
  atl__op_expr_free(e);
  n_found++;
}

static void walk(json_object *o, size_t nrays) {
  if (json_object_is_type(o, json_type_array)) {
    for (size_t i = 0; i < json_object_array_length(o); i++)
      walk(json_object_array_get_idx(o, i), nrays);
    return;
  }
  if (!json_object_is_type(o, json_type_object))
    return;
  json_object *rays;
  if (json_object_object_get_ex(o, "outRays", &rays) &&
      json_object_is_type(rays, json_type_array))
    nrays = json_object_array_length(rays);
  json_object_object_foreach(o, key, val) {
    int eqn = 0;
    for (size_t k = 0; k < sizeof(EQN_KEYS) / sizeof(*EQN_KEYS); k++)
      eqn |= strcmp(key, EQN_KEYS[k]) == 0;
    if (eqn && json_object_is_type(val, json_type_string))
      check_equation(key, json_object_get_string(val), nrays);
    else
      walk(val, nrays);
  }
}

static int visit(const char *path, const struct stat *st, int type,
                 struct FTW *ftw) {
  (void)st, (void)ftw;
  size_t n = strlen(path);
  if (type != FTW_F || n < 5 || strcmp(path + n - 5, ".json") != 0)
    return 0;
  json_object *o = json_object_from_file(path);
  cr_assert_not_null(o, "%s does not parse", path);
  walk(o, 0);
  json_object_put(o);
  return 0;
}

Test(optics_expr, every_scene_equation_compiles) {
  const char *src = getenv("ATL_TEST_SRCDIR");
  char dir[4096];
  snprintf(dir, sizeof(dir), "%s/tests/data/ray-optics-scenes",
           src ? src : ATL_TEST_SRCDIR);
  cr_assert_eq(nftw(dir, visit, 16, FTW_PHYS), 0);
  /* 85 distinct strings, of which 12 are module templates; most occur in
   * several files. */
  cr_assert_geq(n_found, 100, "only %d equations found", n_found);
  cr_assert_geq(n_grin, 8, "only %d GRIN equations", n_grin);
}

/* ------------------------------------------------------------------ */
/* Values */

Test(optics_expr, scene_equations_values) {
  const double xy[] = {0.3, -0.7, 540};
  cr_assert(same(eval1("1+e^{-\\frac{x^2+y^2}{50^2}}", XY, 3, xy),
                 1.9997680269099189));
  cr_assert(
      same(eval1("1.1+0.1\\cdot\\cos\\left(0.1\\cdot y\\right)", XY, 3, xy),
           1.1997551000253281));
  cr_assert(same(eval1("\\operatorname{abs}\\left(0.001y\\right)", XY, 3, xy),
                 0.001 * 0.7));
  cr_assert(
      same(eval1("1.5+\\frac{0.2}{\\left(0.001\\lambda\\right)^2}", XY, 3, xy),
           1.5 + 0.2 / pow(0.001 * 540, 2)));
  cr_assert(same(eval1("-1+\\left|x\\right|", XY, 3, xy), -1 + 0.3));
  cr_assert(
      same(eval1("1+\\operatorname{floor}\\left(x\\right)", XY, 3, xy), 1));
  cr_assert(
      same(eval1("x-\\operatorname{floor}\\left(x\\right)", XY, 3, xy), 0.3));
  cr_assert(
      same(eval1("\\left(1.1+0.1\\cdot\\cos\\left(0.1\\cdot "
                 "y\\right)\\right)\\left(1.1+0.1\\cdot\\sin\\left(0.1\\cdot "
                 "x\\right)\\right)",
                 XY, 3, xy),
           (1.1 + 0.1 * cos(0.1 * -0.7)) * (1.1 + 0.1 * sin(0.1 * 0.3))));
  const double sv[] = {0.4, 0.8, 540, 0.25, 1, 1, 1.5, 0.1, 0.2};
  cr_assert(same(eval1("\\pi-\\theta_0", SURF, 9, sv), M_PI - 0.4));
  cr_assert(same(eval1("\\pi-\\theta_{0}", SURF, 9, sv), M_PI - 0.4));
  cr_assert(same(eval1("0.7\\cdot P_0", SURF, 9, sv), 0.7 * 0.8));
  cr_assert(same(eval1("P_0-P_1", SURF, 9, sv), 0.8 - 0.2));
  cr_assert(same(eval1("P_{0}-P_{1}", SURF, 9, sv), 0.8 - 0.2));
  cr_assert(same(eval1("\\theta_0+0.2p", SURF, 9, sv), 0.4 + 0.2));
  cr_assert(same(eval1("\\left(0.7+0.3p\\right)\\cdot P_0", SURF, 9, sv),
                 (0.7 + 0.3) * 0.8));
  cr_assert(
      same(eval1("t\\cdot\\frac{\\pi}{2}", SURF, 9, sv), 0.25 * (M_PI / 2)));
  cr_assert(same(eval1("\\frac{t+1}{2}", SURF, 9, sv), 0.625));
  cr_assert(same(eval1("n_1\\cdot\\lambda", SURF, 9, sv), 1.5 * 540));
  const double t[] = {1.25};
  const char *const T[] = {"t"};
  cr_assert(same(eval1("25\\cdot\\cos\\left(t\\right)-25", T, 1, t),
                 25 * cos(1.25) - 25));
  cr_assert(same(eval1("-20\\cdot\\sin\\left(t\\right)", T, 1, t),
                 -(20 * sin(1.25))));
}

Test(optics_expr, evaluatex_grammar) {
  const double xy[] = {0.3, -0.7, 540};
  /* LaTeX's one-character arguments. */
  cr_assert(same(eval1("2^24", NULL, 0, NULL), 16));
  cr_assert(same(eval1("2^{12}", NULL, 0, NULL), 4096));
  cr_assert(same(eval1("\\frac 4 2", NULL, 0, NULL), 2));
  cr_assert(same(eval1("\\frac 4 2 ^ 3", NULL, 0, NULL), 8));
  cr_assert(same(eval1("\\frac {4 ^ 2} 32", NULL, 0, NULL), 32.0 / 3));
  cr_assert(same(eval1("\\sqrt 45", NULL, 0, NULL), 10));
  cr_assert(same(eval1("\\sqrt[3]{8}", NULL, 0, NULL), sqrt(3) * 8));
  cr_assert(same(eval1("x^-1", XY, 3, xy), 1 / 0.3));
  cr_assert(same(eval1("\\frac{1}{2}x^{-\\frac{1}{2}}", XY, 3, xy),
                 0.5 * pow(0.3, -0.5)));
  /* Signs, powers, implicit products. */
  cr_assert(same(eval1("-4^2", NULL, 0, NULL), -16));
  cr_assert(same(eval1("2^3^2", NULL, 0, NULL), 512));
  cr_assert(same(eval1("-5 - -4", NULL, 0, NULL), -1));
  cr_assert(same(eval1("2x^2 + 5x + 7", XY, 3, xy), 2 * 0.09 + 1.5 + 7));
  cr_assert(same(eval1("(2)(4)", NULL, 0, NULL), 8));
  cr_assert(same(eval1("x y", XY, 3, xy), 0.3 * -0.7));
  cr_assert(same(eval1("2\\sqrt{x}", XY, 3, xy), 2 * sqrt(0.3)));
  cr_assert(same(eval1("2 * -|2 - 4|", NULL, 0, NULL), -4));
  cr_assert(same(
      eval1("{1 + \\left[2 - \\left(3 + 4\\right)\\right]}", NULL, 0, NULL),
      -4));
  cr_assert(same(eval1("4!", NULL, 0, NULL), 24));
  cr_assert(same(eval1("3.9! + 3.1!", NULL, 0, NULL), 30));
  /* a / b is a * (1 / b); \frac is a true division. */
  cr_assert(same(eval1("x/y", XY, 3, xy), -0.42857142857142855));
  cr_assert(same(eval1("\\frac{x}{y}", XY, 3, xy), -0.4285714285714286));
  /* A command takes a value; a named function the following power. */
  cr_assert(same(eval1("\\sin x^2", XY, 3, xy), pow(sin(0.3), 2)));
  cr_assert(same(eval1("sin x^2", XY, 3, xy), sin(0.09)));
  cr_assert(same(eval1("\\exp x^2", XY, 3, xy), exp(0.09)));
  cr_assert(same(eval1("\\log\\left(x\\right)", XY, 3, xy), log(0.3)));
  cr_assert(same(eval1("\\arctan\\left(y\\right)", XY, 3, xy), atan(-0.7)));
  cr_assert(same(eval1("\\tanh\\left(x\\right)+\\sinh\\left(x\\right)+"
                       "\\cosh\\left(x\\right)",
                       XY, 3, xy),
                 tanh(0.3) + sinh(0.3) + cosh(0.3)));
  cr_assert(same(eval1("\\operatorname{arcsinh}(x)", XY, 3, xy), asinh(0.3)));
  cr_assert(same(eval1("\\mathrm{sech}(x)", XY, 3, xy), 1 / cosh(0.3)));
  cr_assert(same(eval1("\\max(x, y, 0.1)+\\min(x,y)", XY, 3, xy), 0.3 - 0.7));
  cr_assert(same(eval1("\\operatorname{sgn}(y)", XY, 3, xy), -1));
  cr_assert(same(eval1("\\operatorname{ceil}(y)", XY, 3, xy), -0.0));
  cr_assert(same(eval1("hypot(3,4,12)", NULL, 0, NULL), 13));
  cr_assert(same(eval1("atan2(y, x)", XY, 3, xy), atan2(-0.7, 0.3)));
  cr_assert(same(eval1("logn(81, 3)", NULL, 0, NULL), log(81) / log(3)));
  cr_assert(same(eval1("rootn(8, 3)", NULL, 0, NULL), pow(8, 1.0 / 3)));
  cr_assert(same(eval1("sec(1)+csc(1)+cot(1)", NULL, 0, NULL),
                 1 / cos(1) + 1 / sin(1) + 1 / tan(1)));
  cr_assert(same(eval1("PI+E+pi+e+SQRT2", NULL, 0, NULL),
                 M_PI + M_E + M_PI + M_E + M_SQRT2));
  cr_assert(same(eval1("\\SIN(x)", XY, 3, xy), sin(0.3)));
  /* mathjs's toTex, as ModuleObj's ``...`` expansion writes it. */
  const double t[] = {0.25};
  const char *const T[] = {"t"};
  cr_assert(same(eval1("{\\left(1- t\\right)}^{3}\\cdot800+3\\cdot{\\left(1- "
                       "t\\right)}^{2}\\cdot t\\cdot960",
                       T, 1, t),
                 pow(0.75, 3) * 800 + 3 * pow(0.75, 2) * 0.25 * 960));
}

Test(optics_expr, javascript_semantics) {
  const char *const X[] = {"x"};
  double v;
  v = 1;
  cr_assert(isnan(eval1("x^{1/0}", X, 1, &v)), "pow(1, Infinity) is NaN");
  v = NAN;
  cr_assert(same(eval1("x^0", X, 1, &v), 1));
  cr_assert(isnan(eval1("1^x", X, 1, &v)));
  cr_assert(isnan(eval1("max(1, x)", X, 1, &v)));
  v = 0;
  cr_assert(same(eval1("1/x", X, 1, &v), INFINITY));
  cr_assert(same(eval1("-1/x", X, 1, &v), -INFINITY));
  cr_assert(isnan(eval1("x/x", X, 1, &v)));
  cr_assert(same(eval1("max(-x, x)", X, 1, &v), 0.0));
  cr_assert(same(eval1("min(x, -x)", X, 1, &v), -0.0));
  cr_assert(same(eval1("sign(-x)", X, 1, &v), -0.0));
  /* evaluatex's sum starts from 0, so -0 + -0 is +0. */
  cr_assert(same(eval1("-x-x", X, 1, &v), 0.0));
  cr_assert(same(eval1("-x", X, 1, &v), -0.0));
  cr_assert(same(eval1("x^{0.5}", X, 1, &(double){-0.0}), 0.0));
  cr_assert(same(eval1("x^{0.5}", X, 1, &(double){2}), sqrt(2)));
  cr_assert(same(eval1("x^{-1}+x^2", X, 1, &(double){3}), 1.0 / 3 + 9));
  cr_assert(same(eval1("round(-2.5)", NULL, 0, NULL), -2));
  cr_assert(same(eval1("round(2.5)", NULL, 0, NULL), 3));
  cr_assert(same(eval1("round(-0.2)", NULL, 0, NULL), -0.0));
  cr_assert(same(eval1("round(0.49999999999999994)", NULL, 0, NULL), 0));
  cr_assert(isnan(eval1("atan2(1)", NULL, 0, NULL)), "a missing argument");
  cr_assert(same(eval1("sin(0, 5)", NULL, 0, NULL), 0), "extra arguments");
  cr_assert(same(eval1("hypot(1/0, 0/0)", NULL, 0, NULL), INFINITY));
  cr_assert(same(eval1("171!", NULL, 0, NULL), INFINITY));
  cr_assert(isnan(eval1("(-3)!", NULL, 0, NULL)), "upstream throws");
  cr_assert(same(eval1("fround(0.1)", NULL, 0, NULL), (double)0.1f));
  cr_assert(same(eval1("imul(65536, 65536)+clz32(1)", NULL, 0, NULL), 31));
}

Test(optics_expr, variables_are_reported) {
  const char *const V[] = {"x", "theta_0", "P_0"};
  atl_op_expr_t *e = compile_ok("2\\theta_0+x", V, 3);
  cr_assert(atl__op_expr_uses_var(e, 0));
  cr_assert(atl__op_expr_uses_var(e, 1));
  cr_assert(!atl__op_expr_uses_var(e, 2));
  cr_assert(!atl__op_expr_uses_var(e, 3));
  atl__op_expr_free(e);
}

/* ------------------------------------------------------------------ */
/* Errors */

static void expect_error(const char *s, const char *const *vars, size_t n,
                         const char *part1, const char *part2) {
  char *err = compile_err(s, vars, n);
  cr_assert_not_null(strstr(err, part1), "%s: \"%s\" lacks \"%s\"", s, err,
                     part1);
  if (part2 != NULL)
    cr_assert_not_null(strstr(err, part2), "%s: \"%s\" lacks \"%s\"", s, err,
                       part2);
  free(err);
}

Test(optics_expr, error_messages) {
  /* The equation, and two parts the message must contain. */
  static const char *const cases[][3] = {
      {"", "empty", NULL},
      {"   ", "empty", NULL},
      {"\\frac{x}{y", "closing bracket", "end"},
      {"(x+1", "closing bracket", "end"},
      {"x+1)", "no opening one", "column 4"},
      {"{1}}+2", "unmatched closing brace", "column 4"},
      {"1+\\foo{x}", "unknown command \"\\foo\"", "column 3"},
      {"x+q", "unknown variable \"q\"", "column 3"},
      {"x+q", "known: x, y, lambda", NULL},
      {"xy", "unknown variable \"xy\"", "column 1"},
      {"\\ln(x)", "\\log", "column 1"},
      {"2\\times3", "\\cdot", "column 2"},
      {"x^2.5", "unexpected character", "column 4"},
      {".5", "unexpected character", "column 1"},
      {"x+", "expected", "end"},
      {"+x", "expected", "column 1"},
      {"|x", "closing |", NULL},
      {"\\operatorname{cosh}(x)", "\\operatorname", NULL},
      {"\\left\\{x\\right\\}", "\\left", NULL},
      {"random(1)", "random", NULL},
      {"\\theta_0", "unknown command \"\\theta\"", NULL},
      {"x \xc3\xa9", "column 3", NULL},
      {"x,y", "expected an operator or the end", "column 2"},
      {"\xc2\xa0\xc2\xa0q", "column 3", NULL},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
    expect_error(cases[i][0], XY, 3, cases[i][1], cases[i][2]);
}

Test(optics_expr, hostile_input_is_refused) {
  char *s = malloc(ATL_OP_EXPR_MAX_LEN + 2);
  memset(s, '1', ATL_OP_EXPR_MAX_LEN + 1);
  s[ATL_OP_EXPR_MAX_LEN + 1] = '\0';
  expect_error(s, XY, 3, "too long", NULL);
  memset(s, '(', 5000);
  s[5000] = '\0';
  expect_error(s, XY, 3, "nested too deeply", NULL);
  memset(s, '-', 5000);
  expect_error(s, XY, 3, "nested too deeply", NULL);
  for (int i = 0; i < 2000; i++)
    memcpy(s + 2 * i, "x^", 2);
  strcpy(s + 4000, "x");
  expect_error(s, XY, 3, "nested too deeply", NULL);
  /* Wide is fine: a sum of thousands of terms. */
  for (int i = 0; i < 4000; i++)
    memcpy(s + 2 * i, "x+", 2);
  strcpy(s + 8000, "1");
  atl_op_expr_t *e = compile_ok(s, XY, 3);
  const double v[] = {1, 0, 0};
  cr_assert(same(atl__op_expr_eval(e, v), 4001));
  atl__op_expr_free(e);
  free(s);
  const char *const bad[] = {"x y"};
  expect_error("1", bad, 1, "invalid variable name", NULL);
}

/* ------------------------------------------------------------------ */
/* Derivatives */

static void check_derivative(const char *s, const char *const *vars, size_t n,
                             const double *pts, size_t npts) {
  atl_op_expr_t *e = compile_ok(s, vars, n);
  for (size_t i = 0; i < n; i++) {
    atl_op_expr_t *d = NULL;
    char *err = NULL;
    cr_assert_eq(atl__op_expr_derivative(e, i, &d, &err), 0, "%s: %s", s,
                 err ? err : "?");
    for (size_t p = 0; p < npts; p++) {
      double v[8];
      memcpy(v, pts + p * n, n * sizeof(*v));
      double x0 = v[i], h = 1e-6 * fmax(1, fabs(x0));
      v[i] = x0 + h;
      double fp = atl__op_expr_eval(e, v);
      v[i] = x0 - h;
      double fm = atl__op_expr_eval(e, v);
      v[i] = x0;
      double num = (fp - fm) / (2 * h), sym = atl__op_expr_eval(d, v);
      cr_assert(fabs(num - sym) <= 1e-6 * (1 + fabs(sym)),
                "d(%s)/d%s at point %zu: %.12g, differences give %.12g", s,
                vars[i], p, sym, num);
    }
    atl__op_expr_free(d);
  }
  atl__op_expr_free(e);
}

Test(optics_expr, derivatives_match_differences) {
  const double pts[] = {0.3,  -0.7, 540, 1.2,  0.4, 600,
                        -2.5, 3.1,  450, 0.05, 0.9, 700};
  const char *const eqs[] = {
      "1+e^{-\\frac{x^2+y^2}{50^2}}",
      "1.1+0.1\\cdot\\cos\\left(0.1\\cdot y\\right)",
      "\\left(1.1+0.1\\cdot\\cos\\left(0.1\\cdot "
      "y\\right)\\right)\\left(1.1+0.1\\cdot\\sin\\left(0.1\\cdot "
      "x\\right)\\right)",
      "1.5+\\frac{0.2}{\\left(0.001\\lambda\\right)^2}",
      "\\operatorname{abs}\\left(0.001y\\right)+|x|",
      "x/y - \\frac{y}{x+10} + x y \\lambda/1000",
      "\\sqrt{x^2+y^2+1}+\\tan(0.1x)+\\sec(0.1y)+\\csc(x+5)+\\cot(y+7)",
      "\\arcsin(0.1x)+\\arccos(0.1y)+\\arctan(x y)+\\operatorname{asinh}(x)",
      "\\operatorname{acosh}(x^2+2)+\\operatorname{atanh}(0.1y)+\\tanh(x)",
      "\\mathrm{sech}(x)+\\sinh(y)+\\cosh(x)+\\exp(0.1y)+\\log(x^2+1)",
      "log10(x^2+1)+log2(y^2+1)+log1p(x^2)+expm1(0.1y)+cbrt(x+10)",
      "(x^2+1)^{y}+2^{x}+x^{3}+hypot(x,y)+atan2(y,x+10)",
      "pow(x^2+1, 0.5y)+logn(x^2+2, y^2+2)+rootn(x^2+1, y^2+1)",
      "frac(x, y^2+1)+cdot(x, y)+times(x, x)+\\frac{1}{x+5}",
      "-x^2+-(y)-\\lambda/700+\\frac{\\sin x}{2}",
  };
  for (size_t k = 0; k < sizeof(eqs) / sizeof(*eqs); k++)
    check_derivative(eqs[k], XY, 3, pts, 4);
}

Test(optics_expr, derivative_errors) {
  atl_op_expr_t *e = compile_ok("1+\\operatorname{floor}(x)", XY, 3), *d;
  char *err = NULL;
  cr_assert_eq(atl__op_expr_derivative(e, 0, &d, &err), -EINVAL);
  cr_assert_null(d);
  cr_assert_not_null(strstr(err, "floor() has no derivative"), "%s", err);
  free(err);
  /* Not depending on y, it differentiates to 0 by y. */
  cr_assert_eq(atl__op_expr_derivative(e, 1, &d, &err), 0);
  const double v[] = {1, 2, 3};
  cr_assert(same(atl__op_expr_eval(d, v), 0));
  atl__op_expr_free(d);
  cr_assert_eq(atl__op_expr_derivative(e, 3, &d, &err), -EINVAL);
  cr_assert_not_null(strstr(err, "no variable 3"), "%s", err);
  free(err);
  atl__op_expr_free(e);
}

Test(optics_expr, second_derivative) {
  const char *const X[] = {"x"};
  atl_op_expr_t *e = compile_ok("\\sin(x^2)", X, 1), *d1, *d2;
  cr_assert_eq(atl__op_expr_derivative(e, 0, &d1, NULL), 0);
  cr_assert_eq(atl__op_expr_derivative(d1, 0, &d2, NULL), 0);
  double x = 0.7;
  cr_assert(fabs(atl__op_expr_eval(d2, &x) -
                 (2 * cos(x * x) - 4 * x * x * sin(x * x))) < 1e-14);
  atl__op_expr_free(e), atl__op_expr_free(d1), atl__op_expr_free(d2);
}
