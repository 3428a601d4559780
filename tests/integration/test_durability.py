#!/usr/bin/env python3
"""Nothing acknowledged is lost (issue 17, part 3): what atelierd answered
as done, or streamed as an event, is still there after a kill -9.

Each check drives the real atelierd over raw JSON-RPC against the fake
provider (tests/fake-llm/fake_llm.py), kills it with SIGKILL at the moment
that matters, starts a new one on the same data directory, and compares
what the first one acknowledged with what the second one has:
- messages queued behind a waiting run (session.send answered
  {"queued": true}) exist after the restart and run in order, each once;
- a cancel or a delete that was answered has dropped the stored queue;
- queue_max counts the messages a restart brought back;
- every event an events.read reader saw before the kill is still there,
  the same, and no later event reuses its seq.

Run by `make check` (ATL_TEST_BUILDDIR, ATL_TEST_SRCDIR). Output: "ok N -"
or "not ok N -" lines, "#" diagnostics, a final "P passed, F failed".
Standard library only.
"""

import json
import os
import signal
import socket
import sqlite3
import sys
import threading
import time

from atltest import KEY, Checks, Daemon, Fake, run_checks

NAME = "durability"
ROUNDS = 3  # kills right after answers to pipelined messages
SESSIONS = 20  # messages in each


def conf(url):
    # timeout_ms: long enough that a hanging turn outlives each check.
    return ("[agent]\nprovider = fake\nmax_turns = 3\nqueue_max = 2\n"
            "[provider.fake]\ntype = openai\nbase_url = %s\n"
            "api_key_env = FAKE_LLM_KEY\nmodels = fake-model\n"
            "timeout_ms = 30000\n" % url)


def start(ctx):
    ctx["d"] = Daemon(NAME, ctx["conf"], env={"FAKE_LLM_KEY": KEY})
    return ctx["d"]


def restart(ctx):
    """kill -9 the daemon and start another on the same data directory."""
    ctx["d"].kill()
    return start(ctx)


def types(events):
    return [e["type"] for e in events if e["type"] != "text.delta"]


