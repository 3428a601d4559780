/* The ray loop: upstream's Simulator.processRays without the drawing.
 * Rays live in one growing array, as upstream's pendingRays: a ray that
 * an object changes in place (a mirror's reflection) keeps its slot and
 * is processed again on the next pass over the array, new rays are
 * appended, and a pass ends at the array's end. The order matters beyond
 * taste: an object's onRayIncident receives the ray's index, which
 * glasses use to thin out weak partial reflections, so the same order
 * gives the same picture and the same detector readings. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geom.h"
#include "op.h"

static int grow(void **p, long *cap, long need, size_t size) {
  if (need <= *cap)
    return 0;
  long n = *cap ? *cap : 256;
  while (n < need)
    n *= 2;
  void *q = realloc(*p, (size_t)n * size);
  if (!q)
    return -ENOMEM;
  *p = q;
  *cap = n;
  return 0;
}

static int push_ray(atl_op_sim *sim, const atl_op_ray *r) {
  long cap = sim->cap;
  if (grow((void **)&sim->rays, &cap, sim->nrays + 1, sizeof(*sim->rays)) < 0)
    return -ENOMEM;
  long cap2 = sim->cap;
  if (grow((void **)&sim->alive, &cap2, sim->nrays + 1, 1) < 0)
    return -ENOMEM;
  sim->cap = cap;
  sim->rays[sim->nrays] = *r;
  sim->alive[sim->nrays] = 1;
  sim->nrays++;
  return 0;
}

static void set_error(atl_op_sim *sim, const char *msg) {
  if (!sim->error)
    sim->error = strdup(msg);
}

int atl__op_emit(atl_op_sim *sim, const atl_op_ray *r) {
  if (sim->error)
    return -1;
  if (sim->nstaged < 0) {
    /* During onSimulationStart rays go straight into the array. */
    if (sim->emitted >= ATL_OP_MAX_SOURCE_RAYS) {
      char msg[256];
      snprintf(msg, sizeof(msg),
               "the light sources would emit more than %ld rays; lower the "
               "scene's ray density or make the sources smaller",
               ATL_OP_MAX_SOURCE_RAYS);
      set_error(sim, msg);
      return -1;
    }
    if (push_ray(sim, r) < 0) {
      set_error(sim, "out of memory");
      return -1;
    }
    sim->emitted++;
    return 0;
  }
  if (grow((void **)&sim->staged, &sim->staged_cap, sim->nstaged + 1,
           sizeof(*sim->staged)) < 0) {
    set_error(sim, "out of memory");
    return -1;
  }
  sim->staged[sim->nstaged++] = *r;
  return 0;
}

atl_op_ray atl__op_ray_make(atl_op_pt p1, atl_op_pt p2, double bs, double bp,
                            const atl_op_ray *parent, atl_op_kind kind) {
  atl_op_ray r;
  memset(&r, 0, sizeof(r));
  r.p1 = p1, r.p2 = p2, r.bs = bs, r.bp = bp;
  r.kind = kind;
  r.depth = -1; /* "not set": the simulator gives it its parent's depth */
  r.wavelength = parent ? parent->wavelength : NAN;
  r.source = parent ? parent->source : -1;
  r.parent = -1;
  return r;
}

void atl__op_brightness_scale(atl_op_sim *sim, double scale) {
  if (scale == 0 || isnan(scale))
    return;
  if (sim->brightness_scale == 0)
    sim->brightness_scale = scale;
  else if (sim->brightness_scale != scale)
    sim->brightness_scale = -1;
}

void atl__op_undefined(atl_op_sim *sim, const atl_op_ray *r, int obj_a,
                       int obj_b) {
  sim->total_undefined += r->bs + r->bp;
  if (sim->nundefined_objs == 0) {
    sim->undefined_objs[0] = obj_a;
    sim->undefined_objs[1] = obj_b;
    sim->nundefined_objs = obj_b >= 0 ? 2 : 1;
  }
}

