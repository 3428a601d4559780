/* atelierd's side of `atelierctl mcp` (doc/mcp.md, "stdio"): the MCP
 * client's stdin and stdout, handed over by atelierctl, served on the
 * daemon's loop.
 *
 * atelierctl mcp sends mcp.attach on its API connection with its stdin
 * and stdout (SCM_RIGHTS). From then on atelierd reads the client's
 * messages itself. A quick tool's call (ATL_TOOL_FAST: a scene edit, a
 * query) in the client's session runs here and is answered on stdout at
 * once, which spares it two process hops; every other message goes down
 * the API connection to atelierctl, line for line, and atelierctl's
 * answers come back up it to be written on stdout, which only atelierd
 * writes while both live. atelierctl keeps what it alone knows (the
 * session it made, the client's name) and says it on the connection
 * before any answer that shows it:
 *
 *   atelierctl -> atelierd  {"dev.atelier/state": {"session", "via",
 *                            "client"}}, or an answer line for stdout
 *   atelierd -> atelierctl  a client's line, or {"dev.atelier/eof": true}
 *                            once stdin has ended
 *
 * When atelierd stops, it hands stdio back first (atl_mcp_front_shutdown),
 * and atelierctl serves the client itself from then on. When atelierd
 * dies, atelierctl answers its calls in flight on stdout itself and exits
 * 2, as before the hand-off. */
#ifndef ATL_MCP_FRONT_H
#define ATL_MCP_FRONT_H

#include <json-c/json.h>

#include "daemon.h"

/* mcp.attach: takes the two descriptors c's client passed (stdin, then
 * stdout), answers {"attached": true}, and turns c into the link. p may
 * hold "state": {session, via, client}, as the link's state lines do. */
void atl_mcp_front_attach(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p);

/* atelierd is stopping: each attached atelierctl mcp is given its stdio
 * back (mcp.h, ATL_MCP_LINK_DETACH), so that it outlives the restart. */
void atl_mcp_front_shutdown(atl_daemon_t *d);
/* 1 while a hand-back is under way: the shutdown waits for it. */
int atl_mcp_front_busy(atl_daemon_t *d);

#endif
