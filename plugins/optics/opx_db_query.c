/* query_rays' safety and results (opx_db.h). The guard is SQLite's own,
 * in layers, so that no one of them has to be perfect:
 *   - the connection is read-only (SQLITE_OPEN_READONLY, query_only) and
 *     the only one left to the data once the build is done;
 *   - an authorizer allows reading and read-only functions and refuses
 *     everything else (writes, DDL, PRAGMA, ATTACH, transactions,
 *     load_extension and the file functions), recording what it refused
 *     so the model hears what was wrong;
 *   - a statement must have been compiled as a SELECT and be read-only
 *     (this stops VACUUM INTO, which has no authorizer code);
 *   - exactly one statement: what follows it may only be spaces,
 *     semicolons and comments;
 *   - a progress handler stops a query after OPX_DB_TIME_LIMIT_MS (or
 *     ATELIER_OPTICS_QUERY_SECONDS), and
 *     sqlite3_limit() bounds the size of values, SQL text and
 *     expressions, so no query can run or grow for ever;
 *   - the result is capped in rows and in JSON bytes, so no answer can
 *     flood the model's context.
 * Keyword matching is deliberately absent: text such as
 * 'drop table rays; replace' is data in a string literal. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsnum.h"
#include "opx_db_int.h"

#define HINT "use describe_schema for the tables and columns"
#define READ_ONLY "query_rays runs read-only SELECT statements only"

/* Functions no query may call: they load code or touch files (most are
 * absent from this build; refusing them by name costs nothing). */
static const char *const denied_functions[] = {
    "load_extension", "readfile", "writefile",      "edit",
    "fts3_tokenizer", "zipfile",  "sqlar_compress", "sqlar_uncompress",
};

/* The name of a schema-changing action, for the refusal. */
static const char *schema_action(int action) {
  switch (action) {
  case SQLITE_CREATE_INDEX:
  case SQLITE_CREATE_TEMP_INDEX:
    return "CREATE INDEX";
  case SQLITE_CREATE_TABLE:
  case SQLITE_CREATE_TEMP_TABLE:
    return "CREATE TABLE";
  case SQLITE_CREATE_TRIGGER:
  case SQLITE_CREATE_TEMP_TRIGGER:
    return "CREATE TRIGGER";
  case SQLITE_CREATE_VIEW:
  case SQLITE_CREATE_TEMP_VIEW:
    return "CREATE VIEW";
  case SQLITE_CREATE_VTABLE:
    return "CREATE VIRTUAL TABLE";
  case SQLITE_DROP_INDEX:
  case SQLITE_DROP_TEMP_INDEX:
    return "DROP INDEX";
  case SQLITE_DROP_TABLE:
  case SQLITE_DROP_TEMP_TABLE:
    return "DROP TABLE";
  case SQLITE_DROP_TRIGGER:
  case SQLITE_DROP_TEMP_TRIGGER:
    return "DROP TRIGGER";
  case SQLITE_DROP_VIEW:
  case SQLITE_DROP_TEMP_VIEW:
    return "DROP VIEW";
  case SQLITE_DROP_VTABLE:
    return "DROP VIRTUAL TABLE";
  case SQLITE_ALTER_TABLE:
    return "ALTER TABLE";
  case SQLITE_REINDEX:
    return "REINDEX";
  case SQLITE_ANALYZE:
    return "ANALYZE";
  default:
    return "a change to the database";
  }
}

/* Records the first refusal of a query: what, and the name it acted on. */
static void deny(opx_db_t *db, const char *what, const char *name) {
  if (db->denied[0] == '\0')
    snprintf(db->denied, sizeof db->denied, "%s%s%s", what,
             name != NULL ? " " : "", name != NULL ? name : "");
}