static void record(atl_op_sim *sim, const atl_op_ray *r, atl_op_pt end,
                   int hit_obj) {
  if (!sim->record)
    return;
  if (grow((void **)&sim->segs, &sim->segs_cap, sim->nsegs + 1,
           sizeof(*sim->segs)) < 0) {
    set_error(sim, "out of memory");
    return;
  }
  atl_op_segment *g = &sim->segs[sim->nsegs++];
  g->p1 = r->p1, g->p2 = end;
  g->bs = r->bs, g->bp = r->bp, g->wavelength = r->wavelength;
  g->parent = r->parent, g->hit_obj = hit_obj, g->source = r->source;
  g->kind = r->kind, g->depth = r->depth;
  g->gap = r->gap;
  g->grazing = r->grazing;
  g->caused_tir = 0;
  g->caused_grazing = 0;
  g->tir_count = (r->parent >= 0 && r->parent < sim->nsegs - 1
                      ? sim->segs[r->parent].tir_count
                      : 0) +
                 (r->kind == ATL_OP_TIR);
}

/* The nearest object the ray meets, as upstream decides it: hits within
 * MIN_RAY_SEGMENT_LENGTH of the nearest one are the same hit; where a
 * glass is one of them its surface merges with the other object's,
 * which handles the ray (a non-glass object wins over a glass); any
 * other coincidence is undefined behaviour. */
typedef struct {
  int obj; /* optical index, -1 for none */
  atl_op_pt point;
  atl_op_obj **merging;
  int nmerging, merging_cap;
  int undefined, und_a, und_b;
} nearest_t;

static void merge_add(nearest_t *n, atl_op_obj *o) {
  if (n->nmerging == n->merging_cap) {
    int cap = n->merging_cap ? n->merging_cap * 2 : 8;
    atl_op_obj **m = realloc(n->merging, sizeof(*m) * (size_t)cap);
    if (!m)
      return; /* the merge is lost, not memory safety */
    n->merging = m;
    n->merging_cap = cap;
  }
  n->merging[n->nmerging++] = o;
}

void atl__op_box_add(atl_op_obj *o, atl_op_pt p, double r) {
  if (!o->has_box) {
    o->has_box = 1;
    o->box[0] = o->box[2] = p.x;
    o->box[1] = o->box[3] = p.y;
  }
  /* Comparisons, not fmin/fmax: those are libm calls here. */
  o->box[0] = p.x - r < o->box[0] ? p.x - r : o->box[0];
  o->box[1] = p.y - r < o->box[1] ? p.y - r : o->box[1];
  o->box[2] = p.x + r > o->box[2] ? p.x + r : o->box[2];
  o->box[3] = p.y + r > o->box[3] ? p.y + r : o->box[3];
}

static void find_nearest(atl_op_sim *sim, const atl_op_ray *r, nearest_t *n) {
  atl_op_scene *s = sim->scene;
  double ls2 = ATL_OP_MIN_SEG_SQ * s->length_scale * s->length_scale;
  double best = INFINITY;
  atl_op_boxray br = atl__op_boxray(r);
  n->obj = -1;
  n->nmerging = 0;
  n->undefined = 0;
  /* The objects the ray may meet, in order, from compact per-object
   * flags and boxes (the objects themselves are further away in memory),
   * then their own tests. */
  int nc = 0, *cand = sim->cand;
  const unsigned char *test = sim->testable;
  for (int i = 0; i < s->noptical; i++)
    if (test[i] == 2 ||
        (test[i] == 1 && atl__op_ray_meets_box(&br, sim->boxes[i])))
      cand[nc++] = i;
  for (int k = 0; k < nc; k++) {
    int i = cand[k];
    atl_op_obj *o = s->optical[i];
    atl_op_pt p;
    if (!o->cls->intersect(o, sim, r, &p))
      continue;
    double d = atl__op_dist2(r->p1, p);
    int near_same = n->obj >= 0 && atl__op_dist2(p, n->point) < ls2;
    if (near_same) {
      atl_op_obj *cur = s->optical[n->obj];
      int cur_glass = (cur->cls->flags & ATL_OP_GLASS) != 0;
      int new_glass = (o->cls->flags & ATL_OP_GLASS) != 0;
      if (cur_glass && new_glass) {
        merge_add(n, o);
      } else if (cur_glass) {
        /* The non-glass object handles the ray, the glass merges. */
        if (!(o->cls->flags & ATL_OP_MERGES_WITH_GLASS))
          n->undefined = 1, n->und_a = n->obj, n->und_b = i;
        merge_add(n, cur);
        n->obj = i, n->point = p, best = d;
      } else if (new_glass) {
        if (!(cur->cls->flags & ATL_OP_MERGES_WITH_GLASS))
          n->undefined = 1, n->und_a = n->obj, n->und_b = i;
        merge_add(n, o);
      } else {
        n->undefined = 1, n->und_a = n->obj, n->und_b = i;
      }
    } else if (d < best && d > ls2) {
      n->obj = i, n->point = p, best = d;
      n->undefined = 0;
      n->nmerging = 0;
    }
  }
}

