/* atelier-render: renders a scene document with the render farm, outside
 * the daemon. The same farm, workers and tracer as render_scene; it is
 * also how the benchmarks and the farm's tests drive the farm.
 */
#include "atl-build.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "farm.h"
#include "film.h"
#include "kernel.h"
#include "png_encode.h"
#include "render.h"

typedef struct {
  const char *scene_path, *out_png, *out_pfm, *worker;
  const char *out_albedo, *out_normal; /* the denoiser's guides, as PFMs */
  int width, height, spp, max_depth, workers, quiet, no_nee;
  int min_samples, filter, denoise;
  uint64_t seed;
  double exposure;
  double noise, max_seconds, filter_width;
  double cancel_after_ms; /* tests: cancel the job after this long */
} cli_opts_t;

typedef struct {
  cli_opts_t *o;
  atl_farm_t *farm;
  atl_farm_job_t *job;
  uv_signal_t sigint, sigterm;
  uv_timer_t cancel_timer;
  int status;
  char *message;
  double t_submit, t_done, t_cancel;
  int tty;
} cli_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: atelier-render SCENE.json -o OUT.png [options]\n"
          "Renders a scene document (the scene plugin's format, export_scene's "
          "answer,\n"
          "or a file of shared/data/scenes) with the render farm.\n\n"
          "  -o, --output FILE    the PNG to write (required unless --pfm)\n"
          "      --pfm FILE       also write the linear radiance as a PFM\n"
          "  -W, --width N        pixels, 1..8192 (default: the scene's, else "
          "400)\n"
          "  -H, --height N       pixels, 1..8192 (default: the scene's, else "
          "300)\n"
          "  -s, --spp N          samples per pixel, 1..1048576 (default: the "
          "scene's, else 500)\n"
          "  -d, --max-depth N    path vertices, 1..1024 (default: the "
          "scene's, else 8)\n"
          "  -j, --workers N      worker processes, 1..256 (default: one per "
          "CPU)\n"
          "      --seed N         the random seed (default 0); the image is a "
          "function of it\n"
          "      --exposure STOPS multiply the radiance by 2^STOPS (default "
          "0)\n"
          "      --noise E        adaptive sampling: a pixel stops taking "
          "samples once its\n"
          "                       error estimate is under E, 0..1 (0: "
          "off, the default;\n"
          "                       Cycles' default is 0.01; --adaptive is "
          "the same)\n"
          "      --min-samples N  samples before a pixel may stop, 2..spp "
          "(default:\n"
          "                       spp/8, at least 16)\n"
          "      --max-seconds S  stop handing out work after S seconds, "
          "0..1e6 (0: no limit)\n"
          "      --filter NAME    the pixel filter: box (default), "
          "gaussian,\n"
          "                       blackman-harris\n"
          "      --filter-width W its width in pixels, 0.5..8 (default: "
          "the filter's)\n"
          "      --denoise        denoise the PNG and the PFM (albedo and "
          "normal guided)\n"
          "      --albedo-pfm FILE, --normal-pfm FILE\n"
          "                       write the first hit's albedo and normal "
          "as PFMs\n"
          "      --bsdf-only      no light sampling (for tests)\n"
          "  -q, --quiet          no progress line\n"
          "      --version, --help\n");
}

static int parse_int(const char *name, const char *v, long lo, long hi,
                     long *out) {
  char *end = NULL;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi) {
    fprintf(stderr,
            "atelier-render: --%s: expected an integer from %ld to %ld, got "
            "'%s'\n",
            name, lo, hi, v);
    return -1;
  }
  *out = n;
  return 0;
}

/* A number in (lo, hi], or [lo, hi] when lo_ok. */
static int parse_real(const char *name, const char *v, double lo, double hi,
                      int lo_ok, double *out) {
  char *end = NULL;
  double x = strtod(v, &end);
  if (end == v || *end != '\0' || !(lo_ok ? x >= lo : x > lo) || !(x <= hi)) {
    fprintf(stderr,
            "atelier-render: --%s: expected a number %s %g and at most %g, "
            "got '%s'\n",
            name, lo_ok ? "from" : "above", lo, hi, v);
    return -1;
  }
  *out = x;
  return 0;
}

