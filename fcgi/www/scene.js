// A workspace view's picture: the newest of the model's renders
// (render_scene's progress and result, or render_optics') and the
// daemon's live previews (a "preview" event after every change to the
// view's namespace, issue 21). The Scene view is one, the Bench another.
//
// Which is newest is decided by what each shows, not by when it came: a
// render shows the scene as it was at its event's seq, a live preview as
// it was at its revision (the seq of the change it follows). So a preview
// of an older change that finishes after a render never covers the render,
// and the preview of a later change always does. Pictures are swapped in
// only once decoded, so a sharper preview never flashes an empty frame.

import { el, clear } from './dom.js';

/** How long live previews are gathered before the newest is loaded: a
 *  replay of the session's events brings every preview it ever had at
 *  once, and all but the last are long gone (a 404 each). Live, they come
 *  at least 150 ms apart, so this only delays each by as much. */
const GATHER_MS = 30;

const SCENE = {
  view: 'scene',
  empty: 'Images of the scene appear here.',
  alt: 'Live preview of the scene',
  renderAlt: 'The latest image of the scene',
};

export class SceneView {
  /** els: { frame, status, progress?, quality? (the Fast/HQ group) };
   *  hooks: { imageButton(id, alt) -> element, previewUrl(id),
   *  requestPreview(quality, view) -> Promise of {enabled, requested},
   *  onShow(kind): a picture is shown, 'render' or 'live',
   *  overlay?(data) -> element or null: laid over a live picture,
   *  onFinal?(data): a preview's final picture is shown };
   *  opts: { view (the namespace previewed), empty, alt, renderAlt }. */
  constructor(els, hooks, opts) {
    this.els = els;
    this.hooks = hooks;
    this.opts = { ...SCENE, ...(opts || {}) };
    if (els.quality) {
      for (const b of els.quality.querySelectorAll('button[data-quality]')) {
        b.addEventListener('click', () => this.chooseQuality(b.dataset.quality));
      }
    }
    this.reset();
  }

  reset() {
    if (this.timer) clearTimeout(this.timer);
    clear(this.els.frame);
    this.els.frame.appendChild(el('p', { class: 'preview-empty', text: this.opts.empty }));
    if (this.els.progress) this.els.progress.hidden = true;
    this.els.status.textContent = '';
    if (this.els.quality) this.els.quality.hidden = true;
    this.shown = { kind: 'none', order: -1 };
    this.pending = null; // the live preview waiting to be loaded
    this.timer = null;
    this.token = (this.token || 0) + 1; // bumps: loads for an old session are dropped
    this.asked = false; // a fresh preview was asked for after a stale one
    this.loads = 0; // live pictures started loading, and the last put in
    this.putN = 0;
    this.setQuality('fast');
  }

  get empty() {
    return this.shown.kind === 'none';
  }

  /** An image of the model's (render_scene's progress or result, or any
   *  tool's picture) from the event with this seq. */
  showImage(id, seq) {
    const order = Number.isSafeInteger(seq) ? seq : this.shown.order;
    let button = this.els.frame.querySelector('.image-button');
    if (button === null || button.dataset.imageId !== id) {
      clear(this.els.frame);
      button = this.hooks.imageButton(id, this.opts.renderAlt);
      button.id = this.opts.view === 'scene' ? 'preview-open' : this.opts.view + '-open';
      this.els.frame.appendChild(button);
    }
    this.shown = { kind: 'render', order };
    this.els.status.textContent = '';
    this.hooks.onShow('render');
  }

  progress(f) {
    if (!this.els.progress) return;
    this.els.progress.value = Math.min(1, Math.max(0, f));
    this.els.progress.hidden = f >= 1;
  }

  /** A "preview" event's data. */
  live(d) {
    if (d === null || typeof d !== 'object' || d.view !== this.opts.view || !Number.isSafeInteger(d.revision)) return;
    if (this.els.quality) this.els.quality.hidden = false;
    if (!this.newer(d) || (this.pending !== null && this.pending.revision > d.revision)) return;
    // The daemon's word on the quality, from a picture that counts (a late
    // one of the old quality must not flip the button back).
    if (d.quality === 'fast' || d.quality === 'hq') this.setQuality(d.quality);
    this.pending = d;
    if (this.timer === null) this.timer = setTimeout(() => this.takeLive(), GATHER_MS);
  }

  /** Whether d shows a later scene than the picture shown: a later
   *  change, another picture of the same change, or one the page asked
   *  for (session.preview: of the scene as it is, which may be the
   *  scene the render shown was made of). */
  newer(d) {
    const s = this.shown;
    return d.revision > s.order || (d.revision === s.order && (s.kind === 'live' || d.requested === true));
  }

