// verdict console: a small single-page app over verdict's JSON API. Hand-written, no build
// step, no dependencies; served by verdictd from the binary under /ui/. Every value from the
// server is put into the page as text (never as HTML). The API key lives in sessionStorage.
'use strict';

const KEY = 'verdict.apiKey';
const STATES = ['available', 'claimed', 'deferred', 'processed', 'rejected', 'manual_review', 'failed'];
const PARKED = ['manual_review', 'failed'];
const REQUEUEABLE = ['failed', 'manual_review', 'rejected'];
const me = { actor: null, role: null };
let pollTimer = null;
let refreshTimer = null;
const REFRESH_MS = 5000;

// Plain words for the state machine's names (README "States"), so no page shows a bare code.
const STATE_WORDS = { manual_review: 'manual review' };
const CAUSE_WORDS = {
  register: 'registered', claim: 'claimed by a worker', complete: 'completed by the worker',
  reject_source: 'source rejected by the worker', defer_item: 'deferred by the worker', fail: 'reported failed by the worker',
  skip_item: 'skipped by the worker', session_outcome: 'session outcome reported', lease_expired: 'lease expired: the worker stopped answering',
  requeue: 'requeued by an admin', release: 'released by its worker', admin_release: 'claim released by an admin',
  resolve: 'decided by hand', request_review: 'the model asked an editor', review: 'answered by an editor',
};
const REASON_WORDS = {
  tool_error: 'a tool failed', retry_budget_exhausted: 'retry budget spent', quality_gate: 'a quality check failed',
  too_thin: 'too little content', duplicate: 'a duplicate', off_topic: 'off topic', other: 'other reason',
  review_requested: 'the model asked an editor', review_answered: 'an editor answered', requeue: 'requeued',
  lease_expired: 'the lease expired', admin_release: 'an admin released the claim', resolve: 'decided by hand',
  engine_error: 'the engine failed',
};
const DISPOSITION_WORDS = {
  complete: 'completed', reject_source: 'source rejected', defer_item: 'deferred', fail: 'failed',
  skip_item: 'skipped (old call)', session_outcome: 'session outcome', request_review: 'asked an editor',
};
const dispositionWord = (d) => (d ? DISPOSITION_WORDS[d] || d : '—');
const stateWord = (s) => STATE_WORDS[s] || s;
const causeWord = (c) => CAUSE_WORDS[c] || c.replace(/_/g, ' ');
// a session outcome's retry reason reads as its rule (RETRY_RULES, below)
const reasonWord = (r) => {
  if (!r) return '—';
  const words = REASON_WORDS[r] || (typeof RETRY_RULES !== 'undefined' && RETRY_RULES[r]);
  return words ? `${words} (${r})` : r;
};

// ---------------------------------------------------------------------------------------
// DOM helpers

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}
const $ = (id) => document.getElementById(id);
const fmt = (v) => (v === null || v === undefined || v === '' ? '—' : String(v));

function ago(ts) {
  if (!ts) return '—';
  const s = Math.round((Date.now() - Date.parse(ts)) / 1000);
  return age(s) + (s >= 0 ? ' ago' : ' from now');
}
function age(s) {
  if (s === null || s === undefined) return '—';
  const a = Math.abs(s);
  if (a < 90) return `${a} s`;
  if (a < 5400) return `${Math.round(a / 60)} min`;
  if (a < 172800) return `${Math.round(a / 3600)} h`;
  return `${Math.round(a / 86400)} d`;
}
const stateBadge = (s) => h('span', { class: `badge st-${s}` }, stateWord(s));

function table(caption, headers, rows, cls) {
  return h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': caption },
    h('table', { class: cls || '' },
      h('caption', { class: 'sr-only' }, caption),
      h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: headers.length, class: 'empty' }, 'Nothing here.')))));
}

// ---------------------------------------------------------------------------------------
// API

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${sessionStorage.getItem(KEY) || ''}` };
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let json;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (!res.ok) throw new ApiError(res.status, json);
  return json;
}
const qs = (o) => new URLSearchParams(Object.entries(o).filter(([, v]) => v !== undefined && v !== null && v !== '')).toString();
const isAdmin = () => me.role === 'admin';

// The newest transition id now: what an action's transitions come after.
async function lastTransitionId() {
  return (await api('GET', `/v1/transitions?${qs({ after: 0, limit: 1 })}`)).last_id;
}
// The transitions after `after` (of one flow step), optionally only of some items.
async function transitionsSince(after, flowStepId, itemIds) {
  const start = after;
  // The feed holds back rows made after a transaction that is still open began (README,
  // "change feed"): when the action names its items, wait up to 3 s for a row of each.
  for (let attempt = 0; ; attempt++) {
    const out = [];
    after = start;
    for (let page = 0; page < 20; page++) {
      const r = await api('GET', `/v1/transitions?${qs({ after, flow_step_id: flowStepId, limit: 500 })}`);
      out.push(...r.transitions);
      if (r.transitions.length < 500) break;
      after = r.next_after;
    }
    if (!itemIds) return out;
    const list = out.filter((t) => itemIds.includes(t.item_id));
    const seen = new Set(list.map((t) => t.item_id));
    if (seen.size >= itemIds.length || attempt >= 15) return list;
    await new Promise((done) => setTimeout(done, 200));
  }
}

// ---------------------------------------------------------------------------------------
// the key and the role

async function signIn(key) {
  sessionStorage.setItem(KEY, key);
  const w = await api('GET', '/v1/whoami');
  me.actor = w.actor;
  me.role = w.role;
}

function showSignedIn(on) {
  $('signin').hidden = on;
  $('nav').hidden = !on;
  $('top-search').hidden = !on;
  $('who').hidden = !on;
  $('view').hidden = !on;
  if (on) $('who-text').textContent = `${me.actor} (${me.role})`;
}

// ---------------------------------------------------------------------------------------
// the confirm dialog and the result panel

// Ask before an action. fields: [{name, label, type: 'text'|'select', options, required}].
// Resolves to the field values, or null when cancelled.
function confirmAction(title, body, confirmLabel, fields = []) {
  const dlg = $('confirm');
  $('confirm-title').textContent = title;
  $('confirm-body').replaceChildren(...[].concat(body).map((b) => (b instanceof Node ? b : h('p', {}, b))));
  $('confirm-error').textContent = '';
  $('confirm-ok').textContent = confirmLabel;
  const inputs = {};
  $('confirm-fields').replaceChildren(...fields.map((f) => {
    const id = `f-${f.name}`;
    const input = f.type === 'select'
      ? h('select', { id, name: f.name }, f.options.map((o) => h('option', { value: o }, o)))
      : h('input', { id, name: f.name, type: 'text', required: f.required, maxlength: f.max || 2000, autocomplete: 'off' });
    inputs[f.name] = input;
    return h('div', { class: 'field' }, h('label', { for: id }, f.label + (f.required ? ' (required)' : '')), input);
  }));
  return new Promise((resolve) => {
    const done = (v) => {
      $('confirm-form').removeEventListener('submit', onSubmit);
      $('confirm-cancel').removeEventListener('click', onCancel);
      dlg.removeEventListener('cancel', onCancel);
      if (dlg.open) dlg.close();
      resolve(v);
    };
    const onSubmit = (e) => {
      e.preventDefault();
      const values = {};
      for (const [k, el] of Object.entries(inputs)) values[k] = el.value.trim();
      const missing = fields.find((f) => f.required && !values[f.name]);
      if (missing) {
        $('confirm-error').textContent = `${missing.label} is required.`;
        inputs[missing.name].focus();
        return;
      }
      done(values);
    };
    const onCancel = (e) => { e.preventDefault(); done(null); };
    $('confirm-form').addEventListener('submit', onSubmit);
    $('confirm-cancel').addEventListener('click', onCancel);
    dlg.addEventListener('cancel', onCancel);
    dlg.showModal();
    (fields.length ? inputs[fields[0].name] : $('confirm-ok')).focus();
  });
}

function transitionRows(list) {
  return list.map((t) => h('tr', {},
    h('td', {}, String(t.id)),
    h('td', {}, h('a', { href: `#/item/${t.item_id}` }, `item ${t.item_id}`)),
    h('td', {}, t.from_state ? stateBadge(t.from_state) : '—', ' → ', stateBadge(t.to_state)),
    h('td', {}, causeWord(t.cause)),
    h('td', {}, reasonWord(t.reason_code)),
    h('td', {}, fmt(t.actor)),
    h('td', {}, h('time', { datetime: t.at, title: t.at }, ago(t.at)))));
}
const transitionHeaders = ['#', 'item', 'change', 'what happened', 'reason', 'by', 'when'];

