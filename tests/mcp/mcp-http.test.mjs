// Atelier's MCP front over Streamable HTTP, through the real nginx, the
// FastCGI bridge and atelierd, driven by the official SDK clients (pinned
// in package.json): the v1 line (@modelcontextprotocol/sdk, legacy era,
// initialize, Mcp-Session-Id) on /mcp, and the v2 line
// (@modelcontextprotocol/client, pinned to 2026-07-28, and in auto mode)
// on a session's own endpoint, /api/sessions/{id}/mcp. The token goes as
// a bearer header, as a client configured for Atelier sends it.
//
// Run by tests/integration/test_mcp_http.py, which starts the stack and
// passes ATL_MCP_BASE (http://127.0.0.1:PORT), ATL_MCP_TOKEN and
// ATL_MCP_SESSION (an existing session). Prints "ok N - ..." lines.
import assert from 'node:assert/strict';

import { BALL, check, common, counts, progressOk, SLOW_RENDER } from './lib.mjs';

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';

const BASE = process.env.ATL_MCP_BASE;
const TOKEN = process.env.ATL_MCP_TOKEN;
const SESSION = process.env.ATL_MCP_SESSION;
const AUTH = { Authorization: `Bearer ${TOKEN}` };
const MODERN = { versionNegotiation: { mode: { pin: '2026-07-28' } } };

function v1(url = `${BASE}/mcp`) {
  return new HttpV1(new URL(url), { requestInit: { headers: AUTH } });
}
function v2(url = `${BASE}/api/sessions/${SESSION}/mcp`) {
  return new HttpV2(new URL(url), { requestInit: { headers: AUTH } });
}

/** Where a session's events stand now (the page's session list). */
async function lastSeq(sid) {
  const res = await fetch(`${BASE}/api/sessions`, { headers: AUTH });
  const row = (await res.json()).find((s) => s.id === sid);
  assert.ok(row, 'the session is listed');
  return row.last_seq;
}

/** Reads the page's event stream of a session (as the page does, through
 *  nginx) from after its event `after` until pred(event) holds; the event,
 *  or a failure after ms. */
async function pageEvent(sid, after, pred, ms = 30000) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), ms);
  try {
    const res = await fetch(`${BASE}/api/sessions/${sid}/events?after=${after}`, { headers: AUTH, signal: ctl.signal });
    assert.equal(res.status, 200);
    const dec = new TextDecoder();
    let buf = '';
    for await (const chunk of res.body) {
      buf += dec.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const type = /^event: (.*)$/m.exec(block)?.[1];
        const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
        if (!type || !data) continue;
        const ev = JSON.parse(data); // {seq, type, ts, data}
        if (pred(ev)) return ev;
      }
    }
    throw new Error('the stream ended');
  } catch (e) {
    if (ctl.signal.aborted) throw new Error(`no such event on the page's stream within ${ms} ms`);
    throw e;
  } finally {
    clearTimeout(timer);
    ctl.abort();
  }
}

/** The session a tools/call result names in its _meta. */
function sessionOf(result) {
  const sid = result._meta?.['dev.atelier/session'];
  assert.match(sid ?? '', /^[0-9a-f]{32}$/, 'the result names its session: ' + JSON.stringify(result._meta));
  return sid;
}

let legacySession = null;

await check('the v1 SDK on /mcp (legacy, initialize): a session of its own; tools, a render as PNG, errors', async () => {
  const client = new ClientV1({ name: 'http-v1', version: '1.0.0' });
  const t = v1();
  await client.connect(t);
  assert.equal(client.getServerVersion().name, 'atelier');
  assert.match(t.sessionId ?? '', /^[0-9a-f]{80,}$/, 'an Mcp-Session-Id: ' + t.sessionId);
  await common(client, 'v1 http', 'ball_http_v1');
  const r = await client.callTool({ name: 'get_scene_state', arguments: {} });
  legacySession = sessionOf(r);
  assert.notEqual(legacySession, SESSION, 'a new Atelier session, not the shared one');
  assert.ok(t.sessionId.startsWith(legacySession), 'the MCP session is that session\'s');
  // GET (a server stream) and DELETE are 405 here: the SDK takes both.
  await client.close();
});

await check('the v2 client pinned to 2026-07-28 on /api/sessions/{id}/mcp: the same, in that session', async () => {
  const client = new ClientV2({ name: 'http-v2', version: '2.0.0' }, MODERN);
  await client.connect(v2());
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  await common(client, 'v2 http', 'ball_http_v2');
  const r = await client.callTool({ name: 'get_scene_state', arguments: {} });
  assert.equal(sessionOf(r), SESSION);
  await client.close();
});

