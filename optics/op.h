/* The optics simulator's internal types: rays, scene objects and their
 * classes, the scene and the simulation. Compatible with Ray Optics
 * Simulation (the JS app, ricktu288/ray-optics, v5.4.0): its scene format
 * (version 5) and the semantics of its ray loop, object by object, so that
 * its scene tests pass here (tests/data/ray-optics-scenes).
 *
 * Ownership: an atl_op_scene_t owns its objects, their fields and the
 * simulation's rays and segments; everything is freed by
 * atl__op_scene_free(). Objects never keep pointers into the ray array,
 * which grows while rays are processed. */
#ifndef ATL_OPTICS_OP_H
#define ATL_OPTICS_OP_H

#include <json-c/json.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "arc4.h"
#include "fail.h"

typedef struct {
  double x, y;
} atl_op_pt;

/* How a segment came to be, for its lineage. */
typedef enum {
  ATL_OP_SOURCE,  /* emitted by a light source */
  ATL_OP_REFLECT, /* reflected (mirrors, Fresnel reflection, gratings) */
  ATL_OP_REFRACT, /* refracted or transmitted (glass, ideal lens) */
  ATL_OP_TIR,     /* totally internally reflected */
  ATL_OP_PASS     /* passed through a detector unchanged */
} atl_op_kind;

typedef struct atl_op_obj atl_op_obj;
/* An object's outline (outline.h). */
typedef struct atl_op_outline atl_op_outline;

/* A ray: p1 its start, p2 another point along it (not necessarily at unit
 * distance). brightness_s and brightness_p are the powers of the two
 * polarisations, which Ray Optics Simulation treats as incoherent. */
typedef struct {
  atl_op_pt p1, p2;
  double bs, bp;
  double wavelength; /* nm; set only when the scene simulates colours */
  int depth;         /* interactions so far (scene maxRayDepth) */
  unsigned gap : 1, is_new : 1;
  /* The grazing criteria (ATL_OP_GRAZING_*) the refraction that made
   * this ray met; set by the glass, cleared before each interaction. */
  unsigned grazing : 3;
  /* The gradient-index medium the ray is in (upstream's bodyMergingObj):
   * 0 while unset, otherwise a handle into the simulation's table of
   * merged bodies (grin.h), which the GRIN glasses own. A plain handle,
   * so that rays stay plain values that the loop may copy. */
  int body;
  /* Lineage: the segment the ray continues (-1 for a source ray), how it
   * was made, and the light source it comes from (index into the
   * scene's optical objects). */
  int64_t parent;
  atl_op_kind kind;
  int source;
} atl_op_ray;

/* One processed ray: a segment from p1 to p2 (the hit point, or p1 plus
 * the ray's direction when nothing was hit, marked by hit_obj == -1). */
typedef struct {
  atl_op_pt p1, p2;
  double bs, bp, wavelength;
  int64_t parent;
  int hit_obj; /* optical object index, -1 when the ray left the scene */
  int source;
  atl_op_kind kind;
  int depth;
  int tir_count; /* total internal reflections along the lineage */
  unsigned gap : 1;
  unsigned caused_tir : 1; /* its end point totally reflected the ray */
  /* The grazing criteria the refraction that made this segment met
   * (is_grazing_result), and those its end point's refraction met
   * (caused_grazing): the Python project's flags, kept for the tools. */
  unsigned grazing : 3, caused_grazing : 3;
} atl_op_segment;

/* The grazing criteria of a refraction, as ray_tracing_shapely flags
 * them: an incidence angle of 85 degrees or more, p transmitted at least
 * 10 times as strongly as s, or less than 10 % of the power transmitted. */
#define ATL_OP_GRAZING_ANGLE 1u
#define ATL_OP_GRAZING_POLAR 2u
#define ATL_OP_GRAZING_TRANSM 4u
#define ATL_OP_GRAZING_ANGLE_DEG 85.0
#define ATL_OP_GRAZING_POLAR_RATIO 10.0
#define ATL_OP_GRAZING_TRANSM_MIN 0.1

