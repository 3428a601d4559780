/* The denoiser's worth: renders a scene with its guides (albedo, normal,
 * the sums of the first half of the samples) on a few threads, denoises
 * it as the farm does (atl_film_denoise()), and prints the RMSE of the
 * raw and the denoised image against a reference PFM, with the time of
 * each step (bench/README.md, denoise-quality).
 *
 *   bench/denoise-quality [SCENE.json [REFERENCE.pfm]] [--width W]
 *       [--height H] [--spp N] [--max-depth D] [--threads T] [--seed S]
 *       [--filter NAME] [--filter-width W] [--runs R] [--out PREFIX]
 *
 * Defaults: tests/data/scenes/cornell-empty.json against
 * tests/data/cycles_cornell_empty_1024.pfm, 400 x 400, 16 spp, depth 5,
 * 2 threads (row bands), the box filter, 3 runs (times are medians; the
 * images are the same in every run). --out PREFIX writes the images
 * as PREFIX-raw.png, PREFIX-denoised.png and the same in PFM. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "film.h"
#include "png_encode.h"
#include "benchlib.h"
#include "render.h"

typedef struct {
  const atl_render_scene_t *s;
  const atl_render_params_t *p;
  const atl_render_film_t *film;
  int y0, y1, first, n;
} band_t;

static void *render_band(void *arg) {
  const band_t *b = arg;
  atl_render_tile_film(b->s, b->p, 0, b->y0, b->p->width, b->y1,
                       (uint64_t)b->first, b->n, b->film);
  return NULL;
}

/* Samples [first, first + n) of every pixel, on `threads` threads of
 * row bands. */
static void render_bands(const atl_render_scene_t *s,
                         const atl_render_params_t *p,
                         const atl_render_film_t *f, int threads, int first,
                         int n) {
  pthread_t th[64];
  band_t bands[64];
  int h = p->height;
  for (int t = 0; t < threads; t++) {
    bands[t] =
        (band_t){s, p, f, h * t / threads, h * (t + 1) / threads, first, n};
    pthread_create(&th[t], NULL, render_band, &bands[t]);
  }
  for (int t = 0; t < threads; t++)
    pthread_join(th[t], NULL);
}

static double now(void) {
  return (double)bench_now_ns() * 1e-9;
}

/* The RMSE of img against ref over n pixels' channels; with `dim`,
 * only over the pixels that the reference has at most 1 in every
 * channel: a light seen directly is tens of times brighter than the
 * walls, and the noise of the pixels on its edge (where a sample hits it
 * or not) then makes most of the whole image's RMSE. */
static double rmse(const float *img, const float *ref, size_t n, int dim) {
  double sq = 0;
  size_t used = 0;
  for (size_t i = 0; i < n; i++) {
    const float *r = ref + i * 3;
    if (dim && (r[0] > 1 || r[1] > 1 || r[2] > 1))
      continue;
    for (int k = 0; k < 3; k++) {
      double d = (double)img[i * 3 + k] - (double)r[k];
      sq += d * d;
    }
    used += 3;
  }
  return used ? sqrt(sq / (double)used) : 0;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf)
    buf[n] = 0, *len = (size_t)n;
  return buf;
}

/* Writes the linear image (w * h * 3, already averaged) as an sRGB PNG
 * and as a PFM: PREFIX-NAME.png and .pfm. */
static int write_images(const char *prefix, const char *name, const float *rgb,
                        int w, int h) {
  char path[4096];
  size_t n = (size_t)w * (size_t)h;
  uint32_t *one = malloc(n * sizeof(uint32_t));
  uint8_t *rgb8 = malloc(n * 3);
  void *png = NULL;
  size_t len = 0;
  int e = one && rgb8 ? 0 : -ENOMEM;
  for (size_t i = 0; e == 0 && i < n; i++)
    one[i] = 1;
  if (e == 0) {
    snprintf(path, sizeof(path), "%s-%s.pfm", prefix, name);
    e = atl_render_write_pfm(path, rgb, one, w, h);
  }
  if (e == 0) {
    atl_render_resolve(rgb, one, w, h, 0, rgb8);
    e = atl_png_encode(rgb8, w, h, -1, &png, &len);
  }
  if (e == 0) {
    snprintf(path, sizeof(path), "%s-%s.png", prefix, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(png, 1, len, f) != len)
      e = -EIO;
    if (f)
      fclose(f);
  }
  if (e < 0)
    fprintf(stderr, "denoise-quality: %s: %s\n", path, strerror(-e));
  free(one), free(rgb8), free(png);
  return e;
}

static void usage(void) {
  fprintf(stderr,
          "usage: denoise-quality [SCENE.json [REFERENCE.pfm]] [--width W] "
          "[--height H] [--spp N] [--max-depth D] [--threads T] [--seed S] "
          "[--filter box|gaussian|blackman-harris] [--filter-width W] "
          "[--runs R] [--out PREFIX]\n");
}

