#!/usr/bin/env python3
"""The MCP front (issue 22) against the real atelierd and its plugins:

- the MCP Inspector's CLI (tests/mcp-inspector): the tool list passes its
  portability check (--strict) without a warning, and a call works;
- the official SDK clients from npm (tests/mcp/mcp.test.mjs): the v1 line
  (legacy era, initialize) and the v2 line (pinned to 2026-07-28, and in
  auto mode), over `atelierctl mcp` on stdio: the tool list, a scene built,
  a render decoded as PNG, a failing call, an invalid call, an unknown
  tool, two clients on one session, --new;
- the calls are the session's own: tool.finished events name who called
  ("via": "MCP over stdio (<client>)"), as the page shows them;
- the protocol as the spec words it, on raw lines: version negotiation
  down to one we speak, the modern envelope's errors (-32602, -32022),
  ping only in the legacy era, notifications answered with nothing,
  malformed lines and ids, batches refused;
- stdio hygiene: every byte on stdout is a JSON-RPC message, even with
  atelierd logging at trace level; a session that does not exist is said
  on stderr with nothing on stdout; when atelierd is killed mid-call the
  call gets a JSON-RPC error and atelierctl exits.

Needs node and npm (tests/npm-ensure.sh installs the SDKs pinned in
tests/mcp/package-lock.json); without them it FAILS, naming what to
install.
"""

import base64
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time

from atltest import (BUILDDIR, SRCDIR, Checks, Daemon, rpc, rpc_answer,
                     rpc_error, run_checks)
from mcptest import check_inspector_lists_and_calls, inspector, run_node

CTL = os.path.join(BUILDDIR, "atelierctl")

CHECKS = Checks()
check = CHECKS.add

MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}


class Stdio:
    """atelierctl mcp as a client runs it, one raw line at a time. A
    thread reads stdout, so that a missing answer fails a check after a
    while instead of hanging it."""

    def __init__(self, d, *args, env=None):
        self.p = subprocess.Popen(
            [CTL, "--socket", d.sock, "mcp", *args], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, **(env or {})))
        self.lines = []  # every line read from stdout
        self.q = queue.Queue()
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self):
        for line in self.p.stdout:
            self.q.put(line)
        self.q.put(None)

    def send(self, msg):
        self.p.stdin.write((msg if isinstance(msg, str) else json.dumps(msg))
                           + "\n")
        self.p.stdin.flush()

    def read(self, timeout=120):
        try:
            line = self.q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no answer within %d s" % timeout)
        assert line is not None, "atelierctl mcp closed stdout"
        self.lines.append(line)
        return json.loads(line)

    def quiet(self, seconds):
        """Nothing on stdout for this long."""
        try:
            line = self.q.get(timeout=seconds)
        except queue.Empty:
            return
        raise AssertionError("unexpected output: %r" % line)

    def ask(self, msg):
        self.send(msg)
        return self.read()

    def close(self):
        self.p.stdin.close()
        status = self.p.wait(timeout=60)
        while True:
            line = self.q.get(timeout=10)
            if line is None:
                break
            self.lines.append(line)
        return status, self.p.stderr.read()


