/* The edge-avoiding a-trous wavelet filter of Dammertz, Sewtz, Hanika
 * and Lensch ("Edge-Avoiding A-Trous Wavelet Transform for fast Global
 * Illumination Filtering", HPG 2010), with the variance-guided colour
 * weight of Schied et al.'s SVGF (HPG 2017).
 *
 * Five passes of the 5 x 5 B3-spline kernel, its taps 1, 2, 4, 8 and 16
 * pixels apart, reach 124 pixels across at the cost of 25 taps a pass.
 * Each tap's weight is the kernel's times exp(-x), where x adds up how
 * much the tap differs from the centre: in normal, in albedo, and in
 * colour relative to the noise expected there. The colour filtered is
 * the irradiance, the colour divided by the albedo (demodulation), so
 * that textures and the edges between colours, which the albedo carries
 * noise-free, are multiplied back in sharp. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "denoise.h"

#define PASSES 5
/* The smallest albedo divided by: a black surface's colour is noise or
 * light passing by, which demodulating must not blow up. */
#define ALBEDO_MIN 0.01f
/* exp(-x) is taken at x = X_CUT beyond it, where the weight is below
 * 1e-7: nothing then, and no branch. */
#define X_CUT 16.0f
/* Colours beyond this count as 0 (as non-finite ones do): squared, they
 * would overflow a float. */
#define BIG 1e18f

/* The edge-stopping strengths: a tap whose normal differs from the
 * centre's by |dn|^2 weighs exp(-K_NORMAL |dn|^2) (|dn|^2 = 2 - 2 cos
 * between unit normals, so 10 degrees apart costs a factor of 20); one
 * whose albedo differs by 0.1 in each channel weighs exp(-3 K_ALBEDO
 * 0.01); and colour differences count in units of K_COLOR times the
 * standard deviation of the difference that noise alone would give. */
#define K_NORMAL 64.0f
#define K_ALBEDO 100.0f
#define K_COLOR 4.0f
/* And the brightness, on a log scale that only bright pixels reach:
 * a tap weighs exp(-K_BRIGHT (log2(1 + l_q) - log2(1 + l_p))^2) for
 * the mean demodulated colours l. A light seen directly is tens of
 * times brighter than the wall around it, and the pixels on its edge
 * (a share of each) are neither; with few samples their variance lets
 * the colour weight take them for noise, and the edge of a light, which
 * most of an image's error comes from, went soft and wrong. Below 1,
 * where walls and shadows are, the term is a fraction of the colour
 * weight's. */
#define K_BRIGHT 2.0f

/* The guides are kept as 16-bit integers, a normal's components times
 * GN and an albedo's times GA: far finer than the weights can tell, at
 * half a float's memory. */
#define GN 16384.0f
#define GA 16384.0f

/* Eight floats (or ints) at once: AVX2's width, which GCC splits into
 * two SSE halves where the build has no AVX2. */
typedef float vf __attribute__((vector_size(32)));
typedef int32_t vi __attribute__((vector_size(32)));
typedef int16_t vs __attribute__((vector_size(16)));
#define VL 8

static inline vf vf_set1(float a) {
  return (vf){a, a, a, a, a, a, a, a};
}

static inline vf vf_load(const float *p) {
  vf v;
  memcpy(&v, p, sizeof(v));
  return v;
}

static inline vf vs_load(const int16_t *p) {
  vs v;
  memcpy(&v, p, sizeof(v));
  return __builtin_convertvector(v, vf);
}

/* min(x, X_CUT), NaN giving X_CUT: GCC's C has no ?: on vectors. */
static inline vf vf_cut(vf x) {
  vi below = x < vf_set1(X_CUT);
  return (vf)(((vi)x & below) | ((vi)vf_set1(X_CUT) & ~below));
}

static inline vf vf_max(vf a, vf b) {
  vi gt = a > b;
  return (vf)(((vi)a & gt) | ((vi)b & ~gt));
}

/* exp(-x) for x in [0, X_CUT], to a relative 1.4e-4: 2^t for t = -x
 * log2(e), split into an integer part, which goes into the exponent's
 * bits, and a fraction in (-1, 0], whose power of 2 is a cubic fitted by
 * least squares. libm's expf() is a call no loop can inline or
 * vectorise. */
static inline vf vf_exp_neg(vf x) {
  vf t = x * -1.44269504f;
  vi i = __builtin_convertvector(t, vi); /* towards 0 */
  vf f = t - __builtin_convertvector(i, vf);
  vf p = 0.99986396f + f * (0.69069035f + f * (0.22966973f + f * 0.03891127f));
  return p * (vf)((i + 127) << 23);
}

/* log2(y) for y >= 1, to 0.0013: the exponent's bits, plus a cubic in
 * the mantissa's fraction fitted by least squares (exact at its ends). */
