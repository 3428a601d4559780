/* The mathjs-subset evaluator (optics/mathexpr.h) and ModuleObj expansion
 * (optics/module.h): every ModuleObj of Ray Optics Simulation's scene tests,
 * mathjs's precedence and implicit multiplication, the equation templates'
 * LaTeX, errors and the order of random draws. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mathexpr.h"
#include "module.h"
#include "test_data.h"

#define SCENES "ray-optics-scenes/"

/* Draws 0, 0.125, 0.25, ... so that the order of draws is visible. */
static double counter_rng(void *user) {
  int *n = user;
  return (*n)++ * 0.125;
}

static atl_op_value_t eval_in(const char *src, atl_op_scope_t *s) {
  atl_op_mexpr_t *e = NULL;
  char *err = NULL;
  cr_assert_eq(atl__op_mexpr_compile(src, strlen(src), &e, &err), 0, "%s: %s",
               src, err);
  atl_op_value_t v;
  int rc = atl__op_mexpr_eval(e, s, &v, &err);
  cr_assert_eq(rc, 0, "%s: %s", src, err ? err : "");
  atl__op_mexpr_free(e);
  return v;
}

static double num(const char *src) {
  atl_op_scope_t *s = atl__op_scope_new();
  atl__op_scope_set_num(s, "x", 3);
  atl_op_value_t v = eval_in(src, s);
  atl__op_scope_free(s);
  return v.num;
}

/* The error message of src (compile or evaluation), malloc()ed. */
static char *expr_error(const char *src) {
  atl_op_mexpr_t *e = NULL;
  char *err = NULL;
  if (atl__op_mexpr_compile(src, strlen(src), &e, &err) < 0)
    return err;
  atl_op_scope_t *s = atl__op_scope_new();
  atl_op_value_t v;
  int rc = atl__op_mexpr_eval(e, s, &v, &err);
  atl__op_mexpr_free(e);
  atl__op_scope_free(s);
  cr_assert_lt(rc, 0, "%s should fail", src);
  return err;
}

Test(optics_mathexpr, precedence) {
  cr_expect_eq(num("-2^2"), -4);
  cr_expect_eq(num("2^3^2"), 512);
  cr_expect_eq(num("2^-1"), 0.5);
  cr_expect_eq(num("1+2*3"), 7);
  cr_expect_eq(num("(1+2)*3"), 9);
  cr_expect_eq(num("10-4-3"), 3);
  cr_expect_eq(num("2*3/4"), 1.5);
  /* mathjs 13: % and mod bind tighter than * and /. */
  cr_expect(isinf(num("250/10%10")));
  cr_expect_eq(num("7 mod 3"), 1);
  cr_expect_eq(num("-7 mod 3"), 2);
  cr_expect_eq(num("50%"), 0.5);
  cr_expect_eq(num("3!"), 6);
  cr_expect_eq(num("2^x!"), 64);
  cr_expect_eq(num("x > 2 ? 10 : 20"), 10);
  cr_expect_eq(num("x < 2 ? 10 : x < 5 ? 30 : 40"), 30);
  cr_expect_eq(num("1 < 2 < 3"), 1);
  cr_expect_eq(num("3 < 2 < 5"), 0);
  cr_expect_eq(num("not 0"), 1);
  cr_expect_eq(num("1 and 0 or 1"), 1);
  cr_expect_eq(num("true + 1"), 2);
}

Test(optics_mathexpr, implicit_multiplication) {
  cr_expect_eq(num("2x"), 6);
  cr_expect_eq(num("2 x"), 6);
  cr_expect_eq(num("2(x+1)"), 8);
  cr_expect_eq(num("(1+2)(3)"), 9);
  cr_expect_eq(num("x 2"), 6);
  cr_expect_eq(num("1/2x"), 1.5); /* rule 2: (1/2)x */
  cr_expect_eq(num("x/2x"), 0.5); /* x/(2x): implicit binds tighter */
  cr_expect_eq(num("2x^2"), 18);
  cr_expect_eq(num("2pi"), 2 * M_PI);
  cr_expect_eq(num("2e"), 2 * M_E);
  cr_expect_eq(num("2e3"), 2000);
}

