// Chat: conversations, streamed turns, "why this agent", held tool calls, live results.
import { api, stream, follow, showError, clearError, el, attrSel, ApiError, getConfig } from './api.js';
import { setMarkdown } from './markdown.js';

const $ = (id) => document.getElementById(id);
let conv = null; // the open conversation's id
let follower = null; // AbortController of the conversation's event stream
let turnActive = false;
let turnAbort = null; // AbortController of the turn being streamed
let refreshWanted = false;
let whyOpener = null;
const decisions = new Map(); // message id -> routing decision of its turn

export function init() {
  $('new-conversation').addEventListener('click', newConversation);
  $('message-form').addEventListener('submit', (e) => { e.preventDefault(); send(); });
  $('message-input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); send(); }
  });
  $('why-close').addEventListener('click', closeWhy);
  $('why-panel').addEventListener('keydown', (e) => { if (e.key === 'Escape') closeWhy(); });
}

export function show(args) {
  loadConversations();
  const id = args[0] || conv;
  if (id && (id !== conv || !follower)) openConversation(id);
}

export function hide() {
  stopFollowing();
  closeWhy(false);
}

export function reset() {
  if (turnAbort) turnAbort.abort();
  hide();
  conv = null;
  decisions.clear();
  $('conversation-list').replaceChildren();
  $('messages').replaceChildren();
  $('message-form').hidden = true;
  $('conversation-title').textContent = 'Open or start a conversation.';
}

function stopFollowing() {
  if (follower) follower.abort();
  follower = null;
}

async function loadConversations() {
  try {
    const list = await api('/v1/conversations?limit=50');
    const ul = $('conversation-list');
    ul.replaceChildren();
    for (const c of list.items || []) ul.append(conversationItem(c));
    markOpen();
  } catch (err) {
    if (!err.authHandled) showError(err);
  }
}

function conversationItem(c) {
  const when = c.created_at ? new Date(c.created_at).toLocaleString() : '';
  const label = c.title || `${c.current_agent || c.primary_agent || 'Conversation'} · ${when}`;
  const b = el('button', { type: 'button', class: 'linkish', text: label });
  b.addEventListener('click', () => { location.hash = `#/chat/${encodeURIComponent(c.id)}`; });
  return el('li', { 'data-conversation-id': c.id }, b);
}

function markOpen() {
  for (const li of $('conversation-list').children) {
    const b = li.querySelector('button');
    if (li.dataset.conversationId === conv) b.setAttribute('aria-current', 'true'); else b.removeAttribute('aria-current');
  }
}

async function newConversation() {
  clearError();
  const b = $('new-conversation');
  b.disabled = true;
  try {
    const c = await api('/v1/conversations', { method: 'POST', body: {} });
    const ul = $('conversation-list');
    const old = ul.querySelector(attrSel('data-conversation-id', c.id));
    if (old) old.remove();
    ul.prepend(conversationItem(c));
    location.hash = `#/chat/${encodeURIComponent(c.id)}`;
    if (conv !== c.id) openConversation(c.id);
    $('message-input').focus();
  } catch (err) {
    if (!err.authHandled) showError(err);
  } finally {
    b.disabled = false;
  }
}

async function openConversation(id) {
  conv = id;
  markOpen();
  $('message-form').hidden = false;
  $('conversation-title').textContent = `Conversation ${id}`;
  stopFollowing();
  follower = new AbortController(); // taken: a second open of the same id waits for none
  closeWhy(false);
  decisions.clear();
  $('messages').replaceChildren();
  const ac = follower;
  await refreshMessages();
  if (conv !== id || follower !== ac || ac.signal.aborted) return;
  followConversation(id);
}

async function allMessages(id) {
  const out = [];
  let token = '';
  for (let i = 0; i < 20; i++) {
    const q = new URLSearchParams({ limit: '100' });
    if (token) q.set('next_token', token);
    const page = await api(`/v1/conversations/${encodeURIComponent(id)}/messages?${q}`);
    out.push(...(page.items || []));
    token = page.next_token || '';
    if (!token) break;
  }
  return out;
}

// refreshMessages appends the stored messages not shown yet.
async function refreshMessages() {
  const id = conv;
  if (!id) return;
  if (turnActive) { refreshWanted = true; return; }
  try {
    const msgs = await allMessages(id);
    if (conv !== id || turnActive) { refreshWanted = turnActive; return; }
    const box = $('messages');
    for (const a of box.querySelectorAll('article.message[data-message-id^="local-"]')) a.remove();
    for (const m of msgs) {
      if (box.querySelector(attrSel('data-message-id', m.id))) continue;
      box.append(messageArticle(m));
    }
  } catch (err) {
    if (!err.authHandled) showError(err);
  }
}

