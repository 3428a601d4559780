// atelierctl mcp driven by the official MCP SDK clients (from npm, pinned in
// package.json): the v1 line (@modelcontextprotocol/sdk, legacy era only,
// initialize) and the v2 line (@modelcontextprotocol/client, pinned to the
// modern 2026-07-28 era, and in 'auto' mode, which probes server/discover).
// The clients are never ours: what they accept is what Claude Desktop,
// Claude Code, Cursor and the Inspector run on.
//
// Run by tests/integration/test_mcp.py, which starts the real atelierd
// and passes ATL_MCP_CTL (atelierctl), ATL_MCP_SOCKET (api.sock) and
// ATL_MCP_SESSION (an existing session). Prints "ok N - ..." lines; the
// Python side then checks the session's events and document.
import assert from 'node:assert/strict';

import { BALL, check, common, counts, progressOk, SLOW_RENDER } from './lib.mjs';

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';

const CTL = process.env.ATL_MCP_CTL;
const SOCKET = process.env.ATL_MCP_SOCKET;
const SESSION = process.env.ATL_MCP_SESSION;

function server(...args) {
  return { command: CTL, args: ['--socket', SOCKET, 'mcp', ...args], stderr: 'pipe' };
}

await check('the v1 SDK (legacy, initialize): lists the tools, builds, renders a PNG, and says what failed', async () => {
  const client = new ClientV1({ name: 'atelier-test-v1', version: '1.0.0' });
  await client.connect(new StdioV1(server('--session', SESSION)));
  assert.equal(client.getServerVersion().name, 'atelier');
  await common(client, 'v1', 'ball_v1');
  await client.close();
});

await check('the v2 client pinned to 2026-07-28 (modern, server/discover): the same', async () => {
  const client = new ClientV2({ name: 'atelier-test-v2', version: '2.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StdioV2(server('--session', SESSION)));
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  await common(client, 'v2', 'ball_v2');
  await client.close();
});

await check('progress: with a progressToken a render reports how it goes (v1 and v2 clients), increasing, before its answer', async () => {
  const a = new ClientV1({ name: 'progress-v1', version: '1' });
  await a.connect(new StdioV1(server('--session', SESSION)));
  const seenA = [];
  const ra = await a.callTool({ name: 'render_scene', arguments: SLOW_RENDER }, undefined,
    { onprogress: (p) => seenA.push(p) });
  assert.ok(!ra.isError, JSON.stringify(ra).slice(0, 300));
  progressOk(seenA);
  await a.close();
  const b = new ClientV2({ name: 'progress-v2', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await b.connect(new StdioV2(server('--session', SESSION)));
  const seenB = [];
  const rb = await b.callTool({ name: 'render_scene', arguments: SLOW_RENDER }, { onprogress: (p) => seenB.push(p) });
  assert.ok(!rb.isError, JSON.stringify(rb).slice(0, 300));
  progressOk(seenB);
  await b.close();
});

await check('the v2 client in auto mode settles on the modern era', async () => {
  const client = new ClientV2({ name: 'atelier-test-auto', version: '2.0.0' },
    { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StdioV2(server('--session', SESSION)));
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  const r = await client.callTool({ name: 'get_scene_state', arguments: {} });
  assert.ok(!r.isError, JSON.stringify(r));
  await client.close();
});

await check('two clients on one session see each other\'s changes', async () => {
  const a = new ClientV1({ name: 'client-a', version: '1' });
  const b = new ClientV2({ name: 'client-b', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await a.connect(new StdioV1(server('--session', SESSION)));
  await b.connect(new StdioV2(server('--session', SESSION)));
  await a.callTool({ name: 'create_shape', arguments: { ...BALL, id: 'from_a' } });
  const seen = await b.callTool({ name: 'get_scene_state', arguments: {} });
  assert.match(seen.content[0].text, /from_a/);
  await a.close();
  await b.close();
});

await check('--new: a session of its own, made at the first call', async () => {
  const client = new ClientV1({ name: 'atelier-test-new', version: '1' });
  await client.connect(new StdioV1(server('--new')));
  const r = await client.callTool({ name: 'get_scene_state', arguments: {} });
  assert.ok(!r.isError);
  assert.doesNotMatch(r.content[0].text, /ball_v1/, 'not the shared session');
  await client.close();
});

console.log(`# ${counts.n - counts.failed} passed, ${counts.failed} failed`);
process.exit(counts.failed ? 1 : 0);
