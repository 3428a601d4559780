/* The drawing tools but generate_svg (sandbox.c) and the reference images
 * (images.c): draw_paths, view_canvas, the pieces' tools (mark_piece_done,
 * new_canvas, sign_canvas, name_piece) and the human's add_human_stroke. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drawing_int.h"

json_object *drw_new_piece(long number, cv_mode_t mode);

static json_object *get(json_object *o, const char *key) {
  json_object *v = NULL;
  return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static int arg_bool(atl_call_t *call, const char *key) {
  return json_object_get_boolean(get(call->args, key));
}

/* The piece's event for the page: a piece saved, named, started. */
static void piece_event(atl_call_t *call, json_object *piece,
                        const char *what) {
  json_object *ev = json_object_new_object();
  json_object_object_add(ev, "event", json_object_new_string(what));
  json_object_object_add(ev, "piece",
                         json_object_new_int64(drw_piece_number(piece)));
  json_object_object_add(ev, "title",
                         json_object_new_string(drw_piece_title(piece)));
  json_object_object_add(
      ev, "mode", json_object_new_string(cv_mode_name(drw_piece_mode(piece))));
  json_object_object_add(
      ev, "done",
      json_object_new_boolean(json_object_get_boolean(get(piece, "done"))));
  json_object_object_add(
      ev, "saved", json_object_new_boolean(get(piece, "saved_ms") != NULL));
  if (ATL_HOST_HAS(call->host, call_emit))
    call->host->call_emit(call, "canvas.piece", ev);
  else
    call->host->emit(call->host, call->session_id, "canvas.piece", ev);
}

static size_t n_strokes(json_object *piece) {
  json_object *s = drw_strokes(piece);
  return s ? json_object_array_length(s) : 0;
}

/* "path 3: ...; path 5: ..." from a result's refused list, for an error
 * message; at most the first 20. */
static char *refusals(json_object *result) {
  json_object *ref = get(result, "refused");
  size_t n = ref ? json_object_array_length(ref) : 0;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  for (size_t i = 0; i < n && i < 20; i++)
    fprintf(f, "%s%s", i ? "\n" : "",
            json_object_get_string(
                get(json_object_array_get_idx(ref, i), "error")));
  if (n > 20)
    fprintf(f, "\n(and %zu more)", n - 20);
  fclose(f);
  return buf;
}

/* The common ending of the tools that add strokes: done, the message, the
 * image, the outcome. source names the input ("paths", "generated paths")
 * in messages. */
int drw_finish_add(atl_call_t *call, json_object *result, long drawn,
                   size_t given, int done, const char *source);
int drw_finish_add(atl_call_t *call, json_object *result, long drawn,
                   size_t given, int done, const char *source) {
  json_object *piece = drw_ns_ready(call->ns);
  if (drawn == 0 && given > 0) {
    char *why = refusals(result);
    call->host->call_error(call,
                           "Nothing was drawn: all %zu %s were refused%s. "
                           "Fix them and send them again.\n%s",
                           given, source,
                           done ? ", so the piece was not marked done" : "",
                           why ? why : "");
    free(why);
    json_object_put(result);
    return 0;
  }
  if (done) {
    if (n_strokes(piece) == 0) {
      call->host->call_error(call, "The canvas is empty, so the piece cannot "
                                   "be marked done: draw something first.");
      json_object_put(result);
      return 0;
    }
    drw_mark_done(call->ns, result);
    piece_event(call, piece, "saved");
  }
  drw_piece_summary(piece, result);
  json_object *ref = get(result, "refused");
  size_t nref = ref ? json_object_array_length(ref) : 0;
  char msg[256];
  snprintf(msg, sizeof(msg), "Drew %ld of %zu %s%s%s", drawn, given, source,
           nref ? "; the refused ones are listed in refused, each with why"
                : "",
           done ? ". The piece is marked done and saved to the gallery." : ".");
  json_object_object_add(result, "message", json_object_new_string(msg));
  if (drw_attach_canvas(call, piece, result) != 0) {
    json_object_put(result);
    return ATL_ENOMEM;
  }
  return call->host->call_result(call, result);
}

int drw_draw_paths(atl_call_t *call) {
  json_object *paths = get(call->args, "paths");
  json_object *result = json_object_new_object();
  long drawn = drw_add_paths(call, paths, 'a', result, "path");
  if (drawn < 0) {
    json_object_put(result);
    return ATL_ENOMEM;
  }
  return drw_finish_add(call, result, drawn, json_object_array_length(paths),
                        arg_bool(call, "done"), "paths");
}

