#!/usr/bin/env python3
"""The deployment of doc/deploy.md, as installed: `make install` into a
scratch DESTDIR, the installed systemd units checked by `systemd-analyze
verify` (and rated by `systemd-analyze security`), their users made by
systemd-sysusers from the installed sysusers.d file, then atelierd and
atelier-fcgi started the way their units say (systemd_units.py reads the
installed unit files: user, group, supplementary groups, umask, runtime
and state directories with their modes, command line, environment file,
and the parts of the sandbox that can be had without systemd as PID 1:
ProtectSystem=strict, PrivateTmp, PrivateNetwork, NoNewPrivileges, an
empty capability bounding set, MemoryDenyWriteExecute), and the server
block of conf/nginx/atelier.conf served by nginx the Debian way (workers
as www-data). A session through it: HTTP, a tool call, a render, events
over SSE. Then the modes of every directory, socket and data file, what
other local users cannot do, a daemon restart under the bridge, the
bridge's socket options, scripts/atelier-stack's modes, and every system
call of a session (under strace) against SystemCallFilter=.

Nothing on the machine changes: the test runs in a private mount
namespace, where /etc and /var/lib get a scratch layer (the users, the
state directory), /run is a fresh tmpfs and the installed tree appears at
the build's prefix. It needs root (CI runs as root); it is not skipped
without it, it fails and says why. Not emulated (systemd-analyze checks
them): ProtectHome (a test build's prefix may lie under /root),
PrivateDevices, RemoveIPC, the Protect*/Restrict* kernel switches;
RestrictAddressFamilies is checked on the bridge's open sockets only.

Python 3 standard library only; TAP-like output, exit status 1 on failure.
"""
import errno
import grp
import http.client
import json
import os
import pwd
import re
import signal
import socket
import stat
import subprocess
import sys
import time
import traceback

import atltest
import systemd_units
from atltest import BUILDDIR, PROCS, SRCDIR, cleanup, free_port
from systemd_units import Unit, descendants, expose, mount, overlay_rw, run

UNITS = ("atelierd.service", "atelier-fcgi.service")
NGINX_GROUP = "www-data"  # Debian's nginx runs its workers as www-data

TMP = None  # the outer process's scratch directory, under both namespaces
results = []


def check(name):
    def wrap(fn):
        results.append((name, fn))
        return fn
    return wrap


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def owner(path):
    st = os.lstat(path)
    return pwd.getpwuid(st.st_uid).pw_name, grp.getgrgid(st.st_gid).gr_name


def make_var(name):
    """A variable of the build's Makefile, as configure set it (expanded
    by make itself)."""
    out = subprocess.run(
        ["make", "-s", "-C", BUILDDIR, "--no-print-directory", "-f", "Makefile",
         "-f", "-", "atl-print-var"],
        input="atl-print-var:\n\t@echo '$(%s)'\n" % name, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=make_env())
    return out.stdout.strip()


def make_env():
    # The make running the tests must not hand its job server to this one.
    return {k: v for k, v in os.environ.items()
            if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}


# ---------------------------------------------------------------- helpers

def wait_socket(path, proc, log, timeout=20):
    t = time.monotonic() + timeout
    while time.monotonic() < t:
        if os.path.exists(path) and stat.S_ISSOCK(os.lstat(path).st_mode):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    with open(log) as f:
        tail = f.read()[-2000:]
    raise AssertionError("%s did not appear (exit %s); log:\n%s" % (
        path, proc.poll(), tail))


def as_user(user, code, groups=None):
    """Runs Python `code` as `user` (with the user's own groups) and
    returns what it prints, parsed as JSON."""
    pw = pwd.getpwnam(user)
    gs = groups if groups is not None else os.getgrouplist(user, pw.pw_gid)
    out = run(["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
               "--groups=" + ",".join(map(str, gs)), "--", sys.executable,
               "-c", code])
    return json.loads(out)


