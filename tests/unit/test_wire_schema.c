/* Tool schemas in each provider's wire form (daemon/providers/
 * wire_schema.c): a root union merged into one object schema, Gemini's
 * form with references inlined and only its documented keywords, the lint
 * of every rule, and every tool of every plugin this build makes. */
#include "atl-build.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atelier/plugin.h>

#include "providers/provider.h"
#include "providers/wire_schema.h"

static json_object *parse(const char *text) {
  json_object *o = json_tokener_parse(text);
  cr_assert_not_null(o, "bad JSON in the test: %s", text);
  return o;
}

static const char *text_of(json_object *o) {
  return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                               JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* o at a path of member names and array indexes ("a/0/b"), borrowed. */
static json_object *at(json_object *o, const char *path) {
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", path);
  for (char *save = NULL, *k = strtok_r(buf, "/", &save); k != NULL;
       k = strtok_r(NULL, "/", &save)) {
    if (json_object_is_type(o, json_type_array))
      o = json_object_array_get_idx(o, (size_t)atoi(k));
    else if (!json_object_object_get_ex(o, k, &o))
      return NULL;
  }
  return o;
}

static const char *str_at(json_object *o, const char *path) {
  json_object *v = at(o, path);
  return json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                  : NULL;
}

static json_object *wire(const char *schema, atl_wire_t w) {
  json_object *s = parse(schema);
  char *why = NULL;
  json_object *out = atl_wire_schema(s, w, &why);
  cr_assert_not_null(out, "%s: %s", atl_wire_name(w), why ? why : "");
  json_object_put(s);
  char *bad = atl_wire_lint("a_tool", out, w);
  cr_assert_null(bad, "the derived form fails its own lint: %s\n%s", bad,
                 text_of(out));
  return out;
}

/* A tagged union at the root, as the scene plugin's set_environment. */
#define UNION                                                                  \
  "{\"type\":\"object\",\"description\":\"The sky.\",\"$defs\":{\"rgb\":{"     \
  "\"type\":\"array\",\"items\":{\"type\":\"number\",\"minimum\":0},"          \
  "\"minItems\":3,\"maxItems\":3}},\"oneOf\":["                                \
  "{\"type\":\"object\",\"properties\":{\"type\":{\"const\":\"none\","         \
  "\"description\":\"Black.\"}},\"required\":[\"type\"],"                      \
  "\"additionalProperties\":false},"                                           \
  "{\"type\":\"object\",\"properties\":{\"type\":{\"const\":\"uniform\"},"     \
  "\"emission\":{\"$ref\":\"#/$defs/rgb\",\"description\":\"Radiance.\"}},"    \
  "\"required\":[\"type\",\"emission\"],\"additionalProperties\":false},"      \
  "{\"type\":\"object\",\"description\":\"A blend.\",\"properties\":{"         \
  "\"type\":{\"const\":\"gradient\"},\"emission\":{\"type\":\"number\","       \
  "\"exclusiveMinimum\":0,\"default\":1},\"top\":{\"$ref\":\"#/$defs/rgb\"}}," \
  "\"required\":[\"type\"],\"additionalProperties\":false}]}"

Test(wire, a_root_union_becomes_one_object_schema) {
  for (int w = 0; w < ATL_WIRE_N; w++) {
    json_object *o = wire(UNION, (atl_wire_t)w);
    cr_assert_null(at(o, "oneOf"), "%s", text_of(o));
    cr_assert_null(at(o, "anyOf"));
    cr_assert_str_eq(str_at(o, "type"), "object");
    /* The discriminator: an enum of the branches' values, saying what
     * each is. */
    cr_assert_str_eq(text_of(at(o, "properties/type/enum")),
                     "[\"none\",\"uniform\",\"gradient\"]");
    const char *d = str_at(o, "properties/type/description");
    cr_assert(strstr(d, "none: Black.") && strstr(d, "gradient: A blend."),
              "%s", d);
    /* Only what every branch requires is required; the rest says when. */
    cr_assert_str_eq(text_of(at(o, "required")), "[\"type\"]");
    cr_assert_str_eq(str_at(o, "properties/top/description"),
                     "Only when type is gradient.");
    /* emission differs between two branches: each form says its own. */
    cr_assert_str_eq(str_at(o, "properties/emission/anyOf/0/description"),
                     "When type is uniform: Radiance.", "%s", text_of(o));
    cr_assert(strstr(str_at(o, "properties/emission/description"),
                     "Only when type is uniform or gradient; required when "
                     "type is uniform.") != NULL,
              "%s", str_at(o, "properties/emission/description"));
    cr_assert(json_object_get_boolean(at(o, "additionalProperties")) == 0 &&
              at(o, "additionalProperties") != NULL);
    cr_assert(strstr(str_at(o, "description"), "The sky. (One of 3 forms") ==
              str_at(o, "description"));
    json_object_put(o);
  }
}

Test(wire, anthropic_and_openai_keep_references_and_keywords) {
  json_object *o = wire(UNION, ATL_WIRE_ANTHROPIC);
  cr_assert_str_eq(str_at(o, "properties/top/$ref"), "#/$defs/rgb");
  cr_assert_not_null(at(o, "$defs/rgb"));
  cr_assert_not_null(at(o, "properties/emission/anyOf/1/exclusiveMinimum"));
  json_object_put(o);
}

Test(wire, gemini_gets_references_inlined_and_documented_keywords_only) {
  json_object *o = wire(UNION, ATL_WIRE_GEMINI);
  const char *t = text_of(o);
  cr_assert(strstr(t, "$ref") == NULL && strstr(t, "$defs") == NULL &&
                strstr(t, "exclusiveMinimum") == NULL &&
                strstr(t, "\"const\"") == NULL &&
                strstr(t, "\"default\"") == NULL,
            "%s", t);
  cr_assert_str_eq(str_at(o, "properties/top/type"), "array");
  cr_assert_str_eq(str_at(o, "properties/top/items/type"), "number");
  /* The nearest bound Gemini can say, and the default in words. */
  cr_assert_eq(
      json_object_get_int(at(o, "properties/emission/anyOf/1/minimum")), 0);
  cr_assert(strstr(str_at(o, "properties/emission/anyOf/1/description"),
                   "Default: 1.") != NULL,
            "%s", t);
  json_object_put(o);
  /* const becomes an enum of one; oneOf below the root becomes anyOf;
   * pattern and lengths are left to the host's validation. */
  o = wire("{\"type\":\"object\",\"properties\":{\"k\":{\"const\":\"x\"},"
           "\"u\":{\"oneOf\":[{\"type\":\"string\",\"pattern\":\"^a\","
           "\"maxLength\":3},{\"type\":\"number\"}]}}}",
           ATL_WIRE_GEMINI);
  cr_assert_str_eq(text_of(at(o, "properties/k")), "{\"enum\":[\"x\"]}");
  cr_assert_str_eq(text_of(at(o, "properties/u")),
                   "{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"number\"}]}");
  json_object_put(o);
}

/* A root allOf of parts without properties (required alone, true) is
 * merged without them: once it took the daemon down at plugin load. */
Test(wire, a_root_all_of_merges_whatever_its_parts_have) {
  json_object *o =
      wire("{\"type\":\"object\",\"allOf\":[{\"required\":[\"a\"]},"
           "true,{\"properties\":{\"a\":{\"type\":\"string\"}},"
           "\"required\":[\"a\"]}]}",
           ATL_WIRE_ANTHROPIC);
  cr_assert_str_eq(text_of(at(o, "required")), "[\"a\"]", "%s", text_of(o));
  cr_assert_str_eq(str_at(o, "properties/a/type"), "string");
  json_object_put(o);
  /* false admits nothing: no provider could be offered such a tool. */
  json_object *s = parse("{\"type\":\"object\",\"allOf\":[false]}");
  char *why = NULL;
  cr_assert_null(atl_wire_schema(s, ATL_WIRE_OPENAI, &why));
  cr_assert(why && strstr(why, "is false"), "%s", why);
  free(why);
  json_object_put(s);
  /* A property that can never be given is left out for Gemini. */
  o = wire("{\"type\":\"object\",\"properties\":{\"a\":false,\"b\":{\"type\":"
           "\"integer\"}}}",
           ATL_WIRE_GEMINI);
  cr_assert_str_eq(text_of(at(o, "properties")),
                   "{\"b\":{\"type\":\"integer\"}}");
  json_object_put(o);
}

Test(wire, what_cannot_be_expressed_is_said) {
  static const struct {
    const char *schema;
    int w;
    const char *why;
  } cases[] = {
      {"{\"type\":\"object\",\"oneOf\":[{\"type\":\"string\"}]}",
       ATL_WIRE_OPENAI, "branch 0 of the root's oneOf is not an object schema"},
      {"{\"type\":\"object\",\"$defs\":{\"n\":{\"type\":\"object\","
       "\"properties\":{\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":"
       "\"#/$defs/n\"}}}}},\"properties\":{\"root\":{\"$ref\":\"#/$defs/n\"}}}",
       ATL_WIRE_GEMINI, "'#/$defs/n' refers to itself"},
      {"{\"type\":\"object\",\"properties\":{\"a\":{\"allOf\":[{\"type\":"
       "\"string\"}]}}}",
       ATL_WIRE_GEMINI, "allOf below the root"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    json_object *s = parse(cases[i].schema);
    char *why = NULL;
    json_object *o = atl_wire_schema(s, (atl_wire_t)cases[i].w, &why);
    cr_assert_null(o, "case %zu: %s", i, o ? text_of(o) : "");
    cr_assert(why && strstr(why, cases[i].why), "case %zu: %s", i, why);
    free(why);
    json_object_put(s);
  }
}

/* Each rule of the lint, on a schema that breaks it (as given, not
 * derived: the lint also guards what a provider is handed). */
Test(wire, the_lint_names_each_broken_rule) {
  static const struct {
    const char *name, *schema;
    int w;
    const char *why;
  } cases[] = {
      {"t", "{\"type\":\"string\"}", ATL_WIRE_ANTHROPIC,
       "root must have type 'object'"},
      {"t", "{\"type\":\"object\",\"anyOf\":[{}]}", ATL_WIRE_OPENAI,
       "'anyOf' at its root"},
      {"t", "{\"type\":\"object\",\"enum\":[{}]}", ATL_WIRE_OPENAI,
       "'enum' at its root"},
      {"t", "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\"}}}",
       ATL_WIRE_OPENAI, "#/properties/a: an array schema without items"},
      {"t",
       "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\","
       "\"items\":[{}]}}}",
       ATL_WIRE_ANTHROPIC, "items: draft 2020-12 wants one schema"},
      {"t",
       "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\","
       "\"exclusiveMinimum\":true}}}",
       ATL_WIRE_ANTHROPIC, "exclusiveMinimum: draft 2020-12 wants a number"},
      {"t", "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"int\"}}}",
       ATL_WIRE_OPENAI, "#/properties/a/type: not a JSON Schema type"},
      {"t",
       "{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/x\"}}}",
       ATL_WIRE_ANTHROPIC, "'#/$defs/x' names nothing"},
      /* The optics plugin's old $defs.pieces: a reference to itself. */
      {"t",
       "{\"type\":\"object\",\"$defs\":{\"pieces\":{\"$ref\":\"#/$defs/"
       "pieces\",\"description\":\"d\"}},\"properties\":{\"pieces\":{\"$ref\":"
       "\"#/$defs/pieces\"}}}",
       ATL_WIRE_OPENAI, "refers back to itself"},
      {"t",
       "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\","
       "\"pattern\":\"x\"}}}",
       ATL_WIRE_GEMINI, "Gemini's schema has no keyword 'pattern'"},
      {"t", "{\"type\":\"object\",\"properties\":{\"a\":{\"enum\":[true]}}}",
       ATL_WIRE_GEMINI, "Gemini takes enums of strings and numbers"},
      {"t",
       "{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"a\","
       "\"a\"]}",
       ATL_WIRE_ANTHROPIC, "#/required: a name twice"},
      {"9lives", "{\"type\":\"object\"}", ATL_WIRE_GEMINI,
       "the tool name '9lives' is not a letter or '_'"},
      {"a.b", "{\"type\":\"object\"}", ATL_WIRE_ANTHROPIC,
       "the tool name 'a.b' is not 1 to 64 of [a-zA-Z0-9_-]"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    json_object *s = parse(cases[i].schema);
    char *why = atl_wire_lint(cases[i].name, s, (atl_wire_t)cases[i].w);
    cr_assert(why && strstr(why, cases[i].why), "case %zu: got '%s'", i,
              why ? why : "(nothing)");
    cr_assert(strncmp(why, atl_wire_name((atl_wire_t)cases[i].w),
                      strlen(atl_wire_name((atl_wire_t)cases[i].w))) == 0,
              "case %zu: %s", i, why);
    free(why);
    json_object_put(s);
  }
  /* Names Gemini alone allows. */
  json_object *s = parse("{\"type\":\"object\"}");
  char *why = atl_wire_lint("a.b:c", s, ATL_WIRE_GEMINI);
  cr_assert_null(why, "%s", why);
  json_object_put(s);
}

/* The providers' tool lists carry the wire forms: no union at the root
 * of any schema, and Gemini's declarations use parametersJsonSchema,
 * left out for a tool without parameters. */
Test(wire, the_providers_send_the_wire_forms) {
  json_object *tools =
      parse("[{\"name\":\"sky\",\"description\":\"Set the "
            "sky.\",\"input_schema\":" UNION
            "},{\"name\":\"nothing\",\"description\":\"No parameters.\","
            "\"input_schema\":{\"type\":\"object\",\"properties\":{},"
            "\"additionalProperties\":false}}]");
  static const char *const paths[] = {"0/input_schema", "0/function/parameters",
                                      "0/functionDeclarations/0/"
                                      "parametersJsonSchema"};
  const atl_provider_ops_t *ops[] = {
      &atl_provider_anthropic, &atl_provider_openai, &atl_provider_gemini};
  for (int w = 0; w < ATL_WIRE_N; w++) {
    char *text = ops[w]->tools_text(tools);
    json_object *t = parse(text);
    json_object *s = at(t, paths[w]);
    cr_assert_not_null(s, "%s: %s", atl_wire_name((atl_wire_t)w), text);
    cr_assert_null(at(s, "oneOf"), "%s", text);
    cr_assert_str_eq(str_at(s, "type"), "object");
    if (w == ATL_WIRE_GEMINI) {
      cr_assert_null(at(t, "0/functionDeclarations/0/parameters"));
      cr_assert_null(at(t, "0/functionDeclarations/1/parametersJsonSchema"),
                     "%s", text);
      cr_assert_str_eq(str_at(t, "0/functionDeclarations/1/name"), "nothing");
    }
    json_object_put(t);
    free(text);
  }
  json_object_put(tools);
}

/* make check's lint of every tool of every plugin this build makes: each
 * must be one that all three providers accept. */
Test(wire, every_tool_of_every_plugin_passes_for_every_provider) {
  const char *b = getenv("ATL_TEST_BUILDDIR");
  char dir[4096];
  size_t n_plugins = 0, n_tools = 0;
  /* The build's plugins and the tests' own (echo_test). */
  static const char *const dirs[] = {"plugins/.libs", "tests/plugins/.libs"};
  for (size_t d = 0; d < 2; d++) {
    snprintf(dir, sizeof(dir), "%s/%s", b ? b : ATL_TEST_BUILDDIR, dirs[d]);
    DIR *dp = opendir(dir);
    cr_assert_not_null(dp, "cannot read %s", dir);
    for (struct dirent *e; (e = readdir(dp)) != NULL;) {
      size_t n = strlen(e->d_name);
      if (n < 4 || strcmp(e->d_name + n - 3, ".so") != 0)
        continue;
      char path[8192];
      snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
      void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      cr_assert_not_null(dl, "%s: %s", path, dlerror());
      const atl_plugin_t *p = dlsym(dl, ATL_PLUGIN_SYMBOL);
      cr_assert_not_null(p, "%s: no descriptor", path);
      n_plugins++;
      for (uint32_t i = 0; i < p->n_tools; i++) {
        const atl_tool_t *t =
            (const atl_tool_t *)((const char *)p->tools + i * p->tool_size);
        json_object *s = parse(t->input_schema);
        char *why = atl_wire_check_tool(t->name, s);
        cr_expect_null(why, "plugin %s, tool %s: %s", p->name, t->name, why);
        free(why);
        json_object_put(s);
        n_tools++;
      }
      /* Not closed: a library a plugin brings (cairo's pixman, for optics)
       * keeps tables from its constructor, which unloading would leave for
       * valgrind to count as lost; the daemon keeps them the same way. */
    }
    closedir(dp);
  }
  /* echo, echo_test, optics, render and scene at least, with all their
   * tools. */
  cr_assert_geq(n_plugins, 5, "only %zu plugins", n_plugins);
  cr_assert_geq(n_tools, 39, "only %zu tools", n_tools);
}