function followConversation(id) {
  const ac = follower;
  if (!getConfig().stream_url) { longPoll(id, ac.signal); return; }
  const run = async () => {
    while (!ac.signal.aborted) {
      try {
        await follow(`/v1/conversations/${encodeURIComponent(id)}/events`, {
          signal: ac.signal,
          onEvent: (e) => { if (e.event === 'MessagePosted' || e.event === 'ResultPosted') refreshMessages(); },
          // The stream starts from now: what was stored while it was
          // closed (a reconnect's pause) is read once it is open again.
          onOpen: () => refreshMessages(),
        });
      } catch (err) {
        if (!ac.signal.aborted && !err.authHandled && err.status !== 404) showError(err);
        return;
      }
      // The stream closes after 14 minutes: follow() returns, reopen it.
      if (!ac.signal.aborted) await refreshMessages();
    }
  };
  run();
}

// longPoll stands in for the event stream on a stage without a streaming API.
async function longPoll(id, signal) {
  while (!signal.aborted && conv === id) {
    const shown = [...$('messages').querySelectorAll('article.message[data-message-id^="msg_"]')];
    const last = shown.length ? shown[shown.length - 1].dataset.messageId : '';
    try {
      if (!last) { await new Promise((r) => setTimeout(r, 3000)); await refreshMessages(); continue; }
      const page = await api(`/v1/conversations/${encodeURIComponent(id)}/messages?after=${encodeURIComponent(last)}&wait=20`, { signal });
      if ((page.items || []).length) await refreshMessages();
    } catch (err) {
      if (signal.aborted || err.authHandled) return;
      await new Promise((r) => setTimeout(r, 5000));
    }
  }
}

// messageArticle renders a stored message.
function messageArticle(m, decision) {
  const a = el('article', { class: 'message', 'data-role': m.role || 'assistant', 'data-message-id': m.id || '', 'data-agent': m.agent || '' });
  a.append(el('div', { class: 'message-agent', text: agentLabel(m) }));
  a.append(el('div', { class: 'message-body' }));
  settle(a, m, decision);
  return a;
}

function agentLabel(m) {
  if (m.role === 'user') return 'You';
  if (m.role === 'system') return 'System';
  const who = (m.contributors && m.contributors.length > 1) ? m.contributors.join(', ') : (m.agent || 'agent');
  return who;
}

// settle makes an article show the stored message m.
function settle(a, m, decision) {
  a.classList.remove('streaming');
  a.setAttribute('data-message-id', m.id || '');
  a.setAttribute('data-role', m.role || 'assistant');
  if (m.agent) a.setAttribute('data-agent', m.agent);
  a.querySelector('.message-agent').textContent = agentLabel(m);
  const body = a.querySelector('.message-body');
  a._text = m.content || '';
  setMarkdown(body, a._text);
  // tool calls of a history message (a streamed one keeps its live lines)
  if (!a.querySelector('.tool-call') && Array.isArray(m.tool_calls)) {
    for (const t of m.tool_calls) afterTools(a, toolLine(t.tool, t.input));
  }
  for (const old of a.querySelectorAll('.work-note, .held-call')) old.remove();
  if (m.result_of && m.result_of.type) {
    a.append(el('p', { class: 'work-note', text: `Result of ${m.result_of.type} ${m.result_of.id || ''}${m.result_of.status ? ` (${m.result_of.status})` : ''}` }));
  }
  addPending(a, m.pending);
  if (m.role === 'assistant' && (decision || m.decision_id)) {
    if (decision) decisions.set(m.id, decision);
    addWhy(a, m);
  }
}

function addPending(a, pending) {
  for (const p of pending || []) {
    if (!p || p.type !== 'approval' || !p.id) continue;
    if (a.querySelector(`.held-call${attrSel('data-approval-id', p.id)}`)) continue;
    const link = el('a', { href: '#/approvals', text: 'Open approvals' });
    a.append(el('div', { class: 'held-call', 'data-approval-id': p.id }, `Waiting for approval (${p.id}). `, link));
  }
  const tasks = (pending || []).filter((p) => p && p.type && p.type !== 'approval');
  if (tasks.length && !a.querySelector('.work-note')) {
    a.append(el('p', { class: 'work-note', text: `Still running: ${tasks.map((p) => `${p.type} ${p.id}${p.status ? ` (${p.status})` : ''}`).join(', ')}` }));
  }
}

function addWhy(a, m) {
  if (a.querySelector('button.why')) return;
  const b = el('button', { type: 'button', class: 'why', text: 'Why this agent?' });
  b.addEventListener('click', () => openWhy(b, m.id, m.decision_id));
  a.append(b);
}

