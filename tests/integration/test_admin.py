#!/usr/bin/env python3
"""The admin socket end to end (doc/admin.md): the real atelierd, raw
JSON-RPC on admin.sock, atelierctl, and promtool.

Checks who may connect (the socket's mode, another uid refused by
SO_PEERCRED with its pid and uid logged, the secret and its three tries, a
secret file others may read stopping the daemon), that no admin method is
reachable on api.sock, every method's answer against a scripted workload
(info, stats, sessions, session with a plugin's summary, clients and
client.kill, plugins, log.level, metrics through promtool, accept_sessions,
shutdown), and trace: one session's lines only and in order, kinds, the
time limit, a reader that stops reading gets a count of what it lost while
the daemon keeps answering, no secret in any line, atelierctl's trace
ending cleanly when the daemon dies.

Run by `make check` (ATL_TEST_BUILDDIR, ATL_TEST_SRCDIR). Output: "ok N -"
or "not ok N -" lines, "#" diagnostics, a final "P passed, F failed".
Standard library only.
"""

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import time

from atltest import (BUILDDIR, KEY, SRCDIR, TMP, Checks, Daemon, Fake, run_checks,
                     sanitized)

CTL = os.path.join(BUILDDIR, "atelierctl")
CONF = """[provider.fake]
type = openai
base_url = http://127.0.0.1:9
api_key_env = ATL_ADMIN_TEST_KEY
models = fake-model
"""
ENV = {"ATL_ADMIN_TEST_KEY": KEY}


class Admin:
    """A connection to admin.sock that keeps its buffer between calls."""

    def __init__(self, path, timeout=20):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.buf = b""
        self.next_id = 1

    def line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError("admin.sock closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, method, params=None):
        """The whole answer: {"result": ...} or {"error": ...}."""
        req = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            req["params"] = params
        self.next_id += 1
        self.s.sendall(json.dumps(req).encode() + b"\n")
        return self.line()

    def ok(self, method, params=None):
        r = self.call(method, params)
        assert "result" in r, (method, r)
        return r["result"]

    def close(self):
        self.s.close()


def admin_path(d):
    return os.path.join(os.path.dirname(d.sock), "admin.sock")


def call(d, sid, tool, args):
    return d.rpc("tool.call", {"session": sid, "name": tool,
                               "arguments": args})


def log_text(d):
    with open(d.log) as f:
        return f.read()


CHECKS = Checks()
check = CHECKS.add


@check("admin.sock is made with mode 0600 beside api.sock (0660)")
def _(ctx):
    d = ctx["d"]
    mode = stat.S_IMODE(os.stat(admin_path(d)).st_mode)
    assert mode == 0o600, oct(mode)
    assert stat.S_IMODE(os.stat(d.sock).st_mode) == 0o660


@check("no admin method answers on api.sock, and no api method but "
       "session.cancel and session.delete on admin.sock")
def _(ctx):
    d = ctx["d"]
    for m in ("info", "stats", "trace", "clients", "client.kill", "metrics",
              "log.level", "shutdown", "accept_sessions", "auth"):
        try:
            d.rpc(m, {})
            raise AssertionError("%s answered on api.sock" % m)
        except RuntimeError as e:
            assert "-32601" in str(e), e
    a = Admin(admin_path(d))
    for m in ("tool.call", "session.create", "session.send", "http.auth",
              "events.read"):
        r = a.call(m, {})
        assert r["error"]["code"] == -32601, r
    assert "admin methods:" in r["error"]["message"], r
    a.close()


@check("another uid is refused at accept even on a socket opened to all, "
       "and the refusal names its pid and uid")
def _(ctx):
    d = ctx["d"]
    path = admin_path(d)
    # Loosen everything by hand, as a mistaken deployment might.
    dirs, p = [], os.path.dirname(path)
    while p != "/":
        dirs.append((p, stat.S_IMODE(os.stat(p).st_mode)))
        p = os.path.dirname(p)
    try:
        for p, m in dirs:
            os.chmod(p, m | 0o755)
        os.chmod(path, 0o666)
        code = ("import socket,sys,time\n"
                "s=socket.socket(socket.AF_UNIX)\n"
                "s.settimeout(5)\n"
                "s.connect(sys.argv[1])\n"
                "try:\n"
                "  time.sleep(0.3)\n"
                "  s.sendall(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                "\"info\"}\\n')\n"
                "  print(repr(s.recv(65536)))\n"
                "except OSError as e:\n"
                "  print('closed', e.errno)\n")
        r = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             sys.executable, "-c", code, path],
            capture_output=True, text=True, timeout=20)
    finally:
        os.chmod(path, 0o600)
        for p, m in dirs:
            os.chmod(p, m)
    assert r.returncode == 0, r.stderr
    # Closed at once: nothing read (b''), or a broken pipe or reset.
    assert r.stdout.strip() in ("b''", "closed 32", "closed 104"), r.stdout
    log = log_text(d)
    line = [l for l in log.splitlines() if "admin connection refused" in l]
    assert line and "uid=65534" in line[-1] and "pid=" in line[-1], line


