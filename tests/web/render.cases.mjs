// ChatView (render.js) and EventStream (stream.js) driven by scripted
// events, in the fake DOM of fakedom.mjs (installed by unit.test.mjs
// before this module loads). These check what the page draws for each
// event type, that nothing but text comes from the daemon's strings, and
// that replays and reconnects show every event exactly once.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';

const { ChatView } = await import('../../fcgi/www/render.js');
const { EventStream } = await import('../../fcgi/www/stream.js');

const EVIL = '<img src=x onerror=alert(1)>';

function makeView() {
  const root = document.createElement('div');
  const pending = document.createElement('div');
  const scroller = Object.assign(document.createElement('div'), { scrollHeight: 0, scrollTop: 0, clientHeight: 0 });
  const log = { active: [], images: [], started: [], ended: [], empty: [], progress: [] };
  const view = new ChatView({
    root, pending, scroller,
    hooks: {
      onRunState: (a) => log.active.push(a),
      onImage: (id) => log.images.push(id),
      onRenderProgress: (f) => log.progress.push(f),
      onRunStarted: (t) => log.started.push(t),
      onRunEnded: (t) => log.ended.push(t),
      onChange: (e) => log.empty.push(e),
    },
  });
  return { view, root, pending, log };
}

// A session like the spec's mockups: a streamed answer with markup in it,
// a creation, a rename, a failure, a call cut off by a cancel; then a
// provider error and a turn limit.
function session() {
  const evs = [
    ['session.created', {}],
    ['run.started', { text: 'Make a blue sphere <b>now</b>', model: 'm1', provider: 'claude' }],
    ['text.delta', { text: "I'll create " }],
    ['text.delta', { text: '<script>alert(1)</script>' }],
    ['text.done', { text: `I'll create a **blue** sphere. ${EVIL} [x](javascript:alert(1))`, latency_ms: 120 }],
    ['tool.started', { tool: 'create_shape', id: 't1', arguments: { id: 'blue_sphere', type: 'sphere' } }],
    ['tool.finished', {
      operation: {
        tool: 'create_shape', target: 'blue_sphere', arguments: { id: 'blue_sphere', type: 'sphere' },
        after: { id: 'blue_sphere', type: 'sphere', properties: { color: [0, 0, 1] } },
      },
      success: true, duration_ms: 2, timestamp: '2026-01-01T00:00:00Z', images: ['img1'],
    }],
    ['tool.started', { tool: 'update_shape', id: 't2', arguments: { id: 'blue_sphere', updates: { id: 'red_sphere' } } }],
    ['tool.progress', { tool: 'update_shape', fraction: 0.5, message: 'half' }],
    ['tool.finished', {
      operation: {
        tool: 'update_shape', target: 'red_sphere', arguments: { id: 'blue_sphere' },
        before: { id: 'blue_sphere', properties: { color: [0, 0, 1] } },
        after: { id: 'red_sphere', properties: { color: [1, 0, 0] } },
      },
      success: true, duration_ms: 3,
    }],
    ['tool.started', { tool: 'update_shape', id: 't3', arguments: { id: EVIL } }],
    ['tool.finished', {
      operation: { tool: 'update_shape', arguments: { id: EVIL } },
      success: false, error: `shape '${EVIL}' not found; shapes: red_sphere`, duration_ms: 1,
    }],
    ['tool.started', { tool: 'remove_shape', id: 't4', arguments: { id: 'red_sphere' } }],
    ['tool.results', { count: 4 }],
    ['run.cancelled', { turns: 1, usage: { input_tokens: 10, output_tokens: 5 } }],
    ['run.started', { text: 'again' }],
    ['run.error', { message: '<b>overloaded</b>', status: 529, turns: 0 }],
    ['run.started', { text: 'go' }],
    ['text.done', { text: 'Reached maximum turn limit (10 turns).' }],
    ['run.limit_reached', { message: 'Reached maximum turn limit (10 turns).', turns: 10 }],
    ['render.progress', { image: 'img2', fraction: 0.25 }],
  ];
  return evs.map(([type, data], i) => ({ seq: i + 1, type, ts: 0, data }));
}

const all = (root, sel) => root.querySelectorAll(sel);