Test(optics_mathexpr, javascript_and_mathjs_numbers) {
  cr_expect(isinf(num("1/0")));
  cr_expect(isnan(num("0/0")));
  cr_expect_eq(num("0.1+0.2 == 0.3"), 1); /* mathjs's relative tolerance */
  cr_expect_eq(num("floor(0.1*3*10)"), 3);
  cr_expect_eq(num("round(2.5)"), 3);
  cr_expect_eq(num("round(-2.5)"), -3);
  cr_expect_eq(num("round(1.005, 2)"), 1.01);
  cr_expect_eq(num("mod(-1, 3)"), 2);
  cr_expect_eq(num("log(8, 2)"), 3);
  cr_expect_eq(num("max(1, 5, 3) + min(4, 2)"), 7);
  cr_expect_eq(num("atan2(1, 1)"), M_PI / 4);
  cr_expect_eq(num("sign(-3) + abs(-2) + sqrt(16) + pow(2, 3)"), 13);
  cr_expect_eq(num("nthRoot(-8, 3)"), -2);
  cr_expect(isnan(num("1^Infinity"))); /* JavaScript, not C */
}

Test(optics_mathexpr, assignment_and_functions) {
  atl_op_scope_t *s = atl__op_scope_new();
  eval_in("a = 3", s);
  eval_in("f(t) = t^2 + a", s);
  cr_expect_eq(eval_in("f(2)", s).num, 7);
  /* A copy is a new scope: assignments in it stay in it. */
  atl_op_scope_t *c = atl__op_scope_copy(s);
  eval_in("a = 10", c);
  cr_expect_eq(eval_in("a", s).num, 3);
  cr_expect_eq(eval_in("f(2)", c).num, 7); /* f sees where it was made */
  atl__op_scope_free(c);
  atl__op_scope_free(s);
}

Test(optics_mathexpr, errors) {
  struct {
    const char *src, *want;
  } cases[] = {
      {"y + 1", "Undefined symbol y"},
      {"foo(1)", "Undefined function foo"},
      {"sqrt(-1)", "complex"},
      {"(-8)^(1/3)", "complex"},
      {"2 +", "Unexpected end of expression"},
      {"(1", "Parenthesis ) expected"},
      {"\"a\" / \"b\"", "Strings are not supported"},
      {"[1, 2]", "Matrices"},
      {"sin(1, 2)", "Wrong number of arguments"},
      {"1 = 2", "Invalid left hand side"},
      {"round(1, 20)", "decimals"},
      {"5 3", "Unexpected 3"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
    char *err = expr_error(cases[i].src);
    cr_expect(strstr(err, cases[i].want) != NULL, "%s: got \"%s\"",
              cases[i].src, err);
    free(err);
  }
  char deep[1200];
  memset(deep, '(', 600);
  memset(deep + 600, ')', 600);
  deep[600] = '1';
  deep[1199] = 0;
  char *err = expr_error(deep);
  cr_expect(strstr(err, "nested too deeply") != NULL, "%s", err);
  free(err);
}

Test(optics_mathexpr, random_is_a_call) {
  atl_op_scope_t *s = atl__op_scope_new();
  int n = 0;
  atl__op_scope_set_random(s, "random", counter_rng, &n);
  /* Left to right, one draw per call, arguments first. */
  cr_expect_eq(eval_in("random() + 10*random()", s).num, 1.25);
  cr_expect_eq(eval_in("random(random())", s).num, 0.375);
  cr_expect_eq(n, 4);
  atl_op_mexpr_t *e;
  char *err;
  atl__op_mexpr_compile("random + 1", 10, &e, &err);
  atl_op_value_t v;
  cr_expect_lt(atl__op_mexpr_eval(e, s, &v, &err), 0);
  free(err);
  atl__op_mexpr_free(e);
  atl__op_scope_free(s);
}

Test(optics_mathexpr, latex) {
  atl_op_scope_t *s = atl__op_scope_new();
  atl__op_scope_set_num(s, "x_1", 100);
  atl__op_scope_set_num(s, "x_2", -250);
  atl__op_scope_set_num(s, "big", 123456.7);
  atl_op_texdefs_t *d = atl__op_texdefs_new();
  char *err = NULL, *out = NULL;
  cr_assert_eq(atl__op_texdefs_add(d, "sq(u) = u^2", &err), 1);
  cr_assert_eq(atl__op_texdefs_add(d, "a = 2", &err), 0);
  struct {
    const char *src, *want;
  } cases[] = {
      {"x_1 + (x_2 - x_1) * t", "100+\\left(-250-100\\right)\\cdot t"},
      {"(1-t)^3*x_2", "{\\left(1- t\\right)}^{3}\\cdot-250"},
      {"sq(t+1)", "{t+1}^{2}"},
      {"theta_0/lambda", "\\frac{\\theta_{0}}{\\lambda}"},
      {"asin(n_0) + log(P_1)",
       "\\arcsin\\left( n_{0}\\right)+\\log\\left( P_{1}\\right)"},
      {"big + sqrt(x)", "1.234567\\cdot10^{+5}+\\sqrt{ x}"},
      {"-(a+b)", "-\\left( a+ b\\right)"},
  };
  /* "sq(t+1)": the argument replaces u as a node, so its + needs the
   * parentheses of the power's base, which LaTeX gets as braces. */
  cases[2].want = "{\\left( t+1\\right)}^{2}";
  for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
    int rc = atl__op_mexpr_to_tex(cases[i].src, strlen(cases[i].src), s, d,
                                  &out, &err);
    cr_assert_eq(rc, 0, "%s: %s", cases[i].src, err);
    cr_expect_str_eq(out, cases[i].want, "%s", cases[i].src);
    free(out);
  }
  atl__op_texdefs_free(d);
  atl__op_scope_free(s);
}

