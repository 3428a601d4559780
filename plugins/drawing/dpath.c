/* SVG path data: parsing, the canonical form and geometry (dpath.h).
 *
 * The parser is a single pass over the bytes with a hand-written number
 * reader: strtod() alone would cap it near 60 MB/s, and the drawing tools
 * take megabytes of path data per call. Most numbers (up to 19 significant
 * digits, a decimal exponent within ±22) are exact in one multiplication
 * or division of two doubles (Clinger's fast path), so they come out
 * correctly rounded like strtod's; the rest go to strtod(). */
#include "dpath.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const uint8_t dp_op_arity[6] = {2, 2, 4, 6, 7, 0};

/* ---- the path ---- */

void dp_path_free(dp_path_t *p) {
  free(p->ops);
  free(p->v);
  memset(p, 0, sizeof(*p));
}

void dp_path_clear(dp_path_t *p) {
  p->n_ops = 0;
  p->n_v = 0;
}

static int grow(void **buf, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return 0;
  size_t n = *cap ? *cap * 2 : 16;
  while (n < need)
    n *= 2;
  void *b = realloc(*buf, n * elem);
  if (b == NULL)
    return -1;
  *buf = b;
  *cap = n;
  return 0;
}

int dp_path_add(dp_path_t *p, dp_op_t op, const double *v) {
  size_t k = dp_op_arity[op];
  if (p->n_ops >= DP_MAX_OPS ||
      grow((void **)&p->ops, &p->cap_ops, p->n_ops + 1, 1) != 0 ||
      grow((void **)&p->v, &p->cap_v, p->n_v + k, sizeof(double)) != 0)
    return -1;
  p->ops[p->n_ops++] = (uint8_t)op;
  for (size_t i = 0; i < k; i++)
    p->v[p->n_v++] = v[i];
  return 0;
}

/* ---- the parser ---- */

typedef struct {
  const char *s;
  size_t i, n;
  dp_error_t *err;
} lex_t;

