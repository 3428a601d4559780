/* Reading the files of tests/data from a Criterion test. */
#ifndef ATL_TEST_DATA_H
#define ATL_TEST_DATA_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

/* The whole of tests/data/NAME (under $ATL_TEST_SRCDIR, else the source
 * tree the test was built from), NUL-terminated, in a malloc()ed buffer
 * the test frees; its length in *len. A missing file fails the test. */
static inline char *atl_test_slurp(const char *name, size_t *len) {
  char path[4096];
  const char *src = getenv("ATL_TEST_SRCDIR");
  snprintf(path, sizeof(path), "%s/tests/data/%s", src ? src : ATL_TEST_SRCDIR,
           name);
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = 0;
  fclose(f);
  *len = (size_t)n;
  return buf;
}

#endif
