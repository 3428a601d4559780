// A view's filmstrip (filmstrip.js) in the fake DOM of fakedom.mjs: the
// pictures in the order of what they show, one live preview at a time, a
// gone picture leaving, the cap, and two picked for the compare.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';

const { Filmstrip, FILMSTRIP_MAX } = await import('../../fcgi/www/filmstrip.js');

function makeStrip() {
  const root = document.createElement('div');
  const compared = [];
  const strip = new Filmstrip(root, {
    url: (i) => (i.kind === 'live' ? '/p/' : '/i/') + i.id,
    onCompare: (a, b) => compared.push([a.id, b.id]),
  });
  const items = () => root.querySelectorAll('.film-item');
  return { strip, root, compared, items };
}

describe('filmstrip', () => {
  test('hidden with fewer than two pictures; renders by what they show, the live preview replaced', () => {
    const { strip, root, items } = makeStrip();
    assert.equal(root.hidden, true);
    strip.addRender('r1', 10, 'render_scene (event 10)');
    assert.equal(root.hidden, true, 'one picture is the view itself');
    strip.setLive('p1', 12, 'live preview (change 12)');
    assert.equal(root.hidden, false);
    strip.addRender('r0', 4, 'render_scene (event 4)');
    strip.addRender('r1', 10, 'again');
    assert.deepEqual(items().map((b) => b.dataset.filmId), ['r0', 'r1', 'p1']);
    strip.setLive('p2', 9, 'live preview (change 9)');
    assert.deepEqual(items().map((b) => b.dataset.filmId), ['r0', 'p2', 'r1'], 'one live preview, in its place');
    assert.deepEqual(items().map((b) => b.dataset.kind), ['render', 'live', 'render']);
    assert.equal(items()[1].querySelector('img').src, '/p/p2');
    assert.equal(items()[0].querySelector('img').src, '/i/r0');
    assert.deepEqual(items().map((b) => b.textContent), ['#4', 'live', '#10']);
    // A live preview of the state a render shows comes after it.
    strip.setLive('p3', 10, 'live');
    assert.deepEqual(items().map((b) => b.dataset.filmId), ['r0', 'r1', 'p3']);
    strip.addRender('', 11, 'x');
    strip.setLive(null, 11, 'x');
    assert.equal(items().length, 3, 'no id: nothing added');
  });

  test('a picture that is gone leaves the strip', () => {
    const { strip, items } = makeStrip();
    strip.addRender('r1', 1, 'a');
    strip.addRender('r2', 2, 'b');
    strip.setLive('p1', 3, 'c');
    items()[2].querySelector('img').listeners.error.forEach((f) => f({}));
    assert.deepEqual(items().map((b) => b.dataset.filmId), ['r1', 'r2']);
  });

  test('at most FILMSTRIP_MAX pictures, the oldest leaving first', () => {
    const { strip, items } = makeStrip();
    for (let i = 1; i <= FILMSTRIP_MAX + 5; i++) strip.addRender('r' + i, i, 'r' + i);
    assert.equal(items().length, FILMSTRIP_MAX);
    assert.equal(items()[0].dataset.filmId, 'r6');
  });

  test('two picked open the compare, the older first; a picture picked twice is unpicked', () => {
    const { strip, root, compared, items } = makeStrip();
    strip.addRender('r1', 1, 'a');
    strip.addRender('r2', 2, 'b');
    strip.setLive('p1', 3, 'c');
    assert.equal(root.querySelector('.filmstrip-hint').textContent, 'Pick two pictures to compare them');
    items()[2].click();
    assert.equal(items()[2].getAttribute('aria-pressed'), 'true');
    assert.equal(root.querySelector('.filmstrip-hint').textContent, 'Pick another to compare');
    items()[2].click();
    assert.equal(items()[2].getAttribute('aria-pressed'), 'false');
    items()[2].click();
    items()[0].click();
    assert.deepEqual(compared, [['r1', 'p1']]);
    assert.deepEqual(items().map((b) => b.getAttribute('aria-pressed')), ['false', 'false', 'false'], 'picked afresh after');
    assert.equal(items()[0].getAttribute('aria-label'), 'Compare a');
    // Not a [data-image-id]: the page's full-size viewer leaves them alone.
    assert.equal(items()[0].dataset.imageId, undefined);
  });
});
