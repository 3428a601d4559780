/* The HTTP API's token and the daemon's other secrets (token.h). Made once, at
 * the first start, and reused afterwards, so that the link with ?token= a user
 * bookmarked and the cookie a browser holds keep working across restarts
 * (Jupyter does the same with its own token). Deleting the file revokes every
 * link and cookie at the next start. */
#include "atl-build.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "token.h"
#include "util.h"

static int is_token(const char *s, size_t n) {
  if (n == ATL_TOKEN_LEN + 1 && s[ATL_TOKEN_LEN] == '\n')
    n--;
  if (n != ATL_TOKEN_LEN)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return 1;
}

/* Reads an existing secret file through fd (open, O_NOFOLLOW); what
 * names the secret in messages ("the HTTP token"). */
static int read_token(int fd, const char *path, const char *what, char *out,
                      char **err) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int rc = -errno;
    *err = atl_printf_new("cannot stat %s: %s", path, strerror(errno));
    return rc;
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    *err = atl_printf_new("%s is not a regular file owned by atelierd's user "
                          "(uid %u); remove it and start atelierd again to "
                          "make a new one (%s)",
                          path, (unsigned)geteuid(), what);
    return ATL_EINVAL;
  }
  if ((st.st_mode & 077) != 0) {
    /* Anyone who can read the token can drive every session (and spend
     * the LLM key): refuse rather than serve with a leaked secret. */
    *err = atl_printf_new("%s has mode %04o, so other users can read %s; "
                          "run 'chmod 600 %s' (or remove it to make a new "
                          "one, which %s)",
                          path, (unsigned)(st.st_mode & 07777), what, path,
                          strcmp(what, "the HTTP token") == 0
                              ? "logs every browser out"
                              : "ends every MCP client's session");
    return ATL_EINVAL;
  }
  char buf[ATL_TOKEN_LEN + 2];
  ssize_t n = read(fd, buf, sizeof(buf));
  if (n < 0) {
    int rc = -errno;
    *err = atl_printf_new("cannot read %s: %s", path, strerror(errno));
    return rc;
  }
  if (!is_token(buf, (size_t)n)) {
    *err = atl_printf_new("%s does not hold %s (64 lowercase hex "
                          "digits); remove it and start atelierd again to "
                          "make a new one",
                          path, what);
    return ATL_EINVAL;
  }
  memcpy(out, buf, ATL_TOKEN_LEN);
  out[ATL_TOKEN_LEN] = '\0';
  return 0;
}

/* Writes a new token to a private temporary file, then links it to path:
 * link(2) fails with EEXIST if another daemon got there first, and a
 * reader sees either no file or the whole token. Returns 0, -EEXIST
 * (read the other one's), or another negative code with *err. */
static int make_token(const char *dir, const char *name, const char *path,
                      char *out, char **err) {
  char tok[ATL_TOKEN_LEN + 1];
  int rc = atl_random_id(tok);
  if (rc == 0)
    rc = atl_random_id(tok + ATL_TOKEN_LEN / 2);
  if (rc != 0) {
    *err = atl_printf_new("getrandom failed: %s", atl_strerror(rc));
    return rc;
  }
  char *tmp = atl_printf_new("%s/.%s.%ld", dir, name, (long)getpid());
  if (tmp == NULL)
    return ATL_ENOMEM;
  unlink(tmp); /* a leftover of a crashed start with the same pid */
  int fd =
      open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    rc = -errno;
    *err = atl_printf_new("cannot create %s: %s", tmp, strerror(errno));
    free(tmp);
    return rc;
  }
  tok[ATL_TOKEN_LEN] = '\n';
  int ok = write(fd, tok, ATL_TOKEN_LEN + 1) == ATL_TOKEN_LEN + 1 &&
           fchmod(fd, 0600) == 0 && fsync(fd) == 0;
  int wr_errno = errno;
  close(fd);
  if (!ok) {
    *err = atl_printf_new("cannot write %s: %s", tmp, strerror(wr_errno));
    unlink(tmp);
    free(tmp);
    return -wr_errno;
  }
  rc = link(tmp, path) == 0 ? 0 : -errno;
  unlink(tmp);
  free(tmp);
  if (rc == 0) {
    /* The new name must survive a crash as well as the contents do. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      fsync(dfd);
      close(dfd);
    }
    memcpy(out, tok, ATL_TOKEN_LEN);
    out[ATL_TOKEN_LEN] = '\0';
  } else if (rc != -EEXIST) {
    *err = atl_printf_new("cannot create %s: %s", path, strerror(-rc));
  }
  return rc;
}

int atl_secret_load(const char *dir, const char *name, const char *what,
                    char out[ATL_TOKEN_LEN + 1], char **err) {
  *err = NULL;
  char *path = atl_printf_new("%s/%s", dir, name);
  if (path == NULL)
    return ATL_ENOMEM;
  int rc = 0;
  for (int attempt = 0; attempt < 2; attempt++) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      rc = read_token(fd, path, what, out, err);
      close(fd);
      break;
    }
    if (errno != ENOENT) {
      rc = -errno;
      *err =
          atl_printf_new("cannot open %s: %s%s", path, strerror(errno),
                         errno == ELOOP ? " (a symbolic link: remove it)" : "");
      break;
    }
    rc = make_token(dir, name, path, out, err);
    if (rc != -EEXIST)
      break;
  }
  if (rc != 0 && *err == NULL)
    *err = atl_printf_new("cannot load %s: %s", path, atl_strerror(rc));
  free(path);
  return rc;
}

int atl_token_load(const char *dir, char out[ATL_TOKEN_LEN + 1], char **err) {
  return atl_secret_load(dir, "token", "the HTTP token", out, err);
}
