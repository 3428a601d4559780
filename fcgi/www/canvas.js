// The Canvas view: the drawing plugin's canvas as SVG, built from the
// session's canvas.strokes and canvas.piece events (doc/drawing.md,
// "Events"), so a reload draws exactly what a live viewer saw. Each stroke
// comes with its resolved colour, width, opacity and brush bristles, so
// the page draws what the model's PNG shows without knowing the modes'
// defaults. New agent strokes are drawn with a pen animation (about 300
// px/s); the person draws with mouse, pen or touch (pointer events), each
// stroke sent as the add_human_stroke tool. Saved pieces stay in a gallery
// with thumbnails, can be replayed stroke by stroke, and exported as SVG
// or PNG.

import { el, clear } from './dom.js';

const NS = 'http://www.w3.org/2000/svg';
const W = 800;
const H = 600;
const PEN_PX_PER_S = 300;
// A long batch (a thousand strokes of generate_svg) is drawn faster, so
// that no animation takes more than this.
const MAX_ANIMATION_S = 8;
// Events stamped before the session was opened here (less this margin, for
// the two clocks) are history, drawn at once; later ones are news, drawn
// with the pen.
const LIVE_MARGIN_MS = 1000;

function svgEl(name, attrs) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

const num = (v, d) => (Number.isFinite(v) ? v : d);
const hex = (c) => (typeof c === 'string' && /^#[0-9a-f]{6}$/i.test(c) ? c : '#1a1a2e');

/** The SVG elements of one stroke view: a <g> with the stroke and its
 *  bristles. Only numbers and #rrggbb colours reach attributes; d is set
 *  as an attribute (never parsed as markup). */
export function strokeGroup(s) {
  const g = svgEl('g', { 'data-id': num(s.id, 0), 'data-author': s.author === 'human' ? 'human' : 'agent' });
  const color = hex(s.color);
  const main = svgEl('path', {
    d: typeof s.d === 'string' ? s.d : '',
    stroke: color,
    'stroke-width': num(s.width, 2.5),
    'stroke-opacity': num(s.opacity, 1),
  });
  g.appendChild(main);
  for (const b of Array.isArray(s.bristles) ? s.bristles : []) {
    g.appendChild(svgEl('path', {
      d: typeof b.d === 'string' ? b.d : '',
      stroke: color,
      'stroke-width': num(b.width, 1),
      'stroke-opacity': num(b.opacity, 1),
    }));
  }
  return g;
}

/** A piece as a standalone SVG document (what "Export SVG" saves): white
 *  ground, round caps and joins, every colour and opacity as drawn. */
export function pieceSvg(piece) {
  const esc = (t) => String(t).replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]);
  const out = [`<svg xmlns="${NS}" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`];
  if (piece.title) out.push(`<title>${esc(piece.title)}</title>`);
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push('<g fill="none" stroke-linecap="round" stroke-linejoin="round">');
  for (const s of piece.strokes) {
    const color = hex(s.color);
    const parts = [{ d: s.d, width: s.width, opacity: s.opacity }].concat(Array.isArray(s.bristles) ? s.bristles : []);
    for (const p of parts) {
      out.push(`<path d="${esc(typeof p.d === 'string' ? p.d : '')}" stroke="${color}" ` +
        `stroke-width="${num(p.width, 1)}" stroke-opacity="${num(p.opacity, 1)}"/>`);
    }
  }
  out.push('</g></svg>');
  return out.join('\n');
}

