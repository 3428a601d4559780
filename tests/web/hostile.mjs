// The checks of browser.test.mjs that play the other side: the token of
// the link, and web pages of other origins that try to read or drive the
// API of a browser that is logged in (issue 17). Every attempt is judged
// by the daemon's state afterwards, read through the API with the token,
// not by what the attacking page believes happened.
//
// hostileChecks(h) returns [{name, fn}] for browser.test.mjs to run; h
// holds that file's helpers (assert, eq, newPage, open, send, runEnds,
// noErrors).

import http from 'node:http';

// The attacker's page. Query: target (the stack's origin), sid (a session
// the attacker is assumed to know), img (an image id). It records what it
// could see in window.done.
const HOSTILE_JS = String.raw`
const q = new URLSearchParams(location.search);
const T = q.get('target'), S = q.get('sid'), IMG = q.get('img');
const out = {};
const settle = (p, ms = 5000) =>
  Promise.race([p, new Promise((r) => setTimeout(() => r('timeout'), ms))]);
async function tryFetch(name, url, init) {
  try {
    const r = await fetch(url, init);
    let body = '';
    try { body = await r.text(); } catch (e) { body = 'unreadable'; }
    out[name] = { type: r.type, status: r.status, body: body.slice(0, 300) };
  } catch (e) {
    out[name] = { error: String(e) };
  }
}
function form(name, action, enctype, fields) {
  return new Promise((resolve) => {
    const f = document.createElement('iframe');
    f.name = 'f_' + name;
    document.body.appendChild(f);
    const fm = document.createElement('form');
    fm.method = 'POST';
    fm.action = action;
    fm.enctype = enctype;
    fm.target = f.name;
    for (const [k, v] of Object.entries(fields)) {
      const i = document.createElement('input');
      i.name = k;
      i.value = v;
      fm.appendChild(i);
    }
    document.body.appendChild(fm);
    f.onload = () => { out[name] = 'submitted'; resolve(); };
    fm.submit();
  });
}
async function main() {
  const api = T + '/api';
  const sess = api + '/sessions/' + S;
  const msg = JSON.stringify({ text: 'pwned' });
  const cred = { credentials: 'include' };
  const nc = { credentials: 'include', mode: 'no-cors' };
  const tasks = [
    tryFetch('list_cors', api + '/sessions', cred),
    tryFetch('list_nocors', api + '/sessions', nc),
    tryFetch('get_nocors', sess, nc),
    tryFetch('create_nocors_text', api + '/sessions', { ...nc, method: 'POST', body: '{}' }),
    tryFetch('create_nocors_blob', api + '/sessions',
      { ...nc, method: 'POST', body: new Blob(['{}'], { type: 'application/json' }) }),
    tryFetch('create_nocors_empty', api + '/sessions', { ...nc, method: 'POST' }),
    tryFetch('create_cors_json', api + '/sessions',
      { ...cred, method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' }),
    tryFetch('send_nocors_blob', sess + '/messages',
      { ...nc, method: 'POST', body: new Blob([msg], { type: 'application/json' }) }),
    tryFetch('send_nocors_text', sess + '/messages', { ...nc, method: 'POST', body: msg }),
    tryFetch('tool_nocors', sess + '/tools/echo', { ...nc, method: 'POST', body: '{"text":"pwned"}' }),
    tryFetch('cancel_nocors', sess + '/cancel', { ...nc, method: 'POST' }),
    tryFetch('delete_cors', sess, { ...cred, method: 'DELETE' }),
    tryFetch('delete_nocors', sess, { ...nc, method: 'DELETE' }),
    form('form_create_urlencoded', api + '/sessions', 'application/x-www-form-urlencoded', {}),
    form('form_create_text', api + '/sessions', 'text/plain', {}),
    form('form_create_multipart', api + '/sessions', 'multipart/form-data', { model: 'fake-model' }),
    // text/plain with a field that makes the body valid JSON:
    // {"text": "pwned", "x="}
    form('form_send_text', sess + '/messages', 'text/plain', { '{"text": "pwned", "x': '"}' }),
    form('form_send_urlencoded', sess + '/messages', 'application/x-www-form-urlencoded', { text: 'pwned' }),
    form('form_send_multipart', sess + '/messages', 'multipart/form-data', { text: 'pwned' }),
    form('form_cancel_text', sess + '/cancel', 'text/plain', {}),
    form('form_cancel_urlencoded', sess + '/cancel', 'application/x-www-form-urlencoded', {}),
    form('form_tool_text', sess + '/tools/echo', 'text/plain', { '{"text": "pwned", "x': '"}' }),
    new Promise((resolve) => {
      out.beacon_send = navigator.sendBeacon(sess + '/messages', msg);
      out.beacon_cancel = navigator.sendBeacon(sess + '/cancel');
      resolve();
    }),
    new Promise((resolve) => {
      const es = new EventSource(sess + '/events', { withCredentials: true });
      out.events = [];
      const got = (e) => out.events.push(String(e.data).slice(0, 80));
      es.onmessage = got;
      es.addEventListener('session.created', got);
      es.onerror = () => { out.events_state = es.readyState; es.close(); resolve(); };
    }),
    new Promise((resolve) => {
      const i = new Image();
      i.onload = () => { out.img = 'loaded ' + i.naturalWidth; resolve(); };
      i.onerror = () => { out.img = 'error'; resolve(); };
      i.src = api + '/images/' + IMG + '.png';
    }),
  ];
  await Promise.all(tasks.map((t) => settle(t)));
  window.done = out;
}
main();
`;

