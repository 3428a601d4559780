// The "Changes" of a tool call: its operation's `before` and `after`
// objects flattened to key paths and compared leaf by leaf, e.g.
//   properties.color: [0,0,1] → [1,0,0]
// Arrays are leaves (a colour or a position reads best whole), as are empty
// objects. Pure data in, pure data out: render.js draws the rows.

// Deeper objects than this are shown as one JSON value.
const MAX_DEPTH = 16;
// A value longer than this is cut in the row (the raw arguments and the
// event itself still have all of it).
const MAX_VALUE = 240;

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// `a.b` for identifier-like keys, `a["odd key"]` for the rest, so a path
// always reads back unambiguously.
export function joinPath(prefix, key) {
  if (/^[A-Za-z_$][\w$-]*$/.test(key)) return prefix === '' ? key : prefix + '.' + key;
  return prefix + '[' + JSON.stringify(key) + ']';
}

/** Leaf paths of a value → Map(path → value), in the object's key order.
 *  A value that is not an object is one leaf at the path "". */
export function flatten(value, prefix = '', out = new Map(), depth = 0) {
  if (isObject(value) && Object.keys(value).length > 0 && depth < MAX_DEPTH) {
    for (const key of Object.keys(value))
      flatten(value[key], joinPath(prefix, key), out, depth + 1);
  } else if (value !== undefined) {
    out.set(prefix, value);
  }
  return out;
}

// Leaves are compared as JSON; objects' key order does not matter because
// only leaves (arrays, scalars, {}) are compared.
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** The rows of before → after: [{path, kind, before?, after?}] where kind
 *  is "changed", "added" or "removed"; unchanged leaves are left out.
 *  Before's paths come first, in its order, then the ones only after has.
 *  A missing before (a creation) makes every leaf "added"; a missing after
 *  (a removal) makes every leaf "removed". */
export function diff(before, after) {
  const b = before == null ? new Map() : flatten(before);
  const a = after == null ? new Map() : flatten(after);
  const rows = [];
  for (const [path, old] of b) {
    if (!a.has(path)) rows.push({ path, kind: 'removed', before: old });
    else if (!same(old, a.get(path)))
      rows.push({ path, kind: 'changed', before: old, after: a.get(path) });
  }
  for (const [path, now] of a)
    if (!b.has(path)) rows.push({ path, kind: 'added', after: now });
  return rows;
}

/** A leaf as compact JSON, cut at MAX_VALUE characters. */
export function formatValue(v) {
  let s;
  try {
    s = v === undefined ? 'undefined' : JSON.stringify(v);
  } catch {
    s = String(v);
  }
  if (s === undefined) s = String(v);
  return s.length > MAX_VALUE ? s.slice(0, MAX_VALUE - 1) + '…' : s;
}

/** One row as a line of text, as the tests and the copyable view see it:
 *  "path: old → new", "path: added new", "path: removed old". */
export function formatRow(row) {
  const path = row.path === '' ? '(value)' : row.path;
  if (row.kind === 'changed')
    return `${path}: ${formatValue(row.before)} → ${formatValue(row.after)}`;
  if (row.kind === 'added') return `${path}: added ${formatValue(row.after)}`;
  return `${path}: removed ${formatValue(row.before)}`;
}
