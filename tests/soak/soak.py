#!/usr/bin/env python3
"""The chaos soak (issue 17): the real stack (nginx, atelier-fcgi, atelierd
and its render workers, started by scripts/atelier-stack, which restarts
the daemon and the bridge when they exit) under load for a while, with a
chaos loop that kill -9s atelierd, a render worker or the bridge at random
moments. Then everything settles and the soak checks what a user was
promised:

- every operation the server acknowledged (a session created, a tool call
  answered with its envelope, a message answered 202) is in the store
  exactly once; one whose answer was lost (a reset, a 502/503/504, a
  timeout) is "uncertain" and may be there once or not at all, never twice;
  a message refused with 429 is not there at all;
- every SSE reader, reconnecting with Last-Event-ID as a browser's
  EventSource does, saw every event of its session from its first one on,
  in order, with no gap and no repeat, each equal to the stored one;
- no process, zombie or descriptor leaked, and the memory stays flat.

    tests/soak/soak.py [--duration SECONDS] [--sessions N] [--seed N]
                       [--chaos MIN,MAX] [--rounds N]

Defaults: 600 s, 4 sessions (each user moves on to a new one every 60 to
120 operations), a random seed (printed, so a failing run can be
repeated), a kill every 2 to 8 s, 2 steady rounds after the chaos.
Python 3 standard library only; TAP-like output whose last line is
"N passed, M failed"; exit status 1 on any failure.
"""
import argparse
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
from atltest import (BUILDDIR, PROCS, SRCDIR, TMP, Checks, Fake,  # noqa: E402
                     free_port, run_checks)

import soaklib as sl  # noqa: E402 - the sibling module (processes, SSE, RPC)

STACK = os.path.join(SRCDIR, "scripts", "atelier-stack")
KEY = "sk-soak-test-SECRET"
MODEL = "claude-sonnet-4-5"
WORKERS = 2
# atelier-stack gives up after more than 5 restarts in a minute (a crash
# loop); the chaos loop keeps its daemon and bridge kills below that, so
# that the stack giving up can only mean restarts nobody asked for.
STACK_KILLS_PER_MINUTE = 4


