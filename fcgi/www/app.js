// The page's entry module: wires the controls to the API, keeps the current
// session in the URL hash (#s=<id>) so a reload returns to it, and feeds
// the session's events to the ChatView. Everything drawn in the
// conversation comes from events (render.js); this file only handles the
// chrome around it: sessions, models, input, preview, theme, connection.

import { api, ApiError, isSessionId } from './api.js';
import { EventStream } from './stream.js';
import { ChatView, imageButton } from './render.js';
import { CanvasView } from './canvas.js';
import { SceneView } from './scene.js';
import { benchOverlay, objectOf, showObject } from './bench.js';
import { SlashMenu, checkLine, helpContent } from './slash.js';
import { Filmstrip } from './filmstrip.js';
import { el, clear, icon } from './dom.js';

const $ = (id) => document.getElementById(id);
const els = {
  body: document.body,
  input: $('message-input'),
  form: $('composer'),
  send: $('send'),
  stop: $('stop'),
  inputError: $('input-error'),
  model: $('model-select'),
  conn: $('conn-status'),
  theme: $('theme-toggle'),
  offline: $('offline-banner'),
  daemon: $('daemon-banner'),
  sidebarToggle: $('sidebar-toggle'),
  newSession: $('new-session'),
  sessionList: $('session-list'),
  sessionEmpty: $('session-list-empty'),
  welcome: $('welcome'),
  messages: $('messages'),
  pending: $('pending'),
  scroll: $('chat-scroll'),
  preview: $('preview'),
  previewFrame: $('preview-frame'),
  previewProgress: $('preview-progress'),
  previewStatus: $('preview-status'),
  previewQuality: $('preview-quality'),
  tabScene: $('tab-scene'),
  tabBench: $('tab-bench'),
  tabCanvas: $('tab-canvas'),
  scenePanel: $('scene-panel'),
  benchPanel: $('bench-panel'),
  canvasPanel: $('canvas-panel'),
  benchObject: $('bench-object'),
  viewer: $('image-viewer'),
  viewerImg: $('image-viewer-img'),
  viewerLink: $('image-viewer-link'),
  viewerClose: $('image-viewer-close'),
  login: $('login'),
  loginReason: $('login-reason'),
  loginExample: $('login-example'),
};

const state = {
  sessionId: null,
  stream: null,
  openToken: 0, // bumps on every switch, so a slow answer for an old one is dropped
  active: false,
  sending: false,
  healthTimer: null,
  listTimer: null,
  viewChosen: false, // the person picked a workspace view since the session opened
  tools: null, // the daemon's tools (tool.list), for "/" and /help; null until loaded
};

// localStorage may be unavailable (private modes, disabled storage): the
// page then simply forgets between loads.
const store = {
  get(k) {
    try { return localStorage.getItem(k); } catch { return null; }
  },
  set(k, v) {
    try { localStorage.setItem(k, v); } catch { /* forget it */ }
  },
};

const errorText = (e) => (e instanceof ApiError || e instanceof Error ? e.message : String(e));

// ---- the conversation ----

const view = new ChatView({
  root: els.messages,
  pending: els.pending,
  scroller: els.scroll,
  hooks: {
    onRunState: setActive,
    // render_optics' pictures are the bench's; every other tool's (but
    // the canvas tools', which render.js keeps) the scene's.
    onImage: (id, seq, tool, final) => {
      const isBench = tool === 'render_optics';
      (isBench ? bench : scene).showImage(id, seq);
      // A call's picture (not a render's progress) joins its view's strip.
      if (final) (isBench ? benchFilm : sceneFilm).addRender(id, seq, `${tool} (event ${seq})`);
    },
    onRenderProgress: (f) => scene.progress(f),
    onLivePreview: (d) => (d && d.view === 'optics' ? bench : scene).live(d),
    onRunStarted: rememberTitle,
    onRunEnded: () => scheduleSessionRefresh(),
    onChange: (empty) => { els.welcome.hidden = !empty; },
    onCanvas: (ev) => canvas.apply(ev),
  },
});

