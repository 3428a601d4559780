/* The lineage of a simulation's segments and the analyses over it
 * (opx_lineage.h). Every walk is a loop over indices, never a recursion:
 * a ray trapped by total internal reflection can make a chain of a
 * million segments. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opx_lineage.h"

/* The parent of segment i, or -1 when it is a root (opx_tree_build). */
static long parent_of(const opx_tree_t *t, long i) {
  int64_t p = t->segs[i].parent;
  return p >= 0 && p < i ? (long)p : -1;
}

static double energy(const atl_op_segment *g) {
  return g->bs + g->bp;
}

static long nchildren(const opx_tree_t *t, long i) {
  return t->first[i + 1] - t->first[i];
}

int opx_tree_build(const atl_op_segment *segs, long n, opx_tree_t *t) {
  memset(t, 0, sizeof(*t));
  if (n < 0)
    n = 0;
  t->segs = segs;
  t->n = n;
  t->first = calloc((size_t)n + 2, sizeof(long));
  t->child = malloc(((size_t)n + 1) * sizeof(long));
  if (t->first == NULL || t->child == NULL) {
    opx_tree_free(t);
    return -ENOMEM;
  }
  /* A counting sort by parent: count each parent's children in
   * first[p + 2], turn the counts into starts at first[p + 1], then place
   * the children in index order, advancing first[p + 1] as the cursor of
   * parent p, which leaves first[p] at the start of p's list. */
  for (long i = 0; i < n; i++) {
    long p = parent_of(t, i);
    if (p >= 0)
      t->first[p + 2]++;
  }
  for (long i = 2; i <= n + 1; i++)
    t->first[i] += t->first[i - 1];
  for (long i = 0; i < n; i++) {
    long p = parent_of(t, i);
    if (p >= 0)
      t->child[t->first[p + 1]++] = i;
  }
  return 0;
}

void opx_tree_free(opx_tree_t *t) {
  free(t->first);
  free(t->child);
  t->first = t->child = NULL;
  t->n = 0;
}

const char *opx_kind_name(atl_op_kind k) {
  switch (k) {
  case ATL_OP_SOURCE:
    return "source";
  case ATL_OP_REFLECT:
    return "reflect";
  case ATL_OP_REFRACT:
    return "refract";
  case ATL_OP_TIR:
    return "tir";
  case ATL_OP_PASS:
    return "pass";
  }
  return "unknown";
}

/* Every segment's depth (a root is at 0), in one pass, since parents come
 * first. NULL when out of memory; the caller frees. */
static long *depths(const opx_tree_t *t) {
  long *d = malloc(((size_t)t->n + 1) * sizeof(long));
  if (d != NULL)
    for (long i = 0; i < t->n; i++) {
      long p = parent_of(t, i);
      d[i] = p >= 0 ? d[p] + 1 : 0;
    }
  return d;
}

/* A segment's id and a key to sort on: larger keys first, ties by id,
 * which makes qsort stable in effect. */
typedef struct {
  double key;
  long id;
} ranked_t;

