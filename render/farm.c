/* The render farm: workers, jobs, and the scheduler between them. See
 * farm.h for the contract and farm_proto.h for the shared segment; what
 * a job's film says (previews, noise, adaptive sampling) is in
 * farm_film.c. */
#include "atl-build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cloexec.h"
#include "farm.h"
#include "farm_job.h"
#include "kernel.h"
#include "render.h"

/* Units a worker holds at once: the one it renders and the next, so that
 * it never waits for the loop between two. */
#define QUEUE_DEPTH 2
/* How many waves a tile may run ahead of the slowest one in an adaptive
 * job (job_pick_tile() says why). */
#define MAX_AHEAD_ADAPTIVE 8
/* A tile whose unit was in flight in this many worker deaths fails its
 * job: the scene itself kills workers. */
#define MAX_TILE_DEATHS 3
/* Restart pacing: more than this many deaths within RESTART_WINDOW_MS
 * and the next restart waits RESTART_DELAY_MS. */
#define RESTART_BURST 5
#define RESTART_WINDOW_MS 10000
#define RESTART_DELAY_MS 1000
/* A worker still on a cancelled job after this long is killed. */
#define CANCEL_GRACE_MS 2000
#define STOP_GRACE_MS 2000
#define MAX_WORKERS 256

typedef struct farm_worker_s farm_worker_t;

typedef struct {
  atl_farm_job_t *job; /* NULL once the job is gone */
  uint32_t job_id;
  int tile;
  int pass;
  int used;
} farm_unit_t;

struct farm_worker_s {
  atl_farm_t *farm;
  int index;
  uint64_t incarnation; /* grows with every start */
  int pid;
  int fd; /* our end of the socket, -1 when down */
  int ready;
  int exiting; /* the process is gone or going: no new units */
  uv_process_t proc;
  uv_poll_t poll;
  int proc_open, poll_open;
  int poll_closing; /* uv_close() was called on poll */
  uv_timer_t restart;
  farm_unit_t units[QUEUE_DEPTH];
  int n_units;
  uint64_t deaths_ms[RESTART_BURST];
  int deaths_at;
};

struct atl_farm_s {
  uv_loop_t *loop;
  char *worker_path;
  atl_farm_log_fn log;
  void *log_user;
  int nworkers;
  int nice; /* the workers' (atl_farm_options_t) */
  farm_worker_t *workers;
  atl_farm_job_t *jobs; /* active, in submission order (a ring) */
  atl_farm_job_t *all;  /* every job not yet freed, done or not */
  atl_farm_job_t *rr;   /* the job the next unit search starts at */
  int njobs;
  uint32_t next_job_id;
  uint32_t shm_counter;
  uint64_t restarts;
  int closing;
  int open_handles;
  uv_timer_t stop_timer;
  void (*closed_cb)(void *);
  void *closed_arg;
};

static void flog(atl_farm_t *f, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void flog(atl_farm_t *f, int level, const char *fmt, ...) {
  if (f->log == NULL)
    return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  f->log(f->log_user, level, msg);
}

static void worker_start(farm_worker_t *w);
static void schedule(atl_farm_t *f);
static void job_finish(atl_farm_job_t *j, int status, const char *msg);
static void job_timer_fired(uv_timer_t *t);

/* ---- paths and stale segments ---- */

char *atl_farm_worker_path(void) {
  const char *env = getenv("ATELIER_RENDER_WORKER");
  if (env != NULL && env[0] != '\0')
    return strdup(env);
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash != NULL) {
      *slash = '\0';
      char *p = NULL;
      if (asprintf(&p, "%s/atelier-render-worker", self) >= 0) {
        if (access(p, X_OK) == 0)
          return p;
        free(p);
      }
    }
  }
  return strdup(ATL_DEFAULT_RENDER_WORKER);
}

int atl_farm_sweep_stale(void) {
  DIR *d = opendir("/dev/shm");
  if (d == NULL)
    return 0;
  int removed = 0;
  size_t plen = strlen(ATL_FARM_SHM_PREFIX);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, ATL_FARM_SHM_PREFIX, plen) != 0)
      continue;
    char *end = NULL;
    long pid = strtol(e->d_name + plen, &end, 10);
    if (end == e->d_name + plen || *end != '-' || pid <= 0)
      continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
      continue; /* its farm is alive (or not ours to judge) */
    char name[NAME_MAX + 2];
    snprintf(name, sizeof(name), "/%s", e->d_name);
    if (shm_unlink(name) == 0)
      removed++;
  }
  closedir(d);
  return removed;
}

/* ---- sending ---- */

static int send_msg(farm_worker_t *w, const atl_farm_msg_t *m, int fd) {
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } ctl;
  struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    memset(&ctl, 0, sizeof(ctl));
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof(ctl.buf);
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  ssize_t n;
  do
    n = sendmsg(w->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  return n == (ssize_t)sizeof(*m) ? 0 : -1;
}

/* A worker we cannot talk to is as good as dead: kill it, and its exit
 * gives its units back. */