// The Scene view (scene.js): the model's renders and the live previews.
const scene = new SceneView({
  frame: els.previewFrame,
  progress: els.previewProgress,
  status: els.previewStatus,
  quality: els.previewQuality,
}, {
  imageButton,
  previewUrl: api.previewUrl,
  requestPreview,
  onShow: (kind) => shown('scene', kind),
  onFinal: (d) => sceneFilm.setLive(d.image, d.revision, `live preview (change ${d.revision})`),
});

// The Bench view: the optical bench's live preview and render_optics'
// pictures, each object of a preview clickable for its fields.
const bench = new SceneView({
  frame: $('bench-frame'),
  status: $('bench-status'),
}, {
  imageButton,
  previewUrl: api.previewUrl,
  requestPreview,
  onShow: (kind) => {
    // A new picture: the fields shown were of the old one's object.
    els.benchObject.hidden = true;
    shown('bench', kind);
  },
  overlay: (d) => benchOverlay(d, pickObject),
  onFinal: (d) => benchFilm.setLive(d.image, d.revision, `live preview (change ${d.revision})`),
}, {
  view: 'optics',
  empty: 'The optical bench appears here.',
  alt: 'Live preview of the optical bench',
  renderAlt: 'The latest picture of the optical bench',
});

// Each view's filmstrip (filmstrip.js), and two of its pictures compared.
const filmHooks = {
  url: (item) => (item.kind === 'live' ? api.previewUrl(item.id) : api.imageUrl(item.id)),
  onCompare: (a, b) => compare(a, b),
};
const sceneFilm = new Filmstrip($('scene-film'), filmHooks);
const benchFilm = new Filmstrip($('bench-film'), filmHooks);

function compare(a, b) {
  const dlg = $('compare');
  for (const [item, img, cap] of [[a, $('compare-a'), $('compare-a-caption')], [b, $('compare-b'), $('compare-b-caption')]]) {
    img.src = filmHooks.url(item);
    img.alt = item.label;
    img.dataset.filmId = item.id;
    cap.textContent = item.label;
  }
  if (typeof dlg.showModal === 'function') dlg.showModal();
}
$('compare-close').addEventListener('click', () => $('compare').close());
$('compare').addEventListener('click', (e) => {
  if (e.target === $('compare')) $('compare').close(); // the backdrop
});

function requestPreview(q, view) {
  if (!state.sessionId) return Promise.reject(new Error('no session is open'));
  return api.requestPreview(state.sessionId, q, view);
}

// A view showed a picture. The model's pictures bring their view forward;
// a live preview does too, unless the person chose a view themselves since
// the session opened (someone drawing on the Canvas, or reading the
// Scene, is not pulled away by each edit of the bench), so that the pane
// shows the view the session last changed.
function shown(which, kind) {
  const wasEmpty = els.preview.dataset.empty === 'true';
  els.preview.dataset.empty = 'false';
  if (which === 'bench') els.tabBench.hidden = false;
  if (kind !== 'live' || wasEmpty || !state.viewChosen) showView(which);
}

// An object of the bench was clicked: its fields as the bench holds them
// now (the session's document; the picture may be a moment older).
function pickObject(box) {
  const sid = state.sessionId;
  showObject(els.benchObject, box, {});
  els.benchObject.dataset.loading = 'true';
  api.getSession(sid).then((s) => {
    if (sid !== state.sessionId) return;
    delete els.benchObject.dataset.loading;
    showObject(els.benchObject, box, objectOf(s && s.document, box));
  }, (e) => {
    if (sid !== state.sessionId) return;
    delete els.benchObject.dataset.loading;
    showObject(els.benchObject, box, {});
    els.benchObject.appendChild(el('p', { class: 'muted', text: 'Its fields could not be read: ' + errorText(e) }));
  });
}

