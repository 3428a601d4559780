// SceneView (scene.js) in the fake DOM of fakedom.mjs (installed by
// unit.test.mjs before this module loads): which picture the Scene view
// shows when the model's renders and the live previews interleave, how a
// replay's burst of previews is gathered, and what a gone preview does.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';

const { SceneView, caption } = await import('../../fcgi/www/scene.js');
const { Element } = await import('./fakedom.mjs');
const { sleep, until } = await import('./wait.mjs');

/** A SceneView whose pictures decode after `delay(url)` ms, or fail for
 *  the urls in `gone`. */
function makeScene({ delay = () => 0, gone = new Set(), answer = { enabled: true, requested: 1 } } = {}) {
  const frame = document.createElement('div');
  const progress = document.createElement('progress');
  const status = document.createElement('p');
  const quality = document.createElement('div');
  for (const q of ['fast', 'hq']) {
    const b = document.createElement('button');
    b.dataset.quality = q;
    quality.appendChild(b);
  }
  const log = { loads: [], requests: [], shown: 0, kinds: [] };
  Element.prototype.decode = function decode() {
    const url = this.src;
    return sleep(delay(url)).then(() => {
      if (gone.has(url)) throw new Error('404');
    });
  };
  const scene = new SceneView({ frame, progress, status, quality }, {
    imageButton: (id) => {
      const b = document.createElement('button');
      b.className = 'image-button';
      b.dataset.imageId = id;
      return b;
    },
    previewUrl: (id) => {
      log.loads.push(id);
      return '/p/' + id;
    },
    requestPreview: (q) => {
      log.requests.push(q);
      return Promise.resolve(answer);
    },
    onShow: (kind) => { log.shown++; log.kinds.push(kind); },
  });
  const live = () => frame.querySelector('img');
  return { scene, frame, status, quality, log, live };
}

const pv = (revision, image, extra = {}) => ({
  view: 'scene', revision, image, quality: 'fast', width: 400, height: 300,
  samples: 4, final: false, ...extra,
});

