"""The systemd units of tests/integration/test_deploy.py, carried out
without systemd as PID 1: a unit file read the way systemd reads it, and
its ExecStart started with the unit's user, groups, umask, directories and
the parts of its sandbox that the kernel offers directly (mount and network
namespaces, setpriv, PR_SET_MDWE). Mounts happen in the caller's private
mount namespace; python3 standard library only.
"""
import ctypes
import grp
import json
import os
import pwd
import shlex
import shutil
import signal
import stat
import subprocess
import sys

LAYERS = None  # where overlay_rw keeps its scratch layers (a tmpfs)
# The installed prefix (set by the test): carried into a unit's private
# /tmp when it lies under /tmp, as a CI clone's build tree may.
KEEP = []


# The [Service] keys this test carries out when it starts a unit...
EMULATED = {
    "User", "Group", "SupplementaryGroups", "UMask", "ExecStart",
    "EnvironmentFile", "Environment", "RuntimeDirectory",
    "RuntimeDirectoryMode", "RuntimeDirectoryPreserve", "StateDirectory",
    "StateDirectoryMode", "NoNewPrivileges", "CapabilityBoundingSet",
    "ProtectSystem", "PrivateTmp", "PrivateNetwork", "PrivateMounts",
    "MemoryDenyWriteExecute",
}
# ...and those only systemd can (systemd-analyze verify checks them). A key
# in neither set fails the test: teach this file the new key first.
NOT_EMULATED = {
    "Type", "Restart", "RestartSec", "TimeoutStopSec", "ProtectHome",
    "PrivateDevices", "RemoveIPC", "ProtectKernelTunables",
    "ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectClock",
    "ProtectHostname", "ProtectProc", "RestrictNamespaces",
    "RestrictRealtime", "RestrictSUIDSGID", "LockPersonality",
    "RestrictAddressFamilies", "SystemCallArchitectures",
    "SystemCallFilter", "SystemCallErrorNumber",
}

def run(args, **kw):
    """Runs a command; its output is returned, a failure raised with it."""
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, **kw)
    if p.returncode != 0:
        raise AssertionError("%s exited %d:\n%s" % (
            " ".join(args), p.returncode, p.stdout[-3000:]))
    return p.stdout


# ---------------------------------------------------------------- mounts

def mount(*args):
    run(["mount"] + list(args))


def overlay_rw(path, name):
    """A scratch layer over `path` (in this mount namespace only): writes
    land in the scratch directory, the machine's files stay as they are."""
    up = os.path.join(LAYERS, name, "upper")
    work = os.path.join(LAYERS, name, "work")
    os.makedirs(up)
    os.makedirs(work)
    st = os.stat(path)
    os.chmod(up, stat.S_IMODE(st.st_mode))
    os.chown(up, st.st_uid, st.st_gid)
    mount("-t", "overlay", "overlay", "-o",
          "lowerdir=%s,upperdir=%s,workdir=%s" % (path, up, work), path)


def expose(prefix, tree):
    """Makes the installed `tree` appear at `prefix`, where the programs
    were built to find their plugins and data, reachable by every user
    (nginx's workers read the page there, the daemon its plugins). The
    first ancestor that is missing or closed to others gets a scratch
    layer, in which it and those below are made or opened (one layer:
    overlayfs stacks two deep at most)."""
    parts = prefix.strip("/").split("/")
    cur = "/"
    layered = False
    for name in parts:
        nxt = os.path.join(cur, name)
        missing = not os.path.isdir(nxt)
        closed = not missing and not os.stat(nxt).st_mode & stat.S_IXOTH
        if (missing or closed) and not layered:
            target = cur if missing else nxt
            assert target != "/", "cannot create %s for the prefix %s" % (nxt, prefix)
            overlay_rw(target, "prefix")
            layered = True
        if missing:
            os.mkdir(nxt, 0o755)
        elif closed:
            os.chmod(nxt, 0o755)
        cur = nxt
    mount("-t", "overlay", "overlay", "-o",
          "lowerdir=%s:%s" % (tree, prefix), prefix)


