#!/usr/bin/env python3
"""fake-llm: a scripted LLM provider on loopback, for tests.

It speaks the wire protocols of three real APIs, on their real paths:

  Anthropic Messages        POST /v1/messages
  OpenAI Chat Completions   POST /v1/chat/completions, GET /v1/models
  Gemini (Google AI)        POST /v1beta/models/{model}:generateContent
                            POST /v1beta/models/{model}:streamGenerateContent

Every provider request that passes validation takes the next scripted TURN
from one queue and renders it in the format of the API that was asked, both
streamed (SSE) and not. Requests that lack what the real API requires (a
key, a version header, a required field, a tool result for every tool call)
are rejected with the real status and error body shape, without taking a
turn. Everything received is recorded, secrets redacted.

Control endpoints (no auth):
  POST /_fake/script    {"turns": [TURN, ...], "append": false}
  GET  /_fake/script    {"turns": [the turns still queued]}
  POST /_fake/reset     clears the queue and the request log
  GET  /_fake/requests  {"requests": [{api, path, headers, body, stream,
                         status, ts}, ...]}

tests/fake-llm/README.md documents the TURN format. Standard library only:
    python3 fake_llm.py --port 0 [--host 127.0.0.1] [--script FILE]
prints "fake-llm listening on http://HOST:PORT" once it accepts
connections, logs one line per request to stderr, and exits 0 on SIGTERM or
SIGINT.
"""

import argparse
import base64
import hashlib
import json
import re
import select
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlencode, urlsplit

NO_TURN_TEXT = "fake-llm: no scripted turn left"
DEFAULT_CHUNKS = 3
HANG_MAX_SECONDS = 60.0
REDACTED = "(redacted)"
SECRET_HEADERS = ("x-api-key", "authorization", "x-goog-api-key", "api-key",
                  "proxy-authorization", "cookie")
# 2026-10-21 is what @anthropic-ai/sdk 1.x sends; its wire format for
# messages, streams and errors is the one of 2023-06-01.
ANTHROPIC_VERSIONS = ("2023-06-01", "2023-01-01", "2026-10-21")
MAX_BODY = 64 * 1024 * 1024

GEMINI_PATH = re.compile(
    r"^/(v1|v1beta|v1alpha)/models/([^/:]+):(generateContent|streamGenerateContent)$")


class ClientGone(Exception):
    """The peer closed the connection while we were answering."""


# --------------------------------------------------------------------------
# The script: a queue of turns, checked when it is loaded.

TURN_KEYS = {
    "text": str, "chunks": int, "tool_calls": list, "thinking": str,
    "thought_signature": str, "usage": dict, "status": int,
    "error_message": str, "retry_after": (int, float), "truncate": bool,
    "malformed": bool, "delay_ms": (int, float), "hang": bool,
    "stop_reason": str, "comment": str, "anthropic_content": list,
}


def check_turn(turn, where):
    """Returns an error message for a malformed TURN, or None."""
    if not isinstance(turn, dict):
        return f"{where}: a turn must be an object"
    for key, value in turn.items():
        if key not in TURN_KEYS:
            return f"{where}: unknown turn field {key!r}"
        want = TURN_KEYS[key]
        if isinstance(value, bool) and want is not bool:
            return f"{where}.{key}: wrong type"
        if not isinstance(value, want):
            return f"{where}.{key}: wrong type"
    if "chunks" in turn and turn["chunks"] < 1:
        return f"{where}.chunks: must be at least 1"
    if "status" in turn and not 400 <= turn["status"] <= 599:
        return f"{where}.status: must be an HTTP error status (400-599)"
    for i, call in enumerate(turn.get("tool_calls", [])):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return f"{where}.tool_calls[{i}]: needs a string 'name'"
        if not isinstance(call.get("arguments", {}), dict):
            return f"{where}.tool_calls[{i}].arguments: must be an object"
        if "id" in call and not isinstance(call["id"], str):
            return f"{where}.tool_calls[{i}].id: must be a string"
    for i, block in enumerate(turn.get("anthropic_content", [])):
        if not (isinstance(block, dict) and len(block) == 1 and
                next(iter(block)) in ("thinking", "redacted_thinking", "text") and
                isinstance(next(iter(block.values())), str)):
            return (f"{where}.anthropic_content[{i}]: must be one of "
                    '{"thinking": str}, {"redacted_thinking": str}, {"text": str}')
    usage = turn.get("usage", {})
    for k in ("input", "output"):
        if k in usage and (isinstance(usage[k], bool) or not isinstance(usage[k], int)):
            return f"{where}.usage.{k}: must be an integer"
    return None


def check_script(doc):
    if not isinstance(doc, dict) or not isinstance(doc.get("turns"), list):
        return None, "the script must be an object with a 'turns' array"
    for i, turn in enumerate(doc["turns"]):
        err = check_turn(turn, f"turns[{i}]")
        if err:
            return None, err
    return doc["turns"], None


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.turns = []
        self.requests = []
        self.counter = 0
        # Anthropic: the thinking and redacted_thinking blocks of each
        # answer that called tools, by the calls' ids, to check that they
        # come back unmodified and in order, as the real API does.
        self.anthropic_thoughts = {}
        self.stopping = threading.Event()

    def next_id(self):
        with self.lock:
            self.counter += 1
            return self.counter

    def pop_turn(self):
        with self.lock:
            if self.turns:
                return self.turns.pop(0)
        return None

    def record(self, entry):
        with self.lock:
            self.requests.append(entry)


# --------------------------------------------------------------------------
# Helpers shared by the three renderings.

