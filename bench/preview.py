#!/usr/bin/env python3
"""Live previews (issue 21): how soon a change is on the page, and what
previews cost the tool calls.

    bench/preview.py [BUILD_DIR] [ROUNDS]

Against the real atelierd (render farm: one worker per core) with the
snowman of tests/data/scenes/snowman.json at the preview's 400x300:

1. Through the whole stack (scripts/atelier-stack: nginx, atelier-fcgi,
   atelierd), as the page sees it: from the answer of a tool call that
   changes the scene (POST /api/sessions/{id}/tools/update_shape) to the
   first "preview" event on the session's event stream, to that picture
   fetched (GET /api/previews/{id}.png: the first pixel the page can
   draw), and to the final Fast picture (the ceiling).
2. The tool calls with previews on and off: update_shape on the snowman
   in two patterns (PATTERNS: a model's turns of 5 calls, and a change
   every 50 ms), ROUNDS rounds of 40 calls each, alternating between two
   daemons (render.previews = yes / no) so that the machine's noise falls
   on both alike. Each call is answered over api.sock; the figures are
   the median round's p50 and p90.

3. The optical bench's preview (the Bench view), through the whole stack:
   from the answer of an optics_update (the prism's refIndex) on
   /demo optics's bench (a prism, a beam, a screen) to its one "preview"
   event, and to that picture (800x600) fetched.

Prints medians and ratios; bench/README.md keeps the figures.
BENCH_ONLY=turns (or stream) runs that pattern of part 2 alone;
BENCH_ONLY=optics runs part 3 alone, BENCH_ONLY=page part 1 alone.
"""

import contextlib
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
os.environ.setdefault("ATL_TEST_SRCDIR", SRC)
if len(sys.argv) > 1:
    os.environ["ATL_TEST_BUILDDIR"] = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))

from atltest import Conn, Daemon, Fake  # noqa: E402
from test_web import SSE, Stack  # noqa: E402

ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
ONLY = os.environ.get("BENCH_ONLY")
with open(os.path.join(SRC, "tests", "data", "scenes", "snowman.json")) as f:
    SNOWMAN = json.load(f)


def colour(i):
    """A different hat colour for each call: every call changes the scene."""
    return {"id": "hat", "updates": {"properties": {"material": {
        "type": "lambertian",
        "albedo": [0.1 + (i % 7) * 0.1, 0.1, 0.1 + (i % 5) * 0.1]}}}}


def ms(t):
    return round(t * 1000, 1)


@contextlib.contextmanager
def web_stack(name):
    """The whole stack (nginx, atelier-fcgi, atelierd) with a fake
    provider, stopped on the way out."""
    fake = Fake()
    stack = Stack(fake.url, name=name)
    try:
        yield stack
    finally:
        stack.proc.terminate()
        stack.proc.wait(timeout=30)
        fake.proc.terminate()


def page_latency(rounds):
    """Part 1: (first event, first picture, final) in ms, per round."""
    out = []
    with web_stack("bench-preview") as stack:
        sid = stack.session()
        st, _, env = stack.request(
            "POST", "/api/sessions/%s/tools/import_scene" % sid,
            {"scene": SNOWMAN})
        assert st == 200 and env["success"], env
        ev = SSE(stack, sid)
        # Let the import's own preview finish first.
        while not ev.until(("preview",))[-1]["data"]["data"]["final"]:
            pass
        for i in range(rounds):
            t0 = time.monotonic()
            st, _, env = stack.request(
                "POST", "/api/sessions/%s/tools/update_shape" % sid, colour(i))
            t_answer = time.monotonic()
            assert st == 200 and env["success"], env
            first = ev.until(("preview",))[-1]["data"]["data"]
            t_event = time.monotonic()
            st, _, png = stack.request(
                "GET", "/api/previews/%s.png" % first["image"], raw=True)
            t_pixel = time.monotonic()
            assert st == 200 and png[:4] == b"\x89PNG", st
            # The first denoised picture: the first that reads clearly.
            last, t_clear, clear_spp, pictures = first, None, 0, 1
            if first.get("denoised"):
                t_clear, clear_spp = t_event, first["samples"]
            while not last["final"]:
                last = ev.until(("preview",))[-1]["data"]["data"]
                pictures += 1
                if t_clear is None and last.get("denoised"):
                    t_clear, clear_spp = time.monotonic(), last["samples"]
            t_final = time.monotonic()
            out.append((ms(t_event - t_answer), ms(t_pixel - t_answer),
                        ms((t_clear or t_final) - t_answer),
                        ms(t_final - t_answer), first["samples"], clear_spp,
                        last["samples"], pictures, ms(t_answer - t0)))
            time.sleep(0.2)
        ev.close()
    return out


# /demo optics's bench (conf/cassettes/record.py).
BENCH = [
    {"name": "prism", "type": "Glass", "refIndex": 1.5,
     "path": [{"x": 200, "y": 100}, {"x": 400, "y": 100},
              {"x": 200, "y": 300}]},
    {"name": "beam", "type": "Beam", "p1": {"x": 80, "y": 160},
     "p2": {"x": 80, "y": 240}, "brightness": 0.5},
    {"name": "screen", "type": "Blocker", "p1": {"x": 180, "y": 20},
     "p2": {"x": 420, "y": 20}}]