@check("info: version, pid, uptime, the configuration with the key shown "
       "as set and never itself, plugins, the store")
def _(ctx):
    d = ctx["d"]
    a = Admin(admin_path(d))
    r = a.ok("info")
    assert r["pid"] == d.proc.pid, r
    assert r["abi"]["major"] == 1 and r["abi"]["minor"] >= 4, r
    assert r["uptime_s"] > 0
    prov = r["config"]["providers"][0]
    assert prov["api_key"] == "set" and prov["api_key_env"] == \
        "ATL_ADMIN_TEST_KEY", prov
    assert r["config"]["admin_secret"] == "unset"
    names = [p["name"] for p in r["plugins"]]
    assert "echo_test" in names and "scene" in names, names
    assert r["store"]["bytes"] > 0 and "wal_pages" in r["store"], r["store"]
    assert KEY not in json.dumps(r)
    a.close()


@check("stats: per tool calls, failures by kind and latencies; per method; "
       "commits and their sizes; events emitted and delivered")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    ctx["sid"] = sid
    for i in range(5):
        assert call(d, sid, "echo_store", {"key": "k%d" % i,
                                           "value": i})["success"]
    assert not call(d, sid, "echo_fail", {})["success"]
    assert not call(d, sid, "echo_store", {"key": 5})["success"]
    evs = d.events(sid)
    a = Admin(admin_path(d))
    r = a.ok("stats")
    t = r["series"]["tool"]
    assert t["echo_store"]["calls"] == 6, t["echo_store"]
    assert t["echo_store"]["errors"] == 1, t["echo_store"]
    assert t["echo_store"]["invalid_arguments"] == 1, t["echo_store"]
    assert t["echo_fail"]["failed"] == 1, t["echo_fail"]
    s = t["echo_store"]
    assert 0 < s["p50_ms"] <= s["p90_ms"] <= s["p99_ms"] <= s["max_ms"], s
    assert r["series"]["rpc"]["tool.call"]["calls"] >= 7
    assert r["series"]["commit"][""]["calls"] >= 7
    assert r["series"]["commit_batch"][""]["p50"] >= 1
    assert r["events"]["emitted"] >= len(evs)
    assert r["events"]["delivered"] >= len(evs)
    # The admin socket counts itself.
    r = a.ok("stats")
    assert r["series"]["admin"]["stats"]["calls"] >= 1
    a.close()


@check("sessions and session: the state of each, and a plugin's own "
       "summary of its namespace")
def _(ctx):
    d, sid = ctx["d"], ctx["sid"]
    other = d.session()
    a = Admin(admin_path(d))
    r = a.ok("sessions")
    byid = {s["id"]: s for s in r["sessions"]}
    assert sid in byid and other in byid, r
    assert byid[sid]["state"] == "idle" and byid[sid]["loaded"], byid[sid]
    assert byid[sid]["last_seq"] == len(d.events(sid)), byid[sid]
    assert call(d, sid, "create_shape", {
        "id": "ball", "type": "sphere",
        "properties": {"center": [0, 1, 0], "radius": 1}})["success"]
    assert call(d, sid, "draw_paths", {"paths": [
        {"type": "line", "points": [{"x": 1, "y": 1}, {"x": 50, "y": 50}]}]})[
        "success"]
    r = a.ok("session", {"session": sid})
    cv = r["namespaces"]["canvas"]["summary"]
    assert cv["strokes"] == 1 and cv["mode"] == "plotter" and \
        cv["piece"] == 1, cv
    ns = r["namespaces"]["echo_test"]
    assert ns["summary"] == {"keys": 5}, ns
    sc = r["namespaces"]["scene"]["summary"]
    assert sc["shapes"] == 1 and sc["shape_ids"] == ["ball"] and \
        sc["lights"] == 0, sc
    assert ns["bytes"] > 10
    r = a.call("session", {"session": "0" * 32})
    assert r["error"]["code"] == -32001, r
    r = a.call("session", {"session": "nope"})
    assert r["error"]["code"] == -32602 and "32-digit" in \
        r["error"]["message"], r
    a.close()


