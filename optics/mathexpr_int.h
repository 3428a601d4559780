/* Internals shared by the expression parser (mathexpr.c), its evaluator
 * (mathexpr_eval.c) and its LaTeX writer (mathexpr_tex.c). Not for other
 * modules: they use mathexpr.h. */
#ifndef ATL_OPTICS_MATHEXPR_INT_H
#define ATL_OPTICS_MATHEXPR_INT_H

#include <stdarg.h>
#include <stdint.h>

#include "fail.h"
#include "mathexpr.h"

/* Node kinds, after mathjs's node classes. */
typedef enum {
  XN_NUM,    /* ConstantNode holding a number */
  XN_BOOL,   /* ConstantNode holding true/false */
  XN_SYM,    /* SymbolNode */
  XN_PAREN,  /* ParenthesisNode: kept, because toTex keeps it */
  XN_OP,     /* OperatorNode, one or two args */
  XN_REL,    /* a chain of comparisons (RelationalNode when longer) */
  XN_COND,   /* ConditionalNode: args cond, then, else */
  XN_CALL,   /* FunctionNode: name(args) */
  XN_ASSIGN, /* AssignmentNode: name = args[0] */
  XN_FNDEF,  /* FunctionAssignmentNode: name(params) = args[0] */
} atl_op_xkind_t;

/* Operators (OperatorNode's fn). */
typedef enum {
  XO_ADD,
  XO_SUB,
  XO_MUL,
  XO_DIV,
  XO_MOD,
  XO_POW,
  XO_NEG,
  XO_POS,
  XO_NOT,
  XO_FACT,
  XO_AND,
  XO_OR,
  XO_XOR,
  XO_EQ,
  XO_NE,
  XO_LT,
  XO_GT,
  XO_LE,
  XO_GE,
} atl_op_xop_t;

typedef struct atl_op_xnode atl_op_xnode_t;
struct atl_op_xnode {
  uint8_t kind;     /* atl_op_xkind_t */
  uint8_t op;       /* XN_OP: atl_op_xop_t */
  uint8_t implicit; /* XN_OP multiply written without '*' */
  uint16_t height;  /* 1 + the tallest child's height */
  uint32_t nargs;
  double num;            /* XN_NUM, XN_BOOL */
  char *name;            /* XN_SYM, XN_CALL, XN_ASSIGN, XN_FNDEF */
  atl_op_xnode_t **args; /* children */
  uint8_t *rels;         /* XN_REL: nargs-1 comparison operators */
  char **params;         /* XN_FNDEF: parameter names */
  uint32_t nparams;
};

struct atl_op_mexpr {
  int refs;
  atl_op_xnode_t *root; /* NULL for an empty expression */
};

/* The tallest tree the parser builds: recursive walks over a tree stay
 * well within the stack. */
#define ATL_OP_XNODE_MAX_HEIGHT 256

/* Parses src into a tree (NULL for an empty one). Shared by compile and the
 * LaTeX writer. */
int atl__op_xparse(const char *src, size_t len, atl_op_xnode_t **root,
                   char **err);
void atl__op_xnode_free(atl_op_xnode_t *n);
/* A deep copy, or NULL when out of memory. */
atl_op_xnode_t *atl__op_xnode_clone(const atl_op_xnode_t *n);
/* A node with nargs zeroed child slots, or NULL. */
atl_op_xnode_t *atl__op_xnode_new(atl_op_xkind_t kind, uint32_t nargs);

/* mathjs's nearlyEqual with its default tolerances. */
int atl__op_nearly_equal(double a, double b);

#endif
