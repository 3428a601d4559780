// A view's filmstrip: every picture the session kept of it, oldest first
// (the model's renders, which the store keeps, and the newest final live
// preview, which the daemon keeps in memory), as small buttons under the
// view's picture. Pick two to compare them side by side (onCompare); a
// picture that is gone (a replaced preview's 404) leaves the strip.

import { el, clear } from './dom.js';

/** The most pictures a strip holds: the oldest leave first. */
export const FILMSTRIP_MAX = 40;

export class Filmstrip {
  /** root: the strip's element; hooks: { url(item) -> the picture's URL,
   *  onCompare(a, b): two items, the older first }. An item is
   *  { id, kind: 'render' | 'live', seq (what it shows: a render's event
   *  seq, a preview's revision), label }. */
  constructor(root, hooks) {
    this.root = root;
    this.hooks = hooks;
    this.reset();
  }

  reset() {
    this.items = [];
    this.picked = [];
    clear(this.root);
    this.root.hidden = true;
  }

  /** A render of the model's: kept. The same id again is ignored. */
  addRender(id, seq, label) {
    if (typeof id !== 'string' || id === '' || this.items.some((i) => i.id === id)) return;
    this.insert({ id, kind: 'render', seq: Number.isSafeInteger(seq) ? seq : 0, label });
  }

  /** The newest final live preview: it replaces the one before (which the
   *  daemon no longer serves). */
  setLive(id, revision, label) {
    if (typeof id !== 'string' || id === '') return;
    const old = this.items.find((i) => i.kind === 'live');
    if (old && old.id === id) return;
    if (old) this.remove(old);
    this.insert({ id, kind: 'live', seq: Number.isSafeInteger(revision) ? revision : 0, label });
  }

  insert(item) {
    this.items.push(item);
    // By what each shows; a live preview after a render of the same state.
    this.items.sort((a, b) => a.seq - b.seq || (a.kind === 'live') - (b.kind === 'live'));
    while (this.items.length > FILMSTRIP_MAX) this.remove(this.items[0], true);
    this.draw();
  }

  remove(item, quiet) {
    this.items = this.items.filter((i) => i !== item);
    this.picked = this.picked.filter((i) => i !== item);
    if (!quiet) this.draw();
  }

  draw() {
    clear(this.root);
    // One picture is the view itself: a strip starts at two.
    this.root.hidden = this.items.length < 2;
    if (this.root.hidden) return;
    this.root.appendChild(el('p', {
      class: 'filmstrip-hint',
      text: this.picked.length === 1 ? 'Pick another to compare' : 'Pick two pictures to compare them',
    }));
    const row = el('div', { class: 'filmstrip-row' });
    for (const item of this.items) {
      const img = el('img', { src: this.hooks.url(item), alt: item.label, loading: 'lazy', decoding: 'async' });
      img.addEventListener('error', () => this.remove(item));
      const b = el('button', {
        type: 'button',
        class: 'film-item',
        title: item.label,
        dataset: { filmId: item.id, kind: item.kind },
        attrs: { 'aria-pressed': String(this.picked.includes(item)), 'aria-label': 'Compare ' + item.label },
        on: { click: () => this.pick(item) },
      }, img, el('span', { class: 'film-label', text: item.kind === 'live' ? 'live' : '#' + item.seq }));
      row.appendChild(b);
    }
    this.root.appendChild(row);
    row.scrollLeft = row.scrollWidth;
  }

  /** A click: picked, or unpicked; the second picked opens the compare. */
  pick(item) {
    if (this.picked.includes(item)) {
      this.picked = this.picked.filter((i) => i !== item);
    } else {
      this.picked.push(item);
    }
    if (this.picked.length === 2) {
      const [a, b] = [...this.picked].sort((x, y) => x.seq - y.seq);
      this.picked = [];
      this.hooks.onCompare(a, b);
    }
    this.draw();
  }
}
