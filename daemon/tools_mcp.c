/* tool.list {"wire": "mcp"}: the tools as an MCP server's tools/list
 * gives them (doc/mcp.md; ../shared/anchors/mcp.md §4.1 and §9).
 *
 * The input schemas are the form Anthropic's API takes (a root
 * {"type": "object"}, a root union merged, no $schema), which every MCP
 * client accepts: Claude Code drops every tool of a server whose schema
 * has a root combinator, and the others are at least as lenient. The
 * annotations come from the tool's flags; the spec's defaults are the
 * unsafe ones (destructive, open world), so each hint is written out. */
#include "atl-build.h"

#include <ctype.h>
#include <string.h>

#include "daemon.h"
#include "providers/provider.h"
#include "tools_mcp.h"

/* "create_shape" -> "Create shape": the display name clients show. */
static json_object *title_of(const char *name) {
  char t[80];
  size_t n = 0;
  for (; name[n] && n + 1 < sizeof(t); n++)
    t[n] = name[n] == '_' ? ' ' : name[n];
  t[n] = '\0';
  t[0] = (char)toupper((unsigned char)t[0]);
  return json_object_new_string(t);
}

static json_object *annotations(const atl_tool_t *t, json_object *title) {
  uint32_t f = t->flags;
  int ro = (f & ATL_TOOL_READ_ONLY) != 0;
  json_object *a = json_object_new_object();
  json_object_object_add(a, "title", title);
  json_object_object_add(a, "readOnlyHint", json_object_new_boolean(ro));
  /* "meaningful only when readOnlyHint == false", but a client that reads
   * it regardless must not be told that a read destroys. */
  json_object_object_add(
      a, "destructiveHint",
      json_object_new_boolean(!ro && (f & ATL_TOOL_DESTRUCTIVE) != 0));
  json_object_object_add(
      a, "idempotentHint",
      json_object_new_boolean(ro || (f & ATL_TOOL_IDEMPOTENT) != 0));
  json_object_object_add(
      a, "openWorldHint",
      json_object_new_boolean((f & ATL_TOOL_OPEN_WORLD) != 0));
  return a;
}

/* A result schema as MCP's outputSchema: only a plain object root, since
 * 2025-11-25 requires one and the v1 SDK client refuses the whole list
 * when one tool's outputSchema lacks it. NULL: leave it out. */
static json_object *output_schema(const atl_tool_entry_t *t) {
  json_object *s = t->result ? atl_schema_json(t->result) : NULL;
  json_object *type = NULL;
  if (s == NULL || !json_object_is_type(s, json_type_object) ||
      !json_object_object_get_ex(s, "type", &type) ||
      !json_object_is_type(type, json_type_string) ||
      strcmp(json_object_get_string(type), "object") != 0)
    return NULL;
  static const char *const root_unions[] = {"oneOf", "anyOf",   "allOf",
                                            "not",   "$schema", NULL};
  for (size_t i = 0; root_unions[i]; i++)
    if (json_object_object_get_ex(s, root_unions[i], NULL))
      return NULL;
  return json_object_get(s);
}

json_object *atl_tools_mcp(const atl_daemon_t *d) {
  json_object *out = json_object_new_array();
  for (size_t i = 0; i < d->registry.n_tools; i++) {
    const atl_tool_entry_t *t = d->registry.tools[i];
    /* A tool for people only is for the page, not for a client's model. */
    if (t->tool.flags & ATL_TOOL_NOT_FOR_MODEL)
      continue;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(t->tool.name));
    json_object *title = title_of(t->tool.name);
    json_object_object_add(o, "title", json_object_get(title));
    json_object_object_add(o, "description",
                           json_object_new_string(t->tool.description));
    json_object_object_add(
        o, "inputSchema",
        atl_provider_wire(atl_schema_json(t->input), ATL_WIRE_ANTHROPIC));
    json_object *out_schema = output_schema(t);
    if (out_schema != NULL)
      json_object_object_add(o, "outputSchema", out_schema);
    json_object_object_add(o, "annotations", annotations(&t->tool, title));
    /* How long a call may take, in the vendor namespace _meta allows:
     * a tool that may run long (a render), and one whose handler never
     * blocks (ATL_TOOL_FAST), whose calls atelierctl mcp runs on its
     * reading thread when nothing else is in flight (a thread hand-off
     * spared per call). */
    if (t->tool.flags & (ATL_TOOL_LONG_RUNNING | ATL_TOOL_FAST)) {
      json_object *meta = json_object_new_object();
      json_object_object_add(meta,
                             (t->tool.flags & ATL_TOOL_LONG_RUNNING)
                                 ? "dev.atelier/longRunning"
                                 : "dev.atelier/fast",
                             json_object_new_boolean(1));
      json_object_object_add(o, "_meta", meta);
    }
    json_object_array_add(out, o);
  }
  return out;
}
