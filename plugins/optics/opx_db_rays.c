/* The rays table as an SQLite virtual table over the simulation's own
 * segments (opx_db.h). A million segments are already in memory when the
 * database is built; copying them into SQLite rows and indexing their
 * parents was 60 % of the build (bench/README.md, optics-db). Read in
 * place, they cost nothing to build, every column is computed only when a
 * query reads it, a segment is found by its id in O(1), and its children
 * by the lineage tree's child index, as fast as an index would find them.
 *
 * The builder creates it in the main file ("CREATE VIRTUAL TABLE rays
 * USING opx_rays"), so that sqlite_master lists it with the others; the
 * reader connects it to the run's segments. It has no xUpdate: nothing can
 * write it. Its columns and their descriptions are opx_db_schema.c's. */
#include <math.h>
#include <string.h>

#include "opx_db_int.h"

/* What each declared column computes. */
typedef enum {
  C_ID,
  C_PARENT,
  C_DEPTH,
  C_TYPE,
  C_SOURCE_ID,
  C_SOURCE_NAME,
  C_END_ID,
  C_END_NAME,
  C_P1X,
  C_P1Y,
  C_P2X,
  C_P2Y,
  C_MIDX,
  C_MIDY,
  C_LENGTH,
  C_BS,
  C_BP,
  C_BTOTAL,
  C_DOP,
  C_PRATIO,
  C_WAVELENGTH,
  C_GAP,
  C_IS_TIR,
  C_CAUSED_TIR,
  C_TIR_COUNT,
  C_G_ANGLE,
  C_CG_ANGLE,
  C_G_POLAR,
  C_CG_POLAR,
  C_G_TRANSM,
  C_CG_TRANSM,
  C_COUNT
} col_t;

static const char *const col_names[C_COUNT] = {"id",
                                               "parent_id",
                                               "depth",
                                               "interaction_type",
                                               "source_id",
                                               "source_name",
                                               "end_object_id",
                                               "end_object_name",
                                               "p1_x",
                                               "p1_y",
                                               "p2_x",
                                               "p2_y",
                                               "midpoint_x",
                                               "midpoint_y",
                                               "length",
                                               "brightness_s",
                                               "brightness_p",
                                               "brightness_total",
                                               "degree_of_polarization",
                                               "polarization_ratio",
                                               "wavelength",
                                               "gap",
                                               "is_tir_result",
                                               "caused_tir",
                                               "tir_count",
                                               "is_grazing_result__angle",
                                               "caused_grazing__angle",
                                               "is_grazing_result__polar",
                                               "caused_grazing__polar",
                                               "is_grazing_result__transm",
                                               "caused_grazing__transm"};

typedef struct {
  sqlite3_vtab base;
  const opx_db_t *db;
  col_t cols[C_COUNT]; /* declared column -> what it computes */
  int ncols;
} rays_vtab;

/* A scan: the ids lo..hi-1, or the children of a parent. */
typedef struct {
  sqlite3_vtab_cursor base;
  long i, hi;
  const long *list; /* children of a parent: ids list[i], i < hi */
} rays_cursor;

static int rays_connect(sqlite3 *c, void *aux, int argc,
                        const char *const *argv, sqlite3_vtab **out,
                        char **err) {
  (void)argc;
  (void)argv;
  const opx_db_table *t = &opx_db_tables[OPX_T_RAYS];
  rays_vtab *v = sqlite3_malloc(sizeof(*v));
  char *decl = sqlite3_mprintf("CREATE TABLE x(");
  if (v == NULL || decl == NULL) {
    sqlite3_free(v);
    sqlite3_free(decl);
    return SQLITE_NOMEM;
  }
  memset(v, 0, sizeof(*v));
  v->db = aux;
  for (const opx_db_col *col = t->cols; col->name != NULL; col++) {
    int k = 0;
    while (k < C_COUNT && strcmp(col_names[k], col->name) != 0)
      k++;
    if (k == C_COUNT || v->ncols == C_COUNT) {
      *err = sqlite3_mprintf("rays: no value for the column %s", col->name);
      sqlite3_free(v);
      sqlite3_free(decl);
      return SQLITE_ERROR;
    }
    v->cols[v->ncols] = (col_t)k;
    /* The type only: a virtual table's primary key is its rowid. */
    size_t tl = strcspn(col->type, " ");
    char *next = sqlite3_mprintf("%s%s%s %.*s", decl, v->ncols ? ", " : "",
                                 col->name, (int)tl, col->type);
    sqlite3_free(decl);
    if ((decl = next) == NULL) {
      sqlite3_free(v);
      return SQLITE_NOMEM;
    }
    v->ncols++;
  }
  char *full = sqlite3_mprintf("%s)", decl);
  sqlite3_free(decl);
  int rc = full ? sqlite3_declare_vtab(c, full) : SQLITE_NOMEM;
  sqlite3_free(full);
  if (rc != SQLITE_OK) {
    sqlite3_free(v);
    return rc;
  }
  /* Safe to read from anywhere, views included: it only reads memory. */
  sqlite3_vtab_config(c, SQLITE_VTAB_INNOCUOUS);
  *out = &v->base;
  return SQLITE_OK;
}

