#!/usr/bin/env python3
"""What the real Anthropic, OpenAI and Gemini servers refuse, against the
real atelierd: every request it sends must pass tests/fake-llm's rules,
which refuse what the real APIs refuse (with their statuses and texts).

Each check is one of the defects of issue 16 (shared/anchors/provider-
constraints.md), shown for all three providers where it applies:
  - every tool of every plugin, in each provider's wire form, taken by that
    provider's rules (the tool lists go through fake_rules directly);
  - whitespace-only text and empty answers never wedge a session;
  - stop reasons acted on (max_tokens continued or reported, refusals
    reported, a malformed call reported to the model, an overload inside
    the stream retried);
  - model-aware parameters (reasoning models, adaptive thinking, Gemini's
    thinking budget);
  - a session that changes provider goes on;
  - a session driven past its context window keeps working.
Besides the checks' own assertions, atltest fails any check during which
the fake refused a request it did not mean to provoke; and at the end every
captured request is validated again offline (fake_llm.py --validate).

Output: "ok N -" / "not ok N -" lines, "#" diagnostics, "P passed, F
failed". Standard library only.
"""

import json
import os
import shutil
import subprocess
import sys
import time

from atltest import (BUILDDIR, KEY, SRCDIR, TMP, Checks, Daemon, Fake,
                     run_checks)

sys.path.insert(0, os.path.join(SRCDIR, "tests", "fake-llm"))
import fake_rules  # noqa: E402  (the fake's own rules, by import)

FAKE = os.path.join(SRCDIR, "tests", "fake-llm", "fake_llm.py")
CAPTURE = os.path.join(TMP, "captures")

# A model of each provider that the fake's table knows.
MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1-mini",
          "gemini": "gemini-2.5-flash"}
APIS = ("anthropic", "openai", "gemini")


def conf(url, api, model=None, extra="", plugins=""):
    return ("[agent]\nprovider = p\nmax_turns = 6\n%s"
            "[provider.p]\ntype = %s\nbase_url = %s\napi_key_env = FAKE_LLM_KEY\n"
            "models = %s\ntimeout_ms = 10000\n%s"
            % (plugins, api, url, model or MODELS[api], extra))


def daemon(ctx, name, api, **kw):
    data = kw.pop("data", None)
    return Daemon(name, conf(ctx["fake"].url, api, **kw), data_dir=data,
                  env={"FAKE_LLM_KEY": KEY})


def types(ev):
    return [e["type"] for e in ev if e["type"] != "text.delta"]


def last(ev, kind):
    got = [e for e in ev if e["type"] == kind]
    assert got, "no %s in %s" % (kind, types(ev))
    return got[-1]["data"]


checks = Checks()
check = checks.add


@check("every tool of every plugin, in each provider's wire form, passes that "
       "provider's rules")
def _(ctx):
    d = ctx["d"]["openai"]
    # Tools for people only (the canvas's add_human_stroke) are never sent.
    names = {t["name"] for t in d.rpc("tool.list", {})
             if t.get("for_model", True)}
    assert len(names) >= 39 and "optics_add" in names, len(names)
    for api in APIS:
        tools = d.rpc("tool.list", {"wire": api})
        if api == "gemini":
            decls = tools[0]["functionDeclarations"]
            assert {t["name"] for t in decls} == names
            assert not any("parameters" in t for t in decls), "parametersJsonSchema only"
        else:
            assert len(tools) == len(names), (api, len(tools))
        body = fake_rules_request(api, tools)
        got = fake_rules.validate(api, HEADERS[api], body, path=PATHS[api])
        assert got is None, (api, got)
        # The one that broke every request: no union at any root.
        for t in tools if api != "gemini" else decls:
            s = t.get("input_schema") or (t.get("function") or {}).get(
                "parameters") or t.get("parametersJsonSchema") or {}
            assert not {"oneOf", "anyOf", "allOf"} & set(s), (api, t["name"])
    # And the command-line check on the same lists, as a user would run it.
    for api in APIS:
        path = os.path.join(TMP, "tools-%s.json" % api)
        with open(path, "w") as f:
            json.dump(d.rpc("tool.list", {"wire": api}), f)
        r = subprocess.run([sys.executable, FAKE, "--check-tools", api, path,
                            "--model", MODELS[api]], capture_output=True, text=True)
        assert r.returncode == 0, (api, r.stdout, r.stderr)


