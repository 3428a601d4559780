#!/usr/bin/env python3
"""Secrets and local users (issue 17, part 4), against the real atelierd,
its render workers and SQLite store, with the fake provider:

- a tool flagged ATL_TOOL_REDACT_ARGS (echo_secret) keeps its arguments
  out of the events, the history, the store's files, the log, the error
  messages and the model's next request, whether the call is a direct
  tool.call, a "/echo_secret {...}" message or a call the model made;
- render workers get no API key in their environment and no descriptor
  but their own socket (and the render segments it sends them), also
  after one is killed and restarted while the provider's connection is
  open in the daemon;
- atelierd is not dumpable: its environment cannot be read by a process
  of its own user without CAP_SYS_PTRACE;
- every file the daemon makes is for its user alone (the API socket is
  0660, as doc/security.md says);
- scripts/atelier-stack starts the bridge and nginx without the keys,
  and its daemon offers no test tool (echo_test is the tests' alone).

Standard library only.
"""

import os
import signal
import stat
import subprocess
import shutil
import sys
import tempfile
import time

from atltest import (BUILDDIR, DAEMON, KEY, PLUGIN_DIR, SRCDIR, TMP, Checks,
                     Daemon, Fake, free_port, rpc, run_checks)

# Values that must never be found anywhere but in the handler's hands.
CANARIES = {
    "direct": "sk-LEAKME-direct-4242",
    "typed": "sk-LEAKME-typed-4343",
    "message": "sk-LEAKME-42",
    "model": "sk-LEAKME-model-4545",
    "broken": "sk-LEAKME-broken-4646",
    "queued": "sk-LEAKME-queued-4747",
}
# A key in the daemon's environment, as a provider's key would be.
ENV_KEY = "sk-ENVKEY-canary-5151"

SCENE = {
    "camera": {"center": [0, 1.5, 6], "look_at": [0, 0.8, 0], "vfov": 40},
    "shapes": [{"id": "ball", "type": "sphere",
                "properties": {"center": [0, 1, 0], "radius": 1}}],
    "lights": [{"id": "lamp", "type": "area_quad_light",
                "properties": {"corner": [-1, 4, -1], "u": [2, 0, 0],
                               "v": [0, 0, 2], "emission": [6, 6, 6]}}],
}

CHECKS = Checks()
check = CHECKS.add


def conf(url, log):
    return ("[agent]\nprovider = fake\nmax_turns = 3\n"
            "[provider.fake]\ntype = openai\nbase_url = %s\n"
            "api_key_env = FAKE_LLM_KEY\nmodels = fake-model\n"
            "timeout_ms = 5000\n[render]\nworkers = 2\n"
            "[log]\nfile = %s\nlevel = trace\n" % (url, log))


def call(d, sid, tool, args):
    return d.rpc("tool.call", {"session": sid, "name": tool,
                               "arguments": args})


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def leaks(blob, where):
    """The canaries found in blob (bytes), as 'name in where' strings."""
    return ["%s in %s" % (k, where) for k, v in CANARIES.items()
            if v.encode() in blob]


def files_under(top):
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            yield os.path.join(root, name)


# ---------------------------------------------------------------- checks

