/* The pixel filter's sampler, internal to the path tracer (the names and
 * the checks callers use are in render.h). A camera sample's offset from
 * its pixel's centre is drawn from the filter itself, in x and in y
 * alike: every filter here is the product of two 1D ones. */
#ifndef ATL_RENDER_FILTER_H
#define ATL_RENDER_FILTER_H

/* The inverse of the 1D filter's cumulative distribution at u = i /
 * RT_FILTER_N, i = 0 .. RT_FILTER_N, in pixels from the centre; between
 * two entries it is interpolated linearly. */
#define RT_FILTER_N 1024

typedef struct {
  int filter;   /* atl_render_filter_t */
  double width; /* in pixels, the default resolved */
  /* 1: the box of width 1, whose offsets are the jitter itself minus
   * one half, so that such renders stay what they were before there
   * were filters. */
  int unit_box;
  double inv_cdf[RT_FILTER_N + 1];
} rt_filter;

/* The filter of p (its filter and filter_width), built on first use and
 * kept per thread while the next tiles ask for the same one. A filter or
 * width that atl_render_filter_check() refuses falls back to the box and
 * to the default width, so that a render never fails on it. The table
 * stays the thread's: it is valid until the thread's next call. */
const rt_filter *atl__rt_filter_get(int filter, double width);

/* The offset, in pixels from the pixel's centre, for a number u in
 * [0, 1). */
static inline double rt_filter_offset(const rt_filter *f, double u) {
  if (f->unit_box || f->filter == 0)
    return (u - 0.5) * f->width;
  double s = u * RT_FILTER_N;
  int i = (int)s;
  if (i >= RT_FILTER_N) /* only for u = 1, which rand4x2() never gives */
    i = RT_FILTER_N - 1;
  return f->inv_cdf[i] + (f->inv_cdf[i + 1] - f->inv_cdf[i]) * (s - i);
}

#endif
