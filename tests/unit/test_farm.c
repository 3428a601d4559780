/* The render farm with its real worker processes (atelier-render-worker
 * of the build tree) on a real libuv loop: determinism whatever the number
 * of workers, a worker SIGKILLed mid-render, cancel latency, fairness
 * between jobs, failures, shutdown, and /dev/shm left clean. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "farm.h"
#include "render.h"
#include "test_data.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The segments of this process's farms in /dev/shm (there should never
 * be any: they are unlinked as soon as they are made). */
static int shm_entries(void) {
  DIR *d = opendir("/dev/shm");
  if (d == NULL)
    return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strncmp(e->d_name, "atelier-render-", 15) == 0)
      n++;
  closedir(d);
  return n;
}

static void init(void) {
  const char *b = getenv("ATL_TEST_BUILDDIR");
  char path[4096];
  snprintf(path, sizeof(path), "%s/atelier-render-worker",
           b ? b : ATL_TEST_BUILDDIR);
  setenv("ATELIER_RENDER_WORKER", path, 1);
}

TestSuite(farm, .init = init, .timeout = 120);

typedef struct {
  uv_loop_t loop;
  atl_farm_t *farm;
  atl_farm_job_t *job[4];
  int status[4];
  int done[4];
  double done_ms[4];
  char message[4][300];
  int progress_calls[4];
  int closed;
  /* tests' hooks */
  int kill_after_progress; /* SIGKILL a worker at this progress call */
  int killed_pid;
  double cancel_at_fraction;
  double cancel_ms;
} ctx_t;

static void on_progress(atl_farm_job_t *job, int samples, void *user) {
  ctx_t *c = user;
  (void)samples;
  int k = job == c->job[0] ? 0 : job == c->job[1] ? 1 : 2;
  c->progress_calls[k]++;
  if (k == 0 && c->kill_after_progress > 0 &&
      c->progress_calls[0] == c->kill_after_progress) {
    int pids[8];
    int n = atl_farm_worker_pids(c->farm, pids, 8);
    cr_assert_gt(n, 0);
    c->killed_pid = pids[n - 1];
    kill(pids[n - 1], SIGKILL);
  }
  if (k == 0 && c->cancel_at_fraction > 0 && c->cancel_ms == 0 &&
      atl_farm_job_fraction(job) >= c->cancel_at_fraction) {
    c->cancel_ms = now_ms();
    atl_farm_cancel(job);
  }
}

static void on_done(atl_farm_job_t *job, int status, const char *msg,
                    void *user) {
  ctx_t *c = user;
  int k = job == c->job[0] ? 0 : job == c->job[1] ? 1 : 2;
  c->status[k] = status;
  c->done[k] = 1;
  c->done_ms[k] = now_ms();
  if (msg != NULL)
    snprintf(c->message[k], sizeof(c->message[k]), "%s", msg);
}

static void on_closed(void *arg) {
  ((ctx_t *)arg)->closed = 1;
}

static void ctx_start(ctx_t *c, int workers) {
  memset(c, 0, sizeof(*c));
  cr_assert_eq(uv_loop_init(&c->loop), 0);
  atl_farm_options_t o = {.workers = workers};
  char *err = NULL;
  int rc = atl_farm_new(&c->loop, &o, &c->farm, &err);
  cr_assert_eq(rc, 0, "farm: %s", err ? err : strerror(-rc));
}

/* Submits p as c's job k, which must be accepted. */
static void submit(ctx_t *c, int k, const atl_farm_job_params_t *p) {
  int rc = atl_farm_submit(c->farm, p, on_progress, on_done, c, &c->job[k]);
  cr_assert_eq(rc, 0, "submit: %s", strerror(-rc));
}

static void run_until_done(ctx_t *c, int njobs) {
  for (;;) {
    int all = 1;
    for (int k = 0; k < njobs; k++)
      all = all && c->done[k];
    if (all)
      return;
    uv_run(&c->loop, UV_RUN_ONCE);
  }
}

