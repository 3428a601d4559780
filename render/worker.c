/* atelier-render-worker: one process of the render farm.
 *
 * It is started by the farm (render/farm.c) with its end of a socket pair
 * as fd 3, and does one thing: it reads messages (farm_proto.h), renders
 * the units it is given into the job's shared segment, and answers each
 * unit with DONE, ABORTED or FAILED. It holds no state the farm cannot
 * rebuild: if it dies, the farm starts another and gives its unit again.
 *
 * It is single-threaded on purpose: the farm runs one worker per core, and
 * a process per core is what lets a crash, a runaway scene or a SIGKILL
 * cost one unit instead of the daemon.
 */
#include "atl-build.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "farm_proto.h"
#include "render.h"

/* Jobs mapped at once. The farm drops a job from every worker when it
 * ends, so more than a handful means jobs from many sessions at once; the
 * oldest is then unmapped and reloaded if it comes back. */
#define MAX_JOBS 8

/* Samples per call of the tracer: see run_unit(). */
#define CHUNK_SAMPLES 8192

typedef struct {
  uint32_t id;
  int fd;
  atl_farm_shm_t *hdr; /* the mapping, NULL until the first unit */
  size_t size;
  atl_render_scene_t *scene;
  char *load_error; /* why the scene did not load; sticky */
  uint64_t used;    /* for eviction */
} job_t;

static job_t jobs[MAX_JOBS];
static uint64_t use_clock;
static int sock = ATL_FARM_WORKER_FD;

static void job_release(job_t *j) {
  if (j->hdr != NULL)
    munmap(j->hdr, j->size);
  if (j->fd >= 0)
    close(j->fd);
  atl_render_scene_free(j->scene);
  free(j->load_error);
  memset(j, 0, sizeof(*j));
  j->fd = -1;
}

static job_t *job_find(uint32_t id) {
  for (int i = 0; i < MAX_JOBS; i++)
    if (jobs[i].fd >= 0 && jobs[i].id == id)
      return &jobs[i];
  return NULL;
}

static job_t *job_slot(void) {
  job_t *oldest = &jobs[0];
  for (int i = 0; i < MAX_JOBS; i++) {
    if (jobs[i].fd < 0)
      return &jobs[i];
    if (jobs[i].used < oldest->used)
      oldest = &jobs[i];
  }
  job_release(oldest);
  return oldest;
}

static void reply(uint32_t type, const atl_farm_msg_t *m, const char *text) {
  atl_farm_reply_t r;
  memset(&r, 0, sizeof(r));
  r.type = type;
  r.job = m ? m->job : 0;
  r.unit = m ? m->unit : 0;
  r.pid = (int32_t)getpid();
  if (text != NULL)
    snprintf(r.text, sizeof(r.text), "%s", text);
  /* The socket is SOCK_SEQPACKET: a reply goes whole or not at all. If
   * the farm is gone there is nobody to tell; the next recv ends us. */
  while (send(sock, &r, sizeof(r), MSG_NOSIGNAL) < 0 && errno == EINTR)
    ;
}

/* Whether the planes and the mask the header describes lie inside the
 * segment: a worker trusts the farm, but not to the point of writing
 * outside its mapping. */
static int layout_fits(const atl_farm_shm_t *h) {
  uint64_t npix = (uint64_t)h->width * (uint64_t)h->height;
  uint64_t rgb = npix * 3 * sizeof(float);
  if (h->width < 1 || h->height < 1 || h->width > 8192 || h->height > 8192)
    return 0;
  if (h->count_off < rgb || h->plane_size < h->count_off + npix * 4)
    return 0;
  if (h->guides && (h->albedo_off < h->count_off + npix * 4 ||
                    h->normal_off < h->albedo_off + rgb ||
                    h->plane_size < h->normal_off + rgb))
    return 0;
  for (int i = 0; i < 2; i++)
    if (h->plane_off[i] + h->plane_size > h->total_size)
      return 0;
  return h->active_off + npix <= h->total_size;
}

