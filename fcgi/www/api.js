// The HTTP API under /api/ (same origin, served by the FastCGI bridge).
// Every call resolves to the parsed JSON body or throws an ApiError with
// the status and the server's `error` message, so callers show one thing.

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.name = 'ApiError';
    this.status = status; // 0 when the server could not be reached
    this.body = body;
  }
}

async function request(method, path, body) {
  const opts = {
    method,
    headers: { Accept: 'application/json' },
    cache: 'no-store',
    // The token travels in an HttpOnly cookie that only same-origin
    // requests carry (doc/deploy.md); never anywhere else.
    credentials: 'same-origin',
  };
  // Every POST is JSON, even without a body: the bridge refuses any other
  // (or none) with 415, which is what stops a cross-site form post.
  if (body !== undefined || method === 'POST') {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body === undefined ? {} : body);
  }
  let res;
  try {
    res = await fetch('/api' + path, opts);
  } catch (e) {
    throw new ApiError(0, 'The server cannot be reached.', null);
  }
  const text = await res.text();
  let data = null;
  try {
    data = text === '' ? null : JSON.parse(text);
  } catch {
    data = null;
  }
  if (res.status === 401 && path !== '/auth' && typeof api.onUnauthorized === 'function') {
    api.onUnauthorized(data && typeof data.error === 'string' ? data.error : '');
  }
  if (!res.ok) {
    const msg = data && typeof data.error === 'string' && data.error !== ''
      ? data.error
      : `${res.status} ${res.statusText || 'error'}`;
    throw new ApiError(res.status, msg, data);
  }
  return data;
}

const sid = (id) => '/sessions/' + encodeURIComponent(id);

export const api = {
  // The token of the link (?token=) for the cookie that logs this browser in.
  login: (token) => request('POST', '/auth', { token }),
  health: () => request('GET', '/health'),
  models: () => request('GET', '/models'),
  tools: () => request('GET', '/tools'),
  listSessions: () => request('GET', '/sessions'),
  createSession: (model) => request('POST', '/sessions', model ? { model } : {}),
  getSession: (id) => request('GET', sid(id)),
  deleteSession: (id) => request('DELETE', sid(id)),
  send: (id, text, model) =>
    request('POST', sid(id) + '/messages', model ? { text, model } : { text }),
  cancel: (id) => request('POST', sid(id) + '/cancel', {}),
  // A tool call made by the person (the Canvas view): the envelope.
  callTool: (id, name, args) =>
    request('POST', sid(id) + '/tools/' + encodeURIComponent(name), args || {}),
  eventsUrl: (id, after) => '/api' + sid(id) + '/events?after=' + encodeURIComponent(String(after)),
  imageUrl: (id) => '/api/images/' + encodeURIComponent(id) + '.png',
  // The live preview (memory only: a replaced one is a 404).
  previewUrl: (id) => '/api/previews/' + encodeURIComponent(id) + '.png',
  // A new live preview now, at "fast" or "hq" from now on (null: as is),
  // of one view ("scene", "optics"; null: every one the session has).
  requestPreview: (id, quality, view) => {
    const body = {};
    if (quality) body.quality = quality;
    if (view) body.view = view;
    return request('POST', sid(id) + '/preview', body);
  },
  // Called with the server's message when a request is refused for want
  // of the token (set by app.js).
  onUnauthorized: null,
};

/** Session ids are 32 lowercase hex digits; anything else in the URL hash
 *  is ignored rather than sent to the server. */
export const isSessionId = (s) => typeof s === 'string' && /^[0-9a-f]{32}$/.test(s);