# ---------------------------------------------------------------- units

def parse_unit(path):
    """The unit file's sections as {section: [(key, value)]}, continuation
    lines joined, the way systemd reads them."""
    sections = {}
    cur = None
    pending = ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not pending and (not line.strip() or line.lstrip()[0] in "#;"):
                continue
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            line, pending = pending + line, ""
            line = line.strip()
            if line.startswith("["):
                cur = sections.setdefault(line.strip("[]"), [])
                continue
            key, _, value = line.partition("=")
            cur.append((key.strip(), value.strip()))
    return sections


class Unit:
    def __init__(self, path):
        self.name = os.path.basename(path)
        self.service = parse_unit(path)["Service"]
        for k, _ in self.service:
            assert k in EMULATED or k in NOT_EMULATED, (
                "%s: %s= is new to systemd_units.py: say in EMULATED how to "
                "carry it out, or in NOT_EMULATED why not" % (self.name, k))

    def get(self, key, default=None):
        vals = [v for k, v in self.service if k == key]
        return vals[-1] if vals else default

    def yes(self, key):
        return self.get(key, "no").lower() in ("yes", "true", "1", "on")

    def argv(self):
        cmd = self.get("ExecStart")
        assert cmd and cmd[0] == "/", "%s: ExecStart must be an absolute path" % self.name
        assert "$" not in cmd and "%" not in cmd, (
            "%s: ExecStart uses variables or specifiers, which this test does "
            "not expand: %s" % (self.name, cmd))
        return shlex.split(cmd)

    def environment(self):
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "LANG": "C.UTF-8"}
        for k, v in self.service:
            if k == "Environment":
                for a in shlex.split(v):
                    n, _, val = a.partition("=")
                    env[n] = val
            elif k == "EnvironmentFile":
                optional = v.startswith("-")
                p = v.lstrip("-")
                if not os.path.exists(p):
                    assert optional, "%s: %s is missing" % (self.name, p)
                    continue
                with open(p) as f:
                    for line in f:
                        line = line.strip()
                        if line and line[0] not in "#;":
                            n, _, val = line.partition("=")
                            env[n.strip()] = val.strip().strip('"')
        return env

    def dirs(self):
        """(path, mode) of the directories systemd makes for the unit."""
        out = []
        for key, base in (("RuntimeDirectory", "/run"),
                          ("StateDirectory", "/var/lib")):
            for d in (self.get(key) or "").split():
                out.append((os.path.join(base, d),
                            int(self.get(key + "Mode", "0755"), 8)))
        return out

    def creds(self):
        user = self.get("User")
        pw = pwd.getpwnam(user)
        gid = grp.getgrnam(self.get("Group")).gr_gid if self.get("Group") else pw.pw_gid
        groups = set(os.getgrouplist(user, gid))
        for g in (self.get("SupplementaryGroups") or "").split():
            groups.add(grp.getgrnam(g).gr_gid)
        return pw.pw_uid, gid, sorted(groups)

    def make_dirs(self):
        uid, gid, _ = self.creds()
        for path, m in self.dirs():
            os.makedirs(path, exist_ok=True)
            os.chown(path, uid, gid)
            os.chmod(path, m)

    def start(self, log, strace=False):
        """Starts the unit's ExecStart the way systemd would, as far as
        the keys in EMULATED go (under strace -f -c with `strace`)."""
        self.make_dirs()
        uid, gid, groups = self.creds()
        spec = {
            "writable": [p for p, _ in self.dirs()],
            "strict": self.get("ProtectSystem") == "strict",
            "private_tmp": self.yes("PrivateTmp"),
            "keep": [p for p in KEEP
                     if p.startswith("/tmp/") or p.startswith("/var/tmp/")],
            "mdwe": self.yes("MemoryDenyWriteExecute"),
            "umask": int(self.get("UMask", "0022"), 8),
            "setpriv": ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid,
                        "--groups=" + ",".join(map(str, groups))]
            + (["--no-new-privs"] if self.yes("NoNewPrivileges") else [])
            + (["--bounding-set=-all", "--inh-caps=-all"]
               if self.get("CapabilityBoundingSet") == "" else []),
            "argv": self.argv(),
            "strace": strace,
        }
        ns = ["unshare", "--mount", "--propagation", "private"]
        if self.yes("PrivateNetwork"):
            ns.append("--net")
        self.proc = subprocess.Popen(
            ns + [sys.executable, os.path.abspath(__file__), json.dumps(spec)],
            env=self.environment(), stdout=log, stderr=subprocess.STDOUT)
        self.traced = strace
        return self.proc

    def stop(self):
        kids = descendants(self.proc.pid)
        if self.traced and kids:
            # SIGTERM to the program, not to strace, which waits for it.
            os.kill(min(kids), signal.SIGTERM)
        else:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        # What systemd does to the runtime directory when the service
        # stops (on a restart, unless RuntimeDirectoryPreserve= keeps it).
        if self.get("RuntimeDirectoryPreserve", "no") not in ("yes", "restart"):
            for d in (self.get("RuntimeDirectory") or "").split():
                shutil.rmtree(os.path.join("/run", d), ignore_errors=True)


