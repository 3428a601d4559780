/* daemon/image_fit.c: images scaled and re-encoded to a provider's
 * limits. Inputs are made here (image_samples.c); every output is decoded
 * again with libpng or libjpeg and its pixels checked. */
#include <criterion/criterion.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_fit.h"
#include "image_samples.h"

/* Anthropic's limit on an image's base64. */
#define B64_5MB 5242880u

/* The output decoded, whatever its format; the test frees it. */
static unsigned char *decode(const atl_image_fit_t *f, uint32_t *w, uint32_t *h,
                             int *ch) {
  unsigned char *px = strcmp(f->mime, "image/png") == 0
                          ? img_png_read(f->data, f->len, w, h, ch)
                          : img_jpeg_read(f->data, f->len, w, h, ch);
  cr_assert_not_null(px, "the output (%s, %zu bytes) does not decode", f->mime,
                     f->len);
  cr_assert_eq(*w, f->width);
  cr_assert_eq(*h, f->height);
  return px;
}

static unsigned char *solid(uint32_t w, uint32_t h, int ch,
                            const uint8_t *colour) {
  unsigned char *px = malloc((size_t)w * h * ch);
  for (size_t i = 0; i < (size_t)w * h; i++)
    memcpy(px + i * ch, colour, (size_t)ch);
  return px;
}

/* A smooth picture: what a plot or a clean render compresses like. */
static unsigned char *gradient(uint32_t w, uint32_t h, int ch) {
  unsigned char *px = malloc((size_t)w * h * ch);
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++)
      for (int c = 0; c < ch; c++)
        px[((size_t)y * w + x) * ch + c] =
            (uint8_t)((x * 255 / w + y * 255 / h * (c + 1)) / (c + 2));
  return px;
}

static unsigned char *noise(uint32_t w, uint32_t h, int ch, uint64_t seed) {
  unsigned char *px = malloc((size_t)w * h * ch);
  for (size_t i = 0; i < (size_t)w * h * ch; i++)
    px[i] = (uint8_t)(img_rand(&seed) >> 56);
  return px;
}

/* The process's peak virtual size in kB (VmPeak). */
static long vm_peak_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof(line), f))
    if (sscanf(line, "VmPeak: %ld", &kb) == 1)
      break;
  if (f)
    fclose(f);
  return kb;
}

Test(image_fit, unchanged_when_it_fits) {
  unsigned char *px = gradient(300, 200, 3);
  size_t len;
  unsigned char *png = img_png8(px, 300, 200, 3, 6, &len);
  atl_image_limits_t lim = {.max_side = 1568, .max_base64 = B64_5MB};
  atl_image_fit_t f;
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  cr_assert_eq(f.changed, 0);
  cr_assert_str_eq(f.mime, "image/png");
  cr_assert_eq(f.len, len);
  cr_assert_neq(f.data, png);
  cr_assert_eq(memcmp(f.data, png, len), 0);
  cr_assert_eq(f.width, 300);
  cr_assert_eq(f.height, 200);
  cr_assert_eq(f.orig_width, 300);
  cr_assert_eq(f.orig_height, 200);
  cr_assert_eq(f.quality, 0);
  char note[200];
  cr_assert_eq(atl_image_fit_note(&f, note, sizeof(note)), 0);
  cr_assert_str_eq(note, "");
  atl_image_fit_free(&f);
  cr_assert_null(f.data);

  /* No limits at all, and a JPEG: copied too. */
  atl_image_limits_t none = {0};
  unsigned char *jpg = img_jpeg(px, 300, 200, 3, 85, 0, &len);
  cr_assert_eq(atl_image_fit(jpg, len, &none, &f), 0);
  cr_assert_eq(f.changed, 0);
  cr_assert_str_eq(f.mime, "image/jpeg");
  cr_assert_eq(memcmp(f.data, jpg, len), 0);
  atl_image_fit_free(&f);
  free(jpg);
  free(png);
  free(px);
}

Test(image_fit, max_side_keeps_the_aspect_ratio) {
  unsigned char *px = gradient(3000, 1000, 3);
  size_t len;
  unsigned char *png = img_png8(px, 3000, 1000, 3, 1, &len);
  atl_image_limits_t lim = {.max_side = 1568};
  atl_image_fit_t f;
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  cr_assert_eq(f.changed, 1);
  cr_assert_str_eq(f.mime, "image/png");
  /* 1000 * 1568 / 3000 = 522.67, rounded half up. */
  cr_assert_eq(f.width, 1568);
  cr_assert_eq(f.height, 523);
  cr_assert_eq(f.orig_width, 3000);
  cr_assert_eq(f.orig_height, 1000);
  uint32_t w, h;
  int ch;
  unsigned char *out = decode(&f, &w, &h, &ch);
  cr_assert_eq(ch, 3);
  char note[200];
  atl_image_fit_note(&f, note, sizeof(note));
  cr_assert_str_eq(note, "[The image was scaled from 3000x1000 to 1568x523 "
                         "px to fit the model provider's limits.]");
  free(out);
  atl_image_fit_free(&f);
  free(png);
  free(px);

  /* Portrait: the long side is the height. */
  px = gradient(1000, 3000, 3);
  png = img_png8(px, 1000, 3000, 3, 1, &len);
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  cr_assert_eq(f.width, 523);
  cr_assert_eq(f.height, 1568);
  atl_image_fit_free(&f);
  free(png);
  free(px);
}

