/* Fitting an image to an LLM provider's limits: scaled down (box filter)
 * and re-encoded (PNG, else JPEG) until its side, its pixel count and its
 * base64 length are all within what the provider accepts.
 *
 * Tools return PNG renders and plots of up to 4096 x 4096 pixels; a noisy
 * 1920 x 1920 render measured 6.3 MB as PNG, 8.45 MB as base64, which
 * Anthropic refuses ("image exceeds 5 MB maximum"). The limits known when
 * this was written, for the caller that fills atl_image_limits_t:
 *   - Anthropic: base64 <= 5,242,880 bytes; sides <= 8000 px, or <= 2000
 *     px when a request carries more than 20 images (it recommends <= 1568
 *     px, above which it scales the image itself).
 *   - OpenAI: scales an image to fit 2048 x 2048, then its short side to
 *     768 px; pixels beyond that are sent for nothing.
 *   - Gemini: inline data counts against a 20 MB request.
 *
 * atl_image_fit() is a pure function of its arguments: no global state,
 * safe on any thread (it is meant for the daemon's worker pool), and the
 * same input gives the same bytes out. */
#ifndef ATL_IMAGE_FIT_H
#define ATL_IMAGE_FIT_H

#include <stddef.h>
#include <stdint.h>

#include <atelier/error.h>

/* What the image sent must fit. Every field 0 means "no limit". */
typedef struct {
  uint32_t max_side;       /* the longest side, in pixels */
  uint32_t max_short_side; /* the shortest side, in pixels */
  uint64_t max_pixels;     /* width * height */
  size_t max_base64;       /* the encoded file's base64 length, in bytes */
} atl_image_limits_t;

/* The image to send. atl_image_fit() fills it; atl_image_fit_free()
 * releases what it owns. */
typedef struct {
  const char *mime;    /* "image/png" or "image/jpeg": a static string,
                          never freed */
  unsigned char *data; /* the file to send (PNG or JPEG bytes): owned by
                          this struct, malloc()ed, released by
                          atl_image_fit_free() */
  size_t len;          /* bytes in data */
  uint32_t width;      /* the size of what is sent */
  uint32_t height;
  uint32_t orig_width; /* the size of the input */
  uint32_t orig_height;
  int quality; /* the JPEG quality used, 0 for PNG */
  int changed; /* 0: data is a byte-for-byte copy of the input */
} atl_image_fit_t;

/* The base64 length of n bytes (padded, no line breaks). */
static inline size_t atl_base64_len(size_t n) {
  return (n + 2) / 3 * 4;
}

/* Fits the PNG or JPEG file data (len bytes, borrowed: read during the
 * call only) to lim (borrowed) and fills *out, which the caller owns and
 * releases with atl_image_fit_free() (after a failure too: *out is then
 * empty, and freeing it is harmless).
 *
 * The file's own signature says whether it is PNG or JPEG; a caller's
 * MIME type, which may be wrong (a ".jpg" that is a PNG), is not needed.
 * If the header's size already fits lim and the file's base64 length does
 * too, *out holds a copy of the input (changed = 0), which is not decoded
 * at all. Otherwise the image is decoded, scaled down keeping its aspect
 * ratio and re-encoded, as image_fit.c describes (rounding, quality
 * steps, the smallest size tried).
 *
 * Returns 0, or
 *   ATL_EINVAL  data is not a PNG or JPEG this can read: another format,
 *               corrupt or truncated (when it had to be decoded), a side
 *               over 65535 px or more than 100 million pixels (refused
 *               from the header, before anything is allocated for the
 *               pixels); or data, lim or out is NULL;
 *   ATL_ENOMEM  out of memory;
 *   ATL_E2BIG   max_base64 cannot be met even as a JPEG of quality 60 at
 *               the smallest size tried (64 px on the long side, or the
 *               size the other limits ask for if that is smaller). */
int atl_image_fit(const void *data, size_t len, const atl_image_limits_t *lim,
                  atl_image_fit_t *out);

/* Releases what f owns and empties it; f itself is the caller's. NULL and
 * an empty f are fine. */
void atl_image_fit_free(atl_image_fit_t *f);

/* A sentence telling the model what was done to its image, e.g.
 * "[The image was scaled from 3000x1000 to 1568x523 px and sent as JPEG
 * (quality 80) to fit the model provider's limits.]", written into buf
 * (cap bytes, NUL-terminated, cut short if it does not fit); "" when the
 * model would see no difference (f->changed is 0, or the same pixels were
 * only compressed harder as PNG). Returns the sentence's full length, as
 * snprintf() does. */
int atl_image_fit_note(const atl_image_fit_t *f, char *buf, size_t cap);

#endif
