/* The ray database's build (opx_db.h): a run's objects, edges and
 * segments as SQLite tables, with the geometric joins (which segments are
 * inside which objects, which touch which edges) computed beforehand.
 *
 * Where the data lives. The tables are written by writer connections to
 * named in-memory files of SQLite's memdb VFS ("file:/opx-...?vfs=memdb":
 * a name starting with '/' is shared by every connection of the process),
 * and queries run on one more connection to the same files opened
 * read-only; the writers close once the build is done, so the only
 * connection left cannot write. Why not the alternatives: a shared-cache
 * ":memory:" database shares one b-tree between its connections, read-only
 * flag included, and table locks couple them; sqlite3_serialize() of a
 * plain ":memory:" database copies every page, doubling the peak memory of
 * a million-row build. With memdb the file is the only copy of the data
 * and each connection keeps just a small page cache over it.
 *
 * Speed (bench/optics-db.c; a million segments is the target). SQLite's
 * cost is per row and per stored value, so:
 *   - the rays are not copied at all: "rays" is a virtual table over the
 *     simulation's segments (opx_db_rays.c), found by id and by parent
 *     without an index;
 *   - the geometric joins are computed on both cores, each thread half
 *     of the segments;
 *   - two files, written at once by two threads: "main" (objects, edges,
 *     the membership rows) and "joins" (the crossings, the largest table,
 *     attached to the reader as "joins"; its name needs no prefix);
 *   - the join tables' names are not stored: the tables are views over
 *     "<name>_stored" tables (opx_db_schema.c says which columns);
 *   - one transaction a file, journal and syncs off, large pages, rows
 *     bound with static strings and inserted sixteen a statement;
 *   - the join tables are keyed by object (and edge), then ray, and filled
 *     in that order: no index to build afterwards. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opx_db_int.h"

/* A segment inside an object, and a segment touching an edge. */
typedef struct {
  long ray;
  int obj;
} opx_memb;

typedef struct {
  long ray;
  int edge; /* into geom->edges */
  double angle;
} opx_cross;

/* The joins of segments [lo, hi), computed by one thread. */
typedef struct {
  const opx_run_t *run;
  long lo, hi;
  double tol, step;
  const int *regions; /* the objects with a region */
  int nregions;
  const unsigned char *touchable; /* per edge: rays interact with it */
  opx_memb *m;
  long nm, capm;
  opx_cross *c;
  long nc, capc;
  int rc;
} opx_join;

/* No index is built: the rays are a virtual table that finds a segment
 * by id and its children by the lineage tree (opx_db_rays.c), and the
 * join tables are keyed by object (and edge), then ray, which is how
 * queries find them ("rays inside X", "rays crossing edge E"), and are
 * filled in key order (sort_joins), cheaper than an index built after. */

double opx_db_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int grow(void **p, long *cap, long need, size_t size) {
  if (need <= *cap)
    return 0;
  long n = *cap > 0 ? *cap * 2 : 1024;
  while (n < need)
    n *= 2;
  void *q = realloc(*p, (size_t)n * size);
  if (q == NULL)
    return -ENOMEM;
  *p = q;
  *cap = n;
  return 0;
}

/* Adds edge as touched by ray, keeping a ray's crossings in edge order
 * (the table's key order: edges are grouped by object) and once each. */
static int add_cross(opx_join *j, long ray, int edge, atl_op_pt at,
                     atl_op_pt dir) {
  long k = j->nc;
  while (k > 0 && j->c[k - 1].ray == ray && j->c[k - 1].edge >= edge)
    if (j->c[--k].edge == edge)
      return 0; /* both ends on one edge: one row */
  if (grow((void **)&j->c, &j->capc, j->nc + 1, sizeof(*j->c)) != 0)
    return -ENOMEM;
  memmove(&j->c[k + 1], &j->c[k], sizeof(*j->c) * (size_t)(j->nc - k));
  double a = opx_geom_angle_to_normal(j->run->geom, edge, at, dir);
  j->c[k] = (opx_cross){ray, edge, a};
  j->nc++;
  return 0;
}

/* The edges at point p that rays interact with (not a source's line, nor
 * a drawing's), added as crossings of ray. */