static inline vf vf_log2_1p(vf x) {
  vf y = 1.0f + x;
  vi bits = (vi)y;
  vf e = __builtin_convertvector((bits >> 23) - 127, vf);
  vf t = (vf)((bits & 0x007fffff) | 0x3f800000) - 1.0f;
  return e + t * (1.42348532f + t * (-0.58773377f + t * 0.16555885f));
}

/* The planes a pass reads and writes; the buffers swap after each.
 * Each row has PAD pixels more either side, so that the taps of the
 * pixels near the sides read memory (the zeros the padding holds) and
 * their weights, masked to 0, leave them out: every pixel takes the
 * vector path. PAD is the widest pass's reach, 2 x 16. */
#define PAD 32

typedef struct {
  int w, h;
  size_t stride;       /* PAD + w rounded up to whole vectors + PAD */
  const int16_t *g[6]; /* normal x, y, z, albedo r, g, b */
  float *c[3], *v;     /* the input colour's planes and its variance */
  float *co[3], *vo;   /* the output's */
  float *iv;           /* each pixel's colour scale, see scales() */
  float *lg;           /* and its brightness, log2(1 + mean colour) */
} pass_t;

/* Pixel (x, y)'s place in the planes. */
static inline size_t at(const pass_t *p, int x, int y) {
  return (size_t)y * p->stride + PAD + (size_t)x;
}

/* The colour scale of each pixel: 1 / (K_COLOR^2 x the variance of a
 * difference of two pixels' colours, summed over the channels), from
 * the variance smoothed over the pixel's 3 x 3 neighbours (the per-
 * pixel estimate rests on few samples, and SVGF found the smoothed one
 * far steadier). A small share of the colour itself keeps a pixel whose
 * samples all agreed (variance 0) from refusing every neighbour over
 * rounding. */
static void scales(const pass_t *p) {
  vi lane = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int y = 0; y < p->h; y++) {
    /* The rows' weights, 1/4 1/2 1/4, and their sum inside the image. */
    float ky[3] = {y > 0 ? 0.25f : 0, 0.5f, y + 1 < p->h ? 0.25f : 0};
    float wy = ky[0] + ky[1] + ky[2];
    for (int x = 0; x < p->w; x += VL) {
      /* The columns' likewise: the padding's zeros add nothing, and the
       * sum leaves out the taps that fall in it. */
      vi col = lane + x;
      vf wx = vf_set1(1) - (vf)((vi)vf_set1(0.25f) & (col == 0)) -
              (vf)((vi)vf_set1(0.25f) & (col == p->w - 1));
      vf sum = vf_set1(0);
      for (int r = 0; r < 3; r++) {
        if (ky[r] == 0)
          continue;
        const float *v = p->v + at(p, x, y + r - 1);
        sum += ky[r] * (0.25f * vf_load(v - 1) + 0.5f * vf_load(v) +
                        0.25f * vf_load(v + 1));
      }
      size_t i = at(p, x, y);
      vf r = vf_load(p->c[0] + i), g = vf_load(p->c[1] + i);
      vf b = vf_load(p->c[2] + i);
      vf iv = 1.0f / (K_COLOR * K_COLOR * 6 * (sum / (wx * wy)) +
                      1e-4f * (r * r + g * g + b * b) + 1e-12f);
      memcpy(p->iv + i, &iv, sizeof(iv));
      /* Colours are >= 0 but for noise around 0; the log takes 0 then. */
      vf l = (r + g + b) * (1.0f / 3);
      l = (vf)((vi)l & (l > 0.0f));
      vf lg = vf_log2_1p(l);
      memcpy(p->lg + i, &lg, sizeof(lg));
    }
  }
}

static const float kern[5] = {1.0f / 16, 1.0f / 4, 3.0f / 8, 1.0f / 4,
                              1.0f / 16};

/* Pixels x .. x + 7 of row y. A tap's weight is the kernel's times
 * exp(-x), x adding up how far the tap is from the centre: in colour
 * (against the smaller of the two pixels' noise, so that a pixel on the
 * edge of a light, whose few samples make its variance huge, does not
 * take the wall beside it for more of the same noise), in normal and in
 * albedo. Taps outside the image weigh 0; so do lanes past the row's
 * end, whose results land in the padding. */
