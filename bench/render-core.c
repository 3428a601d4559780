/* bench/render-core: the path tracer core (render/librender) on one
 * thread, without the farm, the daemon or any process start-up in the
 * figure.
 *
 *   render-core SCENE.json [--width W] [--height H] [--spp N]
 *               [--max-depth D] [--runs R] [--seed S] [--pfm FILE]
 *
 * Each run loads the scene (JSON parse and BVH build, timed apart) and
 * renders W x H pixels with N samples each as the farm does: the frame in
 * 64 x 64 tiles, in passes of growing size (1, 1, 2, 4, 8, 8, ...
 * samples) through atl_render_tile_samples(). It prints each run's
 * camera paths per second (W * H * N / render wall time) and the median
 * of the R runs (3 by default). The width, height, samples and depth
 * default to the scene's own "render" settings. The mean radiance printed
 * with each run is a fingerprint of the image: it is the same in every
 * run, since the image is a pure function of the seed. --pfm writes the
 * last run's image, to compare two builds. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "benchlib.h"
#include "kernel.h"
#include "render.h"

#define TILE 64
#define RUNS_MAX 100

static double now(void) {
  return (double)bench_now_ns() * 1e-9;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? cap * 2 : 65536;
      char *b = realloc(buf, cap);
      if (!b) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = b;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0)
      break;
  }
  fclose(f);
  *len = n;
  return buf;
}

/* The size of pass `i` of the farm's growing passes, clipped to what is
 * left of `total`. */
static int pass_size(int i, int done, int total) {
  int n = i < 2 ? 1 : i < 5 ? 1 << (i - 1) : 8;
  return n < total - done ? n : total - done;
}

static void usage(void) {
  fprintf(stderr, "usage: render-core SCENE.json [--width W] [--height H] "
                  "[--spp N] [--max-depth D] [--runs R] [--seed S] "
                  "[--pfm FILE]\n");
  exit(2);
}

int main(int argc, char **argv) {
  const char *path = NULL, *pfm = NULL;
  int width = 0, height = 0, spp = 0, depth = 0, runs = 3;
  unsigned long long seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-') {
      path = a;
      continue;
    }
    if (i + 1 >= argc)
      usage();
    const char *v = argv[++i];
    if (strcmp(a, "--width") == 0)
      width = atoi(v);
    else if (strcmp(a, "--height") == 0)
      height = atoi(v);
    else if (strcmp(a, "--spp") == 0)
      spp = atoi(v);
    else if (strcmp(a, "--max-depth") == 0)
      depth = atoi(v);
    else if (strcmp(a, "--runs") == 0)
      runs = atoi(v);
    else if (strcmp(a, "--seed") == 0)
      seed = strtoull(v, NULL, 10);
    else if (strcmp(a, "--pfm") == 0)
      pfm = v;
    else
      usage();
  }
  if (!path || runs < 1 || runs > RUNS_MAX || width < 0 || height < 0 ||
      spp < 0 || depth < 0)
    usage();
  size_t len;
  char *json = slurp(path, &len);
  if (!json) {
    fprintf(stderr, "render-core: cannot read %s: %s\n", path, strerror(errno));
    return 1;
  }
  double rate[RUNS_MAX], load[RUNS_MAX];
  float *sum = NULL;
  uint32_t *count = NULL;
  for (int run = 0; run < runs; run++) {
    atl_render_scene_t *s;
    char *err = NULL;
    double t0 = now();
    int rc = atl_render_scene_load(json, len, &s, &err);
    load[run] = now() - t0;
    if (rc < 0) {
      fprintf(stderr, "render-core: %s: %s\n", path, err ? err : "?");
      return 1;
    }
    atl_render_scene_info_t info;
    atl_render_scene_info(s, &info);
    /* What the command line leaves open comes from the scene, then from
     * the benchmark scene's settings. */
    atl_render_params_t p = {.width = width        ? width
                                      : info.width ? info.width
                                                   : 400,
                             .height = height        ? height
                                       : info.height ? info.height
                                                     : 400,
                             .max_depth = depth            ? depth
                                          : info.max_depth ? info.max_depth
                                                           : 5,
                             .seed = seed};
    int n = spp ? spp : info.samples ? info.samples : 64;
    size_t px = (size_t)p.width * (size_t)p.height;
    if (run == 0) {
      printf("render-core: %s, %dx%d, %d spp, max depth %d, %d primitives, "
             "1 thread, %d runs, kernel %s (%d lanes)\n",
             path, p.width, p.height, n, p.max_depth, info.primitive_count,
             runs, atl_render_kernel_name(atl_render_kernel()),
             atl_render_kernel_lanes(atl_render_kernel()));
      sum = malloc(px * 3 * sizeof(float));
      count = malloc(px * sizeof(uint32_t));
      if (!sum || !count)
        return 1;
    }
    memset(sum, 0, px * 3 * sizeof(float));
    memset(count, 0, px * sizeof(uint32_t));
    t0 = now();
    int done = 0;
    for (int pass = 0; done < n; pass++) {
      int k = pass_size(pass, done, n);
      for (int y = 0; y < p.height; y += TILE)
        for (int x = 0; x < p.width; x += TILE)
          atl_render_tile_samples(s, &p, x, y, x + TILE, y + TILE,
                                  (uint64_t)done, k, sum, count);
      done += k;
    }
    double secs = now() - t0;
    rate[run] = (double)px * n / secs / 1e6;
    double mean = 0;
    for (size_t i = 0; i < px * 3; i++)
      mean += sum[i] / count[i / 3];
    printf("run %d: %.3f s, %.3f M paths/s, load+BVH %.2f ms, mean radiance "
           "%.6f\n",
           run + 1, secs, rate[run], load[run] * 1e3, mean / (double)(px * 3));
    fflush(stdout);
    if (run == runs - 1 && pfm &&
        atl_render_write_pfm(pfm, sum, count, p.width, p.height) < 0)
      fprintf(stderr, "render-core: cannot write %s\n", pfm);
    atl_render_scene_free(s);
  }
  double lo = rate[0], hi = rate[0];
  for (int i = 1; i < runs; i++) {
    lo = rate[i] < lo ? rate[i] : lo;
    hi = rate[i] > hi ? rate[i] : hi;
  }
  double m = bench_median(rate, runs);
  printf("median: %.3f M paths/s (min %.3f, max %.3f), load+BVH %.2f ms\n", m,
         lo, hi, bench_median(load, runs) * 1e3);
  free(sum);
  free(count);
  free(json);
  return 0;
}
