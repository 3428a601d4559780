// The Bench view's parts besides its picture (scene.js shows that): a
// button over each object of a live preview, where the picture shows it,
// and the fields of the object clicked, as the session's bench holds them.

import { el, clear } from './dom.js';

/** The buttons laid over a bench preview, one per box of its event
 *  (data.boxes: {name, type, index, box: [x, y, w, h] in the picture's
 *  pixels}), in percentages of the picture so that they follow it at
 *  any size. The largest first: a small object inside a larger one (a
 *  ray's start inside a glass) stays on top, where a click finds it.
 *  onPick(box) when one is chosen. null when there is nothing to lay. */
export function benchOverlay(data, onPick) {
  const w = data && data.width, h = data && data.height;
  if (!Array.isArray(data && data.boxes) || !(w > 0) || !(h > 0)) return null;
  const boxes = data.boxes.filter((b) => b && typeof b.name === 'string' && Array.isArray(b.box) &&
    b.box.length === 4 && b.box.every(Number.isFinite) && Number.isSafeInteger(b.index));
  if (boxes.length === 0) return null;
  boxes.sort((a, b) => b.box[2] * b.box[3] - a.box[2] * a.box[3]);
  const layer = el('div', { class: 'bench-hits' });
  const pct = (v, of) => (100 * v / of).toFixed(3) + '%';
  for (const b of boxes) {
    const [x, y, bw, bh] = b.box;
    const label = typeof b.type === 'string' && b.type !== '' ? `${b.name} (${b.type})` : b.name;
    const button = el('button', {
      type: 'button',
      class: 'bench-hit',
      title: label,
      attrs: { 'aria-label': 'Show ' + label, 'aria-pressed': 'false' },
    });
    button.dataset.name = b.name;
    button.style.left = pct(x, w);
    button.style.top = pct(y, h);
    button.style.width = pct(bw, w);
    button.style.height = pct(bh, h);
    button.addEventListener('click', () => {
      for (const o of layer.querySelectorAll('.bench-hit')) o.setAttribute('aria-pressed', String(o === button));
      onPick(b);
    });
    layer.appendChild(button);
  }
  return layer;
}

/** A field's value as one short line: a point as "(x, y)" (a glass's
 *  outline point that makes an arc as "(x, y) arc"), a list of points as
 *  such, anything else as compact JSON. */
export function fieldText(v) {
  const isPoint = (p) => p !== null && typeof p === 'object' && !Array.isArray(p) &&
    Number.isFinite(p.x) && Number.isFinite(p.y) &&
    Object.keys(p).every((k) => k === 'x' || k === 'y' || (k === 'arc' && typeof p.arc === 'boolean'));
  const point = (p) => `(${p.x}, ${p.y})` + (p.arc === true ? ' arc' : '');
  if (isPoint(v)) return point(v);
  if (Array.isArray(v) && v.length > 0 && v.every(isPoint)) return v.map(point).join(' ');
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

/** Fills root with the object's fields: its name and type as a heading,
 *  the rest as a list. obj null: the object is gone from the bench (a
 *  later change removed it). */
export function showObject(root, box, obj) {
  clear(root);
  root.hidden = false;
  const type = obj && typeof obj.type === 'string' ? obj.type : box.type;
  root.appendChild(el('h3', { text: type ? `${box.name} · ${type}` : box.name }));
  if (obj === null || typeof obj !== 'object') {
    root.appendChild(el('p', { class: 'muted', text: 'This object is no longer on the bench.' }));
    return;
  }
  const dl = el('dl');
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'name' || k === 'type') continue;
    dl.appendChild(el('dt', { text: k }));
    dl.appendChild(el('dd', { text: fieldText(v) }));
  }
  root.appendChild(dl);
}

/** The object the box names, from a session's document (session.get's
 *  `document`): by its index in the bench's objs, checked against its
 *  name, else by name; null when neither finds it. A module's part
 *  ("Module/2") is shown as its module. */
export function objectOf(doc, box) {
  const objs = doc && doc.optics && Array.isArray(doc.optics.objs) ? doc.optics.objs : [];
  const base = box.name.includes('/') ? box.name.slice(0, box.name.indexOf('/')) : box.name;
  const at = objs[box.index];
  if (at && typeof at === 'object' && (at.name === box.name || at.name === base || at.name === undefined)) return at;
  return objs.find((o) => o && (o.name === box.name || o.name === base)) || null;
}
