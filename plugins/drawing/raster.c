/* The canvas drawn with cairo, and written as SVG (raster.h). */
#include "raster.h"

#include <cairo.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <png.h>
#include <zlib.h>

#include "png_encode.h"

/* ---- cairo ---- */

static void cr_move(void *u, double x, double y) {
  cairo_move_to(u, x, y);
}

static void cr_line(void *u, double x, double y) {
  cairo_line_to(u, x, y);
}

static void cr_curve(void *u, double x1, double y1, double x2, double y2,
                     double x, double y) {
  cairo_curve_to(u, x1, y1, x2, y2, x, y);
}

static void cr_close(void *u) {
  cairo_close_path(u);
}

static const dp_sink_t cairo_sink = {cr_move, cr_line, cr_curve, cr_close};

typedef struct {
  cairo_t *cr;
  cv_ink_t ink;
} draw_t;

static void draw_part(void *u, const cv_part_t *part) {
  draw_t *d = u;
  cairo_new_path(d->cr);
  dp_walk(part->path, &cairo_sink, d->cr);
  cairo_set_source_rgba(d->cr, d->ink.r, d->ink.g, d->ink.b,
                        d->ink.a * part->opacity);
  cairo_set_line_width(d->cr, part->width);
  cairo_stroke(d->cr);
}

struct cv_raster_s {
  cv_view_t view;
  int w, h;
  cairo_surface_t *sf;
  cairo_t *cr;
  dp_path_t path; /* scratch */
};

cv_raster_t *cv_raster_new(const cv_view_t *view) {
  cv_raster_t *r = calloc(1, sizeof(*r));
  if (r == NULL)
    return NULL;
  r->view = *view;
  r->w = view->width > 0 ? view->width : CV_WIDTH;
  r->h = view->height > 0 ? view->height : CV_HEIGHT;
  r->sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, r->w, r->h);
  if (cairo_surface_status(r->sf) != CAIRO_STATUS_SUCCESS) {
    cairo_surface_destroy(r->sf);
    free(r);
    return NULL;
  }
  cairo_t *cr = r->cr = cairo_create(r->sf);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_scale(cr, (double)r->w / CV_WIDTH, (double)r->h / CV_HEIGHT);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  /* A quarter of a pixel: invisible at 800 × 600, and curves flatten into
   * fewer segments than at cairo's default tenth. */
  cairo_set_tolerance(cr, 0.25);
  return r;
}

void cv_raster_free(cv_raster_t *r) {
  if (r == NULL)
    return;
  cairo_destroy(r->cr);
  cairo_surface_destroy(r->sf);
  dp_path_free(&r->path);
  free(r);
}

/* How far a stroke's ink reaches past its path, in canvas units: half
 * its widest part, its bristles' offsets and noise, and a pixel of
 * anti-aliasing. */
static double reach(const cv_stroke_t *s, cv_mode_t mode) {
  cv_ink_t ink;
  cv_stroke_ink(s, mode, 0, &ink);
  double w = ink.width;
  if (mode == CV_PAINT && s->brush >= 0) {
    const cv_brush_t *b = &cv_brushes[s->brush];
    w *= 1 + b->spread + b->noise;
  }
  return w / 2 + 2;
}

/* Draws strokes[from .. to) on cr; with a band (y0 < y1, device rows),
 * only those whose ink can reach it. */