static int cross_at(opx_join *j, long ray, atl_op_pt p, atl_op_pt dir) {
  int found[64];
  int n = opx_geom_edges_at(j->run->geom, p, j->tol, found, 64);
  if (n > 64)
    n = 64;
  for (int k = 0; k < n; k++)
    if (j->touchable[found[k]] && add_cross(j, ray, found[k], p, dir) != 0)
      return -ENOMEM;
  return 0;
}

static void *join_run(void *arg) {
  opx_join *j = arg;
  const opx_geom_t *g = j->run->geom;
  const atl_op_segment *segs = j->run->sim->segs;
  for (long i = j->lo; i < j->hi; i++) {
    const atl_op_segment *s = &segs[i];
    atl_op_pt dir = {s->p2.x - s->p1.x, s->p2.y - s->p1.y}, at;
    if (s->hit_obj >= 0)
      at = (atl_op_pt){(s->p1.x + s->p2.x) / 2, (s->p1.y + s->p2.y) / 2};
    else {
      /* A ray that left the scene has no midpoint: its membership is
       * that of a point a little way along it. */
      double l = hypot(dir.x, dir.y);
      double f = l > 0 ? j->step / l : 0;
      at = (atl_op_pt){s->p1.x + dir.x * f, s->p1.y + dir.y * f};
    }
    for (int k = 0; k < j->nregions; k++) {
      const opx_obj_t *o = &g->objs[j->regions[k]];
      if (o->outline.closed && !o->outline.half_plane &&
          (at.x < o->box[0] || at.y < o->box[1] || at.x > o->box[2] ||
           at.y > o->box[3]))
        continue;
      if (!opx_geom_contains(g, j->regions[k], at, j->tol))
        continue;
      if (grow((void **)&j->m, &j->capm, j->nm + 1, sizeof(*j->m)) != 0)
        goto oom;
      j->m[j->nm++] = (opx_memb){i, j->regions[k]};
    }
    if (cross_at(j, i, s->p1, dir) != 0 ||
        (s->hit_obj >= 0 && cross_at(j, i, s->p2, dir) != 0))
      goto oom;
  }
  return NULL;
oom:
  j->rc = -ENOMEM;
  return NULL;
}

/* The tolerance of "a segment's end is on an edge", relative to the
 * scene's size: far above the roundings of a hit point (about 1e-13 of
 * the coordinates), far below any feature a scene draws. */
#define OPX_DB_EDGE_TOL 1e-6

/* Orders the joins by object (and edge), then ray, keeping the ray order
 * of each object's (edge's) rows: a counting sort, as there are few
 * objects and edges and many rows. 0 or -ENOMEM. */
static int sort_joins(opx_join *j, int nobjs, int nedges) {
  long *at =
      calloc((size_t)(nobjs > nedges ? nobjs : nedges) + 1, sizeof(long));
  opx_memb *m = malloc(sizeof(*m) * (size_t)(j->nm + 1));
  opx_cross *c = malloc(sizeof(*c) * (size_t)(j->nc + 1));
  if (at == NULL || m == NULL || c == NULL) {
    free(at);
    free(m);
    free(c);
    return -ENOMEM;
  }
  for (long i = 0; i < j->nm; i++)
    at[j->m[i].obj + 1]++;
  for (int k = 0; k < nobjs; k++)
    at[k + 1] += at[k];
  for (long i = 0; i < j->nm; i++)
    m[at[j->m[i].obj]++] = j->m[i];
  memset(at, 0, sizeof(long) * (size_t)((nobjs > nedges ? nobjs : nedges) + 1));
  for (long i = 0; i < j->nc; i++)
    at[j->c[i].edge + 1]++;
  for (int k = 0; k < nedges; k++)
    at[k + 1] += at[k];
  for (long i = 0; i < j->nc; i++)
    c[at[j->c[i].edge]++] = j->c[i];
  free(at);
  free(j->m);
  free(j->c);
  j->m = m;
  j->c = c;
  return 0;
}

/* The scene's size (the diagonal of the box around its objects and the
 * segments' start points): the edge tolerance scales with it. */