static int authorize(void *arg, int action, const char *a1, const char *a2,
                     const char *dbname, const char *inner) {
  opx_db_t *db = arg;
  (void)dbname;
  (void)inner;
  switch (action) {
  case SQLITE_SELECT:
    db->saw_select = 1;
    return SQLITE_OK;
  case SQLITE_READ:
  case SQLITE_RECURSIVE:
    return SQLITE_OK;
  case SQLITE_FUNCTION:
    for (size_t i = 0; i < sizeof denied_functions / sizeof *denied_functions;
         i++)
      if (a2 != NULL && strcasecmp(a2, denied_functions[i]) == 0) {
        deny(db, "the function", a2);
        return SQLITE_DENY;
      }
    return SQLITE_OK;
  case SQLITE_PRAGMA:
    deny(db, "PRAGMA", a1);
    return SQLITE_DENY;
  case SQLITE_ATTACH:
    deny(db, "ATTACH", NULL);
    return SQLITE_DENY;
  case SQLITE_DETACH:
    deny(db, "DETACH", NULL);
    return SQLITE_DENY;
  case SQLITE_INSERT:
  case SQLITE_UPDATE:
  case SQLITE_DELETE:
    /* CREATE, DROP, ALTER and ANALYZE first ask to write the schema
     * table, and stop there when refused. */
    if (a1 != NULL && (strcmp(a1, "sqlite_master") == 0 ||
                       strcmp(a1, "sqlite_temp_master") == 0)) {
      deny(db, "changes to the schema (CREATE, DROP, ALTER, ANALYZE)", NULL);
      return SQLITE_DENY;
    }
    deny(db,
         action == SQLITE_INSERT   ? "INSERT into"
         : action == SQLITE_UPDATE ? "UPDATE of"
                                   : "DELETE from",
         a1);
    return SQLITE_DENY;

  case SQLITE_TRANSACTION:
    deny(db, "the transaction statement", a1);
    return SQLITE_DENY;
  case SQLITE_SAVEPOINT:
    deny(db, "SAVEPOINT", a2);
    return SQLITE_DENY;
  default:
    /* Every CREATE, DROP, ALTER, REINDEX, ANALYZE and whatever later
     * versions add: a read-only query never needs them. */
    deny(db, schema_action(action), a1);
    return SQLITE_DENY;
  }
}

/* opx_object_name(id): the object's display name, or NULL. */
static void object_name(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const opx_db_t *db = sqlite3_user_data(ctx);
  (void)argc;
  if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER)
    return;
  sqlite3_int64 i = sqlite3_value_int64(argv[0]);
  if (i >= 0 && i < db->nobjs)
    sqlite3_result_text(ctx, db->names[i], -1, SQLITE_STATIC);
}

/* opx_edge_label(object, index): the edge's short label, or NULL. */
static void edge_label(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const opx_db_t *db = sqlite3_user_data(ctx);
  (void)argc;
  if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER ||
      sqlite3_value_type(argv[1]) != SQLITE_INTEGER)
    return;
  sqlite3_int64 o = sqlite3_value_int64(argv[0]);
  sqlite3_int64 e = sqlite3_value_int64(argv[1]);
  if (o < 0 || o >= db->nobjs || e < 0 ||
      e >= db->first_edge[o + 1] - db->first_edge[o])
    return;
  sqlite3_result_text(ctx, db->labels[db->first_edge[o] + e], -1,
                      SQLITE_STATIC);
}