static int draw_range(cairo_t *cr, const cv_view_t *view, double sy,
                      json_object *strokes, size_t from, size_t to, int y0,
                      int y1, dp_path_t *path, size_t *skipped) {
  int rc = 0;
  for (size_t i = from; i < to && rc == 0; i++) {
    cv_stroke_t s;
    dp_error_t pe;
    json_object *o = json_object_array_get_idx(strokes, i);
    dp_path_clear(path);
    if (!json_object_is_type(o, json_type_string) ||
        cv_stroke_unpack(json_object_get_string(o), &s) != 0) {
      if (skipped)
        (*skipped)++;
      continue;
    }
    if (dp_parse(s.d, strlen(s.d), path, &pe) != 0) {
      if (skipped)
        (*skipped)++;
      cv_stroke_clear(&s);
      continue;
    }
    dp_box_t box;
    if (y0 < y1 && dp_bounds(path, &box) == 0) {
      double m = reach(&s, view->mode);
      if ((box.y1 + m) * sy < y0 || (box.y0 - m) * sy > y1) {
        cv_stroke_clear(&s);
        continue;
      }
    }
    draw_t d = {.cr = cr};
    cv_stroke_ink(&s, view->mode, view->highlight_human, &d.ink);
    if (cv_stroke_parts(&s, path, view->mode, draw_part, &d) != 0)
      rc = -ENOMEM;
    cv_stroke_clear(&s);
  }
  return rc;
}

/* Strokes drawn and the canvas encoded in horizontal bands, the bands
 * shared out among the threads. Each band is a cairo surface of its own
 * over the raster's rows, so no two threads touch one cairo object, and
 * every pixel still gets its strokes in order. A stroke cut by a band's
 * edge may differ there by one level in a few pixels from the same stroke
 * drawn in one piece (cairo rounds the coverage of a clipped polygon a
 * little differently), so the bands are always the same four, whatever
 * the number of cores and however the strokes arrived: the picture, and
 * so its PNG and image id, depend on the strokes alone (for the same
 * builds of cairo, pixman and zlib).
 *
 * A thread that has drawn a band compresses it too, as a raw deflate
 * segment of the PNG's scanlines ended on a byte boundary (Z_FULL_FLUSH),
 * and the segments are joined into one zlib stream, as pigz does:
 * encoding, which costs as much as drawing a thousand strokes, runs on
 * every core instead of one. */
#define BANDS 4
#define MAX_THREADS BANDS

typedef struct {
  unsigned char *z; /* raw deflate data, len of cap bytes */
  size_t len, cap;
  unsigned long adler; /* of the band's scanlines */
  size_t raw;          /* their length */
} seg_t;

typedef struct {
  cv_raster_t *r;
  json_object *strokes;
  size_t from, to;
  int threads;
  int encode;
  seg_t seg[BANDS];
  atomic_int next;
  atomic_int rc;
} bands_t;

/* Rows [y0, y1) of r as PNG scanlines compressed at zlib level 1 into s.
 * No row filter (filter byte 0): a drawing is flat colour on white, where
 * filters cost time and bytes; on a canvas of 1,000 pen strokes, 10 ms
 * for 230 kB this way against 19 ms for 390 kB with Paeth at level 3,
 * the render farm's setting for noisy renders. */
