/* The path tracer core: a scene loader, a BVH and a unidirectional path
 * tracer with next-event estimation and multiple importance sampling. It
 * has no daemon dependency; the farm and the CLI link it.
 *
 * Ownership: a scene made by atl_render_scene_load() belongs to the
 * caller, who frees it with atl_render_scene_free(). A loaded scene is
 * never changed by rendering, so any number of threads or processes may
 * call atl_render_tile() on it at once, as long as their tiles do not
 * overlap. Every buffer passed in stays the caller's. */
#ifndef ATL_RENDER_H
#define ATL_RENDER_H

#include <stddef.h>
#include <stdint.h>

typedef struct atl_render_scene_s atl_render_scene_t;

/* What a scene holds, and the render settings stored with it (its
 * "render" object; 0 where the document gives none). */
typedef struct {
  int shape_count;     /* shapes of the document */
  int light_count;     /* lights of the document */
  int primitive_count; /* after flattening: a box is 6, a cylinder 3 */
  int width, height, samples, max_depth;
} atl_render_scene_info_t;

typedef struct {
  int width, height;     /* the full frame, pixels */
  int spp_per_pass;      /* samples per pixel added by one atl_render_tile() */
  int max_depth;         /* path vertices, camera hit included (>= 1) */
  int rr_depth;          /* first vertex subject to Russian roulette; 0: 4 */
  uint64_t seed;         /* the image is a pure function of this and the rest */
  int no_light_sampling; /* 1: BSDF sampling only (for tests) */
  int filter;            /* the pixel filter, atl_render_filter_t; 0: box */
  double filter_width;   /* its width in pixels; 0: the filter's default */
} atl_render_params_t;

/* The pixel filter (the reconstruction filter). It is applied by
 * importance sampling, as Cycles does: each camera sample's offset from
 * the pixel's centre is drawn from the filter's distribution (in x and
 * in y apart: the filters are products of 1D ones) and the sample counts
 * with weight 1 in its own pixel. A sample never lands in another
 * pixel's sums, so a tile's samples stay in the tile and a split render
 * equals an unsplit one. The width means what Cycles' filter_width
 * means, so that its images and ours are reconstructed alike:
 *   box:             offsets uniform in +-width/2; width 1 by default,
 *                    the plain jittered pixel;
 *   Gaussian:        sigma = width / 4, cut at 3 sigma (Cycles: 6);
 *                    width 1.5 by default (sigma 0.375 pixel);
 *   Blackman-Harris: the window spans +-width; width 1.5 by default, as
 *                    Cycles (its standard deviation is 0.42 pixel, the
 *                    box's 0.29).
 * The wider the filter, the softer the picture and the less aliased its
 * edges. */
typedef enum {
  ATL_RENDER_FILTER_BOX = 0,
  ATL_RENDER_FILTER_GAUSSIAN,
  ATL_RENDER_FILTER_BLACKMAN_HARRIS
} atl_render_filter_t;

/* The widths atl_render_filter_check() accepts, in pixels. */
#define ATL_RENDER_FILTER_WIDTH_MIN 0.5
#define ATL_RENDER_FILTER_WIDTH_MAX 8.0

/* Reads a filter's name, as the CLI's --filter and render_scene's
 * "filter" take it: "box", "gaussian" or "blackman-harris" (or
 * "blackman_harris"). Returns 0 and sets *filter, or -EINVAL for any
 * other name or NULL (*filter is then unchanged). */
int atl_render_filter_parse(const char *name, int *filter);

/* The filter's name as atl_render_filter_parse() reads it, or NULL for a
 * value that is no filter. The string is static. */
const char *atl_render_filter_name(int filter);

/* Checks the filter and filter_width of the parameters: the filter must
 * be one of atl_render_filter_t and the width 0 (the filter's default)
 * or within ATL_RENDER_FILTER_WIDTH_MIN .. _MAX. Returns 0, or -EINVAL
 * and writes into msg (len bytes; msg may be NULL) a sentence that says
 * what is wrong and what would be right. The tracer itself renders a
 * filter it refuses as the default box, so callers check first. */
int atl_render_filter_check(int filter, double width, char *msg, size_t len);

/* The width the filter renders with: width if it is above 0, else the
 * filter's default (1 for the box, 1.5 for the others). */
double atl_render_filter_width(int filter, double width);

/* Where atl_render_tile_film() adds a tile's samples. Every buffer covers
 * the full frame (w * h pixels, row-major from the top) and is the
 * caller's. rgb_sum and count are required; the others may be NULL. */
