/* Unit tests of the JSON Schema validator: every keyword, the exact texts
 * of the error messages (a language model reads them to fix its call),
 * defaults, strict compilation and the limits that keep hostile input from
 * crashing the daemon. The official test suite is run separately by
 * test_schema_suite.c. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <atelier/error.h>

#include "schema.h"

static atl_schema_t *compile_ok(const char *text, unsigned flags) {
  atl_schema_t *s = NULL;
  char *err = NULL;
  int rc = atl_schema_compile_text(text, flags, &s, &err);
  cr_assert_eq(rc, 0, "schema %s does not compile: %s", text,
               err ? err : "(no message)");
  cr_assert_null(err);
  return s;
}

/* The compile error of a schema that must not compile. */
static char *compile_err(const char *text, unsigned flags) {
  atl_schema_t *s = NULL;
  char *err = NULL;
  int rc = atl_schema_compile_text(text, flags, &s, &err);
  cr_assert_eq(rc, ATL_ESCHEMA, "schema %s compiled", text);
  cr_assert_null(s);
  cr_assert_not_null(err);
  return err;
}

static void expect_compile_err(const char *text, unsigned flags,
                               const char *want) {
  char *err = compile_err(text, flags);
  cr_expect_str_eq(err, want, "schema %s", text);
  free(err);
}

static int is_valid(const char *schema, const char *instance) {
  atl_schema_t *s = compile_ok(schema, ATL_SCHEMA_STRICT);
  json_object *inst = json_tokener_parse(instance);
  int n = atl_schema_validate(s, inst, NULL);
  json_object_put(inst);
  atl_schema_free(s);
  return n == 0;
}

/* Validates and checks the messages, given as a NULL-terminated list. */
static void expect_errors(const char *schema, const char *instance, ...) {
  atl_schema_t *s = compile_ok(schema, ATL_SCHEMA_STRICT);
  json_object *inst = json_tokener_parse(instance);
  json_object *errors = NULL;
  int n = atl_schema_validate(s, inst, &errors);
  va_list ap;
  va_start(ap, instance);
  int i = 0;
  const char *want;
  while ((want = va_arg(ap, const char *)) != NULL) {
    cr_assert_lt(i, n, "missing message %d \"%s\" for %s (got %s)", i, want,
                 instance,
                 errors ? json_object_to_json_string(errors) : "none");
    cr_expect_str_eq(
        json_object_get_string(json_object_array_get_idx(errors, (size_t)i)),
        want, "message %d for %s", i, instance);
    i++;
  }
  va_end(ap);
  cr_expect_eq(n, i, "%d messages for %s, expected %d: %s", n, instance, i,
               errors ? json_object_to_json_string(errors) : "none");
  if (n == 0)
    cr_expect_null(errors);
  json_object_put(errors);
  json_object_put(inst);
  atl_schema_free(s);
}

/* ---- type ------------------------------------------------------------ */

Test(schema, type_each) {
  cr_expect(is_valid("{\"type\":\"string\"}", "\"x\""));
  cr_expect_not(is_valid("{\"type\":\"string\"}", "1"));
  cr_expect(is_valid("{\"type\":\"number\"}", "1.5"));
  cr_expect(is_valid("{\"type\":\"number\"}", "1"));
  cr_expect(is_valid("{\"type\":\"integer\"}", "1"));
  cr_expect(is_valid("{\"type\":\"integer\"}", "1.0"));
  cr_expect(is_valid("{\"type\":\"integer\"}", "-1e3"));
  cr_expect_not(is_valid("{\"type\":\"integer\"}", "1.5"));
  cr_expect_not(is_valid("{\"type\":\"integer\"}", "\"1\""));
  cr_expect(is_valid("{\"type\":\"boolean\"}", "false"));
  cr_expect_not(is_valid("{\"type\":\"boolean\"}", "0"));
  cr_expect(is_valid("{\"type\":\"null\"}", "null"));
  cr_expect_not(is_valid("{\"type\":\"null\"}", "false"));
  cr_expect(is_valid("{\"type\":\"object\"}", "{}"));
  cr_expect_not(is_valid("{\"type\":\"object\"}", "[]"));
  cr_expect(is_valid("{\"type\":\"array\"}", "[]"));
  cr_expect(is_valid("{\"type\":[\"string\",\"null\"]}", "null"));
  cr_expect_not(is_valid("{\"type\":[\"string\",\"null\"]}", "1"));
}

Test(schema, type_messages) {
  expect_errors("{\"type\":\"integer\"}", "1.5",
                "(root): expected an integer, got 1.5", NULL);
  expect_errors("{\"type\":[\"string\",\"null\"]}", "5",
                "(root): expected a string or null, got 5", NULL);
  expect_errors("{\"type\":[\"string\",\"number\",\"boolean\"]}", "{}",
                "(root): expected a string, a number or a boolean, got an "
                "empty object",
                NULL);
  expect_errors("{\"properties\":{\"n\":{\"type\":\"number\"}}}",
                "{\"n\":\"5\"}", "/n: expected a number, got \"5\"", NULL);
  expect_errors("{\"type\":\"string\"}", "[1,2,3]",
                "(root): expected a string, got an array of 3 items", NULL);
}