function showResult(title, ...body) {
  $('result-title').textContent = title;
  $('result-body').replaceChildren(...body);
  $('result').hidden = false;
  $('result-close').focus();
}
function showTransitionsResult(title, list, more) {
  showResult(title, more ? h('p', {}, more) : '',
    table('Resulting transitions', transitionHeaders, transitionRows(list), 'result-table'));
}
function showError(e) {
  showResult('The action failed', h('p', { class: 'error' },
    e instanceof ApiError && e.body ? `${e.body.error}: ${e.body.message}` : String(e.message || e)));
}

// Run an action on items: confirm, call, then show the transitions it wrote.
async function itemAction({ title, text, label, fields, flowStepId, itemIds, call, after }) {
  const values = await confirmAction(title, text, label, fields);
  if (!values) return;
  try {
    const before = await lastTransitionId();
    const r = await call(values);
    const ids = itemIds || (r && r.item_ids) || null;
    const list = await transitionsSince(before, flowStepId, ids);
    showTransitionsResult(`${label}: done`, list, r && r.requeued !== undefined ? `${r.requeued} items requeued.`
      : r && r.resolved !== undefined ? `${r.resolved} items resolved.` : null);
  } catch (e) {
    showError(e);
  }
  if (after) await after();
}

// ---------------------------------------------------------------------------------------
// views

function heading(text, ...extra) {
  return h('div', { class: 'view-head' }, h('h1', { id: 'view-title', tabindex: -1 }, text), ...extra);
}

async function viewFlowSteps() {
  const [stats, steps, incidents] = await Promise.all([api('GET', '/v1/stats'), api('GET', '/v1/flow-steps'),
    api('GET', '/v1/tool-incidents?state=open&limit=500')]);
  const known = new Map(steps.flow_steps.map((f) => [f.flow_step_id, f]));
  const openIncidents = (fs) => incidents.tool_incidents.filter((t) => t.flow_step_id === fs);
  const cards = stats.flow_steps.map((f) => {
    const lastHour = Object.entries(f.jobs_last_hour).filter(([, n]) => n > 0);
    const jobsTotal = lastHour.reduce((a, [, n]) => a + n, 0);
    const counts = STATES.map((s) => h('li', {},
      h('a', { href: `#/items?${qs({ flow_step_id: f.flow_step_id, state: s, order: 'desc' })}`, class: `count st-${s}` },
        h('span', { class: 'n' }, String(f.items[s])), h('span', { class: 'label' }, stateWord(s)))));
    const actions = isAdmin() ? h('div', { class: 'actions' },
      h('button', {
        type: 'button', class: f.paused ? '' : 'secondary', 'data-action': f.paused ? 'resume' : 'pause',
        onclick: () => pauseResume(f.flow_step_id, !f.paused),
      }, f.paused ? 'Resume claims' : 'Pause claims'),
      f.items.failed > 0 ? h('button', {
        type: 'button', class: 'secondary', 'data-action': 'requeue-failed',
        onclick: () => bulkRequeue(f.flow_step_id, 'failed', null, route),
      }, `Requeue failed (${f.items.failed})…`) : null) : null;
    return h('article', { class: 'card flow', 'data-flow-step': f.flow_step_id, 'aria-labelledby': `fs-${f.flow_step_id}` },
      h('div', { class: 'flow-head' },
        h('h2', { id: `fs-${f.flow_step_id}` }, h('a', { href: `#/items?${qs({ flow_step_id: f.flow_step_id, order: 'desc' })}` }, f.flow_step_id)),
        f.paused ? h('span', { class: 'badge paused' }, 'paused') : h('span', { class: 'badge running' }, 'claiming')),
      h('ul', { class: 'counts', 'aria-label': 'Items by state' }, counts),
      h('dl', { class: 'facts' },
        h('div', {}, h('dt', {}, 'Oldest claimable'), h('dd', {}, age(f.oldest_claimable_age_seconds))),
        h('div', {}, h('dt', {}, 'Stuck claims'), h('dd', { class: f.stuck_claims ? 'warn' : '' }, String(f.stuck_claims))),
        h('div', {}, h('dt', {}, 'Jobs last hour'), h('dd', {}, String(jobsTotal),
          lastHour.length ? h('span', { class: 'muted' }, lastHour.map(([k, n]) => `${k} ${n}`).join(', ')) : ''))),
      ...openIncidents(f.flow_step_id).map((t) => incidentLine(t)),
      actions,
      known.get(f.flow_step_id) ? null : h('p', { class: 'muted' }, 'not registered as a flow step'));
  });
  return [heading('Flow steps', h('p', { class: 'muted', id: 'refresh-status' }, `as of ${new Date(Date.parse(stats.generated_at)).toLocaleTimeString()}; refreshes every ${REFRESH_MS / 1000} s`)),
    cards.length ? h('div', { class: 'grid' }, cards) : h('p', {}, 'No flow steps yet: register items with POST /v1/items.')];
}

