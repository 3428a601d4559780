// Slash commands: a message starting with "/" calls a tool directly
// ("/create_shape {…}"), replays a demo ("/demo optics") or, on the page
// alone, shows the help ("/help"). Typing "/" lists them with what each
// does; choosing a tool writes its call with a JSON template built from
// its schema, and a line that does not parse is caught before it is sent,
// with the form it should have.

import { el, clear } from './dom.js';

/** The commands that are not tools (the daemon's /demo, the page's /help). */
export const COMMANDS = [
  { name: 'help', text: '/help', description: 'The commands, the demos, the tools and the keys.' },
  { name: 'demo', text: '/demo', description: 'A recorded session: a snowman built and rendered, no LLM needed.' },
  { name: 'demo optics', text: '/demo optics', description: 'A recorded session: a prism on the optical bench, total internal reflection.' },
  { name: 'demo drawing', text: '/demo drawing', description: 'A recorded session: a harbour drawn, signed and saved.' },
];

/** The first sentence of a description, for a line of the list. */
export function firstSentence(text) {
  const s = typeof text === 'string' ? text.replace(/\*\*/g, '').trim() : '';
  const m = /^(.+?[.!?])(\s|$)/.exec(s);
  const one = m ? m[1] : s;
  return one.length > 140 ? one.slice(0, 139) + '…' : one;
}

/** The schema a "$ref" ("#/$defs/name") points to in root, else s. */
function deref(s, root) {
  for (let i = 0; i < 8 && s && typeof s.$ref === 'string' && s.$ref.startsWith('#/'); i++) {
    let t = root;
    for (const part of s.$ref.slice(2).split('/')) t = t && typeof t === 'object' ? t[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    s = t;
  }
  return s;
}

/** A value a schema accepts, to be edited: its default, its constant or
 *  first allowed value, else an empty one of its type (a nested object
 *  with its own required members). root: the tool's whole schema, where
 *  "$ref"s point. */
export function sampleValue(schema, depth = 0, root = schema) {
  schema = deref(schema, root);
  if (schema === null || typeof schema !== 'object' || depth > 4) return null;
  if ('default' in schema) return schema.default;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const alt = schema.oneOf || schema.anyOf;
  if (Array.isArray(alt) && alt.length > 0) return sampleValue(alt[0], depth + 1, root);
  let type = schema.type;
  if (Array.isArray(type)) type = type.find((t) => t !== 'null') || type[0];
  if (type === undefined && schema.properties) type = 'object';
  switch (type) {
    case 'string': return '';
    case 'integer':
    case 'number': {
      if (Number.isFinite(schema.minimum)) return schema.minimum;
      if (Number.isFinite(schema.exclusiveMinimum)) return schema.exclusiveMinimum + 1;
      return 0;
    }
    case 'boolean': return false;
    case 'array': {
      const n = Number.isSafeInteger(schema.minItems) ? Math.min(schema.minItems, 4) : 0;
      return Array.from({ length: n }, () => sampleValue(schema.items || {}, depth + 1, root));
    }
    case 'object': return template(schema, depth + 1, root);
    default: return null;
  }
}

/** An arguments object for a tool's input schema: its required members,
 *  each with a value to edit (sampleValue), in the schema's order. A
 *  schema of alternatives (create_shape's one per shape type) gives the
 *  first one's. */
export function template(schema, depth = 0, root = schema) {
  const out = {};
  schema = deref(schema, root);
  if (schema === null || typeof schema !== 'object' || depth > 4) return out;
  const alt = schema.oneOf || schema.anyOf;
  if (!schema.properties && Array.isArray(alt) && alt.length > 0) return template(alt[0], depth + 1, root);
  const props = schema.properties && typeof schema.properties === 'object' ? schema.properties : {};
  const required = Array.isArray(schema.required) ? schema.required : [];
  for (const k of Object.keys(props)) if (required.includes(k)) out[k] = sampleValue(props[k], depth, root);
  for (const k of required) if (!(k in out)) out[k] = null;
  return out;
}

/** JSON on one line, spaced as people write it: {"a": 1, "b": [1, 2]}. */
export function oneLine(v) {
  if (Array.isArray(v)) return '[' + v.map(oneLine).join(', ') + ']';
  if (v !== null && typeof v === 'object') {
    return '{' + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ': ' + oneLine(x)).join(', ') + '}';
  }
  return JSON.stringify(v);
}

