/* A tool's input schema in the form each provider's API accepts (its
 * "wire schema"), derived by the host from the plugin's own schema, and the
 * lint that checks a derived form against that API's rules.
 *
 * Plugins declare precise JSON Schemas (2020-12), tagged unions at the root
 * included, and the host validates every call against them unchanged. The
 * providers accept less: Anthropic and OpenAI refuse oneOf/anyOf/allOf at
 * the root of a tool's schema, Gemini takes its own subset. So each provider
 * gets a form derived from the same schema: a root
 * {"type": "object", "properties", "required"} where a root union's branches
 * are merged (the discriminator an enum, each property saying which branches
 * take it), and, for Gemini, every $ref inlined and only the keywords its
 * JSON-Schema field documents. The model still gets the host's precise
 * errors when it mixes branches. doc/providers.md lists the rules and their
 * sources.
 */
#ifndef ATL_WIRE_SCHEMA_H
#define ATL_WIRE_SCHEMA_H

#include <json-c/json.h>

typedef enum {
  ATL_WIRE_ANTHROPIC = 0,
  ATL_WIRE_OPENAI,
  ATL_WIRE_GEMINI,
  ATL_WIRE_N
} atl_wire_t;

/* "anthropic", "openai", "gemini". */
const char *atl_wire_name(atl_wire_t w);
/* The dialect of a provider type name; -1 for any other. */
int atl_wire_of(const char *type);

/* The wire form of schema (not changed) for w: a new object, the caller's
 * to put. NULL when the schema cannot be expressed for w, with *why (the
 * caller's to free) saying why. */
json_object *atl_wire_schema(json_object *schema, atl_wire_t w, char **why);

/* Checks a tool as it would go to w: its name and its wire schema (from
 * atl_wire_schema). NULL when every rule holds; else what breaks which
 * rule, malloc()ed. */
char *atl_wire_lint(const char *name, json_object *wire, atl_wire_t w);

/* Derives and lints the tool for every provider: NULL when all of them
 * would accept it, else the first provider's reason, malloc()ed. The
 * plugin loader refuses a tool for which this says anything. */
char *atl_wire_check_tool(const char *name, json_object *schema);

/* Whether a wire schema takes no parameters at all (a root without
 * properties): Gemini wants the declaration's parameters left out then. */
int atl_wire_is_empty(json_object *wire);

#endif
