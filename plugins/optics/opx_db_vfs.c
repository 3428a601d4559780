/* The reader's temporary space, capped per query (opx_db_int.h).
 *
 * A query that sorts, groups, de-duplicates or recurses keeps rows in
 * temporary files of its connection: a sorter's runs, ephemeral tables.
 * SQLite has no per-connection cap on them, and the process-wide heap
 * limits would also stop the daemon's own store. So the reader opens its
 * database through a VFS of its own, one per database: the main file is
 * memdb's shared file as before, and every temporary file goes to the
 * default VFS through a wrapper that counts its bytes against the
 * database's budget. A write past the budget fails with SQLITE_FULL,
 * which query_rays turns into a message that says what to do instead.
 * Queries on one database run one at a time (db->lock) and each database
 * has its own budget, so concurrent sessions are each bounded.
 *
 * The wrapper offers no memory mapping (version 1 methods): the sorter
 * would otherwise map its files, up to 2 GB, into the process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opx_db_int.h"

typedef struct {
  sqlite3_file base;
  opx_db_t *db;
  sqlite3_int64 size; /* the bytes charged: the file's furthest extent */
  sqlite3_file *real; /* the default VFS's file, right after this struct */
} capped_file;

/* Charges the file's growth to end bytes; SQLITE_FULL past the budget. */
static int grow(capped_file *f, sqlite3_int64 end) {
  if (end <= f->size)
    return SQLITE_OK;
  opx_db_t *db = f->db;
  if (db->temp_used + (end - f->size) > db->temp_cap) {
    db->temp_full = 1;
    return SQLITE_FULL;
  }
  db->temp_used += end - f->size;
  f->size = end;
  return SQLITE_OK;
}

static void shrink(capped_file *f, sqlite3_int64 end) {
  if (end < f->size) {
    f->db->temp_used -= f->size - end;
    f->size = end;
  }
}

static int c_close(sqlite3_file *p) {
  capped_file *f = (capped_file *)p;
  shrink(f, 0);
  return f->real->pMethods->xClose(f->real);
}

static int c_read(sqlite3_file *p, void *buf, int n, sqlite3_int64 off) {
  capped_file *f = (capped_file *)p;
  return f->real->pMethods->xRead(f->real, buf, n, off);
}

static int c_write(sqlite3_file *p, const void *buf, int n, sqlite3_int64 off) {
  capped_file *f = (capped_file *)p;
  int rc = grow(f, off + n);
  return rc != SQLITE_OK ? rc : f->real->pMethods->xWrite(f->real, buf, n, off);
}

static int c_truncate(sqlite3_file *p, sqlite3_int64 size) {
  capped_file *f = (capped_file *)p;
  int rc = f->real->pMethods->xTruncate(f->real, size);
  if (rc == SQLITE_OK)
    shrink(f, size);
  return rc;
}

static int c_sync(sqlite3_file *p, int flags) {
  capped_file *f = (capped_file *)p;
  return f->real->pMethods->xSync(f->real, flags);
}

static int c_size(sqlite3_file *p, sqlite3_int64 *size) {
  capped_file *f = (capped_file *)p;
  return f->real->pMethods->xFileSize(f->real, size);
}

static int c_lock(sqlite3_file *p, int level) {
  capped_file *f = (capped_file *)p;
  return f->real->pMethods->xLock(f->real, level);
}

static int c_unlock(sqlite3_file *p, int level) {
  capped_file *f = (capped_file *)p;
  return f->real->pMethods->xUnlock(f->real, level);
}

static int c_reserved(sqlite3_file *p, int *out) {
  capped_file *f = (capped_file *)p;
  return f->real->pMethods->xCheckReservedLock(f->real, out);
}

/* A size hint would make the default VFS allocate the whole file at once
 * (for the sorter's mapping, which this wrapper does not offer): it is
 * dropped, and the file grows, and is charged, as it is written. */
static int c_control(sqlite3_file *p, int op, void *arg) {
  capped_file *f = (capped_file *)p;
  if (op == SQLITE_FCNTL_SIZE_HINT)
    return SQLITE_OK;
  return f->real->pMethods->xFileControl(f->real, op, arg);
}

static int c_sector(sqlite3_file *p) {
  capped_file *f = (capped_file *)p;
  return f->real->pMethods->xSectorSize(f->real);
}

static int c_device(sqlite3_file *p) {
  capped_file *f = (capped_file *)p;
  return f->real->pMethods->xDeviceCharacteristics(f->real);
}

static const sqlite3_io_methods capped_methods = {
    .iVersion = 1,
    .xClose = c_close,
    .xRead = c_read,
    .xWrite = c_write,
    .xTruncate = c_truncate,
    .xSync = c_sync,
    .xFileSize = c_size,
    .xLock = c_lock,
    .xUnlock = c_unlock,
    .xCheckReservedLock = c_reserved,
    .xFileControl = c_control,
    .xSectorSize = c_sector,
    .xDeviceCharacteristics = c_device,
};