static void worker_kill(farm_worker_t *w, const char *why) {
  if (w->pid > 0 && !w->exiting) {
    flog(w->farm, 1, "render worker %d killed: %s", w->pid, why);
    w->exiting = 1;
    uv_process_kill(&w->proc, SIGKILL);
  }
}

/* ---- jobs ---- */

/* The waves a time budget cannot cut: the first two, so that every
 * pixel has a sample and an error estimate (two samples), however short
 * the budget or large the frame. Without them a budget of 0.3 s on a
 * 2000 x 1500 frame ended with 70 % of the pixels black, and the call
 * still succeeded. */
static int budget_floor(const atl_farm_job_t *j) {
  return j->npasses < 2 ? j->npasses : 2;
}

/* The next unit of j a worker may take, or -1: the tile with the fewest
 * passes, so a wave is finished before the next, but up to `ahead`
 * waves ahead of the slowest tile, so that workers do not idle while
 * the last tiles of a wave finish elsewhere. With adaptive sampling the
 * tiles' work differs (a tile of sky stops early, one of glass takes
 * every sample), and one wave ahead would leave workers idle behind the
 * slowest tile: there it is MAX_AHEAD_ADAPTIVE. Which tile runs when
 * changes nothing in the picture; only the preview is less even. */
static int job_pick_tile(atl_farm_job_t *j) {
  /* Past its budget a job only finishes its first waves (budget_floor()). */
  int ahead = j->noise_threshold > 0 ? MAX_AHEAD_ADAPTIVE : 1;
  if (j->budget_over)
    ahead = budget_floor(j) - 1 - j->wave;
  if (ahead < 0)
    return -1;
  int best = -1;
  for (int k = 0; k < j->ntiles; k++) {
    int t = (j->scan + k) % j->ntiles;
    if (j->busy[t] || j->done[t] >= j->npasses || j->done[t] > j->wave + ahead)
      continue;
    if (best < 0 || j->done[t] < j->done[best])
      best = t;
    if (j->done[t] == j->wave)
      break; /* none has fewer */
  }
  if (best >= 0)
    j->scan = (best + 1) % j->ntiles;
  return best;
}

static void job_unlink_active(atl_farm_job_t *j) {
  atl_farm_t *f = j->farm;
  if (j->next == NULL)
    return;
  if (f->rr == j)
    f->rr = j->next == j ? NULL : j->next;
  if (j->next == j) {
    f->jobs = NULL;
  } else {
    j->prev->next = j->next;
    j->next->prev = j->prev;
    if (f->jobs == j)
      f->jobs = j->next;
  }
  j->next = j->prev = NULL;
  f->njobs--;
}

static void job_release(atl_farm_job_t *j) {
  atl_farm_t *f = j->farm;
  if (f != NULL && j->in_all) {
    if (j->all_prev != NULL)
      j->all_prev->all_next = j->all_next;
    else
      f->all = j->all_next;
    if (j->all_next != NULL)
      j->all_next->all_prev = j->all_prev;
  }
  if (j->hdr != NULL)
    munmap(j->hdr, j->size);
  if (j->fd >= 0)
    close(j->fd);
  free(j->pass_first);
  free(j->pass_n);
  free(j->plane);
  free(j->done);
  free(j->busy);
  free(j->deaths);
  free(j->sent);
  free(j->unconv);
  free(j->first_sum);
  free(j->first_n);
  free(j);
}

static void grace_closed(uv_handle_t *h) {
  atl_farm_job_t *j = h->data;
  j->grace_open = 0;
  if (j->destroy_pending)
    job_release(j);
}

/* Frees j for good: its workers forget it (DROP), units still in flight
 * lose their pointer to it, and its segment goes when the last mapping
 * does. A job whose farm is gone (freed after the farm closed) only has
 * its memory to free. */
static void job_destroy(atl_farm_job_t *j) {
  atl_farm_t *f = j->farm;
  for (int i = 0; f != NULL && i < f->nworkers; i++) {
    farm_worker_t *w = &f->workers[i];
    for (int u = 0; u < QUEUE_DEPTH; u++)
      if (w->units[u].used && w->units[u].job == j)
        w->units[u].job = NULL;
    if (w->fd >= 0 && j->sent[i] == w->incarnation && !w->exiting) {
      atl_farm_msg_t m = {.type = ATL_FARM_MSG_DROP, .job = j->id};
      if (send_msg(w, &m, -1) != 0)
        worker_kill(w, "its socket is full or closed");
    }
  }
  if (j->grace_open) {
    j->destroy_pending = 1;
    return;
  }
  job_release(j);
}