describe('ChatView: a whole session', () => {
  const { view, root, pending, log } = makeView();
  const queued = view.addPending('again');
  assert.equal(pending.childElementCount, 1);
  for (const ev of session()) view.apply(ev);

  test('nothing from the daemon becomes markup', () => {
    const allowed = new Set(['div', 'section', 'span', 'button', 'dl', 'dt', 'dd', 'h4', 'pre', 'ul', 'li',
      'p', 'strong', 'em', 'code', 'br', 'progress']);
    for (const e of root.descendants()) {
      if (e.localName === 'img') {
        assert.ok(e.parentNode.classList.contains('image-button'));
        assert.equal(e.src, '/api/images/img1.png');
        continue;
      }
      assert.ok(allowed.has(e.localName), 'unexpected <' + e.localName + '>');
    }
    assert.ok(root.textContent.includes(EVIL));
    assert.ok(root.textContent.includes('[x](javascript:alert(1))'));
    assert.equal(all(root, 'a').length, 0);
  });

  test('user messages and the streamed answer', () => {
    const users = all(root, '.msg-user');
    assert.deepEqual(users.map((u) => u.textContent), ['Make a blue sphere <b>now</b>', 'again', 'go']);
    const answers = all(root, '.msg-assistant');
    assert.equal(answers.length, 1, 'the limit text is shown once, as the notice');
    // text.done replaced the streamed pieces with the Markdown of the whole.
    assert.equal(all(answers[0], 'strong')[0].textContent, 'blue');
    assert.ok(!answers[0].textContent.includes('<script>'));
    assert.ok(!answers[0].classList.contains('streaming'));
    assert.equal(all(root, '.run-meta')[0].textContent, 'm1 · claude');
  });

  test('the queued message left when its run started', () => {
    assert.equal(pending.childElementCount, 0);
    assert.equal(queued.parentNode, null);
  });

  test('tool lines: summaries and states', () => {
    const calls = all(root, '.tool-call');
    assert.deepEqual(calls.map((c) => c.dataset.state), ['ok', 'ok', 'failed', 'notrun']);
    assert.deepEqual(calls.map((c) => c.querySelector('.tool-summary').textContent), [
      'Created shape: blue_sphere',
      'Updated shape: blue_sphere → red_sphere',
      `Could not update shape: ${EVIL}`,
      'Removed shape — not run',
    ]);
    assert.deepEqual(calls.map((c) => c.dataset.callId), ['t1', 't2', 't3', 't4']);
    assert.equal(calls[2].querySelector('.tool-error').textContent, `Error: shape '${EVIL}' not found; shapes: red_sphere`);
    assert.ok(calls[2].querySelector('.tool-error .icon-failed'), 'the error has its drawn icon');
    assert.ok(calls[2].querySelector('.tool-hint').textContent.startsWith('Suggestion:'));
    assert.deepEqual(log.images, ['img1', 'img2']);
    assert.deepEqual(log.progress, [0.25]);
  });

  test('details: facts, the diff, the raw call, toggled by the line', () => {
    const call = all(root, '.tool-call')[1];
    const line = call.querySelector('.tool-line');
    const details = call.querySelector('.tool-details');
    assert.equal(details.hidden, true);
    assert.equal(line.getAttribute('aria-expanded'), 'false');
    line.click();
    assert.equal(details.hidden, false);
    assert.equal(line.getAttribute('aria-expanded'), 'true');
    assert.equal(line.querySelector('.tool-toggle').textContent, '[-]');
    assert.deepEqual(all(details, 'dd').map((d) => d.textContent), ['update_shape', 'red_sphere', 'Success', '3 ms']);
    const rows = all(details, '.diff-row');
    assert.deepEqual(rows.map((r) => r.textContent), [
      'id: "blue_sphere" → "red_sphere"',
      'properties.color: [0,0,1] → [1,0,0]',
    ]);
    assert.deepEqual(rows.map((r) => r.dataset.kind), ['changed', 'changed']);
    assert.deepEqual(JSON.parse(details.querySelector('.tool-args').textContent),
      { name: 'update_shape', arguments: { id: 'blue_sphere' } });
    line.click();
    assert.equal(details.hidden, true);
    // The creation lists its leaves as added, and has its image.
    const first = all(root, '.tool-call')[0];
    assert.deepEqual(all(first, '.diff-row').map((r) => r.dataset.kind), ['added', 'added', 'added']);
    assert.equal(first.querySelector('.image-button').dataset.imageId, 'img1');
  });

  test('notices and run states', () => {
    const notices = all(root, '.notice');
    assert.deepEqual(notices.map((n) => [n.dataset.kind, n.textContent]), [
      ['cancelled', 'Stopped.'],
      ['error', 'Error (HTTP 529): <b>overloaded</b>'],
      ['limit', 'Reached maximum turn limit (10 turns).'],
    ]);
    assert.deepEqual(all(root, '.run').map((r) => r.dataset.state), ['cancelled', 'error', 'limit_reached']);
    assert.deepEqual(log.active, [true, false, true, false, true, false]);
    assert.deepEqual(log.ended, ['run.cancelled', 'run.error', 'run.limit_reached']);
    assert.equal(all(root, '.run-footer')[0].textContent, '1 turn · 10 in / 5 out tokens');
    assert.equal(log.empty.at(-1), false);
  });
});