// The drawing canvas (canvas.js), fed the canvas events of the session.
const canvas = new CanvasView({
  root: els.canvasPanel,
  svg: $('canvas-svg'),
  strokes: $('canvas-strokes'),
  title: $('canvas-title'),
  status: $('canvas-status'),
  drawToggle: $('canvas-draw'),
  mode: $('canvas-mode'),
  newCanvas: $('canvas-new'),
  replay: $('canvas-replay'),
  exportSvg: $('canvas-export-svg'),
  exportPng: $('canvas-export-png'),
  back: $('canvas-back'),
  gallery: $('canvas-gallery'),
  galleryTitle: $('canvas-gallery-title'),
}, {
  callTool: (name, args) => {
    if (!state.sessionId) return Promise.reject(new Error('no session is open'));
    return api.callTool(state.sessionId, name, args);
  },
  onActivity: () => showView('canvas'),
});
// Drawing by hand is choosing the Canvas: edits elsewhere leave it there.
$('canvas-draw').addEventListener('click', () => { state.viewChosen = true; });

// The workspace's views: the scene's pictures, the bench's, or the canvas.
function showView(which) {
  els.preview.dataset.view = which;
  const views = [['scene', els.tabScene, els.scenePanel], ['bench', els.tabBench, els.benchPanel],
    ['canvas', els.tabCanvas, els.canvasPanel]];
  for (const [name, tab, panel] of views) {
    tab.setAttribute('aria-selected', String(name === which));
    panel.hidden = name !== which;
  }
  if (which === 'bench') els.tabBench.hidden = false;
  if (which === 'canvas') els.preview.dataset.empty = 'false';
}
for (const [tab, which] of [[els.tabScene, 'scene'], [els.tabBench, 'bench'], [els.tabCanvas, 'canvas']]) {
  tab.addEventListener('click', () => {
    state.viewChosen = true;
    showView(which);
  });
}

function setActive(active) {
  state.active = active;
  const focusWasOn = document.activeElement;
  els.send.hidden = active;
  els.stop.hidden = !active;
  els.body.dataset.running = String(active);
  // Keep the keyboard where it was when one button replaces the other.
  if (active && focusWasOn === els.send) els.stop.focus();
  if (!active && focusWasOn === els.stop) els.send.focus();
}

function showError(text) {
  els.inputError.textContent = text || '';
  els.inputError.hidden = !text;
}

// ---- sessions ----

function hashSession() {
  const m = /^#s=([0-9a-f]{32})$/.exec(location.hash);
  return m ? m[1] : null;
}

function setHash(id) {
  if (hashSession() === id) return;
  if (id) location.hash = 's=' + id; // a history entry: Back returns to the previous one
  else history.replaceState(null, '', location.pathname + location.search);
}

async function openSession(id) {
  const token = ++state.openToken;
  if (state.stream) state.stream.close();
  state.stream = null;
  state.sessionId = id;
  view.reset();
  setActive(false);
  clearPreview();
  showError(null);
  $('help-card').hidden = true;
  setHash(id);
  markCurrentSession();
  closeSidebar();
  if (!id) {
    setConn('idle');
    return;
  }
  setConn('connecting');
  try {
    await api.getSession(id);
  } catch (e) {
    if (token !== state.openToken) return;
    if (e instanceof ApiError && e.status === 404) {
      showError('That session does not exist (any more). Start a new one.');
      state.sessionId = null;
      setHash(null);
      setConn('idle');
      return;
    }
    // The daemon is down or unreachable: the stream retries until it is back.
  }
  if (token !== state.openToken) return;
  // The whole session is replayed from seq 0: what was shown before a
  // reload is drawn again from the same events, in the same way.
  state.stream = new EventStream(id, {
    onEvent: (ev) => { if (token === state.openToken) view.apply(ev); },
    onState: (s) => {
      if (token !== state.openToken) return;
      setConn(s);
      if (s === 'down') streamDown(id, token);
    },
  });
  state.stream.open();
}

// The stream failed with an HTTP error: either atelierd is down (the
// banner says so and the stream keeps retrying) or the session was deleted
// elsewhere (retrying would never end).
async function streamDown(id, token) {
  if (!(await checkHealth())) return;
  try {
    await api.getSession(id);
  } catch (e) {
    if (token === state.openToken && e instanceof ApiError && e.status === 404) {
      if (state.stream) state.stream.close();
      state.stream = null;
      setConn('idle');
      showError('This session was deleted. Start a new one or pick another.');
      scheduleSessionRefresh();
    }
  }
}

