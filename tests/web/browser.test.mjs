// The chat page (fcgi/www) in a real browser: Debian's headless chromium
// driven by playwright-core, against the whole stack (scripts/atelier-stack:
// nginx, atelier-fcgi, atelierd) with the fake LLM provider
// (tests/fake-llm/fake_llm.py) as the model.
//
//   node tests/web/browser.test.mjs      (tests/web/test_browser.sh installs
//                                         playwright-core first)
//
// Environment: ATL_TEST_SRCDIR (default: the checkout this file is in),
// ATL_TEST_BUILDDIR (default: $ATL_TEST_SRCDIR/build), ATL_TEST_OUTDIR
// (screenshots; default: $ATL_TEST_BUILDDIR/tests/web/screenshots),
// ATL_CHROMIUM (default: /usr/bin/chromium).
//
// Output: "ok N - name" / "not ok N - name" with "#" diagnostics, then
// "P passed, F failed"; exit status 1 on any failure. Every check waits on
// conditions in the page; the only timed window is the one that proves a
// stopped run makes no further model call.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const SRCDIR = process.env.ATL_TEST_SRCDIR || path.resolve(here, '..', '..');
const BUILDDIR = process.env.ATL_TEST_BUILDDIR || path.join(SRCDIR, 'build');
const OUTDIR = process.env.ATL_TEST_OUTDIR || path.join(BUILDDIR, 'tests', 'web', 'screenshots');
const CHROMIUM = process.env.ATL_CHROMIUM || '/usr/bin/chromium';
const STACK = path.join(SRCDIR, 'scripts', 'atelier-stack');
const FAKE = path.join(SRCDIR, 'tests', 'fake-llm', 'fake_llm.py');

const TIMEOUT = 15000; // one condition in the page
const DEMO_TIMEOUT = 120000; // a demo's whole run, render included, under ASan
const DESKTOP = { width: 1280, height: 860 };

const TMP = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'atl-browser.'));
const procs = [];

// ---------------------------------------------------------------- helpers

function log(line) {
  process.stdout.write(line + '\n');
}

function diag(text) {
  for (const l of String(text).split('\n')) log('# ' + l);
}

class Failure extends Error {}

function assert(cond, message) {
  if (!cond) throw new Failure(message);
}

function eq(got, want, what) {
  assert(got === want, `${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// Resolves with the first stdout line matching re (the process is kept).
function waitLine(proc, re, what, timeoutMs = 30000) {
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: proc.stdout });
    const timer = setTimeout(() => reject(new Error(`${what}: no "${re}" within ${timeoutMs} ms`)), timeoutMs);
    rl.on('line', (line) => {
      const m = re.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    proc.once('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code ?? sig}) before it was ready`));
    });
  });
}

async function stopProc(p) {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const gone = once(p, 'exit');
  const t0 = Date.now();
  p.kill('SIGTERM');
  const timer = setTimeout(() => {
    diag(`${p.spawnargs[0]} (pid ${p.pid}) ignored SIGTERM for 15 s: SIGKILL`);
    p.kill('SIGKILL');
  }, 15000);
  await gone;
  clearTimeout(timer);
  if (process.env.ATL_TEST_VERBOSE) diag(`${p.spawnargs[0]} stopped in ${Date.now() - t0} ms`);
}

function tail(file, n = 20) {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-n).join('\n');
  } catch {
    return '(no ' + file + ')';
  }
}

// ---------------------------------------------------------------- the fake

class Fake {
  async start() {
    this.proc = spawn('python3', [FAKE, '--port', '0'], {
      stdio: ['ignore', 'pipe', fs.openSync(path.join(TMP, 'fake.log'), 'w')],
    });
    procs.push(this.proc);
    const m = await waitLine(this.proc, /listening on (http:\/\/\S+)/, 'fake_llm.py');
    this.url = m[1];
  }

  async post(p, body) {
    const r = await fetch(this.url + p, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    if (!r.ok) throw new Error(`fake ${p}: ${r.status} ${text}`);
    return text;
  }

  /** Empties the queue and the request log, then queues these turns. */
  async script(turns) {
    await this.post('/_fake/reset', {});
    await this.post('/_fake/script', { turns });
  }

  async requests() {
    const r = await fetch(this.url + '/_fake/requests');
    return (await r.json()).requests;
  }

  async queued() {
    const r = await fetch(this.url + '/_fake/script');
    return (await r.json()).turns;
  }
}

// ---------------------------------------------------------------- the stack

class Stack {
  async start(fakeUrl) {
    this.data = path.join(TMP, 'stack');
    this.port = await freePort();
    const conf = path.join(TMP, 'atelierd.conf');
    fs.writeFileSync(conf, [
      '[agent]', 'provider = fake',
      '[provider.fake]', 'type = openai', `base_url = ${fakeUrl}`,
      'api_key_env = FAKE_LLM_KEY', 'models = fake-model, other-model', 'timeout_ms = 5000', '',
    ].join('\n'));
    this.outFile = path.join(TMP, 'stack.out');
    const out = fs.openSync(this.outFile, 'w');
    this.proc = spawn(STACK, ['--build', BUILDDIR, '--data', this.data, '--port', String(this.port),
      '--config', conf, '--plugin-dir', path.join(BUILDDIR, 'tests', 'plugins', '.libs')], {
      stdio: ['ignore', 'pipe', out],
      env: { ...process.env, FAKE_LLM_KEY: 'sk-browser-test' },
    });
    procs.push(this.proc);
    this.proc.stdout.on('data', (b) => fs.appendFileSync(this.outFile, b));
    const m = await waitLine(this.proc, /atelier: ready at (http:\/\/\S+)/, 'atelier-stack')
      .catch((e) => { throw new Error(e.message + '\n' + tail(this.outFile)); });
    // The link logs a browser in (?token=); scripts send the token as a
    // bearer (tests/web/hostile.mjs).
    this.url = m[1];
    this.base = new URL(this.url).origin;
    this.token = new URL(this.url).searchParams.get('token');
  }

  logs() {
    const dir = path.join(this.data, 'log');
    return ['atelierd.log', 'atelier-fcgi.log', 'nginx-error.log']
      .map((f) => `--- ${f}\n${tail(path.join(dir, f), 10)}`).join('\n');
  }
}

// ---------------------------------------------------------------- the page

/** A page whose uncaught exceptions and console errors are collected; a
 *  check fails on any it did not expect. */
async function newPage(browser, viewport = DESKTOP, { colorScheme = 'light', hasTouch = false } = {}) {
  const context = await browser.newContext({ viewport, colorScheme, hasTouch });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push('uncaught: ' + (e.stack || e.message)));
  page.on('console', (m) => {
    if (m.type() === 'error') page.errors.push('console.error: ' + m.text());
  });
  page.on('dialog', (d) => d.dismiss()); // no alert()/confirm() is expected either
  return page;
}

function noErrors(page, allowed = []) {
  const bad = page.errors.filter((e) => !allowed.some((re) => re.test(e)));
  assert(bad.length === 0, 'errors in the page:\n' + bad.join('\n'));
}

async function open(browser, stack, opts) {
  const page = await newPage(browser, opts && opts.viewport, opts);
  await page.goto(stack.url);
  // The page is wired once the model list has loaded.
  await page.waitForSelector('#model-select:not([disabled])');
  return page;
}

async function send(page, text) {
  const input = page.locator('#message-input');
  await input.click();
  await input.fill(text);
  await input.press('Enter');
}

/** Waits for the page's current run to end in the given state.  A demo
 *  renders, which under ASan on a busy 2-core machine takes longer than
 *  the default wait: such checks pass a longer timeout. */
async function runEnds(page, state = 'completed', timeout = TIMEOUT) {
  await page.waitForSelector(`#messages .run[data-state="${state}"]`, { timeout });
  await page.waitForSelector('body[data-running="false"]', { timeout });
}

/** Waits for an element matching sel whose whole text is text. */
async function waitText(page, sel, text) {
  await page.waitForFunction(([s, t]) =>
    [...document.querySelectorAll(s)].some((e) => e.textContent === t), [sel, text]);
}

function sessionOf(page) {
  const m = /#s=([0-9a-f]{32})$/.exec(page.url());
  return m ? m[1] : null;
}

/** The mean [r, g, b] of a region of the loaded picture sel (an <img>),
 *  in its own pixels. */
function meanRgb(page, sel, x, y, w, h) {
  return page.evaluate(([s, rx, ry, rw, rh]) => {
    const i = document.querySelector(s);
    const c = document.createElement('canvas');
    c.width = i.naturalWidth;
    c.height = i.naturalHeight;
    const g = c.getContext('2d');
    g.drawImage(i, 0, 0);
    const d = g.getImageData(rx, ry, rw, rh).data;
    const m = [0, 0, 0];
    for (let k = 0; k < d.length; k += 4) for (let j = 0; j < 3; j++) m[j] += d[k + j];
    return m.map((v) => v / (d.length / 4));
  }, [sel, x, y, w, h]);
}

async function shot(page, name) {
  const file = path.join(OUTDIR, name);
  await page.screenshot({ path: file, fullPage: false });
  return file;
}

// ---------------------------------------------------------------- checks

const checks = [];
function check(name, fn) {
  checks.push({ name, fn });
}
// ATL_TEST_ONLY=regex runs only the checks whose names match (while debugging).
const ONLY = process.env.ATL_TEST_ONLY ? new RegExp(process.env.ATL_TEST_ONLY) : null;

const STREAMED = 'Streaming works: one, two, three, four, five, six, seven.';

check('send a message: the answer streams into a bubble and the run completes', async ({ browser, stack, fake }) => {
  await fake.script([{ text: STREAMED, chunks: 5, delay_ms: 100 }]);
  const page = await open(browser, stack);
  await send(page, 'Say something slowly');
  // The user's message and the run, then a partial answer while it streams.
  await waitText(page, '#messages .msg-user .bubble', 'Say something slowly');
  const partial = await page.waitForFunction((full) => {
    const b = document.querySelector('#messages .msg-assistant.streaming .bubble');
    const t = b ? b.textContent : '';
    return t !== '' && t.length < full.length && document.body.dataset.running === 'true' ? t : false;
  }, STREAMED, { timeout: TIMEOUT });
  const part = await partial.jsonValue();
  assert(STREAMED.startsWith(part), `the partial text is not a prefix: ${JSON.stringify(part)}`);
  eq(await page.locator('#stop').isVisible(), true, '#stop visible while running');
  eq(await page.locator('#send').isVisible(), false, '#send visible while running');
  await runEnds(page);
  const bubbles = page.locator('#messages .msg-assistant .bubble');
  eq(await bubbles.count(), 1, 'assistant bubbles');
  eq(await bubbles.first().textContent(), STREAMED, 'the final text');
  eq(await page.locator('#messages .msg-assistant.streaming').count(), 0, 'still streaming bubbles');
  eq(await page.locator('#send').isVisible(), true, '#send visible after the run');
  assert(sessionOf(page) !== null, 'the URL names no session: ' + page.url());
  await shot(page, 'send-message.png');
  noErrors(page);
  await page.context().close();
});