Test(image_fit, pixel_and_short_side_limits) {
  uint8_t grey = 90;
  unsigned char *px = solid(2000, 1500, 1, &grey);
  size_t len;
  unsigned char *png = img_png8(px, 2000, 1500, 1, 1, &len);
  atl_image_fit_t f;
  /* 287,500 px: the largest 4:3 size under it, to the pixel. */
  atl_image_limits_t lim = {.max_pixels = 287500};
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  cr_assert_leq((uint64_t)f.width * f.height, 287500);
  cr_assert_eq(f.width, 619);
  cr_assert_eq(f.height, 464);
  /* One more pixel on the long side would be over: 620 x 465 (465.0)
   * is 288,300 px. */
  cr_assert_gt(620ull * ((1500ull * 620 + 1000) / 2000), 287500);
  atl_image_fit_free(&f);
  /* OpenAI's 2048 px, then 768 on the short side. */
  atl_image_limits_t oa = {.max_side = 2048, .max_short_side = 768};
  cr_assert_eq(atl_image_fit(png, len, &oa, &f), 0);
  cr_assert_eq(f.width, 1024);
  cr_assert_eq(f.height, 768);
  uint32_t w, h;
  int ch;
  unsigned char *out = decode(&f, &w, &h, &ch);
  cr_assert_eq(ch, 1);
  for (size_t i = 0; i < (size_t)w * h; i++)
    cr_assert_eq(out[i], grey);
  free(out);
  atl_image_fit_free(&f);
  free(png);
  free(px);
}

/* The size the header promises, found the slow way: the largest long
 * side t whose short side round(S * t / L) (half up, at least 1) meets
 * every limit. */
static void expected_size(uint32_t w, uint32_t h, const atl_image_limits_t *l,
                          uint32_t *ew, uint32_t *eh) {
  uint32_t big = w > h ? w : h, sm = w > h ? h : w;
  for (uint32_t t = big; t >= 1; t--) {
    uint32_t s = (uint32_t)(((uint64_t)sm * t + big / 2) / big);
    s = s ? s : 1;
    if ((!l->max_side || t <= l->max_side) &&
        (!l->max_short_side || s <= l->max_short_side) &&
        (!l->max_pixels || (uint64_t)t * s <= l->max_pixels)) {
      *ew = w > h ? t : s;
      *eh = w > h ? s : t;
      return;
    }
  }
}

Test(image_fit, sizes_are_the_largest_that_fit) {
  static const struct {
    uint32_t w, h;
    atl_image_limits_t lim;
  } cases[] = {
      {3000, 1000, {.max_side = 1568}},
      {1000, 3000, {.max_side = 1568, .max_pixels = 1000000}},
      {4000, 40, {.max_pixels = 1000}},
      {4000, 39, {.max_pixels = 3001}},
      {5000, 7, {.max_pixels = 999}},
      {3001, 1999, {.max_pixels = 777777}},
      {2047, 2049, {.max_short_side = 768}},
      {4001, 301, {.max_short_side = 100}},
      {4001, 301, {.max_short_side = 100, .max_pixels = 20000}},
      {65535, 3, {.max_side = 100}},
      {1, 5000, {.max_side = 50, .max_short_side = 1}},
      {333, 331, {.max_side = 1, .max_pixels = 1}},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    uint32_t w = cases[i].w, h = cases[i].h, ew = 0, eh = 0;
    uint8_t grey = 200;
    unsigned char *px = solid(w, h, 1, &grey);
    size_t len;
    unsigned char *png = img_png8(px, w, h, 1, 1, &len);
    atl_image_fit_t f;
    cr_assert_eq(atl_image_fit(png, len, &cases[i].lim, &f), 0, "case %zu", i);
    expected_size(w, h, &cases[i].lim, &ew, &eh);
    cr_assert(f.width == ew && f.height == eh, "%ux%u: %ux%u, not %ux%u", w, h,
              f.width, f.height, ew, eh);
    atl_image_fit_free(&f);
    free(png);
    free(px);
  }
}