async function newSession() {
  try {
    const s = await api.createSession(selectedModel());
    await openSession(s.id);
    await refreshSessions();
    els.input.focus();
  } catch (e) {
    showError('Could not create a session: ' + errorText(e));
  }
}

async function deleteSession(id) {
  const title = titleOf(id);
  if (!window.confirm(`Delete "${title}"? Its conversation and images are removed for good.`)) return;
  try {
    await api.deleteSession(id);
  } catch (e) {
    showError('Could not delete the session: ' + errorText(e));
    return;
  }
  forgetTitle(id);
  if (id === state.sessionId) await openSession(null);
  await refreshSessions();
}

// The list API has no titles; the page remembers each session's first
// message as its title (bounded, newest kept).
const TITLES_KEY = 'atelier-titles';
const MAX_TITLES = 200;

function titles() {
  try {
    const t = JSON.parse(store.get(TITLES_KEY) || '{}');
    return t && typeof t === 'object' ? t : {};
  } catch {
    return {};
  }
}

function titleOf(id) {
  const t = titles()[id];
  return typeof t === 'string' && t !== '' ? t : 'Session ' + id.slice(0, 8);
}

function rememberTitle(text) {
  const id = state.sessionId;
  if (!id || text === '') return;
  const t = titles();
  if (typeof t[id] === 'string') return;
  t[id] = text.length > 80 ? text.slice(0, 79) + '…' : text;
  const keys = Object.keys(t);
  for (const k of keys.slice(0, Math.max(0, keys.length - MAX_TITLES))) delete t[k];
  store.set(TITLES_KEY, JSON.stringify(t));
  scheduleSessionRefresh();
}

function forgetTitle(id) {
  const t = titles();
  delete t[id];
  store.set(TITLES_KEY, JSON.stringify(t));
}

function when(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const sameDay = d.toDateString() === new Date().toDateString();
  return sameDay
    ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString([], { month: 'short', day: 'numeric' });
}

async function refreshSessions() {
  let list;
  try {
    list = await api.listSessions();
  } catch {
    return; // the banner says why; the old list stays
  }
  if (!Array.isArray(list)) return;
  clear(els.sessionList);
  for (const s of list) {
    if (!s || !isSessionId(s.id)) continue;
    const sub = [when(s.updated || s.created), s.model].filter(Boolean).join(' · ');
    const item = el('li', { class: 'session-item', dataset: { sessionId: s.id } },
      el('button', {
        type: 'button',
        class: 'session-open',
        on: { click: () => { if (s.id !== state.sessionId) openSession(s.id); else closeSidebar(); } },
      },
      el('span', { class: 'session-title', text: titleOf(s.id) }),
      el('span', { class: 'session-sub', text: sub })),
      el('button', {
        type: 'button',
        class: 'session-delete',
        title: 'Delete session',
        attrs: { 'aria-label': 'Delete session ' + titleOf(s.id) },
        on: { click: () => deleteSession(s.id) },
      }, icon('trash')));
    els.sessionList.appendChild(item);
  }
  els.sessionEmpty.hidden = els.sessionList.childElementCount > 0;
  markCurrentSession();
}

function scheduleSessionRefresh() {
  clearTimeout(state.listTimer);
  state.listTimer = setTimeout(refreshSessions, 400);
}

function markCurrentSession() {
  for (const li of els.sessionList.children) {
    const current = li.dataset.sessionId === state.sessionId;
    li.classList.toggle('current', current);
    const b = li.querySelector('.session-open');
    if (current) b.setAttribute('aria-current', 'true');
    else b.removeAttribute('aria-current');
  }
}

// ---- sending and stopping ----

function selectedModel() {
  return els.model.disabled || els.model.value === '' ? undefined : els.model.value;
}

/** Sends the message box, or `command` (a demo's button) without
 *  touching what the box holds. */
