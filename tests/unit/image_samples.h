/* PNG and JPEG files made and read back in memory, for test_image_fit and
 * the fuzz corpus generator (tests/fuzz/gen_image_seeds.c). Independent
 * of daemon/image_fit.c: it calls libpng and libjpeg directly, with the
 * plainest settings. Every function returns NULL on failure; every
 * buffer returned is malloc()ed and the caller frees it. */
#ifndef ATL_TEST_IMAGE_SAMPLES_H
#define ATL_TEST_IMAGE_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

/* A PNG to write. samples holds w * h * channels values of the colour
 * type (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA, 1 palette index), each
 * below 2^bit_depth; they are packed as the bit depth says. */
typedef struct {
  uint32_t w, h;
  int color_type; /* PNG_COLOR_TYPE_* */
  int bit_depth;  /* 1, 2, 4, 8 or 16, as the colour type allows */
  int interlace;  /* 0 none, 1 Adam7 */
  int level;      /* zlib level 0..9 */
  const uint16_t *samples;
  const uint8_t *palette; /* npalette RGB triples */
  int npalette;
  const uint8_t *trns; /* palette alpha, ntrns entries (0: no tRNS) */
  int ntrns;
} img_png_spec_t;

unsigned char *img_png(const img_png_spec_t *spec, size_t *len);

/* The 8-bit pixels (ch 1 or 3) as a JPEG of that quality; progressive if
 * asked. */
unsigned char *img_jpeg(const uint8_t *px, uint32_t w, uint32_t h, int ch,
                        int quality, int progressive, size_t *len);

/* A PNG decoded to 8 bits per sample (palette and tRNS expanded, 16-bit
 * scaled); *ch is 1 to 4. */
unsigned char *img_png_read(const void *data, size_t len, uint32_t *w,
                            uint32_t *h, int *ch);

/* A JPEG decoded; *ch is 1 (grey) or 3 (RGB). */
unsigned char *img_jpeg_read(const void *data, size_t len, uint32_t *w,
                             uint32_t *h, int *ch);

/* 8-bit pixels (ch 1 to 4) as a PNG of that zlib level. */
unsigned char *img_png8(const uint8_t *px, uint32_t w, uint32_t h, int ch,
                        int level, size_t *len);

/* A reproducible stream of numbers (xorshift64*), the same on every
 * machine: noise for the tests and the benchmark. */
static inline uint64_t img_rand(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

#endif
