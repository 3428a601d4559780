/* The drawing plugin (seed 004): an agent draws on an 800 × 600 canvas by
 * chat, as Code Monet's agent does, with its defects fixed: every path is
 * checked and every refusal reported, SVG path data is read whole (arcs,
 * exponents, subpaths), the canvas is drawn with true curves, caps and
 * anti-aliasing, brushes expand the same way everywhere, and code runs in
 * a real sandbox.
 *
 * This file holds the descriptor, the namespace, the cached rasters, the
 * path intake shared by the tools that add strokes, and describe(). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/sha.h>

#include "drawing_int.h"
#include "schemas.inc"

int64_t drw_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the namespace ---- */

static json_object *get(json_object *o, const char *key) {
  json_object *v = NULL;
  return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static json_object *new_piece(long number, cv_mode_t mode) {
  json_object *p = json_object_new_object();
  json_object_object_add(p, "number", json_object_new_int64(number));
  json_object_object_add(p, "title", json_object_new_string(""));
  json_object_object_add(p, "mode", json_object_new_string(cv_mode_name(mode)));
  json_object_object_add(p, "created_ms", json_object_new_int64(drw_now_ms()));
  json_object_object_add(p, "done", json_object_new_boolean(0));
  json_object_object_add(p, "strokes", json_object_new_array());
  return p;
}

json_object *drw_ns_ready(json_object *ns) {
  if (get(ns, "version") == NULL)
    json_object_object_add(ns, "version", json_object_new_int(1));
  if (!json_object_is_type(get(ns, "next_id"), json_type_int))
    json_object_object_add(ns, "next_id", json_object_new_int64(1));
  json_object *pieces = get(ns, "pieces");
  if (!json_object_is_type(pieces, json_type_array)) {
    pieces = json_object_new_array();
    json_object_object_add(ns, "pieces", pieces);
  }
  if (!json_object_is_type(get(ns, "references"), json_type_array))
    json_object_object_add(ns, "references", json_object_new_array());
  size_t n = json_object_array_length(pieces);
  if (n == 0) {
    json_object_array_add(pieces, new_piece(1, CV_PLOTTER));
    n = 1;
  }
  json_object *cur = json_object_array_get_idx(pieces, n - 1);
  if (!json_object_is_type(drw_strokes(cur), json_type_array))
    json_object_object_add(cur, "strokes", json_object_new_array());
  return cur;
}

json_object *drw_current(json_object *ns) {
  json_object *pieces = get(ns, "pieces");
  size_t n = json_object_is_type(pieces, json_type_array)
                 ? json_object_array_length(pieces)
                 : 0;
  return n ? json_object_array_get_idx(pieces, n - 1) : NULL;
}

json_object *drw_strokes(json_object *piece) {
  json_object *s = get(piece, "strokes");
  return json_object_is_type(s, json_type_array) ? s : NULL;
}

cv_mode_t drw_piece_mode(json_object *piece) {
  int m = cv_mode_parse(json_object_get_string(get(piece, "mode")));
  return m < 0 ? CV_PLOTTER : (cv_mode_t)m;
}

long drw_piece_number(json_object *piece) {
  json_object *n = get(piece, "number");
  return n ? (long)json_object_get_int64(n) : 1;
}

const char *drw_piece_title(json_object *piece) {
  json_object *t = get(piece, "title");
  return t ? json_object_get_string(t) : "";
}

/* Exposed for new_canvas (drawing_tools.c). */
json_object *drw_new_piece(long number, cv_mode_t mode);
json_object *drw_new_piece(long number, cv_mode_t mode) {
  return new_piece(number, mode);
}

void drw_piece_summary(json_object *piece, json_object *result) {
  json_object *strokes = drw_strokes(piece);
  json_object_object_add(result, "piece",
                         json_object_new_int64(drw_piece_number(piece)));
  json_object_object_add(
      result, "mode",
      json_object_new_string(cv_mode_name(drw_piece_mode(piece))));
  json_object_object_add(
      result, "strokes_total",
      json_object_new_int64(strokes ? (int64_t)json_object_array_length(strokes)
                                    : 0));
}

void drw_mark_done(json_object *ns, json_object *result) {
  json_object *piece = drw_ns_ready(ns);
  json_object_object_add(piece, "done", json_object_new_boolean(1));
  json_object_object_add(piece, "saved_ms",
                         json_object_new_int64(drw_now_ms()));
  json_object_object_add(result, "done", json_object_new_boolean(1));
}

/* ---- the page's view of a stroke ---- */

typedef struct {
  json_object *stroke, *bristles;
  int n;
} view_t;

static json_object *num3(double v) {
  return json_object_new_double(round(v * 1000) / 1000);
}

static void view_part(void *u, const cv_part_t *part) {
  view_t *v = u;
  if (v->n++ == 0) {
    json_object_object_add(v->stroke, "width", num3(part->width));
    return;
  }
  char *d = dp_format(part->path);
  if (d == NULL)
    return;
  json_object *b = json_object_new_object();
  json_object_object_add(b, "d", json_object_new_string(d));
  json_object_object_add(b, "width", num3(part->width));
  json_object_object_add(b, "opacity", num3(part->opacity));
  json_object_array_add(v->bristles, b);
  free(d);
}

json_object *drw_stroke_view(const char *packed, cv_mode_t mode) {
  cv_stroke_t s;
  if (cv_stroke_unpack(packed, &s) != 0)
    return NULL;
  dp_path_t path = {0};
  dp_error_t pe;
  if (dp_parse(s.d, strlen(s.d), &path, &pe) != 0) {
    cv_stroke_clear(&s);
    return NULL;
  }
  cv_ink_t ink;
  cv_stroke_ink(&s, mode, 0, &ink);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_int64(s.id));
  json_object_object_add(
      o, "author", json_object_new_string(s.author == 'h' ? "human" : "agent"));
  json_object_object_add(o, "d", json_object_new_string(s.d));
  char hex[8];
  snprintf(hex, sizeof(hex), "#%02x%02x%02x", (unsigned)lround(ink.r * 255),
           (unsigned)lround(ink.g * 255), (unsigned)lround(ink.b * 255));
  json_object_object_add(o, "color", json_object_new_string(hex));
  const cv_brush_t *b =
      mode == CV_PAINT && s.brush >= 0 ? &cv_brushes[s.brush] : NULL;
  json_object_object_add(o, "opacity", num3(ink.a * (b ? b->main_opacity : 1)));
  if (b)
    json_object_object_add(o, "brush", json_object_new_string(b->name));
  view_t v = {o, json_object_new_array(), 0};
  cv_stroke_parts(&s, &path, mode, view_part, &v);
  if (json_object_array_length(v.bristles) > 0) {
    /* Bristle opacities multiply the stroke's ink alpha. */
    json_object *arr = v.bristles;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
      json_object *br = json_object_array_get_idx(arr, i);
      double op = json_object_get_double(get(br, "opacity"));
      json_object_object_add(br, "opacity", num3(op * ink.a));
    }
    json_object_object_add(o, "bristles", arr);
  } else {
    json_object_put(v.bristles);
  }
  dp_path_free(&path);
  cv_stroke_clear(&s);
  return o;
}

