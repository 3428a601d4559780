// Event bookkeeping that needs no DOM: which types end a run, the seq
// filter that makes reconnects and replays safe, and the pairing of
// tool.started with tool.finished.

/** The event types the page listens for (EventSource needs each name). */
export const EVENT_TYPES = [
  'session.created',
  'message.queued',
  'queue.cleared',
  'run.started',
  'text.delta',
  'text.done',
  'tool.started',
  'tool.progress',
  'tool.finished',
  'tool.results',
  'run.continued',
  'context.trimmed',
  'context.compacted',
  'render.progress',
  'preview',
  'canvas.strokes',
  'canvas.piece',
  'run.completed',
  'run.limit_reached',
  'run.cancelled',
  'run.error',
  'run.interrupted',
];

/** Types after which no run is active. run.interrupted is one: it reports
 *  that the previous run died with atelierd, and that run never sent an
 *  end of its own. */
export const RUN_END = new Set([
  'run.completed',
  'run.limit_reached',
  'run.cancelled',
  'run.error',
  'run.interrupted',
]);

/** Keeps the highest seq applied and refuses anything at or below it.
 *  Every event goes through accept() before it touches the page, so a
 *  replay overlapping what is shown, a reconnect that resends, or two
 *  streams racing during a switch can never show an event twice; and since
 *  the next connection asks for `after=last`, none is lost either. */
export class SeqTracker {
  constructor(last = 0) {
    this.last = last;
  }

  accept(seq) {
    if (!Number.isSafeInteger(seq) || seq <= this.last) return false;
    this.last = seq;
    return true;
  }
}

/** tool.finished does not carry the call's id, but a session's calls run
 *  one at a time, in the order they started: a finish belongs to the
 *  oldest unfinished start of the same tool. Keys are whatever the caller
 *  uses to find its line again. */
export class CallMatcher {
  constructor() {
    this.pending = []; // [{key, tool, id}], oldest first
  }

  start(key, tool, id = null) {
    this.pending.push({ key, tool, id });
  }

  /** The pending key of this call (removed): the one with the call's id
   *  when tool.finished names it (atelierd does for the model's calls),
   *  else the oldest one of this tool; null when the call never started
   *  here (a /tool call, or a replay's first event). */
  finish(tool, id = null) {
    let i = id === null ? -1 : this.pending.findIndex((p) => p.id === id);
    if (i === -1) i = this.pending.findIndex((p) => p.tool === tool);
    if (i === -1) return null;
    return this.pending.splice(i, 1)[0].key;
  }

  /** The pending key for progress reports of this tool, or null. */
  peek(tool) {
    const p = this.pending.find((q) => q.tool === tool);
    return p ? p.key : null;
  }

  /** Everything still pending (removed): the calls that got no
   *  tool.finished, because the run was cancelled or their arguments were
   *  broken. */
  drain() {
    const keys = this.pending.map((p) => p.key);
    this.pending = [];
    return keys;
  }
}

/** An SSE message's data as an event {seq, type, ts, data}, or null.
 *  `fallbackSeq` (the SSE id) and `fallbackType` (the SSE event name)
 *  fill in what the JSON lacks. */
export function parseEvent(text, fallbackType, fallbackSeq) {
  let ev;
  try {
    ev = JSON.parse(text);
  } catch {
    return null;
  }
  if (ev === null || typeof ev !== 'object' || Array.isArray(ev)) return null;
  if (!Number.isSafeInteger(ev.seq)) {
    const n = Number(fallbackSeq);
    if (!Number.isSafeInteger(n) || fallbackSeq === '' || fallbackSeq == null) return null;
    ev.seq = n;
  }
  if (typeof ev.type !== 'string') ev.type = fallbackType;
  if (ev.data === null || typeof ev.data !== 'object') ev.data = {};
  return ev;
}

/** "3 turns · 1,234 in / 56 out tokens" for a run's end, or "". */
export function usageLine(data) {
  if (!data || typeof data !== 'object') return '';
  const parts = [];
  if (Number.isFinite(data.turns) && data.turns > 0)
    parts.push(`${data.turns} turn${data.turns === 1 ? '' : 's'}`);
  const u = data.usage;
  if (u && (u.input_tokens > 0 || u.output_tokens > 0)) {
    const n = (x) => (Number.isFinite(x) ? x : 0).toLocaleString('en-US');
    parts.push(`${n(u.input_tokens)} in / ${n(u.output_tokens)} out tokens`);
  }
  return parts.join(' · ');
}
