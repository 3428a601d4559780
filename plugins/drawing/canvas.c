/* The canvas model: styles, palette, brushes, packed strokes and the
 * validation of a path object (canvas.h). */
#include "canvas.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *cv_mode_name(cv_mode_t m) {
  return m == CV_PAINT ? "paint" : "plotter";
}

int cv_mode_parse(const char *s) {
  if (s == NULL)
    return -1;
  if (strcmp(s, "plotter") == 0)
    return CV_PLOTTER;
  if (strcmp(s, "paint") == 0)
    return CV_PAINT;
  return -1;
}

/* Code Monet's paint palette, by the names its code gives them. */
const cv_color_t cv_palette[] = {
    {"dark", "#1a1a2e"},   {"rose", "#e94560"},  {"violet", "#7b68ee"},
    {"teal", "#4ecdc4"},   {"gold", "#ffd93d"},  {"coral", "#ff6b6b"},
    {"green", "#4ade80"},  {"blue", "#3b82f6"},  {"orange", "#f97316"},
    {"purple", "#a855f7"}, {"white", "#ffffff"}, {"crimson", "#e94560"},
};
const size_t cv_palette_len = sizeof(cv_palette) / sizeof(cv_palette[0]);

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = (char)(c | 0x20);
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

int cv_color_parse(const char *s, char out[8]) {
  if (s == NULL)
    return -1;
  if (s[0] == '#') {
    if (strlen(s) != 7)
      return -1;
    out[0] = '#';
    for (int i = 1; i < 7; i++) {
      if (hexval(s[i]) < 0)
        return -1;
      out[i] = (char)(s[i] | (s[i] >= 'A' ? 0x20 : 0));
    }
    out[7] = '\0';
    return 0;
  }
  for (size_t i = 0; i < cv_palette_len; i++)
    if (strcasecmp(s, cv_palette[i].name) == 0) {
      memcpy(out, cv_palette[i].hex, 8);
      return 0;
    }
  return -1;
}

/* Code Monet's twelve presets (bristles, opacities, base widths and edge
 * noise are its figures); the spread and the bristles' widths are ours. */
const cv_brush_t cv_brushes[] = {
    {"oil_round", "the default oil brush: soft bristle texture", 5, 0.8, 0.25,
     0.5, 0.75, 10, 0},
    {"oil_flat", "broad, even strokes for blocking in", 8, 1.0, 0.2, 0.5, 0.8,
     12, 0},
    {"oil_filbert", "rounded strokes for petals and leaves", 6, 0.85, 0.22, 0.5,
     0.78, 10, 0},
    {"watercolor", "wide translucent washes", 0, 0, 0, 0, 0.35, 14, 0.15},
    {"dry_brush", "broken, scratchy texture", 12, 1.1, 0.12, 0.6, 0.3, 10,
     0.05},
    {"palette_knife", "thick opaque slabs", 0, 0, 0, 0, 0.95, 16, 0.05},
    {"ink", "crisp calligraphic lines", 0, 0, 0, 0, 0.9, 6, 0},
    {"pencil", "thin sketch and outline lines", 0, 0, 0, 0, 0.85, 2, 0},
    {"charcoal", "smudgy, grainy shading", 3, 0.7, 0.3, 0.45, 0.6, 5, 0.1},
    {"marker", "flat, even, slightly transparent", 0, 0, 0, 0, 0.75, 8, 0},
    {"airbrush", "soft, very transparent gradients", 0, 0, 0, 0, 0.25, 20, 0},
    {"splatter", "scattered droplets around the stroke", 20, 2.0, 0.15, 0.5,
     0.5, 8, 0.3},
};
const size_t cv_brushes_len = sizeof(cv_brushes) / sizeof(cv_brushes[0]);

int cv_brush_find(const char *name) {
  if (name == NULL)
    return -1;
  for (size_t i = 0; i < cv_brushes_len; i++)
    if (strcmp(name, cv_brushes[i].name) == 0)
      return (int)i;
  return -1;
}

/* ---- packing ---- */

static void fmt_num(char *buf, size_t size, double v) {
  snprintf(buf, size, "%.4g", v);
}