static inline int is_wsp(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static inline void skip_wsp(lex_t *l) {
  while (l->i < l->n && is_wsp(l->s[l->i]))
    l->i++;
}

/* comma-wsp: wsp* ","? wsp*. Returns 1 when a comma was read. */
static inline int skip_comma_wsp(lex_t *l) {
  skip_wsp(l);
  if (l->i < l->n && l->s[l->i] == ',') {
    l->i++;
    skip_wsp(l);
    return 1;
  }
  return 0;
}

static inline int number_starts(const lex_t *l) {
  if (l->i >= l->n)
    return 0;
  char c = l->s[l->i];
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.';
}

/* "unexpected 'X' at offset 17" or "unexpected end at offset 20". */
static int fail(lex_t *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail(lex_t *l, const char *fmt, ...) {
  char what[64];
  if (l->i >= l->n)
    snprintf(what, sizeof(what), "unexpected end at offset %zu", l->n);
  else {
    unsigned char c = (unsigned char)l->s[l->i];
    if (c >= 0x21 && c < 0x7f && c != '\'')
      snprintf(what, sizeof(what), "unexpected '%c' at offset %zu", c, l->i);
    else
      snprintf(what, sizeof(what), "unexpected byte 0x%02x at offset %zu", c,
               l->i);
  }
  l->err->offset = l->i < l->n ? l->i : l->n;
  va_list ap;
  va_start(ap, fmt);
  char why[176];
  vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  snprintf(l->err->msg, sizeof(l->err->msg), "%s; %s", what, why);
  return -1;
}

static const double pow10_tab[23] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Reads one number of the grammar: sign? (digits ("." digits?)? | "."
 * digits) exponent?. Returns 0, 1 when no number starts here (the caller
 * says what was expected), or -1 with err filled. */
static int read_number(lex_t *l, double *out) {
  const char *s = l->s;
  size_t i = l->i, n = l->n, start = i;
  int neg = 0;
  if (i < n && (s[i] == '-' || s[i] == '+')) {
    neg = s[i] == '-';
    i++;
  }
  uint64_t m = 0;
  int digits = 0, dropped = 0, frac = 0, any = 0;
  while (i < n && (unsigned)(s[i] - '0') < 10) {
    if (digits < 19) {
      m = m * 10 + (uint64_t)(s[i] - '0');
      if (m)
        digits++;
    } else {
      dropped++;
    }
    i++;
    any = 1;
  }
  if (i < n && s[i] == '.') {
    size_t dot = i++;
    int fd = 0;
    while (i < n && (unsigned)(s[i] - '0') < 10) {
      if (digits < 19) {
        m = m * 10 + (uint64_t)(s[i] - '0');
        if (m)
          digits++;
        frac++;
      }
      i++;
      fd = 1;
    }
    if (!any && !fd) {
      l->i = dot + 1;
      return fail(l, "expected a digit after '.'");
    }
    any = 1;
  }
  if (!any) {
    if (i > start) { /* a lone sign */
      l->i = i;
      return fail(l, "expected a digit after '%c'", s[start]);
    }
    return 1;
  }
  int e = 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    int eneg = 0;
    if (j < n && (s[j] == '-' || s[j] == '+')) {
      eneg = s[j] == '-';
      j++;
    }
    if (j >= n || (unsigned)(s[j] - '0') >= 10) {
      l->i = j;
      return fail(l, "expected the digits of the exponent of a number");
    }
    while (j < n && (unsigned)(s[j] - '0') < 10) {
      if (e < 100000)
        e = e * 10 + (s[j] - '0');
      j++;
    }
    if (eneg)
      e = -e;
    i = j;
  }
  int e10 = e - frac + dropped;
  double v;
  if (m == 0) {
    v = 0;
  } else if (m <= (1ull << 53) && e10 >= -22 && e10 <= 22) {
    v = e10 < 0 ? (double)m / pow10_tab[-e10] : (double)m * pow10_tab[e10];
  } else {
    char buf[128];
    size_t len = i - start;
    if (len >= sizeof(buf)) {
      l->i = start;
      return fail(l, "a number of %zu characters is too long (at most %zu)",
                  len, sizeof(buf) - 1);
    }
    memcpy(buf, s + start, len);
    buf[len] = '\0';
    v = strtod(buf, NULL);
    neg = 0; /* strtod read the sign */
    if (!isfinite(v)) {
      l->i = start;
      return fail(l, "the number %s is out of range", buf);
    }
  }
  *out = neg ? -v : v;
  l->i = i;
  return 0;
}

static const char *arg_names(char cmd) {
  switch (cmd | 0x20) {
  case 'm':
  case 'l':
  case 't':
    return "x y";
  case 'h':
    return "x";
  case 'v':
    return "y";
  case 'c':
    return "x1 y1 x2 y2 x y";
  case 's':
    return "x2 y2 x y";
  case 'q':
    return "x1 y1 x y";
  case 'a':
    return "rx ry x-axis-rotation large-arc-flag sweep-flag x y";
  default:
    return "";
  }
}

static int arg_count(char cmd) {
  switch (cmd | 0x20) {
  case 'm':
  case 'l':
  case 't':
    return 2;
  case 'h':
  case 'v':
    return 1;
  case 'c':
    return 6;
  case 's':
  case 'q':
    return 4;
  case 'a':
    return 7;
  default:
    return 0;
  }
}

/* The name of argument k of cmd, out of arg_names(). */
static void arg_name(char cmd, int k, char *buf, size_t size) {
  const char *p = arg_names(cmd);
  for (int i = 0; i < k && p; i++) {
    p = strchr(p, ' ');
    if (p)
      p++;
  }
  size_t len = p ? strcspn(p, " ") : 0;
  if (len >= size)
    len = size - 1;
  memcpy(buf, p ? p : "", len);
  buf[len] = '\0';
}

/* Reads the k numbers of one command's group into a. after_comma says a
 * comma came before the group (so a number is required, with that
 * wording). */
static int read_group(lex_t *l, char cmd, double *a, int after_comma) {
  int k = arg_count(cmd);
  int arc = (cmd | 0x20) == 'a';
  for (int j = 0; j < k; j++) {
    if (j > 0)
      after_comma = skip_comma_wsp(l);
    if (arc && (j == 3 || j == 4)) {
      if (l->i < l->n && (l->s[l->i] == '0' || l->s[l->i] == '1')) {
        a[j] = l->s[l->i] - '0';
        l->i++;
        continue;
      }
      char name[32];
      arg_name(cmd, j, name, sizeof(name));
      return fail(l, "expected a flag (0 or 1) for %s of '%c'", name, cmd);
    }
    int rc = read_number(l, &a[j]);
    if (rc < 0)
      return -1;
    if (rc > 0) {
      if (j == 0 && !after_comma)
        return fail(l, "expected a number after '%c'", cmd);
      if (j == 0)
        return fail(l, "expected a number after ','");
      char name[32];
      arg_name(cmd, j, name, sizeof(name));
      return fail(l, "expected a number %sfor %s of '%c' (it takes %d: %s)",
                  after_comma ? "after ',' " : "", name, cmd, k,
                  arg_names(cmd));
    }
  }
  return 0;
}

static int is_command(char c) {
  switch (c | 0x20) {
  case 'm':
  case 'z':
  case 'l':
  case 'h':
  case 'v':
  case 'c':
  case 's':
  case 'q':
  case 't':
  case 'a':
    return 1;
  default:
    return 0;
  }
}

typedef struct {
  double cx, cy;   /* current point */
  double sx, sy;   /* the subpath's start */
  double lcx, lcy; /* the last control point, for S and T */
  int last;        /* the last op: its kind for the reflection rules */
  int open;        /* a subpath has been started since the last Z */
} pen_t;

static int emit(lex_t *l, dp_path_t *out, dp_op_t op, const double *v) {
  /* Relative numbers and reflected control points are sums, which can
   * overflow though every number read was finite. */
  for (int i = 0; i < dp_op_arity[op]; i++)
    if (!isfinite(v[i])) {
      l->err->offset = l->i;
      snprintf(l->err->msg, sizeof(l->err->msg),
               "the command ending at offset %zu reaches a coordinate out of "
               "range (relative numbers add up past 1.8e308)",
               l->i);
      return -1;
    }
  if (dp_path_add(out, op, v) != 0)
    return fail(l, "the path has more than %u commands, or memory ran out",
                DP_MAX_OPS);
  return 0;
}

/* A curve's first control point into v[0..1]: given in a (C and Q, which
 * then go on past it), or for S and T the reflection of the last curve's
 * second control point when that curve was of the same kind (a C before
 * an S, a Q before a T), else the current point. Returns where the rest
 * of the numbers start. */
static const double *first_control(const pen_t *p, int given, int kind,
                                   const double *a, double ox, double oy,
                                   double *v) {
  if (given) {
    v[0] = a[0] + ox;
    v[1] = a[1] + oy;
    return a + 2;
  }
  if (p->last == kind) {
    v[0] = 2 * p->cx - p->lcx;
    v[1] = 2 * p->cy - p->lcy;
  } else {
    v[0] = p->cx;
    v[1] = p->cy;
  }
  return a;
}

/* Applies one group of command cmd (its numbers in a) to the pen and the
 * canonical path. */
static int apply(lex_t *l, dp_path_t *out, pen_t *p, char cmd,
                 const double *a) {
  int rel = cmd >= 'a';
  double ox = rel ? p->cx : 0, oy = rel ? p->cy : 0;
  double v[7];
  /* SVG 2: a command other than a moveto right after a closepath starts
   * its subpath at the closed one's start; the canonical form says so. */
  if ((cmd | 0x20) != 'm' && !p->open) {
    v[0] = p->sx;
    v[1] = p->sy;
    if (emit(l, out, DP_MOVE, v) != 0)
      return -1;
    p->open = 1;
  }
  int kind = cmd | 0x20;
  switch (kind) {
  case 'm':
    v[0] = a[0] + ox;
    v[1] = a[1] + oy;
    if (emit(l, out, DP_MOVE, v) != 0)
      return -1;
    p->sx = p->cx = v[0];
    p->sy = p->cy = v[1];
    p->open = 1;
    break;
  case 'l':
  case 'h':
  case 'v':
    v[0] = kind == 'v' ? p->cx : a[0] + ox;
    v[1] = kind == 'h' ? p->cy : kind == 'v' ? a[0] + oy : a[1] + oy;
    if (emit(l, out, DP_LINE, v) != 0)
      return -1;
    p->cx = v[0];
    p->cy = v[1];
    break;
  case 'c':
  case 's':
    a = first_control(p, kind == 'c', 'c', a, ox, oy, v);
    v[2] = a[0] + ox;
    v[3] = a[1] + oy;
    v[4] = a[2] + ox;
    v[5] = a[3] + oy;
    if (emit(l, out, DP_CUBIC, v) != 0)
      return -1;
    p->lcx = v[2];
    p->lcy = v[3];
    p->cx = v[4];
    p->cy = v[5];
    p->last = 'c';
    return 0;
  case 'q':
  case 't':
    a = first_control(p, kind == 'q', 'q', a, ox, oy, v);
    v[2] = a[0] + ox;
    v[3] = a[1] + oy;
    if (emit(l, out, DP_QUAD, v) != 0)
      return -1;
    p->lcx = v[0];
    p->lcy = v[1];
    p->cx = v[2];
    p->cy = v[3];
    p->last = 'q';
    return 0;
  case 'a':
    memcpy(v, a, 5 * sizeof(double));
    v[5] = a[5] + ox;
    v[6] = a[6] + oy;
    if (emit(l, out, DP_ARC, v) != 0)
      return -1;
    p->cx = v[5];
    p->cy = v[6];
    break;
  case 'z':
    if (emit(l, out, DP_CLOSE, v) != 0)
      return -1;
    p->cx = p->sx;
    p->cy = p->sy;
    p->open = 0;
    break;
  }
  p->last = kind;
  /* The reflection rules look at the command before only. */
  if (kind != 'c' && kind != 'q')
    p->last = 0;
  return 0;
}

int dp_parse(const char *d, size_t len, dp_path_t *out, dp_error_t *err) {
  lex_t l = {d, 0, len, err};
  pen_t pen = {0};
  err->offset = 0;
  err->msg[0] = '\0';
  if (len > DP_MAX_BYTES) {
    l.i = DP_MAX_BYTES;
    return fail(&l,
                "path data is limited to %u bytes; split the drawing "
                "into several paths",
                DP_MAX_BYTES);
  }
  skip_wsp(&l);
  if (l.i >= l.n) {
    err->offset = l.n;
    snprintf(err->msg, sizeof(err->msg),
             "the path data is empty; it must start with a moveto, e.g. "
             "\"M 100 100 L 200 200\"");
    return -1;
  }
  char c = d[l.i];
  if (c != 'M' && c != 'm')
    return fail(&l, "path data must start with a moveto ('M' or 'm')");
  double a[7];
  while (l.i < l.n) {
    char cmd = d[l.i];
    if (!is_command(cmd)) {
      if (number_starts(&l))
        return fail(&l, "'Z' takes no numbers; expected a command");
      return fail(&l, "expected a command (M L H V C S Q T A Z, or the same "
                      "in lowercase)");
    }
    l.i++;
    skip_wsp(&l);
    if ((cmd | 0x20) == 'z') {
      if (apply(&l, out, &pen, cmd, a) != 0)
        return -1;
      continue;
    }
    if (read_group(&l, cmd, a, 0) != 0 || apply(&l, out, &pen, cmd, a) != 0)
      return -1;
    /* Implicit repeats: more groups of the same command (after a moveto,
     * of the matching lineto). */
    char rep = cmd == 'M' ? 'L' : cmd == 'm' ? 'l' : cmd;
    for (;;) {
      int comma = skip_comma_wsp(&l);
      if (!number_starts(&l)) {
        if (comma)
          return fail(&l, "expected a number after ','");
        break;
      }
      if (read_group(&l, rep, a, comma) != 0 ||
          apply(&l, out, &pen, rep, a) != 0)
        return -1;
    }
  }
  return 0;
}

/* ---- the canonical form ---- */

typedef struct {
  char *buf;
  size_t len, cap;
  int failed;
} sbuf_t;

static void sb_reserve(sbuf_t *b, size_t more) {
  if (b->failed || b->len + more + 1 <= b->cap)
    return;
  size_t n = b->cap ? b->cap * 2 : 64;
  while (n < b->len + more + 1)
    n *= 2;
  char *p = realloc(b->buf, n);
  if (p == NULL) {
    b->failed = 1;
    return;
  }
  b->buf = p;
  b->cap = n;
}

/* A number to 1/1000 without trailing zeros ("12", "-0.5", "3.142").
 * The canonical text must be a fixed point: formatting what it parses to
 * gives the same text. That holds while v * 1000 is computed with an error
 * well under half a unit, i.e. |v * 1000| far below 2^52; beyond 1e12
 * (far outside any canvas) the number is written in full with %.17g,
 * which round-trips exactly, rather than rounded twice. */
static void sb_num(sbuf_t *b, double v) {
  sb_reserve(b, 32);
  if (b->failed)
    return;
  char *o = b->buf + b->len;
  double r = round(v * 1000);
  if (!(fabs(r) < 1e12)) {
    b->len += (size_t)snprintf(o, 32, "%.17g", v);
    return;
  }
  long long q = (long long)r;
  int neg = q < 0;
  unsigned long long u = neg ? (unsigned long long)-q : (unsigned long long)q;
  unsigned long long ip = u / 1000, fp = u % 1000;
  char tmp[32];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + ip % 10);
    ip /= 10;
  } while (ip);
  if (neg && (u != 0))
    *o++ = '-';
  while (n)
    *o++ = tmp[--n];
  if (fp) {
    *o++ = '.';
    int dg[3] = {(int)(fp / 100), (int)(fp / 10 % 10), (int)(fp % 10)};
    int last = dg[2] ? 3 : dg[1] ? 2 : 1;
    for (int k = 0; k < last; k++)
      *o++ = (char)('0' + dg[k]);
  }
  b->len = (size_t)(o - b->buf);
}

