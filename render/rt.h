/* The path tracer's internal types, shared by its files and the unit
 * tests; not part of the library's API (render.h is). */
#ifndef ATL_RENDER_RT_H
#define ATL_RENDER_RT_H

#include "render.h"
#include "rng.h"
#include "vec.h"

typedef struct {
  v3 o, d; /* origin; direction, not necessarily unit */
} rt_ray;

typedef enum {
  RT_SPHERE,
  RT_QUAD,
  RT_DISC,
  RT_TRIANGLE,
  RT_CYLINDER, /* the open tube; caps are discs */
  RT_CONE,     /* the open side of a cone or frustum; caps are discs */
  RT_TORUS,    /* a ring or an arc of one; an arc's ends are discs */
  RT_PLANE     /* infinite: kept out of the BVH */
} rt_prim_kind;

/* One flattened primitive. The meaning of the fields depends on kind:
 *   sphere:   a = centre, r0 = radius
 *   quad:     a = corner, b = u, c = v, n = unit u x v, w = n' / |n'|^2
 *   disc:     a = centre, n = unit normal, r0 = radius
 *   triangle: a = v0, b = v1 - v0, c = v2 - v0, n = unit b x c
 *   cylinder: a = base centre, n = unit axis, h = height, r0 = radius
 *   cone:     a = base centre, n = unit axis, h = height, r0 = base
 *             radius, r1 = top radius
 *   plane:    a = point, n = unit normal
 *   torus:    a = centre, n = unit axis, b = unit reference direction
 *             (angle 0 of an arc), c = n x b (angle 90 degrees),
 *             r0 = major radius, r1 = minor (tube) radius, h = the
 *             arc's sweep in radians (2 pi: a whole ring), w.x = the
 *             arc's start in radians, in [0, 2 pi) */
typedef struct {
  v3 a, b, c, n, w;
  double r0, r1, h;
  /* Derived by atl__rt_prim_prepare(), so the hot intersection tests
   * do less work per ray:
   *   quad:   e1 = c x w, e2 = w x b (alpha = q.e1, beta = q.e2 for the
   *           hit point q relative to a), d = n.a
   *   disc, plane: d = n.a
   *   sphere, disc: r2 = r0^2
   *   quad along the axes (its normal along axis aa, its edges along
   *           the two others): aa in 0 .. 2, and its points' range
   *           [lo[i], hi[i]] in axis (aa + 1 + i) % 3; else aa = -1 */
  v3 e1, e2;
  double d, r2;
  int aa;
  double lo[2], hi[2];
  int kind;
  int material; /* index into scene->materials */
  int light;    /* index into scene->lights for an area light, else -1 */
  int shape;    /* index of the document's shape (or light) */
} rt_prim;

typedef struct {
  double t;
  v3 p;      /* the point */
  v3 n;      /* unit geometric normal, the outward/front side */
  int front; /* the ray arrived on the front side (dot(d, n) < 0) */
  int prim;
} rt_hit;

typedef enum {
  RT_LAMBERTIAN,
  RT_METAL,
  RT_DIELECTRIC,
  RT_EMISSIVE,
  RT_PLASTIC,
  RT_LIGHT /* the surface of an area light: emits on its front, absorbs */
} rt_mat_kind;

typedef struct {
  int kind;
  v3 albedo;   /* lambertian, metal, plastic */
  int checker; /* lambertian: a 3D checkerboard of albedo / albedo2 */
  v3 albedo2;
  double scale; /* checker cube edge */
  double fuzz;  /* metal; plastic: roughness */
  double ior;   /* dielectric; plastic's coat (1.5) */
  v3 tint;      /* dielectric */
  v3 emission;  /* emissive, light */
} rt_material;

typedef enum {
  RT_L_POINT,
  RT_L_SPOT,
  RT_L_QUAD,
  RT_L_DISC,
  RT_L_SPHERE,
  RT_L_SUN
} rt_light_kind;

typedef struct {
  int kind;
  v3 emission; /* radiance (area, sun disc) or intensity (point, spot) */
  v3 p;        /* point, spot, sphere, disc: centre; quad: corner */
  v3 u, v;     /* quad edges */
  v3 n;        /* quad, disc: unit normal; spot: unit axis; sun: unit
                  direction towards the sun */
  double r;    /* disc, sphere radius */
  double area; /* quad, disc */
  double cos_outer, cos_inner; /* spot cone; sun: cos_outer of the disc */
  int prim;                    /* area lights: their primitive, else -1 */
} rt_light;

typedef enum { RT_ENV_NONE, RT_ENV_UNIFORM, RT_ENV_GRADIENT } rt_env_kind;

/* A flattened BVH node: an inner node's left child follows it, `index`
 * is its right child; a leaf holds `count` primitives from `index` on in
 * scene->prim_order. */
typedef struct {
  double lo[3], hi[3];
  int index;
  short count; /* 0 for an inner node */
  short axis;
} rt_node;

/* A leaf's primitives (scene->prim_order[index .. index + count) of its
 * node) run as nquad quads, then nsphere spheres, then the rest. */
typedef struct {
  int nquad, nsphere;
} rt_leaf;

struct atl_render_scene_s {
  rt_prim *prims;
  int nprims;
  int *prim_order; /* BVH leaf order */
  rt_node *nodes;
  int nnodes;
  rt_leaf *leaves; /* by node; only the leaves' entries are used */
  int *planes;     /* the infinite planes, outside the BVH */
  int nplanes;
  rt_material *materials;
  int nmaterials;
  rt_light *lights;
  int nlights;
  int env;
  v3 env_a, env_b; /* uniform: a; gradient: a = top, b = bottom */
  /* camera */
  v3 eye, fwd, right, up; /* fwd, right, up: unit */
  double tan_half, aperture, focus;
  double scene_radius; /* for offsets */
  /* What the packets' vertices need of each primitive's surface, as
   * RT_SHADE_FIELDS rows of nprims + 1 doubles: column 0 for "no
   * primitive", column p + 1 for primitive p (atl__rt_shade_build()). */
  double *shade;
  atl_render_scene_info_t info;
};