@check("clients lists every connection with its peer and counters, and "
       "client.kill closes one")
def _(ctx):
    d = ctx["d"]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(d.sock)
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"tool.list"}\n')
    buf = b""
    while b"\n" not in buf:
        buf += s.recv(1 << 20)
    a = Admin(admin_path(d))
    rows = a.ok("clients")
    mine = [c for c in rows if c["socket"] == "api" and
            c["last_method"] == "tool.list" and c["pid"] == os.getpid()]
    assert len(mine) == 1, rows
    c = mine[0]
    assert c["uid"] == os.getuid() and c["requests"] == 1, c
    assert c["bytes_in"] > 40 and c["bytes_out"] >= len(buf), c
    me = [x for x in rows if x["socket"] == "admin"]
    assert me and me[0]["last_method"] == "clients", rows
    assert a.ok("client.kill", {"id": c["id"]}) == {"killed": True}
    assert s.recv(10) == b"", "the killed connection is still open"
    r = a.call("client.kill", {"id": c["id"]})
    assert r["error"]["code"] == -32006, r
    r = a.call("client.kill", {"id": me[0]["id"]})
    assert r["error"]["code"] == -32602, r
    a.close()


@check("plugins: each with its tools, their calls, failures and time")
def _(ctx):
    d = ctx["d"]
    a = Admin(admin_path(d))
    r = a.ok("plugins")
    echo = [p for p in r if p["name"] == "echo_test"][0]
    tools = {t["name"]: t for t in echo["tools"]}
    assert tools["echo_store"]["calls"] >= 6, tools["echo_store"]
    assert echo["calls"] >= 7 and echo["failures"] >= 2, echo
    # The ABI the plugin was built against: the header's.
    with open(os.path.join(SRCDIR, "include", "atelier", "plugin.h")) as f:
        minor = int(re.search(r"^#define ATL_PLUGIN_ABI_MINOR (\d+)$",
                              f.read(), re.M).group(1))
    assert echo["version"] == "1.0.0" and echo["abi_minor"] == minor, echo
    a.close()


@check("log.level changes the level at run time and says what it was; a "
       "wrong level is refused")
def _(ctx):
    d = ctx["d"]
    a = Admin(admin_path(d))
    assert a.ok("log.level") == {"previous": "debug", "level": "debug"}
    assert a.ok("log.level", {"level": "warn"})["level"] == "warn"
    sid = d.session()
    n = log_text(d).count("Tool call: echo_store")
    call(d, sid, "echo_store", {"key": "a", "value": 1})
    time.sleep(0.2)
    assert log_text(d).count("Tool call: echo_store") == n
    assert a.ok("log.level", {"level": "debug"})["previous"] == "warn"
    call(d, sid, "echo_store", {"key": "b", "value": 1})
    time.sleep(0.2)
    assert log_text(d).count("Tool call: echo_store") == n + 1
    r = a.call("log.level", {"level": "loud"})
    assert r["error"]["code"] == -32602 and "debug" in \
        r["error"]["message"], r
    a.close()


@check("slowlog: what took longer than slowlog_ms, newest first, with "
       "its arguments; len, reset, and a bad count refused")
def _(ctx):
    d = Daemon("slow", CONF + "[admin]\nslowlog_ms = 100\nslowlog_max = 2\n",
               env=ENV)
    sid = d.session()
    a = Admin(admin_path(d))
    assert a.ok("slowlog.len") == {"len": 0}
    assert call(d, sid, "echo_sleep", {"ms": 20})["success"]
    assert a.ok("slowlog.len") == {"len": 0}, "a fast call was kept"
    for ms in (150, 160, 170):
        assert call(d, sid, "echo_sleep", {"ms": ms})["success"]
    r = a.ok("slowlog.get")
    assert r["threshold_ms"] == 100
    e = r["entries"]
    # At most slowlog_max, the newest first.
    assert [x["detail"]["args"]["ms"] for x in e] == [170, 160], e
    assert e[0]["kind"] == "tool" and e[0]["what"] == "echo_sleep" and \
        e[0]["session"] == sid and e[0]["ms"] >= 170, e[0]
    assert e[0]["detail"]["ok"] is True and e[0]["id"] > e[1]["id"], e
    assert len(a.ok("slowlog.get", {"count": 1})["entries"]) == 1
    r = a.call("slowlog.get", {"count": 0})
    assert r["error"]["code"] == -32602 and "1 to 100000" in \
        r["error"]["message"], r
    assert a.ok("slowlog.reset") == {"removed": 2}
    assert a.ok("slowlog.len") == {"len": 0}
    a.close()
    d.stop()


