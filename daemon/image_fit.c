/* Fitting an image to a provider's limits (image_fit.h).
 *
 * The steps, each dearer than the one before:
 *   1. The size is read from the header (PNG's IHDR by hand, JPEG's frame
 *      header through libjpeg, which decodes no pixels for it). An image
 *      that fits every limit is copied and not decoded.
 *   2. The target size: the long side t is the largest that meets
 *      max_side, max_short_side and max_pixels, and the short side is
 *      round-half-up(S * t / L), at least 1, for an input of L x S (long x
 *      short). 3000 x 1000 with max_side 1568 becomes 1568 x 523.
 *   3. The file is decoded and scaled to that size in one pass over its
 *      rows (scaler_t), so a large image needs no buffer of its own size
 *      (an interlaced PNG does: Adam7 can only be decoded whole).
 *   4. It is encoded as PNG; if its base64 is over max_base64, as JPEG of
 *      quality 90, 80, 70 and 60 (alpha composited onto white); if even
 *      60 is over, the long side shrinks by sqrt(budget / size) * 0.95
 *      (at least one pixel) and step 3 starts again from the file, down to
 *      a floor of 64 px (or the target of step 2 when that is smaller),
 *      after which ATL_E2BIG. Only the first size is tried as PNG: a
 *      lossless image that does not fit is not worth fewer pixels. Each
 *      size is one box filter away from the original, never a scaled copy
 *      of a scaled copy.
 * An encoder stops as soon as its output passes the budget, so a size
 * that cannot fit costs a fraction of an encode, and the part it wrote
 * gives the estimate the next size is chosen from. A large PNG is not
 * even started when an eighth of its rows, spread over the image,
 * promises more than 1.2 times the budget (png_encode()).
 *
 * PNG is not tried when the input is a JPEG: its pixels are lossy already
 * and photographic, and a PNG of them is several times larger. A PNG
 * that keeps its size is tried again, since a file written fast (zlib
 * level 1 for previews) may fit once compressed harder.
 *
 * Everything a call uses lives in its own frame or on the heap: libpng
 * and libjpeg keep no global state and report errors by longjmp() to a
 * jmp_buf of the call's own, so this runs on any thread. */
#include "atl-build.h"

#include <math.h>
#include <setjmp.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

#include "image_fit.h"

/* What a header may claim: beyond this nothing is allocated. 100 Mpx is
 * six times the largest image a tool makes (4096 x 4096). */
#define FIT_MAX_SIDE 65535u
#define FIT_MAX_PIXELS 100000000ull
/* The smallest long side the base64 loop goes down to: below it an image
 * says little to a model. */
#define FIT_FLOOR_SIDE 64u

static const int fit_qualities[] = {90, 80, 70, 60};

static const char fit_mime_png[] = "image/png";
static const char fit_mime_jpeg[] = "image/jpeg";

enum { FMT_PNG = 1, FMT_JPEG = 2 };

/* ---- the box filter ---------------------------------------------------- */

/* Scales sw x sh pixels of ch channels (1 grey, 2 grey+alpha, 3 RGB,
 * 4 RGBA) down to dw x dh, fed one source row at a time. Each destination
 * pixel is the average of the source area it covers, every source pixel
 * weighted by the exact fraction of it that falls inside: in units where
 * a source pixel is dw wide, destination column x spans [x * sw, (x + 1)
 * * sw), and source column i spans [i * dw, (i + 1) * dw), so the weights
 * are integers and sum to sw (rows likewise to sh). All sums are
 * integers, so a solid colour comes out exactly that colour, and the
 * result does not depend on the floating point unit.
 *
 * With alpha, colours are weighted by alpha (premultiplied) so that a
 * transparent pixel's colour, which is invisible, does not bleed into
 * its neighbours.
 *
 * Bounds: a horizontal sum is at most sw * 255 * 255 < 2^32 (sw <=
 * 65535); a vertical one at most sh times that, < 2^48. */
typedef struct {
  uint32_t sw, sh, dw, dh;
  int ch, alpha, copy; /* copy: same size, the rows are copied */
  uint32_t *x0;        /* sw: a source column's first destination column */
  uint32_t *xw;        /* sw: its weight there; dw - xw to the next one */
  uint32_t *hrow;      /* (dw + 1) * ch: a source row summed across; the
                          spare pixel takes the zero weights of the last */
  uint64_t *acc[2];    /* dw * ch: destination rows cy and cy + 1 */
  uint32_t sy, cy;     /* next source row, destination row being summed */
  unsigned char *out;  /* dw * dh * ch: the result */
} scaler_t;

static void scaler_free(scaler_t *s) {
  free(s->x0);
  free(s->xw);
  free(s->hrow);
  free(s->acc[0]);
  free(s->acc[1]);
  free(s->out);
  memset(s, 0, sizeof(*s));
}