static int v_open(sqlite3_vfs *v, const char *name, sqlite3_file *p, int flags,
                  int *out) {
  opx_db_t *db = v->pAppData;
  sqlite3_vfs *memdb = db->vfs_memdb, *real = db->vfs_real;
  if (flags & SQLITE_OPEN_MAIN_DB)
    return memdb->xOpen(memdb, name, p, flags, out);
  capped_file *f = (capped_file *)p;
  memset(f, 0, sizeof(*f));
  f->db = db;
  f->real = (sqlite3_file *)(f + 1);
  int rc = real->xOpen(real, name, f->real, flags, out);
  if (rc != SQLITE_OK) {
    /* SQLite calls no method of a file whose open failed. */
    f->base.pMethods = NULL;
    return rc;
  }
  f->base.pMethods = &capped_methods;
  return SQLITE_OK;
}

/* The rest is memdb's (which hands what is not its own to the default). */
static int v_delete(sqlite3_vfs *v, const char *name, int sync) {
  sqlite3_vfs *m = ((opx_db_t *)v->pAppData)->vfs_memdb;
  return m->xDelete(m, name, sync);
}

static int v_access(sqlite3_vfs *v, const char *name, int flags, int *out) {
  sqlite3_vfs *m = ((opx_db_t *)v->pAppData)->vfs_memdb;
  return m->xAccess(m, name, flags, out);
}

static int v_full(sqlite3_vfs *v, const char *name, int n, char *out) {
  sqlite3_vfs *m = ((opx_db_t *)v->pAppData)->vfs_memdb;
  return m->xFullPathname(m, name, n, out);
}

static int v_random(sqlite3_vfs *v, int n, char *out) {
  sqlite3_vfs *m = ((opx_db_t *)v->pAppData)->vfs_memdb;
  return m->xRandomness(m, n, out);
}

static int v_sleep(sqlite3_vfs *v, int us) {
  sqlite3_vfs *m = ((opx_db_t *)v->pAppData)->vfs_memdb;
  return m->xSleep(m, us);
}

static int v_time(sqlite3_vfs *v, double *out) {
  sqlite3_vfs *m = ((opx_db_t *)v->pAppData)->vfs_memdb;
  return m->xCurrentTime(m, out);
}

static int v_error(sqlite3_vfs *v, int n, char *out) {
  sqlite3_vfs *m = ((opx_db_t *)v->pAppData)->vfs_memdb;
  return m->xGetLastError ? m->xGetLastError(m, n, out) : 0;
}

static int v_time64(sqlite3_vfs *v, sqlite3_int64 *out) {
  sqlite3_vfs *m = ((opx_db_t *)v->pAppData)->vfs_memdb;
  return m->xCurrentTimeInt64(m, out);
}

/* The budget: ATELIER_OPTICS_QUERY_MEMORY_MB (a number of MB from 1 to
 * 65536), else OPX_DB_QUERY_MEMORY_MB; the error of a query that reaches
 * it names the budget and the variable (doc/optics-plugin.md). */
static sqlite3_int64 budget(void) {
  const char *s = getenv("ATELIER_OPTICS_QUERY_MEMORY_MB");
  if (s != NULL && *s != '\0') {
    char *end;
    long mb = strtol(s, &end, 10);
    if (*end == '\0' && mb >= 1 && mb <= 65536)
      return (sqlite3_int64)mb << 20;
  }
  return (sqlite3_int64)OPX_DB_QUERY_MEMORY_MB << 20;
}

int opx_db_vfs_register(opx_db_t *db, char *name, size_t len) {
  db->vfs_memdb = sqlite3_vfs_find("memdb");
  db->vfs_real = sqlite3_vfs_find(NULL);
  if (db->vfs_memdb == NULL || db->vfs_real == NULL)
    return SQLITE_ERROR;
  sqlite3_vfs *v = calloc(1, sizeof(*v));
  if (v == NULL)
    return SQLITE_NOMEM;
  snprintf(name, len, "opx-ro-%p", (void *)db);
  db->vfs_name = strdup(name);
  if (db->vfs_name == NULL) {
    free(v);
    return SQLITE_NOMEM;
  }
  int wrapped = (int)sizeof(capped_file) + db->vfs_real->szOsFile;
  v->iVersion = 2;
  v->szOsFile =
      wrapped > db->vfs_memdb->szOsFile ? wrapped : db->vfs_memdb->szOsFile;
  v->mxPathname = db->vfs_memdb->mxPathname;
  v->zName = db->vfs_name;
  v->pAppData = db;
  v->xOpen = v_open;
  v->xDelete = v_delete;
  v->xAccess = v_access;
  v->xFullPathname = v_full;
  v->xRandomness = v_random;
  v->xSleep = v_sleep;
  v->xCurrentTime = v_time;
  v->xGetLastError = v_error;
  v->xCurrentTimeInt64 = v_time64;
  int rc = sqlite3_vfs_register(v, 0);
  if (rc != SQLITE_OK) {
    free(db->vfs_name);
    db->vfs_name = NULL;
    free(v);
    return rc;
  }
  db->vfs = v;
  db->temp_cap = budget();
  return SQLITE_OK;
}

void opx_db_vfs_unregister(opx_db_t *db) {
  if (db->vfs == NULL)
    return;
  sqlite3_vfs_unregister(db->vfs);
  free(db->vfs);
  free(db->vfs_name);
  db->vfs = NULL;
  db->vfs_name = NULL;
}