/* Expands every ModuleObj of a scene and returns them concatenated. */
static json_object *expand_scene(const char *name, json_object **doc_out) {
  size_t n;
  char path[256];
  snprintf(path, sizeof(path), SCENES "%s", name);
  char *text = atl_test_slurp(path, &n);
  json_object *doc = json_tokener_parse(text);
  free(text);
  cr_assert_not_null(doc, "%s does not parse", name);
  json_object *objs, *all = json_object_new_array();
  cr_assert(json_object_object_get_ex(doc, "objs", &objs));
  for (size_t i = 0; i < json_object_array_length(objs); i++) {
    json_object *o = json_object_array_get_idx(objs, i), *t;
    json_object_object_get_ex(o, "type", &t);
    if (strcmp(json_object_get_string(t), "ModuleObj") != 0)
      continue;
    json_object *out = NULL;
    char *err = NULL;
    int calls = 0;
    int rc = atl__op_module_expand(doc, o, counter_rng, &calls, &out, &err);
    cr_assert_eq(rc, 0, "%s objs[%zu]: %s", name, i, err);
    cr_expect_eq(calls, 0, "no scene module draws random numbers");
    for (size_t k = 0; k < json_object_array_length(out); k++)
      json_object_array_add(all,
                            json_object_get(json_object_array_get_idx(out, k)));
    json_object_put(out);
  }
  *doc_out = doc;
  return all;
}

static double field(json_object *o, const char *a, const char *b) {
  json_object *v = o;
  json_object_object_get_ex(v, a, &v);
  if (b)
    json_object_object_get_ex(v, b, &v);
  return json_object_get_double(v);
}

Test(optics_module, every_scene_module_expands) {
  static const struct {
    const char *scene;
    size_t objs;
  } scenes[] = {
      {"blocker/Blocker/filter.json", 321},
      {"blocker/Blocker/filter_invert.json", 321},
      {"glass/CircleGrinGlass/equiv_cauchy.json", 66},
      {"glass/CurveGlass/equiv_param.json", 3},
      {"glass/CurveGrinGlass/equiv_param.json", 3},
      {"glass/PlaneGlass/cauchy.json", 321},
      {"mirror/BeamSplitter/filter-invert.json", 321},
      {"mirror/BeamSplitter/filter.json", 321},
      {"mirror/Mirror/filter.json", 321},
      {"mirror/Mirror/filter_invert.json", 321},
      {"other/CustomArcSurface/coated-lens.json", 3 + 321},
  };
  for (size_t i = 0; i < sizeof(scenes) / sizeof(*scenes); i++) {
    json_object *doc, *all = expand_scene(scenes[i].scene, &doc);
    cr_expect_eq(json_object_array_length(all), scenes[i].objs, "%s: %zu",
                 scenes[i].scene, json_object_array_length(all));
    json_object_put(all);
    json_object_put(doc);
  }
}

Test(optics_module, cont_spectrum) {
  json_object *doc, *all = expand_scene("blocker/Blocker/filter.json", &doc);
  cr_assert_eq(json_object_array_length(all), 321);
  for (int i = 0; i < 321; i++) {
    json_object *o = json_object_array_get_idx(all, (size_t)i), *t;
    cr_assert(json_object_object_get_ex(o, "type", &t));
    cr_expect_str_eq(json_object_get_string(t), "SingleRay");
    cr_expect_eq(field(o, "wavelength", NULL), 380 + i);
    cr_expect_eq(field(o, "brightness", NULL), 50.0 / 320);
    cr_expect_eq(field(o, "p1", "x"), 594.6210526315788);
    cr_expect_eq(field(o, "p2", "y"), 296.80809716599185);
    cr_expect(!json_object_object_get_ex(o, "for", NULL));
  }
  json_object_put(all);
  json_object_put(doc);
}