@check("the log reads as seed 003's mock-up: one info line a call with "
       "its session and time, a failure at error level with its message")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    assert call(d, sid, "create_shape", {
        "id": "blue_sphere", "type": "sphere",
        "properties": {"center": [0, 1, 0], "radius": 1}})["success"]
    assert not call(d, sid, "update_shape", {
        "id": "red_sphere", "updates": {"properties": {"radius": 2}}})[
        "success"]
    time.sleep(0.2)
    lines = [l for l in log_text(d).splitlines() if "session=" + sid in l]
    ok = [l for l in lines if 'msg="Tool call: create_shape (blue_sphere)"'
          in l]
    assert len(ok) == 1 and "level=info" in ok[0] and \
        re.search(r" ms=[0-9]+ ", ok[0]), lines
    bad = [l for l in lines if "Tool call FAIL: " in l]
    assert len(bad) == 1 and "level=error" in bad[0] and \
        "red_sphere" in bad[0] and "tool=update_shape" in bad[0], lines


@check("metrics: the Prometheus text, accepted by promtool check metrics")
def _(ctx):
    d = ctx["d"]
    a = Admin(admin_path(d))
    text = a.ok("metrics")["text"]
    a.close()
    assert 'atelier_tool_call_seconds_count{tool="echo_store"}' in text
    assert 'atelier_rpc_request_seconds{socket="api",method="tool.call",' \
        'quantile="0.99"}' in text, text[:2000]
    assert "atelier_store_commit_seconds_count" in text
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found (Debian package prometheus)"
    r = subprocess.run([promtool, "check", "metrics"], input=text,
                       capture_output=True, text=True, timeout=30)
    # promtool exits 0 when the text parses; lint remarks (none expected)
    # go to its output too.
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "" and r.stderr.strip() == "", \
        r.stdout + r.stderr


def trace_lines(a, until, timeout=10):
    """Trace lines read from a until until(lines) is true."""
    out = []
    deadline = time.monotonic() + timeout
    a.s.settimeout(1)
    while time.monotonic() < deadline and not until(out):
        try:
            out.append(a.line())
        except socket.timeout:
            continue
    return out


@check("trace of one session: that session's tool calls, events, and "
       "requests in order, and no other session's")
def _(ctx):
    d = ctx["d"]
    sid, other = d.session(), d.session()
    a = Admin(admin_path(d))
    r = a.ok("trace", {"session": sid})
    assert r["tracing"] and r["session"] == sid and "log" not in r["kinds"]
    call(d, other, "echo_store", {"key": "x", "value": 1})
    call(d, sid, "echo_store", {"key": "y", "value": 2})
    call(d, other, "echo_store", {"key": "z", "value": 3})
    call(d, sid, "echo_fail", {"message": "on purpose"})
    lines = trace_lines(a, lambda ls: sum(
        1 for l in ls if l.get("kind") == "tool" and l["what"] == "end") >= 2)
    a.close()
    assert all(l.get("session") == sid for l in lines), lines
    seq = [(l["kind"], l.get("what")) for l in lines]
    assert seq[0] == ("rpc", "tool.call"), seq
    assert ("tool", "start") in seq and ("tool", "end") in seq, seq
    starts = [l for l in lines if l["kind"] == "tool" and l["what"] == "start"]
    ends = [l for l in lines if l["kind"] == "tool" and l["what"] == "end"]
    assert [s["tool"] for s in starts] == ["echo_store", "echo_fail"], starts
    assert starts[0]["args"] == {"key": "y", "value": 2}, starts[0]
    assert ends[0]["ok"] is True and ends[0]["ms"] >= 0, ends[0]
    assert ends[1]["ok"] is False and ends[1]["error"] == "on purpose", ends
    # Bytes that are not UTF-8 in an error come out as U+FFFD: every line
    # stays JSON a strict parser takes.
    evs = [l for l in lines if l["kind"] == "event"]
    assert [e["type"] for e in evs][:3] == ["tool.started", "echo.store",
                                            "tool.finished"] or \
        "tool.finished" in [e["type"] for e in evs], evs
    seqs = [e["seq"] for e in evs]
    assert seqs == sorted(seqs), seqs
    ts = [l["t"] for l in lines]
    assert ts == sorted(ts), ts