static void ctx_stop(ctx_t *c) {
  for (int k = 0; k < 4; k++)
    atl_farm_job_free(c->job[k]);
  atl_farm_close(c->farm, on_closed, c);
  uv_run(&c->loop, UV_RUN_DEFAULT);
  cr_assert(c->closed);
  cr_assert_eq(uv_loop_close(&c->loop), 0, "a handle was left open");
}

static atl_farm_job_params_t params_for(const char *json, size_t len, int w,
                                        int h, int spp) {
  return (atl_farm_job_params_t){.scene_json = json,
                                 .scene_len = len,
                                 .width = w,
                                 .height = h,
                                 .samples = spp,
                                 .max_depth = 5,
                                 .seed = 7};
}

/* The image as one process renders it, tile by tile in one pass. */
static void reference(const char *json, size_t len, int w, int h, int spp,
                      float **sum, uint32_t **count) {
  atl_render_scene_t *s = NULL;
  cr_assert_eq(atl_render_scene_load(json, len, &s, NULL), 0);
  atl_render_params_t p = {
      .width = w, .height = h, .spp_per_pass = spp, .max_depth = 5, .seed = 7};
  *sum = calloc((size_t)w * h * 3, sizeof(float));
  *count = calloc((size_t)w * h, sizeof(uint32_t));
  atl_render_tile(s, &p, 0, 0, w, h, 0, *sum, *count);
  atl_render_scene_free(s);
}

static void assert_same_image(atl_farm_job_t *job, const float *sum,
                              const uint32_t *count, int w, int h) {
  float *fs = calloc((size_t)w * h * 3, sizeof(float));
  uint32_t *fc = calloc((size_t)w * h, sizeof(uint32_t));
  atl_farm_job_sums(job, fs, fc);
  cr_assert_eq(memcmp(fc, count, (size_t)w * h * sizeof(uint32_t)), 0,
               "sample counts differ");
  cr_assert_eq(memcmp(fs, sum, (size_t)w * h * 3 * sizeof(float)), 0,
               "the image differs from the single-process render");
  free(fs);
  free(fc);
}

Test(farm, same_image_whatever_the_number_of_workers) {
  size_t len;
  char *json = atl_test_slurp("scenes/cornell.json", &len);
  /* 150 x 90: three tile columns, the last ones partial; 24 samples make
   * passes of 1, 1, 2, 4, 8, 8. */
  float *sum;
  uint32_t *count;
  reference(json, len, 150, 90, 24, &sum, &count);
  int before = shm_entries();
  for (int workers = 1; workers <= 3; workers++) {
    ctx_t c;
    ctx_start(&c, workers);
    atl_farm_job_params_t p = params_for(json, len, 150, 90, 24);
    submit(&c, 0, &p);
    run_until_done(&c, 1);
    cr_assert_eq(c.status[0], 0, "%d workers: %s", workers, c.message[0]);
    cr_assert_eq(atl_farm_job_samples_done(c.job[0]), 24);
    cr_assert_float_eq(atl_farm_job_fraction(c.job[0]), 1.0, 1e-12);
    cr_assert_geq(c.progress_calls[0], 4, "a progress call per wave");
    assert_same_image(c.job[0], sum, count, 150, 90);
    ctx_stop(&c);
  }
  cr_assert_eq(shm_entries(), before, "a shared segment was left behind");
  free(sum);
  free(count);
  free(json);
}

