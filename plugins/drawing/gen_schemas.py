#!/usr/bin/env python3
"""Generates plugins/drawing/schemas.inc: the drawing plugin's tool
descriptions and JSON Schemas as C string literals.

The descriptor's strings must be constant data (the daemon reads them
before it runs any plugin code), and the palette and the brushes appear in
several of them, so they are written here once. The generated file is
committed; `make check` fails when it is stale:

    python3 plugins/drawing/gen_schemas.py > plugins/drawing/schemas.inc
"""
import importlib.util
import json
import os
import sys


def _scene_generator():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "scene", "gen_schemas.py")
    spec = importlib.util.spec_from_file_location("scene_gen_schemas", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


c_string = _scene_generator().c_string

# These must match canvas.c (test_drawing checks the brushes' names).
PALETTE = ["dark #1a1a2e", "rose #e94560", "violet #7b68ee", "teal #4ecdc4",
           "gold #ffd93d", "coral #ff6b6b", "green #4ade80", "blue #3b82f6",
           "orange #f97316", "purple #a855f7", "white #ffffff"]
BRUSHES = [
    ("oil_round", "the default oil brush: soft bristle texture"),
    ("oil_flat", "broad, even strokes for blocking in"),
    ("oil_filbert", "rounded strokes for petals and leaves"),
    ("watercolor", "wide translucent washes"),
    ("dry_brush", "broken, scratchy texture"),
    ("palette_knife", "thick opaque slabs"),
    ("ink", "crisp calligraphic lines"),
    ("pencil", "thin sketch and outline lines"),
    ("charcoal", "smudgy, grainy shading"),
    ("marker", "flat, even, slightly transparent"),
    ("airbrush", "soft, very transparent gradients"),
    ("splatter", "scattered droplets around the stroke"),
]

CANVAS = ("The canvas is 800x600 pixels, origin top-left, y down, white; "
          "keep coordinates within x 0-800 and y 0-600 (points outside are "
          "reported and drawn clipped). ")
MODES = ("In plotter mode every stroke is the plotter's pen (#1a1a2e, width "
         "2.5) and color, stroke_width, opacity and brush are ignored. In "
         "paint mode they are honoured: color is a palette name (" +
         ", ".join(PALETTE) + ") or any #rrggbb; stroke_width 0.5-30 "
         "(default 8, or the brush's); opacity 0-1 (default 0.85); brush "
         "one of " + "; ".join("%s (%s)" % b for b in BRUSHES) + ". ")

POINT = {"type": "object",
         "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
         "required": ["x", "y"]}

# The members of a path are typed but not ranged: a path whose colour,
# width or geometry is wrong is refused on its own with a message naming
# it, and the call's other paths are still drawn.
PATH = {
    "type": "object",
    "properties": {
        "type": {"type": "string",
                 "description": "line (2 points), polyline (2 or more), "
                 "quadratic (3: start, control, end), cubic (4: start, two "
                 "controls, end) or svg (d instead of points)."},
        "points": {"type": "array", "items": POINT, "maxItems": 100000,
                   "description": "The points {x, y} of a line, polyline, "
                   "quadratic or cubic."},
        "d": {"type": "string", "maxLength": 1000000,
              "description": "SVG path data for type svg: M L H V C S Q T A "
              "Z, absolute or relative, several subpaths allowed, e.g. "
              "\"M 300 300 C 350 250 450 350 500 300\"."},
        "color": {"type": "string",
                  "description": "Paint mode: a palette name or #rrggbb."},
        "stroke_width": {"type": "number",
                         "description": "Paint mode: 0.5 to 30."},
        "opacity": {"type": "number",
                    "description": "Paint mode: 0 to 1."},
        "brush": {"type": "string",
                  "description": "Paint mode: one of " +
                  ", ".join(b[0] for b in BRUSHES) + "."},
    },
    "required": ["type"],
}

DONE = {"type": "boolean", "default": False,
        "description": "true when the piece is finished: it is saved to "
        "the gallery (even if nothing is drawn in this call)."}

OUT = [
    ("DRAW_PATHS_DESC",
     "Draws paths on the canvas and returns how many were drawn, the ids "
     "given to them, each refused path with the reason, and the canvas as "
     "an image. " + CANVAS + MODES +
     "Send paths as a JSON array of objects, never as a string."),
    ("DRAW_PATHS", {
        "type": "object",
        "properties": {
            "paths": {"type": "array", "items": PATH, "maxItems": 10000,
                      "description": "The paths to draw, in order (later "
                      "ones on top)."},
            "done": DONE,
        },
        "required": ["paths"],
        "additionalProperties": False,
    }),
    ("VIEW_CANVAS_DESC", None),  # built in C: it names the current mode
    ("VIEW_CANVAS", {"type": "object", "properties": {},
                     "additionalProperties": False}),
    ("GENERATE_SVG_DESC",
     "Runs Python 3 code that makes paths, in a sandbox (no network, no "
     "files but a private /tmp, 30 s, 512 MB), and draws them. The code "
     "has math, random and json, canvas_width (800), canvas_height (600), "
     "existing_strokes (the canvas's strokes: dicts with id, author, d and "
     "style) and helpers that return path dicts: line(x1, y1, x2, y2), "
     "polyline((x, y), ...), quadratic(x1, y1, cx, cy, x2, y2), "
     "cubic(x1, y1, c1x, c1y, c2x, c2y, x2, y2), svg_path(d); each takes "
     "optional color=, stroke_width=, opacity= and brush= (paint mode). "
     "It must end by calling output_paths(list_of_path_dicts) or "
     "output_svg_paths(list_of_d_strings). Every path is checked as "
     "draw_paths checks it; the answer lists refused ones, and Python "
     "errors come back with their line number. " + CANVAS),
    ("GENERATE_SVG", {
        "type": "object",
        "properties": {
            "code": {"type": "string", "minLength": 1, "maxLength": 200000,
                     "description": "Python 3 code ending in output_paths("
                     "...) or output_svg_paths(...)."},
            "done": DONE,
        },
        "required": ["code"],
        "additionalProperties": False,
    }),
    ("MARK_PIECE_DONE_DESC",
     "Marks the current piece finished and saves it to the gallery (its "
     "number, title, mode and strokes); the canvas stays as it is. The "
     "finishing ritual is sign_canvas, then name_piece, then this."),
    ("MARK_PIECE_DONE", {"type": "object", "properties": {},
                         "additionalProperties": False}),
    ("NEW_CANVAS_DESC",
     "Saves the current piece to the gallery if it has strokes, and starts "
     "the next piece on a blank canvas, in the mode given (default: the "
     "current one)."),
    ("NEW_CANVAS", {
        "type": "object",
        "properties": {
            "mode": {"enum": ["plotter", "paint"],
                     "description": "plotter: one monochrome pen; paint: "
                     "colours, widths, opacity and brushes."},
        },
        "additionalProperties": False,
    }),
    ("SIGN_CANVAS_DESC",
     "Signs the canvas with Atelier's signature, a few svg strokes in a "
     "corner. Paint mode takes color."),
    ("SIGN_CANVAS", {
        "type": "object",
        "properties": {
            "position": {"enum": ["bottom_right", "bottom_left",
                                  "bottom_center"],
                         "default": "bottom_right"},
            "size": {"enum": ["small", "medium", "large"],
                     "default": "medium"},
            "color": {"type": "string",
                      "description": "Paint mode: a palette name or "
                      "#rrggbb."},
        },
        "additionalProperties": False,
    }),
    ("NAME_PIECE_DESC",
     "Gives the current piece its title (1-100 characters after trimming)."),
    ("NAME_PIECE", {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 1000,
                      "description": "The title, e.g. \"Harbour at Dusk\"."},
        },
        "required": ["title"],
        "additionalProperties": False,
    }),
    ("GENERATE_IMAGE_DESC",
     "Generates a reference image with Google's image model (Gemini "
     "2.5 Flash Image) from a prompt, keeps it with the session under a "
     "name, and shows it to you: something to look at while drawing, not "
     "part of the canvas. Be concrete about subject, composition and style "
     "(\"a lighthouse on a cliff at dusk, loose ink drawing\"). Needs a "
     "Gemini API key on the server; takes up to a minute."),
    ("GENERATE_IMAGE", {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "minLength": 1, "maxLength": 4000,
                       "description": "What the image shows."},
            "name": {"type": "string", "minLength": 1, "maxLength": 64,
                     "description": "A name to find it by (letters, digits, "
                     "- and _; others become _), e.g. \"harbour-study\". "
                     "Default: reference-N. An image of the same name is "
                     "replaced."},
        },
        "required": ["prompt"],
        "additionalProperties": False,
    }),
    ("VIEW_REFERENCE_IMAGE_DESC",
     "Shows a reference image made by generate_image: the one named, or the "
     "newest, with the list of all names."),
    ("VIEW_REFERENCE_IMAGE", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 64,
                     "description": "The image's name; default the newest."},
        },
        "additionalProperties": False,
    }),
    ("ADD_HUMAN_STROKE_DESC",
     "A stroke the person draws on the page (pointer, pen or touch), as a "
     "polyline of canvas points; a single point is a dot. Paint mode takes "
     "color, stroke_width and opacity. Not offered to models."),
    ("ADD_HUMAN_STROKE", {
        "type": "object",
        "properties": {
            "points": {"type": "array", "items": POINT, "minItems": 1,
                       "maxItems": 5000},
            "color": {"type": "string"},
            "stroke_width": {"type": "number"},
            "opacity": {"type": "number"},
        },
        "required": ["points"],
        "additionalProperties": False,
    }),
]


def main():
    w = sys.stdout.write
    w("/* Generated by plugins/drawing/gen_schemas.py: do not edit; edit the "
      "script\n * and run it (make check fails when this file is stale). */\n")
    for name, val in OUT:
        if val is None:
            continue
        text = val if isinstance(val, str) else json.dumps(
            val, separators=(",", ":"), ensure_ascii=True)
        w("\n#define DRW_%s \\\n%s\n" % (name, c_string(text)))


if __name__ == "__main__":
    main()