const HOSTILE_HTML = `<!doctype html><title>a page of another origin</title>
<body><h1>Nothing to see</h1><script>${HOSTILE_JS}</script></body>`;

// The page a DNS-rebinding attacker serves under its own name, which then
// resolves to 127.0.0.1: to the browser, the API is then same-origin.
const REBIND_JS = String.raw`
const out = {};
async function tryFetch(name, url, init) {
  try {
    const r = await fetch(url, init);
    out[name] = { status: r.status, body: (await r.text()).slice(0, 300) };
  } catch (e) {
    out[name] = { error: String(e) };
  }
}
(async () => {
  await tryFetch('list', '/api/sessions');
  await tryFetch('health', '/api/health');
  await tryFetch('create', '/api/sessions',
    { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  await tryFetch('page', '/index.html');
  window.done = out;
})();
`;

/** A server for the attacker's page on another loopback port. */
function hostileServer() {
  return new Promise((resolve, reject) => {
    const srv = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(HOSTILE_HTML);
    });
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => resolve(srv));
  });
}

/** The API as a script with the token uses it. */
async function apiCall(stack, method, p, body) {
  const headers = { Accept: 'application/json' };
  if (stack.token) headers.Authorization = 'Bearer ' + stack.token;
  const init = { method, headers };
  if (method === 'POST') {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body === undefined ? {} : body);
  }
  const r = await fetch(stack.base + '/api' + p, init);
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

/** What the attacks must not change: the sessions, as the owner sees them. */
async function snapshot(stack) {
  const list = await apiCall(stack, 'GET', '/sessions');
  if (list.status !== 200) throw new Error('GET /api/sessions with the token: ' + list.status);
  return { ids: list.body.map((s) => s.id).sort() };
}

