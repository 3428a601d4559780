/* Fuzz target: the optics simulator's equation compiler (optics/expr.h).
 * Equations come from scene files and from users and models editing
 * them, so anything must either compile or be refused with a message,
 * and whatever compiles must evaluate and differentiate without a crash,
 * a hang or undefined behaviour.
 *
 * The input is the equation itself, over the variables of every object
 * kind at once. An accepted equation is evaluated at a few points, and
 * its derivative by each of x and t is compiled and evaluated too; the
 * derivative of an expression that never reads the variable must be 0. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(why)                                                              \
  do {                                                                         \
    fprintf(stderr, "fuzz_optics_expr: %s (line %d)\n", why, __LINE__);        \
    abort();                                                                   \
  } while (0)

static const char *const VARS[] = {"x",       "y",       "lambda", "t",
                                   "theta_0", "P_0",     "p",      "n_0",
                                   "n_1",     "theta_1", "P_1"};
#define NV (sizeof(VARS) / sizeof(*VARS))

static const double POINTS[][NV] = {
    {0.3, -0.7, 540, 0.25, 0.4, 0.8, 0, 1, 1.5, 0.1, 0.2},
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {-1e6, 1e-300, 380, 7, -3.14, 1e308, 1, -0.0, 2, -1, 5},
};

static void check_refusal(int rc, const void *out, char *err) {
  if (rc != -EINVAL && rc != -ENOMEM)
    FAIL("an unexpected return code");
  if (out != NULL)
    FAIL("a refused equation was returned");
  if (err == NULL || err[0] == '\0')
    FAIL("a refusal without a message");
  free(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > ATL_OP_EXPR_MAX_LEN + 16)
    return 0;
  char *s = malloc(size + 1);
  if (s == NULL)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  atl_op_expr_t *e = NULL;
  char *err = NULL;
  int rc = atl__op_expr_compile(s, VARS, NV, &e, &err);
  free(s);
  if (rc != 0) {
    check_refusal(rc, e, err);
    return 0;
  }
  if (e == NULL || err != NULL)
    FAIL("an accepted equation without a result, or with a message");
  for (size_t p = 0; p < sizeof(POINTS) / sizeof(*POINTS); p++)
    (void)atl__op_expr_eval(e, POINTS[p]);
  const size_t by[] = {0, 3};
  for (size_t k = 0; k < 2; k++) {
    atl_op_expr_t *d = NULL;
    rc = atl__op_expr_derivative(e, by[k], &d, &err);
    if (rc != 0) {
      check_refusal(rc, d, err);
      continue;
    }
    for (size_t p = 0; p < sizeof(POINTS) / sizeof(*POINTS); p++) {
      double v = atl__op_expr_eval(d, POINTS[p]);
      if (!atl__op_expr_uses_var(e, by[k]) && v != 0)
        FAIL("a constant's derivative is not 0");
    }
    atl__op_expr_free(d);
  }
  atl__op_expr_free(e);
  return 0;
}