static double scene_size(const opx_run_t *run) {
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
  for (int i = 0; i < run->geom->nobjs; i++) {
    const opx_obj_t *o = &run->geom->objs[i];
    if (o->nedges == 0)
      continue;
    lo[0] = fmin(lo[0], o->box[0]);
    lo[1] = fmin(lo[1], o->box[1]);
    hi[0] = fmax(hi[0], o->box[2]);
    hi[1] = fmax(hi[1], o->box[3]);
  }
  for (long i = 0; i < run->sim->nsegs; i++) {
    atl_op_pt p = run->sim->segs[i].p1;
    lo[0] = fmin(lo[0], p.x);
    lo[1] = fmin(lo[1], p.y);
    hi[0] = fmax(hi[0], p.x);
    hi[1] = fmax(hi[1], p.y);
  }
  double d = hypot(hi[0] - lo[0], hi[1] - lo[1]);
  return isfinite(d) && d > 0 ? d : 1;
}

static int fail_sql(sqlite3 *w, const char *what, char **err) {
  if (*err == NULL &&
      asprintf(err, "ray database: %s: %s", what, sqlite3_errmsg(w)) < 0)
    *err = NULL;
  return -EIO;
}

static int exec(sqlite3 *w, const char *sql, char **err) {
  if (sqlite3_exec(w, sql, NULL, NULL, NULL) != SQLITE_OK)
    return fail_sql(w, sql, err);
  return 0;
}

/* Rows go in by BATCH a statement (INSERT ... VALUES (...), (...), ...):
 * a statement's own cost (step, reset, its transaction checks) then
 * falls on a sixteenth of the rows. The rows past the last full batch go
 * one by one. */
#define BATCH 16

typedef struct {
  sqlite3 *w;
  sqlite3_stmt *one, *many;
  int ncols;
  long cut; /* rows before cut go in batches */
} opx_ins;

/* Creates table t and prepares its inserts of n rows. A table with
 * computed columns is a view over a table of the stored ones,
 * "<name>_stored": SQLite computes a generated column on every INSERT even
 * when it is VIRTUAL (twice the time of the million-row build), whereas a
 * view computes it only when a query reads it, and SQLite flattens the view
 * into the query, so lookups by id still use the table's keys. */
static int create(sqlite3 *w, const opx_db_table *t, long n, opx_ins *in,
                  char **err) {
  char sql[8192], view[8192], cols[2048], row[512];
  int gen = opx_db_nstored(t) < opx_db_ncols(t);
  const char *suffix = gen ? "_stored" : "";
  int ns = snprintf(sql, sizeof sql, "CREATE TABLE %s%s (", t->name, suffix);
  int nv = snprintf(view, sizeof view, "CREATE VIEW %s AS SELECT ", t->name);
  int nc = 0, nr = snprintf(row, sizeof row, "(");
  for (const opx_db_col *c = t->cols; c->name != NULL; c++) {
    int firstcol = c == t->cols;
    nv += snprintf(view + nv, sizeof view - (size_t)nv, "%s%s%s%s%s",
                   firstcol ? "" : ", ", c->gen ? "(" : "",
                   c->gen ? c->gen : c->name, c->gen ? ") AS " : "",
                   c->gen ? c->name : "");
    if (c->gen != NULL)
      continue;
    ns += snprintf(sql + ns, sizeof sql - (size_t)ns, "%s%s %s", nc ? ", " : "",
                   c->name, c->type);
    nr += snprintf(row + nr, sizeof row - (size_t)nr, "%s?", nc ? "," : "");
    nc += snprintf(cols + nc, sizeof cols - (size_t)nc, "%s%s", nc ? "," : "",
                   c->name);
  }
  snprintf(sql + ns, sizeof sql - (size_t)ns, "%s", t->constraints);
  snprintf(view + nv, sizeof view - (size_t)nv, " FROM %s_stored", t->name);
  snprintf(row + nr, sizeof row - (size_t)nr, ")");
  *in = (opx_ins){.w = w, .ncols = opx_db_nstored(t), .cut = n - n % BATCH};
  if (exec(w, sql, err) != 0 || (gen && exec(w, view, err) != 0))
    return -EIO;
  size_t cap = strlen(cols) + (strlen(row) + 1) * BATCH + 128;
  char *many = malloc(cap);
  if (many == NULL)
    return -ENOMEM;
  int nm = snprintf(many, cap, "INSERT INTO %s%s (%s) VALUES %s", t->name,
                    suffix, cols, row);
  int rc = sqlite3_prepare_v3(w, many, -1, SQLITE_PREPARE_PERSISTENT, &in->one,
                              NULL);
  for (int i = 1; i < BATCH; i++)
    nm += snprintf(many + nm, cap - (size_t)nm, ",%s", row);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v3(w, many, -1, SQLITE_PREPARE_PERSISTENT, &in->many,
                            NULL);
  free(many);
  return rc == SQLITE_OK ? 0 : fail_sql(w, "insert", err);
}

