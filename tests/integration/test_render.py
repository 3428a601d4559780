#!/usr/bin/env python3
"""render_scene end to end: the real atelierd with its render farm (real
worker processes, POSIX shared memory), the scene and render plugins, over
raw JSON-RPC; and the agent path with the fake provider.

Checks the seed's defaults and error messages, the arguments, progress
events with previews, determinism (the same call gives the same image, to
the byte), a worker SIGKILLed mid-render, a cancelled run and a timed-out
call stopping the workers, the daemon killed mid-render (workers go with
it, nothing is left in /dev/shm), and the image reaching the model.

Run by `make check` (ATL_TEST_BUILDDIR, ATL_TEST_SRCDIR). Output: "ok N -"
or "not ok N -" lines, "#" diagnostics, a final "P passed, F failed".
Standard library only.
"""

import base64
import json
import os
import signal
import struct
import sys
import time

from atltest import BUILDDIR, KEY, TMP, Checks, Daemon, Fake, run_checks

SCENE = {
    "camera": {"center": [0, 1.5, 6], "look_at": [0, 0.8, 0], "vfov": 40},
    "shapes": [
        {"id": "ball", "type": "sphere",
         "properties": {"center": [0, 1, 0], "radius": 1,
                        "material": {"type": "lambertian",
                                     "albedo": [0.8, 0.3, 0.2]}}},
        {"id": "floor", "type": "quad",
         "properties": {"corner": [-5, 0, -5], "u": [0, 0, 10],
                        "v": [10, 0, 0]}},
    ],
    "lights": [
        {"id": "lamp", "type": "area_quad_light",
         "properties": {"corner": [-1, 4, -1], "u": [2, 0, 0],
                        "v": [0, 0, 2], "emission": [6, 6, 6]}},
    ],
}


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG: %r" % data[:8]
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def image(d, image_id):
    r = d.rpc("image.get", {"id": image_id})
    return base64.b64decode(r["data"])


def call(d, sid, tool, args=None, timeout=20):
    return d.rpc("tool.call", {"session": sid, "name": tool,
                               "arguments": args or {}}, timeout)


def scene_session(d, scene=None):
    sid = d.session()
    r = call(d, sid, "import_scene", {"scene": scene or SCENE})
    assert r["success"], r
    return sid


def render_info(d):
    return d.rpc("daemon.info", {})["render"]


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.01)
    raise AssertionError("timed out waiting for " + what)


def alive(pid):
    """Whether pid is a process that has not exited. A zombie has: once
    atelierd is gone its workers are reparented to PID 1, which may take
    seconds to reap them (this machine's PID 1 takes 1 to 2 s; CI's once
    took over 2 s, though the workers had exited within 30 ms)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


# render_scene alone: live previews (test_preview.py) would add jobs to the
# farm and events to the sessions that these checks count.
RENDER = "[render]\nworkers = 2\npreviews = no\n"


def shm_segments():
    return sorted(n for n in os.listdir("/dev/shm")
                  if n.startswith("atelier-render-"))


def rendering_daemon(name):
    """A daemon of its own, busy with a long render started by a run;
    returns it, the session and the workers' pids."""
    d = Daemon(name, RENDER)
    sid = scene_session(d)
    pids = render_info(d)["workers"]
    after = d.events(sid)[-1]["seq"]
    d.rpc("session.send", {"session": sid,
                           "text": '/render_scene {"samples": 4096}'})
    wait_for(lambda: any(e["type"] == "render.progress"
                         for e in d.events(sid, after)), 20, "a preview")
    return d, sid, pids


# ---------------------------------------------------------------- checks

CHECKS = Checks()
check = CHECKS.add


@check("the farm runs render.workers worker processes, children of atelierd")
def _(ctx):
    info = render_info(ctx["d"])
    assert info["running"] is True, info
    assert len(info["workers"]) == 2, info
    for pid in info["workers"]:
        with open("/proc/%d/stat" % pid) as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        assert ppid == ctx["d"].proc.pid, (pid, ppid)
    # The packet kernel: AVX-512 exactly where it was built and the CPU
    # has the x86-64-v4 features (render/kernel.h).
    with open("/proc/cpuinfo") as f:
        flags = next(line for line in f if line.startswith("flags")).split()
    v4 = all(x in flags for x in ("avx512f", "avx512bw", "avx512cd",
                                  "avx512dq", "avx512vl"))
    # Built: configure's conditional left the kernel's flag in force (a
    # line of the generated Makefile, commented out when it is not).
    with open(os.path.join(BUILDDIR, "Makefile")) as f:
        built = any("-DATL_RENDER_AVX512" in line and
                    not line.startswith("#") for line in f)
    asked_default = os.environ.get("ATELIER_RENDER_KERNEL") == "default"
    assert info["kernel"] in ("avx512", "avx2", "sse2", "generic"), info
    assert (info["kernel"] == "avx512") == (v4 and built
                                            and not asked_default), \
        (info["kernel"], v4, built)


