"""What the chaos soak (soak.py) uses that is not the soak itself: /proc
reading, an HTTP client that speaks the stack's rules, JSON-RPC on
api.sock, the fake's script queue and an SSE reader that behaves like a
browser's EventSource. Standard library only.
"""
import http.client
import json
import os
import socket
import threading
import time
import urllib.request

from atltest import free_port, rpc  # noqa: F401 - free_port is soak.py's too

# ------------------------------------------------------------ /proc


def children(pid):
    """The pids of pid's children ([] when it is gone)."""
    out = []
    try:
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                out += [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        pass
    return out


def prog(pid):
    """The base name of a process's program (argv[0]), or None. libtool's
    in-tree wrappers run "lt-NAME" or ".libs/NAME"; both count as NAME."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv0 = f.read().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return None
    name = os.path.basename(argv0)
    return name[3:] if name.startswith("lt-") else name or None


def state(pid):
    """The one-letter state of /proc/PID/stat (Z for a zombie), or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def age(pid):
    """Seconds since the process started, or 0 when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            start = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            up = float(f.read().split()[0])
        return up - start / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None


def tcp_inodes():
    """The inodes of every TCP socket of the machine (/proc/net/tcp{,6})."""
    out = set()
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                out.update(line.split()[9] for line in f.readlines()[1:])
        except (OSError, IndexError):
            pass
    return out


def fd_split(pid, tcp):
    """(all descriptors, the TCP sockets among them) of a process."""
    n = t = 0
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            n += 1
            t += link.startswith("socket:[") and link[8:-1] in tcp
    except OSError:
        return None, None
    return n, t


def alive(pid, name):
    """Whether pid is still a live (not zombie) process running `name`: a
    pid the kernel gave to another program since does not count."""
    return prog(pid) == name and state(pid) not in (None, "Z")


# ------------------------------------------------------------ clients


class Http:
    """Requests to the stack as a browser page would make them: the
    stack's own Host, the bearer token when the daemon has made one
    (<data>/store/token), Content-Type: application/json on every body."""

    def __init__(self, port, token_path):
        self.port = port
        self.token_path = token_path

    def headers(self):
        h = {}
        try:
            with open(self.token_path) as f:
                h["Authorization"] = "Bearer " + f.read().strip()
        except OSError:
            pass
        return h

    def request(self, method, path, body=None, timeout=30, headers=None):
        """(status, parsed JSON or bytes); (None, the error) when no answer
        came (refused, reset, timed out)."""
        h = self.headers()
        h.update(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body)
            h["Content-Type"] = "application/json"
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=data, headers=h)
            r = c.getresponse()
            raw = r.read()
        except (OSError, http.client.HTTPException) as e:
            return None, "%s: %s" % (type(e).__name__, e)
        finally:
            c.close()
        if r.getheader("Content-Type", "").startswith("application/json") and raw:
            try:
                return r.status, json.loads(raw)
            except ValueError:
                pass
        return r.status, raw


def all_events(sock_path, sid):
    """Every stored event of a session, oldest first."""
    out, after = [], 0
    while True:
        got = rpc(sock_path, "events.read",
                  {"session": sid, "after_seq": after, "limit": 10000})["events"]
        if not got:
            return out
        out += got
        after = got[-1]["seq"]


class FakeScript:
    """Appends turns to the fake's queue (atltest.Fake.script replaces it,
    which several sessions scripting at once cannot use)."""

    def __init__(self, fake):
        self.fake = fake
        self.lock = threading.Lock()

    def append(self, turns):
        """Whether the turns were queued (the fake answers slowly on a
        loaded machine; the caller then skips the message)."""
        with self.lock:
            req = urllib.request.Request(
                self.fake.url + "/_fake/script",
                json.dumps({"turns": turns, "append": True}).encode(),
                {"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(req, timeout=30).read()
                return True
            except OSError:
                return False


# ------------------------------------------------------------ SSE


class SSEReader(threading.Thread):
    """A session's event stream read the way a browser's EventSource reads
    it: after a drop (the bridge killed, the stream cut) it waits the
    stream's `retry` and reconnects with Last-Event-ID; after an HTTP error
    it retries with a growing delay, as the page does. It keeps every event
    exactly as it came, repeats included: the soak compares them with the
    store. With churn it also drops its own connection now and then, as a
    flaky network would."""

    def __init__(self, stack, sid, rng, churn, after=None):
        super().__init__(daemon=True)
        self.stack, self.sid, self.rng, self.churn = stack, sid, rng, churn
        self.events = []   # the data of each event, in arrival order
        self.bad = []      # framing problems (id not the data's seq ...)
        self.connects = 0
        self.refused = {}  # HTTP status -> count
        self.retry_ms = 2000
        self.done = threading.Event()
        self.target = None  # stop once this seq has come
        self.conn = None
        self.after = after  # the first connection's Last-Event-ID
        self.cond = threading.Condition()

    def last(self):
        return self.events[-1]["seq"] if self.events else None

    def run(self):
        delay = 1.0
        while not self.done.is_set():
            if self.target is not None and (self.last() or 0) >= self.target:
                break
            status = self.stream()
            if self.done.is_set():
                break
            if status == 200:
                delay = 1.0
                self.done.wait(self.retry_ms / 1000.0)
            else:
                self.refused[status] = self.refused.get(status, 0) + 1
                self.done.wait(delay)
                delay = min(delay * 1.5, 5.0)

    def stream(self):
        """One connection; returns its HTTP status (None: no answer)."""
        h = self.stack.http.headers()
        if self.events or self.after is not None:
            h["Last-Event-ID"] = str(self.last() or self.after)
        c = http.client.HTTPConnection("127.0.0.1", self.stack.port, timeout=10)
        self.conn = c
        opened = False
        try:
            c.request("GET", "/api/sessions/%s/events" % self.sid, headers=h)
            r = c.getresponse()
            if r.status != 200:
                r.read()
                return r.status
            self.connects += 1
            opened = True
            cut = time.monotonic() + self.rng.uniform(3, 15) if self.churn else None
            ev = {}
            while not self.done.is_set():
                if cut is not None and time.monotonic() > cut:
                    break
                line = r.readline()
                if not line:
                    break
                line = line.decode().rstrip("\n")
                if line == "":
                    if "data" in ev:
                        self.dispatch(ev)
                    ev = {}
                    continue
                if line.startswith(":"):
                    continue
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "retry" and value.isdigit():
                    self.retry_ms = int(value)
                elif name in ("id", "event", "data"):
                    ev[name] = value
            return 200
        except (OSError, http.client.HTTPException, ValueError):
            return 200 if opened else None
        finally:
            c.close()

    def dispatch(self, ev):
        data = json.loads(ev["data"])
        if ev.get("id") != str(data.get("seq")) or ev.get("event") != data.get("type"):
            self.bad.append((ev.get("id"), ev.get("event"), data.get("seq")))
        with self.cond:
            self.events.append(data)
            self.cond.notify_all()

    def wait_for(self, seq, timeout):
        """Waits until the event `seq` has come; returns whether it did."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while (self.last() or 0) < seq:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 0.5))
        return True

    def close(self):
        self.done.set()
        c = self.conn
        if c is not None and c.sock is not None:
            try:
                c.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.join(timeout=15)
