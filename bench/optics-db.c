/* The ray database's figures (bench/README.md, optics-db): a scene of about
 * a million segments (a PointSource into 20 glass blocks on a ring, the
 * optics benchmark's "million" scene) simulated once, then
 *   - opx_db_build timed over ROUNDS builds (median, min-max), each
 *     database freed before the next;
 *   - the process's peak RSS (getrusage), and what the simulation alone
 *     had reached before the first build;
 *   - query_rays' latency, p50 and p90 over REPS runs of each typical
 *     query of the product document (seed 002, Phase 1).
 * Target: a million segments built in <= 1.5 s, peak RSS <= 1 GB.
 *
 *   bench/optics-db [ROUNDS [REPS]] */
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "benchlib.h"
#include "opx_db.h"
#include "opx_run.h"

static double now_ms(void) {
  return (double)bench_now_ns() / 1e6;
}

static long peak_rss_mb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The q-quantile of n sorted values (nearest rank). */
static double quantile(const double *v, int n, double q) {
  int k = (int)ceil(q * n) - 1;
  return v[k < 0 ? 0 : k];
}

/* The optics benchmark's "million" scene (bench/run-optics.sh). */
static json_object *scene(void) {
  json_object *objs = json_object_new_array();
  json_object *src = json_object_new_object();
  json_object_object_add(src, "type", json_object_new_string("PointSource"));
  json_object_object_add(src, "x", json_object_new_double(0));
  json_object_object_add(src, "y", json_object_new_double(0));
  json_object_object_add(src, "brightness", json_object_new_double(1));
  json_object_array_add(objs, src);
  for (int k = 0; k < 20; k++) {
    double a = 2 * M_PI * k / 20, ux = cos(a), uy = sin(a), vx = -uy, vy = ux;
    double cx = 300 * ux, cy = 300 * uy;
    double s[4][2] = {{-20, -40}, {20, -40}, {20, 40}, {-20, 40}};
    json_object *path = json_object_new_array();
    for (int i = 0; i < 4; i++) {
      json_object *p = json_object_new_object();
      json_object_object_add(
          p, "x", json_object_new_double(cx + s[i][0] * ux + s[i][1] * vx));
      json_object_object_add(
          p, "y", json_object_new_double(cy + s[i][0] * uy + s[i][1] * vy));
      json_object_object_add(p, "arc", json_object_new_boolean(0));
      json_object_array_add(path, p);
    }
    json_object *g = json_object_new_object();
    json_object_object_add(g, "type", json_object_new_string("Glass"));
    json_object_object_add(g, "path", path);
    json_object_object_add(g, "refIndex", json_object_new_double(1.5));
    json_object_array_add(objs, g);
  }
  json_object *doc = json_object_new_object();
  json_object_object_add(doc, "version", json_object_new_int(5));
  json_object_object_add(doc, "rayModeDensity",
                         json_object_new_double(666.667));
  json_object_object_add(doc, "objs", objs);
  return doc;
}

static const struct {
  const char *name, *sql;
} queries[] = {
    {"count by glass",
     "SELECT object_name, COUNT(*), AVG(brightness_total) FROM "
     "ray_object_membership m JOIN rays r ON r.id = m.ray_id GROUP BY "
     "object_name"},
    {"crossings of an edge",
     "SELECT c.ray_id, r.interaction_type, c.angle_to_normal FROM "
     "ray_edge_crossing c JOIN rays r ON r.id = c.ray_id WHERE "
     "c.object_id = 3 "
     "AND c.edge_index = 1 ORDER BY c.angle_to_normal DESC LIMIT 20"},
    {"top 10 by brightness",
     "SELECT id, brightness_total FROM rays ORDER BY brightness_total DESC "
     "LIMIT 10"},
    {"TIR filter",
     "SELECT id, tir_count, brightness_total FROM rays WHERE is_tir_result = "
     "1 AND tir_count >= 2 LIMIT 50"},
    {"children of a ray", "SELECT * FROM rays WHERE parent_id = 400000"},
};

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 5,
      reps = argc > 2 ? atoi(argv[2]) : 10;
  if (rounds < 1 || reps < 1 || rounds > 100 || reps > 1000) {
    fprintf(stderr, "usage: optics-db [ROUNDS [REPS]]\n");
    return 2;
  }
  json_object *doc = scene();
  opx_run_t *run;
  char *err = NULL;
  double t0 = now_ms();
  if (opx_run_build(doc, 10000000, &run, &err) != 0) {
    fprintf(stderr, "optics-db: %s\n", err);
    return 2;
  }
  json_object_put(doc);
  printf("scene: %ld segments, simulated in %.0f ms; peak RSS %ld MB\n",
         run->sim->nsegs, now_ms() - t0, peak_rss_mb());
  double *build = calloc((size_t)rounds, sizeof(double));
  opx_db_t *db = NULL;
  for (int r = 0; r < rounds; r++) {
    opx_db_free(db);
    t0 = now_ms();
    if (opx_db_build(run, &db, &err) != 0) {
      fprintf(stderr, "optics-db: %s\n", err);
      return 2;
    }
    build[r] = now_ms() - t0;
    printf("build round %d: %.0f ms\n", r + 1, build[r]);
  }
  qsort(build, (size_t)rounds, sizeof(double), cmp);
  printf("opx_db_build: %.0f ms median (%.0f-%.0f) over %d rounds; peak RSS "
         "%ld MB\n",
         quantile(build, rounds, 0.5), build[0], build[rounds - 1], rounds,
         peak_rss_mb());
  json_object *d = opx_db_describe(db);
  json_object_object_foreach(json_object_object_get(d, "tables"), name, t) {
    printf("  %s: %ld rows\n", name,
           (long)json_object_get_int64(json_object_object_get(t, "row_count")));
  }
  json_object_put(d);
  double *lat = calloc((size_t)reps, sizeof(double));
  for (size_t q = 0; q < sizeof queries / sizeof *queries; q++) {
    long rows = 0;
    for (int r = 0; r < reps; r++) {
      json_object *res = NULL;
      t0 = now_ms();
      if (opx_db_query(db, queries[q].sql, 0, &res, &err) != 0) {
        fprintf(stderr, "optics-db: %s: %s\n", queries[q].name, err);
        return 2;
      }
      lat[r] = now_ms() - t0;
      rows =
          (long)json_object_get_int64(json_object_object_get(res, "row_count"));
      json_object_put(res);
    }
    qsort(lat, (size_t)reps, sizeof(double), cmp);
    printf("query_rays %-22s p50 %7.1f ms, p90 %7.1f ms (%ld rows)\n",
           queries[q].name, quantile(lat, reps, 0.5), quantile(lat, reps, 0.9),
           rows);
  }
  opx_db_free(db);
  opx_run_free(run);
  free(build);
  free(lat);
  return 0;
}