static int parse_args(int argc, char **argv, cli_opts_t *o) {
  static const struct option opts[] = {
      {"output", required_argument, NULL, 'o'},
      {"pfm", required_argument, NULL, 'P'},
      {"width", required_argument, NULL, 'W'},
      {"height", required_argument, NULL, 'H'},
      {"spp", required_argument, NULL, 's'},
      {"max-depth", required_argument, NULL, 'd'},
      {"workers", required_argument, NULL, 'j'},
      {"seed", required_argument, NULL, 'S'},
      {"exposure", required_argument, NULL, 'e'},
      {"bsdf-only", no_argument, NULL, 'B'},
      {"noise", required_argument, NULL, 'N'},
      {"adaptive", required_argument, NULL, 'N'},
      {"min-samples", required_argument, NULL, 'm'},
      {"max-seconds", required_argument, NULL, 'T'},
      {"filter", required_argument, NULL, 'F'},
      {"filter-width", required_argument, NULL, 'D'},
      {"denoise", no_argument, NULL, 'z'},
      {"albedo-pfm", required_argument, NULL, 'A'},
      {"normal-pfm", required_argument, NULL, 'R'},
      {"worker", required_argument, NULL, 'w'},
      {"cancel-after-ms", required_argument, NULL, 'C'},
      {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  int c;
  long n;
  while ((c = getopt_long(argc, argv, "o:W:H:s:d:j:qh", opts, NULL)) != -1) {
    switch (c) {
    case 'o':
      o->out_png = optarg;
      break;
    case 'P':
      o->out_pfm = optarg;
      break;
    case 'W':
      if (parse_int("width", optarg, 1, 8192, &n))
        return 2;
      o->width = (int)n;
      break;
    case 'H':
      if (parse_int("height", optarg, 1, 8192, &n))
        return 2;
      o->height = (int)n;
      break;
    case 's':
      if (parse_int("spp", optarg, 1, 1 << 20, &n))
        return 2;
      o->spp = (int)n;
      break;
    case 'd':
      if (parse_int("max-depth", optarg, 1, 1024, &n))
        return 2;
      o->max_depth = (int)n;
      break;
    case 'j':
      if (parse_int("workers", optarg, 1, 256, &n))
        return 2;
      o->workers = (int)n;
      break;
    case 'S': {
      char *end = NULL;
      errno = 0;
      o->seed = strtoull(optarg, &end, 10);
      if (errno != 0 || end == optarg || *end != '\0') {
        fprintf(stderr,
                "atelier-render: --seed: expected an unsigned integer, got "
                "'%s'\n",
                optarg);
        return 2;
      }
      break;
    }
    case 'e': {
      char *end = NULL;
      o->exposure = strtod(optarg, &end);
      if (end == optarg || *end != '\0' || !(o->exposure > -64) ||
          !(o->exposure < 64)) {
        fprintf(stderr,
                "atelier-render: --exposure: expected stops between -64 and "
                "64, got '%s'\n",
                optarg);
        return 2;
      }
      break;
    }
    case 'B':
      o->no_nee = 1;
      break;
    case 'N':
      if (parse_real("noise", optarg, 0, 1, 1, &o->noise))
        return 2;
      break;
    case 'm':
      if (parse_int("min-samples", optarg, 2, 1 << 20, &n))
        return 2;
      o->min_samples = (int)n;
      break;
    case 'T':
      if (parse_real("max-seconds", optarg, 0, 1e6, 1, &o->max_seconds))
        return 2;
      break;
    case 'F':
      if (atl_render_filter_parse(optarg, &o->filter) < 0) {
        fprintf(stderr,
                "atelier-render: --filter: expected box, gaussian or "
                "blackman-harris, got '%s'\n",
                optarg);
        return 2;
      }
      break;
    case 'D':
      if (parse_real("filter-width", optarg, ATL_RENDER_FILTER_WIDTH_MIN,
                     ATL_RENDER_FILTER_WIDTH_MAX, 1, &o->filter_width))
        return 2;
      break;
    case 'z':
      o->denoise = 1;
      break;
    case 'A':
      o->out_albedo = optarg;
      break;
    case 'R':
      o->out_normal = optarg;
      break;
    case 'w':
      o->worker = optarg;
      break;
    case 'C':
      if (parse_int("cancel-after-ms", optarg, 0, 86400000, &n))
        return 2;
      o->cancel_after_ms = (double)n;
      break;
    case 'q':
      o->quiet = 1;
      break;
    case 'h':
      usage(stdout);
      exit(0);
    case 'V':
      printf("atelier-render %s (path tracer kernel: %s, %d lanes)\n",
             PACKAGE_VERSION, atl_render_kernel_name(atl_render_kernel()),
             atl_render_kernel_lanes(atl_render_kernel()));
      exit(0);
    default:
      usage(stderr);
      return 2;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "atelier-render: expected one SCENE.json argument\n");
    usage(stderr);
    return 2;
  }
  o->scene_path = argv[optind];
  if (o->out_png == NULL && o->out_pfm == NULL) {
    fprintf(stderr, "atelier-render: say where the image goes: -o OUT.png "
                    "(or --pfm OUT.pfm)\n");
    return 2;
  }
  return 0;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap);
  while (buf != NULL) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0)
      break;
    if (n == cap) {
      char *nb = realloc(buf, cap * 2);
      if (nb == NULL) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    errno = EIO;
    return NULL;
  }
  *len = n;
  return buf;
}

