/* opx: the optical bench drawn: the scene's objects and its rays, with
 * highlights, to SVG and PNG through cairo (one drawing routine, two
 * surfaces). Oriented as Ray Optics Simulation draws its scenes: y grows
 * downward, so a scene looks the same here and there.
 *
 * Ownership: the options point to the caller's masks; the outputs are
 * malloc'd buffers the caller frees. */
#ifndef ATL_OPX_DRAW_H
#define ATL_OPX_DRAW_H

#include <stddef.h>

#include "opx_run.h"

typedef struct {
  int width, height; /* pixels (PNG) and the SVG's size */
  /* The part of the scene shown (min x, min y, width, height in scene
   * units); all zero: fitted around the objects and the rays' starts,
   * with a 5 % margin. */
  double view[4];
  /* Highlights, each NULL for none: one byte per segment, per object
   * (geom->objs) and per edge (geom->edges). When any ray is highlighted
   * the others are drawn faint. */
  const unsigned char *rays, *objs, *edges;
  int draw_gaps; /* draw gap segments too (upstream never draws them) */
} opx_draw_opts_t;

/* Draws run to SVG and PNG: 0, or a negative errno. Either output pointer
 * may be NULL to skip that format. */
int opx_draw(const opx_run_t *run, const opx_draw_opts_t *opts, char **svg,
             size_t *svg_len, unsigned char **png, size_t *png_len);

/* The view a zeroed opts->view gets (for the description). */
void opx_draw_view(const opx_run_t *run, const opx_draw_opts_t *opts,
                   double view[4]);

/* Where object i (run->geom->objs) lands in the picture opts describes:
 * its box in pixels (x, y, width, height; a point or a thin object's at
 * least 12 pixels each way), clipped to the picture. 0, or -1 when it has
 * no place or lies outside the picture. */
int opx_draw_box(const opx_run_t *run, const opx_draw_opts_t *opts, int i,
                 double box[4]);

/* Empties cairo's static caches and fontconfig's, for a process about
 * to unload this module (the plugin's destroy hook) or to check its
 * memory: once the libraries are unmapped, what they cached would read as
 * lost. Call it only when no drawing runs, nor will until opx_draw. */
void opx_draw_release(void);

#endif
