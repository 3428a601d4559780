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
 * ABI 1.2 added adaptive sampling (a noise threshold), a time budget,
 * the pixel filter and the denoiser to the request, and the picture's
 * noise and samples to the result. The host reads the request's
 * struct_size to know which members a plugin has, and writes the
 * result's newer members only when the request's result_size says the
 * plugin's result has them: a plugin built against 1.1 keeps working.
 * ABI 1.6 added ATL_RENDER_PREVIEWS_LIVE to the flags.
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

  /* ---- ABI 1.2: the host reads these only if struct_size covers them. */
  /* The time budget in seconds: 0 for none, else more than 0 and at most
   * nine tenths of the call's own time limit (tools.long_timeout_ms).
   * When it runs out the farm hands out no more work, except the first
   * two passes (every pixel gets two samples, however short the budget),
   * lets the work in flight (some 10 ms) finish, and the render succeeds
   * with the samples it has (result stop ATL_RENDER_STOP_BUDGET). */
  double max_seconds;
  /* Adaptive sampling: 0 for off (every pixel takes every sample), else
   * the noise, 0 < threshold <= 1, under which a pixel takes no more
   * samples. A pixel's noise is the difference of the means of its
   * first 2^k samples and the rest, times sqrt(n_a n_b) / (n_a + n_b)
   * (half of it for equal parts: about its standard error), over the
   * square root of its brightness: 0.01 is 1 % noise on a pixel of
   * brightness 1, and Cycles' default. The decisions depend only on the
   * samples, so the picture is still a pure function of the request. */
  double noise_threshold;
  /* Samples every pixel takes before adaptive sampling may stop it: 0
   * for the farm's default (samples / 8, at least 16), else 2 ..
   * samples. */
  int min_samples;
  /* The pixel filter, ATL_RENDER_REQ_FILTER_*, and its width in pixels
   * (0: the filter's default; else 0.5 .. 8). */
  int filter;
  double filter_width;
  uint32_t flags; /* ATL_RENDER_DENOISE, _DENOISE_PREVIEWS, _PREVIEWS_LIVE */
  /* sizeof(atl_render_result_t) as the plugin knows it: the host writes
   * no member of the result past it. */
  uint32_t result_size;
} atl_render_request_t;

/* The pixel filters (the tracer's atl_render_filter_t): box is 1 pixel
 * wide; Gaussian and Blackman-Harris (Cycles' default) 1.5. */
enum {
  ATL_RENDER_REQ_FILTER_BOX = 0,
  ATL_RENDER_REQ_FILTER_GAUSSIAN = 1,
  ATL_RENDER_REQ_FILTER_BLACKMAN_HARRIS = 2
};

/* atl_render_request_t.flags. Denoising is an edge-aware filter guided
 * by the albedo and normal of each pixel's first hit: it makes a few
 * samples look clean but smooths away fine detail and texture, so it is
 * for drafts and previews, never on by default for a full render. */
#define ATL_RENDER_DENOISE 0x1u /* the final picture is denoised */
/* The previews are denoised too: guided by albedo and normal when the
 * final picture is denoised, else by colour alone (the guides cost the
 * tracer 5 to 10 %, not worth it for previews alone). */
#define ATL_RENDER_DENOISE_PREVIEWS 0x2u
/* ABI 1.6: previews for a page that shows a picture after every change
 * (with ATL_RENDER_DENOISE_PREVIEWS). The first preview in which every
 * pixel has a sample comes raw, as soon as the farm has it: the denoiser
 * takes as long again alone, and about 100 ms more while the workers
 * hold both cores of a small machine. Every later preview is denoised,
 * since a raw one after a denoised one would look worse (on the snowman
 * a denoised picture at 2 samples a pixel is closer to the reference than
 * a raw one at 16), and comes only once the samples a pixel have doubled
 * since the last, or a second after it when they have grown, so that the
 * denoiser takes a few runs of the workers' CPU, not one for every
 * preview. A host before 1.6 refuses the bit, and the loader does load a
 * plugin built against 1.6 there: check host->abi_minor >= 6 first. */
#define ATL_RENDER_PREVIEWS_LIVE 0x4u

/* atl_render_result_t.stop: what ended a successful render. */
enum {
  ATL_RENDER_STOP_SAMPLES = 0, /* some pixels took every sample */
  ATL_RENDER_STOP_NOISE = 1,   /* every pixel reached the noise threshold */
  ATL_RENDER_STOP_BUDGET = 2   /* max_seconds ran out */
};

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

  /* ---- ABI 1.2: written only if the request's result_size covers them.
   * On success: the picture's estimated noise, the root mean square over
   * pixels of each pixel's noise as noise_threshold measures it (of the
   * samples, before any denoising); the share of pixels whose noise is
   * above the threshold (or above 0.01 without one); the samples per
   * pixel, fewest, mean and most (samples above is the request's
   * maximum); and what ended the render. */
  double noise;
  double noise_above;
  int spp_min, spp_max;
  double spp_mean;
  int stop;     /* ATL_RENDER_STOP_* */
  int denoised; /* 1: rgb is the denoised picture */
} atl_render_result_t;

/* A preview of the picture so far. Everything in it is the host's and is
 * valid during the call only. */
typedef struct {
  const uint8_t *rgb; /* width * height * 3 bytes of 8-bit sRGB */
  int width, height;  /* scaled down as preview_max_dim says */
  int samples_done;   /* samples per pixel every pixel has so far */
  int pass, passes;   /* waves of samples done, and in all */
  double fraction;    /* the share of all the job's samples done */
  /* ---- ABI 1.2 ---- */
  int denoised; /* 1: the preview was denoised (ATL_RENDER_DENOISE_PREVIEWS) */
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
   * thread only. out is the plugin's, filled as req->result_size allows
   * (a request without result_size: the ABI 1.1 members only). Returns
   * 0 with out->rgb set; or ATL_ECANCELED (the call
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