Test(farm, killed_worker_is_replaced_and_nothing_counts_twice) {
  size_t len;
  char *json = atl_test_slurp("scenes/cornell.json", &len);
  float *sum;
  uint32_t *count;
  reference(json, len, 200, 160, 48, &sum, &count);
  ctx_t c;
  ctx_start(&c, 2);
  c.kill_after_progress = 4; /* mid-render: units are in flight */
  atl_farm_job_params_t p = params_for(json, len, 200, 160, 48);
  submit(&c, 0, &p);
  run_until_done(&c, 1);
  cr_assert_eq(c.status[0], 0, "%s", c.message[0]);
  cr_assert_gt(c.killed_pid, 0);
  cr_assert_geq(atl_farm_restarts(c.farm), 1, "the worker was restarted");
  cr_assert_geq(atl_farm_job_worker_deaths(c.job[0]), 1,
                "the killed worker held a unit of the job");
  int pids[2];
  atl_farm_worker_pids(c.farm, pids, 2);
  cr_assert_neq(pids[0], c.killed_pid);
  cr_assert_neq(pids[1], c.killed_pid);
  assert_same_image(c.job[0], sum, count, 200, 160);
  ctx_stop(&c);
  free(sum);
  free(count);
  free(json);
}

Test(farm, cancel_stops_the_workers_within_100_ms) {
  size_t len;
  char *json = atl_test_slurp("scenes/snowman.json", &len);
  ctx_t c;
  ctx_start(&c, 2);
  c.cancel_at_fraction = 0.02;
  atl_farm_job_params_t p = params_for(json, len, 400, 300, 2000);
  p.max_depth = 8;
  submit(&c, 0, &p);
  run_until_done(&c, 1);
  cr_assert_eq(c.status[0], -ECANCELED);
  double latency = c.done_ms[0] - c.cancel_ms;
  cr_assert_lt(latency, 100, "the workers stopped %.1f ms after the cancel",
               latency);
  cr_assert_lt(atl_farm_job_fraction(c.job[0]), 0.5);
  /* The farm is free again at once: a small job goes straight through. */
  atl_farm_job_params_t q = params_for(json, len, 32, 24, 4);
  double t0 = now_ms();
  submit(&c, 1, &q);
  run_until_done(&c, 2);
  cr_assert_eq(c.status[1], 0);
  cr_assert_lt(c.done_ms[1] - t0, 1000);
  ctx_stop(&c);
  free(json);
}

Test(farm, jobs_share_the_workers_round_robin) {
  size_t len;
  char *json = atl_test_slurp("scenes/cornell.json", &len);
  ctx_t c;
  ctx_start(&c, 2);
  /* A long job first, then a short one: handed out strictly in order, the
   * short one would wait for all of the long one. */
  atl_farm_job_params_t big = params_for(json, len, 320, 240, 64);
  atl_farm_job_params_t small = params_for(json, len, 64, 64, 16);
  submit(&c, 0, &big);
  submit(&c, 1, &small);
  cr_assert_eq(atl_farm_active_jobs(c.farm), 2);
  run_until_done(&c, 2);
  cr_assert_eq(c.status[0], 0);
  cr_assert_eq(c.status[1], 0);
  cr_assert_lt(c.done_ms[1], c.done_ms[0],
               "the short job finished after the long one");
  ctx_stop(&c);
  free(json);
}

Test(farm, a_scene_the_worker_cannot_load_fails_the_job) {
  static const char bad[] = "{\"shapes\": [{\"type\": \"sphere\"}]}";
  ctx_t c;
  ctx_start(&c, 1);
  atl_farm_job_params_t p = params_for(bad, sizeof(bad) - 1, 16, 16, 1);
  submit(&c, 0, &p);
  run_until_done(&c, 1);
  cr_assert_eq(c.status[0], -EINVAL);
  cr_assert(strstr(c.message[0], "shapes[0]") != NULL, "message: %s",
            c.message[0]);
  ctx_stop(&c);
}

