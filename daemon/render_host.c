/* The render farm inside the daemon, and the host table's render API
 * (include/atelier/render.h) that lets plugins use it.
 *
 * The farm lives on the loop. A plugin's handler thread that calls
 * render() posts its job to the loop and then sleeps on a condition
 * variable, waking every few milliseconds to see whether its call was
 * cancelled, and whenever the loop leaves it a preview or the result. So
 * the loop never waits for a render, and the handler never touches the
 * farm: the only shared state is the little struct below, under its
 * mutex.
 */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atelier/render.h>

#include "../render/farm.h"
#include "../render/film.h"
#include "../render/kernel.h"
#include "daemon.h"
#include "log.h"
#include "preview.h"
#include "render_host.h"
#include "slowlog.h"
#include "stats.h"
#include "toolcall.h"
#include "trace.h"

/* How often a waiting handler looks at its call's cancel flag; with the
 * workers' own check every 8k samples, a cancel stops them well within the
 * 100 ms the farm promises. */
#define CANCEL_POLL_MS 10

typedef struct {
  atl_daemon_t *d;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs; /* the handler's and the loop's */

  /* Set by the handler before posting; read-only after. The call
   * outlives the job: the handler waits for the job to end. */
  const atl_call_t *call;
  atl_farm_job_params_t params;
  char *scene; /* params.scene_json, owned */
  float exposure;
  uint32_t preview_ms;
  int preview_max_dim;
  int denoise_previews;
  int live; /* ATL_RENDER_PREVIEWS_LIVE */

  /* Loop only. */
  atl_farm_job_t *job;
  uv_timer_t timer; /* every CANCEL_POLL_MS: a cancel, then previews */
  int timer_open;
  double last_fraction;
  int previews;             /* made so far */
  int live_samples;         /* live: the samples of the last one made */
  uint64_t live_made_ns;    /* live: when it was made */
  uint64_t next_preview_ns; /* the earliest time for the next one */

  /* Under mu. */
  int done;
  int status;
  char *message;
  uint64_t t_submit_ns, t_done_ns;
  uint8_t *preview;        /* the newest preview the handler has not taken */
  atl_render_preview_t pv; /* its description (pv.rgb unused) */
  /* A preview to denoise: the film, scaled down, that the handler
   * denoises and resolves on its own thread (the loop must not spend
   * milliseconds on it). */
  atl_film_copy_t pfilm;
} render_wait_t;

/* Previews are denoised while the picture has fewer samples a pixel
 * (and the first one always). */
#define DENOISE_PREVIEWS_UNDER 32

static atl_render_api_t api;

static void farm_log(void *user, int level, const char *msg) {
  (void)user;
  atl_log_kv((atl_log_level_t)level, msg, "module", "render", NULL);
}

static void rw_unref(render_wait_t *rw) {
  pthread_mutex_lock(&rw->mu);
  int left = --rw->refs;
  pthread_mutex_unlock(&rw->mu);
  if (left > 0)
    return;
  pthread_mutex_destroy(&rw->mu);
  pthread_cond_destroy(&rw->cv);
  free(rw->scene);
  free(rw->message);
  free(rw->preview);
  atl_film_copy_free(&rw->pfilm);
  free(rw);
}

static void rw_finish(render_wait_t *rw, int status, const char *message) {
  pthread_mutex_lock(&rw->mu);
  rw->done = 1;
  rw->status = status;
  rw->t_done_ns = atl_mono_ns();
  if (message != NULL)
    rw->message = strdup(message);
  pthread_cond_signal(&rw->cv);
  pthread_mutex_unlock(&rw->mu);
}

/* ---- loop side ---- */

static void timer_closed(uv_handle_t *h) {
  rw_unref(h->data);
}

/* Drops the loop's hold on rw: its timer, and the job once the handler
 * has read the picture (rw_release_loop runs after that). */
