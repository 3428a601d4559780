/* The drawing plugin's core figures on one thread (bench/README.md,
 * drawing): the SVG path parser's throughput, and the canvas of 10,000
 * mixed paths drawn and encoded as view_canvas does it, from nothing (no
 * cached raster). It also writes the same canvas for the peers that
 * bench/run-drawing.sh times: an SVG file for rsvg-convert and the paths
 * as polylines in JSON for Pillow's ImageDraw.
 *
 *   bench/drawing-core [ROUNDS] [OUT_DIR]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchlib.h"
#include "canvas.h"
#include "dpath.h"
#include "raster.h"

static uint64_t seed = 0x1234567u;
static double rnd(void) {
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(seed >> 11) / 9007199254740992.0;
}
/* Where the next path's points fall: anywhere on the canvas (spread 1),
 * or near a centre picked for the path (a drawing's strokes are mostly
 * short: hatching, petals, spiral segments). */
static double cx = 400, cy = 300, spread = 1;
static double rx(void) {
  return spread >= 1 ? 20 + rnd() * 760 : cx + (rnd() - 0.5) * 760 * spread;
}
static double ry(void) {
  return spread >= 1 ? 20 + rnd() * 560 : cy + (rnd() - 0.5) * 560 * spread;
}

/* One path's data in a form models write: absolute and relative, curves,
 * arcs, commas and exponents now and then. */
static void path_text(FILE *f, int k) {
  switch (k % 5) {
  case 0:
    fprintf(f, "M %.2f %.2f L %.2f %.2f", rx(), ry(), rx(), ry());
    break;
  case 1:
    fprintf(f, "M%.1f,%.1f", rx(), ry());
    for (int i = 0; i < 7; i++)
      fprintf(f, " l%.2f,%.2f", rnd() * 40 - 20, rnd() * 40 - 20);
    break;
  case 2:
    fprintf(f, "M %.3f %.3f Q %.3f %.3f %.3f %.3f T %.3f %.3f", rx(), ry(),
            rx(), ry(), rx(), ry(), rx(), ry());
    break;
  case 3:
    fprintf(f, "M%.2f %.2f C%.2f %.2f %.2f %.2f %.2f %.2f s%.1f %.1f %.1f %.1f",
            rx(), ry(), rx(), ry(), rx(), ry(), rx(), ry(), rnd() * 50,
            rnd() * 50, rnd() * 50 - 25, rnd() * 50 - 25);
    break;
  default:
    fprintf(f, "M%.1f %.1fa%.1f %.1f %.0f 0%d%.1f %.1fh-1.5e1v2.5e1z", rx(),
            ry(), 10 + rnd() * 60, 10 + rnd() * 60, rnd() * 90,
            (int)(rnd() * 2), rnd() * 100 - 50, rnd() * 100 - 50);
  }
}

static const char *const COLORS[] = {"#1a1a2e", "#e94560", "#7b68ee",
                                     "#4ecdc4", "#ffd93d", "#ff6b6b",
                                     "#4ade80", "#3b82f6", "#f97316"};

typedef struct {
  FILE *f;
  int first;
} poly_t;

static void poly_point(void *u, double x, double y, int starts) {
  poly_t *p = u;
  if (starts)
    fprintf(p->f, "%s[", p->first ? "" : "],");
  else
    fputc(',', p->f);
  fprintf(p->f, "%.2f,%.2f", x, y);
  p->first = 0;
}

static json_object *canvas(double spread_of) {
  const int n_paths = 10000;
  json_object *strokes = json_object_new_array();
  dp_path_t scratch = {0};
  seed = 42;
  spread = spread_of;
  for (int i = 0; i < n_paths; i++) {
    cx = 60 + rnd() * 680;
    cy = 60 + rnd() * 480;
    char *d = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&d, &len);
    path_text(f, i);
    fclose(f);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "type", json_object_new_string("svg"));
    json_object_object_add(o, "d", json_object_new_string(d));
    json_object_object_add(o, "color", json_object_new_string(COLORS[i % 9]));
    json_object_object_add(o, "stroke_width",
                           json_object_new_double(1 + (i % 12)));
    json_object_object_add(o, "opacity",
                           json_object_new_double(0.3 + 0.7 * rnd()));
    cv_stroke_t s;
    int clipped, styled;
    dp_box_t box;
    char err[256];
    if (cv_path_from_json(o, CV_PAINT, &s, &scratch, &clipped, &box, &styled,
                          err, sizeof(err)) != 0) {
      fprintf(stderr, "drawing-core: path %d: %s\n", i, err);
      return NULL;
    }
    s.id = (uint32_t)i + 1;
    char *packed = cv_stroke_pack(&s);
    json_object_array_add(strokes, json_object_new_string(packed));
    free(packed);
    cv_stroke_clear(&s);
    json_object_put(o);
    free(d);
  }
  dp_path_free(&scratch);
  spread = 1;
  return strokes;
}