/** "/name {…}": a tool's call with its template. */
export function callLine(tool) {
  return '/' + tool.name + ' ' + oneLine(template(tool.input_schema));
}

/** What "/<query>" lists: the commands, then the tools, whose names
 *  start with the query, then those that contain it. */
export function matches(query, tools) {
  const q = query.toLowerCase();
  const items = [
    ...COMMANDS.map((c) => ({ kind: 'command', name: c.name, text: c.text, description: c.description })),
    ...tools.map((t) => ({ kind: 'tool', name: t.name, tool: t, description: firstSentence(t.description) })),
  ];
  const starts = items.filter((i) => i.name.toLowerCase().startsWith(q));
  const within = items.filter((i) => !i.name.toLowerCase().startsWith(q) && i.name.toLowerCase().includes(q));
  return [...starts, ...within];
}

/** Checks a message before it is sent. Returns null when it may go (not
 *  a slash line, /help, /demo…, or a tool call whose arguments are one
 *  JSON object), else {error, suggestion?}: what is wrong, and the line
 *  that would be right. tools: the daemon's list, or null when unknown
 *  (then only the JSON is checked). */
export function checkLine(text, tools) {
  const m = /^\/(\S*)\s*([\s\S]*)$/.exec(text);
  if (m === null) return null;
  const [, name, rest] = m;
  if (name === 'help' || name === 'demo') return null;
  const tool = tools ? tools.find((t) => t.name === name) : undefined;
  if (tools && tool === undefined) {
    const near = name === '' ? [] : tools.filter((t) => t.name.includes(name) || name.includes(t.name)).map((t) => '/' + t.name);
    return {
      error: (name === '' ? 'A slash starts a command or a tool\'s name.' : `There is no tool or command /${name}.`) +
        (near.length ? ' Did you mean ' + near.slice(0, 3).join(', ') + '?' : '') +
        ' Type / for the list, or /help.',
    };
  }
  if (rest.trim() === '') return null;
  let args;
  try {
    args = JSON.parse(rest);
  } catch (e) {
    return malformed(name, tool, 'its arguments are not JSON (' + (e && e.message ? e.message : String(e)) + ')');
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return malformed(name, tool, 'its arguments must be one JSON object, not ' + (Array.isArray(args) ? 'an array' : JSON.stringify(args)));
  }
  return null;
}

function malformed(name, tool, why) {
  const form = tool ? callLine(tool) : `/${name} {"name": value, …}`;
  return { error: `/${name}: ${why}. The form is: ${form}`, suggestion: form };
}

/** The list that "/" opens above the message box (a listbox the box
 *  controls, as a combobox does): arrows move, Enter or Tab chooses,
 *  Escape closes. Choosing a tool writes its call with its template and
 *  selects the first value to edit; choosing a command writes it, and
 *  onCommand(text) decides (the page sends /help and /demo at once). */
export class SlashMenu {
  constructor({ input, list, getTools, onCommand }) {
    this.input = input;
    this.list = list;
    this.getTools = getTools;
    this.onCommand = onCommand;
    this.items = [];
    this.active = -1;
    input.setAttribute('aria-controls', list.id);
    input.setAttribute('aria-autocomplete', 'list');
    input.setAttribute('aria-expanded', 'false');
    input.addEventListener('input', () => this.update());
    // Closed when the focus has gone elsewhere (a moment later, so that a
    // click on the list lands first), not when it came back meanwhile.
    input.addEventListener('blur', () => setTimeout(() => {
      if (document.activeElement !== input) this.close();
    }, 150));
    // A click on the list must not take the focus from the box first.
    list.addEventListener('mousedown', (e) => e.preventDefault());
    this.close();
  }