@check("redaction: the secret runs the tool and is found nowhere else")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    sid = d.session()
    ctx["sid"] = sid
    answers = []
    # A direct call: the answer, the event, the log.
    r = call(d, sid, "echo_secret", {"api_key": CANARIES["direct"]})
    assert r["success"] and r["result"]["length"] == len(CANARIES["direct"]), r
    answers.append(repr(r))
    # Arguments the schema refuses: the error must not quote the value.
    r = call(d, sid, "echo_secret", {"api_key": [CANARIES["typed"]],
                                     "other": CANARIES["typed"]})
    assert not r["success"], r
    answers.append(repr(r))
    # A "/tool" message: the history and run.started.
    evs = d.run(sid, '/echo_secret {"api_key": "%s"}' % CANARIES["message"])
    assert evs[-1]["type"] == "run.completed", evs
    # A message whose arguments are not JSON.
    evs = d.run(sid, '/echo_secret {"api_key": %s' % CANARIES["broken"])
    assert evs[-1]["type"] == "run.completed", evs
    # A call the model makes: tool.started, the history, the next request.
    fake.script([{"tool_calls": [{"id": "call_s", "name": "echo_secret",
                                  "arguments": {"api_key":
                                                CANARIES["model"]}}]},
                 {"text": "The key has %d characters." %
                  len(CANARIES["model"])}])
    evs = d.run(sid, "how long is my key?")
    assert evs[-1]["type"] == "run.completed", [e["type"] for e in evs]
    fin = [e for e in evs if e["type"] == "tool.finished"]
    assert fin and fin[0]["data"]["success"], fin
    reqs = fake.requests()
    assert len(reqs) >= 2, reqs
    # The model's call goes back to it with its arguments' shape only.
    follow = repr(reqs[-1])
    assert "echo_secret" in follow and "(redacted)" in follow, follow[:2000]

    # A "/tool" message that waits behind a slow run: the queue is in the
    # store (and in message.queued) before the answer, so it must be
    # written without the secret too; the tool still runs with it.
    fake.script([{"text": "slow " * 20, "chunks": 20, "delay_ms": 50}])
    start = d.events(sid)[-1]["seq"]
    assert d.rpc("session.send", {"session": sid,
                                  "text": "a slow one"})["queued"] is False
    r = d.rpc("session.send", {"session": sid, "text":
                               '/echo_secret {"api_key": "%s"}' %
                               CANARIES["queued"]})
    assert r["queued"] is True, r
    evs = d.follow(sid, start, ends=2)
    assert [e["type"] for e in evs if e["type"].startswith("run.")][-1] \
        == "run.completed", [e["type"] for e in evs]
    fin = [e for e in evs if e["type"] == "tool.finished"]
    assert fin and fin[-1]["data"]["success"], fin
    queued = [e for e in evs if e["type"] == "message.queued"]
    assert queued and queued[0]["data"]["text"] == "/echo_secret (redacted)", \
        queued

    found = []
    every = d.events(sid)
    found += leaks(repr(every).encode(), "events.read")
    found += leaks(repr(d.history(sid)).encode(), "session.get")
    found += leaks(" ".join(answers).encode(), "tool.call answers")
    found += leaks(repr(reqs).encode(), "the model's requests")
    with open(ctx["log"], "rb") as f:
        found += leaks(f.read(), "the log")
    # The store as it is on disk now (WAL not checkpointed), then after a
    # clean stop (checkpointed).
    for when in ("running", "stopped"):
        if when == "stopped":
            d.stop()
        for p in files_under(ctx["data"]):
            if os.path.isfile(p):
                with open(p, "rb") as f:
                    found += leaks(f.read(), "%s (%s)" % (p, when))
    assert not found, found
    started = [e for e in every if e["type"] == "run.started"]
    assert any(e["data"]["text"] == "/echo_secret (redacted)"
               for e in started), started


@check("a redacted tool that keeps its arguments: the event, the log and the "
       "answer have none, and what the tool kept is not changed by the scrub")
def _(ctx):
    if ctx["d"].proc.poll() is not None:  # the check before stopped it
        restart(ctx)
    d = ctx["d"]
    sid = d.session()
    label, key = "vault-label-LEAK-6161", "sk-VAULT-LEAK-6262"
    r = call(d, sid, "echo_vault", {"label": label, "api_key": key})
    assert r["success"], r
    found = [w for w in (label, key) if w in repr(r)]
    every = d.events(sid)
    found += ["%s in events" % w for w in (label, key) if w in repr(every)]
    with open(ctx["log"], "rb") as f:
        log = f.read()
    found += ["%s in the log" % w for w in (label, key) if w.encode() in log]
    assert not found, found
    # The tool's own state is the tool's: the label as given (scrubbing
    # the event's copy must not reach the document), the key nowhere.
    doc = d.rpc("session.get", {"session": sid})["document"]
    assert doc["echo_test"]["vault"] == {"label": label,
                                         "key_length": len(key)}, doc


