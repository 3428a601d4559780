#!/usr/bin/env python3
"""The drawing plugin end to end: the real atelierd with the drawing plugin
over raw JSON-RPC, and the agent path with the fake provider.

Checks draw_paths's strict intake (valid paths drawn, invalid ones listed
with their index and reason, clipped ones reported, a stringified array
told to send the array), that strokes reach the event log committed with
their call and only then, the pieces (done, save once, new canvas, names,
signature), the PNG the model gets, the canvas after a killed daemon, the
model's view in the system prompt, and generate_svg's sandbox: the code
draws and reads the existing strokes, and cannot open a socket, read the
data directory or the daemon's environment, write outside its tmpfs,
fork, or outlive its limits or the daemon.

Run by `make check` (ATL_TEST_BUILDDIR, ATL_TEST_SRCDIR). Output: "ok N -"
or "not ok N -" lines, "#" diagnostics, a final "P passed, F failed".
Standard library only.
"""

import base64
import os
import subprocess
import sys
import time

from atltest import KEY, Checks, Daemon, Fake, png_pixels, run_checks

LINE = {"type": "line", "points": [{"x": 100, "y": 100},
                                   {"x": 700, "y": 500}]}
ARC = {"type": "svg", "d": "M 300 300 C 350 250 450 350 500 300 "
       "A 50 50 0 1 1 600 300"}


def call(d, sid, tool, args=None, timeout=60):
    return d.rpc("tool.call", {"session": sid, "name": tool,
                               "arguments": args or {}}, timeout)


def ok(d, sid, tool, args=None):
    r = call(d, sid, tool, args)
    assert r["success"], (tool, args, r)
    return r


def fail(d, sid, tool, args=None):
    r = call(d, sid, tool, args)
    assert not r["success"], (tool, args, r)
    return r["error"]


def image_of(d, r):
    ids = [im["id"] for im in r.get("images", [])]
    assert len(ids) == 1, r
    got = d.rpc("image.get", {"id": ids[0]})
    assert got["mime"] == "image/png"
    return base64.b64decode(got["data"])


def canvas_ns(d, sid):
    return d.rpc("session.get", {"session": sid})["document"].get("canvas")


def events_of(d, sid, kind):
    return [e for e in d.events(sid) if e["type"] == kind]


CHECKS = Checks()
check = CHECKS.add


@check("draw_paths draws the valid paths and lists the invalid ones by "
       "index and reason, in one answer, with the canvas attached")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    r = ok(d, sid, "draw_paths", {"paths": [
        LINE, ARC, {"type": "svg", "d": "M10 10 L20 X"},
        {"type": "circle"},
        {"type": "line", "points": [{"x": -10, "y": 5}, {"x": 50, "y": 50}]}]})
    res = r["result"]
    assert res["drawn"] == 3 and res["ids"] == [1, 2, 3], res
    errs = {x["index"]: x["error"] for x in res["refused"]}
    assert errs[2] == ("path 2: d: unexpected 'X' at offset 11; expected a "
                       "number for y of 'L' (it takes 2: x y)"), errs
    assert "path 3: type \"circle\" is not one of" in errs[3], errs
    assert [c["index"] for c in res["clipped"]] == [4], res
    assert res["clipped"][0]["extent"]["x0"] == -10, res
    w, h, rows = png_pixels(image_of(d, r))
    assert (w, h) == (800, 600)
    # The line passes through (400, 300); a corner stays white.
    assert rows[300][400 * 3] < 100, rows[300][400 * 3:400 * 3 + 3]
    assert rows[5][5 * 3:5 * 3 + 3] == b"\xff\xff\xff"


@check("every refused: an error that lists each, and nothing changes")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    ok(d, sid, "draw_paths", {"paths": [LINE]})
    before = canvas_ns(d, sid)
    err = fail(d, sid, "draw_paths", {"paths": [
        {"type": "line", "points": [{"x": 1, "y": 2}]},
        {"type": "svg", "d": "M0 0 Q"}], "done": True})
    assert "Nothing was drawn: all 2 paths were refused, so the piece was " \
        "not marked done" in err, err
    assert "path 0: a line needs 2 points, got 1" in err, err
    assert canvas_ns(d, sid) == before