static void job_finish(atl_farm_job_t *j, int status, const char *msg) {
  if (j->finished)
    return;
  j->finished = 1;
  /* Ended by the budget only if work was left undone. */
  j->stop = j->wave < j->npasses              ? ATL_FARM_STOP_BUDGET
            : j->tiles_converged == j->ntiles ? ATL_FARM_STOP_NOISE
                                              : ATL_FARM_STOP_SAMPLES;
  job_unlink_active(j);
  /* The grace timer is of no more use: close it now, while the loop is
   * sure to run, rather than when the caller frees the job. */
  if (j->grace_open && !uv_is_closing((uv_handle_t *)&j->grace))
    uv_close((uv_handle_t *)&j->grace, grace_closed);
  if (j->detached) {
    job_destroy(j);
    return;
  }
  if (j->done_cb != NULL)
    j->done_cb(j, status, msg, j->user);
}

/* A cancelled job ends when its last unit in flight does, and so does
 * one whose budget ran out (complete, with what it has). */
static void job_check_idle(atl_farm_job_t *j) {
  if (j->in_flight > 0 || j->finished)
    return;
  if (j->cancelled)
    job_finish(j, -ECANCELED, NULL);
  else if (j->budget_over && j->wave >= budget_floor(j))
    job_finish(j, 0, NULL);
}

/* The passes of `samples` samples: 1, 1, 2, 4, ... up to cap each, the
 * last one whatever is left. Writes each pass's first sample and size
 * when first and size are not NULL; returns how many there are. */
static int pass_schedule(int samples, int cap, int *first, int *size) {
  int n = 0, next = 1;
  for (int done = 0; done < samples; n++) {
    int take = next < samples - done ? next : samples - done;
    if (first != NULL) {
      first[n] = done;
      size[n] = take;
    }
    done += take;
    if (n > 0 && next < cap)
      next = next * 2 > cap ? cap : next * 2;
  }
  return n;
}

static int job_layout(atl_farm_job_t *j, const atl_farm_job_params_t *p) {
  j->width = p->width;
  j->height = p->height;
  j->samples = p->samples;
  j->ntx = (p->width + TILE - 1) / TILE;
  j->nty = (p->height + TILE - 1) / TILE;
  j->ntiles = j->ntx * j->nty;
  /* Passes up to a cap that keeps a unit near UNIT_PATHS: the first
   * preview comes after one sample, and later passes are long enough to
   * be cheap to schedule. */
  long tile_px = (long)(p->width < TILE ? p->width : TILE) *
                 (long)(p->height < TILE ? p->height : TILE);
  int cap = (int)(UNIT_PATHS / tile_px);
  cap = cap < 1 ? 1 : cap > 64 ? 64 : cap;
  /* A power of two, so that the passes end at every power of two of
   * samples, where the error estimate splits a pixel's samples. */
  while (cap & (cap - 1))
    cap &= cap - 1;
  int n = pass_schedule(p->samples, cap, NULL, NULL);
  j->npasses = n;
  j->pass_first = calloc((size_t)n, sizeof(int));
  j->pass_n = calloc((size_t)n, sizeof(int));
  j->plane = calloc((size_t)j->ntiles, 1);
  j->done = calloc((size_t)j->ntiles, sizeof(int));
  j->busy = calloc((size_t)j->ntiles, 1);
  j->deaths = calloc((size_t)j->ntiles, 1);
  j->sent = calloc(MAX_WORKERS, sizeof(uint64_t));
  j->unconv = calloc(TILE * TILE, 1);
  size_t npix = (size_t)p->width * (size_t)p->height;
  j->first_sum = calloc(npix * 3, sizeof(float));
  j->first_n = calloc(npix, sizeof(uint32_t));
  if (!j->pass_first || !j->pass_n || !j->plane || !j->done || !j->busy ||
      !j->deaths || !j->sent || !j->unconv || !j->first_sum || !j->first_n)
    return -ENOMEM;
  j->noise_threshold = p->noise_threshold;
  j->min_samples = p->min_samples;
  if (j->min_samples == 0) {
    j->min_samples = p->samples / 8 > ATL_FARM_MIN_SAMPLES
                         ? p->samples / 8
                         : ATL_FARM_MIN_SAMPLES;
    j->min_samples = j->min_samples < p->samples ? j->min_samples : p->samples;
  }
  pass_schedule(p->samples, cap, j->pass_first, j->pass_n);
  return 0;
}

/* Makes the segment: created, unlinked at once (farm_proto.h says why),
 * sized and mapped. */