static int by_key_desc(const void *a, const void *b) {
  const ranked_t *x = a, *y = b;
  if (x->key != y->key)
    return x->key > y->key ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

static long clamp(long v, long lo, long hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* Adds ids[0 .. len) as the array ids_key (and their kinds as types_key
 * unless NULL), keeping the first and last OPX_PATH_SHOWN / 2 of a longer
 * list, and the number left out as elided_key. */
static void put_ids(json_object *o, const opx_tree_t *t, const long *ids,
                    long len, const char *ids_key, const char *types_key,
                    const char *elided_key) {
  long head = len, tail_at = len;
  if (len > OPX_PATH_SHOWN) {
    head = OPX_PATH_SHOWN / 2;
    tail_at = len - OPX_PATH_SHOWN / 2;
  }
  json_object *ja = json_object_new_array(), *ta = NULL;
  if (types_key != NULL)
    ta = json_object_new_array();
  for (long k = 0; k < len; k++) {
    if (k == head)
      k = tail_at;
    json_object_array_add(ja, json_object_new_int64(ids[k]));
    if (ta != NULL)
      json_object_array_add(
          ta, json_object_new_string(opx_kind_name(t->segs[ids[k]].kind)));
  }
  if (ta != NULL)
    json_object_object_add(o, types_key, ta);
  json_object_object_add(o, ids_key, ja);
  json_object_object_add(o, elided_key, json_object_new_int64(tail_at - head));
}

static void put_double(json_object *o, const char *key, double v) {
  json_object_object_add(o, key, json_object_new_double(v));
}

json_object *opx_rank_paths(const opx_tree_t *t, int top_n) {
  long n = t->n, nleaves = 0;
  ranked_t *leaves = malloc(((size_t)n + 1) * sizeof(*leaves));
  long *depth = depths(t), *path = malloc(((size_t)n + 1) * sizeof(long));
  if (leaves == NULL || depth == NULL || path == NULL) {
    free(leaves);
    free(depth);
    free(path);
    return NULL;
  }
  for (long i = 0; i < n; i++)
    if (nchildren(t, i) == 0)
      leaves[nleaves++] = (ranked_t){energy(&t->segs[i]), i};
  qsort(leaves, (size_t)nleaves, sizeof(*leaves), by_key_desc);
  long shown = clamp(top_n, 1, OPX_TOP_MAX);
  if (shown > nleaves)
    shown = nleaves;

  json_object *out = json_object_new_array();
  for (long r = 0; r < shown; r++) {
    long id = leaves[r].id, len = depth[id] + 1;
    const atl_op_segment *g = &t->segs[id];
    /* The path root first: fill it from its end while climbing. */
    for (long k = len - 1, s = id; k >= 0; k--, s = parent_of(t, s))
      path[k] = s;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64(id));
    put_double(o, "energy", energy(g));
    put_double(o, "energy_s", g->bs);
    put_double(o, "energy_p", g->bp);
    json_object_object_add(o, "path_length", json_object_new_int64(len));
    put_ids(o, t, path, len, "path_ids", "path_types", "path_elided");
    json_object_array_add(out, o);
  }
  free(leaves);
  free(depth);
  free(path);
  return out;
}

/* Σ s + p over the children of segment i. */
static double children_energy(const opx_tree_t *t, long i) {
  double sum = 0;
  for (long c = t->first[i]; c < t->first[i + 1]; c++)
    sum += energy(&t->segs[t->child[c]]);
  return sum;
}

json_object *opx_energy_check(const opx_tree_t *t) {
  long n = t->n, checks = 0, nviol = 0;
  ranked_t *viol = malloc(((size_t)n + 1) * sizeof(*viol));
  if (viol == NULL)
    return NULL;
  double max_ratio = 1.0, emitted = 0, escaped = 0, absorbed = 0;
  for (long i = 0; i < n; i++) {
    const atl_op_segment *g = &t->segs[i];
    double e = energy(g);
    if (g->kind == ATL_OP_SOURCE)
      emitted += e;
    if (nchildren(t, i) == 0) {
      if (g->hit_obj == -1)
        escaped += e;
      else
        absorbed += e;
      continue;
    }
    /* A parent too weak to compare against is skipped, as upstream. */
    if (e < 1e-12)
      continue;
    checks++;
    double ratio = children_energy(t, i) / e;
    if (ratio > 1.0 + 1e-6) {
      viol[nviol++] = (ranked_t){ratio, i};
      if (ratio > max_ratio)
        max_ratio = ratio;
    }
  }
  /* The worst violations are the ones worth reading. */
  qsort(viol, (size_t)nviol, sizeof(*viol), by_key_desc);

  json_object *out = json_object_new_object(), *va = json_object_new_array();
  json_object_object_add(out, "total_checks", json_object_new_int64(checks));
  for (long v = 0; v < nviol && v < OPX_VIOLATIONS_SHOWN; v++) {
    long i = viol[v].id;
    json_object *o = json_object_new_object(), *types = json_object_new_array();
    json_object_object_add(o, "parent_id", json_object_new_int64(i));
    put_double(o, "parent_energy", energy(&t->segs[i]));
    put_double(o, "child_energy_sum", children_energy(t, i));
    put_double(o, "excess_ratio", viol[v].key);
    for (long c = t->first[i]; c < t->first[i + 1]; c++)
      json_object_array_add(types, json_object_new_string(opx_kind_name(
                                       t->segs[t->child[c]].kind)));
    json_object_object_add(o, "child_types", types);
    json_object_array_add(va, o);
  }
  json_object_object_add(out, "violations", va);
  json_object_object_add(out, "violation_count", json_object_new_int64(nviol));
  put_double(out, "max_excess_ratio", max_ratio);
  json_object_object_add(out, "is_valid", json_object_new_boolean(nviol == 0));
  put_double(out, "emitted", emitted);
  put_double(out, "escaped", escaped);
  put_double(out, "absorbed", absorbed);
  put_double(out, "unaccounted", emitted - escaped - absorbed);
  free(viol);
  return out;
}

/* The first TIR child of segment i, or -1. */
static long first_tir_child(const opx_tree_t *t, long i) {
  for (long c = t->first[i]; c < t->first[i + 1]; c++)
    if (t->segs[t->child[c]].kind == ATL_OP_TIR)
      return t->child[c];
  return -1;
}

json_object *opx_tir_traps(const opx_tree_t *t, int min_tir_count) {
  long n = t->n, nchains = 0, min = min_tir_count < 1 ? 1 : min_tir_count;
  unsigned char *seen = calloc((size_t)n + 1, 1);
  /* Chains are disjoint, so their segments fit in one array of n: chain
   * k is at[start[k] .. start[k] + count[k]). */
  long *at = malloc(((size_t)n + 1) * sizeof(long));
  ranked_t *chains = malloc(((size_t)n + 1) * sizeof(*chains));
  long *start = malloc(((size_t)n + 1) * sizeof(long)), used = 0;
  if (seen == NULL || at == NULL || chains == NULL || start == NULL) {
    free(seen);
    free(at);
    free(chains);
    free(start);
    return NULL;
  }
  /* In index order a chain's start comes before its members, so an
   * unseen TIR segment is either a chain's start or a branch off one. */
  for (long i = 0; i < n; i++) {
    if (t->segs[i].kind != ATL_OP_TIR || seen[i])
      continue;
    long len = 0;
    for (long s = i; s >= 0; s = first_tir_child(t, s)) {
      seen[s] = 1;
      at[used + len++] = s;
    }
    if (len < min)
      continue;
    start[nchains] = used;
    chains[nchains] = (ranked_t){(double)len, nchains};
    nchains++;
    used += len;
  }
  qsort(chains, (size_t)nchains, sizeof(*chains), by_key_desc);

  json_object *out = json_object_new_array();
  for (long k = 0; k < nchains; k++) {
    const long *ids = at + start[chains[k].id];
    long len = (long)chains[k].key, last = ids[len - 1], exit = -1;
    for (long c = t->first[last]; c < t->first[last + 1] && exit < 0; c++)
      if (t->segs[t->child[c]].kind != ATL_OP_TIR)
        exit = t->child[c];
    int max_count = 0;
    for (long m = 0; m < len; m++)
      if (t->segs[ids[m]].tir_count > max_count)
        max_count = t->segs[ids[m]].tir_count;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "entry_id", json_object_new_int64(ids[0]));
    put_ids(o, t, ids, len, "tir_chain_ids", NULL, "tir_chain_elided");
    json_object_object_add(o, "tir_count", json_object_new_int64(len));
    json_object_object_add(o, "max_tir_count_in_lineage",
                           json_object_new_int(max_count));
    json_object_object_add(o, "escaped", json_object_new_boolean(exit >= 0));
    json_object_object_add(
        o, "exit_type",
        exit >= 0 ? json_object_new_string(opx_kind_name(t->segs[exit].kind))
                  : NULL);
    put_double(o, "energy_at_entry", energy(&t->segs[ids[0]]));
    put_double(o, "energy_at_exit", energy(&t->segs[last]));
    json_object_array_add(out, o);
  }
  free(seen);
  free(at);
  free(chains);
  free(start);
  return out;
}

