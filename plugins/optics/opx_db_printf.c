/* printf() and format() for query_rays, guarded (opx_db_int.h).
 *
 * SQLite 3.40's printf spends seconds inside one opcode on a '%c' with a
 * precision of a billion: it goes on looping after the string has passed
 * SQLITE_LIMIT_LENGTH, and only then returns NULL. The progress handler
 * runs between opcodes, so the query's time limit cannot stop it: three
 * rows of printf('%.*c', 1462639752, 'y') took 7.8 s on the reader, and
 * the fuzzer found a query of 300 such rows that would have held the
 * optics plugin for a quarter of an hour.
 *
 * The guard replaces both names on the reader with one function that
 * reads the format as SQLite does, refuses a '%c' whose precision asks
 * for more than the length limit allows (with a message that says so),
 * and hands every other call to SQLite's own printf, run on a private
 * in-memory connection with the same length limit. Formats are SQLite's,
 * not C's: see https://sqlite.org/printf.html. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opx_db_int.h"

/* The most arguments a call can have: the reader's
 * SQLITE_LIMIT_FUNCTION_ARG is lower. */
#define MAX_ARGS 127

typedef struct {
  sqlite3 *conn; /* private, :memory: */
  int limit;     /* the reader's SQLITE_LIMIT_LENGTH */
  /* "SELECT printf(?1, ..., ?n)", prepared on first use, per n. */
  sqlite3_stmt *stmt[MAX_ARGS + 1];
} guard_t;

static void guard_free(void *arg) {
  guard_t *g = arg;
  for (int i = 0; i <= MAX_ARGS; i++)
    sqlite3_finalize(g->stmt[i]);
  sqlite3_close(g->conn);
  free(g);
}

/* An argument read as SQLite reads a '*' width or precision: a 64-bit
 * integer cut to an int; absent arguments are 0. */
static int star_arg(sqlite3_value **argv, int argc, int *next) {
  if (*next >= argc)
    return 0;
  return (int)sqlite3_value_int64(argv[(*next)++]);
}

/* Whether fmt, with the arguments after it, asks for a '%c' repeated
 * more than limit times; *count is then the repetition. Only what
 * decides which argument is a precision is parsed; everything else is
 * SQLite's business. */
static int repeats_too_much(const char *fmt, sqlite3_value **argv, int argc,
                            int limit, long long *count) {
  int next = 1; /* argv[0] is the format */
  for (const char *p = fmt; *p != '\0'; p++) {
    if (*p != '%')
      continue;
    p++;
    /* Flags, and a width written in digits (SQLite reads both in one
     * loop, with ',' as a flag). */
    while (*p != '\0' && strchr("-+ #!0,123456789", *p) != NULL)
      p++;
    if (*p == '*') {
      (void)star_arg(argv, argc, &next);
      p++;
      while (*p >= '0' && *p <= '9')
        p++;
    }
    long long precision = -1;
    if (*p == '.') {
      p++;
      if (*p == '*') {
        int v = star_arg(argv, argc, &next);
        /* A negative precision counts as its absolute value. */
        precision = v < 0 ? -(long long)v : v;
        p++;
      } else {
        unsigned long long v = 0;
        while (*p >= '0' && *p <= '9') {
          v = (v * 10 + (unsigned long long)(*p - '0')) & 0x7fffffffULL;
          p++;
        }
        precision = (long long)v;
      }
    }
    while (*p == 'l')
      p++;
    if (*p == '\0')
      break;
    switch (*p) {
    case '%':
    case 'n': /* counts, takes no argument in SQL */
      break;
    case 'c':
      if (precision > limit) {
        *count = precision;
        return 1;
      }
      next++;
      break;
    default:
      next++;
    }
  }
  return 0;
}

static sqlite3_stmt *statement(guard_t *g, int argc) {
  if (g->stmt[argc] != NULL)
    return g->stmt[argc];
  /* "SELECT printf(" + argc times "?NNN," + ")" */
  char sql[32 + MAX_ARGS * 6];
  size_t n = (size_t)snprintf(sql, sizeof sql, "SELECT printf(");
  for (int i = 1; i <= argc; i++)
    n +=
        (size_t)snprintf(sql + n, sizeof sql - n, "%s?%d", i > 1 ? "," : "", i);
  snprintf(sql + n, sizeof sql - n, ")");
  if (sqlite3_prepare_v2(g->conn, sql, -1, &g->stmt[argc], NULL) != SQLITE_OK)
    g->stmt[argc] = NULL;
  return g->stmt[argc];
}

static void guarded_printf(sqlite3_context *ctx, int argc,
                           sqlite3_value **argv) {
  guard_t *g = sqlite3_user_data(ctx);
  const char *fmt = argc > 0 ? (const char *)sqlite3_value_text(argv[0]) : NULL;
  if (fmt == NULL)
    return; /* NULL, as SQLite's own */
  long long count = 0;
  if (repeats_too_much(fmt, argv, argc, g->limit, &count)) {
    char *msg = sqlite3_mprintf(
        "printf: a %%c repeated %lld times is longer than a value may be "
        "(%d bytes); ask for fewer repetitions",
        count, g->limit);
    sqlite3_result_error(ctx, msg ? msg : "printf: a %c repeated too often",
                         -1);
    sqlite3_free(msg);
    return;
  }
  if (argc > MAX_ARGS) {
    sqlite3_result_error(ctx, "printf: too many arguments", -1);
    return;
  }
  sqlite3_stmt *st = statement(g, argc);
  if (st == NULL) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  for (int i = 0; i < argc; i++)
    sqlite3_bind_value(st, i + 1, argv[i]);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW)
    sqlite3_result_value(ctx, sqlite3_column_value(st, 0));
  else if (rc == SQLITE_TOOBIG)
    sqlite3_result_error_toobig(ctx);
  else if (rc == SQLITE_NOMEM)
    sqlite3_result_error_nomem(ctx);
  else
    sqlite3_result_error(ctx, sqlite3_errmsg(g->conn), -1);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
}

int opx_db_printf_register(sqlite3 *c) {
  guard_t *g = calloc(1, sizeof *g);
  if (g == NULL)
    return SQLITE_NOMEM;
  g->limit = sqlite3_limit(c, SQLITE_LIMIT_LENGTH, -1);
  int rc = sqlite3_open_v2(":memory:", &g->conn,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_limit(g->conn, SQLITE_LIMIT_LENGTH, g->limit);
    /* Both names share the guard; the second registration's destructor
     * is the one that frees it, when the reader closes. */
    int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
    rc = sqlite3_create_function_v2(c, "printf", -1, flags, g, guarded_printf,
                                    NULL, NULL, NULL);
    if (rc == SQLITE_OK)
      return sqlite3_create_function_v2(c, "format", -1, flags, g,
                                        guarded_printf, NULL, NULL, guard_free);
  }
  guard_free(g);
  return rc;
}