@check("ATELIER_RENDER_KERNEL=default: the daemon and its workers keep to "
       "the default kernel, and the picture is the same")
def _(ctx):
    d = Daemon("render-kernel", RENDER,
               env={"ATELIER_RENDER_KERNEL": "default"})
    try:
        info = render_info(d)
        assert info["kernel"] != "avx512", info
        for pid in info["workers"]:
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
            assert b"ATELIER_RENDER_KERNEL=default" in env, (pid, env)
        args = {"width": 48, "height": 36, "samples": 8}
        images = []
        for dm in (d, ctx["d"]):
            sid = scene_session(dm)
            r = call(dm, sid, "render_scene", args)
            assert r["success"], r
            images.append(image(dm, r["images"][0]["id"]))
        assert images[0] == images[1]
    finally:
        d.stop()


@check("an empty scene: the seed's error, word for word")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    r = call(d, sid, "render_scene")
    assert r == {"success": False,
                 "error": "Cannot render empty scene - add shapes first"}, r
    # Lights alone are still nothing to see.
    call(d, sid, "create_light", {"id": "l", "type": "point",
                                  "properties": {"center": [0, 3, 0],
                                                 "emission": [5, 5, 5]}})
    r = call(d, sid, "render_scene")
    assert r["error"] == "Cannot render empty scene - add shapes first", r


@check("bad arguments are refused with what was wrong and what is right")
def _(ctx):
    d = ctx["d"]
    sid = scene_session(d)
    for args, words in [({"width": 8}, ["/width", "16"]),
                        ({"height": 5000}, ["/height", "1920"]),
                        ({"samples": 0}, ["/samples", "1"]),
                        ({"quality": "ultra"}, ["/quality", "draft", "high"]),
                        ({"camera": {"vfov": 200}}, ["/camera/vfov", "180"]),
                        ({"max_seconds": 0}, ["/max_seconds", "0"]),
                        ({"max_seconds": -2}, ["/max_seconds", "-2"]),
                        ({"noise_threshold": 2}, ["/noise_threshold", "1"]),
                        ({"noise_threshold": -0.1},
                         ["/noise_threshold", "0"]),
                        ({"filter": "lanczos"},
                         ["/filter", "box", "gaussian", "blackman-harris"]),
                        ({"filter_width": 0.1}, ["/filter_width", "0.5"]),
                        ({"denoise": "yes"}, ["/denoise", "boolean"]),
                        ({"colour": 1}, ["colour"])]:
        r = call(d, sid, "render_scene", args)
        assert r["success"] is False, (args, r)
        for w in words:
            assert w in r["error"], (args, w, r["error"])
    # A camera the tracer cannot use: the message names the field.
    r = call(d, sid, "render_scene",
             {"camera": {"center": [0, 0.8, 0], "look_at": [0, 0.8, 0]}})
    assert r["success"] is False and "look_at" in r["error"], r