describe('scene view', () => {
  test('caption says what the picture is', () => {
    assert.equal(caption({ final: true, samples: 37.4, quality: 'fast' }), 'Live preview · 37 samples a pixel');
    assert.equal(caption({ final: true, samples: 16, quality: 'fast', denoised: true }),
      'Live preview · 16 samples a pixel, denoised');
    assert.equal(caption({ final: false, samples: 4, denoised: false }), 'Refining… · 4 samples a pixel');
    assert.equal(caption({ final: false, samples: 1, quality: 'hq' }), 'Refining (HQ)… · 1 sample a pixel');
    assert.equal(caption({ final: true }), 'Live preview');
  });

  test('a live preview shows once decoded, with its caption', async () => {
    const { scene, live, status, quality } = makeScene();
    assert.equal(scene.empty, true);
    scene.live(pv(5, 'a', { final: true, samples: 16 }));
    assert.equal(live(), null, 'not before it is decoded');
    await until(() => live() !== null, 'the picture');
    assert.equal(live().dataset.previewId, 'a');
    assert.equal(status.textContent, 'Live preview · 16 samples a pixel');
    assert.equal(quality.hidden, false);
  });

  test('an older change\'s preview never covers a newer render; a newer change\'s does', async () => {
    const { scene, frame, live } = makeScene();
    scene.showImage('render1', 10);
    scene.live(pv(7, 'old'));
    await sleep(60);
    assert.equal(live(), null);
    assert.equal(frame.querySelector('.image-button').dataset.imageId, 'render1');
    scene.live(pv(12, 'new'));
    await until(() => live() !== null, 'the newer change\'s picture');
    assert.equal(live().dataset.previewId, 'new');
  });

  test('a burst (a replay) loads only the last, not every one', async () => {
    const { scene, live, log } = makeScene();
    for (let r = 1; r <= 20; r++) scene.live(pv(r, 'p' + r));
    await until(() => live() !== null, 'the last picture');
    assert.deepEqual(log.loads, ['p20']);
    assert.equal(live().dataset.previewId, 'p20');
  });

  test('a sharper picture that decodes first is not covered by the earlier one', async () => {
    const { scene, live } = makeScene({ delay: (u) => (u === '/p/slow' ? 100 : 0) });
    scene.live(pv(3, 'slow'));
    await sleep(50);
    scene.live(pv(3, 'sharp', { final: true }));
    await until(() => live() !== null && live().dataset.previewId === 'sharp', 'the sharper picture');
    await sleep(150); // the slow one decodes meanwhile
    assert.equal(live().dataset.previewId, 'sharp');
  });

  test('a gone picture asks for a new preview, once', async () => {
    const { scene, log, status } = makeScene({ gone: new Set(['/p/x', '/p/y']) });
    scene.live(pv(4, 'x'));
    await until(() => log.requests.length > 0, 'a request');
    assert.deepEqual(log.requests, [null]);
    assert.equal(status.textContent, 'Making a new preview…');
    scene.live(pv(4, 'y'));
    await sleep(60);
    assert.deepEqual(log.requests, [null]);
  });

  test('a gone picture with a newer one on its way asks for nothing', async () => {
    // The old one fails well after the new one's event came (by 150 ms,
    // which late timers on a busy machine do not make up).
    const { scene, log, live } = makeScene({ gone: new Set(['/p/old']), delay: (u) => (u === '/p/old' ? 200 : 0) });
    scene.live(pv(4, 'old'));
    await sleep(35);
    scene.live(pv(5, 'new'));
    await until(() => live() !== null, 'the new picture');
    await sleep(250);
    assert.deepEqual(log.requests, []);
  });

  test('no preview made on request: the status does not stay on "Making…"', async () => {
    const { scene, status, log } = makeScene({ gone: new Set(['/p/x']), answer: { enabled: false, requested: 0 } });
    scene.live(pv(4, 'x'));
    await until(() => log.requests.length > 0, 'a request');
    await until(() => status.textContent === '', 'the status cleared');
  });

  test('a message without a picture is not covered by a picture still decoding', async () => {
    const { scene, frame, live } = makeScene({ delay: (u) => (u === '/p/slow' ? 80 : 0) });
    scene.live(pv(6, 'slow'));
    await sleep(40);
    scene.live({ view: 'scene', revision: 6, final: true, error: true, message: 'The scene cannot be rendered: x' });
    await until(() => frame.querySelector('.preview-empty') !== null, 'the message');
    await sleep(120); // the slow picture decodes meanwhile
    assert.equal(live(), null);
    assert.equal(frame.querySelector('.preview-empty').textContent, 'The scene cannot be rendered: x');
  });

  test('a requested preview of the scene a render shows replaces it; a change\'s does not', async () => {
    const { scene, live } = makeScene();
    scene.showImage('render1', 10);
    scene.live(pv(10, 'same'));
    await sleep(50);
    assert.equal(live(), null);
    scene.live(pv(10, 'asked', { requested: true, quality: 'hq' }));
    await until(() => live() !== null, 'the requested picture');
    assert.equal(live().dataset.previewId, 'asked');
  });

  test('live pictures say so to the page (which then keeps the view the user chose)', async () => {
    const { scene, log } = makeScene();
    scene.showImage('r', 3);
    scene.live(pv(4, 'l'));
    await until(() => log.kinds.length === 2, 'the live picture shown');
    assert.deepEqual(log.kinds, ['render', 'live']);
  });

  test('a late picture of the old quality does not flip the button back', async () => {
    const { scene, quality } = makeScene();
    scene.live(pv(5, 'a', { quality: 'hq' }));
    scene.live(pv(4, 'late', { quality: 'fast' }));
    assert.equal(quality.querySelector('button[data-quality="hq"]').getAttribute('aria-pressed'), 'true');
  });

  test('a preview without a picture says why', async () => {
    const { scene, frame, live } = makeScene();
    scene.live({ view: 'scene', revision: 2, final: true, empty: true, message: 'The scene has no shapes yet.' });
    await until(() => /no shapes/.test(frame.textContent), 'the message');
    assert.equal(live(), null);
    assert.equal(frame.querySelector('.preview-empty').textContent, 'The scene has no shapes yet.');
  });

  test('other views, and data that is not a preview, are ignored', async () => {
    const { scene, log } = makeScene();
    scene.live({ view: 'optics', revision: 3, image: 'o' });
    scene.live({ view: 'scene', revision: 'x', image: 's' });
    scene.live(null);
    await sleep(60);
    assert.deepEqual(log.loads, []);
    assert.equal(scene.empty, true);
  });

  test('Fast/HQ: a click asks the daemon, and the button says which', async () => {
    const { scene, quality, log } = makeScene();
    quality.querySelector('button[data-quality="hq"]').click();
    assert.deepEqual(log.requests, ['hq']);
    assert.equal(quality.querySelector('button[data-quality="hq"]').getAttribute('aria-pressed'), 'true');
    assert.equal(quality.querySelector('button[data-quality="fast"]').getAttribute('aria-pressed'), 'false');
    // The daemon's word wins: a preview at fast presses Fast again.
    scene.live(pv(1, 'f', { quality: 'fast' }));
    assert.equal(quality.querySelector('button[data-quality="fast"]').getAttribute('aria-pressed'), 'true');
  });

  test('reset drops a load in flight for the session left', async () => {
    const { scene, live } = makeScene({ delay: () => 30 });
    scene.live(pv(9, 'late'));
    scene.reset();
    await sleep(60);
    assert.equal(live(), null);
    assert.equal(scene.empty, true);
  });
});