static void farm_log(void *user, int level, const char *msg) {
  (void)user;
  if (level <= 1)
    fprintf(stderr, "atelier-render: %s\n", msg);
}

static void on_progress(atl_farm_job_t *job, int samples_done, void *user) {
  cli_t *c = user;
  if (c->o->quiet || !c->tty)
    return;
  fprintf(stderr, "\r%5.1f%%  %d/%d spp", 100 * atl_farm_job_fraction(job),
          samples_done, c->o->spp);
}

static void close_all(cli_t *c) {
  uv_close((uv_handle_t *)&c->sigint, NULL);
  uv_close((uv_handle_t *)&c->sigterm, NULL);
  uv_close((uv_handle_t *)&c->cancel_timer, NULL);
  atl_farm_close(c->farm, NULL, NULL);
}

static void on_done(atl_farm_job_t *job, int status, const char *msg,
                    void *user) {
  cli_t *c = user;
  (void)job;
  c->t_done = now_s();
  c->status = status;
  if (msg != NULL)
    c->message = strdup(msg);
  if (!c->o->quiet && c->tty)
    fputc('\n', stderr);
  close_all(c);
}

static void on_signal(uv_signal_t *s, int signum) {
  cli_t *c = s->data;
  (void)signum;
  if (c->job != NULL && c->t_cancel == 0) {
    c->t_cancel = now_s();
    atl_farm_cancel(c->job);
  }
}

static void on_cancel_timer(uv_timer_t *t) {
  cli_t *c = t->data;
  c->t_cancel = now_s();
  atl_farm_cancel(c->job);
}

static int write_pfm(const char *path, const float *sum, const uint32_t *count,
                     int w, int h) {
  int e = atl_render_write_pfm(path, sum, count, w, h);
  if (e != 0)
    fprintf(stderr, "atelier-render: %s: %s\n", path, strerror(-e));
  return e;
}

static int write_png(const char *path, const uint8_t *rgb, int w, int h) {
  void *png = NULL;
  size_t len = 0;
  if (atl_png_encode(rgb, w, h, -1, &png, &len) != 0) {
    fprintf(stderr, "atelier-render: Failed to encode rendered image\n");
    return -1;
  }
  FILE *f = fopen(path, "wb");
  int ok = f != NULL && fwrite(png, 1, len, f) == len;
  if (f != NULL && fclose(f) != 0)
    ok = 0;
  free(png);
  if (!ok)
    fprintf(stderr, "atelier-render: %s: %s\n", path, strerror(errno));
  return ok ? 0 : -1;
}