// An open tooling incident of a flow step (README "Tooling incidents") and, for an admin, its
// resolve action (which puts the incident's items back to available).
function incidentLine(t) {
  return h('p', { class: 'incident', 'data-incident': String(t.id) },
    h('a', { class: 'warn', href: `#/incident/${t.id}` }, `Tooling incident #${t.id}`),
    ` '${(t.tools && t.tools.length ? t.tools : [t.tool]).join("', '")}' fails the same way on ${t.items} item${t.items === 1 ? '' : 's'} since ${ago(t.first_seen)}: a tooling bug, not bad sources. `,
    isAdmin() ? h('button', {
      type: 'button', class: 'secondary', 'data-action': 'resolve-incident',
      onclick: () => itemAction({
        title: `Resolve tooling incident #${t.id}?`,
        text: [`'${t.tool}' in ${t.flow_step_id}: ${t.signature}`,
          'Its deferred, failed, parked and rejected items, and the items rejected while it was open, become available now.'],
        label: 'Resolve and requeue', fields: [{ name: 'reason', label: 'Reason', type: 'text' }], flowStepId: t.flow_step_id,
        call: async (v) => {
          const r = await api('POST', `/v1/tool-incidents/${t.id}/resolve`, { requeue_items: true, reason: v.reason || undefined });
          return { requeued: r.requeued.length, item_ids: r.requeued };
        },
        after: route,
      }),
    }, 'Resolve and requeue…') : null);
}

async function pauseResume(fs, pause) {
  const values = await confirmAction(`${pause ? 'Pause' : 'Resume'} ${fs}?`,
    pause ? 'Workers get no new claims from this flow step until it is resumed. Live claims are not touched.'
      : 'Workers can claim from this flow step again.', pause ? 'Pause' : 'Resume');
  if (!values) return;
  try {
    const r = await api('POST', `/v1/flow-steps/${encodeURIComponent(fs)}/${pause ? 'pause' : 'resume'}`);
    showResult(`${r.flow_step.flow_step_id} is ${r.flow_step.paused ? 'paused' : 'claiming again'}`,
      h('p', {}, `paused: ${r.flow_step.paused}, changed ${ago(r.flow_step.updated_at)}. Pausing writes no item transition.`));
  } catch (e) { showError(e); }
  await route();
}

async function bulkRequeue(fs, state, reasonCode, after) {
  let dry;
  try {
    dry = await api('POST', '/v1/items/requeue', { flow_step_id: fs, state, reason_code: reasonCode || undefined, dry_run: true });
  } catch (e) { showError(e); return; }
  await itemAction({
    title: `Requeue ${state} items of ${fs}?`,
    text: [h('p', { class: 'dry-run' }, `${dry.would_requeue} item${dry.would_requeue === 1 ? '' : 's'} would be requeued`,
      dry.would_requeue >= 1000 ? ' (the first 1000)' : '', '.'), 'They become available now; their budgets are kept.'],
    label: 'Requeue', fields: [{ name: 'reason', label: 'Reason', type: 'text' }], flowStepId: fs,
    call: (v) => api('POST', '/v1/items/requeue', { flow_step_id: fs, state, reason_code: reasonCode || undefined, reason: v.reason || undefined }),
    after,
  });
}

async function bulkResolve(fs, state, reasonCode, after) {
  let dry;
  try {
    dry = await api('POST', '/v1/items/resolve', { flow_step_id: fs, state, reason_code: reasonCode || undefined, outcome: 'rejected', reason: 'dry run', dry_run: true });
  } catch (e) { showError(e); return; }
  await itemAction({
    title: `Resolve ${state} items of ${fs}?`,
    text: h('p', { class: 'dry-run' }, `${dry.would_resolve} item${dry.would_resolve === 1 ? '' : 's'} would be resolved`,
      dry.would_resolve >= 1000 ? ' (the first 1000)' : '', '.'),
    label: 'Resolve',
    fields: [{ name: 'outcome', label: 'Outcome', type: 'select', options: ['rejected', 'processed'] },
      { name: 'reason', label: 'Reason', type: 'text', required: true }],
    flowStepId: fs,
    call: (v) => api('POST', '/v1/items/resolve', { flow_step_id: fs, state, reason_code: reasonCode || undefined, outcome: v.outcome, reason: v.reason }),
    after,
  });
}

async function viewItems(params) {
  const f = { flow_step_id: params.get('flow_step_id') || '', state: params.get('state') || '', reason_code: params.get('reason_code') || '',
    worker_id: params.get('worker_id') || '', order: params.get('order') || 'desc', after: params.get('after') || '' };
  const steps = (await api('GET', '/v1/flow-steps')).flow_steps;
  const page = await api('GET', `/v1/items?${qs({ ...f, limit: 50 })}`);
  const go = (extra) => { location.hash = `#/items?${qs({ ...f, after: '', ...extra })}`; };
  const form = h('form', { class: 'filters', 'aria-label': 'Filter items', onsubmit: (e) => {
    e.preventDefault();
    const d = new FormData(e.target);
    go(Object.fromEntries([...d.entries()].map(([k, v]) => [k, String(v).trim()])));
  } },
  h('div', { class: 'field' }, h('label', { for: 'flt-fs' }, 'Flow step'),
    h('select', { id: 'flt-fs', name: 'flow_step_id' }, h('option', { value: '' }, 'any'),
      steps.map((s) => h('option', { value: s.flow_step_id, selected: s.flow_step_id === f.flow_step_id }, s.flow_step_id)))),
  h('div', { class: 'field' }, h('label', { for: 'flt-state' }, 'State'),
    h('select', { id: 'flt-state', name: 'state' }, h('option', { value: '' }, 'any'),
      STATES.map((s) => h('option', { value: s, selected: s === f.state }, s)))),
  h('div', { class: 'field' }, h('label', { for: 'flt-rc' }, 'Reason code'),
    h('input', { id: 'flt-rc', name: 'reason_code', value: f.reason_code, autocomplete: 'off' })),
  h('div', { class: 'field' }, h('label', { for: 'flt-w' }, 'Worker (latest job)'),
    h('input', { id: 'flt-w', name: 'worker_id', value: f.worker_id, autocomplete: 'off' })),
  h('div', { class: 'field' }, h('label', { for: 'flt-order' }, 'Order'),
    h('select', { id: 'flt-order', name: 'order' }, h('option', { value: 'desc', selected: f.order === 'desc' }, 'newest first'),
      h('option', { value: 'asc', selected: f.order === 'asc' }, 'oldest first'))),
  h('button', { type: 'submit' }, 'Apply'));
  const rows = page.items.map((it) => h('tr', {},
    h('td', {}, h('a', { href: `#/item/${it.id}`, 'aria-label': `item ${it.id}` }, String(it.id))),
    h('td', { class: 'ident' }, it.item_identifier),
    h('td', {}, stateBadge(it.state)),
    h('td', {}, `${it.failures}/${it.max_attempts}`, h('span', { class: 'muted' }, ` · ${it.defers}/${it.max_defers}`)),
    h('td', {}, reasonWord(it.last_reason_code)),
    h('td', {}, h('time', { datetime: it.updated_at, title: it.updated_at }, ago(it.updated_at)))));
  const bulk = [];
  if (isAdmin() && f.flow_step_id && REQUEUEABLE.includes(f.state))
    bulk.push(h('button', { type: 'button', class: 'secondary', 'data-action': 'bulk-requeue',
      onclick: () => bulkRequeue(f.flow_step_id, f.state, f.reason_code, route) }, `Requeue all ${f.state}…`));
  if (isAdmin() && f.flow_step_id && PARKED.includes(f.state))
    bulk.push(h('button', { type: 'button', class: 'secondary', 'data-action': 'bulk-resolve',
      onclick: () => bulkResolve(f.flow_step_id, f.state, f.reason_code, route) }, `Resolve all ${f.state}…`));
  return [heading('Items'), form,
    bulk.length ? h('div', { class: 'actions' }, bulk) : null,
    table('Items', ['id', 'identifier', 'state', 'failures · defers', 'last reason', 'updated'], rows, 'items'),
    h('nav', { class: 'pager', 'aria-label': 'Pages' },
      f.after ? h('button', { type: 'button', class: 'secondary', onclick: () => go({}) }, 'First page') : null,
      page.next_after !== null ? h('button', { type: 'button', class: 'secondary', onclick: () => go({ after: page.next_after }) }, 'Next page') : null)];
}