static void time_view(json_object *strokes, int rounds, const char *what) {
  double ms[64], draw_ms[64];
  size_t png_len = 0;
  for (int r = 0; r < rounds; r++) {
    /* As view_canvas does it: drawn and encoded together, in bands. */
    cv_view_t view = {CV_PAINT, 1, 0, 0};
    uint64_t t0 = bench_now_ns();
    cv_raster_t *ras = cv_raster_new(&view);
    void *png = NULL;
    cv_raster_update(ras, strokes, 0, &png, &png_len);
    uint64_t t1 = bench_now_ns();
    ms[r] = (double)(t1 - t0) / 1e6;
    free(png);
    cv_raster_free(ras);
    /* The drawing alone, for the split. */
    ras = cv_raster_new(&view);
    t0 = bench_now_ns();
    cv_raster_draw(ras, strokes, 0, NULL);
    draw_ms[r] = (double)(bench_now_ns() - t0) / 1e6;
    cv_raster_free(ras);
  }
  printf("view_canvas, 10,000 %s, paint, 1-12 px, translucent; median of "
         "%d: %.1f ms drawn and encoded (the drawing alone %.1f ms; %zu "
         "bytes)\n",
         what, rounds, bench_median(ms, rounds), bench_median(draw_ms, rounds),
         png_len);
}

/* One draw_paths call's worth of pen strokes, as bench/drawing-daemon.py
 * sends them (plotter mode): lines, 6-point polylines, cubics and
 * quadratics within 60 px of a centre. Appended packed to strokes, with
 * ids from *next_id. */
static void pen_batch(json_object *strokes, uint32_t *next_id) {
  dp_path_t scratch = {0};
  for (int i = 0; i < 1000; i++) {
    double px = 40 + rnd() * 720, py = 40 + rnd() * 520;
    char *d = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&d, &len);
    int n = i % 4 == 1 ? 6 : i % 4 == 0 ? 2 : i % 4 == 2 ? 4 : 3;
    static const char cmd[] = {'L', 'L', 'C', 'Q'};
    for (int k = 0; k < n; k++) {
      fprintf(f, "%s%.2f %.2f",
              k == 0   ? "M "
              : k == 1 ? " "
                       : " ",
              px + (rnd() - 0.5) * 60, py + (rnd() - 0.5) * 60);
      if (k == 0)
        fprintf(f, " %c", cmd[i % 4]);
    }
    fclose(f);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "type", json_object_new_string("svg"));
    json_object_object_add(o, "d", json_object_new_string(d));
    cv_stroke_t st;
    int clipped, styled;
    dp_box_t box;
    char err[256];
    if (cv_path_from_json(o, CV_PLOTTER, &st, &scratch, &clipped, &box, &styled,
                          err, sizeof(err)) != 0) {
      fprintf(stderr, "drawing-core: pen path %d: %s (%s)\n", i, err, d);
      exit(2);
    }
    st.id = (*next_id)++;
    char *packed = cv_stroke_pack(&st);
    json_object_array_add(strokes, json_object_new_string(packed));
    free(packed);
    cv_stroke_clear(&st);
    json_object_put(o);
    free(d);
  }
  dp_path_free(&scratch);
}

/* The plugin's share of a draw_paths of 1,000 pen paths: the new strokes
 * drawn on the session's cached raster and the canvas encoded, as the
 * call does it; and the two halves apart. */