char *dp_format(const dp_path_t *p) {
  static const char letters[6] = {'M', 'L', 'Q', 'C', 'A', 'Z'};
  sbuf_t b = {0};
  sb_reserve(&b, p->n_v * 8 + p->n_ops * 2 + 1);
  size_t k = 0;
  for (size_t i = 0; i < p->n_ops; i++) {
    int op = p->ops[i];
    sb_reserve(&b, 2);
    if (b.failed)
      break;
    if (i > 0)
      b.buf[b.len++] = ' ';
    b.buf[b.len++] = letters[op];
    for (int j = 0; j < dp_op_arity[op]; j++) {
      sb_reserve(&b, 1);
      if (b.failed)
        break;
      if (j > 0)
        b.buf[b.len++] = ' ';
      sb_num(&b, p->v[k + (size_t)j]);
    }
    k += dp_op_arity[op];
  }
  if (b.failed || b.buf == NULL) {
    free(b.buf);
    return b.failed ? NULL : strdup("");
  }
  b.buf[b.len] = '\0';
  return b.buf;
}

/* ---- arcs ---- */

static double vec_angle(double ux, double uy, double vx, double vy) {
  double a = atan2(ux * vy - uy * vx, ux * vx + uy * vy);
  return a;
}

int dp_arc_to_center(double x0, double y0, const double a[7], dp_arc_t *o) {
  double rx = fabs(a[0]), ry = fabs(a[1]);
  double x = a[5], y = a[6];
  if (x0 == x && y0 == y)
    return 1; /* B.2.5: coincident endpoints: the arc is omitted */
  if (rx == 0 || ry == 0)
    return 1; /* B.2.5: a zero radius: a straight line */
  double phi = fmod(a[2], 360.0) * M_PI / 180.0;
  double cp = cos(phi), sp = sin(phi);
  /* B.2.4 step 1: (x1', y1'), the midpoint-relative start in the
   * ellipse's axes. */
  double dx = (x0 - x) / 2, dy = (y0 - y) / 2;
  double x1 = cp * dx + sp * dy, y1 = -sp * dx + cp * dy;
  /* B.2.5: radii too small for the endpoints are scaled up. */
  double lam = (x1 * x1) / (rx * rx) + (y1 * y1) / (ry * ry);
  if (lam > 1) {
    double s = sqrt(lam);
    rx *= s;
    ry *= s;
  }
  /* Step 2: the centre (cx', cy'). */
  double rx2 = rx * rx, ry2 = ry * ry;
  double num = rx2 * ry2 - rx2 * y1 * y1 - ry2 * x1 * x1;
  double den = rx2 * y1 * y1 + ry2 * x1 * x1;
  double co = den > 0 && num > 0 ? sqrt(num / den) : 0;
  if ((a[3] != 0) == (a[4] != 0))
    co = -co;
  double cxp = co * rx * y1 / ry, cyp = -co * ry * x1 / rx;
  /* Step 3: (cx, cy). */
  o->cx = cp * cxp - sp * cyp + (x0 + x) / 2;
  o->cy = sp * cxp + cp * cyp + (y0 + y) / 2;
  /* Step 4: the angles. */
  double ux = (x1 - cxp) / rx, uy = (y1 - cyp) / ry;
  double vx = (-x1 - cxp) / rx, vy = (-y1 - cyp) / ry;
  double t1 = vec_angle(1, 0, ux, uy);
  double dt = vec_angle(ux, uy, vx, vy);
  if (a[4] == 0 && dt > 0)
    dt -= 2 * M_PI;
  else if (a[4] != 0 && dt < 0)
    dt += 2 * M_PI;
  /* Coordinates near DBL_MAX overflow the squares above; such an arc is
   * drawn as its chord rather than as NaNs. */
  if (!isfinite(o->cx) || !isfinite(o->cy) || !isfinite(t1) || !isfinite(dt) ||
      !isfinite(rx) || !isfinite(ry))
    return 1;
  o->rx = rx;
  o->ry = ry;
  o->phi = phi;
  o->theta1 = t1;
  o->dtheta = dt;
  return 0;
}

