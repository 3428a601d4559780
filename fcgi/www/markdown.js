// A small, safe Markdown subset for the model's answers.
//
// The output is plain data, never HTML: an array of nodes, each either
//   {text: "..."}                       a run of text, or
//   {tag: "p", children: [...]}          an element from a fixed list,
// with `href` on links (http/https only, see safeUrl) and `start` on ordered
// lists that do not begin at 1. dom.js turns it into DOM nodes with
// createElement/createTextNode, so whatever the model writes (`<script>`,
// `<img onerror=…>`) can only ever become text. Keeping the parser free of
// `document` lets node's test runner check it.
//
// Supported: paragraphs (single newlines become <br>), ``` and ~~~ fences,
// `code`, **bold**, __bold__, *em*, _em_, [links](https://…), bullet and
// numbered lists (nested by indentation), # headings, > quotes and ---
// rules. Tables, HTML and images are shown as the text they are.

// Elements the builder may create; anything else becomes text.
export const TAGS = new Set([
  'p', 'br', 'hr', 'pre', 'code', 'strong', 'em', 'a', 'ul', 'ol', 'li',
  'blockquote', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6',
]);

// Nesting beyond this (quotes in quotes, bold in em in …) is shown as
// text: it keeps the recursion bounded whatever the input.
const MAX_DEPTH = 8;

// The characters a backslash may escape, as in CommonMark.
const PUNCT = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';

/** The URL as an absolute http(s) href, or null for anything else
 *  (javascript:, data:, relative paths, URLs with spaces or controls). */
