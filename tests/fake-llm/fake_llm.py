#!/usr/bin/env python3
"""fake-llm: a scripted LLM provider on loopback, for tests.

It speaks the wire protocols of three real APIs, on their real paths:

  Anthropic Messages        POST /v1/messages
  OpenAI Chat Completions   POST /v1/chat/completions, GET /v1/models
  Gemini (Google AI)        POST /v1beta/models/{model}:generateContent
                            POST /v1beta/models/{model}:streamGenerateContent

Every provider request that passes validation takes the next scripted TURN
from one queue and renders it in the format of the API that was asked, both
streamed (SSE) and not. A request the real API refuses (fake_rules.py: keys,
headers, fields, tool schemas, message rules, images, sizes, context windows,
per-model limits) is refused with the real status and error body, without
taking a turn. Everything received is recorded, secrets redacted.

Control endpoints (no auth):
  POST /_fake/script    {"turns": [TURN, ...], "append": false}
  GET  /_fake/script    {"turns": [the turns still queued]}
  POST /_fake/reset     clears the queue and the request log (not the models)
  GET  /_fake/requests  {"requests": [{api, path, model, headers, body, stream,
                         status, error, ts}, ...]}
  POST /_fake/models    {"models": {NAME: {"context": N, "max_output": M, ...}},
                         "reset_models": false}
  GET  /_fake/models    {"models": {the overrides}, "table": {the built-in table}}

tests/fake-llm/README.md documents the TURN format and every rule. Standard
library only:
    python3 fake_llm.py --port 0 [--host 127.0.0.1] [--script FILE] [--capture DIR]
prints "fake-llm listening on http://HOST:PORT" once it accepts
connections, logs one line per request to stderr, and exits 0 on SIGTERM or
SIGINT. Offline:
    python3 fake_llm.py --validate FILE_OR_DIR...     (captured requests)
    python3 fake_llm.py --check-tools API FILE [--model M]
"""

import argparse
import json
import os
import re
import select
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlencode, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_rules as rules  # noqa: E402 - the sibling module, found via sys.path
from fake_rules import (  # noqa: E402,F401 - re-exported: fake_llm.validate() etc.
    ANTHROPIC_VERSIONS, GEMINI_PATH, Refusal, anthropic_error_type, estimate_tokens,
    gemini_status, model_info, openai_error_type, thinking_signature, thought_blocks,
    validate)

NO_TURN_TEXT = "fake-llm: no scripted turn left"
DEFAULT_CHUNKS = 3
HANG_MAX_SECONDS = 60.0
REDACTED = "(redacted)"
SECRET_HEADERS = ("x-api-key", "authorization", "x-goog-api-key", "api-key",
                  "proxy-authorization", "cookie")
MAX_BODY = 64 * 1024 * 1024


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
    "stream_error": str, "stream_error_after_text": bool, "cut_last_call": bool,
    "refusal": str, "finish_message": str, "prompt_blocked": str, "thoughts_tokens": int,
    "match": str, "image": dict,
}
IMAGE_KEYS = {"data": str, "mime": str, "width": int, "height": int,
              "color": list, "none": bool}

