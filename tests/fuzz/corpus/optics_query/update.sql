UPDATE ray_edge_crossing_stored SET angle_to_normal = 0