int drw_view_canvas(atl_call_t *call) {
  /* Read-only: a session that never drew gets a blank first piece
   * without its namespace being made. */
  json_object *blank = NULL, *piece = drw_current(call->ns);
  if (piece == NULL) {
    blank = json_object_new_object();
    piece = drw_ns_ready(blank);
  }
  json_object *result = json_object_new_object();
  drw_piece_summary(piece, result);
  json_object_object_add(result, "title",
                         json_object_new_string(drw_piece_title(piece)));
  json_object *strokes = drw_strokes(piece);
  size_t n = n_strokes(piece), human = 0;
  for (size_t i = 0; i < n; i++) {
    const char *s =
        json_object_get_string(json_object_array_get_idx(strokes, i));
    const char *a = s ? strchr(s, ';') : NULL;
    human += a && a[1] == 'h';
  }
  json_object_object_add(result, "by_agent",
                         json_object_new_int64((int64_t)(n - human)));
  json_object_object_add(result, "by_human",
                         json_object_new_int64((int64_t)human));
  json_object_object_add(
      result, "human_color",
      json_object_new_string(drw_piece_mode(piece) == CV_PAINT
                                 ? "rose (#e94560)"
                                 : "blue (#0066cc)"));
  json_object_object_add(
      result, "done",
      json_object_new_boolean(json_object_get_boolean(get(piece, "done"))));
  int rc = drw_attach_canvas(call, piece, result);
  json_object_put(blank);
  if (rc != 0) {
    json_object_put(result);
    return ATL_ENOMEM;
  }
  return call->host->call_result(call, result);
}

int drw_mark_piece_done(atl_call_t *call) {
  json_object *piece = drw_ns_ready(call->ns);
  if (n_strokes(piece) == 0)
    return call->host->call_error(call,
                                  "The canvas is empty, so there is no piece "
                                  "to mark done: draw something first.");
  int again = get(piece, "saved_ms") != NULL;
  json_object *result = json_object_new_object();
  drw_mark_done(call->ns, result);
  drw_piece_summary(piece, result);
  json_object_object_add(result, "title",
                         json_object_new_string(drw_piece_title(piece)));
  json_object_object_add(
      result, "message",
      json_object_new_string(
          again ? "The piece was saved before; its gallery entry now has "
                  "the canvas as it is. The canvas stays."
                : "The piece is marked done and saved to the gallery. The "
                  "canvas stays; new_canvas starts the next piece."));
  piece_event(call, piece, "saved");
  return call->host->call_result(call, result);
}

int drw_new_canvas(atl_call_t *call) {
  json_object *ns = call->ns;
  json_object *piece = drw_ns_ready(ns);
  json_object *mode_arg = get(call->args, "mode");
  cv_mode_t mode =
      mode_arg ? (cv_mode_t)cv_mode_parse(json_object_get_string(mode_arg))
               : drw_piece_mode(piece);
  json_object *result = json_object_new_object();
  if (n_strokes(piece) == 0) {
    /* Nothing to save: the blank canvas only changes mode. */
    json_object_object_add(piece, "mode",
                           json_object_new_string(cv_mode_name(mode)));
    json_object_object_add(result, "saved_piece", NULL);
  } else {
    if (get(piece, "saved_ms") == NULL) {
      json_object_object_add(piece, "saved_ms",
                             json_object_new_int64(drw_now_ms()));
      piece_event(call, piece, "saved");
    }
    json_object_object_add(result, "saved_piece",
                           json_object_new_int64(drw_piece_number(piece)));
    json_object *pieces = get(ns, "pieces");
    piece = drw_new_piece(drw_piece_number(piece) + 1, mode);
    json_object_array_add(pieces, piece);
  }
  piece_event(call, piece, "new");
  drw_piece_summary(piece, result);
  char msg[200];
  snprintf(msg, sizeof(msg), "A blank canvas for piece %ld, in %s mode.",
           drw_piece_number(piece), cv_mode_name(mode));
  json_object_object_add(result, "message", json_object_new_string(msg));
  return call->host->call_result(call, result);
}

/* ---- the signature ---- */

/* "Atelier" in a hand of our own, in a box 100 wide and 42 high, one svg
 * path per letter and one for the flourish. */