# Every stop reason of the three APIs; a turn may name any of them and each
# API renders its own equivalent (STOP_MAP).
STOP_REASONS = {
    "end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn",
    "model_context_window_exceeded",
    "stop", "length", "tool_calls", "content_filter",
    "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "MALFORMED_FUNCTION_CALL", "OTHER",
    "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "LANGUAGE", "IMAGE_SAFETY",
    "UNEXPECTED_TOOL_CALL", "FINISH_REASON_UNSPECIFIED",
}
_POLICY = ("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY")
STOP_MAP = {
    "anthropic": dict({"length": "max_tokens", "MAX_TOKENS": "max_tokens",
                       "model_context_window_exceeded": "model_context_window_exceeded",
                       "stop": "end_turn", "STOP": "end_turn", "tool_calls": "tool_use",
                       "content_filter": "refusal"}, **{p: "refusal" for p in _POLICY}),
    "openai": dict({"max_tokens": "length", "MAX_TOKENS": "length",
                    "model_context_window_exceeded": "length",
                    "end_turn": "stop", "STOP": "stop", "stop_sequence": "stop",
                    "pause_turn": "stop", "tool_use": "tool_calls", "refusal": "content_filter"},
                   **{p: "content_filter" for p in _POLICY}),
    "gemini": {"max_tokens": "MAX_TOKENS", "length": "MAX_TOKENS",
               "model_context_window_exceeded": "MAX_TOKENS",
               "end_turn": "STOP", "stop": "STOP", "stop_sequence": "STOP",
               "pause_turn": "STOP", "tool_use": "STOP", "tool_calls": "STOP",
               "refusal": "SAFETY", "content_filter": "SAFETY"},
}
# Stop reasons that end an answer for want of output tokens: a tool call in
# progress is cut there (cut_last_call).
TRUNCATING = ("max_tokens", "length", "MAX_TOKENS", "model_context_window_exceeded")
PROMPT_BLOCK_REASONS = ("SAFETY", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT", "IMAGE_SAFETY")


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
    if "match" in turn:
        try:
            re.compile(turn["match"])
        except re.error as e:
            return f"{where}.match: not a regular expression ({e})"
    if "chunks" in turn and turn["chunks"] < 1:
        return f"{where}.chunks: must be at least 1"
    if "status" in turn and not 400 <= turn["status"] <= 599:
        return f"{where}.status: must be an HTTP error status (400-599)"
    if "stop_reason" in turn and turn["stop_reason"] not in STOP_REASONS:
        return (f"{where}.stop_reason: unknown {turn['stop_reason']!r} (one of "
                f"{', '.join(sorted(STOP_REASONS))})")
    if "prompt_blocked" in turn and turn["prompt_blocked"] not in PROMPT_BLOCK_REASONS:
        return f"{where}.prompt_blocked: one of {', '.join(PROMPT_BLOCK_REASONS)}"
    for key, value in (turn.get("image") or {}).items():
        if key not in IMAGE_KEYS or not isinstance(value, IMAGE_KEYS[key]) or (
                isinstance(value, bool) and IMAGE_KEYS[key] is not bool):
            return f"{where}.image.{key}: unknown or wrong type"
    if turn.get("thoughts_tokens", 0) < 0:
        return f"{where}.thoughts_tokens: must be at least 0"
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
    def __init__(self, capture_dir=None):
        self.lock = threading.Lock()
        self.turns = []
        self.requests = []
        self.counter = 0
        # Anthropic: the thinking and redacted_thinking blocks of each
        # answer that called tools, by the calls' ids, to check that they
        # come back unmodified and in order, as the real API does.
        self.anthropic_thoughts = {}
        # Test models (POST /_fake/models), by exact name; kept across resets.
        self.models = {}
        self.capture_dir = capture_dir
        self.captured = 0
        self.stopping = threading.Event()

    def next_id(self):
        with self.lock:
            self.counter += 1
            return self.counter

    def pop_turn(self, said=""):
        """The first queued turn this request may take: one whose "match"
        (a regular expression) is found in the request's last user words,
        or one without "match". A turn with "match" waits for its request,
        so a test can script an answer for a request it cannot time (the
        daemon's own summary call, say)."""
        with self.lock:
            for i, turn in enumerate(self.turns):
                if "match" not in turn or re.search(turn["match"], said):
                    return self.turns.pop(i)
        return None

    def record(self, entry):
        with self.lock:
            self.requests.append(entry)

    def capture(self, entry):
        """Writes one request as DIR/<counter>-<api>.json (--capture)."""
        if not self.capture_dir:
            return
        with self.lock:
            self.captured += 1
            n = self.captured
        doc = {k: entry.get(k) for k in ("api", "path", "model", "headers", "body", "status",
                                         "error", "size")}
        name = os.path.join(self.capture_dir, f"{n:04d}-{entry['api']}.json")
        try:
            with open(name + ".tmp", "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1)
            os.replace(name + ".tmp", name)
        except OSError as e:
            sys.stderr.write(f"fake-llm: cannot write {name}: {e}\n")


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

    def __init__(self, turn, state, id_prefix, request_body, api):
        self.turn = turn
        self.api = api
        self.image_out = False  # set by the Gemini handler for image models
        self.chunks = turn.get("chunks", DEFAULT_CHUNKS)
        self.thinking = turn.get("thinking")
        self.text = turn.get("text")
        self.refusal = turn.get("refusal")
        self.calls = []
        for call in turn.get("tool_calls", []):
            call_id = call.get("id") or f"{id_prefix}{state.next_id()}"
            args = call.get("arguments", {})
            self.calls.append({"id": call_id, "name": call["name"], "arguments": args,
                               "json": json.dumps(args, separators=(",", ":")),
                               "scripted_id": bool(call.get("id"))})
        if self.text is None and not self.calls and self.thinking is None and \
                self.refusal is None:
            self.text = ""
        usage = turn.get("usage", {})
        produced = (self.text or "") + (self.thinking or "") + (self.refusal or "") + "".join(
            c["name"] + c["json"] for c in self.calls)
        self.input_tokens = usage.get("input", estimate_tokens(api, request_body))
        self.output_tokens = usage.get("output", approx_tokens(produced))
        raw = turn.get("stop_reason")
        self.stop_reason = STOP_MAP[api].get(raw, raw) if raw else None
        # A truncated answer ends in the middle of its last tool call's
        # arguments, as a real one does, unless the turn says otherwise.
        self.cut = bool(self.calls) and raw in TRUNCATING and turn.get("cut_last_call", True)
        if self.cut:
            last = self.calls[-1]
            last["cut"] = True
            last["json"] = last["json"][:max(1, len(last["json"]) // 2)]
        self.stream_error = turn.get("stream_error")
        self.error_after_text = turn.get("stream_error_after_text", False)
        # Hidden thinking (thoughts_tokens): set by the API that has it.
        self.thoughts = 0
        self.starved = False

    def spend_thoughts(self, thoughts, limit):
        """Thought tokens count against the output limit: past it the answer
        is empty (the real silent failure of G-MAXTOK-THINKING)."""
        self.thoughts = thoughts
        if limit is not None and thoughts and thoughts + self.output_tokens > limit:
            self.starved = True
            self.thoughts = min(thoughts, limit)

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
        text = self.text if self.text is not None else self.refusal
        if text is not None and (text or not self.calls):
            blocks.append({"type": "text", "text": text, "citations": None})
        return blocks


def last_user_text(body):
    """The text of the last user message of a request, in any of the three
    formats ("" when there is none)."""
    if not isinstance(body, dict):
        return ""
    msgs = body.get("messages") or body.get("contents") or []
    for m in reversed(msgs if isinstance(msgs, list) else []):
        if not isinstance(m, dict) or m.get("role") not in ("user", None):
            continue
        items = m.get("content", m.get("parts"))
        if isinstance(items, str):
            return items
        texts = [b.get("text") for b in items or [] if isinstance(b, dict) and
                 isinstance(b.get("text"), str)]
        if texts:
            return "\n".join(texts)
    return ""


def dumps(obj):
    """Compact JSON, as Anthropic and OpenAI send it."""
    return json.dumps(obj, separators=(",", ":"))


def malformed(data):
    """A data line that is not JSON: the real one cut in the middle."""
    return data[:max(1, len(data) // 2)]


# --------------------------------------------------------------------------
# Anthropic Messages.

# The error event of stream_error, and the HTTP status the same failure has
# on an unstreamed request.
ANTHROPIC_STREAM_ERRORS = {"overloaded_error": (529, "Overloaded"),
                           "api_error": (500, "Internal server error"),
                           "rate_limit_error": (429, "Rate limited"),
                           "timeout_error": (504, "Request timed out"),
                           "invalid_request_error": (400, "Invalid request"),
                           "authentication_error": (401, "Invalid API key"),
                           "permission_error": (403, "Permission denied"),
                           "not_found_error": (404, "Not found"),
                           "request_too_large": (413, "Request exceeds the maximum size"),
                           "billing_error": (402, "Billing error")}


def anthropic_stream_error(reply):
    """(status, type, message) of the turn's stream_error."""
    status, message = ANTHROPIC_STREAM_ERRORS.get(reply.stream_error, (500, None))
    return status, reply.stream_error, reply.turn.get("error_message") or message or \
        f"fake-llm: scripted {reply.stream_error}"


def anthropic_stop_reason(reply):
    if reply.stop_reason:
        return reply.stop_reason
    if reply.refusal is not None:
        return "refusal"
    return "tool_use" if reply.calls else "end_turn"


def anthropic_message(reply, model, msg_id):
    content = reply.anthropic_content()
    for c in reply.calls:
        # An unstreamed answer cut inside a tool call carries what parsed of
        # its input: nothing (likely).
        content.append({"type": "tool_use", "id": c["id"], "name": c["name"],
                        "input": {} if c.get("cut") else c["arguments"],
                        "caller": {"type": "direct"}})
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

    def block(first, deltas, stop=True):
        nonlocal index, pinged
        ev.append(("content_block_start", {"type": "content_block_start",
                                           "index": index, "content_block": first}))
        if not pinged:
            ev.append(("ping", {"type": "ping"}))
            pinged = True
        for d in deltas:
            ev.append(("content_block_delta", {"type": "content_block_delta",
                                               "index": index, "delta": d}))
        if stop:
            ev.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1

    if reply.stream_error:
        # HTTP 200 and message_start, then an error event and the end of the
        # stream (docker/docker-agent#2880); with stream_error_after_text,
        # the first half of the text streams first.
        text = reply.text or ""
        if reply.error_after_text and text:
            pieces = split_text(text, max(2, reply.chunks))
            block({"type": "text", "text": "", "citations": None},
                  [{"type": "text_delta", "text": p}
                   for p in pieces[:max(1, len(pieces) // 2)]], stop=False)
        _, etype, message = anthropic_stream_error(reply)
        ev.append(("error", {"type": "error", "error": {"type": etype, "message": message}}))
        return ev

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

OPENAI_SERVER_ERROR = ("The server had an error while processing your request. Sorry about "
                       "that!")


def openai_stream_error(reply):
    """The error object of the turn's stream_error (a server_error)."""
    return {"message": reply.turn.get("error_message") or OPENAI_SERVER_ERROR,
            "type": "server_error", "param": None, "code": None}


def openai_finish_reason(reply):
    if reply.starved:
        return "length"
    if reply.stop_reason:
        return reply.stop_reason
    return "tool_calls" if reply.calls else "stop"


def openai_usage(reply):
    completion = reply.output_tokens + reply.thoughts
    if reply.starved:
        completion = reply.thoughts
    u = {"prompt_tokens": reply.input_tokens, "completion_tokens": completion,
         "total_tokens": reply.input_tokens + completion}
    if reply.thoughts:
        u["completion_tokens_details"] = {"reasoning_tokens": reply.thoughts}
    return u


def openai_content(reply):
    """The answer's content: null beside a refusal or with only tool calls;
    empty when the reasoning spent every output token."""
    if reply.starved:
        return ""
    if reply.refusal is not None:
        return reply.text or None
    return reply.text if (reply.text or not reply.calls) else None


def openai_completion(reply, model, cid, created):
    calls = [] if reply.starved else reply.calls
    message = {"role": "assistant", "content": openai_content(reply),
               "refusal": None if reply.starved else reply.refusal, "annotations": []}
    if calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["json"]}} for c in calls]
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

    content = openai_content(reply)
    chunk({"role": "assistant", "content": "" if content is not None else None,
           "refusal": None})
    if reply.stream_error:
        # After the first chunk, an error object and the end of the stream.
        if reply.error_after_text and reply.text:
            pieces = split_text(reply.text, max(2, reply.chunks))
            for piece in pieces[:max(1, len(pieces) // 2)]:
                chunk({"content": piece})
        out.append({"error": openai_stream_error(reply)})
        return out
    if not reply.starved:
        for piece in split_text(reply.text or "", reply.chunks):
            chunk({"content": piece})
        for piece in split_text(reply.refusal or "", reply.chunks):
            chunk({"refusal": piece})
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

GEMINI_OVERLOADED = "The model is overloaded. Please try again later."
# Finish reasons after which a candidate carries no content when the turn
# gives none (a blocked or failed answer has no parts at all).
GEMINI_CONTENTLESS = ("SAFETY", "RECITATION", "MALFORMED_FUNCTION_CALL", "BLOCKLIST",
                      "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "UNEXPECTED_TOOL_CALL",
                      "OTHER")


def gemini_stream_error(reply):
    return {"code": 503, "message": reply.turn.get("error_message") or GEMINI_OVERLOADED,
            "status": "UNAVAILABLE"}


def gemini_usage(reply, final=True):
    u = {"promptTokenCount": reply.input_tokens}
    thoughts = reply.thoughts + (approx_tokens(reply.thinking) if reply.thinking else 0)
    if reply.starved:
        # No candidatesTokenCount: nothing was answered.
        u["totalTokenCount"] = reply.input_tokens + reply.thoughts
        u["thoughtsTokenCount"] = reply.thoughts
    elif final:
        u["candidatesTokenCount"] = reply.output_tokens
        u["totalTokenCount"] = reply.input_tokens + reply.output_tokens + reply.thoughts
        if thoughts:
            u["thoughtsTokenCount"] = thoughts
    else:
        u["totalTokenCount"] = reply.input_tokens
    return u


def gemini_finish(reply):
    if reply.starved:
        return "MAX_TOKENS"
    if reply.stop_reason:
        return reply.stop_reason
    if reply.refusal is not None:
        return "SAFETY"
    return "STOP"


def gemini_calls(reply):
    """The calls rendered: a call cut by max tokens is not sent at all."""
    return [c for c in reply.calls if not c.get("cut")]


def gemini_call_part(c):
    fc = {"name": c["name"], "args": c["arguments"]}
    if c.get("scripted_id"):
        fc["id"] = c["id"]
    return {"functionCall": fc}


def gemini_contentless(reply):
    return reply.starved or (gemini_finish(reply) in GEMINI_CONTENTLESS and
                             not reply.text and not gemini_calls(reply) and
                             reply.thinking is None)


def solid_png(width, height, rgb):
    """A PNG of one colour: what an image model "draws" when a turn does
    not give its image's bytes."""
    import base64
    import struct
    import zlib

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    row = b"\x00" + bytes(rgb) * width
    return base64.b64encode(
        b"\x89PNG\r\n\x1a\n" +
        chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
        chunk(b"IDAT", zlib.compress(row * height)) + chunk(b"IEND", b"")).decode()


def gemini_image_part(reply):
    """The image of an image model's answer, or None: a turn's "image"
    ({"data": base64, "mime": ...} or {"width", "height", "color"}), or a
    64x64 grey square when the request asked for images and the turn gave
    none."""
    img = reply.turn.get("image")
    if img is None and not reply.image_out:
        return None
    img = img if isinstance(img, dict) else {}
    if img.get("none"):
        return None
    data = img.get("data") or solid_png(int(img.get("width", 64)),
                                        int(img.get("height", 64)),
                                        img.get("color", [128, 128, 128]))
    return {"inlineData": {"mimeType": img.get("mime", "image/png"), "data": data}}


def gemini_parts(reply):
    """All parts of the answer, in order, with the thought signature placed."""
    parts = []
    calls = gemini_calls(reply)
    image = gemini_image_part(reply)
    if reply.thinking is not None:
        parts.append({"text": reply.thinking, "thought": True})
    if reply.text or (not calls and image is None):
        parts.append({"text": reply.text or ""})
    if image is not None:
        parts.append(image)
    for c in calls:
        parts.append(gemini_call_part(c))
    sig = reply.turn.get("thought_signature")
    if sig:
        target = next((p for p in parts if "functionCall" in p), parts[-1])
        target["thoughtSignature"] = sig
    return parts


def gemini_response(reply, model, rid, parts, final):
    cand = {"index": 0} if parts is None else \
        {"content": {"parts": parts, "role": "model"}, "index": 0}
    if final:
        cand["finishReason"] = gemini_finish(reply)
        if "finish_message" in reply.turn:
            cand["finishMessage"] = reply.turn["finish_message"]
    return {"candidates": [cand], "usageMetadata": gemini_usage(reply, final),
            "modelVersion": model, "responseId": rid}


def gemini_blocked(reply, model, rid):
    """A prompt refused before any answer: promptFeedback, no candidates."""
    reason = reply.turn["prompt_blocked"]
    ratings = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH"}] \
        if reason == "SAFETY" else []
    return {"promptFeedback": {"blockReason": reason, "safetyRatings": ratings},
            "usageMetadata": {"promptTokenCount": reply.input_tokens,
                              "totalTokenCount": reply.input_tokens},
            "modelVersion": model, "responseId": rid}


def gemini_document(reply, model, rid):
    """The unstreamed answer."""
    if "prompt_blocked" in reply.turn:
        return gemini_blocked(reply, model, rid)
    parts = None if gemini_contentless(reply) else gemini_parts(reply)
    return gemini_response(reply, model, rid, parts, True)


def gemini_stream(reply, model, rid):
    """The GenerateContentResponse objects of one stream: text split across them."""
    if "prompt_blocked" in reply.turn:
        return [gemini_blocked(reply, model, rid)]
    if reply.stream_error:
        out = []
        if reply.error_after_text and reply.text:
            pieces = split_text(reply.text, max(2, reply.chunks))
            out = [gemini_response(reply, model, rid, [{"text": p}], False)
                   for p in pieces[:max(1, len(pieces) // 2)]]
        return out + [{"error": gemini_stream_error(reply)}]
    if gemini_contentless(reply):
        return [gemini_response(reply, model, rid, None, True)]
    calls = gemini_calls(reply)
    groups = []
    if reply.thinking is not None:
        groups += [[{"text": p, "thought": True}]
                   for p in split_text(reply.thinking, reply.chunks)]
    groups += [[{"text": p}] for p in split_text(reply.text or "", reply.chunks)]
    if calls:
        groups.append([gemini_call_part(c) for c in calls])
    image = gemini_image_part(reply)
    if image is not None:
        groups.append([image])
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
            pieces, total = [], 0
            while True:
                line = self.rfile.readline(1024)
                if not line:
                    raise ClientGone()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(pieces)
                pieces.append(self.rfile.read(size))
                total += len(pieces[-1])
                self.rfile.readline(1024)
                if total > MAX_BODY:
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
        # The log entry gets its status before the client can see the answer,
        # and --capture writes the request then.
        entry = getattr(self, "entry", None)
        if entry is not None and entry["status"] is None:
            entry["status"] = code
            self.server.state.capture(entry)
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
        entry = {"api": api, "path": redact_path(self.path), "model": None,
                 "headers": self.header_log(), "body": None, "stream": False, "status": None,
                 "error": None, "size": len(body), "ts": time.time()}
        try:
            entry["body"] = json.loads(body) if body else None
            parsed = True
        except ValueError:
            entry["body"] = body.decode("utf-8", "replace")
            parsed = False
        entry["model"] = rules.request_model(api, entry["body"], self.path)
        self.entry = entry
        self.server.state.record(entry)
        state = self.server.state
        with state.lock:
            thoughts = dict(state.anthropic_thoughts)
            models = dict(state.models)
        refusal = rules.check(api, self.headers, entry["body"], path=self.path,
                              raw_size=len(body), parsed=parsed, thoughts=thoughts,
                              models=models)
        if refusal is not None:
            return self.refuse(api, refusal)
        info = model_info(entry["model"], models)
        handler = {"anthropic": self.anthropic, "openai": self.openai,
                   "gemini": self.gemini}[api]
        handler(entry, info)

    def refuse(self, api, refusal):
        """Answers a request the real API refuses, in that API's shape."""
        self.entry["error"] = refusal.message
        # A refusal by the rules, as opposed to an error a script asked
        # for: the integration tests fail on any they did not expect.
        self.entry["refused"] = True
        body = rules.error_body(api, refusal)
        extra = {}
        if api == "anthropic" and refusal.body is None:
            rid = f"req_fake_{self.server.state.next_id()}"
            body = dict(body, request_id=rid)
            extra["request-id"] = rid
        elif api == "openai":
            extra["x-request-id"] = f"req_fake_{self.server.state.next_id()}"
        return self.send_json(refusal.status, body, extra, note=f"refused: {refusal.message}"
                              [:200].replace("\n", " "))

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

    def anthropic_authorized(self):
        """An API key in x-api-key, or (as @anthropic-ai/sdk 1.x sends it)
        in Authorization: Bearer."""
        auth = self.headers.get("authorization", "")
        return bool(self.headers.get("x-api-key", "").strip()) or (
            auth.startswith("Bearer ") and auth[7:].strip() != "")

    def openai_authorized(self):
        auth = self.headers.get("authorization", "")
        return auth.startswith("Bearer ") and auth[7:].strip() != ""

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
            return self.send_json(401, rules.error_body("openai", Refusal(
                401, rules.OPENAI_NO_KEY, code="invalid_api_key")))
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
            # The model overrides stay: tests reset the script often.
            with state.lock:
                state.turns.clear()
                state.requests.clear()
                state.anthropic_thoughts.clear()
            return self.send_json(200, {"ok": True})
        if path == "/_fake/models" and self.command == "GET":
            with state.lock:
                models = dict(state.models)
            return self.send_json(200, {"models": models, "table": rules.MODELS,
                                        "default": rules.DEFAULT_MODEL})
        if path == "/_fake/models" and self.command == "POST":
            try:
                doc = json.loads(body)
            except ValueError as e:
                return self.send_json(400, {"error": f"not JSON: {e}"})
            if not isinstance(doc, dict) or not isinstance(doc.get("models", {}), dict) or \
                    not isinstance(doc.get("reset_models", False), bool):
                return self.send_json(400, {"error": "expected {\"models\": {NAME: {...}}, "
                                                     "\"reset_models\"?: bool}"})
            for name, entry in doc.get("models", {}).items():
                err = rules.check_model_entry(name, entry)
                if err:
                    return self.send_json(400, {"error": err})
            with state.lock:
                if doc.get("reset_models"):
                    state.models.clear()
                for name, entry in doc.get("models", {}).items():
                    state.models[name] = dict(state.models.get(name, {}), **entry)
                models = dict(state.models)
            return self.send_json(200, {"ok": True, "models": models})
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
        turn = self.server.state.pop_turn(last_user_text(self.entry["body"]))
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

    def stream_payloads(self, turn, rid, payloads, content_type=None):
        """Sends a whole stream; notes the scripted stream error in the log."""
        if turn.get("stream_error"):
            self.entry["error"] = f"stream_error: {turn['stream_error']}"
        if content_type:
            self.start_stream(rid, content_type=content_type)
        else:
            self.start_stream(rid)
        note = self.send_events(turn, payloads)
        if turn.get("stream_error"):
            note = " ".join(x for x in (note, "stream_error") if x)
        self.log_line(200, " ".join(x for x in ("stream", note) if x))
        return 200

    # ---- Anthropic -------------------------------------------------------

    def anthropic_error(self, status, message, extra=None):
        rid = f"req_fake_{self.server.state.next_id()}"
        message = message or f"fake-llm: scripted HTTP {status}"
        if self.entry is not None:
            self.entry["error"] = message
        return self.send_json(status, {"type": "error", "error": {
            "type": anthropic_error_type(status), "message": message}, "request_id": rid},
            dict(extra or {}, **{"request-id": rid}))

    def anthropic(self, entry, info):
        body = entry["body"]
        stream = body.get("stream") is True
        entry["stream"] = stream
        turn = self.take_turn()
        done = self.prelude(turn, stream, self.anthropic_error, "text/event-stream")
        if done is not None:
            return done
        n = self.server.state.next_id()
        reply = Reply(turn, self.server.state, "toolu_fake_", body, "anthropic")
        if reply.stream_error and not stream:
            status, etype, message = anthropic_stream_error(reply)
            rid = f"req_fake_{n}"
            entry["error"] = message
            return self.send_json(status, {"type": "error", "error": {
                "type": etype, "message": message}, "request_id": rid}, {"request-id": rid})
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
        return self.stream_payloads(turn, rid, payloads)

    # ---- OpenAI ----------------------------------------------------------

    def openai_error(self, status, message, extra=None, param=None, code=None):
        rid = f"req_fake_{self.server.state.next_id()}"
        message = message or f"fake-llm: scripted HTTP {status}"
        if self.entry is not None:
            self.entry["error"] = message
        return self.send_json(status, rules.openai_error_body(status, message, param, code),
                              dict(extra or {}, **{"x-request-id": rid}))

    def openai(self, entry, info):
        body = entry["body"]
        stream = body.get("stream") is True
        entry["stream"] = stream
        turn = self.take_turn()
        done = self.prelude(turn, stream, self.openai_error, "text/event-stream")
        if done is not None:
            return done
        n = self.server.state.next_id()
        reply = Reply(turn, self.server.state, "call_fake_", body, "openai")
        # Reasoning tokens count against max_completion_tokens (or max_tokens).
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        reply.spend_thoughts(turn.get("thoughts_tokens", 0),
                             limit if isinstance(limit, int) else None)
        cid = f"chatcmpl-fake{n}"
        created = int(time.time())
        rid = {"x-request-id": f"req_fake_{n}"}
        if reply.stream_error and not stream:
            err = openai_stream_error(reply)
            entry["error"] = err["message"]
            return self.send_json(500, {"error": err}, rid)
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
        return self.stream_payloads(turn, rid, payloads)

    # ---- Gemini ----------------------------------------------------------

    def gemini_error(self, status, message, extra=None):
        message = message or f"fake-llm: scripted HTTP {status}"
        if self.entry is not None:
            self.entry["error"] = message
        return self.send_json(status, rules.gemini_error_body(status, message), extra)

    def gemini(self, entry, info):
        match = GEMINI_PATH.match(urlsplit(self.path).path)
        model, method = match.group(2), match.group(3)
        query = dict(parse_qsl(urlsplit(self.path).query, True))
        body = entry["body"]
        stream = method == "streamGenerateContent"
        sse = query.get("alt") == "sse"
        entry["stream"] = stream
        turn = self.take_turn()
        done = self.prelude(turn, stream, self.gemini_error,
                            "text/event-stream" if sse else "application/json")
        if done is not None:
            return done
        reply = Reply(turn, self.server.state, "fc_fake_", body, "gemini")
        # An image model asked for images answers with one.
        reply.image_out = bool(info.get("image_output")) and \
            "IMAGE" in rules.gemini_modalities(body)
        # Thought tokens (at most the thinking budget; -1 is unbounded) count
        # against maxOutputTokens.
        gc = body.get("generationConfig") or {}
        tc = gc.get("thinkingConfig") or {} if isinstance(gc, dict) else {}
        thoughts = turn.get("thoughts_tokens", 0)
        budget = tc.get("thinkingBudget") if isinstance(tc, dict) else None
        if isinstance(budget, int) and budget >= 0:
            thoughts = min(thoughts, budget)
        limit = gc.get("maxOutputTokens") if isinstance(gc, dict) else None
        reply.spend_thoughts(thoughts, limit if isinstance(limit, int) else None)
        rid = f"fake{self.server.state.next_id()}"
        if reply.stream_error and not stream:
            err = gemini_stream_error(reply)
            entry["error"] = err["message"]
            return self.send_json(503, {"error": err})
        if not stream:
            return self.send_document(turn, gemini_document(reply, model, rid))
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
        return self.stream_payloads(turn, None, payloads, content_type)


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


# --------------------------------------------------------------------------
# Offline checks: --validate and --check-tools.

CHECK_TOOLS_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1",
                      "gemini": "gemini-2.5-flash"}


def capture_files(paths):
    """The JSON files named, directories expanded (sorted)."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json"))
        else:
            out.append(p)
    return out


def run_validate(paths, out=sys.stdout):
    """--validate: re-checks captured requests. Exit status 1 when any is
    refused now."""
    refused = 0
    files = capture_files(paths)
    if not files:
        out.write("not ok: no capture file found\n")
        return 1
    for name in files:
        try:
            with open(name, encoding="utf-8") as f:
                doc = json.load(f)
            api = doc["api"]
            if api not in rules.APIS:
                raise ValueError(f"unknown api {api!r}")
        except (OSError, ValueError, KeyError, TypeError) as e:
            refused += 1
            out.write(f"not ok {name}: not a capture file ({e})\n")
            continue
        body = doc.get("body")
        parsed = not isinstance(body, str)
        # A redacted secret stands for a key that was there: the log keeps
        # "authorization" without its "Bearer " scheme.
        headers = dict(doc.get("headers") or {})
        if headers.get("authorization") == REDACTED:
            headers["authorization"] = "Bearer " + REDACTED
        r = rules.check(api, headers, body, doc.get("model"),
                        path=doc.get("path"), raw_size=doc.get("size"), parsed=parsed)
        was = f" (was {doc.get('status')})" if doc.get("status") is not None else ""
        if r is None:
            out.write(f"ok {name}{was}\n")
        else:
            refused += 1
            first = r.message.strip().replace("\n", " | ")
            out.write(f"not ok {name}{was}: {r.status} {first}\n")
    out.write(f"{len(files) - refused} ok, {refused} refused\n")
    return 1 if refused else 0


def tools_request(api, tools, model):
    """A minimal request of that API carrying the tools: (headers, body, path)."""
    if api == "anthropic":
        return ({"x-api-key": "k", "anthropic-version": "2023-06-01"},
                {"model": model, "max_tokens": 1024, "tools": tools,
                 "messages": [{"role": "user", "content": "hi"}]}, "/v1/messages")
    if api == "openai":
        return ({"authorization": "Bearer k"},
                {"model": model, "tools": tools,
                 "messages": [{"role": "user", "content": "hi"}]}, "/v1/chat/completions")
    return ({"x-goog-api-key": "k"},
            {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": tools},
            f"/v1beta/models/{model}:streamGenerateContent?alt=sse")


def run_check_tools(api, name, model=None, out=sys.stdout):
    """--check-tools: a tools array, checked as part of a minimal request."""
    if api not in rules.APIS:
        out.write(f"not ok: unknown api {api!r} (anthropic, openai, gemini)\n")
        return 2
    try:
        with open(name, encoding="utf-8") as f:
            tools = json.load(f)
    except (OSError, ValueError) as e:
        out.write(f"not ok: cannot read {name}: {e}\n")
        return 2
    if not isinstance(tools, list):
        out.write(f"not ok: {name} must hold a JSON array (the request's \"tools\" value)\n")
        return 2
    model = model or CHECK_TOOLS_MODELS[api]
    headers, body, path = tools_request(api, tools, model)
    r = rules.check(api, headers, body, model, path=path)
    if r is None:
        out.write("ok\n")
        return 0
    out.write(f"not ok: {r.status} {json.dumps(rules.error_body(api, r))}\n")
    return 1


def main(argv=None):
    ap = argparse.ArgumentParser(description="A scripted fake LLM provider for tests.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--script", help="a JSON file {\"turns\": [...]} to preload")
    ap.add_argument("--capture", default=os.environ.get("FAKE_LLM_CAPTURE_DIR"),
                    help="write every provider request as DIR/<n>-<api>.json "
                    "(default: $FAKE_LLM_CAPTURE_DIR)")
    ap.add_argument("--validate", nargs="+", metavar="FILE_OR_DIR",
                    help="re-check captured requests and exit (1 if any is refused)")
    ap.add_argument("--check-tools", nargs=2, metavar=("API", "FILE"),
                    help="check a tools array of API (anthropic|openai|gemini) and exit")
    ap.add_argument("--model", help="the model for --check-tools")
    args = ap.parse_args(argv)

    if args.validate:
        return run_validate(args.validate)
    if args.check_tools:
        return run_check_tools(args.check_tools[0], args.check_tools[1], args.model)

    if args.capture:
        try:
            os.makedirs(args.capture, exist_ok=True)
        except OSError as e:
            sys.stderr.write(f"fake-llm: cannot create {args.capture}: {e}\n")
            return 2
    state = State(args.capture)
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
