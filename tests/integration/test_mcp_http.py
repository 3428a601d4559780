#!/usr/bin/env python3
"""The MCP front over Streamable HTTP (issue 22), through the real stack
that scripts/atelier-stack starts: nginx, atelier-fcgi and atelierd.

- the official SDK clients from npm (tests/mcp/mcp-http.test.mjs): v1
  (legacy, initialize, Mcp-Session-Id) on /mcp, v2 (pinned to 2026-07-28,
  and auto) on a session's own endpoint: tools, a render decoded as PNG,
  errors, progress as an event stream, cancel (a modern client hanging up,
  a legacy one's notifications/cancelled) stopping the render in atelierd,
  two clients on one session, the calls on the page's event stream;
- the MCP Inspector's CLI lists (--strict) and calls over HTTP;
- security: a foreign Origin or a cross-site fetch is 403, a missing or
  wrong token 401, a rebinding Host refused, a form post 415; an MCP
  session id cannot be made up, altered, or moved to another session
  (404); a deleted session's MCP session has ended (404);
- the transport's rules as the spec words them, on raw requests: the
  header checks (-32020, -32022, -32602), Accept (406), notifications 202
  with no body, GET and DELETE 405, parse errors and batches, an unknown
  method 404 in the modern era, X-Accel-Buffering: no on event streams.

Needs node and npm (tests/npm-ensure.sh installs the pinned packages).
"""

import http.client
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time

from atltest import BUILDDIR, SRCDIR, Checks, Fake, run_checks
from mcptest import (INSPECTOR_DIR, check_inspector_lists_and_calls,
                     inspector, npm_ensure, run_node)
from test_web import Stack

ACCEPT = "application/json, text/event-stream"
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}

CHECKS = Checks()
check = CHECKS.add


def post(s, path, msg, headers=None, auth=True, raw_body=None):
    """One POST as an MCP client sends it: (status, headers, body), the
    body parsed when it is JSON, the events when it is a stream."""
    h = {"Accept": ACCEPT, "Content-Type": "application/json"}
    h.update(headers or {})
    body = raw_body if raw_body is not None else json.dumps(msg)
    st, hd, data = s.request("POST", path, body, headers=h, raw=True,
                             auth=auth)
    ctype = hd.get("content-type", "")
    if ctype.startswith("application/json") and data:
        return st, hd, json.loads(data)
    if ctype.startswith("text/event-stream"):
        evs = [json.loads(m) for m in re.findall(rb"^data: (.*)$", data,
                                                   re.M)]
        return st, hd, evs
    return st, hd, data


def modern_headers(method, name=None):
    h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    return h


def req(id_, method, params=None, modern=False):
    m = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None or modern:
        m["params"] = dict(params or {})
        if modern:
            m["params"]["_meta"] = dict(META, **m["params"].get("_meta", {}))
    return m


def initialize(s, path="/mcp", name="raw-client", headers=None):
    st, hd, b = post(s, path, req(1, "initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": name, "version": "1"}}), headers)
    assert st == 200, (st, b)
    assert b["result"]["protocolVersion"] == "2025-11-25", b
    return hd.get("mcp-session-id")


def shape(i):
    return {"id": "s%d" % i, "type": "sphere", "properties": {
        "center": [i, 0, -3], "radius": 0.5}}


@check("the official SDK clients over HTTP (v1 legacy on /mcp, v2 modern and auto on a session's endpoint): tools, a render, errors, progress, cancel, two clients, the page's stream")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    ctx["sid"] = sid
    run_node("mcp-http.test.mjs", {
        "ATL_MCP_BASE": "http://127.0.0.1:%d" % s.port,
        "ATL_MCP_TOKEN": s.token, "ATL_MCP_SESSION": sid})


