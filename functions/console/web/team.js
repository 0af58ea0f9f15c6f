// Team: agents and their skills, the latest routing evaluation, usage and budget.
import { api, showError, el } from './api.js';

const $ = (id) => document.getElementById(id);
const SVG = 'http://www.w3.org/2000/svg';

export function init() {}

export function show() {
  loadAgents();
  loadEvaluation();
  loadUsage();
  loadBudget();
}

export function hide() {}

export function reset() {
  for (const id of ['agent-list', 'evaluation', 'usage', 'budget']) $(id).replaceChildren();
}

// quiet answers a refusal with text in the box instead of the error banner.
function quiet(box, err, what) {
  if (err.authHandled || err.name === 'AbortError') return;
  if (err.status === 403) box.replaceChildren(el('p', { class: 'muted', text: `${what}: admins only.` }));
  else { box.replaceChildren(el('p', { class: 'muted', text: `${what} could not be read.` })); showError(err); }
}

async function loadAgents() {
  const box = $('agent-list');
  try {
    const agents = [];
    let token = '';
    for (let i = 0; i < 5; i++) {
      const q = new URLSearchParams({ limit: '100' });
      if (token) q.set('next_token', token);
      const page = await api(`/v1/agents?${q}`);
      agents.push(...(page.items || []));
      token = page.next_token || '';
      if (!token) break;
    }
    box.replaceChildren(...agents.map(agentArticle));
    if (!agents.length) box.append(el('p', { class: 'muted', text: 'No agents yet.' }));
    await Promise.all(agents.map((a) => loadSkills(a.slug)));
  } catch (err) {
    quiet(box, err, 'Agents');
  }
}

function agentArticle(a) {
  const hid = `agent-h-${String(a.slug).replace(/[^a-z0-9-]/g, '_')}`;
  const art = el('article', { class: 'agent', 'data-slug': a.slug, 'aria-labelledby': hid });
  art.append(el('h4', { id: hid }, el('span', { class: 'agent-name', text: a.name || a.slug }), ' ', el('code', { class: 'agent-slug', text: `@${a.slug}` })));
  art.append(el('p', { class: 'meta' }, el('span', { class: 'badge', text: a.status || '' }), a.is_default ? ' ' : null, a.is_default ? el('span', { class: 'badge', text: 'default' }) : null,
    a.model && a.model.id ? ` · model ${a.model.id}` : null));
  if (a.tagline) art.append(el('p', { class: 'agent-tagline', text: a.tagline }));
  art.append(el('div', { class: 'skills' }));
  return art;
}

async function loadSkills(slug) {
  try {
    const a = await api(`/v1/agents/${encodeURIComponent(slug)}`);
    const art = [...$('agent-list').children].find((n) => n.dataset.slug === slug);
    if (!art) return;
    const box = art.querySelector('.skills');
    const ul = el('ul', { class: 'skill-list' });
    for (const s of a.skills || []) {
      const li = el('li', { class: 'skill', 'data-skill': s.name });
      li.append(el('strong', { text: s.name }), ` ${s.description || ''}`);
      const ex = s.examples || [];
      if (ex.length) {
        const d = el('details', {}, el('summary', { text: `Examples (${ex.length})` }));
        d.append(el('ul', {}, ...ex.map((x) => el('li', { text: x }))));
        li.append(d);
      }
      ul.append(li);
    }
    box.replaceChildren(el('p', { class: 'sub', text: `Skills (${(a.skills || []).length})` }), ul);
  } catch (err) {
    if (!err.authHandled && err.status !== 403 && err.status !== 404) showError(err);
  }
}

const pct = (v) => (typeof v === 'number' ? `${(v * 100).toFixed(1)} %` : '–');

async function loadEvaluation() {
  const box = $('evaluation');
  try {
    const list = await api('/v1/routing/evaluations?limit=20');
    const done = (list.items || []).find((e) => e.status === 'completed');
    if (!done) { box.replaceChildren(el('p', { text: 'Routing evaluation: none run yet.' })); return; }
    const ev = done.result ? done : await api(`/v1/routing/evaluations/${encodeURIComponent(done.id)}`);
    const r = ev.result || {};
    const dl = el('dl', { class: 'facts' });
    const row = (k, v) => dl.append(el('dt', { text: k }), el('dd', { text: v }));
    row('Run', `${ev.id} · ${ev.completed_at ? new Date(ev.completed_at).toLocaleString() : ''} · ${ev.message_count} messages`);
    row('Top-1 agent', pct(r.agent_top1));
    row('Top-1 skill', pct(r.skill_top1));
    if (r.at_default) row(`Declined at ${r.at_default.threshold}`, `${pct(r.at_default.declined)} (falsely ${pct(r.at_default.falsely_declined)})`);
    if (r.at_given) row(`Declined at ${r.at_given.threshold}`, `${pct(r.at_given.declined)} (falsely ${pct(r.at_given.falsely_declined)})`);
    box.replaceChildren(dl);
  } catch (err) {
    quiet(box, err, 'Routing evaluations');
  }
}