void dp_arc_point(const dp_arc_t *a, double t, double *x, double *y) {
  double cp = cos(a->phi), sp = sin(a->phi), ct = cos(t), st = sin(t);
  *x = a->cx + a->rx * cp * ct - a->ry * sp * st;
  *y = a->cy + a->rx * sp * ct + a->ry * cp * st;
}

static void arc_walk(const dp_arc_t *a, double x0, double y0, double xe,
                     double ye, const dp_sink_t *s, void *u) {
  int n = (int)ceil(fabs(a->dtheta) / (M_PI / 2) - 1e-9);
  if (n < 1)
    n = 1;
  double dt = a->dtheta / n;
  double k = 4.0 / 3.0 * tan(dt / 4);
  double cp = cos(a->phi), sp = sin(a->phi);
  double t = a->theta1, px = x0, py = y0;
  for (int i = 0; i < n; i++) {
    double t2 = t + dt;
    double c1 = cos(t), s1 = sin(t), c2 = cos(t2), s2 = sin(t2);
    /* E'(t) = (-rx cp sin t - ry sp cos t, -rx sp sin t + ry cp cos t) */
    double d1x = -a->rx * cp * s1 - a->ry * sp * c1;
    double d1y = -a->rx * sp * s1 + a->ry * cp * c1;
    double d2x = -a->rx * cp * s2 - a->ry * sp * c2;
    double d2y = -a->rx * sp * s2 + a->ry * cp * c2;
    double ex, ey;
    if (i == n - 1) {
      ex = xe;
      ey = ye; /* the exact endpoint, not its rounding */
    } else {
      ex = a->cx + a->rx * cp * c2 - a->ry * sp * s2;
      ey = a->cy + a->rx * sp * c2 + a->ry * cp * s2;
    }
    s->curve_to(u, px + k * d1x, py + k * d1y, ex - k * d2x, ey - k * d2y, ex,
                ey);
    px = ex;
    py = ey;
    t = t2;
  }
}