static int job_segment(atl_farm_job_t *j, const atl_farm_job_params_t *p) {
  atl_farm_t *f = j->farm;
  size_t npix = (size_t)p->width * (size_t)p->height;
  size_t rgb = npix * 3 * sizeof(float);
  size_t count_off = rgb, counts_end = count_off + npix * sizeof(uint32_t);
  size_t albedo_off = p->guides ? counts_end : 0;
  size_t normal_off = p->guides ? albedo_off + rgb : 0;
  size_t plane = p->guides ? normal_off + rgb : counts_end;
  size_t scene_off = (sizeof(atl_farm_shm_t) + 63) & ~(size_t)63;
  size_t plane0 = (scene_off + p->scene_len + 4095) & ~(size_t)4095;
  size_t plane1 = (plane0 + plane + 4095) & ~(size_t)4095;
  size_t active_off = (plane1 + plane + 4095) & ~(size_t)4095;
  size_t total = active_off + npix;
  char name[64];
  snprintf(name, sizeof(name), "/%s%d-%u", ATL_FARM_SHM_PREFIX, (int)getpid(),
           ++f->shm_counter);
  j->fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (j->fd < 0)
    return -errno;
  shm_unlink(name);
  /* Reserved now rather than on first touch: a full /dev/shm is then an
   * error here (ENOSPC) instead of a SIGBUS in whoever writes first. */
  int e = posix_fallocate(j->fd, 0, (off_t)total);
  if (e != 0)
    return -e;
  void *map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, j->fd, 0);
  if (map == MAP_FAILED)
    return -errno;
  j->hdr = map;
  j->size = total;
  atl_farm_shm_t *h = j->hdr;
  h->magic = ATL_FARM_MAGIC;
  h->version = ATL_FARM_PROTO_VERSION;
  h->width = p->width;
  h->height = p->height;
  h->max_depth = p->max_depth;
  h->rr_depth = p->rr_depth;
  h->no_light_sampling = p->no_light_sampling;
  h->filter = p->filter;
  h->filter_width = p->filter_width;
  h->guides = p->guides != 0;
  h->use_active = p->noise_threshold > 0;
  h->seed = p->seed;
  h->scene_off = scene_off;
  h->scene_len = p->scene_len;
  h->plane_off[0] = plane0;
  h->plane_off[1] = plane1;
  h->count_off = count_off;
  h->albedo_off = albedo_off;
  h->normal_off = normal_off;
  h->plane_size = plane;
  h->active_off = active_off;
  h->total_size = total;
  memcpy((char *)map + scene_off, p->scene_json, p->scene_len);
  /* The reserved pages are zeroed: both planes start with no samples,
   * and every pixel takes samples until adaptive sampling says not. */
  memset((char *)map + active_off, 1, npix);
  return 0;
}

int atl_farm_submit(atl_farm_t *f, const atl_farm_job_params_t *p,
                    atl_farm_progress_fn progress, atl_farm_done_fn done,
                    void *user, atl_farm_job_t **out) {
  *out = NULL;
  if (f->closing)
    return -ESHUTDOWN;
  if (p->scene_json == NULL || p->scene_len == 0 || p->width < 1 ||
      p->width > 8192 || p->height < 1 || p->height > 8192 || p->samples < 1 ||
      p->samples > (1 << 20) || p->max_depth < 1 ||
      !(p->noise_threshold >= 0 && p->noise_threshold <= 1) ||
      (p->min_samples != 0 &&
       (p->min_samples < 2 || p->min_samples > p->samples)) ||
      !(p->max_seconds >= 0 && p->max_seconds <= 1e6) ||
      atl_render_filter_check(p->filter, p->filter_width, NULL, 0) != 0)
    return -EINVAL;
  atl_farm_job_t *j = calloc(1, sizeof(*j));
  if (j == NULL)
    return -ENOMEM;
  j->farm = f;
  j->fd = -1;
  j->id = ++f->next_job_id;
  int rc = job_layout(j, p);
  if (rc == 0)
    rc = job_segment(j, p);
  if (rc != 0) {
    job_release(j);
    return rc;
  }
  for (int k = 0; k < j->npasses; k++)
    j->units_total_weight += (uint64_t)j->pass_n[k] * (uint64_t)j->ntiles;
  j->progress = progress;
  j->done_cb = done;
  j->user = user;
  if (uv_timer_init(f->loop, &j->grace) != 0) {
    job_release(j);
    return -ENOMEM;
  }
  j->grace_open = 1;
  j->grace.data = j;
  /* The loop's clock is that of its last turn: bring it to now, or the
   * budget would count from then. */
  uv_update_time(f->loop);
  if (p->max_seconds > 0)
    uv_timer_start(&j->grace, job_timer_fired,
                   (uint64_t)ceil(p->max_seconds * 1000), 0);
  if (f->jobs == NULL) {
    j->next = j->prev = j;
    f->jobs = j;
  } else {
    j->next = f->jobs;
    j->prev = f->jobs->prev;
    j->prev->next = j;
    f->jobs->prev = j;
  }
  if (f->rr == NULL)
    f->rr = j;
  f->njobs++;
  j->all_next = f->all;
  if (f->all != NULL)
    f->all->all_prev = j;
  f->all = j;
  j->in_all = 1;
  *out = j;
  schedule(f);
  return 0;
}

/* The job's timer: after a cancel, the end of the grace period, when
 * workers still on the job are killed; before, the end of the budget. */
static void job_timer_fired(uv_timer_t *t) {
  atl_farm_job_t *j = t->data;
  atl_farm_t *f = j->farm;
  if (j->finished)
    return;
  if (!j->cancelled) {
    /* The units in flight are let finish rather than cancelled: each is
     * some 10 ms of a core, so the job ends as promptly either way, and
     * their samples are kept (and the cancel flag stays the caller's). */
    j->budget_over = 1;
    job_check_idle(j);
    if (!j->finished)
      schedule(f); /* the first waves go on */
    return;
  }
  for (int i = 0; i < f->nworkers; i++)
    for (int u = 0; u < QUEUE_DEPTH; u++)
      if (f->workers[i].units[u].used && f->workers[i].units[u].job == j)
        worker_kill(&f->workers[i], "still rendering a cancelled job");
}