static void rw_release_loop(void *arg) {
  render_wait_t *rw = arg;
  if (rw->job != NULL) {
    atl_farm_job_free(rw->job);
    rw->job = NULL;
  }
  if (rw->timer_open) {
    rw->timer_open = 0;
    uv_close((uv_handle_t *)&rw->timer, timer_closed);
    return;
  }
  rw_unref(rw);
}

int atl__live_preview_due(int last_samples, int samples,
                          uint64_t ms_since_last) {
  if (samples < 1)
    return 0; /* part of the frame is still black */
  if (last_samples == 0)
    return 1; /* the first whole picture: at once */
  if (samples <= last_samples)
    return 0; /* nothing new */
  return samples >= 2 * last_samples ||
         ms_since_last >= ATL_LIVE_PREVIEW_MAX_GAP_MS;
}

static void preview_tick(uv_timer_t *t) {
  render_wait_t *rw = t->data;
  if (rw->job == NULL)
    return;
  /* A cancelled or timed-out call stops the job from here, on the loop,
   * within CANCEL_POLL_MS: the handler that also watches for it may be
   * busy denoising a preview (tens of milliseconds, hundreds on a loaded
   * machine), which let a timed-out render go on for 0.4 s. */
  if (atl__call_cancelled(rw->call)) {
    atl_farm_cancel(rw->job);
    return;
  }
  uint64_t now = atl_mono_ns();
  if (rw->preview_ms == 0 || now < rw->next_preview_ns)
    return;
  double fraction = atl_farm_job_fraction(rw->job);
  int samples = atl_farm_job_samples_done(rw->job);
  if (rw->live) {
    /* Live previews (ATL_RENDER_PREVIEWS_LIVE): atl__live_preview_due()
     * says when, and nothing is pushed back by a tick that makes none.
     * None while the handler has not taken the last either: it may be
     * busy denoising, and a newer copy would be work thrown away; and
     * the raw first picture, which a loaded machine's handler may take
     * late, is never replaced before it is shown. */
    if (!atl__live_preview_due(rw->live_samples, samples,
                               (now - rw->live_made_ns) / 1000000u))
      return;
    pthread_mutex_lock(&rw->mu);
    int pending = rw->preview != NULL;
    pthread_mutex_unlock(&rw->mu);
    if (pending)
      return;
    rw->next_preview_ns = now + (uint64_t)rw->preview_ms * 1000000u;
  } else {
    /* Each preview is a frame resolved here, on the loop. Both plugins
     * show one only a quarter of the render's time so far after the last
     * (so that a long render shows a dozen, not hundreds), and threw most
     * of a frame every preview_ms away: past the first, frames come a
     * third of the time so far apart, which every such rule takes. */
    uint64_t gap = (uint64_t)rw->preview_ms * 1000000u;
    if (rw->previews > 0 && (now - rw->t_submit_ns) / 3 > gap)
      gap = (now - rw->t_submit_ns) / 3;
    rw->next_preview_ns = now + gap;
    if (fraction <= rw->last_fraction)
      return; /* nothing new to show */
  }
  rw->last_fraction = fraction;
  int w, h;
  atl_farm_job_preview(rw->job, rw->exposure, rw->preview_max_dim, NULL, &w,
                       &h);
  uint8_t *rgb = malloc((size_t)w * (size_t)h * 3);
  atl_film_copy_t film = {0};
  if (rgb == NULL)
    return;
  /* Only the first preview, and those of the first passes, are
   * denoised: past a few dozen low-discrepancy samples the raw picture
   * reads clearly, and denoising every preview took a tenth of the CPU
   * from the workers (12.8 % of a default render_scene of the snowman,
   * perf, on 2 cores). Of live previews the first is raw and the rest
   * denoised. */
  int denoise;
  if (rw->live) {
    denoise = rw->denoise_previews && rw->live_samples > 0;
    rw->live_samples = samples;
    rw->live_made_ns = now;
  } else {
    denoise = rw->denoise_previews &&
              (rw->previews == 0 || samples < DENOISE_PREVIEWS_UNDER);
  }
  rw->previews++;
  if (denoise) {
    if (atl_film_copy_alloc(&film, (size_t)w * (size_t)h,
                            atl_farm_job_guides(rw->job)) != 0) {
      free(rgb);
      return;
    }
    atl_farm_job_film_copy(rw->job, rw->preview_max_dim, &film, &w, &h);
  } else {
    atl_farm_job_preview(rw->job, rw->exposure, rw->preview_max_dim, rgb, &w,
                         &h);
  }
  pthread_mutex_lock(&rw->mu);
  free(rw->preview); /* the handler did not take the last one: skip it */
  atl_film_copy_free(&rw->pfilm);
  rw->preview = rgb;
  rw->pfilm = film;
  rw->pv = (atl_render_preview_t){.width = w,
                                  .height = h,
                                  .samples_done = samples,
                                  .pass = atl_farm_job_pass(rw->job),
                                  .passes = atl_farm_job_passes(rw->job),
                                  .fraction = fraction,
                                  .denoised = denoise};
  pthread_cond_signal(&rw->cv);
  pthread_mutex_unlock(&rw->mu);
}

