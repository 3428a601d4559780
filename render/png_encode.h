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

/* The same for flat-colour images such as drawings, with no row filter:
 * on a canvas of 1,000 pen strokes zlib level 1 takes 10 ms for 230 kB
 * this way, against 19 ms for 390 kB with the Paeth filter, which only
 * pays on photographic noise. */
int atl_png_encode_flat(const uint8_t *rgb, int w, int h, int level, void **out,
                        size_t *out_len);

#endif