void atl_farm_cancel(atl_farm_job_t *j) {
  if (j == NULL || j->finished || j->cancelled)
    return;
  j->cancelled = 1;
  __atomic_store_n(&j->hdr->cancel, 1, __ATOMIC_RELAXED);
  if (j->in_flight > 0)
    uv_timer_start(&j->grace, job_timer_fired, CANCEL_GRACE_MS, 0);
  job_check_idle(j);
}

void atl_farm_job_free(atl_farm_job_t *j) {
  if (j == NULL)
    return;
  if (!j->finished) {
    j->detached = 1;
    atl_farm_cancel(j);
    return;
  }
  job_destroy(j);
}

/* ---- scheduling ---- */

/* Gives w a unit of the next job in round-robin order that has one.
 * Returns 1 if it did. */
static int assign_one(atl_farm_t *f, farm_worker_t *w) {
  if (f->rr == NULL)
    return 0;
  atl_farm_job_t *start = f->rr, *j = start;
  do {
    atl_farm_job_t *next = j->next;
    int t = j->cancelled ? -1 : job_pick_tile(j);
    if (t >= 0) {
      if (j->sent[w->index] != w->incarnation) {
        atl_farm_msg_t m = {.type = ATL_FARM_MSG_JOB, .job = j->id};
        if (send_msg(w, &m, j->fd) != 0) {
          worker_kill(w, "its socket is full or closed");
          return 0;
        }
        j->sent[w->index] = w->incarnation;
      }
      int pass = j->done[t];
      atl_farm_msg_t m = {.type = ATL_FARM_MSG_UNIT,
                          .job = j->id,
                          .src = j->plane[t],
                          .dst = 1u - j->plane[t],
                          .first = (uint64_t)j->pass_first[pass],
                          .n = (uint32_t)j->pass_n[pass]};
      int slot = 0;
      while (w->units[slot].used)
        slot++;
      m.unit = (uint32_t)slot;
      tile_rect(j, t, &m.x0, &m.y0, &m.x1, &m.y1);
      if (send_msg(w, &m, -1) != 0) {
        worker_kill(w, "its socket is full or closed");
        return 0;
      }
      w->units[slot] = (farm_unit_t){
          .job = j, .job_id = j->id, .tile = t, .pass = pass, .used = 1};
      w->n_units++;
      j->busy[t] = 1;
      j->in_flight++;
      f->rr = next;
      return 1;
    }
    j = next;
  } while (j != start);
  return 0;
}

static void schedule(atl_farm_t *f) {
  if (f->closing)
    return;
  /* Fill every worker's first slot before anyone's second, so that two
   * units never wait behind each other while a worker idles. */
  for (int depth = 1; depth <= QUEUE_DEPTH; depth++)
    for (int i = 0; i < f->nworkers; i++) {
      farm_worker_t *w = &f->workers[i];
      if (!w->ready || w->exiting || w->fd < 0 || w->n_units >= depth)
        continue;
      if (!assign_one(f, w))
        return;
    }
}

/* The wave advanced when the slowest tile caught up. */
static void job_advance(atl_farm_job_t *j) {
  int before = j->wave;
  for (;;) {
    if (j->wave >= j->npasses)
      break;
    int all = 1;
    for (int t = 0; t < j->ntiles && all; t++)
      all = j->done[t] > j->wave;
    if (!all)
      break;
    j->wave++;
  }
  if (j->wave == before)
    return;
  if (j->wave >= j->npasses) {
    job_finish(j, 0, NULL);
    return;
  }
  if (j->progress != NULL && !j->cancelled && !j->detached)
    j->progress(j, j->pass_first[j->wave], j->user);
}

static void unit_free(farm_worker_t *w, int slot) {
  w->units[slot].used = 0;
  w->n_units--;
}

static void on_reply(farm_worker_t *w, const atl_farm_reply_t *r) {
  atl_farm_t *f = w->farm;
  if (r->type == ATL_FARM_MSG_HELLO) {
    w->ready = 1;
    return;
  }
  if (r->unit >= QUEUE_DEPTH || !w->units[r->unit].used)
    return;
  farm_unit_t u = w->units[r->unit];
  unit_free(w, (int)r->unit);
  atl_farm_job_t *j = u.job;
  if (j == NULL || j->id != r->job)
    return; /* the job was freed meanwhile */
  j->busy[u.tile] = 0;
  j->in_flight--;
  if (j->finished)
    return; /* failed meanwhile; its caller has what it needs */
  switch (r->type) {
  case ATL_FARM_MSG_DONE:
    /* The worker's stores to its plane happened before its message; this
     * fence pairs with its release fence. */
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (j->cancelled)
      break;
    j->plane[u.tile] ^= 1;
    j->done[u.tile]++;
    j->weight_done += (uint64_t)j->pass_n[u.pass];
    atl__farm_tile_keep_halves(j, u.tile, u.pass);
    atl__farm_tile_adapt(j, u.tile);
    job_advance(j);
    break;
  case ATL_FARM_MSG_FAILED: {
    char msg[300];
    snprintf(msg, sizeof(msg), "%.*s", (int)sizeof(r->text), r->text);
    flog(f, 1, "render job %u failed in worker %d: %s", j->id, w->pid, msg);
    job_finish(j, -EINVAL, msg);
    break;
  }
  default: /* ABORTED */
    break;
  }
  if (!j->finished)
    job_check_idle(j);
}

