/* Numbers written as JavaScript writes them (Number.prototype.toString):
 * the shortest decimal that reads back as the same double, in fixed
 * notation from 1e-6 to 1e21 and exponential outside it. Ray Optics
 * Simulation's detector CSV is written that way, and ours must compare
 * equal to it as text where the numbers are equal. */
#ifndef ATL_OPTICS_JSNUM_H
#define ATL_OPTICS_JSNUM_H

#include <stddef.h>

/* The shortest text long enough for any double: "-1.2345678901234567e-308". */
#define ATL_OP_JSNUM_MAX 32

/* The shortest significand digits of a finite v > 0 that read back as v
 * (NUL-terminated, at most 17) and n such that v = 0.d1d2...dk x 10^n;
 * returns k. JavaScript's and mathjs's number text both start here. */
int atl__op_shortest(double v, char digits[24], int *n);

/* Writes v into buf (at least ATL_OP_JSNUM_MAX bytes), NUL-terminated, and
 * returns its length. NaN is "NaN", the infinities "Infinity" and
 * "-Infinity", and -0 is "0", as in JavaScript. */
size_t atl__op_jsnum(double v, char *buf);

#endif
