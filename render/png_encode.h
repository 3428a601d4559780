/* PNG encoding of 8-bit RGB pixels (libpng). */
#ifndef ATL_RENDER_PNG_ENCODE_H
#define ATL_RENDER_PNG_ENCODE_H

#include <stddef.h>
#include <stdint.h>

/* Encodes w * h pixels of rgb (row-major from the top, 3 bytes each) as a
 * PNG in memory; level is zlib's 0..9 (-1: 3, which png.c explains;
 * previews use 1, faster still for a slightly larger file). Returns 0
 * and a malloc()ed buffer in *out (the caller frees it) of *out_len
 * bytes, or -EINVAL / -ENOMEM. Any thread. */
int atl_png_encode(const uint8_t *rgb, int w, int h, int level, void **out,
                   size_t *out_len);

/* A PNG (8-bit RGB, w * h, sRGB) around z, a complete zlib stream of its
 * scanlines (each row a filter byte and w * 3 bytes) that the caller
 * compressed itself, e.g. in bands on several threads (raw deflate
 * segments ended with Z_FULL_FLUSH, joined, with adler32_combine()'s
 * checksum): libpng writes the chunks and their CRCs. Returns 0 and a
 * malloc()ed buffer in *out of *out_len bytes, or -EINVAL / -ENOMEM. */
int atl_png_wrap_zlib(const void *z, size_t z_len, int w, int h, void **out,
                      size_t *out_len);

#endif
