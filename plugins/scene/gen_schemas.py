#!/usr/bin/env python3
"""Generates plugins/scene/schemas.inc: the scene plugin's JSON Schemas as C
string literals, and the order of every object type's properties.

The descriptor's tool schemas must be constant data (the daemon reads them
before it runs any plugin code), and they share large parts (a material,
a vector, every shape type in create_shape and in import_scene). Writing
them here once, as Python data, keeps them readable and consistent; the
generated file is committed, and `make check` fails when it is stale.

    python3 plugins/scene/gen_schemas.py > plugins/scene/schemas.inc
"""
import json
import sys

COORD_MAX = 1e6  # world units; also keeps every number finite

ID = {
    "type": "string",
    "pattern": "^[A-Za-z0-9_.-]{1,64}$",
    "description": "Unique name: 1 to 64 of A-Z a-z 0-9 _ . - "
    "(e.g. \"red_ball\").",
}


# Vectors are written once in $defs and referred to, with a description of
# their own, from every property: the schemas are sent to the model on every
# turn, so their size is paid for in tokens.
VEC_DEFS = {
    "xyz": {"type": "array", "minItems": 3, "maxItems": 3,
            "items": {"type": "number", "minimum": -COORD_MAX,
                      "maximum": COORD_MAX}},
    "rgb": {"type": "array", "minItems": 3, "maxItems": 3,
            "items": {"type": "number", "minimum": 0, "maximum": 1}},
    "radiance": {"type": "array", "minItems": 3, "maxItems": 3,
                 "items": {"type": "number", "minimum": 0,
                           "maximum": COORD_MAX}},
    "size": {"type": "array", "minItems": 3, "maxItems": 3,
             "items": {"type": "number", "exclusiveMinimum": 0,
                       "maximum": COORD_MAX}},
    "angles": {"type": "array", "minItems": 3, "maxItems": 3,
               "items": {"type": "number", "minimum": -3600,
                         "maximum": 3600}},
}


def ref(name, desc, default=None):
    s = {"$ref": "#/$defs/" + name, "description": desc}
    if default is not None:
        s["default"] = default
    return s


def vec3(desc):
    return ref("xyz", desc + " [x, y, z], world units.")


def point(desc):
    return ref("xyz", desc + " [x, y, z] in world units; +Y is up.")


def direction(desc):
    return ref("xyz", desc + " [x, y, z]; any length but zero.")


def color(desc, default=None):
    return ref("rgb", desc + " Linear RGB, each 0 to 1.", default)


def radiance(desc):
    return ref("radiance", desc + " Linear RGB radiance, each >= 0, "
               "unbounded (a lamp: about [8, 8, 8]).")


def number(desc, lo=None, hi=None, excl_lo=False, excl_hi=False,
           default=None):
    s = {"type": "number", "description": desc}
    if lo is not None:
        s["exclusiveMinimum" if excl_lo else "minimum"] = lo
    if hi is not None:
        s["exclusiveMaximum" if excl_hi else "maximum"] = hi
    if default is not None:
        s["default"] = default
    return s


def positive(desc, default=None):
    return number(desc, 0, COORD_MAX, excl_lo=True, default=default)


def boolean(desc, default):
    return {"type": "boolean", "description": desc, "default": default}


def obj(desc, props, required):
    return {"type": "object", "description": desc, "properties": props,
            "required": required, "additionalProperties": False}


# ---- materials ------------------------------------------------------------

MATERIALS = [
    ("lambertian", "Matte, diffuse surface.", {
        "albedo": color("Surface colour.", [0.5, 0.5, 0.5]),
        "checker": obj("Optional 3D checkerboard that replaces albedo: cubes "
                       "of `scale` world units alternating color_a and "
                       "color_b.", {
                           "color_a": color("First colour."),
                           "color_b": color("Second colour."),
                           "scale": positive("Edge of one cube, world units.",
                                             1),
                       }, ["color_a", "color_b"]),
    }, []),
    ("metal", "Mirror-like metal.", {
        "albedo": color("Tint of the reflection.", [0.8, 0.8, 0.8]),
        "fuzz": number("Roughness: 0 is a perfect mirror, 1 very rough.",
                       0, 1, default=0),
    }, []),
    ("dielectric", "Clear refracting material: glass, water, diamond.", {
        "refractive_index": number("Index of refraction, >= 1: air 1.0, "
                                   "water 1.33, glass 1.5, diamond 2.4.",
                                   1, 10, default=1.5),
        "tint": color("Colour the light picks up inside (white: none).",
                      [1, 1, 1]),
    }, []),
    ("emissive", "A surface that glows. It lights the scene only through "
     "the light it sends into the camera and other surfaces; for a lamp, "
     "prefer create_light.", {
         "emission": radiance("Emitted radiance."),
     }, ["emission"]),
    ("plastic", "Diffuse colour under a clear glossy coat.", {
        "albedo": color("Diffuse colour under the coat.", [0.5, 0.5, 0.5]),
        "roughness": number("Roughness of the coat: 0 glossy, 1 satin.",
                            0, 1, default=0.1),
    }, []),
]