/* The picture, and with --denoise the denoised one: its radiance, and a
 * count of 1 a pixel, so that resolving and the PFM take it as it is. */
static int write_outputs(cli_t *c) {
  cli_opts_t *o = c->o;
  int w = o->width, h = o->height;
  size_t npix = (size_t)w * (size_t)h;
  atl_film_copy_t fc;
  int have = atl_film_copy_alloc(&fc, npix, atl_farm_job_guides(c->job)) == 0;
  const atl_render_film_t *film = &fc.film;
  float *clean = o->denoise ? malloc(npix * 3 * sizeof(float)) : NULL;
  uint32_t *ones = o->denoise ? malloc(npix * sizeof(uint32_t)) : NULL;
  uint8_t *rgb = malloc(npix * 3);
  int rc = 1;
  if (!have || !rgb || (o->denoise && (!clean || !ones))) {
    fprintf(stderr, "atelier-render: out of memory\n");
    goto out;
  }
  int fw, fh;
  atl_farm_job_film_copy(c->job, 0, &fc, &fw, &fh);
  const float *sum = film->rgb_sum;
  const uint32_t *count = film->count;
  if (o->denoise) {
    int e = atl_film_denoise(&fc, w, h, clean);
    if (e != 0) {
      fprintf(stderr, "atelier-render: denoising failed: %s\n", strerror(-e));
      goto out;
    }
    for (size_t i = 0; i < npix; i++)
      ones[i] = 1;
    sum = clean;
    count = ones;
  }
  if (o->out_pfm != NULL && write_pfm(o->out_pfm, sum, count, w, h) != 0)
    goto out;
  if (o->out_albedo != NULL &&
      write_pfm(o->out_albedo, film->albedo_sum, film->count, w, h) != 0)
    goto out;
  if (o->out_normal != NULL &&
      write_pfm(o->out_normal, film->normal_sum, film->count, w, h) != 0)
    goto out;
  if (o->out_png != NULL) {
    atl_render_resolve(sum, count, w, h, (float)o->exposure, rgb);
    if (write_png(o->out_png, rgb, w, h) != 0)
      goto out;
  }
  rc = 0;
out:
  if (have)
    atl_film_copy_free(&fc);
  free(clean);
  free(ones);
  free(rgb);
  return rc;
}

