"""What the integration tests written in Python share: where the build is,
a scratch directory removed at exit, and the real atelierd driven over raw
JSON-RPC on its socket. Standard library only.
"""

import atexit
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib
import urllib.request

SRCDIR = os.environ.get(
    "ATL_TEST_SRCDIR",
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILDDIR = os.environ.get("ATL_TEST_BUILDDIR", os.path.join(SRCDIR, "build"))
DAEMON = os.path.join(BUILDDIR, "atelierd")
PLUGIN_DIR = os.path.join(BUILDDIR, "plugins", ".libs")
# The tests' own plugin (echo_test: images, sleeps, failures, secrets),
# which no stack loads; the tests' daemons load both directories.
TEST_PLUGIN_DIR = os.path.join(BUILDDIR, "tests", "plugins", ".libs")
PLUGIN_DIRS = PLUGIN_DIR + ":" + TEST_PLUGIN_DIR
FAKE = os.environ.get("FAKE_LLM",
                      os.path.join(SRCDIR, "tests", "fake-llm", "fake_llm.py"))
# The key the fake provider is configured with; it must never reach a log.
KEY = "sk-agent-test-SECRET"

TMP = tempfile.mkdtemp(prefix="atl-it.", dir=os.environ.get("TMPDIR", "/tmp"))
PROCS = []


def cleanup():
    """Stops what the tests started (SIGTERM, then SIGKILL after 15 s)
    and removes the scratch directory (kept with ATL_TEST_KEEP=1)."""
    for p in PROCS:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    if os.environ.get("ATL_TEST_KEEP"):
        print("# kept %s" % TMP)  # for reading the daemons' logs
    else:
        shutil.rmtree(TMP, ignore_errors=True)


atexit.register(cleanup)
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(128 + s))

END = ("run.completed", "run.error", "run.cancelled", "run.limit_reached")


def free_port():
    """A loopback TCP port free at the time of asking."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rpc_answer(sock, method, params, timeout=20):
    """One JSON-RPC call on the API socket at sock: the whole answer."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock)
    s.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                          "params": params}).encode() + b"\n")
    buf = b""
    while b"\n" not in buf:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf.split(b"\n", 1)[0])


def rpc(sock, method, params, timeout=20):
    """One JSON-RPC call on the API socket at sock: its result."""
    resp = rpc_answer(sock, method, params, timeout)
    if "error" in resp:
        raise RuntimeError("%s: %s" % (method, resp["error"]))
    return resp["result"]


def rpc_error(sock, method, params):
    """The error object of a call that must fail."""
    resp = rpc_answer(sock, method, params)
    assert "error" in resp, (method, params, str(resp)[:300])
    return resp["error"]