Test(image_fit, solid_colour_stays_exact) {
  /* 1001 x 777 to 300 x 233: a ratio of 3.34, so every destination pixel
   * takes fractions of source pixels on all four edges. */
  const uint8_t rgb[3] = {37, 142, 211};
  unsigned char *px = solid(1001, 777, 3, rgb);
  size_t len;
  unsigned char *png = img_png8(px, 1001, 777, 3, 6, &len);
  atl_image_limits_t lim = {.max_side = 300};
  atl_image_fit_t f;
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  cr_assert_eq(f.width, 300);
  cr_assert_eq(f.height, 233);
  uint32_t w, h;
  int ch;
  unsigned char *out = decode(&f, &w, &h, &ch);
  cr_assert_eq(ch, 3);
  for (size_t i = 0; i < (size_t)w * h; i++)
    cr_assert(
        out[3 * i] == 37 && out[3 * i + 1] == 142 && out[3 * i + 2] == 211,
        "pixel %zu is %d,%d,%d", i, out[3 * i], out[3 * i + 1], out[3 * i + 2]);
  free(out);
  atl_image_fit_free(&f);
  free(png);
  free(px);

  /* Translucent: colour and alpha both exact. */
  const uint8_t rgba[4] = {250, 3, 99, 200};
  px = solid(1001, 777, 4, rgba);
  png = img_png8(px, 1001, 777, 4, 6, &len);
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  out = decode(&f, &w, &h, &ch);
  cr_assert_eq(ch, 4);
  for (size_t i = 0; i < (size_t)w * h; i++)
    cr_assert_eq(memcmp(out + 4 * i, rgba, 4), 0, "pixel %zu", i);
  free(out);
  atl_image_fit_free(&f);
  free(png);
  free(px);
}

static void check_checker(uint32_t n, uint32_t side, int ch) {
  unsigned char *px = malloc((size_t)n * n * ch);
  for (uint32_t y = 0; y < n; y++)
    for (uint32_t x = 0; x < n; x++)
      memset(px + ((size_t)y * n + x) * ch, (x + y) % 2 ? 255 : 0, (size_t)ch);
  size_t len;
  unsigned char *png = img_png8(px, n, n, ch, 1, &len);
  atl_image_limits_t lim = {.max_side = side};
  atl_image_fit_t f;
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  cr_assert_eq(f.width, side);
  uint32_t w, h;
  int och;
  unsigned char *out = decode(&f, &w, &h, &och);
  cr_assert_eq(och, ch);
  for (size_t i = 0; i < (size_t)w * h * ch; i++)
    cr_assert(out[i] >= 127 && out[i] <= 128,
              "%u to %u: sample %zu is %d, not mid grey", n, side, i, out[i]);
  free(out);
  atl_image_fit_free(&f);
  free(png);
  free(px);
}

Test(image_fit, checker_averages_to_grey) {
  check_checker(1000, 500, 1); /* 2:1: two of each colour */
  check_checker(1001, 77, 3);  /* 13:1: 85 of 169 one colour, 128.25 */
  check_checker(1920, 100, 3); /* 19.2:1, fractional edges */
}

Test(image_fit, alpha_is_kept_and_does_not_bleed) {
  /* Left half opaque red, right half transparent green. Halved: the
   * middle column covers one source column of each, so it is red (the
   * green has no weight) at half alpha. */
  uint32_t w0 = 6, h0 = 4;
  unsigned char px[6 * 4 * 4];
  for (uint32_t y = 0; y < h0; y++)
    for (uint32_t x = 0; x < w0; x++) {
      unsigned char *p = px + (y * w0 + x) * 4;
      if (x < 3) {
        p[0] = 255, p[1] = 0, p[2] = 0, p[3] = 255;
      } else {
        p[0] = 0, p[1] = 255, p[2] = 0, p[3] = 0;
      }
    }
  size_t len;
  unsigned char *png = img_png8(px, w0, h0, 4, 6, &len);
  atl_image_limits_t lim = {.max_side = 3};
  atl_image_fit_t f;
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  cr_assert_str_eq(f.mime, "image/png");
  cr_assert_eq(f.width, 3);
  cr_assert_eq(f.height, 2);
  uint32_t w, h;
  int ch;
  unsigned char *out = decode(&f, &w, &h, &ch);
  cr_assert_eq(ch, 4);
  for (uint32_t y = 0; y < 2; y++) {
    const unsigned char *r = out + y * 12;
    cr_assert(r[0] == 255 && r[1] == 0 && r[2] == 0 && r[3] == 255);
    cr_assert(r[4] == 255 && r[5] == 0 && r[6] == 0 && r[7] == 128,
              "middle: %d,%d,%d,%d", r[4], r[5], r[6], r[7]);
    cr_assert_eq(r[11], 0);
  }
  free(out);
  atl_image_fit_free(&f);
  free(png);
}