int main(int argc, char **argv) {
  const char *scene = "tests/data/scenes/cornell-empty.json";
  const char *ref_path = "tests/data/cycles_cornell_empty_1024.pfm";
  const char *prefix = NULL;
  int w = 400, h = 400, spp = 16, depth = 5, threads = 2, runs = 3, pos = 0;
  atl_render_params_t p = {.seed = 1};
  const char *seed = "1", *filter = "box", *fwidth = "0";
  /* The options: integers, then strings. */
  const struct {
    const char *name;
    int *i;
    const char **s;
  } opts[] = {{"--width", &w, NULL},
              {"--height", &h, NULL},
              {"--spp", &spp, NULL},
              {"--max-depth", &depth, NULL},
              {"--threads", &threads, NULL},
              {"--runs", &runs, NULL},
              {"--seed", NULL, &seed},
              {"--filter", NULL, &filter},
              {"--filter-width", NULL, &fwidth},
              {"--out", NULL, &prefix}};
  for (int a = 1; a < argc; a++) {
    const char *arg = argv[a];
    if (arg[0] != '-') {
      if (pos > 1)
        return usage(), 2;
      *(pos++ ? &ref_path : &scene) = arg;
      continue;
    }
    size_t k = 0, nopts = sizeof(opts) / sizeof(opts[0]);
    while (k < nopts && strcmp(arg, opts[k].name) != 0)
      k++;
    if (k == nopts || a + 1 == argc)
      return usage(), 2;
    if (opts[k].i)
      *opts[k].i = atoi(argv[++a]);
    else
      *opts[k].s = argv[++a];
  }
  p.seed = strtoull(seed, NULL, 10);
  p.filter_width = atof(fwidth);
  if (atl_render_filter_parse(filter, &p.filter) != 0) {
    fprintf(stderr,
            "denoise-quality: unknown filter %s: use box, gaussian "
            "or blackman-harris\n",
            filter);
    return 2;
  }
  char msg[200];
  if (atl_render_filter_check(p.filter, p.filter_width, msg, sizeof(msg))) {
    fprintf(stderr, "denoise-quality: %s\n", msg);
    return 2;
  }
  if (w < 1 || h < 1 || spp < 1 || depth < 1 || threads < 1 || runs < 1 ||
      threads > 64 || runs > 99)
    return usage(), 2;
  size_t len;
  char *json = slurp(scene, &len);
  atl_render_scene_t *s = NULL;
  char *err = NULL;
  if (!json || atl_render_scene_load(json, len, &s, &err) != 0) {
    fprintf(stderr, "denoise-quality: %s: %s\n", scene,
            json ? err : strerror(errno));
    return 1;
  }
  free(json);
  float *ref;
  int rw, rh;
  int e = atl_render_read_pfm(ref_path, &ref, &rw, &rh);
  if (e < 0 || rw != w || rh != h) {
    fprintf(stderr, "denoise-quality: %s: %s\n", ref_path,
            e < 0 ? strerror(-e) : "not the render's size");
    return 1;
  }
  p.width = w, p.height = h, p.max_depth = depth;
  size_t n = (size_t)w * (size_t)h;
  atl_film_copy_t c;
  float *rgb = malloc(n * 3 * sizeof(float));
  float *out = malloc(n * 3 * sizeof(float));
  if (atl_film_copy_alloc(&c, n, 1) < 0 || !rgb || !out)
    return 1;
  /* The farm's two half images: the first power of two of the samples
   * below spp, and the rest (render/film.h says why not the odd ones). */
  int half = 0;
  while (spp > 1 && half * 2 < spp)
    half = half ? half * 2 : 1;
  double t_render[99], t_denoise[99];
  for (int r = 0; r < runs; r++) {
    atl_render_film_t *f = &c.film;
    /* The copy's sums, first halves, albedo and normal: 4 planes of
     * n * 3 floats in one block (atl_film_copy_alloc()), then the counts
     * and first counts. */
    memset(f->rgb_sum, 0, n * 3 * 4 * sizeof(float));
    memset(f->count, 0, n * 2 * sizeof(uint32_t));
    double t0 = now();
    render_bands(s, &p, f, threads, 0, half);
    memcpy(c.first_sum, f->rgb_sum, n * 3 * sizeof(float));
    memcpy(c.first_n, f->count, n * sizeof(uint32_t));
    render_bands(s, &p, f, threads, half, spp - half);
    t_render[r] = now() - t0;
    for (size_t i = 0; i < n * 3; i++)
      rgb[i] = f->rgb_sum[i] / (float)f->count[i / 3];
    /* The farm's denoise step: averages, each pixel's variance from its
     * half images, atl_render_denoise(). */
    t0 = now();
    e = atl_film_denoise(&c, w, h, out);
    t_denoise[r] = now() - t0;
    if (e < 0) {
      fprintf(stderr, "denoise-quality: denoise: %s\n", strerror(-e));
      return 1;
    }
  }
  printf("%s %dx%d %d spp depth %d, filter %s %.2f, %d threads, %d runs\n",
         scene, w, h, spp, depth, atl_render_filter_name(p.filter),
         atl_render_filter_width(p.filter, p.filter_width), threads, runs);
  printf("render   %8.1f ms (median)  RMSE raw      %.5f (without the "
         "lights: %.5f)\n",
         1e3 * bench_median(t_render, runs), rmse(rgb, ref, n, 0),
         rmse(rgb, ref, n, 1));
  printf("denoise  %8.1f ms (median)  RMSE denoised %.5f (without the "
         "lights: %.5f)\n",
         1e3 * bench_median(t_denoise, runs), rmse(out, ref, n, 0),
         rmse(out, ref, n, 1));
  if (prefix && (write_images(prefix, "raw", rgb, w, h) < 0 ||
                 write_images(prefix, "denoised", out, w, h) < 0))
    return 1;
  atl_render_scene_free(s);
  atl_film_copy_free(&c);
  free(rgb), free(out), free(ref);
  return 0;
}
