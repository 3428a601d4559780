// DOM construction without HTML strings. Everything the page shows is
// built here with createElement and textContent: no innerHTML, no
// insertAdjacentHTML, no style attributes (the CSP forbids inline styles;
// element.style set from script is allowed but this page uses classes).

import { TAGS, safeUrl, nodeText } from './markdown.js';

/** el('div', {class: 'x', dataset: {id: '1'}, text: 'hi'}, child, …)
 *  Options: class, text (textContent), dataset, attrs (setAttribute; event
 *  handler attributes and style are refused), on ({click: fn}), and any
 *  other key is set as a property (hidden, type, title, …). Children may be
 *  nodes, strings (as text) or null (skipped). */
export function el(tag, opts = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(opts)) {
    if (v === undefined || v === null) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k === 'on') for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    else if (k === 'attrs') {
      for (const [a, av] of Object.entries(v)) {
        if (/^on/i.test(a) || a.toLowerCase() === 'style') throw new Error('refused attribute ' + a);
        e.setAttribute(a, av);
      }
    } else e[k] = v;
  }
  append(e, children);
  return e;
}

/** An icon drawn by the stylesheet (style.css, icons): a decorative span
 *  whose SVG mask is painted in the text's colour. name: running, done,
 *  failed, stopped, trash, sun, moon, menu. */
export function icon(name) {
  return el('span', { class: 'icon icon-' + name, attrs: { 'aria-hidden': 'true' } });
}

/** Appends nodes and strings (as text nodes) to a parent. */
export function append(parent, children) {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    parent.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return parent;
}

/** Removes every child of a node. */
export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

// One Markdown node → a DOM node. Tags outside the list, and links whose
// href does not pass safeUrl again here, become plain text: the builder
// does not trust its input any more than the parser trusts the model.
function build(n) {
  if (n === null || typeof n !== 'object') return document.createTextNode(String(n ?? ''));
  if (n.tag === undefined) return document.createTextNode(String(n.text ?? ''));
  if (!TAGS.has(n.tag)) return document.createTextNode(nodeText(n));
  let e;
  if (n.tag === 'a') {
    const href = safeUrl(n.href);
    if (href === null) return document.createTextNode(nodeText(n));
    e = document.createElement('a');
    e.href = href;
    e.rel = 'noopener noreferrer nofollow';
    e.target = '_blank';
  } else {
    e = document.createElement(n.tag);
  }
  if (n.tag === 'ol' && Number.isSafeInteger(n.start)) e.start = n.start;
  if (n.tag === 'code' && typeof n.lang === 'string') e.dataset.lang = n.lang;
  if (n.text !== undefined) e.textContent = String(n.text);
  if (Array.isArray(n.children)) for (const c of n.children) e.appendChild(build(c));
  return e;
}

/** Markdown nodes (markdown.js) → a DocumentFragment. */
export function buildMarkdown(nodes) {
  const f = document.createDocumentFragment();
  for (const n of nodes) f.appendChild(build(n));
  return f;
}
