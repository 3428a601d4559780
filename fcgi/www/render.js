// The conversation, drawn from a session's events. ChatView.apply takes
// the events in seq order (stream.js filters duplicates) and changes the
// DOM; it keeps no other source of truth, so replaying a session from
// seq 0 after a reload draws the same page a live viewer saw.
//
// Every string from the daemon (the model's text, tool names, arguments,
// errors) reaches the DOM through textContent or the Markdown builder.

import { el, append, clear, buildMarkdown, icon } from './dom.js';
import { parseMarkdown } from './markdown.js';
import { diff, formatValue } from './diff.js';
import { finishedSummary, startedSummary, toolTitle, errorHint } from './naming.js';
import { CallMatcher, RUN_END, usageLine } from './events.js';

/** Tools whose images are snapshots of the drawing canvas. */
const CANVAS_TOOLS = new Set(['draw_paths', 'view_canvas', 'generate_svg', 'sign_canvas']);
import { api } from './api.js';

const firstLine = (s) => String(s).split('\n', 1)[0];
const count = (x) => x.toLocaleString('en-US');
const isCount = (x) => Number.isSafeInteger(x) && x >= 0;

// A change list longer than this is cut (an import can touch everything);
// the raw call below it still has all of it.
const MAX_ROWS = 200;

function imageIds(list) {
  if (!Array.isArray(list)) return [];
  return list
    .map((x) => (typeof x === 'string' ? x : x && typeof x.id === 'string' ? x.id : null))
    .filter((x) => x !== null && x !== '');
}

/** A thumbnail that opens the full image (app.js handles the click on any
 *  [data-image-id] button). */
export function imageButton(id, alt) {
  return el('button', {
    type: 'button',
    class: 'image-button',
    dataset: { imageId: id },
    title: 'Open full size',
  }, el('img', { src: api.imageUrl(id), alt, loading: 'lazy', decoding: 'async' }));
}