// afterTools puts a tool line after the body and the lines before it, in call order.
function afterTools(a, line) {
  const lines = a.querySelectorAll('.tool-call');
  (lines.length ? lines[lines.length - 1] : a.querySelector('.message-body')).after(line);
}

function toolLine(tool, input, output) {
  const d = el('div', { class: 'tool-call' });
  d.append(el('span', { class: 'tool-name', text: `Tool: ${tool || '?'}` }));
  if (input !== undefined && input !== null && input !== '') d.append(el('code', { text: ` ${short(input)}` }));
  if (output !== undefined && output !== null && output !== '') d.append(el('span', { class: 'tool-out', text: ` → ${short(output)}` }));
  return d;
}

function short(v) {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > 160 ? `${s.slice(0, 157)}…` : s;
}

// A streamed turn.
async function send() {
  const input = $('message-input');
  const content = input.value;
  if (!content.trim() || !conv || turnActive) return;
  clearError();
  const id = conv;
  const box = $('messages');
  const mine = el('article', { class: 'message', 'data-role': 'user', 'data-message-id': `local-${crypto.randomUUID()}`, 'data-agent': '' },
    el('div', { class: 'message-agent', text: 'You' }), el('div', { class: 'message-body' }));
  setMarkdown(mine.querySelector('.message-body'), content);
  box.append(mine);
  input.value = '';
  turnActive = true;
  $('send').disabled = true;
  let routing = null;
  const live = new Map(); // message id -> article
  const replied = new Set();
  let failed = false;

  const article = (mid, agent) => {
    let a = live.get(mid) || box.querySelector(attrSel('data-message-id', mid));
    if (!a) {
      a = el('article', { class: 'message streaming', 'data-role': 'assistant', 'data-message-id': mid, 'data-agent': agent || '' },
        el('div', { class: 'message-agent', text: agent || 'agent' }), el('div', { class: 'message-body' }));
      a._text = '';
      box.append(a);
    }
    live.set(mid, a);
    return a;
  };
  const scheduled = new Set();
  const rerender = (a) => {
    if (scheduled.has(a)) return;
    scheduled.add(a);
    requestAnimationFrame(() => { scheduled.delete(a); if (a.classList.contains('streaming')) setMarkdown(a.querySelector('.message-body'), a._text); });
  };

  const onEvent = ({ event, data }) => {
    if (conv !== id) return;
    switch (event) {
      case 'routing': routing = data; break;
      case 'delta': {
        if (!data || !data.message_id) break;
        const a = article(data.message_id, data.agent);
        if (data.draft) a.classList.add('draft');
        a._text = (a._text || '') + (data.text || '');
        rerender(a);
        break;
      }
      case 'tool_call':
      case 'tool_result': {
        if (!data || !data.message_id) break;
        const a = article(data.message_id, data.agent);
        const key = data.call_id || `${data.tool}-${a.querySelectorAll('.tool-call').length}`;
        const old = a.querySelector(`.tool-call${attrSel('data-call-id', key)}`);
        const line = toolLine(data.tool, data.input, event === 'tool_result' ? data.output : undefined);
        line.setAttribute('data-call-id', key);
        if (old) old.replaceWith(line); else afterTools(a, line);
        break;
      }
      case 'reply': {
        if (!data || !data.id) break;
        replied.add(data.id);
        const a = article(data.id, data.agent);
        a.classList.remove('draft');
        settle(a, data, routing);
        break;
      }
      case 'done': {
        if (!data) break;
        if (data.routing) routing = data.routing;
        if (data.user_message && data.user_message.id) mine.setAttribute('data-message-id', data.user_message.id);
        for (const r of data.replies || []) {
          replied.add(r.id);
          const a = box.querySelector(attrSel('data-message-id', r.id)) || article(r.id, r.agent);
          settle(a, r, routing);
        }
        for (const [mid, a] of live) if (!replied.has(mid) && a.classList.contains('streaming')) a.remove();
        // work listed on the turn itself
        const last = (data.replies || []).length ? box.querySelector(attrSel('data-message-id', data.replies[data.replies.length - 1].id)) : null;
        if (last && Array.isArray(data.pending)) addPending(last, data.pending);
        break;
      }
      case 'error': {
        failed = true;
        const e = (data && data.error) || {};
        showError(`${e.message || 'The turn failed'}${data && data.request_id ? ` [request ${data.request_id}]` : ''}`);
        break;
      }
      default: break;
    }
  };

  try {
    turnAbort = new AbortController();
    await stream(`/v1/conversations/${encodeURIComponent(id)}/messages`, { method: 'POST', body: { content }, onEvent, signal: turnAbort.signal });
  } catch (err) {
    failed = true;
    if (err instanceof ApiError && !err.authHandled) showError(err);
    else if (!(err instanceof ApiError) && err.name !== 'AbortError') showError(`The turn's stream broke: ${err.message}`);
    if (err instanceof ApiError) { mine.remove(); if (!input.value) input.value = content; } // refused before it began
  } finally {
    turnAbort = null;
    turnActive = false;
    $('send').disabled = false;
    if (failed) for (const [mid, a] of live) if (!replied.has(mid)) a.remove();
    if (refreshWanted || failed) { refreshWanted = false; if (conv === id) refreshMessages(); }
  }
}