static const char *const SIGNATURE[] = {
    "M0 30 L10 2 L20 30 M4.5 19 L15.5 19",
    "M26 4 L26 27 Q26 31 30.5 30 M22 12 L31 12",
    "M36 22 L46 22 A6 6 0 1 0 44 28",
    "M52 1 L52 27 Q52 31 55.5 30",
    "M60 13 L60 30 M60 5.5 L60 6.5",
    "M66 22 L76 22 A6 6 0 1 0 74 28",
    "M82 30 L82 13 M82 19 Q86 11.5 92 12.5",
    "M-2 37 c30 6 70 -4 104 0",
};

static char *transform(const char *d, double s, double ox, double oy) {
  dp_path_t p = {0};
  dp_error_t e;
  if (dp_parse(d, strlen(d), &p, &e) != 0) {
    dp_path_free(&p);
    return NULL;
  }
  size_t k = 0;
  for (size_t i = 0; i < p.n_ops; i++) {
    double *v = p.v + k;
    int n = dp_op_arity[p.ops[i]];
    if (p.ops[i] == DP_ARC) {
      v[0] *= s;
      v[1] *= s;
      v[5] = v[5] * s + ox;
      v[6] = v[6] * s + oy;
    } else {
      for (int j = 0; j < n; j += 2) {
        v[j] = v[j] * s + ox;
        v[j + 1] = v[j + 1] * s + oy;
      }
    }
    k += (size_t)n;
  }
  char *out = dp_format(&p);
  dp_path_free(&p);
  return out;
}

int drw_sign_canvas(atl_call_t *call) {
  const char *pos = json_object_get_string(get(call->args, "position"));
  const char *size = json_object_get_string(get(call->args, "size"));
  json_object *color = get(call->args, "color");
  json_object *piece = drw_ns_ready(call->ns);
  cv_mode_t mode = drw_piece_mode(piece);
  char hex[8];
  if (color && cv_color_parse(json_object_get_string(color), hex) != 0)
    return call->host->call_error(
        call,
        "color '%s' is not a palette name (dark, rose, violet, teal, gold, "
        "coral, green, blue, orange, purple, white) or #rrggbb",
        json_object_get_string(color));
  double s = strcmp(size, "small") == 0   ? 0.8
             : strcmp(size, "large") == 0 ? 1.6
                                          : 1.2;
  double w = 104 * s, h = 42 * s, margin = 20;
  double ox = strcmp(pos, "bottom_left") == 0     ? margin
              : strcmp(pos, "bottom_center") == 0 ? (CV_WIDTH - w) / 2
                                                  : CV_WIDTH - margin - w;
  double oy = CV_HEIGHT - margin - h;
  json_object *paths = json_object_new_array();
  for (size_t i = 0; i < sizeof(SIGNATURE) / sizeof(SIGNATURE[0]); i++) {
    char *d = transform(SIGNATURE[i], s, ox + 2 * s, oy);
    if (d == NULL) {
      json_object_put(paths);
      return ATL_ENOMEM;
    }
    json_object *p = json_object_new_object();
    json_object_object_add(p, "type", json_object_new_string("svg"));
    json_object_object_add(p, "d", json_object_new_string(d));
    free(d);
    if (mode == CV_PAINT) {
      json_object_object_add(p, "color",
                             json_object_new_string(color ? hex : "#1a1a2e"));
      json_object_object_add(p, "stroke_width",
                             json_object_new_double(1.5 * s));
      json_object_object_add(p, "opacity", json_object_new_double(0.85));
    }
    json_object_array_add(paths, p);
  }
  json_object *result = json_object_new_object();
  long drawn = drw_add_paths(call, paths, 'a', result, "signature stroke");
  size_t given = json_object_array_length(paths);
  json_object_put(paths);
  if (drawn < 0) {
    json_object_put(result);
    return ATL_ENOMEM;
  }
  json_object_object_add(result, "position", json_object_new_string(pos));
  json_object_object_add(result, "size", json_object_new_string(size));
  return drw_finish_add(call, result, drawn, given, 0, "signature strokes");
}

/* The number of UTF-8 characters of s (bytes that do not continue one). */
static size_t utf8_chars(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    n += ((unsigned char)*s & 0xc0) != 0x80;
  return n;
}