char *cv_stroke_pack(const cv_stroke_t *s) {
  char w[32] = "", o[32] = "";
  if (s->width > 0)
    fmt_num(w, sizeof(w), s->width);
  if (s->opacity >= 0)
    fmt_num(o, sizeof(o), s->opacity);
  const char *b = s->brush >= 0 ? cv_brushes[s->brush].name : "";
  char *out = NULL;
  if (asprintf(&out, "%u;%c;%s;%s;%s;%s;%s", s->id, s->author, s->color, w, o,
               b, s->d ? s->d : "") < 0)
    return NULL;
  return out;
}

void cv_stroke_clear(cv_stroke_t *s) {
  free(s->d);
  s->d = NULL;
}

int cv_stroke_unpack(const char *text, cv_stroke_t *out) {
  memset(out, 0, sizeof(*out));
  out->opacity = -1;
  out->brush = -1;
  const char *f[7];
  size_t len[7];
  const char *p = text;
  for (int i = 0; i < 6; i++) {
    const char *q = strchr(p, ';');
    if (q == NULL)
      return -1;
    f[i] = p;
    len[i] = (size_t)(q - p);
    p = q + 1;
  }
  f[6] = p;
  len[6] = strlen(p);
  char *end;
  unsigned long id = strtoul(f[0], &end, 10);
  if (end != f[0] + len[0] || len[0] == 0 || id > UINT32_MAX)
    return -1;
  out->id = (uint32_t)id;
  if (len[1] != 1 || (f[1][0] != 'a' && f[1][0] != 'h'))
    return -1;
  out->author = f[1][0];
  if (len[2] == 7) {
    memcpy(out->color, f[2], 7);
    out->color[7] = '\0';
  } else if (len[2] != 0) {
    return -1;
  }
  if (len[3]) {
    out->width = strtod(f[3], &end);
    if (end != f[3] + len[3] || !(out->width > 0))
      return -1;
  }
  if (len[4]) {
    out->opacity = strtod(f[4], &end);
    if (end != f[4] + len[4] || !(out->opacity >= 0 && out->opacity <= 1))
      return -1;
  }
  if (len[5]) {
    char name[32];
    if (len[5] >= sizeof(name))
      return -1;
    memcpy(name, f[5], len[5]);
    name[len[5]] = '\0';
    out->brush = cv_brush_find(name);
    if (out->brush < 0)
      return -1;
  }
  out->d = strdup(f[6]);
  return out->d ? 0 : -1;
}

/* ---- ink ---- */

static void hex_rgb(const char *hex, cv_ink_t *o) {
  o->r = (hexval(hex[1]) * 16 + hexval(hex[2])) / 255.0;
  o->g = (hexval(hex[3]) * 16 + hexval(hex[4])) / 255.0;
  o->b = (hexval(hex[5]) * 16 + hexval(hex[6])) / 255.0;
}

void cv_stroke_ink(const cv_stroke_t *s, cv_mode_t mode, int highlight_human,
                   cv_ink_t *o) {
  int human = s->author == 'h';
  if (mode == CV_PLOTTER) {
    /* The plotter has two pens: the agent's and the human's. */
    hex_rgb(human ? CV_HUMAN_PLOTTER : CV_PLOTTER_COLOR, o);
    o->a = 1;
    o->width = CV_PLOTTER_WIDTH;
    return;
  }
  const char *c = s->color[0] ? s->color
                  : human     ? CV_HUMAN_PAINT
                              : CV_PAINT_COLOR;
  if (human && highlight_human)
    c = CV_HUMAN_PAINT;
  hex_rgb(c, o);
  o->a = s->opacity >= 0 ? s->opacity : CV_PAINT_OPACITY;
  o->width = s->width > 0    ? s->width
             : s->brush >= 0 ? cv_brushes[s->brush].base_width
                             : CV_PAINT_WIDTH;
}

/* ---- brushes ---- */

#define BRISTLE_POINTS 2000

/* splitmix64: a small, well-mixed generator, so that a stroke's id alone
 * fixes its bristles. */
static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double uniform(uint64_t *s) {
  return (double)(mix(s) >> 11) / 9007199254740992.0;
}

typedef struct {
  double *xy;
  uint8_t *starts;
  size_t n, cap;
  int failed;
} pts_t;

static void pts_add(void *u, double x, double y, int starts) {
  pts_t *p = u;
  if (p->failed)
    return;
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 64;
    double *xy = realloc(p->xy, cap * 2 * sizeof(double));
    if (xy == NULL) {
      p->failed = 1;
      return;
    }
    p->xy = xy;
    uint8_t *st = realloc(p->starts, cap);
    if (st == NULL) {
      p->failed = 1;
      return;
    }
    p->starts = st;
    p->cap = cap;
  }
  p->xy[2 * p->n] = x;
  p->xy[2 * p->n + 1] = y;
  p->starts[p->n] = (uint8_t)starts;
  p->n++;
}