/* ---- the model's view, cached ---- */

static void slot_clear(drw_slot_t *s) {
  cv_raster_free(s->r);
  free(s->last);
  free(s->png);
  memset(s, 0, sizeof(*s));
}

/* A stroke's text, hashed (FNV-1a, 64 bits) into 16 hex digits: enough to
 * tell that the stroke a kept raster ends with is still the one there. */
static void text_hash(const char *t, char out[17]) {
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char *p = (const unsigned char *)t; *p; p++)
    h = (h ^ *p) * 1099511628211ull;
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* How many strokes the image a piece's "raster" record names shows: k
 * when the record is of this drawing code and stroke k - 1 is still the
 * one it was made with, else 0 (no usable record). */
static int64_t raster_strokes(json_object *ra, json_object *strokes) {
  int64_t k = json_object_get_int64(get(ra, "strokes"));
  const char *last = json_object_get_string(get(ra, "last"));
  if (last == NULL || k <= 0 ||
      (uint64_t)k > json_object_array_length(strokes) ||
      json_object_get_int64(get(ra, "version")) != CV_RASTER_VERSION)
    return 0;
  char h[17];
  text_hash(
      json_object_get_string(json_object_array_get_idx(strokes, (size_t)k - 1))
          ?: "",
      h);
  return strcmp(h, last) == 0 ? k : 0;
}