int main(int argc, char **argv) {
  double t_start = now_s();
  cli_opts_t o = {0};
  int rc = parse_args(argc, argv, &o);
  if (rc != 0)
    return rc;
  size_t len = 0;
  char *json = read_file(o.scene_path, &len);
  if (json == NULL) {
    fprintf(stderr, "atelier-render: %s: %s\n", o.scene_path, strerror(errno));
    return 1;
  }
  /* Loaded here once to report a bad document before any worker starts,
   * and for the scene's own render settings. */
  atl_render_scene_t *scene = NULL;
  char *err = NULL;
  if (atl_render_scene_load(json, len, &scene, &err) != 0) {
    fprintf(stderr, "atelier-render: %s: %s\n", o.scene_path,
            err ? err : "cannot be loaded");
    free(err);
    free(json);
    return 1;
  }
  atl_render_scene_info_t info;
  atl_render_scene_info(scene, &info);
  atl_render_scene_free(scene);
  if (o.width == 0)
    o.width = info.width > 0 ? info.width : 400;
  if (o.height == 0)
    o.height = info.height > 0 ? info.height : 300;
  if (o.spp == 0)
    o.spp = info.samples > 0 ? info.samples : 500;
  if (o.max_depth == 0)
    o.max_depth = info.max_depth > 0 ? info.max_depth : 8;
  if (o.min_samples > o.spp) {
    fprintf(stderr,
            "atelier-render: --min-samples: %d is more than the %d samples "
            "per pixel; give 2..%d\n",
            o.min_samples, o.spp, o.spp);
    free(json);
    return 2;
  }

  uv_loop_t *loop = uv_default_loop();
  cli_t c = {.o = &o, .tty = isatty(2)};
  atl_farm_options_t fo = {
      .workers = o.workers, .worker_path = o.worker, .log = farm_log};
  rc = atl_farm_new(loop, &fo, &c.farm, &err);
  if (rc != 0) {
    fprintf(stderr, "atelier-render: %s\n", err ? err : strerror(-rc));
    free(err);
    free(json);
    return 1;
  }
  o.workers = atl_farm_workers(c.farm);
  uv_signal_init(loop, &c.sigint);
  uv_signal_init(loop, &c.sigterm);
  c.sigint.data = c.sigterm.data = &c;
  uv_signal_start(&c.sigint, on_signal, SIGINT);
  uv_signal_start(&c.sigterm, on_signal, SIGTERM);
  uv_timer_init(loop, &c.cancel_timer);
  c.cancel_timer.data = &c;
  atl_farm_job_params_t p = {.scene_json = json,
                             .scene_len = len,
                             .width = o.width,
                             .height = o.height,
                             .samples = o.spp,
                             .max_depth = o.max_depth,
                             .no_light_sampling = o.no_nee,
                             .seed = o.seed,
                             .noise_threshold = o.noise,
                             .min_samples = o.min_samples,
                             .max_seconds = o.max_seconds,
                             .guides =
                                 o.denoise || o.out_albedo || o.out_normal,
                             .filter = o.filter,
                             .filter_width = o.filter_width};
  c.t_submit = now_s();
  rc = atl_farm_submit(c.farm, &p, on_progress, on_done, &c, &c.job);
  free(json);
  if (rc != 0) {
    fprintf(stderr, "atelier-render: cannot submit the job: %s\n",
            strerror(-rc));
    close_all(&c);
    uv_run(loop, UV_RUN_DEFAULT);
    return 1;
  }
  if (o.cancel_after_ms > 0)
    uv_timer_start(&c.cancel_timer, on_cancel_timer,
                   (uint64_t)o.cancel_after_ms, 0);
  uv_run(loop, UV_RUN_DEFAULT);
  uv_loop_close(loop);

  int deaths = atl_farm_job_worker_deaths(c.job);
  if (c.status != 0) {
    fprintf(stderr, "atelier-render: %s\n",
            c.status == -ECANCELED ? "cancelled"
            : c.message            ? c.message
                                   : strerror(-c.status));
    if (c.status == -ECANCELED)
      printf("cancelled: the workers stopped %.1f ms after the cancel\n",
             (c.t_done - c.t_cancel) * 1000);
    atl_farm_job_free(c.job);
    free(c.message);
    return c.status == -ECANCELED ? 130 : 1;
  }
  rc = write_outputs(&c);
  atl_farm_job_stats_t st;
  atl_farm_job_stats(c.job, 0, &st);
  atl_farm_job_free(c.job);
  static const char *const stops[] = {"samples", "noise threshold",
                                      "time budget"};
  /* The paths traced: with adaptive sampling or a budget, fewer than
   * width x height x spp. */
  double paths = st.spp_mean * o.width * o.height;
  double render_s = c.t_done - c.t_submit, total_s = now_s() - t_start;
  printf("%s: %dx%d, %d spp, max depth %d, %d workers: %.0f paths; render "
         "%.3f s, %.2f M paths/s; whole process %.3f s, %.2f M paths/s; "
         "noise %.4f (%.1f %% of pixels above %g); spp min %d mean %.1f "
         "max %d; ended by the %s%s\n",
         o.scene_path, o.width, o.height, o.spp, o.max_depth, o.workers, paths,
         render_s, paths / render_s / 1e6, total_s, paths / total_s / 1e6,
         st.noise, st.above * 100, o.noise > 0 ? o.noise : 0.01, st.spp_min,
         st.spp_mean, st.spp_max, stops[st.stop],
         deaths ? " (workers died and their units were redone)" : "");
  return rc;
}