int cv_stroke_parts(const cv_stroke_t *s, const dp_path_t *p, cv_mode_t mode,
                    void (*part)(void *u, const cv_part_t *part), void *u) {
  cv_ink_t ink;
  cv_stroke_ink(s, mode, 0, &ink);
  const cv_brush_t *b =
      mode == CV_PAINT && s->brush >= 0 ? &cv_brushes[s->brush] : NULL;
  cv_part_t main = {p, ink.width, b ? b->main_opacity : 1};
  part(u, &main);
  if (b == NULL || b->bristles == 0)
    return 0;

  pts_t pts = {0};
  dp_flatten(p, 0.5, pts_add, &pts);
  if (pts.failed) {
    free(pts.xy);
    free(pts.starts);
    return -1;
  }
  /* A bristle follows the stroke at most BRISTLE_POINTS points: the
   * events and the page get every bristle's path, and 20 bristles of a
   * 100,000-point polyline would be 35 MB. */
  size_t every = pts.n > BRISTLE_POINTS
                     ? (pts.n + BRISTLE_POINTS - 1) / BRISTLE_POINTS
                     : 1;
  uint64_t seed = 0x5eed0000ull ^ s->id;
  dp_path_t bp = {0};
  int rc = 0;
  for (int j = 0; j < b->bristles && rc == 0; j++) {
    double base = ((j + 0.5) / b->bristles - 0.5) * b->spread * ink.width;
    double off = base * (0.9 + 0.2 * uniform(&seed));
    double op = b->bristle_opacity * (0.8 + 0.4 * uniform(&seed));
    dp_path_clear(&bp);
    for (size_t i = 0; i < pts.n && rc == 0; i++) {
      /* Subpath starts and ends are always kept. */
      if (every > 1 && i % every != 0 && !pts.starts[i] &&
          !(i + 1 == pts.n || pts.starts[i + 1]))
        continue;
      /* The normal from the neighbours within the subpath. */
      size_t a = i > 0 && !pts.starts[i] ? i - 1 : i;
      size_t c = i + 1 < pts.n && !pts.starts[i + 1] ? i + 1 : i;
      double dx = pts.xy[2 * c] - pts.xy[2 * a];
      double dy = pts.xy[2 * c + 1] - pts.xy[2 * a + 1];
      double len = hypot(dx, dy);
      double nx = len > 0 ? -dy / len : 0, ny = len > 0 ? dx / len : 0;
      double o =
          off +
          (b->noise > 0 ? (uniform(&seed) - 0.5) * b->noise * ink.width : 0);
      double v[2] = {pts.xy[2 * i] + nx * o, pts.xy[2 * i + 1] + ny * o};
      rc = dp_path_add(&bp, pts.starts[i] ? DP_MOVE : DP_LINE, v);
    }
    if (rc == 0) {
      cv_part_t br = {&bp, ink.width * b->bristle_ratio, op};
      part(u, &br);
    }
  }
  dp_path_free(&bp);
  free(pts.xy);
  free(pts.starts);
  return rc;
}

/* ---- validation ---- */

static const char *const TYPES = "line, polyline, quadratic, cubic or svg";

static int bad(char *err, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, size, fmt, ap);
  va_end(ap);
  return -1;
}

/* The number a JSON value holds, for messages ("NaN", "45", "\"7\""). */
static const char *shown(json_object *v) {
  return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
}

static int read_point(json_object *pt, size_t i, double out[2], char *err,
                      size_t size) {
  if (!json_object_is_type(pt, json_type_object))
    return bad(err, size,
               "points[%zu] is %s; each point must be {\"x\": number, "
               "\"y\": number}",
               i, shown(pt));
  static const char *const axes[2] = {"x", "y"};
  for (int k = 0; k < 2; k++) {
    json_object *v;
    if (!json_object_object_get_ex(pt, axes[k], &v))
      return bad(err, size,
                 "points[%zu] has no %s; each point must be "
                 "{\"x\": number, \"y\": number}",
                 i, axes[k]);
    if (!json_object_is_type(v, json_type_double) &&
        !json_object_is_type(v, json_type_int))
      return bad(err, size, "points[%zu].%s is %s; it must be a number", i,
                 axes[k], shown(v));
    out[k] = json_object_get_double(v);
    if (!isfinite(out[k]))
      return bad(err, size,
                 "points[%zu].%s is %s; every coordinate must be a finite "
                 "number",
                 i, axes[k], isnan(out[k]) ? "NaN" : "infinite");
  }
  json_object_object_foreach(pt, key, val) {
    (void)val;
    if (strcmp(key, "x") != 0 && strcmp(key, "y") != 0)
      return bad(err, size,
                 "points[%zu] has an unknown member '%s'; a point "
                 "is {\"x\": number, \"y\": number}",
                 i, key);
  }
  return 0;
}