static void pass_vector(const pass_t *p, int step, int x, int y) {
  size_t i = at(p, x, y);
  vf c[3], g[6], ivp = vf_load(p->iv + i), lgp = vf_load(p->lg + i);
  for (int k = 0; k < 3; k++)
    c[k] = vf_load(p->c[k] + i);
  for (int k = 0; k < 6; k++)
    g[k] = vs_load(p->g[k] + i);
  vf s[3] = {vf_set1(0), vf_set1(0), vf_set1(0)}, sv = vf_set1(0),
     sw = vf_set1(0);
  vi lane = {0, 1, 2, 3, 4, 5, 6, 7};
  vi col = lane + x, w = {0, 0, 0, 0, 0, 0, 0, 0};
  w += p->w;
  int inside = x >= 2 * step && x + VL - 1 + 2 * step < p->w;
  for (int ky = -2; ky <= 2; ky++) {
    int yy = y + ky * step;
    if (yy < 0 || yy >= p->h)
      continue;
    for (int kx = -2; kx <= 2; kx++) {
      size_t j = at(p, x + kx * step, yy);
      vf cq[3], d = vf_load(p->lg + j) - lgp, x2 = vf_set1(0);
      vf xg = K_BRIGHT * d * d, iv = vf_max(vf_load(p->iv + j), ivp);
      for (int k = 0; k < 3; k++) {
        cq[k] = vf_load(p->c[k] + j);
        d = cq[k] - c[k];
        x2 += d * d;
        d = vs_load(p->g[k] + j) - g[k];
        xg += d * d * (K_NORMAL / (GN * GN));
        d = vs_load(p->g[3 + k] + j) - g[3 + k];
        xg += d * d * (K_ALBEDO / (GA * GA));
      }
      vf wt = kern[ky + 2] * kern[kx + 2] * vf_exp_neg(vf_cut(x2 * iv + xg));
      if (!inside) {
        vi q = col + kx * step;
        wt = (vf)((vi)wt & (q >= 0) & (q < w) & (col < w));
      }
      for (int k = 0; k < 3; k++)
        s[k] += wt * cq[k];
      sv += wt * wt * vf_load(p->v + j);
      sw += wt;
    }
  }
  /* The centre always counts (x = 0), so sw > 0, but in lanes past the
   * row's end. */
  vi live = col < w;
  vf inv = (vf)((vi)(1.0f / sw) & live);
  for (int k = 0; k < 3; k++) {
    vf o = s[k] * inv;
    memcpy(p->co[k] + i, &o, sizeof(o));
  }
  vf vo = sv * inv * inv;
  memcpy(p->vo + i, &vo, sizeof(vo));
}

/* One a-trous pass with taps `step` pixels apart. */
static void pass(const pass_t *p, int step) {
  scales(p);
  for (int y = 0; y < p->h; y++)
    for (int x = 0; x < p->w; x += VL)
      pass_vector(p, step, x, y);
}

/* The demodulating factor of albedo channel a. */
static float albedo_factor(const float *albedo, size_t k) {
  if (albedo == NULL)
    return 1.0f;
  float a = albedo[k];
  return a > ALBEDO_MIN && a < BIG ? a : ALBEDO_MIN;
}

/* Without a variance, each pixel's is estimated from its 3 x 3
 * neighbours' spread, which takes true gradients for noise too: shadow
 * edges soften a little, where a given variance keeps them. */
static void spatial_variance(const pass_t *p) {
  for (int y = 0; y < p->h; y++)
    for (int x = 0; x < p->w; x++) {
      float s[3] = {0, 0, 0}, s2 = 0;
      int n = 0;
      for (int yy = y - 1; yy <= y + 1; yy++)
        for (int xx = x - 1; xx <= x + 1; xx++) {
          if (yy < 0 || yy >= p->h || xx < 0 || xx >= p->w)
            continue;
          size_t j = at(p, xx, yy);
          for (int k = 0; k < 3; k++)
            s[k] += p->c[k][j], s2 += p->c[k][j] * p->c[k][j];
          n++;
        }
      float m2 = (s[0] * s[0] + s[1] * s[1] + s[2] * s[2]) / n;
      float var = (s2 - m2) / (3.0f * n);
      p->v[at(p, x, y)] = var > 0 ? var : 0;
    }
}

/* Clamps each pixel's colour, channel by channel, into the range of
 * its 8 neighbours' when it is more than twice their largest or less
 * than half their smallest: a single sample far off the others (a
 * firefly, or a dark speck in a shadow) leaves a pixel that no
 * neighbour resembles, and which the colour weights would then keep as
 * it is. A pixel only a little outside the range is left alone: on the
 * corner of a light, the pixel a little less covered than all its
 * neighbours is right. A feature of one pixel is lost with the
 * fireflies, a line or an edge is not: its pixels have neighbours of
 * their kind. The result goes to the output planes, which then swap
 * with the input. */
