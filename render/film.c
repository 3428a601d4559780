/* Error estimates, noise figures and the denoised picture of a film; see
 * film.h for the formula and why. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "denoise.h"
#include "film.h"

/* The standard error of a pixel's mean estimated from the means of its
 * first n_first samples and of the rest, summed over the channels (diff), its
 * mean's R + G + B (bright) and the mean of the channels' squared
 * half-differences, the variance of its mean (var). Returns 0 when either half
 * is empty. */
static int halves_of(const float *first, uint32_t n_first, const float *all,
                     uint32_t n, double *diff, double *bright, double *var) {
  if (n_first == 0 || n <= n_first)
    return 0;
  double d = 0, b = 0, v = 0, na = n_first, nb = n - n_first;
  for (int c = 0; c < 3; c++) {
    double a = first[c] / na, second = ((double)all[c] - first[c]) / nb;
    /* The standard error of the whole mean from the two means: with
     * sigma^2 = (a - b)^2 / (1/na + 1/nb), sigma / sqrt(na + nb) is
     * |a - b| sqrt(na nb) / (na + nb), which is |a - b| / 2 for equal
     * halves. Unequal ones (a time budget ends a render at 520 samples:
     * 512 and 8) would otherwise read as the few samples' noise, four
     * times the picture's. */
    double h = fabs(a - second) * sqrt(na * nb) / (na + nb);
    d += h;
    v += h * h;
    b += all[c] / (double)n;
  }
  *diff = d;
  *bright = b;
  *var = v / 3;
  return 1;
}

/* The same for the odd-indexed samples against the even ones. The
 * odd-indexed samples of 0 .. n-1 are n / 2 of them. A pixel that
 * adaptive sampling turned off for a while skipped whole passes, and
 * every pass after the first two starts at an even index with an even
 * number of samples, so the split of its samples stays this one. */
static int half_images(const atl_render_film_t *f, size_t i, double *diff,
                       double *bright, double *var) {
  uint32_t n = f->count[i];
  return halves_of(f->rgb_odd + i * 3, n / 2, f->rgb_sum + i * 3, n, diff,
                   bright, var);
}

double atl_film_halves_error(const float *first, uint32_t n_first,
                             const float *all, uint32_t n) {
  double d, b, v;
  if (!halves_of(first, n_first, all, n, &d, &b, &v))
    return INFINITY;
  return d / (1e-4 + sqrt(b > 0 ? b : 0));
}

double atl_film_pixel_error(const atl_render_film_t *f, size_t i) {
  return atl_film_halves_error(f->rgb_odd + i * 3, f->count[i] / 2,
                               f->rgb_sum + i * 3, f->count[i]);
}

void atl_film_tally(const atl_render_film_t *f, const float *first,
                    const uint32_t *n_first, size_t i0, size_t n,
                    double threshold, atl_film_tally_t *t) {
  if (t->pixels == 0)
    t->spp_min = UINT32_MAX;
  for (size_t i = i0; i < i0 + n; i++) {
    double e = first != NULL
                   ? atl_film_halves_error(first + i * 3, n_first[i],
                                           f->rgb_sum + i * 3, f->count[i])
                   : atl_film_pixel_error(f, i);
    if (isfinite(e)) {
      t->sq_sum += e * e;
      t->estimated++;
    }
    t->above += !(e <= threshold);
    uint32_t c = f->count[i];
    t->spp_sum += c;
    t->spp_min = c < t->spp_min ? c : t->spp_min;
    t->spp_max = c > t->spp_max ? c : t->spp_max;
    t->pixels++;
  }
}

/* Averages a guide's sums over the pixels' counts into out. */
static void average(const float *sum, const uint32_t *count, size_t n,
                    float *out) {
  for (size_t i = 0; i < n; i++) {
    float k = count[i] ? 1.0f / (float)count[i] : 0;
    for (int c = 0; c < 3; c++)
      out[i * 3 + c] = sum[i * 3 + c] * k;
  }
}

int atl_film_copy_alloc(atl_film_copy_t *c, size_t npix, int guides) {
  size_t rgb = npix * 3, nrgb = guides ? 4 : 2;
  float *buf = malloc(rgb * nrgb * sizeof(float) + 2 * npix * sizeof(uint32_t));
  memset(c, 0, sizeof(*c));
  if (buf == NULL)
    return -ENOMEM;
  uint32_t *counts = (uint32_t *)(buf + rgb * nrgb);
  /* No odd sums: the farm's films have none, and first_sum serves. */
  c->film = (atl_render_film_t){.rgb_sum = buf,
                                .albedo_sum = guides ? buf + 2 * rgb : NULL,
                                .normal_sum = guides ? buf + 3 * rgb : NULL,
                                .count = counts};
  c->first_sum = buf + rgb;
  c->first_n = counts + npix;
  return 0;
}

void atl_film_copy_free(atl_film_copy_t *c) {
  free(c->film.rgb_sum);
  memset(c, 0, sizeof(*c));
}

int atl_film_denoise(const atl_film_copy_t *c, int w, int h, float *out) {
  const atl_render_film_t *f = &c->film;
  size_t n = (size_t)w * (size_t)h;
  float *rgb = malloc(n * 3 * sizeof(float));
  float *var = malloc(n * sizeof(float));
  float *alb = f->albedo_sum ? malloc(n * 3 * sizeof(float)) : NULL;
  float *nrm = f->normal_sum ? malloc(n * 3 * sizeof(float)) : NULL;
  int rc = -ENOMEM;
  if (rgb == NULL || var == NULL || (f->albedo_sum && alb == NULL) ||
      (f->normal_sum && nrm == NULL))
    goto done;
  average(f->rgb_sum, f->count, n, rgb);
  if (alb != NULL)
    average(f->albedo_sum, f->count, n, alb);
  if (nrm != NULL)
    average(f->normal_sum, f->count, n, nrm);
  for (size_t i = 0; i < n; i++) {
    double d, b, v;
    int ok = c->first_sum != NULL
                 ? halves_of(c->first_sum + i * 3, c->first_n[i],
                             f->rgb_sum + i * 3, f->count[i], &d, &b, &v)
                 : half_images(f, i, &d, &b, &v);
    /* A pixel with no estimate: call it as noisy as its own brightness,
     * so that the filter smooths it as much as any. */
    if (!ok) {
      double m = (rgb[i * 3] + rgb[i * 3 + 1] + rgb[i * 3 + 2]) / 3.0;
      v = m * m + 1e-3;
    }
    var[i] = (float)v;
  }
  rc = atl_render_denoise(rgb, alb, nrm, var, w, h, out);
done:
  free(rgb);
  free(var);
  free(alb);
  free(nrm);
  return rc;
}

int atl_film_denoise_resolve(const atl_film_copy_t *c, int w, int h,
                             float exposure, uint8_t *rgb8) {
  size_t n = (size_t)w * (size_t)h;
  float *out = malloc(n * 3 * sizeof(float));
  uint32_t *ones = malloc(n * sizeof(uint32_t));
  int rc = -ENOMEM;
  if (out != NULL && ones != NULL)
    rc = atl_film_denoise(c, w, h, out);
  if (rc == 0) {
    for (size_t i = 0; i < n; i++)
      ones[i] = 1;
    atl_render_resolve_span(out, ones, n, exposure, rgb8);
  }
  free(out);
  free(ones);
  return rc;
}
