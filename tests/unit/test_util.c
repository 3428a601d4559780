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