Test(optics_module, bezier_equations) {
  json_object *doc,
      *all = expand_scene("glass/CurveGlass/equiv_param.json", &doc);
  json_object *g = json_object_array_get_idx(all, 0), *pieces, *x;
  cr_assert(json_object_object_get_ex(g, "pieces", &pieces));
  cr_expect_eq(field(g, "refIndex", NULL), 1.5);
  json_object *p0 = json_object_array_get_idx(pieces, 0);
  cr_assert(json_object_object_get_ex(p0, "eqnX", &x));
  cr_expect_str_eq(json_object_get_string(x),
                   "800+\\left(960-800\\right)\\cdot t");
  json_object *p1 = json_object_array_get_idx(pieces, 1);
  cr_assert(json_object_object_get_ex(p1, "eqnX", &x));
  cr_expect_str_eq(json_object_get_string(x),
                   "{\\left(1- t\\right)}^{3}\\cdot960+3\\cdot{\\left(1- "
                   "t\\right)}^{2}\\cdot t\\cdot1040+3\\cdot\\left(1- "
                   "t\\right)\\cdot{ t}^{2}\\cdot980+{ t}^{3}\\cdot900");
  cr_expect_eq(field(p1, "tStep", NULL), 0.01);
  json_object_put(all);
  json_object_put(doc);
}

Test(optics_module, nested_module_objects) {
  json_object *doc,
      *all = expand_scene("other/CustomArcSurface/coated-lens.json", &doc);
  json_object *glass = json_object_array_get_idx(all, 0);
  json_object *arc = json_object_array_get_idx(all, 1), *t;
  json_object_object_get_ex(arc, "type", &t);
  cr_expect_str_eq(json_object_get_string(t), "CustomArcSurface");
  /* x_left + curveShift1 = 698 - 30 + 250 - sqrt(250^2 - 90^2). */
  double x = 698 - 30 + 250 - sqrt(250.0 * 250 - 90 * 90);
  cr_expect_float_eq(field(arc, "p1", "x"), x, 1e-12);
  cr_expect_eq(field(arc, "p2", "y"), 332 + 90);
  json_object *path;
  json_object_object_get_ex(glass, "path", &path);
  cr_expect_eq(json_object_array_length(path), 6);
  json_object_put(all);
  json_object_put(doc);
}

/* Expands the first ModuleObj of a scene given as text. */
static int expand_text(const char *scene, json_object **out, char **err,
                       int *draws) {
  json_object *doc = json_tokener_parse(scene), *objs;
  cr_assert_not_null(doc, "bad test scene: %s", scene);
  json_object_object_get_ex(doc, "objs", &objs);
  *draws = 0;
  int rc = atl__op_module_expand(doc, json_object_array_get_idx(objs, 0),
                                 counter_rng, draws, out, err);
  json_object_put(doc);
  return rc;
}

#define MOD(def, inst)                                                         \
  "{\"modules\": {\"M\": " def "}, \"objs\": [{\"type\": \"ModuleObj\", "      \
  "\"module\": \"M\"" inst "}]}"

Test(optics_module, loops_conditions_and_defaults) {
  json_object *out;
  char *err;
  int draws;
  /* Two loop variables (the first outermost), an "if", defaults from the
   * declarations, points at the origin, and text templates. */
  int rc = expand_text(
      MOD("{\"numPoints\": 1, \"params\": [\"n=1:1:5:3\", \"k=2:1:9\"],"
          "\"objs\": [{\"type\": \"T\", \"for\": [\"i=1:1:n\", "
          "\"j=0:0.5:1\"], \"if\": \"i != 2\", \"v\": \"`i*10+j`\","
          "\"s\": \"i=`i`, k=`k`, x=`x_1`\", \"b\": \"`i > 1`\"}]}",
          ""),
      &out, &err, &draws);
  cr_assert_eq(rc, 0, "%s", err);
  cr_assert_eq(json_object_array_length(out), 6);
  json_object *o = json_object_array_get_idx(out, 3), *s, *b;
  cr_expect_eq(field(o, "v", NULL), 30);
  json_object_object_get_ex(o, "s", &s);
  cr_expect_str_eq(json_object_get_string(s), "i=3, k=2, x=0");
  json_object_object_get_ex(o, "b", &b);
  cr_expect(json_object_is_type(b, json_type_boolean));
  cr_expect(!json_object_object_get_ex(o, "if", NULL));
  json_object_put(out);

  /* A floating step accumulates as upstream's value += step does. */
  rc = expand_text(MOD("{\"objs\": [{\"type\": \"T\", \"for\": "
                       "\"t=0:0.1:0.3\", \"v\": \"`t`\"}]}",
                       ""),
                   &out, &err, &draws);
  cr_assert_eq(rc, 0, "%s", err);
  cr_expect_eq(json_object_array_length(out), 3); /* 0.30000000000000004 */
  json_object_put(out);
}

