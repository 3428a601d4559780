#!/usr/bin/env python3
"""Availability: nothing a client sends makes atelierd or atelier-fcgi spin,
stall or grow without bound.

The real daemon (raw JSON-RPC on api.sock) and the real web stack (nginx,
atelier-fcgi and atelierd started by scripts/atelier-stack), with the fake
LLM provider as the model:

- a resume point far past a session's end neither spins the bridge nor the
  daemon, and every stream still gets the new events in order;
- 5,000 requests pipelined on one connection are all answered, in order;
  a client that never reads its answers stops being read, and the
  daemon's memory stays flat, until it reads again;
- event streams cannot take the bridge's reserve of threads, and one
  client address cannot take every stream: JSON 503 / 429 with
  Retry-After, while the rest of the API answers at once;
- a model answer that streams past agent.max_turn_bytes (text, thinking
  or tool-call arguments) ends with a run.error that names the setting,
  the daemon's memory stays flat and the session stays usable;
- events.read with out-of-range numbers and a JSON-RPC line of many
  megabytes get clear errors.

Python 3 standard library only; TAP-like output, exit status 1 on failure.
"""
import http.client
import json
import os
import socket
import struct
import sys
import threading
import time

from atltest import KEY, TMP, Checks, Daemon, Fake, run_checks, sanitized
from test_web import SSE, Stack

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system CPU time of a process so far (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


def conf(url, extra=""):
    return ("[agent]\nprovider = fake\nmax_turns = 3\n%s\n"
            "[provider.fake]\ntype = openai\nbase_url = %s\n"
            "api_key_env = FAKE_LLM_KEY\nmodels = fake-model\n"
            "timeout_ms = 20000\n" % (extra, url))


# ---------------------------------------------------------------- HTTP helpers
# They send what the API will ask for once it requires a token (the bearer
# token from the store's token file, when there is one; the stack's own
# Host; Content-Type on every POST), so they pass with and without it.

def auth_headers(stack):
    h = {"Host": "127.0.0.1:%d" % stack.port}
    path = os.path.join(stack.data, "store", "token")
    if os.path.exists(path):
        with open(path) as f:
            h["Authorization"] = "Bearer " + f.read().strip()
    return h


def web(stack, method, path, body=None, timeout=20):
    c = http.client.HTTPConnection("127.0.0.1", stack.port, timeout=timeout)
    h = auth_headers(stack)
    data = None
    if method == "POST":
        h["Content-Type"] = "application/json"
        data = json.dumps(body if body is not None else {})
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    raw = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    ctype = hdrs.get("content-type", "")
    return r.status, hdrs, (json.loads(raw) if ctype.startswith(
        "application/json") and raw else raw)


def new_session(stack):
    st, _, b = web(stack, "POST", "/api/sessions", {})
    assert st == 201, (st, b)
    return b["id"]


def stream(stack, sid, last_event_id=None):
    """An event stream through nginx (test_web's reader), with our headers."""
    h = auth_headers(stack)
    if last_event_id is not None:
        h["Last-Event-ID"] = str(last_event_id)
    return SSE(stack, sid, headers=h)


# ---------------------------------------------------------------- raw FastCGI

def fcgi_record(rtype, req_id, content):
    return struct.pack("!BBHHBx", 1, rtype, req_id, len(content), 0) + content


def fcgi_pairs(params):
    out = b""
    for k, v in params.items():
        k, v = k.encode(), v.encode()
        for n in (len(k), len(v)):
            out += bytes([n]) if n < 128 else struct.pack("!I", n | 0x80000000)
        out += k + v
    return out


class RawStream:
    """GET events straight on the bridge's FastCGI socket, as nginx would
    send it, with the REMOTE_ADDR of our choosing."""

    def __init__(self, stack, sid, addr):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(10)
        self.sock.connect(os.path.join(stack.data, "run", "fcgi.sock"))
        uri = "/api/sessions/%s/events" % sid
        params = {"REQUEST_METHOD": "GET", "REQUEST_URI": uri,
                  "DOCUMENT_URI": uri, "QUERY_STRING": "",
                  "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": addr,
                  "SERVER_NAME": "127.0.0.1", "SERVER_PORT": str(stack.port)}
        for k, v in auth_headers(stack).items():
            params["HTTP_" + k.upper().replace("-", "_")] = v
        self.sock.sendall(
            fcgi_record(1, 1, struct.pack("!HB5x", 1, 0)) +
            fcgi_record(4, 1, fcgi_pairs(params)) + fcgi_record(4, 1, b"") +
            fcgi_record(5, 1, b""))
        self.out = b""
        self.ended = False
        while b"\r\n\r\n" not in self.out and not self.ended:
            self._record()
        head = self.out.split(b"\r\n\r\n", 1)[0].decode()
        self.status = int(head.split("Status: ", 1)[1].split()[0])
        self.headers = {k.lower(): v.strip() for k, _, v in
                        (h.partition(":") for h in head.split("\r\n"))}

    def _record(self):
        hdr = self._exact(8)
        _, rtype, _, clen, plen = struct.unpack("!BBHHBx", hdr)
        content = self._exact(clen + plen)[:clen]
        if rtype == 6:
            self.out += content
        elif rtype == 3:
            self.ended = True

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("the bridge closed the connection")
            buf += chunk
        return buf

    def body(self, timeout=10):
        """The whole answer's JSON body; an open stream is a failure."""
        deadline = time.monotonic() + timeout
        while not self.ended:
            assert time.monotonic() < deadline, \
                "status %d and no end: %r" % (self.status, self.out[:200])
            self._record()
        return json.loads(self.out.split(b"\r\n\r\n", 1)[1])

    def close(self):
        self.sock.close()


def open_streams(stack, sid, addr, n):
    """n raw streams from addr, each of which must be held (200)."""
    out = []
    for _ in range(n):
        r = RawStream(stack, sid, addr)
        assert r.status == 200, (addr, r.status, r.out[:300])
        out.append(r)
    return out


# ---------------------------------------------------------------- JSON-RPC

def read_answers(s, n, deadline):
    """n response lines from s, parsed, or as many as came by deadline."""
    out, buf = [], b""
    while len(out) < n and time.monotonic() < deadline:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = s.recv(1 << 20)
        except socket.timeout:
            break
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        out.extend(json.loads(line) for line in lines if line)
    return out


def rpc(sock_path, method, params, timeout=20):
    """One call on a connection of its own: the whole answer, error or not."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                          "params": params}).encode() + b"\n")
    [answer] = read_answers(s, 1, time.monotonic() + timeout)
    s.close()
    return answer


results = Checks()
check = results.add


# ---------------------------------------------------------------- the daemon

@check("5,000 requests pipelined on one connection are all answered, in order")
def _(ctx):
    d = ctx["daemon"]
    sid = d.session()
    methods = [("session.create", {}), ("tool.list", {}),
               ("session.get", {"session": sid}),
               ("events.read", {"session": sid, "limit": 5}),
               ("tool.call", {"session": sid, "name": "echo",
                              "arguments": {"text": "hi"}}),
               ("no.such.method", {})]
    n = 5000
    lines = b"".join(
        json.dumps({"jsonrpc": "2.0", "id": i, "method": methods[i % 6][0],
                    "params": methods[i % 6][1]}).encode() + b"\n"
        for i in range(n))
    s = socket.socket(socket.AF_UNIX)
    s.connect(d.sock)
    writer = threading.Thread(target=s.sendall, args=(lines,), daemon=True)
    t0 = time.monotonic()
    writer.start()
    got = read_answers(s, n, t0 + 60)
    took = time.monotonic() - t0
    s.close()
    assert len(got) == n, "%d of %d answered in %.1f s" % (len(got), n, took)
    assert [r["id"] for r in got] == list(range(n)), "answers out of order"
    for i, r in enumerate(got):
        if i % 6 == 5:
            assert r["error"]["code"] == -32601, r
        else:
            assert "result" in r, r
    print("# 5,000 pipelined requests answered in %.2f s" % took)


@check("a client that never reads its answers stops being read; memory stays flat")
def _(ctx):
    d = ctx["daemon"]
    pid = d.proc.pid
    sid = d.session()
    for i in range(5):
        d.rpc("tool.call", {"session": sid, "name": "echo",
                            "arguments": {"text": "event %d" % i}})
    params = {"session": sid, "limit": 5}
    one = len(json.dumps(d.rpc("events.read", params)))
    n = 50000
    data = b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "events.read",
                                "params": params}).encode() + b"\n"
                    for i in range(n))
    per = len(data) / n
    before = rss_kb(pid)
    s = socket.socket(socket.AF_UNIX)
    s.connect(d.sock)
    s.setblocking(False)
    sent, peak = 0, before
    t_end = time.monotonic() + 3  # 3 s of writing and not reading
    while time.monotonic() < t_end and sent < len(data):
        try:
            sent += s.send(data[sent:sent + 65536])
        except BlockingIOError:
            time.sleep(0.02)
        peak = max(peak, rss_kb(pid))
    grew_mb = (peak - before) / 1024
    taken = sent / per
    print("# a client not reading: atelierd took %d requests of %d and grew "
          "%.1f MB (answers of %d bytes)" % (taken, n, grew_mb, one))
    # What it may take: 1,024 unanswered requests, a 64 KiB read and the
    # socket's buffers (some 200 KB each way).
    assert taken < 8000, "the daemon read %d requests of a client that " \
        "reads nothing" % taken
    bound = 64 + (320 if sanitized() else 0)  # 124 MB seen under ASan
    assert grew_mb < bound, "atelierd grew %.0f MB for a client that does " \
        "not read" % grew_mb
    # Reading again (and writing the rest), every answer comes, in order.
    s.setblocking(True)
    rest = threading.Thread(target=s.sendall, args=(data[sent:],), daemon=True)
    rest.start()
    got = read_answers(s, n, time.monotonic() + 120)
    rest.join(10)
    s.close()
    assert len(got) == n, "%d of %d answered" % (len(got), n)
    assert [r["id"] for r in got] == list(range(n)), "answers out of order"
    assert all(len(r["result"]["events"]) == 5 for r in got)


@check("events.read: out-of-range numbers are refused clearly; a resume point past the end waits for the next event")
def _(ctx):
    d = ctx["daemon"]
    sid = d.session()
    for params, needle in (({"after_seq": -1}, "after_seq"),
                           ({"limit": 0}, "limit"), ({"limit": 10 ** 9}, "limit"),
                           ({"wait_ms": -5}, "wait_ms")):
        r = rpc(d.sock, "events.read", dict(params, session=sid))
        assert r["error"]["code"] == -32602 and needle in r["error"]["message"], r
    last = d.rpc("session.get", {"session": sid})["last_seq"]
    done = {}

    def far():
        done["r"] = rpc(d.sock, "events.read", {
            "session": sid, "after_seq": 10 ** 12, "wait_ms": 10000})
    t = threading.Thread(target=far)
    t0 = time.monotonic()
    t.start()
    time.sleep(0.5)
    assert t.is_alive(), "a read far past the end returned at once: %s" % done
    d.rpc("tool.call", {"session": sid, "name": "echo", "arguments": {"text": "x"}})
    t.join(10)
    took = time.monotonic() - t0
    evs = done["r"]["result"]["events"]
    assert evs and evs[0]["seq"] == last + 1, done
    assert took < 5, "the far read waited %.1f s for an event that came" % took


@check("a JSON-RPC line of 64 MB is refused with a clear error; the connection goes on")
def _(ctx):
    d = ctx["daemon"]
    pid = d.proc.pid
    before = rss_kb(pid)
    s = socket.socket(socket.AF_UNIX)
    s.connect(d.sock)
    chunk = b"x" * (1 << 20)
    s.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "tool.list", "params": {"a": "')
    for _ in range(64):
        s.sendall(chunk)
    s.sendall(b'"}}\n' + json.dumps({"jsonrpc": "2.0", "id": 2,
                                     "method": "tool.list"}).encode() + b"\n")
    got = read_answers(s, 2, time.monotonic() + 30)
    s.close()
    grew = (rss_kb(pid) - before) / 1024
    assert len(got) == 2, got
    assert got[0]["error"]["code"] == -32600 and "max_frame" in got[0]["error"][
        "message"], got[0]
    assert got[1]["id"] == 2 and isinstance(got[1]["result"], list), got[1]
    assert grew < 32, "atelierd grew %.0f MB for one oversize line" % grew


@check("events of megabytes: events.read answers in pieces of a few MB, and a stream still gets them all in order")
def _(ctx):
    s = ctx["stack"]
    sid = new_session(s)
    api = os.path.join(s.data, "run", "api.sock")
    big = "e" * 1000000  # echo's largest text
    for _ in range(10):
        r = rpc(api, "tool.call", {"session": sid, "name": "echo",
                                   "arguments": {"text": big}}, timeout=60)
        assert r["result"]["success"], str(r)[:300]
    r = rpc(api, "events.read", {"session": sid, "limit": 10000}, timeout=60)
    evs, last = r["result"]["events"], r["result"]["last_seq"]
    size = len(json.dumps(r))
    assert 1 <= len(evs) and evs[-1]["seq"] < last and size < (10 << 20), \
        "one answer held %d events (%d bytes) of %d" % (len(evs), size, last)
    ev = stream(s, sid)
    ids = [int(ev.next(timeout=30)["id"]) for _ in range(last)]
    ev.close()
    assert ids == list(range(1, last + 1)), ids


# ---------------------------------------------------------------- the text cap

def run_events(d, sid, text, timeout=60):
    return d.run(sid, text, timeout=timeout)


@check("a model answer past agent.max_turn_bytes ends in a clear run.error; memory stays flat; the session goes on")
def _(ctx):
    d, fake = ctx["capped"], ctx["fake"]
    pid = d.proc.pid
    sid = d.session()
    mib = 1 << 20
    fake.script([{"text": "a" * (2 * mib), "chunks": 512}])
    before = rss_kb(pid)
    evs = run_events(d, sid, "Write two megabytes.")
    grew = (rss_kb(pid) - before) / 1024
    errs = [e for e in evs if e["type"] == "run.error"]
    assert errs, [e["type"] for e in evs][-5:]
    msg = errs[0]["data"]["error"] if "error" in errs[0]["data"] else json.dumps(
        errs[0]["data"])
    assert "max_turn_bytes" in msg and "1048576" in msg and "[agent]" in msg, msg
    streamed = sum(len(e["data"]["text"]) for e in evs if e["type"] == "text.delta")
    assert streamed <= mib + 8192, "%d bytes of text.delta past the cap" % streamed
    assert grew < 48, "atelierd grew %.0f MB for a 2 MiB answer" % grew
    print("# 2 MiB answer: cut at %d bytes streamed; atelierd +%.1f MB" %
          (streamed, grew))
    # Half a mebibyte is well within it, and the session still works.
    fake.script([{"text": "b" * (mib // 2), "chunks": 128}])
    evs = run_events(d, sid, "Now half a megabyte.")
    assert evs[-1]["type"] == "run.completed", [e["type"] for e in evs][-5:]
    streamed = sum(len(e["data"]["text"]) for e in evs if e["type"] == "text.delta")
    assert streamed == mib // 2, streamed


@check("the same cap holds for thinking and for tool-call arguments")
def _(ctx):
    d, fake = ctx["capped"], ctx["fake"]
    sid = d.session()
    mib = 1 << 20
    fake.script([{"tool_calls": [{"name": "echo",
                                  "arguments": {"text": "c" * (2 * mib)}}],
                  "chunks": 512}])
    evs = run_events(d, sid, "Echo two megabytes.")
    errs = [e for e in evs if e["type"] == "run.error"]
    assert errs and "max_turn_bytes" in json.dumps(errs[0]["data"]), \
        [e["type"] for e in evs][-5:]
    assert not any(e["type"] == "tool.started" for e in evs), "the cut call ran"
    ctx["thinking"](sid)


def thinking_check(url):
    """Anthropic streams thinking as its own deltas: the cap counts them."""
    def run(_sid):
        d = Daemon("thinking", "[agent]\nprovider = p\n[provider.p]\n"
                   "type = anthropic\nbase_url = %s\napi_key_env = FAKE_LLM_KEY\n"
                   "models = m1\ntimeout_ms = 20000\nmax_tokens = 4096\n"
                   "thinking_budget = 1024\n" % url,
                   env={"FAKE_LLM_KEY": KEY})
        try:
            CTX["fake"].script([{"thinking": "t" * (2 << 20), "text": "ok",
                                 "chunks": 512}])
            sid = d.session()
            evs = d.run(sid, "Think a lot.", timeout=60)
            errs = [e for e in evs if e["type"] == "run.error"]
            assert errs and "max_turn_bytes" in json.dumps(errs[0]["data"]), \
                [e["type"] for e in evs][-5:]
        finally:
            d.stop()
    return run


# ---------------------------------------------------------------- the bridge

@check("a Last-Event-ID far past the end: no spinning, and both streams get new events in order")
def _(ctx):
    s = ctx["stack"]
    sid = new_session(s)
    api = os.path.join(s.data, "run", "api.sock")
    far = stream(s, sid, last_event_id=1000000000)
    assert far.r.status == 200, (far.r.status, far.r.read())
    normal = stream(s, sid)
    assert normal.r.status == 200
    first = normal.next()
    assert first["event"] == "session.created", first
    time.sleep(0.5)  # both are in the hub now
    [daemon] = s.pid_of("atelierd")
    [bridge] = s.pid_of("atelier-fcgi")
    c0 = (cpu_seconds(daemon), cpu_seconds(bridge))
    t0 = time.monotonic()
    time.sleep(3)
    dt = time.monotonic() - t0
    use = [(cpu_seconds(p) - c) / dt for p, c in zip((daemon, bridge), c0)]
    print("# with a far-ahead stream open: atelierd %.1f %%, atelier-fcgi "
          "%.1f %% of a core" % (100 * use[0], 100 * use[1]))
    assert use[0] < 0.05 and use[1] < 0.05, "busy while idle: atelierd " \
        "%.0f %%, atelier-fcgi %.0f %% of a core" % (100 * use[0], 100 * use[1])
    for i in range(3):
        r = rpc(api, "tool.call", {"session": sid, "name": "echo",
                                   "arguments": {"text": "n%d" % i}})
        assert r["result"]["success"], r
    for ev in (far, normal):
        got = []
        while len([e for e in got if e["event"] == "tool.finished"]) < 3:
            got.append(ev.next(timeout=10))
        ids = [int(e["id"]) for e in got]
        assert ids == list(range(ids[0], ids[0] + len(ids))), ids
        assert ids[0] == int(first["id"]) + 1, (ids, first)
        texts = [e["data"]["data"]["operation"]["arguments"]["text"] for e in got
                 if e["event"] == "tool.finished"]
        assert texts == ["n0", "n1", "n2"], texts
    far.close()
    normal.close()


@check("streams cannot take the reserve: a JSON 503 with Retry-After, the API answers at once")
def _(ctx):
    s = ctx["stack"]
    sid = new_session(s)
    held = []
    try:
        # --max-threads=16 --reserve-threads=4: 12 streams at most, 4 a
        # client address (--max-streams-per-client=4).
        for addr in ("10.0.0.1", "10.0.0.2", "10.0.0.3"):
            held += open_streams(s, sid, addr, 4)
        over = RawStream(s, sid, "10.0.0.4")
        body = over.body()
        assert over.status == 503 and "too many event streams" in body["error"] \
            and "--reserve-threads" in body["error"], (over.status, body)
        assert over.headers.get("retry-after", "").isdigit(), over.headers
        assert over.headers.get("content-type") == "application/json"
        over.close()
        st, h, body = web(s, "GET", "/api/sessions/%s/events" % sid)
        assert st == 503 and h.get("retry-after"), (st, h, body)
        # The rest of the API still answers, four calls at once.
        times, errors = [], []

        def call():
            t0 = time.monotonic()
            try:
                st, _, b = web(s, "GET", "/api/health", timeout=5)
                assert st == 200, (st, b)
                st, _, b = web(s, "POST", "/api/sessions", {}, timeout=5)
                assert st == 201, (st, b)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
            times.append(time.monotonic() - t0)
        ts = [threading.Thread(target=call) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(10)
        assert not errors and len(times) == 4 and max(times) < 2, (errors, times)
        print("# 12 streams held: 4 concurrent calls answered in at most "
              "%.0f ms" % (1000 * max(times)))
    finally:
        for r in held:
            r.close()
    # Their threads notice the clients have left; then streams open again.
    deadline = time.monotonic() + 10
    while True:
        r = RawStream(s, sid, "10.0.0.4")
        st = r.status
        r.close()
        if st == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert st == 200, st


@check("one client address cannot hold more than --max-streams-per-client streams (JSON 429)")
def _(ctx):
    s = ctx["stack"]
    sid = new_session(s)
    held = []
    try:
        held += open_streams(s, sid, "10.1.0.1", 4)
        r = RawStream(s, sid, "10.1.0.1")
        body = r.body()
        assert r.status == 429 and "--max-streams-per-client" in body["error"] \
            and "10.1.0.1" in body["error"], (r.status, body)
        assert r.headers.get("retry-after", "").isdigit(), r.headers
        r.close()
        other = RawStream(s, sid, "10.1.0.2")
        assert other.status == 200, other.status
        held.append(other)
    finally:
        for r in held:
            r.close()


CTX = {}


def main():
    fake = Fake()
    CTX["fake"] = fake
    CTX["daemon"] = Daemon("plain", conf(fake.url), env={"FAKE_LLM_KEY": KEY})
    CTX["capped"] = Daemon("capped", conf(fake.url), env={"FAKE_LLM_KEY": KEY})
    CTX["thinking"] = thinking_check(fake.url)
    CTX["stack"] = Stack(fake.url, fcgi_args=[
        "--max-threads=16", "--min-threads=2", "--reserve-threads=4",
        "--max-streams-per-client=4", "--heartbeat-ms=1000"])
    t0 = time.monotonic()
    passed, failed = run_checks(results, CTX)
    print("# total time %.1f s" % (time.monotonic() - t0))
    print("%d passed, %d failed" % (passed, failed))
    if failed:
        for log in ("atelier-fcgi.log",):
            p = os.path.join(CTX["stack"].data, "log", log)
            if os.path.exists(p):
                with open(p) as f:
                    print("# %s (tail):\n#   %s" % (
                        log, f.read()[-1500:].replace("\n", "\n#   ")))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
