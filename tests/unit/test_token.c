/* daemon/token.c: the HTTP API's token file. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "token.h"

static char dir[64];
static char file[96];

static void setup(void) {
  strcpy(dir, "/tmp/atl-token-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  snprintf(file, sizeof(file), "%s/token", dir);
}

static void teardown(void) {
  unlink(file);
  rmdir(dir);
}

static void write_file(const char *text, mode_t mode) {
  int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, mode);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  fchmod(fd, mode);
  close(fd);
}

/* Loading fails with an error that names the file and contains want. */
static void expect_error(const char *want) {
  char tok[ATL_TOKEN_LEN + 1] = "";
  char *err = NULL;
  cr_assert_lt(atl_token_load(dir, tok, &err), 0);
  cr_assert_not_null(err);
  cr_assert(strstr(err, file) != NULL, "the error names no file: %s", err);
  cr_assert(strstr(err, want) != NULL, "'%s' not in: %s", want, err);
  free(err);
}

TestSuite(token, .init = setup, .fini = teardown);

Test(token, made_once_0600_and_reused) {
  char a[ATL_TOKEN_LEN + 1], b[ATL_TOKEN_LEN + 1];
  char *err = NULL;
  cr_assert_eq(atl_token_load(dir, a, &err), 0, "%s", err ? err : "");
  cr_assert_eq(strlen(a), 64);
  cr_assert_eq(strspn(a, "0123456789abcdef"), 64);
  struct stat st;
  cr_assert_eq(stat(file, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
  cr_assert_eq(st.st_size, 65);
  cr_assert_eq(atl_token_load(dir, b, &err), 0);
  cr_assert_str_eq(a, b);
  /* No temporary file is left behind. */
  char tmp[128];
  snprintf(tmp, sizeof(tmp), "%s/.token.%ld", dir, (long)getpid());
  cr_assert_neq(access(tmp, F_OK), 0);
}

Test(token, two_directories_two_tokens) {
  char a[ATL_TOKEN_LEN + 1], b[ATL_TOKEN_LEN + 1];
  char *err = NULL;
  cr_assert_eq(atl_token_load(dir, a, &err), 0);
  char other[] = "/tmp/atl-token-XXXXXX";
  cr_assert_not_null(mkdtemp(other));
  cr_assert_eq(atl_token_load(other, b, &err), 0);
  cr_assert_str_neq(a, b);
  char f[96];
  snprintf(f, sizeof(f), "%s/token", other);
  unlink(f);
  rmdir(other);
}

Test(token, readable_by_others_is_refused) {
  write_file(
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
      0644);
  expect_error("chmod 600");
}

Test(token, content_not_a_token_is_refused) {
  write_file("hunter2\n", 0600);
  expect_error("64 lowercase hex digits");
  write_file("0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
             0600);
  expect_error("64 lowercase hex digits");
}

Test(token, a_written_token_is_read_as_it_is) {
  const char *t =
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  write_file(t, 0600);
  char tok[ATL_TOKEN_LEN + 1];
  char *err = NULL;
  cr_assert_eq(atl_token_load(dir, tok, &err), 0, "%s", err ? err : "");
  cr_assert_str_eq(tok, t);
}

Test(token, a_symbolic_link_is_refused) {
  char target[128];
  snprintf(target, sizeof(target), "%s/elsewhere", dir);
  cr_assert_eq(symlink(target, file), 0);
  expect_error("symbolic link");
}

Test(token, another_secret_is_its_own_file_and_names_itself) {
  char tok[ATL_TOKEN_LEN + 1], key[ATL_TOKEN_LEN + 1], again[ATL_TOKEN_LEN + 1];
  char *err = NULL;
  cr_assert_eq(atl_token_load(dir, tok, &err), 0, "%s", err ? err : "");
  cr_assert_eq(
      atl_secret_load(dir, ATL_MCP_KEY_FILE, "the MCP session key", key, &err),
      0, "%s", err ? err : "");
  cr_assert_str_neq(tok, key, "two secrets, two random values");
  /* Kept: the next start reads the same key. */
  cr_assert_eq(atl_secret_load(dir, ATL_MCP_KEY_FILE, "the MCP session key",
                               again, &err),
               0);
  cr_assert_str_eq(again, key);
  char path[128];
  snprintf(path, sizeof(path), "%s/%s", dir, ATL_MCP_KEY_FILE);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0600);
  /* A leaked one is refused, naming what it is. */
  cr_assert_eq(chmod(path, 0644), 0);
  cr_assert_lt(atl_secret_load(dir, ATL_MCP_KEY_FILE, "the MCP session key",
                               again, &err),
               0);
  cr_assert(strstr(err, "the MCP session key") != NULL, "%s", err);
  free(err);
  unlink(path);
}
