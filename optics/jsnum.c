/* JavaScript's Number.prototype.toString for doubles (jsnum.h), after
 * ECMA-262's Number::toString: the shortest digits that round-trip, then
 * the layout rules by the decimal exponent. */
#include "jsnum.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shortest significand digits of a finite, positive v and its
 * decimal exponent n, such that v = 0.d1d2...dk x 10^n. printf's %.*e
 * rounds correctly, so the first precision that reads back as v is the
 * shortest. */
int atl__op_shortest(double v, char digits[24], int *n) {
  char tmp[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
    if (prec < 17 && strtod(tmp, NULL) != v)
      continue;
    /* tmp is d[.ddd]e[+-]xx */
    int k = 0;
    const char *p = tmp;
    for (; *p && *p != 'e'; p++)
      if (*p >= '0' && *p <= '9')
        digits[k++] = *p;
    /* Trailing zeros are not significant (17 digits may have some). */
    while (k > 1 && digits[k - 1] == '0')
      k--;
    digits[k] = '\0';
    *n = atoi(p + 1) + 1;
    return k;
  }
  return 0; /* not reached: 17 digits always round-trip */
}

size_t atl__op_jsnum(double v, char *buf) {
  if (isnan(v))
    return (size_t)sprintf(buf, "NaN");
  if (isinf(v))
    return (size_t)sprintf(buf, v < 0 ? "-Infinity" : "Infinity");
  if (v == 0)
    return (size_t)sprintf(buf, "0");
  char *o = buf;
  if (v < 0) {
    *o++ = '-';
    v = -v;
  }
  char d[24];
  int n, k = atl__op_shortest(v, d, &n);
  if (k <= n && n <= 21) {
    /* An integer: the digits, then n - k zeros. */
    memcpy(o, d, (size_t)k);
    o += k;
    for (int i = k; i < n; i++)
      *o++ = '0';
  } else if (0 < n && n <= 21) {
    memcpy(o, d, (size_t)n);
    o += n;
    *o++ = '.';
    memcpy(o, d + n, (size_t)(k - n));
    o += k - n;
  } else if (-6 < n && n <= 0) {
    *o++ = '0';
    *o++ = '.';
    for (int i = 0; i < -n; i++)
      *o++ = '0';
    memcpy(o, d, (size_t)k);
    o += k;
  } else {
    *o++ = d[0];
    if (k > 1) {
      *o++ = '.';
      memcpy(o, d + 1, (size_t)(k - 1));
      o += k - 1;
    }
    o += sprintf(o, "e%c%d", n - 1 < 0 ? '-' : '+', abs(n - 1));
  }
  *o = '\0';
  return (size_t)(o - buf);
}
