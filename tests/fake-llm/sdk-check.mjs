// sdk-check.mjs: proves fake_llm.py against the official provider SDKs.
//
// It starts the fake server (python3 fake_llm.py --port 0), points each SDK
// at it with a dummy key, and for OpenAI (`openai`), Anthropic
// (`@anthropic-ai/sdk`) and Gemini (`@google/genai`) checks: a plain turn, a
// streamed turn, a streamed turn with two parallel tool calls, the follow-up
// that returns the tool results, the 400 when they are missing, a 429 that
// the SDK retries, a request without a key, and a truncated stream. What
// the SDKs parse without complaint is what the real services send; what
// they reject, the fake must reject too.
//
// Output: "ok N - ..." / "not ok N - ..." lines ("#" lines of diagnostics
// after a failure) and a final "P passed, F failed"; exit 1 on a failure.
// Run: npm ci && node sdk-check.mjs   (tests/integration/test_fake_llm_sdk.sh)

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
// The last 0.x SDK: API version 2023-06-01 and the key in x-api-key, the way
// most hand-written clients (atelierd's included) call the Messages API.
import Anthropic0 from 'anthropic-sdk-0';
import { GoogleGenAI } from '@google/genai';

const here = dirname(fileURLToPath(import.meta.url));
const sdkVersion = (name) =>
  JSON.parse(readFileSync(join(here, 'node_modules', ...name.split('/'), 'package.json')))
    .version;

let passed = 0;
let failed = 0;
let count = 0;
const serverLog = [];

const check = (name, fn) => checkNamed(name, fn);
async function checkNamed(name, fn) {
  count += 1;
  try {
    await fn();
    passed += 1;
    console.log(`ok ${count} - ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`not ok ${count} - ${name}`);
    const text = (e && e.stack) || String(e);
    for (const line of text.split('\n').slice(0, 12)) console.log(`# ${line}`);
    if (e && e.error) console.log(`# body: ${JSON.stringify(e.error)}`);
  }
}

// ---- the fake server --------------------------------------------------------

function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', [join(here, 'fake_llm.py'), '--port', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const timer = setTimeout(() => reject(new Error('fake_llm.py printed no port in 10 s')), 10000);
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`fake_llm.py exited (${code}) before listening`));
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d) => {
      serverLog.push(...d.split('\n').filter(Boolean));
      if (serverLog.length > 400) serverLog.splice(0, serverLog.length - 400);
    });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^fake-llm listening on (http:\/\/[^\s]+:(\d+))\n/);
      if (m) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve({ child, base: m[1] });
      }
    });
  });
}

// Nothing here should take long: a watchdog ends a stuck run as a failure.
setTimeout(() => {
  console.log(`not ok ${count + 1} - sdk-check finished within 240 s`);
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
}, 240000).unref();

const { child: server, base } = await startServer();
process.on('exit', () => server.kill('SIGTERM'));

async function control(path, body) {
  const res = await fetch(base + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}
const script = async (turns) => control('/_fake/script', { turns });
const reset = async () => control('/_fake/reset', {});
const requests = async () => (await control('/_fake/requests')).requests;
const queued = async () => (await control('/_fake/script')).turns.length;

// Expects fn to throw; returns the error.
async function rejects(fn) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected the SDK to throw, it did not');
}

// The same scripted turns serve all three SDKs.
const TEXT = 'Hello from fake-llm: a plain, unstreamed answer.';
const STREAM_TEXT = 'A streamed answer, cut into several deltas by the fake server.';
const CALLS = [
  { name: 'create_shape', arguments: { id: 'ball', type: 'sphere', properties: { center: [0, 1, 0], radius: 1.5 } } },
  { name: 'set_light', arguments: { id: 'sun', intensity: 0.75, color: '#ffeedd', tags: ['key', 'warm'] } },
];
const TOOLS_TURN = { tool_calls: CALLS, chunks: 4 };
const RETRY_TURNS = [
  { status: 429, retry_after: 1, error_message: 'fake-llm: rate limit reached, retry later' },
  { text: 'answered after the retry' },
];
const TRUNCATED = { text: 'this stream is cut before its end by the fake server', chunks: 8, truncate: true };