/* The statement row i is bound in, and its first parameter in *k. */
static sqlite3_stmt *row_of(const opx_ins *in, long i, int *k) {
  if (i < in->cut) {
    *k = (int)(i % BATCH) * in->ncols + 1;
    return in->many;
  }
  *k = 1;
  return in->one;
}

/* Row i is bound: runs its statement when that is complete. */
static int row_done(opx_ins *in, long i, char **err) {
  sqlite3_stmt *st = in->one;
  if (i < in->cut) {
    if (i % BATCH != BATCH - 1)
      return 0;
    st = in->many;
  }
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  return rc == SQLITE_DONE ? 0 : fail_sql(in->w, "insert", err);
}

static void ins_free(opx_ins *in) {
  sqlite3_finalize(in->one);
  sqlite3_finalize(in->many);
}

/* Binds doubles that may be NaN (NULL in the table) or infinite. */
static void bind_real(sqlite3_stmt *st, int k, double v) {
  if (isnan(v))
    sqlite3_bind_null(st, k);
  else
    sqlite3_bind_double(st, k, v);
}

static void bind_text(sqlite3_stmt *st, int k, const char *s) {
  if (s == NULL)
    sqlite3_bind_null(st, k);
  else
    sqlite3_bind_text(st, k, s, -1, SQLITE_STATIC);
}

static int insert_objects(opx_ins *in, const opx_geom_t *g, char **err) {
  for (int i = 0; i < g->nobjs; i++) {
    const opx_obj_t *o = &g->objs[i];
    int k;
    sqlite3_stmt *st = row_of(in, i, &k);
    sqlite3_bind_int(st, k++, i);
    bind_text(st, k++, o->name);
    bind_text(st, k++, o->display_name);
    bind_text(st, k++, o->type);
    bind_text(st, k++, opx_family_name(o->family));
    bind_real(st, k++, o->ref_index);
    sqlite3_bind_int(st, k++, o->nedges);
    bind_real(st, k++, o->centroid.x);
    bind_real(st, k++, o->centroid.y);
    bind_real(st, k++, o->area);
    bind_real(st, k++, o->perimeter);
    if (row_done(in, i, err) != 0)
      return -EIO;
  }
  return 0;
}

static int insert_edges(opx_ins *in, const opx_geom_t *g, char **err) {
  static const char *const edge_types[] = {"line", "arc", "curve"};
  for (int i = 0; i < g->nedges; i++) {
    const opx_edge_t *e = &g->edges[i];
    int k;
    sqlite3_stmt *st = row_of(in, i, &k);
    sqlite3_bind_int(st, k++, e->obj);
    bind_text(st, k++, g->objs[e->obj].display_name);
    sqlite3_bind_int(st, k++, e->index);
    bind_text(st, k++, e->short_label);
    bind_text(st, k++, e->long_label);
    bind_text(st, k++, edge_types[e->e->kind]);
    bind_real(st, k++, e->e->p1.x);
    bind_real(st, k++, e->e->p1.y);
    bind_real(st, k++, e->e->p2.x);
    bind_real(st, k++, e->e->p2.y);
    bind_real(st, k++, e->mid.x);
    bind_real(st, k++, e->mid.y);
    bind_real(st, k++, e->length);
    if (row_done(in, i, err) != 0)
      return -EIO;
  }
  return 0;
}

static int insert_membership(opx_ins *m, const opx_join *j, char **err) {
  for (long i = 0; i < j->nm; i++) {
    int k;
    sqlite3_stmt *st = row_of(m, i, &k);
    sqlite3_bind_int64(st, k, j->m[i].ray);
    sqlite3_bind_int(st, k + 1, j->m[i].obj);
    if (row_done(m, i, err) != 0)
      return -EIO;
  }
  return 0;
}