void dp_walk(const dp_path_t *p, const dp_sink_t *s, void *u) {
  double cx = 0, cy = 0, sx = 0, sy = 0;
  size_t k = 0;
  for (size_t i = 0; i < p->n_ops; i++) {
    const double *v = p->v + k;
    k += dp_op_arity[p->ops[i]];
    switch (p->ops[i]) {
    case DP_MOVE:
      s->move_to(u, v[0], v[1]);
      cx = sx = v[0];
      cy = sy = v[1];
      break;
    case DP_LINE:
      s->line_to(u, v[0], v[1]);
      cx = v[0];
      cy = v[1];
      break;
    case DP_QUAD:
      s->curve_to(u, cx + 2.0 / 3 * (v[0] - cx), cy + 2.0 / 3 * (v[1] - cy),
                  v[2] + 2.0 / 3 * (v[0] - v[2]),
                  v[3] + 2.0 / 3 * (v[1] - v[3]), v[2], v[3]);
      cx = v[2];
      cy = v[3];
      break;
    case DP_CUBIC:
      s->curve_to(u, v[0], v[1], v[2], v[3], v[4], v[5]);
      cx = v[4];
      cy = v[5];
      break;
    case DP_ARC: {
      dp_arc_t a;
      int straight = dp_arc_to_center(cx, cy, v, &a);
      if (straight == 0)
        arc_walk(&a, cx, cy, v[5], v[6], s, u);
      else if (cx != v[5] || cy != v[6])
        s->line_to(u, v[5], v[6]);
      cx = v[5];
      cy = v[6];
      break;
    }
    case DP_CLOSE:
      if (cx != sx || cy != sy)
        s->line_to(u, sx, sy);
      s->close_path(u);
      cx = sx;
      cy = sy;
      break;
    }
  }
}