describe('ChatView: runs in progress', () => {
  test('a tool line goes from running to its result, keeping its place and its open state', () => {
    const { view, root } = makeView();
    view.apply({ seq: 1, type: 'run.started', data: { text: 'x' } });
    view.apply({ seq: 2, type: 'tool.started', data: { tool: 'set_camera', id: 'a', arguments: { center: [0, 1, 5] } } });
    const call = root.querySelector('.tool-call');
    assert.equal(call.dataset.state, 'pending');
    // Icons are drawn by the stylesheet, never characters from a font.
    assert.ok(call.querySelector('.tool-icon').classList.contains('icon-running'));
    assert.equal(call.querySelector('.tool-icon').textContent, '');
    assert.equal(call.querySelector('.tool-summary').textContent, 'Setting camera…');
    call.querySelector('.tool-line').click();
    view.apply({ seq: 3, type: 'tool.finished', data: { operation: { tool: 'set_camera', target: 'camera' }, success: true } });
    assert.equal(root.querySelectorAll('.tool-call').length, 1);
    assert.equal(call.dataset.state, 'ok');
    assert.ok(call.querySelector('.tool-icon').classList.contains('icon-done'));
    assert.equal(call.querySelector('.tool-summary').textContent, 'Set camera');
    assert.equal(call.querySelector('.tool-details').hidden, false);
  });

  test('a finish without a start (a /tool call) gets its own line', () => {
    const { view, root } = makeView();
    view.apply({ seq: 1, type: 'run.started', data: { text: '/create_shape {}' } });
    view.apply({ seq: 2, type: 'tool.finished', data: { operation: { tool: 'create_shape' }, success: false, error: '/id: required' } });
    assert.equal(root.querySelectorAll('.tool-call').length, 1);
    assert.equal(root.querySelector('.tool-call').dataset.state, 'failed');
  });

  test('a call an MCP client made says who made it', () => {
    const { view, root } = makeView();
    view.apply({ seq: 5, type: 'tool.finished', data: { operation: { tool: 'create_shape', target: 'ball' }, success: true, via: 'MCP over stdio (claude-ai)' } });
    const call = root.querySelector('.tool-call');
    assert.equal(call.dataset.via, 'MCP over stdio (claude-ai)');
    assert.equal(call.querySelector('.tool-via').textContent, 'via MCP over stdio (claude-ai)');
    const dds = [...call.querySelectorAll('.tool-facts dd')];
    const facts = [...call.querySelectorAll('.tool-facts dt')].map((dt, i) => dt.textContent + ': ' + dds[i].textContent);
    assert.ok(facts.includes('Called by: MCP over stdio (claude-ai)'), facts.join('; '));
    // The page's own calls name nobody.
    view.apply({ seq: 6, type: 'tool.finished', data: { operation: { tool: 'set_camera' }, success: true } });
    assert.equal(root.querySelectorAll('.tool-via').length, 1);
  });

  test('a cancel mid-stream keeps the partial answer, marked', () => {
    const { view, root, log } = makeView();
    view.apply({ seq: 1, type: 'run.started', data: { text: 'x' } });
    view.apply({ seq: 2, type: 'text.delta', data: { text: 'Half an ans' } });
    assert.equal(root.querySelector('.msg-assistant').classList.contains('streaming'), true);
    view.apply({ seq: 3, type: 'run.cancelled', data: {} });
    const msg = root.querySelector('.msg-assistant');
    assert.equal(msg.classList.contains('partial'), true);
    assert.equal(msg.textContent, 'Half an ans');
    assert.deepEqual(log.active, [true, false]);
  });

  test('a run cut off by a restart ends at run.interrupted; forceEnd closes one that never ends', () => {
    const { view, root, log } = makeView();
    view.apply({ seq: 1, type: 'run.started', data: { text: 'x' } });
    view.apply({ seq: 2, type: 'tool.started', data: { tool: 'create_shape', arguments: {} } });
    view.apply({ seq: 3, type: 'run.interrupted', data: { message: 'the previous run was interrupted' } });
    assert.equal(root.querySelector('.tool-call').dataset.state, 'notrun');
    assert.equal(root.querySelector('.notice').dataset.kind, 'interrupted');
    view.apply({ seq: 4, type: 'run.started', data: { text: 'y' } });
    view.forceEnd('No run is active any more.');
    assert.deepEqual(log.active, [true, false, true, false]);
    view.forceEnd('twice'); // no run: nothing happens
    assert.equal(root.querySelectorAll('.notice').length, 2);
  });

  test("a render's progress ends with its call, or with its run", () => {
    const { view, log } = makeView();
    view.apply({ seq: 1, type: 'run.started', data: { text: 'x' } });
    view.apply({ seq: 2, type: 'tool.started', data: { tool: 'render_scene', id: 'r', arguments: {} } });
    view.apply({ seq: 3, type: 'render.progress', data: { image: 'p1', fraction: 0.3 } });
    view.apply({ seq: 4, type: 'tool.finished', data: { operation: { tool: 'render_scene' }, success: true, images: ['final'] } });
    assert.deepEqual(log.progress, [0.3, 1]);
    assert.deepEqual(log.images, ['p1', 'final']);
    view.apply({ seq: 5, type: 'tool.started', data: { tool: 'render_scene', id: 's', arguments: {} } });
    view.apply({ seq: 6, type: 'render.progress', data: { image: 'p2', fraction: 0.6 } });
    view.apply({ seq: 7, type: 'run.cancelled', data: {} });
    assert.deepEqual(log.progress, [0.3, 1, 0.6, 1]);
    view.apply({ seq: 8, type: 'run.started', data: { text: 'y' } });
    view.apply({ seq: 9, type: 'run.completed', data: {} });
    assert.deepEqual(log.progress, [0.3, 1, 0.6, 1], 'no render, no progress');
  });

  test('reset empties the view', () => {
    const { view, root, log } = makeView();
    view.apply({ seq: 1, type: 'run.started', data: { text: 'x' } });
    view.reset();
    assert.equal(root.childElementCount, 0);
    assert.equal(log.empty.at(-1), true);
  });
});

