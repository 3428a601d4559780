/* Fuzz target: the mathjs-subset expressions of module templates
 * (optics/mathexpr.h). The input is compiled and evaluated twice in a
 * scope with a few variables and a deterministic `random`, then written as
 * an equation template's LaTeX with a function definition to inline.
 * Besides crashes, leaks and hangs (the evaluator's work limit must stop
 * every expression), it checks that an evaluation that succeeds gives the
 * same answer again when it draws no random number. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mathexpr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static double rng(void *user) {
  unsigned *n = user;
  return (double)((*n)++ % 7) / 7;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *src = (const char *)data;
  atl_op_mexpr_t *e = NULL;
  char *err = NULL;
  if (atl__op_mexpr_compile(src, size, &e, &err) < 0) {
    if (err == NULL)
      abort(); /* every failure explains itself */
    free(err);
    return 0;
  }
  atl_op_scope_t *s = atl__op_scope_new();
  unsigned draws = 0;
  atl__op_scope_set_num(s, "x", 3);
  atl__op_scope_set_num(s, "x_1", -2.5);
  atl__op_scope_set_bool(s, "flag", true);
  atl__op_scope_set_random(s, "random", rng, &draws);
  atl_op_value_t v1, v2;
  int r1 = atl__op_mexpr_eval(e, s, &v1, &err);
  free(err);
  err = NULL;
  unsigned before = draws;
  /* A copy evaluates the same way as long as nothing was assigned. */
  atl_op_scope_t *c = atl__op_scope_copy(s);
  int r2 = atl__op_mexpr_eval(e, c, &v2, &err);
  free(err);
  err = NULL;
  if (r1 == 0 && r2 == 0 && draws == before && before == 0 &&
      v1.kind == ATL_OP_VAL_NUM && v2.kind == ATL_OP_VAL_NUM &&
      v1.num == v1.num && v1.num != v2.num && !strchr(src, '='))
    abort();
  atl__op_scope_free(c);
  atl_op_texdefs_t *d = atl__op_texdefs_new();
  if (atl__op_texdefs_add(d, "f(a, b) = a^2 + b*x_1", &err) != 1)
    abort();
  char *tex = NULL;
  if (atl__op_mexpr_to_tex(src, size, s, d, &tex, &err) == 0)
    free(tex);
  else
    free(err);
  atl__op_texdefs_free(d);
  atl__op_scope_free(s);
  atl__op_mexpr_free(e);
  return 0;
}
