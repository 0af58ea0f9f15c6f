// Work: the task board, sessions and plans with their live event streams.
import { api, follow, showError, clearError, el, attrSel, getConfig } from './api.js';

const $ = (id) => document.getElementById(id);
const TASK_STATUSES = ['queued', 'running', 'blocked', 'completed', 'failed', 'canceled', 'timed_out'];
const PRIORITY = { urgent: 0, high: 1, normal: 2, low: 3 };
const SESSION_END = new Set(['completed', 'failed', 'timed_out', 'cancelled']);
const PLAN_END = new Set(['completed', 'partial', 'failed', 'cancelled']);

// Two followed runs: a session and a plan.
const kinds = {
  session: { path: 'sessions', list: 'session-list', item: 'session', attr: 'data-session-id', note: 'session-note', end: SESSION_END, ac: null, id: '' },
  plan: { path: 'plans', list: 'plan-list', item: 'plan', attr: 'data-plan-id', note: 'plan-note', end: PLAN_END, ac: null, id: '' },
};

export function init() {
  $('work-refresh').addEventListener('click', () => { clearError(); load(); });
  $('session-cancel').addEventListener('click', () => cancel(kinds.session));
  $('plan-cancel').addEventListener('click', () => cancel(kinds.plan));
  $('session-trace').addEventListener('click', loadTrace);
  const board = $('task-board');
  for (const s of TASK_STATUSES) {
    const h = `col-${s}`;
    board.append(el('section', { class: 'task-column', 'data-status': s, 'aria-labelledby': h },
      el('h4', { id: h }, `${s.replace('_', ' ')} `, el('span', { class: 'count', text: '0' })), el('ul', { class: 'tasks' })));
  }
}

export function show() { load(); }

export function hide() {
  for (const k of Object.values(kinds)) { if (k.ac) k.ac.abort(); k.ac = null; }
}

export function reset() {
  hide();
  for (const k of Object.values(kinds)) { k.id = ''; $(k.list).replaceChildren(); $(`${k.item}-detail`).hidden = true; }
  for (const col of $('task-board').children) { col.querySelector('ul').replaceChildren(); col.querySelector('.count').textContent = '0'; }
}

function load() {
  loadTasks();
  loadList(kinds.session);
  loadList(kinds.plan);
}

function traceLink(traceId) {
  if (!traceId) return null;
  return el('a', { class: 'trace-link', href: `/console/#/trace/${encodeURIComponent(traceId)}`, text: `Trace ${String(traceId).slice(0, 8)}…` });
}

function setNote(id, text) {
  $(id).textContent = text;
  $(id).hidden = !text;
}

async function loadTasks() {
  try {
    const tasks = [];
    let token = '';
    for (let i = 0; i < 5; i++) {
      const q = new URLSearchParams({ limit: '100' });
      if (token) q.set('next_token', token);
      const page = await api(`/v1/tasks?${q}`);
      tasks.push(...(page.items || []));
      token = page.next_token || '';
      if (!token) break;
    }
    setNote('task-note', '');
    tasks.sort((a, b) => ((PRIORITY[a.priority] ?? 2) - (PRIORITY[b.priority] ?? 2)) || String(b.created_at || '').localeCompare(String(a.created_at || '')));
    for (const col of $('task-board').children) {
      const status = col.dataset.status;
      const mine = tasks.filter((t) => t.status === status);
      col.querySelector('.count').textContent = String(mine.length);
      col.querySelector('ul').replaceChildren(...mine.map(taskItem));
    }
  } catch (err) {
    if (err.authHandled || err.name === 'AbortError') return;
    setNote('task-note', err.status === 403 ? 'Tasks are for admins only.' : `Tasks could not be read: ${err.message}`);
  }
}

function taskItem(t) {
  const li = el('li', { class: 'task', 'data-task-id': t.id });
  li.append(el('span', { class: 'task-title', text: t.title || t.type || t.id }));
  li.append(el('span', { class: 'task-meta' },
    el('span', { class: 'task-agent', text: t.assignee || '–' }), ' · ',
    el('span', { class: `task-priority p-${PRIORITY[t.priority] ?? 2}`, text: t.priority || 'normal' })));
  if (t.status_reason) li.append(el('span', { class: 'muted', text: t.status_reason.replace(/_/g, ' ') }));
  const tl = traceLink(t.trace_id);
  if (tl) li.append(tl);
  return li;
}

async function loadList(k) {
  try {
    const page = await api(`/v1/${k.path}?limit=50`);
    setNote(k.note, '');
    const ul = $(k.list);
    ul.replaceChildren();
    for (const it of page.items || []) {
      const label = k.item === 'session' ? `${it.pattern || 'session'}: ${it.goal || it.id}` : (it.message || it.id);
      const b = el('button', { type: 'button', class: 'linkish', text: label });
      b.addEventListener('click', () => open(k, it.id));
      const li = el('li', { class: k.item, [k.attr]: it.id }, b, ' ', el('span', { class: 'badge', text: it.status || '' }));
      const tl = traceLink(it.trace_id);
      if (tl) li.append(' ', tl);
      ul.append(li);
    }
    if (!ul.children.length) ul.append(el('li', { class: 'muted', text: `No ${k.path} yet.` }));
  } catch (err) {
    if (err.authHandled || err.name === 'AbortError') return;
    setNote(k.note, err.status === 403 ? 'Admins only.' : err.status === 409 ? `${k.path} are not enabled on this stage.` : `Could not read ${k.path}: ${err.message}`);
  }
}

