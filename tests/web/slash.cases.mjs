// Slash commands (slash.js) in the fake DOM of fakedom.mjs: the template
// a tool's schema gives, what "/" lists, the lines caught before they are
// sent, and the list's keys.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';

const { template, sampleValue, callLine, oneLine, matches, checkLine, firstSentence, SlashMenu, helpContent } =
  await import('../../fcgi/www/slash.js');

const CREATE = {
  name: 'create_shape',
  plugin: 'scene',
  description: 'Create a new 3D shape. Types: sphere, box.',
  input_schema: {
    type: 'object',
    properties: {
      id: { type: 'string' },
      type: { type: 'string', enum: ['sphere', 'box', 'cone'] },
      properties: { type: 'object', properties: { radius: { type: 'number', exclusiveMinimum: 0 } }, required: ['radius'] },
      note: { type: 'string' },
    },
    required: ['type', 'id', 'properties'],
  },
};
const RENDER = {
  name: 'render_scene',
  plugin: 'render',
  description: 'Render the current scene at high quality. **WARNING: expensive.**',
  input_schema: { type: 'object', properties: { quality: { type: 'string', enum: ['draft', 'high'] } } },
};
const SETTINGS = {
  name: 'optics_settings',
  plugin: 'optics',
  description: 'Read or change the bench\'s settings: ray density... Returns them all.',
  input_schema: {
    type: 'object',
    properties: { rayDensity: { type: 'number', default: 0.1, minimum: 0 }, names: { type: 'array', minItems: 2, items: { type: 'integer', minimum: 1 } } },
    required: ['rayDensity', 'names'],
  },
};
const TOOLS = [CREATE, RENDER, SETTINGS];