@check("the MCP Inspector's CLI over HTTP: lists the tools with no portability problem (--strict) and calls one, with the token as a header")
def _(ctx):
    s = ctx["stack"]
    sid = ctx.get("sid") or s.session()
    url = "http://127.0.0.1:%d/api/sessions/%s/mcp" % (s.port, sid)
    home = os.path.join(s.data, "inspector-home")
    run = inspector(home, [url, "--transport", "http", "--header",
                           "Authorization: Bearer " + s.token])
    out = check_inspector_lists_and_calls(run, "inspected_http")
    assert out["_meta"]["dev.atelier/session"] == sid, out
    # Without the token the Inspector is refused (401), and takes it as
    # a server that wants authorization.
    r = inspector(home, [url, "--transport", "http"])("--method",
                                                      "tools/list")
    assert r.returncode != 0, r.stdout[-500:]
    assert re.search(r"401|auth", r.stdout + r.stderr), (r.stdout[-500:],
                                                          r.stderr[-1500:])


@check("security: a foreign Origin and a cross-site fetch are 403, no token or a wrong one 401, a rebinding Host refused, a form post 415")
def _(ctx):
    s = ctx["stack"]
    init = req(1, "initialize", {"protocolVersion": "2025-11-25",
                                 "capabilities": {}})
    for path in ("/mcp", "/api/sessions/%s/mcp" % s.session()):
        st, _, b = post(s, path, init, {"Origin": "http://evil.example"})
        assert st == 403, (path, st, b)
        st, _, b = post(s, path, init, {"Sec-Fetch-Site": "cross-site"})
        assert st == 403, (path, st, b)
        st, hd, b = post(s, path, init, auth=False)
        assert st == 401, (path, st, b)
        assert hd.get("www-authenticate", "").startswith("Bearer"), hd
        st, _, b = post(s, path, init,
                        {"Authorization": "Bearer " + "0" * 64})
        assert st == 401, (path, st, b)
        # A form can post text/plain without a preflight: never JSON-RPC.
        st, _, b = post(s, path, init, {"Content-Type": "text/plain"})
        assert st == 415, (path, st, b)
        # The same page's own origin passes.
        st, _, b = post(s, path, init,
                        {"Origin": "http://127.0.0.1:%d" % s.port})
        assert st == 200, (path, st, b)
    # DNS rebinding: another name for 127.0.0.1. nginx's default server
    # drops it without an answer; the bridge would refuse it too (421).
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    body = json.dumps(init).encode()
    c.sendall(b"POST /mcp HTTP/1.1\r\nHost: evil.example:%d\r\n"
              b"Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
              b"Accept: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
              % (s.port, s.token.encode(), ACCEPT.encode(), len(body)) + body)
    got = b""
    while True:
        chunk = c.recv(65536)
        if not chunk:
            break
        got += chunk
    c.close()
    assert got == b"", got[:300]