Test(farm, bad_parameters_are_refused) {
  ctx_t c;
  ctx_start(&c, 1);
  atl_farm_job_params_t p = params_for("{}", 2, 0, 16, 1);
  atl_farm_job_t *j = NULL;
  cr_assert_eq(atl_farm_submit(c.farm, &p, NULL, on_done, &c, &j), -EINVAL);
  p = params_for("{}", 2, 16, 9000, 1);
  cr_assert_eq(atl_farm_submit(c.farm, &p, NULL, on_done, &c, &j), -EINVAL);
  p = params_for("{}", 2, 16, 16, 0);
  cr_assert_eq(atl_farm_submit(c.farm, &p, NULL, on_done, &c, &j), -EINVAL);
  p = params_for(NULL, 0, 16, 16, 1);
  cr_assert_eq(atl_farm_submit(c.farm, &p, NULL, on_done, &c, &j), -EINVAL);
  /* The adaptive sampling, budget and filter parameters: each out of its
   * range on its own. */
  for (int k = 0; k < 9; k++) {
    p = params_for("{}", 2, 16, 16, 32);
    switch (k) {
    case 0:
      p.noise_threshold = -0.1;
      break;
    case 1:
      p.noise_threshold = 1.5;
      break;
    case 2:
      p.noise_threshold = NAN;
      break;
    case 3:
      p.min_samples = 1;
      break;
    case 4:
      p.min_samples = 33;
      break;
    case 5:
      p.max_seconds = -1;
      break;
    case 6:
      p.max_seconds = INFINITY;
      break;
    case 7:
      p.filter = 3;
      break;
    default:
      p.filter_width = 0.2;
      break;
    }
    cr_assert_eq(atl_farm_submit(c.farm, &p, NULL, on_done, &c, &j), -EINVAL,
                 "case %d was accepted", k);
  }
  cr_assert_null(j);
  ctx_stop(&c);
}

Test(farm, close_ends_jobs_in_flight_with_eshutdown) {
  size_t len;
  char *json = atl_test_slurp("scenes/snowman.json", &len);
  ctx_t c;
  ctx_start(&c, 2);
  atl_farm_job_params_t p = params_for(json, len, 400, 300, 1000);
  submit(&c, 0, &p);
  while (c.progress_calls[0] < 2)
    uv_run(&c.loop, UV_RUN_ONCE);
  int pids[2];
  atl_farm_worker_pids(c.farm, pids, 2);
  double t0 = now_ms();
  atl_farm_close(c.farm, on_closed, &c);
  cr_assert(c.done[0], "the done callback runs during close");
  cr_assert_eq(c.status[0], -ESHUTDOWN);
  uv_run(&c.loop, UV_RUN_DEFAULT);
  cr_assert(c.closed);
  cr_assert_lt(now_ms() - t0, 1000, "the workers left promptly");
  for (int i = 0; i < 2; i++)
    cr_assert_eq(kill(pids[i], 0), -1, "worker %d is still alive", pids[i]);
  /* The job outlives its farm until it is freed. */
  cr_assert_gt(atl_farm_job_fraction(c.job[0]), 0);
  atl_farm_job_free(c.job[0]);
  cr_assert_eq(uv_loop_close(&c.loop), 0);
  free(json);
}

Test(farm, stale_segments_of_dead_farms_are_swept) {
  /* A pid that cannot be running: above the kernel's maximum. */
  char name[64];
  snprintf(name, sizeof(name), "/atelier-render-%d-1", 99999999);
  int fd = shm_open(name, O_RDWR | O_CREAT, 0600);
  cr_assert_geq(fd, 0);
  close(fd);
  /* And one of a live farm (ours), which must stay. */
  char live[64];
  snprintf(live, sizeof(live), "/atelier-render-%d-999999", (int)getpid());
  fd = shm_open(live, O_RDWR | O_CREAT, 0600);
  cr_assert_geq(fd, 0);
  close(fd);
  cr_assert_geq(atl_farm_sweep_stale(), 1);
  cr_assert_eq(shm_open(name, O_RDONLY, 0), -1);
  cr_assert_eq(errno, ENOENT);
  fd = shm_open(live, O_RDONLY, 0);
  cr_assert_geq(fd, 0, "a live farm's segment was removed");
  close(fd);
  shm_unlink(live);
}