MATERIAL_DEFAULT = {"type": "lambertian", "albedo": [0.5, 0.5, 0.5]}


def material_branch(name, desc, props, required):
    p = {"type": {"const": name, "description": desc}}
    p.update(props)
    return {"type": "object", "properties": p,
            "required": ["type"] + required, "additionalProperties": False}


MATERIAL = {
    "description": "Material, inline. Default: lambertian with albedo "
    "[0.5, 0.5, 0.5]. Types: " + "; ".join(
        "%s (%s)" % (m[0], m[1].rstrip(".")) for m in MATERIALS) +
    ". Example: {\"type\": \"metal\", \"albedo\": [0.9, 0.9, 0.9], "
    "\"fuzz\": 0.05}.",
    "oneOf": [material_branch(*m) for m in MATERIALS],
}

# ---- shapes -----------------------------------------------------------------

MAT_REF = {"$ref": "#/$defs/material", "default": MATERIAL_DEFAULT}

SHAPES = [
    ("sphere", "A sphere.", {
        "center": point("Centre."),
        "radius": positive("Radius, world units."),
    }, ["center", "radius"]),
    ("box", "A box, optionally rotated about its centre.", {
        "center": point("Centre."),
        "size": ref("size", "Full edge lengths [x, y, z] before "
                    "rotation, world units, each > 0."),
        "rotation": ref("angles", "Rotation in degrees about X, then Y, "
                        "then Z ([0, 45, 0] turns it 45 degrees about the "
                        "vertical).", [0, 0, 0]),
    }, ["center", "size"]),
    ("quad", "A parallelogram: corner, corner+u, corner+u+v, corner+v. "
     "It faces u x v (right-hand rule).", {
         "corner": point("One corner."),
         "u": vec3("First edge from the corner."),
         "v": vec3("Second edge from the corner, not parallel to u."),
     }, ["corner", "u", "v"]),
    ("disc", "A flat disc.", {
        "center": point("Centre."),
        "normal": direction("Direction it faces."),
        "radius": positive("Radius, world units."),
    }, ["center", "normal", "radius"]),
    ("cylinder", "A cylinder between two end centres.", {
        "base_center": point("Centre of the bottom end."),
        "top_center": point("Centre of the top end (not the base's)."),
        "radius": positive("Radius, world units."),
        "capped": boolean("Close the ends with discs (false: an open "
                          "tube).", True),
    }, ["base_center", "top_center", "radius"]),
    ("cone", "A cone, or a frustum when top_radius > 0.", {
        "base_center": point("Centre of the base."),
        "top_center": point("Centre of the tip or top (not the base's)."),
        "base_radius": positive("Radius of the base, world units."),
        "top_radius": number("Radius at the top, world units, smaller than "
                             "base_radius: 0 is a pointed cone.", 0,
                             COORD_MAX, default=0),
        "capped": boolean("Close the base (and the top of a frustum) with "
                          "discs.", True),
    }, ["base_center", "top_center", "base_radius"]),
    ("plane", "An infinite plane (a floor, a wall).", {
        "point": point("Any point on the plane."),
        "normal": direction("Direction it faces (the floor: [0, 1, 0])."),
    }, ["point", "normal"]),
    ("triangle", "A triangle; it faces (v1 - v0) x (v2 - v0).", {
        "v0": point("First vertex."),
        "v1": point("Second vertex."),
        "v2": point("Third vertex (not on the line through the others)."),
    }, ["v0", "v1", "v2"]),
    ("torus", "A torus (a ring, a doughnut) or, with sweep_degrees < 360, "
     "an arc of one: a bent tube for a smile, a handle, a rainbow. The "
     "arc starts at start_degrees, measured about the axis from the +X "
     "direction (from +Z when the axis is along X), and runs "
     "counter-clockwise seen from the tip of the axis.", {
         "center": point("Centre of the ring."),
         "axis": direction("Axis through the hole; the default lies the "
                           "ring flat.") | {"default": [0, 1, 0]},
         "major_radius": positive("Radius from the centre to the middle of "
                                  "the tube, world units."),
         "minor_radius": positive("Radius of the tube, world units, "
                                  "smaller than major_radius."),
         "sweep_degrees": number("How much of the ring exists, degrees: 360 "
                                 "a whole ring, 180 a half (a smile).", 0,
                                 360, excl_lo=True, default=360),
         "start_degrees": number("Where the arc starts, degrees.", -360, 360,
                                 default=0),
     }, ["center", "major_radius", "minor_radius"]),
]