/* An input of any colour type and depth, scaled by 4, must come out as
 * 8-bit pixels of the values expected (the samples are constant over
 * each 4 x 4 block, so no averaging blurs them). */
typedef struct {
  const char *name;
  int color_type, bit_depth, interlace;
  int palette;   /* use the test palette (with tRNS) */
  int out_ch;    /* channels of the output PNG */
  uint16_t a[4]; /* block value where (bx + by) is even */
  uint16_t b[4]; /* and odd */
  uint8_t ea[4]; /* what each comes out as */
  uint8_t eb[4];
} variant_t;

static const uint8_t test_palette[] = {10, 20, 30, 200, 100, 0};
static const uint8_t test_trns[] = {255, 64};

static void check_variant(const variant_t *v) {
  uint32_t w0 = 64, h0 = 32;
  int ch = v->color_type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2
           : v->color_type == PNG_COLOR_TYPE_RGB      ? 3
           : v->color_type == PNG_COLOR_TYPE_RGBA     ? 4
                                                      : 1;
  uint16_t *s = malloc(sizeof(uint16_t) * w0 * h0 * ch);
  for (uint32_t y = 0; y < h0; y++)
    for (uint32_t x = 0; x < w0; x++)
      memcpy(s + ((size_t)y * w0 + x) * ch, (x / 4 + y / 4) % 2 ? v->b : v->a,
             sizeof(uint16_t) * ch);
  img_png_spec_t spec = {.w = w0,
                         .h = h0,
                         .color_type = v->color_type,
                         .bit_depth = v->bit_depth,
                         .interlace = v->interlace,
                         .level = 6,
                         .samples = s,
                         .palette = v->palette ? test_palette : NULL,
                         .npalette = v->palette ? 2 : 0,
                         .trns = v->palette ? test_trns : NULL,
                         .ntrns = v->palette ? 2 : 0};
  size_t len;
  unsigned char *png = img_png(&spec, &len);
  cr_assert_not_null(png, "%s: the test could not write it", v->name);
  atl_image_limits_t lim = {.max_side = 16};
  atl_image_fit_t f;
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0, "%s", v->name);
  cr_assert_eq(f.width, 16, "%s", v->name);
  cr_assert_eq(f.height, 8, "%s", v->name);
  cr_assert_str_eq(f.mime, "image/png");
  uint32_t w, h;
  int och;
  unsigned char *out = decode(&f, &w, &h, &och);
  cr_assert_eq(och, v->out_ch, "%s: %d channels", v->name, och);
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++) {
      const uint8_t *e = (x + y) % 2 ? v->eb : v->ea;
      const unsigned char *p = out + ((size_t)y * w + x) * och;
      cr_assert_eq(memcmp(p, e, (size_t)och), 0,
                   "%s: pixel %u,%u is %d,%d,%d,%d", v->name, x, y, p[0],
                   och > 1 ? p[1] : -1, och > 2 ? p[2] : -1,
                   och > 3 ? p[3] : -1);
    }
  free(out);
  atl_image_fit_free(&f);
  free(png);
  free(s);
}