# Every kind of byte the trace's writer treats apart, at the edges of its
# word-at-a-time scan: quotes, backslashes, control characters, DEL, and
# characters of two, three and four bytes.
TRICKY = ("café ✓ 日本 \"quoted\" back\\slash tab\t nl\n cr\r \x01\x1f "
          "del\x7f 🎨 0123456789abcdef\"\\\x02é")


@check("trace lines are strict JSON and UTF-8: a request with bytes that "
       "are not UTF-8 is refused before it, and text in other scripts "
       "comes out whole")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    a = Admin(admin_path(d))
    a.ok("trace", {"session": sid, "kinds": ["tool"]})
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(10)
    c.connect(d.sock)
    bad = (b'{"jsonrpc":"2.0","id":1,"method":"tool.call","params":{'
           b'"session":"' + sid.encode() + b'","name":"echo_fail",'
           b'"arguments":{"message":"caf\xc3\xa9 \xff\xfe end"}}}\n')
    c.sendall(bad)
    r = json.loads(c.recv(65536).split(b"\n")[0])
    assert r["error"]["code"] in (-32700, -32600), r
    good = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tool.call",
                       "params": {"session": sid, "name": "echo_fail",
                                  "arguments": {"message": TRICKY}}},
                      ensure_ascii=False).encode() + b"\n"
    c.sendall(good)
    c.recv(65536)
    c.close()
    a.s.settimeout(10)
    got = b""
    while got.count(b"\n") < 2:
        got += a.s.recv(65536)
    a.close()
    for line in got.splitlines():
        json.loads(line.decode("utf-8"))  # strict: raises on a bad byte
    end = json.loads(got.splitlines()[1])
    assert end["what"] == "end" and end["error"] == TRICKY, end


@check("trace kinds and a time limit: only the kinds asked for, then "
       '{"end": "time"} and the connection closes')
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    a = Admin(admin_path(d))
    a.ok("trace", {"kinds": ["commit", "log"], "seconds": 1.5,
                   "level": "info"})
    call(d, sid, "echo_store", {"key": "k", "value": 1})
    lines = trace_lines(a, lambda ls: ls and "end" in ls[-1], timeout=10)
    assert lines and lines[-1] == {"end": "time"}, lines[-3:]
    kinds = {l["kind"] for l in lines[:-1]}
    assert kinds <= {"commit", "log"} and "commit" in kinds and \
        "log" in kinds, kinds
    logs = [l for l in lines if l.get("kind") == "log"]
    assert any("Tool call: echo_store" in l["line"] for l in logs), logs
    assert all(l["level"] in ("error", "warn", "info") for l in logs), logs
    a.s.settimeout(5)
    assert a.s.recv(10) == b"", "still open after the end"
    a.close()
    r = Admin(admin_path(d)).call("trace", {"kinds": ["tools"]})
    assert r["error"]["code"] == -32602 and "rpc, run" in \
        r["error"]["message"], r