static void on_readable(uv_poll_t *p, int status, int events) {
  farm_worker_t *w = p->data;
  (void)events;
  if (status < 0) {
    uv_poll_stop(p);
    return;
  }
  for (;;) {
    atl_farm_reply_t r;
    ssize_t n = recv(w->fd, &r, sizeof(r), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      break;
    if (n <= 0) {
      /* The worker closed its end: it is exiting, and its exit callback
       * will give its units back. Stop polling a dead socket. */
      uv_poll_stop(p);
      w->exiting = 1;
      break;
    }
    if ((size_t)n == sizeof(r))
      on_reply(w, &r);
    /* A done callback may have closed the farm, and this socket with it. */
    if (w->fd < 0 || w->poll_closing)
      return;
  }
  schedule(w->farm);
}

/* ---- workers ---- */

static void farm_timer_closed(uv_handle_t *h) {
  atl_farm_t *f = h->data;
  if (--f->open_handles > 0)
    return;
  void (*cb)(void *) = f->closed_cb;
  void *arg = f->closed_arg;
  /* Jobs the callers still hold outlive the farm: they keep only their
   * memory, which atl_farm_job_free() releases. */
  for (atl_farm_job_t *j = f->all; j != NULL; j = j->all_next)
    j->farm = NULL;
  free(f->worker_path);
  free(f->workers);
  free(f);
  if (cb != NULL)
    cb(arg);
}

/* At close, once no worker has a process or a socket handle left, the
 * timers go, and the last one's close frees the farm. */
static void farm_maybe_closed(atl_farm_t *f) {
  if (!f->closing || f->open_handles > 0)
    return;
  for (int i = 0; i < f->nworkers; i++)
    if (f->workers[i].proc_open || f->workers[i].poll_open)
      return;
  uv_timer_stop(&f->stop_timer);
  f->open_handles = f->nworkers + 1;
  for (int i = 0; i < f->nworkers; i++) {
    f->workers[i].restart.data = f;
    uv_close((uv_handle_t *)&f->workers[i].restart, farm_timer_closed);
  }
  f->stop_timer.data = f;
  uv_close((uv_handle_t *)&f->stop_timer, farm_timer_closed);
}

static void restart_timer_fired(uv_timer_t *t) {
  worker_start(t->data);
}

static void worker_handle_closed(uv_handle_t *h) {
  farm_worker_t *w = h->data;
  atl_farm_t *f = w->farm;
  if (h == (uv_handle_t *)&w->poll)
    w->poll_open = w->poll_closing = 0;
  else
    w->proc_open = 0;
  if (w->poll_open || w->proc_open)
    return;
  if (f->closing) {
    farm_maybe_closed(f);
    return;
  }
  /* Restart once both of the old process's handles are closed, since the
   * new process reuses them; after a burst of deaths, wait a little, so
   * that a worker that cannot start does not spin the loop. */
  uint64_t oldest = w->deaths_ms[w->deaths_at];
  if (oldest != 0 && uv_now(f->loop) - oldest < RESTART_WINDOW_MS)
    uv_timer_start(&w->restart, restart_timer_fired, RESTART_DELAY_MS, 0);
  else
    worker_start(w);
}

static void note_death(farm_worker_t *w) {
  w->deaths_ms[w->deaths_at] = uv_now(w->farm->loop);
  w->deaths_at = (w->deaths_at + 1) % RESTART_BURST;
}

/* Stops watching a worker's socket and closes it; the poll stops before
 * its fd closes, as libuv requires. */
static void worker_close_socket(farm_worker_t *w) {
  if (w->poll_open && !w->poll_closing) {
    uv_poll_stop(&w->poll);
    w->poll_closing = 1;
    uv_close((uv_handle_t *)&w->poll, worker_handle_closed);
  }
  if (w->fd >= 0) {
    close(w->fd);
    w->fd = -1;
  }
}

static void on_exit_cb(uv_process_t *proc, int64_t status, int term_signal) {
  farm_worker_t *w = proc->data;
  atl_farm_t *f = w->farm;
  if (!f->closing) {
    if (term_signal != 0)
      flog(f, 1, "render worker %d was killed by signal %d; restarting it",
           w->pid, term_signal);
    else
      flog(f, 1, "render worker %d exited with status %d; restarting it",
           w->pid, (int)status);
    f->restarts++;
  }
  note_death(w);
  w->pid = 0;
  w->ready = 0;
  w->exiting = 1;
  /* Its units go back to their tiles: the committed plane never saw
   * them, so giving them again counts nothing twice. */
  for (int u = 0; u < QUEUE_DEPTH; u++) {
    if (!w->units[u].used)
      continue;
    farm_unit_t unit = w->units[u];
    unit_free(w, u);
    atl_farm_job_t *j = unit.job;
    if (j == NULL)
      continue;
    j->busy[unit.tile] = 0;
    j->in_flight--;
    if (j->finished)
      continue;
    j->worker_deaths++;
    if (++j->deaths[unit.tile] >= MAX_TILE_DEATHS && !j->cancelled) {
      char msg[200];
      snprintf(msg, sizeof(msg),
               "the render worker died %d times rendering this scene (last: "
               "%s %d)",
               MAX_TILE_DEATHS, term_signal ? "signal" : "exit status",
               term_signal ? term_signal : (int)status);
      job_finish(j, -EIO, msg);
      continue;
    }
    job_check_idle(j);
  }
  worker_close_socket(w);
  uv_close((uv_handle_t *)&w->proc, worker_handle_closed);
  schedule(f);
}

/* The worker's whole environment: it renders from what the socket brings
 * and needs nothing of the daemon's, whose environment holds the
 * providers' API keys. Only the locale, the time zone and the sanitizers'
 * options (for the test builds) pass, by name; PATH is fixed; and the
 * packet kernel this process chose (kernel.h) is passed on, so that the
 * workers run the one the farm's owner reports. Returns a
 * NULL-terminated array of malloc'd strings (worker_env_free frees it). */
static const char *const worker_env_pass[] = {
    "LANG",          "LC_ALL",       "TZ", "ASAN_OPTIONS",
    "UBSAN_OPTIONS", "LSAN_OPTIONS", NULL};

static char **worker_env(void) {
  size_t n = sizeof(worker_env_pass) / sizeof(worker_env_pass[0]) + 2;
  char **env = calloc(n, sizeof(*env));
  if (env == NULL)
    return NULL;
  size_t k = 0;
  env[k++] = strdup("PATH=/usr/local/bin:/usr/bin:/bin");
  for (size_t i = 0; worker_env_pass[i] != NULL; i++) {
    const char *v = getenv(worker_env_pass[i]);
    if (v == NULL)
      continue;
    size_t len = strlen(worker_env_pass[i]) + strlen(v) + 2;
    if ((env[k] = malloc(len)) != NULL)
      snprintf(env[k++], len, "%s=%s", worker_env_pass[i], v);
  }
  if (atl_render_kernel() == ATL_RENDER_KERNEL_DEFAULT)
    env[k++] = strdup("ATELIER_RENDER_KERNEL=default");
  return env;
}

static void worker_env_free(char **env) {
  for (size_t i = 0; env != NULL && env[i] != NULL; i++)
    free(env[i]);
  free(env);
}

static void worker_start(farm_worker_t *w) {
  atl_farm_t *f = w->farm;
  if (f->closing)
    return;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    flog(f, 0, "render worker socket: %s; retrying in 1 s", strerror(errno));
    uv_timer_start(&w->restart, restart_timer_fired, RESTART_DELAY_MS, 0);
    return;
  }
  fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
  char *args[] = {f->worker_path, NULL};
  uv_stdio_container_t stdio[4] = {
      {.flags = UV_IGNORE},
      {.flags = UV_IGNORE},
      {.flags = UV_INHERIT_FD, .data.fd = 2},
      {.flags = UV_INHERIT_FD, .data.fd = sv[1]},
  };
  /* An environment that could not be made would be the daemon's: better
   * no worker than one holding the keys. */
  char **env = worker_env();
  if (env == NULL) {
    close(sv[0]);
    close(sv[1]);
    flog(f, 0, "render worker environment: out of memory; retrying in 1 s");
    uv_timer_start(&w->restart, restart_timer_fired, RESTART_DELAY_MS, 0);
    return;
  }
  uv_process_options_t po = {.exit_cb = on_exit_cb,
                             .file = f->worker_path,
                             .args = args,
                             .env = env,
                             .stdio = stdio,
                             .stdio_count = 4};
  w->proc.data = w;
  /* The worker closes what it was not given, but only once its main()
   * runs (much later under ASan); until then it would hold whatever the
   * process left inheritable, such as libcurl's socket pairs. */
  atl_cloexec_all();
  int rc = uv_spawn(f->loop, &w->proc, &po);
  worker_env_free(env);
  close(sv[1]);
  w->proc_open = 1;
  if (rc != 0) {
    close(sv[0]);
    flog(f, 0, "cannot start the render worker %s: %s; retrying",
         f->worker_path, uv_strerror(rc));
    /* uv_spawn() initialised the handle even on failure: close it, and
     * its close callback schedules the retry. */
    note_death(w);
    uv_close((uv_handle_t *)&w->proc, worker_handle_closed);
    return;
  }
  w->pid = w->proc.pid;
  /* Lowering another process's priority is allowed to its owner; a
   * failure leaves the worker at ours, which only costs responsiveness. */
  if (f->nice > 0 && setpriority(PRIO_PROCESS, (id_t)w->pid, f->nice) != 0)
    flog(f, 1, "cannot lower the render worker's priority: %s",
         strerror(errno));
  w->fd = sv[0];
  w->incarnation++;
  w->ready = 0;
  w->exiting = 0;
  w->n_units = 0;
  memset(w->units, 0, sizeof(w->units));
  if (uv_poll_init(f->loop, &w->poll, w->fd) == 0) {
    w->poll_open = 1;
    w->poll.data = w;
    uv_poll_start(&w->poll, UV_READABLE, on_readable);
  } else {
    worker_kill(w, "its socket cannot be watched");
  }
}

