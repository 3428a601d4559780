/* The ray database's tables, described once: the same table creates them
 * (opx_db.c) and answers describe_schema, so the description cannot drift
 * from the schema. */
#include <stddef.h>

#include "opx_db_int.h"

#define END                                                                    \
  { NULL, NULL, NULL, NULL }

static const opx_db_col rays_cols[] = {
    {"id", "INTEGER PRIMARY KEY",
     "the segment's number, in simulation order (0 first)", NULL},
    {"parent_id", "INTEGER",
     "the segment this one continues (rays.id); NULL for a ray a light "
     "source emitted",
     NULL},
    {"depth", "INTEGER",
     "interactions between the light source and this segment (0 for a "
     "source ray)",
     NULL},
    {"interaction_type", "TEXT",
     "how the segment was made: 'source', 'reflect', 'refract', 'tir' "
     "(total internal reflection) or 'pass' (through a detector)",
     NULL},
    {"source_id", "INTEGER",
     "the light source the segment's light comes from (objects.id)", NULL},
    {"source_name", "TEXT", "that source's objects.display_name", NULL},
    {"end_object_id", "INTEGER",
     "the object the segment's end point is on (objects.id); NULL when the "
     "ray left the scene",
     NULL},
    {"end_object_name", "TEXT",
     "that object's display_name; NULL when the ray left the scene", NULL},
    {"p1_x", "REAL", "start point x, scene units (x grows to the right)", NULL},
    {"p1_y", "REAL", "start point y, scene units (y grows DOWNWARD)", NULL},
    {"p2_x", "REAL",
     "end point x; for a ray that left the scene (end_object_id NULL), the "
     "point 1 unit along it, so p2 - p1 is its unit direction",
     NULL},
    {"p2_y", "REAL", "end point y (y grows downward); see p2_x", NULL},
    {"midpoint_x", "REAL",
     "(p1_x + p2_x) / 2; NULL for a ray that left the scene", NULL},
    {"midpoint_y", "REAL", "(p1_y + p2_y) / 2; NULL as midpoint_x", NULL},
    {"length", "REAL",
     "|p2 - p1|, scene units; NULL for a ray that left the scene (it is "
     "unbounded)",
     NULL},
    {"brightness_s", "REAL",
     "power in s polarisation (a source gives each ray half its "
     "brightness in s, half in p)",
     NULL},
    {"brightness_p", "REAL", "power in p polarisation", NULL},
    {"brightness_total", "REAL", "brightness_s + brightness_p", NULL},
    {"degree_of_polarization", "REAL",
     "|p - s| / (p + s), 0 unpolarised to 1 fully polarised; 0 when the "
     "total is at most 1e-10",
     NULL},
    {"polarization_ratio", "REAL",
     "brightness_p / brightness_s; NULL when s is at most 1e-10", NULL},
    {"wavelength", "REAL",
     "nm; NULL unless the scene simulates colours (white light)", NULL},
    {"gap", "INTEGER",
     "1 when the ray is not drawn joined to the one before it (Ray Optics "
     "Simulation's gap: set on a source's first ray and kept by the rays it "
     "makes), else 0",
     NULL},
    {"is_tir_result", "INTEGER",
     "1 when the segment was made by total internal reflection", NULL},
    {"caused_tir", "INTEGER",
     "1 when the segment's end point totally internally reflected it", NULL},
    {"tir_count", "INTEGER",
     "total internal reflections along the lineage up to this segment", NULL},
    {"is_grazing_result__angle", "INTEGER",
     "1 when the refraction that made this segment had an incidence angle "
     "of 85 degrees or more",
     NULL},
    {"caused_grazing__angle", "INTEGER",
     "1 when the refraction at this segment's end point met that criterion",
     NULL},
    {"is_grazing_result__polar", "INTEGER",
     "1 when the refraction that made this segment transmitted p at least "
     "10 times as strongly as s",
     NULL},
    {"caused_grazing__polar", "INTEGER",
     "1 when the refraction at this segment's end point met that criterion",
     NULL},
    {"is_grazing_result__transm", "INTEGER",
     "1 when the refraction that made this segment transmitted less than "
     "10 % of the power",
     NULL},
    {"caused_grazing__transm", "INTEGER",
     "1 when the refraction at this segment's end point met that criterion",
     NULL},

    END};

static const opx_db_col objects_cols[] = {
    {"id", "INTEGER PRIMARY KEY",
     "the object's number, its place among the scene's objects", NULL},
    {"name", "TEXT", "the name the agent gave it; NULL when it has none", NULL},
    {"display_name", "TEXT",
     "the name, else '<Type> <index in the scene's objs>'; the other "
     "tables' object_name",
     NULL},
    {"type", "TEXT", "the object's type, e.g. 'Glass', 'Mirror', 'Beam'", NULL},
    {"family", "TEXT",
     "'source', 'mirror', 'glass', 'lens', 'blocker', 'grating', "
     "'detector', 'surface' or 'other'",
     NULL},
    {"ref_index", "REAL",
     "refractive index (Cauchy A) of a glass; NULL for other objects", NULL},
    {"edge_count", "INTEGER", "the object's edges (rows in edges)", NULL},
    {"centroid_x", "REAL",
     "area centroid x of a closed outline, else the edges' vertex average",
     NULL},
    {"centroid_y", "REAL", "centroid y (y grows downward)", NULL},
    {"area", "REAL",
     "enclosed area, square scene units (arcs exact); 0 for open objects",
     NULL},
    {"perimeter", "REAL", "total length of the edges (arcs exact)", NULL},
    END};