@check("trace never shows a secret: a redacting tool's arguments are "
       "keys only, and the provider key appears nowhere")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    a = Admin(admin_path(d))
    a.ok("trace", {"kinds": ["rpc", "tool", "event", "log"],
                   "level": "debug"})
    secret = "sk-canary-" + "7" * 24
    r = call(d, sid, "echo_vault", {"label": "mine", "api_key": secret})
    assert r["success"], r
    lines = trace_lines(a, lambda ls: any(
        l.get("kind") == "tool" and l["what"] == "end" for l in ls))
    a.close()
    text = json.dumps(lines)
    assert secret not in text and KEY not in text, text[:3000]
    start = [l for l in lines if l.get("what") == "start"][0]
    assert start["args"] == {"label": "(redacted)",
                             "api_key": "(redacted)"}, start
    rpcl = [l for l in lines if l.get("kind") == "rpc"][0]
    assert rpcl["params"]["arguments"]["api_key"] == "(redacted)", rpcl
    # The same secret in a "/tool {json}" message, and a key given twice
    # (the parser keeps the last; the raw line has both).
    a = Admin(admin_path(d))
    a.ok("trace", {"kinds": ["rpc"]})
    d.rpc("session.send", {"session": sid, "text": '/echo_vault {"label": '
                           '"x", "api_key": "%s"}' % secret})
    raw = ('{"jsonrpc":"2.0","id":9,"method":"tool.call","params":{'
           '"session":"%s","name":"echo_vault","arguments":{"label":"y",'
           '"api_key":"%s"},"arguments":{"label":"y","api_key":"%s"}}}\n'
           % (sid, secret, secret))
    c = socket.socket(socket.AF_UNIX)
    c.connect(d.sock)
    c.sendall(raw.encode())
    c.recv(65536)
    c.close()
    lines = trace_lines(a, lambda ls: len(ls) >= 2)
    a.close()
    text = json.dumps(lines)
    assert len(lines) >= 2 and secret not in text, text[:3000]
    assert lines[0]["params"]["text"] == "/echo_vault (redacted)", lines[0]


@check("a reader that stops reading loses lines, not the daemon's pace: "
       "the daemon keeps answering, RSS stays bounded, and the reader "
       'learns {"dropped": N}')
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    a = Admin(admin_path(d))
    a.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    a.ok("trace", {})

    def rss_kb():
        with open("/proc/%d/status" % d.proc.pid) as f:
            return int([l for l in f if l.startswith("VmRSS")][0].split()[1])
    rss0 = rss_kb()
    big = "x" * 1500  # each call's trace lines carry about 3 kB
    t0 = time.monotonic()
    for i in range(1500):
        assert call(d, sid, "echo_store", {"key": "k", "value": big})[
            "success"]
    took = time.monotonic() - t0
    grown = rss_kb() - rss0
    st = Admin(admin_path(d)).ok("stats")["trace"]
    assert st["dropped"] > 0, st
    # 1,500 calls well inside the time a healthy daemon takes; the
    # subscriber's buffer is 1 MiB.
    assert took < 60, took
    # At most the 1 MiB buffer and the heap's slack: 10 MB, as the issue
    # asks of a stalled subscriber. Under ASan its quarantine (256 MB of
    # freed blocks by default) counts in RSS too.
    assert grown < (320 if sanitized() else 10) * 1024, grown
    # Now read: the backlog, then the count of what was lost.
    lines = trace_lines(a, lambda ls: any("dropped" in l for l in ls),
                        timeout=20)
    if not any("dropped" in l for l in lines):
        call(d, sid, "echo_store", {"key": "k", "value": 1})
        lines += trace_lines(a, lambda ls: any("dropped" in l for l in ls))
    lost = [l for l in lines if "dropped" in l]
    assert lost and lost[0]["dropped"] > 0, lines[-3:]
    a.close()


@check("a conversation traced: the run, each turn's request, first byte "
       "and end, the tool calls in between; stats per provider and model")
def _(ctx):
    fake = Fake()
    ctx["fake"] = fake
    d = Daemon("agent", "[agent]\nprovider = fake\n[provider.fake]\n"
               "type = openai\nbase_url = %s\napi_key_env = FAKE_LLM_KEY\n"
               "models = fake-model\ntimeout_ms = 5000\n" % fake.url,
               env={"FAKE_LLM_KEY": KEY})
    fake.script([{"tool_calls": [{"id": "call_1", "name": "echo_store",
                                  "arguments": {"key": "k", "value": 1}}],
                  "usage": {"input": 30, "output": 5}},
                 {"text": "Stored.", "chunks": 3,
                  "usage": {"input": 40, "output": 3}}])
    sid = d.session()
    a = Admin(admin_path(d))
    a.ok("trace", {"session": sid, "kinds": ["run", "turn", "tool"]})
    ev = d.run(sid, "store something")
    assert ev[-1]["type"] == "run.completed", ev[-1]
    lines = trace_lines(a, lambda ls: any(
        l.get("kind") == "run" and l["what"] == "end" for l in ls))
    a.close()
    seq = [(l["kind"], l["what"]) for l in lines]
    assert seq == [("run", "start"), ("turn", "request"),
                   ("turn", "first_byte"), ("turn", "end"),
                   ("tool", "start"), ("tool", "end"), ("turn", "request"),
                   ("turn", "first_byte"), ("turn", "end"),
                   ("run", "end")], seq
    assert lines[1]["provider"] == "fake" and lines[1]["model"] == \
        "fake-model" and lines[1]["bytes"] > 100, lines[1]
    assert lines[3]["tokens_in"] == 30 and lines[3]["tool_calls"] == 1, \
        lines[3]
    assert lines[-1]["tokens_in"] == 70 and lines[-1]["how"] == \
        "run.completed", lines[-1]
    st = Admin(admin_path(d)).ok("stats")["series"]
    m = st["model"]["fake/fake-model"]
    assert m["calls"] == 2 and m["tokens_in"] == 70 and \
        m["tokens_out"] == 8 and m["errors"] == 0, m
    assert st["model_ttfb"]["fake/fake-model"]["calls"] == 2
    r = Admin(admin_path(d)).ok("sessions")
    me = [s for s in r["sessions"] if s["id"] == sid][0]
    assert me["agent"]["turns"] == 2 and me["agent"]["running"] is False, me
    assert KEY not in json.dumps(lines) + json.dumps(st)
    d.stop()
    ctx["fake"] = None