static int scaler_init(scaler_t *s, uint32_t sw, uint32_t sh, uint32_t dw,
                       uint32_t dh, int ch) {
  memset(s, 0, sizeof(*s));
  if (dw < 1 || dh < 1 || dw > sw || dh > sh || ch < 1 || ch > 4)
    return ATL_EINVAL;
  s->sw = sw;
  s->sh = sh;
  s->dw = dw;
  s->dh = dh;
  s->ch = ch;
  s->alpha = ch == 2 || ch == 4;
  s->copy = sw == dw && sh == dh;
  s->out = malloc((size_t)dw * dh * (size_t)ch);
  if (s->out == NULL)
    return ATL_ENOMEM;
  if (s->copy)
    return 0;
  s->x0 = malloc(sizeof(uint32_t) * sw);
  s->xw = malloc(sizeof(uint32_t) * sw);
  s->hrow = malloc(sizeof(uint32_t) * (dw + 1) * (size_t)ch);
  s->acc[0] = calloc((size_t)dw * (size_t)ch, sizeof(uint64_t));
  s->acc[1] = calloc((size_t)dw * (size_t)ch, sizeof(uint64_t));
  if (s->x0 == NULL || s->xw == NULL || s->hrow == NULL || s->acc[0] == NULL ||
      s->acc[1] == NULL) {
    scaler_free(s);
    return ATL_ENOMEM;
  }
  for (uint32_t i = 0; i < sw; i++) {
    uint64_t start = (uint64_t)i * dw, end = start + dw;
    uint32_t x = (uint32_t)(start / sw);
    uint64_t edge = (uint64_t)(x + 1) * sw;
    s->x0[i] = x;
    s->xw[i] = (uint32_t)((end < edge ? end : edge) - start);
  }
  return 0;
}

/* Writes destination row cy from acc[0] and moves on to the next. */
static void scaler_emit(scaler_t *s) {
  const int ch = s->ch;
  const uint64_t area = (uint64_t)s->sw * s->sh;
  const uint64_t *a = s->acc[0];
  unsigned char *o = s->out + (size_t)s->cy * s->dw * (size_t)ch;
  for (uint32_t x = 0; x < s->dw; x++, a += ch, o += ch) {
    if (s->alpha) {
      uint64_t al = a[ch - 1];
      for (int c = 0; c < ch - 1; c++)
        o[c] = al ? (unsigned char)((a[c] + al / 2) / al) : 0;
      o[ch - 1] = (unsigned char)((al + area / 2) / area);
    } else {
      for (int c = 0; c < ch; c++)
        o[c] = (unsigned char)((a[c] + area / 2) / area);
    }
  }
  uint64_t *t = s->acc[0];
  s->acc[0] = s->acc[1];
  s->acc[1] = t;
  memset(t, 0, sizeof(uint64_t) * s->dw * (size_t)ch);
  s->cy++;
}

static void scaler_row(scaler_t *s, const unsigned char *row) {
  const int ch = s->ch;
  const uint32_t j = s->sy++;
  if (j >= s->sh)
    return;
  if (s->copy) {
    memcpy(s->out + (size_t)j * s->dw * (size_t)ch, row,
           (size_t)s->dw * (size_t)ch);
    return;
  }
  uint32_t *h = s->hrow;
  memset(h, 0, sizeof(uint32_t) * (s->dw + 1) * (size_t)ch);
  for (uint32_t i = 0; i < s->sw; i++, row += ch) {
    uint32_t *p = h + (size_t)s->x0[i] * ch;
    uint32_t w0 = s->xw[i], w1 = s->dw - w0;
    if (s->alpha) {
      uint32_t al = row[ch - 1];
      for (int c = 0; c < ch - 1; c++) {
        uint32_t v = row[c] * al;
        p[c] += w0 * v;
        p[ch + c] += w1 * v;
      }
      p[ch - 1] += w0 * al;
      p[2 * ch - 1] += w1 * al;
    } else {
      for (int c = 0; c < ch; c++) {
        p[c] += w0 * row[c];
        p[ch + c] += w1 * row[c];
      }
    }
  }
  /* Source row j spans [j * dh, (j + 1) * dh) in units where a
   * destination row is sh high; rows come in order, so it starts in
   * destination row cy and may end in cy + 1. */
  uint64_t start = (uint64_t)j * s->dh, end = start + s->dh;
  uint64_t edge = (uint64_t)(s->cy + 1) * s->sh;
  uint64_t w0 = (end < edge ? end : edge) - start, w1 = s->dh - w0;
  size_t n = (size_t)s->dw * (size_t)ch;
  for (size_t k = 0; k < n; k++)
    s->acc[0][k] += w0 * h[k];
  if (w1 > 0)
    for (size_t k = 0; k < n; k++)
      s->acc[1][k] += w1 * h[k];
  if (end >= edge)
    scaler_emit(s);
}

/* 1 once every source row has gone in and every destination row out. */
static int scaler_done(const scaler_t *s) {
  return s->sy == s->sh && (s->copy || s->cy == s->dh);
}

/* ---- decoding ---------------------------------------------------------- */

/* libjpeg's error manager with a way back: errors (and running out of
 * data) longjmp() to jb with the ATL_E* code in err. */