const BLUE = { type: 'lambertian', albedo: [0, 0, 1] };
const RED = { type: 'lambertian', albedo: [1, 0, 0] };

check('tool calls: a line per call, details with a diff, a failure marked in red', async ({ browser, stack, fake, shared }) => {
  await fake.script([
    { text: 'Adding a blue sphere.', tool_calls: [{ name: 'create_shape', arguments: {
      id: 'blue_sphere', type: 'sphere', properties: { center: [0, 1, 0], radius: 1, material: BLUE } } }] },
    { text: 'Now making it red.', tool_calls: [{ name: 'update_shape', arguments: {
      id: 'blue_sphere', updates: { properties: { material: RED } } } }] },
    { tool_calls: [{ name: 'create_shape', arguments: {
      id: 'bad_sphere', type: 'sphere', properties: { center: [0, 0, 0], radius: -1 } } }] },
    { text: 'The sphere is red now; the second one was refused.' },
  ]);
  const page = await open(browser, stack);
  await send(page, 'Make a blue sphere, then red, then a broken one');
  await runEnds(page);

  const created = page.locator('#messages .tool-call[data-tool="create_shape"]').first();
  eq(await created.getAttribute('data-state'), 'ok', 'create_shape state');
  eq(await created.locator('.tool-summary').textContent(), 'Created shape: blue_sphere', 'create_shape line');
  eq(await created.locator('.tool-details').isVisible(), false, 'details before the click');
  await created.locator('.tool-line').click();
  await created.locator('.tool-details').waitFor({ state: 'visible' });
  eq(await created.locator('.tool-line').getAttribute('aria-expanded'), 'true', 'aria-expanded after the click');
  assert((await created.locator('.tool-facts').textContent()).includes('Success'), 'the facts say Success');
  assert(await created.locator('.diff-row[data-kind="added"]').count() > 0, 'a created shape shows added rows');

  const updated = page.locator('#messages .tool-call[data-tool="update_shape"]');
  eq(await updated.getAttribute('data-state'), 'ok', 'update_shape state');
  eq(await updated.locator('.tool-summary').textContent(), 'Updated shape: blue_sphere', 'update_shape line');
  await updated.locator('.tool-line').click();
  await updated.locator('.tool-details').waitFor({ state: 'visible' });
  const row = updated.locator('.diff-row[data-kind="changed"][data-path*="albedo"]').first();
  await row.waitFor({ state: 'visible' });
  const rowText = (await row.textContent()).replace(/\s+/g, '');
  assert(/\[0,0,1\]→\[1,0,0\]/.test(rowText) || (/0,0,1/.test(await row.locator('.diff-old').textContent()) &&
    /1,0,0/.test(await row.locator('.diff-new').textContent())),
  'the albedo row shows old → new: ' + (await row.textContent()));
  // Collapsing again hides the details.
  await updated.locator('.tool-line').click();
  await updated.locator('.tool-details').waitFor({ state: 'hidden' });

  const failed = page.locator('#messages .tool-call[data-state="failed"]');
  eq(await failed.count(), 1, 'failed calls');
  eq(await failed.getAttribute('data-tool'), 'create_shape', 'the failed tool');
  const err = await failed.locator('.tool-error').textContent();
  assert(err.startsWith('Error:') && /radius/i.test(err), 'the collapsed error: ' + err);
  const color = await failed.locator('.tool-error').evaluate((e) => getComputedStyle(e).color);
  const [r, g, b] = color.match(/[\d.]+/g).map(Number);
  assert(r > 120 && r > g + 50 && r > b + 50, 'the error is not red: ' + color);
  await failed.locator('.tool-line').click();
  await failed.locator('.tool-error-text').waitFor({ state: 'visible' });
  assert(/radius/i.test(await failed.locator('.tool-error-text').textContent()), 'the details hold the error');
  assert((await failed.locator('.tool-facts').textContent()).includes('Failed'), 'the facts say Failed');
  eq(await page.locator('#messages .msg-assistant .bubble').last().textContent(),
    'The sphere is red now; the second one was refused.', 'the closing answer');
  shared.toolSession = sessionOf(page);
  await shot(page, 'tool-calls.png');
  noErrors(page);
  await page.context().close();
});

check('an image: the tool details and the preview show the loaded PNG', async ({ browser, stack, fake }) => {
  await fake.script([
    { tool_calls: [{ name: 'echo_image', arguments: { width: 8, height: 8 } }] },
    { text: 'Here is the image.' },
  ]);
  const page = await open(browser, stack);
  eq(await page.locator('#preview').getAttribute('data-empty'), 'true', '#preview data-empty before');
  await send(page, 'Show me an image');
  await runEnds(page);
  const call = page.locator('#messages .tool-call[data-tool="echo_image"]');
  eq(await call.getAttribute('data-state'), 'ok', 'echo_image state');
  await call.locator('.tool-line').click();
  const img = call.locator('.tool-images .image-button img');
  await img.waitFor({ state: 'visible' });
  await page.waitForFunction((e) => e.complete && e.naturalWidth > 0, await img.elementHandle());
  eq(await img.evaluate((e) => [e.naturalWidth, e.naturalHeight].join('x')), '8x8', 'the thumbnail size');
  eq(await page.locator('#preview').getAttribute('data-empty'), 'false', '#preview data-empty after');
  const prev = page.locator('#preview #preview-open[data-image-id] img');
  await prev.waitFor({ state: 'visible' });
  await page.waitForFunction((e) => e.complete && e.naturalWidth > 0, await prev.elementHandle());
  const same = await page.evaluate(() => document.querySelector('#preview-open').dataset.imageId ===
    document.querySelector('#messages .tool-images .image-button').dataset.imageId);
  assert(same, 'the preview shows another image than the tool');
  // The thumbnail opens the full-size viewer.
  await call.locator('.tool-images .image-button').click();
  await page.waitForSelector('dialog#image-viewer[open]');
  await page.waitForFunction(() => {
    const i = document.getElementById('image-viewer-img');
    return i.complete && i.naturalWidth === 8;
  });
  await shot(page, 'image.png');
  await page.locator('#image-viewer-close').click();
  await page.waitForSelector('dialog#image-viewer:not([open])', { state: 'attached' });
  noErrors(page);
  await page.context().close();
});

check('render_scene: the preview sharpens while it runs, then shows the final picture', async ({ browser, stack, fake }) => {
  await fake.script([
    { tool_calls: [{ name: 'create_shape', arguments: {
      id: 'ball', type: 'sphere', properties: { center: [0, 0, 0], radius: 1 } } }] },
    // Every pixel takes every sample (no adaptive sampling), so that the
    // render runs well past the first preview (250 ms) on a fast machine
    // too: 200 samples took 0.3 s with the AVX-512 kernel on these 2 cores
    // and sometimes ended before a second preview.
    { tool_calls: [{ name: 'render_scene', arguments: { width: 200, height: 150, samples: 1000, noise_threshold: 0 } }] },
    { text: 'A sphere under the sky.' },
  ]);
  const page = await open(browser, stack);
  // Record every picture the preview pane shows, and whether its progress
  // bar was ever visible.
  await page.evaluate(() => {
    window.seenPreviews = [];
    window.sawProgress = false;
    new MutationObserver(() => {
      const b = document.querySelector('#preview-open');
      const id = b && b.dataset.imageId;
      if (id && window.seenPreviews[window.seenPreviews.length - 1] !== id) window.seenPreviews.push(id);
      if (!document.getElementById('preview-progress').hidden) window.sawProgress = true;
    }).observe(document.getElementById('preview'), { subtree: true, childList: true, attributes: true });
  });
  await send(page, 'Render a ball');
  await runEnds(page);
  const call = page.locator('#messages .tool-call[data-tool="render_scene"]');
  eq(await call.getAttribute('data-state'), 'ok', 'render_scene state');
  const final = await call.evaluate((e) => e.querySelector('.tool-images .image-button').dataset.imageId);
  const seen = await page.evaluate(() => window.seenPreviews);
  assert(seen.length >= 2, 'previews shown: ' + JSON.stringify(seen));
  eq(seen[seen.length - 1], final, 'the preview ends on the final picture');
  assert(await page.evaluate(() => window.sawProgress), 'the progress bar was never shown');
  eq(await page.locator('#preview-progress').isHidden(), true, 'the progress bar is hidden after the render');
  const prev = page.locator('#preview #preview-open img');
  await page.waitForFunction((e) => e.complete && e.naturalWidth === 200, await prev.elementHandle());
  await shot(page, 'render.png');
  noErrors(page);
  await page.context().close();
});