async function loadUsage() {
  const box = $('usage');
  try {
    // The month's cost three ways: by agent, by model and by day.
    const [byAgent, byModel, byDay] = await Promise.all(['agent', 'model', 'day'].map((g) => api(`/v1/usage?group_by=${g}`)));
    const total = byAgent.total || {};
    const cap = el('p', { text: `${byAgent.from} to ${byAgent.to}${byAgent.user_id ? ' (your own calls)' : ''}: $${Number(total.usd || 0).toFixed(4)} over ${total.calls || 0} model calls` });
    box.replaceChildren(cap, chart((byAgent.items || []).slice(0, 12), 'agent', 'usage-chart'),
      chart((byModel.items || []).slice(0, 12), 'model', 'usage-chart-model'),
      chart((byDay.items || []).slice(-31), 'day', 'usage-chart-day'));
  } catch (err) {
    quiet(box, err, 'Usage');
  }
}

function svgEl(tag, attrs, text) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = text;
  return n;
}

// chart draws horizontal bars by one dimension (agent, model, day): label,
// bar, cost.
function chart(items, dim, id) {
  const rowH = 26;
  const w = 360;
  const h = Math.max(1, items.length) * rowH + 4;
  const svg = svgEl('svg', { id, viewBox: `0 0 ${w} ${h}`, width: w, height: h, role: 'img', 'aria-labelledby': `${id}-title` });
  const desc = items.length ? items.map((i) => `${i.key} $${Number(i.usd).toFixed(4)}`).join(', ') : 'no model calls yet';
  svg.append(svgEl('title', { id: `${id}-title` }, `Cost by ${dim}: ${desc}`));
  const max = Math.max(...items.map((i) => Number(i.usd) || 0), 0) || 1;
  const x0 = 110;
  const barMax = w - x0 - 80;
  items.forEach((i, n) => {
    const y = n * rowH + 4;
    const len = Math.max(2, Math.round(((Number(i.usd) || 0) / max) * barMax));
    const g = svgEl('g', { class: 'bar', 'data-key': i.key });
    g.append(svgEl('text', { x: x0 - 6, y: y + 15, 'text-anchor': 'end', class: 'bar-label' }, i.key.length > 16 ? `${i.key.slice(0, 15)}…` : i.key));
    g.append(svgEl('rect', { x: x0, y: y + 3, width: len, height: rowH - 10, rx: 2, class: 'bar-rect' }));
    g.append(svgEl('text', { x: x0 + len + 6, y: y + 15, class: 'bar-value' }, `$${(Number(i.usd) || 0).toFixed(4)}`));
    svg.append(g);
  });
  if (!items.length) svg.append(svgEl('text', { x: 4, y: 18, class: 'bar-label' }, 'No model calls yet.'));
  return svg;
}

async function loadBudget() {
  const box = $('budget');
  try {
    const b = await api('/v1/budget');
    const spent = Number(b.spent_usd || 0);
    if (b.monthly_limit_usd === null || b.monthly_limit_usd === undefined) {
      box.replaceChildren(el('p', { id: 'budget-label', text: `${b.month}: $${spent.toFixed(2)} spent; no monthly limit.` }));
      return;
    }
    const limit = Number(b.monthly_limit_usd);
    const label = el('p', { id: 'budget-label', text: `${b.month}: $${spent.toFixed(2)} of $${limit.toFixed(2)} spent (${limit ? Math.round((spent / limit) * 100) : 0} %)${b.reserved_usd ? `, $${Number(b.reserved_usd).toFixed(2)} reserved` : ''}${b.warned ? ' — warning sent' : ''}` });
    const meter = el('meter', { id: 'budget-meter', min: '0', max: String(limit), value: String(Math.min(spent, limit)), 'aria-labelledby': 'budget-h budget-label' });
    if (typeof b.warn_at === 'number') { meter.setAttribute('high', String(limit * b.warn_at)); meter.setAttribute('optimum', '0'); }
    meter.textContent = `$${spent.toFixed(2)} of $${limit.toFixed(2)}`;
    box.replaceChildren(label, meter);
  } catch (err) {
    quiet(box, err, 'The budget');
  }
}