def split_text(text, n):
    """Splits text into at most n non-empty pieces of near-equal size."""
    if not text:
        return []
    n = max(1, min(n, len(text)))
    size, extra = divmod(len(text), n)
    out, pos = [], 0
    for i in range(n):
        step = size + (1 if i < extra else 0)
        out.append(text[pos:pos + step])
        pos += step
    return out


def approx_tokens(s):
    return max(1, (len(s) + 3) // 4)


class Reply:
    """One turn, normalised; each API renders it in its own format."""

    def __init__(self, turn, state, id_prefix, request_body):
        self.turn = turn
        self.chunks = turn.get("chunks", DEFAULT_CHUNKS)
        self.thinking = turn.get("thinking")
        self.text = turn.get("text")
        self.calls = []
        for call in turn.get("tool_calls", []):
            call_id = call.get("id") or f"{id_prefix}{state.next_id()}"
            args = call.get("arguments", {})
            self.calls.append({"id": call_id, "name": call["name"], "arguments": args,
                               "json": json.dumps(args, separators=(",", ":"))})
        if self.text is None and not self.calls and self.thinking is None:
            self.text = ""
        usage = turn.get("usage", {})
        produced = (self.text or "") + (self.thinking or "") + "".join(
            c["name"] + c["json"] for c in self.calls)
        self.input_tokens = usage.get(
            "input", approx_tokens(json.dumps(request_body, separators=(",", ":"))))
        self.output_tokens = usage.get("output", approx_tokens(produced))
        self.stop_reason = turn.get("stop_reason")

    def signature(self):
        return thinking_signature(self.thinking or "")

    def anthropic_content(self):
        """The content blocks before the tool calls, in order: the turn's
        anthropic_content, else its thinking and text."""
        blocks = []
        if "anthropic_content" in self.turn:
            for b in self.turn["anthropic_content"]:
                (kind, value), = b.items()
                if kind == "thinking":
                    blocks.append({"type": "thinking", "thinking": value,
                                   "signature": thinking_signature(value)})
                elif kind == "redacted_thinking":
                    blocks.append({"type": "redacted_thinking", "data": value})
                else:
                    blocks.append({"type": "text", "text": value, "citations": None})
            return blocks
        if self.thinking is not None:
            blocks.append({"type": "thinking", "thinking": self.thinking,
                           "signature": self.signature()})
        if self.text is not None and (self.text or not self.calls):
            blocks.append({"type": "text", "text": self.text, "citations": None})
        return blocks


def thinking_signature(text):
    """The fake's signature of a thinking text: checkable without state."""
    digest = hashlib.sha256(("fake-llm:" + text).encode()).digest()
    return base64.b64encode(b"fake-llm-signature:" + digest).decode()


def thought_blocks(content):
    """The thinking and redacted_thinking blocks of a content list, as they
    must come back."""
    out = []
    for b in content:
        if b.get("type") == "thinking":
            out.append(("thinking", b.get("thinking"), b.get("signature")))
        elif b.get("type") == "redacted_thinking":
            out.append(("redacted_thinking", b.get("data")))
    return out


def dumps(obj):
    """Compact JSON, as Anthropic and OpenAI send it."""
    return json.dumps(obj, separators=(",", ":"))


def malformed(data):
    """A data line that is not JSON: the real one cut in the middle."""
    return data[:max(1, len(data) // 2)]


# --------------------------------------------------------------------------
# Anthropic Messages.

ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                         402: "billing_error", 403: "permission_error",
                         404: "not_found_error", 413: "request_too_large",
                         429: "rate_limit_error", 500: "api_error",
                         504: "timeout_error", 529: "overloaded_error"}


def anthropic_error_type(status):
    if status in ANTHROPIC_ERROR_TYPES:
        return ANTHROPIC_ERROR_TYPES[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def anthropic_validate(headers, body, thoughts=None):
    """Returns (status, message) for a request the real API rejects.
    thoughts: the thinking blocks of the fake's answers that called tools,
    by call id (State.anthropic_thoughts)."""
    if not isinstance(body, dict):
        return 400, "Input should be a valid dictionary"
    if "model" not in body:
        return 400, "model: Field required"
    if not isinstance(body["model"], str) or not body["model"]:
        return 400, "model: Input should be a valid string"
    if "max_tokens" not in body:
        return 400, "max_tokens: Field required"
    mt = body["max_tokens"]
    if isinstance(mt, bool) or not isinstance(mt, int):
        return 400, "max_tokens: Input should be a valid integer"
    if mt < 1:
        return 400, "max_tokens: Input should be greater than or equal to 1"
    if "messages" not in body:
        return 400, "messages: Field required"
    msgs = body["messages"]
    if not isinstance(msgs, list):
        return 400, "messages: Input should be a valid list"
    if not msgs:
        return 400, "messages: at least one message is required"
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if isinstance(budget, bool) or not isinstance(budget, int):
            return 400, "thinking.enabled.budget_tokens: Field required"
        if budget < 1024:
            return 400, ("thinking.enabled.budget_tokens: Input should be greater "
                         "than or equal to 1024")
        if mt <= budget:
            return 400, "`max_tokens` must be greater than `thinking.budget_tokens`"
    for i, tool in enumerate(body.get("tools") or []):
        if isinstance(tool, dict) and "type" not in tool:
            if "name" not in tool:
                return 400, f"tools.{i}.custom.name: Field required"
            if "input_schema" not in tool:
                return 400, f"tools.{i}.custom.input_schema: Field required"
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            return 400, f"messages.{i}: Input should be a valid dictionary"
        if m.get("role") not in ("user", "assistant", "system"):
            return 400, (f"messages.{i}.role: Input should be 'user', 'assistant' "
                         "or 'system'")
        if "content" not in m:
            return 400, f"messages.{i}.content: Field required"
        if not isinstance(m["content"], (str, list)):
            return 400, f"messages.{i}.content: Input should be a valid list"
        if isinstance(m["content"], list):
            for j, block in enumerate(m["content"]):
                if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                    return 400, f"messages.{i}.content.{j}: Input should be a valid dictionary"

    def blocks(m, kind, key):
        if not isinstance(m.get("content"), list):
            return []
        return [b.get(key) for b in m["content"] if b.get("type") == kind]

    for i, m in enumerate(msgs):
        if m["role"] != "assistant" or not isinstance(m["content"], list):
            continue
        for j, block in enumerate(m["content"]):
            if block.get("type") == "thinking" and (
                    not isinstance(block.get("thinking"), str) or
                    block.get("signature") != thinking_signature(block["thinking"])):
                return 400, (f"messages.{i}.content.{j}: Invalid `signature` in "
                             "`thinking` block")
        if isinstance(thinking, dict) and thinking.get("type") == "enabled":
            for call_id in blocks(m, "tool_use", "id"):
                want = (thoughts or {}).get(call_id)
                if want is not None and thought_blocks(m["content"]) != want:
                    return 400, (f"messages.{i}.content: the `thinking` and "
                                 "`redacted_thinking` blocks of an assistant message "
                                 "with `tool_use` must be passed back unmodified and "
                                 "in their original order")

    for i, m in enumerate(msgs):
        if m["role"] == "assistant":
            ids = blocks(m, "tool_use", "id")
            if not ids:
                continue
            nxt = msgs[i + 1] if i + 1 < len(msgs) else None
            answered = set(blocks(nxt, "tool_result", "tool_use_id")) \
                if nxt is not None and nxt["role"] == "user" else set()
            missing = [str(x) for x in ids if x not in answered]
            if missing:
                return 400, (f"messages.{min(i + 1, len(msgs) - 1)}: `tool_use` ids were "
                             "found without `tool_result` blocks immediately after: "
                             f"{', '.join(missing)}. Each `tool_use` block must have a "
                             "corresponding `tool_result` block in the next message.")
        else:
            results = blocks(m, "tool_result", "tool_use_id")
            if not results:
                continue
            prev = msgs[i - 1] if i > 0 else None
            used = set(blocks(prev, "tool_use", "id")) \
                if prev is not None and prev["role"] == "assistant" else set()
            for j, block in enumerate(m["content"]):
                if block.get("type") == "tool_result" and block.get("tool_use_id") not in used:
                    return 400, (f"messages.{i}.content.{j}: unexpected `tool_use_id` found "
                                 f"in `tool_result` blocks: {block.get('tool_use_id')}. Each "
                                 "`tool_result` block must have a corresponding `tool_use` "
                                 "block in the previous message.")
    return None


def anthropic_stop_reason(reply):
    if reply.stop_reason:
        return reply.stop_reason
    return "tool_use" if reply.calls else "end_turn"


def anthropic_message(reply, model, msg_id):
    content = reply.anthropic_content()
    for c in reply.calls:
        content.append({"type": "tool_use", "id": c["id"], "name": c["name"],
                        "input": c["arguments"], "caller": {"type": "direct"}})
    return {"id": msg_id, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": anthropic_stop_reason(reply),
            "stop_sequence": None, "stop_details": None, "container": None,
            "usage": {"input_tokens": reply.input_tokens,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "cache_creation": None, "output_tokens": reply.output_tokens,
                      "server_tool_use": None, "service_tier": "standard"}}


def anthropic_events(reply, model, msg_id):
    """The SSE events of one streamed message: [(event, data-dict)]."""
    ev = []
    start = anthropic_message(reply, model, msg_id)
    start.update(content=[], stop_reason=None, stop_sequence=None)
    start["usage"] = dict(start["usage"], output_tokens=1)
    ev.append(("message_start", {"type": "message_start", "message": start}))
    index = 0
    pinged = False

    def block(first, deltas):
        nonlocal index, pinged
        ev.append(("content_block_start", {"type": "content_block_start",
                                           "index": index, "content_block": first}))
        if not pinged:
            ev.append(("ping", {"type": "ping"}))
            pinged = True
        for d in deltas:
            ev.append(("content_block_delta", {"type": "content_block_delta",
                                               "index": index, "delta": d}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1

    for b in reply.anthropic_content():
        if b["type"] == "thinking":
            deltas = [{"type": "thinking_delta", "thinking": p}
                      for p in split_text(b["thinking"], reply.chunks)]
            deltas.append({"type": "signature_delta", "signature": b["signature"]})
            block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
        elif b["type"] == "redacted_thinking":
            # Redacted thinking comes whole, in its start event.
            block(b, [])
        else:
            block({"type": "text", "text": "", "citations": None},
                  [{"type": "text_delta", "text": p}
                   for p in split_text(b["text"], reply.chunks)])
    for c in reply.calls:
        # The real API opens a tool input with an empty fragment.
        pieces = [""] + split_text(c["json"], reply.chunks)
        block({"type": "tool_use", "id": c["id"], "name": c["name"], "input": {},
               "caller": {"type": "direct"}},
              [{"type": "input_json_delta", "partial_json": p} for p in pieces])
    if not pinged:
        ev.append(("ping", {"type": "ping"}))
    ev.append(("message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": anthropic_stop_reason(reply),
                                           "stop_sequence": None},
                                 "usage": {"output_tokens": reply.output_tokens}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return ev


# --------------------------------------------------------------------------
# OpenAI Chat Completions.

OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def openai_error_type(status):
    if status == 429:
        return "requests", "rate_limit_exceeded"
    if status >= 500:
        return "server_error", None
    return "invalid_request_error", None


def openai_validate(body):
    """Returns (status, message, param, code) for a request the API rejects."""
    if not isinstance(body, dict):
        return 400, "Invalid type for body: expected an object.", None, "invalid_type"
    if "model" not in body or body["model"] in (None, ""):
        return 400, "you must provide a model parameter", None, None
    if not isinstance(body["model"], str):
        return 400, "Invalid type for 'model': expected a string.", "model", "invalid_type"
    if "messages" not in body:
        return (400, "Missing required parameter: 'messages'.", "messages",
                "missing_required_parameter")
    msgs = body["messages"]
    if not isinstance(msgs, list):
        return 400, "Invalid type for 'messages': expected an array.", "messages", "invalid_type"
    if not msgs:
        return (400, "Invalid 'messages': empty array. Expected an array with minimum length "
                "1, but got an empty array instead.", "messages", "empty_array")
    if body.get("stream_options") is not None and not body.get("stream"):
        return (400, "The 'stream_options' parameter is only allowed when 'stream' is "
                "enabled.", "stream_options", None)
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            return (400, f"Invalid type for 'messages[{i}]': expected an object.",
                    f"messages.[{i}]", "invalid_type")
        if m.get("role") not in OPENAI_ROLES:
            return (400, f"Invalid value: '{m.get('role')}'. Supported values are: 'system', "
                    "'assistant', 'user', 'function', 'tool', and 'developer'.",
                    f"messages[{i}].role", "invalid_value")
        if m["role"] == "tool" and not isinstance(m.get("tool_call_id"), str):
            return (400, f"Missing required parameter: 'messages[{i}].tool_call_id'.",
                    f"messages.[{i}].tool_call_id", "missing_required_parameter")
    pending = set()
    i = 0
    while i < len(msgs):
        m = msgs[i]
        if m["role"] == "tool":
            if m["tool_call_id"] not in pending:
                return (400, "Invalid parameter: messages with role 'tool' must be a response "
                        "to a preceeding message with 'tool_calls'.", f"messages.[{i}].role",
                        None)
            pending.discard(m["tool_call_id"])
            i += 1
            continue
        pending = set()
        calls = m.get("tool_calls") if m["role"] == "assistant" else None
        if calls:
            ids = [c.get("id") for c in calls if isinstance(c, dict)]
            answered = set()
            j = i + 1
            while j < len(msgs) and msgs[j]["role"] == "tool":
                answered.add(msgs[j]["tool_call_id"])
                j += 1
            missing = [str(x) for x in ids if x not in answered]
            if missing:
                return (400, "An assistant message with 'tool_calls' must be followed by tool "
                        "messages responding to each 'tool_call_id'. The following "
                        f"tool_call_ids did not have response messages: {', '.join(missing)}",
                        f"messages.[{i + 1 if i + 1 < len(msgs) else i}].role", None)
            pending = set(ids)
        i += 1
    return None


def openai_finish_reason(reply):
    if reply.stop_reason:
        return {"max_tokens": "length", "end_turn": "stop"}.get(reply.stop_reason,
                                                                 reply.stop_reason)
    return "tool_calls" if reply.calls else "stop"


def openai_usage(reply):
    return {"prompt_tokens": reply.input_tokens, "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens}


def openai_completion(reply, model, cid, created):
    message = {"role": "assistant",
               "content": reply.text if (reply.text or not reply.calls) else None,
               "refusal": None, "annotations": []}
    if reply.calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["json"]}} for c in reply.calls]
    return {"id": cid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": openai_finish_reason(reply)}],
            "usage": openai_usage(reply), "system_fingerprint": "fp_fake_llm"}


def openai_chunks(reply, model, cid, created, include_usage):
    """The data payloads of one streamed completion (dicts, then "[DONE]")."""
    out = []

    def chunk(delta, finish=None):
        c = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
             "system_fingerprint": "fp_fake_llm",
             "choices": [{"index": 0, "delta": delta, "logprobs": None,
                          "finish_reason": finish}]}
        if include_usage:
            c["usage"] = None
        out.append(c)

    first = {"role": "assistant", "content": "" if (reply.text or not reply.calls) else None,
             "refusal": None}
    chunk(first)
    for piece in split_text(reply.text or "", reply.chunks):
        chunk({"content": piece})
    for index, c in enumerate(reply.calls):
        chunk({"tool_calls": [{"index": index, "id": c["id"], "type": "function",
                               "function": {"name": c["name"], "arguments": ""}}]})
        for piece in split_text(c["json"], reply.chunks):
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    chunk({}, openai_finish_reason(reply))
    if include_usage:
        out.append({"id": cid, "object": "chat.completion.chunk", "created": created,
                    "model": model, "system_fingerprint": "fp_fake_llm", "choices": [],
                    "usage": openai_usage(reply)})
    out.append("[DONE]")
    return out


# --------------------------------------------------------------------------
# Gemini.

GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                 404: "NOT_FOUND", 409: "ABORTED", 429: "RESOURCE_EXHAUSTED",
                 499: "CANCELLED", 500: "INTERNAL", 501: "NOT_IMPLEMENTED",
                 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def gemini_status(status):
    if status in GEMINI_STATUS:
        return GEMINI_STATUS[status]
    return "INTERNAL" if status >= 500 else "FAILED_PRECONDITION"


def gemini_validate(body):
    """Returns a message for a request the real API rejects (400)."""
    if not isinstance(body, dict):
        return "Invalid JSON payload received. Expected an object."
    contents = body.get("contents")
    if not contents:
        return "* GenerateContentRequest.contents: contents is not specified\n"
    if not isinstance(contents, list):
        return ("Invalid JSON payload received. Unknown name \"contents\": "
                "Proto field is not repeating, cannot start list.")
    for i, c in enumerate(contents):
        if not isinstance(c, dict):
            return f"Invalid value at 'contents[{i}]': expected an object."
        if c.get("role", "user") not in ("user", "model", "function"):
            return "Please use a valid role: user, model."
        if not isinstance(c.get("parts"), list) or not c["parts"]:
            return (f"* GenerateContentRequest.contents[{i}].parts: contents.parts must "
                    "not be empty.\n")
        for part in c["parts"]:
            if not isinstance(part, dict):
                return f"Invalid value at 'contents[{i}].parts': expected an object."

    def names(c, kind):
        return [p[kind].get("name") for p in c["parts"] if isinstance(p.get(kind), dict)]

    for i, c in enumerate(contents):
        calls = names(c, "functionCall") if c.get("role") == "model" else []
        responses = names(c, "functionResponse")
        if responses:
            prev = contents[i - 1] if i > 0 else None
            if prev is None or prev.get("role") != "model" or not names(prev, "functionCall"):
                return ("Please ensure that function response turn comes immediately after "
                        "a function call turn.")
        if not calls:
            continue
        nxt = contents[i + 1] if i + 1 < len(contents) else None
        answers = names(nxt, "functionResponse") if nxt is not None \
            and nxt.get("role", "user") in ("user", "function") else []
        if not answers:
            return ("Please ensure that function call turn comes immediately after a user "
                    "turn or after a function response turn, and that every function call "
                    "is answered by a function response turn.")
        if len(answers) != len(calls):
            return ("Please ensure that the number of function response parts is equal to "
                    "the number of function call parts of the function call turn.")
        if sorted(map(str, answers)) != sorted(map(str, calls)):
            return ("Please ensure that each function response part has the name of a "
                    "function call part of the function call turn. Unanswered: "
                    + ", ".join(sorted(set(map(str, calls)) - set(map(str, answers)))))
    return None


def gemini_usage(reply, final=True):
    u = {"promptTokenCount": reply.input_tokens}
    if final:
        u["candidatesTokenCount"] = reply.output_tokens
        u["totalTokenCount"] = reply.input_tokens + reply.output_tokens
        if reply.thinking is not None:
            u["thoughtsTokenCount"] = approx_tokens(reply.thinking)
    else:
        u["totalTokenCount"] = reply.input_tokens
    return u


def gemini_finish(reply):
    if reply.stop_reason:
        return {"max_tokens": "MAX_TOKENS", "end_turn": "STOP", "tool_use": "STOP"}.get(
            reply.stop_reason, reply.stop_reason)
    return "STOP"


def gemini_call_part(c):
    fc = {"name": c["name"], "args": c["arguments"]}
    if c.get("scripted_id"):
        fc["id"] = c["id"]
    return {"functionCall": fc}


def gemini_parts(reply):
    """All parts of the answer, in order, with the thought signature placed."""
    parts = []
    if reply.thinking is not None:
        parts.append({"text": reply.thinking, "thought": True})
    if reply.text or not reply.calls:
        parts.append({"text": reply.text or ""})
    for c in reply.calls:
        parts.append(gemini_call_part(c))
    sig = reply.turn.get("thought_signature")
    if sig:
        target = next((p for p in parts if "functionCall" in p), parts[-1])
        target["thoughtSignature"] = sig
    return parts


def gemini_response(reply, model, rid, parts, final):
    cand = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if final:
        cand["finishReason"] = gemini_finish(reply)
    return {"candidates": [cand], "usageMetadata": gemini_usage(reply, final),
            "modelVersion": model, "responseId": rid}


def gemini_stream(reply, model, rid):
    """The GenerateContentResponse objects of one stream: text split across them."""
    groups = []
    if reply.thinking is not None:
        groups += [[{"text": p, "thought": True}]
                   for p in split_text(reply.thinking, reply.chunks)]
    groups += [[{"text": p}] for p in split_text(reply.text or "", reply.chunks)]
    if reply.calls:
        groups.append([gemini_call_part(c) for c in reply.calls])
    if not groups:
        groups.append([{"text": ""}])
    sig = reply.turn.get("thought_signature")
    if sig:
        target = next((p for g in groups for p in g if "functionCall" in p), groups[-1][-1])
        target["thoughtSignature"] = sig
    return [gemini_response(reply, model, rid, g, i == len(groups) - 1)
            for i, g in enumerate(groups)]


# --------------------------------------------------------------------------
# The HTTP side.

def redact_path(path):
    parts = urlsplit(path)
    if not parts.query:
        return path
    q = [(k, REDACTED if k == "key" else v) for k, v in parse_qsl(parts.query, True)]
    return parts.path + "?" + urlencode(q, safe="()")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-llm/1"

    def version_string(self):
        return self.server_version

    # ---- plumbing --------------------------------------------------------

    def log_message(self, fmt, *args):  # http.server's own lines: silenced
        pass

    def log_line(self, status, note=""):
        sys.stderr.write(f"fake-llm: {self.command} {redact_path(self.path)} -> {status}"
                         f"{' ' + note if note else ''}\n")
        sys.stderr.flush()

    def handle_one_request(self):
        try:
            super().handle_one_request()
        except ClientGone:
            self.close_connection = True
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError,
                socket.timeout, TimeoutError):
            self.close_connection = True

    def read_body(self):
        """The raw request body (Content-Length or chunked)."""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            data = b""
            while True:
                line = self.rfile.readline(1024)
                if not line:
                    raise ClientGone()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline(1024)
                if len(data) > MAX_BODY:
                    raise ClientGone()
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY:
            raise ClientGone()
        data = self.rfile.read(length) if length else b""
        if len(data) < length:
            raise ClientGone()
        return data

    def header_log(self):
        out = {}
        for k, v in self.headers.items():
            k = k.lower()
            if k in SECRET_HEADERS:
                v = REDACTED
            out[k] = v if k not in out else out[k] + ", " + v
        return out

    def send_json(self, status, obj, extra=None, note=""):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()
        self.log_line(status, note)
        return status

    def start_stream(self, extra=None, content_type="text/event-stream; charset=utf-8"):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()

    def write_chunk(self, data):
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        except OSError as e:
            raise ClientGone() from e

    def end_chunks(self):
        self.write_chunk(b"")

    def drop_connection(self):
        """Closes the socket at once: the answer stays unfinished."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def hang(self):
        """Sends nothing more until the peer goes away (or 60 s pass)."""
        deadline = time.monotonic() + HANG_MAX_SECONDS
        state = self.server.state
        while time.monotonic() < deadline and not state.stopping.is_set():
            r, _, _ = select.select([self.connection], [], [], 0.2)
            if r:
                try:
                    if not self.connection.recv(4096, socket.MSG_PEEK):
                        break
                except OSError:
                    break
                time.sleep(0.05)
        self.drop_connection()

    def pace(self, turn, index):
        delay = turn.get("delay_ms", 0)
        if delay and index > 0:
            time.sleep(delay / 1000.0)

    def send_events(self, turn, payloads):
        """Streams encoded SSE events, applying truncate/malformed/delay_ms."""
        n = len(payloads)
        stop_at = max(1, n // 2) if turn.get("truncate") else n
        for i, data in enumerate(payloads[:stop_at]):
            self.pace(turn, i)
            self.write_chunk(data)
        if turn.get("truncate"):
            self.drop_connection()
            return "truncated"
        self.end_chunks()
        return ""

    # ---- dispatch --------------------------------------------------------

    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    def send_response(self, code, message=None):
        # The log entry gets its status before the client can see the answer.
        if getattr(self, "entry", None) is not None:
            self.entry["status"] = code
        super().send_response(code, message)

    def dispatch(self):
        self.entry = None
        body = self.read_body()
        path = urlsplit(self.path).path
        if path.startswith("/_fake/"):
            return self.control(path, body)
        api = None
        if path == "/v1/messages":
            api = "anthropic"
        elif path == "/v1/chat/completions":
            api = "openai"
        elif GEMINI_PATH.match(path):
            api = "gemini"
        elif path == "/v1/models" or path.startswith("/v1/models/"):
            return self.models(path)
        if api is None or self.command != "POST":
            return self.not_found(path)
        entry = {"api": api, "path": redact_path(self.path), "headers": self.header_log(),
                 "body": None, "stream": False, "status": None, "ts": time.time()}
        try:
            entry["body"] = json.loads(body) if body else None
            parsed = True
        except ValueError:
            entry["body"] = body.decode("utf-8", "replace")
            parsed = False
        self.entry = entry
        self.server.state.record(entry)
        handler = {"anthropic": self.anthropic, "openai": self.openai,
                   "gemini": self.gemini}[api]
        handler(entry, parsed)

    def not_found(self, path):
        if path.startswith("/v1beta/") or path.startswith("/v1alpha/"):
            return self.send_json(404, {"error": {"code": 404, "message": (
                f"Requested entity was not found: {path}"), "status": "NOT_FOUND"}})
        if "anthropic-version" in self.headers or "x-api-key" in self.headers:
            return self.send_json(404, {"type": "error", "error": {
                "type": "not_found_error", "message": "Not Found"}})
        return self.send_json(404, {"error": {
            "message": f"Invalid URL ({self.command} {path})",
            "type": "invalid_request_error", "param": None, "code": None}})

    def models(self, path):
        """GET /v1/models: OpenAI's list, or Anthropic's when asked like Anthropic."""
        if self.command != "GET":
            return self.not_found(path)
        now = int(time.time())
        if "anthropic-version" in self.headers:
            if not self.anthropic_authorized():
                return self.anthropic_error(401, "x-api-key header is required")
            data = [{"type": "model", "id": "claude-fake-1", "display_name": "Fake Claude",
                     "created_at": "2025-01-01T00:00:00Z"}]
            return self.send_json(200, {"data": data, "has_more": False,
                                        "first_id": data[0]["id"], "last_id": data[0]["id"]})
        if not self.openai_authorized():
            return self.openai_auth_error()
        data = [{"id": mid, "object": "model", "created": now, "owned_by": "fake-llm"}
                for mid in ("gpt-fake-1", "gpt-fake-mini")]
        if path != "/v1/models":
            mid = path[len("/v1/models/"):]
            return self.send_json(200, {"id": mid, "object": "model", "created": now,
                                        "owned_by": "fake-llm"})
        return self.send_json(200, {"object": "list", "data": data})

    def control(self, path, body):
        state = self.server.state
        if path == "/_fake/requests" and self.command == "GET":
            with state.lock:
                reqs = list(state.requests)
            return self.send_json(200, {"requests": reqs})
        if path == "/_fake/script" and self.command == "GET":
            with state.lock:
                turns = list(state.turns)
            return self.send_json(200, {"turns": turns})
        if path == "/_fake/reset" and self.command == "POST":
            with state.lock:
                state.turns.clear()
                state.requests.clear()
                state.anthropic_thoughts.clear()
            return self.send_json(200, {"ok": True})
        if path == "/_fake/script" and self.command == "POST":
            try:
                doc = json.loads(body)
            except ValueError as e:
                return self.send_json(400, {"error": f"the script is not JSON: {e}"})
            turns, err = check_script(doc)
            if err:
                return self.send_json(400, {"error": err})
            with state.lock:
                if not doc.get("append"):
                    state.turns.clear()
                state.turns.extend(turns)
                queued = len(state.turns)
            return self.send_json(200, {"ok": True, "queued": queued})
        return self.send_json(404, {"error": f"no control endpoint {self.command} {path}"})

    # ---- turns -----------------------------------------------------------

    def take_turn(self):
        turn = self.server.state.pop_turn()
        return turn if turn is not None else {"text": NO_TURN_TEXT}

    def prelude(self, turn, stream, error_cb, content_type):
        """Handles a turn's error, hang and non-stream delay. Returns a
        status when the answer is complete, None to go on rendering."""
        if "status" in turn:
            self.pace(turn, 1)
            extra = {}
            if "retry_after" in turn:
                ra = turn["retry_after"]
                extra["Retry-After"] = str(int(ra) if float(ra).is_integer() else ra)
            return error_cb(turn["status"], turn.get("error_message"), extra)
        if turn.get("hang"):
            if stream:
                self.start_stream(content_type=content_type)
            else:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
            self.log_line(200, "hang")
            self.hang()
            return 200
        if not stream:
            self.pace(turn, 1)
        return None

    def send_document(self, turn, obj, extra=None):
        """A non-streamed answer, honouring malformed and truncate."""
        data = json.dumps(obj).encode()
        body = malformed(data) if turn.get("malformed") else data
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data) if turn.get("truncate")
                                               else len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if turn.get("truncate"):
            self.wfile.write(body[:len(body) // 2])
            self.drop_connection()
            self.log_line(200, "truncated")
        else:
            self.wfile.write(body)
            self.log_line(200, "malformed" if turn.get("malformed") else "")
        return 200

    def malform_one(self, turn, payloads, pick):
        """Replaces one data line (chosen by pick) with invalid JSON."""
        out = [good for good, _ in payloads]
        if turn.get("malformed") and payloads:
            i = pick(len(payloads))
            out[i] = payloads[i][1]
        return out

    # ---- Anthropic -------------------------------------------------------

    def anthropic_error(self, status, message, extra=None):
        rid = f"req_fake_{self.server.state.next_id()}"
        return self.send_json(status, {"type": "error", "error": {
            "type": anthropic_error_type(status), "message": message or
            f"fake-llm: scripted HTTP {status}"}, "request_id": rid},
            dict(extra or {}, **{"request-id": rid}))

    def anthropic_authorized(self):
        """An API key in x-api-key, or (as @anthropic-ai/sdk 1.x sends it)
        in Authorization: Bearer."""
        auth = self.headers.get("authorization", "")
        return bool(self.headers.get("x-api-key", "").strip()) or (
            auth.startswith("Bearer ") and auth[7:].strip() != "")

    def anthropic(self, entry, parsed):
        if not self.anthropic_authorized():
            return self.anthropic_error(401, "x-api-key header is required")
        version = self.headers.get("anthropic-version")
        if not version:
            return self.anthropic_error(400, "anthropic-version: header is required")
        if version not in ANTHROPIC_VERSIONS:
            return self.anthropic_error(400, f"anthropic-version: invalid version '{version}'")
        if not parsed:
            return self.anthropic_error(400, "There was an issue with your request body: "
                                        "it is not valid JSON")
        body = entry["body"]
        with self.server.state.lock:
            thoughts = dict(self.server.state.anthropic_thoughts)
        err = anthropic_validate(self.headers, body, thoughts)
        if err:
            return self.anthropic_error(*err)
        stream = body.get("stream") is True
        entry["stream"] = stream
        turn = self.take_turn()
        done = self.prelude(turn, stream, self.anthropic_error, "text/event-stream")
        if done is not None:
            return done
        n = self.server.state.next_id()
        reply = Reply(turn, self.server.state, "toolu_fake_", body)
        msg_id = f"msg_fake_{n}"
        kept = thought_blocks(reply.anthropic_content())
        if reply.calls and kept:
            with self.server.state.lock:
                for c in reply.calls:
                    self.server.state.anthropic_thoughts[c["id"]] = kept
        rid = {"request-id": f"req_fake_{n}"}
        if not stream:
            return self.send_document(turn, anthropic_message(reply, body["model"], msg_id), rid)
        events = anthropic_events(reply, body["model"], msg_id)
        payloads = []
        for name, data in events:
            text = dumps(data)
            payloads.append((f"event: {name}\ndata: {text}\n\n".encode(),
                             f"event: {name}\ndata: {malformed(text)}\n\n".encode()))
        deltas = [i for i, (name, _) in enumerate(events) if name == "content_block_delta"]
        payloads = self.malform_one(
            turn, payloads, lambda n_: deltas[len(deltas) // 2] if deltas else n_ // 2)
        self.start_stream(rid)
        note = self.send_events(turn, payloads)
        self.log_line(200, " ".join(x for x in ("stream", note) if x))
        return 200

    # ---- OpenAI ----------------------------------------------------------

    def openai_authorized(self):
        auth = self.headers.get("authorization", "")
        return auth.startswith("Bearer ") and auth[7:].strip() != ""

    def openai_auth_error(self):
        return self.send_json(401, {"error": {
            "message": "You didn't provide an API key. You need to provide your API key in "
                       "an Authorization header using Bearer auth (i.e. Authorization: "
                       "Bearer YOUR_KEY).",
            "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}})

    def openai_error(self, status, message, extra=None, param=None, code=None):
        etype, default_code = openai_error_type(status)
        rid = f"req_fake_{self.server.state.next_id()}"
        return self.send_json(status, {"error": {
            "message": message or f"fake-llm: scripted HTTP {status}", "type": etype,
            "param": param, "code": code or (default_code if status == 429 else code)}},
            dict(extra or {}, **{"x-request-id": rid}))

    def openai(self, entry, parsed):
        if not self.openai_authorized():
            return self.openai_auth_error()
        if not parsed:
            return self.openai_error(
                400, "We could not parse the JSON body of your request. (HINT: This likely "
                "means you aren't using your HTTP library correctly. The OpenAI API expects a "
                "JSON payload, but what was sent was not valid JSON.)")
        body = entry["body"]
        err = openai_validate(body)
        if err:
            status, message, param, code = err
            return self.openai_error(status, message, param=param, code=code)
        stream = body.get("stream") is True
        entry["stream"] = stream
        turn = self.take_turn()
        done = self.prelude(turn, stream, self.openai_error, "text/event-stream")
        if done is not None:
            return done
        n = self.server.state.next_id()
        reply = Reply(turn, self.server.state, "call_fake_", body)
        cid = f"chatcmpl-fake{n}"
        created = int(time.time())
        rid = {"x-request-id": f"req_fake_{n}"}
        if not stream:
            return self.send_document(turn, openai_completion(reply, body["model"], cid,
                                                              created), rid)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        payloads = []
        for c in openai_chunks(reply, body["model"], cid, created, include_usage):
            text = c if isinstance(c, str) else dumps(c)
            payloads.append((f"data: {text}\n\n".encode(),
                             f"data: {malformed(text)}\n\n".encode()))
        payloads = self.malform_one(turn, payloads, lambda n_: max(1, (n_ - 1) // 2))
        self.start_stream(rid)
        note = self.send_events(turn, payloads)
        self.log_line(200, " ".join(x for x in ("stream", note) if x))
        return 200

    # ---- Gemini ----------------------------------------------------------

    def gemini_error(self, status, message, extra=None):
        return self.send_json(status, {"error": {
            "code": status, "message": message or f"fake-llm: scripted HTTP {status}",
            "status": gemini_status(status)}}, extra)

    def gemini(self, entry, parsed):
        match = GEMINI_PATH.match(urlsplit(self.path).path)
        model, method = match.group(2), match.group(3)
        query = dict(parse_qsl(urlsplit(self.path).query, True))
        key = self.headers.get("x-goog-api-key")
        if key is None:
            key = query.get("key")
        if key is None:
            return self.gemini_error(
                403, "Method doesn't allow unregistered callers (callers without established "
                "identity). Please use API Key or other form of API consumer identity to "
                "call this API.")
        if not key.strip():
            return self.send_json(400, {"error": {
                "code": 400, "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                             "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}})
        if not parsed:
            return self.gemini_error(400, "Invalid JSON payload received. Unexpected token.")
        body = entry["body"]
        err = gemini_validate(body)
        if err:
            return self.gemini_error(400, err)
        stream = method == "streamGenerateContent"
        sse = query.get("alt") == "sse"
        entry["stream"] = stream
        turn = self.take_turn()
        done = self.prelude(turn, stream, self.gemini_error,
                            "text/event-stream" if sse else "application/json")
        if done is not None:
            return done
        reply = Reply(turn, self.server.state, "fc_fake_", body)
        # Gemini's function calls carry an id only when the script gives one.
        for c, orig in zip(reply.calls, turn.get("tool_calls", [])):
            c["scripted_id"] = bool(orig.get("id"))
        rid = f"fake{self.server.state.next_id()}"
        if not stream:
            return self.send_document(
                turn, gemini_response(reply, model, rid, gemini_parts(reply), True))
        responses = gemini_stream(reply, model, rid)
        if sse:
            payloads = [(f"data: {json.dumps(r)}\r\n\r\n".encode(),
                         f"data: {malformed(json.dumps(r))}\r\n\r\n".encode())
                        for r in responses]
            content_type = "text/event-stream"
        else:
            # Without alt=sse the stream is one JSON array, written piecewise.
            last = len(responses) - 1
            payloads = [((("[" if i == 0 else "") + json.dumps(r)
                          + ("]" if i == last else ",\r\n")).encode(),
                         (("[" if i == 0 else "") + malformed(json.dumps(r))
                          + ("]" if i == last else ",\r\n")).encode())
                        for i, r in enumerate(responses)]
            content_type = "application/json; charset=UTF-8"
        payloads = self.malform_one(turn, payloads, lambda n_: n_ // 2)
        self.start_stream(content_type=content_type)
        note = self.send_events(turn, payloads)
        self.log_line(200, " ".join(x for x in ("stream", note) if x))
        return 200


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False

    def __init__(self, addr, handler, state):
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        self.state = state
        super().__init__(addr, handler)

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (OSError, ClientGone)):
            return
        sys.stderr.write(f"fake-llm: internal error: {exc!r}\n")
        import traceback
        traceback.print_exc(file=sys.stderr)


def main(argv=None):
    ap = argparse.ArgumentParser(description="A scripted fake LLM provider for tests.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--script", help="a JSON file {\"turns\": [...]} to preload")
    args = ap.parse_args(argv)

    state = State()
    if args.script:
        try:
            with open(args.script, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            sys.stderr.write(f"fake-llm: cannot read {args.script}: {e}\n")
            return 2
        turns, err = check_script(doc)
        if err:
            sys.stderr.write(f"fake-llm: {args.script}: {err}\n")
            return 2
        state.turns.extend(turns)

    try:
        server = Server((args.host, args.port), Handler, state)
    except OSError as e:
        sys.stderr.write(f"fake-llm: cannot listen on {args.host}:{args.port}: {e}\n")
        return 2

    def stop(signum, frame):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    port = server.server_address[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    sys.stdout.write(f"fake-llm listening on http://{host}:{port}\n")
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        state.stopping.set()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