Test(schema, null_instance_pointer) {
  /* json-c represents JSON null as a NULL pointer. */
  atl_schema_t *s = compile_ok("{\"type\":\"null\"}", 0);
  cr_expect_eq(atl_schema_validate(s, NULL, NULL), 0);
  atl_schema_free(s);
}

/* ---- objects --------------------------------------------------------- */

Test(schema, required_and_properties) {
  const char *sch = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":"
                    "\"string\"},\"size\":{\"type\":\"integer\"}},"
                    "\"required\":[\"text\"]}";
  cr_expect(is_valid(sch, "{\"text\":\"hi\"}"));
  cr_expect(is_valid(sch, "{\"text\":\"hi\",\"other\":1}"));
  expect_errors(sch, "{\"size\":2}", "(root): missing required property 'text'",
                NULL);
  expect_errors(sch, "{\"text\":1,\"size\":2.5}",
                "/text: expected a string, got 1",
                "/size: expected an integer, got 2.5", NULL);
}

Test(schema, additional_properties_false) {
  const char *sch = "{\"type\":\"object\",\"properties\":{\"text\":{},"
                    "\"size\":{}},\"additionalProperties\":false}";
  expect_errors(sch, "{\"text\":\"a\",\"colour\":\"red\"}",
                "(root): unexpected property 'colour' (allowed: text, size)",
                NULL);
  expect_errors(sch, "{\"txet\":\"a\"}",
                "(root): unexpected property 'txet' (allowed: text, size); "
                "did you mean 'text'?",
                NULL);
  expect_errors("{\"properties\":{\"color\":{}},\"additionalProperties\":"
                "false}",
                "{\"colour\":1}",
                "(root): unexpected property 'colour' (allowed: color); did "
                "you mean 'color'?",
                NULL);
  expect_errors("{\"additionalProperties\":false}", "{\"a\":1}",
                "(root): unexpected property 'a' (no properties are allowed)",
                NULL);
  /* Nothing close enough: no suggestion. */
  expect_errors("{\"properties\":{\"radius\":{}},\"additionalProperties\":"
                "false}",
                "{\"x\":1}",
                "(root): unexpected property 'x' (allowed: radius)", NULL);
}

Test(schema, additional_properties_schema) {
  const char *sch = "{\"properties\":{\"a\":{}},\"additionalProperties\":"
                    "{\"type\":\"number\"}}";
  cr_expect(is_valid(sch, "{\"a\":\"x\",\"b\":1}"));
  expect_errors(sch, "{\"a\":\"x\",\"b\":\"y\"}",
                "/b: expected a number, got \"y\"", NULL);
}

Test(schema, min_max_properties) {
  expect_errors("{\"minProperties\":2}", "{\"a\":1}",
                "(root): expected an object with at least 2 properties, got "
                "1 property",
                NULL);
  expect_errors("{\"maxProperties\":1}", "{\"a\":1,\"b\":2}",
                "(root): expected an object with at most 1 property, got 2 "
                "properties",
                NULL);
  cr_expect(is_valid("{\"maxProperties\":1}", "[1,2]"));
}

Test(schema, pointer_escaping_in_paths) {
  expect_errors("{\"properties\":{\"a/b~c\":{\"type\":\"string\"}}}",
                "{\"a/b~c\":1}", "/a~1b~0c: expected a string, got 1", NULL);
}

/* ---- arrays ---------------------------------------------------------- */

Test(schema, items_and_counts) {
  const char *sch = "{\"type\":\"object\",\"properties\":{\"center\":{"
                    "\"type\":\"array\",\"items\":{\"type\":\"number\"},"
                    "\"minItems\":3,\"maxItems\":3}}}";
  cr_expect(is_valid(sch, "{\"center\":[0,1,2]}"));
  expect_errors(sch, "{\"center\":[0,1]}",
                "/center: expected an array of exactly 3 items, got 2 items",
                NULL);
  expect_errors(sch, "{\"center\":[0,1,2,3]}",
                "/center: expected an array of exactly 3 items, got 4 items",
                NULL);
  expect_errors("{\"minItems\":3}", "[1,2]",
                "(root): expected an array of at least 3 items, got 2 items",
                NULL);
  expect_errors("{\"maxItems\":1}", "[1,2]",
                "(root): expected an array of at most 1 item, got 2 items",
                NULL);
  expect_errors(sch, "{\"center\":[0,\"y\",2]}",
                "/center/1: expected a number, got \"y\"", NULL);
}

Test(schema, prefix_items) {
  const char *sch = "{\"prefixItems\":[{\"type\":\"string\"},{\"type\":"
                    "\"number\"}],\"items\":false}";
  cr_expect(is_valid(sch, "[\"a\",1]"));
  cr_expect(is_valid(sch, "[\"a\"]"));
  expect_errors(sch, "[1,\"a\",true]", "/0: expected a string, got 1",
                "/1: expected a number, got \"a\"",
                "/2: unexpected item (the array allows 2 items), got true",
                NULL);
  cr_expect(is_valid("{\"prefixItems\":[{\"type\":\"string\"}],\"items\":{"
                     "\"type\":\"number\"}}",
                     "[\"a\",1,2]"));
}

