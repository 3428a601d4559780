/* The lineage analyses (plugins/optics/opx_lineage.c): on the reference
 * prism of ray_tracing_shapely (../shared/anchors/ray-optics.md section
 * 8), whose 7 segments this simulator records in the reference's order
 * (test_optics_core.c checks them), and on hand-made segment arrays. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opx_lineage.h"

/* The reference's figures are rounded to 6 decimals; sums of a few of
 * them carry a few of those roundings. */
#define TOL 1e-5

static json_object *get(json_object *o, const char *key) {
  json_object *v = NULL;
  cr_assert(json_object_object_get_ex(o, key, &v), "no key %s in %s", key,
            json_object_to_json_string(o));
  return v;
}

static double num(json_object *o, const char *key) {
  return json_object_get_double(get(o, key));
}

static long integer(json_object *o, const char *key) {
  return (long)json_object_get_int64(get(o, key));
}

static long at_int(json_object *a, size_t i) {
  return (long)json_object_get_int64(json_object_array_get_idx(a, i));
}

static const char *at_str(json_object *a, size_t i) {
  return json_object_get_string(json_object_array_get_idx(a, i));
}

static const char *prism =
    "{\"version\":5,\"objs\":[{\"type\":\"Glass\",\"path\":[{\"x\":200,"
    "\"y\":50,\"arc\":false},{\"x\":250,\"y\":100,\"arc\":false},{\"x\":150,"
    "\"y\":100,\"arc\":false}],\"refIndex\":1.5},{\"type\":\"SingleRay\","
    "\"p1\":{\"x\":100,\"y\":80},\"p2\":{\"x\":250,\"y\":80},\"brightness\":"
    "1}]}";

static atl_op_scene *scene;
static atl_op_sim *sim;
static opx_tree_t tree;

static void prism_setup(void) {
  json_object *doc = json_tokener_parse(prism);
  char *err = NULL;
  cr_assert_eq(atl__op_scene_load(doc, &scene, &err), 0, "%s", err);
  json_object_put(doc);
  cr_assert_eq(atl__op_sim_run(scene, LONG_MAX, 1, &sim), 0);
  cr_assert_eq(sim->nsegs, 7);
  cr_assert_eq(opx_tree_build(sim->segs, sim->nsegs, &tree), 0);
}

static void prism_teardown(void) {
  opx_tree_free(&tree);
  atl__op_sim_free(sim);
  atl__op_scene_free(scene);
}

/* The tree of section 8's table: 0 -> {1, 2}, 2 -> 3, 3 -> {4, 5},
 * 4 -> 6; leaves 1, 5 and 6. */
Test(lineage_prism, tree, .init = prism_setup, .fini = prism_teardown) {
  static const long first[8] = {0, 2, 2, 3, 5, 6, 6, 6};
  static const long child[6] = {1, 2, 3, 4, 5, 6};
  for (int i = 0; i < 8; i++)
    cr_assert_eq(tree.first[i], first[i], "first[%d]", i);
  for (int i = 0; i < 6; i++)
    cr_assert_eq(tree.child[i], child[i], "child[%d]", i);

  json_object *s = opx_lineage_stats(&tree);
  cr_assert_eq(integer(s, "segment_count"), 7);
  cr_assert_eq(integer(s, "root_count"), 1);
  cr_assert_eq(integer(s, "leaf_count"), 3);
  cr_assert_eq(integer(s, "max_depth"), 4); /* 0 2 3 4 6 */
  json_object *ic = get(s, "interaction_counts");
  cr_assert_eq(integer(ic, "source"), 1);
  cr_assert_eq(integer(ic, "reflect"), 2);
  cr_assert_eq(integer(ic, "refract"), 3);
  cr_assert_eq(integer(ic, "tir"), 1);
  cr_assert_eq(json_object_object_length(ic), 4);
  /* 6 children over 4 parents. */
  cr_assert_float_eq(num(s, "branching_factor_avg"), 1.5, 1e-12);
  json_object_put(s);
}

