/* opx: the lineage of a simulation's segments as a tree (each segment's
 * parent is the one it continues), and the analyses over it that the
 * agent's tools give: paths ranked by energy, the energy balance at every
 * branching point, chains of total internal reflection, and the angular
 * distribution of the light that reached the leaves.
 *
 * Ownership: an opx_tree_t keeps a pointer to the segments (the
 * simulation's, which must outlive it) and owns its index arrays. Every
 * function returning json_object gives a new object the caller puts. */
#ifndef ATL_OPX_LINEAGE_H
#define ATL_OPX_LINEAGE_H

#include <json-c/json.h>

#include "op.h"

typedef struct {
  const atl_op_segment *segs;
  long n;
  /* Children of segment i: child[first[i] .. first[i + 1]). */
  long *first, *child;
} opx_tree_t;

/* 0, or -ENOMEM. A parent index outside [0, n) (a parent the simulation
 * did not record) makes the segment a root; so does a parent index not
 * below the segment's own, as the simulator records a parent before its
 * children, which also rules out cycles in hand-made arrays. Children are
 * listed in registration (index) order. O(n). */
int opx_tree_build(const atl_op_segment *segs, long n, opx_tree_t *t);
void opx_tree_free(opx_tree_t *t);

/* The interaction type of a segment's kind: "source", "reflect",
 * "refract", "tir", "pass". */
const char *opx_kind_name(atl_op_kind k);

/* Limits that keep the answers small enough for an agent whatever the
 * simulation's size: a path or chain longer than OPX_PATH_SHOWN ids shows
 * its first and last OPX_PATH_SHOWN / 2 and says how many it left out;
 * top_n is clamped to [1, OPX_TOP_MAX], n_bins to [1, OPX_BINS_MAX]; at
 * most OPX_VIOLATIONS_SHOWN energy violations are listed. */
#define OPX_PATH_SHOWN 1000
#define OPX_TOP_MAX 1000
#define OPX_BINS_MAX 3600
#define OPX_VIOLATIONS_SHOWN 20

/* rank_paths_by_energy: an array of the top_n leaves by s + p (ties in
 * index order), each {id, energy, energy_s, energy_p, path_length,
 * path_types, path_ids} (root first), plus path_elided (the number of
 * middle entries left out of path_types and path_ids, 0 mostly). */
json_object *opx_rank_paths(const opx_tree_t *t, int top_n);
/* check_energy_conservation: {total_checks, violations, violation_count,
 * max_excess_ratio, is_valid, emitted, escaped, absorbed, unaccounted}.
 * A check is a parent with children and s + p >= 1e-12; it is violated
 * when its children carry more than 1 + 1e-6 times its energy. The
 * violations listed are the largest ratios, each {parent_id,
 * parent_energy, child_energy_sum, excess_ratio, child_types}. The
 * balance: emitted is the sources' segments' s + p, escaped the leaves'
 * that left the scene (hit_obj == -1), absorbed the other leaves', and
 * unaccounted = emitted - escaped - absorbed (rays the simulation dropped
 * as too weak or past its limits). */
json_object *opx_energy_check(const opx_tree_t *t);
/* detect_tir_traps: an array of chains of at least min_tir_count (at
 * least 1) consecutive TIR segments, longest first (ties in index order),
 * each {entry_id, tir_chain_ids, tir_chain_elided, tir_count,
 * max_tir_count_in_lineage, escaped, exit_type, energy_at_entry,
 * energy_at_exit}. A chain follows each segment's first TIR child; a TIR
 * segment that branches off a chain elsewhere starts its own (where
 * ray_tracing_shapely reported the first chain twice). */
json_object *opx_tir_traps(const opx_tree_t *t, int min_tir_count);
/* angular_distribution over n_bins (energy weighted): for every leaf, the
 * emission angle of its root segment, counter-clockwise on the picture
 * (y grows downward, so a ray going up the picture is at +90 degrees):
 * atan2(-(p2.y - p1.y), p2.x - p1.x), in (-180, 180]. Bins start at -180.
 * {convention, n_bins, bin_width_deg, bin_edges_deg, bin_centers_deg,
 * counts (energy per bin), rays (leaves per bin), total, leaf_count,
 * peak_bin_center_deg, peak_value} (the peak null without energy). */
json_object *opx_angular_distribution(const opx_tree_t *t, int n_bins);
/* The lineage's statistics (RayLineage.get_lineage_statistics):
 * {segment_count, root_count, leaf_count, max_depth (a root is at 0),
 * interaction_counts {kind: count}, branching_factor_avg (children per
 * segment that has any; 0 without)}. */
json_object *opx_lineage_stats(const opx_tree_t *t);

#endif