Test(schema, unique_items) {
  const char *sch = "{\"uniqueItems\":true}";
  cr_expect(is_valid(sch, "[1,2,3]"));
  cr_expect(is_valid(sch, "[1,\"1\",true,null,[1],{\"a\":1}]"));
  cr_expect_not(is_valid(sch, "[1,1.0]"));
  cr_expect_not(is_valid(sch, "[{\"a\":1,\"b\":[2]},{\"b\":[2.0],\"a\":1}]"));
  cr_expect(is_valid(sch, "[{\"a\":1},{\"a\":1,\"b\":null}]"));
  cr_expect(is_valid(sch, "[0,false]"));
  cr_expect(is_valid("{\"uniqueItems\":false}", "[1,1]"));
  expect_errors(sch, "[\"a\",\"b\",\"c\",\"b\",\"a\"]",
                "(root): expected an array of unique items, got a duplicate: "
                "items 1 and 3 are equal (\"b\")",
                NULL);
}

/* ---- enum, const ----------------------------------------------------- */

Test(schema, enum_messages) {
  expect_errors("{\"properties\":{\"material\":{\"properties\":{\"type\":{"
                "\"enum\":[\"lambertian\",\"metal\"]}}}}}",
                "{\"material\":{\"type\":\"plastik\"}}",
                "/material/type: expected one of \"lambertian\", \"metal\", "
                "got \"plastik\"",
                NULL);
  expect_errors("{\"enum\":[\"metal\",\"glass\"]}", "\"metl\"",
                "(root): expected one of \"metal\", \"glass\", got \"metl\"; "
                "did you mean \"metal\"?",
                NULL);
  expect_errors("{\"enum\":[1,[1,2],{\"a\":true},null]}", "2",
                "(root): expected one of 1, [1,2], {\"a\":true}, null, got 2",
                NULL);
  cr_expect(is_valid("{\"enum\":[1,{\"a\":[1]}]}", "{\"a\":[1.0]}"));
  cr_expect(is_valid("{\"enum\":[1]}", "1.0"));
  cr_expect_not(is_valid("{\"enum\":[false]}", "0"));
}

Test(schema, const_messages) {
  cr_expect(is_valid("{\"const\":{\"a\":[1,2]}}", "{\"a\":[1,2.0]}"));
  cr_expect_not(is_valid("{\"const\":{\"a\":[1,2]}}", "{\"a\":[2,1]}"));
  cr_expect(is_valid("{\"const\":null}", "null"));
  cr_expect_not(is_valid("{\"const\":null}", "0"));
  expect_errors("{\"const\":\"sphere\"}", "\"cube\"",
                "(root): expected \"sphere\", got \"cube\"", NULL);
}

/* ---- numbers --------------------------------------------------------- */

Test(schema, bounds) {
  const char *sch = "{\"properties\":{\"radius\":{\"type\":\"number\","
                    "\"exclusiveMinimum\":0}}}";
  expect_errors(sch, "{\"radius\":-1}",
                "/radius: expected a number > 0, got -1", NULL);
  expect_errors(sch, "{\"radius\":0}", "/radius: expected a number > 0, got 0",
                NULL);
  cr_expect(is_valid(sch, "{\"radius\":0.001}"));
  expect_errors("{\"minimum\":0,\"maximum\":1}", "1.5",
                "(root): expected a number >= 0 and <= 1, got 1.5", NULL);
  expect_errors("{\"type\":\"integer\",\"exclusiveMaximum\":10}", "10",
                "(root): expected an integer < 10, got 10", NULL);
  cr_expect(is_valid("{\"maximum\":1}", "1.0"));
  cr_expect(is_valid("{\"minimum\":0.1}", "\"not a number\""));
  /* Integers beyond 2^53 are compared exactly. */
  cr_expect_not(is_valid("{\"maximum\":9007199254740992}", "9007199254740993"));
}

Test(schema, multiple_of) {
  cr_expect(is_valid("{\"multipleOf\":0.0001}", "0.0075"));
  cr_expect_not(is_valid("{\"multipleOf\":0.0001}", "0.00751"));
  cr_expect(is_valid("{\"multipleOf\":0.01}", "19.99"));
  cr_expect(is_valid("{\"multipleOf\":0.1}", "0.3"));
  cr_expect(is_valid("{\"multipleOf\":1.5}", "4.5"));
  cr_expect_not(is_valid("{\"multipleOf\":2}", "7"));
  cr_expect(is_valid("{\"multipleOf\":3}", "-9"));
  cr_expect(is_valid("{\"multipleOf\":7}", "0"));
  /* Huge values: no overflow into a wrong answer. */
  cr_expect(is_valid("{\"multipleOf\":0.5}", "1e308"));
  cr_expect(is_valid("{\"multipleOf\":1}", "1e300"));
  cr_expect(is_valid("{\"multipleOf\":1e-8}", "12391239123"));
  cr_expect(is_valid("{\"multipleOf\":2}", "9223372036854775806"));
  cr_expect_not(is_valid("{\"multipleOf\":2}", "9223372036854775807"));
  cr_expect_not(is_valid("{\"multipleOf\":0.123456789}", "1e308"));
  expect_errors("{\"multipleOf\":0.5}", "0.3",
                "(root): expected a multiple of 0.5, got 0.3", NULL);
}