// Checks that two requests were logged, the second at least ~1 s after the
// first (Retry-After: 1 was honoured), and returns them.
async function checkRetried(api) {
  const log = (await requests()).filter((r) => r.api === api);
  assert.equal(log.length, 2, `requests logged: ${log.length}`);
  assert.equal(log[0].status, 429);
  assert.equal(log[1].status, 200);
  const gap = log[1].ts - log[0].ts;
  assert.ok(gap >= 0.9, `retried after ${gap.toFixed(2)} s, Retry-After was 1 s`);
  return log;
}

console.log(`# openai ${sdkVersion('openai')}, @anthropic-ai/sdk ${sdkVersion('@anthropic-ai/sdk')} and ` +
  `${sdkVersion('anthropic-sdk-0')}, ` +
  `@google/genai ${sdkVersion('@google/genai')}, node ${process.version}, fake at ${base}`);

// ---- OpenAI -----------------------------------------------------------------

{
  const openai = new OpenAI({ apiKey: 'sk-fake-key', baseURL: `${base}/v1`, maxRetries: 1, timeout: 20000 });
  const model = 'gpt-fake-1';
  const user = { role: 'user', content: 'Build me a scene.' };
  let toolCalls = null;

  await check('openai: non-streamed text turn', async () => {
    await reset();
    await script([{ text: TEXT }]);
    const r = await openai.chat.completions.create({ model, messages: [user] });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(r.choices[0].message.content, TEXT);
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    const [req] = await requests();
    assert.equal(req.api, 'openai');
    assert.equal(req.headers.authorization, '(redacted)');
    assert.equal(req.body.model, model);
    assert.equal(req.stream, false);
  });

  await check('openai: streamed text turn, deltas concatenate to the script', async () => {
    await script([{ text: STREAM_TEXT, chunks: 5 }]);
    const stream = await openai.chat.completions.create({
      model, messages: [user], stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let deltas = 0;
    let finish = null;
    let usage = null;
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'chat.completion.chunk');
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (!choice) continue;
      if (choice.delta.content) { text += choice.delta.content; deltas += 1; }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    assert.equal(text, STREAM_TEXT);
    assert.equal(deltas, 5);
    assert.equal(finish, 'stop');
    assert.ok(usage && usage.completion_tokens > 0, 'a usage chunk arrived');
  });

  await check('openai: streamed parallel tool calls, fragments reassembled by index', async () => {
    await script([TOOLS_TURN]);
    const stream = await openai.chat.completions.create({
      model, messages: [user], stream: true,
      tools: CALLS.map((c) => ({ type: 'function', function: { name: c.name, parameters: { type: 'object' } } })),
    });
    const byIndex = [];
    let fragments = 0;
    let finish = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      for (const tc of choice.delta.tool_calls || []) {
        fragments += 1;
        const slot = byIndex[tc.index] || (byIndex[tc.index] = { id: '', name: '', arguments: '' });
        if (tc.id) slot.id = tc.id;
        if (tc.function?.name) slot.name += tc.function.name;
        if (tc.function?.arguments) slot.arguments += tc.function.arguments;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    assert.equal(finish, 'tool_calls');
    assert.ok(fragments >= 2 * (1 + 2), `tool call fragments: ${fragments}`);
    assert.deepEqual(byIndex.map((c) => c.name), CALLS.map((c) => c.name));
    assert.deepEqual(byIndex.map((c) => JSON.parse(c.arguments)), CALLS.map((c) => c.arguments));
    assert.ok(byIndex.every((c) => /^call_/.test(c.id)), 'ids look like call_...');
    assert.notEqual(byIndex[0].id, byIndex[1].id);
    toolCalls = byIndex;
  });

  await check("openai: the SDK's stream helper assembles the same tool calls", async () => {
    await script([TOOLS_TURN]);
    const runner = openai.chat.completions.stream({ model, messages: [user] });
    const final = await runner.finalChatCompletion();
    const calls = final.choices[0].message.tool_calls;
    assert.deepEqual(calls.map((c) => c.function.name), CALLS.map((c) => c.name));
    assert.deepEqual(calls.map((c) => JSON.parse(c.function.arguments)), CALLS.map((c) => c.arguments));
  });

  const assistant = () => ({
    role: 'assistant', content: null,
    tool_calls: toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
  });

  await check('openai: follow-up with the tool results succeeds', async () => {
    await reset();
    await script([{ text: 'Both tools ran.' }]);
    const r = await openai.chat.completions.create({
      model,
      messages: [user, assistant(), ...toolCalls.map((c) => ({ role: 'tool', tool_call_id: c.id, content: '{"success":true}' }))],
    });
    assert.equal(r.choices[0].message.content, 'Both tools ran.');
    const [req] = await requests();
    assert.deepEqual(req.body.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id), toolCalls.map((c) => c.id));
  });

  await check('openai: tool results missing -> BadRequestError 400, no turn taken', async () => {
    await script([{ text: 'must not be used' }]);
    const e = await rejects(() => openai.chat.completions.create({
      model, messages: [user, assistant(), { role: 'tool', tool_call_id: toolCalls[0].id, content: 'ok' }, { role: 'user', content: 'and?' }],
    }));
    assert.ok(e instanceof OpenAI.BadRequestError, `got ${e.constructor.name}: ${e.message}`);
    assert.equal(e.status, 400);
    assert.match(e.message, /must be followed by tool messages responding to each 'tool_call_id'/);
    assert.ok(e.message.includes(toolCalls[1].id) && !e.message.includes(toolCalls[0].id + ','));
    assert.equal(await queued(), 1);
  });

  await check('openai: 429 with Retry-After is retried by the SDK (maxRetries 1)', async () => {
    await reset();
    await script(RETRY_TURNS);
    const r = await openai.chat.completions.create({ model, messages: [user] });
    assert.equal(r.choices[0].message.content, 'answered after the retry');
    const log = await checkRetried('openai');
    assert.equal(log[1].headers['x-stainless-retry-count'], '1');
  });

  await check('openai: no Authorization header -> AuthenticationError 401', async () => {
    const noKey = new OpenAI({ apiKey: 'unused', baseURL: `${base}/v1`, maxRetries: 0, defaultHeaders: { Authorization: null } });
    const e = await rejects(() => noKey.chat.completions.create({ model, messages: [user] }));
    assert.ok(e instanceof OpenAI.AuthenticationError, `got ${e.constructor.name}: ${e.message}`);
    assert.equal(e.status, 401);
    assert.equal(e.code, 'invalid_api_key');
  });

  await check('openai: models.list answers', async () => {
    const list = [];
    for await (const m of openai.models.list()) list.push(m.id);
    assert.ok(list.length > 0);
  });

  await check('openai: a truncated stream makes the SDK throw', async () => {
    await script([TRUNCATED]);
    const e = await rejects(async () => {
      const stream = await openai.chat.completions.create({ model, messages: [user], stream: true });
      for await (const chunk of stream) void chunk;
    });
    assert.ok(!(e instanceof assert.AssertionError), e.message);
  });
}

// ---- Anthropic --------------------------------------------------------------

async function anthropicSuite(Anthropic, label) {
  const check = (name, fn) => checkNamed(name.replace(/^anthropic:/, `${label}:`), fn);
  const anthropic = new Anthropic({ apiKey: 'sk-ant-fake-key', baseURL: base, maxRetries: 1, timeout: 20000 });
  const model = 'claude-fake-1';
  const user = { role: 'user', content: 'Build me a scene.' };
  const tools = CALLS.map((c) => ({ name: c.name, description: c.name, input_schema: { type: 'object' } }));
  let final = null;

  await check('anthropic: non-streamed text turn (with a thinking block)', async () => {
    await reset();
    await script([{ text: TEXT, thinking: 'The user wants a greeting.' }]);
    const r = await anthropic.messages.create({ model, max_tokens: 2048, messages: [user] });
    assert.equal(r.type, 'message');
    assert.equal(r.role, 'assistant');
    assert.equal(r.stop_reason, 'end_turn');
    assert.equal(r.stop_sequence, null);
    assert.equal(r.content[0].type, 'thinking');
    assert.equal(r.content[0].thinking, 'The user wants a greeting.');
    assert.ok(r.content[0].signature.length > 0);
    assert.equal(r.content[1].type, 'text');
    assert.equal(r.content[1].text, TEXT);
    assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
    const [req] = await requests();
    assert.equal(req.api, 'anthropic');
    // @anthropic-ai/sdk 1.x sends the key as a Bearer token and API version
    // 2026-10-21; 0.x sends x-api-key and 2023-06-01.
    if (req.headers['anthropic-version'] === '2023-06-01') {
      assert.equal(req.headers['x-api-key'], '(redacted)');
    } else {
      assert.equal(req.headers['anthropic-version'], '2026-10-21');
      assert.equal(req.headers.authorization, '(redacted)');
    }
  });

  await check('anthropic: streamed text turn, deltas concatenate to the script', async () => {
    await script([{ text: STREAM_TEXT, chunks: 5 }]);
    const stream = anthropic.messages.stream({ model, max_tokens: 1024, messages: [user] });
    let text = '';
    let deltas = 0;
    stream.on('text', (delta) => { text += delta; deltas += 1; });
    const msg = await stream.finalMessage();
    assert.equal(text, STREAM_TEXT);
    assert.equal(deltas, 5);
    assert.equal(msg.content[0].text, STREAM_TEXT);
    assert.equal(msg.stop_reason, 'end_turn');
    assert.ok(msg.usage.output_tokens > 1);
  });

  await check('anthropic: raw stream events arrive in the documented order', async () => {
    await script([{ text: 'ordered events', chunks: 2 }]);
    const stream = await anthropic.messages.create({ model, max_tokens: 1024, messages: [user], stream: true });
    const types = [];
    for await (const ev of stream) types.push(ev.type);
    assert.deepEqual(types, ['message_start', 'content_block_start', 'content_block_delta',
      'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
  });

  await check('anthropic: streamed parallel tool calls via the stream helper (thinking + signature)', async () => {
    await script([{ ...TOOLS_TURN, thinking: 'Two tools at once.' }]);
    const stream = anthropic.messages.stream({
      model, max_tokens: 2048, messages: [user], tools, thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    let jsonDeltas = 0;
    stream.on('inputJson', () => { jsonDeltas += 1; });
    final = await stream.finalMessage();
    assert.equal(final.stop_reason, 'tool_use');
    assert.equal(final.content[0].type, 'thinking');
    assert.equal(final.content[0].thinking, 'Two tools at once.');
    assert.ok(final.content[0].signature.length > 0, 'signature_delta accumulated');
    const uses = final.content.filter((b) => b.type === 'tool_use');
    assert.deepEqual(uses.map((b) => b.name), CALLS.map((c) => c.name));
    assert.deepEqual(uses.map((b) => b.input), CALLS.map((c) => c.arguments));
    assert.ok(uses.every((b) => /^toolu_/.test(b.id)));
    assert.ok(jsonDeltas >= 2 * 4, `input_json_delta events: ${jsonDeltas}`);
  });

  const results = () => final.content.filter((b) => b.type === 'tool_use')
    .map((b) => ({ type: 'tool_result', tool_use_id: b.id, content: '{"success":true}' }));

  await check('anthropic: follow-up with the tool results succeeds', async () => {
    await reset();
    await script([{ text: 'Both tools ran.' }]);
    const r = await anthropic.messages.create({
      model, max_tokens: 2048, tools, thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [user, { role: 'assistant', content: final.content }, { role: 'user', content: results() }],
    });
    assert.equal(r.content[0].text, 'Both tools ran.');
    const [req] = await requests();
    assert.equal(req.body.messages[1].content[0].type, 'thinking');
    assert.equal(req.body.messages[1].content[0].signature, final.content[0].signature);
  });

  await check('anthropic: interleaved and redacted thinking parsed in order, accepted back as is', async () => {
    await reset();
    await script([{
      anthropic_content: [{ thinking: 'First.' }, { text: 'Looking.' },
        { redacted_thinking: 'EmwKAhgBEgy3va3pzix' }, { thinking: 'Then.' }],
      tool_calls: CALLS.slice(0, 1),
    }]);
    const think = { type: 'enabled', budget_tokens: 1024 };
    const m = await anthropic.messages.stream({ model, max_tokens: 2048, messages: [user], tools, thinking: think })
      .finalMessage();
    assert.deepEqual(m.content.map((b) => b.type),
      ['thinking', 'text', 'redacted_thinking', 'thinking', 'tool_use']);
    assert.equal(m.content[2].data, 'EmwKAhgBEgy3va3pzix');
    assert.ok(m.content[0].signature && m.content[3].signature &&
      m.content[0].signature !== m.content[3].signature, 'a signature per block');
    const answer = [{ type: 'tool_result', tool_use_id: m.content[4].id, content: 'ok' }];
    await script([{ text: 'Seen.' }]);
    const r = await anthropic.messages.create({
      model, max_tokens: 2048, tools, thinking: think,
      messages: [user, { role: 'assistant', content: m.content }, { role: 'user', content: answer }],
    });
    assert.equal(r.content[0].text, 'Seen.');
    await script([{ text: 'must not be used' }]);
    const e = await rejects(() => anthropic.messages.create({
      model, max_tokens: 2048, tools, thinking: think,
      messages: [user, { role: 'assistant', content: m.content.filter((b) => b.type !== 'redacted_thinking') },
        { role: 'user', content: answer }],
    }));
    assert.ok(e instanceof Anthropic.BadRequestError, `got ${e.constructor.name}: ${e.message}`);
    assert.match(e.message, /unmodified and in their original order/);
    assert.equal(await queued(), 1);
  });

  await check('anthropic: tool results missing -> BadRequestError 400, no turn taken', async () => {
    await script([{ text: 'must not be used' }]);
    const e = await rejects(() => anthropic.messages.create({
      model, max_tokens: 1024, tools,
      messages: [user, { role: 'assistant', content: final.content.filter((b) => b.type !== 'thinking') },
        { role: 'user', content: [results()[0], { type: 'text', text: 'and?' }] }],
    }));
    assert.ok(e instanceof Anthropic.BadRequestError, `got ${e.constructor.name}: ${e.message}`);
    assert.equal(e.status, 400);
    assert.equal(e.error.type, 'error');
    assert.equal(e.error.error.type, 'invalid_request_error');
    assert.match(e.message, /tool_use` ids were found without `tool_result` blocks immediately after/);
    const second = final.content.filter((b) => b.type === 'tool_use')[1].id;
    assert.ok(e.message.includes(second));
    assert.equal(await queued(), 1);
  });

  await check('anthropic: 429 with retry-after is retried by the SDK (maxRetries 1)', async () => {
    await reset();
    await script(RETRY_TURNS);
    const r = await anthropic.messages.create({ model, max_tokens: 1024, messages: [user] });
    assert.equal(r.content[0].text, 'answered after the retry');
    const log = await checkRetried('anthropic');
    assert.equal(log[1].headers['x-stainless-retry-count'], '1');
  });

  await check('anthropic: no x-api-key -> AuthenticationError 401', async () => {
    const noKey = new Anthropic({
      apiKey: 'unused', baseURL: base, maxRetries: 0,
      defaultHeaders: { 'X-Api-Key': null, Authorization: null },
    });
    const e = await rejects(() => noKey.messages.create({ model, max_tokens: 16, messages: [user] }));
    assert.ok(e instanceof Anthropic.AuthenticationError, `got ${e.constructor.name}: ${e.message}`);
    assert.equal(e.status, 401);
    assert.equal(e.error.error.type, 'authentication_error');
  });

  await check('anthropic: no anthropic-version -> BadRequestError 400', async () => {
    const noVersion = new Anthropic({
      apiKey: 'sk-ant-fake-key', baseURL: base, maxRetries: 0, defaultHeaders: { 'anthropic-version': null },
    });
    const e = await rejects(() => noVersion.messages.create({ model, max_tokens: 16, messages: [user] }));
    assert.ok(e instanceof Anthropic.BadRequestError, `got ${e.constructor.name}: ${e.message}`);
    assert.match(e.message, /anthropic-version/);
  });

  await check('anthropic: max_tokens missing -> BadRequestError naming the field', async () => {
    const e = await rejects(() => anthropic.messages.create({ model, messages: [user] }));
    assert.ok(e instanceof Anthropic.BadRequestError, `got ${e.constructor.name}: ${e.message}`);
    assert.match(e.message, /max_tokens: Field required/);
  });

  await check('anthropic: a truncated stream makes the SDK throw', async () => {
    await script([TRUNCATED]);
    const e = await rejects(() => anthropic.messages.stream({ model, max_tokens: 1024, messages: [user] }).finalMessage());
    assert.ok(!(e instanceof assert.AssertionError), e.message);
  });
}

await anthropicSuite(Anthropic, `anthropic ${sdkVersion('@anthropic-ai/sdk')}`);
await anthropicSuite(Anthropic0, `anthropic ${sdkVersion('anthropic-sdk-0')}`);

// ---- Gemini -----------------------------------------------------------------

{
  const genaiVersion = sdkVersion('@google/genai').split('.').map(Number);
  // Built-in retries (httpOptions.retryOptions) arrived in @google/genai 1.41.
  const genaiRetries = genaiVersion[0] > 1 || (genaiVersion[0] === 1 && genaiVersion[1] >= 41);
  const httpOptions = { baseUrl: base, timeout: 20000 };
  if (genaiRetries) httpOptions.retryOptions = { attempts: 2 };
  const ai = new GoogleGenAI({ apiKey: 'fake-gemini-key', httpOptions });
  const model = 'gemini-fake-1';
  const user = { role: 'user', parts: [{ text: 'Build me a scene.' }] };
  const config = {
    // The real API refuses an OBJECT root without properties ("properties: should be
    // non-empty for OBJECT type"), and the fake does too: every tool declares its id.
    tools: [{ functionDeclarations: CALLS.map((c) => ({
      name: c.name, description: c.name,
      parameters: { type: 'OBJECT', properties: { id: { type: 'STRING' } } },
    })) }],
  };
  const SIGNATURE = Buffer.from('fake thought signature').toString('base64');
  let modelTurn = null;

  // genai 1.0 raises ClientError("got status: 400 ..."); later versions ApiError with .status.
  const statusOf = (e) => e.status ?? Number((String(e.message).match(/got status: (\d{3})/) || [])[1]);

  await check('gemini: non-streamed text turn', async () => {
    await reset();
    await script([{ text: TEXT }]);
    const r = await ai.models.generateContent({ model, contents: 'Build me a scene.' });
    assert.equal(r.text, TEXT);
    assert.equal(r.candidates[0].finishReason, 'STOP');
    assert.equal(r.usageMetadata.totalTokenCount,
      r.usageMetadata.promptTokenCount + r.usageMetadata.candidatesTokenCount);
    const [req] = await requests();
    assert.equal(req.api, 'gemini');
    // genai 1.x and 2.x call v1beta; 3.x calls v1. The fake serves both.
    assert.match(req.path, new RegExp(`^/v1(beta)?/models/${model}:generateContent$`));
    assert.equal(req.headers['x-goog-api-key'], '(redacted)');
    assert.equal(req.body.contents[0].parts[0].text, 'Build me a scene.');
  });

  await check('gemini: the image model answers with an inlineData PNG the SDK returns', async () => {
    await reset();
    await script([{ text: 'A red square.', image: { width: 4, height: 3, color: [200, 10, 10] } }]);
    const r = await ai.models.generateContent({
      model: 'gemini-2.5-flash-image', contents: 'a red square',
      config: { responseModalities: ['TEXT', 'IMAGE'] },
    });
    const parts = r.candidates[0].content.parts;
    const img = parts.find((p) => p.inlineData);
    assert.ok(img, JSON.stringify(parts));
    assert.equal(img.inlineData.mimeType, 'image/png');
    const png = Buffer.from(img.inlineData.data, 'base64');
    assert.equal(png.subarray(1, 4).toString(), 'PNG');
    assert.equal(png.readUInt32BE(16), 4);
    assert.equal(parts.find((p) => p.text).text, 'A red square.');
  });

  await check('gemini: asking a text model for images -> 400 response modalities', async () => {
    await reset();
    await script([{ text: 'unused' }]);
    await assert.rejects(
      ai.models.generateContent({ model, contents: 'a cat', config: { responseModalities: ['TEXT', 'IMAGE'] } }),
      (e) => statusOf(e) === 400 && /does not support the requested response modalities/.test(String(e.message)));
  });

  await check('gemini: streamed text turn (alt=sse), chunks concatenate to the script', async () => {
    await script([{ text: STREAM_TEXT, chunks: 5 }]);
    const stream = await ai.models.generateContentStream({ model, contents: [user] });
    let text = '';
    let n = 0;
    let last = null;
    for await (const chunk of stream) { text += chunk.text ?? ''; n += 1; last = chunk; }
    assert.equal(text, STREAM_TEXT);
    assert.equal(n, 5);
    assert.equal(last.candidates[0].finishReason, 'STOP');
    assert.ok(last.usageMetadata.candidatesTokenCount > 0);
    const log = await requests();
    assert.match(log[log.length - 1].path, /:streamGenerateContent\?alt=sse$/);
  });

  await check('gemini: streamed parallel function calls (with a thought signature)', async () => {
    await script([{ text: 'Calling two tools.', ...TOOLS_TURN, thought_signature: SIGNATURE }]);
    const stream = await ai.models.generateContentStream({ model, contents: [user], config });
    const calls = [];
    const parts = [];
    for await (const chunk of stream) {
      calls.push(...(chunk.functionCalls ?? []));
      parts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
    }
    assert.deepEqual(calls.map((c) => c.name), CALLS.map((c) => c.name));
    assert.deepEqual(calls.map((c) => c.args), CALLS.map((c) => c.arguments));
    const signed = parts.filter((p) => p.thoughtSignature !== undefined);
    // genai 1.0 drops thoughtSignature while converting; later versions keep it.
    if (!signed.length) console.log('# this @google/genai drops thoughtSignature: not checked');
    if (signed.length) {
      assert.equal(signed.length, 1);
      assert.equal(signed[0].thoughtSignature, SIGNATURE);
      assert.ok(signed[0].functionCall, 'the signature rides on the first functionCall part');
    }
    modelTurn = { role: 'model', parts };
  });

  const responses = () => CALLS.map((c) => ({ functionResponse: { name: c.name, response: { success: true } } }));

  await check('gemini: follow-up with the function responses succeeds', async () => {
    await reset();
    await script([{ text: 'Both tools ran.' }]);
    const r = await ai.models.generateContent({
      model, config, contents: [user, modelTurn, { role: 'user', parts: responses() }],
    });
    assert.equal(r.text, 'Both tools ran.');
    const [req] = await requests();
    assert.deepEqual(req.body.contents[2].parts.map((p) => p.functionResponse.name), CALLS.map((c) => c.name));
  });

  await check('gemini: function responses missing -> 400 INVALID_ARGUMENT, no turn taken', async () => {
    await script([{ text: 'must not be used' }]);
    const e = await rejects(() => ai.models.generateContent({
      model, config, contents: [user, modelTurn, { role: 'user', parts: [{ text: 'and?' }] }],
    }));
    assert.equal(statusOf(e), 400, e.message);
    assert.match(e.message, /INVALID_ARGUMENT/);
    assert.match(e.message, /function response/);
    assert.equal(await queued(), 1);
  });

  await check(genaiRetries
    ? 'gemini: 429 is retried by the SDK (retryOptions.attempts 2)'
    : 'gemini: 429 RESOURCE_EXHAUSTED raised (this SDK version has no built-in retry), next call succeeds', async () => {
    await reset();
    await script(RETRY_TURNS);
    if (!genaiRetries) {
      const e = await rejects(() => ai.models.generateContent({ model, contents: [user] }));
      assert.equal(statusOf(e), 429, e.message);
      assert.match(e.message, /RESOURCE_EXHAUSTED/);
      await new Promise((r) => setTimeout(r, 1000)); // what the Retry-After header asked
    }
    const r = await ai.models.generateContent({ model, contents: [user] });
    assert.equal(r.text, 'answered after the retry');
    await checkRetried('gemini');
  });

  await check('gemini: empty API key -> 400 API key not valid', async () => {
    const badKey = new GoogleGenAI({ apiKey: 'unused', httpOptions: { baseUrl: base, headers: { 'x-goog-api-key': '' } } });
    const e = await rejects(() => badKey.models.generateContent({ model, contents: 'hi' }));
    assert.equal(statusOf(e), 400, e.message);
    assert.match(e.message, /API key not valid/);
  });

  await check('gemini: a truncated stream makes the SDK throw', async () => {
    await script([TRUNCATED]);
    const e = await rejects(async () => {
      const stream = await ai.models.generateContentStream({ model, contents: [user] });
      for await (const chunk of stream) void chunk;
    });
    assert.ok(!(e instanceof assert.AssertionError), e.message);
  });
}

if (failed) {
  console.log('# the fake server said, last lines:');
  for (const line of serverLog.slice(-30)) console.log(`#   ${line}`);
}
console.log(`${passed} passed, ${failed} failed`);
server.kill('SIGTERM');
process.exit(failed ? 1 : 0);
