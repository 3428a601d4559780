/* atelier-optics: simulates a Ray Optics Simulation scene and prints a
 * detector's irradiance CSV (as the app's "Export data" writes it) or a
 * JSON summary of the run. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "optics.h"

static void usage(FILE *f) {
  fputs("usage: atelier-optics SCENE.json [--csv [INDEX]] [--json] "
        "[--ray-limit N]\n"
        "  --csv [INDEX]   the irradiance CSV of the Detector at objs[INDEX],\n"
        "                  or of the first Detector with irradMap\n"
        "  --json          a summary: segments by interaction, detectors,\n"
        "                  warnings, processed rays\n"
        "  --ray-limit N   stop after N processed rays (default 10000000;\n"
        "                  0 for none)\n"
        "  --write FILE    write the scene back in the app's format (fields\n"
        "                  at their defaults left out; - for stdout)\n",
        f);
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0)
      break;
    if (n + 1 == cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  int rerr = ferror(f);
  if (f != stdin)
    fclose(f);
  if (!buf || rerr) {
    free(buf);
    errno = rerr ? EIO : ENOMEM;
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

static const char *kind_name(int k) {
  static const char *const names[] = {"source", "reflect", "refract", "tir",
                                      "pass"};
  return names[k];
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static json_object *summary(const atl_op_scene *s, const atl_op_sim *sim,
                            double load_ms, double sim_ms) {
  json_object *o = json_object_new_object();
  json_object *segs = json_object_new_object();
  long total = 0;
  for (int k = 0; k <= ATL_OP_PASS; k++) {
    json_object_object_add(segs, kind_name(k),
                           json_object_new_int64(sim->kinds[k]));
    total += sim->kinds[k];
  }
  json_object_object_add(segs, "total", json_object_new_int64(total));
  json_object_object_add(o, "segments", segs);
  json_object *dets = json_object_new_array();
  for (int i = 0; i < s->noptical; i++) {
    double p, n, sh;
    if (atl_optics_detector_reading(s->optical[i], &p, &n, &sh) != 0)
      continue;
    json_object *d = json_object_new_object();
    json_object_object_add(d, "obj",
                           json_object_new_int(s->optical[i]->doc_index));
    json_object_object_add(d, "power", json_object_new_double(p));
    json_object_object_add(d, "normal", json_object_new_double(n));
    json_object_object_add(d, "shear", json_object_new_double(sh));
    json_object_array_add(dets, d);
  }
  json_object_object_add(o, "detectors", dets);
  json_object *warn = json_object_new_array();
  if (sim->warning)
    json_object_array_add(warn, json_object_new_string(sim->warning));
  for (int i = 0; i < s->nobjs; i++)
    if (s->objs[i]->warning)
      json_object_array_add(warn, json_object_new_string(s->objs[i]->warning));
  json_object_object_add(o, "warnings", warn);
  json_object *errs = json_object_new_array();
  for (int i = 0; i < s->nobjs; i++)
    if (s->objs[i]->error)
      json_object_array_add(errs, json_object_new_string(s->objs[i]->error));
  json_object_object_add(o, "errors", errs);
  json_object_object_add(o, "processed_rays",
                         json_object_new_int64(sim->processed));
  json_object_object_add(o, "emitted_rays",
                         json_object_new_int64(sim->emitted));
  json_object_object_add(o, "total_truncation",
                         json_object_new_double(sim->total_truncation));
  json_object_object_add(o, "brightness_scale",
                         json_object_new_double(sim->brightness_scale));
  json_object_object_add(o, "stopped_at_ray_limit",
                         json_object_new_boolean(sim->stopped));
  json_object_object_add(o, "load_ms", json_object_new_double(load_ms));
  json_object_object_add(o, "simulate_ms", json_object_new_double(sim_ms));
  return o;
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"csv", optional_argument, NULL, 'c'},
      {"json", no_argument, NULL, 'j'},
      {"ray-limit", required_argument, NULL, 'l'},
      {"write", required_argument, NULL, 'w'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int want_csv = 0, want_json = 0, c;
  const char *write_path = NULL;
  /* Upstream's scene tests run without a limit; a scene that loops for
   * ever (two facing mirrors and no maxRayDepth) must still end. Ten
   * million rays is ten times the largest test scene. */
  long csv_index = -1, limit = 10000000;
  while ((c = getopt_long(argc, argv, "hj", opts, NULL)) != -1) {
    switch (c) {
    case 'c':
      want_csv = 1;
      if (!optarg && optind < argc && argv[optind][0] >= '0' &&
          argv[optind][0] <= '9')
        optarg = argv[optind++];
      if (optarg) {
        char *end;
        csv_index = strtol(optarg, &end, 10);
        if (*end || csv_index < 0) {
          fprintf(stderr,
                  "atelier-optics: --csv takes an object index, not "
                  "\"%s\"\n",
                  optarg);
          return 2;
        }
      }
      break;
    case 'j':
      want_json = 1;
      break;
    case 'l': {
      char *end;
      limit = strtol(optarg, &end, 10);
      if (*end || limit < 0) {
        fprintf(stderr, "atelier-optics: --ray-limit takes a count\n");
        return 2;
      }
      if (limit == 0)
        limit = LONG_MAX;
      break;
    }
    case 'w':
      write_path = optarg;
      break;
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (optind + 1 != argc) {
    usage(stderr);
    return 2;
  }
  const char *path = argv[optind];
  size_t len = 0;
  char *text = slurp(path, &len);
  if (!text) {
    fprintf(stderr, "atelier-optics: %s: %s\n", path, strerror(errno));
    return 1;
  }
  json_tokener *tok = json_tokener_new();
  json_object *doc = json_tokener_parse_ex(tok, text, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  if (!doc || jerr != json_tokener_success) {
    fprintf(stderr, "atelier-optics: %s: not valid JSON (%s at byte %zu)\n",
            path, doc ? "trailing data" : json_tokener_error_desc(jerr),
            json_tokener_get_parse_end(tok));
    json_object_put(doc);
    json_tokener_free(tok);
    free(text);
    return 1;
  }
  json_tokener_free(tok);
  free(text);
  atl_op_scene *s = NULL;
  char *err = NULL;
  double t0 = now_ms();
  int rc = atl__op_scene_load(doc, &s, &err);
  double t1 = now_ms();
  json_object_put(doc);
  if (rc != 0) {
    fprintf(stderr, "atelier-optics: %s: %s\n", path,
            err ? err : strerror(-rc));
    free(err);
    return 1;
  }
  if (write_path) {
    json_object *out = atl__op_scene_write(s);
    const char *out_text = json_object_to_json_string_ext(
        out, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                 JSON_C_TO_STRING_NOSLASHESCAPE);
    FILE *f = strcmp(write_path, "-") == 0 ? stdout : fopen(write_path, "w");
    int ok = f && fputs(out_text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && f != stdout && fclose(f) != 0)
      ok = 0;
    json_object_put(out);
    if (!ok) {
      fprintf(stderr, "atelier-optics: %s: %s\n", write_path, strerror(errno));
      atl__op_scene_free(s);
      return 1;
    }
  }
  atl_op_sim *sim = NULL;
  rc = atl__op_sim_run(s, limit, 0, &sim);
  double t2 = now_ms();
  int status = 0;
  if (rc != 0) {
    fprintf(stderr, "atelier-optics: %s: %s\n", path,
            sim && sim->error ? sim->error : strerror(-rc));
    status = 1;
  } else {
    if (sim->warning && !want_json)
      fprintf(stderr, "atelier-optics: warning: %s\n", sim->warning);
    if (sim->stopped && !want_json)
      fprintf(stderr,
              "atelier-optics: warning: stopped after %ld rays (--ray-limit); "
              "the readings are partial\n",
              sim->processed);
    if (want_csv) {
      const atl_op_obj *det = NULL;
      for (int i = 0; i < s->noptical && !det; i++) {
        const atl_op_obj *o = s->optical[i];
        if (o->cls != &atl__op_detector)
          continue;
        if (csv_index >= 0 ? o->doc_index == csv_index : 1) {
          char *csv = atl_optics_detector_csv(o);
          if (csv) {
            det = o;
            fputs(csv, stdout);
            free(csv);
          }
        }
      }
      if (!det) {
        fprintf(stderr, "atelier-optics: %s: no Detector with irradMap%s\n",
                path, csv_index >= 0 ? " at that index" : "");
        status = 1;
      }
    }
    if (want_json) {
      json_object *o = summary(s, sim, t1 - t0, t2 - t1);
      if (want_csv)
        fputc('\n', stdout);
      puts(json_object_to_json_string_ext(
          o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
      json_object_put(o);
    }
  }
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
  return status;
}
