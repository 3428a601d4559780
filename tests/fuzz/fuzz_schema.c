/* Fuzz target: the schema validator. The first line of the input is a
 * schema (compiled strict and lenient), the rest an instance, validated
 * against it and against a realistic tool schema, then completed with
 * defaults. A schema that compiles also goes through the derivation of each
 * provider's wire form and its lint (providers/wire_schema.c), as every
 * tool's does when its plugin loads. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "providers/wire_schema.h"
#include "schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const tool_schema =
    "{\"type\":\"object\",\"required\":[\"shape\"],\"additionalProperties\":"
    "false,\"properties\":{\"shape\":{\"oneOf\":[{\"type\":\"object\","
    "\"properties\":{\"type\":{\"const\":\"sphere\"},\"radius\":{\"type\":"
    "\"number\",\"exclusiveMinimum\":0,\"default\":1},\"center\":{\"type\":"
    "\"array\",\"items\":{\"type\":\"number\"},\"minItems\":3,\"maxItems\":3}},"
    "\"required\":[\"type\"]},{\"type\":\"object\",\"properties\":{\"type\":{"
    "\"const\":\"box\"},\"size\":{\"type\":\"array\",\"prefixItems\":[{"
    "\"type\":"
    "\"number\"}],\"uniqueItems\":true}},\"required\":[\"type\"]}]},\"id\":{"
    "\"type\":\"string\",\"pattern\":\"^[a-z_]+$\",\"maxLength\":64},"
    "\"color\":{\"$ref\":\"#/$defs/"
    "rgb\"}},\"$defs\":{\"rgb\":{\"type\":\"array\","
    "\"items\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1,\"multipleOf\":"
    "0.001}}}}";

static void run(const atl_schema_t *s, const char *text) {
  json_object *inst = json_tokener_parse(text);
  if (inst == NULL)
    return;
  json_object *errors = NULL;
  if (atl_schema_validate(s, inst, &errors) == 0)
    atl_schema_apply_defaults(s, inst);
  json_object_put(errors);
  json_object_put(inst);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static atl_schema_t *tool;
  if (tool == NULL &&
      atl_schema_compile_text(tool_schema, ATL_SCHEMA_STRICT, &tool, NULL) != 0)
    abort();
  char *text = malloc(size + 1);
  if (text == NULL)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  char *nl = strchr(text, '\n');
  const char *instance = nl ? nl + 1 : "";
  if (nl)
    *nl = '\0';
  for (unsigned flags = 0; flags <= ATL_SCHEMA_STRICT; flags++) {
    atl_schema_t *s = NULL;
    char *err = NULL;
    if (atl_schema_compile_text(text, flags, &s, &err) == 0) {
      run(s, instance);
      if (flags == ATL_SCHEMA_STRICT) {
        free(atl_wire_check_tool("fuzzed_tool", atl_schema_json(s)));
        for (int w = 0; w < ATL_WIRE_N; w++) {
          char *why = NULL;
          json_object *wire = atl_wire_schema(atl_schema_json(s), w, &why);
          free(atl_wire_lint("fuzzed_tool", wire, w));
          json_object_put(wire);
          free(why);
        }
      }
      atl_schema_free(s);
    }
    free(err);
  }
  run(tool, instance);
  run(tool, text);
  free(text);
  return 0;
}
