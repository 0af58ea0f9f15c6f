// The credential, the HTTP and streaming API calls, errors and Server-Sent Events.
const CRED_KEY = 'conclave.credential';
let config = { stream_url: '', oidc: null, allow_remote_images: false };
let unauthorized = () => {};

export function setConfig(c) { config = c; }
export function getConfig() { return config; }
export function onUnauthorized(fn) { unauthorized = fn; }

export function getCredential() {
  try {
    const c = JSON.parse(sessionStorage.getItem(CRED_KEY) || 'null');
    if (c && (c.kind === 'bearer' || c.kind === 'key') && typeof c.value === 'string' && c.value) return c;
  } catch { /* a broken item is no credential */ }
  return null;
}
export function setCredential(kind, value) { sessionStorage.setItem(CRED_KEY, JSON.stringify({ kind, value })); }
// Every request of a signed-in person is ended when they sign out, so that
// nothing read for them is drawn after (or for the next person).
let session = new AbortController();
const within = (signal) => (signal ? AbortSignal.any([signal, session.signal]) : session.signal);

export function clearCredential() {
  sessionStorage.clear();
  session.abort();
  session = new AbortController();
}

// tokenClaims decodes a JWT's payload for display only (never trusted).
export function tokenClaims(token) {
  try {
    const p = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const bin = atob(p + '='.repeat((4 - p.length % 4) % 4));
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(bin, (ch) => ch.charCodeAt(0))));
  } catch { return {}; }
}
export function tokenExpired(c = getCredential()) {
  if (!c || c.kind !== 'bearer') return false;
  const { exp } = tokenClaims(c.value);
  return typeof exp === 'number' && exp * 1000 <= Date.now();
}

function authHeaders() {
  const c = getCredential();
  if (!c) return {};
  return c.kind === 'bearer' ? { Authorization: `Bearer ${c.value}` } : { 'X-Api-Key': c.value };
}

export class ApiError extends Error {
  constructor(status, body) {
    const e = body && typeof body.error === 'object' && body.error ? body.error : null;
    super(e ? String(e.message || e.code || 'error') : (body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.code = e ? e.code : '';
    this.reason = e ? e.reason || '' : '';
    this.field = e ? e.field || '' : '';
    this.requestId = (body && body.request_id) || '';
    this.gateway = !e; // API Gateway's own answer ({"message": …}): the authorizer refused
  }
}

const errorBox = () => document.getElementById('error');
export function showError(err) {
  const box = errorBox();
  if (!box || (err && err.name === 'AbortError')) return; // ended on purpose (sign-out, leaving a page)
  if (!err) { box.textContent = ''; return; }
  let text = typeof err === 'string' ? err : err.message || String(err);
  if (err instanceof ApiError) {
    if (err.field) text += ` (field: ${err.field})`;
    if (err.requestId) text += ` [request ${err.requestId}]`;
  }
  box.textContent = text;
}
export function clearError() { showError(null); }

// A refusal of the credential itself (not of a route) sends the person back to sign in.
function checkAuth(err) {
  if (err.status === 401 || (err.status === 403 && (err.gateway || tokenExpired()))) {
    unauthorized(tokenExpired() ? 'Your session has expired: sign in again.' : 'The credential was refused: sign in again.');
    return true;
  }
  return false;
}

async function errorFrom(res) {
  let body = null;
  try { body = await res.json(); } catch { /* not JSON */ }
  const err = new ApiError(res.status, body);
  err.authHandled = checkAuth(err);
  return err;
}

// api calls the HTTP API (same origin); a POST that creates carries an Idempotency-Key.
export async function api(path, { method = 'GET', body, signal, idempotent = method === 'POST' } = {}) {
  const headers = { Accept: 'application/json', ...authHeaders() };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (idempotent) headers['Idempotency-Key'] = crypto.randomUUID();
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: within(signal), cache: 'no-store' });
  if (!res.ok) throw await errorFrom(res);
  if (res.status === 204) return null;
  return res.json();
}

