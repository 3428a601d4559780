/* The canvas model of the drawing plugin: strokes, their styles, the two
 * modes, the palette and the brushes.
 *
 * A stroke lives in the session document as one JSON string (see
 * doc/drawing.md, "The canvas namespace"):
 *
 *     "<id>;<author>;<color>;<width>;<opacity>;<brush>;<d>"
 *
 * author is "a" (agent) or "h" (human); color, width, opacity and brush
 * are empty for "the mode's default"; d is the canonical path data of
 * dpath.h. One string per stroke rather than an object of seven members:
 * the host copies and serializes the document on every call, and a canvas
 * of 50,000 strokes as objects would cost it a quarter of a second and
 * 60 MB per copy (measured with json-c), against 2 ms and 10 MB as strings.
 */
#ifndef ATL_DRAWING_CANVAS_H
#define ATL_DRAWING_CANVAS_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "dpath.h"

#define CV_WIDTH 800
#define CV_HEIGHT 600
/* How far outside the canvas a path may reach: it is drawn clipped, and
 * anything farther is refused. */
#define CV_FAR 100000

typedef enum { CV_PLOTTER = 0, CV_PAINT = 1 } cv_mode_t;

/* The mode's name ("plotter", "paint"), and back (-1: unknown). */
const char *cv_mode_name(cv_mode_t m);
int cv_mode_parse(const char *s);

/* The plotter's ink and width, which every plotter stroke has. */
#define CV_PLOTTER_COLOR "#1a1a2e"
#define CV_PLOTTER_WIDTH 2.5
/* Paint's defaults for what a stroke leaves out. */
#define CV_PAINT_COLOR "#1a1a2e"
#define CV_PAINT_WIDTH 8.0
#define CV_PAINT_OPACITY 0.85
#define CV_MIN_WIDTH 0.5
#define CV_MAX_WIDTH 30.0
/* The colours human strokes get in the model's view of the canvas. */
#define CV_HUMAN_PLOTTER "#0066cc"
#define CV_HUMAN_PAINT "#e94560"

/* The palette: 11 names and their colours ("rose" is also "crimson"). */
typedef struct {
  const char *name;
  const char *hex;
} cv_color_t;
extern const cv_color_t cv_palette[];
extern const size_t cv_palette_len;

/* Resolves a colour, a palette name or "#rrggbb" (either case), into
 * "#rrggbb" lowercase in out. 0, or -1 when it is neither. */
int cv_color_parse(const char *s, char out[8]);

/* A brush preset (paint mode). */
typedef struct {
  const char *name;
  const char *use; /* one line for the model */
  int bristles;
  double spread;        /* bristle offsets span spread × width */
  double bristle_ratio; /* a bristle's width over the stroke's */
  double bristle_opacity;
  double main_opacity; /* multiplies the stroke's opacity */
  double base_width;   /* the width when the stroke gives none */
  double noise;        /* edge noise, in widths */
} cv_brush_t;
extern const cv_brush_t cv_brushes[];
extern const size_t cv_brushes_len;
/* The brush's index, or -1. */
int cv_brush_find(const char *name);

typedef struct {
  uint32_t id;
  char author;    /* 'a' or 'h' */
  char color[8];  /* "#rrggbb", or "" for the default */
  double width;   /* 0: the default */
  double opacity; /* < 0: the default */
  int brush;      /* index into cv_brushes, or -1 */
  char *d;        /* canonical path data; the stroke owns it */
} cv_stroke_t;

/* The packed form (a malloc()ed string; NULL when out of memory). */
char *cv_stroke_pack(const cv_stroke_t *s);
/* Reads a packed stroke; d is a malloc()ed copy the stroke owns (free it
 * with cv_stroke_clear). 0, or -1 when the text is not a packed stroke. */
int cv_stroke_unpack(const char *text, cv_stroke_t *out);
void cv_stroke_clear(cv_stroke_t *s);

/* What a stroke looks like in a mode: its colour, width and opacity after
 * the defaults (and, for the model's view, the human highlight). */
typedef struct {
  double r, g, b, a, width;
} cv_ink_t;
void cv_stroke_ink(const cv_stroke_t *s, cv_mode_t mode, int highlight_human,
                   cv_ink_t *out);

/* One drawn part of a stroke: the stroke itself, or one of its brush's
 * bristles. d is the part's path (the stroke's own for the main part). */
typedef struct {
  const dp_path_t *path;
  double width;
  double opacity; /* multiplies the ink's alpha */
} cv_part_t;

/* Calls part() for each part of stroke s (whose parsed path is p) in the
 * order they are drawn: the main stroke, then the bristles. Brushes expand
 * only in paint mode; the expansion is seeded by the stroke's id, so it is
 * the same in every view and after every reload. Returns 0, or -1 when out
 * of memory. */
int cv_stroke_parts(const cv_stroke_t *s, const dp_path_t *p, cv_mode_t mode,
                    void (*part)(void *u, const cv_part_t *part), void *u);

/* Validation of one path object of draw_paths or generate_svg into a
 * stroke (author 'a', id 0: the caller numbers it). Returns 0, or -1 with
 * a message in err ("points[2].x is NaN; every coordinate must be a
 * finite number"). *clipped is set when the path leaves the canvas (it is
 * still valid; it is drawn clipped) and box holds its extent then.
 * *styled is set when the path has style members, which plotter mode
 * ignores. */
int cv_path_from_json(json_object *obj, cv_mode_t mode, cv_stroke_t *out,
                      dp_path_t *scratch, int *clipped, dp_box_t *box,
                      int *styled, char *err, size_t err_size);

#endif /* ATL_DRAWING_CANVAS_H */
