#!/usr/bin/env python3
"""Generates plugins/optics/schemas.inc: the optics plugin's JSON Schemas as
C string literals.

The descriptor's tool schemas must be constant data (the daemon reads them
before it runs any plugin code). The object types share most of their
fields (points, filters, glass indices), so they are written here once, as
Python data; the generated file is committed, and `make check` fails when
it is stale. The types, their fields and their defaults are those of Ray
Optics Simulation's scene format (version 5); the defaults are checked
against tests/data/ray-optics-scenes/_derived/object-type-defaults.json
when that file is given:

    python3 plugins/optics/gen_schemas.py [DEFAULTS.json] > schemas.inc
"""
import importlib.util
import json
import os
import sys


def _scene_generator():
    """The scene plugin's generator, for its C string splitting: one
    implementation for both plugins' schemas.inc."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "scene", "gen_schemas.py")
    spec = importlib.util.spec_from_file_location("scene_gen_schemas", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


c_string = _scene_generator().c_string

COORD_MAX = 1e6  # scene units; also keeps every number finite

NAME = {
    "type": "string",
    "pattern": "^[A-Za-z0-9_. -]{1,64}$",
    "description": "The object's name, unique in the scene: 1 to 64 of "
    "A-Z a-z 0-9 _ . - and space (e.g. \"Main Prism\").",
}

DEFS = {
    "pt": {"type": "object",
           "properties": {"x": {"type": "number", "minimum": -COORD_MAX,
                                "maximum": COORD_MAX},
                          "y": {"type": "number", "minimum": -COORD_MAX,
                                "maximum": COORD_MAX}},
           "required": ["x", "y"], "additionalProperties": False},
    "path": {"type": "array", "minItems": 3, "maxItems": 10000,
             "items": {"type": "object",
                       "properties": {
                           "x": {"type": "number", "minimum": -COORD_MAX,
                                 "maximum": COORD_MAX},
                           "y": {"type": "number", "minimum": -COORD_MAX,
                                 "maximum": COORD_MAX},
                           "arc": {"type": "boolean", "default": False}},
                       "required": ["x", "y"],
                       "additionalProperties": False}},
    "pieces": {"type": "array", "minItems": 1, "maxItems": 100,
               "items": {"type": "object",
                         "properties": {
                             "eqnX": {"type": "string", "maxLength": 2000},
                             "eqnY": {"type": "string", "maxLength": 2000},
                             "tMin": {"type": "number"},
                             "tMax": {"type": "number"},
                             "tStep": {"type": "number",
                                       "exclusiveMinimum": 0}},
                         "required": ["eqnX", "eqnY", "tMin", "tMax",
                                      "tStep"],
                         "additionalProperties": False}},
    "bezier": {"type": "array", "minItems": 2, "maxItems": 1000,
               "items": {"type": "object",
                         "properties": {"a1": {"$ref": "#/$defs/pt"},
                                        "c1": {"$ref": "#/$defs/pt"},
                                        "c2": {"$ref": "#/$defs/pt"}},
                         "required": ["a1", "c1", "c2"],
                         "additionalProperties": False}},
    "outrays": {"type": "array", "minItems": 1, "maxItems": 1000,
                "items": {"type": "object",
                          "properties": {
                              "eqnTheta": {"type": "string",
                                           "maxLength": 2000},
                              "eqnP": {"type": "string", "maxLength": 2000}},
                          "required": ["eqnTheta", "eqnP"],
                          "additionalProperties": False}},
}


def pt(desc):
    return {"$ref": "#/$defs/pt",
            "description": desc + " {x, y}; y grows downward."}


def num(desc, default=None, lo=None, hi=None, excl_lo=False):
    s = {"type": "number", "description": desc}
    if lo is not None:
        s["exclusiveMinimum" if excl_lo else "minimum"] = lo
    if hi is not None:
        s["maximum"] = hi
    if default is not None:
        s["default"] = default
    return s


def boolean(desc, default):
    return {"type": "boolean", "description": desc, "default": default}


def string(desc, default, max_len=2000):
    s = {"type": "string", "description": desc, "maxLength": max_len}
    if default is not None:
        s["default"] = default
    return s


BRIGHTNESS = num("Power of the source (Ray Optics's brightness).", None,
                 0, 1000, True)
WAVELENGTH = num("Wavelength in nm, used when the scene simulates colours.",
                 540, 300, 1000)
FILTER = [
    ("filter", boolean("Act only on wavelengths within bandwidth of "
                       "wavelength (a dichroic), when colours are "
                       "simulated.", False)),
    ("invert", boolean("Invert the filter: act outside the band.", False)),
    ("wavelength", num("The filter's centre wavelength in nm.", 540, 300,
                       1000)),
    ("bandwidth", num("The filter's half-width in nm.", 10, 0, 1000)),
]
GLASS = [
    ("refIndex", num("Refractive index (Cauchy's A when colours are "
                     "simulated).", 1.5, 0.01, 100)),
    ("cauchyB", num("Cauchy's B coefficient in square micrometres.", 0.004,
                    -10, 10)),
    ("partialReflect", boolean("Also trace the Fresnel partial reflection "
                               "at each surface.", True)),
]
GRIN_POLY = "1.1+0.1\\cdot\\cos\\left(0.1\\cdot y\\right)"
GRIN_DISC = "1+e^{-\\frac{x^2+y^2}{50^2}}"


def grin(ref_fn, tol):
    """The gradient-index fields, whose defaults differ by type."""
    return [(k, dict(s, default=ref_fn) if k == "refIndexFn" else
             dict(s, default=tol) if k == "intersectTol" else s)
            for k, s in GRIN]


GRIN = [
    ("refIndexFn", string("Refractive index n(x, y) in LaTeX, relative to "
                          "origin.", None)),
    ("absorptionFn", string("Absorption coefficient in LaTeX.", "0")),
    ("origin", pt("Origin of the functions' x and y")),
    ("stepSize", num("Integration step in scene units.", 1, 0, None, True)),
    ("intersectTol", num("Tolerance of the boundary crossing.", 0.001, 0,
                         None, True)),
    ("partialReflect", boolean("Also trace the partial reflection at the "
                               "boundary.", True)),
]
CURVE = [
    ("curveType", {"enum": ["smoothNormal", "polygonal"],
                   "description": "smoothNormal interpolates the normal "
                   "between samples; polygonal uses flat pieces.",
                   "default": "smoothNormal"}),
]
UI = [("notDone", boolean("Editor state; ignored.", False))]
PLOT = [("plotFns", boolean("Editor state; ignored.", False))]


POINT = {"$ref": "#/$defs/pt"}


def line(p1, p2):
    """The points p1 and p2; what they mean goes into the type's
    description (see branch), so that one schema serves every type."""
    return [("p1", dict(POINT, meaning=p1)), ("p2", dict(POINT, meaning=p2))]


GRATING = [
    ("lineDensity", num("Lines per millimetre.", 1000, 0, 1e5, True)),
    ("customBrightness", boolean("Use brightnesses instead of the slit's "
                                 "diffraction pattern.", False)),
    ("brightnesses", {"type": "array", "maxItems": 100,
                      "items": {"type": "number", "minimum": 0},
                      "description": "Relative power of orders 0, ±1, ±2, "
                      "... when customBrightness.",
                      "default": [1, 0.5, 0.5]}),
    ("slitRatio", num("Slit width over line spacing.", 0.5, 0, 1, True)),
]
OUTRAYS = [
    ("outRays", {"$ref": "#/$defs/outrays",
                 "description": "The outgoing rays: each {eqnTheta, eqnP} "
                 "in LaTeX of the incoming angle \\theta_0 and power P_0."}),
    ("twoSided", boolean("Act on rays from both sides.", False)),
]
PIECES = ("pieces", {"$ref": "#/$defs/pieces",
                     "description": "Parametric pieces {eqnX, eqnY, tMin, "
                     "tMax, tStep} in LaTeX of t, relative to origin."})
ORIGIN = ("origin", pt("Origin of the pieces' coordinates"))
BEZIER = ("points", {"$ref": "#/$defs/bezier",
                     "description": "Closed Bezier outline: anchors a1 with "
                     "control points c1, c2."})

# (type, description, fields, required)
TYPES = [
    ("SingleRay", "One ray from p1 through p2.",
     line("Start", "A point the ray passes through") +
     [("brightness", dict(BRIGHTNESS, default=1)),
      ("wavelength", WAVELENGTH)], ["p1", "p2"]),
    ("PointSource", "Rays in every direction from (x, y), spaced by the "
     "scene's ray density.",
     [("x", num("x of the source.", None, -COORD_MAX, COORD_MAX)),
      ("y", num("y of the source (grows downward).", None, -COORD_MAX,
                COORD_MAX)),
      ("brightness", dict(BRIGHTNESS, default=0.5)),
      ("wavelength", WAVELENGTH)], ["x", "y"]),
    ("AngleSource", "A fan of rays from p1 centred on the direction to p2.",
     line("Apex", "A point on the central ray") +
     [("brightness", dict(BRIGHTNESS, default=0.5)),
      ("wavelength", WAVELENGTH),
      ("emisAngle", num("Full fan angle in degrees.", 36.001, 0, 360)),
      ("symmetric", boolean("Fan symmetric about p1->p2 (else on one "
                            "side).", True))], ["p1", "p2"]),
    ("Beam", "Parallel rays along the segment p1-p2, leaving perpendicular "
     "to it.",
     line("One end", "The other end") +
     [("brightness", dict(BRIGHTNESS, default=0.5)),
      ("wavelength", WAVELENGTH),
      ("emisAngle", num("Divergence in degrees (0: parallel).", 0, 0,
                        180)),
      ("lambert", boolean("Lambertian intensity over the divergence.",
                          False)),
      ("random", boolean("Random instead of even spacing.", False))],
     ["p1", "p2"]),
    ("Mirror", "A flat mirror p1-p2.", line("One end", "The other end") +
     FILTER, ["p1", "p2"]),
    ("ArcMirror", "A circular mirror from p1 through p3 to p2.",
     line("One end", "The other end") + [("p3", dict(POINT, meaning="A point on the arc"))] +
     FILTER, ["p1", "p2", "p3"]),
    ("ParabolicMirror", "A parabolic mirror from p1 to p2 with vertex p3.",
     line("One end", "The other end") + [("p3", dict(POINT, meaning="The vertex"))] + FILTER,
     ["p1", "p2", "p3"]),
    ("IdealMirror", "An ideal curved mirror p1-p2 of focal length f.",
     line("One end", "The other end") +
     [("focalLength", num("Focal length (> 0 concave).", 100, -COORD_MAX,
                          COORD_MAX))] + FILTER, ["p1", "p2"]),
    ("BeamSplitter", "A flat splitter p1-p2 transmitting transRatio.",
     line("One end", "The other end") +
     [("transRatio", num("Transmitted fraction.", 0.5, 0, 1))] + FILTER,
     ["p1", "p2"]),
    ("CustomMirror", "A mirror y = eqn(x) in LaTeX, x from -1 (p1) to 1 "
     "(p2), scaled by |p1p2|/2.",
     line("Start", "End") +
     [("eqn", string("The curve in LaTeX.", "0.5\\cdot\\sqrt{1-x^2}")),
      ("curveStepSize", num("Sampling step.", 0.1000001, 0, None, True))] +
     CURVE + FILTER, ["p1", "p2"]),
    ("ParamMirror", "A parametric mirror.", [ORIGIN, PIECES] + CURVE +
     FILTER, []),
    ("Blocker", "An absorbing segment p1-p2.", line("One end", "The other "
     "end") + FILTER, ["p1", "p2"]),
    ("CircleBlocker", "An absorbing disc centred on p1 through p2.",
     line("Centre", "A point on the circle") + FILTER, ["p1", "p2"]),
    ("Aperture", "An absorbing segment p1-p2 with an opening p3-p4.",
     line("One end", "The other end") +
     [("p3", pt("One end of the opening")),
      ("p4", dict(POINT, meaning="The other end of the opening"))] + FILTER,
     ["p1", "p2", "p3", "p4"]),
    ("DiffractionGrating", "A transmission (or mirrored) grating p1-p2.",
     line("One end", "The other end") + GRATING +
     [("mirrored", boolean("Reflective grating.", False))], ["p1", "p2"]),
    ("ConcaveDiffractionGrating", "A concave reflective grating from p1 "
     "through p3 to p2.", line("One end", "The other end") +
     [("p3", dict(POINT, meaning="A point on the arc"))] + GRATING, ["p1", "p2", "p3"]),
    ("Glass", "A glass polygon; a vertex with arc: true is the middle of a "
     "circular arc between its neighbours.",
     [("path", {"$ref": "#/$defs/path",
                "description": "Vertices [{x, y, arc?}] (at least 3)."})] +
     UI + GLASS, ["path"]),
    ("CircleGlass", "A glass disc centred on p1 through p2.",
     line("Centre", "A point on the circle") + GLASS, ["p1", "p2"]),
    ("PlaneGlass", "Glass filling the half-plane to one side of the line "
     "through p1 and p2.", line("A point on the surface", "Another point")
     + GLASS, ["p1", "p2"]),
    ("CurveGlass", "A glass bounded by a closed Bezier curve.",
     [BEZIER] + UI + GLASS, ["points"]),
    ("SphericalLens", "A thick lens: p1-p2 its axis-crossing diameter, "
     "params {d, r1, r2} (defBy DR1R2) or {d, ffd, bfd} (defBy DFfdBfd); "
     "or a path as Glass's.",
     line("Top of the lens", "Bottom of the lens") +
     [("defBy", {"enum": ["DR1R2", "DFfdBfd"], "default": "DR1R2",
                 "description": "What params give."}),
      ("params", {"type": "object",
                  "properties": {k: {"type": "number"}
                                 for k in ("d", "r1", "r2", "ffd", "bfd")},
                  "additionalProperties": False,
                  "description": "Thickness d and radii r1, r2 (or focal "
                  "distances ffd, bfd)."}),
      ("path", {"$ref": "#/$defs/path",
                "description": "The lens as a path (6 vertices)."})] + GLASS,
     []),
    ("CustomGlass", "A glass between y = eqn1(x) and y = eqn2(x) in LaTeX, "
     "x from -1 (p1) to 1 (p2).",
     line("Start", "End") +
     [("eqn1", string("Lower curve in LaTeX.", "0")),
      ("eqn2", string("Upper curve in LaTeX.", "0.5\\cdot\\sqrt{1-x^2}")),
      ("curveStepSize", num("Sampling step.", 0.1000001, 0, None, True))] +
     CURVE + GLASS, ["p1", "p2"]),
    ("ParamGlass", "A glass bounded by parametric pieces.",
     [ORIGIN, PIECES] + CURVE + GLASS, []),
    ("GrinGlass", "A gradient-index glass polygon.",
     [("path", {"$ref": "#/$defs/path",
                "description": "Vertices [{x, y, arc?}]."})] + UI +
     grin(GRIN_POLY, 0.001) + PLOT, ["path"]),
    ("CircleGrinGlass", "A gradient-index disc centred on p1 through p2.",
     line("Centre", "A point on the circle") + grin(GRIN_DISC, 0.001) +
     PLOT, ["p1", "p2"]),
    ("CurveGrinGlass", "A gradient-index glass with a Bezier outline.",
     [BEZIER] + UI + grin(GRIN_POLY, 0.05) + PLOT, ["points"]),
    ("ParamGrinGlass", "A gradient-index glass with parametric pieces.",
     [PIECES] + CURVE + grin(GRIN_DISC, 0.001) + PLOT, []),
    ("IdealLens", "An ideal thin lens p1-p2.",
     line("One end", "The other end") +
     [("focalLength", num("Focal length (> 0 converging).", 100, -COORD_MAX,
                          COORD_MAX))], ["p1", "p2"]),
    ("Detector", "Measures the power crossing p1-p2.",
     line("One end", "The other end") +
     [("twoSided", boolean("Count rays from both sides.", True)),
      ("irradMap", boolean("Record an irradiance map.", False)),
      ("binSize", num("The map's bin length.", 1, 0, None, True))],
     ["p1", "p2"]),
    ("CustomSurface", "A surface p1-p2 whose outgoing rays are given by "
     "equations.", line("One end", "The other end") + OUTRAYS,
     ["p1", "p2"]),
    ("CustomArcSurface", "An arc from p1 through p3 to p2 with "
     "equation-given outgoing rays.", line("One end", "The other end") +
     [("p3", dict(POINT, meaning="A point on the arc"))] + OUTRAYS, ["p1", "p2", "p3"]),
    ("CustomParamSurface", "A parametric surface with equation-given "
     "outgoing rays.", [ORIGIN, PIECES] + CURVE + OUTRAYS, []),
]


def shared_fields():
    """The field schemas more than one type uses, by their text: they are
    written once in $defs and referred to, since the schemas are sent to
    the model on every turn and their size is paid for in tokens."""
    count = {}
    for _, _, fields, _ in TYPES:
        for k, s in fields:
            # A field that is already a reference (with or without its own
            # description) stays one: made a shared definition of its own,
            # it would take the name of the definition it points to
            # ("pieces") and become a reference to itself.
            if "meaning" in s or "$ref" in s:
                continue
            text = json.dumps(s, sort_keys=True)
            count.setdefault((k, text), 0)
            count[(k, text)] += 1
    names, taken = {}, set(DEFS) | {"name"}
    for (k, text), n in sorted(count.items()):
        if n < 2:
            continue
        name, i = k, 2
        while name in taken:
            name, i = "%s%d" % (k, i), i + 1
        taken.add(name)
        names[(k, text)] = name
    return names


SHARED = shared_fields()


def field_defs():
    defs = {name: json.loads(text) for (k, text), name in SHARED.items()}
    # A shared field must never replace a definition of DEFS.
    assert not set(defs) & (set(DEFS) | {"name"}), set(defs) & set(DEFS)
    return defs


# Fields of the app's editor that mean nothing to the simulation: accepted
# in stored and imported objects, not offered to the model.
EDITOR_ONLY = ("notDone", "plotFns")


def branch(t, desc, fields, required, with_name, editor=True):
    props = {"type": {"const": t}}
    if with_name:
        props["name"] = {"$ref": "#/$defs/name"}
    points = ["%s %s" % (k, s["meaning"].lower()) for k, s in fields
              if "meaning" in s]
    if points:
        desc += " Points {x, y} (y grows downward): " + "; ".join(points) + "."
    fields = [(k, {a: b for a, b in s.items() if a != "meaning"})
              for k, s in fields if editor or k not in EDITOR_ONLY]
    for k, s in fields:
        shared = SHARED.get((k, json.dumps(s, sort_keys=True)))
        props[k] = {"$ref": "#/$defs/" + shared} if shared else s
    return {"type": "object", "description": t + ": " + desc,
            "properties": props,
            "required": ["type"] + (["name"] if with_name else []) +
            required,
            "additionalProperties": False}


def add_schema(editor=False):
    return {"type": "object",
            "description": "One object: its name, its type and that type's "
            "fields (Ray Optics Simulation's scene format; points are "
            "{x, y} with y growing downward). Example: {\"name\": "
            "\"Main Prism\", \"type\": \"Glass\", \"path\": [{\"x\": 200, "
            "\"y\": 50}, {\"x\": 250, \"y\": 100}, {\"x\": 150, \"y\": 100}], "
            "\"refIndex\": 1.5}.",
            "$defs": dict(DEFS, name=NAME, **field_defs()),
            "oneOf": [branch(*t, True, editor) for t in TYPES]}


def object_schema():
    """What a stored object must be, after an update is merged into it."""
    s = add_schema(True)
    del s["description"]
    return s


def tool(props, required, desc=None):
    s = {"type": "object", "properties": props, "required": required,
         "additionalProperties": False}
    if desc:
        s["description"] = desc
    return s


OBJ_REF = {"type": "string", "minLength": 1, "maxLength": 64,
           "description": "An object's name (see the CURRENT SCENE or "
           "optics_list)."}
N_INDEX = {"type": "number", "exclusiveMinimum": 0, "maximum": 100}
ANGLE = {"type": "number", "minimum": 0, "exclusiveMaximum": 90}

SETTINGS = {
    "rayModeDensity": num("Rays per unit angle of the sources (Ray Optics's "
                          "ray density).", None, 0, 1000, True),
    "mode": {"enum": ["rays", "extended", "images", "observer"],
             "description": "Ray Optics's view mode (the simulation here "
             "traces rays in every mode)."},
    "simulateColors": {"type": "boolean",
                       "description": "Trace wavelengths (sources' "
                       "wavelength, Cauchy dispersion)."},
    "colorMode": {"enum": ["default", "linear", "linearRGB", "reinhard",
                           "colorizedIntensity"],
                  "description": "How brightness maps to colour; also the "
                  "truncation threshold of weak rays."},
    "randomSeed": {"type": "string", "maxLength": 200,
                   "description": "Seed of the random sources."},
    "maxRayDepth": {"type": "number", "minimum": 0,
                    "description": "Most interactions per ray (omit for no "
                    "limit)."},
    "lengthScale": num("Scale of the scene's lengths (tolerances).", None, 0,
                       1000, True),
    "showRayArrows": {"type": "boolean", "description": "Draw arrows on "
                      "rays."},
    "name": {"type": "string", "maxLength": 200,
             "description": "The scene's title."},
}

OUT = [
    ("OPTICS_ADD", add_schema()),
    ("OPTICS_UPDATE", tool({
        "name": OBJ_REF,
        "set": {"type": "object", "minProperties": 1, "maxProperties": 50,
                "description": "Fields to change, as in optics_add (not "
                "type; remove and add to change it). Example: {\"refIndex\": "
                "1.7} or {\"p1\": {\"x\": 10, \"y\": 20}}."},
        "rename": dict(NAME, description="A new name for the object.")},
        ["name"])),
    ("OPTICS_REMOVE", tool({"names": {"type": "array", "minItems": 1,
                                      "maxItems": 1000, "items": OBJ_REF,
                                      "description": "The objects to "
                                      "remove."}}, ["names"])),
    ("OPTICS_LIST", tool({}, [])),
    ("OPTICS_IMPORT", tool({
        "scene": {"type": "object",
                  "description": "A Ray Optics Simulation scene (version 5, "
                  "as the app saves it: {\"version\": 5, \"objs\": [...], "
                  "...}). Objects may carry a \"name\"; the others get one "
                  "(Type_N)."},
        "replace": {"type": "boolean", "default": True,
                    "description": "Replace the bench (else append its "
                    "objects)."}}, ["scene"])),
    ("OPTICS_EXPORT", tool({
        "names": {"type": "boolean", "default": False,
                  "description": "Keep the objects' names (a field the app "
                  "ignores)."}}, [])),
    ("OPTICS_SETTINGS", tool(SETTINGS, [])),
    ("OPTICS_SIMULATE", tool({
        "ray_limit": {"type": "integer", "minimum": 1, "maximum": 5000000,
                      "default": 1000000,
                      "description": "Most segments to trace."}}, [])),
    ("QUERY_RAYS", tool({
        "sql": {"type": "string", "minLength": 1, "maxLength": 20000,
                "description": "One read-only SELECT (WITH and subqueries "
                "allowed) over rays, objects, edges, ray_object_membership, "
                "ray_edge_crossing; see describe_schema."},
        "max_rows": {"type": "integer", "minimum": 1, "maximum": 1000,
                     "default": 200,
                     "description": "Most rows returned; the result says "
                     "when it was truncated."}}, ["sql"])),
    ("DESCRIBE_SCHEMA", tool({}, [])),
    ("DESCRIBE_EDGES", tool({"object": OBJ_REF}, ["object"])),
    ("RANK_PATHS", tool({
        "top_n": {"type": "integer", "minimum": 1, "maximum": 1000,
                  "default": 10,
                  "description": "How many paths, highest energy first."}},
        [])),
    ("ENERGY_CHECK", tool({}, [])),
    ("TIR_TRAPS", tool({
        "min_tir_count": {"type": "integer", "minimum": 1, "maximum": 10000,
                          "default": 2,
                          "description": "Shortest chain of successive "
                          "total internal reflections reported."}}, [])),
    ("ANGULAR", tool({
        "n_bins": {"type": "integer", "minimum": 1, "maximum": 3600,
                   "default": 36,
                   "description": "Bins over -180..180 degrees."}}, [])),
    ("FRESNEL", tool({
        "n1": dict(N_INDEX, description="Index of the incidence side."),
        "n2": dict(N_INDEX, description="Index of the other side."),
        "theta_i_deg": dict(ANGLE, description="Angle of incidence in "
                            "degrees from the normal.")},
        ["n1", "n2", "theta_i_deg"])),
    ("TIR_ANALYSIS", tool({
        "n1": dict(N_INDEX, description="Index of the denser side (must "
                   "exceed n2)."),
        "n2": dict(N_INDEX, description="Index of the rarer side."),
        "theta_i_deg": dict(ANGLE, description="Angle of incidence in "
                            "degrees; default: critical angle + "
                            "delta_angle_deg."),
        "delta_angle_deg": {"type": "number", "exclusiveMinimum": 0,
                            "maximum": 45, "default": 1.0,
                            "description": "Margin for the near-TIR and "
                            "near-Brewster flags, and the default angle's "
                            "offset."}}, ["n1", "n2"])),
    ("CRITICAL", tool({
        "n1": dict(N_INDEX, description="Index of the denser side."),
        "n2": dict(N_INDEX, description="Index of the rarer side.")},
        ["n1", "n2"])),
    ("BREWSTER", tool({
        "n1": dict(N_INDEX, description="Index of the incidence side."),
        "n2": dict(N_INDEX, description="Index of the other side.")},
        ["n1", "n2"])),
    ("RENDER", tool({
        "highlight": {"type": "string", "maxLength": 4000,
                      "description": "A SQL WHERE clause over rays choosing "
                      "the rays to highlight, e.g. \"interaction_type = "
                      "'tir'\" or \"id IN (SELECT ray_id FROM "
                      "ray_object_membership WHERE object_name = 'Main "
                      "Prism')\"."},
        "highlight_objects": {"type": "array", "maxItems": 100,
                              "items": OBJ_REF,
                              "description": "Objects to highlight."},
        "highlight_edges": {
            "type": "array", "maxItems": 100,
            "items": {"type": "object",
                      "properties": {"object": OBJ_REF,
                                     "edge": {"type": "string",
                                              "minLength": 1,
                                              "maxLength": 64}},
                      "required": ["object", "edge"],
                      "additionalProperties": False},
            "description": "Edges to highlight: {object, edge} with the "
            "edge's label or index (see describe_edges)."},
        "width": {"type": "integer", "minimum": 16, "maximum": 4096,
                  "default": 800, "description": "Pixels."},
        "height": {"type": "integer", "minimum": 16, "maximum": 4096,
                   "default": 600, "description": "Pixels."},
        "view": {"type": "object",
                 "properties": {"x": {"type": "number"},
                                "y": {"type": "number"},
                                "width": {"type": "number",
                                          "exclusiveMinimum": 0},
                                "height": {"type": "number",
                                           "exclusiveMinimum": 0}},
                 "required": ["x", "y", "width", "height"],
                 "additionalProperties": False,
                 "description": "The part of the scene shown (top-left x, "
                 "y and size in scene units); default: fitted."}}, [])),
    # Not a tool schema: what a stored object must be after an update.
    ("OBJECT", object_schema()),
]


def check_defaults(path):
    """Every default here must be Ray Optics's own (its type defaults)."""
    ref = json.load(open(path))
    bad = []
    for t, _, fields, _ in TYPES:
        want = ref[t]["defaults"]
        for k, s in fields:
            if k not in want:
                bad.append("%s.%s: not a field of the app" % (t, k))
            elif "default" in s and s["default"] != want[k]:
                bad.append("%s.%s: default %r, the app's %r" %
                           (t, k, s["default"], want[k]))
    if bad:
        sys.exit("gen_schemas: " + "; ".join(bad))


def main():
    if len(sys.argv) > 1:
        check_defaults(sys.argv[1])
    w = sys.stdout.write
    w("/* Generated by plugins/optics/gen_schemas.py: do not edit; edit the "
      "script\n * and run it (make check fails when this file is stale). */\n")
    for name, schema in OUT:
        text = json.dumps(schema, separators=(",", ":"), ensure_ascii=True)
        w("\n#define OPX_SCHEMA_%s \\\n%s\n" % (name, c_string(text)))
    w("\n#define OPX_TYPES %s NULL\n" %
      " ".join('"%s",' % t[0] for t in TYPES))


if __name__ == "__main__":
    main()