typedef struct {
  struct jpeg_error_mgr pub; /* first: cinfo->err points here */
  jmp_buf jb;
  int err;
} jerr_t;

static void jerr_exit(j_common_ptr ci) {
  jerr_t *e = (jerr_t *)ci->err;
  if (e->err == 0)
    e->err = ci->err->msg_code == JERR_OUT_OF_MEMORY ? ATL_ENOMEM : ATL_EINVAL;
  longjmp(e->jb, 1);
}

/* Warnings are libjpeg going on with what it has. That is right for odd
 * metadata (an unknown JFIF version, a bad ICC marker, stray bytes
 * between segments) but not for damaged or missing pixel data: libjpeg
 * would fill what is missing with grey and call it an image, and a model
 * shown half an image has no way to tell. */
static void jerr_emit(j_common_ptr ci, int level) {
  if (level >= 0)
    return;
  switch (ci->err->msg_code) {
  case JWRN_JPEG_EOF:          /* the file ends early */
  case JWRN_HIT_MARKER:        /* the scan ends early */
  case JWRN_HUFF_BAD_CODE:     /* the scan is damaged */
  case JWRN_ARITH_BAD_CODE:    /* likewise */
  case JWRN_MUST_RESYNC:       /* a restart marker is missing */
  case JWRN_NOT_SEQUENTIAL:    /* a scan's parameters are wrong */
  case JWRN_BOGUS_PROGRESSION: /* a progressive scan's too */
    ((jerr_t *)ci->err)->err = ATL_EINVAL;
    longjmp(((jerr_t *)ci->err)->jb, 1);
  default:
    break;
  }
}

/* libjpeg would print to stderr; a daemon's worker has nothing to say
 * there. */
static void jerr_output(j_common_ptr ci) {
  (void)ci;
}

static struct jpeg_error_mgr *jerr_init(jerr_t *e) {
  jpeg_std_error(&e->pub);
  e->pub.error_exit = jerr_exit;
  e->pub.emit_message = jerr_emit;
  e->pub.output_message = jerr_output;
  e->err = 0;
  return &e->pub;
}

typedef struct {
  const unsigned char *data;
  size_t len, pos;
  int probe;       /* 1: read the size only */
  uint32_t w, h;   /* the file's size */
  uint32_t dw, dh; /* the size wanted */
  int err;         /* libpng's error, for the longjmp back */
  png_structp png;
  png_infop info;
  jerr_t je;
  struct jpeg_decompress_struct ci;
  scaler_t sc;
  unsigned char *buf; /* a decoded row, or an interlaced PNG whole */
  unsigned char **rows;
} dec_t;

static int size_ok(uint64_t w, uint64_t h) {
  return w >= 1 && h >= 1 && w <= FIT_MAX_SIDE && h <= FIT_MAX_SIDE &&
         w * h <= FIT_MAX_PIXELS;
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

static const unsigned char png_sig[8] = {0x89, 'P',  'N',  'G',
                                         '\r', '\n', 0x1a, '\n'};

/* The size from IHDR, which must come first: signature (8), length (4,
 * always 13), "IHDR" (4), width (4), height (4). */
static int png_probe(dec_t *d) {
  if (d->len < 33 || memcmp(d->data, png_sig, 8) != 0 ||
      be32(d->data + 8) != 13 || memcmp(d->data + 12, "IHDR", 4) != 0)
    return ATL_EINVAL;
  d->w = be32(d->data + 16);
  d->h = be32(d->data + 20);
  return size_ok(d->w, d->h) ? 0 : ATL_EINVAL;
}

static void png_read_cb(png_structp png, png_bytep out, size_t n) {
  dec_t *d = png_get_io_ptr(png);
  if (n > d->len - d->pos)
    png_error(png, "truncated");
  memcpy(out, d->data + d->pos, n);
  d->pos += n;
}

static void png_error_cb(png_structp png, png_const_charp msg) {
  dec_t *d = png_get_error_ptr(png);
  /* libpng says "Out of memory" or "Insufficient memory". */
  if (d->err == 0)
    d->err = strstr(msg, "emory") ? ATL_ENOMEM : ATL_EINVAL;
  png_longjmp(png, 1);
}

static void png_warning_cb(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg;
}

static int png_decode_body(dec_t *d) {
  png_structp png = d->png;
  png_infop info = d->info;
  png_set_read_fn(png, d, png_read_cb);
  png_set_user_limits(png, FIT_MAX_SIDE, FIT_MAX_SIDE);
  /* Ancillary chunks (iCCP, zTXt, ...) are nothing we use; this caps what
   * one may make libpng allocate when decompressed. */
  png_set_chunk_malloc_max(png, 8u << 20);
  png_read_info(png, info);
  if (png_get_image_width(png, info) != d->w ||
      png_get_image_height(png, info) != d->h)
    return ATL_EINVAL;
  /* Palette to RGB, grey below 8 bits to 8, a tRNS chunk to an alpha
   * channel, 16 bits to 8 (rounded, not truncated): every PNG becomes
   * 8-bit grey, grey+alpha, RGB or RGBA. */
  png_set_expand(png);
  png_set_scale_16(png);
  int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  int ch = png_get_channels(png, info);
  size_t stride = (size_t)d->w * (size_t)ch;
  if (png_get_bit_depth(png, info) != 8 || ch < 1 || ch > 4 ||
      png_get_rowbytes(png, info) != stride)
    return ATL_EINVAL;
  int rc = scaler_init(&d->sc, d->w, d->h, d->dw, d->dh, ch);
  if (rc != 0)
    return rc;
  if (passes > 1) {
    /* Adam7 fills each row over seven passes: the whole image is needed
     * (at most 400 MB, under FIT_MAX_PIXELS). */
    d->buf = malloc(stride * d->h);
    d->rows = malloc(sizeof(unsigned char *) * d->h);
    if (d->buf == NULL || d->rows == NULL)
      return ATL_ENOMEM;
    for (uint32_t y = 0; y < d->h; y++)
      d->rows[y] = d->buf + stride * y;
    png_read_image(png, d->rows);
    for (uint32_t y = 0; y < d->h; y++)
      scaler_row(&d->sc, d->rows[y]);
  } else {
    d->buf = malloc(stride);
    if (d->buf == NULL)
      return ATL_ENOMEM;
    for (uint32_t y = 0; y < d->h; y++) {
      png_read_row(png, d->buf, NULL);
      scaler_row(&d->sc, d->buf);
    }
  }
  /* No png_read_end(): the pixels are all in, and what follows them
   * (text chunks, IEND) changes nothing. */
  return 0;
}

/* setjmp() lives here, in a frame whose only local never changes, so
 * nothing is left indeterminate by the longjmp() back. */
static int png_decode_guarded(dec_t *d) {
  if (setjmp(png_jmpbuf(d->png)))
    return d->err ? d->err : ATL_EINVAL;
  return png_decode_body(d);
}

static int png_decode(dec_t *d) {
  d->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, d, png_error_cb,
                                  png_warning_cb);
  if (d->png == NULL)
    return ATL_ENOMEM;
  d->info = png_create_info_struct(d->png);
  int rc = d->info != NULL ? png_decode_guarded(d) : ATL_ENOMEM;
  png_destroy_read_struct(&d->png, &d->info, NULL);
  return rc;
}