class Stack:
    """scripts/atelier-stack on a free port, with the fake as the model."""

    def __init__(self, fake_url):
        self.data = os.path.join(TMP, "stack")
        self.port = free_port()
        conf = os.path.join(TMP, "atelierd.conf")
        with open(conf, "w") as f:
            f.write("[agent]\nprovider = fake\nqueue_max = 4\n"
                    "[render]\nworkers = %d\n"
                    "[provider.fake]\ntype = anthropic\nbase_url = %s\n"
                    "api_key_env = FAKE_LLM_KEY\nmodels = %s\n"
                    "timeout_ms = 10000\n" % (WORKERS, fake_url, MODEL))
        args = [STACK, "--build", BUILDDIR, "--data", self.data, "--port",
                str(self.port), "--config", conf,
                "--fcgi-arg", "--heartbeat-ms=2000"]
        self.out = open(os.path.join(TMP, "stack.out"), "w+")
        # SIGINT as a terminal leaves it (see test_web.py): a soak started
        # in the background would otherwise have it ignored, and the stack
        # could not trap the Ctrl-C the last checks send.
        self.proc = subprocess.Popen(
            args, stdout=self.out, stderr=subprocess.STDOUT,
            env=dict(os.environ, FAKE_LLM_KEY=KEY),
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        PROCS.append(self.proc)
        self.sock = os.path.join(self.data, "run", "api.sock")
        self.http = sl.Http(self.port, os.path.join(self.data, "store", "token"))
        deadline = time.monotonic() + 60
        while "atelier: ready at" not in self.log():
            assert self.proc.poll() is None, self.log()
            assert time.monotonic() < deadline, "the stack did not start: " + self.log()
            time.sleep(0.1)

    def log(self):
        self.out.seek(0)
        return self.out.read()

    def parts(self):
        """{"atelierd": pid, "atelier-fcgi": pid, "nginx": pid} of the
        stack's children (a part being restarted is missing)."""
        out = {}
        for pid in sl.children(self.proc.pid):
            name = sl.prog(pid)
            if name in ("atelierd", "atelier-fcgi", "nginx"):
                out[name] = pid
        return out

    def rpc(self, method, params, timeout=30):
        return sl.rpc(self.sock, method, params, timeout)


# ------------------------------------------------------------ the load


class Ledger:
    """Every operation a client tried, with what came of it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ops = []
        self.n = 0
        self.statuses = {}

    def next(self):
        with self.lock:
            self.n += 1
            return self.n

    def add(self, kind, outcome, status, **info):
        with self.lock:
            self.ops.append(dict(info, kind=kind, outcome=outcome, status=status))
            self.statuses[status] = self.statuses.get(status, 0) + 1

    def of(self, kind, outcome=None):
        return [o for o in self.ops if o["kind"] == kind and
                (outcome is None or o["outcome"] == outcome)]


def outcome_of(status, body, good):
    """ack when the server answered success with the expected body,
    rejected when it answered a refusal that certainly did nothing (429),
    else uncertain: the request may or may not have been carried out."""
    if status is not None and good(status, body):
        return "ack"
    if status == 429:
        return "rejected"
    return "uncertain"


def sphere(sid):
    return {"id": sid, "type": "sphere",
            "properties": {"center": [0, 0.5, 0], "radius": 0.5}}


class Driver(threading.Thread):
    """One session's user: direct tool calls (shapes and small renders,
    which run in the render workers), messages the fake answers with a tool
    call and text, and now and then a new session."""

    def __init__(self, stack, fake, ledger, sid, rng, stop, rotate=None):
        super().__init__(daemon=True)
        self.stack, self.fake, self.ledger = stack, fake, ledger
        self.sid, self.rng, self.stop = sid, rng, stop
        self.rotate = rotate and (lambda: rotate(self))

    def run(self):
        kinds = ["shape", "render", "message", "session"]
        left = self.rng.randint(60, 120)
        while not self.stop.is_set():
            kind = self.rng.choices(kinds, weights=[50, 15, 30, 5])[0]
            getattr(self, kind)()
            left -= 1
            if left == 0 and self.rotate:
                # On to a new session, as a user starts a new chat: a
                # session that grew for ever would make the load (and the
                # memory it needs) grow with the soak's length.
                left = self.rng.randint(60, 120)
                self.rotate()
            self.stop.wait(self.rng.uniform(0.05, 0.4))

    def tool(self, name, args, timeout=60):
        return self.stack.http.request(
            "POST", "/api/sessions/%s/tools/%s" % (self.sid, name), args, timeout)

    def shape(self):
        n = self.ledger.next()
        sid = "soak-%d" % n
        st, b = self.tool("create_shape", sphere(sid))
        out = outcome_of(st, b, lambda s, b: s == 200 and isinstance(b, dict) and
                         b.get("success") is True)
        if st == 200 and isinstance(b, dict) and b.get("success") is False:
            out = "error"  # ids are never reused: an error envelope is a defect
        self.ledger.add("shape", out, st, session=self.sid, marker=sid, body=b)

    def render(self):
        n = self.ledger.next()
        # The vertical field of view carries the call's number into its
        # tool.finished event, so the store can be searched for this call.
        vfov = round(30 + n / 1000.0, 3)
        args = {"width": 48, "height": 32, "samples": self.rng.choice([16, 32, 64]),
                "max_depth": 4, "camera": {"vfov": vfov}}
        st, b = self.tool("render_scene", args)
        # An error envelope is an answer too (an empty scene, or a tile
        # whose workers all died); the store must then hold that error once.
        out = outcome_of(st, b, lambda s, b: s == 200 and isinstance(b, dict) and
                         "success" in b)
        self.ledger.add("render", out, st, session=self.sid, marker=vfov, body=b)

    def message(self):
        n = self.ledger.next()
        marker = "[m%d]" % n
        match = re.escape(marker)
        call = ({"name": "render_scene", "arguments": {
            "width": 32, "height": 24, "samples": 8, "max_depth": 3}}
            if n % 4 == 0 else {"name": "create_shape", "arguments": sphere("m%d-x" % n)})
        delay = self.rng.choice([0, 50, 150])
        queued = self.fake.append([
            {"match": match, "text": "On it.", "chunks": 2, "delay_ms": delay,
             "tool_calls": [call]},
            {"match": match, "text": "Done, it is in the scene.", "chunks": 3,
             "delay_ms": delay}])
        if not queued:
            return
        st, b = self.stack.http.request(
            "POST", "/api/sessions/%s/messages" % self.sid,
            {"text": "soak %s: one more sphere please" % marker}, 30)
        out = outcome_of(st, b, lambda s, b: s == 202 and isinstance(b, dict) and
                         isinstance(b.get("queued"), bool))
        self.ledger.add("message", out, st, session=self.sid, marker=marker,
                        queued=isinstance(b, dict) and b.get("queued"))

    def session(self):
        st, b = self.stack.http.request("POST", "/api/sessions", {}, 30)
        out = outcome_of(st, b, lambda s, b: s == 201 and isinstance(b, dict) and
                         re.fullmatch("[0-9a-f]{32}", str(b.get("id"))))
        self.ledger.add("session", out, st, marker=b.get("id") if out == "ack" else None)


# ------------------------------------------------------------ the chaos


class Chaos(threading.Thread):
    """kill -9 of atelierd, a render worker or the bridge, one every MIN to
    MAX seconds, the kind picked at random. A daemon or bridge is killed
    only once it is up (its socket answers), as a crash would find it; the
    stack's restart budget is respected (STACK_KILLS_PER_MINUTE)."""

    def __init__(self, stack, rng, stop, lo, hi):
        super().__init__(daemon=True)
        self.stack, self.rng, self.stop, self.lo, self.hi = stack, rng, stop, lo, hi
        self.kills = {"atelierd": 0, "worker": 0, "atelier-fcgi": 0}
        self.recent = []
        self.log = []

    def run(self):
        # The first three kills are one of each kind, in a random order, so
        # that even a short soak has all three.
        first = list(self.kills)
        self.rng.shuffle(first)
        while not self.stop.wait(self.rng.uniform(self.lo, self.hi)):
            kind = first.pop() if first else self.rng.choice(list(self.kills))
            now = time.monotonic()
            self.recent = [t for t in self.recent if now - t < 61]
            if kind != "worker" and len(self.recent) >= STACK_KILLS_PER_MINUTE:
                kind = "worker"
            pid = self.target(kind)
            if pid is None:
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            self.kills[kind] += 1
            self.log.append((round(now, 1), kind, pid))
            if kind != "worker":
                self.recent.append(now)

    def target(self, kind):
        parts = self.stack.parts()
        daemon = parts.get("atelierd")
        if kind == "worker":
            ws = [p for p in sl.children(daemon) if sl.prog(p) == "atelier-render-worker"] \
                if daemon else []
            return self.rng.choice(ws) if ws else None
        if kind == "atelierd":
            try:
                up = daemon and self.stack.rpc("daemon.info", {}, 2)["pid"] == daemon
            except (OSError, RuntimeError, ValueError):
                up = False
            return daemon if up else None
        bridge = parts.get("atelier-fcgi")
        if bridge and os.path.exists(os.path.join(self.stack.data, "run", "fcgi.sock")) \
                and sl.age(bridge) > 0.5:
            return bridge
        return None