static const opx_db_col edges_cols[] = {
    {"object_id", "INTEGER", "the object (objects.id)", NULL},
    {"object_name", "TEXT", "the object's display_name", NULL},
    {"edge_index", "INTEGER",
     "the edge's index within its object, 0 first, in outline order", NULL},
    {"short_label", "TEXT",
     "the edge's label: a compass direction of its outward normal on the "
     "picture (N is up, -y; E is right), e.g. 'N', 'SE'; or its index",
     NULL},
    {"long_label", "TEXT", "the label spelled out, e.g. 'North Edge'", NULL},
    {"edge_type", "TEXT", "'line', 'arc' (circular) or 'curve' (sampled)",
     NULL},
    {"p1_x", "REAL", "the edge's start x", NULL},
    {"p1_y", "REAL", "the edge's start y (y grows downward)", NULL},
    {"p2_x", "REAL", "the edge's end x", NULL},
    {"p2_y", "REAL", "the edge's end y", NULL},
    {"midpoint_x", "REAL",
     "x of the point halfway along the edge itself (on an arc, not the "
     "chord's middle)",
     NULL},
    {"midpoint_y", "REAL", "y of that point", NULL},
    {"length", "REAL", "length along the edge (arcs and curves exactly)", NULL},
    END};

static const opx_db_col membership_cols[] = {
    {"ray_id", "INTEGER", "the segment (rays.id)", NULL},
    {"object_id", "INTEGER",
     "an object whose region (a glass, a circular blocker) strictly "
     "contains the segment's midpoint (objects.id; for a ray that left the "
     "scene, a point a thousandth of the scene's size along it); one row "
     "per pair",
     NULL},
    {"object_name", "TEXT", "the object's display_name",
     "opx_object_name(object_id)"},
    END};

static const opx_db_col crossing_cols[] = {
    {"ray_id", "INTEGER",
     "the segment (rays.id); a segment ends where it meets a surface and "
     "its children start there, so both appear for the same edge: join "
     "rays.interaction_type or compare p1/p2 to tell them apart",
     NULL},
    {"object_id", "INTEGER", "the edge's object (objects.id)", NULL},
    {"object_name", "TEXT", "the object's display_name",
     "opx_object_name(object_id)"},
    {"edge_index", "INTEGER", "the edge (edges.edge_index of that object)",
     NULL},
    {"edge_short_label", "TEXT", "the edge's short_label",
     "opx_edge_label(object_id, edge_index)"},
    {"angle_to_normal", "REAL",
     "degrees between the segment and the edge's normal where it touches "
     "the edge: 0 head-on, 90 grazing (either direction of travel)",
     NULL},
    END};

const opx_db_table opx_db_tables[OPX_DB_NTABLES] = {
    {"rays",
     "one row per ray segment the simulation traced, in simulation order; "
     "a segment runs from where a ray starts or meets a surface to the next "
     "surface, or leaves the scene",
     rays_cols, ")"},
    {"objects", "one row per scene object (sources, glasses, mirrors, ...)",
     objects_cols, ")"},
    {"edges",
     "one row per edge of every object: glass sides, mirror and blocker "
     "lines, arcs",
     edges_cols, ", PRIMARY KEY (object_id, edge_index))"},
    {"ray_object_membership",
     "which segments lie inside which objects: the segment's midpoint is "
     "strictly inside the object's region (points on the boundary are "
     "not)",
     membership_cols, ", PRIMARY KEY (object_id, ray_id)) WITHOUT ROWID"},
    {"ray_edge_crossing",
     "which segments touch which object edges (at their start or end "
     "point), with the angle to the edge's normal",
     crossing_cols,
     ", PRIMARY KEY (object_id, edge_index, ray_id)) WITHOUT ROWID"},
};

int opx_db_ncols(const opx_db_table *t) {
  int n = 0;
  while (t->cols[n].name != NULL)
    n++;
  return n;
}

int opx_db_nstored(const opx_db_table *t) {
  int n = 0;
  for (const opx_db_col *c = t->cols; c->name != NULL; c++)
    n += c->gen == NULL;
  return n;
}

/* The type as describe_schema shows it: the column's SQL type without
 * its constraint ("INTEGER PRIMARY KEY" is an INTEGER). */
static json_object *short_type(const char *type) {
  const char *sp = type;
  while (*sp != '\0' && *sp != ' ')
    sp++;
  return json_object_new_string_len(type, (int)(sp - type));
}

json_object *opx_db_describe(opx_db_t *db) {
  json_object *tables = json_object_new_object();
  for (int i = 0; i < OPX_DB_NTABLES; i++) {
    const opx_db_table *t = &opx_db_tables[i];
    json_object *cols = json_object_new_array();
    for (const opx_db_col *c = t->cols; c->name != NULL; c++) {
      json_object *col = json_object_new_object();
      json_object_object_add(col, "name", json_object_new_string(c->name));
      json_object_object_add(col, "type", short_type(c->type));
      json_object_object_add(col, "description",
                             json_object_new_string(c->desc));
      json_object_array_add(cols, col);
    }
    json_object *tj = json_object_new_object();
    json_object_object_add(tj, "description", json_object_new_string(t->desc));
    json_object_object_add(tj, "columns", cols);
    json_object_object_add(tj, "row_count",
                           json_object_new_int64(db->counts[i]));
    json_object_object_add(tables, t->name, tj);
  }
  json_object *out = json_object_new_object();
  json_object_object_add(out, "tables", tables);
  json_object_object_add(
      out, "note",
      json_object_new_string(
          "query_rays runs one read-only SELECT (WITH and subqueries too) "
          "over these tables; results are capped at 200 rows: use LIMIT, "
          "aggregates and narrow WHERE clauses. rays is a virtual table "
          "over the simulation's segments (lookups by id and by parent_id "
          "are direct); the join tables are views over *_stored tables"));
  return out;
}
