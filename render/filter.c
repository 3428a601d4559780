/* The pixel filters: their names and checks (render.h) and the tables
 * that sample a camera ray's offset from them (filter.h). Widths mean
 * what Cycles' "filter_width" means, so that a scene set up for Cycles
 * and the Cycles reference images are reconstructed alike: the box
 * covers +-width/2, the Gaussian has sigma = width/4, and the
 * Blackman-Harris window spans +-width. The Gaussian is cut at 3 sigma,
 * where Cycles goes on to 6: the 0.27 % of its mass beyond would fill
 * the table's last entries with long, straight tails, and their
 * offsets, up to 2.25 pixels away, are the noisiest. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "filter.h"
#include "render.h"

static const char *const names[] = {"box", "gaussian", "blackman-harris"};
#define NFILTERS ((int)(sizeof(names) / sizeof(names[0])))

int atl_render_filter_parse(const char *name, int *filter) {
  if (name == NULL)
    return -EINVAL;
  for (int i = 0; i < NFILTERS; i++)
    if (strcmp(name, names[i]) == 0) {
      *filter = i;
      return 0;
    }
  /* The underscore spelling, as an enum or a Blender setting writes it. */
  if (strcmp(name, "blackman_harris") == 0) {
    *filter = ATL_RENDER_FILTER_BLACKMAN_HARRIS;
    return 0;
  }
  return -EINVAL;
}

const char *atl_render_filter_name(int filter) {
  return filter >= 0 && filter < NFILTERS ? names[filter] : NULL;
}

double atl_render_filter_width(int filter, double width) {
  if (width > 0)
    return width;
  return filter == ATL_RENDER_FILTER_BOX ? 1.0 : 1.5;
}

int atl_render_filter_check(int filter, double width, char *msg, size_t len) {
  char buf[160];
  if (atl_render_filter_name(filter) == NULL)
    snprintf(buf, sizeof(buf),
             "unknown pixel filter %d: use box, gaussian or blackman-harris",
             filter);
  else if (!isfinite(width) || width < 0 ||
           (width > 0 && (width < ATL_RENDER_FILTER_WIDTH_MIN ||
                          width > ATL_RENDER_FILTER_WIDTH_MAX)))
    snprintf(buf, sizeof(buf),
             "filter width %g is out of range: it must be between %g and %g "
             "pixels, or 0 for the filter's default",
             width, ATL_RENDER_FILTER_WIDTH_MIN, ATL_RENDER_FILTER_WIDTH_MAX);
  else
    return 0;
  if (msg != NULL && len > 0)
    snprintf(msg, len, "%s", buf);
  return -EINVAL;
}

/* The 1D filter at x pixels from the centre, within its support. */
static double shape(int filter, double w, double x) {
  if (filter == ATL_RENDER_FILTER_GAUSSIAN) /* sigma = w / 4 */
    return exp(-8 * x * x / (w * w));
  /* Blackman-Harris over [-w, w]: the phase runs from 0 to 2 pi. */
  double v = 2 * M_PI * (x / (2 * w) + 0.5);
  double f =
      0.35875 - 0.48829 * cos(v) + 0.14128 * cos(2 * v) - 0.01168 * cos(3 * v);
  return f > 0 ? f : 0;
}

/* The filter's support is cut into FINE cells, each taking the filter's
 * value at its middle; their running sum is the cumulative distribution,
 * linear within a cell, which the table inverts exactly. With 16 cells
 * per table entry the piecewise constant density is far finer than any
 * histogram a test (or an image) can resolve. */
#define FINE (RT_FILTER_N * 16)

static void build(rt_filter *f) {
  double r =
      f->filter == ATL_RENDER_FILTER_GAUSSIAN ? 0.75 * f->width : f->width;
  double dx = 2 * r / FINE, total = 0, sum = 0;
  /* Two passes over the cells, the first for the total, rather than a
   * table of FINE sums, which would not fit a small thread stack. */
  for (int k = 0; k < FINE; k++)
    total += shape(f->filter, f->width, -r + (k + 0.5) * dx);
  int k = 0;
  double cell = shape(f->filter, f->width, -r + 0.5 * dx);
  for (int i = 0; i <= RT_FILTER_N; i++) {
    double t = total * i / RT_FILTER_N;
    while (k < FINE - 1 && sum + cell <= t) {
      sum += cell;
      k++;
      cell = shape(f->filter, f->width, -r + (k + 0.5) * dx);
    }
    double frac = cell > 0 ? (t - sum) / cell : 0;
    frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
    f->inv_cdf[i] = -r + (k + frac) * dx;
  }
  /* The ends exactly, and the table symmetric like the filter, so that
   * the mean offset is 0 to the last bit. */
  for (int i = 0; i <= RT_FILTER_N / 2; i++) {
    double a = 0.5 * (f->inv_cdf[i] - f->inv_cdf[RT_FILTER_N - i]);
    f->inv_cdf[i] = a, f->inv_cdf[RT_FILTER_N - i] = -a;
  }
}

const rt_filter *atl__rt_filter_get(int filter, double width) {
  /* A tile is a few milliseconds of paths and the table takes tens of
   * microseconds to build, so each thread keeps the last one. */
  static _Thread_local rt_filter cache;
  static _Thread_local int cached;
  if (atl_render_filter_check(filter, width, NULL, 0) != 0)
    filter = ATL_RENDER_FILTER_BOX, width = 0;
  width = atl_render_filter_width(filter, width);
  if (cached && cache.filter == filter && cache.width == width)
    return &cache;
  cache.filter = filter;
  cache.width = width;
  cache.unit_box = filter == ATL_RENDER_FILTER_BOX && width == 1;
  if (filter != ATL_RENDER_FILTER_BOX)
    build(&cache);
  cached = 1;
  return &cache;
}