Test(farm, a_missing_worker_program_is_a_clear_error) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  atl_farm_options_t o = {.workers = 1, .worker_path = "/nonexistent/worker"};
  atl_farm_t *f = NULL;
  char *err = NULL;
  cr_assert_eq(atl_farm_new(&loop, &o, &f, &err), -ENOENT);
  cr_assert_null(f);
  cr_assert(strstr(err, "/nonexistent/worker") != NULL, "%s", err);
  cr_assert(strstr(err, "render.worker") != NULL, "%s", err);
  free(err);
  uv_loop_close(&loop);
}

Test(farm, preview_is_scaled_down_and_readable_mid_render) {
  size_t len;
  char *json = atl_test_slurp("scenes/cornell.json", &len);
  ctx_t c;
  ctx_start(&c, 2);
  atl_farm_job_params_t p = params_for(json, len, 300, 200, 8);
  submit(&c, 0, &p);
  run_until_done(&c, 1);
  int w, h;
  atl_farm_job_preview(c.job[0], 0, 100, NULL, &w, &h);
  cr_assert_eq(w, 100);
  cr_assert_eq(h, 67);
  uint8_t *rgb = malloc((size_t)w * h * 3);
  atl_farm_job_preview(c.job[0], 0, 100, rgb, &w, &h);
  /* The full-size preview equals the final picture's resolve. */
  atl_farm_job_preview(c.job[0], 0, 0, NULL, &w, &h);
  cr_assert_eq(w, 300);
  uint8_t *full = malloc(300 * 200 * 3), *ref = malloc(300 * 200 * 3);
  atl_farm_job_preview(c.job[0], 0, 0, full, &w, &h);
  float *sum = malloc(300 * 200 * 3 * sizeof(float));
  uint32_t *count = malloc(300 * 200 * sizeof(uint32_t));
  atl_farm_job_sums(c.job[0], sum, count);
  atl_render_resolve(sum, count, 300, 200, 0, ref);
  cr_assert_eq(memcmp(full, ref, 300 * 200 * 3), 0);
  /* Every third pixel of every third row. */
  cr_assert_eq(memcmp(rgb, ref, 3), 0);
  cr_assert_eq(memcmp(rgb + 3, ref + 9, 3), 0);
  cr_assert_eq(memcmp(rgb + 100 * 3, ref + 3 * 300 * 3, 3), 0);
  free(rgb);
  free(full);
  free(ref);
  free(sum);
  free(count);
  ctx_stop(&c);
  free(json);
}

/* ---- adaptive sampling, the time budget, the noise figure ---- */

/* A job's whole film: sums, counts and the guides. */
typedef struct {
  float *sum, *albedo, *normal;
  uint32_t *count;
  int w, h;
} film_copy_t;

static film_copy_t film_of(atl_farm_job_t *job) {
  film_copy_t f = {.w = atl_farm_job_width(job), .h = atl_farm_job_height(job)};
  size_t n = (size_t)f.w * f.h;
  f.sum = calloc(n * 3, sizeof(float));
  f.albedo = calloc(n * 3, sizeof(float));
  f.normal = calloc(n * 3, sizeof(float));
  f.count = calloc(n, sizeof(uint32_t));
  atl_render_film_t out = {.rgb_sum = f.sum,
                           .count = f.count,
                           .albedo_sum = f.albedo,
                           .normal_sum = f.normal};
  int w, h;
  atl_farm_job_film(job, 0, &out, &w, &h);
  cr_assert_eq(w, f.w);
  cr_assert_eq(h, f.h);
  return f;
}

static void film_free(film_copy_t *f) {
  free(f->sum);
  free(f->albedo);
  free(f->normal);
  free(f->count);
}

static void assert_same_film(const film_copy_t *a, const film_copy_t *b,
                             const char *what) {
  size_t n = (size_t)a->w * a->h;
  cr_assert_eq(memcmp(a->count, b->count, n * sizeof(uint32_t)), 0,
               "%s: the sample counts differ", what);
  cr_assert_eq(memcmp(a->sum, b->sum, n * 3 * sizeof(float)), 0,
               "%s: the image differs", what);
}

