/* What a render farm job's film says: the job's accessors, previews and
 * copies of the film, its noise figure, and the adaptive sampling
 * decisions made after each of a tile's units commits. See farm.h for
 * the contract and film.h for the error estimate. */
#include "atl-build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "farm_job.h"
#include "film.h"

int atl_farm_job_samples_done(const atl_farm_job_t *j) {
  return j->wave >= j->npasses ? j->samples : j->pass_first[j->wave];
}

int atl_farm_job_pass(const atl_farm_job_t *j) {
  return j->wave;
}

int atl_farm_job_passes(const atl_farm_job_t *j) {
  return j->npasses;
}

double atl_farm_job_fraction(const atl_farm_job_t *j) {
  return j->units_total_weight
             ? (double)j->weight_done / (double)j->units_total_weight
             : 1.0;
}

int atl_farm_job_width(const atl_farm_job_t *j) {
  return j->width;
}

int atl_farm_job_height(const atl_farm_job_t *j) {
  return j->height;
}

int atl_farm_job_worker_deaths(const atl_farm_job_t *j) {
  return j->worker_deaths;
}

/* Every step-th pixel in each direction makes a view at most max_dim
 * pixels on its longer side (all of them for max_dim 0). */
static int view_step(const atl_farm_job_t *j, int max_dim) {
  int big = j->width > j->height ? j->width : j->height;
  int step = max_dim > 0 ? (big + max_dim - 1) / max_dim : 1;
  return step < 1 ? 1 : step;
}

void atl_farm_job_preview(const atl_farm_job_t *j, float exposure, int max_dim,
                          uint8_t *rgb8, int *out_w, int *out_h) {
  int step = view_step(j, max_dim);
  int ow = (j->width + step - 1) / step, oh = (j->height + step - 1) / step;
  *out_w = ow;
  *out_h = oh;
  if (rgb8 == NULL)
    return;
  for (int oy = 0; oy < oh; oy++) {
    int y = oy * step, ty = y / TILE;
    /* Full size, a row is one span per tile; scaled down, a pixel. */
    int span = step == 1 ? TILE : 1;
    for (int ox = 0; ox < ow; ox += span) {
      int x = ox * step;
      int n = ox + span < ow ? span : ow - ox;
      atl_render_film_t pf = plane_film(j, j->plane[ty * j->ntx + x / TILE]);
      size_t i = (size_t)y * (size_t)j->width + (size_t)x;
      atl_render_resolve_span(pf.rgb_sum + i * 3, pf.count + i, (size_t)n,
                              exposure, rgb8 + ((size_t)oy * ow + ox) * 3);
    }
  }
}

void atl_farm_job_sums(const atl_farm_job_t *j, float *rgb_sum,
                       uint32_t *count) {
  atl_render_film_t out = {.rgb_sum = rgb_sum, .count = count};
  int w, h;
  atl_farm_job_film(j, 0, &out, &w, &h);
}

/* Copies n floats-triples (3 floats a pixel) when dst is wanted. */
static void copy3(float *dst, const float *src, size_t n) {
  if (dst != NULL && src != NULL)
    memcpy(dst, src, n * 3 * sizeof(float));
  else if (dst != NULL)
    memset(dst, 0, n * 3 * sizeof(float));
}

void atl_farm_job_film(const atl_farm_job_t *j, int max_dim,
                       const atl_render_film_t *out, int *out_w, int *out_h) {
  int step = view_step(j, max_dim);
  int ow = (j->width + step - 1) / step, oh = (j->height + step - 1) / step;
  *out_w = ow;
  *out_h = oh;
  for (int oy = 0; oy < oh; oy++) {
    int y = oy * step, ty = y / TILE;
    /* Full size, a row is one span per tile; scaled down, a pixel. */
    int span = step == 1 ? TILE : 1;
    for (int ox = 0; ox < ow; ox += span) {
      int x = ox * step;
      size_t n = (size_t)(ox + span < ow ? span : ow - ox);
      atl_render_film_t pf = plane_film(j, j->plane[ty * j->ntx + x / TILE]);
      size_t i = (size_t)y * (size_t)j->width + (size_t)x;
      size_t o = (size_t)oy * (size_t)ow + (size_t)ox;
      copy3(out->rgb_sum ? out->rgb_sum + o * 3 : NULL, pf.rgb_sum + i * 3, n);
      copy3(out->albedo_sum ? out->albedo_sum + o * 3 : NULL,
            pf.albedo_sum ? pf.albedo_sum + i * 3 : NULL, n);
      copy3(out->normal_sum ? out->normal_sum + o * 3 : NULL,
            pf.normal_sum ? pf.normal_sum + i * 3 : NULL, n);
      if (out->count != NULL)
        memcpy(out->count + o, pf.count + i, n * sizeof(uint32_t));
    }
  }
}

void atl_farm_job_film_copy(const atl_farm_job_t *j, int max_dim,
                            atl_film_copy_t *c, int *out_w, int *out_h) {
  atl_farm_job_film(j, max_dim, &c->film, out_w, out_h);
  if (c->first_sum == NULL || c->first_n == NULL)
    return;
  int step = view_step(j, max_dim);
  for (int oy = 0; oy < *out_h; oy++)
    for (int ox = 0; ox < *out_w; ox++) {
      size_t i = (size_t)(oy * step) * (size_t)j->width + (size_t)(ox * step);
      size_t o = (size_t)oy * (size_t)*out_w + (size_t)ox;
      memcpy(c->first_sum + o * 3, j->first_sum + i * 3, 3 * sizeof(float));
      c->first_n[o] = j->first_n[i];
    }
}