function pretty(v) {
  if (typeof v === 'string') return v; // "(redacted)"
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

export class ChatView {
  /** root: the #messages log; pending: where queued messages wait;
   *  scroller: the element that scrolls; hooks: onRunState(active),
   *  onImage(id, seq, tool, final: a call's result, not a render's
   *  progress), onRenderProgress(fraction), onLivePreview(data)
   *  (a "preview" event), onRunStarted(text),
   *  onRunEnded(type), onChange(empty). */
  constructor({ root, pending, scroller, hooks }) {
    this.root = root;
    this.pendingBox = pending;
    this.scroller = scroller;
    this.hooks = hooks;
    this.follow = null; // see watchScroll
    // One listener for every tool line's toggle.
    root.addEventListener('click', (e) => {
      const line = e.target.closest('.tool-line');
      if (line && root.contains(line)) this.toggle(line);
    });
    this.reset();
  }

  reset() {
    clear(this.root);
    clear(this.pendingBox);
    this.run = null; // the open run's state, or null
    this.lastRun = null; // its container, kept for a late run.interrupted
    this.active = false;
    this.rendering = false; // a render.progress came, and not its end
    this.hooks.onChange(true);
  }

  /** A message the user sent that has not started yet (the run before it
   *  is still going, or the POST is in flight). id is the daemon's id of
   *  the queued message (message.queued), null while the POST is in
   *  flight. run.started with the same id (or text) replaces it. */
  addPending(text, id = null) {
    const dataset = { pendingText: text };
    if (id !== null) dataset.queueId = String(id);
    const node = el('div', { class: 'msg msg-user pending', dataset },
      el('div', { class: 'bubble', text }),
      el('div', { class: 'msg-meta', text: 'queued' }));
    this.pendingBox.appendChild(node);
    this.stick();
    return node;
  }

  removePending(node) {
    if (node && node.parentNode) node.parentNode.removeChild(node);
  }

  /** The waiting message the daemon knows by id, or else the first one
   *  with this text that it has not numbered yet (the page's own, sent
   *  before its message.queued came back); null if none. */
  findPending(id, text) {
    const nodes = [...this.pendingBox.children];
    if (Number.isSafeInteger(id)) {
      const byId = nodes.find((p) => p.dataset.queueId === String(id));
      if (byId) return byId;
    }
    return nodes.find((p) => p.dataset.queueId === undefined && p.dataset.pendingText === text) || null;
  }

  // message.queued: the message waits in the daemon's queue (for a run,
  // or for messages sent before it); a replay after a reload shows it
  // waiting again from this event alone.
  messageQueued(d) {
    if (typeof d.text !== 'string' || !Number.isSafeInteger(d.id)) return;
    const node = this.findPending(d.id, d.text);
    if (node === null) this.addPending(d.text, d.id);
    else node.dataset.queueId = String(d.id);
  }

  // queue.cleared: a cancel dropped the waiting messages; they never run.
  queueCleared(d) {
    const ids = Array.isArray(d.ids) ? d.ids.filter(Number.isSafeInteger) : [];
    let n = 0;
    for (const id of ids) {
      const node = this.findPending(id, null);
      if (node !== null) {
        this.removePending(node);
        n++;
      }
    }
    if (n > 0 && this.lastRun !== null) {
      this.notice({ box: this.lastRun }, 'dropped',
        `${n} waiting message${n === 1 ? '' : 's'} dropped: the run was stopped.`);
    }
  }

  // ---- events ----

  apply(ev) {
    const wasEmpty = this.root.childElementCount === 0;
    this.watchScroll();
    const d = ev.data || {};
    switch (ev.type) {
      case 'message.queued': this.messageQueued(d); break;
      case 'queue.cleared': this.queueCleared(d); break;
      case 'run.started': this.runStarted(ev, d); break;
      case 'text.delta': this.textDelta(ev, d); break;
      case 'text.done': this.textDone(ev, d); break;
      case 'tool.started': this.toolStarted(ev, d); break;
      case 'tool.progress': this.toolProgress(d); break;
      case 'tool.finished': this.toolFinished(ev, d); break;
      case 'tool.results': this.unfinished('No result: the call did not run.'); break;
      case 'run.continued': this.runContinued(ev, d); break;
      case 'context.trimmed': this.contextTrimmed(ev, d); break;
      case 'context.compacted': this.contextCompacted(ev, d); break;
      case 'preview':
        if (this.hooks.onLivePreview) this.hooks.onLivePreview(d);
        break;
      case 'canvas.strokes':
      case 'canvas.piece':
        if (this.hooks.onCanvas) this.hooks.onCanvas(ev);
        break;
      case 'render.progress':
        if (typeof d.image === 'string' && d.image !== '') this.hooks.onImage(d.image, ev.seq, 'render_scene', false);
        if (Number.isFinite(d.fraction)) {
          this.rendering = d.fraction < 1;
          this.hooks.onRenderProgress(d.fraction);
        }
        break;
      default:
        if (RUN_END.has(ev.type)) this.runEnded(ev, d);
        // session.created and plugin events add nothing to the log.
    }
    if (wasEmpty && this.root.childElementCount > 0) this.hooks.onChange(false);
  }

  setActive(active) {
    if (this.active === active) return;
    this.active = active;
    this.hooks.onRunState(active);
  }

  // The open run's container, made on demand: events of a run whose start
  // is not shown (there should be none) still have somewhere to go.
  current(seq) {
    if (this.run === null) {
      const box = el('section', { class: 'run', dataset: { seq: String(seq), state: 'active' } });
      this.root.appendChild(box);
      this.run = { box, stream: null, matcher: new CallMatcher(), lastDone: null, seq };
      this.lastRun = box;
    }
    return this.run;
  }

  runStarted(ev, d) {
    if (this.run !== null) this.closeRun('ended', null); // never ended: say so
    const text = typeof d.text === 'string' ? d.text : '';
    // The waiting message it starts, by its id (message_id), else by its
    // text: the page's own, if it never waited.
    let waiting = this.findPending(d.message_id, text);
    if (waiting === null)
      waiting = [...this.pendingBox.children].find((p) => p.dataset.pendingText === text) || null;
    this.removePending(waiting);
    this.root.appendChild(el('div', { class: 'msg msg-user', dataset: { seq: String(ev.seq) } },
      el('div', { class: 'bubble', text })));
    const run = this.current(ev.seq);
    const meta = [d.model, d.provider].filter((x) => typeof x === 'string' && x !== '');
    if (meta.length > 0)
      run.box.appendChild(el('div', { class: 'run-meta', text: meta.join(' · ') }));
    this.setActive(true);
    this.hooks.onRunStarted(text);
  }

  textDelta(ev, d) {
    if (typeof d.text !== 'string' || d.text === '') return;
    const run = this.current(ev.seq);
    if (run.stream === null) {
      const bubble = el('div', { class: 'bubble md', attrs: { 'aria-busy': 'true' } });
      run.stream = bubble;
      run.box.appendChild(el('div', { class: 'msg msg-assistant streaming', dataset: { seq: String(ev.seq) } }, bubble));
    }
    // Plain text while it streams; Markdown once the message is whole.
    run.stream.appendChild(document.createTextNode(d.text));
  }

  textDone(ev, d) {
    const run = this.current(ev.seq);
    const text = typeof d.text === 'string' ? d.text : '';
    let bubble = run.stream;
    run.stream = null;
    if (bubble === null) {
      if (text === '') return;
      bubble = el('div', { class: 'bubble md' });
      run.box.appendChild(el('div', { class: 'msg msg-assistant', dataset: { seq: String(ev.seq) } }, bubble));
    }
    const msg = bubble.parentNode;
    msg.classList.remove('streaming');
    bubble.removeAttribute('aria-busy');
    // The whole text replaces the pieces: a retried turn may have streamed
    // part of its answer twice, and only now can Markdown be parsed.
    const whole = text !== '' ? text : bubble.textContent;
    clear(bubble);
    bubble.appendChild(buildMarkdown(parseMarkdown(whole)));
    if (Number.isFinite(d.latency_ms)) msg.title = `answered in ${d.latency_ms} ms`;
    run.lastDone = { text, msg };
  }

  toolStarted(ev, d) {
    const run = this.current(ev.seq);
    const tool = typeof d.tool === 'string' ? d.tool : '';
    const box = el('div', {
      class: 'tool-call',
      dataset: { state: 'pending', tool, seq: String(ev.seq) },
    });
    if (typeof d.id === 'string') box.dataset.callId = d.id;
    box.started = d; // kept for the details until the call finishes
    this.fillTool(box, {
      state: 'pending',
      icon: 'running',
      summary: startedSummary(d) + '…',
      facts: [['Function', tool], ['Status', 'Running']],
      args: { name: tool, arguments: d.arguments },
    });
    run.box.appendChild(box);
    run.matcher.start(box, tool, typeof d.id === 'string' ? d.id : null);
  }

  toolProgress(d) {
    if (this.run === null) return;
    const box = this.run.matcher.peek(typeof d.tool === 'string' ? d.tool : '');
    if (box === null) return;
    let bar = box.querySelector('.tool-progress');
    if (bar === null) {
      bar = el('progress', { class: 'tool-progress', max: 1 });
      box.querySelector('.tool-line').after(bar);
    }
    if (Number.isFinite(d.fraction)) bar.value = Math.min(1, Math.max(0, d.fraction));
    if (typeof d.message === 'string') bar.title = d.message;
    if (typeof d.message === 'string') bar.setAttribute('aria-label', d.message);
  }

  toolFinished(ev, d) {
    const op = d.operation && typeof d.operation === 'object' ? d.operation : {};
    const tool = typeof op.tool === 'string' ? op.tool : '';
    // The person's own strokes are drawn on the canvas, not logged.
    if (tool === 'add_human_stroke') return;
    const run = this.current(ev.seq);
    let box = run.matcher.finish(tool, typeof d.id === 'string' ? d.id : null);
    if (box === null) {
      box = el('div', { class: 'tool-call', dataset: { tool, seq: String(ev.seq) } });
      run.box.appendChild(box);
    }
    const ok = d.success === true;
    const images = imageIds(d.images);
    const facts = [
      ['Function', tool],
      ['Target', typeof op.target === 'string' && op.target !== '' ? op.target : '—'],
      ['Status', ok ? 'Success' : 'Failed'],
    ];
    if (Number.isFinite(d.duration_ms)) facts.push(['Duration', `${d.duration_ms} ms`]);
    // A call another program made (an MCP client): who, as atelierd says.
    const via = typeof d.via === 'string' && d.via !== '' ? d.via : null;
    if (via !== null) facts.push(['Called by', via]);
    const hasChange = op.before !== undefined || op.after !== undefined;
    this.fillTool(box, {
      state: ok ? 'ok' : 'failed',
      icon: ok ? 'done' : 'failed',
      summary: finishedSummary(d),
      facts,
      changes: hasChange ? diff(op.before, op.after) : null,
      error: ok ? null : (typeof d.error === 'string' && d.error !== '' ? d.error : 'The call failed.'),
      args: { name: tool, arguments: op.arguments !== undefined ? op.arguments : (box.started || {}).arguments },
      images,
      via,
    });
    // The drawing tools' images are the canvas, which the Canvas view
    // draws itself; the Scene view keeps showing the scene.
    if (images.length > 0 && !CANVAS_TOOLS.has(tool)) this.hooks.onImage(images[images.length - 1], ev.seq, tool, true);
    if (tool === 'render_scene') this.renderEnded();
  }

  // The progress bar of a render goes when its call ends, or its run: the
  // last render.progress comes before the last samples, never at 1.
  renderEnded() {
    if (!this.rendering) return;
    this.rendering = false;
    this.hooks.onRenderProgress(1);
  }

  // Calls that started but will get no tool.finished: cancelled, broken
  // arguments, or cut off by a restart.
  unfinished(reason) {
    if (this.run === null) return;
    for (const box of this.run.matcher.drain()) {
      const d = box.started || {};
      this.fillTool(box, {
        state: 'notrun',
        icon: 'stopped',
        summary: toolTitle(d.tool) + ' — not run',
        facts: [['Function', d.tool || ''], ['Status', 'Not run']],
        error: reason,
        args: { name: d.tool, arguments: d.arguments },
      });
    }
  }

  // A notice in the open run: role=alert for what went wrong, else status.
  notice(run, kind, text, alert = false, ...children) {
    const node = el('div', {
      class: 'notice',
      dataset: { kind },
      attrs: { role: alert ? 'alert' : 'status' },
      text: children.length > 0 ? null : text,
    }, children.length > 0 ? el('span', { class: 'notice-text', text }) : null, ...children);
    run.box.appendChild(node);
    return node;
  }

  // The loop kept the run going after a turn ended abnormally; what the
  // model says next comes as the run's next text.delta/text.done, in a
  // bubble of its own below this notice (the cut turn had its text.done).
  runContinued(ev, d) {
    const run = this.current(ev.seq);
    const n = isCount(d.attempt) && d.attempt > 0 ? ` (${d.attempt})` : '';
    let text;
    switch (d.reason) {
      case 'max_tokens':
        text = `The answer reached the output limit; continuing${n}…`;
        break;
      case 'malformed_function_call':
        text = `The model's tool call could not be read; it was told and is trying again${n}…`;
        break;
      case 'pause_turn':
        text = 'Paused by the provider; resuming…';
        break;
      default:
        text = `The model's turn ended early; continuing${n}…`;
    }
    const node = this.notice(run, 'continued', text);
    // What the loop told the model, for whoever wonders.
    if (typeof d.text === 'string' && d.text !== '') node.title = d.text;
    if (typeof d.reason === 'string') node.dataset.reason = d.reason;
  }

  contextTrimmed(ev, d) {
    const run = this.current(ev.seq);
    const size = isCount(d.tokens) && isCount(d.budget) && d.budget > 0
      ? ` (about ${count(d.tokens)} of ${count(d.budget)} tokens)` : '';
    this.notice(run, 'trimmed',
      `Older tool results are now sent to the model in short, to fit its context window${size}.`);
  }

  // The summary is the model's words about the conversation: Markdown
  // through the safe builder, folded away in a <details>. Without one the
  // messages were dropped, and the error says why.
  contextCompacted(ev, d) {
    const run = this.current(ev.seq);
    const n = d.messages;
    const which = !isCount(n) ? 'The oldest messages were'
      : n === 1 ? 'The oldest message was' : `The ${count(n)} oldest messages were`;
    if (typeof d.summary === 'string' && d.summary !== '') {
      const body = el('div', { class: 'md notice-summary' });
      body.appendChild(buildMarkdown(parseMarkdown(d.summary)));
      this.notice(run, 'compacted', `${which} summarised to fit the model's context window.`, false,
        el('details', { class: 'notice-details' }, el('summary', { text: 'Summary' }), body));
    } else {
      const why = typeof d.error === 'string' && d.error !== '' ? `: ${d.error}` : '.';
      this.notice(run, 'dropped', `${which} dropped to fit the model's context window${why}`);
    }
  }

  runEnded(ev, d) {
    this.renderEnded();
    const run = this.current(ev.seq);
    const message = typeof d.message === 'string' ? d.message : '';
    let notice = null;
    switch (ev.type) {
      case 'run.limit_reached':
        // The same words came as the run's last text.done: show them once.
        if (run.lastDone && run.lastDone.text === message) run.lastDone.msg.remove();
        notice = ['limit', message || 'The turn limit was reached.'];
        break;
      case 'run.cancelled':
        notice = ['cancelled', 'Stopped.'];
        break;
      case 'run.error': {
        const status = Number.isFinite(d.status) ? ` (HTTP ${d.status})` : '';
        if (d.reason === 'refusal' || d.reason === 'safety')
          notice = ['declined', `Declined: ${message || 'the model would not answer.'}`];
        else if (d.reason === 'max_tokens' || d.reason === 'context')
          notice = ['error', `Stopped: ${message || 'the run could not go on.'}`];
        else
          notice = ['error', `Error${status}: ${message || 'the run failed.'}`];
        break;
      }
      case 'run.interrupted':
        notice = ['interrupted', message || 'The previous run was interrupted.'];
        break;
    }
    const reason = ev.type === 'run.interrupted'
      ? 'Interrupted: atelierd stopped before this call ran.'
      : ev.type === 'run.cancelled' ? 'Not run: the run was stopped.' : 'No result: the call did not run.';
    this.unfinished(reason);
    if (notice !== null) {
      const node = this.notice(run, notice[0], notice[1], notice[0] === 'error' || notice[0] === 'declined');
      if (ev.type === 'run.error' && typeof d.reason === 'string') node.dataset.reason = d.reason;
    }
    this.closeRun(ev.type.slice(4), usageLine(d));
    this.hooks.onRunEnded(ev.type);
  }

  closeRun(state, footer) {
    const run = this.run;
    if (run === null) return;
    if (run.stream !== null) {
      // An answer cut off mid-stream (a cancel): what came stays, marked.
      run.stream.removeAttribute('aria-busy');
      run.stream.parentNode.classList.remove('streaming');
      run.stream.parentNode.classList.add('partial');
      run.stream = null;
    }
    this.unfinished('Not run: the run ended first.');
    run.box.dataset.state = state;
    if (footer) run.box.appendChild(el('div', { class: 'run-footer', text: footer }));
    this.run = null;
    this.setActive(false);
  }

  /** Ends the run locally when the daemon says none is active (the Stop
   *  button on a run a restart killed, which sent no end event). */
  forceEnd(text) {
    if (this.run === null) return;
    this.run.box.appendChild(el('div', { class: 'notice', dataset: { kind: 'interrupted' }, text }));
    this.closeRun('ended', null);
  }

  // ---- a tool call's line and details ----

  fillTool(box, m) {
    const old = box.querySelector(':scope > .tool-line');
    const expanded = old !== null && old.getAttribute('aria-expanded') === 'true';
    const detailsId = 'tc-' + box.dataset.seq;
    clear(box);
    box.dataset.state = m.state;
    const line = el('button', {
      type: 'button',
      class: 'tool-line',
      attrs: { 'aria-expanded': String(expanded), 'aria-controls': detailsId },
    },
    el('span', { class: 'tool-icon icon icon-' + m.icon, attrs: { 'aria-hidden': 'true' } }),
    el('span', { class: 'tool-summary', text: m.summary }),
    m.via ? el('span', { class: 'tool-via', text: 'via ' + m.via }) : null,
    el('span', { class: 'tool-toggle', attrs: { 'aria-hidden': 'true' }, text: expanded ? '[-]' : '[+]' }));
    if (m.via) box.dataset.via = m.via;
    box.appendChild(line);
    if (m.error && m.state === 'failed')
      box.appendChild(el('div', { class: 'tool-error' }, icon('failed'), el('span', { text: 'Error: ' + firstLine(m.error) })));

    const details = el('div', { class: 'tool-details', id: detailsId, hidden: !expanded });
    const dl = el('dl', { class: 'tool-facts' });
    for (const [k, v] of m.facts) append(dl, [el('dt', { text: k }), el('dd', { text: v })]);
    details.appendChild(dl);
    if (m.changes) {
      details.appendChild(el('h4', { text: 'Changes' }));
      const list = el('ul', { class: 'diff' });
      if (m.changes.length === 0) list.appendChild(el('li', { class: 'diff-none', text: '(no changes)' }));
      for (const r of m.changes.slice(0, MAX_ROWS)) list.appendChild(this.diffRow(r));
      if (m.changes.length > MAX_ROWS)
        list.appendChild(el('li', { class: 'diff-none', text: `… and ${m.changes.length - MAX_ROWS} more changes` }));
      details.appendChild(list);
    }
    if (m.error) {
      details.appendChild(el('h4', { text: 'Error' }));
      details.appendChild(el('pre', { class: 'tool-error-text', text: m.error }));
      const hint = errorHint(m.error);
      if (hint) details.appendChild(el('p', { class: 'tool-hint', text: 'Suggestion: ' + hint }));
    }
    details.appendChild(el('h4', { text: 'Raw function call' }));
    details.appendChild(el('pre', { class: 'tool-args', text: pretty(m.args) }));
    if (m.images && m.images.length > 0)
      details.appendChild(el('div', { class: 'tool-images' },
        m.images.map((id, i) => imageButton(id, `image ${i + 1} from ${m.args.name || 'the tool'}`))));
    box.appendChild(details);
  }

  diffRow(r) {
    const path = r.path === '' ? '(value)' : r.path;
    const row = el('li', { class: 'diff-row', dataset: { kind: r.kind, path } },
      el('span', { class: 'diff-path', text: path }), ': ');
    if (r.kind === 'changed') {
      append(row, [el('span', { class: 'diff-old', text: formatValue(r.before) }),
        el('span', { class: 'diff-arrow', text: ' → ' }),
        el('span', { class: 'diff-new', text: formatValue(r.after) })]);
    } else if (r.kind === 'added') {
      append(row, [el('span', { class: 'diff-tag', text: 'added ' }),
        el('span', { class: 'diff-new', text: formatValue(r.after) })]);
    } else {
      append(row, [el('span', { class: 'diff-tag', text: 'removed ' }),
        el('span', { class: 'diff-old', text: formatValue(r.before) })]);
    }
    return row;
  }

  toggle(line) {
    const open = line.getAttribute('aria-expanded') !== 'true';
    line.setAttribute('aria-expanded', String(open));
    line.querySelector('.tool-toggle').textContent = open ? '[-]' : '[+]';
    const details = line.parentNode.querySelector(':scope > .tool-details');
    if (details) details.hidden = !open;
  }

  // ---- scrolling: follow the end only when the reader is there ----

  // Whether to follow is measured once per frame, before the frame's first
  // change, and the scroll happens in that frame's rAF: a replay of
  // thousands of deltas then costs one layout per frame, not one per event.
  watchScroll() {
    if (this.follow !== null) return;
    const s = this.scroller;
    this.follow = s.scrollHeight - s.scrollTop - s.clientHeight < 80;
    requestAnimationFrame(() => {
      if (this.follow) s.scrollTop = s.scrollHeight;
      this.follow = null;
    });
  }

  /** Scrolls to the end in the next frame whatever the position. */
  stick() {
    this.watchScroll();
    this.follow = true;
  }
}
