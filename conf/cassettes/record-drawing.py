#!/usr/bin/env python3
"""Records conf/cassettes/drawing.json, the /demo drawing cassette, through
the real loop: a build's atelierd with the fake provider playing the model
(tests/fake-llm), one message, then `atelierctl session cassette`. The
model's words and calls are the script below; everything else (the tool
results, the ids, generate_svg's run in its sandbox) is the daemon's.

    python3 conf/cassettes/record-drawing.py [BUILD_DIR] > conf/cassettes/drawing.json
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(SRC, "build"))
os.environ.setdefault("ATL_TEST_BUILDDIR", BUILD)
os.environ.setdefault("ATL_TEST_SRCDIR", SRC)
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from atltest import KEY, Daemon, Fake  # noqa: E402

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

TURNS = [
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


def main():
    fake = Fake()
    conf = ("[agent]\nprovider = fake\n"
            "[provider.fake]\ntype = openai\nbase_url = %s\n"
            "api_key_env = FAKE_LLM_KEY\nmodels = fake-model\n" % fake.url)
    d = Daemon("record-drawing", conf, env={"FAKE_LLM_KEY": KEY})
    fake.script(TURNS)
    sid = d.session()
    ev = d.run(sid, "Draw me a small harbour", timeout=60)
    bad = [e for e in ev if e["type"] == "tool.finished" and not e["data"]["success"]]
    if ev[-1]["type"] != "run.completed" or bad:
        sys.exit("record-drawing: the run failed: %s" % (bad or ev[-1]))
    out = subprocess.run(
        [os.path.join(BUILD, "atelierctl"), "--socket", d.sock, "session", "cassette", sid],
        check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    doc["description"] = ("A harbour drawn in plotter mode with draw_paths and "
                          "generate_svg, looked at, signed, named and saved: the "
                          "demo atelierd replays with /demo drawing, no LLM "
                          "provider needed. Recorded by "
                          "conf/cassettes/record-drawing.py.")
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
    d.stop()


if __name__ == "__main__":
    main()