@check("paths sent as a JSON string: told to send the array itself")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    err = fail(d, sid, "draw_paths", {"paths": '[{"type": "line"}]'})
    assert "/paths: expected an array" in err, err
    assert "send the array itself, not a string" in err, err


@check("paint mode: colours, widths, opacity and brushes checked per path, "
       "with the value named; plotter mode says it ignores them")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    r = ok(d, sid, "draw_paths", {"paths": [dict(LINE, color="teal")]})
    assert "ignored" in r["result"]["style_ignored"], r
    ok(d, sid, "new_canvas", {"mode": "paint"})
    r = ok(d, sid, "draw_paths", {"paths": [
        dict(LINE, color="rose", stroke_width=12, opacity=0.5),
        dict(LINE, color="red"), dict(LINE, stroke_width=45),
        dict(LINE, opacity=-1), dict(LINE, brush="crayon"),
        dict(LINE, color="#12AB9f", brush="oil_round")]})
    res = r["result"]
    assert res["drawn"] == 2, res
    errs = [x["error"] for x in res["refused"]]
    assert "color \"red\" is not a palette name" in errs[0], errs
    assert "stroke_width 45 is out of range; it must be from 0.5 to 30" \
        in errs[1], errs
    assert "opacity -1 is out of range" in errs[2], errs
    assert "brush \"crayon\" is not one of" in errs[3], errs
    assert "style_ignored" not in res


@check("strokes reach the event log in the call's own commit "
       "(canvas.strokes before tool.finished), and a failed call adds none")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    ok(d, sid, "new_canvas", {"mode": "paint"})
    ok(d, sid, "draw_paths", {"paths": [dict(ARC, brush="oil_round",
                                             color="violet")]})
    fail(d, sid, "draw_paths", {"paths": [{"type": "nope"}]})
    ev = d.events(sid)
    kinds = [e["type"] for e in ev]
    strokes = [e for e in ev if e["type"] == "canvas.strokes"]
    assert len(strokes) == 1, kinds
    i = kinds.index("canvas.strokes")
    assert kinds[i + 1] == "tool.finished", kinds
    s = strokes[0]["data"]["strokes"][0]
    assert s["d"].startswith("M300 300 C350 250"), s
    assert s["color"] == "#7b68ee" and s["brush"] == "oil_round", s
    assert len(s["bristles"]) == 5, s
    # The same stroke, read again from the document, expands the same way.
    ok(d, sid, "draw_paths", {"paths": [], "done": True})
    again = events_of(d, sid, "canvas.strokes")
    assert len(again) == 1


@check("pieces: done with nothing drawn still marks the piece, an empty "
       "one is refused, a piece is saved once, new_canvas moves on")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    err = fail(d, sid, "mark_piece_done")
    assert "The canvas is empty" in err, err
    ok(d, sid, "draw_paths", {"paths": [LINE]})
    r = ok(d, sid, "draw_paths", {"paths": [], "done": True})
    assert r["result"]["done"] is True, r
    ok(d, sid, "mark_piece_done")
    ns = canvas_ns(d, sid)
    assert len(ns["pieces"]) == 1 and ns["pieces"][0]["done"], ns
    r = ok(d, sid, "new_canvas", {"mode": "paint"})
    assert r["result"]["saved_piece"] == 1 and r["result"]["piece"] == 2, r
    # A blank canvas only changes its mode: no empty piece is saved.
    r = ok(d, sid, "new_canvas", {"mode": "plotter"})
    assert r["result"]["saved_piece"] is None and r["result"]["piece"] == 2
    ns = canvas_ns(d, sid)
    assert [p["number"] for p in ns["pieces"]] == [1, 2], ns
    assert ns["pieces"][1]["mode"] == "plotter"
    kinds = [e["data"]["event"] for e in events_of(d, sid, "canvas.piece")]
    assert kinds == ["saved", "saved", "new", "new"], kinds