static int jpeg_decode_body(dec_t *d) {
  struct jpeg_decompress_struct *ci = &d->ci;
  jpeg_mem_src(ci, d->data, (unsigned long)d->len);
  jpeg_read_header(ci, TRUE);
  if (d->probe) {
    d->w = ci->image_width;
    d->h = ci->image_height;
    return size_ok(d->w, d->h) ? 0 : ATL_EINVAL;
  }
  if (ci->image_width != d->w || ci->image_height != d->h)
    return ATL_EINVAL;
  /* Grey stays grey; everything else becomes RGB (libjpeg refuses CMYK
   * to RGB, which is ATL_EINVAL: no tool makes CMYK). */
  ci->out_color_space = ci->num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(ci);
  int ch = ci->output_components;
  if (ci->output_width != d->w || ci->output_height != d->h)
    return ATL_EINVAL;
  int rc = scaler_init(&d->sc, d->w, d->h, d->dw, d->dh, ch);
  if (rc != 0)
    return rc;
  d->buf = malloc((size_t)d->w * (size_t)ch);
  if (d->buf == NULL)
    return ATL_ENOMEM;
  while (ci->output_scanline < ci->output_height) {
    JSAMPROW row = d->buf;
    if (jpeg_read_scanlines(ci, &row, 1) != 1)
      return ATL_EINVAL;
    scaler_row(&d->sc, d->buf);
  }
  /* No jpeg_finish_decompress(): the pixels are all in. */
  return 0;
}

static int jpeg_decode_guarded(dec_t *d) {
  if (setjmp(d->je.jb))
    return d->je.err ? d->je.err : ATL_EINVAL;
  jpeg_create_decompress(&d->ci);
  return jpeg_decode_body(d);
}

static int jpeg_decode(dec_t *d) {
  d->ci.err = jerr_init(&d->je);
  int rc = jpeg_decode_guarded(d);
  /* Safe when creation failed half-way: it frees what exists. */
  jpeg_destroy_decompress(&d->ci);
  return rc;
}

static int is_jpeg(const unsigned char *p, size_t len) {
  return len >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff;
}

/* The format and size of data, from the header only. */
static int probe(const unsigned char *data, size_t len, int *fmt, uint32_t *w,
                 uint32_t *h) {
  dec_t d;
  memset(&d, 0, sizeof(d));
  d.data = data;
  d.len = len;
  d.probe = 1;
  int rc;
  if (len >= 8 && memcmp(data, png_sig, 8) == 0) {
    *fmt = FMT_PNG;
    rc = png_probe(&d);
  } else if (is_jpeg(data, len)) {
    *fmt = FMT_JPEG;
    rc = jpeg_decode(&d);
  } else {
    rc = ATL_EINVAL;
  }
  *w = d.w;
  *h = d.h;
  return rc;
}

