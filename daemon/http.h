/* HTTP client on the daemon's loop: libcurl's multi interface driven by
 * libuv poll and timer handles (the pattern of curl's docs/examples/
 * multi-uv.c), so that no request ever blocks the loop.
 *
 * Requests may be submitted from any thread; they are handed to the loop
 * through a uv_async_t. Completion callbacks run on the loop thread.
 */
#ifndef ATL_HTTP_H
#define ATL_HTTP_H

#include <uv.h>

#include <atelier/plugin.h>

typedef struct atl_http_s atl_http_t;

/* Called on the loop thread for each chunk of the response body as it
 * arrives, for streaming APIs (server-sent events). Return 0 to go on, or
 * nonzero to abort the transfer (the request then completes with
 * ATL_ECANCELED). */
typedef int (*atl_http_data_cb)(const char *data, size_t len, void *user);

/* Creates the client on loop (call from the loop thread). */
int atl_http_init(uv_loop_t *loop, atl_http_t **out);
/* Aborts pending requests (their callbacks get ATL_ECANCELED), closes the
 * handles and frees the client once they are closed; the loop must run for
 * that to finish. Loop thread. */
void atl_http_close(atl_http_t *http);

/* Starts a request (any thread). The request is copied. cb gets the whole
 * body unless on_data is given, in which case the body goes to on_data as
 * it arrives and the response's body is empty. Returns 0 or a negative
 * ATL_E* code (then cb is never called). */
int atl_http_request(atl_http_t *http, const atl_http_request_t *req,
                     atl_http_data_cb on_data, atl_http_done_cb cb, void *user);

/* Number of requests in flight (loop thread). */
unsigned atl_http_active(const atl_http_t *http);

#endif
