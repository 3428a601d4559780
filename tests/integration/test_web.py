#!/usr/bin/env python3
"""The web stack end to end: real nginx, atelier-fcgi and atelierd, started
by scripts/atelier-stack, with the fake LLM provider (tests/fake-llm) as the
model. Every /api/ endpoint and its status codes, the SSE framing and
Last-Event-ID resume (nothing lost, nothing doubled), heartbeats, security
headers and gzip, oversize and malformed requests (HTTP and raw FastCGI),
and the bridge's streams surviving a daemon killed and restarted.

Python 3 standard library only; TAP-like output, exit status 1 on failure.
"""
import gzip
import http.client
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import traceback

from atltest import BUILDDIR, PROCS, SRCDIR, TMP, Fake, free_port

STACK = os.path.join(SRCDIR, "scripts", "atelier-stack")
KEY = "sk-web-test-SECRET"


class Stack:
    """scripts/atelier-stack, the project's own way of running the stack."""

    def __init__(self, fake_url, fcgi_args=(), name="stack", extra_conf="",
                 stack_args=()):
        self.data = os.path.join(TMP, name)
        self.port = free_port()
        conf = os.path.join(TMP, name + ".conf")
        with open(conf, "w") as f:
            f.write("[agent]\nprovider = fake\nqueue_max = 1\n"
                    "[provider.fake]\ntype = openai\nbase_url = %s\n"
                    "api_key_env = FAKE_LLM_KEY\nmodels = fake-model, other\n"
                    "timeout_ms = 5000\n%s" % (fake_url, extra_conf))
        args = [STACK, "--build", BUILDDIR, "--data", self.data, "--port",
                str(self.port), "--config", conf, "--plugin-dir",
                os.path.join(BUILDDIR, "tests", "plugins", ".libs")] + list(stack_args)
        for a in fcgi_args:
            args += ["--fcgi-arg", a]
        env = dict(os.environ, FAKE_LLM_KEY=KEY)
        self.out = open(os.path.join(TMP, name + ".out"), "w+")
        # SIGINT as a terminal leaves it: a shell that starts the tests as a
        # background job (nohup ... &, no job control) has it ignored, and
        # bash can then never trap it, so the Ctrl-C check would hang.
        self.proc = subprocess.Popen(
            args, stdout=self.out, stderr=subprocess.STDOUT, env=env,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        PROCS.append(self.proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self.out.seek(0)
            m = re.search(r"atelier: ready at (\S+)", self.out.read())
            if m:
                self.url = m.group(1)
                self.token = self.read_token()
                return
            assert self.proc.poll() is None, self.log()
            time.sleep(0.1)
        raise AssertionError("the stack did not start: " + self.log())

    def read_token(self):
        """The HTTP API's token (atelierd makes it in its data directory),
        or None where there is none (an older atelierd, or auth off)."""
        try:
            with open(os.path.join(self.data, "store", "token")) as f:
                return f.read().strip()
        except FileNotFoundError:
            return None

    def auth(self):
        """The headers every request of a script carries."""
        return {"Authorization": "Bearer " + self.token} if self.token else {}

    def log(self):
        self.out.seek(0)
        return self.out.read()

    def conn(self, timeout=20):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, raw=False,
                auth=True):
        """(status, headers dict (lowercase names), body: parsed JSON or bytes).
        The token goes with it unless auth is False (or headers name another
        Authorization); a POST is JSON unless headers say otherwise."""
        c = self.conn()
        h = dict(self.auth() if auth else {})
        h.update(headers or {})
        h = {k: v for k, v in h.items() if v is not None}
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if method == "POST" and (headers is None or "Content-Type" not in headers):
            h.setdefault("Content-Type", "application/json")
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        if raw:
            return r.status, hdrs, data
        ctype = hdrs.get("content-type", "")
        if ctype.startswith("application/json") and data:
            return r.status, hdrs, json.loads(data)
        return r.status, hdrs, data

    def session(self, **body):
        st, _, b = self.request("POST", "/api/sessions", body or None)
        assert st == 201, (st, b)
        return b["id"]

    def pid_of(self, name):
        out = subprocess.run(["pgrep", "-f", "%s .*%s" % (name, self.data)],
                             capture_output=True, text=True).stdout.split()
        return [int(p) for p in out]


class SSE:
    """A raw event-stream reader: yields (id, event, data, comments)."""

    def __init__(self, stack, sid, headers=None, query=""):
        self.c = stack.conn(timeout=20)
        h = stack.auth()
        h.update(headers or {})
        self.c.request("GET", "/api/sessions/%s/events%s" % (sid, query),
                       headers=h)
        self.r = self.c.getresponse()
        self.headers = {k.lower(): v for k, v in self.r.getheaders()}
        self.comments = []
        self.raw = []

    def _line(self):
        """The next line of the stream; comment lines are also kept."""
        line = self.r.readline()
        if not line:
            raise EOFError("the stream ended")
        line = line.decode()
        self.raw.append(line)
        if line.startswith(":"):
            self.comments.append(line.strip())
        return line

    def next(self, timeout=20):
        """The next event as a dict {id, event, data}; comments are kept."""
        self.c.sock.settimeout(timeout)
        ev = {}
        while True:
            line = self._line()
            if line == "\n":
                if "data" in ev:
                    return ev
                ev = {}
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.rstrip("\n").partition(": ")
            if name == "data":
                ev["data"] = json.loads(value)
            elif name in ("id", "event", "retry"):
                ev[name] = value

    def comment(self, timeout=10):
        """Reads until a comment line comes; returns it."""
        self.c.sock.settimeout(timeout)
        while True:
            line = self._line()
            if line.startswith(":"):
                return line.strip()

    def until(self, types, timeout=20):
        out = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            e = self.next(timeout=max(0.1, deadline - time.monotonic()))
            out.append(e)
            if e["event"] in types:
                return out
        raise AssertionError("no %s: %s" % (types, [e["event"] for e in out]))

    def close(self):
        self.c.close()


END = ("run.completed", "run.error", "run.cancelled", "run.limit_reached")
results = []


def check(name):
    def wrap(fn):
        results.append((name, fn))
        return fn
    return wrap


# ---------------------------------------------------------------- checks

@check("health, models and tools through nginx and the bridge")
def _(ctx):
    s = ctx["stack"]
    st, h, b = s.request("GET", "/api/health")
    assert st == 200 and b["status"] == "ok" and b["version"], (st, b)
    assert h["content-type"] == "application/json", h
    assert h["cache-control"] == "no-store", h
    st, _, b = s.request("GET", "/api/models")
    assert st == 200 and b["provider"] == "fake" and b["models"] == [
        "fake-model", "other"] and b["default"] == "fake-model", b
    st, _, b = s.request("GET", "/api/tools")
    assert st == 200 and any(t["name"] == "create_shape" for t in b), b
    st, h, b = s.request("HEAD", "/api/health")
    assert st == 200 and b == b"", (st, b)


@check("/metrics: the daemon's counters for Prometheus through nginx and "
       "the bridge, accepted by promtool; the token and loopback required")
def _(ctx):
    s = ctx["stack"]
    st, h, b = s.request("GET", "/metrics", raw=True)
    assert st == 200, (st, b[:300])
    assert h["content-type"] == "text/plain; version=0.0.4; charset=utf-8", h
    text = b.decode()
    assert "# TYPE atelier_uptime_seconds gauge" in text, text[:500]
    assert 'atelier_rpc_request_seconds_count{socket="api",method=' in text
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found (Debian package prometheus)"
    r = subprocess.run([promtool, "check", "metrics"], input=text,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), \
        r.stdout + r.stderr
    st, _, b = s.request("GET", "/metrics", auth=False)
    assert st == 401, (st, b)
    # Another Host (DNS rebinding): nginx closes without an answer (444).
    try:
        st, _, b = s.request("GET", "/metrics",
                             headers={"Host": "evil.example"})
        raise AssertionError("answered for another host: %s %r" % (st, b))
    except http.client.RemoteDisconnected:
        pass
    st, _, b = s.request("POST", "/metrics", body={})
    assert st == 405, (st, b)
    # From another loopback address than 127.0.0.1: nginx's deny.
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10,
                                 source_address=("127.0.0.2", 0))
    c.sendall(("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
               "Authorization: Bearer %s\r\nConnection: close\r\n\r\n"
               % (s.port, s.token)).encode())
    resp = b""
    while True:
        chunk = c.recv(65536)
        if not chunk:
            break
        resp += chunk
    c.close()
    assert resp.startswith(b"HTTP/1.1 403"), resp[:200]