/* A distinct function from xConnect, so that the module is not also an
 * eponymous table of its own name. */
static int rays_create(sqlite3 *c, void *aux, int argc, const char *const *argv,
                       sqlite3_vtab **out, char **err) {
  return rays_connect(c, aux, argc, argv, out, err);
}

static int rays_disconnect(sqlite3_vtab *v) {
  sqlite3_free(v);
  return SQLITE_OK;
}

/* The plans xBestIndex chooses (idxNum), and their costs. */
enum { PLAN_SCAN, PLAN_ID, PLAN_PARENT, PLAN_RANGE };

static int is_id(const rays_vtab *v, int col) {
  return col == -1 || (col >= 0 && v->cols[col] == C_ID);
}

static int rays_best_index(sqlite3_vtab *tab, sqlite3_index_info *info) {
  const rays_vtab *v = (const rays_vtab *)tab;
  double n = (double)v->db->nsegs + 1;
  int eq_id = -1, eq_parent = -1, lo = -1, hi = -1;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    if (!c->usable)
      continue;
    if (is_id(v, c->iColumn)) {
      if (c->op == SQLITE_INDEX_CONSTRAINT_EQ)
        eq_id = i;
      else if (c->op == SQLITE_INDEX_CONSTRAINT_GE ||
               c->op == SQLITE_INDEX_CONSTRAINT_GT)
        lo = i;
      else if (c->op == SQLITE_INDEX_CONSTRAINT_LE ||
               c->op == SQLITE_INDEX_CONSTRAINT_LT)
        hi = i;
    } else if (c->iColumn >= 0 && v->cols[c->iColumn] == C_PARENT &&
               c->op == SQLITE_INDEX_CONSTRAINT_EQ)
      eq_parent = i;
  }
  /* Constraints are passed on but never omitted: SQLite checks every row
   * again, so a plan only has to find a superset (a text id, say, makes
   * it scan everything). */
  if (eq_id >= 0) {
    info->idxNum = PLAN_ID;
    info->aConstraintUsage[eq_id].argvIndex = 1;
    info->estimatedCost = 1;
    info->estimatedRows = 1;
    info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
  } else if (eq_parent >= 0) {
    info->idxNum = PLAN_PARENT;
    info->aConstraintUsage[eq_parent].argvIndex = 1;
    info->estimatedCost = 10;
    info->estimatedRows = 2;
  } else if (lo >= 0 || hi >= 0) {
    /* idxStr is unused: which bounds there are goes into idxNum's upper
     * bits (1 lower, 2 upper), the operators into the values' order. */
    int k = 1, bits = 0;
    if (lo >= 0) {
      info->aConstraintUsage[lo].argvIndex = k++;
      bits |= 1 | (info->aConstraint[lo].op == SQLITE_INDEX_CONSTRAINT_GT) << 2;
    }
    if (hi >= 0) {
      info->aConstraintUsage[hi].argvIndex = k++;
      bits |= 2 | (info->aConstraint[hi].op == SQLITE_INDEX_CONSTRAINT_LT) << 3;
    }
    info->idxNum = PLAN_RANGE | bits << 4;
    info->estimatedCost = n / 4;
    info->estimatedRows = (sqlite3_int64)(n / 4);
  } else {
    info->idxNum = PLAN_SCAN;
    info->estimatedCost = n;
    info->estimatedRows = (sqlite3_int64)n;
  }
  /* Every plan but the children's yields ids in ascending order. */
  if (info->idxNum != PLAN_PARENT && info->nOrderBy == 1 &&
      is_id(v, info->aOrderBy[0].iColumn) && !info->aOrderBy[0].desc)
    info->orderByConsumed = 1;
  return SQLITE_OK;
}

static int rays_open(sqlite3_vtab *tab, sqlite3_vtab_cursor **out) {
  (void)tab;
  rays_cursor *c = sqlite3_malloc(sizeof(*c));
  if (c == NULL)
    return SQLITE_NOMEM;
  memset(c, 0, sizeof(*c));
  *out = &c->base;
  return SQLITE_OK;
}