export function hostileChecks(h) {
  const { assert, eq, newPage, open, send, runEnds, noErrors } = h;
  const checks = [];
  const check = (name, fn) => checks.push({ name, fn });
  // Chromium logs every refused request as a console error.
  const REFUSED = [/status of (401|403|415|421)/, /Failed to load resource/, /net::ERR_/,
    /blocked by CORS policy/, /EventSource/];

  check('the link with ?token= logs the page in: an HttpOnly, SameSite=Strict cookie, and the token leaves the URL',
    async ({ browser, stack }) => {
      assert(stack.token && /^[0-9a-f]{64}$/.test(stack.token),
        'atelier-stack printed no token in its link: ' + stack.url);
      const page = await open(browser, stack);
      assert(!page.url().includes('token'), 'the token is still in the address bar: ' + page.url());
      const cookies = await page.context().cookies(stack.base);
      const c = cookies.find((x) => x.value === stack.token);
      assert(c, 'no cookie holds the token: ' + JSON.stringify(cookies.map((x) => x.name)));
      eq(c.httpOnly, true, 'the cookie is HttpOnly');
      eq(c.sameSite, 'Strict', 'the cookie is SameSite');
      eq(c.path, '/', 'the cookie path');
      eq(await page.evaluate(() => document.cookie.includes('atelier')), false,
        'scripts can read the cookie');
      // The cookie alone is enough from now on.
      await page.reload();
      await page.waitForSelector('#model-select:not([disabled])');
      eq(await page.locator('#login').isVisible(), false, '#login after a reload');
      noErrors(page);
      await page.context().close();
    });

  check('without the token (or with a wrong one) the page says how to get in',
    async ({ browser, stack }) => {
      for (const url of [stack.base + '/', stack.base + '/?token=' + '0'.repeat(64)]) {
        const page = await newPage(browser);
        await page.goto(url);
        await page.locator('#login').waitFor({ state: 'visible' });
        const text = await page.locator('#login').textContent();
        assert(text.includes('?token=') && text.includes('bootstrap run'), 'the login text: ' + text);
        eq(await page.locator('.layout').isVisible(), false, 'the chat is hidden');
        assert(!page.url().includes('token='), 'the token stays in the URL: ' + page.url());
        if (url.includes('token=')) {
          assert(/not this server's/.test(await page.locator('#login-reason').textContent()),
            'a wrong token is not named as such');
        }
        noErrors(page, REFUSED);
        await page.context().close();
      }
    });

  check('pages of another origin (same site and cross-site) can neither read nor change anything',
    async ({ browser, stack, fake }) => {
      const srv = await hostileServer();
      const hport = srv.address().port;
      try {
        // The owner is logged in (the cookie is in this browser context)
        // and a run is going on, so that a cancel would show.
        // (Model calls of about a second each: each must stay well within
        // the provider's 5 s timeout on a busy machine.)
        const slow = (t) => ({ text: t, chunks: 4, delay_ms: 200,
          tool_calls: [{ name: 'echo', arguments: { text: t } }] });
        await fake.script([slow('One.'), slow('Two.'), slow('Three.'), slow('Four.'),
          { text: 'A slow answer that nobody stopped.' }]);
        const owner = await open(browser, stack);
        await send(owner, 'Take your time');
        await owner.waitForSelector('body[data-running="true"]');
        const sid = /#s=([0-9a-f]{32})$/.exec(owner.url())[1];
        const img = await apiCall(stack, 'POST', `/sessions/${sid}/tools/echo_image`, { width: 4, height: 4 });
        eq(img.status, 200, 'echo_image with the token');
        const imgId = img.body.images[0].id;
        const before = await snapshot(stack);
        for (const origin of [`http://127.0.0.1:${hport}`, `http://localhost:${hport}`]) {
          const page = await owner.context().newPage();
          const q = new URLSearchParams({ target: stack.base, sid, img: imgId });
          await page.goto(`${origin}/?${q}`);
          await page.waitForFunction(() => window.done, null, { timeout: 30000 });
          const out = await page.evaluate(() => window.done);
          for (const k of ['list_cors', 'create_cors_json', 'delete_cors', 'delete_nocors']) {
            assert(out[k] && out[k].error, `${origin}: ${k} was answered: ${JSON.stringify(out[k])}`);
          }
          for (const k of ['list_nocors', 'get_nocors', 'create_nocors_text', 'create_nocors_blob']) {
            assert(out[k] && (out[k].error || (out[k].type === 'opaque' && out[k].body === '')),
              `${origin}: ${k} could be read: ${JSON.stringify(out[k])}`);
          }
          eq(out.events.length, 0, `${origin}: events read through EventSource`);
          eq(out.img, 'error', `${origin}: the image loaded`);
          await page.close();
        }
        // The run was not cancelled, and nothing was added or deleted.
        await runEnds(owner, 'completed');
        await new Promise((r) => setTimeout(r, 500)); // anything queued would have started
        const after = await snapshot(stack);
        eq(JSON.stringify(after.ids), JSON.stringify(before.ids), 'the sessions');
        const s = await apiCall(stack, 'GET', `/sessions/${sid}`);
        eq(s.status, 200, 'the session still exists');
        assert(!JSON.stringify(s.body).includes('pwned'), 'the attacker\'s text reached the session');
        const asked = JSON.stringify(await fake.requests());
        assert(!asked.includes('pwned'), 'the attacker\'s text reached the model');
        await owner.context().close();
      } finally {
        srv.close();
      }
    });

  check('a DNS-rebinding page (rebind.test -> 127.0.0.1) gets nothing', async ({ browser, stack }) => {
    const port = new URL(stack.base).port;
    const before = await snapshot(stack);
    // The owner's cookie is in this context too; it is not rebind.test's.
    const owner = await open(browser, stack);
    const page = await owner.context().newPage();
    // Before the rebinding, the attacker's server gave the page; the
    // browser then asks 127.0.0.1 under the attacker's name.
    await page.route(`http://rebind.test:${port}/`, (r) =>
      r.fulfill({ contentType: 'text/html', body: `<!doctype html><script>${REBIND_JS}</script>` }));
    await page.goto(`http://rebind.test:${port}/`);
    await page.waitForFunction(() => window.done, null, { timeout: 20000 });
    const out = await page.evaluate(() => window.done);
    for (const k of ['list', 'health', 'create', 'page']) {
      assert(out[k] && out[k].error, `rebind.test: ${k} was answered: ${JSON.stringify(out[k])}`);
    }
    // And straight to it: nginx closes the connection (444).
    await page.unroute(`http://rebind.test:${port}/`);
    let refused = null;
    await page.goto(`http://rebind.test:${port}/api/sessions`).catch((e) => { refused = e.message; });
    assert(refused && /ERR_EMPTY_RESPONSE/.test(refused), 'the rebinding Host got an answer: ' + refused);
    const after = await snapshot(stack);
    eq(JSON.stringify(after.ids), JSON.stringify(before.ids), 'the sessions');
    await owner.context().close();
  });

  return checks;
}