Test(lineage_prism, ranked_paths, .init = prism_setup, .fini = prism_teardown) {
  json_object *r = opx_rank_paths(&tree, 10);
  cr_assert_eq(json_object_array_length(r), 3);
  /* The leaves' s + p from the table: 5 is 0.412220 + 0.491569, 1 is
   * 0.046007 + 0.004233, 6 is 0.039580 + 0.004075. */
  static const long ids[3] = {5, 1, 6};
  static const double e[3] = {0.903789, 0.050240, 0.043655};
  static const long lens[3] = {4, 2, 5};
  for (size_t k = 0; k < 3; k++) {
    json_object *p = json_object_array_get_idx(r, k);
    cr_assert_eq(integer(p, "id"), ids[k], "rank %zu", k);
    cr_assert_float_eq(num(p, "energy"), e[k], TOL, "rank %zu", k);
    cr_assert_float_eq(num(p, "energy_s") + num(p, "energy_p"), e[k], TOL);
    cr_assert_eq(integer(p, "path_length"), lens[k]);
    cr_assert_eq(json_object_array_length(get(p, "path_ids")), lens[k]);
    cr_assert_eq(integer(p, "path_elided"), 0);
  }
  json_object *top = json_object_array_get_idx(r, 0);
  cr_assert_float_eq(num(top, "energy_s"), 0.412220, 1e-6);
  cr_assert_float_eq(num(top, "energy_p"), 0.491569, 1e-6);
  static const char *types[4] = {"source", "refract", "tir", "refract"};
  static const long path[4] = {0, 2, 3, 5};
  for (size_t k = 0; k < 4; k++) {
    cr_assert_str_eq(at_str(get(top, "path_types"), k), types[k]);
    cr_assert_eq(at_int(get(top, "path_ids"), k), path[k]);
  }
  json_object_put(r);

  r = opx_rank_paths(&tree, 2);
  cr_assert_eq(json_object_array_length(r), 2);
  json_object_put(r);
  /* top_n is clamped to at least 1 and at most the leaves. */
  r = opx_rank_paths(&tree, 0);
  cr_assert_eq(json_object_array_length(r), 1);
  json_object_put(r);
  r = opx_rank_paths(&tree, -5);
  cr_assert_eq(json_object_array_length(r), 1);
  json_object_put(r);
  r = opx_rank_paths(&tree, INT_MAX);
  cr_assert_eq(json_object_array_length(r), 3);
  json_object_put(r);
}

Test(lineage_prism, energy, .init = prism_setup, .fini = prism_teardown) {
  json_object *c = opx_energy_check(&tree);
  cr_assert_eq(integer(c, "total_checks"), 4); /* parents 0, 2, 3, 4 */
  cr_assert(json_object_get_boolean(get(c, "is_valid")));
  cr_assert_eq(integer(c, "violation_count"), 0);
  cr_assert_eq(json_object_array_length(get(c, "violations")), 0);
  cr_assert_eq(num(c, "max_excess_ratio"), 1.0);
  cr_assert_float_eq(num(c, "emitted"), 1.0, 1e-12);
  /* All three leaves leave the scene. */
  cr_assert_float_eq(num(c, "escaped"), 0.903789 + 0.050240 + 0.043655, TOL);
  cr_assert_eq(num(c, "absorbed"), 0.0);
  /* Segment 4 (0.041773 + 0.004197) has only its refraction 6: its
   * reflection was too weak to be followed. */
  cr_assert_float_eq(num(c, "unaccounted"),
                     0.041773 + 0.004197 - 0.039580 - 0.004075, TOL);
  json_object_put(c);
}

