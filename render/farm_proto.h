/* What the render farm (farm.c, in the daemon or the CLI) and its worker
 * processes (worker.c) share: the layout of a job's shared-memory segment
 * and the messages on the socket between them. Internal to render/.
 *
 * A job's segment holds a header, the scene document, TWO frame planes
 * and one `active` mask. A plane is the full frame's film
 * (atl_render_film_t): float RGB sums, per-pixel sample counts and, when
 * the job asks for the denoiser's guides, the first-hit albedo and
 * normal sums. It has no odd-indexed sums: the farm's error estimate and
 * the denoiser's variance use the sums the farm keeps at each power of
 * two (farm_film.c), and the odd sums cost every unit 12 bytes a pixel
 * of copying and the tracer an addition per sample for nothing. Every
 * tile has one committed plane, which only the farm knows and flips. A
 * worker given (tile, samples [first, first + n)) copies the tile's
 * film from the committed plane to the other one, adds its samples
 * there, and reports. The farm flips the tile's plane when the report
 * arrives.
 *
 * The active mask (one byte a pixel, not per plane) says which pixels
 * take samples. Only the farm writes it, and only for a tile with no
 * unit in flight, after that tile's unit committed and before its next
 * one is sent: so a worker reads a mask that cannot change under it, and
 * the mask is a function of the tile's committed samples alone.
 *
 * Why two planes: a worker killed in the middle of a tile has written
 * into the plane nobody reads, so the tile is simply given again and no
 * sample is ever counted twice. The committed plane is only ever read,
 * by the farm for previews and by the next worker to take the tile.
 *
 * The segment is made with shm_open() and unlinked at once; workers get
 * its file descriptor over the socket (SCM_RIGHTS). So a crash of anyone
 * at any time leaves nothing in /dev/shm, except in the instant between
 * shm_open() and shm_unlink(), which the farm's start-up sweep covers.
 */
#ifndef ATL_RENDER_FARM_PROTO_H
#define ATL_RENDER_FARM_PROTO_H

#include <stdint.h>

#include "render.h"

#define ATL_FARM_MAGIC 0x524c5441u /* "ATLR" */
#define ATL_FARM_PROTO_VERSION 3u

/* The name of a segment: ATL_FARM_SHM_PREFIX, the farm's pid, a dash and
 * a counter. The start-up sweep removes those whose pid is gone. */
#define ATL_FARM_SHM_PREFIX "atelier-render-"

/* The fd of the socket a worker inherits. */
#define ATL_FARM_WORKER_FD 3

typedef struct {
  uint32_t magic;
  uint32_t version;
  /* Set to 1 by the farm to stop every worker on this job: they look at
   * it every few rows of pixels (some 8k samples, a few milliseconds). */
  volatile uint32_t cancel;
  int32_t width, height;
  int32_t max_depth, rr_depth, no_light_sampling;
  int32_t filter;     /* atl_render_filter_t, passed to the tracer as is */
  int32_t guides;     /* 1: the planes hold albedo and normal sums */
  int32_t use_active; /* 1: the tracer skips pixels the mask turns off */
  double filter_width;
  uint64_t seed;
  uint64_t scene_off, scene_len; /* the scene document, JSON */
  uint64_t plane_off[2];         /* where each plane starts */
  /* Within a plane, from its start: float sum[w*h*3], uint32 count[w*h],
   * and with guides float albedo[w*h*3] and normal[w*h*3] (their offsets
   * are 0 without). */
  uint64_t count_off, albedo_off, normal_off;
  uint64_t plane_size;
  uint64_t active_off; /* uint8 active[w*h], from the segment's start */
  uint64_t total_size;
} atl_farm_shm_t;

/* The film of plane `plane` (0 or 1) of a mapped segment, with the
 * active mask when the job uses it (else NULL). */
static inline atl_render_film_t atl_farm_plane_film(atl_farm_shm_t *h,
                                                    int plane) {
  char *base = (char *)h + h->plane_off[plane];
  atl_render_film_t f = {
      .rgb_sum = (float *)base,
      .count = (uint32_t *)(base + h->count_off),
      .albedo_sum = h->guides ? (float *)(base + h->albedo_off) : NULL,
      .normal_sum = h->guides ? (float *)(base + h->normal_off) : NULL,
      .active = h->use_active ? (const uint8_t *)h + h->active_off : NULL};
  return f;
}

enum {
  /* farm -> worker */
  ATL_FARM_MSG_JOB = 1,  /* job id; the segment's fd rides along */
  ATL_FARM_MSG_UNIT = 2, /* render one tile's range of samples */
  ATL_FARM_MSG_DROP = 3, /* the job is over: unmap it */
  /* worker -> farm */
  ATL_FARM_MSG_HELLO = 10,   /* the worker is ready (pid) */
  ATL_FARM_MSG_DONE = 11,    /* the unit is in its plane */
  ATL_FARM_MSG_ABORTED = 12, /* the unit stopped on cancel */
  ATL_FARM_MSG_FAILED = 13   /* the job cannot be rendered (text) */
};

typedef struct {
  uint32_t type;
  uint32_t job;
  uint32_t unit; /* the farm's tag, echoed back */
  int32_t x0, y0, x1, y1;
  uint32_t src, dst; /* planes: copy the tile from src, add into dst */
  uint32_t n;        /* samples per (active) pixel */
  uint64_t first;    /* the first sample index */
} atl_farm_msg_t;

typedef struct {
  uint32_t type;
  uint32_t job;
  uint32_t unit;
  int32_t pid;
  char text[240]; /* FAILED: why, NUL-terminated */
} atl_farm_reply_t;

#endif