def sandbox(spec):
    """Runs in the unit's own mount namespace (and network namespace, for
    PrivateNetwork=): the file system as systemd would show it, then
    setpriv and the program."""
    spec = json.loads(spec)
    if spec["private_tmp"]:
        # systemd would hide a program installed under /tmp as well (so
        # doc/deploy.md says not to install there); a build tree under
        # /tmp, as a CI clone may be, is carried into the private /tmp:
        # the one liberty this emulation takes.
        held = []
        for i, p in enumerate(spec["keep"]):
            h = "/run/.atl-keep-%d" % i
            os.makedirs(h, exist_ok=True)
            mount("--bind", p, h)
            held.append((h, p))
        for d in ("/tmp", "/var/tmp"):
            mount("-t", "tmpfs", "-o", "mode=1777,nosuid,nodev", "tmpfs", d)
        for h, p in held:
            os.makedirs(p, mode=0o755, exist_ok=True)
            mount("--bind", h, p)
            subprocess.run(["umount", h], check=True)
            os.rmdir(h)
    if spec["strict"]:
        # ProtectSystem=strict: everything read-only but the API file
        # systems and the unit's own directories.
        for d in spec["writable"]:
            mount("--bind", d, d)
        with open("/proc/self/mountinfo") as f:
            points = [line.split()[4] for line in f]
        for p in points:
            p = p.replace("\\040", " ")
            if p in spec["writable"] or p.split("/")[1] in ("proc", "sys", "dev"):
                continue
            subprocess.run(["mount", "-o", "remount,bind,ro", p],
                           stderr=subprocess.DEVNULL)
    if spec["mdwe"]:
        # The kernel's own MemoryDenyWriteExecute (PR_SET_MDWE,
        # PR_MDWE_REFUSE_EXEC_GAIN), inherited by every child: systemd's is
        # a seccomp filter to the same effect.
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(65, 1, 0, 0, 0) != 0:
            sys.exit("PR_SET_MDWE failed: %s" % os.strerror(ctypes.get_errno()))
    os.umask(spec["umask"])
    # strace -c writes its table of system calls to standard error (the
    # unit's log) once the program and all its children have exited.
    trace = ["strace", "-f", "-qq", "-c", "--"] if spec.get("strace") else []
    os.execvp("setpriv", spec["setpriv"] + ["--"] + trace + spec["argv"])


def descendants(pid):
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if ppid == pid:
            out.append(int(p))
            out += descendants(int(p))
    return out


if __name__ == "__main__":
    # Unit.start runs this file in the unit's namespaces.
    sandbox(sys.argv[1])
