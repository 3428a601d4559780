/* generate_image and view_reference_image: reference images from Gemini's
 * image model, kept with the session.
 *
 * The request goes through the daemon's HTTP client (host->http_request),
 * whose callback runs on the loop; the handler, on its worker thread,
 * waits for it with a timeout and the call's cancellation, so nothing
 * blocks the loop. The host adds the API key (atl_http_request_t.auth):
 * the plugin never holds it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "drawing_int.h"

#define IMAGE_MODEL "gemini-2.5-flash-image"
#define IMAGE_TIMEOUT_MS 60000
#define MAX_REFERENCES 200

static json_object *get(json_object *o, const char *key) {
  json_object *v = NULL;
  return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* Element i of o when o is an array that long, else NULL: the answer is
 * the network's, and json-c asserts on a wrong type. */
static json_object *idx(json_object *o, size_t i) {
  return json_object_is_type(o, json_type_array) &&
                 i < json_object_array_length(o)
             ? json_object_array_get_idx(o, i)
             : NULL;
}

/* ---- waiting for the HTTP answer ---- */

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs; /* the handler's and the callback's */
  int done;
  int status;
  long http_code;
  char *body;
  size_t len;
  char *error;
} wait_t;

static void wait_unref(wait_t *w) {
  pthread_mutex_lock(&w->mu);
  int last = --w->refs == 0;
  pthread_mutex_unlock(&w->mu);
  if (!last)
    return;
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  free(w->body);
  free(w->error);
  free(w);
}

static void on_done(const atl_http_response_t *resp, void *user) {
  wait_t *w = user;
  pthread_mutex_lock(&w->mu);
  w->status = resp->status;
  w->http_code = resp->http_code;
  if (resp->body) {
    w->body = malloc(resp->body_len + 1);
    if (w->body) {
      memcpy(w->body, resp->body, resp->body_len);
      w->body[resp->body_len] = '\0';
      w->len = resp->body_len;
    }
  }
  if (resp->error)
    w->error = strdup(resp->error);
  w->done = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  wait_unref(w);
}

/* ---- base64 ---- */

static int b64val(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+' || c == '-')
    return 62;
  if (c == '/' || c == '_')
    return 63;
  return -1;
}

/* Decodes base64 (standard or URL-safe, padding optional); NULL on a bad
 * character. */
static unsigned char *b64_decode(const char *s, size_t n, size_t *out_len) {
  unsigned char *out = malloc(n / 4 * 3 + 3);
  if (out == NULL)
    return NULL;
  size_t o = 0;
  unsigned acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '=' || c == '\n' || c == '\r')
      continue;
    int v = b64val(c);
    if (v < 0) {
      free(out);
      return NULL;
    }
    acc = acc << 6 | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (unsigned char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  *out_len = o;
  return out;
}

/* The image type by its first bytes, or NULL. */
static const char *sniff(const unsigned char *p, size_t n) {
  if (n >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0)
    return "image/png";
  if (n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff)
    return "image/jpeg";
  if (n >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0)
    return "image/webp";
  return NULL;
}

/* ---- names ---- */

/* The name as a file name: characters other than A-Z a-z 0-9 - _ become
 * '_', at most 64. */
static void sanitize(const char *in, char out[65]) {
  while (*in == ' ' || *in == '\t')
    in++;
  size_t n = 0;
  for (; *in && n < 64; in++) {
    unsigned char c = (unsigned char)*in;
    if ((c & 0xc0) == 0x80)
      continue; /* one '_' for a whole UTF-8 character */
    int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
             (c >= '0' && c <= '9') || c == '-' || c == '_';
    out[n++] = ok ? (char)c : '_';
  }
  out[n] = '\0';
}

static json_object *references(json_object *ns) {
  json_object *r = get(ns, "references");
  if (!json_object_is_type(r, json_type_array)) {
    r = json_object_new_array();
    json_object_object_add(ns, "references", r);
  }
  return r;
}

static char *names_of(json_object *refs) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  size_t n = json_object_array_length(refs);
  for (size_t i = 0; i < n && i < 20; i++)
    fprintf(f, "%s'%s'", i ? ", " : "",
            json_object_get_string(
                get(json_object_array_get_idx(refs, n - 1 - i), "name")));
  if (n > 20)
    fprintf(f, " and %zu more", n - 20);
  fclose(f);
  return buf;
}

