/* The daemon's render farm and the render API of the host table. Loop
 * thread. */
#ifndef ATL_RENDER_HOST_H
#define ATL_RENDER_HOST_H

#include <json-c/json.h>

typedef struct atl_daemon_s atl_daemon_t;

/* Starts the farm (render.workers processes of render.worker) and fills
 * in the host template's render table; call before plugins are loaded.
 * A farm that cannot start is logged and left out (render is NULL in the
 * host table); the daemon goes on. Returns 0. */
int atl_render_host_start(atl_daemon_t *d);

/* Stops the farm: renders in flight end with ATL_ESHUTDOWN at once, and
 * the workers are stopped. Idempotent. */
void atl_render_host_stop(atl_daemon_t *d);

/* {running, workers: [pid...], restarts, active_jobs}: a new object. */
json_object *atl_render_host_status(atl_daemon_t *d);

#endif
