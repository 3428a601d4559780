#!/usr/bin/env python3
"""The drawing tools through a real atelierd (bench/README.md, drawing):

  1. draw_paths with 1,000 paths, acknowledged (committed): the time from
     sending tool.call to its answer, on a session that grows by 1,000
     strokes a call, for CALLS calls; p50 and max;
  2. the same session carried on to 50,000 strokes: every call's time
     (the last ten's median and the worst) and atelierd's RSS growth;
  3. view_canvas on that canvas, right after the last draw_paths (the
     canvas's raster and PNG are cached) and after a restart (cold);
  4. generate_svg: a 1,000-path spiral, the whole round trip with the
     sandbox's start; median of ROUNDS;
  5. view_canvas on a paint canvas of 10,000 mixed paths (as
     bench/drawing-core draws from nothing), drawn 1,000 a call: right
     after the last call, and after a restart (the canvas is brought back
     from its kept image, the session loaded from the store).

  bench/drawing-daemon.py BUILD_DIR [ROUNDS]

Standard library only; the client is a plain JSON-RPC socket.
"""

import math
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "integration"))
from atltest import Conn  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
TMP = tempfile.mkdtemp(prefix="atl-drawbench.")


def start(data=None):
    sock_dir = os.path.join(TMP, "run")
    conf = os.path.join(TMP, "atelierd.conf")
    with open(conf, "w") as f:
        f.write("")
    proc = subprocess.Popen(
        [os.path.join(BUILD, "atelierd"), "--foreground", "--config", conf,
         "--socket-dir", sock_dir, "--data-dir",
         data or os.path.join(TMP, "data"), "--plugin-dir",
         os.path.join(BUILD, "plugins", ".libs"), "--log-level", "warn"],
        stderr=open(os.path.join(TMP, "daemon.log"), "a"))
    sock = os.path.join(sock_dir, "api.sock")
    for _ in range(200):
        try:
            c = Client(sock)
            c.call("daemon.info", {})
            return proc, c
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("atelierd did not start")


class Client(Conn):
    """atltest's api.sock connection, and a timed tool call."""

    def tool(self, sid, name, args):
        t0 = time.perf_counter()
        r = self.call("tool.call", {"session": sid, "name": name,
                                    "arguments": args})
        ms = (time.perf_counter() - t0) * 1000
        if not r["success"]:
            raise RuntimeError(r["error"])
        return r, ms


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def paths_1000(rng):
    """1,000 paths of a pen drawing: short hatching lines, polylines and
    curves near a centre, the kinds draw_paths takes (plotter mode)."""
    out = []
    for i in range(1000):
        cx, cy = 40 + rng.random() * 720, 40 + rng.random() * 520

        def p():
            return {"x": round(cx + rng.uniform(-30, 30), 2),
                    "y": round(cy + rng.uniform(-30, 30), 2)}
        k = i % 4
        if k == 0:
            out.append({"type": "line", "points": [p(), p()]})
        elif k == 1:
            out.append({"type": "polyline", "points": [p() for _ in range(6)]})
        elif k == 2:
            out.append({"type": "cubic", "points": [p(), p(), p(), p()]})
        else:
            a, b = p(), p()
            out.append({"type": "svg", "d": "M %s %s Q %s %s %s %s" % (
                a["x"], a["y"], cx, cy, b["x"], b["y"])})
    return out


COLORS = ["#1a1a2e", "#e94560", "#7b68ee", "#4ecdc4", "#ffd93d",
          "#ff6b6b", "#4ade80", "#3b82f6", "#f97316"]


def paint_1000(rng, base):
    """1,000 short paint paths near a centre each (lines, polylines,
    curves, arcs), widths 1-12, opacities 0.3-1: drawing-core's mix."""
    out = []
    for i in range(1000):
        cx, cy = 60 + rng.random() * 680, 60 + rng.random() * 480

        def p():
            return "%.2f %.2f" % (cx + rng.uniform(-38, 38),
                                  cy + rng.uniform(-28, 28))
        k = (base + i) % 5
        if k == 0:
            d = "M %s L %s" % (p(), p())
        elif k == 1:
            d = "M %s" % p() + "".join(" l%.2f,%.2f" % (
                rng.uniform(-20, 20), rng.uniform(-20, 20)) for _ in range(7))
        elif k == 2:
            d = "M %s Q %s %s T %s" % (p(), p(), p(), p())
        elif k == 3:
            d = "M %s C %s %s %s" % (p(), p(), p(), p())
        else:
            d = "M %s a%.1f %.1f %.0f 0 1 %.1f %.1f" % (
                p(), 10 + rng.random() * 20, 10 + rng.random() * 20,
                rng.random() * 90, rng.uniform(-30, 30), rng.uniform(-30, 30))
        out.append({"type": "svg", "d": d, "color": COLORS[i % 9],
                    "stroke_width": 1 + (i % 12),
                    "opacity": round(0.3 + 0.7 * rng.random(), 2)})
    return out