@check("the defaults: 400x300 at 500 samples, a PNG, previews on the way")
def _(ctx):
    d = ctx["d"]
    # The ball alone under the sky: most paths end at the second vertex,
    # so the full 500 samples stay quick under the sanitizers too.
    sid = scene_session(d, {"camera": SCENE["camera"],
                            "shapes": SCENE["shapes"][:1]})
    after = d.events(sid)[-1]["seq"]
    r = call(d, sid, "render_scene", timeout=300)
    assert r["success"] is True, r
    res = r["result"]
    assert (res["width"], res["height"], res["samples_per_pixel"]) == \
        (400, 300, 500), res
    assert res["shape_count"] == 1 and res["light_count"] == 0, res
    assert res["render_time_ms"] > 0 and res["paths_per_second"] > 0, res
    # Adaptive sampling: the sky stops early, the ball's edges go on.
    assert res["noise_threshold"] > 0, res
    assert 16 <= res["samples_min"] < res["samples_max"] <= 500, res
    assert res["samples_min"] <= res["samples_mean"] <= res["samples_max"]
    assert 0 < res["noise"] < 1, res
    assert 0 <= res["pixels_above_threshold"] <= 1, res
    assert res["stopped_by"] in ("samples", "noise_threshold"), res
    assert res["denoised"] is False, res
    assert len(r["images"]) == 1 and r["images"][0]["mime"] == "image/png"
    png = image(d, r["images"][0]["id"])
    assert png_size(png) == (400, 300)
    fin = [e["data"] for e in d.events(sid, after)
           if e["type"] == "tool.finished"][-1]
    assert fin["images"] == [r["images"][0]["id"]], fin
    ctx["default_ms"] = res["render_time_ms"]
    # With adaptive sampling the ball alone can be done before the first
    # preview is due (250 ms): every pixel's 500 samples bring previews.
    after = d.events(sid)[-1]["seq"]
    r = call(d, sid, "render_scene", {"noise_threshold": 0}, timeout=300)
    assert r["success"] is True, r
    assert r["result"]["samples_min"] == 500, r
    ev = d.events(sid, after)
    prog = [e["data"] for e in ev if e["type"] == "render.progress"]
    assert prog, [e["type"] for e in ev]
    fr = [p["fraction"] for p in prog]
    assert fr == sorted(fr) and 0 < fr[0] and fr[-1] < 1, fr
    assert all(p["tool"] == "render_scene" and p["passes"] > 1 for p in prog)
    assert png_size(image(d, prog[-1]["image"])) == \
        (prog[-1]["width"], prog[-1]["height"])


@check("the same call gives the same image, byte for byte; draft differs")
def _(ctx):
    d = ctx["d"]
    sid = scene_session(d)
    a = call(d, sid, "render_scene", {"width": 120, "height": 90,
                                      "samples": 12})
    b = call(d, sid, "render_scene", {"width": 120, "height": 90,
                                      "samples": 12})
    assert a["images"][0]["id"] == b["images"][0]["id"], (a, b)
    c = call(d, sid, "render_scene", {"quality": "draft", "width": 120,
                                      "height": 90})
    assert c["result"]["samples_per_pixel"] == 16, c
    assert c["images"][0]["id"] != a["images"][0]["id"]
    ctx["small"] = a["images"][0]["id"]


@check("denoise: true through the daemon: a denoised picture, the first previews too")
def _(ctx):
    d = ctx["d"]
    sid = scene_session(d)
    after = d.events(sid)[-1]["seq"]
    # 1024 samples: long enough (about 1 s with the AVX-512 kernel) for
    # previews to come, the first at 250 ms; 256 took 244 ms and none.
    r = call(d, sid, "render_scene", {"denoise": True, "width": 160,
                                      "height": 120, "samples": 1024,
                                      "noise_threshold": 0}, timeout=120)
    assert r["success"] is True, r
    res = r["result"]
    assert res["denoised"] is True, res
    assert res["samples_min"] == res["samples_max"] == 1024, res
    assert png_size(image(d, r["images"][0]["id"])) == (160, 120)
    prog = [e["data"] for e in d.events(sid, after)
            if e["type"] == "render.progress"]
    # The first preview and those of the first passes (under 32 samples a
    # pixel) are denoised; the later ones, which read clearly raw, are
    # not, so that denoising does not take the workers' CPU.
    assert prog and prog[0]["denoised"] is True, prog
    assert all(p["denoised"] is (p["samples_done"] < 32)
               for p in prog[1:]), prog
    # Draft quality denoises by default, and denoise: false turns it off.
    a = call(d, sid, "render_scene", {"quality": "draft", "width": 64,
                                      "height": 48})
    assert a["result"]["denoised"] is True, a
    b = call(d, sid, "render_scene", {"quality": "draft", "width": 64,
                                      "height": 48, "denoise": False})
    assert b["result"]["denoised"] is False, b


@check("one sample a pixel gives no noise estimate: noise is null, never 0")
def _(ctx):
    d = ctx["d"]
    sid = scene_session(d)
    r = call(d, sid, "render_scene", {"samples": 1, "width": 64,
                                      "height": 48})
    assert r["success"] is True, r
    res = r["result"]
    assert res["noise"] is None, res
    assert res["samples_min"] == res["samples_max"] == 1, res
    r = call(d, sid, "render_scene", {"samples": 4, "width": 64,
                                      "height": 48})
    assert r["result"]["noise"] > 0, r


