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
 * transport runs each tools/call on a worker thread, so that a cancel or
 * a ping is answered meanwhile); each call takes a connection to atelierd
 * of its own (kept between calls). Ownership is stated on each function.
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
  /* The server answers many clients (the bridge's HTTP endpoints): it
   * keeps nothing of one client for the next (no session of its own, no
   * client name), and each call's session comes with the request: from
   * the transport (atl_mcp_req_t.session), or named in a modern
   * request's _meta (ATL_MCP_META_SESSION). A call that names none is
   * told how to. session is then ignored. */
  int shared;
} atl_mcp_config_t;

/* The _meta key a modern request names its session with: 32 hex digits,
 * or "new" for a new session. Every tools/call result carries it too. */
#define ATL_MCP_META_SESSION "dev.atelier/session"

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
  /* The session this request's calls go to (32 hex digits), fixed by
   * the transport: the bridge's /api/sessions/{id}/mcp, or a legacy HTTP
   * client's MCP session. NULL: the one the request names, or the
   * server's own. Borrowed. */
  const char *session;
  /* The client's name when the transport knows it (a legacy HTTP
   * client's, from its initialize), for "via"; NULL if not. Borrowed. */
  const char *client;
  /* The page's address ("http://127.0.0.1:8080"), for the links the
   * answers give; NULL when unknown (stdio). Borrowed. */
  const char *page;
  /* Set by atl_mcp_handle(): the session the call went to does not
   * exist (deleted). A legacy HTTP MCP session bound to it has ended. */
  int session_gone;
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
  /* In: a tools/call must not wait for its session (tool.call's if_idle):
   * the transport runs it on a thread that must stay free. Out: busy is
   * set when the session was running another call, so nothing was done
   * and no answer is given: the transport runs the request again without
   * if_idle, where waiting costs nothing. */
  int if_idle;
  int busy;
  /* Set by atl_mcp_handle(): the request failed before anything that
   * could change a session reached atelierd (it could not be reached, or
   * refused as it was stopping). The transport may send it again once
   * atelierd is back (a restart). */
  int unsent;
} atl_mcp_req_t;

/* Handles one message from the client (msg is borrowed: a parsed JSON
 * value, whatever its shape). Returns the answer to send, a new reference,
 * or NULL when none is due (a notification, a cancelled request). */
json_object *atl_mcp_handle(atl_mcp_t *m, json_object *msg, atl_mcp_req_t *r);

/* A JSON-RPC error answer: a new object; data (taken) may be NULL; id is
 * borrowed, NULL for a JSON-RPC null. */
