"""fake_rules: what the real LLM APIs refuse, for fake_llm.py.

A double is at least as strict as the real thing: every rule here is one the
real Anthropic, OpenAI or Gemini server enforces, answered with the real HTTP
status and, where a public report quotes it, the real error text. Rules whose
text is not quoted anywhere carry a "likely" comment; README.md lists every
rule with its source and confidence.

The one entry point, shared by the HTTP server, `fake_llm.py --validate` and
`fake_llm.py --check-tools`:

    validate(api, headers, body, model=None, ...) -> None | (status, error_body)

It also holds the model table (context window, output limit, capabilities),
the token estimate used for context-window refusals, a PNG/JPEG/GIF/WebP
header reader, a JSON-pointer resolver and the thinking-signature helpers.
Standard library only.
"""

import base64
import binascii
import hashlib
import json
import math
import re
from urllib.parse import parse_qsl, unquote, urlsplit

APIS = ("anthropic", "openai", "gemini")

# 2026-10-21 is what @anthropic-ai/sdk 1.x sends; its wire format for
# messages, streams and errors is the one of 2023-06-01.
ANTHROPIC_VERSIONS = ("2023-06-01", "2023-01-01", "2026-10-21")

GEMINI_PATH = re.compile(
    r"^/(v1|v1beta|v1alpha)/models/([^/:]+):(generateContent|streamGenerateContent)$")


