/* The root-mean-square error of linear PFM images against a reference,
 * over every pixel and channel, as bench/run-render-quality.sh reports it
 * for atelier-render and Cycles alike.
 *
 *   bench/pfm-rmse REFERENCE.pfm IMAGE.pfm...
 *
 * Prints one line per image: its RMSE, and its path. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: pfm-rmse REFERENCE.pfm IMAGE.pfm...\n");
    return 2;
  }
  float *ref;
  int w, h;
  int e = atl_render_read_pfm(argv[1], &ref, &w, &h);
  if (e < 0) {
    fprintf(stderr, "pfm-rmse: %s: %s\n", argv[1], strerror(-e));
    return 1;
  }
  int status = 0;
  for (int a = 2; a < argc; a++) {
    float *img;
    int iw, ih;
    e = atl_render_read_pfm(argv[a], &img, &iw, &ih);
    if (e < 0 || iw != w || ih != h) {
      fprintf(stderr, "pfm-rmse: %s: %s\n", argv[a],
              e < 0 ? strerror(-e) : "not the reference's size");
      status = 1;
      if (e == 0)
        free(img);
      continue;
    }
    double sq = 0;
    size_t n = (size_t)w * (size_t)h * 3;
    for (size_t i = 0; i < n; i++) {
      double d = (double)img[i] - (double)ref[i];
      sq += d * d;
    }
    printf("%.5f %s\n", sqrt(sq / (double)n), argv[a]);
    free(img);
  }
  free(ref);
  return status;
}
