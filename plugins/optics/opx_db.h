/* opx: the ray database: a run's segments, objects and edges as SQLite
 * tables the agent queries with read-only SQL (query_rays), and the
 * description of those tables (describe_schema).
 *
 * Tables (the ray_tracing_shapely schema, extended to every object type):
 *   rays                   one row per segment, in simulation order;
 *   objects                one row per scene object;
 *   edges                  one row per object edge, with its labels;
 *   ray_object_membership  (ray, object) when the ray's midpoint is
 *                          strictly inside the object's region;
 *   ray_edge_crossing      (ray, object, edge) when the segment touches
 *                          the edge (arcs and curves exactly), with the
 *                          angle to the edge's normal.
 *
 * Safety is SQLite's own, not keyword matching: queries run on a separate
 * read-only connection with an authorizer that allows only reading, a
 * progress handler that stops a query after its time limit, and limits
 * on the size of values; the result is capped in rows and bytes.
 *
 * Ownership: an opx_db_t owns its connections; opx_db_free() closes
 * them. Its rays table reads the run's segments, end objects and lineage
 * tree in place: free the database before the run (opx_run_free does). */
#ifndef ATL_OPX_DB_H
#define ATL_OPX_DB_H

#include <json-c/json.h>

#include "opx_run.h"

/* The defaults of query_rays. */
#define OPX_DB_MAX_ROWS 200
#define OPX_DB_TIME_LIMIT_MS 2000

/* Builds the database of run (its geometry and segments). 0, or a
 * negative errno with *err (malloc'd) saying why. */
int opx_db_build(const opx_run_t *run, opx_db_t **out, char **err);
void opx_db_free(opx_db_t *db);

/* Runs one read-only statement. max_rows caps the rows returned (a LIMIT
 * in the SQL is honoured as well). 0 and *result = {columns, rows,
 * row_count[, truncated, max_rows, note]}, or -EINVAL and *err (malloc'd)
 * with the message for the model: "SQL error: ...", "not allowed: ...",
 * "the query ran for more than 2 s ...". */
int opx_db_query(opx_db_t *db, const char *sql, int max_rows,
                 json_object **result, char **err);

/* describe_schema: {tables: {name: {description, columns: [{name, type,
 * description}], row_count}}}. A new object. */
json_object *opx_db_describe(opx_db_t *db);

/* The rays a WHERE clause over rays selects (render_optics highlights):
 * mask[i] = 1 for segment i selected (mask has one byte per segment,
 * zeroed by the caller); *count gets how many. 0, or -EINVAL with *err
 * as opx_db_query. */
int opx_db_select(opx_db_t *db, const char *where, unsigned char *mask,
                  long nsegs, long *count, char **err);

#endif
