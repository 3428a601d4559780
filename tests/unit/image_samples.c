/* Test images in memory (image_samples.h). */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

#include "image_samples.h"

typedef struct {
  unsigned char *data;
  size_t len, cap;
} buf_t;

static void buf_write(png_structp png, png_bytep d, size_t n) {
  buf_t *b = png_get_io_ptr(png);
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->len + n)
      cap *= 2;
    unsigned char *nd = realloc(b->data, cap);
    if (nd == NULL)
      png_error(png, "out of memory");
    b->data = nd;
    b->cap = cap;
  }
  memcpy(b->data + b->len, d, n);
  b->len += n;
}

static void buf_flush(png_structp png) {
  (void)png;
}

static int channels_of(int color_type) {
  switch (color_type) {
  case PNG_COLOR_TYPE_GRAY:
  case PNG_COLOR_TYPE_PALETTE:
    return 1;
  case PNG_COLOR_TYPE_GRAY_ALPHA:
    return 2;
  case PNG_COLOR_TYPE_RGB:
    return 3;
  default:
    return 4;
  }
}

/* One row of samples packed at the bit depth, most significant first. */
static void pack_row(const uint16_t *s, size_t n, int depth, uint8_t *out) {
  if (depth == 16) {
    for (size_t i = 0; i < n; i++) {
      out[2 * i] = (uint8_t)(s[i] >> 8);
      out[2 * i + 1] = (uint8_t)s[i];
    }
  } else if (depth == 8) {
    for (size_t i = 0; i < n; i++)
      out[i] = (uint8_t)s[i];
  } else {
    size_t bytes = (n * (size_t)depth + 7) / 8;
    memset(out, 0, bytes);
    for (size_t i = 0; i < n; i++) {
      size_t bit = i * (size_t)depth;
      out[bit / 8] |= (uint8_t)(s[i] << (8 - depth - (int)(bit % 8)));
    }
  }
}

/* The state a longjmp() may find changed lives behind this pointer. */
typedef struct {
  png_structp png;
  png_infop info;
  buf_t out;
  uint8_t *row;
} png_w_t;