static int style_number(json_object *v, const char *name, double lo, double hi,
                        double *out, char *err, size_t size) {
  if (!json_object_is_type(v, json_type_double) &&
      !json_object_is_type(v, json_type_int))
    return bad(err, size, "%s is %s; it must be a number from %g to %g", name,
               shown(v), lo, hi);
  double x = json_object_get_double(v);
  if (!isfinite(x) || x < lo || x > hi)
    return bad(err, size, "%s %s is out of range; it must be from %g to %g",
               name,
               isfinite(x) ? shown(v)
               : isnan(x)  ? "NaN"
                           : "infinity",
               lo, hi);
  *out = x;
  return 0;
}

static int read_style(json_object *obj, cv_stroke_t *out, char *err,
                      size_t size) {
  json_object *v;
  if (json_object_object_get_ex(obj, "color", &v)) {
    if (!json_object_is_type(v, json_type_string) ||
        cv_color_parse(json_object_get_string(v), out->color) != 0)
      return bad(err, size,
                 "color %s is not a palette name (dark, rose, violet, teal, "
                 "gold, coral, green, blue, orange, purple, white) or "
                 "#rrggbb",
                 shown(v));
  }
  if (json_object_object_get_ex(obj, "stroke_width", &v) &&
      style_number(v, "stroke_width", CV_MIN_WIDTH, CV_MAX_WIDTH, &out->width,
                   err, size) != 0)
    return -1;
  if (json_object_object_get_ex(obj, "opacity", &v) &&
      style_number(v, "opacity", 0, 1, &out->opacity, err, size) != 0)
    return -1;
  if (json_object_object_get_ex(obj, "brush", &v)) {
    out->brush = json_object_is_type(v, json_type_string)
                     ? cv_brush_find(json_object_get_string(v))
                     : -1;
    if (out->brush < 0) {
      char list[400] = "";
      for (size_t i = 0; i < cv_brushes_len; i++) {
        strcat(list, i ? ", " : "");
        strcat(list, cv_brushes[i].name);
      }
      return bad(err, size, "brush %s is not one of %s", shown(v), list);
    }
  }
  return 0;
}