@check("a render traced and counted: its start and end with passes and "
       "paths per second")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    assert call(d, sid, "create_shape", {
        "id": "ball", "type": "sphere",
        "properties": {"center": [0, 1, 0], "radius": 1}})["success"]
    a = Admin(admin_path(d))
    a.ok("trace", {"session": sid, "kinds": ["render"]})
    r = d.rpc("tool.call", {"session": sid, "name": "render_scene",
                            "arguments": {"width": 32, "height": 24,
                                          "samples": 4}}, timeout=120)
    assert r["success"], r
    # The live previews of the change above render too, marked as such
    # (test_preview.py); this check is about render_scene's.
    lines = trace_lines(a, lambda ls: len([l for l in ls
                                           if not l.get("preview")]) >= 2,
                        timeout=30)
    a.close()
    previews = [l for l in lines if l.get("preview")]
    assert all(l["what"] in ("start", "end") for l in previews), previews
    lines = [l for l in lines if not l.get("preview")]
    assert [l["what"] for l in lines] == ["start", "end"], lines
    assert lines[0]["width"] == 32 and lines[1]["ok"] is True, lines
    assert lines[1]["passes"] >= 1 and lines[1]["paths_per_s"] > 0, lines
    st = Admin(admin_path(d)).ok("stats")["series"]["render"]["tool"]
    assert st["calls"] >= 1 and st["passes"] >= 1 and st["paths"] >= \
        32 * 24, st


@check("atelierctl admin and trace: tables, JSON, and a trace that ends "
       "cleanly when the daemon is killed")