/* An array of n doubles a[0] + i * step. */
static json_object *series(double a0, double step, long n) {
  json_object *a = json_object_new_array();
  for (long i = 0; i < n; i++)
    json_object_array_add(a, json_object_new_double(a0 + (double)i * step));
  return a;
}

json_object *opx_angular_distribution(const opx_tree_t *t, int n_bins) {
  long n = t->n, bins = clamp(n_bins, 1, OPX_BINS_MAX), leaves = 0;
  long *root = malloc(((size_t)n + 1) * sizeof(long));
  double *w = calloc((size_t)bins, sizeof(double));
  long *rays = calloc((size_t)bins, sizeof(long));
  if (root == NULL || w == NULL || rays == NULL) {
    free(root);
    free(w);
    free(rays);
    return NULL;
  }
  double width = 360.0 / (double)bins, total = 0;
  for (long i = 0; i < n; i++) {
    long p = parent_of(t, i);
    root[i] = p >= 0 ? root[p] : i;
    if (nchildren(t, i) > 0)
      continue;
    const atl_op_segment *r = &t->segs[root[i]];
    /* The picture's y grows downward: negate dy so that the angle turns
     * counter-clockwise as seen; p1.y - p2.y rather than -(p2.y - p1.y)
     * keeps a horizontal ray's dy at +0, so that going left is +180. */
    double deg = atan2(r->p1.y - r->p2.y, r->p2.x - r->p1.x) * 180 / M_PI;
    long b =
        isfinite(deg) ? clamp((long)((deg + 180.0) / width), 0, bins - 1) : 0;
    double e = energy(&t->segs[i]);
    w[b] += e;
    rays[b]++;
    total += e;
    leaves++;
  }
  long peak = 0;
  for (long b = 1; b < bins; b++)
    if (w[b] > w[peak])
      peak = b;

  json_object *out = json_object_new_object(), *ca = json_object_new_array(),
              *ra = json_object_new_array();
  json_object_object_add(
      out, "convention",
      json_object_new_string(
          "emission angle of each leaf's root segment in degrees, "
          "counter-clockwise on the picture from +x (y grows downward, so "
          "a ray going up the picture is at +90): atan2(-(p2.y - p1.y), "
          "p2.x - p1.x); bins start at -180; counts are energy (s + p of "
          "the leaves), rays the number of leaves"));
  json_object_object_add(out, "n_bins", json_object_new_int64(bins));
  put_double(out, "bin_width_deg", width);
  json_object_object_add(out, "bin_edges_deg", series(-180, width, bins + 1));
  json_object_object_add(out, "bin_centers_deg",
                         series(-180 + width / 2, width, bins));
  for (long b = 0; b < bins; b++) {
    json_object_array_add(ca, json_object_new_double(w[b]));
    json_object_array_add(ra, json_object_new_int64(rays[b]));
  }
  json_object_object_add(out, "counts", ca);
  json_object_object_add(out, "rays", ra);
  put_double(out, "total", total);
  json_object_object_add(out, "leaf_count", json_object_new_int64(leaves));
  json_object_object_add(
      out, "peak_bin_center_deg",
      total > 0 ? json_object_new_double(-180 + width * ((double)peak + 0.5))
                : NULL);
  json_object_object_add(out, "peak_value",
                         total > 0 ? json_object_new_double(w[peak]) : NULL);
  free(root);
  free(w);
  free(rays);
  return out;
}

