/* JSON-RPC 2.0 over newline-delimited frames: the framing (splitting a byte
 * stream into lines, with a size limit) and the parsing and building of
 * requests and responses. No I/O here, so all of it is unit-testable.
 */
#ifndef ATL_JSONRPC_H
#define ATL_JSONRPC_H

#include <stddef.h>

#include <json-c/json.h>

/* The standard codes and ours (doc/api.md). */
enum {
  ATL_RPC_PARSE_ERROR = -32700,
  ATL_RPC_INVALID_REQUEST = -32600,
  ATL_RPC_METHOD_NOT_FOUND = -32601,
  ATL_RPC_INVALID_PARAMS = -32602,
  ATL_RPC_INTERNAL_ERROR = -32603,
  ATL_RPC_NO_SESSION = -32001,
  ATL_RPC_NO_IMAGE = -32002,
  ATL_RPC_SHUTTING_DOWN = -32003,
  ATL_RPC_QUEUE_FULL = -32004,
  ATL_RPC_UNAUTHORIZED = -32005, /* admin.sock: auth first, or wrong secret */
  ATL_RPC_NO_CLIENT = -32006,    /* admin.sock: client.kill of no client */
  ATL_RPC_REFUSED = -32007,      /* accept_sessions is false (a drain) */
  ATL_RPC_BUSY = -32008, /* tool.call if_idle: the session runs a call */
  ATL_RPC_STORE_ERROR = -32010
};

/* Splits a byte stream into frames (lines without the '\n'). A frame longer
 * than max_frame is reported once as oversize and the rest of it, up to
 * the next newline, is discarded, so one bad frame never costs the
 * connection. */
typedef struct {
  char *buf;
  size_t len;
  size_t cap;
  size_t max_frame;
  size_t scanned; /* bytes of buf already known to hold no newline */
  int discarding; /* inside an oversize frame */
} atl_framer_t;

void atl_framer_init(atl_framer_t *f, size_t max_frame);
void atl_framer_free(atl_framer_t *f);

enum { ATL_FRAME_LINE = 1, ATL_FRAME_OVERSIZE = 2 };

/* Called for each frame: kind is ATL_FRAME_LINE (line, len: the frame,
 * not NUL-terminated) or ATL_FRAME_OVERSIZE (line NULL). Return nonzero to
 * stop feeding (the rest stays buffered for the next atl_framer_feed). */
typedef int (*atl_frame_cb)(int kind, const char *line, size_t len, void *user);

/* Adds data and calls cb for every complete frame. Returns 0, or
 * ATL_ENOMEM. Empty lines (and a '\r' before '\n') are skipped. */
int atl_framer_feed(atl_framer_t *f, const char *data, size_t len,
                    atl_frame_cb cb, void *user);

/* Calls cb for the complete frames already buffered (those a callback
 * stopped at), without adding data. Returns 0. */
int atl_framer_drain(atl_framer_t *f, atl_frame_cb cb, void *user);

/* A parsed request. The strings point into req->root, which owns them. */
typedef struct {
  json_object *root; /* the whole request; owned */
  json_object *id;   /* NULL for null or absent; borrowed from root */
  int notification;  /* no "id" member: no response is sent */
  const char *method;
  json_object *params; /* NULL if absent; borrowed from root */
} atl_rpc_request_t;

/* Parses one frame. On success returns 0 and fills req (release with
 * atl_rpc_request_free). On failure returns a JSON-RPC error code and sets
 * *error_response to the complete response text to send (malloc()ed), or
 * NULL when no response is due. */
int atl_rpc_parse(const char *line, size_t len, atl_rpc_request_t *req,
                  char **error_response);
void atl_rpc_request_free(atl_rpc_request_t *req);

/* Builds a response line (with the trailing '\n'), malloc()ed. result is
 * borrowed; id may be NULL (written as null). result_text is JSON text
 * inserted as is (used when the result was serialized off the loop). */
char *atl_rpc_result(json_object *id, json_object *result, size_t *len);
char *atl_rpc_result_text(json_object *id, const char *result_text,
                          size_t *len);
char *atl_rpc_error(json_object *id, int code, const char *message,
                    json_object *data, size_t *len);

#endif