@check("name_piece trims, and refuses empty and overlong titles; "
       "sign_canvas signs inside the canvas")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    assert "empty (or only whitespace)" in fail(d, sid, "name_piece",
                                                {"title": "  \t "})
    assert "101 characters" in fail(d, sid, "name_piece",
                                    {"title": "é" * 101})
    r = ok(d, sid, "name_piece", {"title": "  Harbour at Dusk \n"})
    assert r["result"]["title"] == "Harbour at Dusk"
    for pos in ("bottom_left", "bottom_center", "bottom_right"):
        r = ok(d, sid, "sign_canvas", {"position": pos, "size": "large"})
        assert r["result"]["drawn"] == 8 and "clipped" not in r["result"], r
    assert canvas_ns(d, sid)["pieces"][0]["title"] == "Harbour at Dusk"


@check("view_canvas: read-only, counts by author, the highlight colour of "
       "the mode, and no namespace made for a session that never drew")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    r = ok(d, sid, "view_canvas")
    assert r["result"]["strokes_total"] == 0
    assert r["result"]["human_color"] == "blue (#0066cc)"
    assert canvas_ns(d, sid) is None
    ok(d, sid, "new_canvas", {"mode": "paint"})
    ok(d, sid, "draw_paths", {"paths": [LINE, ARC]})
    r = ok(d, sid, "view_canvas")
    assert r["result"]["by_agent"] == 2 and r["result"]["by_human"] == 0
    assert r["result"]["human_color"] == "rose (#e94560)"
    w, h, _ = png_pixels(image_of(d, r))
    assert (w, h) == (800, 600)


@check("generate_svg draws what the code outputs and gives it the "
       "existing strokes; refused paths and stdout come back")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    ok(d, sid, "draw_paths", {"paths": [LINE]})
    code = ("paths = []\n"
            "for i in range(1000):\n"
            "    t = i * 0.02\n"
            "    r = 5 + t * 12\n"
            "    paths.append(line(400 + r * math.cos(t), 300 + r * "
            "math.sin(t), 400 + r * math.cos(t + .02), 300 + r * "
            "math.sin(t + .02)))\n"
            "paths.append({'type': 'svg', 'd': 'M 0 0 Q'})\n"
            "print('existing', len(existing_strokes), "
            "existing_strokes[0]['d'])\n"
            "output_paths(paths)\n"
            "output_svg_paths(['M 10 10 l 5 5'])\n")
    r = ok(d, sid, "generate_svg", {"code": code})
    res = r["result"]
    assert res["drawn"] == 1001, {k: v for k, v in res.items() if k != "ids"}
    assert res["refused"][0]["index"] == 1000, res["refused"]
    assert "generated path 1000: d:" in res["refused"][0]["error"]
    assert res["stdout"] == "existing 1 M100 100 L700 500\n", res["stdout"]


@check("generate_svg: a Python error comes back with its line number; "
       "no output is an error that says what to call")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    err = fail(d, sid, "generate_svg", {"code": "x = 1\ny = 2\nz = nope\n"})
    assert "line 3: NameError: name 'nope' is not defined" in err, err
    err = fail(d, sid, "generate_svg", {"code": "x = 1\nif x\n"})
    assert "line 2: SyntaxError" in err, err
    err = fail(d, sid, "generate_svg", {"code": "print('hi')\n"})
    assert "output no paths" in err and "hi" in err, err


