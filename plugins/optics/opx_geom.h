/* opx: the optics plugin's internal modules. This one is the scene's
 * geometry as the agent's tools see it: every object of a loaded scene
 * with its name, family, outline, edges and their labels, and the point
 * queries the ray database needs (is a point inside a glass, which edges
 * pass through a point, at what angle a ray meets an edge).
 *
 * Orientation. Scenes are in Ray Optics Simulation's coordinates, where
 * y grows downward, and labels name directions on the picture: N is up
 * (-y), E is right (+x). ray_tracing_shapely is y-up, so the same
 * coordinates get N and S swapped there.
 *
 * Ownership: an opx_geom_t is built from a loaded scene and keeps
 * pointers to its objects (the scene must outlive it); it owns
 * everything else, freed by opx_geom_free(). */
#ifndef ATL_OPX_GEOM_H
#define ATL_OPX_GEOM_H

#include <json-c/json.h>

#include "op.h"
#include "outline.h"

/* What an object is for, as the tools group them. */
typedef enum {
  OPX_SOURCE,   /* SingleRay, PointSource, AngleSource, Beam */
  OPX_MIRROR,   /* the mirrors and the beam splitter */
  OPX_GLASS,    /* every BaseGlass, gradient-index ones included */
  OPX_LENS,     /* IdealLens */
  OPX_BLOCKER,  /* Blocker, CircleBlocker, Aperture */
  OPX_GRATING,  /* the diffraction gratings */
  OPX_DETECTOR, /* Detector */
  OPX_SURFACE,  /* the custom surfaces */
  OPX_OTHER     /* non-optical: drawings, labels, crop boxes */
} opx_family_t;

/* "source", "mirror", ... */
const char *opx_family_name(opx_family_t f);

typedef struct {
  const atl_op_obj *o; /* the scene's */
  const char *type;    /* the class's type name, e.g. "Glass" */
  int optical;         /* index in the scene's optical objects, or -1 */
  int doc_index;       /* index in the document's top-level objs */
  /* The agent's name for it (malloc'd; NULL when it has none), and the
   * name the tools show: the name, else "<Type> <doc_index>". A part of
   * a module is "<module's name>/<k>". */
  char *name;
  char *display_name;
  opx_family_t family;
  atl_op_outline outline;
  double ref_index; /* refIndex of a glass (Cauchy A); NaN otherwise */
  /* Closed outlines (glasses, circle blockers): the enclosed area and its
   * centroid, arcs exact. Others: area 0 and centroid the vertex average. */
  double area, perimeter; /* perimeter: total edge length (arcs exact) */
  atl_op_pt centroid;
  /* The average of the edges' ends (for a closed outline the average of
   * its edges' p1; an arc's middle is not a vertex): labels use it. */
  atl_op_pt vertex_centroid;
  /* lo x, lo y, hi x, hi y of the outline, arcs exact; an object with no
   * edge (a point source) has the empty box (+inf, +inf, -inf, -inf). */
  double box[4];
  int first_edge, nedges; /* into opx_geom_t.edges */
} opx_obj_t;

typedef struct {
  int obj;              /* index into opx_geom_t.objs */
  int index;            /* the edge's index within its object */
  const atl_op_edge *e; /* into the object's outline */
  /* "E", "NNW", ... for the edges of a region of two edges or more;
   * otherwise (a mirror, a circle) the edge's index, "0", "1", ... with
   * the long form "Edge 0" ("" past index 999). */
  char short_label[4];
  char long_label[48]; /* "North North West Edge" */
  atl_op_pt mid;       /* the point halfway along the edge itself */
  double length;       /* along the edge (arcs and curves exactly) */
  atl_op_pt normal;    /* unit outward normal at mid (closed), else left */
} opx_edge_t;

typedef struct opx_geom opx_geom_t;
struct opx_geom {
  opx_obj_t *objs;
  int nobjs;
  opx_edge_t *edges;
  int nedges;
  void *index; /* the module's spatial index; private */
};

/* Builds the geometry of scene s. doc_objs is the document's objs array
 * (each may carry "name"), or NULL for the scene's own document. 0, or
 * -ENOMEM. */
int opx_geom_build(const atl_op_scene *s, json_object *doc_objs,
                   opx_geom_t **out);
void opx_geom_free(opx_geom_t *g);

/* The object named name (its name, or its display name), or -1. */
int opx_geom_find(const opx_geom_t *g, const char *name);
/* The index of object o (the scene's pointer) in g->objs, or -1. */
int opx_geom_index_of(const opx_geom_t *g, const atl_op_obj *o);

/* Object obj's edge by its short label, long label (case-insensitive) or
 * its index as a decimal string: the index in g->edges, or -1. */
int opx_geom_edge_find(const opx_geom_t *g, int obj, const char *label);

/* Whether p is strictly inside object obj's region (closed outlines and
 * the half-plane; never for others). Points within tol of the boundary
 * are not inside. */
int opx_geom_contains(const opx_geom_t *g, int obj, atl_op_pt p, double tol);

/* The edges (indices into g->edges) that pass within tol of p, at most
 * max of them written to out in increasing order; returns how many there
 * are (or -ENOMEM). A half-plane's edge counts along its whole line. */
int opx_geom_edges_at(const opx_geom_t *g, atl_op_pt p, double tol, int *out,
                      int max);

/* The angle in degrees, 0 head-on to 90 grazing, between the direction
 * dir and edge ed's normal at the point of the edge nearest to at
 * (independent of the direction's sense). */
double opx_geom_angle_to_normal(const opx_geom_t *g, int ed, atl_op_pt at,
                                atl_op_pt dir);

/* The cardinal label of the direction (dx, dy) on the picture (y down)
 * in the set of n labels (4, 8, 12 or 16), as ray_tracing_shapely picks
 * them: short and long forms (static strings). */
void opx_cardinal(double dx, double dy, int n, const char **short_label,
                  const char **long_label);

#endif
