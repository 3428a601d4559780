/* SVG path data: the parser, the canonical form, the arc conversion and
 * the flattener of the drawing plugin.
 *
 * The parser takes the whole path grammar of SVG 2 (§9.3.9): the commands
 * M L H V C S Q T A Z in absolute and relative forms, implicit repeats (a
 * moveto's extra pairs are linetos), numbers in every form the grammar
 * allows ("-.5.5" is two numbers, "10-20" two, "1e2" one), arc flags
 * without separators, several subpaths, and a closepath followed by a
 * relative move. It is strict where browsers are lenient: SVG 2 draws a
 * path "up to the error", which would silently drop the rest of a model's
 * drawing, so the first error fails the whole path and says where it is
 * and what was expected there.
 *
 * A parsed path is canonical: absolute coordinates, H and V as L, S and T
 * with their reflected control points as C and Q, every command explicit.
 * Arcs stay arcs (the page's SVG draws them exactly); dp_arc_to_center()
 * and the flattener use the endpoint-to-centre conversion of SVG 2's
 * implementation notes (B.2.4), with its out-of-range rules (B.2.5): zero
 * radii draw a line, negative radii count as positive, radii too small
 * for the endpoints are scaled up.
 *
 * Nothing here allocates outside the dp_path_t it fills, and nothing reads
 * past the length given, so the parser runs on untrusted input as is.
 */
#ifndef ATL_DRAWING_DPATH_H
#define ATL_DRAWING_DPATH_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  DP_MOVE = 0,  /* x y */
  DP_LINE = 1,  /* x y */
  DP_QUAD = 2,  /* x1 y1 x y */
  DP_CUBIC = 3, /* x1 y1 x2 y2 x y */
  DP_ARC = 4,   /* rx ry x_axis_rotation_deg large_arc sweep x y */
  DP_CLOSE = 5  /* (none) */
} dp_op_t;

/* The numbers each op takes in dp_path_t.v. */
extern const uint8_t dp_op_arity[6];

/* A parsed path. ops[i] is a dp_op_t; its numbers follow those of the ops
 * before it in v. The path owns both arrays; dp_path_free() frees them. A
 * zeroed struct is an empty path. */
typedef struct {
  uint8_t *ops;
  double *v;
  size_t n_ops, cap_ops;
  size_t n_v, cap_v;
} dp_path_t;

/* Why a parse failed. offset is the byte offset of the offending
 * character (or the length, at the end of the data); msg says what was
 * found and what was expected there, e.g. "unexpected 'X' at offset 17;
 * expected a number after 'L'". */
typedef struct {
  size_t offset;
  char msg[256];
} dp_error_t;

/* The largest path the parser takes, in bytes of path data and in
 * commands: a longer one is an error, not an allocation. */
#define DP_MAX_BYTES (4u << 20)
#define DP_MAX_OPS (1u << 20)

/* Parses len bytes of d (no NUL needed) into out, which must be empty or
 * zeroed. Returns 0, or -1 with err filled (out then holds nothing useful
 * but must still be freed). Empty data (or whitespace) is an error: a
 * stroke with nothing in it is a mistake worth reporting. Every number is
 * finite; a number that overflows is an error at its offset. */
int dp_parse(const char *d, size_t len, dp_path_t *out, dp_error_t *err);

void dp_path_free(dp_path_t *p);
/* Empties p, keeping its arrays for reuse. */
void dp_path_clear(dp_path_t *p);

/* Appends one op and its numbers (dp_op_arity[op] of them). 0, or -1 when
 * out of memory or past DP_MAX_OPS. */
int dp_path_add(dp_path_t *p, dp_op_t op, const double *v);

/* The canonical text of p: absolute commands, numbers rounded to 1/1000
 * (coordinates are canvas pixels) with no trailing zeros, one space
 * between numbers. Returns a malloc()ed string (free() it) or NULL when
 * out of memory. */
char *dp_format(const dp_path_t *p);

/* The centre parametrisation of the arc from (x0, y0) given by the seven
 * numbers of a DP_ARC op (a). Returns 0 with the centre, the corrected
 * radii, the rotation in radians, the start angle and the sweep (signed,
 * radians), or 1 when the arc is a straight line (a zero radius, or
 * coincident endpoints, which draw nothing). */
typedef struct {
  double cx, cy, rx, ry, phi, theta1, dtheta;
} dp_arc_t;
int dp_arc_to_center(double x0, double y0, const double a[7], dp_arc_t *out);
/* The point at angle t of the ellipse. */
void dp_arc_point(const dp_arc_t *a, double t, double *x, double *y);

/* Visits the path as cubic curves and lines (arcs become up to one cubic
 * per quarter turn, quadratics exact cubics): what cairo and the brushes
 * draw. The callbacks get absolute coordinates; close_path comes after
 * the line back to the subpath's start has been given as a line. */
typedef struct {
  void (*move_to)(void *u, double x, double y);
  void (*line_to)(void *u, double x, double y);
  void (*curve_to)(void *u, double x1, double y1, double x2, double y2,
                   double x, double y);
  void (*close_path)(void *u);
} dp_sink_t;
void dp_walk(const dp_path_t *p, const dp_sink_t *sink, void *u);

/* The box of every point the path passes through (curves by their
 * extrema, not their control points). Returns 0, or -1 for a path with no
 * points. */
typedef struct {
  double x0, y0, x1, y1;
} dp_box_t;
int dp_bounds(const dp_path_t *p, dp_box_t *out);

/* Flattens p into polylines within tol pixels of the curves, calling
 * point(u, x, y, starts) for each vertex (starts = 1 at each subpath's
 * first). Returns the number of points given. */
size_t dp_flatten(const dp_path_t *p, double tol,
                  void (*point)(void *u, double x, double y, int starts),
                  void *u);

/* The path's length along its curves, within tol. */
double dp_length(const dp_path_t *p, double tol);

#endif /* ATL_DRAWING_DPATH_H */
