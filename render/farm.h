/* The render farm: worker processes that render jobs into shared memory.
 *
 * A farm lives on one libuv loop (the daemon's, or the CLI's) and every
 * function here runs on that loop's thread. It starts N worker processes
 * (atelier-render-worker), restarts those that die, and splits each job
 * into units (a tile and a range of samples) that it hands out round-robin
 * across jobs, one wave of samples after another, so that several
 * sessions' renders share the farm fairly and each one's preview sharpens
 * evenly. farm_proto.h explains the shared segment and why a worker's
 * death never counts a sample twice.
 *
 * Ownership: the farm owns its workers and its jobs' segments. A job
 * belongs to the farm until its done callback has run; from then on it is
 * the caller's, who reads what it needs and frees it with
 * atl_farm_job_free(). Strings and buffers passed in are copied.
 */
#ifndef ATL_RENDER_FARM_H
#define ATL_RENDER_FARM_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "render.h"

typedef struct atl_farm_s atl_farm_t;
typedef struct atl_farm_job_s atl_farm_job_t;

/* level: 0 error, 1 warning, 2 info, 3 debug (as atl_log_level_t). */
typedef void (*atl_farm_log_fn)(void *user, int level, const char *msg);

typedef struct {
  int workers;             /* 0: one per online CPU; at most 256 */
  const char *worker_path; /* NULL: atl_farm_worker_path() */
  atl_farm_log_fn log;     /* may be NULL */
  void *log_user;
  /* The workers' nice value, 0 .. 19 (0: the owner's own priority). A
   * daemon lowers its workers' so that its event loop, which answers
   * every call, never waits behind a render for a core. */
  int nice;
} atl_farm_options_t;

/* The worker program: $ATELIER_RENDER_WORKER if set, else
 * atelier-render-worker next to the running program if there is one (a
 * build tree), else the installed one. Returns a malloc()ed path. */
char *atl_farm_worker_path(void);

/* Removes shared-memory segments left by farms whose process is gone
 * (/dev/shm/atelier-render-PID-N). Returns how many it removed. Called by
 * atl_farm_new(); exposed for tests. */
int atl_farm_sweep_stale(void);

/* Starts a farm and its workers (they come up asynchronously; jobs
 * submitted before wait for them). Returns 0, or a negative errno and a
 * malloc()ed message in *err (the caller frees it). */
int atl_farm_new(uv_loop_t *loop, const atl_farm_options_t *opt,
                 atl_farm_t **out, char **err);

/* Fails every job with -ESHUTDOWN (their done callbacks run), stops the
 * workers (SIGKILL after 2 s), closes every handle, frees the farm and
 * then calls done(arg) on the loop. */
void atl_farm_close(atl_farm_t *f, void (*done)(void *arg), void *arg);

/* How many workers the farm keeps, and their pids (0 for one being
 * restarted); returns the number written. */
int atl_farm_workers(const atl_farm_t *f);
int atl_farm_worker_pids(const atl_farm_t *f, int *pids, int max);
/* Worker restarts since the farm started. */
uint64_t atl_farm_restarts(const atl_farm_t *f);
/* Jobs submitted and not yet done. */
int atl_farm_active_jobs(const atl_farm_t *f);

typedef struct {
  const char *scene_json; /* copied into the job's segment */
  size_t scene_len;
  int width, height;     /* 1 .. 8192 */
  int samples;           /* per pixel, 1 .. 1<<20 */
  int max_depth;         /* path vertices, >= 1 */
  int rr_depth;          /* 0: the tracer's default */
  int no_light_sampling; /* 1: BSDF sampling only (tests) */
  uint64_t seed;
  /* Adaptive sampling: 0 (off), or the error (film.h) under which a
   * pixel takes no more samples, > 0 and <= 1. Cycles' default is 0.01. */
  double noise_threshold;
  /* The samples every pixel takes before adaptive sampling may stop it,
   * 2 .. samples; 0: ATL_FARM_MIN_SAMPLES or samples / 8, the larger,
   * at most samples. */
  int min_samples;
  /* The time budget, seconds from submission (0: none, else at most
   * 1e6): then no more units are handed out, those in flight finish, and
   * the job completes with status 0 and stop ATL_FARM_STOP_BUDGET. */
  double max_seconds;
  int guides;          /* 1: the film keeps albedo and normal (denoising) */
  int filter;          /* atl_render_filter_t, 0 .. 2 */
  double filter_width; /* 0: the filter's default; else 0.5 .. 8 pixels */
} atl_farm_job_params_t;

#define ATL_FARM_MIN_SAMPLES 16

/* Why a job that completed ended. */
enum {
  ATL_FARM_STOP_SAMPLES = 0, /* some pixels took every sample */
  ATL_FARM_STOP_NOISE = 1,   /* every pixel reached the noise threshold */
  ATL_FARM_STOP_BUDGET = 2   /* max_seconds ran out */
};

/* After each wave: every pixel that still takes samples now has
 * samples_done (adaptive sampling may have stopped others earlier). */