/* The model's view of a piece is attached to each call that changes it,
 * and so kept in the store with the call; the piece names the last one
 * ("raster": its image id, how many strokes it shows and a hash of the
 * last of them). A canvas missing from the cache (after a restart, or
 * after eight other sessions drew) is brought back from that image and
 * its later strokes drawn on top, rather than drawn again from nothing:
 * 50,000 strokes cost cairo most of a second, the image a few ms.
 * Returns the strokes r now shows (0: none, r white as before); when that
 * is all of them, the image itself is handed over in *png (else freed). */
static size_t restore(drw_state_t *st, json_object *piece, json_object *strokes,
                      size_t n, cv_raster_t *r, void **png, size_t *png_len) {
  json_object *ra = get(piece, "raster");
  const char *id = json_object_get_string(get(ra, "image"));
  int64_t k = raster_strokes(ra, strokes);
  if (id == NULL || k == 0 || !ATL_HOST_HAS(st->host, image_get))
    return 0;
  void *data = NULL;
  size_t len = 0;
  char mime[64];
  if (st->host->image_get(st->host, id, &data, &len, mime, sizeof(mime)) != 0)
    return 0;
  int rc = strcmp(mime, "image/png") == 0 ? cv_raster_load_png(r, data, len)
                                          : -EINVAL;
  if (rc == 0)
    st->host->log(st->host, ATL_LOG_DEBUG,
                  "canvas brought back from its kept image: %lld of %zu "
                  "strokes",
                  (long long)k, n);
  if (rc == 0 && (size_t)k == n) {
    *png = data;
    *png_len = len;
  } else {
    free(data);
  }
  return rc == 0 ? (size_t)k : 0;
}

/* Names png, the view of the piece's first n strokes, in the piece,
 * unless the piece names it already. */
static void remember(json_object *piece, json_object *strokes, size_t n,
                     const void *png, size_t len) {
  if (raster_strokes(get(piece, "raster"), strokes) == (int64_t)n)
    return;
  char h[17];
  text_hash(json_object_get_string(json_object_array_get_idx(strokes, n - 1))
                ?: "",
            h);
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(png, len, md);
  char id[2 * SHA256_DIGEST_LENGTH + 1];
  for (size_t i = 0; i < sizeof(md); i++)
    snprintf(id + 2 * i, 3, "%02x", md[i]);
  json_object *ra = json_object_new_object();
  json_object_object_add(ra, "version",
                         json_object_new_int64(CV_RASTER_VERSION));
  json_object_object_add(ra, "image", json_object_new_string(id));
  json_object_object_add(ra, "strokes", json_object_new_int64((int64_t)n));
  json_object_object_add(ra, "last", json_object_new_string(h));
  json_object_object_add(piece, "raster", ra);
}

