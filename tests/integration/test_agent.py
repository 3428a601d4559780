#!/usr/bin/env python3
"""The agent loop against a provider: the real atelierd with the real
plugins, talking to tests/fake-llm/fake_llm.py (the one test double the
project allows, itself checked against the official SDKs) over loopback.

Each check scripts the fake provider's turns, sends a message with
session.send over raw JSON-RPC, follows the session's events to the end of
the run, and checks the events, the history and what the provider was sent.

Run by `make check` (ATL_TEST_BUILDDIR, ATL_TEST_SRCDIR). Output: "ok N -"
or "not ok N -" lines, "#" diagnostics, a final "P passed, F failed".
Standard library only.
"""

import json
import os
import socket
import subprocess
import sys
import time

from atltest import (BUILDDIR, END, KEY, SRCDIR, TMP, Checks, Daemon, Fake,
                     run_checks)



# ---------------------------------------------------------------- helpers

def types(events):
    return [e["type"] for e in events if e["type"] != "text.delta"]


def conf(url, extra=""):
    return ("[agent]\nprovider = fake\nmax_turns = 3\n%s\n"
            "[provider.fake]\ntype = openai\nbase_url = %s\n"
            "api_key_env = FAKE_LLM_KEY\nmodels = fake-model, other-model\n"
            "timeout_ms = 5000\n" % (extra, url))


SPHERE = {"id": "ball", "type": "sphere",
          "properties": {"center": [0, 1, 0], "radius": 1}}

# ---------------------------------------------------------------- checks

results = Checks()
check = results.add


@check("a text answer streams as text.delta events and ends the run")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    fake.script([{"text": "Hello, I am a fake model.", "chunks": 4,
                  "usage": {"input": 11, "output": 7}}])
    sid = d.session()
    ev = d.run(sid, "hi")
    deltas = [e["data"]["text"] for e in ev if e["type"] == "text.delta"]
    assert "".join(deltas) == "Hello, I am a fake model.", deltas
    assert len(deltas) >= 2, "it streamed in pieces: %s" % deltas
    assert types(ev) == ["run.started", "text.done", "run.completed"], types(ev)
    done = ev[-1]["data"]
    assert done["usage"] == {"input_tokens": 11, "output_tokens": 7}, done
    req = fake.requests()[-1]
    assert req["headers"]["authorization"] == "(redacted)", req["headers"]
    assert req["body"]["model"] == "fake-model"
    assert req["body"]["stream"] is True
    assert req["body"]["messages"][0]["role"] == "system"
    assert "CURRENT SCENE" in req["body"]["messages"][0]["content"]
    assert req["body"]["messages"][1] == {"role": "user", "content": "hi"}
    names = [t["function"]["name"] for t in req["body"]["tools"]]
    assert "create_shape" in names and "echo" in names, names
    h = d.history(sid)
    assert [m["role"] for m in h] == ["user", "model"], h


@check("the model: the session's (session.create), else the message's, checked")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    assert d.rpc("agent.models", {}) == {
        "provider": "fake", "type": "openai",
        "models": ["fake-model", "other-model"], "default": "fake-model",
        "offline": False}, d.rpc("agent.models", {})
    sid = d.rpc("session.create", {"model": "other-model"})["id"]
    got = d.rpc("session.get", {"session": sid})
    assert got["model"] == "other-model", got
    listed = [s for s in d.rpc("session.list", {}) if s["id"] == sid]
    assert listed and listed[0]["model"] == "other-model", listed
    created = d.events(sid)[0]
    assert created["data"] == {"model": "other-model"}, created
    fake.script([{"text": "one"}, {"text": "two"}, {"text": "three"}])
    ev = d.run(sid, "hi")
    assert ev[0]["data"]["model"] == "other-model", ev[0]
    assert fake.requests()[-1]["body"]["model"] == "other-model"
    # A message may name its own model, for that run only.
    after = ev[-1]["seq"]
    d.rpc("session.send", {"session": sid, "text": "again",
                           "model": "vendor/third-model:8b"})
    ev = d.follow(sid, after)
    assert ev[0]["data"]["model"] == "vendor/third-model:8b", ev[0]
    assert fake.requests()[-1]["body"]["model"] == "vendor/third-model:8b"
    d.run(sid, "and the session's again")
    assert fake.requests()[-1]["body"]["model"] == "other-model"
    # A session without one gets the provider's default (the first of
    # "models"); session.get says null.
    plain = d.session()
    assert d.rpc("session.get", {"session": plain})["model"] is None
    # Names that could not be a model are refused before anything runs.
    for bad, why in [("", "must not be empty"), ("a b", "may only contain"),
                     ("../x", "must not contain"), ("x" * 129, "longer"),
                     (7, "not int")]:
        for method, params in [("session.create", {"model": bad}),
                               ("session.send", {"session": plain,
                                                 "text": "hi",
                                                 "model": bad})]:
            try:
                d.rpc(method, params)
            except RuntimeError as e:
                assert why in str(e) and "-32602" in str(e), (method, e)
            else:
                raise AssertionError("%s accepted model %r" % (method, bad))
    assert d.history(plain) == [], "nothing ran"