@check("MCP session ids: made at initialize, signed, bound to one session: a made-up, altered, or moved id is 404; none at all is 400")
def _(ctx):
    s = ctx["stack"]
    mine = initialize(s, name="id-check")
    assert mine and re.fullmatch(r"[0-9a-f]{80,160}", mine), mine
    sid = mine[:32]
    ok = req(2, "tools/call", {"name": "get_scene_state", "arguments": {}})
    st, _, b = post(s, "/mcp", ok, {"Mcp-Session-Id": mine})
    assert st == 200 and b["result"]["_meta"]["dev.atelier/session"] == sid, b
    # The session is Atelier's own: on the page's list.
    st, _, lst = s.request("GET", "/api/sessions")
    assert sid in [r["id"] for r in lst], lst
    other = s.session()
    flipped = mine[:-1] + ("0" if mine[-1] != "0" else "1")
    guesses = [
        other,                              # another session's own id
        "atl-" + other,                     # the shape a guesser might try
        other + mine[32:],                  # the MAC of mine on another id
        flipped,                            # one digit of the MAC changed
        mine + "00",                        # longer
        mine[:-2],                          # shorter
        "0" * 80,
        "x" * 200,
    ]
    for g in guesses:
        st, _, b = post(s, "/mcp", ok, {"Mcp-Session-Id": g})
        assert st == 404, (g, st, b)
        assert b["error"]["code"] == -32600 and "initialize" in \
            b["error"]["message"], b
    # One made for /mcp is not one of a session's own endpoint's, and one
    # made there does not fit another session's.
    st, _, b = post(s, "/api/sessions/%s/mcp" % other, ok,
                    {"Mcp-Session-Id": mine})
    assert st == 404, (st, b)
    bound = initialize(s, "/api/sessions/%s/mcp" % other, name="bound")
    assert bound[:32] == other, (bound, other)
    st, _, b = post(s, "/api/sessions/%s/mcp" % other, ok,
                    {"Mcp-Session-Id": bound})
    assert st == 200 and b["result"]["_meta"]["dev.atelier/session"] == \
        other, b
    third = s.session()
    st, _, b = post(s, "/api/sessions/%s/mcp" % third, ok,
                    {"Mcp-Session-Id": bound})
    assert st == 404, (st, b)
    # A malformed initialize is refused and leaves no session behind, nor
    # an id; a new initialize, whatever id it carries, is a new session.
    before = len(s.request("GET", "/api/sessions")[2])
    st, hd, b = post(s, "/mcp", req(1, "initialize", {"capabilities": {}}))
    assert st == 400 and b["error"]["code"] == -32602, (st, b)
    assert "mcp-session-id" not in hd, hd
    assert len(s.request("GET", "/api/sessions")[2]) == before
    again = initialize(s, headers={"Mcp-Session-Id": mine})
    assert again[:32] not in (sid, other), (again, sid)
    # A legacy request to /mcp without one: initialize first.
    st, _, b = post(s, "/mcp", ok)
    assert st == 400 and "Mcp-Session-Id" in b["error"]["message"], (st, b)
    # An endpoint of a session that does not exist: 404 at initialize.
    st, _, b = post(s, "/api/sessions/%s/mcp" % ("ab" * 16), req(
        1, "initialize", {"protocolVersion": "2025-11-25",
                          "capabilities": {}}))
    assert st == 404 and "no session" in b["error"]["message"], (st, b)
    # The bridge keeps no table: a restarted bridge reads the same ids.
    pids = s.pid_of("atelier-fcgi")
    for p in pids:
        os.kill(p, 15)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        now = s.pid_of("atelier-fcgi")
        if now and now != pids:
            try:
                st, _, b = post(s, "/mcp", ok, {"Mcp-Session-Id": mine})
                if st == 200:
                    break
            except (ConnectionError, http.client.HTTPException):
                pass
        time.sleep(0.2)
    assert st == 200 and "result" in b, (st, b)


@check("a legacy MCP session whose Atelier session was deleted has ended (404), and a new initialize starts another")
def _(ctx):
    s = ctx["stack"]
    mine = initialize(s, name="deleted")
    sid = mine[:32]
    st, _, _ = s.request("DELETE", "/api/sessions/" + sid)
    assert st == 200, st
    call = req(2, "tools/call", {"name": "create_shape",
                                 "arguments": shape(1)})
    st, _, b = post(s, "/mcp", call, {"Mcp-Session-Id": mine})
    assert st == 404, (st, b)
    again = initialize(s, name="deleted")
    assert again[:32] != sid, again
    st, _, b = post(s, "/mcp", call, {"Mcp-Session-Id": again})
    assert st == 200 and "result" in b and not b["result"].get("isError"), b