def restart(ctx):
    ctx["d"] = Daemon("secrets", ctx["conf"], data_dir=ctx["data"],
                      env=ctx["env"])


def as_user(uid):
    """The command prefix that runs a program as uid (root only)."""
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid,
            "--clear-groups"]


@check("atelierd is not dumpable: its environment is closed to its own user")
def _(ctx):
    if ctx["d"].proc.poll() is not None:
        restart(ctx)
    # What is observable: a non-dumpable process's /proc/PID files belong
    # to root, and a process of the same user cannot open its environ.
    # Root can read any process, so as root the daemon under test runs as
    # nobody, in a directory of nobody's.
    uid, prefix, proc = os.getuid(), [], ctx["d"].proc
    if uid == 0:
        uid, prefix = 65534, as_user(65534)
        top = tempfile.mkdtemp(prefix="atl-dumpable.")
        os.chown(top, uid, uid)
        proc = subprocess.Popen(
            prefix + [DAEMON, "--foreground", "--data-dir", top + "/data",
                      "--socket-dir", top + "/run", "--plugin-dir",
                      PLUGIN_DIR],
            env=dict(os.environ, OPENAI_API_KEY=ENV_KEY),
            stderr=subprocess.DEVNULL)
        ctx["cleanup"].append((proc, top))
        wait_for(lambda: os.path.exists(top + "/run/api.sock"), 10,
                 "the daemon run as nobody")
    path = "/proc/%d/environ" % proc.pid
    with open("/proc/%d/status" % proc.pid) as f:
        uids = [ln.split()[1] for ln in f if ln.startswith("Uid:")]
    assert uids == [str(uid)], uids
    assert os.stat(path).st_uid == 0, os.stat(path)
    r = subprocess.run(prefix + ["cat", path], capture_output=True)
    assert r.returncode != 0 and ENV_KEY.encode() not in r.stdout, r
    assert b"Permission denied" in r.stderr, r.stderr
    # The same command reads a dumpable process of that user: the check
    # can fail.
    other = subprocess.Popen(prefix + ["sleep", "5"])
    try:
        # Until setpriv has exec'd sleep, the process is not dumpable (its
        # change of uid cleared the flag, and only an exec sets it again),
        # so reading it earlier fails as the daemon's does: wait for the
        # exec, not a fixed 0.2 s (a loaded machine took longer).
        def execd():
            with open("/proc/%d/comm" % other.pid) as f:
                return f.read().strip() == "sleep"
        wait_for(execd, 10, "setpriv to exec sleep")
        r = subprocess.run(prefix + ["cat", "/proc/%d/environ" % other.pid],
                           capture_output=True)
        assert r.returncode == 0 and b"PATH=" in r.stdout, r
    finally:
        other.kill()
        other.wait()


def worker_state(pid):
    """The worker's environment and its descriptors as {fd: link}."""
    with open("/proc/%d/environ" % pid, "rb") as f:
        env = f.read()
    fds = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            fds[int(fd)] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except FileNotFoundError:
            pass
    return env, fds


def worker_problems(pid):
    """What is wrong with a worker's environment and descriptors."""
    env, fds = worker_state(pid)
    bad = []
    if ENV_KEY.encode() in env or KEY.encode() in env:
        bad.append("worker %d: a key in its environment" % pid)
    names = {v.split(b"=", 1)[0] for v in env.split(b"\0") if v}
    extra = names - {b"PATH", b"LANG", b"LC_ALL", b"TZ", b"ASAN_OPTIONS",
                     b"UBSAN_OPTIONS", b"LSAN_OPTIONS"}
    if extra:
        bad.append("worker %d: environment %s" % (pid, sorted(extra)[:5]))
    if not fds.get(3, "").startswith("socket:"):
        bad.append("worker %d: fd 3 is %r" % (pid, fds.get(3)))
    for fd, link in fds.items():
        # A job's render segment, sent over the socket, is all else.
        if fd > 3 and not link.startswith("/dev/shm/"):
            bad.append("worker %d: fd %d is %s" % (pid, fd, link))
    return bad