/* The objects' boxes grown by the pad the box test needs. */
static int boxes_make(atl_op_sim *sim) {
  atl_op_scene *s = sim->scene;
  sim->boxes = calloc((size_t)s->noptical + 1, sizeof(*sim->boxes));
  sim->testable = calloc((size_t)s->noptical + 1, 1);
  sim->cand = calloc((size_t)s->noptical + 1, sizeof(int));
  if (!sim->boxes || !sim->testable || !sim->cand)
    return -ENOMEM;
  for (int i = 0; i < s->noptical; i++) {
    const atl_op_obj *o = s->optical[i];
    /* 0: no intersection test; 1: test it if the ray meets its box; 2:
     * always test it. */
    sim->testable[i] = !o->cls->intersect ? 0 : o->has_box ? 1 : 2;
    if (!o->has_box)
      continue;
    double m = 0;
    for (int k = 0; k < 4; k++)
      m = fabs(o->box[k]) > m ? fabs(o->box[k]) : m;
    double pad = 1e-6 * fabs(s->length_scale) + 1e-9 * m;
    sim->boxes[i][0] = o->box[0] - pad;
    sim->boxes[i][1] = o->box[1] - pad;
    sim->boxes[i][2] = o->box[2] + pad;
    sim->boxes[i][3] = o->box[3] + pad;
  }
  return 0;
}

static void start(atl_op_sim *sim) {
  atl_op_scene *s = sim->scene;
  sim->nstaged = -1; /* emit straight into the array */
  for (int i = 0; i < s->noptical; i++) {
    atl_op_obj *o = s->optical[i];
    if (!o->cls->start)
      continue;
    long first = sim->nrays;
    o->cls->start(o, sim);
    for (long k = first; k < sim->nrays; k++) {
      atl_op_ray *r = &sim->rays[k];
      if (r->depth < 0)
        r->depth = 0;
      r->source = i;
      r->kind = ATL_OP_SOURCE;
      r->parent = -1;
      if (!s->simulate_colors)
        r->wavelength = NAN;
    }
  }
  sim->nstaged = 0;
}

/* The warnings upstream's validate() gives, in its order. */
static void validate(atl_op_sim *sim) {
  atl_op_scene *s = sim->scene;
  if (sim->total_undefined > ATL_OP_UNDEFINED_THRESHOLD) {
    const char *a = s->optical[sim->undefined_objs[0]]->cls->type;
    char buf[256];
    if (sim->nundefined_objs == 1)
      snprintf(buf, sizeof(buf),
               "Undefined behavior: a ray met a singular point of %s "
               "(e.g. a corner); its result is not defined",
               a);
    else
      snprintf(buf, sizeof(buf),
               "Undefined behavior: rays meet %s and %s at the same point; "
               "overlapping surfaces of these two are not defined",
               a, s->optical[sim->undefined_objs[1]]->cls->type);
    sim->warning = strdup(buf);
    return;
  }
  if (sim->brightness_scale == -1) {
    int detector = 0;
    for (int i = 0; i < s->noptical; i++)
      detector |= s->optical[i]->cls == &atl__op_detector;
    if (detector || s->simulate_colors)
      sim->warning = strdup(
          "The light sources' brightness scales differ (the ray density is "
          "too low for some of them), so detector readings and colours are "
          "inconsistent; raise the ray density");
  }
}