int drw_canvas_png(drw_state_t *st, const char *sid, json_object *piece,
                   void **png, size_t *len) {
  json_object *strokes = drw_strokes(piece);
  size_t n = strokes ? json_object_array_length(strokes) : 0;
  long number = drw_piece_number(piece);
  cv_mode_t mode = drw_piece_mode(piece);
  const char *last =
      n ? json_object_get_string(json_object_array_get_idx(strokes, n - 1))
        : NULL;
  if (last == NULL)
    last = "";

  /* Take this session's raster out of the cache (no other handler of the
   * session runs meanwhile, so nobody else wants it), draw on it outside
   * the lock, and put it back. */
  drw_slot_t mine = {0}, extra = {0};
  pthread_mutex_lock(&st->lock);
  for (int i = 0; i < DRW_CACHE; i++)
    if (st->slots[i].r && strcmp(st->slots[i].sid, sid) == 0) {
      /* One slot per session; a second (a timed-out handler of the
       * session put one back meanwhile) is dropped. */
      if (mine.r == NULL)
        mine = st->slots[i];
      else
        extra = st->slots[i];
      memset(&st->slots[i], 0, sizeof(st->slots[i]));
    }
  pthread_mutex_unlock(&st->lock);
  slot_clear(&extra);

  /* Usable when it shows a prefix of this piece's strokes: same piece and
   * mode, no more strokes than now, and its last stroke is still there. */
  size_t from = 0;
  if (mine.r && mine.piece == number && mine.mode == mode && mine.drawn <= n &&
      (mine.drawn == 0 ||
       strcmp(mine.last ? mine.last : "",
              json_object_get_string(
                  json_object_array_get_idx(strokes, mine.drawn - 1))
                  ?: "") == 0)) {
    from = mine.drawn;
  } else {
    slot_clear(&mine);
    cv_view_t view = {mode, 1, 0, 0};
    mine.r = cv_raster_new(&view);
    if (mine.r == NULL)
      return -1;
    snprintf(mine.sid, sizeof(mine.sid), "%s", sid);
    mine.piece = number;
    mine.mode = mode;
    from = restore(st, piece, strokes, n, mine.r, &mine.png, &mine.png_len);
    if (mine.png != NULL) {
      /* The kept image is the view itself. */
      mine.drawn = n;
      mine.last = strdup(last);
    }
  }
  int rc = 0;
  if (from < n || mine.png == NULL) {
    /* Something new: draw it and encode again. A view of an unchanged
     * canvas (view_canvas after draw_paths) reuses the last PNG. */
    free(mine.png);
    mine.png = NULL;
    rc = cv_raster_update(mine.r, strokes, from, &mine.png, &mine.png_len);
    free(mine.last);
    mine.last = strdup(last);
    mine.drawn = n;
  }
  /* Also when the PNG was kept (a call retried after a timeout finds it
   * drawn): the piece must name the image this call attaches. */
  if (rc == 0 && n > 0 && mine.png != NULL)
    remember(piece, strokes, n, mine.png, mine.png_len);
  if (rc == 0 && mine.last != NULL && mine.png != NULL) {
    *png = malloc(mine.png_len);
    if (*png != NULL) {
      memcpy(*png, mine.png, mine.png_len);
      *len = mine.png_len;
    }
  }
  if (rc != 0 || mine.last == NULL || mine.png == NULL || *png == NULL) {
    slot_clear(&mine);
    return rc ? rc : -1;
  }

  pthread_mutex_lock(&st->lock);
  int slot = -1;
  for (int i = 0; i < DRW_CACHE && slot < 0; i++)
    if (st->slots[i].r && strcmp(st->slots[i].sid, sid) == 0)
      slot = i; /* the session's own, put back meanwhile: replaced */
  for (int i = 0; i < DRW_CACHE && slot < 0; i++)
    if (st->slots[i].r == NULL)
      slot = i;
  if (slot < 0) {
    slot = 0;
    for (int i = 1; i < DRW_CACHE; i++)
      if (st->slots[i].used < st->slots[slot].used)
        slot = i;
  }
  drw_slot_t old = st->slots[slot];
  mine.used = ++st->clock;
  st->slots[slot] = mine;
  pthread_mutex_unlock(&st->lock);
  slot_clear(&old);
  return 0;
}

int drw_attach_canvas(atl_call_t *call, json_object *piece,
                      json_object *result) {
  void *png = NULL;
  size_t len = 0;
  if (drw_canvas_png(call->plugin_state, call->session_id, piece, &png, &len) !=
      0)
    return -1;
  char name[64];
  snprintf(name, sizeof(name), "canvas-piece-%ld.png", drw_piece_number(piece));
  int rc = call->host->call_image(call, "image/png", png, len, name);
  free(png);
  json_object_object_add(
      result, "image",
      json_object_new_string("attached: the canvas as the model sees it, "
                             "human strokes highlighted"));
  return rc;
}