@check("header checks as the spec words them: -32020 for a missing or disagreeing Mcp-Method, Mcp-Name, MCP-Protocol-Version; -32022 for a version we do not speak; base64 header values")
def _(ctx):
    s = ctx["stack"]
    path = "/api/sessions/%s/mcp" % s.session()
    call = req(5, "tools/call", {"name": "get_scene_state", "arguments": {}},
               modern=True)
    st, _, b = post(s, path, call, modern_headers("tools/call",
                                                  "get_scene_state"))
    assert st == 200 and b["result"]["resultType"] == "complete", (st, b)
    bad = [
        ({"MCP-Protocol-Version": MODERN, "Mcp-Name": "get_scene_state"},
         "Mcp-Method header is absent"),
        (modern_headers("tools/list", "get_scene_state"),
         'Mcp-Method is "tools/list"'),
        (modern_headers("tools/call"), "Mcp-Name header is absent"),
        (modern_headers("tools/call", "render_scene"),
         'Mcp-Name is "render_scene"'),
        ({"Mcp-Method": "tools/call", "Mcp-Name": "get_scene_state"},
         "MCP-Protocol-Version header is absent"),
        (dict(modern_headers("tools/call", "get_scene_state"),
              **{"MCP-Protocol-Version": "2025-11-25"}),
         'MCP-Protocol-Version is "2025-11-25"'),
    ]
    for headers, text in bad:
        st, _, b = post(s, path, call, headers)
        assert st == 400, (headers, st, b)
        assert b["id"] == 5 and b["error"]["code"] == -32020, (headers, b)
        assert text in b["error"]["message"], (text, b)
    # A value sent as =?base64?...?= is read as its text.
    st, _, b = post(s, path, call, modern_headers(
        "tools/call", "=?base64?Z2V0X3NjZW5lX3N0YXRl?="))
    assert st == 200 and "result" in b, (st, b)
    # A version nobody speaks, in both the header and the envelope.
    old = req(6, "tools/list", {"_meta": dict(META, **{
        "io.modelcontextprotocol/protocolVersion": "1900-01-01"})})
    st, _, b = post(s, path, old, {"MCP-Protocol-Version": "1900-01-01",
                                   "Mcp-Method": "tools/list"})
    assert st == 400 and b["error"]["code"] == -32022, (st, b)
    assert MODERN in b["error"]["data"]["supported"], b
    # A legacy request: an unknown version header is 400 -32022; the
    # modern one without its envelope is -32602, as the official server
    # answers it.
    st, _, b = post(s, path, req(7, "tools/list"),
                    {"MCP-Protocol-Version": "1999-01-01"})
    assert st == 400 and b["error"]["code"] == -32022, (st, b)
    st, _, b = post(s, path, req(8, "tools/list"),
                    {"MCP-Protocol-Version": MODERN})
    assert st == 400 and b["error"]["code"] == -32602, (st, b)
    # A legacy request with headers that disagree with it.
    st, _, b = post(s, path, req(9, "tools/list"),
                    {"Mcp-Method": "tools/call"})
    assert st == 400 and b["error"]["code"] == -32020, (st, b)