Test(lineage_prism, tir_and_angles, .init = prism_setup,
     .fini = prism_teardown) {
  json_object *t = opx_tir_traps(&tree, 1);
  cr_assert_eq(json_object_array_length(t), 1);
  json_object *c = json_object_array_get_idx(t, 0);
  cr_assert_eq(integer(c, "entry_id"), 3);
  cr_assert_eq(integer(c, "tir_count"), 1);
  cr_assert(json_object_get_boolean(get(c, "escaped")));
  /* 3's first child that is not a TIR is the reflection 4. */
  cr_assert_str_eq(json_object_get_string(get(c, "exit_type")), "reflect");
  cr_assert_float_eq(num(c, "energy_at_entry"), 0.453993 + 0.495767, TOL);
  cr_assert_eq(num(c, "energy_at_entry"), num(c, "energy_at_exit"));
  cr_assert_eq(integer(c, "max_tir_count_in_lineage"), 1);
  json_object_put(t);
  t = opx_tir_traps(&tree, 2);
  cr_assert_eq(json_object_array_length(t), 0);
  json_object_put(t);

  /* The source ray goes along +x: 0 degrees, bin 18 of 36 (0 to 10). */
  json_object *a = opx_angular_distribution(&tree, 36);
  cr_assert_eq(integer(a, "n_bins"), 36);
  cr_assert_eq(integer(a, "leaf_count"), 3);
  cr_assert_eq(at_int(get(a, "rays"), 18), 3);
  cr_assert_float_eq(num(a, "total"), 0.997684, TOL);
  cr_assert_float_eq(num(a, "peak_bin_center_deg"), 5.0, 1e-12);
  cr_assert_float_eq(num(a, "peak_value"), 0.997684, TOL);
  cr_assert_not_null(strstr(json_object_get_string(get(a, "convention")),
                            "counter-clockwise"));
  json_object_put(a);
}

/* Hand-made segments: kind, parent, s, p and the end (hit_obj). */
static atl_op_segment mk(atl_op_kind kind, int64_t parent, double bs, double bp,
                         int hit) {
  atl_op_segment g;
  memset(&g, 0, sizeof(g));
  g.kind = kind;
  g.parent = parent;
  g.bs = bs;
  g.bp = bp;
  g.hit_obj = hit;
  g.p2.x = 1;
  return g;
}

/* Sets each segment's tir_count as the simulator does. */
static void count_tirs(atl_op_segment *s, long n) {
  for (long i = 0; i < n; i++)
    s[i].tir_count = (s[i].parent >= 0 ? s[s[i].parent].tir_count : 0) +
                     (s[i].kind == ATL_OP_TIR);
}