typedef struct {
  float *rgb_sum;        /* w * h * 3: the samples' linear radiance, summed */
  uint32_t *count;       /* w * h: the samples summed */
  float *rgb_odd;        /* w * h * 3: the sum of the odd-indexed samples only,
                            for an error estimate from the two half images
                            (the farm keeps other halves, film.h says why,
                            and passes NULL) */
  float *albedo_sum;     /* w * h * 3: the albedo at the camera ray's first
                            hit, summed (the denoiser's guide) */
  float *normal_sum;     /* w * h * 3: the unit normal there, summed */
  const uint8_t *active; /* w * h: 0 for a pixel that takes no more
                            samples (adaptive sampling has it converged) */
} atl_render_film_t;

/* Reads a scene document of `len` bytes: the scene plugin's format
 * (doc/scene.md), with or without "format"/"version", the bare namespace
 * {camera, environment, shapes, lights}, or export_scene's answer
 * {"scene": {...}}. Returns 0 and sets *out, or returns a negative errno
 * (-EINVAL for a bad document, -ENOMEM) and sets *err to a message naming
 * the object and the field, which the caller frees with free(); err may
 * be NULL. */
int atl_render_scene_load(const char *json, size_t len,
                          atl_render_scene_t **out, char **err);

/* Frees a scene; NULL is allowed. */
void atl_render_scene_free(atl_render_scene_t *s);

/* Fills *info from the scene. */
void atl_render_scene_info(const atl_render_scene_t *s,
                           atl_render_scene_info_t *info);

/* Renders p->spp_per_pass samples for every pixel of the tile [x0, x1) x
 * [y0, y1) (y = 0 is the top row) in pass `pass` (0, 1, ...), and adds
 * them to rgb_sum (width * height * 3 floats, linear RGB, row-major from
 * the top) and count (width * height). Both buffers are the caller's and
 * cover the full frame. The samples of a pixel depend only on the seed,
 * the pixel and the global sample index pass * spp_per_pass + i, and they
 * are added one by one, so the sums are byte-identical whatever the tile
 * split, the order of the tiles, or the split of the samples into passes
 * (as long as a pixel's passes run in order). */
void atl_render_tile(const atl_render_scene_t *s, const atl_render_params_t *p,
                     int x0, int y0, int x1, int y1, int pass, float *rgb_sum,
                     uint32_t *count);

/* The same for the samples [first, first + n) of every pixel of the tile:
 * atl_render_tile() is this with first = pass * spp_per_pass and n =
 * spp_per_pass (p->spp_per_pass is not read). The farm uses it to grow
 * its passes (1, 1, 2, 4, 8, ... samples) while the image stays the same
 * function of the seed as long as each pixel's ranges are added in
 * order. */
void atl_render_tile_samples(const atl_render_scene_t *s,
                             const atl_render_params_t *p, int x0, int y0,
                             int x1, int y1, uint64_t first, int n,
                             float *rgb_sum, uint32_t *count);

/* atl_render_tile_samples() into a film: the same samples, and the
 * same sums byte for byte in rgb_sum and count, plus the film's optional
 * buffers. A pixel that `active` marks 0 is skipped whole: it keeps its
 * sums, and the samples of the other pixels do not change. */
void atl_render_tile_film(const atl_render_scene_t *s,
                          const atl_render_params_t *p, int x0, int y0, int x1,
                          int y1, uint64_t first, int n,
                          const atl_render_film_t *film);

/* Averages the sums, multiplies by 2^exposure (stops), and encodes as
 * 8-bit sRGB into rgb8 (w * h * 3 bytes, the caller's). A pixel with no
 * sample is black. */
void atl_render_resolve(const float *rgb_sum, const uint32_t *count, int w,
                        int h, float exposure, uint8_t *rgb8);

/* The same for n consecutive pixels (rgb_sum: n * 3, count: n, rgb8:
 * n * 3): the farm resolves a frame tile row by tile row. */
void atl_render_resolve_span(const float *rgb_sum, const uint32_t *count,
                             size_t n, float exposure, uint8_t *rgb8);

/* Writes the averaged linear radiance as a little-endian colour PFM
 * (bottom row first, like the Cycles reference). Returns 0 or a negative
 * errno. */
int atl_render_write_pfm(const char *path, const float *rgb_sum,
                         const uint32_t *count, int w, int h);

/* Reads a colour PFM into a newly allocated w * h * 3 float buffer, top
 * row first; *out is the caller's, freed with free(). Returns 0 or a
 * negative errno. */
int atl_render_read_pfm(const char *path, float **out, int *w, int *h);

#endif
