// A very small stand-in for the browser's DOM, enough for render.js and
// dom.js to run under node's test runner: elements with children, text,
// classes, dataset, attributes, simple selectors (tag, .class, #id,
// [attr], [attr="v"], and a leading ":scope > "), closest, contains and
// click listeners. innerHTML and its relatives throw, so any use of them
// by the page fails the tests.

class Node {
  constructor() {
    this.parentNode = null;
  }
  remove() {
    if (this.parentNode) this.parentNode.removeChild(this);
  }
}

export class Text extends Node {
  constructor(data) {
    super();
    this.nodeType = 3;
    this.data = String(data);
  }
  get textContent() { return this.data; }
}

const toDataKey = (k) => k.replace(/-([a-z])/g, (_, c) => c.toUpperCase());

export class Element extends Node {
  constructor(tag) {
    super();
    this.nodeType = 1;
    this.tagName = tag.toUpperCase();
    this.localName = tag.toLowerCase();
    this.childNodes = [];
    this.dataset = {};
    this.attributes = new Map();
    this.listeners = {};
    this.hidden = false;
    this.id = '';
    this.className = '';
    this.style = {}; // the CSSOM, which the CSP allows (a style attribute it does not)
    const self = this;
    this.classList = {
      add: (...cs) => { for (const c of cs) if (!self.classes().includes(c)) self.className = (self.className + ' ' + c).trim(); },
      remove: (...cs) => { self.className = self.classes().filter((c) => !cs.includes(c)).join(' '); },
      contains: (c) => self.classes().includes(c),
      toggle: (c, on) => {
        const want = on === undefined ? !self.classes().includes(c) : on;
        if (want) self.classList.add(c); else self.classList.remove(c);
        return want;
      },
    };
  }
  classes() { return this.className.split(/\s+/).filter(Boolean); }
  get children() { return this.childNodes.filter((n) => n.nodeType === 1); }
  get childElementCount() { return this.children.length; }
  get firstChild() { return this.childNodes[0] || null; }
  appendChild(n) {
    if (n.nodeType === 11) {
      for (const c of [...n.childNodes]) this.appendChild(c);
      n.childNodes = [];
      return n;
    }
    if (n.parentNode) n.parentNode.removeChild(n);
    n.parentNode = this;
    this.childNodes.push(n);
    return n;
  }
  append(...ns) { for (const n of ns) this.appendChild(typeof n === 'string' ? new Text(n) : n); }
  removeChild(n) {
    const i = this.childNodes.indexOf(n);
    if (i === -1) throw new Error('not a child');
    this.childNodes.splice(i, 1);
    n.parentNode = null;
    return n;
  }
  after(n) {
    const p = this.parentNode;
    if (n.parentNode) n.parentNode.removeChild(n);
    p.childNodes.splice(p.childNodes.indexOf(this) + 1, 0, n);
    n.parentNode = p;
  }
  get textContent() { return this.childNodes.map((c) => c.textContent).join(''); }
  set textContent(v) {
    for (const c of this.childNodes) c.parentNode = null;
    this.childNodes = v === '' ? [] : [new Text(v)];
    this.childNodes.forEach((c) => { c.parentNode = this; });
  }
  set innerHTML(v) { throw new Error('innerHTML used'); }
  get innerHTML() { throw new Error('innerHTML used'); }
  set outerHTML(v) { throw new Error('outerHTML used'); }
  insertAdjacentHTML() { throw new Error('insertAdjacentHTML used'); }
  setAttribute(k, v) {
    if (/^on/i.test(k) || k === 'style') throw new Error('refused attribute ' + k);
    if (k.startsWith('data-')) this.dataset[toDataKey(k.slice(5))] = String(v);
    else this.attributes.set(k, String(v));
  }
  getAttribute(k) {
    if (k.startsWith('data-')) return this.dataset[toDataKey(k.slice(5))] ?? null;
    return this.attributes.has(k) ? this.attributes.get(k) : null;
  }
  removeAttribute(k) { this.attributes.delete(k); }
  addEventListener(type, fn) { (this.listeners[type] ||= []).push(fn); }
  contains(n) {
    for (let x = n; x; x = x.parentNode) if (x === this) return true;
    return false;
  }
  closest(sel) {
    for (let x = this; x && x.nodeType === 1; x = x.parentNode) if (matches(x, sel)) return x;
    return null;
  }
  *descendants() {
    for (const c of this.children) {
      yield c;
      yield* c.descendants();
    }
  }
  querySelectorAll(sel) {
    const scoped = /^:scope\s*>\s*/.exec(sel);
    if (scoped) return this.children.filter((c) => matches(c, sel.slice(scoped[0].length)));
    const parts = sel.trim().split(/\s+/);
    let set = [this];
    for (const p of parts) set = set.flatMap((e) => [...e.descendants()].filter((d) => matches(d, p)));
    return [...new Set(set)];
  }
  querySelector(sel) { return this.querySelectorAll(sel)[0] || null; }
  /** Dispatches a click with this element as the target, bubbling. */
  click() {
    const ev = { target: this, type: 'click', preventDefault() {} };
    for (let x = this; x; x = x.parentNode) for (const fn of (x.listeners && x.listeners.click) || []) fn(ev);
  }
}

// One compound selector: tag, .class, #id, [attr] and [attr="v"].
function matches(e, sel) {
  const re = /([a-z][a-z0-9]*)|\.([\w-]+)|#([\w-]+)|\[([\w-]+)(?:="([^"]*)")?\]/gy;
  let m;
  let pos = 0;
  while (pos < sel.length && (m = re.exec(sel)) !== null) {
    pos = re.lastIndex;
    if (m[1] && e.localName !== m[1]) return false;
    if (m[2] && !e.classList.contains(m[2])) return false;
    if (m[3] && e.id !== m[3]) return false;
    if (m[4]) {
      const v = m[4] === 'hidden' ? (e.hidden ? '' : null) : e.getAttribute(m[4]);
      if (v === null || (m[5] !== undefined && v !== m[5])) return false;
    }
  }
  if (pos !== sel.length) throw new Error('selector not supported: ' + sel);
  return true;
}

export function install() {
  const document = {
    createElement: (t) => new Element(t),
    createTextNode: (d) => new Text(d),
    createDocumentFragment: () => {
      const f = new Element('#fragment');
      f.nodeType = 11;
      return f;
    },
  };
  globalThis.document = document;
  globalThis.requestAnimationFrame = (fn) => { queueMicrotask(fn); return 0; };
  return document;
}