# ---- lights -----------------------------------------------------------------

EMISSION = radiance("Emitted radiance (the light's power).")

LIGHTS = [
    ("point", "A point light: light from one spot in every direction.", {
        "center": point("Position."),
        "emission": EMISSION,
    }, ["center", "emission"]),
    ("spot", "A spot light: a point light limited to a cone.", {
        "center": point("Position."),
        "direction": direction("Where it points.") | {"default": [0, -1, 0]},
        "cone_angle": number("Half-angle of the cone from its axis, "
                             "degrees.", 0, 90, excl_lo=True, default=30),
        "edge_width": number("Width of the soft edge inside the cone, "
                             "degrees: 0 is a hard edge; at most "
                             "cone_angle.", 0, 90, default=5),
        "emission": EMISSION,
    }, ["center", "emission"]),
    ("area_quad", "A rectangular panel of light: corner, corner+u, "
     "corner+u+v, corner+v; it shines toward u x v.", {
         "corner": point("One corner."),
         "u": vec3("First edge."),
         "v": vec3("Second edge, not parallel to u."),
         "emission": EMISSION,
     }, ["corner", "u", "v", "emission"]),
    ("area_disc", "A round panel of light.", {
        "center": point("Centre."),
        "normal": direction("Direction it shines."),
        "radius": positive("Radius, world units."),
        "emission": EMISSION,
    }, ["center", "normal", "radius", "emission"]),
    ("area_sphere", "A glowing ball of light.", {
        "center": point("Centre."),
        "radius": positive("Radius, world units."),
        "emission": EMISSION,
    }, ["center", "radius", "emission"]),
    ("directional", "Sunlight: parallel rays from far away.", {
        "direction": direction("Direction the light travels (the noon "
                               "sun: [0, -1, 0])."),
        "angular_diameter": number("Apparent size of the source, degrees "
                                   "(the sun: 0.53); larger gives softer "
                                   "shadows.", 0, 30, default=0.53),
        "emission": EMISSION,
    }, ["direction", "emission"]),
]


def with_material(props):
    out = dict(props)
    out["material"] = MAT_REF
    return out


def kind_defs(kinds, material):
    defs = {}
    for name, desc, props, required in kinds:
        p = with_material(props) if material else props
        defs[name] = {"type": "object", "description": desc,
                      "properties": p, "required": required,
                      "additionalProperties": False}
    return defs


def object_oneof(kinds, what):
    return [{"type": "object", "properties": {
        "id": {"$ref": "#/$defs/id"},
        "type": {"const": name, "description": desc},
        "properties": {"$ref": "#/$defs/%s_%s" % (what, name)},
    }, "required": ["id", "type", "properties"],
        "additionalProperties": False} for name, desc, _, _ in kinds]


def defs_for(shapes=False, lights=False):
    d = {"id": ID} | VEC_DEFS
    if shapes:
        d["material"] = MATERIAL
        for k, v in kind_defs(SHAPES, True).items():
            d["shape_" + k] = v
    if lights:
        for k, v in kind_defs(LIGHTS, False).items():
            d["light_" + k] = v
    return d


def shape_object(description):
    return {"type": "object", "description": description,
            "$defs": defs_for(shapes=True),
            "oneOf": object_oneof(SHAPES, "shape")}


def light_object(description):
    return {"type": "object", "description": description,
            "$defs": defs_for(lights=True),
            "oneOf": object_oneof(LIGHTS, "light")}