// stream opens a Server-Sent Events response on the streaming API and calls
// onEvent({event, data, id}) per frame; it resolves with the last event id
// when the stream ends ({ended: true} on a 204).
export async function stream(path, { method = 'GET', body, signal, lastEventId, onEvent, onOpen }) {
  const headers = { Accept: 'text/event-stream', ...authHeaders() };
  if (body !== undefined) { headers['Content-Type'] = 'application/json'; headers['Idempotency-Key'] = crypto.randomUUID(); }
  if (lastEventId) headers['Last-Event-ID'] = lastEventId;
  const res = await fetch(config.stream_url.replace(/\/$/, '') + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: within(signal), cache: 'no-store' });
  if (!res.ok) throw await errorFrom(res);
  if (onOpen) onOpen();
  if (res.status === 204 || !res.body) return { lastEventId, ended: true };
  const ctype = res.headers.get('Content-Type') || '';
  if (!ctype.includes('text/event-stream')) { // answered whole (201)
    onEvent({ event: 'done', data: await res.json(), id: '' });
    return { lastEventId, ended: true };
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let ev = '';
  let data = [];
  let id = lastEventId || '';
  const line = (l) => {
    if (l === '') {
      if (data.length) {
        let parsed = data.join('\n');
        try { parsed = JSON.parse(parsed); } catch { /* keep the text */ }
        onEvent({ event: ev || 'message', data: parsed, id });
      }
      ev = ''; data = [];
      return;
    }
    if (l[0] === ':') return;
    const i = l.indexOf(':');
    const field = i < 0 ? l : l.slice(0, i);
    let value = i < 0 ? '' : l.slice(i + 1);
    if (value[0] === ' ') value = value.slice(1);
    if (field === 'event') ev = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' && !value.includes('\0')) id = value;
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let nl;
    while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
      const crlf = buf[nl] === '\r' && buf[nl + 1] === '\n';
      if (buf[nl] === '\r' && nl + 1 === buf.length) break; // a \r that may precede \n
      line(buf.slice(0, nl));
      buf = buf.slice(nl + (crlf ? 2 : 1));
    }
  }
  buf += dec.decode();
  if (buf) line(buf);
  line('');
  return { lastEventId: id, ended: false };
}

// follow keeps a resumable event stream open (reconnecting with Last-Event-ID)
// until it ends, fails for good, or signal aborts.
export async function follow(path, { signal, onEvent, onOpen, untilEnd = false }) {
  let last = '';
  let delay = 1000;
  while (!signal.aborted) {
    try {
      const r = await stream(path, { signal, lastEventId: last, onOpen, onEvent: (e) => { last = e.id || last; delay = 1000; onEvent(e); } });
      last = r.lastEventId || last;
      if (r.ended || untilEnd) return { ended: true };
    } catch (err) {
      if (signal.aborted) return { aborted: true };
      if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) throw err;
    }
    await new Promise((resolve) => { const t = setTimeout(resolve, delay); signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true }); });
    delay = Math.min(delay * 2, 15000);
  }
  return { aborted: true };
}

// Small DOM helpers: text only.
export function el(tag, attrs = {}, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') n.textContent = String(v);
    else if (k === 'class') n.className = v;
    else n.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) n.append(typeof c === 'string' ? document.createTextNode(c) : c);
  return n;
}

export function ago(iso) {
  const t = Date.parse(iso);
  if (!t) return '';
  const s = Math.round((Date.now() - t) / 1000);
  const fmt = (n) => (n < 60 ? `${n} s` : n < 3600 ? `${Math.floor(n / 60)} min` : n < 86400 ? `${Math.floor(n / 3600)} h` : `${Math.floor(n / 86400)} d`);
  return s >= 0 ? `${fmt(s)} ago` : `in ${fmt(-s)}`;
}

export const attrSel = (name, value) => `[${name}="${CSS.escape(String(value))}"]`;
