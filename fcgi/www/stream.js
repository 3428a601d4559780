// A session's event stream: EventSource with the seq filter in front.
//
// The page replays a session from seq 0 and renders only from events, so
// a reload shows exactly what a live viewer saw. EventSource reconnects by
// itself after a network drop and sends Last-Event-ID; the bridge resumes
// after it. When the browser gives up instead (an HTTP error such as 503
// while atelierd is down closes an EventSource for good), a new one is
// opened here with ?after=<last seq applied>, with a growing delay. Either
// way every event passes SeqTracker.accept, so nothing is shown twice.

import { EVENT_TYPES, SeqTracker, parseEvent } from './events.js';
import { api } from './api.js';

const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 15000;

export class EventStream {
  /** onEvent(ev) gets each new event once, in order; onState(state) gets
   *  "connecting", "open", "reconnecting" or "down". */
  constructor(sessionId, { onEvent, onState }) {
    this.sessionId = sessionId;
    this.onEvent = onEvent;
    this.onState = onState;
    this.seq = new SeqTracker(0);
    this.es = null;
    this.timer = null;
    this.delay = RETRY_MIN_MS;
    this.closed = false;
  }

  open() {
    if (this.closed) return;
    this.onState('connecting');
    const es = new EventSource(api.eventsUrl(this.sessionId, this.seq.last));
    this.es = es;
    // Only the current source is listened to: a replaced one that still
    // delivers a buffered event cannot interleave with its successor.
    const handler = (e) => { if (this.es === es) this.message(e); };
    for (const t of EVENT_TYPES) es.addEventListener(t, handler);
    // Events without an `event:` line (or of a type not listed) arrive
    // as "message"; they still carry their type in the JSON.
    es.addEventListener('message', handler);
    es.onopen = () => {
      if (this.es !== es) return;
      this.delay = RETRY_MIN_MS;
      this.onState('open');
    };
    es.onerror = () => {
      if (this.es !== es || this.closed) return;
      if (es.readyState === EventSource.CLOSED) {
        this.onState('down');
        this.retry();
      } else {
        this.onState('reconnecting');
      }
    };
  }

  retry() {
    if (this.es) this.es.close();
    this.es = null;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.open(), this.delay);
    this.delay = Math.min(this.delay * 2, RETRY_MAX_MS);
  }

  /** Reconnects at once (the page came back online or into view). */
  kick() {
    if (this.closed || (this.es && this.es.readyState !== EventSource.CLOSED)) return;
    clearTimeout(this.timer);
    this.delay = RETRY_MIN_MS;
    this.open();
  }

  message(e) {
    if (this.closed) return;
    const ev = parseEvent(e.data, e.type, e.lastEventId);
    if (ev === null || !this.seq.accept(ev.seq)) return;
    try {
      this.onEvent(ev);
    } catch (err) {
      // One badly formed event must not stop the rest from showing.
      console.error('event', ev.seq, ev.type, err);
    }
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    if (this.es) this.es.close();
    this.es = null;
  }
}