function download(name, blob) {
  const a = el('a', { href: URL.createObjectURL(blob), download: name });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

export class CanvasView {
  /** els: the view's elements (index.html); hooks.callTool(name, args)
   *  posts a tool call for the current session and resolves to its
   *  envelope; hooks.onActivity() is called when the canvas changes
   *  live (the page then shows this view). */
  constructor(els, hooks) {
    this.els = els;
    this.hooks = hooks;
    this.reset();
    els.newCanvas.addEventListener('click', () => this.newCanvas());
    els.drawToggle.addEventListener('click', () => this.setDrawing(!this.drawing));
    els.replay.addEventListener('click', () => this.replay());
    els.exportSvg.addEventListener('click', () => this.exportSvg());
    els.exportPng.addEventListener('click', () => this.exportPng());
    els.back.addEventListener('click', () => this.show(this.current));
    const svg = els.svg;
    svg.addEventListener('pointerdown', (e) => this.penDown(e));
    svg.addEventListener('pointermove', (e) => this.penMove(e));
    svg.addEventListener('pointerup', (e) => this.penUp(e));
    svg.addEventListener('pointercancel', () => this.penCancel());
  }

  reset() {
    this.openedAt = Date.now();
    delete this.els.root.dataset.animating;
    this.pieces = new Map(); // number -> {number, title, mode, done, saved, strokes}
    this.current = 1;
    this.shown = 1;
    this.queue = [];
    this.animating = false;
    this.drawing = false;
    this.stroke = null;
    this.any = false;
    clear(this.els.strokes);
    clear(this.els.gallery);
    this.els.root.dataset.empty = 'true';
    this.status('');
    this.setDrawing(false);
    this.header();
  }

  piece(n) {
    if (!this.pieces.has(n)) {
      this.pieces.set(n, { number: n, title: '', mode: 'plotter', done: false, saved: false, strokes: [] });
    }
    return this.pieces.get(n);
  }

  /** Takes one event of the session (any type; others are ignored). */
  apply(ev) {
    const d = ev.data || {};
    const live = typeof ev.ts === 'string' && Date.parse(ev.ts) > this.openedAt - LIVE_MARGIN_MS;
    if (ev.type === 'canvas.strokes' && Number.isSafeInteger(d.piece) && Array.isArray(d.strokes)) {
      const p = this.piece(d.piece);
      if (typeof d.mode === 'string') p.mode = d.mode;
      if (d.piece > this.current) this.switchTo(d.piece);
      for (const s of d.strokes) {
        if (!s || typeof s !== 'object') continue;
        p.strokes.push(s);
        if (d.piece === this.shown) this.addStroke(s, live && s.author !== 'human');
        if (s.author === 'human') this.dropTemp();
      }
      this.markUsed();
    } else if (ev.type === 'canvas.piece' && Number.isSafeInteger(d.piece)) {
      const p = this.piece(d.piece);
      if (typeof d.title === 'string') p.title = d.title;
      if (typeof d.mode === 'string') p.mode = d.mode;
      p.done = d.done === true;
      p.saved = d.saved === true;
      if (d.event === 'new' && d.piece !== this.current) this.switchTo(d.piece);
      else if (d.event === 'new' && p.strokes.length === 0) this.show(d.piece);
      this.gallery();
      this.markUsed();
    }
    this.header();
  }

  // The workspace opens on the view the session last changed, on a
  // reload as live.
  markUsed() {
    this.any = true;
    this.els.root.dataset.empty = 'false';
    this.hooks.onActivity();
  }

  switchTo(n) {
    this.current = n;
    this.show(n);
    this.gallery();
  }

  /** Shows piece n in the big view (the current one, or a gallery piece). */
  show(n) {
    this.shown = n;
    this.queue = [];
    clear(this.els.strokes);
    const p = this.piece(n);
    for (const s of p.strokes) this.els.strokes.appendChild(strokeGroup(s));
    this.els.back.hidden = n === this.current;
    this.setDrawing(this.drawing && n === this.current);
    this.header();
  }

  header() {
    const p = this.piece(this.shown);
    const title = p.title ? ` “${p.title}”` : '';
    const old = this.shown !== this.current ? ' (gallery)' : '';
    this.els.title.textContent = `Piece ${p.number}${title} · ${p.mode}${p.done ? ' · done' : ''}${old} · ${p.strokes.length} strokes`;
    this.els.mode.value = p.mode === 'paint' ? 'paint' : 'plotter';
    this.els.root.dataset.mode = p.mode;
  }

  gallery() {
    clear(this.els.gallery);
    const done = [...this.pieces.values()].filter((p) => p.number !== this.current && (p.saved || p.strokes.length > 0));
    this.els.galleryTitle.hidden = done.length === 0;
    for (const p of done.sort((a, b) => b.number - a.number)) {
      const thumb = svgEl('svg', { viewBox: `0 0 ${W} ${H}`, class: 'canvas-thumb', 'aria-hidden': 'true' });
      thumb.appendChild(svgEl('rect', { width: W, height: H, fill: '#ffffff' }));
      const g = svgEl('g', { fill: 'none', 'stroke-linecap': 'round', 'stroke-linejoin': 'round' });
      for (const s of p.strokes) g.appendChild(strokeGroup(s));
      thumb.appendChild(g);
      const b = el('button', {
        type: 'button',
        class: 'gallery-item',
        dataset: { piece: String(p.number) },
        title: `Show piece ${p.number}`,
      }, [thumb, el('span', { text: p.title ? `${p.number}. ${p.title}` : `Piece ${p.number}` })]);
      b.addEventListener('click', () => this.show(p.number));
      this.els.gallery.appendChild(b);
    }
  }

  // ---- drawing strokes, with the pen animation ----

  addStroke(s, animate) {
    const g = strokeGroup(s);
    this.els.strokes.appendChild(g);
    if (!animate) return;
    g.dataset.pending = 'true';
    g.style.visibility = 'hidden';
    this.queue.push(g);
    if (!this.animating) this.animate();
  }

  animate() {
    this.animating = true;
    const total = this.queue.reduce((n, g) => n + this.lengthOf(g), 0);
    const speed = Math.max(PEN_PX_PER_S, total / MAX_ANIMATION_S);
    const step = () => {
      const g = this.queue.shift();
      if (!g) {
        this.animating = false;
        this.els.root.dataset.animating = 'false';
        return;
      }
      this.els.root.dataset.animating = 'true';
      const len = this.lengthOf(g);
      const ms = (len / speed) * 1000;
      const paths = [...g.querySelectorAll('path')];
      for (const p of paths) {
        p.style.strokeDasharray = `${len} ${len}`;
        p.style.strokeDashoffset = String(len);
      }
      g.style.visibility = '';
      const t0 = performance.now();
      const frame = (t) => {
        const f = ms <= 0 ? 1 : Math.min(1, (t - t0) / ms);
        for (const p of paths) p.style.strokeDashoffset = String(len * (1 - f));
        if (f < 1 && g.isConnected) {
          requestAnimationFrame(frame);
          return;
        }
        for (const p of paths) {
          p.style.strokeDasharray = '';
          p.style.strokeDashoffset = '';
        }
        delete g.dataset.pending;
        step();
      };
      requestAnimationFrame(frame);
    };
    step();
  }

  lengthOf(g) {
    const p = g.querySelector('path');
    try {
      return Math.max(1, p.getTotalLength());
    } catch {
      return 1;
    }
  }

  /** Draws the shown piece again, stroke by stroke. */
  replay() {
    const p = this.piece(this.shown);
    this.queue = [];
    clear(this.els.strokes);
    for (const s of p.strokes) this.addStroke(s, true);
  }

  // ---- the person's own strokes ----

  setDrawing(on) {
    this.drawing = on && this.shown === this.current;
    this.els.drawToggle.setAttribute('aria-pressed', String(this.drawing));
    this.els.root.dataset.drawing = String(this.drawing);
  }

  toCanvas(e) {
    const m = this.els.svg.getScreenCTM();
    if (!m) return null;
    const pt = new DOMPoint(e.clientX, e.clientY).matrixTransform(m.inverse());
    return { x: Math.round(pt.x * 10) / 10, y: Math.round(pt.y * 10) / 10 };
  }

  penDown(e) {
    if (!this.drawing) return;
    e.preventDefault();
    this.els.svg.setPointerCapture(e.pointerId);
    const p = this.toCanvas(e);
    if (!p) return;
    const line = svgEl('polyline', { class: 'pen-temp', points: `${p.x},${p.y}`, fill: 'none' });
    this.els.strokes.appendChild(line);
    this.stroke = { points: [p], line };
  }

  penMove(e) {
    if (!this.stroke) return;
    const p = this.toCanvas(e);
    if (!p) return;
    const last = this.stroke.points[this.stroke.points.length - 1];
    if (Math.hypot(p.x - last.x, p.y - last.y) < 1.5) return;
    this.stroke.points.push(p);
    this.stroke.line.setAttribute('points', this.stroke.points.map((q) => `${q.x},${q.y}`).join(' '));
  }

  async penUp() {
    const s = this.stroke;
    this.stroke = null;
    if (!s) return;
    let pts = s.points;
    if (pts.length > 5000) pts = pts.filter((_, i) => i % Math.ceil(pts.length / 5000) === 0);
    this.temp = s.line;
    try {
      const r = await this.hooks.callTool('add_human_stroke', { points: pts });
      if (!r || r.success !== true) {
        this.status(r && r.error ? r.error : 'The stroke was not kept.');
        this.dropTemp();
      } else {
        this.status('');
      }
    } catch (err) {
      this.status(`The stroke was not kept: ${err.message}`);
      this.dropTemp();
    }
  }

  penCancel() {
    if (this.stroke) this.stroke.line.remove();
    this.stroke = null;
  }

  dropTemp() {
    for (const t of this.els.strokes.querySelectorAll('.pen-temp')) t.remove();
  }

  status(text) {
    this.els.status.textContent = text;
    this.els.status.hidden = text === '';
  }

  async newCanvas() {
    const mode = this.els.mode.value === 'paint' ? 'paint' : 'plotter';
    try {
      const r = await this.hooks.callTool('new_canvas', { mode });
      this.status(r && r.success ? '' : (r && r.error) || 'No new canvas.');
    } catch (err) {
      this.status(`No new canvas: ${err.message}`);
    }
  }

  // ---- export ----

  exportSvg() {
    const p = this.piece(this.shown);
    download(`piece-${p.number}.svg`, new Blob([pieceSvg(p)], { type: 'image/svg+xml' }));
  }

  exportPng() {
    const p = this.piece(this.shown);
    const url = URL.createObjectURL(new Blob([pieceSvg(p)], { type: 'image/svg+xml' }));
    const img = new Image();
    img.onload = () => {
      const c = document.createElement('canvas');
      c.width = W;
      c.height = H;
      c.getContext('2d').drawImage(img, 0, 0);
      URL.revokeObjectURL(url);
      c.toBlob((blob) => { if (blob) download(`piece-${p.number}.png`, blob); }, 'image/png');
    };
    img.onerror = () => {
      URL.revokeObjectURL(url);
      this.status('The PNG could not be made.');
    };
    img.src = url;
  }
}