/* Renders p with `workers` workers, killing one at the kill-th progress
 * call if kill > 0, and returns the film. */
static film_copy_t render_film(const atl_farm_job_params_t *p, int workers,
                               int kill, atl_farm_job_stats_t *st) {
  ctx_t c;
  ctx_start(&c, workers);
  c.kill_after_progress = kill;
  submit(&c, 0, p);
  run_until_done(&c, 1);
  cr_assert_eq(c.status[0], 0, "%s", c.message[0]);
  if (kill > 0) {
    cr_assert_gt(c.killed_pid, 0, "the job ended before the kill");
    cr_assert_geq(atl_farm_job_worker_deaths(c.job[0]), 1,
                  "the killed worker held no unit of the job");
  }
  film_copy_t f = film_of(c.job[0]);
  if (st != NULL)
    atl_farm_job_stats(c.job[0], 0, st);
  ctx_stop(&c);
  return f;
}

Test(farm, adaptive_sampling_is_deterministic_whatever_the_workers) {
  size_t len;
  char *json = atl_test_slurp("scenes/cornell.json", &len);
  atl_farm_job_params_t p = params_for(json, len, 200, 160, 96);
  p.noise_threshold = 0.05;
  p.min_samples = 16;
  atl_farm_job_stats_t st;
  film_copy_t one = render_film(&p, 1, 0, &st);
  /* Not vacuous: some pixels stopped early, others took every sample. */
  cr_assert_lt(st.spp_min, 96, "no pixel stopped early");
  cr_assert_eq(st.spp_max, 96);
  cr_assert_geq(st.spp_min, 16, "a pixel stopped before min_samples");
  film_copy_t two = render_film(&p, 2, 0, NULL);
  assert_same_film(&one, &two, "2 workers");
  film_copy_t killed = render_film(&p, 2, 4, NULL);
  assert_same_film(&one, &killed, "a worker killed");
  film_free(&one);
  film_free(&two);
  film_free(&killed);
  free(json);
}

/* A flat grey wall under a uniform sky (every path sees the same
 * radiance), with a glass ball in front of its right half (refraction,
 * reflections, shadow: noise). The camera looks down -z, so -x is on
 * the right of the picture. */
static const char wall_and_glass[] =
    "{\"camera\": {\"center\": [0, 0, 5], \"look_at\": [0, 0, 0], "
    "\"vfov\": 40}, \"environment\": {\"type\": \"uniform\", "
    "\"emission\": [1, 1, 1]}, \"shapes\": ["
    "{\"id\": \"wall\", \"type\": \"quad\", \"properties\": {\"corner\": "
    "[-10, -10, -1], \"u\": [20, 0, 0], \"v\": [0, 20, 0], \"material\": "
    "{\"type\": \"lambertian\", \"albedo\": [0.5, 0.5, 0.5]}}},"
    "{\"id\": \"ball\", \"type\": \"sphere\", \"properties\": {\"center\": "
    "[-1.2, 0, 0], \"radius\": 0.8, \"material\": {\"type\": "
    "\"dielectric\", \"refractive_index\": 1.5}}}]}";

/* The mean sample count over the pixels [x0, x1) x [y0, y1). */
static double mean_count(const film_copy_t *f, int x0, int y0, int x1, int y1) {
  double s = 0;
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++)
      s += f->count[(size_t)y * f->w + x];
  return s / ((double)(x1 - x0) * (y1 - y0));
}