function kv(pairs) {
  return h('dl', { class: 'kv' }, pairs.filter(Boolean).map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))));
}

// Why a transition parked an item (manual review or failed), in words; null for any other.
// The budgets are the item's now: right for its latest parking, the usual question.
function parkWhy(t, it) {
  if (t.to_state === 'manual_review') {
    if (t.cause === 'request_review' || t.reason_code === 'review_requested') return 'the model asked an editor a question';
    if (t.cause === 'defer_item' && it.defers >= it.max_defers) return `defer budget spent: ${it.defers} of ${it.max_defers}`;
    if (t.cause === 'defer_item') return 'the worker asked for a person to look';
    return 'parked for a person to decide';
  }
  if (t.to_state === 'failed') {
    if (t.reason_code === 'retry_budget_exhausted' || it.failures >= it.max_attempts)
      return `failure budget spent: ${it.failures} of ${it.max_attempts}`;
    if (t.cause === 'fail') return 'a failure retrying cannot fix (the worker said it is not retryable)';
    if (t.cause === 'session_outcome') return 'the session failed in a way a retry cannot fix';
  }
  return null;
}

// The tooling incidents (open or resolved) that list item `it` among their affected items.
async function incidentsOfItem(it) {
  const list = (await api('GET', `/v1/tool-incidents?${qs({ flow_step_id: it.flow_step_id, limit: 500 })}`)).tool_incidents.slice(-20);
  const full = await Promise.all(list.map((t) => api('GET', `/v1/tool-incidents/${t.id}`).then((x) => x.tool_incident)));
  return full.filter((t) => (t.affected_items || []).some((a) => a.id === it.id));
}

