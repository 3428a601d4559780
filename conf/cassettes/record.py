#!/usr/bin/env python3
"""Records the /demo cassettes through the real loop: a build's atelierd
with the fake provider playing the model (tests/fake-llm), one message,
then `atelierctl session cassette`. The model's words and calls are the
scripts below; everything else (the tool results, the ids, the renders,
generate_svg's run in its sandbox, the optics simulation) is the daemon's,
and a call that fails stops the recording.

    python3 conf/cassettes/record.py scene   [BUILD_DIR] > conf/cassettes/snowman.json
    python3 conf/cassettes/record.py drawing [BUILD_DIR] > conf/cassettes/drawing.json
    python3 conf/cassettes/record.py optics  [BUILD_DIR] > conf/cassettes/optics.json

Each demo ends with a picture: render_scene, view_canvas and the saved
piece, render_optics.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(SRC, "build"))
os.environ.setdefault("ATL_TEST_BUILDDIR", BUILD)
os.environ.setdefault("ATL_TEST_SRCDIR", SRC)
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from atltest import KEY, Daemon, Fake  # noqa: E402

# The snowman: tests/data/scenes/snowman.json built in three turns, then
# looked at with render_scene.
SNOWMAN = [
    {"text": "I'll build a snowman step by step. First the snowy ground and the three stacked snowballs, each smaller than the one below.",
     "tool_calls": [
         {"name": "create_shape", "arguments": {"id": "ground", "type": "quad", "properties": {"corner": [-10, 0, -10], "u": [0, 0, 20], "v": [20, 0, 0], "material": {"type": "lambertian", "albedo": [0.9, 0.9, 0.92]}}}},
         {"name": "create_shape", "arguments": {"id": "snow_bottom", "type": "sphere", "properties": {"center": [0, 0.8, 0], "radius": 0.8, "material": {"type": "lambertian", "albedo": [0.95, 0.95, 0.95]}}}},
         {"name": "create_shape", "arguments": {"id": "snow_middle", "type": "sphere", "properties": {"center": [0, 1.9, 0], "radius": 0.55, "material": {"type": "lambertian", "albedo": [0.95, 0.95, 0.95]}}}},
         {"name": "create_shape", "arguments": {"id": "snow_head", "type": "sphere", "properties": {"center": [0, 2.75, 0], "radius": 0.38, "material": {"type": "lambertian", "albedo": [0.95, 0.95, 0.95]}}}},
     ]},
    {"text": "The body stands. Now the face: two coal eyes and a carrot nose, then a black hat with a brim.",
     "tool_calls": [
         {"name": "create_shape", "arguments": {"id": "left_eye", "type": "sphere", "properties": {"center": [-0.13, 2.85, 0.33], "radius": 0.04, "material": {"type": "lambertian", "albedo": [0.02, 0.02, 0.02]}}}},
         {"name": "create_shape", "arguments": {"id": "right_eye", "type": "sphere", "properties": {"center": [0.13, 2.85, 0.33], "radius": 0.04, "material": {"type": "lambertian", "albedo": [0.02, 0.02, 0.02]}}}},
         {"name": "create_shape", "arguments": {"id": "nose", "type": "cone", "properties": {"base_center": [0, 2.75, 0.34], "top_center": [0, 2.72, 0.75], "base_radius": 0.06, "top_radius": 0, "capped": True, "material": {"type": "lambertian", "albedo": [0.9, 0.4, 0.05]}}}},
         {"name": "create_shape", "arguments": {"id": "hat", "type": "cylinder", "properties": {"base_center": [0, 3.05, 0], "top_center": [0, 3.45, 0], "radius": 0.25, "capped": True, "material": {"type": "lambertian", "albedo": [0.05, 0.05, 0.06]}}}},
         {"name": "create_shape", "arguments": {"id": "hat_brim", "type": "disc", "properties": {"center": [0, 3.06, 0], "normal": [0, 1, 0], "radius": 0.4, "material": {"type": "lambertian", "albedo": [0.05, 0.05, 0.06]}}}},
     ]},
    {"text": "Two companions in the snow, a metal ball and a glass ball, then a square light above, a blue sky, and the camera.",
     "tool_calls": [
         {"name": "create_shape", "arguments": {"id": "metal_ball", "type": "sphere", "properties": {"center": [-1.8, 0.5, 0.8], "radius": 0.5, "material": {"type": "metal", "albedo": [0.8, 0.8, 0.85], "fuzz": 0.05}}}},
         {"name": "create_shape", "arguments": {"id": "glass_ball", "type": "sphere", "properties": {"center": [1.7, 0.45, 1.0], "radius": 0.45, "material": {"type": "dielectric", "refractive_index": 1.5}}}},
         {"name": "create_light", "arguments": {"id": "key_light", "type": "area_quad", "properties": {"corner": [-1, 5, -1], "u": [2, 0, 0], "v": [0, 0, 2], "emission": [8, 8, 8]}}},
         {"name": "set_environment", "arguments": {"type": "gradient", "top_color": [0.5, 0.7, 1.0], "bottom_color": [1.0, 1.0, 1.0]}},
         {"name": "set_camera", "arguments": {"center": [0, 2, 7], "look_at": [0, 1.5, 0], "vfov": 45, "aperture": 0}},
     ]},
    {"text": "Let me render it to see how it looks.",
     "tool_calls": [{"name": "render_scene", "arguments": {}}]},
    {"text": "Your snowman is ready: eleven shapes, one light, a gradient sky and a camera looking at him from the front. Ask me to change anything, a colour, a size, the light, and I will."},
]

WAVES = """# Three rows of waves across the water, each a chain of small arcs.
paths = []
for row in range(3):
    y = 430 + row * 40
    x = 40 + row * 25
    d = "M %.1f %.1f" % (x, y)
    while x < 740:
        d += " q 15 -10 30 0"
        x += 30
    paths.append(d)
