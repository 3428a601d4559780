/* seedrandom's ARC4 (arc4.h). */
#include "arc4.h"

#include <string.h>

static uint8_t next_byte(atl_op_arc4_t *r) {
  r->i = (uint8_t)(r->i + 1);
  uint8_t t = r->s[r->i];
  r->j = (uint8_t)(r->j + t);
  r->s[r->i] = r->s[r->j];
  r->s[r->j] = t;
  return r->s[(uint8_t)(r->s[r->i] + t)];
}

/* JavaScript strings are UTF-16: the key comes from their code units. */
static size_t utf16_units(const char *s, uint16_t *out, size_t max) {
  size_t n = 0;
  const unsigned char *p = (const unsigned char *)s;
  while (*p && n < max) {
    uint32_t c = *p++;
    int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
    if (extra)
      c &= 0x3fu >> extra;
    for (int k = 0; k < extra && (*p & 0xc0) == 0x80; k++)
      c = (c << 6) | (*p++ & 0x3f);
    if (c >= 0x10000 && n + 1 < max) {
      c -= 0x10000;
      out[n++] = (uint16_t)(0xd800 + (c >> 10));
      out[n++] = (uint16_t)(0xdc00 + (c & 0x3ff));
    } else {
      out[n++] = (uint16_t)c;
    }
  }
  return n;
}

void atl__op_arc4_seed(atl_op_arc4_t *r, const char *seed) {
  static uint16_t units[4096];
  size_t n = utf16_units(seed, units, sizeof(units) / sizeof(units[0]));
  uint8_t key[256];
  size_t keylen = n < 256 ? n : 256;
  memset(key, 0, sizeof(key));
  unsigned smear = 0;
  for (size_t j = 0; j < n; j++) {
    smear ^= key[j & 255] * 19u;
    key[j & 255] = (uint8_t)(255 & (smear + units[j]));
  }
  if (keylen == 0)
    keylen = 1, key[0] = 0;
  for (int i = 0; i < 256; i++)
    r->s[i] = (uint8_t)i;
  uint8_t j = 0;
  for (int i = 0; i < 256; i++) {
    uint8_t t = r->s[i];
    j = (uint8_t)(j + key[i % keylen] + t);
    r->s[i] = r->s[j];
    r->s[j] = t;
  }
  r->i = r->j = 0;
  for (int k = 0; k < 256; k++)
    next_byte(r);
}

double atl__op_arc4_next(atl_op_arc4_t *r) {
  double n = 0, d = 281474976710656.0, x = 0; /* 2^48 */
  for (int k = 0; k < 6; k++)
    n = n * 256 + next_byte(r);
  while (n < 4503599627370496.0) { /* 2^52 */
    n = (n + x) * 256;
    d *= 256;
    x = next_byte(r);
  }
  while (n >= 9007199254740992.0) { /* 2^53 */
    n /= 2;
    d /= 2;
    x = (double)((unsigned)x >> 1);
  }
  return (n + x) / d;
}
