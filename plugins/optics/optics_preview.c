/* The bench's live preview (plugin.h, ABI 1.5): after every change to a
 * session's bench the page shows it drawn as render_optics draws it, with
 * no highlights, so the user watches the bench being built without the
 * model spending a call (or the tokens of an image) on looking at it.
 *
 * The picture comes from the same cached run the tools use: a preview of
 * a bench the agent then simulates or queries costs one simulation, not
 * two. With it go the objects' boxes in pixels, so that the page can say
 * what was clicked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opx_draw.h"
#include "opx_tools.h"

/* render_optics' default size: the preview is the picture the model gets
 * when it asks for one without arguments. */
#define PREVIEW_WIDTH 800
#define PREVIEW_HEIGHT 600
/* The most objects whose boxes go with a preview: past a few hundred a
 * bench is too dense to click into anyway, and each box is in the event
 * the store keeps. */
#define PREVIEW_MAX_BOXES 200

static double ms_since(const struct timespec *t0) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - t0->tv_sec) * 1e3 +
         (double)(now.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A preview without a picture, saying why. */
static int say(atl_call_t *call, const char *key, const char *msg) {
  json_object *info = json_object_new_object();
  json_object_object_add(info, key, json_object_new_boolean(1));
  json_object_object_add(info, "message", json_object_new_string(msg));
  json_object_object_add(info, "final", json_object_new_boolean(1));
  call->host->preview_put(call, NULL, NULL, 0, info);
  return 0;
}

/* [{name, type, index, box: [x, y, width, height]}, ...] in pixels, in
 * the geometry's order; *omitted counts those past the cap. */
static json_object *boxes(const opx_run_t *run, const opx_draw_opts_t *o,
                          int *omitted) {
  json_object *a = json_object_new_array();
  const opx_geom_t *g = run->geom;
  *omitted = 0;
  for (int i = 0; g != NULL && i < g->nobjs; i++) {
    double b[4];
    if (opx_draw_box(run, o, i, b) != 0)
      continue;
    if (json_object_array_length(a) >= PREVIEW_MAX_BOXES) {
      ++*omitted;
      continue;
    }
    json_object *it = json_object_new_object();
    json_object_object_add(it, "name",
                           json_object_new_string(g->objs[i].display_name));
    json_object_object_add(it, "type", json_object_new_string(g->objs[i].type));
    json_object_object_add(it, "index",
                           json_object_new_int(g->objs[i].doc_index));
    json_object *jb = json_object_new_array();
    for (int k = 0; k < 4; k++)
      json_object_array_add(jb, json_object_new_double(round(b[k] * 10) / 10));
    json_object_object_add(it, "box", jb);
    json_object_array_add(a, it);
  }
  return a;
}

int opx_preview(atl_call_t *call) {
  const atl_host_t *h = call->host;
  if (!ATL_HOST_HAS(h, preview_put))
    return 0;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  json_object *objs = NULL;
  if (!json_object_object_get_ex(call->ns, "objs", &objs) ||
      json_object_array_length(objs) == 0)
    return say(call, "empty", "The bench has no objects yet.");
  char *why = NULL;
  opx_entry_t *e = opx_acquire_why(call, 0, &why);
  if (e == NULL) {
    say(call, "error", why ? why : "out of memory");
    free(why);
    return 0;
  }
  /* A newer change came while the rays were traced: its own preview
   * follows, and drawing this one would only delay it. */
  if (h->call_cancelled(call)) {
    opx_release(call->plugin_state, e);
    return 0;
  }
  const opx_run_t *run = e->run;
  opx_draw_opts_t o = {
      .width = PREVIEW_WIDTH, .height = PREVIEW_HEIGHT, .draw_gaps = 1};
  unsigned char *png = NULL;
  size_t png_len = 0;
  int rc = opx_draw(run, &o, NULL, NULL, &png, &png_len);
  if (rc != 0) {
    opx_release(call->plugin_state, e);
    char msg[120];
    snprintf(msg, sizeof(msg), "The bench could not be drawn: %s",
             strerror(-rc));
    return say(call, "error", msg);
  }
  json_object *info = json_object_new_object();
  json_object_object_add(info, "width", json_object_new_int(o.width));
  json_object_object_add(info, "height", json_object_new_int(o.height));
  json_object_object_add(info, "final", json_object_new_boolean(1));
  json_object_object_add(info, "objects",
                         json_object_new_int(run->geom ? run->geom->nobjs : 0));
  json_object_object_add(info, "segments",
                         json_object_new_int64(run->sim ? run->sim->nsegs : 0));
  int omitted = 0;
  json_object_object_add(info, "boxes", boxes(run, &o, &omitted));
  if (omitted > 0)
    json_object_object_add(info, "boxes_omitted", json_object_new_int(omitted));
  double view[4];
  opx_draw_view(run, &o, view);
  json_object_object_add(info, "bench_view", opx_json_view(view));
  opx_release(call->plugin_state, e);
  json_object_object_add(info, "ms",
                         json_object_new_int((int)(ms_since(&t0) + 0.5)));
  h->preview_put(call, "image/png", png, png_len, info);
  free(png);
  return 0;
}