def progress_seen(d, sid, timeout=60):
    """Waits until a render of the session is under way (its
    render.progress events): a call that has reached atelierd."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(e["type"] == "render.progress" for e in d.events(sid)):
            return
        time.sleep(0.1)
    raise AssertionError("no render.progress in %d s" % timeout)


# A render of a minute or more on one worker: only a cancel, or atelierd's
# death, ends it within a check.
LONG_RENDER = {"name": "render_scene", "arguments": {
    "width": 800, "height": 600, "samples": 4096, "noise_threshold": 0}}


def shape(i):
    return {"id": "s%d" % i, "type": "sphere", "properties": {
        "center": [i, 0, -3], "radius": 0.5}}


def req(id_, method, params=None):
    m = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        m["params"] = params
    return m


@check("the official SDK clients, v1 (legacy) and v2 (modern, auto), over stdio: tools, a render, errors, two clients, --new")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    ctx["sid"] = sid
    run_node("mcp.test.mjs", {"ATL_MCP_CTL": CTL, "ATL_MCP_SOCKET": d.sock,
                              "ATL_MCP_SESSION": sid}, timeout=300)


@check("the MCP Inspector's CLI lists the tools with no portability problem (--strict) and calls one")
def _(ctx):
    d = ctx["d"]
    run = inspector(os.path.join(d.dir, "inspector-home"),
                    [CTL, "--socket", d.sock, "mcp", "--session", ctx["sid"]])
    check_inspector_lists_and_calls(run, "inspected")


@check("an MCP client's calls are the session's: tool.finished names who called")
def _(ctx):
    d, sid = ctx["d"], ctx["sid"]
    finished = [e["data"] for e in d.events(sid)
                if e["type"] == "tool.finished"]
    by = {(e["operation"]["tool"], e.get("via")) for e in finished}
    assert ("create_shape", "MCP over stdio (atelier-test-v1)") in by, by
    assert ("create_shape", "MCP over stdio (atelier-test-v2)") in by, by
    assert ("render_scene", "MCP over stdio (atelier-test-v2)") in by, by
    # The document holds what both clients made.
    doc = d.rpc("session.get", {"session": sid})["document"]
    ids = {s["id"] for s in doc["scene"]["shapes"]}
    assert {"ball_v1", "ball_v2", "from_a"} <= ids, ids


@check("legacy: initialize negotiates down to a version we speak, never refuses one; ping; notifications get no answer")
def _(ctx):
    s = Stdio(ctx["d"], "--new")
    for asked, got in (("2025-11-25", "2025-11-25"),
                       ("2025-06-18", "2025-06-18"),
                       ("2024-11-05", "2024-11-05"),
                       ("2099-01-01", "2025-11-25")):
        r = s.ask(req(1, "initialize", {
            "protocolVersion": asked, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}))
        assert r["result"]["protocolVersion"] == got, r
        assert r["result"]["capabilities"] == {
            "tools": {"listChanged": False}}, r
        assert r["result"]["serverInfo"]["name"] == "atelier", r
        assert "resultType" not in r["result"], r
    s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 99, "reason": "no such request"}})
    r = s.ask(req("p", "ping"))
    assert r == {"jsonrpc": "2.0", "id": "p", "result": {}}, r
    r = s.ask(req(2, "initialize", {"capabilities": {}}))
    assert r["error"]["code"] == -32602 and \
        "protocolVersion" in r["error"]["message"], r
    status, err = s.close()
    assert status == 0, (status, err)
    # Exactly the four answers and the ping's: the notifications got none.
    assert len(s.lines) == 6, s.lines


@check("modern: server/discover, resultType and caching hints; the envelope's errors as the spec gives them")
def _(ctx):
    s = Stdio(ctx["d"], "--new")
    r = s.ask(req(1, "server/discover", {"_meta": MODERN}))["result"]
    assert r["supportedVersions"] == ["2026-07-28"], r
    assert r["resultType"] == "complete" and r["ttlMs"] >= 0 and \
        r["cacheScope"] in ("public", "private"), r
    assert r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == \
        "atelier", r
    t = s.ask(req(2, "tools/list", {"_meta": MODERN}))["result"]
    assert t["resultType"] == "complete" and "ttlMs" in t, list(t)
    # A version we do not speak: -32022 with the ones we do.
    bad = dict(MODERN, **{"io.modelcontextprotocol/protocolVersion":
                          "1900-01-01"})
    e = s.ask(req(3, "tools/list", {"_meta": bad}))["error"]
    assert e["code"] == -32022 and e["data"] == {
        "supported": ["2026-07-28"], "requested": "1900-01-01"}, e
    # The envelope without the client's capabilities: -32602.
    e = s.ask(req(4, "tools/list", {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}))["error"]
    assert e["code"] == -32602 and "clientCapabilities" in e["message"], e
    # server/discover needs the envelope; ping is gone from this era.
    e = s.ask(req(5, "server/discover", {}))["error"]
    assert e["code"] == -32602 and "_meta" in e["message"], e
    e = s.ask(req(6, "ping", {"_meta": MODERN}))["error"]
    assert e["code"] == -32601, e
    # A cursor we never gave.
    e = s.ask(req(7, "tools/list", {"_meta": MODERN, "cursor": "x"}))["error"]
    assert e["code"] == -32602 and "cursor" in e["message"], e
    s.close()


@check("malformed input: a line that is not JSON, a batch, a bad id or jsonrpc, a non-object params, an unknown method; each gets the right error and the server goes on")
def _(ctx):
    s = Stdio(ctx["d"], "--new")
    e = s.ask("{not json")["error"]
    assert e["code"] == -32700, e
    r = s.ask([req(1, "ping")])
    assert r["error"]["code"] == -32600 and "batch" in \
        r["error"]["message"] and r["id"] is None, r
    r = s.ask({"jsonrpc": "2.0", "id": None, "method": "ping"})
    assert r["error"]["code"] == -32600 and "id" in r["error"]["message"], r
    r = s.ask({"jsonrpc": "2.0", "id": 1.5, "method": "ping"})
    assert r["error"]["code"] == -32600, r
    r = s.ask({"jsonrpc": "1.0", "id": 2, "method": "ping"})
    assert r["error"]["code"] == -32600 and r["id"] == 2, r
    r = s.ask(req(3, "tools/call", ["create_shape"]))
    assert r["error"]["code"] == -32602, r
    r = s.ask(req(4, "tools/call", {"name": "create_shape",
                                    "arguments": [1, 2]}))
    assert r["error"]["code"] == -32602 and "arguments" in \
        r["error"]["message"], r
    r = s.ask(req(5, "resources/list"))
    assert r["error"]["code"] == -32601 and "resources/list" in \
        r["error"]["message"], r
    s.send("")  # a blank line carries nothing
    assert s.ask(req(6, "ping")) == {"jsonrpc": "2.0", "id": 6,
                                     "result": {}}
    status, _ = s.close()
    assert status == 0


@check("stdout carries JSON-RPC only, whatever is logged (atelierd at trace level); a missing session is said on stderr with nothing on stdout")
def _(ctx):
    t = Daemon("mcp-trace", "[log]\nlevel = trace\n")
    try:
        s = Stdio(t, "--new")
        s.ask(req(1, "initialize", {"protocolVersion": "2025-11-25",
                                    "capabilities": {},
                                    "clientInfo": {"name": "h", "version":
                                                   "1"}}))
        s.ask(req(2, "tools/list"))
        s.ask(req(3, "tools/call", {"name": "create_shape", "arguments": {
            "id": "b", "type": "sphere", "properties": {
                "center": [0, 0, -3], "radius": 1}}}))
        s.ask(req(4, "tools/call", {"name": "render_scene", "arguments": {
            "width": 32, "height": 24, "quality": "draft"}}))
        status, err = s.close()
        assert status == 0, err
        for line in s.lines:
            m = json.loads(line)
            assert m["jsonrpc"] == "2.0" and ("result" in m or "error" in m), m
        assert "serving" in err, err
    finally:
        t.stop()
    s = Stdio(ctx["d"], "--session", "0" * 32)
    status, err = s.close()
    assert status == 2 and s.lines == [], (status, s.lines)
    assert "no such session" in err, err


@check("progress on raw lines: notifications/progress with the client's token, increasing, all before the answer and none after; none without a token")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    s = Stdio(d, "--session", sid)
    s.ask(req(1, "tools/call", {"name": "create_shape",
                                "arguments": shape(0)}))
    # Seconds of work: the first render.progress comes at 250 ms, even on
    # a machine several times faster than these.
    render = {"width": 400, "height": 300, "samples": 512,
              "noise_threshold": 0}
    s.send(req(2, "tools/call", {"name": "render_scene", "arguments": render,
                                 "_meta": {"progressToken": "tok-7"}}))
    notes = []
    while True:
        m = s.read()
        if m.get("id") == 2:
            break
        assert m["method"] == "notifications/progress", m
        notes.append(m["params"])
    assert "result" in m and not m["result"].get("isError"), m
    assert notes, "no progress before the answer"
    got = [n["progress"] for n in notes]
    assert got == sorted(set(got)) and 0 < got[0] and got[-1] <= 100, got
    assert all(n["progressToken"] == "tok-7" and n["total"] == 100
               for n in notes), notes
    s.quiet(0.5)
    # Without a token, the answer alone.
    r = s.ask(req(3, "tools/call", {"name": "render_scene",
                                    "arguments": render}))
    assert r["id"] == 3 and "result" in r, r
    s.close()


@check("a picture too large for an MCP result is scaled to fit under 1 MB, and the text says so; image.get's max_base64 is checked")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    s = Stdio(d, "--session", sid)
    with open(os.path.join(SRCDIR, "tests", "data", "scenes",
                           "snowman.json")) as f:
        snowman = json.load(f)
    r = s.ask(req(1, "tools/call", {"name": "import_scene",
                                    "arguments": {"scene": snowman}}))
    assert not r["result"].get("isError"), r
    # The snowman at one sample a pixel, 1920x1440: noise everywhere,
    # megabytes of PNG.
    r = s.ask(req(2, "tools/call", {"name": "render_scene", "arguments": {
        "width": 1920, "height": 1440, "samples": 1}}))
    assert "result" in r and not r["result"].get("isError"), str(r)[:500]
    img = [b for b in r["result"]["content"] if b["type"] == "image"]
    assert len(img) == 1 and len(img[0]["data"]) <= 700 * 1024, \
        len(img[0]["data"]) if img else r
    raw = base64.b64decode(img[0]["data"])
    assert raw[:8] == b"\x89PNG\r\n\x1a\n" and \
        img[0]["mimeType"] == "image/png" or \
        raw[:3] == b"\xff\xd8\xff" and img[0]["mimeType"] == "image/jpeg", \
        img[0]["mimeType"]
    text = " ".join(b["text"] for b in r["result"]["content"]
                    if b["type"] == "text")
    # Scaled down, or kept at its size as a JPEG: either way the line says.
    assert re.search(r"(scaled to \d+x\d+ \(image/(png|jpeg)\) from "
                     r"1920x1440|1920x1440, re-encoded as image/jpeg) so that "
                     r"this result stays under 1 MB", text), text
    # The whole result, as a client receives it, is under 1 MB.
    assert len(s.lines[-1]) < 1024 * 1024, len(s.lines[-1])
    s.close()
    iid = r["result"]["structuredContent"]["images"][0]["id"] \
        if "images" in r["result"]["structuredContent"] else \
        re.search(r"Image ([0-9a-f]{64})", text).group(1)
    for bad in (0, 1023, "big", 2 ** 31):
        e = rpc_error(d.sock, "image.get", {"id": iid, "max_base64": bad})
        assert e["code"] == -32602 and "max_base64" in e["message"], e
    whole = d.rpc("image.get", {"id": iid})
    assert "fitted" not in whole and len(whole["data"]) > 700 * 1024, \
        len(whole["data"])


@check("calls at once (eight, a list and a ping): each answered under its own id")
def _(ctx):
    s = Stdio(ctx["d"], "--new")
    for i in range(8):
        s.send(req("c%d" % i, "tools/call", {"name": "create_shape",
                                             "arguments": shape(i)}))
    s.send(req("list", "tools/list"))
    s.send(req("ping", "ping"))
    got = {}
    for _ in range(10):
        r = s.read()
        got[r["id"]] = r
    assert set(got) == {"c%d" % i for i in range(8)} | {"list", "ping"}, \
        list(got)
    for i in range(8):
        assert got["c%d" % i]["result"]["structuredContent"]["id"] == \
            "s%d" % i, got["c%d" % i]
    assert len(got["list"]["result"]["tools"]) > 30
    status, _ = s.close()
    assert status == 0


@check("notifications/cancelled on a render in flight: no answer for it, atelierd stops the render, the server answers the rest and exits cleanly")
def _(ctx):
    c = Daemon("mcp-cancel", "[render]\nworkers = 1\n")
    try:
        sid = c.session()
        s = Stdio(c, "--session", sid)
        assert "result" in s.ask(req(1, "tools/call", {
            "name": "create_shape", "arguments": shape(0)}))
        # A render of a minute or more on one worker...
        s.send(req(2, "tools/call", LONG_RENDER))
        progress_seen(c, sid)
        t0 = time.monotonic()
        s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 2, "reason": "the user pressed Esc"}})
        assert s.ask(req(3, "ping")) == {"jsonrpc": "2.0", "id": 3,
                                         "result": {}}
        # ...stopped in atelierd too: its tool.finished says so, soon.
        fin = None
        while fin is None and time.monotonic() - t0 < 20:
            fin = next((e["data"] for e in c.events(sid)
                        if e["type"] == "tool.finished" and
                        e["data"]["operation"]["tool"] == "render_scene"),
                       None)
            time.sleep(0.1)
        assert fin is not None, "the render went on after the cancel"
        assert fin["success"] is False and "cancelled" in fin["error"], fin
        s.quiet(1.0)
        status, err = s.close()
        assert status == 0, (status, err)
        assert all(json.loads(x)["id"] != 2 for x in s.lines), s.lines
    finally:
        c.stop()


@check("a quick tool's call behind another client's render waits on a worker, not on the reading thread: a ping is answered meanwhile")
def _(ctx):
    c = Daemon("mcp-busy", "[render]\nworkers = 1\n")
    try:
        sid = c.session()
        a = Stdio(c, "--session", sid)
        b = Stdio(c, "--session", sid)
        assert "result" in a.ask(req(1, "tools/call", {
            "name": "create_shape", "arguments": shape(0)}))
        # b knows the tools (which are quick) before the render starts.
        assert b.ask(req(1, "tools/list"))["result"]["tools"]
        assert "result" in b.ask(req(2, "tools/call", {
            "name": "create_shape", "arguments": shape(1)}))
        a.send(req(2, "tools/call", LONG_RENDER))
        progress_seen(c, sid)
        # create_shape is quick, but its session runs a's render: it must
        # not hold b's reading thread for as long.
        b.send(req(3, "tools/call", {"name": "create_shape",
                                     "arguments": shape(2)}))
        t0 = time.monotonic()
        pong = b.ask(req(4, "ping"))
        assert pong == {"jsonrpc": "2.0", "id": 4, "result": {}}, pong
        assert time.monotonic() - t0 < 5, "the ping waited for the render"
        a.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 2}})
        made = b.read(timeout=60)
        assert made["id"] == 3 and "result" in made, made
        assert not made["result"].get("isError"), made
        for s in (a, b):
            status, err = s.close()
            assert status == 0, (status, err)
    finally:
        c.stop()


def links(d, pid):
    """The API connections of process pid, as the admin socket lists
    them."""
    admin = os.path.join(os.path.dirname(d.sock), "admin.sock")
    return [c for c in rpc(admin, "clients", {}) if c["pid"] == pid]


def shape_call(i):
    return {"name": "create_shape", "arguments": {
        "id": "h%d" % i, "type": "sphere",
        "properties": {"center": [i, 0, -3], "radius": 1}}}


@check("stdio handed to atelierd: a quick tool's call never crosses atelierctl (its one connection is the link), the rest do; every answer is the one atelierctl gives in between (ATELIER_MCP_RELAY=1, or a stdin that is a file)")
def _(ctx):
    d = ctx["d"]
    sid = d.session()
    a = Stdio(d, "--session", sid)
    b = Stdio(d, "--session", sid, env={"ATELIER_MCP_RELAY": "1"})
    for i in range(1, 4):
        r = a.ask(req(i, "tools/call", shape_call(i)))
        assert not r["result"].get("isError"), r
    mine = links(d, a.p.pid)
    assert len(mine) == 1 and mine[0]["last_method"] == "mcp.attach" and \
        mine[0]["requests"] == 1, mine
    # The same messages both ways: quick (describe_scene, a failing
    # create_shape, a modern call) and not (get_scene_state, tools/list).
    same = [
        req(10, "tools/call", {"name": "describe_scene", "arguments": {}}),
        req(11, "tools/call", {"name": "create_shape", "arguments": {
            "id": "bad", "type": "sphere",
            "properties": {"center": [0, 0, 0], "radius": -1}}}),
        req("m", "tools/call", {"name": "describe_scene", "arguments": {},
                                "_meta": dict(MODERN)}),
        req(12, "tools/call", {"name": "get_scene_state", "arguments": {}}),
        req(13, "tools/call", {"name": "no_such_tool", "arguments": {}}),
        req(14, "ping"),
    ]
    for m in same:
        got, want = a.ask(m), b.ask(m)
        assert got == want, (m, got, want)
    assert a.ask(same[1])["result"]["isError"]
    # get_scene_state and the unknown tool went through atelierctl: it has
    # connections of its own now; the relayed one never had the link.
    assert any(c["last_method"] in ("tool.call", "tool.list")
               for c in links(d, a.p.pid)), links(d, a.p.pid)
    assert all(c["last_method"] != "mcp.attach" for c in links(d, b.p.pid))
    # A stdin that is a file is read by atelierctl itself.
    path = os.path.join(d.dir, "lines.jsonl")
    with open(path, "w") as f:
        f.write(json.dumps(same[0]) + "\n" + json.dumps(same[5]) + "\n")
    with open(path) as f:
        out = subprocess.run([CTL, "--socket", d.sock, "mcp", "--session",
                              sid], stdin=f, capture_output=True, text=True,
                             timeout=60)
    assert out.returncode == 0, out
    # (In either order: the call runs on a worker, the ping does not.)
    got = {m["id"]: m for m in map(json.loads, out.stdout.splitlines())}
    assert got == {10: a.ask(same[0]), 14: a.ask(same[5])}, out.stdout
    for s in (a, b):
        status, err = s.close()
        assert status == 0, (status, err)


@check("the link's edges: a client's line that reads as atelierd's end-of-input line is a message like any other; a deleted session is said, and under --new the next call makes another; atelierctl killed ends the client's stdout; mcp.attach without the client's pipes is refused, saying what it needs")
def _(ctx):
    d = ctx["d"]
    s = Stdio(d, "--new")
    s.send('{"dev.atelier/eof":true}')
    r = s.read()
    assert r["error"]["code"] == -32600, r
    assert s.ask(req(1, "ping"))["result"] == {}
    first = s.ask(req(2, "tools/call", shape_call(1)))["result"]
    sid = first["_meta"]["dev.atelier/session"]
    quick = s.ask(req(3, "tools/call", {"name": "describe_scene",
                                        "arguments": {}}))["result"]
    assert quick["_meta"]["dev.atelier/session"] == sid, quick
    assert "h1" in quick["content"][0]["text"], quick
    d.rpc("session.delete", {"session": sid})
    gone = s.ask(req(4, "tools/call", {"name": "describe_scene",
                                       "arguments": {}}))["result"]
    assert gone["isError"] and sid in gone["content"][0]["text"], gone
    again = s.ask(req(5, "tools/call", shape_call(2)))["result"]
    new = again["_meta"]["dev.atelier/session"]
    assert not again.get("isError") and new != sid, again
    quick = s.ask(req(6, "tools/call", {"name": "describe_scene",
                                        "arguments": {}}))["result"]
    assert quick["_meta"]["dev.atelier/session"] == new, quick
    # Killed, atelierctl leaves atelierd holding the client's stdout, which
    # it closes as soon as the link does.
    s.p.kill()
    s.p.wait(timeout=10)
    deadline = time.monotonic() + 10
    while s.q.get(timeout=max(0.1, deadline - time.monotonic())) is not None:
        pass
    # mcp.attach needs both pipes, and pipes they must be.
    e = rpc_error(d.sock, "mcp.attach", None)
    assert e["code"] == -32602 and "stdin" in e["message"], e
    with open(os.path.join(d.dir, "lines.jsonl"), "w+") as f, \
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.settimeout(20)
        c.connect(d.sock)
        socket.send_fds(c, [b'{"jsonrpc":"2.0","id":1,"method":"mcp.attach"}'
                            b"\n"], [f.fileno(), f.fileno()])
        ans = json.loads(c.makefile().readline())
        assert ans["error"]["code"] == -32602, ans
        assert "a pipe or a socket" in ans["error"]["message"], ans
    # The daemon is well: a new client is served.
    t = Stdio(d, "--session", new)
    assert t.ask(req(1, "ping"))["result"] == {}
    assert t.close()[0] == 0
    # A client that does not read its answers holds up nobody else: atelierd
    # queues them rather than block on the full pipe. (Thirty answers of a
    # scene of forty shapes: far more than a pipe holds.)
    for i in range(40):
        d.rpc("tool.call", {"session": new, "name": "create_shape",
                            "arguments": shape_call(100 + i)["arguments"]})
    p = subprocess.Popen([CTL, "--socket", d.sock, "mcp", "--session", new],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    look = json.dumps(req(0, "tools/call", {"name": "describe_scene",
                                            "arguments": {}}))
    p.stdin.write((look + "\n").encode() * 30)
    p.stdin.flush()
    time.sleep(1)
    t0 = time.monotonic()
    d.rpc("daemon.info", {}, timeout=10)
    assert time.monotonic() - t0 < 2, "atelierd stalled on a full pipe"
    p.stdin.close()
    answers = p.stdout.read().decode().splitlines()
    assert len(answers) == 30, len(answers)
    assert sum(map(len, answers)) > 128 * 1024, sum(map(len, answers))
    for a in answers:
        assert "result" in json.loads(a), a
    assert p.wait(timeout=30) == 0


@check("atelierd restarted under a handed-off atelierctl mcp: it hands stdio back first (with a line it had half read), and atelierctl serves on, the restarted atelierd behind it")
def _(ctx):
    r = Daemon("mcp-restart", "")
    try:
        sid = r.session()
        s = Stdio(r, "--session", sid)
        first = s.ask(req(1, "tools/call", shape_call(1)))["result"]
        assert not first.get("isError"), first
        assert links(r, s.p.pid)[0]["last_method"] == "mcp.attach"
        s.p.stdin.write('{"jsonrpc": "2.0", "id": 7, "meth')
        s.p.stdin.flush()
        time.sleep(0.5)
        r.stop()
        assert r.proc.returncode == 0, r.proc.returncode
        # A call while atelierd is away waits for it to be back.
        s.send('od": "ping"}')
        s.send(req(9, "tools/call", shape_call(9)))
        assert s.read(timeout=30) == {"jsonrpc": "2.0", "id": 7, "result": {}}
        time.sleep(1)
        r = Daemon("mcp-restart", "")
        made = s.read(timeout=60)
        assert made["id"] == 9 and not made["result"].get("isError"), made
        look = s.ask(req(8, "tools/call", {"name": "describe_scene",
                                           "arguments": {}}))["result"]
        assert "h1" in look["content"][0]["text"], look
        assert look["_meta"]["dev.atelier/session"] == sid, look
        # Served by atelierctl now: the restarted atelierd sees its calls.
        assert any(c["last_method"] == "tool.call"
                   for c in links(r, s.p.pid)), links(r, s.p.pid)
        status, err = s.close()
        assert status == 0, (status, err)
        assert "serving stdio from here" in err, err
    finally:
        if r.proc.poll() is None:
            r.stop()


@check("atelierd killed mid-call: the call gets a JSON-RPC error, and atelierctl mcp exits")
def _(ctx):
    k = Daemon("mcp-kill", "[render]\nworkers = 1\n")
    try:
        sid = k.session()
        s = Stdio(k, "--session", sid)
        s.ask(req(1, "tools/call", {"name": "create_shape", "arguments": {
            "id": "b", "type": "sphere", "properties": {
                "center": [0, 0, -3], "radius": 1}}}))
        # A render of seconds, then the daemon dies under it.
        s.send(req(2, "tools/call", LONG_RENDER))
        progress_seen(k, sid)
        k.kill()
        r = s.read()
        assert r["id"] == 2 and "error" in r, r
        assert r["error"]["code"] == -32603 and \
            "atelierd" in r["error"]["message"], r
        status = s.p.wait(timeout=10)
        assert status != 0, status
        assert "went away" in s.p.stderr.read()
    finally:
        if k.proc.poll() is None:
            k.stop()


def main():
    d = Daemon("mcp", "[render]\nworkers = 2\n")
    ctx = {"d": d}
    try:
        passed, failed = run_checks(CHECKS, ctx)
    finally:
        d.stop()
    if d.proc.returncode == 0:
        print("ok %d - atelierd exits with status 0 after every check"
              % (passed + failed + 1))
        passed += 1
    else:
        print("not ok %d - atelierd exited with status %d; see %s"
              % (passed + failed + 1, d.proc.returncode, d.log))
        failed += 1
    print("1..%d" % (passed + failed))
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
