/* Writes the seed corpus of fuzz_image_fit into a directory: tiny PNGs of
 * every colour type, depth and interlacing, and JPEGs (baseline,
 * progressive, grey), each behind the two bytes that choose the limits
 * (fuzz_image_fit.c). The corpus is committed; this program is how it
 * was made, and how to make it again:
 *
 *   make -C build tests/fuzz/gen_image_seeds
 *   build/tests/fuzz/gen_image_seeds tests/fuzz/corpus/image_fit */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_samples.h"

static int put(const char *dir, const char *name, uint8_t b0, uint8_t b1,
               const unsigned char *file, size_t len) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (f == NULL || file == NULL) {
    perror(path);
    if (f)
      fclose(f);
    return 1;
  }
  int bad = fputc(b0, f) == EOF || fputc(b1, f) == EOF ||
            fwrite(file, 1, len, f) != len;
  bad |= fclose(f) != 0;
  printf("%s: %zu bytes\n", path, len + 2);
  return bad;
}

/* A png of w x h samples, value v(x, y, c) below 2^depth. */
static unsigned char *png_of(uint32_t w, uint32_t h, int type, int depth,
                             int interlace, size_t *len) {
  static const uint8_t pal[] = {0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255};
  static const uint8_t trns[] = {255, 128, 0};
  int ch = type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
           : type == PNG_COLOR_TYPE_RGB      ? 3
           : type == PNG_COLOR_TYPE_RGBA     ? 4
                                             : 1;
  int max = type == PNG_COLOR_TYPE_PALETTE ? 4 : 1 << depth;
  uint16_t *s = malloc(sizeof(uint16_t) * w * h * (size_t)ch);
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++)
      for (int c = 0; c < ch; c++)
        s[((size_t)y * w + x) * ch + c] =
            (uint16_t)((x * 7 + y * 13 + (uint32_t)c * 50) % (uint32_t)max);
  img_png_spec_t spec = {.w = w,
                         .h = h,
                         .color_type = type,
                         .bit_depth = depth,
                         .interlace = interlace,
                         .level = 9,
                         .samples = s,
                         .palette = pal,
                         .npalette = 4,
                         .trns = trns,
                         .ntrns = 3};
  unsigned char *out = img_png(&spec, len);
  free(s);
  return out;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1];
  int bad = 0;
  size_t len;
  unsigned char *f;
#define PUT(name, b0, b1, expr)                                                \
  do {                                                                         \
    f = (expr);                                                                \
    bad |= put(dir, name, b0, b1, f, len);                                     \
    free(f);                                                                   \
  } while (0)
  /* max_side 8, 12, 16, ...: 4 + 4 * (b0 & 63). */
  PUT("rgb8.png", 1, 0, png_of(24, 16, PNG_COLOR_TYPE_RGB, 8, 0, &len));
  PUT("rgba8.png", 2, 0, png_of(16, 16, PNG_COLOR_TYPE_RGBA, 8, 0, &len));
  PUT("rgb16.png", 1, 0, png_of(10, 10, PNG_COLOR_TYPE_RGB, 16, 0, &len));
  PUT("grey1.png", 1, 0, png_of(33, 7, PNG_COLOR_TYPE_GRAY, 1, 0, &len));
  PUT("grey4.png", 0x80 | 2, 0,
      png_of(30, 20, PNG_COLOR_TYPE_GRAY, 4, 0, &len));
  PUT("palette2_trns.png", 2, 0,
      png_of(20, 10, PNG_COLOR_TYPE_PALETTE, 2, 0, &len));
  PUT("ga16_adam7.png", 1, 0,
      png_of(17, 9, PNG_COLOR_TYPE_GRAY_ALPHA, 16, 1, &len));
  PUT("rgba8_adam7.png", 0x40 | 30, 0,
      png_of(70, 90, PNG_COLOR_TYPE_RGBA, 8, 1, &len));
  /* Fits as it is: copied, not decoded. */
  PUT("unchanged.png", 10, 0, png_of(12, 12, PNG_COLOR_TYPE_RGB, 8, 0, &len));
  /* A base64 limit of 256 bytes: JPEG, smaller, then ATL_E2BIG. */
  PUT("b64_256.png", 30, 1, png_of(64, 64, PNG_COLOR_TYPE_RGB, 8, 0, &len));
  PUT("b64_1k.png", 30, 4, png_of(64, 64, PNG_COLOR_TYPE_RGBA, 8, 0, &len));

  uint8_t px[32 * 24 * 3];
  uint64_t seed = 11;
  for (size_t i = 0; i < sizeof(px); i++)
    px[i] = (uint8_t)(i % 96 + (img_rand(&seed) >> 60));
  PUT("baseline.jpg", 2, 0, img_jpeg(px, 32, 24, 3, 75, 0, &len));
  PUT("progressive.jpg", 2, 0, img_jpeg(px, 32, 24, 3, 75, 1, &len));
  PUT("grey.jpg", 1, 0, img_jpeg(px, 48, 24, 1, 60, 0, &len));
  PUT("b64_1k.jpg", 5, 4, img_jpeg(px, 32, 24, 3, 95, 0, &len));
#undef PUT
  return bad;
}