// "Why this agent?"
const REASONS = {
  user_mention: 'an @mention of the agent',
  skill_match: 'a skill match',
  current_agent: 'continuity: the conversation kept its agent',
  default: 'the default agent (fallback)',
  direct: 'the conversation\'s agent, asked directly',
  expert_gate: 'the expert gate\'s scores',
  fallback: 'a fallback',
  handoff: 'a handoff',
  greeting: 'small talk (not scored)',
  router_model: 'the tier-0 router model (the gate was unsure)',
};
const DECIDERS = {
  gate: 'the expert gate', router_model: 'the tier-0 router model', agent_router: 'the AgentRouter',
  direct: 'direct', mention: 'a mention', handoff: 'a handoff', greeting: 'a greeting',
};

async function openWhy(button, messageId, decisionId) {
  whyOpener = button;
  const panel = $('why-panel');
  let d = decisions.get(messageId);
  fillWhy(null, d ? '' : 'Loading…');
  panel.hidden = false;
  panel.focus();
  if (!d && decisionId) {
    try {
      d = await api(`/v1/routing/decisions/${encodeURIComponent(decisionId)}`);
      decisions.set(messageId, d);
    } catch (err) {
      if (err.authHandled) return;
      fillWhy(null, err.status === 403 ? 'The routing decision is not available to members.' : `The routing decision could not be read: ${err.message}`);
      return;
    }
  }
  if (!d) { fillWhy(null, 'No routing decision is recorded for this reply.'); return; }
  fillWhy(d, '');
}

const num = (v) => (typeof v === 'number' ? v.toFixed(2) : '–');

function fillWhy(d, note) {
  $('why-note').textContent = note;
  const tbody = $('why-scores').tBodies[0];
  tbody.replaceChildren();
  if (!d) {
    for (const id of ['why-decided-by', 'why-confidence', 'why-skill']) $(id).textContent = '–';
    return;
  }
  const parts = [];
  if (d.decided_by) parts.push(DECIDERS[d.decided_by] || d.decided_by);
  if (d.reason) parts.push(REASONS[d.reason] || d.reason);
  if (d.strategy) parts.push(`strategy ${d.strategy}`);
  if (d.fallback_used) parts.push('fallback used');
  if (d.router_model && d.router_model.outcome) parts.push(`router model: ${d.router_model.outcome}${d.router_model.reason ? ` (${d.router_model.reason})` : ''}`);
  $('why-decided-by').textContent = [...new Set(parts)].join(' · ') || 'not recorded';
  const chosen = (d.selected_agents || [])[0] || '';
  const score = (d.scores || []).find((s) => s.agent_slug === chosen);
  const conf = typeof d.confidence === 'number' ? d.confidence : score && score.confidence;
  const thr = typeof d.confidence_threshold === 'number' ? d.confidence_threshold : 0.6;
  $('why-confidence').textContent = `${chosen ? `${chosen}: ` : ''}${num(conf)} (threshold ${num(thr)})`;
  $('why-skill').textContent = d.skill || (score && score.matching_skills && score.matching_skills[0]) || 'none (no skill matched)';
  const scores = [...(d.scores || [])].sort((a, b) => (b.overall || 0) - (a.overall || 0));
  for (const s of scores) {
    const tr = el('tr', { 'data-agent': s.agent_slug || '' });
    tr.append(el('th', { scope: 'row', text: s.agent_slug || '?' }), el('td', { text: num(s.overall) }), el('td', { text: num(s.confidence) }),
      el('td', { text: (s.matching_skills || []).join(', ') || '–' }));
    if (s.agent_slug === chosen) tr.classList.add('chosen');
    tbody.append(tr);
  }
  if (!scores.length) tbody.append(el('tr', {}, el('td', { colspan: '4', text: 'No candidates were scored for this turn.' })));
}

function closeWhy(refocus = true) {
  const panel = $('why-panel');
  if (panel.hidden) return;
  panel.hidden = true;
  if (refocus && whyOpener && document.contains(whyOpener)) whyOpener.focus();
  whyOpener = null;
}