static void job_done(atl_farm_job_t *job, int status, const char *message,
                     void *user) {
  render_wait_t *rw = user;
  (void)job;
  if (rw->timer_open)
    uv_timer_stop(&rw->timer);
  rw_finish(rw, status, message);
}

static void rw_submit(void *arg) {
  render_wait_t *rw = arg;
  atl_daemon_t *d = rw->d;
  if (d->farm == NULL) {
    rw_finish(rw, -ESHUTDOWN, NULL);
    return;
  }
  rw->t_submit_ns = atl_mono_ns();
  int rc = atl_farm_submit(d->farm, &rw->params, NULL, job_done, rw, &rw->job);
  if (rc != 0) {
    rw->job = NULL;
    rw_finish(rw, rc, NULL);
    return;
  }
  if (uv_timer_init(d->loop, &rw->timer) == 0) {
    rw->timer_open = 1;
    rw->timer.data = rw;
    rw->next_preview_ns = rw->t_submit_ns + (uint64_t)rw->preview_ms * 1000000u;
    uv_timer_start(&rw->timer, preview_tick, CANCEL_POLL_MS, CANCEL_POLL_MS);
  }
}

static void rw_cancel(void *arg) {
  render_wait_t *rw = arg;
  if (rw->job != NULL)
    atl_farm_cancel(rw->job);
  rw_unref(rw);
}

/* ---- handler side ---- */

static int map_status(int status) {
  switch (status) {
  case 0:
    return 0;
  case -ECANCELED:
    return ATL_ECANCELED;
  case -ESHUTDOWN:
    return ATL_ESHUTDOWN;
  case -ENOMEM:
    return ATL_ENOMEM;
  case -EIO:
    return ATL_EIO;
  default:
    return ATL_EINVAL;
  }
}

/* The request as this host knows it: the plugin's members, and zeros
 * for those its ABI did not have. */
static int request_copy(const atl_render_request_t *req,
                        atl_render_request_t *r) {
  memset(r, 0, sizeof(*r));
  if (req == NULL ||
      req->struct_size <
          offsetof(atl_render_request_t, preview_max_dim) + sizeof(int))
    return -1;
  memcpy(r, req, req->struct_size < sizeof(*r) ? req->struct_size : sizeof(*r));
  return 0;
}

/* Checks the request; on a bad one returns ATL_EINVAL and a malloc()ed
 * message saying which value is wrong and what is allowed. timeout_ms is
 * the call's time limit (0: unknown). */