function summary(k, event, d) {
  if (!d || typeof d !== 'object') return String(d ?? '');
  if (k.item === 'session') {
    if (event === 'SessionStatusChanged') return `${d.previous_status ? `${d.previous_status} → ` : ''}${d.status}${d.status_reason ? ` (${d.status_reason})` : ''}`;
    if (event === 'SessionStageCompleted') return `stage ${d.stage}${d.round ? ` round ${d.round}` : ''}: ${d.agent} (${d.kind}, ${d.tokens} tokens)`;
  } else {
    if (event === 'PlanStepCompleted') return `step ${d.step_id} by ${d.agent}: ${d.step_status}`;
    if (event === 'PlanStarted') return `${Array.isArray(d.steps) ? d.steps.length : d.steps} steps, lead ${d.lead}`;
    if (event === 'PlanCompleted') return `${d.status}${Array.isArray(d.agents) ? `, agents ${d.agents.join(', ')}` : ''}`;
  }
  return d.status ? String(d.status) : '';
}

async function open(k, id) {
  if (k.ac) k.ac.abort();
  const ac = new AbortController();
  k.ac = ac;
  k.id = id;
  clearError();
  const p = k.item;
  for (const li of $(k.list).children) li.classList.toggle('open', li.getAttribute(k.attr) === id);
  $(`${p}-detail`).hidden = false;
  $(`${p}-id`).textContent = id;
  $(`${p}-events`).replaceChildren();
  $(`${p}-status`).textContent = '';
  if (p === 'session') $('session-trace-view').replaceChildren();
  const item = await refresh(k, id);
  if (!item || ac.signal.aborted) return;
  $(`${p}-${p === 'session' ? 'goal' : 'message'}`).textContent = p === 'session' ? (item.goal || '') : (item.message || '');
  const tl = traceLink(item.trace_id);
  $(`${p}-trace-link`).replaceChildren(...(tl ? [tl] : []));
  $(`${p}-detail-h`).setAttribute('tabindex', '-1');
  $(`${p}-detail-h`).focus();
  if (!getConfig().stream_url) { // no streaming API: read the run every 2 s until it ends
    while (!ac.signal.aborted) {
      const it = await refresh(k, id);
      if (!it || k.end.has(it.status)) return;
      await new Promise((r) => setTimeout(r, 2000));
    }
    return;
  }
  try {
    await follow(`/v1/${k.path}/${encodeURIComponent(id)}/events`, {
      signal: ac.signal,
      onEvent: (e) => {
        if (ac.signal.aborted) return;
        $(`${p}-events`).append(el('li', {}, el('strong', { text: e.event }), ` ${summary(k, e.event, e.data)}`));
        refresh(k, id);
      },
    });
  } catch (err) {
    if (!ac.signal.aborted && !err.authHandled) showError(err);
  }
  if (!ac.signal.aborted) refresh(k, id);
}

// refresh reads the run again for its status.
async function refresh(k, id) {
  try {
    const item = await api(`/v1/${k.path}/${encodeURIComponent(id)}`);
    if (k.id !== id) return null;
    $(`${k.item}-status`).textContent = item.status || '';
    $(`${k.item}-cancel`).hidden = k.end.has(item.status);
    const li = $(k.list).querySelector(attrSel(k.attr, id));
    const badge = li && li.querySelector('.badge');
    if (badge) badge.textContent = item.status || '';
    return item;
  } catch (err) {
    if (!err.authHandled) showError(err);
    return null;
  }
}

async function cancel(k) {
  if (!k.id) return;
  clearError();
  const b = $(`${k.item}-cancel`);
  b.disabled = true;
  try {
    await api(`/v1/${k.path}/${encodeURIComponent(k.id)}/cancel`, { method: 'POST' });
    await refresh(k, k.id);
  } catch (err) {
    if (err.authHandled || err.name === 'AbortError') return;
    showError(err.status === 403 ? `Cancelling ${k.path} is for admins only.` : err);
  } finally {
    b.disabled = false;
  }
}

async function loadTrace() {
  const id = kinds.session.id;
  const view = $('session-trace-view');
  if (!id) return;
  view.replaceChildren(el('p', { class: 'muted', text: 'Loading the trace…' }));
  try {
    const t = await api(`/v1/sessions/${encodeURIComponent(id)}/trace`);
    const head = el('p', { text: `${t.pattern || ''} · outcome ${t.outcome || '–'}${t.convergence_reason ? ` (${t.convergence_reason})` : ''} · ${t.total_turns ?? 0} turns · ${t.tokens ?? 0} tokens · $${Number(t.cost_usd || 0).toFixed(4)}` });
    const ol = el('ol', { class: 'trace-messages' });
    for (const m of t.messages || []) {
      const li = el('li', { class: m.violation ? 'refused' : '' });
      li.append(el('strong', { text: `${m.sender || '?'} → ${m.recipient || 'all'}` }), ` (${m.message_type || 'message'}${m.round ? `, round ${m.round}` : ''}${m.violation ? `, refused: ${m.violation}` : ''})`);
      li.append(el('div', { class: 'trace-content', text: m.content || '' }));
      ol.append(li);
    }
    if (!ol.children.length) ol.append(el('li', { class: 'muted', text: 'No protocol messages.' }));
    view.replaceChildren(head, ol);
  } catch (err) {
    if (err.authHandled || err.name === 'AbortError') return;
    view.replaceChildren(el('p', { text: err.status === 403 ? 'The trace is for admins only.' : `The trace could not be read: ${err.message}` }));
  }
}