static int deflate_band(const cv_raster_t *r, int y0, int y1, int last,
                        seg_t *s) {
  z_stream zs;
  memset(&zs, 0, sizeof(zs));
  if (deflateInit2(&zs, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return -ENOMEM;
  size_t row_len = 1 + (size_t)r->w * 3;
  s->raw = row_len * (size_t)(y1 - y0);
  s->cap = deflateBound(&zs, s->raw) + 64;
  s->z = malloc(s->cap);
  uint8_t *row = malloc(row_len);
  s->adler = adler32(0L, Z_NULL, 0);
  int rc = s->z && row ? 0 : -ENOMEM;
  const uint8_t *px = cairo_image_surface_get_data(r->sf);
  int stride = cairo_image_surface_get_stride(r->sf);
  for (int y = y0; y < y1 && rc == 0; y++) {
    const uint32_t *in = (const uint32_t *)(px + (size_t)y * (size_t)stride);
    row[0] = 0;
    for (int x = 0; x < r->w; x++) {
      uint32_t v = in[x];
      row[1 + 3 * x] = (uint8_t)(v >> 16);
      row[2 + 3 * x] = (uint8_t)(v >> 8);
      row[3 + 3 * x] = (uint8_t)v;
    }
    s->adler = adler32(s->adler, row, (uInt)row_len);
    zs.next_in = row;
    zs.avail_in = (uInt)row_len;
    int flush = y < y1 - 1 ? Z_NO_FLUSH : last ? Z_FINISH : Z_FULL_FLUSH;
    for (;;) {
      if (s->cap - s->len < 64) {
        unsigned char *nz = realloc(s->z, s->cap * 2);
        if (nz == NULL) {
          rc = -ENOMEM;
          break;
        }
        s->z = nz;
        s->cap *= 2;
      }
      zs.next_out = s->z + s->len;
      zs.avail_out = (uInt)(s->cap - s->len);
      int zr = deflate(&zs, flush);
      s->len = s->cap - zs.avail_out;
      if (zr == Z_STREAM_ERROR) {
        rc = -ENOMEM;
        break;
      }
      if (flush == Z_FINISH ? zr == Z_STREAM_END
                            : zs.avail_in == 0 && zs.avail_out != 0)
        break;
    }
  }
  deflateEnd(&zs);
  free(row);
  return rc;
}

static void *band_worker(void *arg) {
  bands_t *b = arg;
  cv_raster_t *r = b->r;
  unsigned char *px = cairo_image_surface_get_data(r->sf);
  int stride = cairo_image_surface_get_stride(r->sf);
  int band_h = (r->h + BANDS - 1) / BANDS;
  dp_path_t path = {0};
  int k;
  while ((k = atomic_fetch_add(&b->next, 1)) < BANDS) {
    int y0 = k * band_h, y1 = y0 + band_h > r->h ? r->h : y0 + band_h;
    if (y0 >= y1)
      continue;
    if (b->from < b->to) {
      cairo_surface_t *sf = cairo_image_surface_create_for_data(
          px + (size_t)y0 * (size_t)stride, CAIRO_FORMAT_RGB24, r->w, y1 - y0,
          stride);
      cairo_t *cr = cairo_create(sf);
      cairo_translate(cr, 0, -y0);
      double sy = (double)r->h / CV_HEIGHT;
      cairo_scale(cr, (double)r->w / CV_WIDTH, sy);
      cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
      cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
      cairo_set_tolerance(cr, 0.25);
      int rc = draw_range(cr, &r->view, sy, b->strokes, b->from, b->to, y0, y1,
                          &path, NULL);
      if (rc != 0 || cairo_status(cr) != CAIRO_STATUS_SUCCESS)
        atomic_store(&b->rc, rc ? rc : -ENOMEM);
      cairo_destroy(cr);
      cairo_surface_finish(sf);
      cairo_surface_destroy(sf);
    }
    if (b->encode) {
      int rc = deflate_band(r, y0, y1, y1 == r->h, &b->seg[k]);
      if (rc != 0)
        atomic_store(&b->rc, rc);
    }
  }
  dp_path_free(&path);
  return NULL;
}

/* Runs b on b->threads threads, this one included. */
static int run_bands(bands_t *b) {
  cv_raster_t *r = b->r;
  cairo_surface_flush(r->sf);
  atomic_init(&b->next, 0);
  atomic_init(&b->rc, 0);
  pthread_t tid[MAX_THREADS];
  int started = 0;
  for (int t = 1; t < b->threads; t++)
    if (pthread_create(&tid[started], NULL, band_worker, b) == 0)
      started++;
  band_worker(b);
  for (int t = 0; t < started; t++)
    pthread_join(tid[t], NULL);
  cairo_surface_mark_dirty(r->sf);
  return atomic_load(&b->rc);
}

static int n_threads(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > MAX_THREADS ? MAX_THREADS : cpus < 1 ? 1 : (int)cpus;
}

int cv_raster_draw(cv_raster_t *r, json_object *strokes, size_t from,
                   size_t *skipped) {
  size_t n = strokes ? json_object_array_length(strokes) : 0;
  if (from >= n)
    return 0;
  if (skipped != NULL) /* counted once a stroke: in one piece */
    return draw_range(r->cr, &r->view, (double)r->h / CV_HEIGHT, strokes, from,
                      n, 0, 0, &r->path, skipped);
  bands_t b = {.r = r, .strokes = strokes, .from = from, .to = n};
  b.threads = n_threads();
  return run_bands(&b);
}

int cv_raster_update(cv_raster_t *r, json_object *strokes, size_t from,
                     void **png, size_t *len) {
  *png = NULL;
  *len = 0;
  size_t n = strokes ? json_object_array_length(strokes) : 0;
  bands_t b = {
      .r = r, .strokes = strokes, .from = from < n ? from : n, .to = n};
  b.threads = n_threads();
  b.encode = 1;
  int rc = run_bands(&b);
  /* The zlib stream: its header (deflate, 32 KiB window, level 1, so
   * 0x78 0x01), the segments, and the Adler-32 of all the scanlines,
   * big-endian. */
  size_t total = 2 + 4;
  for (int k = 0; k < BANDS; k++)
    total += b.seg[k].len;
  unsigned char *z = rc == 0 ? malloc(total) : NULL;
  if (z != NULL) {
    z[0] = 0x78;
    z[1] = 0x01;
    size_t off = 2;
    unsigned long adler = adler32(0L, Z_NULL, 0);
    for (int k = 0; k < BANDS; k++) {
      if (b.seg[k].raw == 0) /* an empty band (a canvas under 4 rows) */
        continue;
      memcpy(z + off, b.seg[k].z, b.seg[k].len);
      off += b.seg[k].len;
      adler = adler32_combine(adler, b.seg[k].adler, (z_off_t)b.seg[k].raw);
    }
    for (int i = 0; i < 4; i++)
      z[off + (size_t)i] = (unsigned char)(adler >> (24 - 8 * i));
    rc = atl_png_wrap_zlib(z, total, r->w, r->h, png, len);
  } else if (rc == 0) {
    rc = -ENOMEM;
  }
  free(z);
  for (int k = 0; k < BANDS; k++)
    free(b.seg[k].z);
  return rc;
}

int cv_raster_load_png(cv_raster_t *r, const void *png, size_t len) {
  png_image im;
  memset(&im, 0, sizeof(im));
  im.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&im, png, len))
    return -EINVAL;
  if ((int)im.width != r->w || (int)im.height != r->h) {
    png_image_free(&im);
    return -EINVAL;
  }
  /* cairo's RGB24 is a native-endian 0xXXRRGGBB word a pixel. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  im.format = PNG_FORMAT_BGRA;
#else
  im.format = PNG_FORMAT_ARGB;
#endif
  cairo_surface_flush(r->sf);
  unsigned char *px = cairo_image_surface_get_data(r->sf);
  int stride = cairo_image_surface_get_stride(r->sf);
  /* libpng's simplified API reads straight into the surface and only
   * warns of a bad Adler-32: an image that failed or warned is no canvas,
   * and what it left is painted over. */
  int ok = png_image_finish_read(&im, NULL, px, stride, NULL) &&
           im.warning_or_error == 0;
  cairo_surface_mark_dirty(r->sf);
  png_image_free(&im);
  if (!ok) {
    cairo_save(r->cr);
    cairo_identity_matrix(r->cr);
    cairo_set_source_rgb(r->cr, 1, 1, 1);
    cairo_paint(r->cr);
    cairo_restore(r->cr);
    cairo_surface_flush(r->sf);
  }
  return ok ? 0 : -EINVAL;
}