// Issue 21: a picture after every change, no render_scene needed.
check('live preview: a change shows a picture that sharpens, HQ on request, the last of a burst wins; 360 px, both themes', async ({ browser, stack, fake }) => {
  await fake.script([
    { tool_calls: [{ name: 'create_shape', arguments: {
      id: 'ball', type: 'sphere', properties: { center: [0, 1, 0], radius: 1.1,
        material: { type: 'lambertian', albedo: [0.2, 0.3, 0.9] } } } }] },
    { text: 'A blue ball.' },
  ]);
  const page = await open(browser, stack, { viewport: { width: 360, height: 740 } });
  await page.evaluate(() => {
    window.seenLive = [];
    new MutationObserver(() => {
      const i = document.querySelector('#preview-frame img.live-preview');
      const last = window.seenLive[window.seenLive.length - 1];
      if (i && (!last || last.id !== i.dataset.previewId)) {
        window.seenLive.push({ id: i.dataset.previewId, final: i.dataset.final === 'true',
          revision: Number(i.dataset.revision) });
      }
    }).observe(document.getElementById('preview-frame'), { childList: true });
  });
  await send(page, 'A ball, please');
  await runEnds(page);
  // No render_scene was called, and still the Scene view shows the ball.
  eq(await page.locator('#messages .tool-call[data-tool="render_scene"]').count(), 0, 'render_scene calls');
  const finalSel = '#preview-frame img.live-preview[data-final="true"]';
  await page.waitForSelector(finalSel);
  await page.waitForFunction((s) => {
    const i = document.querySelector(s);
    return i && i.complete && i.naturalWidth === 400;
  }, finalSel);
  // (A ball at Fast may be done before a second picture: the sharpening
  // is checked at HQ below.)
  const seen = await page.evaluate(() => window.seenLive);
  assert(seen.length >= 1 && seen[seen.length - 1].final, 'the previews shown: ' + JSON.stringify(seen));
  // Fast ends as render_scene's draft: 16 samples a pixel, denoised.
  assert(/^Live preview · 16 samples a pixel, denoised$/.test(await page.locator('#preview-status').textContent()),
    'caption: ' + await page.locator('#preview-status').textContent());
  // At 360 px the picture fits the strip above the conversation.
  const box = await page.locator(finalSel).boundingBox();
  assert(box.x >= 0 && box.x + box.width <= 360, 'the preview overflows: ' + JSON.stringify(box));
  // The centre of the picture is the blue ball.
  const centre = () => meanRgb(page, finalSel, 190, 140, 20, 20);
  const [r, g, b] = await centre();
  assert(b > r + 30 && b > g + 30, 'the ball is not blue: ' + [r, g, b]);
  // Light theme, then dark: the caption and buttons stay readable.
  if ((await page.locator('html').getAttribute('data-theme')) === 'dark') await page.locator('#theme-toggle').click();
  await shot(page, 'live-preview-360-light.png');
  await page.locator('#theme-toggle').click();
  await page.waitForSelector('html[data-theme="dark"]');
  await shot(page, 'live-preview-360-dark.png');

  // HQ: the page asks, the daemon renders 500 samples a pixel, and the
  // picture sharpens on the way (seconds).
  await page.evaluate(() => { window.seenLive = []; });
  const hq = page.locator('#preview-quality button[data-quality="hq"]');
  await hq.click();
  eq(await hq.getAttribute('aria-pressed'), 'true', 'HQ pressed');
  await page.waitForFunction(() => /^Live preview \(HQ\) · \d+ samples a pixel$/.test(
    document.getElementById('preview-status').textContent), null, { timeout: 90000 });
  const spp = Number((await page.locator('#preview-status').textContent()).match(/(\d+) samples/)[1]);
  assert(spp > 64, 'HQ samples: ' + spp);
  const sharpening = await page.evaluate(() => window.seenLive);
  assert(sharpening.length >= 2 && !sharpening[0].final && sharpening[sharpening.length - 1].final,
    'the HQ preview did not sharpen on the page: ' + JSON.stringify(sharpening));
  await page.locator('#preview-quality button[data-quality="fast"]').click();

  // A burst of edits made by hand (the API, as another client would): the
  // last one's colour is what the picture ends on.
  const sid = sessionOf(page);
  const colours = [[0.9, 0.9, 0.1], [0.1, 0.9, 0.1], [0.9, 0.1, 0.9], [0.95, 0.05, 0.05]];
  await page.evaluate(async ([id, cs]) => {
    for (const c of cs) {
      await fetch('/api/sessions/' + id + '/tools/update_shape', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ id: 'ball', updates: { properties: { material: { type: 'lambertian', albedo: c } } } }),
      });
    }
  }, [sid, colours]);
  await page.waitForFunction((s) => {
    const i = document.querySelector(s);
    return i && i.complete && i.naturalWidth === 400 && i.dataset.previewId !== undefined;
  }, finalSel);
  await page.waitForFunction(() => /^Live preview · /.test(document.getElementById('preview-status').textContent));
  // Wait for the picture of the last edit: red in the middle.
  let rgb = null;
  for (let t = Date.now(); Date.now() - t < 20000;) {
    if ((await page.locator(finalSel).count()) === 1) {
      rgb = await centre().catch(() => null);
      if (rgb && rgb[0] > rgb[1] + 30 && rgb[0] > rgb[2] + 30) break;
    }
    await new Promise((res) => setTimeout(res, 100));
  }
  assert(rgb && rgb[0] > rgb[1] + 30 && rgb[0] > rgb[2] + 30, 'the burst did not end on red: ' + rgb);
  await shot(page, 'live-preview-360-burst.png');
  noErrors(page);
  await page.context().close();
});

// No model call may follow a stop. An absence is only proved by a timed
// window: until well past when the next call would have come, the fake has
// been asked once and still holds the turn that would answer it.
async function noFurtherCall(fake, until) {
  do {
    eq((await fake.requests()).length, 1, 'model requests after the stop');
    await new Promise((r) => setTimeout(r, 200));
  } while (Date.now() < until);
  eq((await fake.queued()).length, 1, 'turns left in the fake');
}

const SLOW = Array.from({ length: 30 }, (_, i) => `slow${i + 1}`).join(' ') + '.';

check('the Canvas view: the agent\'s strokes drawn with the pen, the person\'s own strokes, a new canvas and the gallery, replay, SVG export, the same after a reload', async ({ browser, stack, fake }) => {
  const LINE = { type: 'line', points: [{ x: 100, y: 100 }, { x: 700, y: 500 }] };
  const ARC = { type: 'svg', d: 'M 300 300 A 80 80 0 1 1 460 300', color: 'teal' };
  await fake.script([
    { tool_calls: [{ name: 'draw_paths', arguments: { paths: [LINE, ARC] } }] },
    { tool_calls: [{ name: 'name_piece', arguments: { title: 'Two lines' } }] },
    { text: 'Drawn.' },
  ]);
  const page = await open(browser, stack);
  await send(page, 'Draw two lines');
  await runEnds(page);
  // The workspace turned to the canvas, and the strokes are there, drawn
  // by the pen animation (which ends).
  await page.waitForSelector('#preview[data-view="canvas"] #canvas-panel:not([hidden])');
  await page.waitForFunction(() => document.querySelectorAll('#canvas-strokes g[data-author="agent"]').length === 2);
  await page.waitForSelector('#canvas-panel[data-animating="false"]');
  eq(await page.locator('#canvas-strokes g path').first().getAttribute('d'), 'M100 100 L700 500', 'the first stroke');
  eq(await page.locator('#canvas-title').textContent(), 'Piece 1 “Two lines” · plotter · 2 strokes', 'the title line');
  // The draw_paths line keeps its canvas image in its details; the Scene
  // view does not take it.
  eq(await page.locator('#preview-frame .image-button').count(), 0, 'scene images');
  // The person draws a stroke with the mouse.
  await page.locator('#canvas-draw').click();
  const box = await page.locator('#canvas-svg').boundingBox();
  await page.mouse.move(box.x + box.width * 0.2, box.y + box.height * 0.8);
  await page.mouse.down();
  for (let i = 1; i <= 10; i++) await page.mouse.move(box.x + box.width * (0.2 + i * 0.05), box.y + box.height * 0.8);
  await page.mouse.up();
  await page.waitForFunction(() => document.querySelectorAll('#canvas-strokes g[data-author="human"]').length === 1);
  eq(await page.locator('#canvas-strokes .pen-temp').count(), 0, 'the temporary stroke is gone');
  const human = await page.locator('#canvas-strokes g[data-author="human"] path').getAttribute('stroke');
  eq(human, '#0066cc', 'a human stroke in plotter mode');
  // Export as SVG: the strokes with their colours.
  const [dl] = await Promise.all([page.waitForEvent('download'), page.locator('#canvas-export-svg').click()]);
  const svg = fs.readFileSync(await dl.path(), 'utf8');
  assert(svg.includes('d="M100 100 L700 500" stroke="#1a1a2e"'), 'the exported SVG: ' + svg.slice(0, 400));
  assert(svg.includes('stroke="#0066cc"'), 'the human stroke in the SVG');
  // A new canvas in paint mode: the piece goes to the gallery.
  await page.locator('#canvas-mode').selectOption('paint');
  await page.locator('#canvas-new').click();
  await page.waitForSelector('#canvas-gallery .gallery-item[data-piece="1"]');
  await page.waitForFunction(() => document.querySelectorAll('#canvas-strokes g').length === 0);
  eq(await page.locator('#canvas-title').textContent(), 'Piece 2 · paint · 0 strokes', 'the new piece');
  // The gallery piece shows, and replays stroke by stroke.
  await page.locator('#canvas-gallery .gallery-item[data-piece="1"]').click();
  await page.waitForFunction(() => document.querySelectorAll('#canvas-strokes g').length === 3);
  await page.locator('#canvas-replay').click();
  await page.waitForSelector('#canvas-panel[data-animating="true"]');
  await page.waitForSelector('#canvas-panel[data-animating="false"]');
  eq(await page.locator('#canvas-strokes g[data-pending]').count(), 0, 'every stroke drawn after the replay');
  await shot(page, 'canvas.png');
  // A reload draws the same, without animating history.
  await page.reload();
  await page.waitForSelector('#model-select:not([disabled])');
  await page.waitForSelector('#preview[data-view="canvas"]');
  await page.waitForSelector('#canvas-gallery .gallery-item[data-piece="1"]');
  eq(await page.locator('#canvas-title').textContent(), 'Piece 2 · paint · 0 strokes', 'after the reload');
  eq(await page.locator('#canvas-panel').getAttribute('data-animating'), null, 'no animation of history');
  noErrors(page);
  await page.context().close();
});

