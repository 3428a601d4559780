/* What mcp.c and mcp_call.c share. */
#ifndef ATL_MCP_INT_H
#define ATL_MCP_INT_H

#include <pthread.h>
#include <stdint.h>

#include "mcp.h"
#include "rpc_client.h"

/* Connections kept for the next calls: as many as calls run at once in a
 * busy client, no more. */
#define ATL_MCP_IDLE_MAX 16

/* The modern revision, and the newest legacy one (../shared/anchors/mcp.md). */
#define ATL_MCP_MODERN "2026-07-28"
#define ATL_MCP_LEGACY_LATEST "2025-11-25"
#define ATL_MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define ATL_MCP_META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define ATL_MCP_META_CLIENT "io.modelcontextprotocol/clientInfo"
/* How long a modern client may keep tools/list and server/discover: the
 * tool set changes only with a restart of atelierd. */
#define ATL_MCP_TTL_MS 300000

struct atl_mcp_s {
  pthread_mutex_t mu; /* guards what follows */
  char *socket_path;
  char *via;
  char session[33]; /* "" until the first call makes one */
  int call_timeout_ms;
  char client[65];         /* the client's name, for "via" */
  char legacy_version[16]; /* what initialize agreed, "" before it */
  int fixed_session;       /* the session was given (--session) */
  int shared;              /* many clients (config.shared) */
  char *tool_names;        /* "\nname\n...": the last tools/list's, or NULL */
  int64_t names_ms;        /* when tool_names was fetched (monotonic) */
  char *fast_names;        /* the same, of the tools marked fast only */
  /* Idle connections to atelierd, kept between calls (mcp_call.c). */
  atl_rpcc_t idle[ATL_MCP_IDLE_MAX];
  int n_idle;
};

/* The legacy versions we speak, newest first, NULL-terminated (mcp.c):
 * what initialize negotiates, and what an MCP-Protocol-Version header of
 * a legacy request may name (2025-03-26 is what one without it is taken
 * for). */
extern const char *const atl__mcp_legacy_versions[];

/* The era one request is served in. */
typedef struct {
  int modern;
  const char *client;  /* _meta's clientInfo.name (borrowed), or NULL */
  const char *session; /* _meta's ATL_MCP_META_SESSION (borrowed), or NULL */
} atl_mcp_era_t;

/* The era of a request, from its params' _meta: 0 and *era set, or an
 * error answer in *err with the HTTP status the spec asks for. */
int atl__mcp_era_of(json_object *id, const char *method, json_object *params,
                    atl_mcp_era_t *era, json_object **err, int *status);
/* 1 when id is one MCP allows: a string or an integer. */
int atl__mcp_id_ok(json_object *id);

/* mcp_direct.c: what a tools/call's answer is made of. */
json_object *atl__mcp_text_block(const char *text);
/* A tool execution error: the model sees it and may correct its call. */
json_object *atl__mcp_tool_error(json_object *id, const atl_mcp_era_t *era,
                                 const char *text);
/* The text block of a tool's result: its JSON ("a tool that returns
 * structured content SHOULD also return the serialized JSON in a
 * TextContent block"); result borrowed, NULL for {}. */
json_object *atl__mcp_result_text(json_object *result);
/* A successful call's result: content (taken), structuredContent (result,
 * borrowed, when an object) and _meta naming the session. */
json_object *atl__mcp_call_result(json_object *result, json_object *content,
                                  const char *sid);

/* A result answer (result taken), with resultType and _meta when modern. */
json_object *atl__mcp_result(json_object *id, json_object *result,
                             const atl_mcp_era_t *era);
json_object *atl__mcp_server_info(void);
/* o's member key when it is a string (borrowed from o), else NULL. */
const char *atl__mcp_str(json_object *o, const char *key);

/* mcp_call.c */
json_object *atl__mcp_tools_list(atl_mcp_t *m, json_object *id,
                                 json_object *params, const atl_mcp_era_t *era,
                                 atl_mcp_req_t *r);
json_object *atl__mcp_tools_call(atl_mcp_t *m, json_object *id,
                                 json_object *params, const atl_mcp_era_t *era,
                                 atl_mcp_req_t *r);

#endif