Test(image_fit, every_png_colour_type_and_depth) {
  static const variant_t vs[] = {
      {"grey 1-bit", PNG_COLOR_TYPE_GRAY, 1, 0, 0, 1, {0}, {1}, {0}, {255}},
      {"grey 4-bit", PNG_COLOR_TYPE_GRAY, 4, 0, 0, 1, {3}, {12}, {51}, {204}},
      {"grey 8-bit", PNG_COLOR_TYPE_GRAY, 8, 0, 0, 1, {7}, {250}, {7}, {250}},
      {"grey 16-bit",
       PNG_COLOR_TYPE_GRAY,
       16,
       0,
       0,
       1,
       {0x8080},
       {0xffff},
       {128},
       {255}},
      {"grey+alpha 8-bit",
       PNG_COLOR_TYPE_GRAY_ALPHA,
       8,
       0,
       0,
       2,
       {100, 255},
       {200, 50},
       {100, 255},
       {200, 50}},
      {"grey+alpha 16-bit",
       PNG_COLOR_TYPE_GRAY_ALPHA,
       16,
       0,
       0,
       2,
       {0x6464, 0xffff},
       {0xc8c8, 0x3232},
       {100, 255},
       {200, 50}},
      {"RGB 16-bit",
       PNG_COLOR_TYPE_RGB,
       16,
       0,
       0,
       3,
       {0x0101, 0x8080, 0xfefe},
       {0xffff, 0, 0x4040},
       {1, 128, 254},
       {255, 0, 64}},
      {"RGBA 16-bit",
       PNG_COLOR_TYPE_RGBA,
       16,
       0,
       0,
       4,
       {0x0101, 0x8080, 0xfefe, 0xffff},
       {0xffff, 0, 0x4040, 0x8080},
       {1, 128, 254, 255},
       {255, 0, 64, 128}},
      {"palette 1-bit with tRNS",
       PNG_COLOR_TYPE_PALETTE,
       1,
       0,
       1,
       4,
       {0},
       {1},
       {10, 20, 30, 255},
       {200, 100, 0, 64}},
      {"palette 4-bit with tRNS",
       PNG_COLOR_TYPE_PALETTE,
       4,
       0,
       1,
       4,
       {1},
       {0},
       {200, 100, 0, 64},
       {10, 20, 30, 255}},
      {"palette 8-bit interlaced",
       PNG_COLOR_TYPE_PALETTE,
       8,
       1,
       1,
       4,
       {0},
       {1},
       {10, 20, 30, 255},
       {200, 100, 0, 64}},
      {"RGB 8-bit interlaced",
       PNG_COLOR_TYPE_RGB,
       8,
       1,
       0,
       3,
       {1, 2, 3},
       {252, 253, 254},
       {1, 2, 3},
       {252, 253, 254}},
      {"grey+alpha 16-bit interlaced",
       PNG_COLOR_TYPE_GRAY_ALPHA,
       16,
       1,
       0,
       2,
       {0x6464, 0xffff},
       {0xc8c8, 0x3232},
       {100, 255},
       {200, 50}},
  };
  for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
    check_variant(&vs[i]);
}

Test(image_fit, noisy_render_fits_anthropic_5mb) {
  /* Random pixels: the worst case for both PNG and JPEG. */
  unsigned char *px = noise(1920, 1920, 3, 42);
  size_t len;
  unsigned char *png = img_png8(px, 1920, 1920, 3, 1, &len);
  cr_assert_gt(atl_base64_len(len), B64_5MB, "the input must be over");
  atl_image_limits_t lim = {.max_side = 8000, .max_base64 = B64_5MB};
  atl_image_fit_t f;
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  cr_assert_eq(f.changed, 1);
  cr_assert_leq(atl_base64_len(f.len), B64_5MB);
  cr_assert_str_eq(f.mime, "image/jpeg");
  cr_assert_geq(f.quality, 60);
  cr_assert_leq(f.quality, 90);
  cr_assert_eq(f.width, f.height);
  cr_assert_leq(f.width, 1920);
  cr_assert_geq(f.width, 64);
  uint32_t w, h;
  int ch;
  unsigned char *out = decode(&f, &w, &h, &ch);
  cr_assert_eq(ch, 3);
  char note[200];
  atl_image_fit_note(&f, note, sizeof(note));
  cr_log_info("noise 1920x1920, %zu bytes of PNG: %s, %zu bytes (base64 "
              "%zu) %s",
              len, f.mime, f.len, atl_base64_len(f.len), note);
  cr_assert(strstr(note, "JPEG (quality") != NULL, "%s", note);

  /* The same input, the same bytes. */
  atl_image_fit_t g;
  cr_assert_eq(atl_image_fit(png, len, &lim, &g), 0);
  cr_assert_eq(g.len, f.len);
  cr_assert_eq(memcmp(g.data, f.data, f.len), 0);
  atl_image_fit_free(&g);
  free(out);
  atl_image_fit_free(&f);
  free(png);
  free(px);
}

Test(image_fit, base64_limit_alone_keeps_the_size) {
  /* A smooth 1200 x 800 picture stored uncompressed, over 1 MB of base64:
   * compressed it fits, still a PNG, pixel for pixel. */
  unsigned char *px = gradient(1200, 800, 3);
  size_t len;
  unsigned char *png = img_png8(px, 1200, 800, 3, 0, &len);
  atl_image_limits_t lim = {.max_base64 = 1 << 20};
  cr_assert_gt(atl_base64_len(len), lim.max_base64);
  atl_image_fit_t f;
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  cr_assert_eq(f.changed, 1);
  cr_assert_str_eq(f.mime, "image/png");
  cr_assert_eq(f.width, 1200);
  cr_assert_eq(f.height, 800);
  cr_assert_leq(atl_base64_len(f.len), lim.max_base64);
  uint32_t w, h;
  int ch;
  unsigned char *out = decode(&f, &w, &h, &ch);
  cr_assert_eq(memcmp(out, px, (size_t)1200 * 800 * 3), 0);
  char note[200];
  atl_image_fit_note(&f, note, sizeof(note));
  cr_assert_str_eq(note, "", "nothing the model sees changed: %s", note);
  free(out);
  atl_image_fit_free(&f);

  /* With some grain on it, PNG cannot fit but JPEG does at full size. */
  uint64_t seed = 3;
  for (size_t i = 0; i < (size_t)1200 * 800 * 3; i++)
    px[i] = (uint8_t)(px[i] / 2 + (img_rand(&seed) >> 61));
  free(png);
  png = img_png8(px, 1200, 800, 3, 6, &len);
  cr_assert_gt(atl_base64_len(len), lim.max_base64);
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  cr_assert_str_eq(f.mime, "image/jpeg");
  cr_assert_eq(f.quality, 90);
  cr_assert_eq(f.width, 1200);
  cr_assert_eq(f.height, 800);
  cr_assert_leq(atl_base64_len(f.len), lim.max_base64);
  atl_image_fit_note(&f, note, sizeof(note));
  cr_assert_str_eq(note, "[The image was sent as JPEG (quality 90) at its "
                         "full 1200x800 px to fit the model provider's size "
                         "limit.]");
  atl_image_fit_free(&f);
  free(png);
  free(px);
}