json_object *atl_mcp_error(json_object *id, int code, json_object *data,
                           const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The answer to a line or body that is not JSON (-32700), naming why. */
json_object *atl_mcp_parse_error(const char *why);

/* msg's id (borrowed from it) when it is one MCP allows (a string or an
 * integer), else NULL. */
json_object *atl_mcp_request_id(json_object *msg);

/* msg's method (borrowed from it), or NULL when it has none. */
const char *atl_mcp_method(json_object *msg);

/* 1 when msg is a request that may take long (tools/call): a transport
 * runs it off its reading thread. */
int atl_mcp_is_slow(json_object *msg);

/* 1 when msg is a tools/call of a tool the last tools/list named and did
 * not mark long-running (its _meta "dev.atelier/longRunning"): one a
 * transport may run on its reading thread when nothing else is in
 * flight. 0 when not, or not known yet. */
int atl_mcp_is_quick(atl_mcp_t *m, json_object *msg);

/* For notifications/cancelled: the id of the request it cancels (borrowed
 * from msg), or NULL when msg is not one. */
json_object *atl_mcp_cancelled_id(json_object *msg);

/* ---- Quick calls another front runs itself ----
 *
 * atelierd runs the quick calls of an `atelierctl mcp` that handed it its
 * stdin and stdout (doc/mcp.md, "stdio"), on its own loop, without a
 * round trip through atelierctl. These are the parts of a tools/call that
 * need no API socket, shared so that both answer alike. */

/* The longest "via" tool.call takes (printable ASCII). */
#define ATL_MCP_VIA_MAX 160
/* "base (client)", or base when client is NULL or empty, made printable
 * and cut to ATL_MCP_VIA_MAX, as tool.call takes it. */
void atl_mcp_via(const char *base, const char *client,
                 char out[ATL_MCP_VIA_MAX + 1]);

/* A tools/call as atl_mcp_direct() read it; borrowed from the message. */
typedef struct {
  json_object *id;
  const char *name;
  json_object *args;  /* an object, or NULL for {} */
  int modern;         /* its era */
  const char *client; /* a modern request's client name, or NULL */
} atl_mcp_direct_t;

/* 1 when msg is a tools/call that needs nothing but tool.call in the
 * client's own session: well formed, in an era we speak, naming no
 * session in _meta and asking for no progress; *out is then filled. 0
 * when it must go the whole way (atl_mcp_handle(), which also answers
 * every malformed one). */
int atl_mcp_direct(json_object *msg, atl_mcp_direct_t *out);

/* The answer to such a call from tool.call's answer env (borrowed:
 * {"success", "result" or "error", "images"}) in session sid: a new
 * object. Images are named, not sent: no quick tool makes one. */
json_object *atl_mcp_direct_answer(const atl_mcp_direct_t *call,
                                   json_object *env, const char *sid);

/* The link between atelierctl mcp and atelierd once stdio is handed off
 * (daemon/mcp_front.h): the line atelierd sends when the client's stdin
 * has ended, and how a state line from atelierctl begins. A client's own
 * line that begins with {"dev.atelier/ goes down with a space before it,
 * so that it is never taken for one of these. */
#define ATL_MCP_LINK_EOF "{\"dev.atelier/eof\":true}"
#define ATL_MCP_LINK_STATE "{\"dev.atelier/state\":"
/* atelierd stopping hands stdio back (daemon/mcp_front.h): it sends
 * {"dev.atelier/detach": "<base64 of what it read of stdin and did not
 * use>"}, atelierctl answers ATL_MCP_LINK_DETACHED and writes nothing
 * more, atelierd writes what it has for stdout and sends
 * ATL_MCP_LINK_RELEASED, and atelierctl reads and writes stdio itself
 * from then on. */
#define ATL_MCP_LINK_DETACH "{\"dev.atelier/detach\":\""
#define ATL_MCP_LINK_DETACHED "{\"dev.atelier/detached\":true}"
#define ATL_MCP_LINK_RELEASED "{\"dev.atelier/released\":true}"

/* What a server knows of its client from the messages so far: its
 * session ("" until a first call makes one), the via its calls go with
 * (config.via) and the client's name ("" before initialize). */
void atl_mcp_state(atl_mcp_t *m, char session[33],
                   char base[ATL_MCP_VIA_MAX + 1], char client[65]);

/* ---- Streamable HTTP (mcp_http.c): what the bridge checks ---- */

/* The headers of one POST that the transport's rules concern; NULL for a
 * header not sent. */
typedef struct {
  const char *accept;           /* Accept */
  const char *protocol_version; /* MCP-Protocol-Version */
  const char *method;           /* Mcp-Method */
  const char *name;             /* Mcp-Name */
} atl_mcp_http_t;

/* Checks a POST's headers against its message (msg borrowed, any JSON):
 * the 2026-07-28 transport's rules ("MUST reject requests where the values
 * specified in the headers do not match the corresponding values in the
 * request body"): -32020 for a required header absent or one that
 * disagrees, -32022 for a version we do not speak, -32602 for a modern
 * header on a request without the envelope, 406 for an Accept that takes
 * neither JSON nor an event stream. NULL when all is well, else the
 * error answer (a new object) with *status the HTTP status. */
json_object *atl_mcp_http_check(const atl_mcp_http_t *h, json_object *msg,
                                int *status);

/* 1 when msg is a legacy initialize request (no modern envelope). */
int atl_mcp_is_legacy_initialize(json_object *msg);
/* 1 when msg is a request (it has an id and a method) in the legacy era:
 * one the legacy HTTP rules (an MCP session) apply to. */
int atl_mcp_is_legacy_request(json_object *msg);

/* The session ids the bridge gives legacy HTTP clients (Mcp-Session-Id):
 * an Atelier session's id, a random nonce, the client's name, and a MAC
 * over them with the daemon's MCP key, so that a client cannot make one
 * up for another session, and the bridge needs no state to read one. At
 * most ATL_MCP_SID_MAX bytes of visible ASCII. */
#define ATL_MCP_SID_MAX 160
/* Makes one for session (32 hex digits) and client (NULL or any text; 32
 * bytes of it kept). key is 64 hex digits. 0, or -1 (no randomness, a
 * malformed key or session). out: ATL_MCP_SID_MAX + 1 bytes. */
int atl_mcp_sid_make(const char *key, const char *session, const char *client,
                     char out[ATL_MCP_SID_MAX + 1]);
/* Reads one: 0 with session (33 bytes) and client (33 bytes, "" when
 * none) when text was made with key, else -1. Constant time in the MAC. */
int atl_mcp_sid_read(const char *key, const char *text, char session[33],
                     char client[33]);
/* Frees what the MAC left in this thread's crypto library state. A thread
 * that made or read session ids calls it before it ends when the process
 * may be exiting at the same time: the library frees that state in a
 * thread-exit destructor, which does not run once its exit handler has
 * deleted the key, and LeakSanitizer then reports the state lost. */
void atl_mcp_thread_done(void);

#endif
