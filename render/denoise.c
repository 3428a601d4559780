/* PLACEHOLDER while the denoiser is written (issue 20): copies the
 * image. Replaced by the a-trous filter before it lands. */
#include <errno.h>
#include <string.h>

#include "denoise.h"

int atl_render_denoise(const float *rgb, const float *albedo,
                       const float *normal, const float *variance, int w, int h,
                       float *out) {
  (void)albedo, (void)normal, (void)variance;
  if (w <= 0 || h <= 0 || w > 65536 || h > 65536)
    return -EINVAL;
  memcpy(out, rgb, (size_t)w * (size_t)h * 3 * sizeof(float));
  return 0;
}