output_svg_paths(paths)
"""

HARBOUR = [
    {"text": "I'll draw a small harbour in plotter mode: the horizon, a sun, "
     "the hills and a boat first.",
     "tool_calls": [{"name": "draw_paths", "arguments": {"paths": [
         {"type": "line", "points": [{"x": 20, "y": 400}, {"x": 780, "y": 400}]},
         {"type": "svg", "d": "M 560 170 a 50 50 0 1 0 100 0 a 50 50 0 1 0 -100 0"},
         {"type": "cubic", "points": [{"x": 20, "y": 400}, {"x": 150, "y": 250},
                                      {"x": 300, "y": 330}, {"x": 420, "y": 400}]},
         {"type": "polyline", "points": [{"x": 300, "y": 470}, {"x": 460, "y": 470},
                                         {"x": 430, "y": 500}, {"x": 330, "y": 500},
                                         {"x": 300, "y": 470}]},
         {"type": "svg", "d": "M 380 470 V 330 L 450 455 Z"}]}}]},
    {"text": "Now the waves, generated with a little Python.",
     "tool_calls": [{"name": "generate_svg", "arguments": {"code": WAVES}}]},
    {"text": "Let me look at the whole picture.",
     "tool_calls": [{"name": "view_canvas", "arguments": {}}]},
    {"text": "It reads well. The finishing ritual: sign, name, done.",
     "tool_calls": [
         {"name": "sign_canvas", "arguments": {"position": "bottom_right",
                                               "size": "small"}},
         {"name": "name_piece", "arguments": {"title": "Harbour at Noon"}},
         {"name": "mark_piece_done", "arguments": {}}]},
    {"text": "Done: \"Harbour at Noon\", a horizon, a sun, hills, a sailing "
     "boat and three rows of waves, signed and saved to the gallery."},
]

# A right-angle prism that turns a beam by 90 degrees: the beam enters the
# left face square on, meets the long face at 45 degrees (past glass's
# critical angle, 41.8), is totally reflected, and leaves through the top.
PRISM = {"name": "prism", "type": "Glass", "refIndex": 1.5,
         "path": [{"x": 200, "y": 100}, {"x": 400, "y": 100},
                  {"x": 200, "y": 300}]}
BEAM = {"name": "beam", "type": "Beam", "p1": {"x": 80, "y": 160},
        "p2": {"x": 80, "y": 240}, "brightness": 0.5}
SCREEN = {"name": "screen", "type": "Blocker", "p1": {"x": 180, "y": 20},
          "p2": {"x": 420, "y": 20}}

PRISM_BENCH = [
    {"text": "I'll build a reflecting prism bench: a right-angle glass prism, "
     "a beam of light aimed at its left face, and a screen above to catch "
     "what comes out.",
     "tool_calls": [{"name": "optics_add", "arguments": PRISM},
                    {"name": "optics_add", "arguments": BEAM},
                    {"name": "optics_add", "arguments": SCREEN}]},
    {"text": "Now let me trace the rays.",
     "tool_calls": [{"name": "optics_simulate", "arguments": {}}]},
    {"text": "Which interactions happened, and how many of each?",
     "tool_calls": [{"name": "query_rays", "arguments": {
         "sql": "SELECT interaction_type, COUNT(*) AS segments, "
                "ROUND(SUM(brightness_total), 3) AS power FROM rays "
                "GROUP BY interaction_type ORDER BY segments DESC"}}]},
    {"text": "Let me draw the bench with the totally internally reflected "
     "rays highlighted.",
     "tool_calls": [{"name": "render_optics", "arguments": {
         "highlight": "interaction_type = 'tir'"}}]},
    {"text": "@SUMMARY@"},
]

DEMOS = {
    "scene": ("Build me a snowman", SNOWMAN,
              "A snowman built step by step and rendered with render_scene: "
              "the demo atelierd replays with /demo (or /demo scene), no LLM "
              "provider needed. Its scene is tests/data/scenes/snowman.json."),
    "drawing": ("Draw me a small harbour", HARBOUR,
                "A harbour drawn in plotter mode with draw_paths and "
                "generate_svg, looked at, signed, named and saved: the demo "
                "atelierd replays with /demo drawing, no LLM provider needed."),
    "optics": ("Show me total internal reflection in a prism", PRISM_BENCH,
               "A reflecting prism on the optical bench: built, simulated, "
               "its rays counted with query_rays and drawn with "
               "render_optics, the totally internally reflected rays "
               "highlighted: the demo atelierd replays with /demo optics, no "
               "LLM provider needed."),
}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in DEMOS:
        sys.exit("usage: record.py %s [BUILD_DIR] > conf/cassettes/NAME.json"
                 % "|".join(DEMOS))
    name = sys.argv[1]
    prompt, turns, description = DEMOS[name]
    fake = Fake()
    conf = ("[agent]\nprovider = fake\n"
            "[provider.fake]\ntype = openai\nbase_url = %s\n"
            "api_key_env = FAKE_LLM_KEY\nmodels = fake-model\n" % fake.url)
    d = Daemon("record-" + name, conf, env={"FAKE_LLM_KEY": KEY})
    try:
        record(d, fake, name, prompt, turns, description)
    finally:
        d.stop()


def record(d, fake, name, prompt, turns, description):
    if turns[-1]["text"] == "@SUMMARY@":
        # The last words say what the tools found: a first run finds it.
        turns = turns[:-1] + [{"text": summary(d, fake, prompt, turns[:-1])}]
    fake.script(turns)
    sid = d.session()
    ev = d.run(sid, prompt, timeout=120)
    bad = [e for e in ev if e["type"] == "tool.finished" and not e["data"]["success"]]
    if ev[-1]["type"] != "run.completed" or bad:
        sys.exit("record: the run failed: %s" % (bad or ev[-1]))
    out = subprocess.run(
        [os.path.join(BUILD, "atelierctl"), "--socket", d.sock, "session", "cassette", sid],
        check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    doc["description"] = description + " Recorded by conf/cassettes/record.py."
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


def summary(d, fake, prompt, turns):
    """The optics demo's closing words, from what its tools answer."""
    fake.script(turns + [{"text": "(measuring)"}])
    sid = d.session()
    ev = d.run(sid, prompt, timeout=120)
    bad = [e for e in ev if e["type"] == "tool.finished" and not e["data"]["success"]]
    sim = d.rpc("tool.call", {"session": sid, "name": "optics_simulate",
                              "arguments": {}})["result"]
    rows = d.rpc("tool.call", {"session": sid, "name": "query_rays", "arguments":
                               turns[2]["tool_calls"][0]["arguments"]})["result"]["rows"]
    if bad or ev[-1]["type"] != "run.completed":
        sys.exit("record: the run failed: %s" % (bad or ev[-1]))
    counts = {r[0]: r[1] for r in rows}
    tir = counts.get("tir", 0)
    if tir == 0:
        sys.exit("record: no total internal reflection: %s" % rows)
    return ("The beam enters the prism's left face square on and meets the "
            "long face at 45 degrees, more than glass's critical angle of "
            "41.8 degrees, so it is totally reflected: %d segments are total "
            "internal reflections, highlighted in the picture, and the light "
            "leaves through the top face, turned by 90 degrees, onto the "
            "screen, which catches %.1f of the %.0f units emitted. The "
            "simulation traced %d segments in all. Ask me to tilt the beam or "
            "change the glass and see when the reflection stops being total."
            % (tir, sim["energy"]["absorbed"], sim["energy"]["emitted"],
               sim["segments"]))


if __name__ == "__main__":
    main()
