// How a tool call reads in one line: "Created shape: blue_sphere",
// "Updated shape: blue_sphere → red_sphere", "Creating shape: ball" while
// it runs, and a hint under a failure. Only the tool's name and the event's
// data are used, so a new plugin's tools read sensibly without changes
// here: verb_noun names get a verb, anything else shows its own name.

// The verb of a tool name → [past, in progress].
const VERBS = {
  create: ['Created', 'Creating'],
  update: ['Updated', 'Updating'],
  remove: ['Removed', 'Removing'],
  delete: ['Deleted', 'Deleting'],
  add: ['Added', 'Adding'],
  set: ['Set', 'Setting'],
  render: ['Rendered', 'Rendering'],
  import: ['Imported', 'Importing'],
  export: ['Exported', 'Exporting'],
  describe: ['Described', 'Describing'],
  get: ['Read', 'Reading'],
};

// "create_shape" → ["create", "shape"]; names without a known verb → null.
function split(tool) {
  if (typeof tool !== 'string') return null;
  const words = tool.split('_').filter((w) => w !== '');
  if (words.length < 2 || !Object.hasOwn(VERBS, words[0])) return null;
  return [words[0], words.slice(1).join(' ')];
}

/** "create_shape" → "Created shape" (or "Creating shape" when running);
 *  a name without a known verb is returned as it is. */
export function toolTitle(tool, running = false) {
  const parts = split(tool);
  if (parts === null) return typeof tool === 'string' && tool !== '' ? tool : 'tool';
  const [verb, noun] = parts;
  return `${VERBS[verb][running ? 1 : 0]} ${noun}`;
}

const str = (v) => (typeof v === 'string' && v !== '' ? v : null);
const field = (o, k) => (o !== null && typeof o === 'object' ? str(o[k]) : null);

// A subject that only repeats the noun ("Set camera: camera") is dropped.
function redundant(tool, subject) {
  const parts = split(tool);
  return parts !== null && subject.replace(/_/g, ' ').toLowerCase() === parts[1].toLowerCase();
}

/** What a finished call acted on: {from, to} when an id or name changed
 *  (before → after), else {subject} (possibly null). `op` is the
 *  tool.finished event's `operation`. */
export function toolSubject(op) {
  op = op || {};
  for (const k of ['id', 'name']) {
    const from = field(op.before, k);
    const to = field(op.after, k);
    if (from !== null && to !== null && from !== to) return { from, to };
  }
  const args = op.arguments;
  const subject = str(op.target) ?? field(op.after, 'id') ?? field(op.before, 'id') ??
    field(args, 'id') ?? field(args, 'name');
  if (subject !== null && redundant(op.tool, subject)) return { subject: null };
  return { subject };
}

/** The one-line summary of a tool.finished event's data. */
export function finishedSummary(data) {
  const op = (data && data.operation) || {};
  // A failed call did not do what its name says: "Could not create
  // shape: bad_sphere", not "Created shape" in red.
  const failed = data && data.success === false;
  const parts = split(op.tool);
  const title = !failed ? toolTitle(op.tool)
    : parts !== null ? `Could not ${parts[0]} ${parts[1]}`
    : `${toolTitle(op.tool)} failed`;
  const s = toolSubject(op);
  if (s.from !== undefined) return `${title}: ${s.from} → ${s.to}`;
  return s.subject === null ? title : `${title}: ${s.subject}`;
}

/** The line of a tool.started event's data, while the call runs. */
export function startedSummary(data) {
  data = data || {};
  const title = toolTitle(data.tool, true);
  let subject = field(data.arguments, 'id') ?? field(data.arguments, 'name');
  if (subject !== null && redundant(data.tool, subject)) subject = null;
  return subject === null ? title : `${title}: ${subject}`;
}

/** A suggestion to show under a tool's error, or null. */
export function errorHint(error) {
  if (typeof error !== 'string' || error === '') return null;
  const e = error.toLowerCase();
  if (e.startsWith('not run') || e.includes('cancelled'))
    return 'The run was stopped before this call; send the message again to retry it.';
  if (e.includes('interrupted'))
    return 'atelierd restarted during the run; the call did not run.';
  if (e.includes('timed out'))
    return 'The tool took too long. Try a smaller change or a lower quality.';
  if (e.includes('not found'))
    return 'Check the id against the existing ones listed in the error, or create it first.';
  if (e.includes('unknown tool') || e.includes('no such tool'))
    return 'The model asked for a tool that does not exist; the error lists the ones that do.';
  if (/(^|\n)\/\S*:/.test(error) || e.includes('expected'))
    return 'The arguments did not fit the tool: each line names the value (as a JSON pointer) and what it should be.';
  return null;
}