/* ---- taking paths in ---- */

static json_object *box_json(const dp_box_t *b) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "x0", num3(b->x0));
  json_object_object_add(o, "y0", num3(b->y0));
  json_object_object_add(o, "x1", num3(b->x1));
  json_object_object_add(o, "y1", num3(b->y1));
  return o;
}

long drw_add_paths(atl_call_t *call, json_object *paths, char author,
                   json_object *result, const char *what) {
  json_object *ns = call->ns;
  json_object *piece = drw_ns_ready(ns);
  json_object *strokes = drw_strokes(piece);
  cv_mode_t mode = drw_piece_mode(piece);
  json_object *next = get(ns, "next_id");
  int64_t id = json_object_get_int64(next);
  if (id < 1)
    id = 1;

  size_t n = json_object_array_length(paths);
  json_object *refused = json_object_new_array();
  json_object *clipped = json_object_new_array();
  json_object *ids = json_object_new_array();
  json_object *views = json_object_new_array();
  dp_path_t scratch = {0};
  long drawn = 0, styled = 0;
  char err[512];
  for (size_t i = 0; i < n; i++) {
    cv_stroke_t s;
    int clip = 0, sty = 0;
    dp_box_t box;
    if (cv_path_from_json(json_object_array_get_idx(paths, i), mode, &s,
                          &scratch, &clip, &box, &sty, err, sizeof(err)) != 0) {
      json_object *r = json_object_new_object();
      json_object_object_add(r, "index", json_object_new_int64((int64_t)i));
      char msg[600];
      snprintf(msg, sizeof(msg), "%s %zu: %s", what, i, err);
      json_object_object_add(r, "error", json_object_new_string(msg));
      json_object_array_add(refused, r);
      cv_stroke_clear(&s);
      continue;
    }
    s.id = (uint32_t)id++;
    s.author = author;
    char *packed = cv_stroke_pack(&s);
    cv_stroke_clear(&s);
    if (packed == NULL)
      goto oom;
    json_object_array_add(strokes, json_object_new_string(packed));
    json_object *view = drw_stroke_view(packed, mode);
    if (view)
      json_object_array_add(views, view);
    free(packed);
    json_object_array_add(ids, json_object_new_int64(id - 1));
    styled += sty;
    drawn++;
    if (clip) {
      json_object *c = json_object_new_object();
      json_object_object_add(c, "index", json_object_new_int64((int64_t)i));
      json_object_object_add(c, "extent", box_json(&box));
      json_object_array_add(clipped, c);
    }
  }
  dp_path_free(&scratch);
  json_object_object_add(ns, "next_id", json_object_new_int64(id));

  json_object_object_add(result, "drawn", json_object_new_int64(drawn));
  json_object_object_add(result, "ids", ids);
  if (json_object_array_length(refused))
    json_object_object_add(result, "refused", refused);
  else
    json_object_put(refused);
  if (json_object_array_length(clipped)) {
    json_object_object_add(result, "clipped", clipped);
    json_object_object_add(
        result, "clipped_note",
        json_object_new_string("these paths leave the canvas (x 0-800, y "
                               "0-600); they are drawn, clipped at its edge"));
  } else {
    json_object_put(clipped);
  }
  if (styled)
    json_object_object_add(
        result, "style_ignored",
        json_object_new_string(
            "plotter mode draws every stroke with its one pen (#1a1a2e, "
            "width 2.5): color, stroke_width, opacity and brush were "
            "ignored; new_canvas with mode paint for colour"));

  if (drawn > 0) {
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "piece",
                           json_object_new_int64(drw_piece_number(piece)));
    json_object_object_add(ev, "mode",
                           json_object_new_string(cv_mode_name(mode)));
    json_object_object_add(ev, "strokes", views);
    if (ATL_HOST_HAS(call->host, call_emit))
      call->host->call_emit(call, "canvas.strokes", ev);
    else
      call->host->emit(call->host, call->session_id, "canvas.strokes", ev);
  } else {
    json_object_put(views);
  }
  return drawn;