/* Maps the segment and loads the scene on a job's first unit, so that a
 * worker never given a unit of a job never pays for it. */
static const char *job_ready(job_t *j) {
  if (j->load_error != NULL)
    return j->load_error;
  if (j->scene != NULL)
    return NULL;
  struct stat st;
  if (fstat(j->fd, &st) != 0 || (size_t)st.st_size < sizeof(atl_farm_shm_t))
    return j->load_error = strdup("the job's shared segment is unreadable");
  void *map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                   j->fd, 0);
  if (map == MAP_FAILED)
    return j->load_error = strdup("the job's shared segment cannot be mapped");
  j->hdr = map;
  j->size = (size_t)st.st_size;
  const atl_farm_shm_t *h = j->hdr;
  if (h->magic != ATL_FARM_MAGIC || h->version != ATL_FARM_PROTO_VERSION ||
      h->total_size != j->size || h->scene_off + h->scene_len > j->size ||
      !layout_fits(h))
    return j->load_error = strdup("the job's shared segment is malformed");
  char *err = NULL;
  int rc = atl_render_scene_load((const char *)j->hdr + h->scene_off,
                                 (size_t)h->scene_len, &j->scene, &err);
  if (rc != 0) {
    j->load_error = err ? err : strdup("the scene cannot be loaded");
    return j->load_error;
  }
  free(err);
  return NULL;
}

/* The pixels of row y in [x0, x1) that take samples. */
static size_t active_in_row(const uint8_t *active, int w, int y, int x0,
                            int x1) {
  if (active == NULL)
    return (size_t)(x1 - x0);
  size_t n = 0;
  for (int x = x0; x < x1; x++)
    n += active[(size_t)y * (size_t)w + (size_t)x] != 0;
  return n;
}

static void run_unit(const atl_farm_msg_t *m) {
  job_t *j = job_find(m->job);
  if (j == NULL) {
    reply(ATL_FARM_MSG_FAILED, m, "unit for a job the worker does not have");
    return;
  }
  j->used = ++use_clock;
  const char *err = job_ready(j);
  if (err != NULL) {
    reply(ATL_FARM_MSG_FAILED, m, err);
    return;
  }
  atl_farm_shm_t *h = j->hdr;
  int w = h->width, ht = h->height;
  if (m->x0 < 0 || m->y0 < 0 || m->x1 > w || m->y1 > ht || m->x0 >= m->x1 ||
      m->y0 >= m->y1 || m->src > 1 || m->dst > 1 || m->src == m->dst) {
    reply(ATL_FARM_MSG_FAILED, m, "unit outside the frame");
    return;
  }
  atl_render_film_t film[2] = {atl_farm_plane_film(h, 0),
                               atl_farm_plane_film(h, 1)};
  atl_render_params_t p = {.width = w,
                           .height = ht,
                           .max_depth = h->max_depth,
                           .rr_depth = h->rr_depth,
                           .seed = h->seed,
                           .no_light_sampling = h->no_light_sampling,
                           .filter = h->filter,
                           .filter_width = h->filter_width};
  /* The tile's whole film goes to the other plane first, the pixels the
   * mask turned off too: that plane holds an older state of the tile. */
  const atl_render_film_t *src = &film[m->src], *dst = &film[m->dst];
  size_t tw = (size_t)(m->x1 - m->x0);
  for (int y = m->y0; y < m->y1; y++) {
    size_t off = (size_t)y * (size_t)w + (size_t)m->x0;
    size_t rgb = tw * 3 * sizeof(float);
    memcpy(dst->rgb_sum + off * 3, src->rgb_sum + off * 3, rgb);
    memcpy(dst->count + off, src->count + off, tw * sizeof(uint32_t));
    if (h->guides) {
      memcpy(dst->albedo_sum + off * 3, src->albedo_sum + off * 3, rgb);
      memcpy(dst->normal_sum + off * 3, src->normal_sum + off * 3, rgb);
    }
  }
  /* A few rows at a time, so that a cancel is seen within a few
   * milliseconds' work, but at least CHUNK_SAMPLES samples a call: the
   * tracer follows several paths at once, and its lanes idle at the end
   * of every call. Only the pixels the mask leaves on take samples, so a
   * call takes as many rows as it needs to reach that many. */
  for (int y = m->y0; y < m->y1;) {
    if (__atomic_load_n(&h->cancel, __ATOMIC_RELAXED)) {
      reply(ATL_FARM_MSG_ABORTED, m, NULL);
      return;
    }
    int y1 = y;
    for (size_t work = 0; y1 < m->y1 && work < CHUNK_SAMPLES; y1++)
      work += active_in_row(dst->active, w, y1, m->x0, m->x1) * m->n;
    atl_render_tile_film(j->scene, &p, m->x0, y, m->x1, y1, m->first, (int)m->n,
                         dst);
    y = y1;
  }
  /* The farm reads the plane after this message: order the stores. */
  __atomic_thread_fence(__ATOMIC_RELEASE);
  reply(ATL_FARM_MSG_DONE, m, NULL);
}

