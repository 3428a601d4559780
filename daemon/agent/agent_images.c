/* A tool's images on their way back to the model: the history keeps
 * their ids; the bytes are read from the store for the next model call
 * only. */
#include "atl-build.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "agent.h"
#include "image_fit.h"

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

/* What each provider takes of an image (doc/providers.md):
 *   Anthropic refuses more than 5 MB of base64 or 8000 px a side, and
 *     scales anything over 1568 px or about 1.19 Mpx down itself;
 *   OpenAI scales to fit 2048 px, then to 768 px on the short side, and
 *     refuses more than 20 MB;
 *   Gemini scales to fit 3072 px; inline data counts against its 20 MB
 *     request, so an image is held to 7 MB.
 * Sending more than a provider keeps costs upload and latency for
 * nothing, so images are fitted to what it keeps. */
static atl_image_limits_t limits_of(const char *type) {
  if (type != NULL && strcmp(type, "anthropic") == 0)
    return (atl_image_limits_t){
        .max_side = 1568, .max_pixels = 1190000, .max_base64 = 5242880};
  if (type != NULL && strcmp(type, "gemini") == 0)
    return (atl_image_limits_t){.max_side = 3072, .max_base64 = 7000000};
  return (atl_image_limits_t){
      .max_side = 2048, .max_short_side = 768, .max_base64 = 20000000};
}

/* One image read from the store, fitted to the provider and encoded into
 * ref: "data" and "send_mime", and "note" when the model should be told
 * it was changed (or could not be sent). */
static void fit_one(json_object *ref, const char *type, const void *data,
                    size_t len) {
  atl_image_limits_t lim = limits_of(type);
  atl_image_fit_t f;
  char note[300] = "";
  int rc = atl_image_fit(data, len, &lim, &f);
  if (rc != 0) {
    snprintf(note, sizeof(note),
             "[An image of this result could not be sent to the model: %s.]",
             rc == ATL_E2BIG ? "it could not be made small enough for the "
                               "provider's limits"
                             : "it is not a PNG or JPEG image");
  } else {
    char *b64 = malloc(atl_base64_len(f.len) + 1);
    if (b64 != NULL) {
      EVP_EncodeBlock((unsigned char *)b64, f.data, (int)f.len);
      json_object_object_add(ref, "data", json_object_new_string(b64));
      json_object_object_add(ref, "send_mime", json_object_new_string(f.mime));
    }
    free(b64);
    atl_image_fit_note(&f, note, sizeof(note));
  }
  atl_image_fit_free(&f);
  if (note[0] != '\0')
    json_object_object_add(ref, "note", json_object_new_string(note));
}

static void images_work(void *arg) {
  img_load_t *l = arg;
  atl_store_reader_t *r = atl_daemon_reader_take(l->d);
  const char *type = l->d->agent ? l->d->agent->cfg.type : NULL;
  for (size_t i = 0; r != NULL && i < json_object_array_length(l->refs); i++) {
    json_object *ref = json_object_array_get_idx(l->refs, i), *rid;
    char *mime = NULL;
    void *data = NULL;
    size_t len = 0;
    if (!json_object_object_get_ex(ref, "id", &rid) ||
        atl_store_image_get(r, json_object_get_string(rid), &mime, &data,
                            &len) != 0)
      continue;
    fit_one(ref, type, data, len);
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
    json_object *part = json_object_array_get_idx(parts, i), *env = NULL;
    json_object_object_get_ex(part, "result", &env);
    if (!attach) {
      if (json_object_is_type(env, json_type_object))
        json_object_object_del(env, "image_note");
    }
    for (size_t k = 0; k < json_object_array_length(imgs); k++) {
      json_object *im = json_object_array_get_idx(imgs, k), *id, *data, *v;
      if (!attach) {
        /* Back as the history keeps it: the id and the stored type. */
        json_object_object_del(im, "data");
        if (json_object_object_get_ex(im, "stored_mime", &v)) {
          json_object_object_add(im, "mime", json_object_get(v));
          json_object_object_del(im, "stored_mime");
        }
        continue;
      }
      json_object_object_get_ex(im, "id", &id);
      for (size_t j = 0; id && j < json_object_array_length(refs); j++) {
        json_object *ref = json_object_array_get_idx(refs, j), *rid;
        if (!json_object_object_get_ex(ref, "id", &rid) ||
            strcmp(json_object_get_string(rid), json_object_get_string(id)) !=
                0)
          continue;
        if (json_object_object_get_ex(ref, "data", &data)) {
          json_object_object_add(im, "data", json_object_get(data));
          if (json_object_object_get_ex(ref, "send_mime", &v) &&
              json_object_object_get_ex(im, "mime", &data)) {
            json_object_object_add(im, "stored_mime", json_object_get(data));
            json_object_object_add(im, "mime", json_object_get(v));
          }
        }
        /* The model is told, in the result it reads, what became of the
         * image on its way. */
        if (json_object_object_get_ex(ref, "note", &v) &&
            json_object_is_type(env, json_type_object))
          json_object_object_add(env, "image_note", json_object_get(v));
      }
    }
  }
}