CAMERA_PROPS = {
    "center": point("Eye position.") | {"default": [0, 0, 5]},
    "look_at": point("Point looked at (not the eye's).") |
    {"default": [0, 0, 0]},
    "up": direction("Which way is up in the picture; not parallel to the "
                    "view direction.") | {"default": [0, 1, 0]},
    "vfov": number("Vertical field of view, degrees (wide: 70, tele: 20).",
                   0, 180, excl_lo=True, excl_hi=True, default=45),
    "aperture": number("Lens diameter, world units: 0 keeps everything "
                       "sharp; larger blurs what is off the focus "
                       "distance.", 0, 100, default=0),
    "focus_distance": positive("Distance in focus, world units. Default: "
                               "the distance from center to look_at."),
}
CAMERA = {"type": "object", "description": "The camera. Every call sets "
          "all of it; what is not given takes its default.",
          "properties": CAMERA_PROPS, "required": ["center", "look_at"],
          "additionalProperties": False}

ENVIRONMENTS = [
    ("none", "Black: only the lights light the scene.", {}, []),
    ("uniform", "The same radiance from every direction.", {
        "emission": radiance("Radiance of the sky."),
    }, ["emission"]),
    ("gradient", "A sky blending from bottom_color at the horizon and "
     "below to top_color straight up.", {
         "top_color": ref("radiance", "Radiance straight up, linear RGB, "
                          "each >= 0 (a blue sky: [0.5, 0.7, 1.0])."),
         "bottom_color": ref("radiance", "Radiance at the horizon and "
                             "below, linear RGB, each >= 0 (white: [1, 1, "
                             "1])."),
     }, ["top_color", "bottom_color"]),
]
ENVIRONMENT = {
    "type": "object",
    "description": "The light from the background, where no shape is hit. "
    "Types: none, uniform {emission}, gradient {top_color, bottom_color}.",
    "oneOf": [material_branch(*e) for e in ENVIRONMENTS],
}

RENDER = {"type": "object", "description": "Render settings kept with the "
          "scene (the render tool's defaults).", "properties": {
              "width": {"type": "integer", "minimum": 1, "maximum": 8192},
              "height": {"type": "integer", "minimum": 1, "maximum": 8192},
              "samples": {"type": "integer", "minimum": 1,
                          "maximum": 1000000},
              "max_depth": {"type": "integer", "minimum": 1,
                            "maximum": 1024},
          }, "additionalProperties": False}

MAX_SHAPES = 10000
MAX_LIGHTS = 256

SCENE = {
    "type": "object",
    "description": "A whole scene, as export_scene writes it.",
    "$defs": defs_for(shapes=True, lights=True) | {
        "camera": CAMERA, "environment": ENVIRONMENT},
    "properties": {
        "format": {"const": "atelier-scene",
                   "description": "Always \"atelier-scene\"; optional."},
        "version": {"const": 1, "description": "Format version: 1; "
                    "optional."},
        "description": {"type": "string", "maxLength": 4096},
        "render": RENDER,
        "camera": {"$ref": "#/$defs/camera"},
        "environment": {"$ref": "#/$defs/environment"},
        "shapes": {"type": "array", "maxItems": MAX_SHAPES,
                   "items": {"oneOf": object_oneof(SHAPES, "shape")}},
        "lights": {"type": "array", "maxItems": MAX_LIGHTS,
                   "items": {"oneOf": object_oneof(LIGHTS, "light")}},
    },
    "additionalProperties": False,
}


def tool(props, required, defs=None, extra=None):
    s = {"type": "object", "properties": props, "required": required,
         "additionalProperties": False}
    if defs:
        s["$defs"] = defs
    if extra:
        s.update(extra)
    return s


def updates(kinds, what):
    return {
        "type": "object", "minProperties": 1,
        "description": "What to change; everything else stays. Merged "
        "deeply: {\"properties\": {\"material\": {\"fuzz\": 0.3}}} changes "
        "only the fuzz. Then the whole %s is checked again; if anything is "
        "wrong, nothing changes. Examples: {\"id\": \"new_name\"} renames "
        "it; {\"properties\": {\"center\": [1, 2, 3]}} moves it; a new "
        "\"type\" starts its properties afresh (give the new type's "
        "required ones)." % what,
        "properties": {
            "id": {"$ref": "#/$defs/id"},
            "type": {"enum": [k[0] for k in kinds]},
            "properties": {"type": "object",
                           "description": "Properties to change, as in "
                           "create_%s." % what},
        }, "additionalProperties": False}