async function viewItem(id) {
  const [r, jobs] = await Promise.all([api('GET', `/v1/items/${id}`), api('GET', `/v1/jobs?${qs({ item_id: id, order: 'desc', limit: 100 })}`)]);
  const it = r.item;
  const incidents = await incidentsOfItem(it);
  const asked = it.state === 'manual_review' && r.transitions[0] && r.transitions[0].cause === 'request_review' ? r.transitions[0] : null;
  const reload = () => route();
  const actions = [];
  if (isAdmin()) {
    if (it.state !== 'claimed')
      actions.push(h('button', { type: 'button', 'data-action': 'requeue', onclick: () => itemAction({
        title: `Requeue item ${it.id}?`, text: `It goes from ${it.state} to available now.`, label: 'Requeue',
        fields: [{ name: 'reason', label: 'Reason', type: 'text' }], flowStepId: it.flow_step_id, itemIds: [it.id],
        call: (v) => api('POST', `/v1/items/${it.id}/requeue`, v.reason ? { reason: v.reason } : {}), after: reload,
      }) }, 'Requeue…'));
    if (PARKED.includes(it.state))
      actions.push(h('button', { type: 'button', 'data-action': 'resolve', onclick: () => itemAction({
        title: `Resolve item ${it.id}?`, text: `It is ${it.state}: decide it by hand.`, label: 'Resolve',
        fields: [{ name: 'outcome', label: 'Outcome', type: 'select', options: ['rejected', 'processed'] },
          { name: 'reason', label: 'Reason', type: 'text', required: true },
          { name: 'reason_code', label: 'Reason code', type: 'text', max: 200 }],
        flowStepId: it.flow_step_id, itemIds: [it.id],
        call: (v) => api('POST', `/v1/items/${it.id}/resolve`, { outcome: v.outcome, reason: v.reason, reason_code: v.reason_code || undefined }),
        after: reload,
      }) }, 'Resolve…'));
    if (it.state === 'claimed')
      actions.push(h('button', { type: 'button', 'data-action': 'release', onclick: () => itemAction({
        title: `Release the claim on item ${it.id}?`,
        text: `Job ${it.current_job_id} loses its claim at once (its next write is 409 claim_lost); the item is available again and no budget is spent.`,
        label: 'Release', fields: [{ name: 'reason', label: 'Reason', type: 'text' }], flowStepId: it.flow_step_id, itemIds: [it.id],
        call: (v) => api('POST', `/v1/items/${it.id}/release`, v.reason ? { reason: v.reason } : {}), after: reload,
      }) }, 'Release claim…'));
  }
  const adjudicated = jobs.jobs.filter((j) => j.adjudication);
  const failures = jobs.jobs.filter((j) => j.tool_failures && j.tool_failures.count > 0);
  return [heading(`Item ${it.id}`, stateBadge(it.state)),
    actions.length ? h('div', { class: 'actions', 'aria-label': 'Actions' }, actions) : null,
    h('section', { class: 'card', 'aria-labelledby': 'h-item' }, h('h2', { id: 'h-item' }, 'Item'),
      kv([['flow step', h('a', { href: `#/items?${qs({ flow_step_id: it.flow_step_id, order: 'desc' })}` }, it.flow_step_id)],
        ['source', `${it.source_type}: ${it.item_identifier}`],
        ['attempts', String(it.attempts)], ['failures', `${it.failures} of ${it.max_attempts}`], ['defers', `${it.defers} of ${it.max_defers}`],
        ['priority', String(it.priority)], ['available', ago(it.available_at)],
        it.lease_expires_at ? ['lease until', ago(it.lease_expires_at)] : null,
        it.current_job_id ? ['latest job', h('a', { href: `#/job/${it.current_job_id}` }, `job ${it.current_job_id}`)] : null,
        ['last reason', `${reasonWord(it.last_reason_code)}${it.last_reason ? `: ${it.last_reason}` : ''}`],
        ['registered', ago(it.created_at)]]),
      it.payload ? h('details', {}, h('summary', {}, 'Payload'), h('pre', {}, JSON.stringify(it.payload, null, 2))) : null),
    it.state === 'manual_review' ? h('section', { class: 'card review-card', 'aria-labelledby': 'h-q' },
      h('h2', { id: 'h-q' }, asked ? 'The model asks an editor' : 'Waiting for a person'),
      asked ? h('blockquote', { class: 'question' }, asked.reason) : h('p', {}, parkWhy(r.transitions[0] || {}, it) || 'parked for a person to decide'),
      asked ? h('p', { class: 'muted' }, `asked by ${fmt(asked.actor)} ${ago(asked.at)}`) : null,
      isAdmin() ? answerButton(it.id, it.flow_step_id, asked ? asked.reason : null, reload) : null) : null,
    incidents.length ? h('section', { class: 'card', 'aria-labelledby': 'h-inc' }, h('h2', { id: 'h-inc' }, 'Tooling incidents'),
      h('ul', {}, incidents.map((t) => h('li', { 'data-incident': String(t.id) },
        h('a', { href: `#/incident/${t.id}` }, `Tooling incident #${t.id}`), ` (${t.state}): '${t.tool}' — ${t.sample_error}`)))) : null,
    h('section', { class: 'card', 'aria-labelledby': 'h-tl' }, h('h2', { id: 'h-tl' }, 'Timeline'),
      h('ol', { class: 'timeline', reversed: true }, r.transitions.map((t, i) => h('li', { 'data-transition': t.id },
        h('div', { class: 'tl-head' }, t.from_state ? stateBadge(t.from_state) : '', t.from_state ? ' → ' : '', stateBadge(t.to_state),
          ' ', h('strong', {}, causeWord(t.cause)), t.job_id ? [' ', h('a', { href: `#/job/${t.job_id}` }, `job ${t.job_id}`)] : ''),
        i === 0 && parkWhy(t, it) ? h('div', { class: 'why' }, `Why: ${parkWhy(t, it)}`) : null,
        h('div', { class: 'muted' }, `by ${fmt(t.actor)} · `, h('time', { datetime: t.at, title: t.at }, ago(t.at)),
          t.reason_code ? ` · reason: ${reasonWord(t.reason_code)}` : '', t.forced ? ' · forced past the required-tool check' : ''),
        t.reason ? h('div', { class: 'reason' }, t.reason) : null)))),
    h('section', { class: 'card', 'aria-labelledby': 'h-jobs' }, h('h2', { id: 'h-jobs' }, 'Jobs'),
      table('Jobs of this item', ['job', 'attempt', 'worker', 'status', 'disposition', 'reason', 'tool failures', 'claimed'],
        jobs.jobs.map((j) => h('tr', {}, h('td', {}, h('a', { href: `#/job/${j.id}` }, `job ${j.id}`)), h('td', {}, String(j.attempt)),
          h('td', {}, j.worker_id), h('td', {}, j.status), h('td', {}, dispositionWord(j.disposition)), h('td', {}, reasonWord(j.reason_code)),
          h('td', {}, String(j.tool_failures ? j.tool_failures.count : 0)), h('td', {}, ago(j.claimed_at)))))),
    h('section', { class: 'card', 'aria-labelledby': 'h-tf' }, h('h2', { id: 'h-tf' }, 'Tool failures'),
      failures.length ? table('Tool failures', ['job', 'tool', 'count', 'retryable', 'last error'],
        failures.flatMap((j) => j.tool_failures.by_tool.map((t) => h('tr', {}, h('td', {}, h('a', { href: `#/job/${j.id}` }, `job ${j.id}`)),
          h('td', {}, t.tool), h('td', {}, String(t.count)), h('td', {}, t.retryable ? 'yes' : 'no'), h('td', { class: 'ident' }, t.last_error)))))
        : h('p', { class: 'muted' }, 'None.')),
    h('section', { class: 'card', 'aria-labelledby': 'h-adj' }, h('h2', { id: 'h-adj' }, 'Adjudications'),
      adjudicated.length ? adjudicated.map((j) => h('div', { class: 'adj' }, h('h3', {}, h('a', { href: `#/job/${j.id}` }, `job ${j.id}`)), explainAdjudication(j.adjudication)))
        : h('p', { class: 'muted' }, 'No session outcome was reported for this item.'))];
}

// What decided a session outcome, in the words of SPEC session-outcome.md §4.
const RETRY_RULES = {
  resume: 'the agent API asked to resume (max turns, context exhausted, an API error or a kill by someone else)',
  early_stop: 'the session ended normally but its result lacks the completion marker',
  empty_output: 'the session ended with no output (it was probably killed)',
  thinking_stall: 'the session stalled on a turn that only thought',
  drain_race: 'the content was not on a channel that is watched for it',
  stale: 'the session went stale', idle_stall: 'the session stalled while idle',
  contract_recovery: 'the content checks failed but the session wrote something, so it is retried',
  zero_writes: 'the session said it succeeded but wrote nothing where writes were expected',
  completed_no_flush: 'the session completed without saving its writes',
  budget_exhausted: 'the retry budget (max_consecutive_retries) is used up',
};
const LABELS = {
  success: 'the session succeeded with its content complete',
  recovered_from_stale: 'a stale session still had a complete result', recovered_from_idle_stall: 'an idle session still had a complete result',
  empty_result: 'the result was empty', context_exhausted: 'the context was exhausted',
  missing_completion_marker: 'the completion marker was missing', adjudicated_failure: 'the content checks failed',
};
function explainAdjudication(a) {
  let rule;
  if (a.outcome === 'retriable') rule = RETRY_RULES[a.retry_reason] || `retry: ${a.retry_reason.replace(/_/g, ' ')}`;
  else if (a.outcome === 'failed' && a.retry_reason === 'budget_exhausted') rule = RETRY_RULES.budget_exhausted;
  else rule = LABELS[a.subtype] || String(a.subtype).replace(/_/g, ' ');
  return h('div', { class: 'explain' },
    h('p', { class: 'verdict' }, h('span', { class: `badge out-${a.outcome}` }, a.outcome), ' because ', h('strong', { class: 'rule' }, rule)),
    kv([['content state', a.content_state], ['label', a.subtype], ['retry reason', a.retry_reason], ['CLI subtype', a.cli_subtype],
      ['infrastructure exit', a.infra_exit], ['write evidence', a.write_evidence ? 'yes' : 'no'],
      a.warnings && a.warnings.length ? ['warnings', a.warnings.join('; ')] : null]),
    a.result_text ? h('details', {}, h('summary', {}, 'Result text'), h('pre', {}, a.result_text)) : null);
}

