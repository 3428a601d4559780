/* bench/image-fit: how long atl_image_fit() takes to bring a 1920 x 1920
 * noisy render within Anthropic's limits (base64 <= 5,242,880 bytes,
 * sides <= 8000 px), on one thread.
 *
 *   bench/image-fit [RUNS]
 *
 * The inputs are made here and encoded as render_scene encodes its
 * renders (atl_png_encode, render/png.c):
 *   - "render": smooth shading (a sky gradient, a textured floor, lit
 *     spheres) under per-pixel grain like a path tracer's at low samples,
 *     tuned to the 6.3 MB PNG (8.45 MB base64) measured from a real
 *     1920 x 1920 render;
 *   - "noise": random pixels, the worst case (11 MB of PNG).
 * Each is fitted RUNS times (5 by default); it prints what came out and
 * the median, min and max time. A third line fits the render to the
 * 1568 px Anthropic recommends, which scales it first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchlib.h"
#include "image_fit.h"
#include "png_encode.h"

#define SIDE 1920
#define RUNS_MAX 101

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

/* xorshift64*: the same pixels on every run and machine. */
static uint32_t rnd(void) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return (uint32_t)((rng * 0x2545F4914F6CDD1DULL) >> 32);
}

/* Roughly Gaussian (four uniforms), mean 0, standard deviation sd. */
static double grain(double sd) {
  double s = 0;
  for (int i = 0; i < 4; i++)
    s += (double)(rnd() & 0xffff) / 65535.0;
  return (s - 2.0) * sd * 1.7320508;
}

static uint8_t clamp8(double v) {
  return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)(v + 0.5);
}

/* A sky, a floor and three lit spheres, plus grain whose strength grows
 * in the dark, as a path tracer's does. */
static uint8_t *render_like(double sd) {
  uint8_t *px = malloc((size_t)SIDE * SIDE * 3);
  static const double sph[3][6] = {{0.3, 0.55, 0.16, 230, 60, 50},
                                   {0.62, 0.6, 0.2, 60, 200, 90},
                                   {0.5, 0.3, 0.1, 240, 240, 240}};
  for (int y = 0; y < SIDE; y++)
    for (int x = 0; x < SIDE; x++) {
      double u = (x + 0.5) / SIDE, v = (y + 0.5) / SIDE, c[3];
      if (v < 0.7) {
        c[0] = 120 + 90 * v, c[1] = 160 + 60 * v, c[2] = 235 - 20 * v;
      } else {
        double k = 0.6 + 0.4 * sin(u * 40) * sin(v * 40);
        c[0] = 140 * k, c[1] = 130 * k, c[2] = 110 * k;
      }
      for (int s = 0; s < 3; s++) {
        double dx = u - sph[s][0], dy = v - sph[s][1], r = sph[s][2];
        double d2 = (dx * dx + dy * dy) / (r * r);
        if (d2 < 1) {
          double lit = 0.25 + 0.75 * fmax(0, -dx / r * 0.5 - dy / r * 0.6 +
                                                 sqrt(1 - d2) * 0.62);
          for (int k = 0; k < 3; k++)
            c[k] = sph[s][3 + k] * lit;
        }
      }
      uint8_t *p = px + ((size_t)y * SIDE + x) * 3;
      for (int k = 0; k < 3; k++)
        p[k] = clamp8(c[k] + grain(sd * (1.3 - c[k] / 400)));
    }
  return px;
}

static uint8_t *random_pixels(void) {
  uint8_t *px = malloc((size_t)SIDE * SIDE * 3);
  for (size_t i = 0; i < (size_t)SIDE * SIDE * 3; i++)
    px[i] = (uint8_t)(rnd() >> 24);
  return px;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void run(const char *name, const uint8_t *px,
                const atl_image_limits_t *lim, int runs) {
  void *png;
  size_t len;
  if (atl_png_encode(px, SIDE, SIDE, -1, &png, &len) != 0) {
    fprintf(stderr, "bench: PNG encoding failed\n");
    exit(2);
  }
  double ms[RUNS_MAX];
  atl_image_fit_t f = {0};
  for (int i = 0; i < runs; i++) {
    atl_image_fit_free(&f);
    uint64_t t0 = bench_now_ns();
    int rc = atl_image_fit(png, len, lim, &f);
    ms[i] = (double)(bench_now_ns() - t0) / 1e6;
    if (rc != 0) {
      fprintf(stderr, "bench: atl_image_fit: %d\n", rc);
      exit(2);
    }
  }
  qsort(ms, (size_t)runs, sizeof(double), cmp);
  printf("%-7s max_side %-4u in: PNG %5.2f MB (base64 %5.2f MB) -> %s", name,
         lim->max_side, len / 1e6, atl_base64_len(len) / 1e6,
         f.quality ? "JPEG" : "PNG");
  if (f.quality)
    printf(" q%d", f.quality);
  printf(" %ux%u %.2f MB (base64 %.2f MB): median %.0f ms (min %.0f, max "
         "%.0f, %d runs)\n",
         f.width, f.height, f.len / 1e6, atl_base64_len(f.len) / 1e6,
         runs % 2 ? ms[runs / 2] : (ms[runs / 2 - 1] + ms[runs / 2]) / 2, ms[0],
         ms[runs - 1], runs);
  atl_image_fit_free(&f);
  free(png);
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 5;
  if (runs < 1 || runs > RUNS_MAX) {
    fprintf(stderr, "usage: %s [RUNS (1..%d)]\n", argv[0], RUNS_MAX);
    return 2;
  }
  atl_image_limits_t anthropic = {.max_side = 8000, .max_base64 = 5242880};
  atl_image_limits_t recommended = {.max_side = 1568, .max_base64 = 5242880};
  /* Grain of 2.5 levels: 6.32 MB of PNG, 8.42 MB of base64. */
  uint8_t *px = render_like(2.5);
  run("render", px, &anthropic, runs);
  run("render", px, &recommended, runs);
  free(px);
  px = random_pixels();
  run("noise", px, &anthropic, runs);
  free(px);
  return 0;
}