typedef struct atl_op_scene atl_op_scene;
typedef struct atl_op_sim atl_op_sim;

/* What onRayIncident returns: the ray was absorbed, it met undefined
 * behaviour (e.g. a glass corner), and the brightness truncated. New
 * rays go through atl__op_emit(). A ray neither absorbed nor otherwise
 * changed stays in place and is processed again, as upstream does. */
typedef struct {
  unsigned absorbed : 1, undefined : 1;
  double truncation;
} atl_op_result;

/* The field types of an object's JSON form. */
typedef enum {
  ATL_OP_F_NUM,   /* double */
  ATL_OP_F_BOOL,  /* int */
  ATL_OP_F_POINT, /* atl_op_pt; a null default makes the field required */
  ATL_OP_F_STR,   /* char *, malloc'd, NULL for a null default */
  ATL_OP_F_JSON   /* json_object *, a reference the object puts */
} atl_op_ftype;

typedef struct {
  const char *name;
  atl_op_ftype type;
  const char *def; /* the default as JSON text, as upstream's
                      serializableDefaults has it */
  size_t offset;   /* into the object's struct */
} atl_op_field;

#define ATL_OP_OPTICAL 1u
#define ATL_OP_GLASS 2u /* a BaseGlass: refracts, merges surfaces */
#define ATL_OP_MERGES_WITH_GLASS 4u
#define ATL_OP_GRIN 8u /* a BaseGrinGlass (grin.h): rays step through it */

/* A class of scene objects (an upstream sceneObjs type). Each hook may be
 * NULL where upstream's default does nothing. */
typedef struct {
  const char *type;
  unsigned flags;
  size_t size; /* of the object's struct, which starts with atl_op_obj */
  const atl_op_field *fields;
  /* After the fields are read: derived state, and checks that give
   * *err (malloc'd) a message naming the field. */
  int (*init)(atl_op_obj *o, atl_op_scene *s, char **err);
  /* onSimulationStart: emit rays with atl__op_emit(); reset readings. */
  void (*start)(atl_op_obj *o, atl_op_sim *sim);
  /* checkRayIntersects: 1 and the nearest hit in *hit, or 0. */
  int (*intersect)(atl_op_obj *o, atl_op_sim *sim, const atl_op_ray *r,
                   atl_op_pt *hit);
  /* onRayIncident: r may be changed in place; merging lists the glasses
   * whose surfaces coincide with this object's at the hit. */
  atl_op_result (*incident)(atl_op_obj *o, atl_op_sim *sim, atl_op_ray *r,
                            long ray_index, atl_op_pt hit,
                            atl_op_obj *const *merging, int nmerging);
  /* Glasses: getIncidentType (1 inside to outside, -1 outside to
   * inside, 0 on a self-merged edge, NaN undefined) and the refractive
   * index at a point for the ray's wavelength. */
  double (*incident_type)(atl_op_obj *o, atl_op_sim *sim, const atl_op_ray *r);
  double (*ref_index)(atl_op_obj *o, atl_op_sim *sim, atl_op_pt p,
                      const atl_op_ray *r);
  /* Glasses: onRayEnter and onRayExit, called by whichever glass handles
   * a merged surface for every glass of it that the ray enters or leaves
   * (NULL for ordinary glasses, which need nothing; the gradient-index
   * glasses update the ray's body). */
  void (*enter)(atl_op_obj *o, atl_op_sim *sim, atl_op_ray *r);
  void (*exit)(atl_op_obj *o, atl_op_sim *sim, atl_op_ray *r);
  void (*destroy)(atl_op_obj *o);
  /* The lines, arcs and curves of the object (outline.h): fills out
   * (zeroed by the caller); 0 or -ENOMEM. NULL: no edges. */
  int (*outline)(const atl_op_obj *o, atl_op_outline *out);
} atl_op_class;

