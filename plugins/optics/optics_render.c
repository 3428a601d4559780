/* render_optics: the bench and its rays drawn (opx_draw.h), with the
 * rays a SQL WHERE clause selects highlighted, so the agent sees exactly
 * what it queried; plus named objects and labelled edges. The model gets
 * the PNG as an image and, in words, what the picture shows. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opx_db.h"
#include "opx_draw.h"
#include "opx_tools.h"

/* The largest SVG render_optics keeps in the image store. */
#define OPX_SVG_MAX_BYTES 8000000

/* "'A', 'B'" labels of object oi's edges, for an error (malloc'd). */
static char *labels_of(const opx_geom_t *g, int oi) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  const opx_obj_t *o = &g->objs[oi];
  for (int k = 0; k < o->nedges; k++)
    fprintf(f, "%s'%s'", k ? ", " : "",
            g->edges[o->first_edge + k].short_label);
  if (o->nedges == 0)
    fputs("(it has no edges)", f);
  fclose(f);
  return buf;
}

typedef struct {
  unsigned char *rays, *objs, *edges;
  long nrays;
  json_object *obj_names, *edge_names;
} marks_t;

static void marks_free(marks_t *m) {
  free(m->rays);
  free(m->objs);
  free(m->edges);
  json_object_put(m->obj_names);
  json_object_put(m->edge_names);
}

/* Fills m from the call's highlight arguments. 0, or 1 after reporting
 * what was wrong. */
static int marks_make(atl_call_t *call, opx_entry_t *e, marks_t *m) {
  const atl_host_t *h = call->host;
  const opx_run_t *run = e->run;
  const opx_geom_t *g = run->geom;
  json_object *v;
  m->obj_names = json_object_new_array();
  m->edge_names = json_object_new_array();
  if (json_object_object_get_ex(call->args, "highlight", &v)) {
    m->rays = calloc((size_t)run->sim->nsegs + 1, 1);
    opx_db_t *db = opx_run_db(e->run);
    char *err = NULL;
    if (m->rays == NULL)
      return h->call_error(call, "out of memory"), 1;
    if (db == NULL)
      return h->call_error(call, "The ray database could not be built: %s",
                           run->db_error ? run->db_error : "unknown"),
             1;
    if (opx_db_select(db, json_object_get_string(v), m->rays, run->sim->nsegs,
                      &m->nrays, &err) != 0) {
      h->call_error(call, "highlight: %s",
                    err ? err
                        : "not a valid WHERE "
                          "clause");
      free(err);
      return 1;
    }
  }
  json_object *objs_ns = json_object_object_get(call->ns, "objs");
  if (json_object_object_get_ex(call->args, "highlight_objects", &v)) {
    m->objs = calloc((size_t)g->nobjs + 1, 1);
    if (m->objs == NULL)
      return h->call_error(call, "out of memory"), 1;
    for (size_t i = 0; i < json_object_array_length(v); i++) {
      const char *name =
          json_object_get_string(json_object_array_get_idx(v, i));
      int oi = opx_geom_find(g, name);
      if (oi < 0)
        return opx_no_object(call, objs_ns, name), 1;
      m->objs[oi] = 1;
      json_object_array_add(m->obj_names, json_object_new_string(name));
    }
  }
  if (json_object_object_get_ex(call->args, "highlight_edges", &v)) {
    m->edges = calloc((size_t)g->nedges + 1, 1);
    if (m->edges == NULL)
      return h->call_error(call, "out of memory"), 1;
    for (size_t i = 0; i < json_object_array_length(v); i++) {
      json_object *it = json_object_array_get_idx(v, i);
      const char *name =
          json_object_get_string(json_object_object_get(it, "object"));
      const char *label =
          json_object_get_string(json_object_object_get(it, "edge"));
      int oi = opx_geom_find(g, name);
      if (oi < 0)
        return opx_no_object(call, objs_ns, name), 1;
      int ei = opx_geom_edge_find(g, oi, label);
      if (ei < 0) {
        char *labels = labels_of(g, oi);
        h->call_error(call,
                      "No edge matching '%s' on '%s'. Available labels: %s "
                      "(or an index; see describe_edges)",
                      label, name, labels ? labels : "?");
        free(labels);
        return 1;
      }
      m->edges[ei] = 1;
      json_object *d = json_object_new_object();
      json_object_object_add(d, "object", json_object_new_string(name));
      json_object_object_add(d, "edge",
                             json_object_new_string(g->edges[ei].short_label));
      json_object_object_add(d, "long_label",
                             json_object_new_string(g->edges[ei].long_label));
      json_object_array_add(m->edge_names, d);
    }
  }
  return 0;
}