static int rays_close(sqlite3_vtab_cursor *c) {
  sqlite3_free(c);
  return SQLITE_OK;
}

/* The value as a whole number in *out, or 0 when it is not one (text,
 * NULL, a fraction): the plan then scans, or finds nothing for NULL. */
static int whole(sqlite3_value *v, sqlite3_int64 *out) {
  int t = sqlite3_value_numeric_type(v);
  if (t == SQLITE_INTEGER) {
    *out = sqlite3_value_int64(v);
    return 1;
  }
  if (t == SQLITE_FLOAT) {
    double d = sqlite3_value_double(v);
    if (d == floor(d) && fabs(d) < 9e15) {
      *out = (sqlite3_int64)d;
      return 1;
    }
  }
  return 0;
}

static int rays_filter(sqlite3_vtab_cursor *cur, int plan, const char *str,
                       int argc, sqlite3_value **argv) {
  (void)str;
  (void)argc;
  rays_cursor *c = (rays_cursor *)cur;
  const opx_db_t *db = ((const rays_vtab *)cur->pVtab)->db;
  long n = db->nsegs;
  sqlite3_int64 v;
  c->list = NULL;
  c->i = 0;
  c->hi = n;
  switch (plan & 15) {
  case PLAN_ID:
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
      c->hi = 0;
    else if (whole(argv[0], &v))
      c->i = v >= 0 && v < n ? v : 0, c->hi = v >= 0 && v < n ? v + 1 : 0;
    break;
  case PLAN_PARENT:
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
      c->hi = 0; /* parent_id = NULL is never true */
    else if (whole(argv[0], &v)) {
      if (v >= 0 && v < n) {
        c->list = db->child;
        c->i = db->child_first[v];
        c->hi = db->child_first[v + 1];
      } else
        c->hi = 0;
    }
    break;
  case PLAN_RANGE: {
    int bits = plan >> 4, k = 0;
    if (bits & 1) {
      if (whole(argv[k], &v)) {
        sqlite3_int64 start = v + ((bits & 4) != 0); /* > v: from v + 1 */
        c->i = start > 0 ? (start < n ? start : n) : 0;
      } else if (sqlite3_value_type(argv[k]) == SQLITE_NULL)
        c->hi = 0;
      k++;
    }
    if (bits & 2) {
      if (whole(argv[k], &v)) {
        sqlite3_int64 top = v + ((bits & 8) == 0); /* <= v: up to v + 1 */
        if (top < c->hi)
          c->hi = top > 0 ? top : 0;
      } else if (sqlite3_value_type(argv[k]) == SQLITE_NULL)
        c->hi = 0;
    }
    if (c->i > c->hi)
      c->i = c->hi;
    break;
  }
  default:
    break;
  }
  return SQLITE_OK;
}

static int rays_next(sqlite3_vtab_cursor *cur) {
  ((rays_cursor *)cur)->i++;
  return SQLITE_OK;
}

static int rays_eof(sqlite3_vtab_cursor *cur) {
  const rays_cursor *c = (const rays_cursor *)cur;
  return c->i >= c->hi;
}

static long current(const rays_cursor *c) {
  return c->list != NULL ? c->list[c->i] : c->i;
}

static int rays_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *out) {
  *out = current((const rays_cursor *)cur);
  return SQLITE_OK;
}

static void result_real(sqlite3_context *ctx, double v) {
  if (isnan(v))
    sqlite3_result_null(ctx);
  else
    sqlite3_result_double(ctx, v);
}

static void result_obj(sqlite3_context *ctx, const opx_db_t *db, int obj,
                       int name) {
  if (obj < 0 || obj >= db->nobjs)
    sqlite3_result_null(ctx);
  else if (name)
    sqlite3_result_text(ctx, db->names[obj], -1, SQLITE_STATIC);
  else
    sqlite3_result_int(ctx, obj);
}

/* p2 as the table shows it: for a ray that left the scene the point one
 * unit along it, since the simulator's p2 is only a direction point. */
static atl_op_pt shown_p2(const atl_op_segment *s) {
  if (s->hit_obj >= 0)
    return s->p2;
  double dx = s->p2.x - s->p1.x, dy = s->p2.y - s->p1.y, l = hypot(dx, dy);
  if (!(l > 0))
    return s->p2;
  return (atl_op_pt){s->p1.x + dx / l, s->p1.y + dy / l};
}