check('filmstrip: each render joins the Scene\'s strip; two picked are compared side by side', async ({ browser, stack, fake }) => {
  const ball = (albedo) => ({ id: 'ball', type: 'sphere', properties: { center: [0, 1, 0], radius: 1.1,
    material: { type: 'lambertian', albedo } } });
  await fake.script([
    { tool_calls: [{ name: 'create_shape', arguments: ball([0.2, 0.3, 0.9]) }] },
    { tool_calls: [{ name: 'render_scene', arguments: { quality: 'draft' } }] },
    { tool_calls: [{ name: 'update_shape', arguments: { id: 'ball', updates: { properties: { material: {
      type: 'lambertian', albedo: [0.9, 0.2, 0.1] } } } } }] },
    { tool_calls: [{ name: 'render_scene', arguments: { quality: 'draft' } }] },
    { text: 'Blue, then red.' },
  ]);
  const page = await open(browser, stack);
  await send(page, 'A ball, rendered blue then red');
  await runEnds(page);
  await page.waitForSelector('#scene-film:not([hidden])');
  await page.waitForFunction(() => document.querySelectorAll('#scene-film .film-item[data-kind="render"]').length === 2);
  const renders = page.locator('#scene-film .film-item[data-kind="render"]');
  // The strip's pictures are the renders' own (their tool lines have them).
  const ids = await renders.evaluateAll((bs) => bs.map((b) => b.dataset.filmId));
  const lines = await page.evaluate(() => [...document.querySelectorAll('#messages .tool-call[data-tool="render_scene"] [data-image-id]')]
    .map((b) => b.dataset.imageId));
  eq(ids.join(' '), lines.join(' '), 'the strip against the tool lines');
  await shot(page, 'filmstrip.png');
  await renders.nth(0).click();
  eq(await renders.nth(0).getAttribute('aria-pressed'), 'true', 'the first picked');
  await renders.nth(1).click();
  await page.waitForSelector('#compare[open]');
  await page.waitForFunction(() => ['compare-a', 'compare-b'].every((id) => {
    const i = document.getElementById(id);
    return i.complete && i.naturalWidth === 400;
  }));
  eq(await page.locator('#compare-a').getAttribute('data-film-id'), ids[0], 'the older on the left');
  eq(await page.locator('#compare-b').getAttribute('data-film-id'), ids[1], 'the newer on the right');
  // Blue on the left, red on the right: the two states, side by side.
  const [a, b] = [await meanRgb(page, '#compare-a', 190, 140, 20, 20), await meanRgb(page, '#compare-b', 190, 140, 20, 20)];
  assert(a[2] > a[0] + 30 && b[0] > b[2] + 30, 'not blue then red: ' + JSON.stringify([a, b]));
  const boxA = await page.locator('#compare-a').boundingBox();
  const boxB = await page.locator('#compare-b').boundingBox();
  assert(boxA.x + boxA.width <= boxB.x && Math.abs(boxA.y - boxB.y) < 2, 'not side by side: ' + JSON.stringify([boxA, boxB]));
  await shot(page, 'compare.png');
  await page.locator('#compare-close').click();
  await page.waitForSelector('#compare:not([open])', { state: 'attached' });
  eq(await renders.nth(0).getAttribute('aria-pressed'), 'false', 'picked afresh after');
  // At 360 px, in both themes: the strip scrolls within the pane, and the
  // compare stacks the two pictures, each within the window.
  await page.setViewportSize({ width: 360, height: 740 });
  await renders.nth(1).scrollIntoViewIfNeeded();
  const fb = await renders.nth(1).boundingBox();
  assert(fb.x >= 0 && fb.x + fb.width <= 360, 'a strip picture off the window: ' + JSON.stringify(fb));
  if ((await page.locator('html').getAttribute('data-theme')) === 'dark') await page.locator('#theme-toggle').click();
  await shot(page, 'filmstrip-360-light.png');
  await renders.nth(0).click();
  await renders.nth(1).click();
  await page.waitForSelector('#compare[open]');
  const [sa, sb] = [await page.locator('#compare-a').boundingBox(), await page.locator('#compare-b').boundingBox()];
  assert(sa.x >= 0 && sa.x + sa.width <= 360 && sb.y >= sa.y + sa.height - 1, 'not stacked at 360 px: ' + JSON.stringify([sa, sb]));
  await page.locator('#compare-close').click();
  await page.locator('#theme-toggle').click();
  await page.waitForSelector('html[data-theme="dark"]');
  await shot(page, 'filmstrip-360-dark.png');
  noErrors(page);
  await page.context().close();
});

check('/demo (the snowman) ends with render_scene\'s picture of the snowman in the Scene view', async ({ browser, stack }) => {
  const page = await open(browser, stack);
  await send(page, '/demo');
  await runEnds(page, 'completed', DEMO_TIMEOUT);
  // The demo's last call is render_scene, and the Scene view shows its
  // picture (a live preview of an earlier change never covers it).
  const tools = await page.evaluate(() => [...document.querySelectorAll('#messages .tool-call[data-tool]')]
    .map((e) => e.dataset.tool));
  eq(tools[tools.length - 1], 'render_scene', 'the last call');
  const rendered = await page.evaluate(() => {
    const calls = document.querySelectorAll('#messages .tool-call[data-tool="render_scene"] [data-image-id]');
    return calls.length ? calls[calls.length - 1].dataset.imageId : null;
  });
  assert(rendered, 'render_scene\'s tool line has no image');
  const sel = `#preview-frame #preview-open[data-image-id="${rendered}"] img`;
  await page.waitForFunction((s) => {
    const i = document.querySelector(s);
    return i && i.complete && i.naturalWidth === 400;
  }, sel, { timeout: 30000 });
  eq(await page.locator('#preview').getAttribute('data-view'), 'scene', 'the view');
  // Snow fills the lower middle of the frame: bright, nearly white.
  const rgb = await meanRgb(page, sel, 150, 260, 100, 30);
  assert(Math.min(...rgb) > 150, 'not snow at the bottom of the picture: ' + rgb);
  await shot(page, 'demo-snowman.png');
  noErrors(page);
  await page.context().close();
});

check('/demo optics ends with render_optics\' picture in the Bench view; an edit brings the live bench, whose objects show their fields when clicked; 360 px, both themes', async ({ browser, stack }) => {
  const page = await open(browser, stack, { viewport: { width: 360, height: 740 } });
  eq(await page.locator('#tab-bench').isVisible(), false, 'a Bench tab before any bench');
  await send(page, '/demo optics');
  await runEnds(page, 'completed', DEMO_TIMEOUT);
  const tools = await page.evaluate(() => [...document.querySelectorAll('#messages .tool-call[data-tool]')]
    .map((e) => e.dataset.tool));
  eq(tools.join(' '), 'optics_add optics_add optics_add optics_simulate query_rays render_optics', 'the calls');
  // render_optics' picture, highlights and all, in the Bench view.
  await page.waitForSelector('#preview[data-view="bench"] #bench-panel:not([hidden])');
  await page.waitForSelector('#tab-bench[aria-selected="true"]');
  await page.waitForFunction(() => {
    const i = document.querySelector('#bench-frame #optics-open img');
    return i && i.complete && i.naturalWidth === 800;
  }, null, { timeout: 30000 });
  eq(await page.locator('#scene-panel').isHidden(), true, 'the Scene panel hidden');
  // The person edits the bench: its live preview replaces the picture,
  // with a button over each object.
  await send(page, '/optics_update {"name": "prism", "set": {"refIndex": 1.6}}');
  await runEnds(page);
  await page.waitForFunction(() => {
    const i = document.querySelector('#bench-frame img.live-preview[data-final="true"]');
    return i && i.complete && i.naturalWidth === 800 && document.querySelectorAll('#bench-frame .bench-hit').length === 3;
  }, null, { timeout: 30000 });
  assert(/^Live preview · 3 objects, [\d,]+ ray segments$/.test(await page.locator('#bench-status').textContent()),
    'caption: ' + await page.locator('#bench-status').textContent());
  // At 360 px the picture fits the strip above the conversation, and the
  // prism's button lies on the picture.
  const img = await page.locator('#bench-frame img.live-preview').boundingBox();
  assert(img.x >= 0 && img.x + img.width <= 360, 'the bench overflows: ' + JSON.stringify(img));
  const hit = page.locator('#bench-frame .bench-hit[data-name="prism"]');
  const hb = await hit.boundingBox();
  assert(hb.x >= img.x - 1 && hb.y >= img.y - 1 && hb.x + hb.width <= img.x + img.width + 1 &&
    hb.y + hb.height <= img.y + img.height + 1, 'the prism\'s button is off the picture: ' + JSON.stringify([hb, img]));
  await hit.click();
  await page.waitForSelector('#bench-object:not([hidden]):not([data-loading]) dl');
  eq(await page.locator('#bench-object h3').textContent(), 'prism · Glass', 'the object shown');
  const fields = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#bench-object dt')]
    .map((dt) => [dt.textContent, dt.nextElementSibling.textContent])));
  eq(fields.refIndex, '1.6', 'its refIndex, as the edit left it');
  eq(fields.path, '(200, 100) (400, 100) (200, 300)', 'its outline');
  eq(await hit.getAttribute('aria-pressed'), 'true', 'the button pressed');
  // The tabs: the Scene is there to go to, and back.
  await page.locator('#tab-scene').click();
  await page.waitForSelector('#scene-panel:not([hidden])');
  await page.locator('#tab-bench').click();
  await page.waitForSelector('#bench-panel:not([hidden])');
  if ((await page.locator('html').getAttribute('data-theme')) === 'dark') await page.locator('#theme-toggle').click();
  await shot(page, 'bench-360-light.png');
  await page.locator('#theme-toggle').click();
  await page.waitForSelector('html[data-theme="dark"]');
  await shot(page, 'bench-360-dark.png');
  noErrors(page);
  await page.context().close();
});