/* ---- strings --------------------------------------------------------- */

Test(schema, unicode_length) {
  /* Code points, not bytes: "héllo" is 5 characters in 6 bytes, the emoji
   * one character in 4 bytes. */
  cr_expect(is_valid("{\"maxLength\":5}", "\"h\xc3\xa9llo\""));
  cr_expect_not(is_valid("{\"maxLength\":4}", "\"h\xc3\xa9llo\""));
  cr_expect_not(is_valid("{\"minLength\":2}", "\"\\ud83d\\udca9\""));
  cr_expect(is_valid("{\"minLength\":2}", "\"\\ud83d\\udca9!\""));
  cr_expect(is_valid("{\"minLength\":3}",
                     "\"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\""));
  expect_errors("{\"properties\":{\"name\":{\"minLength\":3}}}",
                "{\"name\":\"ab\"}",
                "/name: expected a string of at least 3 characters, got "
                "\"ab\" (2 characters)",
                NULL);
  expect_errors("{\"maxLength\":1}", "\"\xc3\xa9\xc3\xa9\"",
                "(root): expected a string of at most 1 character, got "
                "\"\xc3\xa9\xc3\xa9\" (2 characters)",
                NULL);
  cr_expect(is_valid("{\"minLength\":2}", "12"));
}

Test(schema, long_values_are_cut) {
  char inst[200];
  memset(inst, 'a', sizeof(inst));
  inst[0] = '"';
  inst[101] = '"';
  inst[102] = '\0';
  char want[200];
  strcpy(want, "(root): expected a number, got \"");
  size_t n = strlen(want);
  memset(want + n, 'a', 60);
  strcpy(want + n + 60, "...\"");
  expect_errors("{\"type\":\"number\"}", inst, want, NULL);
}

Test(schema, pattern) {
  cr_expect(is_valid("{\"pattern\":\"a+\"}", "\"xxaayy\""));
  cr_expect_not(is_valid("{\"pattern\":\"^a+$\"}", "\"xxaayy\""));
  cr_expect(is_valid("{\"pattern\":\"^a+$\"}", "12"));
  /* ECMA-262: "$" does not match before a final newline. */
  cr_expect_not(is_valid("{\"pattern\":\"^a$\"}", "\"a\\n\""));
  /* UTF mode: "." is one code point. */
  cr_expect(is_valid("{\"pattern\":\"^.$\"}", "\"\xc3\xa9\""));
  cr_expect(is_valid("{\"pattern\":\"^\\\\u00e9$\"}", "\"\xc3\xa9\""));
  expect_errors("{\"pattern\":\"^[a-z]+$\"}", "\"ABC\"",
                "(root): expected a string matching the pattern '^[a-z]+$', "
                "got \"ABC\"",
                NULL);
}

/* ---- combinators ----------------------------------------------------- */

Test(schema, all_of_any_of_not) {
  const char *all = "{\"allOf\":[{\"type\":\"number\"},{\"minimum\":2}]}";
  cr_expect(is_valid(all, "3"));
  expect_errors(all, "1", "(root): expected a number >= 2, got 1", NULL);
  const char *any = "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"number\"}]}";
  cr_expect(is_valid(any, "1"));
  cr_expect(is_valid(any, "\"a\""));
  expect_errors(any, "true",
                "(root): expected a value matching at least one of 2 "
                "alternatives, matched 0",
                "(root): expected a string, got true", NULL);
  const char *not = "{\"not\":{\"type\":\"string\"}}";
  cr_expect(is_valid(not, "1"));
  expect_errors(not, "\"s\"",
                "(root): expected a value that does not match the schema in "
                "'not', got \"s\"",
                NULL);
}

Test(schema, one_of_generic) {
  const char *sch = "{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":2}]}";
  cr_expect(is_valid(sch, "1"));
  cr_expect(is_valid(sch, "2.5"));
  expect_errors(sch, "3",
                "(root): expected a value matching exactly one of 2 "
                "alternatives, matched 2 (alternatives 1 and 2)",
                NULL);
  expect_errors("{\"oneOf\":[true,false,true,true]}", "null",
                "(root): expected a value matching exactly one of 4 "
                "alternatives, matched 3 (alternatives 1, 3 and 4)",
                NULL);
  /* No match: the summary, then the problems of the closest alternative. */
  const char *objs =
      "{\"oneOf\":[{\"required\":[\"a\",\"b\",\"c\"]},{\"required\":[\"x\"],"
      "\"properties\":{\"x\":{}}}]}";
  expect_errors(objs, "{\"a\":1}",
                "(root): expected a value matching exactly one of 2 "
                "alternatives, matched 0",
                "(root): missing required property 'x'", NULL);
}

