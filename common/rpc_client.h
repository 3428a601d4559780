/* A blocking JSON-RPC 2.0 client for atelierd's API socket: the small
 * library (common/libatlrpc.la) that atelierctl, the FastCGI bridge and
 * the MCP front share.
 *
 * Each client sends one request at a time on a connection and waits for
 * its answer, so it needs no event loop: plain blocking sockets with
 * poll(2) for the deadlines are enough. A program with several requests in
 * flight (the bridge's threads, the MCP front's calls) opens one
 * connection for each; an atl_rpcc_t is never shared between threads.
 * See doc/api.md for the protocol.
 *
 * Ownership: an atl_rpcc_t is the caller's (on its stack or in its
 * structs); atl_rpcc_close() frees what the client allocated in it.
 */
#ifndef ATL_COMMON_RPC_CLIENT_H
#define ATL_COMMON_RPC_CLIENT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* The daemon's application error codes (doc/api.md). */
#define ATL_RPCC_NO_SESSION (-32001)
/* atelierd is stopping: the request was refused, nothing was done. */
#define ATL_RPCC_SHUTTING_DOWN (-32003)
/* tool.call with if_idle: the session is running another call. */
#define ATL_RPCC_BUSY (-32008)
#define ATL_RPCC_NO_IMAGE (-32002)

/* How atl_rpcc_call ended. */
enum {
  ATL_RPCC_OK = 0,       /* *result holds the "result" member */
  ATL_RPCC_ERROR = 1,    /* the daemon answered with a JSON-RPC error */
  ATL_RPCC_TRANSPORT = 2 /* no usable answer: see atl_rpcc_t.errmsg */
};

typedef struct {
  int fd;
  int64_t next_id;
  /* Bytes received but not consumed yet; a response may be tens of MB (an
   * image in base64), so the buffer grows as needed. */
  char *buf;
  size_t len, cap;
  /* Set by atl_rpcc_call when it returns ATL_RPCC_ERROR. */
  int err_code;
  char *err_message;
  json_object *err_data;
  /* The last call's request was written whole: after a transport failure
   * with sent 0 the daemon never saw it, so it is safe to send again. */
  int sent;
  /* A human-readable reason for the last failure of any kind. */
  char errmsg[512];
  /* Set by a signal handler to make a waiting call give up. */
  volatile sig_atomic_t *interrupted;
  /* The signal mask to wait with (ppoll), or NULL to keep the current one. */
  const sigset_t *wait_mask;
  /* Another descriptor to watch while waiting (-1: none; kept across
   * atl_rpcc_connect): when its peer hangs up, the call gives up at once
   * with watch_closed set. The bridge watches the FastCGI connection of an
   * event stream, so that a browser that left frees its long poll now,
   * not at the next heartbeat. */
  int watch_fd;
  int watch_closed;
  /* atl_rpcc_read_line's: where the unread lines begin in buf (0 between
   * calls of atl_rpcc_call, which never leaves any). */
  size_t start;
} atl_rpcc_t;

/* Connects to the unix socket at path. Returns 0, or -1 with c->errmsg set
 * and errno preserved. */
int atl_rpcc_connect(atl_rpcc_t *c, const char *path);

/* Sends {"method": method, "params": params} and waits at most timeout_ms
 * for the answer with the same id. params may be NULL; ownership of it
 * passes to the call. On ATL_RPCC_OK, *result is a new reference the caller
 * must put. */
int atl_rpcc_call(atl_rpcc_t *c, const char *method, json_object *params,
                  int timeout_ms, json_object **result);

void atl_rpcc_close(atl_rpcc_t *c);

/* After a request that turned the connection into a stream (the admin
 * socket's trace): waits at most timeout_ms (-1: for ever) for the next
 * line. Returns 1 with a malloc()ed, NUL-terminated line (no newline) in
 * *line, 0 when the daemon closed the connection, -1 on a time-out
 * (errmsg empty) or an error (errmsg says what). */
int atl_rpcc_read_line(atl_rpcc_t *c, int timeout_ms, char **line);
/* 1 if a whole line is already read and waiting: the next
 * atl_rpcc_read_line returns at once. */
int atl_rpcc_has_line(const atl_rpcc_t *c);
/* Copies what the stream sends to out_fd as it comes, in whole reads (a
 * trace with --json): one step, waiting at most timeout_ms for data.
 * 1 to go on, 0 when the daemon closed the stream, -1 on an error
 * (errmsg) or a signal. */
int atl_rpcc_pass(atl_rpcc_t *c, int out_fd, int timeout_ms);

/* Parses a whole JSON text (surrounding whitespace allowed). On failure
 * returns NULL and writes json-c's reason and the byte offset into err. */
json_object *atl_json_parse_text(const char *text, size_t len, char *err,
                                 size_t errlen);

/* Decodes base64 (standard or URL-safe alphabet, whitespace ignored), the
 * encoding of image data on the wire. Returns a new buffer (to free) with
 * its length in *outlen, or NULL if the text is not base64. */
unsigned char *atl_base64_decode(const char *in, size_t len, size_t *outlen);

#endif