static int check_request(const atl_render_request_t *r, uint32_t timeout_ms,
                         char **why) {
  char *m = NULL, fmsg[160];
  int n = 0;
  double limit = timeout_ms > 0 ? timeout_ms / 1000.0 : 1e6;
  if (r->scene_json == NULL || r->scene_len == 0 || r->width < 1 ||
      r->width > 8192 || r->height < 1 || r->height > 8192 || r->samples < 1 ||
      r->samples > (1 << 20) || r->max_depth < 1 ||
      !(r->exposure > -64 && r->exposure < 64))
    m = strdup("the render request is out of range");
  /* The budget runs from the job's submission and ends with the units
   * in flight, then the picture is resolved and encoded: a budget of the
   * whole time limit would let the call's own timeout cancel it first
   * and lose the picture. A tenth of the limit is left for the rest. */
  else if (!(r->max_seconds >= 0 && r->max_seconds <= 0.9 * limit))
    n = asprintf(&m,
                 "max_seconds: %g is not allowed: give a number of seconds "
                 "above 0 and at most %g (nine tenths of this call's time "
                 "limit, %g s, leaving the rest for loading the scene and "
                 "encoding the picture)",
                 r->max_seconds, 0.9 * limit, limit);
  else if (!(r->noise_threshold >= 0 && r->noise_threshold <= 1))
    n = asprintf(&m,
                 "noise_threshold: %g is not allowed: give 0 (off) or a "
                 "noise above 0 and at most 1",
                 r->noise_threshold);
  else if (r->min_samples != 0 &&
           (r->min_samples < 2 || r->min_samples > r->samples))
    n = asprintf(&m,
                 "min_samples: %d is not allowed: give 2 to %d (the "
                 "samples per pixel)",
                 r->min_samples, r->samples);
  /* The tracer's own rule for filters and widths (ATL_RENDER_REQ_FILTER_*
   * are atl_render_filter_t's values). */
  else if (atl_render_filter_check(r->filter, r->filter_width, fmsg,
                                   sizeof(fmsg)) != 0)
    n = asprintf(&m, "%s", fmsg);
  else if ((r->flags & ~(ATL_RENDER_DENOISE | ATL_RENDER_DENOISE_PREVIEWS |
                         ATL_RENDER_PREVIEWS_LIVE)) != 0)
    n = asprintf(&m, "flags: 0x%x has bits this host does not know", r->flags);
  else
    return 0;
  *why = n < 0 ? NULL : m;
  return ATL_EINVAL;
}

/* The result's members past ABI 1.1, when the plugin's result has them. */
#define RESULT_HAS(req, m)                                                     \
  ((req)->result_size >=                                                       \
   offsetof(atl_render_result_t, m) + sizeof(((atl_render_result_t *)0)->m))

/* The finished picture into out->rgb (allocated): resolved, or denoised
 * when the request asks. Returns 0 or ATL_ENOMEM. */
static int final_picture(const atl_farm_job_t *job,
                         const atl_render_request_t *req,
                         atl_render_result_t *out) {
  int w, h;
  if (!(req->flags & ATL_RENDER_DENOISE)) {
    atl_farm_job_preview(job, req->exposure, 0, out->rgb, &w, &h);
    return 0;
  }
  atl_film_copy_t film;
  if (atl_film_copy_alloc(&film, (size_t)req->width * (size_t)req->height, 1) !=
      0)
    return ATL_ENOMEM;
  atl_farm_job_film_copy(job, 0, &film, &w, &h);
  int rc = atl_film_denoise_resolve(&film, w, h, req->exposure, out->rgb);
  atl_film_copy_free(&film);
  return rc == 0 ? 0 : ATL_ENOMEM;
}

/* A job's figures for the admin socket (stats.h) and its end in the
 * trace. Live previews (preview.c) are counted apart, in the series
 * "preview" (the rest in "tool"): one comes after every change, and mixed
 * in they would hide what the model's renders cost. Any thread: the handler's.
 */
