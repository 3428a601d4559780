// What the MCP client tests share (mcp.test.mjs over stdio,
// mcp-http.test.mjs over HTTP): the checks every client and era must pass,
// whatever the transport.
import assert from 'node:assert/strict';

export const counts = { n: 0, failed: 0 };

export async function check(name, fn) {
  counts.n++;
  try {
    await fn();
    console.log(`ok ${counts.n} - ${name}`);
  } catch (e) {
    counts.failed++;
    console.log(`not ok ${counts.n} - ${name}`);
    for (const line of String(e && e.stack ? e.stack : e).split('\n')) console.log('#   ' + line);
  }
}


/** The width and height of a PNG, from its IHDR. */
export function pngSize(b64) {
  const b = Buffer.from(b64, 'base64');
  assert.equal(b.subarray(0, 8).toString('hex'), '89504e470d0a1a0a', 'a PNG signature');
  return [b.readUInt32BE(16), b.readUInt32BE(20)];
}

export const BALL = {
  id: 'ball', type: 'sphere',
  properties: { center: [0, 0, -3], radius: 1, material: { type: 'lambertian', albedo: [0.2, 0.3, 0.8] } },
};

/** The checks every client and era must pass: list, build, render, fail. */
export async function common(client, label, ballId) {
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
  // How long a call may take, in _meta: a render may run long, a scene
  // edit never blocks; a tool that is neither carries none.
  assert.deepEqual(byName.render_scene._meta, { 'dev.atelier/longRunning': true });
  assert.deepEqual(byName.create_shape._meta, { 'dev.atelier/fast': true });
  assert.equal(byName.query_rays._meta, undefined);
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

/** A render of a second or two: long enough for render.progress events
 *  (every 250 ms) to become notifications/progress. */
export const SLOW_RENDER = { width: 400, height: 300, samples: 512, noise_threshold: 0 };

export function progressOk(seen) {
  assert.ok(seen.length >= 1, 'no progress notification');
  for (let i = 0; i < seen.length; i++) {
    assert.equal(seen[i].total, 100);
    assert.ok(seen[i].progress > 0 && seen[i].progress <= 100, JSON.stringify(seen[i]));
    if (i > 0) assert.ok(seen[i].progress > seen[i - 1].progress, 'progress must increase: ' + JSON.stringify(seen));
    assert.match(seen[i].message, /^render_scene: /);
  }
}

