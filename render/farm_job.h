/* The inside of a render farm job, shared by farm.c (the scheduler and
 * the workers) and farm_film.c (what a job's film says: previews, copies,
 * noise, and the adaptive sampling decisions). Internal to render/.
 *
 * Ownership: as farm.h says; everything here is the farm's. */
#ifndef ATL_RENDER_FARM_JOB_H
#define ATL_RENDER_FARM_JOB_H

#include <stdint.h>

#include <uv.h>

#include "farm.h"
#include "farm_proto.h"

/* Tiles are 64 x 64 pixels and a unit aims at about 32k paths (some
 * 10 ms of one core): long enough that the messages around it cost
 * nothing, short enough for a fair share between jobs and a quick end. */
#define TILE 64
#define UNIT_PATHS 32768

struct atl_farm_job_s {
  atl_farm_t *farm;
  uint32_t id;
  atl_farm_job_t *next, *prev;         /* the farm's active list */
  atl_farm_job_t *all_next, *all_prev; /* every job not yet freed */
  int in_all;                          /* linked into the farm's all-list */
  int width, height, samples;
  int ntx, nty, ntiles;
  int npasses;
  int *pass_first, *pass_n;
  uint8_t *plane;  /* per tile: the committed plane */
  int *done;       /* per tile: passes committed */
  uint8_t *busy;   /* per tile: a unit is in flight */
  uint8_t *deaths; /* per tile: worker deaths while in flight */
  uint64_t *sent;  /* per worker: incarnation that has the segment */
  uint8_t *unconv; /* TILE * TILE: scratch of tile_adapt() */
  /* Per pixel: the RGB sums of its first first_n samples, first_n the
   * largest power of two below its count (film.h says why the error is
   * estimated from these halves); the farm's own, not shared. */
  float *first_sum;
  uint32_t *first_n;
  double noise_threshold; /* 0: adaptive sampling off */
  int min_samples;        /* before the first convergence check */
  int tiles_converged;    /* tiles adaptive sampling ended */
  int budget_over;        /* max_seconds passed: no more units */
  int stop;               /* ATL_FARM_STOP_*, once finished with 0 */
  int wave;               /* passes every tile has */
  int scan;               /* where the next unit search starts */
  uint64_t units_done, units_total_weight, weight_done;
  int in_flight;
  int worker_deaths;
  int finished; /* the done callback ran (or is owed: see detached) */
  int cancelled;
  int detached; /* freed by the caller before it ended */
  int fd;
  atl_farm_shm_t *hdr;
  size_t size;
  /* The budget's timer (max_seconds), and after a cancel the grace
   * period's: one handle, opened at submission, closed when the job
   * finishes. */
  uv_timer_t grace;
  int grace_open;      /* the handle is open or closing */
  int destroy_pending; /* freed by the caller while grace closes */
  atl_farm_progress_fn progress;
  atl_farm_done_fn done_cb;
  void *user;
};

static inline void tile_rect(const atl_farm_job_t *j, int t, int *x0, int *y0,
                             int *x1, int *y1) {
  int tx = t % j->ntx, ty = t / j->ntx;
  *x0 = tx * TILE;
  *y0 = ty * TILE;
  *x1 = *x0 + TILE > j->width ? j->width : *x0 + TILE;
  *y1 = *y0 + TILE > j->height ? j->height : *y0 + TILE;
}

static inline atl_render_film_t plane_film(const atl_farm_job_t *j, int plane) {
  return atl_farm_plane_film(j->hdr, plane);
}

static inline uint8_t *job_active(const atl_farm_job_t *j) {
  return (uint8_t *)j->hdr + j->hdr->active_off;
}

/* After tile t's unit of pass `pass` committed (farm_film.c): keep the first
 * halves' sums, then decide which of its pixels go on (adaptive sampling). */
void atl__farm_tile_keep_halves(atl_farm_job_t *j, int t, int pass);
void atl__farm_tile_adapt(atl_farm_job_t *j, int t);

#endif