await check('the v2 client in auto mode settles on the modern era over HTTP', async () => {
  const client = new ClientV2({ name: 'http-auto', version: '2.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(v2());
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  const r = await client.callTool({ name: 'get_scene_state', arguments: {} });
  assert.ok(!r.isError, JSON.stringify(r));
  await client.close();
});

await check('the v1 SDK on a session\'s own endpoint works in that session', async () => {
  const client = new ClientV1({ name: 'http-v1-bound', version: '1' });
  await client.connect(v1(`${BASE}/api/sessions/${SESSION}/mcp`));
  const r = await client.callTool({ name: 'get_scene_state', arguments: {} });
  assert.equal(sessionOf(r), SESSION);
  assert.match(r.content[0].text, /ball_http_v2/, 'sees what the v2 client made');
  await client.close();
});

await check('modern /mcp: a call names its session in _meta, or "new"; one that names none is told how', async () => {
  const client = new ClientV2({ name: 'http-v2-meta', version: '1' }, MODERN);
  await client.connect(v2(`${BASE}/mcp`));
  const none = await client.callTool({ name: 'get_scene_state', arguments: {} });
  assert.equal(none.isError, true);
  assert.match(none.content[0].text, /\/api\/sessions\/<session id>\/mcp/);
  const made = await client.callTool({ name: 'create_shape', arguments: { ...BALL, id: 'meta_ball' },
    _meta: { 'dev.atelier/session': 'new' } });
  assert.ok(!made.isError, JSON.stringify(made));
  const sid = sessionOf(made);
  assert.ok(made.content.some((b) => b.type === 'text' && b.text.includes(`/#s=${sid}`)), 'the page\'s link');
  const again = await client.callTool({ name: 'get_scene_state', arguments: {}, _meta: { 'dev.atelier/session': sid } });
  assert.match(again.content[0].text, /meta_ball/);
  await client.close();
});

await check('progress over HTTP: the answer becomes an event stream of notifications/progress, then the result (v1 and v2)', async () => {
  const a = new ClientV1({ name: 'http-progress-v1', version: '1' });
  await a.connect(v1(`${BASE}/api/sessions/${SESSION}/mcp`));
  const seenA = [];
  const ra = await a.callTool({ name: 'render_scene', arguments: SLOW_RENDER }, undefined,
    { onprogress: (p) => seenA.push(p) });
  assert.ok(!ra.isError, JSON.stringify(ra).slice(0, 300));
  progressOk(seenA);
  await a.close();
  const b = new ClientV2({ name: 'http-progress-v2', version: '1' }, MODERN);
  await b.connect(v2());
  const seenB = [];
  const rb = await b.callTool({ name: 'render_scene', arguments: SLOW_RENDER }, { onprogress: (p) => seenB.push(p) });
  assert.ok(!rb.isError, JSON.stringify(rb).slice(0, 300));
  progressOk(seenB);
  await b.close();
});

/** A render of a minute: only a cancel ends it within the test. */
const LONG_RENDER = { width: 800, height: 600, samples: 4096, noise_threshold: 0 };

async function cancelled(client, label, v1Signature) {
  const finished = pageEvent(SESSION, await lastSeq(SESSION), (ev) => ev.type === 'tool.finished' &&
    ev.data.operation?.tool === 'render_scene' && ev.data.success === false, 60000);
  finished.catch(() => {}); // awaited below; a call that failed first must not leave it unhandled
  const ctl = new AbortController();
  let progressed;
  const started = new Promise((resolve) => { progressed = resolve; });
  const opts = { signal: ctl.signal, onprogress: () => progressed(), timeout: 120000 };
  // v1's callTool takes a result schema before its options; v2's does not.
  const params = { name: 'render_scene', arguments: LONG_RENDER };
  const call = v1Signature ? client.callTool(params, undefined, opts) : client.callTool(params, opts);
  call.catch(() => {});
  await Promise.race([started, call]);
  const t0 = Date.now();
  ctl.abort('the user pressed Esc');
  await assert.rejects(call);
  const ev = await finished;
  assert.match(ev.data.error, /cancel/, label + ': ' + JSON.stringify(ev.data));
  assert.ok(Date.now() - t0 < 20000, label + ': the render stopped soon after the cancel');
}

await check('cancel: a v2 (modern) client that hangs up and a v1 (legacy) one that sends notifications/cancelled both stop the render in atelierd', async () => {
  const b = new ClientV2({ name: 'http-cancel-v2', version: '1' }, MODERN);
  await b.connect(v2());
  await cancelled(b, 'v2', false);
  await b.close();
  const a = new ClientV1({ name: 'http-cancel-v1', version: '1' });
  await a.connect(v1(`${BASE}/api/sessions/${SESSION}/mcp`));
  await cancelled(a, 'v1', true);
  await a.close();
});

await check('two clients on one session over HTTP, and the page\'s stream shows their calls with who called', async () => {
  const a = new ClientV1({ name: 'http-a', version: '1' });
  const b = new ClientV2({ name: 'http-b', version: '1' }, MODERN);
  await a.connect(v1(`${BASE}/api/sessions/${SESSION}/mcp`));
  await b.connect(v2());
  const from = await lastSeq(SESSION);
  const seen = pageEvent(SESSION, from, (ev) => ev.type === 'tool.finished' &&
    ev.data.via === 'MCP over HTTP (http-a)' && ev.data.operation?.tool === 'create_shape');
  seen.catch(() => {});
  await a.callTool({ name: 'create_shape', arguments: { ...BALL, id: 'from_http_a' } });
  await seen;
  const got = await b.callTool({ name: 'get_scene_state', arguments: {} });
  assert.match(got.content[0].text, /from_http_a/);
  await pageEvent(SESSION, from, (ev) => ev.type === 'tool.finished' && ev.data.via === 'MCP over HTTP (http-b)');
  await a.close();
  await b.close();
});

console.log(`# legacy session ${legacySession}`);
console.log(`# ${counts.n - counts.failed} passed, ${counts.failed} failed`);
process.exit(counts.failed ? 1 : 0);