Test(lineage, tir_chains) {
  /* 0 source -> 1 refract -> 2, 3, 4 TIR -> 5 refract out; a second
   * source 6 -> 7 refract -> 8, 9, 10 TIR, trapped (10 is a leaf on a
   * glass); 11 TIR branches off 8 (not 8's first TIR child); a lone TIR
   * 12 off the first source. */
  atl_op_segment s[13] = {
      mk(ATL_OP_SOURCE, -1, 0.5, 0.5, 0), mk(ATL_OP_REFRACT, 0, 0.45, 0.45, 0),
      mk(ATL_OP_TIR, 1, 0.45, 0.45, 0),   mk(ATL_OP_TIR, 2, 0.45, 0.45, 0),
      mk(ATL_OP_TIR, 3, 0.45, 0.45, 0),   mk(ATL_OP_REFRACT, 4, 0.4, 0.4, -1),
      mk(ATL_OP_SOURCE, -1, 0.5, 0.5, 0), mk(ATL_OP_REFRACT, 6, 0.4, 0.4, 0),
      mk(ATL_OP_TIR, 7, 0.4, 0.4, 0),     mk(ATL_OP_TIR, 8, 0.3, 0.3, 0),
      mk(ATL_OP_TIR, 9, 0.3, 0.3, 0),     mk(ATL_OP_TIR, 8, 0.05, 0.05, -1),
      mk(ATL_OP_TIR, 0, 0.01, 0.01, -1)};
  count_tirs(s, 13);
  opx_tree_t t;
  cr_assert_eq(opx_tree_build(s, 13, &t), 0);
  json_object *r = opx_tir_traps(&t, 2);
  /* Two chains of 3, in index order; 11 and 12 are chains of 1. */
  cr_assert_eq(json_object_array_length(r), 2);
  json_object *a = json_object_array_get_idx(r, 0),
              *b = json_object_array_get_idx(r, 1);
  cr_assert_eq(integer(a, "entry_id"), 2);
  cr_assert_eq(integer(a, "tir_count"), 3);
  for (size_t k = 0; k < 3; k++)
    cr_assert_eq(at_int(get(a, "tir_chain_ids"), k), 2 + (long)k);
  cr_assert(json_object_get_boolean(get(a, "escaped")));
  cr_assert_str_eq(json_object_get_string(get(a, "exit_type")), "refract");
  cr_assert_eq(integer(a, "max_tir_count_in_lineage"), 3);
  cr_assert_float_eq(num(a, "energy_at_entry"), 0.9, 1e-12);
  cr_assert_float_eq(num(a, "energy_at_exit"), 0.9, 1e-12);

  cr_assert_eq(integer(b, "entry_id"), 8);
  cr_assert_eq(integer(b, "tir_count"), 3);
  cr_assert_not(json_object_get_boolean(get(b, "escaped")));
  cr_assert_null(get(b, "exit_type"));
  cr_assert_float_eq(num(b, "energy_at_entry"), 0.8, 1e-12);
  cr_assert_float_eq(num(b, "energy_at_exit"), 0.6, 1e-12);
  json_object_put(r);

  /* With chains of 1 too: the branch 11 is reported once, on its own,
   * after the chains of 3. */
  r = opx_tir_traps(&t, 0);
  cr_assert_eq(json_object_array_length(r), 4);
  cr_assert_eq(integer(json_object_array_get_idx(r, 2), "entry_id"), 11);
  cr_assert_eq(integer(json_object_array_get_idx(r, 2), "tir_count"), 1);
  cr_assert_eq(integer(json_object_array_get_idx(r, 3), "entry_id"), 12);
  json_object_put(r);
  r = opx_tir_traps(&t, 4);
  cr_assert_eq(json_object_array_length(r), 0);
  json_object_put(r);
  opx_tree_free(&t);
}

/* A root going in direction (dx, dy) on the picture, and a leaf child. */
static void ray(atl_op_segment *s, long i, double dx, double dy, double e) {
  s[i] = mk(ATL_OP_SOURCE, -1, 1, 1, 0);
  s[i].p1.x = 10;
  s[i].p1.y = 20;
  s[i].p2.x = 10 + dx;
  s[i].p2.y = 20 + dy;
  s[i + 1] = mk(ATL_OP_REFRACT, i, e / 2, e / 2, -1);
  /* The leaf's own direction must not count. */
  s[i + 1].p2.x = -5;
  s[i + 1].p2.y = -5;
}