class Sampler(threading.Thread):
    """Once a second: the daemon's and the bridge's RSS and descriptors,
    and every pid the stack ever ran (to find leftovers at the end)."""

    def __init__(self, stack, stop):
        super().__init__(daemon=True)
        self.stack, self.stop = stack, stop
        self.samples = []  # (t, name, pid, rss_kb, fds)
        self.seen = {}     # pid -> program name
        self.lock = threading.Lock()

    def run(self):
        while not self.stop.wait(1.0):
            self.sample()

    def sample(self):
        t = time.monotonic()
        parts = self.stack.parts()
        with self.lock:
            for name, pid in parts.items():
                self.seen[pid] = name
                if name == "nginx":
                    continue
                rss, fds = sl.rss_kb(pid), sl.fd_count(pid)
                if rss is not None and fds is not None:
                    self.samples.append((t, name, pid, rss, fds))
            if "atelierd" in parts:
                for w in sl.children(parts["atelierd"]):
                    self.seen[w] = sl.prog(w)


# ------------------------------------------------------------ the run


def settle(stack, sids, quiet=3.0, limit=60.0):
    """Waits until the daemon answers and no session has had a new event
    for `quiet` seconds (runs, queued messages and renders are done)."""
    deadline = time.monotonic() + limit
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        try:
            now = {s["id"]: s["last_seq"] for s in stack.rpc("session.list", {}, 5)
                   if s["id"] in sids}
        except (OSError, RuntimeError, ValueError):
            now = None
        if now is None or now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return True
        time.sleep(0.25)
    return False