/* Decodes data and scales it to dw x dh; *px (malloc()ed, the caller
 * frees it) holds dw * dh pixels of *ch channels. */
static int decode_scaled(const unsigned char *data, size_t len, int fmt,
                         uint32_t w, uint32_t h, uint32_t dw, uint32_t dh,
                         unsigned char **px, int *ch) {
  dec_t d;
  memset(&d, 0, sizeof(d));
  d.data = data;
  d.len = len;
  d.w = w;
  d.h = h;
  d.dw = dw;
  d.dh = dh;
  int rc = fmt == FMT_PNG ? png_decode(&d) : jpeg_decode(&d);
  if (rc == 0 && !scaler_done(&d.sc))
    rc = ATL_EINVAL;
  if (rc == 0) {
    *px = d.sc.out;
    *ch = d.sc.ch;
    d.sc.out = NULL;
  }
  scaler_free(&d.sc);
  free(d.buf);
  free(d.rows);
  return rc;
}

/* ---- encoding ---------------------------------------------------------- */

/* An encoder's output in memory, which gives up (ATL_E2BIG) as soon as it
 * would pass limit bytes (0: no limit). */
typedef struct {
  jerr_t je; /* first: libjpeg's err points here */
  int err;   /* libpng's error */
  png_structp png;
  png_infop info;
  struct jpeg_compress_struct ci;
  struct jpeg_destination_mgr dest;
  unsigned char *buf;
  size_t len, cap, limit;
  uint32_t rows; /* PNG: rows handed to libpng so far */
  double done;   /* the part of the image written when the limit was hit */
  struct jpeg_progress_mgr progress;
} enc_t;

/* What the whole file would have been, from the part it had written when
 * it passed the limit. */
static size_t enc_estimate(const enc_t *e) {
  double done = e->done > 0 && e->done <= 1 ? e->done : 1;
  double est = (double)e->len / done;
  return est > (double)SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)est;
}

static void png_write_cb(png_structp png, png_bytep data, size_t n) {
  enc_t *e = png_get_io_ptr(png);
  if (e->limit && n > e->limit - e->len) {
    e->err = ATL_E2BIG;
    e->done = (double)e->rows / png_get_image_height(png, e->info);
    png_error(png, "over the limit");
  }
  if (n > e->cap - e->len) {
    size_t cap = e->cap ? e->cap : 65536;
    while (cap - e->len < n)
      cap *= 2;
    unsigned char *b = realloc(e->buf, cap);
    if (b == NULL) {
      e->err = ATL_ENOMEM;
      png_error(png, "out of memory");
    }
    e->buf = b;
    e->cap = cap;
  }
  memcpy(e->buf + e->len, data, n);
  e->len += n;
}

static void png_flush_cb(png_structp png) {
  (void)png;
}

static void png_enc_error_cb(png_structp png, png_const_charp msg) {
  enc_t *e = png_get_error_ptr(png);
  if (e->err == 0)
    e->err = strstr(msg, "emory") ? ATL_ENOMEM : ATL_EINVAL;
  png_longjmp(png, 1);
}

/* A PNG's size is estimated, before the whole is encoded, from a sample:
 * the first PNG_SAMPLE_ROWS of every PNG_SAMPLE_EVERY rows, an eighth of
 * the image spread over all of it (an estimate from the top rows alone
 * would be fooled by a plot whose top is empty). Bands rather than single
 * rows, so that the filters still see the row above as they would. */
#define PNG_SAMPLE_EVERY 64u
#define PNG_SAMPLE_ROWS 8u

static uint32_t png_sample_rows(uint32_t h) {
  uint32_t rest = h % PNG_SAMPLE_EVERY;
  return h / PNG_SAMPLE_EVERY * PNG_SAMPLE_ROWS +
         (rest < PNG_SAMPLE_ROWS ? rest : PNG_SAMPLE_ROWS);
}