static void count_render(render_wait_t *rw, const char *sid, int preview,
                         uint64_t t0_ns, int rc,
                         const atl_render_result_t *out) {
  static atl_series_t *_Atomic series[2];
  atl_series_t *st = atomic_load(&series[preview]);
  if (st == NULL) {
    st = atl_stats_series(ATL_FAM_RENDER, preview ? "preview" : "tool");
    atomic_store(&series[preview], st);
  }
  uint64_t us = atl_stats_us_since(t0_ns);
  int passes = rc == 0 && rw->job ? atl_farm_job_passes(rw->job) : 0;
  double paths = out->paths_per_s * out->render_ms / 1000.0;
  if (st != NULL) {
    atl_hist_add(&st->h, us, rc != 0);
    atomic_fetch_add(&st->n[ATL_RS_PASSES],
                     (uint64_t)(passes > 0 ? passes : 0));
    atomic_fetch_add(&st->n[ATL_RS_PATHS], (uint64_t)(paths > 0 ? paths : 0));
    atomic_fetch_add(&st->n[ATL_RS_RESTARTS], (uint64_t)out->worker_restarts);
  }
  if (atl_slowlog_wants(us)) {
    json_object *dt = json_object_new_object();
    json_object_object_add(dt, "passes", json_object_new_int(passes));
    json_object_object_add(dt, "paths_per_s",
                           json_object_new_int64((int64_t)out->paths_per_s));
    json_object_object_add(dt, "ok", json_object_new_boolean(rc == 0));
    atl_slowlog_add("render", sid, "render", us, dt);
  }
  if (!atl_trace_wants(ATL_TR_RENDER))
    return;
  json_object *f = json_object_new_object();
  if (preview)
    json_object_object_add(f, "preview", json_object_new_boolean(1));
  json_object_object_add(f, "ok", json_object_new_boolean(rc == 0));
  json_object_object_add(f, "ms", json_object_new_int64((int64_t)(us / 1000)));
  json_object_object_add(f, "passes", json_object_new_int(passes));
  json_object_object_add(f, "paths_per_s",
                         json_object_new_int64((int64_t)out->paths_per_s));
  json_object_object_add(f, "worker_restarts",
                         json_object_new_int((int)out->worker_restarts));
  if (out->error != NULL)
    json_object_object_add(f, "error", json_object_new_string(out->error));
  atl_trace_emit(ATL_TR_RENDER, sid, "end", f);
}