async function viewJob(id) {
  const j = (await api('GET', `/v1/jobs/${id}`)).job;
  return [heading(`Job ${j.id}`, h('span', { class: 'badge' }, j.status)),
    h('section', { class: 'card', 'aria-labelledby': 'h-job' }, h('h2', { id: 'h-job' }, 'Job'),
      kv([['item', h('a', { href: `#/item/${j.item_id}` }, `item ${j.item_id}`)], ['flow step', j.flow_step_id], ['worker', j.worker_id],
        ['attempt', String(j.attempt)], ['disposition', dispositionWord(j.disposition)], ['reason', `${reasonWord(j.reason_code)}${j.reason ? `: ${j.reason}` : ''}`],
        ['claimed', ago(j.claimed_at)], ['finished', j.finished_at ? ago(j.finished_at) : 'still running'],
        ['tool failures', String(j.tool_failures.count)],
        ['claim trace', j.claim_trace_id ? h('a', { class: 'ident', href: `#/search?${qs({ q: j.claim_trace_id })}` }, j.claim_trace_id) : '—'],
        ['disposition trace', j.disposition_trace_id ? h('a', { class: 'ident', href: `#/search?${qs({ q: j.disposition_trace_id })}` }, j.disposition_trace_id) : '—']]),
      Object.keys(j.engine_data || {}).length ? h('details', {}, h('summary', {}, 'Engine data'), h('pre', {}, JSON.stringify(j.engine_data, null, 2))) : null),
    h('section', { class: 'card', 'aria-labelledby': 'h-adj' }, h('h2', { id: 'h-adj' }, 'Adjudication'),
      j.adjudication ? explainAdjudication(j.adjudication) : h('p', { class: 'muted' }, 'No session outcome was reported for this job.')),
    j.tool_failures.count ? h('section', { class: 'card', 'aria-labelledby': 'h-tf' }, h('h2', { id: 'h-tf' }, 'Tool failures'),
      table('Tool failures', ['tool', 'count', 'retryable', 'last error'], j.tool_failures.by_tool.map((t) => h('tr', {},
        h('td', {}, t.tool), h('td', {}, String(t.count)), h('td', {}, t.retryable ? 'yes' : 'no'), h('td', { class: 'ident' }, t.last_error))))) : null];
}

// Up to 50 items of a filtered list, newest first. A list reads a window of items per call
// (docs/api-guide.md, "Lists"): a short page is not the end while next_after is set, so follow
// it, for at most 40 calls.
async function itemsMatching(filter) {
  const items = [];
  let after = 0;
  for (let call = 0; call < 40 && items.length < 50; call++) {
    const r = await api('GET', `/v1/items?${qs({ ...filter, limit: 50 - items.length, order: 'desc', after })}`);
    items.push(...r.items);
    if (r.next_after === null || r.next_after === undefined) break;
    after = r.next_after;
  }
  return { items };
}

// Search by item identifier (exact matches first, then those starting with the text), by item
// id, and by W3C trace id (the jobs claimed or finished in that trace).
async function viewSearch(params) {
  const q = (params.get('q') || '').trim();
  const form = searchForm('search-q', q);
  if (!q) return [heading('Search'), form, h('p', { class: 'muted' }, 'Type an item identifier (or its beginning), an item id or a trace id.')];
  const isTrace = /^[0-9a-f]{32}$/.test(q);
  const [exact, prefix, traced, byId] = await Promise.all([
    itemsMatching({ identifier: q }),
    itemsMatching({ identifier_prefix: q }),
    isTrace ? api('GET', `/v1/jobs?${qs({ trace_id: q, limit: 50 })}`) : null,
    /^\d{1,15}$/.test(q) ? api('GET', `/v1/items/${q}`).catch(() => null) : null]);
  const seen = new Set(exact.items.map((i) => i.id));
  const items = [...exact.items, ...prefix.items.filter((i) => !seen.has(i.id))];
  const rows = items.map((it) => h('tr', { 'data-item': String(it.id) },
    h('td', {}, h('a', { href: `#/item/${it.id}` }, `item ${it.id}`)),
    h('td', { class: 'ident' }, it.item_identifier, seen.has(it.id) ? h('span', { class: 'muted' }, ' (exact)') : ''),
    h('td', {}, it.flow_step_id), h('td', {}, stateBadge(it.state)),
    h('td', {}, h('time', { datetime: it.updated_at, title: it.updated_at }, ago(it.updated_at)))));
  return [heading(`Search: ${q}`), form,
    byId ? h('p', {}, 'Item id ', h('a', { href: `#/item/${byId.item.id}` }, `item ${byId.item.id}`), ` (${byId.item.item_identifier})`) : null,
    traced ? h('section', { class: 'card', 'aria-labelledby': 'h-traced' }, h('h2', { id: 'h-traced' }, 'Jobs in this trace'),
      table('Jobs in this trace', ['job', 'item', 'status', 'trace of'], traced.jobs.map((j) => h('tr', {},
        h('td', {}, h('a', { href: `#/job/${j.id}` }, `job ${j.id}`)), h('td', {}, h('a', { href: `#/item/${j.item_id}` }, `item ${j.item_id}`)),
        h('td', {}, j.status), h('td', {}, [j.claim_trace_id === q ? 'its claim' : null, j.disposition_trace_id === q ? 'its disposition' : null].filter(Boolean).join(' and ')))))) : null,
    table('Matching items', ['item', 'identifier', 'flow step', 'state', 'updated'], rows, 'search-results'),
    items.length >= 50 ? h('p', { class: 'muted' }, 'The first 50 of each kind; type more of the identifier to narrow it.') : null];
}

function searchForm(id, value) {
  return h('form', { class: 'filters', role: 'search', 'aria-label': 'Search items', onsubmit: (e) => {
    e.preventDefault();
    location.hash = `#/search?${qs({ q: e.target.elements.q.value.trim() })}`;
  } }, h('div', { class: 'field' }, h('label', { for: id }, 'Item identifier, item id or trace id'),
    h('input', { id, name: 'q', value: value || '', autocomplete: 'off', type: 'search', maxlength: 2000 })),
  h('button', { type: 'submit' }, 'Search'));
}