oom:
  dp_path_free(&scratch);
  json_object_put(refused);
  json_object_put(clipped);
  json_object_put(ids);
  json_object_put(views);
  return -1;
}

/* The current piece's strokes, and in *human those a person drew (a
 * packed stroke's author follows its first ';'). */
static size_t count_strokes(json_object *piece, size_t *human) {
  json_object *strokes = drw_strokes(piece);
  size_t n = strokes ? json_object_array_length(strokes) : 0;
  *human = 0;
  for (size_t i = 0; i < n; i++) {
    const char *s =
        json_object_get_string(json_object_array_get_idx(strokes, i));
    const char *a = s ? strchr(s, ';') : NULL;
    *human += a && a[1] == 'h';
  }
  return n;
}

/* ---- the admin socket's summary (plugin ABI 1.4) ---- */

static json_object *admin_summary(void *state, const char *session_id,
                                  json_object *ns) {
  (void)state;
  (void)session_id;
  json_object *piece = ns ? drw_current(ns) : NULL;
  if (piece == NULL)
    return NULL;
  size_t human = 0, n = count_strokes(piece, &human);
  json_object *pieces = get(ns, "pieces");
  json_object *o = json_object_new_object();
  json_object_object_add(o, "piece",
                         json_object_new_int64(drw_piece_number(piece)));
  json_object_object_add(o, "title",
                         json_object_new_string(drw_piece_title(piece)));
  json_object_object_add(
      o, "mode", json_object_new_string(cv_mode_name(drw_piece_mode(piece))));
  json_object_object_add(o, "strokes", json_object_new_int64((int64_t)n));
  json_object_object_add(o, "human_strokes",
                         json_object_new_int64((int64_t)human));
  json_object_object_add(
      o, "pieces",
      json_object_new_int64(json_object_is_type(pieces, json_type_array)
                                ? (int64_t)json_object_array_length(pieces)
                                : 0));
  return o;
}

/* ---- describe ---- */

static char *describe(void *state, json_object *ns) {
  (void)state;
  json_object *piece = drw_current(ns);
  /* A session that never drew says nothing: the tools' descriptions
   * present the canvas, and every other session's prompt stays short. */
  if (piece == NULL)
    return NULL;
  size_t human = 0, n = count_strokes(piece, &human);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  const char *title = drw_piece_title(piece);
  fprintf(f,
          "Canvas: piece %ld%s%s%s, %s mode, %zu strokes (%zu by the "
          "agent, %zu by the human)%s.",
          drw_piece_number(piece), *title ? " \"" : "", title,
          *title ? "\"" : "", cv_mode_name(drw_piece_mode(piece)), n, n - human,
          human,
          json_object_get_boolean(get(piece, "done")) ? "; marked done" : "");
  json_object *pieces = get(ns, "pieces");
  size_t saved = 0;
  if (!json_object_is_type(pieces, json_type_array))
    pieces = NULL;
  for (size_t i = 0; pieces && i < json_object_array_length(pieces); i++)
    saved += get(json_object_array_get_idx(pieces, i), "saved_ms") != NULL;
  if (saved)
    fprintf(f, " Gallery: %zu saved piece%s.", saved, saved == 1 ? "" : "s");
  json_object *refs = get(ns, "references");
  size_t nr = json_object_is_type(refs, json_type_array)
                  ? json_object_array_length(refs)
                  : 0;
  if (nr) {
    fputs(" Reference images:", f);
    for (size_t i = 0; i < nr && i < 10; i++)
      fprintf(f, "%s %s", i ? "," : "",
              json_object_get_string(
                  get(json_object_array_get_idx(refs, i), "name"))
                  ?: "?");
    if (nr > 10)
      fprintf(f, " and %zu more", nr - 10);
    fputc('.', f);
  }
  fputc('\n', f);
  fclose(f);
  return buf;
}

/* ---- the descriptor ---- */

static int init(const atl_host_t *host, void **state) {
  drw_state_t *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return ATL_ENOMEM;
  st->host = host;
  pthread_mutex_init(&st->lock, NULL);
  drw_sandbox_init(st);
  *state = st;
  return 0;
}

