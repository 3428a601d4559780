/* The canvas drawn: PNG through cairo for the model, the gallery and
 * exports; SVG text for exports and the page.
 *
 * Both take the canvas's strokes as the session document keeps them (a
 * JSON array of packed strokes, canvas.h) and draw each stroke's parts
 * (the stroke and its brush's bristles) in order, each composited on its
 * own at its opacity: overlapping translucent strokes darken as paint
 * does, and a stroke that crosses itself does not. */
#ifndef ATL_DRAWING_RASTER_H
#define ATL_DRAWING_RASTER_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "canvas.h"

typedef struct {
  cv_mode_t mode;
  int highlight_human; /* the model's view: human strokes in their colour */
  int width, height;   /* output pixels; 0: 800 × 600 */
} cv_view_t;

/* A canvas being drawn: a white surface with strokes drawn on it so far.
 * Strokes only ever add on top, so a canvas that grew is brought up to
 * date by drawing its new strokes (cv_raster_update from the old
 * count). */
typedef struct cv_raster_s cv_raster_t;
/* The version of the drawing: raise it whenever a change here, in the
 * brushes or in the bands changes the pixels of the same strokes. A
 * canvas kept as an image (drawing.c) is only brought back by the same
 * version, so that old and new drawing never mix on one picture. */
#define CV_RASTER_VERSION 1
/* A white canvas for view (copied); NULL when out of memory. */
cv_raster_t *cv_raster_new(const cv_view_t *view);
void cv_raster_free(cv_raster_t *r);
/* Draws strokes[from..] (host owns strokes) on r, in bands on every core
 * (raster.c says how). Unreadable strokes are skipped; to count them in
 * *skipped, pass it: the strokes are then drawn in one piece on this
 * thread (a pixel on a band's edge may differ by one level). 0, or
 * -ENOMEM. */
int cv_raster_draw(cv_raster_t *r, json_object *strokes, size_t from,
                   size_t *skipped);
/* Draws strokes[from..] (host owns strokes) on r and encodes the result
 * as a PNG, both on every core (raster.c says how): a malloc()ed buffer
 * in *png of *len bytes. Unreadable strokes are skipped. 0, -ENOMEM, or
 * -EINVAL for a raster libpng cannot write. */
int cv_raster_update(cv_raster_t *r, json_object *strokes, size_t from,
                     void **png, size_t *len);
/* r's pixels as a PNG, the same way (r is only read, but its surface is
 * flushed). */
int cv_raster_encode(cv_raster_t *r, void **png, size_t *len);
/* Replaces r's pixels with a PNG of r's size that cv_raster_update or
 * cv_raster_encode made (a canvas kept in the store): 0, or -EINVAL when
 * png is not such an image (r is then white again). */
int cv_raster_load_png(cv_raster_t *r, const void *png, size_t len);
/* r's pixels as a new RGB buffer (width × height × 3, the caller frees). */
uint8_t *cv_raster_rgb_of(const cv_raster_t *r);

/* Draws strokes (host owns) into a new RGB buffer of width × height × 3
 * bytes, which the caller frees. Strokes that cannot be read are skipped
 * and counted in *skipped (may be NULL). 0, or -ENOMEM. */
int cv_raster_rgb(json_object *strokes, const cv_view_t *view, uint8_t **rgb,
                  size_t *skipped);

/* The same as a PNG: a malloc()ed buffer in *png of *len bytes. */
int cv_raster_png(json_object *strokes, const cv_view_t *view, void **png,
                  size_t *len);

/* The canvas as an SVG document (800 × 600 user units, the strokes with
 * their real colours, widths, opacities and bristles, round caps and
 * joins): a malloc()ed NUL-terminated string. NULL when out of memory. */
char *cv_svg(json_object *strokes, cv_mode_t mode, const char *title);

#endif