/* ---- bounds ---- */

typedef struct {
  dp_box_t b;
  int any;
  double cx, cy;
} bounds_t;

static void bx_add(bounds_t *b, double x, double y) {
  if (!b->any) {
    b->b.x0 = b->b.x1 = x;
    b->b.y0 = b->b.y1 = y;
    b->any = 1;
    return;
  }
  if (x < b->b.x0)
    b->b.x0 = x;
  if (x > b->b.x1)
    b->b.x1 = x;
  if (y < b->b.y0)
    b->b.y0 = y;
  if (y > b->b.y1)
    b->b.y1 = y;
}

static void bx_move(void *u, double x, double y) {
  bounds_t *b = u;
  bx_add(b, x, y);
  b->cx = x;
  b->cy = y;
}

static void bx_close(void *u) {
  (void)u;
}

/* The parameters in (0, 1) where one coordinate of the cubic p0..p3 has
 * an extremum: the roots of its derivative. */
static int cubic_extrema(double p0, double p1, double p2, double p3,
                         double t[2]) {
  double a = -p0 + 3 * p1 - 3 * p2 + p3;
  double b = 2 * (p0 - 2 * p1 + p2);
  double c = p1 - p0;
  int n = 0;
  if (fabs(a) < 1e-12) {
    if (fabs(b) > 1e-12) {
      double r = -c / b;
      if (r > 0 && r < 1)
        t[n++] = r;
    }
    return n;
  }
  double disc = b * b - 4 * a * c;
  if (disc < 0)
    return 0;
  double sq = sqrt(disc);
  double r1 = (-b + sq) / (2 * a), r2 = (-b - sq) / (2 * a);
  if (r1 > 0 && r1 < 1)
    t[n++] = r1;
  if (r2 > 0 && r2 < 1)
    t[n++] = r2;
  return n;
}