describe('slash commands', () => {
  test('a template holds the required members, in the schema\'s order, with values to edit', () => {
    assert.deepEqual(template(CREATE.input_schema), { id: '', type: 'sphere', properties: { radius: 1 } });
    assert.deepEqual(Object.keys(template(CREATE.input_schema)), ['id', 'type', 'properties']);
    assert.deepEqual(template(RENDER.input_schema), {});
    assert.deepEqual(template(SETTINGS.input_schema), { rayDensity: 0.1, names: [1, 1] });
    assert.deepEqual(template(null), {});
    assert.equal(sampleValue({ type: ['null', 'boolean'] }), false);
    assert.equal(sampleValue({ const: 'x' }), 'x');
    assert.deepEqual(sampleValue({ oneOf: [{ type: 'integer', minimum: 3 }, { type: 'string' }] }), 3);
    // Alternatives (create_shape's, one per type) give the first; $refs
    // point into the tool's $defs.
    const alts = {
      type: 'object',
      $defs: { id: { type: 'string', pattern: '^a' }, xyz: { type: 'array', minItems: 3, items: { type: 'number' } },
        sphere: { type: 'object', properties: { center: { $ref: '#/$defs/xyz' }, radius: { type: 'number', default: 1 } }, required: ['center', 'radius'] } },
      oneOf: [
        { type: 'object', properties: { id: { $ref: '#/$defs/id' }, type: { const: 'sphere' }, properties: { $ref: '#/$defs/sphere' } }, required: ['id', 'type', 'properties'] },
        { type: 'object', properties: { id: { $ref: '#/$defs/id' }, type: { const: 'box' } }, required: ['id', 'type'] },
      ],
    };
    assert.deepEqual(template(alts), { id: '', type: 'sphere', properties: { center: [0, 0, 0], radius: 1 } });
    assert.deepEqual(template({ $ref: '#/$defs/nope', $defs: {} }), {});
    // A schema that nests without end stops.
    const loop = { type: 'object', properties: {}, required: ['a'] };
    loop.properties.a = loop;
    assert.doesNotThrow(() => template(loop));
  });

  test('the call line is the tool with its template, spaced as people write JSON', () => {
    assert.equal(callLine(CREATE), '/create_shape {"id": "", "type": "sphere", "properties": {"radius": 1}}');
    assert.equal(callLine(RENDER), '/render_scene {}');
    assert.equal(oneLine({ a: 'x": y', b: [1, { c: null }] }), '{"a": "x\\": y", "b": [1, {"c": null}]}');
    assert.deepEqual(JSON.parse(callLine(SETTINGS).slice('/optics_settings '.length)), template(SETTINGS.input_schema));
  });

  test('"/" lists the commands and tools, those starting with the query first', () => {
    const all = matches('', TOOLS).map((i) => i.name);
    assert.deepEqual(all, ['help', 'demo', 'demo optics', 'demo drawing', 'create_shape', 'render_scene', 'optics_settings']);
    assert.deepEqual(matches('re', TOOLS).map((i) => i.name), ['render_scene', 'create_shape']);
    assert.deepEqual(matches('demo o', TOOLS).map((i) => i.name), ['demo optics']);
    assert.deepEqual(matches('OPTICS', TOOLS).map((i) => i.name), ['optics_settings', 'demo optics']);
    assert.deepEqual(matches('zzz', TOOLS), []);
  });

  test('a line is caught before it is sent when it can only fail, with the form it should have', () => {
    assert.equal(checkLine('make a ball', TOOLS), null);
    assert.equal(checkLine('/help', TOOLS), null);
    assert.equal(checkLine('/demo optics', TOOLS), null);
    assert.equal(checkLine('/render_scene', TOOLS), null);
    assert.equal(checkLine('/create_shape {"id": "a", "type": "box"}', TOOLS), null);
    const notJson = checkLine('/create_shape id=a', TOOLS);
    assert.match(notJson.error, /^\/create_shape: its arguments are not JSON \(.+\)\. The form is: \/create_shape \{"id": "", "type": "sphere", "properties": \{"radius": 1\}\}$/);
    assert.equal(notJson.suggestion, callLine(CREATE));
    assert.match(checkLine('/create_shape [1, 2]', TOOLS).error, /must be one JSON object, not an array/);
    assert.match(checkLine('/create_shape 3', TOOLS).error, /must be one JSON object, not 3/);
    assert.match(checkLine('/create_shap {}', TOOLS).error, /^There is no tool or command \/create_shap\. Did you mean \/create_shape\? Type \/ for the list, or \/help\.$/);
    assert.equal(checkLine('/ hello', TOOLS).error, 'A slash starts a command or a tool\'s name. Type / for the list, or /help.');
    // The tools not loaded yet: the JSON is still checked, the name is the daemon's to judge.
    assert.equal(checkLine('/anything {}', null), null);
    assert.match(checkLine('/anything {', null).error, /The form is: \/anything \{"name": value, …\}/);
  });

  test('a description\'s first sentence, without Markdown\'s bold', () => {
    assert.equal(firstSentence(RENDER.description), 'Render the current scene at high quality.');
    assert.equal(firstSentence(SETTINGS.description), 'Read or change the bench\'s settings: ray density...');
    assert.equal(firstSentence('x'.repeat(300)).length, 140);
    assert.equal(firstSentence(undefined), '');
  });

  test('the list: arrows move, Enter writes the tool\'s call and selects its first value, Escape closes', () => {
    const input = document.createElement('textarea');
    input.value = '';
    let sel = null;
    input.setSelectionRange = (a, b) => { sel = [a, b]; };
    input.focus = () => {};
    const list = document.createElement('ul');
    list.id = 'slash-menu';
    const sent = [];
    const menu = new SlashMenu({ input, list, getTools: () => TOOLS, onCommand: (t) => sent.push(t) });
    const key = (k) => {
      const e = { key: k, shiftKey: false, isComposing: false, prevented: false, preventDefault() { this.prevented = true; }, stopPropagation() {} };
      return [menu.onKey(e), e.prevented];
    };
    assert.equal(list.hidden, true);
    input.value = '/cr';
    input.listeners.input.forEach((f) => f());
    assert.equal(list.hidden, false);
    assert.equal(input.getAttribute('aria-expanded'), 'true');
    assert.deepEqual(list.querySelectorAll('.slash-item').map((li) => li.dataset.name), ['create_shape']);
    assert.deepEqual(key('Enter'), [true, true]);
    assert.equal(input.value, callLine(CREATE));
    assert.deepEqual(sel, [input.value.indexOf('""') + 1, input.value.indexOf('""') + 1]);
    assert.equal(list.hidden, true);
    // With a space typed the list is gone and keys are the box's again.
    input.listeners.input.forEach((f) => f());
    assert.equal(list.hidden, true);
    assert.deepEqual(key('Enter'), [false, false]);
    // A command: chosen, and handed to the page (which sends it).
    input.value = '/';
    input.listeners.input.forEach((f) => f());
    key('ArrowDown');
    key('ArrowDown');
    assert.equal(input.getAttribute('aria-activedescendant'), 'slash-menu-2');
    assert.equal(list.querySelectorAll('.slash-item')[2].getAttribute('aria-selected'), 'true');
    key('ArrowUp');
    key('Tab');
    assert.equal(input.value, '/demo');
    assert.deepEqual(sent, ['/demo']);
    input.value = '/';
    input.listeners.input.forEach((f) => f());
    key('ArrowUp');
    assert.equal(list.querySelectorAll('.slash-item')[6].getAttribute('aria-selected'), 'true', 'up from the first is the last');
    // The Enter that ends an IME composition (Safari: keyCode 229) is the IME's.
    assert.deepEqual(menu.onKey({ key: 'Enter', keyCode: 229, isComposing: false, preventDefault() {}, stopPropagation() {} }), false);
    assert.equal(list.hidden, false);
    assert.deepEqual(key('Escape'), [true, true]);
    assert.equal(list.hidden, true);
    assert.equal(input.getAttribute('aria-activedescendant'), null);
  });

  test('the help lists the commands, each plugin\'s tools and the keys', () => {
    const root = document.createElement('div');
    for (const p of helpContent(TOOLS)) root.appendChild(p);
    const heads = root.querySelectorAll('h3').map((h) => h.textContent);
    assert.deepEqual(heads, ['Commands', 'Tools of the scene plugin', 'Tools of the render plugin', 'Tools of the optics plugin', 'Keys']);
    const codes = root.querySelectorAll('code').map((c) => c.textContent);
    for (const c of ['/help', '/demo', '/demo optics', '/demo drawing', '/tool {json}', '/create_shape', '/render_scene', 'Esc']) {
      assert.ok(codes.includes(c), c + ' in ' + codes);
    }
  });
});