static int png_write_all(png_w_t *w, const img_png_spec_t *s) {
  if (setjmp(png_jmpbuf(w->png)))
    return -1;
  int ch = channels_of(s->color_type);
  size_t n = (size_t)s->w * (size_t)ch;
  w->row = malloc(n * 2 + 1);
  if (w->row == NULL)
    return -1;
  png_set_write_fn(w->png, &w->out, buf_write, buf_flush);
  png_set_compression_level(w->png, s->level);
  png_set_IHDR(w->png, w->info, s->w, s->h, s->bit_depth, s->color_type,
               s->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (s->color_type == PNG_COLOR_TYPE_PALETTE) {
    png_color pal[256];
    for (int i = 0; i < s->npalette; i++) {
      pal[i].red = s->palette[3 * i];
      pal[i].green = s->palette[3 * i + 1];
      pal[i].blue = s->palette[3 * i + 2];
    }
    png_set_PLTE(w->png, w->info, pal, s->npalette);
    if (s->ntrns > 0)
      png_set_tRNS(w->png, w->info, s->trns, s->ntrns, NULL);
  }
  png_write_info(w->png, w->info);
  int passes = s->interlace ? png_set_interlace_handling(w->png) : 1;
  for (int p = 0; p < passes; p++)
    for (uint32_t y = 0; y < s->h; y++) {
      pack_row(s->samples + n * y, n, s->bit_depth, w->row);
      png_write_row(w->png, w->row);
    }
  png_write_end(w->png, NULL);
  return 0;
}

unsigned char *img_png(const img_png_spec_t *spec, size_t *len) {
  png_w_t w = {0};
  w.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  w.info = w.png ? png_create_info_struct(w.png) : NULL;
  int rc = w.info ? png_write_all(&w, spec) : -1;
  png_destroy_write_struct(&w.png, &w.info);
  free(w.row);
  if (rc != 0) {
    free(w.out.data);
    return NULL;
  }
  *len = w.out.len;
  return w.out.data;
}

unsigned char *img_png8(const uint8_t *px, uint32_t w, uint32_t h, int ch,
                        int level, size_t *len) {
  static const int types[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                              PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  size_t n = (size_t)w * h * (size_t)ch;
  uint16_t *s = malloc(n * sizeof(uint16_t));
  if (s == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++)
    s[i] = px[i];
  img_png_spec_t spec = {.w = w,
                         .h = h,
                         .color_type = types[ch - 1],
                         .bit_depth = 8,
                         .level = level,
                         .samples = s};
  unsigned char *out = img_png(&spec, len);
  free(s);
  return out;
}

typedef struct {
  png_structp png;
  png_infop info;
  const unsigned char *data;
  size_t len, pos;
  uint8_t *px;
  uint8_t **rows;
} png_r_t;

static void buf_read(png_structp png, png_bytep out, size_t n) {
  png_r_t *r = png_get_io_ptr(png);
  if (n > r->len - r->pos)
    png_error(png, "truncated");
  memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

static int png_read_all(png_r_t *r, uint32_t *w, uint32_t *h, int *ch) {
  if (setjmp(png_jmpbuf(r->png)))
    return -1;
  png_set_read_fn(r->png, r, buf_read);
  png_read_info(r->png, r->info);
  png_set_expand(r->png);
  png_set_scale_16(r->png);
  png_set_interlace_handling(r->png);
  png_read_update_info(r->png, r->info);
  *w = png_get_image_width(r->png, r->info);
  *h = png_get_image_height(r->png, r->info);
  *ch = png_get_channels(r->png, r->info);
  size_t stride = png_get_rowbytes(r->png, r->info);
  r->px = malloc(stride * *h);
  r->rows = malloc(sizeof(uint8_t *) * *h);
  if (r->px == NULL || r->rows == NULL)
    return -1;
  for (uint32_t y = 0; y < *h; y++)
    r->rows[y] = r->px + stride * y;
  png_read_image(r->png, r->rows);
  png_read_end(r->png, NULL);
  return 0;
}

unsigned char *img_png_read(const void *data, size_t len, uint32_t *w,
                            uint32_t *h, int *ch) {
  png_r_t r = {0};
  r.data = data;
  r.len = len;
  r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  r.info = r.png ? png_create_info_struct(r.png) : NULL;
  int rc = r.info ? png_read_all(&r, w, h, ch) : -1;
  png_destroy_read_struct(&r.png, &r.info, NULL);
  free(r.rows);
  if (rc != 0) {
    free(r.px);
    return NULL;
  }
  return r.px;
}

typedef struct {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
} jerr_t;

static void jerr_exit(j_common_ptr ci) {
  longjmp(((jerr_t *)ci->err)->jb, 1);
}

static void jerr_quiet(j_common_ptr ci) {
  (void)ci;
}

typedef struct {
  jerr_t err;
  struct jpeg_compress_struct c;
  struct jpeg_decompress_struct d;
  unsigned char *out;
  unsigned long out_len;
  uint8_t *px;
} jpeg_t;

static int jpeg_write_all(jpeg_t *j, const uint8_t *px, uint32_t w, uint32_t h,
                          int ch, int quality, int progressive) {
  if (setjmp(j->err.jb))
    return -1;
  jpeg_create_compress(&j->c);
  jpeg_mem_dest(&j->c, &j->out, &j->out_len);
  j->c.image_width = w;
  j->c.image_height = h;
  j->c.input_components = ch;
  j->c.in_color_space = ch == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&j->c);
  jpeg_set_quality(&j->c, quality, TRUE);
  if (progressive)
    jpeg_simple_progression(&j->c);
  jpeg_start_compress(&j->c, TRUE);
  while (j->c.next_scanline < h) {
    JSAMPROW row = (JSAMPROW)(px + (size_t)j->c.next_scanline * w * ch);
    jpeg_write_scanlines(&j->c, &row, 1);
  }
  jpeg_finish_compress(&j->c);
  return 0;
}

unsigned char *img_jpeg(const uint8_t *px, uint32_t w, uint32_t h, int ch,
                        int quality, int progressive, size_t *len) {
  jpeg_t j;
  memset(&j, 0, sizeof(j));
  j.c.err = jpeg_std_error(&j.err.pub);
  j.err.pub.error_exit = jerr_exit;
  j.err.pub.output_message = jerr_quiet;
  int rc = jpeg_write_all(&j, px, w, h, ch, quality, progressive);
  jpeg_destroy_compress(&j.c);
  if (rc != 0) {
    free(j.out);
    return NULL;
  }
  *len = j.out_len;
  return j.out;
}

static int jpeg_read_all(jpeg_t *j, const void *data, size_t len, uint32_t *w,
                         uint32_t *h, int *ch) {
  if (setjmp(j->err.jb))
    return -1;
  jpeg_create_decompress(&j->d);
  jpeg_mem_src(&j->d, data, (unsigned long)len);
  jpeg_read_header(&j->d, TRUE);
  jpeg_start_decompress(&j->d);
  *w = j->d.output_width;
  *h = j->d.output_height;
  *ch = j->d.output_components;
  size_t stride = (size_t)*w * (size_t)*ch;
  j->px = malloc(stride * *h);
  if (j->px == NULL)
    return -1;
  while (j->d.output_scanline < *h) {
    JSAMPROW row = j->px + stride * j->d.output_scanline;
    jpeg_read_scanlines(&j->d, &row, 1);
  }
  jpeg_finish_decompress(&j->d);
  return 0;
}

unsigned char *img_jpeg_read(const void *data, size_t len, uint32_t *w,
                             uint32_t *h, int *ch) {
  jpeg_t j;
  memset(&j, 0, sizeof(j));
  j.d.err = jpeg_std_error(&j.err.pub);
  j.err.pub.error_exit = jerr_exit;
  j.err.pub.output_message = jerr_quiet;
  int rc = jpeg_read_all(&j, data, len, w, h, ch);
  jpeg_destroy_decompress(&j.d);
  if (rc != 0) {
    free(j.px);
    return NULL;
  }
  return j.px;
}