def steady_round(stack, fake, ledger, sids, rng):
    """The same small workload on every session, with a render worker
    killed, without other chaos: for the descriptor and memory comparison
    after the chaos. Its event streams resume near the end, as a page
    reconnecting would, so that no round replays more than the last."""
    stop = threading.Event()
    last = {s["id"]: s["last_seq"] for s in stack.rpc("session.list", {})}
    daemon = stack.parts().get("atelierd")
    workers = [p for p in sl.children(daemon) if sl.prog(p) == "atelier-render-worker"]
    killer = threading.Timer(0.5, lambda: workers and os.kill(rng.choice(workers),
                                                              signal.SIGKILL))
    killer.start()
    for sid in sids:
        r = sl.SSEReader(stack, sid, rng, churn=False, after=max(0, last[sid] - 3))
        r.start()
        d = Driver(stack, fake, ledger, sid, rng, stop)
        d.render()
        for _ in range(4):
            d.shape()
        d.message()
        r.wait_for(last[sid] + 1, 20)
        r.close()
    killer.join()
    settle(stack, set(sids))


# ------------------------------------------------------------ the checks

checks = Checks()


def store(ctx):
    """{session: (session.get, events)} of the soak's sessions, read once
    over api.sock after everything settled."""
    if "store" not in ctx:
        st = ctx["stack"]
        ctx["store"] = {sid: (st.rpc("session.get", {"session": sid}),
                              sl.all_events(st.sock, sid)) for sid in ctx["sids"]}
    return ctx["store"]


def tally(ctx, kind, counts):
    """Checks each operation of `kind` against counts(op) -> the times the
    store holds it: an acknowledged one exactly once, an uncertain one at
    most once, a refused one never. Returns the problems found."""
    problems = []
    for op in ctx["ledger"].of(kind):
        n = counts(op)
        want = {"ack": (1,), "uncertain": (0, 1), "rejected": (0,)}.get(op["outcome"])
        if want is None:
            problems.append("%s %s: unexpected answer %s %s" % (
                kind, op["marker"], op["status"], str(op.get("body"))[:200]))
        elif n not in want:
            if n < min(want):
                ctx["lost"] += 1
            else:
                ctx["doubled"] += 1
            problems.append("%s %s (%s, HTTP %s%s): stored %d times" % (
                kind, op["marker"], op["outcome"], op["status"],
                ", queued" if op.get("queued") else "", n))
    return problems


def finished(events, tool, pick):
    return [e for e in events if e["type"] == "tool.finished" and
            e["data"]["operation"]["tool"] == tool and
            pick(e["data"]["operation"].get("arguments") or {})]


@checks.add("the stack stayed up and restarted only what the chaos killed; all settled")
def _(ctx):
    s, kills = ctx["stack"], ctx["chaos"].kills
    assert s.proc.poll() is None, "the stack exited: " + s.log()[-2000:]
    out = s.log()
    got = (out.count("atelierd exited; restarting it"),
           out.count("atelier-fcgi exited; restarting it"))
    assert got == (kills["atelierd"], kills["atelier-fcgi"]), \
        "restarts %s for kills %s: %s" % (got, kills, out[-2000:])
    assert ctx["settled"], "events kept coming 60 s after the load stopped"


@checks.add("every acknowledged session exists")
def _(ctx):
    have = [x["id"] for x in ctx["stack"].rpc("session.list", {})]
    problems = tally(ctx, "session", lambda op: have.count(op["marker"])
                     if op["marker"] else 0)
    assert not problems, "\n".join(problems[:20])


@checks.add("every acknowledged tool call is stored exactly once (document and "
            "tool.finished), an uncertain one at most once")
def _(ctx):
    db = store(ctx)

    def shape(op):
        doc, events = db[op["session"]]
        ids = [x["id"] for x in doc["document"].get("scene", {}).get("shapes", [])]
        ev = finished(events, "create_shape", lambda a: a.get("id") == op["marker"])
        if len(ev) != ids.count(op["marker"]) or any(not e["data"]["success"] for e in ev):
            return 99  # the document and the events disagree: reported as doubled
        return len(ev)

    def render(op):
        doc, events = db[op["session"]]
        ev = finished(events, "render_scene", lambda a: abs(
            (a.get("camera") or {}).get("vfov", 0) - op["marker"]) < 1e-6)
        if op["outcome"] == "ack" and len(ev) == 1:
            b, d = op["body"], ev[0]["data"]
            got = (d["success"], d.get("images", []))
            want = (b["success"], [i["id"] for i in b.get("images", [])])
            assert got == want, "render %s: answered %s, stored %s" % (op["marker"], want, got)
        return len(ev)

    problems = tally(ctx, "shape", shape) + tally(ctx, "render", render)
    assert not problems, "\n".join(problems[:20])