uint8_t *cv_raster_rgb_of(const cv_raster_t *r) {
  cairo_surface_flush(r->sf);
  uint8_t *out = malloc((size_t)r->w * (size_t)r->h * 3);
  if (out == NULL)
    return NULL;
  const uint8_t *px = cairo_image_surface_get_data(r->sf);
  int stride = cairo_image_surface_get_stride(r->sf);
  for (int y = 0; y < r->h; y++) {
    const uint32_t *row = (const uint32_t *)(px + (size_t)y * (size_t)stride);
    uint8_t *o = out + (size_t)y * (size_t)r->w * 3;
    for (int x = 0; x < r->w; x++) {
      uint32_t v = row[x];
      o[3 * x] = (uint8_t)(v >> 16);
      o[3 * x + 1] = (uint8_t)(v >> 8);
      o[3 * x + 2] = (uint8_t)v;
    }
  }
  return out;
}

int cv_raster_encode(cv_raster_t *r, void **png, size_t *len) {
  return cv_raster_update(r, NULL, 0, png, len);
}

int cv_raster_rgb(json_object *strokes, const cv_view_t *view, uint8_t **rgb,
                  size_t *skipped) {
  if (skipped)
    *skipped = 0;
  cv_raster_t *r = cv_raster_new(view);
  if (r == NULL)
    return -ENOMEM;
  int rc = cv_raster_draw(r, strokes, 0, skipped);
  *rgb = rc == 0 ? cv_raster_rgb_of(r) : NULL;
  cv_raster_free(r);
  return rc == 0 && *rgb == NULL ? -ENOMEM : rc;
}