def _(ctx):
    d = Daemon("ctl", CONF, env=ENV)
    env = dict(os.environ, ATELIER_SOCKET_DIR=os.path.dirname(d.sock))
    r = subprocess.run([CTL, "admin", "info"], capture_output=True, text=True,
                       env=env, timeout=20)
    assert r.returncode == 0 and json.loads(r.stdout)["pid"] == d.proc.pid, \
        r.stderr
    sid = d.session()
    r = subprocess.run([CTL, "admin", "sessions"], capture_output=True,
                       text=True, env=env, timeout=20)
    assert r.returncode == 0 and sid in r.stdout and "STATE" in r.stdout, r
    r = subprocess.run([CTL, "admin", "log-level", "loud"],
                       capture_output=True, text=True, env=env, timeout=20)
    assert r.returncode == 2 and "debug" in r.stderr, r
    tr = subprocess.Popen([CTL, "trace", sid, "--json"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(0.5)
    call(d, sid, "echo_store", {"key": "k", "value": 1})
    time.sleep(0.5)
    d.kill()
    out, err = tr.communicate(timeout=10)
    assert tr.returncode == 0, (tr.returncode, err)
    kinds = [json.loads(l)["kind"] for l in out.splitlines()]
    assert "tool" in kinds and "event" in kinds, out


@check("atelierctl top in tmux: the rates, the busiest tools, the "
       "sessions, refreshed; q quits")
def _(ctx):
    d = Daemon("top", CONF, env=ENV)
    sid = d.session()
    for i in range(3):
        call(d, sid, "echo_store", {"key": "k%d" % i, "value": i})
    tmux = ["tmux", "-L", "atl-top-%d" % os.getpid()]
    cmd = "env ATELIER_SOCKET_DIR=%s %s top" % (os.path.dirname(d.sock), CTL)
    subprocess.run(tmux + ["new-session", "-d", "-s", "top", "-x", "120",
                           "-y", "40", cmd], check=True, timeout=20)
    try:
        # Calls while it runs: a refresh shows a rate above 0.
        screen, rates = "", None
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            for _ in range(20):
                call(d, sid, "echo_store", {"key": "k", "value": 1})
            screen = subprocess.run(tmux + ["capture-pane", "-p", "-t", "top"],
                                    capture_output=True, text=True,
                                    timeout=10).stdout
            rates = re.search(r"calls/s ([0-9.]+)", screen)
            if rates and float(rates.group(1)) > 0 and sid in screen:
                break
        assert rates and float(rates.group(1)) > 0, screen
        assert sid in screen and "echo_store" in screen, screen
        assert "pid %d" % d.proc.pid in screen, screen
        subprocess.run(tmux + ["send-keys", "-t", "top", "q"], check=True,
                       timeout=10)
        for _ in range(50):
            if subprocess.run(tmux + ["has-session", "-t", "top"],
                              capture_output=True).returncode != 0:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("top did not quit on q")
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True)
    d.stop()


@check("a secret: nothing but auth before it, a wrong one refused and "
       "logged, three and the connection closes, the right one works")
def _(ctx):
    sec = os.path.join(TMP, "admin.secret")
    with open(sec, "w") as f:
        f.write("correct-horse-battery-staple\n")
    os.chmod(sec, 0o600)
    d = Daemon("secret", CONF + "[admin]\nsecret_file = %s\n" % sec,
               env=ENV)
    a = Admin(admin_path(d))
    r = a.call("info")
    assert r["error"]["code"] == -32005 and "auth" in r["error"]["message"]
    for i in range(3):
        r = a.call("auth", {"secret": "correct-horse-battery-stapl%d" % i})
        assert r["error"]["code"] == -32005, r
    a.s.settimeout(5)
    assert a.s.recv(10) == b"", "open after three wrong secrets"
    assert "admin authentication failed" in log_text(d)
    assert "correct-horse" not in log_text(d)
    a = Admin(admin_path(d))
    assert a.ok("auth", {"secret": "correct-horse-battery-staple"}) == \
        {"authenticated": True}
    assert a.ok("info")["config"]["admin_secret"] == "set"
    a.close()
    env = dict(os.environ, ATELIER_SOCKET_DIR=os.path.dirname(d.sock))
    r = subprocess.run([CTL, "--secret-file", sec, "admin", "clients",
                        "--json"], capture_output=True, text=True, env=env,
                       timeout=20)
    assert r.returncode == 0 and json.loads(r.stdout), r.stderr
    d.stop()
    # A secret others may read stops the daemon at start.
    os.chmod(sec, 0o644)
    try:
        Daemon("secret2", CONF + "[admin]\nsecret_file = %s\n" % sec,
               env=ENV)
        raise AssertionError("started with a world-readable secret")
    except RuntimeError:
        pass
    with open(os.path.join(TMP, "secret2", "daemon.log")) as f:
        assert "others may read it" in f.read()


@check("accept_sessions false refuses new sessions and messages, tool "
       "calls go on; shutdown {timeout} stops the daemon")
def _(ctx):
    d = Daemon("drain", CONF, env=ENV)
    sid = d.session()
    a = Admin(admin_path(d))
    assert a.ok("accept_sessions", {"accept": False})["accepting"] is False
    try:
        d.session()
        raise AssertionError("a session was created while draining")
    except RuntimeError as e:
        assert "-32007" in str(e) and "draining" in str(e), e
    assert call(d, sid, "echo_store", {"key": "k", "value": 1})["success"]
    assert a.ok("info")["accepting_sessions"] is False
    assert a.ok("accept_sessions", {"accept": True})["accepting"] is True
    d.session()
    r = a.call("shutdown", {"timeout": "soon"})
    assert r["error"]["code"] == -32602, r
    assert a.ok("shutdown", {"timeout": 2})["shutting_down"] is True
    assert d.proc.wait(timeout=15) == 0


def main():
    d = Daemon("main", CONF, env=ENV)
    passed, failed = run_checks(CHECKS, {"d": d})
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
