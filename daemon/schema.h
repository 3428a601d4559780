/* The JSON Schema validator for tool arguments.
 *
 * It implements the subset of JSON Schema draft 2020-12 that tool schemas
 * need (the keyword list is in doc/plugin-guide.md) and is checked against
 * the official JSON-Schema-Test-Suite (tests/unit/test_schema_suite.c).
 *
 * Error messages are written for a language model that has to fix its call:
 * each names the JSON pointer of the offending value, what was expected and
 * what was given, e.g. "/radius: expected a number > 0, got -1". The root
 * is written "(root)".
 *
 * A compiled schema is immutable; validating with it is reentrant, so one
 * schema may be used from many threads at once.
 */
#ifndef ATL_SCHEMA_H
#define ATL_SCHEMA_H

#include <json-c/json.h>

typedef struct atl_schema_s atl_schema_t;

enum {
  /* Reject keywords outside the supported subset (tool schemas). Without
   * it, unknown keywords are ignored as the specification says. Annotations
   * (title, description, examples, $comment, $schema, deprecated, readOnly,
   * writeOnly, format) are always accepted. */
  ATL_SCHEMA_STRICT = 1u << 0
};

/* Compiles schema (the caller keeps its reference; the compiled schema
 * takes its own). Returns 0 and *out, or ATL_ESCHEMA with *err set to a
 * malloc()ed message naming the place in the schema ("#/properties/radius:
 * 'minimum' must be a number"); the caller frees *err. */
int atl_schema_compile(json_object *schema, unsigned flags, atl_schema_t **out,
                       char **err);
/* The same from JSON text; malformed JSON is reported with its position. */
int atl_schema_compile_text(const char *text, unsigned flags,
                            atl_schema_t **out, char **err);
void atl_schema_free(atl_schema_t *s);

/* Validates instance. Returns the number of problems found (0: valid),
 * reporting all of them, not just the first. If errors is not NULL and
 * there are problems, *errors is set to a new JSON array of message strings
 * which the caller releases with json_object_put(). For oneOf/anyOf over
 * objects discriminated by a "const" property (e.g. "type"), the messages
 * are those of the branch the instance names rather than of every branch. */
int atl_schema_validate(const atl_schema_t *s, json_object *instance,
                        json_object **errors);

/* Fills in "default" values of absent object properties, recursively
 * (through properties, items, and the branch of oneOf/anyOf the instance
 * matches). Call it after a successful validation. Returns 0. */
int atl_schema_apply_defaults(const atl_schema_t *s, json_object *instance);

/* The schema the object was compiled from (the compiled schema owns it). */
json_object *atl_schema_json(const atl_schema_t *s);

#endif
