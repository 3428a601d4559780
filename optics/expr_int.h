/* The equation compiler's internals (expr.h), shared by its three files:
 * expr_parse.c reads the text into a syntax tree, expr_deriv.c
 * differentiates the tree, and expr.c turns a tree into the postfix code
 * that atl__op_expr_eval runs. */
#ifndef ATL_OPTICS_EXPR_INT_H
#define ATL_OPTICS_EXPR_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "expr.h"
#include "fail.h"

/* Node types. SUM and PROD have any number of children, evaluated from
 * the first as JavaScript's reduce does (0 + a + b + ..., 1 * a * b ...);
 * a child of a SUM that is a NEG is subtracted, and a child of a PROD that
 * is an INV is multiplied as its reciprocal, which is how evaluatex
 * computes a - b and a / b. */
enum {
  ATL_OP_N_CONST, /* v */
  ATL_OP_N_VAR,   /* k is the variable's index */
  ATL_OP_N_SUM,
  ATL_OP_N_PROD,
  ATL_OP_N_NEG,
  ATL_OP_N_INV,
  ATL_OP_N_POW,  /* base, exponent */
  ATL_OP_N_CALL, /* fn, arguments */
};

/* The functions an equation can call. */
enum {
  ATL_OP_F_ABS,
  ATL_OP_F_ACOS,
  ATL_OP_F_ACOSH,
  ATL_OP_F_ASIN,
  ATL_OP_F_ASINH,
  ATL_OP_F_ATAN,
  ATL_OP_F_ATANH,
  ATL_OP_F_ATAN2,
  ATL_OP_F_CBRT,
  ATL_OP_F_CEIL,
  ATL_OP_F_CLZ32,
  ATL_OP_F_COS,
  ATL_OP_F_COSH,
  ATL_OP_F_EXP,
  ATL_OP_F_EXPM1,
  ATL_OP_F_FLOOR,
  ATL_OP_F_FROUND,
  ATL_OP_F_HYPOT,
  ATL_OP_F_IMUL,
  ATL_OP_F_LOG,
  ATL_OP_F_LOG1P,
  ATL_OP_F_LOG10,
  ATL_OP_F_LOG2,
  ATL_OP_F_MAX,
  ATL_OP_F_MIN,
  ATL_OP_F_POW,
  ATL_OP_F_ROUND,
  ATL_OP_F_SIGN,
  ATL_OP_F_SIN,
  ATL_OP_F_SINH,
  ATL_OP_F_SQRT,
  ATL_OP_F_TAN,
  ATL_OP_F_TANH,
  ATL_OP_F_TRUNC,
  ATL_OP_F_CDOT,
  ATL_OP_F_TIMES,
  ATL_OP_F_FACT,
  ATL_OP_F_FRAC,
  ATL_OP_F_LOGN,
  ATL_OP_F_ROOTN,
  ATL_OP_F_SEC,
  ATL_OP_F_CSC,
  ATL_OP_F_COT,
  ATL_OP_F_SECH,
  ATL_OP_F_COUNT
};

typedef struct {
  const char *name;
  int params; /* the JavaScript function's parameters; -1: variadic */
} atl_op_fn_info_t;

extern const atl_op_fn_info_t atl__op_fns[ATL_OP_F_COUNT];

typedef struct {
  uint8_t type;
  uint8_t fn;
  uint8_t hasvar; /* whether the subtree reads a variable */
  uint16_t depth; /* the subtree's height, 1 for a leaf */
  uint32_t nk;    /* number of children */
  uint32_t k;     /* first child in kids[], or the variable's index */
  double v;
} atl_op_node_t;

/* A syntax tree (or a DAG: the derivative shares subtrees) in two growing
 * arrays. The tree owns both; atl__op_ast_free releases them. */
typedef struct {
  atl_op_node_t *nodes;
  size_t n, cap;
  uint32_t *kids;
  size_t nkids, kcap;
  size_t limit; /* the most nodes plus kids allowed */
  int why;      /* why the last atl__op_ast_add failed */
} atl_op_ast_t;

enum { ATL_OP_AST_NOMEM = 1, ATL_OP_AST_TOO_BIG, ATL_OP_AST_TOO_DEEP };

/* The deepest tree allowed, which bounds the recursion of differentiation
 * and code generation. */
#define ATL_OP_AST_MAX_DEPTH 1500

#define ATL_OP_NONE UINT32_MAX

/* Appends a node with nk children taken from kids (copied) and returns
 * its index, or ATL_OP_NONE when memory or the size limit runs out. */
uint32_t atl__op_ast_add(atl_op_ast_t *a, int type, int fn, double v,
                         uint32_t k, const uint32_t *kids, uint32_t nk);
void atl__op_ast_free(atl_op_ast_t *a);

/* Reads latex into *a (initialised by the caller with its limit) and
 * stores the root's index in *root. Returns 0, -EINVAL with *err, or
 * -ENOMEM. */
int atl__op_parse(const char *latex, const char *const *vars, size_t nvars,
                  atl_op_ast_t *a, uint32_t *root, char **err);

/* Builds the derivative of the tree rooted at root with respect to var
 * into *d (empty, initialised by the caller) and stores its root. */
int atl__op_diff(const atl_op_ast_t *a, uint32_t root, size_t var,
                 atl_op_ast_t *d, uint32_t *droot, char **err);

/* Compiles the tree rooted at root into a new expression, which takes
 * over *a (left empty) on success and on failure alike. */
int atl__op_build(atl_op_ast_t *a, uint32_t root, size_t nvars,
                  atl_op_expr_t **out, char **err);

/* One function applied to n arguments (missing ones are NaN). */
double atl__op_apply(int fn, const double *args, size_t n);

#endif