def probe(user, targets, groups=None):
    """What `user` gets from each (kind, path): "ok" or the error."""
    code = (
        "import json, os, socket\n"
        "def go(kind, p):\n"
        "    try:\n"
        "        if kind == 'connect':\n"
        "            s = socket.socket(socket.AF_UNIX); s.connect(p); s.close()\n"
        "        elif kind == 'list':\n"
        "            os.listdir(p)\n"
        "        else:\n"
        "            open(p, 'rb').close()\n"
        "        return 'ok'\n"
        "    except OSError as e:\n"
        "        return e.strerror\n"
        "print(json.dumps([go(k, p) for k, p in %r]))\n" % (targets,))
    return as_user(user, code, groups)


class Http:
    def __init__(self, port, token):
        self.port = port
        self.token = token

    def headers(self, extra=None):
        h = {"Host": "127.0.0.1:%d" % self.port}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(extra or {})
        return h

    def request(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        h = self.headers()
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        raw = r.read()
        c.close()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, raw

    def events(self, sid, until, timeout=60):
        """The session's events over SSE, up to the first of type `until`."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request("GET", "/api/sessions/%s/events" % sid,
                  headers=self.headers({"Accept": "text/event-stream"}))
        r = c.getresponse()
        assert r.status == 200, (r.status, r.read())
        assert r.getheader("Content-Type").startswith("text/event-stream")
        seen = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = r.fp.readline().decode()
            assert line, "the event stream ended; saw %s" % seen
            if line.startswith("data: "):
                ev = json.loads(line[6:])
                seen.append(ev["type"])
                if ev["type"] == until:
                    c.close()
                    return seen
        raise AssertionError("no %s event within %d s; saw %s" % (until, timeout, seen))


def status(pid):
    with open("/proc/%d/status" % pid) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def exe_name(pid):
    return os.path.basename(os.readlink("/proc/%d/exe" % pid))


def service_pid(unit):
    """The program's own pid: unshare, then python and setpriv exec in
    place, so the Popen pid is the program's."""
    return unit.proc.pid


# ---------------------------------------------------------------- checks

@check("make install puts the units, the sysusers file and the configuration under the prefix")
def _(ctx):
    dest = os.path.join(TMP, "dest")
    run(["make", "-s", "-C", BUILDDIR, "install", "DESTDIR=" + dest], env=make_env())
    prefix = make_var("prefix")
    assert prefix.startswith("/"), "cannot read the build's prefix: %r" % prefix
    unitdir = make_var("systemdsystemunitdir")
    sysusersdir = make_var("sysusersdir")
    sysconfdir = make_var("sysconfdir")
    for var, d in (("systemdsystemunitdir", unitdir), ("sysusersdir", sysusersdir),
                   ("sysconfdir", sysconfdir)):
        assert d.startswith(prefix + "/"), (
            "the build's %s is %r: expected a directory under the prefix %s "
            "(conf/Makefile.am installs the units and their users there)" % (var, d, prefix))
    for u in UNITS:
        assert os.path.isfile(dest + unitdir + "/" + u), "%s not installed in %s" % (u, unitdir)
    assert os.path.isfile(dest + sysusersdir + "/atelier.conf")
    assert os.path.isfile(dest + sysconfdir + "/atelier/atelierd.conf")
    ctx.update(dest=dest, prefix=prefix, unitdir=unitdir, sysusersdir=sysusersdir,
               sysconfdir=sysconfdir)
    # The installed tree at the prefix, the users and the state directory
    # in scratch layers, a fresh /run: this mount namespace only.
    expose(prefix, dest + prefix)
    systemd_units.KEEP[:] = [prefix]
    overlay_rw("/etc", "etc")
    overlay_rw("/var/lib", "varlib")
    mount("-t", "tmpfs", "-o", "mode=0755,nosuid,nodev", "tmpfs", "/run")
    units = {u: Unit(os.path.join(unitdir, u)) for u in UNITS}
    ctx["units"] = units
    # The units name the installed programs and configuration.
    for u in units.values():
        exe = u.argv()[0]
        assert os.access(exe, os.X_OK), "%s: %s is not installed" % (u.name, exe)
    d = units["atelierd.service"].argv()
    assert d[d.index("--config") + 1] == sysconfdir + "/atelier/atelierd.conf", d


@check("systemd-analyze verify finds nothing to say about the installed units")
def _(ctx):
    paths = [os.path.join(ctx["unitdir"], u) for u in UNITS]
    env = dict(os.environ, MANPATH=ctx["prefix"] + "/share/man:")
    p = subprocess.run(["systemd-analyze", "verify"] + paths, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ours = [line for line in p.stdout.splitlines()
            if "atelier" in line.lower()]
    assert not ours, "systemd-analyze verify:\n" + p.stdout
    assert p.returncode == 0, "systemd-analyze verify exited %d:\n%s" % (
        p.returncode, p.stdout)
    # systemd's own rating of the sandbox, as a figure.
    for path in paths:
        out = subprocess.run(
            ["systemd-analyze", "security", "--offline=yes", path],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
        m = re.search(r"Overall exposure level for \S+: ([0-9.]+) (\w+)", out)
        assert m, out[-2000:]
        print("# %s: systemd-analyze security exposure %s %s" % (
            os.path.basename(path), m.group(1), m.group(2)))
        assert float(m.group(1)) <= 2.5, "%s is exposed: %s\n%s" % (path, m.group(0), out)


@check("systemd-sysusers makes the users from the installed sysusers.d file")
def _(ctx):
    run(["systemd-sysusers", os.path.join(ctx["sysusersdir"], "atelier.conf")])
    for name in ("atelier", "atelier-fcgi"):
        pw = pwd.getpwnam(name)
        assert pw.pw_uid < 1000, "%s is not a system user: %d" % (name, pw.pw_uid)
        assert pw.pw_shell.endswith("nologin"), pw
    grp.getgrnam(NGINX_GROUP)
    grp.getgrnam("atelier")


@check("atelierd and atelier-fcgi start as their units say")
def _(ctx):
    units = ctx["units"]
    d, f = units["atelierd.service"], units["atelier-fcgi.service"]
    ctx["dlog"] = os.path.join(TMP, "atelierd.log")
    ctx["flog"] = os.path.join(TMP, "atelier-fcgi.log")
    dargs, fargs = d.argv(), f.argv()
    api = os.path.join(dargs[dargs.index("--socket-dir") + 1], "api.sock")
    assert fargs[fargs.index("--daemon-socket") + 1] == api, (api, fargs)
    ctx["api"] = api
    ctx["fcgi"] = fargs[fargs.index("--socket") + 1]
    ctx["data"] = dargs[dargs.index("--data-dir") + 1]
    PROCS.append(d.start(open(ctx["dlog"], "a")))
    wait_socket(api, d.proc, ctx["dlog"])
    PROCS.append(f.start(open(ctx["flog"], "a")))
    wait_socket(ctx["fcgi"], f.proc, ctx["flog"])


@check("nginx, configured the Debian way with the installed server block, serves the page and the API")
def _(ctx):
    port = free_port()
    ndir = "/run/nginx-test"  # readable by the workers, like /var/lib/nginx
    os.makedirs(ndir + "/sites-enabled")
    os.makedirs(ndir + "/tmp")
    with open(os.path.join(ctx["dest"] + ctx["prefix"], "share/atelier/nginx/atelier.conf")) as src:
        conf = src.read()
    # What doc/deploy.md tells an administrator to adjust: the address
    # and the page's directory. The socket must already be the unit's.
    assert "unix:%s;" % ctx["fcgi"] in conf, (
        "conf/nginx/atelier.conf does not pass to the bridge unit's socket %s" % ctx["fcgi"])
    conf = conf.replace("listen 127.0.0.1:8080;", "listen 127.0.0.1:%d;" % port)
    conf = conf.replace("/usr/local/share/atelier/www", ctx["prefix"] + "/share/atelier/www")
    with open(ndir + "/sites-enabled/atelier", "w") as out:
        out.write(conf)
    with open(ndir + "/nginx.conf", "w") as out:
        out.write("""user %(group)s;
worker_processes 1;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log;
events { worker_connections 768; }
http {
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log %(d)s/access.log;
    client_body_temp_path %(d)s/tmp/body;
    fastcgi_temp_path %(d)s/tmp/fastcgi;
    proxy_temp_path %(d)s/tmp/proxy;
    uwsgi_temp_path %(d)s/tmp/uwsgi;
    scgi_temp_path %(d)s/tmp/scgi;
    gzip on;
    include %(d)s/sites-enabled/*;
}
""" % {"group": NGINX_GROUP, "d": ndir})
    n = subprocess.Popen(["nginx", "-c", ndir + "/nginx.conf", "-e", ndir + "/error.log",
                          "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                         stderr=open(ndir + "/stderr", "w"))
    PROCS.append(n)
    ctx["nginx"] = n
    ctx["ndir"] = ndir
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert n.poll() is None, open(ndir + "/stderr").read()
            time.sleep(0.05)
    # The master listens before it forks its workers, and a worker drops
    # to its user just after the fork: on a busy machine it can be seen
    # still root for a moment (CI saw it), so wait for the drop, and fail
    # only if it never comes.
    www = str(pwd.getpwnam(NGINX_GROUP).pw_uid)

    def dropped(workers):
        try:
            return workers and all(status(p)["Uid"].split()[0] == www
                                   for p in workers)
        except (OSError, KeyError):
            return False  # a worker that went meanwhile: look again
    for _ in range(200):
        workers = descendants(n.pid)
        if dropped(workers):
            break
        time.sleep(0.05)
    assert dropped(workers), "nginx's workers are not %s: %s" % (
        NGINX_GROUP, [(p, status(p).get("Uid")) for p in workers])
    token = None
    tpath = os.path.join(ctx["data"], "token")
    if os.path.exists(tpath):
        with open(tpath) as tf:
            token = tf.read().strip()
    ctx["http"] = h = Http(port, token)
    st, body = h.request("GET", "/")
    assert st == 200 and b"<html" in body.lower(), (st, body[:200])
    st, body = h.request("GET", "/api/health")
    assert st == 200 and body["status"] == "ok", (st, body)


@check("a session through nginx: a tool call and a render, their events over SSE")
def _(ctx):
    ctx["sid"] = session_through(ctx["http"])


def session_through(h):
    """A session over HTTP through nginx and the bridge, with the tools of
    the installed build (the scene and the render farm): its id."""
    st, tools = h.request("GET", "/api/tools")
    assert st == 200, (st, tools)
    names = {t["name"] for t in tools}
    assert {"create_shape", "render_scene"} <= names, (
        "the installed build lacks the scene or render plugin: %s" % sorted(names))
    st, body = h.request("POST", "/api/sessions", {})
    assert st == 201, (st, body)
    sid = body["id"]
    st, body = h.request(
        "POST", "/api/sessions/%s/tools/create_shape" % sid,
        {"id": "ball", "type": "sphere",
         "properties": {"center": [0, 1, 0], "radius": 1}})
    assert st == 200 and body["success"], (st, body)
    seen = h.events(sid, "tool.finished")
    assert seen[0] == "session.created", seen
    # The render farm's workers under the unit's sandbox (no W+X memory,
    # private /tmp, read-only system), through the daemon.
    st, body = h.request("POST", "/api/sessions/%s/tools/render_scene" % sid,
                         {"quality": "draft", "width": 64, "height": 48})
    assert st == 200 and body["success"], (st, body)
    return sid


@check("the processes run as their units say: users, groups, umask, no privileges")
def _(ctx):
    units = ctx["units"]
    for u in units.values():
        pid = service_pid(u)
        uid, gid, groups = u.creds()
        procs = [pid] + descendants(pid)
        for p in procs:
            s = status(p)
            what = "%s (pid %d, %s)" % (u.name, p, exe_name(p))
            assert s["Uid"].split() == [str(uid)] * 4, (what, s["Uid"])
            assert s["Gid"].split() == [str(gid)] * 4, (what, s["Gid"])
            assert sorted(map(int, s["Groups"].split())) == groups, (what, s["Groups"])
            assert s["Umask"] == u.get("UMask"), (what, s["Umask"])
            assert s["NoNewPrivs"] == "1", what
            assert int(s["CapBnd"], 16) == 0 and int(s["CapEff"], 16) == 0, what
        print("# %s: %s" % (u.name, ", ".join(exe_name(p) for p in procs)))
        # ProtectSystem=strict as the process sees it: / read-only, its
        # own directories writable.
        with open("/proc/%d/mountinfo" % pid) as f:
            opts = {line.split()[4]: line.split()[5].split(",")[0] for line in f}
        assert opts["/"] == "ro", (u.name, opts["/"])
        for d, _ in u.dirs():
            assert opts.get(d) == "rw", (u.name, d, opts.get(d))
    # Only unix sockets in the bridge (RestrictAddressFamilies=AF_UNIX).
    pid = service_pid(units["atelier-fcgi.service"])
    with open("/proc/%d/net/unix" % pid) as f:
        unix = {line.split()[6] for line in f.readlines()[1:]}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        m = re.match(r"socket:\[(\d+)\]", target)
        assert not m or m.group(1) in unix, "the bridge holds a socket that is not AF_UNIX: fd %s" % fd


@check("modes: every directory, socket and data file is as open as its one client needs")
def _(ctx):
    run_dir, fcgi_dir = os.path.dirname(ctx["api"]), os.path.dirname(ctx["fcgi"])
    want = {
        run_dir: (0o750, ("atelier", "atelier")),
        ctx["api"]: (0o660, ("atelier", "atelier")),
        fcgi_dir: (0o750, ("atelier-fcgi", NGINX_GROUP)),
        ctx["fcgi"]: (0o660, ("atelier-fcgi", NGINX_GROUP)),
        ctx["data"]: (0o700, ("atelier", "atelier")),
    }
    for path, (m, who) in want.items():
        assert (mode(path), owner(path)) == (m, who), (
            "%s is %04o %s, expected %04o %s" % (path, mode(path), owner(path), m, who))
    for name in os.listdir(run_dir):
        p = os.path.join(run_dir, name)
        assert mode(p) & 0o007 == 0, "%s is %04o" % (p, mode(p))
    files = []
    for root, dirs, names in os.walk(ctx["data"]):
        for n in dirs + names:
            p = os.path.join(root, n)
            files.append(p)
            assert owner(p)[0] == "atelier", (p, owner(p))
            assert mode(p) & 0o077 == 0, "%s is %04o: only atelier may read it" % (p, mode(p))
    names = {os.path.basename(p) for p in files}
    assert {"atelier.db", "atelier.db-wal"} <= names, names
    print("# %d files and directories under %s, all private" % (len(files), ctx["data"]))


@check("other local users cannot reach the daemon, the bridge or the store")
def _(ctx):
    db = os.path.join(ctx["data"], "atelier.db")
    targets = [("connect", ctx["api"]), ("connect", ctx["fcgi"]),
               ("list", ctx["data"]), ("read", db)]
    denied = os.strerror(errno.EACCES)
    got = probe("nobody", targets)
    assert got == [denied] * 4, list(zip(targets, got))
    # nginx's user reaches the bridge, and only the bridge.
    got = probe(NGINX_GROUP, targets)
    assert got == [denied, "ok", denied, denied], list(zip(targets, got))
    # The bridge reaches the daemon, not its store.
    _, _, groups = ctx["units"]["atelier-fcgi.service"].creds()
    got = probe("atelier-fcgi", targets, groups=groups)
    assert got[0] == "ok" and got[2:] == [denied, denied], list(zip(targets, got))


@check("restarting atelierd leaves the bridge's socket in place and the API comes back")
def _(ctx):
    d = ctx["units"]["atelierd.service"]
    d.stop()
    assert os.path.exists(ctx["fcgi"]), "the bridge's socket went with the daemon"
    st, body = ctx["http"].request("GET", "/api/health")
    assert st == 503, (st, body)
    PROCS.append(d.start(open(ctx["dlog"], "a")))
    wait_socket(ctx["api"], d.proc, ctx["dlog"])
    for _ in range(100):
        st, body = ctx["http"].request("GET", "/api/health")
        if st == 200:
            break
        time.sleep(0.1)
    assert st == 200, (st, body)
    st, body = ctx["http"].request("GET", "/api/sessions/%s" % ctx["sid"])
    assert st == 200 and body["id"] == ctx["sid"], (st, body)


@check("atelier-fcgi: the socket 0600 by default, --socket-mode and --socket-group, clear errors")
def _(ctx):
    exe = ctx["units"]["atelier-fcgi.service"].argv()[0]
    d = os.path.join(TMP, "fcgi-options")
    os.makedirs(d)
    os.chmod(d, 0o755)
    sock = os.path.join(d, "fcgi.sock")

    def bridge(*extra):
        p = subprocess.Popen([exe, "--socket", sock, "--daemon-socket",
                              ctx["api"]] + list(extra),
                             stderr=subprocess.PIPE, text=True)
        try:
            wait_socket(sock, p, "/dev/null", timeout=10)
            return mode(sock), owner(sock)[1]
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=10)

    root_group = grp.getgrgid(0).gr_name
    assert bridge() == (0o600, root_group), bridge()
    assert bridge("--socket-mode", "0660", "--socket-group", NGINX_GROUP) == (
        0o660, NGINX_GROUP)
    for bad, says in ((["--socket-mode", "0999"], "expected permissions in octal"),
                      (["--socket-mode", "01777"], "from 0000 to 0777"),
                      (["--socket-group", "no-such-group"], "no-such-group")):
        p = subprocess.run([exe, "--socket", sock] + bad, stderr=subprocess.PIPE,
                           text=True, timeout=10)
        assert p.returncode == 2 and says in p.stderr, (bad, p.returncode, p.stderr)
        assert not os.path.exists(sock), bad
    # A user outside the group cannot give the socket to it.
    p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup",
                        "--clear-groups", exe, "--socket", "/tmp/atl-deploy-%d.sock"
                        % os.getpid(), "--socket-group", NGINX_GROUP],
                       stderr=subprocess.PIPE, text=True, timeout=10)
    assert p.returncode == 1 and "must be a member of that group" in p.stderr, (
        p.returncode, p.stderr)


@check("scripts/atelier-stack: umask 077, its data directory 0700, nothing in it open to others")
def _(ctx):
    data = os.path.join(TMP, "stack")
    os.makedirs(data, mode=0o755)
    os.chmod(data, 0o755)
    port = free_port()
    out = open(os.path.join(TMP, "stack.out"), "w+")
    p = subprocess.Popen([os.path.join(SRCDIR, "scripts", "atelier-stack"),
                          "--build", BUILDDIR, "--data", data, "--port", str(port)],
                         stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         env=dict(make_env(), ATELIER_FCGI_WRAPPER=""))
    PROCS.append(p)
    try:
        for _ in range(300):
            out.seek(0)
            if "ready at" in out.read() or p.poll() is not None:
                break
            time.sleep(0.1)
        out.seek(0)
        assert p.poll() is None, out.read()
        h = Http(port, None)
        tpath = os.path.join(data, "store", "token")
        if os.path.exists(tpath):
            with open(tpath) as f:
                h.token = f.read().strip()
        st, body = h.request("POST", "/api/sessions", {})
        assert st == 201, (st, body)
        assert mode(data) == 0o700, "%s is %04o" % (data, mode(data))
        assert mode(os.path.join(data, "run", "fcgi.sock")) == 0o600
        opened = []
        for root, dirs, names in os.walk(data):
            for n in dirs + names:
                q = os.path.join(root, n)
                # atelierd makes api.sock 0660 itself; the directory 0700
                # keeps everyone else out.
                closed = 0o007 if stat.S_ISSOCK(os.lstat(q).st_mode) else 0o077
                if mode(q) & closed and not os.path.islink(q):
                    opened.append("%s %04o" % (q, mode(q)))
        assert not opened, "open to the group or others:\n" + "\n".join(opened)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)


def syscall_filter(name):
    """The system calls a SystemCallFilter= group allows, its groups
    expanded, as systemd-analyze says."""
    groups = {}
    cur = None
    for line in run(["systemd-analyze", "syscall-filter"]).splitlines():
        if line.startswith("@"):
            cur = groups.setdefault(line.split()[0], [])
        elif line.startswith("    ") and not line.strip().startswith("#") and cur is not None:
            cur.append(line.strip())
    out = set()
    todo = [name]
    while todo:
        for item in groups[todo.pop()]:
            if item.startswith("@"):
                todo.append(item)
            else:
                out.add(item)
    return out


def strace_table(log):
    """{syscall: calls} from the last strace -c table in `log`."""
    with open(log) as f:
        text = f.read()
    i = text.rfind("% time")
    assert i >= 0, "no strace table in %s:\n%s" % (log, text[-2000:])
    calls = {}
    for line in text[i:].splitlines()[2:]:
        cols = line.split()
        if not cols or cols[0].startswith("-"):
            break
        calls[cols[-1]] = int(cols[3])
    return calls


@check("SystemCallFilter=@system-service holds: every system call of a session, render workers included, is in it")
def _(ctx):
    units = ctx["units"]
    d, f = units["atelierd.service"], units["atelier-fcgi.service"]
    f.stop()
    d.stop()
    logs = {u: os.path.join(TMP, u.name + ".strace.log") for u in (d, f)}
    PROCS.append(d.start(open(logs[d], "w"), strace=True))
    wait_socket(ctx["api"], d.proc, logs[d], timeout=60)
    PROCS.append(f.start(open(logs[f], "w"), strace=True))
    wait_socket(ctx["fcgi"], f.proc, logs[f], timeout=60)
    # The same session as above: HTTP, SSE, a tool call and a render.
    session_through(ctx["http"])
    f.stop()
    d.stop()
    for u in (d, f):
        allowed = syscall_filter(u.get("SystemCallFilter"))
        used = strace_table(logs[u])
        assert len(used) > 20, used
        outside = sorted(set(used) - allowed)
        print("# %s: %d distinct system calls, %d calls; outside %s: %s" % (
            u.name, len(used), sum(used.values()), u.get("SystemCallFilter"),
            outside or "none"))
        assert not outside, "%s makes system calls that %s refuses (EPERM): %s" % (
            u.name, u.get("SystemCallFilter"), outside)


def main():
    global TMP
    if os.geteuid() != 0:
        print("not ok 1 - test_deploy.py needs root: it makes system users and "
              "mounts, in a private mount namespace (CI runs as root)")
        return 1
    if os.environ.get("ATL_DEPLOY_NS") != "1":
        # Everything below happens in a mount namespace of its own, which
        # goes away with the test.
        # atltest's scratch directory, removed when this process exits.
        r = subprocess.run(["unshare", "--mount", "--propagation", "private",
                            sys.executable, os.path.abspath(__file__)],
                           env=dict(os.environ, ATL_DEPLOY_NS="1",
                                    ATL_DEPLOY_TMP=atltest.TMP))
        return r.returncode
    TMP = os.environ["ATL_DEPLOY_TMP"]
    os.chmod(TMP, 0o700)
    # The scratch layers (users, state) on a tmpfs that dies with the
    # namespace.
    systemd_units.LAYERS = os.path.join(TMP, "layers")
    os.makedirs(systemd_units.LAYERS)
    mount("-t", "tmpfs", "-o", "mode=0700", "tmpfs", systemd_units.LAYERS)
    ctx = {}
    failed = 0
    t0 = time.monotonic()
    try:
        for i, (name, fn) in enumerate(results, 1):
            if failed:
                # Each check builds on the ones before it.
                failed += 1
                print("not ok %d - %s (not run: an earlier check failed)" % (i, name))
                continue
            try:
                t1 = time.monotonic()
                fn(ctx)
                print("ok %d - %s (%.1f s)" % (i, name, time.monotonic() - t1))
            except Exception:
                failed += 1
                print("not ok %d - %s" % (i, name))
                for line in traceback.format_exc().splitlines():
                    print("#   " + line)
                for key in ("dlog", "flog"):
                    if key in ctx and os.path.exists(ctx[key]):
                        with open(ctx[key]) as f:
                            tail = f.read()[-1500:]
                        print("#   %s:\n#     %s" % (ctx[key], tail.replace("\n", "\n#     ")))
            sys.stdout.flush()
    finally:
        cleanup()
    print("# total time %.1f s" % (time.monotonic() - t0))
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