/* ---- generate_image ---- */

/* What the model's answer says instead of an image. */
static void no_image(atl_call_t *call, json_object *resp, const char *notes) {
  json_object *pf = get(resp, "promptFeedback");
  const char *block = json_object_get_string(get(pf, "blockReason"));
  if (block) {
    call->host->call_error(call,
                           "The image model refused the prompt (blockReason "
                           "%s); rephrase it and try again.",
                           block);
    return;
  }
  json_object *cand = idx(get(resp, "candidates"), 0);
  const char *finish = json_object_get_string(get(cand, "finishReason"));
  call->host->call_error(
      call,
      "No image was generated (finishReason %s)%s%s%s. "
      "Try a more concrete, visual prompt.",
      finish ? finish : "none", notes && *notes ? "; the model said: \"" : "",
      notes && *notes ? notes : "", notes && *notes ? "\"" : "");
}

int drw_generate_image(atl_call_t *call) {
  const atl_host_t *h = call->host;
  if (!ATL_HOST_HAS(h, provider_endpoint))
    return h->call_error(call, "generate_image needs atelierd 1.3's plugin "
                               "API (provider_endpoint)");
  const char *prompt = json_object_get_string(get(call->args, "prompt"));
  while (*prompt == ' ' || *prompt == '\n' || *prompt == '\t')
    prompt++;
  if (*prompt == '\0')
    return h->call_error(call, "prompt is empty: describe the image, e.g. "
                               "\"a lighthouse on a cliff at dusk, ink "
                               "drawing\"");
  json_object *refs = references(call->ns);
  char name[65];
  json_object *name_arg = get(call->args, "name");
  if (name_arg) {
    sanitize(json_object_get_string(name_arg), name);
    if (name[0] == '\0' || strspn(name, "_") == strlen(name))
      return h->call_error(call,
                           "name '%s' has no letter or digit; use letters, "
                           "digits, '-' and '_', e.g. \"harbour-study\"",
                           json_object_get_string(name_arg));
  } else {
    snprintf(name, sizeof(name), "reference-%zu",
             json_object_array_length(refs) + 1);
  }
  char base[512];
  int have_key = h->provider_endpoint(h, "gemini", base, sizeof(base));
  if (have_key <= 0)
    return h->call_error(call,
                         "generate_image needs a Gemini API key, and atelierd "
                         "has none: set GEMINI_API_KEY in its environment, "
                         "or configure a [provider.NAME] with type = gemini "
                         "(doc/drawing.md). Draw without a reference "
                         "meanwhile.");

  json_object *body = json_object_new_object();
  json_object *contents = json_object_new_array();
  json_object *msg = json_object_new_object();
  json_object *parts = json_object_new_array();
  json_object *text = json_object_new_object();
  json_object_object_add(text, "text", json_object_new_string(prompt));
  json_object_array_add(parts, text);
  json_object_object_add(msg, "role", json_object_new_string("user"));
  json_object_object_add(msg, "parts", parts);
  json_object_array_add(contents, msg);
  json_object_object_add(body, "contents", contents);
  json_object *gc = json_object_new_object();
  json_object *mods = json_object_new_array();
  json_object_array_add(mods, json_object_new_string("TEXT"));
  json_object_array_add(mods, json_object_new_string("IMAGE"));
  json_object_object_add(gc, "responseModalities", mods);
  json_object_object_add(body, "generationConfig", gc);
  char *payload = strdup(json_object_to_json_string_ext(
      body, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(body);
  char *url = NULL;
  if (payload == NULL || asprintf(&url, "%s/v1beta/models/%s:generateContent",
                                  base, IMAGE_MODEL) < 0) {
    free(payload);
    return ATL_ENOMEM;
  }

  wait_t *w = calloc(1, sizeof(*w));
  if (w == NULL) {
    free(payload);
    free(url);
    return ATL_ENOMEM;
  }
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  w->refs = 2;
  static const char *const headers[] = {"Content-Type: application/json", NULL};
  atl_http_request_t req = {.struct_size = sizeof(req),
                            .method = "POST",
                            .url = url,
                            .headers = headers,
                            .body = payload,
                            .body_len = strlen(payload),
                            .timeout_ms = IMAGE_TIMEOUT_MS,
                            .auth = "gemini"};
  int rc = h->http_request(h, &req, on_done, w);
  free(payload);
  free(url);
  if (rc != 0) {
    w->refs = 1;
    wait_unref(w);
    return h->call_error(call, "generate_image could not send its request: %s",
                         h->strerror(rc));
  }
  /* Wait for the answer, the deadline or a cancellation. */
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += IMAGE_TIMEOUT_MS / 1000 + 5;
  pthread_mutex_lock(&w->mu);
  while (!w->done) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    if (t.tv_sec > deadline.tv_sec || h->call_cancelled(call))
      break;
    t.tv_nsec += 100 * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
      t.tv_sec++;
      t.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&w->cv, &w->mu, &t);
  }
  int done = w->done;
  pthread_mutex_unlock(&w->mu);
  if (!done) {
    wait_unref(w);
    return h->call_error(call,
                         "generate_image timed out after %d s (or was "
                         "cancelled); nothing was saved.",
                         IMAGE_TIMEOUT_MS / 1000);
  }
  if (w->status < 0) {
    h->call_error(call, "generate_image could not reach the image model: %s",
                  w->error ? w->error : h->strerror(w->status));
    wait_unref(w);
    return 0;
  }
  json_object *resp = w->body ? json_tokener_parse(w->body) : NULL;
  if (w->http_code != 200) {
    const char *m = json_object_get_string(get(get(resp, "error"), "message"));
    h->call_error(call, "The image model answered HTTP %ld%s%s%s", w->http_code,
                  m ? ": " : "", m ? m : "",
                  w->http_code == 429 ? " (rate limited: wait and try again)"
                                      : "");
    json_object_put(resp);
    wait_unref(w);
    return 0;
  }
  wait_unref(w);

  /* The first image part, and the text parts as the model's notes. */
  json_object *cand = idx(get(resp, "candidates"), 0);
  json_object *cparts = get(get(cand, "content"), "parts");
  if (!json_object_is_type(cparts, json_type_array))
    cparts = NULL;
  const char *data = NULL, *claimed = NULL;
  size_t data_len = 0;
  char notes[1000] = "";
  for (size_t i = 0; cparts && i < json_object_array_length(cparts); i++) {
    json_object *p = idx(cparts, i);
    json_object *inl = get(p, "inlineData");
    if (inl == NULL)
      inl = get(p, "inline_data");
    if (inl && data == NULL &&
        json_object_is_type(get(inl, "data"), json_type_string)) {
      data = json_object_get_string(get(inl, "data"));
      data_len = (size_t)json_object_get_string_len(get(inl, "data"));
      claimed = json_object_get_string(get(inl, "mimeType"));
    }
    const char *t = json_object_get_string(get(p, "text"));
    if (t && !json_object_get_boolean(get(p, "thought")) &&
        strlen(notes) + strlen(t) + 2 < sizeof(notes)) {
      if (notes[0])
        strcat(notes, " ");
      strcat(notes, t);
    }
  }
  if (data == NULL) {
    no_image(call, resp, notes);
    json_object_put(resp);
    return 0;
  }
  size_t len = 0;
  unsigned char *bytes = b64_decode(data, data_len, &len);
  const char *mime = bytes ? sniff(bytes, len) : NULL;
  if (mime == NULL) {
    h->call_error(call,
                  "The image model's answer held no readable image (%s "
                  "claimed); try again.",
                  claimed ? claimed : "no type");
    free(bytes);
    json_object_put(resp);
    return 0;
  }
  json_object_put(resp);
  char id[ATL_IMAGE_ID_LEN + 1];
  char file[80];
  snprintf(file, sizeof(file), "%s.%s", name,
           strcmp(mime, "image/png") == 0    ? "png"
           : strcmp(mime, "image/jpeg") == 0 ? "jpg"
                                             : "webp");
  if (h->image_put(h, bytes, len, mime, id) != 0 ||
      h->call_image(call, mime, bytes, len, file) != 0) {
    free(bytes);
    return ATL_ENOMEM;
  }
  free(bytes);

  /* Kept under its name; an earlier image of that name is replaced. */
  int replaced = 0;
  for (size_t i = 0; i < json_object_array_length(refs); i++)
    if (strcmp(json_object_get_string(
                   get(json_object_array_get_idx(refs, i), "name"))
                   ?: "",
               name) == 0) {
      json_object_array_del_idx(refs, i, 1);
      replaced = 1;
      break;
    }
  if (json_object_array_length(refs) >= MAX_REFERENCES)
    json_object_array_del_idx(refs, 0, 1);
  json_object *entry = json_object_new_object();
  json_object_object_add(entry, "name", json_object_new_string(name));
  json_object_object_add(entry, "image", json_object_new_string(id));
  json_object_object_add(entry, "mime", json_object_new_string(mime));
  json_object_object_add(entry, "prompt", json_object_new_string(prompt));
  json_object_object_add(entry, "created_ms",
                         json_object_new_int64(drw_now_ms()));
  json_object_array_add(refs, entry);

  json_object *result = json_object_new_object();
  json_object_object_add(result, "name", json_object_new_string(name));
  json_object_object_add(result, "image_id", json_object_new_string(id));
  json_object_object_add(result, "mime", json_object_new_string(mime));
  if (notes[0])
    json_object_object_add(result, "model_notes",
                           json_object_new_string(notes));
  char m[300];
  snprintf(m, sizeof(m),
           "Generated the reference image '%s'%s (attached). "
           "view_reference_image shows it again; it is a reference to draw "
           "from, not part of the canvas.",
           name, replaced ? ", replacing the earlier one of that name" : "");
  json_object_object_add(result, "message", json_object_new_string(m));
  return h->call_result(call, result);
}