/* Receives one message and the fd that may ride with it. */
static ssize_t receive(atl_farm_msg_t *m, int *fd) {
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(sizeof(int))];
  } ctl;
  struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
  struct msghdr mh = {.msg_iov = &iov,
                      .msg_iovlen = 1,
                      .msg_control = ctl.buf,
                      .msg_controllen = sizeof(ctl.buf)};
  *fd = -1;
  ssize_t n;
  do
    n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL;
       c = CMSG_NXTHDR(&mh, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      memcpy(fd, CMSG_DATA(c), sizeof(int));
  return n;
}

int main(int argc, char **argv) {
  if (argc > 1 &&
      (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "--version") == 0)) {
    printf("atelier-render-worker %s: a render farm worker process, started "
           "by atelierd and atelier-render with its socket as fd 3; not "
           "meant to be run by hand.\n",
           PACKAGE_VERSION);
    return 0;
  }
  /* If the farm's process dies, so do we: an orphan worker would keep a
   * core busy for nobody. The check after it covers a parent that died
   * before prctl() ran. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1)
    return 1;
  /* Only stdin, stdout, stderr and the farm's socket are ours. Any other
   * descriptor came by accident, left without close-on-exec by a library
   * of the daemon's (Debian's curl leaves its sockets so): a provider's
   * TCP connection or a socket pair must not live on in a worker. */
  if (close_range(4, ~0u, 0) != 0) {
    for (int fd = 4; fd < 65536; fd++)
      close(fd);
  }
  int type = 0;
  socklen_t tl = sizeof(type);
  if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 ||
      type != SOCK_SEQPACKET) {
    fprintf(stderr, "atelier-render-worker: fd 3 is not the farm's socket; "
                    "this program is started by the render farm\n");
    return 2;
  }
  for (int i = 0; i < MAX_JOBS; i++)
    jobs[i].fd = -1;
  reply(ATL_FARM_MSG_HELLO, NULL, NULL);
  for (;;) {
    atl_farm_msg_t m;
    int fd = -1;
    ssize_t n = receive(&m, &fd);
    if (n <= 0)
      return 0; /* the farm closed the socket: it is done with us */
    if ((size_t)n != sizeof(m)) {
      if (fd >= 0)
        close(fd);
      continue;
    }
    switch (m.type) {
    case ATL_FARM_MSG_JOB: {
      if (fd < 0)
        break;
      job_t *old = job_find(m.job);
      if (old != NULL)
        job_release(old);
      job_t *j = job_slot();
      j->id = m.job;
      j->fd = fd;
      j->used = ++use_clock;
      fd = -1;
      break;
    }
    case ATL_FARM_MSG_UNIT:
      run_unit(&m);
      break;
    case ATL_FARM_MSG_DROP: {
      job_t *j = job_find(m.job);
      if (j != NULL)
        job_release(j);
      break;
    }
    default:
      break;
    }
    if (fd >= 0)
      close(fd);
  }
}