ID_ONLY = tool({"id": {"$ref": "#/$defs/id"}}, ["id"], {"id": ID})
EMPTY = {"type": "object", "properties": {}, "additionalProperties": False}

OUT = [
    ("CREATE_SHAPE", shape_object(
        "A new shape: {\"id\", \"type\", \"properties\"}. Example: {\"id\": "
        "\"ball\", \"type\": \"sphere\", \"properties\": {\"center\": [0, 1, "
        "0], \"radius\": 1, \"material\": {\"type\": \"metal\", \"albedo\": "
        "[0.9, 0.9, 0.9], \"fuzz\": 0.05}}}.")),
    ("UPDATE_SHAPE", tool({"id": {"$ref": "#/$defs/id"},
                           "updates": updates(SHAPES, "shape")},
                          ["id", "updates"], {"id": ID})),
    ("REMOVE_SHAPE", ID_ONLY),
    ("CREATE_LIGHT", light_object(
        "A new light: {\"id\", \"type\", \"properties\"}. Example: {\"id\": "
        "\"key\", \"type\": \"area_quad\", \"properties\": {\"corner\": [-1, "
        "5, -1], \"u\": [2, 0, 0], \"v\": [0, 0, 2], \"emission\": [8, 8, "
        "8]}}.")),
    ("UPDATE_LIGHT", tool({"id": {"$ref": "#/$defs/id"},
                           "updates": updates(LIGHTS, "light")},
                          ["id", "updates"], {"id": ID})),
    ("REMOVE_LIGHT", ID_ONLY),
    ("SET_ENVIRONMENT", ENVIRONMENT | {"$defs": VEC_DEFS}),
    ("SET_CAMERA", CAMERA | {"$defs": VEC_DEFS}),
    ("EMPTY", EMPTY),
    # The model sees a short schema; the handler checks the scene against
    # SCENE_SCHEMA_SCENE, with the same messages (see scene_io.c).
    ("IMPORT_SCENE", tool({"scene": {
        "type": "object",
        "description": "The scene, as export_scene returns it: {\"format\": "
        "\"atelier-scene\", \"version\": 1, \"camera\", \"environment\", "
        "\"shapes\": [...], \"lights\": [...]} with shapes and lights as "
        "create_shape and create_light take them. format and version may "
        "be left out; so may anything else, which then takes its default. "
        "Replaces the whole scene, or changes nothing if anything is "
        "wrong."}}, ["scene"])),
    ("SCENE", SCENE),
    # Not tool schemas: what the plugin checks merged objects against.
    ("SHAPE_OBJECT", shape_object("A shape.")),
    ("LIGHT_OBJECT", light_object("A light.")),
]


def c_string(text, indent="    "):
    """Splits text into C string literal pieces of at most 72 columns."""
    out, piece = [], ""
    for ch in text:
        esc = {'"': '\\"', '\\': '\\\\'}.get(ch, ch)
        if len(piece) + len(esc) > 70:
            out.append(indent + '"' + piece + '"')
            piece = ""
        piece += esc
    out.append(indent + '"' + piece + '"')
    return " \\\n".join(out)


def main():
    w = sys.stdout.write
    w("/* Generated by plugins/scene/gen_schemas.py: do not edit; edit the "
      "script\n * and run it (make check fails when this file is stale). */\n")
    for name, schema in OUT:
        text = json.dumps(schema, separators=(",", ":"), ensure_ascii=True)
        w("\n#define SCENE_SCHEMA_%s \\\n%s\n" % (name, c_string(text)))
    w("\n#define SCENE_MAX_SHAPES %d\n#define SCENE_MAX_LIGHTS %d\n" %
      (MAX_SHAPES, MAX_LIGHTS))
    # The order of properties in stored objects, for stable output.
    for what, kinds, mat in (("shape", SHAPES, True), ("light", LIGHTS,
                                                       False),
                             ("material", MATERIALS, False),
                             ("environment", ENVIRONMENTS, False)):
        w("\n#define SCENE_%s_KINDS \\\n" % what.upper())
        rows = []
        for name, _, props, required in kinds:
            names = list(props) + (["material"] if mat else [])
            rows.append('  {"%s", {%s NULL}}' % (
                name, " ".join('"%s",' % n for n in names)))
        w(", \\\n".join(rows) + "\n")
    w('\n#define SCENE_CAMERA_PROPS %s NULL\n' %
      " ".join('"%s",' % n for n in CAMERA_PROPS))


if __name__ == "__main__":
    main()