static const char *shapes =
    "{\"type\":\"object\",\"properties\":{\"shape\":{\"oneOf\":["
    "{\"$ref\":\"#/$defs/sphere\"},{\"$ref\":\"#/$defs/box\"}]}},"
    "\"$defs\":{"
    "\"sphere\":{\"type\":\"object\",\"properties\":{\"type\":{\"const\":"
    "\"sphere\"},\"radius\":{\"type\":\"number\",\"exclusiveMinimum\":0}},"
    "\"required\":[\"type\",\"radius\"],\"additionalProperties\":false},"
    "\"box\":{\"type\":\"object\",\"properties\":{\"type\":{\"enum\":"
    "[\"box\"]},\"size\":{\"type\":\"array\",\"minItems\":3}},"
    "\"required\":[\"type\",\"size\"],\"additionalProperties\":false}}}";

Test(schema, one_of_discriminator) {
  cr_expect(is_valid(shapes, "{\"shape\":{\"type\":\"sphere\",\"radius\":1}}"));
  cr_expect(
      is_valid(shapes, "{\"shape\":{\"type\":\"box\",\"size\":[1,1,1]}}"));
  /* The branch the instance names reports, and only it. */
  expect_errors(shapes, "{\"shape\":{\"type\":\"sphere\",\"radius\":-1}}",
                "/shape/radius: expected a number > 0, got -1", NULL);
  expect_errors(
      shapes, "{\"shape\":{\"type\":\"box\",\"size\":[1,1],\"radius\":2}}",
      "/shape/size: expected an array of at least 3 items, got 2 "
      "items",
      "/shape: unexpected property 'radius' (allowed: type, size)", NULL);
  expect_errors(shapes, "{\"shape\":{\"type\":\"cube\",\"size\":[1,1,1]}}",
                "/shape/type: expected one of \"sphere\", \"box\", got "
                "\"cube\"",
                NULL);
  expect_errors(shapes, "{\"shape\":{\"radius\":1}}",
                "/shape: missing required property 'type' (one of "
                "\"sphere\", \"box\")",
                NULL);
  /* Not an object: no discriminator to go by. */
  expect_errors(shapes, "{\"shape\":7}",
                "/shape: expected a value matching exactly one of 2 "
                "alternatives, matched 0",
                "/shape: expected an object, got 7", NULL);
}

Test(schema, if_then_else) {
  const char *sch = "{\"if\":{\"properties\":{\"kind\":{\"const\":\"a\"}}},"
                    "\"then\":{\"required\":[\"x\"]},\"else\":{\"required\":"
                    "[\"y\"]}}";
  cr_expect(is_valid(sch, "{\"kind\":\"a\",\"x\":1}"));
  cr_expect(is_valid(sch, "{\"kind\":\"b\",\"y\":1}"));
  expect_errors(sch, "{\"kind\":\"a\",\"y\":1}",
                "(root): missing required property 'x'", NULL);
  expect_errors(sch, "{\"kind\":\"b\",\"x\":1}",
                "(root): missing required property 'y'", NULL);
  cr_expect(is_valid("{\"then\":false}", "1"));
  cr_expect(is_valid("{\"if\":true}", "1"));
}

Test(schema, boolean_schemas) {
  cr_expect(is_valid("true", "{\"a\":1}"));
  expect_errors("false", "1", "(root): no value is allowed here, got 1", NULL);
  expect_errors("{\"properties\":{\"x\":false}}", "{\"x\":{}}",
                "/x: no value is allowed here, got an empty object", NULL);
}

/* ---- all problems at once -------------------------------------------- */

Test(schema, all_errors_reported) {
  const char *sch =
      "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\","
      "\"maxLength\":3},\"size\":{\"type\":\"integer\",\"minimum\":1},"
      "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\"]}}},"
      "\"required\":[\"text\",\"size\",\"font\"],\"additionalProperties\":"
      "false}";
  expect_errors(sch,
                "{\"text\":\"long\",\"size\":0,\"tags\":[\"a\",\"c\",1],"
                "\"extra\":true}",
                "(root): missing required property 'font'",
                "/text: expected a string of at most 3 characters, got "
                "\"long\" (4 characters)",
                "/size: expected an integer >= 1, got 0",
                "/tags/1: expected one of \"a\", \"b\", got \"c\"",
                "/tags/2: expected one of \"a\", \"b\", got 1",
                "(root): unexpected property 'extra' (allowed: text, size, "
                "tags)",
                NULL);
  atl_schema_t *s = compile_ok(sch, 0);
  json_object *inst = json_tokener_parse("{\"text\":\"long\",\"size\":0}");
  cr_expect_eq(atl_schema_validate(s, inst, NULL), 3);
  json_object_put(inst);
  atl_schema_free(s);
}

