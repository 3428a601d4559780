#!/usr/bin/env python3
"""The fake's server-side rules (tests/fake-llm/fake_rules.py), over HTTP.

For every rule the fake enforces on behalf of the real APIs: one request the
rule refuses (the exact status, error type/code/status and message are
asserted) and a nearby valid request that passes. Then the model table and
its overrides (POST /_fake/models), the token estimate, the turn fields that
script real failures (stream_error, refusal, content_filter, SAFETY,
MALFORMED_FUNCTION_CALL, prompt_blocked, a cut last call, thoughts_tokens),
--capture, --validate, --check-tools and the importable validate().

Run by `make check` or by hand; the helpers (the Fake server, expect...) and
the output format are test_fake_llm.py's: "ok N - ..." per check, "#" lines
after a failure, a final "P passed, F failed", exit 1 on a failure.
Standard library only.
"""

import base64
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_fake_llm as base  # noqa: E402 - the helpers of the protocol tests
from test_fake_llm import (  # noqa: E402
    ANT_H, GEM_H, OAI_H, Fake, expect, expect_eq, sse_events, stream_raw)

sys.path.insert(0, os.path.dirname(base.FAKE))
import fake_rules  # noqa: E402 - the rules under test, for the token estimate

# ---------------------------------------------------------------- helpers

PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions"}
HEADERS = {"anthropic": ANT_H, "openai": OAI_H, "gemini": GEM_H}
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1",
                  "gemini": "gemini-2.5-flash"}
USER = {"role": "user", "content": "hi"}


def path_of(api, model=None, stream=False):
    if api != "gemini":
        return PATHS[api]
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    return f"/v1beta/models/{model or DEFAULT_MODELS['gemini']}:{method}"


def post(fake, api, body, model=None, headers=None, stream=False):
    """(status, parsed body) of one provider request."""
    hdrs = dict(HEADERS[api], **(headers or {}))
    st, _, data = fake.request("POST", path_of(api, model, stream), body, hdrs, timeout=60)
    try:
        return st, json.loads(data)
    except ValueError:
        return st, data


def ab(model="claude-sonnet-4-5", **kw):
    """An Anthropic body."""
    return dict({"model": model, "max_tokens": 1024, "messages": [USER]}, **kw)


def ob(model="gpt-4.1", **kw):
    """An OpenAI body."""
    return dict({"model": model, "messages": [{"role": "user", "content": "hi"}]}, **kw)