@check("the transport: Accept (406), notifications 202 with no body, GET and DELETE 405, not JSON -32700, a batch -32600, an unknown modern method 404, events with X-Accel-Buffering: no")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    path = "/api/sessions/%s/mcp" % sid
    lst = req(1, "tools/list", modern=True)
    hl = modern_headers("tools/list")
    st, _, b = post(s, path, lst, dict(hl, Accept="text/html"))
    assert st == 406, (st, b)
    st, _, b = post(s, path, lst, dict(hl, Accept="application/json"))
    assert st == 406, (st, b)
    for accept in ("*/*", "application/*, text/*",
                   "text/event-stream, application/json; q=0.5"):
        st, _, b = post(s, path, lst, dict(hl, Accept=accept))
        assert st == 200 and b["result"]["tools"], (accept, st)
    st, hd, b = post(s, path, {"jsonrpc": "2.0",
                               "method": "notifications/initialized"})
    assert st == 202 and b == b"", (st, b)
    # A URL pasted with a closing slash is the same endpoint.
    for p in (path + "/", "/mcp/"):
        st, _, b = post(s, p, lst, hl)
        assert st == 200 and b["result"]["tools"], (p, st, b)
    for method in ("GET", "DELETE"):
        for p in ("/mcp", path):
            st, hd, b = s.request(method, p, headers={"Accept": ACCEPT})
            assert st == 405 and hd.get("allow") == "POST", (method, p, st,
                                                             hd)
    st, _, b = post(s, path, None, raw_body="{not json")
    assert st == 400 and b["error"]["code"] == -32700, (st, b)
    st, _, b = post(s, path, None, raw_body="")
    assert st == 400 and b["error"]["code"] == -32700, (st, b)
    st, _, b = post(s, path, [req(1, "tools/list")])
    assert st == 400 and b["error"]["code"] == -32600, (st, b)
    st, _, b = post(s, path, req(3, "resources/list", modern=True),
                    modern_headers("resources/list"))
    assert st == 404 and b["error"]["code"] == -32601, (st, b)
    # A body past the limit is refused at the door, in JSON.
    st, _, b = post(s, path, None, raw_body="[" + "1," * 600000 + "1]")
    assert st == 413, st
    # A call with a progressToken answers as an event stream that nginx
    # passes on as it comes: progress first, the result last.
    post(s, path, req(4, "tools/call", {"name": "create_shape",
                                        "arguments": shape(0)}))
    call = req(5, "tools/call", {
        "name": "render_scene", "arguments": {
            "width": 400, "height": 300, "samples": 512,
            "noise_threshold": 0}, "_meta": {"progressToken": "p"}},
        modern=True)
    c = s.conn(timeout=60)
    c.request("POST", path, json.dumps(call), headers=dict(
        modern_headers("tools/call", "render_scene"), Accept=ACCEPT,
        Authorization="Bearer " + s.token,
        **{"Content-Type": "application/json"}))
    r = c.getresponse()
    hd = {k.lower(): v for k, v in r.getheaders()}
    assert r.status == 200, r.status
    assert hd["content-type"].startswith("text/event-stream"), hd
    assert hd.get("x-accel-buffering") == "no", hd
    evs, at = [], []
    for line in r:
        if line.startswith(b"data: "):
            evs.append(json.loads(line[6:]))
            at.append(time.monotonic())
    c.close()
    assert evs[-1]["id"] == 5 and "result" in evs[-1], evs[-1]
    # Each event came as it was sent, not all at the end from a buffer.
    assert at[-1] - at[0] > 0.2, "the events came at once: %r" % (
        [round(t - at[0], 3) for t in at])
    prog = [e["params"]["progress"] for e in evs[:-1]]
    assert prog and prog == sorted(prog) and all(
        e["method"] == "notifications/progress" and
        e["params"]["progressToken"] == "p" for e in evs[:-1]), evs[:-1]


def doc_blocks():
    """doc/mcp.md's fenced blocks: (language, text)."""
    with open(os.path.join(SRCDIR, "doc", "mcp.md")) as f:
        text = f.read()
    return re.findall(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)