export function safeUrl(url) {
  if (typeof url !== 'string') return null;
  const u = url.trim();
  // No whitespace or control characters anywhere: browsers strip some of
  // them ("java\tscript:"), so a URL that has them is refused outright.
  if (u === '' || /[\s\u0000-\u001f\u007f]/.test(u)) return null;
  if (!/^https?:\/\//i.test(u)) return null;
  let parsed;
  try {
    parsed = new URL(u);
  } catch {
    return null;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null;
  return parsed.href;
}

// ---- inline ----

const isSpace = (c) => c === undefined || /\s/.test(c);
const isWord = (c) => c !== undefined && /[\p{L}\p{N}]/u.test(c);

// Adds text to the output, merging it with a preceding text node.
function pushText(out, text) {
  if (text === '') return;
  const last = out[out.length - 1];
  if (last && last.tag === undefined) last.text += text;
  else out.push({ text });
}

// The index of the closing delimiter `d` (a run of `*` or `_`) for an
// opener at `from`, or -1. Closers must follow a non-space; `_` closers
// must not be followed by a letter or digit, so snake_case ids such as
// blue_sphere stay as they are.
function findCloser(s, d, from) {
  let j = s.indexOf(d, from);
  while (j !== -1) {
    const ok = !isSpace(s[j - 1]) && s[j - 1] !== '\\' &&
      (d[0] !== '_' || !isWord(s[j + d.length])) &&
      // A single `*` closer must not be half of a `**`.
      (d.length === 2 || s[j + 1] !== d[0]);
    if (ok) return j;
    j = s.indexOf(d, j + 1);
  }
  return -1;
}

// Where each `[` or `(` of a text closes: Map(open index → close index),
// found in one pass with a stack, so text full of brackets stays linear.
// Brackets nest and skip backslash escapes; parentheses (a link's URL,
// which may hold balanced ones, as Wikipedia's do) cannot span
// whitespace, since a URL has none.
function pairs(s, open, close) {
  const match = new Map();
  const stack = [];
  for (let j = 0; j < s.length; j++) {
    const c = s[j];
    if (open === '[' && c === '\\') j++;
    else if (open === '(' && c <= ' ') stack.length = 0;
    else if (c === open) stack.push(j);
    else if (c === close && stack.length > 0) match.set(stack.pop(), j);
  }
  return match;
}

/** Inline Markdown of one block's text → nodes. */
export function parseInline(s, depth = 0, inLink = false) {
  const out = [];
  if (depth > MAX_DEPTH) {
    pushText(out, s);
    return out;
  }
  // A delimiter with no closer from some position has none from any later
  // one either: remembering that keeps unmatched runs of `*` linear.
  const noCloser = new Set();
  let brackets = null; // pairs(), computed at the first `[`
  let parens = null;
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === '\\' && i + 1 < s.length && PUNCT.includes(s[i + 1])) {
      pushText(out, s[i + 1]);
      i += 2;
      continue;
    }
    if (c === '\n') {
      out.push({ tag: 'br' });
      i++;
      continue;
    }
    if (c === '`') {
      let k = i;
      while (s[k] === '`') k++;
      const run = s.slice(i, k);
      let j = noCloser.has(run) ? -1 : s.indexOf(run, k);
      // The closer is a run of exactly the same length.
      while (j !== -1 && (s[j + run.length] === '`')) {
        let e = j;
        while (s[e] === '`') e++;
        j = s.indexOf(run, e);
      }
      if (j === -1) {
        noCloser.add(run);
        pushText(out, run);
        i = k;
        continue;
      }
      let code = s.slice(k, j).replace(/\n/g, ' ');
      if (code.length > 2 && code[0] === ' ' && code[code.length - 1] === ' ')
        code = code.slice(1, -1);
      out.push({ tag: 'code', text: code });
      i = j + run.length;
      continue;
    }
    if (c === '*' || c === '_') {
      const d = s[i + 1] === c ? c + c : c;
      const opens = !isSpace(s[i + d.length]) &&
        (c !== '_' || !isWord(s[i - 1]));
      if (opens && !noCloser.has(d)) {
        const j = findCloser(s, d, i + d.length + 1);
        if (j === -1) {
          noCloser.add(d);
        } else {
          out.push({
            tag: d.length === 2 ? 'strong' : 'em',
            children: parseInline(s.slice(i + d.length, j), depth + 1, inLink),
          });
          i = j + d.length;
          continue;
        }
      }
      pushText(out, d);
      i += d.length;
      continue;
    }
    if (c === '[' && !inLink) {
      if (brackets === null) {
        brackets = pairs(s, '[', ']');
        parens = pairs(s, '(', ')');
      }
      const close = brackets.get(i);
      if (close !== undefined && s[close + 1] === '(') {
        const end = parens.get(close + 1);
        if (end !== undefined) {
          const href = safeUrl(s.slice(close + 2, end));
          if (href !== null) {
            out.push({
              tag: 'a',
              href,
              children: parseInline(s.slice(i + 1, close), depth + 1, true),
            });
          } else {
            // A refused link is shown exactly as written, so the reader
            // sees what the model tried to link to.
            pushText(out, s.slice(i, end + 1));
          }
          i = end + 1;
          continue;
        }
      }
    }
    pushText(out, c);
    i++;
  }
  return out;
}

// ---- blocks ----