/* What the picture shows, in words (malloc'd). */
static char *describe(const opx_run_t *run, const marks_t *m,
                      const double view[4], long drawn, const char *where) {
  const opx_geom_t *g = run->geom;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  int count[OPX_OTHER + 1] = {0};
  for (int i = 0; i < g->nobjs; i++)
    count[g->objs[i].family]++;
  fprintf(f,
          "The bench, x %.4g to %.4g, y %.4g to %.4g (y grows downward, "
          "so smaller y is higher up): %d object%s",
          view[0], view[0] + view[2], view[1], view[1] + view[3], g->nobjs,
          g->nobjs == 1 ? "" : "s");
  const char *sep = " (";
  for (int k = 0; k <= OPX_OTHER; k++)
    if (count[k] > 0) {
      fprintf(f, "%s%d %s", sep, count[k], opx_family_name((opx_family_t)k));
      sep = ", ";
    }
  fprintf(f, "%s and %ld ray segment%s drawn", count[0] || g->nobjs ? ")" : "",
          drawn, drawn == 1 ? "" : "s");
  fputs(".", f);
  if (m->rays != NULL) {
    long kinds[ATL_OP_PASS + 1] = {0};
    for (long i = 0; i < run->sim->nsegs; i++)
      if (m->rays[i])
        kinds[run->sim->segs[i].kind]++;
    fprintf(f, " Highlighted: %ld of %ld segments where %s", m->nrays,
            run->sim->nsegs, where);
    sep = " (";
    for (int k = 0; k <= ATL_OP_PASS; k++)
      if (kinds[k] > 0) {
        fprintf(f, "%s%ld %s", sep, kinds[k], opx_kind_name((atl_op_kind)k));
        sep = ", ";
      }
    fputs(m->nrays > 0 ? "), drawn thick on top; the others are faint." : ".",
          f);
  }
  size_t no = json_object_array_length(m->obj_names);
  for (size_t i = 0; i < no; i++)
    fprintf(f, "%s'%s'", i ? ", " : " Highlighted objects: ",
            json_object_get_string(json_object_array_get_idx(m->obj_names, i)));
  if (no > 0)
    fputs(".", f);
  size_t ne = json_object_array_length(m->edge_names);
  for (size_t i = 0; i < ne; i++) {
    json_object *d = json_object_array_get_idx(m->edge_names, i);
    fprintf(f, "%s'%s' %s (%s)", i ? ", " : " Highlighted edges (lime): ",
            json_object_get_string(json_object_object_get(d, "object")),
            json_object_get_string(json_object_object_get(d, "edge")),
            json_object_get_string(json_object_object_get(d, "long_label")));
  }
  if (ne > 0)
    fputs(".", f);
  fclose(f);
  return buf;
}