def wait_for(what, fn, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out waiting for %s" % what)


def model_requests(fake):
    return [q for q in fake.requests() if q["path"].startswith("/v1")]


def stored_queue(ctx):
    """The queue table as the file holds it (read-only, beside the daemon:
    WAL lets a reader in)."""
    path = os.path.join(ctx["d"].data, "atelier.db")
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        return db.execute("SELECT session, text FROM queue ORDER BY id").fetchall()
    finally:
        db.close()


# A first turn that streams slowly: a cancel is seen at its next piece (a
# turn that sends nothing at all is only ended by the provider's timeout).
SLOW = {"text": "slow " * 100, "chunks": 100, "delay_ms": 100}


def send_three(ctx, fake, turns, first=None):
    """A session whose first message's run waits on the provider (its turn
    hangs, or is `first`), with two more messages queued behind it. Returns
    the session and the seq before the first message."""
    d = ctx["d"]
    fake.script([first or {"hang": True}] + turns)
    sid = d.session()
    after = d.events(sid)[-1]["seq"]
    assert d.rpc("session.send", {"session": sid, "text": "first"}) == {"queued": False}
    assert d.rpc("session.send", {"session": sid, "text": "second"}) == {"queued": True}
    assert d.rpc("session.send", {"session": sid, "text": "third"}) == {"queued": True}
    wait_for("the first run's model call", lambda: len(model_requests(fake)) == 1)
    return sid, after


results = Checks()
check = results.add


@check("three messages, kill -9 while the first run waits: after the restart "
       "all three exist and run in order, each once")
def _(ctx):
    fake = ctx["fake"]
    sid, after = send_three(ctx, fake, [{"text": "answer two"},
                                        {"text": "answer three"}])
    d = restart(ctx)
    # Nothing asks for the session: the restarted daemon runs what was
    # queued by itself.
    try:
        wait_for("the queued messages' model calls",
                 lambda: len(model_requests(fake)) >= 3)
    except AssertionError:
        users = [m["content"]["parts"][0]["text"] for m in d.history(sid)
                 if m["role"] == "user"]
        raise AssertionError("after the restart the model was asked %d "
                             "time(s); the user's messages in the history: "
                             "%s" % (len(model_requests(fake)), users))
    ev = d.follow(sid, after, ends=2)  # run.interrupted is no END
    t = types(ev)
    assert t == ["run.started", "message.queued", "message.queued",
                 "run.interrupted",
                 "run.started", "text.done", "run.completed",
                 "run.started", "text.done", "run.completed"], t
    started = [e["data"] for e in ev if e["type"] == "run.started"]
    assert [s["text"] for s in started] == ["first", "second", "third"], started
    queued = [e["data"] for e in ev if e["type"] == "message.queued"]
    assert [q["text"] for q in queued] == ["second", "third"], queued
    ids = [q["id"] for q in queued]
    assert ids[0] < ids[1], ids
    # run.started names the message it starts, as message.queued did.
    assert [s["message_id"] for s in started[1:]] == ids, started
    done = [e["data"]["text"] for e in ev if e["type"] == "text.done"]
    assert done == ["answer two", "answer three"], done
    # The model was asked about each message once, in order.
    last_user = [[m for m in q["body"]["messages"] if m["role"] == "user"][-1]
                 ["content"] for q in model_requests(fake)]
    assert last_user == ["first", "second", "third"], last_user
    h = d.history(sid)
    assert [m["content"]["parts"][0]["text"] for m in h if m["role"] == "user"] \
        == ["first", "second", "third"], h
    assert d.rpc("session.get", {"session": sid})["queued"] == []
    assert stored_queue(ctx) == []
    # Another restart runs nothing again.
    last = ev[-1]["seq"]
    d = restart(ctx)
    assert types(d.events(sid, last)) == [], d.events(sid, last)
    time.sleep(0.5)
    assert len(model_requests(fake)) == 3
    assert types(d.events(sid, last)) == []


@check("a cancel drops the queued messages from the store before it answers")
def _(ctx):
    fake = ctx["fake"]
    sid, after = send_three(ctx, fake, [{"text": "must not run"}] * 2)
    ids = [q["id"] for q in ctx["d"].rpc("session.get", {"session": sid})["queued"]]
    assert ctx["d"].rpc("session.cancel", {"session": sid}) == {"cancelled": True}
    assert stored_queue(ctx) == []
    d = restart(ctx)  # at once: the answer promised the queue is gone
    time.sleep(0.5)
    ev = d.events(sid, after)
    cleared = [e["data"] for e in ev if e["type"] == "queue.cleared"]
    assert cleared == [{"ids": ids, "reason": "cancelled"}], ev
    started = [e["data"]["text"] for e in ev if e["type"] == "run.started"]
    assert started == ["first"], started
    assert len(model_requests(fake)) == 1
    assert d.rpc("session.get", {"session": sid})["queued"] == []


@check("a cancel during a run drops what waits; the run ends cancelled, nothing follows")
def _(ctx):
    fake, d = ctx["fake"], ctx["d"]
    sid, after = send_three(ctx, fake, [{"text": "must not run"}] * 2, SLOW)
    assert d.rpc("session.cancel", {"session": sid}) == {"cancelled": True}
    ev = d.follow(sid, after)
    t = types(ev)
    assert t == ["run.started", "message.queued", "message.queued",
                 "queue.cleared", "run.cancelled"], t
    time.sleep(0.3)
    assert types(d.events(sid, ev[-1]["seq"])) == []
    assert len(model_requests(fake)) == 1
    # Nothing waits any more: the next message starts at once.
    fake.script([{"text": "fresh"}])
    assert d.rpc("session.send", {"session": sid, "text": "again"}) == {"queued": False}
    ev = d.follow(sid, ev[-1]["seq"])
    assert types(ev) == ["run.started", "text.done", "run.completed"], types(ev)


@check("session.delete drops the stored queue with the session")
def _(ctx):
    fake = ctx["fake"]
    sid, _ = send_three(ctx, fake, [{"text": "must not run"}] * 2)
    assert [r[1] for r in stored_queue(ctx)] == ["second", "third"]
    assert ctx["d"].rpc("session.delete", {"session": sid}) == {"deleted": True}
    assert stored_queue(ctx) == []
    restart(ctx)
    time.sleep(0.5)
    assert len(model_requests(fake)) == 1


@check("queue_max counts the messages a restart brought back")
def _(ctx):
    fake = ctx["fake"]
    # The second message hangs in its turn after the restart, so the third
    # still waits when the next messages come.
    sid, after = send_three(ctx, fake, [{"hang": True}, {"text": "three"},
                                        {"text": "four"}])
    d = restart(ctx)
    wait_for("the second message's model call",
             lambda: len(model_requests(fake)) == 2)
    assert d.rpc("session.send", {"session": sid, "text": "fourth"}) == {"queued": True}
    try:
        d.rpc("session.send", {"session": sid, "text": "fifth"})
        raise AssertionError("a fifth message was accepted (queue_max = 2)")
    except RuntimeError as e:
        assert "-32004" in str(e) and "queue_max" in str(e), e
    got = d.rpc("session.get", {"session": sid})["queued"]
    assert [q["text"] for q in got] == ["third", "fourth"], got
    assert d.rpc("session.cancel", {"session": sid}) == {"cancelled": True}
    assert stored_queue(ctx) == []
    restart(ctx)  # the second message's turn hangs until then


def message(i):
    """Message i, long enough that its commit takes a while: an answer
    sent before the commit would be read before the commit is done."""
    return "message %d " % i + "x" * 65536


def send_and_kill(d, sids):
    """Pipelines one session.send per session on one connection and
    SIGKILLs the daemon as soon as the first answers are read. Returns the
    sessions whose message was acknowledged: nothing of those may be lost."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    s.connect(d.sock)
    s.sendall(b"".join(json.dumps({
        "jsonrpc": "2.0", "id": i, "method": "session.send",
        "params": {"session": sid, "text": message(i)}}).encode() + b"\n"
        for i, sid in enumerate(sids)))
    buf = b""
    while b"\n" not in buf:
        chunk = s.recv(1 << 16)
        assert chunk, "the daemon closed the connection"
        buf += chunk
    os.kill(d.proc.pid, signal.SIGKILL)
    d.proc.wait()
    s.close()
    acked = []
    for line in buf.split(b"\n")[:-1]:  # whole answers only
        r = json.loads(line)
        assert r.get("result") == {"queued": False}, r
        acked.append(r["id"])
    return acked


@check("messages answered {queued: false} survive a kill -9 right after the answer")
def _(ctx):
    fake = ctx["fake"]
    fake.script([{"text": "ok"}] * (ROUNDS * SESSIONS))
    total = 0
    for _ in range(ROUNDS):
        sids = [ctx["d"].session() for _ in range(SESSIONS)]
        acked = send_and_kill(ctx["d"], sids)
        total += len(acked)
        d = start(ctx)
        for i in acked:
            # Its run ran after the restart, or had started before the
            # kill and was ended as interrupted (not run twice).
            ended = lambda: [e for e in d.events(sids[i])  # noqa: E731
                             if e["type"] in ("run.completed",
                                              "run.interrupted")]
            try:
                wait_for("message %d's run" % i, ended, 10)
            finally:
                users = [m["content"]["parts"][0]["text"]
                         for m in d.history(sids[i]) if m["role"] == "user"]
                assert users == [message(i)], \
                    "acknowledged message %d; the history has %d user " \
                    "message(s)" % (i, len(users))
    print("# %d acknowledged messages checked after %d kills" % (total, ROUNDS))


@check("messages waiting at a SIGTERM stay queued, and run after the next start")
def _(ctx):
    fake = ctx["fake"]
    sid, after = send_three(ctx, fake, [{"text": "two"}, {"text": "three"}],
                            SLOW)
    ctx["d"].stop()
    try:
        assert [r[1] for r in stored_queue(ctx)] == ["second", "third"]
    finally:
        d = start(ctx)  # for the checks after this one, whatever happened
    ev = d.follow(sid, after, ends=3)
    started = [e["data"]["text"] for e in ev if e["type"] == "run.started"]
    assert started == ["first", "second", "third"], types(ev)
    assert types(ev)[-6:] == ["run.started", "text.done", "run.completed",
                              "run.started", "text.done", "run.completed"], \
        types(ev)
    assert stored_queue(ctx) == []


def reader(d, sid, seen, stop):
    """An events.read long-poll client, as the bridge's hub is: records
    every event it is given."""
    after = 0
    while not stop.is_set():
        try:
            r = d.rpc("events.read", {"session": sid, "after_seq": after,
                                      "limit": 10000, "wait_ms": 200}, timeout=5)
        except (OSError, RuntimeError, ValueError):
            return  # the daemon was killed
        for e in r["events"]:
            seen.append(e)
            after = e["seq"]


@check("every event a reader saw before a kill -9 is there after it, the same; "
       "no seq is reused")
def _(ctx):
    fake, d = ctx["fake"], ctx["d"]
    fake.script([{"text": "word " * 400, "chunks": 200, "delay_ms": 10}])
    sid = d.session()
    seen, stop = [], threading.Event()
    th = threading.Thread(target=reader, args=(d, sid, seen, stop))
    th.start()
    d.rpc("session.send", {"session": sid, "text": "stream"})
    wait_for("a few deltas", lambda: sum(e["type"] == "text.delta" for e in seen) >= 20)
    d.kill()  # mid-stream, with the reader reading
    stop.set()
    th.join(timeout=10)
    d = start(ctx)
    after = wait_for("run.interrupted", lambda: [
        e for e in d.events(sid) if e["type"] == "run.interrupted"])
    stored = {e["seq"]: e for e in d.events(sid)}
    assert seen, "the reader saw nothing"
    for e in seen:
        assert stored.get(e["seq"]) == e, (e, stored.get(e["seq"]))
    assert after[0]["seq"] > seen[-1]["seq"], (after[0], seen[-1])
    seqs = sorted(stored)
    assert seqs == list(range(1, len(seqs) + 1)), "no gap: %s" % seqs


def main():
    fake = Fake()
    ctx = {"fake": fake, "conf": conf(fake.url)}
    start(ctx)
    passed, failed = run_checks(results, ctx)
    ctx["d"].stop()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