  takeLive() {
    this.timer = null;
    const d = this.pending;
    this.pending = null;
    if (d === null || !this.newer(d)) return;
    this.shown = { kind: 'live', order: d.revision };
    if (typeof d.image !== 'string' || d.image === '') {
      // Nothing to show for this scene: an empty one, or one that cannot
      // be rendered. Say so instead of keeping a picture of the old one,
      // and let no picture still decoding cover the message.
      this.putN = ++this.loads;
      clear(this.els.frame);
      this.els.frame.appendChild(el('p', {
        class: 'preview-empty',
        text: typeof d.message === 'string' && d.message !== '' ? d.message : 'Nothing to show yet.',
      }));
      this.els.status.textContent = '';
      this.hooks.onShow('live');
      return;
    }
    const token = this.token;
    const n = ++this.loads;
    const img = el('img', {
      class: 'live-preview',
      alt: this.opts.alt,
      width: Number.isSafeInteger(d.width) ? d.width : undefined,
      height: Number.isSafeInteger(d.height) ? d.height : undefined,
    });
    img.dataset.previewId = d.image;
    img.dataset.revision = String(d.revision);
    img.dataset.final = String(d.final === true);
    img.src = this.hooks.previewUrl(d.image);
    const put = () => {
      // Dropped when the session changed, or something newer was shown.
      if (token !== this.token || this.shown.kind !== 'live' || this.shown.order !== d.revision) return;
      // Decoded after a sharper one of the same change: too late.
      if (n < this.putN) return;
      this.putN = n;
      this.asked = false;
      clear(this.els.frame);
      const over = this.hooks.overlay ? this.hooks.overlay(d) : null;
      if (over) {
        // The overlay's boxes are in the picture's pixels, laid over it
        // in percentages: they follow the picture at any size.
        this.els.frame.appendChild(el('div', { class: 'live-wrap' }, [img, over]));
      } else {
        this.els.frame.appendChild(img);
      }
      this.els.status.textContent = this.opts.view === 'scene' ? caption(d) : benchCaption(d);
      this.hooks.onShow('live');
      if (d.final === true && this.hooks.onFinal) this.hooks.onFinal(d);
    };
    img.decode().then(put, () => {
      if (token !== this.token || this.shown.kind !== 'live' || this.shown.order !== d.revision) return;
      // Gone. If a newer picture is on its way (loading, or its event
      // waiting), that one will do. Else it was lost with a restart of the
      // daemon, or expired: ask for a fresh one, once until one shows.
      if (n !== this.loads || this.pending !== null || this.asked) return;
      this.asked = true;
      this.els.status.textContent = 'Making a new preview…';
      this.hooks.requestPreview(null, this.opts.view).then((r) => {
        if (token === this.token && !(r && r.requested > 0)) this.els.status.textContent = '';
      }, () => {
        if (token === this.token) this.els.status.textContent = 'The preview could not be made again.';
      });
    });
  }

  setQuality(q) {
    this.quality = q;
    if (!this.els.quality) return;
    for (const b of this.els.quality.querySelectorAll('button[data-quality]')) {
      b.setAttribute('aria-pressed', String(b.dataset.quality === q));
    }
  }

  chooseQuality(q) {
    if (q !== 'fast' && q !== 'hq') return;
    this.setQuality(q);
    this.hooks.requestPreview(q, this.opts.view).catch((e) => {
      this.els.status.textContent = 'The preview could not be changed: ' + (e && e.message ? e.message : String(e));
    });
  }
}

/** "Live preview · 16 samples a pixel, denoised", or "Refining… · 1
 *  sample a pixel": the person knows a smooth picture from few samples for
 *  what it is. */
export function caption(d) {
  const n = Number.isFinite(d.samples) ? Math.round(d.samples) : null;
  const spp = n === null ? '' : ' · ' + n + (n === 1 ? ' sample' : ' samples') + ' a pixel';
  const dn = n !== null && d.denoised === true ? ', denoised' : '';
  const q = d.quality === 'hq' ? ' (HQ)' : '';
  return (d.final === true ? 'Live preview' + q : 'Refining' + q + '…') + spp + dn;
}

/** "Live preview · 3 objects, 1,204 ray segments". */
export function benchCaption(d) {
  const parts = [];
  if (Number.isSafeInteger(d.objects)) parts.push(d.objects + (d.objects === 1 ? ' object' : ' objects'));
  if (Number.isSafeInteger(d.segments)) {
    parts.push(d.segments.toLocaleString('en-US') + (d.segments === 1 ? ' ray segment' : ' ray segments'));
  }
  return 'Live preview' + (parts.length ? ' · ' + parts.join(', ') : '');
}