async function send(command) {
  const fromBox = typeof command !== 'string';
  const text = fromBox ? els.input.value.trim() : command;
  if (text === '' || state.sending) return;
  if (/^\/help(\s|$)/.test(text)) {
    showHelp();
    if (fromBox) els.input.value = '';
    return;
  }
  // A slash line that would only fail (an unknown tool, arguments that
  // are not one JSON object) is said here, with the form it should have,
  // and stays in the box to be corrected.
  const bad = checkLine(text, state.tools);
  if (bad !== null) {
    showError(bad.error);
    return;
  }
  state.sending = true;
  els.send.disabled = true;
  showError(null);
  let pending = null;
  try {
    if (!state.sessionId) {
      const s = await api.createSession(selectedModel());
      await openSession(s.id);
      scheduleSessionRefresh();
    }
    pending = view.addPending(text);
    if (fromBox) els.input.value = '';
    await api.send(state.sessionId, text, selectedModel());
  } catch (e) {
    view.removePending(pending);
    if (fromBox && els.input.value === '') els.input.value = text; // nothing typed is lost
    showError(e instanceof ApiError && e.status === 429
      ? 'Too many messages are waiting in this session: wait for the current run to finish. (' + e.message + ')'
      : 'Not sent: ' + errorText(e));
  } finally {
    state.sending = false;
    els.send.disabled = false;
    els.input.focus();
  }
}

async function stop() {
  const id = state.sessionId;
  if (!id) return;
  els.stop.disabled = true;
  try {
    const r = await api.cancel(id);
    if (r && r.cancelled === false) {
      // No run is active, yet the page shows one: a run killed by a restart
      // of atelierd sends no end. Give a normal end a moment to arrive
      // first, then close it here.
      setTimeout(() => {
        if (state.sessionId === id && state.active)
          view.forceEnd('No run is active any more (atelierd may have restarted).');
      }, 1500);
    }
  } catch (e) {
    showError('Could not stop the run: ' + errorText(e));
  } finally {
    els.stop.disabled = false;
  }
}

// ---- models, health, connection ----

async function loadModels() {
  let m;
  try {
    m = await api.models();
  } catch (e) {
    clear(els.model);
    els.model.appendChild(el('option', { value: '', text: 'models unavailable' }));
    els.model.disabled = true;
    return;
  }
  clear(els.model);
  const models = Array.isArray(m && m.models) ? m.models.filter((x) => typeof x === 'string') : [];
  for (const name of models) els.model.appendChild(el('option', { value: name, text: name }));
  if (models.length === 0) {
    els.model.appendChild(el('option', { value: '', text: m && m.offline ? 'offline' : 'no models' }));
    els.model.disabled = true;
  } else {
    const saved = store.get('atelier-model');
    els.model.value = models.includes(saved) ? saved : models.includes(m.default) ? m.default : models[0];
    els.model.disabled = false;
  }
  els.model.title = m && m.provider ? `provider: ${m.provider}${m.type ? ' (' + m.type + ')' : ''}` : '';
  els.body.dataset.offline = String(Boolean(m && m.offline));
  if (m && m.offline) {
    // The daemon's reason already says how to configure a provider and
    // what works meanwhile; the page adds only what it does not say.
    const why = typeof m.why === 'string' && m.why !== '' ? m.why : 'No LLM provider is configured.';
    els.offline.textContent = 'Offline mode: ' + why +
      (/\/demo/.test(why) ? '' : ' Messages starting with / call a tool directly; /demo replays a recorded session.');
    els.offline.hidden = false;
  } else {
    els.offline.hidden = true;
  }
}

async function checkHealth() {
  clearTimeout(state.healthTimer);
  let ok = false;
  let why = 'The server cannot be reached.';
  try {
    const h = await api.health();
    ok = h && h.status === 'ok';
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return false; // showLogin
    why = e instanceof ApiError && e.status !== 0
      ? 'atelierd is not running (' + e.message + ').'
      : why;
  }
  const wasDown = !els.daemon.hidden;
  els.daemon.textContent = ok ? '' : why + ' Retrying…';
  els.daemon.hidden = ok;
  if (!ok) {
    state.healthTimer = setTimeout(checkHealth, 5000);
  } else if (wasDown) {
    loadModels();
    refreshSessions();
    if (state.stream) state.stream.kick();
  }
  return ok;
}

const CONN_TEXT = {
  idle: 'No session',
  connecting: 'Connecting…',
  open: 'Live',
  reconnecting: 'Reconnecting…',
  down: 'Disconnected, retrying…',
};