check('/demo drawing ends with the picture on the page; the saved piece has its thumbnail; a pen and a finger draw as the mouse does; the PNG export is the picture', async ({ browser, stack }) => {
  const cassette = JSON.parse(fs.readFileSync(path.join(SRCDIR, 'conf/cassettes/drawing.json'), 'utf8'));
  const named = cassette.turns.flatMap((t) => t.parts || [])
    .find((p) => p.type === 'tool_call' && p.name === 'name_piece');
  const page = await open(browser, stack, { hasTouch: true });
  await send(page, '/demo drawing');
  await runEnds(page, 'completed', DEMO_TIMEOUT);
  // The Canvas view shows the harbour, drawn with the pen animation, named
  // and done; the chat has view_canvas's picture in its tool line.
  await page.waitForSelector('#preview[data-view="canvas"] #canvas-panel:not([hidden])');
  // The pen draws about 300 px a second, and the waves are long.
  const t0 = Date.now();
  await page.waitForSelector('#canvas-panel[data-animating="false"]', { timeout: 60000 });
  diag(`the demo's strokes drawn on the page ${Date.now() - t0} ms after the run ended`);
  const drawn = await page.locator('#canvas-strokes g[data-author="agent"]').count();
  assert(drawn >= 10, `only ${drawn} strokes on the page after the demo`);
  const title = await page.locator('#canvas-title').textContent();
  assert(title.startsWith(`Piece 1 “${named.arguments.title}” · plotter · done · `), 'the title: ' + title);
  eq(await page.locator('#messages .tool-call[data-tool="view_canvas"] .tool-images img').count(), 1, 'the picture in the chat');
  await shot(page, 'demo-drawing.png');

  // A new canvas: the harbour goes to the gallery as a thumbnail of all
  // its strokes.
  await page.locator('#canvas-mode').selectOption('paint');
  await page.locator('#canvas-new').click();
  await page.waitForSelector('#canvas-gallery .gallery-item[data-piece="1"] .canvas-thumb');
  await page.waitForFunction(() => document.querySelectorAll('#canvas-strokes g').length === 0);
  eq(await page.locator('#canvas-gallery .gallery-item[data-piece="1"] .canvas-thumb g > g').count(), drawn,
    'the thumbnail\'s strokes');

  // A pen, then a finger, through Chromium's own input pipeline (the
  // DevTools protocol), so that the page gets real pointer events of
  // those types.
  await page.locator('#canvas-draw').click();
  await page.evaluate(() => {
    window.pointerTypes = [];
    document.querySelector('#canvas-svg').addEventListener('pointerdown', (e) => window.pointerTypes.push(e.pointerType));
  });
  const box = await page.locator('#canvas-svg').boundingBox();
  const at = (fx, fy) => ({ x: box.x + box.width * fx, y: box.y + box.height * fy });
  const cdp = await page.context().newCDPSession(page);
  let p = at(0.2, 0.3);
  await cdp.send('Input.dispatchMouseEvent', { type: 'mousePressed', ...p, button: 'left', buttons: 1, clickCount: 1, pointerType: 'pen' });
  for (let i = 1; i <= 8; i++) {
    p = at(0.2 + i * 0.05, 0.3 + i * 0.02);
    await cdp.send('Input.dispatchMouseEvent', { type: 'mouseMoved', ...p, button: 'left', buttons: 1, pointerType: 'pen' });
  }
  await cdp.send('Input.dispatchMouseEvent', { type: 'mouseReleased', ...p, button: 'left', buttons: 0, clickCount: 1, pointerType: 'pen' });
  await page.waitForFunction(() => document.querySelectorAll('#canvas-strokes g[data-author="human"]').length === 1);
  p = at(0.3, 0.7);
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [{ ...p, id: 1 }] });
  for (let i = 1; i <= 8; i++) {
    p = at(0.3 + i * 0.04, 0.7 - i * 0.03);
    await cdp.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: [{ ...p, id: 1 }] });
  }
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  await page.waitForFunction(() => document.querySelectorAll('#canvas-strokes g[data-author="human"]').length === 2);
  eq(JSON.stringify(await page.evaluate(() => window.pointerTypes)), '["pen","touch"]', 'the pointer types');
  // Each kept as a polyline of its moves (canvas units, 800 x 600).
  const ds = await page.locator('#canvas-strokes g[data-author="human"] path').evaluateAll((ps) => ps.map((e) => e.getAttribute('d')));
  for (const d of ds) {
    const n = (d.match(/L/g) || []).length;
    assert(n >= 5, 'a stroke of too few points: ' + d);
  }
  eq(await page.locator('#canvas-strokes .pen-temp').count(), 0, 'temporary strokes left');
  eq(await page.locator('#canvas-title').textContent(), 'Piece 2 · paint · 2 strokes', 'the new piece');

  // The PNG export: an 800 x 600 picture with the strokes on white.
  const [dl] = await Promise.all([page.waitForEvent('download'), page.locator('#canvas-export-png').click()]);
  const png = fs.readFileSync(await dl.path());
  eq(png.subarray(1, 4).toString(), 'PNG', 'the file\'s signature');
  eq(`${png.readUInt32BE(16)}x${png.readUInt32BE(20)}`, '800x600', 'its size');
  const inked = await page.evaluate(async (b64) => {
    const img = new Image();
    img.src = 'data:image/png;base64,' + b64;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = 800;
    c.height = 600;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const px = g.getImageData(0, 0, 800, 600).data;
    let n = 0;
    for (let i = 0; i < px.length; i += 4) if (px[i] < 200 || px[i + 1] < 200 || px[i + 2] < 200) n++;
    return { n, corner: [px[0], px[1], px[2]] };
  }, png.toString('base64'));
  assert(inked.n > 200, `the exported PNG has ${inked.n} inked pixels`);
  eq(JSON.stringify(inked.corner), '[255,255,255]', 'a white corner');
  noErrors(page);
  await page.context().close();
});

/** A slow answer that ends in a tool call, then a turn that a run stopped
 *  in time never asks for. */
async function scriptStoppable(fake) {
  await fake.script([
    { text: SLOW, chunks: 30, delay_ms: 100, tool_calls: [{ name: 'echo', arguments: { text: 'not run' } }] },
    { text: 'This turn must never be asked for.' },
  ]);
}

/** Waits until the answer has begun to stream. */
async function streaming(page) {
  await page.waitForFunction(() => {
    const b = document.querySelector('#messages .msg-assistant.streaming .bubble');
    return b !== null && b.textContent.length > 0;
  });
}

check('stop a run while it streams: the text is cut, "Stopped.", no further model call', async ({ browser, stack, fake }) => {
  // Were the stop ignored, the stream would end in a tool call, then a second turn.
  await scriptStoppable(fake);
  const page = await open(browser, stack);
  const t0 = Date.now();
  await send(page, 'Stream slowly');
  await streaming(page);
  await page.locator('#stop').click();
  const t1 = Date.now();
  const notice = page.locator('#messages .notice[data-kind="cancelled"]');
  await notice.waitFor({ state: 'visible' });
  diag(`"Stopped." ${Date.now() - t1} ms after the click`);
  eq(await notice.textContent(), 'Stopped.', 'the notice');
  await runEnds(page, 'cancelled');
  const cut = page.locator('#messages .msg-assistant.partial .bubble');
  eq(await cut.count(), 1, 'answers marked as cut off');
  const text = await cut.textContent();
  assert(text.length > 0 && text.length < SLOW.length && SLOW.startsWith(text),
    'the cut text is not a proper prefix: ' + JSON.stringify(text));
  eq(await page.locator('#messages .tool-call').count(), 0, 'tool calls shown');
  eq(await page.locator('#send').isVisible(), true, '#send visible after the stop');
  await noFurtherCall(fake, t0 + 30 * 100 + 1500);
  await shot(page, 'stopped-stream.png');
  noErrors(page);
  await page.context().close();
});

check('keyboard: Esc stops a run as Stop does, Shift+Enter is a new line, Up in the empty box brings back the last message', async ({ browser, stack, fake }) => {
  await scriptStoppable(fake);
  const page = await open(browser, stack);
  const t0 = Date.now();
  const input = page.locator('#message-input');
  await input.click();
  await input.type('Stream slowly');
  await input.press('Shift+Enter');
  await input.type('on two lines');
  eq(await input.inputValue(), 'Stream slowly\non two lines', 'Shift+Enter makes a new line');
  await input.press('Enter');
  await streaming(page);
  // While it streams, Esc in the open "/" list closes the list and
  // stops nothing; the next Esc stops the run.
  await input.type('/he');
  await page.locator('#slash-menu').waitFor({ state: 'visible' });
  await input.press('Escape');
  await page.locator('#slash-menu').waitFor({ state: 'hidden' });
  await page.evaluate(() => new Promise((r) => setTimeout(r, 300)));
  eq(await page.locator('body').getAttribute('data-running'), 'true', 'the run after Esc in the list');
  eq(await page.locator('#messages .notice[data-kind="cancelled"]').count(), 0, 'stopped notices after Esc in the list');
  await input.fill('');
  await page.keyboard.press('Escape');
  const notice = page.locator('#messages .notice[data-kind="cancelled"]');
  await notice.waitFor({ state: 'visible' });
  eq(await notice.textContent(), 'Stopped.', 'the notice after Esc');
  await runEnds(page, 'cancelled');
  await noFurtherCall(fake, t0 + 30 * 100 + 1500);
  // Up in the empty box: the last message, caret at its end; not when
  // something is typed already.
  await input.click();
  eq(await input.inputValue(), '', 'the box is empty after sending');
  await input.press('ArrowUp');
  eq(await input.inputValue(), 'Stream slowly\non two lines', 'Up brings back the last message');
  eq(await input.evaluate((e) => e.selectionStart === e.value.length), true, 'the caret at its end');
  await input.fill('something else');
  await input.press('ArrowUp');
  eq(await input.inputValue(), 'something else', 'Up leaves typed text alone');
  // Esc with no run going asks for nothing.
  const cancels = [];
  page.on('request', (r) => { if (/\/cancel$/.test(new URL(r.url()).pathname)) cancels.push(r.url()); });
  await input.fill('');
  await page.keyboard.press('Escape');
  await page.evaluate(() => new Promise((r) => setTimeout(r, 300)));
  eq(cancels.length, 0, 'cancel requests after Esc with no run');
  noErrors(page);
  await page.context().close();
});