/* ---- $ref ------------------------------------------------------------ */

Test(schema, refs) {
  const char *tree =
      "{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"number\"},"
      "\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}}}}";
  cr_expect(is_valid(tree, "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[]}]}"));
  expect_errors(tree, "{\"kids\":[{\"kids\":[{\"v\":\"x\"}]}]}",
                "/kids/0/kids/0/v: expected a number, got \"x\"", NULL);
  const char *esc =
      "{\"$defs\":{\"a~b\":{\"type\":\"integer\"},\"c/d\":{\"type\":"
      "\"string\"},\"e%f\":{\"type\":\"null\"}},\"properties\":{"
      "\"t\":{\"$ref\":\"#/$defs/a~0b\"},\"s\":{\"$ref\":\"#/$defs/c~1d\"},"
      "\"p\":{\"$ref\":\"#/$defs/e%25f\"}}}";
  cr_expect(is_valid(esc, "{\"t\":1,\"s\":\"x\",\"p\":null}"));
  cr_expect_not(is_valid(esc, "{\"t\":\"1\"}"));
  cr_expect_not(is_valid(esc, "{\"s\":1}"));
  cr_expect_not(is_valid(esc, "{\"p\":1}"));
  /* Into an array, and through the root's own $id. */
  cr_expect_not(is_valid("{\"prefixItems\":[{\"type\":\"integer\"},{\"$ref\":"
                         "\"#/prefixItems/0\"}]}",
                         "[1,\"a\"]"));
  cr_expect_not(is_valid("{\"$id\":\"urn:x\",\"properties\":{\"a\":{\"$ref\":"
                         "\"urn:x#/$defs/n\"}},\"$defs\":{\"n\":{\"type\":"
                         "\"number\"}}}",
                         "{\"a\":\"s\"}"));
  /* A sibling keyword of $ref still applies. */
  cr_expect_not(is_valid("{\"$defs\":{\"a\":{\"type\":\"array\"}},"
                         "\"$ref\":\"#/$defs/a\",\"maxItems\":1}",
                         "[1,2]"));
}

Test(schema, ref_cycle_hits_depth_limit) {
  atl_schema_t *s =
      compile_ok("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":"
                 "\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}",
                 ATL_SCHEMA_STRICT);
  json_object *errors = NULL;
  json_object *inst = json_object_new_int(1);
  int n = atl_schema_validate(s, inst, &errors);
  cr_expect_eq(n, 1);
  cr_expect_not_null(
      strstr(json_object_get_string(json_object_array_get_idx(errors, 0)),
             "deeper than 64 levels"));
  json_object_put(errors);
  json_object_put(inst);
  atl_schema_free(s);
}

Test(schema, deep_instance_does_not_crash) {
  /* 20000 nested arrays, built directly (the parser has its own limit). */
  json_object *inst = json_object_new_array();
  for (int i = 0; i < 20000; i++) {
    json_object *outer = json_object_new_array();
    json_object_array_add(outer, inst);
    inst = outer;
  }
  atl_schema_t *s = compile_ok("{\"items\":{\"$ref\":\"#\"}}", 0);
  json_object *errors = NULL;
  cr_expect_gt(atl_schema_validate(s, inst, &errors), 0);
  json_object_put(errors);
  atl_schema_free(s);
  /* Deep equality and hashing are bounded too. */
  s = compile_ok("{\"uniqueItems\":true,\"enum\":[[1]]}", 0);
  json_object *pair = json_object_new_array();
  json_object_array_add(pair, json_object_get(inst));
  json_object_array_add(pair, inst);
  cr_expect_gt(atl_schema_validate(s, pair, NULL), 0);
  json_object_put(pair);
  atl_schema_free(s);
}

/* ---- compiling ------------------------------------------------------- */

Test(schema, strict_rejects_unsupported_keywords) {
  expect_compile_err("{\"properties\":{\"x\":{\"patternProperties\":{}}}}",
                     ATL_SCHEMA_STRICT,
                     "#/properties/x: unsupported keyword 'patternProperties'");
  expect_compile_err("{\"contains\":{}}", ATL_SCHEMA_STRICT,
                     "#: unsupported keyword 'contains'");
  expect_compile_err("{\"$defs\":{\"a\":{\"$id\":\"x\"}}}", ATL_SCHEMA_STRICT,
                     "#/$defs/a: unsupported keyword '$id' (allowed only at "
                     "the root)");
  /* Without the flag unknown keywords are ignored. */
  atl_schema_t *s = compile_ok(
      "{\"properties\":{\"x\":{\"patternProperties\":{},\"foo\":1}}}", 0);
  atl_schema_free(s);
  /* Annotations are always accepted. */
  s = compile_ok("{\"$schema\":\"https://json-schema.org/draft/2020-12/"
                 "schema\",\"$id\":\"urn:t\",\"title\":\"t\",\"description\":"
                 "\"d\",\"examples\":[1],\"$comment\":\"c\",\"deprecated\":"
                 "false,\"readOnly\":true,\"writeOnly\":false,\"format\":"
                 "\"email\",\"default\":1}",
                 ATL_SCHEMA_STRICT);
  atl_schema_free(s);
}