Test(lineage, angular_histogram) {
  atl_op_segment s[10];
  ray(s, 0, 0, -3, 0.25); /* up the picture: +90 */
  ray(s, 2, 4, 0, 0.5);   /* +x: 0 */
  ray(s, 4, 0, 2, 0.125); /* down the picture: -90 */
  ray(s, 6, -1, 0, 1.0);  /* -x: 180, the last bin */
  ray(s, 8, 1, -1, 2.0);  /* up and right: +45 */
  opx_tree_t t;
  cr_assert_eq(opx_tree_build(s, 10, &t), 0);
  json_object *a = opx_angular_distribution(&t, 4);
  /* Bins [-180, -90), [-90, 0), [0, 90), [90, 180]. */
  static const double edges[5] = {-180, -90, 0, 90, 180};
  static const double centers[4] = {-135, -45, 45, 135};
  static const double counts[4] = {0, 0.125, 2.5, 1.25};
  static const long rays[4] = {0, 1, 2, 2};
  cr_assert_eq(json_object_array_length(get(a, "bin_edges_deg")), 5);
  for (size_t k = 0; k < 5; k++)
    cr_assert_float_eq(json_object_get_double(json_object_array_get_idx(
                           get(a, "bin_edges_deg"), k)),
                       edges[k], 1e-12);
  for (size_t k = 0; k < 4; k++) {
    cr_assert_float_eq(json_object_get_double(json_object_array_get_idx(
                           get(a, "bin_centers_deg"), k)),
                       centers[k], 1e-12);
    cr_assert_float_eq(
        json_object_get_double(json_object_array_get_idx(get(a, "counts"), k)),
        counts[k], 1e-12, "bin %zu", k);
    cr_assert_eq(at_int(get(a, "rays"), k), rays[k], "bin %zu", k);
  }
  cr_assert_float_eq(num(a, "total"), 3.875, 1e-12);
  cr_assert_eq(integer(a, "leaf_count"), 5);
  cr_assert_float_eq(num(a, "peak_bin_center_deg"), 45, 1e-12);
  cr_assert_float_eq(num(a, "peak_value"), 2.5, 1e-12);
  cr_assert_float_eq(num(a, "bin_width_deg"), 90, 1e-12);
  json_object_put(a);

  /* 36 bins: +90 falls in [90, 100), bin 27; +45 in [40, 50), bin 22. */
  a = opx_angular_distribution(&t, 36);
  cr_assert_eq(at_int(get(a, "rays"), 27), 1);
  cr_assert_eq(at_int(get(a, "rays"), 22), 1);
  cr_assert_eq(at_int(get(a, "rays"), 9), 1);  /* -90 */
  cr_assert_eq(at_int(get(a, "rays"), 35), 1); /* 180 */
  json_object_put(a);
  /* n_bins is clamped. */
  a = opx_angular_distribution(&t, 0);
  cr_assert_eq(integer(a, "n_bins"), 1);
  cr_assert_float_eq(num(a, "total"), 3.875, 1e-12);
  json_object_put(a);
  a = opx_angular_distribution(&t, INT_MAX);
  cr_assert_eq(integer(a, "n_bins"), OPX_BINS_MAX);
  json_object_put(a);
  opx_tree_free(&t);
}

Test(lineage, energy_violations_and_balance) {
  /* 0 (1.0) -> 1 (0.6, escapes), 2 (0.6, absorbed): ratio 1.2. 3 (1e-13)
   * -> 4 (1.0): too weak a parent to check. 5 (1.0) -> 6 (0.5 absorbed):
   * fine. */
  atl_op_segment s[7] = {
      mk(ATL_OP_SOURCE, -1, 0.5, 0.5, 0),  mk(ATL_OP_REFLECT, 0, 0.3, 0.3, -1),
      mk(ATL_OP_REFRACT, 0, 0.3, 0.3, 2),  mk(ATL_OP_SOURCE, -1, 1e-13, 0, 0),
      mk(ATL_OP_REFRACT, 3, 0.5, 0.5, -1), mk(ATL_OP_SOURCE, -1, 0.5, 0.5, 0),
      mk(ATL_OP_REFRACT, 5, 0.25, 0.25, 1)};
  opx_tree_t t;
  cr_assert_eq(opx_tree_build(s, 7, &t), 0);
  json_object *c = opx_energy_check(&t);
  cr_assert_eq(integer(c, "total_checks"), 2);
  cr_assert_not(json_object_get_boolean(get(c, "is_valid")));
  cr_assert_eq(integer(c, "violation_count"), 1);
  json_object *v = json_object_array_get_idx(get(c, "violations"), 0);
  cr_assert_eq(integer(v, "parent_id"), 0);
  cr_assert_float_eq(num(v, "parent_energy"), 1.0, 1e-12);
  cr_assert_float_eq(num(v, "child_energy_sum"), 1.2, 1e-12);
  cr_assert_float_eq(num(v, "excess_ratio"), 1.2, 1e-12);
  cr_assert_str_eq(at_str(get(v, "child_types"), 0), "reflect");
  cr_assert_str_eq(at_str(get(v, "child_types"), 1), "refract");
  cr_assert_float_eq(num(c, "max_excess_ratio"), 1.2, 1e-12);
  cr_assert_float_eq(num(c, "emitted"), 2.0 + 1e-13, 1e-12);
  cr_assert_float_eq(num(c, "escaped"), 0.6 + 1.0, 1e-12);
  cr_assert_float_eq(num(c, "absorbed"), 0.6 + 0.5, 1e-12);
  cr_assert_float_eq(num(c, "unaccounted"), 2.0 - 1.6 - 1.1, 1e-12);
  json_object_put(c);
  opx_tree_free(&t);
}