check('slash commands: "/" lists the commands and tools, a tool comes with its schema\'s template, a malformed line is caught with the form it needs, /help; both themes', async ({ browser, stack }) => {
  const page = await open(browser, stack);
  const input = page.locator('#message-input');
  const menu = page.locator('#slash-menu');
  await input.click();
  await input.type('/');
  await menu.waitFor({ state: 'visible' });
  await page.waitForSelector('#slash-menu .slash-item[data-name="create_shape"]');
  const names = await page.evaluate(() => [...document.querySelectorAll('#slash-menu .slash-item')].map((e) => e.dataset.name));
  for (const n of ['help', 'demo', 'demo optics', 'demo drawing', 'create_shape', 'render_scene', 'optics_add', 'draw_paths']) {
    assert(names.includes(n), n + ' not listed: ' + names.join(' '));
  }
  eq(await input.getAttribute('aria-expanded'), 'true', 'the box says the list is open');
  // The list fits the window and reads in both themes.
  const mb = await menu.boundingBox();
  assert(mb.y >= 0 && mb.x >= 0 && mb.x + mb.width <= DESKTOP.width, 'the list is off the window: ' + JSON.stringify(mb));
  if ((await page.locator('html').getAttribute('data-theme')) === 'dark') await page.locator('#theme-toggle').click();
  await shot(page, 'slash-menu-light.png');
  await page.locator('#theme-toggle').click();
  await page.waitForSelector('html[data-theme="dark"]');
  // (The click took the focus from the box, which closes the list.)
  await input.fill('');
  await input.type('/');
  await page.waitForSelector('#slash-menu .slash-item[data-name="create_shape"]');
  await shot(page, 'slash-menu-dark.png');
  // Narrowed by what is typed; Enter writes the call with its template,
  // the caret in the first value to fill.
  await input.type('create_s');
  eq(await page.locator('#slash-menu .slash-item[aria-selected="true"]').getAttribute('data-name'), 'create_shape', 'the first match');
  await input.press('Enter');
  await menu.waitFor({ state: 'hidden' });
  const line = await input.inputValue();
  assert(/^\/create_shape \{"id": "", "type": "[a-z]+", .*\}$/.test(line), 'the template: ' + line);
  JSON.parse(line.slice('/create_shape '.length));
  eq(await input.evaluate((e) => e.value.slice(e.selectionStart - 8, e.selectionStart)), '{"id": "', 'the caret in the id');
  await page.keyboard.type('ball');
  // A broken line is not sent: the box keeps it and says the form.
  const posts = [];
  page.on('request', (r) => { if (r.method() === 'POST' && /\/messages$/.test(new URL(r.url()).pathname)) posts.push(r.url()); });
  const good = await input.inputValue();
  await input.fill(good.replace(/\}$/, ''));
  await input.press('Enter');
  await page.waitForSelector('#input-error:not([hidden])');
  const err = await page.locator('#input-error').textContent();
  assert(/^\/create_shape: its arguments are not JSON \(.+\)\. The form is: \/create_shape \{"id": ""/.test(err), 'the message: ' + err);
  eq(await input.inputValue(), good.replace(/\}$/, ''), 'the line kept');
  await input.fill('/create_shap {}');
  await input.press('Enter');
  await waitText(page, '#input-error', 'There is no tool or command /create_shap. Did you mean /create_shape? Type / for the list, or /help.');
  eq(posts.length, 0, 'messages sent for broken lines');
  // The line made right goes, and the shape is made.
  await input.fill(good);
  await input.press('Enter');
  await page.waitForSelector('#messages .tool-call[data-tool="create_shape"][data-state="ok"]');
  eq(await page.locator('#input-error').isHidden(), true, 'the error gone');
  await runEnds(page);
  // Escape closes the list and keeps what is typed (that it stops no
  // run is the keyboard check's).
  await input.type('/he');
  await menu.waitFor({ state: 'visible' });
  await input.press('Escape');
  await menu.waitFor({ state: 'hidden' });
  eq(await input.inputValue(), '/he', 'Escape keeps what is typed');
  // /help: a card with the commands, each plugin's tools and the keys.
  await input.fill('/help');
  await input.press('Enter');
  await page.waitForSelector('#help-card:not([hidden]) h3');
  const heads = await page.evaluate(() => [...document.querySelectorAll('#help-card h3')].map((h) => h.textContent));
  for (const h of ['Commands', 'Tools of the scene plugin', 'Tools of the optics plugin', 'Tools of the canvas plugin', 'Keys']) {
    assert(heads.includes(h), h + ' missing: ' + heads.join(' | '));
  }
  eq(await input.inputValue(), '', 'the box empty after /help');
  eq(posts.length, 1, 'messages sent: the good line only');
  await shot(page, 'help-dark.png');
  // At 360 px: the list within the window, the help card readable.
  await page.setViewportSize({ width: 360, height: 740 });
  await input.fill('');
  await input.type('/cr');
  await page.waitForSelector('#slash-menu .slash-item[data-name="create_shape"]');
  const nb = await menu.boundingBox();
  assert(nb.x >= 0 && nb.x + nb.width <= 360 && nb.y >= 0, 'the list off the window at 360 px: ' + JSON.stringify(nb));
  await shot(page, 'slash-menu-360-dark.png');
  await input.press('Escape');
  await page.locator('#help-close').click();
  await page.waitForSelector('#help-card[hidden]', { state: 'attached' });
  noErrors(page);
  await page.context().close();
});

check('stop a run during a tool call: "Stopped." after the call, no further model call', async ({ browser, stack, fake }) => {
  // atelierd honours a cancel between calls, never in the middle of one
  // (daemon/agent/agent.c): the sleep finishes, then the run ends.
  const SLEEP_MS = 1500;
  await fake.script([
    { text: 'Taking a nap.', tool_calls: [{ name: 'echo_sleep', arguments: { ms: SLEEP_MS } }] },
    { text: 'This turn must never be asked for.' },
  ]);
  const page = await open(browser, stack);
  await send(page, 'Sleep for a while');
  await page.waitForSelector('#messages .tool-call[data-tool="echo_sleep"][data-state="pending"]');
  const t1 = Date.now();
  await page.locator('#stop').click();
  const notice = page.locator('#messages .notice[data-kind="cancelled"]');
  await notice.waitFor({ state: 'visible' });
  diag(`"Stopped." ${Date.now() - t1} ms after the click`);
  eq(await notice.textContent(), 'Stopped.', 'the notice');
  await runEnds(page, 'cancelled');
  const call = page.locator('#messages .tool-call[data-tool="echo_sleep"]');
  assert(await call.getAttribute('data-state') !== 'pending', 'the sleep still shows as running');
  eq(await page.locator('#send').isVisible(), true, '#send visible after the stop');
  await noFurtherCall(fake, Date.now() + 1500);
  await shot(page, 'stopped-tool.png');
  noErrors(page);
  await page.context().close();
});

const LONG = Array.from({ length: 40 }, (_, i) => `word${i + 1}`).join(' ') + '.';

check('reload mid-run: the run goes on streaming after the reload, no text doubled', async ({ browser, stack, fake }) => {
  await fake.script([{ text: LONG, chunks: 40, delay_ms: 80 }]);
  const page = await open(browser, stack);
  await send(page, 'Talk for a while');
  await page.waitForFunction((full) => {
    const b = document.querySelector('#messages .msg-assistant.streaming .bubble');
    return b !== null && b.textContent.length > 0 && b.textContent.length < full.length / 3;
  }, LONG);
  const sid = sessionOf(page);
  assert(sid !== null, 'no session in the URL');
  await page.reload();
  eq(sessionOf(page), sid, 'the session after the reload');
  // Replayed from seq 0 and live again: still running, still streaming.
  const during = await page.waitForFunction((full) => {
    const b = document.querySelector('#messages .msg-assistant.streaming .bubble');
    return b !== null && b.textContent.length > 0 && b.textContent.length < full.length &&
      document.body.dataset.running === 'true' ? b.textContent : false;
  }, LONG);
  const part = await during.jsonValue();
  assert(LONG.startsWith(part), 'the text after the reload is not a prefix: ' + JSON.stringify(part));
  eq(await page.locator('#stop').isVisible(), true, '#stop after the reload');
  await runEnds(page);
  eq(await page.locator('#messages .msg-user').count(), 1, 'user messages');
  eq(await page.locator('#messages .msg-assistant').count(), 1, 'assistant messages');
  eq(await page.locator('#messages .msg-assistant .bubble').textContent(), LONG, 'the final text');
  eq(await page.locator('#messages .run').count(), 1, 'runs');
  await shot(page, 'reloaded.png');
  noErrors(page);
  await page.context().close();
});

const SLOWER = Array.from({ length: 40 }, (_, i) => `part${i + 1}`).join(' ') + '.';

check('queued messages: greyed "queued" while a run goes, again after a reload, normal once their run starts', async ({ browser, stack, fake }) => {
  await fake.script([{ text: SLOWER, chunks: 40, delay_ms: 100 }, { text: 'Second answer.' }]);
  const page = await open(browser, stack);
  await send(page, 'Talk for a while');
  await page.waitForSelector('#messages .msg-assistant.streaming');
  await send(page, 'And then this');
  // Numbered by the daemon: its message.queued came.
  const waiting = page.locator('#pending .msg-user.pending[data-queue-id]');
  await waiting.waitFor({ state: 'visible' });
  for (const when of ['before', 'after']) {
    eq(await waiting.locator('.bubble').textContent(), 'And then this', `the waiting message ${when} the reload`);
    eq(await waiting.locator('.msg-meta').textContent(), 'queued', `its label ${when} the reload`);
    eq(await waiting.locator('.bubble').evaluate((b) => getComputedStyle(b).opacity), '0.6', `greyed ${when} the reload`);
    eq(await page.locator('#messages .msg-user').count(), 1, `user messages in the log ${when} the reload`);
    if (when === 'before') {
      await page.reload();
      await waiting.waitFor({ state: 'visible' }); // drawn again from the replayed events
    }
  }
  await page.waitForFunction(() => document.querySelectorAll('#messages .run[data-state="completed"]').length === 2);
  eq(await page.locator('#pending .msg-user').count(), 0, 'messages still waiting');
  eq(JSON.stringify(await page.locator('#messages .msg-user .bubble').allTextContents()),
    JSON.stringify(['Talk for a while', 'And then this']), 'the user messages, in order');
  noErrors(page);
  await page.context().close();
});

