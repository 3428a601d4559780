// Unit tests of the chat page's pure modules (fcgi/www): the tool-call
// naming, the before/after diff, the safe Markdown, the seq filter and the
// call matching, and the Markdown → DOM builder against a minimal fake
// document. Run with: node --test tests/web/unit.test.mjs (Node 18+, no
// packages).

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';

import { parseMarkdown, parseInline, safeUrl, nodeText, TAGS } from '../../fcgi/www/markdown.js';
import { diff, flatten, formatRow, formatValue, joinPath } from '../../fcgi/www/diff.js';
import {
  toolTitle, toolSubject, finishedSummary, startedSummary, errorHint,
} from '../../fcgi/www/naming.js';
import {
  SeqTracker, CallMatcher, RUN_END, EVENT_TYPES, parseEvent, usageLine,
} from '../../fcgi/www/events.js';
import { install } from './fakedom.mjs';

install();
// The ChatView tests: a whole session's events drawn into the fake DOM.
// (A separate module, imported here so the one command runs everything.)
await import('./render.cases.mjs');
await import('./scene.cases.mjs');
await import('./bench.cases.mjs');
await import('./slash.cases.mjs');
await import('./filmstrip.cases.mjs');

const INJECTIONS = [
  '<script>alert(1)</script>',
  '<img src=x onerror=alert(1)>',
  '[x](javascript:alert(1))',
  '[x](JaVaScRiPt:alert(1))',
  '[x](java\tscript:alert(1))',
  '[x]( javascript:alert(1))',
  '[x](data:text/html;base64,PHNjcmlwdD4=)',
  '[x](vbscript:msgbox(1))',
  '[x](//evil.example/)',
  '[x](/relative)',
  '<a href="javascript:alert(1)">y</a>',
  '"><svg onload=alert(1)>',
  '**<b onmouseover=alert(1)>bold</b>**',
  '`<script>alert(1)</script>`',
  '```html\n<script>alert(1)</script>\n```',
  '- <iframe src=javascript:alert(1)>',
  '> <style>body{display:none}</style>',
  '# <h1>x</h1>',
  '[**a**](javascript:alert(1))',
  '[a](https://ok.example/)[b](javascript:alert(1))',
];

// Every node in a parsed tree, depth first.
function* walk(nodes) {
  for (const n of nodes) {
    yield n;
    if (Array.isArray(n.children)) yield* walk(n.children);
  }
}