// A tooling incident: what failed (the sample error as it was, and its pattern), through which
// tools, the items it affected and their states now, its timeline and the resolve action.
async function viewIncident(id) {
  const t = (await api('GET', `/v1/tool-incidents/${id}`)).tool_incident;
  const tools = t.tools && t.tools.length ? t.tools : [t.tool];
  const events = [[t.first_seen, 'first failure of this kind'], [t.opened_at, `opened: ${t.items} items failed the same way`],
    [t.last_seen, 'latest failure'], t.resolved_at ? [t.resolved_at, `resolved by ${fmt(t.resolved_by)}${t.resolve_reason ? `: ${t.resolve_reason}` : ''}`] : null]
    .filter((e) => e && e[0]).sort((a, b) => Date.parse(b[0]) - Date.parse(a[0]));
  const resolve = isAdmin() && t.state === 'open' ? h('div', { class: 'actions' }, h('button', {
    type: 'button', 'data-action': 'resolve-incident', onclick: () => itemAction({
      title: `Resolve tooling incident #${t.id}?`,
      text: ['Its deferred, failed, parked and rejected items, and the items rejected while it was open, become available now.'],
      label: 'Resolve and requeue', fields: [{ name: 'reason', label: 'Reason', type: 'text' }], flowStepId: t.flow_step_id,
      call: async (v) => {
        const r = await api('POST', `/v1/tool-incidents/${t.id}/resolve`, { requeue_items: true, reason: v.reason || undefined });
        return { requeued: r.requeued.length, item_ids: r.requeued };
      },
      after: route,
    }) }, 'Resolve and requeue…')) : null;
  return [heading(`Tooling incident #${t.id}`, h('span', { class: `badge ${t.state === 'open' ? 'paused' : 'running'}` }, t.state)),
    resolve,
    h('section', { class: 'card', 'aria-labelledby': 'h-what' }, h('h2', { id: 'h-what' }, 'What fails'),
      h('pre', { class: 'sample-error' }, t.sample_error),
      kv([['flow step', h('a', { href: `#/items?${qs({ flow_step_id: t.flow_step_id, order: 'desc' })}` }, t.flow_step_id)],
        ['tools', tools.join(', ')],
        t.template ? ['template', h('code', {}, t.template)] : null,
        ['pattern', h('code', {}, t.signature)],
        ['items', String(t.items)]])),
    h('section', { class: 'card', 'aria-labelledby': 'h-aff' }, h('h2', { id: 'h-aff' }, 'Affected items'),
      table('Affected items', ['item', 'identifier', 'state now'], (t.affected_items || []).map((a) => h('tr', { 'data-item': String(a.id) },
        h('td', {}, h('a', { href: `#/item/${a.id}` }, `item ${a.id}`)), h('td', { class: 'ident' }, a.item_identifier), h('td', {}, stateBadge(a.state)))))),
    h('section', { class: 'card', 'aria-labelledby': 'h-itl' }, h('h2', { id: 'h-itl' }, 'Timeline'),
      h('ol', { class: 'timeline', reversed: true }, events.map(([at, what]) => h('li', {},
        h('div', { class: 'tl-head' }, h('strong', {}, what)), h('div', { class: 'muted' }, h('time', { datetime: at, title: at }, ago(at)))))))];
}

async function viewIncidents() {
  const [open, resolved] = await Promise.all([api('GET', '/v1/tool-incidents?state=open&limit=500'),
    api('GET', '/v1/tool-incidents?state=resolved&limit=500')]);
  const rows = (list) => list.slice().reverse().map((t) => h('tr', { 'data-incident': String(t.id) },
    h('td', {}, h('a', { href: `#/incident/${t.id}` }, `#${t.id}`)), h('td', {}, t.flow_step_id),
    h('td', {}, (t.tools && t.tools.length ? t.tools : [t.tool]).join(', ')), h('td', { class: 'ident' }, t.sample_error),
    h('td', {}, String(t.items)), h('td', {}, ago(t.resolved_at || t.last_seen))));
  const heads = ['incident', 'flow step', 'tools', 'sample error', 'items', 'last change'];
  return [heading('Tooling incidents'),
    h('section', { class: 'card', 'aria-labelledby': 'h-open' }, h('h2', { id: 'h-open' }, 'Open'), table('Open incidents', heads, rows(open.tool_incidents))),
    h('section', { class: 'card', 'aria-labelledby': 'h-res' }, h('h2', { id: 'h-res' }, 'Resolved'), table('Resolved incidents', heads, rows(resolved.tool_incidents)))];
}

// An editor's answer to an item waiting in manual_review (POST /v1/items/{id}/review).
function answerButton(itemId, flowStepId, question, after) {
  return h('button', { type: 'button', 'data-action': 'answer-review', onclick: () => itemAction({
    title: `Answer the question on item ${itemId}`,
    text: question ? [h('p', {}, 'The model asked:'), h('blockquote', { class: 'question' }, question),
      'Retry sends your answer to the next attempt; processed or rejected closes the item.']
      : 'It waits for a person. Retry sends your answer to the next attempt; processed or rejected closes the item.',
    label: 'Send answer',
    fields: [{ name: 'decision', label: 'Decision', type: 'select', options: ['retry', 'processed', 'rejected'] },
      { name: 'answer', label: 'Answer (required for retry)', type: 'text', max: 4000 }],
    flowStepId, itemIds: [itemId],
    call: (v) => api('POST', `/v1/items/${itemId}/review`, { decision: v.decision, answer: v.answer || undefined }),
    after,
  }) }, 'Answer…');
}

// The review queue: what waits for a person, oldest question first, and per flow step how
// many wait and how long the oldest question has.
async function viewReview(params) {
  const fs = params.get('flow_step_id') || '';
  const q = await api('GET', `/v1/reviews?${qs({ flow_step_id: fs, limit: 200 })}`);
  const counts = q.flow_steps.map((f) => h('tr', { 'data-flow-step': f.flow_step_id },
    h('td', {}, h('a', { href: `#/review?${qs({ flow_step_id: f.flow_step_id })}` }, f.flow_step_id)),
    h('td', {}, String(f.waiting)), h('td', {}, String(f.questions)),
    h('td', { class: f.oldest_question_age_seconds > 86400 ? 'warn' : '' }, f.questions ? age(f.oldest_question_age_seconds) : '—')));
  const rows = q.reviews.map((r) => h('tr', { 'data-item': String(r.item_id) },
    h('td', {}, h('a', { href: `#/item/${r.item_id}` }, `item ${r.item_id}`)),
    h('td', { class: 'ident' }, r.item_identifier), h('td', {}, r.flow_step_id),
    h('td', { class: 'question' }, r.question || h('span', { class: 'muted' }, 'no question: parked by a defer')),
    h('td', {}, r.asked_at ? ago(r.asked_at) : ago(r.waiting_since)),
    isAdmin() ? h('td', {}, answerButton(r.item_id, r.flow_step_id, r.question, route)) : null));
  const heads = ['item', 'identifier', 'flow step', 'question', 'waiting'].concat(isAdmin() ? ['action'] : []);
  return [heading('Review', fs ? h('a', { href: '#/review' }, 'all flow steps') : null),
    h('section', { class: 'card', 'aria-labelledby': 'h-rq' }, h('h2', { id: 'h-rq' }, 'Waiting per flow step'),
      table('Waiting per flow step', ['flow step', 'waiting', 'questions', 'oldest question'], counts, 'review-counts')),
    h('section', { class: 'card', 'aria-labelledby': 'h-rl' }, h('h2', { id: 'h-rl' }, 'Waiting for a person'),
      table('Items waiting for a person', heads, rows, 'review-list'))];
}