@check("render workers: no key in the environment, no inherited descriptor")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    sid = d.session()
    r = call(d, sid, "import_scene", {"scene": SCENE})
    assert r["success"], r
    # A model call first: curl's connection to the provider stays open in
    # the daemon's pool while the workers render and restart.
    fake.script([{"text": "hello"}])
    assert d.run(sid, "hi")[-1]["type"] == "run.completed"
    r = call(d, sid, "render_scene", {"width": 64, "height": 48,
                                      "samples": 8})
    assert r["success"], r
    pids = d.rpc("daemon.info", {})["render"]["workers"]
    assert len(pids) == 2, pids
    bad = [b for pid in pids for b in worker_problems(pid)]
    # A worker killed is restarted by the daemon, from the daemon's state
    # as it is now (connections open), and must hold no more than the first.
    fake.script([{"text": "again"}])
    assert d.run(sid, "again")[-1]["type"] == "run.completed"
    os.kill(pids[0], signal.SIGKILL)
    new = wait_for(lambda: [p for p in d.rpc("daemon.info", {})["render"]
                            ["workers"] if p not in pids], 10,
                   "a new worker")
    r = call(d, sid, "render_scene", {"width": 64, "height": 48,
                                      "samples": 8})
    assert r["success"], r
    bad += [b for pid in new for b in worker_problems(pid)]
    # The worker closes what it was not given, but only once its main()
    # runs; until then (a slow start under ASan) it holds whatever the
    # daemon left inheritable. So the daemon leaves nothing so: every
    # descriptor of its own, curl's socket pairs included, is
    # close-on-exec, whoever opened it.
    bad += inheritable_fds(d.proc.pid)
    assert not bad, bad


def inheritable_fds(pid):
    """The descriptors of process pid above stderr without O_CLOEXEC."""
    bad = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        if int(fd) <= 2:
            continue
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                flags = next(int(l.split()[1], 8) for l in f
                             if l.startswith("flags:"))
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except (FileNotFoundError, ProcessLookupError):
            continue
        if not flags & 0o2000000:
            bad.append("daemon: fd %s (%s) is inherited by children"
                       % (fd, link))
    return bad


@check("file modes: what the daemon made is for its user only")
def _(ctx):
    d = ctx["d"]
    # A render's segments: unlinked from /dev/shm as soon as they are
    # made, so they are looked at through the workers' descriptors while
    # a render runs (stat follows /proc/PID/fd/N to the segment).
    sid = d.session()
    r = call(d, sid, "import_scene", {"scene": SCENE})
    assert r["success"], r
    # Every sample (noise_threshold 0): about 2 s here. With adaptive
    # sampling this flat scene was done in 0.25 s, and the poll below could
    # miss the segments altogether (CI failed so once).
    d.rpc("session.send", {"session": sid, "text":
                           '/render_scene {"samples": 256, '
                           '"noise_threshold": 0}'})
    seen, bad = {}, []
    deadline = time.monotonic() + 20
    while not seen and time.monotonic() < deadline:
        for pid in d.rpc("daemon.info", {})["render"]["workers"]:
            try:
                _, fds = worker_state(pid)
                for fd, link in fds.items():
                    if link.startswith("/dev/shm/"):
                        seen[link] = os.stat("/proc/%d/fd/%d" %
                                             (pid, fd)).st_mode
            except FileNotFoundError:
                pass
        time.sleep(0.01)
    assert seen, "no render segment was seen in a worker"
    bad += ["%s %o" % (n, m & 0o777) for n, m in seen.items() if m & 0o077]
    sock = d.sock
    made = [ctx["data"], os.path.dirname(sock), ctx["log"]]
    made += list(files_under(ctx["data"]))
    made += list(files_under(os.path.dirname(sock)))
    # api.sock and metrics.sock are the group's (the web bridge's); the
    # admin socket, like everything else, is the daemon's user's alone.
    group_ok = {sock, os.path.join(os.path.dirname(sock), "metrics.sock")}
    for p in made:
        m = os.stat(p).st_mode
        allowed = 0o060 if p in group_ok else 0
        if m & 0o077 & ~allowed:
            bad.append("%s %o" % (p, m & 0o777))
    names = [os.path.basename(p) for p in made]
    assert "atelier.db" in names and "api.sock" in names and \
        "admin.sock" in names and "metrics.sock" in names, names
    assert not bad, bad