static void despeckle(pass_t *p) {
  for (int k = 0; k < 3; k++) {
    for (int y = 0; y < p->h; y++)
      for (int x = 0; x < p->w; x++) {
        float lo = INFINITY, hi = -INFINITY;
        for (int yy = y - 1; yy <= y + 1; yy++)
          for (int xx = x - 1; xx <= x + 1; xx++) {
            if (yy < 0 || yy >= p->h || xx < 0 || xx >= p->w ||
                (xx == x && yy == y))
              continue;
            float q = p->c[k][at(p, xx, yy)];
            lo = q < lo ? q : lo, hi = q > hi ? q : hi;
          }
        float c = p->c[k][at(p, x, y)];
        if (lo <= hi) /* not a 1 x 1 image */
          c = c < 0.5f * lo ? lo : c > 2 * hi ? hi : c;
        p->co[k][at(p, x, y)] = c;
      }
    float *t = p->c[k];
    p->c[k] = p->co[k], p->co[k] = t;
  }
}

static float clampf(float v, float lo, float hi) {
  return v > lo ? (v < hi ? v : hi) : lo; /* NaN gives lo */
}

int atl_render_denoise(const float *rgb, const float *albedo,
                       const float *normal, const float *variance, int w, int h,
                       float *out) {
  if (rgb == NULL || out == NULL || w <= 0 || h <= 0 || w > 65536 ||
      h > 65536 || (size_t)w * (size_t)h > ((size_t)1 << 28))
    return -EINVAL;
  size_t n = (size_t)w * (size_t)h;
  /* out may not overlap rgb (compared as addresses: pointers into two
   * objects have no order in C). */
  uintptr_t o = (uintptr_t)out, r = (uintptr_t)rgb, bytes = n * 3 * 4;
  if (o < r + bytes && r < o + bytes)
    return -EINVAL;
  /* Scratch, in planes of about (w + 2 PAD) x h: the guides (2 bytes a
   * channel), two colour images, two variances, the colour scales and
   * the brightnesses (4 bytes each), 52 bytes a pixel in all; calloc()
   * gives the padding its zeros. */
  pass_t p = {.w = w, .h = h};
  /* The last vector of a row reaches VL - 1 pixels past its end, and
   * its taps PAD further. */
  p.stride = PAD + ((size_t)w + VL - 1) / VL * VL + PAD;
  size_t plane = p.stride * (size_t)h;
  int16_t *g = calloc(plane * 6, sizeof(int16_t));
  float *f = calloc(plane * 10, sizeof(float));
  if (!g || !f) {
    free(g), free(f);
    return -ENOMEM;
  }
  for (int k = 0; k < 6; k++)
    p.g[k] = g + k * plane;
  for (int k = 0; k < 3; k++)
    p.c[k] = f + k * plane, p.co[k] = f + (3 + k) * plane;
  p.v = f + 6 * plane, p.vo = f + 7 * plane, p.iv = f + 8 * plane;
  p.lg = f + 9 * plane;
  /* The guides, the demodulated colour and its variance. A colour with
   * any channel not finite (or absurdly large) is garbage in all three:
   * it counts as 0, and its normal is set to (-2, -2, -2), further from
   * any unit normal or none than the weights reach, so that the pixel
   * and its neighbours take nothing from each other. */
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      size_t i = (size_t)y * w + x, j = at(&p, x, y);
      const float *c = rgb + i * 3;
      int ok = fabsf(c[0]) < BIG && fabsf(c[1]) < BIG && fabsf(c[2]) < BIG;
      float inv2 = 0;
      for (int k = 0; k < 3; k++) {
        float m = albedo_factor(albedo, i * 3 + k);
        p.c[k][j] = ok ? c[k] / m : 0;
        inv2 += 1 / (3 * m * m);
        float a = albedo ? clampf(albedo[i * 3 + k], 0, 1) : 0;
        float nv = normal ? clampf(normal[i * 3 + k], -1, 1) : 0;
        nv = ok ? nv : -2;
        g[(3 + k) * plane + j] = (int16_t)lrintf(a * GA);
        g[k * plane + j] = (int16_t)lrintf(nv * GN);
      }
      if (variance != NULL)
        p.v[j] = clampf(variance[i], 0, BIG) * inv2;
    }
  despeckle(&p);
  if (variance == NULL)
    spatial_variance(&p);
  for (int k = 0; k < PASSES; k++) {
    pass(&p, 1 << k);
    for (int c = 0; c < 3; c++) {
      float *t = p.c[c];
      p.c[c] = p.co[c], p.co[c] = t;
    }
    float *t = p.v;
    p.v = p.vo, p.vo = t;
  }
  /* The result is in p.c: multiply the albedo back in. */
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      size_t i = (size_t)y * w + x, j = at(&p, x, y);
      for (int k = 0; k < 3; k++)
        out[i * 3 + k] = p.c[k][j] * albedo_factor(albedo, i * 3 + k);
    }
  free(g), free(f);
  return 0;
}