int atl_farm_job_guides(const atl_farm_job_t *j) {
  return j->hdr->guides;
}

void atl_farm_job_stats(const atl_farm_job_t *j, double threshold,
                        atl_farm_job_stats_t *st) {
  if (threshold <= 0)
    threshold = j->noise_threshold > 0 ? j->noise_threshold : 0.01;
  atl_film_tally_t t = {0};
  for (int tile = 0; tile < j->ntiles; tile++) {
    int x0, y0, x1, y1;
    tile_rect(j, tile, &x0, &y0, &x1, &y1);
    atl_render_film_t pf = plane_film(j, j->plane[tile]);
    for (int y = y0; y < y1; y++)
      atl_film_tally(&pf, j->first_sum, j->first_n,
                     (size_t)y * (size_t)j->width + (size_t)x0,
                     (size_t)(x1 - x0), threshold, &t);
  }
  *st = (atl_farm_job_stats_t){
      .noise = t.estimated ? sqrt(t.sq_sum / (double)t.estimated) : INFINITY,
      .above = t.pixels ? (double)t.above / (double)t.pixels : 0,
      .spp_min = (int)t.spp_min,
      .spp_mean = t.pixels ? (double)t.spp_sum / (double)t.pixels : 0,
      .spp_max = (int)t.spp_max,
      .stop = j->stop};
}

/* Keeps, for each pixel of tile t whose count was a power of two before
 * the unit that just committed and grew since, its sums then: the first
 * half for atl_film_halves_error(). They are read from the plane the
 * tile has just left, which holds the tile as it was before that unit. */
void atl__farm_tile_keep_halves(atl_farm_job_t *j, int t, int pass) {
  /* The pixels that took this pass had pass_first[pass] samples before
   * it, and the others kept theirs: unless that is a power of two, no
   * pixel has a half to keep, and the tile is not read at all (the loop
   * cost the parent, which shares the CPUs with the workers, 0.7 % of
   * a render's CPU). */
  uint32_t before_n = (uint32_t)j->pass_first[pass];
  if (before_n == 0 || (before_n & (before_n - 1)) != 0)
    return;
  int x0, y0, x1, y1;
  tile_rect(j, t, &x0, &y0, &x1, &y1);
  atl_render_film_t before = plane_film(j, j->plane[t] ^ 1);
  atl_render_film_t now = plane_film(j, j->plane[t]);
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) {
      size_t i = (size_t)y * (size_t)j->width + (size_t)x;
      uint32_t c = before.count[i];
      if (c == 0 || (c & (c - 1)) != 0 || now.count[i] <= c)
        continue;
      memcpy(j->first_sum + i * 3, before.rgb_sum + i * 3, 3 * sizeof(float));
      j->first_n[i] = c;
    }
}

/* Adaptive sampling, once tile t's unit has committed and its pixels
 * have a power of two of samples, N, at least min_samples: each pixel
 * whose error (its first N / 2 samples against the rest) is under the
 * threshold is converged, and a pixel takes more samples if it or a
 * neighbour in the tile is not (a one-pixel dilation, so that the edge
 * of a noisy region is not cut too sharp). A pixel stopped stays
 * stopped, so every pixel still on has N samples. Everything read is the
 * tile's committed film after a whole pass, so the mask, and with it the
 * picture, is a function of the seed and the parameters alone: not of
 * the number of workers, the order units end in, or a worker killed on
 * the way. A tile with no pixel left is done. */
void atl__farm_tile_adapt(atl_farm_job_t *j, int t) {
  int pass = j->done[t] - 1;
  int n = j->pass_first[pass] + j->pass_n[pass];
  if (j->noise_threshold <= 0 || j->done[t] >= j->npasses ||
      n < j->min_samples || (n & (n - 1)) != 0)
    return;
  int x0, y0, x1, y1;
  tile_rect(j, t, &x0, &y0, &x1, &y1);
  int tw = x1 - x0, th = y1 - y0;
  atl_render_film_t pf = plane_film(j, j->plane[t]);
  uint8_t *active = job_active(j);
  for (int y = 0; y < th; y++)
    for (int x = 0; x < tw; x++) {
      size_t i = (size_t)(y0 + y) * (size_t)j->width + (size_t)(x0 + x);
      double e = atl_film_halves_error(j->first_sum + i * 3, j->first_n[i],
                                       pf.rgb_sum + i * 3, pf.count[i]);
      j->unconv[y * TILE + x] = active[i] && !(e < j->noise_threshold);
    }
  int left = 0;
  for (int y = 0; y < th; y++)
    for (int x = 0; x < tw; x++) {
      uint8_t *a =
          &active[(size_t)(y0 + y) * (size_t)j->width + (size_t)(x0 + x)];
      int on = 0;
      for (int dy = y > 0 ? -1 : 0; dy <= 1 && y + dy < th && !on; dy++)
        for (int dx = x > 0 ? -1 : 0; dx <= 1 && x + dx < tw; dx++)
          on |= j->unconv[(y + dy) * TILE + x + dx];
      *a = (uint8_t)(*a && on);
      left += *a;
    }
  if (left > 0)
    return;
  /* Its remaining passes count as done, for the waves and the share. */
  for (int k = j->done[t]; k < j->npasses; k++)
    j->weight_done += (uint64_t)j->pass_n[k];
  j->done[t] = j->npasses;
  j->tiles_converged++;
}
