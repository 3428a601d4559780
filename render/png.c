/* 8-bit RGB to PNG in memory, with libpng: what the render plugin, the
 * CLI and the echo plugin send or write. */
#include "atl-build.h"

#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "png_encode.h"

typedef struct {
  unsigned char *data;
  size_t len, cap;
} membuf_t;

static void write_mem(png_structp png, png_bytep data, png_size_t len) {
  membuf_t *m = png_get_io_ptr(png);
  if (m->len + len > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 16384;
    while (cap < m->len + len)
      cap *= 2;
    unsigned char *nd = realloc(m->data, cap);
    if (nd == NULL)
      png_error(png, "out of memory");
    m->data = nd;
    m->cap = cap;
  }
  memcpy(m->data + m->len, data, len);
  m->len += len;
}

static void flush_mem(png_structp png) {
  (void)png;
}

/* Writes a PNG of w * h pixels: from rgb, compressed here at level with
 * filter, or, when rgb is NULL, around z, a zlib stream of the scanlines
 * the caller compressed itself. */
static int write_png(const uint8_t *rgb, const void *z, size_t z_len, int w,
                     int h, int level, int filter, void **out,
                     size_t *out_len) {
  *out = NULL;
  *out_len = 0;
  if ((rgb == NULL && (z == NULL || z_len == 0)) || w < 1 || h < 1)
    return -EINVAL;
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  /* volatile: it is read after longjmp() back into this frame. */
  membuf_t *volatile m = calloc(1, sizeof(membuf_t));
  if (png == NULL || info == NULL || m == NULL) {
    png_destroy_write_struct(&png, &info);
    free(m);
    return -ENOMEM;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    free(m->data);
    free(m);
    return -ENOMEM;
  }
  png_set_write_fn(png, m, write_mem, flush_mem);
  /* The default, measured on a 400x400 64-spp Cornell box: zlib level 3
   * with the Paeth filter alone takes 18 ms for 279 kB, where libpng's
   * defaults (level 6, every filter tried on every row) take 53 ms for
   * 261 kB; renders are noisy, and the adaptive filter search buys little
   * on noise. */
  png_set_compression_level(png, level >= 0 && level <= 9 ? level : 3);
  png_set_filter(png, PNG_FILTER_TYPE_BASE, filter);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  /* The pixels are sRGB-encoded (atl_render_resolve): say so. */
  png_set_sRGB_gAMA_and_cHRM(png, info, PNG_sRGB_INTENT_PERCEPTUAL);
  png_write_info(png, info);
  if (rgb != NULL) {
    for (int y = 0; y < h; y++)
      png_write_row(png, (png_const_bytep)(rgb + (size_t)y * (size_t)w * 3));
    png_write_end(png, NULL);
  } else {
    /* The stream in IDAT chunks of at most 256 KiB, as encoders write
     * them (the format allows 2^31 - 1; some streaming readers buffer a
     * chunk whole), then IEND; libpng computes each chunk's CRC. */
    const unsigned char *p = z;
    for (size_t off = 0; off < z_len;) {
      size_t n = z_len - off < (256u << 10) ? z_len - off : (256u << 10);
      png_write_chunk(png, (png_const_bytep) "IDAT", p + off, n);
      off += n;
    }
    png_write_chunk(png, (png_const_bytep) "IEND", NULL, 0);
  }
  png_destroy_write_struct(&png, &info);
  *out = m->data;
  *out_len = m->len;
  free(m);
  return 0;
}

int atl_png_encode(const uint8_t *rgb, int w, int h, int level, void **out,
                   size_t *out_len) {
  if (rgb == NULL)
    return -EINVAL;
  return write_png(rgb, NULL, 0, w, h, level, PNG_FILTER_PAETH, out, out_len);
}

int atl_png_wrap_zlib(const void *z, size_t z_len, int w, int h, void **out,
                      size_t *out_len) {
  return write_png(NULL, z, z_len, w, h, -1, PNG_FILTER_NONE, out, out_len);
}