typedef void (*atl_farm_progress_fn)(atl_farm_job_t *job, int samples_done,
                                     void *user);
/* Once, when the job ends: status 0 (complete), -ECANCELED (after
 * atl_farm_cancel, once no worker is still on it), -ESHUTDOWN, or another
 * negative errno with a message (the scene failed to load in a worker,
 * workers kept dying on it). message is the farm's, valid during the
 * call; it is NULL on success. */
typedef void (*atl_farm_done_fn)(atl_farm_job_t *job, int status,
                                 const char *message, void *user);

/* Submits a job. Returns 0 and *out, or a negative errno: -EINVAL for
 * parameters out of range, -ENOMEM, or the error of shm_open/mmap. */
int atl_farm_submit(atl_farm_t *f, const atl_farm_job_params_t *p,
                    atl_farm_progress_fn progress, atl_farm_done_fn done,
                    void *user, atl_farm_job_t **out);

/* Stops a job: the workers on it see the cancel within 8k samples
 * and the done callback follows with -ECANCELED. Does nothing to a job
 * that is already done. */
void atl_farm_cancel(atl_farm_job_t *job);

/* Frees a job whose done callback has run. A job not done yet is
 * cancelled and freed when it ends, without calling back. */
void atl_farm_job_free(atl_farm_job_t *job);

/* Samples per pixel every pixel has, and the fraction of all the job's
 * samples rendered so far. */
int atl_farm_job_samples_done(const atl_farm_job_t *job);
/* Waves (passes over every pixel) complete, and in all. */
int atl_farm_job_pass(const atl_farm_job_t *job);
int atl_farm_job_passes(const atl_farm_job_t *job);
double atl_farm_job_fraction(const atl_farm_job_t *job);
int atl_farm_job_width(const atl_farm_job_t *job);
int atl_farm_job_height(const atl_farm_job_t *job);
/* Worker deaths that hit this job (its units were given again). */
int atl_farm_job_worker_deaths(const atl_farm_job_t *job);

/* A preview: the committed samples resolved to 8-bit sRGB, every step-th
 * pixel in each direction where step = ceil(max(w, h) / max_dim) (1 if
 * max_dim <= 0), so that it costs the loop little for any frame size.
 * rgb8 holds *out_w * *out_h * 3 bytes; call with rgb8 NULL to get the
 * size only. With max_dim 0 on a finished job it is the final picture,
 * and like atl_farm_job_sums() it may then be called from any thread. */
void atl_farm_job_preview(const atl_farm_job_t *job, float exposure,
                          int max_dim, uint8_t *rgb8, int *out_w, int *out_h);

/* Copies the committed sums (w * h * 3 floats) and counts (w * h), in
 * the layout of atl_render_tile(). For a finished job this is the image;
 * it may be called from any thread once the done callback has run. */
void atl_farm_job_sums(const atl_farm_job_t *job, float *rgb_sum,
                       uint32_t *count);

/* Copies the committed film into out's buffers (the caller's; each may
 * be NULL, and out->active is not used), every step-th pixel as for
 * atl_farm_job_preview() (max_dim 0: all of them), so each buffer holds
 * *out_w * *out_h pixels. albedo_sum and normal_sum are zeros unless the
 * job was submitted with guides; rgb_odd is neither read nor written (the
 * farm keeps no odd sums). Threads: as atl_farm_job_sums(). */
void atl_farm_job_film(const atl_farm_job_t *job, int max_dim,
                       const atl_render_film_t *out, int *out_w, int *out_h);

/* The film as atl_farm_job_film() copies it, and each pixel's sums at
 * its last power of two of samples (film.h): what the denoiser reads.
 * c's buffers are the caller's (atl_film_copy_alloc()), sized for the
 * max_dim given. Threads: as atl_farm_job_sums(). */
struct atl_film_copy_s;
void atl_farm_job_film_copy(const atl_farm_job_t *job, int max_dim,
                            struct atl_film_copy_s *c, int *out_w, int *out_h);

/* Whether the job's film has the albedo and normal guides. */
int atl_farm_job_guides(const atl_farm_job_t *job);

/* The picture's noise and samples, from its committed film (film.h). */
typedef struct {
  /* The root mean square over pixels of each pixel's error estimate
   * (film.h): about the relative noise of a pixel of brightness 1. */
  double noise;
  double above; /* share of pixels whose error is above the threshold */
  int spp_min;  /* samples of the pixel that has the fewest */
  double spp_mean;
  int spp_max;
  int stop; /* ATL_FARM_STOP_*, for a job that completed */
} atl_farm_job_stats_t;

/* Fills *st; `threshold` is the error counted as "above" (the job's own
 * noise_threshold when 0 is given; and 0.01 if that is 0 too). Costs a
 * pass over the frame. Threads: as atl_farm_job_sums(). */
void atl_farm_job_stats(const atl_farm_job_t *job, double threshold,
                        atl_farm_job_stats_t *st);

#endif