static int insert_crossing(opx_ins *c, const opx_geom_t *g, const opx_join *j,
                           char **err) {
  for (long i = 0; i < j->nc; i++) {
    const opx_edge_t *e = &g->edges[j->c[i].edge];
    int k;
    sqlite3_stmt *st = row_of(c, i, &k);
    sqlite3_bind_int64(st, k, j->c[i].ray);
    sqlite3_bind_int(st, k + 1, e->obj);
    sqlite3_bind_int(st, k + 2, e->index);
    bind_real(st, k + 3, j->c[i].angle);
    if (row_done(c, i, err) != 0)
      return -EIO;
  }
  return 0;
}

/* One of the two files the tables live in, and its writer. */
typedef struct {
  sqlite3 *w;
  char uri[96];
  opx_ins ins[OPX_DB_NTABLES]; /* its tables' */
  char *err;
  int rc;
} opx_file;

/* The parts of a build, freed together. */
typedef struct {
  const opx_run_t *run;
  opx_file main, joins;
  int *regions, *source_obj;
  unsigned char *touchable;
  opx_join job, half; /* the joins of the first and second half */
  pthread_t thread;
  int threaded;
} opx_build;

static void file_close(opx_file *f) {
  for (int i = 0; i < OPX_DB_NTABLES; i++)
    ins_free(&f->ins[i]);
  sqlite3_close(f->w);
  free(f->err);
}

static void build_free(opx_build *b) {
  if (b->threaded)
    pthread_join(b->thread, NULL);
  file_close(&b->main);
  file_close(&b->joins);
  free(b->regions);
  free(b->source_obj);
  free(b->touchable);
  free(b->job.m);
  free(b->job.c);
  free(b->half.m);
  free(b->half.c);
}

/* What the joins and the rows need from the geometry: the objects with a
 * region, the edges rays meet, each segment's source as an object. */
static int prepare(opx_build *b, const opx_run_t *run) {
  const opx_geom_t *g = run->geom;
  long n = run->sim->nsegs;
  b->regions = malloc(sizeof(int) * (size_t)(g->nobjs + 1));
  b->touchable = malloc((size_t)g->nedges + 1);
  b->source_obj = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  int *by_optical = malloc(sizeof(int) * (size_t)(run->scene->noptical + 1));
  if (!b->regions || !b->touchable || !b->source_obj || !by_optical) {
    free(by_optical);
    return -ENOMEM;
  }
  int nr = 0;
  for (int i = 0; i < g->nobjs; i++)
    if (g->objs[i].outline.closed || g->objs[i].outline.half_plane)
      b->regions[nr++] = i;
  for (int i = 0; i < g->nedges; i++) {
    opx_family_t f = g->objs[g->edges[i].obj].family;
    b->touchable[i] = f != OPX_SOURCE && f != OPX_OTHER;
  }
  for (int i = 0; i < run->scene->noptical; i++)
    by_optical[i] = opx_geom_index_of(g, run->scene->optical[i]);
  for (long i = 0; i < n; i++) {
    int s = run->sim->segs[i].source;
    b->source_obj[i] = s >= 0 && s < run->scene->noptical ? by_optical[s] : -1;
  }
  free(by_optical);
  double size = scene_size(run);
  b->job = (opx_join){.run = run,
                      .lo = 0,
                      .hi = n,
                      .tol = OPX_DB_EDGE_TOL * size,
                      .step = 1e-3 * size,
                      .regions = b->regions,
                      .nregions = nr,
                      .touchable = b->touchable};
  return 0;
}

