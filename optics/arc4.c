/* seedrandom 3.0.5's ARC4 generator (arc4.h). The arithmetic of a draw is
 * done in doubles on purpose: seedrandom does it in JavaScript numbers,
 * and the rounding of (n + x) near 2^53 must be the same. */
#include "arc4.h"

#include <math.h>
#include <stddef.h>

/* Decodes one UTF-8 sequence at *p into a code point and advances *p. A
 * malformed sequence (a stray continuation byte, a truncated sequence, an
 * overlong form, a surrogate or a value above U+10FFFF) yields U+FFFD and
 * consumes one byte, as the WHATWG decoder does for its first byte. */
static uint32_t utf8_next(const unsigned char **p) {
  const unsigned char *s = *p;
  uint32_t c = s[0];
  int len;
  uint32_t min;
  if (c < 0x80) {
    *p = s + 1;
    return c;
  }
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, c &= 0x1F, min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, c &= 0x0F, min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, c &= 0x07, min = 0x10000;
  } else {
    *p = s + 1;
    return 0xFFFD;
  }
  for (int k = 1; k < len; k++) {
    if ((s[k] & 0xC0) != 0x80) {
      *p = s + 1;
      return 0xFFFD;
    }
    c = (c << 6) | (s[k] & 0x3F);
  }
  if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
    *p = s + 1;
    return 0xFFFD;
  }
  *p = s + len;
  return c;
}

/* seedrandom's mixkey for one UTF-16 code unit: the key slot j & 255
 * becomes the low byte of (smear ^= slot * 19) + unit. A slot not yet
 * written reads as 0, like JavaScript's undefined in that expression. */
static void mix(uint8_t key[256], uint32_t *smear, size_t j, uint32_t unit) {
  *smear ^= (uint32_t)key[j & 255] * 19u;
  key[j & 255] = (uint8_t)((*smear + unit) & 255u);
}

/* RC4's output byte, advancing the state. */
static uint8_t byte(atl_op_arc4_t *r) {
  uint8_t t = r->s[++r->i];
  r->j = (uint8_t)(r->j + t);
  r->s[r->i] = r->s[r->j];
  r->s[r->j] = t;
  return r->s[(uint8_t)(r->s[r->i] + t)];
}

void atl__op_arc4_seed(atl_op_arc4_t *r, const char *seed) {
  uint8_t key[256] = {0};
  uint32_t smear = 0;
  size_t n = 0;
  const unsigned char *p = (const unsigned char *)seed;
  while (*p) {
    uint32_t c = utf8_next(&p);
    if (c >= 0x10000) {
      c -= 0x10000;
      mix(key, &smear, n++, 0xD800 + (c >> 10));
      mix(key, &smear, n++, 0xDC00 + (c & 0x3FF));
    } else {
      mix(key, &smear, n++, c);
    }
  }
  /* An empty seed gives the key [0], as seedrandom's ARC4 does. */
  size_t keylen = n < 256 ? n : 256;
  if (keylen == 0)
    keylen = 1;
  for (int i = 0; i < 256; i++)
    r->s[i] = (uint8_t)i;
  uint8_t j = 0;
  for (int i = 0; i < 256; i++) {
    uint8_t t = r->s[i];
    j = (uint8_t)(j + key[(size_t)i % keylen] + t);
    r->s[i] = r->s[j];
    r->s[j] = t;
  }
  r->i = r->j = 0;
  /* seedrandom discards the first 256 bytes (RC4-drop[256]). */
  for (int k = 0; k < 256; k++)
    (void)byte(r);
}

/* seedrandom's draw, in integers: its doubles n, x and d hold exact
 * integers and powers of two all along (n stays below 2^61, and halving
 * it drops only zero bits, as it was a multiple of 256), so the same
 * steps in uint64_t and a final scaling by d's power of two give the very
 * same double, without a floating-point division per step. */
double atl__op_arc4_next(atl_op_arc4_t *r) {
  uint64_t n = 0, x = 0;
  int e = 48; /* d = 2^e */
  for (int k = 0; k < 6; k++)
    n = n * 256 + byte(r);
  while (n < (1ULL << 52)) {
    n = (n + x) * 256;
    e += 8;
    x = byte(r);
  }
  while (n >= (1ULL << 53)) {
    n /= 2;
    e -= 1;
    x >>= 1;
  }
  return ldexp((double)(n + x), -e);
}