check('switch sessions: each shows its own conversation', async ({ browser, stack, fake }) => {
  await fake.script([{ text: 'Answer in the first session.' }, { text: 'Answer in the second session.' }]);
  const page = await open(browser, stack);
  await send(page, 'Message to the first session');
  await runEnds(page);
  const first = sessionOf(page);
  assert(first !== null, 'no first session');
  await page.waitForSelector(`#session-list .session-item[data-session-id="${first}"].current`);

  await page.locator('#new-session').click();
  await page.waitForFunction((f) => /#s=[0-9a-f]{32}$/.test(location.hash) && !location.hash.endsWith(f), first);
  const second = sessionOf(page);
  await page.waitForSelector(`#session-list .session-item[data-session-id="${second}"].current`);
  eq(await page.locator('#messages .msg').count(), 0, 'messages in the new session');
  await send(page, 'Message to the second session');
  await runEnds(page);
  eq(await page.locator('#messages .msg-assistant .bubble').textContent(), 'Answer in the second session.', 'second answer');

  await page.locator(`#session-list .session-item[data-session-id="${first}"] .session-open`).click();
  await page.waitForFunction((f) => location.hash === '#s=' + f, first);
  await waitText(page, '#messages .msg-assistant .bubble', 'Answer in the first session.');
  await page.waitForSelector(`#session-list .session-item[data-session-id="${first}"].current`);
  const text = await page.locator('#messages').textContent();
  assert(text.includes('Message to the first session'), 'the first message is missing');
  assert(!text.includes('second session'), 'the second session shows in the first: ' + text);
  eq(await page.locator(`#session-list .session-item[data-session-id="${second}"]`).getAttribute('class'),
    'session-item', 'the second item is not current');
  eq(await page.locator(`#session-list .session-item[data-session-id="${first}"] .session-title`).textContent(),
    'Message to the first session', 'the first session\'s title');
  // And back again: the second session's conversation only.
  await page.locator(`#session-list .session-item[data-session-id="${second}"] .session-open`).click();
  await waitText(page, '#messages .msg-assistant .bubble', 'Answer in the second session.');
  assert(!(await page.locator('#messages').textContent()).includes('first session'), 'the first session shows in the second');
  await shot(page, 'sessions.png');
  noErrors(page);
  await page.context().close();
});

const SCRIPT = '<script>window.__pwned=1</script>';
const IMG = '<img src=x onerror="window.__pwned=1">';
const LINK = '[click me](javascript:window.__pwned=1)';
const EVIL = `Injected: ${SCRIPT} and ${IMG} and ${LINK} and [a real link](https://example.invalid/docs).`;
const EVIL_ARG = '<img src=x onerror=window.__pwned=1> <script>window.__pwned=1</script> [x](javascript:window.__pwned=1)';

check('injection: <script>, <img onerror> and javascript: links in text and arguments stay text', async ({ browser, stack, fake }) => {
  await fake.script([
    { text: EVIL, chunks: 4, tool_calls: [{ name: 'echo', arguments: { text: EVIL_ARG } }] },
    { text: 'Final: ' + EVIL },
  ]);
  const page = await open(browser, stack);
  // A request for the injected image's src would show an <img> was made.
  const stray = [];
  page.on('request', (r) => { if (/\/x$/.test(new URL(r.url()).pathname)) stray.push(r.url()); });
  await send(page, 'User text too: ' + SCRIPT + ' ' + IMG + ' ' + LINK);
  await runEnds(page);

  const pwned = () => page.evaluate(() => window.__pwned);
  eq(await pwned(), undefined, 'window.__pwned after rendering');
  const bubbles = page.locator('#messages .msg-assistant .bubble');
  eq(await bubbles.count(), 2, 'assistant bubbles');
  for (const i of [0, 1]) {
    const t = await bubbles.nth(i).innerText();
    for (const s of [SCRIPT, IMG, 'click me', 'javascript:window.__pwned=1'])
      assert(t.includes(s), `bubble ${i} does not show ${JSON.stringify(s)} as text: ${JSON.stringify(t)}`);
  }
  assert((await page.locator('#messages .msg-user .bubble').innerText()).includes(SCRIPT + ' ' + IMG),
    'the user\'s message does not show the strings');

  const call = page.locator('#messages .tool-call[data-tool="echo"]');
  eq(await call.getAttribute('data-state'), 'ok', 'echo state');
  await call.locator('.tool-line').click();
  await call.locator('.tool-details').waitFor({ state: 'visible' });
  const args = await call.locator('.tool-args').innerText();
  assert(args.includes('<img src=x onerror=window.__pwned=1>') && args.includes('<script>window.__pwned=1</script>'),
    'the arguments do not show the strings: ' + args);
  eq(await pwned(), undefined, 'window.__pwned after expanding the details');

  // No element the model could have made: scripts, images, handlers, links.
  const dom = await page.evaluate(() => {
    const inLog = document.getElementById('messages');
    const handlers = [...inLog.querySelectorAll('*')].filter((e) =>
      [...e.attributes].some((a) => a.name.startsWith('on') || a.name === 'style' || a.name === 'srcdoc'));
    return {
      scripts: inLog.querySelectorAll('script, iframe, object, embed, svg').length,
      imgs: [...inLog.querySelectorAll('img')].map((i) => i.getAttribute('src')),
      handlers: handlers.map((e) => e.outerHTML.slice(0, 80)),
      jsLinks: [...document.querySelectorAll('a[href]')].filter((a) => !/^https?:$/.test(new URL(a.href, location.href).protocol)).map((a) => a.getAttribute('href')),
      links: [...inLog.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')),
    };
  });
  eq(dom.scripts, 0, 'script-like elements in the conversation');
  eq(dom.imgs.length, 0, 'images in the conversation: ' + JSON.stringify(dom.imgs));
  eq(dom.handlers.length, 0, 'elements with handler/style attributes: ' + JSON.stringify(dom.handlers));
  eq(dom.jsLinks.length, 0, 'non-http links: ' + JSON.stringify(dom.jsLinks));
  // The real link proves links are made at all, so the missing one was refused.
  eq(JSON.stringify(dom.links), JSON.stringify(['https://example.invalid/docs', 'https://example.invalid/docs']),
    'the links in the conversation');

  // Clicking the words of the javascript: link (text, not a link) does nothing.
  for (const handle of await page.locator('#messages .msg-assistant .bubble').all())
    await handle.getByText('click me', { exact: false }).first().click();
  eq(await pwned(), undefined, 'window.__pwned after clicking');
  eq(await page.locator('body').getAttribute('data-running'), 'false', 'the page is still there');
  eq(stray.length, 0, 'requests for the injected image: ' + stray.join(', '));
  await shot(page, 'injection.png');
  noErrors(page);
  await page.context().close();
});

// Code points that are emoji or pictographs: no machine is sure to have a
// font for them (Debian's chromium draws an empty box without
// fonts-noto-color-emoji).
const PICTOGRAPHS = [[0x2300, 0x23ff], [0x2600, 0x27bf], [0x2b00, 0x2bff], [0x1f000, 0x1faff]];

check('icons are drawn by the page: nothing it shows needs an emoji font, every character it shows has a font here, in both themes', async ({ browser, stack, fake }) => {
  const turns = [
    { text: 'Adding a sphere.', tool_calls: [{ name: 'create_shape', arguments: {
      id: 'glyph_ball', type: 'sphere', properties: { center: [0, 1, 0], radius: 1 } } }] },
    { tool_calls: [{ name: 'create_shape', arguments: {
      id: 'bad_ball', type: 'sphere', properties: { center: [0, 0, 0], radius: -1 } } }] },
    { text: 'Done, one refused.' },
  ];
  await fake.script([...turns, ...turns]);
  for (const colorScheme of ['light', 'dark']) {
    const page = await open(browser, stack, { colorScheme });
    await send(page, 'A sphere and a broken one');
    await runEnds(page);
    // Every character on the page, and every one a stylesheet adds.
    const text = await page.evaluate(() => {
      let t = document.body.innerText;
      for (const e of document.querySelectorAll('*')) {
        for (const pseudo of ['::before', '::after']) {
          const c = getComputedStyle(e, pseudo).content;
          if (c && c !== 'none' && c !== 'normal') t += c;
        }
      }
      return t;
    });
    const odd = [...new Set([...text].filter((ch) => ch.codePointAt(0) > 0x7e))];
    for (const ch of odd) {
      const cp = ch.codePointAt(0);
      assert(!PICTOGRAPHS.some(([a, b]) => cp >= a && cp <= b),
        `the page shows U+${cp.toString(16).toUpperCase()} (${ch}), a pictograph that needs an emoji font`);
      const fonts = await new Promise((resolve, reject) => {
        const p = spawn('fc-list', [`:charset=${cp.toString(16)}`, 'family']);
        let out = '';
        p.stdout.on('data', (d) => { out += d; });
        p.on('close', () => resolve(out.trim()));
        p.on('error', () => reject(new Failure('fc-list could not run: apt-get install fontconfig')));
      });
      assert(fonts !== '', `no font on this machine has U+${cp.toString(16).toUpperCase()} (${ch}), which the page shows`);
    }
    diag(`${colorScheme}: the page's characters beyond ASCII: ${odd.join(' ') || '(none)'}`);
    // The icons are there, painted in the text's colour, and visible.
    await page.waitForSelector('.session-delete .icon-trash'); // the list comes a moment later
    const icons = await page.evaluate(() => [...document.querySelectorAll('.icon')]
      .filter((e) => e.offsetParent !== null)
      .map((e) => {
        const cs = getComputedStyle(e);
        const r = e.getBoundingClientRect();
        return { cls: e.className, text: e.textContent, mask: cs.maskImage || cs.webkitMaskImage,
          color: cs.backgroundColor, w: r.width, h: r.height };
      }));
    for (const name of ['icon-done', 'icon-failed', 'icon-moon', 'icon-sun', 'icon-trash']) {
      if (name === (colorScheme === 'dark' ? 'icon-moon' : 'icon-sun')) continue; // one theme button
      assert(icons.some((i) => i.cls.includes(name)), `no visible ${name}: ${JSON.stringify(icons.map((i) => i.cls))}`);
    }
    // Each drawing is an SVG the browser decodes, at a real size.
    const drawings = await page.evaluate(async () => {
      const urls = new Set();
      for (const e of document.querySelectorAll('.icon')) {
        const cs = getComputedStyle(e);
        const m = /^url\("(.*)"\)$/.exec(cs.maskImage || cs.webkitMaskImage);
        if (m) urls.add(m[1]);
      }
      const out = [];
      for (const u of urls) {
        const img = new Image();
        img.src = u;
        try {
          await img.decode();
          out.push({ u: u.slice(0, 60), w: img.naturalWidth, h: img.naturalHeight });
        } catch (e) {
          out.push({ u: u.slice(0, 60), w: 0, h: 0 });
        }
      }
      return out;
    });
    assert(drawings.length >= 5, 'icon drawings found: ' + drawings.length);
    for (const dr of drawings) assert(dr.w > 0 && dr.h > 0, 'an icon drawing that does not decode: ' + JSON.stringify(dr));
    for (const i of icons) {
      assert(i.text === '', `an icon holds text: ${JSON.stringify(i)}`);
      assert(/^url\("data:image\/svg\+xml/.test(i.mask), `an icon without its drawing: ${JSON.stringify(i)}`);
      assert(i.w >= 10 && i.h >= 10, `an icon too small to see: ${JSON.stringify(i)}`);
      assert(!/rgba\(\d+, \d+, \d+, 0\)|transparent/.test(i.color), `an icon painted in no colour: ${JSON.stringify(i)}`);
    }
    await shot(page, `icons-${colorScheme}.png`);
    // The theme button shows the other theme's icon, and swaps it on a click.
    const themeIcon = () => page.locator('#theme-toggle .icon').getAttribute('class');
    eq(await themeIcon(), colorScheme === 'dark' ? 'icon icon-sun' : 'icon icon-moon', 'the theme button');
    await page.locator('#theme-toggle').click();
    eq(await themeIcon(), colorScheme === 'dark' ? 'icon icon-moon' : 'icon icon-sun', 'the theme button after a click');
    noErrors(page);
    await page.context().close();
  }
});

check('offline: the banner says why once, and what works meanwhile once', async ({ browser, stack }) => {
  const page = await newPage(browser);
  const why = 'No LLM provider is configured, so I cannot think for myself yet. Set ANTHROPIC_API_KEY ' +
    'in atelierd\'s environment. Meanwhile, a message like /create_shape {} calls a tool directly, ' +
    'and /demo replays a recorded session.';
  await page.route('**/api/models', (r) => r.fulfill({ status: 200, contentType: 'application/json',
    body: JSON.stringify({ offline: true, models: [], provider: null, why }) }));
  await page.goto(stack.url);
  await page.waitForSelector('#offline-banner:not([hidden])');
  const banner = await page.locator('#offline-banner').textContent();
  eq((banner.match(/no LLM provider is configured/gi) || []).length, 1, 'the reason said once: ' + banner);
  eq(banner.split('/demo').length - 1, 1, '/demo said once: ' + banner);
  assert(banner.startsWith('Offline mode: '), 'the banner: ' + banner);
  // The welcome view: each plugin's examples, and offline the demos first.
  await page.waitForSelector('.welcome-plugin[data-plugin="optics"]:not([hidden])');
  const sections = await page.evaluate(() => [...document.querySelectorAll('#welcome > *')]
    .filter((e) => !e.hidden && getComputedStyle(e).display !== 'none')
    .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)
    .map((e) => e.dataset.plugin || e.className || e.tagName));
  eq(sections.join(' '), 'H2 welcome-demos P scene optics canvas', 'the welcome view, top to bottom');
  await page.locator('.example', { hasText: 'glass prism' }).click();
  assert(/^Put a glass prism/.test(await page.locator('#message-input').inputValue()), 'an example fills the box');
  await shot(page, 'welcome-offline.png');
  // At 360 px, in both themes, the demos are first and within the window.
  await page.setViewportSize({ width: 360, height: 740 });
  for (const theme of ['light', 'dark']) {
    // (No data-theme yet means the system's: a click sets the other one.)
    for (let k = 0; k < 2 && (await page.locator('html').getAttribute('data-theme')) !== theme; k++) {
      await page.locator('#theme-toggle').click();
    }
    await page.waitForSelector(`html[data-theme="${theme}"]`);
    const db = await page.locator('.demo', { hasText: 'A harbour' }).boundingBox();
    assert(db.x >= 0 && db.x + db.width <= 360 && db.y + db.height <= 740, 'a demo button off the window: ' + JSON.stringify(db));
    await shot(page, `welcome-offline-360-${theme}.png`);
  }
  await page.setViewportSize(DESKTOP);
  // A demo button starts its demo at once.
  await page.locator('.demo', { hasText: 'A prism' }).click();
  await waitText(page, '#messages .msg-user .bubble', '/demo optics');
  await runEnds(page, 'completed', DEMO_TIMEOUT);
  await page.waitForSelector('#preview[data-view="bench"]');
  // A reason that does not say what works meanwhile gets the page's hint.
  await page.unroute('**/api/models');
  await page.route('**/api/models', (r) => r.fulfill({ status: 200, contentType: 'application/json',
    body: JSON.stringify({ offline: true, models: [], provider: null, why: 'The key was refused.' }) }));
  await page.reload();
  await page.waitForFunction(() => /refused/.test(document.getElementById('offline-banner').textContent));
  const second = await page.locator('#offline-banner').textContent();
  assert(/\/demo/.test(second) && second.split('/demo').length - 1 === 1, 'the hint once: ' + second);
  noErrors(page);
  await page.context().close();
});

check('360 px wide: the input and the send button are visible and usable', async ({ browser, stack, fake }) => {
  await fake.script([{ text: 'Small screens work too.' }]);
  const page = await open(browser, stack, { viewport: { width: 360, height: 740 } });
  const within = async (sel) => {
    const box = await page.locator(sel).boundingBox();
    assert(box !== null, sel + ' has no box');
    assert(box.x >= 0 && box.y >= 0 && box.x + box.width <= 360 + 0.5 && box.y + box.height <= 740 + 0.5,
      `${sel} is outside the 360x740 viewport: ${JSON.stringify(box)}`);
    assert(box.width >= 24 && box.height >= 24, `${sel} is too small to use: ${JSON.stringify(box)}`);
  };
  await page.locator('#message-input').waitFor({ state: 'visible' });
  await page.locator('#send').waitFor({ state: 'visible' });
  await within('#message-input');
  await within('#send');
  eq(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), true,
    'no horizontal scrolling');
  // The sidebar stays out of the way until its toggle is pressed; the
  // toggle's icon is drawn.
  await page.locator('#sidebar-toggle').waitFor({ state: 'visible' });
  const menu = await page.locator('#sidebar-toggle .icon-menu').boundingBox();
  assert(menu !== null && menu.width >= 10, 'the menu icon: ' + JSON.stringify(menu));
  await page.locator('#message-input').fill('Hello from a phone');
  await page.locator('#send').click(); // the button, not Enter: a tap
  await runEnds(page);
  eq(await page.locator('#messages .msg-assistant .bubble').textContent(), 'Small screens work too.', 'the answer');
  await within('#message-input');
  await shot(page, 'mobile-360.png');
  await page.locator('#sidebar-toggle').click();
  await page.waitForSelector('body[data-sidebar="open"]');
  await page.locator('#new-session').waitFor({ state: 'visible' });
  await shot(page, 'mobile-360-sidebar.png');
  noErrors(page);
  await page.context().close();
});

check('screenshots: light and dark theme, desktop size', async ({ browser, stack, shared }) => {
  assert(shared.toolSession, 'needs the session of the tool-call check');
  const page = await newPage(browser, DESKTOP, { colorScheme: 'light' });
  await page.goto(`${stack.url}#s=${shared.toolSession}`);
  await page.waitForSelector('#messages .run[data-state="completed"]');
  await page.locator('#messages .tool-call[data-tool="update_shape"] .tool-line').click();
  await page.locator('#messages .tool-call[data-state="failed"] .tool-line').click();
  await page.waitForSelector('#messages .tool-call[data-state="failed"] .tool-error-text');
  const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const lum = (c) => c.match(/[\d.]+/g).slice(0, 3).map(Number).reduce((a, b) => a + b, 0) / 3;
  if ((await page.locator('html').getAttribute('data-theme')) === 'dark') await page.locator('#theme-toggle').click();
  await page.waitForFunction(() => document.documentElement.dataset.theme !== 'dark');
  const light = await bg();
  assert(lum(light) > 160, 'the light theme is not light: ' + light);
  const files = [await shot(page, 'desktop-light.png')];
  await page.locator('#theme-toggle').click();
  await page.waitForSelector('html[data-theme="dark"]');
  await page.waitForFunction((l) => getComputedStyle(document.body).backgroundColor !== l, light);
  const dark = await bg();
  assert(lum(dark) < 90, 'the dark theme is not dark: ' + dark);
  files.push(await shot(page, 'desktop-dark.png'));
  // The choice is kept across a reload.
  await page.reload();
  await page.waitForSelector('html[data-theme="dark"]');
  for (const f of files) assert(fs.statSync(f).size > 10000, 'a small screenshot: ' + f);
  diag('screenshots in ' + OUTDIR);
  noErrors(page);
  await page.context().close();
});

// The token, other origins and DNS rebinding (issue 17).
const { hostileChecks } = await import('./hostile.mjs');
for (const c of hostileChecks({ assert, eq, newPage, open, send, runEnds, noErrors })) check(c.name, c.fn);

// ---------------------------------------------------------------- main

let stopping = false;
async function cleanup() {
  if (stopping) return;
  stopping = true;
  for (const p of procs.slice().reverse()) await stopProc(p).catch(() => {});
  fs.rmSync(TMP, { recursive: true, force: true });
}

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, async () => {
    await cleanup();
    process.exit(1);
  });
}

