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
 * did not record) makes the segment a root. */
int opx_tree_build(const atl_op_segment *segs, long n, opx_tree_t *t);
void opx_tree_free(opx_tree_t *t);

/* The interaction type of a segment's kind: "source", "reflect",
 * "refract", "tir", "pass". */
const char *opx_kind_name(atl_op_kind k);

/* rank_paths_by_energy: the top_n leaves by s + p, each {id, energy,
 * energy_s, energy_p, path_length, path_types, path_ids} (root first). */
json_object *opx_rank_paths(const opx_tree_t *t, int top_n);
/* check_energy_conservation. */
json_object *opx_energy_check(const opx_tree_t *t);
/* detect_tir_traps with chains of at least min_tir_count. */
json_object *opx_tir_traps(const opx_tree_t *t, int min_tir_count);
/* angular_distribution over n_bins (energy weighted). */
json_object *opx_angular_distribution(const opx_tree_t *t, int n_bins);

#endif