def descendants(pid):
    """{pid: comm} of every process under pid."""
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/stat" % p) as f:
                    st = f.read()
            except OSError:
                continue
            comm = st[st.index("(") + 1:st.rindex(")")]
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            kids.setdefault(ppid, []).append((int(p), comm))
    out, todo = {}, [pid]
    while todo:
        for child, comm in kids.get(todo.pop(), []):
            out[child] = comm
            todo.append(child)
    return out


@check("scripts/atelier-stack (as ./bootstrap run starts it): the bridge and "
       "nginx get no key, and the model is offered echo but no test tool")
def _(ctx):
    port = free_port()
    data = os.path.join(TMP, "stack")
    env = dict(os.environ, FAKE_LLM_KEY=KEY, OPENAI_API_KEY=ENV_KEY,
               SOME_SERVICE_TOKEN=ENV_KEY, LLM_CREDS=ENV_KEY)
    out = open(os.path.join(TMP, "stack.out"), "w+")
    proc = subprocess.Popen(
        [os.path.join(SRCDIR, "scripts", "atelier-stack"), "--build",
         BUILDDIR, "--data", data, "--port", str(port)],
        stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        wait_for(lambda: "atelier: ready at" in open(out.name).read() or
                 proc.poll() is not None, 30, "the stack")
        assert proc.poll() is None, open(out.name).read()
        # nginx's workers come up just after its master.
        procs = wait_for(lambda: (lambda d: d if list(d.values()).count(
            "nginx") >= 2 else None)(descendants(proc.pid)), 10, "nginx")
        seen, bad = set(), []
        for pid, comm in procs.items():
            if comm not in ("atelier-fcgi", "nginx"):
                continue
            with open("/proc/%d/environ" % pid, "rb") as f:
                environ = f.read()
            seen.add(comm)
            if ENV_KEY.encode() in environ or KEY.encode() in environ:
                bad.append("%s %d" % (comm, pid))
        assert seen == {"atelier-fcgi", "nginx"}, procs
        assert not bad, bad
        tools = [t["name"] for t in rpc(os.path.join(data, "run",
                                                          "api.sock"),
                                             "tool.list", {})]
        assert "echo" in tools and "render_scene" in tools, tools
        assert not [t for t in tools if t.startswith("echo_")], tools
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main():
    fake = Fake()
    data = os.path.join(TMP, "secrets-data")
    log = os.path.join(TMP, "secrets-daemon.log")
    env = {"FAKE_LLM_KEY": KEY, "OPENAI_API_KEY": ENV_KEY,
           "ATELIER_TEST_TOKEN": ENV_KEY}
    c = conf(fake.url, log)
    ctx = {"fake": fake, "data": data, "log": log, "env": env, "conf": c,
           "d": Daemon("secrets", c, data_dir=data, env=env)}
    ctx["cleanup"] = []
    try:
        passed, failed = run_checks(CHECKS, ctx)
    finally:
        for proc, top in ctx["cleanup"]:
            proc.terminate()
            proc.wait(timeout=15)
            shutil.rmtree(top, ignore_errors=True)
    print("1..%d" % (passed + failed))
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
