// page-items.js - the items list (#/items): filters by flow step, state, reason code and
// worker, pages by keyset, and for an admin the bulk requeue and resolve after a dry run.
import { api, qs } from './api.js';
import { ago, h, heading, stateBadge, table } from './dom.js';
import { itemAction, showError } from './actions.js';
import { route } from './router.js';
import { isAdmin } from './session.js';
import { PARKED, reasonWord, REQUEUEABLE, STATES } from './words.js';

export async function bulkRequeue(fs, state, reasonCode, after) {
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

export async function viewItems(params) {
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