async function viewActivity(params) {
  const fs = params.get('flow_step_id') || '';
  const steps = (await api('GET', '/v1/flow-steps')).flow_steps;
  const first = await api('GET', `/v1/transitions?${qs({ after: 0, limit: 1 })}`);
  let after = Math.max(0, first.last_id - 200);
  const body = h('tbody', {});
  const status = h('p', { class: 'muted', id: 'activity-status' }, 'Watching…');
  const poll = async () => {
    if (document.hidden) return;
    try {
      const r = await api('GET', `/v1/transitions?${qs({ after, flow_step_id: fs, limit: 200 })}`);
      after = r.next_after;
      for (const row of transitionRows(r.transitions)) body.prepend(row);
      while (body.children.length > 300) body.lastChild.remove();
      status.textContent = `Watching; last checked ${new Date().toLocaleTimeString()}.`;
    } catch (e) {
      status.textContent = `Could not read the feed: ${e.message}`;
    }
  };
  await poll();
  pollTimer = setInterval(poll, 2000);
  return [heading('Activity'),
    h('form', { class: 'filters', 'aria-label': 'Filter activity', onsubmit: (e) => { e.preventDefault(); location.hash = `#/activity?${qs({ flow_step_id: e.target.elements.flow_step_id.value })}`; } },
      h('div', { class: 'field' }, h('label', { for: 'act-fs' }, 'Flow step'),
        h('select', { id: 'act-fs', name: 'flow_step_id' }, h('option', { value: '' }, 'any'),
          steps.map((s) => h('option', { value: s.flow_step_id, selected: s.flow_step_id === fs }, s.flow_step_id)))),
      h('button', { type: 'submit' }, 'Apply')),
    status,
    h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Live activity' },
      h('table', { class: 'activity' }, h('caption', { class: 'sr-only' }, 'Transitions, newest first'),
        h('thead', {}, h('tr', {}, transitionHeaders.map((x) => h('th', { scope: 'col' }, x)))), body))];
}

// ---------------------------------------------------------------------------------------
// routing

// The overview and an open item refresh themselves every REFRESH_MS, not while the tab is
// hidden, a dialog is open or a result is shown (it would move what the operator reads).
function startRefresh(render) {
  refreshTimer = setInterval(async () => {
    if (document.hidden || $('confirm').open || !$('result').hidden) return;
    const hash = location.hash;
    try {
      const content = await render();
      if (location.hash !== hash || !refreshTimer) return;
      const focused = document.activeElement && document.activeElement.id;
      $('view').replaceChildren(...content.filter(Boolean));
      if (focused && $(focused)) $(focused).focus();
      $('view').dataset.refreshed = String(Date.now());
    } catch { /* the next tick tries again */ }
  }, REFRESH_MS);
}

async function route() {
  if (pollTimer) { clearInterval(pollTimer); pollTimer = null; }
  if (refreshTimer) { clearInterval(refreshTimer); refreshTimer = null; }
  const hash = location.hash || '#/';
  const [path, query] = hash.slice(1).split('?');
  const params = new URLSearchParams(query || '');
  const parts = path.split('/').filter(Boolean);
  const view = $('view');
  for (const a of document.querySelectorAll('#nav a'))
    a.toggleAttribute('aria-current', a.getAttribute('href') === `#/${parts[0] || ''}` || (parts[0] === 'item' && a.getAttribute('href') === '#/items')
      || (parts[0] === 'incident' && a.getAttribute('href') === '#/incidents'));
  try {
    let content;
    if (parts[0] === 'items') content = await viewItems(params);
    else if (parts[0] === 'item' && /^\d+$/.test(parts[1] || '')) content = await viewItem(parts[1]);
    else if (parts[0] === 'job' && /^\d+$/.test(parts[1] || '')) content = await viewJob(parts[1]);
    else if (parts[0] === 'activity') content = await viewActivity(params);
    else if (parts[0] === 'search') content = await viewSearch(params);
    else if (parts[0] === 'review') content = await viewReview(params);
    else if (parts[0] === 'incidents') content = await viewIncidents();
    else if (parts[0] === 'incident' && /^\d+$/.test(parts[1] || '')) content = await viewIncident(parts[1]);
    else content = await viewFlowSteps();
    view.replaceChildren(...content.filter(Boolean));
    if (!parts[0]) startRefresh(viewFlowSteps);
    else if (parts[0] === 'item' && /^\d+$/.test(parts[1] || '')) startRefresh(() => viewItem(parts[1]));
    document.title = `${$('view-title').textContent} · verdict`;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) { sessionStorage.removeItem(KEY); return start(); }
    view.replaceChildren(heading('Something went wrong'), h('p', { class: 'error', role: 'alert' },
      e instanceof ApiError && e.body ? `${e.body.error}: ${e.body.message}` : String(e.message || e)));
  }
}
function focusView() {
  const t = $('view-title');
  if (t) t.focus({ preventScroll: false });
}

async function start() {
  if (sessionStorage.getItem(KEY)) {
    try {
      await signIn(sessionStorage.getItem(KEY));
      showSignedIn(true);
      await route();
      return;
    } catch (e) {
      sessionStorage.removeItem(KEY);
      $('signin-error').textContent = e instanceof ApiError && e.status === 401 ? 'This key is not known to the server.' : String(e.message || e);
    }
  }
  showSignedIn(false);
  $('key').focus();
}

document.addEventListener('DOMContentLoaded', () => {
  $('signin-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    $('signin-error').textContent = '';
    sessionStorage.setItem(KEY, $('key').value.trim());
    $('key').value = '';
    await start();
  });
  $('forget').addEventListener('click', () => { sessionStorage.removeItem(KEY); me.role = null; location.hash = '#/'; start(); });
  $('result-close').addEventListener('click', () => { $('result').hidden = true; });
  $('top-search').addEventListener('submit', (e) => {
    e.preventDefault();
    const q = $('top-q').value.trim();
    if (q) location.hash = `#/search?${qs({ q })}`;
  });
  window.addEventListener('hashchange', async () => { $('result').hidden = true; await route(); focusView(); });
  start();
});