/* ---- view_reference_image ---- */

int drw_view_reference_image(atl_call_t *call) {
  const atl_host_t *h = call->host;
  json_object *refs = get(call->ns, "references");
  size_t n = json_object_is_type(refs, json_type_array)
                 ? json_object_array_length(refs)
                 : 0;
  if (n == 0)
    return h->call_error(call, "There are no reference images yet: "
                               "generate_image makes one.");
  if (!ATL_HOST_HAS(h, image_get))
    return h->call_error(call, "view_reference_image needs atelierd 1.3's "
                               "plugin API (image_get)");
  json_object *want = get(call->args, "name"), *entry = NULL;
  if (want) {
    char name[65];
    sanitize(json_object_get_string(want), name);
    for (size_t i = 0; i < n && !entry; i++) {
      json_object *e = json_object_array_get_idx(refs, i);
      const char *en = json_object_get_string(get(e, "name"));
      if (en == NULL)
        continue;
      if (strcmp(en, json_object_get_string(want)) == 0 ||
          strcmp(en, name) == 0)
        entry = e;
    }
    if (entry == NULL) {
      char *names = names_of(refs);
      h->call_error(call, "No reference image named '%s'. Available: %s",
                    json_object_get_string(want), names ? names : "");
      free(names);
      return 0;
    }
  } else {
    entry = json_object_array_get_idx(refs, n - 1);
  }
  void *data = NULL;
  size_t len = 0;
  char mime[64];
  const char *id = json_object_get_string(get(entry, "image"));
  int rc = h->image_get(h, id, &data, &len, mime, sizeof(mime));
  if (rc != 0)
    return h->call_error(call,
                         "The reference image '%s' could not be read "
                         "from the store: %s",
                         json_object_get_string(get(entry, "name")),
                         h->strerror(rc));
  const char *ename = json_object_get_string(get(entry, "name"));
  char file[80];
  snprintf(file, sizeof(file), "%s.%s", ename,
           strcmp(mime, "image/jpeg") == 0   ? "jpg"
           : strcmp(mime, "image/webp") == 0 ? "webp"
                                             : "png");
  rc = h->call_image(call, mime, data, len, file);
  free(data);
  if (rc != 0)
    return rc;
  json_object *result = json_object_new_object();
  json_object_object_add(result, "name", json_object_new_string(ename));
  json_object_object_add(result, "prompt",
                         json_object_get(get(entry, "prompt")));
  json_object *list = json_object_new_array();
  for (size_t i = n; i-- > 0;)
    json_object_array_add(
        list, json_object_get(get(json_object_array_get_idx(refs, i), "name")));
  json_object_object_add(result, "available", list);
  return h->call_result(call, result);
}