Test(image_fit, alpha_goes_onto_white_in_jpeg) {
  /* Noise under a fully transparent left half: as PNG too large for the
   * limit, as JPEG the left half is white. */
  unsigned char *px = noise(512, 512, 4, 7);
  for (uint32_t y = 0; y < 512; y++)
    for (uint32_t x = 0; x < 512; x++)
      px[((size_t)y * 512 + x) * 4 + 3] = x < 256 ? 0 : 255;
  size_t len;
  unsigned char *png = img_png8(px, 512, 512, 4, 1, &len);
  atl_image_limits_t lim = {.max_side = 256, .max_base64 = 100000};
  atl_image_fit_t f;
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  cr_assert_str_eq(f.mime, "image/jpeg");
  cr_assert_leq(atl_base64_len(f.len), lim.max_base64);
  uint32_t w, h;
  int ch;
  unsigned char *out = decode(&f, &w, &h, &ch);
  cr_assert_eq(ch, 3);
  /* Away from the edge the JPEG's ringing cannot reach. */
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w / 2 - 16; x++)
      for (int c = 0; c < 3; c++)
        cr_assert_geq(out[((size_t)y * w + x) * 3 + c], 250, "%u,%u", x, y);
  free(out);
  atl_image_fit_free(&f);
  free(png);
  free(px);
}

Test(image_fit, jpeg_input_scales) {
  unsigned char *px = gradient(800, 600, 3);
  size_t len;
  unsigned char *jpg = img_jpeg(px, 800, 600, 3, 92, 0, &len);
  atl_image_limits_t lim = {.max_side = 400};
  atl_image_fit_t f;
  cr_assert_eq(atl_image_fit(jpg, len, &lim, &f), 0);
  cr_assert_eq(f.changed, 1);
  /* A JPEG stays a JPEG: its pixels were lossy already. */
  cr_assert_str_eq(f.mime, "image/jpeg");
  cr_assert_eq(f.quality, 90);
  cr_assert_eq(f.width, 400);
  cr_assert_eq(f.height, 300);
  uint32_t w, h;
  int ch;
  unsigned char *out = decode(&f, &w, &h, &ch);
  cr_assert_eq(ch, 3);
  /* Close to the gradient halved (JPEG twice, so a few levels off). */
  for (uint32_t y = 8; y < h - 8; y += 37)
    for (uint32_t x = 8; x < w - 8; x += 41)
      for (int c = 0; c < 3; c++) {
        int want = px[((size_t)(2 * y) * 800 + 2 * x) * 3 + c];
        int got = out[((size_t)y * w + x) * 3 + c];
        cr_assert(abs(got - want) <= 6, "%u,%u,%d: %d, not %d", x, y, c, got,
                  want);
      }
  free(out);
  atl_image_fit_free(&f);
  free(jpg);

  /* Grey and progressive JPEGs. */
  unsigned char *grey = gradient(800, 600, 1);
  jpg = img_jpeg(grey, 800, 600, 1, 90, 1, &len);
  cr_assert_eq(atl_image_fit(jpg, len, &lim, &f), 0);
  cr_assert_eq(f.width, 400);
  out = decode(&f, &w, &h, &ch);
  cr_assert_eq(ch, 1);
  free(out);
  atl_image_fit_free(&f);
  free(jpg);
  jpg = img_jpeg(px, 800, 600, 3, 90, 1, &len);
  cr_assert_eq(atl_image_fit(jpg, len, &lim, &f), 0);
  cr_assert_eq(f.height, 300);
  atl_image_fit_free(&f);
  free(jpg);
  free(grey);
  free(px);
}

/* Limits that force a decode, so that damage is found. */
static const atl_image_limits_t small = {.max_side = 32};