def stdio_answers(argv):
    """Runs a stdio server's command line as a client would: initialize,
    then tools/list; the answers."""
    lines = [req(1, "initialize", {"protocolVersion": "2025-11-25",
                                   "capabilities": {}, "clientInfo": {
                                       "name": "doc-check", "version": "1"}}),
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             req(2, "tools/list")]
    r = subprocess.run(argv, input="".join(json.dumps(m) + "\n"
                                           for m in lines),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (argv, r.returncode, r.stderr[-1000:])
    return [json.loads(x) for x in r.stdout.splitlines()]


@check("doc/mcp.md's configurations work as written (stdio and HTTP, each client's snippet, the Inspector's commands), with this stack's paths, port, session and token")
def _(ctx):
    s = ctx["stack"]
    sid = s.session()
    run_dir = os.path.join(s.data, "run")
    token_file = os.path.join(s.data, "store", "token")
    ctl = os.path.join(BUILDDIR, "atelierctl")
    insp = os.path.join(INSPECTOR_DIR, "node_modules", ".bin",
                        "mcp-inspector")

    def local(text):
        return (text.replace("/usr/bin/atelierctl", ctl)
                .replace("/run/atelier", run_dir)
                .replace("127.0.0.1:8080", "127.0.0.1:%d" % s.port)
                .replace("SESSION-ID", sid)
                .replace("$(cat var/store/token)", s.token)
                .replace("var/store/token", token_file)
                .replace("Bearer TOKEN", "Bearer " + s.token))

    def argv0(argv):
        return [ctl if a == "atelierctl" else a for a in argv]

    def http_works(url, headers):
        path = url.split("127.0.0.1:%d" % s.port, 1)[1]
        mine = initialize(s, path, "doc-check", headers)
        assert mine, "no Mcp-Session-Id from %s" % url
        st, _, b = post(s, path, req(2, "tools/list"),
                        dict(headers, **{"Mcp-Session-Id": mine}))
        assert st == 200 and b["result"]["tools"], (url, st, b)

    seen = {"json-stdio": 0, "json-http": 0, "claude-stdio": 0,
            "claude-http": 0, "inspector-cli": 0}
    for lang, text in doc_blocks():
        text = local(text)
        if lang == "json" and "mcpServers" in text:
            for name, srv in json.loads(text)["mcpServers"].items():
                if "command" in srv:
                    got = stdio_answers(argv0([srv["command"]] +
                                              srv.get("args", [])))
                    assert [m.get("id") for m in got] == [1, 2], got
                    assert got[1]["result"]["tools"], got
                    seen["json-stdio"] += 1
                else:
                    auth = srv["headers"]["Authorization"]
                    # Without its header the same URL is refused.
                    path = srv["url"].split(str(s.port), 1)[1]
                    st, _, _ = post(s, path, req(1, "ping"), auth=False)
                    assert st == 401, st
                    http_works(srv["url"], {"Authorization": auth})
                    seen["json-http"] += 1
        elif lang == "sh":
            for line in text.replace("\\\n", " ").splitlines():
                argv = shlex.split(line, comments=True)
                if argv[:3] == ["claude", "mcp", "add"] and "--" in argv:
                    got = stdio_answers(argv0(argv[argv.index("--") + 1:]))
                    assert got[1]["result"]["tools"], got
                    seen["claude-stdio"] += 1
                elif argv[:3] == ["claude", "mcp", "add"]:
                    assert argv[3:5] == ["--transport", "http"], argv
                    url = next(a for a in argv if a.startswith("http://"))
                    h = argv[argv.index("--header") + 1]
                    name, value = h.split(": ", 1)
                    http_works(url, {name: value})
                    seen["claude-http"] += 1
                elif argv[:3] == ["npx", "@modelcontextprotocol/inspector",
                                  "--cli"]:
                    npm_ensure(INSPECTOR_DIR)
                    r = subprocess.run(
                        [insp] + argv0(argv[2:]), capture_output=True,
                        text=True, timeout=120, env=dict(
                            os.environ, HOME=os.path.join(s.data, "doc-home")))
                    assert r.returncode == 0, (argv, r.stdout[-500:],
                                               r.stderr[-1500:])
                    assert "render_scene" in r.stdout, r.stdout[-500:]
                    seen["inspector-cli"] += 1
    # Each kind of snippet the page documents was found and run.
    assert all(seen.values()), seen


def main():
    fake = Fake()
    stack = Stack(fake.url, fcgi_args=["--heartbeat-ms=2000"],
                  name="mcp-http", extra_conf="[render]\nworkers = 2\n")
    t0 = time.monotonic()
    passed, failed = run_checks(CHECKS, {"stack": stack})
    if failed:
        print("# stack output: " + stack.log()[-1500:].replace("\n", "\n# "))
    bad = []
    for log in ("atelierd.log", "atelier-fcgi.log", "nginx-error.log"):
        p = os.path.join(stack.data, "log", log)
        text = open(p, errors="replace").read() if os.path.exists(p) else ""
        bad += ["%s in %s:\n%s" % (needle, log, text[-3000:])
                for needle in ("ERROR: AddressSanitizer",
                               "ERROR: LeakSanitizer", "runtime error:")
                if needle in text]
    n = passed + failed + 1
    if bad:
        failed += 1
        print("not ok %d - no sanitizer report in the logs" % n)
        print("# " + "\n".join(bad).replace("\n", "\n# "))
    else:
        passed += 1
        print("ok %d - no sanitizer report in the logs" % n)
    print("# total time %.1f s" % (time.monotonic() - t0))
    print("1..%d" % n)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
