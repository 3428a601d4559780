/* The daemon's render farm and the render API of the host table. Loop
 * thread. */
#ifndef ATL_RENDER_HOST_H
#define ATL_RENDER_HOST_H

#include <stdint.h>

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

/* When a live preview (ATL_RENDER_PREVIEWS_LIVE) is due, given the
 * samples a pixel of the last one made (0: none yet), the samples every
 * pixel has now, and the milliseconds since the last one: the first once
 * every pixel has a sample; then each time the samples have doubled,
 * since every one after the first is denoised and the denoiser takes the
 * workers' CPU; or, for a long render whose samples would take seconds to
 * double again (HQ's last half: 256 to 500), once they have grown and
 * ATL_LIVE_PREVIEW_MAX_GAP_MS have passed, so that the picture and its
 * caption keep moving. 1 when due. Pure: the rule alone, for the tests. */
#define ATL_LIVE_PREVIEW_MAX_GAP_MS 1000
int atl__live_preview_due(int last_samples, int samples,
                          uint64_t ms_since_last);

#endif