static void expect_einval(const void *data, size_t len, const char *what) {
  atl_image_fit_t f;
  int rc = atl_image_fit(data, len, &small, &f);
  cr_assert_eq(rc, ATL_EINVAL, "%s: %d", what, rc);
  cr_assert_null(f.data);
  atl_image_fit_free(&f);
}

Test(image_fit, corrupt_and_truncated_inputs) {
  unsigned char *px = gradient(200, 100, 3);
  size_t plen, jlen;
  unsigned char *png = img_png8(px, 200, 100, 3, 6, &plen);
  unsigned char *jpg = img_jpeg(px, 200, 100, 3, 90, 0, &jlen);
  unsigned char *pjpg;
  size_t pjlen;
  pjpg = img_jpeg(px, 200, 100, 3, 90, 1, &pjlen);
  /* Cut anywhere: in the header, in the pixels, before the end. */
  for (size_t cut = 1; cut < plen - 12; cut += plen / 37 + 1)
    expect_einval(png, cut, "truncated PNG");
  for (size_t cut = 1; cut < jlen - 2; cut += jlen / 37 + 1)
    expect_einval(jpg, cut, "truncated JPEG");
  for (size_t cut = 1; cut < pjlen - 2; cut += pjlen / 37 + 1)
    expect_einval(pjpg, cut, "truncated progressive JPEG");
  /* A damaged IDAT: its CRC no longer matches. */
  unsigned char *bad = malloc(plen);
  memcpy(bad, png, plen);
  bad[plen / 2] ^= 0x55;
  expect_einval(bad, plen, "damaged PNG");
  /* Not an image at all, or a signature and nothing else. */
  expect_einval("GIF89a\1\0\1\0\0\0\0", 13, "GIF");
  expect_einval("hello, world", 12, "text");
  expect_einval(png, 8, "PNG signature only");
  expect_einval("\xff\xd8\xff", 3, "JPEG SOI only");
  unsigned char junk[4096];
  uint64_t seed = 1;
  for (size_t i = 0; i < sizeof(junk); i++)
    junk[i] = (uint8_t)(img_rand(&seed) >> 56);
  memcpy(junk, png, 33); /* a valid IHDR, then noise */
  expect_einval(junk, sizeof(junk), "PNG header, noise after");
  memcpy(junk, jpg, 200);
  expect_einval(junk, sizeof(junk), "JPEG header, noise after");
  /* Arguments. */
  atl_image_fit_t f;
  cr_assert_eq(atl_image_fit(NULL, 10, &small, &f), ATL_EINVAL);
  cr_assert_eq(atl_image_fit(png, 0, &small, &f), ATL_EINVAL);
  cr_assert_eq(atl_image_fit(png, plen, NULL, &f), ATL_EINVAL);
  cr_assert_eq(atl_image_fit(png, plen, &small, NULL), ATL_EINVAL);
  atl_image_fit_free(NULL);
  free(bad);
  free(pjpg);
  free(jpg);
  free(png);
  free(px);
}

/* PNG's CRC-32 (ISO 3309), bit by bit: the tests need a few. */
static uint32_t crc32_of(const unsigned char *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xffffffffu;
}

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* Rewrites IHDR's size and its CRC, so that only the size is wrong. */
static void png_with_size(unsigned char *png, uint32_t w, uint32_t h) {
  put32(png + 16, w);
  put32(png + 20, h);
  put32(png + 29, crc32_of(png + 12, 17));
}

/* The SOF0 segment of a baseline JPEG: FF C0, length, precision, height,
 * width. */
static void jpeg_with_size(unsigned char *jpg, size_t len, uint16_t w,
                           uint16_t h) {
  for (size_t i = 2; i + 9 < len; i++)
    if (jpg[i] == 0xff && jpg[i + 1] == 0xc0) {
      jpg[i + 5] = (unsigned char)(h >> 8);
      jpg[i + 6] = (unsigned char)h;
      jpg[i + 7] = (unsigned char)(w >> 8);
      jpg[i + 8] = (unsigned char)w;
      return;
    }
  cr_assert_fail("no SOF0");
}

