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

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';

const CTL = process.env.ATL_MCP_CTL;
const SOCKET = process.env.ATL_MCP_SOCKET;
const SESSION = process.env.ATL_MCP_SESSION;

let n = 0;
let failed = 0;

async function check(name, fn) {
  n++;
  try {
    await fn();
    console.log(`ok ${n} - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok ${n} - ${name}`);
    for (const line of String(e && e.stack ? e.stack : e).split('\n')) console.log('#   ' + line);
  }
}

function server(...args) {
  return { command: CTL, args: ['--socket', SOCKET, 'mcp', ...args], stderr: 'pipe' };
}

/** The width and height of a PNG, from its IHDR. */
function pngSize(b64) {
  const b = Buffer.from(b64, 'base64');
  assert.equal(b.subarray(0, 8).toString('hex'), '89504e470d0a1a0a', 'a PNG signature');
  return [b.readUInt32BE(16), b.readUInt32BE(20)];
}

const BALL = {
  id: 'ball', type: 'sphere',
  properties: { center: [0, 0, -3], radius: 1, material: { type: 'lambertian', albedo: [0.2, 0.3, 0.8] } },
};

/** The checks every client and era must pass: list, build, render, fail. */
async function common(client, label, ballId) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  assert.ok(names.includes('create_shape') && names.includes('render_scene') && names.includes('query_rays'),
    'the plugins\' tools: ' + names.join(' '));
  assert.ok(!names.includes('add_human_stroke'), 'a tool for people only is not offered');
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', t.name + ': a root object');
    for (const k of ['oneOf', 'anyOf', 'allOf', '$schema']) assert.ok(!(k in t.inputSchema), t.name + ': no root ' + k);
    assert.equal(typeof t.annotations.readOnlyHint, 'boolean', t.name);
    assert.equal(t.annotations.openWorldHint, t.name === 'generate_image', t.name + ': openWorldHint');
  }
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.equal(byName.render_scene.annotations.readOnlyHint, true);
  assert.equal(byName.remove_shape.annotations.destructiveHint, true);
  assert.equal(byName.create_shape.annotations.destructiveHint, false);
  assert.equal(byName.update_shape.annotations.idempotentHint, true);
  assert.deepEqual([...names].sort(), names, label + ': a deterministic order');

  const made = await client.callTool({ name: 'create_shape', arguments: { ...BALL, id: ballId } });
  assert.ok(!made.isError, JSON.stringify(made));
  assert.equal(made.structuredContent.id, ballId);
  assert.equal(JSON.parse(made.content[0].text).id, ballId, 'the JSON as text too');

  const pic = await client.callTool({ name: 'render_scene', arguments: { width: 80, height: 60, quality: 'draft' } });
  assert.ok(!pic.isError, JSON.stringify(pic).slice(0, 500));
  const img = pic.content.find((b) => b.type === 'image');
  assert.ok(img, 'an image block');
  assert.equal(img.mimeType, 'image/png');
  assert.deepEqual(pngSize(img.data), [80, 60]);
  assert.ok(pic.content.some((b) => b.type === 'text' && /^Image [0-9a-f]{64} \(image\/png\)/.test(b.text)),
    'a line names the image');

  // A call the host refuses (its arguments break the schema): a tool
  // execution error with the host's own message, which a model can act on.
  const bad = await client.callTool({ name: 'create_shape', arguments: { id: 'x', type: 'sphere', properties: { radius: 'big' } } });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /radius/);
  // A call the tool itself fails.
  const gone = await client.callTool({ name: 'remove_shape', arguments: { id: 'no-such-shape' } });
  assert.equal(gone.isError, true);
  assert.match(gone.content[0].text, /no-such-shape/);
  // An unknown tool: a JSON-RPC error, which the SDK throws.
  await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /Unknown tool: no_such_tool/);
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

/** A render of a second or two: long enough for render.progress events
 *  (every 250 ms) to become notifications/progress. */
const SLOW_RENDER = { width: 400, height: 300, samples: 512, noise_threshold: 0 };

function progressOk(seen) {
  assert.ok(seen.length >= 1, 'no progress notification');
  for (let i = 0; i < seen.length; i++) {
    assert.equal(seen[i].total, 100);
    assert.ok(seen[i].progress > 0 && seen[i].progress <= 100, JSON.stringify(seen[i]));
    if (i > 0) assert.ok(seen[i].progress > seen[i - 1].progress, 'progress must increase: ' + JSON.stringify(seen));
    assert.match(seen[i].message, /^render_scene: /);
  }
}

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

console.log(`# ${n - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
