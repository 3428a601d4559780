/* The validator against the official JSON-Schema-Test-Suite (draft
 * 2020-12), as shipped by Debian's libtest-json-schema-acceptance-perl.
 *
 * Only the files of the keywords the validator implements are run. Each
 * schema is compiled in strict mode; a schema that uses a keyword outside
 * the supported subset fails to compile, and its cases are counted as
 * skipped under that keyword. Every other case must give the expected
 * result. Two skip reasons are not plain keywords, both outside what
 * schema.h promises:
 *
 *  - "$id (not at the root)": "$id" is accepted only on the root schema,
 *    since embedded resources with their own base URI are not supported;
 *  - "$ref (to another document)": references are resolved within the
 *    same document only ("#...", or through the root's own "$id"); the
 *    suite's references to the meta-schema or to relative URIs such as
 *    "node" or "int.json" would need a URI resolver and a schema store.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include <atelier/error.h>

#include "schema.h"

#define SUITE_SUBDIR "Test-JSON-Schema-Acceptance/tests/draft2020-12"

/* Where Perl's File::ShareDir puts the suite, first Debian's place. */
static const char *const suite_roots[] = {
    "/usr/share/perl5/auto/share/dist/",
    "/usr/local/share/perl5/auto/share/dist/",
    "/usr/share/perl/5/auto/share/dist/",
};

/* The files of the keywords the validator supports (see schema.h). */
static const char *const suite_files[] = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minProperties",
    "maxProperties",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "if-then-else",
    "ref",
    "defs",
    "default",
    "boolean_schema",
};
#define NFILES (sizeof(suite_files) / sizeof(suite_files[0]))

/* The keywords the validator supports; a skip must never name one. */
static const char *const supported[] = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minProperties",
    "maxProperties",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "$ref",
    "$defs",
    "default",
    "title",
    "description",
    "examples",
    "$comment",
    "$schema",
    "deprecated",
    "readOnly",
    "writeOnly",
    "format",
    "$id",
};

typedef struct {
  char name[96];
  int cases;
} tally_t;

static tally_t tallies[32];
static size_t ntallies;

static void tally_skip(const char *reason, int cases) {
  for (size_t i = 0; i < ntallies; i++) {
    if (strcmp(tallies[i].name, reason) == 0) {
      tallies[i].cases += cases;
      return;
    }
  }
  cr_assert_lt(ntallies, sizeof(tallies) / sizeof(tallies[0]));
  snprintf(tallies[ntallies].name, sizeof(tallies[0].name), "%s", reason);
  tallies[ntallies].cases = cases;
  ntallies++;
}

/* The skip reason a strict-mode compile error stands for, or NULL when the
 * error is a real failure. */
static const char *skip_reason(const char *err, char *buf, size_t len) {
  const char *p = strstr(err, "unsupported keyword '");
  if (p != NULL) {
    p += strlen("unsupported keyword '");
    const char *end = strchr(p, '\'');
    if (end == NULL)
      return NULL;
    if (strstr(end, "allowed only at the root") != NULL)
      snprintf(buf, len, "%.*s (not at the root)", (int)(end - p), p);
    else
      snprintf(buf, len, "%.*s", (int)(end - p), p);
    return buf;
  }
  if (strstr(err, "only references within this schema") != NULL)
    return "$ref (to another document)";
  return NULL;
}

static int is_supported(const char *kw) {
  for (size_t i = 0; i < sizeof(supported) / sizeof(supported[0]); i++)
    if (strcmp(kw, supported[i]) == 0)
      return 1;
  return 0;
}

static char *find_suite_dir(void) {
  static char path[512];
  for (size_t i = 0; i < sizeof(suite_roots) / sizeof(suite_roots[0]); i++) {
    snprintf(path, sizeof(path), "%s%s", suite_roots[i], SUITE_SUBDIR);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
      return path;
  }
  return NULL;
}

