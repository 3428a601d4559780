/* An edge-aware denoiser for previews and drafts: an a-trous wavelet
 * filter guided by the albedo and normal the tracer writes at each
 * camera ray's first hit (atl_render_film_t), so that it smooths noise
 * across a wall and keeps the edges between walls, objects and
 * textures. It is never applied to the model's full-quality render
 * unless asked for (render_scene's "denoise").
 *
 * Ownership: every buffer is the caller's; nothing is kept. */
#ifndef ATL_RENDER_DENOISE_H
#define ATL_RENDER_DENOISE_H

#include <stdint.h>

/* Denoises a w x h image. rgb, albedo and normal are per-pixel averages
 * (w * h * 3 floats each, linear, row-major from the top: the film's
 * sums divided by its counts); albedo and normal may be NULL (the filter
 * then has only the colour to tell edges by). variance, if not NULL, is
 * each pixel's estimated variance of its mean (w * h floats, averaged
 * over the channels), which lets the filter smooth noisy pixels more
 * and converged ones less, and keep shadow edges that no guide shows;
 * without it the variance is estimated from each pixel's neighbours.
 * Writes the result into out (w * h * 3 floats, which may not overlap
 * rgb). A colour that is not finite never spreads: it counts as 0 for
 * its neighbours, and the pixel itself, like any speck, is brought into
 * its neighbours' range first (a NaN in a field of 0.5 comes out 0.5);
 * other inputs that are not finite count as 0.
 *
 * It takes about 52 bytes of scratch memory a pixel, freed before it
 * returns, and about 32 ms for 400 x 300 pixels on one core (AVX2).
 * Returns 0, or -EINVAL for a size out of range (w or h below 1 or above
 * 65536, more than 2^28 pixels), rgb or out NULL, or out overlapping
 * rgb; or -ENOMEM. */
int atl_render_denoise(const float *rgb, const float *albedo,
                       const float *normal, const float *variance, int w, int h,
                       float *out);

#endif
