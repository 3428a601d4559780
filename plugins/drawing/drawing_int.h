/* The drawing plugin's internals, shared by its tool files.
 *
 * The "canvas" namespace of a session document (doc/drawing.md):
 *
 *   {"version": 1,
 *    "next_id": 17,               the next stroke's id (ids never repeat)
 *    "pieces": [                  the gallery, and last the current piece
 *      {"number": 1, "title": "", "mode": "plotter",
 *       "created_ms": ..., "saved_ms": ... (once saved), "done": false,
 *       "strokes": ["<packed stroke>", ...]}, ...],
 *    "references": [{"name", "image", "prompt", "created_ms"}, ...]}
 *
 * The current piece is the last one; the gallery is every piece with a
 * saved_ms. A piece is saved once and updated in place afterwards, never
 * duplicated (Code Monet wrote a finished piece twice). */
#ifndef ATL_DRAWING_INT_H
#define ATL_DRAWING_INT_H

#include <pthread.h>
#include <stddef.h>

#include <atelier/plugin.h>

#include "canvas.h"
#include "raster.h"

/* The model's view of each recently drawn canvas, kept so that a call
 * draws only the strokes added since the last one. */
#define DRW_CACHE 8

typedef struct {
  char sid[33];
  long piece;
  cv_mode_t mode;
  size_t drawn;   /* strokes on the raster */
  char *last;     /* the packed text of the last of them */
  cv_raster_t *r; /* NULL: empty slot */
  void *png;      /* r encoded, once asked for; NULL until then */
  size_t png_len;
  unsigned long used;
} drw_slot_t;

/* The human's stroke rate, per session (add_human_stroke). */
#define DRW_BUCKETS 64
typedef struct {
  char sid[33];
  double tokens;
  int64_t last_ms;
} drw_bucket_t;

typedef struct {
  const atl_host_t *host;
  pthread_mutex_t lock;
  drw_slot_t slots[DRW_CACHE];
  unsigned long clock;
  /* The sandbox of generate_svg (sandbox.c). */
  char bwrap[256], python[256];
  int time_limit_s; /* 30, or lower through ATELIER_DRAWING_TIME_LIMIT_S */
  drw_bucket_t buckets[DRW_BUCKETS]; /* under lock */
} drw_state_t;

/* The namespace made whole (version, next_id, a first piece); returns the
 * current piece. */
json_object *drw_ns_ready(json_object *ns);
/* The current piece of an ns that may be empty (read-only tools): NULL
 * when there is none yet. */
json_object *drw_current(json_object *ns);
json_object *drw_strokes(json_object *piece);
cv_mode_t drw_piece_mode(json_object *piece);
long drw_piece_number(json_object *piece);
const char *drw_piece_title(json_object *piece);

/* The model's view of the piece as a PNG (human strokes highlighted),
 * drawn incrementally from the cache. 0, or -ENOMEM. */
int drw_canvas_png(drw_state_t *st, const char *sid, json_object *piece,
                   void **png, size_t *len);

/* Validates paths (an array of path objects, host owns), appends the
 * valid ones to the current piece as author's strokes, emits
 * canvas.strokes and adds to result: drawn, ids, refused [{index,
 * error}], clipped [{index, box}] and notes. Returns the number drawn, or
 * -1 when out of memory. what names the source in messages ("path",
 * "signature stroke"). */
long drw_add_paths(atl_call_t *call, json_object *paths, char author,
                   json_object *result, const char *what);

/* Marks the current piece done and saved (now); a second time updates
 * its saved time. */
void drw_mark_done(json_object *ns, json_object *result);

/* Attaches the model's view of the canvas to the call and counts it in
 * result. */
int drw_attach_canvas(atl_call_t *call, json_object *piece,
                      json_object *result);

/* The page's view of one packed stroke: resolved colour, width, opacity
 * and, for brushes, the bristles. NULL when it cannot be read. */
json_object *drw_stroke_view(const char *packed, cv_mode_t mode);

/* A summary line for results: "piece 3 \"Harbour\" (paint): 120 strokes". */
void drw_piece_summary(json_object *piece, json_object *result);

int64_t drw_now_ms(void);

/* Tool handlers. */
int drw_draw_paths(atl_call_t *call);
int drw_view_canvas(atl_call_t *call);
int drw_mark_piece_done(atl_call_t *call);
int drw_new_canvas(atl_call_t *call);
int drw_sign_canvas(atl_call_t *call);
int drw_name_piece(atl_call_t *call);
int drw_generate_svg(atl_call_t *call);
int drw_generate_image(atl_call_t *call);
int drw_add_human_stroke(atl_call_t *call);
int drw_view_reference_image(atl_call_t *call);

/* The sandbox's set-up at init: finds bwrap and python3. */
void drw_sandbox_init(drw_state_t *st);

#endif