Test(image_fit, absurd_sizes_are_refused_before_allocating) {
  unsigned char *px = gradient(64, 64, 3);
  size_t plen, jlen;
  unsigned char *png = img_png8(px, 64, 64, 3, 6, &plen);
  unsigned char *jpg = img_jpeg(px, 64, 64, 3, 90, 0, &jlen);
  long before = vm_peak_kb();
  atl_image_limits_t none = {0};
  atl_image_fit_t f;
  /* 100000 x 100000: a side over 65535. Refused even without limits,
   * where an image that fits would be copied undecoded. */
  png_with_size(png, 100000, 100000);
  cr_assert_eq(atl_image_fit(png, plen, &none, &f), ATL_EINVAL);
  cr_assert_eq(atl_image_fit(png, plen, &small, &f), ATL_EINVAL);
  /* 60000 x 60000: sides allowed, 3.6 Gpx not. */
  png_with_size(png, 60000, 60000);
  cr_assert_eq(atl_image_fit(png, plen, &small, &f), ATL_EINVAL);
  /* Under the cap but its data missing: refused when the pixels run
   * out, having allocated a few rows, not the image. */
  png_with_size(png, 65535, 1500);
  cr_assert_eq(atl_image_fit(png, plen, &small, &f), ATL_EINVAL);
  jpeg_with_size(jpg, jlen, 60000, 60000);
  cr_assert_eq(atl_image_fit(jpg, jlen, &small, &f), ATL_EINVAL);
  cr_assert_eq(atl_image_fit(jpg, jlen, &none, &f), ATL_EINVAL);
  jpeg_with_size(jpg, jlen, 65000, 1500);
  cr_assert_eq(atl_image_fit(jpg, jlen, &small, &f), ATL_EINVAL);
  long after = vm_peak_kb();
  cr_assert_lt(after - before, 256 * 1024, "peak grew by %ld kB",
               after - before);
  free(jpg);
  free(png);
  free(px);
}

Test(image_fit, impossible_limits_are_e2big) {
  unsigned char *px = noise(512, 512, 3, 9);
  size_t len;
  unsigned char *png = img_png8(px, 512, 512, 3, 1, &len);
  atl_image_fit_t f;
  /* A JPEG's headers alone are a few hundred bytes. */
  atl_image_limits_t tiny = {.max_base64 = 200};
  int rc = atl_image_fit(png, len, &tiny, &f);
  cr_assert_eq(rc, ATL_E2BIG, "%d: %s %ux%u %zu", rc, f.mime, f.width, f.height,
               f.len);
  cr_assert_null(f.data);
  atl_image_fit_free(&f);
  /* Fewer than 4 base64 bytes cannot hold a byte. */
  atl_image_limits_t none = {.max_side = 100, .max_base64 = 3};
  cr_assert_eq(atl_image_fit(png, len, &none, &f), ATL_E2BIG);
  /* Under the 64 px floor when the size limit asks for it: 16 x 16 fits
   * 2 kB. */
  atl_image_limits_t small16 = {.max_side = 16, .max_base64 = 2000};
  cr_assert_eq(atl_image_fit(png, len, &small16, &f), 0);
  cr_assert_eq(f.width, 16);
  cr_assert_leq(atl_base64_len(f.len), 2000);
  atl_image_fit_free(&f);
  free(png);
  free(px);
}

Test(image_fit, a_png_that_fools_the_estimate_still_fits) {
  /* Flat where image_fit.c samples its rows for an estimate (the first 8
   * of every 64), noise elsewhere: the estimate says the PNG fits, the
   * encoder finds out it does not, and JPEG takes over. */
  unsigned char *px = noise(512, 512, 3, 13);
  for (uint32_t y = 0; y < 512; y++)
    if (y % 64 < 8)
      memset(px + (size_t)y * 512 * 3, 90, 512 * 3);
  size_t len;
  unsigned char *png = img_png8(px, 512, 512, 3, 1, &len);
  atl_image_limits_t lim = {.max_base64 = 400000};
  cr_assert_gt(atl_base64_len(len), lim.max_base64);
  atl_image_fit_t f;
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  cr_assert_str_eq(f.mime, "image/jpeg");
  cr_assert_leq(atl_base64_len(f.len), lim.max_base64);
  atl_image_fit_free(&f);
  free(png);
  free(px);
}

Test(image_fit, shrinks_until_the_base64_fits) {
  /* Noise of 1024 x 1024 in 300 kB of base64: several sizes down, each
   * checked. */
  unsigned char *px = noise(1024, 1024, 3, 5);
  size_t len;
  unsigned char *png = img_png8(px, 1024, 1024, 3, 1, &len);
  atl_image_limits_t lim = {.max_base64 = 300000};
  atl_image_fit_t f;
  cr_assert_eq(atl_image_fit(png, len, &lim, &f), 0);
  cr_assert_str_eq(f.mime, "image/jpeg");
  cr_assert_lt(f.width, 1024);
  cr_assert_eq(f.width, f.height);
  cr_assert_leq(atl_base64_len(f.len), lim.max_base64);
  uint32_t w, h;
  int ch;
  unsigned char *out = decode(&f, &w, &h, &ch);
  char note[200];
  atl_image_fit_note(&f, note, sizeof(note));
  cr_log_info("%s (%zu bytes)", note, f.len);
  free(out);
  atl_image_fit_free(&f);
  free(png);
  free(px);
}
