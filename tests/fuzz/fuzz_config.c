/* Fuzz target: atelierd.conf, loaded from a file as the daemon does. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char path[64];
  if (path[0] == '\0')
    snprintf(path, sizeof(path), "/tmp/atl-fuzz-config-%ld.conf",
             (long)getpid());
  FILE *f = fopen(path, "wb");
  if (f == NULL)
    return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  atl_config_t cfg;
  atl_config_defaults(&cfg);
  char *err = NULL;
  atl_config_load(&cfg, path, &err);
  free(err);
  atl_config_free(&cfg);
  unlink(path);
  return 0;
}