struct atl_op_obj {
  const atl_op_class *cls;
  int index;     /* in the scene's optical objects, -1 if not optical */
  int doc_index; /* in the document's top-level objs */
  char *error;   /* an object's own error (e.g. invalid lens), or NULL */
  char *warning;
  /* A box around every point intersect can return (lo x, lo y, hi x,
   * hi y), when has_box: the ray loop skips the object for a ray that
   * misses the box. A class sets it in init where its test is dear. */
  int has_box;
  double box[4];
};

/* Grows o's box to hold the disc of radius r around p (r = 0: the point). */
void atl__op_box_add(atl_op_obj *o, atl_op_pt p, double r);

/* A ray as the box test wants it: its origin and reciprocal direction,
 * computed once for all the boxes it is tested against. */
typedef struct {
  double o[2], inv[2];
} atl_op_boxray;

static inline atl_op_boxray atl__op_boxray(const atl_op_ray *r) {
  atl_op_boxray b = {{r->p1.x, r->p1.y},
                     {1 / (r->p2.x - r->p1.x), 1 / (r->p2.y - r->p1.y)}};
  return b;
}

/* Whether the half-line meets the box (lo x, lo y, hi x, hi y), already
 * grown by a pad that covers the roundings of the hit tests it guards, so
 * that it only ever skips what the ray cannot reach. A direction along an
 * axis gives an infinite reciprocal and slab ends of +-inf, or NaN for an
 * origin on the slab's edge, which the comparisons treat as "meets". */
static inline int atl__op_ray_meets_box(const atl_op_boxray *b,
                                        const double box[4]) {
  double t0 = 0, t1 = INFINITY;
  for (int k = 0; k < 2; k++) {
    double a = (box[k] - b->o[k]) * b->inv[k];
    double c = (box[k + 2] - b->o[k]) * b->inv[k];
    double lo = a < c ? a : c, hi = a < c ? c : a;
    t0 = lo > t0 ? lo : t0;
    t1 = hi < t1 ? hi : t1;
  }
  return !(t0 > t1);
}

/* Scene settings, as upstream's Scene.serializableDefaults. */
struct atl_op_scene {
  char *name;
  char *mode; /* rays, extended, images, observer */
  double ray_mode_density, image_mode_density, length_scale;
  int simulate_colors;
  char *color_mode;
  double max_ray_depth; /* INFINITY by default */
  int symbolic_body_merging;
  char *random_seed; /* NULL: seeded from the clock */
  atl_op_arc4_t rng;
  json_object *doc; /* the document as loaded (a reference) */
  /* Every object, top-level ones and the expansions of modules; the
   * optical ones in upstream's order (modules expanded in place). */
  atl_op_obj **objs;
  int nobjs;
  atl_op_obj **optical;
  int noptical;
};

struct atl_op_sim {
  atl_op_scene *scene;
  atl_op_ray *rays; /* upstream's pendingRays; dead rays have alive 0 */
  unsigned char *alive;
  long nrays, cap;
  /* Rays emitted during the current incident call, appended after it as
   * upstream pushes newRays. */
  atl_op_ray *staged;
  long nstaged, staged_cap;
  double (*boxes)[4];      /* the optical objects' boxes, grown by a pad */
  unsigned char *testable; /* per optical object: 0 never, 1 by box, 2 */
  int *cand;               /* scratch: the objects a ray may meet */
  atl_op_segment *segs;    /* NULL when not recording */
  long nsegs, segs_cap;
  int record;
  long processed; /* processedRayCount */
  long ray_limit; /* rayCountLimit; LONG_MAX for none */
  double total_truncation, total_undefined;
  int undefined_objs[2], nundefined_objs;
  double brightness_scale; /* 0 undetermined, -1 inconsistent */
  long emitted;
  long kinds[ATL_OP_PASS + 1]; /* processed segments by how they were made */
  int stopped;                 /* the ray limit was reached */
  /* The merged gradient-index bodies rays carry (grin.c owns them;
   * NULL until a GRIN glass needs one). */
  struct atl_op_bodies *bodies;
  char *error, *warning;
};