json_object *opx_lineage_stats(const opx_tree_t *t) {
  long *depth = depths(t);
  if (depth == NULL)
    return NULL;
  long roots = 0, leaves = 0, max_depth = 0, parents = 0, children = 0;
  long kinds[ATL_OP_PASS + 2] = {0};
  for (long i = 0; i < t->n; i++) {
    long c = nchildren(t, i);
    roots += parent_of(t, i) < 0;
    leaves += c == 0;
    parents += c > 0;
    children += c;
    if (depth[i] > max_depth)
      max_depth = depth[i];
    unsigned k = (unsigned)t->segs[i].kind;
    kinds[k <= ATL_OP_PASS ? k : ATL_OP_PASS + 1]++;
  }
  json_object *out = json_object_new_object(), *ic = json_object_new_object();
  json_object_object_add(out, "segment_count", json_object_new_int64(t->n));
  json_object_object_add(out, "root_count", json_object_new_int64(roots));
  json_object_object_add(out, "leaf_count", json_object_new_int64(leaves));
  json_object_object_add(out, "max_depth", json_object_new_int64(max_depth));
  for (unsigned k = 0; k <= ATL_OP_PASS + 1; k++)
    if (kinds[k] > 0)
      json_object_object_add(ic, opx_kind_name((atl_op_kind)k),
                             json_object_new_int64(kinds[k]));
  json_object_object_add(out, "interaction_counts", ic);
  put_double(out, "branching_factor_avg",
             parents > 0 ? (double)children / (double)parents : 0.0);
  free(depth);
  return out;
}