static double cubic_at(double p0, double p1, double p2, double p3, double t) {
  double m = 1 - t;
  return m * m * m * p0 + 3 * m * m * t * p1 + 3 * m * t * t * p2 +
         t * t * t * p3;
}

static void bx_curve(void *u, double x1, double y1, double x2, double y2,
                     double x, double y) {
  bounds_t *b = u;
  double x0 = b->cx, y0 = b->cy, t[2];
  bx_add(b, x, y);
  int n = cubic_extrema(x0, x1, x2, x, t);
  for (int i = 0; i < n; i++)
    bx_add(b, cubic_at(x0, x1, x2, x, t[i]), cubic_at(y0, y1, y2, y, t[i]));
  n = cubic_extrema(y0, y1, y2, y, t);
  for (int i = 0; i < n; i++)
    bx_add(b, cubic_at(x0, x1, x2, x, t[i]), cubic_at(y0, y1, y2, y, t[i]));
  b->cx = x;
  b->cy = y;
}

int dp_bounds(const dp_path_t *p, dp_box_t *out) {
  bounds_t b = {0};
  static const dp_sink_t sink = {bx_move, bx_move, bx_curve, bx_close};
  dp_walk(p, &sink, &b);
  if (!b.any)
    return -1;
  *out = b.b;
  return 0;
}