/* Constants of upstream's Simulator. */
#define ATL_OP_MIN_SEG 1e-6
#define ATL_OP_MIN_SEG_SQ (ATL_OP_MIN_SEG * ATL_OP_MIN_SEG)
#define ATL_OP_UNDEFINED_THRESHOLD 0.001
#define ATL_OP_GREEN 540.0

/* scene.c */
/* Loads a version-5 scene document. On error returns -EINVAL (or
 * -ENOMEM) and *err (malloc'd, caller frees) says which object and field
 * are wrong and what is expected. The scene keeps a reference to doc. */
int atl__op_scene_load(json_object *doc, atl_op_scene **out, char **err);
void atl__op_scene_free(atl_op_scene *s);
/* scene_write.c: the scene as Ray Optics Simulation's Scene.toJSON would
 * write it (fields at their defaults left out, the app's key order), a
 * new document the caller puts. Loading it gives the same simulation. */
json_object *atl__op_scene_write(const atl_op_scene *s);
/* The mode-dependent ray density (upstream's scene.rayDensity). */
double atl__op_ray_density(const atl_op_scene *s);
/* The class of a type name, or NULL. */
const atl_op_class *atl__op_class_find(const char *type);

/* sim.c */
/* Runs the simulation of s to its end (or ray_limit processed rays;
 * LONG_MAX for none), recording segments if record is set. The
 * simulation is freed by atl__op_sim_free(); its scene must outlive it. */
int atl__op_sim_run(atl_op_scene *s, long ray_limit, int record,
                    atl_op_sim **out);
void atl__op_sim_free(atl_op_sim *sim);
/* Appends a new ray (from a source's start or an incident call).
 * Returns -1 once the simulation cannot take more (out of memory, or the
 * sources' rays past ATL_OP_MAX_SOURCE_RAYS, which sets sim->error):
 * the caller stops emitting. */
int atl__op_emit(atl_op_sim *sim, const atl_op_ray *r);

/* The most rays all light sources together may emit: a scene that asks
 * for more (a beam a million units wide at a high ray density) is
 * refused with a message rather than left to exhaust the memory. */
#define ATL_OP_MAX_SOURCE_RAYS 5000000L
/* A ray from p1 through p2 with the given powers, inheriting lineage
 * and wavelength from parent (NULL for a source ray). */
atl_op_ray atl__op_ray_make(atl_op_pt p1, atl_op_pt p2, double bs, double bp,
                            const atl_op_ray *parent, atl_op_kind kind);
/* Adds to the simulation's brightness scale as upstream's
 * onSimulationStart returns do (0 is ignored, a mismatch gives -1). */
void atl__op_brightness_scale(atl_op_sim *sim, double scale);
/* Upstream's declareUndefinedBehavior. */
void atl__op_undefined(atl_op_sim *sim, const atl_op_ray *r, int obj_a,
                       int obj_b);

/* grin.c: frees the simulation's table of merged bodies. */
void atl__op_bodies_free(struct atl_op_bodies *b);

/* The classes, by family (objs_*.c). */
extern const atl_op_class atl__op_single_ray, atl__op_point_source,
    atl__op_angle_source, atl__op_beam, atl__op_blocker, atl__op_mirror,
    atl__op_detector;
extern const atl_op_class atl__op_arc_mirror, atl__op_parabolic_mirror,
    atl__op_ideal_mirror, atl__op_beam_splitter, atl__op_circle_blocker,
    atl__op_aperture, atl__op_diffraction_grating, atl__op_concave_grating;

#endif
