/* The tools in MCP's form (tools_mcp.c). Loop thread. */
#ifndef ATL_TOOLS_MCP_H
#define ATL_TOOLS_MCP_H

#include <json-c/json.h>

typedef struct atl_daemon_s atl_daemon_t;

/* Every tool a model may be offered, in registry order, as MCP's
 * tools/list gives it: [{name, title, description, inputSchema,
 * outputSchema?, annotations}]. A new array, the caller's. */
json_object *atl_tools_mcp(const atl_daemon_t *d);

#endif