Test(schema, malformed_keyword_values) {
  expect_compile_err(
      "{\"properties\":{\"radius\":{\"minimum\":\"0\"}}}", 0,
      "#/properties/radius/minimum: 'minimum' must be a number, got a string");
  expect_compile_err("{\"type\":\"strng\"}", 0,
                     "#/type: unknown type \"strng\" (expected string, "
                     "number, integer, object, array, boolean or null)");
  expect_compile_err("{\"minItems\":-1}", 0,
                     "#/minItems: 'minItems' must be a non-negative integer, "
                     "got a negative or fractional number");
  expect_compile_err("{\"maxLength\":\"3\"}", 0,
                     "#/maxLength: 'maxLength' must be a non-negative "
                     "integer, got a string");
  expect_compile_err("{\"required\":\"a\"}", 0,
                     "#/required: 'required' must be an array of property "
                     "names, got a string");
  expect_compile_err("{\"multipleOf\":0}", 0,
                     "#/multipleOf: 'multipleOf' must be a number > 0");
  expect_compile_err("{\"oneOf\":[]}", 0,
                     "#/oneOf: 'oneOf' must be a non-empty array of schemas, "
                     "got an empty array");
  expect_compile_err("{\"items\":3}", 0,
                     "#/items: a schema must be an object or a boolean, got a "
                     "number");
  expect_compile_err("{\"uniqueItems\":1}", 0,
                     "#/uniqueItems: 'uniqueItems' must be a boolean, got a "
                     "number");
  expect_compile_err("{\"enum\":1}", 0,
                     "#/enum: 'enum' must be an array, got a number");
  expect_compile_err("{\"$ref\":\"#/$defs/missing\"}", 0,
                     "#/$ref: cannot resolve '$ref' \"#/$defs/missing\": no "
                     "such location");
  expect_compile_err("{\"$ref\":\"other.json\"}", 0,
                     "#/$ref: cannot resolve '$ref' \"other.json\": only "
                     "references within this schema (\"#...\") are "
                     "supported");
  char *err = compile_err("{\"pattern\":\"(\"}", 0);
  cr_expect_not_null(
      strstr(err, "#/pattern: 'pattern' is not a valid regular expression"));
  free(err);
  /* A valid minLength of 2.0 is an integer. */
  atl_schema_free(compile_ok("{\"minLength\":2.0}", ATL_SCHEMA_STRICT));
}

Test(schema, malformed_json_text) {
  expect_compile_err("{\n  \"type\": \"string\",\n  oops\n}", 0,
                     "malformed JSON at line 3, column 3: quoted object "
                     "property name expected");
  char *err = compile_err("{\"type\":", 0);
  cr_expect_not_null(strstr(err, "malformed JSON"), "%s", err);
  free(err);
  err = compile_err("{} x", 0);
  cr_expect_not_null(strstr(err, "malformed JSON at line 1, column 4"), "%s",
                     err);
  free(err);
}

Test(schema, compile_keeps_document) {
  json_object *doc = json_tokener_parse("{\"type\":\"string\"}");
  atl_schema_t *s = NULL;
  char *err = NULL;
  cr_assert_eq(atl_schema_compile(doc, 0, &s, &err), 0);
  json_object_put(doc); /* the compiled schema holds its own reference */
  cr_expect_str_eq(json_object_get_string(
                       json_object_object_get(atl_schema_json(s), "type")),
                   "string");
  atl_schema_free(s);
}

/* ---- defaults -------------------------------------------------------- */

static char *with_defaults(const char *schema, const char *instance) {
  atl_schema_t *s = compile_ok(schema, ATL_SCHEMA_STRICT);
  json_object *inst = json_tokener_parse(instance);
  cr_assert_eq(atl_schema_apply_defaults(s, inst), 0);
  char *out =
      strdup(json_object_to_json_string_ext(inst, JSON_C_TO_STRING_PLAIN));
  json_object_put(inst);
  atl_schema_free(s);
  return out;
}

static void expect_defaults(const char *schema, const char *instance,
                            const char *want) {
  char *got = with_defaults(schema, instance);
  cr_expect_str_eq(got, want, "defaults for %s", instance);
  free(got);
}