static void time_pen_call(int rounds) {
  double ms[64], draw_ms[64], enc_ms[64];
  cv_view_t view = {CV_PLOTTER, 1, 0, 0};
  cv_raster_t *ras = cv_raster_new(&view);
  json_object *strokes = json_object_new_array();
  uint32_t id = 1;
  seed = 99;
  /* A canvas that already has some drawing on it. */
  for (int k = 0; k < 5; k++)
    pen_batch(strokes, &id);
  void *png = NULL;
  size_t png_len = 0;
  cv_raster_update(ras, strokes, 0, &png, &png_len);
  free(png);
  for (int r = 0; r < rounds; r++) {
    size_t from = json_object_array_length(strokes);
    pen_batch(strokes, &id);
    uint64_t t0 = bench_now_ns();
    cv_raster_update(ras, strokes, from, &png, &png_len);
    ms[r] = (double)(bench_now_ns() - t0) / 1e6;
    free(png);
    /* The halves, on another batch. */
    from = json_object_array_length(strokes);
    pen_batch(strokes, &id);
    t0 = bench_now_ns();
    cv_raster_draw(ras, strokes, from, NULL);
    uint64_t t1 = bench_now_ns();
    cv_raster_encode(ras, &png, &png_len);
    uint64_t t2 = bench_now_ns();
    free(png);
    draw_ms[r] = (double)(t1 - t0) / 1e6;
    enc_ms[r] = (double)(t2 - t1) / 1e6;
  }
  printf("draw_paths' drawing, 1,000 pen paths onto a canvas of 5,000+, "
         "plotter; median of %d: %.1f ms drawn and encoded (apart: drawing "
         "%.1f ms, encoding %.1f ms; %zu bytes)\n",
         rounds, bench_median(ms, rounds), bench_median(draw_ms, rounds),
         bench_median(enc_ms, rounds), png_len);
  json_object_put(strokes);
  cv_raster_free(ras);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 5;
  const char *out = argc > 2 ? argv[2] : NULL;
  if (rounds < 1)
    rounds = 1;

  /* ---- the parser ---- */
  const int n_chunks = 64;
  char *chunks[64];
  size_t chunk_len[64], total = 0;
  for (int c = 0; c < n_chunks; c++) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (int k = 0; len < (1u << 20) - 200; k++) {
      path_text(f, k);
      fputc(' ', f);
      fflush(f);
    }
    fclose(f);
    chunks[c] = buf;
    chunk_len[c] = len;
    total += len;
  }
  double mbps[64];
  dp_path_t p = {0};
  size_t ops = 0;
  for (int r = 0; r < rounds; r++) {
    uint64_t t0 = bench_now_ns();
    ops = 0;
    for (int c = 0; c < n_chunks; c++) {
      dp_error_t e;
      dp_path_clear(&p);
      if (dp_parse(chunks[c], chunk_len[c], &p, &e) != 0) {
        fprintf(stderr, "drawing-core: chunk %d: %s\n", c, e.msg);
        return 2;
      }
      ops += p.n_ops;
    }
    double s = (double)(bench_now_ns() - t0) / 1e9;
    mbps[r] = (double)total / 1e6 / s;
  }
  dp_path_free(&p);
  printf("parser: %.1f MB of path data (%zu commands), median of %d: %.0f "
         "MB/s\n",
         (double)total / 1e6, ops, rounds, bench_median(mbps, rounds));
  for (int c = 0; c < n_chunks; c++)
    free(chunks[c]);

  time_pen_call(rounds > 64 ? 64 : rounds);

  json_object *strokes = NULL;
  static const double spreads[2] = {1, 0.1};
  static const char *const names[2] = {
      "long paths (anywhere on the canvas)",
      "short paths (within 76 x 56 px, as most strokes of a drawing)"};
  for (int v = 0; v < 2; v++) {
    json_object_put(strokes);
    strokes = canvas(spreads[v]);
    if (strokes == NULL)
      return 2;
    time_view(strokes, rounds, names[v]);
  }

  if (out != NULL) {
    /* The same canvas for the peers. */
    char path[4096];
    snprintf(path, sizeof(path), "%s/canvas.svg", out);
    FILE *f = fopen(path, "w");
    char *svg = cv_svg(strokes, CV_PAINT, NULL);
    fputs(svg, f);
    fclose(f);
    free(svg);
    snprintf(path, sizeof(path), "%s/canvas-polylines.json", out);
    f = fopen(path, "w");
    fputs("[", f);
    for (int i = 0; i < 10000; i++) {
      cv_stroke_t s;
      cv_stroke_unpack(
          json_object_get_string(json_object_array_get_idx(strokes, i)), &s);
      dp_path_t q = {0};
      dp_error_t e;
      dp_parse(s.d, strlen(s.d), &q, &e);
      fprintf(f, "%s{\"color\":\"%s\",\"width\":%g,\"opacity\":%g,\"lines\":[",
              i ? "," : "", s.color, s.width, s.opacity);
      /* Pillow gets each subpath flattened as Code Monet flattens svg
       * paths (0.5 points per pixel: within about half a pixel). */
      poly_t pl = {f, 1};
      dp_flatten(&q, 0.5, poly_point, &pl);
      fputs("]]}", f);
      dp_path_free(&q);
      cv_stroke_clear(&s);
    }
    fputs("]\n", f);
    fclose(f);
  }
  json_object_put(strokes);
  return 0;
}
