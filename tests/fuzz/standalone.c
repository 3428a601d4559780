/* Replays fuzz inputs without libFuzzer (janus's fuzzers/engines/
 * standalone.c idea): every file named on the command line, or every file
 * of the directories named, goes through LLVMFuzzerTestOneInput once. Built
 * with the ordinary compiler, so `make check` replays the corpora under
 * gcc, valgrind and the sanitizer build. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    perror(path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  if (buf == NULL || got != (size_t)n) {
    free(buf);
    return 1;
  }
  LLVMFuzzerTestOneInput(buf, got);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int files = 0, bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      struct dirent **list;
      int n = scandir(argv[i], &list, NULL, alphasort);
      for (int k = 0; k < n; k++) {
        if (list[k]->d_name[0] != '.') {
          char path[4096];
          snprintf(path, sizeof(path), "%s/%s", argv[i], list[k]->d_name);
          bad += replay(path);
          files++;
        }
        free(list[k]);
      }
      free(list);
    } else {
      bad += replay(argv[i]);
      files++;
    }
  }
  printf("replayed %d inputs\n", files);
  return bad != 0 || files == 0;
}