int atl_farm_workers(const atl_farm_t *f) {
  return f->nworkers;
}

int atl_farm_worker_pids(const atl_farm_t *f, int *pids, int max) {
  int n = 0;
  for (int i = 0; i < f->nworkers && n < max; i++)
    pids[n++] = f->workers[i].pid;
  return n;
}

uint64_t atl_farm_restarts(const atl_farm_t *f) {
  return f->restarts;
}

int atl_farm_active_jobs(const atl_farm_t *f) {
  return f->njobs;
}

static void stop_timer_fired(uv_timer_t *t) {
  atl_farm_t *f = t->data;
  for (int i = 0; i < f->nworkers; i++)
    if (f->workers[i].pid > 0)
      uv_process_kill(&f->workers[i].proc, SIGKILL);
}

void atl_farm_close(atl_farm_t *f, void (*done)(void *arg), void *arg) {
  f->closing = 1;
  f->closed_cb = done;
  f->closed_arg = arg;
  while (f->jobs != NULL) {
    atl_farm_job_t *j = f->jobs;
    __atomic_store_n(&j->hdr->cancel, 1, __ATOMIC_RELAXED);
    job_finish(j, -ESHUTDOWN, "the render farm is shutting down");
  }
  /* Closing our end of a worker's socket is its signal to exit: its
   * recv() returns 0. The stop timer is for one that does not. */
  for (int i = 0; i < f->nworkers; i++) {
    farm_worker_t *w = &f->workers[i];
    uv_timer_stop(&w->restart);
    worker_close_socket(w);
  }
  f->stop_timer.data = f;
  uv_timer_start(&f->stop_timer, stop_timer_fired, STOP_GRACE_MS, 0);
  farm_maybe_closed(f);
}