// The loop's own notices: a run kept going after a cut or unreadable turn,
// the context window trimmed and compacted, and the reasons a run.error
// may carry.
describe('ChatView: notices from the agent loop', () => {
  const seqd = (evs) => evs.map(([type, data], i) => ({ seq: i + 1, type, ts: 0, data }));
  const notices = (root) => all(root, '.notice').map((n) => [n.dataset.kind, n.textContent]);

  test('run.continued: a notice per continuation, and the run goes on', () => {
    const { view, root, log } = makeView();
    const note = '(Your answer was cut off at the output limit. Continue exactly where it stopped, without repeating anything.)';
    for (const ev of seqd([
      ['run.started', { text: 'tell me' }],
      ['text.delta', { text: 'The first half' }],
      ['text.done', { text: 'The first half' }],
      ['run.continued', { reason: 'max_tokens', text: note, attempt: 1 }],
      ['text.delta', { text: ' and the rest.' }],
      ['text.done', { text: ' and the rest.' }],
      ['run.continued', { reason: 'malformed_function_call', text: '(Your last tool call could not be read)', attempt: 2 }],
      ['run.continued', { reason: 'pause_turn', attempt: 1 }],
      ['tool.started', { tool: 'create_shape', id: 'c1', arguments: { id: 'ball' } }],
    ])) view.apply(ev);
    const run = root.querySelector('.run');
    assert.equal(all(root, '.run').length, 1, 'one run throughout');
    assert.equal(run.dataset.state, 'active');
    assert.deepEqual(log.active, [true], 'still running after the continuations');
    assert.deepEqual(notices(root), [
      ['continued', 'The answer reached the output limit; continuing (1)…'],
      ['continued', "The model's tool call could not be read; it was told and is trying again (2)…"],
      ['continued', 'Paused by the provider; resuming…'],
    ]);
    const ns = all(root, '.notice');
    assert.deepEqual(ns.map((n) => n.getAttribute('role')), ['status', 'status', 'status']);
    assert.deepEqual(ns.map((n) => n.dataset.reason), ['max_tokens', 'malformed_function_call', 'pause_turn']);
    assert.equal(ns[0].title, note);
    // The continued text is in the same run, after the notice, in its own bubble.
    const kids = run.children.map((c) => c.classList.contains('notice') ? 'notice'
      : c.classList.contains('msg-assistant') ? 'answer:' + c.textContent : c.className);
    assert.deepEqual(kids, ['answer:The first half', 'notice', 'answer:and the rest.', 'notice', 'notice', 'tool-call']);
    assert.equal(run.querySelector('.tool-call').dataset.state, 'pending');
    view.apply({ seq: 10, type: 'tool.finished', data: { operation: { tool: 'create_shape', target: 'ball' }, success: true, id: 'c1' } });
    view.apply({ seq: 11, type: 'run.completed', data: { turns: 4 } });
    assert.equal(run.dataset.state, 'completed');
    assert.equal(run.querySelector('.tool-call').dataset.state, 'ok');
    assert.deepEqual(log.active, [true, false]);
  });

  test('run.continued without an attempt count, or with a reason not known yet', () => {
    const { view, root } = makeView();
    view.apply({ seq: 1, type: 'run.started', data: { text: 'x' } });
    view.apply({ seq: 2, type: 'run.continued', data: { reason: 'max_tokens' } });
    view.apply({ seq: 3, type: 'run.continued', data: { reason: EVIL, attempt: 3 } });
    assert.deepEqual(notices(root), [
      ['continued', 'The answer reached the output limit; continuing…'],
      ['continued', "The model's turn ended early; continuing (3)…"],
    ]);
  });

  test('context.trimmed: says what goes in short, with the estimate', () => {
    const { view, root } = makeView();
    view.apply({ seq: 1, type: 'run.started', data: { text: 'x' } });
    view.apply({ seq: 2, type: 'context.trimmed', data: { short_below: 12, tokens: 181234, budget: 190000 } });
    view.apply({ seq: 3, type: 'context.trimmed', data: { short_below: 14 } });
    assert.deepEqual(notices(root), [
      ['trimmed', 'Older tool results are now sent to the model in short, to fit its context window (about 181,234 of 190,000 tokens).'],
      ['trimmed', 'Older tool results are now sent to the model in short, to fit its context window.'],
    ]);
    assert.equal(root.querySelector('.notice').getAttribute('role'), 'status');
    assert.equal(root.querySelector('.run').dataset.state, 'active');
  });

  test('context.compacted: the summary folded in a <details>, hostile text stays text', () => {
    const { view, root } = makeView();
    const summary = `The user asked for a **snowman**. ${EVIL} <script>alert(1)</script> [x](javascript:alert(1))`;
    view.apply({ seq: 1, type: 'run.started', data: { text: 'x' } });
    view.apply({ seq: 2, type: 'context.compacted', data: { summary, messages: 24, covers: 25, tokens_before: 200000, budget: 190000 } });
    view.apply({ seq: 3, type: 'text.done', data: { text: 'Still here.' } });
    const n = root.querySelector('.notice');
    assert.equal(n.dataset.kind, 'compacted');
    assert.equal(n.getAttribute('role'), 'status');
    assert.equal(n.querySelector('.notice-text').textContent,
      "The 24 oldest messages were summarised to fit the model's context window.");
    const details = n.querySelector('details');
    assert.ok(details, 'a <details>');
    assert.ok(!details.open, 'folded');
    assert.equal(details.querySelector('summary').textContent, 'Summary');
    const body = details.querySelector('.notice-summary');
    assert.equal(body.querySelector('strong').textContent, 'snowman');
    assert.ok(body.textContent.includes(EVIL), 'the <img> is shown as text');
    assert.ok(body.textContent.includes('<script>alert(1)</script>'));
    const allowed = new Set(['details', 'summary', 'div', 'span', 'p', 'strong', 'em', 'code', 'br']);
    for (const e of n.descendants()) assert.ok(allowed.has(e.localName), 'unexpected <' + e.localName + '>');
    assert.equal(all(root, 'img').length + all(root, 'script').length + all(root, 'a').length, 0);
    assert.equal(all(root, '.msg-assistant').at(-1).textContent, 'Still here.', 'the run goes on');
  });

  test('context.compacted without a summary: the messages were dropped, and why', () => {
    const { view, root } = makeView();
    view.apply({ seq: 1, type: 'run.started', data: { text: 'x' } });
    view.apply({ seq: 2, type: 'context.compacted', data: { summary: null, messages: 7, covers: 8, tokens_before: 9, budget: 5, error: `HTTP 500 ${EVIL}` } });
    view.apply({ seq: 3, type: 'context.compacted', data: { summary: null, messages: 1, covers: 9 } });
    assert.deepEqual(notices(root), [
      ['dropped', `The 7 oldest messages were dropped to fit the model's context window: HTTP 500 ${EVIL}`],
      ['dropped', "The oldest message was dropped to fit the model's context window."],
    ]);
    assert.equal(all(root, 'details').length, 0);
    assert.equal(all(root, 'img').length, 0);
  });

  test('run.error reasons: declined, stopped, or an error as before', () => {
    const { view, root, log } = makeView();
    const errs = [
      { reason: 'refusal', message: `I can't help with that. ${EVIL}` },
      { reason: 'safety', message: 'The answer was blocked (SAFETY).' },
      { reason: 'max_tokens', message: 'The answer was cut off at the output limit without answering.' },
      { reason: 'context', message: 'The conversation no longer fits the context window.' },
      { reason: 'malformed_function_call', message: 'The tool call could not be read twice.', status: 200 },
      { message: 'overloaded', status: 529 },
    ];
    let seq = 0;
    for (const e of errs) {
      view.apply({ seq: ++seq, type: 'run.started', data: { text: 'x' } });
      view.apply({ seq: ++seq, type: 'run.error', data: e });
    }
    assert.deepEqual(notices(root), [
      ['declined', `Declined: I can't help with that. ${EVIL}`],
      ['declined', 'Declined: The answer was blocked (SAFETY).'],
      ['error', 'Stopped: The answer was cut off at the output limit without answering.'],
      ['error', 'Stopped: The conversation no longer fits the context window.'],
      ['error', 'Error (HTTP 200): The tool call could not be read twice.'],
      ['error', 'Error (HTTP 529): overloaded'],
    ]);
    const ns = all(root, '.notice');
    assert.ok(ns.every((n) => n.getAttribute('role') === 'alert'));
    assert.deepEqual(ns.map((n) => n.dataset.reason),
      ['refusal', 'safety', 'max_tokens', 'context', 'malformed_function_call', undefined]);
    assert.ok(all(root, '.run').every((r) => r.dataset.state === 'error'));
    assert.equal(log.ended.length, errs.length);
    assert.equal(all(root, 'img').length, 0);
  });
});