/* 25 violations: the 20 worst listed, worst first, all counted. */
Test(lineage, many_violations) {
  atl_op_segment s[50];
  for (int k = 0; k < 25; k++) {
    s[2 * k] = mk(ATL_OP_SOURCE, -1, 0.5, 0.5, 0);
    /* Ratios 1.01 .. 1.25, growing with k, except two equal ones. */
    double e = 1.0 + 0.01 * (k == 24 ? 23 : k) + 0.01;
    s[2 * k + 1] = mk(ATL_OP_REFRACT, 2 * k, e / 2, e / 2, -1);
  }
  opx_tree_t t;
  cr_assert_eq(opx_tree_build(s, 50, &t), 0);
  json_object *c = opx_energy_check(&t);
  cr_assert_eq(integer(c, "violation_count"), 25);
  json_object *va = get(c, "violations");
  cr_assert_eq(json_object_array_length(va), OPX_VIOLATIONS_SHOWN);
  /* k = 23 and 24 tie at 1.24: index order, then 22, 21, ... */
  cr_assert_eq(integer(json_object_array_get_idx(va, 0), "parent_id"), 46);
  cr_assert_eq(integer(json_object_array_get_idx(va, 1), "parent_id"), 48);
  cr_assert_eq(integer(json_object_array_get_idx(va, 2), "parent_id"), 44);
  cr_assert_eq(integer(json_object_array_get_idx(va, 19), "parent_id"), 10);
  cr_assert_float_eq(num(c, "max_excess_ratio"), 1.24, 1e-9);
  json_object_put(c);
  opx_tree_free(&t);
}