function setConn(s) {
  els.conn.dataset.state = s;
  els.conn.textContent = CONN_TEXT[s] || s;
}

// ---- the token ----

// No valid token: the page shows how to get in instead of failing in
// every corner, and stops polling.
function showLogin(reason) {
  if (els.body.dataset.auth === 'needed') return;
  els.body.dataset.auth = 'needed';
  els.loginExample.textContent = location.origin + '/?token=…';
  els.loginReason.textContent = reason || '';
  els.login.hidden = false;
  clearTimeout(state.healthTimer);
  clearTimeout(state.listTimer);
  if (state.stream) state.stream.close();
  state.stream = null;
}
// (The server's own message repeats what #login says.)
api.onUnauthorized = () => showLogin('');

// The link atelier-stack prints carries ?token=: it is traded at once for
// an HttpOnly cookie and taken out of the address bar and the history, so
// that neither a screenshot nor a shared URL shows it.
async function takeToken() {
  const params = new URLSearchParams(location.search);
  const token = params.get('token');
  if (token === null) return true;
  params.delete('token');
  const q = params.toString();
  history.replaceState(null, '', location.pathname + (q ? '?' + q : '') + location.hash);
  try {
    await api.login(token);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      showLogin('The token in that link is not this server\'s (' + e.message + ').');
      return false;
    }
    // Unreachable or failing: the health banner says so, and retries.
  }
  return true;
}

// ---- preview and image viewer ----

function clearPreview() {
  canvas.reset();
  showView('scene');
  scene.reset();
  bench.reset();
  sceneFilm.reset();
  benchFilm.reset();
  els.tabBench.hidden = true;
  els.benchObject.hidden = true;
  state.viewChosen = false;
  els.preview.dataset.empty = 'true';
}

function openViewer(id) {
  const url = api.imageUrl(id);
  if (typeof els.viewer.showModal !== 'function') {
    window.open(url, '_blank', 'noopener');
    return;
  }
  els.viewerImg.src = url;
  els.viewerLink.href = url;
  els.viewer.showModal();
}

// ---- theme and sidebar ----

