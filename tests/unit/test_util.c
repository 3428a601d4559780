#include <criterion/criterion.h>
#include <string.h>

#include "util.h"

Test(util, random_ids_are_hex_and_distinct) {
  char a[33], b[33];
  cr_assert_eq(atl_random_id(a), 0);
  cr_assert_eq(atl_random_id(b), 0);
  cr_assert(atl_is_session_id(a));
  cr_assert(atl_is_session_id(b));
  cr_assert_str_neq(a, b);
}

Test(util, session_id_check) {
  cr_assert_not(atl_is_session_id("abc"));
  cr_assert_not(atl_is_session_id("0123456789ABCDEF0123456789abcdef"));
  cr_assert_not(atl_is_session_id("0123456789abcdef0123456789abcdef0"));
  cr_assert(atl_is_session_id("0123456789abcdef0123456789abcdef"));
  cr_assert_not(atl_is_session_id(NULL));
}

Test(util, sha256_known_vector) {
  char out[65];
  atl_sha256_hex("abc", 3, out);
  cr_assert_str_eq(
      out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

Test(util, time_format) {
  char buf[32];
  atl_format_time_ms(1795275738123LL, buf, sizeof(buf));
  cr_assert_str_eq(buf, "2026-11-21T15:42:18.123Z");
  /* The same second again (the cached text), the next one, and the
   * milliseconds' zeros. */
  atl_format_time_ms(1795275738007LL, buf, sizeof(buf));
  cr_assert_str_eq(buf, "2026-11-21T15:42:18.007Z");
  atl_format_time_ms(1795275739000LL, buf, sizeof(buf));
  cr_assert_str_eq(buf, "2026-11-21T15:42:19.000Z");
  /* Before the epoch, and a buffer too short (cut, still a string). */
  atl_format_time_ms(-1, buf, sizeof(buf));
  cr_assert_str_eq(buf, "1969-12-31T23:59:59.999Z");
  char small[11];
  atl_format_time_ms(1795275738123LL, small, sizeof(small));
  cr_assert_str_eq(small, "2026-11-21");
}

Test(util, strerror_names) {
  cr_assert_str_eq(atl_err_name(ATL_ENOENT), "ENOENT");
  cr_assert_str_eq(atl_strerror(ATL_EABI), "plugin ABI mismatch");
  cr_assert_str_eq(atl_strerror(-99999), "unknown error");
}

/* The plain-prefix scan against the definition, byte by byte: every byte
 * value at every place in strings of every length up to 72 (so the
 * sixteen- and eight-byte parts meet each at each lane, in a first block
 * and a later one), and random strings. */
static size_t plain_prefix_ref(const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
      break;
    i++;
  }
  return i;
}

Test(util, plain_prefix_matches_its_definition) {
  char buf[73];
  for (size_t n = 0; n <= 72; n++) {
    for (size_t at = 0; at < n; at++) {
      for (int c = 0; c < 256; c++) {
        memset(buf, 'a', n);
        buf[at] = (char)c;
        size_t want = plain_prefix_ref(buf, n);
        cr_assert_eq(atl_plain_prefix(buf, n), want,
                     "n=%zu at=%zu byte=0x%02x: %zu, not %zu", n, at, c,
                     atl_plain_prefix(buf, n), want);
      }
    }
    memset(buf, 'z', n);
    cr_assert_eq(atl_plain_prefix(buf, n), n);
  }
  /* Bytes that borrow across lanes in the word-wide tests: 0x20 and 0x21
   * next to 0x1f, 0x22 and 0x23, 0x7e beside 0x7f and 0x80. */
  static const unsigned char edge[] = {0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b,
                                       0x5c, 0x5d, 0x7e, 0x7f, 0x80, 0xff,
                                       0x00, 0x01, 'a',  ' '};
  unsigned seed = 12345;
  for (int round = 0; round < 200000; round++) {
    size_t n = (seed = seed * 1103515245u + 12345u) >> 16 & 63;
    for (size_t i = 0; i < n; i++) {
      seed = seed * 1103515245u + 12345u;
      unsigned r = seed >> 16;
      /* Mostly plain bytes, so the prefixes are long. */
      buf[i] = (char)(r % 8 ? 0x20 + r / 8 % 0x5f : edge[r / 8 % 16]);
    }
    cr_assert_eq(atl_plain_prefix(buf, n), plain_prefix_ref(buf, n), "round %d",
                 round);
  }
}

Test(util, u64_dec) {
  char out[21];
  size_t n = atl_u64_dec(0, out);
  out[n] = '\0';
  cr_assert_str_eq(out, "0");
  n = atl_u64_dec(1234567, out);
  out[n] = '\0';
  cr_assert_str_eq(out, "1234567");
  n = atl_u64_dec(UINT64_MAX, out);
  out[n] = '\0';
  cr_assert_str_eq(out, "18446744073709551615");
}