def bench_latency(rounds):
    """Part 3: (preview event, picture fetched, the call itself) in ms,
    per round, and the picture's size in bytes."""
    out = []
    with web_stack("bench-preview-optics") as stack:
        sid = stack.session()
        for o in BENCH:
            st, _, env = stack.request(
                "POST", "/api/sessions/%s/tools/optics_add" % sid, o)
            assert st == 200 and env["success"], env
        ev = SSE(stack, sid)
        ev.until(("preview",))
        time.sleep(0.3)
        for i in range(rounds):
            t0 = time.monotonic()
            st, _, env = stack.request(
                "POST", "/api/sessions/%s/tools/optics_update" % sid,
                {"name": "prism", "set": {"refIndex": 1.4 + 0.01 * (i + 1)}})
            t_answer = time.monotonic()
            assert st == 200 and env["success"], env
            d = ev.until(("preview",))[-1]["data"]["data"]
            t_event = time.monotonic()
            assert d["view"] == "optics" and d["final"], d
            st, _, png = stack.request(
                "GET", "/api/previews/%s.png" % d["image"], raw=True)
            t_pixel = time.monotonic()
            assert st == 200 and png[:4] == b"\x89PNG", st
            out.append((ms(t_event - t_answer), ms(t_pixel - t_answer),
                        ms(t_answer - t0), len(png)))
            time.sleep(0.2)
        ev.close()
    return out


# How the calls come: (calls in a batch, pause after each call, pause
# after each batch, batches). "turns" is a model's: a turn's calls back to
# back, then the next turn 0.6 s later (real models take longer, so the
# previews of a turn overlap the next more here than they would). "stream"
# is a change every 50 ms without end: a preview is cut short by nearly
# every call, the worst case for what previews cost.
PATTERNS = {"turns": (5, 0.0, 0.6, 8), "stream": (1, 0.0, 0.05, 40)}


def tool_call_round(conn, sid, pattern, start):
    per, gap, pause, batches = PATTERNS[pattern]
    lat, i = [], start
    for _ in range(batches):
        for _ in range(per):
            t0 = time.monotonic()
            r = conn.call("tool.call", {"session": sid,
                                        "name": "update_shape",
                                        "arguments": colour(i)})
            lat.append(time.monotonic() - t0)
            assert r["success"], r
            i += 1
            time.sleep(gap)
        time.sleep(pause)
    lat.sort()
    return ms(lat[len(lat) // 2]), ms(lat[int(len(lat) * 0.9)])


def tool_calls(rounds, pattern):
    """Part 2: {on|off: [(p50, p90) per round]}."""
    daemons = {"on": Daemon("bench-on", "[log]\nlevel = warn\n"),
               "off": Daemon("bench-off", "[render]\npreviews = no\n"
                                          "[log]\nlevel = warn\n")}
    res = {"on": [], "off": []}
    try:
        conns, sids = {}, {}
        for k, d in daemons.items():
            conns[k] = Conn(d.sock)
            sids[k] = conns[k].call("session.create", {})["id"]
            assert conns[k].call("tool.call", {
                "session": sids[k], "name": "import_scene",
                "arguments": {"scene": SNOWMAN}})["success"]
        time.sleep(1)
        for r in range(rounds):
            order = ("on", "off") if r % 2 == 0 else ("off", "on")
            for k in order:
                res[k].append(tool_call_round(conns[k], sids[k], pattern,
                                              r * 40))
        made = daemons["on"].rpc("daemon.info", {})["render"]["previews"]
        return res, made
    finally:
        for d in daemons.values():
            d.stop()


def main():
    print("cores=%d rounds=%d scene=snowman 400x300 Fast" % (os.cpu_count(),
                                                             ROUNDS))
    if ONLY in (None, "optics"):
        rows = bench_latency(ROUNDS)
        for r in rows:
            print("bench: event %.1f ms, picture %.1f ms (the call itself "
                  "%.1f ms; %d bytes)" % r)
        med = [statistics.median(c) for c in zip(*rows)]
        print("MEDIAN bench: commit -> preview event %.1f ms, -> picture "
              "fetched %.1f ms" % tuple(med[:2]))
        if ONLY:
            return
    rows = page_latency(ROUNDS) if ONLY in (None, "page") else []
    for r in rows:
        print("page: event %.1f ms, first pixel %.1f ms, first denoised "
              "%.1f ms, final %.1f ms (first %d spp, denoised %d spp, final "
              "%d spp; %d pictures; the call itself %.1f ms)" % r)
    med = [statistics.median(c) for c in zip(*rows)] or [0, 0, 0, 0]
    if rows:
        print("MEDIAN page: commit -> first preview event %.1f ms, -> first "
              "pixel fetched %.1f ms, -> first denoised picture's event "
              "%.1f ms, -> Fast ceiling %.1f ms" % tuple(med[:4]))
    if ONLY == "page":
        return
    for pattern in PATTERNS:
        if ONLY and pattern != ONLY:
            continue
        res, made = tool_calls(ROUNDS, pattern)
        for k in ("on", "off"):
            print("%s, previews %s: p50 %s ms, p90 %s ms per round"
                  % (pattern, k, [x[0] for x in res[k]],
                     [x[1] for x in res[k]]))
        p50 = {k: statistics.median(x[0] for x in res[k]) for k in res}
        p90 = {k: statistics.median(x[1] for x in res[k]) for k in res}
        pairs = [a[0] / b[0] for a, b in zip(res["on"], res["off"])
                 if b[0] > 0]
        print("MEDIAN %s update_shape: p50 on %.2f ms, off %.2f ms (ratio "
              "%.2f, median pair %.2f); p90 on %.2f ms, off %.2f ms"
              % (pattern, p50["on"], p50["off"], p50["on"] / p50["off"],
                 statistics.median(pairs), p90["on"], p90["off"]))
        print("%s previews: %s" % (pattern, json.dumps(made)))


if __name__ == "__main__":
    main()
