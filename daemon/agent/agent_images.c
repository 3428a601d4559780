/* A tool's images on their way back to the model: the history keeps
 * their ids; the bytes are read from the store for the next model call
 * only. */
#include "atl-build.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "agent.h"

/* Only the newest tool message's images go with a model call: the model
 * has seen the older ones, and re-sending every render on every turn (as
 * scene-llm does) costs more tokens each turn. */
/* The newest message but the summaries after it (a summary made before
 * the model reads the results comes after them). */
static json_object *newest(json_object *history) {
  size_t n = json_object_array_length(history);
  json_object *role;
  while (n > 0) {
    json_object *m = json_object_array_get_idx(history, n - 1);
    if (m == NULL || !json_object_object_get_ex(m, "role", &role) ||
        strcmp(json_object_get_string(role), "summary") != 0)
      return m;
    n--;
  }
  return NULL;
}

json_object *atl_agent_newest_images(json_object *history) {
  json_object *last = newest(history);
  json_object *role, *parts, *out = json_object_new_array();
  if (last == NULL || !json_object_object_get_ex(last, "role", &role) ||
      strcmp(json_object_get_string(role), "tool") != 0 ||
      !json_object_object_get_ex(last, "parts", &parts))
    return out;
  for (size_t i = 0; i < json_object_array_length(parts); i++) {
    json_object *imgs;
    if (json_object_object_get_ex(json_object_array_get_idx(parts, i), "images",
                                  &imgs))
      for (size_t k = 0; k < json_object_array_length(imgs); k++) {
        /* Copies: the bytes are added on a worker thread, which must not
         * touch the history's own objects. */
        json_object *im = json_object_array_get_idx(imgs, k), *v;
        json_object *ref = json_object_new_object();
        if (json_object_object_get_ex(im, "id", &v))
          json_object_object_add(
              ref, "id", json_object_new_string(json_object_get_string(v)));
        if (json_object_object_get_ex(im, "mime", &v))
          json_object_object_add(
              ref, "mime", json_object_new_string(json_object_get_string(v)));
        json_object_array_add(out, ref);
      }
  }
  return out;
}

typedef struct {
  atl_daemon_t *d;
  json_object *refs; /* [{id, mime}]: "data" is added to each */
  void (*done)(void *user, json_object *refs);
  void *user;
} img_load_t;

static void images_loaded(void *arg) {
  img_load_t *l = arg;
  l->d->work_in_flight--;
  l->done(l->user, l->refs);
  json_object_put(l->refs);
  free(l);
}

static void images_work(void *arg) {
  img_load_t *l = arg;
  atl_store_reader_t *r = atl_daemon_reader_take(l->d);
  for (size_t i = 0; r != NULL && i < json_object_array_length(l->refs); i++) {
    json_object *ref = json_object_array_get_idx(l->refs, i), *rid;
    char *mime = NULL;
    void *data = NULL;
    size_t len = 0;
    if (!json_object_object_get_ex(ref, "id", &rid) ||
        atl_store_image_get(r, json_object_get_string(rid), &mime, &data,
                            &len) != 0)
      continue;
    char *b64 = malloc(4 * ((len + 2) / 3) + 1);
    if (b64 != NULL) {
      EVP_EncodeBlock((unsigned char *)b64, data, (int)len);
      json_object_object_add(ref, "data", json_object_new_string(b64));
    }
    free(b64);
    free(mime);
    free(data);
  }
  if (r != NULL)
    atl_daemon_reader_give(l->d, r);
  atl_daemon_post(l->d, images_loaded, l);
}

int atl_agent_load_images(atl_daemon_t *d, json_object *refs,
                          void (*done)(void *user, json_object *refs),
                          void *user) {
  img_load_t *l = calloc(1, sizeof(*l));
  if (l == NULL)
    return ATL_ENOMEM;
  *l = (img_load_t){
      .d = d, .refs = json_object_get(refs), .done = done, .user = user};
  d->work_in_flight++;
  int rc = atl_pool_submit(d, images_work, l);
  if (rc != 0) {
    d->work_in_flight--;
    json_object_put(l->refs);
    free(l);
  }
  return rc;
}

/* Attaches the loaded bytes to the image references of the tool message
 * at index at, for one request, and takes them off again after: the
 * history in memory keeps ids only. */
void atl_agent_attach_images(json_object *history, json_object *refs,
                             int attach, size_t at) {
  json_object *last = at < json_object_array_length(history)
                          ? json_object_array_get_idx(history, at)
                          : NULL;
  json_object *parts;
  if (last == NULL || !json_object_object_get_ex(last, "parts", &parts))
    return;
  for (size_t i = 0; i < json_object_array_length(parts); i++) {
    json_object *imgs;
    if (!json_object_object_get_ex(json_object_array_get_idx(parts, i),
                                   "images", &imgs))
      continue;
    for (size_t k = 0; k < json_object_array_length(imgs); k++) {
      json_object *im = json_object_array_get_idx(imgs, k), *id, *data;
      if (!attach) {
        json_object_object_del(im, "data");
        continue;
      }
      json_object_object_get_ex(im, "id", &id);
      for (size_t j = 0; id && j < json_object_array_length(refs); j++) {
        json_object *ref = json_object_array_get_idx(refs, j), *rid;
        if (json_object_object_get_ex(ref, "id", &rid) &&
            strcmp(json_object_get_string(rid), json_object_get_string(id)) ==
                0 &&
            json_object_object_get_ex(ref, "data", &data))
          json_object_object_add(im, "data", json_object_get(data));
      }
    }
  }
}