/* shapes.c */
int atl__rt_prim_intersect(const rt_prim *p, const rt_ray *r, double tmin,
                           double tmax, rt_hit *h);
/* Fills the derived fields of a primitive (done by atl__rt_bvh_build()). */
void atl__rt_prim_prepare(rt_prim *p);
/* Fills *h for a hit at t found by atl__rt_prim_t() (intersect.h). */
void atl__rt_prim_finish(const rt_prim *p, const rt_ray *r, double t,
                         rt_hit *h);
void atl__rt_prim_bounds(const rt_prim *p, v3 *lo, v3 *hi);
/* Sets a torus's axis (unit), frame and arc. The reference direction
 * (angle 0 of an arc) is +X made perpendicular to the axis, or +Z when
 * the axis is along X, and angles grow counter-clockwise seen from the
 * tip of the axis, as the scene plugin's schema has it; so c = n x b.
 * "Along X" is within a millionth of a radian: there the rest of +X is
 * too short to give a direction the user could have meant. */
void atl__rt_torus_frame(rt_prim *p, v3 axis, double sweep_deg,
                         double start_deg);
/* The centre of the start (end = 0) or the end (1) of a torus arc, and
 * the unit normal of the disc that closes it, facing away from the
 * arc. */
void atl__rt_torus_end(const rt_prim *p, int end, v3 *centre, v3 *normal);

/* The rows of scene->shade. FIT is the packet vertex that can shade the
 * primitive's material (RT_FIT_*); NX .. NZ its normal when it is flat,
 * or a sphere's centre; INV_R a sphere's inverse radius, 0 when flat,
 * -1 for the other curved shapes, whose normal comes lane by lane; R ..
 * B the albedo (or a dielectric's tint); IOR the dielectric's index. */
enum {
  RT_SH_FIT,
  RT_SH_NX,
  RT_SH_NY,
  RT_SH_NZ,
  RT_SH_INV_R,
  RT_SH_R,
  RT_SH_G,
  RT_SH_B,
  RT_SH_IOR,
  RT_SHADE_FIELDS
};
enum { RT_FIT_NONE, RT_FIT_DIFFUSE, RT_FIT_MIRROR, RT_FIT_GLASS };

/* integrator.c: fills scene->shade from the prepared primitives and
 * their materials; returns -ENOMEM when out of memory. */
int atl__rt_shade_build(atl_render_scene_t *s);

/* bvh.c */
int atl__rt_bvh_build(atl_render_scene_t *s);
/* packet.c: one ray's nearest hit in (tmin, tmax), and whether it has
 * any; the renderer itself traces packets of four (packet.h). */
int atl__rt_intersect(const atl_render_scene_t *s, const rt_ray *r, double tmin,
                      double tmax, rt_hit *h);
int atl__rt_occluded(const atl_render_scene_t *s, const rt_ray *r, double tmin,
                     double tmax);
/* The n rays, in packets as the renderer traces them, for the tests
 * (packet.h's types depend on the compiler's target, these do not):
 * for each, the nearest hit's t and primitive (-1 for none, or where
 * active[i] is 0) in (0, tmax[i]), and whether the ray hits anything. */
void atl__rt_intersect_rays(const atl_render_scene_t *s, int n,
                            const rt_ray *rays, const double *tmax,
                            const int *active, double *t, int *prim,
                            int *occluded);

/* materials.c: a sampled scattering. */
typedef struct {
  v3 wi;      /* unit */
  v3 weight;  /* f * cos / pdf, or the delta lobe's weight */
  double pdf; /* solid angle; 0 for a delta lobe */
  int delta;
} rt_bsdf_sample;

/* The non-delta part of the material at the hit, for a unit wo (towards
 * the viewer) and unit wi: f (without the cosine) and the pdf with which
 * atl__rt_material_sample() would pick wi. Returns 0 for a purely specular
 * or non-scattering material. */
int atl__rt_material_eval(const rt_material *m, const rt_hit *h, v3 wo, v3 wi,
                          v3 *f, double *pdf);
int atl__rt_material_sample(const rt_material *m, const rt_hit *h, v3 wo,
                            rt_rng *rng, rt_bsdf_sample *out);
/* Whether the material has a non-delta lobe (so light sampling helps). */
int atl__rt_material_smooth(const rt_material *m);
/* The material's colour at p, for the denoiser's albedo guide: the
 * albedo (a checker's square at p), a dielectric's tint, an emitter's
 * colour scaled into [0, 1]. */
v3 atl__rt_material_albedo(const rt_material *m, v3 p);
double atl__rt_fresnel_dielectric(double cos_i, double eta);

/* lights.c */
typedef struct {
  v3 wi;       /* unit, from the shading point to the light */
  double dist; /* to the sampled point; INFINITY for the sun */
  v3 li;       /* radiance (or intensity / d^2 for a delta light) */
  double pdf;  /* solid angle, 0 for a delta light */
} rt_light_sample;

int atl__rt_light_sample_li(const rt_light *l, v3 p, rt_rng *rng,
                            rt_light_sample *out);
/* The solid-angle pdf of sampling direction wi from p that hits the
 * light at distance dist with the unit light normal ln. */
double atl__rt_light_pdf(const rt_light *l, v3 p, v3 wi, double dist, v3 ln);
v3 atl__rt_env_radiance(const atl_render_scene_t *s, v3 d);

#endif
