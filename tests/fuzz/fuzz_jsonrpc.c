/* Fuzz target: JSON-RPC frames as they come off api.sock. The input is a
 * byte stream fed to the framer in two pieces (split at the first byte's
 * value), every frame parsed as a request. */
#include <stdint.h>
#include <stdlib.h>

#include "jsonrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_frame(int kind, const char *line, size_t len, void *user) {
  (void)user;
  if (kind != ATL_FRAME_LINE)
    return 0;
  atl_rpc_request_t req;
  char *err = NULL;
  if (atl_rpc_parse(line, len, &req, &err) == 0)
    atl_rpc_request_free(&req);
  free(err);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  atl_framer_t f;
  /* A small frame limit, so that the oversize path is reached too. */
  atl_framer_init(&f, 4096);
  size_t cut = size ? data[0] % (size + 1) : 0;
  atl_framer_feed(&f, (const char *)data, cut, on_frame, NULL);
  atl_framer_feed(&f, (const char *)data + cut, size - cut, on_frame, NULL);
  atl_framer_feed(&f, "\n", 1, on_frame, NULL);
  atl_framer_free(&f);
  return 0;
}
