/* The render farm as plugins see it: atl_host_t.render (plugin.h).
 *
 * The daemon runs a farm of worker processes (render.workers, one per core
 * by default) that path-trace scene documents into shared memory. A
 * plugin hands it a scene and waits: render() blocks the calling tool
 * handler, not the daemon, and returns the finished picture. While it
 * waits, the farm calls the plugin's preview function on that same
 * handler thread with the picture so far, at most every preview_ms, so
 * that a plugin can send progress (render_scene emits render.progress
 * events with a PNG). The plugin never sees processes, sockets or shared
 * memory: a worker that dies is replaced and its work redone, and a
 * cancelled or timed-out call stops the workers within 100 ms.
 *
 * Jobs of different sessions share the workers fairly: the farm hands out
 * work round-robin between jobs, a pass of samples at a time.
 *
 * Ownership: everything passed in is the plugin's and is copied before
 * render() starts the job. What render() puts in the result belongs to
 * the plugin, which frees it with free().
 */
#ifndef ATELIER_RENDER_H
#define ATELIER_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include <atelier/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint32_t struct_size; /* sizeof(atl_render_request_t) */
  /* A scene document (doc/scene.md): the scene namespace, an export, or
   * a file of the scene format. The host copies it. */
  const char *scene_json;
  size_t scene_len;
  int width, height; /* pixels, 1 .. 8192 */
  int samples;       /* per pixel, 1 .. 1048576 */
  int max_depth;     /* path vertices (camera hit included), >= 1 */
  uint64_t seed;     /* the image is a pure function of the rest and this */
  float exposure;    /* stops: the radiance is multiplied by 2^exposure */
  /* The shortest time between two previews; 0: no previews. */
  uint32_t preview_ms;
  /* Previews are scaled down to at most this many pixels on their longer
   * side (0: full size), which keeps them cheap for large frames. */
  int preview_max_dim;
} atl_render_request_t;

typedef struct {
  int width, height;   /* the picture's size */
  int samples;         /* samples per pixel it has */
  uint8_t *rgb;        /* width * height * 3 bytes of 8-bit sRGB, top row
                          first; malloc()ed, the plugin frees it */
  double render_ms;    /* from submission to the last sample */
  double paths_per_s;  /* camera paths per second over render_ms */
  int worker_restarts; /* workers that died during the job (redone) */
  /* On failure: a malloc()ed message for the model (free() it), e.g.
   * "the scene cannot be loaded: shapes[2].radius: ...". */
  char *error;
} atl_render_result_t;

/* A preview of the picture so far. Everything in it is the host's and is
 * valid during the call only. */
typedef struct {
  const uint8_t *rgb; /* width * height * 3 bytes of 8-bit sRGB */
  int width, height;  /* scaled down as preview_max_dim says */
  int samples_done;   /* samples per pixel every pixel has so far */
  int pass, passes;   /* waves of samples done, and in all */
  double fraction;    /* the share of all the job's samples done */
} atl_render_preview_t;

/* Runs on the handler thread that called render(). */
typedef void (*atl_render_preview_fn)(void *user,
                                      const atl_render_preview_t *preview);

struct atl_render_api_s {
  uint32_t struct_size; /* sizeof(atl_render_api_t) as the host knows it */
  /* Worker processes the farm keeps. */
  int workers;
  /* Renders req for the call and blocks until the picture is finished,
   * the call is cancelled or times out, or the daemon stops. Handler
   * thread only. Returns 0 with out->rgb set; or ATL_ECANCELED (the call
   * was cancelled or timed out), ATL_ESHUTDOWN, ATL_EINVAL (bad request
   * or a scene the workers could not load: out->error says why),
   * ATL_EIO (workers kept dying on this scene: out->error says so), or
   * ATL_ENOMEM. preview may be NULL. */
  int (*render)(atl_call_t *call, const atl_render_request_t *req,
                atl_render_preview_fn preview, void *user,
                atl_render_result_t *out);
};

#ifdef __cplusplus
}
#endif

#endif /* ATELIER_RENDER_H */
