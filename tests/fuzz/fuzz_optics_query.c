/* Fuzz target: query_rays (plugins/optics/opx_db.c) over any text, on the
 * reference prism's database (7 rays). Whatever the model sends must
 * either give a result within the caps (rows, JSON bytes) or be refused
 * with a message of one of the three kinds the tool documents, and no
 * query may change the data: the rays are counted after every input. The
 * same text as a WHERE clause (render_optics' highlight) must select only
 * existing rays or be refused. */
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opx_db.h"
#include "opx_run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(why)                                                              \
  do {                                                                         \
    fprintf(stderr, "fuzz_optics_query: %s (line %d)\n", why, __LINE__);       \
    abort();                                                                   \
  } while (0)

static const char *const prism =
    "{\"version\": 5, \"objs\": [{\"type\": \"Glass\", \"name\": \"prism\", "
    "\"path\": [{\"x\": 200, \"y\": 50, \"arc\": false}, {\"x\": 250, \"y\": "
    "100, \"arc\": false}, {\"x\": 150, \"y\": 100, \"arc\": false}], "
    "\"refIndex\": 1.5}, {\"type\": \"SingleRay\", \"p1\": {\"x\": 100, "
    "\"y\": 80}, \"p2\": {\"x\": 250, \"y\": 80}, \"brightness\": 1}]}";

/* Built once and kept for the process: every input queries the same
 * database, which is the point (no input may change it). */
static opx_run_t *run;

static opx_db_t *database(void) {
  if (run == NULL) {
    json_object *doc = json_tokener_parse(prism);
    char *err = NULL;
    if (opx_run_build(doc, 1000, &run, &err) != 0)
      FAIL("the prism did not simulate");
    json_object_put(doc);
  }
  opx_db_t *db = opx_run_db(run);
  if (db == NULL)
    FAIL("the prism's database was not built");
  return db;
}

static void check_error(const char *err) {
  if (err == NULL || (strncmp(err, "SQL error: ", 11) != 0 &&
                      strncmp(err, "not allowed: ", 13) != 0 &&
                      strncmp(err, "the query ran for more than", 27) != 0))
    FAIL("a refusal without one of the documented messages");
}

static void check_intact(opx_db_t *db) {
  json_object *r = NULL;
  char *err = NULL;
  if (opx_db_query(db, "SELECT COUNT(*), SUM(depth) FROM rays", 0, &r, &err))
    FAIL("the database stopped answering");
  json_object *row =
      json_object_array_get_idx(json_object_object_get(r, "rows"), 0);
  if (json_object_get_int(json_object_array_get_idx(row, 0)) != 7 ||
      json_object_get_int(json_object_array_get_idx(row, 1)) != 14)
    FAIL("a query changed the rays");
  json_object_put(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  opx_db_t *db = database();
  char *sql = malloc(size + 1);
  if (sql == NULL)
    return 0;
  memcpy(sql, data, size);
  sql[size] = '\0';
  json_object *r = NULL;
  char *err = NULL;
  if (opx_db_query(db, sql, 0, &r, &err) == 0) {
    json_object *rows = json_object_object_get(r, "rows");
    if (!json_object_is_type(rows, json_type_array) ||
        json_object_object_get(r, "columns") == NULL ||
        json_object_array_length(rows) > OPX_DB_MAX_ROWS ||
        (long)json_object_array_length(rows) !=
            json_object_get_int64(json_object_object_get(r, "row_count")))
      FAIL("a result without its shape");
    if (strlen(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN)) >
        256 * 1024 + 4096)
      FAIL("a result past the byte cap");
    json_object_put(r);
  } else {
    if (r != NULL)
      FAIL("a refusal with a result");
    check_error(err);
    free(err);
  }
  unsigned char mask[7] = {0};
  long n = 0;
  err = NULL;
  if (opx_db_select(db, sql, mask, 7, &n, &err) == 0) {
    long k = 0;
    for (int i = 0; i < 7; i++)
      k += mask[i];
    if (k != n)
      FAIL("select's count is not its mask's");
  } else {
    check_error(err);
    free(err);
  }
  free(sql);
  check_intact(db);
  return 0;
}