  get open() {
    return !this.list.hidden;
  }

  /** Opens, filters or closes the list for what the box holds. */
  update() {
    const v = this.input.value;
    const m = /^\/([^\s]*)$/.exec(v);
    if (m === null) {
      this.close();
      return;
    }
    this.items = matches(m[1], this.getTools() || []);
    if (this.items.length === 0) {
      this.close();
      return;
    }
    this.active = 0;
    this.draw();
  }

  draw() {
    clear(this.list);
    this.items.forEach((it, i) => {
      const li = el('li', {
        id: this.list.id + '-' + i,
        class: 'slash-item',
        attrs: { role: 'option', 'aria-selected': String(i === this.active) },
        dataset: { name: it.name, kind: it.kind },
        on: { click: () => this.choose(i) },
      },
      el('span', { class: 'slash-name', text: it.kind === 'tool' ? '/' + it.name : it.text }),
      el('span', { class: 'slash-desc', text: it.description }));
      this.list.appendChild(li);
    });
    this.list.hidden = false;
    this.input.setAttribute('aria-expanded', 'true');
    this.input.setAttribute('aria-activedescendant', this.list.id + '-' + this.active);
    const cur = this.list.children[this.active];
    if (cur && cur.scrollIntoView) cur.scrollIntoView({ block: 'nearest' });
  }

  close() {
    this.list.hidden = true;
    this.items = [];
    this.active = -1;
    this.input.setAttribute('aria-expanded', 'false');
    this.input.removeAttribute('aria-activedescendant');
  }

  /** A key in the box: true when the list took it. */
  onKey(e) {
    // keyCode 229: Safari's keydown for the key that ends a composition.
    if (!this.open || e.isComposing || e.keyCode === 229) return false;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      const n = this.items.length;
      this.active = (this.active + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
      this.draw();
    } else if ((e.key === 'Enter' && !e.shiftKey) || e.key === 'Tab') {
      this.choose(this.active);
    } else if (e.key === 'Escape') {
      this.close();
    } else {
      return false;
    }
    e.preventDefault();
    e.stopPropagation();
    return true;
  }

  choose(i) {
    const it = this.items[i];
    if (!it) return;
    this.close();
    if (it.kind === 'command') {
      this.input.value = it.text;
      this.onCommand(it.text);
      return;
    }
    const line = callLine(it.tool);
    this.input.value = line;
    this.input.focus();
    // The first value to edit selected (inside its quotes when a string).
    const empty = line.indexOf('""');
    if (empty >= 0) this.input.setSelectionRange(empty + 1, empty + 1);
    else this.input.setSelectionRange(line.length, line.length);
  }
}

/** The help card's content: the commands, the demos, each plugin's tools
 *  and the keys. tools: the daemon's list (may be empty). */
export function helpContent(tools) {
  const byPlugin = new Map();
  for (const t of tools) {
    const p = typeof t.plugin === 'string' ? t.plugin : 'other';
    if (!byPlugin.has(p)) byPlugin.set(p, []);
    byPlugin.get(p).push(t);
  }
  const row = (name, desc) => el('li', {}, el('code', { text: name }), ' ', el('span', { text: desc }));
  const parts = [
    el('h3', { text: 'Commands' }),
    el('ul', {},
      COMMANDS.map((c) => row(c.text, c.description)),
      row('/tool {json}', 'Calls a tool directly with these arguments, without the model: type / to pick one and get its template.')),
  ];
  for (const [plugin, list] of byPlugin) {
    parts.push(el('h3', { text: 'Tools of the ' + plugin + ' plugin' }));
    parts.push(el('ul', {}, list.map((t) => row('/' + t.name, firstSentence(t.description)))));
  }
  parts.push(el('h3', { text: 'Keys' }));
  parts.push(el('ul', {},
    row('Enter', 'sends; Shift+Enter is a new line.'),
    row('Esc', 'stops the run (or closes this list).'),
    row('↑', 'in the empty box brings back your last message.')));
  return parts;
}