const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const ITEM = /^([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;

const indentOf = (line) => line.match(/^[ \t]*/)[0].replace(/\t/g, '    ').length;
const isBlank = (line) => /^[ \t]*$/.test(line);

// Does this line start a block that ends a paragraph? A numbered item
// interrupts one only when it starts at 1, as in CommonMark, so "in 2024.
// we…" wrapped onto a new line stays text.
function interrupts(line) {
  if (FENCE.test(line) || HEADING.test(line) || RULE.test(line) ||
      QUOTE.test(line)) return true;
  const m = ITEM.exec(line);
  return m !== null && m[3] !== '' && (!/^\d/.test(m[2]) || /^1[.)]$/.test(m[2]));
}

// A list starting at lines[i] (an item line): returns [node, next index].
function parseList(lines, i, depth) {
  const first = ITEM.exec(lines[i]);
  const base = indentOf(first[1]);
  const ordered = /^\d/.test(first[2]);
  const list = { tag: ordered ? 'ol' : 'ul', children: [] };
  if (ordered && parseInt(first[2], 10) !== 1) list.start = parseInt(first[2], 10);
  let item = null; // {lines: [...], sub: [...]}
  const finish = () => {
    if (item === null) return;
    const li = { tag: 'li', children: parseInline(item.lines.join('\n'), depth + 1) };
    li.children.push(...item.sub);
    list.children.push(li);
    item = null;
  };
  while (i < lines.length) {
    const line = lines[i];
    const m = ITEM.exec(line);
    if (m !== null) {
      const ind = indentOf(m[1]);
      if (ind > base + 1 && item !== null) {
        // A deeper item: a list inside the current item.
        if (depth + 1 > MAX_DEPTH) {
          item.lines.push(line.trim());
          i++;
          continue;
        }
        const [sub, next] = parseList(lines, i, depth + 1);
        item.sub.push(sub);
        i = next;
        continue;
      }
      if (ind < base || /^\d/.test(m[2]) !== ordered) break;
      finish();
      item = { lines: [m[3]], sub: [] };
      i++;
      continue;
    }
    if (isBlank(line)) {
      // A blank line ends the list unless more of it follows.
      let k = i + 1;
      while (k < lines.length && isBlank(lines[k])) k++;
      if (k < lines.length && (ITEM.test(lines[k]) || indentOf(lines[k]) > base) &&
          indentOf(lines[k]) >= base) {
        i = k;
        continue;
      }
      break;
    }
    if (indentOf(line) > base && item !== null && !interrupts(line.trim())) {
      item.lines.push(line.trim()); // a continuation of the item's text
      i++;
      continue;
    }
    break;
  }
  finish();
  return [list, i];
}

function parseBlocks(lines, depth) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      i++;
      continue;
    }
    let m = FENCE.exec(line);
    if (m !== null && !(m[1][0] === '`' && m[2].includes('`'))) {
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length) {
        const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(lines[i]);
        if (close && close[1][0] === fence[0] && close[1].length >= fence.length) break;
        body.push(lines[i]);
        i++;
      }
      i++; // the closing fence (or the end of the text)
      const code = { tag: 'code', text: body.join('\n') };
      const lang = m[2].trim().split(/\s+/)[0];
      if (lang) code.lang = lang;
      out.push({ tag: 'pre', children: [code] });
      continue;
    }
    if (RULE.test(line)) {
      out.push({ tag: 'hr' });
      i++;
      continue;
    }
    m = HEADING.exec(line);
    if (m !== null) {
      out.push({ tag: 'h' + m[1].length, children: parseInline(m[2] || '', depth + 1) });
      i++;
      continue;
    }
    m = QUOTE.exec(line);
    if (m !== null && depth < MAX_DEPTH) {
      const inner = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i])) !== null) {
        inner.push(m[1]);
        i++;
      }
      out.push({ tag: 'blockquote', children: parseBlocks(inner, depth + 1) });
      continue;
    }
    m = ITEM.exec(line);
    if (m !== null && m[3] !== '') {
      const [list, next] = parseList(lines, i, depth);
      out.push(list);
      i = next;
      continue;
    }
    // A paragraph: up to a blank line or the start of another block.
    const para = [line.trim()];
    i++;
    while (i < lines.length && !isBlank(lines[i]) && !interrupts(lines[i])) {
      para.push(lines[i].trim());
      i++;
    }
    out.push({ tag: 'p', children: parseInline(para.join('\n'), depth + 1) });
  }
  return out;
}

/** Markdown text → an array of block nodes (see the top of this file). */
export function parseMarkdown(src) {
  if (typeof src !== 'string' || src === '') return [];
  return parseBlocks(src.replace(/\r\n?/g, '\n').split('\n'), 0);
}

/** The text a node (or an array of nodes) shows, tags dropped. */
export function nodeText(n) {
  if (Array.isArray(n)) return n.map(nodeText).join('');
  if (n.tag === undefined) return n.text;
  if (n.tag === 'br') return '\n';
  if (n.text !== undefined) return n.text;
  return n.children ? nodeText(n.children) : '';
}