Test(lineage, ties_and_odd_parents) {
  /* Equal leaves keep their index order; a parent out of range (7, -3)
   * or not earlier (segment 4 names 4, segment 5 names 6) makes a root,
   * while 6 is 5's child. */
  atl_op_segment s[7] = {mk(ATL_OP_SOURCE, -1, 0.5, 0.5, 0),
                         mk(ATL_OP_REFRACT, 0, 0.25, 0.25, -1),
                         mk(ATL_OP_REFRACT, 7, 0.25, 0.25, -1),
                         mk(ATL_OP_REFLECT, -3, 0.25, 0.25, -1),
                         mk(ATL_OP_REFLECT, 4, 0.25, 0.25, -1),
                         mk(ATL_OP_REFLECT, 6, 0.1, 0.1, -1),
                         mk(ATL_OP_REFRACT, 5, 0.25, 0.25, -1)};
  opx_tree_t t;
  cr_assert_eq(opx_tree_build(s, 7, &t), 0);
  json_object *st = opx_lineage_stats(&t);
  cr_assert_eq(integer(st, "root_count"), 5); /* 0, 2, 3, 4, 5 */
  cr_assert_eq(integer(st, "leaf_count"), 5); /* 1, 2, 3, 4, 6 */
  cr_assert_eq(integer(st, "max_depth"), 1);
  json_object_put(st);
  json_object *r = opx_rank_paths(&t, 10);
  static const long order[5] = {1, 2, 3, 4, 6};
  cr_assert_eq(json_object_array_length(r), 5);
  for (size_t k = 0; k < 5; k++)
    cr_assert_eq(integer(json_object_array_get_idx(r, k), "id"), order[k]);
  json_object *last = json_object_array_get_idx(r, 4);
  cr_assert_eq(integer(last, "path_length"), 2);
  cr_assert_eq(at_int(get(last, "path_ids"), 0), 5);
  cr_assert_eq(integer(json_object_array_get_idx(r, 1), "path_length"), 1);
  json_object_put(r);
  opx_tree_free(&t);

  /* No segments at all. */
  cr_assert_eq(opx_tree_build(s, 0, &t), 0);
  r = opx_rank_paths(&t, 10);
  cr_assert_eq(json_object_array_length(r), 0);
  json_object_put(r);
  json_object *a = opx_angular_distribution(&t, 36);
  cr_assert_null(get(a, "peak_bin_center_deg"));
  json_object_put(a);
  opx_tree_free(&t);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A ray trapped for a million reflections: every analysis is a loop, so
 * the stack stays flat, and each is linear or n log n. */
Test(lineage, million_segment_chain) {
  const long n = 1000000;
  atl_op_segment *s = malloc((size_t)n * sizeof(*s));
  cr_assert_not_null(s);
  s[0] = mk(ATL_OP_SOURCE, -1, 0.5, 0.5, 0);
  for (long i = 1; i < n - 1; i++) {
    s[i] = mk(ATL_OP_TIR, i - 1, 0.5, 0.5, 0);
    s[i].tir_count = (int)i;
  }
  s[n - 1] = mk(ATL_OP_REFRACT, n - 2, 0.4, 0.4, -1);
  double t0 = now_s();
  opx_tree_t t;
  cr_assert_eq(opx_tree_build(s, n, &t), 0);
  json_object *r = opx_rank_paths(&t, 10), *c = opx_energy_check(&t),
              *x = opx_tir_traps(&t, 2), *a = opx_angular_distribution(&t, 36),
              *st = opx_lineage_stats(&t);
  double dt = now_s() - t0;
  /* Valgrind runs every unit test too, some 50 times slower. */
  const char *pre = getenv("LD_PRELOAD");
  if (pre == NULL || strstr(pre, "vgpreload") == NULL)
    cr_assert_lt(dt, 1.0, "took %.3f s", dt);

  cr_assert_eq(json_object_array_length(r), 1);
  json_object *p = json_object_array_get_idx(r, 0);
  cr_assert_eq(integer(p, "path_length"), n);
  cr_assert_eq(integer(p, "path_elided"), n - OPX_PATH_SHOWN);
  json_object *ids = get(p, "path_ids"), *types = get(p, "path_types");
  cr_assert_eq(json_object_array_length(ids), OPX_PATH_SHOWN);
  cr_assert_eq(at_int(ids, 0), 0);
  cr_assert_eq(at_int(ids, OPX_PATH_SHOWN / 2 - 1), OPX_PATH_SHOWN / 2 - 1);
  cr_assert_eq(at_int(ids, OPX_PATH_SHOWN / 2), n - OPX_PATH_SHOWN / 2);
  cr_assert_eq(at_int(ids, OPX_PATH_SHOWN - 1), n - 1);
  cr_assert_str_eq(at_str(types, 0), "source");
  cr_assert_str_eq(at_str(types, 1), "tir");
  cr_assert_str_eq(at_str(types, OPX_PATH_SHOWN - 1), "refract");

  cr_assert_eq(integer(c, "total_checks"), n - 1);
  cr_assert(json_object_get_boolean(get(c, "is_valid")));
  cr_assert_float_eq(num(c, "escaped"), 0.8, 1e-12);

  cr_assert_eq(json_object_array_length(x), 1);
  json_object *chain = json_object_array_get_idx(x, 0);
  cr_assert_eq(integer(chain, "entry_id"), 1);
  cr_assert_eq(integer(chain, "tir_count"), n - 2);
  cr_assert_eq(integer(chain, "tir_chain_elided"), n - 2 - OPX_PATH_SHOWN);
  cr_assert_eq(integer(chain, "max_tir_count_in_lineage"), n - 2);
  cr_assert_str_eq(json_object_get_string(get(chain, "exit_type")), "refract");

  cr_assert_eq(integer(a, "leaf_count"), 1);
  cr_assert_eq(integer(st, "max_depth"), n - 1);
  json_object_put(r);
  json_object_put(c);
  json_object_put(x);
  json_object_put(a);
  json_object_put(st);
  opx_tree_free(&t);
  free(s);
}