SPIRAL = """paths = []
cx, cy = canvas_width / 2, canvas_height / 2
for i in range(1000):
    t = i * 0.03
    r = 4 + t * 9
    paths.append(line(cx + r * math.cos(t), cy + r * math.sin(t),
                      cx + (r + 0.27) * math.cos(t + 0.03),
                      cy + (r + 0.27) * math.sin(t + 0.03)))
output_paths(paths)
"""


def main():
    print("machine: %d cores, %s; rounds=%d" % (
        os.cpu_count(), open("/proc/cpuinfo").read().split(
            "model name")[1].split("\n")[0].strip(": "), ROUNDS))
    rng = random.Random(7)
    proc, c = start()
    try:
        # 4. generate_svg first, on a fresh session.
        sid = c.call("session.create", {})["id"]
        c.tool(sid, "generate_svg", {"code": SPIRAL})  # warm the page cache
        gen = []
        for _ in range(ROUNDS):
            sid = c.call("session.create", {})["id"]
            r, ms = c.tool(sid, "generate_svg", {"code": SPIRAL})
            assert r["result"]["drawn"] == 1000, r["result"].get("refused")
            gen.append(ms)
        # 1 and 2. draw_paths, 1,000 at a time, to 50,000 strokes.
        sid = c.call("session.create", {})["id"]
        batches = [paths_1000(rng) for _ in range(5)]
        rss0 = rss_kb(proc.pid)
        times = []
        for i in range(50):
            r, ms = c.tool(sid, "draw_paths", {"paths": batches[i % 5]})
            assert r["result"]["drawn"] == 1000
            times.append(ms)
        rss1 = rss_kb(proc.pid)
        # 3. view_canvas, warm.
        warm = [c.tool(sid, "view_canvas", {})[1] for _ in range(ROUNDS)]
        # 5. a paint canvas of 10,000 mixed paths.
        psid = c.call("session.create", {})["id"]
        c.tool(psid, "new_canvas", {"mode": "paint"})
        for k in range(10):
            r, _ = c.tool(psid, "draw_paths", {"paths": paint_1000(rng, k)})
            assert r["result"]["drawn"] == 1000, r["result"].get("refused")
        pwarm = [c.tool(psid, "view_canvas", {})[1] for _ in range(ROUNDS)]
    finally:
        proc.terminate()
        proc.wait()
    proc, c = start()
    try:
        # A restart empties the cache (8 sessions): cold each time.
        def cold_views(session, strokes):
            nonlocal proc, c
            out = []
            for _ in range(ROUNDS):
                proc.terminate()
                proc.wait()
                proc, c = start()
                r, ms = c.tool(session, "view_canvas", {})
                assert r["result"]["strokes_total"] == strokes
                out.append(ms)
            return out
        cold = cold_views(sid, 50000)
        pcold = cold_views(psid, 10000)
    finally:
        proc.terminate()
        proc.wait()

    first10 = times[:10]
    print("draw_paths, 1,000 paths a call (plotter; canvas from 0 to 10,000 "
          "strokes): p50 %.1f ms, max %.1f ms" % (
              statistics.median(first10), max(first10)))
    print("draw_paths, 1,000 paths a call, all 50 calls to 50,000 strokes: "
          "p50 %.1f ms, max %.1f ms; the last ten: p50 %.1f ms, max %.1f ms"
          % (statistics.median(times), max(times),
             statistics.median(times[-10:]), max(times[-10:])))
    print("atelierd RSS: %.1f MB before, %.1f MB at 50,000 strokes "
          "(+%.1f MB)" % (rss0 / 1024, rss1 / 1024, (rss1 - rss0) / 1024))
    print("view_canvas at 50,000 strokes: warm (cached) median %.1f ms; "
          "cold (after a restart) median %.1f ms" % (
              statistics.median(warm), statistics.median(cold)))
    print("view_canvas, paint canvas of 10,000 mixed paths: right after "
          "drawing median %.1f ms; after a restart median %.1f ms (min %.1f,"
          " max %.1f)" % (statistics.median(pwarm), statistics.median(pcold),
                          min(pcold), max(pcold)))
    print("generate_svg, 1,000-path spiral, round trip with the sandbox: "
          "median %.1f ms (min %.1f, max %.1f)" % (
              statistics.median(gen), min(gen), max(gen)))


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