// A stand-in for the browser's EventSource: records its URL and listeners.
class FakeEventSource {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSED = 2;
  static all = [];
  constructor(url) {
    this.url = url;
    this.readyState = FakeEventSource.CONNECTING;
    this.listeners = {};
    FakeEventSource.all.push(this);
  }
  addEventListener(t, fn) { (this.listeners[t] ||= []).push(fn); }
  close() { this.readyState = FakeEventSource.CLOSED; }
  emit(seq, type, data = {}) {
    const e = { type, data: JSON.stringify({ seq, type, ts: 0, data }), lastEventId: String(seq) };
    for (const fn of this.listeners[type] || []) fn(e);
  }
}

describe('EventStream: replay, reconnect, duplicates', () => {
  test('every event once, in order, across a drop and a reopen', () => {
    globalThis.EventSource = FakeEventSource;
    const got = [];
    const states = [];
    const s = new EventStream('a'.repeat(32), { onEvent: (ev) => got.push(ev.seq), onState: (st) => states.push(st) });
    s.open();
    const es1 = FakeEventSource.all.at(-1);
    assert.equal(es1.url, `/api/sessions/${'a'.repeat(32)}/events?after=0`);
    es1.readyState = 1;
    es1.onopen();
    es1.emit(1, 'run.started');
    es1.emit(2, 'text.delta', { text: 'a' });
    es1.emit(2, 'text.delta', { text: 'a' }); // a duplicate
    // The browser reconnects by itself and the server resends a little.
    es1.readyState = 0;
    es1.onerror();
    es1.emit(1, 'run.started');
    es1.emit(3, 'text.delta', { text: 'b' });
    // Then an HTTP error closes it for good; a new one resumes after 3.
    es1.readyState = 2;
    es1.onerror();
    s.kick();
    const es2 = FakeEventSource.all.at(-1);
    assert.notEqual(es2, es1);
    assert.equal(es2.url, `/api/sessions/${'a'.repeat(32)}/events?after=3`);
    es2.emit(3, 'text.delta', { text: 'b' });
    es2.emit(4, 'run.completed');
    es1.emit(5, 'run.started'); // the replaced source is no longer heard
    s.close();
    es2.emit(6, 'run.started'); // nor anything after close
    assert.deepEqual(got, [1, 2, 3, 4]);
    assert.deepEqual(states, ['connecting', 'open', 'reconnecting', 'down', 'connecting']);
  });

  test('an event that throws in the view does not stop the next', () => {
    globalThis.EventSource = FakeEventSource;
    const got = [];
    const err = console.error;
    console.error = () => {};
    const s = new EventStream('b'.repeat(32), {
      onEvent: (ev) => { if (ev.seq === 1) throw new Error('bad'); got.push(ev.seq); },
      onState: () => {},
    });
    s.open();
    const es = FakeEventSource.all.at(-1);
    es.emit(1, 'text.done');
    es.emit(2, 'text.done');
    console.error = err;
    s.close();
    assert.deepEqual(got, [2]);
  });
});