SANDBOX = [
    ("open a socket", "import socket\nsocket.socket()\n",
     "PermissionError"),
    ("reach the network",
     "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:1')\n",
     "Error"),
    ("fork", "import os\nos.fork()\n", "PermissionError"),
    ("run a program", "import subprocess\nsubprocess.run(['/bin/true'])\n",
     "PermissionError"),
    ("write outside its tmpfs", "open('/usr/lib/x', 'w')\n", "Error"),
    ("write its inputs", "open('/in/code.py', 'w')\n", "Error"),
    ("read /etc", "open('/etc/passwd')\n", "FileNotFoundError"),
    ("fill memory", "x = bytearray(1 << 30)\n", "MemoryError"),
    ("fill its tmpfs", "open('/tmp/big', 'wb').write(b'x' * (40 << 20))\n",
     "Error"),
    ("fill /dev/shm", "open('/dev/shm/big', 'wb').write(b'x' * (4 << 20))\n",
     "Error"),
    ("write /dev", "open('/dev/big', 'wb').write(b'x')\n", "Error"),
    ("write /usr/local", "open('/usr/local/x', 'w')\n", "Error"),
    ("make a user namespace",
     "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
     "if libc.unshare(0x10000000) != 0:\n"
     "    raise PermissionError(ctypes.get_errno(), 'unshare')\n", "Error"),
    ("mount", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
     "if libc.mount(b'none', b'/tmp', b'tmpfs', 0, None) != 0:\n"
     "    raise PermissionError(ctypes.get_errno(), 'mount')\n", "Error"),
]


@check("generate_svg's sandbox: the code cannot open a socket, reach the "
       "network, fork, run programs, write outside its tmpfs or its "
       "inputs, read /etc, or take more memory or disk than its limits")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    for what, code, want in SANDBOX:
        err = fail(d, sid, "generate_svg", {"code": code})
        assert "Your code failed: line" in err and want in err, (what, err)
    # Code that imitates bwrap's failure is still the code's failure.
    err = fail(d, sid, "generate_svg", {"code": (
        "import sys\nsys.stderr.write('bwrap: fake failure\\n')\n"
        "sys.exit(1)\n")})
    assert "Your code failed" in err and "could not make" not in err, err
    # It may write its own /tmp.
    r = ok(d, sid, "generate_svg", {"code": (
        "open('/tmp/x', 'w').write('M0 0 L9 9')\n"
        "output_svg_paths([open('/tmp/x').read()])\n")})
    assert r["result"]["drawn"] == 1


@check("generate_svg's sandbox: the code sees neither the data directory, "
       "nor the keys in the daemon's environment, nor the host's files")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    code = ("import os\n"
            "print(sorted(os.environ.items()))\n"
            "print(os.path.exists(%r), os.path.exists(%r))\n"
            "print(sorted(os.listdir('/')))\n"
            "print(os.getuid())\n"
            "output_svg_paths(['M0 0 L1 1'])\n" % (d.data, d.dir))
    out = ok(d, sid, "generate_svg", {"code": code})["result"]["stdout"]
    assert KEY not in out and "FAKE_LLM_KEY" not in out, out
    assert "False False" in out, out
    assert "'home'" not in out and "'etc'" not in out, out
    assert "\n65534\n" in out, out


@check("generate_svg's limits: an endless loop is stopped at the time "
       "limit, huge output is cut, and output past 16 MB is refused")
def _(ctx):
    # The time limit, lowered to 2 s, on a daemon of its own: the other
    # checks keep the real 30 s, however slow the machine.
    d2 = Daemon("drawing-limit", ctx["conf"], env={
        "FAKE_LLM_KEY": KEY, "ATELIER_DRAWING_TIME_LIMIT_S": "2"})
    sid = d2.session()
    t0 = time.monotonic()
    err = fail(d2, sid, "generate_svg", {"code": "while True:\n    pass\n"})
    took = time.monotonic() - t0
    assert "ran past its 2 s limit" in err, err
    assert took < 10, took
    d2.stop()
    d = ctx["d"]
    sid = d.session()
    r = ok(d, sid, "generate_svg", {"code": (
        "print('x' * 1000000)\noutput_svg_paths(['M0 0 L1 1'])\n")})
    assert r["result"]["stdout"].endswith("... (cut)"), r["result"]["stdout"][-50:]
    assert len(r["result"]["stdout"]) < 3000
    err = fail(d, sid, "generate_svg", {"code": (
        "d = 'M0 0' + ' L1 1' * 100000\n"
        "output_svg_paths([d] * 40)\n")})
    assert "more than 16 MB" in err, err