int atl_farm_new(uv_loop_t *loop, const atl_farm_options_t *opt,
                 atl_farm_t **out, char **err) {
  *out = NULL;
  if (err != NULL)
    *err = NULL;
  int n = opt && opt->workers > 0 ? opt->workers
                                  : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1)
    n = 1;
  if (n > MAX_WORKERS) {
    if (err != NULL &&
        asprintf(err, "render workers: %d is more than %d", n, MAX_WORKERS) < 0)
      *err = NULL;
    return -EINVAL;
  }
  atl_farm_t *f = calloc(1, sizeof(*f));
  if (f == NULL)
    return -ENOMEM;
  f->loop = loop;
  f->worker_path = opt && opt->worker_path ? strdup(opt->worker_path)
                                           : atl_farm_worker_path();
  f->log = opt ? opt->log : NULL;
  f->log_user = opt ? opt->log_user : NULL;
  f->nworkers = n;
  f->nice = opt && opt->nice > 0 ? (opt->nice > 19 ? 19 : opt->nice) : 0;
  f->workers = calloc((size_t)n, sizeof(farm_worker_t));
  if (f->worker_path == NULL || f->workers == NULL) {
    free(f->worker_path);
    free(f->workers);
    free(f);
    return -ENOMEM;
  }
  if (access(f->worker_path, X_OK) != 0) {
    int e = errno;
    if (err != NULL &&
        asprintf(err,
                 "the render worker %s cannot be run (%s); set "
                 "render.worker or ATELIER_RENDER_WORKER to its path",
                 f->worker_path, strerror(e)) < 0)
      *err = NULL;
    free(f->worker_path);
    free(f->workers);
    free(f);
    return -e;
  }
  int swept = atl_farm_sweep_stale();
  if (swept > 0)
    flog(f, 2, "removed %d stale render segment(s) from /dev/shm", swept);
  uv_timer_init(loop, &f->stop_timer);
  for (int i = 0; i < n; i++) {
    farm_worker_t *w = &f->workers[i];
    w->farm = f;
    w->index = i;
    w->fd = -1;
    uv_timer_init(loop, &w->restart);
    w->restart.data = w;
  }
  for (int i = 0; i < n; i++)
    worker_start(&f->workers[i]);
  *out = f;
  return 0;
}