@checks.add("every acknowledged message is in the history exactly once and ran once; "
            "a refused one never, an uncertain one at most once")
def _(ctx):
    db = store(ctx)

    def message(op):
        doc, events = db[op["session"]]
        hist = [h for h in doc["history"] if h["role"] == "user" and
                op["marker"] in json.dumps(h["content"])]
        runs = [e for e in events if e["type"] == "run.started" and
                op["marker"] in e["data"].get("text", "")]
        # Stored but never run would be a message stuck in the queue.
        return len(hist) if len(runs) == len(hist) else 99

    # Those that were not queued first: they are not the queue's loss.
    problems = sorted(tally(ctx, "message", message), key=lambda p: ", queued)" in p)
    lost = [p for p in problems if p.endswith("stored 0 times")]
    queued = [p for p in lost if ", queued)" in p]
    assert not problems, "%d problem(s); %d acknowledged messages lost, %d of them " \
        "answered {queued: true}:\n%s" % (len(problems), len(lost), len(queued),
                                          "\n".join(problems[:12]))


@checks.add("the store's events are numbered 1..N in every session, no gap, no repeat")
def _(ctx):
    for sid, (doc, events) in store(ctx).items():
        seqs = [e["seq"] for e in events]
        assert seqs == list(range(1, len(seqs) + 1)) and seqs[-1] == doc["last_seq"], \
            (sid, seqs[:5], len(seqs), doc["last_seq"])


@checks.add("every SSE reader saw its session's events from its first on, in order, "
            "as stored: no gap, no repeat")
def _(ctx):
    db = store(ctx)
    for r in ctx["readers"]:
        r.target = db[r.sid][0]["last_seq"]
    problems = []
    for r in ctx["readers"]:
        caught_up = r.wait_for(r.target, 30)
        r.close()
        events = db[r.sid][1]
        got = r.events
        if not got:
            problems.append("%s: no event at all (refused %s)" % (r.sid, r.refused))
            continue
        first = got[0]["seq"]
        want = events[first - 1:]
        if [e["seq"] for e in got] != [e["seq"] for e in want]:
            seqs = [e["seq"] for e in got]
            gaps = [(a, b) for a, b in zip(seqs, seqs[1:]) if b != a + 1]
            problems.append("%s: %d events from %d to %s, store %d; breaks %s%s" % (
                r.sid, len(seqs), first, seqs[-1], len(events), gaps[:5],
                "" if caught_up else " (never caught up)"))
        elif got != want:
            diff = [(a["seq"], a["type"], b["type"]) for a, b in zip(got, want) if a != b]
            problems.append("%s: events differ from the store: %s" % (r.sid, diff[:5]))
        if r.bad:
            problems.append("%s: id/event lines not matching the data: %s" % (r.sid, r.bad[:5]))
    ctx["sse"] = (sum(len(r.events) for r in ctx["readers"]),
                  sum(r.connects for r in ctx["readers"]))
    assert not problems, "\n".join(problems)


@checks.add("no model request was refused (no run.error with a 4xx status: each one "
            "was a request the real API takes)")
def _(ctx):
    # The fake refuses what the real API would refuse, and the run then
    # ends in run.error with the status; its request log is too large to
    # fetch after a long soak, the store's events say the same.
    ends, refused = {}, []
    for sid, (_, events) in store(ctx).items():
        for e in events:
            if e["type"].startswith("run.") and e["type"] not in ("run.started", "run.continued"):
                ends[e["type"]] = ends.get(e["type"], 0) + 1
                status = e["data"].get("status")
                if e["type"] == "run.error" and isinstance(status, int) and 400 <= status < 500:
                    refused.append((sid, e["seq"], e["data"].get("message")))
    ctx["run_ends"] = ends
    assert not refused, refused[:5]


def stack_processes(ctx):
    """(daemon, bridge, workers, zombies) of the stack as it is now."""
    s = ctx["stack"]
    parts = s.parts()
    d = parts.get("atelierd")
    kids = sl.children(s.proc.pid) + (sl.children(d) if d else [])
    workers = [p for p in (sl.children(d) if d else [])
               if sl.prog(p) == "atelier-render-worker" and sl.state(p) != "Z"]
    zombies = [(p, sl.prog(p)) for p in kids if sl.state(p) == "Z"]
    return d, parts.get("atelier-fcgi"), workers, zombies