@check("parallel tool calls run in order; every result goes back, errors too")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    fake.script([
        {"text": "Making two.", "tool_calls": [
            {"id": "call_1", "name": "create_shape", "arguments": SPHERE},
            {"id": "call_2", "name": "create_shape",
             "arguments": {"id": "bad", "type": "sphere",
                           "properties": {"center": [0, 0, 0], "radius": -1}}},
            {"id": "call_3", "name": "no_such_tool", "arguments": {}}]},
        {"text": "One worked."}])
    sid = d.session()
    ev = d.run(sid, "two balls")
    t = types(ev)
    assert t == ["run.started", "text.done", "tool.started", "tool.finished",
                 "tool.started", "tool.finished", "tool.started",
                 "tool.finished", "tool.results", "text.done",
                 "run.completed"], t
    fin = [e["data"] for e in ev if e["type"] == "tool.finished"]
    assert [f["success"] for f in fin] == [True, False, False], fin
    # Each result names its call, as its tool.started did.
    started = [e["data"]["id"] for e in ev if e["type"] == "tool.started"]
    assert [f["id"] for f in fin] == started == ["call_1", "call_2",
                                                 "call_3"], (fin, started)
    assert ev[-1]["data"]["turns"] == 2
    second = fake.requests()[-1]["body"]["messages"]
    tools = [m for m in second if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["call_1", "call_2",
                                                   "call_3"], tools
    assert json.loads(tools[0]["content"])["success"] is True
    assert "/properties/radius" in json.loads(tools[1]["content"])["error"]
    assert "unknown tool 'no_such_tool'" in json.loads(tools[2]["content"])["error"]
    state = d.rpc("tool.call", {"session": sid, "name": "get_scene_state",
                                "arguments": {}})
    assert [s["id"] for s in state["result"]["shapes"]] == ["ball"], state


@check("a tool's image goes back to the model as an image, only on the next call")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    fake.script([{"tool_calls": [{"id": "call_i", "name": "echo_image",
                                  "arguments": {"width": 8, "height": 8}}]},
                 {"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]},
                 {"text": "Seen."}])
    sid = d.session()
    ev = d.run(sid, "draw")
    assert ev[-1]["type"] == "run.completed", types(ev)
    reqs = fake.requests()
    second = reqs[-2]["body"]["messages"]
    urls = [p["image_url"]["url"] for m in second if m["role"] == "user"
            and isinstance(m["content"], list)
            for p in m["content"] if p.get("type") == "image_url"]
    assert len(urls) == 1 and urls[0].startswith("data:image/png;base64,iVBORw0KGgo"), urls
    third = reqs[-1]["body"]["messages"]
    assert "image_url" not in json.dumps(third), "sent once, not on every turn"


@check("the turn limit stops the run with the message, and the next message resumes")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    call = {"name": "echo", "arguments": {"text": "again"}}
    fake.script([{"tool_calls": [call]}] * 3 + [{"text": "resumed"}])
    sid = d.session()
    ev = d.run(sid, "loop forever")
    assert ev[-1]["type"] == "run.limit_reached", types(ev)
    assert ev[-1]["data"]["message"] == ("Reached maximum turn limit (3 turns)."
                                         " Send a message to continue.")
    assert len(fake.requests()) == 3
    ev = d.run(sid, "go on")
    assert ev[-1]["type"] == "run.completed", types(ev)
    msgs = fake.requests()[-1]["body"]["messages"]
    assert msgs[-1] == {"role": "user", "content": "go on"}, msgs[-1]
    assert sum(1 for m in msgs if m["role"] == "tool") == 3


@check("429 is retried after its Retry-After; the run then completes")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    fake.script([{"status": 429, "retry_after": 2, "error_message": "slow down"},
                 {"text": "after the retry"}])
    sid = d.session()
    ev = d.run(sid, "hello")
    assert ev[-1]["type"] == "run.completed", types(ev)
    reqs = fake.requests()
    assert len(reqs) == 2
    gap = reqs[1]["ts"] - reqs[0]["ts"]
    assert 2.0 <= gap < 3.0, "waited %.2f s for Retry-After: 2" % gap


@check("three 500s end the run with run.error carrying the provider's message")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    fake.script([{"status": 500, "error_message": "the fake is down"}] * 4)
    sid = d.session()
    ev = d.run(sid, "hello", timeout=30)
    assert ev[-1]["type"] == "run.error", types(ev)
    assert ev[-1]["data"]["status"] == 500
    assert "the fake is down" in ev[-1]["data"]["message"], ev[-1]
    reqs = fake.requests()
    assert len(reqs) == 3, "at most 3 tries"
    gaps = [reqs[i + 1]["ts"] - reqs[i]["ts"] for i in range(2)]
    assert 1.0 <= gaps[0] < 1.8 and 2.0 <= gaps[1] < 2.8, \
        "backoff 1 s then 2 s (with jitter): %s" % gaps


@check("a provider that hangs or is down: timeouts and refusals retried, then run.error")
def _(ctx):
    fake = ctx["fake"]
    conf_text = provider_conf(fake.url, "openai").replace(
        "timeout_ms = 5000", "timeout_ms = 1000")
    d = Daemon("hang", conf_text, env={"FAKE_LLM_KEY": KEY})
    try:
        # A hang that ends after two tries: the third goes through.
        fake.script([{"hang": True}, {"hang": True}, {"text": "late but here"}])
        sid = d.session()
        t0 = time.monotonic()
        ev = d.run(sid, "hello", timeout=30)
        took = time.monotonic() - t0
        assert ev[-1]["type"] == "run.completed", [
            (e["type"], e["data"]) for e in ev if e["type"] != "text.delta"]
        # Two 1 s timeouts, then backoffs of about 1 s and 2 s.
        assert 4.5 <= took < 9, took
        # Hanging every time: the run ends, and says why.
        fake.script([{"hang": True}] * 3)
        ev = d.run(sid, "again", timeout=30)
        assert ev[-1]["type"] == "run.error", types(ev)
        assert "could not be reached" in ev[-1]["data"]["message"], ev[-1]
        assert "timed out" in ev[-1]["data"]["message"].lower() or \
            "timeout" in ev[-1]["data"]["message"].lower(), ev[-1]
    finally:
        d.stop()
    # Nothing listening at all.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = "http://127.0.0.1:%d" % s.getsockname()[1]
    s.close()
    d = Daemon("down", provider_conf(dead, "openai"), env={"FAKE_LLM_KEY": KEY})
    try:
        sid = d.session()
        ev = d.run(sid, "hello", timeout=30)
        assert ev[-1]["type"] == "run.error", types(ev)
        msg = ev[-1]["data"]["message"]
        assert "could not be reached" in msg, msg
        assert d.history(sid)[-1]["role"] == "user", "the message is kept"
    finally:
        d.stop()


@check("a tool that times out gives the model an error result, and the run goes on")
def _(ctx):
    fake = ctx["fake"]
    d = Daemon("tooltimeout", provider_conf(fake.url, "openai"),
               env={"FAKE_LLM_KEY": KEY})
    try:
        fake.script([{"tool_calls": [{"id": "slow", "name": "echo_sleep",
                                      "arguments": {"ms": 5000}}]},
                     {"text": "It timed out."}])
        sid = d.session()
        ev = d.run(sid, "sleep", timeout=30)
        assert ev[-1]["type"] == "run.completed", types(ev)
        fin = [e["data"] for e in ev if e["type"] == "tool.finished"]
        assert len(fin) == 1 and fin[0]["success"] is False, fin
        sent = [m for m in fake.requests()[-1]["body"]["messages"]
                if m["role"] == "tool"]
        assert len(sent) == 1 and sent[0]["tool_call_id"] == "slow", sent
        err = json.loads(sent[0]["content"])
        # (echo_sleep declares its own timeout, 2 s.)
        assert err["success"] is False and "timed out after 2000 ms" in err["error"], err
    finally:
        d.stop()


@check("a truncated stream and malformed JSON are errors, not hangs")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    fake.script([{"text": "this stream is cut short", "chunks": 6,
                  "truncate": True}])
    sid = d.session()
    ev = d.run(sid, "hello")
    assert ev[-1]["type"] == "run.error", types(ev)
    assert "truncated" in ev[-1]["data"]["message"], ev[-1]
    fake.script([{"text": "broken", "chunks": 3, "malformed": True}])
    ev = d.run(sid, "again")
    assert ev[-1]["type"] == "run.error", types(ev)
    assert "malformed JSON" in ev[-1]["data"]["message"], ev[-1]


@check("cancel: the tool in flight finishes, no further model call")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    fake.script([{"tool_calls": [{"name": "echo_sleep", "arguments": {"ms": 600}},
                                 {"name": "echo", "arguments": {"text": "x"}}]},
                 {"text": "never asked"}])
    sid = d.session()
    after = d.events(sid)[-1]["seq"]
    d.rpc("session.send", {"session": sid, "text": "sleep"})
    for _ in range(100):
        if any(e["type"] == "tool.started" for e in d.events(sid, after)):
            break
        time.sleep(0.02)
    assert d.rpc("session.cancel", {"session": sid}) == {"cancelled": True}
    ev = d.follow(sid, after)
    assert ev[-1]["type"] == "run.cancelled", types(ev)
    fin = [e["data"] for e in ev if e["type"] == "tool.finished"]
    assert fin and fin[0]["success"] is True, "the sleep finished: %s" % fin
    assert len(fake.requests()) == 1
    h = d.history(sid)
    assert h[-1]["role"] == "tool" and len(h[-1]["content"]["parts"]) == 2, h[-1]


@check("messages sent during a run wait and run in order; past queue_max, an error")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    fake.script([{"text": "first", "delay_ms": 100, "chunks": 2},
                 {"text": "second"}, {"text": "third"}])
    sid = d.session()
    after = d.events(sid)[-1]["seq"]
    assert d.rpc("session.send", {"session": sid, "text": "1"})["queued"] is False
    assert d.rpc("session.send", {"session": sid, "text": "2"})["queued"] is True
    assert d.rpc("session.send", {"session": sid, "text": "3"})["queued"] is True
    try:
        d.rpc("session.send", {"session": sid, "text": "4"})
        raise AssertionError("a fourth message was accepted (queue_max = 2)")
    except RuntimeError as e:
        assert "-32004" in str(e) and "queue_max" in str(e), e
    ev = d.follow(sid, after, ends=3)
    done = [e["data"]["text"] for e in ev if e["type"] == "text.done"]
    assert done == ["first", "second", "third"], done


def kill_and_wait_interrupted(ctx, sid, after, started):
    """Kills ctx's daemon once `started` (an event type) is in the session's
    log after `after`, restarts it, and returns the events after `after`
    once the restarted daemon has ended the dead run (run.interrupted)."""
    d = ctx["d"]
    for _ in range(200):
        if any(e["type"] == started for e in d.events(sid, after)):
            break
        time.sleep(0.02)
    d.kill()
    d2 = Daemon("agent", ctx["conf"], env={"FAKE_LLM_KEY": KEY})
    ctx["d"] = d2
    for _ in range(100):
        ev = d2.events(sid, after)
        if ev and ev[-1]["type"] == "run.interrupted":
            break
        time.sleep(0.05)
    return ev


@check("a daemon killed mid-run restarts with a consistent history")
def _(ctx):
    fake = ctx["fake"]
    d = ctx["d"]
    fake.script([{"tool_calls": [{"id": "call_k", "name": "echo_sleep",
                                  "arguments": {"ms": 3000}}]},
                 {"text": "after the restart"}])
    sid = d.session()
    after = d.events(sid)[-1]["seq"]
    d.rpc("session.send", {"session": sid, "text": "sleep then die"})
    # Loading the session (here, reading its events) ends the dead run at
    # once, before any new message.
    ev = kill_and_wait_interrupted(ctx, sid, after, "tool.started")
    d2 = ctx["d"]
    assert ev[-1]["type"] == "run.interrupted", types(ev)
    assert "atelierd stopped during this run" in ev[-1]["data"]["message"]
    ev = d2.run(sid, "are you there?")
    t = types(ev)
    # The calls it left are answered (once the history is loaded, before
    # the new run), and the run goes on; run.interrupted is not repeated.
    assert t[:3] == ["tool.results", "run.started", "text.done"], t
    assert ev[0]["data"] == {"count": 1, "interrupted": True}, ev[0]
    assert ev[-1]["type"] == "run.completed", t
    assert "run.interrupted" not in t, t
    msgs = fake.requests()[-1]["body"]["messages"]
    tool = [m for m in msgs if m["role"] == "tool"]
    assert tool and tool[0]["tool_call_id"] == "call_k", msgs
    assert "interrupted" in json.loads(tool[0]["content"])["error"], tool


@check("a daemon killed while the answer streams: the run is ended as interrupted at load")
def _(ctx):
    fake, d = ctx["fake"], ctx["d"]
    fake.script([{"text": "a long answer " * 20, "chunks": 40, "delay_ms": 100}])
    sid = d.session()
    after = d.events(sid)[-1]["seq"]
    d.rpc("session.send", {"session": sid, "text": "talk"})
    ev = kill_and_wait_interrupted(ctx, sid, after, "text.delta")
    d2 = ctx["d"]
    t = types(ev)
    assert t[0] == "run.started" and t[-1] == "run.interrupted", t
    assert not any(x in t for x in END), t
    # Only the user's message is in the history: a cut answer is not kept.
    assert [m["role"] for m in d2.history(sid)] == ["user"], d2.history(sid)


@check("agent.system_prompt_file replaces the prompt; only its first %s is filled in")
def _(ctx):
    fake = ctx["fake"]
    path = os.path.join(TMP, "prompt.txt")
    with open(path, "w") as f:
        f.write("Custom prompt, 100%% sure. Scene:\n%s\nEnd %d %n.")
    d = Daemon("prompt", conf(fake.url, "system_prompt_file = " + path),
               env={"FAKE_LLM_KEY": KEY})
    try:
        fake.script([{"text": "ok"}])
        sid = d.session()
        d.rpc("tool.call", {"session": sid, "name": "create_shape",
                            "arguments": SPHERE})
        d.run(sid, "hi")
        system = fake.requests()[-1]["body"]["messages"][0]["content"]
        assert system.startswith("Custom prompt, 100%% sure. Scene:\nShapes (1):\n"
                                 "- sphere 'ball'"), system
        assert system.endswith("\nEnd %d %n."), system
    finally:
        d.stop()


def provider_conf(url, ptype):
    return ("[agent]\nprovider = p\n[provider.p]\ntype = %s\nbase_url = %s\n"
            "api_key_env = FAKE_LLM_KEY\nmodels = m1\ntimeout_ms = 5000\n"
            % (ptype, url))


def other_provider(ctx, ptype):
    """A run with two parallel calls and a final answer through ptype: the
    fake refuses a follow-up whose tool results do not answer every call,
    so a completed run shows the results went back in that API's format."""
    fake = ctx["fake"]
    d = Daemon(ptype, provider_conf(fake.url, ptype), env={"FAKE_LLM_KEY": KEY})
    try:
        fake.script([
            {"text": "Two calls.", "chunks": 2, "tool_calls": [
                {"name": "create_shape", "arguments": SPHERE},
                {"name": "echo", "arguments": {"text": 5}},
                {"name": "echo_image", "arguments": {"width": 4, "height": 4}}]},
            {"text": "Done."}])
        sid = d.session()
        ev = d.run(sid, "go")
        assert ev[-1]["type"] == "run.completed", [
            (e["type"], e["data"]) for e in ev if e["type"] != "text.delta"]
        fin = [e["data"]["success"] for e in ev if e["type"] == "tool.finished"]
        assert fin == [True, False, True], fin
        deltas = "".join(e["data"]["text"] for e in ev if e["type"] == "text.delta")
        assert deltas == "Two calls.Done.", deltas
        reqs = fake.requests()
        assert len(reqs) == 2 and all(r["api"] == ptype for r in reqs), reqs
        return reqs[-1]["body"]
    finally:
        d.stop()


@check("anthropic: tool_use answered by tool_result blocks, errors marked")
def _(ctx):
    body = other_provider(ctx, "anthropic")
    results = [b for m in body["messages"] if m["role"] == "user"
               and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert len(results) == 3, body["messages"]
    assert [r.get("is_error", False) for r in results] == [False, True, False], results
    images = [b for b in results[2]["content"] if b.get("type") == "image"]
    assert len(images) == 1 and images[0]["source"]["media_type"] == "image/png", results[2]
    assert images[0]["source"]["data"].startswith("iVBORw0KGgo"), images


@check("anthropic: extended, interleaved and redacted thinking goes back block for block")
def _(ctx):
    fake = ctx["fake"]
    d = Daemon("thinking", provider_conf(fake.url, "anthropic") +
               "max_tokens = 4096\nthinking_budget = 1024\n",
               env={"FAKE_LLM_KEY": KEY})
    try:
        content = [{"thinking": "First."}, {"text": "Looking. "},
                   {"redacted_thinking": "EmwKAhgBEgy3va3pzix"},
                   {"thinking": "Then."}]
        fake.script([{"anthropic_content": content, "tool_calls": [
            {"name": "echo", "arguments": {"text": "x"}}]},
            {"anthropic_content": [{"thinking": "Done?"}, {"text": "Done."}]},
            {"text": "Again."}])
        sid = d.session()
        ev = d.run(sid, "go")
        # The fake refuses a follow-up whose thinking blocks were dropped,
        # altered or moved (as the API does): the run got through.
        assert ev[-1]["type"] == "run.completed", [
            (e["type"], e["data"]) for e in ev if e["type"] != "text.delta"]
        reqs = fake.requests()
        first = reqs[0]
        assert first["body"]["thinking"] == {"type": "enabled",
                                             "budget_tokens": 1024}, first["body"]
        assert first["headers"]["anthropic-beta"] == \
            "interleaved-thinking-2025-05-14", first["headers"]
        back = reqs[1]["body"]["messages"][1]["content"]
        assert [b["type"] for b in back] == [
            "thinking", "text", "redacted_thinking", "thinking", "tool_use"], back
        assert back[2]["data"] == "EmwKAhgBEgy3va3pzix", back
        # A daemon restart reads the same blocks back from the store.
        d.kill()
        d2 = Daemon("thinking", provider_conf(fake.url, "anthropic") +
                    "max_tokens = 4096\nthinking_budget = 1024\n",
                    env={"FAKE_LLM_KEY": KEY})
        d = d2
        ev = d.run(sid, "once more")
        assert ev[-1]["type"] == "run.completed", types(ev)
        again = fake.requests()[-1]["body"]["messages"]
        assert again[1]["content"] == back, (again[1], back)
    finally:
        d.stop()


@check("a thinking budget is checked against max_tokens and the provider type")
def _(ctx):
    path = os.path.join(TMP, "bad-thinking.conf")

    def refused(conf_text, why):
        with open(path, "w") as f:
            f.write(conf_text)
        r = subprocess.run([os.path.join(BUILDDIR, "atelierd"), "--foreground",
                            "--config", path, "--socket-dir",
                            os.path.join(TMP, "bad-run"), "--data-dir",
                            os.path.join(TMP, "bad-data")],
                           capture_output=True, text=True, timeout=20)
        assert r.returncode == 2 and why in r.stderr, (conf_text, r.returncode,
                                                       r.stderr)
    anth = provider_conf("http://127.0.0.1:9", "anthropic")
    refused(anth + "thinking_budget = 512\n", "between 1024 and 1000000")
    refused(anth + "max_tokens = 2000\nthinking_budget = 2000\n",
            "must be less than max_tokens")
    refused(provider_conf("http://127.0.0.1:9", "openai") +
            "thinking_budget = 2048\n", "is for type = anthropic or gemini")


@check("gemini: functionCall answered by functionResponse parts")
def _(ctx):
    body = other_provider(ctx, "gemini")
    parts = [p for c in body["contents"] for p in c["parts"]
             if "functionResponse" in p]
    assert [p["functionResponse"]["name"] for p in parts] == [
        "create_shape", "echo", "echo_image"], parts
    inline = [p for c in body["contents"] for p in c["parts"] if "inlineData" in p]
    assert len(inline) == 1 and inline[0]["inlineData"]["mimeType"] == "image/png", inline
    assert inline[0]["inlineData"]["data"].startswith("iVBORw0KGgo")
    decl = body["tools"][0]["functionDeclarations"]
    assert any(f["name"] == "create_shape" for f in decl)
    assert "$ref" not in json.dumps(decl), "Gemini gets no $ref"


@check("record a session as a cassette; a replay provider plays it back for real")
def _(ctx):
    d, fake = ctx["d"], ctx["fake"]
    fake.script([
        {"text": "Placing the ball.", "tool_calls": [
            {"name": "create_shape", "arguments": SPHERE}]},
        {"text": "It is there."}])
    sid = d.session()
    ev = d.run(sid, "a ball")
    assert ev[-1]["type"] == "run.completed", types(ev)
    cassette = os.path.join(TMP, "recorded.json")
    ctl = os.path.join(BUILDDIR, "atelierctl")
    with open(cassette, "w") as f:
        subprocess.run([ctl, "--socket", d.sock, "session", "cassette", sid],
                       stdout=f, check=True)
    with open(cassette) as f:
        c = json.load(f)
    assert c["format"] == "atelier-cassette" and len(c["turns"]) == 2, c
    r = Daemon("replay", "[agent]\nprovider = r\n[provider.r]\ntype = replay\n"
               "cassette = %s\n" % cassette)
    try:
        sid2 = r.session()
        ev = r.run(sid2, "anything")
        t = types(ev)
        assert t == ["run.started", "text.done", "tool.started",
                     "tool.finished", "tool.results", "text.done",
                     "run.completed"], t
        assert [e["data"]["text"] for e in ev if e["type"] == "text.done"] == [
            "Placing the ball.", "It is there."]
        state = r.rpc("tool.call", {"session": sid2, "name": "get_scene_state",
                                    "arguments": {}})
        assert [x["id"] for x in state["result"]["shapes"]] == ["ball"]
        # Past its end, the cassette says so instead of failing.
        ev = r.run(sid2, "more")
        assert "The recording ends here" in ev[1]["data"]["text"], ev
    finally:
        r.stop()


def eviction_check():
    """Runs in more sessions than store.session_cache holds, at once: a
    session with a run in flight must not be evicted (it was freed under
    its run once, when session.send released a reference it did not own)."""
    d = Daemon("evict", "[store]\nsession_cache = 1\n")
    try:
        sids = [d.session() for _ in range(4)]
        afters = [d.events(s)[-1]["seq"] for s in sids]
        for s in sids:
            d.rpc("session.send", {"session": s,
                                   "text": '/echo_sleep {"ms": 300}'})
        for s in sids[::-1]:
            d.rpc("session.send", {"session": s, "text": '/echo {"text": "x"}'})
        for s, a in zip(sids, afters):
            ev = d.follow(s, a, ends=2)
            fin = [e["data"]["success"] for e in ev if e["type"] == "tool.finished"]
            assert fin == [True, True], (s, types(ev))
        assert d.proc.poll() is None, "atelierd died"
        for s in sids:
            h = d.history(s)
            # A /tool call is kept as the user's text and its answer.
            assert [m["role"] for m in h] == ["user", "model"] * 2, h
            assert h[1]["content"]["parts"][0]["text"].startswith(
                "/echo_sleep answered: {\"success\":true"), h[1]
        # A session's model comes back with it from the store.
        m = d.rpc("session.create", {"model": "kept-model"})["id"]
        d.session()  # m leaves the cache of one
        ev = d.run(m, '/echo {"text": "x"}')
        assert ev[0]["type"] == "run.started", types(ev)
        assert ev[0]["data"]["model"] == "kept-model", ev[0]
    finally:
        d.stop()


def offline_checks(fail_count):
    d = Daemon("offline", "[log]\nlevel = debug\n")
    try:
        m = d.rpc("agent.models", {})
        assert m["offline"] is True and m["provider"] is None and \
            m["models"] == [] and "ANTHROPIC_API_KEY" in m["why"], m
        sid = d.session()
        ev = d.run(sid, "hello")
        assert types(ev) == ["run.started", "text.done", "run.completed"], types(ev)
        assert "No LLM provider is configured" in ev[1]["data"]["text"], ev[1]
        ev = d.run(sid, "/create_shape " + json.dumps(SPHERE))
        fin = [e["data"] for e in ev if e["type"] == "tool.finished"]
        assert fin and fin[0]["success"] is True, fin
        # A typed call that does not parse says the form it takes; an
        # unknown tool's says which there are.
        ev = d.run(sid, '/create_shape {"id": "x", ')
        fin = [e["data"] for e in ev if e["type"] == "tool.finished"]
        assert fin and fin[0]["success"] is False, fin
        assert fin[0]["error"] == (
            'the arguments are not a JSON object: {"id": "x", . Write the '
            "tool's name, a space and its arguments as one JSON object: "
            '/create_shape {"id": …, "type": …, "properties": …} (tool.list '
            "has its whole schema; the page lists the tools when you type /)"
            ), fin[0]["error"]
        ev = d.run(sid, "/no_such_tool {")
        fin = [e["data"] for e in ev if e["type"] == "tool.finished"]
        assert fin and "create_shape" in fin[0]["error"], fin
        # /demo replays the bundled cassette through the real loop.
        sid = d.session()
        # (It renders at render_scene's defaults: seconds, more under the
        # sanitizers.)
        ev = d.run(sid, "/demo", timeout=180)
        fin = [e["data"]["success"] for e in ev if e["type"] == "tool.finished"]
        # Fourteen calls build the snowman; render_scene looks at it.
        assert len(fin) == 15 and all(fin), fin
        assert ev[-1]["type"] == "run.completed" and ev[-1]["data"]["turns"] == 5
        tools = [e["data"]["tool"] for e in ev if e["type"] == "tool.started"]
        assert tools[-1] == "render_scene", tools
        state = d.rpc("tool.call", {"session": sid, "name": "get_scene_state",
                                    "arguments": {}})["result"]
        assert len(state["shapes"]) == 11 and len(state["lights"]) == 1, state
    finally:
        d.stop()


def main():
    fake = Fake()
    c = conf(fake.url, "queue_max = 2")
    ctx = {"fake": fake, "conf": c,
           "d": Daemon("agent", c, env={"FAKE_LLM_KEY": KEY})}
    passed, failed = run_checks(
        results + [("offline: how to configure, /tool calls, /demo",
                    lambda ctx: offline_checks(0)),
                   ("runs in more sessions than the cache holds",
                    lambda ctx: eviction_check())], ctx)
    n = len(results) + 2
    with open(ctx["d"].log) as f:
        log = f.read()
    n += 1
    if KEY in log:
        print("not ok %d - the API key never appears in the log" % n)
        failed += 1
    else:
        print("ok %d - the API key never appears in the log" % n)
        passed += 1
    ctx["d"].stop()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