// Messages waiting in the daemon's queue (message.queued): greyed with a
// "queued" label until their run starts, drawn again by a replay after a
// reload, and gone when a cancel drops them (queue.cleared).
describe('ChatView: queued messages', () => {
  const queuedSession = [
    ['session.created', {}],
    ['run.started', { text: 'first', message_id: 1 }],
    ['message.queued', { id: 2, text: 'second' }],
    ['message.queued', { id: 3, text: 'third' }],
    ['message.queued', { id: 4, text: 'third' }],
  ].map(([type, data], i) => ({ seq: i + 1, type, ts: 0, data }));
  const waiting = (pending) => pending.querySelectorAll('.msg-user.pending');

  test('a queued message waits greyed, labelled, in order; a replay draws the same', () => {
    for (const reload of [false, true]) {
      const { view, root, pending } = makeView();
      if (reload) view.reset(); // as openSession does before the replay from seq 0
      for (const ev of queuedSession) view.apply(ev);
      const nodes = waiting(pending);
      assert.deepEqual(nodes.map((n) => n.querySelector('.bubble').textContent), ['second', 'third', 'third']);
      assert.deepEqual(nodes.map((n) => n.dataset.queueId), ['2', '3', '4']);
      assert.ok(nodes.every((n) => n.querySelector('.msg-meta').textContent === 'queued'));
      // Only the running message is in the log.
      assert.deepEqual(root.querySelectorAll('.msg-user').map((u) => u.textContent), ['first']);
    }
  });

  test('its run.started turns it into a normal message, by id even with the same text', () => {
    const { view, root, pending } = makeView();
    for (const ev of queuedSession) view.apply(ev);
    view.apply({ seq: 6, type: 'run.completed', data: {} });
    view.apply({ seq: 7, type: 'run.started', data: { text: 'third', message_id: 4 } });
    assert.deepEqual(waiting(pending).map((n) => n.dataset.queueId), ['2', '3']);
    const users = root.querySelectorAll('.msg-user');
    assert.deepEqual(users.map((u) => u.textContent), ['first', 'third']);
    assert.ok(!users[1].classList.contains('pending'));
  });

  test("the page's own message in flight gets its id, and is not drawn twice", () => {
    const { view, pending } = makeView();
    const mine = view.addPending('second');
    assert.equal(mine.dataset.queueId, undefined);
    view.apply(queuedSession[2]);
    assert.equal(waiting(pending).length, 1);
    assert.equal(mine.dataset.queueId, '2');
  });

  test('queue.cleared removes the dropped messages and says so', () => {
    const { view, root, pending } = makeView();
    for (const ev of queuedSession) view.apply(ev);
    view.apply({ seq: 6, type: 'queue.cleared', data: { ids: [2, 3, 4], reason: 'cancelled' } });
    assert.equal(waiting(pending).length, 0);
    const notice = root.querySelector('.notice[data-kind="dropped"]');
    assert.equal(notice.textContent, '3 waiting messages dropped: the run was stopped.');
  });
});