HEADERS = {"anthropic": {"x-api-key": "k", "anthropic-version": "2023-06-01"},
           "openai": {"authorization": "Bearer k"},
           "gemini": {"x-goog-api-key": "k"}}
PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions",
         "gemini": "/v1beta/models/%s:streamGenerateContent?alt=sse"
         % MODELS["gemini"]}


def sent_images(o):
    """The base64 of every image in a request of any of the three APIs."""
    out = []
    if isinstance(o, dict):
        src = o.get("source")
        if o.get("type") == "image" and isinstance(src, dict):
            out.append(src.get("data", ""))
        elif isinstance(o.get("inlineData"), dict):
            out.append(o["inlineData"].get("data", ""))
        elif isinstance(o.get("image_url"), dict):
            out.append(o["image_url"].get("url", "").split("base64,", 1)[-1])
        else:
            for v in o.values():
                out += sent_images(v)
    elif isinstance(o, list):
        for v in o:
            out += sent_images(v)
    return out


def fake_rules_request(api, tools):
    if api == "anthropic":
        return {"model": MODELS[api], "max_tokens": 100, "tools": tools,
                "messages": [{"role": "user", "content": "hi"}]}
    if api == "openai":
        return {"model": MODELS[api], "tools": tools,
                "messages": [{"role": "user", "content": "hi"}]}
    return {"tools": tools, "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


@check("optics_add takes pieces (ParamMirror), through a real provider's call")
def _(ctx):
    for api in APIS:
        d, fake = ctx["d"][api], ctx["fake"]
        mirror = {"name": "m", "type": "ParamMirror", "origin": {"x": 10, "y": 10},
                  "pieces": [{"eqnX": "t", "eqnY": "t^2", "tMin": 0, "tMax": 1,
                              "tStep": 0.1}]}
        fake.script([{"tool_calls": [{"name": "optics_add", "arguments": mirror}]},
                     {"text": "Added."}])
        ev = d.run(d.session(), "a parabolic mirror")
        assert last(ev, "tool.finished")["success"] is True, (api, last(ev, "tool.finished"))
        assert ev[-1]["type"] == "run.completed", (api, types(ev))


@check("whitespace: a user message of spaces is refused at once; a model's "
       "\"\\n\\n\" before its call never goes back")
def _(ctx):
    for api in APIS:
        d, fake = ctx["d"][api], ctx["fake"]
        sid = d.session()
        for blank in ("  \n\t ", "\u3000\u00a0"):
            try:
                d.rpc("session.send", {"session": sid, "text": blank})
            except RuntimeError as e:
                assert "-32602" in str(e) and "only whitespace" in str(e), e
            else:
                raise AssertionError("a message of spaces was taken: %r" % blank)
        fake.script([{"text": "\n\n", "tool_calls": [
            {"name": "echo", "arguments": {"text": "x"}}]}, {"text": "Done."},
            {"text": "Again."}])
        ev = d.run(sid, "go")
        assert ev[-1]["type"] == "run.completed", (api, types(ev))
        # The next run's request carries the first answer: accepted.
        ev = d.run(sid, "and again")
        assert ev[-1]["type"] == "run.completed", (api, types(ev))
        h = d.history(sid)
        model = [m for m in h if m["role"] == "model"][0]["content"]
        assert [p["type"] for p in model["parts"]] == ["tool_call"], model
        assert model["provider"] == api, model


@check("an empty answer (the output limit reached before a word) is reported, "
       "and the session goes on")
def _(ctx):
    for api in APIS:
        d, fake = ctx["d"][api], ctx["fake"]
        sid = d.session()
        fake.script([{"text": "", "stop_reason": "max_tokens"}, {"text": "Fine."}])
        ev = d.run(sid, "hello")
        err = last(ev, "run.error")
        assert err["reason"] == "max_tokens" and "without answering" in err["message"], err
        ev = d.run(sid, "hello again")
        assert ev[-1]["type"] == "run.completed", (api, types(ev))


@check("max_tokens: a cut answer is continued; a call cut in its arguments "
       "gets an error saying why")
def _(ctx):
    for api in APIS:
        d, fake = ctx["d"][api], ctx["fake"]
        sid = d.session()
        fake.script([{"text": "The first half", "stop_reason": "max_tokens"},
                     {"text": " and the rest."}])
        ev = d.run(sid, "tell me")
        assert types(ev) == ["run.started", "text.done", "run.continued",
                             "text.done", "run.completed"], (api, types(ev))
        nudge = fake.requests()[-1]["body"]
        assert "cut off at the output limit" in json.dumps(nudge), api
        fake.script([{"tool_calls": [
            {"name": "echo", "arguments": {"text": "a long text"}}],
            "stop_reason": "max_tokens"}, {"text": "I will split it."}])
        ev = d.run(sid, "call it")
        if api == "gemini":
            # Gemini leaves a cut call out: nothing was said at all.
            assert last(ev, "run.error")["reason"] == "max_tokens", types(ev)
            continue
        fin = last(ev, "tool.finished")
        assert fin["success"] is False and "output limit" in fin["error"], (api, fin)
        assert ev[-1]["type"] == "run.completed", (api, types(ev))


@check("refusals and safety stops end the run with run.error {reason}")
def _(ctx):
    cases = {"anthropic": ({"stop_reason": "refusal"}, "refusal"),
             "openai": ({"refusal": "I can't help with that."}, "refusal"),
             "gemini": ({"stop_reason": "SAFETY"}, "safety")}
    for api, (turn, reason) in cases.items():
        d, fake = ctx["d"][api], ctx["fake"]
        sid = d.session()
        fake.script([turn, {"text": "ok"}])
        ev = d.run(sid, "something")
        err = last(ev, "run.error")
        assert err["reason"] == reason, (api, err)
        ev = d.run(sid, "something else")
        assert ev[-1]["type"] == "run.completed", (api, types(ev))
    d, fake = ctx["d"]["gemini"], ctx["fake"]
    fake.script([{"prompt_blocked": "PROHIBITED_CONTENT"}])
    err = last(d.run(d.session(), "x"), "run.error")
    assert err["reason"] == "safety" and "blocked" in err["message"], err


@check("gemini: a malformed function call is reported to the model, which "
       "tries again")
def _(ctx):
    d, fake = ctx["d"]["gemini"], ctx["fake"]
    fake.script([{"stop_reason": "MALFORMED_FUNCTION_CALL",
                  "finish_message": "Malformed function call: echo(text=x"},
                 {"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]},
                 {"text": "Done."}])
    sid = d.session()
    ev = d.run(sid, "echo x")
    assert types(ev) == ["run.started", "text.done", "run.continued", "text.done",
                         "tool.started", "tool.finished", "tool.results",
                         "text.done", "run.completed"], types(ev)
    told = json.dumps(fake.requests()[1]["body"])
    assert "could not be read (MALFORMED_FUNCTION_CALL)" in told and \
        "echo(text=x" in told, told[-600:]


@check("an overload reported inside the stream, before any content, is retried")
def _(ctx):
    for api in APIS:
        d, fake = ctx["d"][api], ctx["fake"]
        fake.script([{"stream_error": {"anthropic": "overloaded_error",
                                       "openai": "server_error",
                                       "gemini": "UNAVAILABLE"}[api]},
                     {"text": "Back."}])
        ev = d.run(d.session(), "hi", timeout=30)
        assert ev[-1]["type"] == "run.completed", (api, types(ev))
        assert len(fake.requests()) == 2, (api, len(fake.requests()))


@check("model-aware parameters: reasoning models, adaptive thinking, Gemini's "
       "thinking budget")
def _(ctx):
    fake = ctx["fake"]
    # o4-mini refuses max_tokens; gpt-5 too.
    d = daemon(ctx, "o4", "openai", model="o4-mini")
    try:
        fake.script([{"text": "ok"}])
        assert d.run(d.session(), "hi")[-1]["type"] == "run.completed"
        body = fake.requests()[-1]["body"]
        assert "max_completion_tokens" in body and "max_tokens" not in body, body
    finally:
        d.stop()
    # Opus 4.7 refuses a thinking budget: adaptive thinking instead.
    d = daemon(ctx, "opus", "anthropic", model="claude-opus-4-7",
               extra="max_tokens = 8192\nthinking_budget = 2048\n")
    try:
        fake.script([{"text": "ok"}])
        assert d.run(d.session(), "hi")[-1]["type"] == "run.completed"
        assert fake.requests()[-1]["body"]["thinking"] == {"type": "adaptive"}
    finally:
        d.stop()
    # Gemini 2.5 thinking 5000 tokens with max_tokens 1000: the answer
    # still comes (it came back empty when the thoughts ate the limit).
    d = daemon(ctx, "g25", "gemini", extra="max_tokens = 1000\n")
    try:
        fake.script([{"text": "The answer.", "thoughts_tokens": 5000}])
        ev = d.run(d.session(), "think hard")
        assert ev[-1]["type"] == "run.completed", types(ev)
        assert last(ev, "text.done")["text"] == "The answer."
        gc = fake.requests()[-1]["body"]["generationConfig"]
        assert gc["thinkingConfig"]["thinkingBudget"] == 8192 and \
            gc["maxOutputTokens"] == 9192, gc
    finally:
        d.stop()


@check("a 1920x1920 render reaches each provider fitted to its limits, and "
       "the model is told")
def _(ctx):
    import base64
    # The anchor's case: 30 spheres filling the view, at 2 samples a
    # pixel, make a noisy PNG of over 6 MB (8 MB as base64), which
    # Anthropic refuses.
    shapes = [{"name": "create_shape", "arguments": {
        "id": "s%d" % i, "type": "sphere", "properties": {
            "center": [(i % 6) * 0.8 - 2.0, (i // 6) * 0.8 - 1.6, 0],
            "radius": 0.45, "material": {"type": "lambertian", "albedo": [
                0.3 + (i % 3) * 0.3, 0.6, 0.9 - (i % 4) * 0.2]}}}}
        for i in range(30)]
    limits = {"anthropic": 1568, "openai": 2048, "gemini": 3072}
    for api in APIS:
        d, fake = ctx["d"][api], ctx["fake"]
        fake.script([{"tool_calls": shapes},
                     {"tool_calls": [{"name": "render_scene", "arguments": {
                         "width": 1920, "height": 1920, "samples": 2}}]},
                     {"text": "A field of spheres."}])
        ev = d.run(d.session(), "thirty spheres, rendered big", timeout=120)
        assert ev[-1]["type"] == "run.completed", (api, types(ev), ev[-1]["data"])
        body = fake.requests()[-1]["body"]
        imgs = sent_images(body)
        assert len(imgs) == 1, (api, len(imgs))
        w, h = fake_rules.image_size(base64.b64decode(imgs[0]))
        assert max(w, h) <= limits[api], (api, w, h)
        if api == "anthropic":
            assert len(imgs[0]) <= 5242880 and w * h <= 1190000, (w, h)
        # What was stored is the whole render: over Anthropic's 5 MB.
        stored = d.rpc("image.get", {"id": last(ev, "tool.finished")["images"][0]})
        assert stored["size"] * 4 // 3 > 5242880, stored["size"]
        # Scaled for Anthropic and OpenAI; Gemini keeps 1920 px but takes 7
        # MB, so it gets a JPEG: either way the model reads so.
        note = json.dumps(body).split("image_note", 1)[-1][:200]
        if api == "gemini":
            assert (w, h) == (1920, 1920) and "sent as JPEG" in note, (w, h, note)
        else:
            assert "scaled from 1920x1920" in note, (api, note)


@check("a session that changes provider goes on: Gemini's calls (no ids) and "
       "signatures, then Anthropic, then OpenAI")
def _(ctx):
    fake = ctx["fake"]
    data = os.path.join(TMP, "switch-data")
    d = daemon(ctx, "switch-g", "gemini", data=data)
    try:
        fake.script([{"tool_calls": [{"name": "echo", "arguments": {"text": "a"}},
                                     {"name": "echo", "arguments": {"text": "b"}}],
                      "thought_signature": "c2lnbmF0dXJl", "thinking": "plan"},
                     {"text": "Both."}])
        sid = d.session()
        assert d.run(sid, "two echoes")[-1]["type"] == "run.completed"
    finally:
        d.stop()
    for api in ("anthropic", "openai", "gemini"):
        d = daemon(ctx, "switch-" + api, api, data=data)
        try:
            fake.script([{"text": "Still here."}])
            ev = d.run(sid, "and now?")
            assert ev[-1]["type"] == "run.completed", (api, types(ev))
            body = json.dumps(fake.requests()[-1]["body"])
            if api != "gemini":
                assert "c2lnbmF0dXJl" not in body, api
        finally:
            d.stop()


@check("a session driven past its context window keeps working: earlier "
       "results go short, then the oldest messages are summarised (a failed "
       "summary call retried)")
def _(ctx):
    fake = ctx["fake"]
    fake._post("/_fake/models", {"models": {"tiny-" + api: {
        "context": 6000, "max_output": 1000} for api in APIS}})
    for api in APIS:
        d = daemon(ctx, "ctx-" + api, api, model="tiny-" + api,
                   extra="context_tokens = 6000\nmax_tokens = 500\n",
                   plugins="[plugins]\ndisable = scene, optics, render, drawing\n")
        try:
            sid = d.session()
            seen = []
            for i in range(8):
                turns = [
                    {"match": "no longer fits your context window",
                     "text": "Summary: the user asked for %d echoes of long "
                     "texts." % i},
                    {"tool_calls": [{"name": "echo", "arguments": {
                        "text": "%d " % i + "lorem ipsum " * 250}}]},
                    {"text": "Echoed %d." % i}]
                if i == 0:
                    # The first summary call meets an overload: retried
                    # after a pause, the messages are not dropped.
                    turns.insert(0, {"match": "no longer fits your context "
                                     "window", "status": 503})
                fake.script(turns)
                ev = d.run(sid, "echo a long text, number %d" % i, timeout=40)
                assert ev[-1]["type"] == "run.completed", (
                    api, i, types(ev), ev[-1]["data"])
                seen += types(ev)
                for q in fake.requests():
                    assert q["status"] in (200, 503), (api, i, q["status"],
                                                       q.get("error"))
            assert "context.trimmed" in seen, (api, seen)
            assert "context.compacted" in seen, (api, seen)
            comp = [e for e in d.events(sid) if e["type"] == "context.compacted"]
            assert all(c["data"]["summary"].startswith("Summary:")
                       for c in comp), (api, comp)
            h = d.history(sid)
            summaries = [m for m in h if m["role"] == "summary"]
            assert summaries and summaries[0]["content"]["covers"] > 0, summaries
            # What the model is sent now starts with the summary.
            fake.script([{"text": "Still going."}])
            ev = d.run(sid, "are you still there?")
            assert ev[-1]["type"] == "run.completed", (api, types(ev))
            body = json.dumps(fake.requests()[-1]["body"])
            assert "summarised to fit the context window" in body, api
        finally:
            d.stop()


def ctl(d, *args):
    return subprocess.run([os.path.join(BUILDDIR, "atelierctl"), "--socket",
                           d.sock, *args], capture_output=True, text=True)


@check("atelierctl provider check: the key, every tool, the answer; a refused "
       "tool named; a refused key")
def _(ctx):
    fake = ctx["fake"]
    for api in APIS:
        d = ctx["d"][api]
        fake.script([{"text": "ok"}])
        r = ctl(d, "provider", "check")
        assert r.returncode == 0, (api, r.stdout, r.stderr)
        tools = len([t for t in d.rpc("tool.list", {})
                     if t.get("for_model", True)])
        assert "key      ok\n" in r.stdout and \
            "tools    ok: all %d accepted" % tools in r.stdout and \
            'answer   "ok"' in r.stdout, r.stdout
        sent = fake.requests()[-1]["body"]
        assert "tools" in sent, "the real tool list goes"
    # The provider's message names a tool by its place: mapped to its name.
    d = ctx["d"]["anthropic"]
    names = [t["name"] for t in d.rpc("tool.list", {})]
    fake.script([{"status": 400, "error_message": "tools.3.custom.input_schema: "
                  "input_schema does not support oneOf, allOf, or anyOf at the "
                  "top level"}])
    r = ctl(d, "provider", "check", "--json")
    rep = json.loads(r.stdout)
    assert r.returncode == 1 and rep["ok"] is False, r.stdout
    order = [t["name"] for t in d.rpc("tool.list", {"wire": "anthropic"})]
    assert rep["tools"]["tool"] == order[3], (rep["tools"], order[:5])
    assert rep["key"]["ok"] is True, rep
    # Gemini names the declaration inside the tools block.
    d = ctx["d"]["gemini"]
    fake.script([{"status": 400, "error_message": "* GenerateContentRequest."
                  "tools[0].function_declarations[5].parameters.properties"
                  "[x].type: must be specified when not using one_of, any_of "
                  "or all_of fields"}])
    rep = json.loads(ctl(d, "provider", "check", "--json").stdout)
    decls = d.rpc("tool.list", {"wire": "gemini"})[0]["functionDeclarations"]
    assert rep["tools"]["tool"] == decls[5]["name"], (rep["tools"], decls[5])
    # A refusal that is not about the tools (an unknown model) says so.
    fake.script([{"status": 404, "error_message": "models/nope is not found"}])
    r = ctl(d, "provider", "check")
    assert r.returncode == 1 and "request  REFUSED: HTTP 404" in r.stdout and \
        "tools    not checked" in r.stdout, r.stdout
    # No key: refused, and said so.
    dk = Daemon("nokey", conf(fake.url, "openai"), env={})
    try:
        r = ctl(dk, "provider", "check")
        assert r.returncode == 1 and "key      REFUSED" in r.stdout and \
            "NOT work" in r.stdout, r.stdout
        r = ctl(dk, "provider", "check", "nosuch")
        assert r.returncode == 1 and "no [provider.nosuch]" in r.stdout, r.stdout
    finally:
        dk.stop()
    fake.take_refusals()  # the keyless request, refused on purpose


def main():
    shutil.rmtree(CAPTURE, ignore_errors=True)
    os.environ["FAKE_LLM_CAPTURE_DIR"] = CAPTURE
    fake = Fake()
    ctx = {"fake": fake, "d": {}}
    for api in APIS:
        ctx["d"][api] = daemon(ctx, "rules-" + api, api)
    passed, failed = run_checks(checks, ctx)
    for d in ctx["d"].values():
        d.stop()
    # Every request of this run the fake took, validated again offline
    # (a refused one failed its check already, unless it was provoked).
    n = len(checks) + 1
    taken = []
    for name in sorted(os.listdir(CAPTURE)) if os.path.isdir(CAPTURE) else []:
        with open(os.path.join(CAPTURE, name)) as f:
            if json.load(f).get("status") == 200:
                taken.append(os.path.join(CAPTURE, name))
    r = subprocess.run([sys.executable, FAKE, "--validate", *taken],
                       capture_output=True, text=True)
    count = len(taken)
    if r.returncode == 0 and count > 50:
        print("ok %d - all %d captured requests pass the rules again offline"
              % (n, count))
        passed += 1
    else:
        print("not ok %d - the captured requests (%d) validated offline" % (n, count))
        for line in (r.stdout + r.stderr).splitlines()[-10:]:
            print("# " + line)
        failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