static int rays_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx,
                       int col) {
  const rays_vtab *v = (const rays_vtab *)cur->pVtab;
  const opx_db_t *db = v->db;
  long i = current((const rays_cursor *)cur);
  const atl_op_segment *s = &db->segs[i];
  int ends = s->hit_obj >= 0, end = ends ? db->end_obj[i] : -1;
  double total = s->bs + s->bp;
  static const char *const kinds[] = {"source", "reflect", "refract", "tir",
                                      "pass"};
  static const unsigned bits[3] = {ATL_OP_GRAZING_ANGLE, ATL_OP_GRAZING_POLAR,
                                   ATL_OP_GRAZING_TRANSM};
  col_t what = v->cols[col];
  switch (what) {
  case C_ID:
    sqlite3_result_int64(ctx, i);
    break;
  case C_PARENT:
    if (s->parent >= 0 && s->parent < db->nsegs)
      sqlite3_result_int64(ctx, s->parent);
    else
      sqlite3_result_null(ctx);
    break;
  case C_DEPTH:
    sqlite3_result_int(ctx, s->depth);
    break;
  case C_TYPE:
    sqlite3_result_text(ctx, kinds[s->kind], -1, SQLITE_STATIC);
    break;
  case C_SOURCE_ID:
  case C_SOURCE_NAME:
    result_obj(ctx, db, db->source_obj[i], what == C_SOURCE_NAME);
    break;
  case C_END_ID:
  case C_END_NAME:
    result_obj(ctx, db, end, what == C_END_NAME);
    break;
  case C_P1X:
    result_real(ctx, s->p1.x);
    break;
  case C_P1Y:
    result_real(ctx, s->p1.y);
    break;
  case C_P2X:
    result_real(ctx, shown_p2(s).x);
    break;
  case C_P2Y:
    result_real(ctx, shown_p2(s).y);
    break;
  case C_MIDX:
    result_real(ctx, ends ? (s->p1.x + s->p2.x) / 2 : NAN);
    break;
  case C_MIDY:
    result_real(ctx, ends ? (s->p1.y + s->p2.y) / 2 : NAN);
    break;
  case C_LENGTH:
    result_real(ctx, ends ? hypot(s->p2.x - s->p1.x, s->p2.y - s->p1.y) : NAN);
    break;
  case C_BS:
    result_real(ctx, s->bs);
    break;
  case C_BP:
    result_real(ctx, s->bp);
    break;
  case C_BTOTAL:
    result_real(ctx, total);
    break;
  case C_DOP:
    result_real(ctx, total > 1e-10 ? fabs(s->bp - s->bs) / total : 0.0);
    break;
  case C_PRATIO:
    result_real(ctx, s->bs > 1e-10 ? s->bp / s->bs : NAN);
    break;
  case C_WAVELENGTH:
    result_real(ctx, db->colours ? s->wavelength : NAN);
    break;
  case C_GAP:
    sqlite3_result_int(ctx, s->gap);
    break;
  case C_IS_TIR:
    sqlite3_result_int(ctx, s->kind == ATL_OP_TIR);
    break;
  case C_CAUSED_TIR:
    sqlite3_result_int(ctx, s->caused_tir);
    break;
  case C_TIR_COUNT:
    sqlite3_result_int(ctx, s->tir_count);
    break;
  case C_G_ANGLE:
  case C_G_POLAR:
  case C_G_TRANSM:
    sqlite3_result_int(ctx, (s->grazing & bits[(what - C_G_ANGLE) / 2]) != 0);
    break;
  case C_CG_ANGLE:
  case C_CG_POLAR:
  case C_CG_TRANSM:
    sqlite3_result_int(
        ctx, (s->caused_grazing & bits[(what - C_CG_ANGLE) / 2]) != 0);
    break;
  default:
    sqlite3_result_null(ctx);
  }
  return SQLITE_OK;
}

static const sqlite3_module rays_module = {
    .iVersion = 0,
    .xCreate = rays_create,
    .xConnect = rays_connect,
    .xBestIndex = rays_best_index,
    .xDisconnect = rays_disconnect,
    .xDestroy = rays_disconnect,
    .xOpen = rays_open,
    .xClose = rays_close,
    .xFilter = rays_filter,
    .xNext = rays_next,
    .xEof = rays_eof,
    .xColumn = rays_column,
    .xRowid = rays_rowid,
};

int opx_db_rays_register(sqlite3 *c, opx_db_t *db) {
  return sqlite3_create_module_v2(c, "opx_rays", &rays_module, db, NULL);
}
