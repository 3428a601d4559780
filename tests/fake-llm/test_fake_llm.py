#!/usr/bin/env python3
"""Protocol-level tests of tests/fake-llm/fake_llm.py over raw HTTP.

It starts the fake server (--port 0) and talks to it with http.client and
plain sockets: every validation rejection of the three APIs, the shapes of
streamed and unstreamed answers, truncate, malformed, hang, delay_ms,
Retry-After, the request log and its redaction, parallel tool calls,
client disconnects, --script and the exit on SIGTERM/SIGINT.

Run by `make check` (ATL_TEST_SRCDIR is exported) or by hand. Output: one
"ok N - ..." or "not ok N - ..." line per check, "#" lines of diagnostics
after a failure, and a final "P passed, F failed"; the exit status is 1
when any check failed. Standard library only.
"""

import http.client
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("ATL_TEST_SRCDIR", os.path.abspath(os.path.join(HERE, "..", "..")))
FAKE = os.path.join(SRCDIR, "tests", "fake-llm", "fake_llm.py")

RESULTS = {"n": 0, "passed": 0, "failed": 0}
SERVERS = []


# ---------------------------------------------------------------- helpers

class Fake:
    """One fake_llm.py process."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen(
            [sys.executable, FAKE, "--port", "0", *args], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env)
        SERVERS.append(self)
        # Drain stderr (one line per request) so the server never blocks on it.
        self.log = []
        threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True).start()
        r, _, _ = select.select([self.proc.stdout], [], [], 10)
        if not r:
            raise AssertionError("fake_llm.py printed no port line in 10 s")
        self.first_line = self.proc.stdout.readline()
        prefix = "fake-llm listening on http://127.0.0.1:"
        if not self.first_line.startswith(prefix) or not self.first_line.endswith("\n"):
            raise AssertionError(f"unexpected first line {self.first_line!r}")
        self.port = int(self.first_line[len(prefix):])

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def conn(self, timeout=10):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=10):
        """Returns (status, headers dict (lowercase), body bytes)."""
        c = self.conn(timeout)
        try:
            if body is not None and not isinstance(body, (bytes, str)):
                body = json.dumps(body)
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            c.close()

    def json(self, method, path, body=None, headers=None):
        status, hdrs, data = self.request(method, path, body, headers)
        try:
            return status, hdrs, json.loads(data)
        except ValueError:
            raise AssertionError(f"{method} {path}: not JSON ({status}): {data[:300]!r}")

    def script(self, *turns):
        status, _, doc = self.json("POST", "/_fake/script", {"turns": list(turns)})
        assert status == 200, doc

    def reset(self):
        assert self.json("POST", "/_fake/reset", {})[0] == 200

    def requests(self):
        return self.json("GET", "/_fake/requests")[2]["requests"]

    def queued(self):
        return len(self.json("GET", "/_fake/script")[2]["turns"])


ANT_H = {"x-api-key": "sk-ant-SECRET", "anthropic-version": "2023-06-01",
         "content-type": "application/json"}
OAI_H = {"authorization": "Bearer sk-SECRET", "content-type": "application/json"}
GEM_H = {"x-goog-api-key": "AIza-SECRET", "content-type": "application/json"}
USER_A = {"role": "user", "content": "hi"}
ANT_BODY = {"model": "claude-fake", "max_tokens": 64, "messages": [USER_A]}
OAI_BODY = {"model": "gpt-fake", "messages": [{"role": "user", "content": "hi"}]}
GEM_BODY = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
GEM_PATH = "/v1beta/models/gemini-fake:generateContent"
GEM_SSE = "/v1beta/models/gemini-fake:streamGenerateContent?alt=sse"
CALLS = [{"name": "create_shape", "arguments": {"id": "ball", "radius": 1.5}},
         {"name": "set_light", "arguments": {"id": "sun", "color": [1, 0.9, 0.8]}}]


def sse_events(data, sep=b"\n\n"):
    """Splits an SSE body into [(event or None, data str)]."""
    out = []
    for block in data.split(sep):
        if not block.strip():
            continue
        event, lines = None, []
        for line in block.replace(b"\r\n", b"\n").split(b"\n"):
            if line.startswith(b"event: "):
                event = line[7:].decode()
            elif line.startswith(b"data: "):
                lines.append(line[6:].decode())
        out.append((event, "\n".join(lines)))
    return out


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def expect_eq(got, want, what=""):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def expect_error(fake, method, path, body, headers, status, check_body, no_turn=True):
    """A request the fake must reject with `status`; check_body(doc) checks
    the error body; the queued turn must stay queued."""
    if no_turn:
        fake.script({"text": "not for a rejected request"})
    st, _, doc = fake.json(method, path, body, headers)
    expect_eq(st, status, f"status of {method} {path}")
    check_body(doc)
    if no_turn:
        expect_eq(fake.queued(), 1, "turns left after a rejected request")


def ant_err(kind, needle):
    def check(doc):
        expect_eq(doc.get("type"), "error", "type")
        expect_eq(doc["error"]["type"], kind, "error.type")
        expect(needle in doc["error"]["message"], f"{needle!r} not in {doc['error']['message']!r}")
    return check


def oai_err(needle, code="<any>"):
    def check(doc):
        err = doc["error"]
        expect(set(err) >= {"message", "type", "param", "code"}, f"error keys {sorted(err)}")
        expect(needle in err["message"], f"{needle!r} not in {err['message']!r}")
        if code != "<any>":
            expect_eq(err["code"], code, "error.code")
    return check


def gem_err(code, status, needle):
    def check(doc):
        err = doc["error"]
        expect_eq(err["code"], code, "error.code")
        expect_eq(err["status"], status, "error.status")
        expect(needle in err["message"], f"{needle!r} not in {err['message']!r}")
    return check


def stream_raw(fake, path, body, headers, timeout=10):
    """Sends a request, returns (status, headers, bytes read, exception or None)."""
    c = fake.conn(timeout)
    try:
        c.request("POST", path, body=json.dumps(body), headers=headers)
        r = c.getresponse()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        got = b""
        try:
            while True:
                piece = r.read1(65536) if hasattr(r, "read1") else r.read(65536)
                if not piece:
                    break
                got += piece
            return r.status, hdrs, got, None
        except (http.client.IncompleteRead, ConnectionError, socket.timeout) as e:
            return r.status, hdrs, got, e
    finally:
        c.close()


# ---------------------------------------------------------------- checks

def check_port_line(fake):
    expect(fake.first_line.startswith("fake-llm listening on http://127.0.0.1:"), fake.first_line)
    expect(0 < fake.port < 65536, "port")
    # Nothing else on stdout.
    r, _, _ = select.select([fake.proc.stdout], [], [], 0.2)
    expect(not r, "more output on stdout after the port line")


def check_anthropic_rejections(fake):
    p = "/v1/messages"
    no_key = {k: v for k, v in ANT_H.items() if k != "x-api-key"}
    expect_error(fake, "POST", p, ANT_BODY, no_key, 401,
                 ant_err("authentication_error", "x-api-key"))
    expect_error(fake, "POST", p, ANT_BODY, dict(no_key, **{"x-api-key": ""}), 401,
                 ant_err("authentication_error", "x-api-key"))
    no_ver = {k: v for k, v in ANT_H.items() if k != "anthropic-version"}
    expect_error(fake, "POST", p, ANT_BODY, no_ver, 400,
                 ant_err("invalid_request_error", "anthropic-version"))
    expect_error(fake, "POST", p, ANT_BODY, dict(ANT_H, **{"anthropic-version": "1999-01-01"}),
                 400, ant_err("invalid_request_error", "anthropic-version"))
    expect_error(fake, "POST", p, "{not json", ANT_H, 400,
                 ant_err("invalid_request_error", "JSON"))
    for field in ("model", "max_tokens", "messages"):
        body = {k: v for k, v in ANT_BODY.items() if k != field}
        expect_error(fake, "POST", p, body, ANT_H, 400,
                     ant_err("invalid_request_error", f"{field}: Field required"))
    for bad, needle in ((0, "greater than or equal to 1"), ("64", "valid integer"),
                        (True, "valid integer"), (1.5, "valid integer")):
        expect_error(fake, "POST", p, dict(ANT_BODY, max_tokens=bad), ANT_H, 400,
                     ant_err("invalid_request_error", needle))
    expect_error(fake, "POST", p, dict(ANT_BODY, messages=[]), ANT_H, 400,
                 ant_err("invalid_request_error", "messages: at least one message"))
    expect_error(fake, "POST", p, dict(ANT_BODY, messages=[{"role": "bot", "content": "x"}]),
                 ANT_H, 400, ant_err("invalid_request_error", "messages.0.role"))
    expect_error(fake, "POST", p, dict(ANT_BODY, thinking={"type": "enabled",
                                                           "budget_tokens": 100}),
                 ANT_H, 400, ant_err("invalid_request_error", "budget_tokens"))


def ant_tool_history(results):
    use = [{"type": "tool_use", "id": "toolu_A", "name": "a", "input": {}},
           {"type": "tool_use", "id": "toolu_B", "name": "b", "input": {"x": 1}}]
    return [USER_A, {"role": "assistant", "content": [{"type": "text", "text": "ok"}] + use},
            {"role": "user", "content": results}]


def check_anthropic_tool_pairing(fake):
    p = "/v1/messages"
    res = [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "done"},
           {"type": "tool_result", "tool_use_id": "toolu_B", "content": "done"}]
    expect_error(fake, "POST", p, dict(ANT_BODY, messages=ant_tool_history(res[:1])), ANT_H,
                 400, ant_err("invalid_request_error",
                              "`tool_use` ids were found without `tool_result` blocks "
                              "immediately after: toolu_B"))
    expect_error(fake, "POST", p, dict(ANT_BODY, messages=ant_tool_history("text only")),
                 ANT_H, 400, ant_err("invalid_request_error", "toolu_A, toolu_B"))
    # The assistant's tool_use as the last message: never answered.
    expect_error(fake, "POST", p, dict(ANT_BODY, messages=ant_tool_history(res)[:2]), ANT_H,
                 400, ant_err("invalid_request_error", "tool_use` ids were found"))
    stray = res + [{"type": "tool_result", "tool_use_id": "toolu_Z", "content": "?"}]
    expect_error(fake, "POST", p, dict(ANT_BODY, messages=ant_tool_history(stray)), ANT_H,
                 400, ant_err("invalid_request_error", "unexpected `tool_use_id`"))
    fake.reset()
    fake.script({"text": "fine"})
    st, _, doc = fake.json("POST", p, dict(ANT_BODY, messages=ant_tool_history(res)), ANT_H)
    expect_eq(st, 200, "answered tool calls")
    expect_eq(doc["content"][0]["text"], "fine", "text")


def check_openai_rejections(fake):
    p = "/v1/chat/completions"
    expect_error(fake, "POST", p, OAI_BODY, {"content-type": "application/json"}, 401,
                 oai_err("API key", "invalid_api_key"))
    expect_error(fake, "POST", p, OAI_BODY, {"authorization": "Bearer "}, 401,
                 oai_err("API key", "invalid_api_key"))
    expect_error(fake, "POST", p, OAI_BODY, {"authorization": "Basic abc"}, 401,
                 oai_err("API key", "invalid_api_key"))
    expect_error(fake, "POST", p, "[1,", OAI_H, 400, oai_err("could not parse the JSON body"))
    expect_error(fake, "POST", p, {"messages": OAI_BODY["messages"]}, OAI_H, 400,
                 oai_err("you must provide a model parameter"))
    expect_error(fake, "POST", p, {"model": "m"}, OAI_H, 400,
                 oai_err("Missing required parameter: 'messages'.", "missing_required_parameter"))
    expect_error(fake, "POST", p, {"model": "m", "messages": []}, OAI_H, 400,
                 oai_err("empty array", "empty_array"))
    expect_error(fake, "POST", p, dict(OAI_BODY, messages=[{"role": "robot", "content": "x"}]),
                 OAI_H, 400, oai_err("Invalid value: 'robot'", "invalid_value"))
    expect_error(fake, "POST", p, dict(OAI_BODY, stream_options={"include_usage": True}),
                 OAI_H, 400, oai_err("'stream_options' parameter is only allowed"))


def oai_history(tool_ids, tail=None):
    calls = [{"id": "call_A", "type": "function", "function": {"name": "a", "arguments": "{}"}},
             {"id": "call_B", "type": "function", "function": {"name": "b", "arguments": "{}"}}]
    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": calls}]
    msgs += [{"role": "tool", "tool_call_id": t, "content": "done"} for t in tool_ids]
    return msgs + (tail or [])


def check_openai_tool_pairing(fake):
    p = "/v1/chat/completions"
    needle = ("An assistant message with 'tool_calls' must be followed by tool messages "
              "responding to each 'tool_call_id'. The following tool_call_ids did not have "
              "response messages: call_B")
    expect_error(fake, "POST", p, dict(OAI_BODY, messages=oai_history(["call_A"])), OAI_H,
                 400, oai_err(needle))
    expect_error(fake, "POST", p, dict(OAI_BODY, messages=oai_history(
        ["call_A"], [{"role": "user", "content": "and?"}, {"role": "tool",
                                                           "tool_call_id": "call_B",
                                                           "content": "late"}])),
                 OAI_H, 400, oai_err("did not have response messages: call_B"))
    expect_error(fake, "POST", p, dict(OAI_BODY, messages=[
        {"role": "user", "content": "go"}, {"role": "tool", "tool_call_id": "call_X",
                                            "content": "?"}]),
                 OAI_H, 400, oai_err("messages with role 'tool' must be a response"))
    fake.reset()
    fake.script({"text": "fine"})
    st, _, doc = fake.json("POST", p, dict(OAI_BODY, messages=oai_history(
        ["call_B", "call_A"], [{"role": "user", "content": "next"}])), OAI_H)
    expect_eq(st, 200, "answered tool calls")
    expect_eq(doc["choices"][0]["message"]["content"], "fine", "text")


def check_gemini_rejections(fake):
    expect_error(fake, "POST", GEM_PATH, GEM_BODY, {"content-type": "application/json"}, 403,
                 gem_err(403, "PERMISSION_DENIED", "unregistered callers"))
    expect_error(fake, "POST", GEM_PATH + "?key=", GEM_BODY, {}, 400,
                 gem_err(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid "
                         "API key."))
    expect_error(fake, "POST", GEM_PATH, GEM_BODY, {"x-goog-api-key": ""}, 400,
                 gem_err(400, "INVALID_ARGUMENT", "API key not valid"))
    expect_error(fake, "POST", GEM_PATH, "{", GEM_H, 400,
                 gem_err(400, "INVALID_ARGUMENT", "Invalid JSON payload"))
    expect_error(fake, "POST", GEM_PATH, {}, GEM_H, 400,
                 gem_err(400, "INVALID_ARGUMENT", "contents is not specified"))
    expect_error(fake, "POST", GEM_PATH, {"contents": []}, GEM_H, 400,
                 gem_err(400, "INVALID_ARGUMENT", "contents is not specified"))
    expect_error(fake, "POST", GEM_PATH, {"contents": [{"role": "bot", "parts": [{"text": "x"}]}]},
                 GEM_H, 400, gem_err(400, "INVALID_ARGUMENT", "valid role"))
    # The key in the query string is accepted too.
    fake.reset()
    fake.script({"text": "by query key"})
    st, _, doc = fake.json("POST", GEM_PATH + "?key=AIza-SECRET", GEM_BODY, {})
    expect_eq(st, 200, "key= in the query")
    expect_eq(doc["candidates"][0]["content"]["parts"][0]["text"], "by query key", "text")


def gem_history(responses):
    calls = [{"functionCall": {"name": "a", "args": {}}}, {"functionCall": {"name": "b", "args": {}}}]
    return {"contents": [GEM_BODY["contents"][0], {"role": "model", "parts": calls},
                         {"role": "user", "parts": responses}]}


def check_gemini_tool_pairing(fake):
    fr = [{"functionResponse": {"name": "a", "response": {"ok": 1}}},
          {"functionResponse": {"name": "b", "response": {"ok": 1}}}]
    expect_error(fake, "POST", GEM_PATH, gem_history([{"text": "what?"}]), GEM_H, 400,
                 gem_err(400, "INVALID_ARGUMENT", "function response"))
    expect_error(fake, "POST", GEM_PATH, gem_history(fr[:1]), GEM_H, 400,
                 gem_err(400, "INVALID_ARGUMENT", "number of function response parts"))
    wrong = [fr[0], {"functionResponse": {"name": "c", "response": {}}}]
    expect_error(fake, "POST", GEM_PATH, gem_history(wrong), GEM_H, 400,
                 gem_err(400, "INVALID_ARGUMENT", "Unanswered: b"))
    expect_error(fake, "POST", GEM_PATH, {"contents": gem_history(fr)["contents"][:2]}, GEM_H,
                 400, gem_err(400, "INVALID_ARGUMENT", "function"))
    expect_error(fake, "POST", GEM_PATH, {"contents": [{"role": "user", "parts": fr}]}, GEM_H,
                 400, gem_err(400, "INVALID_ARGUMENT",
                              "function response turn comes immediately after a function call"))
    fake.reset()
    fake.script({"text": "fine"})
    st, _, doc = fake.json("POST", GEM_PATH, gem_history(list(reversed(fr))), GEM_H)
    expect_eq(st, 200, "answered function calls")


def check_anthropic_shapes(fake):
    fake.reset()
    fake.script({"text": "Hello", "thinking": "hmm"},
                {"text": "Hello there, streamed", "thinking": "think", "tool_calls": CALLS,
                 "chunks": 3})
    st, hdrs, msg = fake.json("POST", "/v1/messages", ANT_BODY, ANT_H)
    expect_eq(st, 200, "status")
    expect(hdrs["content-type"].startswith("application/json"), hdrs["content-type"])
    expect(set(msg) >= {"id", "type", "role", "model", "content", "stop_reason",
                        "stop_sequence", "usage"}, sorted(msg))
    expect_eq((msg["type"], msg["role"], msg["model"], msg["stop_reason"], msg["stop_sequence"]),
              ("message", "assistant", "claude-fake", "end_turn", None), "message fields")
    expect_eq([b["type"] for b in msg["content"]], ["thinking", "text"], "blocks")
    expect(msg["content"][0]["signature"], "thinking signature")
    expect(msg["usage"]["input_tokens"] > 0 and msg["usage"]["output_tokens"] > 0, "usage")

    st, hdrs, data, exc = stream_raw(fake, "/v1/messages", dict(ANT_BODY, stream=True), ANT_H)
    expect(exc is None, f"stream error {exc!r}")
    expect(hdrs["content-type"].startswith("text/event-stream"), hdrs["content-type"])
    events = sse_events(data)
    names = [e for e, _ in events]
    docs = [json.loads(d) for _, d in events]
    for name, doc in zip(names, docs):
        expect_eq(doc["type"], name, "event name = data.type")
    expect_eq(names[0], "message_start", "first")
    expect_eq(names[-2:], ["message_delta", "message_stop"], "last")
    expect("ping" in names, "a ping event")
    starts = [d["content_block"] for d in docs if d["type"] == "content_block_start"]
    expect_eq([b["type"] for b in starts], ["thinking", "text", "tool_use", "tool_use"], "blocks")
    deltas = {}
    for d in docs:
        if d["type"] == "content_block_delta":
            deltas.setdefault(d["index"], []).append(d["delta"])
    expect_eq("".join(x["thinking"] for x in deltas[0] if x["type"] == "thinking_delta"),
              "think", "thinking")
    expect(any(x["type"] == "signature_delta" and x["signature"] for x in deltas[0]),
           "signature_delta")
    expect_eq("".join(x["text"] for x in deltas[1]), "Hello there, streamed", "text")
    for i, call in zip((2, 3), CALLS):
        parts = [x["partial_json"] for x in deltas[i]]
        expect(len([p for p in parts if p]) >= 2, f"several input_json_delta fragments: {parts}")
        expect_eq(json.loads("".join(parts)), call["arguments"], "reassembled input")
        expect_eq(starts[i]["name"], call["name"], "tool name")
        expect(starts[i]["id"].startswith("toolu_fake_"), starts[i]["id"])
    expect(starts[2]["id"] != starts[3]["id"], "distinct ids")
    md = docs[-2]
    expect_eq(md["delta"]["stop_reason"], "tool_use", "stop_reason")
    expect(md["usage"]["output_tokens"] > 0, "usage.output_tokens")


def check_anthropic_thinking_round_trip(fake):
    """anthropic_content: blocks in order; thinking comes back verified."""
    fake.reset()
    content = [{"thinking": "first"}, {"text": "looking"},
               {"redacted_thinking": "EmwKAhgB"}, {"thinking": "then"}]
    fake.script({"anthropic_content": content, "tool_calls": CALLS[:1]})
    think = dict(ANT_BODY, max_tokens=4096,
                 thinking={"type": "enabled", "budget_tokens": 1024})
    st, _, data, exc = stream_raw(fake, "/v1/messages", dict(think, stream=True), ANT_H)
    expect(exc is None and st == 200, f"stream {st} {exc!r}")
    docs = [json.loads(d) for _, d in sse_events(data)]
    starts = [d["content_block"] for d in docs if d["type"] == "content_block_start"]
    expect_eq([b["type"] for b in starts],
              ["thinking", "text", "redacted_thinking", "thinking", "tool_use"], "order")
    expect_eq(starts[2]["data"], "EmwKAhgB", "redacted data in its start event")
    sigs = [d["delta"]["signature"] for d in docs if d["type"] == "content_block_delta"
            and d["delta"]["type"] == "signature_delta"]
    expect(len(sigs) == 2 and sigs[0] != sigs[1], f"one signature per block: {sigs}")
    call_id = starts[4]["id"]
    blocks = [{"type": "thinking", "thinking": "first", "signature": sigs[0]},
              {"type": "text", "text": "looking"},
              {"type": "redacted_thinking", "data": "EmwKAhgB"},
              {"type": "thinking", "thinking": "then", "signature": sigs[1]},
              {"type": "tool_use", "id": call_id, "name": CALLS[0]["name"],
               "input": CALLS[0]["arguments"]}]
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id,
                                           "content": "ok"}]}

    def history(assistant):
        return dict(think, messages=[USER_A, {"role": "assistant", "content": assistant},
                                     result])
    # Dropped, reordered or altered: refused as the real API refuses them.
    expect_error(fake, "POST", "/v1/messages", history(blocks[:2] + blocks[3:]), ANT_H, 400,
                 ant_err("invalid_request_error", "unmodified and in their original order"))
    expect_error(fake, "POST", "/v1/messages",
                 history([blocks[3], blocks[1], blocks[2], blocks[0], blocks[4]]), ANT_H, 400,
                 ant_err("invalid_request_error", "original order"))
    altered = [dict(blocks[0], thinking="first!")] + blocks[1:]
    expect_error(fake, "POST", "/v1/messages", history(altered), ANT_H, 400,
                 ant_err("invalid_request_error", "Invalid `signature`"))
    fake.script({"text": "done"}, {"text": "done"})
    st, _, doc = fake.json("POST", "/v1/messages", history(blocks), ANT_H)
    expect_eq((st, doc["content"][0]["text"]), (200, "done"), "as it came: accepted")
    # Without thinking enabled, earlier thinking is not required back.
    st, _, _ = fake.json("POST", "/v1/messages",
                         dict(history(blocks[1:2] + blocks[4:]), thinking=None,
                              max_tokens=64), ANT_H)
    expect_eq(st, 200, "thinking off: accepted without the blocks")


def check_openai_shapes(fake):
    fake.reset()
    fake.script({"text": "Hello"}, {"text": "abcdef", "tool_calls": CALLS, "chunks": 3},
                {"text": "no usage"})
    st, _, doc = fake.json("POST", "/v1/chat/completions", OAI_BODY, OAI_H)
    expect_eq((doc["object"], doc["model"], doc["choices"][0]["finish_reason"]),
              ("chat.completion", "gpt-fake", "stop"), "completion fields")
    expect(isinstance(doc["created"], int), "created")
    u = doc["usage"]
    expect_eq(u["total_tokens"], u["prompt_tokens"] + u["completion_tokens"], "usage")

    body = dict(OAI_BODY, stream=True, stream_options={"include_usage": True})
    st, hdrs, data, exc = stream_raw(fake, "/v1/chat/completions", body, OAI_H)
    expect(exc is None and st == 200, f"stream {st} {exc!r}")
    events = sse_events(data)
    expect(all(e is None for e, _ in events), "no event: lines")
    expect_eq(events[-1][1], "[DONE]", "last data")
    chunks = [json.loads(d) for _, d in events[:-1]]
    expect(all(c["object"] == "chat.completion.chunk" for c in chunks), "chunk objects")
    expect_eq(chunks[0]["choices"][0]["delta"].get("role"), "assistant", "first delta role")
    expect_eq(chunks[-1]["choices"], [], "usage chunk has no choices")
    expect(chunks[-1]["usage"]["total_tokens"] > 0, "usage chunk")
    expect_eq(chunks[-2]["choices"][0]["finish_reason"], "tool_calls", "finish_reason")
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks[:-1])
    expect_eq(text, "abcdef", "content")
    frags = [tc for c in chunks[:-1] for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    calls = {}
    for f in frags:
        if f["index"] not in calls:
            expect(set(f) == {"index", "id", "type", "function"}, f"first fragment {f}")
            expect_eq(f["function"]["arguments"], "", "first fragment arguments")
            expect(f["id"].startswith("call_fake_"), f["id"])
            calls[f["index"]] = dict(name=f["function"]["name"], args="")
        else:
            expect(set(f) == {"index", "function"} and set(f["function"]) == {"arguments"},
                   f"later fragment {f}")
            calls[f["index"]]["args"] += f["function"]["arguments"]
    expect_eq([calls[i]["name"] for i in sorted(calls)], [c["name"] for c in CALLS], "names")
    expect_eq([json.loads(calls[i]["args"]) for i in sorted(calls)],
              [c["arguments"] for c in CALLS], "arguments")
    expect(len(frags) >= 2 * 3, f"fragments: {len(frags)}")
    # Without include_usage: no usage chunk, no usage key.
    st, _, data, exc = stream_raw(fake, "/v1/chat/completions", dict(OAI_BODY, stream=True), OAI_H)
    chunks = [json.loads(d) for _, d in sse_events(data)[:-1]]
    expect(all("usage" not in c and c["choices"] for c in chunks), "no usage without include_usage")


def check_openai_models(fake):
    st, _, doc = fake.json("GET", "/v1/models", None, OAI_H)
    expect_eq((st, doc["object"]), (200, "list"), "models")
    expect(doc["data"] and doc["data"][0]["object"] == "model", doc)
    st, _, doc = fake.json("GET", "/v1/models", None, {})
    expect_eq(st, 401, "models without a key")
    st, _, doc = fake.json("GET", "/v1/models", None, ANT_H)
    expect_eq((st, doc["data"][0]["type"], doc["has_more"]), (200, "model", False),
              "Anthropic's model list")


def check_gemini_shapes(fake):
    fake.reset()
    sig = "c2lnbmF0dXJl"
    calls = [dict(CALLS[0], id="fc_scripted"), CALLS[1]]
    fake.script({"text": "Hi", "thinking": "mull"},
                {"text": "streamed text", "chunks": 3, "tool_calls": calls,
                 "thought_signature": sig},
                {"text": "array form", "chunks": 2})
    st, _, doc = fake.json("POST", GEM_PATH, GEM_BODY, GEM_H)
    cand = doc["candidates"][0]
    expect_eq((cand["content"]["role"], cand["finishReason"], cand["index"]),
              ("model", "STOP", 0), "candidate")
    expect_eq(cand["content"]["parts"], [{"text": "mull", "thought": True}, {"text": "Hi"}],
              "parts")
    u = doc["usageMetadata"]
    expect_eq(u["totalTokenCount"], u["promptTokenCount"] + u["candidatesTokenCount"], "usage")
    expect_eq(doc["modelVersion"], "gemini-fake", "modelVersion")

    st, hdrs, data, exc = stream_raw(fake, GEM_SSE, GEM_BODY, GEM_H)
    expect(exc is None and st == 200, f"{st} {exc!r}")
    expect(hdrs["content-type"].startswith("text/event-stream"), hdrs["content-type"])
    expect(data.endswith(b"\r\n\r\n") and b"\n\n" not in data.replace(b"\r\n\r\n", b""),
           "events end with CRLF CRLF")
    docs = [json.loads(d) for _, d in sse_events(data, b"\r\n\r\n")]
    parts = [p for d in docs for p in d["candidates"][0]["content"]["parts"]]
    expect_eq("".join(p.get("text", "") for p in parts), "streamed text", "text")
    expect(len([p for p in parts if "text" in p]) == 3, "text split across 3 events")
    fcs = [p for p in parts if "functionCall" in p]
    expect_eq([p["functionCall"]["name"] for p in fcs], ["create_shape", "set_light"], "calls")
    expect_eq([p["functionCall"]["args"] for p in fcs], [c["arguments"] for c in CALLS], "args")
    expect_eq(fcs[0]["functionCall"].get("id"), "fc_scripted", "scripted id kept")
    expect("id" not in fcs[1]["functionCall"], "no id unless scripted")
    expect_eq([p.get("thoughtSignature") for p in parts if "thoughtSignature" in p], [sig],
              "one signature")
    expect_eq(fcs[0].get("thoughtSignature"), sig, "signature on the first functionCall")
    expect("finishReason" not in docs[0]["candidates"][0], "no finishReason before the end")
    expect_eq(docs[-1]["candidates"][0]["finishReason"], "STOP", "finishReason last")
    expect("candidatesTokenCount" in docs[-1]["usageMetadata"], "usage on the last event")

    # Without alt=sse the stream is a JSON array.
    st, hdrs, data, exc = stream_raw(
        fake, "/v1beta/models/gemini-fake:streamGenerateContent", GEM_BODY, GEM_H)
    arr = json.loads(data)
    expect_eq("".join(d["candidates"][0]["content"]["parts"][0]["text"] for d in arr),
              "array form", "array stream")


def check_empty_queue(fake):
    fake.reset()
    st, _, doc = fake.json("POST", "/v1/messages", ANT_BODY, ANT_H)
    expect_eq(doc["content"][0]["text"], "fake-llm: no scripted turn left", "anthropic")
    st, _, doc = fake.json("POST", "/v1/chat/completions", OAI_BODY, OAI_H)
    expect_eq(doc["choices"][0]["message"]["content"], "fake-llm: no scripted turn left", "openai")
    st, _, doc = fake.json("POST", GEM_PATH, GEM_BODY, GEM_H)
    expect_eq(doc["candidates"][0]["content"]["parts"][0]["text"],
              "fake-llm: no scripted turn left", "gemini")


def check_one_queue(fake):
    fake.reset()
    fake.script({"text": "one"}, {"text": "two"}, {"text": "three"})
    _, _, a = fake.json("POST", GEM_PATH, GEM_BODY, GEM_H)
    _, _, b = fake.json("POST", "/v1/messages", ANT_BODY, ANT_H)
    _, _, c = fake.json("POST", "/v1/chat/completions", OAI_BODY, OAI_H)
    expect_eq((a["candidates"][0]["content"]["parts"][0]["text"], b["content"][0]["text"],
               c["choices"][0]["message"]["content"]), ("one", "two", "three"), "order")


def check_match(fake):
    fake.reset()
    fake.script({"text": "summary", "match": "no longer fits"}, {"text": "plain"},
                {"text": "plain 2"})
    _, _, a = fake.json("POST", "/v1/chat/completions", OAI_BODY, OAI_H)
    body = dict(OAI_BODY, messages=[{"role": "user",
                                     "content": "It no longer fits: summarise."}])
    _, _, b = fake.json("POST", "/v1/chat/completions", body, OAI_H)
    _, _, c = fake.json("POST", "/v1/chat/completions", OAI_BODY, OAI_H)
    expect_eq([x["choices"][0]["message"]["content"] for x in (a, b, c)],
              ["plain", "summary", "plain 2"], "a matched turn waits for its request")
    st, _, doc = fake.json("POST", "/_fake/script", {"turns": [{"match": "("}]})
    expect_eq(st, 400, "a match that is no regular expression")


def check_retry_after(fake):
    fake.reset()
    fake.script({"status": 429, "retry_after": 2, "error_message": "slow down"},
                {"status": 429, "retry_after": 1},
                {"status": 503, "error_message": "busy"},
                {"status": 529})
    st, hdrs, doc = fake.json("POST", "/v1/messages", ANT_BODY, ANT_H)
    expect_eq((st, hdrs.get("retry-after")), (429, "2"), "anthropic 429")
    ant_err("rate_limit_error", "slow down")(doc)
    st, hdrs, doc = fake.json("POST", "/v1/chat/completions", OAI_BODY, OAI_H)
    expect_eq((st, hdrs.get("retry-after"), doc["error"]["code"]),
              (429, "1", "rate_limit_exceeded"), "openai 429")
    st, hdrs, doc = fake.json("POST", GEM_PATH, GEM_BODY, GEM_H)
    expect_eq((st, doc["error"]["status"], doc["error"]["message"]),
              (503, "UNAVAILABLE", "busy"), "gemini 503")
    expect("retry-after" not in hdrs, "no Retry-After unless scripted")
    st, _, doc = fake.json("POST", "/v1/messages", dict(ANT_BODY, stream=True), ANT_H)
    expect_eq((st, doc["error"]["type"]), (529, "overloaded_error"), "anthropic 529")


def check_truncate(fake):
    fake.reset()
    fake.script({"text": "x" * 40, "chunks": 10, "truncate": True},
                {"text": "y" * 40, "chunks": 10, "truncate": True},
                {"text": "z" * 40, "chunks": 10, "truncate": True},
                {"text": "w" * 40, "truncate": True})
    st, _, data, exc = stream_raw(fake, "/v1/messages", dict(ANT_BODY, stream=True), ANT_H)
    expect(exc is not None, "the client sees an incomplete chunked body")
    names = [e for e, _ in sse_events(data)]
    expect(names and names[0] == "message_start", names)
    expect("message_stop" not in names and "message_delta" not in names, names)
    st, _, data, exc = stream_raw(fake, "/v1/chat/completions", dict(OAI_BODY, stream=True), OAI_H)
    expect(exc is not None and b"[DONE]" not in data and b"chat.completion.chunk" in data,
           "openai truncated")
    st, _, data, exc = stream_raw(fake, GEM_SSE, GEM_BODY, GEM_H)
    expect(exc is not None and b"finishReason" not in data, "gemini truncated")
    # A non-streamed answer shorter than its Content-Length.
    c = fake.conn()
    try:
        c.request("POST", "/v1/messages", body=json.dumps(ANT_BODY), headers=ANT_H)
        r = c.getresponse()
        try:
            r.read()
            raise AssertionError("a truncated body read in full")
        except http.client.IncompleteRead:
            pass
    finally:
        c.close()


def check_malformed(fake):
    fake.reset()
    fake.script({"text": "abcdefgh", "chunks": 4, "malformed": True},
                {"text": "abcdefgh", "chunks": 4, "malformed": True},
                {"text": "abcdefgh", "chunks": 4, "malformed": True})
    for path, body, hdrs, sep in (
            ("/v1/messages", dict(ANT_BODY, stream=True), ANT_H, b"\n\n"),
            ("/v1/chat/completions", dict(OAI_BODY, stream=True), OAI_H, b"\n\n"),
            (GEM_SSE, GEM_BODY, GEM_H, b"\r\n\r\n")):
        st, _, data, exc = stream_raw(fake, path, body, hdrs)
        expect(exc is None, f"{path}: the stream completes")
        bad = 0
        for _, d in sse_events(data, sep):
            if d == "[DONE]":
                continue
            try:
                json.loads(d)
            except ValueError:
                bad += 1
        expect_eq(bad, 1, f"{path}: invalid data lines")


def check_hang(fake):
    fake.reset()
    fake.script({"hang": True}, {"text": "after the hang"})
    t0 = time.monotonic()
    c = fake.conn(timeout=1.0)
    try:
        c.request("POST", "/v1/messages", body=json.dumps(dict(ANT_BODY, stream=True)),
                  headers=ANT_H)
        r = c.getresponse()  # the headers come
        expect_eq(r.status, 200, "hang status")
        try:
            r.read(1)
            raise AssertionError("data arrived from a hanging turn")
        except (socket.timeout, TimeoutError):
            pass
    finally:
        c.close()
    expect(time.monotonic() - t0 < 5, "the client timed out")
    st, _, doc = fake.json("POST", "/v1/messages", ANT_BODY, ANT_H)
    expect_eq(doc["content"][0]["text"], "after the hang", "the next turn")


def check_delay(fake):
    fake.reset()
    fake.script({"text": "abcd", "chunks": 4, "delay_ms": 150}, {"text": "x", "delay_ms": 300})
    t0 = time.monotonic()
    st, _, data, exc = stream_raw(fake, "/v1/chat/completions", dict(OAI_BODY, stream=True), OAI_H)
    took = time.monotonic() - t0
    n = len(sse_events(data))
    expect(took >= 0.15 * (n - 1) * 0.9, f"{n} events in {took:.2f} s")
    t0 = time.monotonic()
    fake.json("POST", GEM_PATH, GEM_BODY, GEM_H)
    expect(time.monotonic() - t0 >= 0.28, "the unstreamed answer waited")


def check_request_log(fake):
    fake.reset()
    fake.script({"text": "a"}, {"text": "b"}, {"text": "c"})
    fake.request("POST", "/v1/messages", dict(ANT_BODY, stream=True), ANT_H)
    fake.request("POST", "/v1/chat/completions", OAI_BODY, dict(OAI_H, cookie="c=SECRET"))
    fake.request("POST", GEM_SSE + "&key=AIza-SECRET", GEM_BODY, {})
    fake.request("POST", "/v1/messages", ANT_BODY, {})  # rejected: logged too
    log = fake.requests()
    expect_eq([r["api"] for r in log], ["anthropic", "openai", "gemini", "anthropic"], "apis")
    expect_eq([r["status"] for r in log], [200, 200, 200, 401], "statuses")
    expect_eq([r["stream"] for r in log], [True, False, True, False], "stream flags")
    expect_eq(log[0]["headers"]["x-api-key"], "(redacted)", "x-api-key")
    expect_eq(log[0]["headers"]["anthropic-version"], "2023-06-01", "other headers kept")
    expect_eq(log[1]["headers"]["authorization"], "(redacted)", "authorization")
    expect_eq(log[1]["headers"]["cookie"], "(redacted)", "cookie")
    expect("key=%28redacted%29" in log[2]["path"] or "key=(redacted)" in log[2]["path"],
           log[2]["path"])
    expect_eq(log[0]["body"], dict(ANT_BODY, stream=True), "body")
    expect(all(isinstance(r["ts"], float) for r in log), "ts")
    expect("SECRET" not in json.dumps(log), "no secret anywhere in the log")


def check_control(fake):
    st, _, doc = fake.json("POST", "/_fake/script", {"turns": [{"txt": "typo"}]})
    expect_eq(st, 400, "unknown field")
    expect("txt" in doc["error"], doc)
    st, _, doc = fake.json("POST", "/_fake/script", {"turns": [{"tool_calls": [{"x": 1}]}]})
    expect_eq(st, 400, "tool call without a name")
    st, _, doc = fake.json("POST", "/_fake/script", "nope")
    expect_eq(st, 400, "not JSON")
    fake.reset()
    fake.script({"text": "1"})
    st, _, doc = fake.json("POST", "/_fake/script", {"turns": [{"text": "2"}], "append": True})
    expect_eq(doc["queued"], 2, "append")
    st, _, doc = fake.json("GET", "/_fake/nothing")
    expect_eq(st, 404, "unknown control endpoint")
    fake.reset()
    expect_eq(fake.queued(), 0, "reset empties the queue")
    expect_eq(fake.requests(), [], "reset empties the log")


def check_unknown_paths(fake):
    st, _, doc = fake.json("POST", "/v1/completions", OAI_BODY, OAI_H)
    expect_eq(st, 404, "openai legacy path")
    expect("Invalid URL" in doc["error"]["message"], doc)
    st, _, doc = fake.json("POST", "/v1beta/models/x:countTokens", GEM_BODY, GEM_H)
    expect_eq((st, doc["error"]["status"]), (404, "NOT_FOUND"), "gemini unknown method")
    st, _, doc = fake.json("GET", "/v1/messages", None, ANT_H)
    expect_eq((st, doc["error"]["type"]), (404, "not_found_error"), "GET /v1/messages")


def check_parallel_ids(fake):
    fake.reset()
    fake.script({"tool_calls": CALLS}, {"tool_calls": CALLS})
    _, _, a = fake.json("POST", "/v1/messages", ANT_BODY, ANT_H)
    ids = [b["id"] for b in a["content"] if b["type"] == "tool_use"]
    expect_eq(len(ids), 2, "two tool_use blocks")
    expect(all(i.startswith("toolu_fake_") for i in ids) and ids[0] != ids[1], ids)
    expect_eq(a["stop_reason"], "tool_use", "stop_reason")
    expect_eq([b["input"] for b in a["content"] if b["type"] == "tool_use"],
              [c["arguments"] for c in CALLS], "inputs")
    _, _, o = fake.json("POST", "/v1/chat/completions", OAI_BODY, OAI_H)
    msg = o["choices"][0]["message"]
    expect_eq((msg["content"], o["choices"][0]["finish_reason"]), (None, "tool_calls"), "openai")
    ids = [t["id"] for t in msg["tool_calls"]]
    expect(all(i.startswith("call_fake_") for i in ids) and ids[0] != ids[1], ids)
    expect_eq([json.loads(t["function"]["arguments"]) for t in msg["tool_calls"]],
              [c["arguments"] for c in CALLS], "arguments are JSON strings")


def check_disconnect(fake):
    fake.reset()
    fake.script({"text": "x" * 50, "chunks": 25, "delay_ms": 40})
    s = socket.create_connection(("127.0.0.1", fake.port), timeout=5)
    body = json.dumps(dict(OAI_BODY, stream=True)).encode()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n"
              b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    expect(b"200" in s.recv(100), "the stream started")
    s.close()
    time.sleep(0.3)
    fake.script({"text": "still alive"})
    _, _, doc = fake.json("POST", "/v1/messages", ANT_BODY, ANT_H)
    expect_eq(doc["content"][0]["text"], "still alive", "the server goes on")
    expect(fake.proc.poll() is None, "the server is running")


def read_response(f):
    """Reads one Content-Length response from a socket file; returns its body."""
    status = f.readline()
    expect(status.startswith(b"HTTP/1.1 200"), f"status line {status!r}")
    length = None
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    expect(length is not None, "a Content-Length")
    return f.read(length)


def check_http_details(fake):
    """What libcurl does: Expect: 100-continue, chunked uploads, keep-alive."""
    fake.reset()
    fake.script({"text": "one"}, {"text": "two"})
    body = json.dumps(ANT_BODY).encode()
    s = socket.create_connection(("127.0.0.1", fake.port), timeout=5)
    try:
        s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: k\r\n"
                  b"anthropic-version: 2023-06-01\r\nContent-Type: application/json\r\n"
                  b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
        f = s.makefile("rb")
        expect(f.readline().startswith(b"HTTP/1.1 100"), "100 Continue")
        expect_eq(f.readline(), b"\r\n", "end of the 100 response")
        s.sendall(body)
        expect_eq(json.loads(read_response(f))["content"][0]["text"], "one",
                  "after 100-continue")
        # The same connection again, with a chunked body.
        half = len(body) // 2
        s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: k\r\n"
                  b"anthropic-version: 2023-06-01\r\nTransfer-Encoding: chunked\r\n\r\n"
                  + b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, body[:half], len(body) - half,
                                                         body[half:]))
        expect_eq(json.loads(read_response(f))["content"][0]["text"], "two",
                  "chunked, keep-alive")
    finally:
        s.close()


def check_script_file(_fake):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"turns": [{"text": "from the file"}]}, f)
    try:
        fake = Fake("--script", f.name)
        try:
            _, _, doc = fake.json("POST", "/v1/chat/completions", OAI_BODY, OAI_H)
            expect_eq(doc["choices"][0]["message"]["content"], "from the file", "preloaded")
        finally:
            expect_eq(fake.stop(signal.SIGINT), 0, "exit status on SIGINT")
        with open(f.name, "w") as g:
            g.write('{"turns": [{"status": 200}]}')
        p = subprocess.run([sys.executable, FAKE, "--port", "0", "--script", f.name],
                           capture_output=True, text=True, timeout=10)
        expect(p.returncode == 2 and "status" in p.stderr, f"bad script: {p.returncode} {p.stderr}")
    finally:
        os.unlink(f.name)


def check_sigterm(_fake):
    fake = Fake()
    fake.script({"text": "x", "hang": True})
    c = fake.conn(timeout=5)
    c.request("POST", "/v1/messages", body=json.dumps(ANT_BODY), headers=ANT_H)
    c.getresponse()
    t0 = time.monotonic()
    expect_eq(fake.stop(signal.SIGTERM), 0, "exit status on SIGTERM with a hanging client")
    expect(time.monotonic() - t0 < 3, "prompt exit")
    c.close()
    time.sleep(0.1)
    err = "".join(fake.log)
    expect("Traceback" not in err, err)


# ---------------------------------------------------------------- main

def run_check(desc, fn, *args):
    RESULTS["n"] += 1
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - every failure is reported
        RESULTS["failed"] += 1
        print(f"not ok {RESULTS['n']} - {desc}")
        for line in traceback.format_exception(type(e), e, e.__traceback__)[-6:]:
            for sub in line.rstrip().split("\n"):
                print(f"# {sub}")
    else:
        RESULTS["passed"] += 1
        print(f"ok {RESULTS['n']} - {desc}")
    sys.stdout.flush()


def on_alarm(signum, frame):
    print(f"not ok {RESULTS['n'] + 1} - the checks finished within 240 s")
    print(f"{RESULTS['passed']} passed, {RESULTS['failed'] + 1} failed")
    sys.stdout.flush()
    for s in SERVERS:
        if s.proc.poll() is None:
            s.proc.kill()
    os._exit(1)


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(240)
    t0 = time.monotonic()
    fake = Fake()
    checks = [
        ("--port 0 prints exactly one line with the port", check_port_line),
        ("anthropic: key, version, JSON and field rejections", check_anthropic_rejections),
        ("anthropic: tool_use without tool_result rejected, answered accepted",
         check_anthropic_tool_pairing),
        ("openai: key, JSON and field rejections", check_openai_rejections),
        ("openai: tool_calls without tool messages rejected, answered accepted",
         check_openai_tool_pairing),
        ("gemini: key (403/400), JSON and contents rejections", check_gemini_rejections),
        ("gemini: functionCall without functionResponse rejected, answered accepted",
         check_gemini_tool_pairing),
        ("anthropic: message and stream shapes, fragmented tool input", check_anthropic_shapes),
        ("anthropic: interleaved thinking blocks in order, passed back verified",
         check_anthropic_thinking_round_trip),
        ("openai: completion and chunk shapes, tool call fragments, usage chunk",
         check_openai_shapes),
        ("openai/anthropic: GET /v1/models", check_openai_models),
        ("gemini: response, SSE (CRLF) and array streams, thoughtSignature", check_gemini_shapes),
        ("an empty queue answers 'no scripted turn left'", check_empty_queue),
        ("one queue serves all three APIs in order", check_one_queue),
        ("match: a turn waits for the request whose words it matches", check_match),
        ("status turns: error shapes and Retry-After", check_retry_after),
        ("truncate: streams and bodies end early", check_truncate),
        ("malformed: exactly one invalid data line", check_malformed),
        ("hang: headers then nothing; the client times out; the server goes on", check_hang),
        ("delay_ms paces streams and unstreamed answers", check_delay),
        ("the request log records everything, secrets redacted", check_request_log),
        ("control endpoints: script checks, append, reset, 404", check_control),
        ("unknown paths answer 404 in the API's shape", check_unknown_paths),
        ("parallel tool calls get distinct generated ids", check_parallel_ids),
        ("a client that disconnects mid-stream does not hurt the server", check_disconnect),
        ("HTTP: Expect 100-continue, chunked request body, keep-alive", check_http_details),
        ("--script preloads turns; a bad script exits 2; SIGINT exits 0", check_script_file),
        ("SIGTERM exits 0 promptly, even with a hanging client", check_sigterm),
    ]
    for desc, fn in checks:
        run_check(desc, fn, fake)
    st = fake.stop()
    RESULTS["n"] += 1
    if st == 0:
        RESULTS["passed"] += 1
        print(f"ok {RESULTS['n']} - the server exits 0 on SIGTERM")
    else:
        RESULTS["failed"] += 1
        print(f"not ok {RESULTS['n']} - the server exits 0 on SIGTERM (status {st})")
    if RESULTS["failed"]:
        print("# the fake server's stderr (last lines):")
        for line in fake.log[-30:]:
            print(f"#   {line.rstrip()}")
    print(f"# total time {time.monotonic() - t0:.1f} s")
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    try:
        status = main()
    finally:
        for s in SERVERS:
            if s.proc.poll() is None:
                s.proc.kill()
    sys.exit(status)
