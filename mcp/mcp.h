/* The Model Context Protocol front (doc/mcp.md): Atelier's tools for any
 * MCP client, in both of the protocol's eras, over any transport.
 *
 * An atl_mcp_t is one MCP server: the stdio process of `atelierctl mcp`,
 * or an endpoint of the FastCGI bridge. It turns each JSON-RPC message a
 * client sends into requests to atelierd over its API socket
 * (common/rpc_client.h) and into the answer to send back. The transport
 * reads and writes the bytes: newline-delimited JSON on stdio, HTTP POST
 * bodies in the bridge.
 *
 * The two eras (../shared/anchors/mcp.md §0): a legacy client opens with
 * `initialize` and speaks 2025-11-25 or earlier (the version is negotiated
 * down to one we support); a modern one (2026-07-28) sends no handshake and
 * carries its version and capabilities in every request's `_meta`. Each
 * request is served in the era it shows, so a client that probes with
 * `server/discover` and then sends `initialize` (Claude Code) works too.
 *
 * Tool calls go through the daemon's own tool.call, so the host validates
 * them, commits them and emits them as the session's events: the page
 * shows an MCP client's calls as it shows the agent's, with who called.
 *
 * Threads: atl_mcp_handle() may run on several threads at once (a
 * transport runs each tools/call on a thread of its own, so that a cancel
 * or a ping is answered meanwhile); each call opens its own connection to
 * atelierd. Ownership is stated on each function.
 */
#ifndef ATL_MCP_H
#define ATL_MCP_H

#include <json-c/json.h>

typedef struct atl_mcp_s atl_mcp_t;

typedef struct {
  /* atelierd's API socket. */
  const char *socket_path;
  /* The session the calls go to (its 32 hex digits), or NULL for a new
   * session, made at the first tool call and kept for this server. */
  const char *session;
  /* Who calls, as the session's events name it ("MCP over stdio"). The
   * client's own name (initialize's clientInfo, or the modern _meta) is
   * added to it. */
  const char *via;
  /* How long a tool call may take before the answer is given up on, in
   * ms (0: 10 minutes: a long render's own limit is shorter). */
  int call_timeout_ms;
} atl_mcp_config_t;

/* A new server; the strings are copied. NULL when out of memory. */
atl_mcp_t *atl_mcp_new(const atl_mcp_config_t *cfg);
void atl_mcp_free(atl_mcp_t *m);

/* The session the server's calls go to: "" until a first call made one.
 * Copies it into out (at least 33 bytes). */
void atl_mcp_session(atl_mcp_t *m, char *out, size_t size);

/* One request being handled, as the transport sees it. */
typedef struct {
  /* A descriptor whose peer hanging up cancels the request (the read end
   * of a pipe whose write end the transport closes on
   * notifications/cancelled), or -1. */
  int cancel_fd;
  /* Sends a notification that belongs to this request (a tools/call's
   * notifications/progress, when the client gave a progressToken), from
   * another thread, always before atl_mcp_handle() returns; msg is
   * borrowed. NULL: the transport sends none. */
  void (*notify)(void *user, json_object *msg);
  void *notify_user;
  /* Set by atl_mcp_handle(): the HTTP status the answer goes with (200,
   * 202 for a notification, 400 for a malformed request, 404 for an
   * unknown method in the modern era). */
  int http_status;
  /* Set by atl_mcp_handle(): atelierd went away. The answer says so; a
   * stdio server then exits. */
  int daemon_gone;
  /* Set by atl_mcp_handle(): the request was cancelled; no answer is due
   * (the spec: "SHOULD NOT respond"). */
  int cancelled;
} atl_mcp_req_t;

/* Handles one message from the client (msg is borrowed: a parsed JSON
 * value, whatever its shape). Returns the answer to send, a new reference,
 * or NULL when none is due (a notification, a cancelled request). */
json_object *atl_mcp_handle(atl_mcp_t *m, json_object *msg, atl_mcp_req_t *r);

/* The answer to a line or body that is not JSON (-32700), naming why. */
json_object *atl_mcp_parse_error(const char *why);

/* 1 when msg is a request that may take long (tools/call): a transport
 * runs it on a thread of its own. */
int atl_mcp_is_slow(json_object *msg);

/* For notifications/cancelled: the id of the request it cancels (borrowed
 * from msg), or NULL when msg is not one. */
json_object *atl_mcp_cancelled_id(json_object *msg);

#endif