/* Writes the image, or with sample set only the sample's rows. */
static int png_encode_body(enc_t *e, const unsigned char *px, uint32_t w,
                           uint32_t h, int ch, int sample) {
  static const int types[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                              PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  uint32_t rows = sample ? png_sample_rows(h) : h;
  png_set_write_fn(e->png, e, png_write_cb, png_flush_cb);
  /* zlib level 4 with libpng's filter chosen per row. Measured on a
   * noisy 1568 x 1568 render: as small as level 6 (3.53 MB against 3.54)
   * in 0.38 s against 0.87 s; levels 1 to 3 skip zlib's lazy matching
   * and come out 15 % larger (render/png.c's level 3 with Paeth alone:
   * 4.28 MB), which decides whether an image stays lossless. */
  png_set_compression_level(e->png, 4);
  png_set_IHDR(e->png, e->info, w, rows, 8, types[ch - 1], PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(e->png, e->info);
  size_t stride = (size_t)w * (size_t)ch;
  for (uint32_t i = 0; i < rows; i++) {
    uint32_t y =
        sample ? i / PNG_SAMPLE_ROWS * PNG_SAMPLE_EVERY + i % PNG_SAMPLE_ROWS
               : i;
    e->rows = i + 1;
    png_write_row(e->png, px + stride * y);
  }
  png_write_end(e->png, NULL);
  return 0;
}

static int png_encode_guarded(enc_t *e, const unsigned char *px, uint32_t w,
                              uint32_t h, int ch, int sample) {
  if (setjmp(png_jmpbuf(e->png)))
    return e->err ? e->err : ATL_EINVAL;
  return png_encode_body(e, px, w, h, ch, sample);
}

static int png_encode_once(enc_t *e, const unsigned char *px, uint32_t w,
                           uint32_t h, int ch, int sample, size_t limit) {
  memset(e, 0, sizeof(*e));
  e->limit = limit;
  e->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, e, png_enc_error_cb,
                                   png_warning_cb);
  if (e->png == NULL)
    return ATL_ENOMEM;
  e->info = png_create_info_struct(e->png);
  int rc = e->info != NULL ? png_encode_guarded(e, px, w, h, ch, sample)
                           : ATL_ENOMEM;
  png_destroy_write_struct(&e->png, &e->info);
  return rc;
}

/* Encodes w x h pixels of ch channels as PNG into *out (malloc()ed, the
 * caller frees it), or ATL_E2BIG with *est, the size it would have had,
 * when it would be over limit bytes (0: no limit). An image of 256 rows
 * or more is first estimated from its sample, and not encoded whole when
 * that promises more than 1.2 times the limit: noise then costs an eighth
 * of an encode, and an image that might fit gets its chance. */
static int png_encode(const unsigned char *px, uint32_t w, uint32_t h, int ch,
                      size_t limit, unsigned char **out, size_t *len,
                      size_t *est) {
  enc_t e;
  int rc;
  if (limit && h >= 4 * PNG_SAMPLE_EVERY) {
    rc = png_encode_once(&e, px, w, h, ch, 1, 0);
    free(e.buf);
    if (rc != 0)
      return rc;
    double guess = (double)e.len * h / png_sample_rows(h);
    if (guess > 1.2 * (double)limit) {
      *est = guess > (double)SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)guess;
      return ATL_E2BIG;
    }
  }
  rc = png_encode_once(&e, px, w, h, ch, 0, limit);
  if (rc == ATL_E2BIG)
    *est = enc_estimate(&e);
  if (rc != 0) {
    free(e.buf);
    return rc;
  }
  *out = e.buf;
  *len = e.len;
  return 0;
}

/* libjpeg reports before each row (one pass) or each row of 8 or 16-pixel
 * blocks (the output pass after the one that gathers Huffman statistics)
 * how far the pass is: what the estimate of a file cut short needs, since
 * with optimized tables every byte is written in the last pass. */
static void jprogress(j_common_ptr ci) {
  (void)ci;
}

/* libjpeg's destination: a buffer that doubles, up to limit + 1 bytes;
 * filling that one means the file is over the limit. */
static void jdest_init(j_compress_ptr ci) {
  enc_t *e = (enc_t *)ci->err;
  size_t cap = 65536;
  if (e->limit && cap > e->limit + 1)
    cap = e->limit + 1;
  e->buf = malloc(cap);
  if (e->buf == NULL) {
    e->je.err = ATL_ENOMEM;
    longjmp(e->je.jb, 1);
  }
  e->cap = cap;
  e->dest.next_output_byte = e->buf;
  e->dest.free_in_buffer = cap;
}

/* Called when the buffer is full. */
static boolean jdest_empty(j_compress_ptr ci) {
  enc_t *e = (enc_t *)ci->err;
  if (e->limit && e->cap > e->limit) {
    const struct jpeg_progress_mgr *p = ci->progress;
    e->len = e->cap;
    /* The block row in progress counts as written: the estimate errs
     * low by one such row at most. */
    e->done = p->pass_limit > 0
                  ? (double)(p->pass_counter + 1) / (double)p->pass_limit
                  : 1;
    e->je.err = ATL_E2BIG;
    longjmp(e->je.jb, 1);
  }
  size_t cap = e->cap * 2;
  if (e->limit && cap > e->limit + 1)
    cap = e->limit + 1;
  unsigned char *b = realloc(e->buf, cap);
  if (b == NULL) {
    e->je.err = ATL_ENOMEM;
    longjmp(e->je.jb, 1);
  }
  e->buf = b;
  e->dest.next_output_byte = b + e->cap;
  e->dest.free_in_buffer = cap - e->cap;
  e->cap = cap;
  return TRUE;
}

static void jdest_term(j_compress_ptr ci) {
  enc_t *e = (enc_t *)ci->err;
  e->len = e->cap - e->dest.free_in_buffer;
}

