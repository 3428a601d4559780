/* opx: the ray database's parts shared by its files: the tables'
 * descriptions (opx_db_schema.c), the build (opx_db.c) and the guarded
 * read-only connection queries run on (opx_db_query.c). Private to the
 * module.
 *
 * Ownership: an opx_db_t owns its connection and its mutex; the table
 * descriptions are static. */
#ifndef ATL_OPX_DB_INT_H
#define ATL_OPX_DB_INT_H

#include <pthread.h>
#include <sqlite3.h>

#include "opx_db.h"

typedef struct {
  const char *name, *type, *desc;
  /* A column computed from the stored ones when read (through a view,
   * opx_db.c): its expression; NULL for a stored column. */
  const char *gen;
} opx_db_col;

typedef struct {
  const char *name, *desc;
  const opx_db_col *cols; /* ends with a NULL name */
  /* What follows the column list in CREATE TABLE, closing parenthesis
   * included. */
  const char *constraints;
} opx_db_table;

enum {
  OPX_T_RAYS,
  OPX_T_OBJECTS,
  OPX_T_EDGES,
  OPX_T_MEMBERSHIP,
  OPX_T_CROSSING,
  OPX_DB_NTABLES
};
extern const opx_db_table opx_db_tables[OPX_DB_NTABLES];
/* The table's columns, and its stored ones (those an INSERT gives). */
int opx_db_ncols(const opx_db_table *t);
int opx_db_nstored(const opx_db_table *t);

/* The caps on one result, beyond the row cap: its JSON size, and one text
 * cell's length (longer ones are cut, with a marker). */
#define OPX_DB_MAX_BYTES (256 * 1024)
#define OPX_DB_MAX_CELL 2048

struct opx_db {
  sqlite3 *ro; /* the read-only connection every query runs on */
  long nsegs;
  long counts[OPX_DB_NTABLES]; /* rows inserted per table */
  /* Copies of the objects' display names and their edges' short labels
   * (object i's are labels[first_edge[i] .. first_edge[i + 1])), which
   * the generated name columns read through opx_object_name() and
   * opx_edge_label(). Owned. */
  char **names;
  int nobjs;
  int *first_edge;
  char (*labels)[4];
  /* What the rays virtual table reads (opx_db_rays.c): the run's
   * segments, the objects their ends are on, and the lineage tree's child
   * index, all the run's (it outlives the database); and each segment's
   * light source as an object, owned. */
  const atl_op_segment *segs;
  const int *end_obj;
  const long *child_first, *child;
  int *source_obj;
  int colours; /* the scene simulates colours: wavelengths are shown */
  /* One query at a time: the fields below are its state, which the
   * authorizer and the progress handler fill. */
  pthread_mutex_t lock;
  double deadline_ms; /* CLOCK_MONOTONIC */
  int timed_out;
  int saw_select;   /* the authorizer saw SQLITE_SELECT */
  char denied[128]; /* what the authorizer refused first, or "" */
  /* The reader's own VFS (opx_db_vfs.c) and its budget of temporary
   * space: the bytes the open temporary files hold now, the cap, and
   * whether the query being run reached it. */
  sqlite3_vfs *vfs, *vfs_memdb, *vfs_real;
  char *vfs_name;
  sqlite3_int64 temp_used, temp_cap;
  int temp_full;
};

/* The default cap on a query's temporary space (sorts, groups, DISTINCT,
 * recursive CTEs), in MB; ATELIER_OPTICS_QUERY_MEMORY_MB overrides it. */
#define OPX_DB_QUERY_MEMORY_MB 64

/* Registers db's reader VFS (opx_db_vfs.c), named into name (len bytes):
 * memdb's files, with temporary files counted against db->temp_cap.
 * SQLITE_OK or an SQLite error code. */
int opx_db_vfs_register(opx_db_t *db, char *name, size_t len);
/* Unregisters and frees it, after the reader is closed; safe if absent. */
void opx_db_vfs_unregister(opx_db_t *db);

/* Opens the read-only connection to the database at uri (the builder's
 * shared in-memory file), attaches joins_uri as "joins", and arms it:
 * limits, defensive mode, the authorizer and the progress handler. 0, or
 * -EIO with *err. */
int opx_db_open_reader(opx_db_t *db, const char *uri, const char *joins_uri,
                       char **err);

/* Registers opx_object_name(id) and opx_edge_label(object, index) on c,
 * reading db's names. 0, or an SQLite error code. */
int opx_db_functions(sqlite3 *c, opx_db_t *db);

/* Registers the rays virtual table on c, reading db. 0, or an SQLite
 * error code. */
int opx_db_rays_register(sqlite3 *c, opx_db_t *db);

/* Replaces printf() and format() on c (opx_db_printf.c) with a guard that
 * refuses a '%c' repeated past c's SQLITE_LIMIT_LENGTH (set it first) and
 * runs every other call through SQLite's own printf. The guard is freed
 * when c closes. SQLITE_OK or an SQLite error code. */
int opx_db_printf_register(sqlite3 *c);

/* CLOCK_MONOTONIC in milliseconds. */
double opx_db_now_ms(void);

#endif