class Refusal(Exception):
    """A request the real API refuses. The validators raise it; validate()
    turns it into the API's error body."""

    def __init__(self, status, message, param=None, code=None, etype=None, body=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param      # OpenAI
        self.code = code        # OpenAI
        self.etype = etype      # Anthropic / OpenAI error type override
        self.body = body        # a whole body, when the real one has another shape


# --------------------------------------------------------------------------
# The model table.
#
# Keyed by model-name prefix; the longest prefix that ends at a name boundary
# wins ("gpt-4o" matches "gpt-4o-2024-08-06" but not "gpt-4oops"). Names
# that match nothing (the tests' "fake-model", "other-model") get DEFAULT_MODEL:
# a generous window and no special rule, so only the rules that hold for every
# model apply to them.
#
# Fields: context (input tokens), max_output (output tokens), and flags:
#   adaptive_thinking  Anthropic: "no" (adaptive refused), "yes" (adaptive and
#                      enabled accepted), "only" (enabled refused)
#   xhigh_effort       Anthropic: output_config.effort "xhigh" accepted
#   context_1m         Anthropic: the anthropic-beta context-1m-* header raises
#                      the window to 1,000,000
#   reasoning          OpenAI: a reasoning model (max_tokens refused)
#   input_limit        OpenAI: an input cap below the window (gpt-5's 272k)
#   thinking_config    Gemini: generationConfig.thinkingConfig accepted
#   budget             Gemini: [min, max] of thinkingBudget (-1 = dynamic is
#                      always accepted), or None for no range check
#   budget_zero        Gemini: thinkingBudget 0 (thinking off) accepted
#   levels             Gemini: the thinkingLevel values accepted, or None for
#                      no check ([] = thinkingLevel refused)
#   signatures         Gemini: functionCall parts of the current turn need
#                      their thoughtSignature (Gemini 3)

DEFAULT_MODEL = {
    "context": 1_000_000, "max_output": 1_000_000, "extended_thinking": True,
    "adaptive_thinking": "yes", "xhigh_effort": True, "context_1m": False,
    "reasoning": False, "input_limit": None,
    "thinking_config": True, "budget": None, "budget_zero": True, "levels": None,
    "signatures": False, "image_output": False,
}

_CLAUDE_OLD = {"adaptive_thinking": "no", "xhigh_effort": False}
# Claude 3 and 3.5 have no extended thinking at all (anthropics/claude-code
# #2245: "'claude-3-5-sonnet-20241022' does not support thinking.").
_CLAUDE_3 = dict(_CLAUDE_OLD, extended_thinking=False)
_GEMINI_25 = {"context": 1_048_576, "max_output": 65_536, "levels": []}
_GEMINI_3 = {"context": 1_048_576, "max_output": 65_536, "signatures": True,
             "budget_zero": False, "levels": ["low", "high"]}
_ALL_LEVELS = ["minimal", "low", "medium", "high"]

MODELS = {
    # Anthropic: https://docs.anthropic.com/en/docs/about-claude/models
    "claude-3-haiku": dict(_CLAUDE_3, context=200_000, max_output=4_096),
    "claude-3-opus": dict(_CLAUDE_3, context=200_000, max_output=4_096),
    "claude-3-5-haiku": dict(_CLAUDE_3, context=200_000, max_output=8_192),
    "claude-3-5-sonnet": dict(_CLAUDE_3, context=200_000, max_output=8_192),
    # Quoted: "max_tokens: 10000 > 4096, which is the maximum allowed number
    # of output tokens for claude-3-5-sonnet-20240620" (NextChat#4964).
    "claude-3-5-sonnet-20240620": dict(_CLAUDE_3, context=200_000, max_output=4_096),
    "claude-3-7-sonnet": dict(_CLAUDE_OLD, context=200_000, max_output=64_000),
    "claude-sonnet-4": dict(_CLAUDE_OLD, context=200_000, max_output=64_000, context_1m=True),
    "claude-opus-4": dict(_CLAUDE_OLD, context=200_000, max_output=32_000),
    "claude-opus-4-1": dict(_CLAUDE_OLD, context=200_000, max_output=32_000),
    "claude-sonnet-4-5": dict(_CLAUDE_OLD, context=200_000, max_output=64_000,
                              context_1m=True),
    "claude-haiku-4-5": dict(_CLAUDE_OLD, context=200_000, max_output=64_000),
    "claude-opus-4-5": dict(_CLAUDE_OLD, context=200_000, max_output=64_000),
    # 4.6: adaptive thinking recommended, manual "enabled" still accepted.
    "claude-opus-4-6": {"context": 200_000, "max_output": 128_000,
                        "adaptive_thinking": "yes", "xhigh_effort": False,
                        "context_1m": True},
    "claude-sonnet-4-6": {"context": 200_000, "max_output": 64_000,
                          "adaptive_thinking": "yes", "xhigh_effort": False,
                          "context_1m": True},
    # 4.7 and later: adaptive only (docker/docker-agent#2563, elizaOS/eliza#16149).
    "claude-opus-4-7": {"context": 200_000, "max_output": 128_000,
                        "adaptive_thinking": "only", "xhigh_effort": True},
    "claude-opus-4-8": {"context": 200_000, "max_output": 128_000,
                        "adaptive_thinking": "only", "xhigh_effort": True},
    # Sonnet 5: adaptive only too (zai-org/feedback#222, openclaw#101674).
    "claude-sonnet-5": {"context": 200_000, "max_output": 64_000,
                        "adaptive_thinking": "only", "xhigh_effort": True},
    # OpenAI: https://platform.openai.com/docs/models
    "gpt-3.5-turbo": {"context": 16_385, "max_output": 4_096},
    "gpt-4": {"context": 8_192, "max_output": 8_192},
    "gpt-4-turbo": {"context": 128_000, "max_output": 4_096},
    "gpt-4o": {"context": 128_000, "max_output": 16_384},
    "gpt-4o-mini": {"context": 128_000, "max_output": 16_384},
    "gpt-4.1": {"context": 1_047_576, "max_output": 32_768},
    "gpt-4.1-mini": {"context": 1_047_576, "max_output": 32_768},
    "gpt-4.1-nano": {"context": 1_047_576, "max_output": 32_768},
    "o1": {"context": 200_000, "max_output": 100_000, "reasoning": True},
    "o1-mini": {"context": 128_000, "max_output": 65_536, "reasoning": True},
    "o3": {"context": 200_000, "max_output": 100_000, "reasoning": True},
    "o3-mini": {"context": 200_000, "max_output": 100_000, "reasoning": True},
    "o4-mini": {"context": 200_000, "max_output": 100_000, "reasoning": True},
    # gpt-5: a 400k window of which at most 272k input (cline/cline#5474
    # quotes the "configured limit of 272000 tokens" refusal); later gpt-5.x
    # match this prefix too ("gpt-5.4-mini").
    "gpt-5": {"context": 400_000, "input_limit": 272_000, "max_output": 128_000,
              "reasoning": True},
    "gpt-5-mini": {"context": 400_000, "input_limit": 272_000, "max_output": 128_000,
                   "reasoning": True},
    "gpt-5-nano": {"context": 400_000, "input_limit": 272_000, "max_output": 128_000,
                   "reasoning": True},
    "gpt-5-chat": {"context": 128_000, "max_output": 16_384},
    # Gemini: https://ai.google.dev/gemini-api/docs/models,
    # https://ai.google.dev/gemini-api/docs/thinking
    "gemini-1.5-flash": {"context": 1_048_576, "max_output": 8_192, "thinking_config": False},
    "gemini-1.5-pro": {"context": 2_097_152, "max_output": 8_192, "thinking_config": False},
    "gemini-2.0-flash": {"context": 1_048_576, "max_output": 8_192, "thinking_config": False},
    "gemini-2.5-pro": dict(_GEMINI_25, budget=[128, 32_768], budget_zero=False),
    "gemini-2.5-flash": dict(_GEMINI_25, budget=[1, 24_576], budget_zero=True),
    "gemini-2.5-flash-lite": dict(_GEMINI_25, budget=[512, 24_576], budget_zero=True),
    # The image model (Nano Banana): 32,768 tokens in and out, no thinking
    # configuration, images out when asked for ("image_output").
    "gemini-2.5-flash-image": {"context": 32_768, "max_output": 32_768,
                               "thinking_config": False, "image_output": True},
    "gemini-3": dict(_GEMINI_3),
    "gemini-3-flash": dict(_GEMINI_3, levels=_ALL_LEVELS),
    "gemini-3.1-pro": dict(_GEMINI_3, levels=["low", "medium", "high"]),
    "gemini-3.1-flash": dict(_GEMINI_3, levels=_ALL_LEVELS),
    "gemini-3.5-flash": dict(_GEMINI_3, levels=_ALL_LEVELS),
}

MODEL_FLAG_TYPES = {
    "context": int, "max_output": int, "adaptive_thinking": str, "xhigh_effort": bool,
    "context_1m": bool, "reasoning": bool, "input_limit": (int, type(None)),
    "thinking_config": bool, "budget": (list, type(None)), "budget_zero": bool,
    "levels": (list, type(None)), "signatures": bool, "extended_thinking": bool,
    "image_output": bool,
}

_NAME_BOUNDARY = "-.:@_/ "


def model_key(name):
    """The MODELS key that applies to a model name, or None."""
    name = (name or "").lower()
    best = None
    for key in MODELS:
        if name == key or (name.startswith(key) and name[len(key)] in _NAME_BOUNDARY):
            if best is None or len(key) > len(best):
                best = key
    return best


def model_info(name, overrides=None):
    """The limits and flags of a model: the table's entry (or the default),
    then a test's override for that exact name (POST /_fake/models)."""
    info = dict(DEFAULT_MODEL)
    key = model_key(name)
    if key:
        info.update(MODELS[key])
    if overrides and name in overrides:
        info.update(overrides[name])
    info["name"] = name
    info["key"] = key
    return info


def check_model_entry(name, entry):
    """An error message for a malformed POST /_fake/models entry, or None."""
    if not isinstance(entry, dict):
        return f"models[{name!r}]: must be an object"
    for k, v in entry.items():
        if k not in MODEL_FLAG_TYPES:
            return f"models[{name!r}]: unknown field {k!r} (known: {', '.join(MODEL_FLAG_TYPES)})"
        want = MODEL_FLAG_TYPES[k]
        if (isinstance(v, bool) and want is not bool) or not isinstance(v, want):
            return f"models[{name!r}].{k}: wrong type"
    if entry.get("adaptive_thinking", "yes") not in ("no", "yes", "only"):
        return f"models[{name!r}].adaptive_thinking: one of 'no', 'yes', 'only'"
    return None


# --------------------------------------------------------------------------
# Images: base64 payloads, their type and size from the header bytes.

MAGIC = (("image/png", lambda d: d.startswith(b"\x89PNG\r\n\x1a\n")),
         ("image/jpeg", lambda d: d.startswith(b"\xff\xd8\xff")),
         ("image/gif", lambda d: d[:6] in (b"GIF87a", b"GIF89a")),
         ("image/webp", lambda d: d[:4] == b"RIFF" and d[8:12] == b"WEBP"))


def sniff_image(data):
    """The media type the bytes say they are, or None."""
    for media, test in MAGIC:
        if test(data):
            return media
    return None


def _be16(d, i):
    return (d[i] << 8) | d[i + 1]


def _le16(d, i):
    return d[i] | (d[i + 1] << 8)


def _le24(d, i):
    return d[i] | (d[i + 1] << 8) | (d[i + 2] << 16)


def image_size(data):
    """(width, height) read from a PNG IHDR, a JPEG SOFn marker, a GIF
    screen descriptor or a WebP VP8/VP8L/VP8X header; None when unknown."""
    try:
        kind = sniff_image(data)
        if kind == "image/png" and data[12:16] == b"IHDR":
            return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        if kind == "image/gif":
            return _le16(data, 6), _le16(data, 8)
        if kind == "image/webp":
            chunk = data[12:16]
            if chunk == b"VP8 ":
                return _le16(data, 26) & 0x3FFF, _le16(data, 28) & 0x3FFF
            if chunk == b"VP8L":
                b0, b1, b2, b3 = data[21:25]
                return (1 + (((b1 & 0x3F) << 8) | b0),
                        1 + (((b3 & 0x0F) << 10) | (b2 << 2) | ((b1 & 0xC0) >> 6)))
            if chunk == b"VP8X":
                return 1 + _le24(data, 24), 1 + _le24(data, 27)
            return None
        if kind == "image/jpeg":
            i = 2
            while i + 9 < len(data):
                if data[i] != 0xFF:
                    return None
                marker = data[i + 1]
                if marker == 0xFF:          # fill byte
                    i += 1
                    continue
                if marker == 0x01 or 0xD0 <= marker <= 0xD8:   # no length
                    i += 2
                    continue
                if marker == 0xDA:          # start of scan: no SOF before it
                    return None
                # SOF0..SOF15, but C4 (DHT), C8 (JPG) and CC (DAC) are not frames.
                if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                    return _be16(data, i + 7), _be16(data, i + 5)
                i += 2 + _be16(data, i + 2)
    except (IndexError, ValueError):
        return None
    return None


def b64_decoded_len(s):
    """The byte length of a base64 payload, without decoding it."""
    s = s.strip()
    return len(s) * 3 // 4 - (2 if s.endswith("==") else 1 if s.endswith("=") else 0)


def b64_head(s, chars=87_384):
    """The first bytes of a base64 payload (enough for any header but a
    JPEG with a large EXIF block, for which decode all)."""
    try:
        head = base64.b64decode(s[:chars - chars % 4] if len(s) > chars else s)
        if head.startswith(b"\xff\xd8") and len(s) > chars and image_size(head) is None:
            head = base64.b64decode(s)
        return head
    except (binascii.Error, ValueError):
        return b""


class Image:
    """One image of a request: its base64 text, declared type and where it is."""

    def __init__(self, b64, declared, path, detail=None):
        self.b64 = b64
        self.declared = declared
        self.path = path
        self.detail = detail
        self._head = None

    @property
    def head(self):
        if self._head is None:
            self._head = b64_head(self.b64)
        return self._head

    @property
    def actual(self):
        return sniff_image(self.head)

    @property
    def size(self):
        return image_size(self.head)


def anthropic_images(body):
    """Every base64 image block of an Anthropic request, tool results included."""
    out = []

    def block(b, path):
        if not isinstance(b, dict):
            return
        if b.get("type") == "image":
            src = b.get("source")
            if isinstance(src, dict) and src.get("type") == "base64":
                data = src.get("data") if isinstance(src.get("data"), str) else ""
                out.append(Image(data, src.get("media_type"), f"{path}.image.source.base64"))
        elif b.get("type") == "tool_result" and isinstance(b.get("content"), list):
            for k, inner in enumerate(b["content"]):
                block(inner, f"{path}.tool_result.content.{k}")

    for i, m in enumerate(body.get("messages") or []):
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            for j, b in enumerate(m["content"]):
                block(b, f"messages.{i}.content.{j}")
    return out


DATA_URL = re.compile(r"^data:([^;,]*)(;[^,]*)?,", re.S)


def openai_images(body):
    """Every image_url part of an OpenAI request: (message index, part index,
    Image or None for a remote URL, role)."""
    out = []
    for i, m in enumerate(body.get("messages") or []):
        if not isinstance(m, dict) or not isinstance(m.get("content"), list):
            continue
        for j, p in enumerate(m["content"]):
            if not isinstance(p, dict) or p.get("type") != "image_url":
                continue
            iu = p.get("image_url")
            url = iu.get("url") if isinstance(iu, dict) else iu
            img = None
            if isinstance(url, str):
                match = DATA_URL.match(url)
                if match:
                    img = Image(url[match.end():], match.group(1),
                                f"messages[{i}].content[{j}].image_url.url",
                                iu.get("detail") if isinstance(iu, dict) else None)
            out.append((i, j, img, m.get("role")))
    return out


def gemini_images(body):
    """Every inlineData part of a Gemini request, inside function responses too."""
    out = []

    def part(p, path):
        if not isinstance(p, dict):
            return
        inline = p.get("inlineData", p.get("inline_data"))
        if isinstance(inline, dict) and str(inline.get("mimeType", inline.get(
                "mime_type", ""))).startswith("image/"):
            data = inline.get("data") if isinstance(inline.get("data"), str) else ""
            out.append(Image(data, inline.get("mimeType", inline.get("mime_type")), path))
        fr = p.get("functionResponse", p.get("function_response"))
        if isinstance(fr, dict) and isinstance(fr.get("parts"), list):
            for k, inner in enumerate(fr["parts"]):
                part(inner, f"{path}.function_response.parts[{k}]")

    for i, c in enumerate(body.get("contents") or []):
        if isinstance(c, dict) and isinstance(c.get("parts"), list):
            for j, p in enumerate(c["parts"]):
                part(p, f"contents[{i}].parts[{j}]")
    return out


# --------------------------------------------------------------------------
# The token estimate (context-window refusals, and the usage the fake reports).
#
# tokens = ceil(len(compact JSON of the body, every base64 image payload
#          replaced by "") / 4) + the images' tokens:
#   Anthropic  ceil(width * height / 750) per image
#   OpenAI     85 + 170 * (512-px tiles after fitting in 2048x2048 and scaling
#              the short side down to 768); 85 for detail "low"
#   Gemini     258 per image
# An image whose size cannot be read counts as 1600 / 765 / 258.

def _strip_payloads(node):
    """The body with base64 payloads emptied (Anthropic/Gemini "data",
    OpenAI data-URL bodies), without copying anything else."""
    if isinstance(node, list):
        return [_strip_payloads(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k == "data" and isinstance(v, str) and (
                node.get("type") == "base64" or "mimeType" in node or "mime_type" in node):
            out[k] = ""
        elif k == "url" and isinstance(v, str) and v.startswith("data:"):
            match = DATA_URL.match(v)
            out[k] = v[:match.end()] if match else ""
        else:
            out[k] = _strip_payloads(v)
    return out


def openai_image_tokens(size, detail=None):
    if detail == "low":
        return 85
    if size is None:
        return 765
    w, h = size
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def estimate_tokens(api, body):
    """The fake's token count of a request body (documented above)."""
    if not isinstance(body, (dict, list)):
        return max(1, math.ceil(len(str(body)) / 4))
    text = json.dumps(_strip_payloads(body), separators=(",", ":"), ensure_ascii=False)
    tokens = math.ceil(len(text) / 4)
    if not isinstance(body, dict):
        return max(1, tokens)
    if api == "anthropic":
        for img in anthropic_images(body):
            size = img.size
            tokens += math.ceil(size[0] * size[1] / 750) if size else 1600
    elif api == "openai":
        for _, _, img, _ in openai_images(body):
            tokens += openai_image_tokens(img.size if img else None,
                                          img.detail if img else None)
    elif api == "gemini":
        tokens += 258 * len(gemini_images(body))
    return max(1, tokens)


# --------------------------------------------------------------------------
# JSON Schema helpers: walking subschemas, JSON pointers, $ref chains.

SCHEMA_ONE = ("additionalProperties", "not", "if", "then", "else", "contains",
              "propertyNames", "unevaluatedItems", "unevaluatedProperties",
              "additionalItems")
SCHEMA_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
SCHEMA_MAP = ("properties", "patternProperties", "$defs", "definitions",
              "dependentSchemas")


def walk_schema(schema, path=()):
    """Yields (node, path) for every object subschema, not following $ref."""
    if not isinstance(schema, dict):
        return
    yield schema, path
    for k in SCHEMA_ONE:
        if isinstance(schema.get(k), dict):
            yield from walk_schema(schema[k], path + (k,))
    items = schema.get("items")
    if isinstance(items, dict):
        yield from walk_schema(items, path + ("items",))
    elif isinstance(items, list):
        for i, s in enumerate(items):
            yield from walk_schema(s, path + ("items", i))
    for k in SCHEMA_LIST:
        if isinstance(schema.get(k), list):
            for i, s in enumerate(schema[k]):
                yield from walk_schema(s, path + (k, i))
    for k in SCHEMA_MAP:
        if isinstance(schema.get(k), dict):
            for name, s in schema[k].items():
                yield from walk_schema(s, path + (k, name))


_MISSING = object()


def resolve_pointer(root, ref):
    """The node a local $ref ("#", "#/a/b~1c", "#anchor") points to, or
    _MISSING. Non-local refs return None: they are not checked."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    frag = unquote(ref[1:])
    if frag == "":
        return root
    if not frag.startswith("/"):
        for node, _ in walk_schema(root):
            if node.get("$anchor") == frag:
                return node
        return _MISSING
    node = root
    for tok in frag.split("/")[1:]:
        tok = tok.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and tok in node:
            node = node[tok]
        elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
            node = node[int(tok)]
        else:
            return _MISSING
    return node


# Keywords that constrain nothing: a node with only these (and $ref) has no
# content of its own, and a $ref chain of such nodes that comes back to where
# it started never reaches a schema.
ANNOTATIONS = {"$ref", "$comment", "description", "title", "default", "examples",
               "deprecated", "readOnly", "writeOnly", "$id", "$anchor", "$schema",
               "$defs", "definitions", "$dynamicAnchor"}


def ref_problem(root):
    """("unresolved" | "cycle", ref) for the first local $ref that does not
    resolve or that only leads back to itself through content-less nodes."""
    for node, _ in walk_schema(root):
        ref = node.get("$ref")
        if not isinstance(ref, str):
            continue
        target = resolve_pointer(root, ref)
        if target is _MISSING:
            return "unresolved", ref
        seen = {id(node)}
        cur = target
        while isinstance(cur, dict) and not (set(cur) - ANNOTATIONS) and "$ref" in cur:
            if id(cur) in seen:
                return "cycle", ref
            seen.add(id(cur))
            cur = resolve_pointer(root, cur["$ref"])
            if cur is _MISSING:
                return "unresolved", ref
    return None


def ref_cycle_through_required(root):
    """The first $ref on a cycle of must-be-present edges ($ref targets,
    required properties, allOf members): a schema no finite value meets."""
    edges = {}
    nodes = {}
    for node, _ in walk_schema(root):
        nodes[id(node)] = node
        out = []
        if isinstance(node.get("$ref"), str):
            t = resolve_pointer(root, node["$ref"])
            if isinstance(t, dict):
                out.append((t, node["$ref"]))
        props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        for name in node.get("required") or []:
            if isinstance(name, str) and isinstance(props.get(name), dict):
                out.append((props[name], None))
        for s in node.get("allOf") or []:
            if isinstance(s, dict):
                out.append((s, None))
        edges[id(node)] = out
    state = {}

    def dfs(n, refs):
        state[id(n)] = 1
        for t, ref in edges.get(id(n), []):
            r = refs + ([ref] if ref else [])
            if state.get(id(t)) == 1 and r:
                return r[0]
            if id(t) not in state:
                found = dfs(t, r)
                if found:
                    return found
        state[id(n)] = 2
        return None

    for n in list(nodes.values()):
        if id(n) not in state:
            found = dfs(n, [])
            if found:
                return found
    return None


JSON_TYPES = ("null", "boolean", "object", "array", "number", "string", "integer")


def _is_int(v):
    return (isinstance(v, int) and not isinstance(v, bool)) or (
        isinstance(v, float) and v.is_integer())


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def draft_2020_12_problem(schema):
    """A short reason when a schema does not match the draft 2020-12
    metaschema (the keywords that have a meta-rule), else None."""
    if isinstance(schema, bool):
        return None
    if not isinstance(schema, dict):
        return "a schema must be an object or a boolean"
    for k, v in schema.items():
        if k == "type":
            types = v if isinstance(v, list) else [v]
            if (not types or any(t not in JSON_TYPES for t in types)
                    or len(set(map(str, types))) != len(types)):
                return f"type {v!r}"
        elif k == "items" and not isinstance(v, (dict, bool)):
            return "items must be a schema (array-form items is prefixItems in 2020-12)"
        elif k in SCHEMA_ONE and not isinstance(v, (dict, bool)):
            return f"{k} must be a schema"
        elif k in SCHEMA_LIST and (not isinstance(v, list) or not v):
            return f"{k} must be a non-empty array of schemas"
        elif k in SCHEMA_MAP and not isinstance(v, dict):
            return f"{k} must be an object"
        elif k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") and \
                not _is_num(v):
            return f"{k} must be a number"
        elif k == "multipleOf" and not (_is_num(v) and v > 0):
            return "multipleOf must be a number > 0"
        elif k in ("minLength", "maxLength", "minItems", "maxItems", "minProperties",
                   "maxProperties", "minContains", "maxContains") and \
                not (_is_int(v) and v >= 0):
            return f"{k} must be a non-negative integer"
        elif k == "required" and not (isinstance(v, list) and all(isinstance(x, str) for x in v)
                                      and len(set(v)) == len(v)):
            return "required must be an array of unique strings"
        elif k == "enum" and not isinstance(v, list):
            return "enum must be an array"
        elif k == "uniqueItems" and not isinstance(v, bool):
            return "uniqueItems must be a boolean"
        elif k in ("$ref", "$id", "$anchor", "$schema", "$comment", "title", "description",
                   "pattern", "format", "$dynamicRef", "$dynamicAnchor") and \
                not isinstance(v, str):
            return f"{k} must be a string"
        elif k == "dependentRequired" and not (isinstance(v, dict) and all(
                isinstance(x, list) and all(isinstance(y, str) for y in x) for x in v.values())):
            return "dependentRequired must map to arrays of strings"
        if k in SCHEMA_ONE or k == "items":
            sub = draft_2020_12_problem(v)
            if sub:
                return sub
        elif k in SCHEMA_LIST:
            for s in v:
                sub = draft_2020_12_problem(s)
                if sub:
                    return sub
        elif k in SCHEMA_MAP:
            for s in v.values():
                sub = draft_2020_12_problem(s)
                if sub:
                    return sub
    return None


# --------------------------------------------------------------------------
# Thinking signatures (Anthropic): the fake signs the thinking it sends and
# refuses thinking blocks that come back altered.

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


# --------------------------------------------------------------------------
# Anthropic Messages.

ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                         402: "billing_error", 403: "permission_error",
                         404: "not_found_error", 413: "request_too_large",
                         429: "rate_limit_error", 500: "api_error",
                         504: "timeout_error", 529: "overloaded_error"}

# The Messages API's request size limit: 32 MB
# (https://platform.claude.com/docs/en/api/overview#request-size-limits);
# read as MiB.
ANTHROPIC_MAX_REQUEST = 32 * 1024 * 1024
ANTHROPIC_MAX_IMAGE_B64 = 5_242_880
ANTHROPIC_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
TOOL_NAME_A = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
SCHEMA_INVALID_A = ("JSON schema is invalid. It must match JSON Schema draft 2020-12 "
                    "(https://json-schema.org/draft/2020-12). Learn more about tool use at "
                    "https://docs.anthropic.com/en/docs/tool-use.")


def anthropic_error_type(status):
    if status in ANTHROPIC_ERROR_TYPES:
        return ANTHROPIC_ERROR_TYPES[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def anthropic_error_body(status, message, etype=None):
    return {"type": "error", "error": {"type": etype or anthropic_error_type(status),
                                       "message": message}}


def ref_error_text(kind, ref):
    if kind == "cycle":
        # Quoted by luxus/pi-hindsight#365 for a self-referencing tool schema.
        return (f"Error resolving schema reference '{ref}': "
                "RecursionError('maximum recursion depth exceeded')")
    # likely: the same resolver's error for a pointer to nothing.
    return f"Error resolving schema reference '{ref}': PointerToNowhere: '{ref}' does not exist"


def anthropic_check_headers(headers):
    auth = headers.get("authorization", "")
    if not headers.get("x-api-key", "").strip() and not (
            auth.startswith("Bearer ") and auth[7:].strip()):
        raise Refusal(401, "x-api-key header is required")
    version = headers.get("anthropic-version")
    if not version:
        raise Refusal(400, "anthropic-version: header is required")
    if version not in ANTHROPIC_VERSIONS:
        raise Refusal(400, f"anthropic-version: invalid version '{version}'")


def anthropic_check_tools(body):
    tools = body.get("tools")
    if tools is None:
        return
    if not isinstance(tools, list):
        raise Refusal(400, "tools: Input should be a valid list")
    names = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise Refusal(400, f"tools.{i}: Input should be a valid dictionary")
        if tool.get("type") not in (None, "custom"):
            continue            # server tools (web_search, ...) have their own shape
        if "name" not in tool:
            raise Refusal(400, f"tools.{i}.custom.name: Field required")
        if "input_schema" not in tool:
            raise Refusal(400, f"tools.{i}.custom.input_schema: Field required")
        name = tool["name"]
        if not isinstance(name, str):
            raise Refusal(400, f"tools.{i}.custom.name: Input should be a valid string")
        if len(name) > 128:
            # claude-code#96152.
            raise Refusal(400, f"tools.{i}.custom.name: String should have at most 128 "
                          "characters")
        if not TOOL_NAME_A.match(name):
            # home-assistant/core#147760.
            raise Refusal(400, f"tools.{i}.custom.name: String should match pattern "
                          "'^[a-zA-Z0-9_-]{1,128}$'")
        names.append(name)
        schema = tool["input_schema"]
        if not isinstance(schema, dict):
            raise Refusal(400, f"tools.{i}.custom.input_schema: Input should be a valid "
                          "dictionary")
        if "type" not in schema:
            raise Refusal(400, f"tools.{i}.custom.input_schema.type: Field required")  # likely
        if schema["type"] != "object":
            raise Refusal(400, f"tools.{i}.custom.input_schema.type: Input should be "
                          "'object'")                                             # likely
        if any(k in schema for k in ("oneOf", "allOf", "anyOf")):
            # anthropics/claude-code#27337.
            raise Refusal(400, f"tools.{i}.custom.input_schema: input_schema does not "
                          "support oneOf, allOf, or anyOf at the top level")
        if draft_2020_12_problem(schema):
            # anthropics/claude-code#63673; acomagu/vscode-as-mcp-server#6.
            raise Refusal(400, f"tools.{i}.custom.input_schema: {SCHEMA_INVALID_A}")
        problem = ref_problem(schema)
        if problem:
            raise Refusal(400, ref_error_text(*problem))
    if len(set(names)) != len(names):
        # danny-avila/LibreChat#13162 and many more.
        raise Refusal(400, "tools: Tool names must be unique.")


def anthropic_check_thinking(body, model):
    thinking = body.get("thinking")
    mt = body["max_tokens"]
    if thinking is None:
        return
    if not isinstance(thinking, dict):
        raise Refusal(400, "thinking: Input should be a valid dictionary")
    ttype = thinking.get("type")
    if ttype in ("enabled", "adaptive") and not model.get("extended_thinking", True):
        # Confirmed: anthropics/claude-code#2245.
        raise Refusal(400, f"'{body.get('model')}' does not support thinking.")
    if ttype not in ("enabled", "disabled", "adaptive"):
        # likely: pydantic's tagged-union error.
        raise Refusal(400, f"thinking: Input tag '{ttype}' found using 'type' does not match "
                      "any of the expected tags: 'enabled', 'disabled', 'adaptive'")
    if ttype == "adaptive":
        for k in thinking:
            if k not in ("type", "display"):
                raise Refusal(400, f"thinking.adaptive.{k}: Extra inputs are not permitted")
        if model["adaptive_thinking"] == "no":
            # Quoted in anthropics/claude-code#51212.
            raise Refusal(400, "adaptive thinking is not supported on this model")
    if ttype == "enabled":
        budget = thinking.get("budget_tokens")
        if isinstance(budget, bool) or not isinstance(budget, int):
            raise Refusal(400, "thinking.enabled.budget_tokens: Field required")
        if budget < 1024:
            raise Refusal(400, "thinking.enabled.budget_tokens: Input should be greater "
                          "than or equal to 1024")
        if model["adaptive_thinking"] == "only":
            # SigmaNight/basiliskLLM#1185, handochan/aelix-ai#258 (measured).
            raise Refusal(400, '"thinking.type.enabled" is not supported for this model. '
                          'Use "thinking.type.adaptive" and "output_config.effort" to '
                          "control thinking behavior.")
        if mt <= budget:
            raise Refusal(400, "`max_tokens` must be greater than `thinking.budget_tokens`")


def anthropic_check_output_config(body, model):
    oc = body.get("output_config")
    if oc is None:
        return
    if not isinstance(oc, dict):
        raise Refusal(400, "output_config: Input should be a valid dictionary")
    if "effort" in oc:
        allowed = ["low", "medium", "high"] + (["xhigh"] if model["xhigh_effort"] else []) \
            + ["max"]
        if oc["effort"] not in allowed:
            # likely: pydantic's enum wording.
            quoted = [f"'{x}'" for x in allowed]
            raise Refusal(400, "output_config.effort: Input should be "
                          + ", ".join(quoted[:-1]) + " or " + quoted[-1])


def anthropic_check_content(msgs):
    """Text, emptiness, block order, tool_use ids."""
    for i, m in enumerate(msgs):
        content = m["content"]
        last = i == len(msgs) - 1
        if content == "" or content == []:
            if not (last and m["role"] == "assistant"):
                # A-EMPTY-MSG (likely wording).
                raise Refusal(400, f"messages.{i}: all messages must have non-empty content "
                              "except for the optional final assistant message")
            continue
        texts = [content] if isinstance(content, str) else [
            b.get("text") for b in content if b.get("type") == "text"]
        for t in texts:
            if not isinstance(t, str):
                raise Refusal(400, f"messages.{i}: text content blocks must be strings")
            if t == "":
                # anthropics/claude-code#59812.
                raise Refusal(400, "messages: text content blocks must be non-empty")
        if texts and all(t.strip() == "" for t in texts):
            # A-TEXT-WS: only whitespace in every text block of the message,
            # a tool_use beside them or not; one real text saves it.
            raise Refusal(400, "messages: text content blocks must contain non-whitespace "
                          "text")
    seen = set()
    for i, m in enumerate(msgs):
        if not isinstance(m["content"], list):
            continue
        for j, b in enumerate(m["content"]):
            if b.get("type") == "tool_use":
                tid = b.get("id")
                if not isinstance(tid, str) or not TOOL_ID.match(tid):
                    raise Refusal(400, f"messages.{i}.content.{j}.tool_use.id: String should "
                                  "match pattern '^[a-zA-Z0-9_-]+$'")
                if tid in seen:
                    # anthropics/claude-code#21317.
                    raise Refusal(400, f"messages.{i}.content.{j}: `tool_use` ids must be "
                                  "unique")
                seen.add(tid)
            elif b.get("type") == "tool_result":
                tid = b.get("tool_use_id")
                if not isinstance(tid, str) or not TOOL_ID.match(tid):
                    # likely: the same pattern on the answering side.
                    raise Refusal(400, f"messages.{i}.content.{j}.tool_result.tool_use_id: "
                                  "String should match pattern '^[a-zA-Z0-9_-]+$'")


def anthropic_check_images(body):
    images = anthropic_images(body)
    for img in images:
        if img.declared not in ANTHROPIC_IMAGE_TYPES:
            # anthropics/claude-code#8184.
            raise Refusal(400, f"{img.path}.media_type: Input should be 'image/jpeg', "
                          "'image/png', 'image/gif' or 'image/webp'")
    if len(images) > 100:
        # anthropics/claude-code#19822, #24541.
        raise Refusal(400, f"Too much media: 0 document pages + {len(images)} images > 100")
    limit, many = (2000, " for many-image requests") if len(images) > 20 else (8000, "")
    for img in images:
        if len(img.b64) > ANTHROPIC_MAX_IMAGE_B64:
            # The anchor's A-IMG-SIZE: the base64 length is what counts.
            raise Refusal(400, f"{img.path}: image exceeds 5 MB maximum: {len(img.b64)} "
                          f"bytes > {ANTHROPIC_MAX_IMAGE_B64} bytes")
        actual = img.actual
        if actual is None:
            # likely: bytes that are no image at all.
            raise Refusal(400, f"{img.path}.data: Could not process image")
        if actual != img.declared:
            # 1jehuang/jcode#465, BerriAI/litellm#24900 (the older wording was
            # "Image does not match the provided media type image/png").
            raise Refusal(400, f"{img.path}: The image was specified using the "
                          f"{img.declared} media type, but the image appears to be a "
                          f"{actual} image")
        size = img.size
        if size and max(size) > limit:
            # anthropics/claude-code#4778, #49537.
            raise Refusal(400, f"{img.path}.data: At least one of the image dimensions "
                          f"exceed max allowed size{many}: {limit} pixels")


def anthropic_validate(headers, body, model, raw_size=None, thoughts=None):
    """Raises Refusal for a request the real Messages API refuses.
    thoughts: the thinking blocks of the fake's answers that called tools,
    by call id (None: not checked)."""
    anthropic_check_headers(headers)
    if raw_size is not None and raw_size > ANTHROPIC_MAX_REQUEST:
        # anthropics/anthropic-sdk-python#938: the edge answers without the
        # usual "type": "error" wrapper.
        raise Refusal(413, "Request exceeds the maximum size", body={"error": {
            "type": "request_too_large", "message": "Request exceeds the maximum size"}})
    if not isinstance(body, dict):
        raise Refusal(400, "Input should be a valid dictionary")
    if "model" not in body:
        raise Refusal(400, "model: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        raise Refusal(400, "model: Input should be a valid string")
    info = model if isinstance(model, dict) else model_info(body["model"])
    if "max_tokens" not in body:
        raise Refusal(400, "max_tokens: Field required")
    mt = body["max_tokens"]
    if isinstance(mt, bool) or not isinstance(mt, int):
        raise Refusal(400, "max_tokens: Input should be a valid integer")
    if mt < 1:
        raise Refusal(400, "max_tokens: Input should be greater than or equal to 1")
    if "messages" not in body:
        raise Refusal(400, "messages: Field required")
    msgs = body["messages"]
    if not isinstance(msgs, list):
        raise Refusal(400, "messages: Input should be a valid list")
    if not msgs:
        raise Refusal(400, "messages: at least one message is required")
    anthropic_check_thinking(body, info)
    anthropic_check_output_config(body, info)
    if mt > info["max_output"]:
        # ChatGPTNextWeb/NextChat#4964.
        raise Refusal(400, f"max_tokens: {mt} > {info['max_output']}, which is the maximum "
                      f"allowed number of output tokens for {body['model']}")
    anthropic_check_tools(body)
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise Refusal(400, f"messages.{i}: Input should be a valid dictionary")
        if m.get("role") not in ("user", "assistant", "system"):
            raise Refusal(400, f"messages.{i}.role: Input should be 'user', 'assistant' "
                          "or 'system'")
        if "content" not in m:
            raise Refusal(400, f"messages.{i}.content: Field required")
        if not isinstance(m["content"], (str, list)):
            raise Refusal(400, f"messages.{i}.content: Input should be a valid list")
        if isinstance(m["content"], list):
            for j, block in enumerate(m["content"]):
                if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                    raise Refusal(400, f"messages.{i}.content.{j}: Input should be a valid "
                                  "dictionary")
    anthropic_check_content(msgs)
    anthropic_check_images(body)

    def blocks(m, kind, key):
        if not isinstance(m.get("content"), list):
            return []
        return [b.get(key) for b in m["content"] if b.get("type") == kind]

    thinking = body.get("thinking")
    thinking_on = isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
    for i, m in enumerate(msgs):
        if m["role"] != "assistant" or not isinstance(m["content"], list):
            continue
        for j, block in enumerate(m["content"]):
            if block.get("type") == "thinking" and (
                    not isinstance(block.get("thinking"), str) or
                    block.get("signature") != thinking_signature(block["thinking"])):
                raise Refusal(400, f"messages.{i}.content.{j}: Invalid `signature` in "
                              "`thinking` block")
        if thinking_on and thoughts is not None:
            for call_id in blocks(m, "tool_use", "id"):
                want = thoughts.get(call_id)
                if want is not None and thought_blocks(m["content"]) != want:
                    raise Refusal(400, f"messages.{i}.content: the `thinking` and "
                                  "`redacted_thinking` blocks of an assistant message with "
                                  "`tool_use` must be passed back unmodified and in their "
                                  "original order")

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
                raise Refusal(400, f"messages.{min(i + 1, len(msgs) - 1)}: `tool_use` ids "
                              "were found without `tool_result` blocks immediately after: "
                              f"{', '.join(missing)}. Each `tool_use` block must have a "
                              "corresponding `tool_result` block in the next message.")
            first_other = next((j for j, b in enumerate(nxt["content"])
                                if b.get("type") != "tool_result"), None) \
                if isinstance(nxt["content"], list) else 0
            last_result = max((j for j, b in enumerate(nxt["content"])
                               if b.get("type") == "tool_result"), default=-1) \
                if isinstance(nxt["content"], list) else -1
            if first_other is not None and first_other < last_result:
                # A-TOOLRESULT-ORDER; the text is quoted in Zoo-Code-Org/Zoo-Code#1705.
                raise Refusal(400, f"messages.{i + 1}: Did not find {len(ids)} `tool_result` "
                              "block(s) at the beginning of this message. Messages "
                              "following `tool_use` blocks must begin with a matching "
                              "number of `tool_result` blocks.")
        else:
            results = blocks(m, "tool_result", "tool_use_id")
            if not results:
                continue
            prev = msgs[i - 1] if i > 0 else None
            used = set(blocks(prev, "tool_use", "id")) \
                if prev is not None and prev["role"] == "assistant" else set()
            for j, block in enumerate(m["content"]):
                if block.get("type") == "tool_result" and block.get("tool_use_id") not in used:
                    raise Refusal(400, f"messages.{i}.content.{j}: unexpected `tool_use_id` "
                                  f"found in `tool_result` blocks: {block.get('tool_use_id')}. "
                                  "Each `tool_result` block must have a corresponding "
                                  "`tool_use` block in the previous message.")

    window = info["context"]
    if info["context_1m"] and "context-1m" in headers.get("anthropic-beta", ""):
        window = max(window, 1_000_000)
    tokens = estimate_tokens("anthropic", body)
    if tokens > window:
        # anthropics/claude-code#12186.
        raise Refusal(400, f"prompt is too long: {tokens} tokens > {window} maximum")


# --------------------------------------------------------------------------
# OpenAI Chat Completions.

OPENAI_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
TOOL_NAME_O = re.compile(r"^[a-zA-Z0-9_-]+$")
OPENAI_MAX_IMAGE_BYTES = 20 * 1024 * 1024
OPENAI_MAX_IMAGES = 500


def openai_error_type(status):
    if status == 429:
        return "requests", "rate_limit_exceeded"
    if status >= 500:
        return "server_error", None
    return "invalid_request_error", None


def openai_error_body(status, message, param=None, code=None, etype=None):
    default_type, default_code = openai_error_type(status)
    return {"error": {"message": message, "type": etype or default_type, "param": param,
                      "code": code if code is not None else
                      (default_code if status == 429 else None)}}


OPENAI_NO_KEY = ("You didn't provide an API key. You need to provide your API key in an "
                 "Authorization header using Bearer auth (i.e. Authorization: Bearer "
                 "YOUR_KEY).")


def openai_check_headers(headers):
    auth = headers.get("authorization", "")
    if not (auth.startswith("Bearer ") and auth[7:].strip()):
        raise Refusal(401, OPENAI_NO_KEY, code="invalid_api_key")


def openai_check_tools(body):
    tools = body.get("tools")
    if tools is None:
        return
    if not isinstance(tools, list):
        raise Refusal(400, "Invalid type for 'tools': expected an array.", "tools",
                      "invalid_type")
    if len(tools) > 128:
        # vishalmysore/Tools4AI#16.
        raise Refusal(400, "Invalid 'tools': array too long. Expected an array with maximum "
                      f"length 128, but got an array with length {len(tools)} instead.",
                      "tools", "array_above_max_length")
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            continue
        fn = tool.get("function")
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise Refusal(400, f"Missing required parameter: 'tools[{i}].function.name'.",
                          f"tools[{i}].function.name", "missing_required_parameter")
        name = fn["name"]
        if len(name) > 64:
            # likely: OpenAI's generic "string too long" wording.
            raise Refusal(400, f"Invalid 'tools[{i}].function.name': string too long. "
                          "Expected a string with maximum length 64, but got a string with "
                          f"length {len(name)} instead.", f"tools[{i}].function.name",
                          "string_above_max_length")
        if not TOOL_NAME_O.match(name):
            # ailoy PR #109 quotes the whole body.
            raise Refusal(400, f"Invalid 'tools[{i}].function.name': string does not match "
                          "pattern. Expected a string that matches the pattern "
                          "'^[a-zA-Z0-9_-]+$'.", f"tools[{i}].function.name", "invalid_value")
        if "parameters" not in fn:
            continue
        params = fn["parameters"]
        where = f"tools[{i}].function.parameters"
        if not isinstance(params, dict) or params.get("type") != "object" or any(
                k in params for k in ("oneOf", "anyOf", "allOf", "enum", "const", "not")):
            # nspady/google-calendar-mcp#39.
            raise Refusal(400, f"Invalid schema for function '{name}': schema must have type "
                          "'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'const'/'not' "
                          "at the top level.", where, "invalid_function_parameters")
        for node, path in walk_schema(params):
            t = node.get("type")
            if (t == "array" or (isinstance(t, list) and "array" in t)) and "items" not in node:
                # streamnative/streamnative-mcp-server#26.
                raise Refusal(400, f"Invalid schema for function '{name}': In context="
                              f"{tuple(path)!r}, array schema missing items.", where,
                              "invalid_function_parameters")
        problem = ref_problem(params)
        if problem:
            # likely: the resolver error of A-SCHEMA-REF-CYCLE, in OpenAI's shape.
            raise Refusal(400, ref_error_text(*problem), where, "invalid_function_parameters")


def openai_check_params(body, model):
    mt, mct = body.get("max_tokens"), body.get("max_completion_tokens")
    if mt is not None and mct is not None:
        # langchain-ai/langgraph#5943.
        raise Refusal(400, "Setting 'max_tokens' and 'max_completion_tokens' at the same time "
                      "is not supported.", "max_tokens", "invalid_parameter_combination")
    if mt is not None and model["reasoning"]:
        # griptape-ai/ComfyUI-Griptape#312.
        raise Refusal(400, "Unsupported parameter: 'max_tokens' is not supported with this "
                      "model. Use 'max_completion_tokens' instead.", "max_tokens",
                      "unsupported_parameter")
    for field, value in (("max_tokens", mt), ("max_completion_tokens", mct)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise Refusal(400, f"Invalid type for '{field}': expected an integer.", field,
                          "invalid_type")
        if value > model["max_output"]:
            # forgecode#1185 (max_tokens); the max_completion_tokens text is likely.
            raise Refusal(400, f"{field} is too large: {value}. This model supports at most "
                          f"{model['max_output']} completion tokens, whereas you provided "
                          f"{value}.", field, "invalid_value")


def openai_check_messages(msgs):
    for i, m in enumerate(msgs):
        if m["role"] == "assistant":
            calls = m.get("tool_calls")
            if calls is not None and not isinstance(calls, list):
                raise Refusal(400, f"Invalid type for 'messages[{i}].tool_calls': expected an "
                              "array.", f"messages.[{i}].tool_calls", "invalid_type")
            if calls == []:
                # likely: the generic empty-array wording.
                raise Refusal(400, f"Invalid 'messages[{i}].tool_calls': empty array. Expected "
                              "an array with minimum length 1, but got an empty array instead.",
                              f"messages.[{i}].tool_calls", "empty_array")
            for j, c in enumerate(calls or []):
                cid = c.get("id") if isinstance(c, dict) else None
                if not isinstance(cid, str):
                    raise Refusal(400, f"Missing required parameter: 'messages[{i}]."
                                  f"tool_calls[{j}].id'.", f"messages.[{i}].tool_calls.[{j}].id",
                                  "missing_required_parameter")
                if cid == "":
                    # likely wording.
                    raise Refusal(400, f"Invalid 'messages[{i}].tool_calls[{j}].id': string too "
                                  "short. Expected a string with minimum length 1, but got an "
                                  "empty string instead.", f"messages[{i}].tool_calls[{j}].id",
                                  "string_below_min_length")
                if len(cid) > 40:
                    # agno-agi/agno#5382.
                    raise Refusal(400, f"Invalid 'messages[{i}].tool_calls[{j}].id': string too "
                                  "long. Expected a string with maximum length 40, but got a "
                                  f"string with length {len(cid)} instead.",
                                  f"messages[{i}].tool_calls[{j}].id", "string_above_max_length")
            if not calls and m.get("content") is None and not isinstance(m.get("refusal"), str):
                # vercel/ai#13744 (a comment quotes it from vanilla OpenAI).
                raise Refusal(400, "Invalid value for 'content': expected a string, got null.",
                              f"messages.[{i}].content", None)


def openai_check_images(body):
    images = openai_images(body)
    for i, j, img, role in images:
        if role != "user":
            # OpenHands/OpenHands#7700.
            raise Refusal(400, f"Invalid 'messages[{i}]'. Image URLs are only allowed for "
                          f"messages with role 'user', but this message with role '{role}' "
                          "contains an image URL.", f"messages[{i}]", "invalid_value")
    if len(images) > OPENAI_MAX_IMAGES:
        # likely wording; the limit is documented (500 images per request).
        raise Refusal(400, f"Invalid 'messages': too many images. Expected at most "
                      f"{OPENAI_MAX_IMAGES} images, but got {len(images)} images instead.",
                      "messages", "invalid_value")
    for i, j, img, role in images:
        if img is not None and b64_decoded_len(img.b64) > OPENAI_MAX_IMAGE_BYTES:
            # likely wording; the 20 MB per image limit is documented.
            raise Refusal(400, f"Invalid '{img.path}': image exceeds the maximum size of "
                          f"20 MB ({b64_decoded_len(img.b64)} bytes > "
                          f"{OPENAI_MAX_IMAGE_BYTES} bytes).", img.path, "image_too_large")


def openai_validate(headers, body, model):
    """Raises Refusal for a request the real Chat Completions API refuses."""
    openai_check_headers(headers)
    if not isinstance(body, dict):
        raise Refusal(400, "Invalid type for body: expected an object.", None, "invalid_type")
    if "model" not in body or body["model"] in (None, ""):
        raise Refusal(400, "you must provide a model parameter")
    if not isinstance(body["model"], str):
        raise Refusal(400, "Invalid type for 'model': expected a string.", "model",
                      "invalid_type")
    info = model if isinstance(model, dict) else model_info(body["model"])
    if "messages" not in body:
        raise Refusal(400, "Missing required parameter: 'messages'.", "messages",
                      "missing_required_parameter")
    msgs = body["messages"]
    if not isinstance(msgs, list):
        raise Refusal(400, "Invalid type for 'messages': expected an array.", "messages",
                      "invalid_type")
    if not msgs:
        raise Refusal(400, "Invalid 'messages': empty array. Expected an array with minimum "
                      "length 1, but got an empty array instead.", "messages", "empty_array")
    if body.get("stream_options") is not None and not body.get("stream"):
        raise Refusal(400, "The 'stream_options' parameter is only allowed when 'stream' is "
                      "enabled.", "stream_options", None)
    openai_check_params(body, info)
    openai_check_tools(body)
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            raise Refusal(400, f"Invalid type for 'messages[{i}]': expected an object.",
                          f"messages.[{i}]", "invalid_type")
        if m.get("role") not in OPENAI_ROLES:
            raise Refusal(400, f"Invalid value: '{m.get('role')}'. Supported values are: "
                          "'system', 'assistant', 'user', 'function', 'tool', and 'developer'.",
                          f"messages[{i}].role", "invalid_value")
        if m["role"] == "tool" and not isinstance(m.get("tool_call_id"), str):
            raise Refusal(400, f"Missing required parameter: 'messages[{i}].tool_call_id'.",
                          f"messages.[{i}].tool_call_id", "missing_required_parameter")
    openai_check_messages(msgs)
    openai_check_images(body)
    pending = set()
    i = 0
    while i < len(msgs):
        m = msgs[i]
        if m["role"] == "tool":
            if m["tool_call_id"] not in pending:
                raise Refusal(400, "Invalid parameter: messages with role 'tool' must be a "
                              "response to a preceeding message with 'tool_calls'.",
                              f"messages.[{i}].role", None)
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
                raise Refusal(400, "An assistant message with 'tool_calls' must be followed by "
                              "tool messages responding to each 'tool_call_id'. The following "
                              f"tool_call_ids did not have response messages: "
                              f"{', '.join(missing)}",
                              f"messages.[{i + 1 if i + 1 < len(msgs) else i}].role", None)
            pending = set(ids)
        i += 1
    tokens = estimate_tokens("openai", body)
    if info["input_limit"] and tokens > info["input_limit"]:
        # cline/cline#5474 (gpt-5).
        raise Refusal(400, f"Input tokens exceed the configured limit of {info['input_limit']} "
                      f"tokens. Your messages resulted in {tokens} tokens. Please reduce the "
                      "length of the messages.", "messages", "context_length_exceeded")
    if tokens > info["context"]:
        # The classic context_length_exceeded text (ChatGPTNextWeb/NextChat#3195).
        raise Refusal(400, f"This model's maximum context length is {info['context']} tokens. "
                      f"However, your messages resulted in {tokens} tokens. Please reduce the "
                      "length of the messages.", "messages", "context_length_exceeded")


# --------------------------------------------------------------------------
# Gemini.

GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                 404: "NOT_FOUND", 409: "ABORTED", 429: "RESOURCE_EXHAUSTED",
                 499: "CANCELLED", 500: "INTERNAL", 501: "NOT_IMPLEMENTED",
                 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
GEMINI_MAX_REQUEST = 20_971_520
FN_NAME_G = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")
GEMINI_TYPES = ("TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY",
                "OBJECT", "NULL")
# FunctionDeclaration.parameters is Gemini's Schema message, an OpenAPI 3.0
# subset; the proto accepts each field in camelCase and snake_case.
GEMINI_SCHEMA_FIELDS = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
    "maximum"}
_SNAKE = {re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), f): f
          for f in GEMINI_SCHEMA_FIELDS}
GEMINI_DATA_FIELDS = ("text", "inlineData", "functionCall", "functionResponse", "fileData",
                      "executableCode", "codeExecutionResult")
GEMINI_PART_KEYS = {f: f for f in GEMINI_DATA_FIELDS}
GEMINI_PART_KEYS.update({"inline_data": "inlineData", "function_call": "functionCall",
                         "function_response": "functionResponse", "file_data": "fileData",
                         "executable_code": "executableCode",
                         "code_execution_result": "codeExecutionResult"})
SIGNATURE_TEXT = ("Function call is missing a thought_signature in functionCall parts. This "
                  "is required for tools to work correctly, and missing thought_signature "
                  "may lead to degraded model performance. Additional data, function call "
                  "`default_api:{name}` , position {pos}. Please refer to "
                  "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.")


def gemini_status(status):
    if status in GEMINI_STATUS:
        return GEMINI_STATUS[status]
    return "INTERNAL" if status >= 500 else "FAILED_PRECONDITION"


def gemini_error_body(status, message):
    return {"error": {"code": status, "message": message, "status": gemini_status(status)}}


def bullets(errors):
    """Gemini's field-violation list: one "* path: text" line each."""
    return "".join(f"* {e}\n" for e in errors)


def _canon(key):
    return key if key in GEMINI_SCHEMA_FIELDS else _SNAKE.get(key)


def gemini_schema_parse_errors(schema, ppath, out):
    """What the proto parser refuses in a Schema: unknown fields, a list for
    type, a type that is no Type, enum values that are no strings."""
    if not isinstance(schema, dict):
        # likely: the proto parser's wording for a non-object.
        out.append(f"Invalid value at '{ppath}' (type.googleapis.com/google.ai."
                   f"generativelanguage.v1beta.Schema), {json.dumps(schema)}")
        return
    for key, value in schema.items():
        canon = _canon(key)
        if canon is None:
            # adolfousier/opencrabs#99, zed-industries/zed#44875.
            out.append(f'Invalid JSON payload received. Unknown name "{key}" at \'{ppath}\': '
                       "Cannot find field.")
            continue
        if canon == "type":
            if isinstance(value, list):
                # voocel/litellm#9.
                out.append(f'Invalid JSON payload received. Unknown name "type" at '
                           f"'{ppath}': Proto field is not repeating, cannot start list.")
            elif not isinstance(value, str) or value.upper() not in GEMINI_TYPES:
                # likely: the proto enum parser's wording.
                out.append(f"Invalid value at '{ppath}.type' (type.googleapis.com/google.ai."
                           f"generativelanguage.v1beta.Type), {json.dumps(value)}")
        elif (canon in ("enum", "required", "propertyOrdering", "anyOf") and
              not isinstance(value, list)) or (canon == "properties" and
                                               not isinstance(value, dict)):
            # likely: the proto parser's wording for a value of the wrong kind.
            field = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), canon)
            out.append(f"Invalid value at '{ppath}.{field}' (type.googleapis.com/google.ai."
                       f"generativelanguage.v1beta.Schema), {json.dumps(value)}")
        elif canon in ("enum", "required", "propertyOrdering"):
            field = {"propertyOrdering": "property_ordering"}.get(canon, canon)
            for k, v in enumerate(value):
                if not isinstance(v, str):
                    # microsoft/azure-devops-mcp#139.
                    out.append(f"Invalid value at '{ppath}.{field}[{k}]' (TYPE_STRING), "
                               f"{json.dumps(v)}")
        elif canon == "properties":
            for k, (_, sub) in enumerate(value.items()):
                gemini_schema_parse_errors(sub, f"{ppath}.properties[{k}].value", out)
        elif canon == "items":
            gemini_schema_parse_errors(value, f"{ppath}.items", out)
        elif canon == "anyOf":
            for k, sub in enumerate(value):
                gemini_schema_parse_errors(sub, f"{ppath}.any_of[{k}]", out)


def _field(schema, name):
    """A Schema field by its camelCase name, in either spelling."""
    if name in schema:
        return schema[name]
    snake = next((s for s, c in _SNAKE.items() if c == name), None)
    return schema.get(snake)


def gemini_anyof_alone(schema, dotted):
    """The first node where anyOf has siblings (vercel/ai#19000: "When using
    any_of, it must be the only field set"), as a dotted path, or None."""
    if not isinstance(schema, dict):
        return None
    if _field(schema, "anyOf") is not None and len(schema) > 1:
        return dotted
    props = _field(schema, "properties")
    if isinstance(props, dict):
        for name, sub in props.items():
            found = gemini_anyof_alone(sub, f"{dotted}.{name}")
            if found:
                return found
    found = gemini_anyof_alone(_field(schema, "items"), f"{dotted}.items")
    if found:
        return found
    for k, sub in enumerate(_field(schema, "anyOf") or []):
        found = gemini_anyof_alone(sub, f"{dotted}.any_of[{k}]")
        if found:
            return found
    return None


def gemini_schema_errors(schema, spath, out, root=False):
    """What Gemini's validation refuses in a (parsed) Schema, with its
    paths: property names in brackets, any_of[i], items."""
    if not isinstance(schema, dict):
        return
    t = _field(schema, "type")
    t = t.upper() if isinstance(t, str) else None
    if t == "TYPE_UNSPECIFIED":
        t = None         # Gemini 3 refuses it too (UKGovernmentBEIS/inspect_ai#3097)
    any_of = _field(schema, "anyOf")
    props = _field(schema, "properties")
    if t is None and any_of is None:
        # danny-avila/LibreChat#6971.
        out.append(f"{spath}.type: must be specified when not using one_of, any_of or "
                   "all_of fields")
    if root and t is not None and t != "OBJECT":
        # diegosouzapw/OmniRoute#3360.
        out.append(f"{spath}.type: functionDeclaration parameters schema should be of type "
                   "OBJECT")
    if root and t == "OBJECT" and not props:
        # agno-agi/agno#2112, langchain-ai/langchainjs#7935.
        out.append(f"{spath}.properties: should be non-empty for OBJECT type")
    if props is not None and t not in ("OBJECT", None):
        out.append(f"{spath}.properties: only allowed for OBJECT type")      # likely
    if _field(schema, "enum") is not None and t != "STRING":
        # musistudio/llms#20.
        out.append(f"{spath}.enum: only allowed for STRING type")
    if t == "ARRAY" and _field(schema, "items") is None:
        # cline/cline#7339.
        out.append(f"{spath}.items: missing field.")
    required = _field(schema, "required")
    if required is not None:
        if t not in ("OBJECT", None):
            # goruck/home-generative-agent#525.
            out.append(f"{spath}.required: only allowed for OBJECT type")
        else:
            for k, name in enumerate(required):
                if not isinstance(props, dict) or name not in props:
                    # vercel/ai#11319, goruck/home-generative-agent#525.
                    out.append(f"{spath}.required[{k}]: property is not defined")
    if isinstance(props, dict):
        for name, sub in props.items():
            gemini_schema_errors(sub, f"{spath}.properties[{name}]", out)
    items = _field(schema, "items")
    if isinstance(items, dict):
        gemini_schema_errors(items, f"{spath}.items", out)
    for k, sub in enumerate(any_of or []):
        gemini_schema_errors(sub, f"{spath}.any_of[{k}]", out)


def gemini_json_schema_errors(schema, where):
    """parametersJsonSchema: plain JSON Schema, but an object at the root,
    $ref with nothing beside it but description/default, refs that resolve and
    no cycle through required properties."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or any(
            k in schema for k in ("anyOf", "oneOf", "allOf")):
        # likely: the discovery document says it "must describe an object
        # where the properties are the parameters to the function".
        return (f"* {where}.parameters_json_schema: the schema must describe an object where "
                "the properties are the parameters to the function\n")
    for node, _ in walk_schema(schema):
        ref = node.get("$ref")
        if not isinstance(ref, str):
            continue
        extra = [k for k in node if k not in ("$ref", "description", "default")
                 and not k.startswith("$")]
        if extra:
            # anomalyco/opencode#12295; the end of the sentence from
            # diegosouzapw/OmniRoute#461.
            return (f"$ref '{ref.rsplit('/', 1)[-1]}' was set alongside unsupported fields. "
                    "If a schema node has $ref set, then only description and default can "
                    "be set alongside it; other fields they would be replaced by the "
                    "expanded reference.")
        if resolve_pointer(schema, ref) is _MISSING:
            return f"Invalid $ref '{ref}': no schema at that location in the declaration."  # likely
    cyc = ref_cycle_through_required(schema)
    if cyc:
        # likely wording: a required property that must contain itself.
        return (f"$ref '{cyc}' makes a cycle through required properties: no finite value "
                "matches the schema.")
    return None


def gemini_check_tools(body):
    tools = body.get("tools")
    if tools is None:
        return
    if not isinstance(tools, list):
        raise Refusal(400, "Invalid JSON payload received. Unknown name \"tools\": "
                      "Proto field is not repeating, cannot start list.")
    parse, anyof_msg, semantic, json_msg = [], None, [], None
    for t, tool in enumerate(tools):
        if not isinstance(tool, dict):
            continue
        decls = tool.get("functionDeclarations", tool.get("function_declarations"))
        if not isinstance(decls, list):
            continue
        for n, d in enumerate(decls):
            if not isinstance(d, dict):
                continue
            where = f"GenerateContentRequest.tools[{t}].function_declarations[{n}]"
            name = d.get("name")
            if not isinstance(name, str) or not FN_NAME_G.match(name):
                # google-gemini/gemini-cli#9535 (the wording with colons).
                semantic.append(f"{where}.name: Invalid function name. Must start with a "
                                "letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), "
                                "underscores (_), dots (.), colons (:), or dashes (-), with a "
                                "maximum length of 64.")
            has_p = "parameters" in d
            has_js = "parametersJsonSchema" in d or "parameters_json_schema" in d
            if has_p and has_js:
                # likely: the two fields are documented as mutually exclusive.
                semantic.append(f"{where}: parameters and parameters_json_schema are mutually "
                                "exclusive; set only one of them")
                continue
            if has_p:
                p = d["parameters"]
                before = len(parse)
                gemini_schema_parse_errors(
                    p, f"tools[{t}].function_declarations[{n}].parameters", parse)
                if len(parse) > before:
                    continue        # refused by the parser: nothing else is checked
                dotted = gemini_anyof_alone(p, "parameters")
                if dotted and anyof_msg is None:
                    # vercel/ai#19000 and others quote it (Vertex wording).
                    anyof_msg = (f"Unable to submit request because `{name}` functionDeclaration "
                                 f"`{dotted}` schema specified other fields alongside any_of. "
                                 "When using any_of, it must be the only field set.")
                gemini_schema_errors(p, f"{where}.parameters", semantic, root=True)
            elif has_js and json_msg is None:
                js = d.get("parametersJsonSchema", d.get("parameters_json_schema"))
                json_msg = gemini_json_schema_errors(js, where)
    # The proto parser runs first, then the declarations' own checks.
    if parse:
        raise Refusal(400, "\n".join(parse))
    if anyof_msg:
        raise Refusal(400, anyof_msg)
    if semantic:
        raise Refusal(400, bullets(semantic))
    if json_msg:
        raise Refusal(400, json_msg)


GEMINI_MODALITIES = ("MODALITY_UNSPECIFIED", "TEXT", "IMAGE", "AUDIO")


def gemini_modalities(body):
    """The response modalities a request asks for, upper-case ([] if none)."""
    gc = body.get("generationConfig", body.get("generation_config")) \
        if isinstance(body, dict) else None
    mods = gc.get("responseModalities", gc.get("response_modalities")) \
        if isinstance(gc, dict) else None
    return [m.upper() for m in mods if isinstance(m, str)] \
        if isinstance(mods, list) else []


def gemini_check_modalities(gc, model):
    mods = gc.get("responseModalities", gc.get("response_modalities"))
    if mods is None:
        return
    if not isinstance(mods, list):
        raise Refusal(400, "Invalid JSON payload received. Unknown name "
                      "\"responseModalities\" at 'generation_config': Proto field is "
                      "repeating, cannot start object.")                    # likely
    for i, m in enumerate(mods):
        if not isinstance(m, str) or m.upper() not in GEMINI_MODALITIES:
            raise Refusal(400, f"Invalid value at 'generation_config.response_modalities[{i}]' "
                          "(type.googleapis.com/google.ai.generativelanguage.v1beta."
                          f"GenerationConfig.Modality), {json.dumps(m)}")   # likely
    if "IMAGE" in (m.upper() for m in mods) and not model.get("image_output"):
        # Laisky/one-api#45 (gemini-2.0-flash asked for image, text).
        raise Refusal(400, "Model does not support the requested response modalities: "
                      + ",".join(m.lower() for m in mods))


def gemini_check_generation_config(body, model):
    gc = body.get("generationConfig", body.get("generation_config"))
    if gc is None:
        return
    if not isinstance(gc, dict):
        raise Refusal(400, "Invalid JSON payload received. Unknown name \"generationConfig\": "
                      "Expected an object.")
    mot = gc.get("maxOutputTokens", gc.get("max_output_tokens"))
    if mot is not None:
        if isinstance(mot, bool) or not isinstance(mot, int):
            raise Refusal(400, "Invalid value at 'generation_config.max_output_tokens' "
                          f"(TYPE_INT32), {json.dumps(mot)}")
        if mot > model["max_output"]:
            # likely: the Vertex wording (stackblitz-labs/bolt.diy#955,
            # BerriAI/litellm#10548).
            raise Refusal(400, f"Unable to submit request because it has a maxOutputTokens "
                          f"value of {mot} but the supported range is from 1 (inclusive) to "
                          f"{model['max_output'] + 1} (exclusive). Update the value and try "
                          "again.")
    gemini_check_modalities(gc, model)
    tc = gc.get("thinkingConfig", gc.get("thinking_config"))
    if tc is None:
        return
    if not isinstance(tc, dict):
        raise Refusal(400, "Invalid JSON payload received. Unknown name \"thinkingConfig\": "
                      "Expected an object.")
    if not model["thinking_config"]:
        # immersive-translate/immersive-translate#2976 (Gemini 2.0).
        raise Refusal(400, "thinking_config is not supported.")
    budget = tc.get("thinkingBudget", tc.get("thinking_budget"))
    level = tc.get("thinkingLevel", tc.get("thinking_level"))
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)):
        # egoist/chatwise-releases#536.
        raise Refusal(400, "Invalid value at 'generation_config.thinking_config."
                      f"thinking_budget' (TYPE_INT32), {json.dumps(budget)}")
    if level is not None and (not isinstance(level, str) or level.upper() not in (
            "THINKING_LEVEL_UNSPECIFIED", "MINIMAL", "LOW", "MEDIUM", "HIGH")):
        raise Refusal(400, "Invalid value at 'generation_config.thinking_config.thinking_level' "
                      "(type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingConfig."
                      f"ThinkingLevel), {json.dumps(level)}")                   # likely
    if budget is not None and level is not None:
        # sterlp/eclipse-peon-ai#115.
        raise Refusal(400, "You can only set only one of thinking budget and thinking level.")
    if level is not None and model["levels"] is not None:
        if not model["levels"]:
            # RooCodeInc/Roo-Code#10700 (gemini-2.5-flash).
            raise Refusal(400, "Thinking level is not supported for this model.")
        if level.lower() not in model["levels"] and level.upper() != "THINKING_LEVEL_UNSPECIFIED":
            # vellum-ai/vellum-assistant#32687.
            raise Refusal(400, f"Thinking level {level.upper()} is not supported for this "
                          "model.")
    if budget is not None and budget != -1:
        if budget == 0 and not model["budget_zero"]:
            # snailyp/gemini-balance#206, docker/docker-agent#2051.
            raise Refusal(400, "Budget 0 is invalid. This model only works in thinking mode.")
        rng = model["budget"]
        if budget < 0 or (budget != 0 and rng and not rng[0] <= budget <= rng[1]):
            # RooCodeInc/Roo-Code#4399.
            raise Refusal(400, f"The thinking budget ({budget}) is invalid.")


def gemini_check_contents(contents, model):
    for i, c in enumerate(contents):
        if not isinstance(c, dict):
            raise Refusal(400, f"Invalid value at 'contents[{i}]': expected an object.")
        if c.get("role", "user") not in ("user", "model", "function"):
            raise Refusal(400, "Please use a valid role: user, model.")
        if not isinstance(c.get("parts"), list) or not c["parts"]:
            raise Refusal(400, f"* GenerateContentRequest.contents[{i}].parts: contents.parts "
                          "must not be empty.\n")
        for j, part in enumerate(c["parts"]):
            if not isinstance(part, dict):
                raise Refusal(400, f"Invalid value at 'contents[{i}].parts': expected an object.")
            data = [GEMINI_PART_KEYS[k] for k in part if k in GEMINI_PART_KEYS]
            if len(data) > 1:
                # likely: the proto parser's oneof wording.
                raise Refusal(400, "Invalid JSON payload received. Oneof field 'data' is "
                              f"already set. Cannot set '{data[1]}'")
            if not data and "thought" not in part:
                # router-for-me/CLIProxyAPI#1292.
                raise Refusal(400, f"* GenerateContentRequest.contents[{i}].parts[{j}].data: "
                              "required oneof field 'data' must have one initialized field\n")

    def names(c, kind):
        return [p[kind].get("name") for p in c["parts"] if isinstance(p.get(kind), dict)]

    for i, c in enumerate(contents):
        calls = names(c, "functionCall") if c.get("role") == "model" else []
        responses = names(c, "functionResponse")
        if responses:
            prev = contents[i - 1] if i > 0 else None
            if prev is None or prev.get("role") != "model" or not names(prev, "functionCall"):
                raise Refusal(400, "Please ensure that function response turn comes "
                              "immediately after a function call turn.")
        if not calls:
            continue
        nxt = contents[i + 1] if i + 1 < len(contents) else None
        answers = names(nxt, "functionResponse") if nxt is not None \
            and nxt.get("role", "user") in ("user", "function") else []
        if not answers:
            raise Refusal(400, "Please ensure that function call turn comes immediately after "
                          "a user turn or after a function response turn, and that every "
                          "function call is answered by a function response turn.")
        if len(answers) != len(calls):
            raise Refusal(400, "Please ensure that the number of function response parts is "
                          "equal to the number of function call parts of the function call "
                          "turn.")
        if sorted(map(str, answers)) != sorted(map(str, calls)):
            raise Refusal(400, "Please ensure that each function response part has the name "
                          "of a function call part of the function call turn. Unanswered: "
                          + ", ".join(sorted(set(map(str, calls)) - set(map(str, answers)))))
    if model["signatures"]:
        # G-SIGNATURE: in the current turn (after the last user text), the
        # first functionCall of each model step carries its signature.
        start = max((i for i, c in enumerate(contents) if c.get("role", "user") == "user"
                     and any("text" in p for p in c["parts"])), default=-1)
        for i in range(start + 1, len(contents)):
            c = contents[i]
            if c.get("role") != "model":
                continue
            first = next((p for p in c["parts"] if isinstance(p.get("functionCall"), dict)),
                         None)
            if first is not None and not (first.get("thoughtSignature")
                                          or first.get("thought_signature")):
                # nanbingxyz/5ire#405, manthanabc/paws#103.
                raise Refusal(400, SIGNATURE_TEXT.format(
                    name=first["functionCall"].get("name"), pos=i + 1))


def gemini_check_key(headers, path):
    key = headers.get("x-goog-api-key")
    if key is None and path:
        key = dict(parse_qsl(urlsplit(path).query, True)).get("key")
    if key is None:
        raise Refusal(403, "Method doesn't allow unregistered callers (callers without "
                      "established identity). Please use API Key or other form of API "
                      "consumer identity to call this API.")
    if not key.strip():
        raise Refusal(400, "API key not valid. Please pass a valid API key.", body={"error": {
            "code": 400, "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                         "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}})


def gemini_validate(headers, body, model, path=None, raw_size=None):
    """Raises Refusal for a request the real Gemini API refuses."""
    gemini_check_key(headers, path)
    if raw_size is not None and raw_size > GEMINI_MAX_REQUEST:
        # The documented 20 MB inline-data limit; the text is the one the
        # API answers (likely).
        raise Refusal(400, f"Request payload size exceeds the limit: {GEMINI_MAX_REQUEST} "
                      "bytes.")
    if not isinstance(body, dict):
        raise Refusal(400, "Invalid JSON payload received. Expected an object.")
    contents = body.get("contents")
    if not contents:
        raise Refusal(400, "* GenerateContentRequest.contents: contents is not specified\n")
    if not isinstance(contents, list):
        raise Refusal(400, "Invalid JSON payload received. Unknown name \"contents\": "
                      "Proto field is not repeating, cannot start list.")
    gemini_check_tools(body)
    gemini_check_generation_config(body, model)
    gemini_check_contents(contents, model)
    tokens = estimate_tokens("gemini", body)
    if tokens > model["context"]:
        # google-gemini/gemini-cli#4231, #6678.
        raise Refusal(400, f"The input token count ({tokens}) exceeds the maximum number of "
                      f"tokens allowed ({model['context']}).")


# --------------------------------------------------------------------------
# The entry point.

def lower_headers(headers):
    """A plain dict with lowercase names, from a dict or an http.server
    message (repeated headers joined as the request log joins them)."""
    out = {}
    items = headers.items() if headers is not None else []
    for k, v in items:
        k = k.lower()
        out[k] = v if k not in out else out[k] + ", " + v
    return out


def request_model(api, body, path=None):
    """The model a request names: in the body, or (Gemini) in the path."""
    if api == "gemini":
        match = GEMINI_PATH.match(urlsplit(path or "").path)
        return match.group(2) if match else None
    return body.get("model") if isinstance(body, dict) and isinstance(
        body.get("model"), str) else None


def error_body(api, refusal):
    """The body the real API sends for a refusal."""
    if refusal.body is not None:
        return refusal.body
    if api == "anthropic":
        return anthropic_error_body(refusal.status, refusal.message, refusal.etype)
    if api == "openai":
        return openai_error_body(refusal.status, refusal.message, refusal.param,
                                 refusal.code, refusal.etype)
    return gemini_error_body(refusal.status, refusal.message)


def not_json_refusal(api):
    if api == "anthropic":
        return Refusal(400, "There was an issue with your request body: it is not valid JSON")
    if api == "openai":
        return Refusal(400, "We could not parse the JSON body of your request. (HINT: This "
                       "likely means you aren't using your HTTP library correctly. The OpenAI "
                       "API expects a JSON payload, but what was sent was not valid JSON.)")
    return Refusal(400, "Invalid JSON payload received. Unexpected token.")


def check(api, headers, body, model=None, *, path=None, raw_size=None, parsed=True,
          thoughts=None, models=None):
    """Like validate(), but returns the Refusal itself (or None)."""
    if api not in APIS:
        raise ValueError(f"unknown api {api!r}")
    headers = lower_headers(headers)
    if model is None:
        model = request_model(api, body, path)
    info = model_info(model, models)
    try:
        if api == "anthropic":
            anthropic_check_headers(headers)
            if not parsed:
                raise not_json_refusal(api)
            anthropic_validate(headers, body, info, raw_size, thoughts)
        elif api == "openai":
            openai_check_headers(headers)
            if not parsed:
                raise not_json_refusal(api)
            openai_validate(headers, body, info)
        else:
            gemini_check_key(headers, path)
            if not parsed:
                raise not_json_refusal(api)
            gemini_validate(headers, body, info, path, raw_size)
    except Refusal as r:
        return r
    return None


def validate(api, headers, body, model=None, *, path=None, raw_size=None, parsed=True,
             thoughts=None, models=None):
    """None when the real API would accept the request, else (status,
    error_body) with the real status and body shape.

    api: "anthropic" | "openai" | "gemini"; headers: a mapping (any case);
    body: the parsed JSON body (or its raw text with parsed=False); model:
    defaults to body["model"], or for Gemini to the model in path; path: the
    request path (Gemini's model and ?key=); raw_size: the body's size in
    bytes (size limits); thoughts: the fake's thinking blocks by call id
    (Anthropic's pass-back rule, skipped when None); models: test overrides
    of the model table (POST /_fake/models)."""
    r = check(api, headers, body, model, path=path, raw_size=raw_size, parsed=parsed,
              thoughts=thoughts, models=models)
    return None if r is None else (r.status, error_body(api, r))