static int jpeg_encode_body(enc_t *e, const unsigned char *px, uint32_t w,
                            uint32_t h, int ch, int quality) {
  struct jpeg_compress_struct *ci = &e->ci;
  e->dest.init_destination = jdest_init;
  e->dest.empty_output_buffer = jdest_empty;
  e->dest.term_destination = jdest_term;
  ci->dest = &e->dest;
  e->progress.progress_monitor = jprogress;
  ci->progress = &e->progress;
  ci->image_width = w;
  ci->image_height = h;
  ci->input_components = ch;
  ci->in_color_space = ch == 1 ? JCS_GRAYSCALE : JCS_RGB;
  /* Baseline, 4:2:0 chroma, the accurate integer DCT: what every decoder
   * reads, and the same bytes on every machine. Optimized Huffman tables
   * cost a second pass over the coefficients and save 5-10 %. */
  jpeg_set_defaults(ci);
  jpeg_set_quality(ci, quality, TRUE);
  ci->optimize_coding = TRUE;
  jpeg_start_compress(ci, TRUE);
  size_t stride = (size_t)w * (size_t)ch;
  while (ci->next_scanline < h) {
    JSAMPROW row = (JSAMPROW)(px + stride * ci->next_scanline);
    jpeg_write_scanlines(ci, &row, 1);
  }
  jpeg_finish_compress(ci);
  return 0;
}

static int jpeg_encode_guarded(enc_t *e, const unsigned char *px, uint32_t w,
                               uint32_t h, int ch, int quality) {
  if (setjmp(e->je.jb))
    return e->je.err ? e->je.err : ATL_EINVAL;
  jpeg_create_compress(&e->ci);
  return jpeg_encode_body(e, px, w, h, ch, quality);
}

/* png_encode()'s contract, as JPEG of the given quality; ch is 1 or 3. */
static int jpeg_encode(const unsigned char *px, uint32_t w, uint32_t h, int ch,
                       int quality, size_t limit, unsigned char **out,
                       size_t *len, size_t *est) {
  enc_t e;
  memset(&e, 0, sizeof(e));
  e.limit = limit;
  e.ci.err = jerr_init(&e.je);
  int rc = jpeg_encode_guarded(&e, px, w, h, ch, quality);
  jpeg_destroy_compress(&e.ci);
  if (rc == 0 && limit && e.len > limit) {
    rc = ATL_E2BIG;
    e.done = 1;
  }
  if (rc == ATL_E2BIG)
    *est = enc_estimate(&e);
  if (rc != 0) {
    free(e.buf);
    return rc;
  }
  *out = e.buf;
  *len = e.len;
  return 0;
}

/* JPEG has no alpha: ch 2 or 4 becomes 1 or 3 over white, which is what
 * a viewer shows behind a transparent plot. ch 1 or 3 is returned as
 * is. */
static unsigned char *flatten(unsigned char *px, size_t n, int ch,
                              int *out_ch) {
  if (ch == 1 || ch == 3) {
    *out_ch = ch;
    return px;
  }
  int cc = ch - 1;
  unsigned char *o = malloc(n * (size_t)cc);
  if (o == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    const unsigned char *p = px + i * (size_t)ch;
    unsigned a = p[cc];
    for (int c = 0; c < cc; c++)
      o[i * (size_t)cc + (size_t)c] =
          (unsigned char)((p[c] * a + 255u * (255u - a) + 127u) / 255u);
  }
  *out_ch = cc;
  return o;
}

/* ---- sizes ------------------------------------------------------------- */

/* The short side that goes with long side t, for an input of l x s. */
static uint32_t short_for(uint32_t l, uint32_t s, uint32_t t) {
  uint64_t v = ((uint64_t)s * t + l / 2) / l;
  return v ? (uint32_t)v : 1;
}

static int dims_fit(const atl_image_limits_t *lim, uint32_t t, uint32_t s) {
  return (lim->max_side == 0 || t <= lim->max_side) &&
         (lim->max_short_side == 0 || s <= lim->max_short_side) &&
         (lim->max_pixels == 0 || (uint64_t)t * s <= lim->max_pixels);
}

/* The largest long side whose size fits lim. Each limit gives an upper
 * bound on it, and since a size's short side and area only grow with its
 * long side, the loop walks down from the lowest bound to the first that
 * fits; 1 x 1 fits anything. With r = l / s and the short side rounded
 * half up (so at least s * t / l - 1/2, less than s * t / l + 1/2):
 *   max_short_side m: s * t / l < m + 1/2, so t < (2m + 1) * l / (2s);
 *   max_pixels p: t * (t / r - 1/2) <= p, so t <= r/4 + sqrt(r^2/16 + p r),
 * bounds a pixel or so above the answer (r / 2 for long thin images). */
static uint32_t target_long(uint32_t l, uint32_t s,
                            const atl_image_limits_t *lim) {
  uint32_t t = l;
  if (lim->max_side && t > lim->max_side)
    t = lim->max_side;
  if (lim->max_short_side && s > lim->max_short_side) {
    uint64_t b =
        ((uint64_t)lim->max_short_side * 2 + 1) * l / (2 * (uint64_t)s);
    if (b < t)
      t = (uint32_t)b;
  }
  if (lim->max_pixels && (uint64_t)l * s > lim->max_pixels) {
    double r = (double)l / s;
    double b = floor(r / 4 + sqrt(r * r / 16 + (double)lim->max_pixels * r));
    if (b < t)
      t = (uint32_t)b;
  }
  while (t > 1 && !dims_fit(lim, t, short_for(l, s, t)))
    t--;
  return t;
}

