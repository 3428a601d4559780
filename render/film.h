/* What the farm, the daemon's render host and atelier-render compute
 * from a film (atl_render_film_t): each pixel's error estimate, the
 * noise figure and sample counts of a picture, and the denoised picture.
 *
 * The error estimate is Cycles' (after Dammertz et al., "A hierarchical
 * automatic stopping condition for Monte Carlo global illumination"): a
 * pixel's samples are split into two half images, the even-indexed and
 * the odd-indexed ones, and
 *
 *   error = (|R_e - R_o| + |G_e - G_o| + |B_e - B_o|) / 2
 *           / (1e-4 + sqrt(R + G + B))
 *
 * where R_e is the mean of the even samples' red, R_o of the odd ones',
 * and R the mean of all. Half the difference of the half means is about
 * the standard error of the mean, so for a pixel of brightness 1 the
 * error is its relative noise (0.01: 1 %); the square root makes dark
 * pixels count a little less than pure relative noise would, where the
 * eye sees noise less and relative noise would never be reached.
 *
 * Ownership: every buffer is the caller's; nothing is kept. */
#ifndef ATL_RENDER_FILM_H
#define ATL_RENDER_FILM_H

#include <stddef.h>
#include <stdint.h>

#include "render.h"

/* The error estimate of pixel i of the film (rgb_sum, rgb_odd and count
 * are read), or INFINITY when it has fewer than 2 samples. */
double atl_film_pixel_error(const atl_render_film_t *f, size_t i);

/* Totals over some pixels of a film, for the noise figure. Zero it
 * before the first atl_film_tally(). */
typedef struct {
  double sq_sum;      /* squared errors of the pixels with an estimate */
  uint64_t estimated; /* pixels with an estimate (2 samples or more) */
  uint64_t above;     /* pixels whose error exceeds the threshold (or that
                         have no estimate) */
  uint64_t pixels;
  uint64_t spp_sum;
  uint32_t spp_min, spp_max;
} atl_film_tally_t;

/* Adds the n pixels [i0, i0 + n) of f to t, counting those whose error
 * is above `threshold`. */
void atl_film_tally(const atl_render_film_t *f, size_t i0, size_t n,
                    double threshold, atl_film_tally_t *t);

/* The denoised radiance of a w x h film (rgb_sum, count and rgb_odd
 * required; albedo_sum and normal_sum used when not NULL): averages,
 * each pixel's variance from its half images, then atl_render_denoise()
 * into out (w * h * 3 floats, per-pixel means). Returns 0, or -ENOMEM or
 * the denoiser's error. */
int atl_film_denoise(const atl_render_film_t *f, int w, int h, float *out);

/* atl_film_denoise(), then exposure and 8-bit sRGB into rgb8 (w * h * 3
 * bytes). Returns as atl_film_denoise(). */
int atl_film_denoise_resolve(const atl_render_film_t *f, int w, int h,
                             float exposure, uint8_t *rgb8);

#endif