int drw_name_piece(atl_call_t *call) {
  const char *raw = json_object_get_string(get(call->args, "title"));
  while (*raw == ' ' || *raw == '\t' || *raw == '\n' || *raw == '\r')
    raw++;
  size_t len = strlen(raw);
  while (len > 0 && (raw[len - 1] == ' ' || raw[len - 1] == '\t' ||
                     raw[len - 1] == '\n' || raw[len - 1] == '\r'))
    len--;
  if (len == 0)
    return call->host->call_error(
        call, "The title is empty (or only whitespace); give 1 to 100 "
              "characters, e.g. \"Harbour at Dusk\".");
  char *title = strndup(raw, len);
  if (title == NULL)
    return ATL_ENOMEM;
  size_t chars = utf8_chars(title);
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)title[i] < 0x20) {
      free(title);
      return call->host->call_error(call, "The title must be one line of "
                                          "text, without control characters.");
    }
  if (chars > 100) {
    free(title);
    return call->host->call_error(
        call, "The title has %zu characters after trimming; at most 100.",
        chars);
  }
  json_object *piece = drw_ns_ready(call->ns);
  json_object_object_add(piece, "title", json_object_new_string(title));
  json_object *result = json_object_new_object();
  drw_piece_summary(piece, result);
  json_object_object_add(result, "title", json_object_new_string(title));
  free(title);
  piece_event(call, piece, "named");
  return call->host->call_result(call, result);
}

/* ---- the human's strokes ---- */

/* A token bucket per session: a burst of HUMAN_BURST strokes, then
 * HUMAN_RATE a second. A person drawing never comes near it; a script
 * flooding the canvas through the API does. */
#define HUMAN_BURST 30.0
#define HUMAN_RATE 5.0

static int human_allowed(drw_state_t *st, const char *sid) {
  int64_t now = drw_now_ms();
  pthread_mutex_lock(&st->lock);
  drw_bucket_t *b = NULL, *oldest = &st->buckets[0];
  for (int i = 0; i < DRW_BUCKETS; i++) {
    if (strcmp(st->buckets[i].sid, sid) == 0) {
      b = &st->buckets[i];
      break;
    }
    if (st->buckets[i].last_ms < oldest->last_ms)
      oldest = &st->buckets[i];
  }
  if (b == NULL) {
    b = oldest;
    snprintf(b->sid, sizeof(b->sid), "%s", sid);
    b->tokens = HUMAN_BURST;
    b->last_ms = now;
  }
  b->tokens += (double)(now - b->last_ms) / 1000.0 * HUMAN_RATE;
  if (b->tokens > HUMAN_BURST)
    b->tokens = HUMAN_BURST;
  b->last_ms = now;
  int ok = b->tokens >= 1;
  if (ok)
    b->tokens -= 1;
  pthread_mutex_unlock(&st->lock);
  return ok;
}

int drw_add_human_stroke(atl_call_t *call) {
  if (!human_allowed(call->plugin_state, call->session_id))
    return call->host->call_error(call,
                                  "Drawing too fast: at most %.0f strokes a "
                                  "second after a burst of %.0f. Slow down a "
                                  "little.",
                                  HUMAN_RATE, HUMAN_BURST);
  json_object *pts = get(call->args, "points");
  json_object *path = json_object_new_object();
  json_object_object_add(path, "type", json_object_new_string("polyline"));
  json_object *copy = json_object_new_array();
  size_t n = json_object_array_length(pts);
  for (size_t i = 0; i < n; i++)
    json_object_array_add(copy,
                          json_object_get(json_object_array_get_idx(pts, i)));
  /* A tap is a dot: a line of no length, which round caps draw. */
  if (n == 1)
    json_object_array_add(copy,
                          json_object_get(json_object_array_get_idx(pts, 0)));
  json_object_object_add(path, "points", copy);
  static const char *const style[] = {"color", "stroke_width", "opacity"};
  json_object *piece = drw_ns_ready(call->ns);
  for (size_t i = 0; i < 3 && drw_piece_mode(piece) == CV_PAINT; i++) {
    json_object *v = get(call->args, style[i]);
    if (v)
      json_object_object_add(path, style[i], json_object_get(v));
  }
  json_object *paths = json_object_new_array();
  json_object_array_add(paths, path);
  json_object *result = json_object_new_object();
  long drawn = drw_add_paths(call, paths, 'h', result, "stroke");
  json_object_put(paths);
  if (drawn < 0) {
    json_object_put(result);
    return ATL_ENOMEM;
  }
  if (drawn == 0) {
    char *why = refusals(result);
    call->host->call_error(call, "%s", why ? why : "the stroke was refused");
    free(why);
    json_object_put(result);
    return 0;
  }
  drw_piece_summary(piece, result);
  return call->host->call_result(call, result);
}