Test(optics_module, random_order) {
  json_object *out;
  char *err;
  int draws;
  int rc = expand_text(
      MOD("{\"vars\": [\"r0 = random()\"], \"objs\": [{\"type\": \"T\", "
          "\"for\": \"i=1:1:2\", \"a\": \"`random()`\", \"b\": "
          "\"`r0`\"}, {\"type\": \"T\", \"c\": \"`random()`\"}]}",
          ", \"params\": {}"),
      &out, &err, &draws);
  cr_assert_eq(rc, 0, "%s", err);
  cr_expect_eq(draws, 4);
  cr_expect_eq(field(json_object_array_get_idx(out, 0), "a", NULL), 0.125);
  cr_expect_eq(field(json_object_array_get_idx(out, 0), "b", NULL), 0);
  cr_expect_eq(field(json_object_array_get_idx(out, 1), "a", NULL), 0.25);
  cr_expect_eq(field(json_object_array_get_idx(out, 2), "c", NULL), 0.375);
  json_object_put(out);
}

Test(optics_module, errors) {
  static const struct {
    const char *scene, *want;
  } cases[] = {
      {"{\"modules\": {}, \"objs\": [{\"type\": \"ModuleObj\", \"module\": "
       "\"Nope\"}]}",
       "unknown module \"Nope\""},
      {MOD("{\"objs\": [{\"type\": \"T\", \"v\": \"`q + 1`\"}]}", ""),
       "objs[0].v: template \"q + 1\": Undefined symbol q. Define it"},
      {MOD("{\"objs\": [{\"type\": \"T\", \"for\": \"i=1:0:5\"}]}", ""),
       "loop variable i=1:0:5"},
      {MOD("{\"objs\": [{\"type\": \"T\", \"for\": \"i=1:1:5000\"}]}", ""),
       "maxLoopLength=1000"},
      {MOD("{\"maxLoopLength\": 1e9, \"objs\": [{\"type\": \"T\", \"for\": "
           "[\"i=1:1:1000\", \"j=1:1:1000\"]}]}",
           ""),
       "100000"},
      {MOD("{\"objs\": [{\"type\": \"T\", \"for\": \"i=1:1\"}]}", ""),
       "start:step:end"},
      {MOD("{\"objs\": [{\"type\": \"T\", \"v\": \"`\\\"a\\\"/\\\"b\\\"`\"}]}",
           ""),
       "Strings are not supported"},
      {MOD("{\"params\": [\"a=1:1:5\"], \"objs\": [{\"type\": \"T\", \"v\": "
           "\"`a`\"}]}",
           ", \"params\": {\"b\": 1}"),
       "Undefined symbol a"},
      {MOD("{\"objs\": [{\"type\": \"ModuleObj\", \"module\": \"M\"}]}", ""),
       "nested more than 16"},
      {MOD("{\"objs\": [\"x\"]}", ""), "string \"type\""},
      {MOD("{\"bogus\": 1, \"objs\": []}", ""), "unknown key \"bogus\""},
      {MOD("{\"objs\": [{\"type\": \"T\", \"e\": \"``1 +``\"}]}", ""),
       "equation ``1 +``"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
    json_object *out = NULL;
    char *err = NULL;
    int draws;
    int rc = expand_text(cases[i].scene, &out, &err, &draws);
    cr_expect_eq(rc, -EINVAL, "case %zu should fail", i);
    cr_expect_null(out);
    cr_expect(err && strstr(err, cases[i].want) != NULL,
              "case %zu: want \"%s\" in \"%s\"", i, cases[i].want,
              err ? err : "(null)");
    cr_expect(err && strstr(err, "objs[0] (ModuleObj of module") != NULL,
              "case %zu names the object: %s", i, err ? err : "");
    free(err);
  }
}
