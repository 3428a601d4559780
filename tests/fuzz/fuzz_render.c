/* Fuzz target: the path tracer's scene loader, and a few samples of what
 * it accepts. A scene reaches the tracer from a session's document, from
 * import_scene and from any file given to atelier-render, so the loader
 * must refuse anything malformed with a message, and anything it accepts
 * must render without a crash, a hang or a non-finite pixel.
 *
 * Each input is one JSON document. An accepted scene is rendered on an
 * 8 x 6 frame with 2 samples per pixel and depth 6, and every sum must be
 * finite and non-negative (the tracer drops a non-finite sample, so one
 * here is a finding). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(why)                                                              \
  do {                                                                         \
    fprintf(stderr, "fuzz_render: %s (line %d)\n", why, __LINE__);             \
    abort();                                                                   \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  atl_render_scene_t *s = NULL;
  char *err = NULL;
  int rc = atl_render_scene_load((const char *)data, size, &s, &err);
  if (rc != 0) {
    if (s != NULL)
      FAIL("a refused scene was returned");
    if (err == NULL || err[0] == '\0')
      FAIL("a refused scene without a message");
    free(err);
    return 0;
  }
  free(err);
  if (s == NULL)
    FAIL("an accepted scene is NULL");
  atl_render_scene_info_t info;
  atl_render_scene_info(s, &info);
  if (info.shape_count < 0 || info.light_count < 0 || info.primitive_count < 0)
    FAIL("negative counts");
  enum { W = 8, H = 6 };
  float sum[W * H * 3] = {0};
  uint32_t count[W * H] = {0};
  atl_render_params_t p = {
      .width = W, .height = H, .max_depth = 6, .seed = (uint64_t)size};
  atl_render_tile_samples(s, &p, 0, 0, W, H, 0, 2, sum, count);
  for (int i = 0; i < W * H; i++) {
    if (count[i] != 2)
      FAIL("a pixel without its samples");
    for (int c = 0; c < 3; c++)
      if (!isfinite(sum[i * 3 + c]) || sum[i * 3 + c] < 0)
        FAIL("a non-finite or negative pixel");
  }
  atl_render_scene_free(s);
  return 0;
}