@check("sessions: create (with a model), list, get, delete, then 404")
def _(ctx):
    s = ctx["stack"]
    sid = s.session(model="other")
    st, _, b = s.request("GET", "/api/sessions")
    assert st == 200 and any(x["id"] == sid and x["model"] == "other" for x in b), b
    st, _, b = s.request("GET", "/api/sessions/" + sid)
    assert st == 200 and b["id"] == sid and b["document"] == {} and b["history"] == [], b
    st, _, b = s.request("DELETE", "/api/sessions/" + sid)
    assert st == 200 and b == {"deleted": True}, (st, b)
    st, _, b = s.request("GET", "/api/sessions/" + sid)
    assert st == 404 and "no such session" in b["error"], (st, b)
    st, _, b = s.request("DELETE", "/api/sessions/" + sid)
    assert st == 404, (st, b)
    st, _, b = s.request("POST", "/api/sessions", {"model": "bad name"})
    assert st == 400 and "may only contain" in b["error"], (st, b)


@check("a message streams its run as SSE: id/event/data framing, in order")
def _(ctx):
    s, fake = ctx["stack"], ctx["fake"]
    fake.script([{"text": "Placing it.", "chunks": 3, "tool_calls": [
        {"name": "echo", "arguments": {"text": "x"}}]},
        {"text": "Done <b>now</b>.", "chunks": 2}])
    sid = s.session()
    ev = SSE(s, sid)
    assert ev.r.status == 200, ev.r.status
    assert ev.headers["content-type"].startswith("text/event-stream"), ev.headers
    # (X-Accel-Buffering is for nginx, which keeps it: streaming is shown
    # by the events arriving as they are committed, below and in the
    # heartbeat check.)
    assert "content-length" not in ev.headers, ev.headers
    st, _, b = s.request("POST", "/api/sessions/%s/messages" % sid, {"text": "go"})
    assert st == 202 and b == {"queued": False}, (st, b)
    got = ev.until(END)
    ev.close()
    assert got[0]["event"] == "session.created", got[0]
    assert got[-1]["event"] == "run.completed", [e["event"] for e in got]
    ids = [int(e["id"]) for e in got]
    assert ids == list(range(1, len(got) + 1)), ids
    for e in got:
        assert e["data"]["seq"] == int(e["id"]) and e["data"]["type"] == e["event"], e
    text = "".join(e["data"]["data"]["text"] for e in got if e["event"] == "text.delta")
    assert text == "Placing it.Done <b>now</b>.", text
    ctx["run_sid"], ctx["run_events"] = sid, got