@checks.add("processes: one daemon, one bridge, %d workers, no zombie, nothing left "
            "of a killed incarnation" % WORKERS)
def _(ctx):
    deadline = time.monotonic() + 10
    while True:
        d, b, workers, zombies = stack_processes(ctx)
        if (d and b and len(workers) == WORKERS and not zombies) or \
                time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert d and b, "daemon %s, bridge %s" % (d, b)
    assert len(workers) == WORKERS, "workers %s" % workers
    assert not zombies, "zombies %s" % zombies
    info = ctx["stack"].rpc("daemon.info", {})
    assert sorted(info["render"]["workers"]) == sorted(workers), (info["render"], workers)
    ctx["sampler"].sample()
    now = {d, b} | set(workers) | {ctx["stack"].parts().get("nginx")}
    left = [(p, n) for p, n in ctx["sampler"].seen.items()
            if p not in now and n and sl.alive(p, n)]
    ctx["leaked"] += len(left)
    assert not left, "still running: %s" % left
    ctx["pids_seen"] = len(ctx["sampler"].seen)


def quiet_counts(ctx):
    """{name: (pid, descriptors, own descriptors, RSS kB)} of the daemon and
    the bridge once their connections have closed. Own descriptors leave
    out the two pools whose size is not the soak's to decide: the API
    connections (the bridge keeps some to the daemon; daemon.info counts
    them, this reader's own one included) and the daemon's TCP connections
    to the provider, which curl keeps for reuse. They are read until they
    hold still for a second."""
    s = ctx["stack"]
    d, b, _, _ = stack_processes(ctx)
    prev, still = None, 0
    for _ in range(60):
        clients = s.rpc("daemon.info", {})["clients"] - 1
        tcp = sl.tcp_inodes()
        (dn, dt), (bn, _) = sl.fd_split(d, tcp), sl.fd_split(b, tcp)
        now = {"atelierd": (d, dn, dn - dt - clients, sl.rss_kb(d)),
               "atelier-fcgi": (b, bn, bn - clients, sl.rss_kb(b))}
        fds = [v[:3] for v in now.values()]
        still = still + 1 if fds == prev else 0
        if still >= 4:
            break
        prev = fds
        time.sleep(0.25)
    return now


@checks.add("after the chaos: steady rounds of the same load (a worker killed in each) "
            "leave the daemon and the bridge with the same descriptors and flat memory")
def _(ctx):
    s, fake, rng = ctx["stack"], ctx["script"], ctx["rng"]
    steady_round(s, fake, ctx["ledger"], ctx["current"], rng)
    first = quiet_counts(ctx)
    for _ in range(max(1, ctx["rounds"] - 1)):
        steady_round(s, fake, ctx["ledger"], ctx["current"], rng)
    last = quiet_counts(ctx)
    ctx["steady"] = (first, last)
    for name in first:
        a, b = first[name], last[name]
        assert a[0] == b[0], "%s restarted during the steady rounds" % name
        if b[2] > a[2]:
            ctx["leaked"] += b[2] - a[2]
        assert b[2] <= a[2], "%s: %d descriptors of its own after round 1, %d after " \
            "round %d (%d and %d in all)" % (name, a[2], b[2], ctx["rounds"], a[1], b[1])
        assert b[3] - a[3] <= 2048, "%s: RSS %d kB after round 1, %d kB after round %d" % (
            name, a[3], b[3], ctx["rounds"])


def slope_per_minute(points):
    """The least-squares slope of (t seconds, kB) points, in kB a minute."""
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return 60 * sum((t - mt) * (v - mv) for t, v in points) / var if var else 0.0


def incarnations(ctx, name):
    """[(pid, [(t, rss_kb)])] of one program, longest-lived first."""
    by = {}
    for t, n, pid, rss, _ in ctx["sampler"].samples:
        if n == name:
            by.setdefault(pid, []).append((t, rss))
    return sorted(by.items(), key=lambda kv: kv[1][-1][0] - kv[1][0][0], reverse=True)


DAEMON_RSS_MAX_MB, BRIDGE_RSS_MAX_MB = 128, 32


@checks.add("memory bounded: no incarnation of atelierd passes %d MB of RSS, none of the "
            "bridge %d MB (the growth of the longest-lived is in the summary)" % (
                DAEMON_RSS_MAX_MB, BRIDGE_RSS_MAX_MB))
