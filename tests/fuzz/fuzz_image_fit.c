/* Fuzz target: an image a tool returns, fitted to a provider's limits.
 * The first two bytes choose the limits, small so that every input is
 * decoded and scaled, and the base64 loop runs:
 *   byte 0: max_side = 4 + 4 * (bits 0-5), 4..256 px; bit 6: max_pixels
 *           4096; bit 7: max_short_side 24;
 *   byte 1: max_base64 = 256 * byte (0: none).
 * The rest is the file. Whatever the bytes: no crash, no leak, and an
 * answer that keeps the contract: ATL_EINVAL or ATL_E2BIG with nothing
 * owned, or an image within every limit that libpng or libjpeg decodes
 * to the size reported (tests/unit/image_samples.c, apart from the code
 * under test). tests/fuzz/gen_image_seeds writes the seed corpus. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image_fit.h"
#include "image_samples.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const atl_image_fit_t *f, const atl_image_limits_t *lim,
                  const uint8_t *in, size_t len) {
  uint32_t l = f->width > f->height ? f->width : f->height;
  uint32_t s = f->width > f->height ? f->height : f->width;
  if (f->data == NULL || f->len == 0 || f->mime == NULL || s == 0)
    abort();
  if ((lim->max_side && l > lim->max_side) ||
      (lim->max_short_side && s > lim->max_short_side) ||
      (lim->max_pixels && (uint64_t)l * s > lim->max_pixels) ||
      (lim->max_base64 && atl_base64_len(f->len) > lim->max_base64))
    abort(); /* over a limit */
  if (!f->changed) {
    if (f->len != len || memcmp(f->data, in, len) != 0)
      abort(); /* "unchanged" but not a copy */
    return;
  }
  if (f->width > f->orig_width || f->height > f->orig_height)
    abort(); /* scaled up */
  uint32_t w = 0, h = 0;
  int ch = 0;
  unsigned char *px = strcmp(f->mime, "image/png") == 0
                          ? img_png_read(f->data, f->len, &w, &h, &ch)
                          : img_jpeg_read(f->data, f->len, &w, &h, &ch);
  if (px == NULL || w != f->width || h != f->height)
    abort(); /* the output does not decode, or not to its size */
  free(px);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  atl_image_limits_t lim = {0};
  lim.max_side = 4 + 4 * (uint32_t)(data[0] & 0x3f);
  lim.max_pixels = data[0] & 0x40 ? 4096 : 0;
  lim.max_short_side = data[0] & 0x80 ? 24 : 0;
  lim.max_base64 = (size_t)data[1] * 256;
  atl_image_fit_t f;
  int rc = atl_image_fit(data + 2, size - 2, &lim, &f);
  if (rc == 0)
    check(&f, &lim, data + 2, size - 2);
  else if ((rc != ATL_EINVAL && rc != ATL_E2BIG && rc != ATL_ENOMEM) ||
           f.data != NULL)
    abort();
  atl_image_fit_free(&f);
  return 0;
}