@check("max_seconds ends a long render in time, with what it has")
def _(ctx):
    d = ctx["d"]
    sid = scene_session(d)
    t0 = time.monotonic()
    r = call(d, sid, "render_scene", {"width": 320, "height": 240,
                                      "samples": 4096, "noise_threshold": 0,
                                      "max_seconds": 0.5}, timeout=60)
    took = time.monotonic() - t0
    assert r["success"] is True, r
    res = r["result"]
    assert res["stopped_by"] == "time_budget", res
    assert 500 <= res["render_time_ms"] < 1500, res
    assert took < 3, "the call took %.2f s" % took
    assert 1 <= res["samples_min"] and res["samples_max"] < 4096, res
    assert png_size(image(d, r["images"][0]["id"])) == (320, 240)


@check("a camera override changes the picture, not the scene's camera")
def _(ctx):
    d = ctx["d"]
    sid = scene_session(d)
    before = d.rpc("session.get", {"session": sid})["document"]["scene"]
    r = call(d, sid, "render_scene", {"width": 120, "height": 90,
                                      "samples": 12,
                                      "camera": {"center": [4, 3, 4]}})
    assert r["success"], r
    assert r["images"][0]["id"] != ctx["small"]
    after = d.rpc("session.get", {"session": sid})["document"]["scene"]
    assert after["camera"] == before["camera"]


@check("a worker SIGKILLed mid-render: replaced, and the image is unchanged")
def _(ctx):
    d = ctx["d"]
    sid = scene_session(d)
    # 256 samples, every one (noise_threshold 0): about a second here, so
    # that a preview (the first comes after 250 ms) always precedes the end;
    # at 64 (0.26 s on an idle machine), or with adaptive sampling (0.57 s),
    # the render could finish before any preview, and the check waited for
    # one in vain.
    args = {"width": 320, "height": 240, "samples": 256,
            "noise_threshold": 0}
    ref = call(d, sid, "render_scene", args)["images"][0]["id"]
    old = render_info(d)
    after = d.events(sid)[-1]["seq"]
    import threading
    out = {}
    t = threading.Thread(target=lambda: out.update(
        r=call(d, sid, "render_scene", args)))
    t.start()
    wait_for(lambda: any(e["type"] == "render.progress"
                         for e in d.events(sid, after)), 20, "a preview")
    victim = old["workers"][0]
    os.kill(victim, signal.SIGKILL)
    t.join(60)
    r = out["r"]
    assert r["success"], r
    assert r["images"][0]["id"] == ref, "the picture changed"
    new = render_info(d)
    assert new["restarts"] >= old["restarts"] + 1, (old, new)
    assert victim not in new["workers"], new
    wait_for(lambda: all(p > 0 and alive(p) for p in
                         render_info(d)["workers"]), 5, "the new worker")


@check("cancelling the run stops a render within a second; the farm is idle")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    fake.script([{"tool_calls": [{"name": "render_scene",
                                  "arguments": {"width": 800, "height": 600,
                                                "samples": 4096}}]},
                 {"text": "never asked"}])
    sid = scene_session(d)
    after = d.events(sid)[-1]["seq"]
    d.rpc("session.send", {"session": sid, "text": "render it"})
    wait_for(lambda: any(e["type"] == "render.progress"
                         for e in d.events(sid, after)), 20, "a preview")
    t0 = time.monotonic()
    assert d.rpc("session.cancel", {"session": sid}) == {"cancelled": True}
    ev = d.follow(sid, after, timeout=10)
    took = time.monotonic() - t0
    assert ev[-1]["type"] == "run.cancelled", [e["type"] for e in ev]
    assert took < 1.0, "the run ended %.2f s after the cancel" % took
    fin = [e["data"] for e in ev if e["type"] == "tool.finished"]
    assert fin and fin[0]["success"] is False, fin
    assert "cancelled" in fin[0]["error"], fin
    assert render_info(d)["active_jobs"] == 0