int opx_db_functions(sqlite3 *c, opx_db_t *db) {
  /* Innocuous: the generated columns call them, and the reader does not
   * trust its schema (SQLITE_DBCONFIG_TRUSTED_SCHEMA off). */
  int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
  int rc = sqlite3_create_function(c, "opx_object_name", 1, flags, db,
                                   object_name, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(c, "opx_edge_label", 2, flags, db, edge_label,
                                 NULL, NULL);
  return rc;
}

static int progress(void *arg) {
  opx_db_t *db = arg;
  if (opx_db_now_ms() < db->deadline_ms)
    return 0;
  db->timed_out = 1;
  return 1;
}

int opx_db_open_reader(opx_db_t *db, const char *uri, const char *joins_uri,
                       char **err) {
  sqlite3 *ro = NULL;
  char *attach = sqlite3_mprintf("ATTACH %Q AS joins", joins_uri);
  /* The reader opens memdb's shared file through its own VFS, which caps
   * the temporary space of each query (opx_db_vfs.c): the URI's vfs=
   * parameter names the VFS, so it is replaced. */
  char vfs[64];
  int rc = opx_db_vfs_register(db, vfs, sizeof vfs);
  size_t base = strcspn(uri, "?");
  char *own = rc == SQLITE_OK
                  ? sqlite3_mprintf("%.*s?vfs=%s", (int)base, uri, vfs)
                  : NULL;
  if (rc == SQLITE_OK && own == NULL)
    rc = SQLITE_NOMEM;
  /* The page cache is small: the pages are in memory already. */
  if (rc == SQLITE_OK)
    rc =
        sqlite3_open_v2(own, &ro, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
  sqlite3_free(own);
  if (rc == SQLITE_OK)
    rc = opx_db_functions(ro, db);
  if (rc == SQLITE_OK)
    rc = opx_db_rays_register(ro, db);
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(ro,
                      "PRAGMA query_only=1; PRAGMA cache_size=-8192; "
                      "PRAGMA temp_store=FILE",
                      NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = attach ? sqlite3_exec(ro, attach, NULL, NULL, NULL) : SQLITE_NOMEM;
  sqlite3_free(attach);
  if (rc != SQLITE_OK) {
    if (asprintf(err, "ray database: the reader: %s",
                 ro ? sqlite3_errmsg(ro) : "out of memory") < 0)
      *err = NULL;
    sqlite3_close(ro);
    return -EIO;
  }
  sqlite3_db_config(ro, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
  sqlite3_db_config(ro, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
  sqlite3_db_config(ro, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
  sqlite3_db_config(ro, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
  /* Values, SQL text and expressions of a size no honest query needs. */
  sqlite3_limit(ro, SQLITE_LIMIT_LENGTH, 1000000);
  sqlite3_limit(ro, SQLITE_LIMIT_SQL_LENGTH, 100000);
  sqlite3_limit(ro, SQLITE_LIMIT_COLUMN, 500);
  sqlite3_limit(ro, SQLITE_LIMIT_EXPR_DEPTH, 200);
  sqlite3_limit(ro, SQLITE_LIMIT_COMPOUND_SELECT, 50);
  sqlite3_limit(ro, SQLITE_LIMIT_VDBE_OP, 100000);
  sqlite3_limit(ro, SQLITE_LIMIT_FUNCTION_ARG, 32);
  sqlite3_limit(ro, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_limit(ro, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 1000);
  sqlite3_limit(ro, SQLITE_LIMIT_VARIABLE_NUMBER, 10);
  sqlite3_limit(ro, SQLITE_LIMIT_TRIGGER_DEPTH, 1);
  sqlite3_limit(ro, SQLITE_LIMIT_WORKER_THREADS, 0);
  /* printf's '%c' repeated past the length limit runs for seconds inside
   * one opcode, out of the progress handler's reach (opx_db_printf.c). */
  if (opx_db_printf_register(ro) != SQLITE_OK) {
    if (asprintf(err, "ray database: the reader's printf: %s",
                 sqlite3_errmsg(ro)) < 0)
      *err = NULL;
    sqlite3_close(ro);
    return -EIO;
  }
  /* The rays virtual table is connected on its first use: done here,
   * before the authorizer that refuses every schema change, so that no
   * query pays for it or is refused for it. */
  if (sqlite3_exec(ro, "SELECT id FROM rays WHERE id = -1", NULL, NULL, NULL) !=
      SQLITE_OK) {
    if (asprintf(err, "ray database: the rays table: %s", sqlite3_errmsg(ro)) <
        0)
      *err = NULL;
    sqlite3_close(ro);
    return -EIO;
  }
  sqlite3_set_authorizer(ro, authorize, db);
  sqlite3_progress_handler(ro, 1000, progress, db);
  db->ro = ro;
  return 0;
}

static int fail(char **err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail(char **err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(err, fmt, ap) < 0)
    *err = NULL;
  va_end(ap);
  return -EINVAL;
}

/* The time limit in ms: ATELIER_OPTICS_QUERY_SECONDS (0.1 to 3600) in
 * atelierd's environment, else OPX_DB_TIME_LIMIT_MS. Read at each query so
 * a test (or a user under valgrind) can give slow machines more time. */
static double time_limit_ms(void) {
  const char *s = getenv("ATELIER_OPTICS_QUERY_SECONDS");
  if (s != NULL && *s != '\0') {
    char *end;
    double sec = strtod(s, &end);
    if (*end == '\0' && sec >= 0.1 && sec <= 3600)
      return sec * 1000.0;
  }
  return OPX_DB_TIME_LIMIT_MS;
}

static int time_limit(char **err) {
  return fail(err,
              "the query ran for more than %g s and was stopped; add LIMIT "
              "or a narrower WHERE, and make sure a recursive WITH ends",
              time_limit_ms() / 1000.0);
}

/* Past spaces, semicolons and comments: where a second statement would
 * start (the end of the text when there is none). */
static const char *skip_filler(const char *s) {
  for (;;) {
    if (*s == ';' || *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' ||
        *s == '\f' || *s == '\v')
      s++;
    else if (s[0] == '-' && s[1] == '-') {
      while (*s != '\0' && *s != '\n')
        s++;
    } else if (s[0] == '/' && s[1] == '*') {
      const char *e = strstr(s + 2, "*/");
      s = e != NULL ? e + 2 : s + strlen(s);
    } else
      return s;
  }
}

/* Whether sql names a pragma_* table-valued function: "pragma_" at the
 * start of a word, any case. */
static int names_pragma_function(const char *sql) {
  for (const char *p = sql; *p != '\0'; p++)
    if (strncasecmp(p, "pragma_", 7) == 0 &&
        (p == sql || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')))
      return 1;
  return 0;
}

/* Compiles sql as the one read-only SELECT it must be, with the query's
 * state reset. 0 and *st, or -EINVAL with *err. */
static int compile(opx_db_t *db, const char *sql, sqlite3_stmt **st,
                   char **err) {
  const char *tail = NULL;
  db->denied[0] = '\0';
  db->saw_select = 0;
  db->timed_out = 0;
  db->temp_full = 0;
  *st = NULL;
  if (sqlite3_prepare_v3(db->ro, sql, -1, 0, st, &tail) != SQLITE_OK) {
    const char *msg = sqlite3_errmsg(db->ro);
    /* A pragma_* table-valued function is connected on first use, which
     * SQLite asks the authorizer for as a write to the schema table: the
     * refusal would say "changes to the schema" of a query that names
     * none, so it names what the query did use. */
    if (strncmp(db->denied, "changes to the schema", 21) == 0 &&
        names_pragma_function(sql))
      return fail(err, "not allowed: the pragma_* table-valued functions "
                       "(pragma_table_info and the others) are PRAGMAs, which "
                       "query_rays does not run; " HINT);
    if (db->denied[0] != '\0')
      return fail(err, "not allowed: %s; " READ_ONLY, db->denied);
    /* A write to a view, or to the rays (a virtual table without
     * writes), fails before the authorizer is asked. */
    if (strncmp(msg, "cannot modify", 13) == 0 ||
        strstr(msg, "may not be modified") != NULL)
      return fail(err, "not allowed: writes (%s); " READ_ONLY, msg);
    return fail(err, "SQL error: %s; " HINT, msg);
  }
  if (*st == NULL)
    return fail(err, "SQL error: the query is empty; " HINT);
  const char *next = tail != NULL ? skip_filler(tail) : "";
  if (*next != '\0') {
    sqlite3_finalize(*st);
    *st = NULL;
    size_t n = strcspn(next, ";");
    return fail(err,
                "not allowed: a second statement (\"%.*s%s\"); query_rays "
                "runs one read-only SELECT statement at a time",
                (int)(n > 80 ? 80 : n), next, n > 80 ? "..." : "");
  }
  if (!db->saw_select || !sqlite3_stmt_readonly(*st)) {
    sqlite3_finalize(*st);
    *st = NULL;
    return fail(err,
                "not allowed: a statement that is not a SELECT; " READ_ONLY);
  }
  db->deadline_ms = opx_db_now_ms() + time_limit_ms();
  return 0;
}

/* The error of a step that did not end in SQLITE_DONE. */
static int step_error(opx_db_t *db, char **err) {
  if (db->timed_out)
    return time_limit(err);
  if (db->temp_full)
    return fail(err,
                "the query needs more than %lld MB of working space for the "
                "rows it sorts, groups, de-duplicates or recurses over; ask "
                "for fewer rows: add a LIMIT (ORDER BY ... LIMIT n keeps "
                "only n), filter with WHERE first, aggregate (COUNT, SUM, "
                "GROUP BY fewer columns), or select fewer or narrower "
                "columns (the cap is ATELIER_OPTICS_QUERY_MEMORY_MB in the "
                "daemon's environment)",
                (long long)(db->temp_cap >> 20));
  return fail(err, "SQL error: %s; " HINT, sqlite3_errmsg(db->ro));
}

/* The length of s as JSON string content: json-c escapes quotes,
 * backslashes and slashes in two bytes, control characters in up to six. */
static size_t json_len(const char *s, size_t n) {
  size_t len = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    len += c < 0x20 ? 6 : c == '"' || c == '\\' || c == '/' ? 2 : 1;
  }
  return len;
}

/* Text as a JSON string: at most OPX_DB_MAX_CELL bytes (cut at a
 * character's start, with a marker), invalid UTF-8 bytes as '?'. */
static json_object *text_cell(const unsigned char *s, int n, size_t *bytes) {
  int keep = n > OPX_DB_MAX_CELL ? OPX_DB_MAX_CELL : n;
  while (keep < n && keep > 0 && (s[keep] & 0xC0) == 0x80)
    keep--;
  char *buf = malloc((size_t)keep + 64);
  if (buf == NULL)
    return NULL;
  int o = 0;
  for (int i = 0; i < keep;) {
    int len = s[i] < 0x80             ? 1
              : (s[i] & 0xE0) == 0xC0 ? 2
              : (s[i] & 0xF0) == 0xE0 ? 3
              : (s[i] & 0xF8) == 0xF0 ? 4
                                      : 0;
    int ok = len > 0 && i + len <= keep;
    for (int k = 1; ok && k < len; k++)
      ok = (s[i + k] & 0xC0) == 0x80;
    if (!ok) {
      buf[o++] = '?';
      i++;
      continue;
    }
    memcpy(buf + o, s + i, (size_t)len);
    o += len;
    i += len;
  }
  if (keep < n)
    o += snprintf(buf + o, 64, "...[cut: %d bytes in all]", n);
  json_object *j = json_object_new_string_len(buf, o);
  *bytes += json_len(buf, (size_t)o) + 3;
  free(buf);
  return j;
}

static json_object *cell(sqlite3_stmt *st, int c, size_t *bytes) {
  char buf[ATL_OP_JSNUM_MAX + 32];
  switch (sqlite3_column_type(st, c)) {
  case SQLITE_INTEGER: {
    sqlite3_int64 v = sqlite3_column_int64(st, c);
    *bytes += (size_t)snprintf(buf, sizeof buf, "%lld", (long long)v) + 1;
    return json_object_new_int64(v);
  }
  case SQLITE_FLOAT: {
    double v = sqlite3_column_double(st, c);
    if (!isfinite(v)) {
      *bytes += 5;
      return NULL;
    }
    /* The shortest text that reads back as the same double. */
    size_t n = atl__op_jsnum(v, buf);
    *bytes += n + 1;
    return json_object_new_double_s(v, buf);
  }
  case SQLITE_TEXT:
    return text_cell(sqlite3_column_text(st, c), sqlite3_column_bytes(st, c),
                     bytes);
  case SQLITE_BLOB:
    snprintf(buf, sizeof buf, "<blob: %d bytes>", sqlite3_column_bytes(st, c));
    *bytes += strlen(buf) + 3;
    return json_object_new_string(buf);
  default:
    *bytes += 5;
    return NULL;
  }
}

/* Runs the compiled statement into {columns, rows, row_count, ...}. */
static int collect(opx_db_t *db, sqlite3_stmt *st, int max_rows,
                   json_object **result, char **err) {
  int ncols = sqlite3_column_count(st);
  json_object *cols = json_object_new_array(), *rows = json_object_new_array();
  size_t bytes = 64;
  for (int c = 0; c < ncols; c++) {
    const char *name = sqlite3_column_name(st, c);
    json_object_array_add(cols, json_object_new_string(name ? name : ""));
    bytes += (name ? json_len(name, strlen(name)) : 0) + 3;
  }
  long n = 0;
  int rc, by_rows = 0, by_bytes = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (n == max_rows) {
      by_rows = 1;
      break;
    }
    json_object *row = json_object_new_array_ext(ncols);
    size_t rb = 3;
    for (int c = 0; c < ncols; c++)
      json_object_array_add(row, cell(st, c, &rb));
    if (bytes + rb > OPX_DB_MAX_BYTES) {
      json_object_put(row);
      by_bytes = 1;
      break;
    }
    bytes += rb;
    json_object_array_add(rows, row);
    n++;
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    json_object_put(cols);
    json_object_put(rows);
    return step_error(db, err);
  }
  json_object *r = json_object_new_object();
  json_object_object_add(r, "columns", cols);
  json_object_object_add(r, "rows", rows);
  json_object_object_add(r, "row_count", json_object_new_int64(n));
  if (by_rows || by_bytes) {
    char note[256];
    json_object_object_add(r, "truncated", json_object_new_boolean(1));
    if (by_rows) {
      json_object_object_add(r, "max_rows", json_object_new_int(max_rows));
      snprintf(note, sizeof note,
               "results truncated to %d rows; add LIMIT or a narrower WHERE, "
               "or aggregate (COUNT, AVG, GROUP BY)",
               max_rows);
    } else {
      json_object_object_add(r, "max_bytes",
                             json_object_new_int(OPX_DB_MAX_BYTES));
      snprintf(note, sizeof note,
               "results truncated after %ld rows at %d KB of JSON; select "
               "fewer or shorter columns, add LIMIT or a narrower WHERE",
               n, OPX_DB_MAX_BYTES / 1024);
    }
    json_object_object_add(r, "note", json_object_new_string(note));
  }
  *result = r;
  return 0;
}

int opx_db_query(opx_db_t *db, const char *sql, int max_rows,
                 json_object **result, char **err) {
  *result = NULL;
  *err = NULL;
  if (max_rows <= 0)
    max_rows = OPX_DB_MAX_ROWS;
  pthread_mutex_lock(&db->lock);
  sqlite3_stmt *st;
  int rc = compile(db, sql, &st, err);
  if (rc == 0)
    rc = collect(db, st, max_rows, result, err);
  sqlite3_finalize(st);
  pthread_mutex_unlock(&db->lock);
  return rc;
}

/* Whether where's parentheses (outside quotes and comments) never close
 * more than they opened: otherwise it could end the WHERE it is put in. */
static int balanced(const char *s) {
  int depth = 0;
  while (*s != '\0') {
    char q = *s;
    if (q == '\'' || q == '"' || q == '`' || q == '[') {
      char close = q == '[' ? ']' : q;
      const char *e = strchr(s + 1, close);
      if (e == NULL)
        return depth == 0;
      s = e + 1;
    } else if (s[0] == '-' && s[1] == '-') {
      s += strcspn(s, "\n");
    } else if (s[0] == '/' && s[1] == '*') {
      const char *e = strstr(s + 2, "*/");
      s = e != NULL ? e + 2 : s + strlen(s);
    } else {
      if (q == '(')
        depth++;
      else if (q == ')' && --depth < 0)
        return 0;
      s++;
    }
  }
  return depth == 0;
}

int opx_db_select(opx_db_t *db, const char *where, unsigned char *mask,
                  long nsegs, long *count, char **err) {
  *count = 0;
  *err = NULL;
  if (!balanced(where))
    return fail(err, "SQL error: the WHERE clause's parentheses do not "
                     "balance; give a condition on rays' columns, e.g. "
                     "interaction_type = 'tir'");
  char *sql;
  /* The newline ends a trailing "--" comment before the parenthesis. */
  if (asprintf(&sql, "SELECT id FROM rays WHERE (%s\n)", where) < 0)
    return -ENOMEM;
  pthread_mutex_lock(&db->lock);
  sqlite3_stmt *st;
  int rc = compile(db, sql, &st, err);
  free(sql);
  if (rc == 0) {
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
      sqlite3_int64 id = sqlite3_column_int64(st, 0);
      if (id >= 0 && id < nsegs && !mask[id]) {
        mask[id] = 1;
        (*count)++;
      }
    }
    if (s != SQLITE_DONE)
      rc = step_error(db, err);
  }
  sqlite3_finalize(st);
  pthread_mutex_unlock(&db->lock);
  return rc;
}
