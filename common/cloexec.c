/* See cloexec.h. */
#include "atl-build.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>

#include "cloexec.h"

int atl_cloexec_all(void) {
  /* opendir() opens its own descriptor close-on-exec; it is skipped
   * below only because changing it would be pointless. */
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL)
    return -1;
  int changed = 0;
  int self = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd <= 2 || fd == self)
      continue;
    int flags = fcntl((int)fd, F_GETFD);
    if (flags >= 0 && !(flags & FD_CLOEXEC) &&
        fcntl((int)fd, F_SETFD, flags | FD_CLOEXEC) == 0)
      changed++;
  }
  closedir(d);
  return changed;
}