def _(ctx):
    # Flatness is asserted by the steady rounds above, under one daemon and
    # one bridge. Here every incarnation of the chaos counts: one that
    # kept what it once needed (a session's history, a request's buffers)
    # would pass the bound well before the end of a long soak. The growth
    # over the second half of the longest life is reported, not asserted:
    # the first minute of a daemon fills SQLite's page caches and the
    # allocator's arenas, and in a short soak no life gets past it.
    ctx["rss"] = {}
    for name, cap in (("atelierd", DAEMON_RSS_MAX_MB), ("atelier-fcgi", BRIDGE_RSS_MAX_MB)):
        inc = incarnations(ctx, name)
        assert inc, "no samples of %s" % name
        pid, pts = inc[0]
        lived = pts[-1][0] - pts[0][0]
        late = [p for p in pts if p[0] - pts[0][0] >= lived / 2]
        ctx["rss"][name] = {"incarnations": len(inc), "pid": pid, "lived_s": lived,
                            "first_mb": pts[0][1] / 1024, "mid_mb": late[0][1] / 1024,
                            "last_mb": pts[-1][1] / 1024,
                            "max_mb": max(v for _, pts_ in inc for _, v in pts_) / 1024,
                            "slope_kb_min": slope_per_minute(late) if len(late) >= 3 else 0.0}
        assert ctx["rss"][name]["max_mb"] < cap, "%s reached %.1f MB" % (
            name, ctx["rss"][name]["max_mb"])