static int api_render(atl_call_t *call, const atl_render_request_t *plugin_req,
                      atl_render_preview_fn preview, void *user,
                      atl_render_result_t *out) {
  atl_render_request_t reqc;
  const atl_render_request_t *req = &reqc;
  int copied = request_copy(plugin_req, &reqc);
  /* An ABI 1.1 plugin's result ends at error. */
  size_t out_size =
      reqc.result_size > offsetof(atl_render_result_t, noise)
          ? (reqc.result_size < sizeof(*out) ? reqc.result_size : sizeof(*out))
          : offsetof(atl_render_result_t, noise);
  memset(out, 0, out_size);
  atl_call_job_t *cj = call != NULL ? atl__job_of(call) : NULL;
  uint64_t t0_ns = atl_mono_ns();
  const char *trace_sid = cj != NULL ? cj->session_id : NULL;
  int is_preview = cj != NULL && cj->preview != NULL;
  if (atl_trace_wants(ATL_TR_RENDER)) {
    json_object *f = json_object_new_object();
    if (is_preview)
      json_object_object_add(f, "preview", json_object_new_boolean(1));
    json_object_object_add(f, "width", json_object_new_int(req->width));
    json_object_object_add(f, "height", json_object_new_int(req->height));
    json_object_object_add(f, "samples", json_object_new_int(req->samples));
    atl_trace_emit(ATL_TR_RENDER, trace_sid, "start", f);
  }
  atl_daemon_t *d = cj != NULL ? cj->d : NULL;
  char *why = NULL;
  if (call == NULL || copied != 0 ||
      check_request(req, cj && cj->tool ? cj->tool->timeout_ms : 0, &why) !=
          0) {
    out->error = why ? why : strdup("the render request is out of range");
    return ATL_EINVAL;
  }
  render_wait_t *rw = calloc(1, sizeof(*rw));
  char *scene = malloc(req->scene_len);
  if (rw == NULL || scene == NULL || d == NULL) {
    free(rw);
    free(scene);
    return ATL_ENOMEM;
  }
  memcpy(scene, req->scene_json, req->scene_len);
  rw->d = d;
  rw->call = call;
  pthread_mutex_init(&rw->mu, NULL);
  /* A monotonic clock for the timed waits: a wall-clock jump must not
   * make a handler sleep through a cancel. */
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&rw->cv, &ca);
  pthread_condattr_destroy(&ca);
  rw->refs = 2;
  rw->scene = scene;
  /* The guides cost the tracer 5 to 10 %: only a denoised picture has
   * them, and the previews of the others are denoised by colour alone. */
  rw->params =
      (atl_farm_job_params_t){.scene_json = scene,
                              .scene_len = req->scene_len,
                              .width = req->width,
                              .height = req->height,
                              .samples = req->samples,
                              .max_depth = req->max_depth,
                              .seed = req->seed,
                              .noise_threshold = req->noise_threshold,
                              .min_samples = req->min_samples,
                              .max_seconds = req->max_seconds,
                              .guides = (req->flags & ATL_RENDER_DENOISE) != 0,
                              .filter = req->filter,
                              .filter_width = req->filter_width};
  rw->exposure = req->exposure;
  rw->preview_ms = preview != NULL ? req->preview_ms : 0;
  rw->preview_max_dim = req->preview_max_dim;
  rw->denoise_previews = (req->flags & ATL_RENDER_DENOISE_PREVIEWS) != 0;
  rw->live = (req->flags & ATL_RENDER_PREVIEWS_LIVE) != 0;
  if (atl_daemon_post(d, rw_submit, rw) != 0) {
    rw->refs = 1;
    rw_unref(rw);
    return ATL_ENOMEM;
  }

  int cancel_sent = 0;
  pthread_mutex_lock(&rw->mu);
  while (!rw->done) {
    /* A cancel first: a preview being denoised (tens of milliseconds
     * under load) must not hold up stopping the workers. */
    if (!cancel_sent && call->host->call_cancelled(call)) {
      cancel_sent = 1;
      rw->refs++;
      pthread_mutex_unlock(&rw->mu);
      if (atl_daemon_post(d, rw_cancel, rw) != 0)
        rw_unref(rw);
      pthread_mutex_lock(&rw->mu);
      continue;
    }
    if (rw->preview != NULL) {
      uint8_t *rgb = rw->preview;
      atl_film_copy_t film = rw->pfilm;
      atl_render_preview_t pv = rw->pv;
      pv.rgb = rgb;
      rw->preview = NULL;
      memset(&rw->pfilm, 0, sizeof(rw->pfilm));
      pthread_mutex_unlock(&rw->mu);
      /* Denoised here, on the handler's thread, not on the loop; a
       * cancelled call's previews are dropped. */
      if (!cancel_sent && (film.film.rgb_sum == NULL ||
                           atl_film_denoise_resolve(&film, pv.width, pv.height,
                                                    req->exposure, rgb) == 0))
        preview(user, &pv);
      atl_film_copy_free(&film);
      free(rgb);
      pthread_mutex_lock(&rw->mu);
      continue;
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += CANCEL_POLL_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&rw->cv, &rw->mu, &until);
  }
  int status = rw->status;
  pthread_mutex_unlock(&rw->mu);

  int rc = map_status(status);
  if (rc == 0) {
    size_t npix = (size_t)req->width * (size_t)req->height;
    out->rgb = malloc(npix * 3);
    if (out->rgb == NULL) {
      rc = ATL_ENOMEM;
    } else {
      /* The job is done, so nothing writes its planes any more: this
       * thread may resolve them (farm.h). */
      rc = final_picture(rw->job, req, out);
      atl_farm_job_stats_t st;
      atl_farm_job_stats(rw->job, 0, &st);
      out->width = req->width;
      out->height = req->height;
      out->samples = req->samples;
      out->render_ms = (double)(rw->t_done_ns - rw->t_submit_ns) / 1e6;
      /* Adaptive sampling and the budget make the paths fewer than
       * pixels x samples: count those traced. */
      out->paths_per_s = out->render_ms > 0 ? (double)npix * st.spp_mean /
                                                  (out->render_ms / 1000)
                                            : 0;
      out->worker_restarts = atl_farm_job_worker_deaths(rw->job);
      if (RESULT_HAS(req, denoised)) {
        out->noise = st.noise;
        out->noise_above = st.above;
        out->spp_min = st.spp_min;
        out->spp_mean = st.spp_mean;
        out->spp_max = st.spp_max;
        out->stop = st.stop;
        out->denoised = (req->flags & ATL_RENDER_DENOISE) != 0;
      }
      if (rc != 0) {
        free(out->rgb);
        out->rgb = NULL;
      }
    }
  } else if (rw->message != NULL) {
    out->error = strdup(rw->message);
  } else if (rc == ATL_ESHUTDOWN) {
    out->error = strdup("the daemon is shutting down");
  } else if (rc == ATL_ECANCELED) {
    out->error = strdup("the render was cancelled");
  }
  count_render(rw, trace_sid, is_preview, t0_ns, rc, out);
  if (atl_daemon_post(d, rw_release_loop, rw) != 0)
    atl_log_kv(ATL_LOG_ERROR, "render job leaked: the loop is gone", NULL);
  rw_unref(rw);
  return rc;
}