/* Copies the names and labels the generated columns show. */
static int copy_names(opx_db_t *db, const opx_geom_t *g) {
  db->names = calloc((size_t)g->nobjs + 1, sizeof(char *));
  db->first_edge = calloc((size_t)g->nobjs + 1, sizeof(int));
  db->labels = calloc((size_t)g->nedges + 1, sizeof(*db->labels));
  if (!db->names || !db->first_edge || !db->labels)
    return -ENOMEM;
  db->nobjs = g->nobjs;
  for (int i = 0; i < g->nobjs; i++) {
    db->first_edge[i] = g->objs[i].first_edge;
    db->first_edge[i + 1] = g->objs[i].first_edge + g->objs[i].nedges;
    if ((db->names[i] = strdup(g->objs[i].display_name)) == NULL)
      return -ENOMEM;
  }
  for (int i = 0; i < g->nedges; i++)
    memcpy(db->labels[i], g->edges[i].short_label, sizeof *db->labels);
  return 0;
}

static atomic_ulong db_serial;

/* Opens f's writer on a new memdb file and starts its transaction. */
static int file_open(opx_file *f, opx_db_t *db, const char *suffix,
                     unsigned long serial) {
  snprintf(f->uri, sizeof f->uri, "file:/opx-%ld-%lu%s?vfs=memdb",
           (long)getpid(), serial, suffix);
  /* One thread uses a writer at a time: no mutex. */
  if (sqlite3_open_v2(f->uri, &f->w,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                          SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK)
    return fail_sql(f->w, "open", &f->err);
  if (opx_db_functions(f->w, db) != 0 || opx_db_rays_register(f->w, db) != 0)
    return fail_sql(f->w, "functions", &f->err);
  /* memdb caps a file at 1 GiB by default; some million segments need
   * more. */
  sqlite3_int64 limit = (sqlite3_int64)4 << 30;
  sqlite3_file_control(f->w, "main", SQLITE_FCNTL_SIZE_LIMIT, &limit);
  /* Large pages: fewer of them to fill and link for a million rows. */
  return exec(f->w,
              "PRAGMA page_size=65536; PRAGMA journal_mode=OFF; "
              "PRAGMA synchronous=OFF; PRAGMA cache_size=-16384; "
              "PRAGMA temp_store=MEMORY; BEGIN",
              &f->err);
}

/* Appends the second half's joins to the first's: the halves cover
 * consecutive rays, so the rows stay in ray order. 0 or -ENOMEM. */
static int merge_halves(opx_join *a, opx_join *b) {
  if (grow((void **)&a->m, &a->capm, a->nm + b->nm, sizeof(*a->m)) != 0 ||
      grow((void **)&a->c, &a->capc, a->nc + b->nc, sizeof(*a->c)) != 0)
    return -ENOMEM;
  if (b->nm > 0)
    memcpy(a->m + a->nm, b->m, sizeof(*a->m) * (size_t)b->nm);
  if (b->nc > 0)
    memcpy(a->c + a->nc, b->c, sizeof(*a->c) * (size_t)b->nc);
  a->nm += b->nm;
  a->nc += b->nc;
  return 0;
}

/* The crossings file: its table created and filled (a thread of its
 * own, while the main file gets the membership rows). */
static void *crossing_work(void *arg) {
  opx_build *b = arg;
  opx_file *f = &b->joins;
  if ((f->rc = create(f->w, &opx_db_tables[OPX_T_CROSSING], b->job.nc,
                      &f->ins[OPX_T_CROSSING], &f->err)) == 0 &&
      (f->rc = insert_crossing(&f->ins[OPX_T_CROSSING], b->run->geom, &b->job,
                               &f->err)) == 0)
    f->rc = exec(f->w, "COMMIT", &f->err);
  return NULL;
}

/* The main file: objects, edges and the membership rows. */
static int main_work(opx_build *b) {
  opx_file *f = &b->main;
  const opx_geom_t *g = b->run->geom;
  if (exec(f->w, "CREATE VIRTUAL TABLE rays USING opx_rays", &f->err) != 0 ||
      create(f->w, &opx_db_tables[OPX_T_OBJECTS], g->nobjs,
             &f->ins[OPX_T_OBJECTS], &f->err) != 0 ||
      create(f->w, &opx_db_tables[OPX_T_EDGES], g->nedges, &f->ins[OPX_T_EDGES],
             &f->err) != 0 ||
      create(f->w, &opx_db_tables[OPX_T_MEMBERSHIP], b->job.nm,
             &f->ins[OPX_T_MEMBERSHIP], &f->err) != 0 ||
      insert_objects(&f->ins[OPX_T_OBJECTS], g, &f->err) != 0 ||
      insert_edges(&f->ins[OPX_T_EDGES], g, &f->err) != 0 ||
      insert_membership(&f->ins[OPX_T_MEMBERSHIP], &b->job, &f->err) != 0 ||
      exec(f->w, "COMMIT", &f->err) != 0)
    return f->rc = -EIO;
  return 0;
}

/* Runs fn(arg) on a thread of its own when the run is large enough to pay
 * for one (b->threaded says so), else here. */
static void maybe_thread(opx_build *b, void *(*fn)(void *), void *arg) {
  b->threaded = b->run->sim->nsegs >= 4096 &&
                pthread_create(&b->thread, NULL, fn, arg) == 0;
  if (!b->threaded)
    fn(arg);
}

static void join_thread_end(opx_build *b) {
  if (b->threaded)
    pthread_join(b->thread, NULL);
  b->threaded = 0;
}

/* The geometric joins over both cores, then the two files at once. */
static int build_files(opx_build *b) {
  long n = b->run->sim->nsegs;
  b->half = b->job;
  b->job.hi = b->half.lo = n / 2;
  maybe_thread(b, join_run, &b->half);
  join_run(&b->job);
  join_thread_end(b);
  int rc = b->job.rc != 0 ? b->job.rc : b->half.rc;
  if (rc == 0)
    rc = merge_halves(&b->job, &b->half);
  if (rc == 0)
    rc = sort_joins(&b->job, b->run->geom->nobjs, b->run->geom->nedges);
  if (rc != 0)
    return rc;
  maybe_thread(b, crossing_work, b);
  rc = main_work(b);
  join_thread_end(b);
  return rc != 0 ? rc : b->joins.rc;
}

int opx_db_build(const opx_run_t *run, opx_db_t **out, char **err) {
  *out = NULL;
  *err = NULL;
  opx_build b = {.run = run};
  opx_db_t *db = calloc(1, sizeof(*db));
  if (db == NULL)
    return -ENOMEM;
  pthread_mutex_init(&db->lock, NULL);
  if (prepare(&b, run) != 0 || copy_names(db, run->geom) != 0) {
    opx_db_free(db);
    build_free(&b);
    return -ENOMEM;
  }
  db->nsegs = run->sim->nsegs;
  unsigned long serial = atomic_fetch_add(&db_serial, 1);
  int rc = file_open(&b.main, db, "", serial);
  if (rc == 0)
    rc = b.joins.rc = file_open(&b.joins, db, "-joins", serial);
  if (rc == 0)
    rc = build_files(&b);
  if (rc == 0) {
    db->counts[OPX_T_OBJECTS] = run->geom->nobjs;
    db->counts[OPX_T_EDGES] = run->geom->nedges;
    db->counts[OPX_T_RAYS] = db->nsegs;
    db->counts[OPX_T_MEMBERSHIP] = b.job.nm;
    db->counts[OPX_T_CROSSING] = b.job.nc;
    db->segs = run->sim->segs;
    db->end_obj = run->end_obj;
    db->child_first = run->tree.first;
    db->child = run->tree.child;
    db->colours = run->scene->simulate_colors;
    db->source_obj = b.source_obj;
    b.source_obj = NULL;
    /* The reader opens the files before the writers close: a memdb file
     * lives while a connection has it open. */
    rc = opx_db_open_reader(db, b.main.uri, b.joins.uri, err);
  } else {
    char **why = b.main.err != NULL ? &b.main.err : &b.joins.err;
    *err = *why;
    *why = NULL;
  }
  build_free(&b);
  if (rc != 0) {
    opx_db_free(db);
    if (*err == NULL && rc != -ENOMEM)
      *err = strdup("ray database: the build failed");
    return rc;
  }
  *out = db;
  return 0;
}

void opx_db_free(opx_db_t *db) {
  if (db == NULL)
    return;
  sqlite3_close(db->ro);
  opx_db_vfs_unregister(db);
  pthread_mutex_destroy(&db->lock);
  for (int i = 0; db->names != NULL && i < db->nobjs; i++)
    free(db->names[i]);
  free(db->names);
  free(db->first_edge);
  free(db->labels);
  free(db->source_obj);
  free(db);
}