@check("the image goes to the model as an image part")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    fake.script([{"tool_calls": [{"name": "render_scene",
                                  "arguments": {"quality": "draft",
                                                "width": 64, "height": 48}}]},
                 {"text": "I see a red ball."}])
    sid = scene_session(d)
    ev = d.run(sid, "look", timeout=60)
    assert ev[-1]["type"] == "run.completed", [e["type"] for e in ev]
    reqs = fake.requests()
    second = json.dumps(reqs[-1]["body"])
    assert "image_url" in second and "data:image/png;base64," in second


@check("a timed-out render stops its workers within 200 ms")
def _(ctx):
    d = ctx["short"]
    sid = scene_session(d)
    t0 = time.monotonic()
    r = call(d, sid, "render_scene", {"width": 800, "height": 600,
                                      "samples": 4096})
    assert r["success"] is False and "timed out" in r["error"], r
    assert time.monotonic() - t0 < 5
    wait_for(lambda: render_info(d)["active_jobs"] == 0, 0.2,
             "the job to leave the farm")


@check("max_seconds beyond the call's time limit: the error says both")
def _(ctx):
    d = ctx["short"]
    sid = scene_session(d)
    r = call(d, sid, "render_scene", {"width": 32, "height": 24,
                                      "samples": 4, "max_seconds": 2})
    assert r["success"] is False, r
    for w in ("max_seconds", "2", "0.5", "time limit"):
        assert w in r["error"], (w, r["error"])


@check("render.workers = 0: render_scene says rendering is unavailable")
def _(ctx):
    d = Daemon("render-off", "[render]\nworkers = 0\n")
    try:
        r = render_info(d)
        assert r["running"] is False and "workers" not in r, r
        sid = scene_session(d)
        r = call(d, sid, "render_scene", {"quality": "draft"})
        assert r["success"] is False and "not available" in r["error"], r
    finally:
        d.stop()


@check("atelierd SIGKILLed mid-render: its workers go too, /dev/shm is clean")
def _(ctx):
    before = shm_segments()
    d, sid, pids = rendering_daemon("render-kill")
    d.kill()
    wait_for(lambda: not any(alive(p) for p in pids), 2,
             "the workers to exit")
    assert shm_segments() == before, shm_segments()
    # The restarted daemon renders, and says the last run was interrupted.
    d2 = Daemon("render-kill", RENDER, data_dir=d.data)
    try:
        r = call(d2, sid, "render_scene", {"quality": "draft", "width": 64,
                                           "height": 48})
        assert r["success"], r
        types = [e["type"] for e in d2.events(sid)]
        assert "run.interrupted" in types, types
    finally:
        d2.stop()


@check("SIGTERM during a render: atelierd and its workers exit promptly")
def _(ctx):
    d, _, pids = rendering_daemon("render-term")
    t0 = time.monotonic()
    d.proc.terminate()
    assert d.proc.wait(timeout=10) == 0
    assert time.monotonic() - t0 < 3, "took %.1f s" % (time.monotonic() - t0)
    assert not any(alive(p) for p in pids)


def main():
    fake = Fake()
    conf = (RENDER +
            "[agent]\nprovider = fake\n"
            "[provider.fake]\ntype = openai\nbase_url = %s\n"
            "api_key_env = FAKE_LLM_KEY\nmodels = fake-model\n" % fake.url)
    ctx = {"fake": fake,
           "d": Daemon("render", conf, env={"FAKE_LLM_KEY": KEY}),
           "short": Daemon("render-short",
                           RENDER +
                           "[tools]\nlong_timeout_ms = 500\n")}
    passed, failed = run_checks(CHECKS, ctx)
    for d in (ctx["d"], ctx["short"]):
        d.stop()
    # Workers write to the daemon's standard error, so a sanitizer's report
    # from either lands in a daemon.log (the ASan build runs this too).
    reports = []
    for name in sorted(os.listdir(TMP)):
        log = os.path.join(TMP, name, "daemon.log")
        if os.path.exists(log):
            with open(log, errors="replace") as f:
                reports += ["%s: %s" % (name, line.strip()) for line in f
                            if "Sanitizer" in line or "runtime error:" in line]
    n = len(CHECKS) + 1
    if reports:
        print("not ok %d - no sanitizer report from atelierd or its workers" % n)
        for r in reports[:10]:
            print("# " + r)
        failed += 1
    else:
        print("ok %d - no sanitizer report from atelierd or its workers" % n)
        passed += 1
    print("# render_scene defaults (400x300, 500 spp) took %s ms"
          % ctx.get("default_ms", "?"))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