int atl__op_sim_run(atl_op_scene *s, long ray_limit, int rec,
                    atl_op_sim **out) {
  atl_op_sim *sim = calloc(1, sizeof(*sim));
  if (!sim)
    return -ENOMEM;
  *out = sim;
  sim->scene = s;
  sim->record = rec;
  sim->ray_limit = ray_limit;
  if (boxes_make(sim) < 0)
    set_error(sim, "out of memory");
  start(sim);
  double max_depth = s->max_ray_depth;
  if (isnan(max_depth))
    max_depth = INFINITY;
  else if (max_depth < 0)
    max_depth = 0;
  nearest_t n = {0};
  long left = 0, j = -1;
  int last_obj = -1;
  while (!sim->error) {
    if (sim->processed > sim->ray_limit) {
      sim->stopped = 1;
      break;
    }
    if (j + 1 >= sim->nrays) {
      /* The end of a pass: another while rays are left in place. */
      if (left == 0)
        break;
      left = 0;
      last_obj = -1;
      j = -1;
      continue;
    }
    j++;
    if (!sim->alive[j])
      continue;
    atl_op_ray *r = &sim->rays[j];
    find_nearest(sim, r, &n);
    if (n.undefined)
      atl__op_undefined(sim, r, n.und_a, n.und_b);
    if (last_obj != n.obj)
      r->gap = 1;
    r->is_new = 0;
    last_obj = n.obj;
    int64_t seg = sim->processed;
    sim->kinds[r->kind]++;
    if (n.obj < 0) {
      record(sim, r, r->p2, -1);
      sim->alive[j] = 0;
      sim->processed++;
      continue;
    }
    record(sim, r, n.point, n.obj);
    r->depth++;
    if (r->depth > max_depth) {
      sim->total_truncation += r->bs + r->bp;
      sim->alive[j] = 0;
      sim->processed++;
      continue;
    }
    int depth = r->depth;
    atl_op_obj *o = s->optical[n.obj];
    sim->nstaged = 0;
    r->kind = ATL_OP_PASS;
    r->grazing = 0;
    atl_op_result res =
        o->cls->incident(o, sim, r, j, n.point, n.merging, n.nmerging);
    r = &sim->rays[j]; /* (not moved: nothing was appended yet) */
    r->parent = seg;
    /* The flags of the segment just recorded, from what its end did. */
    if (sim->record && sim->segs && seg < sim->nsegs) {
      if (r->kind == ATL_OP_TIR && !res.absorbed)
        sim->segs[seg].caused_tir = 1;
      sim->segs[seg].caused_grazing = r->grazing;
    }
    if (res.undefined)
      atl__op_undefined(sim, r, n.obj, -1);
    if (res.absorbed)
      sim->alive[j] = 0;
    /* Read before appending: the appends may move the array, and an
     * object may emit several rays (a custom surface does). */
    int source = r->source;
    for (long k = 0; k < sim->nstaged; k++) {
      atl_op_ray nr = sim->staged[k];
      if (nr.depth < 0)
        nr.depth = depth;
      nr.parent = seg;
      nr.source = source;
      if (push_ray(sim, &nr) < 0)
        set_error(sim, "out of memory");
    }
    sim->nstaged = 0;
    sim->total_truncation += res.truncation;
    sim->processed++;
    if (sim->alive[j])
      left++;
  }
  free(n.merging);
  if (!sim->error)
    validate(sim);
  return sim->error ? -EINVAL : 0;
}

void atl__op_sim_free(atl_op_sim *sim) {
  if (!sim)
    return;
  free(sim->rays);
  free(sim->alive);
  free(sim->staged);
  free(sim->segs);
  free(sim->boxes);
  free(sim->testable);
  free(sim->cand);
  atl__op_bodies_free(sim->bodies);
  free(sim->error);
  free(sim->warning);
  free(sim);
}