function effectiveTheme() {
  const t = document.documentElement.dataset.theme;
  if (t === 'dark' || t === 'light') return t;
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

function showThemeButton() {
  const dark = effectiveTheme() === 'dark';
  clear(els.theme);
  els.theme.appendChild(icon(dark ? 'sun' : 'moon'));
  els.theme.setAttribute('aria-label', dark ? 'Switch to the light theme' : 'Switch to the dark theme');
  els.theme.title = els.theme.getAttribute('aria-label');
}

function closeSidebar() {
  els.body.dataset.sidebar = 'closed';
  els.sidebarToggle.setAttribute('aria-expanded', 'false');
}

// ---- wiring ----

els.form.addEventListener('submit', (e) => {
  e.preventDefault();
  send();
});
// "/" lists the commands and tools (slash.js).
const slash = new SlashMenu({
  input: els.input,
  list: $('slash-menu'),
  getTools: () => {
    if (state.tools === null) loadTools();
    return state.tools;
  },
  // /help and the demos take nothing more: choosing one sends it.
  onCommand: () => send(),
});

let toolsLoading = null;
function loadTools() {
  if (toolsLoading === null) {
    toolsLoading = api.tools().then((list) => {
      // The tools a message can call: not those for the page's own use
      // (add_human_stroke), which a typed call may not make.
      state.tools = Array.isArray(list) ? list.filter((t) => t && typeof t.name === 'string' && t.for_model !== false) : [];
      if (!els.input.value.includes(' ')) slash.update();
      // The welcome view shows the examples of the plugins there are.
      const plugins = new Set(state.tools.map((t) => t.plugin));
      for (const sec of document.querySelectorAll('.welcome-plugin')) sec.hidden = !plugins.has(sec.dataset.plugin);
      return state.tools;
    }, () => {
      // Asked again a while later, not at every key.
      setTimeout(() => { toolsLoading = null; }, 5000);
      return [];
    });
  }
  return toolsLoading;
}

// /help: a card in the conversation (the page's own; nothing is sent).
async function showHelp() {
  const card = $('help-card');
  const body = $('help-body');
  clear(body);
  body.appendChild(el('p', { class: 'muted', text: 'Loading the tools…' }));
  card.hidden = false;
  const tools = state.tools !== null ? state.tools : await loadTools();
  clear(body);
  for (const part of helpContent(tools)) body.appendChild(part);
  card.scrollIntoView({ block: 'nearest' });
}
$('help-close').addEventListener('click', () => {
  $('help-card').hidden = true;
  els.input.focus();
});

els.input.addEventListener('keydown', (e) => {
  if (slash.onKey(e)) return;
  // Enter sends, Shift+Enter is a new line; an IME's Enter confirms its
  // composition and is left alone.
  if (e.key === 'Enter' && !e.shiftKey && !e.altKey && !e.isComposing && e.keyCode !== 229) {
    e.preventDefault();
    send();
  } else if (e.key === 'ArrowUp' && els.input.value === '' && !e.isComposing &&
             !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
    // Up in an empty box brings back the last message of this
    // conversation (sent or queued), to correct and send again.
    const mine = document.querySelectorAll('.msg-user .bubble');
    if (mine.length > 0) {
      e.preventDefault();
      els.input.value = mine[mine.length - 1].textContent;
      els.input.setSelectionRange(els.input.value.length, els.input.value.length);
    }
  }
});
els.stop.addEventListener('click', stop);
els.newSession.addEventListener('click', newSession);
els.model.addEventListener('change', () => store.set('atelier-model', els.model.value));
els.theme.addEventListener('click', () => {
  const next = effectiveTheme() === 'dark' ? 'light' : 'dark';
  document.documentElement.dataset.theme = next;
  store.set('atelier-theme', next);
  showThemeButton();
});
window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', showThemeButton);
els.sidebarToggle.addEventListener('click', () => {
  const open = els.body.dataset.sidebar !== 'open';
  els.body.dataset.sidebar = open ? 'open' : 'closed';
  els.sidebarToggle.setAttribute('aria-expanded', String(open));
  if (open) els.newSession.focus();
});
document.addEventListener('keydown', (e) => {
  // keyCode 229: Safari's keydown for the key that ends a composition.
  if (e.key !== 'Escape' || e.isComposing || e.keyCode === 229 || els.viewer.open || $('compare').open) return;
  // The drawer only on narrow screens, where its toggle shows.
  if (els.body.dataset.sidebar === 'open' && getComputedStyle(els.sidebarToggle).display !== 'none') {
    closeSidebar();
    els.sidebarToggle.focus();
  } else if (state.active && !els.stop.disabled) {
    // Esc stops the run, as the Stop button does.
    e.preventDefault();
    stop();
  }
});
// Any thumbnail (tool details, preview) opens the full image.
document.addEventListener('click', (e) => {
  const b = e.target.closest('[data-image-id]');
  if (b && !els.viewer.contains(b)) openViewer(b.dataset.imageId);
});
els.viewerClose.addEventListener('click', () => els.viewer.close());
els.viewer.addEventListener('click', (e) => {
  if (e.target === els.viewer) els.viewer.close(); // the backdrop
});
els.viewer.addEventListener('close', () => els.viewerImg.removeAttribute('src'));
// The welcome view: an example fills the box, to be sent as is or
// changed first; a demo starts at once.
for (const b of document.querySelectorAll('.example')) {
  b.addEventListener('click', () => {
    els.input.value = b.dataset.text || b.textContent;
    els.input.focus();
  });
}
for (const b of document.querySelectorAll('.demo')) {
  b.addEventListener('click', () => send(b.dataset.text));
}
window.addEventListener('hashchange', () => {
  const id = hashSession();
  if (id !== state.sessionId) openSession(id);
});
window.addEventListener('online', () => { if (state.stream) state.stream.kick(); });
document.addEventListener('visibilitychange', () => {
  if (!document.hidden && state.stream) state.stream.kick();
});

showThemeButton();
closeSidebar();
setConn('idle');
takeToken().then((ok) => {
  if (!ok) return;
  checkHealth();
  loadModels();
  loadTools();
  refreshSessions();
  openSession(hashSession());
});
