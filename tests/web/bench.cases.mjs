// The Bench view's parts (bench.js) in the fake DOM of fakedom.mjs, and a
// SceneView previewing the optical bench: its object buttons, the fields
// of the object clicked, and that each view takes only its own previews.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';

const { benchOverlay, fieldText, objectOf, showObject } = await import('../../fcgi/www/bench.js');
const { SceneView, benchCaption } = await import('../../fcgi/www/scene.js');
const { Element } = await import('./fakedom.mjs');
const { sleep, until } = await import('./wait.mjs');

const PREVIEW = {
  view: 'optics', revision: 4, image: 'b1', width: 800, height: 600, final: true,
  objects: 2, segments: 1204,
  boxes: [
    { name: 'ray', type: 'SingleRay', index: 1, box: [100, 200, 12, 12] },
    { name: 'Main Prism', type: 'Glass', index: 0, box: [40, 30, 720, 360] },
  ],
};

describe('bench view', () => {
  test('a button over each object, where the picture shows it, the largest first', () => {
    const picked = [];
    const layer = benchOverlay(PREVIEW, (b) => picked.push(b.name));
    const hits = layer.querySelectorAll('.bench-hit');
    assert.deepEqual(hits.map((h) => h.dataset.name), ['Main Prism', 'ray']);
    // In percentages of the picture: they follow it at any size.
    assert.equal(hits[0].style.left, '5.000%');
    assert.equal(hits[0].style.top, '5.000%');
    assert.equal(hits[0].style.width, '90.000%');
    assert.equal(hits[0].style.height, '60.000%');
    assert.equal(hits[1].getAttribute('aria-label'), 'Show ray (SingleRay)');
    hits[1].click();
    assert.deepEqual(picked, ['ray']);
    assert.equal(hits[1].getAttribute('aria-pressed'), 'true');
    assert.equal(hits[0].getAttribute('aria-pressed'), 'false');
  });

  test('boxes that are not boxes are left out; none at all: no layer', () => {
    const bad = {
      ...PREVIEW,
      boxes: [{ name: 'a', index: 0, box: [1, 2, 3] }, { name: 'b', index: 'x', box: [1, 2, 3, 4] },
        { name: 'c', index: 2, box: [1, 2, NaN, 4] }, { index: 3, box: [1, 2, 3, 4] },
        { name: 'ok', index: 4, box: [1, 2, 3, 4] }],
    };
    const hits = benchOverlay(bad, () => {}).querySelectorAll('.bench-hit');
    assert.deepEqual(hits.map((h) => h.dataset.name), ['ok']);
    assert.equal(benchOverlay({ ...PREVIEW, boxes: [] }, () => {}), null);
    assert.equal(benchOverlay({ ...PREVIEW, width: 0 }, () => {}), null);
    assert.equal(benchOverlay({ image: 'x' }, () => {}), null);
  });

  test('a field reads as one short line', () => {
    assert.equal(fieldText({ x: 200, y: 50 }), '(200, 50)');
    assert.equal(fieldText([{ x: 1, y: 2 }, { x: 3, y: 4 }]), '(1, 2) (3, 4)');
    assert.equal(fieldText(1.5), '1.5');
    assert.equal(fieldText('Glass'), 'Glass');
    // A glass's outline, as the bench stores it.
    assert.equal(fieldText([{ x: 1, y: 2, arc: false }, { x: 3, y: 4, arc: true }]), '(1, 2) (3, 4) arc');
    assert.equal(fieldText({ x: 1, y: 2, arc: 'yes' }), '{"x":1,"y":2,"arc":"yes"}');
    assert.equal(fieldText({ x: 1, y: 2, z: 3 }), '{"x":1,"y":2,"z":3}');
  });

  test('the object clicked, by index checked against its name, else by name', () => {
    const doc = { optics: { objs: [{ name: 'Main Prism', type: 'Glass', refIndex: 1.5 }, { name: 'ray', type: 'SingleRay' }] } };
    assert.equal(objectOf(doc, PREVIEW.boxes[1]).refIndex, 1.5);
    // The bench changed since the picture: found by name where it went.
    const moved = { optics: { objs: [{ name: 'ray', type: 'SingleRay' }, { name: 'Main Prism', type: 'Glass', refIndex: 1.6 }] } };
    assert.equal(objectOf(moved, PREVIEW.boxes[1]).refIndex, 1.6);
    assert.equal(objectOf({ optics: { objs: [] } }, PREVIEW.boxes[1]), null);
    assert.equal(objectOf(null, PREVIEW.boxes[1]), null);
    // A module's part is its module.
    const mod = { optics: { objs: [{ name: 'Lens', type: 'ModuleObj', params: {} }] } };
    assert.equal(objectOf(mod, { name: 'Lens/2', index: 0 }).type, 'ModuleObj');
  });

  test('its fields, or that it is gone', () => {
    const root = document.createElement('div');
    root.hidden = true;
    showObject(root, PREVIEW.boxes[1], { name: 'Main Prism', type: 'Glass', refIndex: 1.5, path: [{ x: 1, y: 2 }] });
    assert.equal(root.hidden, false);
    assert.equal(root.querySelector('h3').textContent, 'Main Prism · Glass');
    assert.deepEqual(root.querySelectorAll('dt').map((e) => e.textContent), ['refIndex', 'path']);
    assert.deepEqual(root.querySelectorAll('dd').map((e) => e.textContent), ['1.5', '(1, 2)']);
    showObject(root, PREVIEW.boxes[1], null);
    assert.match(root.textContent, /no longer on the bench/);
  });

  test('the caption counts objects and rays', () => {
    assert.equal(benchCaption(PREVIEW), 'Live preview · 2 objects, 1,204 ray segments');
    assert.equal(benchCaption({ objects: 1, segments: 1 }), 'Live preview · 1 object, 1 ray segment');
    assert.equal(benchCaption({}), 'Live preview');
  });

  test('a Bench takes the bench\'s previews only, lays its buttons over them, asks for its own', async () => {
    Element.prototype.decode = function decode() { return sleep(0); };
    const frame = document.createElement('div');
    const status = document.createElement('p');
    const asked = [];
    const bench = new SceneView({ frame, status }, {
      imageButton: () => document.createElement('button'),
      previewUrl: (id) => '/p/' + id,
      requestPreview: (q, view) => { asked.push([q, view]); return Promise.resolve({ requested: 1 }); },
      onShow: () => {},
      overlay: (d) => benchOverlay(d, () => {}),
    }, { view: 'optics', empty: 'The optical bench appears here.' });
    assert.match(frame.textContent, /optical bench appears here/);
    bench.live({ ...PREVIEW, view: 'scene', revision: 9, image: 'scene1' });
    await sleep(60);
    assert.equal(frame.querySelector('img'), null, 'a scene preview is not the bench\'s');
    bench.live(PREVIEW);
    await until(() => frame.querySelector('img') !== null, 'the bench\'s picture');
    assert.equal(frame.querySelector('img').dataset.previewId, 'b1');
    assert.equal(frame.querySelectorAll('.bench-hit').length, 2);
    assert.equal(status.textContent, 'Live preview · 2 objects, 1,204 ray segments');
    // Its picture gone: it asks for a new one of the bench alone.
    Element.prototype.decode = function decode() { return Promise.reject(new Error('404')); };
    bench.live({ ...PREVIEW, revision: 5, image: 'b2' });
    await until(() => asked.length > 0, 'a request for a new preview');
    assert.deepEqual(asked, [[null, 'optics']]);
  });
});
