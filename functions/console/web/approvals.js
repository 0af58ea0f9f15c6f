// Approvals: pending tool calls, polled every 3 s while the page is shown.
import { api, showError, clearError, el, attrSel, ago } from './api.js';

const $ = (id) => document.getElementById(id);
let timer = 0;
let shown = false;
const schemas = new Map(); // agent -> Promise<Map(tool -> input_schema)>

export function init() {}

export function reset() {
  hide();
  $('approval-list').replaceChildren();
  $('approvals-empty').hidden = true;
  $('approvals-note').hidden = true;
  schemas.clear();
}

export function show() {
  shown = true;
  poll();
}

export function hide() {
  shown = false;
  clearTimeout(timer);
}

async function poll() {
  clearTimeout(timer);
  if (!shown) return;
  try {
    const list = await api('/v1/approvals?status=pending&limit=100');
    if (!shown) return;
    $('approvals-note').hidden = true;
    render(list.items || []);
  } catch (err) {
    if (err.authHandled || err.name === 'AbortError') return;
    if (err.status === 403) {
      note('You are not named a decider in the team\'s approval policy, so approvals are not shown to you.');
      render([]);
      $('approvals-empty').hidden = true;
      return; // no polling a refusal: opening the page again asks again
    } else {
      note(`Approvals could not be read: ${err.message}`);
    }
  }
  if (shown) timer = setTimeout(poll, 3000);
}

function note(text) {
  $('approvals-note').textContent = text;
  $('approvals-note').hidden = false;
}

// render keeps the articles already shown (a person may be editing one).
function render(items) {
  const box = $('approval-list');
  const want = new Set(items.map((a) => a.id));
  for (const art of [...box.children]) if (!want.has(art.dataset.approvalId)) art.remove();
  let prev = null;
  for (const a of items) {
    let art = box.querySelector(attrSel('data-approval-id', a.id));
    if (!art) art = approvalArticle(a);
    else updateTimes(art, a);
    if (prev ? prev.nextSibling !== art : box.firstChild !== art) {
      if (prev) prev.after(art); else box.prepend(art);
    }
    prev = art;
  }
  $('approvals-empty').hidden = items.length > 0;
}

function updateTimes(art, a) {
  art.querySelector('.approval-age').textContent = `Requested ${ago(a.created_at)}`;
  const exp = Date.parse(a.expires_at);
  art.querySelector('.approval-expiry').textContent = exp ? (exp > Date.now() ? `Expires ${ago(a.expires_at)}` : 'Expired') : '';
}

function approvalArticle(a) {
  const id = a.id;
  const safe = id.replace(/[^A-Za-z0-9_-]/g, '_');
  const art = el('article', { class: 'approval', 'data-approval-id': id, 'aria-labelledby': `apr-h-${safe}` });
  art.append(el('h3', { id: `apr-h-${safe}` }, el('span', { class: 'approval-tool', text: a.tool || '?' }), ' requested by ', el('span', { class: 'approval-agent', text: a.agent || '?' })));
  const ctx = el('p', { class: 'approval-context' });
  if (a.conversation_id) ctx.append('Conversation ', el('a', { href: `#/chat/${encodeURIComponent(a.conversation_id)}`, text: a.conversation_id }));
  if (a.task_id) ctx.append(a.conversation_id ? ' · task ' : 'Task ', el('code', { text: a.task_id }));
  if (!a.conversation_id && !a.task_id) ctx.textContent = 'No conversation or task recorded';
  art.append(ctx);
  const meta = el('p', { class: 'meta' }, el('span', { class: 'approval-age' }), ' · ', el('span', { class: 'approval-expiry' }));
  art.append(meta);
  if ((a.reasons || []).length || a.estimated_cost_usd) {
    art.append(el('p', { class: 'muted', text: `Why: ${(a.reasons || []).join(', ') || '–'}${a.estimated_cost_usd ? ` · estimated cost $${Number(a.estimated_cost_usd).toFixed(2)}` : ''}` }));
  }
  const original = JSON.stringify(a.arguments || {}, null, 2);
  const argsId = `apr-args-${safe}`;
  const errId = `apr-err-${safe}`;
  const args = el('textarea', { id: argsId, class: 'approval-args', rows: String(Math.min(12, original.split('\n').length + 1)), spellcheck: 'false', 'aria-describedby': errId });
  args.value = original;
  const fieldErr = el('p', { id: errId, class: 'field-error', 'aria-live': 'polite' });
  const reasonId = `apr-reason-${safe}`;
  const reason = el('input', { id: reasonId, class: 'reject-reason', type: 'text', maxlength: '1000', autocomplete: 'off' });
  const approve = el('button', { type: 'button', class: 'approve', text: 'Approve' });
  const reject = el('button', { type: 'button', class: 'reject', text: 'Reject' });
  art.append(
    el('label', { for: argsId, text: 'Arguments (JSON)' }), args, fieldErr,
    el('div', { class: 'actions' }, approve, el('span', { class: 'reject-group' }, el('label', { for: reasonId, text: 'Reason' }), reason, reject)),
  );
  updateTimes(art, a);

  const setErr = (msg) => {
    fieldErr.textContent = msg;
    if (msg) args.setAttribute('aria-invalid', 'true'); else args.removeAttribute('aria-invalid');
  };
  args.addEventListener('input', () => setErr(''));
  approve.addEventListener('click', async () => {
    let parsed;
    try { parsed = JSON.parse(args.value); } catch (e) { setErr(`Arguments (JSON): not valid JSON: ${e.message}`); args.focus(); return; }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) { setErr('Arguments (JSON): must be a JSON object.'); args.focus(); return; }
    // One decision per click: the buttons wait while the schema is read.
    approve.disabled = reject.disabled = true;
    const schema = await toolSchema(a.agent, a.tool);
    const problem = schema ? checkSchema(parsed, schema) : '';
    approve.disabled = reject.disabled = false;
    if (problem) { setErr(problem); args.focus(); return; }
    setErr('');
    const body = { decision: 'approve' };
    if (JSON.stringify(parsed) !== JSON.stringify(a.arguments || {})) body.arguments = parsed;
    decide(art, id, body, setErr);
  });
  reject.addEventListener('click', () => {
    const body = { decision: 'reject' };
    if (reason.value.trim()) body.reason = reason.value.trim();
    decide(art, id, body, setErr);
  });
  return art;
}