@check("generate_svg's sandbox dies with the daemon: a killed atelierd "
       "leaves no code running")
def _(ctx):
    conf = ctx["conf"]
    d2 = Daemon("drawing-kill", conf, env={"FAKE_LLM_KEY": KEY,
                                            "ATELIER_DRAWING_TIME_LIMIT_S":
                                            "20"})
    sid = d2.session()
    import threading
    marker = "atl_marker_%d" % os.getpid()
    def sleeper():
        try:
            call(d2, sid, "generate_svg", {"code": "# %s\nimport time\n"
                                           "time.sleep(15)\n" % marker},
                 timeout=30)
        except (OSError, ValueError):
            pass  # the daemon is killed under it
    t = threading.Thread(target=sleeper, daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if _running(marker):
            break
        time.sleep(0.05)
    assert _running(marker), "the sandbox never started"
    d2.kill()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _running(marker):
        time.sleep(0.05)
    assert not _running(marker), "the code outlived the daemon"


def _running(marker):
    """Whether a live (not zombie) sandbox runs: bwrap and the python it
    starts both carry the runner's path on their command lines, and no
    other check runs generate_svg meanwhile. marker is in the code, for
    a reader of ps."""
    del marker
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if b"/in/runner.py" in f.read():
                    return True
        except OSError:
            continue
    return False


@check("the canvas survives a killed daemon, and its picture is brought "
       "back from the kept image rather than drawn again; strokes drawn on "
       "it afterwards give the picture of a canvas drawn in one go")
def _(ctx):
    conf = ctx["conf"]
    d2 = Daemon("drawing-crash", conf, env={"FAKE_LLM_KEY": KEY})
    sid = d2.session()
    r = ok(d2, sid, "draw_paths", {"paths": [LINE, ARC]})
    drawn_id = r["images"][0]["id"]
    ok(d2, sid, "name_piece", {"title": "Kept"})
    data = d2.data
    d2.kill()
    d3 = Daemon("drawing-crash", conf, data_dir=data,
                env={"FAKE_LLM_KEY": KEY})
    r = ok(d3, sid, "view_canvas")
    assert r["result"]["strokes_total"] == 2 and r["result"]["title"] == \
        "Kept", r
    assert r["images"][0]["id"] == drawn_id, (r["images"], drawn_id)
    with open(d3.log) as f:
        assert "canvas brought back from its kept image: 2 of 2 strokes" in \
            f.read()
    third = {"type": "svg", "d": "M 100 500 Q 400 100 700 500"}
    after = ok(d3, sid, "draw_paths", {"paths": [third]})["images"][0]["id"]
    other = d3.session()
    once = ok(d3, other, "draw_paths",
              {"paths": [LINE, ARC, third]})["images"][0]["id"]
    assert after == once, (after, once)
    d3.stop()


@check("a kept picture behind the strokes (a human stroke adds none) is "
       "brought back and the newer strokes drawn on it; a kept image that is "
       "gone from the store, or made by other drawing code, is not used, and "
       "the canvas is drawn from nothing, the same")
def _(ctx):
    conf = ctx["conf"]
    d2 = Daemon("drawing-kept", conf, env={"FAKE_LLM_KEY": KEY})
    human = {"points": [{"x": 50, "y": 550}, {"x": 150, "y": 520},
                        {"x": 250, "y": 560}]}
    sid = d2.session()
    ok(d2, sid, "draw_paths", {"paths": [LINE, ARC]})
    ok(d2, sid, "add_human_stroke", human)
    raster = canvas_ns(d2, sid)["pieces"][-1]["raster"]
    assert raster["strokes"] == 2 and raster["version"] == 1, raster
    # The same canvas drawn in one go, for comparison.
    other = d2.session()
    ok(d2, other, "draw_paths", {"paths": [LINE, ARC]})
    ok(d2, other, "add_human_stroke", human)
    want = ok(d2, other, "view_canvas")["images"][0]["id"]
    data = d2.data
    d2.stop()

    def view_after_restart():
        d = Daemon("drawing-kept", conf, data_dir=data,
                   env={"FAKE_LLM_KEY": KEY})
        with open(d.log) as f:
            before = f.read().count("canvas brought back")
        got = ok(d, sid, "view_canvas")["images"][0]["id"]
        with open(d.log) as f:
            log = f.read()
        d.stop()
        return got, log, log.count("canvas brought back") - before

    got, log, brought = view_after_restart()
    assert got == want, (got, want)
    assert brought == 1 and \
        "canvas brought back from its kept image: 2 of 3 strokes" in log
    # view_canvas is read-only: the piece still names the 2-stroke image.
    # Made by other drawing code: not used.
    db = os.path.join(data, "atelier.db")
    subprocess.run(["sqlite3", db, "UPDATE doc_chunks SET text = replace("
                    "text, '\"version\":1,', '\"version\":0,'), hash = "
                    "zeroblob(32) WHERE session = '%s'" % sid], check=True)
    got, log, brought = view_after_restart()
    assert got == want and brought == 0, (got, want, brought)
    # Gone from the store: not used either.
    subprocess.run(["sqlite3", db, "DELETE FROM images"], check=True)
    got, log, brought = view_after_restart()
    assert got == want and brought == 0, (got, want, brought)


@check("the agent draws: the model's tool call is drawn, it gets the "
       "canvas as an image, and its system prompt describes the canvas")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    sid = d.session()
    fake.script([
        {"tool_calls": [{"name": "draw_paths", "arguments": {
            "paths": [LINE, ARC]}}]},
        {"tool_calls": [{"name": "name_piece", "arguments": {
            "title": "Two Lines"}}]},
        {"text": "Drawn."}])
    ev = d.run(sid, "draw two lines")
    assert ev[-1]["type"] == "run.completed", [e["type"] for e in ev]
    reqs = fake.requests()
    body = str(reqs[1]["body"])
    assert "image/png" in body or "image_url" in body, body[:500]
    fake.script([{"text": "ok"}])
    d.run(sid, "and now?")
    system = str(fake.requests()[-1]["body"])
    assert "Canvas: piece 1 \\\"Two Lines\\\", plotter mode, 2 strokes" in \
        system or 'Canvas: piece 1 "Two Lines", plotter mode, 2 strokes' in \
        system, system[:2000]


@check("generate_image: the request the real Gemini API takes (the key "
       "added by the host, images asked for), the image kept under its "
       "sanitised name and shown to the model; view_reference_image finds "
       "it; the key never reaches the log")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    sid = d.session()
    err = fail(d, sid, "view_reference_image")
    assert "no reference images yet" in err, err
    fake.script([{"text": "A red square.", "image": {
        "width": 32, "height": 24, "color": [200, 10, 10]}}])
    r = ok(d, sid, "generate_image", {"prompt": "a red square",
                                      "name": "red square!"})
    res = r["result"]
    assert res["name"] == "red_square_" and res["model_notes"] == \
        "A red square.", res
    w, h, rows = png_pixels(image_of(d, r))
    assert (w, h) == (32, 24) and rows[5][:3] == bytes([200, 10, 10])
    q = fake.requests()[-1]
    assert q["path"].endswith("/models/gemini-2.5-flash-image:"
                              "generateContent"), q["path"]
    assert q["body"]["generationConfig"]["responseModalities"] == \
        ["TEXT", "IMAGE"], q["body"]
    assert q["body"]["contents"][0]["parts"][0]["text"] == "a red square"
    ns = canvas_ns(d, sid)
    assert ns["references"][0]["name"] == "red_square_"
    fake.script([{"image": {"width": 8, "height": 8}}])
    ok(d, sid, "generate_image", {"prompt": "grey"})
    r = ok(d, sid, "view_reference_image", {"name": "red_square_"})
    assert r["result"]["available"] == ["reference-2", "red_square_"], r
    w, h, _ = png_pixels(image_of(d, r))
    assert (w, h) == (32, 24)
    err = fail(d, sid, "view_reference_image", {"name": "nope"})
    assert "No reference image named 'nope'. Available: 'reference-2', " \
        "'red_square_'" in err, err
    # A refused prompt and an answer without an image are errors that say so.
    fake.script([{"prompt_blocked": "SAFETY"}])
    err = fail(d, sid, "generate_image", {"prompt": "x"})
    assert "refused the prompt (blockReason SAFETY)" in err, err
    fake.script([{"text": "I cannot draw that.", "image": {"none": True}}])
    err = fail(d, sid, "generate_image", {"prompt": "y"})
    assert "No image was generated" in err and "I cannot draw that" in err, err
    fake.script([{"status": 429}])
    err = fail(d, sid, "generate_image", {"prompt": "z"})
    assert "HTTP 429" in err and "rate limited" in err, err
    with open(d.log) as f:
        assert KEY not in f.read()


@check("generate_image without a Gemini key: a clear error, no request")
def _(ctx):
    conf = ctx["conf"].replace("api_key_env = FAKE_LLM_KEY\nmodels = "
                               "gemini", "api_key_env = NO_SUCH_KEY\nmodels "
                               "= gemini")
    d2 = Daemon("drawing-nokey", conf, env={"FAKE_LLM_KEY": KEY})
    sid = d2.session()
    n = len(ctx["fake"].requests())
    err = fail(d2, sid, "generate_image", {"prompt": "a cat"})
    assert "needs a Gemini API key" in err and "GEMINI_API_KEY" in err, err
    assert len(ctx["fake"].requests()) == n
    d2.stop()


@check("/demo drawing replays the bundled cassette offline through the real "
       "tools: a signed, named, saved piece; an unknown demo lists the demos")
def _(ctx):
    d2 = Daemon("drawing-demo", "", env={"ATELIER_DRAWING_TIME_LIMIT_S": "20"})
    sid = d2.session()
    ev = d2.run(sid, "/demo drawing", timeout=60)
    assert ev[-1]["type"] == "run.completed", [e["type"] for e in ev]
    failed = [e["data"] for e in ev if e["type"] == "tool.finished" and
              not e["data"]["success"]]
    assert not failed, failed
    tools = [e["data"]["operation"]["tool"] for e in ev
             if e["type"] == "tool.finished"]
    assert tools == ["draw_paths", "generate_svg", "view_canvas",
                     "sign_canvas", "name_piece", "mark_piece_done"], tools
    piece = canvas_ns(d2, sid)["pieces"][0]
    assert piece["title"] == "Harbour at Noon" and piece["done"], piece
    assert len(piece["strokes"]) == 5 + 3 + 8, len(piece["strokes"])
    ev = d2.run(sid, "/demo nope")
    assert ev[-1]["type"] == "run.error", ev[-1]
    assert "there is no demo 'nope'; the demos are: scene, drawing, optics" in \
        ev[-1]["data"]["message"], ev[-1]
    d2.stop()


def main():
    fake = Fake()
    conf = ("[agent]\nprovider = fake\n"
            "[provider.fake]\ntype = openai\nbase_url = %s\n"
            "api_key_env = FAKE_LLM_KEY\nmodels = fake-model\n"
            "[provider.images]\ntype = gemini\nbase_url = %s\n"
            "api_key_env = FAKE_LLM_KEY\nmodels = gemini-2.5-flash\n"
            % (fake.url, fake.url))
    ctx = {"fake": fake, "conf": conf,
           "d": Daemon("drawing", conf, env={"FAKE_LLM_KEY": KEY})}
    passed, failed = run_checks(CHECKS, ctx)
    ctx["d"].stop()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