/* ---- the daemon's farm ---- */

int atl_render_host_start(atl_daemon_t *d) {
  if (d->cfg->render_workers == 0) {
    atl_log_kv(ATL_LOG_INFO, "render farm off (render.workers = 0)", NULL);
    return 0;
  }
  atl_farm_options_t fo = {.workers = (int)d->cfg->render_workers,
                           .worker_path = d->cfg->render_worker,
                           .log = farm_log,
                           .nice = (int)d->cfg->render_nice};
  char *err = NULL;
  int rc = atl_farm_new(d->loop, &fo, &d->farm, &err);
  if (rc != 0) {
    /* Rendering is one tool among many: without it the daemon still
     * serves everything else, and render_scene says why it cannot. */
    atl_log_kv(ATL_LOG_ERROR, "render farm not started", "error",
               err ? err : strerror(-rc), NULL);
    free(err);
    d->farm = NULL;
    return 0;
  }
  memset(&api, 0, sizeof(api));
  api.struct_size = sizeof(api);
  api.workers = atl_farm_workers(d->farm);
  api.render = api_render;
  d->host_template.render = &api;
  char n[16];
  snprintf(n, sizeof(n), "%d", api.workers);
  atl_log_kv(ATL_LOG_INFO, "render farm started", "workers", n, NULL);
  return 0;
}

void atl_render_host_stop(atl_daemon_t *d) {
  if (d->farm == NULL)
    return;
  atl_farm_t *f = d->farm;
  d->farm = NULL;
  atl_farm_close(f, NULL, NULL);
}

json_object *atl_render_host_status(atl_daemon_t *d) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "running",
                         json_object_new_boolean(d->farm != NULL));
  json_object_object_add(o, "previews", atl_previews_status(d));
  if (d->farm == NULL)
    return o;
  int pids[256];
  int n = atl_farm_worker_pids(d->farm, pids, 256);
  json_object *a = json_object_new_array();
  for (int i = 0; i < n; i++)
    json_object_array_add(a, json_object_new_int(pids[i]));
  json_object_object_add(o, "workers", a);
  json_object_object_add(
      o, "restarts",
      json_object_new_int64((int64_t)atl_farm_restarts(d->farm)));
  json_object_object_add(o, "active_jobs",
                         json_object_new_int(atl_farm_active_jobs(d->farm)));
  /* The farm passes the daemon's choice on to its workers (farm.c,
   * worker_env()), so this is the kernel they run. */
  json_object_object_add(
      o, "kernel",
      json_object_new_string(atl_render_kernel_name(atl_render_kernel())));
  return o;
}
