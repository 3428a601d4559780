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
 * The two half images must each be spread over the whole of the
 * sampler's domain. With independent random samples any split will do;
 * with the low-discrepancy sampler (rng.h) the even- and odd-indexed
 * samples are not: the lowest bit of the index picks the half of every
 * dimension a Sobol point lies in, so the even samples all fall in one
 * half of the pixel, of the light, of each bounce's directions, and the
 * odd ones in the other. Their difference then measures the difference
 * between those halves, not the error: on the empty Cornell box it fell
 * as 1 / sqrt(N) while the true error fell about as 1 / N^0.75 (0.061
 * against an RMSE of 0.013 at 64 spp). Aligned blocks of indices are
 * spread evenly, so the farm splits a pixel's samples into the first
 * 2^k and the rest, [0, 2^k) and [2^k, N) (atl_film_halves_error()),
 * keeping the sums at each power of two (its films, and the copies of
 * them, have no odd sums). A film of atl_render_tile_film() may still
 * keep odd sums, for atl_film_pixel_error() and for the denoiser's
 * variance where no such history is kept.
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

/* The error estimate of a pixel from two halves of its samples: the
 * first n_first (their RGB sums in first) and the rest (all: the sums of
 * all n). INFINITY when either half is empty. */
double atl_film_halves_error(const float *first, uint32_t n_first,
                             const float *all, uint32_t n);

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
 * is above `threshold`: from the first halves' sums (first, n_first:
 * indexed as f's pixels) if first is not NULL, else from the odd sums. */
void atl_film_tally(const atl_render_film_t *f, const float *first,
                    const uint32_t *n_first, size_t i0, size_t n,
                    double threshold, atl_film_tally_t *t);

/* A copy of a film, with each pixel's first-half sums (the farm's, see
 * above): what the denoiser reads. atl_film_copy_alloc() makes every
 * buffer for npix pixels in one allocation (albedo and normal only with
 * guides, no odd sums: the farm's films have none) and
 * atl_film_copy_free() frees it; first_sum and first_n may also be NULL
 * in a copy made otherwise (its odd sums then serve). */
typedef struct atl_film_copy_s {
  atl_render_film_t film;
  float *first_sum;  /* npix * 3 */
  uint32_t *first_n; /* npix */
} atl_film_copy_t;

int atl_film_copy_alloc(atl_film_copy_t *c, size_t npix, int guides);
void atl_film_copy_free(atl_film_copy_t *c);

/* The denoised radiance of a w x h film (rgb_sum and count required,
 * and first_sum and first_n, or else the film's rgb_odd; albedo_sum and
 * normal_sum used when not NULL): averages,
 * each pixel's variance of its mean from its half images, then
 * atl_render_denoise() into out (w * h * 3 floats, per-pixel means).
 * Returns 0, or -ENOMEM or the denoiser's error. */
int atl_film_denoise(const atl_film_copy_t *c, int w, int h, float *out);

/* atl_film_denoise(), then exposure and 8-bit sRGB into rgb8 (w * h * 3
 * bytes). Returns as atl_film_denoise(). */
int atl_film_denoise_resolve(const atl_film_copy_t *c, int w, int h,
                             float exposure, uint8_t *rgb8);

#endif