Test(farm, adaptive_sampling_spends_less_on_a_flat_wall_than_on_glass) {
  atl_farm_job_params_t p =
      params_for(wall_and_glass, sizeof(wall_and_glass) - 1, 64, 48, 256);
  p.max_depth = 8;
  p.noise_threshold = 0.02;
  p.min_samples = 16;
  p.guides = 1;
  /* BSDF sampling only: a bounce off the wall sees the sky, all of the
   * same radiance, with no light-sampling weights to vary between
   * samples. */
  p.no_light_sampling = 1;
  atl_farm_job_stats_t st;
  film_copy_t f = render_film(&p, 2, 0, &st);
  /* The ball covers about columns 38..56 and rows 11..37; the wall
   * alone is left of column 12. */
  double flat = mean_count(&f, 0, 0, 12, 48);
  double glass = mean_count(&f, 42, 18, 52, 30);
  cr_log_info("samples per pixel: flat wall %.1f, glass %.1f", flat, glass);
  cr_assert_lt(flat, 0.25 * glass,
               "the flat wall took %.1f samples a pixel, the glass %.1f", flat,
               glass);
  cr_assert_lt(flat, 64, "the flat wall was not stopped early");
  cr_assert_eq(st.stop, ATL_FARM_STOP_SAMPLES, "some pixels need them all");
  /* The guides: the wall's albedo and its normal, facing the camera. */
  size_t i = (size_t)10 * f.w + 4;
  double n = f.count[i];
  cr_assert_float_eq(f.albedo[i * 3] / n, 0.5, 1e-3);
  cr_assert_float_eq(f.normal[i * 3 + 2] / n, 1.0, 1e-3);
  film_free(&f);
}

Test(farm, adaptive_sampling_ends_the_job_when_every_pixel_is_clean) {
  /* The wall alone: every pixel is flat, so every tile stops at
   * min_samples, long before the maximum. */
  static const char wall[] =
      "{\"camera\": {\"center\": [0, 0, 5], \"look_at\": [0, 0, 0]}, "
      "\"environment\": {\"type\": \"uniform\", \"emission\": [1, 1, "
      "1]}, \"shapes\": [{\"id\": \"wall\", \"type\": \"quad\", "
      "\"properties\": {\"corner\": [-10, -10, -1], \"u\": [20, 0, 0], "
      "\"v\": [0, 20, 0]}}]}";
  atl_farm_job_params_t p = params_for(wall, sizeof(wall) - 1, 96, 80, 100000);
  p.noise_threshold = 0.01;
  p.min_samples = 16;
  atl_farm_job_stats_t st;
  film_copy_t f = render_film(&p, 2, 0, &st);
  cr_assert_eq(st.stop, ATL_FARM_STOP_NOISE);
  cr_assert_eq(st.spp_max, 16, "a pixel went on to %d samples", st.spp_max);
  cr_assert_eq(st.spp_min, 16);
  cr_assert_lt(st.above, 1e-9);
  film_free(&f);
}

Test(farm, max_seconds_ends_a_long_job_complete_with_what_it_has) {
  size_t len;
  char *json = atl_test_slurp("scenes/snowman.json", &len);
  ctx_t c;
  ctx_start(&c, 2);
  /* About a hundred seconds of work without the budget. */
  atl_farm_job_params_t p = params_for(json, len, 400, 300, 4000);
  p.max_depth = 8;
  p.max_seconds = 0.5;
  double t0 = now_ms();
  submit(&c, 0, &p);
  run_until_done(&c, 1);
  double took = c.done_ms[0] - t0;
  cr_assert_eq(c.status[0], 0, "%s", c.message[0]);
  cr_assert_geq(took, 495, "it ended before the budget: %.0f ms", took);
  cr_assert_lt(took, 1500, "it ended %.0f ms after the submission", took);
  atl_farm_job_stats_t st;
  atl_farm_job_stats(c.job[0], 0, &st);
  cr_assert_eq(st.stop, ATL_FARM_STOP_BUDGET);
  cr_assert_geq(st.spp_min, 2, "a pixel has fewer than 2 samples");
  cr_assert_lt(st.spp_max, 4000);
  cr_assert_eq(atl_farm_active_jobs(c.farm), 0);
  ctx_stop(&c);
  free(json);
}