async function decide(art, id, body, setErr) {
  clearError();
  for (const b of art.querySelectorAll('button')) b.disabled = true;
  try {
    await api(`/v1/approvals/${encodeURIComponent(id)}`, { method: 'POST', body });
    gone(art);
  } catch (err) {
    for (const b of art.querySelectorAll('button')) b.disabled = false;
    if (err.authHandled || err.name === 'AbortError') return;
    if (err.status === 409) { showError(`Already decided${err.message ? `: ${err.message}` : ''}`); gone(art); return; }
    if (err.status === 403) { showError('You may not decide this approval: the approval policy does not name you.'); return; }
    if (err.status === 400 && err.field && err.field.startsWith('arguments')) { setErr(`${err.field}: ${err.message}`); return; }
    showError(err);
  }
}

function gone(art) {
  const next = art.nextElementSibling || art.previousElementSibling;
  art.remove();
  const box = $('approval-list');
  $('approvals-empty').hidden = box.children.length > 0;
  const f = next && next.querySelector('textarea');
  if (f) f.focus();
  else { const h = $('approvals-h'); h.setAttribute('tabindex', '-1'); h.focus(); }
}

// toolSchema finds the tool's input schema in the agent's tools (a task's, then a chat reply's).
async function toolSchema(agent, tool) {
  if (!agent || !tool) return null;
  if (!schemas.has(agent)) {
    schemas.set(agent, (async () => {
      const m = new Map();
      for (const context of ['chat', 'task']) {
        try {
          const r = await api(`/v1/agents/${encodeURIComponent(agent)}/tools?context=${context}`);
          for (const t of r.tools || []) if (!m.has(t.name)) m.set(t.name, t.input_schema);
        } catch { /* no schema: the server validates */ }
      }
      return m;
    })());
  }
  const m = await schemas.get(agent);
  return m.get(tool) || null;
}

const typeOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
function fits(v, t) {
  if (t === 'integer') return Number.isInteger(v);
  if (t === 'number') return typeof v === 'number';
  return typeOf(v) === t;
}

// checkSchema checks the required fields and the top-level properties' types.
export function checkSchema(obj, schema) {
  for (const r of schema.required || []) if (!(r in obj)) return `arguments.${r}: required`;
  const props = schema.properties || {};
  for (const [k, v] of Object.entries(obj)) {
    const p = props[k];
    if (!p) {
      if (schema.additionalProperties === false) return `arguments.${k}: not a field of this tool`;
      continue;
    }
    const types = Array.isArray(p.type) ? p.type : p.type ? [p.type] : [];
    if (types.length && !types.some((t) => fits(v, t))) return `arguments.${k}: must be ${types.join(' or ')}`;
    if (Array.isArray(p.enum) && !p.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) return `arguments.${k}: must be one of ${p.enum.map((e) => JSON.stringify(e)).join(', ')}`;
  }
  return '';
}