static void destroy(void *state) {
  drw_state_t *st = state;
  for (int i = 0; i < DRW_CACHE; i++)
    slot_clear(&st->slots[i]);
  pthread_mutex_destroy(&st->lock);
  free(st);
}

static void session_close(void *state, const char *sid) {
  drw_state_t *st = state;
  pthread_mutex_lock(&st->lock);
  for (int i = 0; i < DRW_CACHE; i++)
    if (st->slots[i].r && strcmp(st->slots[i].sid, sid) == 0)
      slot_clear(&st->slots[i]);
  pthread_mutex_unlock(&st->lock);
}

#define VIEW_CANVAS_DESC                                                       \
  "Shows the canvas as an image, as it is now. Agent strokes appear as "       \
  "drawn; human strokes are highlighted: blue (#0066cc) in plotter mode, "     \
  "rose (#e94560) in paint mode. Also returns the piece number, title, "       \
  "mode and stroke counts."

static const atl_tool_t tools[] = {
    {.name = "draw_paths",
     .description = DRW_DRAW_PATHS_DESC,
     .input_schema = DRW_DRAW_PATHS,
     .handler = drw_draw_paths},
    {.name = "view_canvas",
     .description = VIEW_CANVAS_DESC,
     .input_schema = DRW_VIEW_CANVAS,
     .flags = ATL_TOOL_READ_ONLY,
     .handler = drw_view_canvas},
    {.name = "generate_svg",
     .description = DRW_GENERATE_SVG_DESC,
     .input_schema = DRW_GENERATE_SVG,
     .flags = ATL_TOOL_LONG_RUNNING,
     .timeout_ms = 45000,
     .handler = drw_generate_svg},
    {.name = "mark_piece_done",
     .description = DRW_MARK_PIECE_DONE_DESC,
     .input_schema = DRW_MARK_PIECE_DONE,
     .flags = ATL_TOOL_IDEMPOTENT,
     .handler = drw_mark_piece_done},
    {.name = "new_canvas",
     .description = DRW_NEW_CANVAS_DESC,
     .input_schema = DRW_NEW_CANVAS,
     .handler = drw_new_canvas},
    {.name = "sign_canvas",
     .description = DRW_SIGN_CANVAS_DESC,
     .input_schema = DRW_SIGN_CANVAS,
     .handler = drw_sign_canvas},
    {.name = "generate_image",
     .description = DRW_GENERATE_IMAGE_DESC,
     .input_schema = DRW_GENERATE_IMAGE,
     .flags = ATL_TOOL_LONG_RUNNING | ATL_TOOL_OPEN_WORLD,
     .timeout_ms = 75000,
     .handler = drw_generate_image},
    {.name = "view_reference_image",
     .description = DRW_VIEW_REFERENCE_IMAGE_DESC,
     .input_schema = DRW_VIEW_REFERENCE_IMAGE,
     .flags = ATL_TOOL_READ_ONLY,
     .handler = drw_view_reference_image},
    {.name = "add_human_stroke",
     .description = DRW_ADD_HUMAN_STROKE_DESC,
     .input_schema = DRW_ADD_HUMAN_STROKE,
     .flags = ATL_TOOL_NOT_FOR_MODEL,
     .handler = drw_add_human_stroke},
    {.name = "name_piece",
     .description = DRW_NAME_PIECE_DESC,
     .input_schema = DRW_NAME_PIECE,
     .flags = ATL_TOOL_FAST | ATL_TOOL_DESTRUCTIVE | ATL_TOOL_IDEMPOTENT,
     .handler = drw_name_piece},
};

ATL_PLUGIN_DEFINE(.name = "canvas", .version = "1.0",
                  .description = "Drawing on an 800x600 canvas (seed 004)",
                  .tools = tools, .n_tools = sizeof(tools) / sizeof(tools[0]),
                  .init = init, .destroy = destroy,
                  .session_close = session_close, .describe = describe,
                  .admin_summary = admin_summary);