def gb(**kw):
    """A Gemini body."""
    return dict({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, **kw)


def A(message, etype="invalid_request_error"):
    """The exact Anthropic error body."""
    def check(doc):
        expect_eq(doc.get("type"), "error", "type")
        expect(doc.get("request_id", "").startswith("req_"), f"request_id in {doc}")
        expect_eq(doc["error"]["type"], etype, "error.type")
        expect_eq(doc["error"]["message"], message, "error.message")
    return check


def O(message, code, param, etype="invalid_request_error"):
    """The exact OpenAI error body."""
    def check(doc):
        expect_eq(doc["error"], {"message": message, "type": etype, "param": param,
                                 "code": code}, "error")
    return check


def G(message, code=400, status="INVALID_ARGUMENT"):
    """The exact Gemini error body."""
    def check(doc):
        expect_eq(doc["error"], {"code": code, "message": message, "status": status}, "error")
    return check


def refused(fake, api, body, status, check, model=None, headers=None):
    """The request is refused as asserted, and takes no turn."""
    fake.reset()
    fake.script({"text": "not for a refused request"})
    st, doc = post(fake, api, body, model, headers)
    expect_eq(st, status, f"status of a refused {api} request ({str(doc)[:300]})")
    check(doc)
    expect_eq(fake.queued(), 1, "turns left after a refused request")
    log = fake.requests()[-1]
    expect_eq(log["status"], status, "the log's status")
    expect(isinstance(log["error"], str) and log["error"], f"the log's error: {log['error']!r}")


def accepted(fake, api, body, model=None, headers=None):
    fake.reset()
    fake.script({"text": "fine"})
    st, doc = post(fake, api, body, model, headers)
    expect_eq(st, 200, f"status of a valid {api} request ({str(doc)[:400]})")
    expect_eq(fake.requests()[-1]["error"], None, "no error in the log")


CHECKS = []


def rule(desc, api, bad, good, model=None, headers=None, good_model=None):
    """One rule: bad = [(body, status, check)], good = [body]."""
    def fn(fake):
        for body, status, check in bad:
            refused(fake, api, body, status, check, model, headers)
        for body in good:
            accepted(fake, api, body, good_model or model, headers)
    CHECKS.append((f"{api}: {desc}", fn))


def check(desc):
    def deco(fn):
        CHECKS.append((desc, fn))
        return fn
    return deco


def png(w, h):
    """A PNG's signature and IHDR: what the fake reads."""
    return (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", w, h)
            + b"\x08\x02\x00\x00\x00" + b"\x00" * 4 + b"\x00" * 12 + b"IEND\xaeB`\x82")


def jpeg(w, h):
    """A JPEG's SOI, a JFIF APP0 segment and an SOF0 marker."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = (b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, h, w, 3)
           + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01")
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def b64(data):
    return base64.b64encode(data).decode()


def a_img(data, media="image/png"):
    return {"type": "image", "source": {"type": "base64", "media_type": media,
                                        "data": data if isinstance(data, str) else b64(data)}}


def o_img(data, media="image/png"):
    return {"type": "image_url", "image_url": {
        "url": f"data:{media};base64," + (data if isinstance(data, str) else b64(data))}}


def padded_b64(head, length):
    """A base64 payload of exactly `length` characters starting with head."""
    s = b64(head)
    s = s[:len(s) - len(s) % 4] if len(s) % 4 == 0 else s
    return s + "A" * (length - len(s))


# A tool loop: the assistant's tool_use and the user's answer.
def a_loop(use_content, result_content):
    return [USER, {"role": "assistant", "content": use_content},
            {"role": "user", "content": result_content}]


USE_A = {"type": "tool_use", "id": "toolu_A", "name": "a", "input": {}}
RES_A = {"type": "tool_result", "tool_use_id": "toolu_A", "content": "done"}
SCHEMA_OK = {"type": "object", "properties": {"x": {"type": "string"}}}


def a_tool(schema=None, name="t"):
    return {"name": name, "description": "d", "input_schema": schema or SCHEMA_OK}


def o_tool(params=None, name="t"):
    fn = {"name": name, "description": "d"}
    if params is not False:
        fn["parameters"] = params or SCHEMA_OK
    return {"type": "function", "function": fn}


def g_decl(params=None, name="t", key="parameters"):
    d = {"name": name, "description": "d"}
    if params is not False:
        d[key] = params or {"type": "OBJECT", "properties": {"x": {"type": "STRING"}}}
    return {"functionDeclarations": [d]}


# ---------------------------------------------------------------- Anthropic

MT_TEXT = "max_tokens: 5000 > 4096, which is the maximum allowed number of output tokens for " \
          "claude-3-haiku-20240307"
rule("max_tokens above the model's output limit", "anthropic",
     [(ab("claude-3-haiku-20240307", max_tokens=5000), 400, A(MT_TEXT))],
     [ab("claude-3-haiku-20240307", max_tokens=4096)])

NAME_PATTERN = "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"
rule("tool name pattern", "anthropic",
     [(ab(tools=[a_tool(name="caldav.list")]), 400, A(NAME_PATTERN)),
      (ab(tools=[a_tool(name="")]), 400, A(NAME_PATTERN))],
     [ab(tools=[a_tool(name="caldav_list-2")])])
rule("tool name at most 128 characters", "anthropic",
     [(ab(tools=[a_tool(name="n" * 129)]), 400,
       A("tools.0.custom.name: String should have at most 128 characters"))],
     [ab(tools=[a_tool(name="n" * 128)])])
rule("tool names unique", "anthropic",
     [(ab(tools=[a_tool(name="dup"), a_tool(name="dup")]), 400,
       A("tools: Tool names must be unique."))],
     [ab(tools=[a_tool(name="one"), a_tool(name="two")])])
rule("input_schema root is type object", "anthropic",
     [(ab(tools=[a_tool({"type": "array", "items": {}})]), 400,
       A("tools.0.custom.input_schema.type: Input should be 'object'")),
      (ab(tools=[a_tool({"properties": {}})]), 400,
       A("tools.0.custom.input_schema.type: Field required"))],
     [ab(tools=[a_tool({"type": "object"})])])
TOPCOMBO = ("tools.1.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf "
            "at the top level")
rule("no oneOf/anyOf/allOf at the top of input_schema", "anthropic",
     [(ab(tools=[a_tool(), a_tool({"type": "object", kw: [SCHEMA_OK]}, "u")]), 400, A(TOPCOMBO))
      for kw in ("oneOf", "anyOf", "allOf")],
     [ab(tools=[a_tool(), a_tool({"type": "object", "properties": {
         "shape": {"oneOf": [{"type": "string"}, {"type": "number"}]}}}, "u")])])
DRAFT = ("tools.0.custom.input_schema: JSON schema is invalid. It must match JSON Schema draft "
         "2020-12 (https://json-schema.org/draft/2020-12). Learn more about tool use at "
         "https://docs.anthropic.com/en/docs/tool-use.")
rule("input_schema is valid draft 2020-12", "anthropic",
     [(ab(tools=[a_tool({"type": "object", "properties": {"p": bad}})]), 400, A(DRAFT))
      for bad in ({"type": "array", "items": [{"type": "string"}]},
                  {"type": "number", "minimum": 0, "exclusiveMinimum": True},
                  {"type": "number", "exclusiveMaximum": False},
                  {"type": "float"},
                  {"type": "object", "required": "a"},
                  {"type": "object", "properties": ["a"]})],
     [ab(tools=[a_tool({"type": "object", "properties": {
         "p": {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "number"}},
         "n": {"type": ["number", "null"], "exclusiveMinimum": 0}}, "required": ["p"]})])])
rule("local $ref resolves", "anthropic",
     [(ab(tools=[a_tool({"type": "object", "properties": {"p": {"$ref": "#/$defs/gone"}}})]),
       400, A("Error resolving schema reference '#/$defs/gone': PointerToNowhere: "
              "'#/$defs/gone' does not exist"))],
     [ab(tools=[a_tool({"type": "object", "$defs": {"here": {"type": "string"}},
                        "properties": {"p": {"$ref": "#/$defs/here"}}})])])
RECURSION = ("Error resolving schema reference '#/$defs/pieces': "
             "RecursionError('maximum recursion depth exceeded')")
rule("a $ref that only leads back to itself", "anthropic",
     [(ab(tools=[a_tool({"type": "object", "$defs": {
         "pieces": {"$ref": "#/$defs/pieces", "description": "the pieces"}},
         "properties": {"pieces": {"$ref": "#/$defs/pieces"}}})]), 400, A(RECURSION))],
     # A recursive schema that reaches content (a tree) is fine.
     [ab(tools=[a_tool({"type": "object", "$defs": {"node": {
         "type": "object", "properties": {"kids": {"type": "array",
                                                   "items": {"$ref": "#/$defs/node"}}}}},
         "properties": {"root": {"$ref": "#/$defs/node"}}})])])
rule("text blocks non-empty", "anthropic",
     [(ab(messages=[{"role": "user", "content": [{"type": "text", "text": ""}]}]), 400,
       A("messages: text content blocks must be non-empty"))],
     [ab(messages=[{"role": "user", "content": [{"type": "text", "text": "x"}]}])])
WS = "messages: text content blocks must contain non-whitespace text"
rule("a message's text blocks not all whitespace", "anthropic",
     [(ab(messages=[{"role": "user", "content": "   "}]), 400, A(WS)),
      (ab(messages=a_loop([{"type": "text", "text": "\n\n"}, USE_A], [RES_A])), 400, A(WS)),
      (ab(messages=[{"role": "user", "content": [{"type": "text", "text": " "},
                                                  {"type": "text", "text": "\t"}]}]), 400, A(WS))],
     [ab(messages=[{"role": "user", "content": [{"type": "text", "text": " "},
                                                 {"type": "text", "text": "real"}]}]),
      ab(messages=a_loop([USE_A], [RES_A]))])
rule("messages non-empty but an optional final assistant one", "anthropic",
     [(ab(messages=[{"role": "user", "content": []}]), 400,
       A("messages.0: all messages must have non-empty content except for the optional final "
         "assistant message")),
      (ab(messages=[USER, {"role": "assistant", "content": ""}, USER]), 400,
       A("messages.1: all messages must have non-empty content except for the optional final "
         "assistant message"))],
     [ab(messages=[USER, {"role": "assistant", "content": ""}])])
rule("tool_result blocks first in the user message", "anthropic",
     [(ab(messages=a_loop([USE_A], [{"type": "text", "text": "go on"}, RES_A])), 400,
       A("messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. "
         "Messages following `tool_use` blocks must begin with a matching number of "
         "`tool_result` blocks."))],
     [ab(messages=a_loop([USE_A], [RES_A, {"type": "text", "text": "go on"}]))])
rule("tool_use ids match ^[a-zA-Z0-9_-]+$", "anthropic",
     [(ab(messages=a_loop([dict(USE_A, id=bad)], [dict(RES_A, tool_use_id=bad)])), 400,
       A("messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"))
      for bad in ("", "call 1", "fc:1")] +
     [(ab(messages=a_loop([USE_A], [dict(RES_A, tool_use_id="")])), 400,
       A("messages.2.content.0.tool_result.tool_use_id: String should match pattern "
         "'^[a-zA-Z0-9_-]+$'"))],
     [ab(messages=a_loop([dict(USE_A, id="toolu_01-x")], [dict(RES_A, tool_use_id="toolu_01-x")]))])
rule("tool_use ids unique in the request", "anthropic",
     [(ab(messages=a_loop([USE_A], [RES_A]) + [{"role": "assistant", "content": [USE_A]},
                                                {"role": "user", "content": [RES_A]}]), 400,
       A("messages.3.content.0: `tool_use` ids must be unique"))],
     [ab(messages=a_loop([USE_A], [RES_A]) + [
         {"role": "assistant", "content": [dict(USE_A, id="toolu_B")]},
         {"role": "user", "content": [dict(RES_A, tool_use_id="toolu_B")]}])])
rule("adaptive thinking takes no budget_tokens", "anthropic",
     [(ab("claude-sonnet-4-6", thinking={"type": "adaptive", "budget_tokens": 2048}), 400,
       A("thinking.adaptive.budget_tokens: Extra inputs are not permitted"))],
     [ab("claude-sonnet-4-6", thinking={"type": "adaptive"})])
rule("adaptive thinking only on models that have it", "anthropic",
     [(ab(m, thinking={"type": "adaptive"}), 400,
       A("adaptive thinking is not supported on this model"))
      for m in ("claude-sonnet-4-5-20250929", "claude-opus-4-1", "claude-3-7-sonnet-latest")],
     [ab("claude-opus-4-6", thinking={"type": "adaptive"}),
      ab("claude-opus-4-6", max_tokens=4096, thinking={"type": "enabled", "budget_tokens": 2048}),
      ab("claude-sonnet-4-5", max_tokens=4096,
         thinking={"type": "enabled", "budget_tokens": 2048})])
rule("adaptive-only models refuse thinking.type enabled", "anthropic",
     [(ab(m, max_tokens=4096, thinking={"type": "enabled", "budget_tokens": 2048}), 400,
       A('"thinking.type.enabled" is not supported for this model. Use '
         '"thinking.type.adaptive" and "output_config.effort" to control thinking behavior.'))
      for m in ("claude-opus-4-7", "claude-opus-4-8")],
     [ab("claude-opus-4-7", thinking={"type": "adaptive"}, output_config={"effort": "xhigh"}),
      ab("claude-opus-4-8", thinking={"type": "adaptive", "display": "summarized"})])
rule("Claude 3 and 3.5 have no thinking at all", "anthropic",
     [(ab(m, max_tokens=4096, thinking={"type": "enabled", "budget_tokens": 2048}), 400,
       A("'%s' does not support thinking." % m))
      for m in ("claude-3-5-sonnet-20241022", "claude-3-haiku-20240307")],
     [ab("claude-3-5-sonnet-20241022", max_tokens=4096),
      ab("claude-3-7-sonnet-20250219", max_tokens=4096,
         thinking={"type": "enabled", "budget_tokens": 2048})])
rule("claude-3-5-sonnet-20240620 answers at most 4096 tokens", "anthropic",
     [(ab("claude-3-5-sonnet-20240620", max_tokens=8192), 400,
       A("max_tokens: 8192 > 4096, which is the maximum allowed number of output tokens "
         "for claude-3-5-sonnet-20240620"))],
     [ab("claude-3-5-sonnet-20241022", max_tokens=8192)])
rule("output_config.effort is low/medium/high/max", "anthropic",
     [(ab(output_config={"effort": "extreme"}), 400,
       A("output_config.effort: Input should be 'low', 'medium', 'high' or 'max'")),
      (ab(output_config={"effort": "xhigh"}), 400,
       A("output_config.effort: Input should be 'low', 'medium', 'high' or 'max'")),
      (ab("claude-opus-4-7", output_config={"effort": "minimal"}), 400,
       A("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"))],
     [ab(output_config={"effort": e}) for e in ("low", "medium", "high", "max")])
rule("thinking.type is enabled/disabled/adaptive", "anthropic",
     [(ab(thinking={"type": "on"}), 400,
       A("thinking: Input tag 'on' found using 'type' does not match any of the expected "
         "tags: 'enabled', 'disabled', 'adaptive'"))],
     [ab(thinking={"type": "disabled"})])
rule("image media_type jpeg/png/gif/webp", "anthropic",
     [(ab(messages=[{"role": "user", "content": [a_img(png(8, 8), "image/bmp")]}]), 400,
       A("messages.0.content.0.image.source.base64.media_type: Input should be 'image/jpeg', "
         "'image/png', 'image/gif' or 'image/webp'"))],
     [ab(messages=[{"role": "user", "content": [a_img(png(8, 8))]}])])
rule("image bytes match the media_type", "anthropic",
     [(ab(messages=[{"role": "user", "content": [{"type": "text", "text": "see"},
                                                 a_img(png(8, 8), "image/jpeg")]}]), 400,
       A("messages.0.content.1.image.source.base64: The image was specified using the "
         "image/jpeg media type, but the image appears to be a image/png image")),
      (ab(messages=a_loop([USE_A], [dict(RES_A, content=[
          {"type": "text", "text": "rendered"}, a_img(jpeg(8, 8), "image/png")])])), 400,
       A("messages.2.content.0.tool_result.content.1.image.source.base64: The image was "
         "specified using the image/png media type, but the image appears to be a image/jpeg "
         "image")),
      (ab(messages=[{"role": "user", "content": [a_img(b"GIF87a not really", "image/webp")]}]),
       400, A("messages.0.content.0.image.source.base64: The image was specified using the "
              "image/webp media type, but the image appears to be a image/gif image")),
      (ab(messages=[{"role": "user", "content": [a_img(b"plain text, no image")]}]), 400,
       A("messages.0.content.0.image.source.base64.data: Could not process image"))],
     [ab(messages=[{"role": "user", "content": [a_img(jpeg(8, 8), "image/jpeg")]}]),
      ab(messages=a_loop([USE_A], [dict(RES_A, content=[a_img(png(8, 8))])]))])
rule("image at most 8000 px a side (JPEG and PNG headers read)", "anthropic",
     [(ab(messages=[{"role": "user", "content": [a_img(png(8001, 10))]}]), 400,
       A("messages.0.content.0.image.source.base64.data: At least one of the image "
         "dimensions exceed max allowed size: 8000 pixels")),
      (ab(messages=[{"role": "user", "content": [a_img(jpeg(20, 9000), "image/jpeg")]}]), 400,
       A("messages.0.content.0.image.source.base64.data: At least one of the image "
         "dimensions exceed max allowed size: 8000 pixels"))],
     [ab(messages=[{"role": "user", "content": [a_img(png(8000, 10))]}])])
rule("images at most 2000 px a side past 20 images", "anthropic",
     [(ab(messages=[{"role": "user", "content": [a_img(png(10, 10))] * 20 +
                     [a_img(png(2001, 10))]}]), 400,
       A("messages.0.content.20.image.source.base64.data: At least one of the image "
         "dimensions exceed max allowed size for many-image requests: 2000 pixels"))],
     [ab(messages=[{"role": "user", "content": [a_img(png(10, 10))] * 19 +
                    [a_img(png(2001, 10))]}]),
      ab(messages=[{"role": "user", "content": [a_img(png(10, 10))] * 20 +
                    [a_img(png(2000, 10))]}])])
rule("at most 100 images", "anthropic",
     [(ab(messages=[{"role": "user", "content": [a_img(png(10, 10))] * 101}]), 400,
       A("Too much media: 0 document pages + 101 images > 100"))],
     [ab(messages=[{"role": "user", "content": [a_img(png(10, 10))] * 100}])])
BIG = padded_b64(png(100, 100), 5_242_884)
rule("image base64 at most 5 MB", "anthropic",
     [(ab(messages=[{"role": "user", "content": [a_img(BIG)]}]), 400,
       A("messages.0.content.0.image.source.base64: image exceeds 5 MB maximum: 5242884 bytes "
         "> 5242880 bytes")),
      (ab(messages=a_loop([USE_A], [dict(RES_A, content=[{"type": "text", "text": "ok"},
                                                         a_img(BIG)])])), 400,
       A("messages.2.content.0.tool_result.content.1.image.source.base64: image exceeds 5 MB "
         "maximum: 5242884 bytes > 5242880 bytes"))],
     [ab(messages=[{"role": "user", "content": [a_img(BIG[:5_242_880])]}])])


def a_long(model, chars, **kw):
    return ab(model, messages=[{"role": "user", "content": "x" * chars}], **kw)


@check("anthropic: prompt within the context window (text and image tokens)")
def check_anthropic_context(fake):
    body = a_long("claude-3-5-sonnet-20241022", 800_000)
    n = fake_rules.estimate_tokens("anthropic", body)
    expect(n > 200_000, f"the estimate {n}")
    refused(fake, "anthropic", body, 400, A(f"prompt is too long: {n} tokens > 200000 maximum"))
    accepted(fake, "anthropic", a_long("claude-3-5-sonnet-20241022", 790_000))
    # The images' tokens count: ceil(w*h/750) each, their base64 does not.
    img = [a_img(png(1500, 1000))] * 2            # 2 * 2000 tokens
    body = ab("claude-3-5-sonnet-20241022", messages=[
        {"role": "user", "content": img + [{"type": "text", "text": "y" * 790_000}]}])
    n = fake_rules.estimate_tokens("anthropic", body)
    expect_eq(n, fake_rules.estimate_tokens("anthropic", ab(
        "claude-3-5-sonnet-20241022", messages=[{"role": "user", "content": [
            a_img(""), a_img(""), {"type": "text", "text": "y" * 790_000}]}])) + 4000 - 2 * 1600,
        "image tokens")
    refused(fake, "anthropic", body, 400, A(f"prompt is too long: {n} tokens > 200000 maximum"))
    # The 1M window behind the context-1m beta header, on the models that have it.
    body = a_long("claude-sonnet-4-5", 1_000_000)
    n = fake_rules.estimate_tokens("anthropic", body)
    refused(fake, "anthropic", body, 400, A(f"prompt is too long: {n} tokens > 200000 maximum"))
    accepted(fake, "anthropic", body, headers={"anthropic-beta": "context-1m-2025-08-07"})
    body = a_long("claude-haiku-4-5", 1_000_000)
    n = fake_rules.estimate_tokens("anthropic", body)
    refused(fake, "anthropic", body, 400, A(f"prompt is too long: {n} tokens > 200000 maximum"),
            headers={"anthropic-beta": "context-1m-2025-08-07"})


@check("anthropic: a request over 32 MB answers 413 request_too_large")
def check_anthropic_413(fake):
    fake.json("POST", "/_fake/models", {"models": {"huge-window": {"context": 100_000_000}}})
    big = ab("huge-window", messages=[{"role": "user", "content": "z" * (32 * 1024 * 1024 + 1)}])
    fake.reset()
    fake.script({"text": "no"})
    st, doc = post(fake, "anthropic", big)
    expect_eq((st, doc), (413, {"error": {"type": "request_too_large",
                                          "message": "Request exceeds the maximum size"}}), "413")
    expect_eq(fake.queued(), 1, "no turn taken")
    accepted(fake, "anthropic", ab("huge-window", messages=[
        {"role": "user", "content": "z" * (31 * 1024 * 1024)}]))
    fake.reset()


# ---------------------------------------------------------------- OpenAI

TOP = ("Invalid schema for function 't': schema must have type 'object' and not have "
       "'oneOf'/'anyOf'/'allOf'/'enum'/'const'/'not' at the top level.")
rule("parameters root: type object, no top-level combinators", "openai",
     [(ob(tools=[o_tool(p)]), 400, O(TOP, "invalid_function_parameters",
                                      "tools[0].function.parameters"))
      for p in ({"type": "array", "items": {}}, {"properties": {}},
                {"type": "object", "oneOf": [SCHEMA_OK]}, {"type": "object", "anyOf": [SCHEMA_OK]},
                {"type": "object", "allOf": [SCHEMA_OK]}, {"type": "object", "enum": [{}]},
                {"type": "object", "const": {}}, {"type": "object", "not": {}})],
     [ob(tools=[o_tool({"type": "object", "properties": {
         "u": {"anyOf": [{"type": "string"}, {"type": "null"}]}}})]),
      ob(tools=[o_tool(False)])])
rule("every array schema has items", "openai",
     [(ob(tools=[o_tool(SCHEMA_OK, "a"), o_tool({"type": "object", "properties": {
         "list": {"type": "object", "properties": {"tags": {"type": ["array", "null"]}}}}})]),
       400, O("Invalid schema for function 't': In context=('properties', 'list', "
              "'properties', 'tags'), array schema missing items.",
              "invalid_function_parameters", "tools[1].function.parameters"))],
     [ob(tools=[o_tool({"type": "object", "properties": {
         "tags": {"type": "array", "items": {"type": "string"}}}})])])
rule("$ref resolves and does not loop on itself", "openai",
     [(ob(tools=[o_tool({"type": "object", "$defs": {"a": {"$ref": "#/$defs/a"}},
                         "properties": {"p": {"$ref": "#/$defs/a"}}})]), 400,
       O("Error resolving schema reference '#/$defs/a': RecursionError('maximum recursion "
         "depth exceeded')", "invalid_function_parameters", "tools[0].function.parameters")),
      (ob(tools=[o_tool({"type": "object", "properties": {"p": {"$ref": "#/definitions/b"}}})]),
       400, O("Error resolving schema reference '#/definitions/b': PointerToNowhere: "
              "'#/definitions/b' does not exist", "invalid_function_parameters",
              "tools[0].function.parameters"))],
     [ob(tools=[o_tool({"type": "object", "definitions": {"b": {"type": "integer"}},
                        "properties": {"p": {"$ref": "#/definitions/b"}}})])])
rule("at most 128 tools", "openai",
     [(ob(tools=[o_tool(name=f"t{i}") for i in range(129)]), 400,
       O("Invalid 'tools': array too long. Expected an array with maximum length 128, but got "
         "an array with length 129 instead.", "array_above_max_length", "tools"))],
     [ob(tools=[o_tool(name=f"t{i}") for i in range(128)])])
rule("function name ^[a-zA-Z0-9_-]{1,64}$", "openai",
     [(ob(tools=[o_tool(name="get_/whoami")]), 400,
       O("Invalid 'tools[0].function.name': string does not match pattern. Expected a string "
         "that matches the pattern '^[a-zA-Z0-9_-]+$'.", "invalid_value",
         "tools[0].function.name")),
      (ob(tools=[o_tool(name="n" * 65)]), 400,
       O("Invalid 'tools[0].function.name': string too long. Expected a string with maximum "
         "length 64, but got a string with length 65 instead.", "string_above_max_length",
         "tools[0].function.name"))],
     [ob(tools=[o_tool(name="n" * 64)])])


def o_loop(call_id, content=None, extra_tool=None):
    calls = [{"id": call_id, "type": "function", "function": {"name": "a", "arguments": "{}"}}]
    msgs = [{"role": "user", "content": "go"}] * 1
    msgs += [{"role": "assistant", "content": content, "tool_calls": calls},
             {"role": "tool", "tool_call_id": call_id, "content": extra_tool or "done"}]
    return msgs


rule("an assistant message without tool_calls has content", "openai",
     [(ob(messages=[{"role": "user", "content": "a"}, {"role": "assistant", "content": None},
                    {"role": "user", "content": "b"}]), 400,
       O("Invalid value for 'content': expected a string, got null.", None,
         "messages.[1].content")),
      (ob(messages=[{"role": "user", "content": "a"}, {"role": "assistant"}]), 400,
       O("Invalid value for 'content': expected a string, got null.", None,
         "messages.[1].content"))],
     [ob(messages=[{"role": "user", "content": "a"}, {"role": "assistant", "content": ""},
                   {"role": "user", "content": "b"}]),
      ob(messages=o_loop("call_1"))])
rule("tool_calls not an empty array", "openai",
     [(ob(messages=[{"role": "user", "content": "a"},
                    {"role": "assistant", "content": None, "tool_calls": []}]), 400,
       O("Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length "
         "1, but got an empty array instead.", "empty_array", "messages.[1].tool_calls"))],
     [ob(messages=[{"role": "user", "content": "a"},
                   {"role": "assistant", "content": "x", "tool_calls": None}])])
rule("tool_calls[].id 1..40 characters", "openai",
     [(ob(messages=[{"role": "user", "content": "x"}] * 9 + o_loop("c" * 53)[1:]), 400,
       O("Invalid 'messages[9].tool_calls[0].id': string too long. Expected a string with "
         "maximum length 40, but got a string with length 53 instead.",
         "string_above_max_length", "messages[9].tool_calls[0].id")),
      (ob(messages=o_loop("")), 400,
       O("Invalid 'messages[1].tool_calls[0].id': string too short. Expected a string with "
         "minimum length 1, but got an empty string instead.", "string_below_min_length",
         "messages[1].tool_calls[0].id"))],
     [ob(messages=o_loop("c" * 40))])
rule("image_url parts only in user messages", "openai",
     [(ob(messages=o_loop("call_1", extra_tool=[o_img(png(8, 8))])), 400,
       O("Invalid 'messages[2]'. Image URLs are only allowed for messages with role 'user', but "
         "this message with role 'tool' contains an image URL.", "invalid_value",
         "messages[2]"))],
     [ob(messages=o_loop("call_1") + [{"role": "user", "content": [
         {"type": "text", "text": "the render"}, o_img(png(8, 8))]}])])
rule("reasoning models refuse max_tokens", "openai",
     [(ob(m, max_tokens=1000), 400,
       O("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
         "'max_completion_tokens' instead.", "unsupported_parameter", "max_tokens"))
      for m in ("o1", "o3-mini", "o4-mini-2025-04-16", "gpt-5", "gpt-5.4-mini", "gpt-5-nano")],
     [ob("o3", max_completion_tokens=1000), ob("gpt-5.1", max_completion_tokens=1000),
      ob("gpt-4o", max_tokens=1000), ob("gpt-5-chat-latest", max_tokens=1000)])
rule("max_tokens and max_completion_tokens not both", "openai",
     [(ob(max_tokens=100, max_completion_tokens=100), 400,
       O("Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported.",
         "invalid_parameter_combination", "max_tokens"))],
     [ob(max_completion_tokens=100)])
rule("output limit of the model", "openai",
     [(ob("gpt-4o", max_tokens=20480), 400,
       O("max_tokens is too large: 20480. This model supports at most 16384 completion tokens, "
         "whereas you provided 20480.", "invalid_value", "max_tokens")),
      (ob("o4-mini", max_completion_tokens=100001), 400,
       O("max_completion_tokens is too large: 100001. This model supports at most 100000 "
         "completion tokens, whereas you provided 100001.", "invalid_value",
         "max_completion_tokens"))],
     [ob("gpt-4o", max_tokens=16384), ob("o4-mini", max_completion_tokens=100000)])
rule("at most 500 images", "openai",
     [(ob(messages=[{"role": "user", "content": [o_img(png(4, 4))] * 501}]), 400,
       O("Invalid 'messages': too many images. Expected at most 500 images, but got 501 images "
         "instead.", "invalid_value", "messages"))],
     [ob(messages=[{"role": "user", "content": [o_img(png(4, 4))] * 500}])])


@check("openai: data-URL images at most 20 MB")
def check_openai_image_size(fake):
    big = padded_b64(png(64, 64), 27_962_032)      # 20,971,524 bytes decoded
    refused(fake, "openai", ob(messages=[{"role": "user", "content": [o_img(big)]}]), 400,
            O("Invalid 'messages[0].content[0].image_url.url': image exceeds the maximum size of "
              "20 MB (20971524 bytes > 20971520 bytes).", "image_too_large",
              "messages[0].content[0].image_url.url"))
    accepted(fake, "openai", ob(messages=[{"role": "user", "content": [o_img(big[:27_962_024])]}]))
    fake.reset()


@check("openai: input within the context window (and gpt-5's input limit)")
def check_openai_context(fake):
    body = ob("gpt-4o", messages=[{"role": "user", "content": "x" * 520_000}])
    n = fake_rules.estimate_tokens("openai", body)
    refused(fake, "openai", body, 400,
            O(f"This model's maximum context length is 128000 tokens. However, your messages "
              f"resulted in {n} tokens. Please reduce the length of the messages.",
              "context_length_exceeded", "messages"))
    accepted(fake, "openai", ob("gpt-4o", messages=[{"role": "user", "content": "x" * 500_000}]))
    body = ob("gpt-5", messages=[{"role": "user", "content": "x" * 1_100_000}])
    n = fake_rules.estimate_tokens("openai", body)
    refused(fake, "openai", body, 400,
            O(f"Input tokens exceed the configured limit of 272000 tokens. Your messages "
              f"resulted in {n} tokens. Please reduce the length of the messages.",
              "context_length_exceeded", "messages"))
    accepted(fake, "openai", ob("gpt-5", messages=[{"role": "user", "content": "x" * 1_000_000}]))


# ---------------------------------------------------------------- Gemini

FN_NAME = ("* GenerateContentRequest.tools[0].function_declarations[0].name: Invalid function "
           "name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, "
           "0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length "
           "of 64.\n")
rule("function name rules", "gemini",
     [(gb(tools=[g_decl(name=n)]), 400, G(FN_NAME))
      for n in ("1st", "has space", "slash/name", "n" * 65, "")],
     [gb(tools=[g_decl(name="_mcp.server:tool-1")]), gb(tools=[g_decl(name="n" * 64)])])
rule("parameters and parametersJsonSchema exclusive", "gemini",
     [(gb(tools=[{"functionDeclarations": [{
         "name": "t", "parameters": {"type": "OBJECT", "properties": {"x": {"type": "STRING"}}},
         "parametersJsonSchema": SCHEMA_OK}]}]), 400,
       G("* GenerateContentRequest.tools[0].function_declarations[0]: parameters and "
         "parameters_json_schema are mutually exclusive; set only one of them\n"))],
     [gb(tools=[g_decl(SCHEMA_OK, key="parametersJsonSchema")]), gb(tools=[g_decl()]),
      gb(tools=[g_decl(False)])])
rule("parameters: only Schema fields (proto paths by index)", "gemini",
     [(gb(tools=[g_decl(name="a"), g_decl({"type": "object", "properties": {
         "x": {"type": "string"},
         "y": {"type": "object", "additionalProperties": False, "properties": {
             "z": {"type": "integer", "exclusiveMinimum": 0}}}}})]), 400,
       G("Invalid JSON payload received. Unknown name \"additionalProperties\" at "
         "'tools[1].function_declarations[0].parameters.properties[1].value': Cannot find "
         "field.\nInvalid JSON payload received. Unknown name \"exclusiveMinimum\" at "
         "'tools[1].function_declarations[0].parameters.properties[1].value.properties[0]"
         ".value': Cannot find field.")),
      (gb(tools=[g_decl({"type": "object", "properties": {"u": {"anyOf": [
          {"type": "string"}, {"const": "x"}]}}})]), 400,
       G("Invalid JSON payload received. Unknown name \"const\" at "
         "'tools[0].function_declarations[0].parameters.properties[0].value.any_of[1]': Cannot "
         "find field.")),
      (gb(tools=[g_decl({"type": "object", "$defs": {}, "properties": {"x": {"type": "string"}}})]),
       400, G("Invalid JSON payload received. Unknown name \"$defs\" at "
              "'tools[0].function_declarations[0].parameters': Cannot find field."))],
     [gb(tools=[g_decl({"type": "object", "properties": {
         "x": {"type": "string", "format": "date-time", "nullable": True, "description": "d",
               "min_length": 1},
         "u": {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]},
         "l": {"type": "array", "items": {"type": "number"}, "maxItems": 3}},
         "required": ["x"], "propertyOrdering": ["x", "u", "l"]})])])
rule("parameters: repeated fields are lists, properties an object", "gemini",
     [(gb(tools=[g_decl({"type": "object", "properties": {"x": {"type": "string"}},
                         "required": "x"})]), 400,
       G("Invalid value at 'tools[0].function_declarations[0].parameters.required' "
         "(type.googleapis.com/google.ai.generativelanguage.v1beta.Schema), \"x\"")),
      (gb(tools=[g_decl({"type": "object", "properties": {"u": {"anyOf": 3}}})]), 400,
       G("Invalid value at 'tools[0].function_declarations[0].parameters.properties[0].value"
         ".any_of' (type.googleapis.com/google.ai.generativelanguage.v1beta.Schema), 3"))],
     [gb(tools=[g_decl({"type": "object", "properties": {"x": {"type": "string"}},
                        "required": ["x"]})])])
rule("parameters: type a single value", "gemini",
     [(gb(tools=[g_decl({"type": "object", "properties": {"v": {"type": ["string", "null"]}}})]),
       400, G("Invalid JSON payload received. Unknown name \"type\" at "
              "'tools[0].function_declarations[0].parameters.properties[0].value': Proto field is "
              "not repeating, cannot start list."))],
     [gb(tools=[g_decl({"type": "object", "properties": {
         "v": {"type": "string", "nullable": True}}})])])
rule("parameters: type required without anyOf (names in the path)", "gemini",
     [(gb(tools=[g_decl({"type": "object", "properties": {
         "value": {"description": "anything"},
         "u": {"anyOf": [{"type": "object", "properties": {"pieces": {}}}]}}})]), 400,
       G("* GenerateContentRequest.tools[0].function_declarations[0].parameters.properties"
         "[value].type: must be specified when not using one_of, any_of or all_of fields\n"
         "* GenerateContentRequest.tools[0].function_declarations[0].parameters.properties[u]"
         ".any_of[0].properties[pieces].type: must be specified when not using one_of, any_of "
         "or all_of fields\n"))],
     [gb(tools=[g_decl({"type": "object", "properties": {
         "value": {"type": "string"},
         "u": {"anyOf": [{"type": "object", "properties": {
             "pieces": {"type": "array", "items": {"type": "string"}}}}]}}})])])
rule("parameters: an OBJECT root has properties", "gemini",
     [(gb(tools=[g_decl({"type": "OBJECT"})]), 400,
       G("* GenerateContentRequest.tools[0].function_declarations[0].parameters.properties: "
         "should be non-empty for OBJECT type\n")),
      (gb(tools=[g_decl({"type": "object", "properties": {}})]), 400,
       G("* GenerateContentRequest.tools[0].function_declarations[0].parameters.properties: "
         "should be non-empty for OBJECT type\n"))],
     # A nested object without properties is fine; so is a tool without parameters.
     [gb(tools=[g_decl({"type": "object", "properties": {"scene": {"type": "object"}}})]),
      gb(tools=[g_decl(False)])])
rule("parameters: enum only for STRING", "gemini",
     [(gb(tools=[g_decl({"type": "object", "properties": {
         "mode": {"type": "integer", "enum": ["1", "2"]}}})]), 400,
       G("* GenerateContentRequest.tools[0].function_declarations[0].parameters.properties"
         "[mode].enum: only allowed for STRING type\n")),
      (gb(tools=[g_decl({"type": "object", "properties": {
          "mode": {"type": "string", "enum": ["a", 2]}}})]), 400,
       G("Invalid value at 'tools[0].function_declarations[0].parameters.properties[0].value"
         ".enum[1]' (TYPE_STRING), 2"))],
     [gb(tools=[g_decl({"type": "object", "properties": {
         "mode": {"type": "string", "enum": ["a", "b"]}}})])])
rule("parameters: ARRAY has items", "gemini",
     [(gb(tools=[g_decl({"type": "object", "properties": {"tags": {"type": "array"}}})]), 400,
       G("* GenerateContentRequest.tools[0].function_declarations[0].parameters.properties"
         "[tags].items: missing field.\n"))],
     [gb(tools=[g_decl({"type": "object", "properties": {
         "tags": {"type": "array", "items": {"type": "string"}}}})])])
rule("parameters: required names defined properties, only on OBJECT", "gemini",
     [(gb(tools=[g_decl({"type": "object", "properties": {"a": {"type": "string"}},
                         "required": ["a", "b"]})]), 400,
       G("* GenerateContentRequest.tools[0].function_declarations[0].parameters.required[1]: "
         "property is not defined\n")),
      (gb(tools=[g_decl({"type": "object", "properties": {
          "s": {"type": "string", "required": ["x"]}}})]), 400,
       G("* GenerateContentRequest.tools[0].function_declarations[0].parameters.properties[s]"
         ".required: only allowed for OBJECT type\n"))],
     [gb(tools=[g_decl({"type": "object", "properties": {"a": {"type": "string"}},
                        "required": ["a"]})])])
rule("parameters: anyOf is the only field of its node", "gemini",
     [(gb(tools=[g_decl({"type": "object", "properties": {"max_proposals": {
         "anyOf": [{"type": "integer"}, {"type": "string"}], "description": "how many"}}})]), 400,
       G("Unable to submit request because `t` functionDeclaration `parameters.max_proposals` "
         "schema specified other fields alongside any_of. When using any_of, it must be the "
         "only field set.")),
      (gb(tools=[g_decl({"type": "object", "anyOf": [
          {"type": "object", "properties": {"a": {"type": "string"}}}]})]), 400,
       G("Unable to submit request because `t` functionDeclaration `parameters` schema "
         "specified other fields alongside any_of. When using any_of, it must be the only "
         "field set."))],
     [gb(tools=[g_decl({"type": "object", "properties": {"max_proposals": {
         "anyOf": [{"type": "integer"}, {"type": "string"}]}}})])])
rule("parametersJsonSchema: an object root", "gemini",
     [(gb(tools=[g_decl(p, key="parametersJsonSchema")]), 400,
       G("* GenerateContentRequest.tools[0].function_declarations[0].parameters_json_schema: "
         "the schema must describe an object where the properties are the parameters to the "
         "function\n"))
      for p in ({"type": "array", "items": {}}, {"oneOf": [SCHEMA_OK, SCHEMA_OK]},
                {"type": "object", "anyOf": [SCHEMA_OK]})],
     [gb(tools=[g_decl({"type": "object", "properties": {"u": {"oneOf": [
         {"type": "string"}, {"const": 1}]}}, "additionalProperties": False},
         key="parametersJsonSchema")])])
rule("parametersJsonSchema: $ref beside only description/default", "gemini",
     [(gb(tools=[g_decl({"type": "object", "$defs": {"QuestionOption": SCHEMA_OK},
                         "properties": {"o": {"$ref": "#/$defs/QuestionOption",
                                              "type": "object"}}},
                        key="parametersJsonSchema")]), 400,
       G("$ref 'QuestionOption' was set alongside unsupported fields. If a schema node has $ref "
         "set, then only description and default can be set alongside it; other fields they "
         "would be replaced by the expanded reference."))],
     [gb(tools=[g_decl({"type": "object", "$defs": {"QuestionOption": SCHEMA_OK},
                        "properties": {"o": {"$ref": "#/$defs/QuestionOption",
                                             "description": "d", "default": {},
                                             "$comment": "c"}}}, key="parametersJsonSchema")])])
rule("parametersJsonSchema: refs resolve, no cycle through required properties", "gemini",
     [(gb(tools=[g_decl({"type": "object", "properties": {"o": {"$ref": "#/$defs/none"}}},
                        key="parametersJsonSchema")]), 400,
       G("Invalid $ref '#/$defs/none': no schema at that location in the declaration.")),
      (gb(tools=[g_decl({"type": "object", "$defs": {"node": {
          "type": "object", "properties": {"next": {"$ref": "#/$defs/node"}},
          "required": ["next"]}}, "properties": {"head": {"$ref": "#/$defs/node"}}},
          key="parametersJsonSchema")]), 400,
       G("$ref '#/$defs/node' makes a cycle through required properties: no finite value "
         "matches the schema."))],
     [gb(tools=[g_decl({"type": "object", "$defs": {"node": {
         "type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
         "properties": {"head": {"$ref": "#/$defs/node"}}}, key="parametersJsonSchema")])])
rule("a part has one data field", "gemini",
     [(gb(contents=[{"role": "user", "parts": [{"text": "a"}, {"thoughtSignature": "c2ln"}]}]),
       400, G("* GenerateContentRequest.contents[0].parts[1].data: required oneof field 'data' "
              "must have one initialized field\n")),
      (gb(contents=[{"role": "user", "parts": [{"text": "a", "inlineData": {
          "mimeType": "image/png", "data": b64(png(4, 4))}}]}]), 400,
       G("Invalid JSON payload received. Oneof field 'data' is already set. Cannot set "
         "'inlineData'"))],
     [gb(contents=[{"role": "user", "parts": [{"text": "a"}, {"inlineData": {
         "mimeType": "image/png", "data": b64(png(4, 4))}}]},
                   {"role": "model", "parts": [{"text": "", "thought": True,
                                                "thoughtSignature": "c2ln"}, {"text": "b"}]},
                   {"role": "user", "parts": [{"text": "c"}]}])])


def g_step(sig=None, name="a"):
    call = {"functionCall": {"name": name, "args": {}}}
    if sig:
        call["thoughtSignature"] = sig
    return [{"role": "model", "parts": [{"text": "calling"}, call]},
            {"role": "user", "parts": [{"functionResponse": {"name": name, "response": {}}}]}]


USER_G = {"role": "user", "parts": [{"text": "go"}]}
rule("Gemini 3: the current turn's calls carry their thoughtSignature", "gemini",
     [(gb(contents=[USER_G] + g_step("c2ln") + g_step(None, "b")), 400,
       G(fake_rules.SIGNATURE_TEXT.format(name="b", pos=4)))],
     # An earlier turn (before the last user text) may lack them.
     [gb(contents=[USER_G] + g_step("c2ln") + g_step("c2ln", "b")),
      gb(contents=[USER_G] + g_step() + [{"role": "model", "parts": [{"text": "done"}]},
                                         USER_G] + g_step("skip_thought_signature_validator"))],
     model="gemini-3-pro-preview")
rule("Gemini 2.5 does not require signatures", "gemini", [],
     [gb(contents=[USER_G] + g_step())], model="gemini-2.5-pro")


def gcfg(**tc):
    return gb(generationConfig={"thinkingConfig": tc})


rule("thinkingBudget: 2.5 Pro cannot turn thinking off", "gemini",
     [(gcfg(thinkingBudget=0), 400,
       G("Budget 0 is invalid. This model only works in thinking mode."))],
     [gcfg(thinkingBudget=128), gcfg(thinkingBudget=-1), gcfg(thinkingBudget=32768)],
     model="gemini-2.5-pro")
rule("thinkingBudget: the model's range", "gemini",
     [(gcfg(thinkingBudget=52428), 400, G("The thinking budget (52428) is invalid.")),
      (gcfg(thinkingBudget=100), 400, G("The thinking budget (100) is invalid.")),
      (gcfg(thinkingBudget=-2), 400, G("The thinking budget (-2) is invalid.")),
      (gcfg(thinkingBudget=19660.8), 400,
       G("Invalid value at 'generation_config.thinking_config.thinking_budget' (TYPE_INT32), "
         "19660.8"))],
     [gcfg(thinkingBudget=0), gcfg(thinkingBudget=512), gcfg(thinkingBudget=24576)],
     model="gemini-2.5-flash-lite")
rule("thinkingBudget: Gemini 3 cannot turn thinking off either", "gemini",
     [(gcfg(thinkingBudget=0), 400,
       G("Budget 0 is invalid. This model only works in thinking mode."))],
     [gcfg(thinkingBudget=2048)], model="gemini-3.1-pro-preview")
rule("thinkingLevel refused on 2.5", "gemini",
     [(gcfg(thinkingLevel="low"), 400, G("Thinking level is not supported for this model."))],
     [gcfg(thinkingBudget=1024)], model="gemini-2.5-flash")
rule("thinkingLevel: the model's levels", "gemini",
     [(gcfg(thinkingLevel="minimal"), 400,
       G("Thinking level MINIMAL is not supported for this model.")),
      (gcfg(thinkingLevel="medium"), 400,
       G("Thinking level MEDIUM is not supported for this model.")),
      (gcfg(thinkingLevel="ultra"), 400,
       G("Invalid value at 'generation_config.thinking_config.thinking_level' "
         "(type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingConfig."
         "ThinkingLevel), \"ultra\""))],
     [gcfg(thinkingLevel="low"), gcfg(thinkingLevel="HIGH")], model="gemini-3-pro-preview")
rule("thinkingLevel: Flash has minimal and medium", "gemini", [],
     [gcfg(thinkingLevel="minimal"), gcfg(thinkingLevel="medium")],
     model="gemini-3-flash-preview")
rule("thinkingBudget and thinkingLevel not together", "gemini",
     [(gcfg(thinkingBudget=1024, thinkingLevel="high"), 400,
       G("You can only set only one of thinking budget and thinking level."))],
     [gcfg(thinkingLevel="high")], model="gemini-3-flash-preview")
rule("no thinkingConfig before 2.5", "gemini",
     [(gcfg(thinkingBudget=0), 400, G("thinking_config is not supported."))],
     [gb()], model="gemini-2.0-flash")
rule("maxOutputTokens within the model's limit", "gemini",
     [(gb(generationConfig={"maxOutputTokens": 8193}), 400,
       G("Unable to submit request because it has a maxOutputTokens value of 8193 but the "
         "supported range is from 1 (inclusive) to 8193 (exclusive). Update the value and try "
         "again."))],
     [gb(generationConfig={"maxOutputTokens": 8192})], model="gemini-2.0-flash")


@check("gemini: request payload at most 20 MB")
def check_gemini_size(fake):
    def body(n):
        return gb(contents=[{"role": "user", "parts": [{"text": "see"}, {"inlineData": {
            "mimeType": "image/png", "data": padded_b64(png(64, 64), n)}}]}])
    refused(fake, "gemini", body(20_971_520), 400,
            G("Request payload size exceeds the limit: 20971520 bytes."))
    accepted(fake, "gemini", body(20_000_000))
    fake.reset()


@check("gemini: input within the context window")
def check_gemini_context(fake):
    body = gb(contents=[{"role": "user", "parts": [{"text": "x" * 4_200_000}]}])
    n = fake_rules.estimate_tokens("gemini", body)
    refused(fake, "gemini", body, 400,
            G(f"The input token count ({n}) exceeds the maximum number of tokens allowed "
              "(1048576)."), model="gemini-2.0-flash")
    accepted(fake, "gemini", gb(contents=[{"role": "user", "parts": [{"text": "x" * 4_100_000}]}]),
             model="gemini-2.0-flash")


# ---------------------------------------------------------------- models and tokens

@check("model table: longest prefix at a name boundary; unknown names get the default")
def check_model_table(_fake):
    for name, key in (("claude-opus-4-1-20250805", "claude-opus-4-1"),
                      ("claude-opus-4-20250514", "claude-opus-4"),
                      ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"), ("gpt-4oops", None),
                      ("gpt-5.4-mini", "gpt-5"), ("gemini-2.5-flash-lite-preview-06-17",
                                                  "gemini-2.5-flash-lite"),
                      ("gemini-3.1-pro-preview", "gemini-3.1-pro"), ("o3", "o3"),
                      ("fake-model", None), ("vendor/third-model:8b", None)):
        expect_eq(fake_rules.model_key(name), key, name)
    info = fake_rules.model_info("other-model")
    expect_eq((info["context"], info["max_output"]), (1_000_000, 1_000_000), "the default")


@check("POST /_fake/models: test models, kept across /_fake/reset, reset_models")
def check_model_overrides(fake):
    st, _, doc = fake.json("POST", "/_fake/models", {"models": {
        "tiny-model": {"context": 100, "max_output": 50},
        "claude-opus-4-7-custom": {"context": 300_000}}})
    expect_eq(st, 200, f"POST /_fake/models {doc}")
    refused(fake, "anthropic", ab("tiny-model", max_tokens=60), 400, A(
        "max_tokens: 60 > 50, which is the maximum allowed number of output tokens for "
        "tiny-model"))
    body = ab("tiny-model", max_tokens=50, messages=[{"role": "user", "content": "w" * 400}])
    n = fake_rules.estimate_tokens("anthropic", body)
    refused(fake, "anthropic", body, 400, A(f"prompt is too long: {n} tokens > 100 maximum"))
    refused(fake, "openai", ob("tiny-model", max_completion_tokens=51), 400, O(
        "max_completion_tokens is too large: 51. This model supports at most 50 completion "
        "tokens, whereas you provided 51.", "invalid_value", "max_completion_tokens"))
    # An override keeps the flags of the table entry its name matches.
    refused(fake, "anthropic", ab("claude-opus-4-7-custom", max_tokens=4096, thinking={
        "type": "enabled", "budget_tokens": 2048}), 400, A(
        '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" '
        'and "output_config.effort" to control thinking behavior.'))
    fake.reset()
    expect_eq(sorted(fake.json("GET", "/_fake/models")[2]["models"]),
              ["claude-opus-4-7-custom", "huge-window", "tiny-model"], "kept across a reset")
    refused(fake, "anthropic", ab("tiny-model", max_tokens=60), 400, A(
        "max_tokens: 60 > 50, which is the maximum allowed number of output tokens for "
        "tiny-model"))
    for bad in ({"models": {"m": {"contxt": 5}}}, {"models": {"m": {"context": "5"}}},
                {"models": {"m": {"adaptive_thinking": "maybe"}}}, {"models": []}):
        st, _, doc = fake.json("POST", "/_fake/models", bad)
        expect_eq(st, 400, f"malformed {bad}: {doc}")
    st, _, doc = fake.json("POST", "/_fake/models", {"reset_models": True})
    expect_eq((st, doc["models"]), (200, {}), "reset_models")
    accepted(fake, "anthropic", ab("tiny-model", max_tokens=60))


@check("token estimate: compact JSON / 4 without base64, plus each API's image tokens")
def check_token_estimate(_fake):
    body = {"messages": [{"role": "user", "content": "abcd" * 10}]}
    text = json.dumps(body, separators=(",", ":"))
    expect_eq(fake_rules.estimate_tokens("openai", body), -(-len(text) // 4), "text only")

    def with_img(api, img):
        return fake_rules.estimate_tokens(api, img(b64(png(1024, 1024)))) - \
            fake_rules.estimate_tokens(api, img(""))
    expect_eq(with_img("anthropic", lambda d: {"messages": [{"role": "user", "content": [
        a_img(d)]}]}) + 1600, 1399, "anthropic: ceil(1024*1024/750)")
    # OpenAI: 1024x1024 -> 768x768 -> 4 tiles -> 85 + 680.
    expect_eq(with_img("openai", lambda d: {"messages": [{"role": "user", "content": [
        o_img(d)]}]}) + 765, 765, "openai: tiles")
    # OpenAI's documented example: 2048x4096 -> 1024x2048 -> 768x1536, 6 tiles.
    expect_eq(fake_rules.openai_image_tokens((2048, 4096)), 1105, "2048x4096")
    expect_eq(fake_rules.openai_image_tokens((4096, 1024)), 85 + 170 * 4, "2048x512: 4 tiles")
    expect_eq(fake_rules.openai_image_tokens((4096, 1024), "low"), 85, "detail low")
    body = {"contents": [{"parts": [{"inlineData": {"mimeType": "image/png",
                                                    "data": b64(png(9000, 9000))}}]}]}
    empty = json.dumps({"contents": [{"parts": [{"inlineData": {"mimeType": "image/png",
                                                                "data": ""}}]}]},
                       separators=(",", ":"))
    expect_eq(fake_rules.estimate_tokens("gemini", body), -(-len(empty) // 4) + 258,
              "gemini: 258 an image, its base64 not counted")
    expect_eq(fake_rules.image_size(jpeg(640, 480)), (640, 480), "JPEG SOF0")
    expect_eq(fake_rules.image_size(png(3, 7)), (3, 7), "PNG IHDR")


# ---------------------------------------------------------------- turn fields

def a_stream(fake, body, turn):
    fake.reset()
    fake.script(turn)
    st, hdrs, data, exc = stream_raw(fake, "/v1/messages", dict(body, stream=True), ANT_H)
    expect(exc is None and st == 200, f"stream {st} {exc!r}")
    return [(e, json.loads(d)) for e, d in sse_events(data)]


@check("stream_error: 200, then the API's error event and the end (each API)")
def check_stream_error(fake):
    ev = a_stream(fake, ab(), {"text": "never sent", "stream_error": "overloaded_error"})
    expect_eq([e for e, _ in ev], ["message_start", "error"], "anthropic events")
    expect_eq(ev[-1][1], {"type": "error", "error": {"type": "overloaded_error",
                                                     "message": "Overloaded"}}, "error event")
    expect_eq(fake.requests()[-1]["error"], "stream_error: overloaded_error", "logged")
    ev = a_stream(fake, ab(), {"text": "partial answer here", "stream_error": "api_error",
                               "stream_error_after_text": True, "chunks": 4})
    names = [e for e, _ in ev]
    expect_eq(names[:3], ["message_start", "content_block_start", "ping"], "text first")
    expect(names.count("content_block_delta") >= 1 and "message_stop" not in names and
           names[-1] == "error", names)
    expect_eq(ev[-1][1]["error"], {"type": "api_error", "message": "Internal server error"},
              "api_error")
    fake.reset()
    fake.script({"stream_error": "overloaded_error"})
    st, doc = post(fake, "anthropic", ab())
    expect_eq((st, doc["error"]), (529, {"type": "overloaded_error", "message": "Overloaded"}),
              "unstreamed: the HTTP error")

    fake.reset()
    fake.script({"text": "abcdef", "stream_error": "server_error", "stream_error_after_text": True})
    st, _, data, exc = stream_raw(fake, "/v1/chat/completions", ob(stream=True), OAI_H)
    events = [json.loads(d) for _, d in sse_events(data)]
    expect_eq(events[0]["choices"][0]["delta"]["role"], "assistant", "first chunk")
    expect_eq(events[-1], {"error": {"message": "The server had an error while processing your "
                                                "request. Sorry about that!",
                                     "type": "server_error", "param": None, "code": None}},
              "openai error chunk")
    expect(b"[DONE]" not in data and len(events) >= 3, f"{len(events)} chunks")
    fake.script({"stream_error": "x"})
    st, doc = post(fake, "openai", ob())
    expect_eq((st, doc["error"]["type"]), (500, "server_error"), "openai unstreamed")

    fake.reset()
    fake.script({"text": "hello", "stream_error": "UNAVAILABLE"})
    st, _, data, exc = stream_raw(fake, path_of("gemini", stream=True), gb(), GEM_H)
    events = [json.loads(d) for _, d in sse_events(data, b"\r\n\r\n")]
    expect_eq(events, [{"error": {"code": 503, "message": "The model is overloaded. Please try "
                                                        "again later.", "status": "UNAVAILABLE"}}],
              "gemini error chunk")
    fake.script({"stream_error": "x"})
    st, doc = post(fake, "gemini", gb())
    expect_eq((st, doc["error"]["status"]), (503, "UNAVAILABLE"), "gemini unstreamed")


@check("refusal (OpenAI message.refusal / delta.refusal) and content_filter")
def check_refusal(fake):
    fake.reset()
    fake.script({"refusal": "I can't help with that."},
                {"refusal": "I can't help with that.", "chunks": 3},
                {"text": "partial", "stop_reason": "content_filter"})
    st, doc = post(fake, "openai", ob())
    msg = doc["choices"][0]["message"]
    expect_eq((msg["content"], msg["refusal"], doc["choices"][0]["finish_reason"]),
              (None, "I can't help with that.", "stop"), "unstreamed refusal")
    st, _, data, exc = stream_raw(fake, "/v1/chat/completions", ob(stream=True), OAI_H)
    chunks = [json.loads(d) for _, d in sse_events(data)[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    expect_eq(deltas[0].get("content"), None, "content null")
    expect_eq("".join(d.get("refusal") or "" for d in deltas), "I can't help with that.",
              "refusal deltas")
    expect(not any(d.get("content") for d in deltas), "no content")
    st, doc = post(fake, "openai", ob())
    expect_eq((doc["choices"][0]["message"]["content"], doc["choices"][0]["finish_reason"]),
              ("partial", "content_filter"), "content_filter")
    # The same turns on the other APIs.
    fake.script({"refusal": "No."}, {"stop_reason": "content_filter"})
    st, doc = post(fake, "anthropic", ab())
    expect_eq((doc["content"], doc["stop_reason"]),
              ([{"type": "text", "text": "No.", "citations": None}], "refusal"), "anthropic")
    st, doc = post(fake, "gemini", gb())
    expect_eq(doc["candidates"][0], {"index": 0, "finishReason": "SAFETY"}, "gemini")


@check("Gemini SAFETY, MALFORMED_FUNCTION_CALL (finish_message), prompt_blocked")
def check_gemini_finishes(fake):
    fake.reset()
    fake.script({"stop_reason": "SAFETY"},
                {"stop_reason": "MALFORMED_FUNCTION_CALL",
                 "finish_message": "Malformed function call: print(default_api.x(}"},
                {"prompt_blocked": "SAFETY"}, {"prompt_blocked": "OTHER"},
                {"text": "recited", "stop_reason": "RECITATION"})
    st, doc = post(fake, "gemini", gb())
    expect_eq(doc["candidates"], [{"index": 0, "finishReason": "SAFETY"}], "SAFETY")
    st, _, data, exc = stream_raw(fake, path_of("gemini", stream=True), gb(), GEM_H)
    events = [json.loads(d) for _, d in sse_events(data, b"\r\n\r\n")]
    expect_eq(events[-1]["candidates"], [{"index": 0, "finishReason": "MALFORMED_FUNCTION_CALL",
                                          "finishMessage": "Malformed function call: "
                                                           "print(default_api.x(}"}],
              "MALFORMED_FUNCTION_CALL")
    st, doc = post(fake, "gemini", gb())
    expect("candidates" not in doc, doc)
    expect_eq(doc["promptFeedback"]["blockReason"], "SAFETY", "blockReason")
    st, _, data, exc = stream_raw(fake, path_of("gemini", stream=True), gb(), GEM_H)
    events = [json.loads(d) for _, d in sse_events(data, b"\r\n\r\n")]
    expect(len(events) == 1 and "candidates" not in events[0] and
           events[0]["promptFeedback"]["blockReason"] == "OTHER", events)
    st, doc = post(fake, "gemini", gb())
    expect_eq((doc["candidates"][0]["content"]["parts"], doc["candidates"][0]["finishReason"]),
              ([{"text": "recited"}], "RECITATION"), "text kept")
    # The other APIs' equivalents.
    fake.script({"stop_reason": "SAFETY", "text": "t"}, {"stop_reason": "MAX_TOKENS", "text": "t"})
    st, doc = post(fake, "openai", ob())
    expect_eq(doc["choices"][0]["finish_reason"], "content_filter", "SAFETY on openai")
    st, doc = post(fake, "anthropic", ab())
    expect_eq(doc["stop_reason"], "max_tokens", "MAX_TOKENS on anthropic")
    st, _, doc = fake.json("POST", "/_fake/script", {"turns": [{"stop_reason": "DONE"}]})
    expect_eq(st, 400, "an unknown stop_reason is refused")


@check("stop_reason pause_turn/refusal/max_tokens render as given (Anthropic)")
def check_anthropic_stops(fake):
    fake.reset()
    for reason in ("pause_turn", "refusal", "max_tokens"):
        ev = a_stream(fake, ab(), {"text": "some text", "stop_reason": reason})
        md = [d for e, d in ev if e == "message_delta"][0]
        expect_eq(md["delta"]["stop_reason"], reason, reason)
        text = "".join(d["delta"].get("text", "") for e, d in ev if e == "content_block_delta")
        expect_eq(text, "some text", "the partial text renders")


@check("max_tokens with tool calls: the last call's input is cut (cut_last_call)")
def check_cut_last_call(fake):
    calls = [{"name": "first", "arguments": {"a": 1}},
             {"name": "second", "arguments": {"text": "a long argument", "n": [1, 2, 3]}}]
    full = json.dumps(calls[1]["arguments"], separators=(",", ":"))
    ev = a_stream(fake, ab(), {"tool_calls": calls, "stop_reason": "max_tokens"})
    frags = {}
    for e, d in ev:
        if e == "content_block_delta" and d["delta"]["type"] == "input_json_delta":
            frags[d["index"]] = frags.get(d["index"], "") + d["delta"]["partial_json"]
    expect_eq(json.loads(frags[0]), {"a": 1}, "the first call is whole")
    expect(full.startswith(frags[1]) and len(frags[1]) < len(full), frags[1])
    try:
        json.loads(frags[1])
        raise AssertionError("the cut input parses")
    except ValueError:
        pass
    expect_eq([d for e, d in ev if e == "message_delta"][0]["delta"]["stop_reason"],
              "max_tokens", "stop_reason")
    fake.reset()
    fake.script({"tool_calls": calls, "stop_reason": "max_tokens"},
                {"tool_calls": calls, "stop_reason": "length"},
                {"tool_calls": calls, "stop_reason": "MAX_TOKENS"},
                {"tool_calls": calls, "stop_reason": "length", "cut_last_call": False})
    st, doc = post(fake, "anthropic", ab())
    expect_eq([b["input"] for b in doc["content"]], [{"a": 1}, {}], "unstreamed: cut input {}")
    st, doc = post(fake, "openai", ob())
    args = [c["function"]["arguments"] for c in doc["choices"][0]["message"]["tool_calls"]]
    expect(args[0] == '{"a":1}' and full.startswith(args[1]) and args[1] != full, args)
    expect_eq(doc["choices"][0]["finish_reason"], "length", "finish_reason")
    st, doc = post(fake, "gemini", gb())
    cand = doc["candidates"][0]
    expect_eq(([p["functionCall"]["name"] for p in cand["content"]["parts"]
                if "functionCall" in p], cand["finishReason"]), (["first"], "MAX_TOKENS"),
              "gemini drops the cut call")
    st, doc = post(fake, "openai", ob())
    expect_eq(doc["choices"][0]["message"]["tool_calls"][1]["function"]["arguments"], full,
              "cut_last_call false")


@check("thoughts_tokens: hidden thinking counts against maxOutputTokens (Gemini, OpenAI)")
def check_thoughts(fake):
    fake.reset()
    fake.script({"text": "the answer", "thoughts_tokens": 5000},
                {"text": "the answer", "thoughts_tokens": 5000},
                {"text": "the answer", "thoughts_tokens": 5000},
                {"text": "the answer", "thoughts_tokens": 5000})
    # 5000 thoughts + the answer > 4096: an empty MAX_TOKENS answer.
    st, doc = post(fake, "gemini", gb(generationConfig={"maxOutputTokens": 4096}))
    expect_eq(doc["candidates"], [{"index": 0, "finishReason": "MAX_TOKENS"}], "no content")
    u = doc["usageMetadata"]
    expect("candidatesTokenCount" not in u and u["thoughtsTokenCount"] == 4096, u)
    # The budget caps the thoughts: 1024 + the answer fit.
    st, _, data, exc = stream_raw(fake, path_of("gemini", stream=True), gb(generationConfig={
        "maxOutputTokens": 4096, "thinkingConfig": {"thinkingBudget": 1024}}), GEM_H)
    events = [json.loads(d) for _, d in sse_events(data, b"\r\n\r\n")]
    text = "".join(p.get("text", "") for e in events for p in e["candidates"][0]
                   .get("content", {}).get("parts", []))
    expect_eq((text, events[-1]["candidates"][0]["finishReason"],
               events[-1]["usageMetadata"]["thoughtsTokenCount"]), ("the answer", "STOP", 1024),
              "within the budget")
    # -1 is unbounded: 5000 thoughts > 4096 again.
    st, doc = post(fake, "gemini", gb(generationConfig={
        "maxOutputTokens": 4096, "thinkingConfig": {"thinkingBudget": -1}}))
    expect_eq(doc["candidates"][0]["finishReason"], "MAX_TOKENS", "dynamic budget")
    st, doc = post(fake, "openai", ob("o4-mini", max_completion_tokens=4096))
    c = doc["choices"][0]
    expect_eq((c["message"]["content"], c["finish_reason"],
               doc["usage"]["completion_tokens_details"]["reasoning_tokens"]),
              ("", "length", 4096), "openai: reasoning spent every token")


# ---------------------------------------------------------------- capture and offline checks

def run_fake(*args, env=None):
    return subprocess.run([sys.executable, base.FAKE, *args], capture_output=True, text=True,
                          timeout=60, env=env)


@check("--capture DIR (and FAKE_LLM_CAPTURE_DIR): one JSON file per provider request")
def check_capture(_fake):
    with tempfile.TemporaryDirectory() as d:
        fake = Fake("--capture", d)
        try:
            fake.script({"text": "a"})
            post(fake, "anthropic", ab())
            post(fake, "openai", ob("o3", max_tokens=5))
            post(fake, "gemini", gb(), stream=True)
            fake.json("GET", "/_fake/requests")          # control requests: not captured
        finally:
            fake.stop()
        names = sorted(os.listdir(d))
        expect_eq(names, ["0001-anthropic.json", "0002-openai.json", "0003-gemini.json"], "files")
        docs = [json.load(open(os.path.join(d, n))) for n in names]
        expect_eq(set(docs[0]), {"api", "path", "model", "headers", "body", "status", "error",
                                 "size"}, "fields")
        expect_eq((docs[0]["status"], docs[0]["error"], docs[0]["model"]),
                  (200, None, "claude-sonnet-4-5"), "accepted")
        expect_eq(docs[0]["headers"]["x-api-key"], "(redacted)", "redacted as in the log")
        expect_eq((docs[1]["status"], docs[1]["model"]), (400, "o3"), "refused")
        expect(docs[1]["error"].startswith("Unsupported parameter: 'max_tokens'"), docs[1])
        expect_eq((docs[2]["api"], docs[2]["model"], docs[2]["status"]),
                  ("gemini", "gemini-2.5-flash", 200), "gemini")
        # --validate: the refused one again, exit 1; the accepted ones alone, exit 0.
        p = run_fake("--validate", d)
        expect_eq(p.returncode, 1, f"--validate exit: {p.stdout}{p.stderr}")
        lines = p.stdout.splitlines()
        expect(lines[0].startswith("ok ") and lines[0].endswith("0001-anthropic.json (was 200)"),
               lines)
        expect(lines[1].startswith("not ok ") and "0002-openai.json (was 400): 400 Unsupported "
               "parameter: 'max_tokens'" in lines[1], lines)
        expect_eq(lines[-1], "2 ok, 1 refused", "summary")
        p = run_fake("--validate", os.path.join(d, names[0]), os.path.join(d, names[2]))
        expect_eq((p.returncode, p.stdout.splitlines()[-1]), (0, "2 ok, 0 refused"), p.stdout)
    with tempfile.TemporaryDirectory() as d:
        fake = Fake(env=dict(os.environ, FAKE_LLM_CAPTURE_DIR=d))
        try:
            post(fake, "openai", ob())
        finally:
            fake.stop()
        expect_eq(os.listdir(d), ["0001-openai.json"], "the environment variable")


@check("--check-tools API FILE: ok, or the refusal and exit 1")
def check_check_tools(_fake):
    cases = [
        ("anthropic", [a_tool()], 0, None),
        ("anthropic", [a_tool({"type": "object", "oneOf": [SCHEMA_OK]})], 1,
         "does not support oneOf, allOf, or anyOf at the top level"),
        ("openai", [o_tool()], 0, None),
        ("openai", [o_tool({"type": "object", "properties": {"a": {"type": "array"}}})], 1,
         "array schema missing items"),
        ("gemini", [g_decl()], 0, None),
        ("gemini", [g_decl({"type": "object", "properties": {"v": {}}})], 1,
         "must be specified when not using one_of"),
    ]
    with tempfile.TemporaryDirectory() as d:
        for i, (api, tools, code, needle) in enumerate(cases):
            name = os.path.join(d, f"{i}.json")
            with open(name, "w") as f:
                json.dump(tools, f)
            p = run_fake("--check-tools", api, name)
            expect_eq(p.returncode, code, f"{api} {i}: {p.stdout}{p.stderr}")
            if needle is None:
                expect_eq(p.stdout, "ok\n", "ok")
            else:
                expect(p.stdout.startswith("not ok: 400 ") and needle in p.stdout, p.stdout)
        # --model picks the model the tools go to.
        name = os.path.join(d, "ok.json")
        with open(name, "w") as f:
            json.dump([g_decl()], f)
        p = run_fake("--check-tools", "gemini", name, "--model", "gemini-3-pro-preview")
        expect_eq((p.returncode, p.stdout), (0, "ok\n"), p.stdout)


@check("import fake_llm; fake_llm.validate(api, headers, body, model)")
def check_import(_fake):
    sys.path.insert(0, os.path.dirname(base.FAKE))
    import fake_llm
    expect_eq(fake_llm.validate("openai", {"Authorization": "Bearer k"}, ob()), None, "accepted")
    got = fake_llm.validate("anthropic", {"X-Api-Key": "k", "anthropic-version": "2023-06-01"},
                            ab("claude-3-haiku", max_tokens=4097))
    expect_eq(got, (400, {"type": "error", "error": {
        "type": "invalid_request_error", "message": "max_tokens: 4097 > 4096, which is the "
        "maximum allowed number of output tokens for claude-3-haiku"}}), "refused")
    got = fake_llm.validate("gemini", {"x-goog-api-key": "k"}, gcfg(thinkingBudget=0),
                            "gemini-2.5-pro")
    expect_eq(got[0], 400, "the model argument")
    expect_eq(fake_llm.validate("gemini", {}, gb(), "gemini-2.5-pro",
                                path="/v1beta/models/gemini-2.5-pro:generateContent?key=k"),
              None, "the key in the path")


# ---------------------------------------------------------------- main

def main():
    signal.signal(signal.SIGALRM, base.on_alarm)
    signal.alarm(240)
    t0 = time.monotonic()
    fake = Fake()
    for desc, fn in CHECKS:
        base.run_check(desc, fn, fake)
    st = fake.stop()
    base.RESULTS["n"] += 1
    if st == 0:
        base.RESULTS["passed"] += 1
        print(f"ok {base.RESULTS['n']} - the server exits 0 on SIGTERM")
    else:
        base.RESULTS["failed"] += 1
        print(f"not ok {base.RESULTS['n']} - the server exits 0 on SIGTERM (status {st})")
    if base.RESULTS["failed"]:
        print("# the fake server's stderr (last lines):")
        for line in fake.log[-30:]:
            print(f"#   {line.rstrip()}")
    print(f"# total time {time.monotonic() - t0:.1f} s")
    print(f"{base.RESULTS['passed']} passed, {base.RESULTS['failed']} failed")
    return 1 if base.RESULTS["failed"] else 0


if __name__ == "__main__":
    try:
        status = main()
    finally:
        for s in base.SERVERS:
            if s.proc.poll() is None:
                s.proc.kill()
    sys.exit(status)