int opx_tool_render(atl_call_t *call) {
  const atl_host_t *h = call->host;
  opx_entry_t *e = opx_acquire(call, 0);
  if (e == NULL)
    return 0;
  const opx_run_t *run = e->run;
  marks_t m = {0};
  if (marks_make(call, e, &m) != 0) {
    marks_free(&m);
    opx_release(call->plugin_state, e);
    return 0;
  }
  json_object *v;
  opx_draw_opts_t o = {
      .width = json_object_get_int(json_object_object_get(call->args, "width")),
      .height =
          json_object_get_int(json_object_object_get(call->args, "height")),
      .rays = m.rays,
      .objs = m.objs,
      .edges = m.edges,
      /* Every segment, as Ray Optics Simulation draws in its rays mode:
       * its gap flag marks where image detection must not join two
       * segments, not segments to hide (ray_tracing_shapely hid them). */
      .draw_gaps = 1};
  if (json_object_object_get_ex(call->args, "view", &v)) {
    static const char *const keys[] = {"x", "y", "width", "height"};
    for (int k = 0; k < 4; k++)
      o.view[k] = json_object_get_double(json_object_object_get(v, keys[k]));
  }
  char *svg = NULL;
  unsigned char *png = NULL;
  size_t svg_len = 0, png_len = 0;
  int rc = opx_draw(run, &o, &svg, &svg_len, &png, &png_len);
  char svg_id[ATL_IMAGE_ID_LEN + 1] = "", png_id[ATL_IMAGE_ID_LEN + 1];
  /* An SVG holds every segment drawn: a million make some 40 MB, which
   * the session's store would keep for good. Past the cap it is not kept,
   * and the result says how to get a smaller one. */
  int svg_kept = svg_len <= OPX_SVG_MAX_BYTES;
  if (rc == 0 &&
      ((svg_kept &&
        h->image_put(h, svg, svg_len, "image/svg+xml", svg_id) != 0) ||
       h->image_put(h, png, png_len, "image/png", png_id) != 0 ||
       h->call_image(call, "image/png", png, png_len, "optics.png") != 0))
    rc = -EIO;
  free(svg);
  free(png);
  if (rc != 0) {
    marks_free(&m);
    opx_release(call->plugin_state, e);
    return h->call_error(call, "The picture could not be drawn: %s",
                         strerror(-rc));
  }
  double view[4];
  opx_draw_view(run, &o, view);
  long drawn = run->sim->nsegs;
  const char *where = json_object_object_get_ex(call->args, "highlight", &v)
                          ? json_object_get_string(v)
                          : NULL;
  char *text = describe(run, &m, view, drawn, where);
  json_object *r = json_object_new_object();
  json_object_object_add(r, "description",
                         json_object_new_string(text ? text : ""));
  free(text);
  json_object *hs = json_object_new_object();
  json_object_object_add(hs, "highlighted_rays",
                         json_object_new_int64(m.rays ? m.nrays : 0));
  json_object_object_add(hs, "total_rays",
                         json_object_new_int64(run->sim->nsegs));
  if (where != NULL)
    json_object_object_add(hs, "where", json_object_new_string(where));
  json_object_object_add(hs, "objects", json_object_get(m.obj_names));
  json_object_object_add(hs, "edges", json_object_get(m.edge_names));
  json_object_object_add(r, "highlight_summary", hs);
  json_object_object_add(r, "svg_image",
                         svg_kept ? json_object_new_string(svg_id) : NULL);
  if (!svg_kept) {
    char note[200];
    snprintf(note, sizeof(note),
             "the SVG was %.1f MB, more than %d MB, and was not kept: "
             "narrow the view, or simulate fewer rays",
             svg_len / 1e6, OPX_SVG_MAX_BYTES / 1000000);
    json_object_object_add(r, "svg_note", json_object_new_string(note));
  }
  json_object_object_add(r, "png_image", json_object_new_string(png_id));
  json_object_object_add(r, "width", json_object_new_int(o.width));
  json_object_object_add(r, "height", json_object_new_int(o.height));
  json_object_object_add(r, "view", opx_json_view(view));
  marks_free(&m);
  opx_release(call->plugin_state, e);
  return h->call_result(call, r);
}