/* However short the budget, the first two waves are finished: every
 * pixel has the two samples an estimate needs, never a black hole. A
 * budget of 0.3 s on a 2000 x 1500 frame used to end with 70 % of the
 * pixels unsampled, as a success. */
Test(farm, a_budget_never_cuts_the_first_two_waves, .timeout = 120) {
  size_t len;
  char *json = atl_test_slurp("scenes/snowman.json", &len);
  ctx_t c;
  ctx_start(&c, 2);
  atl_farm_job_params_t p = params_for(json, len, 1200, 900, 64);
  p.max_depth = 8;
  p.max_seconds = 1e-6;
  submit(&c, 0, &p);
  run_until_done(&c, 1);
  cr_assert_eq(c.status[0], 0, "%s", c.message[0]);
  atl_farm_job_stats_t st;
  atl_farm_job_stats(c.job[0], 0, &st);
  cr_assert_eq(st.stop, ATL_FARM_STOP_BUDGET);
  cr_assert_eq(st.spp_min, 2, "a pixel has %d samples", st.spp_min);
  cr_assert_lt(st.spp_max, 64);
  cr_assert(isfinite(st.noise), "noise %g", st.noise);
  ctx_stop(&c);
  free(json);
}

Test(farm, the_noise_estimate_falls_as_samples_grow) {
  size_t len;
  char *json = atl_test_slurp("scenes/cornell-empty.json", &len);
  double noise[3];
  int spp[3] = {8, 32, 128};
  for (int k = 0; k < 3; k++) {
    atl_farm_job_params_t p = params_for(json, len, 64, 64, spp[k]);
    atl_farm_job_stats_t st;
    film_copy_t f = render_film(&p, 2, 0, &st);
    noise[k] = st.noise;
    cr_assert_eq(st.spp_min, spp[k]);
    cr_assert_float_eq(st.spp_mean, spp[k], 1e-9);
    film_free(&f);
  }
  cr_log_info("noise at 8, 32, 128 spp: %g %g %g", noise[0], noise[1],
              noise[2]);
  /* Noise falls at least as 1 / sqrt(samples), Monte Carlo's rate (a
   * factor 2 per step), and with the low-discrepancy sampler faster, up
   * to 1 / samples (4 per step). */
  for (int k = 0; k < 2; k++) {
    double r = noise[k] / noise[k + 1];
    cr_assert_gt(r, 1.5, "%g then %g", noise[k], noise[k + 1]);
    cr_assert_lt(r, 4.5, "%g then %g", noise[k], noise[k + 1]);
  }
  free(json);
}

/* The table-driven sRGB encoding gives the codes of the formula. */
Test(farm_resolve, srgb_table_matches_the_formula) {
  enum { N = 200000 };
  float *sum = malloc(N * 3 * sizeof(float));
  uint32_t *count = malloc(N * sizeof(uint32_t));
  uint8_t *rgb = malloc(N * 3);
  for (int i = 0; i < N; i++) {
    count[i] = 1;
    for (int c = 0; c < 3; c++)
      sum[i * 3 + c] = (float)(i * 3 + c) / (N * 3) * 1.2f;
  }
  atl_render_resolve(sum, count, N, 1, 0, rgb);
  int off = 0;
  for (int i = 0; i < N * 3; i++) {
    double v = sum[i];
    double e = v <= 0.0031308 ? 12.92 * v : 1.055 * pow(v, 1 / 2.4) - 0.055;
    int want = v >= 1 ? 255 : (int)(e * 255 + 0.5);
    /* Exactly at a code boundary float rounding may go either way. */
    if (rgb[i] != want) {
      cr_assert_leq(abs(rgb[i] - want), 1, "v=%g: %d, want %d", v, rgb[i],
                    want);
      off++;
    }
  }
  cr_assert_lt(off, 10, "%d values off by one", off);
  free(sum);
  free(count);
  free(rgb);
}