Test(schema_suite, draft2020_12) {
  const char *dir = find_suite_dir();
  cr_assert_not_null(dir, "the JSON-Schema-Test-Suite was not found (looked in "
                          "/usr/share/perl5/auto/share/dist/" SUITE_SUBDIR
                          "); install it with: apt-get install "
                          "libtest-json-schema-acceptance-perl");
  int passed = 0, failed = 0, skipped = 0;
  for (size_t f = 0; f < NFILES; f++) {
    char path[640];
    snprintf(path, sizeof(path), "%s/%s.json", dir, suite_files[f]);
    json_object *groups = json_object_from_file(path);
    cr_assert_not_null(groups, "cannot read %s", path);
    size_t ngroups = json_object_array_length(groups);
    for (size_t g = 0; g < ngroups; g++) {
      json_object *group = json_object_array_get_idx(groups, g);
      json_object *schema, *tests, *gdesc;
      json_object_object_get_ex(group, "schema", &schema);
      json_object_object_get_ex(group, "tests", &tests);
      json_object_object_get_ex(group, "description", &gdesc);
      int ncases = (int)json_object_array_length(tests);
      atl_schema_t *s = NULL;
      char *err = NULL;
      int rc = atl_schema_compile(schema, ATL_SCHEMA_STRICT, &s, &err);
      if (rc != 0) {
        char buf[96];
        const char *reason = skip_reason(err ? err : "", buf, sizeof(buf));
        if (reason != NULL) {
          skipped += ncases;
          tally_skip(reason, ncases);
        } else {
          fprintf(stderr, "FAIL %s: \"%s\": does not compile: %s\n",
                  suite_files[f], json_object_get_string(gdesc), err);
          failed += ncases;
        }
        free(err);
        continue;
      }
      for (int t = 0; t < ncases; t++) {
        json_object *tc = json_object_array_get_idx(tests, (size_t)t);
        json_object *data = NULL, *valid = NULL, *tdesc = NULL;
        json_object_object_get_ex(tc, "data", &data);
        json_object_object_get_ex(tc, "valid", &valid);
        json_object_object_get_ex(tc, "description", &tdesc);
        json_object *errors = NULL;
        int problems = atl_schema_validate(s, data, &errors);
        int count_only = atl_schema_validate(s, data, NULL);
        int want_valid = json_object_get_boolean(valid);
        /* The messages must agree with the count, with or without them. */
        int consistent =
            problems == count_only &&
            (problems == 0 ? errors == NULL
                           : errors != NULL && (int)json_object_array_length(
                                                   errors) == problems);
        if ((problems == 0) == want_valid && consistent) {
          passed++;
        } else {
          failed++;
          fprintf(stderr,
                  "FAIL %s: \"%s\" / \"%s\": expected %s, got %d "
                  "problem(s)%s%s\n",
                  suite_files[f], json_object_get_string(gdesc),
                  json_object_get_string(tdesc),
                  want_valid ? "valid" : "invalid", problems,
                  consistent ? "" : " (inconsistent count) ",
                  errors ? json_object_to_json_string(errors) : "");
        }
        json_object_put(errors);
      }
      atl_schema_free(s);
    }
    json_object_put(groups);
  }

  fprintf(stderr, "schema suite: %d passed, %d failed, %d skipped", passed,
          failed, skipped);
  if (ntallies > 0) {
    fprintf(stderr, " (unsupported keyword: ");
    for (size_t i = 0; i < ntallies; i++)
      fprintf(stderr, "%s%s %d", i ? ", " : "", tallies[i].name,
              tallies[i].cases);
    fprintf(stderr, ")");
  }
  fprintf(stderr, "\n");

  for (size_t i = 0; i < ntallies; i++)
    cr_expect_not(is_supported(tallies[i].name),
                  "cases were skipped for '%s', a supported keyword",
                  tallies[i].name);
  cr_assert_eq(failed, 0, "%d case(s) of the schema suite failed", failed);
  cr_assert_gt(passed, 500, "suspiciously few cases ran: %d", passed);
}