int cv_path_from_json(json_object *obj, cv_mode_t mode, cv_stroke_t *out,
                      dp_path_t *path, int *clipped, dp_box_t *box, int *styled,
                      char *err, size_t size) {
  memset(out, 0, sizeof(*out));
  out->author = 'a';
  out->opacity = -1;
  out->brush = -1;
  *clipped = 0;
  *styled = 0;
  dp_path_clear(path);
  if (!json_object_is_type(obj, json_type_object))
    return bad(err, size,
               "is %s; each path must be an object such as {\"type\": "
               "\"line\", \"points\": [{\"x\": 100, \"y\": 100}, {\"x\": 200, "
               "\"y\": 200}]}",
               shown(obj));
  json_object_object_foreach(obj, key, val) {
    (void)val;
    static const char *const known[] = {
        "type", "points", "d", "color", "stroke_width", "opacity", "brush"};
    int ok = 0;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
      ok |= strcmp(key, known[i]) == 0;
    if (!ok)
      return bad(err, size,
                 "unknown member '%s'; a path has type, points (or d for "
                 "svg), color, stroke_width, opacity and brush",
                 key);
  }
  json_object *t, *pts, *d;
  if (!json_object_object_get_ex(obj, "type", &t))
    return bad(err, size, "has no type; it must be %s", TYPES);
  const char *type =
      json_object_is_type(t, json_type_string) ? json_object_get_string(t) : "";
  int need = 0, at_least = 0;
  if (strcmp(type, "line") == 0)
    need = 2;
  else if (strcmp(type, "polyline") == 0)
    at_least = 2;
  else if (strcmp(type, "quadratic") == 0)
    need = 3;
  else if (strcmp(type, "cubic") == 0)
    need = 4;
  else if (strcmp(type, "svg") != 0)
    return bad(err, size,
               "type %s is not one of %s (a circle or an arc is an svg path "
               "with 'A' commands)",
               shown(t), TYPES);
  int has_pts = json_object_object_get_ex(obj, "points", &pts);
  int has_d = json_object_object_get_ex(obj, "d", &d);
  if (need == 0 && at_least == 0) {
    if (has_pts)
      return bad(err, size, "an svg path takes d, not points");
    if (!has_d || !json_object_is_type(d, json_type_string))
      return bad(err, size,
                 "an svg path needs d, a string of SVG path data "
                 "such as \"M 100 100 C 150 50 250 50 300 100\"");
    dp_error_t pe;
    if (dp_parse(json_object_get_string(d),
                 (size_t)json_object_get_string_len(d), path, &pe) != 0)
      return bad(err, size, "d: %s", pe.msg);
  } else {
    if (has_d)
      return bad(err, size, "a %s path takes points, not d (d is for type svg)",
                 type);
    if (!has_pts || !json_object_is_type(pts, json_type_array))
      return bad(err, size,
                 "a %s path needs points, an array of {\"x\": number, \"y\": "
                 "number}",
                 type);
    size_t n = json_object_array_length(pts);
    if ((need && n != (size_t)need) || (at_least && n < (size_t)at_least))
      return bad(err, size, "a %s needs %s%d points, got %zu", type,
                 at_least ? "at least " : "", need ? need : at_least, n);
    if (n > 100000)
      return bad(err, size, "a polyline takes at most 100000 points, got %zu",
                 n);
    double v[8];
    for (size_t i = 0; i < n && i < 4 && need; i++)
      if (read_point(json_object_array_get_idx(pts, i), i, &v[2 * i], err,
                     size) != 0)
        return -1;
    int rc = 0;
    if (need == 2) {
      rc = dp_path_add(path, DP_MOVE, v) | dp_path_add(path, DP_LINE, v + 2);
    } else if (need == 3) {
      rc = dp_path_add(path, DP_MOVE, v) | dp_path_add(path, DP_QUAD, v + 2);
    } else if (need == 4) {
      rc = dp_path_add(path, DP_MOVE, v) | dp_path_add(path, DP_CUBIC, v + 2);
    } else {
      for (size_t i = 0; i < n && rc == 0; i++) {
        if (read_point(json_object_array_get_idx(pts, i), i, v, err, size) != 0)
          return -1;
        rc = dp_path_add(path, i == 0 ? DP_MOVE : DP_LINE, v);
      }
    }
    if (rc != 0)
      return bad(err, size, "out of memory");
  }
  int has_style = json_object_object_get_ex(obj, "color", NULL) ||
                  json_object_object_get_ex(obj, "stroke_width", NULL) ||
                  json_object_object_get_ex(obj, "opacity", NULL) ||
                  json_object_object_get_ex(obj, "brush", NULL);
  if (mode == CV_PAINT) {
    if (read_style(obj, out, err, size) != 0)
      return -1;
  } else {
    *styled = has_style;
  }
  if (dp_bounds(path, box) != 0)
    return bad(err, size, "draws nothing");
  /* Far-off geometry is a mistake (a unit slip, an overflowed formula),
   * not a drawing: nothing of it would show. */
  if (!(box->x0 >= -CV_FAR && box->y0 >= -CV_FAR && box->x1 <= CV_FAR &&
        box->y1 <= CV_FAR))
    return bad(err, size,
               "reaches x %g to %g, y %g to %g: coordinates must stay within "
               "-%d to %d (the canvas is x 0-800, y 0-600)",
               box->x0, box->x1, box->y0, box->y1, CV_FAR, CV_FAR);
  *clipped =
      box->x0 < 0 || box->y0 < 0 || box->x1 > CV_WIDTH || box->y1 > CV_HEIGHT;
  out->d = dp_format(path);
  if (out->d == NULL)
    return bad(err, size, "out of memory");
  /* The stored form is absolute and explicit, so short relative data
   * ("v1v-1h1h-1") grows; it must still be data the parser takes. */
  if (strlen(out->d) > DP_MAX_BYTES)
    return bad(err, size,
               "is %zu bytes once made absolute, more than a stroke may "
               "hold (%u): split it into several paths",
               strlen(out->d), DP_MAX_BYTES);
  return 0;
}