int cv_raster_png(json_object *strokes, const cv_view_t *view, void **png,
                  size_t *len) {
  cv_raster_t *r = cv_raster_new(view);
  if (r == NULL)
    return -ENOMEM;
  int rc = cv_raster_draw(r, strokes, 0, NULL);
  if (rc == 0)
    rc = cv_raster_encode(r, png, len);
  cv_raster_free(r);
  return rc;
}

/* ---- SVG ---- */

typedef struct {
  FILE *f;
  const char *hex;
  double alpha;
} svg_t;

static void svg_part(void *u, const cv_part_t *part) {
  svg_t *s = u;
  char *d = dp_format(part->path);
  if (d == NULL)
    return;
  fprintf(s->f,
          "<path d=\"%s\" stroke=\"%s\" stroke-width=\"%.4g\" "
          "stroke-opacity=\"%.4g\"/>\n",
          d, s->hex, part->width, s->alpha * part->opacity);
  free(d);
}

/* XML text: the title is the model's or the user's. */
static void xml_text(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '&':
      fputs("&amp;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    default:
      if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t')
        fputc(*s, f);
    }
  }
}

char *cv_svg(json_object *strokes, cv_mode_t mode, const char *title) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
          "height=\"%d\" viewBox=\"0 0 %d %d\">\n",
          CV_WIDTH, CV_HEIGHT, CV_WIDTH, CV_HEIGHT);
  if (title && *title) {
    fputs("<title>", f);
    xml_text(f, title);
    fputs("</title>\n", f);
  }
  fprintf(f,
          "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n<g "
          "fill=\"none\" stroke-linecap=\"round\" "
          "stroke-linejoin=\"round\">\n",
          CV_WIDTH, CV_HEIGHT);
  dp_path_t path = {0};
  size_t n = strokes ? json_object_array_length(strokes) : 0;
  for (size_t i = 0; i < n; i++) {
    cv_stroke_t s;
    dp_error_t pe;
    json_object *o = json_object_array_get_idx(strokes, i);
    dp_path_clear(&path);
    if (!json_object_is_type(o, json_type_string) ||
        cv_stroke_unpack(json_object_get_string(o), &s) != 0)
      continue;
    if (dp_parse(s.d, strlen(s.d), &path, &pe) == 0) {
      cv_ink_t ink;
      cv_stroke_ink(&s, mode, 0, &ink);
      char hex[8];
      snprintf(hex, sizeof(hex), "#%02x%02x%02x", (unsigned)(ink.r * 255 + 0.5),
               (unsigned)(ink.g * 255 + 0.5), (unsigned)(ink.b * 255 + 0.5));
      svg_t sv = {f, hex, ink.a};
      cv_stroke_parts(&s, &path, mode, svg_part, &sv);
    }
    cv_stroke_clear(&s);
  }
  dp_path_free(&path);
  fputs("</g>\n</svg>\n", f);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