async function main() {
  const started = Date.now();
  let passed = 0;
  let failed = 0;
  let browser = null;
  const fake = new Fake();
  const stack = new Stack();
  try {
    fs.mkdirSync(OUTDIR, { recursive: true });
    await fake.start();
    await stack.start(fake.url);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      // rebind.test is a DNS-rebinding attacker's name, now 127.0.0.1.
      // Chromium's Private Network Access checks would stop the attacker's
      // requests before they reach the stack; other browsers (Firefox,
      // Safari) have none, so the stack must stand without them.
      args: ['--host-resolver-rules=MAP rebind.test 127.0.0.1',
        '--disable-features=BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,' +
          'PrivateNetworkAccessRespectPreflightResults,PrivateNetworkAccessForNavigations,' +
          'LocalNetworkAccessChecks',
        ...(process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [])],
    });
    diag(`chromium ${browser.version()}, stack at ${stack.url}, fake at ${fake.url} ` +
      `(set up in ${Date.now() - started} ms)`);
  } catch (e) {
    log('not ok 1 - set up the fake provider, the stack and chromium');
    diag(e.stack || e.message);
    if (stack.data) diag(stack.logs());
    log('0 passed, 1 failed');
    if (browser) await browser.close().catch(() => {});
    await cleanup();
    process.exit(1);
  }
  const shared = {};
  for (const [i, c] of checks.entries()) {
    if (ONLY && !ONLY.test(c.name)) continue;
    const t0 = Date.now();
    try {
      await c.fn({ browser, stack, fake, shared });
      passed++;
      log(`ok ${i + 1} - ${c.name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failed++;
      log(`not ok ${i + 1} - ${c.name}`);
      diag(e instanceof Failure ? e.message : e.stack || e.message);
      // The state of every page still open, for the reader.
      for (const ctx of browser.contexts()) {
        for (const [j, p] of ctx.pages().entries()) {
          const f = await shot(p, `FAILED-${i + 1}-${j}.png`).catch(() => null);
          if (f) diag('screenshot: ' + f);
          if (p.errors && p.errors.length) diag('page errors:\n' + p.errors.join('\n'));
        }
        await ctx.close().catch(() => {});
      }
      diag(stack.logs());
    }
  }
  const t2 = Date.now();
  await browser.close().catch(() => {});
  await cleanup();
  diag(`stopped in ${Date.now() - t2} ms`);
  diag(`${checks.length} checks in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  log(`${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
}

main().catch(async (e) => {
  log('not ok - the test itself failed');
  diag(e.stack || e.message);
  await cleanup();
  log('0 passed, 1 failed');
  process.exit(1);
});