describe('markdown: injection strings only ever become text', () => {
  for (const src of INJECTIONS) {
    test(JSON.stringify(src), () => {
      const tree = parseMarkdown(src);
      for (const n of walk(tree)) {
        if (n.tag === undefined) {
          assert.equal(typeof n.text, 'string');
          continue;
        }
        assert.ok(TAGS.has(n.tag), `unexpected tag ${n.tag}`);
        // Only the keys the builder knows; no attributes smuggled through.
        for (const k of Object.keys(n))
          assert.ok(['tag', 'children', 'text', 'href', 'start', 'lang'].includes(k), `key ${k}`);
        if (n.tag === 'a') assert.match(n.href, /^https?:\/\//);
      }
      // No link but to http(s), and the text shows what was written.
      for (const n of walk(tree)) if (n.tag === 'a') assert.equal(safeUrl(n.href), n.href);
    });
  }

  test('HTML is kept literally, as text', () => {
    const tree = parseMarkdown('<script>alert(1)</script>');
    assert.deepEqual(tree, [{ tag: 'p', children: [{ text: '<script>alert(1)</script>' }] }]);
    assert.deepEqual(parseMarkdown('<img src=x onerror=alert(1)>'),
      [{ tag: 'p', children: [{ text: '<img src=x onerror=alert(1)>' }] }]);
  });

  test('a javascript: link is shown exactly as written, as text', () => {
    assert.deepEqual(parseMarkdown('[x](javascript:alert(1))'),
      [{ tag: 'p', children: [{ text: '[x](javascript:alert(1))' }] }]);
    const t = parseMarkdown('see [x](javascript:alert(1)) now');
    assert.equal(nodeText(t), 'see [x](javascript:alert(1)) now');
    assert.equal([...walk(t)].filter((n) => n.tag === 'a').length, 0);
  });
});

describe('markdown: the supported subset', () => {
  test('inline: bold, em, code, links', () => {
    assert.deepEqual(parseInline('a **b** *c* `d<e>` [f](https://x.example/p?q=1)'), [
      { text: 'a ' },
      { tag: 'strong', children: [{ text: 'b' }] },
      { text: ' ' },
      { tag: 'em', children: [{ text: 'c' }] },
      { text: ' ' },
      { tag: 'code', text: 'd<e>' },
      { text: ' ' },
      { tag: 'a', href: 'https://x.example/p?q=1', children: [{ text: 'f' }] },
    ]);
  });

  test('snake_case ids and arithmetic stay text', () => {
    assert.deepEqual(parseInline('blue_sphere and snow_bottom_2'), [{ text: 'blue_sphere and snow_bottom_2' }]);
    assert.deepEqual(parseInline('2 * 3 * 4'), [{ text: '2 * 3 * 4' }]);
    assert.deepEqual(parseInline('**unclosed'), [{ text: '**unclosed' }]);
  });

  test('backslash escapes and code spans', () => {
    assert.deepEqual(parseInline('\\*not em\\*'), [{ text: '*not em*' }]);
    assert.deepEqual(parseInline('`` a ` b ``'), [{ tag: 'code', text: 'a ` b' }]);
    assert.deepEqual(parseInline('`**no bold**`'), [{ tag: 'code', text: '**no bold**' }]);
  });

  test('links with parentheses, and refused URLs', () => {
    assert.deepEqual(parseInline('[w](https://en.wikipedia.org/wiki/A_(b))'),
      [{ tag: 'a', href: 'https://en.wikipedia.org/wiki/A_(b)', children: [{ text: 'w' }] }]);
    assert.deepEqual(parseInline('[a](http://x y)'), [{ text: '[a](http://x y)' }]);
    assert.equal(safeUrl('HTTPS://Example.COM'), 'https://example.com/');
    for (const bad of ['javascript:alert(1)', 'data:,x', '//x', '/p', 'ftp://x', 'http://a b', 'http:\n//x', '', null])
      assert.equal(safeUrl(bad), null, String(bad));
  });

  test('paragraphs and line breaks', () => {
    assert.deepEqual(parseMarkdown('one\ntwo\n\nthree'), [
      { tag: 'p', children: [{ text: 'one' }, { tag: 'br' }, { text: 'two' }] },
      { tag: 'p', children: [{ text: 'three' }] },
    ]);
  });

  test('fences keep their text verbatim', () => {
    assert.deepEqual(parseMarkdown('```json\n{"a": "<b>"}\n  **x**\n```\nafter'), [
      { tag: 'pre', children: [{ tag: 'code', text: '{"a": "<b>"}\n  **x**', lang: 'json' }] },
      { tag: 'p', children: [{ text: 'after' }] },
    ]);
    // An unclosed fence runs to the end.
    assert.deepEqual(parseMarkdown('~~~\nx'), [{ tag: 'pre', children: [{ tag: 'code', text: 'x' }] }]);
  });

  test('lists: bullets, numbers, nesting, a paragraph after', () => {
    const t = parseMarkdown('Steps:\n- a\n- b\n  more\n  - b1\n- c\n\n3. x\n4. y\n\nDone.');
    assert.equal(t.length, 4);
    assert.deepEqual(t[0], { tag: 'p', children: [{ text: 'Steps:' }] });
    assert.equal(t[1].tag, 'ul');
    assert.equal(t[1].children.length, 3);
    assert.deepEqual(t[1].children[1], {
      tag: 'li',
      children: [{ text: 'b' }, { tag: 'br' }, { text: 'more' },
        { tag: 'ul', children: [{ tag: 'li', children: [{ text: 'b1' }] }] }],
    });
    assert.deepEqual(t[2], {
      tag: 'ol', start: 3,
      children: [{ tag: 'li', children: [{ text: 'x' }] }, { tag: 'li', children: [{ text: 'y' }] }],
    });
    assert.deepEqual(t[3], { tag: 'p', children: [{ text: 'Done.' }] });
  });

  test('headings, quotes, rules', () => {
    assert.deepEqual(parseMarkdown('## Plan\n> *note*\n---'), [
      { tag: 'h2', children: [{ text: 'Plan' }] },
      { tag: 'blockquote', children: [{ tag: 'p', children: [{ tag: 'em', children: [{ text: 'note' }] }] }] },
      { tag: 'hr' },
    ]);
  });

  test('hostile shapes stay fast and bounded', () => {
    const inputs = [
      '*a '.repeat(30000), '**a '.repeat(30000), '['.repeat(60000), '[a]('.repeat(20000),
      '_a '.repeat(30000), '>'.repeat(50000) + ' x', '`a ``b '.repeat(20000),
      Array.from({ length: 1500 }, (_, i) => ' '.repeat(i) + '- x').join('\n'),
      '*'.repeat(5000) + 'x' + '*'.repeat(5000),
    ];
    const t0 = Date.now();
    for (const s of inputs) parseMarkdown(s);
    assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
  });

  test('empty and non-string input', () => {
    assert.deepEqual(parseMarkdown(''), []);
    assert.deepEqual(parseMarkdown(undefined), []);
  });
});

// dom.js against the fake document of fakedom.mjs, whose innerHTML and
// friends throw.
function* elements(node) {
  if (node.nodeType === 3) return;
  yield node;
  for (const c of node.childNodes) yield* elements(c);
}

describe('dom: the Markdown builder', async () => {
  const { buildMarkdown } = await import('../../fcgi/www/dom.js');

  for (const src of INJECTIONS) {
    test('builds only allowed elements for ' + JSON.stringify(src), () => {
      const frag = buildMarkdown(parseMarkdown(src));
      for (const e of elements(frag)) {
        if (e.nodeType === 11) continue;
        assert.ok(TAGS.has(e.localName), e.localName);
        if (e.localName === 'a') {
          assert.match(e.href, /^https?:\/\//);
          assert.equal(e.rel, 'noopener noreferrer nofollow');
        }
        assert.equal(e.attributes.size, 0);
      }
    });
  }

  test('the text survives intact', () => {
    const frag = buildMarkdown(parseMarkdown('<img src=x onerror=alert(1)>'));
    assert.equal(frag.textContent, '<img src=x onerror=alert(1)>');
  });

  test('a forged tree is not trusted either', () => {
    const frag = buildMarkdown([
      { tag: 'script', children: [{ text: 'alert(1)' }] },
      { tag: 'a', href: 'javascript:alert(1)', children: [{ text: 'click' }] },
      { tag: 'img', text: 'x' },
      { tag: 'ol', start: '1" onclick="x', children: [] },
    ]);
    const tags = [...elements(frag)].map((e) => e.localName);
    assert.deepEqual(tags, ['#fragment', 'ol']);
    assert.equal(frag.textContent, 'alert(1)clickx');
    assert.equal(frag.childNodes[3].start, undefined);
  });
});

describe('naming: tool lines', () => {
  test('verbs and nouns from the tool name', () => {
    assert.equal(toolTitle('create_shape'), 'Created shape');
    assert.equal(toolTitle('update_light'), 'Updated light');
    assert.equal(toolTitle('remove_shape'), 'Removed shape');
    assert.equal(toolTitle('set_camera'), 'Set camera');
    assert.equal(toolTitle('render_scene'), 'Rendered scene');
    assert.equal(toolTitle('set_environment'), 'Set environment');
    assert.equal(toolTitle('get_scene_state'), 'Read scene state');
    assert.equal(toolTitle('echo'), 'echo');
    assert.equal(toolTitle('frobnicate_widget'), 'frobnicate_widget');
    assert.equal(toolTitle('create_shape', true), 'Creating shape');
    assert.equal(toolTitle('constructor_x'), 'constructor_x'); // no prototype keys
    assert.equal(toolTitle(undefined), 'tool');
  });

  test('created, updated with a rename, removed', () => {
    assert.equal(finishedSummary({
      operation: { tool: 'create_shape', target: 'blue_sphere', after: { id: 'blue_sphere' } },
      success: true,
    }), 'Created shape: blue_sphere');
    assert.equal(finishedSummary({
      operation: {
        tool: 'update_shape', target: 'red_sphere',
        before: { id: 'blue_sphere', properties: { color: [0, 0, 1] } },
        after: { id: 'red_sphere', properties: { color: [1, 0, 0] } },
      },
      success: true,
    }), 'Updated shape: blue_sphere → red_sphere');
    assert.equal(finishedSummary({
      operation: { tool: 'update_shape', target: 'ball', before: { id: 'ball' }, after: { id: 'ball' } },
    }), 'Updated shape: ball');
    assert.equal(finishedSummary({
      operation: { tool: 'remove_shape', target: 'red_sphere', before: { id: 'red_sphere' } },
    }), 'Removed shape: red_sphere');
    assert.deepEqual(toolSubject({ before: { name: 'a' }, after: { name: 'b' } }), { from: 'a', to: 'b' });
  });

  test('a failed call names its target from the arguments', () => {
    assert.equal(finishedSummary({
      operation: { tool: 'update_shape', arguments: { id: 'red_sphere', updates: {} } },
      success: false, error: "shape 'red_sphere' not found",
    }), 'Could not update shape: red_sphere');
    assert.equal(finishedSummary({ operation: { tool: 'echo' }, success: false }),
      'echo failed');
  });

  test('a finish names its call by id when it has one, else the oldest of its tool', () => {
    const m = new CallMatcher();
    m.start('a', 'echo', 'c1');
    m.start('b', 'echo', 'c2');
    assert.equal(m.finish('echo', 'c2'), 'b');
    assert.equal(m.finish('echo', 'nope'), 'a');
    assert.equal(m.finish('echo', null), null);
  });

  test('a subject that repeats the noun is dropped', () => {
    assert.equal(finishedSummary({ operation: { tool: 'set_camera', target: 'camera' } }), 'Set camera');
    assert.equal(finishedSummary({ operation: { tool: 'import_scene', target: 'scene' } }), 'Imported scene');
    assert.equal(finishedSummary({ operation: { tool: 'echo', target: 'k' } }), 'echo: k');
  });

  test('in progress', () => {
    assert.equal(startedSummary({ tool: 'create_shape', arguments: { id: 'ball' } }), 'Creating shape: ball');
    assert.equal(startedSummary({ tool: 'render_scene', arguments: {} }), 'Rendering scene');
    assert.equal(startedSummary({ tool: 'x', arguments: '(redacted)' }), 'x');
  });

  test('hints', () => {
    assert.match(errorHint("shape 'red_sphere' not found; shapes: (none)"), /create it first/);
    assert.match(errorHint('/properties/radius: expected a number, got "big"'), /JSON pointer/);
    assert.match(errorHint("tool 'render_scene' timed out after 30000 ms"), /too long/);
    assert.match(errorHint('not run: the user cancelled the run'), /stopped/);
    assert.equal(errorHint('something else'), null);
    assert.equal(errorHint(undefined), null);
  });

  test('names are data: markup in them stays a string', () => {
    const s = finishedSummary({ operation: { tool: '<img src=x onerror=alert(1)>', target: '<script>' } });
    assert.equal(s, '<img src=x onerror=alert(1)>: <script>');
  });
});

describe('diff: before → after', () => {
  test('the mockup: an id and a colour change', () => {
    const rows = diff(
      { id: 'blue_sphere', type: 'sphere', properties: { color: [0, 0, 1], radius: 1 } },
      { id: 'red_sphere', type: 'sphere', properties: { color: [1, 0, 0], radius: 1 } },
    );
    assert.deepEqual(rows.map(formatRow), [
      'id: "blue_sphere" → "red_sphere"',
      'properties.color: [0,0,1] → [1,0,0]',
    ]);
  });

  test('added and removed keys', () => {
    const rows = diff({ a: 1, m: { fuzz: 0.1, albedo: [1, 1, 1] } }, { a: 1, m: { albedo: [1, 1, 1], roughness: 0.5 } });
    assert.deepEqual(rows, [
      { path: 'm.fuzz', kind: 'removed', before: 0.1 },
      { path: 'm.roughness', kind: 'added', after: 0.5 },
    ]);
    assert.equal(formatRow(rows[0]), 'm.fuzz: removed 0.1');
    assert.equal(formatRow(rows[1]), 'm.roughness: added 0.5');
  });

  test('a creation is all added, a removal all removed', () => {
    assert.deepEqual(diff(undefined, { id: 'x', p: { r: 1 } }).map((r) => r.kind), ['added', 'added']);
    assert.deepEqual(diff({ id: 'x' }, null).map(formatRow), ['id: removed "x"']);
    assert.deepEqual(diff({ a: 1 }, { a: 1 }), []);
  });

  test('a type change: object ↔ leaf', () => {
    assert.deepEqual(diff({ m: { t: 'metal' } }, { m: 'x' }).map(formatRow), ['m.t: removed "metal"', 'm: added "x"']);
  });

  test('scalars at the root, odd keys, long values', () => {
    assert.deepEqual(diff(1, 2).map(formatRow), ['(value): 1 → 2']);
    assert.equal(joinPath('a', 'b c'), 'a["b c"]');
    assert.equal(joinPath('', 'x.y'), '["x.y"]');
    assert.deepEqual([...flatten({ 'a.b': { c: 1 }, e: {} }).keys()], ['["a.b"].c', 'e']);
    const long = formatValue('x'.repeat(1000));
    assert.ok(long.length <= 240 && long.endsWith('…'));
  });

  test('markup in values stays a string', () => {
    const rows = diff({ id: '<b>' }, { id: '<script>alert(1)</script>' });
    assert.equal(formatRow(rows[0]), 'id: "<b>" → "<script>alert(1)</script>"');
  });
});

describe('events: seq filter, call matching, parsing', () => {
  test('SeqTracker drops duplicates and older events', () => {
    const t = new SeqTracker();
    const seen = [1, 2, 2, 3, 1, 5, 4, 5, 6].filter((s) => t.accept(s));
    assert.deepEqual(seen, [1, 2, 3, 5, 6]);
    assert.equal(t.last, 6);
    assert.equal(t.accept(NaN), false);
    assert.equal(t.accept('7'), false);
    assert.equal(t.accept(undefined), false);
  });

  test('a reconnect that resends from an older seq shows nothing twice', () => {
    const t = new SeqTracker();
    const shown = [];
    const deliver = (seqs) => { for (const s of seqs) if (t.accept(s)) shown.push(s); };
    deliver([1, 2, 3, 4]); // first connection, dropped after 4
    deliver([3, 4, 5, 6]); // a server resending a little before Last-Event-ID
    deliver([7]);
    assert.deepEqual(shown, [1, 2, 3, 4, 5, 6, 7]);
  });

  test('CallMatcher pairs finishes with the oldest start of the same tool', () => {
    const m = new CallMatcher();
    m.start('a1', 'create_shape');
    m.start('b1', 'set_camera');
    m.start('a2', 'create_shape');
    assert.equal(m.peek('create_shape'), 'a1');
    assert.equal(m.finish('create_shape'), 'a1');
    assert.equal(m.finish('create_shape'), 'a2');
    assert.equal(m.finish('create_shape'), null);
    assert.deepEqual(m.drain(), ['b1']);
    assert.deepEqual(m.drain(), []);
  });

  test('run ends and event types', () => {
    for (const t of ['run.completed', 'run.limit_reached', 'run.cancelled', 'run.error', 'run.interrupted'])
      assert.ok(RUN_END.has(t));
    assert.ok(!RUN_END.has('run.started'));
    for (const t of RUN_END) assert.ok(EVENT_TYPES.includes(t));
    // An EventSource hears only the names it listens for.
    for (const t of ['run.continued', 'context.trimmed', 'context.compacted', 'message.queued', 'queue.cleared'])
      assert.ok(EVENT_TYPES.includes(t), t);
    for (const t of ['run.continued', 'context.trimmed', 'context.compacted', 'message.queued', 'queue.cleared'])
      assert.ok(!RUN_END.has(t), t + ' does not end a run');
  });

  test('parseEvent', () => {
    assert.deepEqual(parseEvent('{"seq":3,"type":"text.delta","ts":1,"data":{"text":"x"}}'),
      { seq: 3, type: 'text.delta', ts: 1, data: { text: 'x' } });
    assert.deepEqual(parseEvent('{"type":"run.cancelled"}', 'run.cancelled', '9'),
      { seq: 9, type: 'run.cancelled', data: {} });
    assert.equal(parseEvent('{"type":"x"}', 'x', ''), null);
    assert.equal(parseEvent('not json', 'x', '1'), null);
    assert.equal(parseEvent('[1]', 'x', '1'), null);
    assert.equal(parseEvent('null', 'x', '1'), null);
  });

  test('usageLine', () => {
    assert.equal(usageLine({ turns: 2, usage: { input_tokens: 1234, output_tokens: 56 } }),
      '2 turns · 1,234 in / 56 out tokens');
    assert.equal(usageLine({ turns: 1, usage: { input_tokens: 0, output_tokens: 0 } }), '1 turn');
    assert.equal(usageLine(null), '');
  });
});
