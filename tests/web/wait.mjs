// Waiting in the page's unit cases. What must happen is waited for
// (until), not given a fixed time: a busy machine's timers run late. What
// must not happen is still given a time to happen in (sleep).

import assert from 'node:assert/strict';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Waits until cond() holds, or fails after ms saying what. */
export async function until(cond, what, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) assert.fail('not within ' + ms + ' ms: ' + what);
    await sleep(10);
  }
}