@checks.add("SIGINT stops the whole stack; no atelierd, bridge or worker remains")
def _(ctx):
    s = ctx["stack"]
    ctx["sampler"].sample()
    s.proc.send_signal(signal.SIGINT)
    s.proc.wait(timeout=30)
    assert s.proc.returncode == 0, (s.proc.returncode, s.log()[-2000:])
    deadline = time.monotonic() + 5
    while True:
        left = [(p, n) for p, n in ctx["sampler"].seen.items() if n and sl.alive(p, n)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    ctx["leaked"] += len(left)
    assert not left, "still running after the stack stopped: %s" % left


@checks.add("no sanitizer report, assertion or crash in any log")
def _(ctx):
    for name in ("atelierd.log", "atelier-fcgi.log", "nginx-error.log"):
        with open(os.path.join(ctx["stack"].data, "log", name), errors="replace") as f:
            text = f.read()
        for needle in ("AddressSanitizer", "LeakSanitizer", "runtime error:",
                       "Assertion", "Segmentation fault", "stack smashing"):
            assert needle not in text, "%s in %s" % (needle, name)


def summary(ctx):
    led, kills = ctx["ledger"], ctx["chaos"].kills
    print("# summary")
    print("#   chaos %.0f s; kills: atelierd %d, render worker %d, atelier-fcgi %d" % (
        ctx["chaos_secs"], kills["atelierd"], kills["worker"], kills["atelier-fcgi"]))
    for kind in ("session", "shape", "render", "message"):
        ops = led.of(kind)
        print("#   %-8s %5d tried, %5d acknowledged, %4d uncertain, %3d refused (429)" % (
            kind, len(ops), sum(o["outcome"] == "ack" for o in ops),
            sum(o["outcome"] == "uncertain" for o in ops),
            sum(o["outcome"] == "rejected" for o in ops)))
    print("#   answers by HTTP status: %s" % ", ".join(
        "%s %d" % (k, v) for k, v in sorted(led.statuses.items(), key=str)))
    if "sse" in ctx:
        print("#   SSE: %d readers, %d events read over %d connections" % (
            len(ctx["readers"]), ctx["sse"][0], ctx["sse"][1]))
    if "run_ends" in ctx:
        print("#   runs ended: %s" % ", ".join("%s %d" % kv for kv in sorted(ctx["run_ends"].items())))
    print("#   lost %d, doubled %d, leaked %d" % (ctx["lost"], ctx["doubled"], ctx["leaked"]))
    if "steady" in ctx:
        first, last = ctx["steady"]
        for name in first:
            a, b = first[name], last[name]
            print("#   %s after the chaos: own fds %d -> %d (all %d -> %d), RSS %.1f -> %.1f "
                  "MB over %d steady rounds" % (name, a[2], b[2], a[1], b[1], a[3] / 1024,
                                               b[3] / 1024, ctx["rounds"]))
    for name, r in ctx.get("rss", {}).items():
        print("#   %s: %d incarnations; the longest lived %.0f s, RSS %.1f MB at start, "
              "%.1f half-way, %.1f at the end, second half %+.0f kB/min; max of all %.1f" % (
                  name, r["incarnations"], r["lived_s"], r["first_mb"], r["mid_mb"],
                  r["last_mb"], r["slope_kb_min"], r["max_mb"]))


def timed(name, fn):
    """fn, printing how long it took (the soak's time budget in CI)."""
    def wrap(ctx):
        t0 = time.monotonic()
        try:
            fn(ctx)
        finally:
            print("# (%.1f s)" % (time.monotonic() - t0), flush=True)
    return wrap


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=600)
    ap.add_argument("--sessions", type=int, default=4)
    ap.add_argument("--seed", type=int, default=random.randrange(1 << 30))
    ap.add_argument("--chaos", default="2,8", help="MIN,MAX seconds between kills")
    ap.add_argument("--rounds", type=int, default=2, help="steady rounds after the chaos")
    opt = ap.parse_args()
    lo, hi = (float(x) for x in opt.chaos.split(","))
    rng = random.Random(opt.seed)
    print("# seed %d, %g s, %d sessions, a kill every %g-%g s" %
          (opt.seed, opt.duration, opt.sessions, lo, hi), flush=True)

    fake = sl.FakeScript(Fake())
    t_start = time.monotonic()
    stack = Stack(fake.fake.url)
    ledger = Ledger()
    sids, readers = [], []
    lock = threading.Lock()

    def open_session():
        """A new session (retried while the daemon is down) with two
        readers on its events, one of them on a flaky connection."""
        deadline = time.monotonic() + 90
        while True:
            st, b = stack.http.request("POST", "/api/sessions", {"model": MODEL})
            if st == 201:
                break
            ledger.add("session", outcome_of(st, b, lambda s, b: False), st, marker=None)
            if time.monotonic() > deadline:
                return None
            time.sleep(0.5)
        ledger.add("session", "ack", st, marker=b["id"])
        with lock:
            sids.append(b["id"])
            for churn in (False, True):
                r = sl.SSEReader(stack, b["id"], random.Random(rng.random()), churn=churn)
                r.start()
                readers.append(r)
        return b["id"]

    def rotate(driver):
        driver.sid = open_session() or driver.sid

    stop_load, stop_chaos, stop_sample = (threading.Event() for _ in range(3))
    sampler = Sampler(stack, stop_sample)
    sampler.sample()
    sampler.start()
    drivers = []
    for _ in range(opt.sessions):
        sid = open_session()
        assert sid, "no session: " + stack.log()[-2000:]
        # Something to render from the start.
        st, b = stack.http.request("POST", "/api/sessions/%s/tools/create_shape" % sid,
                                   sphere("floor"))
        assert st == 200 and b["success"], (st, b)
        drivers.append(Driver(stack, fake, ledger, sid, random.Random(rng.random()),
                              stop_load, rotate))
    for d in drivers:
        d.start()
    chaos = Chaos(stack, random.Random(rng.random()), stop_chaos, lo, hi)
    t_chaos = time.monotonic()
    chaos.start()
    next_note = t_chaos + 60
    while time.monotonic() - t_chaos < opt.duration:
        time.sleep(1)
        if stack.proc.poll() is not None:
            break
        if time.monotonic() >= next_note:
            next_note += 60
            print("# %.0f s: kills %s, operations %d" % (
                time.monotonic() - t_chaos, chaos.kills, len(ledger.ops)), flush=True)
    stop_chaos.set()
    chaos.join()
    chaos_secs = time.monotonic() - t_chaos
    stop_load.set()
    for d in drivers:
        d.join(timeout=90)
    settled = settle(stack, set(sids))
    ctx = {"stack": stack, "script": fake, "ledger": ledger, "sids": sids,
           "current": [d.sid for d in drivers],
           "readers": readers, "chaos": chaos, "sampler": sampler,
           "settled": settled, "rng": rng, "rounds": opt.rounds,
           "chaos_secs": chaos_secs, "lost": 0, "doubled": 0, "leaked": 0}
    print("# settled %.1f s after the load stopped" % (time.monotonic() - t_chaos - chaos_secs),
          flush=True)
    passed, failed = run_checks([(name, timed(name, fn)) for name, fn in checks], ctx)
    stop_sample.set()
    summary(ctx)
    print("# total time %.1f s" % (time.monotonic() - t_start))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # noqa: BLE001 - a crash of the soak itself is a failure
        traceback.print_exc()
        print("0 passed, 1 failed")
        sys.exit(1)