/* ---- the API ----------------------------------------------------------- */

int atl_image_fit(const void *data, size_t len, const atl_image_limits_t *lim,
                  atl_image_fit_t *out) {
  if (out == NULL)
    return ATL_EINVAL;
  memset(out, 0, sizeof(*out));
  if (data == NULL || len == 0 || lim == NULL)
    return ATL_EINVAL;
  const unsigned char *in = data;
  int fmt = 0;
  uint32_t w = 0, h = 0;
  int rc = probe(in, len, &fmt, &w, &h);
  if (rc != 0)
    return rc;
  out->orig_width = w;
  out->orig_height = h;
  int wide = w >= h;
  uint32_t l = wide ? w : h, s = wide ? h : w;
  uint32_t t = target_long(l, s, lim);
  if (t == l &&
      (lim->max_base64 == 0 || atl_base64_len(len) <= lim->max_base64)) {
    out->data = malloc(len);
    if (out->data == NULL)
      return ATL_ENOMEM;
    memcpy(out->data, in, len);
    out->len = len;
    out->mime = fmt == FMT_PNG ? fit_mime_png : fit_mime_jpeg;
    out->width = w;
    out->height = h;
    return 0;
  }
  /* The most bytes whose base64 fits: 4 * ceil(n / 3) <= max. */
  size_t budget = lim->max_base64 / 4 * 3;
  if (lim->max_base64 && budget == 0)
    return ATL_E2BIG;
  uint32_t floor_t = t < FIT_FLOOR_SIDE ? t : FIT_FLOOR_SIDE;
  int try_png = fmt == FMT_PNG;
  for (;;) {
    uint32_t ts = short_for(l, s, t);
    uint32_t dw = wide ? t : ts, dh = wide ? ts : t;
    unsigned char *px = NULL, *file = NULL;
    int ch = 0, quality = 0;
    size_t flen = 0, est = 0;
    rc = decode_scaled(in, len, fmt, w, h, dw, dh, &px, &ch);
    if (rc != 0)
      return rc;
    if (try_png) {
      rc = png_encode(px, dw, dh, ch, budget, &file, &flen, &est);
      try_png = 0;
    } else {
      rc = ATL_E2BIG;
    }
    if (rc == ATL_E2BIG) {
      int jch = 0;
      unsigned char *flat = flatten(px, (size_t)dw * dh, ch, &jch);
      rc = flat == NULL ? ATL_ENOMEM : ATL_E2BIG;
      for (size_t q = 0; rc == ATL_E2BIG &&
                         q < sizeof(fit_qualities) / sizeof(fit_qualities[0]);
           q++) {
        quality = fit_qualities[q];
        rc =
            jpeg_encode(flat, dw, dh, jch, quality, budget, &file, &flen, &est);
      }
      if (flat != px)
        free(flat);
    }
    free(px);
    if (rc == 0) {
      out->mime = quality ? fit_mime_jpeg : fit_mime_png;
      out->data = file;
      out->len = flen;
      out->width = dw;
      out->height = dh;
      out->quality = quality;
      out->changed = 1;
      return 0;
    }
    if (rc != ATL_E2BIG || t <= floor_t)
      return rc;
    /* The file's size goes with its area: aim for the budget, with 5 %
     * to spare on each side for the estimate's error. */
    double f = sqrt((double)budget / (double)(est ? est : 1)) * 0.95;
    uint32_t nt = (uint32_t)(t * f);
    if (nt >= t)
      nt = t - 1;
    t = nt < floor_t ? floor_t : nt;
  }
}

void atl_image_fit_free(atl_image_fit_t *f) {
  if (f == NULL)
    return;
  free(f->data);
  memset(f, 0, sizeof(*f));
}

int atl_image_fit_note(const atl_image_fit_t *f, char *buf, size_t cap) {
  int scaled = f != NULL && f->changed &&
               (f->width != f->orig_width || f->height != f->orig_height);
  if (f == NULL || !f->changed || (!scaled && !f->quality))
    return snprintf(buf, cap, "%s", "");
  if (scaled && f->quality)
    return snprintf(buf, cap,
                    "[The image was scaled from %ux%u to %ux%u px and sent "
                    "as JPEG (quality %d) to fit the model provider's "
                    "limits.]",
                    f->orig_width, f->orig_height, f->width, f->height,
                    f->quality);
  if (scaled)
    return snprintf(buf, cap,
                    "[The image was scaled from %ux%u to %ux%u px to fit "
                    "the model provider's limits.]",
                    f->orig_width, f->orig_height, f->width, f->height);
  return snprintf(buf, cap,
                  "[The image was sent as JPEG (quality %d) at its full "
                  "%ux%u px to fit the model provider's size limit.]",
                  f->quality, f->width, f->height);
}
