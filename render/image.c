/* From the accumulated sums to pictures: 8-bit sRGB and float PFM. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"

/* The 8-bit sRGB code of a linear value is the number of code boundaries
 * at or below it: boundary k (1..255) is the linear value whose encoding
 * is (k - 0.5) / 255. A binary search over those 255 thresholds gives the
 * same codes as rounding the encoded value, without a pow() per channel,
 * which is what makes resolving a preview on the farm's loop cheap. */
static float srgb_threshold[256];
static pthread_once_t srgb_once = PTHREAD_ONCE_INIT;

static void srgb_init(void) {
  for (int k = 1; k < 256; k++) {
    double e = (k - 0.5) / 255.0;
    srgb_threshold[k] =
        (float)(e <= 0.04045 ? e / 12.92 : pow((e + 0.055) / 1.055, 2.4));
  }
}

static uint8_t srgb8(float v) {
  if (!(v > 0))
    return 0; /* also NaN */
  int lo = 0;
  for (int step = 128; step > 0; step >>= 1)
    if (lo + step < 256 && srgb_threshold[lo + step] <= v)
      lo += step;
  return (uint8_t)lo;
}

void atl_render_resolve_span(const float *rgb_sum, const uint32_t *count,
                             size_t n, float exposure, uint8_t *rgb8) {
  pthread_once(&srgb_once, srgb_init);
  float gain = exp2f(exposure);
  for (size_t i = 0; i < n; i++) {
    float k = count[i] ? gain / (float)count[i] : 0;
    for (int c = 0; c < 3; c++)
      rgb8[i * 3 + c] = srgb8(rgb_sum[i * 3 + c] * k);
  }
}

void atl_render_resolve(const float *rgb_sum, const uint32_t *count, int w,
                        int h, float exposure, uint8_t *rgb8) {
  atl_render_resolve_span(rgb_sum, count, (size_t)w * (size_t)h, exposure,
                          rgb8);
}

int atl_render_write_pfm(const char *path, const float *rgb_sum,
                         const uint32_t *count, int w, int h) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -errno;
  float *row = malloc(sizeof(float) * 3 * (size_t)w);
  if (!row) {
    fclose(f);
    return -ENOMEM;
  }
  /* A negative scale means little-endian. */
  int ok = fprintf(f, "PF\n%d %d\n-1.0\n", w, h) > 0;
  for (int y = h - 1; ok && y >= 0; y--) {
    for (int x = 0; x < w; x++) {
      size_t i = (size_t)y * (size_t)w + (size_t)x;
      float k = count[i] ? 1.0f / (float)count[i] : 0;
      for (int c = 0; c < 3; c++)
        row[x * 3 + c] = rgb_sum[i * 3 + c] * k;
    }
    ok = fwrite(row, sizeof(float) * 3, (size_t)w, f) == (size_t)w;
  }
  free(row);
  if (fclose(f) != 0)
    ok = 0;
  return ok ? 0 : -EIO;
}

int atl_render_read_pfm(const char *path, float **out, int *w, int *h) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return -errno;
  char magic[3] = {0};
  double scale;
  int rc = -EINVAL;
  float *px = NULL;
  if (fscanf(f, "%2s %d %d %lf", magic, w, h, &scale) != 4 ||
      strcmp(magic, "PF") != 0 || scale >= 0 || *w <= 0 || *h <= 0 ||
      *w > 65536 || *h > 65536 || fgetc(f) == EOF)
    goto out;
  size_t n = (size_t)*w * (size_t)*h * 3;
  px = malloc(n * sizeof(float));
  if (!px) {
    rc = -ENOMEM;
    goto out;
  }
  /* Bottom row first in the file; top row first in memory. */
  for (int y = *h - 1; y >= 0; y--) {
    if (fread(px + (size_t)y * (size_t)*w * 3, sizeof(float) * 3, (size_t)*w,
              f) != (size_t)*w)
      goto out;
  }
  *out = px;
  px = NULL;
  rc = 0;
out:
  free(px);
  fclose(f);
  return rc;
}