class Conn:
    """One api.sock connection for many calls, as the bridge keeps one:
    call() sends a request and returns its result."""

    def __init__(self, path, timeout=30):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.buf = b""
        self.n = 0

    def call(self, method, params):
        self.n += 1
        self.s.sendall(json.dumps({"jsonrpc": "2.0", "id": self.n,
                                   "method": method,
                                   "params": params}).encode() + b"\n")
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise OSError("atelierd closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        resp = json.loads(line)
        if "error" in resp:
            raise RuntimeError("%s: %s" % (method, resp["error"]))
        return resp["result"]


def png_pixels(data):
    """(width, height, rows of RGB bytes) of an 8-bit RGB PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype == 2, (depth, ctype)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    rows, prev, stride = [], bytearray(w * 3), w * 3
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(
            raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b = prev[i]
            c = prev[i - 3] if i >= 3 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else
                                      b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows


def sanitized():
    """True for a build with --enable-sanitizers: ASan's quarantine (256 MB
    by default) and shadow then count in every RSS figure, so memory
    bounds must allow for them there (the plain build holds the tight
    ones)."""
    try:
        with open(os.path.join(BUILDDIR, "Makefile")) as f:
            return any(l.startswith("SANITIZER_CFLAGS = -fsanitize")
                       for l in f)
    except OSError:
        return False


class Daemon:
    def __init__(self, name, conf, data_dir=None, env=None):
        self.dir = os.path.join(TMP, name)
        os.makedirs(self.dir, exist_ok=True)
        self.sock = os.path.join(self.dir, "run", "api.sock")
        self.data = data_dir or os.path.join(self.dir, "data")
        path = os.path.join(self.dir, "atelierd.conf")
        with open(path, "w") as f:
            f.write(conf)
        e = {k: v for k, v in os.environ.items()
             if k not in ("ANTHROPIC_API_KEY", "GEMINI_API_KEY",
                          "OPENAI_API_KEY")}
        e.update(env or {})
        self.log = os.path.join(self.dir, "daemon.log")
        self.proc = subprocess.Popen(
            [DAEMON, "--foreground", "--config", path, "--socket-dir",
             os.path.dirname(self.sock), "--data-dir", self.data,
             "--plugin-dir", PLUGIN_DIRS, "--log-level", "debug"],
            stderr=open(self.log, "a"), env=e)
        PROCS.append(self.proc)
        for _ in range(200):
            if os.path.exists(self.sock):
                try:
                    info = self.rpc("daemon.info", {})
                except OSError:
                    info = None
                # The socket may be another daemon's, still running on the
                # same directory (this one then refuses to start): a test
                # would talk to it, not to the process it holds.
                if info is not None and info.get("pid") != self.proc.pid:
                    raise RuntimeError(
                        "%s answers for pid %s, not the atelierd just "
                        "started (%d)" % (self.sock, info.get("pid"),
                                          self.proc.pid))
                if info is not None:
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("atelierd did not start; see " + self.log)

    def rpc(self, method, params, timeout=20):
        return rpc(self.sock, method, params, timeout)

    def session(self):
        return self.rpc("session.create", {})["id"]

    def events(self, sid, after=0):
        return self.rpc("events.read", {"session": sid, "after_seq": after,
                                        "limit": 10000})["events"]

    def run(self, sid, text, ends=1, timeout=30):
        """Sends text and returns the events up to the end of `ends` runs."""
        start = self.events(sid)
        after = start[-1]["seq"] if start else 0
        self.rpc("session.send", {"session": sid, "text": text})
        return self.follow(sid, after, ends, timeout)

    def follow(self, sid, after, ends=1, timeout=30):
        out = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = self.rpc("events.read", {"session": sid, "after_seq": after,
                                         "limit": 10000, "wait_ms": 1000})
            for e in r["events"]:
                out.append(e)
                after = e["seq"]
                # Up to the end of the last run asked for: events that come
                # on their own (live previews) may follow it in the batch.
                if e["type"] in END:
                    ends -= 1
                    if ends == 0:
                        return out
        raise AssertionError("the run did not end; events: %s" %
                             [e["type"] for e in out])

    def history(self, sid):
        return self.rpc("session.get", {"session": sid})["history"]

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=15)


class Fake:
    """tests/fake-llm/fake_llm.py on a free loopback port."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, FAKE, "--port", "0"], stdout=subprocess.PIPE,
            stderr=open(os.path.join(TMP, "fake.log"), "w"), text=True)
        PROCS.append(self.proc)
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError("fake-llm did not start: %r" % line)
        self.url = line.strip().split()[-1]

    def _post(self, path, obj):
        req = urllib.request.Request(self.url + path, json.dumps(obj).encode(),
                                     {"Content-Type": "application/json"})
        return json.load(urllib.request.urlopen(req, timeout=10))

    def script(self, turns):
        self.check_refusals()
        self._post("/_fake/reset", {})
        self._post("/_fake/script", {"turns": turns})

    def requests(self):
        with urllib.request.urlopen(self.url + "/_fake/requests", timeout=10) as r:
            return [q for q in json.load(r)["requests"]
                    if q["path"].startswith("/v1")]

    def take_refusals(self):
        """The requests the fake refused by the real APIs' rules since the
        last reset, which are then forgotten: for a check that means to
        provoke one."""
        got = [q for q in self.requests() if q.get("refused")]
        self._post("/_fake/reset", {})
        return got

    def check_refusals(self):
        """Every request Atelier sends must be one the real API would take:
        a refusal nobody asked for fails the check in progress."""
        got = [q for q in self.requests() if q.get("refused")]
        if got:
            self._post("/_fake/reset", {})
            raise AssertionError(
                "the fake provider refused %d request(s) the real API would "
                "refuse too: %s" % (len(got), "; ".join(
                    "%s %s: %s" % (q["api"], q.get("model"), q.get("error"))
                    for q in got[:3])))


class Checks(list):
    """(name, fn) pairs in the order they were written, each added with
    the decorator @checks.add("what it shows")."""

    def add(self, name):
        def wrap(fn):
            self.append((name, fn))
            return fn
        return wrap


def run_checks(checks, ctx):
    """Runs (name, fn(ctx)) pairs in order, printing "ok N - name" or
    "not ok N - name" with "#" lines of the failure; returns the numbers
    of passed and failed checks."""
    import traceback
    passed = failed = 0
    for n, (name, fn) in enumerate(checks, 1):
        try:
            fn(ctx)
            for fake in (ctx.get("fake"), ctx.get("fakes")):
                for f in (fake if isinstance(fake, list) else [fake]):
                    if f is not None:
                        f.check_refusals()
            print("ok %d - %s" % (n, name), flush=True)
            passed += 1
        except Exception as e:  # noqa: BLE001 - every failure is reported
            print("not ok %d - %s" % (n, name), flush=True)
            for line in traceback.format_exception(e)[-3:]:
                for part in line.rstrip().splitlines():
                    print("# " + part)
            failed += 1
    return passed, failed
