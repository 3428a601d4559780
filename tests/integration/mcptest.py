"""What the MCP tests share (test_mcp.py on stdio, test_mcp_http.py over
HTTP): the pinned npm packages, the SDK client scripts, and the MCP
Inspector's CLI with its portability check."""

import json
import os
import re
import subprocess

from atltest import SRCDIR

MCP_DIR = os.path.join(SRCDIR, "tests", "mcp")
INSPECTOR_DIR = os.path.join(SRCDIR, "tests", "mcp-inspector")


def npm_ensure(directory):
    """Installs the packages pinned in directory's package-lock.json
    (tests/npm-ensure.sh), or fails naming what is missing."""
    r = subprocess.run([os.path.join(SRCDIR, "tests", "npm-ensure.sh"),
                        directory, "20"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def run_node(script, env, timeout=400):
    """Runs one of tests/mcp's scripts, echoing its "ok N" lines."""
    npm_ensure(MCP_DIR)
    r = subprocess.run(["node", os.path.join(MCP_DIR, script)],
                       capture_output=True, text=True,
                       env=dict(os.environ, **env), timeout=timeout)
    for line in r.stdout.splitlines():
        print("#   " + line)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def inspector(home, target):
    """A function running the Inspector's CLI on target (a command line,
    or a URL and its options) with extra arguments: the completed
    process. Its catalog goes to home."""
    npm_ensure(INSPECTOR_DIR)
    os.makedirs(home, exist_ok=True)
    cli = [os.path.join(INSPECTOR_DIR, "node_modules", ".bin",
                        "mcp-inspector"), "--cli"] + list(target)
    env = dict(os.environ, HOME=home)

    def run(*args):
        return subprocess.run(cli + list(args), capture_output=True,
                              text=True, env=env, timeout=120)
    return run


def check_inspector_lists_and_calls(run, shape_id):
    """tools/list --strict finds no problem with the product's tools, and
    a tools/call of create_shape works: the call's output, parsed."""
    r = run("--method", "tools/list", "--strict")
    assert r.returncode == 0, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    names = [t["name"] for t in json.loads(r.stdout)["tools"]]
    assert "render_scene" in names and "query_rays" in names, names
    # The portability check found no error, and no warning about any of
    # the product's tools (the test plugin's echo_store takes any value on
    # purpose). With no finding at all it prints no summary.
    summary = re.search(r"^(\d+) errors?, \d+ warnings? across", r.stderr,
                        re.M)
    assert summary is None or summary.group(1) == "0", r.stderr[-2000:]
    warned = re.findall(r'^Warning: tool "([a-z_0-9]+)"', r.stderr, re.M)
    assert all(w.startswith("echo_") for w in warned), r.stderr[-3000:]
    r = run("--method", "tools/call", "--tool-name", "create_shape",
            "--tool-arg", "id=" + shape_id, "type=sphere",
            'properties={"center": [2, 0, -3], "radius": 0.5}')
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-2000:])
    out = json.loads(r.stdout)
    assert out["structuredContent"]["id"] == shape_id, r.stdout
    return out