Test(schema, defaults) {
  const char *sch =
      "{\"properties\":{\"size\":{\"type\":\"integer\",\"default\":12},"
      "\"font\":{\"$ref\":\"#/$defs/font\"},\"pts\":{\"items\":{"
      "\"properties\":{\"w\":{\"default\":1}}}}},"
      "\"$defs\":{\"font\":{\"default\":{},\"properties\":{\"name\":{"
      "\"default\":\"serif\"},\"opt\":{\"default\":null}}}}}";
  expect_defaults(sch, "{}",
                  "{\"size\":12,\"font\":{\"name\":\"serif\",\"opt\":null}}");
  expect_defaults(sch, "{\"size\":3,\"font\":{\"name\":\"mono\"}}",
                  "{\"size\":3,\"font\":{\"name\":\"mono\",\"opt\":null}}");
  expect_defaults(sch, "{\"size\":1,\"font\":{},\"pts\":[{},{\"w\":5}]}",
                  "{\"size\":1,\"font\":{\"name\":\"serif\",\"opt\":null},"
                  "\"pts\":[{\"w\":1},{\"w\":5}]}");
  /* Through allOf, prefixItems, the matching oneOf branch and if/then. */
  expect_defaults("{\"allOf\":[{\"properties\":{\"a\":{\"default\":1}}}]}",
                  "{}", "{\"a\":1}");
  expect_defaults("{\"prefixItems\":[{\"properties\":{\"a\":{\"default\":"
                  "1}}}]}",
                  "[{},{}]", "[{\"a\":1},{}]");
  expect_defaults(shapes, "{\"shape\":{\"type\":\"box\",\"size\":[1,1,1]}}",
                  "{\"shape\":{\"type\":\"box\",\"size\":[1,1,1]}}");
  expect_defaults(
      "{\"oneOf\":[{\"properties\":{\"k\":{\"const\":\"a\"},\"x\":{"
      "\"default\":\"ax\"}},\"required\":[\"k\"]},{\"properties\":{\"k\":{"
      "\"const\":\"b\"},\"y\":{\"default\":\"by\"}},\"required\":[\"k\"]}]}",
      "{\"k\":\"b\"}", "{\"k\":\"b\",\"y\":\"by\"}");
  expect_defaults("{\"if\":{\"required\":[\"a\"]},\"then\":{\"properties\":{"
                  "\"b\":{\"default\":2}}},\"else\":{\"properties\":{\"c\":{"
                  "\"default\":3}}}}",
                  "{\"a\":0}", "{\"a\":0,\"b\":2}");
}

Test(schema, defaults_are_copies) {
  atl_schema_t *s = compile_ok("{\"properties\":{\"l\":{\"default\":[1,2]}}}",
                               ATL_SCHEMA_STRICT);
  json_object *inst = json_object_new_object();
  atl_schema_apply_defaults(s, inst);
  json_object_array_add(json_object_object_get(inst, "l"),
                        json_object_new_int(3));
  json_object *again = json_object_new_object();
  atl_schema_apply_defaults(s, again);
  cr_expect_eq(json_object_array_length(json_object_object_get(again, "l")), 2);
  json_object_put(inst);
  json_object_put(again);
  atl_schema_free(s);
}

/* ---- threads --------------------------------------------------------- */

typedef struct {
  const atl_schema_t *s;
  const char *good, *wrong;
  int wrong_count;
  int bad;
} thread_arg_t;

static void *validate_many(void *p) {
  thread_arg_t *a = p;
  json_object *good = json_tokener_parse(a->good);
  json_object *wrong = json_tokener_parse(a->wrong);
  for (int i = 0; i < 2000; i++) {
    json_object *errors = NULL;
    if (atl_schema_validate(a->s, good, NULL) != 0)
      a->bad++;
    if (atl_schema_validate(a->s, wrong, &errors) != a->wrong_count)
      a->bad++;
    json_object_put(errors);
  }
  json_object_put(good);
  json_object_put(wrong);
  return NULL;
}

static void run_threads(const char *schema, const char *good, const char *wrong,
                        int wrong_count) {
  atl_schema_t *s = compile_ok(schema, 0);
  pthread_t th[4];
  thread_arg_t args[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (thread_arg_t){s, good, wrong, wrong_count, 0};
    cr_assert_eq(pthread_create(&th[i], NULL, validate_many, &args[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    cr_expect_eq(args[i].bad, 0);
  }
  atl_schema_free(s);
}

Test(schema, concurrent_validation) {
  run_threads(shapes, "{\"shape\":{\"type\":\"sphere\",\"radius\":2}}",
              "{\"shape\":{\"type\":\"sphere\",\"radius\":-2}}", 1);
  /* Threads share one compiled PCRE2 pattern, each with its match data. */
  run_threads("{\"items\":{\"pattern\":\"^[a-z]+[0-9]*$\",\"minLength\":2}}",
              "[\"ab1\",\"cd\"]", "[\"ab1\",\"cd\",\"X\",\"ok22\",\"9\"]", 4);
}

Test(schema, deep_schema_is_rejected) {
  /* {"not": {"not": ... true}} built directly, past the compile limit. */
  json_object *doc = json_object_new_boolean(1);
  for (int i = 0; i < 1000; i++) {
    json_object *outer = json_object_new_object();
    json_object_object_add(outer, "not", doc);
    doc = outer;
  }
  atl_schema_t *s = NULL;
  char *err = NULL;
  cr_expect_eq(atl_schema_compile(doc, 0, &s, &err), ATL_ESCHEMA);
  cr_expect_null(s);
  cr_expect_not_null(strstr(err, "the schema nests deeper than 256 levels"),
                     "%s", err);
  free(err);
  json_object_put(doc);
}