@check("Last-Event-ID and ?after= resume after the given event: none lost, none doubled")
def _(ctx):
    s = ctx["stack"]
    sid, all_ev = ctx["run_sid"], ctx["run_events"]
    n = len(all_ev)
    for k in (0, 1, n // 2, n - 1):
        ev = SSE(s, sid, headers={"Last-Event-ID": str(k)} if k else None)
        got = [ev.next() for _ in range(n - k)]
        ev.close()
        assert [int(e["id"]) for e in got] == list(range(k + 1, n + 1)), (k, got)
        assert [e["data"] for e in got] == [e["data"] for e in all_ev[k:]], k
    ev = SSE(s, sid, query="?after=%d" % (n - 2))
    got = [ev.next(), ev.next()]
    ev.close()
    assert [int(e["id"]) for e in got] == [n - 1, n], got
    # Last-Event-ID wins over ?after= (a reconnect of a page opened with it).
    ev = SSE(s, sid, headers={"Last-Event-ID": str(n - 1)}, query="?after=0")
    assert int(ev.next()["id"]) == n
    ev.close()
    for bad in ({"Last-Event-ID": "x"}, {"Last-Event-ID": "-1"}):
        st, _, b = s.request("GET", "/api/sessions/%s/events" % sid, headers=bad)
        assert st == 400 and "Last-Event-ID" in b["error"], (bad, st, b)
    st, _, b = s.request("GET", "/api/sessions/%s/events?after=1e3" % sid)
    assert st == 400, (st, b)
    st, _, b = s.request("GET", "/api/sessions/%s/events" % ("0" * 32))
    assert st == 404, (st, b)


@check("a long backlog (past one read, past the hub's memory) comes whole and in order")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    live = SSE(s, sid)  # a stream already on the session's hub
    assert live.next()["event"] == "session.created"
    c = s.conn()
    for i in range(1100):
        c.request("POST", "/api/sessions/%s/tools/echo" % sid,
                  body=json.dumps({"text": str(i)}),
                  headers=dict(s.auth(), **{"Content-Type": "application/json"}))
        r = c.getresponse()
        r.read()
        assert r.status == 200, r.status
    c.close()
    late = SSE(s, sid, headers={"Last-Event-ID": "1"})
    got = [late.next() for _ in range(1100)]
    late.close()
    live_got = [live.next() for _ in range(1100)]
    live.close()
    for g in (got, live_got):
        assert [int(e["id"]) for e in g] == list(range(2, 1102)), g[:3]
        assert [e["data"]["data"]["operation"]["arguments"]["text"]
                for e in g] == [str(i) for i in range(1100)]


@check("an idle stream sends heartbeat comments")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    ev = SSE(s, sid)
    ev.next()  # session.created
    t0 = time.monotonic()
    first = ev.comment(timeout=10)
    took = time.monotonic() - t0
    second = ev.comment(timeout=10)
    ev.close()
    # The stack runs the bridge with --heartbeat-ms 2000.
    assert first == second == ": heartbeat", ev.raw
    assert took < 4, "a heartbeat within about 2 s, not %.1f s" % took


@check("a full queue is 429; cancel answers whether a run was active")
def _(ctx):
    s, fake = ctx["stack"], ctx["fake"]
    fake.script([{"text": "slow", "chunks": 10, "delay_ms": 200}] * 3)
    sid = s.session()
    st1, _, b1 = s.request("POST", "/api/sessions/%s/messages" % sid, {"text": "1"})
    st2, _, b2 = s.request("POST", "/api/sessions/%s/messages" % sid, {"text": "2"})
    st3, _, b3 = s.request("POST", "/api/sessions/%s/messages" % sid, {"text": "3"})
    assert (st1, st2) == (202, 202) and b2 == {"queued": True}, (b1, b2)
    assert st3 == 429 and b3["code"] == -32004, (st3, b3)
    st, _, b = s.request("POST", "/api/sessions/%s/cancel" % sid)
    assert st == 200 and b == {"cancelled": True}, (st, b)
    ev = SSE(s, sid)
    got = ev.until(("run.cancelled",))
    ev.close()
    assert got[-1]["event"] == "run.cancelled", got


def new_image(s):
    """A new session with a 4x4 image of echo_image: (session, image id)."""
    sid = s.session()
    st, _, env = s.request("POST", "/api/sessions/%s/tools/echo_image" % sid,
                           {"width": 4, "height": 4})
    assert st == 200 and env["success"] is True, (st, env)
    return sid, env["images"][0]["id"]


@check("images: bytes, immutable cache headers, ETag and 304")
def _(ctx):
    s = ctx["stack"]
    _, img = new_image(s)
    st, h, data = s.request("GET", "/api/images/%s.png" % img, raw=True)
    assert st == 200 and data.startswith(b"\x89PNG\r\n\x1a\n"), (st, data[:8])
    assert h["content-type"] == "image/png" and int(h["content-length"]) == len(data), h
    assert h["etag"] == '"%s"' % img, h
    assert "immutable" in h["cache-control"] and "max-age=31536000" in h["cache-control"], h
    st, h, data = s.request("GET", "/api/images/%s.png" % img,
                            headers={"If-None-Match": '"%s"' % img}, raw=True)
    assert st == 304 and data == b"", st
    st, _, b = s.request("GET", "/api/images/%s.png" % ("0" * 64))
    assert st == 404, (st, b)
    st, _, b = s.request("GET", "/api/images/xyz.png")
    assert st == 404 and "64 lowercase hex" in b["error"], b


@check("a direct tool call answers the envelope; bad arguments are an error envelope")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    st, _, env = s.request("POST", "/api/sessions/%s/tools/create_shape" % sid,
                           {"id": "ball", "type": "sphere",
                            "properties": {"center": [0, 1, 0], "radius": 1}})
    assert st == 200 and env["success"] is True, env
    st, _, env = s.request("POST", "/api/sessions/%s/tools/create_shape" % sid,
                           {"id": "b2", "type": "sphere",
                            "properties": {"center": [0, 1, 0], "radius": -1}})
    assert st == 200 and env["success"] is False and "radius" in env["error"], env
    st, _, env = s.request("POST", "/api/sessions/%s/tools/no_such_tool" % sid, {})
    assert st == 200 and env["success"] is False and "unknown tool" in env["error"], env
    st, _, b = s.request("GET", "/api/sessions/" + sid)
    assert [x["id"] for x in b["document"]["scene"]["shapes"]] == ["ball"], b["document"]


def final_preview(ev):
    """The next final live preview on an event stream: its data."""
    while True:
        e = ev.until(("preview",))[-1]["data"]["data"]
        if e["final"]:
            return e


@check("live previews: the picture through nginx, a replaced one 404, "
       "a new one on request")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    ev = SSE(s, sid)
    # Not another check's scene: pictures are named by their bytes, and
    # the same scene gives the same picture in any session.
    ball = {"id": "ball", "type": "sphere",
            "properties": {"center": [0, 1, 0], "radius": 1.3}}
    st, _, env = s.request("POST", "/api/sessions/%s/tools/create_shape" % sid,
                           ball)
    assert st == 200 and env["success"], env
    first = final_preview(ev)
    st, h, data = s.request("GET", "/api/previews/%s.png" % first["image"],
                            raw=True)
    assert st == 200 and data.startswith(b"\x89PNG\r\n\x1a\n"), (st, data[:8])
    assert h["content-type"] == "image/png", h
    assert h["etag"] == '"%s"' % first["image"], h
    # HQ on request: a new final preview, and the first one is gone.
    st, _, b = s.request("POST", "/api/sessions/%s/preview" % sid,
                         {"quality": "hq"})
    assert st == 200 and b == {"enabled": True, "requested": 1}, (st, b)
    hq = final_preview(ev)
    ev.close()
    assert hq["quality"] == "hq" and hq["image"] != first["image"], hq
    # A replaced picture is served a little longer (render.preview_grace_ms,
    # 10 s), then is a 404 that says what to do.
    deadline = time.monotonic() + 15
    while True:
        st, _, b = s.request("GET", "/api/previews/%s.png" % first["image"])
        if st != 200 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert st == 404 and "session.preview" in b["error"], (st, b)
    st, _, b = s.request("GET", "/api/previews/xyz.png")
    assert st == 404 and "64 lowercase hex" in b["error"], b
    st, _, b = s.request("POST", "/api/sessions/%s/preview" % sid,
                         {"quality": "best"})
    assert st == 400 and '"hq"' in b["error"], (st, b)
    st, _, b = s.request("POST", "/api/sessions/%s/preview" % sid, [1])
    assert st == 400 and "quality" in b["error"], (st, b)
    st, h, b = s.request("GET", "/api/sessions/%s/preview" % sid)
    assert st == 405 and h["allow"] == "POST", (st, h)
    st, _, b = s.request("POST", "/api/sessions/%s/preview" % ("0" * 32), {})
    assert st == 404, (st, b)


@check("bad requests: 404, 405 with Allow, 400, 413 and 415, all as JSON")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    cases = [
        ("GET", "/api/nothing", None, {}, 404, "no such resource"),
        ("GET", "/api/sessions/NOTANID", None, {}, 404, "32 lowercase hex"),
        ("GET", "/api/sessions/%s/nothing" % sid, None, {}, 404, "no such resource"),
        ("PUT", "/api/sessions", b"{}", {}, 405, "allowed: GET, HEAD, POST"),
        ("GET", "/api/sessions/%s/messages" % sid, None, {}, 405, "allowed: POST"),
        ("POST", "/api/sessions/%s/messages" % sid, b"{not json",
         {"Content-Type": "application/json"}, 400, "not valid JSON"),
        ("POST", "/api/sessions/%s/messages" % sid, b"[1]",
         {"Content-Type": "application/json"}, 400, "must be {"),
        ("POST", "/api/sessions/%s/messages" % sid, b'{"text": "x", "extra": 1}',
         {"Content-Type": "application/json"}, 400, "extra"),
        ("POST", "/api/sessions/%s/messages" % sid, b"text=hi",
         {"Content-Type": "application/x-www-form-urlencoded"}, 415, "must be JSON"),
        ("POST", "/api/sessions/%s/messages" % sid, b"{" + b" " * (2 << 20) + b"}",
         {"Content-Type": "application/json"}, 413, "larger than"),
        ("POST", "/api/sessions/%s/tools/Bad-Name" % sid, b"{}",
         {"Content-Type": "application/json"}, 404, "no such resource"),
    ]
    for method, path, body, headers, want, needle in cases:
        st, h, b = s.request(method, path, body, headers)
        assert st == want, (method, path, st, b)
        assert h.get("content-type", "").startswith("application/json"), (path, h)
        assert needle in b["error"], (method, path, b)
        if want == 405:
            assert h["allow"] in b["error"], h


@check("security headers on the page and the API; gzip for static files")
def _(ctx):
    s = ctx["stack"]
    for path in ("/", "/api/health"):
        st, h, _ = s.request("GET", path, raw=True)
        assert st == 200, (path, st)
        csp = h.get("content-security-policy", "")
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp, (path, csp)
        assert h.get("x-content-type-options") == "nosniff", (path, h)
        assert h.get("referrer-policy") == "no-referrer", (path, h)
    st, h, body = s.request("GET", "/", raw=True)
    assert h["content-type"].startswith("text/html") and b"<html" in body.lower(), h
    css = [f for f in os.listdir(os.path.join(SRCDIR, "fcgi", "www"))
           if f.endswith(".css")][0]
    st, h, body = s.request("GET", "/" + css, headers={"Accept-Encoding": "gzip"},
                            raw=True)
    assert st == 200 and h.get("content-encoding") == "gzip", h
    with open(os.path.join(SRCDIR, "fcgi", "www", css), "rb") as f:
        assert gzip.decompress(body) == f.read()


def fcgi_record(rtype, req_id, content):
    return struct.pack("!BBHHBx", 1, rtype, req_id, len(content), 0) + content


@check("malformed FastCGI on the bridge's socket does not hurt it")
def _(ctx):
    s = ctx["stack"]
    path = os.path.join(s.data, "run", "fcgi.sock")
    junk = [b"", b"\x00" * 64, b"GET / HTTP/1.1\r\n\r\n", os.urandom(4096),
            # A BEGIN_REQUEST then params that claim more than they hold.
            fcgi_record(1, 1, struct.pack("!HB5x", 1, 0)) +
            fcgi_record(4, 1, b"\x7f\x7fREQUEST_METHOD"),
            # A whole request with no parameters at all.
            fcgi_record(1, 1, struct.pack("!HB5x", 1, 0)) + fcgi_record(4, 1, b"") +
            fcgi_record(5, 1, b"")]
    for j in junk:
        c = socket.socket(socket.AF_UNIX)
        c.settimeout(5)
        c.connect(path)
        c.sendall(j)
        c.shutdown(socket.SHUT_WR)
        try:
            while c.recv(65536):
                pass
        except OSError:
            pass
        c.close()
    st, _, b = s.request("GET", "/api/health")
    assert st == 200 and b["status"] == "ok", (st, b)
    assert s.pid_of("atelier-fcgi") == ctx["fcgi_pids"], "the bridge did not restart"


def fcgi_params(pairs):
    out = b""
    for k, v in pairs.items():
        k, v = k.encode(), v.encode()
        for n in (len(k), len(v)):
            out += struct.pack("!B", n) if n < 128 else struct.pack("!I", n | 0x80000000)
        out += k + v
    return out


def fcgi_call(sock_path, params, body=b""):
    """One request over raw FastCGI, the way nginx sends it: (status, the
    JSON body). Lets a test set what nginx would (SERVER_ADDR)."""
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(10)
    c.connect(sock_path)
    c.sendall(fcgi_record(1, 1, struct.pack("!HB5x", 1, 0)) +
              fcgi_record(4, 1, fcgi_params(params)) + fcgi_record(4, 1, b"") +
              (fcgi_record(5, 1, body) if body else b"") + fcgi_record(5, 1, b""))
    data = b""
    while True:
        chunk = c.recv(65536)
        if not chunk:
            break
        data += chunk
    c.close()
    out, i = b"", 0
    while i + 8 <= len(data):
        _, rtype, _, clen, plen = struct.unpack("!BBHHB", data[i:i + 7])
        if rtype == 6:
            out += data[i + 8:i + 8 + clen]
        i += 8 + clen + plen
    head, _, payload = out.partition(b"\r\n\r\n")
    m = re.search(rb"Status: (\d+)", head)
    return int(m.group(1)) if m else 200, json.loads(payload)


def raw_http(port, text):
    """Sends text as it is; returns what came back (b"" when nginx closed
    the connection without an answer: its 444)."""
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    c.sendall(text.encode())
    data = b""
    try:
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    c.close()
    return data


def session_ids(s):
    st, _, b = s.request("GET", "/api/sessions")
    assert st == 200, (st, b)
    return sorted(x["id"] for x in b)


@check("issue 17's reproductions: a rebinding Host and a cross-site POST without Content-Type")
def _(ctx):
    s = ctx["stack"]
    before = session_ids(s)
    auth = "Authorization: Bearer %s\r\n" % s.token if s.token else ""
    # nginx's default server closes the connection for any other Host
    # (444), whatever the method or the form of the request line, token
    # or not.
    for line, host in (("GET /api/sessions", "rebind.attacker.example"),
                       ("GET /api/sessions", "rebind.attacker.example:%d" % s.port),
                       ("HEAD /api/sessions", "rebind.attacker.example"),
                       ("GET /", "rebind.attacker.example"),
                       ("POST /api/sessions", "evil.example"),
                       ("GET http://rebind.attacker.example/api/sessions", "127.0.0.1")):
        got = raw_http(s.port, "%s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: 0\r\n"
                       "Connection: close\r\n\r\n" % (line, host, auth))
        assert got == b"", (line, host, got[:200])
    got = raw_http(s.port, "GET /api/sessions HTTP/1.0\r\n%s\r\n" % auth)
    assert got == b"", ("no Host", got[:200])
    # The bridge checks Host too: behind an nginx that passed it (an
    # absolute URI names the server; the Host header is the attacker's),
    # and a name nginx accepts but the browser's origin is another.
    for line, host in (("GET http://127.0.0.1:%d/api/sessions" % s.port, "evil.example"),
                       ("GET /api/sessions", "localhost.:%d" % s.port),
                       ("GET /api/sessions", "127.0.0.1:1")):
        got = raw_http(s.port, "%s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n"
                       % (line, host, auth))
        assert got.startswith(b"HTTP/1.1 421"), (line, host, got[:300])
        assert b"does not answer for the host" in got and b"nosniff" in got, got
    st, _, b = s.request("GET", "/api/sessions", headers={"Host": "LOCALHOST:%d" % s.port})
    assert st == 200, ("Host is case-insensitive", st, b)
    # The cross-site POST of the issue: no Content-Type, Origin elsewhere.
    for headers in ({"Origin": "http://evil.example", "Content-Type": None},
                    {"Origin": "http://evil.example"},
                    {"Content-Type": None}):
        for auth_on in (False, True):
            st, h, b = s.request("POST", "/api/sessions", b"", headers, auth=auth_on)
            assert st in (403, 415), (headers, auth_on, st, b)
            assert h["content-type"] == "application/json", h
    assert session_ids(s) == before


@check("the token: 401 JSON on every /api/ route without it or with a wrong one; bearer and cookie work")
def _(ctx):
    s = ctx["stack"]
    sid, img = new_image(s)
    st, _, b = s.request("GET", "/api/sessions/" + sid)
    last_seq = b["last_seq"]
    routes = [("GET", "/api/health"), ("HEAD", "/api/health"), ("GET", "/api/models"),
              ("GET", "/api/tools"), ("GET", "/api/sessions"), ("POST", "/api/sessions"),
              ("GET", "/api/sessions/" + sid), ("DELETE", "/api/sessions/" + sid),
              ("POST", "/api/sessions/%s/messages" % sid),
              ("POST", "/api/sessions/%s/cancel" % sid),
              ("GET", "/api/sessions/%s/events" % sid),
              ("POST", "/api/sessions/%s/tools/echo" % sid),
              ("GET", "/api/images/%s.png" % img), ("GET", "/api/nothing"),
              ("PUT", "/api/sessions")]
    wrong = ["0" * 64, s.token[:-1], s.token + "0", s.token.upper(), ""]
    for method, path in routes:
        body = {"text": "x"} if method == "POST" else None
        for hdrs in [{}] + [{"Authorization": "Bearer " + w} for w in wrong] + \
                [{"Authorization": "Basic " + s.token},
                 {"Cookie": "atelier_token_%d=%s" % (s.port, "1" * 64)},
                 {"Cookie": "atelier_token_1=%s" % s.token}]:
            st, h, b = s.request(method, path, body, hdrs, auth=False)
            assert st == 401, (method, path, hdrs, st, b)
            assert h["content-type"] == "application/json", h
            assert h.get("www-authenticate") == 'Bearer realm="atelier"', h
            if method != "HEAD":
                assert "?token=" in b["error"] and "Bearer" in b["error"], b
    st, _, b = s.request("GET", "/api/sessions/" + sid)
    assert st == 200 and b["last_seq"] == last_seq, ("nothing ran", b)
    # The page's way in: POST /api/auth trades the token for the cookie.
    st, h, b = s.request("POST", "/api/auth", {"token": "f" * 64}, auth=False)
    assert st == 401 and "set-cookie" not in h and "not this server's" in b["error"], (st, h, b)
    st, h, b = s.request("POST", "/api/auth", {"nothing": 1}, auth=False)
    assert st == 400 and "token" in b["error"], (st, b)
    st, h, b = s.request("POST", "/api/auth", {"token": s.token}, auth=False)
    assert st == 200 and b["authenticated"] is True, (st, b)
    cookie = h["set-cookie"]
    name_value, *attrs = [a.strip() for a in cookie.split(";")]
    assert name_value == "atelier_token_%d=%s" % (s.port, s.token), cookie
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(attrs), cookie
    assert "Secure" not in attrs, ("plain HTTP on loopback", cookie)
    st, _, b = s.request("GET", "/api/sessions/" + sid, auth=False,
                         headers={"Cookie": "other=1; " + name_value + "; x=y"})
    assert st == 200 and b["id"] == sid, (st, b)
    st, _, b = s.request("GET", "/api/sessions/" + sid,
                         headers={"Authorization": "bearer  " + s.token})
    assert st == 200, ("the scheme is case-insensitive", st, b)


@check("other origins: Origin and Sec-Fetch-Site refused with 403, POSTs must be JSON (415), no CORS")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    before = session_ids(s)
    me = "http://127.0.0.1:%d" % s.port
    refused = [
        ({"Origin": "http://evil.example"}, 403, "another origin"),
        ({"Origin": "null"}, 403, "another origin"),
        ({"Origin": "http://127.0.0.1:%d" % (s.port + 1)}, 403, "another origin"),
        ({"Origin": "http://localhost:%d" % s.port}, 403, "another origin"),
        ({"Sec-Fetch-Site": "cross-site"}, 403, "another site"),
        ({"Sec-Fetch-Site": "same-site"}, 403, "another site"),
        ({"Origin": me, "Sec-Fetch-Site": "cross-site"}, 403, "another site"),
    ]
    for hdrs, want, needle in refused:
        for method, path, body in (("POST", "/api/sessions", {}),
                                   ("POST", "/api/sessions/%s/cancel" % sid, {}),
                                   ("DELETE", "/api/sessions/" + sid, None),
                                   ("GET", "/api/sessions", None)):
            st, h, b = s.request(method, path, body, hdrs)
            assert st == want and needle in b["error"], (hdrs, method, path, st, b)
            assert h.get("x-content-type-options") == "nosniff", h
    for ct in (None, "text/plain", "text/plain;charset=UTF-8",
               "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
               "application/jsonp", "application/json-seq"):
        for path in ("/api/sessions", "/api/sessions/%s/cancel" % sid,
                     "/api/sessions/%s/messages" % sid):
            for body in (b"", b'{"text": "x"}'):
                st, _, b = s.request("POST", path, body, {"Content-Type": ct})
                assert st == 415 and "must be JSON" in b["error"], (ct, path, body, st, b)
    assert session_ids(s) == before
    # The page's own requests: same origin, or typed in.
    for hdrs in ({"Origin": me, "Sec-Fetch-Site": "same-origin"},
                 {"Sec-Fetch-Site": "none"},
                 {"Origin": me.replace("http:", "https:")},
                 {"Content-Type": "application/json; charset=utf-8"}):
        st, _, b = s.request("POST", "/api/sessions", {}, hdrs)
        assert st == 201, (hdrs, st, b)
    # CORS is never granted: a preflight gets no Access-Control-Allow-*.
    st, h, b = s.request("OPTIONS", "/api/sessions", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert st in (403, 405) and not [k for k in h if k.startswith("access-control")], (st, h)
    st, h, b = s.request("OPTIONS", "/api/sessions")
    assert st == 405 and not [k for k in h if k.startswith("access-control")], (st, h)
    # Nothing an API answer holds may be embedded by another origin.
    for path in ("/api/sessions", "/api/sessions/" + sid,
                 "/api/images/%s.png" % ("0" * 64), "/api/nothing"):
        st, h, _ = s.request("GET", path, raw=True)
        assert h.get("cross-origin-resource-policy") == "same-origin", (path, h)
        assert h.get("x-content-type-options") == "nosniff", (path, h)


@check("[http] auth = off: no token, but only on loopback (SERVER_ADDR), and the stack refuses a public address")
def _(ctx):
    off = Stack(ctx["fake"].url, name="stack-noauth", extra_conf="[http]\nauth = off\n")
    try:
        assert off.token is None and off.url == "http://127.0.0.1:%d/" % off.port, off.url
        st, _, b = off.request("GET", "/api/sessions")
        assert st == 200, (st, b)
        sock = os.path.join(off.data, "run", "fcgi.sock")
        base = {"REQUEST_METHOD": "GET", "REQUEST_URI": "/api/sessions",
                "HTTP_HOST": "127.0.0.1:%d" % off.port, "SERVER_PORT": str(off.port)}
        for addr in ("192.0.2.7", "10.0.0.1", "::", "2001:db8::1", "::ffff:192.0.2.7", ""):
            st, b = fcgi_call(sock, dict(base, SERVER_ADDR=addr))
            assert st == 403 and "auth = off" in b["error"], (addr, st, b)
        st, b = fcgi_call(sock, base)
        assert st == 403 and "auth = off" in b["error"], ("no SERVER_ADDR", st, b)
        for addr in ("127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"):
            st, b = fcgi_call(sock, dict(base, SERVER_ADDR=addr))
            assert st == 200 and isinstance(b, list), (addr, st, b)
        # The same holds with auth on: the token is still required.
        sock_on = os.path.join(ctx["stack"].data, "run", "fcgi.sock")
        st, b = fcgi_call(sock_on, dict(base, SERVER_ADDR="127.0.0.1",
                                        HTTP_HOST="127.0.0.1:%d" % ctx["stack"].port))
        assert st == 401, (st, b)
    finally:
        off.proc.send_signal(signal.SIGTERM)
        off.proc.wait(timeout=30)
    conf = os.path.join(TMP, "stack-noauth.conf")
    r = subprocess.run([STACK, "--build", BUILDDIR, "--data", os.path.join(TMP, "stack-public"),
                        "--port", str(free_port()), "--listen", "0.0.0.0", "--config", conf],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "auth = off" in r.stderr and "ready at" not in r.stdout, \
        (r.returncode, r.stdout, r.stderr)


@check("the token file: 0600, 64 hex digits, the same after a restart")
def _(ctx):
    s = ctx["stack"]
    assert s.token and re.fullmatch(r"[0-9a-f]{64}", s.token), s.token
    assert s.url == "http://127.0.0.1:%d/?token=%s" % (s.port, s.token), s.url
    p = os.path.join(s.data, "store", "token")
    st = os.stat(p)
    assert st.st_mode & 0o777 == 0o600, oct(st.st_mode)
    with open(p) as f:
        assert f.read() == s.token + "\n"
    ctx["token_before_restart"] = s.token
    # The link's request is not in nginx's access log; others are.
    for q in ("token=" + s.token, "probe=1"):
        st, _, _ = s.request("GET", "/?" + q, raw=True)
        assert st == 200, st
    # nginx logs a request once it has finished with it, which can be just
    # after the client has read the answer: wait for the probe's line.
    deadline = time.monotonic() + 5
    while True:
        with open(os.path.join(s.data, "log", "nginx-access.log")) as f:
            log = f.read()
        if "probe=1" in log or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert "probe=1" in log and s.token not in log, log[-500:]


@check("a stream held across a daemon killed and restarted goes on; calls answer 503 meanwhile")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    ev = SSE(s, sid)
    first = ev.next()
    assert first["event"] == "session.created"
    [daemon] = s.pid_of("atelierd")
    os.kill(daemon, signal.SIGKILL)
    saw_503 = False
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        st, _, b = s.request("GET", "/api/health")
        if st == 503:
            saw_503 = True
            assert b["status"] == "unavailable", b
        elif st == 200 and s.pid_of("atelierd") not in ([], [daemon]):
            break
        time.sleep(0.05)
    else:
        raise AssertionError("atelierd did not come back: " + s.log())
    st, _, b = s.request("POST", "/api/sessions/%s/messages" % sid,
                         {"text": '/echo {"text": "after the restart"}'})
    assert st == 202, (st, b)
    got = ev.until(END)
    ev.close()
    ids = [int(first["id"])] + [int(e["id"]) for e in got]
    assert ids == list(range(1, len(ids) + 1)), ids
    assert got[-1]["event"] == "run.completed", got
    assert "atelierd exited; restarting it" in s.log(), s.log()
    assert s.read_token() == ctx.get("token_before_restart", s.token), "a new token"
    # (The 503 window may be too short to see; what matters is no error
    # other than 503 and that the stream never broke.)
    ctx["saw_503"] = saw_503


@check("a revoked token (its file removed, atelierd restarted) is refused at "
       "once by every bridge thread, and the streams it opened end")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    ev = SSE(s, sid)
    assert ev.next()["event"] == "session.created"
    old = s.token
    # Every bridge thread that serves these has the old daemon's answer.
    for _ in range(30):
        st, _, b = s.request("GET", "/api/sessions")
        assert st == 200, (st, b)
    os.unlink(os.path.join(s.data, "store", "token"))
    [daemon] = s.pid_of("atelierd")
    os.kill(daemon, signal.SIGKILL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        new = s.read_token()
        if new and new != old and s.pid_of("atelierd") not in ([], [daemon]):
            break
        time.sleep(0.05)
    else:
        raise AssertionError("atelierd did not come back with a new token")
    s.token = new
    while time.monotonic() < deadline:
        if s.request("GET", "/api/health")[0] == 200:
            break
        time.sleep(0.05)
    statuses = set()
    for _ in range(30):
        statuses.add(s.request("GET", "/api/sessions", auth=False,
                               headers={"Authorization":
                                        "Bearer " + old})[0])
        statuses.add(s.request("POST", "/api/sessions", {}, auth=False,
                               headers={"Authorization": "Bearer " + old,
                                        "Content-Type":
                                        "application/json"})[0])
    assert statuses == {401}, statuses
    # The stream the old token opened ends (at its next heartbeat at the
    # latest) instead of carrying the session's events on.
    t0 = time.monotonic()
    try:
        while True:
            e = ev.next(timeout=15)
            assert e["event"] not in ("run.started",), e
    except EOFError:
        pass
    assert time.monotonic() - t0 < 15
    ev.close()


@check("many streams at once; a stream's thread leaves as soon as its client does")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    streams = [SSE(s, sid) for _ in range(60)]
    for e in streams:
        assert e.next()["event"] == "session.created"
    [pid] = s.pid_of("atelier-fcgi")
    during = len(os.listdir("/proc/%d/task" % pid))
    assert during >= 60, during
    for e in streams:
        e.close()
    # Sooner than the next heartbeat (2 s): the bridge watches the
    # FastCGI connection while it waits for events.
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.5:
        after = len(os.listdir("/proc/%d/task" % pid))
        if after <= 20:
            break
        time.sleep(0.05)
    assert after <= 20, "threads: %d during, %d after 1.5 s" % (during, after)


@check("past --max-threads, a new stream gets a JSON 503 and the API keeps answering")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    held, refused = [], []
    for _ in range(100):
        ev = SSE(s, sid)
        if ev.r.status == 200:
            ev.next()
            held.append(ev)
        else:
            body = json.loads(ev.r.read())
            refused.append((ev.r.status, body))
            ev.close()
    try:
        assert 60 <= len(held) < 80 and refused, (len(held), refused[:1])
        assert all(st == 503 and "too many event streams" in b["error"]
                   for st, b in refused), refused[:3]
        st, _, b = s.request("GET", "/api/health")
        assert st == 200, (st, b)
    finally:
        for ev in held:
            ev.close()
    time.sleep(1.5)  # the threads notice their clients have left
    ev = SSE(s, sid)
    assert ev.r.status == 200 and ev.next()["event"] == "session.created"
    ev.close()


@check("Ctrl-C (SIGINT) stops the whole stack at once, streams open or not")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    ev = SSE(s, sid)
    ev.next()
    t0 = time.monotonic()
    s.proc.send_signal(signal.SIGINT)
    s.proc.wait(timeout=30)
    took = time.monotonic() - t0
    assert s.proc.returncode == 0, (s.proc.returncode, s.log())
    # atelierd answers its long polls at once when it stops, rather than
    # after their timeouts (it used to take 13 s with a stream open).
    assert took < 5, "the stack took %.1f s to stop" % took
    assert "atelier: stopped" in s.log(), s.log()
    assert s.pid_of("atelierd") == [] and s.pid_of("atelier-fcgi") == [], \
        (s.pid_of("atelierd"), s.pid_of("atelier-fcgi"))
    ev.close()


@check("no sanitizer report and no unplanned restart in any log")
def _(ctx):
    s = ctx["stack"]
    logs = {}
    for name in ("atelierd.log", "atelier-fcgi.log", "nginx-error.log"):
        p = os.path.join(s.data, "log", name)
        with open(p, errors="replace") as f:
            logs[name] = f.read()
    for name, text in logs.items():
        for needle in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                       "runtime error:", "Segmentation fault"):
            assert needle not in text, "%s in %s:\n%s" % (needle, name, text[-3000:])
    # The two restarts are the daemons the tests killed; the bridge never.
    out = s.log()
    assert out.count("atelierd exited; restarting it") == 2, out
    assert "atelier-fcgi exited" not in out, out


def main():
    ctx = {}
    fake = Fake()
    ctx["fake"] = fake
    stack = Stack(fake.url, fcgi_args=["--heartbeat-ms=2000", "--max-threads=80"])
    ctx["stack"] = stack
    ctx["fcgi_pids"] = stack.pid_of("atelier-fcgi")
    failed = 0
    t0 = time.monotonic()
    for i, (name, fn) in enumerate(results, 1):
        try:
            fn(ctx)
            print("ok %d - %s" % (i, name))
        except Exception:
            failed += 1
            print("not ok %d - %s" % (i, name))
            for line in traceback.format_exc().splitlines():
                print("#   " + line)
            print("#   stack output: " + stack.log()[-2000:].replace("\n", "\n#   "))
    for log in ("atelier-fcgi.log", "nginx-error.log"):
        p = os.path.join(stack.data, "log", log)
        if os.path.exists(p):
            with open(p) as f:
                tail = f.read()[-1500:]
            if tail:
                print("# %s (tail):\n#   %s" % (log, tail.replace("\n", "\n#   ")))
    print("# total time %.1f s" % (time.monotonic() - t0))
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