/* ---- flattening ---- */

typedef struct {
  double tol;
  double cx, cy;
  void (*point)(void *u, double x, double y, int starts);
  void *u;
  size_t count;
} flat_t;

static void fl_move(void *u, double x, double y) {
  flat_t *f = u;
  f->point(f->u, x, y, 1);
  f->count++;
  f->cx = x;
  f->cy = y;
}

static void fl_line(void *u, double x, double y) {
  flat_t *f = u;
  f->point(f->u, x, y, 0);
  f->count++;
  f->cx = x;
  f->cy = y;
}

static void fl_curve(void *u, double x1, double y1, double x2, double y2,
                     double x, double y) {
  flat_t *f = u;
  double x0 = f->cx, y0 = f->cy;
  /* Wang's formula: n segments keep a cubic within tol of its chords. */
  double ax = x0 - 2 * x1 + x2, ay = y0 - 2 * y1 + y2;
  double bx = x1 - 2 * x2 + x, by = y1 - 2 * y2 + y;
  double m = fmax(sqrt(ax * ax + ay * ay), sqrt(bx * bx + by * by));
  double nf = ceil(sqrt(0.75 * m / f->tol));
  /* Coordinates near DBL_MAX make m infinite or NaN: one chord then. */
  int n = nf >= 1 && nf <= 1000 ? (int)nf : nf > 1000 ? 1000 : 1;
  for (int i = 1; i < n; i++) {
    double t = (double)i / n;
    f->point(f->u, cubic_at(x0, x1, x2, x, t), cubic_at(y0, y1, y2, y, t), 0);
  }
  f->point(f->u, x, y, 0);
  f->count += (size_t)n;
  f->cx = x;
  f->cy = y;
}

size_t dp_flatten(const dp_path_t *p, double tol,
                  void (*point)(void *u, double x, double y, int starts),
                  void *u) {
  flat_t f = {tol > 1e-6 ? tol : 1e-6, 0, 0, point, u, 0};
  static const dp_sink_t sink = {fl_move, fl_line, fl_curve, bx_close};
  dp_walk(p, &sink, &f);
  return f.count;
}

typedef struct {
  double x, y, len;
} len_t;

static void len_point(void *u, double x, double y, int starts) {
  len_t *l = u;
  if (!starts)
    l->len += hypot(x - l->x, y - l->y);
  l->x = x;
  l->y = y;
}

double dp_length(const dp_path_t *p, double tol) {
  len_t l = {0, 0, 0};
  dp_flatten(p, tol, len_point, &l);
  return l.len;
}
